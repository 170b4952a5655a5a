#!/usr/bin/env bash
# diff_bench.sh: how long `trove diff` takes (docs/diff.md), the whole command timed, median
# of REPS runs:
#   - the sample Chrome trace against itself, and against a new recording of its page
#     (bench/traces/record.sh, when chromium is there): exact (every duration read), from the
#     summaries (--sketch), and through a service (GET /api/diff, curl);
#   - two `trove gen` captures of EVENTS events (default 100 M), the second with zone_3 made
#     1.3 times slower: from the summaries (a capture over 16 Mi events is not read whole), and
#     by thread (every segment read) once.
# The stores stay in DIR (the gen captures are made once and reused).
# Prints one markdown table (docs/BENCHMARKS.md, "How fast is trove diff?").
# usage: diff_bench.sh TROVE DIR [SAMPLE_TRACE.json[.zst]] [EVENTS] [REPS]
set -eu
trove=$1
dir=$2
sample=${3:-}
events=${4:-100000000}
reps=${5:-5}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
st=$dir/diff-traces
sg=$dir/diff-gen-$events

# median_ms CMD...: the median wall time of REPS runs of CMD (its output dropped), in ms
median_ms() {
    local t=() i t0 t1
    for ((i = 0; i < reps; i++)); do
        t0=$(date +%s%N)
        "$@" > /dev/null
        t1=$(date +%s%N)
        t+=($(((t1 - t0) / 1000)))
    done
    printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR] = $1} END {printf "%.1f", a[int((NR + 1) / 2)] / 1000}'
}
top() {
    "$trove" diff "$@" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
r = j["rows"][0]
sig = sum(x["significant"] for x in j["rows"])
p50 = (r["ratio"] or {}).get("p50") or 0
print("%s, %s rows, %d significant, the first %s (%s, p50 x%.3f)" % (j["method"], format(j["nrows"], ","), sig, r["name"], r["change"], p50))'
}
commas() { python3 -c 'import sys; print(format(int(sys.argv[1]), ","))' "$1"; }

echo "| comparison | events (A + B) | how | median ms | what it found |"
echo "|---|---:|---|---:|---|"
if [ -n "$sample" ] && [ -f "$sample" ]; then
    rm -rf "$st"
    case $sample in *.zst) zstd -dqc "$sample" > "$dir/diff-a.json" ;; *) cp "$sample" "$dir/diff-a.json" ;; esac
    "$trove" import "$dir/diff-a.json" --store "$st" --name a -q
    "$trove" import "$dir/diff-a.json" --store "$st" --name a2 -q
    pairs="a2"
    page=$(dirname "$sample")/chrome-trace-dom.page.html
    if command -v chromium > /dev/null 2>&1 && [ -f "$page" ] && bash "$here/traces/record.sh" "$page" "$dir/diff-b.json"; then
        "$trove" import "$dir/diff-b.json" --store "$st" --name b -q
        pairs="a2 b"
    fi
    "$trove" serve --store "$st" --listen 127.0.0.1:0 > "$dir/diff-serve.out" 2> "$dir/diff-serve.err" &
    srv=$!
    for _ in $(seq 1 100); do grep -q "listening on" "$dir/diff-serve.out" 2> /dev/null && break; sleep 0.1; done
    url=$(sed -n 's/.*listening on \(http[^,]*\),.*/\1/p' "$dir/diff-serve.out")
    for b in $pairs; do
        what="the sample against itself"
        [ "$b" = b ] && what="the sample and a new recording of its page"
        n=$("$trove" ls --store "$st" --json | python3 -c 'import json,sys; c = {x["name"]: x["events"] for x in json.load(sys.stdin)}; print(format(c["a"] + c[sys.argv[1]], ","))' "$b")
        echo "| $what | $n | exact | $(median_ms "$trove" diff a "$b" --store "$st") | $(top a "$b" --store "$st") |"
        echo "| $what | $n | --sketch | $(median_ms "$trove" diff a "$b" --store "$st" --sketch) | $(top a "$b" --store "$st" --sketch) |"
        echo "| $what | $n | GET /api/diff (curl) | $(median_ms curl -sf "${url}api/diff?a=a&b=$b") | the CLI's JSON |"
    done
    kill -TERM $srv; wait $srv 2> /dev/null || true
fi
if [ ! -f "$sg/done" ]; then
    rm -rf "$sg"
    "$trove" gen -o - --events "$events" --seed 1 -q | "$trove" import - --store "$sg" --name a -q
    "$trove" gen -o - --events "$events" --seed 1 --slow zone_3=1.3 -q | "$trove" import - --store "$sg" --name b -q
    touch "$sg/done"
fi
n=$((2 * events))
echo "| trove gen, zone_3 1.3 times slower in B | $(commas "$n") | summaries | $(median_ms "$trove" diff a b --store "$sg") | $(top a b --store "$sg") |"
reps=1
echo "| trove gen, zone_3 1.3 times slower in B | $(commas "$n") | --by thread (segments read), once | $(median_ms "$trove" diff a b --store "$sg" --by thread) | |"
