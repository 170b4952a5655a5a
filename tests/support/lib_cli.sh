# lib_cli.sh: what the CLI tests (tests/cli/cli_*.sh) share, sourced by each: pass and fail
# counters, check CMD... (a passed or failed check; check_not: one that must fail), a temp dir removed at exit, a skip
# (exit 77) without python3, exits and json (an exit status; Python assertions about a
# JSON file), section (the parts TROVE_CASE picks), and finish, which prints "N passed, N
# failed" and sets the exit status. Not a test itself (ctest globs tests/cli/cli_*.sh).
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if "$@"; then ok; else bad "$*"; fi; }
check_not() { if "$@"; then bad "not: $*"; else ok; fi; }
# need_duck SRC: TOOL is tools/duckdb/duckdb_tool.mjs and have_duck 1 when node and the
# tool's node_modules are there; else have_duck 0 with a note (a failure under CI, where
# `make deps-npm` must have installed them).
need_duck() {
    TOOL="$1/tools/duckdb/duckdb_tool.mjs"
    have_duck=1
    if ! command -v node >/dev/null 2>&1 || [ ! -d "$1/tools/duckdb/node_modules/@duckdb/node-api" ]; then
        have_duck=0
        if [ -n "${CI:-}" ]; then
            bad "node or tools/duckdb/node_modules missing under CI (make deps-npm installs them)"
        else
            echo "note: DuckDB checks skipped (node or tools/duckdb/node_modules missing; make deps-npm)"
        fi
    fi
}
# need_sampling: the kernel lets us sample (a refusal is the one reason to skip: exit 77).
need_sampling() {
    if ! "$TROVE" record probe --top 1 -q -- true > "$tmp/probe.out" 2> "$tmp/probe.err"; then
        if grep -q "refused by the kernel" "$tmp/probe.err"; then
            echo "skipped: $(cat "$tmp/probe.err")"
            exit 77
        fi
        bad "sampling /bin/true failed: $(cat "$tmp/probe.err")"
    fi
}
need_python3() {
    if ! command -v python3 > /dev/null 2>&1; then
        echo "skipped: python3 not found"
        exit 77
    fi
}
# need_browser SOURCE_DIR: skip (77) unless node, chromium ($TROVE_CHROMIUM, else Debian's)
# and the browser tests' playwright-core are there; sets $chromium.
need_browser() {
    chromium=${TROVE_CHROMIUM:-/usr/bin/chromium}
    if ! command -v node > /dev/null 2>&1 || [ ! -x "$chromium" ] ||
        [ ! -f "$1/tests/browser/node_modules/playwright-core/package.json" ]; then
        echo "skipped: needs node, $chromium and playwright-core (make deps deps-npm)"
        exit 77
    fi
}
# section NAME: whether the part of the script it opens runs, as `if section NAME; then`
# ... `fi` under the part's heading (the body is not indented, so that the history of its
# lines stays theirs). With TROVE_CASE unset or empty every part runs; else only the parts it
# names (separated by spaces or commas), as in `TROVE_CASE=verify bash tests/cli/cli_store.sh
# ...`. What is outside the parts (setup, helpers) always runs, and a part may use what an
# earlier one made: name both then. A name no part has makes finish list them and exit 2;
# the parts are the script's `if section NAME; then` lines, whether or not the run reached
# them (a script may finish early, as cli_install.sh does in a sanitized build).
sections=
section() {
    sections="$sections $1"
    [ -z "${TROVE_CASE:-}" ] && return 0
    case " ${TROVE_CASE//,/ } " in *" $1 "*) return 0 ;; esac
    return 1
}
finish() {
    local want picked=${TROVE_CASE:-} name
    for name in $(sed -n 's/^if section \([A-Za-z0-9_]*\); then$/\1/p' "$0" 2> /dev/null); do
        case "$sections " in *" $name "*) ;; *) sections="$sections $name" ;; esac
    done
    for want in ${picked//,/ }; do
        case "$sections " in
        *" $want "*) ;;
        *)
            echo "$(basename "$0"): no section named $want; its sections:${sections:- none}" >&2
            exit 2
            ;;
        esac
    done
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
# expect_error NAME ARGS...: `$TROVE ARGS` fails with nothing on stdout and exactly one
# line on stderr that starts "trove NAME: " (the CLI's error form).
expect_error() {
    local name=$1 rc
    shift
    "$TROVE" "$@" >"$tmp/e.out" 2>"$tmp/e.err"
    rc=$?
    if [ $rc -ne 0 ] && [ ! -s "$tmp/e.out" ] && [ "$(wc -l <"$tmp/e.err")" -eq 1 ] &&
        grep -q "^trove $name: " "$tmp/e.err"; then
        ok
    else
        bad "trove $* (rc $rc, stdout: $(head -c 200 "$tmp/e.out"), stderr: $(cat "$tmp/e.err"))"
    fi
}
# exits N CMD...: CMD exits with status N (its stdout in $tmp/out, stderr in $tmp/err).
exits() {
  local want=$1 got
  shift
  "$@" > "$tmp/out" 2> "$tmp/err"
  got=$?
  if [ "$got" -eq "$want" ]; then ok; else bad "exit $got, not $want: $* ($(head -c 300 "$tmp/err"))"; fi
}
# json [--lines] [--zip MEMBER] FILE EXPR...: a check that each Python EXPR holds of the JSON
# in FILE (as j; - is stdin); json_get FILE EXPR prints a value of it; json_check is the bare
# test, for a loop that waits. All three are tests/support/json_check.py, which says more.
lib_cli_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
json_check() { python3 "$lib_cli_dir/json_check.py" "$@"; }
json_get() { json_check --get "$@"; }
json() { check json_check "$@"; }
tmp=$(mktemp -d)
trap '[ -n "${srv_pid:-}" ] && kill -9 $srv_pid 2>/dev/null; rm -rf "$tmp"' EXIT
# serve_start [ARGS]: `$TROVE serve` on store $s, any free loopback port, in the
# background; sets $srv_pid and $url (and $sock, the producers' socket). Up to 2 minutes: a
# loaded CI machine's fsyncs can be slow; on a failure it says where the process waits.
srv_pid=
serve_start() {
    # Emptied here, not only by the background job's redirection: the loop below could
    # otherwise read the last service's "listening on" before the new one truncates the file.
    : > "$tmp/serve.out"
    : > "$tmp/serve.err"
    "$TROVE" serve --store "$s" --listen 127.0.0.1:0 "$@" > "$tmp/serve.out" 2> "$tmp/serve.err" &
    srv_pid=$!
    for _ in $(seq 1 1200); do
        grep -q "listening on" "$tmp/serve.out" 2> /dev/null && break
        sleep 0.1
    done
    url=$(sed -n 's/.*listening on \(http[^,]*\),.*/\1/p' "$tmp/serve.out")
    sock=$s/trove.sock
    [ -n "$url" ] || bad "serve did not start: $(cat "$tmp/serve.out" "$tmp/serve.err"; \
        echo "alive: $(kill -0 $srv_pid 2>&1 && echo yes); wchan: $(cat /proc/$srv_pid/wchan 2>&1)"; \
        cat /proc/$srv_pid/task/*/stack 2>/dev/null | head -40)"
}
# serve_stop: SIGTERM the service and wait; its exit status must be 0. One that has not
# stopped after 5 minutes (a sanitized build on a loaded machine takes seconds) fails the
# test, with where its threads wait, rather than hanging it.
serve_stop() {
    local rc
    kill -TERM "$srv_pid" 2> /dev/null
    for _ in $(seq 1 3000); do
        kill -0 "$srv_pid" 2> /dev/null || break
        sleep 0.1
    done
    if kill -0 "$srv_pid" 2> /dev/null; then
        bad "serve did not stop in 5 minutes after SIGTERM: $(tail -c 3000 "$tmp/serve.err"; \
            for t in /proc/$srv_pid/task/*; do echo "$(cat $t/comm 2>&1): $(cat $t/wchan 2>&1)"; done; \
            command -v gdb > /dev/null && gdb -p "$srv_pid" -batch -ex 'thread apply all bt 8' 2>&1 | \
            grep -E '^(Thread|#)' | head -60)"
        kill -9 "$srv_pid" 2> /dev/null
    fi
    wait "$srv_pid"
    rc=$?
    if [ $rc -eq 0 ]; then ok; else bad "serve exited $rc: $(head -c 3000 "$tmp/serve.err")"; fi
    srv_pid=
}
