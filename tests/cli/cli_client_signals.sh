#!/usr/bin/env bash
# cli_client_signals.sh: the example program (trove-example-sort, libtrove-client) stopped by
# SIGTERM at a moment of its run, thirty times, with no service to send to. Each round
# starts four worker threads, and the client starts its flush thread: a process-directed
# signal handled on a thread that is just starting ran, under TSan, before the sanitizer
# knew the thread, which faulted on a null read ("SEGV on unknown address 0x000000000000",
# then "nested bug in the same thread") about once in twenty runs on a loaded machine. The
# workers now block the stop signals and the flush thread blocks every signal; this loop is
# in the TSan suite (Makefile, TSAN_TESTS). Every run must end by its handler (status 0)
# and account for every event it recorded: events == sent + dropped, nothing sent.
# usage: cli_client_signals.sh TROVE SOURCE_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
example=$(dirname "$trove")/trove-example-sort
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
unset TROVE_STORE
[ -x "$example" ] || { echo "skip: $example is not built"; exit 77; }
trap 'rm -rf "$tmp"' EXIT

# SIGTERM at a varying moment of each run: status 0, every recorded event accounted for.
if section sigterm; then
runs=30
for i in $(seq 1 $runs); do
    TROVE_SOCKET=$tmp/nowhere.sock "$example" 50000 -r 0 > "$tmp/run.out" 2> "$tmp/run.err" &
    pid=$!
    # Wait until the program catches SIGTERM (bit 15 of SigCgt), then a varying moment more.
    for _ in $(seq 1 500); do
        cgt=$(awk '$1 == "SigCgt:" {print $2}' "/proc/$pid/status" 2> /dev/null)
        [ -n "$cgt" ] && [ $((0x$cgt >> 14 & 1)) = 1 ] && break
        sleep 0.02
    done
    sleep "0.$((i % 9 + 1))"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    if [ "$rc" != 0 ] || [ -s "$tmp/run.err" ]; then
        bad "run $i: status $rc: $(head -c 1500 "$tmp/run.err")"
        continue
    fi
    read -r _ _ _ recorded _ _ sent _ dropped _ < "$tmp/run.out"
    check test "$sent" = 0
    check test "$recorded" = "$dropped"
done
fi

finish
