#!/usr/bin/env bash
# soak.sh: `make soak` — the live service under load for SOAK_SECONDS (default 600), then a
# report of what went in, what was committed and what viewers got. On its own temp store,
# socket and port it runs:
#   - `trove serve` (-q), its RSS, open fds and threads (/proc/PID) and its /api/status
#     sampled every SOAK_SAMPLE_S seconds (default 2) into samples.csv and status.jsonl
#   - SOAK_PRODUCERS producer processes (default 4) of libtrove-client sharing SOAK_RATE
#     events/s (default 1,000,000) into capture "soak" (`trove bench soak produce`: every
#     other event a counter holding the producer's sequence number)
#   - SOAK_VIEWERS viewers that join and leave: one-second sessions back to back, each a new
#     WebSocket, the wire format rotating, every SOAK_FROM_START_EVERY-th from=start
#     (default 10) (`trove bench soak view`), a loop every half second apart
#   - one stalled viewer (connects, upgrades, never reads; bench/soak.py stall)
#   - a garbage producer every 10 s, seven kinds in turn (bench/soak.py garbage)
#   - kill -9 of the service at half time and a restart on the same store and port: the
#     producers' client reconnects and appends, the viewers come back
# and at the end stops everything (producers first, so that they flush), SIGTERMs the
# service, reads the capture back (`trove bench soak check`), runs `trove verify --deep`
# and writes the report (bench/soak.py report: printed, and DIR/report.json).
# SOAK_KILL=0 runs without the kill. SOAK_DIR=DIR keeps the run's files there (default: a
# new /tmp/trove-soak-XXXXXX, which is kept: it holds the report); the store is removed
# at the end unless SOAK_KEEP_STORE=1.
# usage: soak.sh TROVE
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
secs=${SOAK_SECONDS:-600}
rate=${SOAK_RATE:-1000000}
nprod=${SOAK_PRODUCERS:-4}
nview=${SOAK_VIEWERS:-1}
sample=${SOAK_SAMPLE_S:-2}
from_start_every=${SOAK_FROM_START_EVERY:-10}
do_kill=${SOAK_KILL:-1}
dir=${SOAK_DIR:-$(mktemp -d /tmp/trove-soak-XXXXXX)}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
store=$dir/store
sock=$store/trove.sock
# Warm-up: 10 % of the run, at most 60 s (of each life of the service).
warmup=$((secs / 10 < 60 ? secs / 10 : 60))
# The peers run as `python3 "$py" ...` directly, never through a function: a background
# function is a subshell, and killing its pid would leave the python process running.
py=$here/soak.py
say() { printf '[%6.1f s] %s\n' "$(awk -v a="$EPOCHREALTIME" -v b="${t0:-$EPOCHREALTIME}" 'BEGIN{print a-b}')" "$*"; }
sleep_until() {
    local d
    d=$(awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{d=a-b; if (d < 0) d = 0; printf "%.3f", d}')
    sleep "$d"
}
at() { awk -v a="$t0" -v b="$1" 'BEGIN{printf "%.3f", a+b}'; }

rm -rf "$store" "$dir"/*.jsonl "$dir"/*.port "$dir"/samples.csv "$dir"/report.json
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
srv=
life=0
pids_all=()
cleanup() {
    for p in "${pids_all[@]}"; do kill -9 "$p" 2> /dev/null; done
    [ -n "$srv" ] && kill -9 "$srv" 2> /dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# serve_up: the service on $store and $port; sets srv and url, writes service.pid for the
# monitor.
serve_up() {
    life=$((life + 1))
    : > "$dir/serve$life.out"
    "$trove" serve --store "$store" --listen "127.0.0.1:$port" -q > "$dir/serve$life.out" 2> "$dir/serve$life.err" &
    srv=$!
    for _ in $(seq 1 600); do
        grep -q "listening on" "$dir/serve$life.out" 2> /dev/null && break
        kill -0 "$srv" 2> /dev/null || break
        sleep 0.1
    done
    url=$(sed -n 's/.*listening on \(http[^,]*\),.*/\1/p' "$dir/serve$life.out")
    if [ -z "$url" ]; then
        echo "soak: trove serve (life $life) did not start: $(cat "$dir/serve$life.err")" >&2
        exit 1
    fi
    echo "$srv $url $EPOCHREALTIME" > "$dir/service.pid"
}
stall_up() {
    python3 "$py" stall "$url" soak "$dir/stall$life.port" 2> "$dir/stall$life.err" &
    stall=$!
    pids_all+=("$stall")
}

