/*
 * fuzz_ws_server.c: libFuzzer target for the service's reading of what a viewer sends on
 * its WebSocket (RFC 6455), as it runs (fuzz_service.h: the service on a thread, one TCP
 * connection per input): the frames parsed by src/net/http.c (trove__ws_parse) and
 * src/net/web_view.c, the pings it answers, the closes it checks (trove__ws_close_ok) and the
 * messages it ignores (a viewer has nothing to say), on the two WebSocket endpoints.
 *
 * The first byte chooses the endpoint (bits 0-1: /api/live?capture=fuzz, the same with
 * from=start, /api/replay?capture=fuzz, which has nothing stored and ends with an error,
 * or /api/live with a bad parameter, which is told and closed), the form (bit 2) and when
 * the frames go (bit 3). Raw: the rest of the input is sent as it is, then the sending side
 * is shut. Framed: the rest is a list of frames, each a header byte's opcode (mostly valid
 * ones), FIN and RSV bits, masked or not, its length in the shortest form or a longer one or
 * a declared length over what is sent (up to 2^63 - 1, or with bit 63 set), a mask key and a
 * payload. The frames follow the 101, as RFC 6455 4.1 asks of a client, or (bit 3) go with
 * the request itself, which the service reads as frames all the same.
 *
 * Oracles: the upgrade gets 101 and the Sec-WebSocket-Accept of its key; every frame the
 * service sends is well formed — unmasked, no RSV bit, a known opcode, a control frame whole
 * (FIN) and at most 125 bytes, a close whose body is empty or a code a peer may send (7.4)
 * and a UTF-8 reason — and nothing follows its close; a text message is a JSON object with a
 * "type"; the connection ends within 10 s of our side's shutdown. Against a model of the RFC
 * run over the frames sent: each pong carries the payload of a ping sent before it, in order
 * (a ping may go unanswered); a protocol error (an unmasked frame, a fragmented or over-long
 * control frame, an RSV bit, a reserved opcode, a continuation with no message begun, a new
 * message in the middle of one, bit 63 of a length) is answered by a close with 1002 or a
 * dropped connection, and no pong for a ping after it; a close is answered by a close with
 * its own code, or 1002 when its body is not one a peer may send (one byte, a code of none of
 * 7.4's ranges, a reason that is not UTF-8), unless more frames follow it (which a client
 * must not send, and which may end the connection first), and no pong after it; on the live
 * endpoints an input with neither leaves the connection open, and a last ping is answered. A
 * viewer's text and binary messages are ignored by the service, so their UTF-8 is not looked
 * at. A declared length costs no allocation of that size (libFuzzer's -malloc_limit_mb).
 */
#include "fuzz_service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY64 "dGhlIHNhbXBsZSBub25jZQ==" /* RFC 6455's example key, and its answer: */
#define ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
#define MAX_FRAMES 32
#define MAX_PAYLOADS (96u << 10) /* payload bytes of an input's frames, in all */
#define MAX_PINGS (MAX_FRAMES + 64)
#define MARKER "trove-fuzz-last-ping"

/* ---- the input, read as choices ---------------------------------------------------------- */

struct rd {
    const uint8_t *p;
    size_t n;
};

static unsigned u8(struct rd *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

/* ---- what the service sends back --------------------------------------------------------- */

struct seen {
    size_t head;           /* bytes of the 101 response, 0 until it is whole */
    size_t at;             /* frames parsed up to here */
    int closed;            /* a close came */
    uint8_t close_body[125];
    size_t close_len;
    uint8_t pong[MAX_PINGS][125];
    size_t pong_len[MAX_PINGS], npong;
    int marker;            /* the last ping's pong came */
    size_t texts;
    int bad_close;         /* the close's body is not one a peer may send */
};

static const uint8_t *find(const uint8_t *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(p + i, s, k))
            return p + i;
    return NULL;
}

