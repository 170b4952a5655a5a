#!/bin/bash
# cli_trace.sh: traces for other tools, end to end — `trove export --format chrome-json` and
# `--format perfetto`, Perfetto traces read back wherever trove reads captures, and flows
# carried through bundles and captures.
#
#   bash tests/cli/cli_trace.sh <trove-binary> <source-dir> <shared-data-dir>
#
# 1. The hand-made trace (tests/data/chrome_async.json): the Chrome JSON export parses and
#    holds every phase it should; both exports read back (as a bundle, as a wire stream, as a
#    capture) to the same events and names as the trace itself (`trove cat --json`), and the
#    flow rows and the sort indexes survive a bundle, a capture and both formats.
# 2. The bundle's flows and sort_indexes tables: DuckDB (tools/duckdb/duckdb_tool.mjs) reads
#    them with the manifest's counts and the sums python3 computes from the rows trove printed.
# 3. The sample trace, if ../shared/data has it: both round trips give exactly the events and
#    names of the trace; the Perfetto file is the smaller by far.
# 4. Errors: an unknown format, --zip-deflate with a trace format, a damaged Perfetto file: one
#    line, nonzero exit, no output left.
# `protoc --decode_raw` is tests/cli/cli_perfetto_protoc.sh. Skips (77) without python3; without
# node or tools/duckdb/node_modules it skips the DuckDB part, unless CI is set.
set -u

TROVE=${1:?usage: cli_trace.sh <trove-binary> <source-dir> <shared-data-dir>}
SRC=${2:?}
DATA=${3:-}
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3

need_duck "$SRC"

t() { "$TROVE" "$@" --quiet; }
# exact_of FILE: the events and names of any capture, as `trove cat --json` prints them (a file
# trove cat does not read directly goes through a bundle first); cat_of FILE: the same without
# the name ids, which a Chrome import numbers again (by use, ties by first appearance).
exact_of() {
    rm -rf "$tmp/via.bundle" "$tmp/via.tv"
    t export "$1" -o "$tmp/via.bundle" && t import "$tmp/via.bundle" -o "$tmp/via.tv" --to raw &&
        "$TROVE" cat "$tmp/via.tv" --json
}
cat_of() { exact_of "$1" | sed 's/"name_id":[0-9]*,//'; }
same() { cmp -s "$1" "$2" && [ -s "$1" ]; }

IN="$SRC/tests/data/chrome_async.json"

# ---- 1. the hand-made trace -----------------------------------------------------------------
if section hand_made_trace; then
check t export "$IN" -o "$tmp/a.json" --format chrome-json
check t export "$IN" -o "$tmp/a.pftrace" --format perfetto
check python3 - "$tmp/a.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["displayTimeUnit"] == "ns"
ev = d["traceEvents"]
phases = {e["ph"] for e in ev}
assert phases == set("MXbenSTFCstf"), phases
# flows: 5 s/t/f events and the 2 bind_id rows, as s and f
assert sum(e["ph"] in "stf" for e in ev) == 7
# ns kept: the flow at 10.5 us
assert any(e["ph"] == "s" and e["ts"] == 10.5 for e in ev)
# counters by series, values exact
c = [(e["name"], e["args"]) for e in ev if e["ph"] == "C"]
assert ("mem", {"js": 2.5}) in c and ("mem", {"heap": 2048}) in c and ("cpu", {"value": -0.5}) in c
# async spans carry their track's id
assert all("id2" in e for e in ev if e["ph"] in "ben")
assert all("id" in e for e in ev if e["ph"] in "STF")
# process and thread names; not the tracks' (the importer names them); the sort indexes
m = [e for e in ev if e["ph"] == "M"]
names = {(e["name"], e["args"]["name"]) for e in m if e["name"].endswith("_name")}
assert names == {("process_name", "app"), ("thread_name", "main")}, names
sorts = {(e["name"], e["pid"], e["tid"], e["args"]["sort_index"]) for e in m if e["name"].endswith("_sort_index")}
assert sorts == {("process_sort_index", 1, 0, -1), ("thread_sort_index", 1, 10, 3)}, sorts
assert len(m) == 4
EOF
cat_of "$IN" >"$tmp/orig.cat" || bad "cat of the trace"
cat_of "$tmp/a.json" >"$tmp/json.cat" || bad "cat of the JSON export"
cat_of "$tmp/a.pftrace" >"$tmp/pf.cat" || bad "cat of the Perfetto export"
check same "$tmp/orig.cat" "$tmp/json.cat"
check same "$tmp/orig.cat" "$tmp/pf.cat"
# Perfetto keeps the name ids too
exact_of "$IN" >"$tmp/orig.exact"
exact_of "$tmp/a.pftrace" >"$tmp/pf.exact"
check same "$tmp/orig.exact" "$tmp/pf.exact"
check test "$(wc -l <"$tmp/orig.cat")" -eq 17
# each export read back by the other's writer: Perfetto -> JSON -> Perfetto
check t export "$tmp/a.pftrace" -o "$tmp/b.json" --format chrome-json
check t export "$tmp/b.json" -o "$tmp/b.pftrace" --format perfetto
cat_of "$tmp/b.pftrace" >"$tmp/b.cat" || bad "cat of the second Perfetto export"
check same "$tmp/orig.cat" "$tmp/b.cat"
# a Perfetto file is recognized from its bytes: whatever its name, into the store and back
cp "$tmp/a.pftrace" "$tmp/noext"
check t import "$tmp/noext" --name pf --store "$tmp/store"
check t export --capture pf --store "$tmp/store" -o "$tmp/c.json" --format chrome-json
check t import "$IN" --name js --store "$tmp/store"
check t export --capture js --store "$tmp/store" -o "$tmp/d.pftrace" --format perfetto
cat_of "$tmp/c.json" >"$tmp/c.cat" || bad "cat of the capture's JSON"
cat_of "$tmp/d.pftrace" >"$tmp/d.cat" || bad "cat of the capture's Perfetto"
check same "$tmp/orig.cat" "$tmp/c.cat"
check same "$tmp/orig.cat" "$tmp/d.cat"
# the flows: through a bundle, a capture and both formats, the same 7 rows
flows_of() { json_get "$1" 'sorted((e["ph"], e["ts"], e["pid"], e["tid"], e["name"], e.get("bp", ""))
                               for e in j["traceEvents"] if e["ph"] in "stf")'; }
