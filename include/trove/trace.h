/*
 * trove/trace.h: a capture out to other tools and back — the Chrome Trace Event Format
 * (JSON: Perfetto UI, chrome://tracing, Speedscope) and Perfetto's protobuf trace (the
 * compact one, for large captures).
 *
 * Two ways to write one. The streaming writer (trove_trace_writer_*) takes the events in
 * any order and in pieces, sorts them in memory bounded by its options (spilling sorted
 * runs to a temporary file past that), and writes the output to a sink as it goes: memory
 * does not grow with the capture's length. trove_chrome_export (trove/chrome.h) and
 * trove_perfetto_write take
 * a whole capture in memory (struct trove_trace: events, names, flows, all borrowed) and
 * append the output to a trove_bytes; they are the streaming writer with one run as long as
 * the capture, and write the same bytes. The Chrome JSON is read back by
 * trove_chrome_import_all and written whole by trove_chrome_export (trove/chrome.h); the
 * Perfetto trace is read back by trove_perfetto_read below.
 * Importing either gives the same events, names and flows (docs/formats/chrome-json.md,
 * docs/formats/perfetto.md say what is kept exactly and what is not). Every function here is
 * reentrant: no global state.
 */
#ifndef TROVE_TRACE_H
#define TROVE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/event.h"
#include "trove/flows.h"

