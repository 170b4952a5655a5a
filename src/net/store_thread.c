/*
 * store_thread.c: the store thread, the one thread of `trove serve` that writes the store.
 * It opens each capture's writer (which is what a producer's answer waits for: the
 * capture moves from OPENING to LIVE or FAILED), recovers the writers a service killed
 * before left behind, adds the batches the pass thread (pass.c) published to the
 * capture's list of uncommitted batches, commits at least every commit_ms (early past a
 * bound of uncommitted bytes), trims what it committed, ends a capture whose producers
 * left, and runs the API's jobs (a delete, an import) through its own store handle, in
 * the order they came. live.h has the threads and their locks.
 */
#include "live.h"
#include "trove/summary.h"
#include "trove/input.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* c has failed: its writer, if it has one, is closed (dropping what it did not commit), so
 * that a new session of its name can open and a stopping service does not wait for it. */
static void cap_fail(struct trove__server *srv, struct trove__cap *c, const char *what,
                     const struct trove_diag *diag, int rc)
{
    struct trove_capture_writer *w;

    pthread_mutex_lock(&c->mu);
    c->state = TROVE__CAP_FAILED;
    c->commit_errors++;
    snprintf(c->error, sizeof c->error, "%s: %s", what,
             diag && diag->msg[0] ? diag->msg : trove_strerror(rc));
    w = c->w;
    c->w = NULL;
    pthread_mutex_unlock(&c->mu);
    trove_capture_writer_close(w); /* the store thread's alone: no lock needed */
    trove__log(srv, "capture %s: %s", c->name, c->error);
    trove__wake_web(srv); /* its viewers are told now, whatever else happens or not */
}

/* Is an older capture of c's name still writing (its writer open)? */
static int older_writing(struct trove__server *srv, struct trove__cap *c)
{
    int busy = 0;

    pthread_mutex_lock(&srv->mu);
    for (struct trove__cap *o = c->next; o && !busy; o = o->next)
        busy = strcmp(o->name, c->name) == 0 && o->w != NULL;
    pthread_mutex_unlock(&srv->mu);
    return busy;
}

/* The segment format a live writer of capture `name` is opened with: the service's, by
 * default format 5 with deflate for a new capture (smaller than deflate frames, and no dearer
 * for the store thread: docs/BENCHMARKS.md), and for an append to a capture that holds model
 * segments (an import's), deflate rather than the capture's own, whose encoder is too slow
 * for a live capture; 0 lets the writer go on as the capture was written. */
static int live_format(struct trove__server *srv, const char *name, int append)
{
    struct trove_capture_info info;

    if (srv->opt.segment_format)
        return srv->opt.segment_format;
    if (!append)
        return TROVE_WIRE_COLUMNAR_DEFLATE;
    if (trove_capture_info(srv->store, name, &info, NULL) == TROVE_OK &&
        (info.flags & TROVE_CAPTURE_FLAG_MODEL))
        return TROVE_WIRE_DEFLATE;
    return 0;
}

