#!/usr/bin/env bash
# cli_capture.sh: captures in the store end to end (`trove import --store`, `trove ls`,
# `trove replay`) — a gen stream and the sample Chrome trace come back from the store byte
# for byte as trove's own converter writes them; importing again stores no new object; a
# time range gives exactly the events that start in it; bundles and Parquet files import;
# `trove export --capture` writes the bundle the capture's stream exports to; a
# terminal gets `trove cat` text; Ctrl-C stops a replay with exit 130; every command has
# --help and fails with one line naming what is wrong; the store defaults to $TROVE_STORE,
# then ./trove-data; names past one object (450,000 of them) are stored and come back whole.
# usage: cli_capture.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
data=${3:-}
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE

s=$tmp/s
t() { "$trove" "$@" --store "$s"; }
objects() { find "$s/objects" -type f | wc -l; }
# range FULL_TXT FROM TO: the lines of a `trove cat` text whose start is in [FROM, TO).
range() { awk -v a="$2" -v b="$3" '$1 >= a && $1 < b' "$1"; }

# ---- usage and errors -----------------------------------------------------------------
if section usage_and_errors; then
for c in import ls replay; do exits 0 "$trove" "$c" --help; done
exits 0 "$trove" import --help
check grep -q -- '--store DIR' "$tmp/out"
exits 0 "$trove" --help
check grep -q '^  replay ' "$tmp/out"
check grep -q '^  ls ' "$tmp/out"
exits 2 "$trove" replay
expect_error ls ls --store "$tmp/nostore"
check grep -q "no store at" "$tmp/e.err"
expect_error ls ls --frob
expect_error import import "$tmp/missing.json" --store "$s"
check grep -q "missing.json" "$tmp/e.err"
check test ! -e "$s"                    # a failed import creates no store

"$trove" gen -o "$tmp/g.wire" --events 200000 --seed 4 --names 1000 --quiet || bad "gen"
expect_error import import "$tmp/g.wire" --store "$s" -o "$tmp/x.wire"
expect_error import import "$tmp/g.wire" --store "$s" --name 'a/b'
expect_error import import "$tmp/g.wire" --store "$s" --segment-bytes 33
expect_error import import "$tmp/g.wire" --store "$s" --segment-bytes 16M
expect_error import import --store "$s"
echo '{"traceEvents":[{]}' > "$tmp/bad.json"
expect_error import import "$tmp/bad.json" --store "$s" --name bad
check grep -q "bad.json" "$tmp/e.err"
fi

# ---- a gen stream ------------------------------------------------------------------------
# 64 KiB segments are 2048 events, the frame size: 98 segments, 100 objects with the header
# and the names, and 101 summaries (98 segments', 2 of 64 segments, 1 over both).
if section gen_stream; then
t import "$tmp/g.wire" --name gen --segment-bytes 64K --json > "$tmp/i1.json" 2> "$tmp/err" ||
  bad "import gen: $(cat "$tmp/err")"
json "$tmp/i1.json" 'j["name"] == "gen" and j["events"] == 200000 and j["segments"] == 98 and j["new_objects"] == 100 + 101 and j["raw_bytes"] == 6400000 and 0 < j["stored_bytes"] < j["raw_bytes"]'
check test ! -s "$tmp/err" # --json: the result on stdout, nothing else
n1=$(objects)
t import "$tmp/g.wire" --name gen --segment-bytes 64K --json > "$tmp/i2.json" 2> /dev/null || bad "import gen again"
json "$tmp/i2.json" 'j["new_objects"] == 0 and j["events"] == 200000'
check test "$(objects)" -eq "$n1"
# The same events under another name cost a recipe and no object.
t import "$tmp/g.wire" --name gen2 --segment-bytes 64K --json --quiet > "$tmp/i3.json" || bad "import gen2"
json "$tmp/i3.json" 'j["new_objects"] == 0'
check test "$(objects)" -eq "$n1"
# A pipe and stdin are read as they stream (no peeking at a pipe): the same objects again.
t import <(cat "$tmp/g.wire") --name piped --segment-bytes 64K --json --quiet > "$tmp/out" || bad "import a pipe"
json "$tmp/out" 'j["new_objects"] == 0 and j["events"] == 200000'
t import - --name stdin --segment-bytes 64K --json --quiet < "$tmp/g.wire" > "$tmp/out" || bad "import stdin"
json "$tmp/out" 'j["new_objects"] == 0 and j["events"] == 200000'
"$trove" volume rm piped --store "$s" && "$trove" volume rm stdin --store "$s" || bad "volume rm"
exits 0 t verify

