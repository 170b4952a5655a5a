#!/usr/bin/env bash
# cli_attrs.sh: a Chrome trace's args, categories, other members (tts, tdur, ...) and
# top-level members come back from trove equal as JSON values (python's json): the sample
# trace imported into a store and exported again as Chrome JSON, exported straight from the
# file, through a bundle (args.parquet, and DuckDB's join of docs/formats/bundle.md against
# python) and through a Perfetto trace (docs/formats/chrome-json.md, "Attributes"); every
# event trove keeps checked, the import's count of rows in --json; what cannot carry them
# says so (the trace's metadata in Perfetto); a window of a capture keeps its events' own; an
# append keeps them.
# usage: cli_attrs.sh TROVE SOURCE_DIR [SHARED_DATA_DIR]
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
data=${3:-}
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
sample=$data/chrome-trace-dom.json.zst
[ -n "$data" ] && [ -f "$sample" ] || { echo "skipped: no sample trace ($sample)"; exit 77; }
command -v zstd > /dev/null || { echo "skipped: zstd not installed"; exit 77; }
zstd -dqc "$sample" > "$tmp/dom.json" || bad "zstd -dc"
equal=$src/tests/cli/attrs_equal.py

# through the store: every event trove keeps, with its attributes
"$trove" import "$tmp/dom.json" --store "$tmp/s" --name dom --json -q > "$tmp/imp.json" || bad "import"
json "$tmp/imp.json" 'j["attr_rows"] > 1000000 and j["events"] == 306749'
"$trove" export store:dom --store "$tmp/s" --format chrome-json -o "$tmp/back.json" -q ||
    bad "export from the store"
python3 "$equal" "$tmp/dom.json" "$tmp/back.json" > "$tmp/eq.json" || bad "store round trip: $(cat "$tmp/eq.json")"
json "$tmp/eq.json" 'j["events"] == 306749 and j["differ"] == 0 and j["with_args"] > 80000 and j["top_equal"]'
# imported again: the same rows, and the displayTimeUnit the export wrote
"$trove" import "$tmp/back.json" --store "$tmp/s" --name dom2 --json -q > "$tmp/imp2.json" || bad "import again"
json "$tmp/imp2.json" "j['attr_rows'] == $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["attr_rows"])' "$tmp/imp.json") + 1"

# straight from the file
"$trove" export "$tmp/dom.json" --format chrome-json -o "$tmp/direct.json" -q || bad "export from the file"
python3 "$equal" "$tmp/dom.json" "$tmp/direct.json" > "$tmp/eq2.json" || bad "file round trip: $(cat "$tmp/eq2.json")"
json "$tmp/eq2.json" 'j["events"] == 306749 and j["differ"] == 0'
check cmp -s "$tmp/back.json" "$tmp/direct.json"

# through a bundle: args.parquet, read back into a capture the same; DuckDB's join of
# docs/formats/bundle.md equal to a pass of python's json over the trace
"$trove" export store:dom --store "$tmp/s" --format bundle -o "$tmp/dom.bundle" --json -q > "$tmp/bex.json" ||
    bad "export a bundle"
