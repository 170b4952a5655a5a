#!/usr/bin/env bash
# frames_bench.sh: the viewer's frame times (bench/frames_bench.mjs) in headless chromium:
# zooming the sample Chrome trace and a `trove gen` capture of EVENTS events (default 10 M),
# both stored and paged as a user opens them, and following a live capture of `trove gen
# --live` at RATE events/s (default 1 M), decoded on the worker and on the main thread.
# Prints one markdown table (docs/BENCHMARKS.md, "Does the viewer keep its frames?").
# Not part of make check; make bench runs it.
# usage: frames_bench.sh TROVE DIR [SAMPLE_TRACE.json] [EVENTS] [RATE]
set -eu
trove=$1
dir=$2
trace=${3:-}
events=${4:-10000000}
rate=${5:-1000000}
here=$(cd "$(dirname "$0")" && pwd)
store=$dir/frames-store
rm -rf "$store"
mkdir -p "$dir"
names=()
if [ -n "$trace" ] && [ -f "$trace" ]; then
    "$trove" import "$trace" --store "$store" --name trace -q 2> /dev/null
    names+=(trace)
fi
[ -f "$dir/gen-$events.packed" ] || "$trove" gen -o "$dir/gen-$events.packed" --events "$events" -q
"$trove" import "$dir/gen-$events.packed" --store "$store" --name "gen-$events" -q
names+=("gen-$events")
"$trove" serve --store "$store" --listen 127.0.0.1:0 > "$dir/frames-serve.out" 2> "$dir/frames-serve.err" &
srv=$!
trap 'kill -TERM $srv 2> /dev/null; wait $srv 2> /dev/null' EXIT
for _ in $(seq 1 100); do
    grep -q "listening on" "$dir/frames-serve.out" 2> /dev/null && break
    sleep 0.1
done
url=$(sed -n 's/.*listening on \(http[^,]*\),.*/\1/p' "$dir/frames-serve.out")
node "$here/frames_bench.mjs" "$url" "$trove" "$store/trove.sock" "${names[@]}" --live "$rate"