flows_of "$tmp/a.json" >"$tmp/f.a"
check t export "$IN" -o "$tmp/a.bundle"
check t export "$tmp/a.bundle" -o "$tmp/e.json" --format chrome-json
# a capture exported as a bundle keeps its flows too
check t export --capture pf --store "$tmp/store" -o "$tmp/cap.bundle"
check t export "$tmp/cap.bundle" -o "$tmp/g.json" --format chrome-json
# and the sort indexes (process_sort_index, thread_sort_index), as M events of each export
sorts_of() { json_get "$1" 'sorted((e["name"], e["pid"], e["tid"], e["args"]["sort_index"])
                               for e in j["traceEvents"] if e["ph"] == "M" and "sort_index" in e["args"])'; }
sorts_of "$tmp/a.json" >"$tmp/s.a"
for f in b c e g; do
    flows_of "$tmp/$f.json" >"$tmp/f.$f"
    check same "$tmp/f.a" "$tmp/f.$f"
    sorts_of "$tmp/$f.json" >"$tmp/s.$f"
    check same "$tmp/s.a" "$tmp/s.$f"
done
check grep -q "('process_sort_index', 1, 0, -1), ('thread_sort_index', 1, 10, 3)" "$tmp/s.a"
check test "$(python3 -c 'import ast,sys; print(len(ast.literal_eval(open(sys.argv[1]).read())))' "$tmp/f.a")" -eq 7
# stdout: the JSON document alone
"$TROVE" export "$IN" -o - --format chrome-json --quiet >"$tmp/stdout.json" || bad "export to stdout"
check cmp -s "$tmp/stdout.json" "$tmp/a.json"
fi

# ---- 2. the flows table, in DuckDB ----------------------------------------------------------
if section flows_table; then
mkdir -p "$tmp/adir"
check python3 -c 'import zipfile, sys; z = zipfile.ZipFile(sys.argv[1]); z.extractall(sys.argv[2]); assert "flows.parquet" in z.namelist()' "$tmp/a.bundle" "$tmp/adir"
json "$tmp/adir/manifest.json" 'j["counts"]["flows"] == 7 and "flows.parquet" in j["tables"]'
json "$tmp/adir/manifest.json" 'j["counts"]["sort_indexes"] == 2 and j["tables"][-2:] == ["sort_indexes.parquet", "args.parquet"] and j["counts"]["args"] == 6'
check test -s "$tmp/adir/sort_indexes.parquet"
if [ $have_duck = 1 ]; then
    node "$TOOL" info "$tmp/adir/flows.parquet" >"$tmp/flows.info"
    check [ $? -eq 0 ]
    check python3 - "$tmp/flows.info" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["rows"] == 7, d
