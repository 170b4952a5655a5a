#!/usr/bin/env bash
# cli_api.sh: the service's HTTP API over stored captures (docs/serve.md), with curl and a
# small WebSocket peer (tests/support/serve_peer.py) as clients, on loopback:
#   - list, info and delete (409 while live; 404 after)
#   - replay over WebSocket equals `trove replay` for the whole capture and a range, in
#     every wire format
#   - export equals `trove export --capture` byte for byte, in every format
#   - the profile of a capture without samples: zero counts over its events' span; 404, 400
#     and 405 for an unknown capture, a bad value and another method
#   - import of a wire stream, a bundle, a Parquet events file and a Chrome trace, each
#     twice (no new object the second time); a body over --max-import is 413 and a
#     truncated or corrupt one 400 naming the problem, with nothing stored
#   - with --token-file: 401 on every endpoint (the profile too, with a wrong token as well)
#     and on the WebSocket upgrade without the token, the token as a header or as the
#     /login cookie; a foreign Origin is 403; a non-loopback --listen without a token
#     refuses to start; ../ and NUL in names are 400;
#     a token with '+' works in /login?token=; a query's pieces are the client's ('&' in a
#     path, an empty parameter, an escaped '&', '%' or NUL, a trailing '&'); an escaped CR or
#     LF is refused; an upgrade without a key gets 400
# usage: cli_api.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
data=${3:-}
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
command -v curl > /dev/null || { echo "skipped: curl not found"; exit 77; }
unset TROVE_STORE
peer() { python3 "$src/tests/support/serve_peer.py" "$@"; }
ev() { "$trove" cat "$@" 2> /dev/null; }

s=$tmp/s
# http METHOD PATH [curl args]: the body in $tmp/body, the status printed. A body goes as
# application/octet-stream, as the service asks (a type a plain form can send is refused).
http() {
    local m=$1 p=$2
    shift 2
    curl -s -H 'Expect:' -H 'Content-Type: application/octet-stream' -o "$tmp/body" \
        -w '%{http_code}' -X "$m" "$@" "${url%/}$p"
}
status_is() { # status_is WANT METHOD PATH [curl args]
    local want=$1 got
    shift
    got=$(http "$@")
    if [ "$got" = "$want" ]; then ok; else bad "$* -> $got, not $want: $(head -c 300 "$tmp/body")"; fi
}

"$trove" gen -o "$tmp/g.wire" --events 50000 --seed 3 --names 200 -q || bad gen
"$trove" import "$tmp/g.wire" --store "$s" --name g -q || bad "import g"
range_from=$("$trove" cat "$tmp/g.wire" 2> /dev/null | awk 'NR == 10000 {print $1}')
range_to=$("$trove" cat "$tmp/g.wire" 2> /dev/null | awk 'NR == 30000 {print $1}')

# ---- without a token: list, info, replay, export ---------------------------------------------
if section without_a_token; then
serve_start --max-import 8M
status_is 200 GET /api/captures
json "$tmp/body" 'len(j) == 1 and j[0]["name"] == "g" and j[0]["events"] == 50000 and j[0]["live"] is False and "last_used_ns" in j[0]'
# One set of keys (docs/serve.md, "A capture as JSON"): the service's list and `trove ls
# --json` name every field alike and agree on every value; the service adds only "live".
cp "$tmp/body" "$tmp/api-list.json"
"$trove" ls --store "$s" --json > "$tmp/ls-list.json" || bad "ls --json"
check python3 - "$tmp/api-list.json" "$tmp/ls-list.json" << 'EOF'
import json, sys
api, ls = (json.load(open(a)) for a in sys.argv[1:3])
assert set(api[0]) == set(ls[0]) | {"live"}, (sorted(api[0]), sorted(ls[0]))
assert {k: v for k, v in api[0].items() if k != "live"} == ls[0], (api, ls)
EOF
status_is 200 GET /api/captures/g
json "$tmp/body" 'j["events"] == 50000 and j["segments"] >= 1 and j["names"] > 0 and j["producers"] == 0 and j["segment_format"] == "model"'
status_is 404 GET /api/captures/nope
json "$tmp/body" 'j["code"] == "not_found" and j["error"]'
# a capture without samples has a profile of none, over its events' span
status_is 200 GET /api/captures/g/profile
cp "$tmp/body" "$tmp/g-profile.json"
status_is 200 GET /api/captures/g
python3 - "$tmp/g-profile.json" "$tmp/body" << 'EOF' && ok || bad "the profile of a capture without samples"
import json, sys
p, info = (json.load(open(a)) for a in sys.argv[1:3])
assert p == {"capture": "g", "from_ns": info["first_ns"], "to_ns": info["end_ns"], "samples": 0,
             "threads": [], "top": [], "flame": {"name": "all", "value": 0, "children": []},
             "ticks": [], "ticks_dropped": 0}, p
