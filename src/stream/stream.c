/*
 * stream.c: the walker (include/trove/stream.h; the design is docs/stream.md).
 *
 * A run starts a sender (sender.c) and, when depth, budget and n allow, a prefetcher
 * (prefetch.c), then walks the items strictly in order. For each it
 *
 *   1. tells the prefetcher where it is and takes the object from it (a finished download,
 *      or one it waits for), or reads the object itself: a missing object is retried
 *      `retries` times with exponential backoff, each wait a timed condvar wait that a
 *      cancel ends at once;
 *   2. calls the decoder, whose batches go to the sender through trove_stream_emit;
 *   3. waits for the sender: every batch of the item has been sent before item_done is
 *      called and the object's buffer is freed, so batches may alias the buffer and the
 *      sink sees the items in order. With a rendezvous sender the wait is put off until the
 *      next item's first emit (struct trove__pending), so the last send of one item
 *      overlaps the first decode of the next;
 *
 * and checks for cancellation between every step. The run's sender and prefetcher are
 * published in the stream under its mutex for trove_stream_cancel, which may come from any
 * thread (the sink, the decoder, a watchdog): it sets the flag and cancels both under that
 * mutex, and unpublishing happens before they are stopped, so cancel never touches a freed
 * one. At the end the sender is stopped first (after that no sink call runs, so the last
 * object, which batches may alias, can be freed), then the prefetcher, which joins its
 * workers and frees what they hold.
 *
 * A cancel applies to the run under way, or, if none is, to the next run; a run clears it
 * when it returns, so a cancelled stream can run again.
 */
#include "bufpool.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "prefetch.h"
#include "sender.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct trove_stream {
    struct trove_backend *be;
    struct trove_stream_options opt; /* checked; depth capped */
    pthread_mutex_t mu;
    pthread_cond_t wake;  /* backoff waits (CLOCK_MONOTONIC); cancel broadcasts */
    atomic_int cancelled; /* written under mu, read anywhere */
    int running;          /* under mu */
    struct trove__sender *snd;   /* the run's, under mu, for cancel */
    struct trove__prefetch *pf;  /* the run's (or NULL), under mu, for cancel */
    struct trove__bufpool pool;  /* object buffers of finished items, for the next reads */
};

void trove_stream_options_default(struct trove_stream_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->depth = TROVE_STREAM_DEPTH_DEFAULT;
    opt->budget = TROVE_STREAM_BUDGET_DEFAULT;
    opt->max_object = (uint64_t)1 << 30;
    opt->retries = 4;
    opt->backoff_ms = 2;
    opt->backoff_max_ms = 100;
    opt->send_mode = TROVE_STREAM_SEND_RENDEZVOUS;
    opt->send_queue = 8;
}

int trove_stream_new(struct trove_backend *be, const struct trove_stream_options *opt,
                     struct trove_stream **out)
{
    struct trove_stream_options o;
    struct trove_stream *st;
    pthread_condattr_t ca;
    int rc;

