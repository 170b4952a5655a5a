/*
 * pass.c: the pass thread: every pass_ms, each live capture's producers' pending events,
 * already in the capture's name ids, and the capture's new names, cut into batches of at
 * most 2048 events and published, to the fan-out (viewers) and to the capture's list of
 * uncommitted batches, which the store thread (store_thread.c) writes. live.h has the
 * threads and their locks.
 */
#include "live.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the capture pass ------------------------------------------------------------------ */

struct pass_scratch {
    struct trove_event *ev; /* the capture's events of this pass, every producer's */
    size_t n, cap;
    struct trove_event *swap; /* an empty buffer to give a producer for its next pending */
    size_t swap_cap;
    struct trove_names *added; /* the capture's new names of this pass */
    struct trove_attrs attrs;  /* the events' attributes, rows by index in ev */
    struct trove_bytes samples; /* the capture's samples frames of this pass (one producer's) */
    uint64_t nsamples, nswitches;
};

static int scratch_room(struct pass_scratch *ps, size_t more)
{
    size_t cap = ps->cap ? ps->cap : 4096;
    struct trove_event *p;

    if (ps->n + more <= ps->cap)
        return TROVE_OK;
    while (cap < ps->n + more)
        cap *= 2;
    if (!(p = trove__realloc(ps->ev, cap * sizeof *p)))
        return TROVE_ERR_NOMEM;
    ps->ev = p;
    ps->cap = cap;
    return TROVE_OK;
}

/* Take p's pending events (in the capture's name ids: the ingest thread mapped them) and
 * samples frames into ps. */
static int take_pending(struct trove__prod *p, struct pass_scratch *ps)
{
    struct trove_event *ev;
    struct trove_attrs pa;
    size_t n, cap;
    int rc;

    pthread_mutex_lock(&p->mu);
    pa = p->pending_attrs;
    memset(&p->pending_attrs, 0, sizeof p->pending_attrs);
    ev = p->pending;
    n = p->npending;
    cap = p->cap_pending;
    p->pending = ps->swap;
    p->cap_pending = ps->swap_cap;
    p->npending = 0;
    p->events_published += n;
    if (p->pending_samples.len > 0) {
        rc = trove_bytes_append(&ps->samples, p->pending_samples.ptr, p->pending_samples.len);
        if (rc == TROVE_OK) { /* else kept for the next pass */
            ps->nsamples += p->pending_nsamples;
            ps->nswitches += p->pending_nswitches;
            p->pending_samples.len = 0;
            p->pending_nsamples = p->pending_nswitches = 0;
        }
    }
    pthread_mutex_unlock(&p->mu);
    ps->swap = ev;
    ps->swap_cap = cap;
    rc = TROVE_OK;
    if (n > 0 && (rc = scratch_room(ps, n)) == TROVE_OK) {
        if (pa.n && trove_attrs_append(&ps->attrs, &pa, 0, pa.n, ps->n, 0) != TROVE_OK) {
            /* the events go on without their attributes, and the producer's error says so */
            pthread_mutex_lock(&p->mu);
            p->errors++;
            snprintf(p->error, sizeof p->error, "%zu attribute rows lost: out of memory", pa.n);
            pthread_mutex_unlock(&p->mu);
        }
        memcpy(ps->ev + ps->n, ev, n * sizeof *ev);
        ps->n += n;
    } else if (n > 0) { /* taken, and lost */
        pthread_mutex_lock(&p->mu);
        p->events_published -= n;
        p->events_dropped += n;
        pthread_mutex_unlock(&p->mu);
    }
    trove_attrs_free(&pa);
    return rc;
}

/* The rows of ps's events [off, off + k), by index in them, into *out (NULL when none). */
static int slice_attrs(const struct pass_scratch *ps, size_t off, size_t k,
                       struct trove_attrs **out)
{
    size_t i0 = trove_attrs_find(&ps->attrs, off), i1 = trove_attrs_find(&ps->attrs, off + k);
    int rc;

