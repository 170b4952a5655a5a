/*
 * test_flows_v2.c: the flows object of version 2, flow rows coded against the events they
 * join (src/codec/flows_events.c, docs/formats/flows.md).
 *
 * The golden vector tests/vectors/flows_v2.bin with every stream where the format document
 * puts it; round trips of random rows over random events (threads with and without events,
 * times before, inside and after them, at the ends of the clock, ids and names that repeat and
 * jump) through the stored and the zstd path, with determinism; what the encoder saves on rows
 * that sit on their events; and bad objects built stream by stream — each check of the
 * decoder, with the caller's rows untouched. Each bad object is also a seed of
 * fuzz/corpus/fuzz_flows (TROVE_FLOWS_CORPUS=dir writes them).
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "trove/digest.h"
#include "trove/flows.h"
#include "trove/wire_format.h"

#define V2_FIXED 80u

static void corpus_write(const char *name, const uint8_t *buf, size_t len)
{
    test_corpus_write("TROVE_FLOWS_CORPUS", name, NULL, 0, buf, len);
}

static void seal(uint8_t *buf, size_t len)
{
    trove__put_le64(buf + len - 8, trove_checksum64(buf, len - 8));
}

/* The golden capture: two threads of (1, 2) and (1, 3), four events. */
static const struct trove_event golden_events[] = {
    {1000, 5000, 1, 2, 0, 0, 0, 0, 0},
    {2000, 1000, 1, 2, 0, 1, 0, 0, 1},
    {1500, 3000, 1, 3, 0, 0, 0, 0, 2},
    {7000, 1000, 1, 3, 0, 0, 0, 0, 3},
};

static const struct trove_flow golden_rows[] = {
    {1000, 1, 1, 2, 5, TROVE_FLOW_START, TROVE_FLOW_ENCLOSING, {0, 0}}, /* event 0, at its start */
    {2500, 1, 1, 3, 5, TROVE_FLOW_STEP, TROVE_FLOW_ENCLOSING, {0, 0}},  /* event 2, 1 µs in */
    {6000, 1, 1, 3, 5, TROVE_FLOW_END, 0, {0, 0}},                      /* event 3, 1 µs before */
    {3000, 2, 9, 9, 6, TROVE_FLOW_START, TROVE_FLOW_ENCLOSING, {0, 0}}, /* no events: free */
    {2000, 2, 1, 2, 7, TROVE_FLOW_END, TROVE_FLOW_ENCLOSING, {0, 0}},   /* event 1, its own name */
};

static int same_rows(const struct trove_flows *a, const struct trove_flow *b, size_t n)
{
    return a->len == n && (n == 0 || !memcmp(a->f, b, n * sizeof *b));
}

