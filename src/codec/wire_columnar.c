/*
 * wire_columnar.c: the columnar batch payload (format 5) — each field of the batch as its
 * own column, each block of 1024 values of a column in the scheme that is smallest for it.
 *
 * A capture batch is a few threads whose starts climb by small, often round steps, a
 * handful of durations and names that repeat, and kinds, depths and extras that barely
 * change. Packed spends at least a byte a field on all of it. Here the thread table also
 * carries each thread's first start, so a start is a delta against its own thread's
 * previous start (small and non-negative on a real thread, even when threads interleave);
 * deltas and durations are divided by their greatest common divisor over the batch (a
 * microsecond source's nanoseconds are multiples of 1000), and every column is cut into
 * blocks of 1024 values that each pick a scheme:
 *
 *   payload := n_threads:varint  thread * n_threads
 *              start_gcd:varint  dur_gcd:varint  group * ceil(count / 1024)
 *   thread  := pid:varint  tid:varint  first:zigzag-varint  (first start minus the previous
 *                                                           thread's, from 0, mod 2^64)
 *   group   := block(thread) block(start) block(dur) block(name)
 *              block(kind) block(depth) block(extra)
 *                                          (1024 events a group; the last holds the rest)
 *   block   := 0 CONST   value:varint
 *            | 1 BITPACK base:varint width:u8 n_exc:varint { gap:varint high:varint } * n_exc
 *                        words                 value = base + low + (high << width)
 *            | 2 DICT    k:varint first:varint { gap-1:varint } * (k-1) words (indexes)
 *            | 3 RLE     n_runs:varint { value:varint len-1:varint } * n_runs
 *            | 4 VARINT  base:varint { value-base:varint } * m
 *   words   := the first K * 32 little-endian u32 words of a FastLanes block
 *              (trove/bitpack.h) at width w, K = ceil(ceil(m / 32) * w / 32): the words
 *              that hold rows 0 .. ceil(m/32)-1 of every lane, so a short block is short
 *
 * Start values are offset-binary: v = 2^63 + (start - prev_of_thread) / start_gcd, so that
 * a block's frame of reference (its least value) takes a run of small deltas to a few
 * bits; a start that goes backwards is one value below the rest. Exceptions of a BITPACK
 * block are the values whose (value - base) is wider than the block's width: the packed
 * slot keeps the low bits and the exception the rest (gap: positions after the previous
 * exception's plus one). A DICT block's values are ascending; its indexes are packed at
 * the width of k - 1. Thread, name, kind, depth and extra values must fit their fields.
 *
 * The encoder estimates each scheme's size from one pass over a block (range, width
 * histogram, distinct values, runs), writes the smallest, and falls back to VARINT if the
 * written block came out larger, so a block is never over 11 + 10 m bytes and
 * trove__columnar_bound holds. The decoder checks every varint, count, width, index and
 * length against the payload's end and the block's size before it uses it.
 */
#include "wire_internal.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/varint.h"
#include "trove/bitpack.h"

#include <stdlib.h>

#define BLOCK TROVE_BITPACK_BLOCK
#define N_COLUMNS 7
#define OFFSET_BIN (1ULL << 63)
#define DICT_MAX 512u /* distinct values a DICT block may hold */

_Static_assert(N_COLUMNS * BLOCK <= TROVE_WIRE_MAX_EVENTS,
               "a group's columns fit the decoder's second half of scratch");

enum { S_CONST = 0, S_BITPACK = 1, S_DICT = 2, S_RLE = 3, S_VARINT = 4 };
enum { C_THREAD, C_START, C_DUR, C_NAME, C_KIND, C_DEPTH, C_EXTRA };

static const char *const col_name[N_COLUMNS] = {"thread", "start", "duration", "name",
                                                "kind",   "depth", "extra"};

size_t trove__columnar_bound(size_t n)
{
    size_t blocks = (n + BLOCK - 1) / BLOCK;
    return 5 + n * (5 + 5 + 10) + 20 + N_COLUMNS * (blocks * 11 + n * 10);
}

void trove__columnar_free(struct trove__columnar_scratch *s)
{
    free(s->vals);
    free(s->prev);
    free(s->cols);
    memset(s, 0, sizeof *s);
}

