#!/usr/bin/env bash
# cli_serve.sh: `trove serve` end to end on loopback, with trove's own producers (`trove
# record`) and viewers (`trove watch`) and a few odd peers (tests/support/serve_peer.py):
#   - two viewers, raw and packed, get exactly the events `trove cat` shows for the input,
#     in order, and {"type":"end"}; the store has them too
#   - a from=start viewer joined mid-capture gets every event exactly once
#   - a stalled viewer drops alone; the other viewer and the store get everything
#   - a producer sending garbage is closed and counted; the capture keeps what came before
#   - two producers (two pids) on one capture: one timeline with both
#   - kill -9 before a new capture's first commit leaves no capture (ls lists none, exits 0)
#   - kill -9 mid-capture: after a restart the committed events are intact, verify --deep is
#     clean, and a producer appends; SIGTERM commits everything
#   - /api/status shows each connection's wire; capture names are checked; a second
#     service on the store is refused
#   - `record --from` places a file's events at the time they are sent (all moved by one
#     amount, said on stderr and in --json), or keeps them with --keep-times; it finds the
#     service by $TROVE_SOCKET
#   - producers are told: `record --append` to a capture the store does not have is refused
#     and exits 1 with the reason; --json and -v say new, replace (and the service logs the
#     replacement), append; a producer flooding new names is closed with an error naming the
#     bound while the service stays under 256 MiB and goes on serving; 450,000 distinct names
#     through `record` are refused at the names frame (or, once the capture format stores
#     that many, committed whole), never taken in silence
# usage: cli_serve.sh TROVE SOURCE_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
peer() { python3 "$src/tests/support/serve_peer.py" "$@"; }

s=$tmp/s
# serve_start, serve_stop: lib_cli.sh. ev FILE: trove cat's lines, to compare inputs with
# what came back.
ev() { "$trove" cat "$@" 2> /dev/null; }
# await_status EXPR: until EXPR holds of the service's /api/status (as j), at most 2 minutes.
await_status() {
    for _ in $(seq 1 1200); do
        peer get "${url}api/status" > "$tmp/await.json" 2> /dev/null &&
            json_check "$tmp/await.json" "$1" 2> /dev/null &&
            return 0
        sleep 0.1
    done
    bad "status never showed: $1"
}

"$trove" gen -o "$tmp/g.wire" --events 60000 --seed 7 --names 300 -q || bad gen
"$trove" gen -o "$tmp/big.wire" --events 400000 --seed 8 --names 300 --processes 2 -q || bad gen
ev "$tmp/g.wire" > "$tmp/g.txt"
ev "$tmp/big.wire" > "$tmp/big.txt"

# ---- usage and errors ----------------------------------------------------------------------
if section usage_and_errors; then
for c in serve record watch; do exits 0 "$trove" "$c" --help; done
expect_error serve serve --store "$s" --wire bogus
expect_error serve serve --store "$s" --listen nowhere
expect_error record record 'a/b' --from "$tmp/g.wire"
expect_error watch watch '.bad'
expect_error record record cap --from "$tmp/g.wire" --keep-times --socket "$tmp/none.sock"
check grep -q "trove serve" "$tmp/e.err"

"$trove" volume create blk --size 1M --store "$s" -q || bad "volume create"  # not a capture
serve_start --commit-ms 200 --max-viewer-queue 4M
# A second service on the same store is refused, at once and by name.
expect_error serve serve --store "$s" --listen 127.0.0.1:0
check grep -q "open for writing by another process" "$tmp/e.err"
fi

