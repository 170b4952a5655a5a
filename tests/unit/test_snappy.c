/*
 * test_snappy.c: trove__snappy_decode (src/columnar/snappy.c), trove's own decoder of the
 * Snappy blocks of the Parquet pages DuckDB compresses by default. Golden blocks worked out by
 * hand from the format (every element kind, each literal length form, copies that overlap
 * what they write, a 1-byte-offset copy using the offset's high bits), so that the format
 * is pinned by something other than libsnappy's own compressor; round trips of what
 * snappy_compress makes (empty, short, across its 64 KiB fragments, random and periodic
 * bytes, which it encodes as overlapping copies); and every error with its code, offset and
 * message, the output untouched and the same answer without a diag: a block that ends
 * inside its length or has one over 32 bits, a length other than the declared one (a block
 * declaring 4 GiB against a 5-byte output, a compressed MiB against one byte less), and
 * blocks libsnappy refuses (cut short, copies from before the start or past the end); and
 * against libsnappy's own decoder, blocks damaged at random: each is accepted by both, with
 * the same bytes, or refused by both.
 *
 *   build/test_snappy
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

#include "columnar/snappy.h"
#include "testutil.h"

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

/* blk decodes to exactly want[0..n); no prefix of it decodes. */
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
    free(out);
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

/* Fill buf[0..n): kind 0 random bytes, otherwise a random pattern of period kind. */
static void fill(uint8_t *buf, size_t n, size_t kind, uint64_t *rs)
{
    uint8_t pat[64];
    for (size_t i = 0; i < sizeof pat; i++)
        pat[i] = (uint8_t)test_rand(rs);
    for (size_t i = 0; i < n; i++)
        buf[i] = kind ? pat[i % kind] : (uint8_t)test_rand(rs);
}

/* What snappy_compress makes decodes back to its input, into an output of exactly that
 * size; the same block against one byte less or more is refused on its length, with the
 * output untouched; the block cut short anywhere is refused. */
static void test_round_trip(void)
{
    static const size_t sizes[] = {0, 1, 2, 59, 60, 61, 64, 65, 1000, 65535, 65536, 65537,
                                   200003, 1u << 20};
    static const size_t kinds[] = {0, 1, 2, 3, 7, 9, 64};
    uint64_t rs = 42;

    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
            const size_t n = sizes[si];
            size_t clen = snappy_max_compressed_length(n);
            uint8_t *src = malloc(n + 1), *blk = malloc(clen), *out = malloc(n + 1);
            struct trove_diag diag;
            char want[96];

            if (!src || !blk || !out)
                abort();
            fill(src, n, kinds[ki], &rs);
            CHECK_EQ_INT(snappy_compress((const char *)src, n, (char *)blk, &clen), SNAPPY_OK);
            memset(out, 0xa5, n + 1);
            CHECK_EQ_INT(decode(blk, clen, out, n, &diag), TROVE_OK);
            CHECK(memcmp(out, src, n) == 0);
            CHECK_EQ_INT(out[n], 0xa5);

            memset(out, 0xa5, n + 1);
            snprintf(want, sizeof want, "snappy: a block of %zu bytes where %zu are declared", n,
                     n + 1);
            CHECK_EQ_INT(decode(blk, clen, out, n + 1, &diag), TROVE_ERR_CORRUPT);
            CHECK_EQ_INT(diag.offset, 0);
            CHECK(strcmp(diag.msg, want) == 0);
            if (n) {
                snprintf(want, sizeof want,
                         "snappy: a block of %zu bytes where %zu are declared", n, n - 1);
                CHECK_EQ_INT(decode(blk, clen, out, n - 1, &diag), TROVE_ERR_CORRUPT);
                CHECK(strcmp(diag.msg, want) == 0);
            }
            for (size_t cut = 1; cut <= 3 && cut <= clen; cut++) {
                const size_t k = cut == 3 ? clen / 2 : clen - cut;
                const int rc = decode(blk, k, out, n, &diag);
                CHECK(rc == TROVE_ERR_TRUNCATED || rc == TROVE_ERR_CORRUPT);
                CHECK(strncmp(diag.msg, "snappy: ", 8) == 0);
            }
            for (size_t i = 0; i <= n; i++)
                if (out[i] != 0xa5) {
                    CHECK(0);
                    break;
                }
            free(src);
            free(blk);
            free(out);
        }
}

/* The decoder behind test_expect_decode_error, into err_dlen bytes. */
static size_t err_dlen;
static int decode_err(const uint8_t *buf, size_t len, void *out, struct trove_diag *diag)
{
    return trove__snappy_decode(buf, len, out, err_dlen, diag);
}

