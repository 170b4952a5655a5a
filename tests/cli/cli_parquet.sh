#!/bin/bash
# cli_parquet.sh: `trove export` and `trove import` end to end, proven against DuckDB.
#
#   bash tests/cli/cli_parquet.sh <trove-binary> <source-dir> <shared-data-dir>
#
# 1. Round trips: a capture exported (bundle, stored and deflated; a directory; the events
#    table alone; every encoding and codec; a bundle unzipped and zipped again as a folder)
#    and imported again gives the same events and names (`trove cat --json` of both is
#    identical); the bundle's entries are stored unless --zip-deflate; export is
#    deterministic.
# 2. DuckDB (tools/duckdb/duckdb_tool.mjs) reads every table: its row counts equal the
#    manifest's; the events table's per-column sums and checksums equal what python3
#    computes from the raw wire stream trove imports; parquet_metadata() shows
#    DELTA_BINARY_PACKED on the nanosecond columns and RLE_DICTIONARY on the others.
# 3. DuckDB rewrites every table (zstd, uncompressed, and snappy: its default) and
#    `trove import` of its files gives exactly what trove's own files give, also with
#    columns of other types added to the events table in DuckDB.
# 4. The sample trace, if ../shared/data has it, round-trips exactly, and through DuckDB.
# 5. `trove bench parquet --json` prints exactly the documented keys.
# 6. Errors: bad options, garbage, a zip-slip entry, a truncated Parquet file, a manifest
#    that lies about the event count: one line, nonzero exit, no output left.
# Skips (77) without python3; without node or tools/duckdb/node_modules it skips the DuckDB
# parts, unless CI is set, where that is a failure (make check installs them first).
set -u

TROVE=${1:?usage: cli_parquet.sh <trove-binary> <source-dir> <shared-data-dir>}
SRC=${2:?}
DATA=${3:-}
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3

need_duck "$SRC"
duck() { node "$TOOL" "$@"; }

same_capture() { # same_capture A.tv B.tv: the same events and names, as trove cat prints them
    "$TROVE" cat "$1" --json >"$tmp/cat1" 2>/dev/null && "$TROVE" cat "$2" --json >"$tmp/cat2" 2>/dev/null &&
        cmp -s "$tmp/cat1" "$tmp/cat2" && [ -s "$tmp/cat1" ]
}