# ---- two viewers, raw and packed, waiting before the capture exists --------------------------
if section two_viewers; then
"$trove" watch one --url "$url" --wire raw -o "$tmp/raw.wire" --json --seconds 60 > "$tmp/w1.json" 2> "$tmp/w1.err" &
w1=$!
"$trove" watch one --url "$url" --wire packed -o "$tmp/packed.wire" --json --seconds 60 > "$tmp/w2.json" 2> "$tmp/w2.err" &
w2=$!
sleep 0.5
"$trove" record one --from "$tmp/g.wire" --keep-times --socket "$sock" --json > "$tmp/r1.json" 2> "$tmp/r1.err" || bad "record: $(cat "$tmp/r1.err")"
json "$tmp/r1.json" 'j["events"] == 60000 and j["capture"] == "one"'
wait $w1 || bad "watch raw: $(cat "$tmp/w1.err")"
wait $w2 || bad "watch packed: $(cat "$tmp/w2.err")"
json "$tmp/w1.json" 'j["wire"] == "raw" and j["events"] == 60000 and j["ended"] and j["end_events"] == 60000 and j["dropped_events"] == 0 and j["close_code"] == 1000'
json "$tmp/w2.json" 'j["wire"] == "packed" and j["events"] == 60000 and j["ended"] and j["bytes_per_event"] < 20'
ev "$tmp/raw.wire" > "$tmp/raw.txt"
ev "$tmp/packed.wire" > "$tmp/packed.txt"
check cmp -s "$tmp/g.txt" "$tmp/raw.txt"
check cmp -s "$tmp/g.txt" "$tmp/packed.txt"
# The store has the capture, readable while the service runs.
"$trove" ls --store "$s" --json > "$tmp/ls.json" || bad "ls while serving"
json "$tmp/ls.json" 'any(c["name"] == "one" and c["events"] == 60000 for c in (j["captures"] if isinstance(j, dict) else j))'
ev store:one --store "$s" > "$tmp/stored.txt"
check cmp -s "$tmp/g.txt" "$tmp/stored.txt"
# A closed capture, from=start: what is stored, then the end.
"$trove" watch one --url "$url" --from start -o "$tmp/again.wire" --json --seconds 30 > "$tmp/w3.json" 2> /dev/null || bad "watch a closed capture"
json "$tmp/w3.json" 'j["events"] == 60000 and j["ended"]'
check cmp -s "$tmp/g.txt" <(ev "$tmp/again.wire")
fi

# ---- from=start joined mid-capture; a stalled viewer; /api/status ---------------------------
if section from_start_joined; then
peer stall "$url" two 20 > "$tmp/stall.out" &
stall=$!
"$trove" watch two --url "$url" --wire packed -o "$tmp/live.wire" --json --seconds 60 > "$tmp/w4.json" 2> /dev/null &
w4=$!
sleep 0.3
# 4 s of capture, so that the status below finds it live even on a loaded machine
"$trove" record two --from "$tmp/big.wire" --keep-times --socket "$sock" --rate 100000 -q &
rec=$!
sleep 1
"$trove" watch two --url "$url" --from start --wire deflate -o "$tmp/late.wire" --json --seconds 60 > "$tmp/w5.json" 2> /dev/null &
w5=$!
# Until the producer has sent and the late viewer is in (a sanitized build on a loaded machine
# can take seconds to read big.wire), then the status below.
await_status 'any(c["kind"] == "producer" and c["capture"] == "two" and c["events"] > 0 for c in j["connections"]) and len([c for c in j["connections"] if c["kind"] == "viewer" and c["capture"] == "two"]) == 3'
peer get "${url}api/status" > "$tmp/status.json" || bad "GET /api/status"
json "$tmp/status.json" 'sorted(c["wire"] for c in j["connections"] if c["kind"] == "viewer" and c["capture"] == "two") == ["deflate", "packed", "raw"]'
json "$tmp/status.json" 'any(c["kind"] == "producer" and c["capture"] == "two" and c["events"] > 0 for c in j["connections"])'
# A viewer's peer is ADDR:PORT, as a TCP producer's is: two viewers of one host are told apart.
json "$tmp/status.json" 'all(c["peer"].startswith("127.0.0.1:") and c["peer"][10:].isdigit() for c in j["connections"] if c["kind"] == "viewer")'
json "$tmp/status.json" 'any(c["name"] == "two" and c["live"] for c in j["captures"]) and j["wire"] == "auto" and "uptime_s" in j'
peer get "${url}metrics" > "$tmp/metrics.txt" || bad "GET /metrics"
check grep -q '^trove_capture_events{capture="two"} ' "$tmp/metrics.txt"
peer get "${url}status" > "$tmp/index.html" || bad "GET /status"
check grep -q '<td>two</td>' "$tmp/index.html"
wait $rec || bad "record two"
sleep 0.3
# The stalled viewer, and only it, dropped (12.8 MB of raw frames into a 4 MiB queue; the
# packed viewer's whole capture, 4 MB, fits in its queue even if it stops for a while).
peer get "${url}api/status" > "$tmp/status-stall.json"
json "$tmp/status-stall.json" '[c["drops"] > 0 for c in j["connections"] if c["kind"] == "viewer" and c["capture"] == "two" and c["wire"] == "raw"] == [True]'
wait $w4 || bad "watch two"
wait $w5 || bad "watch two from start"
json "$tmp/w4.json" 'j["events"] == 400000 and j["dropped_events"] == 0 and j["ended"]'
json "$tmp/w5.json" 'j["events"] == 400000 and j["dropped_events"] == 0 and j["ended"] and j["wire"] == "deflate"'
check cmp -s "$tmp/big.txt" <(ev "$tmp/live.wire")
check cmp -s "$tmp/big.txt" <(ev "$tmp/late.wire")   # every event once, in order
check cmp -s "$tmp/big.txt" <(ev store:two --store "$s")
kill $stall 2> /dev/null
wait $stall 2> /dev/null
fi

