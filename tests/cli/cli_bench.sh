#!/bin/bash
# cli_bench.sh: end-to-end test of `trove bench wire`, and of `trove gen` feeding it; and of
# `trove bench serve`'s CPU by thread.
#
#   bash tests/cli/cli_bench.sh <trove-binary> <source-dir> <shared-data-dir>
#
# Checks the --json object (exactly the documented keys, in order, with sane values), that
# the same events give the same sizes whether generated in the bench or read back from a
# `trove gen` file, the human table, gen's determinism and atomic output, gen --slow, and
# one-line errors with a non-zero exit. No timing is asserted: only sizes and correctness.
# The benchmark peers (lz4, xz, brotli) are in the table only when trove was configured with
# -DTROVE_BENCH_PEERS=ON; ctest says which in $TROVE_TEST_BENCH_PEERS (1 or 0), and without
# them trove must not even load their libraries.
# Prints "N passed, N failed"; exits 1 if anything failed, 77 (skip) without python3.
set -u
PEERS=${TROVE_TEST_BENCH_PEERS:-1}

TROVE=${1:?usage: cli_bench.sh <trove-binary> <source-dir> <shared-data-dir>}
DATA=${3:-}
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3

# Validate a bench --json object: validate_json FILE EVENTS BATCHES
validate_json() {
    python3 - "$1" "$2" "$3" "$PEERS" <<'EOF'
import json, math, sys
path, events, batches, peers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
text = open(path).read()
errors = []
try:
    d = json.loads(text)
except ValueError as e:
    print("not JSON: %s: %r" % (e, text[:200])); sys.exit(1)
if text.count("\n") != 1 or not text.endswith("}\n"):
    errors.append("stdout is not exactly one JSON line")
if list(d) != ["events", "batches", "peers", "formats"]:
    errors.append("top-level keys %r" % list(d))
if d.get("peers") is not peers:
    errors.append("peers %r, want %r" % (d.get("peers"), peers))
if d.get("events") != events:
    errors.append("events %r, want %d" % (d.get("events"), events))
if d.get("batches") != batches:
    errors.append("batches %r, want %d" % (d.get("batches"), batches))
want = ["raw", "packed", "packed_deflate", "columnar", "columnar_deflate", "columnar_zstd1", "model",
        "protobuf_varint",
        "zlib6_message",
        "zlib6_stream", "zstd1", "zstd3", "zstd19", "zstd19_long_stream"] + \
       (["lz4", "xz9", "xz9_stream", "xz9e_stream", "brotli11"] if peers else [])
f = d.get("formats", {})
if list(f) != want:
    errors.append("format keys %r" % list(f))
for k in want:
    v = f.get(k)
    if not isinstance(v, dict) or list(v) != ["bytes_per_event", "encode_us", "decode_us"]:
        errors.append("%s: keys %r" % (k, v and list(v)))
        continue
    for m in ("bytes_per_event", "encode_us", "decode_us"):
        x = v[m]
        if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x) or x <= 0:
            errors.append("%s.%s = %r is not a positive number" % (k, m, x))
if not errors:
    bpe = {k: f[k]["bytes_per_event"] for k in want}
    # raw is the 32-byte record plus a 16-byte header per frame (batch): 32.0078 at the
    # default batch of 2048.
    raw = 32 + 16 * batches / events
    if abs(bpe["raw"] - raw) > 1e-4:
        errors.append("raw bytes/event %r, want 32 + headers = %.4f" % (bpe["raw"], raw))
    if not bpe["packed"] < bpe["raw"]:
        errors.append("packed %r not smaller than raw" % bpe["packed"])
    if not bpe["packed_deflate"] < bpe["packed"]:
        errors.append("packed_deflate %r not smaller than packed" % bpe["packed_deflate"])
    if not bpe["columnar"] < bpe["packed"]:
        errors.append("columnar %r not smaller than packed" % bpe["columnar"])
    if not bpe["packed"] < bpe["protobuf_varint"] < bpe["raw"]:
        errors.append("protobuf_varint %r not between packed and raw" % bpe["protobuf_varint"])
    for k in want[5:]:
        if not bpe[k] < 32.0:
            errors.append("%s %r does not compress the raw records" % (k, bpe[k]))
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
EOF
}

# 1. The JSON object on generated data.
if section json_object_on; then
"$TROVE" bench wire --events 20000 --json >"$tmp/gen.json" 2>"$tmp/gen.err"
check [ $? -eq 0 ]
check validate_json "$tmp/gen.json" 20000 10
check [ ! -s "$tmp/gen.err" ]
fi