# Python: sums and checksums (tools/duckdb/duckdb_tool.md's definition) of the events in a raw
# wire stream, as the JSON {"rows":N,"columns":{name:{"sum":"…","checksum":"…"}}}.
raw_stats() {
    python3 - "$1" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
cols = ["start_ns", "dur_ns", "pid", "tid", "kind", "depth", "extra", "name_id"]
vals = {c: [] for c in cols}
off = 0
while off < len(b):
    magic, fmt, ver, count, payload, raw = struct.unpack_from("<2sBBIII", b, off)
    assert magic == b"TV"
    if fmt == 1:
        for i in range(count):
            s, d, pid, tid, k, dp, x, pad, nm = struct.unpack_from("<QQIIBBBBI", b, off + 16 + 32 * i)
            for c, v in zip(cols, (s, d, pid, tid, k, dp, x, nm)):
                vals[c].append(v)
    off += 16 + payload
def fnv(values):
    h = 0xcbf29ce484222325
    for v in values:
        for ch in str(v).encode() + b"\n":
            h = ((h ^ ch) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h
print(json.dumps({"rows": len(vals["pid"]),
                  "columns": {c: {"sum": str(sum(vals[c])), "checksum": fnv(vals[c])} for c in cols}}))
EOF
}

# Compare DuckDB's info of an events table with python's stats of the same events.
events_match() { # events_match INFO.json STATS.json
    python3 - "$1" "$2" <<'EOF'
import json, sys
info, st = (json.load(open(p)) for p in sys.argv[1:3])
errs = []
if info["rows"] != st["rows"]:
    errs.append("rows %r != %r" % (info["rows"], st["rows"]))
got = {c["name"]: c for c in info["columns"]}
for name, want in st["columns"].items():
    c = got.get(name)
    if c is None:
        errs.append("no column " + name); continue
    if c["sum"] != want["sum"] or c["checksum"] != want["checksum"]:
        errs.append("%s: duckdb sum %s checksum %s, trove %s %s" % (name, c["sum"], c["checksum"], want["sum"], want["checksum"]))
for e in errs: print(e)
sys.exit(1 if errs else 0)
EOF
}

# The encodings DuckDB's parquet_metadata() reports for the events table.
events_encodings_ok() {
    python3 - "$1" <<'EOF'
import json, sys
info = json.load(open(sys.argv[1]))
ok = True
for c in info["columns"]:
    enc = set(c["encodings"])
    want = {"RLE_DICTIONARY"}
    if c["name"] in ("start_ns", "dur_ns"):  # under a codec, DELTA or a dictionary: the smaller
        want = {"DELTA_BINARY_PACKED"} | (want if c["compression"] != "UNCOMPRESSED" else set())
    if not want & enc:
        print("%s: encodings %s lack %s" % (c["name"], sorted(enc), sorted(want))); ok = False
sys.exit(0 if ok else 1)
EOF
}

rows_of() { json_get "$1" 'j["rows"]'; }
manifest_count() { json_get "$1" "j['counts']['$2']"; }

# ---- 1. round trips on generated data ------------------------------------------------------
if section round_trips_on; then
"$TROVE" gen --events 30000 --to raw -q -o "$tmp/g.tv"
check [ $? -eq 0 ]
"$TROVE" export "$tmp/g.tv" -o "$tmp/g.bundle" -q
check [ $? -eq 0 ]
"$TROVE" import "$tmp/g.bundle" -o "$tmp/g2.tv" --to raw -q
check [ $? -eq 0 ]
check same_capture "$tmp/g.tv" "$tmp/g2.tv"
"$TROVE" export "$tmp/g.tv" -o "$tmp/g-again.bundle" -q
check cmp -s "$tmp/g.bundle" "$tmp/g-again.bundle" # deterministic
check python3 -c '
import zipfile, sys
z = zipfile.ZipFile(sys.argv[1]); names = z.namelist()
assert names == ["manifest.json", "events.parquet", "names.parquet", "threads.parquet", "samples.parquet", "frames.parquet", "flows.parquet"], names
assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
assert z.testzip() is None' "$tmp/g.bundle"
"$TROVE" export "$tmp/g.tv" -o "$tmp/gd.bundle" --zip-deflate -q
check python3 -c '
import zipfile, sys
z = zipfile.ZipFile(sys.argv[1])
assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())
assert z.testzip() is None' "$tmp/gd.bundle"
check [ "$(stat -c %s "$tmp/gd.bundle")" -lt "$(stat -c %s "$tmp/g.bundle")" ]
# Unzipped and zipped again as a folder, as zip tools do (a directory entry, deflated
# files under "cap/", macOS's __MACOSX junk beside them): the same capture.
python3 -c '
import zipfile, sys
src = zipfile.ZipFile(sys.argv[1])
with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("cap/", b"")
    for n in reversed(src.namelist()):
        z.writestr("cap/" + n, src.read(n))
    z.writestr("__MACOSX/cap/._manifest.json", b"junk")' "$tmp/g.bundle" "$tmp/gf.bundle"
"$TROVE" import "$tmp/gf.bundle" -o "$tmp/gf.tv" --to raw -q
check [ $? -eq 0 ]
check same_capture "$tmp/g.tv" "$tmp/gf.tv"
# A bundle exported again, with another codec and encoding: the same capture.
"$TROVE" export "$tmp/g.bundle" -o "$tmp/gz.bundle" --codec zstd --encoding dict -q
check [ $? -eq 0 ]
"$TROVE" import "$tmp/gz.bundle" -o "$tmp/gz.tv" --to raw -q
check same_capture "$tmp/g.tv" "$tmp/gz.tv"
for enc in plain dict delta-dict; do
    for codec in none zstd gzip; do
        "$TROVE" export "$tmp/g.tv" -o "$tmp/e.bundle" --encoding $enc --codec $codec --row-group 7000 -q &&
            "$TROVE" import "$tmp/e.bundle" -o "$tmp/e.tv" --to raw -q
        check same_capture "$tmp/g.tv" "$tmp/e.tv"
    done
