#!/bin/bash
# cli_bench_recipe.sh: end-to-end test of `trove bench recipe`.
#
#   bash tests/cli/cli_bench_recipe.sh <trove-binary> <source-dir> <shared-data-dir>
#
# Runs the bench small (20,480 slots, one round) and checks its --json object: exactly the
# documented keys, in order; every size a positive integer and every time a positive finite
# number; the sizes consistent (v1 is 64 + 16 bytes per slot; v3 holds at least its
# dictionary chunks and column segments, and each chunk carries its 16-byte digests); v3
# below v1 wherever the data allows it, and a 1,000-slot v3 commit writing less than a v1
# one. The bench itself compares every load with what it serialized, so a zero exit also
# means v1 and v3 round-tripped in every case. Then the human table, --help, and one-line
# errors with a non-zero exit. No timing is asserted.
# Prints "N passed, N failed"; exits 1 if anything failed, 77 (skip) without python3.
set -u

TROVE=${1:?usage: cli_bench_recipe.sh <trove-binary> <source-dir> <shared-data-dir>}
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3

# validate_json FILE SLOTS
validate_json() {
    python3 - "$1" "$2" <<'PY'
import json, math, sys
path, slots = sys.argv[1], int(sys.argv[2])
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

def count(obj, k, where):
    x = obj[k]
    if not isinstance(x, int) or isinstance(x, bool) or x <= 0:
        errors.append("%s.%s = %r is not a positive integer" % (where, k, x))
        return False
    return True

def rate(obj, k, where):
    x = obj[k]
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x) or x <= 0:
        errors.append("%s.%s = %r is not a positive finite number" % (where, k, x))

cases = ["no_dedup", "half_empty", "dedup10", "dedup100", "distinct1024"]
case_keys = ["v1_bytes", "v3_bytes", "v3_dict_bytes", "v3_column_bytes", "v1_serialize_ms",
             "v3_serialize_ms", "v1_load_ms", "v3_load_ms"]
