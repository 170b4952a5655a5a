#!/usr/bin/env bash
# cli_viewer_big.sh: a large capture in the viewer — Debian's chromium, headless, driven by
# playwright-core (tests/browser/big_test.mjs says what it checks) — against a real
# `trove serve`: the page draws it from view frames and holds a bounded window of it. The
# capture is `trove gen`'s, piped into `trove import -`: 50 M events (about 30 s to make), 4 M
# under a sanitizer (TROVE_BIG_EVENTS sets it). Its screenshots are left in the build
# directory (big-whole.png, big-range.png, big-event.png).
# usage: cli_viewer_big.sh TROVE SOURCE_DIR
set -u
TROVE=$1
src=$2
. "$src/tests/support/lib_cli.sh"
need_python3
need_browser "$src"
events=50M
if ldd "$TROVE" 2> /dev/null | grep -qE 'lib(a|t)san'; then events=4M; fi
events=${TROVE_BIG_EVENTS:-$events}
# The page's JS heap after a collection, array buffers included: the overview and three
# frames of a 1400-pixel canvas, whatever the capture's size.
HEAP_MB=64
if section big; then
s=$tmp/store
"$TROVE" gen --events "$events" -q -o - | "$TROVE" import - --name big --store "$s" -q || bad "gen | import of $events events"
serve_start
artifacts=$(cd "$(dirname "$TROVE")" && pwd)
node "$src/tests/browser/big_test.mjs" "$url" big "$artifacts" "$HEAP_MB" "$src" 2>&1 | tail -30
check test "${PIPESTATUS[0]}" -eq 0
serve_stop
fi
finish
