/*
 * test_bitpack.c: the FastLanes kernels (include/trove/bitpack.h) and the block-scheme column
 * (include/trove/testing.h), docs/formats/bitpack.md.
 *
 * Kernels: every width 0..32 at bases 0, 12345 and 0xFFFFFF00 (where value - base wraps),
 * with random values that include 0 and 2^w - 1, against a bit-by-bit reference packer
 * written here from the layout (value i in lane i % 32, row i / 32, packed word k of lane l
 * at out[k * 32 + l]); pack must write exactly w * 32 words, unpack exactly 1024, neither
 * may assume more than 4-byte alignment, and trove_bitpack_get must agree with unpack.
 * Columns: the scheme the encoder picks for every block, the exact bytes it writes (header,
 * descriptors, payload against the reference packer, directory kind and entries), random
 * access against the full decode, short last blocks, n = 0 and 1, the 26,214,400-value
 * identity column that must stay under 250,000 bytes, the 2^30 value limit, golden vectors
 * in tests/vectors/, and every class of bad input with its own error code, each on an
 * exact-size malloc'd copy so that ASan sees any read past the end. trove_bitpack_range
 * against a scalar reference (random, all equal, consecutive with and without a wrap past
 * 2^32 - 1, nearly consecutive, the extremes 0 and UINT32_MAX, every n the vector loops split
 * differently, every 4-byte alignment). Everything but the big columns runs twice: on the
 * AVX2 kernels (where the CPU has them) and on the generic ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/bitpack_internal.h"
#include "common/endian.h"
#include "testutil.h"
#include "trove/bitpack.h"
#include "trove/testing.h"

#define BLOCK TROVE_BITPACK_BLOCK
#define HDR TROVE_COLUMN_HEADER_SIZE
#define GUARD 0xA5A5A5A5u

/* ---- little helpers ------------------------------------------------------------------- */

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t mask_of(unsigned w)
{
    return w >= 32 ? 0xFFFFFFFFu : (1u << w) - 1;
}

/* Bits needed for v, counted the slow way. */
static unsigned ref_width(uint32_t v)
{
    unsigned w = 0;
    while (v) {
        w++;
        v >>= 1;
    }
    return w;
}

/* The layout, bit by bit: value i (minus base) goes to lane i % 32, row i / 32; bit b of
 * row r sits at bit position r * w + b of its lane's w-word chain; word k of lane l is
 * out[k * 32 + l]. */
static void ref_pack(const uint32_t *in, uint32_t *out, unsigned w, uint32_t base)
{
    memset(out, 0, (size_t)w * 32 * sizeof *out);
    for (unsigned i = 0; i < BLOCK; i++) {
        uint32_t v = in[i] - base;
        unsigned lane = i % 32, row = i / 32;
        for (unsigned b = 0; b < w; b++) {
            unsigned pos = row * w + b;
            out[(pos / 32) * 32 + lane] |= ((v >> b) & 1u) << (pos % 32);
        }
    }
}

/* A malloc'd copy of exactly len bytes (ASan then flags any read past it). */
static uint8_t *exact_copy(const uint8_t *p, size_t len)
{
    uint8_t *c = malloc(len ? len : 1);
    if (c && len)
        memcpy(c, p, len);
    return c;
}

/* ---- kernels -------------------------------------------------------------------------- */

static void test_width(void)
{
    CHECK_EQ_INT(trove_bitpack_width(0), 0);
    CHECK_EQ_INT(trove_bitpack_width(1), 1);
    CHECK_EQ_INT(trove_bitpack_width(2), 2);
    CHECK_EQ_INT(trove_bitpack_width(3), 2);
    CHECK_EQ_INT(trove_bitpack_width(1023), 10);
    CHECK_EQ_INT(trove_bitpack_width(1024), 11);
    CHECK_EQ_INT(trove_bitpack_width(0x7FFFFFFFu), 31);
    CHECK_EQ_INT(trove_bitpack_width(0x80000000u), 32);
    CHECK_EQ_INT(trove_bitpack_width(0xFFFFFFFFu), 32);
    for (unsigned k = 0; k < 32; k++) {
        CHECK_EQ_INT(trove_bitpack_width(1u << k), k + 1);
        CHECK_EQ_INT(trove_bitpack_width(mask_of(k)), k);
        CHECK_EQ_INT(trove_bitpack_width((1u << k) | 1u), k + 1);
    }
    {
        uint64_t seed = 7;
        for (int i = 0; i < 10000; i++) {
            uint32_t v = (uint32_t)test_rand(&seed) >> (test_rand(&seed) % 32);
            CHECK_EQ_INT(trove_bitpack_width(v), ref_width(v));
        }
    }
}

/* Values base + r (mod 2^32), r < 2^w, in one of four patterns; always including r = 0 and
 * r = 2^w - 1 somewhere (pattern 0 puts them at seed-chosen places). */
static void fill_block(uint32_t *v, unsigned w, uint32_t base, int pattern, uint64_t *seed)
{
    uint32_t m = mask_of(w);
    for (unsigned i = 0; i < BLOCK; i++) {
        uint32_t r;
        switch (pattern) {
        case 0: r = (uint32_t)test_rand(seed) & m; break;
        case 1: r = i & 1 ? m : 0; break;                 /* alternating extremes */
        case 2: r = m; break;                             /* every bit set */
        default: r = (uint32_t)(i * 2654435761u) & m; break;
        }
        v[i] = base + r;
    }
    if (pattern == 0) {
        v[test_rand(seed) % BLOCK] = base;
        v[test_rand(seed) % BLOCK] = base + m;
    }
}

static void test_kernels(void)
{
    static const uint32_t bases[3] = {0, 12345, 0xFFFFFF00u};
    /* Room for the widest block plus guard words, 64-byte aligned so that the offset runs
     * below test every 4-byte alignment class relative to a 32-byte vector. */
    static _Alignas(64) uint32_t packed[33 * 32 + 64], want[33 * 32], back[BLOCK + 64];
    static _Alignas(64) uint32_t in[BLOCK + 16];
    uint64_t seed = 1;
    const char *k = trove_bitpack_kernel();

    CHECK(k != NULL && (strcmp(k, "avx2") == 0 || strcmp(k, "generic") == 0));
    for (unsigned w = 0; w <= 32; w++) {
        for (int b = 0; b < 3; b++) {
            for (int pattern = 0; pattern < 4; pattern++) {
                uint32_t base = bases[b];
                int ok;
                fill_block(in, w, base, pattern, &seed);
                for (size_t i = 0; i < sizeof packed / sizeof *packed; i++)
                    packed[i] = GUARD;
                trove_bitpack_pack(in, packed, w, base);
                ref_pack(in, want, w, base);
                ok = memcmp(packed, want, (size_t)w * 32 * sizeof *want) == 0;
                if (!ok)
                    fprintf(stderr, "pack w=%u base=%u pattern %d: differs from the reference\n",
                            w, base, pattern);
                CHECK(ok);
                /* pack writes out[0 .. w * 32) and nothing past it */
                ok = 1;
                for (size_t i = (size_t)w * 32; i < sizeof packed / sizeof *packed; i++)
                    ok &= packed[i] == GUARD;
                CHECK(ok);

                for (size_t i = 0; i < sizeof back / sizeof *back; i++)
                    back[i] = GUARD;
                trove_bitpack_unpack(packed, back, w, base);
                ok = memcmp(back, in, BLOCK * sizeof *in) == 0;
                if (!ok)
                    fprintf(stderr, "unpack w=%u base=%u pattern %d: wrong values\n", w, base,
                            pattern);
                CHECK(ok);
                ok = 1;
                for (size_t i = BLOCK; i < sizeof back / sizeof *back; i++)
                    ok &= back[i] == GUARD;
                CHECK(ok);
                /* random access agrees with unpack at every index */
                ok = 1;
                for (unsigned i = 0; i < BLOCK; i++)
                    ok &= trove_bitpack_get(packed, w, base, i) == in[i];
                if (!ok)
                    fprintf(stderr, "get w=%u base=%u pattern %d: disagrees with unpack\n", w,
                            base, pattern);
                CHECK(ok);
            }
        }
    }
    /* w = 0 unpacks to base 1024 times, whatever the (unread) input holds. */
    for (size_t i = 0; i < BLOCK; i++)
        back[i] = 0;
    trove_bitpack_unpack(packed, back, 0, 77);
    {
        int ok = 1;
        for (size_t i = 0; i < BLOCK; i++)
            ok &= back[i] == 77;
        CHECK(ok);
    }
    /* Only 4-byte alignment is promised: pack and unpack at every word offset within a
     * 32-byte line, at a few widths. */
    for (unsigned off = 0; off < 8; off++) {
        static const unsigned ws[5] = {1, 7, 16, 25, 32};
        for (int j = 0; j < 5; j++) {
            unsigned w = ws[j];
            uint32_t *src = in + off, *dst = packed + off, *out = back + (7 - off);
            fill_block(src, w, 99, 0, &seed);
            trove_bitpack_pack(src, dst, w, 99);
            ref_pack(src, want, w, 99);
            CHECK(memcmp(dst, want, (size_t)w * 32 * sizeof *want) == 0);
            trove_bitpack_unpack(dst, out, w, 99);
            CHECK(memcmp(out, src, BLOCK * sizeof *src) == 0);
        }
    }
}

