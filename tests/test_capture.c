/*
 * test_capture.c: captures in the store (src/capture/) — the header format v1: round trips,
 * the golden vector tests/vectors/capture_header.bin, every truncation, every check of the
 * decoder with its error and offset, counts that lie (no allocation follows them), every
 * byte flip, and the encoder's refusals; then writes of generated captures into a temp
 * store: segments as the format says, info and list agree, a rewrite stores nothing new,
 * a name held by another volume is refused; and replay through a stream in every wire
 * format, whole and by time range, against the input, with a damaged segment named in the
 * error. With TROVE_CAPTURE_CORPUS=<dir> set, the headers built here are also written to
 * <dir> as the fuzz seed corpus (fuzz/corpus/fuzz_capture/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_internal.h"
#include "common/endian.h"
#include "testutil.h"
#include "trove/capture.h"
#include "trove/wire.h"

#define FIXED TROVE__CAPTURE_FIXED
#define ENTRY TROVE__CAPTURE_ENTRY

static void corpus_write(const char *name, const uint8_t *buf, size_t len)
{
    const char *dir = getenv("TROVE_CAPTURE_CORPUS");
    char path[1024];
    FILE *f;
    if (!dir)
        return;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    CHECK(f && fwrite(buf, 1, len, f) == len);
    if (f)
        fclose(f);
}

static void fix_checksum(uint8_t *buf, size_t len)
{
    trove__put_le64(buf + len - 8, trove_checksum64(buf, len - 8));
}

/* ---- the header ------------------------------------------------------------------------ */

/* The golden header: 5 events in segments of 64 bytes (2 events), 1 event a frame, so three
 * segments of 2, 2 and 1 events; 6 names in 63 bytes. docs/formats/capture.md shows it. */
static struct trove_capture_segment golden_seg[3] = {
    {1000, 2500, 6000, 2, 2, 100},
    {3000, 4000, 4300, 2, 2, 90},
    {10000, 10000, 80000, 1, 1, 50},
};

static void golden(struct trove_capture_header *h)
{
    memset(h, 0, sizeof *h);
    h->info.events = 5;
    h->info.segments = 3;
    h->info.first_ns = 1000;
    h->info.end_ns = 80000;
    h->info.names = 6;
    h->info.raw_bytes = 160;
    h->segment_bytes = 64;
    h->frame_events = 1;
    h->names_bytes = 63;
    h->seg = golden_seg;
}

#define GOLDEN_LEN (96 + 3 * 40)

static int same_header(const struct trove_capture_header *a, const struct trove_capture_header *b)
{
    if (memcmp(&a->info, &b->info, offsetof(struct trove_capture_info, stored_bytes)) != 0 ||
        a->segment_bytes != b->segment_bytes || a->frame_events != b->frame_events ||
        a->names_bytes != b->names_bytes)
        return 0;
    for (uint64_t k = 0; k < a->info.segments; k++) {
        const struct trove_capture_segment *x = &a->seg[k], *y = &b->seg[k];
        if (x->min_start_ns != y->min_start_ns || x->max_start_ns != y->max_start_ns ||
            x->max_end_ns != y->max_end_ns || x->events != y->events || x->frames != y->frames ||
            x->bytes != y->bytes)
            return 0;
    }
    return 1;
}

/* Encode after a 3-byte prefix (so the decoder sees an unaligned buffer and the encoder must
 * append), decode, compare, and re-encode to the same bytes. */