t ls --json > "$tmp/ls.json" || bad "ls --json"
json "$tmp/ls.json" '[e["name"] for e in j] == ["gen", "gen2"] and j[0]["events"] == 200000 and j[0]["segments"] == 98 and j[0]["stored_bytes"] == json.load(open("'"$tmp/i1.json"'"))["stored_bytes"] and j[0]["first_ns"] <= j[0]["end_ns"] and j[0]["last_used_ns"] is None'
exits 0 t ls
check grep -q '^gen  *200000 events  98 model segments.*last used never$' "$tmp/out"

# Replayed as raw frames of the stored size, the stream is byte for byte what gen writes.
"$trove" gen -o "$tmp/g.raw" --events 200000 --seed 4 --names 1000 --to raw --quiet || bad "gen raw"
before=$(date +%s)
exits 0 t replay gen --wire raw -o "$tmp/r.raw"
check cmp -s "$tmp/g.raw" "$tmp/r.raw"
check grep -q "200000 events" "$tmp/err"
# The last-used marker is written in the background: poll for it (up to 10 s), never
# expect it the moment replay returns.
for _ in $(seq 100); do [ -s "$s/markers/gen.last-used" ] && break; sleep 0.1; done
check test -s "$s/markers/gen.last-used"
t ls --json > "$tmp/ls.json" || bad "ls after replay"
json "$tmp/ls.json" "isinstance(j[0]['last_used_ns'], int) and j[0]['last_used_ns'] // 10**9 >= $before - 1 and j[1]['last_used_ns'] is None"
exits 0 t ls
check grep -q '^gen .*last used 20[0-9-]* [0-9:]* UTC$' "$tmp/out"
# A marker that cannot be written (markers/ is a file here) changes nothing the replay gave:
# a warning, which -q silences with the rest.
mv "$s/markers" "$tmp/markers.keep" && touch "$s/markers"
exits 0 t replay gen --wire raw -o "$tmp/r2.raw"
check grep -q "gen's last-used marker was not written" "$tmp/err"
exits 0 t replay gen --wire raw -o "$tmp/r2.raw" -q
check test ! -s "$tmp/err"
rm "$s/markers" && mv "$tmp/markers.keep" "$s/markers"
exits 0 t verify
exits 0 t replay gen --wire packed --frame-events 1000 -o "$tmp/r.packed" --no-sender --depth 0
"$trove" cat "$tmp/g.raw" > "$tmp/g.txt" || bad "cat g.raw"
"$trove" cat "$tmp/r.packed" > "$tmp/r.txt" || bad "cat r.packed"
check cmp -s "$tmp/g.txt" "$tmp/r.txt"
# A buffered sender: the same stream.
exits 0 t replay gen --wire raw -o "$tmp/r.buffered" --send-queue 3
check cmp -s "$tmp/g.raw" "$tmp/r.buffered"
expect_error replay replay gen --store "$s" --send-queue 0
expect_error replay replay gen --store "$s" --send-queue 1025
# The default: deflate to stdout (not a terminal), as stored.
t replay gen > "$tmp/r.deflate" 2> /dev/null || bad "replay to stdout"
"$trove" cat "$tmp/r.deflate" > "$tmp/r.txt" || bad "cat r.deflate"
check cmp -s "$tmp/g.txt" "$tmp/r.txt"
"$trove" convert "$tmp/r.deflate" "$tmp/r2.raw" --to raw --quiet || bad "convert r.deflate"
check cmp -s "$tmp/g.raw" "$tmp/r2.raw"

# Deflate segments (--segment-format deflate), what the capture's default (model, format 8)
# is measured against; columnar ones (format 5) fewer bytes than deflate's for these events;
# each named in the capture's JSON and replayed byte for byte as the default capture is, in
# every wire.
for f in deflate columnar columnar_deflate; do
  t import "$tmp/g.wire" --name "gen-$f" --segment-bytes 64K --segment-format $f --json \
    --quiet > "$tmp/c-$f.json" || bad "import --segment-format $f"
  json "$tmp/c-$f.json" 'j["segment_format"] == "'"$f"'" and j["events"] == 200000 and j["segments"] == 98 and j["stored_bytes"] > json.load(open("'"$tmp/i1.json"'"))["stored_bytes"]'
  exits 0 t replay "gen-$f" --wire raw -o "$tmp/c.raw"
  check cmp -s "$tmp/g.raw" "$tmp/c.raw"
  exits 0 t replay "gen-$f" --wire packed --frame-events 1000 -o "$tmp/c.packed"
  check cmp -s "$tmp/r.packed" "$tmp/c.packed"