EOF
status_is 200 GET "/api/captures/g/profile?from_ns=$range_from&to_ns=$range_to&limit=5"
json "$tmp/body" "j['from_ns'] == $range_from and j['to_ns'] == $range_to and j['samples'] == 0"
status_is 404 GET /api/captures/nope/profile
json "$tmp/body" 'j["code"] == "not_found"'
status_is 400 GET '/api/captures/g/profile?from_ns=-1'
status_is 400 GET '/api/captures/g/profile?limit=501'
status_is 400 GET '/api/captures/g/profile?format=bundle'
status_is 405 DELETE /api/captures/g/profile
status_is 404 GET /api/nothing
status_is 405 POST /api/captures/g
status_is 400 GET '/api/captures/g/export?format=tarball'
status_is 400 GET '/api/captures/g/export?colour=red'
status_is 400 GET '/api/captures/a%20b'
status_is 400 POST '/api/captures/import?name=../x' --data-binary @"$tmp/g.wire"
status_is 400 POST '/api/captures/import?name=..%2Fx' --data-binary @"$tmp/g.wire"
status_is 400 GET '/api/captures/g/export?from_ns=5&to_ns=4'
# a traversal in the path is taken apart before routing: it reaches nothing
got=$(http GET '/api/captures/..%2F..%2Fetc/export')
check test "$got" = 404 -o "$got" = 400
# NUL: refused, as a bad request or by the HTTP layer dropping the connection
got=$(http GET '/api/captures/a%00b')
check test "$got" = 400 -o "$got" = 000
got=$(http POST '/api/captures/import?name=a%00b' --data-binary @"$tmp/g.wire")
check test "$got" = 400 -o "$got" = 000
peer ws "$url" "/api/replay?capture=..%2Fx" > "$tmp/ws.out"
check grep -q '"type":"error"' "$tmp/ws.out"
status_is 400 GET /api/live
for w in raw packed deflate; do
    peer ws "$url" "/api/replay?capture=g&wire=$w" "$tmp/r-$w.wire" > "$tmp/ws.out" || bad "replay $w"
    check grep -q '"type":"end","events":50000' "$tmp/ws.out"
    check cmp -s <(ev "$tmp/g.wire") <(ev "$tmp/r-$w.wire")
    peer ws "$url" "/api/replay?capture=g&wire=$w&from_ns=$range_from&to_ns=$range_to" "$tmp/p-$w.wire" > /dev/null || bad "partial replay $w"
    "$trove" replay g --store "$s" --from-ns "$range_from" --to-ns "$range_to" -o "$tmp/p-cli.wire" 2> /dev/null
    check cmp -s <(ev "$tmp/p-cli.wire") <(ev "$tmp/p-$w.wire")
done
peer ws "$url" "/api/replay?capture=g&speed=1000" "$tmp/paced.wire" > /dev/null || bad "paced replay"
check cmp -s <(ev "$tmp/g.wire") <(ev "$tmp/paced.wire")
peer ws "$url" "/api/replay?capture=nope" > "$tmp/ws.out"
check grep -q '"type":"error"' "$tmp/ws.out"
for f in bundle parquet chrome-json perfetto; do
    status_is 200 GET "/api/captures/g/export?format=$f"
    cp "$tmp/body" "$tmp/x.$f"
    "$trove" export --capture g --store "$s" --format "$f" -o "$tmp/cli.$f" -q || bad "cli export $f"
    check cmp -s "$tmp/x.$f" "$tmp/cli.$f"
done
status_is 200 GET "/api/captures/g/export?format=bundle&from_ns=$range_from&to_ns=$range_to"
"$trove" export --capture g --store "$s" --from-ns "$range_from" --to-ns "$range_to" -o "$tmp/cli-r.bundle" -q
check cmp -s "$tmp/body" "$tmp/cli-r.bundle"
curl -s -D "$tmp/headers" -o /dev/null "${url}api/captures/g/export?format=dir.zip"
check grep -qi 'content-disposition: attachment; filename="g.zip"' "$tmp/headers"
check grep -qi 'transfer-encoding: chunked' "$tmp/headers"
fi

