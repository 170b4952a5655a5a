#!/usr/bin/env bash
# cli_store.sh: the store commands end to end (`trove volume …`, snapshot, verify, gc) —
# bytes round-trip exactly through put, write, read and cat (unaligned ranges across block
# boundaries included), zero blocks empty their slots, identical blocks are stored once,
# snapshots keep their bytes through overwrites, rm and gc, verify finds missing and
# rewritten objects, a damaged recipe is named in the error and spoils no other volume, bad
# names touch nothing, and the store directory defaults to $TROVE_STORE, then ./trove-data.
# usage: cli_store.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
# Most checks below count object files and damage recipe bytes by the v1 layout, so new
# volumes are v1 unless a check asks for v3 (tests/unit/test_volume.c covers v3 in depth).
export TROVE_RECIPE_FORMAT=v1

s=$tmp/s
t() { "$trove" "$@" --store "$s"; }
# one_line: the last command's stderr is one line.
one_line() { check test "$(wc -l < "$tmp/err")" -eq 1; }
# objects STORE: the count and total bytes of the files under STORE/objects.
objects() { find "$1/objects" -type f -printf '%s\n' | awk '{ n++; b += $1 } END { print n + 0, b + 0 }'; }

# Inputs and expected images, with coreutils (a python3 start costs more than a trove run):
# rand and zeros OUT SIZE; patch IMAGE OFFSET DATA writes DATA into IMAGE at OFFSET; slice IN
# OFFSET LENGTH OUT.
rand() { head -c "$2" /dev/urandom > "$1"; }
zeros() { head -c "$2" /dev/zero > "$1"; }
patch() { dd if="$3" of="$1" bs=64K seek="$2" oflag=seek_bytes conv=notrunc status=none; }
slice() { dd if="$1" of="$4" bs=64K skip="$2" count="$3" iflag=skip_bytes,count_bytes status=none; }
K=65536

# ---- usage ----------------------------------------------------------------------------
if section usage; then
for c in create put write read cat ls info resize rm; do exits 0 "$trove" volume "$c" --help; done
for c in snapshot verify gc volume; do exits 0 "$trove" "$c" --help; done
check grep -q 'resize' "$tmp/out"       # trove volume --help lists the subcommands
exits 2 "$trove" volume frob
exits 2 "$trove" volume
exits 2 t volume create x
exits 2 t volume create x --size 10X
exits 2 t volume create x --size -5
exits 2 t volume create x --size 16777216T     # 2^64: one past the largest size
exits 2 t volume create x --size 1M --block-size 3000
exits 2 t volume read
exits 2 t volume cat a b
exits 2 t verify --frobnicate
check test ! -e "$s"
exits 1 t volume ls
check grep -q "no store at $s" "$tmp/err"
one_line
mkdir "$tmp/empty"                          # a directory that is not a store stays untouched
exits 1 "$trove" volume ls --store "$tmp/empty"
exits 1 "$trove" gc --store "$tmp/empty"
check test -z "$(ls -A "$tmp/empty")"
fi

# ---- sizes ----------------------------------------------------------------------------
if section sizes; then
exits 0 t volume create big --size 10G --block-size 1M
t volume info big --json > "$tmp/i.json" || bad "info big"
json "$tmp/i.json" 'j["logical_bytes"] == 10 << 30 and j["slots"] == 10240 and j["used_slots"] == 0'
exits 0 t volume create small --size 3kib --block-size=4K
t volume info small --json > "$tmp/i.json" || bad "info small"
json "$tmp/i.json" 'j["logical_bytes"] == 3072 and j["slots"] == 1'
exits 1 t volume create small --size 1M
check grep -q 'already exists' "$tmp/err"
fi