done
"$TROVE" export "$tmp/g.tv" -o "$tmp/gdir" --format dir -q
check [ $? -eq 0 ]
check [ -f "$tmp/gdir/manifest.json" ] && [ -f "$tmp/gdir/events.parquet" ]
check cmp -s "$tmp/gdir/events.parquet" <(python3 -c '
import zipfile, sys; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("events.parquet"))' "$tmp/g.bundle")
"$TROVE" import "$tmp/gdir" -o "$tmp/gdir.tv" --to raw -q
check same_capture "$tmp/g.tv" "$tmp/gdir.tv"
"$TROVE" export "$tmp/g.tv" -o "$tmp/ev.parquet" --format parquet -q
check [ $? -eq 0 ]
"$TROVE" import "$tmp/ev.parquet" -o "$tmp/ev.tv" --to raw -q
check [ $? -eq 0 ]
check cmp -s <(raw_stats "$tmp/g.tv") <(raw_stats "$tmp/ev.tv") # events only: no names
check [ "$(manifest_count "$tmp/gdir/manifest.json" events)" = 30000 ]
fi

# ---- 2 and 3. DuckDB reads every table, and rewrites them ----------------------------------
if section duckdb_reads_every; then
if [ $have_duck = 1 ]; then
    raw_stats "$tmp/g.tv" >"$tmp/g.stats"
    for t in events names threads samples frames; do
        duck info "$tmp/gdir/$t.parquet" >"$tmp/$t.info"
        check [ $? -eq 0 ]
        check [ "$(rows_of "$tmp/$t.info")" = "$(manifest_count "$tmp/gdir/manifest.json" $t)" ]
    done
    check events_match "$tmp/events.info" "$tmp/g.stats"
    check events_encodings_ok "$tmp/events.info"
    for comp in zstd uncompressed snappy; do
        mkdir -p "$tmp/dd-$comp"
        cp "$tmp/gdir/manifest.json" "$tmp/dd-$comp/"
        for t in events names threads samples frames; do
            duck copy "$tmp/gdir/$t.parquet" "$tmp/dd-$comp/$t.parquet" --compression $comp >/dev/null
            check [ $? -eq 0 ]
        done
        "$TROVE" import "$tmp/dd-$comp" -o "$tmp/dd-$comp.tv" --to raw -q
        check [ $? -eq 0 ]
        check cmp -s "$tmp/gdir.tv" "$tmp/dd-$comp.tv"
    done
    # DuckDB's default codec really is what those files hold (trove decodes it itself).
    duck info "$tmp/dd-snappy/events.parquet" >"$tmp/dd-snappy.info"
    check grep -q '"compression":"SNAPPY"' "$tmp/dd-snappy.info"
    # A table edited in DuckDB: columns of types trove does not read (DOUBLE, BOOLEAN)
    # added; trove imports the capture around them. One of trove's columns turned into a
    # DOUBLE is a clear error, and no output.
    mkdir -p "$tmp/dd-edit"
    cp "$tmp/dd-snappy/"* "$tmp/dd-edit/"
    duck copy "$tmp/gdir/events.parquet" "$tmp/dd-edit/events.parquet" --compression snappy \
        --select "*, dur_ns / 1000.0 AS dur_us, kind = 3 AS is_zone" >/dev/null
    check [ $? -eq 0 ]
    duck info "$tmp/dd-edit/events.parquet" >"$tmp/dd-edit.info"
    check grep -q '"name":"dur_us","type":"DOUBLE"' "$tmp/dd-edit.info"
    "$TROVE" import "$tmp/dd-edit" -o "$tmp/dd-edit.tv" --to raw -q
    check [ $? -eq 0 ]
    check cmp -s "$tmp/gdir.tv" "$tmp/dd-edit.tv"
    duck copy "$tmp/gdir/events.parquet" "$tmp/dd-edit/events.parquet" --compression snappy \
        --select "* REPLACE (CAST(start_ns AS DOUBLE) AS start_ns)" >/dev/null
    "$TROVE" import "$tmp/dd-edit" -o "$tmp/dd-edit2.tv" --to raw -q 2>"$tmp/dd-edit2.err"
    check [ $? -ne 0 ]
    check grep -q "start_ns is of a type trove does not read" "$tmp/dd-edit2.err"
    check [ "$(wc -l <"$tmp/dd-edit2.err")" -eq 1 ]
    check [ ! -e "$tmp/dd-edit2.tv" ]
    # Rows dropped in DuckDB: the manifest's count no longer holds. An error that says what
    # to do; with --edited, a warning and the edited table's events; --quiet silences it.
    duck copy "$tmp/gdir/events.parquet" "$tmp/dd-edit/events.parquet" --compression snappy \
        --where "kind <> 1" >"$tmp/dd-edit3.json"
    check [ $? -eq 0 ]
    kept=$(rows_of "$tmp/dd-edit3.json")
    check [ "$kept" -gt 0 ] && [ "$kept" -lt 30000 ]
    "$TROVE" import "$tmp/dd-edit" -o "$tmp/dd-edit3.tv" --to raw -q 2>"$tmp/dd-edit3.err"
    check [ $? -ne 0 ]
    check grep -q "events.parquet: $kept events, but manifest.json says 30000 (if the table was edited, --edited takes it as it is)" "$tmp/dd-edit3.err"
    check [ ! -e "$tmp/dd-edit3.tv" ]
    "$TROVE" import "$tmp/dd-edit" -o "$tmp/dd-edit3.tv" --to raw --edited 2>"$tmp/dd-edit3.err"
    check [ $? -eq 0 ]
    check grep -q "warning: .*events.parquet: $kept events where manifest.json says 30000" "$tmp/dd-edit3.err"
    check [ "$("$TROVE" cat "$tmp/dd-edit3.tv" --json | grep -c '"start_ns"')" = "$kept" ]
    "$TROVE" import "$tmp/dd-edit" -o "$tmp/dd-edit4.tv" --to raw --edited -q 2>"$tmp/dd-edit4.err"
    check [ $? -eq 0 ]
    check [ ! -s "$tmp/dd-edit4.err" ]
    check cmp -s "$tmp/dd-edit3.tv" "$tmp/dd-edit4.tv"
    # Exported again with --edited: a bundle with a manifest of its own, which imports as is.
    "$TROVE" export "$tmp/dd-edit" -o "$tmp/dd-fixed.bundle" -q
    check [ $? -ne 0 ]
    check [ ! -e "$tmp/dd-fixed.bundle" ]
    "$TROVE" export "$tmp/dd-edit" -o "$tmp/dd-fixed.bundle" --edited -q
    check [ $? -eq 0 ]
    "$TROVE" import "$tmp/dd-fixed.bundle" -o "$tmp/dd-fixed.tv" --to raw -q
    check [ $? -eq 0 ]
    check same_capture "$tmp/dd-edit3.tv" "$tmp/dd-fixed.tv"
    "$TROVE" import "$tmp/dd-edit" --store "$tmp/dd-store" --name edited --edited -q
    check [ $? -eq 0 ]
    check [ "$("$TROVE" ls --json --store "$tmp/dd-store" | json_get - 'j[0]["events"]')" = "$kept" ]
