/*
 * test_pq_encoding.c: Parquet's value encodings (src/columnar/pq_*.c) — the RLE /
 * bit-packing hybrid at every width 0..32 (random and run-heavy data, n = 0, 1, 7, 8, 9,
 * 1000, and non-canonical streams a reference writer here builds bit by bit: one group per
 * run, RLE runs of one value, padding past n); DELTA_BINARY_PACKED for INT32 and INT64
 * (deltas that wrap at INT32_MIN/MAX and INT64_MIN/MAX, constant, increasing and random
 * columns, the n around block boundaries) and streams with other block layouts (256 / 8,
 * 128 / 1, 512 / 4) with junk in the padding and unused widths; golden bytes worked out by
 * hand from the examples of Encodings.md; every error with its code and offset, each decoder
 * truncated at every prefix; and PLAIN byte arrays. With TROVE_PQ_ENCODING_CORPUS=<dir>
 * set, valid and broken inputs built here are also written to <dir>, with the fuzz target's
 * prefix, as its seed corpus (fuzz/corpus/fuzz_pq_encoding/). The dictionary builders are
 * test_pq_encoding_dict.c's; the harness both use is pq_encoding_test.h.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "columnar/pq_encoding.h"
#include "common/endian.h"
#include "common/varint.h"
#include "pq_encoding_test.h"
#include "testutil.h"

/* ---- reference writers (bit by bit, independent of the code under test) ---------------- */

static void put_bits(uint8_t *buf, size_t *bitpos, uint64_t v, unsigned w)
{
    for (unsigned b = 0; b < w; b++, (*bitpos)++)
        if ((v >> b) & 1)
            buf[*bitpos / 8] |= (uint8_t)(1u << (*bitpos % 8));
}

/* RLE hybrid where every run is bit-packed with at most gpr groups (the last padded with
 * pad_junk-derived bits), into out (zeroed, big enough); returns the length. */
static size_t ref_rle_bitpacked(const uint32_t *v, size_t n, unsigned w, size_t gpr,
                                uint64_t *rng, uint8_t *out)
{
    uint8_t *p = out;
    for (size_t i = 0; i < n;) {
        size_t groups = (n - i + 7) / 8, bit = 0;
        if (groups > gpr)
            groups = gpr;
        p = trove_put_varint(p, (uint64_t)groups << 1 | 1);
        for (size_t k = 0; k < groups * 8; k++) {
            uint64_t x = i + k < n ? v[i + k] : test_rand(rng);
            put_bits(p, &bit, w < 32 ? x & ((1ull << w) - 1) : (uint32_t)x, w);
        }
        p += groups * w;
        i += groups * 8;
    }
    return (size_t)(p - out);
}

/* RLE hybrid of n RLE runs of one value each. */
static size_t ref_rle_runs(const uint32_t *v, size_t n, unsigned w, uint8_t *out)
{
    uint8_t *p = out;
    for (size_t i = 0; i < n; i++) {
        p = trove_put_varint(p, 1 << 1);
        for (unsigned b = 0; b < (w + 7) / 8; b++)
            *p++ = (uint8_t)(v[i] >> (8 * b));
    }
    return (size_t)(p - out);
}

/*
 * DELTA_BINARY_PACKED with any block layout. junk: padding values and the widths of unused
 * miniblocks are random (readers must accept both); else zeros, as this module's encoder
 * writes them. out is zeroed and big enough; returns the length.
 */
static size_t ref_delta(const int64_t *v, size_t n, int is32, unsigned block, unsigned mini,
                        int junk, uint64_t *rng, uint8_t *out)
{
    const unsigned per = block / mini;
    uint8_t *p = out;
    uint64_t *d = malloc(block * sizeof *d);

    if (!d)
        abort();
    p = trove_put_varint(p, block);
    p = trove_put_varint(p, mini);
    p = trove_put_varint(p, n);
    p = trove_put_varint(p, trove_zigzag64(n ? v[0] : 0));
    for (size_t b = 1; b < n; b += block) {
        size_t k = n - b < block ? n - b : block;
        int64_t min = INT64_MAX;
        for (size_t i = 0; i < k; i++) {
            uint64_t x = (uint64_t)v[b + i] - (uint64_t)v[b + i - 1];
            d[i] = is32 ? (uint64_t)(int64_t)(int32_t)(uint32_t)x : x;
            if ((int64_t)d[i] < min)
                min = (int64_t)d[i];
        }
        p = trove_put_varint(p, trove_zigzag64(min));
        uint8_t *widths = p;
        p += mini;
        for (unsigned m = 0; m < mini; m++) {
            unsigned w = 0;
            size_t bit = 0;
            if ((size_t)m * per >= k) {
                widths[m] = junk ? (uint8_t)test_rand(rng) : 0;
                continue;
            }
            for (size_t i = m * per; i < k && i < (size_t)(m + 1) * per; i++) {
                uint64_t r = d[i] - (uint64_t)min;
                while (w < 64 && (r >> w) != 0)
                    w++;
            }
            widths[m] = (uint8_t)w;
            for (size_t i = m * per; i < (size_t)(m + 1) * per; i++) {
                uint64_t r = i < k ? d[i] - (uint64_t)min : junk ? test_rand(rng) : 0;
                put_bits(p, &bit, w < 64 ? r & ((1ull << w) - 1) : r, w);
            }
            p += per / 8 * w;
        }
    }
    free(d);
    return (size_t)(p - out);
}

/* ---- RLE ------------------------------------------------------------------------------- */

static void rle_golden(const uint32_t *v, size_t n, unsigned w, const uint8_t *want,
                       size_t want_len, const char *what)
{
    struct trove_bytes b = {0};
    struct dec d = {SEL_RLE, w, n, 0};
    struct outs o;

    CHECK_EQ_INT(trove__pq_rle_encode(v, n, w, &b), TROVE_OK);
    check_bytes(&b, want, want_len, what);
    if (expect_ok(&d, want, want_len, want_len, &o, what) == TROVE_OK)
        CHECK(n == 0 || memcmp(o.u32, v, n * sizeof *v) == 0);
    outs_free(&o);
    trove_bytes_free(&b);
}

