#!/usr/bin/env python3
"""attrs_equal.py ORIGINAL.json EXPORTED.json [--no-top] [--subset]: every event trove keeps comes
back with its args, its category and its other members equal as JSON values, and the trace's
top-level members equal (not asked with --no-top: a way that has no place for them). --subset:
EXPORTED holds a part of ORIGINAL (a window): every event it holds is checked against the
original's. Prints counts as JSON; exits 1 on the first difference it reports."""
import json
import sys
from collections import defaultdict

# members the trace rules read (times, ids, phases): not attributes
GRAMMAR = {"ph", "name", "ts", "dur", "pid", "tid", "s", "id", "id2", "scope", "bp",
           "bind_id", "flow_in", "flow_out", "args", "cat", "trove"}


def fields(e):
    f = {k: v for k, v in e.items() if k not in GRAMMAR}
    if "cat" in e:
        f["cat"] = e["cat"]
    return f


def merged(b, e):
    f = fields(b)
    f.update(fields(e))
    a = dict(b.get("args") or {})
    a.update(e.get("args") or {})
    return f, a


def canon(f, a):
    return json.dumps([f, a], sort_keys=True)


def events(doc):
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def collect(doc, exported):
    """(kind, key...) -> sorted list of canonical (fields, args) of the events kept."""
    out = defaultdict(list)
    stacks = defaultdict(list)
    spans = defaultdict(list)
    for e in events(doc):
        ph = e.get("ph")
        name = e.get("name", "")
        pid, tid, ts = e.get("pid"), e.get("tid"), e.get("ts")
        if ph == "X":
            out[("Z", pid, tid, ts, name)].append(canon(fields(e), e.get("args") or {}))
        elif ph == "B":
            stacks[(pid, tid)].append(e)
        elif ph == "E":
            st = stacks[(pid, tid)]
            if st:
                b = st.pop()
                out[("Z", pid, tid, b["ts"], b.get("name", name))].append(canon(*merged(b, e)))
        elif ph in ("i", "I"):
            out[("I", pid, tid, ts, name)].append(canon(fields(e), e.get("args") or {}))
        elif ph == "n":
            out[("N", pid, ts, name)].append(canon(fields(e), e.get("args") or {}))
        elif ph in ("b", "S"):
            # trove's export names a span by its track's id alone (its end has no "cat")
            cat = None if exported else e.get("cat")
            spans[(pid, json.dumps(e.get("id", e.get("id2"))), cat, ph)].append(e)
        elif ph in ("e", "F"):
            key = (pid, json.dumps(e.get("id", e.get("id2"))), None if exported else e.get("cat"),
                   "b" if ph == "e" else "S")
            if spans[key]:
                b = spans[key].pop()
                out[("A", pid, b["ts"], b.get("name") or name)].append(canon(*merged(b, e)))
        elif ph == "C":
            f = fields(e)
            if exported:
                out[("C", pid, ts, name)].append(canon(f, {}))
            else:  # one event a number
                for v in (e.get("args") or {}).values():
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        out[("C", pid, ts, name)].append(canon(f, {}))
    return out


def main():
    with open(sys.argv[1], "rb") as f:
        a = json.load(f)
    with open(sys.argv[2], "rb") as f:
        b = json.load(f)
    want, got = collect(a, False), collect(b, True)
    checked = with_args = 0
    bad = []
    subset = "--subset" in sys.argv
    for key in (got if subset else want):
        g = sorted(got.get(key, []))
        w = sorted(want.get(key, []))
        if g != w:
            bad.append((key, w[:2], g[:2]))
            continue
        checked += len(w)
        with_args += sum(1 for r in w if json.loads(r)[1])
    top_a = {k: v for k, v in a.items() if k != "traceEvents"} if isinstance(a, dict) else {}
    top_b = {k: v for k, v in b.items() if k != "traceEvents"}
    if "displayTimeUnit" not in top_a:
        top_b.pop("displayTimeUnit", None)
    print(json.dumps({"events": checked, "with_args": with_args, "differ": len(bad),
                      "top_members": len(top_a), "top_equal": top_a == top_b}))
    for key, w, g in bad[:5]:
        print("differs:", key, "\n  want", w, "\n  got ", g, file=sys.stderr)
    if bad or (top_a != top_b and "--no-top" not in sys.argv):
        sys.exit(1)


main()