    if (!out)
        return TROVE_ERR_INVALID;
    *out = NULL;
    if (opt)
        o = *opt;
    else
        memset(&o, 0, sizeof o);
    if (!be || o.send_mode < TROVE_STREAM_SEND_RENDEZVOUS ||
        o.send_mode > TROVE_STREAM_SEND_BUFFERED)
        return TROVE_ERR_INVALID;
    if (o.send_mode == TROVE_STREAM_SEND_BUFFERED && o.send_queue > TROVE_STREAM_SEND_QUEUE_MAX)
        return TROVE_ERR_INVALID;
    /* A field left 0 is its default; the sentinels say "none". From here on, depth 0 means
     * no prefetching and retries 0 none, as the walker and the prefetcher read them. */
    o.depth = o.depth == TROVE_STREAM_NO_PREFETCH ? 0
              : o.depth == 0                      ? TROVE_STREAM_DEPTH_DEFAULT
              : o.depth > TROVE_STREAM_DEPTH_MAX  ? TROVE_STREAM_DEPTH_MAX
                                                  : o.depth;
    o.budget = o.budget ? o.budget : TROVE_STREAM_BUDGET_DEFAULT;
    o.max_object = o.max_object ? o.max_object : (uint64_t)1 << 30;
    o.retries = o.retries == TROVE_STREAM_NO_RETRY ? 0 : o.retries ? o.retries : 4;
    o.backoff_ms = o.backoff_ms ? o.backoff_ms : 2;
    o.backoff_max_ms = o.backoff_max_ms ? o.backoff_max_ms : 100;
    o.send_queue = o.send_queue ? o.send_queue : 8;
    st = trove__calloc(1, sizeof *st);
    if (!st)
        return TROVE_ERR_NOMEM;
    st->be = be;
    st->opt = o;
    atomic_init(&st->cancelled, 0);
    if ((rc = pthread_condattr_init(&ca)) != 0) {
        free(st);
        return -rc;
    }
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(&st->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0) {
        free(st);
        return -rc;
    }
    pthread_mutex_init(&st->mu, NULL);
    trove__bufpool_init(&st->pool);
    *out = st;
    return TROVE_OK;
}

void trove_stream_cancel(struct trove_stream *st)
{
    if (!st)
        return;
    pthread_mutex_lock(&st->mu);
    atomic_store(&st->cancelled, 1);
    if (st->snd)
        trove__sender_cancel(st->snd);
    if (st->pf)
        trove__prefetch_cancel(st->pf);
    pthread_cond_broadcast(&st->wake);
    pthread_mutex_unlock(&st->mu);
}