static void store_open(struct trove__server *srv, struct trove__cap *c)
{
    struct trove_capture_options co;
    struct trove_diag diag = {0};
    struct trove_capture_writer *w = NULL;
    struct trove__capture_names *cn = NULL;
    const struct trove_names *stored;
    uint64_t events, replaced = 0;
    int rc, mode = c->append ? TROVE_SERVE_APPEND : TROVE_SERVE_NEW;

    if (older_writing(srv, c))
        return; /* its last commit first */
    if (!c->append) { /* is there a stored capture this session replaces, and how long? */
        struct trove_capture_info info;
        rc = trove_capture_info(srv->store, c->name, &info, NULL);
        if (rc != TROVE_ERR_NOTFOUND)
            mode = TROVE_SERVE_REPLACE; /* one that cannot be read is replaced too */
        if (rc == TROVE_OK)
            replaced = info.events;
    }
    memset(&co, 0, sizeof co);
    co.segment_bytes = c->append ? 0 : TROVE__LIVE_SEGMENT_BYTES; /* an append keeps its own */
    co.segment_format = live_format(srv, c->name, c->append);
    co.no_summaries = srv->opt.no_summaries;
    rc = trove_capture_writer_open(srv->store, c->name, c->append, &co, &w, &diag);
    if (rc != TROVE_OK) {
        cap_fail(srv, c, c->append ? "continuing it" : "starting it", &diag, rc);
        return;
    }
    if ((rc = trove__capture_names_new(&cn)) != TROVE_OK) {
        trove_capture_writer_close(w);
        cap_fail(srv, c, "starting it", NULL, rc);
        return;
    }
    stored = trove_capture_writer_names_all(w);
    if (stored && trove_names_count(stored) > 0 &&
        ((rc = trove__capture_names_seed(cn, stored, 0)) !=
             TROVE_OK ||
         (rc = trove__fanout_publish(c->fo, stored, NULL, 0, NULL)) != TROVE_OK)) {
        trove__capture_names_free(cn);
        trove_capture_writer_close(w);
        cap_fail(srv, c, "reading its names", NULL, rc);
        return;
    }
    events = trove_capture_writer_events(w);
    pthread_mutex_lock(&c->mu);
    c->w = w;
    c->cn = cn;
    c->base = c->published = c->committed = events;
    c->samples = c->committed_samples = trove_capture_writer_sample_count(w);
    c->spooled = 0;
    c->last_commit_ns = trove__now_ns();
    c->mode = mode;
    c->replaced = replaced;
    c->state = c->producers > 0 ? TROVE__CAP_LIVE : TROVE__CAP_CLOSING;
    pthread_mutex_unlock(&c->mu);
    if (mode == TROVE_SERVE_REPLACE)
        trove__log(srv, "capture %s: session %" PRIu64 " replaces the stored capture (%" PRIu64
                        " events)", c->name, c->session, replaced);
    trove__log(srv, "capture %s: session %" PRIu64 " %s (%" PRIu64 " events stored)", c->name,
               c->session, c->append ? "continued" : "started", events);
}

/*
 * After a failed commit. A put that failed in flight leaves the store handle unable to
 * commit anything (which slots name objects that never landed is unknown), so every
 * capture's writer starts again from its last commit: each is closed (dropping what it did
 * not commit), the handle forgets the failure, and each is opened again and given again,
 * by the next steps, the batches the service still holds since that commit. A writer that
 * cannot be opened again fails its capture, with what it held counted as lost.
 */
