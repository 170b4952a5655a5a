#!/usr/bin/env bash
# cli_viewer_shell.sh: the viewer's shell — the view in the URL, the keys and their overlay,
# the themes, what the page says of a missing capture and a stopped service, a live
# capture's samples, frames decoded on a worker — in Debian's chromium, headless, driven by
# playwright-core against a real `trove serve` on loopback: tests/browser/shell_test.mjs
# says what it checks. The store holds the sample Chrome trace (as `dom`, from the shared
# data directory) and `trove gen` captures of 200,000 and 20,000 events (`gen`, `small`). The test stops the
# service itself (its banner is one of the states); the screenshots of every state are left
# in the build directory (shell-*.png).
# usage: cli_viewer_shell.sh TROVE SOURCE_DIR [SHARED_DATA_DIR]
set -u
TROVE=$1
src=$2
data=${3:-$src/../shared/data}
. "$src/tests/support/lib_cli.sh"
need_python3
need_browser "$src"
trace=$data/chrome-trace-dom.json.zst
if [ ! -f "$trace" ] || ! command -v zstd > /dev/null 2>&1; then
    echo "skipped: needs $trace and zstd"
    exit 77
fi
if section shell; then
s=$tmp/store
zstd -dc "$trace" > "$tmp/dom.json"
"$TROVE" import "$tmp/dom.json" --store "$s" --name dom -q 2> /dev/null
check test $? -eq 0
"$TROVE" gen -o "$tmp/gen.packed" --events 200000 -q
"$TROVE" import "$tmp/gen.packed" --store "$s" --name gen -q
check test $? -eq 0
"$TROVE" gen -o "$tmp/small.packed" --events 20000 -q
"$TROVE" import "$tmp/small.packed" --store "$s" --name small -q
check test $? -eq 0
serve_start
artifacts=$(cd "$(dirname "$TROVE")" && pwd)
node "$src/tests/browser/shell_test.mjs" "$TROVE" "$url" "$s" "$srv_pid" "$src" "$artifacts" 2>&1 | tail -40
rc=${PIPESTATUS[0]}
check test "$rc" -eq 0
# the test stops the service itself (unless it failed before): its exit status must be 0
serve_stop
fi
finish
