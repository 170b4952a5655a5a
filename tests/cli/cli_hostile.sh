#!/usr/bin/env bash
# cli_hostile.sh: hostile bundles through the CLI, under a 256 MiB address-space limit
# (ulimit -v): a real bundle whose events.parquet, or whose names.parquet, is replaced by a
# zip bomb (1 GiB of zeros deflated to about 1 MiB) and by one of 200:1 that deflate's own
# bound lets by (a header that lies long is tests/unit/test_bundle.c's). Each import fails with one clear line and
# leaves the store as it was; the honest bundle imports under the same limit. (The limit is
# skipped under the sanitizers, whose runtimes reserve terabytes of address space.)
# usage: cli_hostile.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
s=$tmp/s
limit() {
    if [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}${UBSAN_OPTIONS:-}" ]; then "$@"; else (ulimit -v 262144 && "$@"); fi
}

# The honest bundle of a capture, and the bombs made from it (the fixtures of both parts).
"$trove" gen --events 50000 -o "$tmp/g.wire" -q || bad "gen"
exits 0 "$trove" import "$tmp/g.wire" --name g --store "$tmp/src" -q
exits 0 "$trove" export store:g --store "$tmp/src" -o "$tmp/honest.zip" -q
python3 - "$tmp" <<'PY'
import sys, zipfile, random
tmp = sys.argv[1]
random.seed(1)
block = bytes(random.randrange(256) for _ in range(1000))
def repeated(f):   # about 200:1
    chunk = block * 1048
    for _ in range(300):
        f.write(chunk)
def zeros(f):      # 1 GiB of zeros, about 1030:1
    z = bytes(1 << 20)
    for _ in range(1024):
        f.write(z)
for table in ("events", "names"):
    for name, fill in (("bomb", zeros), ("bomb200", repeated)):
        # writestr changes the ZipInfo it is given: the honest archive is opened afresh
        src = zipfile.ZipFile(tmp + "/honest.zip")
        with zipfile.ZipFile("%s/%s-%s.zip" % (tmp, name, table), "w") as out:
            for info in src.infolist():
                if info.filename.endswith(table + ".parquet"):
                    i = zipfile.ZipInfo(info.filename)
                    i.compress_type = zipfile.ZIP_DEFLATED
                    with out.open(i, "w", force_zip64=True) as f:
                        fill(f)
                else:
                    out.writestr(info, src.read(info.filename))
PY
zips="bomb-events bomb200-events bomb-names bomb200-names"

# The bombs are there, and small.
if section archives; then
for z in $zips; do check test -s "$tmp/$z.zip"; done
check test "$(stat -c %s "$tmp/bomb-events.zip")" -lt $((8 << 20))
fi

# Under the limit: the honest bundle imports; each bomb fails with one line naming its table,
# and the store is as it was.
if section imports; then
exits 0 limit "$trove" import "$tmp/honest.zip" --name honest --store "$s" -q
exits 0 "$trove" ls --store "$s" --json
cp "$tmp/out" "$tmp/before.json"
for z in $zips; do
    exits 1 limit "$trove" import "$tmp/$z.zip" --name "$z" --store "$s" -q
    check test "$(wc -l < "$tmp/err")" -eq 1
    check grep -q "${z#*-}.parquet" "$tmp/err"
    check grep -q "a zip bomb" "$tmp/err"
    exits 0 "$trove" ls --store "$s" --json
    check cmp -s "$tmp/before.json" "$tmp/out"
done
exits 0 "$trove" verify --deep --store "$s"
fi

finish
