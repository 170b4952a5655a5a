/*
 * perfetto_write.c: a capture as a Perfetto protobuf trace, a packet at a time (trace_emit.h;
 * the streaming writer, trace_writer.c, drives it; docs/formats/perfetto.md has the subset
 * and every field number).
 *
 *   Trace       := packet*                       (field 1, length-delimited, each a TracePacket)
 *   packet 0    := clock_snapshot {BOOTTIME = T0, clock 64 = T0 incremental}, timestamp T0 on
 *                  BOOTTIME, sequence_flags INCREMENTAL_STATE_CLEARED, trace_packet_defaults
 *                  {timestamp_clock_id 64}
 *   then        := track_descriptor packets: a process track per pid, a track per (pid, tid)
 *                  (a thread's, or an async or counter track for a synthetic tid), and child
 *                  tracks for a thread's counters and for zones that overlap without nesting;
 *                  a process's and a real thread's sort index ride in their descriptor's
 *                  legacy_sort_index (3), which a synthetic tid's track has no place for
 *   then        := track_event packets in time order (trace_sched.c): a slice's begin and end,
 *                  instants, counters, flow points; interned_data carries each event name
 *                  (iid = name_id + 1) and category the first time a packet uses it
 *   last        := interned_data of the names no event used (if any)
 *
 * Every packet is on sequence 1 (trusted_packet_sequence_id) and, after the first, says it
 * needs the sequence's incremental state; its timestamp is the delta from the previous packet
 * in ns on clock 64. Track uuids are small (short varints) and say what the track is in
 * their low two bits: (p + 1) << 2 for the process of the p-th pid; k << 2 | 1 for thread
 * track k; ((tid - TROVE_TID_SYNTHETIC) << 22 | p) << 2 | 2 for a synthetic tid of the p-th
 * pid, which the reader turns back into the tid; c << 2 | 3 for the c-th child track (a
 * thread's counters, an overlap lane). What TrackEvent has no field for rides in an
 * interned category: "trove:KIND:EXTRA" on an event whose kind and extra are not its type's
 * plain ones (an async span, a process instant, a frame zone), and "trove:flow:s|t|f[:e]"
 * on the instant that stands for a flow row (its flow_ids or terminating_flow_ids hold the
 * id). Messages are built inside out in scratch buffers (a message's length comes before it),
 * and each packet is appended to the output buffer, which goes to the sink every 64 KiB.
 *
 * The descriptors need the lanes, which need every slice: the writer gives them in START
 * order once (trove__pf_lane, before trove__pf_begin) and again as it writes them. What is
 * kept: per track, its kind, lane count and first child, and the ends of the slices open on
 * each of its lanes (8 bytes a slice open at once: the nesting, not the capture's length);
 * per event name, whether it was interned yet.
 */
#include "protobuf.h"
#include "trace_depth.h"
#include "trace_emit.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* TracePacket */
#define TP_CLOCK_SNAPSHOT 6
#define TP_TIMESTAMP 8
#define TP_SEQUENCE_ID 10
#define TP_TRACK_EVENT 11
#define TP_INTERNED_DATA 12
#define TP_SEQUENCE_FLAGS 13
#define TP_TIMESTAMP_CLOCK_ID 58
#define TP_DEFAULTS 59
#define TP_TRACK_DESCRIPTOR 60
/* TrackEvent */
#define TE_CATEGORY_IIDS 3
#define TE_TYPE 9
#define TE_NAME_IID 10
#define TE_TRACK_UUID 11
#define TE_DOUBLE_COUNTER 44
#define TE_DEBUG_ANNOTATIONS 4
#define TE_CATEGORIES 22
#define DA_BOOL 2
#define DA_INT 4
#define DA_DOUBLE 5
#define DA_STRING 6
#define DA_JSON 9
#define DA_NAME 10
#define DA_NAME_IID 1
#define IN_DEBUG_ANNOTATION_NAMES 3
#define TE_FLOW_IDS 47
#define TE_TERMINATING_FLOW_IDS 48
/* ProcessDescriptor.legacy_sort_index and ThreadDescriptor.legacy_sort_index (int32) */
#define PD_LEGACY_SORT_INDEX 3
#define TD_LEGACY_SORT_INDEX 3
/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
#define TD_UUID 1
#define TD_NAME 2
#define TD_PROCESS 3
#define TD_THREAD 4
#define TD_PARENT 5
#define TD_COUNTER 8

