#!/usr/bin/env bash
# cli_viewer_wire.sh: the viewer's JavaScript wire decoders (web/wire.js) against the golden
# vectors of tests/vectors/, against bad frames, and against what `trove cat` reads from
# streams trove wrote, in node (tests/browser/wire_test.mjs); its view frame decoder
# (web/view.js) against frames a real `trove serve` answers, each checked against the
# capture's events as `trove cat` reads them, and against bad frames (tests/browser/view_test.mjs);
# the live ring's lanes kept in start order (tests/browser/model_test.mjs); and the binary serves web/ byte for byte from memory: every file of web/ but its tooling at
# /web/NAME (and index.html at /), nothing else, and no path reaches a file, even one beside
# the service.
# usage: cli_viewer_wire.sh TROVE SOURCE_DIR
set -u
TROVE=$1
src=$2
. "$src/tests/support/lib_cli.sh"
need_python3
if ! command -v node > /dev/null 2>&1; then
    echo "skipped: node not found (make deps-node)"
    exit 77
fi
# Streams trove writes, in each format, on a 1 ns clock (the widest varints), against trove cat.
if section decoders; then
streams=()
for w in raw packed deflate; do
    "$TROVE" gen -o "$tmp/g.$w" --events 30000 --tick 1 --wire $w -q
    "$TROVE" cat "$tmp/g.$w" --json > "$tmp/g.$w.jsonl"
    streams+=("$tmp/g.$w" "$tmp/g.$w.jsonl")
done
"$TROVE" convert "$src/tests/vectors/chrome_small.json" "$tmp/chrome.packed" --wire packed -q
"$TROVE" cat "$tmp/chrome.packed" --json > "$tmp/chrome.jsonl"
streams+=("$tmp/chrome.packed" "$tmp/chrome.jsonl")
out=$(node "$src/tests/browser/wire_test.mjs" "$src" "${streams[@]}" 2>&1)
rc=$?
echo "$out" | tail -5
check test $rc -eq 0
fi

# View frames of two captures, zoomed out and in, of some tracks, with names, stored and
# deflated: web/view.js decodes each as the capture's events say it must be.
if section view; then
s=$tmp/vstore
"$TROVE" gen --events 40000 --seed 5 -q -o "$tmp/v.wire"
"$TROVE" import "$tmp/v.wire" --name v --store "$s" -q
"$TROVE" import "$src/tests/vectors/chrome_small.json" --name c --store "$s" -q
serve_start
"$TROVE" cat store:v --store "$s" --json > "$tmp/v.jsonl"
"$TROVE" cat store:c --store "$s" --json > "$tmp/c.jsonl"
curl -s "${url}api/captures/v/tracks" > "$tmp/v.tracks"
first=$(json_get "$tmp/v.tracks" 'j["first_ns"]')
end=$(json_get "$tmp/v.tracks" 'j["end_ns"] + 1')
two=$(json_get "$tmp/v.tracks" '",".join(t["id"] for t in j["tracks"][1:3])')
mid=$(( first + (end - first) / 3 ))
vf=()
get() { # NAME CAPTURE QUERY [TRACKS]
    curl -s -f -o "$tmp/$1.bin" "${url}api/captures/$2/view?$3" || bad "GET view $3"
    vf+=("$tmp/$1.bin${4:+@$4}")
}
get whole v "from_ns=$first&to_ns=$end&px=800&names=0"
get narrow v "from_ns=$first&to_ns=$end&px=37&names=1"
get third v "from_ns=$mid&to_ns=$(( mid + (end - first) / 50 ))&px=1500&names=0"
get close v "from_ns=$mid&to_ns=$(( mid + 200000 ))&px=2000&names=1"
get two v "from_ns=$first&to_ns=$end&px=1200&names=0&tracks=$two" "$two"
out=$(node "$src/tests/browser/view_test.mjs" "$src" "$tmp/v.jsonl" "${vf[@]}" 2>&1)
rc=$?
echo "$out" | tail -8
check test $rc -eq 0
vf=()
get cwhole c "from_ns=0&to_ns=200000&px=500&names=1"
get cclose c "from_ns=1000&to_ns=3000&px=1000&names=1"
out=$(node "$src/tests/browser/view_test.mjs" "$src" "$tmp/c.jsonl" "${vf[@]}" 2>&1)
rc=$?
echo "$out" | tail -4
check test $rc -eq 0
serve_stop
fi

