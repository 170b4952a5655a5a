#!/usr/bin/env bash
# cli_client_stop.sh: a program instrumented with libtrove-client (tests/support/client_stop.c)
# accounts for every event it records while services stop under it. Its counters add up in
# every line it prints (events == sent + dropped + pending); the service is stopped
# (SIGTERM) mid-run, started again, killed (-9), started again: the client reconnects each
# time and appends to its capture, and the events it lost meanwhile reach the capture as the
# "trove.dropped" gap, whose last value is the final dropped count. After
# trove_client_stop, events == sent + dropped exactly, with nothing pending, whether a
# service is there at the stop or not. /api/status's figures of the producer add up too.
# usage: cli_client_stop.sh TROVE SOURCE_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
prog=$(dirname "$trove")/trove-test-client-stop
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
unset TROVE_STORE TROVE_SOCKET
[ -x "$prog" ] || { echo "skip: $prog is not built"; exit 77; }
need_python3

s=$tmp/s
srv_pid=
p_pid=
trap '[ -n "$srv_pid" ] && kill -9 $srv_pid 2>/dev/null; [ -n "$p_pid" ] && kill -9 $p_pid 2>/dev/null; rm -rf "$tmp"' EXIT

# The program's last "stats" line as "events sent dropped pending connected".
last() { awk '$1 == "stats" {l = $3 " " $5 " " $7 " " $9 " " $11} END {print l}' "$1"; }
# Wait until the program's last line satisfies the awk condition on e s d p c.
wait_for() {
    local file=$1 cond=$2
    for _ in $(seq 1 1200); do
        if last "$file" | awk "{e = \$1; s = \$2; d = \$3; p = \$4; c = \$5} END {exit !(NF && ($cond))}"; then
            return 0
        fi
        sleep 0.05
    done
    bad "$file never came to '$cond': $(last "$file")"
    return 1
}
# Every line the program printed adds up: events == sent + dropped + pending.
all_add_up() {
    awk '$1 == "stats" || $1 == "final" {n++; if ($3 != $5 + $7 + $9) {bad++; print "bad line: " $0}}
         END {if (!n || bad) exit 1}' "$1"
}
run_prog() { # CAPTURE OUT
    TROVE_SOCKET=$s/trove.sock "$prog" "$1" > "$2" 2> "$2.err" &
    p_pid=$!
}
stop_prog() { # OUT: SIGTERM, wait, the final line as "events sent dropped pending"
    kill -TERM "$p_pid"
    wait "$p_pid" || bad "the program failed: $(cat "$1.err")"
    p_pid=
}
final() { awk '$1 == "final" {print $3, $5, $7, $9}' "$1"; }

# 1. SIGTERM, start again, kill -9, start again, then the program stops with a service.
if section sigterm; then
serve_start --commit-ms 100
run_prog stop "$tmp/p1"
wait_for "$tmp/p1" 'c == 1 && s > 0'
# The service's figures for this producer add up while it runs.
curl -sf "${url}api/status" > "$tmp/status1.json" || bad "GET /api/status"
json "$tmp/status1.json" '[p["events"] > 0 and p["events"] == p["published"] + p["dropped"] + p["queued"]
                          for p in j["connections"] if p["kind"] == "producer" and p["capture"] == "stop"] == [True]'
serve_stop
wait_for "$tmp/p1" 'c == 0 && d > 0'
dropped_down=$(last "$tmp/p1" | awk '{print $3}')
serve_start --commit-ms 100
wait_for "$tmp/p1" 'c == 1'
kill -9 "$srv_pid"
wait "$srv_pid" 2> /dev/null
srv_pid=
wait_for "$tmp/p1" "c == 0 && d > $dropped_down"
serve_start --commit-ms 100
wait_for "$tmp/p1" 'c == 1 && s > 0'
stop_prog "$tmp/p1"
read -r ev1 sent1 drop1 pend1 <<< "$(final "$tmp/p1")"
check test -n "$ev1"
check test "$pend1" = 0
check test "$((sent1 + drop1))" = "$ev1"
check test "$drop1" -gt "$dropped_down"
check all_add_up "$tmp/p1"
serve_stop
"$TROVE" cat store:stop --store "$s" > "$tmp/cat1.txt" 2> "$tmp/cat1.err" || bad "cat: $(cat "$tmp/cat1.err")"
# The gap reached the services that came back: its last value is the final dropped count.
# (A running total: the largest is the last.)
check test "$(awk '$8 == "trove.dropped" && $2 + 0 > v + 0 {v = $2} END {print v}' "$tmp/cat1.txt")" = "$drop1"
# What the store holds was sent (some of it lost with the killed service: at most that).
ticks=$(awk '$8 == "tick"' "$tmp/cat1.txt" | wc -l)
check test "$ticks" -gt 0
check test "$ticks" -le "$sent1"
# The process is named by the program, its thread as the program said.
check grep -q ' tick \[main\]' "$tmp/cat1.txt"
fi

# 2. The service stops (SIGTERM) and the program stops while none is there: what the ring
#    held is dropped, not left uncounted.
if section service_stops; then
serve_start --commit-ms 100
run_prog alone "$tmp/p2"
wait_for "$tmp/p2" 'c == 1 && s > 0'
serve_stop
wait_for "$tmp/p2" 'c == 0 && p > 0'
stop_prog "$tmp/p2"
read -r ev2 sent2 drop2 pend2 <<< "$(final "$tmp/p2")"
check test -n "$ev2"
check test "$pend2" = 0
check test "$((sent2 + drop2))" = "$ev2"
check all_add_up "$tmp/p2"
fi

# 3. The CLI's producers, their service stopped mid-run: the last line adds up, events ==
#    sent + dropped, and says what was not sent (the command fails).
# Wait until capture $1 has published events in the service's status.
if section cli_producers; then
wait_published() {
    for _ in $(seq 1 1200); do
        curl -s "${url}api/status" > "$tmp/st.json" 2> /dev/null
        json_check "$tmp/st.json" "[c['published'] > 0 for c in j['connections']
                                    if c['kind'] == 'producer' and c['capture'] == '$1'][:1] == [True]" 2> /dev/null &&
            return 0
        sleep 0.05
    done
    bad "capture $1 never published"
}
serve_start
"$TROVE" gen --live gl --rate 20000 --seconds 60 --socket "$sock" --json > "$tmp/gl.json" 2> "$tmp/gl.err" &
g_pid=$!
wait_published gl
serve_stop
wait "$g_pid" && bad "gen --live ended 0 with its service stopped"
json "$tmp/gl.json" 'j["events"] == 1200000 and j["sent"] > 0 and j["dropped"] > 0' \
    'j["events"] == j["sent"] + j["dropped"] and j["failed"]'

serve_start
"$TROVE" gen -o "$tmp/g.wire" --events 400000 -q
"$TROVE" record rf --from "$tmp/g.wire" --rate 20000 --socket "$sock" > "$tmp/rf.out" 2> "$tmp/rf.err" &
r_pid=$!
wait_published rf
serve_stop
wait "$r_pid" && bad "record --from ended 0 with its service stopped"
line=$(grep '^trove record: [0-9]* events:' "$tmp/rf.err")
read -r ev sent drop <<< "$(echo "$line" | sed -n 's/^trove record: \([0-9]*\) events: \([0-9]*\) sent to capture rf, \([0-9]*\) dropped.*/\1 \2 \3/p')"
check test "$ev" = 400000
check test "$drop" -gt 0
check test "$((sent + drop))" = "$ev"
fi

finish
