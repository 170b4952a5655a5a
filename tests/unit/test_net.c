/*
 * test_net.c: the service's pieces that need no socket (src/net/) — a producer's stream cut
 * into its hello and whole frames however it is split across reads (every split point of a
 * real stream, one byte at a time, and random pieces), the frames exactly the bytes sent;
 * oversized hellos, bad frame headers and lengths refused before anything is buffered for
 * them, with the stream offset; the hello's fields, types, limits and capture names; and the
 * fan-out: each batch encoded once per format in use, every viewer decoding exactly the
 * events published, a late viewer given the names first, a stalled viewer dropping only
 * its own oldest event frames (never names) with a gap report that accounts for every
 * event, and a publisher racing two draining threads (run under TSan too); and the names
 * of two producers in one capture mapped by name (shared names one id, their own ids never
 * meeting, a rename taking effect for later events only), with what the capture's names
 * take in its names object counted exactly enough to refuse a frame before the object would
 * pass its limit. And the service's answer lines: written within their 1 KiB whatever the
 * reason holds, read back by trove_serve_answer_parse (and by the client's own scan), bad
 * ones refused.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_internal.h"
#include "client/client_wire.h"
#include "net/api.h"
#include "net/assets.h"
#include "net/fanout.h"
#include "net/live.h"
#include "net/producer.h"
#include "net/remap.h"
#include "trove/event.h"
#include "trove/summary.h"
#include "trove/wire.h"

#include <pthread.h>

struct got {
    struct trove_bytes hello;
    struct trove_bytes frames; /* every frame, back to back */
    size_t nframes;
    int stop_at;               /* return an error from this frame (1-based; 0: never) */
};

static int on_hello(void *ctx, const uint8_t *line, size_t len)
{
    struct got *g = ctx;
    return trove_bytes_append(&g->hello, line, len);
}

static int on_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct got *g = ctx;
    if (++g->nframes == (size_t)g->stop_at)
        return TROVE_ERR_CANCELLED;
    return trove_bytes_append(&g->frames, frame, len);
}

static void got_free(struct got *g)
{
    trove_bytes_free(&g->hello);
    trove_bytes_free(&g->frames);
}

/* A stream: a hello line, then a names frame and three event frames (raw, packed, deflate). */
static void make_stream(struct trove_bytes *out, size_t *frames_at)
{
    static const char hello[] = "{\"capture\":\"run1\",\"producer\":\"test\",\"pid\":42}\n";
    struct trove_names *names = NULL;
    struct trove_wire_encoder *enc = NULL;
    struct trove_event ev[300];

    CHECK_EQ_INT(trove_bytes_append(out, hello, sizeof hello - 1), TROVE_OK);
    *frames_at = out->len;
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_EVENT, 1, 0, "work", 4), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_THREAD, 42, 7, "main", 4), TROVE_OK);
    CHECK_EQ_INT(trove_wire_encode_names(names, 0, trove_names_count(names), out), TROVE_OK);
    CHECK_EQ_INT(trove_wire_encoder_new(&enc), TROVE_OK);
    memset(ev, 0, sizeof ev);
    for (int i = 0; i < 300; i++) {
        ev[i].start_ns = 1000 + (uint64_t)i * 37;
        ev[i].dur_ns = 20 + (uint64_t)(i % 5);
        ev[i].pid = 42;
        ev[i].tid = 7 + (uint32_t)(i % 3);
        ev[i].name_id = 1;
    }
    CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_RAW, ev, 100, out), TROVE_OK);
    CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_PACKED, ev + 100, 100, out), TROVE_OK);
    CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_DEFLATE, ev + 200, 100, out), TROVE_OK);
    trove_wire_encoder_free(enc);
    trove_names_free(names);
}

/* Feed s in pieces whose sizes come from next(); the result must be the whole stream. */
static void feed_in_pieces(const struct trove_bytes *s, size_t frames_at,
                           size_t (*next)(uint64_t *), uint64_t seed)
{
    struct trove__framer f;
    struct got g;
    struct trove_diag diag = {0};
    size_t at = 0;

    memset(&g, 0, sizeof g);
    trove__framer_init(&f);
    while (at < s->len) {
        size_t n = next(&seed);
        if (n > s->len - at)
            n = s->len - at;
        CHECK_EQ_INT(trove__framer_feed(&f, s->ptr + at, n, on_hello, on_frame, &g, &diag),
                     TROVE_OK);
        at += n;
    }
    CHECK_EQ_INT(trove__framer_pending(&f), 0);
    CHECK(g.hello.len == frames_at - 1 && memcmp(g.hello.ptr, s->ptr, frames_at - 1) == 0);
    CHECK_EQ_INT(g.nframes, 4);
    CHECK(g.frames.len == s->len - frames_at &&
          memcmp(g.frames.ptr, s->ptr + frames_at, g.frames.len) == 0);
    trove__framer_free(&f);
    got_free(&g);
}

static size_t one(uint64_t *seed) { (void)seed; return 1; }
static size_t random_piece(uint64_t *seed) { return 1 + test_rand(seed) % 700; }
static size_t all(uint64_t *seed) { (void)seed; return SIZE_MAX; }

static void test_framer_splits(void)
{
    struct trove_bytes s = {0};
    size_t frames_at;

    make_stream(&s, &frames_at);
    feed_in_pieces(&s, frames_at, all, 0);
    feed_in_pieces(&s, frames_at, one, 0);
    for (uint64_t seed = 1; seed <= 50; seed++)
        feed_in_pieces(&s, frames_at, random_piece, seed);
    /* Every split point into two reads. */
    for (size_t cut = 1; cut < s.len; cut++) {
        struct trove__framer f;
        struct got g;
        memset(&g, 0, sizeof g);
        trove__framer_init(&f);
        CHECK_EQ_INT(trove__framer_feed(&f, s.ptr, cut, on_hello, on_frame, &g, NULL),
                     TROVE_OK);
        CHECK_EQ_INT(trove__framer_feed(&f, s.ptr + cut, s.len - cut, on_hello, on_frame, &g,
                                        NULL),
                     TROVE_OK);
        CHECK_EQ_INT(g.nframes, 4);
        CHECK(g.frames.len == s.len - frames_at);
        trove__framer_free(&f);
        got_free(&g);
    }
    /* A stream cut inside a frame leaves it pending, delivered nothing of it. */
    {
        struct trove__framer f;
        struct got g;
        memset(&g, 0, sizeof g);
        trove__framer_init(&f);
        CHECK_EQ_INT(trove__framer_feed(&f, s.ptr, s.len - 5, on_hello, on_frame, &g, NULL),
                     TROVE_OK);
        CHECK_EQ_INT(g.nframes, 3);
        CHECK(trove__framer_pending(&f) > 0);
        trove__framer_free(&f);
        got_free(&g);
    }
    /* A callback's error stops the framer, and it stays stopped. */
    {
        struct trove__framer f;
        struct got g;
        memset(&g, 0, sizeof g);
        g.stop_at = 2;
        trove__framer_init(&f);
        CHECK_EQ_INT(trove__framer_feed(&f, s.ptr, s.len, on_hello, on_frame, &g, NULL),
                     TROVE_ERR_CANCELLED);
        CHECK_EQ_INT(trove__framer_feed(&f, s.ptr, 1, on_hello, on_frame, &g, NULL),
                     TROVE_ERR_CANCELLED);
        CHECK_EQ_INT(g.nframes, 2);
        trove__framer_free(&f);
        got_free(&g);
    }
    trove_bytes_free(&s);
}

/* The header hook: called once for each frame, with its header, whether the frame comes
 * whole or a byte at a time, before the frame; its error stops the framer there. */
struct heads {
    size_t n, frames;
    int refuse_format;
    int order_ok;
};

static int count_head(void *ctx, const struct trove_wire_header *h)
{
    struct heads *c = ctx;
    c->order_ok &= c->n == c->frames; /* each header before its own frame, after the last */
    c->n++;
    return h->format == c->refuse_format ? TROVE_ERR_LIMIT : TROVE_OK;
}

static int count_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct heads *c = ctx;
    (void)frame, (void)len;
    c->frames++;
    return TROVE_OK;
}

static int skip_hello(void *ctx, const uint8_t *line, size_t len)
{
    (void)ctx, (void)line, (void)len;
    return TROVE_OK;
}

