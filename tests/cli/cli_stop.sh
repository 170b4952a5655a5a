#!/usr/bin/env bash
# cli_stop.sh: a stop is not an end. `trove serve` stopped (SIGTERM) under live captures:
#   - a WebSocket viewer (tests/support/serve_peer.py, not trove's own client) gets the close 1001
#     "service stopped" and never {"type":"end"}; `trove watch` says "service stopped" and
#     exits 3 (its --json: "stopped":true, "close_code":1001, "ended":false)
#   - the producers `trove gen --live` and `trove record` (sending a file, and sampling a
#     command live) say "service stopped" and exit 3, as `trove record` does when the service
#     is killed (kill -9) under it
#   - a capture that ends on its own still gets {"type":"end"} and the close 1000, and
#     `trove watch` exits 0
#   - the viewer page in chromium says "service stopped", never "ended"
#     (tests/browser/stop_test.mjs; skipped without node, chromium and playwright-core)
# usage: cli_stop.sh TROVE SOURCE_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
peer() { python3 "$src/tests/support/serve_peer.py" "$@"; }
s=$tmp/s

# status_is CAPTURE EXPR: until capture CAPTURE in /api/status (as c) has EXPR true (2
# minutes at most).
status_is() {
    for _ in $(seq 1 1200); do
        peer get "${url}api/status" > "$tmp/status.json" 2> /dev/null &&
            json_check "$tmp/status.json" "any(c['name'] == '$1' and ($2) for c in j['captures'])" 2> /dev/null &&
                return 0
        sleep 0.1
    done
    return 1
}
# viewers CAPTURE N: until N viewers watch CAPTURE and it has events.
viewers() { status_is "$1" "c['viewers'] >= $2 and c['events'] > 0"; }

"$trove" gen -o "$tmp/g.wire" --events 60000 --seed 3 -q || bad gen

# ---- viewers and producers of a live capture when the service stops ----------------------------
if section viewers_and_producers; then
serve_start
"$trove" gen --live live1 --rate 50000 --seconds 300 --socket "$sock" -q 2> "$tmp/gen.err" &
gen=$!
peer ws "$url" "/api/live?capture=live1" "$tmp/ws.wire" > "$tmp/ws.out" 2>&1 &
ws=$!
"$trove" watch live1 --url "$url" --json > "$tmp/watch.json" 2> "$tmp/watch.err" &
watch=$!
check viewers live1 2
serve_stop
wait $ws
check grep -qx 'close 1001 service stopped' "$tmp/ws.out"
check grep -q '"type":"hello"' "$tmp/ws.out"
check test "$(grep -c '"type":"end"' "$tmp/ws.out")" -eq 0
check test -s "$tmp/ws.wire" # the events published before the stop came
wait $watch
check test $? -eq 3
json "$tmp/watch.json" 'j["stopped"] is True and j["close_code"] == 1001 and j["ended"] is False and j["events"] > 0'
check grep -q "service stopped before capture live1 ended" "$tmp/watch.err"
wait $gen
check test $? -eq 3
check grep -q "service stopped" "$tmp/gen.err"
check grep -q "the service is stopping: what this producer sent until now is kept" "$tmp/gen.err"
# what the viewers saw was kept: the store has at least as many events as the watch decoded
n=$("$trove" cat store:live1 --store "$s" 2> /dev/null | wc -l)
check test "$n" -ge "$(json_get "$tmp/watch.json" 'j["events"]')"
fi

# ---- `trove record` when the service stops, and when it is killed --------------------------------
if section trove_record_when; then
serve_start
"$trove" record rec1 --from "$tmp/g.wire" --rate 2000 --socket "$sock" 2> "$tmp/rec1.err" &
rec=$!
peer ws "$url" "/api/live?capture=rec1" - > "$tmp/ws-rec.out" 2>&1 &
ws=$!
check viewers rec1 1
serve_stop
wait $rec
check test $? -eq 3
check grep -q "trove record: service stopped" "$tmp/rec1.err"
wait $ws
check grep -qx 'close 1001 service stopped' "$tmp/ws-rec.out"
check test "$(grep -c '"type":"end"' "$tmp/ws-rec.out")" -eq 0

serve_start
"$trove" record rec2 --from "$tmp/g.wire" --rate 2000 --socket "$sock" 2> "$tmp/rec2.err" &
rec=$!
peer ws "$url" "/api/live?capture=rec2" - > /dev/null 2>&1 &
ws=$!
check viewers rec2 1
{ kill -9 "$srv_pid"; wait "$srv_pid"; } 2> /dev/null
srv_pid=
wait $rec
check test $? -eq 3
check grep -q "trove record: service stopped: the connection closed after [0-9]* events with no word" "$tmp/rec2.err"
wait $ws
fi

# ---- `trove record NAME -- CMD` (sampling, live) when the service stops ----------------------------
if section trove_record_name; then
if "$trove" record probe --top 1 -q -- true > /dev/null 2>&1; then
    serve_start
    "$trove" record samp --socket "$sock" -- "$(dirname "$trove")/trove-test-hot" --seconds 120 \
        > /dev/null 2> "$tmp/samp.err" &
    rec=$!
    check status_is samp "c['producers'] >= 1 and c['state'] == 'live'"
    serve_stop
    wait $rec
    check test $? -eq 3 # not killed by SIGPIPE (141), not an error (1)
    check grep -q "trove record: service stopped" "$tmp/samp.err"
else
    echo "sampling's part skipped: the kernel refuses sampling here"
fi
fi

# ---- an end is still an end -------------------------------------------------------------------------
if section end_is_still; then
serve_start
peer ws "$url" "/api/live?capture=ends" - > "$tmp/ws-end.out" 2>&1 &
ws=$!
"$trove" watch ends --url "$url" --json > "$tmp/watch-end.json" 2> "$tmp/watch-end.err" &
watch=$!
for _ in $(seq 1 1200); do # both wait for the capture: then it starts
    peer get "${url}api/status" 2> /dev/null | grep -q '"viewers":2' && break
    sleep 0.1
done
exits 0 "$trove" record ends --from "$tmp/g.wire" --socket "$sock" -q
wait $ws
check grep -q '^text {"type":"end","events":60000}' "$tmp/ws-end.out"
check grep -qx 'close 1000 end' "$tmp/ws-end.out"
wait $watch
check test $? -eq 0
json "$tmp/watch-end.json" 'j["ended"] is True and j["stopped"] is False and j["close_code"] == 1000 and j["events"] == 60000'
serve_stop
fi

# ---- the viewer page ---------------------------------------------------------------------------------
if section viewer_page; then
chromium=${TROVE_CHROMIUM:-/usr/bin/chromium}
if command -v node > /dev/null 2>&1 && [ -x "$chromium" ] &&
    [ -f "$src/tests/browser/node_modules/playwright-core/package.json" ]; then
    serve_start
    node "$src/tests/browser/stop_test.mjs" "$trove" "$url" "$sock" "$srv_pid" 2>&1 | tail -20
    check test "${PIPESTATUS[0]}" -eq 0
    wait "$srv_pid"
    check test $? -eq 0
    srv_pid=
else
    echo "the page's part skipped: needs node, $chromium and playwright-core (make deps deps-npm)"
fi
fi
finish
