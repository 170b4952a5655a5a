/*
 * backend_fault.c: a backend that wraps another and makes its gets slow and unreliable on
 * purpose (include/trove/testing.h, trove_backend_fault_wrap), for the streaming tests and
 * benchmarks: a store round trip of a few milliseconds, a bandwidth, an object that
 * appears late or fails, all on a local filesystem backend.
 *
 * A get goes: count it (gets, the digest's nth, concurrency), ask the hook, which may fail
 * it before anything else happens, sleep latency_us, get from inner, then sleep
 * len / bytes_per_sec for the bytes it returned. The per-digest counts live in a refmap
 * (its `live` field is the number of gets of that digest so far) under one mutex, held only
 * to look the digest up; the other counters are atomics, so concurrent gets overlap in
 * their sleeps and reads exactly as they would against a remote store. Concurrency counts
 * every get from its first step to its last, hook-failed ones included.
 *
 * Over an inner backend with asynchronous gets (trove_backend_get_start), the wrapper has
 * them too, with the same steps: the hook at once, then the latency and the bandwidth wait
 * as deadlines kept by one timer thread (started with the first such get), which starts
 * the inner get when the latency is over and tells the caller when the bandwidth wait is.
 * Nothing sleeps on the thread that drives the inner backend's requests. With opt.async the
 * wrapper has them over any inner backend: a synchronous inner get then runs on the timer
 * thread.
 *
 * Every other call goes straight to inner, which is borrowed: closing the wrapper frees
 * the wrapper only.
 */
#include "backend_internal.h"
#include "common/alloc.h"
#include "trove/testing.h"
#include "refmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

struct fault_backend {
    struct trove_backend base; /* first: backend.c sees only this */
    struct trove_backend *inner;
    struct trove_fault_options opt;
    pthread_mutex_t mu;  /* guards counts */
    struct refmap counts; /* digest -> gets of it so far (in `live`) */
    atomic_uint_fast64_t gets, failed, bytes;
    atomic_uint_fast32_t cur, max_concurrent;
    /* asynchronous gets: deadlines, under tmu */
    pthread_mutex_t tmu;
    pthread_cond_t tcv; /* CLOCK_MONOTONIC */
    pthread_t timer;
    int timer_up, timer_stop;
    struct fault_async *due; /* waiting for a deadline, unordered */
};

/* An asynchronous get through the wrapper. */
struct fault_async {
    struct fault_backend *fb;
    struct trove_digest d;
    struct trove_bytes *out;
    size_t max_len;
    trove_get_done_fn done;
    void *ctx;
    uint64_t at_ns; /* the deadline */
    int started;    /* 0: the inner get starts at the deadline; 1: the caller is told */
    int rc;
    struct fault_async *next;
};

