/*
 * capture_live.c: a capture written batch by batch (trove_capture_writer_*, include/trove/
 * capture.h), as `trove serve` spools one: the capture volume of docs/formats/capture.md,
 * committed as often as the caller likes, each commit durable and atomic (the volume's).
 *
 * The writer keeps the capture's last segment as it grows:
 *
 *   cur, seg     its complete frames, encoded (seg) and counted (cur: events, frames, bytes,
 *                times), exactly as trove_capture_write encodes a segment frame by frame;
 *   frame        the raw events of the frame being filled (at most frame_events).
 *
 * A frame is encoded when it fills (frame_events events, or the segment's last), and a
 * segment is put into its slot as soon as its last frame is: segment k holds events
 * [kE, kE + E), frames are cut from each segment's start, and every frame is encoded alone,
 * so building a segment frame by frame makes the bytes the one-shot write makes. A commit
 * puts the partial last segment as its complete frames and the frame being filled (encoded
 * into a copy that is dropped after the put, so the frame goes on filling), the names parts
 * a merge may have changed (put_names: the last part when names were only added), and the
 * header (the shared steps of capture.c), after the volume was resized to 2 + S slots and
 * the parts' and the profile's after them; then the volume's commit makes them visible at
 * once. A partial segment (and the last names part) is thus re-put as it grows (the object
 * it replaces is gc's). Memory: one frame of events, one segment's frames, one names part,
 * the header's index and the names, whatever the capture's length.
 *
 * The volume is open only while the writer holds uncommitted objects (from a full segment's
 * put, or a commit's start, to the commit), so that other opens through the same store
 * handle read the last commit between. Each time it is opened again its recipe's generation
 * must be the one the writer's last commit (or open) saw: otherwise someone else committed
 * or removed the capture and the writer's picture of it is stale (TROVE_ERR_MISMATCH).
 *
 * Append reads the capture back: the header (as every reader), the names parts through
 * replay's walk (every frame checked, each part's length and entries against the header's
 * part table, then no key twice, so that the table's entries are the parts'), and the partial
 * last segment through the walk as raw frames (length, frame and event counts, each event
 * within its entry's times), whose events go back into the frame buffer as if just added;
 * and the last profile object, unless sealed, which samples frames added then go on.
 */
#include "capture_internal.h"
#include "summary_internal.h"
#include "trove/attrs.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct trove_capture_writer {
    struct trove__capture_vol vol;  /* vol.v: NULL while nothing is uncommitted */
    char name[TROVE_VOLUME_NAME_MAX + 1];
    uint64_t per;                   /* events per segment, E */
    uint32_t fe;                    /* events per frame, F */
    int format;                     /* the segments' frames: DEFLATE or a format 5 one */
    int counters;                   /* a counter event is in the capture: header v2 */
    int events_dirty;               /* events added since the last commit */
    int drafted;                    /* the stored incomplete summary nodes may be drafts */
    int sticky;                     /* the error that stopped the writer, or 0 */
    uint64_t generation;            /* the recipe's, at the last commit (or the open) */
    uint64_t slots;                 /* vol.v's slots, while it is open */
    uint64_t events, committed;
    uint64_t full;                  /* full segments, h.seg[0..full), all put */
    struct trove_capture_header h;  /* h.seg holds cap_seg entries */
    uint64_t cap_seg;
    uint64_t opened_events; /* an append's: the events the capture had */
    struct trove_capture_info info; /* as of the last commit */
    struct trove_capture_segment cur; /* segment `full`'s complete frames ... */
    struct trove_bytes seg;           /* ... and their encoding */
    struct trove_event *frame;        /* the frame being filled: nframe of fe events */
    size_t nframe;
    struct trove_names *names;
    /* The names as the last commit (or the open) stored them: nparts parts, part j holding
     * entries [sum of parts[0..j).entries, + parts[j].entries) (nparts 0: none yet); and
     * what changed since: names_from, the least entry a merge changed or added (NAMES_SAME:
     * none), names_committed, the entries the last commit stored. */
    struct trove_capture_names_part parts[TROVE_CAPTURE_MAX_NAMES_PARTS];
    uint32_t nparts;
    size_t names_from, names_committed;
    struct trove_wire_encoder *enc;
    struct trove_bytes buf;         /* scratch: the header, a names part */
    /* The volume's layout as the writer keeps it: header, names part 0, seg_slots segment
     * slots, name_slots names parts past the first, prof_slots profile objects. A segment
     * slot added moves the names parts' and the profile's slots up, a names part added the
     * profile's. */
    uint64_t seg_slots, name_slots, prof_slots;
    uint64_t c_seg_slots, c_name_slots, c_prof_slots; /* ... as of the last commit (or open) */
    /* The profile (trove_capture_writer_samples): prof_sealed objects put for good
     * (prof_sealed_bytes), and the last one, prof_cur, rewritten at each commit. */
    uint64_t prof_sealed, prof_sealed_bytes, samples, switches;
    struct trove_bytes prof_cur;
    int prof_dirty;
    /* Summaries (docs/formats/summary.md): the last segment's events as they come (segev),
     * the tree over the full segments, and the objects of the summary slots, which follow
     * the profile's: sum_dig[0 .. sum_done) the complete nodes (stored as their segments
     * filled), and at a commit the incomplete ones after them. Their slots shift whenever a
     * segment is added, so they are only pointed at their objects at a commit, each once.
     * sum_on 0: the capture gets none (asked so, an append to a capture without them, or
     * with a damaged one). */
    struct trove_event *segev;
    int sum_on;
    struct trove__sumtree tree;
    struct trove_digest *sum_dig;
    uint64_t sum_done, sum_cap, sum_n;  /* complete; room; at a commit, all */
    uint64_t sum_done_bytes, sum_bytes; /* the complete nodes' bytes; all of them, at a commit */
    /* Attributes (flag ATTRS): attrs_on once rows came (or the capture read back has them).
     * Each full segment's object is stored as it fills (attr_dig[0 .. full): its rows, done_*
     * counts them), the last segment's rows (acur, events from its first) are encoded at
     * each commit, and the trace's object follows (meta_dig, an append's; else an empty
     * table's). Their slots follow the profile's and shift as segments are added: as the
     * summaries', they are pointed at their objects only at a commit. */
    int attrs_on, have_meta;
    struct trove_attrs acur;
    struct trove_digest *attr_dig, meta_dig;
    uint64_t attr_cap, attr_done_rows, attr_done_bytes, meta_rows, meta_bytes;
};

/* A profile object is sealed (no more frames go into it) once it holds this much. */
#define PROFILE_OBJECT_BYTES ((size_t)1 << 20)
#define NAMES_SAME SIZE_MAX /* names_from: no entry changed since the last commit */

static int stop(struct trove_capture_writer *w, int rc)
{
    if (rc < 0 && !w->sticky)
        w->sticky = rc;
    return rc;
}

