/*
 * replay.c: streaming a capture out of the store (trove_capture_replay, include/trove/
 * capture.h): the names (one object, or each of its parts in order), then every segment that
 * overlaps [from_ns, to_ns), through a trove_stream, a batch being whole frames of at most
 * TROVE_CAPTURE_BATCH_EVENTS events.
 *
 * The header (slot 0) is read first and is the whole index: a segment overlaps the range if
 * its max_start_ns >= from_ns and its min_start_ns < to_ns, and holds an event at or past
 * from_event (the segments' event counts, summed, give each one's first index), so picking
 * segments costs no object read, and the digests of the names parts and the picked segments
 * are all the stream needs (the volume is closed before the stream starts). Each object is
 * then handled on the stream's walker thread by one walk (trove__capture_walk_*), which owns
 * one wire decoder and one encoder:
 *
 *   names         each names frame is validated (decoded with no table) and sent as it is,
 *                 aliasing the object; each part's length and entries are its entry's in
 *                 the header's part table;
 *   fast path     a segment wholly inside the range (and at or past from_event) of a
 *                 capture of deflate segments (no columnar flag), asked for as DEFLATE
 *                 frames of the size it was written with, is sent as it is stored, aliasing the
 *                 object: only each frame's header is parsed, to cut the object into frames
 *                 and to check the frame and event counts against the capture header;
 *   re-encode     otherwise each frame is decoded, its events are checked against the
 *                 segment's entry and filtered to those that start in the range (and, in the
 *                 segment that holds from_event, to those at or past it), and they go
 *                 out as frames of the wanted format and size, each a fresh allocation the
 *                 stream frees once it is sent. A segment's last frame is flushed at its end,
 *                 so the frames are the same whatever other segments were picked. Asked for
 *                 the attributes, each frame whose events have rows follows an attrs frame
 *                 of them (each kept event's capture index noted beside it in out_index), and
 *                 a segment with rows is never sent as stored.
 *
 * Any object that disagrees with the header (length, frame count, event count, an event
 * outside its segment's times) or fails to decode stops the replay with TROVE_ERR_CORRUPT or
 * the decoder's error, and diag names the capture, the segment and its object's digest.
 */
#include "capture_internal.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/wire.h"

int trove__capture_walk_init(struct trove__capture_walk *w, const char *name,
                             const struct trove_capture_header *h,
                             const struct trove_capture_replay_options *opt,
                             struct trove_diag *diag)
{
    memset(w, 0, sizeof *w);
    if (!h || !opt)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "replay needs a header and options");
    if (opt->wire != TROVE_WIRE_RAW && opt->wire != TROVE_WIRE_PACKED &&
        opt->wire != TROVE_WIRE_DEFLATE)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "replay wire format %d is not raw, packed or deflate", opt->wire);
    if (opt->frame_events > TROVE_WIRE_MAX_EVENTS)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "%" PRIu32 " events per frame is over the wire limit of %u",
                          opt->frame_events, TROVE_WIRE_MAX_EVENTS);
    if (opt->to_ns != UINT64_MAX && opt->from_ns > opt->to_ns)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "replay range starts at %" PRIu64 " ns, after its end at %" PRIu64
                          " ns",
                          opt->from_ns, opt->to_ns);
    w->name = name ? name : "?";
    w->h = h;
    w->from_ns = opt->from_ns;
    w->to_ns = opt->to_ns;
    w->wire = opt->wire;
    /* by default the stored frames' size, but a frame of format 8 (up to 65,536 events, one a
     * segment) goes out in frames of the default size: a viewer's frame stays small */
    w->frame_events = opt->frame_events                              ? opt->frame_events
                      : h->frame_events > TROVE_CAPTURE_FRAME_EVENTS_DEFAULT &&
                              (h->info.flags & TROVE_CAPTURE_FLAG_MODEL)
                          ? TROVE_CAPTURE_FRAME_EVENTS_DEFAULT
                          : h->frame_events;
    w->from_event = opt->from_event;
    w->attrs = opt->attrs && opt->attrs->n ? opt->attrs : NULL;
    if ((w->from_event || w->attrs) && h->info.segments &&
        (w->seg_first = trove__mallocarray((size_t)h->info.segments, sizeof *w->seg_first))) {
        uint64_t first = 0;
        for (uint64_t k = 0; k < h->info.segments; k++) {
            w->seg_first[k] = first;
            first += h->seg[k].events;
        }
    }
    if (((w->from_event || w->attrs) && h->info.segments && !w->seg_first) ||
        (w->attrs && !(w->out_index = trove__malloc(w->frame_events * sizeof *w->out_index))) ||
        trove_wire_decoder_new(&w->dec) != TROVE_OK || trove_wire_encoder_new(&w->enc) != TROVE_OK ||
        !(w->ev = trove__malloc(TROVE_WIRE_MAX_EVENTS * sizeof *w->ev)) ||
        !(w->out = trove__malloc(w->frame_events * sizeof *w->out))) {
        trove__capture_walk_free(w);
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    }
    return TROVE_OK;
}