static void test_framer_header_hook(void)
{
    struct trove_bytes s = {0};
    size_t frames_at;

    make_stream(&s, &frames_at);
    for (size_t piece = 1; piece <= s.len; piece = piece < 64 ? piece + 1 : piece * 3) {
        struct trove__framer f;
        struct heads c = {0, 0, 0, 1};
        trove__framer_init(&f);
        f.header = count_head;
        for (size_t at = 0; at < s.len; at += piece)
            CHECK_EQ_INT(trove__framer_feed(&f, s.ptr + at, s.len - at < piece ? s.len - at : piece,
                                            skip_hello, count_frame, &c, NULL),
                         TROVE_OK);
        CHECK_EQ_INT(c.n, 4);
        CHECK_EQ_INT(c.frames, 4);
        CHECK(c.order_ok);
        trove__framer_free(&f);
    }
    /* Refused by its header: the frame is never handed out, nor buffered. */
    for (size_t piece = 1; piece <= s.len; piece = piece * 2 + 1) {
        struct trove__framer f;
        struct heads c = {0, 0, TROVE_WIRE_PACKED, 1};
        int rc = TROVE_OK;
        trove__framer_init(&f);
        f.header = count_head;
        for (size_t at = 0; at < s.len && rc == TROVE_OK; at += piece)
            rc = trove__framer_feed(&f, s.ptr + at, s.len - at < piece ? s.len - at : piece,
                                    skip_hello, count_frame, &c, NULL);
        CHECK_EQ_INT(rc, TROVE_ERR_LIMIT);
        CHECK_EQ_INT(c.frames, 2); /* the names and the raw frame */
        CHECK(trove__framer_pending(&f) <= TROVE_WIRE_HEADER_SIZE);
        trove__framer_free(&f);
    }
    trove_bytes_free(&s);
}

