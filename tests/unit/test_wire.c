/*
 * test_wire.c: the wire codecs — round trips of random and edge-case batches in every
 * format, the golden vectors in tests/vectors/, names frames (version 1, and version 2
 * with sort indexes), and every class of bad input the decoder must refuse with its own
 * error code.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/wire_internal.h"
#include "testutil.h"
#include "trove/gen.h"
#include "trove/wire.h"

static struct trove_wire_encoder *enc;
static struct trove_wire_decoder *dec;
static struct trove_event out_ev[TROVE_WIRE_MAX_EVENTS];

#define N_FORMATS 5
static const int formats[N_FORMATS] = {TROVE_WIRE_RAW, TROVE_WIRE_PACKED, TROVE_WIRE_DEFLATE,
                                       TROVE_WIRE_COLUMNAR, TROVE_WIRE_MODEL};

/* Encode ev[0..n) as `format` and decode it (into the frame's own format). */
static void roundtrip_format(const struct trove_event *ev, size_t n, int format)
{
    struct trove_bytes b = {0};
    struct trove_wire_frame fr;
    struct trove_diag diag = {0};
    CHECK_EQ_INT(trove_wire_encode(enc, format, ev, n, &b), TROVE_OK);
    CHECK_EQ_INT(trove_wire_decode(dec, b.ptr, b.len, out_ev, TROVE_WIRE_MAX_EVENTS, NULL, &fr, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(fr.n_events, n);
    if (n)
        CHECK(memcmp(out_ev, ev, n * sizeof *ev) == 0);
    trove_bytes_free(&b);
}

/* Encode ev[0..n) in every format, decode each, and compare. */
static void roundtrip(const struct trove_event *ev, size_t n, const char *what)
{
    for (int f = 0; f < N_FORMATS; f++) {
        struct trove_bytes b = {0};
        struct trove_wire_frame fr;
        struct trove_diag diag = {0};
        int rc = trove_wire_encode(enc, formats[f], ev, n, &b);
        CHECK_EQ_INT(rc, TROVE_OK);
        rc = trove_wire_decode(dec, b.ptr, b.len, out_ev, TROVE_WIRE_MAX_EVENTS, NULL, &fr, &diag);
        if (rc != TROVE_OK)
            fprintf(stderr, "%s/%s: %s\n", what, trove_wire_format_name(formats[f]), diag.msg);
        CHECK_EQ_INT(rc, TROVE_OK);
        CHECK_EQ_INT(fr.n_events, n);
        CHECK_EQ_INT(fr.frame_len, b.len);
        CHECK_EQ_INT(fr.format, formats[f]);
        if (n)
            CHECK(memcmp(out_ev, ev, n * sizeof *ev) == 0);
        trove_bytes_free(&b);
    }
    roundtrip_format(ev, n, TROVE_WIRE_COLUMNAR_DEFLATE);
}

static void random_batch(struct trove_event *ev, size_t n, uint64_t *seed, uint32_t threads,
                         int wild)
{
    uint64_t t = 400000000000000ULL;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = test_rand(seed);
        uint32_t th = (uint32_t)(r % threads);
        t += test_rand(seed) % 20000;
        ev[i].start_ns = wild && r % 7 == 0 ? t - test_rand(seed) % 100000 : t; /* out of order */
        ev[i].dur_ns = r % 5 == 0 ? 0 : test_rand(seed) % 3000000;
        ev[i].pid = 1000 + th / 8;
        ev[i].tid = 5000 + th;
        ev[i].kind = (uint8_t)(r >> 8) % 5;
        ev[i].depth = (uint8_t)(r >> 16) % 12;
        ev[i].extra = (uint8_t)(r >> 24);
        ev[i].pad = 0;
        ev[i].name_id = (uint32_t)(r >> 32) % 65536;
        if (wild && r % 11 == 0) { /* extremes */
            ev[i].start_ns = UINT64_MAX - (r % 3);
            ev[i].dur_ns = UINT64_MAX;
            ev[i].pid = UINT32_MAX;
            ev[i].tid = UINT32_MAX - th;
            ev[i].name_id = UINT32_MAX;
            ev[i].kind = ev[i].depth = ev[i].extra = 255;
        }
    }
}

static void test_roundtrips(void)
{
    static struct trove_event ev[TROVE_WIRE_MAX_EVENTS];
    uint64_t seed = 42;
    struct trove_event one = {123456789, 0, 1, 2, 0, 0, 0, 0, 7};

    roundtrip(ev, 0, "empty");
    roundtrip(&one, 1, "one");
    random_batch(ev, 2048, &seed, 12, 0);
    roundtrip(ev, 2048, "2048 events, 12 threads");
    random_batch(ev, 2048, &seed, 12, 1);
    roundtrip(ev, 2048, "2048 events, extremes and out-of-order starts");
    random_batch(ev, 2048, &seed, 300, 1);
    roundtrip(ev, 2048, "300 threads");
    random_batch(ev, 5000, &seed, 1000, 0);
    roundtrip(ev, 5000, "1000 threads");
    random_batch(ev, TROVE_WIRE_MAX_EVENTS, &seed, 70000, 1);
    roundtrip(ev, TROVE_WIRE_MAX_EVENTS, "max events, every event its own thread");
    /* exactly 256 and 257 threads: the edge of the escape */
    for (uint32_t th = 255; th <= 258; th++) {
        for (size_t i = 0; i < 1024; i++) {
            ev[i] = (struct trove_event){1000 * i, i, 7, (uint32_t)(i % th), 0, 0, 0, 0, (uint32_t)i};
        }
        roundtrip(ev, 1024, "255..258 threads");
    }
    /* The largest (pid, tid) key first in a batch (a fuzzer find: it once matched the
     * encoder's "no previous thread" sentinel and skipped the thread table). */
    {
        struct trove_event m[2] = {{5, 1, UINT32_MAX, UINT32_MAX, 0, 0, 0, 0, 1},
                                   {6, 1, 1, 2, 0, 0, 0, 0, 1}};
        roundtrip(m, 2, "max thread key first");
        roundtrip(m, 1, "max thread key alone");
    }
    /* A start that goes backwards costs a sign bit: one event 1 ns before the previous. */
    {
        struct trove_event two[2] = {{1000, 0, 1, 1, 0, 0, 0, 0, 0}, {999, 0, 1, 1, 0, 0, 0, 0, 0}};
        struct trove_bytes b = {0};
        CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_PACKED, two, 2, &b), TROVE_OK);
        /* header 16 + table (1 + 1 + 1) + event 1 (1 + 2 + 1 + 1 + 3) + event 2 (1 + 1 + ...) */
        CHECK_EQ_INT(b.len, 16 + 3 + 8 + 7);
        roundtrip(two, 2, "backwards");
        trove_bytes_free(&b);
    }
}

