#!/usr/bin/env bash
# cli_outputs.sh: every command that writes a file writes it the same safe way (cli_out) —
# a regular file is replaced whole (its permissions kept), a new path is created, a symlink
# is followed (its target replaced, the link kept), a FIFO and a character device are
# written in place and stay what they are (the FIFO's reader gets every byte), `-` is
# stdout, and an existing directory is an error that leaves it untouched. The expected
# bytes of each command are its output to a new path.
# usage: cli_outputs.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE

s=$tmp/store
"$trove" gen -o "$tmp/g.wire" --events 5000 --seed 3 2> /dev/null || bad "gen"
"$trove" import "$tmp/g.wire" --store "$s" --name cap --quiet > /dev/null 2>&1 || bad "import to the store"
"$trove" export "$tmp/g.wire" -o "$tmp/g.zip" --quiet 2> /dev/null || bad "export"

# Each writer, as a command line with OUT where its output goes.
writers=(
  "convert $tmp/g.wire OUT --quiet"
  "gen -o OUT --events 5000 --seed 3 --quiet"
  "replay cap --store $s -o OUT --quiet"
  "export $tmp/g.wire -o OUT --quiet"
  "export $tmp/g.wire -o OUT --format parquet --quiet"
  "export --capture cap --store $s -o OUT --quiet"
  "import $tmp/g.zip -o OUT --quiet"
)
# run LINE OUT: the writer with OUT substituted (stdout and stderr kept in $tmp).
run() { local line=${1//OUT/$2}; $trove $line > "$tmp/stdout" 2> "$tmp/stderr"; }
is_root=0
[ "$(id -u)" = 0 ] && is_root=1

# Each writer to a new path, then over a file, through symlinks, into a FIFO and a device,
# into a directory, and failing over an old file.
if section paths; then
n=0
for w in "${writers[@]}"; do
  n=$((n + 1))
  d=$tmp/w$n
  mkdir "$d"
  run "$w" "$d/want" || { bad "$w to a new path: $(cat "$tmp/stderr")"; continue; }
  check test -f "$d/want"

  # An existing regular file: replaced whole, its mode kept, nothing left beside it.
  printf 'old contents' > "$d/file"
  chmod 0640 "$d/file"
  run "$w" "$d/file" || bad "$w over a file: $(cat "$tmp/stderr")"
  check cmp -s "$d/file" "$d/want"
  check test "$(stat -c %a "$d/file")" = 640
  check test "$(ls -A "$d" | wc -l)" -eq 2

  # A symlink: its target is replaced, the link stays a link.
  printf 'old' > "$d/target"
  ln -s target "$d/link"
  run "$w" "$d/link" || bad "$w through a symlink: $(cat "$tmp/stderr")"
  check test -L "$d/link"
  check cmp -s "$d/target" "$d/want"
  # A dangling symlink: the file it names is created.
  ln -s made "$d/dangling"
  run "$w" "$d/dangling" || bad "$w through a dangling symlink: $(cat "$tmp/stderr")"
  check test -L "$d/dangling"
  check cmp -s "$d/made" "$d/want"

  # A FIFO: written in place, its reader gets every byte, it stays a FIFO.
  mkfifo "$d/fifo"
  cat "$d/fifo" > "$d/from-fifo" &
  reader=$!
  run "$w" "$d/fifo" || bad "$w into a FIFO: $(cat "$tmp/stderr")"
  wait $reader
  check test -p "$d/fifo"
  check cmp -s "$d/from-fifo" "$d/want"

  # A character device of the test's own (the null device's numbers): written, not replaced.
  if [ $is_root = 1 ] && mknod "$d/null" c 1 3 2> /dev/null; then
    run "$w" "$d/null" || bad "$w into a character device: $(cat "$tmp/stderr")"
    check test -c "$d/null"
  fi

  # An existing directory: refused by name, untouched.
  mkdir "$d/dir"
  touch "$d/dir/keep"
  if run "$w" "$d/dir"; then bad "$w into a directory succeeded"; else ok; fi
  check grep -q "is a directory" "$tmp/stderr"
  check test "$(ls -A "$d/dir")" = keep

  # A failure leaves the old file as it was (an input that is not there).
  cp "$d/want" "$d/kept"
  line=${w//$tmp\/g.wire/$tmp/missing.wire}
  line=${line//$tmp\/g.zip/$tmp/missing.zip}
  line=${line//cap --store/missing --store}
  line=${line//--capture cap/--capture missing}
  if [ "$line" != "$w" ]; then
    if run "$line" "$d/kept"; then bad "$line succeeded"; else ok; fi
    check cmp -s "$d/kept" "$d/want"
  fi
done
fi

# `-` is stdout: the same bytes (for the writers that stream to it).
if section stdout; then
for w in "convert $tmp/g.wire OUT --quiet" "replay cap --store $s -o OUT --quiet" \
         "import $tmp/g.zip -o OUT --quiet"; do
  run "$w" "$tmp/one" || bad "$w"
  run "$w" - || bad "$w to stdout: $(cat "$tmp/stderr")"
  check cmp -s "$tmp/stdout" "$tmp/one"
done
fi

finish
