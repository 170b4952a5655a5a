#!/usr/bin/env bash
# cli_viewer_find.sh: finding and measuring in the viewer — search steps, the name panel and
# its histogram, a range's clipped totals, the selected event's details — in a real browser
# (Debian's chromium, headless, playwright-core: tests/browser/find_test.mjs says what it
# checks) against a real `trove serve` holding the sample Chrome trace, and the service's
# answers those rest on (/events match=1, order=start_desc, the duration window; /stats
# clip=1) checked against the CLI. The screenshots it takes are saved in the test's temp dir
# (KEEP=1 keeps it).
# usage: cli_viewer_find.sh TROVE SOURCE_DIR [SHARED_DATA_DIR]
set -u
TROVE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
shared=${3:-$src/../shared/data}
. "$src/tests/support/lib_cli.sh"
need_python3
sample=$shared/chrome-trace-dom.json.zst
need_browser "$src"
[ -f "$sample" ] || { echo "skipped: no sample trace at $sample"; exit 77; }
command -v zstd > /dev/null 2>&1 || { echo "skipped: needs zstd"; exit 77; }
[ -n "${KEEP:-}" ] && trap '[ -n "${srv_pid:-}" ] && kill -9 $srv_pid 2>/dev/null; echo "kept $tmp"' EXIT
s=$tmp/store
zstd -dqc "$sample" > "$tmp/dom.json" || bad "zstd -dc $sample"
"$TROVE" import "$tmp/dom.json" --store "$s" --name dom -q 2> "$tmp/import.err" || bad "import: $(cat "$tmp/import.err")"
"$TROVE" export store:dom --store "$s" --format chrome-json -o "$tmp/export.json" -q || bad "export of the capture"
"$TROVE" stats dom --store "$s" --name RunTask --json > "$tmp/runtask.json" || bad "trove stats --name RunTask"

if section api; then
serve_start
api=${url}api/captures/dom
# match=1: the first events whose names contain "runtask" (any case), by start then index,
# are the export's; start_desc steps back; the duration window keeps what it says
curl -sf "$api/events?name=runtask&match=1&limit=50" > "$tmp/m.json" || bad "events match=1"
curl -sf "$api/events?name=runtask&match=1&limit=50&order=start_desc&to_ns=590000000000" > "$tmp/d.json" || bad "events start_desc"
curl -sf "$api/events?name=RunTask&limit=100&min_dur_ns=1000000&max_dur_ns=2000000" > "$tmp/w.json" || bad "events min_dur_ns"
python3 - "$tmp/export.json" "$tmp/m.json" "$tmp/d.json" "$tmp/w.json" <<'PY' || bad "the events answers differ from the export"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
starts = sorted(round(e["ts"] * 1000) for e in ev if e["ph"] in ("X", "i", "b", "n") and "runtask" in e["name"].lower())
m = json.load(open(sys.argv[2]))["events"]
assert [e["start_ns"] for e in m] == starts[:50], "match=1: the first 50 by start"
d = json.load(open(sys.argv[3]))["events"]
before = [s for s in starts if s < 590000000000]
assert [e["start_ns"] for e in d] == before[::-1][:50], "start_desc: the last 50 before to_ns"
w = json.load(open(sys.argv[4]))["events"]
assert w and all(1000000 <= e["dur_ns"] <= 2000000 for e in w), "the duration window"
want = sorted(round(e["ts"] * 1000) for e in ev if e["ph"] == "X" and e["name"] == "RunTask" and 1000000 <= round(e["dur"] * 1000) <= 2000000)
assert [e["start_ns"] for e in w] == want[:100], "the window's instances by start"
PY
check test -s "$tmp/m.json"
# clip=1 over 5 ms: the CLI's --clip and the service agree, and no name's total exceeds the
# range times its events
"$TROVE" stats dom --store "$s" --from-ns 590700000000 --to-ns 590705000000 --clip --limit 0 --json > "$tmp/clip-cli.json" || bad "stats --clip"
curl -sf "$api/stats?from_ns=590700000000&to_ns=590705000000&clip=1&limit=0" > "$tmp/clip-api.json" || bad "stats clip=1"
json_check "$tmp/clip-api.json" 'all(r["total_ns"] <= r["count"] * 5000000 and r["max_ns"] <= 5000000 for r in j["rows"]) and len(j["rows"]) > 5'
check test "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows"])' "$tmp/clip-cli.json")" = \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows"])' "$tmp/clip-api.json")"
check test "$(curl -s -o /dev/null -w '%{http_code}' "$api/stats?clip=2")" = 400
check test "$(curl -s -o /dev/null -w '%{http_code}' "$api/events?name=x&order=sideways")" = 400
serve_stop
fi

if section browser; then
serve_start
node "$src/tests/browser/find_test.mjs" "$url" dom "$tmp/export.json" "$tmp/runtask.json" "$tmp" 2>&1 | tail -40
check test "${PIPESTATUS[0]}" -eq 0
for f in search namepanel namebar range range-thread range-namepanel all; do check test -s "$tmp/find-$f.png"; done
serve_stop
fi
if section live; then
serve_start
"$TROVE" gen --live lv --rate 20000 --seconds 120 --names 50 --socket "$sock" -q > /dev/null 2> "$tmp/gen.err" &
gen_pid=$!
node "$src/tests/browser/find_test.mjs" --live "$url" lv "$tmp" 2>&1 | tail -20
check test "${PIPESTATUS[0]}" -eq 0
check test -s "$tmp/find-live.png"
kill "$gen_pid" 2> /dev/null
wait "$gen_pid" 2> /dev/null
serve_stop
fi
finish
