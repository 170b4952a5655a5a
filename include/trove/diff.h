/*
 * trove/diff.h: what changed between two captures (docs/diff.md). Per event name (or per
 * thread name and event name), each side's count, total, min, p50, p90, p99 and max
 * durations, the change of each (B over A, and B minus A), and a rank test of the two sets
 * of durations (Mann–Whitney U, normal approximation with ties): from every duration where
 * a side's capture is small enough to read whole (exact), else from the duration
 * histograms of the summaries (sketch: durations within 2 % of each other count as ties).
 *
 * A side is read once (trove_diff_side_read from a store, or built row by row from a
 * service's statistics with trove_diff_side_add) and compared with trove_diff_json, which
 * writes the JSON that `trove diff --json` prints and GET /api/diff answers.
 *
 * Not thread-safe; one side per thread.
 */
#ifndef TROVE_DIFF_H
#define TROVE_DIFF_H

#include "trove/common.h"
#include "trove/summary.h"

#ifdef __cplusplus
extern "C" {
#endif

enum trove_diff_method {
    TROVE_DIFF_AUTO = 0,   /* exact when the capture has at most TROVE_DIFF_EXACT_MAX events */
    TROVE_DIFF_EXACT = 1,  /* every duration, whatever the capture's size */
    TROVE_DIFF_SKETCH = 2  /* the summaries' histograms (by thread: made from the segments) */
};

/* A capture of at most this many events is read whole by TROVE_DIFF_AUTO (12 bytes each). */
#define TROVE_DIFF_EXACT_MAX ((uint64_t)16 << 20)
/* A change is significant when the test's two-sided p is below alpha and the shift — the
 * Hodges–Lehmann estimate of B's durations over A's, the median ratio over all pairs of an
 * instance of each — is at least 1 + min_effect or at most 1 / (1 + min_effect): a change a
 * user would notice, not only one that a million instances make detectable. */
#define TROVE_DIFF_ALPHA 0.001
#define TROVE_DIFF_MIN_EFFECT 0.05

struct trove_diff_figures {
    uint64_t count, total, min, max; /* total saturates */
    double p50, p90, p99;            /* nearest rank; within 1 % from a histogram */
};

struct trove_diff_row {
    char *name;                 /* the event name ("" when the capture names none) */
    size_t name_len;
    char *thread;               /* by thread: the thread's name (or "tid N"); else NULL */
    struct trove_diff_figures f;
    struct trove_summary_bucket *hist; /* nonempty buckets by index; NULL with durs */
    size_t nhist;
    uint64_t *durs;             /* every duration, sorted, f.count of them; NULL: hist */
};

struct trove_diff_side {
    char *capture;
    uint64_t from_ns, to_ns;    /* the range as it applied (no wider than the events) */
    uint64_t events;            /* events counted (counters are not) */
    int by_thread;
    int exact;                  /* its rows have every duration (durs) */
    struct trove_diff_row *rows;
    size_t nrows, cap;
};

/*
 * Side `name` of store s: the events that start in [from_ns, to_ns) (to_ns 0: to the end),
 * counters left out, per name (by_thread: per thread name and name), by `method`. *out is
 * zeroed first; free it with trove_diff_side_free whatever the result. Errors:
 * TROVE_ERR_NOTFOUND (no such capture), TROVE_ERR_INVALID (an empty range), TROVE_ERR_NOMEM,
 * the readers'; diag says which.
 */
int trove_diff_side_read(struct trove_store *s, const char *name, uint64_t from_ns,
                         uint64_t to_ns, int by_thread, int method, struct trove_diff_side *out,
                         struct trove_diag *diag);

/* Start a side made elsewhere (a service's statistics): its capture, range and events. */
int trove_diff_side_init(struct trove_diff_side *side, const char *capture, uint64_t from_ns,
                         uint64_t to_ns, uint64_t events);
/* Add a row to it: the figures and histogram (copied; buckets by index). Errors:
 * TROVE_ERR_NOMEM, TROVE_ERR_INVALID (buckets out of order or over the count). */
int trove_diff_side_add(struct trove_diff_side *side, const char *name, size_t name_len,
                        const char *thread, const struct trove_diff_figures *f,
                        const struct trove_summary_bucket *hist, size_t nhist);
void trove_diff_side_free(struct trove_diff_side *side);

struct trove_diff_options {
    double alpha;               /* 0: TROVE_DIFF_ALPHA */
    double min_effect;          /* 0: TROVE_DIFF_MIN_EFFECT; below 0: none */
    uint64_t min_count;         /* rows with fewer events than this in both sides are left out */
    const char *const *globs;   /* only names matching one (fnmatch); NULL: every name */
    size_t nglobs;
    size_t limit;               /* rows; 0: every row */
};

/* The two sides compared, as JSON (docs/diff.md): rows matched by (thread, name), sorted
 * by what matters most. Errors: TROVE_ERR_NOMEM, TROVE_ERR_INVALID (a side NULL, or one by
 * thread and the other not). */
int trove_diff_json(const struct trove_diff_side *a, const struct trove_diff_side *b,
                    const struct trove_diff_options *opt, struct trove_bytes *out);

#ifdef __cplusplus
}
#endif
#endif
