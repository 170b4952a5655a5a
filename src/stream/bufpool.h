/*
 * bufpool.h: the stream's pool of object buffers (bufpool.c). Internal to src/stream.
 *
 * Every object is read into a buffer that only its item uses until the item is done; that
 * is what lets batches alias it. Allocating each one afresh costs a page fault per 4 KiB
 * of every object read (a 2 MiB block is 512 faults), which at local-disk speeds was a
 * third of `trove volume cat`. So a finished item's buffer goes back to a small pool and the
 * next read takes it: still one owner at a time, never two. The pool keeps at most
 * TROVE__BUFPOOL_MAX buffers and TROVE__BUFPOOL_BYTES of capacity between them; anything
 * else is freed. Thread-safe (the walker and the prefetch workers share one).
 */
#ifndef TROVE_STREAM_BUFPOOL_H
#define TROVE_STREAM_BUFPOOL_H

#include <pthread.h>
#include <stddef.h>

#include "trove/common.h"

#define TROVE__BUFPOOL_MAX 6
#define TROVE__BUFPOOL_BYTES ((size_t)32 << 20)

struct trove__bufpool {
    pthread_mutex_t mu;
    struct trove_bytes buf[TROVE__BUFPOOL_MAX];
    size_t n, bytes; /* buffers kept, their capacity */
};

void trove__bufpool_init(struct trove__bufpool *p);
/* Empty the pool and free everything in it. */
void trove__bufpool_destroy(struct trove__bufpool *p);
/* *out (an empty buffer) becomes the largest kept buffer whose capacity is at most limit,
 * with len 0, or stays empty: a read into it of at most limit bytes then never holds
 * more than limit. */
void trove__bufpool_take(struct trove__bufpool *p, size_t limit, struct trove_bytes *out);
/* Give b back (kept or freed); b is zeroed. Its owner must be done with it. */
void trove__bufpool_give(struct trove__bufpool *p, struct trove_bytes *b);

#endif