/* trove_bitpack_unpack_blocks: consecutive blocks into one output, small (block by block)
 * and at 8 MiB and more (the AVX2 build's non-temporal path when out is 32-byte aligned),
 * into an aligned and a misaligned out; it writes out[0 .. nblocks * 1024) and no more. */
static void test_unpack_blocks(void)
{
    static const size_t counts[5] = {0, 1, 3, 2048, 2049};
    static const unsigned ws[4] = {0, 10, 17, 32};
    const size_t maxb = 2049;
    uint32_t *vals = malloc(maxb * BLOCK * sizeof *vals);
    uint32_t *packed = malloc(maxb * 32 * 32 * sizeof *packed);
    uint32_t *outbuf = aligned_alloc(64, (maxb * BLOCK + 64) * sizeof *outbuf);
    uint64_t seed = 5;

    CHECK(vals && packed && outbuf);
    if (!vals || !packed || !outbuf)
        goto out;
    for (int j = 0; j < 4; j++) {
        unsigned w = ws[j];
        uint32_t base = 0xFFFFF000u + (uint32_t)j;
        for (size_t b = 0; b < maxb; b++) {
            fill_block(vals + b * BLOCK, w, base, (int)(b % 4), &seed);
            trove_bitpack_pack(vals + b * BLOCK, packed + b * w * 32, w, base);
        }
        for (int c = 0; c < 5; c++) {
            for (size_t misalign = 0; misalign < 2; misalign++) {
                size_t nb = counts[c], total = nb * BLOCK;
                uint32_t *o = outbuf + (misalign ? 1 : 8); /* 32-byte aligned, or not */
                int ok;
                for (size_t i = 0; i < total + 16; i++)
                    o[i] = GUARD;
                trove_bitpack_unpack_blocks(packed, o, nb, w, base);
                ok = total == 0 || memcmp(o, vals, total * sizeof *o) == 0;
                if (!ok)
                    fprintf(stderr, "unpack_blocks w=%u nblocks=%zu misaligned=%zu: wrong values\n",
                            w, nb, misalign);
                CHECK(ok);
                ok = 1;
                for (size_t i = total; i < total + 16; i++)
                    ok &= o[i] == GUARD;
                CHECK(ok);
            }
        }
    }
out:
    free(vals);
    free(packed);
    free(outbuf);
}

/* ---- trove_bitpack_range --------------------------------------------------------------- */

/* The reference: unsigned min and max one by one, and consecutive in 64-bit arithmetic
 * (in[i] == in[0] + i as integers, so a run that would pass 2^32 - 1 is not). */
static void ref_range(const uint32_t *in, uint32_t n, uint32_t *lo, uint32_t *hi, int *cons)
{
    *lo = *hi = in[0];
    *cons = 1;
    for (uint32_t i = 0; i < n; i++) {
        *lo = in[i] < *lo ? in[i] : *lo;
        *hi = in[i] > *hi ? in[i] : *hi;
        if ((uint64_t)in[i] != (uint64_t)in[0] + i)
            *cons = 0;
    }
}

/* trove_bitpack_range(in, n) against the reference; the outputs are poisoned first. */
static void check_range(const uint32_t *in, uint32_t n, const char *what)
{
    uint32_t lo = 0xDEAD, hi = 0xBEEF, rlo, rhi;
    int cons = -7, rcons;

    ref_range(in, n, &rlo, &rhi, &rcons);
    trove_bitpack_range(in, n, &lo, &hi, &cons);
    if (lo != rlo || hi != rhi || cons != rcons)
        fprintf(stderr, "range %s n=%u (%s): got lo %u hi %u consecutive %d, want %u %u %d\n",
                what, n, trove_bitpack_kernel(), lo, hi, cons, rlo, rhi, rcons);
    CHECK_EQ_INT(lo, rlo);
    CHECK_EQ_INT(hi, rhi);
    CHECK_EQ_INT(cons, rcons);
}

/*
 * Every n the vector loops split differently (1..40, around 1024's multiples of 8 and 16,
 * 1024), at every word offset within 32 bytes (in needs only 4-byte alignment), over: random
 * values (full range and narrow), all equal (0, UINT32_MAX, other), consecutive (from 0, up
 * to exactly UINT32_MAX, and wrapping past it), consecutive but for one value (at the start,
 * in the vector part, in the tail; off by one either way, or two values swapped so that min,
 * max and span still look consecutive), the extremes 0 and UINT32_MAX alone and mixed, and a
 * run descending instead of ascending.
 */
static void test_range(void)
{
    static _Alignas(64) uint32_t buf[BLOCK + 16];
    static const uint32_t ns[] = {1,   2,   3,   7,   8,   9,    15,   16,  17,  23, 24, 25,
                                  31,  32,  33,  40,  63,  64,   65,   127, 128, 129, 255, 256,
                                  257, 511, 512, 513, 1000, 1015, 1016, 1017, 1022, 1023, 1024};
    static const uint32_t starts[] = {0,           1,           77,         0x7FFFFFFFu,
                                      0xFFFFFC00u, 0xFFFFFFF0u, 0xFFFFFFFFu};
    uint64_t seed = 11;
    char what[96];

    for (unsigned off = 0; off < 8; off++) {
        uint32_t *in = buf + off;
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
            uint32_t n = ns[k];
            for (uint32_t i = 0; i < n; i++)
                in[i] = (uint32_t)test_rand(&seed);
            check_range(in, n, "random");
            for (uint32_t i = 0; i < n; i++)
                in[i] = 5000 + (uint32_t)(test_rand(&seed) % 3000);
            check_range(in, n, "narrow random");
            for (uint32_t i = 0; i < n; i++)
                in[i] = i % 2 ? UINT32_MAX : 0;
            check_range(in, n, "0 and UINT32_MAX alternating");
            for (int e = 0; e < 3; e++) {
                uint32_t v = e == 0 ? 0 : e == 1 ? UINT32_MAX : 0x12345678u;
                for (uint32_t i = 0; i < n; i++)
                    in[i] = v;
                check_range(in, n, "all equal");
                if (n > 1) {
                    in[n - 1] = v ^ 1;
                    check_range(in, n, "all equal but the last");
                    in[n - 1] = v;
                    in[n / 2] = e == 0 ? UINT32_MAX : 0;
                    check_range(in, n, "all equal but one extreme");
                }
            }
            for (size_t b = 0; b < sizeof starts / sizeof *starts; b++) {
                uint32_t v0 = starts[b];
                for (uint32_t i = 0; i < n; i++)
                    in[i] = v0 + i; /* wraps past 2^32 - 1 for the high starts */
                snprintf(what, sizeof what, "consecutive from %u", v0);
                check_range(in, n, what);
                if (n < 2)
                    continue;
                /* One value off by one (either way) at the start, the middle, the end. */
                for (int pos = 0; pos < 3; pos++) {
                    uint32_t at = pos == 0 ? 0 : pos == 1 ? n / 2 : n - 1;
                    for (int d = -1; d <= 1; d += 2) {
                        in[at] += (uint32_t)d;
                        snprintf(what, sizeof what, "consecutive from %u, slot %u off by %d", v0,
                                 at, d);
                        check_range(in, n, what);
                        in[at] -= (uint32_t)d;
                    }
                }
                /* Two swapped: same min, max and span; not consecutive. */
                {
                    uint32_t a = n > 2 ? 1 + (uint32_t)(test_rand(&seed) % (n - 2)) : 0,
                             c = n - 1, t = in[a];
                    in[a] = in[c];
                    in[c] = t;
                    snprintf(what, sizeof what, "consecutive from %u, %u and %u swapped", v0, a,
                             c);
                    check_range(in, n, what);
                }
                /* Descending. */
                for (uint32_t i = 0; i < n; i++)
                    in[i] = v0 - i;
                snprintf(what, sizeof what, "descending from %u", v0);
                check_range(in, n, what);
            }
        }
    }
    /* The wrap boundary exactly: n values ending at UINT32_MAX are consecutive, one more
     * start is not (the run would pass 2^32 - 1). */
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        uint32_t n = ns[k], lo, hi;
        int cons;
        for (uint32_t i = 0; i < n; i++)
            buf[i] = UINT32_MAX - (n - 1) + i;
        trove_bitpack_range(buf, n, &lo, &hi, &cons);
        CHECK_EQ_INT(cons, 1);
        CHECK_EQ_INT(lo, UINT32_MAX - (n - 1));
        CHECK_EQ_INT(hi, UINT32_MAX);
        check_range(buf, n, "consecutive up to UINT32_MAX");
        if (n > 1) {
            for (uint32_t i = 0; i < n; i++)
                buf[i] = UINT32_MAX - (n - 2) + i;
            trove_bitpack_range(buf, n, &lo, &hi, &cons);
            CHECK_EQ_INT(cons, 0);
            CHECK_EQ_INT(lo, 0);
            CHECK_EQ_INT(hi, UINT32_MAX);
            check_range(buf, n, "consecutive one past UINT32_MAX");
        }
    }
    /* Random blocks of random length, a few thousand, and a block the encoder would pack. */
    for (int r = 0; r < 3000; r++) {
        uint32_t n = 1 + (uint32_t)(test_rand(&seed) % BLOCK), base = (uint32_t)test_rand(&seed);
        unsigned w = (unsigned)(test_rand(&seed) % 33), off = (unsigned)(test_rand(&seed) % 8);
        for (uint32_t i = 0; i < n; i++)
            buf[off + i] = base + ((uint32_t)test_rand(&seed) & mask_of(w));
        check_range(buf + off, n, "random width");
    }
}