static void recover_writers(struct trove__server *srv)
{
    struct trove__cap **caps;
    unsigned char *reopen;
    size_t k = 0;
    int rc;

    pthread_mutex_lock(&srv->mu);
    caps = trove__caps_snapshot(srv, &k);
    pthread_mutex_unlock(&srv->mu);
    if (!caps)
        return;
    if (!(reopen = calloc(k ? k : 1, 1))) {
        for (size_t i = 0; i < k; i++)
            trove__cap_release(caps[i]);
        free(caps);
        return;
    }
    for (size_t i = 0; i < k; i++) {
        struct trove__cap *c = caps[i];
        pthread_mutex_lock(&c->mu);
        if (c->w) {
            trove_capture_writer_close(c->w);
            c->w = NULL;
            reopen[i] = 1;
        }
        pthread_mutex_unlock(&c->mu);
    }
    if ((rc = trove_store_reset(srv->store)) != TROVE_OK)
        trove__log(srv, "store: cannot reset after a failed commit: %s", trove_strerror(rc));
    for (size_t i = 0; i < k; i++) {
        struct trove__cap *c = caps[i];
        struct trove_capture_options co;
        struct trove_capture_writer *w = NULL;
        struct trove_diag diag = {0};
        int append = c->commits > 0 || c->append;
        if (!reopen[i])
            continue;
        memset(&co, 0, sizeof co);
        co.segment_bytes = append ? 0 : TROVE__LIVE_SEGMENT_BYTES;
        co.segment_format = live_format(srv, c->name, append);
        co.no_summaries = srv->opt.no_summaries;
        rc = trove_capture_writer_open(srv->store, c->name, append, &co, &w, &diag);
        pthread_mutex_lock(&c->mu);
        if (rc == TROVE_OK) {
            /* A commit that failed after its point of no return (the recipe renamed, its
             * directory's fsync refused) did land: the store has those batches already. */
            uint64_t have = trove_capture_writer_events(w), extra;
            uint64_t have_s = trove_capture_writer_sample_count(w), extra_s;
            extra = have > c->committed ? have - c->committed : 0;
            extra_s = have_s > c->committed_samples ? have_s - c->committed_samples : 0;
            while (c->head && (c->head->n || c->head->nsamples
                                   ? extra >= c->head->n && extra_s >= c->head->nsamples
                                   : extra > 0 || extra_s > 0)) {
                struct trove__batch *b = c->head;
                extra -= b->n;
                extra_s -= b->nsamples;
                c->committed += b->n;
                c->committed_samples += b->nsamples;
                c->head = b->next;
                if (!c->head)
                    c->tail = NULL;
                c->uncommitted_bytes -= b->bytes;
                trove__batch_release(b);
            }
            if (extra == 0 && extra_s == 0) {
                c->w = w;
                c->spooled = c->head ? c->head->seq : c->batches; /* from its last commit on */
            } else {
                rc = TROVE_ERR_CORRUPT; /* not a whole number of batches: cannot tell */
                trove_capture_writer_close(w);
            }
        }
        pthread_mutex_unlock(&c->mu);
        if (rc != TROVE_OK) {
            uint64_t lost = c->published - c->committed;
            cap_fail(srv, c, "reopening it after a failed commit", &diag, rc);
            trove__log(srv, "capture %s: %" PRIu64 " events were never committed", c->name,
                       lost);
        }
    }
    for (size_t i = 0; i < k; i++)
        trove__cap_release(caps[i]);
    free(caps);
    free(reopen);
}

/* Failed commits in a row after which a stopping service gives a capture up. */
#define TROVE__COMMIT_GIVE_UP 3

/* Did the store refuse (a full disk, an I/O error, S3 out of reach, memory), rather than
 * the batch being one no writer takes? The first kind passes; the second does not. */
static int store_refused(int rc)
{
    return rc != TROVE_ERR_INVALID && rc != TROVE_ERR_LIMIT && rc != TROVE_ERR_CORRUPT &&
           rc != TROVE_ERR_MISMATCH;
}

/* The store refused c's commit, or a segment that filled before it (c->commit_failed
 * counts them in a row). What c holds is kept in memory and given again from its last
 * commit at the next (recover_writers): nothing is dropped, unless the service is stopping
 * and the store has refused GIVE_UP times in a row. */
static void store_failed(struct trove__server *srv, struct trove__cap *c, int final,
                         const struct trove_diag *diag, int rc)
{
    int give_up = final && c->commit_failed >= TROVE__COMMIT_GIVE_UP;
    uint64_t lost = 0;

    pthread_mutex_lock(&c->mu);
    c->commit_errors++;
    if (diag->msg[0] && !strncmp(diag->msg, "capture ", 8))
        snprintf(c->error, sizeof c->error, "%s", diag->msg); /* it names the capture */
    else
        snprintf(c->error, sizeof c->error, "capture %s: committing: %s", c->name,
                 diag->msg[0] ? diag->msg : trove_strerror(rc));
    if (give_up) {
        lost = c->published - c->committed;
        trove_capture_writer_close(c->w); /* drops what never committed */
        c->w = NULL;
        c->state = TROVE__CAP_FAILED;
    }
    pthread_mutex_unlock(&c->mu);
    trove__log(srv, "%s", c->error);
    if (give_up) {
        trove__log(srv, "capture %s: stopping after %d failed commits: %" PRIu64
                        " events were never committed", c->name, c->commit_failed, lost);
        trove__wake_web(srv);
    } else
        recover_writers(srv);
}

