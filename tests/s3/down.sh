#!/usr/bin/env bash
# tests/s3/down.sh: stop the Swift server that tests/s3/up.sh started and remove its data.
# Which one: $TROVE_S3_DIR (as up.sh exported it) or the first argument. Each daemon is
# stopped by the pid up.sh recorded (TERM, then KILL after 5 s), nothing by name.
set -u
dir=${1:-${TROVE_S3_DIR:-}}
case $dir in
  /tmp/trove-s3.*) ;;
  *) echo "down.sh: not a directory of up.sh: '$dir'" >&2; exit 2 ;;
esac
[ -d "$dir" ] || exit 0
pids=""
for f in "$dir"/run/*.pid; do
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  case $f in
    */memcached.pid) kill "$pid" 2>/dev/null ;;
    *) kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null ;; # its workers too
  esac
  pids="$pids $pid"
done
for _ in $(seq 1 50); do
  alive=0
  for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive=1; done
  [ $alive = 0 ] && break
  sleep 0.1
done
for pid in $pids; do kill -9 -- "-$pid" 2>/dev/null; kill -9 "$pid" 2>/dev/null; done
rm -rf "$dir"
