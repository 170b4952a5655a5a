#!/usr/bin/env bash
# cli_viewer.sh: the viewer in a real browser — Debian's chromium, headless, driven by
# playwright-core (tests/browser/, from its committed lockfile: make deps-npm) — against a
# real `trove serve` on loopback: tests/browser/viewer_test.mjs says what it checks. The
# screenshot it takes is left in the build directory (viewer-screenshot.png).
# usage: cli_viewer.sh TROVE SOURCE_DIR
set -u
TROVE=$1
src=$2
. "$src/tests/support/lib_cli.sh"
need_python3
need_browser "$src"
if section viewer; then
s=$tmp/store
serve_start
artifacts=$(cd "$(dirname "$TROVE")" && pwd)
node "$src/tests/browser/viewer_test.mjs" "$TROVE" "$url" "$s" "$src" "$artifacts" 2>&1 | tail -40
check test "${PIPESTATUS[0]}" -eq 0
serve_stop
fi
finish
