#!/usr/bin/env bash
# cli_client.sh: libtrove-client against the real service. The example program
# (trove-example-sort, a parallel merge sort instrumented with the client's macros) records
# into `trove serve` over its unix socket; the capture it leaves in the store holds its
# zones, nested and named, its thread names and its counter. Without a service the program
# runs to completion just the same.
# usage: cli_client.sh TROVE SOURCE_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
example=$(dirname "$trove")/trove-example-sort
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
unset TROVE_STORE TROVE_SOCKET
[ -x "$example" ] || { echo "skip: $example is not built"; exit 77; }

s=$tmp/s
srv_pid=
trap '[ -n "$srv_pid" ] && kill -9 $srv_pid 2>/dev/null; rm -rf "$tmp"' EXIT

# The program recording into the service, and the capture it leaves in the store.
if section recording; then
"$trove" serve --store "$s" --listen 127.0.0.1:0 > "$tmp/serve.out" 2> "$tmp/serve.err" &
srv_pid=$!
for _ in $(seq 1 300); do
    grep -q "listening on" "$tmp/serve.out" 2> /dev/null && break
    sleep 0.1
done
check test -S "$s/trove.sock"

# The program, recording: every event it recorded was sent, none dropped.
TROVE_SOCKET=$s/trove.sock "$example" 200000 > "$tmp/run.out" 2> "$tmp/run.err" || bad "example failed: $(cat "$tmp/run.err")"
read -r _ keys _ recorded _ _ sent _ dropped _ < "$tmp/run.out"
check test "$keys" = 200000
check test "$recorded" -gt 100
check test "$recorded" = "$sent"
check test "$dropped" = 0

kill -TERM "$srv_pid"
wait "$srv_pid" && ok || bad "serve exited non-zero: $(head -c 2000 "$tmp/serve.err")"
srv_pid=

name=$("$trove" ls --store "$s" | awk '{print $1; exit}')
case "$name" in trove-example-*) ok ;; *) bad "capture name '$name'" ;; esac
"$trove" cat "store:$name" --store "$s" > "$tmp/cat.txt" 2> "$tmp/cat.err" || bad "cat: $(cat "$tmp/cat.err")"
check test "$(wc -l < "$tmp/cat.txt")" = "$recorded"
# Columns: start_ns dur_ns pid tid kind depth extra name [thread]
check test "$(grep -c ' sort quarter' "$tmp/cat.txt")" = 4
check test "$(grep -c ' final merge' "$tmp/cat.txt")" = 1
check test "$(grep ' sort quarter' "$tmp/cat.txt" | awk '{print $6}' | sort -u)" = 0
check test "$(grep -c ' msort' "$tmp/cat.txt")" -gt 4
check grep -q 'sorter 3' "$tmp/cat.txt"
check grep -q 'keys sorted' "$tmp/cat.txt"
# A merge inside a sort quarter is one level deeper than the msort that calls it.
check test "$(awk '$8 == "qsort" {print $6}' "$tmp/cat.txt" | sort -u | wc -l)" -ge 1
fi

# No service: the program finishes, nothing is sent.
if section no_service; then
TROVE_SOCKET=$tmp/nowhere.sock timeout 20 "$example" 200000 > "$tmp/run2.out" || bad "example without a service"
read -r _ _ _ recorded2 _ _ sent2 _ _ < "$tmp/run2.out"
check test "$sent2" = 0
check test "$recorded2" -gt 100
fi

# The service killed (-9) and started again mid-run: the client reconnects (a second
# connection, appending) and the capture goes on, holding rounds from before the kill and
# after the restart; what the kill cut off is counted as dropped and sent as a gap.
if section restart; then
s2=$tmp/s2
serve2() {
    "$trove" serve --store "$s2" --listen 127.0.0.1:0 --commit-ms 100 > "$tmp/serve2.out" 2> "$tmp/serve2.err" &
    srv_pid=$!
    for _ in $(seq 1 300); do
        grep -q "listening on" "$tmp/serve2.out" 2> /dev/null && return 0
        sleep 0.1
    done
    bad "serve did not start: $(cat "$tmp/serve2.err")"
}
stored() { "$trove" ls --store "$s2" 2> /dev/null | awk '$1 == "restart" {print $2}'; }
wait_stored_over() {
    for _ in $(seq 1 600); do
        n=$(stored)
        [ -n "$n" ] && [ "$n" -gt "$1" ] && return 0
        sleep 0.1
    done
    return 1
}
serve2
TROVE_SOCKET=$s2/trove.sock "$example" 100000 -r 0 -c restart > "$tmp/run3.out" 2> "$tmp/run3.err" &
ex_pid=$!
rounds_of() { awk '$8 == "rounds" {print $2}' "$1" | sort -n; }
first=
for _ in $(seq 1 600); do # until a committed round is in the store
    "$trove" cat store:restart --store "$s2" > "$tmp/cat2.txt" 2> /dev/null
    first=$(rounds_of "$tmp/cat2.txt" | head -1)
    [ -n "$first" ] && break
    sleep 0.1
done
check test -n "$first"
kill -9 "$srv_pid"
wait "$srv_pid" 2> /dev/null
before=$(stored)
serve2
wait_stored_over "$before" || bad "the capture did not go on after the restart"
kill -TERM "$ex_pid"
wait "$ex_pid" || bad "the example failed: $(cat "$tmp/run3.err")"
kill -TERM "$srv_pid"
wait "$srv_pid" || bad "serve exited non-zero: $(head -c 2000 "$tmp/serve2.err")"
srv_pid=
read -r _ _ _ rec3 _ _ sent3 _ drop3 _ rounds3 _ conns3 _ < "$tmp/run3.out"
check test "$conns3" -ge 2
check test "$rounds3" -ge 2
check test $((sent3 + drop3)) = "$rec3"
"$trove" cat store:restart --store "$s2" > "$tmp/cat3.txt" || bad "cat of the restarted capture"
total3=$(wc -l < "$tmp/cat3.txt")
check test "$total3" -gt "$before"
# The counter "rounds" counts 1, 2, ...: a round committed before the kill and the last
# round, recorded after the restart, are both in the capture.
check test "$(rounds_of "$tmp/cat3.txt" | head -1)" = "$first"
check test "$(rounds_of "$tmp/cat3.txt" | tail -1)" = "$rounds3"
if [ "$drop3" -gt 0 ]; then
    check test "$(awk '$8 == "trove.dropped" {print $2}' "$tmp/cat3.txt" | sort -n | tail -1)" = "$drop3"
fi
fi

finish
