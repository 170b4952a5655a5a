/*
 * trove/stream.h: streaming stored objects in order — a walker, a bounded prefetcher and an
 * overlapped sender (the design of seeds/002: docs/stream.md).
 *
 * A request walks n objects, given by digest (item i is slot first_slot + i; a zero digest
 * is an empty slot), strictly in order. For each it gets the object's bytes, calls the
 * decoder, which turns them into batches and hands each to trove_stream_emit, and the
 * sink sends the batches. Three things keep the store, the decoder and the sink off each
 * other's critical path:
 *
 *   prefetcher  up to `depth` objects after the walker's are downloaded on background
 *               threads, holding at most `budget` bytes between them (a hard cap). No size is
 *               asked of the store: the estimate is the size of the last completed download;
 *               concurrency = max(1, min(depth, budget / estimate)); every download in flight
 *               reserves an even share (budget / concurrency) and reads at most that much.
 *               A file over its share is released, left to the walker, and the estimate
 *               doubles (capped at the budget); a file over the whole budget turns prefetching
 *               off for the rest of the request; any other error or a missing object leaves
 *               that item to the walker, and launching resumes once the walker reaches it.
 *               The walker takes an item by waiting for its download or by reading it itself.
 *   sender      one thread behind a rendezvous channel (or a bounded queue), so one batch is
 *               sent while the next is decoded. The first send error is sticky: nothing is
 *               sent after it and the request returns it. An item is reported done once
 *               its batches were sent and before any batch of the next reaches the sender
 *               (whose last send overlaps the next item's first decode), so the order of
 *               batches is the order of items.
 *   walker      reads what the prefetcher does not hold, retrying a missing object with
 *               exponential backoff, and checks for cancellation between every step.
 *
 * Zero copy: every object is read into a buffer that nothing else reads until its item is
 * done (buffers of finished items are recycled, never shared); a batch may alias it (owned == NULL), and such a batch is valid until its item is reported done
 * (after the sink returned for every batch of the item).
 */
#ifndef TROVE_STREAM_H
#define TROVE_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TROVE_STREAM_DEPTH_DEFAULT 4u
#define TROVE_STREAM_DEPTH_MAX 32u                  /* depth is capped here */
#define TROVE_STREAM_BUDGET_DEFAULT ((uint64_t)64 << 20) /* 64 MiB */
#define TROVE_STREAM_SEND_QUEUE_MAX 1024u

enum trove_stream_send_mode {
    TROVE_STREAM_SEND_RENDEZVOUS = 0, /* a sender thread; emit returns once it took the batch
                                         (the default, so that a zeroed struct is it) */
    TROVE_STREAM_SEND_INLINE = 1,     /* the walker calls the sink itself (no thread) */
    TROVE_STREAM_SEND_BUFFERED = 2    /* a sender thread behind a queue of send_queue batches */
};

/* depth: no prefetching at all (the walker reads every object itself). */
#define TROVE_STREAM_NO_PREFETCH UINT32_MAX
/* retries: none (a missing object fails at once). */
#define TROVE_STREAM_NO_RETRY UINT32_MAX

/* A zeroed struct means every default; so does any field left 0. */
struct trove_stream_options {
    uint32_t depth;           /* objects downloaded ahead (0: 4; TROVE_STREAM_NO_PREFETCH:
                                 none); capped at TROVE_STREAM_DEPTH_MAX */
    uint64_t budget;          /* bytes the prefetcher holds at most (0: 64 MiB) */
    uint64_t max_object;      /* the largest object the walker reads (TROVE_ERR_LIMIT past it;
                                 0: 1 GiB) */
    uint32_t retries;         /* further attempts for a missing object (0: 4;
                                 TROVE_STREAM_NO_RETRY: none) */
    uint32_t backoff_ms;      /* the first wait before a retry (0: 2); doubled each time ... */
    uint32_t backoff_max_ms;  /* ... up to this (0: 100) */
    int send_mode;            /* enum trove_stream_send_mode */
    uint32_t send_queue;      /* BUFFERED: batches the queue holds (0: 8; at most
                                 SEND_QUEUE_MAX) */
    /* Called with the prefetcher's held bytes every time they change, under its lock (tests
     * assert they never pass the budget); may be NULL. Must not call back into the stream. */
    void (*probe)(void *ctx, uint64_t held, uint64_t budget);
    void *probe_ctx;
};

/* The defaults, explicitly (a zeroed struct is the same): depth 4, budget 64 MiB,
 * max_object 1 GiB, 4 retries from 2 ms up to 100 ms, a rendezvous sender, a queue of 8 for
 * BUFFERED. */
void trove_stream_options_default(struct trove_stream_options *opt);

/* One object handed to the decoder. data is a buffer nothing else reads, owned by the
 * stream and valid until the item is reported done; NULL with len 0 for an empty slot. */
struct trove_stream_object {
    uint64_t item;   /* 0 .. n-1 */
    uint64_t slot;   /* first_slot + item */
    const struct trove_digest *digest; /* zero for an empty slot */
    const uint8_t *data;
    size_t len;
};

/* A batch for the sink. */
struct trove_stream_batch {
    const void *data;
    size_t len;
    uint64_t events;  /* what it carries, for the statistics (0 if not events) */
    /* NULL: data aliases the object (valid until its item is done). Otherwise a malloc'd
     * block that the stream frees with free() once the sink returned or the batch is
     * dropped (after an error or a cancel): emit always takes it over. */
    void *owned;
    uint64_t item;    /* filled in by emit */
};