/* h.seg with room for `need` entries (doubling). */
static int reserve_seg(struct trove_capture_writer *w, uint64_t need, struct trove_diag *diag)
{
    struct trove_capture_segment *p;
    uint64_t cap = w->cap_seg ? w->cap_seg : 16;

    if (need <= w->cap_seg)
        return TROVE_OK;
    while (cap < need)
        cap *= 2;
    if (cap > TROVE_CAPTURE_MAX_SEGMENTS)
        cap = TROVE_CAPTURE_MAX_SEGMENTS;
    assert(need <= cap);
    if (!(p = trove__realloc(w->h.seg, (size_t)cap * sizeof *p)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    w->h.seg = p;
    w->cap_seg = cap;
    return TROVE_OK;
}

/* The volume (open) with at least `slots` slots. */
static int ensure_slots(struct trove_capture_writer *w, uint64_t slots, struct trove_diag *diag)
{
    int rc;

    if (slots <= w->slots)
        return TROVE_OK;
    if ((rc = trove_volume_resize(w->vol.v, slots * w->vol.block)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: resizing to %" PRIu64 " slots: %s", w->name,
                          slots, trove_strerror(rc));
    w->slots = slots;
    return TROVE_OK;
}

/* The volume open with at least `slots` slots: opened again if it was closed, and checked
 * to be the capture this writer last committed (or opened). */
static int open_volume(struct trove_capture_writer *w, uint64_t slots, struct trove_diag *diag)
{
    struct trove_volume_info vi;
    int rc;

    if (!w->vol.v) {
        rc = trove_volume_open(w->vol.s, w->name, &w->vol.v, diag);
        if (rc == TROVE_ERR_NOTFOUND)
            return TROVE_FAIL(diag, TROVE_ERR_MISMATCH, 0,
                              "capture %s was removed while it was being written", w->name);
        if (rc != TROVE_OK)
            return rc;
        if ((rc = trove_volume_info(w->vol.v, &vi)) != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "capture %s: %s", w->name, trove_strerror(rc));
        if (vi.generation != w->generation || !vi.objects) {
            trove_volume_close(w->vol.v); /* the other writer's: not held */
            w->vol.v = NULL;
            return TROVE_FAIL(diag, TROVE_ERR_MISMATCH, 0,
                              "capture %s changed while it was being written (its recipe "
                              "is at generation %" PRIu64 ", this writer's at %" PRIu64
                              "): another write replaced it; its events since the last "
                              "commit are lost",
                              w->name, vi.generation, w->generation);
        }
        w->vol.block = vi.block_size;
        w->slots = vi.slots;
        w->seg_slots = w->c_seg_slots;
        w->name_slots = w->c_name_slots;
        w->prof_slots = w->c_prof_slots;
    }
    return ensure_slots(w, slots, diag);
}

/* Move the n slots from `from` on to `to` on (their objects stay where they are; only the
 * slots are renamed), in an order that never overwrites one before it moved. */
static int move_slots(struct trove_capture_writer *w, uint64_t from, uint64_t to, uint64_t n,
                      const char *what, struct trove_diag *diag)
{
    int rc = TROVE_OK;

    for (uint64_t i = 0; i < n && rc == TROVE_OK; i++) {
        uint64_t j = to > from ? n - 1 - i : i;
        rc = trove_volume_copy_slot(w->vol.v, from + j, to + j);
    }
    if (rc != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: moving the %s: %s", w->name, what,
                          trove_strerror(rc));
    return TROVE_OK;
}

/* The volume (open) with `segments` segment slots: the names parts' and the profile's
 * slots, after them, move up. */
static int segment_slots(struct trove_capture_writer *w, uint64_t segments,
                         struct trove_diag *diag)
{
    uint64_t from = TROVE__CAPTURE_SLOT_SEGMENT0 + w->seg_slots;
    int rc;

    if (segments <= w->seg_slots)
        return TROVE_OK;
    if ((rc = ensure_slots(w, TROVE__CAPTURE_SLOT_SEGMENT0 + segments + w->name_slots +
                                  w->prof_slots,
                           diag)) != TROVE_OK ||
        (rc = move_slots(w, from, from + segments - w->seg_slots, w->name_slots + w->prof_slots,
                         "names parts and profile objects", diag)) != TROVE_OK)
        return rc;
    w->seg_slots = segments;
    return TROVE_OK;
}

/* The volume (open) with `n` names parts past the first: the profile's slots, after them,
 * move up or down. */
static int part_slots(struct trove_capture_writer *w, uint64_t n, struct trove_diag *diag)
{
    uint64_t from = TROVE__CAPTURE_SLOT_SEGMENT0 + w->seg_slots + w->name_slots;
    uint64_t to = TROVE__CAPTURE_SLOT_SEGMENT0 + w->seg_slots + n;
    int rc;

    if (n == w->name_slots)
        return TROVE_OK;
    if ((rc = ensure_slots(w, to + w->prof_slots, diag)) != TROVE_OK ||
        (rc = move_slots(w, from, to, w->prof_slots, "profile objects", diag)) != TROVE_OK)
        return rc;
    w->name_slots = n;
    return TROVE_OK;
}

/* A summary node's object, stored now and named later: complete ones as their segments
 * fill, then at a commit the incomplete ones (summary.md: the slots are in the order they
 * come). */
static int sum_put(void *ctx, unsigned level, uint64_t index, const uint8_t *p, size_t len,
                   struct trove_diag *diag)
{
    struct trove_capture_writer *w = ctx;
    int rc;

    (void)level;
    (void)index;
    if (w->sum_n == w->sum_cap) {
        uint64_t cap = w->sum_cap ? 2 * w->sum_cap : 64;
        struct trove_digest *d = trove__realloc(w->sum_dig, (size_t)cap * sizeof *d);
        if (!d)
            return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        w->sum_dig = d;
        w->sum_cap = cap;
    }
    if ((rc = trove__capture_stage(&w->vol, p, len, &w->sum_dig[w->sum_n], diag)) != TROVE_OK)
        return rc;
    w->sum_n++;
    w->sum_bytes += len;
    return TROVE_OK;
}

/* Segment `full` (its events in segev) is complete: its node, and every node it completes. */
static int seal_summary(struct trove_capture_writer *w, struct trove_diag *diag)
{
    struct trove_summary leaf;
    int rc;

    if (!w->sum_on)
        return TROVE_OK;
    if ((rc = trove_summary_build(w->segev, (size_t)w->per, &leaf)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: summarizing segment %" PRIu64 ": %s",
                          w->name, w->full, trove_strerror(rc));
    w->sum_n = w->sum_done; /* a commit's incomplete ones, if any, are not kept */
    w->sum_bytes = w->sum_done_bytes;
    rc = trove__sumtree_seal(&w->tree, &leaf, sum_put, w, diag);
    trove_summary_free(&leaf);
    if (rc == TROVE_OK) {
        w->sum_done = w->sum_n;
        w->sum_done_bytes = w->sum_bytes;
    }
    return rc;
}

/* Room for the attributes digests of `segments` segments. */
static int attr_room(struct trove_capture_writer *w, uint64_t segments, struct trove_diag *diag)
{
    if (segments > w->attr_cap) {
        uint64_t cap = w->attr_cap ? w->attr_cap : 64;
        struct trove_digest *d;
        while (cap < segments)
            cap *= 2;
        if (!(d = trove__realloc(w->attr_dig, (size_t)cap * sizeof *d)))
            return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        w->attr_dig = d;
        w->attr_cap = cap;
    }
    return TROVE_OK;
}

/* Rows a (NULL: none) as an attributes object staged in the store: its digest and bytes. */
static int attr_stage(struct trove_capture_writer *w, const struct trove_attrs *a,
                      struct trove_digest *d, uint64_t *bytes, struct trove_diag *diag)
{
    static const struct trove_attrs none;
    int rc;

    w->buf.len = 0;
    if ((rc = trove_attrs_encode(a ? a : &none, 0, &w->buf)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: encoding attributes: %s", w->name,
                          trove_strerror(rc));
    if (w->buf.len > TROVE_CAPTURE_MAX_OBJECT)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                          "capture %s: a segment's attributes take %zu bytes, over the %" PRIu32
                          " an object holds",
                          w->name, w->buf.len, TROVE_CAPTURE_MAX_OBJECT);
    *bytes = w->buf.len;
    return trove__capture_stage(&w->vol, w->buf.ptr, w->buf.len, d, diag);
}

/* Segment `full` is complete: its attributes object stored, the next segment's rows begun. */
static int seal_attrs(struct trove_capture_writer *w, struct trove_diag *diag)
{
    uint64_t bytes;
    int rc;

    if (!w->attrs_on)
        return TROVE_OK;
    if ((rc = attr_room(w, w->full + 1, diag)) != TROVE_OK ||
        (rc = attr_stage(w, &w->acur, &w->attr_dig[w->full], &bytes, diag)) != TROVE_OK)
        return rc;
    w->attr_done_rows += w->acur.n;
    w->attr_done_bytes += bytes;
    trove_attrs_free(&w->acur);
    return TROVE_OK;
}

/* Segment `full` is complete: put it, keep its entry, start the next. */
static int put_full(struct trove_capture_writer *w, struct trove_diag *diag)
{
    uint64_t slot = TROVE__CAPTURE_SLOT_SEGMENT0 + w->full;
    int rc;

    if ((rc = reserve_seg(w, w->full + 1, diag)) != TROVE_OK ||
        (rc = open_volume(w, slot + 1 + w->name_slots + w->prof_slots, diag)) != TROVE_OK ||
        (rc = segment_slots(w, w->full + 1, diag)) != TROVE_OK ||
        (rc = trove__capture_put(&w->vol, slot, w->seg.ptr, w->seg.len, diag)) != TROVE_OK ||
        (rc = seal_summary(w, diag)) != TROVE_OK || (rc = seal_attrs(w, diag)) != TROVE_OK)
        return rc;
    w->h.seg[w->full++] = w->cur;
    memset(&w->cur, 0, sizeof w->cur);
    w->seg.len = 0;
    return TROVE_OK;
}

/* Take events[0..n) (checked) into the last segment, encoding each frame that fills and
 * putting each segment that does. An error leaves the writer inconsistent: sticky. */
static int take(struct trove_capture_writer *w, const struct trove_event *events, size_t n,
                struct trove_diag *diag)
{
    size_t i = 0;
    int rc;

    while (i < n) {
        uint64_t in_seg = w->cur.events + w->nframe;
        size_t k = n - i;
        if (k > w->fe - w->nframe)
            k = w->fe - w->nframe;
        if (k > w->per - in_seg)
            k = (size_t)(w->per - in_seg);
        memcpy(w->frame + w->nframe, events + i, k * sizeof *events);
        memcpy(w->segev + in_seg, events + i, k * sizeof *events);
        w->nframe += k;
        w->events += k;
        i += k;
        if (w->nframe == w->fe || w->cur.events + w->nframe == w->per) {
            rc = trove__capture_segment_frame(w->enc, w->format, w->frame, w->nframe, &w->seg,
                                              &w->cur, w->name, w->full, diag);
            if (rc != TROVE_OK)
                return stop(w, rc);
            w->nframe = 0;
        }
        if (w->cur.events == w->per && (rc = put_full(w, diag)) != TROVE_OK)
            return stop(w, rc);
    }
    w->events_dirty |= n > 0;
    return TROVE_OK;
}

/* ---- reading an existing capture back (append) ------------------------------------------ */

struct readback {
    struct trove_capture_writer *w;
    struct trove_wire_decoder *dec;
    struct trove_event *ev; /* fe events: one raw frame of the walk */
    struct trove_diag *diag;
};

/* A names frame the walk checked: into the writer's names. */
static int readback_names(void *ctx, const struct trove_stream_batch *b)
{
    struct readback *r = ctx;
    struct trove_wire_frame fr;
    int rc = trove_wire_decode(r->dec, b->data, b->len, r->ev, 0, r->w->names, &fr, r->diag);
    free(b->owned);
    return rc;
}

/* Raw frames of the walk's checked events: taken as if added. */
static int readback_events(void *ctx, const struct trove_stream_batch *b)
{
    struct readback *r = ctx;
    const uint8_t *p = b->data;
    size_t at = 0;
    int rc = TROVE_OK;

    while (rc == TROVE_OK && at < b->len) {
        struct trove_wire_frame fr;
        rc = trove_wire_decode(r->dec, p + at, b->len - at, r->ev, r->w->fe, NULL, &fr, r->diag);
        if (rc != TROVE_OK)
            break;
        rc = take(r->w, r->ev, fr.n_events, r->diag);
        at += fr.frame_len;
    }
    free(b->owned);
    return rc;
}

/* Read object `slot` of the capture into out, diag naming it as `what`. */
static int read_object(struct trove_capture_writer *w, uint64_t slot, const char *what,
                       struct trove_digest *d, struct trove_bytes *out, struct trove_diag *diag)
{
    char hex[33] = "none";
    int rc;

    if ((rc = trove_volume_slot_digests(w->vol.v, slot, 1, d)) != TROVE_OK ||
        (rc = trove_volume_get_object(w->vol.v, slot, out)) != TROVE_OK) {
        if (rc != TROVE_ERR_INVALID && !trove_digest_is_zero(d))
            trove_digest_hex(d, hex);
        return TROVE_FAIL(diag, rc, 0, "capture %s: %s (slot %" PRIu64 ") (object %s): %s",
                          w->name, what, slot, hex,
                          rc == TROVE_ERR_CHECKSUM
                              ? "its stored bytes do not hash to its name: the object is "
                                "damaged (`trove verify --deep` lists every damaged one)"
                          : rc == TROVE_ERR_INVALID ? "the volume has fewer slots than the "
                                                      "header's segments need"
                                                    : trove_strerror(rc));
    }
    return TROVE_OK;
}

/*
 * The tree of the full segments of the capture read back (w->full of them, their nodes in
 * the volume): the last level-1 node's complete children rebuilt from their segments (a
 * level-0 object keeps no sketches), each higher level's from the complete nodes below it.
 */
static int restore_tree(struct trove_capture_writer *w, struct trove_wire_decoder *dec,
                        struct trove_bytes *obj, struct trove_diag *diag)
{
    const struct trove_capture_header *h = &w->h;
    uint64_t sealed = trove__summary_sealed(h), first = trove__capture_summary_slot(h);
    uint64_t span = 1;
    struct trove_event *ev = NULL;
    int rc = TROVE_OK;

    w->tree.per = w->per;
    if (!(ev = trove__mallocarray((size_t)w->per, sizeof *ev)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    for (uint64_t k = sealed / TROVE_SUMMARY_FANOUT * TROVE_SUMMARY_FANOUT; k < sealed; k++) {
        struct trove_summary leaf;
        size_t n;
        if ((rc = trove__summary_read_segment(w->vol.v, h, w->name, k, dec, obj, ev,
                                              (size_t)w->per, &n, diag)) != TROVE_OK)
            goto out;
        if ((rc = trove_summary_build(ev, n, &leaf)) != TROVE_OK ||
            (rc = trove__sumtree_restore(&w->tree, 1, &leaf, k % TROVE_SUMMARY_FANOUT)) != TROVE_OK) {
            trove_summary_free(&leaf);
            rc = TROVE_FAIL(diag, rc, 0, "out of memory");
            goto out;
        }
    }
    for (unsigned l = 2; l < TROVE__SUMMARY_MAX_LEVELS; l++) {
        uint64_t n;
        span *= TROVE_SUMMARY_FANOUT;
        n = sealed / span; /* complete nodes of level l - 1 */
        for (uint64_t i = n / TROVE_SUMMARY_FANOUT * TROVE_SUMMARY_FANOUT; i < n; i++) {
            struct trove_summary node;
            uint64_t slot = first + trove__summary_slot_of(h->info.segments, sealed, l - 1, i);
            obj->len = 0;
            if ((rc = trove_volume_get_object(w->vol.v, slot, obj)) != TROVE_OK ||
                (rc = trove_summary_decode(obj->ptr, obj->len, &node, diag)) != TROVE_OK)
                goto out;
            if (node.level != l - 1) {
                trove_summary_free(&node);
                rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "capture %s: a summary of the wrong level",
                                w->name);
                goto out;
            }
            if ((rc = trove__sumtree_restore(&w->tree, l, &node, i % TROVE_SUMMARY_FANOUT)) != TROVE_OK) {
                trove_summary_free(&node);
                rc = TROVE_FAIL(diag, rc, 0, "out of memory");
                goto out;
            }
        }
    }
    w->tree.sealed = sealed;
    w->sum_done = 0;
    for (uint64_t s = 1, l = 0; l < TROVE__SUMMARY_MAX_LEVELS; l++, s *= TROVE_SUMMARY_FANOUT)
        w->sum_done += sealed / s;
    /* the complete nodes' objects (the first sum_done summary slots), and their bytes: all
     * of them less the incomplete ones' (after them) */
    if (!(w->sum_dig = trove__mallocarray((size_t)w->sum_done + 1, sizeof *w->sum_dig))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    w->sum_cap = w->sum_done + 1;
    if ((rc = trove_volume_slot_digests(w->vol.v, first, w->sum_done, w->sum_dig)) != TROVE_OK)
        goto out;
    w->sum_n = w->sum_done;
    w->sum_done_bytes = h->summary_bytes;
    for (uint64_t i = w->sum_done; i < trove__summary_slots(h->info.segments); i++) {
        obj->len = 0;
        if ((rc = trove_volume_get_object(w->vol.v, first + i, obj)) != TROVE_OK)
            goto out;
        w->sum_done_bytes -= obj->len <= w->sum_done_bytes ? obj->len : w->sum_done_bytes;
    }
out:
    free(ev);
    return rc;
}

/* The capture's header, names and partial last segment, from w->vol.v (open). */
static int read_back(struct trove_capture_writer *w, const struct trove_capture_options *opt,
                     struct trove_diag *diag)
{
    struct trove_capture_header *h = &w->h;
    struct trove_capture_replay_options ro;
    struct trove__capture_walk walk;
    struct trove_volume_info vi;
    struct trove_bytes obj = {0};
    struct trove_digest d;
    struct readback r;
    uint64_t last;
    int rc;

    memset(&walk, 0, sizeof walk);
    memset(&r, 0, sizeof r);
    TROVE_TRY(rc, trove_volume_info(w->vol.v, &vi));
    if (vi.used_slots == 0) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOTFOUND, 0,
                        "no capture named %s in the store (its volume holds no object: a "
                        "write that never committed); write it anew",
                        w->name);
        goto out;
    }
    TROVE_TRY(rc, trove__capture_read_header(w->vol.v, w->name, h, diag));
    w->cap_seg = h->info.segments;
    w->opened_events = h->info.events;
    if (h->info.flows > 0) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "capture %s has %" PRIu64 " flow rows; a live writer does not carry "
                        "flows, so it cannot append to it",
                        w->name, h->info.flows);
        goto out;
    }
    if ((opt && opt->segment_bytes && opt->segment_bytes != h->segment_bytes) ||
        (opt && opt->frame_events && opt->frame_events != h->frame_events)) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "capture %s has segments of %" PRIu64 " bytes and frames of %" PRIu32
                        " events; an append keeps them (pass 0 or the same)",
                        w->name, h->segment_bytes, h->frame_events);
        goto out;
    }
    if (opt && opt->segment_format == TROVE_WIRE_COLUMNAR && h->info.events > 0 &&
        (h->info.flags & TROVE_CAPTURE_FLAG_COLUMNAR_DEFLATE)) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "capture %s holds columnar_deflate segments; an append in plain "
                        "columnar would leave its format unnamed (append in "
                        "columnar_deflate, or another format)",
                        w->name);
        goto out;
    }
    w->per = h->segment_bytes / TROVE_EVENT_SIZE;
    w->fe = h->frame_events;
    if (!(opt && opt->segment_format) && (h->info.flags & TROVE_CAPTURE_FLAG_COLUMNAR))
        w->format = h->info.flags & TROVE_CAPTURE_FLAG_COLUMNAR_DEFLATE
                        ? TROVE_WIRE_COLUMNAR_DEFLATE
                        : TROVE_WIRE_COLUMNAR; /* an append goes on as the capture was written */
    if (!(opt && opt->segment_format) && (h->info.flags & TROVE_CAPTURE_FLAG_MODEL))
        w->format = TROVE_WIRE_MODEL;
    w->counters = h->version >= TROVE__CAPTURE_VERSION2;
    w->generation = vi.generation;

    memset(&ro, 0, sizeof ro);
    ro.to_ns = UINT64_MAX;
    ro.wire = TROVE_WIRE_RAW;
    TROVE_TRY(rc, trove__capture_walk_init(&walk, w->name, h, &ro, diag));
    r.w = w;
    r.diag = diag;
    if (trove_wire_decoder_new(&r.dec) != TROVE_OK ||
        !(w->frame = trove__mallocarray(w->fe, sizeof *w->frame)) ||
        !(w->segev = trove__mallocarray((size_t)w->per, sizeof *w->segev)) ||
        !(r.ev = trove__mallocarray(w->fe, sizeof *r.ev))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    /* The names, part by part (the capture has no flows: checked above). */
    w->nparts = trove__capture_parts(h);
    for (uint32_t j = 0; j < w->nparts; j++) {
        TROVE_TRY(rc, read_object(w, trove__capture_names_slot(h->info.segments, 0, j),
                                  "names", &d, &obj, diag));
        TROVE_TRY(rc, trove__capture_walk_names(&walk, j, &d, obj.ptr, obj.len, readback_names,
                                                &r, diag));
        w->parts[j].bytes = (uint32_t)trove__capture_part_bytes(h, j);
        w->parts[j].entries = (uint32_t)trove__capture_part_entries(h, j);
    }
    /* The parts' entries must be the table's, one for one, for a commit to encode the last
     * parts again from their first entries: no key twice. */
    if (trove_names_count(w->names) != h->info.names) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                        "capture %s: its names frames hold %" PRIu64 " entries but %zu "
                        "keys: an entry repeats a key, which no writer does",
                        w->name, h->info.names, trove_names_count(w->names));
        goto out;
    }
    w->names_committed = trove_names_count(w->names);
    w->names_from = NAMES_SAME;

    w->full = h->info.segments;
    w->events = h->info.events;
    last = h->info.segments - 1;
    if (h->info.segments > 0 && h->seg[last].events < w->per) {
        /* The partial last segment goes back into the frame buffer, event by event. */
        w->full = last;
        w->events = last * w->per;
        TROVE_TRY(rc, read_object(w, TROVE__CAPTURE_SLOT_SEGMENT0 + last, "segment", &d, &obj,
                                  diag));
        TROVE_TRY(rc, trove__capture_walk_segment(&walk, last, &d, obj.ptr, obj.len,
                                                  readback_events, &r, diag));
        if (w->events != h->info.events || w->full != last) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                            "capture %s: its last segment read back as %" PRIu64
                            " events in all; the header says %" PRIu64,
                            w->name, w->events, h->info.events);
            goto out;
        }
    }
    /* The profile: its last object back into prof_cur unless it is sealed, so that frames
     * added go on from where the stored profile ends. */
    w->c_seg_slots = h->info.segments;
    w->c_name_slots = w->nparts - 1;
    w->c_prof_slots = h->profile_objects;
    w->samples = h->info.samples;
    w->switches = h->info.switches;
    if (h->profile_objects > 0) {
        uint64_t slot = trove__capture_profile_slot(h) + h->profile_objects - 1;
        TROVE_TRY(rc, read_object(w, slot, "profile", &d, &w->prof_cur, diag));
        if (w->prof_cur.len >= PROFILE_OBJECT_BYTES || w->prof_cur.len > h->profile_bytes) {
            w->prof_sealed = h->profile_objects;
            w->prof_sealed_bytes = h->profile_bytes;
            w->prof_cur.len = 0;
        } else {
            w->prof_sealed = h->profile_objects - 1;
            w->prof_sealed_bytes = h->profile_bytes - w->prof_cur.len;
        }
    }
    /* The attributes: the full segments' objects as they are, the last one's rows back into
     * acur, the trace's kept */
    if (h->info.flags & TROVE_CAPTURE_FLAG_ATTRS) {
        uint64_t first = trove__capture_attrs_slot(h), segs = h->info.segments;
        uint64_t last_rows = 0, last_bytes = 0;
        struct trove_attrs t;
        TROVE_TRY(rc, attr_room(w, segs + 1, diag));
        if ((rc = trove_volume_slot_digests(w->vol.v, first, segs, w->attr_dig)) != TROVE_OK) {
            rc = TROVE_FAIL(diag, rc, 0, "capture %s: its attributes: %s", w->name,
                            trove_strerror(rc));
            goto out;
        }
        for (uint64_t k = w->full; k <= segs; k++) { /* the partial one, if any; the trace's */
            TROVE_TRY(rc, read_object(w, first + k, "attributes", &d, &obj, diag));
            memset(&t, 0, sizeof t);
            TROVE_TRY(rc, trove_attrs_decode(obj.ptr, obj.len, &t, diag));
            if (k < segs) {
                w->acur = t;
                last_rows = t.n;
                last_bytes = obj.len;
            } else {
                w->meta_dig = d;
                w->meta_rows = t.n;
                w->meta_bytes = obj.len;
                w->have_meta = 1;
                trove_attrs_free(&t);
            }
        }
        if (h->attr_rows < last_rows + w->meta_rows ||
            h->attrs_bytes < last_bytes + w->meta_bytes) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                            "capture %s: its header counts fewer attributes than its objects hold",
                            w->name);
            goto out;
        }
        w->attr_done_rows = h->attr_rows - last_rows - w->meta_rows;
        w->attr_done_bytes = h->attrs_bytes - last_bytes - w->meta_bytes;
        w->attrs_on = 1;
    }
    /* The summaries: the tree over the full segments as it stood, or none at all */
    w->sum_on = w->sum_on && (h->info.flags & TROVE_CAPTURE_FLAG_SUMMARY);
    if (w->sum_on && (rc = restore_tree(w, r.dec, &obj, diag)) != TROVE_OK) {
        if (rc == TROVE_ERR_NOMEM || (rc < 0 && rc > TROVE_ERR_BASE))
            goto out;
        w->sum_on = 0; /* a damaged summary: the capture goes on without them */
        memset(diag, 0, sizeof *diag);
    }
    if (!w->sum_on)
        h->info.flags &= ~TROVE_CAPTURE_FLAG_SUMMARY;
    w->events_dirty = 0; /* what was read back is what is committed */
    w->drafted = 1;      /* but its incomplete summary nodes may have been drafts */
    w->committed = w->events;
    w->info = h->info;
    w->info.new_objects = w->info.new_bytes = 0;
    rc = TROVE_OK;
