/*
 * trove/chrome.h: the Chrome Trace Event Format (JSON: Perfetto UI, chrome://tracing,
 * Speedscope), both ways — the importer (trove_chrome_import*, docs/formats/chrome-json.md)
 * and the exporter of a whole capture (trove_chrome_export; the streaming writer of
 * trove/trace.h writes the same bytes).
 */
#ifndef TROVE_CHROME_H
#define TROVE_CHROME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trove/attrs.h"
#include "trove/common.h"
#include "trove/event.h"
#include "trove/flows.h"
#include "trove/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- import ------------------------------------------------------------------------ */

struct trove_chrome_options {
    int strict;           /* nonzero: an unmatched B or E is TROVE_ERR_UNMATCHED;
                             zero: it is dropped and counted in the stats */
    uint64_t max_input;   /* refuse inputs larger than this many bytes (0: 4 GiB) */
    /* Called after each read from a FILE (about every MiB) with the bytes read so far, for
     * a progress display; may be NULL. Not called by trove_chrome_import_mem. */
    void (*progress)(void *ctx, uint64_t bytes);
    void *progress_ctx;
    /* What the events carry besides their times and names (NULL: counted as not kept):
     * each event's "args" members (scope TROVE_ATTR_ARG), its "cat" and the other members
     * trove has no field for ("tts", "tdur", ..., scope TROVE_ATTR_FIELD) are appended to
     * attrs as rows whose event is the event's index in *events; a zone of B and E gets the
     * rows of both, an async span those of its begin and end, each counter value of a C its
     * FIELD rows. The members of the top-level object besides "traceEvents" go to meta (may
     * be NULL), scope TROVE_ATTR_TRACE, event 0. docs/formats/chrome-json.md, "Attributes". */
    struct trove_attrs *attrs;
    struct trove_attrs *meta;
};

struct trove_chrome_stats {
    uint64_t input_bytes;
    uint64_t trace_events;    /* objects in the traceEvents array */
    uint64_t complete;        /* ph X */
    uint64_t begin_end_pairs; /* B/E matched into zones */
    uint64_t instants;        /* ph I, i, n */
    uint64_t metadata;        /* ph M used (thread_name, process_name, process_sort_index,
                                 thread_sort_index) */
    uint64_t unmatched_begin; /* B, b or S left open at the end, and the T steps of an open S
                                 (dropped unless strict) */
    uint64_t unmatched_end;   /* E, e, T or F with nothing open to close (dropped unless
                                 strict) */
    uint64_t skipped;         /* events of other phases, and other M: the sum of
                                 skipped_phase */
    uint32_t threads;         /* distinct (pid, tid) among imported events, tracks included */
    uint32_t names;           /* distinct event names (of events and flows) */
    uint64_t async_pairs;     /* b/e and S/F matched into async zones */
    uint64_t async_steps;     /* T steps made into zones */
    uint64_t flow_events;     /* s, t and f kept as flow rows */
    uint64_t flow_binds;      /* flow rows from bind_id with flow_in/flow_out on an X */
    uint64_t counters;        /* C events with at least one value */
    uint64_t counter_values;  /* counter events made: one per numeric argument of a C */
    uint64_t counter_args_skipped; /* arguments of C events that are not numbers (or whose
                                      key is over 1,024 bytes, or value past a double) */
    uint32_t async_tracks;    /* async tracks with events */
    uint32_t counter_series;  /* counter series with events */
    uint64_t skipped_metadata; /* M events skipped (process_labels, process_uptime_seconds,
                                  ..., and a sort index M whose args.sort_index is missing or
                                  not a 32-bit integer), part of skipped_phase['M'] */
    uint64_t skipped_phase[128]; /* skipped events by phase: the ASCII ph of one character
                                    (R, P, O, N, D, ...), index 0 any other ph */
    uint64_t unmatched_begin_phase[128]; /* unmatched_begin by phase: 'B', 'b', 'S', and 'T'
                                            for the steps of an open S */
    uint64_t unmatched_end_phase[128];   /* unmatched_end by phase: 'E', 'e', 'T', 'F' */
    uint64_t attr_rows;       /* attribute rows kept (opt->attrs) */
    uint64_t trove_members;   /* X, i and n events whose kind, extra or depth a "trove"
                                 member gave (trove's own export writes them) */
    /* What a trace carries that trove does not keep (docs/formats/chrome-json.md, "Not
     * kept"), counted so that an import can say so; with opt->attrs, only what even those
     * do not keep (the args and members of M, T, flow and skipped events, a C's args that are
     * not numbers, a value over TROVE_ATTRS_MAX_STRING, a key over 1,024 bytes): */
    uint64_t args_events;     /* trace events whose "args" held members kept nowhere (all
                                 but an M's args.name and args.sort_index, a T's args.step
                                 and a C's numbers) */
    uint64_t args_members;    /* those members */
    uint64_t cat_events;      /* trace events with a category ("cat"): not kept */
    uint32_t categories;      /* distinct categories among them (at most 65,536 told apart) */
    uint64_t other_members;   /* members of trace events trove does not read (tts, tdur, sf,
                                 stack, ...); by name in other_names, other_counts */
    char other_names[8][24];  /* the first 8 such keys ("" past them; cut at 23 bytes) */
    uint64_t other_counts[8]; /* how many events had each */
    uint64_t top_members;     /* members of the top-level object besides "traceEvents"
                                 ("metadata", "displayTimeUnit", ...): not kept */
    char top_names[8][24];    /* the first 8 of them */
};

