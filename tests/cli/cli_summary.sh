#!/usr/bin/env bash
# cli_summary.sh: summaries and what they answer (docs/formats/summary.md, view.md,
# docs/serve.md "Views and statistics"), through the CLI and the service:
#   - `trove stats` of a capture equals a brute-force pass over `trove cat --json` of its
#     events: count, total, min, max exact, p50/p90/p99 within 1 %, for the whole capture, a
#     range cutting segments, one name, one thread; the same of the trace file itself and,
#     with --url, of the service (the same JSON but for "read")
#   - `trove index`: a capture imported --no-summaries gets them (and the answers stay the
#     same), a second run finds them all there; a damaged summary object is seen by verify,
#     read around (read.damaged) and built again by index
#   - the service: /tracks adds up to the capture, /view is a frame a decoder written from
#     view.md reads back (every event counted once, whole or in a cell), /events finds the
#     longest instances, bad parameters are 400 and an unknown capture 404; a capture
#     without summaries gets them from the service's first view
# usage: cli_summary.sh TROVE SOURCE_DIR [SHARED_DATA_DIR]
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
s=$tmp/s

"$trove" gen -o "$tmp/g.wire" --events 60000 --seed 5 --names 300 -q || bad gen
# 512 events a segment: 118 segments, so three levels of nodes and ranges that cut them
"$trove" import "$tmp/g.wire" --store "$s" --name g --segment-bytes 16K -q || bad "import g"
"$trove" cat "$tmp/g.wire" --json > "$tmp/events.jsonl" 2> /dev/null || bad "cat"
first=$(head -1 "$tmp/events.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["start_ns"])')

# brute WANT.json ARGS: the statistics of the events by brute force, for the filters given
# (from_ns=, to_ns=, name=, tid=), compared with the JSON document trove gave.
brute() {
    python3 - "$tmp/events.jsonl" "$@" << 'EOF' && ok || bad "stats disagree with a brute force: $*"
import json, math, sys
events_path, got_path = sys.argv[1], sys.argv[2]
flt = dict(a.split("=", 1) for a in sys.argv[3:])
lo, hi = int(flt.get("from_ns", 0)), int(flt.get("to_ns", 2**64))
by = {}
for line in open(events_path):
    e = json.loads(line)
    if e["kind"] == "counter" or not lo <= e["start_ns"] < hi:
        continue
    if "name" in flt and e["name"] != flt["name"]:
        continue
    if "tid" in flt and e["tid"] != int(flt["tid"]):
        continue
    d = e["dur_ns"] if e["kind"] in ("zone", "frame", "lock") else 0
    by.setdefault(e["name"], []).append(d)
got = json.load(open(got_path))
rows = {r["name"]: r for r in got["rows"]}
assert got["names"] == len(by), (got["names"], len(by))
assert got["events"] == sum(len(v) for v in by.values())
assert len(rows) == len(got["rows"]) and len(rows) > 0
for name, r in rows.items():
    d = sorted(by[name])
    assert r["count"] == len(d) and r["total_ns"] == sum(d), name
    assert r["min_ns"] == d[0] and r["max_ns"] == d[-1], name
    for q, k in ((0.5, "p50_ns"), (0.9, "p90_ns"), (0.99, "p99_ns")):
        want = d[max(1, math.ceil(q * len(d))) - 1]
        assert abs(r[k] - want) <= 0.01 * want + 0.5, (name, k, r[k], want)
    assert sum(c for _, c in r["hist"]) == len(d)
EOF
}

# ---- trove stats against the brute force --------------------------------------------------
if section stats; then
exits 0 "$trove" stats g --store "$s" --json --limit 0
brute "$tmp/out"
json "$tmp/out" 'j["read"]["segments"] == 0 and j["read"]["damaged"] == 0' # the root answered
cp "$tmp/out" "$tmp/all.json"
# from the first event to one in the second group of 64 segments: the first group from its
# node, the segments of the second that the range touches read
b=$(sed -n 52000p "$tmp/events.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["start_ns"])')
exits 0 "$trove" stats g --store "$s" --json --limit 0 --from-ns "$first" --to-ns "$b"
brute "$tmp/out" from_ns="$first" to_ns="$b"
json "$tmp/out" 'j["read"]["nodes"] >= 1 and 0 < j["read"]["segments"] <= 118 - 64'
# a range inside one group: the segments it touches, no more
a=$(sed -n 7000p "$tmp/events.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["start_ns"])')
b=$(sed -n 21000p "$tmp/events.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["start_ns"])')
exits 0 "$trove" stats g --store "$s" --json --limit 0 --from-ns "$a" --to-ns "$b"
brute "$tmp/out" from_ns="$a" to_ns="$b"
json "$tmp/out" '20 < j["read"]["segments"] < 40'
exits 0 "$trove" stats g --store "$s" --json --name zone_7
brute "$tmp/out" name=zone_7
json "$tmp/out" 'len(j["rows"]) == 1 and j["rows"][0]["name"] == "zone_7"'
tid=$(sed -n 5p "$tmp/events.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tid"])')
pid=$(sed -n 5p "$tmp/events.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
exits 0 "$trove" stats g --store "$s" --json --limit 0 --thread "$pid:$tid"
brute "$tmp/out" tid="$tid"
# sorted as asked, cut at the limit, the table for people
exits 0 "$trove" stats g --store "$s" --json --sort count --limit 5
json "$tmp/out" 'len(j["rows"]) == 5 and [r["count"] for r in j["rows"]] == sorted((r["count"] for r in j["rows"]), reverse=True) and j["sort"] == "count"'
exits 0 "$trove" stats g --store "$s" --limit 3
check grep -q "^name  *count  *total  *self  *min  *p50  *p90  *p99  *max$" "$tmp/out"
check test "$(wc -l < "$tmp/out")" -eq 6
check grep -q "(3 of 300 names; --limit 0 lists all)" "$tmp/out"
# a trace file, read for the purpose: the same rows
exits 0 "$trove" stats "$tmp/g.wire" --json --limit 0
python3 - "$tmp/all.json" "$tmp/out" << 'EOF' && ok || bad "stats of the file differ from the capture's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
# self times are counted within segments, which differ (the file's capture has the default)
for r in a["rows"] + b["rows"]:
    r.pop("self_ns")
assert a["rows"] == b["rows"] and b["capture"].endswith("g.wire")
EOF
expect_error stats stats nosuch --store "$s"
expect_error stats stats g --store "$s" --sort fastest
expect_error stats stats g --store "$s" --thread no-such-thread
expect_error stats stats g --store "$s" --limit many
check grep -q "^trove stats: --limit: 'many' is not a count from 0 to 100000$" "$tmp/e.err"
fi

# ---- trove index, and damage --------------------------------------------------------------
if section index; then
"$trove" import "$tmp/g.wire" --store "$s" --name old --segment-bytes 16K --no-summaries -q || bad "import old"
exits 0 "$trove" stats old --store "$s" --json --limit 0
json "$tmp/out" 'j["read"]["nodes"] == 0 and j["read"]["segments"] == 118' # no summaries: every segment
brute "$tmp/out"
exits 0 "$trove" index old --store "$s" --json
# the same objects as g's (summaries are a function of the events): nothing new
json "$tmp/out" 'j["already"] is False and j["built"] == j["summaries"] == 118 + 2 + 1 and j["new_objects"] == 0'
cp "$tmp/out" "$tmp/index1.json"
exits 0 "$trove" index old --store "$s" --json
json "$tmp/out" 'j["already"] is True and j["built"] == 0'
# already there: the bytes they were written with
check test "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["summary_bytes"])' "$tmp/out")" = \
    "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["summary_bytes"])' "$tmp/index1.json")"
json "$tmp/out" 'j["summary_bytes"] > 0'
exits 0 "$trove" stats old --store "$s" --json --limit 0
json "$tmp/out" 'j["read"]["segments"] == 0'
brute "$tmp/out"
# damage the root: verify sees it, stats read around it, index builds it again
python3 - "$s" << 'EOF' || bad "damaging a summary"
import os, sys, glob, zlib
# the root (the one node of level 2) of "g" and "old": the same object
def level(b):
    pa = int.from_bytes(b[40:48], "little") # the first stream: head, tracks, cells, long events
    return zlib.decompress(b[48:48 + pa], -15)[0]
objs = [p for p in glob.glob(os.path.join(sys.argv[1], "objects", "*", "*")) if open(p, "rb").read(8) == b"TROVSUM1"]
roots = [p for p in objs if level(open(p, "rb").read()) == 2]
assert len(roots) == 1, roots
data = bytearray(open(roots[0], "rb").read())
data[40] ^= 0xff
open(roots[0], "wb").write(bytes(data))
EOF
exits 1 "$trove" verify --deep --store "$s"
exits 0 "$trove" stats old --store "$s" --json --limit 0
json "$tmp/out" 'j["read"]["damaged"] >= 1 and j["read"]["nodes"] >= 2' # the two nodes below it answer
brute "$tmp/out"
exits 0 "$trove" index old --store "$s" --json
json "$tmp/out" 'j["already"] is False and j["damaged"] == 1 and j["built"] == 121'
exits 0 "$trove" verify --deep --store "$s"
exits 0 "$trove" index --all --store "$s" --json
check test "$(grep -c '"already":true' "$tmp/out")" -eq 2
fi

# ---- the service --------------------------------------------------------------------------
if section service; then
command -v curl > /dev/null || { echo "skipped: curl not found"; exit 77; }
"$trove" import "$tmp/g.wire" --store "$s" --name late --segment-bytes 16K --no-summaries -q || bad "import late"
serve_start
get() { curl -s -o "$tmp/body" -w '%{http_code}' "${url%/}$1"; }
check test "$(get /api/captures/g/tracks)" = 200
json "$tmp/body" 'sum(t["events"] for t in j["tracks"]) == 60000 == j["events"] and j["summaries"] is True and all(t["id"] == "%d:%d" % (t["pid"], t["tid"]) for t in j["tracks"]) and sum(p["events"] for p in j["processes"]) == 60000'
check test "$(get '/api/captures/g/stats?limit=0')" = 200
python3 - "$tmp/all.json" "$tmp/body" << 'EOF' && ok || bad "the service's stats differ from trove stats"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
a.pop("read"); b.pop("read")
assert a == b, (list(a), list(b))
EOF
exits 0 "$trove" stats g --url "$url" --json --limit 0
python3 - "$tmp/all.json" "$tmp/out" << 'EOF' && ok || bad "stats --url differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
a.pop("read"); b.pop("read")
assert a == b
EOF
# the longest instances of a name, longest first
check test "$(get '/api/captures/g/events?name=zone_3&order=dur_desc&limit=4')" = 200
python3 - "$tmp/events.jsonl" "$tmp/body" << 'EOF' && ok || bad "events differ from a brute force"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
want = sorted(((e["dur_ns"], -i) for i, e in enumerate(ev) if e["name"] == "zone_3"), reverse=True)[:4]
got = json.load(open(sys.argv[2]))["events"]
assert [(g["dur_ns"], -g["index"]) for g in got] == want, (got, want)
assert all(ev[g["index"]]["start_ns"] == g["start_ns"] for g in got)
EOF
# a view of the whole capture, decoded by a reader written from docs/formats/view.md
check test "$(get '/api/captures/g/view?px=700&names=1')" = 200
python3 - "$tmp/body" 60000 << 'EOF' && ok || bad "the view frame does not read back"
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"TROVVIEW"
ver, flags, lo, hi, shift, T, N, E, C, blen, rlen = struct.unpack("<IIQQIIIIIII", b[8:60])
assert ver == 1 and blen == len(b) - 60
body = zlib.decompress(b[60:], -15) if flags & 1 else b[60:]
assert len(body) == rlen
p = 0
def v():
    global p
    x = s = 0
    while True:
        c = body[p]; p += 1
        x |= (c & 127) << s; s += 7
        if c < 128: return x
names = {}
for _ in range(N):
    i, n = v(), v(); names[i] = body[p:p + n].decode(); p += n
counted = 0
for _ in range(T):
    pid, tid, e, c = v(), v(), v(), v()
    for _ in range(e):
        v(); v(); p += 3; v(); v(); counted += 1
    lane = None
    for _ in range(c):
        lane = v(); v(); counted += v() + 1; v(); v(); v()
        if lane == 257: v(); v()
assert p == len(body) and counted == int(sys.argv[2]), (counted, p, len(body))
assert all(n.startswith("zone_") for n in names.values()) and N > 0
EOF
check test "$(get '/api/captures/g/view?px=0')" = 400
check test "$(get '/api/captures/g/view?tracks=x')" = 400
check test "$(get '/api/captures/g/events')" = 400
check test "$(get '/api/captures/g/stats?sort=slowest')" = 400
check test "$(get '/api/captures/nosuch/view')" = 404
check test "$(get '/api/captures/nosuch/tracks')" = 404
check test "$(get /api/captures/g/names)" = 200
check test "$(head -c 2 "$tmp/body")" = TV
# a capture without summaries: the first view answers from its segments and has the
# service build them
check test "$(get /api/captures/late/tracks)" = 200
json "$tmp/body" 'j["summaries"] is False'
check test "$(get /api/captures/late/view)" = 200
for _ in $(seq 1 100); do
    get /api/captures/late/tracks > /dev/null
    json_check "$tmp/body" 'j["summaries"] is True' 2> /dev/null && break
    sleep 0.1
done
json "$tmp/body" 'j["summaries"] is True'
serve_stop
fi

# ---- a live capture, with and without summaries -------------------------------------------
if section live; then
command -v curl > /dev/null || { echo "skipped: curl not found"; exit 77; }
for mode in with without; do
    flag=; [ $mode = without ] && flag=--no-summaries
    serve_start $flag
    "$trove" gen --live "live_$mode" --rate 50000 --seconds 1 --socket "$sock" -q || bad "gen --live ($mode)"
    # the capture ends when gen closes; the service commits it
    for _ in $(seq 1 300); do
        curl -s -o "$tmp/info.json" "${url}api/captures/live_$mode" 2> /dev/null
        json_check "$tmp/info.json" 'not j["live"] and j["events"] == 50000' 2> /dev/null && break
        sleep 0.1
    done
    json "$tmp/info.json" 'not j["live"] and j["events"] == 50000'
    serve_stop
done
# with: every node is there, the same as a one-shot write of the same events builds
exits 0 "$trove" index live_with --store "$s" --json
json "$tmp/out" 'j["already"] is True and j["built"] == 0'
# without: none; index builds them
exits 0 "$trove" index live_without --store "$s" --json
json "$tmp/out" 'j["already"] is False and j["built"] == j["summaries"] > 0'
fi

finish
