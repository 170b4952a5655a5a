/*
 * test_snappy.c: the Snappy block decoder (src/columnar/snappy.c), which reads Parquet
 * pages that DuckDB compresses by default. Golden blocks worked out by hand from the format
 * (every element kind, each literal length form, copies that overlap what they write, a
 * 1-byte-offset copy using the offset's high bits), a pattern sweep against a byte-at-a-time
 * copy, and every error with its code, offset and message: a block shorter or longer than
 * declared, a length over 32 bits, copies from before the start or from offset 0, and every
 * prefix of every golden block. With TROVE_SNAPPY_CORPUS=<dir> set, the blocks built here
 * are also written there as the seed corpus of fuzz/fuzz_snappy.c (a selector byte, then
 * the block).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "columnar/snappy.h"
#include "testutil.h"

/* The fuzz target's input: a selector (0: decode to the block's own length), the block. */
static void corpus_write(const char *name, const uint8_t *buf, size_t len)
{
    const uint8_t sel = 0;
    test_corpus_write("TROVE_SNAPPY_CORPUS", name, &sel, 1, buf, len);
}

/* Decode an exact-size heap copy of blk (so ASan sees any overread) into dlen bytes. */
static int decode(const uint8_t *blk, size_t len, uint8_t *dst, size_t dlen,
                  struct trove_diag *diag)
{
    uint8_t *copy = malloc(len ? len : 1);
    int rc;
    if (!copy)
        abort();
    if (len)
        memcpy(copy, blk, len);
    rc = trove__snappy_decode(copy, len, dst, dlen, diag);
    free(copy);
    return rc;
}

/* blk decodes to exactly want[0..n); so does no prefix of it. */
static void expect_block(const char *name, const uint8_t *blk, size_t len, const uint8_t *want,
                         size_t n)
{
    uint8_t *out = malloc(n ? n : 1);
    struct trove_diag diag;
    int rc;

    if (!out)
        abort();
    rc = decode(blk, len, out, n, &diag);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        fprintf(stderr, "  %s: %s\n", name, diag.msg);
    else
        CHECK(memcmp(out, want, n) == 0);
    CHECK_EQ_INT(decode(blk, len, out, n, NULL), TROVE_OK);
    for (size_t k = 0; k < len; k++) {
        rc = decode(blk, k, out, n, &diag);
        CHECK(rc == TROVE_ERR_TRUNCATED || rc == TROVE_ERR_CORRUPT);
        CHECK_EQ_INT(diag.code, rc);
        CHECK(diag.offset <= k);
        CHECK(strncmp(diag.msg, "snappy: ", 8) == 0);
    }
    corpus_write(name, blk, len);
    free(out);
}

static void expect_error(const char *name, const uint8_t *blk, size_t len, size_t dlen, int want,
                         uint64_t want_off, const char *needle)
{
    uint8_t out[64];
    struct trove_diag diag;
    int rc;

    if (dlen > sizeof out)
        abort();
    rc = decode(blk, len, out, dlen, &diag);
    CHECK_EQ_INT(rc, want);
    CHECK_EQ_INT(diag.code, want);
    CHECK_EQ_INT(diag.offset, want_off);
    if (!strstr(diag.msg, needle)) {
        fprintf(stderr, "  %s: message \"%s\" lacks \"%s\"\n", name, diag.msg, needle);
        CHECK(0);
    }
    CHECK_EQ_INT(decode(blk, len, out, dlen, NULL), want);
    corpus_write(name, blk, len);
}

