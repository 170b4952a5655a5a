/*
 * trove/summary.h: what a view or a statistic of a capture needs without reading its events
 * (docs/formats/summary.md), and the answers made from it.
 *
 * A **summary node** describes a run of a capture's events: a segment (level 0), 64
 * segments (level 1), 64^2 (level 2) and so on. It holds
 *   - the tracks (one per pid, tid) with their event counts, deepest depth, kinds and times;
 *   - cells: per track, lane and column of 2^shift ns (column = start >> shift), the count,
 *     busy time and dominant name of every event the node does not hold whole;
 *   - long events: every zone, frame or lock at least 2^shift ns long, whole, with its index;
 *   - (levels 1 and above) per name a mergeable duration sketch: count, total, self time, min, max, and counts in
 *     log-spaced buckets (bucket i >= 1 holds durations in (G^(i-2), G^(i-1)], G = 1.02,
 *     bucket 0 the zero durations), so any quantile of any set of nodes is within 1 % of the
 *     exact one. Counters are not in the sketches (their "duration" is a value).
 * A lane is an event's depth (0 .. 255) for a zone, frame or lock, TROVE_SUMMARY_LANE_INSTANT
 * for an instant or async instant, TROVE_SUMMARY_LANE_COUNTER for a counter sample.
 * Nodes merge exactly: a parent's cells are its children's, columns shifted to its shift; a
 * child's long event shorter than 2^shift joins the parent's cell. The shift of a node is
 * the least that keeps its cells and long events within its budget (summary.md).
 *
 * Not thread-safe; one writer or many readers of a node.
 */
#ifndef TROVE_SUMMARY_H
#define TROVE_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/event.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TROVE_SUMMARY_LANE_INSTANT 256u
#define TROVE_SUMMARY_LANE_COUNTER 257u
#define TROVE_SUMMARY_LANES 258u
#define TROVE_SUMMARY_FANOUT 64u   /* children of a node above level 0 */
#define TROVE_SUMMARY_BUCKETS 2300u /* bucket indexes 0 .. 2299 (G^2298 > 2^64) */
#define TROVE_SUMMARY_MAX_OBJECT ((uint64_t)16 << 20)

struct trove_summary_track {
    uint32_t pid, tid;
    uint64_t events;
    uint32_t max_depth; /* the deepest depth of its zones, frames and locks */
    uint32_t kinds;     /* bit k: an event of kind k */
    uint64_t first_ns;  /* the least start */
    uint64_t end_ns;    /* the greatest trove_event_end */
};

struct trove_summary_cell {
    uint32_t track;   /* index into the node's tracks */
    uint32_t lane;
    uint64_t col;     /* start >> shift */
    uint64_t count;
    uint64_t busy;    /* the sum of durations (zones, frames, locks; saturating) */
    uint32_t name;    /* the dominant name: of the longest event, the least name id on ties */
    uint64_t name_dur; /* that event's duration (0 for instants and counters) */
    uint64_t vmin, vmax; /* counters: the least and greatest value, as trove_counter_bits */
};

struct trove_summary_long {
    uint32_t track;
    uint64_t index;   /* the event's index from the node's first event */
    struct trove_event ev;
};

/* A node holds at most this many events (a bucket's count takes 48 bits). */
#define TROVE_SUMMARY_MAX_EVENTS ((uint64_t)1 << 48)

/* 8 bytes: a node high in a capture of many names holds tens of millions of buckets. */
struct trove_summary_bucket {
    uint64_t index : 16; /* below TROVE_SUMMARY_BUCKETS */
    uint64_t count : 48; /* at most the node's events */
};

struct trove_summary_sketch {
    uint32_t name;
    uint64_t count, total, self, min, max; /* total and self saturate */
    size_t first, n;  /* buckets[first .. first + n) of the node, by index */
};

struct trove_summary {
    uint32_t level;
    uint32_t shift;       /* cells are 2^shift ns wide */
    uint64_t events;
    uint64_t first_ns, end_ns; /* the least start and greatest end (0, 0 without events) */
    struct trove_summary_track *tracks; size_t ntracks;   /* by (pid, tid) */
    struct trove_summary_cell *cells; size_t ncells;      /* by (track, lane, col) */
    struct trove_summary_long *longs; size_t nlongs;      /* by (track, start, index) */
    struct trove_summary_sketch *sketches; size_t nsketches; /* by name */
    struct trove_summary_bucket *buckets; size_t nbuckets;
};