# ---- import: every input kind, twice; too large; damaged ------------------------------------
if section import; then
"$trove" export "$tmp/g.wire" -o "$tmp/g.bundle" -q
"$trove" export "$tmp/g.wire" -o "$tmp/g.parquet" --format parquet -q
"$trove" export "$tmp/g.wire" -o "$tmp/g.json" --format chrome-json -q
for k in wire bundle parquet json; do
    n=$(ev "$tmp/g.$k" | wc -l) # what the CLI reads of it (a Chrome trace keeps fewer)
    status_is 200 POST "/api/captures/import?name=i-$k" --data-binary @"$tmp/g.$k"
    json "$tmp/body" "j['name'] == 'i-$k' and j['events'] == $n and $n > 40000"
    check cmp -s <(ev "$tmp/g.$k") <(ev store:i-$k --store "$s")
    status_is 200 POST "/api/captures/import?name=i-$k" --data-binary @"$tmp/g.$k"
    json "$tmp/body" 'j["new_objects"] == 0 and j["new_bytes"] == 0'
done
check cmp -s <(ev "$tmp/g.wire") <(ev store:i-bundle --store "$s")
# a bundle exported by the service and posted back gives the same events
status_is 200 POST "/api/captures/import?name=back" --data-binary @"$tmp/x.bundle"
check cmp -s <(ev "$tmp/g.wire") <(ev store:back --store "$s")
head -c 9000000 /dev/zero > "$tmp/big.bin"
status_is 413 POST "/api/captures/import?name=big" --data-binary @"$tmp/big.bin"
json "$tmp/body" 'j["code"] == "too_large"'
head -c 100000 "$tmp/g.bundle" > "$tmp/cut.bundle"
status_is 400 POST "/api/captures/import?name=cut" --data-binary @"$tmp/cut.bundle"
json "$tmp/body" 'j["code"] == "bad_request" and len(j["error"]) > 10 and j["error"].startswith("the body") and "/tmp" not in j["error"] and "/proc" not in j["error"]'
printf 'TV\001\001garbage that is not a frame' > "$tmp/bad.wire"
status_is 400 POST "/api/captures/import?name=bad" --data-binary @"$tmp/bad.wire"
# curl's "Expect: 100-continue": the service says continue to a request it takes, and gives a
# refused one its final answer at once (the body is never sent).
curl -sv -H 'Expect: 100-continue' -H 'Content-Type: application/octet-stream' \
    --expect100-timeout 20 -o "$tmp/body" -X POST \
    --data-binary @"$tmp/g.bundle" "${url%/}/api/captures/import?name=expect" 2> "$tmp/curl.err"
check grep -q '^< HTTP/1.1 100 Continue' "$tmp/curl.err"
check grep -q '^< HTTP/1.1 200' "$tmp/curl.err"
json "$tmp/body" "j['name'] == 'expect' and j['events'] > 40000"
curl -sv -H 'Expect: 100-continue' -H 'Content-Type: application/octet-stream' \
    --expect100-timeout 20 -o "$tmp/body" -X POST \
    --data-binary @"$tmp/big.bin" "${url%/}/api/captures/import?name=big" 2> "$tmp/curl.err"
check grep -q '^< HTTP/1.1 413' "$tmp/curl.err"
check test "$(grep -c '100 Continue' "$tmp/curl.err")" = 0
status_is 404 GET /api/captures/big
status_is 404 GET /api/captures/cut
status_is 404 GET /api/captures/bad
fi

# ---- delete: 409 while live, then gone --------------------------------------------------------
if section delete; then
"$trove" record livecap --from "$tmp/g.wire" --rate 20000 --socket "$s/trove.sock" -q &
rec=$!
sleep 0.5
status_is 409 DELETE /api/captures/livecap
json "$tmp/body" 'j["code"] == "conflict"'
wait $rec
sleep 0.5
status_is 200 DELETE /api/captures/i-json
status_is 404 GET /api/captures/i-json
status_is 404 DELETE /api/captures/i-json
serve_stop
fi

