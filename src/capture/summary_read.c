/*
 * summary_read.c: the reader the queries share (summary_query.c, summary_find.c) — a capture
 * opened for its header, the time bounds of every summary node (from the header's segment
 * entries, so that a node is chosen before it is read), its nodes and its segments read on
 * demand, each counted in the query's figures.
 */
#include "summary_read.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Segments a node of level L covers. */
uint64_t trove__sumread_span(unsigned level)
{
    uint64_t n = 1;
    for (unsigned l = 0; l < level; l++)
        n *= TROVE_SUMMARY_FANOUT;
    return n;
}

int trove__sumread_open(struct trove__sumread *r, struct trove_store *s, const char *name,
                        struct trove_query_figures *qs, struct trove_diag *diag)
{
    int rc;

    memset(r, 0, sizeof *r);
    r->name = name;
    r->qs = qs;
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK)
        return rc;
    rc = trove_volume_open(s, name, &r->v, diag);
    if (rc == TROVE_ERR_NOTFOUND)
        return TROVE_FAIL(diag, rc, 0, "no capture named %s in the store", name);
    if (rc != TROVE_OK)
        return rc;
    if ((rc = trove__capture_read_header(r->v, name, &r->h, diag)) != TROVE_OK)
        goto fail;
    r->have_h = 1;
    r->per = r->h.segment_bytes / TROVE_EVENT_SIZE;
    r->summaries = (r->h.info.flags & TROVE_CAPTURE_FLAG_SUMMARY) != 0;
    r->first_slot = trove__capture_summary_slot(&r->h);
    r->sealed = trove__summary_sealed(&r->h);
    r->levels = trove__summary_levels(r->h.info.segments, r->count);
    for (unsigned l = 0; l < r->levels; l++) {
        uint64_t span = trove__sumread_span(l);
        if (!(r->b[l] = trove__calloc((size_t)r->count[l], sizeof *r->b[l]))) {
            rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
            goto fail;
        }
        for (uint64_t k = 0; k < r->h.info.segments; k++) {
            const struct trove_capture_segment *g = &r->h.seg[k];
            struct trove__sumbound *b = &r->b[l][k / span];
            if (k % span == 0) {
                b->min_start = g->min_start_ns;
                b->max_start = g->max_start_ns;
                b->max_end = g->max_end_ns;
                continue;
            }
            if (g->min_start_ns < b->min_start)
                b->min_start = g->min_start_ns;
            if (g->max_start_ns > b->max_start)
                b->max_start = g->max_start_ns;
            if (g->max_end_ns > b->max_end)
                b->max_end = g->max_end_ns;
        }
    }
    if ((rc = trove_wire_decoder_new(&r->dec)) != TROVE_OK ||
        !(r->ev = trove__mallocarray((size_t)(r->per ? r->per : 1), sizeof *r->ev))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto fail;
    }
    return TROVE_OK;
fail:
    trove__sumread_close(r);
    return rc;
}

void trove__sumread_close(struct trove__sumread *r)
{
    if (r->have_h)
        trove_capture_header_free(&r->h);
    for (unsigned l = 0; l < TROVE__SUMMARY_MAX_LEVELS; l++)
        free(r->b[l]);
    trove_volume_close(r->v);
    trove_wire_decoder_free(r->dec);
    trove_bytes_free(&r->obj);
    free(r->ev);
    free(r->self);
    memset(r, 0, sizeof *r);
}

int trove__sumread_node(struct trove__sumread *r, unsigned level, uint64_t index,
                        struct trove_summary *node)
{
    struct trove_diag why = {0};
    int rc;

    memset(node, 0, sizeof *node);
    if (!r->summaries || level >= r->levels || index >= r->count[level])
        return TROVE_ERR_NOTFOUND;
    r->obj.len = 0;
    rc = trove_volume_get_object(r->v,
                                 r->first_slot + trove__summary_slot_of(r->h.info.segments,
                                                                        r->sealed, level, index),
                                 &r->obj);
    if (rc == TROVE_OK)
        rc = trove__summary_decode_part(r->obj.ptr, r->obj.len, node, !r->no_sketches, &why);
    if (rc == TROVE_OK && node->level != level) {
        trove_summary_free(node);
        rc = TROVE_ERR_CORRUPT;
    }
    if (rc != TROVE_OK) {
        /* a damaged or missing summary: the caller reads what it covers instead */
        if (r->qs)
            r->qs->damaged++;
        return rc;
    }
    if (r->qs)
        r->qs->nodes++;
    return TROVE_OK;
}

int trove__sumread_segment(struct trove__sumread *r, uint64_t k, size_t *n_out,
                           struct trove_diag *diag)
{
    int rc = trove__summary_read_segment(r->v, &r->h, r->name, k, r->dec, &r->obj, r->ev,
                                         (size_t)r->per, n_out, diag);
    if (rc == TROVE_OK && r->qs) {
        r->qs->segments++;
        r->qs->events += *n_out;
    }
    return rc;
}

int trove__sumread_self(struct trove__sumread *r, size_t n, struct trove_diag *diag)
{
    if (!r->self && !(r->self = trove__mallocarray((size_t)(r->per ? r->per : 1), sizeof *r->self)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    if (trove__summary_self_times(r->ev, n, r->self) != TROVE_OK)
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    return TROVE_OK;
}

int trove__sumread_track_ok(const uint64_t *tracks, size_t n, uint32_t pid, uint32_t tid)
{
    uint64_t key = (uint64_t)pid << 32 | tid;
    size_t lo = 0, hi = n;

    if (n == 0)
        return 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tracks[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && tracks[lo] == key;
}

int trove__sumread_fmt(struct trove_bytes *out, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        return TROVE_ERR_LIMIT;
    return trove_bytes_append(out, buf, (size_t)n);
}
