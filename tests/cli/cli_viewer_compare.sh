#!/usr/bin/env bash
# cli_viewer_compare.sh: the viewer's compare view (#compare=A,B: the diff table, a name's
# two histograms overlaid, two timelines on one time axis) in a real browser (Debian's
# chromium, headless, playwright-core: tests/browser/compare_test.mjs says what it checks)
# against a real `trove serve` holding two `trove gen` captures: the same model with one
# name slowed (`trove gen --slow zone_3=1.5`), or, with a gen that has no --slow, two seeds.
# The table is checked against `trove diff A B --json`. The screenshots it takes are saved
# in the test's temp dir (KEEP=1 keeps it).
# usage: cli_viewer_compare.sh TROVE SOURCE_DIR [SHARED_DATA_DIR]
set -u
TROVE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
. "$src/tests/support/lib_cli.sh"
need_python3
need_browser "$src"
[ -n "${KEEP:-}" ] && trap '[ -n "${srv_pid:-}" ] && kill -9 $srv_pid 2>/dev/null; echo "kept $tmp"' EXIT
s=$tmp/store
if "$TROVE" gen --help 2>&1 | grep -q -- '--slow'; then b_opts=(--seed 5 --slow zone_3=1.5); else b_opts=(--seed 6); fi
"$TROVE" gen --events 200000 --seed 5 --names 50 -o "$tmp/a.packed" -q || bad "gen a"
"$TROVE" gen --events 200000 --names 50 "${b_opts[@]}" -o "$tmp/b.packed" -q || bad "gen b (${b_opts[*]})"
"$TROVE" import "$tmp/a.packed" --store "$s" --name base -q || bad "import base"
"$TROVE" import "$tmp/b.packed" --store "$s" --name slow -q || bad "import slow"
"$TROVE" diff base slow --store "$s" --json > "$tmp/diff.json" 2> "$tmp/diff.err" || bad "trove diff base slow: $(cat "$tmp/diff.err")"

if section browser; then
serve_start
# the service's answer is the CLI's (the contract: the same JSON)
curl -sf "${url}api/diff?a=base&b=slow" > "$tmp/diff-api.json" || bad "GET /api/diff"
check test "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows"])' "$tmp/diff.json")" = \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows"])' "$tmp/diff-api.json")"
node "$src/tests/browser/compare_test.mjs" "$url" base slow "$tmp/diff.json" zone_3 "$tmp" 2>&1 | tail -40
check test "${PIPESTATUS[0]}" -eq 0
for f in all only aligned dark missing; do check test -s "$tmp/compare-$f.png"; done
serve_stop
fi
finish
