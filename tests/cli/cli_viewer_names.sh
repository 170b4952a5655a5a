#!/usr/bin/env bash
# cli_viewer_names.sh: the viewer's rows tell threads apart — a name shared by threads of a
# process gets each one's tid ("sorter 0 (4242)") — in a real browser (Debian's chromium,
# headless, playwright-core: tests/browser/names_test.mjs says what it checks), on the
# capture the example program (libtrove-client) records into a real `trove serve`. The
# screenshot it takes is saved in the test's temp dir (KEEP=1 keeps it).
# usage: cli_viewer_names.sh TROVE SOURCE_DIR
set -u
TROVE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
example=$(dirname "$TROVE")/trove-example-sort
. "$src/tests/support/lib_cli.sh"
need_python3
need_browser "$src"
[ -x "$example" ] || { echo "skip: $example is not built"; exit 77; }
[ -n "${KEEP:-}" ] && trap '[ -n "${srv_pid:-}" ] && kill -9 $srv_pid 2>/dev/null; echo "kept $tmp"' EXIT
if section names; then
s=$tmp/store
serve_start
TROVE_SOCKET=$sock "$example" 200000 -r 2 -c names > "$tmp/run.out" 2> "$tmp/run.err" || bad "the example: $(cat "$tmp/run.err")"
for _ in $(seq 1 1200); do # until the service has closed the capture
    curl -s "${url}api/captures/names" > "$tmp/info.json" 2> /dev/null
    json_check "$tmp/info.json" 'not j["live"] and j["events"] > 0' 2> /dev/null && break
    sleep 0.1
done
"$TROVE" export store:names --store "$s" --format chrome-json -o "$tmp/names.json" -q || bad "export of the capture"
node "$src/tests/browser/names_test.mjs" "$url" names "$tmp/names.json" "$tmp" 2>&1 | tail -20
check test "${PIPESTATUS[0]}" -eq 0
check test -s "$tmp/names-screenshot.png"
serve_stop
fi
finish
