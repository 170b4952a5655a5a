/*
 * history.c: a viewer joining a capture — live from the next batch, or with from=start
 * first what is stored (a replay through the stream's walker, prefetcher and sender) and
 * what is published but not yet committed, so that it gets every event once.
 *
 * The viewer's fan-out queue is taken at the join, so live batches queue (bounded) while
 * the history is sent. A long capture at a high rate fills that queue before the history
 * is over; its dropped frames are not lost to the viewer, though: they are in the store or
 * in the uncommitted batches. So when the history ends with frames dropped, the viewer
 * catches up (trove__view_catch_up): a new queue taken now, and a history of the events
 * from the old queue's first on — from the store, read from that event's segment on
 * (trove_capture_replay's from_event), then the uncommitted batches. Each round is shorter
 * than the last as long as the viewer reads faster than the capture grows; after
 * TROVE__CATCHUP_MAX rounds it is a slow viewer and gets the gap report.
 */
#include "live.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- from=start: the history ------------------------------------------------------------ */

struct trove__history {
    struct trove__server *srv;
    char name[TROVE_VOLUME_NAME_MAX + 1];
    int wire;
    uint64_t skip, stored;      /* events to replay from the store: [skip, stored) */
    uint64_t from_ns, to_ns;    /* and of those, the ones that start in [from_ns, to_ns) */
    double speed;               /* > 0: paced at this multiple of the events' own times */
    int replay;                 /* GET /api/replay: the stored names frames go too */
    uint64_t pace_t0, pace_base;
    int paced;
    struct trove__batch **batches; /* then these, in order */
    size_t nbatches;
    struct trove_names *names;  /* first of all */
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct trove__frame_buf **q; /* a ring of frames for the web thread */
    size_t head, n, cap, bytes;
    int done, stop;
    int error;
    char why[TROVE__ERROR_MAX];
    /* the history thread's */
    struct trove_wire_decoder *dec;
    struct trove_wire_encoder *enc;
    struct trove_event *ev;
    uint64_t replayed;          /* events sent from the store so far */
    struct trove_stream *st;
    /* attrs=1: an attrs frame before each events frame whose events have rows; the stored
     * rows of events [seg_lo, seg_hi) (by capture index), read a range at a time */
    int attrs, stored_attrs;
    struct trove_store *s;
    uint64_t seg_lo, seg_hi;
    struct trove_attrs seg;
    struct trove_attrs part;    /* scratch: one frame's rows */
};

/* Queue a copy of data[0..len) for the web thread, waiting while the queue is full. */
static int hist_push(struct trove__history *h, const uint8_t *data, size_t len, int names,
                     uint32_t events)
{
    struct trove__frame_buf *fb = trove__frame_buf_new(data, len, names, events);
    int rc = TROVE_OK;

    if (!fb)
        return TROVE_ERR_NOMEM;
    pthread_mutex_lock(&h->mu);
    while (!h->stop && h->n > 0 && h->bytes + len > TROVE__HISTORY_QUEUE_BYTES)
        pthread_cond_wait(&h->cv, &h->mu);
    if (h->stop) {
        rc = TROVE_ERR_CANCELLED;
    } else if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        struct trove__frame_buf **q = trove__mallocarray(cap, sizeof *q);
        if (!q) {
            rc = TROVE_ERR_NOMEM;
        } else {
            for (size_t i = 0; i < h->n; i++)
                q[i] = h->q[(h->head + i) % h->cap];
            free(h->q);
            h->q = q;
            h->head = 0;
            h->cap = cap;
        }
    }
    if (rc == TROVE_OK) {
        h->q[(h->head + h->n) % h->cap] = fb;
        h->n++;
        h->bytes += len;
        fb = NULL;
    }
    pthread_mutex_unlock(&h->mu);
    trove__frame_buf_release(fb);
    trove__wake_web(h->srv);
    return rc;
}

#define HIST_ATTRS_RANGE 65536u /* events whose stored rows are read at once */

/* attrs=1: the attrs frame of events [first, first + n) of the capture, queued before their
 * events frame (nothing when they have no rows): a stored segment's rows from the store (a
 * segment read once), an uncommitted batch's from it (b, its rows by index in it, first its
 * offset in b). */
