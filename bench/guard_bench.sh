#!/usr/bin/env bash
# guard_bench.sh: `trove serve` under hostile load, the figures docs/RELIABILITY.md
# ("Security") records, side by side in one run on loopback:
#   1. a replay of a 2 M-event capture over the API (`trove replay --url -o /dev/null`),
#      median of ROUNDS runs: alone; beside 3,000 idle connections and 1,000 CONNECTs held
#      (opened once); beside the same reopened as fast as the service closes them (churn)
#   2. a live capture at 1 M events/s for 10 s with a viewer (the default 8 MiB queue),
#      beside the churn: the viewer's drops and the events committed, RUNS times
#   3. the abuse mix for 10 s — the live capture and its viewer, the churn, 200 stalled
#      replays and 20 stalled exports, a producer flooding names to its bound — the
#      service's peak RSS and threads, RUNS times
#   4. the same live capture under `ulimit -n 1024` beside 1,200 connections: committed
# usage: guard_bench.sh TROVE [ROUNDS] [RUNS]
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
rounds=${2:-5}
runs=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
peer="$here/../tests/support/guard_peer.py"
tmp=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
g() { python3 "$peer" "$@"; }
now() { date +%s.%N; }
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

start() { # start [ulimit] [serve options]: the service on $tmp/s; sets $srv $url $port
    local lim=$1
    shift
    : > "$tmp/serve.out"
    (ulimit -n "$lim" && exec "$trove" serve --store "$tmp/s" --listen 127.0.0.1:0 -q "$@") \
        > "$tmp/serve.out" 2> "$tmp/serve.err" &
    srv=$!
    for _ in $(seq 1 100); do grep -q "listening on" "$tmp/serve.out" && break; sleep 0.1; done
    url=$(sed -n 's/.*listening on \(http[^,]*\),.*/\1/p' "$tmp/serve.out")
    port=${url##*:}
    port=${port%/}
}
stop() { kill -TERM "$srv"; wait "$srv"; srv=; }
status() { curl -s "${url}api/status" > "$tmp/st.json"; python3 -c "import json, sys; j = json.load(open(sys.argv[1])); print($1)" "$tmp/st.json"; }
replay_time() {
    local t0 t1
    t0=$(now)
    "$trove" replay big --url "$url" -o /dev/null 2> /dev/null || echo "guard_bench: a replay failed" >&2
    t1=$(now)
    echo "$t1 - $t0" | bc -l
}
sampler() { # sampler OUT: VmRSS (KiB) and threads of $srv, every 50 ms, until killed
    while kill -0 "$srv" 2> /dev/null; do
        awk '/^VmRSS|^Threads/ {print $2}' "/proc/$srv/status" 2> /dev/null | paste -sd' '
        sleep 0.05
    done > "$1"
}
peaks() { awk 'NF == 2 {if ($1 > r) r = $1; if ($2 > t) t = $2} END {printf "%d MiB, %d threads", r / 1024, t}' "$1"; }
live() { # live NAME SECONDS: a viewer and a producer at 1 M/s; prints "sent committed dropped"
    "$trove" watch "$1" --url "$url" --json --seconds 120 > "$tmp/watch.json" 2> /dev/null &
    local w=$!
    sleep 0.3
    "$trove" gen --live "$1" --socket "$tmp/s/trove.sock" --rate 1000000 --seconds "$2" --json \
        > "$tmp/gen.json" 2> /dev/null
    wait $w
    local sent
    sent=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["events"])' "$tmp/gen.json")
    for _ in $(seq 1 100); do
        [ "$(status "[c['committed_events'] for c in j['captures'] if c['name'] == '$1']")" = "[$sent]" ] && break
        sleep 0.1
    done
    echo "$sent $(status "[c['committed_events'] for c in j['captures'] if c['name'] == '$1'][0]") $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["dropped_events"])' "$tmp/watch.json")"
}

