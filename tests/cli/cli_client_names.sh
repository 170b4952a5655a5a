#!/usr/bin/env bash
# cli_client_names.sh: names kept. A program instrumented with libtrove-client
# (trove-example-sort: threads "main" and "sorter 0".."sorter 3") is sampled with
# `trove record NAME -- CMD` into the same capture, as docs/sampling.md recommends: the
# sampler names threads by their /proc comm (the executable's name), the program names them
# itself, and the program's names win whichever comes first (the sampler's hello says
# "names":"fallback"). The client names its process after the program, not the capture.
# The sampler, its service stopped mid-run, accounts for every sample: samples == sent +
# dropped.
# usage: cli_client_names.sh TROVE SOURCE_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
example=$(dirname "$trove")/trove-example-sort
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
unset TROVE_STORE TROVE_SOCKET
[ -x "$example" ] || { echo "skip: $example is not built"; exit 77; }
need_python3
need_sampling
s=$tmp/s

# The names in capture $1's Chrome JSON export, checked: the example's process is named
# trove-example-s (its comm), the thread of each "sort quarter" zone "sorter N", the main
# thread's "main", and no thread that has zones carries the executable's name.
names_kept() {
    "$TROVE" export "store:$1" --store "$s" --format chrome-json -o "$tmp/$1.json" -q ||
        { bad "export of $1"; return; }
    check python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
proc = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
thr = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
zones = [e for e in ev if e.get("ph") in ("X", "B")]
quarters = [e for e in zones if e["name"] == "sort quarter"]
assert len(quarters) >= 4, len(quarters)
pid = quarters[0]["pid"]
assert proc.get(pid) == "trove-example-s", proc
assert all(thr.get((e["pid"], e["tid"]), "").startswith("sorter ") for e in quarters), \
    [thr.get((e["pid"], e["tid"])) for e in quarters]
assert thr.get((pid, pid)) == "main", thr.get((pid, pid))
named = {thr.get((e["pid"], e["tid"])) for e in zones}
assert "trove-example-s" not in named and None not in named, named
' "$tmp/$1.json"
}

# The names: the program alone, and sampled into its capture twice.
if section names; then
serve_start
# The program alone: its process is named after it, not after the capture.
TROVE_SOCKET=$sock "$example" 200000 -c alone > "$tmp/alone.out" 2> "$tmp/alone.err" || bad "the example: $(cat "$tmp/alone.err")"
# Sampled, twice (the sampler's names and the program's come in either order).
for c in smp1 smp2; do
    TROVE_SOCKET=$sock "$TROVE" record "$c" --socket "$sock" -q -- "$example" 200000 -r 2 -c "$c" \
        > "$tmp/$c.out" 2> "$tmp/$c.err" || bad "record $c: $(cat "$tmp/$c.err")"
done
serve_stop
names_kept smp1
names_kept smp2
"$TROVE" export store:alone --store "$s" --format chrome-json -o "$tmp/alone.json" -q || bad "export of alone"
json "$tmp/alone.json" '[e["args"]["name"] for e in (j["traceEvents"] if isinstance(j, dict) else j)
                         if e.get("ph") == "M" and e["name"] == "process_name"] == ["trove-example-s"]'
fi

# The sampler's service stopped mid-run: it fails, and its samples add up.
if section sampler_stopped; then
serve_start
TROVE_SOCKET=$sock "$TROVE" record smpstop --socket "$sock" --json -- "$example" 200000 -r 0 -c smpstop \
    > "$tmp/stop.json" 2> "$tmp/stop.err" &
r_pid=$!
for _ in $(seq 1 1200); do
    curl -s "${url}api/status" > "$tmp/st.json" 2> /dev/null
    json_check "$tmp/st.json" '[c["samples"] > 0 for c in j["captures"] if c["name"] == "smpstop"][:1] == [True]' \
        2> /dev/null && break
    sleep 0.05
done
serve_stop
wait "$r_pid" && bad "record (sampling) ended 0 with its service stopped"
grep '^{"capture"' "$tmp/stop.json" > "$tmp/stop1.json" # the command's own line is there too
json "$tmp/stop1.json" 'j["failed"] and j["sent_samples"] > 0' \
    'j["samples"] == j["sent_samples"] + j["dropped_samples"]'
fi

finish
