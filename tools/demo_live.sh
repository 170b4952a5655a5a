#!/usr/bin/env bash
# demo_live.sh: the live part of `make demo` — trove serve on a fresh store, the sample trace
# recorded into it in real time by two producers (two pids, one timeline) while `trove watch`
# shows what a viewer receives, and next to it a real program instrumented with
# libtrove-client (examples/sort.c, a parallel sort in rounds) recording its own zones into
# a capture of its own; then the captures listed, replayed and exported. The store is
# DIR/store, where `make demo` then adds the trace as a capture too, and ends by printing the
# one command that serves them all.
# usage: demo_live.sh TROVE TRACE DIR   (DEMO_SECONDS: stop after that many seconds, default
# 8; 0 keeps the service running until Ctrl-C)
set -u
trove=$1
trace=$2
dir=$3
secs=${DEMO_SECONDS:-8}
store=$dir/store
rm -rf "$store"
mkdir -p "$dir"
pids=()
stop_all() {
    for p in "${pids[@]}"; do kill -INT "$p" 2> /dev/null; done
}
trap 'stop_all' INT

"$trove" serve --store "$store" --listen 127.0.0.1:0 > "$dir/serve.out" 2> "$dir/serve.err" &
serve=$!
for _ in $(seq 1 100); do
    grep -q "listening on" "$dir/serve.out" 2> /dev/null && break
    sleep 0.1
done
url=$(sed -n 's/.*listening on \(http[^,]*\),.*/\1/p' "$dir/serve.out")
if [ -z "$url" ]; then
    echo "demo: trove serve did not start: $(cat "$dir/serve.err")" >&2
    exit 1
fi
echo "trove serve is up: $url (GET ${url}api/status), producers on $store/trove.sock"
echo "the live capture in the viewer, while the demo records: open ${url}#capture=demo"
echo "(the demo ends by printing the command that serves its captures again)"

"$trove" watch demo --url "$url" -o "$dir/live.wire" &
watch=$!
sleep 0.3
for pid in 1001 1002; do
    "$trove" record demo --from "$trace" --rate realtime --pid $pid -q --store "$store" &
    pids+=($!)
done
example=$(dirname "$trove")/trove-example-sort
if [ -x "$example" ]; then
    TROVE_SOCKET=$store/trove.sock "$example" 1000000 -r 0 -c sort > "$dir/sort.out" &
    sorter=$!
fi
if [ "$secs" = 0 ]; then
    echo "(recording; Ctrl-C stops the demo)"
    wait "${pids[@]}" 2> /dev/null
    wait $watch 2> /dev/null
else
    end=$((SECONDS + secs))
    while [ $SECONDS -lt $end ] && kill -0 "${pids[@]}" 2> /dev/null; do sleep 0.2; done
    stop_all
    wait "${pids[@]}" 2> /dev/null
    wait $watch
fi
if [ -n "${sorter:-}" ]; then
    kill -INT "$sorter" 2> /dev/null
    wait "$sorter"
    echo "the instrumented program (trove-example-sort): $(cat "$dir/sort.out")"
fi
echo "status of the capture while the service runs:"
python3 - "$url" << 'EOF'
import json, sys, urllib.request
s = json.load(urllib.request.urlopen(sys.argv[1] + "api/status", timeout=5))
for c in s["captures"]:
    print(f"  {c['name']}: {c['state']}, {c['events']:,} events, {c['bytes_stored']:,} bytes stored, "
          f"{c['commits']} commits")
EOF
kill -TERM $serve
wait $serve
echo
echo "the capture in the store: listed, replayed and exported like any other"
"$trove" ls --store "$store"
"$trove" replay demo --store "$store" -o "$dir/live.replayed" --wire packed
"$trove" export --capture demo --store "$store" -o "$dir/live.bundle"
n_watch=$("$trove" cat "$dir/live.wire" 2> /dev/null | wc -l)
n_store=$("$trove" cat "$dir/live.replayed" 2> /dev/null | wc -l)
echo "the viewer received $n_watch events; the store holds $n_store"
if [ -n "${sorter:-}" ]; then
    echo "the program's first round, as its capture holds it (start ns, duration ns, pid, tid,"
    echo "kind, depth, extra, name [thread]):"
    "$trove" cat store:sort --store "$store" |
        grep -m 9 -E ' 0 (round|fill|parallel sort|sort quarter|final merge) \['
fi
