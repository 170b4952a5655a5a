/*
 * prefetch.c: downloads ahead of the walker, bounded by a depth and a byte budget that is a
 * hard cap (prefetch.h; the design is docs/stream.md).
 *
 * State, all under one mutex:
 *
 *   walker     the item the walker is at; downloads are launched for (walker, walker+depth]
 *   next       the next item to launch, in order (empty slots are skipped)
 *   slots      a ring of depth+1 slots, item % (depth+1); every live slot holds an item in
 *              [walker, walker+depth], so no two collide. A slot is IN_FLIGHT (its share
 *              reserved), DONE (the object, holding its actual size), or LEFT (over its
 *              share or failed: the walker reads it; holds nothing).
 *   reserved   the shares of the downloads in flight
 *   held       the bytes of the finished downloads not yet taken
 *   estimate   the size of the last finished download (budget/depth before any)
 *
 * A worker launches `next` only when every condition holds:
 *
 *   concurrency = max(1, min(depth, budget / estimate)),  share = budget / concurrency
 *   downloads held (in flight + done) < concurrency
 *   reserved + held + share <= budget
 *   not off, not blocked behind a failed item, not cancelled or stopping
 *
 * and reads with max_len = share, so a download never holds more than it reserved: at
 * completion its share is swapped for its size, which is at most the share. Hence
 * reserved + held <= budget at every instant, which the probe sees under the lock.
 *
 * Outcomes: done -> DONE, estimate = its size. TROVE_ERR_LIMIT at max_len == share (over
 * its share) -> LEFT, share_overflows++, and the estimate doubles (capped at the budget),
 * which lowers the concurrency and raises the share; if the share already was the whole
 * budget, prefetching is off for the rest of the run. Anything else (missing, I/O, over
 * max_object) -> LEFT, download_errors++, and nothing is launched past that item until the
 * walker reaches it (the walker's retry loop owns missing objects).
 *
 * The walker's take moves its position (which may unblock launches), then takes a DONE
 * slot, waits for an IN_FLIGHT one, or frees a LEFT one and reads the item itself.
 * Every wait checks `cancelled`, which cancel sets under the lock with a broadcast. A
 * worker finishing after cancel or stop frees its bytes at once; stop joins the workers
 * and frees whatever DONE slots remain, so every download is freed exactly once.
 *
 * On a backend with asynchronous gets (trove_backend_get_async) there are no workers: pump
 * makes the launches a worker would, under the lock, wherever the window, the budget or
 * the held count changes, and each get's completion (async_ended, on the backend's thread)
 * finishes its slot as a worker would and pumps again. async_out counts the gets started
 * and not yet ended; stop waits for it to reach 0.
 */
#include "prefetch.h"
#include "common/alloc.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum slot_state { SLOT_FREE = 0, SLOT_IN_FLIGHT, SLOT_DONE, SLOT_LEFT };

struct slot {
    uint64_t item;
    int state;             /* enum slot_state */
    uint64_t share;        /* IN_FLIGHT: its reservation and read limit */
    struct trove_bytes data; /* DONE: the object */
    /* IN_FLIGHT on an asynchronous backend: where the get reads, and its limit */
    struct trove__prefetch *pf;
    struct trove_bytes buf;
    size_t max_len;
};

struct trove__prefetch {
    struct trove__prefetch_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t work; /* workers: the window, the budget or an end changed */
    pthread_cond_t done; /* the walker: a download finished, or cancel */
    pthread_t *threads;
    unsigned nthreads;
    struct slot *slots;
    size_t nslots; /* depth + 1 */
    uint64_t walker, next, estimate;
    uint64_t reserved, held;
    uint32_t nheld;       /* IN_FLIGHT + DONE slots */
    uint64_t last_probed; /* reserved + held at the last probe */
    int blocked;          /* launch nothing past block_item until the walker reaches it */
    uint64_t block_item;
    int off, cancelled, stopping;
    int async;           /* the backend has asynchronous gets: no worker threads */
    uint32_t async_out;  /* asynchronous gets started, not yet ended */
    /* statistics */
    uint64_t share_overflows, download_errors, peak;
    uint32_t max_in_flight;
};