static void test_framer_refuses(void)
{
    static const char hello[] = "{\"capture\":\"x\"}\n";
    struct trove_diag diag = {0};
    struct trove__framer f;
    struct got g;
    uint8_t head[16];
    uint8_t *big = malloc(TROVE__HELLO_MAX + 1);

    /* No newline within the limit: refused at once, nothing more buffered. */
    CHECK(big != NULL);
    if (!big)
        return;
    memset(big, ' ', TROVE__HELLO_MAX + 1);
    memset(&g, 0, sizeof g);
    trove__framer_init(&f);
    CHECK_EQ_INT(trove__framer_feed(&f, big, TROVE__HELLO_MAX, on_hello, on_frame, &g, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(trove__framer_feed(&f, big, 1, on_hello, on_frame, &g, &diag), TROVE_ERR_LIMIT);
    CHECK(strstr(diag.msg, "hello line") != NULL);
    trove__framer_free(&f);
    free(big);

    /* Bad frame headers, each named with its offset. */
    struct {
        uint8_t byte_at, value;
        int err;
    } cases[] = {
        {0, 'X', TROVE_ERR_MAGIC},   {3, 9, TROVE_ERR_VERSION}, {2, 9, TROVE_ERR_FORMAT},
        {15, 0x7f, TROVE_ERR_CORRUPT}, /* raw_len set on a raw frame */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        /* A valid raw frame header of one event (payload 32), then the damage. */
        memset(head, 0, sizeof head);
        head[0] = 'T';
        head[1] = 'V';
        head[2] = TROVE_WIRE_RAW;
        head[3] = 1;
        head[4] = 1;
        head[8] = 32;
        head[cases[k].byte_at] = cases[k].value;
        memset(&g, 0, sizeof g);
        memset(&diag, 0, sizeof diag);
        trove__framer_init(&f);
        CHECK_EQ_INT(trove__framer_feed(&f, (const uint8_t *)hello, sizeof hello - 1, on_hello,
                                        on_frame, &g, &diag),
                     TROVE_OK);
        CHECK_EQ_INT(trove__framer_feed(&f, head, 10, on_hello, on_frame, &g, &diag), TROVE_OK);
        CHECK_EQ_INT(trove__framer_feed(&f, head + 10, 6, on_hello, on_frame, &g, &diag),
                     cases[k].err);
        CHECK(strstr(diag.msg, "frame at byte 16") != NULL);
        CHECK_EQ_INT(diag.offset, 16);
        trove__framer_free(&f);
        got_free(&g);
    }
    /* A payload length over the limit is refused from the header, before any payload. */
    memset(head, 0, sizeof head);
    head[0] = 'T';
    head[1] = 'V';
    head[2] = TROVE_WIRE_PACKED;
    head[3] = 1;
    head[4] = 1;
    head[8] = 0xff, head[9] = 0xff, head[10] = 0xff, head[11] = 0x7f;
    memset(&g, 0, sizeof g);
    trove__framer_init(&f);
    CHECK_EQ_INT(trove__framer_feed(&f, (const uint8_t *)hello, sizeof hello - 1, on_hello,
                                    on_frame, &g, &diag),
                 TROVE_OK);
    CHECK(trove__framer_feed(&f, head, sizeof head, on_hello, on_frame, &g, &diag) != TROVE_OK);
    CHECK(trove__framer_pending(&f) <= sizeof head);
    trove__framer_free(&f);
    got_free(&g);
}

static void expect_hello(const char *line, int want, const char *msg_part)
{
    struct trove__hello h;
    struct trove_diag diag = {0};
    int rc = trove__hello_parse((const uint8_t *)line, strlen(line), &h, &diag);
    CHECK_EQ_INT(rc, want);
    if (msg_part && !strstr(diag.msg, msg_part)) {
        fprintf(stderr, "hello %s: message '%s' lacks '%s'\n", line, diag.msg, msg_part);
        CHECK(0);
    }
}

static void test_hello(void)
{
    struct trove__hello h;
    const char *full = "{\"capture\":\"run-1.a_b\",\"producer\":\"svc \\u00e9\",\"pid\":4294967295,"
                       "\"append\":true,\"token\":\"s3cret\",\"extra\":{\"x\":[1,2,{}]}}";
    CHECK_EQ_INT(trove__hello_parse((const uint8_t *)full, strlen(full), &h, NULL), TROVE_OK);
    CHECK(strcmp(h.capture, "run-1.a_b") == 0);
    CHECK(strcmp(h.producer, "svc \xc3\xa9") == 0);
    CHECK_EQ_INT(h.pid, 4294967295u);
    CHECK_EQ_INT(h.append, 1);
    CHECK(strcmp(h.token, "s3cret") == 0);
    CHECK_EQ_INT(trove__hello_parse((const uint8_t *)" {\"capture\":\"c\"}\r", 17, &h, NULL),
                 TROVE_OK);
    CHECK(h.pid == 0 && h.append == 0 && h.producer[0] == 0);

    expect_hello("", TROVE_ERR_JSON, "hello");
    expect_hello("[]", TROVE_ERR_JSON, NULL);
    expect_hello("{}", TROVE_ERR_INVALID, "no \"capture\"");
    expect_hello("{\"capture\":\"\"}", TROVE_ERR_INVALID, "capture");
    expect_hello("{\"capture\":\".hidden\"}", TROVE_ERR_INVALID, "capture");
    expect_hello("{\"capture\":\"a/b\"}", TROVE_ERR_INVALID, "capture");
    expect_hello("{\"capture\":\"../x\"}", TROVE_ERR_INVALID, "capture");
    expect_hello("{\"capture\":\"a\\u0000b\"}", TROVE_ERR_INVALID, "NUL");
    expect_hello("{\"capture\":7}", TROVE_ERR_INVALID, "must be a string");
    expect_hello("{\"capture\":\"c\",\"pid\":-1}", TROVE_ERR_INVALID, "pid");
    expect_hello("{\"capture\":\"c\",\"pid\":4294967296}", TROVE_ERR_INVALID, "pid");
    expect_hello("{\"capture\":\"c\",\"pid\":1.5}", TROVE_ERR_INVALID, "pid");
    expect_hello("{\"capture\":\"c\",\"pid\":\"1\"}", TROVE_ERR_INVALID, "pid");
    expect_hello("{\"capture\":\"c\",\"append\":1}", TROVE_ERR_INVALID, "append");
    expect_hello("{\"capture\":\"c\"} x", TROVE_ERR_JSON, NULL);
    expect_hello("{\"capture\":\"c\"", TROVE_ERR_JSON, NULL);
    expect_hello("{\"capture\":\"\xff\"}", TROVE_ERR_JSON, NULL); /* not UTF-8 */
    {
        char line[600];
        memset(line, 0, sizeof line);
        strcpy(line, "{\"capture\":\"c\",\"token\":\"");
        memset(line + strlen(line), 'a', 257);
        strcat(line, "\"}");
        expect_hello(line, TROVE_ERR_LIMIT, "token");
        memset(line, 0, sizeof line);
        strcpy(line, "{\"capture\":\"");
        memset(line + strlen(line), 'a', 129);
        strcat(line, "\"}");
        expect_hello(line, TROVE_ERR_LIMIT, "capture");
    }

    /* A TSC producer's clock. */
    const char *tsc = "{\"capture\":\"c\",\"clock\":\"tsc\",\"tsc_hz\":2000000000,"
                      "\"tsc_ref\":1000,\"ns_ref\":5000}";
    CHECK_EQ_INT(trove__hello_parse((const uint8_t *)tsc, strlen(tsc), &h, NULL), TROVE_OK);
    CHECK(h.clock_tsc == 1 && h.tsc_hz == 2000000000u && h.tsc_ref == 1000 && h.ns_ref == 5000);
    tsc = "{\"capture\":\"c\",\"clock\":\"ns\"}";
    CHECK_EQ_INT(trove__hello_parse((const uint8_t *)tsc, strlen(tsc), &h, NULL), TROVE_OK);
    CHECK_EQ_INT(h.clock_tsc, 0);
    expect_hello("{\"capture\":\"c\",\"clock\":\"tsc\"}", TROVE_ERR_INVALID, "tsc_hz");
    expect_hello("{\"capture\":\"c\",\"clock\":\"hpet\"}", TROVE_ERR_INVALID, "clock");
    expect_hello("{\"capture\":\"c\",\"clock\":\"a-very-long-clock\"}", TROVE_ERR_INVALID,
                 "clock");
    expect_hello("{\"capture\":\"c\",\"clock\":1}", TROVE_ERR_INVALID, "clock");
    expect_hello("{\"capture\":\"c\",\"clock\":\"tsc\",\"tsc_hz\":999999}",
                 TROVE_ERR_INVALID, "tsc_hz");
    expect_hello("{\"capture\":\"c\",\"clock\":\"tsc\",\"tsc_hz\":100000000001}",
                 TROVE_ERR_INVALID, "tsc_hz");
    expect_hello("{\"capture\":\"c\",\"clock\":\"tsc\",\"tsc_hz\":1e9}", TROVE_ERR_INVALID,
                 "tsc_hz");
    expect_hello("{\"capture\":\"c\",\"tsc_ref\":18446744073709551616}", TROVE_ERR_INVALID,
                 "tsc_ref");
    expect_hello("{\"capture\":\"c\",\"ns_ref\":-1}", TROVE_ERR_INVALID, "ns_ref");
    /* "names": a sampler's guesses ("fallback") or the program's own ("given", the default) */
    {
        const char *fb = "{\"capture\":\"c\",\"names\":\"fallback\"}";
        const char *given = "{\"capture\":\"c\",\"names\":\"given\"}";
        CHECK_EQ_INT(trove__hello_parse((const uint8_t *)fb, strlen(fb), &h, NULL), TROVE_OK);
        CHECK_EQ_INT(h.names_fallback, 1);
        CHECK_EQ_INT(trove__hello_parse((const uint8_t *)given, strlen(given), &h, NULL),
                     TROVE_OK);
        CHECK_EQ_INT(h.names_fallback, 0);
    }
    expect_hello("{\"capture\":\"c\",\"names\":\"weak\"}", TROVE_ERR_INVALID, "names");
    expect_hello("{\"capture\":\"c\",\"names\":1}", TROVE_ERR_INVALID, "names");
    expect_hello("{\"capture\":\"c\",\"names\":\"fallbackfallbackfallback\"}",
                 TROVE_ERR_INVALID, "names");
}

/* Ticks to nanoseconds: 2 GHz, tick 1000 being 5000 ns. */
static void test_clock(void)
{
    struct trove__hello h;
    struct trove__clock c;
    struct trove_event ev[6];
    double v = 42.5;

    memset(&h, 0, sizeof h);
    h.clock_tsc = 1;
    h.tsc_hz = 2000000000u;
    h.tsc_ref = 1000;
    h.ns_ref = 5000;
    trove__clock_init(&c, &h);
    memset(ev, 0, sizeof ev);
    ev[0].start_ns = 3000; /* 2000 ticks later: 1000 ns */
    ev[0].dur_ns = 4;
    ev[1].start_ns = 0; /* before the reference */
    ev[1].dur_ns = 2000000000u;
    ev[2].start_ns = 1000;
    ev[2].kind = TROVE_KIND_COUNTER; /* a counter's value is not a time */
    memcpy(&ev[2].dur_ns, &v, sizeof v);
    ev[3].start_ns = 0; /* with the second clock, -5000 ns: clamped to 0 */
    h.tsc_ref = 20000;
    h.ns_ref = 5000;
    ev[4].start_ns = UINT64_MAX; /* far past the reference: saturates */
    ev[5].start_ns = 1000 + 2000000000ull * 3600; /* an hour later, to the nanosecond */
    ev[5].dur_ns = 2000000000ull * 3600;
    trove__clock_apply(&c, ev, 3);
    CHECK_EQ_INT(ev[0].start_ns, 6000);
    CHECK_EQ_INT(ev[0].dur_ns, 2);
    CHECK_EQ_INT(ev[1].start_ns, 4500);
    CHECK_EQ_INT(ev[1].dur_ns, 1000000000u);
    CHECK_EQ_INT(ev[2].start_ns, 5000);
    CHECK(memcmp(&ev[2].dur_ns, &v, sizeof v) == 0);
    trove__clock_apply(&c, ev + 5, 1);
    CHECK_EQ_INT(ev[5].start_ns, 5000 + 3600000000000ull);
    CHECK_EQ_INT(ev[5].dur_ns, 3600000000000ull);
    trove__clock_init(&c, &h); /* tick 20000 = 5000 ns: tick 0 would be -5000 ns */
    trove__clock_apply(&c, ev + 3, 2);
    CHECK_EQ_INT(ev[3].start_ns, 0);
    CHECK_EQ_INT(ev[4].start_ns, 5000 + 9223372036854765807ull);
    /* A zone's end is converted as a start is: zones that touch in ticks touch in ns (1.5 ns
     * each, which durations converted alone would round apart) */
    h.tsc_ref = 1000;
    trove__clock_init(&c, &h);
    memset(ev, 0, 2 * sizeof *ev);
    ev[0].start_ns = 1001;
    ev[0].dur_ns = 3;
    ev[1].start_ns = 1004;
    ev[1].dur_ns = 3;
    trove__clock_apply(&c, ev, 2);
    CHECK_EQ_INT(ev[0].start_ns, 5000);
    CHECK_EQ_INT(ev[0].start_ns + ev[0].dur_ns, ev[1].start_ns);
    CHECK_EQ_INT(ev[1].start_ns, 5002);
}


/* ---- the fan-out -------------------------------------------------------------------------- */

static void make_events(struct trove_event *ev, size_t n, uint64_t first)
{
    memset(ev, 0, n * sizeof *ev);
    for (size_t i = 0; i < n; i++) {
        ev[i].start_ns = 5000 + (first + i) * 11;
        ev[i].dur_ns = 3 + (first + i) % 7;
        ev[i].pid = 9;
        ev[i].tid = 1 + (uint32_t)((first + i) % 4);
        ev[i].name_id = 1 + (uint32_t)((first + i) % 3);
    }
}

/* Drain v, decoding every frame: events appended to out, names into names; gap totals.
 * No CHECK here (the harness's counters are not for threads): *errors counts what failed. */
static void drain_core(struct trove__viewer *v, struct trove_wire_decoder *dec,
                       struct trove_names *names, struct trove_events *out, uint64_t *gap_events,
                       uint64_t *names_frames, int *errors)
{
    static _Thread_local struct trove_event buf[TROVE_WIRE_MAX_EVENTS];
    struct trove__viewer_item it;

    while (trove__viewer_next(v, &it)) {
        struct trove_wire_frame fr;
        if (!it.frame) {
            *errors += it.gap_batches == 0;
            *gap_events += it.gap_events;
            continue;
        }
        if (trove_wire_decode(dec, it.frame->data, it.frame->len, buf, TROVE_WIRE_MAX_EVENTS,
                              names, &fr, NULL) != TROVE_OK ||
            fr.frame_len != it.frame->len ||
            (fr.format != TROVE_WIRE_NAMES && fr.format != trove__viewer_format(v))) {
            (*errors)++;
        } else if (fr.format == TROVE_WIRE_NAMES) {
            (*names_frames)++;
        } else {
            for (size_t i = 0; i < fr.n_events; i++)
                *errors += trove_events_push(out, &buf[i]) != TROVE_OK;
        }
        trove__frame_buf_release(it.frame);
    }
}

static void drain(struct trove__viewer *v, struct trove_wire_decoder *dec,
                  struct trove_names *names, struct trove_events *out, uint64_t *gap_events,
                  uint64_t *names_frames)
{
    int errors = 0;
    drain_core(v, dec, names, out, gap_events, names_frames, &errors);
    CHECK_EQ_INT(errors, 0);
}

static void test_fanout_formats(void)
{
    struct trove__fanout *fo = NULL;
    struct trove__viewer *v[3];
    struct trove_wire_decoder *dec[3];
    struct trove_names *names = NULL, *got[3];
    struct trove_events out[3];
    struct trove_event ev[3000];
    uint64_t enc[5], gaps = 0, nf[3] = {0};

    make_events(ev, 3000, 0);
    CHECK_EQ_INT(trove__fanout_new(64u << 20, &fo), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_EVENT, 1, 0, "a", 1), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_EVENT, 2, 0, "b", 1), TROVE_OK);
    /* Two viewers of raw, one of packed; nobody takes deflate. */
    CHECK_EQ_INT(trove__fanout_add(fo, TROVE_WIRE_RAW, &v[0]), TROVE_OK);
    CHECK_EQ_INT(trove__fanout_add(fo, TROVE_WIRE_RAW, &v[1]), TROVE_OK);
    CHECK_EQ_INT(trove__fanout_add(fo, TROVE_WIRE_PACKED, &v[2]), TROVE_OK);
    {
        struct trove__viewer *bad = NULL;
        CHECK_EQ_INT(trove__fanout_add(fo, TROVE_WIRE_NAMES, &bad), TROVE_ERR_INVALID);
        CHECK(bad == NULL);
    }
    CHECK_EQ_INT(trove__fanout_publish(fo, names, ev, 1000, NULL), TROVE_OK);
    CHECK_EQ_INT(trove__fanout_publish(fo, NULL, ev + 1000, 1000, NULL), TROVE_OK);
    CHECK_EQ_INT(trove__fanout_publish(fo, NULL, ev + 2000, 1000, NULL), TROVE_OK);
    trove__fanout_encodings(fo, enc);
    CHECK_EQ_INT(enc[TROVE_WIRE_RAW], 3); /* once a batch, for both raw viewers */
    CHECK_EQ_INT(enc[TROVE_WIRE_PACKED], 3);
    CHECK_EQ_INT(enc[TROVE_WIRE_DEFLATE], 0);
    CHECK_EQ_INT(enc[TROVE_WIRE_NAMES], 1);
    for (int k = 0; k < 3; k++) {
        memset(&out[k], 0, sizeof out[k]);
        CHECK_EQ_INT(trove_wire_decoder_new(&dec[k]), TROVE_OK);
        CHECK_EQ_INT(trove_names_new(&got[k]), TROVE_OK);
        drain(v[k], dec[k], got[k], &out[k], &gaps, &nf[k]);
        CHECK_EQ_INT(out[k].len, 3000);
        CHECK(out[k].len == 3000 && memcmp(out[k].ev, ev, sizeof ev) == 0);
        CHECK_EQ_INT(trove_names_count(got[k]), 2);
        CHECK_EQ_INT(nf[k], 1);
    }
    CHECK_EQ_INT(gaps, 0);
    /* A viewer that joins later gets every name first, then only what comes after. */
    {
        struct trove__viewer *late = NULL;
        struct trove_events lo = {0};
        struct trove_names *ln = NULL;
        uint64_t lnf = 0;
        CHECK_EQ_INT(trove_names_new(&ln), TROVE_OK);
        CHECK_EQ_INT(trove__fanout_add(fo, TROVE_WIRE_DEFLATE, &late), TROVE_OK);
        CHECK_EQ_INT(trove__fanout_publish(fo, NULL, ev, 10, NULL), TROVE_OK);
        drain(late, dec[0], ln, &lo, &gaps, &lnf);
        CHECK_EQ_INT(lnf, 1);
        CHECK_EQ_INT(trove_names_count(ln), 2);
        CHECK(lo.len == 10 && memcmp(lo.ev, ev, 10 * sizeof *ev) == 0);
        trove__fanout_remove(fo, late);
        trove_events_free(&lo);
        trove_names_free(ln);
    }
    for (int k = 0; k < 3; k++) {
        trove__fanout_remove(fo, v[k]);
        trove_wire_decoder_free(dec[k]);
        trove_names_free(got[k]);
        trove_events_free(&out[k]);
    }
    trove__fanout_free(fo);
    trove_names_free(names);
}