# ---- put / cat / read round trips -------------------------------------------------------
if section put_cat_read; then
rand "$tmp/a.bin" $((3 * K + 1000))           # not a multiple of the block size
exits 0 t volume put a "$tmp/a.bin" --block-size 64K
t volume cat a > "$tmp/a.out" || bad "cat a"
check cmp -s "$tmp/a.bin" "$tmp/a.out"
t volume read a --offset 65000 --length 70000 > "$tmp/r.out" || bad "read a"
slice "$tmp/a.bin" 65000 70000 "$tmp/r.want"
check cmp -s "$tmp/r.want" "$tmp/r.out"
t volume read a --offset $((3 * K)) > "$tmp/r.out" || bad "read a to the end"
slice "$tmp/a.bin" $((3 * K)) 1000 "$tmp/r.want"
check cmp -s "$tmp/r.want" "$tmp/r.out"
exits 1 t volume read a --offset $((3 * K)) --length 1001
one_line
t volume info a --json > "$tmp/i.json" || bad "info a"
json "$tmp/i.json" 'j["used_slots"] == 4 and j["slots"] == 4'
# a zero block empties its slot
zeros "$tmp/z.bin" $K
exits 0 t volume write a --offset $K "$tmp/z.bin"
t volume info a --json > "$tmp/i.json" || bad "info a"
json "$tmp/i.json" 'j["used_slots"] == 3 and j["unique_objects"] == 3'
patch "$tmp/a.bin" $K "$tmp/z.bin"
t volume cat a > "$tmp/a.out" || bad "cat a"
check cmp -s "$tmp/a.bin" "$tmp/a.out"
# put again, smaller and from a pipe: the volume becomes exactly the new bytes
rand "$tmp/p.bin" $((K + 7))
check sh -c "\"$trove\" volume put a - --store \"$s\" < \"$tmp/p.bin\""
t volume cat a > "$tmp/a.out" || bad "cat a"
check cmp -s "$tmp/p.bin" "$tmp/a.out"

# Unaligned writes across block boundaries, against an image computed here.
exits 0 t volume create b --size 300000 --block-size 64K
zeros "$tmp/b.img" 300000
rand "$tmp/w1" 100000
exits 0 t volume write b --offset 12345 "$tmp/w1"          # across two boundaries
patch "$tmp/b.img" 12345 "$tmp/w1"
rand "$tmp/w2" 70000
check sh -c "\"$trove\" volume write b --offset 229000 - --store \"$s\" < \"$tmp/w2\""
patch "$tmp/b.img" 229000 "$tmp/w2"
rand "$tmp/w3" 10
exits 0 t volume write b --offset 299990 "$tmp/w3"          # the last bytes of a partial block
patch "$tmp/b.img" 299990 "$tmp/w3"
rand "$tmp/w4" 3
exits 0 t volume write b --offset 65535 "$tmp/w4"           # 1 + 2 bytes either side of a boundary
patch "$tmp/b.img" 65535 "$tmp/w4"
t volume cat b > "$tmp/b.out" || bad "cat b"
check cmp -s "$tmp/b.img" "$tmp/b.out"
t volume read b --offset 60000 --length 80000 > "$tmp/r.out" || bad "read b"
slice "$tmp/b.img" 60000 80000 "$tmp/r.want"
check cmp -s "$tmp/r.want" "$tmp/r.out"
# past the end: refused, pointing at resize, and nothing changes (from a file or a pipe)
rand "$tmp/w5" 20
exits 1 t volume write b --offset 299990 "$tmp/w5"
check grep -q 'trove volume resize' "$tmp/err"
one_line
rand "$tmp/w6" 200000
exits 1 sh -c "\"$trove\" volume write b --offset 200000 - --store \"$s\" < \"$tmp/w6\""
check grep -q 'trove volume resize' "$tmp/err"
t volume cat b > "$tmp/b.out" || bad "cat b"
check cmp -s "$tmp/b.img" "$tmp/b.out"
# resize cuts and grows with zeros
exits 0 t volume resize b --size 100000
exits 0 t volume resize b --size 200000
slice "$tmp/b.img" 0 100000 "$tmp/b.want"
zeros "$tmp/z100" 100000
cat "$tmp/b.want" "$tmp/z100" > "$tmp/b.want2"
t volume cat b > "$tmp/b.out" || bad "cat b"
check cmp -s "$tmp/b.want2" "$tmp/b.out"

# info: 3 blocks of 64 KiB, two of them identical
rand "$tmp/A" $K
rand "$tmp/B" $K
cat "$tmp/A" "$tmp/B" "$tmp/A" > "$tmp/k.bin"
exits 0 t volume put k "$tmp/k.bin" --block-size 64K --recipe-format v1
t volume info k --json > "$tmp/i.json" || bad "info k"
check test "$(wc -l < "$tmp/i.json")" -eq 1
check python3 -c '
import json, sys
j = json.load(open(sys.argv[1]), object_pairs_hook=lambda kv: kv)
assert [k for k, _ in j] == ["slots", "used_slots", "unique_objects", "logical_bytes",
                             "stored_bytes", "recipe_bytes", "recipe_format",
                             "resident_recipe_bytes"], j
