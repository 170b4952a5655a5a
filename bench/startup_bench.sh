#!/usr/bin/env bash
# startup_bench.sh: what a short command costs before it does anything — `trove --help` and
# `trove cat` of a 1,000-event file, each against /bin/true (and against another trove
# binary, OTHER, when given), timed side by side.
#
#   bash bench/startup_bench.sh TROVE [OTHER] [ROUNDS]
#
# A round runs each command RUNS times in a row (RUNS=200), the commands in turn, and takes
# each one's microseconds a run; the ratio of a round is taken within it, so a machine that
# slows down between rounds moves both. Prints the median over ROUNDS (default 9) of each
# command's time and of each ratio, and the shared libraries each binary loads at start.
set -u
TROVE=${1:?usage: startup_bench.sh TROVE [OTHER] [ROUNDS]}
OTHER=${2:-}
ROUNDS=${3:-9}
RUNS=${RUNS:-200}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$TROVE" gen --events 1000 -o "$tmp/small.wire" -q || exit 1

# us_per_run CMD...: microseconds a run of CMD, over RUNS runs.
us_per_run() {
    local s e
    s=$(date +%s%N)
    for ((i = 0; i < RUNS; i++)); do "$@" >/dev/null 2>&1; done
    e=$(date +%s%N)
    echo $(((e - s) / RUNS / 1000))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f\n", a / b}'; }

for what in help cat; do
    : >"$tmp/$what.true"; : >"$tmp/$what.trove"; : >"$tmp/$what.other"
    : >"$tmp/$what.r_true"; : >"$tmp/$what.r_other"
done
for ((r = 0; r < ROUNDS; r++)); do
    for what in help cat; do
        if [ $what = help ]; then args=(--help); else args=(cat "$tmp/small.wire"); fi
        t=$(us_per_run /bin/true)
        a=$(us_per_run "$TROVE" "${args[@]}")
        echo "$t" >>"$tmp/$what.true"
        echo "$a" >>"$tmp/$what.trove"
        ratio "$a" "$t" >>"$tmp/$what.r_true"
        if [ -n "$OTHER" ]; then
            o=$(us_per_run "$OTHER" "${args[@]}")
            echo "$o" >>"$tmp/$what.other"
            ratio "$a" "$o" >>"$tmp/$what.r_other"
        fi
    done
done

echo "start-up: medians of $ROUNDS rounds of $RUNS runs each (microseconds a run)"
printf "%-28s %10s %10s %12s" "command" "trove" "/bin/true" "vs /bin/true"
[ -n "$OTHER" ] && printf " %10s %10s" "other" "vs other"
echo
for what in help cat; do
    if [ $what = help ]; then label="trove --help"; else label="trove cat (1,000 events)"; fi
    printf "%-28s %10s %10s %12s" "$label" "$(median <"$tmp/$what.trove")" \
        "$(median <"$tmp/$what.true")" "$(median <"$tmp/$what.r_true")"
    [ -n "$OTHER" ] && printf " %10s %10s" "$(median <"$tmp/$what.other")" \
        "$(median <"$tmp/$what.r_other")"
    echo
done
echo "shared libraries loaded at start: trove $(ldd "$TROVE" | grep -c '=>')$( [ -n "$OTHER" ] &&
    echo ", other $(ldd "$OTHER" | grep -c '=>')")"
