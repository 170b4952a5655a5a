/*
 * test_capture.c: captures in the store (src/capture/) — the header format v1: round trips,
 * the golden vector tests/vectors/capture_header.bin, every truncation, every check of the
 * decoder with its error and offset, counts that lie (no allocation follows them), every
 * byte flip, and the encoder's refusals (and so for v2, v3 and names parts, flag 0x2); then
 * writes of generated captures into a temp store: segments as the format says, info and
 * list agree, a rewrite stores nothing new, a name held by another volume is refused; and
 * replay through a stream in every wire format, whole and by time range, against the
 * input, with a damaged segment named in the error; and names past one object (300,000
 * names of about 100 bytes) written in parts, read back, replayed, appended to, a damaged
 * part named, and, cut small, beside flows and a profile and past the limits. With TROVE_CAPTURE_CORPUS=<dir> set, the headers built here are also written to
 * <dir> as the fuzz seed corpus (fuzz/corpus/fuzz_capture/).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/capture_internal.h"
#include "common/endian.h"
#include "testutil.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/gen.h"
#include "trove/stream.h"
#include "trove/testing.h"
#include "trove/wire.h"

#define FIXED TROVE__CAPTURE_FIXED
#define ENTRY TROVE__CAPTURE_ENTRY

static void corpus_write(const char *name, const uint8_t *buf, size_t len)
{
    test_corpus_write("TROVE_CAPTURE_CORPUS", name, NULL, 0, buf, len);
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
        a->names_bytes != b->names_bytes ||
        /* the names parts flag is the encoder's doing */
        (a->info.flags | TROVE_CAPTURE_FLAG_NAMES_PARTS) !=
            (b->info.flags | TROVE_CAPTURE_FLAG_NAMES_PARTS))
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

/* The names parts (one object: names_bytes and names) are the same. */
static int same_parts(const struct trove_capture_header *a, const struct trove_capture_header *b)
{
    if (trove__capture_parts(a) != trove__capture_parts(b))
        return 0;
    for (uint32_t j = 0; j < trove__capture_parts(a); j++)
        if (trove__capture_part_bytes(a, j) != trove__capture_part_bytes(b, j) ||
            trove__capture_part_entries(a, j) != trove__capture_part_entries(b, j))
            return 0;
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
    CHECK_EQ_INT(b.len, 3 + trove_capture_header_size(h->info.segments) +
                            (h->names_parts > 1 ? 8 * h->names_parts : 0));
    CHECK(memcmp(b.ptr, "abc", 3) == 0);
    rc = trove_capture_header_decode(b.ptr + 3, b.len - 3, &back, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: %s\n", what, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        goto out;
    CHECK(same_header(h, &back));
    CHECK(same_parts(h, &back));
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

    /* The same capture with columnar segments: flag 0x1 at byte 12, the rest as it was. */
    golden(&h);
    h.info.flags = TROVE_CAPTURE_FLAG_COLUMNAR;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, GOLDEN_LEN);
    test_check_vector("capture_header_columnar.bin", b.ptr, b.len);
    corpus_write("golden-columnar.bin", b.ptr, b.len);
    CHECK(trove__get_le32(b.ptr + 12) == 1);
    memset(&back, 0, sizeof back);
    CHECK_EQ_INT(trove_capture_header_decode(b.ptr, b.len, &back, &diag), TROVE_OK);
    CHECK(back.seg && same_header(&h, &back) && back.info.flags == TROVE_CAPTURE_FLAG_COLUMNAR);
    trove_capture_header_free(&back);
    trove_bytes_free(&b);
    h.info.flags = 4; /* no such flag: refused, nothing appended */
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(b.len, 0);
    /* the names parts flag is the encoder's to set: without parts, the bytes of none */
    h.info.flags = TROVE_CAPTURE_FLAG_NAMES_PARTS;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK(b.len == GOLDEN_LEN && trove__get_le32(b.ptr + 12) == 0);
    trove_bytes_free(&b);
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
    expect_bad(work, n, TROVE_ERR_MAGIC, 0, NULL, "an older trove's refs file");
    trove__put_le32(mutant(&g) + 8, 4);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "newer trove", "version 4");
    corpus_write("version-4.bin", work, n);
    /* a version 1 header that says 3: short of its flows and profile parts */
    trove__put_le32(mutant(&g) + 8, 3);
    fix_checksum(work, n);
    expect_bad(work, n, TROVE_ERR_TRUNCATED, n, "cut short", "version 3 without its parts");
    /* a version 1 header that says 2: 16 bytes short of its flows part */
    trove__put_le32(mutant(&g) + 8, 2);
    fix_checksum(work, n);
    expect_bad(work, n, TROVE_ERR_TRUNCATED, n, "cut short", "version 2 without its flows part");
    corpus_write("version-2.bin", work, n);
    trove__put_le32(mutant(&g) + 8, 0);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "reads versions 1 to 3", "version 0");
    trove__put_le32(mutant(&g) + 12, 4);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 12, "defines only 0x1", "flags");
    corpus_write("flags.bin", work, n);
    trove__put_le32(mutant(&g) + 12, TROVE_CAPTURE_FLAG_NAMES_PARTS);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 84, "0 parts", "names parts flag, no parts");
    trove__put_le32(mutant(&g) + 12, 0x80000001u);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 12, "flags", "flags beside the columnar one");
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

/* ---- captures in a store ---------------------------------------------------------------- */

/*
 * Version 2: the golden header with a flows part (3 rows in a 100-byte object); round trip,
 * golden vector, and the flows part's own rules. A header of version 1 cannot say flows.
 */
static void test_header_v2(void)
{
    struct trove_capture_header h, back;
    struct trove_bytes b = {0};
    struct trove_diag diag = {0};
    const size_t n = GOLDEN_LEN + 16;

    golden(&h);
    h.version = 2;
    h.info.flows = 3;
    h.flows_bytes = 100;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, n);
    test_check_vector("capture_header_v2.bin", b.ptr, b.len);
    corpus_write("golden-v2.bin", b.ptr, b.len);
    CHECK(b.len == n && trove__get_le32(b.ptr + 8) == 2);
    CHECK(trove__get_le64(b.ptr + GOLDEN_LEN - 8) == 3);
    CHECK(trove__get_le64(b.ptr + GOLDEN_LEN) == 100);
    memset(&back, 0, sizeof back);
    CHECK_EQ_INT(trove_capture_header_decode(b.ptr, b.len, &back, &diag), TROVE_OK);
    CHECK(same_header(&h, &back) && back.version == 2 && back.info.flows == 3 &&
          back.flows_bytes == 100);
    CHECK_EQ_INT(back.info.stored_bytes, n + 63 + 100 + 90 + 50 + 100);
    trove_capture_header_free(&back);
    /* version 0 is the least that holds it: 2 with flows, else 1 (the old bytes) */
    h.version = 0;
    b.len = 0;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, n);
    h.info.flows = 0;
    h.flows_bytes = 0;
    b.len = 0;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, GOLDEN_LEN);
    /* v2 without flows (a capture of counters) */
    h.version = 2;
    b.len = 0;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, n);
    /* refused: v1 with flows; flows without bytes; bytes without flows; a version 3 */
    h.version = 1;
    h.info.flows = 3;
    h.flows_bytes = 100;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "v1 with flows");
    h.version = 2;
    h.flows_bytes = 0;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "flows without bytes");
    h.info.flows = 0;
    h.flows_bytes = 100;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "bytes without flows");
    h.version = 3;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "version 3");
    /* the decoder: each flows rule, the checksum made right */
    h.version = 2;
    h.info.flows = 3;
    h.flows_bytes = 100;
    b.len = 0;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    memcpy(work, b.ptr, n);
    trove__put_le64(work + GOLDEN_LEN - 8, TROVE_FLOWS_MAX + 1);
    fix_checksum(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, GOLDEN_LEN - 8, "flow rows", "flows over the limit");
    memcpy(work, b.ptr, n);
    trove__put_le64(work + GOLDEN_LEN, 48);
    fix_checksum(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, GOLDEN_LEN, "flows object", "a flows object too small");
    corpus_write("v2-flows-bytes.bin", work, n);
    memcpy(work, b.ptr, n);
    trove__put_le64(work + GOLDEN_LEN - 8, 0);
    fix_checksum(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, GOLDEN_LEN, "flows object", "bytes without rows");
    /* a v2 header cut to a v1 length */
    memcpy(work, b.ptr, GOLDEN_LEN);
    fix_checksum(work, GOLDEN_LEN);
    expect_bad(work, GOLDEN_LEN, TROVE_ERR_TRUNCATED, GOLDEN_LEN, "cut short", "v2 cut to v1");
    trove_bytes_free(&b);
}

/* The golden capture's flows and profile: 3 flow rows in 100 bytes, a profile of 2 objects,
 * 500 samples and 40 switches in 3000 bytes. */
static void with_profile(struct trove_capture_header *h)
{
    h->info.flows = 3;
    h->flows_bytes = 100;
    h->info.samples = 500;
    h->info.switches = 40;
    h->profile_objects = 2;
    h->profile_bytes = 3000;
}

static void test_header_v3(void)
{
    struct trove_capture_header h, back;
    struct trove_bytes b = {0};
    struct trove_diag diag = {0};
    const size_t n = GOLDEN_LEN + 48, at = GOLDEN_LEN + 8; /* the profile part */

    golden(&h);
    with_profile(&h);
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK); /* version 0: 3 */
    CHECK_EQ_INT(b.len, n);
    test_check_vector("capture_header_v3.bin", b.ptr, b.len);
    corpus_write("golden-v3.bin", b.ptr, b.len);
    CHECK(trove__get_le32(b.ptr + 8) == 3 && trove__get_le64(b.ptr + at) == 500 &&
          trove__get_le64(b.ptr + at + 8) == 40 && trove__get_le64(b.ptr + at + 16) == 2 &&
          trove__get_le64(b.ptr + at + 24) == 3000);
    memset(&back, 0, sizeof back);
    CHECK_EQ_INT(trove_capture_header_decode(b.ptr, b.len, &back, &diag), TROVE_OK);
    CHECK(same_header(&h, &back) && back.version == 3 && back.info.samples == 500 &&
          back.info.switches == 40 && back.profile_objects == 2 && back.profile_bytes == 3000);
    CHECK_EQ_INT(back.info.stored_bytes, n + 63 + 100 + 90 + 50 + 100 + 3000);
    trove_capture_header_free(&back);
    /* refused by the encoder: a profile in a v2 header, v3 without profile objects */
    h.version = 2;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "v2 with a profile");
    h.version = 3;
    h.profile_objects = 0;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "v3 without objects");
    h.profile_objects = 2;
    h.profile_bytes = 33; /* under 17 an object */
    expect_encode_fails(&h, TROVE_ERR_INVALID, "v3 objects too small");
    h.profile_bytes = 3000;
    /* the decoder: each profile rule, the checksum made right */
    memcpy(work, b.ptr, n);
    trove__put_le64(work + at + 16, TROVE_CAPTURE_MAX_PROFILE_OBJECTS + 1);
    fix_checksum(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, at + 16, "profile is", "too many profile objects");
    corpus_write("v3-objects.bin", work, n);
    memcpy(work, b.ptr, n);
    trove__put_le64(work + at + 24, (uint64_t)TROVE_CAPTURE_MAX_OBJECT * 2 + 1);
    fix_checksum(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, at + 24, "profile objects take", "objects too big");
    memcpy(work, b.ptr, n);
    trove__put_le64(work + at, 3000 * 1032 / 4 + 1);
    fix_checksum(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, at, "cannot hold", "samples past the bytes");
    corpus_write("v3-samples.bin", work, n);
    /* a v3 header cut to a v2 length */
    memcpy(work, b.ptr, GOLDEN_LEN + 16);
    fix_checksum(work, GOLDEN_LEN + 16);
    expect_bad(work, GOLDEN_LEN + 16, TROVE_ERR_TRUNCATED, GOLDEN_LEN + 16, "cut short", "v3 cut to v2");
    trove_bytes_free(&b);
}

/*
 * Names in parts (flag 0x2): the golden capture with its names in 2 objects, 30,000,000
 * bytes and 300,000 entries together; round trip, golden vector, the part table where the
 * format document puts it, behind a version 3 header too, and every rule of the new fields.
 */
static void golden_parts(struct trove_capture_header *h)
{
    golden(h);
    h->info.names = 300000;
    h->names_bytes = 30000000;
    h->names_parts = 2;
    h->names_part[0] = (struct trove_capture_names_part){16700000, 170000};
    h->names_part[1] = (struct trove_capture_names_part){13300000, 130000};
}

/* The golden names parts header g with the u32 (size 4) or u64 (8) at `at` set to v and the
 * checksum made right: refused as corrupt at want_off, with needle in the message. */
static void bad_part_field(const struct trove_bytes *g, size_t at, int size, uint64_t v,
                           uint64_t want_off, const char *needle, const char *what,
                           const char *corpus_name)
{
    uint8_t buf[GOLDEN_LEN + 16];
    CHECK_EQ_INT(g->len, sizeof buf);
    if (g->len != sizeof buf)
        return;
    memcpy(buf, g->ptr, sizeof buf);
    if (size == 4)
        trove__put_le32(buf + at, (uint32_t)v);
    else
        trove__put_le64(buf + at, v);
    fix_checksum(buf, sizeof buf);
    expect_bad(buf, sizeof buf, TROVE_ERR_CORRUPT, want_off, needle, what);
    if (corpus_name)
        corpus_write(corpus_name, buf, sizeof buf);
}

