#!/usr/bin/env bash
# cli_sample.sh: `trove record NAME -- CMD` and `trove record NAME --pid PID` sample a
# program with two known hot functions (trove-test-hot: hot_alpha and hot_beta in
# tests/support/sample_hot_work.c, built with frame pointers and DWARF) for about a second at
# 999 Hz: its top two functions by self samples are those two, with their source file;
# the --out profile is consistent (frames and stacks deduplicated, parents before
# children, every sample's stack a row) and its own top functions agree with --top; the
# usage errors are one line each; `trove bench sample` runs small. Skipped (77) only when the kernel refuses
# perf_event_open (kernel.perf_event_paranoid, or a container without it).
# usage: cli_sample.sh TROVE SOURCE_DIR
set -u
TROVE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
hot=$(dirname "$TROVE")/trove-test-hot
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
[ -x "$hot" ] || { echo "skip: $hot is not built"; exit 77; }

need_sampling

# -- CMD: the top two by self samples are the two hot functions, in their file.
exits 0 "$TROVE" record hot --top 2 --json --out "$tmp/p.json" -- "$hot" --seconds 1
cp "$tmp/out" "$tmp/top.json"
if section command; then
json "$tmp/top.json" 'j["samples"] > 100 and j["threads"] == 2 and j["lost"] == 0'
json "$tmp/top.json" 'j["exit_status"] == 0 and j["event"] in ("task-clock", "cycles") and j["hz"] == 999'
json "$tmp/top.json" 'len(j["top"]) == 2 and sorted(t["function"] for t in j["top"]) == ["hot_alpha", "hot_beta"]'
json "$tmp/top.json" 'all(t["file"].endswith("/sample_hot_work.c") and t["module"].endswith("/trove-test-hot") for t in j["top"])'
# Together they hold most of the samples (the rest: the loop around them, the clock).
json "$tmp/top.json" 'sum(t["self"] for t in j["top"]) >= 0.8 * j["samples"]'
fi

# The profile written with it: counts agree, the tables are deduplicated and well formed,
# and the top functions computed from it again are the ones printed.
if section profile; then
cat > "$tmp/check.py" << 'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
top = json.load(open(sys.argv[2]))
frames, stacks, samples = p["frames"], p["stacks"], p["samples"]
assert p["format"] == "trove-profile" and p["version"] == 1 and p["clock"] == "CLOCK_MONOTONIC"
assert len(samples) == top["samples"] and len(frames) == top["frames"] and len(stacks) == top["stacks"]
assert [f["id"] for f in frames] == list(range(len(frames)))
assert len({(f["module"], f["address"], f["inline_depth"]) for f in frames}) == len(frames)
assert [s["id"] for s in stacks] == list(range(1, len(stacks) + 1))
assert all(0 <= s["parent"] < s["id"] and 0 <= s["frame"] < len(frames) for s in stacks)
assert len({(s["parent"], s["frame"]) for s in stacks}) == len(stacks)
assert all(0 <= s["stack"] <= len(stacks) for s in samples)
assert [s["time_ns"] for s in samples] == sorted(s["time_ns"] for s in samples)
assert len({s["tid"] for s in samples}) == 2 and len({s["pid"] for s in samples}) == 1
assert {t["tid"] for t in p["threads"]} >= {s["tid"] for s in samples}
# self and total per (module, function), as trove_profile_top counts them
self, total = {}, {}
for s in samples:
    at, seen, leaf = s["stack"], set(), True
    while at:
        row = stacks[at - 1]
        f = frames[row["frame"]]
        key = (f["module"], f["function"])
        if leaf:
            self[key] = self.get(key, 0) + 1
            leaf = False
        if key not in seen:
            seen.add(key)
            total[key] = total.get(key, 0) + 1
        at = row["parent"]
for t in top["top"]:
    key = (t["module"], t["function"])
    assert self[key] == t["self"] and total[key] == t["total"], (key, self[key], total[key], t)
best = sorted(self.items(), key=lambda kv: -kv[1])[:2]
assert sorted(k[1] for k, _ in best) == ["hot_alpha", "hot_beta"], best
# the hot functions' frames: their file and a line, not inlined
for f in frames:
    if f["function"] in ("hot_alpha", "hot_beta"):
        assert f["file"].endswith("/sample_hot_work.c") and f["line"] > 0 and f["inline_depth"] == 0