/* ---- columns: building, checking ------------------------------------------------------ */

/* The scheme the format says the encoder picks for v[0..m). */
static void expect_scheme(const uint32_t *v, size_t m, struct trove_block_info *e)
{
    uint32_t mn = v[0], mx = v[0];
    int eq = 1, id = 1;
    for (size_t j = 0; j < m; j++) {
        eq &= v[j] == v[0];
        id &= (uint64_t)v[0] + j == v[j];
        mn = v[j] < mn ? v[j] : mn;
        mx = v[j] > mx ? v[j] : mx;
    }
    memset(e, 0, sizeof *e);
    e->byte_len = TROVE_COLUMN_DESC_SIZE;
    if (eq) {
        e->scheme = TROVE_SCHEME_CONSTANT;
        e->base = v[0];
    } else if (id) {
        e->scheme = TROVE_SCHEME_IDENTITY;
        e->base = v[0];
    } else {
        e->scheme = TROVE_SCHEME_BITPACK;
        e->base = mn;
        e->width = (uint8_t)ref_width(mx - mn);
        e->byte_len = (uint16_t)(TROVE_COLUMN_DESC_SIZE + e->width * 128);
    }
}

/* An encoded column in an exact-size malloc'd buffer, opened. */
struct col {
    uint8_t *buf;
    size_t len;
    struct trove_column c;
};

static int make_col(const uint32_t *v, uint64_t n, struct col *out, const char *what)
{
    struct trove_bytes b = {0};
    struct trove_diag diag = {0};
    int rc = trove_column_encode(v, n, &b);
    memset(out, 0, sizeof *out);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK) {
        fprintf(stderr, "%s: encode failed: %d\n", what, rc);
        trove_bytes_free(&b);
        return -1;
    }
    out->len = b.len;
    out->buf = exact_copy(b.ptr, b.len);
    trove_bytes_free(&b);
    rc = trove_column_open(out->buf, out->len, &out->c, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: open of a fresh encoding failed: %d at %llu: %s\n", what, rc,
                (unsigned long long)diag.offset, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    return rc == TROVE_OK ? 0 : -1;
}

static void free_col(struct col *c)
{
    free(c->buf);
    memset(c, 0, sizeof *c);
}

/*
 * Everything about an encoded column of v[0..n): the header bytes, each block's scheme and
 * descriptor against expect_scheme, the packed payload against the reference packer (with
 * padding slots at base), the layout (blocks back to back from 24, the directory right
 * after, its kind and entries), full decode, per-block decode, and random access (every
 * index up to 300,000 values, else a sample), and refusal of out-of-range arguments.
 */
static void check_column(const struct col *cl, const uint32_t *v, uint64_t n, const char *what)
{
    static uint32_t blk[BLOCK], want_payload[32 * 32];
    const struct trove_column *c = &cl->c;
    const uint8_t *p = cl->buf;
    uint64_t nblocks = (n + BLOCK - 1) / BLOCK;
    uint32_t *out;
    uint32_t expect_off = HDR, first_len = 0;
    int same = 1, fails = test_failed;
    struct trove_block_info info;
    size_t got_n;

    CHECK_EQ_INT(c->n, n);
    CHECK_EQ_INT(c->blocks, nblocks);
    CHECK(c->buf == cl->buf);
    CHECK_EQ_INT(c->len, cl->len);
    /* header */
    CHECK(cl->len >= HDR);
    if (cl->len < HDR)
        return;
    CHECK(memcmp(p, "TBPC", 4) == 0);
    CHECK_EQ_INT(p[4], 1);
    CHECK_EQ_INT(p[5], c->dir_kind);
    CHECK_EQ_INT(get16(p + 6), 0);
    CHECK_EQ_INT(trove__get_le64(p + 8), n);
    CHECK_EQ_INT(trove__get_le32(p + 16), nblocks);
    CHECK_EQ_INT(trove__get_le32(p + 20), c->dir_offset);

    for (uint32_t b = 0; b < nblocks; b++) {
        size_t m = b + 1 < nblocks ? BLOCK : (size_t)(n - (uint64_t)b * BLOCK);
        struct trove_block_info e;
        const uint32_t *bv = v + (size_t)b * BLOCK;
        int rc = trove_column_block_info(c, b, &info);
        CHECK_EQ_INT(rc, TROVE_OK);
        if (rc != TROVE_OK)
            break;
        expect_scheme(bv, m, &e);
        CHECK_EQ_INT(info.scheme, e.scheme);
        CHECK_EQ_INT(info.width, e.width);
        CHECK_EQ_INT(info.byte_len, e.byte_len);
        CHECK_EQ_INT(info.base, e.base);
        CHECK_EQ_INT(info.offset, expect_off);
        if (info.offset != expect_off || info.offset + (size_t)info.byte_len > cl->len) {
            fprintf(stderr, "%s: block %u at %u, want %u\n", what, b, info.offset, expect_off);
            break;
        }
        /* the descriptor bytes */
        CHECK_EQ_INT(p[info.offset], info.scheme);
        CHECK_EQ_INT(p[info.offset + 1], info.width);
        CHECK_EQ_INT(get16(p + info.offset + 2), info.byte_len);
        CHECK_EQ_INT(trove__get_le32(p + info.offset + 4), info.base);
        if (info.scheme == TROVE_SCHEME_BITPACK && info.width == e.width) {
            /* payload: the reference packing of the block, padded with base */
            for (size_t j = 0; j < BLOCK; j++)
                blk[j] = j < m ? bv[j] : e.base;
            ref_pack(blk, want_payload, e.width, e.base);
            CHECK(memcmp(p + info.offset + TROVE_COLUMN_DESC_SIZE, want_payload,
                         (size_t)e.width * 128) == 0);
        }
        if (b == 0)
            first_len = info.byte_len;
        same &= info.byte_len == first_len;
        expect_off += info.byte_len;

        /* per-block decode */
        for (size_t j = 0; j < BLOCK; j++)
            blk[j] = GUARD;
        got_n = 0;
        CHECK_EQ_INT(trove_column_block(c, b, blk, &got_n), TROVE_OK);
        CHECK_EQ_INT(got_n, m);
        CHECK(memcmp(blk, bv, m * sizeof *bv) == 0);
    }
    /* layout: directory right after the last block, its kind, its entries, then the end */
    CHECK_EQ_INT(c->dir_offset, expect_off);
    if (nblocks > 0)
        CHECK_EQ_INT(c->dir_kind, same ? 1 : 0);
    if (c->dir_kind == 1) {
        CHECK_EQ_INT(cl->len, (size_t)c->dir_offset + 8);
        if (cl->len == (size_t)c->dir_offset + 8) {
            if (nblocks > 0) {
                CHECK_EQ_INT(trove__get_le32(p + c->dir_offset), HDR);
                CHECK_EQ_INT(trove__get_le32(p + c->dir_offset + 4), first_len);
            }
        }
    } else {
        CHECK_EQ_INT(c->dir_kind, 0);
        CHECK_EQ_INT(cl->len, (size_t)c->dir_offset + 4 * nblocks);
        if (cl->len == (size_t)c->dir_offset + 4 * nblocks) {
            uint32_t off = HDR;
            for (uint32_t b = 0; b < nblocks; b++) {
                CHECK_EQ_INT(trove__get_le32(p + c->dir_offset + 4 * b), off);
                if (trove_column_block_info(c, b, &info) != TROVE_OK)
                    break;
                off += info.byte_len;
            }
        }
    }

    /* full decode writes out[0 .. n) and nothing past it */
    out = malloc((size_t)(n + 16) * sizeof *out);
    if (out) {
        int ok = 1;
        for (uint64_t i = 0; i < n + 16; i++)
            out[i] = GUARD;
        CHECK_EQ_INT(trove_column_decode(c, out), TROVE_OK);
        CHECK(n == 0 || memcmp(out, v, (size_t)n * sizeof *v) == 0);
        for (uint64_t i = n; i < n + 16; i++)
            ok &= out[i] == GUARD;
        CHECK(ok);
        free(out);
    }
    /* random access */
    {
        uint64_t seed = n ^ 0x5eed;
        int ok = 1;
        uint32_t x = 0;
        if (n <= 300000) {
            for (uint64_t i = 0; i < n; i++)
                ok &= trove_column_get(c, i, &x) == TROVE_OK && x == v[i];
        } else {
            for (int k = 0; k < 200000; k++) {
                uint64_t i = test_rand(&seed) % n;
                ok &= trove_column_get(c, i, &x) == TROVE_OK && x == v[i];
            }
            for (uint64_t i = n - 2000; i < n; i++)
                ok &= trove_column_get(c, i, &x) == TROVE_OK && x == v[i];
        }
        CHECK(ok);
    }
    /* out of range */
    {
        uint32_t x = 12345;
        CHECK_EQ_INT(trove_column_get(c, n, &x), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_column_get(c, UINT64_MAX, &x), TROVE_ERR_INVALID);
        CHECK_EQ_INT(x, 12345);
        CHECK_EQ_INT(trove_column_block(c, (uint32_t)nblocks, blk, &got_n), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_column_block(c, UINT32_MAX, blk, &got_n), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_column_block_info(c, (uint32_t)nblocks, &info), TROVE_ERR_INVALID);
    }
    if (test_failed != fails)
        fprintf(stderr, "  (in column \"%s\", n = %llu)\n", what, (unsigned long long)n);
}

