# lib_cli.sh: what the CLI tests (tests/cli_*.sh) share, sourced by each: pass and fail
# counters, check CMD... (a passed or failed check), a temp dir removed at exit, a skip
# (exit 77) without python3, and finish, which prints "N passed, N failed" and sets the
# exit status. Not a test itself (ctest globs tests/cli_*.sh).
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if "$@"; then ok; else bad "$*"; fi; }
need_python3() {
    if ! command -v python3 > /dev/null 2>&1; then
        echo "skipped: python3 not found"
        exit 77
    fi
}
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
