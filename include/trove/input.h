/*
 * input.h: trove's edges as a library — every input kind read into events, names, flows and a
 * profile; a capture or a file written out as a bundle, Parquet, a dataset directory,
 * Chrome JSON or Perfetto; an output file that appears only once whole; and an input
 * imported into a store as a capture. The `trove` program and the service (`trove serve`'s
 * import and export endpoints) both call these, so both read and write the same bytes,
 * and neither runs the other.
 *
 * Nothing here prints. An error is a negative code with a struct trove_diag whose message
 * names the input as the caller named it (opt->label, else the path: an upload is "body"
 * or its name=, never a temporary file) and says what was wrong and where. Warnings (what
 * was dropped, skipped or could not be carried) go into a struct trove_warnings the caller
 * may print; progress goes to a callback the caller may draw. A zeroed options struct means
 * every default.
 */
#ifndef TROVE_INPUT_H
#define TROVE_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trove/capture.h"
#include "trove/common.h"
#include "trove/event.h"
#include "trove/flows.h"
#include "trove/tables.h"

#ifdef __cplusplus
extern "C" {
#endif

struct trove_profile;
struct trove_attrs;
struct trove_store;

/* ---- warnings and progress ---------------------------------------------------------- */

/* The warnings of one read or export, kept for the caller to say (and for a --json
 * document): past TROVE_WARNINGS_MAX they are only counted. */
#define TROVE_WARNINGS_MAX 16
struct trove_warnings {
    size_t n;
    size_t more;             /* warnings past TROVE_WARNINGS_MAX, and their counts */
    uint64_t more_count;
    struct trove_warning {
        uint64_t count;      /* the events (samples, ...) it is about */
        char message[640];
    } w[TROVE_WARNINGS_MAX];
};

/* Add a warning about `count` things to w (may be NULL: dropped). */
void trove_warn(struct trove_warnings *w, uint64_t count, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Progress of long work: `what` ("reading", "importing", "reading the capture") has done
 * `done` of `total` (0: no total known, e.g. a pipe); done == UINT64_MAX: the work ended. */
typedef void (*trove_input_progress_fn)(void *ctx, const char *what, uint64_t done, uint64_t total);

/* ---- reading ------------------------------------------------------------------------ */

/* The input kinds. */
enum trove_input_kind {
    TROVE_INPUT_AUTO = 0,        /* told from the first bytes */
    TROVE_INPUT_CHROME_JSON = 1, /* the Trace Event Format */
    TROVE_INPUT_WIRE = 2,        /* a trove wire stream, any format */
    TROVE_INPUT_BUNDLE = 3,      /* a zip written by an export */
    TROVE_INPUT_PARQUET = 4,     /* an events table alone */
    TROVE_INPUT_DIR = 5,         /* a directory holding a bundle's files */
    TROVE_INPUT_CAPTURE = 6,     /* a capture in a store: store:NAME */
    TROVE_INPUT_PERFETTO = 7     /* a Perfetto protobuf trace */
};

/* A kind's name for --input-format (auto, chrome-json, wire, bundle, parquet, dir, capture,
 * perfetto and a few aliases) -> enum trove_input_kind; -1 if unknown. */
int trove_input_kind_parse(const char *s);
/* "a Chrome JSON trace", "a wire stream", ... for messages. */
const char *trove_input_kind_name(int kind);
/* The capture an input names — `store:NAME`, or any path when forced is
 * TROVE_INPUT_CAPTURE — or NULL when it names none. Points into path. */
const char *trove_input_capture_name(const char *path, int forced);
/* The store a command uses: given if not NULL, else $TROVE_STORE if set and not empty, else
 * ./trove-data. */
const char *trove_input_default_store(const char *given);
/* Do head[0..n) (a file's first bytes) look like a Perfetto trace? 1 or 0. */
int trove_input_sniff_perfetto(const uint8_t *head, size_t n);

struct trove_input_options {
    int format;          /* enum trove_input_kind (0: told from the bytes) */
    int strict;          /* Chrome JSON, Perfetto: an unmatched begin or end is an error */
    int edited;          /* a bundle's tables were edited after export: an event count that
                            differs from manifest.json's is a warning, not an error */
    const char *store;   /* for store:NAME (NULL: trove_input_default_store) */
    unsigned store_flags; /* TROVE_STORE_* added when a store is opened (NOVERIFY) */
    const char *label;   /* the input's name in messages (NULL: its path) */
    struct trove_profile *profile;    /* a new profile: a bundle's or a capture's samples,
                                         frames, stacks and switches go into it (NULL: not
                                         read) */
    struct trove_attrs *attrs;        /* the events' attributes go into it (rows by the
                                         event's index among those read; trove/attrs.h):
                                         a Chrome trace's args, categories and other
                                         members, a capture's (NULL: counted as not kept) */
    struct trove_attrs *meta;         /* the trace's own (NULL: not read) */
    struct trove_warnings *warnings;  /* NULL: dropped */
    trove_input_progress_fn progress;       /* NULL: none */
    /* Told once, before the read, how the input is read ("PATH (read as a wire stream)").
     * NULL: not told. */
    void (*read_as)(void *ctx, const char *line);
    void *ctx;                        /* for progress and read_as */
};

/*
 * Where a read hands its input, in stream order. Either callback may be NULL. A callback
 * returns 0 to go on, or a negative code to stop the read, which then returns that code
 * with diag untouched (the callback says what failed).
 */
struct trove_input_sink {
    /* A run of events. `names` holds every name read so far. */
    int (*events)(void *ctx, const struct trove_event *ev, size_t n,
                  const struct trove_names *names);
    /* Names that arrived: a names frame, or a whole table before its events. */
    int (*names)(void *ctx, const struct trove_names *added);
    void *ctx;
};

/*
 * Read the input at path ("-": stdin; store:NAME: a capture) and hand it to sink: a wire
 * stream frame by frame (memory stays one frame), any other kind read whole and then handed
 * out, names first, events in runs. names_all (may be NULL) receives every name. TROVE_OK,
 * or a negative code with diag naming the input, the kind it was read as and where.
 */
int trove_input_read(const char *path, const struct trove_input_options *opt,
                     const struct trove_input_sink *sink, struct trove_names *names_all,
                     struct trove_diag *diag);

/* The input at path into memory: every event appended to events, every name into names,
 * the flow rows (a Chrome or Perfetto trace's, a bundle's, a capture's) appended to flows
 * (may be NULL). events and flows unchanged on failure. */
int trove_input_load(const char *path, const struct trove_input_options *opt,
                     struct trove_events *events, struct trove_names *names,
                     struct trove_flows *flows, struct trove_diag *diag);

/* ---- a capture in a store ----------------------------------------------------------- */

/*
 * What trove_input_capture_walk calls after each frame it decodes into ev (on the stream's
 * sender thread): it may take events out of ev (moving the rest to the front and setting
 * ev->len) and returns 0, or a negative code to end the walk, which then returns it with
 * diag untouched.
 */
typedef int (*trove_input_frames_fn)(void *ctx, struct trove_events *ev);

/*
 * Read capture `name` of the store at `store` (NULL: trove_input_default_store) through the
 * streaming pipeline: the events that start in [from_ns, to_ns), in stored order, decoded
 * into events and names, frames(ctx, events) called after each frame when not NULL (so the
 * caller empties events as it goes and the capture need not fit in memory). Records the
 * capture's last use in the background, as a replay does (a marker not written is a
 * warning in opt->warnings). opt may be NULL; its progress is used. With opt->attrs, the
 * rows of the events walked are appended to it, each by its event's index among those walked
 * plus events->len at the call (a window's through the replay's attrs frames), and the
 * trace's rows to opt->meta when not NULL. On error without frames, events is unchanged; on
 * any error opt->attrs holds the rows it had.
 */
int trove_input_capture_walk(const char *store, const char *name, uint64_t from_ns,
                             uint64_t to_ns, const struct trove_input_options *opt,
                             struct trove_events *events, struct trove_names *names,
                             trove_input_frames_fn frames, void *ctx, struct trove_diag *diag);


/* The flow rows of capture `name` whose times are in [from_ns, to_ns), appended to flows. */
int trove_input_capture_flows(const char *store, const char *name, uint64_t from_ns,
                              uint64_t to_ns, struct trove_flows *flows, struct trove_diag *diag);

/* The profile of capture `name`, its samples and switches cut to [from_ns, to_ns), into a
 * new *out (NULL when the capture has none). */
int trove_input_capture_profile(const char *store, const char *name, uint64_t from_ns,
                                uint64_t to_ns, struct trove_profile **out,
                                struct trove_diag *diag);

/* Record capture name's last use (trove_capture_mark_used) on a background thread; NULL
 * (after a warning in w) if it cannot start, and NULL for a store on S3 (no markers are kept
 * there). trove_input_mark_finish waits for it (bounded) when wait is set, then lets it go;
 * a marker that was not written is a warning in w. */
struct trove_bg;
struct trove_bg *trove_input_mark_start(const char *store, const char *name,
                                        struct trove_warnings *w);
void trove_input_mark_finish(struct trove_bg *bg, const char *name, int wait,
                             struct trove_warnings *w);

/* Open the store at dir (TROVE_STORE_* flags). Without TROVE_STORE_CREATE a directory that
 * is missing or has no volumes/ is TROVE_ERR_NOTFOUND, "no store at DIR; ...", untouched. */
int trove_input_store_open(const char *dir, unsigned flags, struct trove_store **out,
                           struct trove_diag *diag);

/* ---- an output file ----------------------------------------------------------------- */

/*
 * An output file. trove_output_open: "-" (or NULL) is stdout (refused on a terminal when
 * binary); an existing device, FIFO or socket is written in place; a regular file or a new
 * path is written to a hidden temp file beside it (symlinks followed: the file they name is
 * replaced, the link kept) that trove_output_commit fsyncs and renames over it; an existing
 * directory is an error. Write to o->f. trove_output_abort drops the temp file, leaving
 * what was there (and does nothing after a commit, or on a zeroed struct).
 */
struct trove_output {
    FILE *f;                /* write here */
    int direct;             /* written in place: stdout, a device, a FIFO, a socket */
    char path[4096];        /* as given, for messages ("stdout" for -) */
    char target[4096];      /* the file a rename replaces (path with its links followed) */
    char tmp[4200];         /* the temp file, "" when direct or done */
};
int trove_output_open(const char *path, int binary, struct trove_output *o,
                      struct trove_diag *diag);
int trove_output_commit(struct trove_output *o, struct trove_diag *diag);
void trove_output_abort(struct trove_output *o);
/* The whole of data[0..len) as path, through trove_output. */
int trove_output_write_file(const char *path, const void *data, size_t len,
                            struct trove_diag *diag);

/* ---- exports ------------------------------------------------------------------------ */

enum trove_export_format {
    TROVE_EXPORT_BUNDLE = 0,      /* a zip of Parquet tables and manifest.json */
    TROVE_EXPORT_PARQUET = 1,     /* the events table alone */
    TROVE_EXPORT_DIR = 2,         /* a new directory of the bundle's files */
    TROVE_EXPORT_CHROME_JSON = 3, /* the Trace Event Format */
    TROVE_EXPORT_PERFETTO = 4     /* a Perfetto protobuf trace */
};

struct trove_export_options {
    int format;              /* enum trove_export_format */
    const char *capture;     /* a capture of the store, streamed (never whole in memory) ... */
    const char *store;       /* (NULL: trove_input_default_store) */
    uint64_t from_ns, to_ns; /* the events that start in [from, to) (a capture's; 0 or
                                UINT64_MAX as to_ns: to the end) */
    const char *in;          /* ... or an input of any kind, read whole (store:NAME too) */
    struct trove_input_options in_opt; /* how `in` is read (its store, label, ...); its
                                          warnings and progress are this export's */
    const char *out;         /* a file, a pipe, stdout ("-"); the directory (made) for dir */
    int deflate;             /* bundle: deflated entries */
    struct trove_tables_options topt; /* the Parquet encoding (zeroed: the defaults) */
    const char *manifest_name; /* the manifest's capture (NULL: the capture, or in's base
                                  name) */
    size_t trace_run_events; /* trace formats: the writer's run and fan-in (0: the environment's
                                TROVE_EXPORT_RUN_EVENTS and TROVE_EXPORT_FAN_IN if set, for
                                tests and benchmarks; else the writer's defaults) */
    unsigned trace_fan_in;
};

struct trove_export_result {
    uint64_t events;         /* events written */
    uint64_t bytes;          /* bytes of the tables and manifest, or of the trace */
    uint64_t flow_rows;
    uint64_t samples;        /* the profile's samples read */
    uint64_t samples_carried; /* of them, written (a trace) */
    uint64_t runs, passes, spill_bytes; /* a trace's sort: runs, merge passes, temp bytes */
};

/* Export as x says. TROVE_OK with *res; else a negative code with diag, the output left as
 * it was (a directory's files not made). Warnings go to x->in_opt.warnings. */
int trove_export(const struct trove_export_options *x, struct trove_export_result *res,
                 struct trove_diag *diag);

/* ---- import into a store ------------------------------------------------------------ */

struct trove_import_options {
    struct trove_input_options in; /* how the input is read (label: the upload's name) */
    int append;                    /* add to capture name (else it must be new) */
    int segment_format;            /* the segments' frames (0: TROVE_WIRE_MODEL for a new
                                      capture, the capture's own for an append) */
    uint64_t segment_bytes;        /* 0: the default */
    int no_summaries;              /* 1: write no summary objects (trove_capture_index can
                                      give them later) */
    /* With s NULL: opens the store the capture goes to, called once the input was
     * recognized and its first frame read (a whole input: once it was read), so that an
     * input that cannot be read makes no store. Returns TROVE_OK with *s (which
     * trove_import uses and does not close), or a negative code with diag set. */
    int (*open_store)(void *ctx, struct trove_store **s, struct trove_diag *diag);
    void *open_ctx;
};

struct trove_import_result {
    uint64_t events;
    uint64_t flow_rows;
    uint64_t attr_rows;  /* attribute rows kept (the events' and the trace's) */
    uint64_t samples;
    uint64_t new_objects, new_bytes;
    int bad_input; /* on failure: the input was at fault (it could not be read, or the
                      capture's writer refused what it holds), not the store */
    int read_failed; /* on failure: reading the input failed (diag names the input) */
    struct trove_capture_info info; /* the capture as committed (counts, stored_bytes) */
};

/*
 * Store the input at path as capture `name` through s (or the store opt->open_store opens;
 * appending when opt->append). A wire stream (a file, stdin, a pipe) is stored as it is
 * read, through a capture writer that commits once at its end: memory is one frame, one
 * segment and the names, whatever its length. Any other kind is read whole first (one of
 * more than 4 Mi events says so in opt->in.warnings), then written. Either way the capture
 * is what trove_capture_write_profile makes of the same events, names, flows and profile,
 * object for object, and it is committed only if this returns TROVE_OK: on failure the
 * capture (or its absence) is as it was, and the segments a streamed import had put are in
 * no committed recipe (gc removes them).
 */
int trove_import(struct trove_store *s, const char *name, const char *path,
                 const struct trove_import_options *opt, struct trove_import_result *res,
                 struct trove_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