s=$tmp/store
mkdir -p "$s/web"
echo "a file beside the service" > "$s/web/secret.txt"
echo "a file beside the service" > "$s/secret.txt"
cd "$s" || exit 1 # the service's working directory holds web/ files it must not serve
code() { curl -s --path-as-is -o "$tmp/body" -w '%{http_code} %{content_type}' "$@"; }

# web/ served byte for byte from memory, and no path reaching a file.
if section served; then
serve_start
check test "$(code "$url")" = "200 text/html; charset=utf-8"
check cmp -s "$tmp/body" "$src/web/index.html"
for f in "$src"/web/*; do
    n=$(basename "$f")
    got=$(code "${url}web/$n")
    # web/'s tooling (tools/embed_web.py's NOT_SERVED) is not the viewer's
    if [ "$n" = tsconfig.json ]; then check test "${got%% *}" = 404; continue; fi
    check test "${got%% *}" = 200
    check cmp -s "$tmp/body" "$f"
    case $n in
        *.js) check test "${got#* }" = "text/javascript; charset=utf-8" ;;
        *.html) check test "${got#* }" = "text/html; charset=utf-8" ;;
        *.css) check test "${got#* }" = "text/css; charset=utf-8" ;;
    esac
done
curl -s -D "$tmp/headers" -o /dev/null "${url}web/app.js"
check grep -qi "^content-security-policy: default-src 'self'" "$tmp/headers"
check grep -qi "^x-content-type-options: nosniff" "$tmp/headers"
# (the HTTP layer collapses "//" and "/./" before routing: those name the embedded file)
for p in web/secret.txt secret.txt web/../secret.txt web/../web/secret.txt web/%2e%2e/secret.txt \
    web/ web web/app.js/ web/APP.JS "web/app.js%00" \
    web/../CMakeLists.txt web/../../etc/passwd etc/passwd app.js; do
    got=$(code "${url}$p")
    # 404, or 400 (000: the connection dropped) for a %00, which the HTTP layer refuses
    check test "${got%% *}" = 404 -o "${got%% *}" = 400 -o "${got%% *}" = 000
    check test "$(wc -c < "$tmp/body")" -lt 4096
    if grep -q "a file beside the service" "$tmp/body"; then bad "GET /$p served a file"; else ok; fi
done
check test "$(code "${url}status")" = "200 text/html; charset=utf-8"
check grep -q "<html" "$tmp/body"
check test "$(code -X POST "${url}web/app.js")" = "405 application/json"
serve_stop
fi

# With a token: the viewer's page says how to sign in; with the cookie it is the viewer.
# The live ring's lanes put in start order batch by batch: one stable sort's order
# (tests/browser/model_test.mjs, in node).
if section model; then
out=$(node "$src/tests/browser/model_test.mjs" "$src" 2>&1)
rc=$?
echo "$out" | tail -5
check test $rc -eq 0
fi

if section token; then
head -c 32 /dev/urandom | base64 | tr -d '/+=' | head -c 32 > "$tmp/token"
serve_start --token-file "$tmp/token"
check test "$(code "$url")" = "401 text/html; charset=utf-8"
check grep -q "/login?token=" "$tmp/body"
check test "$(code "${url}web/app.js")" = "401 application/json"
curl -s -c "$tmp/jar" -o /dev/null "${url}login?token=$(cat "$tmp/token")"
check test "$(code -b "$tmp/jar" "$url")" = "200 text/html; charset=utf-8"
check cmp -s "$tmp/body" "$src/web/index.html"
serve_stop
fi
finish
