/*
 * pq_encoding.c: Parquet's value encodings (pq_encoding.h; Encodings.md of
 * apache/parquet-format) — the RLE / bit-packing hybrid of dictionary indices, the
 * DELTA_BINARY_PACKED integers, PLAIN byte arrays, and the dictionary builders.
 *
 * RLE / bit-packing hybrid at bit width w (0..32), no length prefix:
 *
 *   run := ULEB128 header, then
 *          header = (count << 1) | 0: an RLE run: count copies of one value, stored in
 *                                     ceil(w / 8) bytes little-endian
 *          header = (groups << 1) | 1: a bit-packed run: groups * 8 values, groups * w bytes
 *
 *   bit-packing is LSB first: value i occupies bits [i * w, i * w + w) of the run's bytes
 *   read as one little-endian number. The 8 values 0..7 at w = 3:
 *
 *      byte 0      byte 1      byte 2
 *     +----------+----------+----------+
 *     | 10001000 | 11000110 | 11111010 |      = 88 c6 fa, after the header 03
 *     | CCBBBAAA | FEEEDDDC | HHHGGGFF |      (A = value 0 ... H = value 7, bit 7 on the left)
 *     +----------+----------+----------+
 *
 * DELTA_BINARY_PACKED:
 *
 *   header := ULEB block_size (128k) | ULEB miniblocks (m; block_size / m = 32j) |
 *             ULEB total count | zigzag ULEB first value
 *   block  := zigzag ULEB min delta | m width bytes | m miniblocks of block_size / m values
 *             of (delta - min delta), each bit-packed LSB first at its width
 *
 *   A block holds block_size deltas (value[i] - value[i-1], wrapping: in 32 bits for INT32,
 *   64 for INT64); the last block stops after the last miniblock that holds a delta (that
 *   miniblock is padded to full length; later ones have no bytes, whatever their width).
 *   This encoder writes block 128 and 4 miniblocks of 32, zero padding and zero widths.
 *
 * PLAIN BYTE_ARRAY: u32 length little-endian, then the bytes, per value.
 *
 * Why it is built this way: bit-unpacking is done 32 values at a time by a kernel per width
 * (one 64-bit little-endian load, a shift and a mask per value, fully unrolled with the width
 * a compile-time constant), since 32 values at any width are a whole number of bytes (4w):
 * the delta miniblocks and long bit-packed runs decompose into such units; short runs use an
 * 8-value kernel per width. A kernel reads up to 7 bytes past its unit, so a unit within 8
 * bytes of the buffer's end is first copied into a zeroed scratch buffer. Packing is the
 * mirror image (a 64-bit accumulator flushed 32 bits at a time, unrolled per width). Each decoder walks its input twice: once only to check every header
 * and bound (cheap: a few bytes per run or per 128 values), then again to write the outputs,
 * so a failed decode leaves its outputs untouched. All delta arithmetic is in unsigned types
 * (wrapping is the format's rule, and signed overflow would be undefined).
 *
 * Thread safety: no state; every function is safe to call concurrently on distinct outputs.
 */
#include "pq_encoding.h"

#include "common/endian.h"
#include "common/varint.h"

#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* The largest delta block this decoder accepts (values); the format has no limit, writers
 * use 128 (parquet-mr, Arrow) to a few thousand. */
#define DELTA_MAX_BLOCK (1u << 20)
/* The encoder's delta layout. */
#define DELTA_BLOCK 128u
#define DELTA_MINIBLOCKS 4u
#define DELTA_MINI (DELTA_BLOCK / DELTA_MINIBLOCKS)

/* What a decoder reads instead of a NULL buffer of length 0. */
static const uint8_t no_bytes[1];

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* ---- bit-packing kernels ----------------------------------------------------------------- */

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

typedef void (*unpack_fn)(const uint8_t *in, uint32_t *out);
typedef void (*unpack_wide_fn)(const uint8_t *in, uint64_t *out);
typedef void (*pack_fn)(const uint32_t *v, uint8_t *out);

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
static const unpack_fn unpack32_tab[33] = {unpack32_w0, WIDTHS_1_32(REF_UNPACK32)};
static const unpack_fn unpack8_tab[33] = {unpack8_w0, WIDTHS_1_32(REF_UNPACK8)};
static const pack_fn pack32_tab[33] = {pack32_w0, WIDTHS_1_32(REF_PACK32)};
static const unpack_wide_fn unpack32_wide_tab[32] = {WIDTHS_33_64(REF_UNPACK32)};

/* Unpack 32 values of width w (0..32) from the nbytes (<= 4w) at in, of which avail bytes
 * (>= nbytes) may be read; bytes past nbytes count as zero bits. */
static void unpack32(const uint8_t *in, size_t nbytes, size_t avail, uint32_t *out, unsigned w)
{
    uint8_t tmp[4 * 32 + 8];

    assert(w <= 32 && nbytes <= 4 * w && nbytes <= avail);
    if (nbytes == 4 * w && avail >= 4 * w + 8) {
        unpack32_tab[w](in, out);
        return;
    }
    memset(tmp, 0, sizeof tmp);
    if (nbytes)
        memcpy(tmp, in, nbytes);
    unpack32_tab[w](tmp, out);
}

