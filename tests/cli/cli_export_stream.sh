#!/usr/bin/env bash
# cli_export_stream.sh: `trove export --capture NAME`, which streams the capture a row group
# at a time (src/input/export_capture.c), writes byte for byte what the in-memory export writes
# of the same events (`trove export store:NAME`, or a replayed range exported as a file):
# over many row groups, in every format (bundle stored and deflated, parquet, dir), every
# encoding and codec, with and without a time range, to a file and to a pipe; its
# temporary file goes to $TMPDIR for a pipe and beside a file, and is gone after; a
# TMPDIR that cannot take it is one error line; and its peak memory stays under what the
# capture's events alone would take (a bound: memory is deterministic enough, time is not
# checked). The service's export (cli_api.sh) runs this same export.
#
# `--format chrome-json|perfetto` of a capture streams too (src/input/export_trace.c, the
# library's trove_trace_writer_*): with runs of a few thousand events merged a few at a
# time (TROVE_EXPORT_RUN_EVENTS, TROVE_EXPORT_FAN_IN), so that the sort really spills and
# merges, it writes byte for byte what the whole export of the same events writes (a file
# input, which fits in one run and never touches the disk) — for a generated capture, the
# hand-made chrome_async.json and the sample trace, whole and with a time range, to a file
# and to a pipe; the sample's bytes are those recorded from the writers before they
# streamed; a TMPDIR that cannot take the runs is one error line and no output; a capture
# that fits in one run needs no TMPDIR at all; and a 3 M-event capture is exported under a
# fixed peak RSS, where loading it whole took 380 to 490 MB.
# usage: cli_export_stream.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
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

# ---- chrome-json and perfetto, streamed ---------------------------------------------------
# trace_same NAME FILE [OPTS...]: capture NAME streamed through many spilled runs gives, in
# both formats, the bytes of FILE (the same events, whole) exported.
if section chrome_json_and; then
trace_same() {
    local cap=$1 file=$2 f
    shift 2
    for f in chrome-json perfetto; do
        rm -f "$tmp/ta" "$tmp/tb"
        if TROVE_EXPORT_RUN_EVENTS=3000 TROVE_EXPORT_FAN_IN=4 "$trove" export --capture "$cap" \
            --store "$s" --format "$f" -o "$tmp/ta" -q "$@" &&
            "$trove" export "$file" --format "$f" -o "$tmp/tb" -q &&
            cmp -s "$tmp/ta" "$tmp/tb"; then
            ok
        else
            bad "export --capture $cap --format $f $* differs from the whole export of $file"
        fi
    done
}
trace_same cap "$tmp/g.wire" # 84 runs of starts (81 of ends for Perfetto), 3 merge passes each
trace_same cap "$tmp/r.wire" --from-ns "$a" --to-ns "$b" # the replayed range
check cp "$2/tests/data/chrome_async.json" "$tmp/async.json"
"$trove" import "$tmp/async.json" --name async --store "$s" -q || bad "import chrome_async.json"
trace_same async "$tmp/async.json"
# store:NAME is a capture too, streamed the same way (with its flow rows)
TROVE_EXPORT_RUN_EVENTS=2 "$trove" export store:async --store "$s" --format perfetto \
    -o "$tmp/sa.pftrace" -q || bad "export store:async"
"$trove" export "$tmp/async.json" --format perfetto -o "$tmp/fa.pftrace" -q
check cmp -s "$tmp/sa.pftrace" "$tmp/fa.pftrace"
# the runs are spilled and merged: the verbose line says how
TROVE_EXPORT_RUN_EVENTS=3000 TROVE_EXPORT_FAN_IN=4 "$trove" export --capture cap --store "$s" \
    --format perfetto -o "$tmp/ta" -v 2> "$tmp/v.err" || bad "export -v"
check grep -q "sorted in 165 runs (6 merge passes, 78580480 bytes) of a temporary file" "$tmp/v.err"
# to a pipe: the file's bytes; the runs went to $TMPDIR and are gone
mkdir -p "$tmp/tspool"
TMPDIR=$tmp/tspool TROVE_EXPORT_RUN_EVENTS=3000 "$trove" export --capture cap --store "$s" \
    --format chrome-json -o - -q | cat > "$tmp/tp.json"
"$trove" export "$tmp/g.wire" --format chrome-json -o "$tmp/tf.json" -q
check cmp -s "$tmp/tp.json" "$tmp/tf.json"
check test "$(ls -A "$tmp/tspool" | wc -l)" -eq 0
# a TMPDIR that cannot take the runs: one error line, no output (to a file, or a pipe)
TMPDIR=$tmp/nosuch TROVE_EXPORT_RUN_EVENTS=3000 expect_error export export --capture cap \
    --store "$s" --format chrome-json -o "$tmp/tx.json"
