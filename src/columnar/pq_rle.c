/*
 * pq_rle.c: Parquet's RLE / bit-packing hybrid (pq_encoding.h; Encodings.md of
 * apache/parquet-format), in which the writer stores a dictionary page's indices and the
 * reader reads indices and levels.
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
 * Why it is built this way: how values are split into runs and bit-packed groups decides
 * the size of a dictionary page, and the best split costs time, so the encoder chooses by
 * what the values are: greedily when few repeat or the width is over 5 bits, anchored runs
 * at 1 or 2 bits, else the shortest split, a dynamic program (each is described where it is
 * written). Bit-packed runs go through pq_bitpack.c's kernels (32 values at a time; 8 at a
 * time for short runs). The decoder walks its input twice: once only to check every header
 * and bound (cheap: a few bytes per run), then again to write the outputs, so a failed
 * decode leaves its outputs untouched.
 *
 * Thread safety: no state; every function is safe to call concurrently on distinct outputs
 * (a scratch, trove__pq_rle_encode_with, belongs to one caller).
 */
#include "pq_encoding.h"
#include "common/alloc.h"

#include "pq_bitpack.h"

#include "common/varint.h"
#include "common/fail.h"
#include "common/sealed.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Run lengths are at most 2^31 - 1 (Encodings.md, note 3 of the RLE section). */
#define RLE_MAX_RUN 0x7fffffffu

/* What the decoder reads instead of a NULL buffer of length 0. */
static const uint8_t no_bytes[1];

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
    p = trove_put_varint(p, trove__div_up(m, 8) << 1 | 1);
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
            out->len = (size_t)(put_run_at(out->ptr + out->len, value, c,
                                           (unsigned)trove__div_up(w, 8)) -
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
        size_t groups = (size_t)trove__div_up(c, 8);
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
                        goto out;
                }
                rc = rle_put_run(x, j - i - fill, w, out);
                if (rc != TROVE_OK)
                    goto out;
                lit = j;
            }
        }
        bound = j;
        k = (j + 3) / 4 * 4 - 4; /* the next window starts at or after j */
    }
    if (n > lit) {
        rc = rle_put_literals(v + lit, n - lit, w, out);
        if (rc != TROVE_OK)
            goto out;
    }
    rc = TROVE_OK;
out:
    if (rc != TROVE_OK)
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
    const size_t g = to - from, vb = (size_t)trove__div_up(w, 8);
    const size_t groups = (size_t)trove__div_up(g, 8);
    /* A gap's repeats are shorter than an anchor (under 32: one header byte each). */
    const size_t as_runs = nruns * (1 + vb);
    int rc = TROVE_OK;

    *fill = 0;
    if (g == 0)
        return TROVE_OK;
    if (as_runs <= trove_varint_len((uint64_t)groups << 1 | 1) + groups * w) {
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
static int rle_dp_block(struct trove__pq_rle_scratch *s, const uint32_t *v, size_t n,
                        unsigned w, int last, struct trove_bytes *out)
{
    const uint32_t vb = (uint32_t)trove__div_up(w, 8);
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
    const uint32_t vb = (uint32_t)trove__div_up(w, 8);
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
        const size_t need = TROVE_VARINT32_MAX + 4 + (size_t)trove__div_up(e - st, 8) * w;
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
static int rle_dp_reserve(struct trove__pq_rle_scratch *s, size_t m)
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

void trove__pq_rle_scratch_free(struct trove__pq_rle_scratch *s)
{
    free(s->a);
    free(s->b);
    free(s->flags);
}

/* trove__pq_rle_encode with the caller's scratch (kept for the next call); shortest: always
 * the shortest parse. */
static int rle_encode_with(struct trove__pq_rle_scratch *s, const uint32_t *v, size_t n,
                           unsigned w, int shortest, struct trove_bytes *out)
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

int trove__pq_rle_encode_with(struct trove__pq_rle_scratch *s, const uint32_t *v, size_t n,
                              unsigned w, struct trove_bytes *out)
{
    return rle_encode_with(s, v, n, w, 0, out);
}

int trove__pq_rle_encode(const uint32_t *v, size_t n, unsigned w, struct trove_bytes *out)
{
    struct trove__pq_rle_scratch s = TROVE__PQ_RLE_SCRATCH_INIT;
    int rc = rle_encode_with(&s, v, n, w, 0, out);
    trove__pq_rle_scratch_free(&s);
    return rc;
}

int trove__pq_rle_encode_shortest(const uint32_t *v, size_t n, unsigned w,
                                  struct trove_bytes *out)
{
    struct trove__pq_rle_scratch s = TROVE__PQ_RLE_SCRATCH_INIT;
    int rc = rle_encode_with(&s, v, n, w, 1, out);
    trove__pq_rle_scratch_free(&s);
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
    const unsigned vbytes = (unsigned)trove__div_up(w, 8);
    size_t pos = 0;

    while (pos < n) {
        size_t at = (size_t)(p - buf), left, take;
        uint64_t h;
        int why = 0;
        const uint8_t *q = trove_get_varint(p, end, 32, &h, &why);
        if (!q) {
            if (why == 1)
                return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                                  "RLE data ends inside the run header at byte %zu after "
                                  "%zu of %zu values; the page was cut short",
                                  at, pos, n);
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "RLE run header at byte %zu is a varint longer than 5 bytes "
                              "or over 32 bits",
                              at);
        }
        p = q;
        left = (size_t)(end - p);
        if (h >> 1 == 0)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "%s run at byte %zu has length 0; runs hold at least 1 "
                              "value",
                              h & 1 ? "bit-packed" : "RLE", at);
        if (h & 1) {
            uint64_t groups = h >> 1, nbytes = groups * w;
            if (nbytes > left)
                return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
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
                return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                                  "RLE run at byte %zu ends inside its %u-byte value; the "
                                  "page was cut short",
                                  at, vbytes);
            for (unsigned b = 0; b < vbytes; b++)
                value |= (uint32_t)p[b] << (8 * b);
            if (w < 32 && (value >> w) != 0)
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, (size_t)(p - buf),
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
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "RLE bit width %u is over 32", w);
    if ((!buf && len > 0) || (!out && n > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
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
