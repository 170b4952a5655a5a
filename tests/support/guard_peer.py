#!/usr/bin/env python3
"""guard_peer.py: the hostile and the slow clients of tests/cli/cli_guard.sh and
bench/guard_bench.sh, on loopback.

  flood PORT SECONDS IDLE CONNECTS OUT [RECONNECT]
      hold IDLE connections that send nothing and CONNECTS that send "CONNECT x:1
      HTTP/1.1" and nothing more, for SECONDS, opening a new one whenever the service
      closes one (unless RECONNECT is 0); half come from 127.0.0.1, half from other 127/8
      addresses. Writes a JSON summary to OUT: connections opened, closed by the service,
      and the statuses seen.
  stall PORT N PATH WS SECONDS OUT
      open N requests of PATH (WebSocket upgrades when WS is 1) that never read what comes
      back (a 4 KiB receive buffer), read each one's status line, hold them SECONDS, then
      close them; writes {"statuses": {...}} to OUT
  slow PORT PATH RATE OUT
      GET PATH and read the answer at RATE bytes a second; writes the body (chunked
      framing taken off) to OUT and prints the status
  req PORT RAW
      send RAW (Python escapes: \\r\\n) on a fresh connection, print the status line of the
      answer, or "closed" when the service ends the connection with none
"""
import json
import selectors
import socket
import sys
import time


def src_addr(i):
    if i % 2 == 0:
        return "127.0.0.1"
    k = i // 2
    return "127.%d.%d.1" % (1 + (k // 250) % 250, 1 + k % 250)


def connect(port, i):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.bind((src_addr(i), 0))
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s


def flood(port, seconds, idle, connects, out, reconnect=True):
    sel = selectors.DefaultSelector()
    opened = closed = 0
    statuses = {}
    n = 0

    def add(kind):
        nonlocal opened, n
        s = connect(port, n)
        n += 1
        opened += 1
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, [kind, False, b""])

    for _ in range(idle):
        add("idle")
    for _ in range(connects):
        add("connect")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for key, ev in sel.select(timeout=0.1):
            s, data = key.fileobj, key.data
            if ev & selectors.EVENT_WRITE:
                if data[0] == "connect" and not data[1]:
                    try:
                        s.send(b"CONNECT x:1 HTTP/1.1\r\n")
                    except OSError:
                        pass
                data[1] = True
                sel.modify(s, selectors.EVENT_READ, data)
                continue
            try:
                got = s.recv(4096)
            except OSError:
                got = b""
            if got:
                data[2] += got
                continue
            head = data[2].split(b"\r\n", 1)[0]
            st = head.split(b" ")[1].decode() if head.startswith(b"HTTP/1.1 ") else "none"
            statuses[st] = statuses.get(st, 0) + 1
            sel.unregister(s)
            s.close()
            closed += 1
            if reconnect and time.monotonic() < end:
                add(data[0])
    held = len(sel.get_map())
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    with open(out, "w") as f:
        json.dump({"opened": opened, "closed_by_service": closed, "held_at_end": held,
                   "statuses": statuses}, f)


def status_of(s):
    s.settimeout(20)
    head = b""
    try:
        while b"\r\n" not in head and len(head) < 64:
            b = s.recv(64 - len(head))
            if not b:
                break
            head += b
    except OSError:
        pass
    line = head.split(b"\r\n", 1)[0]
    return line.split(b" ")[1].decode() if line.startswith(b"HTTP/1.1 ") else "none"


def stall(port, n, path, ws, seconds, out):
    socks, statuses = [], {}
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind((src_addr(i), 0))
        s.connect(("127.0.0.1", port))
        req = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        if ws:
            req += ("Upgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n")
        s.sendall((req + "\r\n").encode())
        socks.append(s)
    for s in socks:
        st = status_of(s)
        statuses[st] = statuses.get(st, 0) + 1
    with open(out, "w") as f:
        json.dump({"statuses": statuses}, f)
    time.sleep(seconds)
    for s in socks:
        s.close()


def slow(port, path, rate, out):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    data = b""
    t0 = time.monotonic()
    step = max(1, rate // 10)
    while True:
        b = s.recv(step)
        if not b:
            break
        data += b
        due = t0 + len(data) / rate
        if due > time.monotonic():
            time.sleep(due - time.monotonic())
    head, _, body = data.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split(b" ")[1].decode()
    if b"transfer-encoding: chunked" in head.lower():
        plain, rest = b"", body
        while True:
            size, _, rest = rest.partition(b"\r\n")
            k = int(size, 16)
            if k == 0:
                break
            plain += rest[:k]
            rest = rest[k + 2:]
        body = plain
    with open(out, "wb") as f:
        f.write(body)
    print(status)


def req(port, raw):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(raw.encode().decode("unicode_escape").encode("latin-1"))
    print(status_of(s).replace("none", "closed"))


def main():
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "flood":
        flood(int(a[0]), float(a[1]), int(a[2]), int(a[3]), a[4], len(a) < 6 or a[5] != "0")
    elif cmd == "stall":
        stall(int(a[0]), int(a[1]), a[2], a[3] == "1", float(a[4]), a[5])
    elif cmd == "slow":
        slow(int(a[0]), a[1], int(a[2]), a[3])
    elif cmd == "req":
        req(int(a[0]), a[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