struct trove_stream_emitter;

/* Hand a batch to the sink (inline, to the sender thread, or into its queue). Returns
 * TROVE_OK, TROVE_ERR_CANCELLED, or the sticky send error (TROVE_ERR_SEND; the sink's own
 * code is in stats->send_error): a decoder stops at the first error and returns it.
 * TROVE_ERR_INVALID for em or b NULL, or data NULL with len > 0. b->owned is taken over
 * whatever the result. Only from the decoder, during its decode call. */
int trove_stream_emit(struct trove_stream_emitter *em, const struct trove_stream_batch *b);

struct trove_stream_decoder {
    /* Decode obj into batches, each through trove_stream_emit, and return TROVE_OK or an
     * error, which stops the request (the error is returned; diag may say why). */
    int (*decode)(void *ctx, const struct trove_stream_object *obj,
                  struct trove_stream_emitter *em, struct trove_diag *diag);
    void *ctx;
};

struct trove_stream_sink {
    /* Send one batch; TROVE_OK or an error (any nonzero value, including a positive one from
     * a sink that broke its contract, is a send error). Runs on the sender thread unless
     * the mode is INLINE, one call at a time, in order. */
    int (*send)(void *ctx, const struct trove_stream_batch *b);
    /* Optional: item done, after every one of its batches was sent and before any batch of
     * the next item is handed to the sender. Walker's thread. */
    void (*item_done)(void *ctx, uint64_t item);
    void *ctx;
};

struct trove_stream_stats {
    uint64_t items;            /* items done */
    uint64_t batches;          /* batches the sink sent successfully */
    uint64_t events;           /* their events */
    uint64_t bytes_sent;       /* their bytes */
    uint64_t prefetched;       /* items taken from a finished or waited-for download */
    uint64_t walker_reads;     /* items the walker read itself (empty slots not counted) */
    uint64_t retries;          /* walker retries after a missing object */
    uint64_t share_overflows;  /* downloads over their share, left to the walker */
    uint64_t download_errors;  /* downloads that failed otherwise (missing, I/O) */
    int prefetch_off;          /* a file over the whole budget turned prefetching off */
    uint32_t depth;            /* the depth used (after the cap; 0: prefetching off) */
    uint32_t max_in_flight;    /* downloads held at once, at most */
    uint64_t peak_held_bytes;  /* the prefetcher's reservations and held bytes, at most */
    uint64_t final_estimate;   /* the estimate at the end */
    int send_error;            /* the sink's first nonzero return, or 0 */
    int read_failed;           /* the run stopped because item read_item could not be read
                                  (missing, damaged: TROVE_ERR_CHECKSUM, or a backend error) */
    uint64_t read_item;
};

struct trove_stream;

/*
 * A request over be (which must allow gets from several threads, as the fs backend does).
 * opt NULL means the defaults; its values are checked (send mode, queue size: else
 * TROVE_ERR_INVALID). Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM.
 */
int trove_stream_new(struct trove_backend *be, const struct trove_stream_options *opt,
                     struct trove_stream **out);

/*
 * Stream items [0, n): item i is slot first_slot + i with digest digests[i] (borrowed until
 * the call returns). Returns TROVE_OK when every item was decoded and every batch sent;
 * TROVE_ERR_CANCELLED after trove_stream_cancel; TROVE_ERR_SEND after the sink failed (the
 * sink's code in stats->send_error); the decoder's error; TROVE_ERR_NOTFOUND when an object
 * stayed missing through the retries; the backend's errors (diag names the item and the
 * digest). Every thread the call started has ended, and every byte it held is freed, when
 * it returns. One run at a time per stream (a second one at once is TROVE_ERR_INVALID);
 * stats (may be NULL) is filled in either way.
 */
int trove_stream_run(struct trove_stream *st, const struct trove_digest *digests,
                     uint64_t first_slot, uint64_t n, const struct trove_stream_decoder *dec,
                     const struct trove_stream_sink *sink, struct trove_stream_stats *stats,
                     struct trove_diag *diag);

/* Stop the run under way (or the next one) as soon as possible: waits end, no new download
 * starts, nothing more is sent. The run it stops consumes it (every run clears it when it
 * returns), so the stream can run again. Thread-safe; may be called from the sink or the
 * decoder, not from the probe. */
void trove_stream_cancel(struct trove_stream *st);

/* Free the stream (no run may be under way). */
void trove_stream_free(struct trove_stream *st);

/* ---- bookkeeping off the critical path ------------------------------------------------
 *
 * A task that must happen but must not delay a request (a capture's last-used marker): it
 * runs on its own detached thread. The request never waits for it; whoever wants to
 * (a CLI about to exit) waits with a timeout. The task and its handle are freed when both
 * the task finished and the handle was released.
 */
#define TROVE_BG_TIMEOUT_MS_DEFAULT 30000u

struct trove_bg;

/* Start fn(ctx) on a detached thread; cleanup(ctx) (may be NULL) runs after it, on that
 * thread. Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM, -errno (then nothing ran and
 * cleanup was called). */
int trove_bg_start(int (*fn)(void *ctx), void (*cleanup)(void *ctx), void *ctx,
                   struct trove_bg **out);
/* Wait up to timeout_ms for the task: its result, or TROVE_ERR_TIMEOUT. */
int trove_bg_wait(struct trove_bg *t, uint32_t timeout_ms);
/* Drop the handle (the task runs on if it has not finished). */
void trove_bg_release(struct trove_bg *t);

#ifdef __cplusplus
}
#endif
#endif