void trove__capture_walk_free(struct trove__capture_walk *w)
{
    trove_bytes_free(&w->pend);
    trove_wire_decoder_free(w->dec);
    trove_wire_encoder_free(w->enc);
    free(w->ev);
    free(w->out);
    free(w->seg_first);
    free(w->out_index);
    trove_attrs_free(&w->part);
    memset(w, 0, sizeof *w);
}

static int starts_in(const struct trove__capture_walk *w, uint64_t start)
{
    return start >= w->from_ns && (w->to_ns == UINT64_MAX || start < w->to_ns);
}

/* The index in the capture of segment k's first event (0 without from_event or attrs:
 * unused). */
static uint64_t seg_first(const struct trove__capture_walk *w, uint64_t k)
{
    return w->seg_first ? w->seg_first[k] : 0;
}

int trove__capture_segment_overlaps(const struct trove__capture_walk *w, uint64_t k)
{
    const struct trove_capture_segment *g = &w->h->seg[k];
    return g->max_start_ns >= w->from_ns && (w->to_ns == UINT64_MAX || g->min_start_ns < w->to_ns) &&
           seg_first(w, k) + g->events > w->from_event;
}

static int segment_inside(const struct trove__capture_walk *w, uint64_t k)
{
    const struct trove_capture_segment *g = &w->h->seg[k];
    return starts_in(w, g->min_start_ns) && starts_in(w, g->max_start_ns) &&
           seg_first(w, k) >= w->from_event;
}

/* Do any of segment k's events have attribute rows to send? */
static int segment_has_rows(const struct trove__capture_walk *w, uint64_t k)
{
    size_t r;

    if (!w->attrs)
        return 0;
    r = trove_attrs_find(w->attrs, seg_first(w, k));
    return r < w->attrs->n && w->attrs->rows[r].event < seg_first(w, k) + w->h->seg[k].events;
}

/* Append to w->pend the attrs frame of the rows of out[0..n) (their capture indexes in
 * out_index, increasing), by index in the frame; none: nothing. */
static int attrs_frame(struct trove__capture_walk *w, size_t n, struct trove_diag *diag)
{
    const struct trove_attrs *a = w->attrs;
    size_t r, j = 0;
    int rc;

    if (!a || n == 0)
        return TROVE_OK;
    r = trove_attrs_find(a, w->out_index[0]);
    if (r == a->n || a->rows[r].event > w->out_index[n - 1])
        return TROVE_OK;
    w->part.n = 0;
    while (r < a->n && a->rows[r].event <= w->out_index[n - 1]) {
        uint64_t ev = a->rows[r].event;
        size_t r2 = r + 1;
        while (r2 < a->n && a->rows[r2].event == ev)
            r2++;
        while (j < n && w->out_index[j] < ev)
            j++;
        if (j < n && w->out_index[j] == ev &&
            (rc = trove_attrs_append(&w->part, a, r, r2, j, ev)) != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "capture %s: the rows of event %" PRIu64 ": %s",
                              w->name, ev, trove_strerror(rc));
        r = r2;
    }
    if (w->part.n && (rc = trove_attrs_wire_encode(&w->part, &w->pend)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: an attrs frame of %zu rows: %s", w->name,
                          w->part.n, trove_strerror(rc));
    return TROVE_OK;
}

/* Fill diag with "capture NAME: WHAT (object HEX): <message>" at offset; return code. */
static int fail(const struct trove__capture_walk *w, struct trove_diag *diag, int code,
                uint64_t offset, const char *what, const struct trove_digest *d, const char *fmt,
                ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 7, 8)))
