/*
 * trace_sched.h (internal to src/codec): how the two trace writers (chrome_export.c,
 * perfetto_write.c, driven by trace_writer.c) lay a capture out — the tracks it has, and the
 * one order in which its events begin and end, taken from sorted streams so that no more
 * than a bounded part of the capture is ever in memory — and the buffer their output goes
 * through to its sink.
 */
#ifndef TROVE_TRACE_SCHED_H
#define TROVE_TRACE_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "trace_spill.h"
#include "trove/trace.h"

/* ---- tracks ---------------------------------------------------------------------------- */

/* The (pid, tid) of the events seen so far, and which kinds each has: an open-addressing
 * set that grows with the number of tracks, never with the number of events. A zeroed
 * struct is empty. */
struct trove__tset {
    uint64_t *key;            /* pid << 32 | tid */
    uint8_t *flags;           /* TSET_* of trace_sched.c; 0: an empty slot */
    size_t n, cap;            /* cap: a power of two, or 0 */
};

/* Note an event of (pid, tid), a counter or not. TROVE_OK or TROVE_ERR_NOMEM. */
int trove__tset_add(struct trove__tset *s, uint32_t pid, uint32_t tid, int counter);
void trove__tset_free(struct trove__tset *s);

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

/* Collect the tracks and pids of a capture: its events' (ev), its flow rows' and its
 * names'. names (borrowed by the result) may be NULL. TROVE_OK or TROVE_ERR_NOMEM. */
int trove__ttracks_build(const struct trove__tset *ev, const struct trove_flow *flows,
                         size_t nflows, const struct trove_names *names,
                         struct trove__ttracks *out);
/* The index of (pid, tid) in tr->t; the pair must be there. */
size_t trove__ttracks_find(const struct trove__ttracks *tr, uint32_t pid, uint32_t tid);
void trove__ttracks_free(struct trove__ttracks *tr);

/* ---- the schedule ---------------------------------------------------------------------- */

enum { TROVE__TS_START = 0, TROVE__TS_END = 1, TROVE__TS_FLOW = 2 };

/*
 * Every event at its start, the paired ones also at their end, and every flow row, in time
 * order: starts by (start, longer zone first, seq); flows by (ts, index) and after the
 * starts of their time; and before a start or flow at time T, every end at or before T of
 * a zone already begun — earlier ends first, and of equal ends the zone begun first first
 * (the END order) — so that a zone that ends where another begins ends first, and each
 * begin comes before what it encloses and each end after it.
 *
 * The starts and ends come from two sorters (trace_spill.h) read from their first record:
 * `starts` holds every event in START order, `ends` the paired ones in END order (the
 * writer decides which are paired). The flow rows are in memory, borrowed.
 */
struct trove__tsched {
    struct trove__tsort *starts, *ends;
    const struct trove_flow *flows;
    size_t nflows, fpos;
    size_t *forder;           /* the flow rows' indexes in (ts, index) order */
};

struct trove__titem {
    uint32_t what;            /* TROVE__TS_* */
    uint64_t ts;
    struct trove__tsrec r;    /* START, END: the event */
    size_t flow;              /* FLOW: the row's index */
};

/* Set up s over the two sorters (borrowed; ends may be NULL: nothing paired) and
 * flows[0..nflows). TROVE_OK or TROVE_ERR_NOMEM. */
int trove__tsched_init(struct trove__tsched *s, struct trove__tsort *starts,
                       struct trove__tsort *ends, const struct trove_flow *flows, size_t nflows);
/* The first item's time (0 when there is none). */
uint64_t trove__tsched_first_ts(const struct trove__tsched *s);
/* The next item into *out: 1, or 0 after the last; or a sorter's error. */
int trove__tsched_next(struct trove__tsched *s, struct trove__titem *out,
                       struct trove_diag *diag);
void trove__tsched_free(struct trove__tsched *s);

/* ---- output ---------------------------------------------------------------------------- */

/* A writer's output on its way to the sink: written out whenever it passes CHUNK bytes. */
#define TROVE__TOUT_CHUNK ((size_t)64 << 10)

struct trove__tout {
    struct trove_bytes buf;
    const struct trove_sink *sink;
    uint64_t written;         /* bytes the sink took */
};

/* Hand buf to the sink if it holds at least min bytes (0: whatever it holds). TROVE_OK, or
 * the sink's error. */
static inline int trove__tout_flush(struct trove__tout *o, size_t min)
{
    int rc;
    if (o->buf.len == 0 || o->buf.len < min)
        return TROVE_OK;
    if ((rc = o->sink->write(o->sink->ctx, o->buf.ptr, o->buf.len)) != TROVE_OK)
        return rc < 0 ? rc : TROVE_ERR_SEND;
    o->written += o->buf.len;
    o->buf.len = 0;
    return TROVE_OK;
}

#endif
