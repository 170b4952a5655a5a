#!/usr/bin/env bash
# cli_ci.sh: the CI job of docs/ci.md, its script taken from the document as it is written
# (between its ci-script markers) and run against a real S3 server (tests/s3/up.sh):
#   - the first run of a branch (the client library's example program as the benchmark)
#     finds no baseline, passes and, with UPDATE_BASELINE=1, becomes the baseline on S3
#   - a branch whose benchmark is `trove gen --live` (fixed seed): its first run becomes the
#     baseline; the same run again passes (nothing changed); a run with zone_3 made 1.5
#     times slower exits 3, the table marks zone_3 and the JSON says failed, and the
#     baseline stays the last good run
# usage: cli_ci.sh TROVE SOURCE_DIR [SHARED_DATA_DIR]
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
example=$(dirname "$trove")/trove-example-sort
[ -x "$example" ] || { echo "skipped: no trove-example-sort beside $trove"; exit 77; }

up_out=$("$src/tests/s3/up.sh")
rc=$?
[ $rc -eq 77 ] && { echo "skipped: Swift is not installed (make deps)"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: tests/s3/up.sh exited $rc"; exit 1; }
eval "$up_out"
trap '"$src/tests/s3/down.sh" "$TROVE_S3_DIR"; rm -rf "$tmp"' EXIT

# the script, from the document
python3 - "$src/docs/ci.md" "$tmp/perf-gate.sh" << 'EOF' || bad "no script between the ci-script markers of docs/ci.md"
import re, sys
doc = open(sys.argv[1]).read()
m = re.search(r"<!-- ci-script:begin -->\n```sh\n(.*?)```\n<!-- ci-script:end -->", doc, re.S)
open(sys.argv[2], "w").write(m.group(1))
EOF
export PATH="$(dirname "$trove"):$PATH"
export BASELINE_STORE=s3://trove-ci/perf
gate() { (cd "$tmp" && sh "$tmp/perf-gate.sh") > "$tmp/gate.out" 2>&1; }
names() { "$trove" ls --store "$BASELINE_STORE" --json | python3 -c 'import json,sys; print(" ".join(c["name"] for c in json.load(sys.stdin)))'; }

# the client library's program, a branch's first run
BENCH="trove-example-sort 200000 -r 2 -c sort" BRANCH=main UPDATE_BASELINE=1 gate
check test $? -eq 0
check grep -q "no baseline-main in $BASELINE_STORE yet" "$tmp/gate.out"
check grep -q "baseline-main is now this run" "$tmp/gate.out"
check test "$(names)" = "baseline-main"
"$trove" stats baseline-main --store "$BASELINE_STORE" --json > "$tmp/sort.json" || bad "stats of the baseline"
json "$tmp/sort.json" 'any(r["name"] == "round" and r["count"] == 2 for r in j["rows"])'

# a deterministic benchmark: its first run, the same again, then one with zone_3 slower
live='trove gen --live bench --rate 100000 --seconds 1 --seed 3 --names 200 --socket "$TROVE_SOCKET" -q'
BENCH="$live" BRANCH=gen UPDATE_BASELINE=1 gate
check test $? -eq 0
check grep -q "baseline-gen is now this run" "$tmp/gate.out"
BENCH="$live" BRANCH=gen UPDATE_BASELINE=1 gate
check test $? -eq 0
json "$tmp/perf.json" 'not j["failed"] and not any(r["significant"] for r in j["rows"]) and j["rows"]'
BENCH="$live --slow zone_3=1.5" BRANCH=gen UPDATE_BASELINE=1 gate
check test $? -eq 3
check grep -q "^zone_3 .* slower \*$" "$tmp/perf.txt"
check grep -q "^trove diff: --fail-if 'p99 > +10%': zone_3 p99" "$tmp/perf.txt"
json "$tmp/perf.json" 'j["failed"] and j["rows"][0]["name"] == "zone_3" and "zone_3" in [x["name"] for x in j["fail_if"][0]["rows"]]'
check test "$(names)" = "baseline-gen baseline-main"
# the baseline is still the good run: the same again passes
BENCH="$live" BRANCH=gen gate
check test $? -eq 0
finish
