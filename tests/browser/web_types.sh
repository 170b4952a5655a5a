#!/usr/bin/env bash
# web_types.sh: the viewer's modules (web/*.js, each // @ts-check) type-checked with their
# JSDoc by tsc -p web (web/tsconfig.json: checkJs, noEmit), the TypeScript of tests/browser's
# lockfile (make deps-npm). Exits 77 (skipped) without node or that install.
# usage: web_types.sh SOURCE_DIR
set -u
src=$1
tsc=$src/tests/browser/node_modules/.bin/tsc
if ! command -v node > /dev/null 2>&1 || [ ! -x "$tsc" ]; then
    echo "skipped: needs node and typescript (make deps-node deps-npm)"
    exit 77
fi
for f in "$src"/web/*.js; do
    if [ "$(head -n 1 "$f")" != "// @ts-check" ]; then
        echo "FAIL: $f does not start with // @ts-check"
        exit 1
    fi
done
"$tsc" -p "$src/web" || { echo "FAIL: tsc -p web"; exit 1; }
echo "ok: tsc -p web"