# each hot function is called from run(), which main or start_thread called
names = {frames[r["frame"]]["function"] for r in stacks}
assert "run" in names and "main" in names, names
print("profile ok:", len(frames), "frames", len(stacks), "stacks", len(samples), "samples")
EOF
check python3 "$tmp/check.py" "$tmp/p.json" "$tmp/top.json"
fi

# The text table.
if section text_table; then
exits 0 "$TROVE" record hot --top 3 -q -- "$hot" --seconds 0.3
check grep -q "hot_alpha .*sample_hot_work.c .*trove-test-hot" "$tmp/out"
check grep -q "hot_beta .*sample_hot_work.c .*trove-test-hot" "$tmp/out"
check test "$(wc -l < "$tmp/out")" = 4
check test ! -s "$tmp/err"
fi

# --pid: a process already running, both its threads, for a second.
if section pid; then
"$hot" --seconds 30 &
hot_pid=$!
sleep 0.3
exits 0 "$TROVE" record hot --pid "$hot_pid" --seconds 1 --top 2 --json
json "$tmp/out" 'j["pid"] == '"$hot_pid"' and j["samples"] > 50 and j["threads"] == 2'
json "$tmp/out" 'sorted(t["function"] for t in j["top"]) == ["hot_alpha", "hot_beta"]'
json "$tmp/out" '"exit_status" not in j'
kill -0 "$hot_pid" 2> /dev/null && ok || bad "the sampled process did not survive"
kill "$hot_pid" 2> /dev/null
wait "$hot_pid" 2> /dev/null
fi

# --seconds ends a command that runs longer: SIGTERM, reported.
if section command_ends; then
exits 0 "$TROVE" record hot --seconds 0.3 --top 1 --json -- "$hot" --seconds 30
json "$tmp/out" 'j["signal"] == 15 and j["seconds"] < 10'
# A command's exit status is reported; a failing command is not trove's failure.
exits 0 "$TROVE" record x --top 1 --json -- sh -c 'exit 5'
json "$tmp/out" 'j["exit_status"] == 5'
fi

# trove bench sample, small: the keys and the counts (no timing is asserted).
if section bench; then
exits 0 "$TROVE" bench sample --runs 1 --units 50 --samples 1000 --json
json "$tmp/out" 'j["runs"] == 1 and j["units"] == 50 and j["symbolized"] == 1000 and j["samples_per_run"] > 0'
json "$tmp/out" 'j["frames"] >= 2 and j["stacks"] >= 2 and j["distinct_addresses"] >= 2 and j["lost"] == 0'
json "$tmp/out" 'all(j[k] > 0 for k in ("plain_s", "sampled_s", "wall_ratio", "cold_s", "warm_s"))'
expect_error "bench sample" bench sample --runs 0
expect_error "bench sample" bench sample --program /nonexistent/prog
fi

# --help names both forms and the permissions document.
if section help; then
exits 0 "$TROVE" record --help
check grep -q -- "--pid PID" "$tmp/out"
check grep -q -- "-- CMD" "$tmp/out"
check grep -q "perf_event_paranoid" "$tmp/out"
check grep -q -- "--from IN" "$tmp/out"
fi

# Usage errors: one line each, nothing on stdout.
if section usage_errors; then
expect_error record record --top 1
expect_error record record x -- 
expect_error record record x --top 1
expect_error record record x --pid 1 --top 1 -- true
expect_error record record x -- true
expect_error record record x --hz 0 --top 1 -- true
expect_error record record x --seconds -1 --top 1 -- true
expect_error record record x --event bogus --top 1 -- true
expect_error record record 'bad/name' --top 1 -- true
expect_error record record x --top 1 --bogus -- true
expect_error record record x --pid 2147483000 --top 1
expect_error record record x --top 1 -- /nonexistent/no-such-command
check grep -q "cannot run /nonexistent/no-such-command" "$tmp/e.err"
expect_error record record x --out /nonexistent/dir/p.json -- true
fi
finish