#endif
    ;

static int fail(const struct trove__capture_walk *w, struct trove_diag *diag, int code,
                uint64_t offset, const char *what, const struct trove_digest *d, const char *fmt,
                ...)
{
    char msg[sizeof diag->msg], hex[33] = "none";
    va_list ap;
    if (!diag)
        return code;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (d && !trove_digest_is_zero(d))
        trove_digest_hex(d, hex);
    return TROVE_FAIL(diag, code, offset, "capture %s: %s (object %s): %s", w->name, what, hex,
                      msg);
}

/* "names (slot 1)", or "names part j of K (slot N)" for a capture of K parts. */
static void names_what(const struct trove__capture_walk *w, uint32_t j, char *what, size_t size)
{
    const uint32_t parts = trove__capture_parts(w->h);
    const uint64_t slot = trove__capture_names_slot(w->h->info.segments, w->h->info.flows, j);

    if (parts > 1)
        snprintf(what, size, "names part %" PRIu32 " of %" PRIu32 " (slot %" PRIu64 ")", j,
                 parts, slot);
    else
        snprintf(what, size, "names (slot %" PRIu64 ")", slot);
}

int trove__capture_walk_names(struct trove__capture_walk *w, uint32_t j,
                              const struct trove_digest *d, const uint8_t *data, size_t len,
                              trove__capture_emit_fn emit, void *ctx, struct trove_diag *diag)
{
    struct trove_wire_frame fr;
    struct trove_wire_header wh;
    struct trove_diag why = {0};
    uint64_t entries = 0, want_len, want_entries;
    size_t at = 0;
    char what[80];
    int rc;

    if (j >= trove__capture_parts(w->h))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "capture %s: no names part %" PRIu32,
                          w->name, j);
    names_what(w, j, what, sizeof what);
    want_len = trove__capture_part_bytes(w->h, j);
    want_entries = trove__capture_part_entries(w->h, j);
    if (!data || len == 0)
        return fail(w, diag, TROVE_ERR_CORRUPT, 0, what, d,
                    "the slot is empty; a capture always has a names object");
    if (len != want_len)
        return fail(w, diag, TROVE_ERR_CORRUPT, 0, what, d,
                    "the object is %zu bytes; the header says %" PRIu64, len, want_len);
    while (at < len) {
        struct trove_stream_batch b;
        rc = trove_wire_decode(w->dec, data + at, len - at, w->ev, TROVE_WIRE_MAX_EVENTS, NULL,
                               &fr, &why);
        if (rc != TROVE_OK)
            return fail(w, diag, rc, at + why.offset, what, d,
                        "frame at byte %zu: %s", at, why.msg[0] ? why.msg : trove_strerror(rc));
        if (fr.format != TROVE_WIRE_NAMES)
            return fail(w, diag, TROVE_ERR_CORRUPT, at, what, d,
                        "frame at byte %zu is a %s frame, not names", at,
                        trove_wire_format_name(fr.format));
        (void)trove_wire_parse_header(data + at, len - at, &wh, NULL); /* decoded: valid */
        entries += wh.count;
        memset(&b, 0, sizeof b);
        b.data = data + at;
        b.len = fr.frame_len;
        if ((rc = emit(ctx, &b)) != TROVE_OK)
            return rc;
        at += fr.frame_len;
    }
    if (entries != want_entries)
        return fail(w, diag, TROVE_ERR_CORRUPT, len, what, d,
                    "the frames hold %" PRIu64 " entries; the header says %" PRIu64, entries,
                    want_entries);
    return TROVE_OK;
}

/* Emit the re-encoded frames waiting in w->pend as one batch (none: nothing). */
static int emit_pending(struct trove__capture_walk *w, trove__capture_emit_fn emit, void *ctx)
{
    struct trove_stream_batch b;

    if (w->pend.len == 0)
        return TROVE_OK;
    memset(&b, 0, sizeof b);
    b.data = w->pend.ptr;
    b.len = w->pend.len;
    b.events = w->pend_events;
    b.owned = w->pend.ptr; /* emit takes it over, whatever it returns */
    memset(&w->pend, 0, sizeof w->pend);
    w->pend_events = 0;
    return emit(ctx, &b);
}

