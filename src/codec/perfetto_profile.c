/*
 * perfetto_profile.c: a sampling profile out as Perfetto's own profile packets (the writer
 * half of perfetto_profile.h), so that Perfetto UI shows the samples and trove reads them
 * back (perfetto_profile_read.c).
 *
 *   packet := trusted_packet_sequence_id 10, sequence_flags 13 = NEEDS_INCREMENTAL_STATE,
 *             interned_data 12 {
 *               mapping_paths 17 {iid, str}      a module's path      iid = string id + 1
 *               function_names 5 {iid, str}      a function           iid = string id + 1
 *               source_paths 18  {iid, str}      a source file        iid = string id + 1
 *               mappings 19 {iid 1, path_string_ids 7}  a module      iid = its path's
 *               frames 6 {iid 1, function_name_id 2, mapping_id 3, rel_pc 4,
 *                         source_path_iid 5, line_number 6}           iid = frame id + 1
 *               callstacks 7 {iid 1, frame_ids 2 (outermost first)}   iid = stack id }
 *             ... as many as it takes, each under 64 KiB, every entry before its first use
 *   then      := per sample: timestamp 8, timestamp_clock_id 58 = BOOTTIME, sequence 10,
 *                flags 13, perf_sample 66 {pid 2, tid 3, callstack_iid 4}
 *
 * The samples come after every event: each carries its own time on CLOCK_BOOTTIME (which the
 * trace's first packet sets equal to the capture's clock), so they need not be merged into
 * the events' incremental times. A frame's address is its offset in its module's file, so
 * a mapping starts at file offset 0 and rel_pc is the address. A frame's inline depth has no
 * field: it is its place in the callstacks (an inlined frame follows, leafward, the frame of
 * the same address it is inlined into), which the reader reads back. Only the stacks that
 * samples use are written, and the frames and strings those stacks use. Memory: a byte per
 * string, frame and stack for what was written, and one callstack's frames.
 */
#include "perfetto_profile.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)60 << 10)   /* interned data per packet, about */
#define CLOCK_BOOTTIME 6

struct pw {
    const struct trove_profile *p;
    uint32_t seq;
    struct trove__tout *o;
    struct trove_bytes in, entry, pkt;
    uint8_t *str_sent;     /* per string id: 1 mapping path, 2 function name, 4 source path */
    uint8_t *map_sent;     /* per string id: its mapping */
    uint8_t *frame_sent;   /* per frame id */
    uint8_t *stack_used;   /* per stack id */
    uint32_t *path;        /* one callstack's frames */
};

/* The interned data gathered so far as one packet. */
static int flush_interned(struct pw *w)
{
    int rc;
    if (!w->in.len)
        return TROVE_OK;
    w->pkt.len = 0;
    if ((rc = trove__pb_uint(&w->pkt, 10, w->seq)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->pkt, 13, 2)) != TROVE_OK ||
        (rc = trove__pb_bytes(&w->pkt, 12, w->in.ptr, w->in.len)) != TROVE_OK ||
        (rc = trove__pb_bytes(&w->o->buf, 1, w->pkt.ptr, w->pkt.len)) != TROVE_OK)
        return rc;
    w->in.len = 0;
    return trove__tout_flush(w->o, TROVE__TOUT_CHUNK);
}

/* w->entry as InternedData field `field`, in a packet of its own when this one is full. */
static int put_entry(struct pw *w, uint32_t field)
{
    int rc;
    if (w->in.len + w->entry.len > CHUNK && (rc = flush_interned(w)) != TROVE_OK)
        return rc;
    return trove__pb_bytes(&w->in, field, w->entry.ptr, w->entry.len);
}

/* String id as an InternedString of table `field` (bit: which table), once. */
static int put_string(struct pw *w, uint32_t id, uint8_t bit, uint32_t field)
{
    size_t len = 0;
    const char *s;
    int rc;
    if (w->str_sent[id] & bit)
        return TROVE_OK;
    s = trove_profile_string_get(w->p, id, &len);
    w->entry.len = 0;
    if ((rc = trove__pb_uint(&w->entry, 1, (uint64_t)id + 1)) != TROVE_OK ||
        (rc = trove__pb_bytes(&w->entry, 2, s ? s : "", s ? len : 0)) != TROVE_OK ||
        (rc = put_entry(w, field)) != TROVE_OK)
        return rc;
    w->str_sent[id] |= bit;
    return TROVE_OK;
}

/* Frame id, its strings and mapping first, once. */
static int put_frame(struct pw *w, uint32_t id)
{
    const struct trove_profile_frame *f = trove_profile_frame_get(w->p, id);
    int rc;

    if (w->frame_sent[id] || !f)
        return TROVE_OK;
    if ((rc = put_string(w, f->module, 1, TROVE__PF_IN_MAPPING_PATHS)) != TROVE_OK ||
        (rc = put_string(w, f->function, 2, TROVE__PF_IN_FUNCTION_NAMES)) != TROVE_OK ||
        (f->file && (rc = put_string(w, f->file, 4, TROVE__PF_IN_SOURCE_PATHS)) != TROVE_OK))
        return rc;
    if (!w->map_sent[f->module]) {
        w->entry.len = 0;
        if ((rc = trove__pb_uint(&w->entry, 1, (uint64_t)f->module + 1)) != TROVE_OK ||
            (rc = trove__pb_uint(&w->entry, 7, (uint64_t)f->module + 1)) != TROVE_OK ||
            (rc = put_entry(w, TROVE__PF_IN_MAPPINGS)) != TROVE_OK)
            return rc;
        w->map_sent[f->module] = 1;
    }
    w->entry.len = 0;
    if ((rc = trove__pb_uint(&w->entry, 1, (uint64_t)id + 1)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->entry, 2, (uint64_t)f->function + 1)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->entry, 3, (uint64_t)f->module + 1)) != TROVE_OK ||
        (rc = trove__pb_uint(&w->entry, 4, f->address)) != TROVE_OK ||
        (f->file && (rc = trove__pb_uint(&w->entry, 5, (uint64_t)f->file + 1)) != TROVE_OK) ||
        (f->line && (rc = trove__pb_uint(&w->entry, 6, f->line)) != TROVE_OK) ||
        (rc = put_entry(w, TROVE__PF_IN_FRAMES)) != TROVE_OK)
        return rc;
    w->frame_sent[id] = 1;
    return TROVE_OK;
}