/* The fixed small batch behind the golden vectors (docs/formats/wire.md shows it). */
static const struct trove_event golden[5] = {
    {1000000000000ULL, 5000, 100, 101, TROVE_KIND_ZONE, 0, 0, 0, 0},
    {1000000002500ULL, 1200, 100, 101, TROVE_KIND_ZONE, 1, 0, 0, 1},
    {1000000004000ULL, 0, 100, 102, TROVE_KIND_INSTANT, 0, TROVE_SCOPE_THREAD, 0, 2},
    {1000000003000ULL, 300, 200, 201, TROVE_KIND_ZONE, 0, 0, 0, 300},
    {1000000010000ULL, 70000, 100, 101, TROVE_KIND_ZONE, 0, 3, 0, 0},
};

static int golden_names(struct trove_names **out)
{
    struct trove_names *n;
    if (trove_names_new(&n) != TROVE_OK)
        return -1;
    trove_names_set(n, TROVE_NAME_EVENT, 0, 0, "frame", 5);
    trove_names_set(n, TROVE_NAME_EVENT, 1, 0, "layout", 6);
    trove_names_set(n, TROVE_NAME_EVENT, 2, 0, "mark", 4);
    trove_names_set(n, TROVE_NAME_EVENT, 300, 0, "gc \xc3\xa9", 5);
    trove_names_set(n, TROVE_NAME_THREAD, 100, 101, "main", 4);
    trove_names_set(n, TROVE_NAME_PROCESS, 100, 0, "app", 3);
    *out = n;
    return 0;
}

static void test_golden(void)
{
    /* (the model vector's streams are too short for zstd to shrink: stored as they are, so
     * its bytes do not depend on the zstd library) */
    static const char *files[N_FORMATS] = {"wire_raw.bin", "wire_packed.bin", "wire_deflate.bin",
                                           "wire_columnar.bin", "wire_model.bin"};
    struct trove_names *names = NULL, *got = NULL;
    struct trove_bytes b = {0};
    struct trove_wire_frame fr;
    struct trove_diag diag;

    for (int f = 0; f < N_FORMATS; f++) {
        char path[1024];
        size_t len = 0;
        uint8_t *want;
        b.len = 0;
        CHECK_EQ_INT(trove_wire_encode(enc, formats[f], golden, 5, &b), TROVE_OK);
        if (formats[f] != TROVE_WIRE_DEFLATE || getenv("TROVE_REGEN_VECTORS"))
            test_check_vector(files[f], b.ptr, b.len);
        /* Every vector decodes to the batch. The deflate vector's exact bytes depend on the
         * compressor; what is frozen is that it decodes, and that its inflated payload is the
         * packed vector's payload (checked through the decode). */
        snprintf(path, sizeof path, "%s/tests/vectors/%s", TROVE_SOURCE_DIR, files[f]);
        want = test_read_file(path, &len);
        CHECK(want != NULL);
        if (!want)
            continue;
        CHECK_EQ_INT(trove_wire_decode(dec, want, len, out_ev, 16, NULL, &fr, &diag), TROVE_OK);
        CHECK_EQ_INT(fr.n_events, 5);
        CHECK(memcmp(out_ev, golden, sizeof golden) == 0);
        free(want);
    }
    CHECK_EQ_INT(golden_names(&names), 0);
    b.len = 0;
    CHECK_EQ_INT(trove_wire_encode_names(names, 0, 100, &b), TROVE_OK);
    test_check_vector("wire_names.bin", b.ptr, b.len);
    CHECK_EQ_INT(trove_names_new(&got), TROVE_OK);
    CHECK_EQ_INT(trove_wire_decode(dec, b.ptr, b.len, out_ev, 16, got, &fr, &diag), TROVE_OK);
    CHECK_EQ_INT(fr.n_names, 6);
    CHECK_EQ_INT(trove_names_count(got), 6);
    CHECK(strcmp(trove_names_get(got, TROVE_NAME_EVENT, 300, 0, NULL), "gc \xc3\xa9") == 0);
    CHECK(strcmp(trove_names_get(got, TROVE_NAME_THREAD, 100, 101, NULL), "main") == 0);
    CHECK(strcmp(trove_names_get(got, TROVE_NAME_PROCESS, 100, 0, NULL), "app") == 0);
    CHECK(trove_names_get(got, TROVE_NAME_THREAD, 100, 102, NULL) == NULL);
    /* incremental: entries [4, 6) only */
    b.len = 0;
    CHECK_EQ_INT(trove_wire_encode_names(names, 4, 6, &b), TROVE_OK);
    CHECK_EQ_INT(trove_wire_decode(dec, b.ptr, b.len, out_ev, 16, NULL, &fr, &diag), TROVE_OK);
    CHECK_EQ_INT(fr.n_names, 2);
    trove_names_free(names);
    trove_names_free(got);
    trove_bytes_free(&b);
}

/* The golden names table with sort indexes after it: the first six entries are the version
 * 1 vector's, the rest need version 2. */
static int golden_sort_names(struct trove_names **out)
{
    if (golden_names(out) != 0)
        return -1;
    trove_names_set_sort(*out, TROVE_NAME_PROCESS_SORT, 100, 0, -1);
    trove_names_set_sort(*out, TROVE_NAME_THREAD_SORT, 100, 101, 3);
    trove_names_set_sort(*out, TROVE_NAME_THREAD_SORT, 100, 102, INT32_MIN);
    trove_names_set_sort(*out, TROVE_NAME_PROCESS_SORT, 200, 0, INT32_MAX);
    return 0;
}

/* Names frames with sort indexes: version 2 only when a sort index is in the frame, the
 * golden vector, and the version 1 bytes of a frame without one unchanged. */
