#!/usr/bin/env bash
# cli_damage.sh: one byte flipped in each kind of stored object — a file volume's block, its
# v3 dictionary chunk, column segment, page and manifest, a pack file's index, and a
# capture's header, names and event segment. For each, in a store of its own: every read
# path fails cleanly, naming what is damaged (`volume cat`, `replay -o`, `export --capture
# -o`, `ls`), and leaves no output file; `verify` finds it without reading contents where it
# can (everything but a block's or segment's bytes, which need `--deep` the first time);
# putting the good content again (`volume put`, `import`) heals it, after which `verify
# --deep` is clean, the bytes read back exactly, and gc leaves nothing unreadable behind.
# usage: cli_damage.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE TROVE_RECIPE_FORMAT

s=$tmp/s
t() { "$trove" "$@" --store "$s"; }
head -c 3000000 /dev/urandom > "$tmp/f.bin"
"$trove" gen -o "$tmp/g.wire" --events 20000 --seed 7 2> /dev/null || bad "gen"
"$trove" cat "$tmp/g.wire" > "$tmp/g.txt" 2> /dev/null || bad "cat g.wire"

# locate STORE WHAT: "FILE OFFSET" of a byte inside the first stored thing of kind WHAT:
#   P, D, S  a v3 page, dictionary chunk or column segment (in a pack file; its payload)
#   index    a pack file's index
#   loose:HEX  a loose object whose bytes start with the hex prefix (a capture's header is
#            "TROVCAP1", a summary "TROVSUM1", its names frame "TV\x04", a segment "TV\x08"
#            (model, the import's default); a file block is the one object that is none of
#            these)
locate() {
  python3 - "$1" "$2" <<'EOF'
import os, struct, sys
store, what = sys.argv[1], sys.argv[2]
packs = os.path.join(store, "objects", "packs")
if what in ("P", "D", "S", "index"):
    for name in sorted(os.listdir(packs)):
        if not name.endswith(".pack"):
            continue
        p = os.path.join(packs, name)
        b = open(p, "rb").read()
        magic, count, ioff, _ = struct.unpack("<8sQQQ", b[-32:])
        assert magic == b"TRVPACK1"
        if what == "index":
            print(p, ioff + 3)
            sys.exit(0)
        for k in range(count):
            _, off, ln = struct.unpack("<16sQQ", b[ioff + 32 * k:ioff + 32 * k + 32])
            if b[off:off + 4] == b"TRV3" and chr(b[off + 4]) == what and ln > 9:
                print(p, off + ln - 1)  # the last byte: payload, past the header
                sys.exit(0)
else:
    want = bytes.fromhex(what.split(":")[1]) if ":" in what else None
    for root, dirs, files in sorted(os.walk(os.path.join(store, "objects"))):
        dirs[:] = [d for d in sorted(dirs) if d != "packs"]
        for f in sorted(files):
            p = os.path.join(root, f)
            head = open(p, "rb").read(8)
            if want is not None and head.startswith(want):
                print(p, 9)
                sys.exit(0)
            if want is None and not head.startswith(b"TROV") and not head.startswith(b"TV"):
                print(p, 100)
                sys.exit(0)
sys.exit("nothing of kind %s in %s" % (what, store))
EOF
}
flip() {
  python3 -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0x5a]))' "$1" "$2"
}
# fails_naming PATTERN CMD...: CMD exits non-zero, its stderr matches PATTERN, and no -o
# output file ($tmp/o.*) is left.
fails_naming() {
  local pat=$1 rc
  shift
  rm -f "$tmp"/o.*
  "$@" > "$tmp/out" 2> "$tmp/err"
  rc=$?
  if [ $rc -ne 0 ] && grep -qE "$pat" "$tmp/err" && [ -z "$(ls "$tmp"/o.* 2> /dev/null)" ]; then
    ok
  else
    bad "$* (rc $rc; want a failure naming /$pat/, no output file): $(head -c 400 "$tmp/err")"
  fi
}
fresh() {
  rm -rf "$s"
  t volume put v "$tmp/f.bin" --block-size 64K 2> /dev/null || bad "put v"
  t import "$tmp/g.wire" --name cap --segment-bytes 64K --quiet > /dev/null 2>&1 || bad "import"
}
# healed: good content again, then verify --deep clean, the bytes back, and after gc
# nothing unreadable is left.
healed() {
  t volume put v "$tmp/f.bin" 2> "$tmp/err" || bad "put v again ($(cat "$tmp/err"))"
  t import "$tmp/g.wire" --name cap --segment-bytes 64K --quiet > /dev/null 2> "$tmp/err" ||
    bad "import again ($(cat "$tmp/err"))"
  exits 0 t verify --deep --json
  json "$tmp/out" 'j["ok"] is True and j["bad_recipes"] == 0 and j["bad_hash"] == 0 and j["quarantined"] == 0'
  t volume cat v 2> /dev/null | cmp -s - "$tmp/f.bin" || bad "$1: v does not read back after the heal"
  t replay cap -o "$tmp/back.wire" --quiet 2> /dev/null || bad "$1: replay after the heal"
  "$trove" cat "$tmp/back.wire" 2> /dev/null | cmp -s - "$tmp/g.txt" || bad "$1: cap does not read back after the heal"
  exits 0 t gc --json
  exits 0 t verify --json
  json "$tmp/out" 'j["ok"] is True and j["bad_packs"] == []'
}

