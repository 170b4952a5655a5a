#!/usr/bin/env bash
# stream_bench.sh: the peak RSS of writing a large capture, each process measured by
# /usr/bin/time ("%M" KB, and "%e" s): `trove gen --events N | trove import - --name big`
# (both ends of the pipe), `trove export --capture big` as a bundle, and `trove store copy`
# of the store. Memory must not grow with N (tests/cli/cli_stream_rss.sh holds it under a
# bound at two small sizes); this runs it at the size the benchmark is about.
# usage: stream_bench.sh TROVE [EVENTS]   (default 200M; the store goes to $TMPDIR)
set -u
t=$1
events=${2:-200M}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stream_bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
[ -x /usr/bin/time ] || { echo "stream_bench: /usr/bin/time is needed (Debian: time)"; exit 1; }

row() { # row WHAT FILE
    local kb s
    read -r kb s < "$2"
    printf '%-40s %14.1f %10s\n' "$1" "$(awk -v k="$kb" 'BEGIN {print k / 1024}')" "$s"
}
printf '%-40s %14s %10s\n' "command ($events events)" "peak RSS (MB)" "time (s)"
/usr/bin/time -f "%M %e" -o "$tmp/gen" "$t" gen --events "$events" -q |
    /usr/bin/time -f "%M %e" -o "$tmp/import" "$t" import - --name big --store "$tmp/s" -q ||
    exit 1
row "trove gen --events $events |" "$tmp/gen"
row "  trove import - --name big" "$tmp/import"
/usr/bin/time -f "%M %e" -o "$tmp/export" "$t" export --capture big --store "$tmp/s" \
    -o "$tmp/big.bundle" -q || exit 1
row "trove export --capture big" "$tmp/export"
rm -f "$tmp/big.bundle"
/usr/bin/time -f "%M %e" -o "$tmp/copy" "$t" store copy "$tmp/s" "$tmp/s2" -q > /dev/null ||
    exit 1
row "trove store copy" "$tmp/copy"
du -sh "$tmp/s" | awk '{print "store: " $1}'
