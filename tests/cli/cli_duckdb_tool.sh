#!/bin/bash
# cli_duckdb_tool.sh: self-test of tools/duckdb/duckdb_tool.mjs, the DuckDB side of the
# Parquet interop tests and benchmark (tools/duckdb/duckdb_tool.md).
#
#   bash tests/cli/cli_duckdb_tool.sh <trove-binary> <source-dir> <shared-data-dir>
#
# The trove binary is not used. DuckDB writes files of known data (`gen`); `info` must report
# the rows, the exact integer sums, min/max and the checksums that python3 computes
# independently with the documented definition; `copy` with each compression must keep the
# data; `bench` must print the documented keys; errors are one line on stderr with exit 1.
# Prints "N passed, N failed"; exits 1 if anything failed, 77 (skip) without python3, node or
# tools/duckdb/node_modules (`make deps-npm` installs them).
set -u

SRC=${2:?usage: cli_duckdb_tool.sh <trove-binary> <source-dir> <shared-data-dir>}
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
if ! command -v node >/dev/null 2>&1; then
    echo "skipped: node not found (make deps-npm installs it)"
    exit 77
fi
if [ ! -d "$SRC/tools/duckdb/node_modules/@duckdb/node-api" ]; then
    echo "skipped: $SRC/tools/duckdb/node_modules is missing (make deps-npm runs npm ci)"
    exit 77
fi
TOOL="$SRC/tools/duckdb/duckdb_tool.mjs"
duck() { node "$TOOL" "$@"; }

# The gen data (duckdb_tool.md's table) and the checksum definition, in python3.
PYLIB='
import json, sys
def fnv(values):
    h = 0xcbf29ce484222325
    for v in values:
        if v is None: data = b"\xff"
        elif isinstance(v, bool): data = b"true" if v else b"false"
        elif isinstance(v, int): data = str(v).encode()
        else: data = v.encode("utf-8")
        for b in data + b"\n":
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h
def gen(n):
    r = range(n)
    return {
        "id": ("BIGINT", [i for i in r]),
        "small": ("INTEGER", [(i * 7919) % 1000 - 500 for i in r]),
        "big": ("BIGINT", [(i * 2654435761) % 4294967296 - 2147483648 for i in r]),
        "maybe": ("INTEGER", [None if i % 7 == 3 else i % 100 for i in r]),
        "name": ("VARCHAR", ["k%d" % (i % 13) for i in r]),
        "text": ("VARCHAR", ["r%d%s" % (i, ["", "\u00e9", "\u20ac", "\U0001F600"][i % 4]) for i in r]),
        "flag": ("BOOLEAN", [i % 2 == 0 for i in r]),
        "ratio": ("DOUBLE", None),
    }
'

