#!/usr/bin/env bash
# cli_diff.sh: `trove diff` and GET /api/diff (docs/diff.md), on `trove gen` captures of one
# seed, one of them with a name slowed (`--slow zone_3=1.3`):
#   - the same seed twice: no significant change, and --fail-if 'p99 > +1%' exits 0
#   - the slowed capture: zone_3 ranks first, significant and slower, its p50 and p99 ratios
#     within 2 % of 1.3 (exact and from the sketches); nothing else is significant but the
#     zones that hold a zone_3 (they grew by what it grew); --fail-if 'p99 > +10%' exits 3
#     naming zone_3 alone, on stderr and in the JSON
#   - counts, totals, min, max and quantiles of both sides equal a brute-force pass over
#     `trove cat --json`, and zone_3's U is the brute-force count of the pairs; a range that
#     halves A lists names only in B as new; --min-count and --name leave out what they say;
#     --by thread adds up to the names
#   - a file against a stored capture gives the same rows; the service's /api/diff is the
#     CLI's JSON byte for byte (by name and by thread), its errors are 404 and 400; a
#     service's capture against a local one is read from its histograms
#   - usage errors (a rule that does not parse, one capture) exit 2, a missing capture 1
# usage: cli_diff.sh TROVE SOURCE_DIR [SHARED_DATA_DIR]
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
s=$tmp/s

# ns ticks: at the model's 1 us a 30 % change of an 11 us median reads 11 -> 14 us
gen() { "$trove" gen --events 300000 --seed 5 --tick 1 -q "$@"; }
gen -o "$tmp/a.wire" || bad "gen a"
gen -o "$tmp/b.wire" || bad "gen b"
gen -o "$tmp/c.wire" --slow zone_3=1.3 || bad "gen c --slow"
for n in a b c; do
    "$trove" import "$tmp/$n.wire" --store "$s" --name "$n" -q || bad "import $n"
done
"$trove" cat "$tmp/a.wire" --json > "$tmp/a.jsonl" 2> /dev/null || bad "cat a"
"$trove" cat "$tmp/c.wire" --json > "$tmp/c.jsonl" 2> /dev/null || bad "cat c"

if section same; then
"$trove" diff a b --store "$s" --json --fail-if 'p99 > +1%' > "$tmp/ab.json" 2> "$tmp/ab.err"
check test $? -eq 0
json "$tmp/ab.json" 'j["method"] == "exact" and j["failed"] is False and j["fail_if"][0]["rows"] == [] and len(j["rows"]) > 1000'
json "$tmp/ab.json" 'not any(r["significant"] for r in j["rows"]) and all(r["in"] == "both" and r["change"] == "same" for r in j["rows"])'
json "$tmp/ab.json" 'all(r["ratio"]["p99"] == 1 and r["delta"]["total_ns"] == 0 and r["test"]["p"] == 1 for r in j["rows"] if r["a"]["p99_ns"] > 0)'
check test ! -s "$tmp/ab.err"
fi

if section slow; then
"$trove" diff a c --store "$s" --json > "$tmp/ac.json" || bad "diff a c"
python3 - "$tmp/ac.json" "$tmp/a.jsonl" "$tmp/c.jsonl" << 'EOF' && ok || bad "the slowed capture's comparison"
import json, math, sys
j = json.load(open(sys.argv[1]))
r0 = j["rows"][0]
assert r0["name"] == "zone_3" and r0["significant"] and r0["change"] == "slower", r0
for q in ("p50", "p99"):
    assert abs(r0["ratio"][q] - 1.3) <= 0.02 * 1.3, (q, r0["ratio"][q])
assert r0["test"]["method"] == "exact" and r0["test"]["p"] < 1e-6 and abs(r0["test"]["shift"] - 1.3) < 0.04, r0["test"]
# what else is significant: only names one of whose instances holds a zone_3 (a parent
# grows by what its child grew), never a name that holds none
def load(path):
    ev = [json.loads(l) for l in open(path)]
    return [e for e in ev if e["kind"] != "counter"]
ea, ec = load(sys.argv[2]), load(sys.argv[3])
holds = set()
stack = {}
for e in ea:  # by thread, the open zones by depth (events in start order)
    if e["kind"] not in ("zone", "frame", "lock"):
        continue
    k = (e["pid"], e["tid"])
    st = stack.setdefault(k, [])
    del st[e["depth"]:]
    if e["name"] == "zone_3":
        holds.update(n for n in st)
    st.append(e["name"])
others = [r["name"] for r in j["rows"][1:] if r["significant"]]
assert all(n in holds for n in others), [n for n in others if n not in holds]
assert all(r["change"] == "slower" for r in j["rows"] if r["significant"])
# brute force: every row's figures on both sides
def figures(ev):
    by = {}
    for e in ev:
        by.setdefault(e["name"], []).append(e["dur_ns"] if e["kind"] in ("zone", "frame", "lock") else 0)
    return by