d = dict(j)
assert d.pop("resident_recipe_bytes") > 0, j
assert d == {"slots": 3, "used_slots": 3, "unique_objects": 2, "logical_bytes": 196608,
             "stored_bytes": 131072, "recipe_bytes": 64 + 16 * 3, "recipe_format": "v1"}, j
' "$tmp/i.json"
# The same volume as v4 (the default; asking for v3 writes v4): a manifest of one page (one
# segment and one dictionary chunk), 72 + 16 + 8 bytes; converting back gives v1 again.
exits 0 t volume put k3 "$tmp/k.bin" --block-size 64K --recipe-format v3
t volume info k3 --json > "$tmp/i3.json" || bad "info k3"
json "$tmp/i3.json" 'j["recipe_format"] == "v4" and j["recipe_bytes"] == 96' \
    'j["unique_objects"] == 2 and j["used_slots"] == 3'
t volume cat k3 > "$tmp/k3.out" || bad "cat k3"
check cmp -s "$tmp/k.bin" "$tmp/k3.out"
exits 0 t volume put k3 "$tmp/k.bin" --recipe-format v1
check sh -c "\"$trove\" volume info k3 --json --store \"$s\" | grep -q '\"recipe_format\":\"v1\"'"
exits 0 t volume compact k3 --recipe-format v3
t volume cat k3 > "$tmp/k3.out" || bad "cat k3 after compact"
check cmp -s "$tmp/k.bin" "$tmp/k3.out"
exits 2 t volume create bad-format --size 1M --recipe-format v2
TROVE_RECIPE_FORMAT=v9 exits 2 t volume create bad-format --size 1M
check grep -q TROVE_RECIPE_FORMAT "$tmp/err"
t volume info k > "$tmp/i.txt" || bad "info k text"
check grep -q 'block size *64 KiB' "$tmp/i.txt"
check grep -q 'generation' "$tmp/i.txt"

# dedup: the same file in a second volume stores nothing new
rand "$tmp/d.bin" $((5 * K + 123))
exits 0 t volume put d1 "$tmp/d.bin" --block-size 64K
before=$(objects "$s")
exits 0 t volume put d2 "$tmp/d.bin" --block-size 64K
check test "$(objects "$s")" = "$before"
t volume cat d2 > "$tmp/d.out" || bad "cat d2"
check cmp -s "$tmp/d.bin" "$tmp/d.out"
exits 1 t volume put d2 "$tmp/d.bin" --block-size 4K
check grep -q 'block' "$tmp/err"

# ls
t volume ls > "$tmp/ls.txt" || bad "ls"
check test "$(wc -l < "$tmp/ls.txt")" -eq 8
check grep -q '^k  *volume  *size 196608  block 65536  slots 3 ' "$tmp/ls.txt"
t volume ls --json > "$tmp/ls.json" || bad "ls --json"
json "$tmp/ls.json" '[e["name"] for e in j] == ["a", "b", "big", "d1", "d2", "k", "k3", "small"] and j[5]["kind"] == "volume" and j[5]["slots"] == 3'
exits 1 t volume rm nosuch
check grep -q "nosuch" "$tmp/err"
one_line
exits 0 t volume rm d1
exits 1 t volume cat d1
fi

