#!/bin/bash
# record.sh PAGE OUT [CATEGORIES]: record a Chrome JSON trace of headless Chromium running
# PAGE for five seconds of virtual time, as ../shared/data/README.md records the sample
# (docs/BENCHMARKS.md uses the traces of this directory's pages).
set -eu
page=${1:?usage: record.sh PAGE OUT [CATEGORIES]}
out=${2:?usage: record.sh PAGE OUT [CATEGORIES]}
cats=${3:-toplevel,blink,v8,cc,disabled-by-default-devtools.timeline}
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" \
  --trace-startup="$cats" \
  --trace-startup-format=json --trace-startup-file="$out" \
  --trace-startup-duration=5 --virtual-time-budget=5000 \
  --screenshot=/dev/null "file://$(cd "$(dirname "$page")" && pwd)/$(basename "$page")" \
  > /dev/null 2>&1
test -s "$out"
