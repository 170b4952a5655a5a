#!/usr/bin/env bash
# cli_s3.sh: the whole store on S3 (docs/s3.md), end to end against a real S3 API — Swift
# with s3api on loopback, started here by tests/s3/up.sh and stopped by tests/s3/down.sh.
# A capture is imported, listed, replayed, exported, snapshotted, verified --deep and
# collected on s3://, and each answer is the same as from a store on disk; every object
# trove wrote, downloaded with s3cmd, hashes (xxhsum -H2) to its name; a wrong secret is a
# clear error; a second writer is refused while the first holds the lease, and the lease of
# a writer killed with -9 is taken over; kill -9 during commits leaves the old or the new
# state with verify --deep clean; the proxy stopped mid-replay gives retries, then a clear
# error, and nothing damaged; `trove store copy` fs -> s3 -> fs gives the same exports,
# copies nothing the second time and refuses a differing volume unless --replace; the
# endpoint comes from --s3-endpoint or $TROVE_S3_ENDPOINT, the store from $TROVE_STORE.
# usage: cli_s3.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
data=$3
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
for prog in s3cmd xxhsum; do
    command -v $prog > /dev/null 2>&1 || { echo "skipped: $prog not installed (make deps)"; exit 77; }
done

up_out=$("$src/tests/s3/up.sh")
rc=$?
[ $rc -eq 77 ] && { echo "skipped: Swift is not installed (make deps)"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: tests/s3/up.sh exited $rc"; exit 1; }
eval "$up_out"
trap '[ -n "${srv_pid:-}" ] && kill -9 $srv_pid 2>/dev/null; kill -CONT -- -$(cat "$TROVE_S3_DIR/run/proxy.pid") 2>/dev/null; "$src/tests/s3/down.sh" "$TROVE_S3_DIR"; rm -rf "$tmp"' EXIT
export TROVE_S3_LEASE_SEC=5
proxy_pid=$(cat "$TROVE_S3_DIR/run/proxy.pid")
trace=$data/chrome-trace-dom.json.zst
S=s3://trove-cli/caps
F=$tmp/fs
t3() { "$trove" "$@" --store "$S"; }
tf() { "$trove" "$@" --store "$F"; }

# ---- import, ls, replay, export, snapshot, verify: the same as on disk -----------------
if section import; then
exits 0 tf import "$trace" --name dom -q
exits 0 t3 import "$trace" --name dom -q
exits 0 tf ls --json
cp "$tmp/out" "$tmp/ls_fs.json"
exits 0 t3 ls --json
cp "$tmp/out" "$tmp/ls_s3.json"
check python3 - "$tmp/ls_fs.json" "$tmp/ls_s3.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
strip = lambda l: [{k: v for k, v in c.items() if k != "last_used_ns"} for c in l]
assert strip(a) == strip(b) and len(a) == 1 and a[0]["events"] > 300000, (a, b)
PY
exits 0 tf replay dom -o "$tmp/fs.wire" -q
exits 0 t3 replay dom -o "$tmp/s3.wire" -q
check cmp -s "$tmp/fs.wire" "$tmp/s3.wire"
exits 0 tf export store:dom -o "$tmp/fs.zip" -q
exits 0 t3 export store:dom -o "$tmp/s3.zip" -q
check cmp -s "$tmp/fs.zip" "$tmp/s3.zip"
exits 0 t3 snapshot dom dom-snap -q
exits 0 t3 volume ls
check grep -q '^dom-snap *snapshot' "$tmp/out"
exits 0 t3 verify --deep --json
json "$tmp/out" 'j["ok"] and j["deep"] and j["volumes"] == 2 and j["missing_objects"] == 0'
# The store from $TROVE_STORE, the endpoint from --s3-endpoint.
ep=$TROVE_S3_ENDPOINT
exits 0 env -u TROVE_S3_ENDPOINT TROVE_STORE="$S" "$trove" ls --s3-endpoint "$ep" --json
json "$tmp/out" '[c["name"] for c in j] == ["dom", "dom-snap"]'
exits 0 env -u TROVE_S3_ENDPOINT TROVE_STORE="$S" "$trove" --s3-endpoint="$ep" volume ls
check grep -q '^dom-snap' "$tmp/out"
exits 2 "$trove" ls --s3-endpoint
fi

# ---- every object trove wrote hashes to its name --------------------------------------
if section every_object_trove; then
host=${TROVE_S3_ENDPOINT#http://}
s3c() { s3cmd --host="$host" --host-bucket="$host" --no-ssl --access_key="$AWS_ACCESS_KEY_ID" \
    --secret_key="$AWS_SECRET_ACCESS_KEY" --region="$AWS_REGION" "$@"; }
mkdir "$tmp/dl" "$tmp/dl/objects" "$tmp/dl/packs"
s3c -q get --recursive s3://trove-cli/caps/objects/ "$tmp/dl/objects/" 2> /dev/null
check s3c -q get --recursive s3://trove-cli/caps/packs/ "$tmp/dl/packs/"
rm -f "$tmp/dl/packs/"*.dead
n_packs=$(ls "$tmp/dl/packs" | wc -l)
check test "$n_packs" -ge 1      # small objects travel in packs, each named by its digest too
check test "$(cd "$tmp/dl" && xxhsum -H2 objects/* packs/* 2> /dev/null |
    awk '{ n = $2; sub(/.*\//, "", n); if ($1 != n) bad++; seen++ } END { print bad + 0, seen + 0 }')" = "0 $(($(ls "$tmp/dl/objects" | wc -l) + n_packs))"
check s3c ls s3://trove-cli/caps/volumes/dom.recipe > /dev/null
fi

# ---- errors: a wrong secret, a bad URL, a bucket that is not there --------------------
if section errors; then
exits 1 env AWS_SECRET_ACCESS_KEY=wrong "$trove" ls --store "$S"
check grep -q 'SignatureDoesNotMatch' "$tmp/err"
check test "$(wc -l < "$tmp/err")" -eq 1
exits 1 "$trove" ls --store s3://No_Such
check grep -q 's3://BUCKET' "$tmp/err"
exits 1 env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_PROFILE HOME="$tmp" "$trove" ls --store "$S"
check grep -q 'no S3 credentials' "$tmp/err"
exits 0 "$trove" ls --store s3://trove-none-yet --json
check test "$(cat "$tmp/out")" = "[]"
fi

# ---- one writer: the lease --------------------------------------------------------------
if section one_writer; then
s=$S
serve_start --socket "$tmp/serve.sock"
exits 1 t3 import "$trace" --name other -q
check grep -q "is open for writing by $(hostname) pid $srv_pid" "$tmp/err"
exits 1 t3 gc
exits 0 t3 ls                       # readers are not refused
serve_stop
exits 0 t3 import "$trace" --name other -q   # the lease was given back at exit
# A writer killed with -9 leaves its lease; a dead holder on this host is no holder.
"$trove" gen --events 400k -o "$tmp/gen.wire" -q
"$trove" import "$tmp/gen.wire" --name big --store "$S" -q &
pid=$!
sleep 0.3
kill -9 $pid 2> /dev/null
wait $pid 2> /dev/null
exits 0 t3 import "$trace" --name after-kill -q
# A lease of a writer on another host holds until it expires; a damaged one holds nothing.
exp=$(python3 -c 'import time; print(int(time.time() * 1000) + 2500)')
printf 'trove-lease 1\ntoken %s\nholder elsewhere 4242\nexpires %s\n' \
    0123456789abcdef0123456789abcdef "$exp" > "$tmp/lease"
check s3c -q put "$tmp/lease" s3://trove-cli/caps/lease
exits 1 t3 volume rm after-kill
check grep -q 'is open for writing by elsewhere pid 4242' "$tmp/err"
exits 0 t3 ls                       # still readable
sleep 3
exits 0 t3 volume rm after-kill     # expired: taken over
echo garbage > "$tmp/lease"
check s3c -q put "$tmp/lease" s3://trove-cli/caps/lease
exits 0 t3 import "$trace" --name after-kill -q
exits 64 s3c -q get s3://trove-cli/caps/lease "$tmp/lease.after"   # given back at exit
# A service whose lease is taken over commits no more: it says so, gives up at its stop,
# and what it committed before reads whole.
TROVE_S3_LEASE_SEC=2 serve_start --socket "$tmp/serve.sock" --commit-ms 300
"$trove" gen --live stolen --rate 50000 --seconds 6 --socket "$tmp/serve.sock" -q &
gen=$!
sleep 1.5
exp=$(python3 -c 'import time; print(int(time.time() * 1000) + 600000)')
printf 'trove-lease 1\ntoken 0123456789abcdef0123456789abcdef\nholder elsewhere 4242\nexpires %s\n' \
    "$exp" > "$tmp/lease"
# As a writer takes a lease: put it, wait, read it back, and again if the holder's renewal
# (a read, then a write) overwrote it in between.
for _ in 1 2 3 4 5; do
    s3c -q put "$tmp/lease" s3://trove-cli/caps/lease
    sleep 1
    s3c -q get --force s3://trove-cli/caps/lease "$tmp/lease.now" 2> /dev/null
    cmp -s "$tmp/lease" "$tmp/lease.now" && break
done
check cmp -s "$tmp/lease" "$tmp/lease.now"
wait $gen
sleep 1
kill -TERM $srv_pid
wait $srv_pid
check test $? -eq 1
srv_pid=
check grep -q 'another writer has taken the store over' "$tmp/serve.err"
check grep -q 'events were never committed' "$tmp/serve.err"
check s3c -q del s3://trove-cli/caps/lease
exits 0 t3 ls --json
json "$tmp/out" '0 < [c["events"] for c in j if c["name"] == "stolen"][0] < 300000'
exits 0 t3 verify --deep --json
json "$tmp/out" 'j["ok"]' 
exits 0 t3 verify --deep --json
json "$tmp/out" 'j["ok"]'
fi

# ---- kill -9 during commits: the old state or the new, never a mix ---------------------
if section kill_9_during; then
"$trove" gen --events 200k --seed 2 -o "$tmp/gen2.wire" -q
exits 0 tf import "$tmp/gen2.wire" --name g -q
exits 0 tf ls --json
want=$(json_get "$tmp/out" '[c["events"] for c in j if c["name"] == "g"][0]')
for delay in 0.02 0.05 0.1 0.15 0.2 0.3; do
    "$trove" import "$tmp/gen2.wire" --name g$delay --store "$S" -q 2> /dev/null &
    pid=$!
    sleep $delay
    kill -9 $pid 2> /dev/null
    wait $pid 2> /dev/null
    exits 0 t3 verify --deep --json
    json "$tmp/out" 'j["ok"] and j["missing_objects"] == 0 and j["bad_hash"] == 0'
    exits 0 t3 ls --json
    # Each killed import left no capture, or the whole of it; every capture reads.
    json "$tmp/out" 'all("error" not in c for c in j)' \
        "all(c['events'] == $want for c in j if c['name'].startswith('g0'))"
done
fi

# ---- the proxy stopped mid-replay: retries, a clear error, nothing damaged -------------
if section proxy_stopped_mid; then
"$trove" gen --events 1M --seed 3 -o "$tmp/gen3.wire" -q
exits 0 t3 import "$tmp/gen3.wire" --name long -q
exits 0 t3 replay long -o "$tmp/long.wire" -q
# The replay writes into a pipe nobody reads for a while, so it stops early with the rest
# of its segments still to fetch; then the proxy stops, and the reader starts.
: > "$tmp/replay.err"
(TROVE_S3_TIMEOUT_MS=700 TROVE_S3_RETRIES=2 "$trove" replay long --store "$S" --depth 1 \
    --budget 1M 2> "$tmp/replay.err"; echo $? > "$tmp/replay.rc") | (sleep 2; cat > /dev/null) &
reader=$!
sleep 1
kill -STOP -- -"$proxy_pid"
wait $reader
kill -CONT -- -"$proxy_pid"
check test "$(cat "$tmp/replay.rc")" -ne 0
check grep -q 'Timeout\|timed out' "$tmp/replay.err"
check grep -q 'after 3 attempts' "$tmp/replay.err"
exits 0 t3 replay long -o "$tmp/long2.wire" -q
check cmp -s "$tmp/long.wire" "$tmp/long2.wire"
exits 0 t3 verify --deep --json
json "$tmp/out" 'j["ok"]'
fi

# ---- store copy: fs -> s3 -> fs ---------------------------------------------------------
if section store_copy; then
exits 0 tf snapshot dom dom-snap -q
exits 0 "$trove" store copy "$F" s3://trove-cli/copy --json
json "$tmp/out" 'j["volumes"] == 3 and j["volumes_copied"] == 3 and j["objects_copied"] == j["objects"] > 0'
exits 0 "$trove" store copy s3://trove-cli/copy "$tmp/fs2" --json
json "$tmp/out" 'j["volumes_copied"] == 3 and j["objects_present"] == 0'
exits 0 "$trove" store copy s3://trove-cli/copy "$tmp/fs2" --json
json "$tmp/out" 'j["volumes_same"] == 3 and j["objects_copied"] == 0 and j["objects_present"] == j["objects"]'
for v in dom dom-snap g; do
    exits 0 tf export store:$v -o "$tmp/a.zip" -q
    exits 0 "$trove" export store:$v --store "$tmp/fs2" -o "$tmp/b.zip" -q
    check cmp -s "$tmp/a.zip" "$tmp/b.zip"
done
exits 0 "$trove" verify --deep --store "$tmp/fs2"
# A volume that differs in the destination is refused before anything is copied.
exits 0 "$trove" import "$tmp/gen3.wire" --name dom --store "$tmp/fs3" -q
exits 1 "$trove" store copy s3://trove-cli/copy "$tmp/fs3"
check grep -q "volume 'dom' differs" "$tmp/err"
exits 0 "$trove" ls --store "$tmp/fs3" --json
json "$tmp/out" 'len(j) == 1'
exits 0 "$trove" store copy s3://trove-cli/copy "$tmp/fs3" --replace --json
json "$tmp/out" 'j["volumes_copied"] == 3'
exits 0 "$trove" export store:dom --store "$tmp/fs3" -o "$tmp/c.zip" -q
check cmp -s "$tmp/fs.zip" "$tmp/c.zip"
# A copy of a store that a service writes meanwhile: each volume copied is whole, and one
# committed to during the copy is left out and said so (exit 1), never half copied.
s=$F
serve_start --commit-ms 100
"$trove" gen --live busy --rate 200000 --seconds 3 --socket "$F/trove.sock" -q &
gen=$!
sleep 1
"$trove" store copy "$F" "s3://trove-cli/busy" --json > "$tmp/busy.json" 2> "$tmp/busy.err"
rc=$?
wait $gen
serve_stop
json "$tmp/busy.json" "($rc == 0) == (j['volumes_changed'] == 0)" \
    'j["volumes_copied"] + j["volumes_same"] + j["volumes_changed"] == j["volumes"]'
exits 0 "$trove" verify --deep --store s3://trove-cli/busy --json
json "$tmp/out" 'j["ok"] and j["missing_objects"] == 0'
# Each capture copied reads whole, but for one the service had just begun: on the source
# too it is an empty volume until its first commit, and it is copied as it is.
"$trove" ls --store s3://trove-cli/busy > "$tmp/busy.ls" 2>&1
check grep -q '^dom ' "$tmp/busy.ls"
check test "$(grep ' unreadable: ' "$tmp/busy.ls" | grep -vc 'never committed')" -eq 0
exits 2 "$trove" store copy "$F" "$F"
exits 2 "$trove" store copy "$F"
exits 0 "$trove" store copy --help
fi

# ---- gc on S3: the grace period, then the sweep ----------------------------------------
if section gc_on_s3; then
exits 0 t3 volume rm dom-snap
exits 0 t3 volume rm long
exits 0 t3 gc --json
json "$tmp/out" 'j["objects_deleted"] == 0 and j["objects_young"] > 0'
exits 0 env TROVE_GC_GRACE_SEC=0 "$trove" gc --store "$S" --json
json "$tmp/out" 'j["objects_deleted"] > 0 and j["objects_young"] == 0'
exits 0 t3 verify --deep --json
json "$tmp/out" 'j["ok"] and j["missing_objects"] == 0'
exits 0 t3 replay dom -o "$tmp/s3b.wire" -q
check cmp -s "$tmp/fs.wire" "$tmp/s3b.wire"
fi

finish