#define SEQ_ID 1
#define CLOCK_BOOTTIME 6
#define CLOCK_TROVE 64
#define MAX_LANES 1024

enum { BASE_THREAD, BASE_ASYNC, BASE_COUNTER };

struct name_ref {
    uint32_t id;
    const char *str;
    size_t len;
    uint8_t sent;
};

/* The slices open on one lane of a track: their ends, innermost last. */
struct lane_stack {
    uint64_t *end;
    size_t n, cap;
};

/* A track's lanes in use. */
struct track_lanes {
    struct lane_stack *ln;
    size_t nl, cap;
};

struct trove__pf {
    const struct trove_names *names;
    struct trove_bytes pkt, te, sub, sub2, in;   /* scratch messages */
    struct trove__ttracks tr;
    uint8_t *base;            /* each track's kind (BASE_*) */
    uint16_t *lanes;          /* each track's lane count beyond lane 0 */
    struct track_lanes *tl;   /* each track's lanes in use */
    uint8_t *has_flow;
    uint64_t *child0;         /* each track's first child track */
    struct name_ref *names_by_id;  /* the event names, by id */
    size_t nnames;
    uint8_t *cat_sent;        /* the categories interned so far, by iid (cat_iid) */
    struct trove__tdepth *depth; /* the reader's depths, predicted (trace_depth.h) */
    uint64_t last_ts;
    const struct trove_attrs *attrs; /* the events' attributes (may be NULL) */
    uint32_t *aname_iid;      /* the iid each annotation name was interned with, 0 before
                                 it: at 2k (ARG) or 2k + 1 (FIELD) for attrs' string k; iids
                                 in order of first use, so that the bytes do not depend on
                                 the table's ids; made at the first annotation */
    uint32_t anames;          /* iids handed out */
};

/* Track uuids, small so that their varints are: the low two bits say what a track is. */
static uint64_t uuid_process(const struct trove__pf *w, uint32_t pid)
{
    size_t lo = 0, hi = w->tr.npids;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->tr.pids[mid] < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint64_t)(lo + 1) << 2;
}

static uint64_t uuid_base(const struct trove__pf *w, size_t k)
{
    const struct trove__ttrack *tr = &w->tr.t[k];
    if (w->base[k] == BASE_THREAD)
        return (uint64_t)k << 2 | 1;
    return ((uint64_t)(tr->tid - TROVE_TID_SYNTHETIC) << 22 | ((uuid_process(w, tr->pid) >> 2) - 1))
               << 2 |
           2;
}

static uint64_t uuid_counters(const struct trove__pf *w, size_t k)
{
    return (uint64_t)w->child0[k] << 2 | 3;
}

static uint64_t uuid_lane(const struct trove__pf *w, size_t k, unsigned lane)
{
    uint64_t first = w->child0[k] + (w->tr.t[k].has_counter && w->base[k] != BASE_COUNTER);
    return (first + lane - 1) << 2 | 3;
}

/* ---- the packets -------------------------------------------------------------------------- */

/* Append packet w->pkt to the output as Trace.packet. */
static int emit(struct trove__pf *w, struct trove__tout *o)
{
    int rc = trove__pb_bytes(&o->buf, 1, w->pkt.ptr, w->pkt.len);
    return rc != TROVE_OK ? rc : trove__tout_flush(o, TROVE__TOUT_CHUNK);
}

/* The fields every packet after the first starts with: its delta time, sequence and flags. */
static int packet_head(struct trove__pf *w, uint64_t ts)
{
    int rc;
    w->pkt.len = 0;
    if ((rc = trove__pb_uint(&w->pkt, TP_TIMESTAMP, ts - w->last_ts)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->pkt, TP_SEQUENCE_ID, SEQ_ID)) != TROVE_OK)
        return rc;
    w->last_ts = ts;
    return trove__pb_uint(&w->pkt, TP_SEQUENCE_FLAGS, 2); /* SEQ_NEEDS_INCREMENTAL_STATE */
}