void trove_stream_free(struct trove_stream *st)
{
    if (!st)
        return;
    trove__bufpool_destroy(&st->pool);
    pthread_cond_destroy(&st->wake);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

static int is_cancelled(struct trove_stream *st)
{
    return atomic_load(&st->cancelled);
}

/* Wait ms milliseconds or until a cancel: TROVE_OK or TROVE_ERR_CANCELLED. */
static int backoff(struct trove_stream *st, uint64_t ms)
{
    struct timespec until;
    int rc;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&st->mu);
    while (!is_cancelled(st) && pthread_cond_timedwait(&st->wake, &st->mu, &until) != ETIMEDOUT)
        ;
    rc = is_cancelled(st) ? TROVE_ERR_CANCELLED : TROVE_OK;
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* The walker's own read of d into obj, retrying while it is missing. */
static int walker_read(struct trove_stream *st, const struct trove_digest *d,
                       struct trove_bytes *obj, struct trove_stream_stats *s)
{
    const struct trove_stream_options *o = &st->opt;
    size_t max_len = o->max_object < SIZE_MAX ? (size_t)o->max_object : SIZE_MAX;
    uint64_t wait = o->backoff_ms < o->backoff_max_ms ? o->backoff_ms : o->backoff_max_ms;
    int rc;

    for (uint32_t attempt = 0;; attempt++) {
        if (is_cancelled(st))
            return TROVE_ERR_CANCELLED;
        trove__bufpool_take(&st->pool, max_len, obj);
        rc = trove_backend_get(st->be, d, obj, max_len);
        if (rc != TROVE_ERR_NOTFOUND || attempt >= o->retries)
            return rc;
        s->retries++;
        if ((rc = backoff(st, wait)) != TROVE_OK)
            return rc;
        wait = wait * 2 < o->backoff_max_ms ? wait * 2 : o->backoff_max_ms;
    }
}

/* Item i's object into obj (left empty for an empty slot). */
static int fetch(struct trove_stream *st, struct trove__prefetch *pf,
                 const struct trove_digest *d, uint64_t i, uint64_t slot,
                 struct trove_bytes *obj, struct trove_stream_stats *s, struct trove_diag *diag)
{
    char hex[33];
    int rc = 0;

    if (pf && (rc = trove__prefetch_take(pf, i, obj)) < 0)
        return rc;
    if (rc == 1) {
        s->prefetched++;
        return TROVE_OK;
    }
    if (trove_digest_is_zero(d))
        return TROVE_OK;
    s->walker_reads++;
    rc = walker_read(st, d, obj, s);
    if (rc == TROVE_OK && pf)
        trove__prefetch_walker_read(pf, obj->len);
    if (rc != TROVE_OK && rc != TROVE_ERR_CANCELLED) {
        s->read_failed = 1;
        s->read_item = i;
        trove_digest_hex(d, hex);
        TROVE_FAIL(diag, rc, i,
                   "item %" PRIu64 " (slot %" PRIu64 ", object %s): %s%s", i, slot, hex,
                   trove_strerror(rc),
                   rc == TROVE_ERR_NOTFOUND   ? " after every retry; is the store complete?"
                   : rc == TROVE_ERR_LIMIT    ? "; raise max_object to read it"
                   : rc == TROVE_ERR_CHECKSUM ? " (the stored bytes do not hash to the object's "
                                                "name: it is damaged)"
                                              : "");
    }
    return rc;
}

int trove_stream_run(struct trove_stream *st, const struct trove_digest *digests,
                     uint64_t first_slot, uint64_t n, const struct trove_stream_decoder *dec,
                     const struct trove_stream_sink *sink, struct trove_stream_stats *stats,
                     struct trove_diag *diag)
{
    static const uint8_t empty_object[1];
    struct trove_stream_stats s;
    struct trove__sender *snd = NULL;
    struct trove__prefetch *pf = NULL;
    struct trove_bytes obj = {0};
    struct trove__pending pend = {0};
    int prefetching, busy, rc, failed_decoding = 0, overlap;
    uint64_t i = 0;

    memset(&s, 0, sizeof s);
    if (stats)
        *stats = s;
    if (!st || !dec || !dec->decode || !sink || !sink->send || (n > 0 && !digests))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "trove_stream_run: a stream, a decoder, a sink and the digests "
                          "are required");
    pthread_mutex_lock(&st->mu);
    busy = st->running;
    st->running = 1;
    pthread_mutex_unlock(&st->mu);
    if (busy)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "trove_stream_run: another run of this stream is under way");

    prefetching = st->opt.depth > 0 && st->opt.budget > 0;
    s.depth = prefetching ? st->opt.depth : 0;
    rc = trove__sender_start(st->opt.send_mode, st->opt.send_queue, sink, &snd);
    if (rc == TROVE_OK && prefetching && n >= 2) {
        struct trove__prefetch_config cfg = {
            .be = st->be, .digests = digests, .n = n, .depth = st->opt.depth,
            .budget = st->opt.budget, .max_object = st->opt.max_object,
            .probe = st->opt.probe, .probe_ctx = st->opt.probe_ctx, .pool = &st->pool,
        };
        rc = trove__prefetch_start(&cfg, &pf);
    }
    if (rc != TROVE_OK) {
        TROVE_FAIL(diag, rc, 0, "trove_stream_run: cannot start the stream's threads: %s",
                   trove_strerror(rc));
        goto out;
    }
    pthread_mutex_lock(&st->mu);
    st->snd = snd;
    st->pf = pf;
    if (is_cancelled(st)) { /* a cancel that came before this run */
        trove__sender_cancel(snd);
        if (pf)
            trove__prefetch_cancel(pf);
    }
    pthread_mutex_unlock(&st->mu);

    /* With a rendezvous sender, an item's last send overlaps the next item's first decode
     * (struct trove__pending); inline there is nothing to overlap, and a buffered queue
     * is drained at each item's end so that a cancel never drops a finished item's
     * batches. */
    overlap = st->opt.send_mode == TROVE_STREAM_SEND_RENDEZVOUS;
    pend.sink = sink;
    pend.pool = &st->pool;
    for (i = 0; i < n; i++) {
        struct trove_stream_object view;
        struct trove_stream_emitter em = {snd, i, &pend};

        if (is_cancelled(st)) {
            rc = TROVE_ERR_CANCELLED;
            break;
        }
        if ((rc = fetch(st, pf, &digests[i], i, first_slot + i, &obj, &s, diag)) != TROVE_OK)
            break;
        if (is_cancelled(st)) {
            rc = TROVE_ERR_CANCELLED;
            break;
        }
        view.item = i;
        view.slot = first_slot + i;
        view.digest = &digests[i];
        view.data = trove_digest_is_zero(&digests[i]) ? NULL
                    : obj.ptr                         ? obj.ptr
                                                      : empty_object;
        view.len = obj.len;
        rc = dec->decode(dec->ctx, &view, &em, diag);
        if (rc != TROVE_OK) {
            failed_decoding = rc != TROVE_ERR_SEND && rc != TROVE_ERR_CANCELLED;
            break;
        }
        /* Item i - 1 if this decode emitted nothing; and item i, whose batches were all
         * handed over only if the run is still whole (a decoder may have gone on past a
         * failed emit). Then item i is pending, or done at once. */
        if ((rc = trove__pending_complete(snd, &pend)) != TROVE_OK ||
            (rc = trove__sender_status(snd)) != TROVE_OK)
            break;
        pend.have = 1;
        pend.item = i;
        pend.mark = trove__sender_mark(snd);
        pend.obj = obj;
        memset(&obj, 0, sizeof obj);
        if (!overlap && (rc = trove__pending_complete(snd, &pend)) != TROVE_OK)
            break;
    }
    if (rc == TROVE_OK) /* the last item */
        rc = trove__pending_complete(snd, &pend);
    else if (rc != TROVE_ERR_SEND && rc != TROVE_ERR_CANCELLED)
        trove__pending_complete(snd, &pend); /* a whole item before a fetch or decode error */
