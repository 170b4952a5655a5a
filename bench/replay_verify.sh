#!/usr/bin/env bash
# replay_verify.sh: what verified reads cost a replay of a real trace. Imports the trace into
# a fresh store, then times `trove replay NAME -o /dev/null` with every object checked against
# its name (the default) and with --no-verify, side by side: ROUNDS rounds, alternating which
# goes first, each a batch of REPS replays of each (one replay of the sample takes a few ms,
# under the resolution of a single timing). Prints the median ms per replay of each and the
# ratio verified / not.
#   bash bench/replay_verify.sh TROVE TRACE [ROUNDS] [REPS]
set -euo pipefail
trove=${1:?usage: replay_verify.sh TROVE TRACE [ROUNDS] [REPS]}
trace=${2:?usage: replay_verify.sh TROVE TRACE [ROUNDS] [REPS]}
rounds=${3:-7}
reps=${4:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$trove" import "$trace" --name trace --store "$tmp/st" --quiet
batch() { # batch FLAGS...: ms per replay over $reps replays
    local t0 t1
    t0=$(date +%s%N)
    for ((i = 0; i < reps; i++)); do
        "$trove" replay trace --store "$tmp/st" -o /dev/null --quiet "$@"
    done
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" -v n="$reps" 'BEGIN {printf "%.3f\n", (b - a) / 1e6 / n}'
}
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
: > "$tmp/on"
: > "$tmp/off"
batch > /dev/null # warm the page cache
for ((r = 0; r < rounds; r++)); do
    if ((r % 2 == 0)); then
        batch >> "$tmp/on"
        batch --no-verify >> "$tmp/off"
    else
        batch --no-verify >> "$tmp/off"
        batch >> "$tmp/on"
    fi
done
on=$(median < "$tmp/on")
off=$(median < "$tmp/off")
echo "replay of $(basename "$trace"): medians of $rounds rounds of $reps replays each"
echo "  verified     $on ms per replay"
echo "  --no-verify  $off ms per replay"
echo "  verified / not = $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a / b}')"