fa, fc = figures(ea), figures(ec)
assert j["a"]["events"] == len(ea) and j["b"]["events"] == len(ec)
assert j["a"]["names"] == len(fa) and j["b"]["names"] == len(fc) and j["nrows"] == len(set(fa) | set(fc))
for r in j["rows"]:
    for side, f in (("a", fa), ("b", fc)):
        g = r[side]
        assert (g is None) == (r["name"] not in f), r["name"]
        if g is None:
            continue
        d = sorted(f[r["name"]])
        assert g["count"] == len(d) and g["total_ns"] == sum(d) and g["min_ns"] == d[0] and g["max_ns"] == d[-1], r["name"]
        for q, k in ((0.5, "p50_ns"), (0.9, "p90_ns"), (0.99, "p99_ns")):
            assert g[k] == d[max(1, math.ceil(q * len(d))) - 1], (r["name"], k)
# zone_3's U: the pairs where B's instance is longer, ties half
da, dc = sorted(fa["zone_3"]), sorted(fc["zone_3"])
import bisect
u = sum(bisect.bisect_left(da, x) + 0.5 * (bisect.bisect_right(da, x) - bisect.bisect_left(da, x)) for x in dc)
assert abs(r0["test"]["u"] - u) <= 0.5, (r0["test"]["u"], u)
assert abs(r0["test"]["effect"] - u / (len(da) * len(dc))) < 1e-4
EOF
# the same from the sketches: zone_3 first, its ratios within 2 %
"$trove" diff a c --store "$s" --json --sketch > "$tmp/ac-s.json" || bad "diff --sketch"
json "$tmp/ac-s.json" 'j["method"] == "sketch" and j["rows"][0]["name"] == "zone_3" and j["rows"][0]["significant"] and j["rows"][0]["test"]["method"] == "sketch"'
json "$tmp/ac-s.json" 'all(abs(j["rows"][0]["ratio"][q] - 1.3) <= 0.026 for q in ("p50", "p99"))'
# the gate: exit 3 naming zone_3, in the table's run and in the JSON
"$trove" diff a c --store "$s" --fail-if 'p99 > +10%' > "$tmp/gate.out" 2> "$tmp/gate.err"
check test $? -eq 3
check grep -q "^trove diff: --fail-if 'p99 > +10%': zone_3 p99 " <(head -1 "$tmp/gate.err")
check grep -q "^zone_3 .* slower \*$" "$tmp/gate.out"
"$trove" diff a c --store "$s" --json --fail-if 'p99 > +10%' --fail-if 'count > +50' > "$tmp/gate.json" 2> /dev/null
check test $? -eq 3
json "$tmp/gate.json" 'j["failed"] and j["fail_if"][0]["rows"][0]["name"] == "zone_3" and j["fail_if"][1]["rows"] == []'
# every name the rule names is significant, slower and (checked above) zone_3 or one that holds one
json "$tmp/gate.json" 'all(r["significant"] and r["change"] == "slower" and r["ratio"]["p99"] > 1.1 for r in j["rows"] if r["name"] in {x["name"] for x in j["fail_if"][0]["rows"]})'
check test "$(grep -c "^trove diff: --fail-if" "$tmp/gate.err")" -eq "$(json_get "$tmp/gate.json" 'len(j["fail_if"][0]["rows"])')"
json "$tmp/gate.json" 'abs(j["fail_if"][0]["rows"][0]["change"] - (j["rows"][0]["ratio"]["p99"] - 1)) < 1e-9'
# an absolute rule, and a rule on the other side that nothing breaks
"$trove" diff a c --store "$s" --fail-if 'p50 > +1us' --fail-if 'max < -1s' > /dev/null 2> "$tmp/abs.err"
check test $? -eq 3
check grep -q "^trove diff: --fail-if 'p50 > +1us': zone_3 p50 " "$tmp/abs.err"
exits 0 "$trove" diff a c --store "$s" --fail-if 'p99 < -10%' --name 'zone_3*'
fi

if section options; then
# A's first half against the whole of B: names only in B are new (and none is gone)
mid=$(python3 -c 'import json,sys; e=[json.loads(l)["start_ns"] for l in open(sys.argv[1])]; print(e[len(e)//2])' "$tmp/a.jsonl")
"$trove" diff a c --store "$s" --a-to-ns "$mid" --json > "$tmp/half.json" || bad "diff --a-to-ns"
python3 - "$tmp/half.json" "$tmp/a.jsonl" "$mid" << 'EOF' && ok || bad "a range of A"
import json, sys
j = json.load(open(sys.argv[1]))
mid = int(sys.argv[3])
ina = {json.loads(l)["name"] for l in open(sys.argv[2]) if json.loads(l)["start_ns"] < mid}
new = [r for r in j["rows"] if r["in"] == "b"]
assert new and all(r["change"] == "new" and r["a"] is None and r["ratio"] is None and r["test"] is None for r in new)
assert all(r["name"] not in ina for r in new) and not any(r["in"] == "a" for r in j["rows"])
assert j["a"]["to_ns"] == mid
kinds = [r["change"] for r in j["rows"]]
order = {"slower": 0, "new": 1, "faster": 2, "gone": 3, "same": 4}
assert [order[k] for k in kinds] == sorted(order[k] for k in kinds), "the groups in order"
EOF
"$trove" diff a c --store "$s" --json --min-count 1000 > "$tmp/min.json" || bad "--min-count"
json "$tmp/min.json" 'j["min_count"] == 1000 and j["rows"] and all(max(r["a"]["count"], r["b"]["count"]) >= 1000 for r in j["rows"])'
"$trove" diff a c --store "$s" --json --name 'zone_3*' --name zone_7 > "$tmp/glob.json" || bad "--name"
json "$tmp/glob.json" 'j["rows"] and all(r["name"] == "zone_7" or r["name"].startswith("zone_3") for r in j["rows"]) and j["rows"][0]["name"] == "zone_3"'
"$trove" diff a c --store "$s" --json --by thread > "$tmp/thr.json" || bad "--by thread"
python3 - "$tmp/thr.json" "$tmp/ac.json" << 'EOF' && ok || bad "--by thread adds up"
import json, sys
t, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert t["by"] == "thread" and all("thread" in r for r in t["rows"])
byname = {r["name"]: r for r in n["rows"]}
for side in ("a", "b"):
    sums = {}
    for r in t["rows"]:
        if r[side]:
            sums[r["name"]] = sums.get(r["name"], 0) + r[side]["count"]
    assert sums == {k: v[side]["count"] for k, v in byname.items() if v[side]}