static void roundtrip(const struct trove_capture_header *h, const char *what)
{
    struct trove_bytes b = {0}, again = {0};
    struct trove_capture_header back;
    struct trove_diag diag = {0};
    uint64_t stored;
    int rc;

    memset(&back, 0, sizeof back);
    CHECK_EQ_INT(trove_bytes_append(&b, "abc", 3), TROVE_OK);
    rc = trove_capture_header_encode(h, &b);
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: encode %d\n", what, rc);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        goto out;
    CHECK_EQ_INT(b.len, 3 + trove_capture_header_size(h->info.segments));
    CHECK(memcmp(b.ptr, "abc", 3) == 0);
    rc = trove_capture_header_decode(b.ptr + 3, b.len - 3, &back, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: %s\n", what, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        goto out;
    CHECK(same_header(h, &back));
    stored = b.len - 3 + h->names_bytes;
    for (uint64_t k = 0; k < h->info.segments; k++)
        stored += h->seg[k].bytes;
    CHECK_EQ_INT(back.info.stored_bytes, stored);
    CHECK_EQ_INT(back.info.new_objects, 0);
    CHECK(h->info.segments > 0 || back.seg == NULL);
    CHECK_EQ_INT(trove_capture_header_encode(&back, &again), TROVE_OK);
    CHECK(again.len == b.len - 3 && memcmp(again.ptr, b.ptr + 3, again.len) == 0);
out:
    trove_capture_header_free(&back);
    CHECK(back.seg == NULL);
    trove_bytes_free(&b);
    trove_bytes_free(&again);
}

/* A valid header of n events with random times, segments of per events, frames of fe. */
static void make_header(struct trove_capture_header *h, uint64_t n, uint64_t per, uint32_t fe,
                        uint64_t *seed)
{
    uint64_t s = n / per + (n % per != 0);
    memset(h, 0, sizeof *h);
    h->info.events = n;
    h->info.segments = s;
    h->info.raw_bytes = 32 * n;
    h->segment_bytes = 32 * per;
    h->frame_events = fe;
    h->names_bytes = 16 + test_rand(seed) % 1000;
    h->info.names = (h->names_bytes - 16) / 3;
    h->seg = calloc(s ? s : 1, sizeof *h->seg);
    CHECK(h->seg != NULL);
    if (!h->seg)
        return;
    for (uint64_t k = 0; k < s; k++) {
        struct trove_capture_segment *g = &h->seg[k];
        uint64_t a = test_rand(seed) >> 1, b = a + test_rand(seed) % 1000000;
        g->events = (uint32_t)(k + 1 < s ? per : n - (s - 1) * per);
        g->frames = (uint32_t)((g->events + fe - 1) / fe);
        g->bytes = 16 * g->frames + (uint32_t)(test_rand(seed) % 5000);
        g->min_start_ns = a;
        g->max_start_ns = b;
        g->max_end_ns = k == 3 ? UINT64_MAX : b + test_rand(seed) % 1000;
        if (k == 0 || a < h->info.first_ns)
            h->info.first_ns = a;
        if (g->max_end_ns > h->info.end_ns)
            h->info.end_ns = g->max_end_ns;
    }
}

static void test_roundtrips(void)
{
    struct trove_capture_header h;
    uint64_t seed = 7;

    golden(&h);
    roundtrip(&h, "golden");
    make_header(&h, 0, 2, 1, &seed);
    roundtrip(&h, "no events");
    free(h.seg);
    make_header(&h, 1, 1, 1, &seed);
    roundtrip(&h, "one event");
    free(h.seg);
    make_header(&h, 100000, 1024, 100, &seed);
    roundtrip(&h, "98 segments");
    free(h.seg);
    make_header(&h, 32768 * 3, 32768, 2048, &seed);
    roundtrip(&h, "the default sizes, full segments");
    free(h.seg);
    make_header(&h, 3 * 262144 + 5, 262144, 65536, &seed); /* 8 MiB segments, widest frames */
    roundtrip(&h, "the largest segments and frames");
    free(h.seg);
    /* The most segments there may be: a 10 MiB header. */
    make_header(&h, TROVE_CAPTURE_MAX_SEGMENTS, 1, 1, &seed);
    roundtrip(&h, "MAX_SEGMENTS segments");
    free(h.seg);
}

static void test_golden(void)
{
    struct trove_capture_header h, back;
    struct trove_bytes b = {0};
    struct trove_diag diag = {0};
    uint8_t *file;
    size_t len = 0;

    golden(&h);
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, GOLDEN_LEN);
    test_check_vector("capture_header.bin", b.ptr, b.len);
    corpus_write("golden.bin", b.ptr, b.len);
    trove_bytes_free(&b);

    file = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/capture_header.bin", &len);
    CHECK(file != NULL);
    if (!file)
        return;
    CHECK_EQ_INT(len, GOLDEN_LEN);
    memset(&back, 0, sizeof back);
    CHECK_EQ_INT(trove_capture_header_decode(file, len, &back, &diag), TROVE_OK);
    CHECK(back.seg && same_header(&h, &back));
    CHECK_EQ_INT(back.info.stored_bytes, GOLDEN_LEN + 63 + 100 + 90 + 50);
    trove_capture_header_free(&back);
    /* The fields where the format document puts them. */
    CHECK(len == GOLDEN_LEN && memcmp(file, "TROVCAP1", 8) == 0);
    CHECK(trove__get_le32(file + 8) == 1 && trove__get_le32(file + 12) == 0);
    CHECK(trove__get_le64(file + 16) == 5 && trove__get_le64(file + 24) == 3);
    CHECK(trove__get_le64(file + 32) == 1000 && trove__get_le64(file + 40) == 80000);
    CHECK(trove__get_le64(file + 48) == 6 && trove__get_le64(file + 56) == 160);
    CHECK(trove__get_le64(file + 64) == 63 && trove__get_le64(file + 72) == 64);
    CHECK(trove__get_le32(file + 80) == 1 && trove__get_le32(file + 84) == 0);
    CHECK(trove__get_le64(file + 88) == 1000 && trove__get_le64(file + 96) == 2500);
    CHECK(trove__get_le64(file + 104) == 6000 && trove__get_le32(file + 112) == 2);
    CHECK(trove__get_le32(file + 116) == 2 && trove__get_le32(file + 120) == 100);
    CHECK(trove__get_le64(file + 168) == 10000 && trove__get_le32(file + 200) == 50);
    CHECK(trove__get_le64(file + 208) == trove_checksum64(file, 208));
    free(file);
}

