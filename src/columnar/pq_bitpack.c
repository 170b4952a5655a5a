/*
 * pq_bitpack.c: Parquet's bit-packing (pq_bitpack.h; Encodings.md of apache/parquet-format),
 * the kernels the RLE / bit-packing hybrid (pq_rle.c) and DELTA_BINARY_PACKED (pq_delta.c)
 * share.
 *
 *   bit-packing is LSB first: value i occupies bits [i * w, i * w + w) of the run's bytes
 *   read as one little-endian number. The 8 values 0..7 at w = 3:
 *
 *      byte 0      byte 1      byte 2
 *     +----------+----------+----------+
 *     | 10001000 | 11000110 | 11111010 |      = 88 c6 fa
 *     | CCBBBAAA | FEEEDDDC | HHHGGGFF |      (A = value 0 ... H = value 7, bit 7 on the left)
 *     +----------+----------+----------+
 *
 * Why it is built this way: bit-unpacking is done 32 values at a time by a kernel per width
 * (one 64-bit little-endian load, a shift and a mask per value, fully unrolled with the width
 * a compile-time constant), since 32 values at any width are a whole number of bytes (4w):
 * the delta miniblocks and long bit-packed runs decompose into such units; short runs use an
 * 8-value kernel per width. A kernel reads up to 7 bytes past its unit, so a unit within 8
 * bytes of the buffer's end is first copied into a zeroed scratch buffer. Packing is the
 * mirror image (a 64-bit accumulator flushed 32 bits at a time, unrolled per width).
 *
 * Thread safety: no state; every function is safe to call concurrently on distinct outputs.
 */
#include "pq_bitpack.h"

#include "common/endian.h"

#include <assert.h>
#include <string.h>

#define ALWAYS_INLINE TROVE__ALWAYS_INLINE

static ALWAYS_INLINE uint64_t load64(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return trove__get_le64(p);
#endif
}

static ALWAYS_INLINE void store64(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 8);
#else
    trove__put_le64(p, v);
#endif
}

/* The kernels below are written for one width at a time and fully unrolled, so that every
 * shift and byte offset is a constant. */
#if defined(__GNUC__)
#define UNROLL _Pragma("GCC unroll 32")
#else
#define UNROLL
#endif

/* Unpack count (8 or 32) values of width w (1..32) from in[0 .. count * w / 8); reads up to
 * 7 bytes past them. */
static ALWAYS_INLINE void unpack_k(const uint8_t *in, uint32_t *out, unsigned w, unsigned count)
{
    const uint64_t mask = ((uint64_t)1 << w) - 1;
    UNROLL
    for (unsigned i = 0; i < count; i++) {
        unsigned bit = i * w;
        out[i] = (uint32_t)((load64(in + (bit >> 3)) >> (bit & 7)) & mask);
    }
}

/* Unpack 32 values of width w (33..64) into 64-bit values. A value spans at most 9 bytes;
 * reads up to 7 bytes past in[4w). */
static ALWAYS_INLINE void unpack_wide_k(const uint8_t *in, uint64_t *out, unsigned w)
{
    const uint64_t mask = w == 64 ? ~(uint64_t)0 : ((uint64_t)1 << w) - 1;
    UNROLL
    for (unsigned i = 0; i < 32; i++) {
        unsigned bit = i * w, sh = bit & 7;
        uint64_t x = load64(in + (bit >> 3)) >> sh;
        if (sh + w > 64)
            x |= (uint64_t)in[(bit >> 3) + 8] << (64 - sh);
        out[i] = x & mask;
    }
}

/* Pack 32 values (each below 2^w) at width w (1..32) into out[0 .. 4w). */
static ALWAYS_INLINE void pack_k(const uint32_t *v, uint8_t *out, unsigned w)
{
    uint64_t acc = 0;
    unsigned nb = 0;
    UNROLL
    for (unsigned i = 0; i < 32; i++) {
        acc |= (uint64_t)v[i] << nb;
        nb += w;
        if (nb >= 32) {
            trove__put_le32(out, (uint32_t)acc);
            out += 4;
            acc >>= 32;
            nb -= 32;
        }
    }
}

typedef void (*unpack_wide_fn)(const uint8_t *in, uint64_t *out);

static void unpack32_w0(const uint8_t *in, uint32_t *out)
{
    (void)in;
    memset(out, 0, 32 * sizeof *out);
}

static void unpack8_w0(const uint8_t *in, uint32_t *out)
{
    (void)in;
    memset(out, 0, 8 * sizeof *out);
}

static void pack32_w0(const uint32_t *v, uint8_t *out)
{
    (void)v;
    (void)out;
}

#define WIDTHS_1_32(X)                                                                        \
    X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16)   \
    X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30)     \
    X(31) X(32)
#define WIDTHS_33_64(X)                                                                       \
    X(33) X(34) X(35) X(36) X(37) X(38) X(39) X(40) X(41) X(42) X(43) X(44) X(45) X(46)     \
    X(47) X(48) X(49) X(50) X(51) X(52) X(53) X(54) X(55) X(56) X(57) X(58) X(59) X(60)     \
    X(61) X(62) X(63) X(64)

