#!/usr/bin/env bash
# api_bench.sh: the service's HTTP API against the CLI on the same capture, side by side in
# one run (issue 19's targets): export over HTTP against `trove export --capture`, import
# over HTTP against `trove import --store`, and replay over WebSocket at speed=max against
# `trove replay -o /dev/null`. Medians of ROUNDS runs of each, timed with the shell's clock.
# usage: api_bench.sh TROVE TRACE [ROUNDS]
set -u
trove=$1
trace=$2
rounds=${3:-7}
tmp=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
command -v curl > /dev/null || { echo "api_bench: curl is needed"; exit 1; }

"$trove" import "$trace" --store "$tmp/s" --name trace -q || exit 1
"$trove" serve --store "$tmp/s" --listen 127.0.0.1:0 -q > "$tmp/serve.out" 2>&1 &
srv=$!
for _ in $(seq 1 100); do grep -q "listening on" "$tmp/serve.out" && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http[^,]*\),.*/\1/p' "$tmp/serve.out")
[ -n "$url" ] || { echo "api_bench: the service did not start"; exit 1; }

now() { date +%s.%N; }
# time_of CMD...: seconds the command takes
time_of() {
    local t0 t1
    t0=$(now)
    "$@" > /dev/null 2>&1 || echo "api_bench: failed: $*" >&2
    t1=$(now)
    echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

: > "$tmp/x_cli"; : > "$tmp/x_http"; : > "$tmp/i_cli"; : > "$tmp/i_http"
: > "$tmp/r_cli"; : > "$tmp/r_ws"
"$trove" export "$trace" -o "$tmp/body.bundle" -q
for r in $(seq 1 "$rounds"); do
    time_of "$trove" export --capture trace --store "$tmp/s" -o "$tmp/cli.bundle" -q >> "$tmp/x_cli"
    time_of curl -sf -o "$tmp/http.bundle" "${url}api/captures/trace/export" >> "$tmp/x_http"
    cmp -s "$tmp/cli.bundle" "$tmp/http.bundle" || echo "api_bench: the exports differ" >&2
    # a new name each round in both stores: the objects are there after the first round in
    # both, so both pay the same parse and the same lookups
    time_of "$trove" import "$tmp/body.bundle" --store "$tmp/s2" --name "c$r" -q >> "$tmp/i_cli"
    time_of curl -sf -o /dev/null -H "Expect:" -H "Content-Type: application/octet-stream" \
        --data-binary @"$tmp/body.bundle" \
        "${url}api/captures/import?name=h$r" >> "$tmp/i_http"
    time_of "$trove" replay trace --store "$tmp/s" -o /dev/null >> "$tmp/r_cli"
    if "$trove" replay --help 2>&1 | grep -q -- '--url'; then
        time_of "$trove" replay trace --url "$url" -o /dev/null >> "$tmp/r_ws"
    fi
done
xc=$(median < "$tmp/x_cli"); xh=$(median < "$tmp/x_http")
ic=$(median < "$tmp/i_cli"); ih=$(median < "$tmp/i_http")
rc=$(median < "$tmp/r_cli")
printf '%-34s %10s %10s %8s\n' "medians of $rounds rounds (s)" CLI API "API/CLI"
printf '%-34s %10.4f %10.4f %8.3f\n' "export (bundle)" "$xc" "$xh" "$(echo "$xh / $xc" | bc -l)"
printf '%-34s %10.4f %10.4f %8.3f\n' "import (a bundle)" "$ic" "$ih" "$(echo "$ih / $ic" | bc -l)"
if [ -s "$tmp/r_ws" ]; then
    rw=$(median < "$tmp/r_ws")
    printf '%-34s %10.4f %10.4f %8.3f\n' "replay to /dev/null (speed=max)" "$rc" "$rw" \
        "$(echo "$rw / $rc" | bc -l)"
fi