# 2. trove gen writes the same events to a file (atomically) and the bench reads them back:
#    the same sizes as when the bench generated them itself.
if section trove_gen_writes; then
"$TROVE" gen -o "$tmp/g.trove" --events 20000 --to deflate --quiet
check [ $? -eq 0 ]
check [ -s "$tmp/g.trove" ]
check [ ! -e "$tmp/g.trove.tmp" ]
"$TROVE" bench wire --input "$tmp/g.trove" --input-format raw --repeat 1 --json >"$tmp/file.json"
check [ $? -eq 0 ]
check validate_json "$tmp/file.json" 20000 10
check python3 -c '
import json, sys
a, b = (json.load(open(p))["formats"] for p in sys.argv[1:3])
sys.exit(any(a[k]["bytes_per_event"] != b[k]["bytes_per_event"] for k in a))' \
    "$tmp/gen.json" "$tmp/file.json"
fi

# 3. --events with --input takes a prefix; --batch changes the batch count.
if section events_with_input; then
"$TROVE" bench wire --input "$tmp/g.trove" --events 5000 --batch 1000 --repeat 1 --json >"$tmp/p.json"
check [ $? -eq 0 ]
check validate_json "$tmp/p.json" 5000 5
fi

# 3b. --common keeps the zones (thread and nestable async), instants and counters: of a gen
#     capture (frames, locks, zones, instants, counters) exactly those, by a count outside
if section common_content; then
"$TROVE" bench wire --input "$tmp/g.trove" --common --repeat 1 --json >"$tmp/c.json" 2>"$tmp/c.err"
check [ $? -eq 0 ]
"$TROVE" cat "$tmp/g.trove" --json -q >"$tmp/g.jsonl"
keep=$(python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    n += (e["kind"] == "zone" and e["extra"] in (0, 1)) or e["kind"] in ("instant", "counter")
print(n)' "$tmp/g.jsonl")
check [ "$keep" -gt 1000 ] && check [ "$keep" -lt 20000 ]
check validate_json "$tmp/c.json" "$keep" $(( (keep + 2047) / 2048 ))
"$TROVE" bench wire --input "$tmp/g.trove" --common --repeat 1 >"$tmp/c.txt"
check grep -q "common content: $keep of 20000 events" "$tmp/c.txt"
fi

# 4. gen is deterministic; the seed matters; stdout works when it is not a terminal.
if section gen_is_deterministic; then
"$TROVE" gen --events 20000 --to deflate -q >"$tmp/g2.trove"
check [ $? -eq 0 ]
check cmp -s "$tmp/g.trove" "$tmp/g2.trove"
"$TROVE" gen --events 20000 --seed 2 --to deflate -q -o "$tmp/g3.trove"
check [ $? -eq 0 ]
check [ -s "$tmp/g3.trove" ]
differ() { ! cmp -s "$1" "$2"; }
check differ "$tmp/g.trove" "$tmp/g3.trove"
"$TROVE" gen --events 3000 --processes 2 --threads 3 --names 100 --zipf 1.5 --to raw --batch 500 \
    -q -o "$tmp/raw.trove"
check [ $? -eq 0 ]
# 3000 raw events in 6 frames of 16 + 500*32 bytes, after one names frame.
check python3 -c '
import os, struct, sys
b = open(sys.argv[1], "rb").read()
off, frames = 0, []
while off < len(b):
    magic, fmt, ver, count, payload, raw = struct.unpack_from("<2sBBIII", b, off)
    assert magic == b"TV", magic
    frames.append((fmt, count)); off += 16 + payload
assert off == len(b)
assert frames[0][0] == 4, frames
assert frames[1:] == [(1, 500)] * 6, frames' "$tmp/raw.trove"
fi

# 4b. gen --slow: factor 1 is the same bytes as without it; zone_1=1.3 keeps every thread's
#     events (kind, depth, extra, name) in order and makes zone_1 about 30 % longer (the two
#     runs cut at 20,000 events in time, so not exactly the same zones); bad names and
#     factors are usage errors (exit 2, one line).
if section gen_slow; then
"$TROVE" gen --events 20000 --wire raw -q -o "$tmp/s0.trove"
check [ $? -eq 0 ]
"$TROVE" gen --events 20000 --wire raw --slow zone_1=1 --slow zone_4=1.0 -q -o "$tmp/s1.trove"
check cmp -s "$tmp/s0.trove" "$tmp/s1.trove"
"$TROVE" gen --events 20000 --wire raw --slow zone_1=1.3 -v -o "$tmp/s2.trove" 2>"$tmp/s2.err"
check [ $? -eq 0 ]
check grep -q "slow zone_1 x 1.3$" "$tmp/s2.err"
check python3 -c '
import struct, sys
def events(path):
    b = open(path, "rb").read()
    off, ev = 0, []
    while off < len(b):
        magic, fmt, ver, count, payload, raw = struct.unpack_from("<2sBBIII", b, off)
        assert magic == b"TV", magic
        if fmt == 1:
            ev += struct.iter_unpack("<QQIIBBBBI", b[off + 16:off + 16 + payload])
        off += 16 + payload
    return ev
a, b = events(sys.argv[1]), events(sys.argv[2])
assert len(a) == len(b) == 20000, (len(a), len(b))
def threads(ev):
    t = {}
    for e in ev:
        t.setdefault(e[3], []).append(e[4:9])
    return t
ta, tb = threads(a), threads(b)
assert set(ta) == set(tb)
for tid in ta:
    n = min(len(ta[tid]), len(tb[tid]))
    assert ta[tid][:n] == tb[tid][:n], tid
def mean(ev):
    d = [e[1] for e in ev if e[8] == 1 and e[4] != 1]
    return sum(d) / len(d)
r = mean(b) / mean(a)
assert 1.2 < r < 1.4, r' "$tmp/s0.trove" "$tmp/s2.trove"
exits 2 "$TROVE" gen --slow nosuch=2 -o "$tmp/x.trove"
check grep -q "^trove gen: --slow nosuch=2: the model's event names are zone_0 .. zone_65535" "$tmp/err"
exits 2 "$TROVE" gen --slow zone_1=0 -o "$tmp/x.trove"
check grep -q "^trove gen: --slow zone_1=0: FACTOR must be a number in (0, 1000\]" "$tmp/err"
exits 2 "$TROVE" gen --names 10 --slow zone_10=2 -o "$tmp/x.trove"
check grep -q "zone_0 .. zone_9 " "$tmp/err"
expect_error gen gen --slow zone_1=1001 -o "$tmp/x.trove"
expect_error gen gen --slow zone_1 -o "$tmp/x.trove"
expect_error gen gen --slow zone_1=2 --slow zone_1=3 -o "$tmp/x.trove"
check [ ! -e "$tmp/x.trove" ]
fi

# 5. Issue 2's size targets on the default gen capture (sizes are deterministic): packed
#    <= 11.1 and packed+deflate <= 7.1 bytes an event, counting event frames with their
#    headers as the bench does. The 1 ns clock stays above 7.1 (docs/BENCHMARKS.md), which
#    shows the check measures what the clock changes.
if section issue_2_size; then
event_bytes() {
    python3 -c '
import struct, sys
b = open(sys.argv[1], "rb").read()
off, nbytes, events = 0, 0, 0
while off < len(b):
    magic, fmt, ver, count, payload, raw = struct.unpack_from("<2sBBIII", b, off)
    assert magic == b"TV", magic
    if fmt != 4:
        nbytes += 16 + payload; events += count
    off += 16 + payload
assert off == len(b) and events == 1034313, (off, events)
lo, hi = float(sys.argv[2]), float(sys.argv[3])
print("%s: %.3f bytes/event" % (sys.argv[1].rsplit("/", 1)[-1], nbytes / events), file=sys.stderr)
sys.exit(0 if lo < nbytes / events <= hi else 1)' "$@"
}
"$TROVE" gen --to packed -q -o "$tmp/full.packed"
check event_bytes "$tmp/full.packed" 0 11.1
"$TROVE" gen --to deflate -q -o "$tmp/full.deflate"
check event_bytes "$tmp/full.deflate" 0 7.1
"$TROVE" gen --to deflate --tick 1 -q -o "$tmp/full1.deflate"
check event_bytes "$tmp/full1.deflate" 7.1 11.1
rm -f "$tmp"/full*
fi

# 6. The human table names every format, and its columns in words.
if section human_table_names; then
"$TROVE" bench wire --events 5000 --repeat 1 >"$tmp/table.txt"
check [ $? -eq 0 ]
peer_rows="lz4 xz9 xz9_stream xz9e_stream brotli11"
if [ "$PEERS" = 1 ]; then
    head1="^ +bytes +size vs +size vs +encode us +decode us +enc\+dec vs +decode +decode +passes$"
    head2="^format +per event +raw +zlib6_stream +per batch +per batch +zlib6_message +vs raw +vs lz4"
    rows="$peer_rows"
else
    head1="^ +bytes +size vs +size vs +encode us +decode us +enc\+dec vs +decode +passes$"
    head2="^format +per event +raw +zlib6_stream +per batch +per batch +zlib6_message +vs raw"
    rows=""
    for k in $peer_rows; do check_not grep -q "^$k " "$tmp/table.txt"; done
    check grep -q "not in this build:" "$tmp/table.txt"
fi
check grep -Eq "$head1" "$tmp/table.txt"
check grep -Eq "$head2 +enc/dec +what it is$" "$tmp/table.txt"
for k in raw packed packed_deflate columnar columnar_deflate columnar_zstd1 model protobuf_varint zlib6_message \
         zlib6_stream zstd1 zstd3 \
         zstd19 zstd19_long_stream $rows; do
    check grep -q "^$k " "$tmp/table.txt"
done
# The binary links none of the libraries only some commands need: the peers (loaded by
# the benchmarks), libcurl and libcrypto (S3, --url), libzip (bundles), snappy (trove
# decodes it itself); so nothing the program starts with loads them. (liblzma is libdw's.)
if command -v ldd > /dev/null; then
    ldd "$TROVE" > "$tmp/ldd.txt"
    check grep -q "libzstd" "$tmp/ldd.txt"
    for lib in liblz4 libbrotlienc libbrotlidec libstreamvbyte libcurl libcrypto \
               libgnutls libzip libsnappy; do
        check_not grep -q "$lib" "$tmp/ldd.txt"
    done
fi
fi

# 7. Help and errors: exit status, one line on stderr, nothing on stdout.
if section help_and_errors; then
"$TROVE" bench wire --help >"$tmp/help.txt"
check [ $? -eq 0 ]
check grep -q -- "--input-format" "$tmp/help.txt"
"$TROVE" gen --help >"$tmp/help.txt"
check [ $? -eq 0 ]
check grep -q -- "--zipf" "$tmp/help.txt"
check grep -q -- "--slow NAME=FACTOR" "$tmp/help.txt"
"$TROVE" bench --help >"$tmp/help.txt"
check [ $? -eq 0 ]
check grep -q "wire" "$tmp/help.txt"
expect_error "bench wire" bench wire --batch 0
expect_error "bench wire" bench wire --batch 70000
expect_error "bench wire" bench wire --events
expect_error "bench wire" bench wire --repeat x
expect_error "bench wire" bench wire --bogus
expect_error "bench wire" bench wire --input "$tmp/does-not-exist.json"
expect_error "bench wire" bench wire --input-format chrome-json
expect_error bench bench nosuch
# The soak's programs (bench/soak.sh runs them): their help, and each refusal one line.
"$TROVE" bench soak --help >"$tmp/help.txt"
check [ $? -eq 0 ]
check grep -q "produce" "$tmp/help.txt"
expect_error "bench soak" bench soak produce --capture c
expect_error "bench soak" bench soak view --capture c
expect_error "bench soak" bench soak check --store "$tmp/none"
expect_error "bench soak" bench soak produce --socket s --capture c --rate x
expect_error "bench soak" bench soak nosuch
expect_error gen gen --events 12x -o "$tmp/x.trove"
expect_error gen gen --names 65537 -o "$tmp/x.trove"
expect_error gen gen --zipf -1 -o "$tmp/x.trove"
expect_error gen gen --to names -o "$tmp/x.trove"
expect_error gen gen --processes 4096 --threads 4096 -o "$tmp/x.trove"
expect_error gen gen --events 10 -o "$tmp/no-such-dir/x.trove"
check [ ! -e "$tmp/x.trove" ]
printf 'TVxx' >"$tmp/bad.trove"
expect_error "bench wire" bench wire --input "$tmp/bad.trove"
fi

# 8. The real Chrome trace, if the sample and zstd are there (a prefix, one pass).
if section real_chrome_trace; then
if [ -n "$DATA" ] && [ -r "$DATA/chrome-trace-dom.json.zst" ] && command -v zstd >/dev/null 2>&1; then
    zstd -dcq "$DATA/chrome-trace-dom.json.zst" >"$tmp/trace.json"
    "$TROVE" bench wire --input "$tmp/trace.json" --input-format chrome-json --events 30000 \
        --repeat 1 --json >"$tmp/trace.out"
    check [ $? -eq 0 ]
    check validate_json "$tmp/trace.out" 30000 15
fi

# bench client: exactly the documented keys, in order, with sane values.
"$TROVE" bench client --zones 20000 --rounds 1 --threads 2 --json >"$tmp/client.json" 2>"$tmp/client.err" ||
    bad "bench client: $(cat "$tmp/client.err")"
json "$tmp/client.json" \
    'list(j) == ["threads", "zones", "ns_per_zone", "ns_per_zone_floor", "ns_per_zone_disconnected", "ns_per_zone_text16", "ns_per_zone_ring", "ns_per_zone_ring_text16", "events_dropped"]' \
    'j["threads"] == 2 and j["zones"] == 20000' \
    'j["ns_per_zone"] > 0 and j["ns_per_zone_floor"] > 0 and j["ns_per_zone_disconnected"] > 0' \
    'j["ns_per_zone_text16"] > 0 and j["ns_per_zone_ring"] > 0 and j["ns_per_zone_ring_text16"] > 0' \
    '0 <= j["events_dropped"] <= 40000'
exits 1 "$TROVE" bench client --threads 0
fi

# bench attrs: a trace's args as rows (each type), their strings interned, the object next to
# zstd of the same args as JSON lines; a trace with none has no rows; bad options are 2
if section attrs; then
cat > "$tmp/args.json" << 'JSON'
{"traceEvents":[
 {"ph":"X","name":"a","ts":1,"dur":1,"pid":1,"tid":1,"args":{"url":"https://a/","n":3,"r":0.5,"ok":true,"o":{"k":[1]},"z":null}},
 {"ph":"X","name":"b","ts":2,"dur":1,"pid":1,"tid":1},
 {"ph":"X","name":"c","ts":3,"dur":1,"pid":1,"tid":1,"args":{"url":"https://a/","big":18446744073709551615}}
]}
JSON
exits 0 "$TROVE" bench attrs --input "$tmp/args.json" --json
json "$tmp/out" 'j["events"] == 3 and j["rows"] == 8 and j["strings"] == 10 and j["attrs_bytes"] > 56 and j["zstd19_bytes"] > 0'
exits 0 "$TROVE" bench attrs --input "$tmp/args.json"
check grep -q "attrs object .* x zstd -19; level 9" "$tmp/out"
printf '[{"ph":"X","name":"a","ts":1,"dur":1,"pid":1,"tid":1}]' > "$tmp/noargs.json"
exits 0 "$TROVE" bench attrs --input "$tmp/noargs.json" --json
json "$tmp/out" 'j["rows"] == 0 and j["strings"] == 0'
exits 2 "$TROVE" bench attrs
exits 2 "$TROVE" bench attrs --input "$tmp/args.json" --level 20
exits 1 "$TROVE" bench attrs --input "$tmp/missing.json"
fi

# 9. bench serve: the service's CPU by thread (the threads the library names, and the web
# thread, which bench serve names), summing to no more than its whole CPU; --step-seconds
# is bounded. A short paced run: 200,000 events, one producer, two viewers.
if section serve_threads; then
exits 0 "$TROVE" bench serve --producers 1 --viewers 2 --events 200000 --rate 400000 --json
json "$tmp/out" 'set(("trove-web", "trove-ingest", "trove-pass", "trove-store")) <= set(j["cpu_ns_per_event_by_thread"])' \
     'all(v >= 0 for v in j["cpu_ns_per_event_by_thread"].values())' \
     'sum(j["cpu_ns_per_event_by_thread"].values()) <= j["cpu_ns_per_event"] + 12 * 1e7 / 200000' \
     'j["cpu_ns_per_event"] > 0 and j["events"] == 200000' \
     'j["segment_format"] == "columnar_deflate"' \
     'j["bytes_per_event"]["stored"] == j["bytes_per_event"]["deflate"] > 0'
cp "$tmp/out" "$tmp/serve-default.json"
# the service's segment format: its default, format 5 with deflate, stores the same events in
# fewer bytes than deflate frames
exits 0 "$TROVE" bench serve --producers 1 --viewers 2 --events 200000 --rate 400000 \
    --segment-format deflate --json
json "$tmp/out" 'j["segment_format"] == "deflate" and j["events"] == 200000 and j["drops"] == 0'
check python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2])); assert a["bytes_per_event"]["stored"] < b["bytes_per_event"]["stored"], (a, b)' \
    "$tmp/serve-default.json" "$tmp/out"
exits 2 "$TROVE" bench serve --segment-format packed
check grep -q "is not deflate, columnar" "$tmp/err"
exits 2 "$TROVE" bench serve --max --step-seconds 0
check grep -q "step-seconds is 1..600" "$tmp/err"
exits 2 "$TROVE" bench serve --max --step-seconds 601
exits 0 "$TROVE" bench serve --help
check grep -q -- "--step-seconds S" "$tmp/out"
fi

finish
