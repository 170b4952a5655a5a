#!/bin/bash
# cli_bench_bitpack.sh: end-to-end test of `trove bench bitpack`.
#
#   bash tests/cli/cli_bench_bitpack.sh <trove-binary> <source-dir> <shared-data-dir>
#
# Runs the bench small (1M values, 64K cache-resident, one pass) and checks its --json
# object: exactly the documented keys, in order, every rate a positive finite number, the
# value counts those asked for, and nothing else on stdout. The bench itself compares every
# unpack with its input, so a zero exit also means every kernel, the naive packer and Stream
# VByte round-tripped at every width. Then the human table, --help, and one-line errors with
# a non-zero exit. No timing is asserted.
# Prints "N passed, N failed"; exits 1 if anything failed, 77 (skip) without python3.
set -u
# streamvbyte is measured only in a build configured with -DTROVE_BENCH_PEERS=ON (ctest says
# which in $TROVE_TEST_BENCH_PEERS).
PEERS=${TROVE_TEST_BENCH_PEERS:-1}

TROVE=${1:?usage: cli_bench_bitpack.sh <trove-binary> <source-dir> <shared-data-dir>}
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3

# validate_json FILE VALUES CACHE_VALUES
validate_json() {
    python3 - "$1" "$2" "$3" "$PEERS" <<'PY'
import json, math, sys
path, values, cache_values = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
peers = sys.argv[4] == "1"
text = open(path).read()
errors = []
try:
    d = json.loads(text)
except ValueError as e:
    print("not JSON: %s: %r" % (e, text[:200])); sys.exit(1)
if text.count("\n") != 1 or not text.endswith("}\n"):
    errors.append("stdout is not exactly one JSON line")

def keys(obj, want, where):
    if not isinstance(obj, dict):
        errors.append("%s is %r, not an object" % (where, obj))
        return False
    if list(obj) != want:
        errors.append("%s: keys %r, want %r" % (where, list(obj), want))
        return False
    return True

def rate(obj, k, where):
    x = obj[k]
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x) or x <= 0:
        errors.append("%s.%s = %r is not a positive finite number" % (where, k, x))

def count(obj, want, where):
    x = obj["values"]
    if not isinstance(x, int) or isinstance(x, bool) or x != want:
        errors.append("%s.values = %r, want %d" % (where, x, want))

widths = [str(w) for w in range(1, 33)]
def width_table(obj, where):
    if keys(obj, widths, where):
        for w in widths:
            if keys(obj[w], ["pack_gvps", "unpack_gvps"], "%s.%s" % (where, w)):
                for k in ("pack_gvps", "unpack_gvps"):
                    rate(obj[w], k, "%s.%s" % (where, w))

if keys(d, ["values", "memcpy_gbps", "widths", "cache", "naive"] + (["streamvbyte"] if peers else []) + ["peers"],
        "top level"):
    if d["peers"] is not peers:
        errors.append("peers %r, want %r" % (d["peers"], peers))
    count(d, values, "top level")
    rate(d, "memcpy_gbps", "top level")
    width_table(d["widths"], "widths")
    if keys(d["cache"], ["values", "memcpy_gbps", "widths"], "cache"):
        count(d["cache"], cache_values, "cache")
        rate(d["cache"], "memcpy_gbps", "cache")
        width_table(d["cache"]["widths"], "cache.widths")
    if keys(d["naive"], ["10", "25"], "naive"):
        for w in ("10", "25"):
            if keys(d["naive"][w], ["pack_gvps", "unpack_gvps"], "naive." + w):
                for k in ("pack_gvps", "unpack_gvps"):
                    rate(d["naive"][w], k, "naive." + w)
    if peers and keys(d["streamvbyte"], ["encode_gvps", "decode_gvps"], "streamvbyte"):
        for k in ("encode_gvps", "decode_gvps"):
            rate(d["streamvbyte"], k, "streamvbyte")
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
PY
}

# 1. The JSON object, nothing on stderr (not a terminal: no progress line).
if section json_object; then
"$TROVE" bench bitpack --values 1048576 --cache-values 65536 --repeat 1 --json >"$tmp/b.json" 2>"$tmp/b.err"
check [ $? -eq 0 ]
check validate_json "$tmp/b.json" 1048576 65536
check [ ! -s "$tmp/b.err" ]
fi

# 2. Other sizes, including a cache size above the large one and the smallest of each.
if section other_sizes; then
"$TROVE" bench bitpack --values 1024 --cache-values 8192 --repeat 2 --json >"$tmp/s.json"
check [ $? -eq 0 ]
check validate_json "$tmp/s.json" 1024 8192
fi

# 3. The human table: the kernel's name, every width of both sizes, the peers.
if section human_table; then
"$TROVE" bench bitpack --values 65536 --cache-values 4096 --repeat 1 >"$tmp/table.txt"
check [ $? -eq 0 ]
check grep -Eq "FastLanes kernels \((avx2|generic)\)" "$tmp/table.txt"
check [ "$(grep -Ec '^(3[0-2]|[12][0-9]|[1-9]) ' "$tmp/table.txt")" -eq 64 ]
for k in "kernel w=10" "naive w=10" "kernel w=25" "naive w=25"; do
    check grep -q "^$k " "$tmp/table.txt"
done
if [ "$PEERS" = 1 ]; then
    check grep -Eq "^streamvbyte +[0-9]" "$tmp/table.txt"
else
    check_not grep -Eq "^streamvbyte +[0-9]" "$tmp/table.txt"
    check grep -q "streamvbyte is not in this build" "$tmp/table.txt"
fi
check grep -q "^kernel / naive:" "$tmp/table.txt"
fi

# 4. Help and errors: exit status, one line on stderr naming the command, nothing on stdout.
if section help_and_errors; then
"$TROVE" bench bitpack --help >"$tmp/help.txt"
check [ $? -eq 0 ]
check grep -q -- "--cache-values" "$tmp/help.txt"
"$TROVE" bench --help >"$tmp/help.txt"
check [ $? -eq 0 ]
check grep -q "bitpack" "$tmp/help.txt"
expect_error "bench bitpack" bench bitpack --bogus
expect_error "bench bitpack" bench bitpack --values 1000
expect_error "bench bitpack" bench bitpack --values 0
expect_error "bench bitpack" bench bitpack --values 26M
expect_error "bench bitpack" bench bitpack --values 1099511627776
expect_error "bench bitpack" bench bitpack --values
expect_error "bench bitpack" bench bitpack --cache-values 1025
expect_error "bench bitpack" bench bitpack --cache-values -1024
expect_error "bench bitpack" bench bitpack --repeat 0
expect_error "bench bitpack" bench bitpack --repeat x
expect_error "bench bitpack" bench bitpack --json extra

# TROVE_BITPACK_GENERIC selects the baseline kernels, which the bench verifies like the others
TROVE_BITPACK_GENERIC=1 "$TROVE" bench bitpack --values 65536 --cache-values 65536 --repeat 1 > "$tmp/generic.txt" 2>&1
check test $? -eq 0
check grep -q 'FastLanes kernels (generic)' "$tmp/generic.txt"
fi

finish