static const struct trove_backend_ops fault_ops;

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

    while (ns > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The count, concurrency and hook of a get's first step; TROVE_OK to go on. */
static int get_begin(struct fault_backend *fb, const struct trove_digest *d)
{
    struct ref_entry *e;
    uint64_t nth = 0;
    uint_fast32_t now, seen;
    int rc;

    atomic_fetch_add(&fb->gets, 1);
    now = atomic_fetch_add(&fb->cur, 1) + 1;
    seen = atomic_load(&fb->max_concurrent);
    while (now > seen && !atomic_compare_exchange_weak(&fb->max_concurrent, &seen, now))
        ;
    pthread_mutex_lock(&fb->mu);
    e = trove__refmap_insert(&fb->counts, d, &(int){0});
    if (e)
        nth = e->live++;
    pthread_mutex_unlock(&fb->mu);
    if (!e)
        return TROVE_ERR_NOMEM;
    if (fb->opt.get_hook && (rc = fb->opt.get_hook(fb->opt.hook_ctx, d, nth)) != TROVE_OK) {
        atomic_fetch_add(&fb->failed, 1);
        return rc;
    }
    return TROVE_OK;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t wire_ns(const struct fault_backend *fb, size_t len)
{
    return fb->opt.bytes_per_sec > 0 ? (uint64_t)((double)len * 1e9 / (double)fb->opt.bytes_per_sec)
                                     : 0;
}

static void tell(struct fault_async *a)
{
    struct fault_backend *fb = a->fb;
    trove_get_done_fn done = a->done;
    void *ctx = a->ctx;
    int rc = a->rc;

    if (rc != TROVE_OK)
        a->out->len = 0;
    free(a);
    atomic_fetch_sub(&fb->cur, 1);
    done(ctx, rc);
}

static void schedule(struct fault_async *a, uint64_t at_ns)
{
    struct fault_backend *fb = a->fb;

    a->at_ns = at_ns;
    pthread_mutex_lock(&fb->tmu);
    a->next = fb->due;
    fb->due = a;
    pthread_cond_signal(&fb->tcv);
    pthread_mutex_unlock(&fb->tmu);
}

static void inner_ended(void *arg, int rc)
{
    struct fault_async *a = arg;
    uint64_t wait = 0;

    a->rc = rc;
    a->started = 1;
    if (rc == TROVE_OK) {
        atomic_fetch_add(&a->fb->bytes, a->out->len);
        wait = wire_ns(a->fb, a->out->len);
    }
    if (wait > 0)
        schedule(a, mono_ns() + wait);
    else
        tell(a);
}

/* A deadline passed: start the inner get, or tell the caller. Timer thread, unlocked. */
static void deadline(struct fault_async *a)
{
    if (a->started) {
        tell(a);
        return;
    }
    a->started = 1;
    if (!trove_backend_get_async(a->fb->inner)) { /* opt.async over a synchronous inner */
        inner_ended(a, trove_backend_get(a->fb->inner, &a->d, a->out, a->max_len));
        return;
    }
    a->rc = trove_backend_get_start(a->fb->inner, &a->d, a->out, a->max_len, inner_ended, a);
    if (a->rc != TROVE_OK)
        tell(a);
}

static void *timer_main(void *arg)
{
    struct fault_backend *fb = arg;

    pthread_mutex_lock(&fb->tmu);
    for (;;) {
        uint64_t now = mono_ns(), next = UINT64_MAX;
        struct fault_async *ready = NULL, **pp;
        for (pp = &fb->due; *pp;) {
            struct fault_async *a = *pp;
            if (a->at_ns <= now) {
                *pp = a->next;
                a->next = ready;
                ready = a;
            } else {
                next = a->at_ns < next ? a->at_ns : next;
                pp = &a->next;
            }
        }
        if (ready) {
            pthread_mutex_unlock(&fb->tmu);
            while (ready) {
                struct fault_async *a = ready;
                ready = a->next;
                deadline(a);
            }
            pthread_mutex_lock(&fb->tmu);
            continue;
        }
        if (fb->timer_stop && !fb->due)
            break;
        if (next == UINT64_MAX) {
            pthread_cond_wait(&fb->tcv, &fb->tmu);
        } else {
            struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
            pthread_cond_timedwait(&fb->tcv, &fb->tmu, &ts);
        }
    }
    pthread_mutex_unlock(&fb->tmu);
    return NULL;
}

static int fault_async_ok(const struct trove_backend *base)
{
    const struct fault_backend *fb = (const struct fault_backend *)base;
    return fb->opt.async || trove_backend_get_async(fb->inner);
}

static int fault_get_start(struct trove_backend *base, const struct trove_digest *d,
                           struct trove_bytes *out, size_t max_len, trove_get_done_fn done,
                           void *ctx)
{
    struct fault_backend *fb = (struct fault_backend *)base;
    struct fault_async *a;
    int rc, up;

    rc = get_begin(fb, d);
    pthread_mutex_lock(&fb->tmu);
    if (!fb->timer_up && pthread_create(&fb->timer, NULL, timer_main, fb) == 0)
        fb->timer_up = 1;
    up = fb->timer_up;
    pthread_mutex_unlock(&fb->tmu);
    if (!up || !(a = trove__calloc(1, sizeof *a))) {
        atomic_fetch_sub(&fb->cur, 1);
        return TROVE_ERR_NOMEM;
    }
    a->fb = fb;
    a->d = *d;
    a->out = out;
    a->max_len = max_len;
    a->done = done;
    a->ctx = ctx;
    if (rc != TROVE_OK) { /* the hook's (or the count's) failure is this get's answer */
        a->started = 1;
        a->rc = rc;
        schedule(a, 0);
    } else {
        schedule(a, mono_ns() + (uint64_t)fb->opt.latency_us * 1000u);
    }
    return TROVE_OK;
}

static int fault_get(struct trove_backend *base, const struct trove_digest *d,
                     struct trove_bytes *out, size_t max_len)
{
    struct fault_backend *fb = (struct fault_backend *)base;
    int rc;

    if ((rc = get_begin(fb, d)) != TROVE_OK)
        goto out;
    sleep_ns((uint64_t)fb->opt.latency_us * 1000u);
    rc = trove_backend_get(fb->inner, d, out, max_len);
    if (rc != TROVE_OK)
        goto out;
    atomic_fetch_add(&fb->bytes, out->len);
    sleep_ns(wire_ns(fb, out->len));
out:
    atomic_fetch_sub(&fb->cur, 1);
    return rc;
}

static int fault_put(struct trove_backend *base, const struct trove_digest *d, const void *data,
                     size_t len, int *created_out)
{
    return trove_backend_put(((struct fault_backend *)base)->inner, d, data, len, created_out);
}

static int fault_size(struct trove_backend *base, const struct trove_digest *d,
                      uint64_t *len_out)
{
    return trove_backend_size(((struct fault_backend *)base)->inner, d, len_out);
}

static int fault_del(struct trove_backend *base, const struct trove_digest *d)
{
    return trove_backend_delete(((struct fault_backend *)base)->inner, d);
}

static int fault_list(struct trove_backend *base,
                      int (*fn)(void *ctx, const struct trove_digest *d), void *ctx)
{
    return trove_backend_list(((struct fault_backend *)base)->inner, fn, ctx);
}

static int fault_stage(struct trove_backend *base, const struct trove_digest *d,
                       const void *data, size_t len)
{
    return trove_backend_stage(((struct fault_backend *)base)->inner, d, data, len);
}

static int fault_publish(struct trove_backend *base, uint64_t *overhead_out)
{
    return trove_backend_publish(((struct fault_backend *)base)->inner, overhead_out);
}

static void fault_close(struct trove_backend *base)
{
    struct fault_backend *fb = (struct fault_backend *)base;

    pthread_mutex_lock(&fb->tmu); /* nothing is in flight: the caller waited for it */
    fb->timer_stop = 1;
    pthread_cond_signal(&fb->tcv);
    pthread_mutex_unlock(&fb->tmu);
    if (fb->timer_up)
        pthread_join(fb->timer, NULL);
    pthread_cond_destroy(&fb->tcv);
    pthread_mutex_destroy(&fb->tmu);
    trove__refmap_free(&fb->counts);
    pthread_mutex_destroy(&fb->mu);
    free(fb);
}

static const struct trove_backend_ops fault_ops = {
    .name = "fault",
    .put = fault_put,
    .get = fault_get,
    .get_start = fault_get_start,
    .async_ok = fault_async_ok,
    .size = fault_size,
    .del = fault_del,
    .list = fault_list,
    .stage = fault_stage,
    .publish = fault_publish,
    .close = fault_close,
};

int trove_backend_fault_wrap(struct trove_backend *inner, const struct trove_fault_options *opt,
                             struct trove_backend **out)
{
    struct fault_backend *fb;

    if (!out)
        return TROVE_ERR_INVALID;
    *out = NULL;
    if (!inner || !opt)
        return TROVE_ERR_INVALID;
    fb = trove__calloc(1, sizeof *fb);
    if (!fb)
        return TROVE_ERR_NOMEM;
    fb->base.ops = &fault_ops;
    fb->base.no_verify = 1; /* its gets are the inner backend's, which checks them */
    fb->inner = inner;
    fb->opt = *opt;
    pthread_mutex_init(&fb->mu, NULL);
    pthread_mutex_init(&fb->tmu, NULL);
    {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&fb->tcv, &ca);
        pthread_condattr_destroy(&ca);
    }
    atomic_init(&fb->gets, 0);
    atomic_init(&fb->failed, 0);
    atomic_init(&fb->bytes, 0);
    atomic_init(&fb->cur, 0);
    atomic_init(&fb->max_concurrent, 0);
    *out = &fb->base;
    return TROVE_OK;
}

int trove_backend_fault_stats(struct trove_backend *be, struct trove_fault_stats *out)
{
    struct fault_backend *fb = (struct fault_backend *)be;

    if (!be || !out || be->ops != &fault_ops)
        return TROVE_ERR_INVALID;
    out->gets = atomic_load(&fb->gets);
    out->failed = atomic_load(&fb->failed);
    out->bytes = atomic_load(&fb->bytes);
    out->max_concurrent = (uint32_t)atomic_load(&fb->max_concurrent);
    return TROVE_OK;
}
