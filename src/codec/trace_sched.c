/*
 * trace_sched.c: the tracks of a capture and the order its events begin and end in, for the
 * trace writers (trace_sched.h).
 *
 * Tracks: the writer notes each event's (pid, tid) in a hash set as it goes by, so the set
 * grows with the tracks, not the events; the flow rows and the names add theirs at the end.
 *
 * The order is a merge of three sorted streams: the starts (every event, START order), the
 * ends (the paired events, END order) and the flow rows (sorted here, in memory). It used to
 * be the starts merged with a min-heap of the ends still to come, keyed by (end, position of
 * the start); a start's position grows with the START order, so that key is the END order,
 * and the heap's pops are the ends stream read in order — holding back an end whose zone has
 * not begun yet, which can only be a zone of length 0 beginning at the current time (its
 * end is then before that of every zone begun later, none of which is ready either).
 * Memory: an index per flow row; the streams are the sorters'.
 */
#include "trace_sched.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

/* ---- tracks ---------------------------------------------------------------------------- */

#define TSET_USED 1u
#define TSET_COUNTER 2u
#define TSET_OTHER 4u

static size_t slot_of(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static int tset_grow(struct trove__tset *s)
{
    size_t cap = s->cap ? s->cap * 2 : 64;
    uint64_t *key = trove__malloc(cap * sizeof *key);
    uint8_t *flags = trove__calloc(cap, 1);

    if (!key || !flags) {
        free(key);
        free(flags);
        return TROVE_ERR_NOMEM;
    }
    for (size_t i = 0; i < s->cap; i++) {
        size_t j;
        if (!s->flags[i])
            continue;
        for (j = slot_of(s->key[i], cap); flags[j]; j = (j + 1) & (cap - 1))
            ;
        key[j] = s->key[i];
        flags[j] = s->flags[i];
    }
    free(s->key);
    free(s->flags);
    s->key = key;
    s->flags = flags;
    s->cap = cap;
    return TROVE_OK;
}

int trove__tset_add(struct trove__tset *s, uint32_t pid, uint32_t tid, int counter)
{
    uint64_t key = (uint64_t)pid << 32 | tid;
    uint8_t f = (uint8_t)(TSET_USED | (counter ? TSET_COUNTER : TSET_OTHER));
    size_t j;

    if (2 * (s->n + 1) > s->cap && tset_grow(s) != TROVE_OK)
        return TROVE_ERR_NOMEM;
    for (j = slot_of(key, s->cap); s->flags[j]; j = (j + 1) & (s->cap - 1))
        if (s->key[j] == key) {
            s->flags[j] |= f;
            return TROVE_OK;
        }
    s->key[j] = key;
    s->flags[j] = f;
    s->n++;
    return TROVE_OK;
}

/* The flags of key in s (0: not there). */
static uint8_t tset_get(const struct trove__tset *s, uint64_t key)
{
    if (!s->cap)
        return 0;
    for (size_t j = slot_of(key, s->cap); s->flags[j]; j = (j + 1) & (s->cap - 1))
        if (s->key[j] == key)
            return s->flags[j];
    return 0;
}

void trove__tset_free(struct trove__tset *s)
{
    free(s->key);
    free(s->flags);
    memset(s, 0, sizeof *s);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

static int cmp_u32(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return a < b ? -1 : a > b;
}

/* Sort and drop repeats; the new count. */
static size_t uniq_u64(uint64_t *v, size_t n)
{
    size_t k = 0;
    qsort(v, n, sizeof *v, cmp_u64);
    for (size_t i = 0; i < n; i++)
        if (k == 0 || v[k - 1] != v[i])
            v[k++] = v[i];
    return k;
}

size_t trove__ttracks_find(const struct trove__ttracks *tr, uint32_t pid, uint32_t tid)
{
    size_t lo = 0, hi = tr->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct trove__ttrack *m = &tr->t[mid];
        if (m->pid < pid || (m->pid == pid && m->tid < tid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int trove__ttracks_build(const struct trove__tset *ev, const struct trove_flow *flows,
                         size_t nflows, const struct trove_names *names,
                         struct trove__ttracks *out)
{
    size_t nn = names ? trove_names_count(names) : 0, nk = 0, np = 0;
    size_t total = ev->n + nflows + nn;
    uint64_t *keys = NULL;
    uint32_t *pids = NULL;
    int rc = TROVE_ERR_NOMEM;

    memset(out, 0, sizeof *out);
    if (!(keys = trove__malloc((total ? total : 1) * sizeof *keys)) ||
        !(pids = trove__malloc((total ? total : 1) * sizeof *pids)))
        goto out;
    for (size_t i = 0; i < ev->cap; i++)
        if (ev->flags[i])
            keys[nk++] = ev->key[i];
    for (size_t i = 0; i < nflows; i++)
        keys[nk++] = (uint64_t)flows[i].pid << 32 | flows[i].tid;
    for (size_t i = 0; i < nn; i++) {
        struct trove_name_entry e;
        trove_names_entry(names, i, &e);
        /* a real thread's sort index needs its track (the writers carry it there); a
         * synthetic tid is a track only when something else makes it one */
        if (e.type == TROVE_NAME_THREAD ||
            (e.type == TROVE_NAME_THREAD_SORT && !trove_tid_is_synthetic(e.b)))
            keys[nk++] = (uint64_t)e.a << 32 | e.b;
        else if (e.type == TROVE_NAME_PROCESS || e.type == TROVE_NAME_PROCESS_SORT)
            pids[np++] = e.a;
    }
    nk = uniq_u64(keys, nk);
    if (nk && !(out->t = trove__calloc(nk, sizeof *out->t)))
        goto out;
    out->n = nk;
    for (size_t i = 0; i < nk; i++) {
        struct trove__ttrack *tr = &out->t[i];
        uint8_t f = tset_get(ev, keys[i]);
        tr->pid = (uint32_t)(keys[i] >> 32);
        tr->tid = (uint32_t)keys[i];
        tr->has_counter = (f & TSET_COUNTER) != 0;
        tr->has_other = (f & TSET_OTHER) != 0;
        tr->name = names ? trove_names_get(names, TROVE_NAME_THREAD, tr->pid, tr->tid,
                                           &tr->name_len)
                         : NULL;
        pids[np++] = tr->pid;
    }
    qsort(pids, np, sizeof *pids, cmp_u32);
    out->npids = 0;
    for (size_t i = 0; i < np; i++)
        if (out->npids == 0 || pids[out->npids - 1] != pids[i])
            pids[out->npids++] = pids[i];
    out->pids = pids;
    pids = NULL;
    rc = TROVE_OK;
out:
    free(keys);
    free(pids);
    if (rc != TROVE_OK)
        trove__ttracks_free(out);
    return rc;
}

void trove__ttracks_free(struct trove__ttracks *tr)
{
    free(tr->t);
    free(tr->pids);
    memset(tr, 0, sizeof *tr);
}

/* ---- the schedule ---------------------------------------------------------------------- */

struct sort_flow {
    uint64_t ts;
    size_t i;
};

static int cmp_flow(const void *pa, const void *pb)
{
    const struct sort_flow *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

int trove__tsched_init(struct trove__tsched *s, struct trove__tsort *starts,
                       struct trove__tsort *ends, const struct trove_flow *flows, size_t nflows)
{
    struct sort_flow *sf;

    memset(s, 0, sizeof *s);
    if (!(sf = trove__malloc((nflows ? nflows : 1) * sizeof *sf)) ||
        !(s->forder = trove__malloc((nflows ? nflows : 1) * sizeof *s->forder))) {
        free(sf);
        return TROVE_ERR_NOMEM;
    }
    for (size_t i = 0; i < nflows; i++)
        sf[i] = (struct sort_flow){flows[i].ts_ns, i};
    qsort(sf, nflows, sizeof *sf, cmp_flow);
    for (size_t i = 0; i < nflows; i++)
        s->forder[i] = sf[i].i;
    free(sf);
    s->starts = starts;
    s->ends = ends;
    s->flows = flows;
    s->nflows = nflows;
    return TROVE_OK;
}

uint64_t trove__tsched_first_ts(const struct trove__tsched *s)
{
    const struct trove__tsrec *st = trove__tsort_head(s->starts);
    const struct trove_flow *f = s->fpos < s->nflows ? &s->flows[s->forder[s->fpos]] : NULL;
    if (st && (!f || st->start_ns <= f->ts_ns))
        return st->start_ns;
    return f ? f->ts_ns : 0;
}

int trove__tsched_next(struct trove__tsched *s, struct trove__titem *out, struct trove_diag *diag)
{
    const struct trove__tsrec *st = trove__tsort_head(s->starts);
    const struct trove__tsrec *e = s->ends ? trove__tsort_head(s->ends) : NULL;
    const struct trove_flow *f = s->fpos < s->nflows ? &s->flows[s->forder[s->fpos]] : NULL;
    int take_start, rc;
    uint64_t ts;

    if (!st && !f) { /* the ends left */
        if (!e)
            return 0;
        *out = (struct trove__titem){TROVE__TS_END, trove__tend(e), *e, 0};
        return (rc = trove__tsort_next(s->ends, diag)) != TROVE_OK ? rc : 1;
    }
    take_start = st && (!f || st->start_ns <= f->ts_ns);
    ts = take_start ? st->start_ns : f->ts_ns;
    /* an end that is due, of a zone begun already (before the next start) */
    if (e && trove__tend(e) <= ts && (!st || trove__tsrec_cmp_start(e, st) < 0)) {
        *out = (struct trove__titem){TROVE__TS_END, trove__tend(e), *e, 0};
        return (rc = trove__tsort_next(s->ends, diag)) != TROVE_OK ? rc : 1;
    }
    if (take_start) {
        *out = (struct trove__titem){TROVE__TS_START, ts, *st, 0};
        return (rc = trove__tsort_next(s->starts, diag)) != TROVE_OK ? rc : 1;
    }
    memset(&out->r, 0, sizeof out->r);
    out->what = TROVE__TS_FLOW;
    out->ts = ts;
    out->flow = s->forder[s->fpos++];
    return 1;
}

void trove__tsched_free(struct trove__tsched *s)
{
    free(s->forder);
    memset(s, 0, sizeof *s);
}
