/*
 * fanout.c: encode once per wire format in use, queue the same bytes for every viewer of
 * it, drop a slow viewer's oldest event frames and report the gap (fanout.h).
 */
#include "fanout.h"
#include "trove/attrs.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

#define NFORMATS 5 /* indexed by TROVE_WIRE_*; 0 unused */

struct trove__viewer {
    struct trove__viewer *next;
    int format;
    int attrs; /* takes attrs frames */
    pthread_mutex_t mu;
    struct trove__frame_buf **q; /* a ring: n entries from head */
    size_t head, n, cap;
    size_t bytes;
    uint64_t gap_events, gap_batches; /* dropped since the last report */
    struct trove__viewer_stats st;
};

struct trove__fanout {
    pthread_mutex_t mu;
    size_t max_queue;
    struct trove__viewer *viewers;
    size_t per_format[NFORMATS];
    size_t attrs_viewers;
    struct trove_names *names; /* every name published, for a viewer that joins later */
    struct trove_wire_encoder *enc;
    struct trove_bytes scratch;
    uint64_t encodings[NFORMATS];
};

void trove__frame_buf_release(struct trove__frame_buf *fb)
{
    if (fb && atomic_fetch_sub(&fb->refs, 1) == 1)
        free(fb);
}

struct trove__frame_buf *trove__frame_buf_new(const uint8_t *data, size_t len, int names,
                                              uint32_t events)
{
    struct trove__frame_buf *fb = trove__malloc(sizeof *fb + len);

    if (!fb)
        return NULL;
    atomic_init(&fb->refs, 1);
    fb->names = names;
    fb->attrs = 0;
    fb->events = events;
    fb->len = len;
    memcpy(fb->data, data, len);
    return fb;
}

static struct trove__frame_buf *frame_buf(const uint8_t *data, size_t len, int names,
                                          uint32_t events, int refs)
{
    struct trove__frame_buf *fb = trove__frame_buf_new(data, len, names, events);

    if (fb)
        atomic_store(&fb->refs, refs);
    return fb;
}

int trove__fanout_new(size_t max_queue_bytes, struct trove__fanout **out)
{
    struct trove__fanout *fo = trove__calloc(1, sizeof *fo);

    *out = NULL;
    if (!fo)
        return TROVE_ERR_NOMEM;
    if (trove_names_new(&fo->names) != TROVE_OK || trove_wire_encoder_new(&fo->enc) != TROVE_OK) {
        trove_names_free(fo->names);
        free(fo);
        return TROVE_ERR_NOMEM;
    }
    pthread_mutex_init(&fo->mu, NULL);
    fo->max_queue = max_queue_bytes;
    *out = fo;
    return TROVE_OK;
}

void trove__fanout_free(struct trove__fanout *fo)
{
    if (!fo)
        return;
    while (fo->viewers)
        trove__fanout_remove(fo, fo->viewers);
    trove_names_free(fo->names);
    trove_wire_encoder_free(fo->enc);
    trove_bytes_free(&fo->scratch);
    pthread_mutex_destroy(&fo->mu);
    free(fo);
}

