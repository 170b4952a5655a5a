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
. "$(dirname "$0")/lib_cli.sh"
unset TROVE_STORE TROVE_SOCKET
[ -x "$example" ] || { echo "skip: $example is not built"; exit 77; }

s=$tmp/s
srv_pid=
trap '[ -n "$srv_pid" ] && kill -9 $srv_pid 2>/dev/null; rm -rf "$tmp"' EXIT
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

# No service: the program finishes, nothing is sent.
TROVE_SOCKET=$tmp/nowhere.sock timeout 20 "$example" 200000 > "$tmp/run2.out" || bad "example without a service"
read -r _ _ _ recorded2 _ _ sent2 _ _ < "$tmp/run2.out"
check test "$sent2" = 0
check test "$recorded2" -gt 100

finish