static int clock_packet(struct trove__pf *w, uint64_t t0, struct trove__tout *out)
{
    int rc;
    w->pkt.len = w->sub.len = 0;
    /* clock_snapshot { clocks { clock_id 6, timestamp T0 } clocks { 64, T0, incremental } } */
    w->sub2.len = 0;
    if ((rc = trove__pb_uint(&w->sub2, 1, CLOCK_BOOTTIME)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->sub2, 2, t0)) != TROVE_OK ||
        (rc = trove__pb_bytes(&w->sub, 1, w->sub2.ptr, w->sub2.len)) != TROVE_OK)
        return rc;
    w->sub2.len = 0;
    if ((rc = trove__pb_uint(&w->sub2, 1, CLOCK_TROVE)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->sub2, 2, t0)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->sub2, 3, 1)) != TROVE_OK ||
        (rc = trove__pb_bytes(&w->sub, 1, w->sub2.ptr, w->sub2.len)) != TROVE_OK ||
        (rc = trove__pb_bytes(&w->pkt, TP_CLOCK_SNAPSHOT, w->sub.ptr, w->sub.len)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->pkt, TP_TIMESTAMP, t0)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->pkt, TP_SEQUENCE_ID, SEQ_ID)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->pkt, TP_SEQUENCE_FLAGS, 1)) != TROVE_OK || /* CLEARED */
        (rc = trove__pb_uint(&w->pkt, TP_TIMESTAMP_CLOCK_ID, CLOCK_BOOTTIME)) != TROVE_OK)
        return rc;
    w->sub.len = 0;
    if ((rc = trove__pb_uint(&w->sub, TP_TIMESTAMP_CLOCK_ID, CLOCK_TROVE)) != TROVE_OK ||
        (rc = trove__pb_bytes(&w->pkt, TP_DEFAULTS, w->sub.ptr, w->sub.len)) != TROVE_OK)
        return rc;
    w->last_ts = t0;
    return emit(w, out);
}

/* A track_descriptor packet of the descriptor in w->te. */
static int descriptor_packet(struct trove__pf *w, struct trove__tout *out)
{
    int rc = packet_head(w, w->last_ts);
    if (rc == TROVE_OK)
        rc = trove__pb_bytes(&w->pkt, TP_TRACK_DESCRIPTOR, w->te.ptr, w->te.len);
    return rc != TROVE_OK ? rc : emit(w, out);
}

