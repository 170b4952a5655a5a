/*
 * trace_emit.h (internal to src/codec): the two output formats of the trace writer
 * (trace_writer.c), each told the capture's events and flow rows one at a time in the
 * schedule's order (trace_sched.h) and writing its bytes into a trove__tout as it goes:
 * chrome_export.c (Chrome trace JSON) and perfetto_write.c (a Perfetto protobuf trace).
 * Neither holds an event after the call that gives it.
 */
#ifndef TROVE_TRACE_EMIT_H
#define TROVE_TRACE_EMIT_H

#include <stddef.h>
#include <stdint.h>

#include "trace_sched.h"
#include "trove/attrs.h"

/* ---- Chrome JSON (chrome_export.c) ---------------------------------------------------- */

/* Chrome writes a begin and an end of these (b/e, S/F): the async spans, which live on a
 * synthetic tid (an async track); every other event is one line. A zone of a real thread
 * whose extra happens to be 1 or 2 (the generator's category, say) is a thread's zone. */
static inline int trove__cj_async(uint8_t kind, uint8_t extra, uint32_t tid)
{
    return kind == TROVE_KIND_ZONE && trove_tid_is_synthetic(tid) &&
           (extra == TROVE_ASYNC_NESTABLE || extra == TROVE_ASYNC_LEGACY ||
            extra == TROVE_ASYNC_STEP);
}

static inline int trove__cj_paired(uint8_t kind, uint8_t extra, uint32_t tid)
{
    return trove__cj_async(kind, extra, tid) && extra != TROVE_ASYNC_STEP;
}

struct trove__cj;

/* A Chrome writer over names (borrowed, may be NULL) and the flow rows (borrowed until
 * free; trove__cj_flow is given pointers into them). TROVE_OK or TROVE_ERR_NOMEM. */
int trove__cj_new(const struct trove_names *names, const struct trove_flow *flows,
                  size_t nflows, struct trove__cj **out);
void trove__cj_free(struct trove__cj *c);
/* The events' and the trace's attributes (borrowed; NULL: none; rows in event order). */
void trove__cj_attrs(struct trove__cj *c, const struct trove_attrs *attrs,
                     const struct trove_attrs *meta);
/* The document's head and the metadata events (the names table's). */
int trove__cj_begin(struct trove__cj *c, struct trove__tout *o);
/* Event r, its begin or (end) its end. Errors: TROVE_ERR_INVALID (a counter whose value is
 * not finite; diag names the event), TROVE_ERR_NOMEM, the sink's. */
int trove__cj_event(struct trove__cj *c, const struct trove__tsrec *r, int end,
                    struct trove__tout *o, struct trove_diag *diag);
int trove__cj_flow(struct trove__cj *c, const struct trove_flow *f, struct trove__tout *o);
/* The document's tail. */
int trove__cj_end(struct trove__cj *c, struct trove__tout *o);

/* ---- Perfetto (perfetto_write.c) -------------------------------------------------------- */

/* Perfetto writes a begin and an end of these (slices): every zone kind, and any other
 * event but a counter that has a duration (so that the reader gets it back). */
static inline int trove__pf_slice(uint8_t kind, uint64_t dur_ns)
{
    return kind != TROVE_KIND_COUNTER &&
           (kind == TROVE_KIND_ZONE || kind == TROVE_KIND_FRAME || kind == TROVE_KIND_LOCK ||
            dur_ns > 0);
}

struct trove__pf;

/* A Perfetto writer laid out for the tracks of the events (ev), the flow rows and the
 * names (all borrowed until free). Errors: TROVE_ERR_LIMIT (more than 2^22 processes),
 * TROVE_ERR_NOMEM. */
int trove__pf_new(const struct trove__tset *ev, const struct trove_flow *flows, size_t nflows,
                  const struct trove_names *names, struct trove__pf **out,
                  struct trove_diag *diag);
void trove__pf_free(struct trove__pf *w);
/* The events' attributes (borrowed; NULL: none; rows in event order): each event's go with
 * its begin (docs/formats/perfetto.md, "Attributes"). */
void trove__pf_attrs(struct trove__pf *w, const struct trove_attrs *attrs);
/*
 * The lane of slice r: given every slice in START order, each goes on the first lane of its
 * track whose open slices all contain it. Lanes are counted for the track descriptors; after
 * trove__pf_lanes_again the same slices in the same order get the same lanes again.
 * Errors: TROVE_ERR_LIMIT (more than 1,024 lanes on a track), TROVE_ERR_NOMEM.
 */
int trove__pf_lane(struct trove__pf *w, const struct trove__tsrec *r, uint16_t *lane_out,
                   struct trove_diag *diag);
/* Every slice has had its lane: fix the child tracks, and start the lanes over. */
void trove__pf_lanes_again(struct trove__pf *w);
/* The clock packet (at t0, the first item's time) and the track descriptors. */
int trove__pf_begin(struct trove__pf *w, uint64_t t0, struct trove__tout *o);
/* Event r (r->lane: its lane, for a slice), its begin or (end) its end. */
int trove__pf_event(struct trove__pf *w, const struct trove__tsrec *r, int end,
                    struct trove__tout *o);
int trove__pf_flow(struct trove__pf *w, const struct trove_flow *f, struct trove__tout *o);
/* The names no event used. */
int trove__pf_end(struct trove__pf *w, struct trove__tout *o);

#endif