static void test_rle_golden(void)
{
    /* Encodings.md: the numbers 0..7 at width 3 pack to 10001000 11000110 11111010. */
    static const uint32_t seq8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const uint8_t seq8_b[] = {0x03, 0x88, 0xc6, 0xfa};
    /* Eight 5s at width 3: an RLE run, header 8 << 1, the value in one byte. */
    static const uint32_t fives[8] = {5, 5, 5, 5, 5, 5, 5, 5};
    static const uint8_t fives_b[] = {0x10, 0x05};
    /* 1, 2, 3 then thirteen 7s at width 4: five 7s fill the first group, 8 are a run. */
    uint32_t mixed[16] = {1, 2, 3};
    static const uint8_t mixed_b[] = {0x03, 0x21, 0x73, 0x77, 0x77, 0x10, 0x07};
    /* 1, 2, 3 then ten 7s: five 7s fill the group and the other five are still a run
     * (header 5 << 1 and a value byte: 2 bytes, against 4 for a second packed group). */
    static const uint8_t mixed13_b[] = {0x03, 0x21, 0x73, 0x77, 0x77, 0x0a, 0x07};
    /* Nine 0xdeadbeef at width 32: the value in 4 bytes little-endian. */
    uint32_t beef[9];
    static const uint8_t beef_b[] = {0x12, 0xef, 0xbe, 0xad, 0xde};
    /* 300 at width 9 repeated 20 times: 2 value bytes. */
    uint32_t w9[20];
    static const uint8_t w9_b[] = {0x28, 0x2c, 0x01};
    /* A one-value dictionary: width 0, RLE runs only. Three rows are a run of 3 (header 06);
     * 100 rows a run of 100 (header 200 = c8 01), with no value bytes. At width 1, three
     * zeros are a run with a value byte (06 00; one padded group would also take 2 bytes);
     * 300 zeros a run, header 600 = d8 04, value 00. */
    static const uint32_t zeros[300] = {0};
    static const uint8_t z3w0_b[] = {0x06}, z100w0_b[] = {0xc8, 0x01};
    static const uint8_t z3w1_b[] = {0x06, 0x00}, z300w1_b[] = {0xd8, 0x04, 0x00};
    /* Width 1: 1,0,1,0,1,0,1,0 / 16 ones / 0,1. A run of the 16 ones would take 2 bytes and a
     * second header for the tail; two more packed bytes do it in one run of 4 groups. */
    uint32_t alt[26];
    static const uint8_t alt_b[] = {0x09, 0x55, 0xff, 0xff, 0x02};
    /* Width 8: 0..7, twenty 9s, 1, 2. The shortest split: a packed group, a run of 20 (28
     * 09), then the tail 1, 2 as two runs of one (02 01, 02 02: 4 bytes, where a padded
     * group would take 9). The encoder's own, greedy over 5 bits: the tail is one padded
     * group (03 01 02 and six zero bytes). */
    uint32_t w8[30];
    static const uint8_t w8_b[] = {0x03, 0,    1,    2,    3,    4,    5,   6,
                                   7,    0x28, 0x09, 0x02, 0x01, 0x02, 0x02};
    static const uint8_t w8g_b[] = {0x03, 0,    1,    2, 3, 4, 5, 6, 7, 0x28,
                                    0x09, 0x03, 0x01, 0x02, 0, 0, 0, 0, 0, 0};

    for (int i = 3; i < 16; i++)
        mixed[i] = 7;
    for (int i = 0; i < 9; i++)
        beef[i] = 0xdeadbeefu;
    for (int i = 0; i < 20; i++)
        w9[i] = 300;
    for (int i = 0; i < 26; i++)
        alt[i] = i < 8 ? (i % 2 == 0) : i < 24 ? 1 : (uint32_t)(i - 24);
    for (int i = 0; i < 30; i++)
        w8[i] = i < 8 ? (uint32_t)i : i < 28 ? 9 : (uint32_t)(i - 27);

    rle_golden(seq8, 8, 3, seq8_b, sizeof seq8_b, "spec example 0..7 w3");
    rle_golden(fives, 8, 3, fives_b, sizeof fives_b, "eight 5s w3");
    rle_golden(mixed, 16, 4, mixed_b, sizeof mixed_b, "1 2 3 + thirteen 7s w4");
    rle_golden(mixed, 13, 4, mixed13_b, sizeof mixed13_b, "1 2 3 + ten 7s w4");
    rle_golden(beef, 9, 32, beef_b, sizeof beef_b, "nine deadbeef w32");
    rle_golden(w9, 20, 9, w9_b, sizeof w9_b, "twenty 300s w9");
    rle_golden(zeros, 3, 0, z3w0_b, sizeof z3w0_b, "3 rows w0");
    rle_golden(zeros, 100, 0, z100w0_b, sizeof z100w0_b, "100 rows w0");
    rle_golden(zeros, 3, 1, z3w1_b, sizeof z3w1_b, "3 zeros w1");
    rle_golden(zeros, 300, 1, z300w1_b, sizeof z300w1_b, "300 zeros w1");
    rle_golden(alt, 26, 1, alt_b, sizeof alt_b, "group, ones, tail w1");
    rle_golden(w8, 30, 8, w8g_b, sizeof w8g_b, "group, run, tail w8 (greedy)");
    {
        struct trove_bytes b = {0};
        CHECK_EQ_INT(trove__pq_rle_encode_shortest(w8, 30, 8, &b), TROVE_OK);
        check_bytes(&b, w8_b, sizeof w8_b, "group, run, tail w8 (shortest)");
        trove_bytes_free(&b);
    }
    rle_golden(NULL, 0, 5, NULL, 0, "n = 0");

    corpus_write("rle_spec_w3", SEL_RLE, 3, 8, seq8_b, sizeof seq8_b);
    corpus_write("rle_mixed_w4", SEL_RLE, 4, 16, mixed_b, sizeof mixed_b);
    corpus_write("rle_beef_w32", SEL_RLE, 32, 9, beef_b, sizeof beef_b);
    corpus_write("rle_w0", SEL_RLE, 0, 100, z100w0_b, sizeof z100w0_b);
    corpus_write("rle_alt_w1", SEL_RLE, 1, 26, alt_b, sizeof alt_b);
}

/* Fill v[0..n) at width w: pattern 0 random, 1 run-heavy (runs of 1..40 of a random value),
 * 2 the maximum value, 3 a ramp. */
static void rle_fill(uint32_t *v, size_t n, unsigned w, int pattern, uint64_t *rng)
{
    const uint32_t mask = w == 32 ? 0xffffffffu : (uint32_t)((1ull << w) - 1);
    for (size_t i = 0; i < n;) {
        uint32_t x = (uint32_t)test_rand(rng) & mask;
        size_t run = pattern == 1 ? 1 + test_rand(rng) % 40 : 1;
        for (size_t k = 0; k < run && i < n; k++, i++)
            v[i] = pattern == 2 ? mask : pattern == 3 ? (uint32_t)i & mask : x;
    }
}

