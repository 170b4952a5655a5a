/*
 * test_flows.c: flow rows (include/trove/flows.h) and the flows object a capture stores them
 * in (src/codec/flows.c, docs/formats/flows.md).
 *
 * Round trips of rows with every field at its extremes (times and ids that go down as well as
 * up), determinism, the golden vector tests/vectors/flows_small.bin with its fields where the
 * format document puts them, and bad objects: every prefix, a flipped byte anywhere, each
 * field broken with the checksum made right again, and rows that a hand-made (stored) deflate
 * stream carries past the checks — a bad phase, a cut varint, bytes left over. Each bad
 * object is also a seed of fuzz/corpus/fuzz_flows (TROVE_FLOWS_CORPUS=dir writes them).
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "trove/digest.h"
#include "trove/flows.h"

#define FIXED 40u

static void corpus_write(const char *name, const uint8_t *buf, size_t len)
{
    test_corpus_write("TROVE_FLOWS_CORPUS", name, NULL, 0, buf, len);
}

static void seal(uint8_t *buf, size_t len)
{
    trove__put_le64(buf + len - 8, trove_checksum64(buf, len - 8));
}

static const struct trove_flow small[] = {
    {1000, 1, 1, 2, 0, TROVE_FLOW_START, TROVE_FLOW_ENCLOSING, {0, 0}},
    {2500, 1, 1, 3, 0, TROVE_FLOW_STEP, TROVE_FLOW_ENCLOSING, {0, 0}},
    {2000, 2, 7, 7, 1, TROVE_FLOW_END, 0, {0, 0}}, /* back in time: a negative delta */
};

static int same_rows(const struct trove_flows *a, const struct trove_flow *b, size_t n)
{
    return a->len == n && (n == 0 || !memcmp(a->f, b, n * sizeof *b));
}

static void test_round_trip(void)
{
    struct trove_flow rows[6];
    struct trove_bytes a = {0}, b = {0};
    struct trove_flows back = {0};
    struct trove_diag diag = {0};

    memset(rows, 0, sizeof rows);
    rows[0] = (struct trove_flow){UINT64_MAX, UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX,
                                  TROVE_FLOW_END, TROVE_FLOW_ENCLOSING, {0, 0}};
    rows[1] = (struct trove_flow){0, 1, 0, 0, 0, TROVE_FLOW_START, 0, {0, 0}};
    rows[2] = (struct trove_flow){1ull << 63, 1ull << 40, 5, 6, 7, TROVE_FLOW_STEP, 1, {0, 0}};
    rows[3] = rows[2];
    rows[4] = (struct trove_flow){3, 2, 1, 1, 1, TROVE_FLOW_START, 1, {0, 0}};
    rows[5] = rows[0];
    CHECK_EQ_INT(trove_flows_encode(rows, 6, &a), TROVE_OK);
    CHECK_EQ_INT(trove_flows_encode(rows, 6, &b), TROVE_OK);
    CHECK(a.len == b.len && !memcmp(a.ptr, b.ptr, a.len)); /* deterministic */
    CHECK_EQ_INT(trove_flows_decode(a.ptr, a.len, &back, &diag), TROVE_OK);
    CHECK(same_rows(&back, rows, 6));
    /* appended after what the array holds */
    CHECK_EQ_INT(trove_flows_decode(a.ptr, a.len, &back, &diag), TROVE_OK);
    CHECK(back.len == 12 && same_rows(&back, rows, 6) == 0 &&
          !memcmp(back.f + 6, rows, sizeof rows));
    trove_flows_free(&back);

    /* no rows: still an object, and it decodes to none */
    a.len = 0;
    CHECK_EQ_INT(trove_flows_encode(NULL, 0, &a), TROVE_OK);
    CHECK(a.len >= FIXED + 9);
    CHECK_EQ_INT(trove_flows_decode(a.ptr, a.len, &back, &diag), TROVE_OK);
    CHECK_EQ_INT(back.len, 0);

    /* rows the encoder refuses, leaving out as it was */
    rows[1].phase = 3;
    a.len = 0;
    CHECK_EQ_INT(trove_flows_encode(rows, 6, &a), TROVE_ERR_INVALID);
    CHECK_EQ_INT(a.len, 0);
    rows[1].phase = 0;
    rows[1].flags = 2;
    CHECK_EQ_INT(trove_flows_encode(rows, 6, &a), TROVE_ERR_INVALID);
    rows[1].flags = 0;
    rows[1].pad[1] = 1;
    CHECK_EQ_INT(trove_flows_encode(rows, 6, &a), TROVE_ERR_INVALID);
    rows[1].pad[1] = 0;
    rows[1].id = 0;
    CHECK_EQ_INT(trove_flows_encode(rows, 6, &a), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_flows_encode(NULL, 1, &a), TROVE_ERR_INVALID);
    CHECK_EQ_INT(a.len, 0);
    CHECK(!strcmp(trove_flow_phase_name(TROVE_FLOW_STEP), "step"));
    CHECK(!strcmp(trove_flow_phase_name(9), "other"));
    trove_bytes_free(&a);
    trove_bytes_free(&b);
    trove_flows_free(&back);
}

