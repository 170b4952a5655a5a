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
 * Why it is built this way: the bit-packing kernels are pq_bitpack.c's (32 values at a time,
 * a kernel per width; 8 at a time for short runs). Each decoder walks its input twice: once
 * only to check every header and bound (cheap: a few bytes per run or per 128 values), then
 * again to write the outputs, so a failed decode leaves its outputs untouched. All delta arithmetic is in unsigned types
 * (wrapping is the format's rule, and signed overflow would be undefined).
 *
 * Thread safety: no state; every function is safe to call concurrently on distinct outputs.
 */
#include "pq_encoding.h"
#include "common/alloc.h"

#include "pq_bitpack.h"

#include "common/endian.h"
#include "common/varint.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* The largest delta block this decoder accepts (values); the format has no limit, writers
 * use 128 (parquet-mr, Arrow) to a few thousand. */
#define DELTA_MAX_BLOCK (1u << 20)
/* Run lengths are at most 2^31 - 1 (Encodings.md, note 3 of the RLE section). */
#define RLE_MAX_RUN 0x7fffffffu
/* The encoder's delta layout. */
#define DELTA_BLOCK 128u
#define DELTA_MINIBLOCKS 4u
#define DELTA_MINI (DELTA_BLOCK / DELTA_MINIBLOCKS)

/* What a decoder reads instead of a NULL buffer of length 0. */
static const uint8_t no_bytes[1];

/* ---- RLE / bit-packing hybrid ------------------------------------------------------------ */

/* Write an RLE run of count (1 .. RLE_MAX_RUN) copies of value, vb value bytes, at p (room
 * made by the caller: TROVE_VARINT32_MAX + 4); return the byte after it. */
static uint8_t *put_run_at(uint8_t *p, uint32_t value, size_t count, unsigned vb)
{
    p = trove_put_varint(p, (uint64_t)count << 1);
    for (unsigned b = 0; b < vb; b++)
        *p++ = (uint8_t)(value >> (8 * b));
    return p;
}

/* Write v[0..m) (1 .. RLE_MAX_RUN * 8 values) as one bit-packed run at width w at p (room
 * made by the caller: TROVE_VARINT32_MAX + ceil(m / 8) * w), a last partial group padded
 * with zeros; return the byte after it. */
static uint8_t *put_packed_at(uint8_t *p, const uint32_t *v, size_t m, unsigned w)
{
    const size_t full = m & ~(size_t)7;
    p = trove_put_varint(p, (uint64_t)(m / 8 + (m % 8 != 0)) << 1 | 1);
    p = trove__pq_pack_u32(v, full, w, p);
    if (m > full) {
        uint32_t last[8] = {0};
        memcpy(last, v + full, (m - full) * sizeof *v);
        p = trove__pq_pack_u32(last, 8, w, p);
    }
    return p;
}

/* Append an RLE run of count copies of value (count >= 1). */
static int rle_put_run(uint32_t value, size_t count, unsigned w, struct trove_bytes *out)
{
    int rc = TROVE_OK;

    while (count > 0 && rc == TROVE_OK) {
        size_t c = count > RLE_MAX_RUN ? RLE_MAX_RUN : count;
        if ((rc = trove_bytes_reserve(out, TROVE_VARINT32_MAX + 4)) == TROVE_OK)
            out->len = (size_t)(put_run_at(out->ptr + out->len, value, c, (w + 7) / 8) -
                                out->ptr);
        count -= c;
    }
    return rc;
}

/* Append v[0..m) (m >= 1) as bit-packed runs; a last partial group is padded with zeros. */
static int rle_put_literals(const uint32_t *v, size_t m, unsigned w, struct trove_bytes *out)
{
    const uint64_t max_vals = (uint64_t)RLE_MAX_RUN * 8;
    int rc = TROVE_OK;

    while (m > 0 && rc == TROVE_OK) {
        size_t c = (uint64_t)m > max_vals ? (size_t)max_vals : m;
        size_t groups = c / 8 + (c % 8 != 0);
        if (groups > (SIZE_MAX - TROVE_VARINT32_MAX) / (w ? w : 1))
            return TROVE_ERR_NOMEM;
        if ((rc = trove_bytes_reserve(out, TROVE_VARINT32_MAX + groups * w)) == TROVE_OK)
            out->len = (size_t)(put_packed_at(out->ptr + out->len, v, c, w) - out->ptr);
        v += c;
        m -= c;
    }
    return rc;
}

/* The greedy split, for values with few repeats (the caller has checked v and w). */
static int rle_greedy(const uint32_t *v, size_t n, unsigned w, struct trove_bytes *out)
{
    size_t old_len = out->len, lit = 0;
    int rc = TROVE_OK;

    /*
     * Greedy: a repeat of 8 or more becomes an RLE run, except that the pending literals
     * before it must be whole groups of 8, so the run's first values fill the last group;
     * what is left of the run is RLE'd if still 8 or more, else stays literal.
     *
     * Finding the repeats: one of 8 or more covers some [k, k + 4] with k a multiple of 4,
     * so only such windows are tested (branch-free, one branch per 4 values); a window of
     * equal values is widened to its whole repeat [i, j), whose start is not before the
     * end of the previous repeat found (a repeat boundary).
     */
    for (size_t k = 0, bound = 0; k + 4 < n; k += 4) {
        const uint32_t x = v[k];
        size_t i, j;
        if (((x ^ v[k + 1]) | (x ^ v[k + 2]) | (x ^ v[k + 3]) | (x ^ v[k + 4])) != 0)
            continue;
        for (i = k; i > bound && v[i - 1] == x;)
            i--;
        for (j = k + 5; j < n && v[j] == x;)
            j++;
        if (j - i >= 8) {
            size_t pending = i - lit, fill = (8 - pending % 8) % 8;
            if (j - i - fill >= 8) {
                if (pending + fill > 0) {
                    rc = rle_put_literals(v + lit, pending + fill, w, out);
                    if (rc != TROVE_OK)
                        goto fail;
                }
                rc = rle_put_run(x, j - i - fill, w, out);
                if (rc != TROVE_OK)
                    goto fail;
                lit = j;
            }
        }
        bound = j;
        k = (j + 3) / 4 * 4 - 4; /* the next window starts at or after j */
    }
    if (n > lit) {
        rc = rle_put_literals(v + lit, n - lit, w, out);
        if (rc != TROVE_OK)
            goto fail;
    }
    return TROVE_OK;
fail:
    out->len = old_len;
    return rc;
}


/*
 * Anchored runs, for narrow widths (1 or 2 bits, as a kind or a pid column) with many
 * repeats, where the shortest parse costs more time than it saves bytes: a repeat of at
 * least 32 / w values (the anchors) is always an RLE run; the values between two anchors (a
 * gap) become either one bit-packed run, filled up to a whole group from the next anchor's
 * head, or an RLE run per repeat, whichever is shorter. On the gen events' pid and kind
 * columns this comes within 0.3 % and 1 % of the shortest parse, at a third of its time.
 */
/* The gap v[from..to) of nruns repeats: as one bit-packed run (filled from the next anchor
 * unless final; *fill says how many it took) or as its repeats. */
static int rle_gap(const uint32_t *v, size_t from, size_t to, size_t nruns, unsigned w,
                   int final, size_t *fill, struct trove_bytes *out)
{
    const size_t g = to - from, vb = (w + 7) / 8;
    /* A gap's repeats are shorter than an anchor (under 32: one header byte each). */
    const size_t as_runs = nruns * (1 + vb);
    int rc = TROVE_OK;

    *fill = 0;
    if (g == 0)
        return TROVE_OK;
    if (as_runs <= trove_varint_len((uint64_t)(g + 7) / 8 << 1 | 1) + (g + 7) / 8 * w) {
        uint8_t *p;
        /* Room for them all at once: short runs are many. */
        if ((rc = trove_bytes_reserve(out, as_runs)) != TROVE_OK)
            return rc;
        p = out->ptr + out->len;
        for (size_t i = from, j; i < to; i = j) {
            for (j = i + 1; j < to && v[j] == v[i];)
                j++;
            assert(j - i < 64);
            p = put_run_at(p, v[i], j - i, (unsigned)vb);
        }
        out->len = (size_t)(p - out->ptr);
        return TROVE_OK;
    }
    *fill = final ? 0 : (8 - g % 8) % 8;
    return rle_put_literals(v + from, g + *fill, w, out);
}

static int rle_anchored(const uint32_t *v, size_t n, unsigned w, struct trove_bytes *out)
{
    const size_t min_anchor = 32 / w;
    size_t gap = 0, fill, streak = 1, runs = 0;
    int rc = TROVE_OK;

    assert(w >= 1 && w <= 2); /* anchors of 16 or more: a fill (7 at most) never eats one */

    /* streak: the length of the repeat ending at k - 1; runs: the repeats ended since the
     * gap began. Both kept without a branch on the data: a repeat that ends (at k) long
     * enough to be an anchor is rare. (Filling the gap's last group takes at most 7 of the
     * anchor's 16 or more values.) */
    for (size_t k = 1; k <= n && rc == TROVE_OK; k++) {
        /* At k = n, v[n - 1] is compared with itself: ends by k == n alone. */
        const size_t ends = (size_t)(v[k - (k == n)] != v[k - 1]) | (size_t)(k == n);
        const size_t i = k - streak;
        if (ends & (streak >= min_anchor)) {
            if ((rc = rle_gap(v, gap, i, runs, w, 0, &fill, out)) == TROVE_OK)
                rc = rle_put_run(v[i], streak - fill, w, out);
            gap = k;
            runs = 0;
        } else {
            runs += ends;
        }
        streak = (streak & (ends - 1)) + 1;
    }
    if (rc == TROVE_OK)
        rc = rle_gap(v, gap, n, runs, w, 1, &fill, out);
    return rc;
}

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
 * Values go through in blocks of at most RLE_DP_BLOCK, so that costs fit in 32 bits and the
 * scratch (9 bytes a value: a, b and the way back) stays in cache; a block of RLE_DP_TWO or
 * more goes as two chains interleaved, which the core runs side by side. Blocks and chains
 * are cut where the value changes (only a repeat longer than a block is split; a cut costs a
 * header at most), and only the last may end in a padded group. O(n) time.
 */
#define RLE_DP_BLOCK ((size_t)1 << 16)
/* Values of which fewer than 1 in RLE_DP_REPEATS equal the one before go the greedy way, and
 * so do values wider than RLE_DP_WIDEST bits: on the Chrome sample the shortest split of its
 * 7- and 9-bit tid and name_id pages saved 0.4 % of the file for a third of its write time. */
#define RLE_DP_REPEATS 4u
#define RLE_DP_WIDEST 5u

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

/* One forward pass over v[0..n): a[], b[] and flags[] of its own. best: the least a[i]
 * over the i in v[k - 1]'s repeat so far; run: that repeat's length, which bounds the run's
 * header (the walk back finds the i); prev is a[k - 1]. */
struct rle_chain {
    const uint32_t *v;
    uint32_t *a, *b;
    uint8_t *flags;
    uint32_t best, prev;
    uint32_t run;
};

static void rle_chain_init(struct rle_chain *c, const uint32_t *v, uint32_t *a, uint32_t *b,
                           uint8_t *flags)
{
    c->v = v;
    c->a = a;
    c->b = b;
    c->flags = flags;
    c->best = UINT32_MAX / 2;
    c->prev = 0;
    c->run = 0;
    a[0] = 0;
    b[0] = UINT32_MAX / 2;
    flags[0] = 0;
}

/* Step k (>= 1) of a chain, without branches on the data (which way a value goes is data),
 * so that two chains interleaved keep the core busy while each waits on its own a[k - 1]. */
static TROVE__ALWAYS_INLINE void rle_chain_step(struct rle_chain *c, size_t k, uint32_t w,
                                                 uint32_t vb, int full)
{
    /* full: k >= 8 and w > 0 (a constant where it is inlined, so the checks go away). */
    const uint32_t inf = UINT32_MAX / 2;
    const uint32_t same = full ? (uint32_t)(c->v[k - 1] == c->v[k - 2])
                               : (uint32_t)(k > 1) & (uint32_t)(c->v[k - 1] == c->v[k - 1 - (k > 1)]);
    const uint32_t held = c->best | (same - 1u), prev = c->prev;
    /* Before the first whole group (or at w = 0) b is out of reach. */
    const int reach = full || (k >= 8 && w > 0);
    const uint32_t o = reach ? c->a[k - 8] + 1 + w : inf, q = reach ? c->b[k - 8] + w : inf;
    const uint32_t bk = o <= q ? o : q;
    uint32_t r;
    c->best = prev < held ? prev : held;
    c->run = (c->run & (0u - same)) + 1;
    c->b[k] = bk;
    /* The header: the varint of run << 1 (run <= RLE_DP_BLOCK < 2^20). */
    r = c->best + vb + 1 + (c->run >= 64) + (c->run >= 8192);
    c->flags[k] = (uint8_t)((reach && o <= q ? RLE_B_OPEN : 0) | (r < bk ? RLE_A_RUN : 0));
    c->prev = r < bk ? r : bk;
    c->a[k] = c->prev;
}

/* Values at least this many go through as two chains side by side. */
#define RLE_DP_TWO 256u

/* A cut in v[0..n) nearest to want, where the value changes (so no repeat is cut), at most
 * reach away; 0 if there is none. */
static size_t rle_cut(const uint32_t *v, size_t n, size_t want, size_t reach)
{
    for (size_t d = 0; d <= reach; d++) {
        if (want + d < n && want + d > 0 && v[want + d - 1] != v[want + d])
            return want + d;
        if (d <= want && want - d > 0 && want - d < n && v[want - d - 1] != v[want - d])
            return want - d;
    }
    return 0;
}

static int rle_dp_finish(const struct rle_chain *ch, size_t n, unsigned w, int last,
                         struct trove_bytes *out);

/* Encode v[0..n) (n <= RLE_DP_BLOCK), the last block if last (else no padded group). */
static int rle_dp_block(struct rle_dp *s, const uint32_t *v, size_t n, unsigned w, int last,
                        struct trove_bytes *out)
{
    const uint32_t vb = (w + 7) / 8;
    struct rle_chain c0, c1;
    size_t h = n >= RLE_DP_TWO ? rle_cut(v, n, n / 2, n / 4) : 0;
    int rc;

    rle_chain_init(&c0, v, s->a, s->b, s->flags);
    if (h == 0) {
        size_t k = 1;
        for (; k <= n && (k < 8 || w == 0); k++)
            rle_chain_step(&c0, k, w, vb, 0);
        for (; k <= n; k++)
            rle_chain_step(&c0, k, w, vb, 1);
        return rle_dp_finish(&c0, n, w, last, out);
    }
    /* Two independent halves, cut where the value changes (which costs a header at most). */
    rle_chain_init(&c1, v + h, s->a + h + 1, s->b + h + 1, s->flags + h + 1);
    {
        const size_t both = h < n - h ? h : n - h, head = w == 0 ? both : both < 7 ? both : 7;
        size_t k = 1;
        for (; k <= head; k++) {
            rle_chain_step(&c0, k, w, vb, 0);
            rle_chain_step(&c1, k, w, vb, 0);
        }
        for (; k <= both; k++) {
            rle_chain_step(&c0, k, w, vb, 1);
            rle_chain_step(&c1, k, w, vb, 1);
        }
        for (size_t j = k; j <= h; j++)
            rle_chain_step(&c0, j, w, vb, w > 0 && j >= 8);
        for (size_t j = k; j <= n - h; j++)
            rle_chain_step(&c1, j, w, vb, w > 0 && j >= 8);
    }
    if ((rc = rle_dp_finish(&c0, h, w, 0, out)) != TROVE_OK)
        return rc;
    return rle_dp_finish(&c1, n - h, w, last, out);
}

/* The tail, the walk back and the runs of a chain's n values. */
static int rle_dp_finish(const struct rle_chain *ch, size_t n, unsigned w, int last,
                         struct trove_bytes *out)
{
    const uint32_t vb = (w + 7) / 8;
    const uint32_t *v = ch->v;
    uint32_t *a = ch->a, *b = ch->b, end_cost;
    uint8_t *flags = ch->flags;
    size_t tail_from = SIZE_MAX, j = n, nseg = 0;
    int in_b, rc = TROVE_OK;

    /* A last partial group [i, n), padded: after a run (a new header) or in one (b). */
    end_cost = a[n];
    for (size_t i = n > 7 ? n - 7 : 0; last && w > 0 && i < n; i++) {
        uint32_t o = a[i] + 1 + w, q = b[i] + w;
        if ((o < q ? o : q) < end_cost) {
            end_cost = o < q ? o : q;
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
        /* Only the block's last bit-packed run may end in a padded group. */
        p = out->ptr + out->len;
        p = flags[st] & RLE_AT_RUN ? put_run_at(p, v[st], e - st, vb)
                                   : put_packed_at(p, v + st, e - st, w);
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
    /* m + 2: two chains of h + 1 and m - h + 1 entries. */
    if (!(a = trove__realloc(s->a, (m + 2) * sizeof *a)))
        return TROVE_ERR_NOMEM;
    s->a = a;
    if (!(b = trove__realloc(s->b, (m + 2) * sizeof *b)))
        return TROVE_ERR_NOMEM;
    s->b = b;
    if (!(f = trove__realloc(s->flags, m + 2)))
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

/* trove__pq_rle_encode with the caller's scratch (kept for the next call); shortest: always
 * the shortest parse. */
static int rle_encode_with(struct rle_dp *s, const uint32_t *v, size_t n, unsigned w,
                           int shortest, struct trove_bytes *out)
{
    size_t old_len = out ? out->len : 0, m = n < RLE_DP_BLOCK ? n : RLE_DP_BLOCK, repeats = 0;
    uint32_t all = 0;
    int rc = TROVE_OK;

    if (!out || w > 32 || (n > 0 && !v)) {
        rc = TROVE_ERR_INVALID;
        goto out;
    }
    if (n > 0)
        all = v[0];
    for (size_t k = 1; k < n; k++) {
        all |= v[k];
        repeats += v[k] == v[k - 1];
    }
    if (w < 32 && (all >> w) != 0) {
        rc = TROVE_ERR_INVALID;
        goto out;
    }
    if (n == 0)
        goto out;
    /* Few repeats, or wide values: the greedy split. Narrow widths: runs between anchors.
     * The rest: the shortest. */
    if (!shortest && (repeats < n / RLE_DP_REPEATS || w > RLE_DP_WIDEST)) {
        rc = rle_greedy(v, n, w, out);
        goto out;
    }
    if (!shortest && w >= 1 && w <= 2) {
        rc = rle_anchored(v, n, w, out);
        goto out;
    }
    if ((rc = rle_dp_reserve(s, m)) != TROVE_OK)
        goto out;
    for (size_t at = 0, k; at < n && rc == TROVE_OK; at += k) {
        /* A block ends at its last change of value (only a repeat longer than a block is
         * cut). */
        k = n - at <= m ? n - at : rle_cut(v + at, m + 1, m, m);
        k = k ? k : m;
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
    int rc = rle_encode_with(&s, v, n, w, 0, out);
    rle_dp_free(&s);
    return rc;
}

int trove__pq_rle_encode_shortest(const uint32_t *v, size_t n, unsigned w,
                                  struct trove_bytes *out)
{
    struct rle_dp s = {NULL, NULL, NULL, 0};
    int rc = rle_encode_with(&s, v, n, w, 1, out);
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
        trove__pq_unpack32_tab[w](p, out + i);
        p += unit;
        avail -= unit;
        run_bytes -= unit;
        i += 32;
    }
    /* Whole groups of 8 (short runs, or a long run's last groups). */
    while (take - i >= 8 && avail >= w + 8) {
        trove__pq_unpack8_tab[w](p, out + i);
        p += w;
        avail -= w;
        run_bytes -= w;
        i += 8;
    }
    while (i < take) {
        size_t nb = run_bytes < unit ? run_bytes : unit, c = take - i < 32 ? take - i : 32;
        trove__pq_unpack32(p, nb, avail, tmp, w);
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
            width[m] = trove__pq_width64(any);
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
                trove__pq_pack32_tab[width[m]](r32, p);
                p += 4 * width[m];
            } else {
                p = trove__pq_pack32_u64(rel + m * DELTA_MINI, width[m], p);
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
                    trove__pq_unpack32_64(q, 4 * (size_t)w, (size_t)(end - q), rel, w);
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
    d->tab = trove__calloc(d->size, sizeof *d->tab);
    d->first = trove__malloc(d->cap * sizeof *d->first);
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
            p = trove__realloc(d->first, 2 * d->cap * sizeof *p);
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
    big = trove__calloc(d->size * 2, sizeof *big);
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
    uint32_t *map = trove__calloc(range + 1, sizeof *map);
    int64_t *vals = trove__malloc((cap ? cap : 1) * sizeof *vals);
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
    vals = trove__malloc((d.nd ? d.nd : 1) * sizeof *vals);
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
#define LAYOUT_UNIT 8
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

/* The width of each unit's largest index (the width of their bitwise or). */
static void unit_widths(const uint32_t *idx, size_t n, uint8_t *uw)
{
    size_t u = 0, s = 0;
    uint32_t m;

    for (; s + LAYOUT_UNIT <= n; s += LAYOUT_UNIT, u++) {
        m = 0;
        for (size_t r = s; r < s + LAYOUT_UNIT; r++)
            m |= idx[r];
        uw[u] = (uint8_t)trove__pq_width64(m);
    }
    if (s < n) {
        for (m = 0; s < n; s++)
            m |= idx[s];
        uw[u] = (uint8_t)trove__pq_width64(m);
    }
}

struct by_count {
    size_t count;
    uint32_t k;
};

/* Dictionaries up to this size are put in order of count, larger ones of first appearance.
 * The counts go into 4 interleaved tables (a run of one value would otherwise wait on its
 * own increments). */
#define LAYOUT_COUNT_MAX 256u


static int by_count_cmp(const void *pa, const void *pb)
{
    const struct by_count *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k;
}

/* Count the uses of each entry into bc[0..nd) (zeroed by the caller; nd <= LAYOUT_COUNT_MAX;
 * checks every index is below nd) and set rank[k] to entry k's place by descending count,
 * ties by k. */
static int count_order(const uint32_t *idx, size_t n, size_t nd, struct by_count *bc,
                       uint32_t *rank)
{
    size_t cnt[4][LAYOUT_COUNT_MAX];

    memset(cnt, 0, sizeof cnt);
    for (size_t r = 0; r < n; r++) {
        if (idx[r] >= nd)
            return TROVE_ERR_INVALID;
        cnt[r & 3][idx[r]]++;
    }
    for (size_t k = 0; k < nd; k++) {
        bc[k].k = (uint32_t)k;
        bc[k].count = cnt[0][k] + cnt[1][k] + cnt[2][k] + cnt[3][k];
    }
    qsort(bc, nd, sizeof *bc, by_count_cmp);
    for (size_t k = 0; k < nd; k++)
        rank[bc[k].k] = (uint32_t)k;
    return TROVE_OK;
}

/* A chunk not cut: the order as built, pages of rows_max rows, each as wide as its largest
 * index, all found in one pass (which also checks the indices). */
static int layout_uncut(const uint32_t *idx, size_t n, size_t nd, size_t rows_max,
                        uint32_t *order_out, struct trove__pq_dict_page **pages_out,
                        size_t *npages_out)
{
    const size_t npages = n / rows_max + (n % rows_max != 0);
    struct trove__pq_dict_page *pages = trove__malloc((npages ? npages : 1) * sizeof *pages);
    uint32_t top = 0;

    if (!pages)
        return TROVE_ERR_NOMEM;
    for (size_t q = 0, at = 0; q < npages; q++, at += rows_max) {
        const size_t rows = n - at < rows_max ? n - at : rows_max;
        uint32_t m = 0;
        for (size_t r = at; r < at + rows; r++) {
            m |= idx[r];
            top = idx[r] > top ? idx[r] : top;
        }
        pages[q].rows = rows;
        pages[q].width = trove__pq_width64(m);
    }
    if (n > 0 && top >= nd) {
        free(pages);
        return TROVE_ERR_INVALID;
    }
    for (size_t k = 0; k < nd; k++)
        order_out[k] = (uint32_t)k;
    *pages_out = pages;
    *npages_out = npages;
    return TROVE_OK;
}

int trove__pq_dict_layout(uint32_t *idx, size_t n, size_t nd, size_t max_rows, size_t page_cost,
                          uint32_t *order_out, struct trove__pq_dict_page **pages_out,
                          size_t *npages_out)
{
    const size_t nu = n / LAYOUT_UNIT + (n % LAYOUT_UNIT != 0), nu1 = nu ? nu : 1;
    const unsigned wmax = nd > 1 ? trove__pq_width64(nd - 1) : 0;
    /* Pages are cut for 4 bits or more: at 3 or fewer a narrower page needs a stretch with
     * at most half the entries, and the gen events' 3-bit extra column has none. */
    const int cut = wmax > 3, by_count = cut && nd <= LAYOUT_COUNT_MAX;
    struct by_count *bc = NULL;
    uint32_t *rank = NULL, top = 0;
    uint8_t *uw = NULL;
    struct layout_dp way = {NULL, NULL};
    struct trove__pq_dict_page *pages = NULL;
    size_t npages = 0, rows_max = max_rows / 8 * 8;
    unsigned w = wmax;
    int rc = TROVE_ERR_INVALID, remap = 0;

    if (!pages_out || !npages_out || (nd > 0 && !order_out) || (n > 0 && !idx) ||
        nd > (size_t)UINT32_MAX + 1 || rows_max == 0)
        goto out;
    if (!cut) {
        rc = layout_uncut(idx, n, nd, rows_max, order_out, pages_out, npages_out);
        goto out;
    }
    rc = TROVE_ERR_NOMEM;
    if (!(bc = trove__calloc(by_count ? nd : 1, sizeof *bc)) ||
        !(rank = trove__calloc(nd ? nd : 1, sizeof *rank)) ||
        !(uw = trove__calloc(nu1, 1)) || !(way.cont = trove__malloc(nu1 * sizeof *way.cont)) ||
        !(way.before = trove__calloc(nu1, 1)))
        goto out;

    /* The order: a small dictionary (threads, kinds, depths) is used all along, so by
     * descending count (ties by first appearance) the common entries take the narrow
     * indices; a large one (names) keeps getting new entries, so in order of first
     * appearance (as the indices are) the early pages stay narrow. */
    if (by_count) {
        if ((rc = count_order(idx, n, nd, bc, rank)) != TROVE_OK)
            goto out;
        for (size_t k = 0; k < nd; k++)
            remap |= rank[k] != k;
    } else {
        for (size_t r = 0; r < n; r++)
            top = idx[r] > top ? idx[r] : top;
        if (n > 0 && top >= nd) {
            rc = TROVE_ERR_INVALID;
            goto out;
        }
        for (size_t k = 0; k < nd; k++)
            rank[k] = (uint32_t)k;
    }
    /* The indices in the new order, each unit's width, the program, then the pages from the
     * back (a page over rows_max rows becomes pieces of rows_max and what is left, at its
     * width). */
    if (remap)
        for (size_t r = 0; r < n; r++)
            idx[r] = rank[idx[r]];
    if (nu > 0) {
        unit_widths(idx, n, uw);
        layout_cost(uw, nu, wmax, page_cost, &way, &w);
    }
    for (int fill = 0; fill < 2; fill++) {
        size_t end = n, at = npages;
        unsigned pw = w;
        if (fill && !(pages = trove__malloc((npages ? npages : 1) * sizeof *pages))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        for (size_t u = nu; u-- > 0;) {
            size_t len;
            if (u > 0 && (way.cont[u] >> pw & 1))
                continue;
            len = end - u * LAYOUT_UNIT;
            for (size_t piece; len > 0; len -= piece, end -= piece) {
                piece = len % rows_max ? len % rows_max : rows_max;
                if (fill)
                    pages[--at] = (struct trove__pq_dict_page){piece, pw};
                else
                    npages++;
            }
            if (u > 0)
                pw = way.before[u];
        }
    }
    /* Each page exactly as wide as its largest index, which a piece of a page split at
     * rows_max may not need: the widest of its units (a page starts at a unit, and all but
     * the last hold whole units). */
    for (size_t q = 0, u = 0; q < npages; q++) {
        unsigned m = 0;
        for (size_t e = u + (pages[q].rows + LAYOUT_UNIT - 1) / LAYOUT_UNIT; u < e; u++)
            m = uw[u] > m ? uw[u] : m;
        pages[q].width = m;
    }
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
    free(way.cont);
    free(way.before);
    free(pages);
    return rc;
}

int trove__pq_dict_pages_encode(const uint32_t *idx, const struct trove__pq_dict_page *pages,
                                size_t npages, struct trove_bytes *out, size_t *off)
{
    struct rle_dp dp = {NULL, NULL, NULL, 0};
    size_t old_len, at = 0;
    int rc = TROVE_OK;

    if (!out || (npages > 0 && (!idx || !pages || !off)))
        return TROVE_ERR_INVALID;
    old_len = out->len;
    for (size_t q = 0; q < npages && rc == TROVE_OK; q++) {
        const uint8_t width = (uint8_t)pages[q].width;
        off[q] = out->len;
        if (pages[q].width > 32)
            rc = TROVE_ERR_INVALID;
        else if ((rc = trove_bytes_append(out, &width, 1)) == TROVE_OK)
            rc = rle_encode_with(&dp, idx + at, pages[q].rows, width, 0, out);
        at += pages[q].rows;
    }
    if (rc == TROVE_OK)
        off[npages] = out->len;
    else
        out->len = old_len;
    rle_dp_free(&dp);
    return rc;
}
