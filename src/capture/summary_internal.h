/*
 * summary_internal.h (internal): what the summary modules share — the budgets that choose a
 * node's shift, the event rules (which events are spans, their lanes, which are long), the
 * self times, and the capture's summary slots (summary_store.c). docs/formats/summary.md is
 * the specification.
 */
#ifndef TROVE_SUMMARY_INTERNAL_H
#define TROVE_SUMMARY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "trove/summary.h"

/* A level-0 node's object keeps at most max(LEAF_MIN, events / LEAF_DIV) cells and long
 * events; a node above, GROUP_BUDGET. The shift grows until they fit (up to 63). A segment's
 * node is built finer (max(LEAF_MIN, events / FINE_DIV)) for its parent, which takes that
 * one: so a parent is not held to its children's stored coarseness, and the levels above a
 * segment see as much as their own budgets hold. */
#define TROVE__SUMMARY_LEAF_MIN 256u
#define TROVE__SUMMARY_LEAF_DIV 128u
#define TROVE__SUMMARY_FINE_DIV 32u
#define TROVE__SUMMARY_GROUP_BUDGET 32768u
/* A node's payload inflates to at most this many bytes. */
#define TROVE__SUMMARY_MAX_RAW ((uint64_t)64 << 20)

/* A zone, frame or lock: an event whose duration is a time. */
int trove__summary_is_span(uint8_t kind);
/* e's lane: its depth (a span), LANE_COUNTER or LANE_INSTANT. */
uint32_t trove__summary_lane(const struct trove_event *e);
/* Is e held whole by a node of this shift (a span of at least 2^shift ns)? */
int trove__summary_is_long(const struct trove_event *e, uint32_t shift);
/* trove_summary_decode, or (sketches 0) all but the sketches, which a view does not read:
 * the node then has none, and what follows its long events is not checked. */
int trove__summary_decode_part(const uint8_t *buf, size_t len, struct trove_summary *out,
                               int sketches, struct trove_diag *diag);
/* Tracks' order: by pid, then tid. */
int trove__summary_track_cmp(const struct trove_summary_track *a,
                             const struct trove_summary_track *b);
/* The cells and long events a segment's node is built with (for its parent). */
uint64_t trove__summary_fine_budget(uint64_t events);
/* The cells and long events a node of this level and these events may keep. */
uint64_t trove__summary_budget(uint32_t level, uint64_t events);

/* self[i]: event i's self time within events[0..n) (a span's duration less the spans one
 * depth below it that it encloses on its thread; 0 for others). TROVE_ERR_NOMEM. */
int trove__summary_self_times(const struct trove_event *events, size_t n, uint64_t *self);

/* ---- the capture's summary slots (summary_store.c) ---- */

struct trove__capture_vol;
struct trove_capture_header;
struct trove_volume;
struct trove_wire_decoder;

/* 2^18 segments (MAX_SEGMENTS) need levels 0 .. 3. */
#define TROVE__SUMMARY_MAX_LEVELS 5u

/* The levels of a capture of `segments` segments and the nodes of each. */
unsigned trove__summary_levels(uint64_t segments, uint64_t count[TROVE__SUMMARY_MAX_LEVELS]);
/* The summary slots they take. */
uint64_t trove__summary_slots(uint64_t segments);
/* The capture's full segments (all but a last one that holds fewer than a segment's
 * events): the ones whose nodes are complete. */
uint64_t trove__summary_sealed(const struct trove_capture_header *h);
/* Node (level, index)'s place among the summary slots of a capture of `segments` segments,
 * `sealed` of them full (summary.md, "The slots"). */
uint64_t trove__summary_slot_of(uint64_t segments, uint64_t sealed, unsigned level,
                                uint64_t index);

/* Where a built node goes: put it (its object, p[0..len)) as node `index` of `level`. */
typedef int (*trove__sumput_fn)(void *ctx, unsigned level, uint64_t index, const uint8_t *p,
                                size_t len, struct trove_diag *diag);

/* The tree above the segments' nodes as they come: bin[L][j] holds, when used, the join
 * of 2^j consecutive complete children of level L's last node, from child `first` on. */
#define TROVE__SUMTREE_BINS 6u /* 2^6 = 64 children: a complete node */
struct trove__sumbin {
    struct trove_summary node;
    uint64_t first;
    int used;
};
struct trove__sumtree {
    uint64_t per;    /* events per segment */
    uint64_t sealed; /* segments sealed */
    int draft;       /* finish puts the incomplete nodes as drafts (trove__summary_encode_draft) */
    struct trove__sumbin bin[TROVE__SUMMARY_MAX_LEVELS][TROVE__SUMTREE_BINS + 1];
    struct trove_bytes buf;
};

/* Segment `sealed`, complete, summarized as leaf: put it, and every node it completes. The
 * leaf is taken once it is put (moved into the tree, *leaf emptied); the caller frees it
 * either way. */
int trove__sumtree_seal(struct trove__sumtree *t, struct trove_summary *leaf,
                        trove__sumput_fn put, void *ctx, struct trove_diag *diag);
/* Put the nodes that are not complete: the partial last segment's (may be NULL), and each
 * level's last node when it still waits for children. */
int trove__sumtree_finish(struct trove__sumtree *t, const struct trove_summary *partial,
                          trove__sumput_fn put, void *ctx, struct trove_diag *diag);
void trove__sumtree_free(struct trove__sumtree *t);

/* trove_summary_encode, with draft = 1 for a node that a later commit replaces: the same
 * payload, deflated at the fast level whatever the node's level (so the object's bytes, not
 * what it says, differ from the final node's). */
int trove__summary_encode_draft(const struct trove_summary *s, int draft, struct trove_bytes *out);
/* An append's tree as it stood: child (moved from; level - 1, complete) is child `pos` of
 * level `level`'s last node. TROVE_ERR_NOMEM. */
int trove__sumtree_restore(struct trove__sumtree *t, unsigned level, struct trove_summary *child,
                           uint64_t pos);

/* The events of segment k of the capture (header h, volume v) into ev[0..cap), checked
 * against its header entry; obj is scratch for the object. */
int trove__summary_read_segment(struct trove_volume *v, const struct trove_capture_header *h,
                                const char *name, uint64_t k, struct trove_wire_decoder *dec,
                                struct trove_bytes *obj, struct trove_event *ev, size_t cap,
                                size_t *n_out, struct trove_diag *diag);

/* The one-shot write's summaries: every node of h's segments (events[0..h.events), `per` to
 * a segment), given to put. */
int trove__summary_write(const struct trove_capture_header *h, const struct trove_event *events,
                         uint64_t per, trove__sumput_fn put, void *ctx, struct trove_diag *diag);

#endif