static void test_rle_roundtrips(void)
{
    static const size_t ns[] = {0, 1, 7, 8, 9, 1000};
    uint64_t rng = 1;
    uint32_t *v = malloc(1000 * sizeof *v);
    uint8_t *ref = malloc(16384);
    char what[128];

    if (!v || !ref)
        abort();
    for (unsigned w = 0; w <= 32; w++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int pattern = 0; pattern < 4; pattern++) {
                const size_t n = ns[ni];
                struct trove_bytes b = {0};
                struct dec d = {SEL_RLE, w, n, 0};
                struct outs o;
                size_t rlen;

                rle_fill(v, n, w, pattern, &rng);
                snprintf(what, sizeof what, "rle w%u n%zu p%d", w, n, pattern);
                CHECK_EQ_INT(trove__pq_rle_encode(v, n, w, &b), TROVE_OK);
                if (expect_ok(&d, b.ptr, b.len, b.len, &o, what) == TROVE_OK)
                    CHECK(n == 0 || memcmp(o.u32, v, n * sizeof *v) == 0);
                outs_free(&o);
                /* The bytes after the n-th value are not read. */
                CHECK_EQ_INT(trove_bytes_append(&b, "\xff\xff\xff", 3), TROVE_OK);
                if (expect_ok(&d, b.ptr, b.len, b.len - 3, &o, what) == TROVE_OK)
                    CHECK(n == 0 || memcmp(o.u32, v, n * sizeof *v) == 0);
                outs_free(&o);
                if (n == 0)
                    CHECK_EQ_INT(b.len, 3);
                if (n == 1000 && pattern == 2)
                    CHECK_EQ_INT(b.len - 3, 2 + (w + 7) / 8); /* one run, header d0 0f */
                if (n == 1000 && pattern == 0 && w >= 16) /* no repeats of 8: all bit-packed */
                    CHECK_EQ_INT(b.len - 3, 2 + 125 * w);
                if (n > 0 && n < 8) /* one padded group at most */
                    CHECK(b.len - 3 <= 1 + w);
                if (n == 1000 && w == 5 && pattern == 1)
                    corpus_write("rle_runs_w5", SEL_RLE, w, n, b.ptr, b.len - 3);
                if (n == 9 && w == 17 && pattern == 0)
                    corpus_write("rle_random_w17", SEL_RLE, w, n, b.ptr, b.len - 3);
                trove_bytes_free(&b);

                /* Other writers' choices: bit-packed runs of 1 and 3 groups with junk
                 * padding past n, and RLE runs of single values. */
                for (size_t gpr = 1; gpr <= 3; gpr += 2) {
                    memset(ref, 0, 16384);
                    rlen = ref_rle_bitpacked(v, n, w, gpr, &rng, ref);
                    if (expect_ok(&d, ref, rlen, rlen, &o, what) == TROVE_OK)
                        CHECK(n == 0 || memcmp(o.u32, v, n * sizeof *v) == 0);
                    outs_free(&o);
                }
                rlen = ref_rle_runs(v, n, w, ref);
                if (expect_ok(&d, ref, rlen, rlen, &o, what) == TROVE_OK)
                    CHECK(n == 0 || memcmp(o.u32, v, n * sizeof *v) == 0);
                outs_free(&o);
                if (n == 9 && w == 11 && pattern == 0)
                    corpus_write("rle_single_runs_w11", SEL_RLE, w, n, ref, rlen);
            }
    free(v);
    free(ref);
}

/* The fewest bytes any hybrid encoding of v[0..n) (n <= 64) at width w can take, found run
 * by run from the back: best[i] is the cheapest encoding of v[i..n) as whole runs, each an
 * RLE run of a repeat's prefix or a bit-packed run of g groups (the last one padded). At
 * w = 0 the encoder writes RLE runs only, so only those are counted. */
static size_t rle_fewest_bytes(const uint32_t *v, size_t n, unsigned w)
{
    size_t best[65];
    const size_t vb = (w + 7) / 8;

    if (n > 64)
        abort();
    best[n] = 0;
    for (size_t i = n; i-- > 0;) {
        best[i] = SIZE_MAX;
        for (size_t len = 1; i + len <= n && v[i + len - 1] == v[i]; len++) {
            size_t c = (len < 64 ? 1 : 2) + vb + best[i + len];
            if (c < best[i])
                best[i] = c;
        }
        for (size_t g = 1; w > 0 && i + 8 * (g - 1) < n; g++) {
            size_t end = i + 8 * g < n ? i + 8 * g : n;
            size_t c = 1 + g * w + best[end];
            if (c < best[i])
                best[i] = c;
        }
    }
    return best[0];
}

/* The encoder's output is the shortest there is, on small inputs with many repeats. */
static void test_rle_shortest(void)
{
    static const unsigned ws[] = {0, 1, 2, 3, 5, 8, 9, 17, 32};
    uint64_t rng = 11;
    uint32_t v[64];
    char what[96];

    for (size_t wi = 0; wi < sizeof ws / sizeof ws[0]; wi++)
        for (int trial = 0; trial < 400; trial++) {
            const unsigned w = ws[wi];
            const size_t n = 1 + test_rand(&rng) % 64;
            const uint32_t alphabet = w == 0 ? 1 : 1 + (uint32_t)(test_rand(&rng) % 3);
            struct trove_bytes b = {0};
            struct dec d = {SEL_RLE, w, n, 0};
            struct outs o;

            for (size_t i = 0; i < n;) {
                uint32_t x = (uint32_t)(test_rand(&rng) % alphabet);
                size_t run = 1 + test_rand(&rng) % (trial % 2 ? 20 : 4);
                if (w < 32)
                    x &= (uint32_t)((1ull << w) - 1);
                for (size_t k = 0; k < run && i < n; k++)
                    v[i++] = x;
            }
            snprintf(what, sizeof what, "shortest w%u n%zu trial %d", w, n, trial);
            CHECK_EQ_INT(trove__pq_rle_encode_shortest(v, n, w, &b), TROVE_OK);
            if (b.len != rle_fewest_bytes(v, n, w))
                fprintf(stderr, "%s: %zu bytes, the fewest %zu\n", what, b.len,
                        rle_fewest_bytes(v, n, w));
            CHECK_EQ_INT(b.len, rle_fewest_bytes(v, n, w));
            if (expect_ok(&d, b.ptr, b.len, b.len, &o, what) == TROVE_OK)
                CHECK(memcmp(o.u32, v, n * sizeof *v) == 0);
            outs_free(&o);
            trove_bytes_free(&b);

            /* The encoder's own choice: valid, never longer than all bit-packed (a header
             * and the groups), and the shortest where it says so (w 3 to 5, 1 in 4
             * repeats). */
            {
                size_t repeats = 0;
                for (size_t i = 1; i < n; i++)
                    repeats += v[i] == v[i - 1];
                CHECK_EQ_INT(trove__pq_rle_encode(v, n, w, &b), TROVE_OK);
                if (expect_ok(&d, b.ptr, b.len, b.len, &o, what) == TROVE_OK)
                    CHECK(memcmp(o.u32, v, n * sizeof *v) == 0);
                outs_free(&o);
                if (w > 0)
                    CHECK(b.len <= 1 + (n + 7) / 8 * w);
                if (w >= 3 && w <= 5 && repeats >= n / 4)
                    CHECK_EQ_INT(b.len, rle_fewest_bytes(v, n, w));
                trove_bytes_free(&b);
            }
        }
}