# ---- a producer sending garbage; bad hellos ---------------------------------------------------
if section producer_sending_garbage; then
"$trove" gen -o "$tmp/part.wire" --events 10000 --seed 9 --names 50 -q || bad gen
ev "$tmp/part.wire" > "$tmp/part.txt"
printf 'this is not a wire frame' >> "$tmp/part.wire"
peer send "$sock" '{"capture":"three","pid":9}' "$tmp/part.wire" > /dev/null || bad "garbage producer"
peer send "$sock" '{"capture":".bad"}' > /dev/null || bad "bad name producer"
peer send "$sock" 'not json' > /dev/null || bad "bad hello producer"
sleep 0.5
peer get "${url}api/status" > "$tmp/status2.json"
json "$tmp/status2.json" 'j["producers_refused"] >= 3'
json "$tmp/status2.json" 'any(c["name"] == "three" and c["events"] > 0 for c in j["captures"])'
"$trove" watch three --url "$url" --from start --json --seconds 20 > "$tmp/w6.json" 2> /dev/null
json "$tmp/w6.json" 'j["events"] == 10000 and j["ended"]'  # what came before the garbage
check cmp -s "$tmp/part.txt" <(ev store:three --store "$s")
# A capture that cannot be written (a block volume has the name): its producer is closed
# with the reason, and a viewer is told.
peer send "$sock" '{"capture":"blk"}' "$tmp/part.wire" > /dev/null || bad "producer of blk"
sleep 0.3
peer get "${url}api/status" > "$tmp/status3.json"
json "$tmp/status3.json" 'any(c["name"] == "blk" and c["state"] == "failed" and "block volume" in c["error"] for c in j["captures"])'
"$trove" watch blk --url "$url" --seconds 10 > /dev/null 2> "$tmp/wblk.err"
check test $? -ne 0
check grep -q "block volume" "$tmp/wblk.err"
"$trove" watch .x --url "$url" > /dev/null 2>&1
check test $? -ne 0
peer ws "$url" "/api/live?capture=a%2Fb" > "$tmp/ws.out"
check grep -q '"type":"error"' "$tmp/ws.out"
check grep -q 'close 1008' "$tmp/ws.out"
fi

# ---- two producers, two pids, one capture ------------------------------------------------------
if section two_producers; then
"$trove" record four --from "$tmp/g.wire" --keep-times --socket "$sock" --pid 101 --rate 100000 -q &
p1=$!
"$trove" record four --from "$tmp/g.wire" --keep-times --socket "$sock" --pid 102 --rate 100000 -q &
p2=$!
wait $p1 || bad "producer 1"
wait $p2 || bad "producer 2"
sleep 1
"$trove" cat store:four --store "$s" --json > "$tmp/four.json" 2> /dev/null
check test "$(wc -l < "$tmp/four.json")" -eq 120000
for pid in 101 102; do
    n=$(grep -c "\"pid\":$pid," "$tmp/four.json")
    check test "$n" -eq 60000
