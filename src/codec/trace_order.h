/*
 * trace_order.h (internal to src/codec): the one rule that gives an imported trace its depths
 * and its order, shared by the importers of outside traces (chrome_json.c, perfetto_read.c)
 * so that a trace exported by trove and imported again comes back in the same order with the
 * same depths, whichever format carried it.
 */
#ifndef TROVE_TRACE_ORDER_H
#define TROVE_TRACE_ORDER_H

#include <stddef.h>
#include <stdint.h>

/* An event being imported. `seq` is its position in the input (ties keep input order);
 * `track` is the importer's own (a track not yet given its tid), ignored here. */
struct trove__trec {
    uint64_t start, dur;   /* dur: a counter's value bits (taken as 0 here) */
    uint32_t pid, tid, name, seq, track;
    uint8_t kind, extra, depth;
    uint8_t depth_given;   /* nonzero: depth is the trace's own (trove wrote it), kept */
};

/*
 * Depth, then order. Per thread (pid, tid), in order of (start, longer first, seq), an
 * event's depth is the number of earlier zones whose [start, start + dur) contains its start
 * (a zero-length zone and a counter contain nothing), capped at 255 — unless the trace gave
 * the event's depth (depth_given), which is kept. Then r is sorted by
 * (start, pid, tid, depth, seq). *threads_out gets the number of distinct (pid, tid).
 * Returns TROVE_OK or TROVE_ERR_NOMEM (r is then in thread order, depths unset).
 */
int trove__trace_order(struct trove__trec *r, size_t n, uint32_t *threads_out);

#endif
