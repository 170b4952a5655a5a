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
};

static const struct trove_backend_ops fault_ops;

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

    while (ns > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int fault_get(struct trove_backend *base, const struct trove_digest *d,
                     struct trove_bytes *out, size_t max_len)
{
    struct fault_backend *fb = (struct fault_backend *)base;
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
    if (!e) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if (fb->opt.get_hook && (rc = fb->opt.get_hook(fb->opt.hook_ctx, d, nth)) != TROVE_OK) {
        atomic_fetch_add(&fb->failed, 1);
        goto out;
    }
    sleep_ns((uint64_t)fb->opt.latency_us * 1000u);
    rc = trove_backend_get(fb->inner, d, out, max_len);
    if (rc != TROVE_OK)
        goto out;
    atomic_fetch_add(&fb->bytes, out->len);
    if (fb->opt.bytes_per_sec > 0)
        sleep_ns((uint64_t)((double)out->len * 1e9 / (double)fb->opt.bytes_per_sec));
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

    trove__refmap_free(&fb->counts);
    pthread_mutex_destroy(&fb->mu);
    free(fb);
}

static const struct trove_backend_ops fault_ops = {
    .name = "fault",
    .put = fault_put,
    .get = fault_get,
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