# ---- snapshots (a store of their own, so that gc can empty it) ---------------------------
if section snapshots; then
s=$tmp/snap
rand "$tmp/s1.bin" $((3 * K))
rand "$tmp/s2.bin" $((3 * K))
exits 0 t volume put v "$tmp/s1.bin" --block-size 64K
exits 0 t snapshot v v1
exits 1 t snapshot v v1
exits 1 t snapshot nosuch v2
exits 0 t volume put v "$tmp/s2.bin"
t volume cat v1 > "$tmp/s.out" || bad "cat v1"
check cmp -s "$tmp/s1.bin" "$tmp/s.out"
t volume cat v > "$tmp/s.out" || bad "cat v"
check cmp -s "$tmp/s2.bin" "$tmp/s.out"
exits 1 t volume write v1 --offset 0 "$tmp/w3"
exits 1 t volume put v1 "$tmp/s2.bin"
exits 1 t volume resize v1 --size 1M
t volume ls --json > "$tmp/ls.json" || bad "ls snap"
json "$tmp/ls.json" '[(e["name"], e["kind"]) for e in j] == [("v", "volume"), ("v1", "snapshot")]'
t volume info v1 > "$tmp/i.txt" || bad "info v1"
check grep -q 'snapshot' "$tmp/i.txt"
exits 0 t volume rm v
exits 0 t gc --json
json "$tmp/out" 'j["objects_deleted"] == 3 and j["bytes_deleted"] == 3 * 65536 and j["objects_seen"] == 6'
t volume cat v1 > "$tmp/s.out" || bad "cat v1 after gc"
check cmp -s "$tmp/s1.bin" "$tmp/s.out"
exits 0 t volume rm v1
exits 0 t gc
check grep -q '3 deleted' "$tmp/out"
check test "$(objects "$s")" = "0 0"
fi

# ---- verify ---------------------------------------------------------------------------
if section verify; then
s=$tmp/ver
rand "$tmp/v.bin" $((3 * K))
exits 0 t volume put v "$tmp/v.bin" --block-size 64K
exits 0 t verify
exits 0 t verify --deep --json
json "$tmp/out" 'j["ok"] is True and j["objects"] == 3 and j["slots"] == 3 and j["volumes"] == 1 and "refs_repaired" not in j'
set -- $(find "$s/objects" -type f | sort)
cp "$1" "$tmp/saved"
rm "$1"
exits 1 t verify --json
json "$tmp/out" 'j["ok"] is False and j["missing_objects"] == 1 and j["bad_hash"] == 0'
check grep -q 'damaged' "$tmp/err"
one_line
exits 1 t volume cat v
check grep -q 'trove verify' "$tmp/err"
cp "$tmp/saved" "$1"
exits 0 t verify
rand "$2.new" $K
mv "$2.new" "$2"                          # same length, other bytes
exits 0 t verify
exits 1 t verify --deep
exits 1 t verify --deep --json
json "$tmp/out" 'j["bad_hash"] == 1 and j["missing_objects"] == 0 and j["bad_length"] == 0'
# Reads check every block against its name: cat and read stop at the damaged one, naming the
# slot and the object, and write nothing of it; --no-verify (benchmarks only) lets it through.
exits 1 t volume cat v
check grep -q "slot [0-9]*, object $(basename "$2")" "$tmp/err"
check grep -q 'do not hash' "$tmp/err"
check test "$(wc -c < "$tmp/out")" -lt $((3 * K))
exits 1 t volume read v
check grep -q "$(basename "$2")" "$tmp/err"
exits 0 t volume cat v --no-verify
check test "$(wc -c < "$tmp/out")" -eq $((3 * K))
if cmp -s "$tmp/out" "$tmp/v.bin"; then bad "--no-verify read the original bytes"; else ok; fi
# The deep verify quarantined it: plain verify now reports it too, with who names it.
exits 1 t verify --json
json "$tmp/out" 'j["quarantined"] == 1 and j["bad_hash"] == 1 and [d["volume"] for d in j["damaged"]] == ["v"]'
# Putting the same file again heals it (the put checks a quarantined name's bytes first).
exits 0 t volume put v "$tmp/v.bin"
check test ! -e "$s/quarantine/$(basename "$2")"
exits 0 t verify --deep --json
json "$tmp/out" 'j["ok"] is True and j["quarantined"] == 0 and j["bad_hash"] == 0'
exits 0 t volume cat v
check cmp -s "$tmp/out" "$tmp/v.bin"
# repair releases a record whose object hashes right again (here: restored behind its back).
cp "$2" "$tmp/good"
rand "$2.new" $K
mv "$2.new" "$2"
exits 1 t verify --deep
cp "$tmp/good" "$2"
exits 1 t verify
exits 0 t verify --repair --json
json "$tmp/out" 'j["healed"] == 1 and j["ok"] is True'
fi

