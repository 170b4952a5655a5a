#!/usr/bin/env bash
# cli_security.sh: what the service and the store refuse beyond the token checks of
# cli_api.sh (a missing or wrong token on every endpoint and the WebSocket upgrade, a
# foreign Origin, `..` and NUL in names): the producers' unix socket is 0600; an oversized
# request header gets no answer but a refusal, and the service goes on; and a symbolic link
# planted in a store never takes a read or a write outside it — a volume's recipe, an
# object file and an object fan-out directory that are links are refused (the link's
# target is never read or written), on the CLI and through the service's API; an import
# without a Content-Length is refused unread (411), even behind another request.
# usage: cli_security.sh TROVE SOURCE_DIR SHARED_DATA_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TROVE=$trove
. "$(dirname "$0")/../support/lib_cli.sh"
need_python3
unset TROVE_STORE
s=$tmp/s
t() { "$trove" "$@" --store "$s"; }

# ---- a store with a planted link for a recipe, an object, a fan-out directory ---------
if section store_with_a; then
head -c 8192 /dev/urandom > "$tmp/a.bin"
exits 0 t volume put a "$tmp/a.bin" --block-size 4K --recipe-format v1 -q
exits 0 t volume put b "$tmp/a.bin" --block-size 4K --recipe-format v1 -q
mkdir -p "$tmp/outside"
cp "$s/volumes/b.recipe" "$tmp/outside/b.recipe"        # a valid recipe, outside the store
rm "$s/volumes/b.recipe"
ln -s "$tmp/outside/b.recipe" "$s/volumes/b.recipe"
exits 1 t volume cat b
exits 0 t volume ls --json
json "$tmp/out" '[v for v in j if v["name"] == "b"][0].get("error")'
exits 1 t verify
check grep -q "b" "$tmp/out"
# An object file that is a link to a copy of itself outside: not read.
obj=$(find "$s/objects" -path "$s/objects/packs" -prune -o -type f -print | head -1)
cp "$obj" "$tmp/outside/obj"
rm "$obj"
ln -s "$tmp/outside/obj" "$obj"
exits 1 t volume cat a
exits 1 t verify --deep
rm "$obj"
cp "$tmp/outside/obj" "$obj"
exits 0 t volume cat a
check cmp -s "$tmp/out" "$tmp/a.bin"
# A fan-out directory that is a link: a put through it is refused, nothing lands outside.
head -c 4096 /dev/urandom > "$tmp/c.bin"
hex=$(xxhsum -H2 "$tmp/c.bin" 2>/dev/null | cut -c1-2)
if [ -n "$hex" ]; then
    rm -rf "$s/objects/$hex"
    mkdir -p "$tmp/outside/fan"
    ln -s "$tmp/outside/fan" "$s/objects/$hex"
    exits 1 t volume put c "$tmp/c.bin" --block-size 4K -q
    check test -z "$(ls -A "$tmp/outside/fan")"
    rm "$s/objects/$hex"
fi
# A temp name planted as a link is removed by the next writable open, its target kept.
echo keep > "$tmp/outside/target"
ln -s "$tmp/outside/target" "$s/volumes/.tmp-a.recipe"
exits 0 t volume put a "$tmp/a.bin" --block-size 4K --recipe-format v1 -q
check test "$(cat "$tmp/outside/target")" = keep
check test ! -L "$s/volumes/.tmp-a.recipe"
fi

# ---- the service: the socket, an oversized header, the planted recipe over the API -----
if section service; then
"$trove" gen --events 20000 -o "$tmp/g.wire" -q
exits 0 t import "$tmp/g.wire" --name cap -q
cp "$s/volumes/cap.recipe" "$tmp/outside/cap.recipe"
exits 0 t snapshot cap cap2 -q
rm "$s/volumes/cap2.recipe"
ln -s "$tmp/outside/cap.recipe" "$s/volumes/cap2.recipe"
serve_start
check test "$(stat -c %a "$sock")" = 600
check test -S "$sock"
big=$(head -c 20000 /dev/zero | tr '\0' a)
code=$(curl -s -o "$tmp/big.json" -w '%{http_code}' -H "X-Big: $big" "${url}api/captures")
check test "$code" = 413                       # refused as soon as the line passes 8 KiB
json "$tmp/big.json" 'j["code"] == "too_large" and "header" in j["error"]'
code=$(curl -s -o "$tmp/caps.json" -w '%{http_code}' "${url}api/captures")
check test "$code" = 200                       # still serving
json "$tmp/caps.json" '[c for c in j if c["name"] == "cap2"][0].get("error")'
code=$(curl -s -o /dev/null -w '%{http_code}' "${url}api/captures/cap2/export?format=bundle")
check test "$code" != 200
code=$(curl -s -o /dev/null -w '%{http_code}' "${url}api/captures/cap/export?format=bundle")
check test "$code" = 200
# Requests pipelined behind another (found by fuzz_http when the service ran on libwebsockets
# 4.1, which read an import without a Content-Length from memory it had freed, and spun for
# ever, the whole service with it, on a body in the same read as its request's head): one
# request a connection, so the first is answered, "connection: close", and what follows it
# is never read. An import without a length on its own connection is refused unread (411).
port=${url#http://127.0.0.1:}
port=${port%/}
python3 - "$port" > "$tmp/pipe.out" << 'EOF' && ok || bad "pipelined requests: $(cat "$tmp/pipe.out")"
import socket, sys

def exchange(data):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.settimeout(30)
    s.sendall(data)
    got = b""
    while True:
        d = s.recv(65536)
        if not d:
            return got  # the service ended the connection
        got += d

for second in (b"POST /api/captures/import?name=pipe HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nsome body bytes",
               b"GET /api/captures HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n\r\nm"):
    got = exchange(b"GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + second)
    print(got.decode(errors="replace"))
    assert got.startswith(b"HTTP/1.1 404") and got.count(b"HTTP/1.1 ") == 1, got
    assert b"\r\nconnection: close\r\n" in got.lower(), got
got = exchange(b"POST /api/captures/import?name=pipe HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               b"Content-Type: application/octet-stream\r\n\r\nsome body bytes")
print(got.decode(errors="replace"))
assert got.startswith(b"HTTP/1.1 411") and b'"code":"length_required"' in got, got
EOF
code=$(curl -s -m 30 -o /dev/null -w '%{http_code}' "${url}api/captures")
check test "$code" = 200                       # still serving
code=$(curl -s -o /dev/null -w '%{http_code}' "${url}api/captures/pipe")
check test "$code" = 404                       # nothing stored
serve_stop
fi
finish
