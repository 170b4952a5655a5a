#!/usr/bin/env bash
# cli_remote.sh: the trove CLI as a client of a running `trove serve` (--url; docs/serve.md,
# "The HTTP API over stored captures"), on loopback, each answer held to what the same
# command gives on the store itself:
#   - ls --url prints the table `trove ls --store` prints; --json is the service's array
#   - export --url writes the bytes of `trove export --capture NAME --store DIR` (bundle,
#     parquet, a time range, chrome-json and perfetto; dir.zip holds the bundle's files);
#     a capture that is not there is a one-line error and leaves no file
#   - import --url of a wire stream twice: the same events, 0 new objects the second time;
#     a bundle exported from the service and posted back, stdin, and --append
#   - replay --url gives the events `trove replay NAME --store DIR -o` gives, in each wire,
#     whole and a time range
#   - with a token file given to the service: no token or a wrong one is a 401 named in one
#     line (ls, export, import, replay, watch); TROVE_TOKEN or --token-file lets them in
#   - usage: --url with --store, options of a local run only, bad URLs and names, refused
#     before anything is sent
# usage: cli_remote.sh TROVE SOURCE_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE TROVE_TOKEN
if ! command -v curl > /dev/null 2>&1; then
    echo "skipped: curl not found"
    exit 77
fi

s=$tmp/s
# serve_start, serve_stop: lib_cli.sh.
ev() { "$trove" cat "$@" 2> /dev/null; }
# same_events A B: the two wire files hold the same events in the same order.
same_events() { cmp -s <(ev "$1") <(ev "$2"); }
# no_leftovers DIR NAME: neither NAME nor a temp file of it in DIR.
no_leftovers() { [ ! -e "$1/$2" ] && [ -z "$(ls -A "$1" | grep -F ".$2.tmp")" ]; }

# ---- usage: refused before anything is sent (no service needed) ----------------------------
if section usage; then
nowhere=http://127.0.0.1:1/
for c in ls export import replay watch; do
    exits 0 "$trove" "$c" --help
    check grep -q -- "--token-file" "$tmp/out"
done
expect_error ls ls --url "$nowhere" --store "$s"
expect_error ls ls --token-file "$tmp/none"
expect_error ls ls --url ftp://127.0.0.1/
expect_error ls ls --url 'http://127.0.0.1:7700/?x=1'
expect_error ls ls --url "$nowhere"
check grep -q "trove serve" "$tmp/e.err"
printf 'two words\n' > "$tmp/spaced.tok"
expect_error ls ls --url "$nowhere" --token-file "$tmp/spaced.tok"
check grep -q "printable ASCII" "$tmp/e.err"
check grep -vq "two words" "$tmp/e.err"      # the token is never printed
: > "$tmp/empty.tok"
expect_error ls ls --url "$nowhere" --token-file "$tmp/empty.tok"
expect_error ls ls --url "$nowhere" --token-file "$tmp/missing.tok"
TROVE_TOKEN=$'a\rb' expect_error ls ls --url "$nowhere"
expect_error export export --url "$nowhere" --capture one -o "$tmp/x" --codec zstd
expect_error export export --url "$nowhere" --capture one -o "$tmp/x" --format dir
expect_error export export --url "$nowhere" --capture one -o "$tmp/x" --store "$s"
expect_error export export --url "$nowhere" --capture 'a/b' -o "$tmp/x"
expect_error export export --url "$nowhere" --capture one
expect_error export export "$tmp/in.wire" --url "$nowhere" -o "$tmp/x"
expect_error export export --capture one --store "$s" -o "$tmp/x" --format dir.zip
expect_error import import "$tmp/in.wire" --url "$nowhere" --name one --segment-bytes 1M
expect_error import import "$tmp/in.wire" --url "$nowhere" --name '../x'
expect_error import import "$tmp/in.wire" --url "$nowhere" --name one -o "$tmp/x"
expect_error import import "$tmp/in.wire" --name one --append --store "$s"
printf 'x' > "$tmp/.hidden.wire"   # its base name is no capture name: --name is needed
expect_error import import "$tmp/.hidden.wire" --url "$nowhere"
check grep -q "give one with --name" "$tmp/e.err"
expect_error replay replay one --url "$nowhere" --depth 2 -o "$tmp/x"
expect_error replay replay one --url "$nowhere" --batch 10 -o "$tmp/x"
expect_error replay replay one --url "$nowhere" --speed fast -o "$tmp/x"
expect_error replay replay one --url "$nowhere" --store "$s" -o "$tmp/x"
expect_error replay replay one --url "$nowhere" --json
expect_error replay replay '.bad' --url "$nowhere" -o "$tmp/x"
expect_error replay replay one --speed 2 --store "$s" -o "$tmp/x"
check test ! -e "$tmp/x"
fi

