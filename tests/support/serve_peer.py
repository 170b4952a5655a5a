#!/usr/bin/env python3
"""serve_peer.py: the odd peers tests/cli/cli_serve.sh needs besides trove's own clients.

  get URL                         print the body of an HTTP GET (exit 1 on a non-200)
  stall URL CAPTURE SECONDS       open /api/live as a WebSocket, then never read
  send SOCKET HELLO [FILE]        connect to the producer socket (or HOST:PORT), send the HELLO line and
                                  then FILE's bytes; wait for the service to close it; print
                                  each line the service sent, then "closed"
  flood SOCKET CAPTURE LEN        a producer of CAPTURE sending names frames of 10,000 names
                                  each, every name new (LEN bytes), until the service closes
                                  it; print each line the service sent, then "closed N" (the
                                  names it sent)
  chrome-names FILE N LEN         write a Chrome JSON trace of N "X" events, each with a name
                                  of its own of LEN bytes
  ws URL PATH [OUT] [HEADER...]   a WebSocket handshake on PATH (with extra "Name: value"
                                  headers); print each text message, then the close code and
                                  reason ("close 1001 service stopped"), until the service
                                  closes; binary messages to OUT
"""
import base64
import os
import socket
import struct
import sys
import time
import urllib.request


def host_port(url):
    rest = url.split("://", 1)[1].split("/", 1)[0]
    host, port = rest.rsplit(":", 1)
    return host, int(port)


def handshake(url, path, headers=()):
    host, port = host_port(url)
    s = socket.create_connection((host, port))
    key = base64.b64encode(os.urandom(16)).decode()
    extra = "".join(h + "\r\n" for h in headers)
    req = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
           f"Sec-WebSocket-Version: 13\r\n{extra}\r\n")
    s.sendall(req.encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            raise SystemExit("closed during the handshake: %r" % head)
        head += b
    if b" 101 " not in head.split(b"\r\n", 1)[0]:
        print("status", head.split(b"\r\n", 1)[0].split(b" ")[1].decode(), flush=True)
        raise SystemExit(3)
    return s


def read_exact(s, n):
    out = b""
    while len(out) < n:
        b = s.recv(n - len(out))
        if not b:
            return None
        out += b
    return out


def connect(path):
    if "/" not in path and ":" in path:  # HOST:PORT: the TCP ingest
        host, port = path.rsplit(":", 1)
        return socket.create_connection((host, int(port)))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


def names_frame(first, count, length):
    """A names frame (docs/formats/wire.md, format 4) of event names first..first+count-1,
    each "n<id>-" padded with x to LEN bytes."""
    parts = []
    for i in range(first, first + count):
        name = ("n%d-" % i).encode().ljust(length, b"x")
        parts.append(b"\x01" + varint(i) + varint(len(name)) + name)
    body = b"".join(parts)
    return b"TV\x04\x01" + struct.pack("<III", count, len(body), 0) + body


def print_lines(data):
    for line in data.decode(errors="replace").splitlines():
        print(line, flush=True)


def main():
    cmd = sys.argv[1]
    if cmd == "get":
        try:
            with urllib.request.urlopen(sys.argv[2], timeout=10) as r:
                sys.stdout.write(r.read().decode())
        except urllib.error.HTTPError as e:
            sys.stdout.write(e.read().decode())
            return 1
        return 0
    if cmd == "stall":
        url, cap, secs = sys.argv[2], sys.argv[3], float(sys.argv[4])
        s = handshake(url, f"/api/live?capture={cap}&wire=raw&from=now")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        print("stalled", flush=True)
        time.sleep(secs)
        return 0
    if cmd == "send":
        path, hello = sys.argv[2], sys.argv[3]
        s = connect(path)
        data = hello.encode() + b"\n"
        got = b""
        if len(sys.argv) > 4:
            data += open(sys.argv[4], "rb").read()
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)  # the end of the stream; the service then closes
            s.settimeout(10)
            while True:
                b = s.recv(4096)
                if not b:
                    break
                got += b
        except (BrokenPipeError, ConnectionResetError):
            try:  # what the service said before it closed is still there to read
                got += s.recv(65536)
            except OSError:
                pass
        print_lines(got)
        print("closed", flush=True)
        return 0
    if cmd == "flood":
        path, cap, length = sys.argv[2], sys.argv[3], int(sys.argv[4])
        s = connect(path)
        s.sendall(('{"capture":"%s","producer":"flood"}\n' % cap).encode())
        sent = 0
        try:
            while True:
                s.sendall(names_frame(sent, 10000, length))
                sent += 10000
        except (BrokenPipeError, ConnectionResetError):
            pass
        got = b""
        s.settimeout(10)
        try:
            while True:
                b = s.recv(4096)
                if not b:
                    break
                got += b
        except OSError:
            pass
        print_lines(got)
        print("closed", sent, flush=True)
        return 0
    if cmd == "chrome-names":
        path, n, length = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        with open(path, "w") as f:
            f.write('{"traceEvents":[\n')
            for i in range(n):
                name = ("event-%07d-" % i).ljust(length, "x")
                f.write('%s{"name":"%s","ph":"X","ts":%d,"dur":1,"pid":1,"tid":1}\n'
                        % ("," if i else "", name, i))
            f.write("]}\n")
        return 0
    if cmd == "ws":
        out = open(sys.argv[4], "wb") if len(sys.argv) > 4 and sys.argv[4] != "-" else None
        s = handshake(sys.argv[2], sys.argv[3], sys.argv[5:])
        s.settimeout(20)
        while True:
            h = read_exact(s, 2)
            if h is None:
                print("eof")
                return 0
            op, n = h[0] & 15, h[1] & 127
            if n == 126:
                n = int.from_bytes(read_exact(s, 2), "big")
            elif n == 127:
                n = int.from_bytes(read_exact(s, 8), "big")
            body = read_exact(s, n) or b""
            if op == 1:
                print("text", body.decode(), flush=True)
            elif op == 2 and out:
                out.write(body)
            elif op == 8:
                code = int.from_bytes(body[:2], "big") if len(body) >= 2 else 0
                print("close", code, body[2:].decode(), flush=True)
                if out:
                    out.close()
                return 0
    raise SystemExit("unknown command " + cmd)


if __name__ == "__main__":
    sys.exit(main())
