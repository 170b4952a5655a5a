/*
 * putpool.c: object puts in flight on worker threads (putpool.h).
 *
 * 2 * threads jobs, each owning a buffer that grows to the largest object it has carried,
 * move between a free stack and a FIFO queue (both arrays of job indices). One mutex
 * guards both and the counters; `work` wakes workers when a job is queued, `room` wakes a
 * submitter or a drain when a job is done. Jobs finish in any order, which is why free
 * jobs are tracked by index rather than by ring position. A worker holds no lock while it
 * puts, and the submitter copies into a job it has taken off the free stack, unlocked.
 */
#define _GNU_SOURCE /* pthread_setname_np */

#include "putpool.h"
#include "backend_internal.h"
#include "common/alloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct job {
    struct trove_digest d;
    uint8_t *buf;
    size_t len, cap;
};

struct trove__putpool {
    struct trove_backend *be;
    pthread_mutex_t mu;
    pthread_cond_t work, room;
    pthread_t *threads;
    unsigned nthreads;
    struct job *jobs;
    size_t njobs;
    size_t *free_stack; /* indices of free jobs: nfree of them */
    size_t nfree;
    size_t *queue;      /* a ring of queued job indices: queued of them from qhead */
    size_t qhead;
    size_t queued;
    size_t running;     /* jobs taken by a worker and not yet done */
    int error;      /* sticky: the first failed put */
    int stopping;
};

static void *worker(void *arg)
{
    struct trove__putpool *p = arg;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        size_t idx;
        struct job *j;
        int rc;
        while (p->queued == 0 && !p->stopping)
            pthread_cond_wait(&p->work, &p->mu);
        if (p->queued == 0)
            break;
        idx = p->queue[p->qhead];
        j = &p->jobs[idx];
        p->qhead = (p->qhead + 1) % p->njobs;
        p->queued--;
        p->running++;
        pthread_mutex_unlock(&p->mu);
        rc = trove__backend_put_deferred(p->be, &j->d, j->buf, j->len); /* durable at the flush */
        pthread_mutex_lock(&p->mu);
        if (rc != TROVE_OK && p->error == TROVE_OK)
            p->error = rc;
        p->running--;
        p->free_stack[p->nfree++] = idx;
        pthread_cond_broadcast(&p->room);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int trove__putpool_start(struct trove_backend *be, unsigned threads,
                         struct trove__putpool **out)
{
    struct trove__putpool *p = trove__calloc(1, sizeof *p);
    int rc = TROVE_ERR_NOMEM;

    *out = NULL;
    if (!p)
        return rc;
    p->be = be;
    p->njobs = 2 * (size_t)threads;
    p->jobs = trove__calloc(p->njobs, sizeof *p->jobs);
    p->free_stack = trove__calloc(p->njobs, sizeof *p->free_stack);
    p->queue = trove__calloc(p->njobs, sizeof *p->queue);
    p->threads = trove__calloc(threads, sizeof *p->threads);
    if (!p->jobs || !p->free_stack || !p->queue || !p->threads) {
        free(p->jobs);
        free(p->free_stack);
        free(p->queue);
        free(p->threads);
        free(p);
        return rc;
    }
    for (size_t i = 0; i < p->njobs; i++)
        p->free_stack[p->nfree++] = p->njobs - 1 - i;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->room, NULL);
    for (; p->nthreads < threads; p->nthreads++) {
        rc = pthread_create(&p->threads[p->nthreads], NULL, worker, p);
        if (rc != 0) {
            trove__putpool_stop(p);
            return -rc;
        }
        pthread_setname_np(p->threads[p->nthreads], "trove-put");
    }
    *out = p;
    return TROVE_OK;
}

int trove__putpool_error(struct trove__putpool *p)
{
    int rc;
    pthread_mutex_lock(&p->mu);
    rc = p->error;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int trove__putpool_submit(struct trove__putpool *p, const struct trove_digest *d,
                          const void *data, size_t len)
{
    size_t idx;
    struct job *j;
    int rc;

    pthread_mutex_lock(&p->mu);
    while (p->nfree == 0 && p->error == TROVE_OK)
        pthread_cond_wait(&p->room, &p->mu);
    if ((rc = p->error) != TROVE_OK)
        goto out;
    idx = p->free_stack[--p->nfree];
    j = &p->jobs[idx];
    pthread_mutex_unlock(&p->mu);
    /* The job is ours until it is queued: no worker sees it. */
    if (j->cap < len) {
        uint8_t *b = trove__realloc(j->buf, len);
        if (b) {
            j->buf = b;
            j->cap = len;
        }
    }
    if (j->cap >= len)
        memcpy(j->buf, data, len);
    pthread_mutex_lock(&p->mu);
    if (j->cap < len) {
        p->free_stack[p->nfree++] = idx;
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    j->d = *d;
    j->len = len;
    p->queue[(p->qhead + p->queued) % p->njobs] = idx;
    p->queued++;
    pthread_cond_signal(&p->work);
    rc = TROVE_OK;
out:
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int trove__putpool_drain(struct trove__putpool *p)
{
    int rc;

    pthread_mutex_lock(&p->mu);
    while (p->queued + p->running > 0)
        pthread_cond_wait(&p->room, &p->mu);
    rc = p->error;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void trove__putpool_stop(struct trove__putpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->room);
    pthread_mutex_destroy(&p->mu);
    for (size_t i = 0; i < p->njobs; i++)
        free(p->jobs[i].buf);
    free(p->jobs);
    free(p->free_stack);
    free(p->queue);
    free(p->threads);
    free(p);
}
