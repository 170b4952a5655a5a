/*
 * summary.c: summary nodes (include/trove/summary.h) — built from a segment's events, merged
 * into the nodes above, and their object (docs/formats/summary.md is the specification).
 *
 * A node is made so that it is a function of its events alone: the tracks, cells, long
 * events and sketches are sorted by their keys, a cell's dominant name is chosen by a rule
 * that does not depend on order, and the shift is the least one (at or above the children's)
 * whose cells and long events fit the level's budget. So a level-0 node is the same bytes
 * wherever its segment is, and a node above is the same whether it was merged at once
 * (trove index, an import) or child by child as a live capture grew.
 */
#include "summary_internal.h"
#include "trove/testing.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"
#include "common/sealed.h"
#include "common/varint.h"

#include <inttypes.h>
#include <libdeflate.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define GROWTH 1.02

/* ---- small helpers ------------------------------------------------------------------- */

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

int trove__summary_is_span(uint8_t kind)
{
    return kind == TROVE_KIND_ZONE || kind == TROVE_KIND_FRAME || kind == TROVE_KIND_LOCK;
}

uint32_t trove__summary_lane(const struct trove_event *e)
{
    if (trove__summary_is_span(e->kind))
        return e->depth;
    return e->kind == TROVE_KIND_COUNTER ? TROVE_SUMMARY_LANE_COUNTER : TROVE_SUMMARY_LANE_INSTANT;
}

/* A long event at this shift: a zone, frame or lock of at least 2^shift ns. */
int trove__summary_is_long(const struct trove_event *e, uint32_t shift)
{
    return trove__summary_is_span(e->kind) && (e->dur_ns >> shift) != 0;
}

/* A counter value's bits mapped so that unsigned order is the values' order (negative
 * values reversed below the positive ones; NaNs at the ends). */
static uint64_t order_bits(uint64_t b)
{
    return (b >> 63) ? ~b : b | ((uint64_t)1 << 63);
}

uint64_t trove__summary_fine_budget(uint64_t events)
{
    uint64_t fine = events / TROVE__SUMMARY_FINE_DIV;
    return fine > TROVE__SUMMARY_LEAF_MIN ? fine : TROVE__SUMMARY_LEAF_MIN;
}

uint64_t trove__summary_budget(uint32_t level, uint64_t events)
{
    uint64_t leaf = events / TROVE__SUMMARY_LEAF_DIV;
    if (level > 0)
        return TROVE__SUMMARY_GROUP_BUDGET;
    return leaf > TROVE__SUMMARY_LEAF_MIN ? leaf : TROVE__SUMMARY_LEAF_MIN;
}

/* bounds[j]: the greatest duration of bucket j + 1, floor(G^j), for j = 0 .. 2241 (G^2241
 * passes 2^64); first_of[b][m]: the least j whose bound reaches the least duration whose top
 * bit is b and whose next 8 bits are m, so that a duration's bucket is a step or two from
 * it. Made once. */
#define NBOUNDS 2242u
static uint64_t bounds[NBOUNDS];
static uint16_t first_of[64][256];
static pthread_once_t bounds_once = PTHREAD_ONCE_INIT;

static void make_bounds(void)
{
    uint32_t j = 0;

    for (uint32_t i = 0; i < NBOUNDS; i++) {
        double g = pow(GROWTH, (double)i);
        bounds[i] = g >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)g;
    }
    for (unsigned b = 0; b < 64; b++)
        for (unsigned m = 0; m < 256; m++) {
            uint64_t least = b >= 8 ? (uint64_t)(256 + m) << (b - 8) : (256 + m) >> (8 - b);
            while (j + 1 < NBOUNDS && bounds[j] < least)
                j++;
            first_of[b][m] = (uint16_t)j;
        }
}

uint32_t trove_summary_bucket_of(uint64_t dur)
{
    unsigned b, m;
    uint32_t j;

    if (dur == 0)
        return 0;
    pthread_once(&bounds_once, make_bounds);
    b = 63u - (unsigned)__builtin_clzll(dur);
    m = (unsigned)((b >= 8 ? dur >> (b - 8) : dur << (8 - b)) & 255);
    for (j = first_of[b][m]; j + 1 < NBOUNDS && bounds[j] < dur; j++)
        ;
    return 1 + j;
}

double trove_summary_bucket_value(uint32_t index)
{
    if (index == 0)
        return 0;
    return 2.0 * pow(GROWTH, (double)index - 1) / (GROWTH + 1);
}

