/*
 * diff.c: two captures compared (trove/diff.h, docs/diff.md).
 *
 * A side is read one of three ways. Exact: every segment whose events start in the range is
 * read and each duration kept, per (thread name, name) key, then sorted: the figures are
 * exact and the rank test sees every tie as it is. Sketch, per name: trove_capture_stats
 * answers from the summaries (a billion events take about as long as a million). Sketch, by
 * thread: the segments are read (a track filter keeps the summaries' sketches from
 * answering) into histograms of the summaries' buckets, so memory stays that of the keys.
 *
 * The test is Mann–Whitney U in its normal approximation with the tie correction and a
 * continuity correction of 1/2. From histograms, the durations of one bucket (within 2 % of
 * each other) are ties; a side with every duration is bucketed when the other has only a
 * histogram. The shift (the effect a change must reach to be significant) is the
 * Hodges–Lehmann estimate of B over A, read in the buckets: the median bucket difference over
 * all pairs, found by bisection on the difference with a merge walk counting the pairs at or
 * below it.
 */
#include "summary_read.h"
#include "trove/diff.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/hash.h"
#include "common/json.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t sat(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static char *dupn(const char *p, size_t n)
{
    char *s = trove__malloc(n + 1);
    if (s) {
        if (n)
            memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

/* ---- a side's rows ------------------------------------------------------------------------ */

int trove_diff_side_init(struct trove_diff_side *side, const char *capture, uint64_t from_ns,
                         uint64_t to_ns, uint64_t events)
{
    memset(side, 0, sizeof *side);
    if (!capture)
        return TROVE_ERR_INVALID;
    if (!(side->capture = dupn(capture, strlen(capture))))
        return TROVE_ERR_NOMEM;
    side->from_ns = from_ns;
    side->to_ns = to_ns;
    side->events = events;
    return TROVE_OK;
}

/* A new row at the end (zeroed), or NULL without memory. */
static struct trove_diff_row *side_row(struct trove_diff_side *side)
{
    if (side->nrows == side->cap) {
        size_t cap = side->cap ? side->cap * 2 : 64;
        struct trove_diff_row *r = trove__realloc(side->rows, cap * sizeof *r);
        if (!r)
            return NULL;
        side->rows = r;
        side->cap = cap;
    }
    memset(&side->rows[side->nrows], 0, sizeof side->rows[0]);
    return &side->rows[side->nrows++];
}

static void row_free(struct trove_diff_row *r)
{
    free(r->name);
    free(r->thread);
    free(r->hist);
    free(r->durs);
}

int trove_diff_side_add(struct trove_diff_side *side, const char *name, size_t name_len,
                        const char *thread, const struct trove_diff_figures *f,
                        const struct trove_summary_bucket *hist, size_t nhist)
{
    struct trove_diff_row *r;
    uint64_t sum = 0;

    if (!side || !f || (!name && name_len) || (!hist && nhist))
        return TROVE_ERR_INVALID;
    for (size_t i = 0; i < nhist; i++) {
        if (hist[i].index >= TROVE_SUMMARY_BUCKETS || (i && hist[i].index <= hist[i - 1].index))
            return TROVE_ERR_INVALID;
        sum += hist[i].count;
    }
    if (sum > f->count)
        return TROVE_ERR_INVALID;
    if (!(r = side_row(side)))
        return TROVE_ERR_NOMEM;
    r->f = *f;
    r->name_len = name_len;
    if (!(r->name = dupn(name ? name : "", name_len)) ||
        (thread && !(r->thread = dupn(thread, strlen(thread)))) ||
        (nhist && !(r->hist = trove__mallocarray(nhist, sizeof *hist)))) {
        row_free(r);
        side->nrows--;
        return TROVE_ERR_NOMEM;
    }
    if (nhist)
        memcpy(r->hist, hist, nhist * sizeof *hist);
    r->nhist = nhist;
    side->exact = 0;
    if (thread)
        side->by_thread = 1;
    return TROVE_OK;
}

void trove_diff_side_free(struct trove_diff_side *side)
{
    if (!side)
        return;
    for (size_t i = 0; i < side->nrows; i++)
        row_free(&side->rows[i]);
    free(side->rows);
    free(side->capture);
    memset(side, 0, sizeof *side);
}

/* ---- an open-addressing map of 64-bit keys to 32-bit values ---------------------------------- */

struct kmap {
    uint64_t *keys;
    uint32_t *vals; /* UINT32_MAX: empty */
    size_t cap, n;  /* cap a power of two */
};

static void kmap_free(struct kmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* The slot of key: its own, or the empty one where it would go. */
static size_t kmap_slot(const struct kmap *m, uint64_t key)
{
    size_t i = (size_t)trove__mix64(key) & (m->cap - 1);
    while (m->vals[i] != UINT32_MAX && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int kmap_grow(struct kmap *m)
{
    struct kmap g = {0};
    g.cap = m->cap ? m->cap * 2 : 1024;
    if (!(g.keys = trove__mallocarray(g.cap, sizeof *g.keys)) ||
        !(g.vals = trove__mallocarray(g.cap, sizeof *g.vals))) {
        kmap_free(&g);
        return TROVE_ERR_NOMEM;
    }
    memset(g.vals, 0xff, g.cap * sizeof *g.vals);
    for (size_t i = 0; i < m->cap; i++)
        if (m->vals[i] != UINT32_MAX) {
            size_t j = kmap_slot(&g, m->keys[i]);
            g.keys[j] = m->keys[i];
            g.vals[j] = m->vals[i];
        }
    g.n = m->n;
    kmap_free(m);
    *m = g;
    return TROVE_OK;
}

/* *val: key's value; a new key gets `fresh` (*added 1). */
static int kmap_get(struct kmap *m, uint64_t key, uint32_t fresh, uint32_t *val, int *added)
{
    size_t i;

    *added = 0;
    if ((m->n + 1) * 2 > m->cap && kmap_grow(m) != TROVE_OK)
        return TROVE_ERR_NOMEM;
    i = kmap_slot(m, key);
    if (m->vals[i] == UINT32_MAX) {
        m->keys[i] = key;
        m->vals[i] = fresh;
        m->n++;
        *added = 1;
    }
    *val = m->vals[i];
    return TROVE_OK;
}

/* ---- reading a capture's durations ------------------------------------------------------------ */

struct acc {
    uint32_t name, label;
    uint64_t count, total, min, max;
    uint64_t *durs; /* exact */
    size_t n, cap;
};

struct bcount {
    uint32_t acc, bucket;
    uint64_t count;
};

struct reader {
    struct trove__sumread r;
    struct trove_names *names;
    int exact, by_thread;
    struct kmap keys;      /* label << 32 | name -> acc */
    struct acc *accs;
    size_t naccs, capaccs;
    struct kmap buckets;   /* acc << 16 | bucket -> bcount (sketch, by thread) */
    struct bcount *bc;
    size_t nbc, capbc;
    struct kmap tracks;    /* pid << 32 | tid -> label */
    struct kmap label_of;  /* a thread name's hash -> label (probed on a clash) */
    char **labels;
    size_t nlabels, caplabels;
    struct trove_diag *diag;
};

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return TROVE_OK;
    size_t c = *cap ? *cap * 2 : 256;
    void *q = c > SIZE_MAX / size ? NULL : trove__realloc(*p, c * size);
    if (!q)
        return TROVE_ERR_NOMEM;
    *p = q;
    *cap = c;
    return TROVE_OK;
}

/* The label of a track: its thread name (or "tid N"), one index per distinct name. */
static int label_of(struct reader *rd, uint32_t pid, uint32_t tid, uint32_t *out)
{
    uint32_t v;
    int added;
    size_t len = 0;
    const char *nm;
    char buf[32];
    uint64_t h = 1469598103934665603ULL;

    if (kmap_get(&rd->tracks, (uint64_t)pid << 32 | tid, (uint32_t)rd->nlabels, &v, &added))
        return TROVE_ERR_NOMEM;
    if (!added) {
        *out = v;
        return TROVE_OK;
    }
    nm = trove_names_get(rd->names, TROVE_NAME_THREAD, pid, tid, &len);
    if (!nm || !len) {
        len = (size_t)snprintf(buf, sizeof buf, "tid %" PRIu32, tid);
        nm = buf;
    }
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)nm[i]) * 1099511628211ULL;
    for (;; h++) { /* a clash of hashes (never seen) probes on */
        uint32_t l;
        if (kmap_get(&rd->label_of, h, (uint32_t)rd->nlabels, &l, &added))
            return TROVE_ERR_NOMEM;
        if (added) {
            if (grow((void **)&rd->labels, &rd->caplabels, rd->nlabels, sizeof *rd->labels) ||
                !(rd->labels[rd->nlabels] = dupn(nm, len)))
                return TROVE_ERR_NOMEM;
            l = (uint32_t)rd->nlabels++;
        } else if (strlen(rd->labels[l]) != len || memcmp(rd->labels[l], nm, len)) {
            continue;
        }
        rd->tracks.vals[kmap_slot(&rd->tracks, (uint64_t)pid << 32 | tid)] = l;
        *out = l;
        return TROVE_OK;
    }
}

static int add_event(struct reader *rd, const struct trove_event *e)
{
    uint64_t d = trove__summary_is_span(e->kind) ? e->dur_ns : 0; /* as the statistics count */
    uint32_t label = 0, k;
    int added;
    struct acc *a;

    if (rd->by_thread && label_of(rd, e->pid, e->tid, &label))
        return TROVE_ERR_NOMEM;
    if (kmap_get(&rd->keys, (uint64_t)label << 32 | e->name_id, (uint32_t)rd->naccs, &k, &added))
        return TROVE_ERR_NOMEM;
    if (added) {
        if (grow((void **)&rd->accs, &rd->capaccs, rd->naccs, sizeof *rd->accs))
            return TROVE_ERR_NOMEM;
        a = &rd->accs[rd->naccs++];
        memset(a, 0, sizeof *a);
        a->name = e->name_id;
        a->label = label;
        a->min = UINT64_MAX;
    }
    a = &rd->accs[k];
    a->count++;
    a->total = sat(a->total, d);
    if (d < a->min)
        a->min = d;
    if (d > a->max)
        a->max = d;
    if (rd->exact) {
        if (grow((void **)&a->durs, &a->cap, a->n, sizeof *a->durs))
            return TROVE_ERR_NOMEM;
        a->durs[a->n++] = d;
    } else {
        uint32_t b = trove_summary_bucket_of(d), i;
        if (kmap_get(&rd->buckets, (uint64_t)k << 16 | b, (uint32_t)rd->nbc, &i, &added))
            return TROVE_ERR_NOMEM;
        if (added) {
            if (grow((void **)&rd->bc, &rd->capbc, rd->nbc, sizeof *rd->bc))
                return TROVE_ERR_NOMEM;
            rd->bc[rd->nbc++] = (struct bcount){k, b, 0};
        }
        rd->bc[i].count++;
    }
    return TROVE_OK;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int bc_cmp(const void *a, const void *b)
{
    const struct bcount *x = a, *y = b;
    if (x->acc != y->acc)
        return x->acc < y->acc ? -1 : 1;
    return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

/* The nearest-rank quantile of sorted durations. */
static double exact_q(const uint64_t *d, size_t n, double q)
{
    uint64_t rank = (uint64_t)ceil(q * (double)n);
    if (n == 0)
        return 0;
    if (rank < 1)
        rank = 1;
    return (double)d[rank - 1];
}

/* The nearest-rank quantile of a histogram, clamped to [min, max] (as the summaries'). */
static double hist_q(const struct trove_summary_bucket *h, size_t n, const struct trove_diff_figures *f,
                     double q)
{
    uint64_t rank = (uint64_t)ceil(q * (double)f->count), seen = 0;
    double v = 0;

    if (f->count == 0)
        return 0;
    if (rank < 1)
        rank = 1;
    for (size_t i = 0; i < n; i++) {
        seen += h[i].count;
        if (seen >= rank) {
            v = trove_summary_bucket_value(h[i].index);
            break;
        }
    }
    if (v < (double)f->min)
        v = (double)f->min;
    if (v > (double)f->max)
        v = (double)f->max;
    return v;
}

/* The accumulators as the side's rows. */
static int reader_rows(struct reader *rd, struct trove_diff_side *side)
{
    size_t j = 0;

    if (!rd->exact && rd->nbc)
        qsort(rd->bc, rd->nbc, sizeof *rd->bc, bc_cmp);
    for (size_t i = 0; i < rd->naccs; i++) {
        struct acc *a = &rd->accs[i];
        struct trove_diff_row *r = side_row(side);
        size_t len = 0;
        const char *nm = trove_names_get(rd->names, TROVE_NAME_EVENT, a->name, 0, &len);
        if (!r)
            return TROVE_ERR_NOMEM;
        r->f.count = a->count;
        r->f.total = a->total;
        r->f.min = a->count ? a->min : 0;
        r->f.max = a->max;
        r->name_len = nm ? len : 0;
        if (!(r->name = dupn(nm ? nm : "", r->name_len)) ||
            (rd->by_thread && !(r->thread = dupn(rd->labels[a->label], strlen(rd->labels[a->label])))))
            return TROVE_ERR_NOMEM;
        if (rd->exact) {
            qsort(a->durs, a->n, sizeof *a->durs, u64_cmp);
            r->durs = a->durs;
            a->durs = NULL;
            r->f.p50 = exact_q(r->durs, a->n, 0.50);
            r->f.p90 = exact_q(r->durs, a->n, 0.90);
            r->f.p99 = exact_q(r->durs, a->n, 0.99);
        } else {
            size_t k = j;
            while (k < rd->nbc && rd->bc[k].acc == i)
                k++;
            if (k > j && !(r->hist = trove__mallocarray(k - j, sizeof *r->hist)))
                return TROVE_ERR_NOMEM;
            for (size_t m = j; m < k; m++)
                r->hist[m - j] = (struct trove_summary_bucket){.index = rd->bc[m].bucket,
                                                               .count = rd->bc[m].count};
            r->nhist = k - j;
            j = k;
            r->f.p50 = hist_q(r->hist, r->nhist, &r->f, 0.50);
            r->f.p90 = hist_q(r->hist, r->nhist, &r->f, 0.90);
            r->f.p99 = hist_q(r->hist, r->nhist, &r->f, 0.99);
        }
    }
    return TROVE_OK;
}

static void reader_free(struct reader *rd)
{
    for (size_t i = 0; i < rd->naccs; i++)
        free(rd->accs[i].durs);
    free(rd->accs);
    free(rd->bc);
    for (size_t i = 0; i < rd->nlabels; i++)
        free(rd->labels[i]);
    free(rd->labels);
    kmap_free(&rd->keys);
    kmap_free(&rd->buckets);
    kmap_free(&rd->tracks);
    kmap_free(&rd->label_of);
    trove__sumread_close(&rd->r);
    trove_names_free(rd->names);
}

/* Per name, from the summaries (trove_capture_stats). */
static int side_from_stats(struct trove_store *s, const char *name, uint64_t from, uint64_t to,
                           struct trove_diff_side *side, struct trove_diag *diag)
{
    struct trove_stats_options o = {0};
    struct trove_stats_result res;
    int rc;

    o.from_ns = from;
    o.to_ns = to;
    o.sort = TROVE_STATS_SORT_TOTAL;
    o.limit = 0;
    if ((rc = trove_capture_stats(s, name, &o, &res, diag)) != TROVE_OK)
        return rc;
    side->from_ns = res.from_ns;
    side->to_ns = res.to_ns;
    side->events = res.events;
    for (size_t i = 0; rc == TROVE_OK && i < res.nrows; i++) {
        const struct trove_stats_row *w = &res.rows[i];
        struct trove_diff_figures f = {w->count, w->total, w->min, w->max, w->p50, w->p90, w->p99};
        rc = trove_diff_side_add(side, w->name, w->name_len, NULL, &f, w->hist, w->nhist);
    }
    trove_stats_result_free(&res);
    if (rc == TROVE_ERR_NOMEM)
        return TROVE_FAIL(diag, rc, 0, "out of memory");
    return rc;
}

int trove_diff_side_read(struct trove_store *s, const char *name, uint64_t from_ns,
                         uint64_t to_ns, int by_thread, int method, struct trove_diff_side *out,
                         struct trove_diag *diag)
{
    struct reader rd;
    uint64_t from = from_ns, to;
    int rc;

    memset(&rd, 0, sizeof rd);
    if ((rc = trove_diff_side_init(out, name, 0, 0, 0)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, rc == TROVE_ERR_NOMEM ? "out of memory" : "no capture name");
    out->by_thread = by_thread != 0;
    if (method < TROVE_DIFF_AUTO || method > TROVE_DIFF_SKETCH)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no such method %d", method);
    if ((rc = trove_names_new(&rd.names)) != TROVE_OK ||
        (rc = trove_capture_read_names(s, name, rd.names, diag)) != TROVE_OK ||
        (rc = trove__sumread_open(&rd.r, s, name, NULL, diag)) != TROVE_OK)
        goto out;
    to = to_ns ? to_ns : (rd.r.h.info.end_ns == UINT64_MAX ? UINT64_MAX : rd.r.h.info.end_ns + 1);
    if (to <= from) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "%s: the range ends (%" PRIu64 ") at or before it starts (%" PRIu64 ")",
                        name, to, from);
        goto out;
    }
    rd.exact = method == TROVE_DIFF_EXACT ||
               (method == TROVE_DIFF_AUTO && rd.r.h.info.events <= TROVE_DIFF_EXACT_MAX);
    rd.by_thread = out->by_thread;
    rd.diag = diag;
    if (!rd.exact && !by_thread) {
        trove__sumread_close(&rd.r);
        memset(&rd.r, 0, sizeof rd.r);
        rc = side_from_stats(s, name, from_ns, to_ns, out, diag);
        goto out;
    }
    out->from_ns = from > rd.r.h.info.first_ns ? from : rd.r.h.info.first_ns;
    out->to_ns = rd.r.h.info.end_ns < UINT64_MAX && to > rd.r.h.info.end_ns + 1 ? rd.r.h.info.end_ns + 1 : to;
    for (uint64_t k = 0; k < rd.r.h.info.segments; k++) {
        const struct trove_capture_segment *g = &rd.r.h.seg[k];
        size_t n;
        if (g->max_start_ns < from || g->min_start_ns >= to)
            continue;
        if ((rc = trove__sumread_segment(&rd.r, k, &n, diag)) != TROVE_OK)
            goto out;
        for (size_t i = 0; i < n; i++) {
            const struct trove_event *e = &rd.r.ev[i];
            if (e->kind == TROVE_KIND_COUNTER || e->start_ns < from || e->start_ns >= to)
                continue;
            if ((rc = add_event(&rd, e)) != TROVE_OK) {
                rc = TROVE_FAIL(diag, rc, 0, "out of memory");
                goto out;
            }
            out->events++;
        }
    }
    if ((rc = reader_rows(&rd, out)) != TROVE_OK) {
        rc = TROVE_FAIL(diag, rc, 0, "out of memory");
        goto out;
    }
    out->exact = rd.exact;
out:
    reader_free(&rd);
    return rc;
}

/* ---- the comparison ---------------------------------------------------------------------------- */

struct pair {
    const struct trove_diff_row *a, *b;
    int cls;          /* the sort's group (below) */
    double dtotal;    /* b's total - a's */
    int tested, exact, sig;
    double u, z, p, effect, shift;
};

/* The groups, in the order they are listed. */
enum { SLOWER, NEW, FASTER, GONE, REST };

struct ranks {
    long double na, nb, cum, ra, ties;
};

static void tie_group(struct ranks *k, uint64_t ca, uint64_t cb)
{
    long double t = (long double)ca + (long double)cb;
    if (t == 0)
        return;
    k->ra += (long double)ca * (k->cum + (t + 1) / 2);
    k->ties += t * t * t - t;
    k->cum += t;
}

/* A row's histogram, made from its durations when it has them (*owned then to be freed). */
static const struct trove_summary_bucket *hist_of(const struct trove_diff_row *r, size_t *n,
                                                  struct trove_summary_bucket **owned)
{
    size_t m = 0;

    *owned = NULL;
    if (!r->durs) {
        *n = r->nhist;
        return r->hist;
    }
    if (r->f.count && !(*owned = trove__mallocarray((size_t)r->f.count, sizeof **owned)))
        return NULL;
    for (size_t i = 0; i < r->f.count; i++) { /* sorted: a bucket's durations are a run */
        uint32_t b = trove_summary_bucket_of(r->durs[i]);
        if (m && (*owned)[m - 1].index == b)
            (*owned)[m - 1].count++;
        else
            (*owned)[m++] = (struct trove_summary_bucket){.index = b, .count = 1};
    }
    *n = m;
    return *owned;
}

/* Pairs (i in A, j in B) whose bucket index difference j - i is at most k. */
static long double pairs_upto(const struct trove_summary_bucket *ha, size_t na,
                              const struct trove_summary_bucket *hb, size_t nb, long k,
                              const long double *suffix)
{
    long double n = 0;
    size_t i = 0;

    for (size_t j = 0; j < nb; j++) { /* A's buckets at or above hb[j] - k */
        while (i < na && (long)ha[i].index < (long)hb[j].index - k)
            i++;
        n += (long double)hb[j].count * suffix[i];
    }
    return n;
}

/* The Hodges–Lehmann estimate of B over A: the median, over every pair of an instance of A
 * and one of B, of the ratio of their durations, read in buckets (each G = 1.02 wide, so
 * within 2 %): G to the median of the pairs' bucket differences. 1 when either is empty. */
static double hl_shift(const struct trove_summary_bucket *ha, size_t na,
                       const struct trove_summary_bucket *hb, size_t nb, long double *suffix)
{
    long double total = 0, half;
    long lo, hi, k1 = 0, k2 = 0;

    if (!na || !nb)
        return 1;
    suffix[na] = 0;
    for (size_t i = na; i-- > 0;)
        suffix[i] = suffix[i + 1] + (long double)ha[i].count;
    for (size_t j = 0; j < nb; j++)
        total += (long double)hb[j].count;
    total *= suffix[0];
    if (total == 0)
        return 1;
    half = total / 2;
    /* the least k with at least half the pairs at or below it, and the least with more */
    for (int pass = 0; pass < 2; pass++) {
        lo = (long)hb[0].index - (long)ha[na - 1].index;
        hi = (long)hb[nb - 1].index - (long)ha[0].index;
        while (lo < hi) {
            long mid = lo + (hi - lo) / 2; /* hi - lo > 0: lo <= mid < hi */
            long double c = pairs_upto(ha, na, hb, nb, mid, suffix);
            if (pass == 0 ? c >= half : c > half)
                hi = mid;
            else
                lo = mid + 1;
        }
        if (pass == 0)
            k1 = lo;
        else
            k2 = lo;
    }
    return pow(1.02, (double)(k1 + k2) / 2);
}

static int rank_test(struct pair *p)
{
    const struct trove_diff_row *a = p->a, *b = p->b;
    struct ranks k = {(long double)a->f.count, (long double)b->f.count, 0, 0, 0};
    struct trove_summary_bucket *oa = NULL, *ob = NULL;
    const struct trove_summary_bucket *ha, *hb;
    size_t hna = 0, hnb = 0;
    long double n, ua, ub, mu, var, d, *suffix;

    if (!a->f.count || !b->f.count)
        return TROVE_OK;
    ha = hist_of(a, &hna, &oa);
    hb = hist_of(b, &hnb, &ob);
    if ((a->durs && !oa) || (b->durs && !ob) ||
        !(suffix = trove__mallocarray(hna + 1, sizeof *suffix))) {
        free(oa);
        free(ob);
        return TROVE_ERR_NOMEM;
    }
    p->shift = hl_shift(ha, hna, hb, hnb, suffix);
    free(suffix);
    if (a->durs && b->durs) {
        size_t i = 0, j = 0, na = (size_t)a->f.count, nb = (size_t)b->f.count;
        while (i < na || j < nb) {
            uint64_t v = i < na && (j >= nb || a->durs[i] <= b->durs[j]) ? a->durs[i] : b->durs[j];
            uint64_t ca = 0, cb = 0;
            while (i < na && a->durs[i] == v)
                i++, ca++;
            while (j < nb && b->durs[j] == v)
                j++, cb++;
            tie_group(&k, ca, cb);
        }
        p->exact = 1;
    } else {
        size_t na = hna, nb = hnb, i = 0, j = 0;
        while (i < na || j < nb) {
            uint32_t v = i < na && (j >= nb || ha[i].index <= hb[j].index) ? ha[i].index : hb[j].index;
            uint64_t ca = 0, cb = 0;
            if (i < na && ha[i].index == v)
                ca = ha[i++].count;
            if (j < nb && hb[j].index == v)
                cb = hb[j++].count;
            tie_group(&k, ca, cb);
        }
        /* a histogram that holds fewer than the count (none at all: a service's row without
         * one) leaves the rest out of the ranks; the test is of what it holds */
        k.na = 0;
        for (i = 0; i < na; i++)
            k.na += (long double)ha[i].count;
        k.nb = 0;
        for (j = 0; j < nb; j++)
            k.nb += (long double)hb[j].count;
        p->exact = 0;
    }
    free(oa);
    free(ob);
    if (k.na == 0 || k.nb == 0)
        return TROVE_OK;
    n = k.na + k.nb;
    ua = k.ra - k.na * (k.na + 1) / 2;
    ub = k.na * k.nb - ua;
    mu = k.na * k.nb / 2;
    var = k.na * k.nb / 12 * ((n + 1) - (n > 1 ? k.ties / (n * (n - 1)) : 0));
    p->tested = 1;
    p->u = (double)ub;
    p->effect = (double)(ub / (k.na * k.nb));
    if (!(var > 0)) {
        p->z = 0;
        p->p = 1;
        return TROVE_OK;
    }
    d = fabsl(ub - mu) - 0.5L;
    if (d < 0)
        d = 0;
    p->z = (double)(ub >= mu ? d / sqrtl(var) : -d / sqrtl(var));
    p->p = erfc(fabs(p->z) / sqrt(2.0));
    return TROVE_OK;
}

static int key_cmp(const struct trove_diff_row *x, const struct trove_diff_row *y)
{
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c;
    if (x->thread || y->thread) {
        c = strcmp(x->thread ? x->thread : "", y->thread ? y->thread : "");
        if (c)
            return c;
    }
    c = n ? memcmp(x->name, y->name, n) : 0;
    if (c)
        return c;
    return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

static int rowp_cmp(const void *a, const void *b)
{
    return key_cmp(*(const struct trove_diff_row *const *)a, *(const struct trove_diff_row *const *)b);
}

/* By name alone (a side's distinct names across its threads). */
static int rowp_name_cmp(const void *a, const void *b)
{
    const struct trove_diff_row *x = *(const struct trove_diff_row *const *)a;
    const struct trove_diff_row *y = *(const struct trove_diff_row *const *)b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = n ? memcmp(x->name, y->name, n) : 0;
    if (c)
        return c;
    return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

static double total_of(const struct trove_diff_row *r) { return r ? (double)r->f.total : 0; }

static int pair_cmp(const void *x, const void *y)
{
    const struct pair *a = x, *b = y;
    double ka, kb;
    if (a->cls != b->cls)
        return a->cls < b->cls ? -1 : 1;
    switch (a->cls) {
    case SLOWER: ka = -a->dtotal; kb = -b->dtotal; break;
    case NEW: ka = -total_of(a->b); kb = -total_of(b->b); break;
    case FASTER: ka = a->dtotal; kb = b->dtotal; break;
    case GONE: ka = -total_of(a->a); kb = -total_of(b->a); break;
    default: ka = -fabs(a->dtotal); kb = -fabs(b->dtotal); break;
    }
    if (ka != kb)
        return ka < kb ? -1 : 1;
    if (a->cls == REST) { /* unchanged: the names of most time first */
        ka = -fmax(total_of(a->a), total_of(a->b));
        kb = -fmax(total_of(b->a), total_of(b->b));
        if (ka != kb)
            return ka < kb ? -1 : 1;
    }
    return key_cmp(a->a ? a->a : a->b, b->a ? b->a : b->b);
}

static int put_figures(struct trove_bytes *out, const struct trove_diff_row *r)
{
    if (!r)
        return trove__sumread_fmt(out, "null");
    return trove__sumread_fmt(out,
                              "{\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64
                              ",\"p50_ns\":%.0f,\"p90_ns\":%.0f,\"p99_ns\":%.0f,\"max_ns\":%" PRIu64 "}",
                              r->f.count, r->f.total, r->f.min, r->f.p50, r->f.p90, r->f.p99,
                              r->f.max);
}

/* "%.6g" of b / a, or null when a is 0. */
static int put_ratio(struct trove_bytes *out, const char *key, double a, double b, int last)
{
    if (a == 0)
        return trove__sumread_fmt(out, "\"%s\":null%s", key, last ? "" : ",");
    return trove__sumread_fmt(out, "\"%s\":%.6g%s", key, b / a, last ? "" : ",");
}

static int put_side(struct trove_bytes *out, const char *key, const struct trove_diff_side *s)
{
    const struct trove_diff_row **v = NULL;
    size_t names = s->nrows;
    int rc;

    if (s->by_thread && s->nrows) { /* distinct names across the threads */
        if (!(v = trove__mallocarray(s->nrows, sizeof *v)))
            return TROVE_ERR_NOMEM;
        for (size_t i = 0; i < s->nrows; i++)
            v[i] = &s->rows[i];
        qsort(v, s->nrows, sizeof *v, rowp_name_cmp);
        names = 0;
        for (size_t i = 0; i < s->nrows; i++)
            if (!i || rowp_name_cmp(&v[i], &v[i - 1]))
                names++;
        free(v);
    }
    rc = trove__sumread_fmt(out, "\"%s\":{\"capture\":", key);
    rc = rc ? rc : trove__json_put_str(out, s->capture ? s->capture : "", s->capture ? strlen(s->capture) : 0);
    return rc ? rc : trove__sumread_fmt(out,
                                        ",\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64
                                        ",\"events\":%" PRIu64 ",\"names\":%zu}",
                                        s->from_ns, s->to_ns, s->events, names);
}

static int put_pair(struct trove_bytes *out, const struct pair *p, int first)
{
    const struct trove_diff_row *k = p->a ? p->a : p->b;
    static const char *const change[] = {"slower", "new", "faster", "gone", "same"};
    int rc = trove__sumread_fmt(out, "%s{\"name\":", first ? "" : ",");

    rc = rc ? rc : trove__json_put_str(out, k->name, k->name_len);
    if (!rc && k->thread) {
        rc = trove__sumread_fmt(out, ",\"thread\":");
        rc = rc ? rc : trove__json_put_str(out, k->thread, strlen(k->thread));
    }
    rc = rc ? rc : trove__sumread_fmt(out, ",\"in\":\"%s\",\"change\":\"%s\",\"significant\":%s,\"a\":",
                                      p->a && p->b ? "both" : p->a ? "a" : "b", change[p->cls],
                                      p->sig ? "true" : "false");
    rc = rc ? rc : put_figures(out, p->a);
    rc = rc ? rc : trove__sumread_fmt(out, ",\"b\":");
    rc = rc ? rc : put_figures(out, p->b);
    if (!rc && p->a && p->b) {
        const struct trove_diff_figures *a = &p->a->f, *b = &p->b->f;
        rc = trove__sumread_fmt(out, ",\"ratio\":{");
        rc = rc ? rc : put_ratio(out, "count", (double)a->count, (double)b->count, 0);
        rc = rc ? rc : put_ratio(out, "total", (double)a->total, (double)b->total, 0);
        rc = rc ? rc : put_ratio(out, "p50", a->p50, b->p50, 0);
        rc = rc ? rc : put_ratio(out, "p90", a->p90, b->p90, 0);
        rc = rc ? rc : put_ratio(out, "p99", a->p99, b->p99, 0);
        rc = rc ? rc : put_ratio(out, "max", (double)a->max, (double)b->max, 1);
        rc = rc ? rc : trove__sumread_fmt(out,
                                          "},\"delta\":{\"count\":%.0f,\"total_ns\":%.0f,\"p50_ns\":%.0f"
                                          ",\"p90_ns\":%.0f,\"p99_ns\":%.0f,\"max_ns\":%.0f}",
                                          (double)b->count - (double)a->count,
                                          (double)b->total - (double)a->total, b->p50 - a->p50,
                                          b->p90 - a->p90, b->p99 - a->p99,
                                          (double)b->max - (double)a->max);
    } else if (!rc) {
        rc = trove__sumread_fmt(out, ",\"ratio\":null,\"delta\":null");
    }
    if (!rc && p->tested)
        rc = trove__sumread_fmt(out,
                                ",\"test\":{\"method\":\"%s\",\"u\":%.1f,\"z\":%.4g,\"p\":%.4g,\"effect\":%.4f"
                                ",\"shift\":%.4g}}",
                                p->exact ? "exact" : "sketch", p->u, p->z, p->p, p->effect, p->shift);
    else if (!rc)
        rc = trove__sumread_fmt(out, ",\"test\":null}");
    return rc;
}

static int name_kept(const struct trove_diff_options *o, const struct trove_diff_row *r)
{
    if (!o->nglobs)
        return 1;
    for (size_t i = 0; i < o->nglobs; i++)
        if (o->globs[i] && fnmatch(o->globs[i], r->name, 0) == 0)
            return 1;
    return 0;
}

int trove_diff_json(const struct trove_diff_side *a, const struct trove_diff_side *b,
                    const struct trove_diff_options *opt, struct trove_bytes *out)
{
    static const struct trove_diff_options none = {0};
    const struct trove_diff_options *o = opt ? opt : &none;
    const struct trove_diff_row **va = NULL, **vb = NULL;
    struct pair *pairs = NULL;
    size_t np = 0, i = 0, j = 0, shown, nsig = 0;
    double alpha = o->alpha > 0 ? o->alpha : TROVE_DIFF_ALPHA;
    double eff = o->min_effect == 0 ? TROVE_DIFF_MIN_EFFECT : o->min_effect < 0 ? 0 : o->min_effect;
    int rc = TROVE_OK;

    if (!a || !b || !out || a->by_thread != b->by_thread)
        return TROVE_ERR_INVALID;
    va = trove__mallocarray(a->nrows + 1, sizeof *va);
    vb = trove__mallocarray(b->nrows + 1, sizeof *vb);
    pairs = trove__mallocarray(a->nrows + b->nrows + 1, sizeof *pairs);
    if (!va || !vb || !pairs) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < a->nrows; k++)
        va[k] = &a->rows[k];
    for (size_t k = 0; k < b->nrows; k++)
        vb[k] = &b->rows[k];
    qsort(va, a->nrows, sizeof *va, rowp_cmp);
    qsort(vb, b->nrows, sizeof *vb, rowp_cmp);
    while (i < a->nrows || j < b->nrows) {
        struct pair p;
        int c = i >= a->nrows ? 1 : j >= b->nrows ? -1 : key_cmp(va[i], vb[j]);
        memset(&p, 0, sizeof p);
        p.a = c <= 0 ? va[i++] : NULL;
        p.b = c >= 0 ? vb[j++] : NULL;
        {
            const struct trove_diff_row *k = p.a ? p.a : p.b;
            uint64_t ca = p.a ? p.a->f.count : 0, cb = p.b ? p.b->f.count : 0;
            if (!name_kept(o, k) || (ca < o->min_count && cb < o->min_count))
                continue;
        }
        p.dtotal = total_of(p.b) - total_of(p.a);
        if (p.a && p.b) {
            if ((rc = rank_test(&p)) != TROVE_OK)
                goto out;
            p.sig = p.tested && p.p < alpha && (p.shift >= 1 + eff || p.shift <= 1 / (1 + eff));
            p.cls = !p.sig ? REST : p.shift > 1 ? SLOWER : FASTER;
        } else {
            p.cls = p.a ? GONE : NEW;
        }
        pairs[np++] = p;
    }
    qsort(pairs, np, sizeof *pairs, pair_cmp);
    shown = o->limit && o->limit < np ? o->limit : np;
    for (size_t k = 0; k < np; k++)
        nsig += pairs[k].sig != 0;
    rc = trove__sumread_fmt(out, "{");
    rc = rc ? rc : put_side(out, "a", a);
    rc = rc ? rc : trove__sumread_fmt(out, ",");
    rc = rc ? rc : put_side(out, "b", b);
    rc = rc ? rc : trove__sumread_fmt(out,
                                      ",\"by\":\"%s\",\"method\":\"%s\",\"alpha\":%g,\"min_effect\":%g"
                                      ",\"min_count\":%" PRIu64 ",\"nrows\":%zu,\"significant\":%zu,\"rows\":[",
                                      a->by_thread ? "thread" : "name",
                                      a->exact && b->exact ? "exact" : "sketch", alpha, eff,
                                      o->min_count, np, nsig);
    for (size_t k = 0; rc == TROVE_OK && k < shown; k++)
        rc = put_pair(out, &pairs[k], k == 0);
    rc = rc ? rc : trove__sumread_fmt(out, "]}");
out:
    free(va);
    free(vb);
    free(pairs);
    return rc;
}
