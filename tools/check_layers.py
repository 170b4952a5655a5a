#!/usr/bin/env python3
"""check_layers.py: holds trove's sources to the layer graph of CMakeLists.txt.

The build runs it before any layer compiles (a failure fails the build) and a ctest runs it
on purpose-made bad trees. The graph comes in as arguments, one --layer=NAME:DEPS:HEADERS
per trove_layer() call (DEPS and HEADERS comma-separated), so it is written only once.

Three checks:

1. Includes. Every #include "..." of src/, include/trove/, cli/ and bench/ must be one of
   - "trove/H.h": a public header of the file's own layer or of a layer below it;
   - "common/H.h": an internal header of src/common/include/common/, from src/ only, in a
     layer at or above common;
   - a bare "H.h" that sits in the including file's own directory (for cli/ and bench/:
     in cli/ or bench/), or a header the build generates for that layer;
   - in a layer's subdirectory (src/store/s3/), also a bare "H.h" of the layer's own
     directory (src/store/store_internal.h): its layer's internal headers, which the build
     puts on that layer's include path (trove_layer's SUBDIRS), and nothing further up;
   - "D/H.h", a path down from the including file's directory into a subdirectory of its
     own layer ("s3/backend_s3.h" from src/store/); never "..".
   Anything else ("store/dict.h" from src/codec, say) reaches into another layer.
2. Calls. No circle of files: if a.c calls a function that b.c defines, b.c must not
   (directly or through others) call back into a.c. Functions are matched by name: a
   non-static function's name is unique in the program.
3. Size. No .c file under src/, nor in tests/unit/, tests/support/, cli/ or fuzz/, is longer
   than MAX_LINES lines: one job per file, and a file that grows past it is two jobs to
   split. (bench/ is not held to it yet: bench/bench_recipe.c is over.)

Exit status 0 when the tree keeps the rules (and the --stamp file is written), 1 with one
line per broken rule otherwise.
"""
import argparse
import os
import re
import sys

GENERATED = {"codec": {"bitpack_kernels.h"}}
MAX_LINES = 1300  # a .c file longer than this does more than one job
# Beside src/ (all of it), the directories whose .c files the size rule holds.
SIZE_DIRS = ("tests/unit", "tests/support", "cli", "fuzz")
TOP = "cli"  # cli/ and bench/: the one binary, above every layer
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def parse_graph(specs):
    deps, owner = {}, {}
    for spec in specs:
        name, dl, hl = (spec.split(":") + ["", ""])[:3]
        deps[name] = [d for d in dl.split(",") if d]
        for h in hl.split(","):
            if h:
                owner[h] = name
    closure = {}

    def below(n, seen=()):
        if n in closure:
            return closure[n]
        if n in seen:
            sys.exit("check_layers: the layer graph has a circle through %s" % n)
        out = set()
        for d in deps.get(n, []):
            if d not in deps:
                sys.exit("check_layers: layer %s depends on unknown layer %s" % (n, d))
            out |= {d} | below(d, seen + (n,))
        closure[n] = out
        return out

    for n in deps:
        below(n)
    closure[TOP] = set(deps)
    return closure, owner


def layer_of(rel, owner):
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) >= 3:
        return parts[1]
    if parts[0] == "include" and len(parts) == 3:
        return owner.get(parts[2])
    if parts[0] in ("cli", "bench"):
        return TOP
    return None


def sources(root):
    for top in ("src", "include/trove", "cli", "bench"):
        base = os.path.join(root, top)
        for d, dirs, files in os.walk(base):
            dirs[:] = sorted(x for x in dirs if x not in ("node_modules", "duckdb"))
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