static void test_fanout_slow_viewer(void)
{
    enum { BATCH = 500, BATCHES = 200 };
    static struct trove_event ev[BATCH * BATCHES];
    struct trove__fanout *fo = NULL;
    struct trove__viewer *slow = NULL, *fast = NULL;
    struct trove_wire_decoder *d1 = NULL, *d2 = NULL;
    struct trove_names *names = NULL, *n1 = NULL, *n2 = NULL, *more = NULL;
    struct trove_events got_fast = {0}, got_slow = {0};
    struct trove__viewer_stats st;
    uint64_t gap_fast = 0, gap_slow = 0, nf1 = 0, nf2 = 0;

    make_events(ev, BATCH * BATCHES, 0);
    /* Room for a few packed batches only. */
    CHECK_EQ_INT(trove__fanout_new(16u << 10, &fo), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&more), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_EVENT, 1, 0, "first", 5), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(more, TROVE_NAME_EVENT, 3, 0, "later", 5), TROVE_OK);
    CHECK_EQ_INT(trove_wire_decoder_new(&d1), TROVE_OK);
    CHECK_EQ_INT(trove_wire_decoder_new(&d2), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&n1), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&n2), TROVE_OK);
    CHECK_EQ_INT(trove__fanout_add(fo, TROVE_WIRE_PACKED, &slow), TROVE_OK);
    CHECK_EQ_INT(trove__fanout_add(fo, TROVE_WIRE_PACKED, &fast), TROVE_OK);
    for (int b = 0; b < BATCHES; b++) {
        /* names arrive twice along the way; the stalled viewer must keep both */
        const struct trove_names *add = b == 0 ? names : b == 100 ? more : NULL;
        CHECK_EQ_INT(trove__fanout_publish(fo, add, ev + (size_t)b * BATCH, BATCH, NULL), TROVE_OK);
        drain(fast, d1, n1, &got_fast, &gap_fast, &nf1); /* keeps up */
    }
    CHECK_EQ_INT(gap_fast, 0);
    CHECK(got_fast.len == BATCH * BATCHES && memcmp(got_fast.ev, ev, sizeof ev) == 0);
    trove__viewer_stats(slow, &st);
    CHECK(st.dropped_batches > 0);
    CHECK(st.queued_bytes <= (16u << 10));
    /* The stalled one now drains: a gap report first, then the newest frames; the names
     * frames were never dropped, and every event is either received or in a gap. */
    drain(slow, d2, n2, &got_slow, &gap_slow, &nf2);
    CHECK_EQ_INT(nf2, 2);
    CHECK_EQ_INT(trove_names_count(n2), 2);
    CHECK_EQ_INT(got_slow.len + gap_slow, (uint64_t)BATCH * BATCHES);
    CHECK_EQ_INT(gap_slow, st.dropped_events);
    CHECK(got_slow.len > 0 && got_slow.len % BATCH == 0);
    /* What it did get is the tail, in order. */
    CHECK(got_slow.len > 0 &&
          memcmp(got_slow.ev, ev + BATCH * BATCHES - got_slow.len,
                 got_slow.len * sizeof *ev) == 0);
    trove__fanout_remove(fo, slow);
    trove__fanout_remove(fo, fast);
    trove__fanout_free(fo);
    trove_wire_decoder_free(d1);
    trove_wire_decoder_free(d2);
    trove_names_free(names);
    trove_names_free(more);
    trove_names_free(n1);
    trove_names_free(n2);
    trove_events_free(&got_fast);
    trove_events_free(&got_slow);
}