#define DEF_W(W)                                                                              \
    static void unpack32_w##W(const uint8_t *in, uint32_t *out) { unpack_k(in, out, W, 32); } \
    static void unpack8_w##W(const uint8_t *in, uint32_t *out) { unpack_k(in, out, W, 8); }   \
    static void pack32_w##W(const uint32_t *v, uint8_t *out) { pack_k(v, out, W); }
#define DEF_WIDE_W(W)                                                                         \
    static void unpack32_w##W(const uint8_t *in, uint64_t *out) { unpack_wide_k(in, out, W); }
WIDTHS_1_32(DEF_W)
WIDTHS_33_64(DEF_WIDE_W)

#define REF_UNPACK32(W) unpack32_w##W,
#define REF_UNPACK8(W) unpack8_w##W,
#define REF_PACK32(W) pack32_w##W,
/* Indexed by width: 0..32, and 33..64 at w - 33. */
const trove__pq_unpack_fn trove__pq_unpack32_tab[33] = {unpack32_w0, WIDTHS_1_32(REF_UNPACK32)};
const trove__pq_unpack_fn trove__pq_unpack8_tab[33] = {unpack8_w0, WIDTHS_1_32(REF_UNPACK8)};
const trove__pq_pack_fn trove__pq_pack32_tab[33] = {pack32_w0, WIDTHS_1_32(REF_PACK32)};
static const unpack_wide_fn unpack32_wide_tab[32] = {WIDTHS_33_64(REF_UNPACK32)};

/* Unpack 32 values of width w (0..32) from the nbytes (<= 4w) at in, of which avail bytes
 * (>= nbytes) may be read; bytes past nbytes count as zero bits. */
void trove__pq_unpack32(const uint8_t *in, size_t nbytes, size_t avail, uint32_t *out,
                        unsigned w)
{
    uint8_t tmp[4 * 32 + 8];

    assert(w <= 32 && nbytes <= 4 * w && nbytes <= avail);
    if (nbytes == 4 * w && avail >= 4 * w + 8) {
        trove__pq_unpack32_tab[w](in, out);
        return;
    }
    memset(tmp, 0, sizeof tmp);
    if (nbytes)
        memcpy(tmp, in, nbytes);
    trove__pq_unpack32_tab[w](tmp, out);
}

/* The same for widths 0..64 into 64-bit values. */
void trove__pq_unpack32_64(const uint8_t *in, size_t nbytes, size_t avail, uint64_t *out,
                           unsigned w)
{
    uint8_t tmp[4 * 64 + 8];
    uint32_t v32[32];

    assert(w <= 64 && nbytes <= 4 * w && nbytes <= avail);
    if (w <= 32) {
        trove__pq_unpack32(in, nbytes, avail, v32, w);
        for (unsigned i = 0; i < 32; i++)
            out[i] = v32[i];
        return;
    }
    if (nbytes == 4 * w && avail >= 4 * w + 8) {
        unpack32_wide_tab[w - 33](in, out);
        return;
    }
    memset(tmp, 0, sizeof tmp);
    memcpy(tmp, in, nbytes);
    unpack32_wide_tab[w - 33](tmp, out);
}

/* Pack m values (m a multiple of 8; each below 2^w) at width w (0..32) into m * w / 8
 * bytes at p; return the byte after them. */
uint8_t *trove__pq_pack_u32(const uint32_t *v, size_t m, unsigned w, uint8_t *p)
{
    uint64_t acc = 0;
    unsigned nb = 0;

    size_t i = 0;

    assert(m % 8 == 0 && w <= 32);
    if (w == 0)
        return p;
    for (; m - i >= 32; i += 32, p += 4 * w)
        trove__pq_pack32_tab[w](v + i, p);
    for (; i < m; i++) {
        acc |= (uint64_t)v[i] << nb;
        nb += w;
        if (nb >= 32) {
            trove__put_le32(p, (uint32_t)acc);
            p += 4;
            acc >>= 32;
            nb -= 32;
        }
    }
    /* m * w is a multiple of 8: nb is 0, 8, 16 or 24. */
    for (; nb; nb -= 8, acc >>= 8)
        *p++ = (uint8_t)acc;
    return p;
}

/* Pack 32 values (each below 2^w) at width w (0..64) into 4w bytes at p. */
uint8_t *trove__pq_pack32_u64(const uint64_t *v, unsigned w, uint8_t *p)
{
    uint64_t acc = 0;
    unsigned nb = 0;

    assert(w <= 64);
    if (w == 0)
        return p;
    for (unsigned i = 0; i < 32; i++) {
        uint64_t x = v[i];
        acc |= x << nb;
        if (nb + w >= 64) {
            unsigned used = 64 - nb;
            store64(p, acc);
            p += 8;
            acc = used < 64 ? x >> used : 0;
            nb = nb + w - 64;
        } else {
            nb += w;
        }
    }
    for (; nb; nb -= 8, acc >>= 8)
        *p++ = (uint8_t)acc;
    return p;
}