double trove_summary_quantile(const struct trove_summary *s,
                              const struct trove_summary_sketch *k, double q)
{
    uint64_t rank, seen = 0;
    double v = 0;

    if (!k->count)
        return 0;
    if (q < 0)
        q = 0;
    if (q > 1)
        q = 1;
    rank = (uint64_t)ceil(q * (double)k->count);
    if (rank < 1)
        rank = 1;
    for (size_t i = 0; i < k->n; i++) {
        const struct trove_summary_bucket *b = &s->buckets[k->first + i];
        seen += b->count;
        if (seen >= rank) {
            v = trove_summary_bucket_value(b->index);
            break;
        }
    }
    if (v < (double)k->min)
        v = (double)k->min;
    if (v > (double)k->max)
        v = (double)k->max;
    return v;
}

void trove_summary_free(struct trove_summary *s)
{
    if (!s)
        return;
    free(s->tracks);
    free(s->cells);
    free(s->longs);
    free(s->sketches);
    free(s->buckets);
    memset(s, 0, sizeof *s);
}

/* Fold the event of a cell (or another cell) into c: count, busy, dominance, values. */
static void cell_add(struct trove_summary_cell *c, const struct trove_summary_cell *o)
{
    if (c->count == 0) {
        *c = *o;
        return;
    }
    c->count = sat_add(c->count, o->count);
    c->busy = sat_add(c->busy, o->busy);
    if (o->name_dur > c->name_dur || (o->name_dur == c->name_dur && o->name < c->name)) {
        c->name = o->name;
        c->name_dur = o->name_dur;
    }
    if (c->lane == TROVE_SUMMARY_LANE_COUNTER) {
        if (order_bits(o->vmin) < order_bits(c->vmin))
            c->vmin = o->vmin;
        if (order_bits(o->vmax) > order_bits(c->vmax))
            c->vmax = o->vmax;
    }
}

/* The one-event cell of e on track t at shift. */
static struct trove_summary_cell cell_of(const struct trove_event *e, uint32_t t, uint32_t shift)
{
    struct trove_summary_cell c;
    int span = trove__summary_is_span(e->kind);

    memset(&c, 0, sizeof c);
    c.track = t;
    c.lane = trove__summary_lane(e);
    c.col = e->start_ns >> shift;
    c.count = 1;
    c.busy = span ? e->dur_ns : 0;
    c.name = e->name_id;
    c.name_dur = span ? e->dur_ns : 0;
    if (c.lane == TROVE_SUMMARY_LANE_COUNTER)
        c.vmin = c.vmax = e->dur_ns;
    return c;
}

static int cell_cmp(const void *a, const void *b)
{
    const struct trove_summary_cell *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->lane != y->lane)
        return x->lane < y->lane ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return 0;
}

static int long_cmp(const void *a, const void *b)
{
    const struct trove_summary_long *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->ev.start_ns != y->ev.start_ns)
        return x->ev.start_ns < y->ev.start_ns ? -1 : 1;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return 0;
}

/* Merge sorted cells x[0..nx) and y[0..ny) into dst (room for nx + ny), folding equal
 * keys (within either list too); returns the count. */
static size_t fold_merge(struct trove_summary_cell *dst, const struct trove_summary_cell *x,
                         size_t nx, const struct trove_summary_cell *y, size_t ny)
{
    size_t i = 0, j = 0, m = 0;

    while (i < nx || j < ny) {
        const struct trove_summary_cell *c =
            j == ny || (i < nx && cell_cmp(&x[i], &y[j]) <= 0) ? &x[i++] : &y[j++];
        if (m > 0 && cell_cmp(&dst[m - 1], c) == 0)
            cell_add(&dst[m - 1], c);
        else
            dst[m++] = *c;
    }
    return m;
}

/*
 * Raise s's shift to `shift` (>= its own, cells sorted): columns shift, long events shorter
 * than 2^shift join the cells, equal cells fold. TROVE_ERR_NOMEM leaves s as it was.
 */