"$trove" gen -o "$tmp/big.wire" --events 2000000 --seed 4 --names 2000 -q || exit 1
"$trove" import "$tmp/big.wire" --store "$tmp/s" --name big -q || exit 1
rm -f "$tmp/big.wire"

# ---- 1. replay alone and beside the connections ----
start 20000
: > "$tmp/alone"; : > "$tmp/held"; : > "$tmp/churn"
for _ in $(seq 1 "$rounds"); do replay_time >> "$tmp/alone"; done
g flood "$port" 9 3000 1000 "$tmp/f1.json" 0 &
f=$!
sleep 1.5
for _ in $(seq 1 "$rounds"); do replay_time >> "$tmp/held"; done
wait $f
g flood "$port" 20 3000 1000 "$tmp/f2.json" 1 &
f=$!
sleep 1.5
for _ in $(seq 1 "$rounds"); do replay_time >> "$tmp/churn"; done
kill $f 2> /dev/null; wait $f 2> /dev/null
for _ in $(seq 1 "$rounds"); do replay_time >> "$tmp/alone"; done
a=$(median < "$tmp/alone"); h=$(median < "$tmp/held"); c=$(median < "$tmp/churn")
printf '%-58s %8s %8s\n' "replay of 2 M events over the API (median of $rounds, s)" time "x alone"
printf '%-58s %8.3f %8.3f\n' "alone (median of $((2 * rounds)), before and after)" "$a" 1
printf '%-58s %8.3f %8.3f\n' "beside 3,000 idle + 1,000 CONNECT held" "$h" "$(echo "$h / $a" | bc -l)"
printf '%-58s %8.3f %8.3f\n' "beside the same reopened as closed (churn)" "$c" "$(echo "$c / $a" | bc -l)"

# ---- 2. and 3. live at 1 M/s beside the churn; the abuse mix ----
echo
printf '%-10s %-28s %10s %10s %8s %s\n' run "beside" sent committed dropped "peak"
for r in $(seq 1 "$runs"); do
    sampler "$tmp/s2" &
    smp=$!
    g flood "$port" 13 3000 1000 "$tmp/f3.json" 1 &
    f=$!
    sleep 1
    set -- $(live "l$r" 10)
    kill $smp; wait $smp 2> /dev/null
    wait $f
    printf '%-10s %-28s %10s %10s %8s %s\n' "$r" "churn" "$1" "$2" "$3" "$(peaks "$tmp/s2")"
    sampler "$tmp/s3" &
    smp=$!
    g flood "$port" 14 3000 1000 "$tmp/f4.json" 1 &
    f=$!
    g stall "$port" 200 '/api/replay?capture=big' 1 12 "$tmp/st-r.json" &
    sr=$!
    g stall "$port" 20 '/api/captures/big/export?format=bundle' 0 12 "$tmp/st-x.json" &
    sx=$!
    python3 "$here/../tests/support/serve_peer.py" flood "$tmp/s/trove.sock" "names$r" 100 > /dev/null &
    sn=$!
    sleep 1
    set -- $(live "m$r" 10)
    wait $sr $sx $f $sn
    kill $smp; wait $smp 2> /dev/null
    printf '%-10s %-28s %10s %10s %8s %s\n' "$r" "churn + stalls + names flood" "$1" "$2" "$3" "$(peaks "$tmp/s3")"
done
stop

# ---- 4. ulimit -n 1024 ----
start 1024
echo
echo "ulimit -n 1024: max_connections $(status 'j["limits"]["max_connections"]')"
g flood "$port" 12 1100 100 "$tmp/f5.json" 1 &
f=$!
sleep 1
set -- $(live tight 10)
wait $f
echo "live at 1 M/s beside 1,200 reopened connections: sent $1, committed $2, viewer dropped $3;" \
    "refused $(status 'j["web"]["refused"]'), evicted $(status 'j["web"]["evicted"]'), EMFILE in the log: $(grep -c 'Too many open files' "$tmp/serve.err")"
stop