static void test_golden_sort(void)
{
    struct trove_names *names = NULL, *got = NULL;
    struct trove_bytes b = {0}, v1 = {0};
    struct trove_wire_frame fr;
    struct trove_diag diag = {0};
    int32_t v = 0;

    CHECK_EQ_INT(golden_sort_names(&names), 0);
    /* entries [0, 6): no sort index, so the version 1 vector's bytes exactly */
    CHECK_EQ_INT(trove_wire_encode_names(names, 0, 6, &v1), TROVE_OK);
    test_check_vector("wire_names.bin", v1.ptr, v1.len);
    CHECK_EQ_INT(v1.ptr[3], TROVE_WIRE_VERSION);
    /* the whole table: version 2 */
    CHECK_EQ_INT(trove_wire_encode_names(names, 0, 100, &b), TROVE_OK);
    test_check_vector("wire_names_v2.bin", b.ptr, b.len);
    CHECK_EQ_INT(b.ptr[3], TROVE_WIRE_NAMES_VERSION);
    CHECK_EQ_INT(trove_names_new(&got), TROVE_OK);
    CHECK_EQ_INT(trove_wire_decode(dec, b.ptr, b.len, out_ev, 16, got, &fr, &diag), TROVE_OK);
    CHECK_EQ_INT(fr.format, TROVE_WIRE_NAMES);
    CHECK_EQ_INT(fr.n_names, 10);
    CHECK_EQ_INT(fr.frame_len, b.len);
    CHECK(trove_names_equal(names, got));
    CHECK(trove_names_get_sort(got, TROVE_NAME_PROCESS_SORT, 100, 0, &v) && v == -1);
    CHECK(trove_names_get_sort(got, TROVE_NAME_THREAD_SORT, 100, 101, &v) && v == 3);
    CHECK(trove_names_get_sort(got, TROVE_NAME_THREAD_SORT, 100, 102, &v) && v == INT32_MIN);
    CHECK(trove_names_get_sort(got, TROVE_NAME_PROCESS_SORT, 200, 0, &v) && v == INT32_MAX);
    CHECK(!trove_names_get_sort(got, TROVE_NAME_THREAD_SORT, 100, 100, &v));
    CHECK(strcmp(trove_names_get(got, TROVE_NAME_THREAD, 100, 101, NULL), "main") == 0);
    /* incremental: the sort indexes alone, version 2; a version 1 frame after them */
    b.len = 0;
    CHECK_EQ_INT(trove_wire_encode_names(names, 6, 10, &b), TROVE_OK);
    CHECK_EQ_INT(b.ptr[3], TROVE_WIRE_NAMES_VERSION);
    CHECK_EQ_INT(trove_wire_decode(dec, b.ptr, b.len, out_ev, 16, NULL, &fr, &diag), TROVE_OK);
    CHECK_EQ_INT(fr.n_names, 4);
    b.len = 0;
    CHECK_EQ_INT(trove_wire_encode_names(names, 3, 6, &b), TROVE_OK);
    CHECK_EQ_INT(b.ptr[3], TROVE_WIRE_VERSION);
    /* a reader takes a version 2 frame that happens to hold names only */
    v1.ptr[3] = TROVE_WIRE_NAMES_VERSION;
    trove_names_free(got);
    CHECK_EQ_INT(trove_names_new(&got), TROVE_OK);
    CHECK_EQ_INT(trove_wire_decode(dec, v1.ptr, v1.len, out_ev, 16, got, &fr, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_names_count(got), 6);
    trove_names_free(names);
    trove_names_free(got);
    trove_bytes_free(&b);
    trove_bytes_free(&v1);
}

/* Decode buf and expect the error `want`; also check the event buffer is the only output. */
static void expect_err(const uint8_t *buf, size_t len, int want, const char *what)
{
    struct trove_wire_frame fr;
    struct trove_diag diag = {0};
    struct trove_names *names = NULL;
    int rc;
    trove_names_new(&names);
    rc = trove_wire_decode(dec, buf, len, out_ev, TROVE_WIRE_MAX_EVENTS, names, &fr, &diag);
    if (rc != want)
        fprintf(stderr, "%s: got %d (%s) want %d\n", what, rc, diag.msg, want);
    CHECK_EQ_INT(rc, want);
    CHECK(diag.msg[0] != 0);
    CHECK_EQ_INT(fr.n_events, 0);
    CHECK_EQ_INT(trove_names_count(names), 0);
    trove_names_free(names);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static void test_bad_input(void)
{
    struct trove_bytes b = {0};
    uint8_t buf[4096];
    size_t len;

    /* Truncated frames: every proper prefix of every format fails, never reads past. */
    for (int f = 0; f < N_FORMATS; f++) {
        b.len = 0;
        trove_wire_encode(enc, formats[f], golden, 5, &b);
        for (size_t cut = 0; cut < b.len; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1); /* exact size, so ASan sees any overread */
            memcpy(copy, b.ptr, cut);
            expect_err(copy, cut, TROVE_ERR_TRUNCATED, "truncated");
            free(copy);
        }
    }
    /* Header checks. */
    b.len = 0;
    trove_wire_encode(enc, TROVE_WIRE_PACKED, golden, 5, &b);
    memcpy(buf, b.ptr, b.len);
    len = b.len;
    buf[0] = 'X';
    expect_err(buf, len, TROVE_ERR_MAGIC, "magic");
    buf[0] = 'T';
    buf[3] = 2;
    expect_err(buf, len, TROVE_ERR_VERSION, "version");
    buf[3] = 1;
    buf[2] = 9;
    expect_err(buf, len, TROVE_ERR_FORMAT, "format");
    buf[2] = TROVE_WIRE_PACKED;
    put32(buf + 4, TROVE_WIRE_MAX_EVENTS + 1);
    expect_err(buf, len, TROVE_ERR_LIMIT, "count over the limit");
    put32(buf + 4, 5);
    put32(buf + 8, TROVE_WIRE_MAX_PAYLOAD + 1);
    expect_err(buf, len, TROVE_ERR_LIMIT, "payload over the limit");
    put32(buf + 8, (uint32_t)(len - 16));

    /* Thread index past the table: golden's packed payload has 3 threads; event 0's index
     * byte follows the table (1 + 3 * 4 bytes: pids and tids are 1-2 byte varints). */
    {
        size_t table_end = 16 + 1;
        for (int t = 0; t < 3; t++) {
            while (buf[table_end] & 0x80)
                table_end++;
            table_end++;
            while (buf[table_end] & 0x80)
                table_end++;
            table_end++;
        }
        buf[table_end] = 3;
        expect_err(buf, len, TROVE_ERR_THREAD, "thread index");
        buf[table_end] = 0;
        /* Varint over 10 bytes: the start delta made of 11 continuation bytes. */
        {
            uint8_t big[64];
            memcpy(big, buf, table_end + 1);
            memset(big + table_end + 1, 0x80, 11);
            big[table_end + 12] = 0;
            memset(big + table_end + 13, 0, 20);
            put32(big + 4, 3);
            put32(big + 8, (uint32_t)(table_end + 33 - 16));
            expect_err(big, table_end + 33, TROVE_ERR_VARINT, "varint over 10 bytes");
            /* A 10-byte varint whose last byte carries more than u64's top bit. */
            memset(big + table_end + 1, 0xff, 9);
            big[table_end + 10] = 0x02;
            expect_err(big, table_end + 33, TROVE_ERR_VARINT, "varint over 64 bits");
        }
        /* Trailing bytes after the last event. */
        memcpy(buf + len, "\0", 1);
        put32(buf + 8, (uint32_t)(len + 1 - 16));
        expect_err(buf, len + 1, TROVE_ERR_CORRUPT, "trailing byte");
    }

    /* Raw: payload must be exactly 32 per event. */
    b.len = 0;
    trove_wire_encode(enc, TROVE_WIRE_RAW, golden, 5, &b);
    memcpy(buf, b.ptr, b.len);
    put32(buf + 4, 4);
    expect_err(buf, b.len, TROVE_ERR_CORRUPT, "raw count mismatch");

    /* Deflate bombs: a declared size over the bound, and a stream inflating past it. */
    b.len = 0;
    trove_wire_encode(enc, TROVE_WIRE_DEFLATE, golden, 5, &b);
    memcpy(buf, b.ptr, b.len);
    put32(buf + 12, (uint32_t)trove_wire_packed_bound(5) + 1);
    expect_err(buf, b.len, TROVE_ERR_BOMB, "declared size over the limit");
    put32(buf + 12, 10); /* the stream holds more than 10 bytes */
    expect_err(buf, b.len, TROVE_ERR_BOMB, "inflates past the declared size");
    {
        /* A real bomb: 64 KiB of zeros deflated, declared as a 2-event frame. */
        struct trove_bytes z = {0};
        static struct trove_event zeros[2048];
        trove_wire_encode(enc, TROVE_WIRE_DEFLATE, zeros, 2048, &z);
        put32(z.ptr + 4, 2);
        put32(z.ptr + 12, (uint32_t)trove_wire_packed_bound(2));
        expect_err(z.ptr, z.len, TROVE_ERR_BOMB, "zero bomb");
        trove_bytes_free(&z);
    }
    /* An empty deflate stream (a final fixed-Huffman block holding only its end code) with
     * raw_len 0 and junk after it: a libFuzzer find, which once reached the packed decoder
     * with a NULL buffer. Junk after the stream is refused. */
    {
        uint8_t e[40] = {'T', 'V', TROVE_WIRE_DEFLATE, 1};
        put32(e + 4, 5);
        put32(e + 8, 8);
        put32(e + 12, 0);
        e[16] = 0x03, e[17] = 0x00; /* the empty final block */
        memset(e + 18, 0x64, 6);
        expect_err(e, 24, TROVE_ERR_CORRUPT, "junk after the deflate stream");
        put32(e + 8, 2);
        expect_err(e, 18, TROVE_ERR_TRUNCATED, "empty inflated payload for 5 events");
        put32(e + 4, 0);
        {
            struct trove_wire_frame fr;
            CHECK_EQ_INT(trove_wire_decode(dec, e, 18, out_ev, 1, NULL, &fr, NULL), TROVE_ERR_TRUNCATED);
        }
    }
    put32(buf + 12, (uint32_t)trove_wire_packed_bound(5));
    memset(buf + 16, 0xff, 4); /* garbage deflate block header */
    expect_err(buf, b.len, TROVE_ERR_INFLATE, "malformed deflate");

    /* Names frames: a length past the end, bad UTF-8, unknown type. */
    {
        uint8_t nf[64] = {'T', 'V', TROVE_WIRE_NAMES, 1};
        put32(nf + 4, 1);
        nf[16] = TROVE_NAME_EVENT, nf[17] = 5, nf[18] = 40, memcpy(nf + 19, "abc", 3);
        put32(nf + 8, 6);
        expect_err(nf, 22, TROVE_ERR_OVERRUN, "name length past the end");
        nf[18] = 3, nf[19] = 0xc3, nf[20] = 0x28;
        expect_err(nf, 22, TROVE_ERR_CORRUPT, "bad utf-8");
        nf[16] = 9;
        expect_err(nf, 22, TROVE_ERR_CORRUPT, "unknown names type");
        /* two entries, the second broken: the first must not be applied */
        put32(nf + 4, 2);
        nf[16] = TROVE_NAME_EVENT, nf[17] = 5, nf[18] = 3, memcpy(nf + 19, "abc", 3);
        nf[22] = TROVE_NAME_PROCESS, nf[23] = 1, nf[24] = 9, nf[25] = 'x';
        put32(nf + 8, 10);
        expect_err(nf, 26, TROVE_ERR_OVERRUN, "second entry broken");
    }
    /* Names frames with sort indexes: every prefix is truncated, a sort index needs version
     * 2, unknown types and versions are refused, the value is at most 32 bits wide. */
    {
        struct trove_names *n = NULL;
        uint8_t sf[32] = {'T', 'V', TROVE_WIRE_NAMES, TROVE_WIRE_NAMES_VERSION};
        b.len = 0;
        CHECK_EQ_INT(golden_sort_names(&n), 0);
        CHECK_EQ_INT(trove_wire_encode_names(n, 0, 100, &b), TROVE_OK);
        trove_names_free(n);
        for (size_t cut = 0; cut < b.len; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1);
            memcpy(copy, b.ptr, cut);
            expect_err(copy, cut, TROVE_ERR_TRUNCATED, "truncated v2 names");
            free(copy);
        }
        /* the payload cut inside its last entry, the header agreeing */
        memcpy(buf, b.ptr, b.len);
        put32(buf + 8, (uint32_t)(b.len - 16 - 1));
        expect_err(buf, b.len - 1, TROVE_ERR_TRUNCATED, "v2 names: last entry cut");
        memcpy(buf, b.ptr, b.len);
        buf[3] = 3;
        expect_err(buf, b.len, TROVE_ERR_VERSION, "names frame version 3");
        buf[3] = 0;
        expect_err(buf, b.len, TROVE_ERR_VERSION, "names frame version 0");
        /* one thread sort index entry: 05 pid tid value */
        put32(sf + 4, 1);
        put32(sf + 8, 4);
        sf[16] = TROVE_NAME_THREAD_SORT, sf[17] = 1, sf[18] = 2, sf[19] = 6;
        {
            struct trove_wire_frame fr;
            struct trove_names *got = NULL;
            int32_t v = 0;
            CHECK_EQ_INT(trove_names_new(&got), TROVE_OK);
            CHECK_EQ_INT(trove_wire_decode(dec, sf, 20, out_ev, 1, got, &fr, NULL), TROVE_OK);
            CHECK(trove_names_get_sort(got, TROVE_NAME_THREAD_SORT, 1, 2, &v) && v == 3);
            trove_names_free(got);
        }
        sf[3] = TROVE_WIRE_VERSION;
        expect_err(sf, 20, TROVE_ERR_CORRUPT, "sort index in a version 1 frame");
        sf[3] = TROVE_WIRE_NAMES_VERSION;
        sf[16] = 6;
        expect_err(sf, 20, TROVE_ERR_CORRUPT, "names type 6");
        sf[16] = 0;
        expect_err(sf, 20, TROVE_ERR_CORRUPT, "names type 0");
        sf[16] = TROVE_NAME_THREAD_SORT;
        /* the value: 5 bytes with bits above 32, then 6 bytes */
        memcpy(sf + 19, "\xff\xff\xff\xff\x1f", 5);
        put32(sf + 8, 8);
        expect_err(sf, 24, TROVE_ERR_VARINT, "sort index over 32 bits");
        memcpy(sf + 19, "\xff\xff\xff\xff\x8f\x00", 6);
        put32(sf + 8, 9);
        expect_err(sf, 25, TROVE_ERR_VARINT, "sort index varint of 6 bytes");
        /* the largest value fits; a byte after it is trailing */
        memcpy(sf + 19, "\xff\xff\xff\xff\x0f\x00", 6);
        put32(sf + 8, 8);
        {
            struct trove_wire_frame fr;
            CHECK_EQ_INT(trove_wire_decode(dec, sf, 24, out_ev, 1, NULL, &fr, NULL), TROVE_OK);
        }
        put32(sf + 8, 9);
        expect_err(sf, 25, TROVE_ERR_CORRUPT, "a byte after the last sort index");
        /* a process sort index has no tid: 04 pid value */
        sf[16] = TROVE_NAME_PROCESS_SORT, sf[17] = 1, sf[18] = 0x80;
        put32(sf + 8, 3);
        expect_err(sf, 19, TROVE_ERR_TRUNCATED, "process sort index cut in its value");
        /* an event frame never takes version 2 */
        b.len = 0;
        trove_wire_encode(enc, TROVE_WIRE_RAW, golden, 5, &b);
        b.ptr[3] = TROVE_WIRE_NAMES_VERSION;
        expect_err(b.ptr, b.len, TROVE_ERR_VERSION, "raw frame of version 2");
    }
    /* The caller's buffer too small is a clean error, not an overflow. */
    {
        struct trove_wire_frame fr;
        b.len = 0;
        trove_wire_encode(enc, TROVE_WIRE_RAW, golden, 5, &b);
        CHECK_EQ_INT(trove_wire_decode(dec, b.ptr, b.len, out_ev, 4, NULL, &fr, NULL), TROVE_ERR_LIMIT);
    }
    /* Encoder contract: nonzero pad and unknown format are refused, output untouched. */
    {
        struct trove_event e = golden[0];
        e.pad = 1;
        b.len = 0;
        CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_PACKED, &e, 1, &b), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_RAW, &e, 1, &b), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_wire_encode(enc, 7, golden, 1, &b), TROVE_ERR_INVALID);
        CHECK_EQ_INT(b.len, 0);
    }
    trove_bytes_free(&b);
}