    *out = NULL;
    if (i0 == i1)
        return TROVE_OK;
    if (!(*out = trove__calloc(1, sizeof **out)))
        return TROVE_ERR_NOMEM;
    if ((rc = trove_attrs_append(*out, &ps->attrs, i0, i1, 0, off)) != TROVE_OK) {
        trove_attrs_free(*out);
        free(*out);
        *out = NULL;
    }
    return rc;
}

/* Publish ev[0..n) (n <= TROVE_WIRE_MAX_EVENTS) with names (may be NULL; taken over), their
 * attributes (may be NULL; taken over) and, when ps is not NULL, the pass's samples frames
 * (for the store only: viewers get events). */
static int publish(struct trove__cap *c, struct trove_names *names, const struct trove_event *ev,
                   size_t n, struct trove_attrs *attrs, struct pass_scratch *ps)
{
    struct trove__batch *b = trove__malloc(sizeof *b + n * sizeof *ev);
    int rc;

    if (!b) {
        trove_names_free(names);
        if (attrs) {
            trove_attrs_free(attrs);
            free(attrs);
        }
        return TROVE_ERR_NOMEM;
    }
    b->attrs = attrs;
    atomic_init(&b->refs, 1); /* the list's */
    b->next = NULL;
    b->n = (uint32_t)n;
    b->names = names;
    b->samples = NULL;
    b->samples_len = 0;
    b->nsamples = b->nswitches = 0;
    if (ps && ps->samples.len > 0) {
        if (!(b->samples = trove__malloc(ps->samples.len))) {
            trove_names_free(names);
            if (attrs) {
                trove_attrs_free(attrs);
                free(attrs);
            }
            free(b);
            return TROVE_ERR_NOMEM;
        }
        memcpy(b->samples, ps->samples.ptr, ps->samples.len);
        b->samples_len = ps->samples.len;
        b->nsamples = ps->nsamples;
        b->nswitches = ps->nswitches;
        ps->samples.len = 0;
        ps->nsamples = ps->nswitches = 0;
    }
    if (n)
        memcpy(b->ev, ev, n * sizeof *ev);
    pthread_mutex_lock(&c->mu);
    rc = trove__fanout_publish(c->fo, names, ev, n, attrs);
    b->seq = c->batches++;
    b->first = c->published;
    c->published += n;
    c->samples += b->nsamples;
    /* the bound on what waits for a commit counts the rows and their strings too */
    b->bytes = n * sizeof *ev + b->samples_len +
               (attrs ? attrs->n * sizeof *attrs->rows + attrs->nbytes : 0);
    c->uncommitted_bytes += b->bytes;
    if (c->tail)
        c->tail->next = b;
    else
        c->head = b;
    c->tail = b;
    pthread_mutex_unlock(&c->mu);
    return rc; /* the store has it either way; a viewer may miss it (counted as an error) */
}

/* Events [off, off + k) of a pass, taken from mine[i] took[i] at a time in that order, were
 * lost: each producer's share moves from its published count to its dropped one. */
static void lost_events(struct trove__prod **mine, const size_t *took, size_t nmine, size_t off,
                        size_t k)
{
    size_t at = 0;
    for (size_t i = 0; i < nmine; at += took[i++]) {
        size_t from = at > off ? at : off, to = at + took[i] < off + k ? at + took[i] : off + k;
        if (from >= to)
            continue;
        pthread_mutex_lock(&mine[i]->mu);
        mine[i]->events_published -= to - from;
        mine[i]->events_dropped += to - from;
        pthread_mutex_unlock(&mine[i]->mu);
    }
}

/* One pass over capture c: its producers' pending data, in batches (or dropped, when
 * discard: the capture failed). Returns 1 if it published anything or a producer left. */