/* Strict UTF-8 (RFC 3629: no overlong form, no surrogate, at most U+10FFFF). */
static int utf8_ok(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], need, min, cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            need = 1, min = 0x80, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            need = 2, min = 0x800, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            need = 3, min = 0x10000, cp = c & 0x07;
        else
            return 0;
        if (n - i <= need)
            return 0;
        for (unsigned k = 1; k <= need; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += need + 1;
    }
    return 1;
}

/* A close body a peer may send (RFC 6455 5.5.1, 7.4): empty, or a code of 1000-1003,
 * 1007-1011, 3000-4999 and a UTF-8 reason. */
static int close_body_ok(const uint8_t *b, size_t n)
{
    unsigned code;
    if (n == 0)
        return 1;
    if (n == 1)
        return 0;
    code = (unsigned)b[0] << 8 | b[1];
    return ((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
            (code >= 3000 && code <= 4999)) &&
           utf8_ok(b + 2, n - 2);
}

/* Parse what came so far: the head, then whole frames, each checked as it is read. */
static void parse(const struct trove_bytes *in, struct seen *s)
{
    const uint8_t *p = in->ptr;
    size_t n = in->len;

    if (!s->head) {
        const uint8_t *end = find(p, n, "\r\n\r\n");
        if (!end)
            return;
        s->head = (size_t)(end - p) + 4;
        if (n < 12 || memcmp(p, "HTTP/1.1 101 ", 13) != 0 ||
            !find(p, s->head, "Sec-WebSocket-Accept: " ACCEPT "\r\n")) {
            fprintf(stderr, "not the upgrade: %.*s\n", (int)(s->head < 400 ? s->head : 400), p);
            abort();
        }
        s->at = s->head;
    }
    while (s->at + 2 <= n) {
        const uint8_t *f = p + s->at;
        size_t avail = n - s->at, hl = 2;
        uint64_t len = f[1] & 0x7f;
        unsigned op = f[0] & 0x0f;
        CHECK(!s->closed);            /* nothing after the service's close */
        CHECK((f[0] & 0x70) == 0);    /* no RSV bit */
        CHECK((f[1] & 0x80) == 0);    /* a server never masks */
        CHECK(op == 1 || op == 2 || op == 8 || op == 9 || op == 10);
        if (len == 126) {
            if (avail < 4)
                return;
            len = (uint64_t)f[2] << 8 | f[3];
            hl = 4;
        } else if (len == 127) {
            if (avail < 10)
                return;
            len = 0;
            for (int i = 0; i < 8; i++)
                len = len << 8 | f[2 + i];
            hl = 10;
        }
        if (op & 8)
            CHECK((f[0] & 0x80) && hl == 2 && len <= 125); /* whole, short */
        if (avail - hl < len)
            return;
        if (op == 8) {
            s->bad_close = !close_body_ok(f + hl, (size_t)len); /* see own_bytes */
            s->closed = 1;
            memcpy(s->close_body, f + hl, (size_t)len);
            s->close_len = (size_t)len;
        } else if (op == 10) {
            CHECK(s->npong < MAX_PINGS);
            memcpy(s->pong[s->npong], f + hl, (size_t)len);
            s->pong_len[s->npong++] = (size_t)len;
            if (len == sizeof MARKER - 1 && !memcmp(f + hl, MARKER, len))
                s->marker = 1;
        } else if (op == 1) {
            CHECK((f[0] & 0x80) && len >= 9 && !memcmp(f + hl, "{\"type\":\"", 9));
            s->texts++;
        }
        s->at += hl + (size_t)len;
    }
}

static int head_done(const struct trove_bytes *in, void *ctx)
{
    struct seen *s = ctx;
    parse(in, s);
    return s->head > 0;
}

struct wait {
    struct seen *s;
    size_t npong; /* pongs when the wait began */
    int for_marker;
};

static int wait_done(const struct trove_bytes *in, void *ctx)
{
    struct wait *w = ctx;
    parse(in, w->s);
    if (w->s->closed)
        return 1;
    return w->for_marker && (w->s->marker || w->s->npong > w->npong);
}

/* ---- the frames, and the model ---------------------------------------------------------- */

struct model {
    uint8_t ping[MAX_PINGS][125];
    size_t ping_len[MAX_PINGS], nping; /* the pings the service may answer, in order */
    int error;      /* a protocol error was sent */
    int close;      /* a close was sent: */
    int close_bad;  /* one a peer may not send */
    unsigned close_code; /* its code (0: none) */
    int after_close; /* frames were sent after it (a client's error: the answer may be lost) */
    int stuck;      /* a frame declared more than was sent: the service waits for it */
    int open;       /* a message is under way (its FIN not yet sent) */
};

static void put(struct trove_bytes *w, const void *p, size_t n)
{
    CHECK(trove_bytes_append(w, p, n) == TROVE_OK);
}

/* One frame as given; payload[0..n) unmasked. */
static void frame(struct trove_bytes *w, unsigned b0, int masked, int form, uint64_t declared,
                  const uint8_t key[4], const uint8_t *payload, size_t n)
{
    uint8_t h[14];
    size_t hl = 2;

    h[0] = (uint8_t)b0;
    if (form == 0 && declared < 126) {
        h[1] = (uint8_t)declared;
    } else if (form <= 1 && declared < 65536) {
        h[1] = 126;
        h[2] = (uint8_t)(declared >> 8);
        h[3] = (uint8_t)declared;
        hl = 4;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (uint8_t)(declared >> (56 - 8 * i));
        hl = 10;
    }
    if (masked) {
        h[1] |= 0x80;
        memcpy(h + hl, key, 4);
        hl += 4;
    }
    put(w, h, hl);
    CHECK(trove_bytes_reserve(w, n) == TROVE_OK);
    memcpy(w->ptr + w->len, payload, n);
    if (masked) /* four bytes a step: the loops of this file are its hot spots */
        for (size_t i = 0; i < n; i += 4)
            for (size_t j = 0; j < 4 && i + j < n; j++)
                w->ptr[w->len + i + j] ^= key[j];
    w->len += n;
}

/* The frames the input describes into w, and what the RFC says of them into *m. */
static void frames(struct rd *r, struct trove_bytes *w, struct model *m)
{
    static const uint8_t ops[16] = {0x1, 0x2, 0x0, 0x8, 0x9, 0xA, 0x9, 0xA,
                                    0x1, 0x2, 0x0, 0x9, 0x3, 0x7, 0xB, 0xF};
    static uint8_t payload[70000], count[70000];
    size_t budget = MAX_PAYLOADS;

    if (!count[1])
        for (size_t i = 0; i < sizeof count; i++)
            count[i] = (uint8_t)i;

    for (int k = 0; k < MAX_FRAMES && r->n > 0 && !m->stuck; k++) {
        unsigned c1 = u8(r), c2 = u8(r), c3 = u8(r), op = ops[c1 & 15];
        int fin = (c1 & 0x30) != 0x30, masked = (c2 & 0xc0) != 0xc0, form = (c2 >> 4) & 3;
        unsigned rsv = (c2 & 15) == 15 ? 0x40 : (c2 & 15) == 14 ? 0x20 : (c2 & 15) == 13 ? 0x10 : 0;
        int lie = (c2 & 15) == 12;
        uint64_t declared;
        uint8_t key[4];
        size_t n = c3;
        int bad = 0;

        if ((c1 & 0xc0) == 0xc0 && !(op & 8))
            n = (size_t)c3 << 8 | u8(r); /* up to 64 KiB */
        if ((c1 & 0xc0) == 0x80 && !(op & 8))
            n += 65536 - 256; /* past 16 bits */
        if (n > sizeof payload)
            n = sizeof payload;
        if (n > budget)
            n = budget;
        budget -= n;
        for (int i = 0; i < 4; i++)
            key[i] = (uint8_t)u8(r);
        { /* the input's bytes, then a count */
            size_t from = n < r->n ? n : r->n;
            memcpy(payload, r->p, from);
            memcpy(payload + from, count + from, n - from);
            r->p += from;
            r->n -= from;
        }
        form = form >= 2 ? form - 1 : 0; /* 0 shortest, 1 16 bits, 2 64 bits */
        declared = n;
        if (lie) { /* more than is sent: up to 2^63 - 1, or bit 63 set */
            declared = c3 & 1 ? (uint64_t)1 << (62 + (c3 >> 7)) | n : n + 1 + c3;
            form = declared < 65536 ? (form ? form : 1) : 2;
        }
        frame(w, (fin ? 0x80 : 0) | rsv | op, masked, form, declared, key, payload, n);
        if (m->close)
            m->after_close = 1;
        if (m->error || m->close)
            continue; /* nothing after those is looked at */
        if (!masked)
            bad = 1;
        bad = bad || rsv || (op >= 3 && op <= 7) || op >= 0xB;
        bad = bad || ((op & 8) && (!fin || form != 0 || declared > 125));
        bad = bad || (op == 0 && !m->open) || ((op == 1 || op == 2) && m->open);
        bad = bad || declared >> 63;
        if (bad) {
            m->error = 1;
            continue;
        }
        if (lie) {
            m->stuck = 1;
            continue;
        }
        if (!(op & 8))
            m->open = !fin;
        if (op == 9) {
            memcpy(m->ping[m->nping], payload, n);
            m->ping_len[m->nping++] = n;
        } else if (op == 8) {
            m->close = 1;
            m->close_bad = !close_body_ok(payload, n);
            m->close_code = n >= 2 ? (unsigned)payload[0] << 8 | payload[1] : 0;
        }
    }
}

/* Each pong is the payload of a model's ping, in order (some pings unanswered). */
static void check_pongs(const struct seen *s, const struct model *m, size_t npings)
{
    size_t j = 0;
    for (size_t i = 0; i < s->npong; i++) {
        while (j < npings &&
               (m->ping_len[j] != s->pong_len[i] || memcmp(m->ping[j], s->pong[i], s->pong_len[i])))
            j++;
        if (j == npings) {
            fprintf(stderr, "pong %zu (%zu bytes) answers no ping sent before it\n", i,
                    s->pong_len[i]);
            abort();
        }
        j++;
    }
}

static const char *const paths[] = {"/api/live?capture=fuzz", "/api/live?capture=fuzz&from=start",
                                    "/api/replay?capture=fuzz",
                                    "/api/live?capture=fuzz&wire=zstd"};

static void head(struct trove_bytes *w, const char *path)
{
    char h[512];
    int n = snprintf(h, sizeof h,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " FUZZ_TOKEN
                     "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " KEY64
                     "\r\nSec-WebSocket-Version: 13\r\n\r\n",
                     path);
    put(w, h, (size_t)n);
}

/* An unmasked ping is a protocol error, never answered (RFC 6455 5.1). Once per process. */
static void probe(void)
{
    static int done;
    static const uint8_t key[4] = {0};
    struct trove_bytes w = {0}, in = {0};
    struct seen s;
    struct wait wt;
    int fd;

    if (done)
        return;
    done = 1;
    memset(&s, 0, sizeof s);
    fd = fuzz_connect();
    head(&w, paths[0]);
    CHECK(fuzz_io(fd, w.ptr, w.len, 0, &in, head_done, &s, FUZZ_IO_TIMEOUT_MS) == FUZZ_IO_DONE);
    w.len = 0;
    frame(&w, 0x89, 0, 0, sizeof MARKER - 1, key, (const uint8_t *)MARKER, sizeof MARKER - 1);
    wt.s = &s;
    wt.npong = 0;
    wt.for_marker = 1;
    fuzz_io(fd, w.ptr, w.len, 0, &in, wait_done, &wt, 2000);
    fuzz_close(fd);
    if (s.marker) {
        fprintf(stderr, "fuzz_ws_server: the service answers an unmasked ping (RFC 6455 5.1 "
                        "says close)\n");
        abort();
    }
    trove_bytes_free(&w);
    trove_bytes_free(&in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t key[4] = {1, 2, 3, 4};
    static struct trove_bytes w, in; /* kept from one input to the next: no page faults */
    struct rd r = {data + 1, size > 0 ? size - 1 : 0};
    struct model m;
    struct seen s;
    struct wait wt;
    int fd, io, endpoint, framed, lives, eager;

    if (size < 1)
        return 0;
    fuzz_service_port();
    probe();
    w.len = in.len = 0;
    endpoint = data[0] & 3;
    framed = (data[0] & 4) != 0;
    eager = (data[0] & 8) != 0;
    lives = endpoint < 2; /* the others close on their own */
    memset(&m, 0, sizeof m);
    memset(&s, 0, sizeof s);
    wt.s = &s;
    wt.npong = 0;
    wt.for_marker = 0;
    fd = fuzz_connect();
    head(&w, paths[endpoint]);
    if (!eager) { /* as RFC 6455 4.1 asks: the 101 first, then the frames */
        io = fuzz_io(fd, w.ptr, w.len, 0, &in, head_done, &s, FUZZ_IO_TIMEOUT_MS);
        CHECK(io == FUZZ_IO_DONE && s.head > 0);
        w.len = 0;
    }
    if (framed)
        frames(&r, &w, &m);
    else
        put(&w, data + 1, size - 1);
    if (framed && lives && !m.error && !m.close && !m.stuck) {
        /* It stays open, nothing pending: a last ping is answered. One that comes while an
         * earlier pong is pending may be dropped: it is sent again after each pong. */
        for (int tries = 0; !s.marker; tries++) {
            CHECK(tries < 64 && m.nping < MAX_PINGS);
            frame(&w, 0x89, 1, 0, sizeof MARKER - 1, key, (const uint8_t *)MARKER,
                  sizeof MARKER - 1);
            memcpy(m.ping[m.nping], MARKER, sizeof MARKER - 1);
            m.ping_len[m.nping++] = sizeof MARKER - 1;
            wt.npong = s.npong;
            wt.for_marker = 1;
                io = fuzz_io(fd, w.ptr, w.len, 0, &in, wait_done, &wt, FUZZ_IO_TIMEOUT_MS);
            w.len = 0;
            if (io != FUZZ_IO_DONE || s.closed) {
                fprintf(stderr, "the connection should stay open and answer a ping: %s\n",
                        io == FUZZ_IO_TIMEOUT ? "no answer" : "it was closed");
                abort();
            }
        }
    } else {
        /* Refused, closed, stuck or past what the model follows: the service closes (a
         * refusal or a close by a close frame or a dropped connection; the rest once our
         * side is shut). */
        int half = !framed || !lives || m.stuck || (!m.error && !m.close);
        io = fuzz_io(fd, w.ptr, w.len, half, &in, wait_done, &wt, FUZZ_IO_TIMEOUT_MS);
        if (io == FUZZ_IO_TIMEOUT) {
            fprintf(stderr, "the service neither closed nor said why in %d ms\n",
                    FUZZ_IO_TIMEOUT_MS);
            abort();
        }
        parse(&in, &s);
        CHECK(s.head > 0);
        if (framed && lives && m.error && s.closed)
            CHECK(s.close_len >= 2 && s.close_body[0] == 0x03 && s.close_body[1] == 0xea);
        if (framed && lives && m.close && !m.error && !m.after_close) {
            unsigned code = s.close_len >= 2 ? (unsigned)s.close_body[0] << 8 | s.close_body[1] : 0;
            CHECK(s.closed); /* answered, */
            CHECK(code == (m.close_bad ? 1002 : m.close_code)); /* 1002 or its own code */
        }
    }
    fuzz_close(fd);
    parse(&in, &s);
    if (s.bad_close) {
        fprintf(stderr, "the service's close has a body (%zu bytes) no peer may send\n",
                s.close_len);
        abort();
    }
    if (framed)
        check_pongs(&s, &m, m.nping);
    return 0;
}