# ---- who may use it ----------------------------------------------------------------------------
if section who_may_use; then
expect_error serve serve --store "$s" --listen 0.0.0.0:0
check grep -q "token-file" "$tmp/e.err"
# base64's '+', '/' and '=', as the docs' recipe makes them: the HTTP layer turns a raw '+'
# into a space, which the service turns back
{ head -c 24 /dev/urandom | base64 | tr -d '/+=\n'; echo "+x/y="; } > "$tmp/token"
tok=$(cat "$tmp/token")
port=$((20000 + RANDOM % 20000))
serve_start --token-file "$tmp/token" --ingest 127.0.0.1:$port
"$trove" gen -o "$tmp/t.wire" --events 3000 --seed 5 -q
# Refused while its stream is still coming in: the service shuts its side and drops the rest
# rather than close on unread bytes, which would reset the connection and the line with it.
peer send "127.0.0.1:$port" '{"capture":"tcp-no"}' "$tmp/t.wire" > "$tmp/tcp-no.out" || bad "TCP producer without a token"
check grep -q '^{"type":"refuse","reason":"the hello has no token' "$tmp/tcp-no.out"
peer send "127.0.0.1:$port" "{\"capture\":\"tcp-yes\",\"token\":\"$tok\"}" "$tmp/t.wire" > /dev/null || bad "TCP producer with the token"
sleep 0.5
check cmp -s <(ev "$tmp/t.wire") <(ev store:tcp-yes --store "$s")
got=$(ev store:tcp-no --store "$s" | wc -l)
check test "$got" -eq 0
for p in /api/captures /api/captures/g /api/status /metrics / "/api/captures/g/export" \
    "/api/captures/g/profile" "/api/captures/nope/profile"; do
    status_is 401 GET "$p"
done
status_is 401 POST "/api/captures/import?name=z" --data-binary @"$tmp/g.wire"
status_is 401 DELETE /api/captures/g
status_is 401 GET /api/captures -H "Authorization: Bearer wrong-token-wrong-token"
status_is 200 GET /api/captures -H "Authorization: Bearer $tok"
status_is 401 GET "/login?token=nope"
curl -s -c "$tmp/jar" -o /dev/null "${url}login?token=$tok"
check grep -q trove_token "$tmp/jar"
status_is 200 GET /api/captures -b "$tmp/jar"
status_is 401 GET /api/captures/g/profile -H "Authorization: Bearer wrong-token-wrong-token"
status_is 401 GET /api/captures/g/profile -b "trove_token=wrong"
status_is 200 GET /api/captures/g/profile -H "Authorization: Bearer $tok"
json "$tmp/body" 'j["capture"] == "g" and j["samples"] == 0'
status_is 200 GET /api/captures/g/profile -b "$tmp/jar"
# the router reads what the client wrote: '&' in a path is no separator, an empty
# parameter is skipped (not the end of the query), an escaped '&' is part of a value
status_is 400 GET "/api/captures/g&x" -H "Authorization: Bearer $tok"
status_is 400 GET "/api/captures/g/export?&format=nope" -H "Authorization: Bearer $tok"
status_is 400 GET "/api/captures/g/export?format=bundle%26from_ns%3D1" -H "Authorization: Bearer $tok"
status_is 400 GET "/api/captures/g%2541" -H "Authorization: Bearer $tok"
# an escaped NUL after a '/' (which the HTTP layer keeps, cut) is refused, not the end of the
# path (GET /api/captures/ was the list); an escaped CR or LF, where the HTTP
# layer would end the request line, is refused (not acted on as /api/captures/g); a query
# ending in '&' is no parameter "/"; an upgrade without a key gets 400, not a silent drop
status_is 400 GET "/api/captures/%00g" -H "Authorization: Bearer $tok"
status_is 400 GET "/api/captures/g%0Ax" -H "Authorization: Bearer $tok"
status_is 400 DELETE "/api/captures/g%0D" -H "Authorization: Bearer $tok"
status_is 200 GET "/api/captures/g?" -H "Authorization: Bearer $tok"
status_is 200 GET "/api/captures?&" -H "Authorization: Bearer $tok"
status_is 400 GET "/api/live?capture=g" -H "Authorization: Bearer $tok" -H "Upgrade: websocket" \
    -H "Connection: Upgrade" -H "Sec-WebSocket-Version: 13"
peer ws "$url" "/api/replay?capture=g" - > "$tmp/ws.out"
check grep -q "status 401" "$tmp/ws.out"
peer ws "$url" "/api/replay?capture=g" - "Authorization: Bearer $tok" > "$tmp/ws.out"
check grep -q '"type":"end","events":50000' "$tmp/ws.out"
peer ws "$url" "/api/live?capture=g" - "Authorization: Bearer $tok" "Origin: http://evil.example" > "$tmp/ws.out"
check grep -q "status 403" "$tmp/ws.out"
serve_stop
fi

finish