cols = {c["name"]: c for c in d["columns"]}
assert list(cols) == ["ts_ns", "flow_id", "pid", "tid", "name_id", "phase", "flags"], list(cols)
assert cols["ts_ns"]["type"] == "UBIGINT" and cols["pid"]["type"] == "UINTEGER"
assert cols["phase"]["type"] == "UTINYINT"
# the rows of tests/unit/test_chrome.c's test_async_flows_counters
assert cols["ts_ns"]["sum"] == str(10500 + 60000 + 70000 + 80000 + 90000 + 200000 + 300000)
assert cols["flow_id"]["sum"] == str(1 + 1 + 1 + 2 + 3 + 4 + 4)
assert cols["phase"]["sum"] == str(0 + 1 + 2 + 2 + 0 + 0 + 2)
assert cols["flags"]["sum"] == "6"
assert cols["flow_id"]["encodings"] == ["DELTA_BINARY_PACKED"], cols["flow_id"]
EOF
    node "$TOOL" info "$tmp/adir/sort_indexes.parquet" >"$tmp/sort.info"
    check [ $? -eq 0 ]
    check python3 - "$tmp/sort.info" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["rows"] == 2, d
cols = {c["name"]: c for c in d["columns"]}
assert list(cols) == ["type", "pid", "tid", "sort_index"], list(cols)
assert cols["type"]["type"] == "UTINYINT" and cols["pid"]["type"] == "UINTEGER"
assert cols["sort_index"]["type"] == "INTEGER", cols["sort_index"]
# process 1: -1 (type 4), thread (1, 10): 3 (type 5)
assert cols["type"]["sum"] == "9" and cols["tid"]["sum"] == "10" and cols["sort_index"]["sum"] == "2"
EOF
fi
fi

# ---- 3. the sample ----------------------------------------------------------------------------
if section sample; then
if [ -n "$DATA" ] && [ -r "$DATA/chrome-trace-dom.json.zst" ] && command -v zstd > /dev/null 2>&1; then
    zstd -dcq "$DATA/chrome-trace-dom.json.zst" > "$tmp/trace.json"
    t convert "$tmp/trace.json" "$tmp/trace.tv" --to raw || bad "convert the sample"
    "$TROVE" cat "$tmp/trace.tv" --json >"$tmp/trace.exact" || bad "cat the sample"
    sed 's/"name_id":[0-9]*,//' "$tmp/trace.exact" >"$tmp/trace.cat"
    check t export "$tmp/trace.json" -o "$tmp/s.json" --format chrome-json
    check t export "$tmp/trace.json" -o "$tmp/s.pftrace" --format perfetto
    t convert "$tmp/s.json" "$tmp/s.tv" --to raw || bad "convert the JSON export"
    "$TROVE" cat "$tmp/s.tv" --json | sed 's/"name_id":[0-9]*,//' >"$tmp/s.cat"
    check same "$tmp/trace.cat" "$tmp/s.cat"
    exact_of "$tmp/s.pftrace" >"$tmp/sp.exact" || bad "cat of the sample's Perfetto export"
    check same "$tmp/trace.exact" "$tmp/sp.exact"
    check test "$(wc -l <"$tmp/trace.cat")" -eq 306749
    # the compact one: under half the JSON's size
    check test $(( $(wc -c <"$tmp/s.pftrace") * 2 )) -lt "$(wc -c <"$tmp/s.json")"
    # its flows, in the bundle made from the Perfetto file
    check t export "$tmp/s.pftrace" -o "$tmp/s.bundle"
    json --zip manifest.json "$tmp/s.bundle" 'j["counts"]["flows"] == 6366'
fi
fi

# ---- 4. errors ------------------------------------------------------------------------------
if section errors; then
expect_error export export "$IN" -o "$tmp/x" --format perfetto2
check test ! -e "$tmp/x"
expect_error export export "$IN" -o "$tmp/x" --format perfetto --zip-deflate
check test ! -e "$tmp/x"
head -c 300 "$tmp/a.pftrace" >"$tmp/cut.pftrace"
expect_error export export "$tmp/cut.pftrace" -o "$tmp/x" --format chrome-json
check grep -q "cut.pftrace (read as a Perfetto trace): at byte" "$tmp/e.err"
check test ! -e "$tmp/x"
echo "already here" >"$tmp/keep"
expect_error export export "$tmp/cut.pftrace" -o "$tmp/keep" --format perfetto
check grep -q "already here" "$tmp/keep"
fi

finish