/* A stream of frames read back through trove_wire_read_frame, and a stream cut short. */
/* Format 8 (the model payload, src/codec/wire_model.c): counters, deep zones and names
 * round trip; a generated capture's frame of 65,536 events is smaller than format 5 with
 * deflate; and every damage to the golden frame is refused by its code, never read past:
 * each cut, each byte changed (which decodes, or fails with an error), the version, a
 * stream's lengths (over the limit, disagreeing with the payload, a zstd stream that does
 * not inflate). Each is a seed of fuzz/corpus/fuzz_wire (TROVE_WIRE_CORPUS=dir). */
static void test_model(void)
{
    static struct trove_event ev[TROVE_WIRE_MAX_EVENTS];
    struct trove_bytes b = {0}, c = {0};
    uint64_t seed = 7;
    uint8_t *copy;
    size_t n = 0;

    /* counters: values from 0 to 2^64 - 1 on three series of two threads */
    for (size_t i = 0; i < 3000; i++) {
        uint64_t r = test_rand(&seed);
        ev[i] = (struct trove_event){1000 * i, r % 4 == 0 ? UINT64_MAX - r % 3 : r % 5000, 9,
                                     (uint32_t)(i % 2), TROVE_KIND_COUNTER, 0, 0, 0,
                                     (uint32_t)(i % 3)};
    }
    roundtrip_format(ev, 3000, TROVE_WIRE_MODEL);
    /* zones nested 255 deep and back, each inside its parent by a nanosecond */
    for (size_t i = 0; i < 512; i++) {
        size_t d = i < 256 ? i : 511 - i;
        ev[i] = (struct trove_event){1000 + i, 100000 - 2 * d, 3, 4, TROVE_KIND_ZONE, (uint8_t)d,
                                     0, 0, (uint32_t)d};
    }
    roundtrip_format(ev, 512, TROVE_WIRE_MODEL);
    /* a frame of a generated capture: smaller than columnar + deflate */
    {
        struct trove_gen_options go = {0};
        struct trove_events g = {0};
        struct trove_names *names = NULL;
        go.events = TROVE_WIRE_MAX_EVENTS;
        go.seed = 3;
        CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
        CHECK_EQ_INT(trove_gen(&go, &g, names), TROVE_OK);
        CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_MODEL, g.ev, g.len, &b), TROVE_OK);
        CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_COLUMNAR_DEFLATE, g.ev, g.len, &c), TROVE_OK);
        CHECK(b.len < c.len * 3 / 4);
        roundtrip_format(g.ev, g.len, TROVE_WIRE_MODEL);
        trove_events_free(&g);
        trove_names_free(names);
        b.len = c.len = 0;
    }
    /* damage to the golden frame */
    CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_MODEL, golden, 5, &b), TROVE_OK);
    copy = malloc(b.len);
    for (size_t cut = 0; cut < b.len; cut++) {
        struct trove_wire_frame fr;
        memcpy(copy, b.ptr, cut);
        CHECK(trove_wire_decode(dec, copy, cut, out_ev, 16, NULL, &fr, NULL) != TROVE_OK);
    }
    for (size_t i = TROVE_WIRE_HEADER_SIZE; i < b.len; i++)
        for (int bit = 0; bit < 8; bit++) {
            struct trove_wire_frame fr;
            int rc;
            memcpy(copy, b.ptr, b.len);
            copy[i] ^= (uint8_t)(1u << bit);
            rc = trove_wire_decode(dec, copy, b.len, out_ev, 16, NULL, &fr, NULL);
            n += rc != TROVE_OK;
            CHECK(rc == TROVE_OK || rc == TROVE_ERR_CORRUPT || rc == TROVE_ERR_LIMIT ||
                  rc == TROVE_ERR_VERSION);
        }
    CHECK(n > 8 * (b.len - TROVE_WIRE_HEADER_SIZE) / 2); /* most damage is seen */
    memcpy(copy, b.ptr, b.len);
    copy[TROVE_WIRE_HEADER_SIZE] = TROVE__MODEL_VERSION + 1;
    expect_err(copy, b.len, TROVE_ERR_VERSION, "model payload version 3");
    test_corpus_write("TROVE_WIRE_CORPUS", "model-version", NULL, 0, copy, b.len);
    memcpy(copy, b.ptr, b.len);
    copy[12] = 1; /* raw_len */
    expect_err(copy, b.len, TROVE_ERR_CORRUPT, "model frame with raw_len");
    test_corpus_write("TROVE_WIRE_CORPUS", "model-golden", NULL, 0, b.ptr, b.len);
    free(copy);
    /* (version 1's 13 streams) the first stream (tracks) said to hold 2^20 bytes for 5
     * events; then one said to be zstd (stored shorter than raw) that is not */
    {
        uint8_t f[64];
        size_t k = TROVE_WIRE_HEADER_SIZE;
        f[k++] = 1;
        f[k++] = 0;       /* base */
        f[k++] = 1;       /* unit */
        f[k++] = 0x80, f[k++] = 0x80, f[k++] = 0x40; /* raw 2^20 */
        f[k++] = 0;
        for (int i = 1; i < 13; i++)
            f[k++] = 0, f[k++] = 0;
        trove__wire_put_header(f, TROVE_WIRE_MODEL, TROVE_WIRE_VERSION, 5,
                               (uint32_t)(k - TROVE_WIRE_HEADER_SIZE), 0);
        expect_err(f, k, TROVE_ERR_LIMIT, "model stream over the limit");
        test_corpus_write("TROVE_WIRE_CORPUS", "model-limit", NULL, 0, f, k);
        k = TROVE_WIRE_HEADER_SIZE + 3;
        f[k++] = 5, f[k++] = 4; /* 5 bytes stored in 4: zstd's, said the lengths */
        for (int i = 1; i < 13; i++)
            f[k++] = 0, f[k++] = 0;
        memcpy(f + k, "\x28\xb5\x2f\xfd", 4);
        k += 4;
        trove__wire_put_header(f, TROVE_WIRE_MODEL, TROVE_WIRE_VERSION, 5,
                               (uint32_t)(k - TROVE_WIRE_HEADER_SIZE), 0);
        expect_err(f, k, TROVE_ERR_CORRUPT, "model stream that does not inflate");
        k -= 1; /* the streams disagree with the payload */
        trove__wire_put_header(f, TROVE_WIRE_MODEL, TROVE_WIRE_VERSION, 5,
                               (uint32_t)(k - TROVE_WIRE_HEADER_SIZE), 0);
        expect_err(f, k, TROVE_ERR_CORRUPT, "model streams longer than the payload");
    }
    /* version 1, what the first build of format 8 wrote, still decodes */
    {
        char path[1024];
        size_t len = 0;
        uint8_t *v1;
        struct trove_wire_frame fr;
        snprintf(path, sizeof path, "%s/tests/vectors/wire_model_v1.bin", TROVE_SOURCE_DIR);
        CHECK((v1 = test_read_file(path, &len)) != NULL);
        if (v1) {
            CHECK(len > TROVE_WIRE_HEADER_SIZE && v1[TROVE_WIRE_HEADER_SIZE] == 1);
            CHECK_EQ_INT(trove_wire_decode(dec, v1, len, out_ev, 16, NULL, &fr, NULL), TROVE_OK);
            CHECK(fr.n_events == 5 && memcmp(out_ev, golden, sizeof golden) == 0);
            free(v1);
        }
    }
    CHECK_EQ_INT(trove_wire_format_parse("model"), TROVE_WIRE_MODEL);
    CHECK(strcmp(trove_wire_format_name(TROVE_WIRE_MODEL), "model") == 0);
    trove_bytes_free(&b);
    trove_bytes_free(&c);
}

