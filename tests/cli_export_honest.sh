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

finish
