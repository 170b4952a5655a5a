#!/usr/bin/env bash
# cli_export_stream.sh: `trove export --capture NAME`, which streams the capture a row group
# at a time (tools/export_capture.c), writes byte for byte what the in-memory export writes
# of the same events (`trove export store:NAME`, or a replayed range exported as a file):
# over many row groups, in every format (bundle stored and deflated, parquet, dir), every
# encoding and codec, with and without a time range, to a file and to a pipe; its
# temporary file goes to $TMPDIR for a pipe and beside a file, and is gone after; a
# TMPDIR that cannot take it is one error line; and its peak memory stays under what the
# capture's events alone would take (a bound: memory is deterministic enough, time is not
# checked). The service's export (cli_api.sh) runs this same export.
# usage: cli_export_stream.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TROVE=$trove
. "$(dirname "$0")/lib_cli.sh"
need_python3
unset TROVE_STORE

s=$tmp/s
"$trove" gen -o "$tmp/g.wire" --events 250000 --seed 9 --names 3000 --quiet || bad "gen"
"$trove" import "$tmp/g.wire" --name cap --store "$s" --quiet || bad "import"

# same OPTS...: --capture cap and store:cap (the whole capture in memory), the manifest
# named alike, give the same bytes.
same() {
    rm -rf "$tmp/a" "$tmp/b"
    if "$trove" export --capture cap --store "$s" -o "$tmp/a" -q "$@" &&
        "$trove" export store:cap --store "$s" --name cap -o "$tmp/b" -q "$@" &&
        diff -r "$tmp/a" "$tmp/b" > /dev/null; then
        ok
    else
        bad "export --capture $* differs from the in-memory export"
    fi
}
# 250000 events in row groups of 30000: nine row groups, the last one shorter.
for fmt in bundle parquet dir; do
    same --format "$fmt" --row-group 30000
    same --format "$fmt" --row-group 30000 --codec zstd --encoding dict
done
same --zip-deflate --row-group 30000
same --zip-deflate --row-group 25000 --codec gzip --encoding plain
same --encoding plain --row-group 70001
same --row-group 250000
same --row-group 249999
same --row-group 1000 --zip-deflate
same # the default: one row group

# A time range: the same bytes as the replayed range exported from a file.
"$trove" cat "$tmp/g.wire" > "$tmp/g.txt"
a=$(awk 'NR == 40000 { print $1 }' "$tmp/g.txt")
b=$(awk 'NR == 190000 { print $1 }' "$tmp/g.txt")
"$trove" replay cap --store "$s" --from-ns "$a" --to-ns "$b" -o "$tmp/r.wire" -q || bad "replay"
for opts in "" "--zip-deflate" "--format parquet"; do
    # shellcheck disable=SC2086
    "$trove" export --capture cap --store "$s" --from-ns "$a" --to-ns "$b" --row-group 20000 \
        $opts -o "$tmp/ra" -q &&
        "$trove" export "$tmp/r.wire" --name cap --row-group 20000 $opts -o "$tmp/rb" -q &&
        check cmp -s "$tmp/ra" "$tmp/rb"
    rm -f "$tmp/ra" "$tmp/rb"
done

# To a pipe: the bytes of the file; the temporary file goes to $TMPDIR, and is gone after.
mkdir -p "$tmp/spool"
"$trove" export --capture cap --store "$s" --row-group 30000 -o "$tmp/f.bundle" -q || bad "file"
TMPDIR=$tmp/spool "$trove" export --capture cap --store "$s" --row-group 30000 -o - -q \
    | cat > "$tmp/p.bundle"
check cmp -s "$tmp/f.bundle" "$tmp/p.bundle"
TMPDIR=$tmp/spool "$trove" export --capture cap --store "$s" --zip-deflate -o - -q \
    | cat > "$tmp/pd.bundle"
"$trove" export store:cap --store "$s" --name cap --zip-deflate -o "$tmp/fd.bundle" -q
check cmp -s "$tmp/fd.bundle" "$tmp/pd.bundle"
"$trove" export --capture cap --store "$s" --format parquet -o - -q | cat > "$tmp/p.parquet"
"$trove" export store:cap --store "$s" --format parquet -o "$tmp/f.parquet" -q
check cmp -s "$tmp/f.parquet" "$tmp/p.parquet"
check test "$(ls -A "$tmp/spool" | wc -l)" -eq 0
TMPDIR=$tmp/nosuch expect_error export export --capture cap --store "$s" -o - -q
check grep -q "temporary file in $tmp/nosuch" "$tmp/e.err"
# Beside a file: nothing is left there but the bundle.
mkdir -p "$tmp/outdir"
TMPDIR=$tmp/nosuch "$trove" export --capture cap --store "$s" -o "$tmp/outdir/x.bundle" -q ||
    bad "a file export needs no TMPDIR"
check test "$(ls -A "$tmp/outdir")" = "x.bundle"
check cmp -s "$tmp/outdir/x.bundle" "$tmp/b" # the default export of same above

# A capture in row groups of 64 Ki events is exported in far less memory than its events
# take (3 M events, 96 MB; the in-memory export peaks near twice that). Not under ASan or
# TSan, whose shadow memory (and ASan's quarantine) make RSS say little.
if ldd "$trove" 2> /dev/null | grep -q 'libasan\|libtsan'; then
    echo "peak memory check skipped under a sanitizer"
else
    "$trove" gen -o "$tmp/big.wire" --events 3M --seed 3 --quiet || bad "gen big"
    "$trove" import "$tmp/big.wire" --name big --store "$s" --quiet || bad "import big"
    rm -f "$tmp/big.wire"
    for opts in "" "--zip-deflate" "--format parquet"; do
        # shellcheck disable=SC2086
        kb=$(python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' \
            "$trove" export --capture big --store "$s" --row-group 65536 $opts \
            -o "$tmp/big.out" -q) || bad "export big $opts"
        if [ "${kb:-999999}" -lt 65536 ]; then ok; else bad "export --capture big $opts: peak RSS $kb KB"; fi
        rm -f "$tmp/big.out"
    done
fi
finish