static void test_header_names_parts(void)
{
    struct trove_capture_header h, back;
    struct trove_bytes b = {0}, v3 = {0};
    struct trove_diag diag = {0};
    const size_t n = GOLDEN_LEN + 16, t = GOLDEN_LEN - 8; /* the part table */
    uint64_t seed = 9;
    uint8_t big[GOLDEN_LEN + 8 * TROVE_CAPTURE_MAX_NAMES_PARTS];

    golden_parts(&h);
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, n);
    test_check_vector("capture_header_names_parts.bin", b.ptr, b.len);
    corpus_write("golden-names-parts.bin", b.ptr, b.len);
    CHECK(b.len == n && trove__get_le32(b.ptr + 8) == 1 &&
          trove__get_le32(b.ptr + 12) == TROVE_CAPTURE_FLAG_NAMES_PARTS &&
          trove__get_le64(b.ptr + 48) == 300000 && trove__get_le64(b.ptr + 64) == 30000000 &&
          trove__get_le32(b.ptr + 84) == 2 && trove__get_le32(b.ptr + t) == 16700000 &&
          trove__get_le32(b.ptr + t + 4) == 170000 && trove__get_le32(b.ptr + t + 8) == 13300000 &&
          trove__get_le32(b.ptr + t + 12) == 130000 &&
          trove__get_le64(b.ptr + n - 8) == trove_checksum64(b.ptr, n - 8));
    /* everything before the table is the one-object header's, but for flags, names, bytes
     * and the count at 84 */
    {
        struct trove_capture_header one;
        struct trove_bytes o = {0};
        golden(&one);
        CHECK_EQ_INT(trove_capture_header_encode(&one, &o), TROVE_OK);
        CHECK(o.len == GOLDEN_LEN && memcmp(o.ptr, b.ptr, 12) == 0 &&
              memcmp(o.ptr + 16, b.ptr + 16, 32) == 0 && memcmp(o.ptr + 56, b.ptr + 56, 8) == 0 &&
              memcmp(o.ptr + 72, b.ptr + 72, 12) == 0 &&
              memcmp(o.ptr + FIXED, b.ptr + FIXED, 3 * ENTRY) == 0);
        trove_bytes_free(&o);
    }
    memset(&back, 0, sizeof back);
    CHECK_EQ_INT(trove_capture_header_decode(b.ptr, b.len, &back, &diag), TROVE_OK);
    CHECK(same_header(&h, &back) && same_parts(&h, &back) && back.names_parts == 2 &&
          back.info.flags == TROVE_CAPTURE_FLAG_NAMES_PARTS);
    CHECK_EQ_INT(back.info.stored_bytes, n + 30000000 + 100 + 90 + 50);
    {
        struct trove_bytes again = {0};
        CHECK_EQ_INT(trove_capture_header_encode(&back, &again), TROVE_OK);
        CHECK(again.len == n && memcmp(again.ptr, b.ptr, n) == 0);
        trove_bytes_free(&again);
    }
    trove_capture_header_free(&back);
    /* a one-object header decodes as one part of its names */
    {
        struct trove_capture_header one;
        struct trove_bytes o = {0};
        golden(&one);
        CHECK_EQ_INT(trove_capture_header_encode(&one, &o), TROVE_OK);
        CHECK_EQ_INT(trove_capture_header_decode(o.ptr, o.len, &back, NULL), TROVE_OK);
        CHECK(back.names_parts == 1 && back.names_part[0].bytes == 63 &&
              back.names_part[0].entries == 6 && back.info.flags == 0);
        trove_capture_header_free(&back);
        trove_bytes_free(&o);
    }
    /* with the columnar flag and behind v2 and v3 parts: the table before the checksum */
    golden_parts(&h);
    h.info.flags = TROVE_CAPTURE_FLAG_COLUMNAR;
    with_profile(&h);
    CHECK_EQ_INT(trove_capture_header_encode(&h, &v3), TROVE_OK);
    CHECK_EQ_INT(v3.len, GOLDEN_LEN + 48 + 16);
    corpus_write("v3-names-parts.bin", v3.ptr, v3.len);
    CHECK(trove__get_le32(v3.ptr + 12) == 3 && trove__get_le32(v3.ptr + 8) == 3 &&
          trove__get_le32(v3.ptr + GOLDEN_LEN + 40) == 16700000);
    CHECK_EQ_INT(trove_capture_header_decode(v3.ptr, v3.len, &back, NULL), TROVE_OK);
    CHECK(same_header(&h, &back) && same_parts(&h, &back) && back.version == 3 &&
          back.profile_objects == 2 && back.info.flows == 3);
    trove_capture_header_free(&back);
    /* random round trips: many segments, the most parts, the largest total */
    make_header(&h, 100000, 1024, 100, &seed);
    h.names_parts = TROVE_CAPTURE_MAX_NAMES_PARTS;
    h.names_bytes = 0;
    h.info.names = 0;
    for (uint32_t j = 0; j < h.names_parts; j++) {
        h.names_part[j].entries = 1 + (uint32_t)(test_rand(&seed) % 5000);
        h.names_part[j].bytes = j == 0 ? 16 + 3 * h.names_part[j].entries
                                       : (uint32_t)(TROVE_CAPTURE_MAX_NAMES_BYTES / 32);
        h.names_bytes += h.names_part[j].bytes;
        h.info.names += h.names_part[j].entries;
    }
    roundtrip(&h, "32 names parts");
    CHECK(h.names_bytes < TROVE_CAPTURE_MAX_NAMES_BYTES);
    h.names_part[0].bytes += (uint32_t)(TROVE_CAPTURE_MAX_NAMES_BYTES - h.names_bytes);
    h.names_bytes = TROVE_CAPTURE_MAX_NAMES_BYTES;
    roundtrip(&h, "names parts of 256 MiB");
    /* the encoder refuses what the decoder would: too many parts, parts that do not add up */
    h.names_parts = TROVE_CAPTURE_MAX_NAMES_PARTS + 1;
    expect_encode_fails(&h, TROVE_ERR_LIMIT, "33 names parts");
    h.names_parts = TROVE_CAPTURE_MAX_NAMES_PARTS;
    h.names_bytes++;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "names bytes past the parts'");
    h.names_bytes--;
    h.info.names++;
    expect_encode_fails(&h, TROVE_ERR_INVALID, "names past the parts' entries");
    free(h.seg);

    /* The decoder: counts bounded before they multiply (no checksum needed to refuse) ... */
    memcpy(big, b.ptr, n);
    trove__put_le32(big + 84, TROVE_CAPTURE_MAX_NAMES_PARTS + 1);
    expect_bad(big, n, TROVE_ERR_LIMIT, 84, "over the limit", "33 names parts");
    corpus_write("names-parts-33.bin", big, n);
    trove__put_le32(big + 84, UINT32_MAX);
    expect_bad(big, n, TROVE_ERR_LIMIT, 84, "over the limit", "2^32 - 1 names parts");
    trove__put_le32(big + 84, 1);
    fix_checksum(big, n);
    expect_bad(big, n, TROVE_ERR_CORRUPT, 84, "2 to 32", "one names part with the flag");
    corpus_write("names-parts-1.bin", big, n);
    trove__put_le32(big + 84, 0);
    fix_checksum(big, n);
    expect_bad(big, n, TROVE_ERR_CORRUPT, 84, "0 parts", "no names parts with the flag");
    /* ... the length they give ... */
    memcpy(big, b.ptr, n);
    trove__put_le32(big + 84, 3);
    fix_checksum(big, n);
    expect_bad(big, n, TROVE_ERR_TRUNCATED, n, "part table", "3 parts in a table of 2");
    corpus_write("names-parts-short.bin", big, n);
    memcpy(big, b.ptr, n);
    trove__put_le32(big + 12, 0);
    fix_checksum(big, n);
    expect_bad(big, n, TROVE_ERR_CORRUPT, 84, "reserved", "a part table without the flag");
    memcpy(big, b.ptr, GOLDEN_LEN - 8);
    trove__put_le32(big + 12, TROVE_CAPTURE_FLAG_NAMES_PARTS);
    trove__put_le32(big + 84, 2);
    fix_checksum(big, GOLDEN_LEN);
    expect_bad(big, GOLDEN_LEN, TROVE_ERR_TRUNCATED, GOLDEN_LEN, "cut short",
               "the flag without its table");
    /* ... the checksum over the table ... */
    for (size_t at = t; at < n - 8; at++) {
        memcpy(big, b.ptr, n);
        big[at] ^= 0x10;
        expect_bad(big, n, TROVE_ERR_CHECKSUM, n - 8, NULL, "a flipped part table byte");
    }
    /* ... and each rule of the fields, the checksum made right */
    bad_part_field(&b, t, 4, 15, t, "16 to", "a part of 15 bytes", NULL);
    bad_part_field(&b, t + 8, 4, TROVE_CAPTURE_MAX_OBJECT + 1, t + 8, "16 to", "a part over 16 MiB",
                   "names-part-bytes.bin");
    bad_part_field(&b, t + 4, 4, 0, t + 4, "hold 1 to", "a part of no entries", NULL);
    bad_part_field(&b, t + 12, 4, (13300000 - 16) / 3 + 1, t + 12, "hold 1 to",
                   "entries past a part's bytes", NULL);
    bad_part_field(&b, t, 4, 16700001, 64, "add up to 30000001", "parts' bytes past the total",
                   "names-parts-bytes-sum.bin");
    bad_part_field(&b, 64, 8, 29999999, 64, "add up to 30000000", "a total under the parts'",
                   NULL);
    bad_part_field(&b, t + 4, 4, 170001, 48, "parts hold 300001", "parts' entries past names",
                   "names-parts-entries-sum.bin");
    bad_part_field(&b, 48, 8, 1, 48, "parts hold 300000", "names under the parts'", NULL);
    /* a total over 256 MiB in 17 parts of 16,000,000 bytes, each within an object */
    golden_parts(&h);
    h.names_parts = 17;
    h.names_bytes = 0;
    h.info.names = 17;
    for (uint32_t j = 0; j < 17; j++) {
        h.names_part[j] = (struct trove_capture_names_part){15000000, 1};
        h.names_bytes += 15000000;
    }
    b.len = 0;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, GOLDEN_LEN + 17 * 8);
    if (b.len == GOLDEN_LEN + 17 * 8) {
        memcpy(big, b.ptr, b.len);
        for (uint32_t j = 0; j < 17; j++)
            trove__put_le32(big + GOLDEN_LEN - 8 + 8 * j, 16000000);
        trove__put_le64(big + 64, 17 * (uint64_t)16000000);
        fix_checksum(big, b.len);
        expect_bad(big, b.len, TROVE_ERR_CORRUPT, 64, "over the", "names over 256 MiB");
        corpus_write("names-parts-over-256m.bin", big, b.len);
    }
    trove_bytes_free(&b);
    trove_bytes_free(&v3);
}

static char root[] = "/tmp/trove_test_capture_XXXXXX";
static char sdir[512];

static struct trove_store *open_store(unsigned flags)
{
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int rc = trove_store_open(sdir, flags | TROVE_STORE_NOSYNC, &s, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "store open: %s\n", diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    return s;
}

static int count_object(void *ctx, const struct trove_digest *d)
{
    (void)d;
    (*(uint64_t *)ctx)++;
    return 0;
}

static uint64_t store_objects(struct trove_store *s)
{
    uint64_t n = 0;
    CHECK_EQ_INT(trove_backend_list(trove_store_backend(s), count_object, &n), TROVE_OK);
    return n;
}

/* A generated capture of n events (sorted by start, as gen makes them). */
static void gen_capture(uint64_t n, uint64_t seed, struct trove_events *ev, struct trove_names **names)
{
    struct trove_gen_options g;
    trove_gen_defaults(&g);
    g.events = n;
    g.seed = seed;
    g.names = 500;
    CHECK_EQ_INT(trove_names_new(names), TROVE_OK);
    CHECK_EQ_INT(trove_gen(&g, ev, *names), TROVE_OK);
    CHECK_EQ_INT(ev->len, n);
}

static void progress(void *ctx, uint64_t done, uint64_t total)
{
    uint64_t *p = ctx;
    CHECK(done == p[0] + 1 && done <= total);
    p[0] = done;
    p[1] = total;
}

static int write_format; /* write_capture's segment format (0: deflate) */

static int write_capture(struct trove_store *s, const char *name, const struct trove_events *ev,
                         const struct trove_names *names, uint64_t seg_bytes, uint32_t fe,
                         struct trove_capture_info *info)
{
    struct trove_capture_options o;
    struct trove_diag diag = {0};
    uint64_t prog[2] = {0, 0};
    int rc;
    memset(&o, 0, sizeof o);
    o.segment_bytes = seg_bytes;
    o.frame_events = fe;
    o.segment_format = write_format;
    o.progress = progress;
    o.progress_ctx = prog;
    rc = trove_capture_write(s, name, ev->ev, ev->len, names, &o, info, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "write %s: %s\n", name, diag.msg);
    else
        CHECK(prog[0] == info->segments && (info->segments == 0 || prog[1] == info->segments));
    return rc;
}

static int same_info(const struct trove_capture_info *a, const struct trove_capture_info *b)
{
    return a->events == b->events && a->segments == b->segments && a->first_ns == b->first_ns &&
           a->end_ns == b->end_ns && a->names == b->names && a->raw_bytes == b->raw_bytes &&
           a->stored_bytes == b->stored_bytes;
}

/* The volume's objects, read back by hand, are what docs/formats/capture.md says. */
static void check_layout(struct trove_store *s, const char *name, const struct trove_events *ev,
                         const struct trove_names *names, uint64_t per, uint32_t fe)
{
    struct trove_volume *v = NULL;
    struct trove_wire_decoder *dec = NULL;
    struct trove_names *back = NULL;
    struct trove_bytes obj = {0};
    struct trove_event *buf = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *buf);
    struct trove_capture_header h;
    uint64_t segs = (ev->len + per - 1) / per;

