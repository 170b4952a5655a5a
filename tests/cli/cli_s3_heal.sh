#!/usr/bin/env bash
# cli_s3_heal.sh: damage on S3 is kept on record and healed as on disk, and the counts say
# what happened — against a real S3 API (Swift with s3api on loopback, tests/s3/up.sh).
# Objects are damaged and deleted behind the store's back with s3cmd: a loose object's
# bytes, a packed object's bytes inside its pack, a loose object gone, a volume's block
# gone. For each, verify (--deep the first time) finds it and lists the slots that need it,
# `trove ls` marks the capture and exits 1, and writing the same content under the same
# name — `trove import`, `trove volume put`, `trove store copy` — or `verify --repair --from`
# a copy on disk heals it: verify --deep clean and the bytes read back. A re-import of identical content uploads nothing and says
# so (new_objects 0, new_bytes 0), gc counts no object in use as young, and a replay with
# -q prints nothing.
# usage: cli_s3_heal.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
command -v s3cmd > /dev/null 2>&1 || { echo "skipped: s3cmd not installed (make deps)"; exit 77; }

up_out=$("$src/tests/s3/up.sh")
rc=$?
[ $rc -eq 77 ] && { echo "skipped: Swift is not installed (make deps)"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: tests/s3/up.sh exited $rc"; exit 1; }
eval "$up_out"
trap '"$src/tests/s3/down.sh" "$TROVE_S3_DIR"; rm -rf "$tmp"' EXIT
export TROVE_S3_LEASE_SEC=5
S=s3://trove-heal/caps
F=$tmp/fs
t3() { "$trove" "$@" --store "$S"; }
host=${TROVE_S3_ENDPOINT#http://}
s3c() { s3cmd --host="$host" --host-bucket="$host" --no-ssl --access_key="$AWS_ACCESS_KEY_ID" \
    --secret_key="$AWS_SECRET_ACCESS_KEY" --region="$AWS_REGION" "$@"; }
# flip_key KEY OFFSET: one byte of S3 object KEY changed, the rest kept.
flip_key() {
  s3c -q get --force "$1" "$tmp/k.bin" &&
    python3 -c 'import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[int(sys.argv[2])] ^= 0x5a
open(sys.argv[1], "wb").write(b)' "$tmp/k.bin" "$2" &&
    s3c -q put "$tmp/k.bin" "$1" || bad "damaging $1"
}
# 8 MiB deflate segments of gen events compress to over 1 MiB: stored loose; the header and
# the names are small: packed. (Model segments, the default, would all be packed.)
"$trove" gen -o "$tmp/m.wire" --events 600000 --seed 5 2> /dev/null || bad "gen"
"$trove" cat "$tmp/m.wire" > "$tmp/m.txt" 2> /dev/null || bad "cat m.wire"
imp() { t3 import "$tmp/m.wire" --name cap --segment-bytes 8M --segment-format deflate -q --json; }
healed() { # WHAT: verify --deep clean, the capture reads back, ls is content
  exits 0 t3 verify --deep --json
  json "$tmp/out" 'j["ok"] and j["missing_objects"] == 0 and j["bad_hash"] == 0 and j["quarantined"] == 0 and j["damaged"] == []'
  t3 replay cap -o "$tmp/back.wire" -q 2> /dev/null || bad "$1: replay after the heal"
  "$trove" cat "$tmp/back.wire" 2> /dev/null | cmp -s - "$tmp/m.txt" || bad "$1: cap does not read back"
  exits 0 t3 ls --json
  json "$tmp/out" '[(c["name"], c["damaged"]) for c in j if c["name"] == "cap"] == [("cap", 0)]'
}

# ---- honest counts -------------------------------------------------------------------
if section honest_counts; then
exits 0 imp
json "$tmp/out" 'j["new_objects"] >= 5 and j["new_bytes"] > 2 << 20'
loose=$(s3c ls s3://trove-heal/caps/objects/ | awk '{print $4}')
check test "$(echo "$loose" | wc -l)" -ge 2
# The same content again: nothing is uploaded, and the import says so.
exits 0 imp
json "$tmp/out" 'j["new_objects"] == 0 and j["new_bytes"] == 0'
check test "$(s3c ls s3://trove-heal/caps/objects/ | awk '{print $4}')" = "$loose"
# gc: every object is named by cap, so none is "young" (kept only for the grace period).
exits 0 t3 gc --json
json "$tmp/out" 'j["objects_deleted"] == 0 and j["objects_young"] == 0 and j["objects_seen"] > 0'
# A replay with -q prints nothing (no marker is kept on S3, and none is tried).
exits 0 t3 replay cap -o "$tmp/r.wire" -q
check test ! -s "$tmp/err"
exits 0 t3 replay cap -o "$tmp/r.wire"
check test "$(grep -c 'marker' "$tmp/err")" = 0
fi

# ---- a loose object's bytes damaged in the bucket --------------------------------------
if section loose_object_bytes; then
k=$(echo "$loose" | head -1)
flip_key "$k" 100
exits 0 t3 verify --json # contents not read: not found yet
exits 1 t3 verify --deep --json
json "$tmp/out" 'j["bad_hash"] == 1 and j["quarantined"] == 1 and [(d["volume"], d["object"]) for d in j["damaged"]] == [("cap", "'"${k##*/}"'")]'
exits 1 t3 verify --json # on record now: plain verify lists it too
json "$tmp/out" 'j["quarantined"] == 1 and [d["volume"] for d in j["damaged"]] == ["cap"]'
exits 1 t3 replay cap -o "$tmp/o.wire" -q
check grep -q "does not hash to its name\|do not hash to its name" "$tmp/err"
exits 1 t3 ls --json
json "$tmp/out" '[(c["name"], c["damaged"]) for c in j] == [("cap", 1)]'
exits 1 t3 ls
check grep -q '^cap .*DAMAGED: 1 slot names damaged objects$' "$tmp/out"
exits 0 imp # the good bytes again heal it
json "$tmp/out" 'j["new_objects"] == 1'
healed "loose damaged"
fi

# ---- a packed object's bytes damaged inside its pack ------------------------------------
if section packed_object_bytes; then
p=$(s3c ls s3://trove-heal/caps/packs/ | awk '$4 !~ /\.(dead|bad)$/ {print $3, $4}' | sort -n | tail -1 | cut -d' ' -f2)
flip_key "$p" 40 # the first object's bytes, past its frame header
exits 1 t3 verify --deep --json
json "$tmp/out" 'j["bad_hash"] == 1 and [d["volume"] for d in j["damaged"]] == ["cap"]'
exits 0 imp
healed "packed damaged"
fi

# ---- a loose object gone from the bucket ----------------------------------------------
if section loose_object_gone; then
k=$(s3c ls s3://trove-heal/caps/objects/ | awk '{print $4}' | head -1)
s3c -q del "$k" || bad "del $k"
exits 1 t3 verify --json
json "$tmp/out" 'j["missing_objects"] == 1'
exits 0 imp
json "$tmp/out" 'j["new_objects"] == 1'
healed "loose missing"
fi

# ---- trove store copy from a store that holds the content -----------------------------
if section trove_store_copy; then
exits 0 "$trove" import "$tmp/m.wire" --name cap --segment-bytes 8M --segment-format deflate -q --store "$F"
k=$(s3c ls s3://trove-heal/caps/objects/ | awk '{print $4}' | head -1)
flip_key "$k" 200
exits 1 t3 verify --deep --json
exits 0 "$trove" store copy "$F" "$S" --json
json "$tmp/out" 'j["volumes_same"] == 1 and j["objects_copied"] == 1'
healed "store copy"
fi

# ---- verify --repair --from: the copy on disk puts back what S3 lost ---------------------
if section verify_repair_from; then
k1=$(s3c ls s3://trove-heal/caps/objects/ | awk '{print $4}' | sed -n 1p)
k2=$(s3c ls s3://trove-heal/caps/objects/ | awk '{print $4}' | sed -n 2p)
s3c -q del "$k1" || bad "del $k1"
flip_key "$k2" 300
exits 0 t3 verify --deep --repair --from "$F" --json
json "$tmp/out" 'j["ok"] and j["deep"] and j["repaired"] == 2 and j["unavailable"] == 0 and j["damaged"] == []'
healed "verify --repair --from"
fi

# ---- a volume's block gone: volume put of the same file restores it ---------------------
if section volume_block_gone; then
head -c 5000000 /dev/urandom > "$tmp/v.bin"
# the loose objects before v: the capture's (a heal above may have put one loose)
mine=$(s3c ls s3://trove-heal/caps/objects/ | awk '{print $4}' | sort)
exits 0 t3 volume put v "$tmp/v.bin"
before=$(s3c ls s3://trove-heal/caps/objects/ | awk '{print $4}' | sort)
exits 0 t3 volume put v "$tmp/v.bin" # unchanged: nothing uploaded
check test "$(s3c ls s3://trove-heal/caps/objects/ | awk '{print $4}' | sort)" = "$before"
k=$(comm -13 <(echo "$mine") <(echo "$before") | head -1) # a block of v
check test -n "$k"
s3c -q del "$k" || bad "del $k"
exits 1 t3 verify --json
json "$tmp/out" 'j["missing_objects"] == 1'
exits 0 t3 volume put v "$tmp/v.bin"
exits 0 t3 verify --deep --json
json "$tmp/out" 'j["ok"] and j["missing_objects"] == 0'
t3 volume cat v 2> /dev/null | cmp -s - "$tmp/v.bin" || bad "v does not read back after the heal"
fi

finish