sizes_ok = True
if keys(d, ["slots", "memcpy_gbps", "cases", "commit_1000", "cli_commit_1000", "cli_commit_1",
           "cli_commit_1000_v1"], "top level"):
    if keys(d["cli_commit_1000_v1"], ["bytes_written", "ms", "volume_open_ms"], "cli_commit_1000_v1"):
        v1c = d["cli_commit_1000_v1"]
        for k in ["ms", "volume_open_ms"]:
            rate(v1c, k, "cli_commit_1000_v1")
        # v1 rewrites the whole recipe file: 56 + 16 per slot + 8 bytes at least
        if v1c["bytes_written"] < 64 + 16 * slots:
            errors.append("cli_commit_1000_v1 wrote %d bytes, less than a %d-slot v1 recipe"
                          % (v1c["bytes_written"], slots))
    if keys(d["cli_commit_1"], ["bytes_written", "ms", "manifest_bytes"], "cli_commit_1"):
        c1 = d["cli_commit_1"]
        count(c1, "bytes_written", "cli_commit_1")
        count(c1, "manifest_bytes", "cli_commit_1")
        rate(c1, "ms", "cli_commit_1")
        # one slot: a patch, a chunk, two pages and the pack index beside the manifest
        if not 0 < c1["bytes_written"] - c1["manifest_bytes"] <= 65536:
            errors.append("cli_commit_1 wrote %d bytes beside a %d-byte manifest, over 64 KiB"
                          % (c1["bytes_written"] - c1["manifest_bytes"], c1["manifest_bytes"]))
    phases = ["store_open_ms", "volume_open_ms", "commit_ms", "close_ms"]
    if keys(d["cli_commit_1000"], ["bytes_written", "ms"] + phases, "cli_commit_1000"):
        # open + 1,000 slots + commit + close writes at least the commit's own bytes
        count(d["cli_commit_1000"], "bytes_written", "cli_commit_1000")
        for k in ["ms"] + phases:
            rate(d["cli_commit_1000"], k, "cli_commit_1000")
        # no store-wide metadata: the whole command writes what the commit changed, < 1 MB
        if d["cli_commit_1000"]["bytes_written"] > 1000000:
            errors.append("cli_commit_1000 wrote %d bytes, over 1 MB"
                          % d["cli_commit_1000"]["bytes_written"])
        # (not compared with commit_1000, whose volume is loaded whole: there the replaced
        # digests' entries are freed and reused, rewriting their chunks; a lazily opened
        # volume appends instead, so it can write less)
        if d["cli_commit_1000"]["bytes_written"] <= d["cli_commit_1"]["bytes_written"]:
            errors.append("cli_commit_1000 wrote %d bytes, no more than cli_commit_1 (%d)"
                          % (d["cli_commit_1000"]["bytes_written"], d["cli_commit_1"]["bytes_written"]))
    if d["slots"] != slots or isinstance(d["slots"], bool):
        errors.append("slots = %r, want %d" % (d["slots"], slots))
    rate(d, "memcpy_gbps", "top level")
    if keys(d["cases"], cases, "cases"):
        for name in cases:
            c = d["cases"][name]
            if not keys(c, case_keys, "cases." + name):
                sizes_ok = False
                continue
            for k in case_keys[:4]:
                sizes_ok &= count(c, k, "cases." + name)
            for k in case_keys[4:]:
                rate(c, k, "cases." + name)
    else:
        sizes_ok = False
    if keys(d["commit_1000"], ["v1_bytes", "v3_bytes", "v1_ms", "v3_ms"], "commit_1000"):
        cm = d["commit_1000"]
        if count(cm, "v1_bytes", "commit_1000") and count(cm, "v3_bytes", "commit_1000"):
            # v1 rewrites the whole file; v3 the touched segments, chunks and pages.
            if cm["v1_bytes"] != 64 + 16 * slots:
                errors.append("commit_1000.v1_bytes %d, want the whole v1 file %d"
                              % (cm["v1_bytes"], 64 + 16 * slots))
            if not cm["v3_bytes"] < cm["v1_bytes"]:
                errors.append("commit_1000: v3 wrote %d bytes, not fewer than v1's %d"
                              % (cm["v3_bytes"], cm["v1_bytes"]))
        rate(cm, "v1_ms", "commit_1000")
        rate(cm, "v3_ms", "commit_1000")
else:
    sizes_ok = False

if sizes_ok:
    c = d["cases"]
    segments = (slots + 1023) // 1024
    for name in cases:
        x = c[name]
        if x["v1_bytes"] != 64 + 16 * slots:
            errors.append("%s: v1_bytes %d, want 64 + 16 * slots = %d" % (name, x["v1_bytes"], 64 + 16 * slots))
        if not x["v3_bytes"] >= x["v3_dict_bytes"] + x["v3_column_bytes"]:
            errors.append("%s: v3_bytes %d below dictionary %d + column %d"
                          % (name, x["v3_bytes"], x["v3_dict_bytes"], x["v3_column_bytes"]))
        # every packed segment has at least its 16-byte header and descriptor
        if not x["v3_column_bytes"] >= 16 or x["v3_column_bytes"] > segments * (16 + 4096):
            errors.append("%s: v3_column_bytes %d is not a plausible column of %d segments"
                          % (name, x["v3_column_bytes"], segments))
    # Dictionary sizes: u digests plus the reserved entry 0, 16 bytes each, plus headers.
    u = {"no_dedup": slots}
    if slots % 2048 == 0:  # half of the segments empty is then half of the slots
        u["half_empty"] = slots // 2
    for name, n in u.items():
        dict_min = 16 * (n + 1)
        if not dict_min <= c[name]["v3_dict_bytes"] <= dict_min + 8 * ((n + 1024) // 1024) + 64:
            errors.append("%s: v3_dict_bytes %d, want %d digests of 16 bytes plus chunk headers"
                          % (name, c[name]["v3_dict_bytes"], n + 1))
    # no_dedup: the column is IDENTITY, so v3 costs only its headers over v1 (under 1%).
    nd = c["no_dedup"]
    if not nd["v3_column_bytes"] <= segments * 64:
        errors.append("no_dedup: v3_column_bytes %d, not IDENTITY segments" % nd["v3_column_bytes"])
    if not nd["v1_bytes"] <= nd["v3_bytes"] <= nd["v1_bytes"] * 1.01:
        errors.append("no_dedup: v3_bytes %d not within 1%% above v1's %d" % (nd["v3_bytes"], nd["v1_bytes"]))
    # Wherever there are empties or dedup, v3 is below v1, and smaller as u shrinks.
    for name in cases[1:]:
        if not c[name]["v3_bytes"] < c[name]["v1_bytes"]:
            errors.append("%s: v3_bytes %d not below v1's %d" % (name, c[name]["v3_bytes"], c[name]["v1_bytes"]))
    if slots % 2048 == 0 and not c["half_empty"]["v3_bytes"] < 0.55 * c["half_empty"]["v1_bytes"]:
        errors.append("half_empty: v3_bytes %d is not about half of v1's %d"
                      % (c["half_empty"]["v3_bytes"], c["half_empty"]["v1_bytes"]))
    if not c["dedup100"]["v3_bytes"] < c["dedup10"]["v3_bytes"] < c["half_empty"]["v3_bytes"]:
        errors.append("v3_bytes not decreasing from half_empty to dedup10 to dedup100")
    if not c["dedup100"]["v3_dict_bytes"] < c["dedup10"]["v3_dict_bytes"]:
        errors.append("dedup100's dictionary is not smaller than dedup10's")
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
PY
}