static void test_stream(void)
{
    struct trove_bytes s = {0}, frame = {0};
    struct trove_diag diag;
    uint64_t off = 0;
    FILE *f;
    int frames = 0, rc;

    trove_wire_encode(enc, TROVE_WIRE_RAW, golden, 5, &s);
    trove_wire_encode(enc, TROVE_WIRE_PACKED, golden, 5, &s);
    trove_wire_encode(enc, TROVE_WIRE_DEFLATE, golden, 5, &s);
    f = tmpfile();
    fwrite(s.ptr, 1, s.len, f);
    rewind(f);
    while ((rc = trove_wire_read_frame(f, &frame, &off, &diag)) == 1) {
        struct trove_wire_frame fr;
        CHECK_EQ_INT(trove_wire_decode(dec, frame.ptr, frame.len, out_ev, 16, NULL, &fr, &diag), TROVE_OK);
        CHECK(memcmp(out_ev, golden, sizeof golden) == 0);
        frames++;
    }
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(frames, 3);
    CHECK_EQ_INT(off, s.len);
    fclose(f);
    /* Cut inside the last frame's payload: the first two frames read, then TRUNCATED. */
    f = tmpfile();
    fwrite(s.ptr, 1, s.len - 3, f);
    rewind(f);
    off = 0;
    frames = 0;
    while ((rc = trove_wire_read_frame(f, &frame, &off, &diag)) == 1)
        frames++;
    CHECK_EQ_INT(rc, TROVE_ERR_TRUNCATED);
    CHECK_EQ_INT(frames, 2);
    fclose(f);
    /* Cut inside the first header. */
    f = tmpfile();
    fwrite(s.ptr, 1, 7, f);
    rewind(f);
    off = 0;
    CHECK_EQ_INT(trove_wire_read_frame(f, &frame, &off, &diag), TROVE_ERR_TRUNCATED);
    fclose(f);
    trove_bytes_free(&s);
    trove_bytes_free(&frame);
}

