/*
 * summary_frames.c: a capture's frames from frame marks (trove_capture_frames_json): the
 * frame events libtrove-client's TROVE_FRAME_MARK records (kind 3, extra TROVE_FRAME_MARKS),
 * what a viewer's frame track and frame-time graph draw. The segments whose header bounds
 * miss the range are not read, nor, in a capture with summaries, those whose summary node
 * has no track with a frame event (a capture without frame marks reads its root alone).
 */
#include "summary_read.h"
#include "trove/summary.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct frame_hit {
    uint64_t index;
    struct trove_event ev;
};

static int frame_cmp(const void *a, const void *b)
{
    const struct frame_hit *x = a, *y = b;
    if (x->ev.start_ns != y->ev.start_ns)
        return x->ev.start_ns < y->ev.start_ns ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Mark in want[] the segments under node (level, index) that may hold frame events: every
 * one it covers when the node cannot be read, none when it has no track with a frame. */
static int frame_segments(struct trove__sumread *r, unsigned level, uint64_t index, uint8_t *want)
{
    const uint64_t span = trove__sumread_span(level), segs = r->h.info.segments;
    uint64_t lo = index * span, hi = lo + span < segs ? lo + span : segs;
    struct trove_summary node;
    int has = 0, rc;

    memset(&node, 0, sizeof node);
    if (trove__sumread_node(r, level, index, &node) != TROVE_OK) {
        memset(want + lo, 1, (size_t)(hi - lo)); /* read what it covers */
        return TROVE_OK;
    }
    for (size_t i = 0; i < node.ntracks && !has; i++)
        has = (node.tracks[i].kinds & (1u << TROVE_KIND_FRAME)) != 0;
    trove_summary_free(&node);
    if (!has)
        return TROVE_OK;
    if (level == 0) {
        want[index] = 1;
        return TROVE_OK;
    }
    for (uint64_t c = index * TROVE_SUMMARY_FANOUT; c * trove__sumread_span(level - 1) < hi; c++)
        if ((rc = frame_segments(r, level - 1, c, want)) != TROVE_OK)
            return rc;
    return TROVE_OK;
}

int trove_capture_frames_json(struct trove_store *s, const char *name, uint64_t from_ns,
                              uint64_t to_ns, uint32_t limit, struct trove_bytes *out,
                              struct trove_query_figures *qs, struct trove_diag *diag)
{
    struct trove_query_figures local = {0};
    struct trove__sumread r;
    struct frame_hit *hits = NULL;
    uint8_t *want = NULL; /* with summaries: the segments that may hold frames */
    size_t n = 0, cap = 0, kept;
    uint64_t to = to_ns ? to_ns : UINT64_MAX;
    int rc;

    memset(&r, 0, sizeof r);
    if (!s || !out || limit < 1)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "frames need a store, an output and a limit");
    if ((rc = trove__sumread_open(&r, s, name, qs ? qs : &local, diag)) != TROVE_OK)
        goto out;
    r.no_sketches = 1;
    if (r.levels > 0 && r.h.info.segments > 0) { /* the nodes say which segments to read */
        if (!(want = trove__calloc((size_t)r.h.info.segments, 1))) {
            rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
            goto out;
        }
        const unsigned top = r.levels - 1;
        const uint64_t covered = r.count[top] * trove__sumread_span(top);
        for (uint64_t i = 0; i < r.count[top]; i++)
            if ((rc = frame_segments(&r, top, i, want)) != TROVE_OK)
                goto out;
        if (covered < r.h.info.segments) /* what no node covers is read */
            memset(want + covered, 1, (size_t)(r.h.info.segments - covered));
    }
    for (uint64_t k = 0; rc == TROVE_OK && k < r.h.info.segments; k++) {
        const struct trove__sumbound *b = r.b[0] ? &r.b[0][k] : NULL;
        size_t m;
        if ((b && (b->min_start >= to || b->max_start < from_ns)) || (want && !want[k]))
            continue;
        if ((rc = trove__sumread_segment(&r, k, &m, diag)) != TROVE_OK)
            break;
        for (size_t i = 0; i < m; i++) {
            const struct trove_event *e = &r.ev[i];
            if (e->kind != TROVE_KIND_FRAME || e->extra != TROVE_FRAME_MARKS ||
                e->start_ns < from_ns || e->start_ns >= to)
                continue;
            if (n == cap) {
                size_t c = cap ? cap * 2 : 256;
                struct frame_hit *h = trove__realloc(hits, c * sizeof *h);
                if (!h) {
                    rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
                    goto out;
                }
                hits = h;
                cap = c;
            }
            hits[n].index = k * r.per + i;
            hits[n++].ev = *e;
        }
    }
    if (rc != TROVE_OK)
        goto out;
    if (n > 1) /* (none: hits is NULL, which qsort may not be given) */
        qsort(hits, n, sizeof *hits, frame_cmp);
    kept = n < limit ? n : limit;
    rc = trove__sumread_fmt(out, "{\"capture\":\"%s\",\"frames\":%zu,\"truncated\":%s,\"rows\":[",
                            name, n, kept < n ? "true" : "false");
    for (size_t i = 0; rc == TROVE_OK && i < kept; i++) {
        const struct frame_hit *h = &hits[i];
        rc = trove__sumread_fmt(out,
                                "%s{\"index\":%" PRIu64 ",\"name_id\":%" PRIu32
                                ",\"start_ns\":%" PRIu64 ",\"dur_ns\":%" PRIu64
                                ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 "}",
                                i ? "," : "", h->index, h->ev.name_id, h->ev.start_ns,
                                h->ev.dur_ns, h->ev.pid, h->ev.tid);
    }
    rc = rc ? rc : trove__sumread_fmt(out, "]}");
    if (rc != TROVE_OK)
        rc = TROVE_FAIL(diag, rc, 0, "capture %s: writing the frames: %s", name, trove_strerror(rc));
out:
    free(want);
    free(hits);
    trove__sumread_close(&r);
    return rc;
}