/* A publisher and two draining threads at once: with room enough nothing is lost. */
struct drainer {
    struct trove__viewer *v;
    atomic_int *done;
    struct trove_events got;
    uint64_t gaps;
    int errors;
};

static void *drain_thread(void *arg)
{
    struct drainer *d = arg;
    struct trove_wire_decoder *dec = NULL;
    struct trove_names *names = NULL;
    uint64_t nf = 0;

    trove_wire_decoder_new(&dec);
    trove_names_new(&names);
    while (!atomic_load(d->done))
        drain_core(d->v, dec, names, &d->got, &d->gaps, &nf, &d->errors);
    drain_core(d->v, dec, names, &d->got, &d->gaps, &nf, &d->errors);
    trove_wire_decoder_free(dec);
    trove_names_free(names);
    return NULL;
}

static void test_fanout_threads(void)
{
    enum { BATCH = 256, BATCHES = 400 };
    static struct trove_event ev[BATCH * BATCHES];
    struct trove__fanout *fo = NULL;
    struct drainer d[2];
    pthread_t th[2];
    atomic_int done;

    make_events(ev, BATCH * BATCHES, 0);
    atomic_init(&done, 0);
    CHECK_EQ_INT(trove__fanout_new(256u << 20, &fo), TROVE_OK);
    for (int k = 0; k < 2; k++) {
        memset(&d[k], 0, sizeof d[k]);
        d[k].done = &done;
        CHECK_EQ_INT(trove__fanout_add(fo, k ? TROVE_WIRE_DEFLATE : TROVE_WIRE_RAW, &d[k].v),
                     TROVE_OK);
        CHECK_EQ_INT(pthread_create(&th[k], NULL, drain_thread, &d[k]), 0);
    }
    for (int b = 0; b < BATCHES; b++)
        CHECK_EQ_INT(trove__fanout_publish(fo, NULL, ev + (size_t)b * BATCH, BATCH, NULL), TROVE_OK);
    atomic_store(&done, 1);
    for (int k = 0; k < 2; k++) {
        pthread_join(th[k], NULL);
        CHECK_EQ_INT(d[k].errors, 0);
        CHECK_EQ_INT(d[k].gaps, 0);
        CHECK(d[k].got.len == BATCH * BATCHES && memcmp(d[k].got.ev, ev, sizeof ev) == 0);
        trove__fanout_remove(fo, d[k].v);
        trove_events_free(&d[k].got);
    }
    trove__fanout_free(fo);
}

/* ---- names of several producers in one capture ---------------------------------------- */

static void set_event_name(struct trove_names *n, uint32_t id, const char *s)
{
    CHECK_EQ_INT(trove_names_set(n, TROVE_NAME_EVENT, id, 0, s, strlen(s)), TROVE_OK);
}

static const char *capture_name_of(struct trove__capture_names *c, uint32_t id)
{
    const char *s = trove_names_get(trove__capture_names_all(c), TROVE_NAME_EVENT, id, 0, NULL);
    return s ? s : "";
}

static void test_remap(void)
{
    struct trove__capture_names *c = NULL;
    struct trove__producer_names *p1 = NULL, *p2 = NULL;
    struct trove_names *a1 = NULL, *a2 = NULL, *out = NULL;
    struct trove_event ev[4];

    CHECK_EQ_INT(trove__capture_names_new(&c), TROVE_OK);
    CHECK_EQ_INT(trove__producer_names_new(&p1), TROVE_OK);
    CHECK_EQ_INT(trove__producer_names_new(&p2), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&a1), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&a2), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&out), TROVE_OK);
    /* Both producers call their first name 1, and both know "beta". */
    set_event_name(a1, 1, "alpha");
    set_event_name(a1, 2, "beta");
    CHECK_EQ_INT(trove_names_set(a1, TROVE_NAME_THREAD, 100, 7, "main", 4), TROVE_OK);
    set_event_name(a2, 1, "beta");
    set_event_name(a2, 2, "gamma");
    CHECK_EQ_INT(trove__remap_names(c, p1, a1, out), TROVE_OK);
    CHECK_EQ_INT(trove_names_count(out), 3); /* alpha, beta and the thread name */
    CHECK(trove_names_get(out, TROVE_NAME_THREAD, 100, 7, NULL) != NULL);
    trove_names_free(out);
    CHECK_EQ_INT(trove_names_new(&out), TROVE_OK);
    CHECK_EQ_INT(trove__remap_names(c, p2, a2, out), TROVE_OK);
    CHECK_EQ_INT(trove_names_count(out), 1); /* only gamma is new to the capture */
    memset(ev, 0, sizeof ev);
    ev[0].name_id = 1, ev[1].name_id = 2, ev[2].name_id = 0, ev[3].name_id = 7;
    CHECK_EQ_INT(trove__remap_events(c, p1, ev, 4), TROVE_OK);
    CHECK(strcmp(capture_name_of(c, ev[0].name_id), "alpha") == 0);
    CHECK(strcmp(capture_name_of(c, ev[1].name_id), "beta") == 0);
    /* Id 0 is an id like any other (the gen model names it): never named by p1, it gets a
     * nameless capture id of its own, as 7 does. */
    CHECK(capture_name_of(c, ev[2].name_id)[0] == 0 && ev[2].name_id != ev[0].name_id &&
          ev[2].name_id != ev[1].name_id && ev[2].name_id != ev[3].name_id);
    {
        uint32_t p1_unnamed = ev[3].name_id;
        CHECK(capture_name_of(c, p1_unnamed)[0] == 0);
        memset(ev, 0, sizeof ev);
        ev[0].name_id = 1, ev[1].name_id = 2, ev[2].name_id = 7, ev[3].name_id = 7;
        CHECK_EQ_INT(trove__remap_events(c, p2, ev, 4), TROVE_OK);
        CHECK(strcmp(capture_name_of(c, ev[0].name_id), "beta") == 0);
        CHECK(strcmp(capture_name_of(c, ev[1].name_id), "gamma") == 0);
        /* p2's unnamed 7 is not p1's unnamed 7 */
        CHECK(ev[2].name_id != p1_unnamed && ev[2].name_id == ev[3].name_id);
    }
    /* A rename: later events take the new name, the capture keeps the old one's id. */
    {
        struct trove_names *re = NULL;
        uint32_t alpha = 0;
        memset(ev, 0, sizeof ev);
        ev[0].name_id = 1;
        CHECK_EQ_INT(trove__remap_events(c, p1, ev, 1), TROVE_OK);
        alpha = ev[0].name_id;
        CHECK_EQ_INT(trove_names_new(&re), TROVE_OK);
        set_event_name(re, 1, "delta");
        trove_names_free(out);
        CHECK_EQ_INT(trove_names_new(&out), TROVE_OK);
        CHECK_EQ_INT(trove__remap_names(c, p1, re, out), TROVE_OK);
        ev[0].name_id = 1;
        CHECK_EQ_INT(trove__remap_events(c, p1, ev, 1), TROVE_OK);
        CHECK(ev[0].name_id != alpha);
        CHECK(strcmp(capture_name_of(c, ev[0].name_id), "delta") == 0);
        CHECK(strcmp(capture_name_of(c, alpha), "alpha") == 0);
        trove_names_free(re);
    }
    /* Many names: the tables grow and every id stays right. */
    {
        struct trove_names *big = NULL;
        struct trove__producer_names *p3 = NULL;
        char name[32];
        CHECK_EQ_INT(trove_names_new(&big), TROVE_OK);
        CHECK_EQ_INT(trove__producer_names_new(&p3), TROVE_OK);
        for (uint32_t i = 1; i <= 5000; i++) {
            snprintf(name, sizeof name, "n%u", i);
            set_event_name(big, i * 3, name);
        }
        CHECK_EQ_INT(trove__remap_names(c, p3, big, out), TROVE_OK);
        for (uint32_t i = 1; i <= 5000; i += 37) {
            struct trove_event e;
            memset(&e, 0, sizeof e);
            e.name_id = i * 3;
            snprintf(name, sizeof name, "n%u", i);
            CHECK_EQ_INT(trove__remap_events(c, p3, &e, 1), TROVE_OK);
            CHECK(strcmp(capture_name_of(c, e.name_id), name) == 0);
        }
        trove_names_free(big);
        trove__producer_names_free(p3);
    }
    trove_names_free(a1);
    trove_names_free(a2);
    trove_names_free(out);
    trove__producer_names_free(p1);
    trove__producer_names_free(p2);
    trove__capture_names_free(c);
}