t0=$EPOCHREALTIME
serve_up
say "trove serve (pid $srv) on $url, store $store; $secs s at $rate events/s from $nprod producers"
python3 "$py" monitor "$dir/service.pid" "$dir/samples.csv" "$dir/status.jsonl" "$sample" &
monitor=$!
pids_all+=("$monitor")
prods=()
for k in $(seq 0 $((nprod - 1))); do
    "$trove" bench soak produce --socket "$sock" --capture soak --rate $((rate / nprod)) \
        > "$dir/producer$k.jsonl" 2> "$dir/producer$k.err" &
    prods+=($!)
done
pids_all+=("${prods[@]}")
sleep 0.5
stall_up
views=()
for v in $(seq 1 "$nview"); do
    "$trove" bench soak view --url "$url" --capture soak --session-ms 1000 \
        --from-start-every "$from_start_every" > "$dir/viewer$v.jsonl" 2> "$dir/viewer$v.err" &
    views+=($!)
    sleep 0.5
done
pids_all+=("${views[@]}")
(
    kinds=(random bad-name not-json long-line frames huge-frame truncated)
    child=
    trap '[ -n "$child" ] && kill "$child" 2> /dev/null; exit 0' TERM
    i=0
    while :; do
        sleep 10 & child=$!; wait $child
        python3 "$py" garbage "$sock" soak "${kinds[i % ${#kinds[@]}]}" >> "$dir/garbage.jsonl" 2>> "$dir/garbage.err" &
        child=$!
        wait $child
        child=
        i=$((i + 1))
    done
) &
garbage=$!
pids_all+=("$garbage")

t_kill=0
t_restart=0
rc_first=
if [ "$do_kill" = 1 ]; then
    sleep_until "$(at $((secs / 2)))"
    t_kill=$EPOCHREALTIME
    kill -9 "$srv"
    wait "$srv" 2> /dev/null
    rc_first=$?
    : > "$dir/service.pid"
    say "kill -9 of the service (exit $rc_first)"
    kill "$stall" 2> /dev/null
    wait "$stall" 2> /dev/null
    sleep 1 # the producers find the connection gone; their counters stop
    "$trove" ls --store "$store" --json > "$dir/ls_at_kill.json" 2> "$dir/ls_at_kill.err"
    t_restart=$EPOCHREALTIME
    serve_up
    say "restarted (pid $srv) on the same store and port"
    stall_up
fi

sleep_until "$(at "$secs")"
t_stop=$EPOCHREALTIME
say "stopping: the garbage, then the producers (they flush), the viewers, the service"
kill "$garbage" 2> /dev/null
wait "$garbage" 2> /dev/null
for p in "${prods[@]}"; do kill -TERM "$p" 2> /dev/null; done
for p in "${prods[@]}"; do wait "$p" || say "producer $p exited $?"; done
sleep 2 # the last producer gone, the capture commits and closes; viewers get its end
for p in "${views[@]}" "$stall"; do kill -TERM "$p" 2> /dev/null; done
for p in "${views[@]}" "$stall"; do wait "$p" 2> /dev/null; done
sleep "$sample"
kill -TERM "$monitor"
wait "$monitor"
kill -TERM "$srv"
wait "$srv"
rc_last=$?
[ -z "$rc_first" ] && rc_first=$rc_last
srv=
say "service stopped (exit $rc_last); reading the capture back and verifying the store"
"$trove" ls --store "$store" --json > "$dir/ls_end.json" 2> "$dir/ls_end.err"
"$trove" bench soak check --store "$store" --capture soak > "$dir/check.json" 2> "$dir/check.err" ||
    say "check failed: $(cat "$dir/check.err")"
"$trove" verify --deep --json --store "$store" > "$dir/verify.json" 2> "$dir/verify.err"
say "verify --deep exit $?"
cat > "$dir/meta.env" <<EOF
COMMAND=SOAK_SECONDS=$secs SOAK_RATE=$rate SOAK_PRODUCERS=$nprod SOAK_VIEWERS=$nview make soak
SOAK_SECONDS=$secs
SOAK_RATE=$rate
PRODUCERS=$nprod
WARMUP=$warmup
SAMPLE_S=$sample
T0=$t0
T_KILL=$t_kill
T_RESTART=$t_restart
T_STOP=$t_stop
SERVE_RC_FIRST=$rc_first
SERVE_RC_LAST=$rc_last
EOF
du -sh "$store" | awk '{print "store size: " $1}'
[ "${SOAK_KEEP_STORE:-0}" = 1 ] || rm -rf "$store"
pids_all=()
python3 "$py" report "$dir"