"$trove" export store:dom --store "$tmp/s" --format dir -o "$tmp/dom.dir" -q || bad "export a dir"
check test -s "$tmp/dom.dir/args.parquet"
json "$tmp/dom.dir/manifest.json" '"args.parquet" in j["tables"] and j["counts"]["args"] > 1000000'
"$trove" import "$tmp/dom.bundle" --store "$tmp/s" --name viab --json -q > "$tmp/imp3.json" || bad "import the bundle"
json "$tmp/imp3.json" "j['attr_rows'] == $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["attr_rows"])' "$tmp/imp.json")"
"$trove" export store:viab --store "$tmp/s" --format chrome-json -o "$tmp/viab.json" -q || bad "export via the bundle"
python3 "$equal" "$tmp/dom.json" "$tmp/viab.json" > "$tmp/eq3.json" || bad "bundle round trip: $(cat "$tmp/eq3.json")"
json "$tmp/eq3.json" 'j["events"] == 306749 and j["differ"] == 0 and j["top_equal"]'
need_duck "$src"
if [ "$have_duck" = 1 ]; then
    (cd "$tmp/dom.dir" && node "$TOOL" query "SELECT a.value AS src_func, count(*) AS zones, sum(e.dur_ns) AS total_ns, max(e.dur_ns) AS max_ns
FROM read_parquet('events.parquet', file_row_number = true) e
JOIN 'args.parquet' a ON a.event = e.file_row_number
WHERE a.scope = 'arg' AND a.key = 'src_func'
GROUP BY ALL ORDER BY total_ns DESC, src_func LIMIT 10") > "$tmp/duck.json" || bad "the DuckDB join"
    python3 - "$tmp/dom.json" "$tmp/duck.json" << 'PY' && ok || bad "the DuckDB join against python"
import json, sys
from collections import defaultdict
from decimal import Decimal, ROUND_HALF_UP
doc = json.load(open(sys.argv[1]), parse_float=Decimal, parse_int=Decimal)
ns = lambda us: int((Decimal(us) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))
agg = defaultdict(lambda: [0, 0, 0])
def add(args, dur):
    f = args.get("src_func")
    if isinstance(f, str):
        a = agg[f]
        a[0] += 1; a[1] += dur; a[2] = max(a[2], dur)
stacks, spans = defaultdict(list), defaultdict(list)
for e in doc["traceEvents"]:
    ph, a = e.get("ph"), e.get("args") or {}
    if ph == "X":
        add(a, ns(e.get("dur", 0)))
    elif ph in ("i", "I", "n"):
        add(a, 0)
    elif ph == "B":
        stacks[(e["pid"], e["tid"])].append(e)
    elif ph == "E" and stacks[(e["pid"], e["tid"])]:
        b = stacks[(e["pid"], e["tid"])].pop()
        add({**(b.get("args") or {}), **a}, ns(e["ts"]) - ns(b["ts"]))
    elif ph in ("b", "S"):
        spans[(e["pid"], json.dumps(e.get("id", e.get("id2")), default=str), e.get("cat"), ph)].append(e)
    elif ph in ("e", "F"):
        k = (e["pid"], json.dumps(e.get("id", e.get("id2")), default=str), e.get("cat"), "b" if ph == "e" else "S")
        if spans[k]:
            b = spans[k].pop()
            add({**(b.get("args") or {}), **a}, ns(e["ts"]) - ns(b["ts"]))
want = sorted(([f, str(v[0]), str(v[1]), str(v[2])] for f, v in agg.items()), key=lambda r: (-int(r[2]), r[0]))[:10]
got = json.load(open(sys.argv[2]))["rows"]
assert got == want, (got, want)
assert len(want) == 10 and int(want[0][2]) > 0
PY
fi

# a window of the capture: its events, each with its own attributes (the replay says which
# of the capture's events it sends)
"$trove" export --capture dom --store "$tmp/s" --format chrome-json --from-ns 591000000000 \
    --to-ns 592500000000 -q -o "$tmp/win.json" 2> "$tmp/win.err" || bad "a window"
check test ! -s "$tmp/win.err"
python3 "$equal" "$tmp/dom.json" "$tmp/win.json" --subset > "$tmp/eqw.json" || bad "window: $(cat "$tmp/eqw.json")"
json "$tmp/eqw.json" 'j["differ"] == 0 and 1000 < j["events"] < 306749 and j["with_args"] > 100'
# and as a bundle, read back
"$trove" export --capture dom --store "$tmp/s" --format bundle --from-ns 591000000000 \
    --to-ns 592500000000 -q -o "$tmp/win.zip" 2> "$tmp/winb.err" || bad "a window as a bundle"
check test ! -s "$tmp/winb.err"
"$trove" export "$tmp/win.zip" --format chrome-json -q -o "$tmp/winb.json" || bad "the window's bundle"
python3 "$equal" "$tmp/dom.json" "$tmp/winb.json" --subset > "$tmp/eqwb.json" || bad "window bundle: $(cat "$tmp/eqwb.json")"
check cmp -s "$tmp/eqw.json" "$tmp/eqwb.json"
# through Perfetto: every event's attributes there and back (the trace's metadata has no
# place in a Perfetto trace, and says so)
"$trove" export store:dom --store "$tmp/s" --format perfetto -o "$tmp/p.pftrace" 2> "$tmp/p.err" ||
    bad "perfetto"
check grep -q "1 members of the trace (its metadata) not written: a Perfetto trace has no place" "$tmp/p.err"
"$trove" import "$tmp/p.pftrace" --store "$tmp/s" --name viap --json -q > "$tmp/imp4.json" || bad "import the Perfetto trace"
json "$tmp/imp4.json" "j['attr_rows'] == $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["attr_rows"])' "$tmp/imp.json") - 1 and j['warnings'] == []"
"$trove" export store:viap --store "$tmp/s" --format chrome-json -o "$tmp/viap.json" -q || bad "export via Perfetto"
python3 "$equal" "$tmp/dom.json" "$tmp/viap.json" --no-top > "$tmp/eq4.json" || bad "Perfetto round trip: $(cat "$tmp/eq4.json")"
json "$tmp/eq4.json" 'j["events"] == 306749 and j["differ"] == 0'
# an append to a service's capture keeps its rows too (the live writer's attributes)
printf '[{"ph":"X","name":"a","ts":1,"dur":2,"pid":1,"tid":1,"args":{"k":1}}]' > "$tmp/one.json"
s=$tmp/s
serve_start
"$trove" import "$tmp/one.json" --url "$url" --name one --json > "$tmp/one.out" || bad "import one --url"
json "$tmp/one.out" 'j["attr_rows"] == 1 and j["warnings"] == []'
"$trove" import "$tmp/one.json" --url "$url" --name one --append --json > "$tmp/app.json" 2> "$tmp/app.err" ||
    bad "append: $(cat "$tmp/app.err")"
json "$tmp/app.json" 'j["attr_rows"] == 1 and j["warnings"] == []'
curl -sf "${url}api/captures/one" > "$tmp/one_info.json" || bad "info of one"
json "$tmp/one_info.json" 'j["attr_rows"] == 2 and j["events"] == 2'
serve_stop
finish
