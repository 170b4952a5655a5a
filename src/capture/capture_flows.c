/*
 * capture_flows.c: reading a capture's flow rows back (trove_capture_read_flows). The flows
 * object sits in the slot after the last segment (docs/formats/capture.md); one of version 2
 * is coded against the capture's events (docs/formats/flows.md), so its rows are decoded with
 * the events they name, read a segment at a time as the rows reach them: rows come in time
 * order, so they walk the segments forward, and the two segments read last are kept.
 */
#include "capture_internal.h"
#include "summary_internal.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trove/digest.h"
#include "trove/flows.h"
#include "trove/volume.h"
#include "trove/wire.h"

/* The capture's events, as the flows decoder asks for them: segment by segment, the last
 * two read kept. */
struct segment_events {
    struct trove_volume *v;
    const struct trove_capture_header *h;
    const char *name;
    struct trove_wire_decoder *dec;
    struct trove_bytes obj;
    uint64_t *first;           /* first[k]: the index of segment k's first event; [segments] */
    struct {
        uint64_t k;            /* UINT64_MAX: empty */
        struct trove_event *ev;
        size_t cap;
    } kept[2];
    unsigned next;             /* the kept entry the next read replaces */
    int failed;                /* a segment could not be read: diag names it already */
};

static void segment_events_free(struct segment_events *s)
{
    trove_wire_decoder_free(s->dec);
    trove_bytes_free(&s->obj);
    free(s->first);
    for (int j = 0; j < 2; j++)
        free(s->kept[j].ev);
}

static int segment_event(void *ctx, uint64_t index, struct trove_event *out,
                         struct trove_diag *diag)
{
    struct segment_events *s = ctx;
    const uint64_t segments = s->h->info.segments;
    uint64_t lo = 0, hi, k;
    size_t n;
    int rc;

    if (!s->first) {
        if (!(s->first = trove__malloc((size_t)(segments + 1) * sizeof *s->first)) ||
            (rc = trove_wire_decoder_new(&s->dec)) != TROVE_OK)
            return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        s->first[0] = 0;
        for (uint64_t j = 0; j < segments; j++)
            s->first[j + 1] = s->first[j] + s->h->seg[j].events;
        s->kept[0].k = s->kept[1].k = UINT64_MAX;
    }
    for (int j = 0; j < 2; j++)
        if (s->kept[j].k != UINT64_MAX && index >= s->first[s->kept[j].k] &&
            index < s->first[s->kept[j].k + 1]) {
            *out = s->kept[j].ev[index - s->first[s->kept[j].k]];
            return TROVE_OK;
        }
    if (index >= s->first[segments])
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "capture %s: flows name event %" PRIu64 " of %" PRIu64, s->name,
                          index, s->first[segments]);
    hi = segments; /* the last k with first[k] <= index */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (s->first[mid] <= index)
            lo = mid;
        else
            hi = mid;
    }
    k = lo;
    {
        unsigned j = s->next;
        size_t want = s->h->seg[k].events ? s->h->seg[k].events : 1;
        if (s->kept[j].cap < want) {
            struct trove_event *p = trove__realloc(s->kept[j].ev, want * sizeof *p);
            if (!p)
                return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
            s->kept[j].ev = p;
            s->kept[j].cap = want;
        }
        s->kept[j].k = UINT64_MAX;
        if ((rc = trove__summary_read_segment(s->v, s->h, s->name, k, s->dec, &s->obj,
                                              s->kept[j].ev, s->kept[j].cap, &n, diag)) !=
            TROVE_OK) {
            s->failed = 1;
            return rc;
        }
        s->kept[j].k = k;
        s->next = j ^ 1;
        *out = s->kept[j].ev[index - s->first[k]];
    }
    return TROVE_OK;
}

int trove_capture_read_flows(struct trove_store *s, const char *name, uint64_t from_ns,
                             uint64_t to_ns, struct trove_flows *flows, struct trove_diag *diag)
{
    struct trove_capture_header h;
    struct trove_volume *v = NULL;
    struct trove_bytes b = {0};
    struct trove_flows got = {0};
    struct segment_events seg;
    struct trove_flows_events ev;
    uint64_t slot;
    int rc;

    memset(&seg, 0, sizeof seg);
    if (!s || !flows || from_ns > to_ns)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "capture flows need a store, an output and from_ns <= to_ns");
    if ((rc = trove__capture_open_read(s, name, &v, &h, diag)) != TROVE_OK)
        return rc;
    if (h.info.flows == 0)
        goto out;
    slot = TROVE__CAPTURE_SLOT_SEGMENT0 + h.info.segments;
    if ((rc = trove_volume_get_object(v, slot, &b)) != TROVE_OK) {
        rc = TROVE_FAIL(diag, rc, 0, "capture %s: flows (slot %" PRIu64 "): %s", name, slot,
                        rc == TROVE_ERR_CHECKSUM
                            ? "its stored bytes do not hash to its name: the object is damaged "
                              "(importing the capture again heals it)"
                            : trove_strerror(rc));
        goto out;
    }
    if (b.len != h.flows_bytes) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                        "capture %s: flows (slot %" PRIu64 ") is %zu bytes; the header says %"
                        PRIu64,
                        name, slot, b.len, h.flows_bytes);
        goto out;
    }
    seg.v = v;
    seg.h = &h;
    seg.name = name;
    ev.count = h.info.events;
    ev.get = segment_event;
    ev.ctx = &seg;
    if ((rc = trove_flows_decode_events(b.ptr, b.len, &ev, &got, diag)) != TROVE_OK) {
        if (!seg.failed)
            rc = trove__capture_prefix_diag(diag, rc, name, "flows");
        goto out;
    }
    if (got.len != h.info.flows) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                        "capture %s: flows (slot %" PRIu64 ") holds %zu rows; the header says %"
                        PRIu64,
                        name, slot, got.len, h.info.flows);
        goto out;
    }
    {
        size_t k = 0;
        for (size_t i = 0; i < got.len; i++)
            if (got.f[i].ts_ns >= from_ns && (to_ns == UINT64_MAX || got.f[i].ts_ns < to_ns))
                got.f[k++] = got.f[i];
        if ((rc = trove_flows_reserve(flows, k)) != TROVE_OK) {
            rc = TROVE_FAIL(diag, rc, 0, "out of memory");
            goto out;
        }
        if (k > 0)
            memcpy(flows->f + flows->len, got.f, k * sizeof *got.f);
        flows->len += k;
    }
out:
    segment_events_free(&seg);
    trove_flows_free(&got);
    trove_bytes_free(&b);
    trove_capture_header_free(&h);
    trove_volume_close(v);
    return rc;
}


int trove_capture_flows_key(struct trove_store *s, const char *name, struct trove_digest key[2],
                            struct trove_diag *diag)
{
    struct trove_capture_header h;
    struct trove_volume *v = NULL;
    int rc;

    if (!s || !key)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "a flows key needs a store and an output");
    if ((rc = trove__capture_open_read(s, name, &v, &h, diag)) != TROVE_OK)
        return rc;
    memset(key, 0, 2 * sizeof *key);
    rc = trove_volume_slot_digests(v, 0, 1, &key[0]);
    if (rc == TROVE_OK && h.info.flows > 0)
        rc = trove_volume_slot_digests(v, TROVE__CAPTURE_SLOT_SEGMENT0 + h.info.segments, 1,
                                       &key[1]);
    if (rc != TROVE_OK)
        rc = TROVE_FAIL(diag, rc, 0, "capture %s: %s", name, trove_strerror(rc));
    trove_capture_header_free(&h);
    trove_volume_close(v);
    return rc;
}