static int descriptors(struct trove__pf *w, struct trove__tout *out)
{
    char lane_name[32];
    int rc;

    for (size_t i = 0; i < w->tr.npids; i++) {
        uint32_t pid = w->tr.pids[i];
        size_t len = 0;
        const char *name = w->names ? trove_names_get(w->names, TROVE_NAME_PROCESS, pid, 0,
                                                         &len)
                                       : NULL;
        int32_t sort = 0;
        int has_sort = w->names &&
                       trove_names_get_sort(w->names, TROVE_NAME_PROCESS_SORT, pid, 0, &sort);
        w->te.len = w->sub.len = 0;
        if ((rc = trove__pb_int32(&w->sub, 1, (int32_t)pid)) != TROVE_OK ||
            (has_sort && (rc = trove__pb_int32(&w->sub, PD_LEGACY_SORT_INDEX, sort)) != TROVE_OK) ||
            (name && (rc = trove__pb_bytes(&w->sub, 6, name, len)) != TROVE_OK) ||
            (rc = trove__pb_uint(&w->te, TD_UUID, uuid_process(w, pid))) != TROVE_OK ||
            (rc = trove__pb_bytes(&w->te, TD_PROCESS, w->sub.ptr, w->sub.len)) != TROVE_OK ||
            (rc = descriptor_packet(w, out)) != TROVE_OK)
            return rc;
    }
    for (size_t k = 0; k < w->tr.n; k++) {
        const struct trove__ttrack *tr = &w->tr.t[k];
        w->te.len = w->sub.len = 0;
        if ((rc = trove__pb_uint(&w->te, TD_UUID, uuid_base(w, k))) != TROVE_OK)
            return rc;
        if (w->base[k] == BASE_THREAD) {
            int32_t sort = 0;
            int has_sort = w->names && trove_names_get_sort(w->names, TROVE_NAME_THREAD_SORT,
                                                               tr->pid, tr->tid, &sort);
            if ((rc = trove__pb_int32(&w->sub, 1, (int32_t)tr->pid)) != TROVE_OK ||
                (rc = trove__pb_int32(&w->sub, 2, (int32_t)tr->tid)) != TROVE_OK ||
                (has_sort &&
                 (rc = trove__pb_int32(&w->sub, TD_LEGACY_SORT_INDEX, sort)) != TROVE_OK) ||
                (tr->name &&
                 (rc = trove__pb_bytes(&w->sub, 5, tr->name, tr->name_len)) != TROVE_OK) ||
                (rc = trove__pb_bytes(&w->te, TD_THREAD, w->sub.ptr, w->sub.len)) != TROVE_OK)
                return rc;
        } else {
            if ((rc = trove__pb_uint(&w->te, TD_PARENT, uuid_process(w, tr->pid))) != TROVE_OK ||
                (tr->name &&
                 (rc = trove__pb_bytes(&w->te, TD_NAME, tr->name, tr->name_len)) != TROVE_OK) ||
                (w->base[k] == BASE_COUNTER &&
                 (rc = trove__pb_bytes(&w->te, TD_COUNTER, "", 0)) != TROVE_OK))
                return rc;
        }
        if ((rc = descriptor_packet(w, out)) != TROVE_OK)
            return rc;
        if (tr->has_counter && w->base[k] != BASE_COUNTER) {
            w->te.len = 0;
            if ((rc = trove__pb_uint(&w->te, TD_UUID, uuid_counters(w, k))) != TROVE_OK ||
                (rc = trove__pb_uint(&w->te, TD_PARENT, uuid_base(w, k))) != TROVE_OK ||
                (rc = trove__pb_bytes(&w->te, TD_NAME, "counters", 8)) != TROVE_OK ||
                (rc = trove__pb_bytes(&w->te, TD_COUNTER, "", 0)) != TROVE_OK ||
                (rc = descriptor_packet(w, out)) != TROVE_OK)
                return rc;
        }
        for (unsigned l = 1; l <= w->lanes[k]; l++) {
            int n = snprintf(lane_name, sizeof lane_name, "overlap %u", l);
            w->te.len = 0;
            if ((rc = trove__pb_uint(&w->te, TD_UUID, uuid_lane(w, k, l))) != TROVE_OK ||
                (rc = trove__pb_uint(&w->te, TD_PARENT, uuid_base(w, k))) != TROVE_OK ||
                (rc = trove__pb_bytes(&w->te, TD_NAME, lane_name, (size_t)n)) != TROVE_OK ||
                (rc = descriptor_packet(w, out)) != TROVE_OK)
                return rc;
        }
    }
    return TROVE_OK;
}

/* ---- interning -------------------------------------------------------------------------- */

