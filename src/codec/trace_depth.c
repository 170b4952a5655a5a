/*
 * trace_depth.c: the importer's depth of each event, predicted by a writer (trace_depth.h).
 * Per track a min-heap of the ends of the zones that may still contain what comes next,
 * exactly as trace_order.c counts them on import: an event's depth is the heap's size once
 * every end at or before its start is gone. Tracks are found in an open-addressing table
 * keyed by pid << 32 | tid that grows with the tracks, never with the events.
 */
#include "trace_depth.h"
#include "common/alloc.h"

#include <stdlib.h>

#include "trove/common.h"

struct heap {
    uint64_t *v;
    size_t n, cap;
};

struct trove__tdepth {
    uint64_t *key;      /* pid << 32 | tid */
    uint32_t *idx;      /* index + 1 into heaps; 0: an empty slot */
    size_t cap;         /* a power of two, or 0 */
    struct heap *heaps;
    size_t n, hcap;
};

int trove__tdepth_new(struct trove__tdepth **out)
{
    *out = trove__calloc(1, sizeof **out);
    return *out ? TROVE_OK : TROVE_ERR_NOMEM;
}

void trove__tdepth_free(struct trove__tdepth *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        free(d->heaps[i].v);
    free(d->heaps);
    free(d->key);
    free(d->idx);
    free(d);
}

static size_t slot_of(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static int grow_table(struct trove__tdepth *d)
{
    size_t cap = d->cap ? d->cap * 2 : 64;
    uint64_t *key = trove__malloc(cap * sizeof *key);
    uint32_t *idx = trove__calloc(cap, sizeof *idx);

    if (!key || !idx) {
        free(key);
        free(idx);
        return TROVE_ERR_NOMEM;
    }
    for (size_t i = 0; i < d->cap; i++) {
        size_t j;
        if (!d->idx[i])
            continue;
        for (j = slot_of(d->key[i], cap); idx[j]; j = (j + 1) & (cap - 1))
            ;
        key[j] = d->key[i];
        idx[j] = d->idx[i];
    }
    free(d->key);
    free(d->idx);
    d->key = key;
    d->idx = idx;
    d->cap = cap;
    return TROVE_OK;
}

/* The heap of track (pid, tid), made empty the first time. NULL: out of memory. */
static struct heap *track_heap(struct trove__tdepth *d, uint32_t pid, uint32_t tid)
{
    uint64_t k = (uint64_t)pid << 32 | tid;
    size_t j;

    if ((d->n + 1) * 2 > d->cap && grow_table(d) != TROVE_OK)
        return NULL;
    for (j = slot_of(k, d->cap); d->idx[j]; j = (j + 1) & (d->cap - 1))
        if (d->key[j] == k)
            return &d->heaps[d->idx[j] - 1];
    if (d->n == d->hcap) {
        size_t cap = d->hcap ? d->hcap * 2 : 16;
        struct heap *p = trove__realloc(d->heaps, cap * sizeof *p);
        if (!p)
            return NULL;
        d->heaps = p;
        d->hcap = cap;
    }
    d->heaps[d->n] = (struct heap){NULL, 0, 0};
    d->key[j] = k;
    d->idx[j] = (uint32_t)++d->n;
    return &d->heaps[d->n - 1];
}

static void heap_pop(struct heap *h)
{
    uint64_t v = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1] < h->v[c])
            c++;
        if (h->v[c] >= v)
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = v;
}

static int heap_push(struct heap *h, uint64_t v)
{
    size_t i;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        uint64_t *p = trove__realloc(h->v, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        h->v = p;
        h->cap = cap;
    }
    i = h->n++;
    while (i > 0 && h->v[(i - 1) / 2] > v) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = v;
    return TROVE_OK;
}

int trove__tdepth_next(struct trove__tdepth *d, uint32_t pid, uint32_t tid, uint64_t start,
                       uint64_t span, uint8_t *depth_out)
{
    struct heap *h = track_heap(d, pid, tid);
    uint64_t end;

    if (!h)
        return TROVE_ERR_NOMEM;
    while (h->n && h->v[0] <= start)
        heap_pop(h);
    *depth_out = h->n > 255 ? 255 : (uint8_t)h->n;
    if (!span)
        return TROVE_OK;
    end = start + span < start ? UINT64_MAX : start + span;
    return heap_push(h, end);
}