out:
    trove__capture_walk_free(&walk);
    trove_wire_decoder_free(r.dec);
    free(r.ev);
    trove_bytes_free(&obj);
    return rc;
}

/* ---- the writer ------------------------------------------------------------------------- */

int trove_capture_writer_open(struct trove_store *s, const char *name, int append,
                              const struct trove_capture_options *opt,
                              struct trove_capture_writer **out, struct trove_diag *diag)
{
    struct trove_capture_writer *w = NULL;
    struct trove_volume_info vi;
    uint64_t seg_bytes = 0;
    uint32_t fe = 0;
    int rc, format = 0, created = 0;

    if (out)
        *out = NULL;
    if (!s || !out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "a capture writer needs a store and an "
                                                      "output");
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK ||
        (rc = trove__capture_sizes(opt, &seg_bytes, &fe, &format, diag)) != TROVE_OK)
        return rc;
    if (!(w = trove__calloc(1, sizeof *w)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    snprintf(w->name, sizeof w->name, "%s", name);
    w->format = format;
    w->vol.s = s;
    w->vol.name = w->name;
    if (trove_wire_encoder_new(&w->enc) != TROVE_OK || trove_names_new(&w->names) != TROVE_OK) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    /* A new capture is pending (create 2): nothing of it is written before its first
     * commit, so a service killed before then leaves no capture behind, not an empty volume
     * that reads as damaged; it stays open (dirty) until that commit, and a writer closed
     * before it has nothing to remove. */
    TROVE_TRY(rc, trove__capture_open_for_write(&w->vol, TROVE__CAPTURE_KEEP_SLOTS,
                                                append ? 0 : 2, &created, diag));
    TROVE_TRY(rc, trove_volume_info(w->vol.v, &vi));
    w->sum_on = !(opt && opt->no_summaries);
    if (append) {
        TROVE_TRY(rc, read_back(w, opt, diag));
    } else {
        w->per = seg_bytes / TROVE_EVENT_SIZE;
        w->fe = fe;
        w->generation = vi.generation;
        w->events_dirty = 1; /* the first commit writes the capture, its names from entry 0 */
        w->names_from = 0;
        w->tree.per = w->per;
        if (!(w->frame = trove__mallocarray(w->fe, sizeof *w->frame)) ||
            !(w->segev = trove__mallocarray((size_t)w->per, sizeof *w->segev))) {
            rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
            goto out;
        }
    }
    /* Nothing is uncommitted yet: the volume is closed until something is, unless it is made
     * over a damaged recipe (which only its first commit replaces). */
    if (!vi.dirty) {
        trove_volume_close(w->vol.v);
        w->vol.v = NULL;
    } else {
        w->slots = vi.slots;
    }
    *out = w;
    w = NULL;
    rc = TROVE_OK;
out:
    trove_capture_writer_close(w);
    return rc;
}

int trove_capture_writer_add(struct trove_capture_writer *w, const struct trove_event *events,
                             size_t n, struct trove_diag *diag)
{
    return trove_capture_writer_add_attrs(w, events, n, NULL, diag);
}

/* The capture's attributes on from now: the full segments so far get empty objects. */
static int attrs_begin(struct trove_capture_writer *w, struct trove_diag *diag)
{
    uint64_t bytes = 0;
    int rc;

    if ((rc = attr_room(w, w->full + 1, diag)) != TROVE_OK ||
        (w->full > 0 && (rc = open_volume(w, TROVE__CAPTURE_SLOT_SEGMENT0, diag)) != TROVE_OK))
        return rc;
    for (uint64_t k = 0; k < w->full; k++) {
        if (k == 0 && (rc = attr_stage(w, NULL, &w->attr_dig[0], &bytes, diag)) != TROVE_OK)
            return rc;
        w->attr_dig[k] = w->attr_dig[0];
        w->attr_done_bytes += bytes;
    }
    w->attrs_on = 1;
    return TROVE_OK;
}

int trove_capture_writer_add_attrs(struct trove_capture_writer *w,
                                   const struct trove_event *events, size_t n,
                                   const struct trove_attrs *attrs, struct trove_diag *diag)
{
    uint64_t segments;
    int rc, counters = 0;

    if (!w || (!events && n > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "capture add needs a writer and events");
    if (w->sticky)
        return TROVE_FAIL(diag, w->sticky, 0,
                          "capture %s: the writer stopped at an earlier error (%s); close it "
                          "and open the capture again with append",
                          w->name, trove_strerror(w->sticky));
    segments = n > UINT64_MAX - w->events ? UINT64_MAX : trove__div_up(w->events + n, w->per);
    if (segments > TROVE_CAPTURE_MAX_SEGMENTS)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                          "capture %s: %" PRIu64 " events and %zu more in segments of %" PRIu64
                          " bytes need more than %" PRIu64 " segments; use larger segments",
                          w->name, w->events, n, w->per * TROVE_EVENT_SIZE,
                          TROVE_CAPTURE_MAX_SEGMENTS);
    if ((rc = trove__capture_check_events(events, n, 0, &counters, diag)) != TROVE_OK)
        return rc;
    w->counters |= counters;
    if (!attrs || attrs->n == 0)
        return take(w, events, n, diag);
    for (size_t r = 1; r < attrs->n; r++)
        if (attrs->rows[r].event < attrs->rows[r - 1].event)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, r,
                              "capture %s: attribute rows go back in event at row %zu", w->name, r);
    if (attrs->rows[attrs->n - 1].event >= n)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, attrs->n - 1,
                          "capture %s: an attribute row of event %" PRIu64 " of %zu added",
                          w->name, attrs->rows[attrs->n - 1].event, n);
    if (!w->attrs_on && (rc = attrs_begin(w, diag)) != TROVE_OK)
        return stop(w, rc);
    /* segment by segment: a segment's rows are in acur before take fills it */
    for (size_t i = 0, r = 0; i < n;) {
        uint64_t in_seg = w->events - w->full * w->per;
        size_t k = n - i < w->per - in_seg ? n - i : (size_t)(w->per - in_seg);
        size_t r1 = trove_attrs_find(attrs, i + k);
        if (r1 > r && (rc = trove_attrs_append(&w->acur, attrs, r, r1, in_seg, i)) != TROVE_OK)
            return stop(w, TROVE_FAIL(diag, rc, 0, "capture %s: keeping attributes: %s",
                                      w->name, trove_strerror(rc)));
        if ((rc = take(w, events + i, k, diag)) != TROVE_OK)
            return rc;
        i += k;
        r = r1;
    }
    return TROVE_OK;
}