static void test_golden(void)
{
    static const uint8_t streams[] = {
        0x04, 0x05, 0x02, 0x0c, 0x06, /* kind: phase | flags << 2 | free << 3 */
        0x00, 0x02, 0x02, 0x00, 0x02, /* flow: zigzag(maxid + 1 - id): new, 1, 1, new, 1 */
        0x06, 0x00, 0x00, 0x07, 0x08, /* name: 5 + 1, its flow's, its flow's, 6 + 1, 7 + 1 */
        0x00, 0x04, 0x02, 0x03,       /* event: 0, +2, +1, -2 */
        0x00, 0x02, 0x01, 0x00,       /* offset in units of 1000: 0, +1, -1, 0 */
        0xf0, 0x2e, 0x09, 0x09,       /* free: zigzag(3000), pid 9, tid 9 */
    };
    static const uint32_t lens[6] = {5, 5, 5, 4, 4, 4};
    struct trove_bytes g = {0}, again = {0};
    struct trove_flows back = {0};
    struct trove_flows_events ev;

    CHECK_EQ_INT(trove_flows_encode_events(golden_rows, 5, golden_events, 4, &g), TROVE_OK);
    test_check_vector("flows_v2.bin", g.ptr, g.len);
    corpus_write("v2-golden.bin", g.ptr, g.len);
    CHECK_EQ_INT(g.len, V2_FIXED + sizeof streams + 8);
    CHECK(!memcmp(g.ptr, "TROVFLW1", 8));
    CHECK_EQ_INT(trove__get_le32(g.ptr + 8), 2);
    CHECK_EQ_INT(trove__get_le32(g.ptr + 12), 0);
    CHECK_EQ_INT(trove__get_le64(g.ptr + 16), 5);
    CHECK_EQ_INT(trove__get_le64(g.ptr + 24), 4);
    CHECK_EQ_INT(trove__get_le64(g.ptr + 32), 1000);
    CHECK_EQ_INT(trove__get_le64(g.ptr + 40), sizeof streams);
    CHECK_EQ_INT(trove__get_le64(g.ptr + 48), sizeof streams); /* too short for zstd: stored */
    for (int k = 0; k < 6; k++)
        CHECK_EQ_INT(trove__get_le32(g.ptr + 56 + 4 * k), lens[k]);
    CHECK(g.len >= V2_FIXED + sizeof streams && !memcmp(g.ptr + V2_FIXED, streams, sizeof streams));
    CHECK(trove__get_le64(g.ptr + g.len - 8) == trove_checksum64(g.ptr, g.len - 8));

    trove_flows_events_of(&ev, golden_events, 4);
    CHECK_EQ_INT(trove_flows_decode_events(g.ptr, g.len, &ev, &back, NULL), TROVE_OK);
    CHECK(same_rows(&back, golden_rows, 5));
    /* the same rows and events, the same bytes */
    CHECK_EQ_INT(trove_flows_encode_events(golden_rows, 5, golden_events, 4, &again), TROVE_OK);
    CHECK(again.len == g.len && !memcmp(again.ptr, g.ptr, g.len));
    /* without events a version 2 object cannot be read; version 1's path still can */
    CHECK_EQ_INT(trove_flows_decode(g.ptr, g.len, &back, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(back.len, 5);
    trove_flows_free(&back);
    trove_bytes_free(&g);
    trove_bytes_free(&again);
}

/* Random events on threads (1, 1..6) and rows on threads (1, 1..8): 7 and 8 have none. */
static void random_case(uint64_t seed, size_t nev, size_t nrows, int extremes)
{
    struct trove_event *e = calloc(nev ? nev : 1, sizeof *e);
    struct trove_flow *r = calloc(nrows ? nrows : 1, sizeof *r);
    struct trove_bytes a = {0}, b = {0}, v1 = {0};
    struct trove_flows back = {0};
    struct trove_flows_events ev;
    uint64_t st = seed, t = 1000000;

    CHECK(e && r);
    for (size_t i = 0; i < nev; i++) {
        t += test_rand(&st) % 5000;
        e[i].start_ns = t / 1000 * 1000;
        e[i].dur_ns = test_rand(&st) % 100000;
        e[i].pid = 1;
        e[i].tid = 1 + (uint32_t)(test_rand(&st) % 6);
        e[i].name_id = (uint32_t)(test_rand(&st) % 50);
    }
    for (size_t i = 0; i < nrows; i++) {
        uint64_t x = test_rand(&st);
        r[i].ts_ns = nev ? e[x % nev].start_ns + (test_rand(&st) % 7 == 0 ? 0 : x % 3000) : x;
        if (extremes && x % 11 == 0)
            r[i].ts_ns = x % 2 ? UINT64_MAX - x % 3 : x % 3;
        r[i].id = 1 + test_rand(&st) % (i / 2 + 1);
        if (extremes && x % 13 == 0)
            r[i].id = UINT64_MAX - x % 5;
        r[i].pid = 1;
        r[i].tid = 1 + (uint32_t)(test_rand(&st) % 8);
        r[i].name_id = x % 17 == 0 ? UINT32_MAX : (uint32_t)(r[i].id % 9);
        r[i].phase = (uint8_t)(test_rand(&st) % 3);
        r[i].flags = (uint8_t)(test_rand(&st) % 2);
    }
    CHECK_EQ_INT(trove_flows_encode_events(r, nrows, e, nev, &a), TROVE_OK);
    CHECK_EQ_INT(trove_flows_encode_events(r, nrows, e, nev, &b), TROVE_OK);
    CHECK(a.len == b.len && !memcmp(a.ptr, b.ptr, a.len));
    trove_flows_events_of(&ev, e, nev);
    CHECK_EQ_INT(trove_flows_decode_events(a.ptr, a.len, &ev, &back, NULL), TROVE_OK);
    CHECK(same_rows(&back, r, nrows));
    /* version 1 of the same rows, read through the same way in */
    CHECK_EQ_INT(trove_flows_encode(r, nrows, &v1), TROVE_OK);
    back.len = 0;
    CHECK_EQ_INT(trove_flows_decode_events(v1.ptr, v1.len, &ev, &back, NULL), TROVE_OK);
    CHECK(same_rows(&back, r, nrows));
    trove_flows_free(&back);
    trove_bytes_free(&a);
    trove_bytes_free(&b);
    trove_bytes_free(&v1);
    free(e);
    free(r);
}

static void test_round_trip(void)
{
    random_case(1, 0, 0, 0);
    random_case(2, 0, 40, 1);     /* no events at all: every row free */
    random_case(3, 1, 40, 1);
    random_case(4, 200, 300, 1);
    random_case(5, 50000, 20000, 0); /* large enough for zstd to shrink the streams */
    random_case(6, 50000, 20000, 1);
    for (uint64_t s = 10; s < 40; s++)
        random_case(s, (size_t)(s * 37 % 500), (size_t)(s * 53 % 400), (int)(s & 1));
}

/* Rows that sit on their events' starts, as a Chrome trace's bind_id flows do: version 2
 * codes them in a fraction of version 1's bytes (an event index delta instead of a time,
 * a thread and an id each). */
static void test_smaller(void)
{
    enum { NEV = 20000, NROWS = 4000 };
    struct trove_event *e = calloc(NEV, sizeof *e);
    struct trove_flow *r = calloc(NROWS, sizeof *r);
    struct trove_bytes v1 = {0}, v2 = {0};
    uint64_t st = 77;

    CHECK(e && r);
    for (size_t i = 0; i < NEV; i++) {
        e[i].start_ns = 1000000 + i * 7000 + test_rand(&st) % 5 * 1000;
        e[i].pid = 100 + (uint32_t)(i % 4);
        e[i].tid = 200 + (uint32_t)(test_rand(&st) % 16);
        e[i].dur_ns = 3000;
    }
    for (size_t i = 0; i < NROWS; i++) {
        const struct trove_event *x = &e[i * 5 + test_rand(&st) % 5];
        r[i] = (struct trove_flow){x->start_ns, 1 + i / 2, x->pid, x->tid, 3,
                                   (uint8_t)(i % 2 ? TROVE_FLOW_END : TROVE_FLOW_START),
                                   TROVE_FLOW_ENCLOSING, {0, 0}};
    }
    CHECK_EQ_INT(trove_flows_encode(r, NROWS, &v1), TROVE_OK);
    CHECK_EQ_INT(trove_flows_encode_events(r, NROWS, e, NEV, &v2), TROVE_OK);
    CHECK(v2.len * 2 < v1.len);
    trove_bytes_free(&v1);
    trove_bytes_free(&v2);
    free(e);
    free(r);
}

/* ---- bad objects ------------------------------------------------------------------------- */

static struct trove_flows_events bad_ev;
static int get_calls;

static int failing_get(void *ctx, uint64_t index, struct trove_event *out, struct trove_diag *diag)
{
    (void)ctx;
    (void)index;
    (void)out;
    get_calls++;
    return trove_diag_set(diag, TROVE_ERR_CHECKSUM, 0, "segment 0 is damaged");
}

static int decode(const uint8_t *buf, size_t len, void *out, struct trove_diag *diag)
{
    return trove_flows_decode_events(buf, len, &bad_ev, out, diag);
}

static void expect_bad(const uint8_t *buf, size_t len, int want, uint64_t off, const char *needle,
                       const char *what)
{
    test_expect_decode_error(decode, sizeof(struct trove_flows), buf, len, want, off, needle, what);
}

/* A stored version 2 object of `rows` rows over `nev` events in unit `unit`, its six streams
 * given one by one (NULL, 0 for an empty one); returns its length. */
static size_t object(uint8_t *out, uint64_t rows, uint64_t nev, uint64_t unit,
                     const uint8_t *const s[6], const size_t n[6])
{
    size_t raw = 0, at = V2_FIXED;
    for (int k = 0; k < 6; k++)
        raw += n[k];
    memcpy(out, "TROVFLW1", 8);
    trove__put_le32(out + 8, 2);
    trove__put_le32(out + 12, 0);
    trove__put_le64(out + 16, rows);
    trove__put_le64(out + 24, nev);
    trove__put_le64(out + 32, unit);
    trove__put_le64(out + 40, raw);
    trove__put_le64(out + 48, raw);
    for (int k = 0; k < 6; k++) {
        trove__put_le32(out + 56 + 4 * k, (uint32_t)n[k]);
        if (n[k])
            memcpy(out + at, s[k], n[k]);
        at += n[k];
    }
    seal(out, at + 8);
    return at + 8;
}

/* One bound row (event `ev_code`, offset `off_code`) with the given kind, flow and name. */
static size_t one_row(uint8_t *out, uint8_t kind, const uint8_t *flow, size_t nflow,
                      const uint8_t *name, size_t nname, const uint8_t *event, size_t nevent,
                      const uint8_t *off, size_t noff, const uint8_t *free_, size_t nfree)
{
    const uint8_t *s[6] = {&kind, flow, name, event, off, free_};
    const size_t n[6] = {1, nflow, nname, nevent, noff, nfree};
    return object(out, 1, 4, 1000, s, n);
}

static void test_bad(void)
{
    static uint8_t work[1024];
    static const uint8_t z = 0x00, two = 0x02, cut[] = {0x80}, wide_name[] = {0x82, 0x80, 0x80,
                                                                               0x80, 0x10};
    static const uint8_t far[] = {0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    struct trove_bytes g = {0};
    struct trove_flows out = {0};
    size_t n;

    trove_flows_events_of(&bad_ev, golden_events, 4);
    CHECK_EQ_INT(trove_flows_encode_events(golden_rows, 5, golden_events, 4, &g), TROVE_OK);
    n = g.len;
    CHECK(n < sizeof work);
    for (size_t len = 0; len < n; len++)
        expect_bad(g.ptr, len, len < 48 ? TROVE_ERR_TRUNCATED : TROVE_ERR_CHECKSUM, UINT64_MAX,
                   NULL, "prefix");
    for (size_t i = 12; i < n; i++) { /* a flipped bit anywhere: the checksum says so */
        memcpy(work, g.ptr, n);
        work[i] ^= 0x40;
        expect_bad(work, n, TROVE_ERR_CHECKSUM, n - 8, "checksum", "flipped bit");
    }
    /* the header's fields, the checksum made right */
    memcpy(work, g.ptr, n);
    trove__put_le32(work + 12, 4);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 12, "version 2 defines none", "flags");
    memcpy(work, g.ptr, n);
    trove__put_le64(work + 16, TROVE_FLOWS_MAX + 1);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_LIMIT, 16, "over the limit", "rows over the limit");
    corpus_write("v2-rows-over-limit.bin", work, n);
    memcpy(work, g.ptr, n);
    trove__put_le64(work + 24, 5);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 24, "its capture has 4", "another capture's events");
    memcpy(work, g.ptr, n);
    trove__put_le64(work + 32, 0);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 32, "unit is 0", "unit 0");
    memcpy(work, g.ptr, n);
    trove__put_le64(work + 40, 1ull << 40); /* a huge stream size: refused, not allocated */
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 40, "cannot take", "raw_len huge");
    corpus_write("v2-raw-len-huge.bin", work, n);
    memcpy(work, g.ptr, n);
    trove__put_le32(work + 56, 4); /* the kinds are not a byte a row */
    trove__put_le32(work + 60, 6);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 40, "cannot take", "kind stream short");
    memcpy(work, g.ptr, n);
    trove__put_le32(work + 76, 5); /* the lengths do not add up to raw_len */
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 40, "cannot take", "lengths past raw_len");
    memcpy(work, g.ptr, n);
    trove__put_le64(work + 48, 26);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 48, "packed bytes", "packed_len");
    memcpy(work, g.ptr, n); /* says it is a zstd frame (1 byte longer raw), but is not one */
    trove__put_le64(work + 40, 28);
    trove__put_le32(work + 76, 5);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, V2_FIXED, "zstd", "not a zstd frame");
    corpus_write("v2-bad-zstd.bin", work, n);
    memcpy(work, g.ptr, n); /* 27 packed bytes cannot give 300,000 */
    trove__put_le64(work + 16, 100000);
    trove__put_le64(work + 40, 300000);
    for (int k = 0; k < 6; k++)
        trove__put_le32(work + 56 + 4 * k, k < 3 ? 100000 : 0);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_BOMB, 40, "over 1024 times", "a bomb");
    corpus_write("v2-bomb.bin", work, n);

    /* rows built stream by stream */
    n = one_row(work, 0x04, &z, 1, &two, 1, &z, 1, &z, 1, NULL, 0);
    CHECK_EQ_INT(trove_flows_decode_events(work, n, &bad_ev, &out, NULL), TROVE_OK);
    CHECK(out.len == 1 && out.f[0].ts_ns == 1000 && out.f[0].id == 1 && out.f[0].pid == 1 &&
          out.f[0].tid == 2 && out.f[0].name_id == 1 && out.f[0].flags == 1);
    trove_flows_free(&out);
    corpus_write("v2-one-row.bin", work, n);
    n = one_row(work, 0x03, &z, 1, &z, 1, &z, 1, &z, 1, NULL, 0);
    expect_bad(work, n, TROVE_ERR_CORRUPT, V2_FIXED, "kind 0x03", "phase 3");
    n = one_row(work, 0x10, &z, 1, &z, 1, &z, 1, &z, 1, NULL, 0);
    expect_bad(work, n, TROVE_ERR_CORRUPT, V2_FIXED, "kind 0x10", "kind past the free bit");
    n = one_row(work, 0x00, &two, 1, &z, 1, &z, 1, &z, 1, NULL, 0); /* maxid 0 + 1 - 1 = 0 */
    expect_bad(work, n, TROVE_ERR_CORRUPT, V2_FIXED, "id 0", "id 0");
    n = one_row(work, 0x00, &z, 1, wide_name, sizeof wide_name, &z, 1, &z, 1, NULL, 0);
    expect_bad(work, n, TROVE_ERR_CORRUPT, V2_FIXED, "past 2^32", "name past 32 bits");
    n = one_row(work, 0x00, &z, 1, &z, 1, (const uint8_t[]){0x08}, 1, &z, 1, NULL, 0);
    expect_bad(work, n, TROVE_ERR_CORRUPT, V2_FIXED, "names event 4 of 4", "event past the end");
    corpus_write("v2-event-past.bin", work, n);
    n = one_row(work, 0x00, &z, 1, &z, 1, &z, 1, (const uint8_t[]){0x03}, 1, NULL, 0);
    expect_bad(work, n, TROVE_ERR_CORRUPT, V2_FIXED, "outside the clock", "before time 0");
    n = one_row(work, 0x00, &z, 1, &z, 1, &z, 1, far, sizeof far, NULL, 0);
    expect_bad(work, n, TROVE_ERR_CORRUPT, V2_FIXED, "outside the clock", "an offset too far back");
    n = one_row(work, 0x00, &z, 1, &z, 1, cut, 1, &z, 1, NULL, 0);
    expect_bad(work, n, TROVE_ERR_TRUNCATED, V2_FIXED, "event runs past", "cut event varint");
    corpus_write("v2-cut.bin", work, n);
    n = one_row(work, 0x00, &z, 1, &z, 1, &z, 1, NULL, 0, NULL, 0);
    expect_bad(work, n, TROVE_ERR_TRUNCATED, V2_FIXED, "offset runs past", "no offset");
    n = one_row(work, 0x08, &z, 1, &z, 1, NULL, 0, NULL, 0, (const uint8_t[]){0x02, 0x01}, 2);
    expect_bad(work, n, TROVE_ERR_TRUNCATED, V2_FIXED, "free runs past", "free row cut");
    n = one_row(work, 0x08, &z, 1, &z, 1, NULL, 0, NULL, 0,
                (const uint8_t[]){0x02, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x01}, 7);
    expect_bad(work, n, TROVE_ERR_VARINT, V2_FIXED, "not a valid varint", "pid past 32 bits");
    n = one_row(work, 0x00, &z, 1, &z, 1, (const uint8_t[]){0x00, 0x00}, 2, &z, 1, NULL, 0);
    expect_bad(work, n, TROVE_ERR_CORRUPT, V2_FIXED, "event stream follow", "left in a stream");
    corpus_write("v2-extra.bin", work, n);
    /* the events' reader fails: its error is the decoder's, nothing appended */
    n = one_row(work, 0x00, &z, 1, &z, 1, &z, 1, &z, 1, NULL, 0);
    bad_ev.get = failing_get;
    get_calls = 0;
    expect_bad(work, n, TROVE_ERR_CHECKSUM, UINT64_MAX, "damaged", "events unreadable");
    CHECK(get_calls > 0);
    trove_flows_events_of(&bad_ev, golden_events, 4);
    /* the encoder's own refusals */
    {
        struct trove_flow bad = golden_rows[0];
        bad.id = 0;
        CHECK_EQ_INT(trove_flows_encode_events(&bad, 1, golden_events, 4, &g), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_flows_encode_events(golden_rows, 5, NULL, 4, &g), TROVE_ERR_INVALID);
    }
    trove_bytes_free(&g);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_golden);
    RUN(test_round_trip);
    RUN(test_smaller);
    RUN(test_bad);
    return test_done();
}
