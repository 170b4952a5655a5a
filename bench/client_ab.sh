#!/usr/bin/env bash
# client_ab.sh: a zone's cost in libtrove-client at two revisions, side by side: each
# revision's library built (Release) in a scratch work tree, bench/ab/client_ab.c linked against
# each, and PAIRS pairs of runs alternating A and B in both settings ("ring": the hot path
# alone; "drain": a reader draining the socket), each run the median of 7 rounds of 1 M
# zones. For judging a change to the library's hot path or flush thread on a machine whose
# load comes and goes: each pair sees about the same load.
# usage: bench/client_ab.sh REV_A [REV_B (default: the work tree)] [PAIRS (default 3)]
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
a=$1 b=${2:-} pairs=${3:-3}
tmp=$(mktemp -d)
trap 'git -C "$src" worktree remove --force "$tmp/a" > /dev/null 2>&1 || true; [ -n "$b" ] && git -C "$src" worktree remove --force "$tmp/b" > /dev/null 2>&1; rm -rf "$tmp"' EXIT
build() { # build DIR: its libtrove-client.a
    cmake -S "$1" -B "$1/build" -DCMAKE_BUILD_TYPE=Release > /dev/null
    cmake --build "$1/build" --target trove_client -j2 > /dev/null
}
git -C "$src" worktree add -q --detach "$tmp/a" "$a"
build "$tmp/a"
side_b=$src
if [ -n "$b" ]; then
    git -C "$src" worktree add -q --detach "$tmp/b" "$b"
    side_b=$tmp/b
fi
[ -f "$side_b/build/libtrove-client.a" ] || build "$side_b"
for s in a b; do
    d=$tmp/a; [ "$s" = b ] && d=$side_b
    cc -O2 -I"$d/include" "$src/bench/ab/client_ab.c" "$d/build/libtrove-client.a" -lpthread -o "$tmp/ab_$s"
done
echo "| pair | ring A | ring B | drain A | drain B |"
echo "|---:|---:|---:|---:|---:|"
for i in $(seq 1 "$pairs"); do
    ra=$("$tmp/ab_a" ring) rb=$("$tmp/ab_b" ring) da=$("$tmp/ab_a" drain) db=$("$tmp/ab_b" drain)
    echo "| $i | $ra | $rb | $da | $db |"
done