/* The bucket of a duration: 0 for 0, else 1 + the least j with dur <= G^j. */
uint32_t trove_summary_bucket_of(uint64_t dur);

/* A bucket's estimate: 0 for bucket 0, else 2 G^(i-1) / (G + 1), within 1 % of every
 * duration the bucket holds. */
double trove_summary_bucket_value(uint32_t index);

/* The q-quantile (0 <= q <= 1) of a sketch's durations as its buckets estimate it (the
 * nearest rank, ceil(q n), clamped to [min, max]); 0 for an empty sketch. */
double trove_summary_quantile(const struct trove_summary *s,
                              const struct trove_summary_sketch *k, double q);

/* The level-0 node of events[0..n) (a segment: indexes count from its first event) into
 * *out (zeroed by the call). Errors: TROVE_ERR_NOMEM, TROVE_ERR_INVALID. */
int trove_summary_build(const struct trove_event *events, size_t n, struct trove_summary *out);

/*
 * *out = the node of a's events followed by b's (b may be NULL: a alone, at this level),
 * whose first event is b_base events after a's first (b's long events' indexes shift by
 * it), as a node of `level` (its budget). out is a node (zeroed, or one it replaces, which
 * may be a or b). Errors: TROVE_ERR_NOMEM (out is then unchanged), TROVE_ERR_INVALID.
 */
int trove_summary_join(struct trove_summary *out, const struct trove_summary *a,
                       const struct trove_summary *b, uint64_t b_base, uint32_t level);

/* Append the node's object (docs/formats/summary.md) to out; a level-0 node's object holds
 * no sketches (its level-1 parent has them). Errors: TROVE_ERR_NOMEM,
 * TROVE_ERR_LIMIT (over TROVE_SUMMARY_MAX_OBJECT). */
int trove_summary_encode(const struct trove_summary *s, struct trove_bytes *out);

/* Decode a node object, checking every bound; *out (zeroed by the call) is set only on
 * success. Errors: TROVE_ERR_TRUNCATED, _MAGIC, _VERSION, _CHECKSUM, _CORRUPT, _VARINT,
 * _LIMIT, _INFLATE, _NOMEM; diag says where. */
int trove_summary_decode(const uint8_t *buf, size_t len, struct trove_summary *out,
                         struct trove_diag *diag);

void trove_summary_free(struct trove_summary *s);

/* ---- a capture's summaries ---- */

struct trove_store;

struct trove_capture_index_options {
    int force; /* build them again even when every one is there and decodes */
    void (*progress)(void *ctx, uint64_t done, uint64_t total); /* per segment; may be NULL */
    void *progress_ctx;
};

struct trove_capture_index_result {
    uint64_t segments;
    uint64_t summaries;    /* the summary objects the capture has (or would have) */
    int already;           /* they were all there and decoded: nothing written */
    uint64_t damaged;      /* of them, missing, damaged or not a node (before a rebuild) */
    uint64_t built;        /* summary objects put */
    uint64_t summary_bytes; /* their bytes */
    uint64_t new_objects, new_bytes; /* of them, what the store did not have */
};

/*
 * Give capture `name` its summaries (header flag TROVE_CAPTURE_FLAG_SUMMARY): read every
 * segment, build every node, put them and commit. A capture whose summaries are all there
 * and decode is left as it is (res->already), unless opt->force; one with a missing or
 * damaged summary gets them all again (the same bytes: putting them heals the damaged
 * ones). opt may be NULL. Errors: TROVE_ERR_NOTFOUND (no such capture), the capture
 * readers' and the store's; diag says which.
 */
int trove_capture_index(struct trove_store *s, const char *name,
                        const struct trove_capture_index_options *opt,
                        struct trove_capture_index_result *res, struct trove_diag *diag);

/* ---- answers made from them (docs/serve.md, docs/formats/view.md) ---- */

/* What an answer read: summary nodes, segments (and their events), and summaries it found
 * damaged or missing (it read what they cover instead). */