def strip_c(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", text)


def check_includes(root, files, closure, owner):
    errors = []
    for rel in files:
        layer = layer_of(rel, owner)
        if layer is None:
            errors.append("%s: belongs to no layer (add it to a trove_layer() HEADERS list "
                          "in CMakeLists.txt)" % rel)
            continue
        allowed = {layer} | closure.get(layer, set())
        text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
        for m in INCLUDE_RE.finditer(text):
            inc = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            where = "%s:%d: #include \"%s\"" % (rel, line, inc)
            if inc.startswith("trove/") and inc.count("/") == 1:
                tl = owner.get(inc[6:])
                if tl is None:
                    errors.append("%s: no such public header of any layer" % where)
                elif tl not in allowed:
                    errors.append("%s: layer %s may not include layer %s (it may include %s)"
                                  % (where, layer, tl, ", ".join(sorted(allowed))))
            elif inc.startswith("common/") and inc.count("/") == 1:
                if layer == TOP:
                    errors.append("%s: cli/ and bench/ use only include/trove/" % where)
                elif not os.path.exists(os.path.join(root, "src/common/include", inc)):
                    errors.append("%s: no such internal header in src/common/include" % where)
                elif "common" not in allowed:
                    errors.append("%s: layer %s is below common" % (where, layer))
            elif "/" not in inc:
                here = os.path.dirname(rel)
                dirs = ["cli", "bench"] if layer == TOP else [here]
                top = "src/%s" % layer
                if layer != TOP and rel.startswith("src/") and here != top:
                    dirs.append(top)  # a subdirectory reaches its layer's own headers
                if not any(os.path.exists(os.path.join(root, d, inc)) for d in dirs) and \
                        inc not in GENERATED.get(layer, set()):
                    errors.append("%s: a bare include must name a header in %s"
                                  % (where, " or ".join(dirs)))
            elif rel.startswith("src/") and ".." not in inc.split("/") and \
                    os.path.exists(os.path.join(root, os.path.dirname(rel), inc)):
                pass  # down into a subdirectory of the file's own directory, same layer
            else:
                errors.append("%s: reaches into another layer's internal headers (use its "
                              "public header in include/trove/)" % where)
    return errors


def sized_files(root, files):
    """The .c files the size rule holds: src/'s, and those of SIZE_DIRS (a directory the
    tree at root does not have is skipped)."""
    out = [rel for rel in files if rel.startswith("src/") and rel.endswith(".c")]
    for top in SIZE_DIRS:
        base = os.path.join(root, top)
        if os.path.isdir(base):
            out += sorted(os.path.join(top, f) for f in os.listdir(base) if f.endswith(".c"))
    return out


def check_sizes(root, files):
    errors = []
    for rel in sized_files(root, files):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            where = os.path.dirname(rel) + "/" if not rel.startswith("src/") else "src/"
            errors.append("%s: %d lines, more than the %d a file of %s may have (one "
                          "job per file: split it by job)" % (rel, n, MAX_LINES, where))
    return errors


# A definition starts at column 0 (bodies are indented) and is not static; a reference is any
# name followed by "(" (macros and static functions never match a definition elsewhere).
DEF_RE = re.compile(r"^(?!static\b)(?!typedef\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\([^;{]*\)\s*\{",
                    re.M)
REF_RE = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


MACRO_RE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(((?:[^\n]*\\\n)*[^\n]*)", re.M)


def macro_calls(root, files):
    """Function-like macros and the functions their bodies call (TROVE_FAIL: trove_diag_set),
    so that a call made through a macro counts as a call."""
    out = {}
    for rel in files:
        text = strip_c(open(os.path.join(root, rel), encoding="utf-8", errors="replace").read())
        for m in MACRO_RE.finditer(text):
            out.setdefault(m.group(1), set()).update(REF_RE.findall(m.group(2)))
    changed = True
    while changed:  # macros that use macros
        changed = False
        for name, called in out.items():
            more = set().union(*(out.get(c, set()) for c in called)) - called
            if more:
                called |= more
                changed = True
    return out


def check_calls(root, files):
    defs, refs = {}, {}
    macros = macro_calls(root, files)
    for rel in files:
        if not rel.endswith(".c"):
            continue
        text = strip_c(open(os.path.join(root, rel), encoding="utf-8", errors="replace").read())
        mine = set(DEF_RE.findall(text))
        for name in mine:
            defs.setdefault(name, rel)
        used = set(REF_RE.findall(text))
        for name in list(used):
            used |= macros.get(name, set())
        refs[rel] = used - mine
    graph = {f: sorted({defs[n] for n in r if n in defs and defs[n] != f}) for f, r in refs.items()}
    # Tarjan's strongly connected components: any with two or more files is a circle.
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    errors = []
    for comp in out:
        ties = []
        for a in comp:
            for b in comp:
                names = sorted(n for n in refs[a] if defs.get(n) == b)
                if names:
                    ties.append("%s -> %s (%s)" % (a, b, ", ".join(names[:4])))
        errors.append("a circle of files: " + "; ".join(ties))
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--layer", action="append", default=[])
    ap.add_argument("--stamp")
    ap.add_argument("--no-calls", action="store_true", help="check the includes only")
    a = ap.parse_args()
    closure, owner = parse_graph(a.layer)
    files = list(sources(a.root))
    errors = check_includes(a.root, files, closure, owner)
    errors += check_sizes(a.root, files)
    if not a.no_calls:
        errors += check_calls(a.root, files)
    for e in errors:
        print("check_layers: " + e, file=sys.stderr)
    if errors:
        return 1
    if a.stamp:
        with open(a.stamp, "w") as f:
            f.write("%d files keep the layer graph\n" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