static void expect_error(const char *name, const uint8_t *blk, size_t len, size_t dlen, int want,
                         uint64_t want_off, const char *needle)
{
    err_dlen = dlen;
    test_expect_decode_error(decode_err, dlen, blk, len, want, want_off, needle, name);
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
    /* What libsnappy refuses inside a block whose length is the declared one: it does not
     * say what or where, so each is the one message at offset 0. */
    static const struct {
        const char *name;
        const uint8_t *blk;
        size_t len, dlen;
    } bad[] = {
        {"offset_0", off0, sizeof off0, 5},
        {"offset_past", off_past, sizeof off_past, 6},
        {"copy_first", off_first, sizeof off_first, 4},
        {"literal_past_input", lit_past_in, sizeof lit_past_in, 5},
        {"literal_length_cut", lit_len_cut, sizeof lit_len_cut, 5},
        {"literal_past_output", lit_past_out, sizeof lit_past_out, 3},
        {"copy_past_output", copy_past_out, sizeof copy_past_out, 5},
        {"short_output", short_out, sizeof short_out, 6},
        {"copy1_cut", copy1_cut, sizeof copy1_cut, 5},
        {"copy2_cut", copy2_cut, sizeof copy2_cut, 5},
        {"copy4_cut", copy4_cut, sizeof copy4_cut, 5},
    };
    char want[96];

    expect_error("no_length", hello, 0, 5, TROVE_ERR_TRUNCATED, 0,
                 "snappy: the block ends inside its length");
    expect_error("length_cut", wide, 3, 5, TROVE_ERR_TRUNCATED, 3, "inside its length");
    expect_error("length_33_bits", wide, sizeof wide, 5, TROVE_ERR_CORRUPT, 4,
                 "snappy: a block length of more than 32 bits");
    expect_error("length_6_bytes", long_len, sizeof long_len, 5, TROVE_ERR_CORRUPT, 4,
                 "more than 32 bits");
    expect_error("length_max32", max32, sizeof max32, 5, TROVE_ERR_CORRUPT, 0,
                 "snappy: a block of 4294967295 bytes where 5 are declared");
    expect_error("length_other", hello, sizeof hello, 6, TROVE_ERR_CORRUPT, 0,
                 "snappy: a block of 5 bytes where 6 are declared");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(want, sizeof want, "snappy: the block of %zu bytes does not decode to its %zu",
                 bad[i].len, bad[i].dlen);
        expect_error(bad[i].name, bad[i].blk, bad[i].len, bad[i].dlen, TROVE_ERR_CORRUPT, 0,
                     want);
    }
}

/* Blocks of snappy_compress with one to three bytes changed at random, or cut: trove's
 * decoder and libsnappy's agree on every one (valid or not, and on the bytes). */
static void test_against_libsnappy(void)
{
    enum { N = 3000, TRIES = 20000 };
    static uint8_t src[N], blk[N * 2], ours[N + 64], theirs[N + 64];
    uint64_t rs = 7;
    size_t agree_ok = 0, agree_bad = 0;

    for (int t = 0; t < TRIES; t++) {
        const size_t n = 1 + test_rand(&rs) % N;
        size_t clen = sizeof blk, len, m;
        struct trove_diag diag;
        fill(src, n, test_rand(&rs) % 5 == 0 ? 0 : 1 + test_rand(&rs) % 40, &rs);
        if (snappy_compress((const char *)src, n, (char *)blk, &clen) != SNAPPY_OK)
            abort();
        len = clen;
        for (int k = (int)(test_rand(&rs) % 4); k > 0; k--)
            blk[test_rand(&rs) % len] ^= (uint8_t)(1 + test_rand(&rs) % 255);
        if (test_rand(&rs) % 8 == 0)
            len = test_rand(&rs) % (len + 1);
        /* the declared size: what the (maybe damaged) block says, as a page would */
        if (snappy_uncompressed_length((const char *)blk, len, &m) != SNAPPY_OK || m > N + 64)
            m = n;
        const int mine = decode(blk, len, ours, m, &diag) == TROVE_OK;
        size_t out = m;
        const int libs = snappy_validate_compressed_buffer((const char *)blk, len) == SNAPPY_OK &&
                         snappy_uncompress((const char *)blk, len, (char *)theirs, &out) ==
                             SNAPPY_OK &&
                         out == m;
        CHECK_EQ_INT(mine, libs);
        if (mine && libs) {
            CHECK(memcmp(ours, theirs, m) == 0);
            agree_ok++;
        } else if (!mine && !libs) {
            agree_bad++;
        }
    }
    /* both kinds were met many times, so the agreement means something */
    CHECK(agree_ok > TRIES / 10 && agree_bad > TRIES / 10);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_golden);
    RUN(test_round_trip);
    RUN(test_errors);
    RUN(test_against_libsnappy);
    return test_done();
}