/* Give the writer c's batches it does not have; commit when due. */

static void store_step(struct trove__server *srv, struct trove__cap *c, int final)
{
    struct trove__batch **take = NULL;
    struct trove_capture_info info;
    struct trove_diag diag = {0};
    size_t n = 0, cap = 0;
    uint64_t now = trove__now_ns();
    int rc = TROVE_OK, state, due, early, ended = 0;

    pthread_mutex_lock(&c->mu);
    for (struct trove__batch *b = c->head; b; b = b->next)
        if (b->seq >= c->spooled)
            cap++;
    if (cap && (take = trove__mallocarray(cap, sizeof *take)) != NULL)
        for (struct trove__batch *b = c->head; b; b = b->next)
            if (b->seq >= c->spooled) {
                atomic_fetch_add(&b->refs, 1);
                take[n++] = b;
            }
    state = c->state;
    early = c->uncommitted_bytes >= TROVE__COMMIT_EARLY_BYTES;
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < n; i++) {
        if (rc == TROVE_OK && take[i]->names)
            rc = trove_capture_writer_names(c->w, take[i]->names, &diag);
        if (rc == TROVE_OK && take[i]->n)
            rc = trove_capture_writer_add_attrs(c->w, take[i]->ev, take[i]->n, take[i]->attrs,
                                                &diag);
        if (rc == TROVE_OK && take[i]->samples_len)
            rc = trove_capture_writer_samples(c->w, take[i]->samples, take[i]->samples_len,
                                              take[i]->nsamples, take[i]->nswitches, &diag);
        if (rc == TROVE_OK)
            c->spooled = take[i]->seq + 1;
        trove__batch_release(take[i]);
    }
    free(take);
    if (rc != TROVE_OK && !store_refused(rc)) {
        cap_fail(srv, c, "storing a batch", &diag, rc); /* the batch itself: no retry helps */
        return;
    }
    if (rc != TROVE_OK) { /* a segment that filled could not be put: as a failed commit */
        c->last_commit_ns = now;
        c->commit_failed++;
        store_failed(srv, c, final, &diag, rc);
        return;
    }
    /* The pass publishes no more once the capture is closing, so a closing capture with
     * everything spooled is finished by this commit. */
    due = state == TROVE__CAP_CLOSING || final ||
          now - c->last_commit_ns >= (uint64_t)srv->commit_ms * 1000000u || early;
    /* After a failed commit the next waits commit_ms, closing or not: a store that keeps
     * refusing (a lost S3 lease, a full disk) is asked once a period, not every pass. */
    if (c->commit_failed && now - c->last_commit_ns < (uint64_t)srv->commit_ms * 1000000u)
        due = 0;
    if (!due)
        return;
    memset(&info, 0, sizeof info);
    /* every commit but the last writes the summary nodes the next one replaces fast */
    trove_capture_writer_drafts(c->w, !final && !(state == TROVE__CAP_CLOSING &&
                                                  c->spooled == c->batches));
    rc = trove_capture_writer_commit(c->w, &info, &diag);
    c->last_commit_ns = now;
    c->commit_failed = rc != TROVE_OK ? c->commit_failed + 1 : 0;
    if (rc != TROVE_OK) {
        store_failed(srv, c, final, &diag, rc);
        return;
    }
    pthread_mutex_lock(&c->mu);
    c->commits++;
    c->committed = trove_capture_writer_committed(c->w);
    c->committed_samples = info.samples;
    c->stored_bytes = info.stored_bytes;
    while (c->head && c->head->seq < c->spooled) {
        struct trove__batch *b = c->head;
        c->head = b->next;
        if (!c->head)
            c->tail = NULL;
        c->uncommitted_bytes -= b->bytes;
        trove__batch_release(b);
    }
    if (state == TROVE__CAP_CLOSING && c->spooled == c->batches) {
        trove_capture_writer_close(c->w);
        c->w = NULL;
        c->state = TROVE__CAP_ENDED;
        /* no producer is left to map names (closing: none joins), and an ended session may
         * stay listed a long while: its name dictionary goes now */
        trove__capture_names_free(c->cn);
        c->cn = NULL;
        ended = 1;
    }
    pthread_mutex_unlock(&c->mu);
    if (ended) {
        trove__log(srv, "capture %s: ended with %" PRIu64 " events", c->name, c->committed);
        trove__wake_web(srv);
    }
}