check grep -q "cannot make a temporary file in $tmp/nosuch to sort the events" "$tmp/e.err"
check test ! -e "$tmp/tx.json"
check test -z "$(find "$tmp" -maxdepth 1 -name '.tx.json*')"
TMPDIR=$tmp/nosuch TROVE_EXPORT_RUN_EVENTS=3000 expect_error export export --capture cap \
    --store "$s" --format perfetto -o -
# a capture that fits in one run is sorted in memory: no TMPDIR needed
TMPDIR=$tmp/nosuch "$trove" export --capture cap --store "$s" --format perfetto -o "$tmp/tm.pf" \
    -q || bad "a capture of one run needs no temporary file"
"$trove" export "$tmp/g.wire" --format perfetto -o "$tmp/tw.pf" -q
check cmp -s "$tmp/tm.pf" "$tmp/tw.pf"
TROVE_EXPORT_FAN_IN=1 expect_error export export --capture cap --store "$s" --format perfetto \
    -o "$tmp/ty"
check grep -q "TROVE_EXPORT_FAN_IN: '1' is not a count in 2..65536" "$tmp/e.err"

# The sample trace (if ../shared/data has it) as a capture: streamed through runs of 1,000
# events, whole and over two seconds, the whole export's bytes; and those are the bytes the
# writers wrote before they streamed (their SHA-256, recorded then).
data=${3:-}
if [ -n "$data" ] && [ -r "$data/chrome-trace-dom.json.zst" ] && command -v zstd > /dev/null; then
    zstd -dcq "$data/chrome-trace-dom.json.zst" > "$tmp/sample.json"
    "$trove" import "$tmp/sample.json" --name sample --store "$s" -q || bad "import the sample"
    sha() {
        python3 -c 'import hashlib, sys
print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"
    }
    for f in chrome-json perfetto; do
        TROVE_EXPORT_RUN_EVENTS=1000 TROVE_EXPORT_FAN_IN=16 "$trove" export --capture sample \
            --store "$s" --format "$f" -o "$tmp/sa.$f" -q || bad "export the sample ($f)"
        "$trove" export "$tmp/sample.json" --format "$f" -o "$tmp/sf.$f" -q
        check cmp -s "$tmp/sa.$f" "$tmp/sf.$f"
        TROVE_EXPORT_RUN_EVENTS=1000 TROVE_EXPORT_FAN_IN=16 "$trove" export --capture sample \
            --store "$s" --format "$f" --from-ns 591000000000 --to-ns 593000000000 \
            -o "$tmp/sr.$f" -q || bad "export the sample's range ($f)"
        "$trove" export --capture sample --store "$s" --format "$f" --from-ns 591000000000 \
            --to-ns 593000000000 -o "$tmp/sm.$f" -q # one run, in memory
        check cmp -s "$tmp/sr.$f" "$tmp/sm.$f"
    done
    # the JSON carries the events' attributes (args, categories, tts, ...) and, a range too,
    # the trace's top-level members; the Perfetto trace the events' as debug annotations and
    # categories: recorded again when the writers began to write them
    want_sa_json=95a4bb729e0eab6da8c554719b19c6422fe678490c9c08c9904680d6b779d5b1
    want_sa_pf=e0331e492f63d5b53dac2d68076e1ce25e141cc669385d16b1c89c230db0b5ad
    # the range's outputs carry the depths of events whose enclosing zones began before it
    # (an importer cannot count those zones), and its events' attributes: recorded again
    # when a window began to carry them (each event's equal to the original's:
    # cli_attrs.sh)
    want_sr_json=237262517f745509ac90f62657134e3145169ff643ed1913b5f15e52722ec290
    want_sr_pf=a60b914449bac5bf0205f746801f87cbcf17bc43ad2c44b395a02e7619c5d1c0
    check test "$(sha "$tmp/sa.chrome-json")" = "$want_sa_json"
    check test "$(sha "$tmp/sa.perfetto")" = "$want_sa_pf"
    check test "$(sha "$tmp/sr.chrome-json")" = "$want_sr_json"
    check test "$(sha "$tmp/sr.perfetto")" = "$want_sr_pf"
    rm -f "$tmp"/sample.json "$tmp"/s[afrm].*
fi

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
    # and as traces, whose writer sorts in runs of 256 Ki events (about 35 MB in all): under
    # 64 MB, where loading the capture and building the output whole took 490 MB (Chrome
    # JSON) and 380 MB (Perfetto). The output, 300 MB of JSON, is not held either.
    for f in chrome-json perfetto; do
        kb=$(python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' \
            "$trove" export --capture big --store "$s" --format "$f" -o "$tmp/big.out" -q) ||
            bad "export big --format $f"
        if [ "${kb:-999999}" -lt 65536 ]; then
            ok
        else
            bad "export --capture big --format $f: peak RSS $kb KB"
        fi
        rm -f "$tmp/big.out"
    done
fi
fi
finish
