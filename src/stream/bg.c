/*
 * bg.c: bookkeeping off the critical path (trove_bg_*, include/trove/stream.h).
 *
 * A task runs on its own detached thread, so that nobody has to join it: a request that
 * started one never waits, and a hung task (a store that does not answer) holds nothing
 * but its own thread. The task record is shared by two owners, the thread and the handle,
 * and counted: whichever of "the task finished" and "the handle was released" comes last
 * frees it. trove_bg_wait is a timed wait on a CLOCK_MONOTONIC condvar, so a caller about
 * to exit waits a bounded time however the wall clock moves.
 */
#define _GNU_SOURCE /* pthread_setname_np */

#include "trove/stream.h"
#include "common/alloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct trove_bg {
    int (*fn)(void *ctx);
    void (*cleanup)(void *ctx);
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t finished; /* CLOCK_MONOTONIC */
    int done;   /* under mu */
    int result; /* fn's, once done */
    int refs;   /* 2: the thread and the handle */
};

static void bg_destroy(struct trove_bg *t)
{
    pthread_cond_destroy(&t->finished);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* Drop one of the two references; the last frees t. */
static void bg_unref(struct trove_bg *t)
{
    int last;

    pthread_mutex_lock(&t->mu);
    last = --t->refs == 0;
    pthread_mutex_unlock(&t->mu);
    if (last)
        bg_destroy(t);
}

static void *bg_main(void *arg)
{
    struct trove_bg *t = arg;
    int result;

    pthread_setname_np(pthread_self(), "trove-bg"); /* for top, perf, trove bench serve */
    result = t->fn(t->ctx);

    if (t->cleanup)
        t->cleanup(t->ctx);
    pthread_mutex_lock(&t->mu);
    t->result = result;
    t->done = 1;
    pthread_cond_broadcast(&t->finished);
    pthread_mutex_unlock(&t->mu);
    bg_unref(t);
    return NULL;
}

int trove_bg_start(int (*fn)(void *ctx), void (*cleanup)(void *ctx), void *ctx,
                   struct trove_bg **out)
{
    struct trove_bg *t = NULL;
    pthread_condattr_t ca;
    pthread_attr_t attr;
    pthread_t thread;
    int rc = TROVE_ERR_INVALID, have_cond = 0, have_attr = 0;

    if (out)
        *out = NULL;
    if (!fn || !out)
        goto out;
    rc = TROVE_ERR_NOMEM;
    if (!(t = trove__calloc(1, sizeof *t)))
        goto out;
    t->fn = fn;
    t->cleanup = cleanup;
    t->ctx = ctx;
    t->refs = 2;
    if ((rc = pthread_condattr_init(&ca)) != 0)
        goto out;
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (rc == 0 && (rc = pthread_cond_init(&t->finished, &ca)) == 0)
        have_cond = 1;
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        goto out;
    pthread_mutex_init(&t->mu, NULL);
    if ((rc = pthread_attr_init(&attr)) != 0)
        goto out;
    have_attr = 1;
    if ((rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED)) != 0 ||
        (rc = pthread_create(&thread, &attr, bg_main, t)) != 0)
        goto out;
    *out = t; /* the thread has it now */
    rc = TROVE_OK;
out:
    if (have_attr)
        pthread_attr_destroy(&attr);
    if (rc != TROVE_OK) {
        if (rc > 0)
            rc = -rc; /* a pthread error number */
        if (have_cond) {
            pthread_cond_destroy(&t->finished);
            pthread_mutex_destroy(&t->mu);
        }
        free(t);
        if (cleanup)
            cleanup(ctx);
    }
    return rc;
}

int trove_bg_wait(struct trove_bg *t, uint32_t timeout_ms)
{
    struct timespec until;
    int rc;

    if (!t)
        return TROVE_ERR_INVALID;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(timeout_ms / 1000);
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&t->mu);
    while (!t->done && pthread_cond_timedwait(&t->finished, &t->mu, &until) != ETIMEDOUT)
        ;
    rc = t->done ? t->result : TROVE_ERR_TIMEOUT;
    pthread_mutex_unlock(&t->mu);
    return rc;
}

void trove_bg_release(struct trove_bg *t)
{
    if (t)
        bg_unref(t);
}
