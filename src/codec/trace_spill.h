/*
 * trace_spill.h (internal to src/codec): the external sort under the streaming trace writer
 * (trace_writer.c) — records of events taken in any order, given back in one of the two
 * orders of the writers' schedule, in memory bounded by the options whatever their number.
 *
 * A sorter buffers up to `run` records. While everything fits, it is sorted in memory and
 * never touches the disk. Past that, each full buffer is sorted and appended to an unlinked
 * temporary file as a run; at the end, runs are merged `fan_in` at a time into a second
 * temporary file until at most `fan_in` are left, and those are merged as they are read.
 */
#ifndef TROVE_TRACE_SPILL_H
#define TROVE_TRACE_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/event.h"

/* An event as the writers sort it: its fields, its place in the input, and (Perfetto, for a
 * slice's end) the lane its begin went on. 40 bytes, spilled as they are in memory: the
 * depth shares the index's word (2^56 events is past any capture: TROVE__TSREC_SEQ_MAX). */
struct trove__tsrec {
    uint64_t start_ns, dur_ns;
    uint64_t seq : 56;        /* the event's index in the input: ties keep input order */
    uint64_t depth : 8;       /* the event's depth */
    uint32_t pid, tid, name_id;
    uint8_t kind, extra;
    uint16_t lane;
};

_Static_assert(sizeof(struct trove__tsrec) == 40, "a sort record is 40 bytes");
#define TROVE__TSREC_SEQ_MAX (((uint64_t)1 << 56) - 1)

enum {
    TROVE__TORDER_START = 0, /* (start, longer zone first, seq) */
    TROVE__TORDER_END = 1    /* (end, start, longer zone first, seq): of zones ending
                                together, the one begun first first */
};

/* A zone's length for nesting (0 for counters, whose dur_ns is a value). */
static inline uint64_t trove__tspan(uint8_t kind, uint64_t dur_ns)
{
    return kind == TROVE_KIND_COUNTER ? 0 : dur_ns;
}

/* Where a zone ends for the schedule: start + span, UINT64_MAX if that overflows. */
static inline uint64_t trove__tend(const struct trove__tsrec *r)
{
    uint64_t span = trove__tspan(r->kind, r->dur_ns);
    return r->start_ns + span < r->start_ns ? UINT64_MAX : r->start_ns + span;
}

/* -1, 0 or 1 as a comes before, is, or comes after b in the START order. */
int trove__tsrec_cmp_start(const struct trove__tsrec *a, const struct trove__tsrec *b);

struct trove__tsort_options {
    size_t run;               /* records sorted in memory at once (>= 1) */
    unsigned fan_in;          /* runs merged at once (>= 2) */
    const char *dir;          /* the temporary files' directory */
};

struct trove__tsort_stats {
    uint64_t runs;            /* runs written to the temporary file (0: all in memory) */
    uint64_t passes;          /* merge passes written back to disk before the last merge */
    uint64_t bytes;           /* bytes written to temporary files */
};

struct trove__tsort;

/* A new sorter of records in `order` (TROVE__TORDER_*). The options are copied (dir too).
 * TROVE_OK or TROVE_ERR_NOMEM. */
int trove__tsort_new(int order, const struct trove__tsort_options *opt, struct trove__tsort **out);
void trove__tsort_free(struct trove__tsort *s);

/* Add one record (copied). A full buffer is sorted and spilled. Errors: TROVE_ERR_NOMEM,
 * -errno of the temporary file (diag says which file and why). */
int trove__tsort_add(struct trove__tsort *s, const struct trove__tsrec *r,
                     struct trove_diag *diag);

/* No more records: sort what is buffered (spilling it if runs were spilled before), merge
 * the runs down to fan_in, and start reading. Errors as add's. */
int trove__tsort_finish(struct trove__tsort *s, struct trove_diag *diag);

/* Read again from the first record (after finish). Errors as add's. */
int trove__tsort_rewind(struct trove__tsort *s, struct trove_diag *diag);

/* The record to read next (valid until the next call on s), or NULL after the last. */
const struct trove__tsrec *trove__tsort_head(const struct trove__tsort *s);

/* Move past the head. Errors: -errno of reading the temporary file, TROVE_ERR_CORRUPT (it
 * is shorter than written). */
int trove__tsort_next(struct trove__tsort *s, struct trove_diag *diag);

/* Records added; and what went to disk. */
uint64_t trove__tsort_count(const struct trove__tsort *s);
void trove__tsort_stats(const struct trove__tsort *s, struct trove__tsort_stats *out);

#endif
