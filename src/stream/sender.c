/*
 * sender.c: the sink, called off the walker's critical path (sender.h).
 *
 * In INLINE mode trove_stream_emit calls the sink itself. Otherwise one thread sends and
 * the walker's emits reach it through a ring of `cap` batches under one mutex:
 *
 *   RENDEZVOUS  cap 1, and emit returns only once the thread has taken its batch off the
 *               ring (Go's unbuffered channel): while the thread sends batch k, the
 *               decoder builds batch k+1 and waits in emit until k is done.
 *   BUFFERED    cap send_queue, and emit returns as soon as the batch is in the ring.
 *
 * Sequence numbers order everything: queued_seq counts batches accepted, taken_seq those
 * the thread took off the ring, done_seq those whose send returned (ok_seq those that
 * succeeded); a rendezvous emit waits for taken_seq to reach its batch, and a pending item's
 * completion for ok_seq to reach the mark taken after its last emit. The thread
 * sends one batch at a time in ring order, so the sink sees batches in emit order.
 *
 * `status` is sticky and the first of two ends wins: TROVE_ERR_SEND when the sink returns
 * anything but 0 (its code is kept as send_error), TROVE_ERR_CANCELLED on cancel. Whoever
 * sets it empties the ring under the lock, freeing owned batches, so nothing queued is sent
 * after a failure and every later emit frees its batch and returns the status. A batch the
 * thread has taken belongs to the thread (it frees it after the send); a batch in the ring
 * belongs to the ring; a batch emit could not queue is freed by emit. So each owned block
 * is freed exactly once, whichever way the request ends.
 */
#include "sender.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <pthread.h>
#include <stdlib.h>

struct trove__sender {
    int mode;
    struct trove_stream_sink sink;
    pthread_mutex_t mu;
    pthread_cond_t taken; /* emit and item completion wait: a batch was taken or sent, or an end */
    pthread_cond_t work;  /* the thread waits: a batch was queued, or an end */
    struct trove_stream_batch *ring;
    uint32_t cap, head, count;
    uint64_t queued_seq, taken_seq, done_seq;
    uint64_t ok_seq; /* sends that succeeded: done_seq, less one after a failed send */
    int status;   /* 0, or sticky TROVE_ERR_SEND / TROVE_ERR_CANCELLED */
    int sending;  /* the thread is in a sink call */
    int stopping; /* trove__sender_stop: the thread ends */
    int has_thread;
    pthread_t thread;
    /* Counters of successful sends, and the sink's first failure. */
    uint64_t batches, events, bytes;
    int send_error;
};

/* Free every queued batch. Under mu. */
static void drop_queued(struct trove__sender *snd)
{
    while (snd->count > 0) {
        free(snd->ring[snd->head].owned);
        snd->head = (snd->head + 1) % snd->cap;
        snd->count--;
    }
}

/* The first end wins; queued batches are dropped and every waiter wakes. Under mu. */
static void end(struct trove__sender *snd, int status)
{
    if (snd->status == TROVE_OK)
        snd->status = status;
    drop_queued(snd);
    pthread_cond_broadcast(&snd->taken);
    pthread_cond_broadcast(&snd->work);
}

/* Account for one send that returned rc. Under mu. */
static void sent(struct trove__sender *snd, const struct trove_stream_batch *b, int rc)
{
    snd->done_seq++;
    if (rc != 0) {
        if (snd->send_error == 0)
            snd->send_error = rc;
        end(snd, TROVE_ERR_SEND);
        return;
    }
    snd->ok_seq++;
    snd->batches++;
    snd->events += b->events;
    snd->bytes += b->len;
}

static void *sender_main(void *arg)
{
    struct trove__sender *snd = arg;
    struct trove_stream_batch b;
    int rc;

    pthread_mutex_lock(&snd->mu);
    for (;;) {
        while (snd->count == 0 && snd->status == TROVE_OK && !snd->stopping)
            pthread_cond_wait(&snd->work, &snd->mu);
        if (snd->status != TROVE_OK || snd->stopping)
            break;
        b = snd->ring[snd->head];
        snd->head = (snd->head + 1) % snd->cap;
        snd->count--;
        snd->taken_seq++;
        snd->sending = 1;
        pthread_cond_broadcast(&snd->taken);
        pthread_mutex_unlock(&snd->mu);
        rc = snd->sink.send(snd->sink.ctx, &b);
        free(b.owned);
        pthread_mutex_lock(&snd->mu);
        snd->sending = 0;
        sent(snd, &b, rc);
        pthread_cond_broadcast(&snd->taken);
    }
    drop_queued(snd);
    pthread_mutex_unlock(&snd->mu);
    return NULL;
}

int trove__sender_start(int mode, uint32_t queue, const struct trove_stream_sink *sink,
                        struct trove__sender **out)
{
    struct trove__sender *snd = trove__calloc(1, sizeof *snd);
    int rc = TROVE_ERR_NOMEM;