done
json "$tmp/c-columnar_deflate.json" 'j["stored_bytes"] < json.load(open("'"$tmp/c-deflate.json"'"))["stored_bytes"]'
# Model segments asked for by name: the default's very objects.
t import "$tmp/g.wire" --name "gen-model" --segment-bytes 64K --segment-format model --json \
  --quiet > "$tmp/m.json" || bad "import --segment-format model"
json "$tmp/m.json" 'j["segment_format"] == "model" and j["new_objects"] == 0 and j["stored_bytes"] == json.load(open("'"$tmp/i1.json"'"))["stored_bytes"]'
json "$tmp/i1.json" 'j["segment_format"] == "model"'
t ls > "$tmp/lsm.txt" || bad "ls with a model capture"
check grep -q '^gen-model .* 98 model segments ' "$tmp/lsm.txt"
"$trove" volume rm gen-model --store "$s" || bad "volume rm gen-model"
t ls --json > "$tmp/ls.json" || bad "ls --json with columnar captures"
json "$tmp/ls.json" '[e["segment_format"] for e in j] == ["model", "columnar", "columnar_deflate", "deflate", "model"]'
t ls > "$tmp/ls.txt" || bad "ls with columnar captures"
check test "$(grep -c ' columnar segments ' "$tmp/ls.txt")" -eq 1
check grep -q '^gen-columnar_deflate .* 98 columnar_deflate segments ' "$tmp/ls.txt"
check grep -q '^gen-deflate .* 98 deflate segments ' "$tmp/ls.txt"
check test "$(grep -c ' segments ' "$tmp/ls.txt")" -eq 5
"$trove" volume rm gen-columnar --store "$s" && "$trove" volume rm gen-columnar_deflate --store "$s" &&
  "$trove" volume rm gen-deflate --store "$s" || bad "volume rm columnar"
expect_error import import "$tmp/g.wire" --store "$s" --segment-format packed
check grep -q "not deflate, columnar, columnar_deflate or model" "$tmp/e.err"
expect_error import import "$tmp/g.wire" -o "$tmp/x.wire" --segment-format columnar

# A time range: exactly the events that start in it, in order.
a=$(sed -n '50000p' "$tmp/g.txt" | cut -d' ' -f1)
b=$(sed -n '120000p' "$tmp/g.txt" | cut -d' ' -f1)
exits 0 t replay gen --from-ns "$a" --to-ns "$b" -o "$tmp/rr.wire" --budget 1M --depth 8
"$trove" cat "$tmp/rr.wire" > "$tmp/rr.txt" || bad "cat rr"
range "$tmp/g.txt" "$a" "$b" > "$tmp/want.txt"
check cmp -s "$tmp/want.txt" "$tmp/rr.txt"
check test "$(wc -l < "$tmp/rr.txt")" -gt 60000
exits 0 t replay gen --from-ns "$a" --to-ns "$a" -o "$tmp/empty.wire"
check test "$("$trove" cat "$tmp/empty.wire" | wc -l)" -eq 0
exits 0 t replay gen --from-ns "$b" --wire raw -o "$tmp/tail.wire"
"$trove" cat "$tmp/tail.wire" > "$tmp/tail.txt"
range "$tmp/g.txt" "$b" 18446744073709551615 > "$tmp/want.txt"
check cmp -s "$tmp/want.txt" "$tmp/tail.txt"

# Replay errors: one line, no output file left.
expect_error replay replay nosuch --store "$s" -o "$tmp/no.wire"
check grep -q "no capture named nosuch" "$tmp/e.err"
check test ! -e "$tmp/no.wire"
check test ! -e "$tmp/no.wire.tmp"
expect_error replay replay gen --store "$s" --wire zip
expect_error replay replay gen --store "$s" --from-ns 10 --to-ns 5
expect_error replay replay gen --store "$tmp/nostore"
"$trove" volume create blk --size 1M --store "$s" 2> /dev/null || bad "volume create"
expect_error replay replay blk --store "$s"
check grep -q "not a capture" "$tmp/e.err"
expect_error import import "$tmp/g.wire" --store "$s" --name blk
check grep -q "block volume" "$tmp/e.err"
t ls --json > "$tmp/ls.json" || bad "ls"
json "$tmp/ls.json" '[e["name"] for e in j] == ["gen", "gen2"]'