/* Is a capture of that name being written (a session that is not over)? */
static int name_live(struct trove__server *srv, const char *name)
{
    int live = 0;

    pthread_mutex_lock(&srv->mu);
    for (struct trove__cap *c = srv->caps; c && !live; c = c->next) {
        if (strcmp(c->name, name) != 0)
            continue;
        pthread_mutex_lock(&c->mu);
        live = c->state == TROVE__CAP_OPENING || c->state == TROVE__CAP_LIVE ||
               c->state == TROVE__CAP_CLOSING || c->w != NULL;
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&srv->mu);
    return live;
}

/* One job of the API: a delete or an import, through the store thread's handle. */
static void run_job(struct trove__server *srv, struct trove__job *j)
{
    struct trove_diag diag = {0};
    int rc;

    if (j->kind == TROVE__JOB_INDEX) {
        struct trove_capture_index_result res;
        /* a live capture's writer writes its summaries; it is not touched under it */
        if (!name_live(srv, j->name) &&
            trove_capture_index(srv->store, j->name, NULL, &res, &diag) == TROVE_OK && !res.already)
            trove__log(srv, "capture %s: summaries built (%" PRIu64 " objects)", j->name, res.built);
        else if (diag.msg[0])
            trove__log(srv, "capture %s: summaries not built: %s", j->name, diag.msg);
    } else if (name_live(srv, j->name)) {
        j->status = 409;
        snprintf(j->err, sizeof j->err, "capture %s is live: stop its producers first", j->name);
    } else if (j->kind == TROVE__JOB_DELETE) {
        struct trove_capture_info info;
        rc = trove_capture_info(srv->store, j->name, &info, &diag);
        if (rc == TROVE_OK || rc == TROVE_ERR_CHECKSUM || rc == TROVE_ERR_CORRUPT)
            rc = trove_volume_remove(srv->store, j->name, &diag);
        if (rc != TROVE_OK) {
            j->status = rc == TROVE_ERR_NOTFOUND ? 404 : rc == TROVE_ERR_INVALID ? 400 : 500;
            snprintf(j->err, sizeof j->err, "%s",
                     rc == TROVE_ERR_NOTFOUND ? "no such capture"
                     : diag.msg[0]            ? diag.msg
                                              : trove_strerror(rc));
        } else {
            trove__log(srv, "capture %s: deleted through the API", j->name);
        }
    } else {
        /* The input layer reads the body (any kind trove reads) and stores it; its errors
         * name the upload as the client knows it ("the body"), never the file the body was
         * spooled to. */
        struct trove_import_options io;
        memset(&io, 0, sizeof io);
        io.in.label = "the body";
        io.in.warnings = &j->warnings;
        io.append = j->append;
        io.segment_format = srv->opt.segment_format;
        rc = trove_import(srv->store, j->name, j->path, &io, &j->res, &diag);
        if (rc != TROVE_OK) {
            j->status = j->res.bad_input ? 400 : rc == TROVE_ERR_NOTFOUND ? 404
                        : rc == TROVE_ERR_EXISTS ? 409 : rc == TROVE_ERR_INVALID ? 400 : 500;
            snprintf(j->err, sizeof j->err, "%s", diag.msg[0] ? diag.msg : trove_strerror(rc));
        }
        if (!j->status)
            trove__log(srv, "capture %s: imported through the API, %" PRIu64 " events", j->name,
                       j->res.events);
    }
    atomic_store(&j->done, 1);
}