int trove_capture_writer_names(struct trove_capture_writer *w, const struct trove_names *added,
                               struct trove_diag *diag)
{
    size_t count;
    int rc;

    if (!w)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "capture names need a writer");
    count = added ? trove_names_count(added) : 0;
    for (size_t i = 0; i < count; i++) {
        struct trove_name_entry e, have;
        size_t at = trove_names_count(w->names); /* a new key goes last */
        trove_names_entry(added, i, &e);
        if (trove_names_find(w->names, e.type, e.a, e.b, &at)) {
            trove_names_entry(w->names, at, &have);
            if (trove_name_type_is_sort(e.type) ? have.sort_index == e.sort_index
                                                : have.len == e.len &&
                                                      memcmp(have.str, e.str, e.len) == 0)
                continue;
        }
        if ((rc = trove_names_put(w->names, &e)) != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "capture %s: merging names: %s", w->name,
                              trove_strerror(rc));
        if (at < w->names_from)
            w->names_from = at;
    }
    return TROVE_OK;
}

int trove_capture_writer_samples(struct trove_capture_writer *w, const uint8_t *frames,
                                 size_t len, uint64_t samples, uint64_t switches,
                                 struct trove_diag *diag)
{
    uint64_t counted = 0;
    int rc;

    if (!w || (!frames && len > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "capture samples need a writer and frames");
    if (w->sticky)
        return TROVE_FAIL(diag, w->sticky, 0,
                          "capture %s: the writer stopped at an earlier error (%s); close it "
                          "and open the capture again with append",
                          w->name, trove_strerror(w->sticky));
    if (len > TROVE_CAPTURE_MAX_OBJECT)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                          "capture %s: %zu bytes of samples frames at once, over the %" PRIu32
                          " an object holds",
                          w->name, len, TROVE_CAPTURE_MAX_OBJECT);
    /* whole samples frames, their counts the caller's (it decoded them) */
    for (size_t at = 0; at < len;) {
        struct trove_wire_header hd;
        if ((rc = trove_wire_parse_header(frames + at, len - at, &hd, diag)) != TROVE_OK)
            return rc;
        if (hd.format != TROVE_WIRE_SAMPLES || hd.payload_len > len - at - TROVE_WIRE_HEADER_SIZE)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "capture %s: not a whole samples frame at byte %zu of %zu", w->name,
                              at, len);
        counted += hd.count;
        at += TROVE_WIRE_HEADER_SIZE + (size_t)hd.payload_len;
    }
    if (counted != samples)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "capture %s: the frames hold %" PRIu64 " samples, not %" PRIu64,
                          w->name, counted, samples);
    if (len == 0)
        return TROVE_OK;
    if (w->prof_sealed + 1 >= TROVE_CAPTURE_MAX_PROFILE_OBJECTS &&
        w->prof_cur.len + len > TROVE_CAPTURE_MAX_OBJECT)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "capture %s: the profile is full (%" PRIu64
                                                    " objects)", w->name,
                          TROVE_CAPTURE_MAX_PROFILE_OBJECTS);
    if (w->prof_cur.len + len > TROVE_CAPTURE_MAX_OBJECT) {
        /* the last object cannot take these: it is sealed as committed last (a commit wrote
         * all of it), and these start the next */
        if (w->prof_dirty)
            return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                              "capture %s: %zu bytes of samples frames since the last commit; "
                              "commit more often",
                              w->name, w->prof_cur.len + len);
        w->prof_sealed++;
        w->prof_sealed_bytes += w->prof_cur.len;
        w->prof_cur.len = 0;
    }
    if ((rc = trove_bytes_append(&w->prof_cur, frames, len)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "out of memory");
    w->samples += samples;
    w->switches += switches;
    w->prof_dirty = 1;
    return TROVE_OK;
}