# A damaged segment: replay names the segment and its object.
seg=$(python3 - "$s" <<'EOF'
import os, sys
# the first loose object holding model frames ("TV", format 8): one of gen's segments
for root, _, files in sorted(os.walk(os.path.join(sys.argv[1], "objects"))):
    for f in sorted(files):
        p = os.path.join(root, f)
        if len(f) == 32 and open(p, "rb").read(3) == b"TV\x08":
            print(p)
            sys.exit(0)
EOF
)
if [ -n "$seg" ]; then
  cp "$seg" "$tmp/seg.bak"
  chmod u+w "$seg"
  python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(0); f.write(b"XX")' "$seg"
  expect_error replay replay gen --store "$s" -o "$tmp/bad.wire"
  check grep -q "segment [0-9]* (slot [0-9]*) (object $(basename "$seg"))" "$tmp/e.err"
  check grep -q "do not hash to its name" "$tmp/e.err"
  check test ! -e "$tmp/bad.wire"
  expect_error export export --capture gen --store "$s" -o "$tmp/bad.zip"
  check grep -q "$(basename "$seg")" "$tmp/e.err"
  check test ! -e "$tmp/bad.zip"
  # Without verification the decoders still see this damage (the frame magic), differently.
  expect_error replay replay gen --store "$s" -o "$tmp/bad.wire" --no-verify
  check grep -q "segment [0-9]* (slot [0-9]*) (object $(basename "$seg"))" "$tmp/e.err"
  if grep -q "do not hash" "$tmp/e.err"; then bad "--no-verify still verified"; else ok; fi
  check test ! -e "$tmp/bad.wire"
  # The read quarantined it: even plain verify reports it now, naming who needs it.
  exits 1 t verify --json
  segname=$(basename "$seg")
  json "$tmp/out" 'j["quarantined"] == 1 and j["bad_hash"] == 1 and j["deep"] is False and len(j["damaged"]) >= 1 and all(d["volume"] in ("gen", "gen2") and d["object"] == "'"$segname"'" for d in j["damaged"])'
  exits 1 t verify
  check grep -q "^damaged: object $(basename "$seg"), named by volume gen slot [0-9]*" "$tmp/out"
  check grep -q "^damaged: object $(basename "$seg"), named by volume gen2 slot [0-9]*" "$tmp/out"
  check grep -q '^contents not read' "$tmp/out"
  # Putting the same content again heals it: import the stream the capture came from.
  exits 0 t import "$tmp/g.wire" --name gen --segment-bytes 64K --quiet
  check cmp -s "$tmp/seg.bak" "$seg"
  exits 0 t verify --deep --json
  json "$tmp/out" 'j["ok"] is True and j["quarantined"] == 0 and j["damaged"] == []'
  exits 0 t replay gen -o "$tmp/healed.wire"
else
  bad "no loose segment object found"
fi

# A capture whose recipe cannot be read is still listed, with the reason, and ls exits 1
# after listing the others; --json gives it an "error" field.
rcp="$s/volumes/gen2.recipe"
if [ -f "$rcp" ]; then
  cp "$rcp" "$tmp/rcp.bak"
  chmod u+w "$rcp"
  python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(20); b = f.read(1); f.seek(20); f.write(bytes([b[0] ^ 0xff]))' "$rcp"
  exits 1 t ls
  check grep -q '^gen2 .*unreadable: ' "$tmp/out"
  check grep -q '^gen ' "$tmp/out"
  check grep -q '^trove ls: .*1 of 2 captures cannot be read' "$tmp/err"
  exits 1 t ls --json
  json "$tmp/out" '[e["name"] for e in j] == ["gen", "gen2"] and "error" not in j[0] and "error" in j[1] and j[1]["error"]'
  cp "$tmp/rcp.bak" "$rcp"
  exits 0 t ls
else
  bad "no recipe file for gen2"
fi
fi

