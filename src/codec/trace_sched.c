/*
 * trace_sched.c: the tracks of a capture and the order its events begin and end in, for the
 * trace writers (trace_sched.h). The order is a merge of the starts (sorted), the flow rows
 * (sorted) and a min-heap of the ends still to come, keyed by (end, begun first first).
 * Memory: the items, an index per event and flow row, and the heap.
 */
#include "trace_sched.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

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

int trove__ttracks_build(const struct trove_trace *t, struct trove__ttracks *out)
{
    size_t nn = t->names ? trove_names_count(t->names) : 0, nk = 0, np = 0;
    size_t total = t->n_events + t->n_flows + nn;
    uint64_t *keys = NULL;
    uint32_t *pids = NULL;
    int rc = TROVE_ERR_NOMEM;

    memset(out, 0, sizeof *out);
    if (!(keys = trove__malloc((total ? total : 1) * sizeof *keys)) ||
        !(pids = trove__malloc((total ? total : 1) * sizeof *pids)))
        goto out;
    for (size_t i = 0; i < t->n_events; i++)
        keys[nk++] = (uint64_t)t->events[i].pid << 32 | t->events[i].tid;
    for (size_t i = 0; i < t->n_flows; i++)
        keys[nk++] = (uint64_t)t->flows[i].pid << 32 | t->flows[i].tid;
    for (size_t i = 0; i < nn; i++) {
        struct trove_name_entry e;
        trove_names_entry(t->names, i, &e);
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
        tr->pid = (uint32_t)(keys[i] >> 32);
        tr->tid = (uint32_t)keys[i];
        tr->name = t->names ? trove_names_get(t->names, TROVE_NAME_THREAD, tr->pid, tr->tid,
                                              &tr->name_len)
                            : NULL;
        pids[np++] = tr->pid;
    }
    for (size_t i = 0; i < t->n_events; i++) {
        const struct trove_event *e = &t->events[i];
        struct trove__ttrack *tr = &out->t[trove__ttracks_find(out, e->pid, e->tid)];
        if (e->kind == TROVE_KIND_COUNTER)
            tr->has_counter = 1;
        else
            tr->has_other = 1;
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

struct sort_start {
    uint64_t start, span;
    size_t i;
};

static int cmp_start(const void *pa, const void *pb)
{
    const struct sort_start *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->span != b->span)
        return a->span > b->span ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

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

/* A pending end: at `end`, of event i, begun as the k-th start. */
struct pend {
    uint64_t end;
    size_t k, i;
};

static int pend_less(const struct pend *a, const struct pend *b)
{
    return a->end != b->end ? a->end < b->end : a->k < b->k;
}

static void heap_push(struct pend *h, size_t *n, struct pend v)
{
    size_t i = (*n)++;
    while (i > 0 && pend_less(&v, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static struct pend heap_pop(struct pend *h, size_t *n)
{
    struct pend top = h[0], v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && pend_less(&h[c + 1], &h[c]))
            c++;
        if (!pend_less(&h[c], &v))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
    return top;
}

int trove__tsched_build(const struct trove_trace *t, const uint8_t *paired,
                        struct trove__titem **out, size_t *n_out)
{
    struct sort_start *st = NULL;
    struct sort_flow *sf = NULL;
    struct pend *heap = NULL;
    struct trove__titem *it = NULL;
    size_t n = t->n_events, nf = t->n_flows, np = 0, hn = 0, k = 0, a = 0, b = 0;
    int rc = TROVE_ERR_NOMEM;

    *out = NULL;
    *n_out = 0;
    for (size_t i = 0; i < n; i++)
        np += paired[i] != 0;
    if (!(st = trove__malloc((n ? n : 1) * sizeof *st)) ||
        !(sf = trove__malloc((nf ? nf : 1) * sizeof *sf)) ||
        !(heap = trove__malloc((np ? np : 1) * sizeof *heap)) ||
        !(it = trove__malloc((n + np + nf ? n + np + nf : 1) * sizeof *it)))
        goto out;
    for (size_t i = 0; i < n; i++)
        st[i] = (struct sort_start){t->events[i].start_ns, trove__tspan(&t->events[i]), i};
    for (size_t i = 0; i < nf; i++)
        sf[i] = (struct sort_flow){t->flows[i].ts_ns, i};
    qsort(st, n, sizeof *st, cmp_start);
    qsort(sf, nf, sizeof *sf, cmp_flow);
    while (a < n || b < nf) {
        int take_start = a < n && (b >= nf || st[a].start <= sf[b].ts);
        uint64_t ts = take_start ? st[a].start : sf[b].ts;
        while (hn && heap[0].end <= ts) {
            struct pend p = heap_pop(heap, &hn);
            it[k++] = (struct trove__titem){p.end, TROVE__TS_END, p.i};
        }
        if (take_start) {
            size_t i = st[a++].i;
            it[k] = (struct trove__titem){ts, TROVE__TS_START, i};
            if (paired[i]) {
                uint64_t end = t->events[i].start_ns + trove__tspan(&t->events[i]);
                if (end < t->events[i].start_ns)
                    end = UINT64_MAX;
                heap_push(heap, &hn, (struct pend){end, k, i});
            }
            k++;
        } else {
            it[k++] = (struct trove__titem){ts, TROVE__TS_FLOW, sf[b++].i};
        }
    }
    while (hn) {
        struct pend p = heap_pop(heap, &hn);
        it[k++] = (struct trove__titem){p.end, TROVE__TS_END, p.i};
    }
    *out = it;
    *n_out = k;
    it = NULL;
    rc = TROVE_OK;
out:
    free(st);
    free(sf);
    free(heap);
    free(it);
    return rc;
}
