#!/usr/bin/env bash
# cli_inputs.sh: one CLI a user can guess. Every command that reads events (cat, convert,
# export, import into a store and -o, bench wire --input) takes every input kind — a Chrome
# JSON trace plain, .gz and .zst, a Perfetto trace, a wire stream, a bundle, a Parquet events file, a dataset
# directory, store:NAME, and each of those kinds on stdin — and gets the same events from
# each. An input it cannot read is named with the kind it was read as. Every command that
# reports has --json that parses (one document on stdout, nothing else there); the shared
# flags mean the same everywhere (--wire and its old name --to, --batch and
# --frame-events, packed by default); exclusive options are refused by name; `trove help
# CMD` is `trove CMD --help`.
# usage: cli_inputs.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
s=$tmp/st

# A small Chrome trace (nested X zones, an instant, names) as the source of every kind.
python3 - "$tmp/t.json" <<'EOF'
import json, sys
ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "app"}},
      {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}}]
for i in range(3000):
    ev.append({"ph": "X", "name": "work%d" % (i % 17), "pid": 1, "tid": 2 + i % 3,
               "ts": 10 + 4 * i, "dur": 3})
    if i % 100 == 0:
        ev.append({"ph": "i", "name": "tick", "pid": 1, "tid": 2, "ts": 11 + 4 * i, "s": "t"})
json.dump({"traceEvents": ev}, open(sys.argv[1], "w"))
EOF
gzip -k "$tmp/t.json"
zstd -q "$tmp/t.json" -o "$tmp/t.json.zst"
"$trove" convert "$tmp/t.json" "$tmp/t.wire" -q || bad "convert"
"$trove" export "$tmp/t.wire" -o "$tmp/t.zip" -q || bad "export bundle"
"$trove" export "$tmp/t.wire" -o "$tmp/t.parquet" --format parquet -q || bad "export parquet"
"$trove" export "$tmp/t.wire" -o "$tmp/t.dir" --format dir -q || bad "export dir"
"$trove" export "$tmp/t.wire" -o "$tmp/t.pftrace" --format perfetto -q || bad "export perfetto"
"$trove" import "$tmp/t.wire" --store "$s" --name cap -q || bad "import"
"$trove" cat "$tmp/t.wire" > "$tmp/want.txt" || bad "cat"
check test "$(wc -l < "$tmp/want.txt")" -eq 3030
# A Parquet events file alone has no names: compare its events without them.
cut -d' ' -f1-7 "$tmp/want.txt" > "$tmp/want.cols"

inputs=("t.json" "t.json.gz" "t.json.zst" "t.pftrace" "t.wire" "t.zip" "t.parquet" "t.dir" "store:cap")
# same_events FILE: FILE (a `trove cat` listing) has the source's events.
same_events() { # $1 listing, $2 input name
  if [ "$2" = t.parquet ]; then cut -d' ' -f1-7 "$1" | cmp -s - "$tmp/want.cols"
  else cmp -s "$1" "$tmp/want.txt"; fi
}
in_path() { case $1 in store:*) echo "$1" ;; *) echo "$tmp/$1" ;; esac; }

for i in "${inputs[@]}"; do
  p=$(in_path "$i")
  st=() # --store goes with a store:NAME input only (given with a file, it is an error)
  [ "$i" = store:cap ] && st=(--store "$s")
  # cat
  "$trove" cat "$p" "${st[@]}" > "$tmp/o.txt" 2> "$tmp/err" || bad "cat $i: $(cat "$tmp/err")"
  same_events "$tmp/o.txt" "$i" || bad "cat $i: other events"
  # convert, then cat the result
  "$trove" convert "$p" "$tmp/o.wire" "${st[@]}" -q 2> "$tmp/err" || bad "convert $i: $(cat "$tmp/err")"
  "$trove" cat "$tmp/o.wire" > "$tmp/o.txt" && same_events "$tmp/o.txt" "$i" || bad "convert $i: other events"
  # export to a bundle and back
  "$trove" export "$p" -o "$tmp/o.zip" "${st[@]}" -q 2> "$tmp/err" || bad "export $i: $(cat "$tmp/err")"
  "$trove" cat "$tmp/o.zip" > "$tmp/o.txt" && same_events "$tmp/o.txt" "$i" || bad "export $i: other events"
  # import -o
  "$trove" import "$p" -o "$tmp/o2.wire" "${st[@]}" -q 2> "$tmp/err" || bad "import -o $i: $(cat "$tmp/err")"
  "$trove" cat "$tmp/o2.wire" > "$tmp/o.txt" && same_events "$tmp/o.txt" "$i" || bad "import -o $i: other events"
  # import into a store (a new one: store:cap is read from $s)
  rm -rf "$tmp/st2"
  TROVE_STORE=$s "$trove" import "$p" --store "$tmp/st2" --name x -q 2> "$tmp/err" ||
    { [ "$i" = store:cap ] && TROVE_STORE=$s "$trove" import "$p" --store "$s" --name x -q 2> "$tmp/err"; } ||
    bad "import $i: $(cat "$tmp/err")"
  # bench wire reads it too (and checks every decode against it)
  "$trove" bench wire --input "$p" --events 2000 --repeat 1 --json > "$tmp/b.json" 2> "$tmp/err" <&- ||
    TROVE_STORE=$s "$trove" bench wire --input "$p" --events 2000 --repeat 1 --json > "$tmp/b.json" 2> "$tmp/err" ||
    bad "bench wire --input $i: $(cat "$tmp/err")"