    CHECK(buf != NULL);
    CHECK_EQ_INT(trove_volume_open(s, name, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_wire_decoder_new(&dec), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
    if (!v || !buf)
        goto out;
    CHECK(trove_volume_is_objects(v));
    CHECK_EQ_INT(trove_volume_get_object(v, 0, &obj), TROVE_OK);
    CHECK_EQ_INT(trove_capture_header_decode(obj.ptr, obj.len, &h, NULL), TROVE_OK);
    CHECK_EQ_INT(h.info.segments, segs);
    CHECK_EQ_INT(h.frame_events, fe);
    CHECK_EQ_INT(h.segment_bytes, 32 * per);
    /* the names: slot 1, and with parts the slots after the segments (and the flows) */
    for (uint32_t j = 0, total = 0; j < trove__capture_parts(&h); j++) {
        uint64_t slot = j == 0 ? 1 : 2 + segs + (h.info.flows > 0) + j - 1, entries = 0;
        CHECK_EQ_INT(trove_volume_get_object(v, slot, &obj), TROVE_OK);
        CHECK_EQ_INT(obj.len, trove__capture_part_bytes(&h, j));
        CHECK(obj.len <= TROVE_CAPTURE_MAX_OBJECT);
        for (size_t at = 0; at < obj.len;) {
            struct trove_wire_frame fr;
            struct trove_wire_header wh;
            if (trove_wire_parse_header(obj.ptr + at, obj.len - at, &wh, NULL) != TROVE_OK ||
                trove_wire_decode(dec, obj.ptr + at, obj.len - at, buf, 0, back, &fr, NULL) !=
                    TROVE_OK) {
                CHECK(0);
                break;
            }
            CHECK_EQ_INT(fr.format, TROVE_WIRE_NAMES);
            entries += wh.count;
            at += fr.frame_len;
        }
        CHECK_EQ_INT(entries, trove__capture_part_entries(&h, j));
        total += (uint32_t)entries;
        CHECK_EQ_INT(trove_names_count(back), total); /* a part's entries follow the last's */
    }
    CHECK(trove_names_equal(names, back));
    for (uint64_t k = 0; k < segs; k++) {
        size_t first = (size_t)(k * per), at = 0, got = 0, frames = 0;
        CHECK_EQ_INT(trove_volume_get_object(v, 2 + k, &obj), TROVE_OK);
        CHECK_EQ_INT(obj.len, h.seg[k].bytes);
        while (at < obj.len) {
            struct trove_wire_frame fr;
            if (trove_wire_decode(dec, obj.ptr + at, obj.len - at, buf, TROVE_WIRE_MAX_EVENTS,
                                  NULL, &fr, NULL) != TROVE_OK) {
                CHECK(0);
                break;
            }
            CHECK_EQ_INT(fr.format, TROVE_WIRE_DEFLATE);
            CHECK(fr.n_events >= 1 && fr.n_events <= fe);
            CHECK(first + got + fr.n_events <= ev->len &&
                  memcmp(buf, ev->ev + first + got, fr.n_events * sizeof *buf) == 0);
            got += fr.n_events;
            at += fr.frame_len;
            frames++;
        }
        CHECK_EQ_INT(got, h.seg[k].events);
        CHECK_EQ_INT(frames, h.seg[k].frames);
        CHECK_EQ_INT(got, k + 1 < segs ? per : ev->len - first);
    }
    { /* and nothing after the last object the header counts */
        struct trove_volume_info vi;
        CHECK_EQ_INT(trove_volume_info(v, &vi), TROVE_OK);
        CHECK_EQ_INT(vi.slots, trove__capture_profile_slot(&h) + h.profile_objects);
    }
    trove_capture_header_free(&h);
out:
    trove_volume_close(v);
    trove_bytes_free(&obj);
    trove_names_free(back);
    trove_wire_decoder_free(dec);
    free(buf);
}

static void test_write(void)
{
    struct trove_store *s = open_store(TROVE_STORE_CREATE);
    struct trove_events ev = {0}, small = {0}, bad = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info, again, got;
    struct trove_capture_entry *list = NULL;
    struct trove_volume *v = NULL;
    struct trove_capture_options o;
    struct trove_diag diag = {0};
    size_t count = 0;
    uint64_t objects;

    if (!s)
        return;
    /* An empty store lists no captures (the service's first GET /api/captures). */
    CHECK_EQ_INT(trove_capture_list(s, &list, &count), TROVE_OK);
    CHECK_EQ_INT(count, 0);
    CHECK(list == NULL);
    gen_capture(100000, 3, &ev, &names);
    /* 2048 events a segment, 500 a frame: 49 segments of 5 frames (the last of 1696 events). */
    CHECK_EQ_INT(write_capture(s, "cap", &ev, names, 65536, 500, &info), TROVE_OK);
    CHECK_EQ_INT(info.events, 100000);
    CHECK_EQ_INT(info.segments, 49);
    CHECK_EQ_INT(info.raw_bytes, 3200000);
    CHECK_EQ_INT(info.names, trove_names_count(names));
    CHECK_EQ_INT(info.first_ns, ev.ev[0].start_ns);
    CHECK(info.end_ns >= ev.ev[ev.len - 1].start_ns);
    CHECK_EQ_INT(info.new_objects, 51);
    CHECK(info.stored_bytes > 0 && info.stored_bytes < info.raw_bytes);
    objects = store_objects(s);
    check_layout(s, "cap", &ev, names, 2048, 500);

    memset(&got, 0, sizeof got);
    CHECK_EQ_INT(trove_capture_info(s, "cap", &got, &diag), TROVE_OK);
    CHECK(same_info(&info, &got) && got.new_objects == 0);

    /* Written again, the same objects: nothing new in the store. And under another name,
     * the same bytes: only its recipe is new. */
    CHECK_EQ_INT(write_capture(s, "cap", &ev, names, 65536, 500, &again), TROVE_OK);
    CHECK(same_info(&info, &again));
    CHECK_EQ_INT(again.new_objects, 0);
    CHECK_EQ_INT(store_objects(s), objects);
    CHECK_EQ_INT(write_capture(s, "cap2", &ev, names, 65536, 500, &again), TROVE_OK);
    CHECK_EQ_INT(again.new_objects, 0);
    CHECK_EQ_INT(store_objects(s), objects);

    /* Another shape replaces the capture whole: fewer segments, then more. */
    for (size_t i = 0; i < 5000; i++)
        CHECK_EQ_INT(trove_events_push(&small, &ev.ev[i]), TROVE_OK);
    CHECK_EQ_INT(write_capture(s, "cap2", &small, names, 65536, 500, &again), TROVE_OK);
    CHECK_EQ_INT(again.segments, 3);
    CHECK_EQ_INT(again.new_objects, 2); /* the last segment and the header */
    check_layout(s, "cap2", &small, names, 2048, 500);
    CHECK_EQ_INT(write_capture(s, "cap2", &ev, names, 32768 * 32, 0, &again), TROVE_OK);
    CHECK_EQ_INT(again.segments, 4);
    check_layout(s, "cap2", &ev, names, 32768, TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);

    /* No events, no names: a header and one empty names frame. */
    memset(&o, 0, sizeof o);
    CHECK_EQ_INT(trove_capture_write(s, "empty", NULL, 0, NULL, &o, &again, &diag), TROVE_OK);
    CHECK(again.events == 0 && again.segments == 0 && again.first_ns == 0 && again.end_ns == 0);
    CHECK_EQ_INT(again.stored_bytes, 96 + 16);
    CHECK_EQ_INT(trove_capture_info(s, "empty", &got, NULL), TROVE_OK);
    CHECK(same_info(&again, &got));

    /* One event per segment and per frame. */
    CHECK_EQ_INT(write_capture(s, "tiny", &small, names, 32, 1, &again), TROVE_OK);
    CHECK_EQ_INT(again.segments, 5000);

    /* Names the store holds otherwise. */
    CHECK_EQ_INT(trove_volume_create(s, "blocks", 1 << 20, 0, NULL, NULL), TROVE_OK);
    memset(&diag, 0, sizeof diag);
    CHECK_EQ_INT(trove_capture_write(s, "blocks", small.ev, small.len, names, NULL, &again, &diag),
                 TROVE_ERR_EXISTS);
    CHECK(strstr(diag.msg, "blocks") && strstr(diag.msg, "block volume"));
    CHECK_EQ_INT(trove_capture_info(s, "blocks", &got, &diag), TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "not a capture") != NULL);
    /* An object volume with something else in slot 0 is not a capture either ... */
    CHECK_EQ_INT(trove_volume_create_objects(s, "objs", 3, 4096, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_put_object(v, 0, "not a header", 12), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_capture_write(s, "objs", small.ev, small.len, names, NULL, &again, &diag),
                 TROVE_ERR_EXISTS);
    CHECK(strstr(diag.msg, "not a capture") && strstr(diag.msg, "cut short"));
    CHECK_EQ_INT(trove_capture_info(s, "objs", &got, &diag), TROVE_ERR_TRUNCATED);
    CHECK(strstr(diag.msg, "capture objs: header (slot 0)") != NULL);
    /* ... but one that no write filled (a crash before the commit) is taken over. */
    CHECK_EQ_INT(trove_volume_create_objects(s, "unfinished", 7, 1 << 20, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "unfinished", &got, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(write_capture(s, "unfinished", &small, names, 0, 0, &again), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "unfinished", &got, NULL), TROVE_OK);
    CHECK_EQ_INT(got.events, 5000);

    /* A snapshot of a capture is a capture, read-only. */
    CHECK_EQ_INT(trove_snapshot_create(s, "cap2", "cap2.snap", NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "cap2.snap", &got, NULL), TROVE_OK);
    CHECK_EQ_INT(got.events, 100000);
    CHECK_EQ_INT(trove_capture_write(s, "cap2.snap", small.ev, small.len, names, NULL, &again,
                                     &diag),
                 TROVE_ERR_READONLY);
    CHECK(strstr(diag.msg, "snapshot") != NULL);

    CHECK_EQ_INT(trove_capture_info(s, "nothing", &got, &diag), TROVE_ERR_NOTFOUND);
    CHECK(strstr(diag.msg, "nothing") != NULL);

    /* The list: captures sorted, block volumes left out, a bad header listed with its error. */
    CHECK_EQ_INT(trove_capture_list(s, &list, &count), TROVE_OK);
    CHECK_EQ_INT(count, 7);
    if (count == 7) {
        static const char *const want[] = {"cap", "cap2", "cap2.snap", "empty", "objs", "tiny",
                                           "unfinished"};
        for (size_t i = 0; i < 7; i++)
            CHECK(strcmp(list[i].name, want[i]) == 0);
        CHECK(list[0].error == TROVE_OK && same_info(&list[0].info, &info));
        CHECK(list[4].error == TROVE_ERR_TRUNCATED && list[4].info.events == 0);
        CHECK(list[5].error == TROVE_OK && list[5].info.segments == 5000);
    }
    free(list);

    /* Bad arguments change nothing. */
    objects = store_objects(s);
    memset(&o, 0, sizeof o);
    CHECK_EQ_INT(trove_capture_write(s, "a/b", small.ev, small.len, names, &o, &again, &diag),
                 TROVE_ERR_INVALID);
    o.segment_bytes = 33;
    CHECK_EQ_INT(trove_capture_write(s, "x", small.ev, small.len, names, &o, &again, &diag),
                 TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "multiple of 32") != NULL);
    o.segment_bytes = TROVE_CAPTURE_MAX_SEGMENT_BYTES + 32;
    CHECK_EQ_INT(trove_capture_write(s, "x", small.ev, small.len, names, &o, &again, &diag),
                 TROVE_ERR_INVALID);
    o.segment_bytes = 0;
    o.frame_events = TROVE_WIRE_MAX_EVENTS + 1;
    CHECK_EQ_INT(trove_capture_write(s, "x", small.ev, small.len, names, &o, &again, &diag),
                 TROVE_ERR_INVALID);
    o.frame_events = 0;
    CHECK_EQ_INT(trove_capture_write(s, "x", NULL, 5, names, &o, &again, &diag), TROVE_ERR_INVALID);
    small.ev[4321].pad = 1;
    CHECK_EQ_INT(trove_capture_write(s, "x", small.ev, small.len, names, &o, &again, &diag),
                 TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "event 4321") != NULL);
    small.ev[4321].pad = 0;
    /* 2^18 + 1 segments of one event: over the limit, refused before anything is stored. */
    CHECK_EQ_INT(trove_events_reserve(&bad, TROVE_CAPTURE_MAX_SEGMENTS + 1), TROVE_OK);
    if (bad.ev) {
        memset(bad.ev, 0, (size_t)(TROVE_CAPTURE_MAX_SEGMENTS + 1) * sizeof *bad.ev);
        o.segment_bytes = 32;
        CHECK_EQ_INT(trove_capture_write(s, "x", bad.ev, (size_t)TROVE_CAPTURE_MAX_SEGMENTS + 1,
                                         names, &o, &again, &diag),
                     TROVE_ERR_LIMIT);
        CHECK(strstr(diag.msg, "use larger segments") != NULL);
    }
    CHECK_EQ_INT(trove_capture_info(s, "x", &got, NULL), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(store_objects(s), objects);

    trove_store_close(s);
    /* A read-only store describes and lists captures. */
    s = open_store(TROVE_STORE_READONLY);
    CHECK_EQ_INT(trove_capture_info(s, "cap", &got, NULL), TROVE_OK);
    CHECK(same_info(&info, &got));
    CHECK_EQ_INT(trove_capture_list(s, &list, &count), TROVE_OK);
    CHECK_EQ_INT(count, 7);
    free(list);
    CHECK_EQ_INT(trove_capture_write(s, "cap", small.ev, small.len, names, NULL, &again, &diag),
                 TROVE_ERR_READONLY);
    trove_store_close(s);
    trove_events_free(&ev);
    trove_events_free(&small);
    trove_events_free(&bad);
    trove_names_free(names);
}

/* ---- replay ---------------------------------------------------------------------------- */

/* What a replay's sink saw: every batch decoded, checked to be one whole frame. */
struct collect {
    struct trove_wire_decoder *dec;
    struct trove_event *buf;
    struct trove_events ev;
    struct trove_names *names;
    int wire;
    uint32_t max_frame;
    uint64_t batches, name_batches, bad, last_item;
    struct trove_bytes item_bytes[64]; /* the bytes of items 0..63, for the fast path */
};

/* A batch is whole frames: one names frame, or event frames of one format holding at most
 * TROVE_CAPTURE_BATCH_EVENTS events (more only as a single frame). */
static int collect_send(void *ctx, const struct trove_stream_batch *b)
{
    struct collect *c = ctx;
    struct trove_wire_frame fr;
    uint64_t events = 0, frames = 0;
    int names = 0;

    if (b->item < c->last_item || b->len == 0) {
        c->bad++;
        return 0;
    }
    c->last_item = b->item;
    if (b->item < 64)
        trove_bytes_append(&c->item_bytes[b->item], b->data, b->len);
    c->batches++;
    for (size_t at = 0; at < b->len; at += fr.frame_len, frames++) {
        if (trove_wire_decode(c->dec, (const uint8_t *)b->data + at, b->len - at, c->buf,
                              TROVE_WIRE_MAX_EVENTS, c->names, &fr, NULL) != TROVE_OK) {
            c->bad++;
            return 0;
        }
        if (fr.format == TROVE_WIRE_NAMES) {
            names = 1;
            if (at != 0 || fr.frame_len != b->len || b->events != 0 || c->ev.len > 0)
                c->bad++; /* names come first, one frame a batch */
            continue;
        }
        if (fr.format != c->wire || fr.n_events == 0 || fr.n_events > c->max_frame)
            c->bad++;
        events += fr.n_events;
        for (size_t i = 0; i < fr.n_events; i++)
            trove_events_push(&c->ev, &c->buf[i]);
    }
    if (names) {
        c->name_batches++;
        return 0;
    }
    if (events != b->events || (frames > 1 && events > TROVE_CAPTURE_BATCH_EVENTS))
        c->bad++;
    return 0;
}

static void collect_init(struct collect *c, int wire, uint32_t max_frame)
{
    memset(c, 0, sizeof *c);
    CHECK_EQ_INT(trove_wire_decoder_new(&c->dec), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&c->names), TROVE_OK);
    c->buf = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *c->buf);
    CHECK(c->buf != NULL);
    c->wire = wire;
    c->max_frame = max_frame;
}

