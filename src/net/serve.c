/*
 * serve.c: `trove serve`'s life (trove/serve.h): the store, the sockets, the threads
 * (live.h), and the stop.
 */
#define _GNU_SOURCE /* pipe2, pthread_setname_np */

#include "live.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The stop request's self-pipe, one for the process, made by the first run and never
 * closed: trove_serve_stop (a signal handler, another thread) may write to it at any moment,
 * a run's end included, and a descriptor closed under it could by then be another file's.
 * A run takes stop requests while armed; it empties the pipe before it arms, so that a
 * stop that came too late for the last run does not stop the next. */
static pthread_once_t stop_once = PTHREAD_ONCE_INIT;
static int stop_pipe[2] = {-1, -1}, stop_pipe_errno;
static atomic_int stop_armed;

static void stop_pipe_make(void)
{
    if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        stop_pipe_errno = errno;
        stop_pipe[0] = stop_pipe[1] = -1;
    }
}

void trove_serve_stop(void)
{
    char c = 1;

    /* stop_pipe is set before any run arms, and never changes after */
    if (atomic_load(&stop_armed) && write(stop_pipe[1], &c, 1) < 0) {
        ; /* the pipe is full: a stop is already pending */
    }
}

/* ---- the service ------------------------------------------------------------------------ */

static int check_options(const struct trove_serve_options *opt, struct trove_diag *diag)
{
    if (!opt || !opt->store_dir || !*opt->store_dir)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "serve: no store directory");
    if (opt->wire < 0 || opt->wire > TROVE_WIRE_DEFLATE)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "serve: wire %d is not auto, raw, "
                                                      "packed or deflate", opt->wire);
    if (opt->segment_format == TROVE_WIRE_MODEL)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "serve: segment format model is for imports (`trove import "
                          "--segment-format model`): its encoder is not yet fast enough for a "
                          "live capture");
    if (opt->segment_format && opt->segment_format != TROVE_WIRE_DEFLATE &&
        opt->segment_format != TROVE_WIRE_COLUMNAR &&
        opt->segment_format != TROVE_WIRE_COLUMNAR_DEFLATE)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "serve: segment format %d is not deflate, "
                          "columnar or columnar_deflate", opt->segment_format);
    if (opt->pass_ms > 60000 || opt->commit_ms > 3600000)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "serve: --pass-ms is at most 60000 and --commit-ms 3600000");
    if (opt->max_viewer_queue && opt->max_viewer_queue < 65536)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "serve: --max-viewer-queue is at least 65536 bytes (one frame)");
    return TROVE_OK;
}

