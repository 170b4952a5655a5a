#!/usr/bin/env bash
# s3_bench.sh: the store on S3 against the store on disk, side by side in one run, on the
# Swift + s3api server of tests/s3/up.sh (started and stopped here):
#   1. import of a trace into a fresh store on disk and into a fresh s3:// prefix, ROUNDS
#      times each, alternating; the medians and their ratio (target: S3 <= 2 x disk);
#   2. the S3 requests of a commit (TROVE_S3_STATS): a 1,000-slot volume written whole
#      (1,000 new 4 KiB blocks), then 10 of its slots changed, then a capture import;
#   3. `trove bench stream --store s3://...`: serial, prefetch and prefetch+sender replays
#      with 20 ms added to every object read (target: prefetch >= 3 x serial, peak held
#      <= budget).
# usage: bench/s3_bench.sh TROVE TRACE [ROUNDS]
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
trace=$2
rounds=${3:-5}
src=$(cd "$(dirname "$0")/.." && pwd)
up_out=$("$src/tests/s3/up.sh") || { echo "s3_bench: tests/s3/up.sh failed (make deps installs Swift)" >&2; exit 1; }
eval "$up_out"
tmp=$(mktemp -d)
trap '"$src/tests/s3/down.sh" "$TROVE_S3_DIR"; rm -rf "$tmp"' EXIT
export TROVE_S3_STATS=1

# now: seconds since the epoch, to the microsecond.
now() { date +%s.%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "## import of $(basename "$trace"): disk against S3 (Swift on loopback), $rounds rounds each"
: > "$tmp/fs.t"
: > "$tmp/s3.t"
for r in $(seq 1 "$rounds"); do
    a=$(now)
    "$trove" import "$trace" --name cap --store "$tmp/fs$r" -q 2> /dev/null || exit 1
    b=$(now)
    "$trove" import "$trace" --name cap --store "s3://bench/import$r" -q 2> "$tmp/s3.err" || { cat "$tmp/s3.err"; exit 1; }
    c=$(now)
    echo "$b - $a" | bc -l >> "$tmp/fs.t"
    echo "$c - $b" | bc -l >> "$tmp/s3.t"
done
req_import=$(sed -n 's/.*: \([0-9]*\) requests.*/\1/p' "$tmp/s3.err" | tail -1)
fs_med=$(median < "$tmp/fs.t")
s3_med=$(median < "$tmp/s3.t")
echo
echo "| store | median s | vs disk |"
echo "|---|---:|---:|"
printf '| disk | %.3f | 1.00x |\n' "$fs_med"
printf '| s3 | %.3f | %.2fx |\n' "$s3_med" "$(echo "$s3_med / $fs_med" | bc -l)"
echo
echo "S3 requests of one import (open, lease, objects, head, close): $req_import"

echo
echo "## S3 requests of a commit"
head -c 4096000 /dev/urandom > "$tmp/blocks"
head -c 40960 /dev/urandom > "$tmp/ten"
S=s3://bench/commits
"$trove" volume put v "$tmp/blocks" --block-size 4K --store "$S" -q 2> "$tmp/a.err" || { cat "$tmp/a.err"; exit 1; }
"$trove" volume write v "$tmp/ten" --offset 400K --store "$S" -q 2> "$tmp/b.err" || { cat "$tmp/b.err"; exit 1; }
"$trove" volume ls --store "$S" > /dev/null 2> "$tmp/c.err"
req() { sed -n 's/.*: \([0-9]*\) requests.*/\1/p' "$1" | tail -1; }
base=$(req "$tmp/c.err")
echo
echo "| what | requests | of them: opening and listing (a read-only volume ls) |"
echo "|---|---:|---:|"
echo "| volume put: 1,000 new 4 KiB blocks, one commit | $(req "$tmp/a.err") | $base |"
echo "| volume write: 10 of those slots changed, one commit | $(req "$tmp/b.err") | $base |"
echo
echo "(a writable open also takes and gives back the lease: a GET, a PUT and a GET to take"
echo "it, a GET and a DELETE to give it back)"

echo
echo "## bench stream from S3, 20 ms added to every object read"
echo
TROVE_S3_STATS= "$trove" bench stream --store s3://bench/stream --rounds "$rounds"
