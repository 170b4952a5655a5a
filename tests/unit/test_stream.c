/*
 * test_stream.c: streaming (walker, prefetcher, sender, background tasks, the buffer pool)
 * over the fault-injecting backend, which test_stream_fault.c tests itself.
 *
 * Every stream test runs over trove_backend_fault_wrap around a real fs backend (NOSYNC) in
 * a mkdtemp directory, with objects whose every byte is a function of (set, item, offset),
 * so the decoder checks what it was handed and the sink checks every batch it sends, in
 * order, against the bytes it must carry. The backend's hook counts the gets of every
 * object and fails chosen ones. What is asserted is counts, order, bytes and bounds, never
 * time: the machine is shared, so latencies only make overlap likely, and each assertion
 * holds however the threads are scheduled. main runs the whole suite 20 times.
 *
 * Covered: options; every item streamed in order with its content, in each send mode, with
 * aliased and owned batches, under a slow sink; the depth cap (stats, downloads held,
 * concurrent gets); the budget as a hard cap (a probe sees every change of the held bytes); a
 * file over the whole budget (prefetching off, still streamed); files over their share
 * (overflows, a grown estimate, never over budget); a missing object that appears late and one
 * that never does; cancellation from the sink, the decoder, another thread during a slow
 * backend, and before a run; a send error and a sink that returns a positive value (nothing
 * sent after, TROVE_ERR_SEND, the code kept); the exclusive end (nothing of item n is asked
 * for); empty slots; prefetching off; and trove_bg (polled side effect, a timed-out wait,
 * release before the task ends).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stream_test.h"
#include "testutil.h"
#include "trove/backend.h"
#include "trove/stream.h"
#include "trove/testing.h"

#include "stream/bufpool.h"

static void sleep_us(uint64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- a decoder and a sink that check everything --------------------------------------- */

struct rec {
    const struct objset *set;
    uint64_t first_slot;
    struct trove_stream *st;
    /* decoder */
    uint32_t parts;      /* batches per object (an empty one: 1) */
    int owned;           /* batches are malloc'd copies, else they alias the object */
    int ignore_errors;   /* go on emitting after emit failed */
    uint64_t cancel_item; /* cancel when decoding this item (UINT64_MAX: never) */
    int decode_fail_item; /* return TROVE_ERR_CORRUPT at this item (-1: never) */
    int reenter;         /* try a second run of the stream from the decoder */
    int reenter_rc;
    uint64_t decoded;    /* the next item expected */
    int bad_decode;
    int emit_failures;   /* emits that returned an error */
    /* sink (the sender's thread, or the walker's when INLINE) */
    uint32_t sleep_us;
    uint64_t fail_at;    /* the send call (1-based) that fails (0: none) ... */
    int fail_code;       /* ... with this */
    uint64_t cancel_at;  /* the send call that cancels (0: none) */
    uint64_t calls, after_fail, cur_item, cur_off, sent_bytes;
    int bad_sink;
    /* item_done (the walker's thread) */
    uint64_t done_next;
    int bad_done;
    atomic_uint_fast64_t done_count; /* for other threads */
};

static void rec_init(struct rec *r, const struct objset *set)
{
    memset(r, 0, sizeof *r);
    r->set = set;
    r->parts = 3;
    r->cancel_item = UINT64_MAX;
    r->decode_fail_item = -1;
    r->cur_item = UINT64_MAX;
    atomic_init(&r->done_count, 0);
}

static int sink_send(void *ctx, const struct trove_stream_batch *b);

static int decode(void *ctx, const struct trove_stream_object *obj,
                  struct trove_stream_emitter *em, struct trove_diag *diag)
{
    struct rec *r = ctx;
    const struct objset *s = r->set;
    uint64_t i = obj->item;
    int empty;

    (void)diag;
    if (i != r->decoded || obj->slot != r->first_slot + i || obj->digest != &s->d[i]) {
        r->bad_decode++;
        return TROVE_ERR_MISMATCH;
    }
    r->decoded++;
    empty = trove_digest_is_zero(&s->d[i]);
    if (empty ? obj->data != NULL || obj->len != 0
              : obj->data == NULL || obj->len != s->sizes[i] ||
                    !matches(s, i, 0, obj->data, obj->len)) {
        r->bad_decode++;
        return TROVE_ERR_MISMATCH;
    }
    if (i == r->cancel_item)
        trove_stream_cancel(r->st);
    if ((int)i == r->decode_fail_item)
        return TROVE_ERR_CORRUPT;
    if (r->reenter && i == 0) {
        struct trove_stream_decoder dec = {decode, r};
        r->reenter_rc = trove_stream_run(r->st, s->d, 0, 1, &dec, NULL, NULL, NULL);
        if (r->reenter_rc == TROVE_ERR_INVALID) {
            struct trove_stream_sink sink = {sink_send, NULL, r};
            r->reenter_rc = trove_stream_run(r->st, s->d, 0, 1, &dec, &sink, NULL, NULL);
        }
    }
    for (uint32_t p = 0; p < (empty ? 1 : r->parts); p++) {
        size_t a = obj->len * p / r->parts, b = obj->len * (p + 1) / r->parts;
        struct trove_stream_batch batch = {0};
        int rc;
        batch.len = b - a;
        batch.events = 1;
        batch.item = 12345; /* emit fills it in */
        if (empty) {
            batch.data = NULL;
        } else if (r->owned) {
            batch.owned = malloc(batch.len + 1);
            memcpy(batch.owned, obj->data + a, batch.len);
            batch.data = batch.owned;
        } else {
            batch.data = obj->data + a;
        }
        rc = trove_stream_emit(em, &batch);
        if (rc != TROVE_OK) {
            r->emit_failures++;
            if (!r->ignore_errors)
                return rc;
        }
    }
    return TROVE_OK;
}