# ---- bundles and Parquet ---------------------------------------------------------------
if section bundles_and_parquet; then
"$trove" export "$tmp/g.wire" -o "$tmp/g.zip" --quiet || bad "export bundle"
"$trove" export "$tmp/g.wire" -o "$tmp/g.parquet" --format parquet --quiet || bad "export parquet"
exits 0 t import "$tmp/g.zip" --name fromzip
exits 0 t replay fromzip -o "$tmp/z.wire"
"$trove" cat "$tmp/z.wire" > "$tmp/z.txt"
check cmp -s "$tmp/g.txt" "$tmp/z.txt"
exits 0 t import "$tmp/g.parquet" --name frompq --json
json "$tmp/out" 'j["events"] == 200000 and j["names"] == 0'
# Export straight from the store, through the pipeline: the same bundle as exporting the
# stream the capture came from (the manifest named alike), and a time range of it.
exits 0 "$trove" export --capture gen --store "$s" -o "$tmp/cap.zip" --name g --quiet
check cmp -s "$tmp/g.zip" "$tmp/cap.zip"
exits 0 "$trove" export --capture gen --store "$s" --from-ns "$a" --to-ns "$b" -o "$tmp/cr.zip"
exits 0 "$trove" import "$tmp/cr.zip" -o "$tmp/cr.wire"
"$trove" cat "$tmp/cr.wire" > "$tmp/cr.txt"
range "$tmp/g.txt" "$a" "$b" > "$tmp/want.txt"
check cmp -s "$tmp/want.txt" "$tmp/cr.txt"
json --zip manifest.json "$tmp/cr.zip" "j['capture'] == 'gen' and j['counts']['events'] == $(wc -l < "$tmp/want.txt")"
expect_error export export --capture nosuch --store "$s" -o "$tmp/no.zip"
check grep -q "no capture named nosuch" "$tmp/e.err"
check test ! -e "$tmp/no.zip"
expect_error export export "$tmp/g.wire" --capture gen --store "$s" -o "$tmp/no.zip"
expect_error export export "$tmp/g.wire" --store "$s" -o "$tmp/no.zip"
expect_error export export --capture gen --store "$s" --from-ns 10 --to-ns 5 -o "$tmp/no.zip"
check test ! -e "$tmp/no.zip"
# Without --store, import still writes a wire stream from a bundle.
exits 0 "$trove" import "$tmp/g.zip" -o "$tmp/zz.wire" --to raw
"$trove" cat "$tmp/zz.wire" > "$tmp/zz.txt"
check cmp -s "$tmp/g.txt" "$tmp/zz.txt"
fi

# ---- the default store -----------------------------------------------------------------
if section default_store; then
mkdir "$tmp/cwd"
(cd "$tmp/cwd" && "$trove" import "$tmp/g.wire" --quiet) || bad "import into ./trove-data"
check test -d "$tmp/cwd/trove-data/volumes"
(cd "$tmp/cwd" && "$trove" ls) > "$tmp/out" || bad "ls ./trove-data"
check grep -q '^g ' "$tmp/out"            # the name defaults to IN's base name
TROVE_STORE=$s "$trove" ls > "$tmp/out" || bad "ls \$TROVE_STORE"
check grep -q '^gen2 ' "$tmp/out"
fi

# ---- a terminal gets text ----------------------------------------------------------------
if section terminal_gets_text; then
if command -v script > /dev/null 2>&1; then
  script -qec "$trove replay gen --store $s --from-ns $a --to-ns $b" /dev/null 2> /dev/null |
    tr -d '\r' > "$tmp/tty.txt"
  range "$tmp/g.txt" "$a" "$b" > "$tmp/want.txt"
  check cmp -s "$tmp/want.txt" "$tmp/tty.txt"
fi
fi

# ---- Ctrl-C and SIGTERM ---------------------------------------------------------------------
# The reader opens the pipe at once but reads only after two seconds, so the replay is
# under way (blocked in a write) when the signal comes; it must stop, say so, and exit
# 128 + the signal. (A background job of a script ignores SIGINT, and replay keeps it
# ignored, so SIGINT is sent to a job that restored its default first; the signal waits
# until that job is trove, as python can take longer than the pause to start on a loaded
# machine, and a SIGINT it got first would be ignored.)
if section ctrl_c_and; then
mkfifo "$tmp/fifo"
for sig in TERM INT; do
  (exec 3< "$tmp/fifo"; sleep 2; cat <&3 > /dev/null) &
  reader=$!
  if [ $sig = INT ]; then
    python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
      "$trove" replay gen --wire raw --store "$s" > "$tmp/fifo" 2> "$tmp/int.err" &
  else
    "$trove" replay gen --wire raw --store "$s" > "$tmp/fifo" 2> "$tmp/int.err" &
  fi
  pid=$!
  for _ in $(seq 1 200); do
    [ "$(readlink "/proc/$pid/exe" 2> /dev/null)" = "$(readlink -f "$trove")" ] && break
    sleep 0.05
  done
  sleep 0.5
  kill -$sig "$pid"
  wait "$pid"
  rc=$?
  wait "$reader"
  if [ $sig = INT ]; then check test $rc -eq 130; else check test $rc -eq 143; fi
  check grep -q "^trove replay: interrupted (SIG$sig)" "$tmp/int.err"