# ---- the store, and what the local commands give for it ---------------------------------
if section store; then
"$trove" gen -o "$tmp/g.wire" --events 60000 --seed 7 --names 300 -q || bad gen
"$trove" import "$tmp/g.wire" --store "$s" --name one -q || bad "import --store"
ev "$tmp/g.wire" > "$tmp/g.txt"
"$trove" ls --store "$s" --json > "$tmp/ls-local.json" || bad "ls --store --json"
read -r first end < <(json_get "$tmp/ls-local.json" '(j[0]["first_ns"], j[0]["end_ns"])')
from=$((first + (end - first) / 4))
to=$((first + (end - first) / 2))
"$trove" export --capture one --store "$s" -o "$tmp/l.bundle" -q || bad "export --capture"
"$trove" export --capture one --store "$s" -o "$tmp/l.parquet" --format parquet -q || bad "export parquet"
"$trove" export --capture one --store "$s" -o "$tmp/l-range.bundle" --from-ns $from --to-ns $to -q ||
    bad "export a range"
"$trove" export --capture one --store "$s" -o "$tmp/l.chrome-json" --format chrome-json -q || bad "export chrome-json"
"$trove" export --capture one --store "$s" -o "$tmp/l.perfetto" --format perfetto -q || bad "export perfetto"
for w in raw packed deflate; do
    "$trove" replay one --store "$s" --wire $w -o "$tmp/l.$w.wire" -q || bad "replay --wire $w"
done
"$trove" replay one --store "$s" --from-ns $from --to-ns $to -o "$tmp/l-range.wire" -q || bad "replay a range"
# Halves of the capture, for --append.
"$trove" replay one --store "$s" --to-ns $to -o "$tmp/first.wire" -q || bad "replay the first half"
"$trove" replay one --store "$s" --from-ns $to -o "$tmp/second.wire" -q || bad "replay the second half"
# The table, before any export or replay over the service marks the capture used.
"$trove" ls --store "$s" > "$tmp/ls-local.txt" || bad "ls --store"

serve_start
code=$(curl -s -o /dev/null -w '%{http_code}' "${url}api/captures")
check test "$code" = 200 # the API is there: every check below runs
fi

# ---- ls --url ---------------------------------------------------------------------------
if section ls_url; then
"$trove" ls --url "$url" > "$tmp/ls-remote.txt" 2> "$tmp/err" || bad "ls --url: $(cat "$tmp/err")"
strip() { sed 's/  last used .*$//' "$1"; }
check cmp -s <(strip "$tmp/ls-local.txt") <(strip "$tmp/ls-remote.txt")
"$trove" ls --url "$url" --json > "$tmp/ls-remote.json" || bad "ls --url --json"
json "$tmp/ls-remote.json" 'isinstance(j, list) and [c["name"] for c in j] == ["one"]'
json "$tmp/ls-remote.json" 'j[0]["events"] == 60000 and not j[0]["live"] and set(j[0]) >= {"first_ns", "end_ns", "stored_bytes", "last_used_ns", "segments"}'
# Without the trailing slash, the same.
"$trove" ls --url "${url%/}" > "$tmp/ls-remote2.txt" || bad "ls --url without a slash"
check cmp -s "$tmp/ls-remote.txt" "$tmp/ls-remote2.txt"
fi

# ---- export --url -----------------------------------------------------------------------
if section export_url; then
"$trove" export --url "$url" --capture one -o "$tmp/r.bundle" 2> "$tmp/err" || bad "export --url: $(cat "$tmp/err")"
check cmp -s "$tmp/l.bundle" "$tmp/r.bundle"
check grep -q "^trove export: capture one of .* -> .*r.bundle (bundle): [0-9]* bytes$" "$tmp/err"
"$trove" export --url "$url" --capture one -o "$tmp/r.parquet" --format parquet --json > "$tmp/x.json" || bad "export --url parquet"
check cmp -s "$tmp/l.parquet" "$tmp/r.parquet"
json "$tmp/x.json" "j['format'] == 'parquet' and j['bytes'] == $(stat -c %s "$tmp/l.parquet") and j['capture'] == 'one'"
"$trove" export --url "$url" --capture one -o "$tmp/r-range.bundle" --from-ns $from --to-ns $to -q || bad "export --url a range"
check cmp -s "$tmp/l-range.bundle" "$tmp/r-range.bundle"
"$trove" export --url "$url" --capture one -o - -q > "$tmp/r-stdout.bundle" || bad "export --url -o -"
check cmp -s "$tmp/l.bundle" "$tmp/r-stdout.bundle"
for f in chrome-json perfetto; do
    if "$trove" export --url "$url" --capture one -o "$tmp/r.$f" --format $f -q 2> "$tmp/err"; then
        check cmp -s "$tmp/l.$f" "$tmp/r.$f"
    else # not there yet: a clear 400
        check grep -q "HTTP 400" "$tmp/err"
    fi
