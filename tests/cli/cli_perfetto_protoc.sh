#!/bin/bash
# cli_perfetto_protoc.sh: what `trove export --format perfetto` writes, read by another
# protobuf implementation — `protoc --decode_raw` (Debian's protobuf-compiler, which `make`
# installs) must decode every file without a word on stderr, into exactly the packets trove
# meant: one clock packet, a track descriptor per track, a track event per slice begin and end,
# instant, counter value and flow point (counted from the events and flows as trove reads them
# back), and at most one packet of names no event uses.
#
#   bash tests/cli/cli_perfetto_protoc.sh <trove-binary> <source-dir> <shared-data-dir>
#
# The hand-made tests/data/chrome_async.json, tests/vectors/perfetto_small.pftrace and, if
# ../shared/data has it, the sample trace. Skips (77) only when protoc is not installed (or
# python3, which counts).
set -u

TROVE=${1:?usage: cli_perfetto_protoc.sh <trove-binary> <source-dir> <shared-data-dir>}
SRC=${2:?}
DATA=${3:-}
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
if ! command -v protoc > /dev/null 2>&1; then
    echo "skipped: protoc not found (Debian's protobuf-compiler; make deps installs it)"
    exit 77
fi

# packets FILE.pftrace EXPECTED_EVENTS: decode_raw, then count the packets of each kind.
packets() {
    protoc --decode_raw <"$1" >"$tmp/raw.txt" 2>"$tmp/raw.err"
    check test $? -eq 0
    check test ! -s "$tmp/raw.err"
    check python3 - "$tmp/raw.txt" "$2" <<'EOF'
import sys
lines = open(sys.argv[1]).read().split("\n")
want_events = int(sys.argv[2])
packets, kinds, cur = 0, [], None
for line in lines:
    if line == "1 {":
        packets += 1
        cur = set()
    elif line == "}":
        kinds.append(cur)
        cur = None
    elif cur is not None and line.startswith("  "):
        if not line.startswith("   ") and line.strip() != "}":  # a field of the packet
            cur.add(line.strip().split(" ")[0].rstrip(":"))
    elif line:
        raise SystemExit("a line outside every packet: %r" % line)
assert len(kinds) == packets > 0
clock = [k for k in kinds if "6" in k]
desc = [k for k in kinds if "60" in k]
events = [k for k in kinds if "11" in k]
names = [k for k in kinds if k == {"8", "10", "13", "12"}]
assert len(clock) == 1 and "59" in clock[0], clock            # the clock and the defaults
assert "6" in kinds[0]                                        # ... first
assert all(k >= {"8", "10", "13"} for k in kinds[1:])         # time, sequence, flags
assert len(events) == want_events, (len(events), want_events)
assert len(names) <= 1
assert packets == 1 + len(desc) + len(events) + len(names), (packets, len(desc), len(events))
print(packets, "packets:", len(desc), "descriptors,", len(events), "events")
EOF
}

# want_events FILE.pftrace: 2 per zone (its begin and end), 1 per other event and flow row,
# from what trove reads back out of the file.
want_events() {
    rm -rf "$tmp/w.bundle" "$tmp/w.tv" "$tmp/w.json"
    "$TROVE" export "$1" -o "$tmp/w.bundle" --quiet &&
        "$TROVE" import "$tmp/w.bundle" -o "$tmp/w.tv" --to raw --quiet &&
        "$TROVE" export "$1" -o "$tmp/w.json" --format chrome-json --quiet || return 1
    "$TROVE" cat "$tmp/w.tv" --json | python3 -c '
import json, sys
n = 0
for line in sys.stdin:
    e = json.loads(line)
    zone = e["kind"] in ("zone", "frame", "lock") or (e["kind"] != "counter" and e["dur_ns"] > 0)
    n += 2 if zone else 1
flows = sum(e["ph"] in "stf" for e in json.load(open(sys.argv[1]))["traceEvents"])
print(n + flows)
' "$tmp/w.json"
}

# The hand-made Chrome trace, exported.
if section hand_made; then
check "$TROVE" export "$SRC/tests/data/chrome_async.json" -o "$tmp/a.pftrace" --format perfetto --quiet
n=$(want_events "$tmp/a.pftrace") || bad "count the events of a.pftrace"
# 12 zones (24 packets), an async instant, 4 counter values, 7 flow points
check test "$n" -eq 36
packets "$tmp/a.pftrace" "$n"
fi

# The golden file of tests/vectors.
if section golden; then
n=$(want_events "$SRC/tests/vectors/perfetto_small.pftrace") || bad "count the golden's events"
check test "$n" -eq 21
packets "$SRC/tests/vectors/perfetto_small.pftrace" "$n"
fi

# The sample trace, when ../shared/data has it.
if section sample_trace; then
if [ -n "$DATA" ] && [ -r "$DATA/chrome-trace-dom.json.zst" ] && command -v zstd > /dev/null 2>&1; then
    zstd -dcq "$DATA/chrome-trace-dom.json.zst" > "$tmp/trace.json"
    check "$TROVE" export "$tmp/trace.json" -o "$tmp/s.pftrace" --format perfetto --quiet
    n=$(want_events "$tmp/s.pftrace") || bad "count the sample's events"
    # 299,039 zones, 7,710 instants, 6,366 flow points
    check test "$n" -eq $((2 * 299039 + 7710 + 6366))
    packets "$tmp/s.pftrace" "$n"
fi
fi

finish