/*
 * Put the names parts a commit must write again (volume open, its segment slots set), and
 * set h's part table and names_bytes. Frames and parts are cut greedily (capture.c): a
 * frame ends where its next entry would not fit, a part where its next frame would not. So
 * the parts before the first that can differ from the last commit's are kept as they are,
 * and the rest encoded again from that part's first entry, which is a frame's start:
 *  - names only added: the last part (entries added after the last frame only grow it, and
 *    a frame that did not fit still does not);
 *  - an entry replaced in part j: part j - 1 (the frame it is in may shrink and fit in part
 *    j - 1 now, or the frame before it may take it, which only grows that frame: a cut
 *    before the frame before it stays where it was).
 * The profile's slots move with the parts' count.
 */
static int put_names(struct trove_capture_writer *w, struct trove_diag *diag)
{
    struct trove_capture_header *h = &w->h;
    const size_t count = trove_names_count(w->names);
    uint64_t bytes = 0;
    size_t from = 0, first = 0;
    uint32_t q = 0, j;
    int rc;

    if (w->nparts > 0 && w->names_from >= w->names_committed) {
        q = w->nparts - 1;
    } else if (w->nparts > 0) {
        for (j = 0; j + 1 < w->nparts && first + w->parts[j].entries <= w->names_from; j++)
            first += w->parts[j].entries;
        q = j >= 1 ? j - 1 : 0;
    }
    for (j = 0; j < q; j++) {
        h->names_part[j] = w->parts[j];
        from += w->parts[j].entries;
        bytes += w->parts[j].bytes;
    }
    assert(from < count || (from == 0 && count == 0));
    do {
        size_t to = from;
        w->buf.len = 0;
        if ((rc = trove__capture_names_part(w->name, w->names, from, &w->buf, &to, diag)) !=
                TROVE_OK ||
            (rc = trove__capture_names_limits(w->name, j + 1, bytes + w->buf.len, diag)) !=
                TROVE_OK ||
            (j > w->name_slots && (rc = part_slots(w, j, diag)) != TROVE_OK) ||
            (rc = trove__capture_put(&w->vol,
                                     j == 0 ? TROVE__CAPTURE_SLOT_NAMES
                                            : TROVE__CAPTURE_SLOT_SEGMENT0 + w->seg_slots + j - 1,
                                     w->buf.ptr, w->buf.len, diag)) != TROVE_OK)
            return rc;
        h->names_part[j].bytes = (uint32_t)w->buf.len;
        h->names_part[j].entries = (uint32_t)(to - from);
        bytes += w->buf.len;
        from = to;
        j++;
    } while (from < count);
    if ((rc = part_slots(w, j - 1, diag)) != TROVE_OK) /* fewer parts: the profile moves down */
        return rc;
    h->names_parts = j;
    h->names_bytes = bytes;
    return TROVE_OK;
}