done
serve_stop
fi

# ---- producers over TCP (--ingest) ---------------------------------------------------------------
if section producers_over_tcp; then
port=$((20000 + RANDOM % 20000))
serve_start --ingest 127.0.0.1:$port
"$trove" gen -o "$tmp/tcp.wire" --events 5000 --seed 11 -q || bad gen
peer send "127.0.0.1:$port" '{"capture":"tcp","pid":5}' "$tmp/tcp.wire" > /dev/null || bad "TCP producer"
sleep 0.5
check cmp -s <(ev "$tmp/tcp.wire") <(ev store:tcp --store "$s")
serve_stop
fi

# ---- kill -9 mid-capture, restart, append; SIGTERM commits ------------------------------------
if section kill_9_mid; then
serve_start --commit-ms 100
"$trove" record five --from "$tmp/big.wire" --keep-times --socket "$sock" --rate 100000 -q 2> /dev/null &
rec=$!
# Killed once some of it is committed (and while the rest is still coming).
await_status 'any(c["name"] == "five" and c["committed_events"] > 0 for c in j["captures"])'
{ kill -9 "$srv_pid"; wait "$srv_pid"; } 2> /dev/null
srv_pid=
wait $rec 2> /dev/null
"$trove" ls --store "$s" --json > "$tmp/ls2.json" || bad "ls after kill -9"
n5=$("$trove" cat store:five --store "$s" 2> /dev/null | wc -l)
check test "$n5" -gt 0
check test "$n5" -lt 400000
check cmp -s <(head -n "$n5" "$tmp/big.txt") <(ev store:five --store "$s")
exits 0 "$trove" verify --deep --store "$s"
serve_start --commit-ms 100000
"$trove" record five --from "$tmp/g.wire" --keep-times --socket "$sock" --append -q || bad "append"
sleep 0.5
serve_stop # commits what the long commit interval had not
check cmp -s <(cat <(head -n "$n5" "$tmp/big.txt") "$tmp/g.txt") <(ev store:five --store "$s")
check grep -q "stopped; every capture is committed" "$tmp/serve.err"
exits 0 "$trove" verify --deep --store "$s"
check test ! -e "$s/trove.sock"
fi

# ---- an append to an imported capture: live segments stay deflate ones ---------------------
# An import stores model segments (format 8), whose encoder is too slow for a live capture:
# `record --append` to one goes on in deflate segments, and the capture says it holds both.
if section append_to_an_imported; then
"$trove" import "$tmp/g.wire" --store "$s" --name imp -q || bad "import imp"
serve_start
"$trove" record imp --from "$tmp/g.wire" --keep-times --socket "$sock" --append -q || bad "append to imp"
serve_stop
"$trove" ls --store "$s" --json > "$tmp/ls-imp.json" || bad "ls after the append"
json "$tmp/ls-imp.json" '[(c["events"], c["segment_format"]) for c in j if c["name"] == "imp"] == [(120000, "deflate+model")]'
check cmp -s <(cat "$tmp/g.txt" "$tmp/g.txt") <(ev store:imp --store "$s")
exits 0 "$trove" verify --deep --store "$s"
fi

# ---- kill -9 before a new capture's first commit: no capture left behind, nothing unreadable --
if section kill_9_before; then
serve_start --commit-ms 100000
"$trove" record pend --from "$tmp/big.wire" --socket "$sock" --rate 20000 -q 2> /dev/null &
rec=$!
await_status 'any(c["name"] == "pend" and c["events"] > 0 for c in j["captures"])'
{ kill -9 "$srv_pid"; wait "$srv_pid"; } 2> /dev/null
srv_pid=
wait $rec 2> /dev/null
"$trove" ls --store "$s" --json > "$tmp/ls-pend.json" 2> "$tmp/ls-pend.err" || bad "ls after a kill before the first commit: $(cat "$tmp/ls-pend.err")"
json "$tmp/ls-pend.json" 'all(c["name"] != "pend" for c in (j["captures"] if isinstance(j, dict) else j))'
exits 0 "$trove" verify --store "$s"
fi

