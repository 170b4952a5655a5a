#!/usr/bin/env bash
# cli_stream_rss.sh: captures of any length are written in memory set by the options, not by
# the capture: `trove gen --events N | trove import - --name X`, `trove export --capture X`,
# the trace export of a wire stream on stdin and `trove store copy`, each process's peak RSS
# measured (getrusage of its own child) under a fixed bound at N and at 4N events, and the
# larger run within a few MB of the smaller one (before, gen held 67 bytes an event and import
# 32: 268 and 128 MB at 4 M events). Not under ASan or TSan, whose shadow memory and
# quarantine make RSS say little: there the rest runs on smaller captures.
#
# And what streaming must not change: a streamed import (stdin, or a file: a wire stream is
# always stored as it is read) stores the objects the whole write stores of the same events
# and names — the capture read back as store:NAME (read whole, written by
# trove_capture_write_profile) stores no new object, for a stream whose names frames come
# between its events and for format 5 segments — and replays and exports to what the stream
# holds. A stream that fails part way leaves the capture it was to replace as it was, and no
# capture of a new name; gc then removes the segments it had put, and verify is clean.
# usage: cli_stream_rss.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE

# rss FILE CMD...: run CMD (stdin and stdout its own), its peak RSS in KB into FILE.
rss() {
    local out=$1
    shift
    python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(r.returncode)' "$out" "$@"
}
# under FILE KB WHAT: FILE's peak RSS is below KB.
under() {
    local kb
    kb=$(cat "$1" 2> /dev/null)
    if [ "${kb:-999999999}" -lt "$2" ]; then ok; else bad "$3: peak RSS ${kb:-?} KB, over $2"; fi
}
# near SMALL LARGE WHAT: the larger run's peak RSS is at most 16 MB over the smaller's.
near() {
    local a b
    a=$(cat "$1" 2> /dev/null)
    b=$(cat "$2" 2> /dev/null)
    if [ -n "$a" ] && [ -n "$b" ] && [ "$b" -le $((a + 16384)) ]; then
        ok
    else
        bad "$3: peak RSS ${a:-?} KB at N, ${b:-?} KB at 4N events"
    fi
}

sanitized=0
ldd "$trove" 2> /dev/null | grep -q 'libasan\|libtsan' && sanitized=1

# ---- peak memory at N and 4N events -------------------------------------------------------
if section memory; then
if [ "$sanitized" = 1 ]; then
    echo "peak memory checks skipped under a sanitizer"
else
    # N is past one row group (1 Mi events), so both runs flush one while the walk goes on
    for n in 1500000 6000000; do
        s=$tmp/m$n
        # the events streamed (the summaries' memory is the names', measured apart below)
        rss "$tmp/gen.$n" "$trove" gen --events "$n" --seed 5 -q |
            rss "$tmp/import.$n" "$trove" import - --name x --store "$s" --json --no-summaries > "$tmp/i.json" ||
            bad "gen | import - at $n events"
        json "$tmp/i.json" "j['events'] == $n and j['new_objects'] > 0"
        # with summaries: their tree holds, per level, every name's duration buckets — bounded
        # by the names (gen's 65,536, each with up to a few hundred buckets), not the events
        "$trove" gen --events "$n" --seed 5 -q |
            rss "$tmp/summ.$n" "$trove" import - --name y --store "$s" -q ||
            bad "gen | import - (summaries) at $n events"
        rss "$tmp/export.$n" "$trove" export --capture x --store "$s" -o "$tmp/x.bundle" -q ||
            bad "export --capture at $n events"
        "$trove" gen --events "$n" --seed 5 -q |
            rss "$tmp/trace.$n" "$trove" export - --format perfetto -o "$tmp/x.pftrace" -q ||
            bad "export - --format perfetto at $n events"
        rss "$tmp/copy.$n" "$trove" store copy "$s" "$s.copy" -q > /dev/null ||
            bad "store copy at $n events"
        rm -rf "$s" "$s.copy" "$tmp/x.bundle" "$tmp/x.pftrace"
        # The bounds: the generator's round and names, one frame and one segment and the
        # names, a row group of 1 Mi events (32 MiB) and the Parquet writer's scratch, the
        # trace writer's run of 256 Ki events, one object at a time.
        under "$tmp/gen.$n" 49152 "gen --events $n"
        under "$tmp/import.$n" 49152 "import - of $n events"
        under "$tmp/export.$n" 131072 "export --capture of $n events"
        under "$tmp/trace.$n" 65536 "export - --format perfetto of $n events"
        under "$tmp/copy.$n" 49152 "store copy of $n events"
        under "$tmp/summ.$n" 262144 "import - with summaries of $n events"
    done
    for c in gen import export trace copy; do
        near "$tmp/$c.1500000" "$tmp/$c.6000000" "$c"
    done