/* Make room for `more` entries in v's ring (under v->mu). */
static int ring_grow(struct trove__viewer *v, size_t more)
{
    size_t cap = v->cap ? v->cap * 2 : 16;
    struct trove__frame_buf **q;

    if (v->n + more <= v->cap)
        return TROVE_OK;
    while (cap < v->n + more)
        cap *= 2;
    if (!(q = trove__mallocarray(cap, sizeof *q)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < v->n; i++)
        q[i] = v->q[(v->head + i) % v->cap];
    free(v->q);
    v->q = q;
    v->head = 0;
    v->cap = cap;
    return TROVE_OK;
}

/* Remove entry i of v's queue (under v->mu): its bytes, and its events as a gap. */
static void drop_at(struct trove__viewer *v, size_t i)
{
    struct trove__frame_buf *fb = v->q[(v->head + i) % v->cap];
    for (size_t k = i; k + 1 < v->n; k++) /* close the hole; names frames are few */
        v->q[(v->head + k) % v->cap] = v->q[(v->head + k + 1) % v->cap];
    v->n--;
    v->bytes -= fb->len;
    if (!fb->attrs) {
        v->gap_events += fb->events;
        v->gap_batches++;
        v->st.dropped_events += fb->events;
        v->st.dropped_batches++;
    }
    trove__frame_buf_release(fb);
}

/* Drop v's oldest queued event frame, and the attrs frame before it (under v->mu); 0 if it
 * holds none. */
static int drop_oldest_events(struct trove__viewer *v)
{
    for (size_t i = 0; i < v->n; i++) {
        struct trove__frame_buf *fb = v->q[(v->head + i) % v->cap];
        if (fb->names)
            continue;
        if (fb->attrs && i + 1 < v->n)
            drop_at(v, i); /* its events frame is entry i now */
        drop_at(v, i);
        return 1;
    }
    return 0;
}

/* Queue fb for v, after afb (an attrs frame, or NULL), taking one reference of each
 * (released here if they are dropped: the two go or are dropped together). */
static int push2(struct trove__viewer *v, struct trove__frame_buf *afb,
                 struct trove__frame_buf *fb, size_t max)
{
    size_t len = fb->len + (afb ? afb->len : 0);
    int rc = TROVE_OK;

    pthread_mutex_lock(&v->mu);
    if (!fb->names) {
        while (v->bytes + len > max && drop_oldest_events(v))
            ;
        if (v->bytes + len > max) { /* over the bound on its own, or beside names */
            v->gap_events += fb->events;
            v->gap_batches++;
            v->st.dropped_events += fb->events;
            v->st.dropped_batches++;
            trove__frame_buf_release(fb);
            trove__frame_buf_release(afb);
            goto out;
        }
    }
    if ((rc = ring_grow(v, afb ? 2 : 1)) != TROVE_OK) {
        trove__frame_buf_release(fb);
        trove__frame_buf_release(afb);
        goto out;
    }
    if (afb) {
        v->q[(v->head + v->n) % v->cap] = afb;
        v->n++;
        v->bytes += afb->len;
    }
    v->q[(v->head + v->n) % v->cap] = fb;
    v->n++;
    v->bytes += fb->len;
out:
    v->st.queued_bytes = v->bytes;
    pthread_mutex_unlock(&v->mu);
    return rc;
}

static int push(struct trove__viewer *v, struct trove__frame_buf *fb, size_t max)
{
    return push2(v, NULL, fb, max);
}

/* Release the frames v did not take, and v. */
static void viewer_free(struct trove__viewer *v)
{
    while (v->n > 0) {
        trove__frame_buf_release(v->q[v->head]);
        v->head = (v->head + 1) % v->cap;
        v->n--;
    }
    free(v->q);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

int trove__fanout_add(struct trove__fanout *fo, int format, struct trove__viewer **out)
{
    return trove__fanout_add_ex(fo, format, TROVE__VIEW_NAMES, out);
}

int trove__fanout_add_ex(struct trove__fanout *fo, int format, int flags,
                         struct trove__viewer **out)
{
    struct trove__viewer *v;
    int rc = TROVE_OK;

    *out = NULL;
    if (format < TROVE_WIRE_RAW || format > TROVE_WIRE_DEFLATE)
        return TROVE_ERR_INVALID;
    if (!(v = trove__calloc(1, sizeof *v)))
        return TROVE_ERR_NOMEM;
    pthread_mutex_init(&v->mu, NULL);
    v->format = format;
    v->attrs = (flags & TROVE__VIEW_ATTRS) != 0;
    pthread_mutex_lock(&fo->mu);
    if ((flags & TROVE__VIEW_NAMES) && trove_names_count(fo->names) > 0) { /* every id so far, first */
        struct trove__frame_buf *fb;
        fo->scratch.len = 0;
        rc = trove_wire_encode_names(fo->names, 0, trove_names_count(fo->names), &fo->scratch);
        if (rc == TROVE_OK && !(fb = frame_buf(fo->scratch.ptr, fo->scratch.len, 1, 0, 1)))
            rc = TROVE_ERR_NOMEM;
        if (rc == TROVE_OK) {
            fo->encodings[TROVE_WIRE_NAMES]++;
            rc = push(v, fb, fo->max_queue);
        }
    }
    if (rc == TROVE_OK) {
        v->next = fo->viewers;
        fo->viewers = v;
        fo->per_format[format]++;
        fo->attrs_viewers += v->attrs;
    }
    pthread_mutex_unlock(&fo->mu);
    if (rc != TROVE_OK) {
        viewer_free(v);
        return rc;
    }
    *out = v;
    return TROVE_OK;
}

void trove__fanout_remove(struct trove__fanout *fo, struct trove__viewer *v)
{
    if (!v)
        return;
    pthread_mutex_lock(&fo->mu);
    for (struct trove__viewer **pp = &fo->viewers; *pp; pp = &(*pp)->next)
        if (*pp == v) {
            *pp = v->next;
            fo->per_format[v->format]--;
            fo->attrs_viewers -= v->attrs;
            break;
        }
    pthread_mutex_unlock(&fo->mu);
    viewer_free(v);
}

/* Encode once (scratch holds the frame), then queue it for every viewer of `format`
 * (format 0: every viewer, for names), after afb for those that take attrs frames. */
static int fan(struct trove__fanout *fo, int format, int names, uint32_t events,
               struct trove__frame_buf *afb)
{
    size_t takers = format ? fo->per_format[format] : 0;
    struct trove__frame_buf *fb;
    int rc = TROVE_OK;

    if (!format)
        for (int f = TROVE_WIRE_RAW; f <= TROVE_WIRE_DEFLATE; f++)
            takers += fo->per_format[f];
    if (takers == 0)
        return TROVE_OK;
    if (!(fb = frame_buf(fo->scratch.ptr, fo->scratch.len, names, events, (int)takers)))
        return TROVE_ERR_NOMEM;
    for (struct trove__viewer *v = fo->viewers; v; v = v->next)
        if (!format || v->format == format) {
            struct trove__frame_buf *a = v->attrs ? afb : NULL;
            int r;
            if (a)
                atomic_fetch_add(&a->refs, 1);
            r = push2(v, a, fb, fo->max_queue); /* takes one reference, even on failure */
            if (r != TROVE_OK && rc == TROVE_OK)
                rc = r;
        }
    return rc;
}

int trove__fanout_publish(struct trove__fanout *fo, const struct trove_names *added,
                          const struct trove_event *events, size_t n,
                          const struct trove_attrs *attrs)
{
    struct trove__frame_buf *afb = NULL;
    int rc = TROVE_OK;

    if (n > TROVE_WIRE_MAX_EVENTS)
        return TROVE_ERR_LIMIT;
    pthread_mutex_lock(&fo->mu);
    if (added && trove_names_count(added) > 0) {
        if ((rc = trove_names_merge(fo->names, added)) != TROVE_OK)
            goto out;
        fo->scratch.len = 0;
        if ((rc = trove_wire_encode_names(added, 0, trove_names_count(added), &fo->scratch)))
            goto out;
        fo->encodings[TROVE_WIRE_NAMES]++;
        if ((rc = fan(fo, 0, 1, 0, NULL)) != TROVE_OK)
            goto out;
    }
    if (n > 0 && attrs && attrs->n > 0 && fo->attrs_viewers > 0) { /* once for all of them */
        fo->scratch.len = 0;
        if ((rc = trove_attrs_wire_encode(attrs, &fo->scratch)) != TROVE_OK)
            goto out;
        if (!(afb = frame_buf(fo->scratch.ptr, fo->scratch.len, 0, 0, 1))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        afb->attrs = 1;
        fo->encodings[0]++;
    }
    for (int f = TROVE_WIRE_RAW; n > 0 && f <= TROVE_WIRE_DEFLATE; f++) {
        if (fo->per_format[f] == 0)
            continue; /* nobody takes it: not encoded */
        fo->scratch.len = 0;
        if ((rc = trove_wire_encode(fo->enc, f, events, n, &fo->scratch)) != TROVE_OK)
            goto out;
        fo->encodings[f]++;
        if ((rc = fan(fo, f, 0, (uint32_t)n, afb)) != TROVE_OK)
            goto out;
    }
out:
    pthread_mutex_unlock(&fo->mu);
    trove__frame_buf_release(afb); /* publish's reference: each queue holds its own */
    return rc;
}

int trove__viewer_next(struct trove__viewer *v, struct trove__viewer_item *it)
{
    int got = 0;

    memset(it, 0, sizeof *it);
    pthread_mutex_lock(&v->mu);
    if (v->gap_batches > 0) {
        it->gap_events = v->gap_events;
        it->gap_batches = v->gap_batches;
        v->gap_events = v->gap_batches = 0;
        got = 1;
    } else if (v->n > 0) {
        it->frame = v->q[v->head];
        v->head = (v->head + 1) % v->cap;
        v->n--;
        v->bytes -= it->frame->len;
        v->st.sent_frames++;
        v->st.sent_bytes += it->frame->len;
        v->st.sent_events += it->frame->events;
        got = 1;
    }
    v->st.queued_bytes = v->bytes;
    pthread_mutex_unlock(&v->mu);
    return got;
}

void trove__viewer_stats(struct trove__viewer *v, struct trove__viewer_stats *out)
{
    pthread_mutex_lock(&v->mu);
    *out = v->st;
    pthread_mutex_unlock(&v->mu);
}

int trove__viewer_has_gap(struct trove__viewer *v)
{
    int gap;
    pthread_mutex_lock(&v->mu);
    gap = v->gap_batches > 0;
    pthread_mutex_unlock(&v->mu);
    return gap;
}

int trove__viewer_format(const struct trove__viewer *v) { return v->format; }

void trove__fanout_encodings(struct trove__fanout *fo, uint64_t out[5])
{
    pthread_mutex_lock(&fo->mu);
    memcpy(out, fo->encodings, sizeof fo->encodings);
    pthread_mutex_unlock(&fo->mu);
}

int trove__fanout_names(struct trove__fanout *fo, struct trove_names *out)
{
    int rc;

    pthread_mutex_lock(&fo->mu);
    rc = trove_names_merge(out, fo->names);
    pthread_mutex_unlock(&fo->mu);
    return rc;
}