/* The event name id's entry, or NULL when the names table has none. */
static struct name_ref *find_name(struct trove__pf *w, uint32_t id)
{
    size_t lo = 0, hi = w->nnames;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->names_by_id[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < w->nnames && w->names_by_id[lo].id == id ? &w->names_by_id[lo] : NULL;
}

/* name_iid in w->te, and the name into w->in (InternedData) if not sent yet. */
static int use_name(struct trove__pf *w, uint32_t id)
{
    struct name_ref *r = find_name(w, id);
    int rc = trove__pb_uint(&w->te, TE_NAME_IID, (uint64_t)id + 1);
    if (rc != TROVE_OK || !r || r->sent)
        return rc;
    w->sub.len = 0;
    if ((rc = trove__pb_uint(&w->sub, 1, (uint64_t)id + 1)) != TROVE_OK ||
        (rc = trove__pb_bytes(&w->sub, 2, r->str, r->len)) != TROVE_OK ||
        (rc = trove__pb_bytes(&w->in, 2, w->sub.ptr, w->sub.len)) != TROVE_OK) /* event_names */
        return rc;
    r->sent = 1;
    return TROVE_OK;
}

/* The category iids: 1 + kind * 256 + extra for "trove:KIND:EXTRA", then the six flow
 * categories, then the depths. */
#define CAT_FLOW0 (1u + 256u * 256u)
#define CAT_DEPTH0 (CAT_FLOW0 + 6u) /* then "trove:depth:N" for N 0..255 */
#define CAT_COUNT (CAT_DEPTH0 + 256u)

/* category_iids in w->te for category iid (its text `cat`), interned into w->in the first
 * time. */
static int use_category(struct trove__pf *w, uint32_t iid, const char *cat)
{
    int rc;
    if (!w->cat_sent[iid]) {
        w->sub.len = 0;
        if ((rc = trove__pb_uint(&w->sub, 1, iid)) != TROVE_OK ||
            (rc = trove__pb_bytes(&w->sub, 2, cat, strlen(cat))) != TROVE_OK ||
            (rc = trove__pb_bytes(&w->in, 1, w->sub.ptr, w->sub.len)) != TROVE_OK)
            return rc; /* event_categories */
        w->cat_sent[iid] = 1;
    }
    return trove__pb_uint(&w->te, TE_CATEGORY_IIDS, iid);
}

/* The attribute rows of event seq into w->te: its FIELD row "cat" as a category of its own
 * (categories 22), its ARG rows as debug annotations (a name inline, the value by its type:
 * bool 2, int 4, double 5, string 6, JSON 9 as legacy JSON), its other FIELD rows as debug
 * annotations named "trove.field.KEY", which the reader takes back as FIELD rows. */
static int put_rows(struct trove__pf *w, uint64_t seq)
{
    const struct trove_attrs *a = w->attrs;
    size_t lo = trove_attrs_find(a, seq);
    int rc = TROVE_OK;

    for (; rc == TROVE_OK && a && lo < a->n && a->rows[lo].event == seq; lo++) {
        const struct trove_attr *r = &a->rows[lo];
        size_t klen = 0, vlen = 0;
        const char *k = trove_attrs_string(a, r->key, &klen), *v;
        uint64_t bits, iid;
        size_t slot;
        if (r->scope == TROVE_ATTR_TRACE)
            continue;
        if (r->scope == TROVE_ATTR_FIELD && klen == 3 && !memcmp(k, "cat", 3) &&
            r->type == TROVE_ATTR_STRING) {
            v = trove_attrs_string(a, r->v.s, &vlen);
            rc = trove__pb_bytes(&w->te, TE_CATEGORIES, v, vlen);
            continue;
        }
        /* the name, interned at its first use */
        slot = 2 * (size_t)r->key + (r->scope == TROVE_ATTR_FIELD);
        if (!w->aname_iid && !(w->aname_iid = trove__calloc(2 * a->nstr, sizeof *w->aname_iid)))
            return TROVE_ERR_NOMEM;
        iid = w->aname_iid[slot];
        if (!iid) {
            static const char pre[] = "trove.field.";
            iid = w->anames + 1;
            w->sub2.len = 0;
            if ((rc = trove__pb_uint(&w->sub2, 1, iid)) != TROVE_OK ||
                (rc = trove__pb_tag(&w->sub2, 2, TROVE__PB_LEN)) != TROVE_OK ||
                (rc = trove__pb_varint(&w->sub2, (r->scope == TROVE_ATTR_FIELD ? sizeof pre - 1 : 0) +
                                                     klen)) != TROVE_OK ||
                (r->scope == TROVE_ATTR_FIELD &&
                 (rc = trove_bytes_append(&w->sub2, pre, sizeof pre - 1)) != TROVE_OK) ||
                (rc = trove_bytes_append(&w->sub2, k, klen)) != TROVE_OK ||
                (rc = trove__pb_bytes(&w->in, IN_DEBUG_ANNOTATION_NAMES, w->sub2.ptr,
                                      w->sub2.len)) != TROVE_OK)
                return rc;
            w->aname_iid[slot] = (uint32_t)iid;
            w->anames++;
        }
        w->sub.len = 0;
        if ((rc = trove__pb_uint(&w->sub, DA_NAME_IID, iid)) != TROVE_OK)
            return rc;
        switch (r->type) {
        case TROVE_ATTR_INT:
            rc = trove__pb_uint(&w->sub, DA_INT, (uint64_t)r->v.i);
            break;
        case TROVE_ATTR_DOUBLE:
            memcpy(&bits, &r->v.d, 8);
            rc = trove__pb_fixed64(&w->sub, DA_DOUBLE, bits);
            break;
        case TROVE_ATTR_BOOL:
            rc = trove__pb_uint(&w->sub, DA_BOOL, r->v.b);
            break;
        default:
            v = trove_attrs_string(a, r->v.s, &vlen);
            rc = trove__pb_bytes(&w->sub, r->type == TROVE_ATTR_JSON ? DA_JSON : DA_STRING, v,
                                 vlen);
            break;
        }
        if (rc == TROVE_OK)
            rc = trove__pb_bytes(&w->te, TE_DEBUG_ANNOTATIONS, w->sub.ptr, w->sub.len);
    }
    return rc;
}

void trove__pf_attrs(struct trove__pf *w, const struct trove_attrs *attrs)
{
    w->attrs = attrs;
    free(w->aname_iid);
    w->aname_iid = NULL;
    w->anames = 0;
}

/* The packet for the track event in w->te (and the interned data in w->in) at ts. */
static int event_packet(struct trove__pf *w, uint64_t ts, struct trove__tout *out)
{
    int rc = packet_head(w, ts);
    if (rc == TROVE_OK)
        rc = trove__pb_bytes(&w->pkt, TP_TRACK_EVENT, w->te.ptr, w->te.len);
    if (rc == TROVE_OK && w->in.len)
        rc = trove__pb_bytes(&w->pkt, TP_INTERNED_DATA, w->in.ptr, w->in.len);
    return rc != TROVE_OK ? rc : emit(w, out);
}

/* ---- events ------------------------------------------------------------------------------ */

int trove__pf_event(struct trove__pf *w, const struct trove__tsrec *e, int end,
                    struct trove__tout *out)
{
    size_t k = trove__ttracks_find(&w->tr, e->pid, e->tid);
    uint64_t track;
    int type, plain, rc;
    char cat[24];