static void run_jobs(struct trove__server *srv)
{
    for (;;) {
        struct trove__job *j;
        pthread_mutex_lock(&srv->mu);
        if ((j = srv->jobs) != NULL) {
            srv->jobs = j->next;
            if (!srv->jobs)
                srv->jobs_tail = NULL;
        }
        pthread_mutex_unlock(&srv->mu);
        if (!j)
            return;
        run_job(srv, j);
        trove__job_release(j);
        trove__wake_web(srv);
    }
}

/* How often the store thread gives the heap's free pages back (malloc_trim). The service
 * keeps freed memory for the next batches (serve.c's mallopt), so without it the RSS is the
 * heap's high-water mark: a burst (a restart's backlog, a from=start viewer's history and
 * its catch-up, several at once) left the service that much bigger for good, and the mark
 * crept up as such moments coincided (95 -> 113 MiB over four minutes of the soak, while
 * the bytes in use went up and down between 27 and 65 MiB). Every 10 s costs a few page
 * faults for the pages reused next. */
#define TRIM_NS (10 * 1000000000ull)

void *trove__store_main(void *arg)
{
    struct trove__server *srv = arg;
    uint64_t trimmed = trove__now_ns();

    for (;;) {
        struct trove__cap **caps = NULL;
        size_t k = 0;
        int pass_done = atomic_load(&srv->pass_done), open = 0;
        struct timespec ts;

        pthread_mutex_lock(&srv->mu);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!pass_done)
            pthread_cond_timedwait(&srv->store_cv, &srv->mu, &ts);
        pass_done = atomic_load(&srv->pass_done);
        caps = trove__caps_snapshot(srv, &k);
        pthread_mutex_unlock(&srv->mu);
        /* oldest first: a capture's earlier session finishes before a new one opens */
        for (size_t i = k; i-- > 0;) {
            struct trove__cap *c = caps[i];
            int state;
            int unopened = 0;
            pthread_mutex_lock(&c->mu);
            state = c->state;
            if (pass_done && state == TROVE__CAP_LIVE)
                c->state = state = TROVE__CAP_CLOSING; /* stopping: no more batches */
            if (pass_done && state == TROVE__CAP_OPENING && c->producers == 0) {
                /* Its producers were closed by the stop before it opened, and nothing of
                 * theirs was taken: it is not opened at all, so that an empty session never
                 * replaces a stored capture of its name. */
                c->state = state = TROVE__CAP_ENDED;
                c->stopped = 1;
                unopened = 1;
            }
            pthread_mutex_unlock(&c->mu);
            if (unopened) {
                trove__log(srv, "capture %s: the service stopped before session %" PRIu64
                                " opened; nothing of it was written", c->name, c->session);
                trove__wake_web(srv);
            }
            if (state == TROVE__CAP_OPENING)
                store_open(srv, c);
            else if ((state == TROVE__CAP_LIVE || state == TROVE__CAP_CLOSING) && c->w)
                store_step(srv, c, pass_done);
            pthread_mutex_lock(&c->mu);
            open += c->w != NULL || c->state == TROVE__CAP_OPENING;
            pthread_mutex_unlock(&c->mu);
            trove__cap_release(c);
        }
        free(caps);
        run_jobs(srv);
        trove__caps_sweep(srv);
        if (pass_done && open == 0) {
            int none;
            /* The last round: jobs are closed in the lock the web thread queues them in,
             * so that a job asked for after it is refused rather than never run. */
            pthread_mutex_lock(&srv->mu);
            none = srv->jobs == NULL;
            srv->jobs_closed = none;
            pthread_mutex_unlock(&srv->mu);
            if (none)
                break;
        }
        if (trove__now_ns() - trimmed >= TRIM_NS) {
            malloc_trim(0);
            trimmed = trove__now_ns();
        }
    }
    atomic_store(&srv->store_done, 1);
    trove__wake_web(srv);
    return NULL;
}

