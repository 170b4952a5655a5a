/*
 * bufpool.c: recycled object buffers for the stream (bufpool.h). A handful of buffers in a
 * fixed array under one mutex; take picks the largest that fits the caller's limit, give
 * keeps a buffer while the pool has room in count and bytes.
 */
#include "bufpool.h"

#include <stdlib.h>
#include <string.h>

void trove__bufpool_init(struct trove__bufpool *p)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
}

void trove__bufpool_destroy(struct trove__bufpool *p)
{
    for (size_t i = 0; i < p->n; i++)
        trove_bytes_free(&p->buf[i]);
    p->n = 0;
    p->bytes = 0;
    pthread_mutex_destroy(&p->mu);
}

void trove__bufpool_take(struct trove__bufpool *p, size_t limit, struct trove_bytes *out)
{
    size_t best = TROVE__BUFPOOL_MAX;

    if (out->ptr) /* not empty: the caller's own */
        return;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->n; i++)
        if (p->buf[i].cap <= limit && (best == TROVE__BUFPOOL_MAX || p->buf[i].cap > p->buf[best].cap))
            best = i;
    if (best < TROVE__BUFPOOL_MAX) {
        *out = p->buf[best];
        out->len = 0;
        p->bytes -= out->cap;
        p->buf[best] = p->buf[--p->n];
        memset(&p->buf[p->n], 0, sizeof p->buf[p->n]);
    }
    pthread_mutex_unlock(&p->mu);
}

void trove__bufpool_give(struct trove__bufpool *p, struct trove_bytes *b)
{
    int kept = 0;

    if (!b->ptr)
        return;
    pthread_mutex_lock(&p->mu);
    if (p->n < TROVE__BUFPOOL_MAX && b->cap <= TROVE__BUFPOOL_BYTES - p->bytes) {
        p->buf[p->n] = *b;
        p->buf[p->n].len = 0;
        p->bytes += b->cap;
        p->n++;
        kept = 1;
    }
    pthread_mutex_unlock(&p->mu);
    if (!kept)
        trove_bytes_free(b);
    memset(b, 0, sizeof *b);
}