static void collect_free(struct collect *c)
{
    trove_wire_decoder_free(c->dec);
    trove_names_free(c->names);
    free(c->buf);
    trove_events_free(&c->ev);
    for (int i = 0; i < 64; i++)
        trove_bytes_free(&c->item_bytes[i]);
}

/* The stream replays run through: the store's backend unless replay_be is set, a
 * rendezvous sender unless replay_mode is set. */
static struct trove_backend *replay_be;
static int replay_mode = TROVE_STREAM_SEND_RENDEZVOUS;
/* The replays' from_event (expect_range wants only the events from that index on). */
static uint64_t replay_from_event;

static int replay(struct trove_store *s, const char *name, uint64_t from, uint64_t to, int wire,
                  uint32_t fe, struct collect *c, struct trove_stream_stats *stats,
                  struct trove_diag *diag)
{
    struct trove_capture_replay_options ro;
    struct trove_stream_options so;
    struct trove_stream *st = NULL;
    struct trove_stream_sink sink;
    int rc;

    trove_stream_options_default(&so);
    so.retries = 1;
    so.backoff_ms = 1;
    so.send_mode = replay_mode;
    so.depth = 8;
    so.budget = 256 << 10; /* a few segments at a time */
    CHECK_EQ_INT(trove_stream_new(replay_be ? replay_be : trove_store_backend(s), &so, &st),
                 TROVE_OK);
    memset(&ro, 0, sizeof ro);
    ro.from_ns = from;
    ro.to_ns = to;
    ro.wire = wire;
    ro.frame_events = fe;
    ro.from_event = replay_from_event;
    memset(&sink, 0, sizeof sink);
    sink.send = collect_send;
    sink.ctx = c;
    rc = trove_capture_replay(s, name, st, &ro, &sink, stats, diag);
    trove_stream_free(st);
    return rc;
}