static void roundtrip(const uint32_t *v, uint64_t n, const char *what)
{
    struct col c;
    if (make_col(v, n, &c, what) == 0)
        check_column(&c, v, n, what);
    free_col(&c);
}

/* The scheme of block b of an encoded column of v[0..n). */
static int scheme_of(const uint32_t *v, uint64_t n, uint32_t b, struct trove_block_info *info)
{
    struct col c;
    int rc = -1;
    if (make_col(v, n, &c, "scheme_of") == 0)
        rc = trove_column_block_info(&c.c, b, info);
    free_col(&c);
    return rc;
}

static void test_columns(void)
{
    static uint32_t v[1024 * 48];
    static const unsigned rs[] = {1, 2, 31, 32, 33, 451, 1000, 1023};
    uint64_t seed = 99;
    struct trove_block_info info;
    char what[128];

    /* n = 0 and n = 1 */
    {
        struct col c;
        uint32_t dummy = 5;
        if (make_col(&dummy, 0, &c, "empty") == 0) {
            check_column(&c, &dummy, 0, "empty");
            CHECK_EQ_INT(c.c.n, 0);
            CHECK_EQ_INT(c.c.blocks, 0);
            CHECK_EQ_INT(trove_column_decode(&c.c, &dummy), TROVE_OK);
            CHECK_EQ_INT(dummy, 5);
            CHECK(c.len == HDR || c.len == HDR + 8);
        }
        free_col(&c);
        if (make_col(NULL, 0, &c, "empty, values NULL") == 0)
            CHECK_EQ_INT(c.c.n, 0);
        free_col(&c);
        v[0] = 77;
        roundtrip(v, 1, "one value");
        CHECK(scheme_of(v, 1, 0, &info) == 0 && info.scheme == TROVE_SCHEME_CONSTANT &&
              info.base == 77);
    }
    /* identity: 0..n-1 for whole and short last blocks; every block IDENTITY (a 1-value
     * last block is CONSTANT: it is all equal) */
    for (unsigned k = 0; k < 4; k++) {
        for (size_t j = 0; j < sizeof rs / sizeof *rs + 1; j++) {
            uint64_t n = (uint64_t)BLOCK * k + (j < sizeof rs / sizeof *rs ? rs[j] : 0);
            if (n == 0)
                continue;
            for (uint64_t i = 0; i < n; i++)
                v[i] = (uint32_t)i;
            snprintf(what, sizeof what, "identity 0..%llu", (unsigned long long)n - 1);
            roundtrip(v, n, what);
            CHECK(scheme_of(v, n, 0, &info) == 0);
            CHECK_EQ_INT(info.scheme, n == 1 ? TROVE_SCHEME_CONSTANT : TROVE_SCHEME_IDENTITY);
        }
    }
    /* identity ending exactly at 2^32 - 1, and a run that wraps past it (not IDENTITY: the
     * block holding the wrap is BITPACK at width 32, base 0) */
    for (uint64_t i = 0; i < 3000; i++)
        v[i] = (uint32_t)(0xFFFFFFFFu - 2999 + i);
    roundtrip(v, 3000, "identity up to 2^32 - 1");
    CHECK(scheme_of(v, 3000, 2, &info) == 0 && info.scheme == TROVE_SCHEME_IDENTITY &&
          info.base == 0xFFFFFFFFu - 951);
    for (uint64_t i = 0; i < 3000; i++)
        v[i] = (uint32_t)(0xFFFFFFFFu - 1500 + i);
    roundtrip(v, 3000, "consecutive, wrapping past 2^32 - 1");
    CHECK(scheme_of(v, 3000, 1, &info) == 0 && info.scheme == TROVE_SCHEME_BITPACK &&
          info.width == 32 && info.base == 0);
    /* constant */
    for (uint64_t i = 0; i < 5000; i++)
        v[i] = 0xDEADBEEFu;
    roundtrip(v, 5000, "constant");
    for (uint32_t b = 0; b < 5; b++)
        CHECK(scheme_of(v, 5000, b, &info) == 0 && info.scheme == TROVE_SCHEME_CONSTANT &&
              info.base == 0xDEADBEEFu && info.width == 0 && info.byte_len == 8);
    /* descending by one: not IDENTITY */
    for (uint64_t i = 0; i < 1024; i++)
        v[i] = (uint32_t)(5000 - i);
    roundtrip(v, 1024, "descending");
    CHECK(scheme_of(v, 1024, 0, &info) == 0 && info.scheme == TROVE_SCHEME_BITPACK &&
          info.base == 5000 - 1023 && info.width == 10);
    /* a 2-value last block that is consecutive: IDENTITY */
    for (uint64_t i = 0; i < 1024; i++)
        v[i] = (uint32_t)test_rand(&seed);
    v[1024] = 5, v[1025] = 6;
    roundtrip(v, 1026, "short consecutive last block");
    CHECK(scheme_of(v, 1026, 1, &info) == 0 && info.scheme == TROVE_SCHEME_IDENTITY &&
          info.base == 5);
    /* BITPACK at every width: a block whose min is base and whose max - min needs exactly w
     * bits, with base as high as it goes (base + 2^w - 1 stays below 2^32) */
    for (unsigned w = 1; w <= 32; w++) {
        uint32_t m = mask_of(w), base = w == 32 ? 0 : 0xFFFFFFFFu - m - (uint32_t)(w * 3);
        for (size_t i = 0; i < BLOCK; i++)
            v[i] = base + ((uint32_t)test_rand(&seed) & m);
        v[17] = base, v[900] = base + m;
        snprintf(what, sizeof what, "bitpack width %u", w);
        roundtrip(v, BLOCK, what);
        CHECK(scheme_of(v, BLOCK, 0, &info) == 0 && info.scheme == TROVE_SCHEME_BITPACK &&
              info.width == w && info.base == base && info.byte_len == 8 + w * 128);
    }
    /* mixed: 48 blocks of every kind, widths 0..32, bases anywhere, a short last block of
     * each length in rs; blocks of one kind in a row, blocks of the same size (arithmetic
     * directory possible only when all are) */
    for (size_t j = 0; j < sizeof rs / sizeof *rs; j++) {
        uint64_t n = (uint64_t)BLOCK * 47 + rs[j];
        for (uint32_t b = 0; b < 48; b++) {
            uint32_t *bv = v + (size_t)b * BLOCK;
            uint32_t base = (uint32_t)test_rand(&seed);
            unsigned w = (b * 7 + (unsigned)j) % 33;
            switch ((b + j) % 4) {
            case 0:
                base = base > 0xFFFFF000u ? 0xFFFFF000u : base;
                for (size_t i = 0; i < BLOCK; i++)
                    bv[i] = base + (uint32_t)i;
                break;
            case 1:
                for (size_t i = 0; i < BLOCK; i++)
                    bv[i] = base;
                break;
            default:
                for (size_t i = 0; i < BLOCK; i++)
                    bv[i] = base + ((uint32_t)test_rand(&seed) & mask_of(w));
                break;
            }
        }
        snprintf(what, sizeof what, "mixed, last block %u", rs[j]);
        roundtrip(v, n, what);
    }
    /* random 32-bit values: every block BITPACK at width 32 (almost surely), one size, so
     * the arithmetic directory */
    for (size_t i = 0; i < 3 * BLOCK; i++)
        v[i] = (uint32_t)test_rand(&seed);
    v[5] = 0, v[6] = 0xFFFFFFFFu, v[BLOCK + 5] = 0, v[BLOCK + 6] = 0xFFFFFFFFu;
    v[2 * BLOCK + 5] = 0, v[2 * BLOCK + 6] = 0xFFFFFFFFu;
    roundtrip(v, 3 * BLOCK - 100, "random 32-bit values");
    {
        struct col c;
        if (make_col(v, 3 * BLOCK - 100, &c, "random 32-bit values") == 0)
            CHECK_EQ_INT(c.c.dir_kind, 1);
        free_col(&c);
    }

    /* encode appends to what out already holds; on error out->len is unchanged */
    {
        struct trove_bytes b = {0}, fresh = {0};
        for (size_t i = 0; i < 2500; i++)
            v[i] = (uint32_t)(i * i);
        CHECK_EQ_INT(trove_bytes_append(&b, "abcd", 4), TROVE_OK);
        CHECK_EQ_INT(trove_column_encode(v, 2500, &b), TROVE_OK);
        CHECK_EQ_INT(trove_column_encode(v, 2500, &fresh), TROVE_OK);
        CHECK_EQ_INT(b.len, 4 + fresh.len);
        CHECK(b.len == 4 + fresh.len && memcmp(b.ptr, "abcd", 4) == 0 &&
              memcmp(b.ptr + 4, fresh.ptr, fresh.len) == 0);
        /* deterministic */
        b.len = 0;
        CHECK_EQ_INT(trove_column_encode(v, 2500, &b), TROVE_OK);
        CHECK(b.len == fresh.len && memcmp(b.ptr, fresh.ptr, b.len) == 0);
        b.len = 4;
        CHECK_EQ_INT(trove_column_encode(v, TROVE_COLUMN_MAX_VALUES + 1, &b), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_column_encode(v, UINT64_MAX, &b), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_column_encode(NULL, 5, &b), TROVE_ERR_INVALID);
        CHECK_EQ_INT(b.len, 4);
        trove_bytes_free(&b);
        trove_bytes_free(&fresh);
    }
}