/* Encode the n events of w->out as one frame of w->wire, after the pending frames (emitted
 * first if the frame would take their batch past TROVE_CAPTURE_BATCH_EVENTS). */
static int flush(struct trove__capture_walk *w, size_t n, trove__capture_emit_fn emit, void *ctx,
                 struct trove_diag *diag)
{
    int rc;

    if (n == 0)
        return TROVE_OK;
    if (w->pend_events > 0 && w->pend_events + n > TROVE_CAPTURE_BATCH_EVENTS &&
        (rc = emit_pending(w, emit, ctx)) != TROVE_OK)
        return rc;
    if ((rc = attrs_frame(w, n, diag)) != TROVE_OK)
        return rc;
    if ((rc = trove_wire_encode(w->enc, w->wire, w->out, n, &w->pend)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: re-encoding %zu events: %s", w->name, n,
                          trove_strerror(rc));
    w->pend_events += n;
    return TROVE_OK;
}

/* Emit the stored frames data[from, to) holding n events as one batch, aliasing the object
 * (none: nothing). */
static int emit_run(const uint8_t *data, size_t from, size_t to, uint64_t n,
                    trove__capture_emit_fn emit, void *ctx)
{
    struct trove_stream_batch b;

    if (to == from)
        return TROVE_OK;
    memset(&b, 0, sizeof b);
    b.data = data + from;
    b.len = to - from;
    b.events = n;
    return emit(ctx, &b);
}

int trove__capture_walk_segment(struct trove__capture_walk *w, uint64_t k,
                                const struct trove_digest *d, const uint8_t *data, size_t len,
                                trove__capture_emit_fn emit, void *ctx, struct trove_diag *diag)
{
    const struct trove_capture_segment *g = &w->h->seg[k];
    const int columnar = (w->h->info.flags & TROVE_CAPTURE_FLAG_COLUMNAR) != 0;
    const int model = (w->h->info.flags & TROVE_CAPTURE_FLAG_MODEL) != 0;
    const int as_is = w->wire == TROVE_WIRE_DEFLATE && w->frame_events == w->h->frame_events &&
                      !columnar && !model && segment_inside(w, k) && !segment_has_rows(w, k);
    struct trove_diag why = {0};
    uint64_t events = 0, frames = 0, run_events = 0;
    size_t at = 0, nout = 0, run_at = 0; /* as_is: the frames [run_at, at) not yet emitted */
    char what[64];
    int rc;

    snprintf(what, sizeof what, "segment %" PRIu64 " (slot %" PRIu64 ")", k,
             k + TROVE__CAPTURE_SLOT_SEGMENT0);
    w->pend.len = 0; /* a failed walk may have left frames */
    w->pend_events = 0;
    if (!data || len == 0)
        return fail(w, diag, TROVE_ERR_CORRUPT, 0, what, d, "the slot is empty");
    if (len != g->bytes)
        return fail(w, diag, TROVE_ERR_CORRUPT, 0, what, d,
                    "the object is %zu bytes; the header says %" PRIu32, len, g->bytes);
    while (at < len) {
        struct trove_wire_frame fr = {0};
        size_t flen, cnt;
        if (frames == g->frames)
            return fail(w, diag, TROVE_ERR_CORRUPT, at, what, d,
                        "bytes follow its %" PRIu32 " frames at byte %zu", g->frames, at);
        /* The fast path reads only the frame's header; the other decodes the frame. */
        if (as_is) {
            struct trove_wire_header wh;
            if ((rc = trove_wire_parse_header(data + at, len - at, &wh, &why)) == TROVE_OK) {
                fr.format = wh.format;
                fr.n_events = wh.count;
                fr.frame_len = TROVE_WIRE_HEADER_SIZE + (size_t)wh.payload_len;
            }
        } else {
            rc = trove_wire_decode(w->dec, data + at, len - at, w->ev, TROVE_WIRE_MAX_EVENTS,
                                   NULL, &fr, &why);
        }
        if (rc != TROVE_OK)
            return fail(w, diag, rc, at + why.offset, what, d, "frame at byte %zu: %s", at,
                        why.msg[0] ? why.msg : trove_strerror(rc));
        if (fr.format != TROVE_WIRE_DEFLATE && !(columnar && fr.format == TROVE_WIRE_COLUMNAR) &&
            !(model && fr.format == TROVE_WIRE_MODEL))
            return fail(w, diag, TROVE_ERR_CORRUPT, at, what, d, "frame at byte %zu is %s, not %s",
                        at, trove_wire_format_name(fr.format),
                        columnar ? "deflate or columnar" : model ? "deflate or model" : "deflate");
        flen = fr.frame_len;
        cnt = fr.n_events;
        if (flen > len - at)
            return fail(w, diag, TROVE_ERR_TRUNCATED, len, what, d,
                        "frame at byte %zu needs %zu bytes; the object has %zu left", at, flen,
                        len - at);
        if (cnt == 0 || cnt > w->h->frame_events || events + cnt > g->events)
            return fail(w, diag, TROVE_ERR_CORRUPT, at + 4, what, d,
                        "frame at byte %zu holds %zu events; the header allows 1 to %" PRIu32
                        " a frame and %" PRIu32 " in the segment",
                        at, cnt, w->h->frame_events, g->events);
        if (as_is) {
            if (run_events > 0 && run_events + cnt > TROVE_CAPTURE_BATCH_EVENTS) {
                if ((rc = emit_run(data, run_at, at, run_events, emit, ctx)) != TROVE_OK)
                    return rc;
                run_at = at;
                run_events = 0;
            }
            run_events += cnt;
        } else {
            for (size_t i = 0; i < cnt; i++) {
                const struct trove_event *e = &w->ev[i];
                uint64_t end = trove_event_end(e);
                if (e->start_ns < g->min_start_ns || e->start_ns > g->max_start_ns ||
                    end > g->max_end_ns)
                    return fail(w, diag, TROVE_ERR_CORRUPT, at, what, d,
                                "event %" PRIu64 " (start %" PRIu64 ", end %" PRIu64 ") lies "
                                "outside the segment's times in the header",
                                events + i, e->start_ns, end);
                if (!starts_in(w, e->start_ns) || seg_first(w, k) + events + i < w->from_event)
                    continue;
                if (w->out_index)
                    w->out_index[nout] = seg_first(w, k) + events + i;
                w->out[nout++] = *e;
                if (nout == w->frame_events) {
                    if ((rc = flush(w, nout, emit, ctx, diag)) != TROVE_OK)
                        return rc;
                    nout = 0;
                }
            }
        }
        events += cnt;
        frames++;
        at += flen;
    }
    if (events != g->events || frames != g->frames)
        return fail(w, diag, TROVE_ERR_CORRUPT, len, what, d,
                    "the object holds %" PRIu64 " events in %" PRIu64 " frames; the header "
                    "says %" PRIu32 " in %" PRIu32,
                    events, frames, g->events, g->frames);
    if (as_is)
        return emit_run(data, run_at, at, run_events, emit, ctx);
    if ((rc = flush(w, nout, emit, ctx, diag)) != TROVE_OK)
        return rc;
    return emit_pending(w, emit, ctx);
}

/* ---- the stream's decoder ---------------------------------------------------------------- */

struct replay {
    struct trove__capture_walk w;
    uint32_t parts;      /* items 0 .. parts - 1 are the names parts */
    const uint64_t *seg; /* item i >= parts is segment seg[i - parts] */
};

static int stream_emit(void *ctx, const struct trove_stream_batch *b)
{
    return trove_stream_emit(ctx, b);
}

static int replay_decode(void *ctx, const struct trove_stream_object *obj,
                         struct trove_stream_emitter *em, struct trove_diag *diag)
{
    struct replay *r = ctx;
    if (obj->item < r->parts)
        return trove__capture_walk_names(&r->w, (uint32_t)obj->item, obj->digest, obj->data,
                                         obj->len, stream_emit, em, diag);
    return trove__capture_walk_segment(&r->w, r->seg[obj->item - r->parts], obj->digest,
                                       obj->data, obj->len, stream_emit, em, diag);
}

/* Stream item `item`'s object could not be read: say which, segment or names part, by the
 * capture's own numbers (the stream knows only its items). */
static int read_failed(const struct replay *r, uint64_t item, const struct trove_digest *d,
                       int rc, struct trove_diag *diag)
{
    const struct trove__capture_walk *w = &r->w;
    uint64_t k = item < r->parts ? 0 : r->seg[item - r->parts];
    char what[96];
    const char *why;

    if (item < r->parts)
        names_what(w, (uint32_t)item, what, sizeof what);
    else
        snprintf(what, sizeof what, "segment %" PRIu64 " (slot %" PRIu64 ")", k,
                 (uint64_t)TROVE__CAPTURE_SLOT_SEGMENT0 + k);
    why = rc == TROVE_ERR_CHECKSUM ? "its stored bytes do not hash to its name: the object is "
                                     "damaged (`trove verify --deep` lists every damaged one)"
          : rc == TROVE_ERR_NOTFOUND ? "missing from the store after every retry; is the store "
                                       "complete?"
                                     : trove_strerror(rc);
    return fail(w, diag, rc, 0, what, d, "%s", why);
}

int trove_capture_replay(struct trove_store *s, const char *name, struct trove_stream *st,
                         const struct trove_capture_replay_options *opt,
                         const struct trove_stream_sink *sink, struct trove_stream_stats *stats,
                         struct trove_diag *diag)
{
    struct trove_capture_header h;
    struct trove_volume *v = NULL;
    struct trove_digest *dig = NULL;
    struct trove_stream_decoder dec;
    struct replay r;
    struct trove_stream_stats own;
    uint64_t *seg = NULL, n = 0, segments;
    uint32_t parts;
    int rc;

