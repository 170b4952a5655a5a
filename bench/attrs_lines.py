#!/usr/bin/env python3
import json, sys
# attr_lines.py EXPORTED.json: the attributes trove keeps as one JSON line per event that has
# them ("INDEX\t{...}"), the trace's members as a line of their own, from trove's own export
GRAMMAR = {"ph", "name", "ts", "dur", "pid", "tid", "s", "id", "id2", "scope", "bp",
           "bind_id", "flow_in", "flow_out", "trove"}
d = json.load(open(sys.argv[1]))
out = sys.stdout
top = {k: v for k, v in d.items() if k not in ("traceEvents", "displayTimeUnit")}
if top:
    out.write("trace\t" + json.dumps(top, separators=(",", ":")) + "\n")
i = 0
for e in d["traceEvents"]:
    ph = e.get("ph")
    if ph in ("M", "s", "t", "f", "e", "F"):
        continue
    a = {k: v for k, v in e.items() if k not in GRAMMAR}
    if a.get("cat") == "trove.frame" and e.get("trove", {}).get("kind") == 3:
        del a["cat"]  # the export's mark of a frame event (kind 3), not an attribute
    if ph in ("C", "T"):
        a.pop("args", None)
    if a:
        out.write("%d\t%s\n" % (i, json.dumps(a, separators=(",", ":"), ensure_ascii=False)))
    i += 1