static int scratch_prepare(struct trove__columnar_scratch *s, size_t n)
{
    if (!s->cols && !(s->cols = trove__malloc(N_COLUMNS * BLOCK * sizeof *s->cols)))
        return TROVE_ERR_NOMEM;
    if (n <= s->cap && s->vals)
        return TROVE_OK;
    {
        size_t cap = n < BLOCK ? BLOCK : n;
        uint64_t *v = trove__malloc(cap * sizeof *v), *p = trove__malloc(cap * sizeof *p);
        if (!v || !p) {
            free(v);
            free(p);
            return TROVE_ERR_NOMEM;
        }
        free(s->vals);
        free(s->prev);
        s->vals = v;
        s->prev = p;
        s->cap = cap;
    }
    return TROVE_OK;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Words a block of m values keeps at width w (see the layout above). */
static size_t block_words(size_t m, unsigned w)
{
    size_t rows = (m + 31) / 32;
    return (rows * w + 31) / 32 * 32;
}

static unsigned width64(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0u; }

/* Pack u[0..m) (each below 2^w) and write the kept words at p; return the byte after. */
static uint8_t *put_words(uint8_t *p, uint32_t *u, size_t m, unsigned w)
{
    uint32_t packed[BLOCK];
    size_t k = block_words(m, w);
    for (size_t i = m; i < BLOCK; i++)
        u[i] = 0;
    if (!k)
        return p;
    trove_bitpack_pack(u, packed, w, 0);
    memcpy(p, packed, k * 4); /* little-endian host (trove/bitpack.h) */
    return p + k * 4;
}

/* Bytes of a varint of a value `bits` wide. */
static const uint8_t vlen_of_width[65] = {
    1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 4, 4,
    4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7,
    7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 10,
};

/* A block's distinct values: an open-addressing set, stamped per use so that it is not
 * cleared, then sorted, with each slot given its value's rank. */
#define DICT_SLOTS (4 * DICT_MAX)
struct dict {
    uint64_t keys[DICT_SLOTS];
    uint32_t stamp[DICT_SLOTS];
    uint16_t rank[DICT_SLOTS];
    uint64_t vals[DICT_MAX];
    uint32_t k, cur;
};

static inline uint32_t dict_hash(uint64_t x)
{
    return (uint32_t)((x * 0x9E3779B97F4A7C15ULL) >> (64 - 11)); /* DICT_SLOTS = 2^11 */
}

static inline uint32_t dict_slot(const struct dict *d, uint64_t x)
{
    uint32_t h = dict_hash(x);
    while (d->stamp[h] == d->cur && d->keys[h] != x)
        h = (h + 1) & (DICT_SLOTS - 1);
    return h;
}

/* Gather the distinct values of v[0..m) (unsorted) into d; 0 if more than cap (at most
 * DICT_MAX). */
static int dict_gather(struct dict *d, const uint64_t *v, size_t m, uint32_t cap)
{
    if (++d->cur == 0) {
        memset(d->stamp, 0, sizeof d->stamp);
        d->cur = 1;
    }
    d->k = 0;
    for (size_t i = 0; i < m; i++) {
        uint32_t h;
        if (i && v[i] == v[i - 1])
            continue;
        h = dict_slot(d, v[i]);
        if (d->stamp[h] != d->cur) {
            if (d->k == cap)
                return 0;
            d->stamp[h] = d->cur;
            d->keys[h] = v[i];
            d->vals[d->k++] = v[i];
        }
    }
    return 1;
}

/* Sort d's values (shell sort: k is at most DICT_MAX, and no call per comparison) and
 * record each one's rank in its slot. */
static void dict_sort(struct dict *d)
{
    static const uint32_t gaps[] = {132, 57, 23, 10, 4, 1};
    for (unsigned g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
        uint32_t gap = gaps[g];
        for (uint32_t i = gap; i < d->k; i++) {
            uint64_t x = d->vals[i];
            uint32_t j = i;
            for (; j >= gap && d->vals[j - gap] > x; j -= gap)
                d->vals[j] = d->vals[j - gap];
            d->vals[j] = x;
        }
    }
    for (uint32_t j = 0; j < d->k; j++)
        d->rank[dict_slot(d, d->vals[j])] = (uint16_t)j;
}

static uint8_t *put_varint_block(uint8_t *p, const uint64_t *v, size_t m, uint64_t lo)
{
    *p++ = S_VARINT;
    p = trove_put_varint(p, lo);
    for (size_t i = 0; i < m; i++)
        p = trove_put_varint(p, v[i] - lo);
    return p;
}

/* Encode one block of m (1..1024) values at p; return the byte after it. */
static uint8_t *encode_block(uint8_t *p, struct dict *d, const uint64_t *v, size_t m)
{
    uint32_t u[BLOCK];
    uint64_t lo = v[0], hi = v[0];
    size_t hist[65] = {0}, runs = 1, varint_cost, best, ne = 0, sbits = 0, bpv;
    unsigned best_w = 0, scheme, w;
    uint8_t *start = p;

    for (size_t i = 0; i < m; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    if (lo == hi) {
        *p++ = S_CONST;
        return trove_put_varint(p, lo);
    }
    for (size_t i = 1; i < m; i++)
        runs += v[i] != v[i - 1];
    {
        /* four histograms, so that a run of one width is not one chain of increments */
        uint16_t h4[4][65];
        size_t i = 0;
        memset(h4, 0, sizeof h4);
        for (; i + 4 <= m; i += 4) {
            h4[0][width64(v[i] - lo)]++;
            h4[1][width64(v[i + 1] - lo)]++;
            h4[2][width64(v[i + 2] - lo)]++;
            h4[3][width64(v[i + 3] - lo)]++;
        }
        for (; i < m; i++)
            h4[0][width64(v[i] - lo)]++;
        for (w = 0; w <= 64; w++)
            hist[w] = (size_t)h4[0][w] + h4[1][w] + h4[2][w] + h4[3][w];
    }
    varint_cost = 1 + trove_varint_len(lo);
    for (w = 0; w <= 64; w++)
        varint_cost += hist[w] * vlen_of_width[w];
    scheme = S_VARINT;
    best = varint_cost;
    /* BITPACK at each width from 64 down: the kept words, plus per exception a byte of gap
     * and its high bits' varint (about (width - w + 6) / 7 bytes; a gap of 2 bytes is rare
     * enough that counting it, tried, chose wider blocks and cost 3 % on the Chrome
     * sample). ne and sbits accumulate the count and the summed widths of the values wider
     * than w. */
    for (w = 64; w-- > 0;) {
        ne += hist[w + 1];
        sbits += hist[w + 1] * (w + 1);
        if (w <= 32) {
            size_t cost = 2 + trove_varint_len(lo) + trove_varint_len(ne) + ne +
                          (sbits - (size_t)w * ne + 6 * ne) / 7 + block_words(m, w) * 4;
            if (cost < best) {
                best = cost;
                best_w = w;
                scheme = S_BITPACK;
            }
        }
    }
    if (runs * 2 < best) {
        size_t rc = 1 + trove_varint_len(runs);
        for (size_t i = 0, j; i < m; i = j) {
            for (j = i + 1; j < m && v[j] == v[i]; j++)
                ;
            rc += trove_varint_len(v[i]) + trove_varint_len(j - i - 1);
        }
        if (rc < best) {
            best = rc;
            scheme = S_RLE;
        }
    }
    /* DICT pays only if its indexes are narrower than the best width so far; the values
     * cost at most about a varint of the mean gap each (estimated before sorting). */
    /* Indexes of w bits pay only below the bits a value costs now: gather at most the
     * distinct values whose indexes would be narrower. */
    bpv = best * 8 / m;
    if (bpv >= 2 && dict_gather(d, v, m, bpv > 10 ? DICT_MAX : 1u << (bpv - 1)) && d->k > 1) {
        unsigned iw = width64(d->k - 1);
        size_t est = 1 + trove_varint_len(d->k) + trove_varint_len(lo) +
                     (size_t)d->k * trove_varint_len((hi - lo) / d->k) + block_words(m, iw) * 4;
        if (est < best) {
            size_t dc;
            dict_sort(d);
            dc = 1 + trove_varint_len(d->k) + trove_varint_len(d->vals[0]) + block_words(m, iw) * 4;
            for (uint32_t j = 1; j < d->k; j++)
                dc += trove_varint_len(d->vals[j] - d->vals[j - 1] - 1);
            if (dc < best) {
                best = dc;
                scheme = S_DICT;
            }
        }
    }
    switch (scheme) {
    case S_BITPACK: {
        uint32_t mask = best_w == 32 ? UINT32_MAX : (uint32_t)((1ULL << best_w) - 1);
        size_t n_exc = 0, last = 0;
        for (w = best_w + 1; w <= 64; w++)
            n_exc += hist[w];
        *p++ = S_BITPACK;
        p = trove_put_varint(p, lo);
        *p++ = (uint8_t)best_w;
        p = trove_put_varint(p, n_exc);
        for (size_t i = 0; i < m; i++) {
            uint64_t x = v[i] - lo;
            u[i] = (uint32_t)x & mask;
            if (n_exc && x >> best_w) {
                p = trove_put_varint(p, i - last);
                p = trove_put_varint(p, x >> best_w);
                last = i + 1;
            }
        }
        p = put_words(p, u, m, best_w);
        break;
    }
    case S_DICT: {
        uint64_t prev = 0;
        *p++ = S_DICT;
        p = trove_put_varint(p, d->k);
        for (uint32_t j = 0; j < d->k; j++) {
            p = trove_put_varint(p, j ? d->vals[j] - prev - 1 : d->vals[j]);
            prev = d->vals[j];
        }
        for (size_t i = 0; i < m; i++)
            u[i] = d->rank[dict_slot(d, v[i])];
        p = put_words(p, u, m, width64(d->k - 1));
        break;
    }
    case S_RLE:
        *p++ = S_RLE;
        p = trove_put_varint(p, runs);
        for (size_t i = 0, j; i < m; i = j) {
            for (j = i + 1; j < m && v[j] == v[i]; j++)
                ;
            p = trove_put_varint(p, v[i]);
            p = trove_put_varint(p, j - i - 1);
        }
        break;
    default:
        return put_varint_block(p, v, m, lo);
    }
    if ((size_t)(p - start) > varint_cost)
        return put_varint_block(start, v, m, lo);
    return p;
}

/*
 * Exact division by a batch's gcd without a divide instruction: g = 2^shift * odd, and for
 * an x that g divides, x / g = (x >> shift) * inv mod 2^64, inv being odd's inverse mod
 * 2^64; g divides x exactly when x's low shift bits are 0 and that product is at most
 * UINT64_MAX / odd (Granlund and Montgomery, "Division by invariant integers using
 * multiplication", section 9).
 */
struct exact_div {
    uint64_t g, inv, lim;
    unsigned shift;
};

static void exact_div_set(struct exact_div *d, uint64_t g)
{
    uint64_t odd, inv;
    d->g = g;
    if (g == 0) { /* nothing seen yet: only 0 "divides" */
        d->shift = 0;
        d->inv = 1;
        d->lim = 0;
        return;
    }
    d->shift = (unsigned)__builtin_ctzll(g);
    odd = g >> d->shift;
    inv = odd; /* correct to 3 bits; each step doubles them */
    for (int i = 0; i < 5; i++)
        inv *= 2 - odd * inv;
    d->inv = inv;
    d->lim = UINT64_MAX / odd;
}

static inline int exact_divides(const struct exact_div *d, uint64_t x)
{
    uint64_t low = d->shift ? x & ((1ULL << d->shift) - 1) : 0;
    return low == 0 && (x >> d->shift) * d->inv <= d->lim;
}

static inline uint64_t exact_quot(const struct exact_div *d, uint64_t x)
{
    return (x >> d->shift) * d->inv;
}

/* Fold x into the gcd d holds. */
static inline void gcd_add(struct exact_div *d, uint64_t x)
{
    if (d->g != 1 && x != 0 && !exact_divides(d, x))
        exact_div_set(d, gcd64(d->g, x));
}

int trove__columnar_encode(struct trove__columnar_scratch *s, struct trove__thread_map *m,
                           const struct trove_event *ev, size_t n, uint8_t *out,
                           size_t *len_out)
{
    static _Thread_local struct dict d;
    uint64_t(*col)[BLOCK];
    uint8_t *p = out;
    uint32_t nthreads = 0, seen = 0;
    uint64_t *delta, *prev, g, gd, prev_first = 0;
    struct exact_div dg, dd;
    int rc;

    if ((rc = trove__thread_table(m, ev, n, &nthreads)) != TROVE_OK ||
        (rc = scratch_prepare(s, n)) != TROVE_OK)
        return rc;
    delta = s->vals;
    prev = s->prev;
    col = (uint64_t(*)[BLOCK])s->cols;
    exact_div_set(&dg, 0);
    exact_div_set(&dd, 0);
    /* Each thread's first start (threads are numbered in order of first appearance), then
     * every start as a delta against its thread's previous one, and the two gcds. */
    for (size_t i = 0; i < n; i++) {
        uint32_t t = m->ev_idx[i];
        uint64_t x;
        if (ev[i].pad != 0)
            return TROVE_ERR_INVALID; /* out is untouched until the caller counts it */
        if (t == seen)
            prev[seen++] = ev[i].start_ns;
        x = ev[i].start_ns - prev[t];
        prev[t] = ev[i].start_ns;
        delta[i] = x;
        gcd_add(&dg, (int64_t)x < 0 ? 0 - x : x);
        gcd_add(&dd, ev[i].dur_ns);
    }
    if (!dg.g)
        exact_div_set(&dg, 1);
    if (!dd.g)
        exact_div_set(&dd, 1);
    g = dg.g;
    gd = dd.g;
    p = trove_put_varint(p, nthreads);
    seen = 0;
    for (size_t i = 0; i < n && seen < nthreads; i++) {
        if (m->ev_idx[i] != seen)
            continue;
        p = trove_put_varint(p, m->table[seen] >> 32);
        p = trove_put_varint(p, (uint32_t)m->table[seen]);
        p = trove_put_varint(p, trove_zigzag64((int64_t)(ev[i].start_ns - prev_first)));
        prev_first = ev[i].start_ns;
        seen++;
    }
    p = trove_put_varint(p, g);
    p = trove_put_varint(p, gd);
    /* Group by group: block b of every column, then block b + 1. */
    for (size_t i0 = 0; i0 < n; i0 += BLOCK) {
        size_t bm = n - i0 < BLOCK ? n - i0 : BLOCK;
        const struct trove_event *e = ev + i0;
        for (size_t i = 0; i < bm; i++) {
            uint64_t x = delta[i0 + i];
            col[C_THREAD][i] = m->ev_idx[i0 + i];
            /* (int64)x / g, exact: the quotient of x mod 2^64 is that of its magnitude,
             * negated for a negative x */
            col[C_START][i] = OFFSET_BIN + ((int64_t)x < 0 ? 0 - exact_quot(&dg, 0 - x)
                                                           : exact_quot(&dg, x));
            col[C_DUR][i] = exact_quot(&dd, e[i].dur_ns);
            col[C_NAME][i] = e[i].name_id;
            col[C_KIND][i] = e[i].kind;
            col[C_DEPTH][i] = e[i].depth;
            col[C_EXTRA][i] = e[i].extra;
        }
        for (int c = 0; c < N_COLUMNS; c++)
            p = encode_block(p, &d, col[c], bm);
    }
    *len_out = (size_t)(p - out);
    return TROVE_OK;
}

/* ---- decoding ------------------------------------------------------------------------ */

struct reader {
    const uint8_t *p0, *p, *end;
    uint64_t base; /* p0's offset in the caller's buffer */
    struct trove_diag *diag;
    uint32_t count;
};

static int fail_at(struct reader *r, int rc, const uint8_t *at, const char *what, int col,
                   size_t block)
{
    if (col < 0)
        return TROVE_FAIL(r->diag, rc, r->base + (uint64_t)(at - r->p0),
                          "columnar frame: %s (%u events)", what, r->count);
    return TROVE_FAIL(r->diag, rc, r->base + (uint64_t)(at - r->p0),
                      "columnar frame: %s column, block %zu: %s (%u events)", col_name[col],
                      block, what, r->count);
}

static int rd_slow(struct reader *r, unsigned bits, uint64_t *v, int col, size_t block);

/* Read a varint of up to `bits` bits (7 at least); on failure report it for (col, block).
 * A one-byte varint, the common case, is read inline. */
static inline int rd(struct reader *r, unsigned bits, uint64_t *v, int col, size_t block)
{
    if (r->p < r->end && *r->p < 0x80) {
        *v = *r->p++;
        return TROVE_OK;
    }
    return rd_slow(r, bits, v, col, block);
}

static __attribute__((noinline)) int rd_slow(struct reader *r, unsigned bits, uint64_t *v,
                                             int col, size_t block)
{
    const uint8_t *at = r->p, *q;
    int why = 0;
    if (!(q = trove_get_varint(r->p, r->end, bits, v, &why)))
        return fail_at(r, why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT, at,
                       why == 1 ? "payload ends inside a varint"
                                : "varint longer or wider than its field",
                       col, block);
    r->p = q;
    return TROVE_OK;
}

/* Read the kept words of an m-value block at width w and unpack them into u[0..1024). */
static int rd_words(struct reader *r, size_t m, unsigned w, uint32_t *u, int col, size_t block)
{
    uint32_t words[BLOCK] __attribute__((aligned(32)));
    size_t k = block_words(m, w);
    if ((size_t)(r->end - r->p) < k * 4)
        return fail_at(r, TROVE_ERR_TRUNCATED, r->p, "payload ends inside the packed words",
                       col, block);
    memcpy(words, r->p, k * 4);
    memset(words + k, 0, ((size_t)w * 32 - k) * 4);
    r->p += k * 4;
    trove_bitpack_unpack(words, u, w, 0);
    return TROVE_OK;
}

/* Decode one block of m (1..1024) values into v[0..m). */
static int decode_block(struct reader *r, uint64_t *v, size_t m, int col, size_t block)
{
    uint32_t u[BLOCK] __attribute__((aligned(32)));
    uint16_t ex_pos[BLOCK];
    uint64_t ex_high[BLOCK];
    const uint8_t *at = r->p;
    uint64_t base, x, k;
    unsigned w;
    int rc;

    if (r->p >= r->end)
        return fail_at(r, TROVE_ERR_TRUNCATED, r->p, "payload ends before the block", col, block);
    switch (*r->p++) {
    case S_CONST:
        if ((rc = rd(r, 64, &base, col, block)) != TROVE_OK)
            return rc;
        for (size_t i = 0; i < m; i++)
            v[i] = base;
        return TROVE_OK;
    case S_BITPACK: {
        size_t pos = 0;
        uint64_t ne;
        if ((rc = rd(r, 64, &base, col, block)) != TROVE_OK)
            return rc;
        if (r->p >= r->end)
            return fail_at(r, TROVE_ERR_TRUNCATED, r->p, "payload ends before the width", col,
                           block);
        at = r->p;
        if ((w = *r->p++) > 32)
            return fail_at(r, TROVE_ERR_CORRUPT, at, "bit width over 32", col, block);
        at = r->p;
        if ((rc = rd(r, 64, &ne, col, block)) != TROVE_OK)
            return rc;
        if (ne > m)
            return fail_at(r, TROVE_ERR_CORRUPT, at, "more exceptions than values", col, block);
        for (uint64_t j = 0; j < ne; j++) {
            uint64_t gap, high;
            at = r->p;
            if ((rc = rd(r, 64, &gap, col, block)) != TROVE_OK ||
                (rc = rd(r, 64, &high, col, block)) != TROVE_OK)
                return rc;
            if (gap >= m - pos)
                return fail_at(r, TROVE_ERR_CORRUPT, at, "exception position past the block",
                               col, block);
            pos += gap;
            if (high == 0 || (w && high >> (64 - w)))
                return fail_at(r, TROVE_ERR_CORRUPT, at,
                               "exception with no high bits, or wider than 64 bits", col, block);
            ex_pos[j] = (uint16_t)pos;
            ex_high[j] = high << w;
            pos++;
        }
        if ((rc = rd_words(r, m, w, u, col, block)) != TROVE_OK)
            return rc;
        for (size_t i = 0; i < m; i++)
            v[i] = base + u[i];
        for (uint64_t j = 0; j < ne; j++)
            v[ex_pos[j]] += ex_high[j];
        return TROVE_OK;
    }
    case S_DICT: {
        uint64_t dict[DICT_MAX];
        at = r->p;
        if ((rc = rd(r, 32, &k, col, block)) != TROVE_OK)
            return rc;
        if (k < 1 || k > DICT_MAX || k > m)
            return fail_at(r, TROVE_ERR_CORRUPT, at, "dictionary size out of range", col, block);
        if ((rc = rd(r, 64, &dict[0], col, block)) != TROVE_OK)
            return rc;
        for (uint64_t j = 1; j < k; j++) {
            at = r->p;
            if ((rc = rd(r, 64, &x, col, block)) != TROVE_OK)
                return rc;
            if (x >= UINT64_MAX - dict[j - 1])
                return fail_at(r, TROVE_ERR_CORRUPT, at, "dictionary value past 2^64", col,
                               block);
            dict[j] = dict[j - 1] + x + 1;
        }
        w = width64(k - 1);
        at = r->p;
        if ((rc = rd_words(r, m, w, u, col, block)) != TROVE_OK)
            return rc;
        for (size_t i = 0; i < m; i++) {
            if (u[i] >= k)
                return fail_at(r, TROVE_ERR_CORRUPT, at, "dictionary index past the dictionary",
                               col, block);
            v[i] = dict[u[i]];
        }
        return TROVE_OK;
    }
    case S_RLE: {
        uint64_t runs;
        size_t pos = 0;
        at = r->p;
        if ((rc = rd(r, 32, &runs, col, block)) != TROVE_OK)
            return rc;
        if (runs < 1 || runs > m)
            return fail_at(r, TROVE_ERR_CORRUPT, at, "run count out of range", col, block);
        for (uint64_t j = 0; j < runs; j++) {
            uint64_t len;
            at = r->p;
            if ((rc = rd(r, 64, &x, col, block)) != TROVE_OK ||
                (rc = rd(r, 32, &len, col, block)) != TROVE_OK)
                return rc;
            if (len >= m - pos)
                return fail_at(r, TROVE_ERR_CORRUPT, at, "runs longer than the block", col,
                                   block);
            for (uint64_t i = 0; i <= len; i++)
                v[pos++] = x;
        }
        if (pos != m)
            return fail_at(r, TROVE_ERR_CORRUPT, at, "runs shorter than the block", col, block);
        return TROVE_OK;
    }
    case S_VARINT:
        if ((rc = rd(r, 64, &base, col, block)) != TROVE_OK)
            return rc;
        for (size_t i = 0; i < m; i++) {
            const uint8_t *q = r->p;
            /* the common one- and two-byte values inline; the rest through the checks */
            if (r->end - q >= 2 && q[0] < 0x80) {
                v[i] = base + q[0];
                r->p = q + 1;
            } else if (r->end - q >= 2 && q[1] < 0x80) {
                v[i] = base + ((uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7);
                r->p = q + 2;
            } else {
                if ((rc = rd(r, 64, &x, col, block)) != TROVE_OK)
                    return rc;
                v[i] = base + x;
            }
        }
        return TROVE_OK;
    default:
        return fail_at(r, TROVE_ERR_CORRUPT, at, "unknown block scheme", col, block);
    }
}

/* The first value of v[0..m) above max (there is one). */
static size_t first_above(const uint64_t *v, size_t m, uint64_t max)
{
    size_t i = 0;
    while (i < m && v[i] <= max)
        i++;
    return i;
}

int trove__columnar_decode(const uint8_t *p0, size_t len, uint32_t count,
                           struct trove_event *out, uint64_t *threads, uint64_t *scratch,
                           uint64_t base, struct trove_diag *diag)
{
    struct reader r = {p0, p0, p0 + len, base, diag, count};
    uint64_t *prev = scratch;
    /* the group's columns live in the second half of the scratch, not on the stack */
    uint64_t(*col)[BLOCK] = (uint64_t(*)[BLOCK])(scratch + TROVE_WIRE_MAX_EVENTS);
    uint64_t nt, pid, tid, first, g, gd, last_first = 0, ct, cs, key;
    const uint8_t *at = r.p, *col_at[N_COLUMNS];
    int rc;

    if ((rc = rd(&r, 32, &nt, -1, 0)) != TROVE_OK)
        return rc;
    if (nt > count || (count && !nt))
        return fail_at(&r, TROVE_ERR_CORRUPT, at, "thread table size does not fit the count", -1, 0);
    for (uint64_t t = 0; t < nt; t++) {
        if ((rc = rd(&r, 32, &pid, -1, 0)) != TROVE_OK ||
            (rc = rd(&r, 32, &tid, -1, 0)) != TROVE_OK ||
            (rc = rd(&r, 64, &first, -1, 0)) != TROVE_OK)
            return rc;
        threads[t] = pid << 32 | tid;
        last_first += (uint64_t)trove_unzigzag64(first);
        prev[t] = last_first;
    }
    at = r.p;
    if ((rc = rd(&r, 64, &g, -1, 0)) != TROVE_OK || (rc = rd(&r, 64, &gd, -1, 0)) != TROVE_OK)
        return rc;
    if (!g || !gd)
        return fail_at(&r, TROVE_ERR_CORRUPT, at, "a zero divisor", -1, 0);
    for (size_t b = 0, i0 = 0; i0 < count; b++, i0 += BLOCK) {
        size_t m = count - i0 < BLOCK ? count - i0 : BLOCK;
        struct trove_event *e = out + i0;
        uint64_t wide = 0, narrow = 0, bad_t = 0;
        for (int c = 0; c < N_COLUMNS; c++) {
            col_at[c] = r.p;
            if ((rc = decode_block(&r, col[c], m, c, b)) != TROVE_OK)
                return rc;
        }
        /* One pass rebuilds the group's events. The running start of the current thread
         * stays in a register through a run of its events, so consecutive events of one
         * thread do not wait on a store and a load. The checks are gathered on the way and
         * tested after the pass, which writes only inside out (unspecified on error): a
         * thread index past the table reads thread 0 until then. */
        ct = col[C_THREAD][0] < nt ? col[C_THREAD][0] : 0;
        cs = prev[ct];
        key = threads[ct];
        for (size_t i = 0; i < m; i++) {
            uint64_t t = col[C_THREAD][i];
            bad_t |= t >= nt;
            wide |= col[C_NAME][i];
            narrow |= col[C_KIND][i] | col[C_DEPTH][i] | col[C_EXTRA][i];
            t = t < nt ? t : 0;
            if (t != ct) {
                prev[ct] = cs;
                ct = t;
                cs = prev[t];
                key = threads[t];
            }
            cs += (col[C_START][i] - OFFSET_BIN) * g;
            e[i].start_ns = cs;
            e[i].dur_ns = col[C_DUR][i] * gd;
            e[i].pid = (uint32_t)(key >> 32);
            e[i].tid = (uint32_t)key;
            e[i].kind = (uint8_t)col[C_KIND][i];
            e[i].depth = (uint8_t)col[C_DEPTH][i];
            e[i].extra = (uint8_t)col[C_EXTRA][i];
            e[i].pad = 0;
            e[i].name_id = (uint32_t)col[C_NAME][i];
        }
        prev[ct] = cs;
        if (bad_t)
            return fail_at(&r, TROVE_ERR_THREAD, col_at[C_THREAD],
                           "thread index past the thread table", C_THREAD, b);
        if (wide > UINT32_MAX || narrow > UINT8_MAX) {
            int c = wide > UINT32_MAX ? C_NAME
                    : first_above(col[C_KIND], m, 255) < m ? C_KIND
                    : first_above(col[C_DEPTH], m, 255) < m ? C_DEPTH
                                                            : C_EXTRA;
            return fail_at(&r, TROVE_ERR_CORRUPT, col_at[c], "value wider than its field", c, b);
        }
    }
    if (r.p != r.end)
        return fail_at(&r, TROVE_ERR_CORRUPT, r.p, "trailing bytes after the last column", -1, 0);
    return TROVE_OK;
}