    w->te.len = w->in.len = 0;
    if (e->kind == TROVE_KIND_COUNTER) {
        type = 4;
        track = w->base[k] == BASE_COUNTER ? uuid_base(w, k) : uuid_counters(w, k);
        plain = e->extra == 0;
    } else if (trove__pf_slice(e->kind, e->dur_ns)) {
        type = end ? 2 : 1;
        track = e->lane ? uuid_lane(w, k, e->lane) : uuid_base(w, k);
        plain = e->kind == TROVE_KIND_ZONE && e->extra == 0;
    } else {
        type = 3;
        track = uuid_base(w, k);
        plain = e->kind == TROVE_KIND_INSTANT && e->extra == 0;
    }
    if ((rc = trove__pb_uint(&w->te, TE_TYPE, (uint64_t)type)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->te, TE_TRACK_UUID, track)) != TROVE_OK)
        return rc;
    if (type != 2) {
        if ((rc = use_name(w, e->name_id)) != TROVE_OK)
            return rc;
        if (!plain) {
            snprintf(cat, sizeof cat, "trove:%u:%u", e->kind, e->extra);
            if ((rc = use_category(w, 1u + 256u * e->kind + e->extra, cat)) != TROVE_OK)
                return rc;
        }
        if (type == 4 && (rc = trove__pb_fixed64(&w->te, TE_DOUBLE_COUNTER, e->dur_ns)) != TROVE_OK)
            return rc;
        if ((rc = put_rows(w, e->seq)) != TROVE_OK)
            return rc;
    }
    if (type == 1 || type == 3) { /* the depth, where the reader's geometry would miss it */
        uint8_t depth;
        if ((rc = trove__tdepth_next(w->depth, e->pid, e->tid, e->start_ns,
                                     type == 1 ? e->dur_ns : 0, &depth)) != TROVE_OK)
            return rc;
        if (depth != e->depth) {
            snprintf(cat, sizeof cat, "trove:depth:%u", (unsigned)e->depth);
            if ((rc = use_category(w, CAT_DEPTH0 + (uint32_t)e->depth, cat)) != TROVE_OK)
                return rc;
        }
    }
    return event_packet(w, end ? e->start_ns + e->dur_ns : e->start_ns, out);
}

