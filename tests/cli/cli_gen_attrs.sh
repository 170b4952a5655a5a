#!/usr/bin/env bash
# cli_gen_attrs.sh: `trove gen --attrs` (docs/gen.md, "Attributes"): the same events as
# without it, with an attrs frame before each events frame; the same bytes on every run;
# `trove import` keeps every row (the export's args are the model's, event by event); a
# reader that keeps none says so (`trove convert` to a wire stream); `--live --attrs` sends
# them to the service, which keeps them. (An append through a service keeps them too:
# test_capture_live's test_attrs.)
# usage: cli_gen_attrs.sh TROVE SOURCE_DIR
set -u
TROVE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
. "$src/tests/support/lib_cli.sh"
need_python3
s=$tmp/store

# check.py EXPORT ROWS: every zone and frame of a name 0, 1 or 2 mod 8 has the model's args,
# no other event any, ROWS in all
cat > "$tmp/check.py" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") not in ("M",)]
rows = 0
for e in ev:
    n = int(e["name"].split("_")[1]) if e["name"].startswith("zone_") else -1
    args = e.get("args", {})
    span = e.get("ph") == "X" and e.get("trove", {}).get("kind", 0) in (0, 3)  # a zone or frame
    want = {0: {"path"}, 1: {"bytes"}, 2: {"text", "value"}}.get(n % 8 if span else -1, set())
    assert set(args) == want, (e, want)
    if "path" in args:
        assert args["path"].startswith("assets/zone_%d/" % n) and args["path"].endswith(".bin"), e
    if "bytes" in args:
        assert 16 <= args["bytes"] < (1 << 20) + 1024, e
    if "text" in args:
        assert args["text"] == "frame %d" % (round(e["ts"] * 1000) // 16666667), e
        assert args["value"] == round(e["ts"] * 1000) // 1000, e
    rows += len(args)
assert rows == int(sys.argv[2]), (rows, sys.argv[2])
PY

if section stream; then
"$TROVE" gen --events 50000 --attrs -o "$tmp/a.wire" -q || bad "gen --attrs"
"$TROVE" gen --events 50000 --attrs -o "$tmp/a2.wire" -q || bad "gen --attrs again"
"$TROVE" gen --events 50000 -o "$tmp/n.wire" -q || bad "gen"
check cmp -s "$tmp/a.wire" "$tmp/a2.wire"
check test "$(stat -c %s "$tmp/a.wire")" -gt "$(stat -c %s "$tmp/n.wire")"
# the events are the same: a reader of events passes the attrs frames by
"$TROVE" cat "$tmp/a.wire" > "$tmp/a.txt" 2> /dev/null || bad "cat a.wire"
"$TROVE" cat "$tmp/n.wire" > "$tmp/n.txt" 2> /dev/null || bad "cat n.wire"
check cmp -s "$tmp/a.txt" "$tmp/n.txt"
check test "$(wc -l < "$tmp/a.txt")" = 50000
fi

if section import; then
"$TROVE" import "$tmp/a.wire" --store "$s" --name g --json > "$tmp/imp.json" 2> "$tmp/imp.err" || bad "import: $(cat "$tmp/imp.err")"
rows=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["attr_rows"])' "$tmp/imp.json")
check test "$rows" -gt 10000
"$TROVE" ls --store "$s" --json > "$tmp/ls.json"
json_check "$tmp/ls.json" "j[0]['attr_rows'] == $rows and j[0]['attrs_bytes'] > 0"
"$TROVE" export store:g --store "$s" --format chrome-json -o "$tmp/g.json" -q || bad "export"
# every zone and frame of a name 0, 1 or 2 mod 8 has the model's args, and no other event any
python3 "$tmp/check.py" "$tmp/g.json" "$rows" || bad "the args are not the model's"
fi

# --live: the service keeps the rows each attrs frame brings, from the times as sent
if section live; then
serve_start
"$TROVE" gen --live lv --rate 20000 --seconds 1 --attrs --socket "$sock" -q 2> "$tmp/live.err" || bad "gen --live --attrs: $(cat "$tmp/live.err")"
serve_stop
"$TROVE" ls --store "$s" --json > "$tmp/lsl.json"
lrows=$(python3 -c 'import json,sys; print([c for c in json.load(open(sys.argv[1])) if c["name"] == "lv"][0]["attr_rows"])' "$tmp/lsl.json")
check test "$lrows" -gt 1000
"$TROVE" export store:lv --store "$s" --format chrome-json -o "$tmp/lv.json" -q || bad "export lv"
python3 "$tmp/check.py" "$tmp/lv.json" "$lrows" || bad "the live capture's args are not the model's"
fi

if section convert; then
# a wire stream carries no attributes: the convert says how many rows it did not keep
"$TROVE" convert "$tmp/a.wire" "$tmp/c.wire" 2> "$tmp/conv.err" > /dev/null || bad "convert: $(cat "$tmp/conv.err")"
check grep -q "not kept: [0-9]* attribute rows" "$tmp/conv.err"
fi
finish