/* The writer's counts into info (as of its last commit). */
static void give_info(const struct trove_capture_writer *w, struct trove_capture_info *info)
{
    if (info)
        *info = w->info;
}

int trove_capture_writer_commit(struct trove_capture_writer *w, struct trove_capture_info *info,
                                struct trove_diag *diag)
{
    struct trove_capture_header *h;
    struct trove_volume_info vi;
    uint64_t segments, slots, partial, prof;
    const int names_dirty = w && w->names_from != NAMES_SAME;
    int rc;

    if (!w)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "capture commit needs a writer");
    if (w->sticky)
        return TROVE_FAIL(diag, w->sticky, 0,
                          "capture %s: the writer stopped at an earlier error (%s); close it "
                          "and open the capture again with append",
                          w->name, trove_strerror(w->sticky));
    if (!w->events_dirty && !names_dirty && !w->prof_dirty &&
        !(w->sum_on && w->drafted && !w->tree.draft)) {
        give_info(w, info);
        return TROVE_OK;
    }
    h = &w->h;
    partial = w->cur.events + w->nframe;
    segments = w->full + (partial > 0);
    prof = w->prof_sealed + (w->prof_cur.len > 0);
    if ((rc = reserve_seg(w, segments, diag)) != TROVE_OK ||
        (rc = open_volume(w, TROVE__CAPTURE_SLOT_SEGMENT0 + segments, diag)) != TROVE_OK)
        return rc == TROVE_ERR_MISMATCH ? stop(w, rc) : rc;
    if ((rc = segment_slots(w, segments, diag)) != TROVE_OK)
        return rc;
    /* The names parts that changed, or the table of the ones the last commit put. */
    if (names_dirty) {
        if ((rc = put_names(w, diag)) != TROVE_OK)
            return rc;
    } else {
        h->names_parts = w->nparts;
        h->names_bytes = 0;
        for (uint32_t j = 0; j < w->nparts; j++) {
            h->names_part[j] = w->parts[j];
            h->names_bytes += w->parts[j].bytes;
        }
    }
    slots = TROVE__CAPTURE_SLOT_SEGMENT0 + segments + w->name_slots + prof;
    if (w->prof_dirty && w->prof_cur.len > 0) {
        /* the last profile object, in the slot after the sealed ones */
        if ((rc = ensure_slots(w, slots, diag)) != TROVE_OK ||
            (rc = trove__capture_put(&w->vol,
                                     TROVE__CAPTURE_SLOT_SEGMENT0 + segments + w->name_slots +
                                         w->prof_sealed,
                                     w->prof_cur.ptr, w->prof_cur.len, diag)) != TROVE_OK)
            return rc;
    }
    w->prof_slots = prof;
    if (w->attrs_on && segments > 0) {
        /* each segment's attributes object, then the trace's */
        uint64_t first = slots, last_bytes = 0;
        slots += segments + 1;
        if ((rc = ensure_slots(w, slots, diag)) != TROVE_OK)
            return rc;
        for (uint64_t k = 0; k < w->full; k++)
            if ((rc = trove_volume_set_slot_object(w->vol.v, first + k, &w->attr_dig[k])) !=
                TROVE_OK)
                return TROVE_FAIL(diag, rc, 0, "capture %s: its attributes: %s", w->name,
                                  trove_strerror(rc));
        if (partial > 0) {
            struct trove_digest d;
            if ((rc = attr_stage(w, &w->acur, &d, &last_bytes, diag)) != TROVE_OK)
                return rc;
            if ((rc = trove_volume_set_slot_object(w->vol.v, first + w->full, &d)) != TROVE_OK)
                return TROVE_FAIL(diag, rc, 0, "capture %s: its attributes: %s", w->name,
                                  trove_strerror(rc));
        }
        if (!w->have_meta) {
            if ((rc = attr_stage(w, NULL, &w->meta_dig, &w->meta_bytes, diag)) != TROVE_OK)
                return rc;
            w->have_meta = 1;
        }
        if ((rc = trove_volume_set_slot_object(w->vol.v, first + segments, &w->meta_dig)) != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "capture %s: its attributes: %s", w->name,
                              trove_strerror(rc));
        h->info.flags |= TROVE_CAPTURE_FLAG_ATTRS;
        h->attr_rows = h->info.attr_rows = w->attr_done_rows + w->acur.n + w->meta_rows;
        h->attrs_bytes = h->info.attrs_bytes = w->attr_done_bytes + last_bytes + w->meta_bytes;
    } else {
        h->info.flags &= ~TROVE_CAPTURE_FLAG_ATTRS;
        h->attr_rows = h->info.attr_rows = h->attrs_bytes = h->info.attrs_bytes = 0;
    }
    if (w->sum_on) {
        /* the incomplete nodes after the complete ones (the partial segment's, and each
         * level's last that waits for children); then every summary slot pointed at its
         * object, once */
        struct trove_summary leaf;
        uint64_t first = slots;
        memset(&leaf, 0, sizeof leaf);
        w->sum_n = w->sum_done;
        w->sum_bytes = w->sum_done_bytes;
        if (partial > 0 && (rc = trove_summary_build(w->segev, (size_t)partial, &leaf)) != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "capture %s: summarizing its last segment: %s",
                              w->name, trove_strerror(rc));
        rc = trove__sumtree_finish(&w->tree, partial > 0 ? &leaf : NULL, sum_put, w, diag);
        trove_summary_free(&leaf);
        if (rc != TROVE_OK)
            return rc;
        slots += w->sum_n;
        if ((rc = ensure_slots(w, slots, diag)) != TROVE_OK)
            return rc;
        for (uint64_t i = 0; i < w->sum_n; i++)
            if ((rc = trove_volume_set_slot_object(w->vol.v, first + i, &w->sum_dig[i])) != TROVE_OK)
                return TROVE_FAIL(diag, rc, 0, "capture %s: its summaries: %s", w->name,
                                  trove_strerror(rc));
    }
    if (w->sum_on && segments > 0) {
        h->info.flags |= TROVE_CAPTURE_FLAG_SUMMARY;
        h->summary_bytes = w->sum_bytes;
    } else {
        h->info.flags &= ~TROVE_CAPTURE_FLAG_SUMMARY;
        h->summary_bytes = 0;
    }
    if (w->slots != slots) {
        if ((rc = trove_volume_resize(w->vol.v, slots * w->vol.block)) != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "capture %s: resizing to %" PRIu64 " slots: %s",
                              w->name, slots, trove_strerror(rc));
        w->slots = slots;
    }
    if (w->events_dirty && partial > 0) {
        /* The partial segment: its complete frames and the frame being filled, encoded into
         * a copy of its entry and past its frames' end, which is cut back after the put. */
        struct trove_capture_segment g = w->cur;
        size_t keep = w->seg.len;
        rc = w->nframe == 0 ? TROVE_OK
                            : trove__capture_segment_frame(w->enc, w->format, w->frame,
                                                           w->nframe, &w->seg, &g, w->name,
                                                           w->full, diag);
        if (rc == TROVE_OK)
            rc = trove__capture_put(&w->vol, TROVE__CAPTURE_SLOT_SEGMENT0 + w->full, w->seg.ptr,
                                    w->seg.len, diag);
        w->seg.len = keep;
        if (rc != TROVE_OK)
            return rc;
        h->seg[w->full] = g;
    }
    h->info.events = w->events;
    h->info.segments = segments;
    h->info.names = trove_names_count(w->names);
    h->info.flows = 0;
    h->segment_bytes = w->per * TROVE_EVENT_SIZE;
    h->frame_events = w->fe;
    /* an append keeps the flags it read, and says so when it adds another format */
    if (w->events > w->opened_events)
        h->info.flags = trove__capture_append_flags(h->info.flags, w->opened_events > 0, w->format);
    h->flows_bytes = 0;
    h->info.samples = w->samples;
    h->info.switches = w->switches;
    h->profile_objects = prof;
    h->profile_bytes = w->prof_sealed_bytes + w->prof_cur.len;
    if ((rc = trove__capture_header_put(&w->vol, h, w->counters, &w->buf, diag)) != TROVE_OK)
        return rc;
    if ((rc = trove_volume_commit(w->vol.v)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: committing: %s", w->name,
                          rc == TROVE_ERR_BUSY ? "another writer has taken the store over (this "
                                                 "handle's writer lease was lost or ran out)"
                                               : trove_strerror(rc));

    /* Durable. What the writer knows of the volume is its new generation. */
    if ((rc = trove_volume_info(w->vol.v, &vi)) != TROVE_OK)
        return stop(w, TROVE_FAIL(diag, rc, 0, "capture %s: %s", w->name, trove_strerror(rc)));
    w->generation = vi.generation;
    w->events_dirty = w->prof_dirty = 0;
    w->drafted = w->tree.draft;
    w->committed = w->events;
    w->c_seg_slots = w->seg_slots;
    w->c_name_slots = w->name_slots;
    w->c_prof_slots = w->prof_slots;
    w->nparts = h->names_parts;
    memcpy(w->parts, h->names_part, w->nparts * sizeof *w->parts);
    w->names_committed = trove_names_count(w->names);
    w->names_from = NAMES_SAME;
    if (w->prof_cur.len >= PROFILE_OBJECT_BYTES) { /* sealed: the next frames start another */
        w->prof_sealed++;
        w->prof_sealed_bytes += w->prof_cur.len;
        w->prof_cur.len = 0;
    }
    w->info = h->info;
    w->info.stored_bytes = w->buf.len + h->names_bytes + h->profile_bytes + h->summary_bytes +
                           h->attrs_bytes;
    for (uint64_t k = 0; k < segments; k++)
        w->info.stored_bytes += h->seg[k].bytes;
    w->info.new_objects = trove__capture_count_fresh(&w->vol, &w->info.new_bytes);
    w->vol.nfresh = 0;
    trove_volume_close(w->vol.v);
    w->vol.v = NULL;
    give_info(w, info);
    w->info.new_objects = w->info.new_bytes = 0; /* a commit that changes nothing stores nothing */
    return TROVE_OK;
}