static int hist_attrs(struct trove__history *h, uint64_t first, size_t n,
                      const struct trove__batch *b, struct trove_bytes *buf)
{
    const struct trove_attrs *from;
    uint64_t base;
    int rc;

    if (!h->attrs || n == 0)
        return TROVE_OK;
    if (b) {
        if (!b->attrs)
            return TROVE_OK;
        from = b->attrs;
        base = 0;
    } else {
        if (!h->stored_attrs)
            return TROVE_OK;
        if (first < h->seg_lo || first + n > h->seg_hi) { /* the next range's rows */
            trove_attrs_free(&h->seg);
            h->seg_lo = first;
            h->seg_hi = first + (n > HIST_ATTRS_RANGE ? n : HIST_ATTRS_RANGE);
            if ((rc = trove_capture_read_attrs_range(h->s, h->name, h->seg_lo, h->seg_hi, &h->seg,
                                                     NULL)) != TROVE_OK)
                return rc;
        }
        from = &h->seg;
        base = 0;
    }
    {
        size_t i0 = trove_attrs_find(from, base + first), i1 = trove_attrs_find(from, base + first + n);
        if (i0 == i1)
            return TROVE_OK;
        trove_attrs_free(&h->part);
        buf->len = 0;
        if ((rc = trove_attrs_append(&h->part, from, i0, i1, 0, first)) != TROVE_OK ||
            (rc = trove_attrs_wire_encode(&h->part, buf)) != TROVE_OK)
            return rc;
    }
    return hist_push(h, buf->ptr, buf->len, 0, 0);
}

/* Queue ev[0..n) as frames of the viewer's wire format, each after its attrs frame (attrs=1:
 * ev[0] is event `first` of the capture, or of batch b when b is given). */
static int hist_events(struct trove__history *h, const struct trove_event *ev, size_t n,
                       uint64_t first, const struct trove__batch *b, struct trove_bytes *buf)
{
    int rc = TROVE_OK;

    for (size_t off = 0; off < n && rc == TROVE_OK;) {
        size_t k = n - off < TROVE_BATCH_DEFAULT ? n - off : TROVE_BATCH_DEFAULT;
        if ((rc = hist_attrs(h, first + off, k, b, buf)) != TROVE_OK)
            break;
        buf->len = 0;
        if ((rc = trove_wire_encode(h->enc, h->wire, ev + off, k, buf)) == TROVE_OK)
            rc = hist_push(h, buf->ptr, buf->len, 0, (uint32_t)k);
        off += k;
    }
    return rc;
}

/* speed: wait until the frame's first event is due, at h->speed times its own clock. */
static int hist_pace(struct trove__history *h, const uint8_t *frame, size_t len)
{
    struct trove_wire_frame fr;
    uint64_t now, due;
    int rc = trove_wire_decode(h->dec, frame, len, h->ev, TROVE_WIRE_MAX_EVENTS, NULL, &fr, NULL);

    if (rc != TROVE_OK || fr.n_events == 0)
        return rc;
    now = trove__now_ns();
    if (!h->paced) {
        h->paced = 1;
        h->pace_t0 = now;
        h->pace_base = h->ev[0].start_ns;
    }
    due = h->pace_t0 + (uint64_t)((double)(h->ev[0].start_ns > h->pace_base
                                               ? h->ev[0].start_ns - h->pace_base
                                               : 0) /
                                  h->speed);
    pthread_mutex_lock(&h->mu);
    while (!h->stop && due > now) {
        struct timespec ts;
        uint64_t wait = due - now > 100000000u ? 100000000u : due - now;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)wait;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&h->cv, &h->mu, &ts);
        now = trove__now_ns();
    }
    rc = h->stop ? TROVE_ERR_CANCELLED : TROVE_OK;
    pthread_mutex_unlock(&h->mu);
    return rc;
}

/* The replay's sink: split each batch into its frames, pass event frames on until
 * h->stored events went (the last one cut), skip names frames (the history sent every
 * name first). */