int trove__pf_flow(struct trove__pf *w, const struct trove_flow *f, struct trove__tout *out)
{
    static const char phases[] = {'s', 't', 'f'};
    size_t k = trove__ttracks_find(&w->tr, f->pid, f->tid);
    char cat[24];
    int rc;

    w->te.len = w->in.len = 0;
    unsigned enclosing = f->flags & TROVE_FLOW_ENCLOSING ? 1u : 0u;
    snprintf(cat, sizeof cat, "trove:flow:%c%s", phases[f->phase], enclosing ? ":e" : "");
    if ((rc = trove__pb_uint(&w->te, TE_TYPE, 3)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->te, TE_TRACK_UUID, uuid_base(w, k))) != TROVE_OK ||
        (rc = use_name(w, f->name_id)) != TROVE_OK ||
        (rc = use_category(w, CAT_FLOW0 + 2u * f->phase + enclosing, cat)) != TROVE_OK ||
        (rc = trove__pb_fixed64(&w->te, f->phase == TROVE_FLOW_END ? TE_TERMINATING_FLOW_IDS
                                                                   : TE_FLOW_IDS,
                                f->id)) != TROVE_OK)
        return rc;
    return event_packet(w, f->ts_ns, out);
}

/* ---- layout ------------------------------------------------------------------------------- */

/*
 * Lanes: per track, in order of (start, longer first, seq) — the START order, which the
 * writer follows — a slice goes on the first lane whose open slices (those not ended at its
 * start) all contain it, so that every lane nests and a Perfetto track closes its slices
 * innermost first. A lane's ended slices are dropped when a slice looks at it.
 */
int trove__pf_lane(struct trove__pf *w, const struct trove__tsrec *r, uint16_t *lane_out,
                   struct trove_diag *diag)
{
    size_t k = trove__ttracks_find(&w->tr, r->pid, r->tid);
    struct track_lanes *T = &w->tl[k];
    uint64_t end = r->start_ns + r->dur_ns;
    struct lane_stack *L;
    size_t l;

    for (l = 0; l < T->nl; l++) {
        L = &T->ln[l];
        while (L->n && L->end[L->n - 1] <= r->start_ns)
            L->n--;
        if (L->n == 0 || L->end[L->n - 1] >= end)
            break;
    }
    if (l == T->nl) {
        if (T->nl == MAX_LANES) {
            const struct trove__ttrack *tr = &w->tr.t[k];
            return TROVE_FAIL(diag, TROVE_ERR_LIMIT, r->seq,
                              "pid %u tid %u has more than %u zones open at once that do not "
                              "nest (event %llu)",
                              tr->pid, tr->tid, MAX_LANES, (unsigned long long)r->seq);
        }
        if (T->nl == T->cap) {
            size_t cap = T->cap ? T->cap * 2 : 4;
            struct lane_stack *p = trove__realloc(T->ln, cap * sizeof *p);
            if (!p)
                return TROVE_ERR_NOMEM;
            memset(p + T->cap, 0, (cap - T->cap) * sizeof *p);
            T->ln = p;
            T->cap = cap;
        }
        T->nl++;
    }
    L = &T->ln[l];
    if (L->n == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 16;
        uint64_t *p = trove__realloc(L->end, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        L->end = p;
        L->cap = cap;
    }
    L->end[L->n++] = end;
    if (l > w->lanes[k])
        w->lanes[k] = (uint16_t)l;
    *lane_out = (uint16_t)l;
    return TROVE_OK;
}

void trove__pf_lanes_again(struct trove__pf *w)
{
    for (size_t k = 0, c = 0; k < w->tr.n; k++) {
        w->child0[k] = c;
        c += (w->tr.t[k].has_counter && w->base[k] != BASE_COUNTER) + w->lanes[k];
        for (size_t l = 0; l < w->tl[k].nl; l++)
            w->tl[k].ln[l].n = 0;
        w->tl[k].nl = 0;
    }
}

static int cmp_name_ref(const void *pa, const void *pb)
{
    const struct name_ref *a = pa, *b = pb;
    return a->id < b->id ? -1 : a->id > b->id;
}

int trove__pf_new(const struct trove__tset *ev, const struct trove_flow *flows, size_t nflows,
                  const struct trove_names *names, struct trove__pf **out,
                  struct trove_diag *diag)
{
    size_t nn = names ? trove_names_count(names) : 0, nt;
    struct trove__pf *w;
    int rc;