static int sink_send(void *ctx, const struct trove_stream_batch *b)
{
    struct rec *r = ctx;
    const struct objset *s = r->set;

    r->calls++;
    if (r->fail_at && r->calls > r->fail_at)
        r->after_fail++;
    if (r->sleep_us)
        sleep_us(r->sleep_us);
    if (r->fail_at && r->calls == r->fail_at)
        return r->fail_code;
    if (b->item != r->cur_item) {
        /* The first batch of the next item: the previous item was complete. */
        if (r->cur_item == UINT64_MAX ? b->item != 0
                                      : b->item != r->cur_item + 1 ||
                                            r->cur_off != s->sizes[r->cur_item])
            r->bad_sink++;
        r->cur_item = b->item;
        r->cur_off = 0;
    }
    if (b->item >= s->n || (b->len > 0 && !matches(s, b->item, r->cur_off, b->data, b->len)) ||
        (b->len == 0 && trove_digest_is_zero(&s->d[b->item]) && b->data != NULL)) {
        r->bad_sink++;
    } else {
        r->cur_off += b->len;
        r->sent_bytes += b->len;
    }
    if (r->cancel_at && r->calls == r->cancel_at)
        trove_stream_cancel(r->st);
    return TROVE_OK;
}

static void item_done(void *ctx, uint64_t item)
{
    struct rec *r = ctx;
    /* Drained: every batch of the item was sent (the sender's writes are visible). */
    if (item != r->done_next || r->cur_item != item || r->cur_off != r->set->sizes[item])
        r->bad_done++;
    r->done_next++;
    atomic_fetch_add(&r->done_count, 1);
}

/* The probe: held bytes never over the budget. Called under the prefetcher's lock. */
struct probe {
    uint64_t calls, max_held;
    int over;
};

static void probe_fn(void *ctx, uint64_t held, uint64_t budget)
{
    struct probe *p = ctx;
    p->calls++;
    if (held > p->max_held)
        p->max_held = held;
    if (held > budget)
        p->over++;
}

static void stream_opts(struct trove_stream_options *o, uint32_t depth, uint64_t budget,
                        int mode)
{
    trove_stream_options_default(o);
    o->depth = depth;
    o->budget = budget;
    o->send_mode = mode;
    o->send_queue = 4;
    o->backoff_ms = 1;
    o->backoff_max_ms = 4;
}

/* One run of set over be; returns its result. */
static int run(struct trove_backend *be, const struct trove_stream_options *o,
               const struct objset *set, uint64_t n, struct rec *r,
               struct trove_stream_stats *stats, struct trove_diag *diag)
{
    struct trove_stream *st = NULL;
    struct trove_stream_decoder dec = {decode, r};
    struct trove_stream_sink sink = {sink_send, item_done, r};
    int rc;

    CHECK_EQ_INT(trove_stream_new(be, o, &st), TROVE_OK);
    if (!st)
        return TROVE_ERR_NOMEM;
    r->st = st;
    rc = trove_stream_run(st, set->d, r->first_slot, n, &dec, &sink, stats, diag);
    trove_stream_free(st);
    r->st = NULL;
    return rc;
}

/* A whole successful run: every item, every byte, in order. */
static void check_complete(const struct objset *set, uint64_t n, const struct rec *r,
                           const struct trove_stream_stats *s)
{
    uint64_t bytes = 0, full = 0;
    for (uint64_t i = 0; i < n; i++) {
        bytes += set->sizes[i];
        full += !trove_digest_is_zero(&set->d[i]);
    }
    CHECK_EQ_INT(r->bad_decode, 0);
    CHECK_EQ_INT(r->bad_sink, 0);
    CHECK_EQ_INT(r->bad_done, 0);
    CHECK_EQ_INT(r->decoded, n);
    CHECK_EQ_INT(r->done_next, n);
    CHECK_EQ_INT(s->items, n);
    CHECK_EQ_INT(s->bytes_sent, bytes);
    CHECK_EQ_INT(r->sent_bytes, bytes);
    CHECK_EQ_INT(s->batches, r->calls);
    CHECK_EQ_INT(s->events, r->calls);
    CHECK_EQ_INT(s->prefetched + s->walker_reads, full);
    CHECK_EQ_INT(s->send_error, 0);
    CHECK(n == 0 || r->cur_item == n - 1);
}

/* ---- options --------------------------------------------------------------------------- */

