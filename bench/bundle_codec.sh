#!/usr/bin/env bash
# bundle_codec.sh: the bundle's Parquet tables by codec against DuckDB writing the same rows
# with ZSTD (docs/BENCHMARKS.md, "The bundle's codec"). Each capture (the sample Chrome trace,
# and `trove gen` events with attributes) is exported as a directory with --codec none and
# --codec zstd; DuckDB (tools/duckdb/duckdb_tool.mjs copy) rewrites each uncompressed table
# with --compression zstd; the table prints every file's bytes and trove's ZSTD over DuckDB's.
# usage: bundle_codec.sh TROVE SOURCE_DIR [SAMPLE.json.zst] [GEN_EVENTS]
set -eu
trove=$1
src=$2
sample=${3:-}
gen=${4:-1M}
tool=$src/tools/duckdb/duckdb_tool.mjs
[ -d "$src/tools/duckdb/node_modules" ] || { echo "bundle_codec: make deps-npm first" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
s=$tmp/s

"$trove" gen -o "$tmp/gen.wire" --events "$gen" --seed 3 --attrs -q
"$trove" import "$tmp/gen.wire" --store "$s" --name gen -q
caps=gen
if [ -n "$sample" ] && [ -f "$sample" ]; then
    zstd -dqc "$sample" > "$tmp/sample.json"
    "$trove" import "$tmp/sample.json" --store "$s" --name sample -q
    caps="sample gen"
fi
printf '%-8s %-8s %12s %12s %12s %8s\n' capture table none zstd duckdb_zstd ratio
for c in $caps; do
    for codec in none zstd; do
        "$trove" export --capture "$c" --store "$s" --format dir --codec "$codec" -o "$tmp/$c.$codec" -q
    done
    for f in "$tmp/$c.none"/*.parquet; do
        t=$(basename "$f" .parquet)
        node "$tool" copy "$f" "$tmp/duck.parquet" --compression zstd > /dev/null
        none=$(stat -c %s "$f")
        z=$(stat -c %s "$tmp/$c.zstd/$t.parquet")
        d=$(stat -c %s "$tmp/duck.parquet")
        awk -v c="$c" -v t="$t" -v n="$none" -v z="$z" -v d="$d" \
            'BEGIN { printf "%-8s %-8s %12d %12d %12d %8.3f\n", c, t, n, z, d, z / d }'
    done
done