fi
fi

# ---- 4. the sample trace -------------------------------------------------------------------
if section sample_trace; then
if [ -n "$DATA" ] && [ -r "$DATA/chrome-trace-dom.json.zst" ] && command -v zstd >/dev/null 2>&1; then
    zstd -dcq "$DATA/chrome-trace-dom.json.zst" >"$tmp/trace.json"
    "$TROVE" convert "$tmp/trace.json" "$tmp/trace.tv" --to raw --quiet
    "$TROVE" export "$tmp/trace.json" -o "$tmp/trace.bundle" -q
    check [ $? -eq 0 ]
    "$TROVE" import "$tmp/trace.bundle" -o "$tmp/trace2.tv" --to raw -q
    check [ $? -eq 0 ]
    check same_capture "$tmp/trace.tv" "$tmp/trace2.tv"
    check cmp -s <(raw_stats "$tmp/trace.tv") <(raw_stats "$tmp/trace2.tv")
    if [ $have_duck = 1 ]; then
        "$TROVE" export "$tmp/trace.json" -o "$tmp/tdir" --format dir -q
        duck info "$tmp/tdir/events.parquet" >"$tmp/tevents.info"
        check events_match "$tmp/tevents.info" <(raw_stats "$tmp/trace.tv")
        check events_encodings_ok "$tmp/tevents.info"
        for comp in zstd snappy; do
            duck copy "$tmp/tdir/events.parquet" "$tmp/tdd-$comp.parquet" --compression $comp >/dev/null
            "$TROVE" import "$tmp/tdd-$comp.parquet" -o "$tmp/tdd-$comp.tv" --to raw -q
            check [ $? -eq 0 ]
            check cmp -s <(raw_stats "$tmp/trace.tv") <(raw_stats "$tmp/tdd-$comp.tv")
        done
    fi
