#!/usr/bin/env bash
# cli_not_kept.sh: an import says what a Chrome trace carried that trove does not keep
# (docs/formats/chrome-json.md, "Not kept"), by kind and with counts equal to a pass of
# python's json over the sample trace: the args, categories and other members of the events
# that keep no attributes (metadata, steps, flows, skipped phases; a counter keeps its
# numbers), nothing of the top-level members (kept); on stderr, in --json, and through a
# service (`trove import --url`: the HTTP import's answer carries the same warnings).
# usage: cli_not_kept.sh TROVE SOURCE_DIR [SHARED_DATA_DIR]
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
data=${3:-}
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
sample=$data/chrome-trace-dom.json.zst
[ -n "$data" ] && [ -f "$sample" ] || { echo "skipped: no sample trace ($sample)"; exit 77; }
command -v zstd > /dev/null || { echo "skipped: zstd not installed"; exit 77; }
zstd -dqc "$sample" > "$tmp/dom.json" || bad "zstd -dc"

# the counts by brute force
python3 - "$tmp/dom.json" > "$tmp/want.json" << 'EOF' || bad "the brute force"
import json, sys
doc = json.load(open(sys.argv[1]))
read = {"s", "ph", "ts", "id", "bp", "pid", "tid", "dur", "cat", "name", "scope", "bind_id",
        "flow_in", "flow_out"}
objs = {"id2", "args", "trove"}  # read when their value is an object
ev = doc["traceEvents"] if isinstance(doc, dict) else doc
args_events = args_members = cat_events = 0
cats, other = set(), {}
KEEP = set("XBEIinbeSF")  # phases whose events keep their attributes
for e in ev:
    a = e.get("args") if isinstance(e.get("args"), dict) else {}
    ph = e.get("ph")
    if ph in KEEP:
        continue
    if ph == "M":
        kept = ("name" in a) + sum(1 for k, v in a.items() if k == "sort_index" and isinstance(v, (int, float)) and not isinstance(v, bool))
    elif ph == "T":
        kept = "step" in a
    elif ph == "C":
        kept = sum(1 for v in a.values() if isinstance(v, (int, float)) and not isinstance(v, bool))
    else:
        kept = 0
    if len(a) > kept:
        args_events += 1
        args_members += len(a) - kept
    if ph == "C":
        continue  # its category and other members are kept on its counter events
    if isinstance(e.get("cat"), str) and e["cat"]:
        cat_events += 1
        cats.add(e["cat"])
    for k, v in e.items():
        if k in read or (k in objs and isinstance(v, dict)):
            continue
        other[k] = other.get(k, 0) + 1
top = []  # the top-level members are kept
print(json.dumps({"args_events": args_events, "args_members": args_members, "cat_events": cat_events,
                  "categories": len(cats), "other": other, "top": top}))
EOF

# match WARNINGS.json: the import's warnings say exactly the brute force's counts
match() {
    python3 - "$tmp/want.json" "$1" << 'EOF' && ok || bad "the not-kept warnings of $1"
import json, re, sys
w = json.load(open(sys.argv[1]))
got = json.load(open(sys.argv[2]))["warnings"]
msgs = [x["message"] for x in got]
def one(pat):
    m = [re.search(pat, s) for s in msgs]
    m = [x for x in m if x]
    assert len(m) == 1, (pat, msgs)
    return m[0]
m = one(r"not kept: the args of (\d+) trace events \((\d+) members\)")
assert (int(m[1]), int(m[2])) == (w["args_events"], w["args_members"]), (m[0], w)
m = one(r"not kept: the categories \(\"cat\"\) of (\d+) trace events, (\d+) distinct")
assert (int(m[1]), int(m[2])) == (w["cat_events"], w["categories"]), (m[0], w)
def none(pat):
    assert not any(re.search(pat, s) for s in msgs), (pat, msgs)
if w["other"]:
    m = one(r"not kept: (\d+) members of trace events trove does not read \((.*)\)$")
    assert int(m[1]) == sum(w["other"].values()), (m[0], w)
    named = dict((k, int(n)) for k, n in re.findall(r"([A-Za-z_][^ ,]*) (\d+)", m[2]))
    assert named == w["other"], (named, w["other"])
else:
    none(r"members of trace events trove does not read")
none(r"members? of the top-level object")
assert w["args_events"] > 0 and w["cat_events"] > 0  # the sample's flows and skipped events
EOF
}

"$trove" import "$tmp/dom.json" --store "$tmp/s" --name dom --json > "$tmp/imp.json" 2> "$tmp/imp.err" ||
    bad "import: $(cat "$tmp/imp.err")"
match "$tmp/imp.json"
check grep -q "warning: .*dom.json: not kept: the args of [0-9]* trace events" "$tmp/imp.err"
check grep -q "warning: .*dom.json: not kept: the categories" "$tmp/imp.err"
# quiet says nothing, and still lists them in --json
"$trove" import "$tmp/dom.json" --store "$tmp/s" --name dom2 --json -q > "$tmp/imp-q.json" 2> "$tmp/imp-q.err" ||
    bad "import -q"
check test ! -s "$tmp/imp-q.err"
match "$tmp/imp-q.json"

# through a service: the HTTP import's answer, and the CLI's lines of it
s=$tmp/s
serve_start
"$trove" import "$tmp/dom.json" --url "$url" --name up --json > "$tmp/up.json" 2> "$tmp/up.err" ||
    bad "import --url: $(cat "$tmp/up.err")"
match "$tmp/up.json"
json "$tmp/up.json" 'all(w["message"].startswith("the body: ") for w in j["warnings"])'
"$trove" import "$tmp/dom.json" --url "$url" --name up2 > /dev/null 2> "$tmp/up2.err" || bad "import --url (text)"
check grep -q "^trove import: warning (the service): the body: not kept: the args of" "$tmp/up2.err"
# a trace with nothing of the kind says none of it
printf '[{"ph":"X","name":"a","ts":1,"dur":2,"pid":1,"tid":1}]' > "$tmp/plain.json"
"$trove" import "$tmp/plain.json" --url "$url" --name plain --json > "$tmp/plain-up.json" || bad "import plain --url"
json "$tmp/plain-up.json" 'j["warnings"] == [] and j["events"] == 1'
serve_stop
finish