    *out = NULL;
    if (!(w = trove__calloc(1, sizeof *w)))
        return TROVE_ERR_NOMEM;
    w->names = names;
    TROVE_TRY(rc, trove__ttracks_build(ev, flows, nflows, names, &w->tr));
    rc = TROVE_ERR_NOMEM;
    nt = w->tr.n ? w->tr.n : 1;
    if (!(w->base = trove__calloc(nt, 1)) || !(w->lanes = trove__calloc(nt, sizeof *w->lanes)) ||
        !(w->tl = trove__calloc(nt, sizeof *w->tl)) || !(w->has_flow = trove__calloc(nt, 1)) ||
        !(w->child0 = trove__calloc(nt, sizeof *w->child0)) ||
        !(w->cat_sent = trove__calloc(CAT_COUNT, 1)) || trove__tdepth_new(&w->depth) != TROVE_OK ||
        !(w->names_by_id = trove__malloc((nn ? nn : 1) * sizeof *w->names_by_id)))
        goto out;
    for (size_t i = 0; i < nflows; i++)
        w->has_flow[trove__ttracks_find(&w->tr, flows[i].pid, flows[i].tid)] = 1;
    for (size_t k = 0; k < w->tr.n; k++) {
        const struct trove__ttrack *tr = &w->tr.t[k];
        if (!trove_tid_is_synthetic(tr->tid))
            w->base[k] = BASE_THREAD;
        else if (tr->has_counter && !tr->has_other && !w->has_flow[k])
            w->base[k] = BASE_COUNTER;
        else
            w->base[k] = BASE_ASYNC;
    }
    for (size_t i = 0; i < nn; i++) {
        struct trove_name_entry e;
        trove_names_entry(names, i, &e);
        if (e.type == TROVE_NAME_EVENT)
            w->names_by_id[w->nnames++] = (struct name_ref){e.a, e.str, e.len, 0};
    }
    qsort(w->names_by_id, w->nnames, sizeof *w->names_by_id, cmp_name_ref);
    if (w->tr.npids >= (size_t)1 << 22) {
        rc = TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "more than 2^22 processes");
        goto out;
    }
    trove__pf_lanes_again(w); /* no slice yet: the child tracks of the counters alone */
    *out = w;
    w = NULL;
    rc = TROVE_OK;
out:
    trove__pf_free(w);
    return rc;
}

void trove__pf_free(struct trove__pf *w)
{
    if (!w)
        return;
    free(w->aname_iid);
    trove_bytes_free(&w->pkt);
    trove_bytes_free(&w->te);
    trove_bytes_free(&w->sub);
    trove_bytes_free(&w->sub2);
    trove_bytes_free(&w->in);
    for (size_t k = 0; w->tl && k < w->tr.n; k++) {
        for (size_t l = 0; l < w->tl[k].cap; l++)
            free(w->tl[k].ln[l].end);
        free(w->tl[k].ln);
    }
    trove__ttracks_free(&w->tr);
    free(w->base);
    free(w->lanes);
    free(w->tl);
    free(w->has_flow);
    free(w->child0);
    free(w->cat_sent);
    trove__tdepth_free(w->depth);
    free(w->names_by_id);
    free(w);
}

int trove__pf_begin(struct trove__pf *w, uint64_t t0, struct trove__tout *out)
{
    int rc = clock_packet(w, t0, out);
    return rc != TROVE_OK ? rc : descriptors(w, out);
}

/* The names no event used, so that the names table comes back whole. */
int trove__pf_end(struct trove__pf *w, struct trove__tout *out)
{
    int rc;

    w->in.len = 0;
    for (size_t i = 0; i < w->nnames; i++) {
        struct name_ref *r = &w->names_by_id[i];
        if (r->sent)
            continue;
        w->sub.len = 0;
        if ((rc = trove__pb_uint(&w->sub, 1, (uint64_t)r->id + 1)) != TROVE_OK ||
            (rc = trove__pb_bytes(&w->sub, 2, r->str, r->len)) != TROVE_OK ||
            (rc = trove__pb_bytes(&w->in, 2, w->sub.ptr, w->sub.len)) != TROVE_OK)
            return rc;
        r->sent = 1;
    }
    if (w->in.len == 0)
        return TROVE_OK;
    if ((rc = packet_head(w, w->last_ts)) != TROVE_OK ||
        (rc = trove__pb_bytes(&w->pkt, TP_INTERNED_DATA, w->in.ptr, w->in.len)) != TROVE_OK)
        return rc;
    return emit(w, out);
}