static void test_options(void)
{
    struct trove_stream_options o;
    struct trove_stream *st = (struct trove_stream *)&o;
    struct trove_stream_batch b = {0};

    trove_stream_options_default(&o);
    CHECK_EQ_INT(o.depth, TROVE_STREAM_DEPTH_DEFAULT);
    CHECK(o.budget == TROVE_STREAM_BUDGET_DEFAULT);
    CHECK(o.max_object == (uint64_t)1 << 30);
    CHECK_EQ_INT(o.retries, 4);
    CHECK_EQ_INT(o.backoff_ms, 2);
    CHECK_EQ_INT(o.backoff_max_ms, 100);
    CHECK_EQ_INT(o.send_mode, TROVE_STREAM_SEND_RENDEZVOUS);
    CHECK_EQ_INT(o.send_queue, 8);
    CHECK(o.probe == NULL);

    CHECK_EQ_INT(trove_stream_new(NULL, &o, &st), TROVE_ERR_INVALID);
    CHECK(st == NULL);
    CHECK_EQ_INT(trove_stream_new(fs, &o, NULL), TROVE_ERR_INVALID);
    o.send_mode = 3;
    CHECK_EQ_INT(trove_stream_new(fs, &o, &st), TROVE_ERR_INVALID);
    o.send_mode = -1;
    CHECK_EQ_INT(trove_stream_new(fs, &o, &st), TROVE_ERR_INVALID);
    o.send_mode = TROVE_STREAM_SEND_BUFFERED;
    o.send_queue = 0; /* the default queue */
    CHECK_EQ_INT(trove_stream_new(fs, &o, &st), TROVE_OK);
    trove_stream_free(st);
    o.send_queue = TROVE_STREAM_SEND_QUEUE_MAX + 1;
    CHECK_EQ_INT(trove_stream_new(fs, &o, &st), TROVE_ERR_INVALID);
    o.send_queue = TROVE_STREAM_SEND_QUEUE_MAX;
    CHECK_EQ_INT(trove_stream_new(fs, &o, &st), TROVE_OK);
    trove_stream_free(st);
    o.send_mode = TROVE_STREAM_SEND_RENDEZVOUS;
    o.send_queue = 0; /* only BUFFERED reads it */
    CHECK_EQ_INT(trove_stream_new(fs, &o, &st), TROVE_OK);
    {
        struct trove_stream_decoder dec = {decode, NULL};
        struct trove_stream_sink sink = {sink_send, NULL, NULL};
        struct trove_stream_stats s;
        struct trove_digest d = {{1}};
        memset(&s, 0xff, sizeof s);
        CHECK_EQ_INT(trove_stream_run(st, &d, 0, 1, NULL, &sink, &s, NULL), TROVE_ERR_INVALID);
        CHECK_EQ_INT(s.items, 0); /* stats filled in either way */
        CHECK_EQ_INT(trove_stream_run(st, &d, 0, 1, &dec, NULL, NULL, NULL), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_stream_run(st, NULL, 0, 1, &dec, &sink, NULL, NULL),
                     TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_stream_run(NULL, &d, 0, 1, &dec, &sink, NULL, NULL),
                     TROVE_ERR_INVALID);
        /* n = 0: nothing to do, nothing decoded. */
        CHECK_EQ_INT(trove_stream_run(st, NULL, 0, 0, &dec, &sink, &s, NULL), TROVE_OK);
        CHECK_EQ_INT(s.items, 0);
        CHECK_EQ_INT(s.depth, TROVE_STREAM_DEPTH_DEFAULT);
    }
    trove_stream_free(st);
    trove_stream_free(NULL);
    trove_stream_cancel(NULL);
    /* emit outside its contract: the owned block is still taken over (ASan: no leak). */
    CHECK_EQ_INT(trove_stream_emit(NULL, NULL), TROVE_ERR_INVALID);
    b.owned = malloc(8);
    b.data = b.owned;
    b.len = 8;
    CHECK_EQ_INT(trove_stream_emit(NULL, &b), TROVE_ERR_INVALID);
    trove_stream_options_default(NULL);
}

/* ---- streaming --------------------------------------------------------------------------- */

/* Every item in order with its content: each send mode, aliased and owned batches, with a
 * prefetcher that has to work (random sizes, a latency). */
static void test_order(int rep)
{
    static const int modes[3] = {TROVE_STREAM_SEND_INLINE, TROVE_STREAM_SEND_RENDEZVOUS,
                                 TROVE_STREAM_SEND_BUFFERED};
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_backend *be;
    size_t sizes[48];
    uint64_t seed = 1000 + (uint64_t)rep;
    struct rec r;

    uniform_sizes(sizes, 48, 8, 6000, &seed);
    make_set(set, 300 + (uint32_t)rep, 48, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, rep % 3 == 0 ? 0 : 300);
    for (int m = 0; be && m < 3; m++) {
        for (int owned = 0; owned < 2; owned++) {
            rec_init(&r, set);
            r.owned = owned;
            r.parts = 1 + (uint32_t)((rep + m) % 4);
            r.first_slot = 1000 * (uint64_t)m;
            stream_opts(&o, 4, 32 << 10, modes[m]);
            CHECK_EQ_INT(run(be, &o, set, 48, &r, &s, NULL), TROVE_OK);
            check_complete(set, 48, &r, &s);
            CHECK_EQ_INT(s.depth, 4);
            CHECK(s.max_in_flight <= 4);
            CHECK(s.peak_held_bytes <= 32 << 10);
            CHECK_EQ_INT(s.retries, 0);
            CHECK_EQ_INT(s.prefetch_off, 0);
        }
    }
    CHECK_EQ_INT(atomic_load(&h->strangers), 0);
    trove_backend_close(be);
    free(h);
    free(set);
}

