#!/usr/bin/env bash
# cli_test_cases.sh: the tests run one case by name, as CONTRIBUTING.md says. A unit test
# (test_volume, built beside trove) lists its cases with --list, runs only the cases named
# (fewer checks than all of them), and exits 2 naming its cases for a name it does not have
# or an option it does not know. A shell test (a small one written here on lib_cli.sh) runs
# every section without TROVE_CASE, only the named ones with it, and exits 2 listing its
# sections for a name it does not have.
# usage: cli_test_cases.sh TROVE SOURCE_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tv=$(dirname "$trove")/test_volume
[ -x "$tv" ] || { echo "skipped: no $tv (make build builds it)"; exit 77; }
. "$(dirname "$0")/../support/lib_cli.sh"

# passed OUTPUT: the N of its "N passed, N failed" line.
passed() { sed -n 's/^\([0-9]*\) passed, 0 failed$/\1/p' "$1"; }

# ---- a unit test's cases ------------------------------------------------------------------
if section unit; then
exits 0 "$tv" --list
check grep -qx locks "$tmp/out"
check grep -qx sparse_10tib "$tmp/out"
check test "$(sort "$tmp/out" | uniq -d)" = "" # a case run in a loop is listed once
check test "$(wc -l < "$tmp/out")" -gt 10
check test ! -s "$tmp/err"

exits 0 "$tv" locks
cp "$tmp/out" "$tmp/one"
exits 0 "$tv" locks names_and_modes
cp "$tmp/out" "$tmp/two"
one=$(passed "$tmp/one") two=$(passed "$tmp/two")
check test -n "$one" -a -n "$two"
check test "${one:-0}" -gt 0 -a "${one:-0}" -lt "${two:-0}"

exits 2 "$tv" locks no_such_case
check grep -q "no case named no_such_case" "$tmp/err"
check grep -q "its cases:.* locks .*sparse_10tib" "$tmp/err"
exits 2 "$tv" --no-such-option
check grep -q "usage: test_volume" "$tmp/err"
fi

# ---- a shell test's sections --------------------------------------------------------------
if section shell; then
cat > "$tmp/t.sh" <<EOF
. "$(cd "$(dirname "$0")/../support" && pwd)/lib_cli.sh"
echo start
if section one; then
echo in-one
fi
if section two; then
echo in-two
fi
finish
EOF
check_parts() { # WANT TROVE_CASE: the lines the script prints, joined
    local got
    got=$(TROVE_CASE=$2 bash "$tmp/t.sh" 2> "$tmp/t.err" | tr '\n' ' ')
    if [ "$got" = "$1" ]; then ok; else bad "TROVE_CASE=$2: '$got', not '$1'"; fi
}
check_parts "start in-one in-two 0 passed, 0 failed " ""
check_parts "start in-two 0 passed, 0 failed " two
check_parts "start in-one in-two 0 passed, 0 failed " "two,one"
TROVE_CASE=three bash "$tmp/t.sh" > /dev/null 2> "$tmp/t.err"
check test $? -eq 2
check grep -q "no section named three; its sections: one two" "$tmp/t.err"
fi

finish