done
"$trove" export --url "$url" --capture one -o "$tmp/r.zip" --format dir.zip -q || bad "export --url dir.zip"
zip_names() { python3 -c 'import sys, zipfile; print(sorted(zipfile.ZipFile(sys.argv[1]).namelist()))' "$1"; }
check cmp -s <(zip_names "$tmp/r.zip") <(zip_names "$tmp/l.bundle")
expect_error export export --url "$url" --capture nosuch -o "$tmp/nosuch.bundle"
check grep -q "HTTP 404" "$tmp/e.err"
check no_leftovers "$tmp" nosuch.bundle
fi

# ---- import --url -----------------------------------------------------------------------
if section import_url; then
"$trove" import "$tmp/g.wire" --url "$url" --name two --json > "$tmp/i1.json" || bad "import --url"
json "$tmp/i1.json" 'j["name"] == "two" and j["events"] == 60000 and "new_bytes" in j'
"$trove" import "$tmp/g.wire" --url "$url" --name two --json > "$tmp/i2.json" || bad "import --url again"
json "$tmp/i2.json" 'j["events"] == 60000 and j["new_objects"] == 0'
"$trove" import "$tmp/g.wire" --url "$url" --name two 2> "$tmp/err" || bad "import --url, a summary"
check grep -q "^trove import: .*g.wire -> capture two of .*: 60000 events; 0 new objects" "$tmp/err"
check cmp -s "$tmp/g.txt" <(ev store:two --store "$s")
# A bundle the service exported, posted back: the same events.
"$trove" import "$tmp/r.bundle" --url "$url" --name three -q || bad "import --url a bundle"
check cmp -s "$tmp/g.txt" <(ev store:three --store "$s")
# stdin, spooled first.
"$trove" import - --url "$url" --name four --json < "$tmp/g.wire" > "$tmp/i4.json" || bad "import --url -"
json "$tmp/i4.json" 'j["name"] == "four" and j["events"] == 60000'
# --append: the two halves make the whole.
"$trove" import "$tmp/first.wire" --url "$url" --name five -q || bad "import --url the first half"
"$trove" import "$tmp/second.wire" --url "$url" --name five --append --json > "$tmp/i5.json" || bad "import --url --append"
json "$tmp/i5.json" "j['events'] == $(ev "$tmp/second.wire" | wc -l)"   # the body's events
check cmp -s <(sort "$tmp/g.txt") <(ev store:five --store "$s" | sort)
"$trove" import "$tmp/g.wire" --url "$url" -q || bad "import --url, the name from IN"
json <("$trove" ls --url "$url" --json) '"g" in [c["name"] for c in j]'
fi

# ---- replay --url -----------------------------------------------------------------------
if section replay_url; then
for w in raw packed deflate; do
    "$trove" replay one --url "$url" --wire $w -o "$tmp/r.$w.wire" --json > "$tmp/rp.json" 2> "$tmp/err" ||
        bad "replay --url --wire $w: $(cat "$tmp/err")"
    json "$tmp/rp.json" "j['events'] == 60000 and j['wire'] == '$w'"
    check same_events "$tmp/l.$w.wire" "$tmp/r.$w.wire"
done
"$trove" replay one --url "$url" --from-ns $from --to-ns $to -o "$tmp/r-range.wire" -q || bad "replay --url a range"
check same_events "$tmp/l-range.wire" "$tmp/r-range.wire"
"$trove" replay one --url "$url" --speed max -o - -q > "$tmp/r-stdout.wire" || bad "replay --url to stdout"
check same_events "$tmp/l.packed.wire" "$tmp/r-stdout.wire"
"$trove" replay two --url "$url" -o "$tmp/r-two.wire" -q || bad "replay --url an imported capture"
check cmp -s "$tmp/g.txt" <(ev "$tmp/r-two.wire")
expect_error replay replay nosuch --url "$url" -o "$tmp/nosuch.wire"
check no_leftovers "$tmp" nosuch.wire
serve_stop
fi

