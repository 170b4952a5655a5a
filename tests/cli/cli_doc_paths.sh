#!/usr/bin/env bash
# cli_doc_paths.sh: every file or directory the documents name exists.
#
# The documents (README.md, CONTRIBUTING.md, docs/**/*.md) are the map of the tree, and a
# map that names a file nobody can find is wrong in a way no other test notices. This test
# reads every line of them, prose, tables and code blocks alike, and takes as a path:
#   - a word that starts with one of the tree's top-level directories (src/ include/ cli/
#     tools/ tests/ bench/ fuzz/ web/ docs/ examples/ cmake/), resolved from the root;
#   - the target of a markdown link ([text](target)), resolved from the document's own
#     directory.
# It leaves out URLs, build outputs (build/..., node_modules/), anything outside the tree
# (../...), and placeholders: a word with <, *, |, {, $ or ... in it (src/<layer>/,
# cmd_<command>.c, tests/cli_*.sh). A link to a markdown anchor (file.md#heading) must
# also name a heading of that file. Every miss is listed as DOC:LINE: PATH, and the test fails if there is one.
#
# Usage: cli_doc_paths.sh [TROVE_BINARY] SOURCE_DIR [...]  (the first argument that is the
# source tree is used, so it runs both as ctest registers it and as the cli_*.sh tests run).
set -u

root=""
for a in "$@"; do
    if [ -d "$a" ] && [ -f "$a/CMakeLists.txt" ] && [ -d "$a/docs" ]; then
        root=$a
        break
    fi
done
if [ -z "$root" ]; then
    echo "usage: $0 [TROVE_BINARY] SOURCE_DIR" >&2
    exit 2
fi

exec python3 - "$root" <<'PY'
import os
import re
import sys

root = os.path.abspath(sys.argv[1])
TOP = ("src", "include", "cli", "tools", "tests", "bench", "fuzz", "web", "docs",
       "examples", "cmake")
PLACEHOLDER = re.compile(r"[<>*|{}$]|\.\.\.|…")
# A root-relative word: one of TOP, a slash, then path characters. Not part of a longer
# word or path (no letter, dot, slash, colon or hyphen before it: ../src/x, http://h/docs/x,
# build/tests/x and the like are not the tree's paths).
WORD = re.compile(r"(?<![\w./:~-])((?:%s)/[^\s`'\"()\[\],;]*)" % "|".join(TOP))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def docs():
    out = [p for p in ("README.md", "CONTRIBUTING.md") if os.path.isfile(os.path.join(root, p))]
    for d, _, files in os.walk(os.path.join(root, "docs")):
        for f in sorted(files):
            if f.endswith(".md"):
                out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def slug(heading):
    """The anchor a markdown renderer (GitHub's) gives a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


anchors_of = {}


def anchors(path):
    if path not in anchors_of:
        seen, out = {}, set()
        in_code = False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    in_code = not in_code
                    continue
                m = None if in_code else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    s = slug(m.group(1))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    out.add(s if n == 0 else "%s-%d" % (s, n))
        anchors_of[path] = out
    return anchors_of[path]


def clean(tok):
    tok = tok.rstrip(".,;:!?'\"")
    while tok.endswith(")") and tok.count("(") < tok.count(")"):
        tok = tok[:-1]
    return tok.rstrip(".,;:")


missing = 0
checked = 0


def check(doc, lineno, base, tok):
    global missing, checked
    tok = clean(tok)
    if not tok or PLACEHOLDER.search(tok) or "node_modules" in tok.split("/"):
        return                                     # a placeholder, or what npm installs
    path, _, anchor = tok.partition("#")
    if not path:
        target = os.path.join(root, doc)          # #anchor in the same document
    else:
        target = os.path.normpath(os.path.join(base, path))
        if not target.startswith(os.path.normpath(root) + os.sep):
            return                                 # outside the tree
    checked += 1
    if not os.path.exists(target):
        print("%s:%d: %s: no such file or directory" % (doc, lineno, tok))
        missing += 1
    elif anchor and target.endswith(".md") and anchor not in anchors(target):
        print("%s:%d: %s: no heading with that anchor" % (doc, lineno, tok))
        missing += 1


for doc in docs():
    here = os.path.dirname(os.path.join(root, doc))
    with open(os.path.join(root, doc), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            for m in WORD.finditer(line):
                check(doc, n, root, m.group(1))
            for m in LINK.finditer(line):
                t = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", t):   # http:, mailto: ...
                    continue
                if t.split("/")[0] in TOP:
                    continue                             # already taken as a word
                check(doc, n, here, t)

print("cli_doc_paths: %d paths checked, %d missing" % (checked, missing))
sys.exit(1 if missing else 0)
PY