static void test_golden(void)
{
    struct trove_bytes g = {0};
    struct trove_flows back = {0};
    CHECK_EQ_INT(trove_flows_encode(small, 3, &g), TROVE_OK);
    test_check_vector("flows_small.bin", g.ptr, g.len);
    corpus_write("golden.bin", g.ptr, g.len);
    CHECK(g.len > FIXED + 8 && !memcmp(g.ptr, "TROVFLW1", 8));
    CHECK_EQ_INT(trove__get_le32(g.ptr + 8), 1);
    CHECK_EQ_INT(trove__get_le32(g.ptr + 12), 0);
    CHECK_EQ_INT(trove__get_le64(g.ptr + 16), 3);
    /* the rows, 7 bytes each: the time delta in two varint bytes (zigzag 2000, 3000, 999),
     * then one byte each for the id delta, pid, tid, name_id and phase | flags << 2 */
    CHECK_EQ_INT(trove__get_le64(g.ptr + 24), 7 + 7 + 7);
    CHECK_EQ_INT(trove__get_le64(g.ptr + 32), g.len - FIXED - 8);
    CHECK(trove__get_le64(g.ptr + g.len - 8) == trove_checksum64(g.ptr, g.len - 8));
    CHECK_EQ_INT(trove_flows_decode(g.ptr, g.len, &back, NULL), TROVE_OK);
    CHECK(same_rows(&back, small, 3));
    trove_flows_free(&back);
    trove_bytes_free(&g);
}

/* The decoder under test, for test_expect_decode_error: out is a struct trove_flows. */
static int decode(const uint8_t *buf, size_t len, void *out, struct trove_diag *diag)
{
    return trove_flows_decode(buf, len, out, diag);
}

static void expect_bad(const uint8_t *buf, size_t len, int want, uint64_t off, const char *needle,
                       const char *what)
{
    test_expect_decode_error(decode, sizeof(struct trove_flows), buf, len, want, off, needle, what);
}

/*
 * A flows object around raw row bytes, with a stored deflate block (BFINAL, BTYPE 00, LEN,
 * NLEN, the bytes) so that any rows can be carried past the deflate step. rows is the count
 * the object claims.
 */
static size_t stored_object(uint8_t *out, uint64_t rows, const uint8_t *raw, size_t n)
{
    size_t len = FIXED + 5 + n + 8;
    memcpy(out, "TROVFLW1", 8);
    trove__put_le32(out + 8, 1);
    trove__put_le32(out + 12, 0);
    trove__put_le64(out + 16, rows);
    trove__put_le64(out + 24, n);
    trove__put_le64(out + 32, 5 + n);
    out[FIXED] = 0x01;
    trove__put_le16(out + FIXED + 1, (uint16_t)n);
    trove__put_le16(out + FIXED + 3, (uint16_t)~n);
    memcpy(out + FIXED + 5, raw, n);
    seal(out, len);
    return len;
}