# ---- a second SIGTERM while the stop waits (3 s for a stalled viewer) exits at once -----------
if section second_sigterm_while; then
serve_start
peer stall "$url" sig 30 > "$tmp/stall2.out" &
stall=$!
for _ in $(seq 1 100); do grep -q stalled "$tmp/stall2.out" 2> /dev/null && break; sleep 0.1; done
"$trove" record sig --from "$tmp/g.wire" --keep-times --socket "$sock" -q || bad "record sig"
kill -TERM "$srv_pid"
sleep 0.5
check kill -0 "$srv_pid" # still stopping: the stalled viewer's grace
kill -TERM "$srv_pid"
wait "$srv_pid"
check test $? -eq 1
srv_pid=
check grep -q "a second signal: exiting at once" "$tmp/serve.err"
kill $stall 2> /dev/null
wait $stall 2> /dev/null
exits 0 "$trove" verify --deep --store "$s"
fi

# ---- what producers are told: refusals, modes, the names bounds --------------------------------
if section what_producers_are; then
serve_start
"$trove" record nothere --from "$tmp/g.wire" --keep-times --socket "$sock" --append > "$tmp/ap.out" 2> "$tmp/ap.err"
check test $? -eq 1
check test ! -s "$tmp/ap.out"
check grep -q "refused capture nothere: .*no capture named nothere in the store" "$tmp/ap.err"
"$trove" record modes --from "$tmp/g.wire" --keep-times --socket "$sock" --json > "$tmp/m1.json" 2> "$tmp/m1.err" ||
    bad "record modes: $(cat "$tmp/m1.err")"
json "$tmp/m1.json" 'j["events"] == 60000 and j["accept"]["mode"] == "new" and j["accept"]["events"] == 0'
"$trove" record modes --from "$tmp/g.wire" --keep-times --socket "$sock" -v > /dev/null 2> "$tmp/m2.err" ||
    bad "record modes again: $(cat "$tmp/m2.err")"
check grep -q "replaces the stored capture (60000 events) at its first commit" "$tmp/m2.err"
check grep -q "capture modes: session [0-9]* replaces the stored capture (60000 events)" "$tmp/serve.err"
"$trove" record modes --from "$tmp/g.wire" --keep-times --socket "$sock" --append --json > "$tmp/m3.json" 2> /dev/null ||
    bad "record modes --append"
json "$tmp/m3.json" 'j["accept"]["mode"] == "append" and j["accept"]["events"] == 60000'
"$trove" gen --live modes --rate 100000 --seconds 0.2 --socket "$sock" --append -v > /dev/null 2> "$tmp/m4.err" ||
    bad "gen --live --append: $(cat "$tmp/m4.err")"
check grep -q "capture modes: session [0-9]*, append (120000 events stored)" "$tmp/m4.err"
# gen --live faster than its model's own pace (200,000 events the model spreads over about
# half a second, sent in a tenth): each thread's zones keep their order and never overlap on
# one depth, nor outgrow their parent (the times are scaled, not moved batch by batch).
"$trove" gen --live fast --rate 2000000 --seconds 0.1 --socket "$sock" -q || bad "gen --live fast"
serve_stop
check test "$(ev store:modes --store "$s" | wc -l)" -eq 140000
"$trove" cat store:fast --store "$s" --json 2> /dev/null > "$tmp/fast.jsonl"
check python3 - "$tmp/fast.jsonl" << 'PY'
import json, sys
last, open_, n = {}, {}, 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if "start_ns" not in e or e["kind"] not in ("zone", "frame", "lock"):
        continue
    n += 1
    k, s, end = (e["pid"], e["tid"]), e["start_ns"], e["start_ns"] + e["dur_ns"]
    prev = last.get(k + (e["depth"],))
    assert prev is None or s >= prev, f"{k} depth {e['depth']}: {s} starts before the last zone's end {prev}"
    last[k + (e["depth"],)] = end
    parent = open_.get(k + (e["depth"] - 1,))
    assert e["depth"] == 0 or parent is None or parent[0] <= s and end <= parent[1], f"{k}: {s}..{end} outside {parent}"
    open_[k + (e["depth"],)] = (s, end)