#ifdef __cplusplus
extern "C" {
#endif

struct trove_profile; /* trove/profile.h */
struct trove_attrs;   /* trove/attrs.h */

/* A capture to write: borrowed for the call. names and flows may be NULL / 0. */
struct trove_trace {
    const struct trove_event *events;
    size_t n_events;
    const struct trove_names *names;
    const struct trove_flow *flows;
    size_t n_flows;
    const struct trove_attrs *attrs; /* the events' attributes (trove/attrs.h; may be NULL):
                                        rows by event index, which must not go back */
    const struct trove_attrs *meta;  /* the trace's (scope TROVE_ATTR_TRACE; may be NULL) */
};

/*
 * Write t as a Perfetto trace (a protobuf Trace: a stream of TracePacket) appended to out:
 * one packet sequence with a process track per pid, a thread track per thread, an async or
 * counter track per synthetic tid (and child tracks for counters on a thread and for zones
 * that overlap without nesting), TrackEvent slices (begin and end), instants, counters and
 * flows (flow_ids), event names and categories interned (InternedData, iid = name_id + 1),
 * timestamps incremental on a sequence clock. docs/formats/perfetto.md has the subset and its
 * field numbers. The output is a function of t alone. Errors: TROVE_ERR_INVALID,
 * TROVE_ERR_LIMIT (a thread with more than 1,024 zones open at once that do not nest),
 * TROVE_ERR_NOMEM. out is unchanged on error.
 */
int trove_perfetto_write(const struct trove_trace *t, struct trove_bytes *out,
                         struct trove_diag *diag);

/* ---- the streaming writer ------------------------------------------------------------------
 *
 * The output of a capture is a function of its events, names and flow rows alone, whatever
 * order and pieces the events come in: the same bytes trove_chrome_export or
 * trove_perfetto_write make of the events in the order they were added (their index in
 * that order breaks ties of time, as an index into the array does there).
 *
 * Memory: while events are added, a run of up to run_events of them (72 bytes each with
 * their sort keys: 18 MiB at the default); when a run fills it is sorted and appended to an
 * unlinked temporary file in tmp_dir, so nothing is left there whatever happens. At the
 * finish the runs are merged fan_in at a time (20 KiB of buffer each; more runs than that
 * are merged into longer ones first, on disk), the paired events (Chrome's async spans,
 * Perfetto's slices) sorted again by their end the same way, and the output written to the
 * sink in pieces of 64 KiB. Besides: the names and the flow rows (the caller's, borrowed,
 * and 8 bytes a row of order), a few bytes a track (pid, tid), and for Perfetto 8 bytes for each
 * slice open at once on a track (the nesting, not the length). A capture of at most
 * run_events events never touches the disk. Disk: 40 bytes an event, and 40 more a paired
 * one, twice that during a merge pass.
 *
 * Thread-safety: one thread at a time per writer; writers are independent.
 */
enum trove_trace_format { TROVE_TRACE_CHROME_JSON = 1, TROVE_TRACE_PERFETTO = 2 };

#define TROVE_TRACE_RUN_EVENTS_DEFAULT ((size_t)1 << 18) /* 262,144 events: 18 MiB */
#define TROVE_TRACE_FAN_IN_DEFAULT 128u                  /* runs merged at once: 2.5 MiB */
#define TROVE_TRACE_FAN_IN_MAX 65536u

struct trove_trace_writer_options {
    int format;            /* enum trove_trace_format */
    size_t run_events;     /* events sorted in memory at once (0: the default) */
    unsigned fan_in;       /* runs merged at once, 2 .. TROVE_TRACE_FAN_IN_MAX (0: the
                              default) */
    const char *tmp_dir;   /* where runs are spilled (NULL: $TMPDIR, else /tmp); copied */
};

struct trove_trace_writer_stats {
    uint64_t events;       /* events added */
    uint64_t flows;        /* flow rows written */
    uint64_t bytes;        /* bytes the sink took */
    uint64_t runs;         /* sorted runs written to temporary files (0: all in memory) */
    uint64_t passes;       /* merge passes written back to disk before the last merge */
    uint64_t spill_bytes;  /* bytes written to temporary files */
    uint64_t samples;      /* profile samples written (Perfetto) */
};

struct trove_trace_writer;

/*
 * A new writer of opt->format. Nothing is read or made on disk yet. Errors:
 * TROVE_ERR_INVALID (NULL arguments, an unknown format, fan_in 1 or over the maximum),
 * TROVE_ERR_NOMEM. *out is the writer (free it), NULL on error.
 */
int trove_trace_writer_new(const struct trove_trace_writer_options *opt,
                           struct trove_trace_writer **out);

/*
 * Add events[0..n) (copied) after those added before; their order does not matter, but it
 * breaks ties. Errors: TROVE_ERR_INVALID (NULL events with n > 0; Chrome JSON: a counter
 * whose value is not finite, which JSON cannot hold; Perfetto: an event that ends past 2^64
 * ns — diag names the event by its index among those added), TROVE_ERR_NOMEM, -errno of
 * the temporary file (diag names its directory and says why: a missing directory, a full
 * disk). NULL arguments, and events after the finish, change nothing; every other error is
 * sticky: later calls return it, and the writer can only be freed.
 */
int trove_trace_writer_add(struct trove_trace_writer *w, const struct trove_event *events,
                           size_t n, struct trove_diag *diag);

/*
 * Write the output: the events added, with names (may be NULL) and the flow rows
 * flows[0..nflows) (may be 0), borrowed for the call, to sink, a piece at a time as it is
 * made (the sink's error ends the write and is returned). Once only. The output is what
 * trove_chrome_export / trove_perfetto_write document. stats (may be NULL) gets the counts.
 * Errors: those of add, TROVE_ERR_INVALID (NULL arguments; Perfetto: a flow row that fails
 * trove_flow_check; a second finish), TROVE_ERR_LIMIT (Perfetto: a thread with more than
 * 1,024 zones open at once that do not nest; more than 2^22 processes), TROVE_ERR_CORRUPT
 * (the temporary file read back shorter than written), the sink's. On error the sink may
 * have taken part of the output: it is not a trace (a file should not be kept).
 */
int trove_trace_writer_finish(struct trove_trace_writer *w, const struct trove_names *names,
                              const struct trove_flow *flows, size_t nflows,
                              const struct trove_sink *sink,
                              struct trove_trace_writer_stats *stats, struct trove_diag *diag);

/*
 * The capture's sampling profile (trove/profile.h), borrowed until the finish. Perfetto:
 * its samples are written after the events as PerfSample packets, with the callstacks,
 * frames, mappings and names they use interned (docs/formats/perfetto.md, "Profiles"), which
 * trove_perfetto_read reads back into a profile; its context switches are not written.
 * Chrome JSON: nothing of it is written (the caller says so). Errors: TROVE_ERR_INVALID
 * (NULL w, or after the finish).
 */
int trove_trace_writer_profile(struct trove_trace_writer *w, const struct trove_profile *p);

/*
 * The events' attributes (rows by the index of the event among those added, not going back in
 * event) and the trace's (meta), borrowed until the finish; either may be NULL. Chrome JSON:
 * an event's FIELD rows are written as members of its line (a "cat" where trove writes none
 * of its own), its ARG rows as its "args" (not on a counter or a legacy step, whose args are
 * their values), and the trace's rows as members of the top-level object ("displayTimeUnit"
 * replacing trove's "ns"). docs/formats/chrome-json.md, "Attributes". Perfetto: an event's
 * rows go with its begin: its FIELD row "cat" as a category, its ARG rows as debug
 * annotations, its other FIELD rows as annotations named "trove.field.KEY"; the trace's rows
 * are not written (docs/formats/perfetto.md, "Attributes"). Errors: TROVE_ERR_INVALID (NULL w, rows that go back in event, or after the finish).
 */
int trove_trace_writer_attrs(struct trove_trace_writer *w, const struct trove_attrs *attrs,
                             const struct trove_attrs *meta);

/* Free the writer and its temporary files (NULL is fine). */
void trove_trace_writer_free(struct trove_trace_writer *w);

struct trove_perfetto_options {
    int strict;           /* nonzero: a slice end without a begin, or a begin never ended, is
                             TROVE_ERR_UNMATCHED; zero: dropped and counted */
    uint64_t max_input;   /* refuse inputs larger than this many bytes (0: 4 GiB) */
    struct trove_profile *profile; /* perf samples (PerfSample packets and the interned
                                      callstacks, frames, mappings and names they use) are
                                      added to it (NULL: they are counted as skipped packets) */
    struct trove_attrs *attrs;     /* what the track events carry (NULL: counted as not
                                      kept): their debug annotations as ARG rows (one named
                                      "trove.field.KEY" as the FIELD row KEY, as trove's
                                      export writes those), their categories other than
                                      trove's own as the FIELD row "cat" (joined by ","),
                                      their log message's body as the FIELD row
                                      "log_message"; a slice takes its begin's. Rows by the
                                      event's index in *events (docs/formats/perfetto.md,
                                      "Attributes") */
};

struct trove_perfetto_stats {
    uint64_t packets;
    uint64_t track_descriptors;
    uint64_t track_events;    /* TrackEvent packets */
    uint64_t slices;          /* begin/end pairs made into zones */
    uint64_t instants;        /* instants made into events */
    uint64_t counters;        /* counter values */
    uint64_t flows;           /* flow rows */
    uint64_t unmatched_begin; /* slices never ended (dropped unless strict) */
    uint64_t unmatched_end;   /* ends with no open slice (dropped unless strict) */
    uint64_t skipped_packets; /* packets of other kinds (ftrace, process stats, ...) */
    uint64_t skipped_events;  /* TrackEvents of other types (legacy phases) */
    uint32_t threads;         /* distinct (pid, tid) among imported events */
    uint32_t names;           /* event names */
    uint64_t samples;         /* perf samples added to opt->profile */
    /* What the track events carry that trove does not keep, counted so that an import can
     * say so (docs/formats/perfetto.md, "Not kept"): */
    uint64_t annotated_events; /* track events with debug annotations */
    uint64_t annotations;      /* those annotations (with opt->attrs: those not kept, a
                                  nested value's, or on a slice's end or an event trove skips) */
    uint64_t category_events;  /* track events with a category other than trove's own (with
                                  opt->attrs: whose categories were not kept) */
    uint64_t log_messages;     /* track events' log messages (with opt->attrs: not kept) */
    uint64_t attr_rows;        /* attribute rows kept (opt->attrs) */
    uint64_t other_fields;     /* fields of track events trove does not read */
};

/*
 * Read a Perfetto trace in buf[0..len) (the subset docs/formats/perfetto.md describes: track
 * descriptors, TrackEvent slices, instants, counters and flows, interned names and
 * categories, incremental and scaled clocks; perf samples into opt->profile when it is
 * given; other packets are counted and skipped) and
 * append its events to events (sorted and given depths as the Chrome importer does), its
 * names to names (may be NULL) and its flow rows to flows (may be NULL). A trace
 * trove_perfetto_write wrote comes back exactly: the same events, names and flows.
 *
 * A decoder of outside bytes: every tag, varint and length is checked against the message
 * that holds it, every count against a limit (2^28 events, 2^20 tracks, 2^24 interned
 * strings, 4,096 sequences, names of TROVE_NAME_MAX bytes), before anything is allocated.
 * Errors, with the byte offset in diag: TROVE_ERR_TRUNCATED, TROVE_ERR_VARINT,
 * TROVE_ERR_CORRUPT (bytes that are not a trace, a track with no descriptor, a cycle of
 * parents), TROVE_ERR_LIMIT, TROVE_ERR_NEGATIVE (a slice that ends before it begins, a
 * timestamp past 2^64 ns), TROVE_ERR_UNMATCHED (strict), TROVE_ERR_NOMEM. On error events,
 * names and flows are unchanged (the one exception: an allocation failure inside the final
 * trove_names_merge() can leave names partly merged).
 */
int trove_perfetto_read(const uint8_t *buf, size_t len, const struct trove_perfetto_options *opt,
                        struct trove_events *events, struct trove_names *names,
                        struct trove_flows *flows, struct trove_perfetto_stats *stats,
                        struct trove_diag *diag);

/*
 * Does head[0..n) (a file's first bytes; 64 or more make a good guess) look like a Perfetto
 * trace: a first field that is Trace.packet (field 1, length-delimited) holding well-formed
 * protobuf fields? A JSON document (which begins with '[', '{', white space or a byte order
 * mark), a trove wire stream, a zip or a Parquet file never does. Returns 1 or 0.
 */
int trove_perfetto_sniff(const uint8_t *head, size_t n);

#ifdef __cplusplus
}
#endif
#endif