# 1. The JSON object, nothing on stderr (not a terminal: no progress line).
if section json_object; then
"$TROVE" bench recipe --slots 20480 --json --dir "$tmp" >"$tmp/r.json" 2>"$tmp/r.err"
check [ $? -eq 0 ]
check validate_json "$tmp/r.json" 20480
check [ ! -s "$tmp/r.err" ]
# the temporary store is removed
check [ -z "$(ls -A "$tmp" | grep trove-bench-recipe)" ]
fi

# 2. A size that is not a multiple of 1024 (a short last segment and chunk), two rounds.
if section size_that_is; then
"$TROVE" bench recipe --slots 5000 --rounds 2 --json --dir "$tmp" >"$tmp/s.json"
check [ $? -eq 0 ]
check validate_json "$tmp/s.json" 5000
fi

# 3. The human table: every case, both commit rows, the targets.
if section human_table; then
"$TROVE" bench recipe --slots 4096 --rounds 1 --dir "$tmp" >"$tmp/table.txt"
check [ $? -eq 0 ]
for k in no_dedup half_empty dedup10 dedup100 distinct1024; do
    check [ "$(grep -c "^$k " "$tmp/table.txt")" -eq 2 ]
done
check grep -q "^durable " "$tmp/table.txt"
check grep -q "^nosync " "$tmp/table.txt"
check grep -q "^targets" "$tmp/table.txt"
fi

# 4. Help and errors: exit status, one line on stderr naming the command, nothing on stdout.
if section help_and_errors; then
"$TROVE" bench recipe --help >"$tmp/help.txt"
check [ $? -eq 0 ]
check grep -q -- "--slots" "$tmp/help.txt"
"$TROVE" bench --help >"$tmp/help.txt"
check [ $? -eq 0 ]
check grep -q "recipe" "$tmp/help.txt"
expect_error "bench recipe" bench recipe --bogus
expect_error "bench recipe" bench recipe --slots 1000
expect_error "bench recipe" bench recipe --slots 0
expect_error "bench recipe" bench recipe --slots x
expect_error "bench recipe" bench recipe --slots 1099511627776
expect_error "bench recipe" bench recipe --slots
expect_error "bench recipe" bench recipe --rounds 0
expect_error "bench recipe" bench recipe --rounds 101
expect_error "bench recipe" bench recipe --json extra
expect_error "bench recipe" bench recipe --slots 1024 --rounds 1 --dir "$tmp/no-such-dir"
fi

finish