# validate_info FILE N COMPRESSION: an `info` object for gen data of N rows.
validate_info() {
    python3 - "$1" "$2" "$3" <<EOF
$PYLIB
path, n, compression = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = open(path).read()
errors = []
try:
    d = json.loads(text)
except ValueError as e:
    print("not JSON: %s: %r" % (e, text[:200])); sys.exit(1)
if text.count("\n") != 1 or not text.endswith("}\n"):
    errors.append("stdout is not exactly one JSON line")
if list(d) != ["rows", "columns"]:
    errors.append("top-level keys %r" % list(d))
if d.get("rows") != n:
    errors.append("rows %r, want %d" % (d.get("rows"), n))
want = gen(n)
cols = d.get("columns", [])
if [c.get("name") for c in cols] != list(want):
    errors.append("column names %r" % [c.get("name") for c in cols])
keys = ["name", "type", "encodings", "compression", "sum", "min", "max", "checksum"]
for c in cols:
    name = c.get("name")
    if list(c) != keys:
        errors.append("%s: keys %r" % (name, list(c))); continue
    if name not in want: continue
    typ, values = want[name]
    if c["type"] != typ:
        errors.append("%s: type %r, want %r" % (name, c["type"], typ))
    if n == 0:  # no row groups, no column chunks
        if c["compression"] is not None or c["encodings"] != []:
            errors.append("%s: compression %r, encodings %r with no rows" % (name, c["compression"], c["encodings"]))
    else:
        if c["compression"] != compression:
            errors.append("%s: compression %r, want %r" % (name, c["compression"], compression))
        if not c["encodings"] or not all(isinstance(e, str) and e.isupper() for e in c["encodings"]):
            errors.append("%s: encodings %r" % (name, c["encodings"]))
    if len(c["checksum"]) != 16 or c["checksum"].strip("0123456789abcdef"):
        errors.append("%s: checksum %r is not 16 lowercase hex digits" % (name, c["checksum"]))
    if values is None:
        if c["sum"] is not None: errors.append("%s: sum %r, want null" % (name, c["sum"]))
        continue
    present = [v for v in values if v is not None]
    if typ in ("BIGINT", "INTEGER"):
        s = str(sum(present)) if present else None
        lo = str(min(present)) if present else None
        hi = str(max(present)) if present else None
    else:  # python orders str by code point, as DuckDB orders VARCHAR by UTF-8 bytes
        s = None
        lo = (("true" if min(present) else "false") if typ == "BOOLEAN" else min(present)) if present else None
        hi = (("true" if max(present) else "false") if typ == "BOOLEAN" else max(present)) if present else None
    if c["sum"] != s: errors.append("%s: sum %r, want %r" % (name, c["sum"], s))
    if c["min"] != lo: errors.append("%s: min %r, want %r" % (name, c["min"], lo))
    if c["max"] != hi: errors.append("%s: max %r, want %r" % (name, c["max"], hi))
    if c["checksum"] != fnv(values):
        errors.append("%s: checksum %s, want %s" % (name, c["checksum"], fnv(values)))
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
EOF
}

# 0. The documented example and the empty column, in the python definition itself.
if section documented_example_and; then
check python3 -c "$PYLIB
assert fnv([]) == 'cbf29ce484222325'
h = 0xcbf29ce484222325
for b in b'1\n-2\n\xff\n':
    h = ((h ^ b) * 0x100000001b3) % 2**64
assert fnv([1, -2, None]) == '%016x' % h"
fi

# 1. gen + info on a tiny file and on one with several row groups.
if section gen_info_on; then
duck gen "$tmp/tiny.parquet" 10 >"$tmp/gen.json"
check [ $? -eq 0 ]
check grep -qx '{"rows":10}' "$tmp/gen.json"
duck info "$tmp/tiny.parquet" >"$tmp/tiny.json" 2>"$tmp/tiny.err"
check [ $? -eq 0 ]
check [ ! -s "$tmp/tiny.err" ]
check validate_info "$tmp/tiny.json" 10 ZSTD

duck gen "$tmp/g.parquet" 30000 --row-group-size 8192 --compression snappy >/dev/null
check [ $? -eq 0 ]
duck info "$tmp/g.parquet" >"$tmp/g.json"
check [ $? -eq 0 ]
check validate_info "$tmp/g.json" 30000 SNAPPY

# An empty file: zero rows, null sums, the empty checksum.
duck gen "$tmp/empty.parquet" 0 >/dev/null
check [ $? -eq 0 ]
duck info "$tmp/empty.parquet" >"$tmp/empty.json"
check [ $? -eq 0 ]
check validate_info "$tmp/empty.json" 0 ZSTD
fi

# 2. copy with each compression keeps every value (same checksums) and uses the codec.
if section copy_with_each; then
for c in uncompressed snappy zstd; do
    duck copy "$tmp/g.parquet" "$tmp/c-$c.parquet" --compression $c >"$tmp/copy.json"
    check [ $? -eq 0 ]
    check grep -qx '{"rows":30000}' "$tmp/copy.json"
    duck info "$tmp/c-$c.parquet" >"$tmp/c-$c.json"
    check [ $? -eq 0 ]
    check validate_info "$tmp/c-$c.json" 30000 "$(echo $c | tr a-z A-Z)"
