#!/usr/bin/env bash
# viewer_bench.sh: the viewer's benchmark (bench/viewer_bench.mjs) on captures made by
# `trove gen`: 1 M events (all in view at once) and 10 M (zoom and pan), imported into a
# fresh store, served by `trove serve` on loopback, opened in headless chromium.
# usage: viewer_bench.sh TROVE DIR [EVENTS...]   (default events: 1000000 10000000)
set -eu
trove=$1
dir=$2
shift 2
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 10000000)
here=$(cd "$(dirname "$0")" && pwd)
store=$dir/viewer-store
rm -rf "$store"
mkdir -p "$dir"
names=()
for n in "${sizes[@]}"; do
    [ -f "$dir/gen-$n.packed" ] || "$trove" gen -o "$dir/gen-$n.packed" --events "$n" -q
    "$trove" import "$dir/gen-$n.packed" --store "$store" --name "gen-$n" -q
    names+=("gen-$n")
done
"$trove" serve --store "$store" --listen 127.0.0.1:0 > "$dir/viewer-serve.out" 2> "$dir/viewer-serve.err" &
srv=$!
trap 'kill -TERM $srv 2> /dev/null; wait $srv 2> /dev/null' EXIT
for _ in $(seq 1 100); do
    grep -q "listening on" "$dir/viewer-serve.out" 2> /dev/null && break
    sleep 0.1
done
url=$(sed -n 's/.*listening on \(http[^,]*\),.*/\1/p' "$dir/viewer-serve.out")
# the decoders alone: the first capture in each wire
wires=""
for w in raw packed deflate; do
    [ -f "$dir/gen-${sizes[0]}.$w" ] || "$trove" gen -o "$dir/gen-${sizes[0]}.$w" --events "${sizes[0]}" --wire $w -q
    wires="$wires $dir/gen-${sizes[0]}.$w"
done
WIRE_FILES=$wires node "$here/viewer_bench.mjs" "$url" "${names[@]}"