/* What the capture's names take in its names objects: trove__capture_names_stored_bytes is
 * never under what the capture writer makes of the same names but for a frame header where
 * a part ends, and over it by a few frame headers at most; a frame that would pass a limit
 * is refused with nothing changed. */
static void check_stored_bytes(const struct trove__capture_names *c)
{
    const struct trove_names *all = trove__capture_names_all(c);
    struct trove_bytes obj = {0};
    uint64_t bound = trove__capture_names_stored_bytes(c);
    size_t from = 0, to = 0, parts = 0, count = trove_names_count(all);

    do { /* every part, as the writer cuts them */
        int rc = trove__capture_names_part("t", all, from, &obj, &to, NULL);
        CHECK_EQ_INT(rc, TROVE_OK);
        if (rc != TROVE_OK)
            break;
        from = to;
        parts++;
    } while (from < count);
    CHECK(bound + 16 * (parts - 1) >= obj.len);
    CHECK(bound - obj.len <= 16 * 4 || bound < obj.len);
    trove_bytes_free(&obj);
}

static void test_remap_bytes(void)
{
    struct trove__capture_names *c = NULL;
    struct trove__producer_names *p = NULL;
    struct trove_names *a = NULL, *out = NULL, *stored = NULL;
    uint64_t would = 0, before;
    char name[300];

    CHECK_EQ_INT(trove__capture_names_new(&c), TROVE_OK);
    CHECK_EQ_INT(trove__producer_names_new(&p), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&out), TROVE_OK);
    check_stored_bytes(c); /* none: one empty frame */
    /* Stored names first (an append), then 200,000 more of many lengths: the bound stays
     * exact but for headers, whatever frames the writer cuts (by count and by bytes). */
    CHECK_EQ_INT(trove_names_new(&stored), TROVE_OK);
    set_event_name(stored, 3, "stored");
    CHECK_EQ_INT(trove_names_set(stored, TROVE_NAME_PROCESS, 9, 0, "proc", 4), TROVE_OK);
    CHECK_EQ_INT(trove_names_set_sort(stored, TROVE_NAME_THREAD_SORT, 9, 2, -5), TROVE_OK);
    CHECK_EQ_INT(trove__capture_names_seed(c, stored, 3), TROVE_OK);
    check_stored_bytes(c);
    for (uint32_t round = 0; round < 4; round++) {
        CHECK_EQ_INT(trove_names_new(&a), TROVE_OK);
        for (uint32_t i = 0; i < 50000; i++) {
            uint32_t id = round * 50000 + i, len = 1 + (id * 7919u) % 100;
            int n = snprintf(name, sizeof name, "%u-", id);
            memset(name + n, 'y', len);
            CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_EVENT, id, 0, name, (size_t)n + len),
                         TROVE_OK);
        }
        /* a thread's name replaced: the difference counts, not both */
        snprintf(name, sizeof name, "thread-%u", round * 1000);
        CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_THREAD, 9, 2, name, strlen(name)), TROVE_OK);
        CHECK_EQ_INT(trove__remap_names_max(c, p, a, out, UINT64_MAX, &would), TROVE_OK);
        CHECK_EQ_INT(would, trove__capture_names_stored_bytes(c));
        check_stored_bytes(c);
        trove_names_free(a);
    }
    /* A frame past the limit: refused, nothing changed; the same under the limit passes. */
    before = trove__capture_names_stored_bytes(c);
    CHECK_EQ_INT(trove_names_new(&a), TROVE_OK);
    set_event_name(a, 999999, "one more name");
    set_event_name(a, 1, "1-yyyyyyyy"); /* a name the capture has already: free */
    CHECK_EQ_INT(trove__remap_names_max(c, p, a, out, before + 10, &would), TROVE_ERR_LIMIT);
    CHECK(would > before + 10);
    CHECK_EQ_INT(trove__capture_names_stored_bytes(c), before);
    CHECK_EQ_INT(trove__remap_names_max(c, p, a, out, would, NULL), TROVE_OK);
    CHECK_EQ_INT(trove__capture_names_stored_bytes(c), would);
    check_stored_bytes(c);
    trove_names_free(a);
    trove_names_free(stored);
    trove_names_free(out);
    trove__producer_names_free(p);
    trove__capture_names_free(c);
}

/* An answer line parsed, or the error; the client's scan must agree on its type. */
static int answer(const char *line, struct trove_serve_answer *a)
{
    struct trove_diag diag = {0};
    int rc = trove_serve_answer_parse(line, strlen(line), a, &diag);
    int type = trove__client_answer_type(line, strlen(line));
    if (rc == TROVE_OK)
        CHECK_EQ_INT(type, a->type);
    else
        CHECK(diag.msg[0] != 0);
    return rc;
}