fi
fi

# ---- 5. the benchmark's JSON ---------------------------------------------------------------
if section benchmark_json; then
if [ $have_duck = 1 ]; then bargs="--duckdb $TOOL"; else bargs="--no-duckdb"; fi
"$TROVE" bench parquet --events 5000 --rounds 1 --json $bargs >"$tmp/b.json"
check [ $? -eq 0 ]
check python3 - "$tmp/b.json" $have_duck <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
d = json.loads(text)
assert text.count("\n") == 1
assert list(d) == ["events", "rows"] and d["events"] == 5000
keys = ["plain", "dict", "delta_dict", "delta_dict_zstd", "delta_dict_gzip", "duckdb_default", "duckdb_uncompressed"]
assert list(d["rows"]) == keys, list(d["rows"])
for k in keys:
    v = d["rows"][k]
    if v is None:
        assert k.startswith("duckdb") and sys.argv[2] == "0"; continue
    assert list(v) == ["bytes", "write_s", "read_s"], (k, v)
    assert v["bytes"] > 0 and v["write_s"] > 0 and v["read_s"] > 0, (k, v)
r = d["rows"]
assert r["delta_dict"]["bytes"] < r["dict"]["bytes"] < r["plain"]["bytes"], r
EOF
fi

# ---- 6. errors -----------------------------------------------------------------------------
if section errors; then
expect_error export export
expect_error export export "$tmp/g.tv"
expect_error export export "$tmp/g.tv" -o "$tmp/x.bundle" --format csv
expect_error export export "$tmp/g.tv" -o "$tmp/x.bundle" --codec lz4
expect_error export export "$tmp/g.tv" -o "$tmp/x.bundle" --encoding rle
expect_error export export "$tmp/g.tv" -o "$tmp/x.parquet" --format parquet --zip-deflate
expect_error export export "$tmp/nope.json" -o "$tmp/x.bundle"
expect_error export export "$tmp/g.tv" -o "$tmp/gdir" --format dir # exists
check [ ! -e "$tmp/x.bundle" ] && [ ! -e "$tmp/x.parquet" ]
expect_error import import
# Every input kind is read: a wire stream in gives the same stream as convert does.
"$TROVE" import "$tmp/g.tv" -o "$tmp/w.tv" --quiet || bad "import -o of a wire stream"
"$TROVE" convert "$tmp/g.tv" "$tmp/w2.tv" --quiet || bad "convert"
check cmp -s "$tmp/w.tv" "$tmp/w2.tv"
expect_error import import "$tmp/g.bundle" -o "$tmp/x.tv" --to csv
head -c 1000 "$tmp/ev.parquet" >"$tmp/cut.parquet"
expect_error import import "$tmp/cut.parquet" -o "$tmp/x.tv"
python3 - "$tmp/g.bundle" "$tmp/slip.bundle" "$tmp/lie.bundle" <<'EOF'
import json, sys, zipfile
src = zipfile.ZipFile(sys.argv[1])
with zipfile.ZipFile(sys.argv[2], "w") as z:          # an entry that climbs out
    for n in src.namelist():
        z.writestr(n, src.read(n))
    z.writestr("../../evil.parquet", b"PAR1")
m = json.loads(src.read("manifest.json")); m["counts"]["events"] += 1
with zipfile.ZipFile(sys.argv[3], "w") as z:          # a manifest that lies
    for n in src.namelist():
        z.writestr(n, json.dumps(m) if n == "manifest.json" else src.read(n))
EOF
expect_error import import "$tmp/slip.bundle" -o "$tmp/x.tv"
expect_error import import "$tmp/lie.bundle" -o "$tmp/x.tv"
check [ ! -e "$tmp/x.tv" ] && [ ! -e "$tmp/x.tv.tmp" ]
"$TROVE" export --help >"$tmp/h" && check grep -q -- "--zip-deflate" "$tmp/h"
"$TROVE" import --help >"$tmp/h" && check grep -q -- "--to" "$tmp/h"
fi

finish