struct trove_query_figures {
    uint64_t nodes, segments, events, damaged;
};

/* A track is named by pid << 32 | tid; lists of them are sorted. */
#define TROVE_VIEW_MAX_PX 16384u

struct trove_view_options {
    uint64_t from_ns, to_ns;   /* the range; from_ns 0: the capture's first event, to_ns 0:
                                  past its last */
    uint32_t px;               /* its width in pixels, 1 .. TROVE_VIEW_MAX_PX */
    const uint64_t *tracks;    /* the tracks to answer for (sorted); NULL: every track */
    size_t ntracks;
    int names;                 /* 1: the answer carries the names it refers to */
};

/*
 * The view frame (docs/formats/view.md) of capture `name` for opt: the cells are 2^shift ns
 * with 2^shift the greatest power of two at most (to - from) / px; every zone, frame or lock
 * at least 2^shift ns long that overlaps [from, to) exactly as stored, with its index; every
 * other event in its track's cell (lane, start >> shift) for the columns that cover
 * [from, to). Made from the summaries where a node's cells are fine enough, else from the
 * segments the range touches. Errors: TROVE_ERR_INVALID (options), TROVE_ERR_NOTFOUND, the
 * readers'; diag says which.
 */
int trove_capture_view(struct trove_store *s, const char *name,
                       const struct trove_view_options *opt, struct trove_bytes *out,
                       struct trove_query_figures *qs, struct trove_diag *diag);

/* A view frame decoded (trove_view_decode): its tracks, each with its events and cells
 * (cells' track is the index into tracks), and the names it carries. */
struct trove_view_track {
    uint32_t pid, tid;
    size_t first_event, nevents; /* into events */
    size_t first_cell, ncells;   /* into cells */
};
struct trove_view_event {
    uint64_t index;
    struct trove_event ev;
};
struct trove_view_name {
    uint32_t id;
    const char *str; /* into the frame's storage; NUL-terminated */
    size_t len;
};
struct trove_view_frame {
    uint64_t from_ns, to_ns;
    uint32_t shift;
    struct trove_view_track *tracks;
    size_t ntracks;
    struct trove_view_event *events;
    size_t nevents;
    struct trove_summary_cell *cells;
    size_t ncells;
    struct trove_view_name *names;
    size_t nnames;
    char *strings;
};

/* Decode a view frame, checking every bound (docs/formats/view.md); *out is set only on
 * success. Errors: TROVE_ERR_TRUNCATED, _MAGIC, _VERSION, _CORRUPT, _VARINT, _LIMIT,
 * _INFLATE, _NOMEM; diag says where. */
int trove_view_decode(const uint8_t *buf, size_t len, struct trove_view_frame *out,
                      struct trove_diag *diag);
void trove_view_frame_free(struct trove_view_frame *f);

/* The capture's processes and tracks as JSON (docs/serve.md, "Tracks"). */
int trove_capture_tracks_json(struct trove_store *s, const char *name, struct trove_bytes *out,
                              struct trove_query_figures *qs, struct trove_diag *diag);

enum trove_stats_sort {
    TROVE_STATS_SORT_TOTAL = 0,
    TROVE_STATS_SORT_COUNT = 1,
    TROVE_STATS_SORT_P99 = 2,
    TROVE_STATS_SORT_SELF = 3,
    TROVE_STATS_SORT_MAX = 4
};

struct trove_stats_options {
    uint64_t from_ns, to_ns;   /* events that start in [from, to); to_ns 0: to the end */
    const uint64_t *tracks;    /* sorted; NULL: every track */
    size_t ntracks;
    const char *name;          /* only this event name; NULL: every name */
    int sort;                  /* enum trove_stats_sort */
    size_t limit;              /* rows; 0: every name */
    int clip;                  /* 1: every event that overlaps [from, to), its duration
                                * clipped to the range (below); 0: those that start in it */
};

struct trove_stats_row {
    uint32_t name_id;
    const char *name;          /* "" when the names table has none */
    size_t name_len;
    uint64_t count, total, self, min, max;
    double p50, p90, p99;
    const struct trove_summary_bucket *hist; /* nonempty buckets, by index */
    size_t nhist;
};

