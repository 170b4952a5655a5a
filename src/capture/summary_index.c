/*
 * summary_index.c: trove_capture_index (trove/summary.h) — a capture that lacks its summaries,
 * or whose summaries are damaged, gets them from its segments, and one commit makes them
 * visible with the header's flag.
 */
#include "capture_internal.h"
#include "summary_internal.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "trove/wire.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct index_put {
    struct trove__capture_vol *w;
    uint64_t first, segments, sealed; /* the first summary slot; the capture's segments */
    uint64_t objects, bytes;
};

static int index_put(void *ctx, unsigned level, uint64_t index, const uint8_t *p, size_t len,
                     struct trove_diag *diag)
{
    struct index_put *ip = ctx;
    ip->objects++;
    ip->bytes += len;
    return trove__capture_put(ip->w,
                              ip->first + trove__summary_slot_of(ip->segments, ip->sealed, level,
                                                                 index),
                              p, len, diag);
}

/* Do the summary slots of h (flag set) hold nodes that decode? The count of those that do
 * not (missing, damaged, not a node); a read error that says nothing of the object is the
 * error. */
static int count_bad(struct trove_volume *v, const struct trove_capture_header *h,
                     uint64_t *bad, struct trove_diag *diag)
{
    uint64_t first = trove__capture_summary_slot(h), z = trove__summary_slots(h->info.segments);
    struct trove_bytes obj = {0};
    int rc = TROVE_OK;

    *bad = 0;
    for (uint64_t i = 0; i < z && rc == TROVE_OK; i++) {
        struct trove_summary s;
        struct trove_diag why = {0};
        obj.len = 0;
        rc = trove_volume_get_object(v, first + i, &obj);
        if (rc == TROVE_OK && trove_summary_decode(obj.ptr, obj.len, &s, &why) == TROVE_OK) {
            trove_summary_free(&s);
            continue;
        }
        if (rc == TROVE_ERR_NOMEM || (rc < 0 && rc > TROVE_ERR_BASE)) {
            rc = TROVE_FAIL(diag, rc, 0, "reading summary %" PRIu64 ": %s", i, trove_strerror(rc));
            break;
        }
        rc = TROVE_OK;
        (*bad)++;
    }
    trove_bytes_free(&obj);
    return rc;
}

int trove_capture_index(struct trove_store *s, const char *name,
                        const struct trove_capture_index_options *opt,
                        struct trove_capture_index_result *res, struct trove_diag *diag)
{
    static const struct trove_capture_index_options none;
    struct trove__capture_vol w;
    struct trove_capture_header h;
    struct trove__sumtree t;
    struct trove_wire_decoder *dec = NULL;
    struct trove_event *ev = NULL;
    struct trove_bytes obj = {0}, buf = {0};
    struct index_put ip;
    uint64_t per, bad = 0;
    int rc, created = 0, have_h = 0;

    memset(&w, 0, sizeof w);
    memset(&t, 0, sizeof t);
    memset(res, 0, sizeof *res);
    opt = opt ? opt : &none;
    w.s = s;
    w.name = name;
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK ||
        (rc = trove__capture_open_for_write(&w, TROVE__CAPTURE_KEEP_SLOTS, 0, &created,
                                            diag)) != TROVE_OK ||
        (rc = trove__capture_read_header(w.v, name, &h, diag)) != TROVE_OK)
        goto out;
    have_h = 1;
    res->segments = h.info.segments;
    res->summaries = trove__summary_slots(h.info.segments);
    if ((h.info.flags & TROVE_CAPTURE_FLAG_SUMMARY) && !opt->force) {
        if ((rc = count_bad(w.v, &h, &bad, diag)) != TROVE_OK)
            goto out;
        res->damaged = bad;
        if (bad == 0) {
            res->already = 1;
            res->summary_bytes = h.summary_bytes; /* as they were written */
            goto out;
        }
    }
    per = h.segment_bytes / TROVE_EVENT_SIZE;
    if ((rc = trove_wire_decoder_new(&dec)) != TROVE_OK ||
        !(ev = trove__mallocarray((size_t)per, sizeof *ev))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    ip.w = &w;
    ip.first = trove__capture_summary_slot(&h);
    ip.segments = h.info.segments;
    ip.sealed = trove__summary_sealed(&h);
    ip.objects = ip.bytes = 0;
    if ((rc = trove_volume_resize(w.v, (ip.first + res->summaries) * w.block)) != TROVE_OK) {
        rc = TROVE_FAIL(diag, rc, 0, "capture %s: resizing for its summaries: %s", name,
                        trove_strerror(rc));
        goto out;
    }
    t.per = per;
    for (uint64_t k = 0; k < h.info.segments; k++) {
        struct trove_summary leaf;
        size_t n;
        if ((rc = trove__summary_read_segment(w.v, &h, name, k, dec, &obj, ev, (size_t)per, &n,
                                              diag)) != TROVE_OK)
            goto out;
        if ((rc = trove_summary_build(ev, n, &leaf)) != TROVE_OK) {
            rc = TROVE_FAIL(diag, rc, 0, "capture %s: summarizing segment %" PRIu64 ": %s", name,
                            k, trove_strerror(rc));
            goto out;
        }
        if (k < ip.sealed)
            rc = trove__sumtree_seal(&t, &leaf, index_put, &ip, diag);
        else /* the last segment, not full */
            rc = trove__sumtree_finish(&t, &leaf, index_put, &ip, diag);
        trove_summary_free(&leaf);
        if (rc != TROVE_OK)
            goto out;
        if (opt->progress)
            opt->progress(opt->progress_ctx, k + 1, h.info.segments);
    }
    if (ip.sealed == h.info.segments &&
        (rc = trove__sumtree_finish(&t, NULL, index_put, &ip, diag)) != TROVE_OK)
        goto out;
    h.info.flags |= TROVE_CAPTURE_FLAG_SUMMARY;
    h.summary_bytes = ip.bytes;
    if ((rc = trove__capture_header_put(&w, &h, h.version == 2, &buf, diag)) != TROVE_OK)
        goto out;
    if ((rc = trove_volume_commit(w.v)) != TROVE_OK) {
        rc = TROVE_FAIL(diag, rc, 0, "capture %s: committing its summaries: %s", name,
                        trove_strerror(rc));
        goto out;
    }
    res->built = ip.objects;
    res->summary_bytes = ip.bytes;
    res->new_objects = trove__capture_count_fresh(&w, &res->new_bytes);
out:
    trove_volume_close(w.v);
    if (have_h)
        trove_capture_header_free(&h);
    trove__sumtree_free(&t);
    trove_wire_decoder_free(dec);
    free(ev);
    free(w.fresh);
    trove_bytes_free(&obj);
    trove_bytes_free(&buf);
    return rc;
}
