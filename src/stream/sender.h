/*
 * sender.h: the stream's sender (sender.c) — the sink called inline, or on one thread
 * behind a rendezvous channel or a bounded queue — and the emitter a decoder hands its
 * batches to. Internal to src/stream.
 */
#ifndef TROVE_STREAM_SENDER_H
#define TROVE_STREAM_SENDER_H

#include "trove/stream.h"

struct trove__sender;

/* What trove_stream_emit needs: the sender and the item being decoded. */
struct trove_stream_emitter {
    struct trove__sender *snd;
    uint64_t item;
};

/* Start a sender for sink (borrowed until stop) in mode (enum trove_stream_send_mode;
 * queue is the BUFFERED capacity, already checked). Errors: TROVE_ERR_NOMEM, -errno. */
int trove__sender_start(int mode, uint32_t queue, const struct trove_stream_sink *sink,
                        struct trove__sender **out);

/* Wait until every batch emitted so far has been sent. Returns TROVE_OK, TROVE_ERR_SEND
 * (the sink failed: sticky) or TROVE_ERR_CANCELLED. Walker's thread. */
int trove__sender_drain(struct trove__sender *snd);

/* Nothing more is sent: queued batches are dropped, waits in emit and drain end with
 * TROVE_ERR_CANCELLED. Any thread; idempotent. */
void trove__sender_cancel(struct trove__sender *snd);

/* Drop whatever is still queued, wait for a send under way to return, end the thread, add
 * the counters (batches, events, bytes_sent, send_error) to stats (may be NULL) and free
 * the sender. After it returns no sink call is running, so batches that alias an object
 * may be freed. */
void trove__sender_stop(struct trove__sender *snd, struct trove_stream_stats *stats);

#endif