static void test_bad(void)
{
    static uint8_t work[512];
    struct trove_bytes g = {0};
    struct trove_flows back = {0};
    size_t n;

    CHECK_EQ_INT(trove_flows_encode(small, 3, &g), TROVE_OK);
    n = g.len;
    CHECK(n < sizeof work);
    for (size_t len = 0; len < n; len++) /* a short object is cut, or its checksum wrong */
        expect_bad(g.ptr, len, len < FIXED + 8 ? TROVE_ERR_TRUNCATED : TROVE_ERR_CHECKSUM,
                   UINT64_MAX, NULL, "prefix");
    corpus_write("short.bin", g.ptr, 30);
    /* a flipped bit anywhere after the magic and version: the checksum says so */
    for (size_t i = 12; i < n; i++) {
        memcpy(work, g.ptr, n);
        work[i] ^= 0x10;
        expect_bad(work, n, TROVE_ERR_CHECKSUM, n - 8, "checksum", "flipped bit");
    }
    memcpy(work, g.ptr, n);
    work[0] = 'X';
    expect_bad(work, n, TROVE_ERR_MAGIC, 0, "TROVFLW1", "magic");
    corpus_write("bad-magic.bin", work, n);
    memcpy(work, g.ptr, n);
    trove__put_le32(work + 8, 3);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "newer trove", "version 3");
    corpus_write("version-3.bin", work, n);

    /* fields broken, the checksum made right: each field's own check */
    memcpy(work, g.ptr, n);
    trove__put_le32(work + 12, 1);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 12, "flags", "flags");
    memcpy(work, g.ptr, n);
    trove__put_le64(work + 16, TROVE_FLOWS_MAX + 1);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_LIMIT, 16, "over the limit", "rows over the limit");
    corpus_write("rows-over-limit.bin", work, n);
    memcpy(work, g.ptr, n);
    trove__put_le64(work + 16, 4); /* 4 rows cannot fit in 22 bytes */
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 24, "cannot take", "too many rows for raw_len");
    memcpy(work, g.ptr, n);
    trove__put_le64(work + 24, 1ull << 40); /* a huge inflated size: refused, not allocated */
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 24, "cannot take", "raw_len huge");
    corpus_write("raw-len-huge.bin", work, n);
    memcpy(work, g.ptr, n);
    trove__put_le64(work + 32, n);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 32, "packed bytes", "packed_len");
    memcpy(work, g.ptr, n);
    trove__put_le64(work + 24, 20); /* one byte less than the stream inflates to */
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, UINT64_MAX, "inflates past", "raw_len short");
    memcpy(work, g.ptr, n);
    work[FIXED] = 0xff; /* BTYPE 11: not a deflate block */
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_INFLATE, FIXED, "deflate", "bad deflate");
    corpus_write("bad-deflate.bin", work, n);

    /* rows carried by a stored block */
    {
        static const uint8_t good[] = {0x02, 0x02, 1, 2, 0, 0x04}; /* ts 1, id 1, START, ENCL */
        static const uint8_t phase3[] = {0x02, 0x02, 1, 2, 0, 0x03};
        static const uint8_t flags2[] = {0x02, 0x02, 1, 2, 0, 0x08};
        static const uint8_t id0[] = {0x02, 0x00, 1, 2, 0, 0x00};
        static const uint8_t cut[] = {0x02, 0x02, 1, 2, 0x80, 0x80};
        static const uint8_t wide[] = {0x02, 0x02, 0xff, 0xff, 0xff, 0xff, 0x7f, 2, 0, 0};
        static const uint8_t extra[] = {0x02, 0x02, 1, 2, 0, 0x04, 0x00};
        n = stored_object(work, 1, good, sizeof good);
        CHECK_EQ_INT(trove_flows_decode(work, n, &back, NULL), TROVE_OK);
        CHECK(back.len == 1 && back.f[0].ts_ns == 1 && back.f[0].id == 1 && back.f[0].pid == 1 &&
              back.f[0].tid == 2 && back.f[0].phase == 0 && back.f[0].flags == 1);
        trove_flows_free(&back);
        corpus_write("stored-good.bin", work, n);
        n = stored_object(work, 1, phase3, sizeof phase3);
        expect_bad(work, n, TROVE_ERR_CORRUPT, FIXED, "phase 3", "phase 3");
        corpus_write("stored-phase3.bin", work, n);
        n = stored_object(work, 1, flags2, sizeof flags2);
        expect_bad(work, n, TROVE_ERR_CORRUPT, FIXED, "flags 2", "flags 2");
        n = stored_object(work, 1, id0, sizeof id0);
        expect_bad(work, n, TROVE_ERR_CORRUPT, FIXED, "id 0", "id 0");
        n = stored_object(work, 1, cut, sizeof cut);
        expect_bad(work, n, TROVE_ERR_TRUNCATED, UINT64_MAX, "row 0", "cut varint");
        corpus_write("stored-cut.bin", work, n);
        n = stored_object(work, 1, wide, sizeof wide);
        expect_bad(work, n, TROVE_ERR_VARINT, UINT64_MAX, "pid", "pid over 32 bits");
        n = stored_object(work, 1, extra, sizeof extra);
        expect_bad(work, n, TROVE_ERR_CORRUPT, FIXED, "follow", "a byte after the rows");
        corpus_write("stored-extra.bin", work, n);
    }
    CHECK_EQ_INT(trove_flows_decode(NULL, 0, &back, NULL), TROVE_ERR_TRUNCATED);
    CHECK_EQ_INT(trove_flows_decode(g.ptr, g.len, NULL, NULL), TROVE_ERR_INVALID);
    trove_bytes_free(&g);
}

static void test_array(void)
{
    struct trove_flows a = {0};
    struct trove_flow f = small[0];
    for (uint32_t i = 0; i < 5000; i++) {
        f.tid = i;
        CHECK_EQ_INT(trove_flows_push(&a, &f), TROVE_OK);
    }
    CHECK(a.len == 5000 && a.f[4999].tid == 4999 && a.cap >= 5000);
    CHECK_EQ_INT(trove_flows_reserve(&a, 10), TROVE_OK);
    CHECK_EQ_INT(trove_flows_reserve(&a, SIZE_MAX), TROVE_ERR_NOMEM);
    CHECK_EQ_INT(a.len, 5000);
    trove_flows_free(&a);
    CHECK(a.f == NULL && a.len == 0 && a.cap == 0);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_round_trip);
    RUN(test_golden);
    RUN(test_bad);
    RUN(test_array);
    return test_done();
}
