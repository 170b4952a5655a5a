#!/usr/bin/env python3
"""json_check.py: the CLI tests' one reader of JSON (tests/cli/*.sh, through lib_cli.sh's
json, json_get and json_check).

  json_check.py [--lines] [--zip MEMBER] FILE EXPR...
      exit 0 when every Python EXPR holds of the document, as j; else say on stderr which
      one is false (or what it raised), with the document, and exit 1
  json_check.py --get [--lines] [--zip MEMBER] FILE EXPR
      print the value of EXPR: a string as it is, a tuple's items separated by spaces,
      anything else as Python prints it (True, [1, 2])

FILE is a path, or - for stdin. --lines reads JSON Lines: j is the list of the lines'
documents. --zip MEMBER reads the file MEMBER of the zip archive FILE (a bundle's
manifest.json). An EXPR sees j and the json module; a value from the shell is written into
it (as "j['events'] == $n"). A FILE that is not JSON is a failure (exit 1), which lets a
loop wait until a status is there and says what it wants; a bad command line exits 2.
"""
import json
import sys
import zipfile

USAGE = "usage: json_check.py [--get] [--lines] [--zip MEMBER] FILE EXPR..."


def usage(why):
    print(f"json_check.py: {why}\n{USAGE}", file=sys.stderr)
    sys.exit(2)


def read(path, member):
    if member is not None:
        with zipfile.ZipFile(sys.stdin.buffer if path == "-" else path) as z:
            return z.read(member).decode()
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def shown(j):
    text = json.dumps(j)
    return text if len(text) <= 4000 else text[:4000] + f"... ({len(text)} characters)"


def main(argv):
    get, lines, member = False, False, None
    while argv and argv[0].startswith("--"):
        opt = argv.pop(0)
        if opt == "--get":
            get = True
        elif opt == "--lines":
            lines = True
        elif opt == "--zip" and argv:
            member = argv.pop(0)
        else:
            usage(f"unknown option {opt}")
    if len(argv) < 2 or (get and len(argv) != 2):
        usage("a FILE and " + ("one EXPR" if get else "at least one EXPR"))
    path, exprs = argv[0], argv[1:]
    name = "stdin" if path == "-" else path
    if member is not None:
        name += ":" + member
    try:
        text = read(path, member)
        j = [json.loads(l) for l in text.splitlines() if l.strip()] if lines else json.loads(text)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        print(f"json_check.py: {name}: {e}", file=sys.stderr)
        return 1
    for expr in exprs:
        try:
            value = eval(expr, {"j": j, "json": json})
        except Exception as e:
            print(f"json_check.py: {name}: {expr}: raised {type(e).__name__}: {e}\n  j = {shown(j)}",
                  file=sys.stderr)
            return 1
        if get:
            print(*(value if isinstance(value, tuple) else (value,)))
        elif not value:
            print(f"json_check.py: {name}: false: {expr}\n  j = {shown(j)}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
