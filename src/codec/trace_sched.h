/*
 * trace_sched.h (internal to src/codec): how the two trace writers (chrome_export.c,
 * perfetto_write.c) lay a capture out — the tracks it has, and the one order in which its
 * events begin and end — so that both write what the importers read back the same way.
 */
#ifndef TROVE_TRACE_SCHED_H
#define TROVE_TRACE_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "trove/trace.h"

/* ---- tracks ---------------------------------------------------------------------------- */

/* A (pid, tid) of the capture: one that has events or flow rows, a thread name, or (a real
 * thread's) a sort index. */
struct trove__ttrack {
    uint32_t pid, tid;
    uint8_t has_counter;      /* counter events */
    uint8_t has_other;        /* any other events */
    const char *name;         /* its thread name (borrowed from the names), or NULL */
    size_t name_len;
};

struct trove__ttracks {
    struct trove__ttrack *t;  /* sorted by (pid, tid) */
    size_t n;
    uint32_t *pids;           /* every pid: of a track, a process name or sort index; sorted */
    size_t npids;
};

/* Collect the tracks and pids of t. TROVE_OK or TROVE_ERR_NOMEM. */
int trove__ttracks_build(const struct trove_trace *t, struct trove__ttracks *out);
/* The index of (pid, tid) in tr->t; the pair must be there. */
size_t trove__ttracks_find(const struct trove__ttracks *tr, uint32_t pid, uint32_t tid);
void trove__ttracks_free(struct trove__ttracks *tr);

/* ---- the schedule ---------------------------------------------------------------------- */

enum { TROVE__TS_START = 0, TROVE__TS_END = 1, TROVE__TS_FLOW = 2 };

struct trove__titem {
    uint64_t ts;
    uint32_t what;            /* TROVE__TS_* */
    size_t i;                 /* the event (START, END) or flow row (FLOW) */
};

/*
 * Every event at its start, those with paired[i] also at their end, and every flow row, in
 * time order: starts by (start, longer zone first, index); flows after the starts of their
 * time; and before a start or flow at time T, every end at or before T — earlier ends first,
 * and of equal ends the zone begun last first — so that the ends of zones that nest on a
 * track close them innermost first, and a zone that ends where another begins ends first.
 * *out (malloc'd, n_events + paired + n_flows items) and *n_out. TROVE_OK or TROVE_ERR_NOMEM.
 */
int trove__tsched_build(const struct trove_trace *t, const uint8_t *paired,
                        struct trove__titem **out, size_t *n_out);

/* A zone's length for nesting (0 for counters, whose dur_ns is a value). */
static inline uint64_t trove__tspan(const struct trove_event *e)
{
    return e->kind == TROVE_KIND_COUNTER ? 0 : e->dur_ns;
}

#endif