static void test_golden(void)
{
    static const uint8_t empty[] = {0x00};
    /* A literal of 5: tag (5 - 1) << 2. */
    static const uint8_t hello[] = {0x05, 0x10, 'h', 'e', 'l', 'l', 'o'};
    /* "abc", then a 1-byte-offset copy of 7 from 3 back: tag 1 | (7 - 4) << 2, offset 3;
     * it overlaps what it writes. */
    static const uint8_t abc[] = {0x0a, 0x08, 'a', 'b', 'c', 0x0d, 0x03};
    /* 'x', then a 2-byte-offset copy of 64 from 1 back: tag 2 | 63 << 2, offset 1 0. */
    static const uint8_t xs[] = {0x41, 0x00, 'x', 0xfe, 0x01, 0x00};
    /* "0123456789", then a 4-byte-offset copy of 10 from 10 back: tag 3 | 9 << 2. */
    static const uint8_t digits[] = {0x14, 0x24, '0', '1', '2', '3', '4', '5', '6', '7',
                                     '8',  '9',  0x27, 0x0a, 0x00, 0x00, 0x00};
    uint8_t want[1100] = {0}, blk[1200];
    size_t n = 0;

    expect_block("empty", empty, sizeof empty, want, 0);
    expect_block("hello", hello, sizeof hello, (const uint8_t *)"hello", 5);
    expect_block("copy1_overlap", abc, sizeof abc, (const uint8_t *)"abcabcabca", 10);
    memset(want, 'x', 65);
    expect_block("copy2_run", xs, sizeof xs, want, 65);
    expect_block("copy4", digits, sizeof digits, (const uint8_t *)"01234567890123456789", 20);

    /* A literal of 100 with its length in one byte (tag 60 << 2, then 99). */
    for (size_t i = 0; i < 100; i++)
        want[i] = (uint8_t)(i * 7 + 1);
    blk[0] = 100;
    blk[1] = 0xf0;
    blk[2] = 99;
    memcpy(blk + 3, want, 100);
    expect_block("literal_len1", blk, 103, want, 100);

    /* A literal of 1000 with its length in two bytes (tag 61 << 2, 999 = e7 03), then a
     * 1-byte-offset copy of 11 from 1000 back: offset bits 8..10 (3) in the tag's top
     * bits, tag 1 | (11 - 4) << 2 | 3 << 5, then the low byte e8. 1011 = f3 07. */
    for (size_t i = 0; i < 1000; i++)
        want[i] = (uint8_t)(i * 13 + 5);
    memcpy(want + 1000, want, 11);
    n = 0;
    blk[n++] = 0xf3;
    blk[n++] = 0x07;
    blk[n++] = 0xf4;
    blk[n++] = 0xe7;
    blk[n++] = 0x03;
    memcpy(blk + n, want, 1000);
    n += 1000;
    blk[n++] = 0x7d;
    blk[n++] = 0xe8;
    expect_block("copy1_offset_1000", blk, n, want, 1011);

    /* Literals with 3- and 4-byte lengths (tags 62 << 2 and 63 << 2): not what an encoder
     * writes for 6 bytes, but valid. */
    {
        static const uint8_t l3[] = {0x0c, 0xf8, 0x05, 0x00, 0x00, 'a', 'b', 'c',
                                     'd',  'e',  'f',  0xfc, 0x05, 0x00, 0x00, 0x00,
                                     'g',  'h',  'i',  'j',  'k',  'l'};
        expect_block("literal_len3_len4", l3, sizeof l3, (const uint8_t *)"abcdefghijkl", 12);
    }
}

/* Every offset 1..9 and length 1..64 of a 2-byte-offset copy after a 9-byte literal, against
 * a copy made one byte at a time. */
static void test_overlap_sweep(void)
{
    uint8_t blk[16], want[80], out[80];
    for (size_t off = 1; off <= 9; off++)
        for (size_t len = 1; len <= 64; len++) {
            const size_t n = 9 + len;
            blk[0] = (uint8_t)n;
            blk[1] = 8 << 2;
            for (size_t i = 0; i < 9; i++)
                blk[2 + i] = want[i] = (uint8_t)(0x41 + i);
            blk[11] = (uint8_t)(2 | (len - 1) << 2);
            blk[12] = (uint8_t)off;
            blk[13] = 0;
            for (size_t i = 9; i < n; i++)
                want[i] = want[i - off];
            memset(out, 0, sizeof out);
            CHECK_EQ_INT(decode(blk, 14, out, n, NULL), TROVE_OK);
            CHECK(memcmp(out, want, n) == 0);
        }
}