# ---- a token ----------------------------------------------------------------------------
if section token; then
head -c 32 /dev/urandom | base64 > "$tmp/token"
printf 'wrong\n' > "$tmp/wrong"
serve_start --token-file "$tmp/token"
expect_error ls ls --url "$url"
check grep -q "HTTP 401" "$tmp/e.err"
check grep -q "TROVE_TOKEN" "$tmp/e.err"
expect_error ls ls --url "$url" --token-file "$tmp/wrong"
check grep -q "HTTP 401" "$tmp/e.err"
expect_error export export --url "$url" --capture one -o "$tmp/t.bundle"
check grep -q "HTTP 401" "$tmp/e.err"
check no_leftovers "$tmp" t.bundle
expect_error import import "$tmp/g.wire" --url "$url" --name six
check grep -q "HTTP 401" "$tmp/e.err"
expect_error replay replay one --url "$url" -o "$tmp/t.wire"
check grep -q "401" "$tmp/e.err"
check no_leftovers "$tmp" t.wire
TROVE_TOKEN=wrong expect_error replay replay one --url "$url" -o "$tmp/t.wire"
check grep -q "401" "$tmp/e.err"
exits 1 "$trove" watch one --url "$url" --from start -o "$tmp/t.wire" --seconds 20
check grep -q "401" "$tmp/err"
TROVE_TOKEN=$(head -n 1 "$tmp/token") "$trove" ls --url "$url" > "$tmp/ls-token.txt" || bad "ls --url with TROVE_TOKEN"
check grep -q "^one " "$tmp/ls-token.txt"
"$trove" export --url "$url" --token-file "$tmp/token" --capture one -o "$tmp/t.bundle" -q || bad "export --url --token-file"
check cmp -s "$tmp/l.bundle" "$tmp/t.bundle"
"$trove" import "$tmp/g.wire" --url "$url" --token-file "$tmp/token" --name six --json > "$tmp/i6.json" || bad "import --url --token-file"
json "$tmp/i6.json" 'j["events"] == 60000 and j["new_objects"] == 0'
TROVE_TOKEN=$(head -n 1 "$tmp/token") "$trove" replay one --url "$url" -o "$tmp/t.wire" -q || bad "replay --url with TROVE_TOKEN"
check same_events "$tmp/l.packed.wire" "$tmp/t.wire"
# --token-file wins over TROVE_TOKEN.
TROVE_TOKEN=wrong "$trove" replay one --url "$url" --token-file "$tmp/token" -o "$tmp/t2.wire" -q || bad "replay --url, --token-file over TROVE_TOKEN"
check same_events "$tmp/l.packed.wire" "$tmp/t2.wire"
# watch, of a live capture (producers on the unix socket need no token).
"$trove" watch live --url "$url" --token-file "$tmp/token" --from start -o "$tmp/w.wire" --json --seconds 30 > "$tmp/w.json" &
wpid=$!
sleep 0.5
"$trove" record live --from "$tmp/g.wire" --keep-times --socket "$s/trove.sock" -q || bad "record"
wait $wpid || bad "watch --token-file"
json "$tmp/w.json" 'j["events"] == 60000 and j["ended"]'
check cmp -s "$tmp/g.txt" <(ev "$tmp/w.wire")
serve_stop
fi

# ---- ls --url of columnar segments: the same table as ls --store -----------------------
if section ls_url_of; then
s=$tmp/store-col
"$trove" import "$tmp/g.wire" --store "$s" --name col --segment-format columnar -q || bad "import columnar"
"$trove" import "$tmp/g.wire" --store "$s" --name def --segment-format deflate -q || bad "import deflate"
"$trove" ls --store "$s" > "$tmp/ls-col-local.txt" || bad "ls --store, columnar"
check grep -q '^col .* columnar segments ' "$tmp/ls-col-local.txt"
check test "$(grep -c ' columnar segments ' "$tmp/ls-col-local.txt")" -eq 1
check grep -q '^def .* deflate segments ' "$tmp/ls-col-local.txt"
serve_start
"$trove" ls --url "$url" > "$tmp/ls-col-remote.txt" || bad "ls --url, columnar"
check cmp -s <(strip "$tmp/ls-col-local.txt") <(strip "$tmp/ls-col-remote.txt")
serve_stop
fi

finish