static int pass_capture(struct trove__server *srv, struct trove__cap *c, struct pass_scratch *ps,
                        int discard)
{
    struct trove__prod **mine = NULL, **done = NULL;
    size_t *took = NULL; /* events taken of mine[i], in ps->ev's order */
    size_t nmine = 0, ndone = 0, nprods = 0;
    int rc = TROVE_OK, any = 0, left;

    pthread_mutex_lock(&srv->mu);
    for (struct trove__prod *p = srv->prods; p; p = p->next)
        nprods++;
    mine = trove__mallocarray(nprods + 1, sizeof *mine);
    done = trove__mallocarray(nprods + 1, sizeof *done);
    took = trove__mallocarray(nprods + 1, sizeof *took);
    if (mine && done && took)
        for (struct trove__prod *p = srv->prods; p; p = p->next)
            if (p->cap == c)
                mine[nmine++] = p;
    pthread_mutex_unlock(&srv->mu);
    if (!mine || !done || !took) {
        free(mine);
        free(done);
        free(took);
        return 0;
    }
    ps->n = 0;
    trove_attrs_free(&ps->attrs);
    ps->samples.len = 0; /* a failed publish's: never another capture's */
    ps->nsamples = ps->nswitches = 0;
    trove_names_free(ps->added);
    ps->added = NULL;
    if (trove_names_new(&ps->added) != TROVE_OK)
        goto out;
    for (size_t i = 0; i < nmine; i++) {
        struct trove__prod *p = mine[i];
        int closed;
        took[i] = 0;
        pthread_mutex_lock(&p->mu);
        closed = p->closed;
        pthread_mutex_unlock(&p->mu);
        if (discard) { /* the capture failed: what it sent has nowhere to go */
            pthread_mutex_lock(&p->mu);
            p->events_dropped += p->npending;
            p->npending = 0;
            p->pending_samples.len = 0;
            p->pending_nsamples = p->pending_nswitches = 0;
            pthread_mutex_unlock(&p->mu);
            rc = TROVE_OK;
        } else {
            size_t before = ps->n;
            rc = take_pending(p, ps);
            took[i] = ps->n - before;
        }
        if (rc != TROVE_OK) {
            pthread_mutex_lock(&p->mu);
            p->errors++;
            snprintf(p->error, sizeof p->error, "taking its events: %s", trove_strerror(rc));
            pthread_mutex_unlock(&p->mu);
        }
        if (closed) /* it sent its last bytes before it closed: all taken now */
            done[ndone++] = p;
    }
    /* The capture's new names, taken after the events: the ingest thread adds a name before
     * the events that use it, so every name an event taken here needs is in this take. */
    if (!discard) {
        struct trove_names *t;
        pthread_mutex_lock(&c->mu);
        if (trove_names_count(c->added) > 0) {
            t = c->added;
            c->added = ps->added;
            ps->added = t;
        }
        pthread_mutex_unlock(&c->mu);
    }
    if (!discard && (trove_names_count(ps->added) > 0 || ps->n > 0 || ps->samples.len > 0)) {
        size_t off = 0;
        do {
            size_t k = ps->n - off < TROVE_BATCH_DEFAULT ? ps->n - off : TROVE_BATCH_DEFAULT;
            struct trove_names *names = NULL;
            struct trove_attrs *attrs = NULL;
            if (off == 0 && trove_names_count(ps->added) > 0) {
                names = ps->added;
                ps->added = NULL;
            }
            int sliced = slice_attrs(ps, off, k, &attrs);
            if (sliced != TROVE_OK)
                trove_names_free(names);
            if (sliced != TROVE_OK ||
                publish(c, names, ps->ev + off, k, attrs, off == 0 ? ps : NULL) != TROVE_OK) {
                lost_events(mine, took, nmine, off, k);
                pthread_mutex_lock(&c->mu);
                c->commit_errors++;
                snprintf(c->error, sizeof c->error, "publishing a batch: out of memory");
                if (off == 0 && ps->samples.len > 0) {
                    /* samples frames lost: the ones after them would not follow on, so the
                     * profile stops here (what it stored stays whole); events go on */
                    c->profile_owner = TROVE__PROFILE_STOPPED;
                    snprintf(c->error, sizeof c->error,
                             "publishing a batch: out of memory; %" PRIu64 " samples lost, and "
                             "the capture takes no more",
                             ps->nsamples);
                }
                pthread_mutex_unlock(&c->mu);
            }
            off += k;
        } while (off < ps->n);
        any = 1;
    }
    /* Producers that closed leave; the last one closes the capture. */
    pthread_mutex_lock(&srv->mu);
    for (size_t i = 0; i < ndone; i++) {
        for (struct trove__prod **pp = &srv->prods; *pp; pp = &(*pp)->next)
            if (*pp == done[i]) {
                *pp = done[i]->next;
                break;
            }
    }
    pthread_mutex_unlock(&srv->mu);
    pthread_mutex_lock(&c->mu);
    c->producers -= (int)ndone;
    left = c->producers;
    if (left == 0 && c->state == TROVE__CAP_LIVE)
        c->state = TROVE__CAP_CLOSING;
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < ndone; i++) {
        trove__log(srv, "producer %" PRIu64 " (%s) of capture %s left: %" PRIu64 " events",
                   done[i]->id, done[i]->peer, c->name, done[i]->events_in);
        trove__prod_free(done[i]);
    }