/*
 * Import a Chrome trace JSON document (the array form, or an object with "traceEvents";
 * the array's closing bracket may be missing, as Chrome allows) read from `in`.
 *
 * Appends events to *events sorted by start time (ties: thread, then outer zone first) and
 * their names to names. name_ids are assigned by descending frequency (the most frequent
 * name is 0). Microsecond decimals become nanoseconds exactly from the decimal text;
 * digits past nanoseconds are rounded half away from zero. depth is the zone's nesting on
 * its thread (capped at 255). Memory stays within a small multiple of the event count, not
 * the input size: the input is streamed.
 *
 * Async spans (b/e, S/T/F) become zones and n events with an id async instants on tracks
 * of their own, and counter values (C) counter events on a track per series: each track is a
 * synthetic tid in the event's pid (TROVE_TID_SYNTHETIC, trove/event.h), named in names.
 * Flow events (s, t, f, and bind_id on X) become flow rows, appended to flows (may be NULL:
 * they are then counted and dropped), sorted by (ts, pid, tid), with ids 1.. in order of
 * first appearance. Everything else is counted by phase in the stats.
 *
 * Errors: TROVE_ERR_JSON (with the byte offset), TROVE_ERR_TRACE (a field of the wrong
 * type), TROVE_ERR_UNMATCHED (strict only), TROVE_ERR_NEGATIVE (end before start, negative
 * ts or dur), TROVE_ERR_LIMIT, TROVE_ERR_NOMEM, -errno. On error, events, names and flows
 * are left as they were on entry (nothing partial is appended; the one exception is an
 * allocation failure while the finished names are merged, which can leave names partly
 * merged). names may be NULL; event name ids start at 0 and replace event names 0..k-1 of a
 * table that has them. stats (may be NULL) counts what was read up to the end or the error.
 * docs/formats/chrome-json.md describes the mapping.
 */
int trove_chrome_import_all(FILE *in, const struct trove_chrome_options *opt,
                            struct trove_events *events, struct trove_names *names,
                            struct trove_flows *flows, struct trove_chrome_stats *stats,
                            struct trove_diag *diag);

/* Same, from a buffer in memory. */
int trove_chrome_import_all_mem(const uint8_t *buf, size_t len,
                                const struct trove_chrome_options *opt,
                                struct trove_events *events, struct trove_names *names,
                                struct trove_flows *flows, struct trove_chrome_stats *stats,
                                struct trove_diag *diag);

/* trove_chrome_import_all without flows (they are counted in the stats and dropped). */
int trove_chrome_import(FILE *in, const struct trove_chrome_options *opt,
                        struct trove_events *events, struct trove_names *names,
                        struct trove_chrome_stats *stats, struct trove_diag *diag);

/* Same, from a buffer in memory. */
int trove_chrome_import_mem(const uint8_t *buf, size_t len, const struct trove_chrome_options *opt,
                            struct trove_events *events, struct trove_names *names,
                            struct trove_chrome_stats *stats, struct trove_diag *diag);

/*
 * The skipped events of st by phase, as one line for a user: "28 R, 9 M" (a phase that is
 * not one printable character is "N of other phases"), NUL-terminated in buf[0..n). Returns
 * its length (0: nothing was skipped); a line that does not fit is cut after the last whole
 * entry.
 */
size_t trove_chrome_skipped_text(const struct trove_chrome_stats *st, char *buf, size_t n);

/*
 * The dropped (unmatched) events of st, each phase counted on its own, as one line for a
 * user: "104 B events and 55 b events never ended; 3 E events never begun" (the steps of an
 * open S are "N T steps of S spans never ended"), NUL-terminated in buf[0..n). Returns its
 * length (0: nothing was dropped); a line that does not fit is cut after the last whole
 * entry.
 */
size_t trove_chrome_unmatched_text(const struct trove_chrome_stats *st, char *buf, size_t n);

/* ---- export ------------------------------------------------------------------------ */

/*
 * Write t as a Chrome trace JSON document appended to out: {"displayTimeUnit":"ns",
 * "traceEvents":[...]} with one event a line — process and thread names as M events, thread
 * zones as X, instants as i (with their scope), async spans (zones of a synthetic tid) as
 * b/e (nestable) or S/T/F (legacy) with the id of their track, async instants as n,
 * counters as C, flows as s/t/f (one name a flow). An X, i or n whose kind, extra or depth
 * the importer would not derive carries them in a "trove" member, so the import gives every
 * event back as it was.
 * Times are microseconds with up to three decimals, so nanoseconds are kept exactly; counter
 * values have the fewest digits that read back as the same double. Names are written as
 * JSON strings (bytes that are not UTF-8 as U+FFFD, as the importer repairs them). The output
 * is a function of t alone. Errors: TROVE_ERR_INVALID (NULL arguments; a counter whose value
 * is not finite, which JSON cannot hold; diag names the event), TROVE_ERR_NOMEM. out is
 * unchanged on error.
 */
int trove_chrome_export(const struct trove_trace *t, struct trove_bytes *out,
                        struct trove_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