static void test_answers(void)
{
    struct trove_serve_answer a;
    char line[TROVE_SERVE_ANSWER_MAX], reason[4000];
    size_t n;

    /* An accept, each mode, written and read back. */
    for (int m = TROVE_SERVE_NEW; m <= TROVE_SERVE_JOIN; m++) {
        n = trove__answer_accept(line, "run-1.x", UINT64_MAX, m, 12345);
        CHECK(n > 0 && n < TROVE_SERVE_ANSWER_MAX && line[n - 1] == '\n' && !memchr(line, '\n', n - 1));
        line[n - 1] = 0;
        CHECK_EQ_INT(answer(line, &a), TROVE_OK);
        CHECK(a.type == TROVE_SERVE_ACCEPT && a.mode == m && a.session == UINT64_MAX &&
              a.events == 12345 && strcmp(a.capture, "run-1.x") == 0);
    }
    CHECK(strcmp(line, "{\"type\":\"accept\",\"capture\":\"run-1.x\",\"session\":18446744073709551615,"
                       "\"mode\":\"join\",\"events\":12345}") == 0);
    /* A refuse and an error: any reason, escaped, cut to fit, read back as it was. */
    n = trove__answer_reason(line, TROVE_SERVE_REFUSE, "no \"capture\" named x\\y\n\x01 in the store");
    line[n - 1] = 0;
    CHECK(strcmp(line, "{\"type\":\"refuse\",\"reason\":\"no \\\"capture\\\" named x\\\\y\\u000a\\u0001 in "
                       "the store\"}") == 0);
    CHECK_EQ_INT(answer(line, &a), TROVE_OK);
    CHECK(a.type == TROVE_SERVE_REFUSE && strcmp(a.reason, "no \"capture\" named x\\y\n\x01 in the store") == 0);
    for (size_t len = 900; len < sizeof reason; len += 97) {
        for (size_t i = 0; i < len; i++) /* quotes, multibyte characters and bad bytes */
            reason[i] = "a\"\xc3\xa9\xff\\b"[i % 7];
        reason[len] = 0;
        n = trove__answer_reason(line, TROVE_SERVE_ERROR, reason);
        CHECK(n < TROVE_SERVE_ANSWER_MAX && line[n - 1] == '\n');
        line[n - 1] = 0;
        CHECK_EQ_INT(answer(line, &a), TROVE_OK);
        CHECK(a.type == TROVE_SERVE_ERROR && strlen(a.reason) > 300);
    }
    /* The line of a producer the stop closes: "stopping":true after the reason, whatever
     * the reason's length; read back as it was, stopping set. */
    n = trove__answer_stopping(line, TROVE_SERVE_ERROR, "the service is stopping");
    line[n - 1] = 0;
    CHECK(strcmp(line, "{\"type\":\"error\",\"reason\":\"the service is stopping\","
                       "\"stopping\":true}") == 0);
    CHECK_EQ_INT(answer(line, &a), TROVE_OK);
    CHECK(a.type == TROVE_SERVE_ERROR && a.stopping == 1 &&
          strcmp(a.reason, "the service is stopping") == 0);
    for (size_t len = 900; len < sizeof reason; len += 97) {
        for (size_t i = 0; i < len; i++)
            reason[i] = "a\"\xc3\xa9\xff\\b"[i % 7];
        reason[len] = 0;
        n = trove__answer_stopping(line, TROVE_SERVE_REFUSE, reason);
        CHECK(n < TROVE_SERVE_ANSWER_MAX && line[n - 1] == '\n');
        line[n - 1] = 0;
        CHECK_EQ_INT(answer(line, &a), TROVE_OK);
        CHECK(a.type == TROVE_SERVE_REFUSE && a.stopping == 1 && strlen(a.reason) > 300);
    }
    CHECK_EQ_INT(answer("{\"type\":\"error\",\"reason\":\"r\",\"stopping\":false}", &a), TROVE_OK);
    CHECK(a.stopping == 0);
    CHECK_EQ_INT(answer("{\"type\":\"error\",\"reason\":\"r\",\"stopping\":1}", &a), TROVE_ERR_INVALID);
    CHECK_EQ_INT(answer("{\"type\":\"error\",\"reason\":\"r\",\"stopping\":true,\"stopping\":true}", &a),
                 TROVE_ERR_INVALID);
    /* Extra members and whitespace are fine; a line ending in \r too. */
    CHECK_EQ_INT(answer(" { \"later\" : [1, {\"x\": \"}\"}], \"type\":\"error\", \"reason\":\"r\" }\r", &a),
                 TROVE_OK);
    CHECK(a.type == TROVE_SERVE_ERROR && strcmp(a.reason, "r") == 0);
    /* Bad lines. */
    CHECK_EQ_INT(answer("", &a), TROVE_ERR_JSON);
    CHECK_EQ_INT(answer("[]", &a), TROVE_ERR_JSON);
    CHECK_EQ_INT(answer("{\"type\":\"accept\"", &a), TROVE_ERR_JSON);
    CHECK_EQ_INT(answer("{\"type\":\"accept\"} x", &a), TROVE_ERR_JSON);
    CHECK_EQ_INT(answer("{\"type\":\"welcome\",\"reason\":\"r\"}", &a), TROVE_ERR_INVALID);
    CHECK_EQ_INT(answer("{\"type\":\"acceptance\",\"reason\":\"r\"}", &a), TROVE_ERR_INVALID);
    CHECK_EQ_INT(answer("{\"reason\":\"r\"}", &a), TROVE_ERR_INVALID);
    CHECK_EQ_INT(answer("{\"type\":\"error\",\"typ\\u0065\":\"refuse\",\"reason\":\"r\"}", &a),
                 TROVE_ERR_INVALID); /* a member twice, one of them escaped */
    CHECK_EQ_INT(answer("{\"type\":\"refuse\"}", &a), TROVE_ERR_INVALID);
    CHECK_EQ_INT(answer("{\"type\":7,\"reason\":\"r\"}", &a), TROVE_ERR_INVALID);
    CHECK_EQ_INT(answer("{\"type\":\"accept\",\"capture\":\"c\",\"session\":1,\"mode\":\"new\"}", &a),
                 TROVE_ERR_INVALID); /* no events */
    CHECK_EQ_INT(answer("{\"type\":\"accept\",\"capture\":\"c\",\"session\":1,\"mode\":\"merge\","
                        "\"events\":0}", &a),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(answer("{\"type\":\"accept\",\"capture\":\"c\",\"session\":-1,\"mode\":\"new\","
                        "\"events\":0}", &a),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(answer("{\"type\":\"accept\",\"capture\":\"c\",\"session\":1.5,\"mode\":\"new\","
                        "\"events\":0}", &a),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(answer("{\"type\":\"accept\",\"capture\":\"a\\\\b\",\"session\":1,\"mode\":\"new\","
                        "\"events\":0}", &a),
                 TROVE_ERR_INVALID); /* not a capture's name */
    CHECK_EQ_INT(answer("{\"type\":\"error\",\"reason\":\"\\u0000\"}", &a), TROVE_ERR_INVALID);
    CHECK_EQ_INT(answer("{\"type\":\"error\",\"reason\":\"\xff\"}", &a), TROVE_ERR_JSON);
    memset(reason, ' ', TROVE_SERVE_ANSWER_MAX);
    reason[TROVE_SERVE_ANSWER_MAX] = 0;
    {
        static const char err[] = "{\"type\":\"error\",\"reason\":\"r\"}";
        memcpy(reason, err, sizeof err - 1); /* then spaces to the end */
    }
    CHECK_EQ_INT(answer(reason, &a), TROVE_ERR_LIMIT); /* 1,024 bytes without the newline */
    reason[TROVE_SERVE_ANSWER_MAX - 1] = 0;
    CHECK_EQ_INT(answer(reason, &a), TROVE_OK);
    /* The client's scan: only the type, never past the line. */
    {
        static const char *const lines[] = {
            "{\"type\":\"refuse\"", "{\"type\":\"refuse\"}", "{\"typ\\u0065\":\"refuse\"}",
            "{\"x\":[1,2],\"type\":\"accept\"}", "{\"x\":[1,2}", "{\"type\":\"error\",}"};
        static const int want[] = {0, TROVE__CLIENT_ANSWER_REFUSE, 0, TROVE__CLIENT_ANSWER_ACCEPT,
                                   0, 0};
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
            CHECK_EQ_INT(trove__client_answer_type(lines[i], strlen(lines[i])), want[i]);
    }
}

/* The viewer's files: `/` and `/web/NAME` reach only the embedded table, by whole names, and
 * what the table holds is web/'s files byte for byte. */
static void test_router_assets(void)
{
    static const char *const refused[] = {
        "/web/", "/web/..", "/web/../CMakeLists.txt", "/web/./app.js", "/web//app.js",
        "/web/app.js/", "/web/APP.JS", "/web/app.js.map", "/web/%2e%2e/README.md", "/webapp.js",
        "/web/index.html/../login.html", "/app.js/..", "/etc/passwd"};
    struct trove__api_req r;
    struct trove__api_error e;
    char path[4096];

    CHECK(trove__web_nassets >= 3);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/", NULL, &r, &e), 0);
    CHECK_EQ_INT(r.route, TROVE__R_INDEX);
    CHECK(strcmp(trove__web_assets[r.asset].name, "index.html") == 0);
    CHECK(strncmp(trove__web_assets[r.asset].type, "text/html", 9) == 0);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/index.html", NULL, &r, &e), 0);
    CHECK_EQ_INT(r.route, TROVE__R_INDEX);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/status", NULL, &r, &e), 0);
    CHECK_EQ_INT(r.route, TROVE__R_STATUS_PAGE);
    CHECK_EQ_INT(trove__api_route(TROVE__POST, "/web/app.js", NULL, &r, &e), -1);
    CHECK_EQ_INT(e.status, 405);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/web/app.js", "x=1", &r, &e), -1);
    CHECK_EQ_INT(e.status, 400);
    for (unsigned i = 0; i < trove__web_nassets; i++) {
        const struct trove__web_asset *a = &trove__web_assets[i];
        FILE *f;
        long n;
        unsigned char *want;
        snprintf(path, sizeof path, "/web/%s", a->name);
        CHECK_EQ_INT(trove__api_route(TROVE__GET, path, NULL, &r, &e), 0);
        CHECK_EQ_INT(r.route, TROVE__R_ASSET);
        CHECK_EQ_INT(r.asset, (int)i);
        CHECK(strchr(a->name, '/') == NULL && a->name[0] != '.');
        CHECK(i == 0 || strcmp(trove__web_assets[i - 1].name, a->name) < 0);
        snprintf(path, sizeof path, "%s/web/%s", TROVE_SOURCE_DIR, a->name);
        f = fopen(path, "rb");
        CHECK(f != NULL);
        if (!f)
            continue;
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        rewind(f);
        want = malloc((size_t)n + 1);
        CHECK(want && fread(want, 1, (size_t)n, f) == (size_t)n);
        CHECK_EQ_INT(a->len, n);
        CHECK(want && a->len == (size_t)n && memcmp(want, a->data, a->len) == 0);
        free(want);
        fclose(f);
    }
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        CHECK_EQ_INT(trove__api_route(TROVE__GET, refused[i], NULL, &r, &e), -1);
        CHECK_EQ_INT(e.status, 404);
    }
    CHECK(trove__web_asset_find(NULL, NULL) == NULL);
    CHECK(trove__web_asset_find("", NULL) == NULL);
}


/* /api/captures/NAME/profile: a range and a limit (1 .. 500, 50 without one), nothing else. */
static void test_router_profile(void)
{
    static const char *const bad[] = {"limit=0", "limit=501", "limit=-1", "limit=", "limit=5x",
                                      "from_ns=x", "from_ns=5&to_ns=4", "format=bundle",
                                      "capture=g", "to_ns=18446744073709551616"};
    struct trove__api_req r;
    struct trove__api_error e;

    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/hot/profile", NULL, &r, &e), 0);
    CHECK(r.route == TROVE__R_PROFILE && !strcmp(r.name, "hot") && r.from_ns == 0 &&
          r.to_ns == UINT64_MAX && r.limit == 50);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/hot/profile",
                                  "from_ns=10&to_ns=20&limit=500", &r, &e), 0);
    CHECK(r.route == TROVE__R_PROFILE && r.from_ns == 10 && r.to_ns == 20 && r.limit == 500);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/hot/profile", bad[i], &r, &e), -1);
        CHECK_EQ_INT(e.status, 400);
    }
    CHECK_EQ_INT(trove__api_route(TROVE__POST, "/api/captures/hot/profile", NULL, &r, &e), -1);
    CHECK_EQ_INT(e.status, 405);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/../profile", NULL, &r, &e), -1);
    CHECK_EQ_INT(e.status, 400);
    /* a limit belongs to the profile only */
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/hot/export", "limit=5", &r, &e), -1);
    CHECK_EQ_INT(e.status, 400);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/hot/profiles", NULL, &r, &e), -1);
}

