#!/usr/bin/env python3
"""seeds_service.py: writes the seed corpora of the service's fuzz targets that read a
choice per byte (fuzz_http, fuzz_ws_server; fuzz/fuzz_http.c and fuzz_ws_server.c say how
each byte is read), so that each seed names what it asks for, and the raw-form seeds (HTTP
requests and WebSocket frames as a client writes them). Run from the tree's top:

    python3 fuzz/seeds_service.py

It writes only the files it names (seed-*.bin, and regress-*.bin: requests the service once
got wrong, written by hand); the inputs the fuzzers found (crash-*.bin) sit beside them.
"""
import os
import struct

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(target, name, data, prefix="seed-"):
    d = os.path.join(TOP, "fuzz", "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, prefix + name + ".bin"), "wb") as f:
        f.write(bytes(data))


# ---- fuzz_http --------------------------------------------------------------------------
# structured: 0x01, method, path[, path's choices], nparams, params..., then the headers'
# three choice bytes (auth, cookie, origin/host/upgrade/expect) and, for POST, PUT and PATCH,
# a two-byte body length.
GET, POST, DELETE, PUT, PATCH, HEAD, OPTIONS = 0, 3, 5, 6, 7, 8, 9
P_ROOT, P_STATUS_PAGE, P_STATUS, P_METRICS, P_LOGIN = 0, 2, 3, 4, 5
P_LIVE, P_REPLAY, P_LIST, P_IMPORT = 6, 7, 8, 10
P_ASSET, P_WEB_NAME, P_INFO, P_EXPORT, P_TWO = 11, 12, 13, 14, 15
P_PROFILE = P_EXPORT + 17  # the export's choice on the byte's next turn: /profile
AUTH_NONE, AUTH_BEARER, AUTH_WRONG = 0, 1, 3
COOKIE_NONE, COOKIE_TOKEN = 0, 1
UPGRADE, EXPECT, ORIGIN_OWN, ORIGIN_EVIL = 0x10, 0x20, 0x04, 0x08
K_CAPTURE, K_WIRE, K_FROM, K_FROM_NS, K_TO_NS, K_SPEED, K_FORMAT, K_NAME, K_APPEND, K_TOKEN = range(10)
RAW = 0x55  # every byte of the next four raw where it may be
ESC = 0x00  # every byte of the next four %-escaped


def http(*b):
    return [0x01] + list(b)


def hdr(auth=AUTH_BEARER, cookie=COOKIE_NONE, o=0):
    return [auth, cookie, o]


def enc(mode, n):
    """The choice bytes put_escaped reads for n bytes: one per four."""
    return [mode] * ((n + 3) // 4)


def param(key, val, vlen, mode=RAW):
    return [key, val] + enc(mode, len(KEYS[key])) + enc(mode, vlen)


KEYS = ["capture", "wire", "from", "from_ns", "to_ns", "speed", "format", "name", "append", "token"]

HTTP_SEEDS = {
    "status": http(GET, P_STATUS, 0, *hdr()),
    "status-no-token": http(GET, P_STATUS, 0, *hdr(AUTH_NONE)),
    "status-cookie": http(GET, P_STATUS, 0, *hdr(AUTH_NONE, COOKIE_TOKEN)),
    "index": http(GET, P_ROOT, 0, *hdr()),
    "status-page-no-token": http(GET, P_STATUS_PAGE, 0, *hdr(AUTH_NONE)),
    "metrics": http(HEAD, P_METRICS, 0, *hdr()),
    "asset": http(GET, P_ASSET, 0, *enc(RAW, 6), 0, *hdr()),
    "list": http(GET, P_LIST, 0, *hdr()),
    "info": http(GET, P_INFO, 0, *enc(RAW, 4), 0, *hdr()),
    "info-escaped": http(GET, P_INFO, 1, *enc(ESC, 7), 0, *hdr()),
    "delete": http(DELETE, P_INFO, 0, *enc(RAW, 4), 0, *hdr()),
    "export": http(GET, P_EXPORT, 0, *enc(RAW, 4), 2, *param(K_FORMAT, 1, 7),
                   *param(K_FROM_NS, 1, 1), *hdr()),
    "profile": http(GET, P_PROFILE, 0, *enc(RAW, 4), 2, *param(K_FROM_NS, 1, 1),
                    *param(K_TO_NS, 1, 1), *hdr()),
    "profile-no-token": http(GET, P_PROFILE, 0, *enc(RAW, 4), 0, *hdr(AUTH_NONE)),
    "import": http(POST, P_IMPORT, 1, *param(K_NAME, 0, 4), *hdr(), 100, 0),
    "import-expect": http(POST, P_IMPORT, 2, *param(K_NAME, 0, 4), *param(K_APPEND, 1, 1),
                          *hdr(AUTH_BEARER, COOKIE_NONE, EXPECT), 0x10, 0x02),
    "import-too-big": http(POST, P_IMPORT, 1, *param(K_NAME, 0, 4), *hdr(AUTH_BEARER, 0, EXPECT),
                           0x20, 0x90),
    "put": http(PUT, P_STATUS, 0, *hdr(), 5, 0),
    "login": http(GET, P_LOGIN, 1, *param(K_TOKEN, 0, 25), *hdr(AUTH_NONE)),
    "login-escaped": http(GET, P_LOGIN, 1, *param(K_TOKEN, 0, 25, ESC), *hdr(AUTH_NONE)),
    "login-wrong": http(GET, P_LOGIN, 1, *param(K_TOKEN, 1, 24), *hdr(AUTH_NONE)),
    "live-no-upgrade": http(GET, P_LIVE, 1, *param(K_CAPTURE, 0, 4), *hdr()),
    "live-upgrade": http(GET, P_LIVE, 2, *param(K_CAPTURE, 0, 4), *param(K_WIRE, 2, 6),
                         *hdr(AUTH_BEARER, COOKIE_NONE, UPGRADE | ORIGIN_OWN)),
    "live-upgrade-evil-origin": http(GET, P_LIVE, 1, *param(K_CAPTURE, 0, 4),
                                     *hdr(AUTH_BEARER, COOKIE_NONE, UPGRADE | ORIGIN_EVIL)),
    "replay-upgrade-no-token": http(GET, P_REPLAY, 1, *param(K_CAPTURE, 0, 4),
                                    *hdr(AUTH_NONE, COOKIE_NONE, UPGRADE)),
    "upgrade-elsewhere": http(GET, P_STATUS, 0, *hdr(AUTH_BEARER, COOKIE_NONE, UPGRADE)),
    "replay-params": http(GET, P_REPLAY, 0x36, *param(K_CAPTURE, 1, 7), *param(K_SPEED, 2, 3),
                          *param(K_TO_NS, 2, 20), *param(K_FROM_NS, 0, 1), *param(K_WIRE, 0, 4),
                          *hdr()),
    "unknown-method-path": http(OPTIONS, 16, 3, 3, 0x41, 0x42, 0x43, RAW, 0, *hdr()),
}

# Requests that the service once answered for something else than they mean (docs/
# RELIABILITY.md, the service's inputs): written by hand, each fails on the code before its fix.
REGRESS_HTTP = {
    "escaped-amp-split-a-value": http(GET, P_EXPORT, 0, *enc(RAW, 4), 1, K_FORMAT, 7, 16,
                                      *b"bundle&from_ns=1", *enc(RAW, 6), *enc(RAW, 16),
                                      *hdr()),
    "percent-decoded-twice": http(GET, P_INFO, 3, 4, *b"a%41", *enc(RAW, 4), 0, *hdr()),
    "amp-in-path-cut-it": http(GET, P_INFO, 3, 3, *b"a&b", *enc(RAW, 3), 0, *hdr()),
}

RAW_HTTP = {
    "raw-get": b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "raw-pipelined": b"GET /api/status HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n",
    "raw-http10": b"GET / HTTP/1.0\r\n\r\n",
    "raw-garbage": b"\x00\xff GET\r\n\r\n",
    "raw-bad-escape": b"GET /api/live?capture=a%G1 HTTP/1.1\r\n\r\n",
    "raw-nul": b"GET /api/captures/a%00b HTTP/1.1\r\n\r\n",
    "raw-long-header": b"GET / HTTP/1.1\r\nX-A: " + b"a" * 3000 + b"\r\n\r\n",
    "raw-post-short-body": b"POST /api/captures/import?name=x HTTP/1.1\r\nAuthorization: Bearer "
                           b"fuzz+Token/0123456789abc=\r\nContent-Length: 4000\r\n\r\nTV",
    "raw-chunked": b"POST /api/captures/import?name=x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                   b"\r\n5\r\nhello\r\n0\r\n\r\n",
    "raw-upgrade-frames": b"GET /api/live?capture=x HTTP/1.1\r\nAuthorization: Bearer "
                          b"fuzz+Token/0123456789abc=\r\nUpgrade: websocket\r\nConnection: Upgrade"
                          b"\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-"
                          b"Version: 13\r\n\r\n\x89\x80abcd",
    "raw-dotdot": b"GET /web/../../etc/passwd HTTP/1.1\r\n\r\n",
}


# ---- fuzz_ws_server ----------------------------------------------------------------------
# byte 0: endpoint (bits 0-1), framed (bit 2); then frames of (c1, c2, c3[, c4], key[4],
# payload): c1 & 15 picks the opcode (0 text, 1 binary, 2 continuation, 3 close, 4 ping,
# 5 pong, 12 op 3, 14 op 0xB), (c1 & 0x30) == 0x30 clears FIN; c2 & 0xc0 == 0xc0 unmasks,
# (c2 >> 4) & 3 is the length's form (2: 16 bits, 3: 64 bits), c2 & 15 of 13-15 sets an RSV
# bit and 12 declares more than is sent; c3 is the length.
O_TEXT, O_BIN, O_CONT, O_CLOSE, O_PING, O_PONG, O_BAD3, O_BADB = 0, 1, 2, 3, 4, 5, 12, 14
NOFIN = 0x30
KEY = [0x11, 0x22, 0x33, 0x44]


def fr(op, payload=b"", c2=0):
    return [op, c2, len(payload)] + KEY + list(payload)


def ws(endpoint, *frames):
    out = [4 | endpoint]
    for f in frames:
        out += f
    return out


WS_SEEDS = {
    "ping": ws(0, fr(O_PING, b"hello")),
    "ping-empty": ws(0, fr(O_PING)),
    "ping-125": ws(0, fr(O_PING, bytes(range(125)))),
    "ping-126": ws(0, fr(O_PING, bytes(126))),
    "ping-16bit-form": ws(0, fr(O_PING, b"x", 0x20)),
    "ping-fragmented": ws(0, fr(O_PING | NOFIN, b"x")),
    "pings-burst": ws(0, fr(O_PING, b"a"), fr(O_PING, b"b"), fr(O_PING, b"c")),
    "pong": ws(0, fr(O_PONG, b"unasked")),
    "text": ws(0, fr(O_TEXT, b'{"type":"subscribe"}')),
    "binary": ws(0, fr(O_BIN, b"\x00\x01\x02")),
    "fragmented-with-ping": ws(0, fr(O_TEXT | NOFIN, b"ab"), fr(O_PING, b"p"), fr(O_CONT, b"cd")),
    "continuation-alone": ws(0, fr(O_CONT, b"x")),
    "message-inside-message": ws(0, fr(O_BIN | NOFIN, b"a"), fr(O_TEXT, b"b")),
    "close": ws(0, fr(O_CLOSE, b"\x03\xe8bye")),
    "close-empty": ws(0, fr(O_CLOSE)),
    "close-one-byte": ws(0, fr(O_CLOSE, b"\x03")),
    "close-code-5000": ws(0, fr(O_CLOSE, b"\x13\x88")),
    "close-code-1005": ws(0, fr(O_CLOSE, b"\x03\xed")),
    "close-bad-utf8": ws(0, fr(O_CLOSE, b"\x03\xe8\xc0\xaf")),
    "close-then-ping": ws(0, fr(O_CLOSE, b"\x03\xe8"), fr(O_PING, b"late")),
    "reserved-opcode": ws(0, fr(O_BAD3, b"x")),
    "reserved-control-opcode": ws(0, fr(O_BADB)),
    "rsv-bit": ws(0, fr(O_TEXT, b"x", 0x0f)),
    "unmasked-ping": ws(0, fr(O_PING, b"bare", 0xc0)),
    "declared-more": ws(0, fr(O_BIN, b"ab", 0x0c)),
    "declared-2-62": ws(0, [O_BIN, 0x0c, 0x01] + KEY + [0x61]),
    "declared-bit-63": ws(0, [O_BIN, 0x0c, 0x81] + KEY + [0x61]),
    "big-binary": ws(0, [0xc0 | O_BIN, 0x00, 0xff, 0xff] + KEY + [0x42] * 64),
    "from-start-ping": ws(1, fr(O_PING, b"s")),
    "replay-ping": ws(2, fr(O_PING, b"r")),
    "bad-parameter-close": ws(3, fr(O_CLOSE, b"\x03\xe8")),
}

RAW_WS = {
    "raw-masked-ping": bytes([0]) + b"\x89\x81abcd" + bytes([ord("x") ^ ord("a")]),
    "raw-garbage": bytes([0]) + b"\xff\xff\xff\xff",
    "raw-replay": bytes([2]) + b"\x88\x80abcd",
}


def main():
    for name, b in HTTP_SEEDS.items():
        write("fuzz_http", name, b)
    for name, b in REGRESS_HTTP.items():
        write("fuzz_http", name, b, "regress-")
    for name, b in RAW_HTTP.items():
        write("fuzz_http", name, b"\x00" + b)
    for name, b in WS_SEEDS.items():
        write("fuzz_ws_server", name, b)
    for name, b in RAW_WS.items():
        write("fuzz_ws_server", name, b)


if __name__ == "__main__":
    main()