/* The narrow-width split (runs between anchors of 32 / w values) on the cases it decides:
 * a gap of few repeats goes as runs, a gap of many as one bit-packed run filled from the
 * anchor's head. */
static void test_rle_anchored(void)
{
    uint32_t v[96];
    /* Width 2: 20 zeros (an anchor of 16 or more), 3, 3, 20 ones: runs 28 00, 04 03, 28 01. */
    static const uint8_t runs_b[] = {0x28, 0x00, 0x04, 0x03, 0x28, 0x01};
    /* Width 2: 1 2 3 1 2 3 1 2 3 1 (ten values, ten repeats: 20 bytes as runs), then 30
     * twos: the gap packs with 6 twos from the anchor (2 groups: 05, then 1 2 3 1 = 79,
     * 2 3 1 2 = 9e, 3 1 2 2 = a7, 2 2 2 2 = aa), the other 24 twos a run (30 02). */
    static const uint8_t packed_b[] = {0x05, 0x79, 0x9e, 0xa7, 0xaa, 0x30, 0x02};

    for (int i = 0; i < 42; i++)
        v[i] = i < 20 ? 0 : i < 22 ? 3 : 1;
    rle_golden(v, 42, 2, runs_b, sizeof runs_b, "anchored: runs between anchors");
    for (int i = 0; i < 40; i++)
        v[i] = i < 10 ? (uint32_t)(i % 3 + 1) : 2;
    rle_golden(v, 40, 2, packed_b, sizeof packed_b, "anchored: packed gap, filled");
}

/* Long inputs: runs longer than one varint byte, 100k values through the word kernels. */
static void test_rle_large(void)
{
    const size_t n = 100000;
    uint32_t *v = malloc(n * sizeof *v);
    uint64_t rng = 7;

    if (!v)
        abort();
    for (unsigned w = 0; w <= 32; w += 1) {
        for (int pattern = 0; pattern < 2; pattern++) {
            struct trove_bytes b = {0};
            struct dec d = {SEL_RLE, w, n, 0};
            struct outs o;
            rle_fill(v, n, w, pattern, &rng);
            CHECK_EQ_INT(trove__pq_rle_encode(v, n, w, &b), TROVE_OK);
            if (expect_ok(&d, b.ptr, b.len, b.len, &o, "rle large") == TROVE_OK)
                CHECK(memcmp(o.u32, v, n * sizeof *v) == 0);
            outs_free(&o);
            /* A prefix of the values decodes from the same bytes. */
            d.n = n / 3;
            if (expect_ok(&d, b.ptr, b.len, SIZE_MAX, &o, "rle large prefix") == TROVE_OK)
                CHECK(memcmp(o.u32, v, d.n * sizeof *v) == 0);
            outs_free(&o);
            trove_bytes_free(&b);
        }
    }
    free(v);
}

/* Whether two RLE runs in a row of buf[0..len) (a valid encoding at width w) hold the same
 * value: a repeat split in two, which the encoder's cuts never do. */
static int rle_split_repeat(const uint8_t *buf, size_t len, unsigned w)
{
    const size_t vb = (w + 7) / 8;
    int prev_rle = 0;
    uint32_t prev = 0;
    for (size_t at = 0; at < len;) {
        uint64_t h = 0;
        unsigned shift = 0;
        while (buf[at] & 0x80) {
            h |= (uint64_t)(buf[at++] & 0x7f) << shift;
            shift += 7;
        }
        h |= (uint64_t)buf[at++] << shift;
        if (h & 1) {
            at += (size_t)(h >> 1) * w;
            prev_rle = 0;
        } else {
            uint32_t x = 0;
            for (size_t k = 0; k < vb; k++)
                x |= (uint32_t)buf[at + k] << (8 * k);
            at += vb;
            if (prev_rle && x == prev)
                return 1;
            prev_rle = 1;
            prev = x;
        }
    }
    return 0;
}

/* Past 2^16 values the encoder goes block by block, and a block of 256 or more as two
 * halves: the pieces join into one valid stream, cut only where the value changes. */
static void test_rle_blocks(void)
{
    const size_t n = ((size_t)3 << 16) + 1001;
    uint32_t *v = malloc(n * sizeof *v);
    uint64_t rng = 9;
    static const unsigned ws[] = {1, 5, 13};

    if (!v)
        abort();
    for (size_t wi = 0; wi < sizeof ws / sizeof ws[0]; wi++)
        for (int pattern = 0; pattern < 3; pattern++) {
            struct trove_bytes b = {0};
            struct dec d = {SEL_RLE, ws[wi], n, 0};
            struct outs o;
            rle_fill(v, n, ws[wi], pattern == 2 ? 1 : pattern, &rng);
            if (pattern == 2) /* long repeats across every block and half */
                for (size_t i = 0; i < n; i++)
                    v[i] = (uint32_t)(i / 40000 % 2);
            CHECK_EQ_INT(trove__pq_rle_encode(v, n, ws[wi], &b), TROVE_OK);
            if (expect_ok(&d, b.ptr, b.len, b.len, &o, "rle blocks") == TROVE_OK)
                CHECK(memcmp(o.u32, v, n * sizeof *v) == 0);
            outs_free(&o);
            CHECK(!rle_split_repeat(b.ptr, b.len, ws[wi]));
            if (pattern == 2) /* a run per repeat: header (3 bytes) and value, 5 repeats */
                CHECK_EQ_INT(b.len, (n + 39999) / 40000 * (3 + (ws[wi] + 7) / 8));
            trove_bytes_free(&b);
        }
    free(v);
}