static int hist_send(void *ctx, const struct trove_stream_batch *b)
{
    struct trove__history *h = ctx;
    const uint8_t *p = b->data;
    size_t len = b->len, off = 0;
    struct trove_bytes buf = {0};
    int rc = TROVE_OK;

    while (off < len && rc == TROVE_OK && h->replayed < h->stored) {
        struct trove_wire_header hd;
        struct trove_wire_frame fr;
        struct trove_diag diag = {0};
        size_t flen;
        if ((rc = trove_wire_parse_header(p + off, len - off, &hd, &diag)) != TROVE_OK)
            break;
        flen = TROVE_WIRE_HEADER_SIZE + (size_t)hd.payload_len;
        if (flen > len - off) {
            rc = TROVE_ERR_TRUNCATED;
            break;
        }
        if (hd.format == TROVE_WIRE_NAMES) {
            if (h->replay)
                rc = hist_push(h, p + off, flen, 1, 0);
        } else if (h->speed > 0 && (rc = hist_pace(h, p + off, flen)) != TROVE_OK) {
            ;
        } else if (h->replayed + hd.count <= h->skip) {
            h->replayed += hd.count; /* an earlier session's */
        } else if (h->replayed >= h->skip && h->replayed + hd.count <= h->stored) {
            rc = hist_attrs(h, h->replayed, hd.count, NULL, &buf);
            if (rc == TROVE_OK)
                rc = hist_push(h, p + off, flen, 0, hd.count);
            h->replayed += hd.count;
        } else { /* cut: it starts before skip, or was committed after the viewer joined */
            uint64_t from = h->skip > h->replayed ? h->skip - h->replayed : 0;
            uint64_t to = h->replayed + hd.count > h->stored ? h->stored - h->replayed : hd.count;
            rc = trove_wire_decode(h->dec, p + off, flen, h->ev, TROVE_WIRE_MAX_EVENTS, NULL,
                                   &fr, &diag);
            if (rc == TROVE_OK)
                rc = hist_events(h, h->ev + from, (size_t)(to - from), h->replayed + from, NULL,
                                 &buf);
            h->replayed += to;
        }
        off += flen;
    }
    trove_bytes_free(&buf);
    if (rc == TROVE_OK && h->replayed >= h->stored)
        trove_stream_cancel(h->st); /* the rest came after the join: live has it */
    return rc;
}

static void *hist_main(void *arg)
{
    struct trove__history *h = arg;
    struct trove_bytes buf = {0};
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int rc;

    rc = TROVE_OK;
    if (!h->replay) { /* the names at the join (a replay sends the stored names frames) */
        rc = trove_wire_encode_names(h->names, 0, trove_names_count(h->names), &buf);
        if (rc == TROVE_OK)
            rc = hist_push(h, buf.ptr, buf.len, 1, 0);
    }
    if (rc == TROVE_OK && h->stored > h->skip) {
        struct trove_stream_options so;
        struct trove_capture_replay_options ro;
        struct trove_stream_sink sink;
        struct trove_stream_stats stats;
        trove_stream_options_default(&so);
        so.max_object = TROVE_CAPTURE_MAX_OBJECT;
        /* Four segments ahead, as a replay at the CLI reads, but within 16 MiB: a history
         * holds that and its 8 MiB queue at most, and the service runs --max-replays of
         * them at once (docs/serve.md, "Limits"). */
        so.budget = (uint64_t)16 << 20;
        memset(&ro, 0, sizeof ro);
        ro.from_ns = h->from_ns;
        ro.to_ns = h->to_ns;
        ro.wire = h->wire;
        ro.from_event = h->skip; /* the segments before skip are not read at all */
        h->replayed = h->skip;
        memset(&sink, 0, sizeof sink);
        sink.send = hist_send;
        sink.ctx = h;
        rc = trove_store_open(h->srv->opt.store_dir, TROVE_STORE_READONLY, &s, &diag);
        if (rc == TROVE_OK && h->attrs) { /* the stored rows, read by the events' index */
            struct trove_capture_info ci;
            h->s = s;
            rc = trove_capture_info(s, h->name, &ci, &diag);
            h->stored_attrs = rc == TROVE_OK && (ci.flags & TROVE_CAPTURE_FLAG_ATTRS);
        }
        if (rc == TROVE_OK) {
            struct trove_stream *st = NULL;
            rc = trove_stream_new(trove_store_backend(s), &so, &st);
            pthread_mutex_lock(&h->mu); /* the web thread may cancel it */
            h->st = st;
            if (h->stop && st)
                trove_stream_cancel(st);
            pthread_mutex_unlock(&h->mu);
        }
        if (rc == TROVE_OK)
            rc = trove_capture_replay(s, h->name, h->st, &ro, &sink, &stats, &diag);
        if (rc == TROVE_ERR_CANCELLED && h->replayed >= h->stored && !h->stop)
            rc = TROVE_OK;
        else if (rc == TROVE_ERR_SEND)
            rc = stats.send_error;
        if (rc == TROVE_OK && h->replayed < h->stored && !h->replay)
            rc = TROVE_ERR_CORRUPT; /* the store holds fewer events than it committed */
    }
    for (size_t i = 0; rc == TROVE_OK && i < h->nbatches; i++) {
        const struct trove__batch *b = h->batches[i];
        uint64_t from = h->skip > b->first ? h->skip - b->first : 0; /* a catch-up's first */
        rc = hist_events(h, b->ev + from, (size_t)(b->n - from), from, b, &buf);
    }
    pthread_mutex_lock(&h->mu);
    {
        struct trove_stream *st = h->st;
        h->st = NULL;
        pthread_mutex_unlock(&h->mu);
        trove_stream_free(st);
    }
    h->s = NULL;
    trove_store_close(s);
    trove_bytes_free(&buf);
    pthread_mutex_lock(&h->mu);
    h->done = 1;
    if (rc != TROVE_OK && rc != TROVE_ERR_CANCELLED) {
        h->error = rc;
        snprintf(h->why, sizeof h->why, "replaying what is stored: %.200s",
                 diag.msg[0] ? diag.msg : trove_strerror(rc));
    }
    pthread_mutex_unlock(&h->mu);
    trove__wake_web(h->srv);
    return NULL;
}