# ---- the file volume's objects --------------------------------------------------------
# what, where, the pattern the error names, and what plain verify sees.
if section file_volume_objects; then
for kind in block D S P manifest index; do
  fresh
  # Only v's objects are damaged: drop the capture first, so packs and loose objects are v's.
  t volume rm cap > /dev/null 2>&1 && t gc > /dev/null 2>&1 || bad "$kind: rm cap"
  case $kind in
    block) set -- $(locate "$s" loose); pat="object [0-9a-f]{32}.*(do not hash|damaged)" ;;
    D) set -- $(locate "$s" D); pat="dictionary chunk 0 \(object [0-9a-f]{32}\) does not hash" ;;
    S) set -- $(locate "$s" S); pat="segment 0 \(object [0-9a-f]{32}\) does not hash" ;;
    P) set -- $(locate "$s" P); pat="page 0 \(object [0-9a-f]{32}\) does not hash" ;;
    manifest) # a byte of its page list, which only the manifest's checksum covers
      set -- "$s/volumes/v.recipe" $(($(stat -c %s "$s/volumes/v.recipe") - 12))
      pat="v\.recipe.*checksum" ;;
    index) set -- $(locate "$s" index); pat="page 0 \(object [0-9a-f]{32}\) is missing" ;;
  esac
  flip "$1" "$2"
  if [ "$kind" = block ]; then
    # Its bytes are not read by plain verify: --deep finds it (and quarantines it), and from
    # then on plain verify and every read name it too.
    exits 0 t verify
    exits 1 t verify --deep --json
    json "$tmp/out" 'j["bad_hash"] == 1 and j["quarantined"] == 1 and [d["volume"] for d in j["damaged"]] == ["v"]'
  fi
  fails_naming "$pat" t volume cat v
  exits 1 t verify --json
  case $kind in
    block) json "$tmp/out" 'j["bad_hash"] == 1 and j["deep"] is False' ;;
    index) json "$tmp/out" 'j["bad_recipes"] == 1 and len(j["bad_packs"]) == 1 and "index" in j["bad_packs"][0]["why"]' ;;
    *) json "$tmp/out" 'j["bad_recipes"] == 1 and j["deep"] is False' ;;
  esac
  # gc cannot tell what a damaged recipe names: it refuses and deletes nothing.
  if [ "$kind" != block ]; then exits 1 t gc; fi
  healed "$kind"
done
fi

