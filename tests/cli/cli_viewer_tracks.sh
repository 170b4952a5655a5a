#!/usr/bin/env bash
# cli_viewer_tracks.sh: the viewer's tracks (collapse, async groups, filter, pin, the layout
# in the URL and in local storage), flow arrows and counter rows in a real browser (Debian's
# chromium, headless, playwright-core: tests/browser/tracks_test.mjs says what it checks),
# against a real `trove serve` with the sample Chrome trace and a small Chrome JSON of
# counters the test writes, both imported through the service. The screenshots of each state
# are saved in the test's temp dir (KEEP=1 keeps it).
# usage: cli_viewer_tracks.sh TROVE SOURCE_DIR
set -u
TROVE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
. "$src/tests/support/lib_cli.sh"
need_python3
need_browser "$src"
sample=${TROVE_SHARED_DATA:-$src/../shared/data}/chrome-trace-dom.json.zst
if [ ! -f "$sample" ] || ! command -v zstd > /dev/null 2>&1; then
    echo "skipped: needs zstd and the sample trace $sample"
    exit 77
fi
[ -n "${KEEP:-}" ] && trap '[ -n "${srv_pid:-}" ] && kill -9 $srv_pid 2>/dev/null; echo "kept $tmp"' EXIT
if section tracks; then
s=$tmp/store
serve_start
zstd -dc "$sample" > "$tmp/dom.json" || bad "zstd -dc $sample"
node "$src/tests/browser/tracks_test.mjs" write-counters "$tmp/counters.json" || bad "writing the counter trace"
for f in dom counters; do
    curl -s -X POST -H 'Content-Type: application/octet-stream' --data-binary "@$tmp/$f.json" \
        "${url}api/captures/import?name=$f" > "$tmp/$f.import" || bad "importing $f"
    json_check "$tmp/$f.import" 'j["events"] > 0' || bad "the import of $f: $(cat "$tmp/$f.import")"
done
node "$src/tests/browser/tracks_test.mjs" "$url" dom counters "$tmp" 2>&1 | tail -40
check test "${PIPESTATUS[0]}" -eq 0
for p in tracks-default tracks-collapsed tracks-one-open tracks-filtered tracks-pinned tracks-pinned-all \
    tracks-restored tracks-jumped flows-selected flows-all flows-jumped counter-hover-in counter-hover-out; do
    check test -s "$tmp/$p.png"
done
serve_stop
fi
finish
