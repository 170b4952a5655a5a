#!/usr/bin/env bash
# cli_export_honest.sh: exports that say what they did and what they could not carry —
# the unmatched begins counted by phase (B apart from async b), a bind_id flow written with
# one name on its s and f, `--json` on every export format printing its document with the
# warnings as a field, and a sampled capture's samples counted where a trace export cannot
# carry them.
# usage: cli_export_honest.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$1 src=$2 data=$3
. "$(dirname "$0")/lib_cli.sh"
need_python3
TROVE=$trove

# ---- unmatched begins: each phase counted on its own ----------------------------------------
cat > "$tmp/open.json" <<'JSON'
[{"ph":"B","name":"a","pid":1,"tid":1,"ts":1},
{"ph":"B","name":"a","pid":1,"tid":1,"ts":2},
{"ph":"b","name":"x","cat":"c","id":"1","pid":1,"tid":1,"ts":1},
{"ph":"E","pid":1,"tid":2,"ts":5}]
JSON
exits 0 "$trove" cat "$tmp/open.json"
check grep -q "dropped 2 B events and 1 b event never ended; 1 E event never begun" "$tmp/err"

# ---- a bind_id flow keeps one name on its s and f ---------------------------------------------
cat > "$tmp/bind.json" <<'JSON'
[{"ph":"X","name":"send","pid":1,"tid":1,"ts":10,"dur":5,"bind_id":"0x7","flow_out":true},
{"ph":"X","name":"recv","pid":1,"tid":2,"ts":20,"dur":5,"bind_id":"0x7","flow_in":true}]
JSON
exits 0 "$trove" export "$tmp/bind.json" -o "$tmp/bind.out.json" --format chrome-json -q
check python3 - "$tmp/bind.out.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
fl = [e for e in ev if e["ph"] in "stf"]
assert sorted(e["ph"] for e in fl) == ["f", "s"], fl
assert len({e["name"] for e in fl}) == 1, fl
assert len({e["id"] for e in fl}) == 1, fl
PY
# and it comes back as one flow with that name, which a second export keeps
exits 0 "$trove" export "$tmp/bind.out.json" -o "$tmp/bind.again.json" --format chrome-json -q
check cmp -s "$tmp/bind.out.json" "$tmp/bind.again.json"

finish