/* The same for widths 0..64 into 64-bit values. */
static void unpack32_64(const uint8_t *in, size_t nbytes, size_t avail, uint64_t *out,
                        unsigned w)
{
    uint8_t tmp[4 * 64 + 8];
    uint32_t v32[32];

    assert(w <= 64 && nbytes <= 4 * w && nbytes <= avail);
    if (w <= 32) {
        unpack32(in, nbytes, avail, v32, w);
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
static uint8_t *pack_u32(const uint32_t *v, size_t m, unsigned w, uint8_t *p)
{
    uint64_t acc = 0;
    unsigned nb = 0;

    size_t i = 0;

    assert(m % 8 == 0 && w <= 32);
    if (w == 0)
        return p;
    for (; m - i >= 32; i += 32, p += 4 * w)
        pack32_tab[w](v + i, p);
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
static uint8_t *pack32_u64(const uint64_t *v, unsigned w, uint8_t *p)
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

static unsigned width64(uint64_t v) { return v ? 64 - (unsigned)__builtin_clzll(v) : 0; }

/* ---- RLE / bit-packing hybrid ------------------------------------------------------------ */

/*
 * The shortest parse. Runs and bit-packed groups can be cut in many ways (a repeat may be
 * an RLE run, or partly fill the last group of the bit-packed values before it, or stay
 * bit-packed when w is small), so a dynamic program over the positions picks the cheapest:
 *
 *   a[j]  the fewest bytes for v[0..j) ending where a run ends
 *   b[j]  the same, ending in a bit-packed group [j - 8, j) of a run that may go on
 *   a[j] = min(b[j], min over i of a[i] + header(j - i) + ceil(w / 8))   v[i..j) all equal
 *   b[j] = min(a[j - 8] + 1, b[j - 8]) + w                               (8 values, w bytes)
 *
 * The first term of a[j] ranges over the i in v[j-1]'s repeat, through a running minimum
 * (on ties the latest i, the shorter run). A bit-packed run's header is counted as one
 * byte: a run of 64 groups or more takes one more, which this leaves out (counting it along
 * the path made the program cut long runs every 63 groups, which costs more). The last
 * group may be partial (padded). At w = 0 only RLE runs are written (a bit-packed run of
 * nothing saves a byte at most, and is where readers are least tested).
 *
 * Values go through in blocks of RLE_DP_BLOCK (a multiple of 8; runs do not cross a block,
 * only the last block may end in a padded group), so costs fit in 32 bits and the scratch
 * (9 bytes a value: a, b and the way back) stays small enough to stay in cache (a cut
 * between blocks costs a header at most). O(n) time.
 */
#define RLE_DP_BLOCK ((size_t)1 << 16)

/* The way back (flags[k]), and the runs it finds. */
enum {
    RLE_A_RUN = 1,   /* a[k] is an RLE run ending at k (else a[k] = b[k]) */
    RLE_B_OPEN = 2,  /* b[k]'s group [k - 8, k) opens a bit-packed run (else goes on) */
    RLE_AT_RUN = 4,  /* an RLE run starts at k */
    RLE_AT_PACK = 8, /* a bit-packed run starts at k */
};

struct rle_dp {
    uint32_t *a, *b;
    uint8_t *flags;
    size_t cap; /* values a block may have */
};

/* Encode v[0..n) (n <= RLE_DP_BLOCK), the last block if last (else n % 8 == 0). */
static int rle_dp_block(struct rle_dp *s, const uint32_t *v, size_t n, unsigned w, int last,
                        struct trove_bytes *out)
{
    const uint32_t inf = UINT32_MAX / 2, vb = (w + 7) / 8;
    uint32_t *a = s->a, *b = s->b, best = inf, prev = 0, end_cost;
    uint8_t *flags = s->flags;
    size_t tail_from = SIZE_MAX, j = n, run = 0, nseg = 0;
    int in_b, rc = TROVE_OK;

    /* best: the least a[i] over the i in v[k - 1]'s repeat so far; run: that repeat's
     * length, which bounds the run's header (the walk back finds the i). Written to compile
     * to conditional moves: which way a value goes is data. prev is a[k - 1]. */
    a[0] = 0;
    b[0] = inf;
    for (size_t k = 1; k <= n; k++) {
        const int same = k > 1 && v[k - 1] == v[k - 2];
        const uint32_t m = prev < best ? prev : best;
        /* Before the first whole group (or at w = 0) b is out of reach. */
        const uint32_t o = k >= 8 && w > 0 ? a[k - 8] + 1 + w : inf,
                       c = k >= 8 && w > 0 ? b[k - 8] + w : inf;
        const uint32_t bk = o <= c ? o : c;
        uint32_t r;
        best = same ? m : prev;
        run = same ? run + 1 : 1;
        b[k] = bk;
        /* The header: the varint of run << 1 (run <= RLE_DP_BLOCK < 2^20). */
        r = best + vb + 1 + (run >= 64) + (run >= 8192);
        flags[k] = (uint8_t)((o <= c && o < inf ? RLE_B_OPEN : 0) | (r < bk ? RLE_A_RUN : 0));
        prev = r < bk ? r : bk;
        a[k] = prev;
    }
    flags[0] = 0;
    /* A last partial group [i, n), padded: after a run (a new header) or in one (b). */
    end_cost = a[n];
    for (size_t i = n > 7 ? n - 7 : 0; last && w > 0 && i < n; i++) {
        uint32_t o = a[i] + 1 + w, c = b[i] + w;
        if ((o < c ? o : c) < end_cost) {
            end_cost = o < c ? o : c;
            tail_from = i;
        }
    }

    /* Walk back, marking the kind of each run at its start and keeping the starts, last
     * run first, in b[] (which the walk no longer reads). */
    in_b = 0;
    if (tail_from != SIZE_MAX) {
        j = tail_from;
        in_b = a[j] + 1 + w > b[j] + w;
        if (!in_b) {
            flags[j] |= RLE_AT_PACK;
            b[nseg++] = (uint32_t)j;
        }
    }
    while (j > 0) {
        if (in_b) {
            const int opened = flags[j] & RLE_B_OPEN;
            j -= 8;
            if (opened) {
                flags[j] |= RLE_AT_PACK;
                b[nseg++] = (uint32_t)j;
                in_b = 0;
            }
        } else if (!(flags[j] & RLE_A_RUN)) {
            in_b = 1;
        } else {
            /* The run's start: the latest i in v[j - 1]'s repeat with the least a[i]. */
            size_t i = j - 1, at = j - 1;
            while (i > 0 && v[i - 1] == v[j - 1]) {
                i--;
                at = a[i] < a[at] ? i : at;
            }
            flags[at] |= RLE_AT_RUN;
            b[nseg++] = (uint32_t)at;
            j = at;
        }
    }
    /* Emit, making room only when a run might not fit (short runs are many). */
    while (nseg-- > 0) {
        const size_t st = b[nseg], e = nseg > 0 ? b[nseg - 1] : n;
        const size_t need = TROVE_VARINT32_MAX + 4 + (e - st + 7) / 8 * w;
        uint8_t *p;
        if (out->cap - out->len < need &&
            (rc = trove_bytes_reserve(out, need + (out->len >> 2))) != TROVE_OK)
            return rc;
        p = out->ptr + out->len;
        if (flags[st] & RLE_AT_RUN) {
            p = trove_put_varint(p, (uint64_t)(e - st) << 1);
            for (unsigned k = 0; k < vb; k++)
                *p++ = (uint8_t)(v[st] >> (8 * k));
        } else {
            /* A bit-packed run; only the block's last one may end in a padded group. */
            const size_t full = (e - st) & ~(size_t)7, groups = (e - st + 7) / 8;
            p = trove_put_varint(p, (uint64_t)groups << 1 | 1);
            p = pack_u32(v + st, full, w, p);
            if (e - st > full) {
                uint32_t lastg[8] = {0};
                memcpy(lastg, v + st + full, (e - st - full) * sizeof *v);
                p = pack_u32(lastg, 8, w, p);
            }
        }
        out->len = (size_t)(p - out->ptr);
    }
    return rc;
}

/* Make s hold blocks of m values (it keeps what it has if that is enough). */
static int rle_dp_reserve(struct rle_dp *s, size_t m)
{
    uint32_t *a, *b;
    uint8_t *f;
    if (m <= s->cap)
        return TROVE_OK;
    if (!(a = realloc(s->a, (m + 1) * sizeof *a)))
        return TROVE_ERR_NOMEM;
    s->a = a;
    if (!(b = realloc(s->b, (m + 1) * sizeof *b)))
        return TROVE_ERR_NOMEM;
    s->b = b;
    if (!(f = realloc(s->flags, m + 1)))
        return TROVE_ERR_NOMEM;
    s->flags = f;
    s->cap = m;
    return TROVE_OK;
}

static void rle_dp_free(struct rle_dp *s)
{
    free(s->a);
    free(s->b);
    free(s->flags);
}

/* trove__pq_rle_encode with the caller's scratch (kept for the next call). */
static int rle_encode_with(struct rle_dp *s, const uint32_t *v, size_t n, unsigned w,
                           struct trove_bytes *out)
{
    size_t old_len = out ? out->len : 0, m = n < RLE_DP_BLOCK ? n : RLE_DP_BLOCK;
    uint32_t all = 0;
    int rc = TROVE_OK;

    if (!out || w > 32 || (n > 0 && !v)) {
        rc = TROVE_ERR_INVALID;
        goto out;
    }
    for (size_t k = 0; k < n; k++)
        all |= v[k];
    if (w < 32 && (all >> w) != 0) {
        rc = TROVE_ERR_INVALID;
        goto out;
    }
    if (n == 0)
        goto out;
    if ((rc = rle_dp_reserve(s, m)) != TROVE_OK)
        goto out;
    for (size_t at = 0; at < n && rc == TROVE_OK; at += m) {
        size_t k = n - at < m ? n - at : m;
        rc = rle_dp_block(s, v + at, k, w, at + k == n, out);
    }
out:
    if (rc != TROVE_OK && out)
        out->len = old_len;
    return rc;
}

int trove__pq_rle_encode(const uint32_t *v, size_t n, unsigned w, struct trove_bytes *out)
{
    struct rle_dp s = {NULL, NULL, NULL, 0};
    int rc = rle_encode_with(&s, v, n, w, out);
    rle_dp_free(&s);
    return rc;
}

/* Copy the first take (<= 8 * groups) values of a bit-packed run at p (groups * w bytes;
 * avail bytes readable from p) into out. */
static void rle_unpack_run(const uint8_t *p, size_t avail, size_t run_bytes, unsigned w,
                           uint32_t *out, size_t take)
{
    const size_t unit = 4 * (size_t)w;
    uint32_t tmp[32];
    size_t i = 0;

    while (take - i >= 32 && avail >= unit + 8) {
        unpack32_tab[w](p, out + i);
        p += unit;
        avail -= unit;
        run_bytes -= unit;
        i += 32;
    }
    /* Whole groups of 8 (short runs, or a long run's last groups). */
    while (take - i >= 8 && avail >= w + 8) {
        unpack8_tab[w](p, out + i);
        p += w;
        avail -= w;
        run_bytes -= w;
        i += 8;
    }
    while (i < take) {
        size_t nb = run_bytes < unit ? run_bytes : unit, c = take - i < 32 ? take - i : 32;
        unpack32(p, nb, avail, tmp, w);
        memcpy(out + i, tmp, c * sizeof *tmp);
        p += nb;
        avail -= nb;
        run_bytes -= nb;
        i += c;
    }
}

/* Walk the runs of n values: check every one and, when out is not NULL, write the values. */
static int rle_walk(const uint8_t *buf, size_t len, unsigned w, uint32_t *out, size_t n,
                    size_t *used_out, struct trove_diag *diag)
{
    const uint8_t *p = buf, *end = buf + len;
    const unsigned vbytes = (w + 7) / 8;
    size_t pos = 0;

    while (pos < n) {
        size_t at = (size_t)(p - buf), left, take;
        uint64_t h;
        int why = 0;
        const uint8_t *q = trove_get_varint(p, end, 32, &h, &why);
        if (!q) {
            if (why == 1)
                return trove_diag_set(diag, TROVE_ERR_TRUNCATED, len,
                                      "RLE data ends inside the run header at byte %zu after "
                                      "%zu of %zu values; the page was cut short",
                                      at, pos, n);
            return trove_diag_set(diag, TROVE_ERR_CORRUPT, at,
                                  "RLE run header at byte %zu is a varint longer than 5 bytes "
                                  "or over 32 bits",
                                  at);
        }
        p = q;
        left = (size_t)(end - p);
        if (h >> 1 == 0)
            return trove_diag_set(diag, TROVE_ERR_CORRUPT, at,
                                  "%s run at byte %zu has length 0; runs hold at least 1 "
                                  "value",
                                  h & 1 ? "bit-packed" : "RLE", at);
        if (h & 1) {
            uint64_t groups = h >> 1, nbytes = groups * w;
            if (nbytes > left)
                return trove_diag_set(diag, TROVE_ERR_TRUNCATED, len,
                                      "bit-packed run at byte %zu of %" PRIu64 " values needs "
                                      "%" PRIu64 " bytes, only %zu left; the page was cut short",
                                      at, groups * 8, nbytes, left);
            take = groups * 8 < n - pos ? (size_t)(groups * 8) : n - pos;
            if (out)
                rle_unpack_run(p, left, (size_t)nbytes, w, out + pos, take);
            p += nbytes;
        } else {
            uint32_t value = 0;
            if (vbytes > left)
                return trove_diag_set(diag, TROVE_ERR_TRUNCATED, len,
                                      "RLE run at byte %zu ends inside its %u-byte value; the "
                                      "page was cut short",
                                      at, vbytes);
            for (unsigned b = 0; b < vbytes; b++)
                value |= (uint32_t)p[b] << (8 * b);
            if (w < 32 && (value >> w) != 0)
                return trove_diag_set(diag, TROVE_ERR_CORRUPT, (size_t)(p - buf),
                                      "RLE run value %" PRIu32 " at byte %zu is wider than the "
                                      "bit width %u",
                                      value, (size_t)(p - buf), w);
            take = (h >> 1) < n - pos ? (size_t)(h >> 1) : n - pos;
            if (out)
                for (size_t k = 0; k < take; k++)
                    out[pos + k] = value;
            p += vbytes;
        }
        pos += take;
    }
    if (used_out)
        *used_out = (size_t)(p - buf);
    return TROVE_OK;
}

int trove__pq_rle_decode(const uint8_t *buf, size_t len, unsigned w, uint32_t *out, size_t n,
                         size_t *used_out, struct trove_diag *diag)
{
    size_t used = 0;
    int rc;

    if (w > 32)
        return trove_diag_set(diag, TROVE_ERR_INVALID, 0,
                              "RLE bit width %u is over 32", w);
    if ((!buf && len > 0) || (!out && n > 0))
        return trove_diag_set(diag, TROVE_ERR_INVALID, 0,
                              "RLE decode called without a buffer or an output");
    if (!buf)
        buf = no_bytes; /* len is 0; NULL + 0 is undefined */
    rc = rle_walk(buf, len, w, NULL, n, &used, diag);
    if (rc == TROVE_OK && n > 0) {
        rc = rle_walk(buf, len, w, out, n, &used, NULL);
        assert(rc == TROVE_OK);
    }
    if (rc == TROVE_OK && used_out)
        *used_out = used;
    return rc;
}

/* ---- DELTA_BINARY_PACKED ----------------------------------------------------------------- */

int trove__pq_delta_encode(const int64_t *v, size_t n, int is32, struct trove_bytes *out)
{
    size_t old_len = out ? out->len : 0;
    uint64_t rel[DELTA_BLOCK];
    uint8_t *p;
    int rc = TROVE_OK;

    if (!out || (n > 0 && !v)) {
        rc = TROVE_ERR_INVALID;
        goto fail;
    }
    if (is32)
        for (size_t i = 0; i < n; i++)
            if (v[i] < INT32_MIN || v[i] > INT32_MAX) {
                rc = TROVE_ERR_INVALID;
                goto fail;
            }
    rc = trove_bytes_reserve(out, 4 + 2 * TROVE_VARINT64_MAX);
    if (rc != TROVE_OK)
        goto fail;
    p = out->ptr + out->len;
    p = trove_put_varint(p, DELTA_BLOCK);
    p = trove_put_varint(p, DELTA_MINIBLOCKS);
    p = trove_put_varint(p, (uint64_t)n);
    p = trove_put_varint(p, trove_zigzag64(n > 0 ? v[0] : 0));
    out->len = (size_t)(p - out->ptr);

    for (size_t b = 1; b < n; b += DELTA_BLOCK) {
        size_t k = n - b < DELTA_BLOCK ? n - b : DELTA_BLOCK, bytes = TROVE_VARINT64_MAX +
                                                                      DELTA_MINIBLOCKS;
        unsigned width[DELTA_MINIBLOCKS];
        int64_t min;
        /* Deltas as signed values of the column's width (wrapping), then relative to min. */
        for (size_t i = 0; i < k; i++) {
            uint64_t d = (uint64_t)v[b + i] - (uint64_t)v[b + i - 1];
            rel[i] = is32 ? (uint64_t)(int64_t)(int32_t)(uint32_t)d : d;
        }
        min = (int64_t)rel[0];
        for (size_t i = 1; i < k; i++)
            if ((int64_t)rel[i] < min)
                min = (int64_t)rel[i];
        for (size_t i = 0; i < k; i++)
            rel[i] -= (uint64_t)min;
        for (size_t i = k; i < DELTA_BLOCK; i++)
            rel[i] = 0;
        for (unsigned m = 0; m < DELTA_MINIBLOCKS; m++) {
            uint64_t any = 0;
            if ((size_t)m * DELTA_MINI < k)
                for (unsigned i = 0; i < DELTA_MINI; i++)
                    any |= rel[m * DELTA_MINI + i];
            width[m] = width64(any);
            assert(!is32 || width[m] <= 32);
            bytes += 4 * width[m];
        }
        rc = trove_bytes_reserve(out, bytes);
        if (rc != TROVE_OK)
            goto fail;
        p = out->ptr + out->len;
        p = trove_put_varint(p, trove_zigzag64(min));
        for (unsigned m = 0; m < DELTA_MINIBLOCKS; m++)
            *p++ = (uint8_t)width[m];
        for (unsigned m = 0; m < DELTA_MINIBLOCKS && (size_t)m * DELTA_MINI < k; m++) {
            if (width[m] <= 32) {
                uint32_t r32[DELTA_MINI];
                for (unsigned i = 0; i < DELTA_MINI; i++)
                    r32[i] = (uint32_t)rel[m * DELTA_MINI + i];
                pack32_tab[width[m]](r32, p);
                p += 4 * width[m];
            } else {
                p = pack32_u64(rel + m * DELTA_MINI, width[m], p);
            }
        }
        out->len = (size_t)(p - out->ptr);
    }
    return TROVE_OK;
fail:
    if (out)
        out->len = old_len;
    return rc;
}

/* Read a ULEB128 of up to 64 bits at *pp for the delta decoder; on failure set diag. */
static int delta_varint(const uint8_t *buf, size_t len, const uint8_t **pp, uint64_t *v_out,
                        const char *what, struct trove_diag *diag)
{
    int why = 0;
    const uint8_t *q = trove_get_varint(*pp, buf + len, 64, v_out, &why);
    size_t at = (size_t)(*pp - buf);

    if (!q) {
        if (why == 1)
            return trove_diag_set(diag, TROVE_ERR_TRUNCATED, len,
                                  "DELTA_BINARY_PACKED data ends inside the %s at byte %zu; "
                                  "the page was cut short",
                                  what, at);
        return trove_diag_set(diag, TROVE_ERR_CORRUPT, at,
                              "DELTA_BINARY_PACKED %s at byte %zu is a varint longer than 10 "
                              "bytes or over 64 bits",
                              what, at);
    }
    *pp = q;
    return TROVE_OK;
}

/* Walk a DELTA_BINARY_PACKED stream of n values: check everything and, when out is not
 * NULL, write the values. */
static int delta_walk(const uint8_t *buf, size_t len, size_t n, int is32, int64_t *out,
                      size_t *used_out, struct trove_diag *diag)
{
    const uint8_t *p = buf, *end = buf + len, *field;
    const unsigned max_w = is32 ? 32 : 64;
    uint64_t block, mini, count, first, cur, rel[32];
    size_t per_mini, pos;
    int rc;

    field = p;
    rc = delta_varint(buf, len, &p, &block, "block size", diag);
    if (rc != TROVE_OK)
        return rc;
    if (block == 0 || block % 128 != 0)
        return trove_diag_set(diag, TROVE_ERR_CORRUPT, (size_t)(field - buf),
                              "DELTA_BINARY_PACKED block size %" PRIu64 " is not a positive "
                              "multiple of 128",
                              block);
    if (block > DELTA_MAX_BLOCK)
        return trove_diag_set(diag, TROVE_ERR_LIMIT, (size_t)(field - buf),
                              "DELTA_BINARY_PACKED block size %" PRIu64 " is over this "
                              "reader's limit of %u values",
                              block, DELTA_MAX_BLOCK);
    field = p;
    rc = delta_varint(buf, len, &p, &mini, "miniblock count", diag);
    if (rc != TROVE_OK)
        return rc;
    if (mini == 0 || block % mini != 0 || (block / mini) % 32 != 0)
        return trove_diag_set(diag, TROVE_ERR_CORRUPT, (size_t)(field - buf),
                              "DELTA_BINARY_PACKED block of %" PRIu64 " values cannot have %"
                              PRIu64 " miniblocks (each must hold a multiple of 32 values)",
                              block, mini);
    per_mini = (size_t)(block / mini);
    field = p;
    rc = delta_varint(buf, len, &p, &count, "value count", diag);
    if (rc != TROVE_OK)
        return rc;
    if (count != (uint64_t)n)
        return trove_diag_set(diag, TROVE_ERR_CORRUPT, (size_t)(field - buf),
                              "DELTA_BINARY_PACKED header counts %" PRIu64 " values where the "
                              "page has %zu",
                              count, n);
    rc = delta_varint(buf, len, &p, &first, "first value", diag);
    if (rc != TROVE_OK)
        return rc;
    cur = (uint64_t)trove_unzigzag64(first);
    if (out && n > 0)
        out[0] = is32 ? (int64_t)(int32_t)(uint32_t)cur : (int64_t)cur;

    for (pos = n > 0 ? 1 : 0; pos < n;) {
        const uint8_t *widths;
        uint64_t zmin, min;
        rc = delta_varint(buf, len, &p, &zmin, "min delta", diag);
        if (rc != TROVE_OK)
            return rc;
        min = (uint64_t)trove_unzigzag64(zmin);
        if ((uint64_t)(end - p) < mini)
            return trove_diag_set(diag, TROVE_ERR_TRUNCATED, len,
                                  "DELTA_BINARY_PACKED data ends inside the %" PRIu64
                                  " miniblock widths at byte %zu; the page was cut short",
                                  mini, (size_t)(p - buf));
        widths = p;
        p += mini;
        for (size_t m = 0; m < mini && pos < n; m++) {
            const unsigned w = widths[m];
            size_t nbytes = per_mini / 8 * w, take = n - pos < per_mini ? n - pos : per_mini;
            if (w > max_w)
                return trove_diag_set(diag, TROVE_ERR_CORRUPT, (size_t)(widths + m - buf),
                                      "DELTA_BINARY_PACKED miniblock width %u at byte %zu is "
                                      "over %u bits, the widest an %s delta can need",
                                      w, (size_t)(widths + m - buf), max_w,
                                      is32 ? "INT32" : "INT64");
            if (nbytes > (size_t)(end - p))
                return trove_diag_set(diag, TROVE_ERR_TRUNCATED, len,
                                      "DELTA_BINARY_PACKED miniblock at byte %zu needs %zu "
                                      "bytes, only %zu left; the page was cut short",
                                      (size_t)(p - buf), nbytes, (size_t)(end - p));
            if (out) {
                const uint8_t *q = p;
                for (size_t done = 0; done < take; done += 32, q += 4 * w) {
                    size_t c = take - done < 32 ? take - done : 32;
                    unpack32_64(q, 4 * (size_t)w, (size_t)(end - q), rel, w);
                    if (is32) {
                        uint32_t c32 = (uint32_t)cur, m32 = (uint32_t)min;
                        for (size_t i = 0; i < c; i++) {
                            c32 += m32 + (uint32_t)rel[i];
                            out[pos + done + i] = (int64_t)(int32_t)c32;
                        }
                        cur = c32;
                    } else {
                        for (size_t i = 0; i < c; i++) {
                            cur += min + rel[i];
                            out[pos + done + i] = (int64_t)cur;
                        }
                    }
                }
            }
            p += nbytes;
            pos += take;
        }
    }
    if (used_out)
        *used_out = (size_t)(p - buf);
    return TROVE_OK;
}

int trove__pq_delta_decode(const uint8_t *buf, size_t len, size_t n, int is32, int64_t *out,
                           size_t *used_out, struct trove_diag *diag)
{
    size_t used = 0;
    int rc;

    if ((!buf && len > 0) || (!out && n > 0))
        return trove_diag_set(diag, TROVE_ERR_INVALID, 0,
                              "delta decode called without a buffer or an output");
    if (!buf)
        buf = no_bytes;
    rc = delta_walk(buf, len, n, is32, NULL, &used, diag);
    if (rc == TROVE_OK && n > 0) {
        rc = delta_walk(buf, len, n, is32, out, &used, NULL);
        assert(rc == TROVE_OK);
    }
    if (rc == TROVE_OK && used_out)
        *used_out = used;
    return rc;
}

/* ---- PLAIN byte arrays ------------------------------------------------------------------- */

int trove__pq_plain_encode_strings(const char *const *str, const uint32_t *len, size_t n,
                                   struct trove_bytes *out)
{
    size_t total = 0;
    uint8_t *p;
    int rc;

    if (!out || (n > 0 && (!str || !len)))
        return TROVE_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        if (len[i] > 0 && !str[i])
            return TROVE_ERR_INVALID;
        if (total > SIZE_MAX - 4 - len[i])
            return TROVE_ERR_NOMEM;
        total += 4 + (size_t)len[i];
    }
    if (n == 0)
        return TROVE_OK;
    rc = trove_bytes_reserve(out, total);
    if (rc != TROVE_OK)
        return rc;
    p = out->ptr + out->len;
    for (size_t i = 0; i < n; i++) {
        trove__put_le32(p, len[i]);
        if (len[i] > 0)
            memcpy(p + 4, str[i], len[i]);
        p += 4 + (size_t)len[i];
    }
    out->len += total;
    return TROVE_OK;
}

int trove__pq_plain_decode_strings(const uint8_t *buf, size_t len, size_t n, uint32_t max_len,
                                   uint64_t *start, uint32_t *vlen, size_t *used_out,
                                   struct trove_diag *diag)
{
    size_t at = 0;

    if ((!buf && len > 0) || (n > 0 && (!start || !vlen)))
        return trove_diag_set(diag, TROVE_ERR_INVALID, 0,
                              "PLAIN strings decode called without a buffer or an output");
    /* First check every length, then write: a failed decode leaves the outputs as they were. */
    for (size_t k = 0; k < n; k++) {
        uint32_t l;
        if (len - at < 4)
            return trove_diag_set(diag, TROVE_ERR_TRUNCATED, len,
                                  "PLAIN data ends inside the length of value %zu of %zu at "
                                  "byte %zu; the page was cut short",
                                  k, n, at);
        l = trove__get_le32(buf + at);
        if (l > max_len)
            return trove_diag_set(diag, TROVE_ERR_LIMIT, at,
                                  "PLAIN value %zu at byte %zu is %" PRIu32 " bytes, over the "
                                  "limit of %" PRIu32,
                                  k, at, l, max_len);
        if (len - at - 4 < l)
            return trove_diag_set(diag, TROVE_ERR_TRUNCATED, len,
                                  "PLAIN value %zu at byte %zu is %" PRIu32 " bytes but only "
                                  "%zu are left; the page was cut short",
                                  k, at, l, len - at - 4);
        at += 4 + (size_t)l;
    }
    at = 0;
    for (size_t k = 0; k < n; k++) {
        vlen[k] = trove__get_le32(buf + at);
        start[k] = at + 4;
        at += 4 + (size_t)vlen[k];
    }
    if (used_out)
        *used_out = at;
    return TROVE_OK;
}

/* ---- dictionary builders ----------------------------------------------------------------- */

/*
 * Open addressing with linear probing, at most half full, the size a power of two, the home
 * slot the top bits of key * 2^64/phi (Fibonacci hashing). A slot holds a 64-bit key — the
 * value itself for ints, its XXH3 hash for strings — and its entry's index + 1 (0: empty);
 * for strings also the entry's bytes and length, so that a probe compares within the slot
 * and reads only the entry's own bytes, not the caller's arrays at a far row. Entries are
 * kept as the row of their first appearance. Growing rehashes from the slots alone.
 */
struct dict_slot {
    uint64_t key;
    const char *str;
    uint32_t len;
    uint32_t idx1;
};

struct dict {
    struct dict_slot *tab;
    size_t size;     /* slots, a power of two */
    unsigned shift;  /* 64 - log2(size) */
    size_t *first;   /* first[k]: the row where entry k first appears */
    size_t cap, nd, limit;
};

static size_t dict_home(const struct dict *d, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> d->shift);
}

static int dict_init(struct dict *d, size_t max_distinct)
{
    memset(d, 0, sizeof *d);
    d->size = 64;
    d->shift = 64 - 6;
    /* Indices are uint32. */
    d->limit = max_distinct < (size_t)UINT32_MAX ? max_distinct : (size_t)UINT32_MAX;
    d->cap = 16;
    d->tab = calloc(d->size, sizeof *d->tab);
    d->first = malloc(d->cap * sizeof *d->first);
    return d->tab && d->first ? TROVE_OK : TROVE_ERR_NOMEM;
}

static void dict_free(struct dict *d)
{
    free(d->tab);
    free(d->first);
}

/* Make row the next entry, with key, in the empty slot s; grow past half full. Returns
 * TROVE_OK, TROVE_ERR_LIMIT (no room under the limit) or TROVE_ERR_NOMEM. */
static int dict_add(struct dict *d, size_t s, uint64_t key, const char *str, uint32_t len,
                    size_t row)
{
    struct dict_slot *big;

    assert(d->tab[s].idx1 == 0);
    if (d->nd >= d->limit)
        return TROVE_ERR_LIMIT;
    if (d->nd == d->cap) {
        size_t *p = NULL;
        if (d->cap <= SIZE_MAX / 2 / sizeof *p)
            p = realloc(d->first, 2 * d->cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        d->first = p;
        d->cap *= 2;
    }
    d->first[d->nd] = row;
    d->tab[s].key = key;
    d->tab[s].str = str;
    d->tab[s].len = len;
    d->tab[s].idx1 = (uint32_t)++d->nd;
    if (d->nd * 2 <= d->size)
        return TROVE_OK;
    big = calloc(d->size * 2, sizeof *big);
    if (!big)
        return TROVE_ERR_NOMEM;
    d->shift--;
    for (size_t k = 0; k < d->size; k++) {
        size_t t;
        if (d->tab[k].idx1 == 0)
            continue;
        t = dict_home(d, d->tab[k].key);
        while (big[t].idx1 != 0)
            t = (t + 1) & (d->size * 2 - 1);
        big[t] = d->tab[k];
    }
    free(d->tab);
    d->tab = big;
    d->size *= 2;
    return TROVE_OK;
}

/* The widest value range (max - min) given a direct table (4 bytes a slot) instead of hashing. */
#define DICT_DIRECT_RANGE (1u << 20)

/* Integers whose range is small (kind, depth, ids): a table indexed by value - min, each slot
 * 0 or the entry's index + 1; first appearance order as with hashing. Returns
 * TROVE_ERR_LIMIT past limit entries. */
#define DICT_DIRECT_LOOP(V)                                                                   \
    for (size_t i = 0; i < n; i++) {                                                          \
        const size_t k = (size_t)((uint64_t)(int64_t)(V)[i] - (uint64_t)min);                 \
        uint32_t e = map[k];                                                                  \
        if (e == 0) {                                                                         \
            if (nd >= limit) {                                                                \
                rc = TROVE_ERR_LIMIT;                                                         \
                goto out;                                                                     \
            }                                                                                 \
            vals[nd] = (int64_t)(V)[i];                                                       \
            e = map[k] = (uint32_t)++nd;                                                      \
        }                                                                                     \
        idx_out[i] = e - 1;                                                                   \
    }

static int dict_direct(const int64_t *v64, const int32_t *v32, size_t n, int64_t min,
                       size_t range, size_t limit, uint32_t *idx_out, int64_t **values_out,
                       size_t *ndistinct_out)
{
    size_t nd = 0, cap = range + 1 < n ? range + 1 : n;
    uint32_t *map = calloc(range + 1, sizeof *map);
    int64_t *vals = malloc((cap ? cap : 1) * sizeof *vals);
    int rc = TROVE_ERR_NOMEM;

    if (!map || !vals)
        goto out;
    rc = TROVE_OK;
    if (v64) {
        DICT_DIRECT_LOOP(v64)
    } else {
        DICT_DIRECT_LOOP(v32)
    }
    *values_out = vals;
    *ndistinct_out = nd;
    vals = NULL;
out:
    free(map);
    free(vals);
    return rc;
}

/* Hashing, for values spread wide. */
static int dict_hashed(const int64_t *v64, const int32_t *v32, size_t n, size_t max_distinct,
                       uint32_t *idx_out, int64_t **values_out, size_t *ndistinct_out)
{
    struct dict d = {0};
    int64_t *vals = NULL;
    int rc;

    rc = dict_init(&d, max_distinct);
    if (rc != TROVE_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const uint64_t key = v64 ? (uint64_t)v64[i] : (uint64_t)(int64_t)v32[i];
        size_t s = dict_home(&d, key);
        while (d.tab[s].idx1 != 0 && d.tab[s].key != key)
            s = (s + 1) & (d.size - 1);
        if (d.tab[s].idx1 == 0) {
            rc = dict_add(&d, s, key, NULL, 0, i);
            if (rc != TROVE_OK)
                goto out;
            idx_out[i] = (uint32_t)(d.nd - 1);
        } else {
            idx_out[i] = d.tab[s].idx1 - 1;
        }
    }
    vals = malloc((d.nd ? d.nd : 1) * sizeof *vals);
    if (!vals) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < d.nd; k++)
        vals[k] = v64 ? v64[d.first[k]] : (int64_t)v32[d.first[k]];
    *values_out = vals;
    *ndistinct_out = d.nd;
    rc = TROVE_OK;
out:
    dict_free(&d);
    return rc;
}

static int dict_build_ints(const int64_t *v64, const int32_t *v32, size_t n,
                           size_t max_distinct, uint32_t *idx_out, int64_t **values_out,
                           size_t *ndistinct_out)
{
    size_t limit = max_distinct < (size_t)UINT32_MAX ? max_distinct : (size_t)UINT32_MAX;
    int64_t min = 0, max = 0;

    if (!values_out || !ndistinct_out || (n > 0 && (!(v64 || v32) || !idx_out)))
        return TROVE_ERR_INVALID;
    if (n > 0) {
        if (v64) {
            min = max = v64[0];
            for (size_t i = 1; i < n; i++) {
                min = v64[i] < min ? v64[i] : min;
                max = v64[i] > max ? v64[i] : max;
            }
        } else {
            int32_t mi = v32[0], ma = v32[0];
            for (size_t i = 1; i < n; i++) {
                mi = v32[i] < mi ? v32[i] : mi;
                ma = v32[i] > ma ? v32[i] : ma;
            }
            min = mi;
            max = ma;
        }
        if ((uint64_t)max - (uint64_t)min < DICT_DIRECT_RANGE &&
            (uint64_t)max - (uint64_t)min <= 2 * (uint64_t)n + 4096)
            return dict_direct(v64, v32, n, min, (size_t)((uint64_t)max - (uint64_t)min),
                               limit, idx_out, values_out, ndistinct_out);
    }
    return dict_hashed(v64, v32, n, max_distinct, idx_out, values_out, ndistinct_out);
}

int trove__pq_dict_build_int(const int64_t *v, size_t n, size_t max_distinct, uint32_t *idx_out,
                             int64_t **values_out, size_t *ndistinct_out)
{
    return dict_build_ints(v, NULL, n, max_distinct, idx_out, values_out, ndistinct_out);
}

int trove__pq_dict_build_i32(const int32_t *v, size_t n, size_t max_distinct, uint32_t *idx_out,
                             int64_t **values_out, size_t *ndistinct_out)
{
    return dict_build_ints(NULL, v, n, max_distinct, idx_out, values_out, ndistinct_out);
}

int trove__pq_dict_build_str(const char *const *str, const uint32_t *len, size_t n,
                             size_t max_distinct, uint32_t *idx_out, size_t **first_out,
                             size_t *ndistinct_out)
{
    struct dict d = {0};
    int rc;

    if (!first_out || !ndistinct_out || (n > 0 && (!str || !len || !idx_out))) {
        rc = TROVE_ERR_INVALID;
        goto out;
    }
    rc = dict_init(&d, max_distinct);
    if (rc != TROVE_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const char *p = str[i];
        const uint32_t l = len[i];
        uint64_t h;
        size_t s;
        if (l > 0 && !p) {
            rc = TROVE_ERR_INVALID;
            goto out;
        }
        h = XXH3_64bits(l ? p : "", l);
        for (s = dict_home(&d, h); d.tab[s].idx1 != 0; s = (s + 1) & (d.size - 1))
            if (d.tab[s].key == h && d.tab[s].len == l &&
                (l == 0 || memcmp(d.tab[s].str, p, l) == 0))
                break;
        if (d.tab[s].idx1 == 0) {
            rc = dict_add(&d, s, h, p, l, i);
            if (rc != TROVE_OK)
                goto out;
            idx_out[i] = (uint32_t)(d.nd - 1);
        } else {
            idx_out[i] = d.tab[s].idx1 - 1;
        }
    }
    *first_out = d.first;
    *ndistinct_out = d.nd;
    d.first = NULL;
    rc = TROVE_OK;
out:
    dict_free(&d);
    return rc;
}

/* ---- the pages of a dictionary-encoded column chunk ------------------------------------- */

/*
 * Every data page states the bit width of its indices, so a page need only be as wide as
 * its largest index. A dynamic program over units of 8 rows (what a bit-packed group holds,
 * u of them, the last one maybe partial) finds where to cut:
 *
 *   d[u][w]  the fewest bytes for units 0..u with unit u in a page of width w (w at least
 *            the width of unit u's largest index; +inf below): w bytes for the unit, plus
 *            either d[u - 1][w] (the same page goes on) or min over x of d[u - 1][x] +
 *            page_cost (a new page starts at u)
 *
 * counting a unit at w bytes (8 values at w bits) as if bit-packed: runs make some units
 * cheaper, at any width, so the cut points stand. O(u * (W + 1)) time; the way back is one
 * bit per (unit, width) and the best width before each unit.
 */
#ifndef LAYOUT_UNIT
#define LAYOUT_UNIT 8
#endif
struct layout_dp {
    uint64_t *cont;  /* cont[u] bit w: unit u's page of width w went on from unit u - 1 */
    uint8_t *before; /* before[u]: the width of the page that ended at unit u - 1 */
};

static uint64_t layout_cost(const uint8_t *uw, size_t nu, unsigned wmax, uint64_t page_cost,
                            struct layout_dp *way, unsigned *last_w)
{
    const uint64_t inf = UINT64_MAX / 4;
    uint64_t d[33] = {0}, best = 0;
    unsigned best_w = 0, plo = 0;

    /* d[w] holds for w >= plo, the previous unit's width; below it a page cannot be. */
    for (size_t u = 0; u < nu; u++) {
        const uint64_t fresh = best + page_cost;
        const unsigned lo = uw[u];
        uint64_t cont = 0, nb = inf;
        unsigned nbw = wmax;
        if (way)
            way->before[u] = (uint8_t)best_w;
        for (unsigned w = lo; w <= wmax; w++) {
            const uint64_t on = u > 0 && w >= plo && d[w] <= fresh;
            const uint64_t x = (on ? d[w] : fresh) + w * (LAYOUT_UNIT / 8);
            d[w] = x;
            cont |= on << w;
            nbw = x < nb ? w : nbw;
            nb = x < nb ? x : nb;
        }
        if (way)
            way->cont[u] = cont;
        best = nb;
        best_w = nbw;
        plo = lo;
    }
    if (last_w)
        *last_w = best_w;
    return best;
}

/* The width of each unit's largest index (the width of their bitwise or), the indices
 * mapped through rank if not NULL. */
static void unit_widths(const uint32_t *idx, size_t n, const uint32_t *rank, uint8_t *uw)
{
    size_t u = 0, s = 0;

    if (rank) {
        for (; s + LAYOUT_UNIT <= n; s += LAYOUT_UNIT, u++) {
            uint32_t m = 0;
            for (size_t r = s; r < s + LAYOUT_UNIT; r++)
                m |= rank[idx[r]];
            uw[u] = (uint8_t)width64(m);
        }
    } else {
        for (; s + LAYOUT_UNIT <= n; s += LAYOUT_UNIT, u++) {
            uint32_t m = 0;
            for (size_t r = s; r < s + LAYOUT_UNIT; r++)
                m |= idx[r];
            uw[u] = (uint8_t)width64(m);
        }
    }
    if (s < n) {
        uint32_t m = 0;
        for (; s < n; s++)
            m |= rank ? rank[idx[s]] : idx[s];
        uw[u] = (uint8_t)width64(m);
    }
}

/* ---- a second thread for the large steps ---------------------------------------------- */

/* Chunks of at least this many rows have their two halves of work done side by side. */
#define SIDE_BY_SIDE_ROWS 65536u

struct side_job {
    void (*fn)(void *);
    void *arg;
    pthread_t thread;
    int started;
};

static void *side_main(void *p)
{
    struct side_job *j = p;
    j->fn(j->arg);
    return NULL;
}

/* Run fn(arg) on a new thread, or here and now if none can be started (or side is 0). */
static void side_start(struct side_job *j, void (*fn)(void *), void *arg, int side)
{
    j->fn = fn;
    j->arg = arg;
    j->started = side && pthread_create(&j->thread, NULL, side_main, j) == 0;
    if (!j->started)
        fn(arg);
}

static void side_join(struct side_job *j)
{
    if (j->started)
        pthread_join(j->thread, NULL);
}

/* One order's unit widths and page layout. */
struct order_eval {
    const uint32_t *idx, *rank;
    size_t n, nu;
    uint8_t *uw;
    unsigned wmax, last_w;
    uint64_t page_cost, cost;
    struct layout_dp *way;
};

static void order_eval_run(void *p)
{
    struct order_eval *e = p;
    unit_widths(e->idx, e->n, e->rank, e->uw);
    e->cost = layout_cost(e->uw, e->nu, e->wmax, e->page_cost, e->way, &e->last_w);
}

struct by_count {
    uint32_t count;
    uint32_t k;
};

/* Dictionaries up to this size are counted in 4 interleaved tables (a run of one value would
 * otherwise wait on its own increments). */
#define COUNT_SPLIT_MAX 4096u

/* Count the uses of each entry into bc[0..nd) (zeroed by the caller; checks every index is
 * below nd) and set rank[k] to entry k's place by descending count, ties by k: a stable
 * radix sort of the counts' complements, 16 bits at a time. */
static int count_order(const uint32_t *idx, size_t n, size_t nd, struct by_count *bc,
                       uint32_t *rank)
{
    const size_t ways = nd <= COUNT_SPLIT_MAX ? 4 : 1;
    uint32_t *cnt = calloc(ways * (nd ? nd : 1), sizeof *cnt);
    struct by_count *tmp = malloc((nd ? nd : 1) * sizeof *tmp);
    size_t *hist = malloc(65536 * sizeof *hist);
    int rc = TROVE_ERR_NOMEM;

    if (!cnt || !tmp || !hist)
        goto out;
    rc = TROVE_ERR_INVALID;
    for (size_t r = 0; r < n; r++) {
        if (idx[r] >= nd)
            goto out;
        cnt[(r & (ways - 1)) * nd + idx[r]]++;
    }
    for (size_t k = 0; k < nd; k++) {
        bc[k].k = (uint32_t)k;
        for (size_t t = 0; t < ways; t++)
            bc[k].count += cnt[t * nd + k];
    }
    for (unsigned shift = 0; shift < 32; shift += 16) {
        struct by_count *from = shift ? tmp : bc, *to = shift ? bc : tmp;
        size_t sum = 0;
        memset(hist, 0, 65536 * sizeof *hist);
        for (size_t k = 0; k < nd; k++)
            hist[(~from[k].count >> shift) & 0xffff]++;
        for (size_t d = 0; d < 65536; d++) {
            size_t c = hist[d];
            hist[d] = sum;
            sum += c;
        }
        for (size_t k = 0; k < nd; k++)
            to[hist[(~from[k].count >> shift) & 0xffff]++] = from[k];
    }
    for (size_t k = 0; k < nd; k++)
        rank[bc[k].k] = (uint32_t)k;
    rc = TROVE_OK;
out:
    free(cnt);
    free(tmp);
    free(hist);
    return rc;
}

int trove__pq_dict_layout(uint32_t *idx, size_t n, size_t nd, size_t max_rows, size_t page_cost,
                          uint32_t *order_out, struct trove__pq_dict_page **pages_out,
                          size_t *npages_out)
{
    const size_t nu = n / LAYOUT_UNIT + (n % LAYOUT_UNIT != 0), nu1 = nu ? nu : 1;
    struct by_count *bc = NULL;
    uint32_t *rank = NULL;
    uint8_t *uw = NULL, *uw_count = NULL;
    struct layout_dp way = {NULL, NULL}, way_count = {NULL, NULL};
    struct trove__pq_dict_page *pages = NULL;
    size_t npages = 0, cap = 0, rows_max = max_rows / 8 * 8;
    unsigned wmax = nd > 1 ? width64(nd - 1) : 0, w = 0, w_count = 0;
    int rc = TROVE_ERR_INVALID, by_count = 0;

    if (!pages_out || !npages_out || (nd > 0 && !order_out) || (n > 0 && !idx) ||
        nd > (size_t)UINT32_MAX + 1 || rows_max == 0)
        goto out;
    rc = TROVE_ERR_NOMEM;
    if (!(bc = calloc(nd ? nd : 1, sizeof *bc)) || !(rank = calloc(nd ? nd : 1, sizeof *rank)) ||
        !(uw = calloc(nu1, 1)) || !(uw_count = calloc(nu1, 1)) ||
        !(way.cont = malloc(nu1 * sizeof *way.cont)) || !(way.before = malloc(nu1)) ||
        !(way_count.cont = malloc(nu1 * sizeof *way.cont)) || !(way_count.before = malloc(nu1)))
        goto out;

    /* The order: first appearance (as the indices are) or descending count, ties by first
     * appearance; whichever the pages make smaller. */
    if ((rc = count_order(idx, n, nd, bc, rank)) != TROVE_OK)
        goto out;
    rc = TROVE_ERR_NOMEM;
    if (nu > 0) {
        struct order_eval built = {idx, NULL, n, nu, uw, wmax, 0, page_cost, 0, &way};
        struct order_eval counted = {idx, rank, n, nu, uw_count, wmax, 0, page_cost, 0,
                                     &way_count};
        struct side_job job;
        int same = 1;
        for (size_t k = 0; k < nd && same; k++)
            same = rank[k] == k;
        if (!same)
            side_start(&job, order_eval_run, &counted, n >= SIDE_BY_SIDE_ROWS);
        order_eval_run(&built);
        if (!same)
            side_join(&job);
        by_count = !same && counted.cost < built.cost;
        w = built.last_w;
        w_count = counted.last_w;
    }
    if (by_count) {
        struct layout_dp t = way;
        way = way_count;
        way_count = t;
        w = w_count;
    } else {
        for (size_t k = 0; k < nd; k++)
            rank[k] = (uint32_t)k;
    }

    /* The cuts, from the back (a page over rows_max rows becomes pieces of rows_max and
     * what is left, at its width); then the list is turned around. */
    if (nu > 0) {
        size_t end = n;
        for (size_t u = nu; u-- > 0;) {
            size_t len, full;
            if (u > 0 && (way.cont[u] >> w & 1))
                continue;
            len = end - u * LAYOUT_UNIT;
            full = len / rows_max;
            if (npages + full + 1 > cap) {
                size_t ncap = 2 * cap + full + 16;
                void *p = ncap < SIZE_MAX / sizeof *pages ? realloc(pages, ncap * sizeof *pages)
                                                          : NULL;
                if (!p)
                    goto out;
                pages = p;
                cap = ncap;
            }
            if (len % rows_max)
                pages[npages++] = (struct trove__pq_dict_page){len % rows_max, w};
            for (size_t k = 0; k < full; k++)
                pages[npages++] = (struct trove__pq_dict_page){rows_max, w};
            end = u * LAYOUT_UNIT;
            if (u > 0)
                w = way.before[u];
        }
        for (size_t i = 0; i < npages / 2; i++) {
            struct trove__pq_dict_page t = pages[i];
            pages[i] = pages[npages - 1 - i];
            pages[npages - 1 - i] = t;
        }
    }
    if (by_count)
        for (size_t r = 0; r < n; r++)
            idx[r] = rank[idx[r]];
    for (size_t k = 0; k < nd; k++)
        order_out[rank[k]] = (uint32_t)k;
    *pages_out = pages;
    *npages_out = npages;
    pages = NULL;
    rc = TROVE_OK;
out:
    free(bc);
    free(rank);
    free(uw);
    free(uw_count);
    free(way.cont);
    free(way.before);
    free(way_count.cont);
    free(way_count.before);
    free(pages);
    return rc;
}

/* The pages go to whichever of the two threads is free next (sizes vary a lot), each into
 * its own buffer; the bodies are then put together in page order. */
struct pages_job {
    const uint32_t *idx;
    const struct trove__pq_dict_page *pages;
    const size_t *start; /* start[q]: page q's first row */
    size_t npages;
    atomic_size_t *next; /* the next page nobody took */
    size_t *off, *len;   /* page q's bytes in the buffer of who[q] */
    uint8_t *who;
    uint8_t me;
    struct trove_bytes body;
    struct rle_dp dp;
    int rc;
};

static void pages_job_run(void *p)
{
    struct pages_job *j = p;
    size_t q;
    j->rc = TROVE_OK;
    while (j->rc == TROVE_OK && (q = atomic_fetch_add(j->next, 1)) < j->npages) {
        const uint8_t width = (uint8_t)j->pages[q].width;
        j->who[q] = j->me;
        j->off[q] = j->body.len;
        if ((j->rc = trove_bytes_append(&j->body, &width, 1)) == TROVE_OK)
            j->rc = rle_encode_with(&j->dp, j->idx + j->start[q], j->pages[q].rows, width,
                                    &j->body);
        j->len[q] = j->body.len - j->off[q];
    }
}

int trove__pq_dict_pages_encode(const uint32_t *idx, const struct trove__pq_dict_page *pages,
                                size_t npages, struct trove_bytes *out, size_t *off)
{
    struct pages_job job[2];
    struct side_job side;
    atomic_size_t next;
    size_t n = 0, old_len, *start = NULL, *len = NULL, *at = NULL;
    uint8_t *who = NULL;
    int rc = TROVE_ERR_INVALID;

    if (!out || (npages > 0 && (!idx || !pages || !off)))
        return TROVE_ERR_INVALID;
    old_len = out->len;
    memset(job, 0, sizeof job);
    for (size_t q = 0; q < npages; q++)
        if (pages[q].width > 32)
            goto out;
    rc = TROVE_ERR_NOMEM;
    if (!(start = malloc((npages + 1) * sizeof *start)) ||
        !(len = malloc((npages + 1) * sizeof *len)) || !(at = malloc((npages + 1) * sizeof *at)) ||
        !(who = malloc(npages + 1)))
        goto out;
    for (size_t q = 0; q < npages; q++) {
        start[q] = n;
        n += pages[q].rows;
    }
    atomic_init(&next, 0);
    for (uint8_t k = 0; k < 2; k++) {
        job[k].idx = idx;
        job[k].pages = pages;
        job[k].start = start;
        job[k].npages = npages;
        job[k].next = &next;
        job[k].off = at;
        job[k].len = len;
        job[k].who = who;
        job[k].me = k;
    }
    side_start(&side, pages_job_run, &job[1], n >= SIDE_BY_SIDE_ROWS && npages > 1);
    pages_job_run(&job[0]);
    side_join(&side);
    rc = job[0].rc != TROVE_OK ? job[0].rc : job[1].rc;
    for (size_t q = 0; q < npages && rc == TROVE_OK; q++) {
        off[q] = out->len;
        rc = trove_bytes_append(out, job[who[q]].body.ptr + at[q], len[q]);
    }
    if (rc == TROVE_OK)
        off[npages] = out->len;
out:
    if (rc != TROVE_OK)
        out->len = old_len;
    for (int k = 0; k < 2; k++) {
        trove_bytes_free(&job[k].body);
        rle_dp_free(&job[k].dp);
    }
    free(start);
    free(len);
    free(at);
    free(who);
    return rc;
}