/* Replay [from, to) and require exactly the input's events that start in it, in order. */
static void expect_range(struct trove_store *s, const char *name, const struct trove_events *ev,
                         const struct trove_names *names, uint64_t from, uint64_t to, int wire,
                         uint32_t fe, uint32_t stored_fe)
{
    struct collect c;
    struct trove_stream_stats stats;
    struct trove_diag diag = {0};
    size_t want = 0, i, j = 0;
    int rc;

    collect_init(&c, wire, fe ? fe : stored_fe);
    rc = replay(s, name, from, to, wire, fe, &c, &stats, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "replay %s: %s\n", name, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK_EQ_INT(c.bad, 0);
    CHECK(c.name_batches >= 1);
    CHECK(trove_names_equal(names, c.names));
    for (i = 0; i < ev->len; i++) {
        if (ev->ev[i].start_ns < from || (to != UINT64_MAX && ev->ev[i].start_ns >= to) ||
            i < replay_from_event)
            continue;
        want++;
        if (j < c.ev.len && memcmp(&ev->ev[i], &c.ev.ev[j], sizeof ev->ev[i]) == 0)
            j++;
    }
    CHECK_EQ_INT(c.ev.len, want);
    CHECK_EQ_INT(j, want);
    CHECK_EQ_INT(stats.events, want);
    CHECK_EQ_INT(stats.batches, c.batches);
    collect_free(&c);
}

/* Replace object d's bytes (the backend does not rehash: a damaged object). */
static void damage(struct trove_store *s, const struct trove_digest *d, const void *bytes,
                   size_t len)
{
    struct trove_backend *be = trove_store_backend(s);
    CHECK_EQ_INT(trove_backend_delete(be, d), TROVE_OK);
    if (len)
        CHECK_EQ_INT(trove_backend_put(be, d, bytes, len, NULL), TROVE_OK);
}

static void slot_digest(struct trove_store *s, const char *name, uint64_t slot,
                        struct trove_digest *d)
{
    struct trove_volume *v = NULL;
    CHECK_EQ_INT(trove_volume_open(s, name, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_slot_digests(v, slot, 1, d), TROVE_OK);
    trove_volume_close(v);
}

static void expect_replay_error(struct trove_store *s, const char *name, int wire, int want,
                                const char *needle1, const char *needle2, const char *what)
{
    struct collect c;
    struct trove_diag diag = {0};
    int rc;
    collect_init(&c, wire, TROVE_WIRE_MAX_EVENTS);
    rc = replay(s, name, 0, UINT64_MAX, wire, 0, &c, NULL, &diag);
    if (rc != want || (needle1 && !strstr(diag.msg, needle1)) ||
        (needle2 && !strstr(diag.msg, needle2)))
        fprintf(stderr, "%s: got %d (%s)\n", what, rc, diag.msg);
    CHECK_EQ_INT(rc, want);
    CHECK(!needle1 || strstr(diag.msg, needle1));
    CHECK(!needle2 || strstr(diag.msg, needle2));
    collect_free(&c);
}

static void test_replay(void)
{
    static const int wires[] = {TROVE_WIRE_RAW, TROVE_WIRE_PACKED, TROVE_WIRE_DEFLATE};
    struct trove_store *s = open_store(TROVE_STORE_CREATE);
    struct trove_events ev = {0}, shuf = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info;
    struct trove_digest d;
    struct trove_bytes obj = {0};
    struct collect c;
    char hex[33], bad[64];
    uint64_t a, b, seed = 5;

    if (!s)
        return;
    gen_capture(100000, 9, &ev, &names);
    CHECK_EQ_INT(write_capture(s, "r", &ev, names, 65536, 500, &info), TROVE_OK);
    CHECK_EQ_INT(info.segments, 49);
    a = ev.ev[ev.len / 3].start_ns;
    b = ev.ev[2 * ev.len / 3].start_ns;
    for (int w = 0; w < 3; w++) {
        expect_range(s, "r", &ev, names, 0, UINT64_MAX, wires[w], 0, 500);
        expect_range(s, "r", &ev, names, 0, UINT64_MAX, wires[w], 77, 500);
        expect_range(s, "r", &ev, names, a, b, wires[w], 0, 500);
        expect_range(s, "r", &ev, names, a + 1, b + 1, wires[w], 4096, 500);
    }
    /* Edges: nothing before the first event or from the end on; one nanosecond; a range
     * ending exactly at a start leaves that event out. */
    expect_range(s, "r", &ev, names, 0, info.first_ns, TROVE_WIRE_DEFLATE, 0, 500);
    expect_range(s, "r", &ev, names, ev.ev[ev.len - 1].start_ns + 1, UINT64_MAX,
                 TROVE_WIRE_PACKED, 0, 500);
    expect_range(s, "r", &ev, names, a, a + 1, TROVE_WIRE_RAW, 0, 500);
    expect_range(s, "r", &ev, names, a, a, TROVE_WIRE_RAW, 0, 500);
    expect_range(s, "r", &ev, names, ev.ev[ev.len - 1].start_ns, UINT64_MAX, TROVE_WIRE_RAW, 1,
                 500);

    /* From an event index (a viewer catching up from the last event it has): exactly the
     * events from there on, alone or with a time range, at a segment's first event, inside
     * one, the last event, and past the end; the segments before it are not read. */
    {
        const uint64_t froms[] = {1, 2048, 2049, 4095, ev.len / 2, ev.len - 1, ev.len,
                                  ev.len + 5};
        for (size_t f = 0; f < sizeof froms / sizeof froms[0]; f++) {
            replay_from_event = froms[f];
            for (int w = 0; w < 3; w++)
                expect_range(s, "r", &ev, names, 0, UINT64_MAX, wires[w], 0, 500);
            expect_range(s, "r", &ev, names, a, b, TROVE_WIRE_PACKED, 300, 500);
        }
        replay_from_event = ev.len - 1; /* one event: the names and the last segment only */
        {
            struct trove_stream_stats st;
            collect_init(&c, TROVE_WIRE_DEFLATE, 500);
            CHECK_EQ_INT(replay(s, "r", 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, &c, &st, NULL),
                         TROVE_OK);
            CHECK_EQ_INT(st.items, 2);
            CHECK_EQ_INT(c.ev.len, 1);
            collect_free(&c);
        }
        replay_from_event = 0;
    }

    /* Every send mode, and a slow backend whose downloads finish out of order. */
    {
        struct trove_fault_options fo;
        memset(&fo, 0, sizeof fo);
        fo.latency_us = 300;
        CHECK_EQ_INT(trove_backend_fault_wrap(trove_store_backend(s), &fo, &replay_be), TROVE_OK);
        for (replay_mode = TROVE_STREAM_SEND_INLINE; replay_mode <= TROVE_STREAM_SEND_BUFFERED;
             replay_mode++) {
            expect_range(s, "r", &ev, names, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, 500);
            expect_range(s, "r", &ev, names, a, b, TROVE_WIRE_PACKED, 300, 500);
        }
        trove_backend_close(replay_be);
        replay_be = NULL;
        replay_mode = TROVE_STREAM_SEND_RENDEZVOUS;
    }

    /* The fast path: a whole replay in the stored form sends each segment's bytes as they
     * are stored. */
    collect_init(&c, TROVE_WIRE_DEFLATE, 500);
    CHECK_EQ_INT(replay(s, "r", 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, &c, NULL, NULL), TROVE_OK);
    {
        struct trove_volume *v = NULL;
        CHECK_EQ_INT(trove_volume_open(s, "r", &v, NULL), TROVE_OK);
        for (uint64_t i = 0; i < 50 && v; i++) {
            CHECK_EQ_INT(trove_volume_get_object(v, 1 + i, &obj), TROVE_OK);
            CHECK(obj.len == c.item_bytes[i].len &&
                  memcmp(obj.ptr, c.item_bytes[i].ptr, obj.len) == 0);
        }
        trove_volume_close(v);
    }
    collect_free(&c);

    /* Unsorted input: segments overlap in time, and a range picks events from several. */
    for (size_t i = 0; i < ev.len; i++)
        CHECK_EQ_INT(trove_events_push(&shuf, &ev.ev[i]), TROVE_OK);
    for (size_t i = shuf.len - 1; i > 0; i--) {
        size_t j = (size_t)(test_rand(&seed) % (i + 1));
        struct trove_event t = shuf.ev[i];
        shuf.ev[i] = shuf.ev[j];
        shuf.ev[j] = t;
    }
    CHECK_EQ_INT(write_capture(s, "shuffled", &shuf, names, 32 * 3000, 700, &info), TROVE_OK);
    for (int w = 0; w < 3; w++)
        expect_range(s, "shuffled", &shuf, names, a, b, wires[w], 0, 700);
    expect_range(s, "shuffled", &shuf, names, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, 700);

    /* The empty capture: one names frame, nothing else. */
    CHECK_EQ_INT(trove_capture_write(s, "empty", NULL, 0, NULL, NULL, &info, NULL), TROVE_OK);
    {
        struct trove_names *none = NULL;
        struct trove_events no = {0};
        CHECK_EQ_INT(trove_names_new(&none), TROVE_OK);
        expect_range(s, "empty", &no, none, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, 2048);
        trove_names_free(none);
    }

    /* A read-only store replays. */
    trove_store_close(s);
    s = open_store(TROVE_STORE_READONLY);
    expect_range(s, "r", &ev, names, a, b, TROVE_WIRE_PACKED, 0, 500);
    trove_store_close(s);
    s = open_store(0);

    /* Bad requests. */
    expect_replay_error(s, "none", TROVE_WIRE_RAW, TROVE_ERR_NOTFOUND, "none", NULL, "missing");
    CHECK_EQ_INT(trove_volume_create(s, "blocks", 1 << 20, 0, NULL, NULL), TROVE_OK);
    expect_replay_error(s, "blocks", TROVE_WIRE_RAW, TROVE_ERR_INVALID, "not a capture", NULL,
                        "a block volume");
    expect_replay_error(s, "r", 9, TROVE_ERR_INVALID, "wire format", NULL, "wire 9");
    collect_init(&c, TROVE_WIRE_RAW, 500);
    CHECK_EQ_INT(replay(s, "r", 10, 9, TROVE_WIRE_RAW, 0, &c, NULL, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(c.batches, 0);
    collect_free(&c);

    /* Damaged objects, named in the error with the segment and the digest. Every read is
     * checked against the object's name, so a flipped byte never reaches a decoder or a
     * sink, whatever the wire (the fast path too). */
    slot_digest(s, "r", 2 + 7, &d);
    trove_digest_hex(&d, hex);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    obj.ptr[obj.len / 2] ^= 0x55; /* inside the deflate stream of a frame */
    damage(s, &d, obj.ptr, obj.len);
    for (int w = 0; w < 3; w++)
        expect_replay_error(s, "r", wires[w], TROVE_ERR_CHECKSUM, "segment 7 (slot 9)", hex,
                            "a flipped byte, verified");
    collect_init(&c, TROVE_WIRE_DEFLATE, 500);
    CHECK_EQ_INT(replay(s, "r", 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, &c, NULL, NULL),
                 TROVE_ERR_CHECKSUM);
    CHECK_EQ_INT(c.item_bytes[1 + 7].len, 0); /* not a byte of segment 7 (item 8) was sent */
    CHECK(c.ev.len <= 7 * 2048);              /* nor anything after it */
    collect_free(&c);
    /* Without verification (benchmarks only) the decoders still catch what they can. */
    trove_store_close(s);
    s = open_store(TROVE_STORE_NOVERIFY);
    for (int w = 0; w < 2; w++)
        expect_replay_error(s, "r", wires[w], TROVE_ERR_INFLATE, "segment 7 (slot 9)", hex,
                            "a flipped byte");
    expect_replay_error(s, "r", TROVE_WIRE_DEFLATE, TROVE_OK, NULL, NULL,
                        "the fast path does not inflate");
    memset(obj.ptr, 0xee, obj.len); /* frame headers gone: the fast path sees it too */
    damage(s, &d, obj.ptr, obj.len);
    expect_replay_error(s, "r", TROVE_WIRE_DEFLATE, TROVE_ERR_MAGIC, "segment 7", hex, "garbage");
    expect_replay_error(s, "r", TROVE_WIRE_RAW, TROVE_ERR_MAGIC, "segment 7", hex, "garbage");
    damage(s, &d, obj.ptr, obj.len - 1);
    expect_replay_error(s, "r", TROVE_WIRE_PACKED, TROVE_ERR_CORRUPT, "the header says", hex,
                        "a short object");
    /* Another segment's object in its place: the counts or the times give it away. */
    slot_digest(s, "r", 2 + 48, &d);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    slot_digest(s, "r", 2 + 7, &d);
    damage(s, &d, obj.ptr, obj.len);
    expect_replay_error(s, "r", TROVE_WIRE_RAW, TROVE_ERR_CORRUPT, "segment 7", NULL, "swapped");
    /* A missing object. */
    damage(s, &d, NULL, 0);
    snprintf(bad, sizeof bad, "%s", hex);
    expect_replay_error(s, "r", TROVE_WIRE_RAW, TROVE_ERR_NOTFOUND, NULL, NULL, "missing object");
    /* The names object. */
    slot_digest(s, "r", 1, &d);
    trove_digest_hex(&d, hex);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    obj.ptr[0] = 'X';
    damage(s, &d, obj.ptr, obj.len);
    expect_replay_error(s, "r", TROVE_WIRE_DEFLATE, TROVE_ERR_MAGIC, "names (slot 1)", hex,
                        "names");
    /* The header: replay refuses before it sends anything. */
    slot_digest(s, "r", 0, &d);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    obj.ptr[20] ^= 1;
    damage(s, &d, obj.ptr, obj.len);
    collect_init(&c, TROVE_WIRE_RAW, 500);
    CHECK_EQ_INT(replay(s, "r", 0, UINT64_MAX, TROVE_WIRE_RAW, 0, &c, NULL, NULL),
                 TROVE_ERR_CHECKSUM);
    CHECK_EQ_INT(c.batches, 0);
    collect_free(&c);

    trove_store_close(s);
    trove_bytes_free(&obj);
    trove_events_free(&ev);
    trove_events_free(&shuf);
    trove_names_free(names);
}

/* The frame formats of a segment object, as a bit set (1 << format). */
static unsigned segment_frame_formats(struct trove_store *s, const char *name, uint64_t k)
{
    struct trove_volume *v = NULL;
    struct trove_bytes obj = {0};
    unsigned set = 0;
    CHECK_EQ_INT(trove_volume_open(s, name, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 2 + k, &obj), TROVE_OK);
    for (size_t at = 0; at + TROVE_WIRE_HEADER_SIZE <= obj.len;) {
        struct trove_wire_header wh;
        if (trove_wire_parse_header(obj.ptr + at, obj.len - at, &wh, NULL) != TROVE_OK)
            break;
        set |= 1u << wh.format;
        at += TROVE_WIRE_HEADER_SIZE + wh.payload_len;
    }
    trove_volume_close(v);
    trove_bytes_free(&obj);
    return set;
}

/*
 * Segments in format 5 (segment_format): the same events stored as columnar and as
 * columnar_deflate take fewer bytes than as deflate, the header carries the columnar flag,
 * and every wire and range replays the same events; the live writer writes format 5 too
 * and an append goes on in it; events format 5 would store larger than packed's worst case
 * are stored as deflate frames in the same capture; a capture without the flag whose segment
 * holds a format 5 frame is refused, naming the segment.
 */
static void test_segment_format(void)
{
    static const int wires[] = {TROVE_WIRE_RAW, TROVE_WIRE_PACKED, TROVE_WIRE_DEFLATE};
    static const int formats[] = {TROVE_WIRE_DEFLATE, TROVE_WIRE_COLUMNAR,
                                  TROVE_WIRE_COLUMNAR_DEFLATE};
    static const char *const cap[] = {"f-deflate", "f-columnar", "f-columnar-deflate"};
    struct trove_store *s = open_store(TROVE_STORE_CREATE);
    struct trove_events ev = {0}, wild = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info[3], back;
    struct trove_capture_options o;
    struct trove_capture_writer *w = NULL;
    struct trove_diag diag = {0};
    struct trove_digest d;
    struct trove_bytes obj = {0};
    uint64_t a, b, seed = 99;

    if (!s)
        return;
    gen_capture(60000, 12, &ev, &names);
    a = ev.ev[ev.len / 4].start_ns;
    b = ev.ev[3 * ev.len / 4].start_ns;
    for (int f = 0; f < 3; f++) {
        write_format = formats[f];
        CHECK_EQ_INT(write_capture(s, cap[f], &ev, names, 32 * 8192, 1000, &info[f]), TROVE_OK);
        write_format = 0;
        CHECK_EQ_INT(info[f].flags, f ? TROVE_CAPTURE_FLAG_COLUMNAR : 0);
        CHECK_EQ_INT(trove_capture_info(s, cap[f], &back, NULL), TROVE_OK);
        CHECK_EQ_INT(back.flags, info[f].flags);
        CHECK_EQ_INT(back.stored_bytes, info[f].stored_bytes);
        CHECK_EQ_INT(segment_frame_formats(s, cap[f], 3),
                     1u << (f ? TROVE_WIRE_COLUMNAR : TROVE_WIRE_DEFLATE));
        for (int wi = 0; wi < 3; wi++) {
            expect_range(s, cap[f], &ev, names, 0, UINT64_MAX, wires[wi], 0, 1000);
            expect_range(s, cap[f], &ev, names, a, b, wires[wi], 333, 1000);
        }
    }
    CHECK(info[1].stored_bytes < info[0].stored_bytes);
    CHECK(info[2].stored_bytes < info[1].stored_bytes);
    /* the same names object whatever the segments */
    {
        struct trove_digest n0, n1;
        slot_digest(s, cap[0], 1, &n0);
        slot_digest(s, cap[1], 1, &n1);
        CHECK(trove_digest_equal(&n0, &n1));
    }

    /* The live writer: format 5 segments, committed twice; an append without a format goes
     * on in format 5 (the flag stays), and the whole replays. */
    memset(&o, 0, sizeof o);
    o.segment_bytes = 32 * 8192;
    o.frame_events = 1000;
    o.segment_format = TROVE_WIRE_COLUMNAR;
    CHECK_EQ_INT(trove_capture_writer_open(s, "f-live", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, names, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev, 25000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &back, &diag), TROVE_OK);
    CHECK_EQ_INT(back.flags, TROVE_CAPTURE_FLAG_COLUMNAR);
    trove_capture_writer_close(w);
    w = NULL;
    CHECK_EQ_INT(trove_capture_writer_open(s, "f-live", 1, NULL, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev + 25000, ev.len - 25000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &back, &diag), TROVE_OK);
    CHECK_EQ_INT(back.flags, TROVE_CAPTURE_FLAG_COLUMNAR);
    CHECK_EQ_INT(back.events, ev.len);
    trove_capture_writer_close(w);
    w = NULL;
    CHECK_EQ_INT(segment_frame_formats(s, "f-live", 0), 1u << TROVE_WIRE_COLUMNAR);
    CHECK_EQ_INT(segment_frame_formats(s, "f-live", 5), 1u << TROVE_WIRE_COLUMNAR);
    for (int wi = 0; wi < 3; wi++)
        expect_range(s, "f-live", &ev, names, 0, UINT64_MAX, wires[wi], 0, 1000);
    expect_range(s, "f-live", &ev, names, a, b, TROVE_WIRE_PACKED, 0, 1000);
    /* ... and a live writer of a bad segment format is refused */
    o.segment_format = TROVE_WIRE_PACKED;
    CHECK_EQ_INT(trove_capture_writer_open(s, "f-bad", 0, &o, &w, &diag), TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "segment format") != NULL);
    o.segment_format = 0x205;
    CHECK_EQ_INT(trove_capture_write(s, "f-bad", ev.ev, 10, names, &o, NULL, &diag),
                 TROVE_ERR_INVALID);

    /* Events whose columns are noise (random starts, durations, names, threads, kinds,
     * depths, extras): format 5 still stays within packed's worst case (16 + 44 bytes an
     * event a frame: past it a frame would be stored as deflate), and the capture replays. */
    for (size_t i = 0; i < 3000; i++) {
        struct trove_event e;
        memset(&e, 0, sizeof e);
        e.start_ns = test_rand(&seed);
        e.dur_ns = test_rand(&seed) >> 1;
        if (e.start_ns > UINT64_MAX - e.dur_ns)
            e.start_ns = UINT64_MAX - e.dur_ns;
        e.name_id = (uint32_t)test_rand(&seed);
        e.tid = (uint32_t)test_rand(&seed);
        e.depth = (uint8_t)test_rand(&seed);
        e.kind = (uint8_t)(test_rand(&seed) % 5);
        e.extra = (uint32_t)test_rand(&seed);
        CHECK_EQ_INT(trove_events_push(&wild, &e), TROVE_OK);
    }
    write_format = TROVE_WIRE_COLUMNAR;
    CHECK_EQ_INT(write_capture(s, "f-wild", &wild, NULL, 32 * 1024, 100, &back), TROVE_OK);
    write_format = 0;
    CHECK_EQ_INT(back.flags, TROVE_CAPTURE_FLAG_COLUMNAR);
    {
        unsigned all = 0;
        for (uint64_t k = 0; k < back.segments; k++)
            all |= segment_frame_formats(s, "f-wild", k);
        CHECK_EQ_INT(all, 1u << TROVE_WIRE_COLUMNAR);
        CHECK(back.stored_bytes < 40 * wild.len); /* about 34.5 bytes an event, all in */
        {
            struct trove_names *none = NULL;
            CHECK_EQ_INT(trove_names_new(&none), TROVE_OK);
            expect_range(s, "f-wild", &wild, none, 0, UINT64_MAX, TROVE_WIRE_RAW, 0, 100);
            trove_names_free(none);
        }
    }

    /* A capture whose header lost the flag (rewritten with a right checksum under its name,
     * read without verification) while its segments hold format 5 frames: refused, as any
     * frame in a format the header does not allow. */
    trove_store_close(s);
    s = open_store(TROVE_STORE_NOVERIFY);
    slot_digest(s, cap[1], 0, &d);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    CHECK_EQ_INT(trove__get_le32(obj.ptr + 12), TROVE_CAPTURE_FLAG_COLUMNAR);
    trove__put_le32(obj.ptr + 12, 0);
    fix_checksum(obj.ptr, obj.len);
    damage(s, &d, obj.ptr, obj.len);
    expect_replay_error(s, cap[1], TROVE_WIRE_DEFLATE, TROVE_ERR_CORRUPT,
                        "is columnar, not deflate", "segment 0", "the flag gone: fast path");
    expect_replay_error(s, cap[1], TROVE_WIRE_RAW, TROVE_ERR_CORRUPT, "is columnar, not deflate",
                        "segment 0", "the flag gone");

    trove_store_close(s);
    trove_bytes_free(&obj);
    trove_events_free(&ev);
    trove_events_free(&wild);
    trove_names_free(names);
}

/* Seeds for the walk of fuzz_capture: a segment and the names of a small capture, behind the
 * target's parameter blocks (see fuzz/fuzz_capture.c). */
/* The header of capture `name`, decoded (free it). */
static int read_header(struct trove_store *s, const char *name, struct trove_capture_header *h)
{
    struct trove_volume *v = NULL;
    struct trove_bytes obj = {0};
    int rc = trove_volume_open(s, name, &v, NULL);
    memset(h, 0, sizeof *h);
    if (rc == TROVE_OK)
        rc = trove_volume_get_object(v, 0, &obj);
    if (rc == TROVE_OK)
        rc = trove_capture_header_decode(obj.ptr, obj.len, h, NULL);
    trove_bytes_free(&obj);
    trove_volume_close(v);
    return rc;
}

static void seed(const char *file, const uint8_t *params, size_t np, const struct trove_bytes *obj)
{
    struct trove_bytes b = {0};
    CHECK_EQ_INT(trove_bytes_append(&b, params, np), TROVE_OK);
    CHECK_EQ_INT(trove_bytes_append(&b, obj->ptr, obj->len), TROVE_OK);
    corpus_write(file, b.ptr, b.len);
    trove_bytes_free(&b);
}

static void test_corpus_seeds(void)
{
    struct trove_store *s;
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info;
    struct trove_volume *v = NULL;
    struct trove_bytes seg = {0}, nm = {0};
    /* 'S' wire, stored frame_events - 1, replay frame_events, range, events, frames */
    uint8_t p[13] = {'S', 3, 49, 0, 0, 0, 0, 64, 0, 0, 0, 2, 0};

    if (!getenv("TROVE_CAPTURE_CORPUS"))
        return;
    s = open_store(TROVE_STORE_CREATE);
    gen_capture(300, 1, &ev, &names);
    CHECK_EQ_INT(write_capture(s, "seed", &ev, names, 64 * 32, 50, &info), TROVE_OK);
    CHECK_EQ_INT(trove_volume_open(s, "seed", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 2, &seg), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 1, &nm), TROVE_OK);
    trove_volume_close(v);
    seed("seg-deflate-whole.bin", p, sizeof p, &seg);
    p[1] = 1;
    p[6] = 1; /* [0, 2^r) holds half of the segment's events */
    while (p[6] < 63 && ((uint64_t)1 << p[6]) <= ev.ev[32].start_ns)
        p[6]++;
    seed("seg-raw-window.bin", p, sizeof p, &seg);
    p[1] = 2;
    p[4] = 7;
    p[6] = 0;
    seed("seg-packed-7.bin", p, sizeof p, &seg);
    p[0] = 'N';
    p[1] = (uint8_t)info.names;
    p[2] = (uint8_t)(info.names >> 8);
    seed("names.bin", p, 3, &nm);
    /* the same events in format 5: the walk of a capture with the columnar flag (bit 7 of
     * the wire byte) */
    write_format = TROVE_WIRE_COLUMNAR;
    CHECK_EQ_INT(write_capture(s, "seed5", &ev, names, 64 * 32, 50, &info), TROVE_OK);
    write_format = 0;
    CHECK_EQ_INT(trove_volume_open(s, "seed5", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 2, &seg), TROVE_OK);
    trove_volume_close(v);
    {
        uint8_t q[13] = {'S', 0x80 | 3, 49, 0, 0, 0, 0, 64, 0, 0, 0, 2, 0};
        seed("seg-columnar-whole.bin", q, sizeof q, &seg);
        q[1] = 0x80 | 1;
        q[4] = 7;
        seed("seg-columnar-raw-7.bin", q, sizeof q, &seg);
        q[1] = 3; /* no flag: refused, a format 5 frame in a deflate capture */
        seed("seg-columnar-unflagged.bin", q, sizeof q, &seg);
    }
    /* names in parts (cut small): part 1 of a capture's parts, as the walk of names part
     * 1 of 3 */
    trove_testing_capture_names_cut(128, 512);
    CHECK_EQ_INT(write_capture(s, "seedparts", &ev, names, 64 * 32, 50, &info), TROVE_OK);
    trove_testing_capture_names_cut(0, 0);
    {
        struct trove_capture_header h;
        CHECK_EQ_INT(read_header(s, "seedparts", &h), TROVE_OK);
        CHECK(h.names_parts >= 3);
        CHECK_EQ_INT(trove_volume_open(s, "seedparts", &v, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_volume_get_object(v, 2 + h.info.segments, &nm), TROVE_OK);
        trove_volume_close(v);
        if (h.names_parts >= 3) {
            uint8_t q[7] = {'P', 1, 1, 0, 0, 0, 0}; /* part 1 of 2 + 1 parts */
            trove__put_le32(q + 3, h.names_part[1].entries);
            seed("names-part.bin", q, sizeof q, &nm);
            q[3] ^= 1; /* entries that disagree */
            seed("names-part-entries.bin", q, sizeof q, &nm);
        }
        trove_capture_header_free(&h);
    }
    trove_bytes_free(&seg);
    trove_bytes_free(&nm);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/* The last-used marker: a round trip, a replacement, and every way a read can fail. */
static void test_marker(void)
{
    char path[600];
    uint64_t ns = 1;
    FILE *f;

    CHECK_EQ_INT(trove_capture_last_used(root, "cap", &ns), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(ns, 0);
    CHECK_EQ_INT(trove_capture_mark_used(root, "cap", 1234567890123456789ull), TROVE_OK);
    CHECK_EQ_INT(trove_capture_last_used(root, "cap", &ns), TROVE_OK);
    CHECK(ns == 1234567890123456789ull);
    CHECK_EQ_INT(trove_capture_mark_used(root, "cap", UINT64_MAX), TROVE_OK);
    CHECK_EQ_INT(trove_capture_last_used(root, "cap", &ns), TROVE_OK);
    CHECK(ns == UINT64_MAX);
    CHECK_EQ_INT(test_count_dir(strcat(strcpy(path, root), "/markers")), 1); /* no temp left */
    CHECK_EQ_INT(trove_capture_mark_used(root, "../x", 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_last_used(root, ".x", &ns), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_last_used(root, "cap", NULL), TROVE_ERR_INVALID);
    snprintf(path, sizeof path, "%s/markers/cap.last-used", root);
    static const char *const bad[] = {"", "\n", "12", "12x\n", "-1\n", " 1\n", "1\n\n",
                                      "18446744073709551616\n",
                                      "123456789012345678901234567890123\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK((f = fopen(path, "w")) != NULL);
        if (!f)
            return;
        fputs(bad[i], f);
        fclose(f);
        CHECK_EQ_INT(trove_capture_last_used(root, "cap", &ns), TROVE_ERR_CORRUPT);
    }
}

/* The header version of capture `name` (slot 0 read and decoded), or 0. */
static uint32_t header_version(struct trove_store *s, const char *name)
{
    struct trove_volume *v = NULL;
    struct trove_bytes b = {0};
    struct trove_capture_header h;
    uint32_t version = 0;
    memset(&h, 0, sizeof h);
    if (trove_volume_open(s, name, &v, NULL) == TROVE_OK &&
        trove_volume_get_object(v, 0, &b) == TROVE_OK &&
        trove_capture_header_decode(b.ptr, b.len, &h, NULL) == TROVE_OK)
        version = h.version;
    trove_capture_header_free(&h);
    trove_bytes_free(&b);
    trove_volume_close(v);
    return version;
}

/*
 * Flows and counters in a capture: the flows object in the slot after the last segment, a
 * header of version 2, the rows back whole and by time range; a capture with neither is
 * written exactly as trove_capture_write writes it (version 1, the same objects).
 */
static void test_write_flows(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_flows flows = {0}, back = {0};
    struct trove_capture_info info, got;
    struct trove_diag diag = {0};
    uint64_t objects;

    if (!s)
        return;
    gen_capture(5000, 11, &ev, &names);
    CHECK_EQ_INT(trove_capture_write(s, "plain", ev.ev, ev.len, names, NULL, &info, &diag),
                 TROVE_OK);
    objects = store_objects(s);
    CHECK_EQ_INT(trove_capture_write_trace(s, "plain2", ev.ev, ev.len, names, NULL, 0, NULL,
                                           &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(info.new_objects, 0); /* the same objects as trove_capture_write's */
    CHECK_EQ_INT(store_objects(s), objects);
    CHECK_EQ_INT(header_version(s, "plain2"), 1);
    CHECK_EQ_INT(trove_capture_read_flows(s, "plain2", 0, UINT64_MAX, &back, &diag), TROVE_OK);
    CHECK_EQ_INT(back.len, 0);

    for (uint32_t i = 0; i < 300; i++) {
        struct trove_flow f = {ev.ev[i * 10].start_ns, 1 + i / 3, ev.ev[i * 10].pid,
                               ev.ev[i * 10].tid, i % 7, (uint8_t)(i % 3), 1, {0, 0}};
        CHECK_EQ_INT(trove_flows_push(&flows, &f), TROVE_OK);
    }
    CHECK_EQ_INT(trove_capture_write_trace(s, "flowcap", ev.ev, ev.len, names, flows.f, flows.len,
                                           NULL, &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(info.flows, 300);
    CHECK_EQ_INT(header_version(s, "flowcap"), 2);
    CHECK_EQ_INT(info.new_objects, 2); /* the header and the flows: the segments are shared */
    memset(&got, 0, sizeof got);
    CHECK_EQ_INT(trove_capture_info(s, "flowcap", &got, &diag), TROVE_OK);
    CHECK(same_info(&info, &got) && got.flows == 300);
    CHECK_EQ_INT(trove_capture_read_flows(s, "flowcap", 0, UINT64_MAX, &back, &diag), TROVE_OK);
    CHECK(back.len == 300 && !memcmp(back.f, flows.f, 300 * sizeof *flows.f));
    {
        uint64_t from = flows.f[100].ts_ns, to = flows.f[200].ts_ns;
        size_t want = 0;
        for (size_t i = 0; i < flows.len; i++)
            want += flows.f[i].ts_ns >= from && flows.f[i].ts_ns < to;
        back.len = 0;
        CHECK_EQ_INT(trove_capture_read_flows(s, "flowcap", from, to, &back, &diag), TROVE_OK);
        CHECK(back.len == want && want >= 100);
        CHECK_EQ_INT(trove_capture_read_flows(s, "flowcap", to, from, &back, &diag),
                     TROVE_ERR_INVALID);
        CHECK_EQ_INT(back.len, want);
    }
    /* replaced by a capture without flows: the slot goes, version 1 again */
    CHECK_EQ_INT(trove_capture_write(s, "flowcap", ev.ev, ev.len, names, NULL, &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(header_version(s, "flowcap"), 1);
    back.len = 0;
    CHECK_EQ_INT(trove_capture_read_flows(s, "flowcap", 0, UINT64_MAX, &back, &diag), TROVE_OK);
    CHECK_EQ_INT(back.len, 0);
    /* a bad row is refused before anything is stored */
    flows.f[7].phase = 3;
    CHECK_EQ_INT(trove_capture_write_trace(s, "badflow", ev.ev, ev.len, names, flows.f, flows.len,
                                           NULL, &info, &diag),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_info(s, "badflow", &got, NULL), TROVE_ERR_NOTFOUND);
    flows.f[7].phase = 2;

    /* counters: version 2 without flows; their ends are their starts */
    ev.ev[10].kind = TROVE_KIND_COUNTER;
    ev.ev[10].dur_ns = trove_counter_bits(-1e300);
    CHECK_EQ_INT(trove_capture_write_trace(s, "counters", ev.ev, ev.len, names, NULL, 0, NULL,
                                           &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(header_version(s, "counters"), 2);
    CHECK_EQ_INT(info.flows, 0);
    CHECK(info.end_ns < UINT64_MAX / 2);
    check_layout(s, "counters", &ev, names, TROVE_CAPTURE_SEGMENT_BYTES_DEFAULT / 32,
                 TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    /* replayed whole, and a range re-encoded (each event checked against its segment) */
    expect_range(s, "counters", &ev, names, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0,
                 TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    expect_range(s, "counters", &ev, names, ev.ev[5].start_ns, ev.ev[3000].start_ns,
                 TROVE_WIRE_PACKED, 100, TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    CHECK_EQ_INT(trove_capture_read_flows(s, "nosuch", 0, UINT64_MAX, &back, &diag),
                 TROVE_ERR_NOTFOUND);

    trove_flows_free(&flows);
    trove_flows_free(&back);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/* A profile of nframes frames (a call chain each, under a shared root), nsamples samples
 * over them and a switch every 10 samples; with big, also 320 strings of 65,535 random
 * bytes, which deflate cannot shrink below 16 MiB: the profile then takes two objects. */
static struct trove_profile *make_profile(uint32_t nframes, uint32_t nsamples, int big)
{
    struct trove_profile *p = NULL;
    uint32_t mod = 0, file = 0, stack = 0, top = 0;
    uint64_t r = 12345;
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    CHECK_EQ_INT(trove_profile_string(p, "/bin/prog", 9, &mod), TROVE_OK);
    CHECK_EQ_INT(trove_profile_string(p, "prog.c", 6, &file), TROVE_OK);
    for (uint32_t i = 0; i < nframes; i++) {
        char fn[32];
        struct trove_profile_frame f = {mod, 0, file, 10 + i, 0x1000 + 16 * (uint64_t)i, 0};
        uint32_t id;
        int len = snprintf(fn, sizeof fn, "fn_%u", i);
        CHECK_EQ_INT(trove_profile_string(p, fn, (size_t)len, &f.function), TROVE_OK);
        CHECK_EQ_INT(trove_profile_frame(p, &f, &id), TROVE_OK);
        CHECK_EQ_INT(trove_profile_stack(p, i ? top : 0, id, &stack), TROVE_OK);
        if (!i)
            top = stack;
    }
    for (uint32_t i = 0; i < nsamples; i++) {
        struct trove_profile_sample sm = {1000000 + (uint64_t)i * 1001001, 40, 41 + i % 3,
                                          nframes ? 1 + i % nframes : 0};
        CHECK_EQ_INT(trove_profile_sample(p, &sm), TROVE_OK);
        if (i % 10 == 0) {
            struct trove_profile_switch sw = {sm.time_ns + 5, 40, sm.tid, TROVE_PROFILE_SWITCH_OUT};
            CHECK_EQ_INT(trove_profile_switch(p, &sw), TROVE_OK);
        }
    }
    if (big) {
        char *buf = malloc(TROVE_PROFILE_STRING_MAX);
        CHECK(buf != NULL);
        for (int k = 0; buf && k < 320; k++) {
            uint32_t id;
            for (size_t i = 0; i < TROVE_PROFILE_STRING_MAX; i++) {
                r = r * 6364136223846793005ULL + 1442695040888963407ULL;
                buf[i] = (char)(1 + (r >> 33) % 127);
            }
            CHECK_EQ_INT(trove_profile_string(p, buf, TROVE_PROFILE_STRING_MAX, &id), TROVE_OK);
        }
        free(buf);
    }
    return p;
}

static void check_profiles_equal(const struct trove_profile *a, const struct trove_profile *b)
{
    struct trove_profile_counts ca, cb;
    trove_profile_get_counts(a, &ca);
    trove_profile_get_counts(b, &cb);
    CHECK(ca.strings == cb.strings && ca.frames == cb.frames && ca.stacks == cb.stacks &&
          ca.samples == cb.samples && ca.switches == cb.switches);
    for (uint32_t i = 0; i < ca.strings && i < cb.strings; i++) {
        size_t la = 0, lb = 1;
        const char *x = trove_profile_string_get(a, i, &la), *y = trove_profile_string_get(b, i, &lb);
        CHECK(la == lb && !memcmp(x, y, la));
    }
    for (uint32_t i = 0; i < ca.frames && i < cb.frames; i++) {
        const struct trove_profile_frame *x = trove_profile_frame_get(a, i), *y = trove_profile_frame_get(b, i);
        CHECK(x->function == y->function && x->address == y->address && x->line == y->line);
    }
    for (size_t i = 0; i < ca.samples && i < cb.samples; i++) {
        const struct trove_profile_sample *x = &trove_profile_samples(a)[i], *y = &trove_profile_samples(b)[i];
        CHECK(x->time_ns == y->time_ns && x->tid == y->tid && x->stack == y->stack);
    }
    for (size_t i = 0; i < ca.switches && i < cb.switches; i++)
        CHECK(trove_profile_switches(a)[i].time_ns == trove_profile_switches(b)[i].time_ns);
}

/* A capture's profile: written beside its events (version 3, events replayed as before),
 * alone, again to the same objects, over two objects; read back equal; replaced by a
 * capture without one; refused by the live writer's append. */
static void test_write_profile(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_profile *p, *back = NULL, *big;
    struct trove_capture_info info, got;
    struct trove_diag diag = {0};
    struct trove_capture_writer *w = NULL;

    if (!s)
        return;
    gen_capture(5000, 12, &ev, &names);
    p = make_profile(200, 100000, 0);
    CHECK_EQ_INT(trove_capture_write_profile(s, "prof", ev.ev, ev.len, names, NULL, 0, p, NULL,
                                             &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(header_version(s, "prof"), 3);
    CHECK(info.samples == 100000 && info.switches == 10000 && info.events == 5000);
    memset(&got, 0, sizeof got);
    CHECK_EQ_INT(trove_capture_info(s, "prof", &got, &diag), TROVE_OK);
    CHECK(same_info(&info, &got) && got.samples == 100000 && got.switches == 10000);
    CHECK_EQ_INT(trove_profile_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, "prof", back, &diag), TROVE_OK);
    check_profiles_equal(p, back);
    /* read into a profile that has rows: refused */
    CHECK_EQ_INT(trove_capture_read_profile(s, "prof", back, &diag), TROVE_ERR_INVALID);
    trove_profile_free(back);
    check_layout(s, "prof", &ev, names, TROVE_CAPTURE_SEGMENT_BYTES_DEFAULT / 32,
                 TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    expect_range(s, "prof", &ev, names, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0,
                 TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    /* the same again: nothing new; a profile alone, no events */
    CHECK_EQ_INT(trove_capture_write_profile(s, "prof", ev.ev, ev.len, names, NULL, 0, p, NULL,
                                             &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(info.new_objects, 0);
    CHECK_EQ_INT(trove_capture_write_profile(s, "alone", NULL, 0, names, NULL, 0, p, NULL, &info,
                                             &diag),
                 TROVE_OK);
    CHECK(info.events == 0 && info.samples == 100000);
    CHECK_EQ_INT(info.new_objects, 1); /* its header: the names and the profile are shared */
    CHECK_EQ_INT(trove_profile_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, "alone", back, &diag), TROVE_OK);
    check_profiles_equal(p, back);
    trove_profile_free(back);
    /* the live writer appends to a capture with a profile, keeping it */
    CHECK_EQ_INT(trove_capture_writer_open(s, "prof", 1, NULL, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev, 10, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
    CHECK(info.events == ev.len + 10 && info.samples == 100000);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_profile_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, "prof", back, &diag), TROVE_OK);
    check_profiles_equal(p, back);
    trove_profile_free(back);
    /* two objects */
    big = make_profile(10, 1000, 1);
    CHECK_EQ_INT(trove_capture_write_profile(s, "big", ev.ev, 100, names, NULL, 0, big, NULL,
                                             &info, &diag),
                 TROVE_OK);
    CHECK(info.stored_bytes > TROVE_CAPTURE_MAX_OBJECT);
    {
        struct trove_volume *v = NULL;
        struct trove_bytes obj = {0};
        struct trove_capture_header h;
        CHECK_EQ_INT(trove_volume_open(s, "big", &v, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_volume_get_object(v, 0, &obj), TROVE_OK);
        CHECK_EQ_INT(trove_capture_header_decode(obj.ptr, obj.len, &h, NULL), TROVE_OK);
        CHECK(h.profile_objects == 2 && h.profile_bytes > TROVE_CAPTURE_MAX_OBJECT);
        {
            struct trove_volume_info vi;
            CHECK_EQ_INT(trove_volume_info(v, &vi), TROVE_OK);
            CHECK_EQ_INT(vi.slots, 2 + 1 + 2); /* header, names, a segment, two objects */
        }
        trove_capture_header_free(&h);
        trove_bytes_free(&obj);
        trove_volume_close(v);
    }
    CHECK_EQ_INT(trove_profile_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, "big", back, &diag), TROVE_OK);
    check_profiles_equal(big, back);
    trove_profile_free(back);
    /* replaced without a profile: version 1, no rows */
    CHECK_EQ_INT(trove_capture_write(s, "prof", ev.ev, ev.len, names, NULL, &info, &diag), TROVE_OK);
    CHECK_EQ_INT(header_version(s, "prof"), 1);
    CHECK_EQ_INT(trove_profile_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, "prof", back, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_profile_sample_count(back), 0);
    trove_profile_free(back);
    CHECK_EQ_INT(trove_capture_read_profile(s, "nosuch", p, &diag), TROVE_ERR_INVALID);
    {
        struct trove_profile *fresh = NULL;
        CHECK_EQ_INT(trove_profile_new(&fresh), TROVE_OK);
        CHECK_EQ_INT(trove_capture_read_profile(s, "nosuch", fresh, &diag), TROVE_ERR_NOTFOUND);
        trove_profile_free(fresh);
    }
    trove_profile_free(big);
    trove_profile_free(p);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/* trove_capture_read_names: every entry of the names object back, in order, without a
 * replay; a damaged names object and a missing capture are errors that name them. */
static void test_read_names(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL, *back = NULL;
    struct trove_diag diag = {0};
    struct trove_digest d;
    struct trove_bytes obj = {0}, seg = {0};

    if (!s)
        return;
    gen_capture(5000, 21, &ev, &names);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_THREAD, 7, 8, "worker é", 9), TROVE_OK);
    CHECK_EQ_INT(trove_capture_write(s, "nm", ev.ev, ev.len, names, NULL, NULL, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_names(s, "nm", back, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_names_count(back), trove_names_count(names));
    for (size_t i = 0; i < trove_names_count(names) && i < trove_names_count(back); i++) {
        struct trove_name_entry a, b;
        trove_names_entry(names, i, &a);
        trove_names_entry(back, i, &b);
        CHECK(a.type == b.type && a.a == b.a && a.b == b.b && a.len == b.len &&
              !memcmp(a.str, b.str, a.len) && a.sort_index == b.sort_index);
    }
    CHECK(!strcmp(trove_names_get(back, TROVE_NAME_THREAD, 7, 8, NULL), "worker é"));
    trove_names_free(back);
    back = NULL;
    CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_names(s, "nosuch", back, &diag), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_capture_read_names(s, "../x", back, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_read_names(NULL, "nm", back, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_count(back), 0);
    /* a flipped byte: the read checks the object against its name */
    slot_digest(s, "nm", 1, &d);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    obj.ptr[obj.len / 2] ^= 0x20;
    damage(s, &d, obj.ptr, obj.len);
    diag.msg[0] = 0;
    CHECK_EQ_INT(trove_capture_read_names(s, "nm", back, &diag), TROVE_ERR_CHECKSUM);
    CHECK(strstr(diag.msg, "names (slot 1)") != NULL);
    /* unverified: a segment's object in its place is not names */
    trove_store_close(s);
    s = open_store(TROVE_STORE_NOVERIFY);
    {
        struct trove_digest sd;
        slot_digest(s, "nm", 2, &sd);
        CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &sd, &seg, 1 << 30), TROVE_OK);
    }
    damage(s, &d, seg.ptr, seg.len);
    diag.msg[0] = 0;
    CHECK_EQ_INT(trove_capture_read_names(s, "nm", back, &diag), TROVE_ERR_CORRUPT);
    CHECK(strstr(diag.msg, "capture nm: names (slot 1)") != NULL);
    trove_names_free(back);
    trove_bytes_free(&obj);
    trove_bytes_free(&seg);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/* Sort indexes ride in the names object as version 2 names frames (split across frames
 * like any names), come back whole from every replay, and leave a capture without them
 * with version 1 frames only. */
static void test_sort_indexes(void)
{
    static const int wires[] = {TROVE_WIRE_RAW, TROVE_WIRE_PACKED, TROVE_WIRE_DEFLATE};
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info;
    struct trove_volume *v = NULL;
    struct trove_bytes obj = {0};
    int32_t got = 0;

    if (!s)
        return;
    gen_capture(3000, 17, &ev, &names);
    CHECK_EQ_INT(write_capture(s, "plain_names", &ev, names, 32 * 1000, 250, &info), TROVE_OK);
    CHECK_EQ_INT(trove_volume_open(s, "plain_names", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 1, &obj), TROVE_OK);
    CHECK(obj.len > 16 && obj.ptr[3] == TROVE_WIRE_VERSION);
    trove_volume_close(v);
    v = NULL;

    CHECK_EQ_INT(trove_names_set_sort(names, TROVE_NAME_PROCESS_SORT, ev.ev[0].pid, 0, -7),
                 TROVE_OK);
    /* more entries than one names frame holds */
    for (uint32_t i = 0; i < TROVE__CAPTURE_NAMES_FRAME_ENTRIES + 100; i++)
        CHECK_EQ_INT(trove_names_set_sort(names, TROVE_NAME_THREAD_SORT, 9, i, (int32_t)i - 50),
                     TROVE_OK);
    CHECK_EQ_INT(write_capture(s, "sorted", &ev, names, 32 * 1000, 250, &info), TROVE_OK);
    CHECK_EQ_INT(info.names, trove_names_count(names));
    check_layout(s, "sorted", &ev, names, 1000, 250);
    CHECK_EQ_INT(trove_volume_open(s, "sorted", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 1, &obj), TROVE_OK);
    CHECK(obj.len > 16 && obj.ptr[3] == TROVE_WIRE_NAMES_VERSION);
    trove_volume_close(v);
    for (int w = 0; w < 3; w++)
        expect_range(s, "sorted", &ev, names, 0, UINT64_MAX, wires[w], 0, 250);
    expect_range(s, "sorted", &ev, names, ev.ev[100].start_ns, ev.ev[200].start_ns,
                 TROVE_WIRE_PACKED, 0, 250);
    {
        struct collect c;
        collect_init(&c, TROVE_WIRE_PACKED, 250);
        CHECK_EQ_INT(replay(s, "sorted", 0, UINT64_MAX, TROVE_WIRE_PACKED, 0, &c, NULL, NULL),
                     TROVE_OK);
        CHECK(trove_names_get_sort(c.names, TROVE_NAME_PROCESS_SORT, ev.ev[0].pid, 0, &got) &&
              got == -7);
        CHECK(trove_names_get_sort(c.names, TROVE_NAME_THREAD_SORT, 9,
                                   TROVE__CAPTURE_NAMES_FRAME_ENTRIES + 99, &got) &&
              got == (int32_t)TROVE__CAPTURE_NAMES_FRAME_ENTRIES + 49);
        collect_free(&c);
    }
    trove_bytes_free(&obj);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/* ---- names in parts ------------------------------------------------------------------- */

/* `extra` distinct event names of about 100 bytes (ids first_id on) into names. */
static void add_long_names(struct trove_names *names, uint32_t extra, uint32_t first_id)
{
    char s[160];
    for (uint32_t i = 0; i < extra; i++) {
        int len = snprintf(s, sizeof s,
                           "ns%u::detail::Widget<ns%u::Alloc<%u>, std::vector<int>>::"
                           "render_frame_%07u(int, const char *)",
                           i % 89, i % 13, i % 7, i);
        if (trove_names_set(names, TROVE_NAME_EVENT, first_id + i, 0, s, (size_t)len) != TROVE_OK) {
            CHECK(0);
            return;
        }
    }
}

/* Captures a and b are the same objects: as many slots, the same digest in each. */
static int same_slots(struct trove_store *s, const char *a, const char *b)
{
    struct trove_volume *va = NULL, *vb = NULL;
    struct trove_volume_info ia, ib;
    struct trove_digest *da = NULL, *db = NULL;
    int same = 0;

    if (trove_volume_open(s, a, &va, NULL) == TROVE_OK &&
        trove_volume_open(s, b, &vb, NULL) == TROVE_OK && trove_volume_info(va, &ia) == 0 &&
        trove_volume_info(vb, &ib) == 0 && ia.slots == ib.slots &&
        (da = calloc(ia.slots, sizeof *da)) && (db = calloc(ia.slots, sizeof *db)) &&
        trove_volume_slot_digests(va, 0, ia.slots, da) == 0 &&
        trove_volume_slot_digests(vb, 0, ib.slots, db) == 0)
        same = memcmp(da, db, ia.slots * sizeof *da) == 0;
    trove_volume_close(va);
    trove_volume_close(vb);
    free(da);
    free(db);
    return same;
}

/* Read capture `name`'s names back and require `want`. */
static void expect_names(struct trove_store *s, const char *name, const struct trove_names *want)
{
    struct trove_names *back = NULL;
    struct trove_diag diag = {0};
    int rc;
    CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
    rc = trove_capture_read_names(s, name, back, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "read names %s: %s\n", name, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK(trove_names_equal(want, back));
    trove_names_free(back);
}

/*
 * Names over one object's 16 MiB: 300,000 distinct names of about 100 bytes (31 MB of names
 * frames) beside gen's. They are stored in parts of at most 16 MiB, read back, replayed,
 * rewritten with nothing new, appended to through the live writer (the same objects as a
 * write of the whole), and a damaged part is named. Then, with names cut small
 * (trove_testing_capture_names_cut), many parts beside flows and a profile, and the limits.
 */
static void test_names_parts(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0}, all = {0};
    struct trove_names *names = NULL, *more = NULL;
    struct trove_capture_info info, again;
    struct trove_capture_header h;
    struct trove_capture_writer *w = NULL;
    struct trove_diag diag = {0};
    uint64_t objects;

    if (!s)
        return;
    gen_capture(20000, 31, &ev, &names);
    add_long_names(names, 300000, 1000000);
    CHECK_EQ_INT(write_capture(s, "np", &ev, names, 32 * 4096, 1000, &info), TROVE_OK);
    CHECK_EQ_INT(info.names, trove_names_count(names));
    CHECK_EQ_INT(info.segments, 5);
    CHECK_EQ_INT(info.new_objects, 1 + 5 + 2);
    CHECK(info.stored_bytes > TROVE_CAPTURE_MAX_OBJECT);
    CHECK_EQ_INT(read_header(s, "np", &h), TROVE_OK);
    CHECK(h.names_parts == 2 && (h.info.flags & TROVE_CAPTURE_FLAG_NAMES_PARTS) &&
          h.names_bytes > TROVE_CAPTURE_MAX_OBJECT &&
          h.names_part[0].bytes + (uint64_t)h.names_part[1].bytes == h.names_bytes &&
          h.names_part[0].entries + (uint64_t)h.names_part[1].entries == h.info.names &&
          h.names_part[0].bytes > TROVE_CAPTURE_MAX_OBJECT - (1 << 20) - 16);
    fprintf(stderr, "names parts: %zu names in %" PRIu64 " bytes, parts of %" PRIu32 " and %" PRIu32
            " bytes\n",
            trove_names_count(names), h.names_bytes, h.names_part[0].bytes,
            h.names_part[1].bytes);
    trove_capture_header_free(&h);
    check_layout(s, "np", &ev, names, 4096, 1000);
    expect_names(s, "np", names);
    expect_range(s, "np", &ev, names, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, 1000);
    expect_range(s, "np", &ev, names, 0, UINT64_MAX, TROVE_WIRE_RAW, 300, 1000);
    expect_range(s, "np", &ev, names, ev.ev[5000].start_ns, ev.ev[9000].start_ns,
                 TROVE_WIRE_PACKED, 0, 1000);
    /* again: the same objects, nothing new */
    objects = store_objects(s);
    CHECK_EQ_INT(write_capture(s, "np", &ev, names, 32 * 4096, 1000, &again), TROVE_OK);
    CHECK(same_info(&info, &again) && again.new_objects == 0);
    CHECK_EQ_INT(store_objects(s), objects);
    CHECK_EQ_INT(trove_capture_info(s, "np", &again, &diag), TROVE_OK);
    CHECK(same_info(&info, &again));

    /* appended to: more events, more names and one renamed in part 0, through the live
     * writer; the capture is then the one a write of everything makes */
    CHECK_EQ_INT(trove_capture_writer_open(s, "np", 1, NULL, &w, &diag), TROVE_OK);
    CHECK(w && trove_names_equal(trove_capture_writer_names_all(w), names));
    CHECK_EQ_INT(trove_names_new(&more), TROVE_OK);
    add_long_names(more, 2000, 5000000);
    CHECK_EQ_INT(trove_names_set(more, TROVE_NAME_EVENT, 1000007, 0, "renamed", 7), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev, 7000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, more, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_names_merge(names, more), TROVE_OK);
    for (size_t i = 0; i < ev.len; i++)
        CHECK_EQ_INT(trove_events_push(&all, &ev.ev[i]), TROVE_OK);
    for (size_t i = 0; i < 7000; i++)
        CHECK_EQ_INT(trove_events_push(&all, &ev.ev[i]), TROVE_OK);
    CHECK_EQ_INT(write_capture(s, "np.ref", &all, names, 32 * 4096, 1000, &again), TROVE_OK);
    CHECK(same_slots(s, "np", "np.ref"));
    CHECK(same_info(&info, &again) && info.names == trove_names_count(names));
    expect_names(s, "np", names);
    expect_range(s, "np", &all, names, 0, UINT64_MAX, TROVE_WIRE_PACKED, 0, 1000);

    /* a damaged part is named by reads and replays */
    {
        struct trove_digest d;
        struct trove_bytes obj = {0};
        struct trove_names *back = NULL;
        char hex[33], want[64];
        uint64_t slot;
        CHECK_EQ_INT(read_header(s, "np", &h), TROVE_OK);
        slot = 2 + h.info.segments;
        CHECK(h.info.segments == 7 && h.names_parts == 2);
        slot_digest(s, "np", slot, &d);
        trove_capture_header_free(&h);
        trove_digest_hex(&d, hex);
        CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
        obj.ptr[obj.len / 2] ^= 0x20;
        damage(s, &d, obj.ptr, obj.len);
        CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
        diag.msg[0] = 0;
        CHECK_EQ_INT(trove_capture_read_names(s, "np.ref", back, &diag), TROVE_ERR_CHECKSUM);
        snprintf(want, sizeof want, "names part (slot %" PRIu64 ")", slot);
        CHECK(strstr(diag.msg, want) != NULL);
        snprintf(want, sizeof want, "names part 1 of 2 (slot %" PRIu64 ")", slot);
        expect_replay_error(s, "np.ref", TROVE_WIRE_DEFLATE, TROVE_ERR_CHECKSUM, want, hex,
                            "a damaged names part");
        trove_bytes_free(&obj);
        trove_names_free(back);
        /* written again, it heals */
        CHECK_EQ_INT(write_capture(s, "np.ref", &all, names, 32 * 4096, 1000, &again), TROVE_OK);
        expect_names(s, "np", names);
    }
    trove_names_free(more);
    trove_names_free(names);
    trove_events_free(&ev);
    trove_events_free(&all);
    trove_volume_remove(s, "np", NULL);
    trove_volume_remove(s, "np.ref", NULL);

    /* Cut small: 2,000 names of about 100 bytes in frames of about 2 KiB and parts of at
     * most 16 KiB, beside flows and a profile, whose slots follow the parts. */
    trove_testing_capture_names_cut(2048, 16384);
    gen_capture(3000, 32, &ev, &names);
    add_long_names(names, 2000, 1000000);
    {
        struct trove_flows flows = {0}, fback = {0};
        struct trove_profile *p = make_profile(20, 1000, 0), *pback = NULL;
        for (size_t i = 0; i < ev.len; i += 10) {
            struct trove_flow f = {ev.ev[i].start_ns, 1 + i / 30, ev.ev[i].pid, ev.ev[i].tid, 0,
                                   (uint8_t)(i / 10 % 3), 1, {0, 0}};
            CHECK_EQ_INT(trove_flows_push(&flows, &f), TROVE_OK);
        }
        CHECK_EQ_INT(trove_capture_write_profile(s, "small", ev.ev, ev.len, names, flows.f,
                                                 flows.len, p, NULL, &info, &diag),
                     TROVE_OK);
        CHECK_EQ_INT(read_header(s, "small", &h), TROVE_OK);
        CHECK(h.names_parts >= 10 && h.version == 3 && h.profile_objects == 1);
        for (uint32_t j = 0; j < h.names_parts; j++)
            CHECK(h.names_part[j].bytes <= 16384);
        trove_capture_header_free(&h);
        check_layout(s, "small", &ev, names, TROVE_CAPTURE_SEGMENT_BYTES_DEFAULT / 32,
                     TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
        expect_names(s, "small", names);
        expect_range(s, "small", &ev, names, 0, UINT64_MAX, TROVE_WIRE_RAW, 0,
                     TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
        CHECK_EQ_INT(trove_capture_read_flows(s, "small", 0, UINT64_MAX, &fback, &diag), TROVE_OK);
        CHECK(fback.len == flows.len && memcmp(fback.f, flows.f, flows.len * sizeof *flows.f) == 0);
        CHECK_EQ_INT(trove_profile_new(&pback), TROVE_OK);
        CHECK_EQ_INT(trove_capture_read_profile(s, "small", pback, &diag), TROVE_OK);
        check_profiles_equal(p, pback);
        trove_profile_free(pback);
        trove_profile_free(p);
        trove_flows_free(&flows);
        trove_flows_free(&fback);
    }
    /* a profile, no flows: the live writer appends and the profile stays readable */
    {
        struct trove_profile *p = make_profile(20, 1000, 0), *pback = NULL;
        CHECK_EQ_INT(trove_capture_write_profile(s, "small2", ev.ev, ev.len, names, NULL, 0, p,
                                                 NULL, &info, &diag),
                     TROVE_OK);
        CHECK_EQ_INT(trove_names_new(&more), TROVE_OK);
        add_long_names(more, 500, 3000000); /* four parts more: the profile moves up */
        CHECK_EQ_INT(trove_capture_writer_open(s, "small2", 1, NULL, &w, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_capture_writer_names(w, more, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev, 100, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
        trove_capture_writer_close(w);
        CHECK_EQ_INT(trove_names_merge(names, more), TROVE_OK);
        expect_names(s, "small2", names);
        CHECK_EQ_INT(trove_profile_new(&pback), TROVE_OK);
        CHECK_EQ_INT(trove_capture_read_profile(s, "small2", pback, &diag), TROVE_OK);
        check_profiles_equal(p, pback);
        trove_profile_free(pback);
        trove_profile_free(p);
        trove_names_free(more);
    }
    /* the limits: a frame over a part, names over MAX_NAMES_PARTS parts; no capture is
     * committed, by a write or a live writer */
    trove_testing_capture_names_cut(2048, 1024);
    diag.msg[0] = 0;
    CHECK_EQ_INT(trove_capture_write(s, "over", ev.ev, ev.len, names, NULL, &info, &diag),
                 TROVE_ERR_LIMIT);
    CHECK(strstr(diag.msg, "capture over: the names frame of entries ") &&
          strstr(diag.msg, "over the 1024-byte limit of an object"));
    trove_testing_capture_names_cut(256, 512);
    diag.msg[0] = 0;
    CHECK_EQ_INT(trove_capture_write(s, "over", ev.ev, ev.len, names, NULL, &info, &diag),
                 TROVE_ERR_LIMIT);
    CHECK(strstr(diag.msg, "capture over: its names pass the limit") &&
          strstr(diag.msg, "in 33 objects so far"));
    CHECK_EQ_INT(trove_capture_info(s, "over", &info, NULL), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_capture_writer_open(s, "over", 0, NULL, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, names, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_ERR_LIMIT);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_info(s, "over", &info, NULL), TROVE_ERR_NOTFOUND);
    trove_testing_capture_names_cut(0, 0);
    trove_names_free(names);
    trove_events_free(&ev);
    trove_store_close(s);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_roundtrips);
    RUN(test_golden);
    RUN(test_bad_header);
    RUN(test_empty);
    RUN(test_encode_invalid);
    RUN(test_header_v2);
    RUN(test_header_v3);
    RUN(test_header_names_parts);
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(sdir, sizeof sdir, "%s/store", root);
    RUN(test_write);
    RUN(test_marker);
    test_rm_rf(root);
    CHECK(mkdtemp(strcpy(root, "/tmp/trove_test_capture_XXXXXX")) != NULL);
    snprintf(sdir, sizeof sdir, "%s/store", root);
    RUN(test_replay);
    RUN(test_segment_format);
    RUN(test_write_flows);
    RUN(test_write_profile);
    RUN(test_read_names);
    RUN(test_sort_indexes);
    RUN(test_names_parts);
    RUN(test_corpus_seeds);
    test_rm_rf(root);
    return test_done();
}