static void hist_free(struct trove__history *h)
{
    for (size_t i = 0; i < h->nbatches; i++)
        trove__batch_release(h->batches[i]);
    free(h->batches);
    while (h->n > 0) {
        trove__frame_buf_release(h->q[h->head]);
        h->head = (h->head + 1) % h->cap;
        h->n--;
    }
    free(h->q);
    trove_names_free(h->names);
    trove_wire_decoder_free(h->dec);
    trove_wire_encoder_free(h->enc);
    trove_attrs_free(&h->seg);
    trove_attrs_free(&h->part);
    free(h->ev);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h);
}

int trove__history_next(struct trove__view *v, struct trove__frame_buf **fb)
{
    struct trove__history *h = v->hist;
    int got = 0;

    *fb = NULL;
    if (!h)
        return -1;
    pthread_mutex_lock(&h->mu);
    if (h->n > 0) {
        *fb = h->q[h->head];
        h->head = (h->head + 1) % h->cap;
        h->n--;
        h->bytes -= (*fb)->len;
        pthread_cond_signal(&h->cv);
        got = 1;
    } else if (h->done) {
        got = -1;
        if (h->error)
            snprintf(v->error, sizeof v->error, "%s", h->why);
    }
    pthread_mutex_unlock(&h->mu);
    return got;
}

void trove__history_stop(struct trove__view *v)
{
    struct trove__history *h = v->hist;

    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->stop = 1;
    pthread_cond_broadcast(&h->cv);
    if (h->st)
        trove_stream_cancel(h->st); /* thread-safe; under mu so that it is not freed meanwhile */
    pthread_mutex_unlock(&h->mu);
    if (h->started)
        pthread_join(h->thread, NULL);
    hist_free(h);
    v->hist = NULL;
}

/* Under c->mu: the history of v — what is committed from event skip on, then the
 * uncommitted batches (from skip on). */
static int history_make(struct trove__server *srv, struct trove__view *v, struct trove__cap *c,
                        uint64_t skip)
{
    struct trove__history *h = trove__calloc(1, sizeof *h);
    size_t n = 0;

    if (!h)
        return TROVE_ERR_NOMEM;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->srv = srv;
    h->wire = v->wire;
    h->attrs = v->attrs;
    snprintf(h->name, sizeof h->name, "%s", c->name);
    h->stored = c->committed;
    h->to_ns = UINT64_MAX;
    h->skip = skip;
    v->hist = h;
    for (struct trove__batch *b = c->head; b; b = b->next)
        if (b->first + b->n > skip)
            n++;
    if ((n && !(h->batches = trove__mallocarray(n, sizeof *h->batches))) ||
        trove_names_new(&h->names) != TROVE_OK || trove_wire_decoder_new(&h->dec) != TROVE_OK ||
        trove_wire_encoder_new(&h->enc) != TROVE_OK ||
        !(h->ev = trove__mallocarray(TROVE_WIRE_MAX_EVENTS, sizeof *h->ev)))
        return TROVE_ERR_NOMEM;
    for (struct trove__batch *b = c->head; b; b = b->next) {
        if (b->first + b->n <= skip)
            continue; /* a catch-up: the viewer has it */
        atomic_fetch_add(&b->refs, 1);
        h->batches[h->nbatches++] = b;
    }
    return trove__fanout_names(c->fo, h->names);
}

