#!/usr/bin/env bash
# tests/s3/up.sh: a real S3 API on loopback for the tests — OpenStack Swift (Debian's
# swift-proxy, -account, -container, -object and memcached) with the s3api middleware in
# front of tempauth, one replica, one device that is a plain directory, every file in one
# fresh temporary directory and every port chosen free. No systemd: the daemons run from
# config files written here, their pids kept beside them for tests/s3/down.sh.
#
# On success it prints, on stdout and nothing else, the shell lines that point a client at
# the server:
#   export TROVE_S3_ENDPOINT=http://127.0.0.1:PORT AWS_ACCESS_KEY_ID=... (and the rest)
#   export TROVE_S3_DIR=/tmp/trove-s3.XXXXXX   (what down.sh removes)
# so `eval "$(tests/s3/up.sh)"` sets them. Exit 77 when Swift is not installed (`make deps`
# installs it), 1 when it is but did not come up (its logs are shown on stderr).
set -u
for prog in swift-proxy-server swift-account-server swift-container-server \
            swift-object-server swift-ring-builder memcached curl; do
  if ! command -v "$prog" >/dev/null 2>&1; then
    echo "up.sh: $prog is not installed (make deps installs Swift and memcached)" >&2
    exit 77
  fi
done

dir=$(mktemp -d /tmp/trove-s3.XXXXXX) || exit 1
etc=$dir/etc
mkdir -p "$etc" "$dir/srv/d1" "$dir/run" "$dir/log"

# Five free loopback ports: bound by the kernel, then released for the daemons.
read -r p_proxy p_account p_container p_object p_memcache < <(/usr/bin/python3 - <<'PY'
import socket
socks = []
for _ in range(5):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
)

user=$(id -un)
cat > "$etc/swift.conf" <<CONF
[swift-hash]
swift_hash_path_suffix = trove-test-$$
swift_hash_path_prefix = trove

[storage-policy:0]
name = one
default = yes
CONF

server_conf() { # name port
  cat > "$etc/$1-server.conf" <<CONF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $2
workers = 1
user = $user
swift_dir = $etc
devices = $dir/srv
mount_check = false
log_name = $1
log_level = WARNING
log_udp_host = 127.0.0.1
log_udp_port = 9

[pipeline:main]
pipeline = $1-server

[app:$1-server]
use = egg:swift#$1
CONF
  if [ "$1" = container ]; then
    printf '\n[container-sharder]\n' >>"$etc/$1-server.conf"
  fi
}
server_conf account "$p_account"
server_conf container "$p_container"
server_conf object "$p_object"

cat > "$etc/proxy-server.conf" <<CONF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $p_proxy
workers = 1
user = $user
swift_dir = $etc
log_name = proxy
log_level = WARNING
log_udp_host = 127.0.0.1
log_udp_port = 9

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:healthcheck]
use = egg:swift#healthcheck

[filter:proxy-logging]
use = egg:swift#proxy_logging

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$p_memcache

[filter:listing_formats]
use = egg:swift#listing_formats

[filter:s3api]
use = egg:swift#s3api
location = us-east-1

[filter:tempauth]
use = egg:swift#tempauth
user_trove_tester = trove-test-secret .admin
CONF

for ring in account container object; do
  case $ring in account) port=$p_account ;; container) port=$p_container ;; *) port=$p_object ;; esac
  { swift-ring-builder "$etc/$ring.builder" create 8 1 1 &&
    swift-ring-builder "$etc/$ring.builder" add "r1z1-127.0.0.1:$port/d1" 100 &&
    swift-ring-builder "$etc/$ring.builder" rebalance; } >"$dir/log/ring-$ring.log" 2>&1 || {
    echo "up.sh: swift-ring-builder failed for $ring:" >&2; cat "$dir/log/ring-$ring.log" >&2
    rm -rf "$dir"; exit 1; }
done

memcached -u "$user" -l 127.0.0.1 -p "$p_memcache" -U 0 -m 16 >"$dir/log/memcached.log" 2>&1 &
echo $! >"$dir/run/memcached.pid"
for s in account container object proxy; do
  setsid "swift-$s-server" "$etc/$s-server.conf" >"$dir/log/$s.log" 2>&1 </dev/null &
  echo $! >"$dir/run/$s.pid"
done

endpoint=http://127.0.0.1:$p_proxy
for _ in $(seq 1 300); do
  if curl -fsS -m 2 "$endpoint/healthcheck" >/dev/null 2>&1; then
    # The account and object servers answer too (a PUT of a container needs them all).
    ok=1
    for p in "$p_account" "$p_container" "$p_object"; do
      curl -sS -m 2 -o /dev/null "http://127.0.0.1:$p/healthcheck" 2>/dev/null || ok=0
    done
    [ $ok = 1 ] && break
  fi
  sleep 0.1
done
if ! curl -fsS -m 2 "$endpoint/healthcheck" >/dev/null 2>&1; then
  echo "up.sh: Swift did not come up on $endpoint; its logs:" >&2
  tail -n 20 "$dir"/log/*.log >&2
  TROVE_S3_DIR=$dir "$(dirname "$0")/down.sh"
  exit 1
fi
echo "export TROVE_S3_ENDPOINT=$endpoint"
echo "export AWS_ACCESS_KEY_ID=trove:tester"
echo "export AWS_SECRET_ACCESS_KEY=trove-test-secret"
echo "export AWS_REGION=us-east-1"
echo "export TROVE_S3_DIR=$dir"