struct trove_stats_result {
    struct trove_stats_row *rows;
    size_t nrows;
    uint64_t names;            /* names with an event in the range (rows before the limit) */
    uint64_t events;           /* events counted (counters are not) */
    uint64_t from_ns, to_ns;
    struct trove_query_figures read;
    void *priv;                /* what the rows point into */
};

/*
 * Per event name in the range: count, total, self time, min, p50, p90, p99, max and the
 * duration histogram (the sketch's buckets): nodes wholly inside the range (with no track
 * filter) answer from their sketches, the segments at its ends are read. count, total,
 * self, min and max are exact; the quantiles within 1 %. Errors as trove_capture_view's.
 *
 * With opt->clip, the events are those that overlap [from, to) — a span that starts before
 * from and ends after it, an instant that starts in it — and each span counts its duration
 * clipped to the range, min(end, to) - max(start, from): count, total, min, max and the
 * histogram are of the clipped durations, exactly, so one track's total of a name never
 * exceeds the range times the instances open at once. A span the range cuts counts its self
 * time as at most its clipped duration (the zones below it are not clipped one by one); one
 * wholly inside counts it as without clip. Nodes answer only where every event they hold
 * starts and ends inside the range; the segments of every span that reaches into it are read.
 */
int trove_capture_stats(struct trove_store *s, const char *name,
                        const struct trove_stats_options *opt, struct trove_stats_result *res,
                        struct trove_diag *diag);
void trove_stats_result_free(struct trove_stats_result *res);
/* The result as JSON (docs/serve.md, "Statistics"). */
int trove_stats_result_json(const struct trove_stats_result *res, const char *capture,
                            int sort, struct trove_bytes *out);
/* "total", "count", "p99", "self", "max"; -1 for another. */
int trove_stats_sort_parse(const char *s);
const char *trove_stats_sort_name(int sort);

enum trove_find_order { TROVE_FIND_START = 0, TROVE_FIND_DUR_DESC = 1, TROVE_FIND_START_DESC = 2 };

struct trove_find_options {
    const char *name;          /* the event name (required, unless ids or text) */
    const char *text;          /* instead: every event whose name, or one of whose string or
                                  JSON attribute values (trove/attrs.h), contains this, ASCII
                                  case-blind: a search box's question */
    int match;                 /* 1: every event name that contains `name`, ASCII case-blind */
    const uint32_t *ids;       /* sorted name ids in place of a name: their instances, and the
                                * capture's names are not read; NULL: by name */
    size_t nids;
    uint64_t min_dur_ns;       /* only events at least this long */
    uint64_t max_dur_ns;       /* only events at most this long; 0: no bound */
    uint64_t from_ns, to_ns;   /* events that start in [from, to); to_ns 0: to the end */
    const uint64_t *tracks;
    size_t ntracks;
    int order;                 /* enum trove_find_order */
    size_t limit;              /* 1 .. 10000 */
};

/* The instances of an event name (or of the name ids given) in a range, the first by start, the last by start
 * (start_desc: the ones before a time) or the longest first, as JSON (docs/serve.md,
 * "Events"); ties by their index in the capture. Groups of segments whose sketches lack the name, or cannot
 * hold one to keep, are not read. */
int trove_capture_find_json(struct trove_store *s, const char *name,
                            const struct trove_find_options *opt, struct trove_bytes *out,
                            struct trove_query_figures *qs, struct trove_diag *diag);

/* The capture's frames from frame marks (kind 3, extra TROVE_FRAME_MARKS: libtrove-client's
 * TROVE_FRAME_MARK) that start in [from_ns, to_ns) (to_ns 0: to the end), by start, at most
 * limit of them, as JSON (docs/serve.md, "Frames"):
 * {"capture":NAME,"frames":N,"truncated":B,"rows":[{"index","name_id","start_ns","dur_ns",
 * "pid","tid"},...]}. Every segment the range touches is decoded, but for those whose summary
 * node has no track with a frame event (a capture without frame marks reads nodes only). */
int trove_capture_frames_json(struct trove_store *s, const char *name, uint64_t from_ns,
                              uint64_t to_ns, uint32_t limit, struct trove_bytes *out,
                              struct trove_query_figures *qs, struct trove_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