    *out = NULL;
    if (!snd)
        goto out;
    snd->mode = mode;
    snd->sink = *sink;
    snd->cap = mode == TROVE_STREAM_SEND_BUFFERED ? queue : 1;
    snd->ring = trove__calloc(snd->cap, sizeof *snd->ring);
    if (!snd->ring)
        goto out;
    pthread_mutex_init(&snd->mu, NULL);
    pthread_cond_init(&snd->taken, NULL);
    pthread_cond_init(&snd->work, NULL);
    if (mode != TROVE_STREAM_SEND_INLINE) {
        rc = pthread_create(&snd->thread, NULL, sender_main, snd);
        if (rc != 0) {
            rc = -rc;
            pthread_cond_destroy(&snd->work);
            pthread_cond_destroy(&snd->taken);
            pthread_mutex_destroy(&snd->mu);
            goto out;
        }
        snd->has_thread = 1;
    }
    *out = snd;
    snd = NULL;
    rc = TROVE_OK;
out:
    if (snd)
        free(snd->ring);
    free(snd);
    return rc;
}

int trove_stream_emit(struct trove_stream_emitter *em, const struct trove_stream_batch *b)
{
    struct trove_stream_batch copy;
    struct trove__sender *snd;
    uint64_t seq;
    int rc;

    if (!b)
        return TROVE_ERR_INVALID;
    copy = *b;
    if (!em || !em->snd || (!copy.data && copy.len > 0)) {
        free(copy.owned);
        return TROVE_ERR_INVALID;
    }
    copy.item = em->item;
    snd = em->snd;
    /* The previous item is done before this item's first batch goes to the sender. */
    if (em->pend && em->pend->have && (rc = trove__pending_complete(snd, em->pend))) {
        free(copy.owned);
        return rc;
    }
    pthread_mutex_lock(&snd->mu);
    TROVE_TRY(rc, snd->status);
    if (snd->mode == TROVE_STREAM_SEND_INLINE) {
        /* The walker is the only caller: no other send can be under way. */
        snd->queued_seq++;
        pthread_mutex_unlock(&snd->mu);
        rc = snd->sink.send(snd->sink.ctx, &copy);
        free(copy.owned);
        copy.owned = NULL;
        pthread_mutex_lock(&snd->mu);
        sent(snd, &copy, rc);
        rc = rc != 0 ? TROVE_ERR_SEND : TROVE_OK;
        goto out;
    }
    while (snd->count == snd->cap && snd->status == TROVE_OK)
        pthread_cond_wait(&snd->taken, &snd->mu);
    TROVE_TRY(rc, snd->status);
    snd->ring[(snd->head + snd->count) % snd->cap] = copy;
    snd->count++;
    seq = ++snd->queued_seq;
    copy.owned = NULL; /* the ring's now */
    pthread_cond_signal(&snd->work);
    if (snd->mode == TROVE_STREAM_SEND_RENDEZVOUS) {
        while (snd->taken_seq < seq && snd->status == TROVE_OK)
            pthread_cond_wait(&snd->taken, &snd->mu);
        /* Not taken: an end dropped it with the ring. */
        rc = snd->taken_seq >= seq ? TROVE_OK : snd->status;
    }
out:
    free(copy.owned); /* NULL unless the batch went nowhere */
    pthread_mutex_unlock(&snd->mu);
    return rc;
}

uint64_t trove__sender_mark(struct trove__sender *snd)
{
    uint64_t seq;

    pthread_mutex_lock(&snd->mu);
    seq = snd->queued_seq;
    pthread_mutex_unlock(&snd->mu);
    return seq;
}

int trove__pending_complete(struct trove__sender *snd, struct trove__pending *p)
{
    int rc;

    if (!p->have)
        return TROVE_OK;
    /* A send under way when an end came still finishes: wait for it, so that an item
     * whose every batch did go out is reported done whatever stopped the run after it. */
    pthread_mutex_lock(&snd->mu);
    while (snd->ok_seq < p->mark && (snd->status == TROVE_OK || snd->sending))
        pthread_cond_wait(&snd->taken, &snd->mu);
    rc = snd->ok_seq >= p->mark ? TROVE_OK : snd->status;
    pthread_mutex_unlock(&snd->mu);
    if (rc != TROVE_OK)
        return rc;
    p->have = 0;
    if (p->sink->item_done)
        p->sink->item_done(p->sink->ctx, p->item);
    p->items_done++;
    trove__bufpool_give(p->pool, &p->obj);
    return TROVE_OK;
}

int trove__sender_status(struct trove__sender *snd)
{
    int rc;

    pthread_mutex_lock(&snd->mu);
    rc = snd->status;
    pthread_mutex_unlock(&snd->mu);
    return rc;
}

void trove__sender_cancel(struct trove__sender *snd)
{
    pthread_mutex_lock(&snd->mu);
    end(snd, TROVE_ERR_CANCELLED);
    pthread_mutex_unlock(&snd->mu);
}

void trove__sender_stop(struct trove__sender *snd, struct trove_stream_stats *stats)
{
    if (!snd)
        return;
    pthread_mutex_lock(&snd->mu);
    snd->stopping = 1;
    drop_queued(snd);
    pthread_cond_broadcast(&snd->work);
    pthread_mutex_unlock(&snd->mu);
    if (snd->has_thread)
        pthread_join(snd->thread, NULL);
    if (stats) {
        stats->batches = snd->batches;
        stats->events = snd->events;
        stats->bytes_sent = snd->bytes;
        stats->send_error = snd->send_error;
    }
    pthread_cond_destroy(&snd->work);
    pthread_cond_destroy(&snd->taken);
    pthread_mutex_destroy(&snd->mu);
    free(snd->ring);
    free(snd);
}
