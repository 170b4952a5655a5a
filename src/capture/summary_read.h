/*
 * summary_read.h (internal): the reader the summary queries share (summary_read.c).
 */
#ifndef TROVE_SUMMARY_READ_H
#define TROVE_SUMMARY_READ_H

#include "capture_internal.h"
#include "summary_internal.h"

/* The time bounds of a node: over its segments' header entries. */
struct trove__sumbound {
    uint64_t min_start, max_start, max_end;
};

struct trove__sumread {
    const char *name;
    struct trove_volume *v;
    struct trove_capture_header h;
    int have_h;
    int summaries;            /* the header's flag: the summary slots are there */
    uint64_t per;             /* events per segment */
    uint64_t first_slot;      /* the first summary slot */
    uint64_t sealed;          /* full segments: the ones whose nodes are complete */
    unsigned levels;
    uint64_t count[TROVE__SUMMARY_MAX_LEVELS];
    struct trove__sumbound *b[TROVE__SUMMARY_MAX_LEVELS];
    struct trove_wire_decoder *dec;
    struct trove_bytes obj;   /* scratch: the last object read */
    struct trove_event *ev;   /* one segment's events */
    uint64_t *self;           /* their self times (trove__sumread_self) */
    struct trove_query_figures *qs; /* counts what is read; may be NULL */
    int no_sketches;          /* nodes are read without their sketches (a view) */
};

/* Segments a node of level L covers. */
uint64_t trove__sumread_span(unsigned level);

/* Open capture `name` of s for reading. Errors: TROVE_ERR_NOTFOUND and the readers'. */
int trove__sumread_open(struct trove__sumread *r, struct trove_store *s, const char *name,
                        struct trove_query_figures *qs, struct trove_diag *diag);
void trove__sumread_close(struct trove__sumread *r);

/* Node (level, index), decoded. TROVE_ERR_NOTFOUND without summaries; a damaged, missing
 * or wrong one is its error and counted as damaged: the caller reads what it covers. */
int trove__sumread_node(struct trove__sumread *r, unsigned level, uint64_t index,
                        struct trove_summary *node);

/* Segment k's events into r->ev (*n_out of them). */
int trove__sumread_segment(struct trove__sumread *r, uint64_t k, size_t *n_out,
                           struct trove_diag *diag);

/* The self times of r->ev[0..n) into r->self. */
int trove__sumread_self(struct trove__sumread *r, size_t n, struct trove_diag *diag);

/* Is (pid, tid) one of tracks[0..n) (sorted pid << 32 | tid; n 0: every track)? */
int trove__sumread_track_ok(const uint64_t *tracks, size_t n, uint32_t pid, uint32_t tid);

/* Append printf(fmt, ...) to out: a JSON answer's pieces, each under 512 bytes (else
 * TROVE_ERR_LIMIT), or TROVE_ERR_NOMEM. */
int trove__sumread_fmt(struct trove_bytes *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
