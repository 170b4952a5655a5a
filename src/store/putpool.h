/*
 * putpool.h: object puts in flight on worker threads.
 *
 * A durable put is mostly waiting: the fsync of the object and of its directory. One put
 * at a time pays a journal commit per object; several in flight share them (measured on
 * this project's VM: 512 puts of 2 MiB took 3.96 s one at a time and 0.83 s four at a
 * time). The pool copies each submitted object into a buffer of its own and returns, so
 * the caller hashes the next block while earlier ones are written.
 *
 * Contract with the store: an object submitted here is not durable until
 * trove__putpool_drain returns TROVE_OK, so every path that reads objects or publishes a
 * recipe drains first. The first failed put is kept (sticky) and returned by every later
 * submit and drain: the caller cannot know which slots name objects that never landed.
 * Only the threads and the backend's put touch the job buffers; the caller's reference
 * map is never seen by a worker.
 */
#ifndef TROVE_STORE_PUTPOOL_H
#define TROVE_STORE_PUTPOOL_H

#include <stddef.h>

#include "trove/backend.h"

#define TROVE__PUTPOOL_THREADS 4
#define TROVE__PUTPOOL_MAX_OBJECT ((size_t)64 << 20) /* larger objects are put inline */

struct trove__putpool;

/* Start `threads` workers putting into be. Errors: TROVE_ERR_NOMEM, -errno (pthread). */
int trove__putpool_start(struct trove_backend *be, unsigned threads,
                         struct trove__putpool **out);

/* Queue a put of len bytes (copied) under d; blocks while 2 * threads puts are queued.
 * Returns the pool's sticky error, TROVE_ERR_NOMEM, or TROVE_OK. */
int trove__putpool_submit(struct trove__putpool *p, const struct trove_digest *d,
                          const void *data, size_t len);

/* The pool's sticky error: the first queued put that failed (TROVE_OK if none). A submit
 * that fails for want of memory queues nothing and does not set it. */
int trove__putpool_error(struct trove__putpool *p);

/* Wait until every queued put has finished; TROVE_OK or the sticky error. */
int trove__putpool_drain(struct trove__putpool *p);

/* Drain, stop and free (NULL is a no-op). */
void trove__putpool_stop(struct trove__putpool *p);

#endif