static size_t to_size(uint64_t v)
{
    return v < SIZE_MAX ? (size_t)v : SIZE_MAX;
}

static struct slot *slot_of(struct trove__prefetch *pf, uint64_t item)
{
    return &pf->slots[item % pf->nslots];
}

/* The held bytes or count changed: statistics and the probe. Under mu. */
static void held_changed(struct trove__prefetch *pf)
{
    uint64_t total = pf->reserved + pf->held;

    assert(total <= pf->cfg.budget);
    if (pf->nheld > pf->max_in_flight)
        pf->max_in_flight = pf->nheld;
    if (total > pf->peak)
        pf->peak = total;
    if (total != pf->last_probed) {
        pf->last_probed = total;
        if (pf->cfg.probe)
            pf->cfg.probe(pf->cfg.probe_ctx, total, pf->cfg.budget);
    }
}

/* May a worker launch `next` now? Sets *share_out. Under mu. */
static int launchable(struct trove__prefetch *pf, uint64_t *share_out)
{
    const struct trove__prefetch_config *c = &pf->cfg;
    uint64_t conc, share, last = pf->walker + c->depth;

    if (pf->off || pf->blocked || pf->cancelled || pf->stopping)
        return 0;
    while (pf->next < c->n && pf->next <= last && trove_digest_is_zero(&c->digests[pf->next]))
        pf->next++;
    if (pf->next >= c->n || pf->next > last)
        return 0;
    conc = c->budget / pf->estimate;
    if (conc > c->depth)
        conc = c->depth;
    if (conc < 1)
        conc = 1;
    share = c->budget / conc;
    if (pf->nheld >= conc || pf->reserved + pf->held + share > c->budget)
        return 0;
    *share_out = share;
    return 1;
}

/* A download of s finished with rc (buf holds the object when rc is TROVE_OK). Under mu. */
static void finish(struct trove__prefetch *pf, struct slot *s, size_t max_len, int rc,
                   struct trove_bytes *buf)
{
    pf->reserved -= s->share;
    if (pf->cancelled || pf->stopping) {
        s->state = SLOT_FREE;
        pf->nheld--;
    } else if (rc == TROVE_OK) {
        assert(buf->len <= s->share);
        s->data = *buf;
        memset(buf, 0, sizeof *buf);
        s->state = SLOT_DONE;
        pf->held += s->data.len;
        pf->estimate = s->data.len > 0 ? s->data.len : 1;
    } else if (rc == TROVE_ERR_LIMIT && max_len == s->share) {
        /* Over its share: the walker reads it; fewer, larger shares from now on. */
        s->state = SLOT_LEFT;
        pf->nheld--;
        pf->share_overflows++;
        if (s->share >= pf->cfg.budget)
            pf->off = 1;
        else
            pf->estimate = pf->estimate > pf->cfg.budget / 2 ? pf->cfg.budget : pf->estimate * 2;
    } else {
        s->state = SLOT_LEFT;
        pf->nheld--;
        pf->download_errors++;
        if (s->item > pf->walker && (!pf->blocked || s->item < pf->block_item)) {
            pf->blocked = 1;
            pf->block_item = s->item;
        }
    }
    held_changed(pf);
    pthread_cond_broadcast(&pf->done);
    pthread_cond_broadcast(&pf->work);
}

/* The next item's slot made IN_FLIGHT with its share reserved (launchable said yes). */
static struct slot *reserve(struct trove__prefetch *pf, uint64_t share)
{
    uint64_t item = pf->next++;
    struct slot *s = slot_of(pf, item);

    assert(s->state == SLOT_FREE);
    s->item = item;
    s->state = SLOT_IN_FLIGHT;
    s->share = share;
    pf->reserved += share;
    pf->nheld++;
    held_changed(pf);
    return s;
}

static void pump(struct trove__prefetch *pf);