assert n > 150000, n
PY
"$trove" ls --store "$s" --json > "$tmp/ls-ap.json" || bad "ls after a refused append"
json "$tmp/ls-ap.json" 'not any(c["name"] == "nothere" for c in j)'

# A producer flooding new names (10,000 a frame, 16 bytes each) is closed at the bound and
# told why; the service's peak memory stays under 256 MiB (docs/serve.md has what was
# measured), and it serves the next producer. Not under a sanitizer, whose memory says little.
serve_start
peer flood "$sock" flood 16 > "$tmp/flood.out" || bad "flood producer"
check grep -q '^{"type":"accept","capture":"flood",' "$tmp/flood.out"
check grep -q '^{"type":"error","reason":"names bound: this producer sent [0-9]* names' "$tmp/flood.out"
check grep -q "the 25165824 bytes of names a producer may send" "$tmp/flood.out"
check grep -q "producer [0-9]* (unix, capture flood) closed: names bound" "$tmp/serve.err"
if ldd "$trove" 2> /dev/null | grep -q 'libasan\|libtsan'; then
    echo "peak memory check skipped under a sanitizer"
else
    hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$srv_pid/status")
    echo "the service's peak after the names flood: $hwm kB"
    check test "$hwm" -lt $((256 * 1024))
fi
# Names of 8 bytes: the 500,000 names a producer may send is the bound they reach first.
peer flood "$sock" flood2 8 > "$tmp/flood2.out" || bad "flood producer 2"
check grep -q '^{"type":"error","reason":"names bound: this producer sent 500000 names' "$tmp/flood2.out"
check grep -q "the 500000 names a producer may send" "$tmp/flood2.out"
"$trove" record afterflood --from "$tmp/g.wire" --keep-times --socket "$sock" -q || bad "record after the floods"
# 450,000 distinct names of 100 bytes (a Chrome trace of 71 MB) in one names frame: over
# what one producer may send (they count 61.6 MB), so refused at that frame's header, before
# its payload is read (`trove import` stores them, in names parts). Whichever way, record
# says so: never an exit 0 with the names dropped, never a capture left closing.
peer chrome-names "$tmp/names450k.json" 450000 100 || bad "writing the 450,000 names trace"
"$trove" record names450k --from "$tmp/names450k.json" --socket "$sock" -q > /dev/null 2> "$tmp/n450.err"
n450=$?
rm -f "$tmp/names450k.json"
state=
for _ in $(seq 1 300); do
    peer get "${url}api/status" > "$tmp/status-n450.json"
    state=$(json_get "$tmp/status-n450.json" '" ".join(c["state"] for c in j["captures"] if c["name"] == "names450k")')
    [ "$state" = closed ] && break
    sleep 0.1
done
check test "$state" = closed # committed (or nothing was left to commit): not closing for ever
if [ "$n450" -ne 0 ]; then
    echo "450,000 names: refused at the names frame: $(head -c 400 "$tmp/n450.err")"
    check grep -q "names bound: this producer sent 0 names (0 bytes as counted), and a names frame of 450000 more would pass the 25165824 bytes" "$tmp/n450.err"
    check test "$(ev store:names450k --store "$s" | wc -l)" -eq 0
else
    echo "450,000 names: committed whole"
    check test "$(ev store:names450k --store "$s" | wc -l)" -eq 450000
fi
serve_stop
fi