# ---- the capture's objects --------------------------------------------------------------
if section capture_objects; then
for kind in header names segment D S; do
  fresh
  t volume rm v > /dev/null 2>&1 && t gc > /dev/null 2>&1 || bad "$kind: rm v"
  case $kind in
    header) set -- $(locate "$s" loose:54524f5643415031); pat="header \(slot 0\) \(object [0-9a-f]{32}\)" ;;
    names) set -- $(locate "$s" loose:545604); pat="names \(slot 1\) \(object [0-9a-f]{32}\)" ;;
    segment) set -- $(locate "$s" loose:545608); pat="segment [0-9]+ \(slot [0-9]+\) \(object [0-9a-f]{32}\)" ;;
    D) set -- $(locate "$s" D); pat="dictionary chunk 0 \(object [0-9a-f]{32}\) does not hash" ;;
    S) set -- $(locate "$s" S); pat="segment 0 \(object [0-9a-f]{32}\) does not hash" ;;
  esac
  flip "$1" "$2"
  if [ "$kind" = header ] || [ "$kind" = names ] || [ "$kind" = segment ]; then
    exits 0 t verify # contents not read
    exits 1 t verify --deep --json
    json "$tmp/out" 'j["bad_hash"] == 1 and [d["volume"] for d in j["damaged"]] == ["cap"]'
  fi
  fails_naming "$pat" t replay cap -o "$tmp/o.wire" --quiet
  fails_naming "$pat" t export --capture cap -o "$tmp/o.zip" --quiet
  exits 1 t verify
  case $kind in
    header|D|S) exits 1 t ls --json
                json "$tmp/out" '[e["name"] for e in j if e.get("error")] == ["cap"]' ;;
    names|segment) # readable, but an object it names is on record as damaged: marked, exit 1
                exits 1 t ls --json
                json "$tmp/out" '[(e["name"], e["damaged"]) for e in j] == [("cap", 1)]'
                exits 1 t ls
                check grep -q '^cap .*DAMAGED: 1 slot names damaged objects$' "$tmp/out"
                check grep -q "1 of 1 captures have damaged objects on record" "$tmp/err" ;;
  esac
  healed "$kind"
done
fi

# ---- verify --repair --from: another copy puts back what is missing or damaged -------------
if section verify_repair_from; then
fresh
"$trove" store copy "$s" "$tmp/copy" -q 2> /dev/null || bad "store copy to the other copy"
set -- $(locate "$s" loose:545608)
rm -f "$1" # one segment gone
set -- $(locate "$s" loose:545608)
flip "$1" 9 # another damaged, and no read has found it yet
exits 1 t verify --repair --json # nothing to fetch them from: still missing
json "$tmp/out" 'j["missing_objects"] == 1 and "repaired" not in j'
exits 0 t verify --repair --from "$tmp/copy" --json # contents not read: the damage not seen
json "$tmp/out" 'j["repaired"] == 1 and j["missing_objects"] == 0 and not j["deep"]'
exits 0 t verify --deep --repair --from "$tmp/copy" --json # the deep read finds the other
json "$tmp/out" 'j["ok"] and j["repaired"] == 1 and j["unavailable"] == 0 and j["bad_hash"] == 0 and j["damaged"] == []'
t replay cap -o "$tmp/back.wire" --quiet 2> /dev/null || bad "replay after the repair"
"$trove" cat "$tmp/back.wire" 2> /dev/null | cmp -s - "$tmp/g.txt" || bad "cap does not read back after the repair"
# A copy that lacks it too: counted unavailable, and verify still fails.
set -- $(locate "$s" loose)
rm -f "$1"
rm -rf "$tmp/empty" && "$trove" volume create e --size 4K --store "$tmp/empty" > /dev/null 2>&1
exits 1 t verify --repair --from "$tmp/empty" --json
json "$tmp/out" 'j["repaired"] == 0 and j["unavailable"] == 1 and j["missing_objects"] == 1'
exits 2 t verify --from "$tmp/copy"
rm -rf "$tmp/copy" "$tmp/empty"
fi

# ---- an object gone missing behind the store's back -------------------------------------
# The recipes still name it; writing the same content under the same name puts it again
# (a slot that already names a digest does not make its object present).
if section object_gone_missing; then
for kind in block header segment; do
  fresh
  case $kind in
    block) set -- $(locate "$s" loose) ;;
    header) set -- $(locate "$s" loose:54524f56) ;;
    segment) set -- $(locate "$s" loose:545608) ;;
  esac
  rm -f "$1"
  exits 1 t verify --json
  json "$tmp/out" 'j["missing_objects"] == 1'
  healed "missing $kind"
done
fi

finish