/* An asynchronous get ended (on the backend's thread). */
static void async_ended(void *ctx, int rc)
{
    struct slot *s = ctx;
    struct trove__prefetch *pf = s->pf;

    pthread_mutex_lock(&pf->mu);
    finish(pf, s, s->max_len, rc, &s->buf);
    trove__bufpool_give(pf->cfg.pool, &s->buf);
    pf->async_out--;
    pump(pf);
    pthread_cond_broadcast(&pf->done); /* stop waits for async_out to reach 0 */
    pthread_mutex_unlock(&pf->mu);
}

/*
 * On an asynchronous backend, the launches a worker would make, made at once: every
 * launchable item's get started, its completion (async_ended) finishing it as a worker
 * would and pumping again. Called under mu wherever the window, the budget or the held
 * count changes. A get that cannot start ends there, as a failed get.
 */
static void pump(struct trove__prefetch *pf)
{
    const struct trove__prefetch_config *c = &pf->cfg;
    uint64_t share;

    if (!pf->async)
        return;
    while (launchable(pf, &share)) {
        struct slot *s = reserve(pf, share);
        int rc;
        s->pf = pf;
        s->max_len = to_size(share < c->max_object ? share : c->max_object);
        memset(&s->buf, 0, sizeof s->buf);
        trove__bufpool_take(c->pool, s->max_len, &s->buf);
        rc = trove_backend_get_start(c->be, &c->digests[s->item], &s->buf, s->max_len,
                                     async_ended, s);
        if (rc == TROVE_OK) {
            pf->async_out++;
        } else {
            finish(pf, s, s->max_len, rc, &s->buf);
            trove__bufpool_give(c->pool, &s->buf);
        }
    }
}

static void *worker(void *arg)
{
    struct trove__prefetch *pf = arg;
    const struct trove__prefetch_config *c = &pf->cfg;

    pthread_mutex_lock(&pf->mu);
    for (;;) {
        struct trove_bytes buf = {0};
        uint64_t item, share = 0;
        struct slot *s;
        size_t max_len;
        int rc;

        while (!pf->cancelled && !pf->stopping && !launchable(pf, &share))
            pthread_cond_wait(&pf->work, &pf->mu);
        if (pf->cancelled || pf->stopping)
            break;
        s = reserve(pf, share);
        item = s->item;
        pthread_mutex_unlock(&pf->mu);

        max_len = to_size(share < c->max_object ? share : c->max_object);
        /* A recycled buffer no larger than the share: held memory stays within it. */
        trove__bufpool_take(c->pool, max_len, &buf);
        rc = trove_backend_get(c->be, &c->digests[item], &buf, max_len);

        pthread_mutex_lock(&pf->mu);
        finish(pf, s, max_len, rc, &buf);
        trove__bufpool_give(c->pool, &buf); /* empty unless nobody wanted it */
    }
    pthread_mutex_unlock(&pf->mu);
    return NULL;
}

int trove__prefetch_start(const struct trove__prefetch_config *cfg, struct trove__prefetch **out)
{
    struct trove__prefetch *pf;
    unsigned want;
    int rc = TROVE_ERR_NOMEM;

    *out = NULL;
    if (cfg->depth < 1 || cfg->depth > TROVE_STREAM_DEPTH_MAX || cfg->budget == 0 || cfg->n < 2)
        return TROVE_ERR_INVALID;
    pf = trove__calloc(1, sizeof *pf);
    if (!pf)
        return rc;
    pf->cfg = *cfg;
    pf->nslots = (size_t)cfg->depth + 1;
    pf->async = trove_backend_get_async(cfg->be);
    want = pf->async ? 0 : cfg->n - 1 < cfg->depth ? (unsigned)(cfg->n - 1) : cfg->depth;
    pf->slots = trove__calloc(pf->nslots, sizeof *pf->slots);
    pf->threads = trove__calloc(want ? want : 1, sizeof *pf->threads);
    if (!pf->slots || !pf->threads) {
        free(pf->slots);
        free(pf->threads);
        free(pf);
        return rc;
    }
    pf->walker = 0;
    pf->next = 1;
    pf->estimate = cfg->budget / cfg->depth > 0 ? cfg->budget / cfg->depth : 1;
    pthread_mutex_init(&pf->mu, NULL);
    pthread_cond_init(&pf->work, NULL);
    pthread_cond_init(&pf->done, NULL);
    for (; pf->nthreads < want; pf->nthreads++) {
        rc = pthread_create(&pf->threads[pf->nthreads], NULL, worker, pf);
        if (rc != 0) {
            trove__prefetch_stop(pf, NULL);
            return -rc;
        }
    }
    pthread_mutex_lock(&pf->mu);
    pump(pf);
    pthread_mutex_unlock(&pf->mu);
    *out = pf;
    return TROVE_OK;
}