    memset(&h, 0, sizeof h);
    memset(&r, 0, sizeof r);
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!s || !st || !opt || !sink || !sink->send) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "replay needs a store, a stream, options and a sink");
        goto out;
    }
    TROVE_TRY(rc, trove_volume_name_check(name, diag));
    rc = trove_volume_open(s, name, &v, diag);
    if (rc == TROVE_ERR_NOTFOUND) {
        rc = TROVE_FAIL(diag, rc, 0, "no capture named %s in the store", name);
        goto out;
    }
    if (rc != TROVE_OK)
        goto out;
    TROVE_TRY(rc, trove__capture_read_header(v, name, &h, diag));
    TROVE_TRY(rc, trove__capture_walk_init(&r.w, name, &h, opt, diag));

    /* The digests of the names parts (slot 1, then the slots after the segments and the
     * flows) and of every segment, in that order, then only the picked segments kept.
     * segments <= 2^18 and parts <= 32 (the header decoder): bounded. */
    segments = h.info.segments;
    parts = trove__capture_parts(&h);
    if (!(dig = trove__malloc((size_t)(parts + segments) * sizeof *dig)) ||
        (segments > 0 && !(seg = trove__malloc((size_t)segments * sizeof *seg)))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    rc = trove_volume_slot_digests(v, TROVE__CAPTURE_SLOT_NAMES, 1, dig);
    if (rc == TROVE_OK && parts > 1)
        rc = trove_volume_slot_digests(v, trove__capture_names_slot(segments, h.info.flows, 1),
                                       parts - 1, dig + 1);
    if (rc == TROVE_OK && segments > 0)
        rc = trove_volume_slot_digests(v, TROVE__CAPTURE_SLOT_SEGMENT0, segments, dig + parts);
    if (rc != TROVE_OK) {
        rc = TROVE_FAIL(diag, rc, 0,
                        "capture %s: its volume has fewer slots than its %" PRIu64
                        " segments and %" PRIu32 " names objects need",
                        name, segments, parts);
        goto out;
    }
    n = parts;
    for (uint64_t k = 0; k < segments; k++) {
        if (!trove__capture_segment_overlaps(&r.w, k))
            continue;
        seg[n - parts] = k;
        dig[n++] = dig[parts + k];
    }
    trove_volume_close(v);
    v = NULL;

    r.parts = parts;
    r.seg = seg;
    dec.decode = replay_decode;
    dec.ctx = &r;
    if (!stats)
        stats = &own;
    rc = trove_stream_run(st, dig, TROVE__CAPTURE_SLOT_NAMES, n, &dec, sink, stats, diag);
    if (rc != TROVE_OK && stats->read_failed && stats->read_item < n)
        rc = read_failed(&r, stats->read_item, &dig[stats->read_item], rc, diag);
out:
    trove_volume_close(v);
    trove__capture_walk_free(&r.w);
    trove_capture_header_free(&h);
    free(dig);
    free(seg);
    return rc;
}