out:
    free(mine);
    free(done);
    free(took);
    return any || ndone > 0;
}

void *trove__pass_main(void *arg)
{
    struct trove__server *srv = arg;
    struct pass_scratch ps;
    uint64_t next = trove__now_ns();

    memset(&ps, 0, sizeof ps);
    for (;;) {
        struct trove__cap **caps = NULL;
        size_t k = 0;
        int stopping = atomic_load(&srv->stopping), any = 0, busy = 0;
        uint64_t now;

        pthread_mutex_lock(&srv->mu);
        caps = trove__caps_snapshot(srv, &k);
        busy = srv->prods != NULL;
        pthread_mutex_unlock(&srv->mu);
        for (size_t i = 0; i < k; i++) {
            int state, full;
            pthread_mutex_lock(&caps[i]->mu);
            state = caps[i]->state;
            full = caps[i]->uncommitted_bytes >= TROVE__UNCOMMITTED_MAX;
            pthread_mutex_unlock(&caps[i]->mu);
            /* full: the store is behind, and the capture's producers wait for it. Once
             * the service stops, every capture is passed whatever its state: its producers
             * are closed, what they had sent is bounded (the ingest thread reads nothing
             * more), and the pass must take them to end (it waits for them all); a capture
             * still opening then loses its producers, which sent nothing it took, and a
             * full one goes over its bound by what they had sent. */
            if ((state == TROVE__CAP_LIVE && !full) || state == TROVE__CAP_FAILED || stopping)
                any |= pass_capture(srv, caps[i], &ps, state == TROVE__CAP_FAILED);
            trove__cap_release(caps[i]);
        }
        free(caps);
        if (any) {
            pthread_mutex_lock(&srv->mu);
            pthread_cond_signal(&srv->store_cv);
            pthread_mutex_unlock(&srv->mu);
            trove__wake_web(srv);
        }
        /* Stopping: the ingest thread closed every producer; once they are all taken, the
         * pass is done. */
        if (stopping && !busy)
            break;
        next += (uint64_t)srv->pass_ms * 1000000u;
        now = trove__now_ns();
        if (next > now) {
            struct timespec ts = {(time_t)((next - now) / 1000000000u),
                                  (long)((next - now) % 1000000000u)};
            nanosleep(&ts, NULL);
        } else {
            next = now; /* behind: no catching up in a burst */
        }
    }
    free(ps.ev);
    free(ps.swap);
    trove_attrs_free(&ps.attrs);
    trove_names_free(ps.added);
    trove_bytes_free(&ps.samples);
    atomic_store(&srv->pass_done, 1);
    pthread_mutex_lock(&srv->mu);
    pthread_cond_signal(&srv->store_cv);
    pthread_mutex_unlock(&srv->mu);
    return NULL;
}
