/*
 * sender.h: the stream's sender (sender.c) — the sink called inline, or on one thread
 * behind a rendezvous channel or a bounded queue — and the emitter a decoder hands its
 * batches to. Internal to src/stream.
 */
#ifndef TROVE_STREAM_SENDER_H
#define TROVE_STREAM_SENDER_H

#include "bufpool.h"
#include "trove/stream.h"

struct trove__sender;

/*
 * The item before the one being decoded, when its last batches may still be sending
 * (RENDEZVOUS): its send mark, its object (which those batches may alias) and the sink to
 * report it done to. The walker fills it in after a decode; trove__pending_complete, called
 * by the next item's first emit (or by the walker after that decode), waits for its sends,
 * reports it done and frees its object. So item_done(i) still comes after every batch of
 * i was sent and before any batch of i + 1 is handed to the sender, while the decoder
 * builds i + 1's first batch during i's last send. Walker's thread only.
 */
struct trove__pending {
    int have;
    uint64_t item, mark;
    struct trove_bytes obj;
    const struct trove_stream_sink *sink;
    struct trove__bufpool *pool; /* where a done item's object buffer goes */
    uint64_t items_done; /* items reported done */
};

/* What trove_stream_emit needs: the sender, the item being decoded, and the item before it
 * if it is still pending (NULL: none is ever left pending). */
struct trove_stream_emitter {
    struct trove__sender *snd;
    uint64_t item;
    struct trove__pending *pend;
};

/* Complete p's item if it has one (see struct trove__pending): TROVE_OK, or the sender's
 * TROVE_ERR_SEND / TROVE_ERR_CANCELLED if its batches were not all sent. */
int trove__pending_complete(struct trove__sender *snd, struct trove__pending *p);

/* A mark for "every batch emitted so far" (walker's thread). */
uint64_t trove__sender_mark(struct trove__sender *snd);

/* TROVE_OK, or the sticky TROVE_ERR_SEND / TROVE_ERR_CANCELLED. */
int trove__sender_status(struct trove__sender *snd);

/* Start a sender for sink (borrowed until stop) in mode (enum trove_stream_send_mode;
 * queue is the BUFFERED capacity, already checked). Errors: TROVE_ERR_NOMEM, -errno. */
int trove__sender_start(int mode, uint32_t queue, const struct trove_stream_sink *sink,
                        struct trove__sender **out);

/* Nothing more is sent: queued batches are dropped, and waits in emit and in an item's
 * completion end with TROVE_ERR_CANCELLED. Any thread; idempotent. */
void trove__sender_cancel(struct trove__sender *snd);

/* Drop whatever is still queued, wait for a send under way to return, end the thread, add
 * the counters (batches, events, bytes_sent, send_error) to stats (may be NULL) and free
 * the sender. After it returns no sink call is running, so batches that alias an object
 * may be freed. */
void trove__sender_stop(struct trove__sender *snd, struct trove_stream_stats *stats);

#endif