/* Stack id as a Callstack, its frames first. */
static int put_stack(struct pw *w, uint32_t id)
{
    size_t n = 0;
    int rc;

    for (uint32_t s = id; s != TROVE_PROFILE_ROOT; s = trove_profile_stack_get(w->p, s)->parent)
        w->path[n++] = trove_profile_stack_get(w->p, s)->frame;
    for (size_t i = 0; i < n; i++)
        if ((rc = put_frame(w, w->path[i])) != TROVE_OK)
            return rc;
    w->entry.len = 0;
    if ((rc = trove__pb_uint(&w->entry, 1, id)) != TROVE_OK)
        return rc;
    for (size_t i = n; i-- > 0;) /* outermost first */
        if ((rc = trove__pb_uint(&w->entry, 2, (uint64_t)w->path[i] + 1)) != TROVE_OK)
            return rc;
    return put_entry(w, TROVE__PF_IN_CALLSTACKS);
}

int trove__pf_profile_write(const struct trove_profile *p, uint32_t seq_id,
                            struct trove__tout *o, uint64_t *samples_out)
{
    const struct trove_profile_sample *sm = p ? trove_profile_samples(p) : NULL;
    size_t ns = p ? trove_profile_sample_count(p) : 0, nstack, depth = 0;
    struct pw w;
    int rc = TROVE_ERR_NOMEM;

    *samples_out = 0;
    if (ns == 0)
        return TROVE_OK;
    memset(&w, 0, sizeof w);
    w.p = p;
    w.seq = seq_id;
    w.o = o;
    nstack = trove_profile_stack_count(p);
    /* the longest stack, for the path buffer: a stack's parent has a smaller id */
    {
        uint32_t *d = trove__calloc(nstack + 1, sizeof *d);
        if (!d)
            goto out;
        for (uint32_t s = 1; s <= nstack; s++) {
            d[s] = d[trove_profile_stack_get(p, s)->parent] + 1;
            if (d[s] > depth)
                depth = d[s];
        }
        free(d);
    }
    if (!(w.str_sent = trove__calloc(trove_profile_string_count(p) + 1, 1)) ||
        !(w.map_sent = trove__calloc(trove_profile_string_count(p) + 1, 1)) ||
        !(w.frame_sent = trove__calloc(trove_profile_frame_count(p) + 1, 1)) ||
        !(w.stack_used = trove__calloc(nstack + 1, 1)) ||
        !(w.path = trove__malloc((depth + 1) * sizeof *w.path)))
        goto out;
    for (size_t i = 0; i < ns; i++) {
        uint32_t s = sm[i].stack;
        if (s == TROVE_PROFILE_ROOT || w.stack_used[s])
            continue;
        w.stack_used[s] = 1;
        if ((rc = put_stack(&w, s)) != TROVE_OK)
            goto out;
    }
    if ((rc = flush_interned(&w)) != TROVE_OK)
        goto out;
    for (size_t i = 0; i < ns; i++) {
        w.entry.len = w.pkt.len = 0;
        if ((rc = trove__pb_uint(&w.entry, 2, sm[i].pid)) != TROVE_OK ||
            (rc = trove__pb_uint(&w.entry, 3, sm[i].tid)) != TROVE_OK ||
            (sm[i].stack && (rc = trove__pb_uint(&w.entry, 4, sm[i].stack)) != TROVE_OK) ||
            (rc = trove__pb_uint(&w.pkt, 8, sm[i].time_ns)) != TROVE_OK ||
            (rc = trove__pb_uint(&w.pkt, 58, CLOCK_BOOTTIME)) != TROVE_OK ||
            (rc = trove__pb_uint(&w.pkt, 10, seq_id)) != TROVE_OK ||
            (rc = trove__pb_uint(&w.pkt, 13, 2)) != TROVE_OK ||
            (rc = trove__pb_bytes(&w.pkt, TROVE__PF_PERF_SAMPLE, w.entry.ptr, w.entry.len)) !=
                TROVE_OK ||
            (rc = trove__pb_bytes(&o->buf, 1, w.pkt.ptr, w.pkt.len)) != TROVE_OK ||
            (rc = trove__tout_flush(o, TROVE__TOUT_CHUNK)) != TROVE_OK)
            goto out;
    }
    *samples_out = ns;
    rc = TROVE_OK;
out:
    trove_bytes_free(&w.in);
    trove_bytes_free(&w.entry);
    trove_bytes_free(&w.pkt);
    free(w.str_sent);
    free(w.map_sent);
    free(w.frame_sent);
    free(w.stack_used);
    free(w.path);
    return rc;
}
