/*
 * trace_order.c: depth and output order of an imported trace (trace_order.h). Depth is found
 * per thread with a min-heap of the end times of the zones still open at each start, so it
 * is right for zones that overlap without nesting too; the order is then a plain sort.
 * Memory: one u64 per event for the heap, and qsort's.
 */
#include "trace_order.h"
#include "common/alloc.h"

#include <stdlib.h>

#include "trove/event.h"

/* A zone's length for nesting: counters (whose dur is a value) and instants have none. */
static uint64_t span(const struct trove__trec *r)
{
    return r->kind == TROVE_KIND_COUNTER ? 0 : r->dur;
}

static int cmp_thread_order(const void *pa, const void *pb)
{
    const struct trove__trec *a = pa, *b = pb;
    uint64_t da = span(a), db = span(b);
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (da != db)
        return da > db ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cmp_output_order(const void *pa, const void *pb)
{
    const struct trove__trec *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static void heap_pop(uint64_t *h, size_t *n)
{
    uint64_t v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
}

int trove__trace_order(struct trove__trec *r, size_t n, uint32_t *threads_out)
{
    uint64_t *heap;
    uint32_t threads = 0;
    size_t hn = 0;

    *threads_out = 0;
    if (n == 0)
        return TROVE_OK;
    qsort(r, n, sizeof *r, cmp_thread_order);
    heap = trove__malloc(n * sizeof *heap);
    if (!heap)
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        struct trove__trec *e = &r[i];
        if (i == 0 || e->pid != e[-1].pid || e->tid != e[-1].tid) {
            hn = 0;
            threads++;
        }
        while (hn && heap[0] <= e->start)
            heap_pop(heap, &hn);
        if (!e->depth_given)
            e->depth = hn > 255 ? 255 : (uint8_t)hn;
        if (span(e))
            heap_push(heap, &hn, e->start + e->dur);
    }
    free(heap);
    qsort(r, n, sizeof *r, cmp_output_order);
    *threads_out = threads;
    return TROVE_OK;
}