# ---- damaged recipes --------------------------------------------------------------------
if section damaged_recipes; then
s=$tmp/c
rand "$tmp/c1.bin" $((2 * K + 5))
rand "$tmp/c2.bin" $((2 * K + 9))
exits 0 t volume put c1 "$tmp/c1.bin" --block-size 64K
exits 0 t volume put c2 "$tmp/c2.bin" --block-size 64K
printf XXXXXXXX | dd of="$s/volumes/c1.recipe" conv=notrunc status=none
exits 1 t volume cat c1
check grep -qF "$s/volumes/c1.recipe" "$tmp/err"
one_line
t volume cat c2 > "$tmp/c.out" || bad "cat c2 beside a damaged c1"
check cmp -s "$tmp/c2.bin" "$tmp/c.out"
exits 0 t volume ls --json
json "$tmp/out" 'j[0]["name"] == "c1" and "c1.recipe" in j[0]["error"] and j[1]["kind"] == "volume"'
exits 1 t verify --json
json "$tmp/out" 'j["bad_recipes"] == 1 and j["ok"] is False'
exits 1 t gc
one_line
printf 'TROVRCP1\005' | dd of="$s/volumes/c1.recipe" conv=notrunc status=none   # version 5
exits 1 t volume cat c1
check grep -qi 'newer' "$tmp/err"
check grep -qF "$s/volumes/c1.recipe" "$tmp/err"
exits 0 t volume rm c1
exits 0 t gc
check grep -q ' 3 deleted' "$tmp/out"
exits 0 t verify --deep
t volume cat c2 > "$tmp/c.out" || bad "cat c2 after gc"
check cmp -s "$tmp/c2.bin" "$tmp/c.out"
fi

# ---- names ----------------------------------------------------------------------------
if section names; then
s=$tmp/n/s
exits 1 t volume create ../evil --size 1M
check grep -q "evil" "$tmp/err"
one_line
exits 1 t volume create a/b --size 1M
exits 1 t volume put ../../evil "$tmp/w3"
exits 1 t volume create .hidden --size 1M
exits 1 t volume create "$(printf 'x%.0s' $(seq 129))" --size 1M
check test ! -e "$s"
check test -z "$(find "$tmp" -name '*evil*')"
exits 0 t volume create "$(printf 'x%.0s' $(seq 128))" --size 1M
exits 0 t volume create A-z_0.9 --size 1M
fi

# ---- where the store is -----------------------------------------------------------------
if section where_the_store; then
mkdir "$tmp/cwd"
(cd "$tmp/cwd" && "$trove" volume create x --size 4K) || bad "create in ./trove-data"
check test -f "$tmp/cwd/trove-data/volumes/x.recipe"
(cd "$tmp/cwd" && "$trove" volume ls) > "$tmp/ls.txt" || bad "ls in ./trove-data"
check grep -q '^x ' "$tmp/ls.txt"
(cd "$tmp/cwd" && TROVE_STORE="$tmp/env" "$trove" volume create y --size 4K) || bad "TROVE_STORE"
check test -f "$tmp/env/volumes/y.recipe"
check test ! -e "$tmp/cwd/trove-data/volumes/y.recipe"
TROVE_STORE="$tmp/env" "$trove" volume ls > "$tmp/ls.txt" || bad "ls TROVE_STORE"
check grep -q '^y ' "$tmp/ls.txt"
TROVE_STORE="$tmp/env" "$trove" volume ls --store "$tmp/cwd/trove-data" > "$tmp/ls.txt" || bad "--store over TROVE_STORE"
check grep -q '^x ' "$tmp/ls.txt"

# trove bench put, small: the issue's targets as its bench measures them — a second put of
# the same file stores nothing new, and the 10 TiB sparse volume has 5,242,880 slots and a
# v1 recipe of 83,886,144 bytes (the v3 manifest: 72 + 16 * 641 pages + 8).
"$trove" bench put --size 8M --rounds 1 --json --dir "$tmp" > "$tmp/bp.json" 2> "$tmp/bp.err" || bad "bench put"
json "$tmp/bp.json" 'j["bytes"] == 8 << 20 and j["second_put_new_objects"] == 0' \
    'j["second_put_new_object_bytes"] == 0 and j["objects"] >= 4' \
    'j["sparse_slots"] == 5242880 and j["sparse_v1_recipe_bytes"] == 83886144' \
    'j["sparse_v3_recipe_bytes"] == 72 + 16 * 641 + 8' \
    'j["put_s"] > 0 and j["cp_sync_s"] > 0' \
    'j["cat_s"] > 0 and j["cat_no_verify_s"] > 0 and j["cat_verify_ratio"] > 0'
fi
finish