top = [r for r in t["rows"] if r["significant"]]
assert top and top[0]["name"] == "zone_3" and {r["thread"] for r in t["rows"]} >= {"main"}
EOF
# a file against a stored capture: the same rows
"$trove" diff "$tmp/a.wire" store:c --store "$s" --json > "$tmp/file.json" || bad "diff FILE store:NAME"
python3 -c '
import json, sys
f, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert f["a"]["capture"] == sys.argv[3] and f["rows"] == s["rows"]' "$tmp/file.json" "$tmp/ac.json" "$tmp/a.wire" && ok || bad "a file's rows"
fi

if section service; then
serve_start
api=${url}api/diff
# (the CLI ends its JSON with a newline)
{ curl -sf "$api?a=a&b=c" && echo; } > "$tmp/api.json" || bad "GET /api/diff"
check cmp "$tmp/api.json" "$tmp/ac.json"
"$trove" diff a c --url "$url" --json > "$tmp/remote.json" || bad "diff --url"
check cmp "$tmp/remote.json" "$tmp/ac.json"
{ curl -sf "$api?a=a&b=c&by=thread" && echo; } > "$tmp/api-thr.json" || bad "GET /api/diff by=thread"
check cmp "$tmp/api-thr.json" "$tmp/thr.json"
curl -sf "$api?a=a&b=c&method=sketch&limit=5&min_count=10&name=zone_*" > "$tmp/api-s.json" || bad "GET /api/diff sketch"
json "$tmp/api-s.json" 'j["method"] == "sketch" and len(j["rows"]) == 5 and j["nrows"] > 5 and j["rows"][0]["name"] == "zone_3"'
check test "$(curl -s -o "$tmp/404.json" -w '%{http_code}' "$api?a=a&b=nosuch")" = 404
check grep -q 'no capture named nosuch' "$tmp/404.json"
for q in "a=a" "a=a&b=c&by=process" "a=a&b=c&alpha=2" "a=a&b=c&method=fast" "a=a&b=c&a_from_ns=9&a_to_ns=3" "a=a&b=c&a=b" "a=a&b=c&colour=1"; do
    check test "$(curl -s -o /dev/null -w '%{http_code}' "$api?$q")" = 400
done
# the service's capture against a local one: from the service's histograms
"$trove" diff a store:c --store "$s" --url "$url" --json > "$tmp/mixed.json" || bad "diff NAME store:NAME --url"
json "$tmp/mixed.json" 'j["method"] == "sketch" and j["rows"][0]["name"] == "zone_3" and j["rows"][0]["test"]["method"] == "sketch" and j["rows"][0]["significant"]'
exits 1 "$trove" diff a store:c --store "$s" --url "$url" --by thread
serve_stop
fi

if section errors; then
exits 2 "$trove" diff a --store "$s"
exits 2 "$trove" diff a b c --store "$s"
exits 2 "$trove" diff a c --store "$s" --fail-if 'p98 > +1%'
exits 2 "$trove" diff a c --store "$s" --fail-if 'p99 > 10%'
exits 2 "$trove" diff a c --store "$s" --fail-if 'p99 > +10'
exits 2 "$trove" diff a c --store "$s" --fail-if 'p99 = +10%'
exits 2 "$trove" diff a c --store "$s" --by process
exits 2 "$trove" diff a c --store "$s" --exact --sketch
exits 2 "$trove" diff a c --store "$s" --a-from-ns 9 --a-to-ns 3
"$trove" diff a nosuch --store "$s" > /dev/null 2> "$tmp/missing.err"
check test $? -eq 1
check grep -q "no capture named nosuch" "$tmp/missing.err"
"$trove" diff --help > "$tmp/help.txt" || bad "diff --help"
check grep -q -- "--fail-if EXPR" "$tmp/help.txt"
fi
finish