int trove__history_replay(struct trove__server *srv, struct trove__view *v, const char *name,
                          uint64_t from_ns, uint64_t to_ns, double speed)
{
    struct trove__history *h = trove__calloc(1, sizeof *h);

    if (!h)
        return TROVE_ERR_NOMEM;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    v->hist = h;
    h->srv = srv;
    h->wire = v->wire;
    h->replay = 1;
    h->stored = UINT64_MAX;
    h->from_ns = from_ns;
    h->to_ns = to_ns;
    h->speed = speed;
    snprintf(h->name, sizeof h->name, "%s", name);
    if (trove_names_new(&h->names) != TROVE_OK || trove_wire_decoder_new(&h->dec) != TROVE_OK ||
        trove_wire_encoder_new(&h->enc) != TROVE_OK ||
        !(h->ev = trove__mallocarray(TROVE_WIRE_MAX_EVENTS, sizeof *h->ev)))
        return TROVE_ERR_NOMEM;
    return trove__history_start(srv, v);
}

int trove__history_start(struct trove__server *srv, struct trove__view *v)
{
    struct trove__history *h = v->hist;
    int rc;

    (void)srv;
    if ((rc = pthread_create(&h->thread, NULL, hist_main, h)) != 0)
        return -rc;
    h->started = 1;
    return TROVE_OK;
}

int trove__view_join(struct trove__server *srv, struct trove__view *v)
{
    struct trove__cap *c = v->cap;
    int rc = TROVE_OK, live, hist;

    pthread_mutex_lock(&c->mu);
    live = c->state == TROVE__CAP_LIVE || c->state == TROVE__CAP_CLOSING ||
           c->state == TROVE__CAP_ENDED;
    if (!live || v->fv) {
        pthread_mutex_unlock(&c->mu);
        return TROVE_OK; /* waits for it to be live */
    }
    hist = v->from_start || v->waited;
    rc = trove__fanout_add_ex(c->fo, v->wire,
                              (hist ? 0 : TROVE__VIEW_NAMES) | (v->attrs ? TROVE__VIEW_ATTRS : 0),
                              &v->fv);
    v->live_from = c->published;
    /* a viewer that waited: this session's events */
    if (rc == TROVE_OK && hist)
        rc = history_make(srv, v, c, v->from_start ? 0 : c->base);
    pthread_mutex_unlock(&c->mu);
    if (rc == TROVE_OK && hist)
        rc = trove__history_start(srv, v);
    return rc;
}

int trove__view_catch_up(struct trove__server *srv, struct trove__view *v)
{
    struct trove__cap *c = v->cap;
    struct trove__viewer *old = v->fv, *fv = NULL;
    uint64_t skip = v->live_from;
    int rc;

    trove__history_stop(v);
    v->catchups++;
    pthread_mutex_lock(&c->mu);
    /* the history sends every name */
    rc = trove__fanout_add_ex(c->fo, v->wire, v->attrs ? TROVE__VIEW_ATTRS : 0, &fv);
    if (rc == TROVE_OK) {
        v->fv = fv;
        v->live_from = c->published;
        rc = history_make(srv, v, c, skip);
    }
    pthread_mutex_unlock(&c->mu);
    if (fv)
        trove__fanout_remove(c->fo, old); /* what it held is in the new history */
    if (rc == TROVE_OK)
        rc = trove__history_start(srv, v);
    trove__log(srv, "viewer %" PRIu64 " (%s) of capture %s: catching up from event %" PRIu64
                    " (round %d)", v->id, v->peer, c->name, skip, v->catchups);
    return rc;
}