done
# A store:NAME import into the same store (TROVE_STORE is where store:cap is read).
TROVE_STORE=$s "$trove" cat store:x > "$tmp/o.txt" && check cmp -s "$tmp/o.txt" "$tmp/want.txt"

# Each file kind on stdin.
for i in t.json t.json.gz t.json.zst t.pftrace t.wire t.zip t.parquet; do
  "$trove" cat - < "$tmp/$i" > "$tmp/o.txt" 2> "$tmp/err" || bad "cat - < $i: $(cat "$tmp/err")"
  same_events "$tmp/o.txt" "$i" || bad "cat - < $i: other events"
  cat "$tmp/$i" | "$trove" convert - "$tmp/o.wire" -q 2> "$tmp/err" || bad "convert - < $i (a pipe)"
  "$trove" cat "$tmp/o.wire" > "$tmp/o.txt" && same_events "$tmp/o.txt" "$i" || bad "convert - < $i: other events"
done

# --input-format forces a kind; a wrong one is named in the error.
exits 0 "$trove" cat "$tmp/t.wire" --input-format wire
exits 1 "$trove" cat "$tmp/t.wire" --input-format parquet
check grep -q "t.wire (read as a Parquet events file)" "$tmp/err"
exits 2 "$trove" cat "$tmp/t.wire" --input-format csv
check grep -q "is not auto, chrome-json, wire, bundle, parquet, dir or capture" "$tmp/err"
# Unreadable inputs: the file, the kind it was read as, where, and what to try.
printf 'hello, not a trace' > "$tmp/x.txt"
expect_error cat cat "$tmp/x.txt"
check grep -q "x.txt: not something trove reads: it starts with 68 65 6c" "$tmp/e.err"
check grep -q -- "--input-format" "$tmp/e.err"
head -c 3000 "$tmp/t.wire" > "$tmp/cut.wire"
expect_error convert convert "$tmp/cut.wire" "$tmp/o.wire"
check grep -q "cut.wire (read as a wire stream): at byte 3000" "$tmp/e.err"
head -c 500 "$tmp/t.zip" > "$tmp/cut.zip"
expect_error export export "$tmp/cut.zip" -o "$tmp/o.zip"
check grep -q "cut.zip (read as a bundle): " "$tmp/e.err"
check test "$(grep -o "cut.zip" "$tmp/e.err" | wc -l)" -eq 1 # the path once
printf '{"traceEvents":[{"ph":"X",' | gzip > "$tmp/cut.json.gz"
expect_error cat cat "$tmp/cut.json.gz"
check grep -q "cut.json.gz (read as a Chrome JSON trace, unpacked from gzip): at byte" "$tmp/e.err"
expect_error cat cat "$tmp/none.json"
check grep -q "none.json: No such file" "$tmp/e.err"
expect_error cat cat store:nope --store "$s"
check grep -q "no capture named nope" "$tmp/e.err"
expect_error cat cat "$tmp/t.wire" --store "$s"
check grep -q "is not one" "$tmp/e.err"

# ---- flags: one spelling for one idea ----------------------------------------------------
if section flags; then
"$trove" convert "$tmp/t.wire" "$tmp/a.wire" -q || bad "convert (default wire)"
"$trove" convert "$tmp/t.wire" "$tmp/b.wire" --wire packed -q || bad "convert --wire packed"
"$trove" convert "$tmp/t.wire" "$tmp/c.wire" --to packed -q || bad "convert --to packed"
check cmp -s "$tmp/a.wire" "$tmp/b.wire"
check cmp -s "$tmp/a.wire" "$tmp/c.wire"
"$trove" replay cap --store "$s" -o "$tmp/r.wire" -q || bad "replay (default wire)"
"$trove" import "$tmp/t.wire" -o "$tmp/i.wire" -q || bad "import -o (default wire)"
"$trove" gen -o "$tmp/g1.wire" --events 3000 -q || bad "gen"
# the format bytes of a stream's frames (docs/formats/wire.md: a 16-byte header, then payload)
formats() {
  python3 -c 'import struct, sys
b = open(sys.argv[1], "rb").read(); i = 0; f = set()
while i < len(b):
    f.add(b[i + 2]); i += 16 + struct.unpack_from("<I", b, i + 8)[0]
print(" ".join(map(str, sorted(f))))' "$1"
}
for f in r.wire i.wire g1.wire; do # names (4) and packed (2) frames only
  check test "$(formats "$tmp/$f")" = "2 4"