static void test_errors(void)
{
    static const uint8_t hello[] = {0x05, 0x10, 'h', 'e', 'l', 'l', 'o'};
    static const uint8_t wide[] = {0x80, 0x80, 0x80, 0x80, 0x10};
    static const uint8_t max32[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    static const uint8_t long_len[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    static const uint8_t off0[] = {0x05, 0x00, 'a', 0x01, 0x00};
    static const uint8_t off_past[] = {0x06, 0x04, 'a', 'b', 0x01, 0x03};
    static const uint8_t off_first[] = {0x04, 0x01, 0x01};
    static const uint8_t lit_past_in[] = {0x05, 0x10, 'h', 'e'};
    static const uint8_t lit_len_cut[] = {0x05, 0xf4, 0x04};
    static const uint8_t lit_past_out[] = {0x03, 0x10, 'h', 'e', 'l', 'l', 'o'};
    static const uint8_t copy_past_out[] = {0x05, 0x00, 'a', 0x05, 0x01};
    static const uint8_t short_out[] = {0x06, 0x10, 'h', 'e', 'l', 'l', 'o'};
    static const uint8_t copy1_cut[] = {0x05, 0x00, 'a', 0x01};
    static const uint8_t copy2_cut[] = {0x05, 0x00, 'a', 0x02, 0x01};
    static const uint8_t copy4_cut[] = {0x05, 0x00, 'a', 0x03, 0x01, 0x00, 0x00};

    expect_error("no_length", hello, 0, 5, TROVE_ERR_TRUNCATED, 0, "inside its length");
    expect_error("length_cut", wide, 3, 5, TROVE_ERR_TRUNCATED, 3, "inside its length");
    expect_error("length_33_bits", wide, sizeof wide, 5, TROVE_ERR_CORRUPT, 4,
                 "more than 32 bits");
    expect_error("length_6_bytes", long_len, sizeof long_len, 5, TROVE_ERR_CORRUPT, 4,
                 "more than 32 bits");
    expect_error("length_max32", max32, sizeof max32, 5, TROVE_ERR_CORRUPT, 0,
                 "a block of 4294967295 bytes where 5 are declared");
    expect_error("length_other", hello, sizeof hello, 6, TROVE_ERR_CORRUPT, 0,
                 "a block of 5 bytes where 6 are declared");
    expect_error("offset_0", off0, sizeof off0, 5, TROVE_ERR_CORRUPT, 3,
                 "a copy from 0 bytes back at output byte 1");
    expect_error("offset_past", off_past, sizeof off_past, 6, TROVE_ERR_CORRUPT, 4,
                 "a copy from 3 bytes back at output byte 2");
    expect_error("copy_first", off_first, sizeof off_first, 4, TROVE_ERR_CORRUPT, 1,
                 "a copy from 1 bytes back at output byte 0");
    expect_error("literal_past_input", lit_past_in, sizeof lit_past_in, 5, TROVE_ERR_TRUNCATED,
                 1, "a literal of 5 bytes with 2 left");
    expect_error("literal_length_cut", lit_len_cut, sizeof lit_len_cut, 5, TROVE_ERR_TRUNCATED,
                 1, "inside a literal's length");
    expect_error("literal_past_output", lit_past_out, sizeof lit_past_out, 3, TROVE_ERR_CORRUPT,
                 1, "a literal of 5 bytes past the 3 declared");
    expect_error("copy_past_output", copy_past_out, sizeof copy_past_out, 5, TROVE_ERR_CORRUPT,
                 3, "a copy of 5 bytes past the 5 declared");
    expect_error("short_output", short_out, sizeof short_out, 6, TROVE_ERR_CORRUPT, 7,
                 "decodes to 5 of its declared 6 bytes");
    expect_error("copy1_cut", copy1_cut, sizeof copy1_cut, 5, TROVE_ERR_TRUNCATED, 3,
                 "inside a copy");
    expect_error("copy2_cut", copy2_cut, sizeof copy2_cut, 5, TROVE_ERR_TRUNCATED, 3,
                 "inside a copy");
    expect_error("copy4_cut", copy4_cut, sizeof copy4_cut, 5, TROVE_ERR_TRUNCATED, 3,
                 "inside a copy");
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_golden);
    RUN(test_overlap_sweep);
    RUN(test_errors);
    return test_done();
}
