/*
 * events.c: a growable array of event records, used by importers and tools to collect a
 * capture in memory before it is batched.
 */
#include "trove/event.h"
#include "common/alloc.h"

#include <stdint.h>
#include <stdlib.h>

int trove_events_push(struct trove_events *a, const struct trove_event *e)
{
    if (a->len == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 1024;
        struct trove_event *p = trove__realloc(a->ev, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        a->ev = p;
        a->cap = cap;
    }
    a->ev[a->len++] = *e;
    return TROVE_OK;
}

int trove_events_reserve(struct trove_events *a, size_t extra)
{
    size_t cap;
    struct trove_event *p;

    if (extra <= a->cap - a->len)
        return TROVE_OK;
    if (extra > SIZE_MAX / sizeof *p - a->len)
        return TROVE_ERR_NOMEM;
    cap = a->len + extra;
    if (!(p = trove__realloc(a->ev, cap * sizeof *p)))
        return TROVE_ERR_NOMEM;
    a->ev = p;
    a->cap = cap;
    return TROVE_OK;
}

void trove_events_free(struct trove_events *a)
{
    free(a->ev);
    a->ev = NULL;
    a->len = a->cap = 0;
}