done
"$trove" replay cap --store "$s" -o "$tmp/r1.wire" --batch 100 -q || bad "replay --batch"
"$trove" replay cap --store "$s" -o "$tmp/r2.wire" --frame-events 100 -q || bad "replay --frame-events"
check cmp -s "$tmp/r1.wire" "$tmp/r2.wire"
"$trove" gen -o "$tmp/g2.wire" --events 3000 --to raw -q && "$trove" gen -o "$tmp/g3.wire" --events 3000 --wire raw -q || bad "gen --to/--wire"
check cmp -s "$tmp/g2.wire" "$tmp/g3.wire"
# Exclusive options, refused by name.
expect_error replay replay cap --store "$s" -o "$tmp/r.wire" --no-sender --send-queue 4
check grep -q -- "--no-sender and --send-queue cannot go together" "$tmp/e.err"
expect_error convert convert "$tmp/t.wire" - --json
check grep -q -- "--json and OUT '-' (stdout) cannot go together" "$tmp/e.err"
fi

# ---- --json: one document on stdout, nothing else there ----------------------------------
if section json; then
jsonl() { # CMD...: stdout parses as exactly one JSON document, stderr is empty
  "$trove" "$@" > "$tmp/j.out" 2> "$tmp/j.err" || { bad "$* (rc $?): $(cat "$tmp/j.err")"; return; }
  json_check "$tmp/j.out" True || bad "$*: stdout is not one JSON document"
  check test ! -s "$tmp/j.err"
}
jsonl convert "$tmp/t.wire" "$tmp/o.wire" --json
json "$tmp/j.out" 'j["events"] == 3030 and j["wire"] == "packed" and j["bytes"] > 0'
jsonl gen -o "$tmp/o.wire" --events 1000 --json
json "$tmp/j.out" 'j["events"] == 1000 and j["batch"] == 2048'
jsonl replay cap --store "$s" -o "$tmp/o.wire" --json
json "$tmp/j.out" 'j["events"] == 3030 and j["capture"] == "cap"'
jsonl export "$tmp/t.wire" -o "$tmp/o.zip" --json
json "$tmp/j.out" 'j["events"] == 3030 and j["format"] == "bundle"'
jsonl import "$tmp/t.wire" -o "$tmp/o.wire" --json
json "$tmp/j.out" 'j["events"] == 3030 and j["names"] > 0'
jsonl import "$tmp/t.wire" --store "$s" --name cap2 --json
json "$tmp/j.out" 'j["events"] == 3030 and j["name"] == "cap2"'
head -c 1000000 /dev/urandom > "$tmp/f.bin"
jsonl volume put v "$tmp/f.bin" --store "$s" --json
json "$tmp/j.out" 'j["volume"] == "v" and j["bytes"] == 1000000'
jsonl snapshot v v-snap --store "$s" --json
json "$tmp/j.out" 'j == {"source": "v", "snapshot": "v-snap"}'
jsonl ls --store "$s" --json
jsonl volume ls --store "$s" --json
jsonl volume info v --store "$s" --json
jsonl verify --store "$s" --json
jsonl gc --store "$s" --json
jsonl bench wire --input "$tmp/t.wire" --events 1000 --repeat 1 --json
# volume put says what it did without -v now, and nothing with -q.
"$trove" volume put w "$tmp/f.bin" --store "$s" 2> "$tmp/err" > "$tmp/out" || bad "volume put"
check grep -q "trove volume put: .*f.bin -> w: 1000000 bytes" "$tmp/err"
"$trove" volume put w "$tmp/f.bin" --store "$s" -q 2> "$tmp/err" || bad "volume put -q"
check test ! -s "$tmp/err"
fi

# ---- help: `trove help CMD` is `trove CMD --help` ----------------------------------------
if section help; then
for c in convert cat export import gen replay ls verify gc snapshot bench volume; do
  "$trove" "$c" --help > "$tmp/h1" 2>&1
  "$trove" help "$c" > "$tmp/h2" 2>&1
  check cmp -s "$tmp/h1" "$tmp/h2"
  check test -s "$tmp/h1"
done
"$trove" volume put --help > "$tmp/h1"; "$trove" help volume put > "$tmp/h2"
check cmp -s "$tmp/h1" "$tmp/h2"
exits 2 "$trove" help nosuch

# A counter's value is printed as the value (its dur_ns holds the value's bits).
printf '{"traceEvents":[{"ph":"C","name":"mem","pid":1,"ts":5,"args":{"heap":12.5}}]}' > "$tmp/c.json"
"$trove" cat "$tmp/c.json" > "$tmp/c.txt" || bad "cat a counter"
check grep -q "^5000 12.5 1 [0-9]* counter " "$tmp/c.txt"
"$trove" cat "$tmp/c.json" --json > "$tmp/c.jsonl" || bad "cat --json a counter"
json "$tmp/c.jsonl" 'j["kind"] == "counter" and j["value"] == 12.5'

# The README's CLI section is `trove --help`, exactly.
python3 - "$2/README.md" > "$tmp/readme-help" <<'EOF'
import sys
text = open(sys.argv[1]).read()
block = text.split("## The CLI", 1)[1].split("```", 2)[1]
sys.stdout.write(block[1:] if block.startswith("\n") else block)
EOF
"$trove" --help > "$tmp/help"
check cmp -s "$tmp/readme-help" "$tmp/help"
fi


finish