/* The decoder under test, for test_expect_decode_error. */
static int decode_header(const uint8_t *buf, size_t len, void *out, struct trove_diag *diag)
{
    int rc = trove_capture_header_decode(buf, len, out, diag);
    if (rc == TROVE_OK)
        trove_capture_header_free(out);
    return rc;
}

static void expect_bad(const uint8_t *buf, size_t len, int want, uint64_t want_off,
                       const char *needle, const char *what)
{
    test_expect_decode_error(decode_header, sizeof(struct trove_capture_header), buf, len, want,
                             want_off, needle, what);
}

static uint8_t work[GOLDEN_LEN + 128];

/* A fresh copy of the golden header in work[] to break one field of. */
static uint8_t *mutant(const struct trove_bytes *g)
{
    memcpy(work, g->ptr, g->len);
    return work;
}

/* The same, with the checksum made right after the change: the field checks. */
static void expect_bad_field(uint64_t want_off, const char *needle, const char *what,
                             const char *corpus_name)
{
    fix_checksum(work, GOLDEN_LEN);
    expect_bad(work, GOLDEN_LEN, TROVE_ERR_CORRUPT, want_off, needle, what);
    if (corpus_name)
        corpus_write(corpus_name, work, GOLDEN_LEN);
}

static void test_bad_header(void)
{
    struct trove_capture_header h;
    struct trove_bytes g = {0};
    const size_t n = GOLDEN_LEN;

    golden(&h);
    CHECK_EQ_INT(trove_capture_header_encode(&h, &g), TROVE_OK);
    CHECK_EQ_INT(g.len, n);
    if (g.len != n)
        goto out;

    /* Every prefix, the empty one included. */
    for (size_t len = 0; len < n; len++)
        expect_bad(g.ptr, len, TROVE_ERR_TRUNCATED, len, "cut short", "prefix");
    corpus_write("short-fixed.bin", g.ptr, 50);
    corpus_write("short-entries.bin", g.ptr, 150);
    corpus_write("no-checksum.bin", g.ptr, n - 8);

    mutant(&g)[0] = 'X';
    expect_bad(work, n, TROVE_ERR_MAGIC, 0, "TROVCAP1", "magic");
    corpus_write("bad-magic.bin", work, n);
    memcpy(mutant(&g), "TROVREFS", 8);
    expect_bad(work, n, TROVE_ERR_MAGIC, 0, NULL, "a refs file");
    trove__put_le32(mutant(&g) + 8, 2);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "newer trove", "version 2");
    corpus_write("version-2.bin", work, n);
    trove__put_le32(mutant(&g) + 8, 0);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "reads version 1", "version 0");
    trove__put_le32(mutant(&g) + 12, 1);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 12, "flags", "flags");
    corpus_write("flags.bin", work, n);
    mutant(&g)[87] = 0x80;
    expect_bad(work, n, TROVE_ERR_CORRUPT, 84, "reserved", "reserved");

    /* Counts that lie about the length: refused before anything is allocated or read past
     * the buffer (ASan and the exact-size copy would see it). */
    trove__put_le64(mutant(&g) + 24, TROVE_CAPTURE_MAX_SEGMENTS + 1);
    expect_bad(work, n, TROVE_ERR_LIMIT, 24, "over the limit", "2^18 + 1 segments");
    corpus_write("segments-over-limit.bin", work, n);
    trove__put_le64(work + 24, UINT64_MAX);
    expect_bad(work, n, TROVE_ERR_LIMIT, 24, NULL, "2^64 - 1 segments");
    trove__put_le64(work + 24, (uint64_t)1 << 60);
    expect_bad(work, n, TROVE_ERR_LIMIT, 24, NULL, "2^60 segments (40 x overflows)");
    trove__put_le64(mutant(&g) + 24, TROVE_CAPTURE_MAX_SEGMENTS);
    expect_bad(work, n, TROVE_ERR_TRUNCATED, n, "need", "2^18 segments in 216 bytes");
    corpus_write("segments-at-limit.bin", work, n);
    trove__put_le64(mutant(&g) + 24, 4);
    expect_bad(work, n, TROVE_ERR_TRUNCATED, n, "need", "one segment more");
    trove__put_le64(mutant(&g) + 24, 2);
    expect_bad(work, n, TROVE_ERR_CORRUPT, n - 40, "stray", "one segment less");
    corpus_write("segments-2.bin", work, n);
    mutant(&g)[n] = 0;
    expect_bad(work, n + 1, TROVE_ERR_CORRUPT, n, "stray", "a trailing byte");
    corpus_write("trailing.bin", work, n + 1);

    /* The checksum covers everything before it. */
    trove__put_le64(mutant(&g) + 16, 6);
    expect_bad(work, n, TROVE_ERR_CHECKSUM, n - 8, "checksum", "events changed");
    corpus_write("events-changed.bin", work, n);
    mutant(&g)[n - 1] ^= 0x80;
    expect_bad(work, n, TROVE_ERR_CHECKSUM, n - 8, "damaged", "flipped checksum");
    for (size_t at = 0; at < n; at++) {
        static const uint8_t flips[] = {0x01, 0x80, 0xff};
        for (size_t k = 0; k < sizeof flips; k++) {
            struct trove_capture_header back;
            int rc;
            mutant(&g)[at] ^= flips[k];
            if (at >= 88 || (at >= 16 && at < 24) || (at >= 32 && at < 84)) {
                expect_bad(work, n, TROVE_ERR_CHECKSUM, n - 8, NULL, "flipped byte");
                continue;
            }
            rc = trove_capture_header_decode(work, n, &back, NULL);
            CHECK(rc == TROVE_ERR_CHECKSUM || rc == TROVE_ERR_MAGIC ||
                  rc == TROVE_ERR_VERSION || rc == TROVE_ERR_CORRUPT ||
                  rc == TROVE_ERR_LIMIT || rc == TROVE_ERR_TRUNCATED);
        }
    }

    /* Fields, with the checksum fixed: each rule of the format. */
    trove__put_le64(mutant(&g) + 72, 0);
    expect_bad_field(72, "multiple of 32", "segment_bytes 0", "segment-bytes-0.bin");
    trove__put_le64(mutant(&g) + 72, 65);
    expect_bad_field(72, "multiple of 32", "segment_bytes 65", NULL);
    trove__put_le64(mutant(&g) + 72, TROVE_CAPTURE_MAX_SEGMENT_BYTES + 32);
    expect_bad_field(72, "multiple of 32", "segment_bytes over 8 MiB", NULL);
    trove__put_le32(mutant(&g) + 80, 0);
    expect_bad_field(80, "frame_events", "frame_events 0", "frame-events-0.bin");
    trove__put_le32(mutant(&g) + 80, TROVE_WIRE_MAX_EVENTS + 1);
    expect_bad_field(80, "frame_events", "frame_events 65537", NULL);
    trove__put_le64(mutant(&g) + 16, 7); /* 7 events need 4 segments */
    expect_bad_field(24, "make 4", "7 events in 3 segments", "events-7.bin");
    trove__put_le64(mutant(&g) + 16, UINT64_MAX);
    expect_bad_field(24, "segments", "2^64 - 1 events", NULL);
    trove__put_le64(mutant(&g) + 72, 96); /* 5 events in segments of 3 make 2 */
    expect_bad_field(24, "make 2", "segments of 3 events", NULL);
    trove__put_le64(mutant(&g) + 56, 161);
    expect_bad_field(56, "raw_bytes", "raw_bytes", "raw-bytes.bin");
    trove__put_le64(mutant(&g) + 64, 15);
    expect_bad_field(64, "names object", "names_bytes 15", NULL);
    trove__put_le64(mutant(&g) + 64, (uint64_t)TROVE_CAPTURE_MAX_OBJECT + 1);
    expect_bad_field(64, "names object", "names_bytes over 16 MiB", NULL);
    trove__put_le64(mutant(&g) + 48, 16); /* 63 bytes hold 15 names at most */
    expect_bad_field(48, "at most 15", "16 names in 63 bytes", "names-16.bin");

    trove__put_le32(mutant(&g) + FIXED + ENTRY + 24, 3);
    expect_bad_field(FIXED + ENTRY + 24, "give it 2", "segment 1 events", "seg-events.bin");
    trove__put_le32(mutant(&g) + FIXED + 2 * ENTRY + 24, 2);
    expect_bad_field(FIXED + 2 * ENTRY + 24, "give it 1", "last segment events", NULL);
    trove__put_le32(mutant(&g) + FIXED + 28, 1);
    expect_bad_field(FIXED + 28, "make 2", "segment 0 frames", "seg-frames.bin");
    trove__put_le32(mutant(&g) + FIXED + 32, 31);
    expect_bad_field(FIXED + 32, "need 32", "segment 0 bytes", "seg-bytes.bin");
    trove__put_le32(mutant(&g) + FIXED + 2 * ENTRY + 32, TROVE_CAPTURE_MAX_OBJECT + 1);
    expect_bad_field(FIXED + 2 * ENTRY + 32, "bytes", "segment 2 bytes over 16 MiB", NULL);
    trove__put_le32(mutant(&g) + FIXED + ENTRY + 36, 1);
    expect_bad_field(FIXED + ENTRY + 36, "reserved", "segment reserved", "seg-reserved.bin");
    trove__put_le64(mutant(&g) + FIXED, 2501);
    expect_bad_field(FIXED, "out of order", "min_start > max_start", "seg-order.bin");
    trove__put_le64(mutant(&g) + FIXED + ENTRY + 16, 3999);
    expect_bad_field(FIXED + ENTRY, "out of order", "max_start > max_end", NULL);
    trove__put_le64(mutant(&g) + 32, 999);
    expect_bad_field(32, "first_ns", "first_ns", "first-ns.bin");
    trove__put_le64(mutant(&g) + FIXED + ENTRY, 999); /* segment 1 starts earlier */
    expect_bad_field(32, "first_ns", "a later segment starts first", NULL);
    trove__put_le64(mutant(&g) + 40, 80001);
    expect_bad_field(40, "end_ns", "end_ns", "end-ns.bin");
    trove__put_le64(mutant(&g) + FIXED + 16, 80001);
    expect_bad_field(40, "end_ns", "an earlier segment ends last", NULL);
