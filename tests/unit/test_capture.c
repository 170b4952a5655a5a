/*
 * test_capture.c: the capture header (src/capture/) — format v1: round trips, the golden
 * vector tests/vectors/capture_header.bin, every truncation, every check of the decoder with
 * its error and offset, counts that lie (no allocation follows them), every byte flip, and
 * the encoder's refusals; and so for v2 (flows), v3 (a profile) and names parts (flag 0x2).
 * With TROVE_CAPTURE_CORPUS=<dir> set, the headers built here are also written to <dir> as
 * the fuzz seed corpus (fuzz/corpus/fuzz_capture/). Captures written into a store and
 * replayed are test_capture_store.c's; what rides beside their events,
 * test_capture_objects.c's.
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
    h.info.flags = 8; /* no such flag: refused, nothing appended */
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
    trove__put_le32(mutant(&g) + 12, 0x80);
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

/* Flag 0x4: the summary part (summary_bytes) before the checksum, or before the names part
 * table; its bounds; stored_bytes counts it. */
static void test_header_summary(void)
{
    struct trove_capture_header h, back;
    struct trove_bytes b = {0};
    struct trove_diag diag = {0};
    uint8_t buf[GOLDEN_LEN + 8];

    golden(&h); /* 3 segments: 3 + 1 summary objects */
    h.info.flags = TROVE_CAPTURE_FLAG_SUMMARY;
    h.summary_bytes = 5000;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, GOLDEN_LEN + 8);
    test_check_vector("capture_header_summary.bin", b.ptr, b.len);
    corpus_write("golden-summary.bin", b.ptr, b.len);
    CHECK(b.len == sizeof buf && trove__get_le32(b.ptr + 12) == TROVE_CAPTURE_FLAG_SUMMARY &&
          trove__get_le64(b.ptr + b.len - 16) == 5000);
    CHECK_EQ_INT(trove_capture_header_decode(b.ptr, b.len, &back, &diag), TROVE_OK);
    CHECK(back.summary_bytes == 5000 && (back.info.flags & TROVE_CAPTURE_FLAG_SUMMARY));
    CHECK_EQ_INT(back.info.stored_bytes, b.len + 5000 + back.names_bytes + back.seg[0].bytes +
                                             back.seg[1].bytes + back.seg[2].bytes);
    trove_capture_header_free(&back);
    if (b.len == sizeof buf) {
        /* 4 objects take 41 bytes each at least, 16 MiB at most */
        memcpy(buf, b.ptr, sizeof buf);
        trove__put_le64(buf + sizeof buf - 16, 4 * 41 - 1);
        fix_checksum(buf, sizeof buf);
        expect_bad(buf, sizeof buf, TROVE_ERR_CORRUPT, sizeof buf - 16, "summary objects take",
                   "summary bytes too few");
        trove__put_le64(buf + sizeof buf - 16, (uint64_t)4 * TROVE_CAPTURE_MAX_OBJECT + 1);
        fix_checksum(buf, sizeof buf);
        expect_bad(buf, sizeof buf, TROVE_ERR_CORRUPT, sizeof buf - 16, "summary objects take",
                   "summary bytes too many");
        corpus_write("summary-bytes.bin", buf, sizeof buf);
        /* the flag without its part: cut short */
        memcpy(buf, b.ptr, sizeof buf);
        trove__put_le32(buf + 12, 0);
        fix_checksum(buf, sizeof buf);
        expect_bad(buf, sizeof buf, TROVE_ERR_CORRUPT, GOLDEN_LEN, "stray bytes",
                   "a summary part without the flag");
    }
    h.summary_bytes = 10; /* the encoder refuses what the decoder would */
    b.len = 0;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(b.len, 0);
    trove_bytes_free(&b);
}

/* Flag 0x8: the attributes part (attr_rows, attrs_bytes) after the summary part, before the
 * names part table; its bounds; stored_bytes counts it; its slots come before the summaries'. */
static void test_header_attrs(void)
{
    struct trove_capture_header h, back;
    struct trove_bytes b = {0};
    struct trove_diag diag = {0};
    uint8_t buf[GOLDEN_LEN + 8 + 16];

    golden(&h); /* 3 segments: 3 + 1 attributes objects */
    h.info.flags = TROVE_CAPTURE_FLAG_SUMMARY | TROVE_CAPTURE_FLAG_ATTRS;
    h.summary_bytes = 5000;
    h.attr_rows = 77;
    h.attrs_bytes = 900;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, GOLDEN_LEN + 8 + 16);
    test_check_vector("capture_header_attrs.bin", b.ptr, b.len);
    corpus_write("golden-attrs.bin", b.ptr, b.len);
    CHECK(b.len == sizeof buf && trove__get_le64(b.ptr + b.len - 32) == 5000 &&
          trove__get_le64(b.ptr + b.len - 24) == 77 && trove__get_le64(b.ptr + b.len - 16) == 900);
    CHECK_EQ_INT(trove_capture_header_decode(b.ptr, b.len, &back, &diag), TROVE_OK);
    CHECK(back.attr_rows == 77 && back.info.attr_rows == 77 && back.attrs_bytes == 900 &&
          back.summary_bytes == 5000);
    CHECK_EQ_INT(back.info.stored_bytes, b.len + 5000 + 900 + back.names_bytes + back.seg[0].bytes +
                                             back.seg[1].bytes + back.seg[2].bytes);
    /* the 4 attributes objects come before the summaries */
    CHECK_EQ_INT(trove__capture_summary_slot(&back), trove__capture_attrs_slot(&back) + 4);
    trove_capture_header_free(&back);
    if (b.len == sizeof buf) {
        memcpy(buf, b.ptr, sizeof buf);
        trove__put_le64(buf + sizeof buf - 16, 4 * 56 - 1);
        fix_checksum(buf, sizeof buf);
        expect_bad(buf, sizeof buf, TROVE_ERR_CORRUPT, sizeof buf - 16, "attributes objects take",
                   "attributes bytes too few");
        trove__put_le64(buf + sizeof buf - 16, (uint64_t)4 * TROVE_CAPTURE_MAX_OBJECT + 1);
        fix_checksum(buf, sizeof buf);
        expect_bad(buf, sizeof buf, TROVE_ERR_CORRUPT, sizeof buf - 16, "attributes objects take",
                   "attributes bytes too many");
        corpus_write("attrs-bytes.bin", buf, sizeof buf);
        memcpy(buf, b.ptr, sizeof buf);
        trove__put_le64(buf + sizeof buf - 24, ((uint64_t)1 << 28) * 4 + 1);
        fix_checksum(buf, sizeof buf);
        expect_bad(buf, sizeof buf, TROVE_ERR_CORRUPT, sizeof buf - 24, "attribute rows",
                   "attribute rows over the limit");
        /* the flag without its part: the summary part is read where it is not */
        memcpy(buf, b.ptr, sizeof buf);
        trove__put_le32(buf + 12, TROVE_CAPTURE_FLAG_SUMMARY);
        fix_checksum(buf, sizeof buf);
        expect_bad(buf, sizeof buf, TROVE_ERR_CORRUPT, GOLDEN_LEN + 8, "stray bytes",
                   "an attributes part without the flag");
    }
    h.attrs_bytes = 10; /* the encoder refuses what the decoder would */
    b.len = 0;
    CHECK_EQ_INT(trove_capture_header_encode(&h, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(b.len, 0);
    trove_bytes_free(&b);
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
    RUN(test_header_summary);
    RUN(test_header_attrs);
    return test_done();
}