/* Batches keep their order under a slow sink, buffered and unbuffered. */
static void test_slow_sink(int rep)
{
    static const int modes[2] = {TROVE_STREAM_SEND_RENDEZVOUS, TROVE_STREAM_SEND_BUFFERED};
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_backend *be;
    size_t sizes[16];
    uint64_t seed = 2000 + (uint64_t)rep;
    struct rec r;

    uniform_sizes(sizes, 16, 64, 4096, &seed);
    make_set(set, 400 + (uint32_t)rep, 16, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, 0);
    for (int m = 0; be && m < 2; m++) {
        rec_init(&r, set);
        r.parts = 5;
        r.owned = rep & 1;
        r.sleep_us = 150;
        stream_opts(&o, 4, 1 << 20, modes[m]);
        o.send_queue = 1 + (uint32_t)(rep % 6);
        CHECK_EQ_INT(run(be, &o, set, 16, &r, &s, NULL), TROVE_OK);
        check_complete(set, 16, &r, &s);
        CHECK_EQ_INT(s.batches, 16 * 5);
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

/* depth 1000 is capped: stats, downloads held, gets under way at once (the workers and
 * the walker). */
static void test_depth_cap(int rep)
{
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_fault_stats fst;
    struct trove_backend *be;
    size_t sizes[80];
    uint64_t seed = 3000 + (uint64_t)rep;
    struct probe p = {0};
    struct rec r;

    uniform_sizes(sizes, 80, 512, 1024, &seed);
    make_set(set, 500 + (uint32_t)rep, 80, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, 1000);
    if (be) {
        rec_init(&r, set);
        stream_opts(&o, 1000, 4 << 20, TROVE_STREAM_SEND_BUFFERED);
        o.probe = probe_fn;
        o.probe_ctx = &p;
        CHECK_EQ_INT(run(be, &o, set, 80, &r, &s, NULL), TROVE_OK);
        check_complete(set, 80, &r, &s);
        CHECK_EQ_INT(s.depth, TROVE_STREAM_DEPTH_MAX);
        CHECK(s.max_in_flight >= 1 && s.max_in_flight <= TROVE_STREAM_DEPTH_MAX);
        CHECK_EQ_INT(trove_backend_fault_stats(be, &fst), TROVE_OK);
        CHECK(fst.max_concurrent <= TROVE_STREAM_DEPTH_MAX + 1);
        CHECK_EQ_INT(p.over, 0);
        /* Every object fetched exactly once: nothing wasted. */
        for (size_t i = 0; i < 80; i++)
            CHECK_EQ_INT(atomic_load(&h->gets[i]), 1);
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

/* The budget bounds the run-ahead: held bytes (reservations and finished downloads) never
 * pass it, whatever the sizes. */
static void test_budget(int rep)
{
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_fault_stats fst;
    struct trove_backend *be;
    size_t sizes[64];
    uint64_t seed = 4000 + (uint64_t)rep, budget = 24 << 10;
    struct probe p = {0};
    struct rec r;

    uniform_sizes(sizes, 64, 1024, 7000, &seed);
    make_set(set, 600 + (uint32_t)rep, 64, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, 500);
    if (be) {
        rec_init(&r, set);
        r.sleep_us = 100; /* a slow sink, so that downloads pile up against the budget */
        stream_opts(&o, 8, budget, TROVE_STREAM_SEND_RENDEZVOUS);
        o.probe = probe_fn;
        o.probe_ctx = &p;
        CHECK_EQ_INT(run(be, &o, set, 64, &r, &s, NULL), TROVE_OK);
        check_complete(set, 64, &r, &s);
        CHECK(p.calls > 0);
        CHECK_EQ_INT(p.over, 0);
        CHECK(p.max_held <= budget);
        CHECK(s.peak_held_bytes == p.max_held);
        CHECK(s.max_in_flight <= 8);
        CHECK_EQ_INT(trove_backend_fault_stats(be, &fst), TROVE_OK);
        CHECK(fst.max_concurrent <= 9);
        CHECK(s.final_estimate >= 1024 && s.final_estimate <= budget);
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

/* A file over the whole budget turns prefetching off, and the walker still streams it. With
 * depth 1 the prefetcher's share is the whole budget, so it may be the prefetcher that
 * finds out; with depth 4 it is the walker. */
static void test_over_budget(int rep)
{
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_backend *be;
    size_t sizes[24];
    uint64_t budget = 16 << 10;
    struct probe p = {0};
    struct rec r;

    for (size_t i = 0; i < 24; i++)
        sizes[i] = 1000 + i;
    sizes[10] = 40000; /* over the budget */
    make_set(set, 700 + (uint32_t)rep, 24, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, 300);
    for (uint32_t depth = 1; be && depth <= 4; depth += 3) {
        rec_init(&r, set);
        r.owned = rep & 1;
        stream_opts(&o, depth, budget, TROVE_STREAM_SEND_RENDEZVOUS);
        o.probe = probe_fn;
        o.probe_ctx = &p;
        CHECK_EQ_INT(run(be, &o, set, 24, &r, &s, NULL), TROVE_OK);
        check_complete(set, 24, &r, &s);
        CHECK_EQ_INT(s.prefetch_off, 1);
        CHECK(s.walker_reads >= 1);
        CHECK_EQ_INT(p.over, 0);
        CHECK(s.peak_held_bytes <= budget);
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

/* Files over their share: sizes jump from small to large, so downloads launched with the
 * small estimate's share overflow, go to the walker and double the estimate, which cuts the
 * concurrency; the held bytes never pass the budget. */
static void test_share_overflow(int rep)
{
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_backend *be;
    size_t sizes[40];
    uint64_t budget = 64 << 10;
    struct probe p = {0};
    struct rec r;

    for (size_t i = 0; i < 40; i++)
        sizes[i] = i < 8 ? 1024 : 20000;
    make_set(set, 800 + (uint32_t)rep, 40, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, 300);
    if (be) {
        rec_init(&r, set);
        r.sleep_us = 200; /* the walker lags, so the workers run ahead */
        stream_opts(&o, 4, budget, TROVE_STREAM_SEND_RENDEZVOUS);
        o.probe = probe_fn;
        o.probe_ctx = &p;
        CHECK_EQ_INT(run(be, &o, set, 40, &r, &s, NULL), TROVE_OK);
        check_complete(set, 40, &r, &s);
        CHECK(s.share_overflows >= 1);
        CHECK(s.final_estimate > 1024);
        CHECK_EQ_INT(s.prefetch_off, 0); /* 20000 fits the budget */
        CHECK_EQ_INT(p.over, 0);
        CHECK(p.max_held <= budget);
        CHECK(s.walker_reads >= s.share_overflows); /* each one went to the walker */
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

/* A missing object is left to the walker, which retries until it appears; one that never
 * appears is TROVE_ERR_NOTFOUND after exactly `retries` retries, with the items before it
 * sent. */
static void test_missing(int rep)
{
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_diag diag = {0};
    struct trove_backend *be;
    size_t sizes[20];
    uint64_t seed = 5000 + (uint64_t)rep, gets5;
    struct rec r;

    uniform_sizes(sizes, 20, 100, 3000, &seed);
    make_set(set, 900 + (uint32_t)rep, 20, sizes, NULL);
    hook_init(h, set);
    h->missing = 5;
    h->missing_for = 3;
    be = fault_over(h, 200);
    if (!be)
        goto out;
    rec_init(&r, set);
    stream_opts(&o, 4, 1 << 20, rep & 1 ? TROVE_STREAM_SEND_BUFFERED
                                        : TROVE_STREAM_SEND_RENDEZVOUS);
    o.retries = 4;
    CHECK_EQ_INT(run(be, &o, set, 20, &r, &s, NULL), TROVE_OK);
    check_complete(set, 20, &r, &s);
    /* Three misses and the get that found it; the prefetcher may have had the first. */
    CHECK(s.retries == 2 || s.retries == 3);
    gets5 = atomic_load(&h->gets[5]);
    CHECK_EQ_INT(gets5, 4);
    trove_backend_close(be);

    /* Never there. */
    hook_init(h, set);
    h->missing = 5;
    h->missing_for = UINT64_MAX;
    be = fault_over(h, 200);
    if (!be)
        goto out;
    rec_init(&r, set);
    o.retries = 3;
    CHECK_EQ_INT(run(be, &o, set, 20, &r, &s, &diag), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(diag.code, TROVE_ERR_NOTFOUND);
    CHECK(strstr(diag.msg, "item 5") != NULL);
    CHECK_EQ_INT(s.retries, 3);
    CHECK_EQ_INT(s.items, 5);
    CHECK_EQ_INT(r.done_next, 5);
    CHECK_EQ_INT(r.decoded, 5);
    CHECK_EQ_INT(r.bad_sink + r.bad_decode + r.bad_done, 0);
    gets5 = atomic_load(&h->gets[5]);
    CHECK(gets5 == 4 || gets5 == 5); /* the walker's 1 + 3, and perhaps one download */
    /* The walker never passed item 5: nothing past its window was asked for. */
    for (size_t i = 5 + 4 + 1; i < 20; i++)
        CHECK_EQ_INT(atomic_load(&h->gets[i]), 0);
    trove_backend_close(be);
out:
    free(h);
    free(set);
}

/* Cancel from the sink after k batches, and from the decoder: TROVE_ERR_CANCELLED, nothing
 * sent after, every thread ended (the run returned) and every byte freed (ASan). A cancel
 * before a run stops that run; the stream runs again afterwards. */
static void test_cancel_inside(int rep)
{
    static const int modes[3] = {TROVE_STREAM_SEND_INLINE, TROVE_STREAM_SEND_RENDEZVOUS,
                                 TROVE_STREAM_SEND_BUFFERED};
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_diag diag = {0};
    struct trove_backend *be;
    size_t sizes[30];
    uint64_t seed = 6000 + (uint64_t)rep;
    struct rec r;

    uniform_sizes(sizes, 30, 100, 5000, &seed);
    make_set(set, 1000 + (uint32_t)rep, 30, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, 200);
    for (int m = 0; be && m < 3; m++) {
        struct trove_stream *st = NULL;
        struct trove_stream_decoder dec = {decode, &r};
        struct trove_stream_sink sink = {sink_send, item_done, &r};

        /* From the sink, at its 10th batch (which is sent: it returns 0). */
        rec_init(&r, set);
        r.owned = 1; /* queued owned batches are dropped and freed */
        r.cancel_at = 10;
        stream_opts(&o, 4, 1 << 20, modes[m]);
        CHECK_EQ_INT(run(be, &o, set, 30, &r, &s, &diag), TROVE_ERR_CANCELLED);
        CHECK_EQ_INT(diag.code, TROVE_ERR_CANCELLED);
        CHECK_EQ_INT(r.calls, 10);
        CHECK_EQ_INT(s.batches, 10);
        CHECK_EQ_INT(s.items, 3); /* batch 10 is item 3's first */
        CHECK_EQ_INT(r.bad_sink + r.bad_decode + r.bad_done, 0);

        /* From the decoder, at item 7: none of its batches goes out. */
        rec_init(&r, set);
        r.cancel_item = 7;
        r.ignore_errors = 1;
        CHECK_EQ_INT(run(be, &o, set, 30, &r, &s, NULL), TROVE_ERR_CANCELLED);
        CHECK_EQ_INT(s.items, 7);
        CHECK_EQ_INT(r.calls, 7 * 3);
        CHECK_EQ_INT(r.emit_failures, 3);
        CHECK_EQ_INT(r.decoded, 8);

        /* Before a run: that run is cancelled, the next one is not. */
        rec_init(&r, set);
        CHECK_EQ_INT(trove_stream_new(be, &o, &st), TROVE_OK);
        if (!st)
            continue;
        r.st = st;
        trove_stream_cancel(st);
        CHECK_EQ_INT(trove_stream_run(st, set->d, 0, 30, &dec, &sink, &s, NULL),
                     TROVE_ERR_CANCELLED);
        CHECK_EQ_INT(r.calls, 0);
        CHECK_EQ_INT(r.decoded, 0);
        CHECK_EQ_INT(trove_stream_run(st, set->d, 0, 30, &dec, &sink, &s, NULL), TROVE_OK);
        check_complete(set, 30, &r, &s);
        /* And after a cancelled run, the stream runs again. */
        rec_init(&r, set);
        r.st = st;
        r.cancel_at = 5;
        CHECK_EQ_INT(trove_stream_run(st, set->d, 0, 30, &dec, &sink, &s, NULL),
                     TROVE_ERR_CANCELLED);
        rec_init(&r, set);
        r.st = st;
        CHECK_EQ_INT(trove_stream_run(st, set->d, 0, 30, &dec, &sink, &s, NULL), TROVE_OK);
        check_complete(set, 30, &r, &s);
        trove_stream_free(st);
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

/* Cancel from another thread while the backend is slow: once a few items are done. */
struct canceller {
    struct trove_stream *st;
    struct rec *r;
    atomic_int run_over;
};

static void *cancel_main(void *arg)
{
    struct canceller *c = arg;
    while (atomic_load(&c->r->done_count) < 3 && !atomic_load(&c->run_over))
        sleep_us(200);
    trove_stream_cancel(c->st);
    return NULL;
}

static void test_cancel_thread(int rep)
{
    static const int modes[3] = {TROVE_STREAM_SEND_INLINE, TROVE_STREAM_SEND_RENDEZVOUS,
                                 TROVE_STREAM_SEND_BUFFERED};
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_backend *be;
    size_t sizes[1000];
    uint64_t seed = 7000 + (uint64_t)rep;
    struct rec r;

    uniform_sizes(sizes, 1000, 64, 2048, &seed);
    make_set(set, 1100 + (uint32_t)rep, 1000, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, 3000);
    if (be) {
        struct trove_stream *st = NULL;
        struct trove_stream_decoder dec = {decode, &r};
        struct trove_stream_sink sink = {sink_send, item_done, &r};
        struct canceller c;
        pthread_t t;

        rec_init(&r, set);
        r.owned = rep & 1;
        stream_opts(&o, 8, 1 << 20, modes[rep % 3]);
        o.retries = 1000; /* a cancel must also end a backoff */
        CHECK_EQ_INT(trove_stream_new(be, &o, &st), TROVE_OK);
        r.st = st;
        c.st = st;
        c.r = &r;
        atomic_init(&c.run_over, 0);
        if (st && pthread_create(&t, NULL, cancel_main, &c) == 0) {
            CHECK_EQ_INT(trove_stream_run(st, set->d, 0, 1000, &dec, &sink, &s, NULL),
                         TROVE_ERR_CANCELLED);
            atomic_store(&c.run_over, 1);
            pthread_join(t, NULL);
            CHECK(s.items >= 3 && s.items < 1000);
            CHECK_EQ_INT(r.bad_sink + r.bad_decode + r.bad_done, 0);
            CHECK(s.max_in_flight <= 8);
        }
        trove_stream_free(st);
        trove_backend_close(be);

        /* And during a backoff: the object never appears, retries without end. */
        hook_init(h, set);
        h->missing = 4;
        h->missing_for = UINT64_MAX;
        be = fault_over(h, 0);
        rec_init(&r, set);
        o.backoff_ms = 50;
        o.backoff_max_ms = 1000;
        st = NULL;
        CHECK_EQ_INT(trove_stream_new(be, &o, &st), TROVE_OK);
        r.st = st;
        c.st = st;
        atomic_init(&c.run_over, 0);
        if (st && pthread_create(&t, NULL, cancel_main, &c) == 0) {
            CHECK_EQ_INT(trove_stream_run(st, set->d, 0, 1000, &dec, &sink, &s, NULL),
                         TROVE_ERR_CANCELLED);
            atomic_store(&c.run_over, 1);
            pthread_join(t, NULL);
            CHECK(s.items == 3 || s.items == 4);
            CHECK(s.retries < 1000);
        }
        trove_stream_free(st);
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

/* A send error stops the item: nothing is sent after it, the run returns TROVE_ERR_SEND
 * and keeps the sink's code; a sink returning a positive value (a fault in the sink) is a
 * send error like any other. A decoder that ignores emit's errors changes nothing. */
static void test_send_error(int rep)
{
    static const int modes[3] = {TROVE_STREAM_SEND_INLINE, TROVE_STREAM_SEND_RENDEZVOUS,
                                 TROVE_STREAM_SEND_BUFFERED};
    static const int codes[3] = {-EIO, 7, TROVE_ERR_CANCELLED};
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_diag diag;
    struct trove_backend *be;
    size_t sizes[20];
    uint64_t seed = 8000 + (uint64_t)rep;
    struct rec r;

    uniform_sizes(sizes, 20, 100, 5000, &seed);
    make_set(set, 1200 + (uint32_t)rep, 20, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, 100);
    for (int m = 0; be && m < 3; m++) {
        for (int c = 0; c < 3; c++) {
            rec_init(&r, set);
            r.fail_at = 8;
            r.fail_code = codes[c];
            r.owned = (c + rep) & 1;
            r.ignore_errors = c == 1;
            stream_opts(&o, 4, 1 << 20, modes[m]);
            memset(&diag, 0, sizeof diag);
            CHECK_EQ_INT(run(be, &o, set, 20, &r, &s, &diag), TROVE_ERR_SEND);
            CHECK_EQ_INT(s.send_error, codes[c]);
            CHECK_EQ_INT(diag.code, TROVE_ERR_SEND);
            CHECK_EQ_INT(r.calls, 8);
            CHECK_EQ_INT(r.after_fail, 0);
            CHECK_EQ_INT(s.batches, 7);
            CHECK_EQ_INT(s.items, 2); /* item 2 holds batches 7..9 */
            CHECK_EQ_INT(r.bad_sink + r.bad_decode + r.bad_done, 0);
            if (codes[c] > 0)
                CHECK(strstr(diag.msg, "fault in the sink") != NULL);
        }
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

/* A decoder's error stops the run and is returned. */
static void test_decoder_error(int rep)
{
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_diag diag = {0};
    struct trove_backend *be;
    size_t sizes[12];
    uint64_t seed = 8500 + (uint64_t)rep;
    struct rec r;

    uniform_sizes(sizes, 12, 100, 3000, &seed);
    make_set(set, 1250 + (uint32_t)rep, 12, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, 100);
    if (be) {
        rec_init(&r, set);
        r.decode_fail_item = 4;
        stream_opts(&o, 4, 1 << 20, TROVE_STREAM_SEND_BUFFERED);
        CHECK_EQ_INT(run(be, &o, set, 12, &r, &s, &diag), TROVE_ERR_CORRUPT);
        CHECK_EQ_INT(diag.code, TROVE_ERR_CORRUPT);
        CHECK_EQ_INT(s.items, 4);
        CHECK_EQ_INT(r.calls, 4 * 3);

        /* One run at a time: a second one from inside the first is refused. */
        rec_init(&r, set);
        r.reenter = 1;
        CHECK_EQ_INT(run(be, &o, set, 12, &r, &s, NULL), TROVE_OK);
        check_complete(set, 12, &r, &s);
        CHECK_EQ_INT(r.reenter_rc, TROVE_ERR_INVALID);
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

/* The exclusive end: n items are items 0..n-1, and nothing of item n or later is asked of
 * the backend, even with a deep prefetcher. */
static void test_exclusive_end(int rep)
{
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_backend *be;
    size_t sizes[16];
    uint64_t seed = 9000 + (uint64_t)rep, n = 1 + (uint64_t)rep % 12;
    struct rec r;

    uniform_sizes(sizes, 16, 100, 2000, &seed);
    make_set(set, 1300 + (uint32_t)rep, 16, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, 200);
    if (be) {
        rec_init(&r, set);
        r.first_slot = 77;
        stream_opts(&o, 8, 1 << 20, TROVE_STREAM_SEND_RENDEZVOUS);
        CHECK_EQ_INT(run(be, &o, set, n, &r, &s, NULL), TROVE_OK);
        check_complete(set, n, &r, &s);
        for (uint64_t i = 0; i < 16; i++)
            CHECK_EQ_INT(atomic_load(&h->gets[i]), i < n ? 1 : 0);
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

/* Empty slots: handed to the decoder with no data and never read. */
static void test_empty_slots(int rep)
{
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_fault_stats fst;
    struct trove_backend *be;
    size_t sizes[24];
    uint8_t empty[24] = {0};
    uint64_t seed = 9500 + (uint64_t)rep;
    struct rec r;

    uniform_sizes(sizes, 24, 100, 2000, &seed);
    empty[0] = empty[3] = empty[4] = empty[5] = empty[6] = empty[7] = empty[13] = empty[23] = 1;
    make_set(set, 1400 + (uint32_t)rep, 24, sizes, empty);
    hook_init(h, set);
    be = fault_over(h, 100);
    for (uint32_t depth = 0; be && depth <= 4; depth += 2) {
        rec_init(&r, set);
        stream_opts(&o, depth ? depth : TROVE_STREAM_NO_PREFETCH, 1 << 20,
                    TROVE_STREAM_SEND_BUFFERED);
        CHECK_EQ_INT(run(be, &o, set, 24, &r, &s, NULL), TROVE_OK);
        check_complete(set, 24, &r, &s);
        CHECK_EQ_INT(s.prefetched + s.walker_reads, 16);
    }
    if (be) {
        CHECK_EQ_INT(trove_backend_fault_stats(be, &fst), TROVE_OK);
        CHECK_EQ_INT(fst.gets, 3 * 16);
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

/* Prefetching off (depth TROVE_STREAM_NO_PREFETCH, whatever the budget): the walker reads
 * every item itself, one get at a time. */
static void test_prefetch_off(int rep)
{
    struct objset *set = malloc(sizeof *set);
    struct hook *h = malloc(sizeof *h);
    struct trove_stream_options o;
    struct trove_stream_stats s;
    struct trove_fault_stats fst;
    struct trove_backend *be;
    size_t sizes[20];
    uint64_t seed = 9700 + (uint64_t)rep;
    struct probe p = {0};
    struct rec r;

    uniform_sizes(sizes, 20, 100, 2000, &seed);
    make_set(set, 1500 + (uint32_t)rep, 20, sizes, NULL);
    for (int k = 0; k < 2; k++) {
        hook_init(h, set);
        be = fault_over(h, 200);
        if (!be)
            break;
        rec_init(&r, set);
        stream_opts(&o, TROVE_STREAM_NO_PREFETCH, k == 0 ? 1 << 20 : 0,
                    TROVE_STREAM_SEND_RENDEZVOUS);
        o.probe = probe_fn;
        o.probe_ctx = &p;
        CHECK_EQ_INT(run(be, &o, set, 20, &r, &s, NULL), TROVE_OK);
        check_complete(set, 20, &r, &s);
        CHECK_EQ_INT(s.depth, 0);
        CHECK_EQ_INT(s.prefetched, 0);
        CHECK_EQ_INT(s.walker_reads, 20);
        CHECK_EQ_INT(s.max_in_flight, 0);
        CHECK_EQ_INT(s.peak_held_bytes, 0);
        CHECK_EQ_INT(p.calls, 0);
        CHECK_EQ_INT(trove_backend_fault_stats(be, &fst), TROVE_OK);
        CHECK_EQ_INT(fst.max_concurrent, 1);
        CHECK_EQ_INT(fst.gets, 20);
        trove_backend_close(be);
    }
    /* A zeroed struct is every default: prefetching at the default depth. */
    hook_init(h, set);
    if ((be = fault_over(h, 200)) != NULL) {
        rec_init(&r, set);
        memset(&o, 0, sizeof o);
        CHECK_EQ_INT(run(be, &o, set, 20, &r, &s, NULL), TROVE_OK);
        check_complete(set, 20, &r, &s);
        CHECK_EQ_INT(s.depth, TROVE_STREAM_DEPTH_DEFAULT);
        CHECK(s.prefetched > 0);
        trove_backend_close(be);
    }
    free(h);
    free(set);
}

/* ---- background tasks ------------------------------------------------------------------- */

struct task {
    atomic_int gate;     /* the task waits for it to open */
    atomic_int effect;   /* its side effect */
    atomic_int cleaned;  /* its cleanup ran */
    int result;
};

static int task_fn(void *ctx)
{
    struct task *t = ctx;
    while (!atomic_load(&t->gate))
        sleep_us(200);
    atomic_store(&t->effect, 1);
    return t->result;
}

static void task_cleanup(void *ctx)
{
    struct task *t = ctx;
    atomic_store(&t->cleaned, 1);
}

/* Poll for flag (up to about 20 s: the machine may be slow, but the task is not blocked). */
static int poll_for(atomic_int *flag)
{
    for (int i = 0; i < 100000 && !atomic_load(flag); i++)
        sleep_us(200);
    return atomic_load(flag);
}

static void task_init(struct task *t, int gate, int result)
{
    atomic_init(&t->gate, gate);
    atomic_init(&t->effect, 0);
    atomic_init(&t->cleaned, 0);
    t->result = result;
}

static void test_bg(void)
{
    static struct task a, b, c, d;
    struct trove_bg *bg = NULL;

    /* Fire and forget: the side effect is polled for, not expected on return. */
    task_init(&a, 1, 42);
    CHECK_EQ_INT(trove_bg_start(task_fn, task_cleanup, &a, &bg), TROVE_OK);
    CHECK(poll_for(&a.effect));
    CHECK(poll_for(&a.cleaned));
    CHECK_EQ_INT(trove_bg_wait(bg, TROVE_BG_TIMEOUT_MS_DEFAULT), 42);
    CHECK_EQ_INT(trove_bg_wait(bg, 0), 42); /* again: the same result */
    trove_bg_release(bg);

    /* A task that blocks: the wait times out, and succeeds once it is let go. */
    task_init(&b, 0, -EIO);
    bg = NULL;
    CHECK_EQ_INT(trove_bg_start(task_fn, NULL, &b, &bg), TROVE_OK);
    CHECK_EQ_INT(trove_bg_wait(bg, 20), TROVE_ERR_TIMEOUT);
    CHECK_EQ_INT(trove_bg_wait(bg, 0), TROVE_ERR_TIMEOUT);
    CHECK_EQ_INT(atomic_load(&b.effect), 0);
    atomic_store(&b.gate, 1);
    CHECK_EQ_INT(trove_bg_wait(bg, 60000), -EIO);
    CHECK_EQ_INT(atomic_load(&b.effect), 1);
    trove_bg_release(bg);

    /* Released before it finishes: it runs on, cleans up, and frees itself (ASan). */
    task_init(&c, 0, 0);
    bg = NULL;
    CHECK_EQ_INT(trove_bg_start(task_fn, task_cleanup, &c, &bg), TROVE_OK);
    trove_bg_release(bg);
    atomic_store(&c.gate, 1);
    CHECK(poll_for(&c.effect));
    CHECK(poll_for(&c.cleaned));

    /* Bad arguments: nothing runs, cleanup is called. */
    task_init(&d, 1, 0);
    bg = (struct trove_bg *)&d;
    CHECK_EQ_INT(trove_bg_start(NULL, task_cleanup, &d, &bg), TROVE_ERR_INVALID);
    CHECK(bg == NULL);
    CHECK_EQ_INT(atomic_load(&d.cleaned), 1);
    CHECK_EQ_INT(trove_bg_wait(NULL, 0), TROVE_ERR_INVALID);
    trove_bg_release(NULL);
}

/* The buffer pool: a taken buffer fits the caller's limit and is the largest that does; the
 * pool keeps at most TROVE__BUFPOOL_MAX buffers and TROVE__BUFPOOL_BYTES of capacity. */
static void test_bufpool(void)
{
    struct trove__bufpool p;
    struct trove_bytes b = {0};
    static const size_t caps[3] = {1000, 50000, 8000};

    trove__bufpool_init(&p);
    trove__bufpool_take(&p, SIZE_MAX, &b);
    CHECK(b.ptr == NULL); /* empty pool: stays empty */
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(trove_bytes_reserve(&b, caps[i]), TROVE_OK);
        b.len = 7;
        trove__bufpool_give(&p, &b);
        CHECK(b.ptr == NULL && b.len == 0 && b.cap == 0);
    }
    CHECK_EQ_INT(p.n, 3);
    trove__bufpool_take(&p, 999, &b);
    CHECK(b.ptr == NULL); /* nothing fits */
    trove__bufpool_take(&p, 10000, &b);
    CHECK(b.ptr != NULL && b.cap >= 8000 && b.cap <= 10000 && b.len == 0);
    CHECK_EQ_INT(p.n, 2);
    trove__bufpool_give(&p, &b);
    /* Past the count: freed, not kept. */
    for (int i = 0; i < TROVE__BUFPOOL_MAX + 2; i++) {
        CHECK_EQ_INT(trove_bytes_reserve(&b, 100), TROVE_OK);
        trove__bufpool_give(&p, &b);
    }
    CHECK_EQ_INT(p.n, TROVE__BUFPOOL_MAX);
    trove__bufpool_destroy(&p);
    /* Past the bytes: one buffer larger than the pool's capacity is freed. */
    trove__bufpool_init(&p);
    CHECK_EQ_INT(trove_bytes_reserve(&b, TROVE__BUFPOOL_BYTES + 1), TROVE_OK);
    trove__bufpool_give(&p, &b);
    CHECK_EQ_INT(p.n, 0);
    CHECK_EQ_INT(p.bytes, 0);
    trove__bufpool_destroy(&p);
}

int main(int argc, char **argv)
{
    char dir[128];

    test_init(argc, argv);
    snprintf(root, sizeof root, "/tmp/trove_stream_XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/store", root);
    CHECK_EQ_INT(trove_backend_fs_open_flags(dir, TROVE_BACKEND_NOSYNC, &fs), TROVE_OK);
    if (!fs) {
        test_rm_rf(root);
        return test_done();
    }
    RUN(test_options);
    RUN(test_bufpool);
    CHECK_EQ_INT(trove_backend_get_async(fs), 0);
    for (int rep = 0; rep < REPS; rep++) {
        async_mode = rep & 1;
        RUN_WITH(test_order, rep);
        RUN_WITH(test_slow_sink, rep);
        RUN_WITH(test_depth_cap, rep);
        RUN_WITH(test_budget, rep);
        RUN_WITH(test_over_budget, rep);
        RUN_WITH(test_share_overflow, rep);
        RUN_WITH(test_missing, rep);
        RUN_WITH(test_cancel_inside, rep);
        RUN_WITH(test_cancel_thread, rep);
        RUN_WITH(test_send_error, rep);
        RUN_WITH(test_decoder_error, rep);
        RUN_WITH(test_exclusive_end, rep);
        RUN_WITH(test_empty_slots, rep);
        RUN_WITH(test_prefetch_off, rep);
        RUN(test_bg);
    }
    trove_backend_close(fs);
    test_rm_rf(root);
    return test_done();
}