out:
    trove_bytes_free(&g);
}

/* The empty capture: no segments, first_ns and end_ns 0. */
static void test_empty(void)
{
    struct trove_capture_header h, back;
    struct trove_bytes b = {0};
    memset(&h, 0, sizeof h);
    h.segment_bytes = TROVE_CAPTURE_SEGMENT_BYTES_DEFAULT;
    h.frame_events = TROVE_CAPTURE_FRAME_EVENTS_DEFAULT;
    h.names_bytes = 16;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, 96);
    corpus_write("empty.bin", b.ptr, b.len);
    CHECK_EQ_INT(trove_capture_header_decode(b.ptr, b.len, &back, NULL), TROVE_OK);
    CHECK(back.seg == NULL && back.info.events == 0 && back.info.stored_bytes == 96 + 16);
    trove__put_le64(b.ptr + 32, 1);
    fix_checksum(b.ptr, b.len);
    expect_bad(b.ptr, b.len, TROVE_ERR_CORRUPT, 32, "first_ns", "first_ns without events");
    trove_bytes_free(&b);
}

/* Encode must return `want` and leave out exactly as it was. */
static void expect_encode_fails(const struct trove_capture_header *h, int want, const char *what)
{
    struct trove_bytes b = {0};
    int rc;
    CHECK_EQ_INT(trove_bytes_append(&b, "keep", 4), TROVE_OK);
    rc = trove_capture_header_encode(h, &b);
    if (rc != want)
        fprintf(stderr, "%s: got %d want %d\n", what, rc, want);
    CHECK_EQ_INT(rc, want);
    CHECK_EQ_INT(b.len, 4);
    CHECK(memcmp(b.ptr, "keep", 4) == 0);
    trove_bytes_free(&b);
}