int trove__prefetch_take(struct trove__prefetch *pf, uint64_t item, struct trove_bytes *out)
{
    struct slot *s;
    int rc = 0;

    pthread_mutex_lock(&pf->mu);
    assert(item >= pf->walker);
    pf->walker = item;
    if (pf->next <= item)
        pf->next = item + 1;
    if (pf->blocked && pf->block_item <= item)
        pf->blocked = 0;
    pthread_cond_broadcast(&pf->work); /* the window moved */
    pump(pf);
    s = slot_of(pf, item);
    if (s->state == SLOT_FREE)
        goto out;
    assert(s->item == item);
    while (s->state == SLOT_IN_FLIGHT && !pf->cancelled)
        pthread_cond_wait(&pf->done, &pf->mu);
    if (pf->cancelled) {
        rc = TROVE_ERR_CANCELLED;
        goto out;
    }
    if (s->state == SLOT_DONE) {
        *out = s->data;
        memset(&s->data, 0, sizeof s->data);
        pf->held -= out->len;
        pf->nheld--;
        held_changed(pf);
        pthread_cond_broadcast(&pf->work); /* budget and a download slot freed */
        rc = 1;
    }
    s->state = SLOT_FREE;
    pump(pf);
out:
    pthread_mutex_unlock(&pf->mu);
    return rc;
}

void trove__prefetch_walker_read(struct trove__prefetch *pf, uint64_t len)
{
    pthread_mutex_lock(&pf->mu);
    if (len > pf->cfg.budget)
        pf->off = 1;
    pthread_mutex_unlock(&pf->mu);
}

void trove__prefetch_cancel(struct trove__prefetch *pf)
{
    pthread_mutex_lock(&pf->mu);
    pf->cancelled = 1;
    pthread_cond_broadcast(&pf->work);
    pthread_cond_broadcast(&pf->done);
    pthread_mutex_unlock(&pf->mu);
}

void trove__prefetch_stop(struct trove__prefetch *pf, struct trove_stream_stats *stats)
{
    if (!pf)
        return;
    pthread_mutex_lock(&pf->mu);
    pf->stopping = 1;
    pthread_cond_broadcast(&pf->work);
    pthread_cond_broadcast(&pf->done);
    pthread_mutex_unlock(&pf->mu);
    for (unsigned i = 0; i < pf->nthreads; i++)
        pthread_join(pf->threads[i], NULL);
    pthread_mutex_lock(&pf->mu);
    while (pf->async_out > 0) /* the asynchronous gets under way end on their own */
        pthread_cond_wait(&pf->done, &pf->mu);
    pthread_mutex_unlock(&pf->mu);
    for (size_t i = 0; i < pf->nslots; i++) {
        if (pf->slots[i].state == SLOT_DONE) {
            pf->held -= pf->slots[i].data.len;
            trove__bufpool_give(pf->cfg.pool, &pf->slots[i].data);
        }
    }
    assert(pf->reserved == 0 && pf->held == 0);
    if (stats) {
        stats->share_overflows = pf->share_overflows;
        stats->download_errors = pf->download_errors;
        stats->prefetch_off = pf->off;
        stats->max_in_flight = pf->max_in_flight;
        stats->peak_held_bytes = pf->peak;
        stats->final_estimate = pf->estimate;
    }
    pthread_cond_destroy(&pf->done);
    pthread_cond_destroy(&pf->work);
    pthread_mutex_destroy(&pf->mu);
    free(pf->slots);
    free(pf->threads);
    free(pf);
}