done
fi

# ---- the sample trace ----------------------------------------------------------------------
if section sample_trace; then
if [ -n "$data" ] && [ -r "$data/chrome-trace-dom.json.zst" ] && command -v zstd > /dev/null 2>&1; then
  zstd -dcq "$data/chrome-trace-dom.json.zst" > "$tmp/trace.json"
  exits 0 t import "$tmp/trace.json" --name sample --json --quiet
  json "$tmp/out" 'j["events"] == 306749 and j["segments"] == 5 and j["segment_format"] == "model" and j["new_objects"] == 8 + 6 + 6 and j["attr_rows"] > 1000000'  # 5 model segments of 65,536 events + the header, names and flows, the summaries, the attributes (each segment's, the trace's)
  exits 0 t import "$tmp/trace.json" --name sample --json --quiet
  json "$tmp/out" 'j["new_objects"] == 0'
  "$trove" convert "$tmp/trace.json" "$tmp/trace.raw" --to raw --quiet || bad "convert sample"
  exits 0 t replay sample --wire raw -o "$tmp/sample.raw"
  check cmp -s "$tmp/trace.raw" "$tmp/sample.raw"
  "$trove" cat "$tmp/trace.json" > "$tmp/trace.txt" 2> /dev/null
  exits 0 t replay sample -o "$tmp/sample.deflate"
  "$trove" cat "$tmp/sample.deflate" > "$tmp/sample.txt"
  check cmp -s "$tmp/trace.txt" "$tmp/sample.txt"
  a=$(sed -n '100000p' "$tmp/trace.txt" | cut -d' ' -f1)
  b=$(sed -n '100500p' "$tmp/trace.txt" | cut -d' ' -f1)
  exits 0 t replay sample --from-ns "$a" --to-ns "$b" -o "$tmp/sr.wire"
  "$trove" cat "$tmp/sr.wire" > "$tmp/sr.txt"
  range "$tmp/trace.txt" "$a" "$b" > "$tmp/want.txt"
  check cmp -s "$tmp/want.txt" "$tmp/sr.txt"
  check test "$(wc -l < "$tmp/sr.txt")" -ge 400
  exits 0 t verify --deep
fi
fi

# ---- names past one object -------------------------------------------------------------
# 450,000 distinct event names, 25 MB of names frames: more than an object's 16 MiB, so the
# capture keeps them in parts. The import stores it (and again, nothing new), ls lists it,
# and every name comes back through cat and through a Chrome JSON export.
if section names_past_one; then
python3 - "$tmp/names.json" <<'EOF'
import sys
n = 450000
with open(sys.argv[1], "w") as f:
    f.write('{"traceEvents":[\n')
    for i in range(n):
        f.write('{"name":"fn_%07d_%s","ph":"X","ts":%d,"dur":1,"pid":1,"tid":1}%s\n'
                % (i, "x" * 40, i, "," if i + 1 < n else ""))
    f.write(']}\n')
EOF
exits 0 t import "$tmp/names.json" --name manynames --json --quiet
json "$tmp/out" 'j["events"] == 450000 and j["names"] == 450000 and j["stored_bytes"] > 16 * 2**20'
exits 0 t import "$tmp/names.json" --name manynames --json --quiet
json "$tmp/out" 'j["new_objects"] == 0 and j["names"] == 450000'
exits 0 t ls
check grep -q '^manynames  *450000 events ' "$tmp/out"
exits 0 t cat store:manynames
check test "$(awk '{print $8}' "$tmp/out" | sort -u | grep -c '^fn_[0-9]*_x*$')" -eq 450000
exits 0 "$trove" export --capture manynames --store "$s" --format chrome-json -o "$tmp/names-out.json" --quiet
json "$tmp/names-out.json" 'len({x["name"] for x in (j["traceEvents"] if isinstance(j, dict) else j) if x.get("ph") == "X"}) == 450000'
exits 0 t verify
fi

finish
