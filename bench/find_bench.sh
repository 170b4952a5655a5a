#!/usr/bin/env bash
# find_bench.sh: the viewer's find and measure (bench/find_bench.mjs) on the sample Chrome
# trace and on a 10 M-event `trove gen` capture, imported into a fresh store, served by
# `trove serve` on loopback, opened in headless chromium: a search step (Enter) and the name
# panel's opening, medians of repeated runs (docs/BENCHMARKS.md, "Finding in the viewer").
# usage: find_bench.sh TROVE DIR SAMPLE_JSON [EVENTS]   (default events: 10000000)
set -eu
trove=$1
dir=$2
sample=$3
n=${4:-10000000}
here=$(cd "$(dirname "$0")" && pwd)
store=$dir/find-store
rm -rf "$store"
mkdir -p "$dir"
"$trove" import "$sample" --store "$store" --name dom -q
[ -f "$dir/gen-$n.packed" ] || "$trove" gen -o "$dir/gen-$n.packed" --events "$n" -q
"$trove" import "$dir/gen-$n.packed" --store "$store" --name "gen-$n" -q
: > "$dir/find-serve.out"
"$trove" serve --store "$store" --listen 127.0.0.1:0 > "$dir/find-serve.out" 2> "$dir/find-serve.err" &
srv=$!
trap 'kill -TERM $srv 2> /dev/null; wait $srv 2> /dev/null' EXIT
for _ in $(seq 1 100); do
    grep -q "listening on" "$dir/find-serve.out" 2> /dev/null && break
    sleep 0.1
done
url=$(sed -n 's/.*listening on \(http[^,]*\),.*/\1/p' "$dir/find-serve.out")
# the sample: "RunTask" (two names, 45 k events); gen: "zone_32" (the names that contain it)
node "$here/find_bench.mjs" "$url" dom:RunTask "gen-$n:zone_32"