int trove_serve_run(const struct trove_serve_options *opt, struct trove_diag *diag)
{
    struct trove__server *srv;
    pthread_t ingest, pass, store;
    int rc, started = 0;

    if ((rc = check_options(opt, diag)) != TROVE_OK)
        return rc;
    /* Batches and frames of 64 KiB come and go a few thousand times a second: keep the
     * freed memory for the next ones rather than give it back and fault it in again. And
     * keep it in two arenas: each from=start viewer's history runs on threads of its own
     * (the history's, the stream's walker, prefetchers and sender), and glibc gives new
     * threads arenas of their own, up to 8 a core, each keeping what it freed up to the trim
     * threshold; with viewers coming and going the service's RSS then grew with every
     * history (by about 8 MiB each in the soak, 73 -> 95 MiB in 100 s, still rising), where
     * two arenas level off (77-81 MiB from the 40th second on; bench/soak.sh). */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_ARENA_MAX, 2);
    if (!(srv = trove__calloc(1, sizeof *srv)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    srv->opt = *opt;
    srv->commit_ms = opt->commit_ms ? opt->commit_ms : TROVE_SERVE_COMMIT_MS_DEFAULT;
    srv->pass_ms = opt->pass_ms ? opt->pass_ms : TROVE_SERVE_PASS_MS_DEFAULT;
    srv->max_queue = (size_t)(opt->max_viewer_queue ? opt->max_viewer_queue
                                                    : TROVE_SERVE_VIEWER_QUEUE_DEFAULT);
    srv->start_ns = trove__now_ns();
    srv->stop_fd[0] = srv->stop_fd[1] = -1;
    srv->listen_fds[0] = srv->listen_fds[1] = -1;
    pthread_mutex_init(&srv->mu, NULL);
    trove__flows_cache_init(&srv->flows);
    pthread_cond_init(&srv->store_cv, NULL);
    atomic_init(&srv->stopping, 0);
    atomic_init(&srv->pass_done, 0);
    atomic_init(&srv->store_done, 0);
    atomic_init(&srv->wake_fd, -1);

    rc = trove_store_open(opt->store_dir, TROVE_STORE_CREATE | TROVE_STORE_NOWAIT, &srv->store,
                          diag);
    if (rc != TROVE_OK)
        goto out;
    pthread_once(&stop_once, stop_pipe_make);
    if (stop_pipe[0] < 0) {
        rc = TROVE_FAIL(diag, -stop_pipe_errno, 0, "serve: a pipe: %s", strerror(stop_pipe_errno));
        goto out;
    }
    {
        char c;
        while (read(stop_pipe[0], &c, 1) == 1)
            ; /* a stop the last run took too late */
    }
    srv->stop_fd[0] = stop_pipe[0];
    srv->stop_fd[1] = stop_pipe[1];
    if ((rc = trove__ingest_open(srv, diag)) != TROVE_OK ||
        (rc = trove__web_open(srv, diag)) != TROVE_OK)
        goto out;
    atomic_store(&stop_armed, 1);
    if ((rc = pthread_create(&store, NULL, trove__store_main, srv)) != 0) {
        rc = TROVE_FAIL(diag, -rc, 0, "serve: a thread: %s", strerror(rc));
        goto out;
    }
    pthread_setname_np(store, "trove-store"); /* names for top, perf and trove bench serve */
    if ((rc = pthread_create(&pass, NULL, trove__pass_main, srv)) != 0) {
        atomic_store(&srv->stopping, 1);
        atomic_store(&srv->pass_done, 1);
        pthread_join(store, NULL);
        rc = TROVE_FAIL(diag, -rc, 0, "serve: a thread: %s", strerror(rc));
        goto out;
    }
    if ((rc = pthread_create(&ingest, NULL, trove__ingest_main, srv)) != 0) {
        atomic_store(&srv->stopping, 1);
        pthread_join(pass, NULL);
        pthread_join(store, NULL);
        rc = TROVE_FAIL(diag, -rc, 0, "serve: a thread: %s", strerror(rc));
        goto out;
    }
    pthread_setname_np(pass, "trove-pass");
    pthread_setname_np(ingest, "trove-ingest");
    started = 1;
    if (opt->ready)
        opt->ready(opt->ctx, srv->url, srv->socket_path);
    trove__web_run(srv); /* until the store thread is done after a stop */
    pthread_join(ingest, NULL);
    pthread_join(pass, NULL);
    pthread_join(store, NULL);
    rc = TROVE_OK;
out:
    atomic_store(&stop_armed, 0);
    trove__web_close(srv);
    for (int i = 0; i < 2; i++)
        if (srv->listen_fds[i] >= 0)
            close(srv->listen_fds[i]);
    if (srv->listen_fds[0] >= 0 || started)
        unlink(srv->socket_path);
    while (srv->prods) {
        struct trove__prod *p = srv->prods;
        srv->prods = p->next;
        trove__prod_free(p);
    }
    while (srv->caps) {
        struct trove__cap *c = srv->caps;
        srv->caps = c->next;
        trove__cap_release(c);
    }
    trove_store_close(srv->store);
    pthread_cond_destroy(&srv->store_cv);
    pthread_mutex_destroy(&srv->mu);
    trove__flows_cache_free(&srv->flows);
    free(srv);
    return rc;
}