fi
fi

# ---- the same objects as the whole write ---------------------------------------------------
if section same_objects; then
s=$tmp/s
n=300000
[ "$sanitized" = 1 ] && n=60000
"$trove" gen --events "$n" --seed 8 --names 5000 -o "$tmp/g.wire" -q || bad "gen"
"$trove" gen --events 20000 --seed 9 --names 300 -o "$tmp/h.wire" -q || bad "gen h"
"$trove" import - --name p --store "$s" --json < "$tmp/g.wire" > "$tmp/p.json" ||
    bad "import - (stdin)"
json "$tmp/p.json" "j['events'] == $n and j['new_objects'] > 0"
# the file (streamed too) and the capture read back whole: nothing new
"$trove" import "$tmp/g.wire" --name f --store "$s" --json > "$tmp/f.json" || bad "import file"
json "$tmp/f.json" "j['events'] == $n and j['new_objects'] == 0 and j['new_bytes'] == 0"
"$trove" import store:p --store "$s" --name w --json > "$tmp/w.json" || bad "import store:p"
json "$tmp/w.json" "j['events'] == $n and j['new_objects'] == 0"
# names frames between the events (two streams back to back), and format 5 segments
cat "$tmp/g.wire" "$tmp/h.wire" "$tmp/g.wire" > "$tmp/gh.wire"
"$trove" import - --name gh --store "$s" --segment-format columnar --json < "$tmp/gh.wire" \
    > "$tmp/gh.json" || bad "import - of two streams"
json "$tmp/gh.json" "j['events'] == 2 * $n + 20000 and j['segment_format'] == 'columnar'"
"$trove" import store:gh --store "$s" --name gh2 --segment-format columnar --json \
    > "$tmp/gh2.json" || bad "import store:gh"
json "$tmp/gh2.json" "j['events'] == 2 * $n + 20000 and j['new_objects'] == 0"
# what the stream holds comes back: every event in order, and the export's bytes
"$trove" replay p --store "$s" -o "$tmp/r.wire" -q || bad "replay"
"$trove" cat "$tmp/g.wire" > "$tmp/g.txt" && "$trove" cat "$tmp/r.wire" > "$tmp/r.txt" ||
    bad "cat"
check cmp -s "$tmp/g.txt" "$tmp/r.txt"
"$trove" export --capture p --store "$s" -o "$tmp/p.bundle" -q || bad "export --capture p"
"$trove" export "$tmp/g.wire" --name p -o "$tmp/g.bundle" -q || bad "export g.wire"
check cmp -s "$tmp/p.bundle" "$tmp/g.bundle"
fi

# ---- a stream that fails part way ------------------------------------------------------------
if section failed; then
s=$tmp/sf
"$trove" gen --events 200000 --seed 3 -o "$tmp/a.wire" -q || bad "gen a"
"$trove" gen --events 200000 --seed 4 -o "$tmp/b.wire" -q || bad "gen b"
"$trove" import "$tmp/a.wire" --name keep --store "$s" -q || bad "import a"
head -c 1500000 "$tmp/b.wire" > "$tmp/cut.wire" # past the first segment, inside a frame
expect_error import import - --name keep --store "$s" < "$tmp/cut.wire"
check grep -q "stream ends inside" "$tmp/e.err"
expect_error import import - --name new --store "$s" < "$tmp/cut.wire"
"$trove" ls --store "$s" --json > "$tmp/ls.json" || bad "ls"
json "$tmp/ls.json" "[c['name'] for c in j] == ['keep'] and j[0]['events'] == 200000"
"$trove" gc --store "$s" --json > "$tmp/gc.json" || bad "gc"
json "$tmp/gc.json" "j['objects_deleted'] > 0"
"$trove" verify --deep --store "$s" -q || bad "verify --deep after gc"
"$trove" replay keep --store "$s" -o "$tmp/k.wire" -q || bad "replay keep"
"$trove" cat "$tmp/a.wire" > "$tmp/a.txt" && "$trove" cat "$tmp/k.wire" > "$tmp/k.txt" ||
    bad "cat keep"
check cmp -s "$tmp/a.txt" "$tmp/k.txt"
fi
finish
