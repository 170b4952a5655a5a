/*
 * test_bitpack.c: the FastLanes kernels (include/trove/bitpack.h), docs/formats/bitpack.md.
 *
 * Kernels: every width 0..32 at bases 0, 12345 and 0xFFFFFF00 (where value - base wraps),
 * with random values that include 0 and 2^w - 1, against a bit-by-bit reference packer
 * written here from the layout (value i in lane i % 32, row i / 32, packed word k of lane l
 * at out[k * 32 + l]); pack must write exactly w * 32 words, unpack exactly 1024, neither
 * may assume more than 4-byte alignment, and trove_bitpack_get must agree with unpack.
 * The golden vector tests/vectors/bitpack_w10.bin. trove_bitpack_range
 * against a scalar reference (random, all equal, consecutive with and without a wrap past
 * 2^32 - 1, nearly consecutive, the extremes 0 and UINT32_MAX, every n the vector loops split
 * differently, every 4-byte alignment). Everything runs twice: on the AVX2 kernels (where
 * the CPU has them) and on the generic ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/bitpack_internal.h"
#include "common/endian.h"
#include "testutil.h"
#include "trove/bitpack.h"

#define BLOCK TROVE_BITPACK_BLOCK
#define GUARD 0xA5A5A5A5u

/* ---- little helpers ------------------------------------------------------------------- */

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

static void test_golden(void)
{
    static _Alignas(64) uint32_t v[BLOCK], packed[10 * 32], back[BLOCK];
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
        RUN(test_golden);
    }
    trove__bitpack_force_generic = 0;
    return test_done();
}