/* ---- hand-built columns --------------------------------------------------------------- */

struct hblock {
    uint8_t scheme, width;
    uint32_t base;
    const uint32_t *payload; /* BITPACK: width * 32 words */
};

/*
 * A column of blocks laid out back to back from 24, with an explicit (dir_kind 0) or
 * arithmetic (1: first 24, stride the first block's size) directory; byte_len is what the
 * format says for the scheme. Returns an exact-size malloc'd buffer.
 */
static uint8_t *build(const struct hblock *bl, uint32_t nb, uint64_t n, int dir_kind,
                      size_t *len_out)
{
    size_t len = HDR, off = HDR;
    uint8_t *p;
    for (uint32_t b = 0; b < nb; b++)
        len += 8 + (bl[b].scheme == TROVE_SCHEME_BITPACK ? (size_t)bl[b].width * 128 : 0);
    len += dir_kind ? 8 : 4 * (size_t)nb;
    p = calloc(1, len);
    if (!p)
        return NULL;
    memcpy(p, "TBPC", 4);
    p[4] = 1;
    p[5] = (uint8_t)dir_kind;
    trove__put_le64(p + 8, n);
    trove__put_le32(p + 16, nb);
    for (uint32_t b = 0; b < nb; b++) {
        size_t pl = bl[b].scheme == TROVE_SCHEME_BITPACK ? (size_t)bl[b].width * 128 : 0;
        p[off] = bl[b].scheme;
        p[off + 1] = bl[b].width;
        trove__put_le16(p + off + 2, (uint16_t)(8 + pl));
        trove__put_le32(p + off + 4, bl[b].base);
        if (pl && bl[b].payload)
            memcpy(p + off + 8, bl[b].payload, pl);
        if (!dir_kind)
            trove__put_le32(p + len - 4 * (size_t)nb + 4 * b, (uint32_t)off);
        off += 8 + pl;
    }
    trove__put_le32(p + 20, (uint32_t)off);
    if (dir_kind) {
        trove__put_le32(p + off, HDR);
        trove__put_le32(p + off + 4, nb ? (uint32_t)(8 + (bl[0].scheme == TROVE_SCHEME_BITPACK ?
                                                     (size_t)bl[0].width * 128 : 0))
                              : 0);
    }
    *len_out = len;
    return p;
}