/* Packed is the size the format promises on a batch that looks like a capture. */
static void test_sizes(void)
{
    static struct trove_event ev[2048];
    struct trove_bytes b = {0};
    for (size_t i = 0; i < 2048; i++)
        ev[i] = (struct trove_event){400000000000000ULL + 3000 * i, 50000, 4242, 4242 + (uint32_t)(i % 8),
                                     0, (uint8_t)(i % 4), 0, 0, (uint32_t)(i % 100)};
    trove_wire_encode(enc, TROVE_WIRE_PACKED, ev, 2048, &b);
    /* per event: index 1 + delta zigzag(3000) 2 + dur(50000) 3 + name 1 + 3 = 10 bytes;
     * plus header 16, table 1 + 8 * (2 + 2), and the first event's delta (from 0: zigzag of
     * 4e14 is 8e14 < 2^56) is 8 bytes wide, not 2 */
    CHECK_EQ_INT(b.len, 16 + 1 + 8 * 4 + 2048 * 10 + 6);
    trove_bytes_free(&b);
}

/* A columnar frame of count events around a hand-written payload. */
static size_t col_frame(uint8_t *buf, uint32_t count, const uint8_t *payload, size_t n)
{
    buf[0] = 'T', buf[1] = 'V', buf[2] = TROVE_WIRE_COLUMNAR, buf[3] = TROVE_WIRE_VERSION;
    put32(buf + 4, count);
    put32(buf + 8, (uint32_t)n);
    put32(buf + 12, 0);
    memcpy(buf + 16, payload, n);
    return 16 + n;
}

