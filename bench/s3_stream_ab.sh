#!/usr/bin/env bash
# s3_stream_ab.sh: two trove binaries side by side, alternating, on `trove bench stream
# --store s3://...` against the Swift + s3api server of tests/s3/up.sh (started and
# stopped here): for judging a change to the S3 backend or the prefetcher on a machine
# whose load comes and goes, since each pair of runs sees about the same load.
# usage: bench/s3_stream_ab.sh TROVE_A TROVE_B [PAIRS]
set -u
a=$1 b=$2 pairs=${3:-3}
src=$(cd "$(dirname "$0")/.." && pwd)
up_out=$("$src/tests/s3/up.sh") || { echo "s3_stream_ab: tests/s3/up.sh failed" >&2; exit 1; }
eval "$up_out"
trap '"$src/tests/s3/down.sh" "$TROVE_S3_DIR"' EXIT
echo "| binary | serial s | prefetch s | prefetch vs serial |"
echo "|---|---:|---:|---:|"
for i in $(seq 1 "$pairs"); do
    for side in A B; do
        t=$a; [ "$side" = B ] && t=$b
        out=$("$t" bench stream --store "s3://abtest/$side$i" --rounds 3 --json) ||
            { echo "s3_stream_ab: $t bench stream failed" >&2; exit 1; }
        printf '%s\n' "$out" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
print("| %s | %.3f | %.3f | %.2fx |" % (sys.argv[1], d["serial_s"], d["prefetch_s"],
                                        d["serial_s"] / d["prefetch_s"]))' "$side"
    done
done
