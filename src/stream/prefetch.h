/*
 * prefetch.h: the stream's bounded prefetcher (prefetch.c) — worker threads, or the
 * backend's asynchronous gets, that download the objects after the walker's, within a
 * depth and a byte budget. Internal to src/stream.
 */
#ifndef TROVE_STREAM_PREFETCH_H
#define TROVE_STREAM_PREFETCH_H

#include "bufpool.h"
#include "trove/stream.h"

struct trove__prefetch;

struct trove__prefetch_config {
    struct trove_backend *be;
    const struct trove_digest *digests; /* n of them, borrowed until stop */
    uint64_t n;
    uint32_t depth;      /* 1 .. TROVE_STREAM_DEPTH_MAX */
    uint64_t budget;     /* > 0 */
    uint64_t max_object; /* no download reads more than this */
    void (*probe)(void *ctx, uint64_t held, uint64_t budget);
    void *probe_ctx;
    struct trove__bufpool *pool; /* buffers to read into and to give back */
};

/* Start the workers (min(depth, n - 1) threads; none on a backend with asynchronous gets,
 * whose first downloads start here; n >= 2); the walker is at item 0.
 * Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM, -errno. */
int trove__prefetch_start(const struct trove__prefetch_config *cfg, struct trove__prefetch **out);

/*
 * The walker is at item (every item, in order, empty slots included). Returns 1 with the
 * downloaded object moved into *out (a zeroed trove_bytes; the caller frees it) after
 * waiting for a download under way; 0 when the walker must read the item itself (never
 * launched, left over its share, failed, or an empty slot); TROVE_ERR_CANCELLED.
 */
int trove__prefetch_take(struct trove__prefetch *pf, uint64_t item, struct trove_bytes *out);

/* The walker read len bytes itself: an object over the whole budget turns prefetching off
 * for the rest of the run. */
void trove__prefetch_walker_read(struct trove__prefetch *pf, uint64_t len);

/* Wake every wait, start nothing more. Any thread; idempotent. */
void trove__prefetch_cancel(struct trove__prefetch *pf);

/* Stop launching, wait for the downloads under way, join the workers, free every byte held,
 * fill stats (share_overflows, download_errors, prefetch_off, max_in_flight,
 * peak_held_bytes, final_estimate; may be NULL) and free pf. NULL is a no-op. */
void trove__prefetch_stop(struct trove__prefetch *pf, struct trove_stream_stats *stats);

#endif