# ---- record --from: a file's events placed at the time they are sent, or kept --------------
# Without --keep-times every event moves by one amount (said on stderr and as shift_ns) so the
# first starts when the first frame goes: between two CLOCK_MONOTONIC readings taken around
# the run, as a live producer's would. The producer finds the service by $TROVE_SOCKET alone
# (no --socket, no --store, run where there is no ./trove-data).
if section record_from; then
serve_start --commit-ms 100
mono() { python3 -c 'import time; print(time.monotonic_ns())'; }
t0=$(mono)
(cd "$tmp" && TROVE_SOCKET=$sock "$trove" record placed --from "$tmp/g.wire" --json) > "$tmp/pl.json" 2> "$tmp/pl.err" ||
    bad "record by \$TROVE_SOCKET: $(cat "$tmp/pl.err")"
t1=$(mono)
json "$tmp/pl.json" 'j["events"] == 60000 and j["times"] == "sent" and j["shift_ns"] != 0'
(cd "$tmp" && TROVE_SOCKET=$sock "$trove" record placed2 --from "$tmp/g.wire") 2> "$tmp/pl2.err" ||
    bad "record, said on stderr: $(cat "$tmp/pl2.err")"
check grep -q "events placed at the time they are sent (moved by" "$tmp/pl2.err"
"$trove" record kept --from "$tmp/g.wire" --keep-times --socket "$sock" --json > "$tmp/kt.json" 2> "$tmp/kt.err" ||
    bad "record --keep-times: $(cat "$tmp/kt.err")"
json "$tmp/kt.json" 'j["times"] == "kept" and j["shift_ns"] == 0'
"$trove" record kept2 --from "$tmp/g.wire" --keep-times --socket "$sock" 2> "$tmp/kt2.err" || bad "record --keep-times"
check grep -q "own event times kept (--keep-times)" "$tmp/kt2.err"
serve_stop
ev store:placed --store "$s" > "$tmp/placed.txt"
check python3 - "$tmp/g.txt" "$tmp/placed.txt" "$tmp/pl.json" "$t0" "$t1" <<'PY'
import json, sys
orig = [l.split(" ", 1) for l in open(sys.argv[1])]
moved = [l.split(" ", 1) for l in open(sys.argv[2])]
shift = json.load(open(sys.argv[3]))["shift_ns"]
t0, t1 = int(sys.argv[4]), int(sys.argv[5])
assert len(orig) == len(moved) == 60000, (len(orig), len(moved))
# the same events, in the same order, each moved by exactly shift_ns
assert all(a[1] == b[1] and int(a[0]) + shift == int(b[0]) for a, b in zip(orig, moved))
first = min(int(b[0]) for b in moved)
assert t0 <= first <= t1, (t0, first, t1)
PY
check cmp -s "$tmp/g.txt" <(ev store:kept --store "$s")
fi

# ---- --segment-format columnar: live captures and imports stored in format 5 ------------------
if section segment_format_columnar; then
serve_start --commit-ms 100 --segment-format columnar
"$trove" record col --from "$tmp/g.wire" --keep-times --socket "$sock" -q || bad "record, columnar"
"$trove" import "$tmp/g.wire" --url "$url" --name colimp -q || bad "import, columnar"
sleep 0.5
if command -v curl > /dev/null; then
  curl -s -o "$tmp/col.json" "${url%/}/api/captures/col" || bad "GET /api/captures/col"
  json "$tmp/col.json" 'j["segment_format"] == "columnar" and j["events"] == 60000'
fi
serve_stop
"$trove" ls --store "$s" --json > "$tmp/ls3.json" || bad "ls, columnar"
json "$tmp/ls3.json" '{e["name"]: e.get("segment_format") for e in j if e["name"] in ("col", "colimp", "five")} == {"col": "columnar", "colimp": "columnar", "five": "columnar_deflate"}'
check cmp -s "$tmp/g.txt" <(ev store:col --store "$s")
check cmp -s "$tmp/g.txt" <(ev store:colimp --store "$s")
exits 0 "$trove" verify --deep --store "$s"
exits 2 "$trove" serve --store "$s" --segment-format packed
check grep -q "not deflate, columnar, columnar_deflate or model" "$tmp/err"
exits 2 "$trove" serve --store "$s" --segment-format model
check grep -q "model is for imports" "$tmp/err"
fi

finish
