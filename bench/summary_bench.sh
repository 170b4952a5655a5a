#!/usr/bin/env bash
# summary_bench.sh: what summaries cost and what they answer, on one gen capture of N events
# (docs/formats/summary.md, docs/formats/view.md; issue targets in docs/BENCHMARKS.md):
#   - `gen | import -` with and without summaries: wall and CPU seconds, peak RSS, side by
#     side, REPS times each (medians);
#   - the summaries' bytes against the rest of the capture's;
#   - a service on the capture (its peak RSS at the end): the whole capture's tracks, view
#     (px 1500) and stats; a zoom sweep of view answers, each range an eighth of the last,
#     centred, down to a microsecond (bytes and milliseconds each); stats of a one-second
#     range; the slowest instances of a name. Times are curl's time_total on loopback,
#     median of REPS;
#   - 4 pages in chromium opening it at once and browsing it (bench/page_bench.mjs): the
#     first complete draw, each zoom step, the JS heap, the service's peak RSS.
# usage: summary_bench.sh TROVE [EVENTS] [REPS]   (default 1G and 3; the store goes to $TMPDIR
# and is kept in $SUMMARY_BENCH_STORE if set, to be reused)
set -u
t=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
events=${2:-1G}
reps=${3:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/summary_bench.XXXXXX")
store=${SUMMARY_BENCH_STORE:-$tmp/s}
srv=
trap '[ -n "$srv" ] && kill "$srv" 2> /dev/null; rm -rf "$tmp"' EXIT
[ -x /usr/bin/time ] || { echo "summary_bench: /usr/bin/time is needed (Debian: time)"; exit 1; }
command -v curl > /dev/null || { echo "summary_bench: curl is needed"; exit 1; }

median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

if [ ! -d "$store/volumes" ] || ! "$t" ls --store "$store" 2> /dev/null | grep -q '^big '; then
    echo "gen | import - of $events events, with and without summaries ($reps each):"
    for r in $(seq 1 "$reps"); do
        for mode in with without; do
            flag=; [ $mode = without ] && flag=--no-summaries
            rm -rf "$tmp/m"
            "$t" gen --events "$events" -q |
                /usr/bin/time -f "%e %U %S %M" -o "$tmp/run.$mode.$r" "$t" import - --name big \
                    --store "$tmp/m" -q $flag || exit 1
        done
    done
    for mode in with without; do
        cat "$tmp/run.$mode".* | awk '{print $1}' | median > "$tmp/$mode.wall"
        cat "$tmp/run.$mode".* | awk '{print $2 + $3}' | median > "$tmp/$mode.cpu"
        cat "$tmp/run.$mode".* | awk '{print $4 / 1024}' | median > "$tmp/$mode.rss"
        printf '  %-8s wall %8.2f s  cpu %8.2f s  peak RSS %8.1f MB\n' "$mode" \
            "$(cat "$tmp/$mode.wall")" "$(cat "$tmp/$mode.cpu")" "$(cat "$tmp/$mode.rss")"
    done
    awk -v a="$(cat "$tmp/with.wall")" -v b="$(cat "$tmp/without.wall")" \
        -v c="$(cat "$tmp/with.cpu")" -v d="$(cat "$tmp/without.cpu")" \
        'BEGIN {printf "  with/without: wall %.2fx, cpu %.2fx\n", a / b, c / d}'
    mkdir -p "$store"
    rm -rf "$store"
    mv "$tmp/m" "$store"
fi
"$t" index big --store "$store" --json > "$tmp/index.json" || exit 1
"$t" ls --store "$store" --json > "$tmp/ls.json" || exit 1
python3 - "$tmp/index.json" "$tmp/ls.json" << 'EOF'
import json, sys
i = json.load(open(sys.argv[1])); c = [c for c in json.load(open(sys.argv[2])) if c["name"] == "big"][0]
rest = c["stored_bytes"] - i["summary_bytes"]
print("summaries: %d objects, %d bytes beside %d bytes of capture: %.1f %%" %
      (i["summaries"], i["summary_bytes"], rest, 100.0 * i["summary_bytes"] / rest))
EOF

"$t" serve --store "$store" --listen 127.0.0.1:0 > "$tmp/serve.out" 2> "$tmp/serve.err" &
srv=$!
for _ in $(seq 1 600); do grep -q "listening on" "$tmp/serve.out" && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http[^,]*\),.*/\1/p' "$tmp/serve.out")
url=${url%/}
[ -n "$url" ] || { echo "summary_bench: the service did not start"; exit 1; }
# ask PATH: median time (ms) of REPS and the answer's bytes
ask() {
    for _ in $(seq 1 "$reps"); do
        curl -s -o "$tmp/body" -w '%{time_total} %{size_download} %{http_code}\n' "$url$1"
    done > "$tmp/ask"
    awk '$3 != 200 {bad = 1} END {exit bad}' "$tmp/ask" || { echo "  $1: not 200"; return; }
    printf '  %-72s %9.1f ms %10d bytes\n' "$1" \
        "$(awk '{print $1 * 1000}' "$tmp/ask" | median)" "$(tail -1 "$tmp/ask" | awk '{print $2}')"
}
read -r first end < <("$t" ls --store "$store" --json | python3 -c '
import json, sys
c = [c for c in json.load(sys.stdin) if c["name"] == "big"][0]; print(c["first_ns"], c["end_ns"])')
echo "answers (median of $reps, loopback):"
ask /api/captures/big/tracks
ask "/api/captures/big/view?px=1500&names=0"
ask "/api/captures/big/stats?limit=20"
lo=$first hi=$end
while [ $((hi - lo)) -gt 1000 ]; do
    span=$(((hi - lo) / 8)); mid=$(((lo + hi) / 2))
    lo=$((mid - span / 2)); hi=$((mid + span / 2))
    ask "/api/captures/big/view?from_ns=$lo&to_ns=$hi&px=1500&names=0"
done
mid=$(((first + end) / 2))
ask "/api/captures/big/stats?from_ns=$mid&to_ns=$((mid + 1000000000))&limit=20"
ask "/api/captures/big/events?name=zone_0&order=dur_desc&limit=10"
grep VmHWM "/proc/$srv/status" | awk '{printf "service peak RSS: %.1f MB\n", $2 / 1024}'
# the page: 4 pages open the capture at once and browse it (bench/page_bench.mjs)
src=$(cd "$(dirname "$0")/.." && pwd)
if command -v node > /dev/null && [ -x "${TROVE_CHROMIUM:-/usr/bin/chromium}" ] &&
    [ -f "$src/tests/browser/node_modules/playwright-core/package.json" ]; then
    echo "the page (4 at once, 8 zoom steps each and back out):"
    node "$src/bench/page_bench.mjs" "$url/" big 4 8 "$srv" ||
        echo "  the page bench failed"
else
    echo "the page: skipped (needs node, chromium and playwright-core: make deps deps-npm)"
fi
kill "$srv"
wait "$srv" 2> /dev/null
srv=
