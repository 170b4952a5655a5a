/*
 * fuzz_http_parse.c: libFuzzer target for what the service reads off a socket before it
 * routes anything (src/net/http.c): a request head scanned as its bytes come, a client's
 * WebSocket frame header, a close's body, and the Host guard (src/net/api.c).
 *
 * The first byte says where the input is cut into pieces (its bits, one piece boundary per
 * set bit at byte i * 37 of the rest); the rest is the bytes. Oracles: the scan gives the
 * same answer — the same head length, method, target and header values, or the same
 * refusal — whether the bytes come whole or in pieces; a head it takes ends with its empty
 * line and every pointer it gives lies inside it; a refusal has a status and code the API
 * documents and a message; with 16 KiB or more it never asks for more bytes. A frame header
 * is at most 14 bytes and within the input, a control frame's payload at most 125 bytes and
 * its length in the 7-bit form, and the client's mask bit is set; a server frame header
 * for the same length parses back (masked) to it.
 */
#include "fuzz_check.h"

#include <stdint.h>
#include <string.h>

#include "net/api.h"
#include "net/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int refusal_ok(const struct trove__http_fail *f)
{
    static const unsigned statuses[] = {400, 405, 413, 501, 505};
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        if (f->status == statuses[i])
            return f->code && f->msg[0];
    return 0;
}

static void check_head(const uint8_t *buf, size_t len, int r, const struct trove__http_head *h)
{
    if (r <= 0)
        return;
    CHECK((size_t)r <= len && h->head_len == (size_t)r && buf[r - 1] == '\n');
    CHECK(h->target >= (const char *)buf && h->target + h->target_len <= (const char *)buf + r);
    CHECK(h->target_len > 0 && h->target[0] == '/');
    CHECK(h->route_method >= TROVE__GET && h->route_method <= TROVE__DELETE);
    for (int i = 0; i < TROVE__H_COUNT; i++)
        if (h->f[i].v)
            CHECK(h->f[i].v >= (const char *)buf &&
                  h->f[i].v + h->f[i].n <= (const char *)buf + r);
}

static void scan(const uint8_t *buf, size_t len, unsigned cuts)
{
    struct trove__http_head whole, piecewise;
    struct trove__http_fail f1, f2;
    struct trove__http_scan s;
    int r1, r2 = 0;
    size_t at = 0;

    memset(&s, 0, sizeof s);
    memset(&f1, 0, sizeof f1);
    memset(&f2, 0, sizeof f2);
    r1 = trove__http_scan(&s, buf, len, &whole, &f1);
    check_head(buf, len, r1, &whole);
    if (r1 < 0)
        CHECK(refusal_ok(&f1));
    if (len >= TROVE__HTTP_HEAD_MAX)
        CHECK(r1 != 0);
    /* in pieces: stop at the first answer that is not "more" */
    memset(&s, 0, sizeof s);
    for (int k = 0; k <= 8 && r2 == 0; k++) {
        size_t next = k < 8 && (cuts >> k & 1) ? (size_t)(k + 1) * 37 : len;
        if (next > len)
            next = len;
        if (next < at)
            continue;
        at = next;
        r2 = trove__http_scan(&s, buf, at, &piecewise, &f2);
        if (at == len)
            break;
    }
    /* A head that came whole in an early piece is the same head; a refusal the same. */
    if (r1 > 0) {
        CHECK(r2 == r1);
        CHECK(!strcmp(whole.method, piecewise.method) && whole.target == piecewise.target &&
              whole.target_len == piecewise.target_len && whole.minor == piecewise.minor);
        for (int i = 0; i < TROVE__H_COUNT; i++)
            CHECK(whole.f[i].v == piecewise.f[i].v && whole.f[i].n == piecewise.f[i].n);
    } else if (r1 < 0) {
        CHECK(r2 < 0 || (r2 == 0 && at < len));
        if (r2 < 0)
            CHECK(f2.status == f1.status);
    } else {
        CHECK(r2 == 0);
    }
}

static void frame(const uint8_t *buf, size_t len)
{
    struct trove__ws_frame f, g;
    uint8_t h[14];
    int r = trove__ws_parse(buf, len, &f);
    size_t n;

    CHECK(r == 0 || r == -1002 || (r >= 6 && r <= 14 && (size_t)r <= len));
    if (r <= 0)
        return;
    CHECK((buf[1] & 0x80) && (buf[0] & 0x70) == 0 && f.head == (size_t)r);
    if (f.opcode >= 8)
        CHECK(f.fin && f.len <= TROVE__WS_CONTROL_MAX && r == 6);
    /* our header for that length, masked as a client would, parses back */
    n = trove__ws_head(h, f.opcode, f.len);
    CHECK(n == 2 || n == 4 || n == 10);
    h[1] |= 0x80;
    memcpy(h + n, f.mask, 4);
    CHECK(trove__ws_parse(h, n + 4, &g) == (int)(n + 4) && g.len == f.len &&
          g.opcode == f.opcode && g.fin);
    if (f.opcode >= 8 && len >= (size_t)r + f.len)
        (void)trove__ws_close_ok(buf + r, (size_t)f.len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove__api_hosts hosts;

    if (size < 1)
        return 0;
    scan(data + 1, size - 1, data[0]);
    frame(data + 1, size - 1);
    memset(&hosts, 0, sizeof hosts);
    memcpy(hosts.listen, "127.0.0.1", 10);
    hosts.port = 7700;
    if (trove__api_host_ok((const char *)data + 1, size - 1, &hosts))
        CHECK(size - 1 >= 9);
    return 0;
}