const struct trove_names *trove_capture_writer_names_all(const struct trove_capture_writer *w)
{
    return w ? w->names : NULL;
}

uint64_t trove_capture_writer_events(const struct trove_capture_writer *w)
{
    return w ? w->events : 0;
}

uint64_t trove_capture_writer_sample_count(const struct trove_capture_writer *w)
{
    return w ? w->samples : 0;
}

void trove_capture_writer_drafts(struct trove_capture_writer *w, int on)
{
    if (w)
        w->tree.draft = on != 0;
}

uint64_t trove_capture_writer_committed(const struct trove_capture_writer *w)
{
    return w ? w->committed : 0;
}

void trove_capture_writer_close(struct trove_capture_writer *w)
{
    if (!w)
        return;
    trove_volume_close(w->vol.v); /* uncommitted puts roll back; a pending volume vanishes */
    free(w->vol.fresh);
    trove_capture_header_free(&w->h);
    trove_bytes_free(&w->seg);
    trove_bytes_free(&w->buf);
    trove_bytes_free(&w->prof_cur);
    free(w->frame);
    free(w->segev);
    free(w->sum_dig);
    trove__sumtree_free(&w->tree);
    trove_attrs_free(&w->acur);
    free(w->attr_dig);
    trove_names_free(w->names);
    trove_wire_encoder_free(w->enc);
    free(w);
}