static int relevel(struct trove_summary *s, uint32_t shift)
{
    struct trove_summary_cell *cells = NULL, *joined = NULL;
    size_t keep = 0, n = 0;

    if (!(cells = trove__calloc(s->nlongs + 1, sizeof *cells)) ||
        !(joined = trove__calloc(s->ncells + s->nlongs + 1, sizeof *joined))) {
        free(cells);
        return TROVE_ERR_NOMEM;
    }
    for (size_t i = 0; i < s->ncells; i++)
        s->cells[i].col >>= shift - s->shift;
    for (size_t i = 0; i < s->nlongs; i++) {
        if (trove__summary_is_long(&s->longs[i].ev, shift))
            s->longs[keep++] = s->longs[i];
        else
            cells[n++] = cell_of(&s->longs[i].ev, s->longs[i].track, shift);
    }
    qsort(cells, n, sizeof *cells, cell_cmp);
    s->ncells = fold_merge(joined, s->cells, s->ncells, cells, n);
    free(cells);
    free(s->cells);
    s->cells = joined;
    s->nlongs = keep;
    s->shift = shift;
    return TROVE_OK;
}

int trove__summary_track_cmp(const struct trove_summary_track *a,
                             const struct trove_summary_track *b)
{
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static int track_cmp_raw(const void *a, const void *b) { return trove__summary_track_cmp(a, b); }

/* ---- building a segment's node ---------------------------------------------------------- */

/* A small open-addressing map from a 64-bit key to a dense id (first seen, first id). */
struct idmap {
    uint64_t *key;
    uint32_t *id;
    size_t cap, n;
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static int idmap_grow(struct idmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *key = trove__mallocarray(cap, sizeof *key);
    uint32_t *id = trove__mallocarray(cap, sizeof *id);

    if (!key || !id) {
        free(key);
        free(id);
        return TROVE_ERR_NOMEM;
    }
    memset(id, 0xff, cap * sizeof *id);
    for (size_t i = 0; i < m->cap; i++) {
        size_t j;
        if (m->id[i] == UINT32_MAX)
            continue;
        for (j = mix64(m->key[i]) & (cap - 1); id[j] != UINT32_MAX; j = (j + 1) & (cap - 1))
            ;
        key[j] = m->key[i];
        id[j] = m->id[i];
    }
    free(m->key);
    free(m->id);
    m->key = key;
    m->id = id;
    m->cap = cap;
    return TROVE_OK;
}

/* The id of key, made if new (*id_out); TROVE_ERR_NOMEM. */
static int idmap_get(struct idmap *m, uint64_t key, uint32_t *id_out)
{
    size_t j;

    if ((m->n + 1) * 2 > m->cap && idmap_grow(m) != TROVE_OK)
        return TROVE_ERR_NOMEM;
    for (j = mix64(key) & (m->cap - 1); m->id[j] != UINT32_MAX; j = (j + 1) & (m->cap - 1))
        if (m->key[j] == key) {
            *id_out = m->id[j];
            return TROVE_OK;
        }
    m->key[j] = key;
    m->id[j] = (uint32_t)m->n++;
    *id_out = m->id[j];
    return TROVE_OK;
}

static void idmap_free(struct idmap *m)
{
    free(m->key);
    free(m->id);
}

/* Sort v[0..n) by key (the low `bits` bits) with its payload, least significant digit first
 * through tmp (n entries): stable, so equal keys keep their order. */
struct kv {
    uint64_t key;
    uint32_t i;
};

static void radix(struct kv *v, struct kv *tmp, size_t n, unsigned bits)
{
    size_t count[2048];

    for (unsigned shift = 0; shift < bits; shift += 11) {
        size_t sum = 0;
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++)
            count[(v[i].key >> shift) & 2047]++;
        for (size_t d = 0; d < 2048; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp[count[(v[i].key >> shift) & 2047]++] = v[i];
        memcpy(v, tmp, n * sizeof *v);
    }
}

static unsigned top_bit(uint64_t x) { return 63u - (unsigned)__builtin_clzll(x); }

/* A segment's events grouped by (track, lane), each group in start order. */
struct groups {
    uint32_t *track;   /* event i's track (final, by (pid, tid)) */
    uint32_t *ord;     /* event indexes, group by group */
    size_t *first;     /* group g: ord[first[g] .. first[g + 1]) */
    uint64_t *gkey;    /* group g's key: track << 9 | lane, groups in key order */
    size_t ngroups;
    struct trove_event *sev; /* the events in ord's order: the passes read them in turn */
};

static void groups_free(struct groups *g)
{
    free(g->track);
    free(g->ord);
    free(g->first);
    free(g->gkey);
    free(g->sev);
}

static int by_track(const void *a, const void *b)
{
    return track_cmp_raw(a, b);
}

static int group(const struct trove_event *events, size_t n, struct trove_summary *out,
                 struct groups *g)
{
    struct idmap tm = {0}, gm = {0};
    uint32_t *rank = NULL, *gid = NULL, *grank = NULL;
    struct kv *kv = NULL, *tmp = NULL;
    size_t *cnt = NULL;
    int rc = TROVE_ERR_NOMEM;

    memset(g, 0, sizeof *g);
    if (!(g->track = trove__mallocarray(n ? n : 1, sizeof *g->track)) ||
        !(g->ord = trove__mallocarray(n ? n : 1, sizeof *g->ord)) ||
        !(gid = trove__mallocarray(n ? n : 1, sizeof *gid)))
        goto out;
    for (size_t i = 0; i < n; i++)
        if (idmap_get(&tm, (uint64_t)events[i].pid << 32 | events[i].tid, &g->track[i]))
            goto out;
    /* the tracks, by (pid, tid) */
    if (!(out->tracks = trove__calloc(tm.n + 1, sizeof *out->tracks)) ||
        !(rank = trove__mallocarray(tm.n + 1, sizeof *rank)))
        goto out;
    for (size_t i = 0; i < tm.cap; i++)
        if (tm.id[i] != UINT32_MAX) {
            out->tracks[tm.id[i]].pid = (uint32_t)(tm.key[i] >> 32);
            out->tracks[tm.id[i]].tid = (uint32_t)tm.key[i];
            out->tracks[tm.id[i]].events = tm.id[i]; /* its first-seen id, for the ranks */
        }
    qsort(out->tracks, tm.n, sizeof *out->tracks, by_track);
    for (size_t t = 0; t < tm.n; t++) {
        rank[out->tracks[t].events] = (uint32_t)t;
        out->tracks[t].events = 0;
    }
    out->ntracks = tm.n;
    for (size_t i = 0; i < n; i++) {
        g->track[i] = rank[g->track[i]];
        if (idmap_get(&gm, (uint64_t)g->track[i] << 9 | trove__summary_lane(&events[i]), &gid[i]))
            goto out;
    }
    /* the groups, by key; each group's events by start, then index */
    g->ngroups = gm.n;
    if (!(g->gkey = trove__mallocarray(gm.n + 1, sizeof *g->gkey)) ||
        !(grank = trove__mallocarray(gm.n + 1, sizeof *grank)) ||
        !(cnt = trove__calloc(gm.n + 1, sizeof *cnt)) ||
        !(g->first = trove__calloc(gm.n + 1, sizeof *g->first)) ||
        !(kv = trove__mallocarray(gm.n + 1, sizeof *kv)) ||
        !(tmp = trove__mallocarray(gm.n + 1, sizeof *tmp)))
        goto out;
    for (size_t i = 0; i < gm.cap; i++)
        if (gm.id[i] != UINT32_MAX) {
            kv[gm.id[i]].key = gm.key[i];
            kv[gm.id[i]].i = gm.id[i];
        }
    radix(kv, tmp, gm.n, 64 - (unsigned)__builtin_clzll((uint64_t)out->ntracks << 9 | 511));
    for (size_t r = 0; r < gm.n; r++) {
        g->gkey[r] = kv[r].key;
        grank[kv[r].i] = (uint32_t)r;
    }
    for (size_t i = 0; i < n; i++)
        cnt[grank[gid[i]]]++;
    for (size_t r = 0, sum = 0; r <= gm.n; r++) {
        g->first[r] = sum;
        if (r < gm.n)
            sum += cnt[r];
        if (r < gm.n)
            cnt[r] = g->first[r];
    }
    for (size_t i = 0; i < n; i++)
        g->ord[cnt[grank[gid[i]]]++] = (uint32_t)i;
    for (size_t r = 0; r < gm.n; r++) {
        uint32_t *o = g->ord + g->first[r];
        size_t m = g->first[r + 1] - g->first[r], j;
        struct kv *sv;
        for (j = 1; j < m && events[o[j - 1]].start_ns <= events[o[j]].start_ns; j++)
            ;
        if (j >= m)
            continue;
        /* out of start order (rare: a source that did not write a lane in order) */
        if (!(sv = trove__mallocarray(m * 2, sizeof *sv)))
            goto out;
        for (j = 0; j < m; j++) {
            sv[j].key = events[o[j]].start_ns;
            sv[j].i = o[j];
        }
        radix(sv, sv + m, m, 64);
        for (j = 0; j < m; j++)
            o[j] = sv[j].i;
        free(sv);
    }
    if (!(g->sev = trove__mallocarray(n ? n : 1, sizeof *g->sev)))
        goto out;
    for (size_t j = 0; j < n; j++)
        g->sev[j] = events[g->ord[j]];
    rc = TROVE_OK;
out:
    idmap_free(&tm);
    idmap_free(&gm);
    free(rank);
    free(gid);
    free(grank);
    free(cnt);
    free(kv);
    free(tmp);
    if (rc != TROVE_OK)
        groups_free(g);
    return rc;
}

/* Self times: a span less the spans one depth below it that it encloses on its thread.
 * Lanes d and d + 1 of a track are neighbouring groups; each child's parent is the lane-d
 * span of the greatest start at or before the child's (spans of one depth do not overlap). */
static void self_times(const struct groups *g, uint64_t *self)
{
    const struct trove_event *sev = g->sev;

    for (size_t r = 0; r < g->ngroups; r++)
        for (size_t j = g->first[r]; j < g->first[r + 1]; j++)
            self[g->ord[j]] = trove__summary_is_span(sev[j].kind) ? sev[j].dur_ns : 0;
    for (size_t r = 0; r + 1 < g->ngroups; r++) {
        uint64_t a = g->gkey[r], b = g->gkey[r + 1];
        size_t p = g->first[r], pend = g->first[r + 1], cend = g->first[r + 2];
        if (b != a + 1 || (a & 511) >= 255)
            continue; /* not lanes d and d + 1 of one track, both depths */
        for (size_t c = pend; c < cend; c++) {
            const struct trove_event *ch = &sev[c], *pa;
            while (p + 1 < pend && sev[p + 1].start_ns <= ch->start_ns)
                p++;
            pa = &sev[p];
            if (!trove__summary_is_span(ch->kind) || !trove__summary_is_span(pa->kind) ||
                pa->start_ns > ch->start_ns || trove_event_end(pa) < trove_event_end(ch))
                continue;
            self[g->ord[p]] = self[g->ord[p]] > ch->dur_ns ? self[g->ord[p]] - ch->dur_ns : 0;
        }
    }
}

int trove__summary_self_times(const struct trove_event *events, size_t n, uint64_t *self)
{
    struct trove_summary tracks;
    struct groups g;
    int rc;

    memset(&tracks, 0, sizeof tracks);
    if ((rc = group(events, n, &tracks, &g)) != TROVE_OK) {
        trove_summary_free(&tracks);
        return rc;
    }
    self_times(&g, self);
    groups_free(&g);
    trove_summary_free(&tracks);
    return TROVE_OK;
}

/* The least shift whose cells and long events fit the budget, counted without building
 * them: a group's cells at shift k are at most 1 + the neighbours (in start order) whose
 * starts differ at bit k or above, and its long events the spans of 2^k ns or more. */
static uint32_t choose_shift(const struct groups *g, uint64_t budget, uint64_t *bound_out,
                             uint64_t *longs_out)
{
    uint64_t diff[65] = {0}, longs[65] = {0}, cells = g->ngroups, lng = 0;
    const struct trove_event *sev = g->sev;

    for (size_t r = 0; r < g->ngroups; r++) {
        for (size_t j = g->first[r]; j < g->first[r + 1]; j++) {
            const struct trove_event *e = &sev[j];
            if (trove__summary_is_span(e->kind) && e->dur_ns)
                longs[top_bit(e->dur_ns)]++;
            if (j > g->first[r] && e->start_ns != sev[j - 1].start_ns)
                diff[top_bit(e->start_ns ^ sev[j - 1].start_ns)]++;
        }
    }
    for (int k = 63; k >= 0; k--) {
        cells += diff[k];
        lng += longs[k];
        diff[k] = cells + lng; /* at shift k */
        longs[k] = lng;
    }
    for (uint32_t k = 0; k < 63; k++)
        if (diff[k] <= budget || k == 62) {
            k = diff[k] <= budget ? k : 63;
            *bound_out = diff[k];
            *longs_out = longs[k];
            return k;
        }
    return 63; /* not reached */
}

static int sketches(const struct trove_event *events, size_t n, const uint64_t *self,
                    struct trove_summary *out)
{
    struct kv *v = trove__mallocarray(n ? 2 * n : 1, sizeof *v);
    uint64_t *dur = trove__mallocarray(n ? n : 1, sizeof *dur);
    size_t m = 0, ns = 0, nb = 0;
    uint32_t names = 0; /* past the greatest name: the sort reads only the key's bits in use */

    if (!v || !dur) {
        free(v);
        free(dur);
        return TROVE_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct trove_event *e = &events[i];
        dur[i] = trove__summary_is_span(e->kind) ? e->dur_ns : 0;
        if (e->kind == TROVE_KIND_COUNTER)
            continue;
        v[m].key = (uint64_t)e->name_id << 12 | trove_summary_bucket_of(dur[i]);
        v[m].i = (uint32_t)i;
        names |= e->name_id;
        m++;
    }
    radix(v, v + n, m, 12 + (names ? 32 - (unsigned)__builtin_clz(names) : 0));
    for (size_t j = 0; j < m; j++) {
        ns += j == 0 || v[j].key >> 12 != v[j - 1].key >> 12;
        nb += j == 0 || v[j].key != v[j - 1].key;
    }
    out->sketches = trove__calloc(ns ? ns : 1, sizeof *out->sketches);
    out->buckets = trove__calloc(nb ? nb : 1, sizeof *out->buckets);
    if (!out->sketches || !out->buckets) {
        free(v);
        free(dur);
        return TROVE_ERR_NOMEM;
    }
    ns = nb = 0;
    for (size_t j = 0; j < m; j++) {
        uint64_t d = dur[v[j].i];
        struct trove_summary_sketch *k;
        if (j == 0 || v[j].key >> 12 != v[j - 1].key >> 12) {
            k = &out->sketches[ns++];
            k->name = (uint32_t)(v[j].key >> 12);
            k->first = nb;
            k->min = d;
            k->max = d;
        }
        k = &out->sketches[ns - 1];
        if (j == 0 || v[j].key != v[j - 1].key) {
            out->buckets[nb++].index = (uint32_t)(v[j].key & 4095);
            k->n++;
        }
        out->buckets[nb - 1].count++;
        k->count++;
        k->total = sat_add(k->total, d);
        k->self = sat_add(k->self, self[v[j].i]);
        if (d < k->min)
            k->min = d;
        if (d > k->max)
            k->max = d;
    }
    out->nsketches = ns;
    out->nbuckets = nb;
    free(v);
    free(dur);
    return TROVE_OK;
}

int trove_summary_build(const struct trove_event *events, size_t n, struct trove_summary *out)
{
    struct groups g;
    uint64_t *self = NULL, most = 0, nlong = 0;
    int rc;

    if (!out || (!events && n > 0) || (uint64_t)n > UINT32_MAX)
        return TROVE_ERR_INVALID;
    memset(out, 0, sizeof *out);
    if ((rc = group(events, n, out, &g)) != TROVE_OK) {
        trove_summary_free(out); /* the tracks it may have made */
        return rc;
    }
    rc = TROVE_ERR_NOMEM;
    if (!(self = trove__mallocarray(n ? n : 1, sizeof *self)))
        goto out;
    out->events = n;
    for (size_t i = 0; i < n; i++) {
        const struct trove_event *e = &events[i];
        struct trove_summary_track *t = &out->tracks[g.track[i]];
        uint64_t end = trove_event_end(e);
        if (t->events++ == 0) {
            t->first_ns = e->start_ns;
            t->end_ns = end;
        }
        if (trove__summary_is_span(e->kind) && e->depth > t->max_depth)
            t->max_depth = e->depth;
        if (e->kind < 32)
            t->kinds |= 1u << e->kind;
        if (e->start_ns < t->first_ns)
            t->first_ns = e->start_ns;
        if (end > t->end_ns)
            t->end_ns = end;
        if (i == 0 || e->start_ns < out->first_ns)
            out->first_ns = e->start_ns;
        if (end > out->end_ns)
            out->end_ns = end;
    }
    self_times(&g, self);
    if ((rc = sketches(events, n, self, out)) != TROVE_OK)
        goto out;
    rc = TROVE_ERR_NOMEM;
    out->shift = choose_shift(&g, trove__summary_fine_budget(n), &most, &nlong);
    /* the estimate bounds the cells: every group's first event, and each neighbour whose
     * start differs at the shift's bit or above */
    if (!(out->cells = trove__mallocarray((size_t)most + 1, sizeof *out->cells)) ||
        !(out->longs = trove__calloc((size_t)nlong + 1, sizeof *out->longs)))
        goto out;
    /* groups are in (track, lane) order and each in start order: cells come out sorted */
    for (size_t r = 0; r < g.ngroups; r++) {
        size_t at = out->ncells;
        for (size_t j = g.first[r]; j < g.first[r + 1]; j++) {
            const struct trove_event *e = &g.sev[j];
            uint32_t t = g.track[g.ord[j]];
            struct trove_summary_cell one;
            if (trove__summary_is_long(e, out->shift)) {
                struct trove_summary_long *L = &out->longs[out->nlongs++];
                L->track = t;
                L->index = g.ord[j];
                L->ev = *e;
                continue;
            }
            one = cell_of(e, t, out->shift);
            if (out->ncells > at && out->cells[out->ncells - 1].col == one.col)
                cell_add(&out->cells[out->ncells - 1], &one);
            else
                out->cells[out->ncells++] = one;
        }
    }
    qsort(out->longs, out->nlongs, sizeof *out->longs, long_cmp);
    rc = TROVE_OK;
out:
    groups_free(&g);
    free(self);
    if (rc != TROVE_OK)
        trove_summary_free(out);
    return rc;
}

/* ---- merging ----------------------------------------------------------------------------- */

static void track_add(struct trove_summary_track *t, const struct trove_summary_track *o)
{
    t->events += o->events;
    if (o->max_depth > t->max_depth)
        t->max_depth = o->max_depth;
    t->kinds |= o->kinds;
    if (o->first_ns < t->first_ns)
        t->first_ns = o->first_ns;
    if (o->end_ns > t->end_ns)
        t->end_ns = o->end_ns;
}

int trove_summary_join(struct trove_summary *out, const struct trove_summary *a,
                       const struct trove_summary *b, uint64_t b_base, uint32_t level)
{
    static const struct trove_summary none;
    struct trove_summary m;
    struct trove_summary_cell *ca = NULL, *cb = NULL;
    uint32_t *map_a = NULL, *map_b = NULL, shift;
    size_t ia = 0, ib = 0, nb = 0, nk = 0;
    uint64_t budget;
    int rc = TROVE_ERR_NOMEM;

    if (!out || !a || a->shift > 63 || (b && b->shift > 63))
        return TROVE_ERR_INVALID;
    if (!b)
        b = &none;
    if (a->events >= TROVE_SUMMARY_MAX_EVENTS || b->events >= TROVE_SUMMARY_MAX_EVENTS - a->events)
        return TROVE_ERR_INVALID; /* a bucket's count would not fit */
    memset(&m, 0, sizeof m);
    m.level = level;
    m.events = a->events + b->events;
    m.first_ns = a->events == 0 ? b->first_ns
                 : b->events == 0 || a->first_ns < b->first_ns ? a->first_ns : b->first_ns;
    m.end_ns = a->end_ns > b->end_ns ? a->end_ns : b->end_ns;
    if (!(map_a = trove__mallocarray(a->ntracks + 1, sizeof *map_a)) ||
        !(map_b = trove__mallocarray(b->ntracks + 1, sizeof *map_b)) ||
        !(m.tracks = trove__calloc(a->ntracks + b->ntracks + 1, sizeof *m.tracks)))
        goto fail;
    while (ia < a->ntracks || ib < b->ntracks) {
        int c = ia == a->ntracks ? 1 : ib == b->ntracks ? -1 : trove__summary_track_cmp(&a->tracks[ia], &b->tracks[ib]);
        struct trove_summary_track *t = &m.tracks[m.ntracks];
        if (c <= 0) {
            *t = a->tracks[ia];
            map_a[ia++] = (uint32_t)m.ntracks;
            if (c == 0) {
                track_add(t, &b->tracks[ib]);
                map_b[ib++] = (uint32_t)m.ntracks;
            }
        } else {
            *t = b->tracks[ib];
            map_b[ib++] = (uint32_t)m.ntracks;
        }
        m.ntracks++;
    }
    /* cells and long events, both sides at the greater shift, then as coarse as the budget
     * needs */
    shift = a->shift > b->shift ? a->shift : b->shift;
    if (!(ca = trove__calloc(a->ncells + 1, sizeof *ca)) ||
        !(cb = trove__calloc(b->ncells + 1, sizeof *cb)) ||
        !(m.cells = trove__calloc(a->ncells + b->ncells + 1, sizeof *m.cells)) ||
        !(m.longs = trove__calloc(a->nlongs + b->nlongs + 1, sizeof *m.longs)))
        goto fail;
    for (size_t i = 0; i < a->ncells; i++) {
        ca[i] = a->cells[i];
        ca[i].track = map_a[a->cells[i].track];
        ca[i].col >>= shift - a->shift;
    }
    for (size_t i = 0; i < b->ncells; i++) {
        cb[i] = b->cells[i];
        cb[i].track = map_b[b->cells[i].track];
        cb[i].col >>= shift - b->shift;
    }
    m.ncells = fold_merge(m.cells, ca, a->ncells, cb, b->ncells);
    for (size_t i = 0; i < a->nlongs; i++) {
        m.longs[m.nlongs] = a->longs[i];
        m.longs[m.nlongs++].track = map_a[a->longs[i].track];
    }
    for (size_t i = 0; i < b->nlongs; i++) {
        m.longs[m.nlongs] = b->longs[i];
        m.longs[m.nlongs].track = map_b[b->longs[i].track];
        m.longs[m.nlongs++].index += b_base;
    }
    m.shift = shift; /* the finer side's long events this shift makes short join the cells */
    if ((rc = relevel(&m, shift)) != TROVE_OK)
        goto fail;
    budget = trove__summary_budget(level, m.events);
    while (m.ncells + m.nlongs > budget && m.shift < 63)
        if ((rc = relevel(&m, m.shift + 1)) != TROVE_OK)
            goto fail;
    qsort(m.longs, m.nlongs, sizeof *m.longs, long_cmp);
    /* sketches, by name */
    rc = TROVE_ERR_NOMEM;
    if (!(m.sketches = trove__calloc(a->nsketches + b->nsketches + 1, sizeof *m.sketches)) ||
        !(m.buckets = trove__calloc(a->nbuckets + b->nbuckets + 1, sizeof *m.buckets)))
        goto fail;
    ia = ib = 0;
    while (ia < a->nsketches || ib < b->nsketches) {
        const struct trove_summary_sketch *x = ia < a->nsketches ? &a->sketches[ia] : NULL;
        const struct trove_summary_sketch *y = ib < b->nsketches ? &b->sketches[ib] : NULL;
        struct trove_summary_sketch *k = &m.sketches[nk++];
        size_t bx = 0, by = 0;
        if (x && y && x->name == y->name) {
            *k = *x;
            k->count += y->count;
            k->total = sat_add(x->total, y->total);
            k->self = sat_add(x->self, y->self);
            k->min = x->min < y->min ? x->min : y->min;
            k->max = x->max > y->max ? x->max : y->max;
        } else if (x && (!y || x->name < y->name)) {
            *k = *x;
            y = NULL;
        } else {
            *k = *y;
            x = NULL;
        }
        k->first = nb;
        k->n = 0;
        while ((x && bx < x->n) || (y && by < y->n)) {
            const struct trove_summary_bucket *p = x && bx < x->n ? &a->buckets[x->first + bx] : NULL;
            const struct trove_summary_bucket *q = y && by < y->n ? &b->buckets[y->first + by] : NULL;
            struct trove_summary_bucket *o = &m.buckets[nb++];
            if (p && q && p->index == q->index) {
                o->index = p->index;
                o->count = p->count + q->count;
                bx++;
                by++;
            } else if (p && (!q || p->index < q->index)) {
                *o = *p;
                bx++;
            } else {
                *o = *q;
                by++;
            }
            k->n++;
        }
        ia += x != NULL;
        ib += y != NULL;
    }
    m.nsketches = nk;
    m.nbuckets = nb;
    /* the sides' names and buckets mostly meet: give back what the merge did not use (a
     * high level's node holds millions of buckets) */
    if (nb + 1 < a->nbuckets + b->nbuckets + 1) {
        struct trove_summary_bucket *fit = trove__realloc(m.buckets, (nb + 1) * sizeof *fit);
        if (fit)
            m.buckets = fit;
    }
    if (nk + 1 < a->nsketches + b->nsketches + 1) {
        struct trove_summary_sketch *fit = trove__realloc(m.sketches, (nk + 1) * sizeof *fit);
        if (fit)
            m.sketches = fit;
    }
    free(map_a);
    free(map_b);
    free(ca);
    free(cb);
    trove_summary_free(out);
    *out = m;
    return TROVE_OK;
fail:
    free(map_a);
    free(map_b);
    free(ca);
    free(cb);
    trove_summary_free(&m);
    return rc;
}