out:
    pthread_mutex_lock(&st->mu);
    st->snd = NULL;
    st->pf = NULL;
    pthread_mutex_unlock(&st->mu);
    trove__sender_stop(snd, &s); /* no sink call runs after this: obj may go */
    trove__prefetch_stop(pf, &s);
    trove__bufpool_give(&st->pool, &obj);
    trove__bufpool_give(&st->pool, &pend.obj);
    s.items = pend.items_done;
    if (rc == TROVE_ERR_SEND && s.send_error > 0)
        TROVE_FAIL(diag, rc, i,
                   "item %" PRIu64 " (slot %" PRIu64 "): the sink returned %d, which is not "
                   "an error code (a fault in the sink); nothing was sent after it",
                   i, first_slot + i, s.send_error);
    else if (rc == TROVE_ERR_SEND && s.send_error < 0)
        TROVE_FAIL(diag, rc, i,
                   "item %" PRIu64 " (slot %" PRIu64 "): the sink failed with %d (%s); "
                   "nothing was sent after it",
                   i, first_slot + i, s.send_error, trove_strerror(s.send_error));
    else if (rc == TROVE_ERR_CANCELLED)
        TROVE_FAIL(diag, rc, i, "cancelled at item %" PRIu64 " of %" PRIu64, i, n);
    else if ((failed_decoding || rc == TROVE_ERR_SEND) && diag && diag->code != rc)
        TROVE_FAIL(diag, rc, i, "item %" PRIu64 " (slot %" PRIu64 "): the decoder failed: %s",
                   i, first_slot + i, trove_strerror(rc));
    pthread_mutex_lock(&st->mu);
    atomic_store(&st->cancelled, 0);
    st->running = 0;
    pthread_mutex_unlock(&st->mu);
    if (stats)
        *stats = s;
    return rc;
}