/* The find parameters: stats' clip=, events' match=, order=start_desc and the duration
 * window, each only where it belongs and only in its range. */
static void test_router_find(void)
{
    static const char *const bad_stats[] = {"clip=2", "clip=", "clip=1&clip=1", "match=1",
                                            "min_dur_ns=5"};
    static const char *const bad_events[] = {"name=a&match=yes", "name=a&order=end",
                                             "name=a&min_dur_ns=x", "name=a&clip=1",
                                             "name=a&match=1&match=1",
                                             "name=a&max_dur_ns=18446744073709551616",
                                             "name=a&ids=1", "ids=1,x", "ids=", "ids=1&match=1",
                                             "ids=4294967296", "order=start", "ids=1&ids=2"};
    struct trove__api_req r;
    struct trove__api_error e;

    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/stats", "from_ns=1&to_ns=9&clip=1",
                                  &r, &e), 0);
    CHECK(r.route == TROVE__R_STATS && r.clip == 1 && r.from_ns == 1 && r.to_ns == 9);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/stats", "clip=0", &r, &e), 0);
    CHECK(r.clip == 0);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/events",
                                  "name=run&match=1&order=start_desc&min_dur_ns=10&max_dur_ns=20",
                                  &r, &e), 0);
    CHECK(r.route == TROVE__R_EVENTS && r.match == 1 && r.order == TROVE_FIND_START_DESC &&
          r.min_dur_ns == 10 && r.max_dur_ns == 20 && !strcmp(r.event, "run"));
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/events", "name=run", &r, &e), 0);
    CHECK(r.match == 0 && r.order == TROVE_FIND_START && r.min_dur_ns == 0 && r.max_dur_ns == 0);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/events", "ids=30,2,30&order=start_desc", &r, &e), 0);
    CHECK(r.nids == 2 && r.ids[0] == 2 && r.ids[1] == 30 && !r.has_event);
    for (size_t i = 0; i < sizeof bad_stats / sizeof bad_stats[0]; i++) {
        CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/stats", bad_stats[i], &r, &e), -1);
        CHECK_EQ_INT(e.status, 400);
    }
    for (size_t i = 0; i < sizeof bad_events / sizeof bad_events[0]; i++) {
        CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/events", bad_events[i], &r, &e), -1);
        CHECK_EQ_INT(e.status, 400);
    }
}

/* ---- the table of captures ------------------------------------------------------------ */

/* The store thread sweeps the table while the ingest and web threads join captures: a
 * capture just joined must be in the table and counted, or the sweep drops it in between
 * (a producer's capture then never opened, its data was lost and a stop waited for it
 * for ever; a viewer waited on a capture no producer would find). */
struct sweeper {
    struct trove__server *srv;
    atomic_int done;
    long sweeps;
};

static void *sweep_thread(void *arg)
{
    struct sweeper *s = arg;
    while (!atomic_load(&s->done)) {
        trove__caps_sweep(s->srv);
        s->sweeps++;
    }
    return NULL;
}

static int cap_listed(struct trove__server *srv, const struct trove__cap *c)
{
    int found = 0;
    pthread_mutex_lock(&srv->mu);
    for (const struct trove__cap *o = srv->caps; o && !found; o = o->next)
        found = o == c;
    pthread_mutex_unlock(&srv->mu);
    return found;
}

static void test_caps_join_sweep(void)
{
    enum { ROUNDS = 20000 };
    struct trove__server *srv = calloc(1, sizeof *srv);
    struct sweeper sw;
    pthread_t th;
    int missing = 0, fresh = 0, state = -1;

    CHECK(srv != NULL);
    srv->max_queue = 1u << 20;
    pthread_mutex_init(&srv->mu, NULL);
    memset(&sw, 0, sizeof sw);
    sw.srv = srv;
    atomic_init(&sw.done, 0);
    CHECK_EQ_INT(pthread_create(&th, NULL, sweep_thread, &sw), 0);
    for (int i = 0; i < ROUNDS; i++) {
        char name[32];
        struct trove__cap *c, *again;
        snprintf(name, sizeof name, "c%d", i % 7);
        if (i % 2) { /* a viewer of a capture nobody writes: WAITING, swept when it leaves */
            c = trove__cap_join(srv, name, 0, 0, &state);
            CHECK(c != NULL);
            CHECK(state == TROVE__CAP_WAITING || state == TROVE__CAP_FAILED);
            missing += !cap_listed(srv, c);
            pthread_mutex_lock(&c->mu);
            c->viewers--;
            pthread_mutex_unlock(&c->mu);
        } else { /* a producer: it opens the capture; then the session fails and it leaves */
            c = trove__cap_join(srv, name, 1, 1, &state);
            CHECK(c != NULL);
            CHECK_EQ_INT(state, TROVE__CAP_OPENING);
            missing += !cap_listed(srv, c);
            pthread_mutex_lock(&c->mu);
            CHECK(c->append == 1 && c->producers == 1);
            c->state = TROVE__CAP_FAILED;
            c->producers--;
            pthread_mutex_unlock(&c->mu);
            /* the next producer of the name starts a new session */
            again = trove__cap_join(srv, name, 1, 0, &state);
            CHECK(again != NULL && again != c);
            fresh += again != c;
            missing += !cap_listed(srv, again);
            pthread_mutex_lock(&again->mu);
            CHECK(again->append == 0);
            again->state = TROVE__CAP_FAILED;
            again->producers--;
            pthread_mutex_unlock(&again->mu);
            trove__cap_release(again);
        }
        trove__cap_release(c);
    }
    atomic_store(&sw.done, 1);
    pthread_join(th, NULL);
    trove__caps_sweep(srv); /* what the sweeper's last round came too early for */
    CHECK_EQ_INT(missing, 0);
    CHECK_EQ_INT(fresh, ROUNDS / 2);
    CHECK(sw.sweeps > 0);
    /* what the sweep left: the newest (failed) session of each of the 7 names, nothing counted */
    {
        int n = 0;
        while (srv->caps) {
            struct trove__cap *c = srv->caps;
            srv->caps = c->next;
            CHECK(c->state == TROVE__CAP_FAILED && c->producers == 0 && c->viewers == 0);
            CHECK_EQ_INT((int)atomic_load(&c->refs), 1);
            trove__cap_release(c);
            n++;
        }
        CHECK_EQ_INT(n, 7);
    }
    pthread_mutex_destroy(&srv->mu);
    free(srv);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_framer_splits);
    RUN(test_framer_header_hook);
    RUN(test_framer_refuses);
    RUN(test_hello);
    RUN(test_clock);
    RUN(test_fanout_formats);
    RUN(test_fanout_slow_viewer);
    RUN(test_fanout_threads);
    RUN(test_caps_join_sweep);
    RUN(test_remap);
    RUN(test_remap_bytes);
    RUN(test_answers);
    RUN(test_router_assets);
    RUN(test_router_profile);
    RUN(test_router_find);
    return test_done();
}
