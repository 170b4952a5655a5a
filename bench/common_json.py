#!/usr/bin/env python3
"""common_json.py IN.json OUT.json: the Chrome trace IN restricted to what every trace tool
keeps alike (issue 44's comparison with Tracy): X, I/i, B/E, b/e, C and M events, args only
on M and C, no flow bindings. The same content `trove bench wire --common` keeps, written
as a trace, so that it can be imported as a capture and its stored bytes compared."""
import json
import sys

KEEP = {"X", "I", "i", "B", "E", "b", "e", "C", "M"}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: common_json.py IN.json OUT.json")
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    kept = []
    for e in events:
        if e.get("ph") not in KEEP:
            continue
        e = dict(e)
        if e["ph"] not in ("M", "C"):
            e.pop("args", None)
        for k in ("bind_id", "flow_in", "flow_out"):
            e.pop(k, None)
        kept.append(e)
    with open(sys.argv[2], "w") as f:
        json.dump({"traceEvents": kept}, f)
    print(f"{len(kept)} of {len(events)} events kept", file=sys.stderr)


main()