done
duck copy "$tmp/tiny.parquet" "$tmp/c-default.parquet" >/dev/null
check [ $? -eq 0 ]
duck info "$tmp/c-default.parquet" >"$tmp/c-default.json"
check validate_info "$tmp/c-default.json" 10 ZSTD
# --select: the select list (here two columns of gen's, one of them computed).
duck copy "$tmp/tiny.parquet" "$tmp/c-select.parquet" --select "id, id * 2 AS twice" >/dev/null
check [ $? -eq 0 ]
duck info "$tmp/c-select.parquet" >"$tmp/c-select.json"
json "$tmp/c-select.json" '[c["name"] for c in j["columns"]] == ["id", "twice"] and j["columns"][1]["sum"] == "90"'
fi

# 3. bench --repeat 1: the documented keys, sane values, uncompressed the larger file.
if section bench_repeat_1; then
duck bench "$tmp/g.parquet" --repeat 1 >"$tmp/bench.json"
check [ $? -eq 0 ]
duck bench "$tmp/tiny.parquet" --repeat 1 --threads 1 >"$tmp/bench1.json"
check [ $? -eq 0 ]
validate_bench() {
    python3 - "$1" "$2" <<'EOF'
import json, math, sys
text = open(sys.argv[1]).read()
d = json.loads(text)
errors = []
if text.count("\n") != 1:
    errors.append("stdout is not exactly one JSON line")
if list(d) != ["duckdb_default", "duckdb_uncompressed", "duckdb_version", "threads"]:
    errors.append("keys %r" % list(d))
for k in ("duckdb_default", "duckdb_uncompressed"):
    v = d.get(k)
    if not isinstance(v, dict) or list(v) != ["bytes", "write_s", "read_s"]:
        errors.append("%s: %r" % (k, v)); continue
    if not isinstance(v["bytes"], int) or v["bytes"] <= 0:
        errors.append("%s.bytes %r" % (k, v["bytes"]))
    for m in ("write_s", "read_s"):
        x = v[m]
        if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x) or x <= 0:
            errors.append("%s.%s = %r is not a positive number" % (k, m, x))
if not errors and not d["duckdb_default"]["bytes"] < d["duckdb_uncompressed"]["bytes"]:
    errors.append("default %r not smaller than uncompressed" % d["duckdb_default"])
if not isinstance(d.get("duckdb_version"), str) or not d["duckdb_version"].startswith("v"):
    errors.append("duckdb_version %r" % d.get("duckdb_version"))
t = d.get("threads")
if not isinstance(t, int) or t < 1 or (sys.argv[2] != "any" and t != int(sys.argv[2])):
    errors.append("threads %r" % t)
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
EOF
}
check validate_bench "$tmp/bench.json" any
check validate_bench "$tmp/bench1.json" 1
fi

# 4. Errors: exit 1, nothing on stdout, one line on stderr starting "duckdb_tool: ".
if section errors; then
expect_tool_error() {
    local rc
    duck "$@" >"$tmp/e.out" 2>"$tmp/e.err"
    rc=$?
    if [ $rc -eq 1 ] && [ ! -s "$tmp/e.out" ] && [ "$(wc -l <"$tmp/e.err")" -eq 1 ] &&
        grep -q "^duckdb_tool: " "$tmp/e.err"; then
        ok
    else
        bad "duckdb_tool $* (rc $rc, stdout: $(head -c 200 "$tmp/e.out"), stderr: $(cat "$tmp/e.err"))"
    fi
}
expect_tool_error
expect_tool_error nosuch
expect_tool_error info
expect_tool_error info "$tmp/does-not-exist.parquet"
printf 'not parquet at all' >"$tmp/bad.parquet"
expect_tool_error info "$tmp/bad.parquet"
expect_tool_error copy "$tmp/tiny.parquet" "$tmp/x.parquet" --compression lz9
expect_tool_error copy "$tmp/tiny.parquet"
expect_tool_error copy "$tmp/tiny.parquet" "$tmp/no-such-dir/x.parquet"
expect_tool_error gen "$tmp/x.parquet" 12x
expect_tool_error bench "$tmp/tiny.parquet" --repeat 0
expect_tool_error bench "$tmp/tiny.parquet" --bogus 1
fi

finish