static int open_ok(const uint8_t *buf, size_t len, struct trove_column *c, const char *what)
{
    struct trove_diag diag = {0};
    int rc = trove_column_open(buf, len, c, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: open failed: %d at %llu: %s\n", what, rc,
                (unsigned long long)diag.offset, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    return rc;
}

/* Valid columns the encoder never writes, which a reader must still take. */
static void test_handmade(void)
{
    static uint32_t payload[32 * 32], vals[BLOCK], out[3 * BLOCK];
    uint64_t seed = 3;
    struct trove_column c;
    uint32_t x;
    size_t len = 0, m = 0;
    uint8_t *p;

    /* Explicit directory over equal-size blocks. */
    {
        struct hblock bl[3] = {{TROVE_SCHEME_IDENTITY, 0, 0, NULL},
                               {TROVE_SCHEME_IDENTITY, 0, 1024, NULL},
                               {TROVE_SCHEME_IDENTITY, 0, 2048, NULL}};
        p = build(bl, 3, 3000, 0, &len);
        if (open_ok(p, len, &c, "explicit over equal blocks") == 0) {
            int ok = 1;
            CHECK_EQ_INT(c.dir_kind, 0);
            CHECK_EQ_INT(trove_column_decode(&c, out), TROVE_OK);
            for (uint32_t i = 0; i < 3000; i++)
                ok &= out[i] == i;
            CHECK(ok);
        }
        free(p);
    }
    /* BITPACK at width 0 (every value is base) and at width 32 with a base: values wrap. */
    {
        struct hblock bl[2] = {{TROVE_SCHEME_BITPACK, 0, 4242, NULL},
                               {TROVE_SCHEME_BITPACK, 32, 0x80000000u, payload}};
        for (size_t i = 0; i < 32 * 32; i++)
            payload[i] = (uint32_t)test_rand(&seed);
        p = build(bl, 2, 2048, 0, &len);
        if (open_ok(p, len, &c, "width 0 and width 32 + base") == 0) {
            int ok = 1;
            CHECK_EQ_INT(trove_column_decode(&c, out), TROVE_OK);
            for (size_t i = 0; i < BLOCK; i++) {
                ok &= out[i] == 4242;
                /* width 32: the payload is the lanes' words verbatim; value i = lane i % 32,
                 * row i / 32 = word (i / 32) * 32 + i % 32 = i */
                ok &= out[BLOCK + i] == payload[i] + 0x80000000u;
            }
            CHECK(ok);
            CHECK(trove_column_get(&c, 1500, &x) == TROVE_OK && x == payload[1500 - BLOCK] + 0x80000000u);
        }
        free(p);
    }
    /* IDENTITY right up to 2^32 - 1, full and short: valid; one more is an overflow. */
    {
        struct hblock full = {TROVE_SCHEME_IDENTITY, 0, 0xFFFFFC00u, NULL};
        struct hblock shrt = {TROVE_SCHEME_IDENTITY, 0, 0xFFFFFFFFu - 451, NULL};
        struct trove_diag diag;
        p = build(&full, 1, 1024, 1, &len);
        if (open_ok(p, len, &c, "identity to 2^32 - 1") == 0)
            CHECK(trove_column_get(&c, 1023, &x) == TROVE_OK && x == 0xFFFFFFFFu);
        trove__put_le32(p + HDR + 4, 0xFFFFFC01u);
        CHECK_EQ_INT(trove_column_open(p, len, &c, &diag), TROVE_ERR_CORRUPT);
        free(p);
        p = build(&shrt, 1, 452, 0, &len);
        if (open_ok(p, len, &c, "short identity to 2^32 - 1") == 0) {
            CHECK_EQ_INT(trove_column_block(&c, 0, vals, &m), TROVE_OK);
            CHECK(m == 452 && vals[0] == 0xFFFFFFFFu - 451 && vals[451] == 0xFFFFFFFFu);
        }
        trove__put_le32(p + HDR + 4, 0xFFFFFFFFu - 450);
        CHECK_EQ_INT(trove_column_open(p, len, &c, &diag), TROVE_ERR_CORRUPT);
        free(p);
        /* one value at 2^32 - 1 as IDENTITY is fine (base + n - 1 = base) */
        shrt.base = 0xFFFFFFFFu;
        p = build(&shrt, 1, 1, 0, &len);
        if (open_ok(p, len, &c, "one-value identity at 2^32 - 1") == 0)
            CHECK(trove_column_get(&c, 0, &x) == TROVE_OK && x == 0xFFFFFFFFu);
        free(p);
    }
}

/* ---- the size property and the value limit -------------------------------------------- */

/* The seed's no-dedup case: 26,214,400 slots, column = 0..n-1, all IDENTITY; the column
 * must be descriptors only (8 bytes a block) plus an 8-byte arithmetic directory. */
static void test_size(void)
{
    const uint64_t n = 26214400;
    uint32_t *v = malloc(n * sizeof *v);
    struct trove_bytes b = {0};
    struct trove_column c;
    struct trove_block_info info;
    uint64_t seed = 11;
    uint32_t x;
    int ok = 1;

    CHECK(v != NULL);
    if (!v)
        return;
    for (uint64_t i = 0; i < n; i++)
        v[i] = (uint32_t)i;
    CHECK_EQ_INT(trove_column_encode(v, n, &b), TROVE_OK);
    if (b.len > 250000)
        fprintf(stderr, "26,214,400 consecutive values: %zu bytes, want at most 250,000\n", b.len);
    CHECK(b.len <= 250000);
    CHECK_EQ_INT(b.len, HDR + 25600 * 8 + 8);
    if (open_ok(b.ptr, b.len, &c, "26,214,400 consecutive") == 0) {
        CHECK_EQ_INT(c.dir_kind, 1);
        CHECK_EQ_INT(c.blocks, 25600);
        for (uint32_t bi = 0; bi < 25600; bi += 97)
            ok &= trove_column_block_info(&c, bi, &info) == TROVE_OK &&
                  info.scheme == TROVE_SCHEME_IDENTITY && info.base == bi * BLOCK &&
                  info.offset == HDR + 8 * bi;
        CHECK(ok);
        memset(v, 0, n * sizeof *v);
        CHECK_EQ_INT(trove_column_decode(&c, v), TROVE_OK);
        ok = 1;
        for (uint64_t i = 0; i < n; i++)
            ok &= v[i] == (uint32_t)i;
        CHECK(ok);
        ok = 1;
        for (int k = 0; k < 100000; k++) {
            uint64_t i = test_rand(&seed) % n;
            ok &= trove_column_get(&c, i, &x) == TROVE_OK && x == (uint32_t)i;
        }
        CHECK(trove_column_get(&c, n - 1, &x) == TROVE_OK && x == n - 1);
        CHECK(ok);
    }
    trove_bytes_free(&b);
    free(v);
}

/* TROVE_COLUMN_MAX_VALUES: a column of exactly that many values (all CONSTANT blocks, 8
 * bytes each) opens; one value more, with every other field consistent, is
 * TROVE_ERR_LIMIT. */
static void test_limit(void)
{
    const uint32_t nb = (uint32_t)(TROVE_COLUMN_MAX_VALUES / BLOCK);
    struct hblock *bl = malloc(((size_t)nb + 1) * sizeof *bl);
    struct trove_column c;
    struct trove_diag diag;
    uint32_t x = 0, out[BLOCK];
    size_t len, m = 0;
    uint8_t *p;

    CHECK(bl != NULL);
    if (!bl)
        return;
    for (uint32_t b = 0; b <= nb; b++)
        bl[b] = (struct hblock){TROVE_SCHEME_CONSTANT, 0, b, NULL};
    p = build(bl, nb, TROVE_COLUMN_MAX_VALUES, 1, &len);
    if (p && open_ok(p, len, &c, "TROVE_COLUMN_MAX_VALUES values") == 0) {
        CHECK_EQ_INT(c.n, TROVE_COLUMN_MAX_VALUES);
        CHECK(trove_column_get(&c, TROVE_COLUMN_MAX_VALUES - 1, &x) == TROVE_OK && x == nb - 1);
        CHECK(trove_column_block(&c, nb - 1, out, &m) == TROVE_OK && m == BLOCK &&
              out[1023] == nb - 1);
        CHECK_EQ_INT(trove_column_get(&c, TROVE_COLUMN_MAX_VALUES, &x), TROVE_ERR_INVALID);
    }
    free(p);
    p = build(bl, nb + 1, TROVE_COLUMN_MAX_VALUES + 1, 1, &len);
    if (p) {
        int rc = trove_column_open(p, len, &c, &diag);
        CHECK_EQ_INT(rc, TROVE_ERR_LIMIT);
    }
    free(p);
    free(bl);
}

/* ---- golden vectors ------------------------------------------------------------------- */

/* Read tests/vectors/<file> into an exact-size malloc'd buffer. */
static uint8_t *read_vector(const char *file, size_t *len_out)
{
    char path[1024];
    uint8_t *raw, *c;
    snprintf(path, sizeof path, "%s/tests/vectors/%s", TROVE_SOURCE_DIR, file);
    raw = test_read_file(path, len_out);
    CHECK(raw != NULL);
    if (!raw)
        return NULL;
    c = exact_copy(raw, *len_out);
    free(raw);
    return c;
}

/* The values behind column_mixed.bin (docs/formats/bitpack.md shows them): 2500 values in
 * three blocks, 7..1030 (IDENTITY), 42 x 1024 (CONSTANT), and 452 values 1000 + (0..7)
 * (BITPACK, width 3, base 1000; the first two forced to 1000 and 1007). */
static void golden_mixed(uint32_t *v)
{
    uint64_t seed = 2500;
    for (uint32_t i = 0; i < 1024; i++)
        v[i] = 7 + i;
    for (uint32_t i = 1024; i < 2048; i++)
        v[i] = 42;
    for (uint32_t i = 2048; i < 2500; i++)
        v[i] = 1000 + (uint32_t)(test_rand(&seed) % 8);
    v[2048] = 1000, v[2049] = 1007;
}

/* The 56 bytes of 0..2999 (three IDENTITY blocks, arithmetic directory), shown in the doc. */
static const uint8_t golden_arith[56] = {
    'T', 'B', 'P', 'C', 1, 1, 0, 0, 0xb8, 0x0b, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 48, 0, 0, 0,
    1, 0, 8, 0, 0, 0, 0, 0,   /* IDENTITY base 0 */
    1, 0, 8, 0, 0, 4, 0, 0,   /* IDENTITY base 1024 */
    1, 0, 8, 0, 0, 8, 0, 0,   /* IDENTITY base 2048 */
    24, 0, 0, 0, 8, 0, 0, 0}; /* first 24, stride 8 */

static void test_golden(void)
{
    static _Alignas(64) uint32_t v[BLOCK], packed[10 * 32], back[2500];
    struct trove_bytes b = {0};
    struct trove_column c;
    struct trove_block_info info;
    uint8_t *file;
    size_t len = 0;

    /* bitpack_w10.bin: 0..1023 at width 10, base 0 */
    for (uint32_t i = 0; i < BLOCK; i++)
        v[i] = i;
    trove_bitpack_pack(v, packed, 10, 0);
    /* lane 0 holds values 0, 32, 64, 96, ...; its word 0 is 0 | 32 << 10 | 64 << 20 | the low
     * 2 bits of 96 (0) << 30; lane 1's word 0 is 1 | 33 << 10 | 65 << 20 | (97 & 3) << 30 */
    CHECK_EQ_INT(packed[0], 0x04008000u);
    CHECK_EQ_INT(packed[1], (1u | 33u << 10 | 65u << 20 | 1u << 30));
    CHECK_EQ_INT(packed[32], 96u >> 2 | 128u << 8 | 160u << 18 | (192u & 15) << 28);
    test_check_vector("bitpack_w10.bin", (const uint8_t *)packed, sizeof packed);
    file = read_vector("bitpack_w10.bin", &len);
    CHECK_EQ_INT(len, 1280);
    if (file && len == 1280) {
        memcpy(packed, file, len);
        trove_bitpack_unpack(packed, back, 10, 0);
        CHECK(memcmp(back, v, sizeof v) == 0);
    }
    free(file);

    /* column_mixed.bin */
    golden_mixed(back);
    CHECK_EQ_INT(trove_column_encode(back, 2500, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, 444);
    test_check_vector("column_mixed.bin", b.ptr, b.len);
    file = read_vector("column_mixed.bin", &len);
    if (file && open_ok(file, len, &c, "column_mixed.bin") == 0) {
        static const struct trove_block_info want[3] = {
            {TROVE_SCHEME_IDENTITY, 0, 8, 7, 24},
            {TROVE_SCHEME_CONSTANT, 0, 8, 42, 32},
            {TROVE_SCHEME_BITPACK, 3, 392, 1000, 40}};
        uint32_t got[2500];
        CHECK_EQ_INT(c.n, 2500);
        CHECK_EQ_INT(c.blocks, 3);
        CHECK_EQ_INT(c.dir_kind, 0);
        CHECK_EQ_INT(c.dir_offset, 432);
        for (uint32_t bi = 0; bi < 3; bi++) {
            CHECK_EQ_INT(trove_column_block_info(&c, bi, &info), TROVE_OK);
            CHECK(info.scheme == want[bi].scheme && info.width == want[bi].width &&
                  info.byte_len == want[bi].byte_len && info.base == want[bi].base &&
                  info.offset == want[bi].offset);
        }
        CHECK_EQ_INT(trove_column_decode(&c, got), TROVE_OK);
        CHECK(memcmp(got, back, sizeof got) == 0);
    }
    free(file);

    /* the arithmetic directory, inline */
    {
        uint32_t *w = malloc(3000 * sizeof *w);
        if (w) {
            for (uint32_t i = 0; i < 3000; i++)
                w[i] = i;
            b.len = 0;
            CHECK_EQ_INT(trove_column_encode(w, 3000, &b), TROVE_OK);
            CHECK_EQ_INT(b.len, sizeof golden_arith);
            CHECK(b.len == sizeof golden_arith && memcmp(b.ptr, golden_arith, b.len) == 0);
            free(w);
        }
    }
    trove_bytes_free(&b);
}

/* ---- bad input ------------------------------------------------------------------------ */

/* Open an exact-size copy of buf[0..len) and expect `want` (or `want2`, when the format
 * leaves the choice between two codes open; pass want2 = want otherwise). */
static void expect_err2(const uint8_t *buf, size_t len, int want, int want2, const char *what)
{
    uint8_t *copy = exact_copy(buf, len);
    struct trove_diag diag = {0};
    struct trove_column c;
    int rc = trove_column_open(copy, len, &c, &diag);
    if (rc != want && rc != want2)
        fprintf(stderr, "%s: got %d (%s: %s) want %d (%s)\n", what, rc, trove_strerror(rc),
                diag.msg, want, trove_strerror(want));
    CHECK(rc == want || rc == want2);
    if (rc != TROVE_OK) {
        CHECK_EQ_INT(diag.code, rc);
        CHECK(diag.msg[0] != 0);
        CHECK(diag.offset <= len);
    }
    /* no diag: same answer */
    CHECK_EQ_INT(trove_column_open(copy, len, &c, NULL), rc);
    free(copy);
}

static void expect_err(const uint8_t *buf, size_t len, int want, const char *what)
{
    expect_err2(buf, len, want, want, what);
}

/* Every proper prefix of buf[0..len) is TROVE_ERR_TRUNCATED. */
static void expect_truncated(const uint8_t *buf, size_t len, const char *what)
{
    int fails = test_failed;
    for (size_t cut = 0; cut < len && test_failed - fails < 5; cut++) {
        char w[160];
        snprintf(w, sizeof w, "%s cut to %zu bytes", what, cut);
        expect_err(buf, cut, TROVE_ERR_TRUNCATED, w);
    }
}

static void test_bad_input(void)
{
    static uint32_t v[3000];
    struct trove_bytes b = {0};
    uint8_t *g, *a, *t;
    size_t glen, alen;

    /* g: the golden mixed column (explicit directory): header, IDENTITY at 24, CONSTANT at
     * 32, BITPACK w3 at 40 (392 bytes), directory at 432 (24, 32, 40), 444 bytes. */
    golden_mixed(v);
    trove_column_encode(v, 2500, &b);
    glen = b.len;
    g = exact_copy(b.ptr, b.len);
    /* a: 0..2999, three IDENTITY blocks, arithmetic directory (first 24, stride 8) at 48. */
    for (uint32_t i = 0; i < 3000; i++)
        v[i] = i;
    b.len = 0;
    trove_column_encode(v, 3000, &b);
    alen = b.len;
    a = exact_copy(b.ptr, b.len);
    t = malloc(4096);
    if (!g || !a || !t || glen != 444 || alen != 56 || trove__get_le32(g + 20) != 432 ||
        trove__get_le32(a + 20) != 48) {
        CHECK(!"bad-input fixtures are not the expected columns");
        goto out;
    }
    expect_err(g, glen, TROVE_OK, "golden column itself");
    expect_err(a, alen, TROVE_OK, "arithmetic column itself");

    /* truncation at every prefix, both directory kinds, and the empty column */
    expect_truncated(g, glen, "mixed column");
    expect_truncated(a, alen, "arithmetic column");
    {
        uint32_t d = 0;
        b.len = 0;
        trove_column_encode(&d, 0, &b);
        expect_truncated(b.ptr, b.len, "empty column");
        b.len = 0;
        trove_column_encode(&d, 1, &b);
        expect_truncated(b.ptr, b.len, "one-value column");
    }

    /* trailing bytes */
    memcpy(t, g, glen);
    memset(t + glen, 0, 8);
    expect_err(t, glen + 1, TROVE_ERR_CORRUPT, "one trailing byte");
    expect_err(t, glen + 4, TROVE_ERR_CORRUPT, "four trailing bytes");
    memcpy(t, a, alen);
    memset(t + alen, 0, 8);
    expect_err(t, alen + 4, TROVE_ERR_CORRUPT, "trailing bytes after an arithmetic directory");

    /* header */
#define RESET_G() memcpy(t, g, glen)
#define RESET_A() memcpy(t, a, alen)
    RESET_G(), t[0] = 'X';
    expect_err(t, glen, TROVE_ERR_MAGIC, "magic byte 0");
    RESET_G(), t[3] = 'D';
    expect_err(t, glen, TROVE_ERR_MAGIC, "magic byte 3");
    RESET_G(), t[4] = 0;
    expect_err(t, glen, TROVE_ERR_VERSION, "version 0");
    RESET_G(), t[4] = 2;
    expect_err(t, glen, TROVE_ERR_VERSION, "version 2");
    RESET_G(), t[4] = 255;
    expect_err(t, glen, TROVE_ERR_VERSION, "version 255");
    RESET_G(), t[5] = 2;
    expect_err(t, glen, TROVE_ERR_CORRUPT, "dir_kind 2");
    RESET_G(), t[5] = 1; /* directory read as first 24, stride 32: 4 bytes trailing */
    expect_err(t, glen, TROVE_ERR_CORRUPT, "explicit directory read as arithmetic");
    RESET_G(), trove__put_le16(t + 6, 1);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "reserved not 0");
    RESET_G(), trove__put_le64(t + 8, 2048);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "value count 2048 with 3 blocks");
    RESET_G(), trove__put_le64(t + 8, 3073);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "value count 3073 with 3 blocks");
    RESET_G(), trove__put_le64(t + 8, 0);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "value count 0 with 3 blocks");
    RESET_A(), trove__put_le32(t + 16, 2);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "block count 2 for 3000 values");
    RESET_A(), trove__put_le32(t + 16, 4);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "block count 4 for 3000 values");
    /* a count over the limit, even where ceil(n / 1024) wraps to the block count */
    RESET_G(), trove__put_le64(t + 8, UINT64_MAX), trove__put_le32(t + 16, 0), trove__put_le32(t + 20, HDR);
    expect_err(t, HDR, TROVE_ERR_LIMIT, "value count 2^64 - 1, 0 blocks");
    RESET_G(), trove__put_le64(t + 8, UINT64_MAX - 1000), trove__put_le32(t + 16, 0), trove__put_le32(t + 20, HDR);
    expect_err(t, HDR, TROVE_ERR_LIMIT, "value count 2^64 - 1001, 0 blocks");
    /* dir_offset: inside the header, before the last block's end, unaligned */
    RESET_G(), trove__put_le32(t + 20, 16);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "dir_offset 16");
    RESET_G(), trove__put_le32(t + 20, 428);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "dir_offset inside the last block");
    RESET_G(), trove__put_le32(t + 20, 431);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "dir_offset unaligned");
    RESET_G(), trove__put_le32(t + 20, 0xFFFFFFF8u);
    expect_err2(t, glen, TROVE_ERR_CORRUPT, TROVE_ERR_TRUNCATED, "dir_offset 2^32 - 8");
    RESET_A(), trove__put_le32(t + 20, 0xFFFFFFFCu);
    expect_err2(t, alen, TROVE_ERR_CORRUPT, TROVE_ERR_TRUNCATED,
                "dir_offset 2^32 - 4, arithmetic");

    /* descriptors: width, scheme, byte_len */
    RESET_G(), t[41] = 33;
    expect_err(t, glen, TROVE_ERR_CORRUPT, "width 33, byte_len unchanged");
    RESET_G(), t[41] = 33, trove__put_le16(t + 42, 8 + 33 * 128);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "width 33, byte_len to match");
    RESET_G(), t[41] = 255;
    expect_err(t, glen, TROVE_ERR_CORRUPT, "width 255");
    RESET_G(), t[25] = 1;
    expect_err(t, glen, TROVE_ERR_CORRUPT, "IDENTITY with width 1");
    RESET_G(), t[33] = 3;
    expect_err(t, glen, TROVE_ERR_CORRUPT, "CONSTANT with width 3");
    for (int s = 0; s < 256; s++) {
        char w[64];
        if (s >= TROVE_SCHEME_IDENTITY && s <= TROVE_SCHEME_BITPACK)
            continue;
        RESET_G(), t[32] = (uint8_t)s;
        snprintf(w, sizeof w, "scheme %d", s);
        expect_err(t, glen, TROVE_ERR_CORRUPT, w);
    }
    RESET_G(), trove__put_le16(t + 26, 16);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "IDENTITY byte_len 16");
    RESET_G(), trove__put_le16(t + 26, 0);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "IDENTITY byte_len 0");
    RESET_G(), trove__put_le16(t + 34, 4);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "CONSTANT byte_len 4");
    RESET_G(), trove__put_le16(t + 42, 392 - 128);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "BITPACK byte_len one width short");
    RESET_G(), trove__put_le16(t + 42, 392 + 4);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "BITPACK byte_len 4 over");
    RESET_G(), trove__put_le16(t + 42, 0xFFFF);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "BITPACK byte_len 65535");
    RESET_G(), t[41] = 4, trove__put_le16(t + 42, 8 + 4 * 128);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "BITPACK block running past the directory");
    RESET_G(), t[32] = TROVE_SCHEME_BITPACK, t[33] = 1, trove__put_le16(t + 34, 8 + 128);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "BITPACK block overlapping the next block");
    /* IDENTITY base overflow (block 0 holds 1024 values) */
    RESET_G(), trove__put_le32(t + 28, 0xFFFFFFFFu);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "IDENTITY base 2^32 - 1");
    RESET_G(), trove__put_le32(t + 28, 0xFFFFFC01u);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "IDENTITY base + 1023 = 2^32");
    RESET_G(), trove__put_le32(t + 28, 0xFFFFFC00u);
    expect_err(t, glen, TROVE_OK, "IDENTITY base + 1023 = 2^32 - 1");

    /* explicit directory entries */
    RESET_G(), trove__put_le32(t + 432, 32), trove__put_le32(t + 436, 24);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "directory out of order");
    RESET_G(), trove__put_le32(t + 436, 24);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "directory entry repeated");
    RESET_G(), trove__put_le32(t + 440, 36);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "block 2 overlapping block 1");
    RESET_G(), trove__put_le32(t + 440, 432);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "block at the directory");
    RESET_G(), trove__put_le32(t + 440, 440);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "block inside the directory");
    RESET_G(), trove__put_le32(t + 440, 0xFFFFFFF8u);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "block past the end");
    RESET_G(), trove__put_le32(t + 432, 0);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "block at 0");
    RESET_G(), trove__put_le32(t + 432, 16);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "block inside the header");
    /* unaligned: two CONSTANT blocks at 24 and 34 (in order, inside [24, dir_offset), not
     * overlapping, but 34 is not a multiple of 4), directory at 44 */
    {
        uint8_t u[52] = {'T', 'B', 'P', 'C', 1, 0, 0, 0, 0x00, 0x08};
        trove__put_le32(u + 16, 2), trove__put_le32(u + 20, 44);
        u[24] = TROVE_SCHEME_CONSTANT, trove__put_le16(u + 26, 8), trove__put_le32(u + 28, 5);
        u[34] = TROVE_SCHEME_CONSTANT, trove__put_le16(u + 36, 8), trove__put_le32(u + 38, 6);
        trove__put_le32(u + 44, 24), trove__put_le32(u + 48, 34);
        expect_err(u, sizeof u, TROVE_ERR_CORRUPT, "block offset unaligned");
        /* blocks tile [24, dir_offset): a gap before the first block, between two blocks,
         * or before the directory is corrupt too (all 4-byte aligned here) */
        memset(u + 24, 0, 28);
        u[28] = TROVE_SCHEME_CONSTANT, trove__put_le16(u + 30, 8);
        u[36] = TROVE_SCHEME_CONSTANT, trove__put_le16(u + 38, 8);
        trove__put_le32(u + 44, 28), trove__put_le32(u + 48, 36);
        expect_err(u, sizeof u, TROVE_ERR_CORRUPT, "gap before the first block");
        memset(u + 24, 0, 28);
        u[24] = TROVE_SCHEME_CONSTANT, trove__put_le16(u + 26, 8);
        u[36] = TROVE_SCHEME_CONSTANT, trove__put_le16(u + 38, 8);
        trove__put_le32(u + 44, 24), trove__put_le32(u + 48, 36);
        expect_err(u, sizeof u, TROVE_ERR_CORRUPT, "gap between blocks");
        memset(u + 24, 0, 28);
        u[24] = TROVE_SCHEME_CONSTANT, trove__put_le16(u + 26, 8);
        u[32] = TROVE_SCHEME_CONSTANT, trove__put_le16(u + 34, 8);
        trove__put_le32(u + 44, 24), trove__put_le32(u + 48, 32);
        expect_err(u, sizeof u, TROVE_ERR_CORRUPT, "gap before the directory");
        trove__put_le32(u + 20, 40), memmove(u + 40, u + 44, 8);
        expect_err(u, 48, TROVE_OK, "the same blocks without the gap");
    }
    RESET_G(), trove__put_le32(t + 432, 26);
    expect_err(t, glen, TROVE_ERR_CORRUPT, "block 0 at 26");

    /* arithmetic directory: first and stride at 48 and 52 */
    RESET_A(), trove__put_le32(t + 52, 0);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "stride 0");
    RESET_A(), trove__put_le32(t + 52, 4);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "stride 4 (overlapping blocks)");
    RESET_A(), trove__put_le32(t + 52, 12);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "stride 12 (last block past the directory)");
    RESET_A(), trove__put_le32(t + 48, 28);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "first 28 (last block past the directory)");
    RESET_A(), trove__put_le32(t + 48, 20);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "first 20 (inside the header)");
    RESET_A(), trove__put_le32(t + 48, 26), trove__put_le32(t + 52, 6);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "first 26, stride 6 (unaligned)");
    /* block 1 far away, block 2 back at 32 after 32-bit wraparound */
    RESET_A(), trove__put_le32(t + 52, 0x80000004u);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "stride 2^31 + 4 (wraps)");
    RESET_A(), trove__put_le32(t + 48, 0xFFFFFFF8u), trove__put_le32(t + 52, 16);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "first 2^32 - 8 (wraps)");
    RESET_A(), trove__put_le32(t + 48, 0xFFFFFFF0u), trove__put_le32(t + 52, 8);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "first 2^32 - 16, stride 8");
    /* a block longer than the stride (block 1 made BITPACK at width 1, 136 bytes) */
    RESET_A(), t[32] = TROVE_SCHEME_BITPACK, t[33] = 1, trove__put_le16(t + 34, 8 + 128);
    expect_err(t, alen, TROVE_ERR_CORRUPT, "arithmetic block longer than the stride");

    /* an unaligned buffer */
    {
        uint8_t *u = malloc(glen + 1);
        struct trove_column c;
        struct trove_diag diag = {0};
        if (u) {
            memcpy(u + 1, g, glen);
            CHECK_EQ_INT(trove_column_open(u + 1, glen, &c, &diag), TROVE_ERR_INVALID);
            CHECK_EQ_INT(trove_column_open(u + 1, glen, &c, NULL), TROVE_ERR_INVALID);
            free(u);
        }
        u = malloc(alen + 2);
        if (u) {
            memcpy(u + 2, a, alen);
            CHECK_EQ_INT(trove_column_open(u + 2, alen, &c, &diag), TROVE_ERR_INVALID);
            free(u);
        }
    }
#undef RESET_G
#undef RESET_A
out:
    free(g);
    free(a);
    free(t);
    trove_bytes_free(&b);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    /* Everything that touches the kernels twice: the AVX2 build (on machines that have it)
     * and the generic one must give the same bytes and values. */
    for (int generic = 0; generic < 2; generic++) {
        trove__bitpack_force_generic = generic;
        RUN(test_width);
        RUN(test_kernels);
        RUN(test_unpack_blocks);
        RUN(test_range);
        RUN(test_columns);
        RUN(test_handmade);
        RUN(test_golden);
        RUN(test_bad_input);
    }
    trove__bitpack_force_generic = 0;
    RUN(test_size);
    RUN(test_limit);
    return test_done();
}