/* Replace bytes [at, at + cut) of base with rep, frame it, and expect `want`. */
static void col_expect(const uint8_t *base, size_t n, size_t at, size_t cut, const uint8_t *rep,
                       size_t rep_n, int want, const char *what)
{
    uint8_t p[256], buf[300];
    size_t m = 0, len;
    memcpy(p, base, at);
    m = at;
    memcpy(p + m, rep, rep_n);
    m += rep_n;
    memcpy(p + m, base + at + cut, n - at - cut);
    m += n - at - cut;
    len = col_frame(buf, 2, p, m);
    {
        uint8_t *copy = malloc(len); /* exact size, so ASan sees any overread */
        memcpy(copy, buf, len);
        if (want == TROVE_OK) {
            struct trove_wire_frame fr;
            struct trove_diag diag = {0};
            int rc = trove_wire_decode(dec, copy, len, out_ev, 16, NULL, &fr, &diag);
            if (rc != TROVE_OK)
                fprintf(stderr, "%s: %s\n", what, diag.msg);
            CHECK_EQ_INT(rc, TROVE_OK);
        } else {
            expect_err(copy, len, want, what);
        }
        free(copy);
    }
}

/* Format 5: what its columns make of a capture's shape, and its own bad inputs. */
static void test_columnar(void)
{
    static struct trove_event ev[4096];
    struct trove_bytes b = {0}, pk = {0};
    struct trove_wire_frame fr;
    struct trove_diag diag = {0};
    /* Two events of thread (1, 2) at 10 ns, duration 5, name 7: every column CONST. */
    static const uint8_t ok[] = {
        0x01, 0x01, 0x02, 0x14,                                     /* 1 thread, first 10 */
        0x01, 0x01,                                                 /* gcds */
        0x00, 0x00,                                                 /* thread: 0 */
        0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, /* start: 2^63 */
        0x00, 0x05,                                                 /* duration 5 */
        0x00, 0x07,                                                 /* name 7 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                         /* kind depth extra */
    };
    const size_t n = sizeof ok;
    uint8_t buf[300];
    size_t len = col_frame(buf, 2, ok, n);

    CHECK_EQ_INT(trove_wire_decode(dec, buf, len, out_ev, 16, NULL, &fr, &diag), TROVE_OK);
    CHECK_EQ_INT(fr.n_events, 2);
    CHECK(out_ev[1].start_ns == 10 && out_ev[1].dur_ns == 5 && out_ev[1].pid == 1 &&
          out_ev[1].tid == 2 && out_ev[1].name_id == 7);
    col_expect(ok, n, 7, 1, (const uint8_t[]){0x01}, 1, TROVE_ERR_THREAD, "thread past table");
    col_expect(ok, n, 6, 1, (const uint8_t[]){0x09}, 1, TROVE_ERR_CORRUPT, "unknown scheme");
    col_expect(ok, n, 4, 1, (const uint8_t[]){0x00}, 1, TROVE_ERR_CORRUPT, "zero gcd");
    col_expect(ok, n, 0, 1, (const uint8_t[]){0x03}, 1, TROVE_ERR_CORRUPT, "3 threads, 2 events");
    col_expect(ok, n, 0, 1, (const uint8_t[]){0x00}, 1, TROVE_ERR_CORRUPT, "no thread table");
    col_expect(ok, n, 22, 1, (const uint8_t[]){0x80, 0x80, 0x80, 0x80, 0x10}, 5, TROVE_ERR_CORRUPT,
               "name over 32 bits");
    col_expect(ok, n, 24, 1, (const uint8_t[]){0x80, 0x02}, 2, TROVE_ERR_CORRUPT, "kind 256");
    col_expect(ok, n, n, 0, (const uint8_t[]){0x00}, 1, TROVE_ERR_CORRUPT, "trailing byte");
    col_expect(ok, n, 6, 2, (const uint8_t[]){0x01, 0x00, 0x21, 0x00}, 4, TROVE_ERR_CORRUPT,
               "width 33");
    col_expect(ok, n, 21, 2, (const uint8_t[]){0x02, 0x03, 0x07, 0x00, 0x00}, 5, TROVE_ERR_CORRUPT,
               "dictionary larger than the block");
    col_expect(ok, n, 23, 2, (const uint8_t[]){0x03, 0x01, 0x00, 0x05}, 4, TROVE_ERR_CORRUPT,
               "runs past the block");
    col_expect(ok, n, 23, 2, (const uint8_t[]){0x03, 0x01, 0x00, 0x00}, 4, TROVE_ERR_CORRUPT,
               "runs short of the block");
    col_expect(ok, n, 19, 2, (const uint8_t[]){0x01, 0x00, 0x00, 0x01, 0x05, 0x01}, 6,
               TROVE_ERR_CORRUPT, "exception past the block");
    col_expect(ok, n, 19, 2, (const uint8_t[]){0x01, 0x00, 0x00, 0x01, 0x00, 0x00}, 6,
               TROVE_ERR_CORRUPT, "exception without high bits");
    col_expect(ok, n, 19, 2, (const uint8_t[]){0x01, 0x00, 0x01, 0x00}, 4, TROVE_ERR_TRUNCATED,
               "packed words cut short");
    col_expect(ok, n, 21, 2,
               (const uint8_t[]){0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
               12, TROVE_ERR_VARINT, "varint of 11 bytes");
    col_expect(ok, n, 21, 2, (const uint8_t[]){0x04, 0x00, 0x01, 0x02, 0x03}, 5, TROVE_ERR_CORRUPT,
               "varint block with a value too many");
    col_expect(ok, n, 21, 2, (const uint8_t[]){0x04, 0x00, 0x01, 0x02}, 4, TROVE_OK,
               "varint block");

    /* A microsecond source on 8 threads, a few names and durations: start and duration
     * gcd 1000, so the columns are a few bits an event, well under packed. */
    for (size_t i = 0; i < 2048; i++)
        ev[i] = (struct trove_event){1700000000000000000ULL + 1000 * (i / 8) * 3,
                                     1000 * (uint64_t)(1 + i % 3 * 40), 4242,
                                     4242 + (uint32_t)(i % 8), 0, (uint8_t)(i / 8 % 4), 0, 0,
                                     (uint32_t)(i % 5 * 11)};
    roundtrip(ev, 2048, "microsecond source");
    CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_COLUMNAR, ev, 2048, &b), TROVE_OK);
    CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_PACKED, ev, 2048, &pk), TROVE_OK);
    CHECK(b.len * 4 < pk.len);
    /* Starts going backwards on one thread, and a delta of almost 2^64. */
    for (size_t i = 0; i < 3000; i++)
        ev[i] = (struct trove_event){i % 2 ? 5000000 - i : i == 1000 ? UINT64_MAX : 1000 * i,
                                     i % 7 == 0 ? UINT64_MAX : i, 1, 1, 0, 0, 0, 0, 0};
    roundtrip(ev, 3000, "backwards, extremes");
    /* A gcd with starts going backwards, and gcds that are odd, even, and 2^63. */
    for (size_t i = 0; i < 2100; i++)
        ev[i] = (struct trove_event){(uint64_t)1e15 + (i % 3 ? 1000 * i : 0 - 7000 * i), 24 * (i % 9),
                                     1, (uint32_t)(i % 2), 0, 0, 0, 0, 0};
    roundtrip(ev, 2100, "gcd 1000, backwards");
    for (size_t i = 0; i < 100; i++)
        ev[i] = (struct trove_event){(i % 2) << 63, (i % 3) * 999, 1, 1, 0, 0, 0, 0, 0};
    roundtrip(ev, 100, "gcd 2^63 and 999");
    /* Block edges: 1023, 1024, 1025 events; a batch that is all one value. */
    for (size_t i = 0; i < 1025; i++)
        ev[i] = (struct trove_event){1000 * i, 77, 3, 4, 1, 2, 3, 0, (uint32_t)(i % 300)};
    roundtrip(ev, 1023, "1023");
    roundtrip(ev, 1024, "1024");
    roundtrip(ev, 1025, "1025");
    for (size_t i = 0; i < 1025; i++)
        ev[i] = (struct trove_event){5, 5, 5, 5, 5, 5, 5, 0, 5};
    roundtrip(ev, 1025, "constant");
    /* The deflate stage: a format 5 frame whose raw_len is the inflated payload's size,
     * that decodes to the same events as the plain one, and whose inflated payload is the
     * plain one's bytes. */
    for (size_t i = 0; i < 3000; i++)
        ev[i] = (struct trove_event){1000000 + 1000 * (i / 3), 1000 * (i % 17), 9, (uint32_t)(i % 3),
                                     0, (uint8_t)(i % 5), 0, 0, (uint32_t)(i % 40)};
    b.len = 0;
    pk.len = 0;
    CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_COLUMNAR_DEFLATE, ev, 3000, &b), TROVE_OK);
    CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_COLUMNAR, ev, 3000, &pk), TROVE_OK);
    CHECK_EQ_INT(b.ptr[2], TROVE_WIRE_COLUMNAR);
    CHECK_EQ_INT(b.ptr[12] | b.ptr[13] << 8 | b.ptr[14] << 16, pk.len - 16);
    CHECK(b.len < pk.len);
    CHECK_EQ_INT(trove_wire_decode(dec, b.ptr, b.len, out_ev, 4096, NULL, &fr, &diag), TROVE_OK);
    CHECK_EQ_INT(fr.format, TROVE_WIRE_COLUMNAR);
    CHECK_EQ_INT(fr.n_events, 3000);
    CHECK(memcmp(out_ev, ev, 3000 * sizeof *ev) == 0);
    for (size_t cut = 16; cut < b.len; cut += 7) {
        uint8_t *copy = malloc(cut);
        memcpy(copy, b.ptr, cut);
        expect_err(copy, cut, TROVE_ERR_TRUNCATED, "deflated columnar cut short");
        free(copy);
    }
    {
        uint8_t *copy = malloc(b.len);
        memcpy(copy, b.ptr, b.len);
        put32(copy + 12, (uint32_t)(pk.len - 16 - 1)); /* inflates past raw_len */
        expect_err(copy, b.len, TROVE_ERR_BOMB, "deflated columnar past raw_len");
        put32(copy + 12, (uint32_t)(pk.len - 16 + 1)); /* inflates short of it */
        expect_err(copy, b.len, TROVE_ERR_CORRUPT, "deflated columnar short of raw_len");
        put32(copy + 12, 100u << 20);
        expect_err(copy, b.len, TROVE_ERR_BOMB, "deflated columnar declares 100 MiB");
        put32(copy + 12, (uint32_t)(pk.len - 16));
        copy[20] ^= 0xff;
        expect_err(copy, b.len, TROVE_ERR_INFLATE, "deflated columnar, broken stream");
        free(copy);
    }
    roundtrip_format(ev, 3000, TROVE_WIRE_COLUMNAR_DEFLATE);
    roundtrip_format(ev, 0, TROVE_WIRE_COLUMNAR_DEFLATE);
    roundtrip_format(ev, 1, TROVE_WIRE_COLUMNAR_DEFLATE);
    CHECK_EQ_INT(trove_wire_format_parse("columnar_deflate"), TROVE_WIRE_COLUMNAR_DEFLATE);
    /* Nonzero pad is refused like in the other formats. */
    ev[3].pad = 1;
    b.len = 0;
    CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_COLUMNAR, ev, 10, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_INT(trove_wire_format_parse("columnar"), TROVE_WIRE_COLUMNAR);
    trove_bytes_free(&b);
    trove_bytes_free(&pk);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    if (trove_wire_encoder_new(&enc) != TROVE_OK || trove_wire_decoder_new(&dec) != TROVE_OK)
        return 1;
    /* Everything twice: the packed decoder's BMI2 path (on machines that have it) and the
     * generic one must accept and refuse exactly the same inputs. */
    for (int generic = 0; generic < 2; generic++) {
        trove__packed_force_generic = generic;
        RUN(test_roundtrips);
        RUN(test_golden);
        RUN(test_golden_sort);
        RUN(test_bad_input);
    }
    RUN(test_columnar);
    RUN(test_model);
    RUN(test_stream);
    RUN(test_sizes);
    trove_wire_encoder_free(enc);
    trove_wire_decoder_free(dec);
    return test_done();
}