static void test_rle_errors(void)
{
    uint32_t v[40];
    struct trove_bytes b = {0};
    struct dec d = {SEL_RLE, 5, 40, 0};
    uint64_t rng = 3;
    uint8_t buf[16];

    /* A stream of several runs, truncated at every prefix. */
    rle_fill(v, 40, 5, 1, &rng);
    for (int i = 0; i < 12; i++)
        v[i] = (uint32_t)i;
    for (int i = 12; i < 30; i++)
        v[i] = 9;
    CHECK_EQ_INT(trove__pq_rle_encode(v, 40, 5, &b), TROVE_OK);
    expect_truncations(&d, b.ptr, b.len, "rle");
    corpus_write("rle_trunc_w5", SEL_RLE, 5, 40, b.ptr, b.len - 1);
    trove_bytes_free(&b);

    /* A bit-packed run of 2 groups at width 5 needs 10 bytes, even if n ends in group 1. */
    d.n = 3;
    memcpy(buf, "\x05\x01\x02\x03\x04\x05\x06\x07\x08\x09", 10);
    expect_err(&d, buf, 9, TROVE_ERR_TRUNCATED, 9, "needs 10 bytes", "bit-packed run short");
    /* An RLE run's value is cut off (width 9: 2 bytes). */
    d.w = 9;
    expect_err(&d, (const uint8_t *)"\x08\x01", 2, TROVE_ERR_TRUNCATED, 2, "value",
               "rle value cut");
    /* Runs of length 0. */
    d.w = 5;
    expect_err(&d, (const uint8_t *)"\x00\x01", 2, TROVE_ERR_CORRUPT, 0, "length 0",
               "rle run of 0");
    d.n = 4;
    expect_err(&d, (const uint8_t *)"\x06\x01\x01", 3, TROVE_ERR_CORRUPT, 2, "length 0",
               "bit-packed run of 0 groups after a run");
    d.n = 3;
    /* A value wider than the width: 32 at width 5. */
    expect_err(&d, (const uint8_t *)"\x06\x20", 2, TROVE_ERR_CORRUPT, 1, "wider",
               "rle value too wide");
    corpus_write("rle_wide_value", SEL_RLE, 5, 3, (const uint8_t *)"\x06\x20", 2);
    d.w = 12;
    expect_err(&d, (const uint8_t *)"\x06\x00\x10", 3, TROVE_ERR_CORRUPT, 1, "wider",
               "rle value too wide w12");
    /* Headers: 6 bytes long, or a fifth byte with bits over 32. */
    expect_err(&d, (const uint8_t *)"\x83\x80\x80\x80\x80\x00", 6, TROVE_ERR_CORRUPT, 0,
               "varint", "rle header 6 bytes");
    expect_err(&d, (const uint8_t *)"\x83\x80\x80\x80\x10", 5, TROVE_ERR_CORRUPT, 0, "varint",
               "rle header over 32 bits");
    corpus_write("rle_long_header", SEL_RLE, 12, 3,
                 (const uint8_t *)"\x83\x80\x80\x80\x80\x00", 6);
    /* The largest valid header: 2^31 - 1 groups of width 0. */
    d.w = 0;
    d.n = 50;
    {
        struct outs o;
        if (expect_ok(&d, (const uint8_t *)"\xff\xff\xff\xff\x0f", 5, 5, &o, "max groups") ==
            TROVE_OK)
            CHECK(o.u32[0] == 0 && o.u32[49] == 0);
        outs_free(&o);
    }
    /* Empty input with n > 0; width 33. */
    d.w = 5;
    expect_err(&d, NULL, 0, TROVE_ERR_TRUNCATED, 0, "cut short", "rle empty");
    d.w = 33;
    expect_err(&d, (const uint8_t *)"\x02\x01", 2, TROVE_ERR_INVALID, 0, "33", "rle w33");

    /* The encoder's argument checks; out keeps its content. */
    CHECK_EQ_INT(trove_bytes_append(&b, "ab", 2), TROVE_OK);
    v[5] = 32;
    CHECK_EQ_INT(trove__pq_rle_encode(v, 40, 5, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove__pq_rle_encode(v, 40, 33, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove__pq_rle_encode(NULL, 1, 5, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove__pq_rle_encode(v, 1, 5, NULL), TROVE_ERR_INVALID);
    CHECK(b.len == 2 && memcmp(b.ptr, "ab", 2) == 0);
    v[0] = 1;
    CHECK_EQ_INT(trove__pq_rle_encode(v, 1, 0, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(b.len, 2);
    trove_bytes_free(&b);
}

/* ---- DELTA_BINARY_PACKED ----------------------------------------------------------------- */

static void delta_golden(const int64_t *v, size_t n, const uint8_t *want, size_t want_len,
                         const char *what)
{
    for (int is32 = 0; is32 <= 1; is32++) {
        struct trove_bytes b = {0};
        struct dec d = {is32 ? SEL_DELTA32 : SEL_DELTA64, 0, n, 0};
        struct outs o;
        CHECK_EQ_INT(trove__pq_delta_encode(v, n, is32, &b), TROVE_OK);
        check_bytes(&b, want, want_len, what);
        if (expect_ok(&d, want, want_len, want_len, &o, what) == TROVE_OK)
            CHECK(n == 0 || memcmp(o.i64, v, n * sizeof *v) == 0);
        outs_free(&o);
        trove_bytes_free(&b);
    }
}

static void test_delta_golden(void)
{
    /*
     * The examples of Encodings.md, with this encoder's block of 128 (80 01) and 4
     * miniblocks. 1..5: count 5, first 1 (zigzag 02); one block: min delta 1 (02), widths
     * 0 0 0 0, no data.
     */
    static const int64_t ex1[] = {1, 2, 3, 4, 5};
    static const uint8_t ex1_b[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00};
    /* 7 5 3 1 2 3 4 5: first 7 (0e); min delta -2 (zigzag 03); relative deltas 0 0 0 3 3 3 3
     * at width 2 in a miniblock of 32: c0 3f then 6 zero bytes of padding. */
    static const int64_t ex2[] = {7, 5, 3, 1, 2, 3, 4, 5};
    static const uint8_t ex2_b[] = {0x80, 0x01, 0x04, 0x08, 0x0e, 0x03, 0x02, 0x00, 0x00,
                                    0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    /* n = 0: count 0, first value 0. n = 1: -1 is zigzag 01; no block. */
    static const uint8_t ex0_b[] = {0x80, 0x01, 0x04, 0x00, 0x00};
    static const int64_t m1[] = {-1};
    static const uint8_t m1_b[] = {0x80, 0x01, 0x04, 0x01, 0x01};
    /* The spec's example 2 as written there, block size 8: not a multiple of 128. */
    static const uint8_t spec8[] = {0x08, 0x01, 0x08, 0x0e, 0x03, 0x02, 0xc0, 0x3f};
    struct dec d = {SEL_DELTA64, 0, 8, 0};

    delta_golden(ex1, 5, ex1_b, sizeof ex1_b, "delta 1..5");
    delta_golden(ex2, 8, ex2_b, sizeof ex2_b, "delta 7 5 3 1 2 3 4 5");
    delta_golden(NULL, 0, ex0_b, sizeof ex0_b, "delta n = 0");
    delta_golden(m1, 1, m1_b, sizeof m1_b, "delta -1");
    expect_err(&d, spec8, sizeof spec8, TROVE_ERR_CORRUPT, 0, "multiple of 128",
               "spec block size 8");
    corpus_write("d64_ex1", SEL_DELTA64, 0, 5, ex1_b, sizeof ex1_b);
    corpus_write("d32_ex2", SEL_DELTA32, 0, 8, ex2_b, sizeof ex2_b);
    corpus_write("d64_spec8", SEL_DELTA64, 0, 8, spec8, sizeof spec8);
}

/* Fill v[0..n): 0 constant, 1 increasing, 2 random over the type, 3 the extremes and their
 * neighbours (deltas wrap), 4 small random steps, 5 alternating min and max. */
static void delta_fill(int64_t *v, size_t n, int is32, int pattern, uint64_t *rng)
{
    const int64_t lo = is32 ? INT32_MIN : INT64_MIN, hi = is32 ? INT32_MAX : INT64_MAX;
    const int64_t edge[6] = {lo, lo + 1, hi, hi - 1, 0, -1};
    for (size_t i = 0; i < n; i++) {
        uint64_t r = test_rand(rng);
        switch (pattern) {
        case 0:
            v[i] = is32 ? -123456 : 0x123456789abll;
            break;
        case 1:
            v[i] = (int64_t)i * 3 - 1000;
            break;
        case 2:
            v[i] = is32 ? (int64_t)(int32_t)(uint32_t)r : (int64_t)r;
            break;
        case 3:
            v[i] = edge[r % 6];
            break;
        case 4:
            v[i] = (i ? v[i - 1] : 0) + (int64_t)(r % 64) - 20;
            break;
        default:
            v[i] = i % 2 ? hi : lo;
            break;
        }
    }
}

static void test_delta_roundtrips(void)
{
    static const size_t ns[] = {0, 1, 2, 31, 32, 33, 127, 128, 129, 130, 1000};
    int64_t *v = malloc(1000 * sizeof *v);
    uint8_t *ref = malloc(65536);
    uint64_t rng = 11;
    char what[128];

    if (!v || !ref)
        abort();
    for (int is32 = 0; is32 <= 1; is32++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int pattern = 0; pattern < 6; pattern++) {
                const size_t n = ns[ni];
                struct trove_bytes b = {0};
                struct dec d = {is32 ? SEL_DELTA32 : SEL_DELTA64, 0, n, 0};
                struct outs o;
                size_t rlen;

                delta_fill(v, n, is32, pattern, &rng);
                snprintf(what, sizeof what, "delta%d n%zu p%d", is32 ? 32 : 64, n, pattern);
                CHECK_EQ_INT(trove__pq_delta_encode(v, n, is32, &b), TROVE_OK);
                if (expect_ok(&d, b.ptr, b.len, b.len, &o, what) == TROVE_OK)
                    CHECK(n == 0 || memcmp(o.i64, v, n * sizeof *v) == 0);
                outs_free(&o);
                /* The reference writer with the same layout gives the same bytes. */
                memset(ref, 0, 65536);
                rlen = ref_delta(v, n, is32, 128, 4, 0, &rng, ref);
                check_bytes(&b, ref, rlen, what);
                /* Trailing bytes are not consumed. */
                CHECK_EQ_INT(trove_bytes_append(&b, "\x01\x02", 2), TROVE_OK);
                if (expect_ok(&d, b.ptr, b.len, b.len - 2, &o, what) == TROVE_OK)
                    CHECK(n == 0 || memcmp(o.i64, v, n * sizeof *v) == 0);
                outs_free(&o);
                if (pattern == 0 && n == 1000) /* 8 blocks of min delta 0, widths 0 */
                    CHECK_EQ_INT(b.len - 2, 3 + 2 + (is32 ? 3 : 6) + 8 * 5);
                if (pattern == 5 && n == 1000) /* deltas wrap to -1 and 1: width 2 */
                    CHECK_EQ_INT(b.len - 2, 5 + (is32 ? 5 : 10) + 8 * (1 + 4 + 4 * 8));
                if (n == 129 && pattern == 3)
                    corpus_write(is32 ? "d32_edges_129" : "d64_edges_129",
                                 is32 ? SEL_DELTA32 : SEL_DELTA64, 0, n, b.ptr, b.len - 2);
                if (n == 33 && pattern == 2)
                    corpus_write(is32 ? "d32_random_33" : "d64_random_33",
                                 is32 ? SEL_DELTA32 : SEL_DELTA64, 0, n, b.ptr, b.len - 2);
                trove_bytes_free(&b);

                /* Other layouts, with junk in the padding and the unused widths. */
                static const unsigned layouts[][2] = {{256, 8}, {128, 1}, {512, 4}, {128, 4}};
                for (size_t l = 0; l < 4; l++) {
                    memset(ref, 0, 65536);
                    rlen = ref_delta(v, n, is32, layouts[l][0], layouts[l][1], 1, &rng, ref);
                    if (expect_ok(&d, ref, rlen, rlen, &o, what) == TROVE_OK)
                        CHECK(n == 0 || memcmp(o.i64, v, n * sizeof *v) == 0);
                    outs_free(&o);
                    if (n == 130 && pattern == 4 && l == 0)
                        corpus_write(is32 ? "d32_256x8_junk" : "d64_256x8_junk",
                                     is32 ? SEL_DELTA32 : SEL_DELTA64, 0, n, ref, rlen);
                }
            }
    free(v);
    free(ref);
}

/* A stream of block 256 and 8 miniblocks of 32, built by hand byte by byte. */
static void test_delta_handbuilt(void)
{
    /* 0..39 then 1000: header 256 (80 02), 8 miniblocks, count 41, first 0. One block: min
     * delta 1 (02); deltas - 1 are 0 x 38 then 960 (1000 - 39 - 1): miniblock 0 (deltas
     * 1..32) width 0, miniblock 1 (deltas 33..40, value 960 at index 7) width 10: 40 bytes,
     * with 960 at bits 70..79 (byte 8 bits 6-7, byte 9); widths of miniblocks 2..7 junk. */
    uint8_t s[64] = {0x80, 0x02, 0x08, 0x29, 0x00, 0x02, 0x00, 0x0a,
                     0xff, 0x41, 0x00, 0x21, 0x40, 0x63};
    size_t len = 14 + 40;
    struct dec d = {SEL_DELTA64, 0, 41, 0};
    struct outs o;

    /* 960 = 0b11_1100_0000 at bit 70: byte 8 gets bits 0,1 of it (0) at bits 6,7; byte 9
     * gets bits 2..9 = 0xf0. */
    s[14 + 9] = 0xf0;
    if (expect_ok(&d, s, len, len, &o, "hand-built 256/8") == TROVE_OK) {
        int good = 1;
        for (int i = 0; i < 40; i++)
            good &= o.i64[i] == i;
        CHECK(good);
        CHECK_EQ_INT(o.i64[40], 1000);
    }
    outs_free(&o);
    d.sel = SEL_DELTA32;
    if (expect_ok(&d, s, len, len, &o, "hand-built 256/8 int32") == TROVE_OK)
        CHECK_EQ_INT(o.i64[40], 1000);
    outs_free(&o);
    corpus_write("d64_handbuilt_256x8", SEL_DELTA64, 0, 41, s, len);
    expect_truncations(&d, s, len, "hand-built 256/8");
}

/* A minimal stream: header (block 128, 4 miniblocks, count n, first 0), one block of min
 * delta 0 and widths w0 w1 w2 w3, then body. */
static size_t delta_stream(uint8_t *s, unsigned count, const uint8_t widths[4], size_t body)
{
    s[0] = 0x80;
    s[1] = 0x01;
    s[2] = 0x04;
    s[3] = (uint8_t)count;
    s[4] = 0x00;
    s[5] = 0x00;
    memcpy(s + 6, widths, 4);
    memset(s + 10, 0, body);
    return 10 + body;
}

static void test_delta_errors(void)
{
    int64_t v[300];
    struct trove_bytes b = {0};
    struct dec d = {SEL_DELTA64, 0, 300, 0};
    uint64_t rng = 5;
    uint8_t s[700];
    size_t len;

    /* Two and a bit blocks, cut at every prefix. */
    delta_fill(v, 300, 0, 2, &rng);
    CHECK_EQ_INT(trove__pq_delta_encode(v, 300, 0, &b), TROVE_OK);
    expect_truncations(&d, b.ptr, b.len, "delta64");
    trove_bytes_free(&b);
    d.sel = SEL_DELTA32;
    delta_fill(v, 300, 1, 3, &rng);
    CHECK_EQ_INT(trove__pq_delta_encode(v, 300, 1, &b), TROVE_OK);
    expect_truncations(&d, b.ptr, b.len, "delta32");
    corpus_write("d32_trunc", SEL_DELTA32, 0, 300, b.ptr, b.len / 2);
    /* Count mismatch, either way. */
    d.n = 299;
    expect_err(&d, b.ptr, b.len, TROVE_ERR_CORRUPT, 3, "counts 300", "count 300 for 299");
    d.n = 301;
    expect_err(&d, b.ptr, b.len, TROVE_ERR_CORRUPT, 3, "301", "count 300 for 301");
    trove_bytes_free(&b);

    /* Widths: 33 for INT32 refused at the width byte, read for INT64; 65 refused for both;
     * the widths of unused miniblocks are not checked. */
    static const uint8_t w33[4] = {33, 0, 0, 0}, w65[4] = {0, 65, 0, 0}, w64[4] = {64, 0, 0, 0};
    static const uint8_t junk[4] = {1, 200, 255, 99};
    len = delta_stream(s, 2, w33, 4 * 33);
    d.n = 2;
    d.sel = SEL_DELTA32;
    expect_err(&d, s, len, TROVE_ERR_CORRUPT, 6, "over 32", "width 33 int32");
    corpus_write("d32_width33", SEL_DELTA32, 0, 2, s, len);
    d.sel = SEL_DELTA64;
    {
        struct outs o;
        s[10] = 0x01;
        s[10 + 4] = 0x00;
        /* deltas: min 0 + relative 1 at width 33: value 1 = 1 */
        if (expect_ok(&d, s, len, len, &o, "width 33 int64") == TROVE_OK)
            CHECK(o.i64[0] == 0 && o.i64[1] == 1);
        outs_free(&o);
    }
    len = delta_stream(s, 40, w65, 4 * 65);
    d.n = 40;
    expect_err(&d, s, len, TROVE_ERR_CORRUPT, 7, "over 64", "width 65 int64");
    corpus_write("d64_width65", SEL_DELTA64, 0, 40, s, len);
    len = delta_stream(s, 3, w64, 4 * 64);
    d.n = 3;
    {
        struct outs o;
        /* relative deltas 2^64 - 1 and 5 at width 64: values 0, -1, 4 */
        memset(s + 10, 0xff, 8);
        s[18] = 5;
        if (expect_ok(&d, s, len, len, &o, "width 64") == TROVE_OK)
            CHECK(o.i64[0] == 0 && o.i64[1] == -1 && o.i64[2] == 4);
        outs_free(&o);
    }
    len = delta_stream(s, 20, junk, 4);
    d.n = 20;
    d.sel = SEL_DELTA32;
    {
        struct outs o;
        if (expect_ok(&d, s, len, len, &o, "junk unused widths") == TROVE_OK)
            CHECK(o.i64[0] == 0 && o.i64[19] == 0);
        outs_free(&o);
    }
    /* ... but an unused miniblock has no bytes, so a short body is still short. */
    expect_err(&d, s, len - 1, TROVE_ERR_TRUNCATED, len - 1, "cut short", "junk widths short");

    /* Block sizes and miniblock counts. */
    d.n = 1;
    expect_err(&d, (const uint8_t *)"\x00\x04\x01\x00", 4, TROVE_ERR_CORRUPT, 0,
               "multiple of 128", "block 0");
    expect_err(&d, (const uint8_t *)"\x64\x04\x01\x00", 4, TROVE_ERR_CORRUPT, 0,
               "multiple of 128", "block 100");
    expect_err(&d, (const uint8_t *)"\x88\x01\x04\x01\x00", 5, TROVE_ERR_CORRUPT, 0,
               "multiple of 128", "block 136");
    expect_err(&d, (const uint8_t *)"\x80\x80\x80\x01\x04\x01\x00", 7, TROVE_ERR_LIMIT, 0,
               "limit", "block 2^21");
    corpus_write("d32_block_2p21", SEL_DELTA32, 0, 1,
                 (const uint8_t *)"\x80\x80\x80\x01\x04\x01\x00", 7);
    expect_err(&d, (const uint8_t *)"\x80\x01\x00\x01\x00", 5, TROVE_ERR_CORRUPT, 2,
               "miniblocks", "0 miniblocks");
    expect_err(&d, (const uint8_t *)"\x80\x01\x03\x01\x00", 5, TROVE_ERR_CORRUPT, 2,
               "miniblocks", "3 miniblocks");
    expect_err(&d, (const uint8_t *)"\x80\x01\x08\x01\x00", 5, TROVE_ERR_CORRUPT, 2,
               "miniblocks", "8 miniblocks of 16");
    expect_err(&d, (const uint8_t *)"\x80\x01\x80\x01\x01\x00", 6, TROVE_ERR_CORRUPT, 2,
               "miniblocks", "128 miniblocks of 1");
    corpus_write("d32_mini3", SEL_DELTA32, 0, 1, (const uint8_t *)"\x80\x01\x03\x01\x00", 5);
    /* Varints: 11 bytes, or a 10th byte over 64 bits; in the header and in a block. */
    expect_err(&d, (const uint8_t *)"\x80\x81\x80\x80\x80\x80\x80\x80\x80\x80\x00", 11,
               TROVE_ERR_CORRUPT, 0, "varint", "block size 11 bytes");
    expect_err(&d, (const uint8_t *)"\x80\x01\x04\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02",
               14, TROVE_ERR_CORRUPT, 4, "varint", "first value over 64 bits");
    corpus_write("d64_long_varint", SEL_DELTA64, 0, 1,
                 (const uint8_t *)"\x80\x81\x80\x80\x80\x80\x80\x80\x80\x80\x00", 11);
    d.n = 2;
    expect_err(&d,
               (const uint8_t *)"\x80\x01\x04\x02\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80"
                                "\x00",
               16, TROVE_ERR_CORRUPT, 5, "min delta", "min delta 11 bytes");
    /* The largest accepted block, 2^20 values in 32768 miniblocks of 32. */
    {
        struct outs o;
        static uint8_t big[16 + 32768];
        memcpy(big, "\x80\x80\x40\x80\x80\x02\x02\x00\x02", 9);
        memset(big + 9, 0, 32768);
        d.n = 2;
        if (expect_ok(&d, big, 9 + 32768, 9 + 32768, &o, "block 2^20") == TROVE_OK)
            CHECK(o.i64[0] == 0 && o.i64[1] == 1);
        outs_free(&o);
    }

    /* The encoder: INT32 values out of range; out keeps its content. */
    CHECK_EQ_INT(trove_bytes_append(&b, "xy", 2), TROVE_OK);
    v[0] = (int64_t)INT32_MAX + 1;
    CHECK_EQ_INT(trove__pq_delta_encode(v, 3, 1, &b), TROVE_ERR_INVALID);
    v[0] = (int64_t)INT32_MIN - 1;
    CHECK_EQ_INT(trove__pq_delta_encode(v, 3, 1, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove__pq_delta_encode(NULL, 3, 0, &b), TROVE_ERR_INVALID);
    CHECK(b.len == 2 && memcmp(b.ptr, "xy", 2) == 0);
    CHECK_EQ_INT(trove__pq_delta_encode(v, 3, 0, &b), TROVE_OK); /* fine as INT64 */
    CHECK(b.len > 2 && memcmp(b.ptr, "xy", 2) == 0);
    trove_bytes_free(&b);
    d.n = 1;
    d.sel = SEL_DELTA64;
    expect_err(&d, NULL, 0, TROVE_ERR_TRUNCATED, 0, "cut short", "delta empty");
    CHECK_EQ_INT(trove__pq_delta_decode(NULL, 0, 1, 0, v, NULL, NULL), TROVE_ERR_TRUNCATED);
    CHECK_EQ_INT(trove__pq_delta_decode((const uint8_t *)"\x80\x01\x04\x01\x00", 5, 1, 0, NULL,
                                        NULL, NULL),
                 TROVE_ERR_INVALID);
}

/* A long column through the block loop, both types. */
static void test_delta_large(void)
{
    const size_t n = 100000;
    int64_t *v = malloc(n * sizeof *v);
    uint64_t rng = 9;

    if (!v)
        abort();
    for (int is32 = 0; is32 <= 1; is32++)
        for (int pattern = 0; pattern < 6; pattern++) {
            struct trove_bytes b = {0};
            struct dec d = {is32 ? SEL_DELTA32 : SEL_DELTA64, 0, n, 0};
            struct outs o;
            delta_fill(v, n, is32, pattern, &rng);
            CHECK_EQ_INT(trove__pq_delta_encode(v, n, is32, &b), TROVE_OK);
            if (expect_ok(&d, b.ptr, b.len, b.len, &o, "delta large") == TROVE_OK)
                CHECK(memcmp(o.i64, v, n * sizeof *v) == 0);
            outs_free(&o);
            trove_bytes_free(&b);
        }
    free(v);
}

/* ---- PLAIN strings ----------------------------------------------------------------------- */

static void test_strings(void)
{
    const size_t big = 100000;
    char *long_s = malloc(big);
    const char *str[5];
    uint32_t len[5] = {0, 1, 5, 100000, 0};
    struct trove_bytes b = {0};
    struct dec d = {SEL_STR, 0, 5, 100000};
    struct outs o;
    static const uint8_t golden[] = {0, 0, 0, 0, 2, 0, 0, 0, 'h', 'i'};

    if (!long_s)
        abort();
    for (size_t i = 0; i < big; i++)
        long_s[i] = (char)('a' + i % 26);
    str[0] = NULL; /* empty values may be NULL */
    str[1] = "x";
    str[2] = "hello";
    str[3] = long_s;
    str[4] = "";
    CHECK_EQ_INT(trove__pq_plain_encode_strings(str, len, 5, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, 5 * 4 + 1 + 5 + 100000);
    if (expect_ok(&d, b.ptr, b.len, b.len, &o, "strings") == TROVE_OK) {
        uint64_t want_start[5] = {4, 8, 13, 22, 100026};
        for (int i = 0; i < 5; i++) {
            CHECK_EQ_INT(o.vlen[i], len[i]);
            CHECK_EQ_INT(o.start[i], want_start[i]);
            CHECK(len[i] == 0 || memcmp(b.ptr + o.start[i], str[i], len[i]) == 0);
        }
    }
    outs_free(&o);
    /* One short of the long value's length: over max_len, at the length's offset. */
    d.max_len = 99999;
    expect_err(&d, b.ptr, b.len, TROVE_ERR_LIMIT, 18, "over the limit", "max_len");
    d.max_len = 100000;
    d.n = 4;
    if (expect_ok(&d, b.ptr, b.len, 100022, &o, "strings prefix") == TROVE_OK)
        CHECK_EQ_INT(o.vlen[3], 100000);
    outs_free(&o);
    trove_bytes_free(&b);

    {
        const char *s2[2] = {"", "hi"};
        uint32_t l2[2] = {0, 2};
        d.n = 2;
        d.max_len = 2;
        CHECK_EQ_INT(trove__pq_plain_encode_strings(s2, l2, 2, &b), TROVE_OK);
        check_bytes(&b, golden, sizeof golden, "strings golden");
        expect_truncations(&d, golden, sizeof golden, "strings");
        corpus_write("str_golden", SEL_STR, 0, 2, golden, sizeof golden);
        d.max_len = 1;
        expect_err(&d, golden, sizeof golden, TROVE_ERR_LIMIT, 4, "limit", "max_len 1");
        /* With no limit, a huge length runs past the end. */
        d.max_len = 0xffffffffu;
        expect_err(&d, (const uint8_t *)"\xff\xff\xff\xff", 4, TROVE_ERR_TRUNCATED, 4,
                   "cut short", "length past the end");
        corpus_write("str_huge_len", SEL_STR, 255, 1, (const uint8_t *)"\xff\xff\xff\xff", 4);
        trove_bytes_free(&b);
    }
    /* n = 0 consumes nothing. */
    d.n = 0;
    if (expect_ok(&d, golden, sizeof golden, 0, &o, "strings n = 0") == TROVE_OK)
        CHECK(1);
    outs_free(&o);
    /* Argument checks. */
    str[1] = NULL;
    CHECK_EQ_INT(trove__pq_plain_encode_strings(str, len, 2, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove__pq_plain_encode_strings(NULL, len, 2, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(b.len, 0);
    trove_bytes_free(&b);
    free(long_s);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_rle_golden);
    RUN(test_rle_roundtrips);
    RUN(test_rle_shortest);
    RUN(test_rle_anchored);
    RUN(test_rle_large);
    RUN(test_rle_blocks);
    RUN(test_rle_errors);
    RUN(test_delta_golden);
    RUN(test_delta_roundtrips);
    RUN(test_delta_handbuilt);
    RUN(test_delta_errors);
    RUN(test_delta_large);
    RUN(test_strings);
    return test_done();
}
