#!/usr/bin/env bash
# seeds_import.sh: writes the seed corpus of fuzz_import (fuzz/fuzz_import.c): small bodies
# of every kind POST /api/captures/import takes, made by the trove binary from one synthetic
# capture of 40 events (trove gen), plus a few written by hand; each file is a mode byte
# (0: a new capture, 1: an append) and the body. Run from the tree's top after a build:
#
#     bash fuzz/seeds_import.sh build/trove
#
# It writes only the files it names (seed-*.bin); regression inputs found by the fuzzer sit
# beside them under names of their own.
set -eu
trove=$1
out=fuzz/corpus/fuzz_import
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

seed() { # seed NAME MODE FILE
    { printf "\\x0$2"; cat "$3"; } > "$out/seed-$1.bin"
}
text() { # text NAME MODE STRING
    printf '%s' "$3" > "$tmp/t"
    seed "$1" "$2" "$tmp/t"
}

"$trove" gen -o "$tmp/g.wire" --events 40 --names 5 --processes 1 --threads 2 -q
"$trove" gen -o "$tmp/d.wire" --events 40 --names 5 --processes 1 --threads 2 --wire deflate -q
"$trove" gen -o "$tmp/r.wire" --events 8 --names 3 --processes 1 --threads 1 --wire raw -q
"$trove" export "$tmp/g.wire" -o "$tmp/g.bundle" -q
"$trove" export "$tmp/g.wire" -o "$tmp/z.bundle" --zip-deflate --codec zstd -q
"$trove" export "$tmp/g.wire" -o "$tmp/g.parquet" --format parquet -q
"$trove" export "$tmp/g.wire" -o "$tmp/g.json" --format chrome-json -q
"$trove" export "$tmp/g.wire" -o "$tmp/g.pftrace" --format perfetto -q
gzip -9c "$tmp/g.json" > "$tmp/g.json.gz"
zstd -19 -qc "$tmp/g.json" > "$tmp/g.json.zst"
zstd -19 -qc "$tmp/g.wire" > "$tmp/g.wire.zst"

seed wire-packed 0 "$tmp/g.wire"
seed wire-deflate 0 "$tmp/d.wire"
seed wire-raw 0 "$tmp/r.wire"
seed wire-append 1 "$tmp/g.wire"
seed bundle 0 "$tmp/g.bundle"
seed bundle-deflate-zstd 0 "$tmp/z.bundle"
seed parquet 0 "$tmp/g.parquet"
seed chrome-json 0 "$tmp/g.json"
seed chrome-json-append 1 "$tmp/g.json"
seed chrome-json-gzip 0 "$tmp/g.json.gz"
seed chrome-json-zstd 0 "$tmp/g.json.zst"
seed wire-zstd 0 "$tmp/g.wire.zst"
seed perfetto 0 "$tmp/g.pftrace"
text chrome-array 0 '[{"ph":"X","name":"a","pid":1,"tid":2,"ts":1,"dur":2},{"ph":"i","name":"b","pid":1,"tid":2,"ts":4,"s":"g"}]'
text chrome-begin-end 0 '[{"ph":"B","name":"a","pid":1,"tid":1,"ts":1},{"ph":"E","pid":1,"tid":1,"ts":3},{"ph":"E","pid":1,"tid":1,"ts":4}]'
text chrome-flows 0 '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":5},{"ph":"s","id":7,"name":"f","pid":1,"tid":1,"ts":2},{"ph":"f","bp":"e","id":7,"name":"f","pid":1,"tid":2,"ts":9}]}'
text chrome-counter-append 1 '[{"ph":"C","name":"mem","pid":1,"ts":5,"args":{"v":3}},{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}}]'
text chrome-unsorted 0 '[{"ph":"X","name":"a","pid":1,"tid":1,"ts":9,"dur":1},{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1}]'
text chrome-bom-space 0 $'\xef\xbb\xbf  \n[]'
text empty 0 ''
text not-a-trace 0 'hello, service'
text wire-magic-only 0 'TV'
text zip-magic-only 0 $'PK\x03\x04'
text parquet-magic-only 0 'PAR1'
head -c 100 "$tmp/g.wire" > "$tmp/cut"
seed wire-cut 0 "$tmp/cut"
head -c 200 "$tmp/g.json.zst" > "$tmp/cut"
seed zstd-cut 0 "$tmp/cut"