static void test_encode_invalid(void)
{
    struct trove_capture_header h;
    struct trove_capture_segment seg[3];

    golden(&h);
    memcpy(seg, golden_seg, sizeof seg);
    h.seg = seg;
    h.info.first_ns = 999;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "first_ns");
    golden(&h);
    h.seg = seg;
    seg[1].frames = 1;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "frames");
    seg[1].frames = 2;
    h.info.raw_bytes = 0;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "raw_bytes");
    golden(&h);
    h.seg = NULL;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "no entries");
    golden(&h);
    h.info.segments = TROVE_CAPTURE_MAX_SEGMENTS + 1;
    expect_encode_fails(&h, TROVE_ERR_LIMIT, "too many segments");
    golden(&h);
    h.frame_events = 0;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "frame_events 0");
    CHECK_EQ_INT(trove_capture_header_encode(NULL, NULL), TROVE_ERR_INVALID);
    {
        struct trove_capture_header back;
        struct trove_diag diag = {0};
        CHECK_EQ_INT(trove_capture_header_decode(NULL, 5, &back, &diag), TROVE_ERR_INVALID);
        CHECK_EQ_INT(diag.code, TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_capture_header_decode((const uint8_t *)"x", 1, NULL, NULL),
                     TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_capture_header_decode(NULL, 0, &back, NULL), TROVE_ERR_TRUNCATED);
        trove_capture_header_free(NULL);
    }
}

int main(void)
{
    test_roundtrips();
    test_golden();
    test_bad_header();
    test_empty();
    test_encode_invalid();
    return test_done();
}
