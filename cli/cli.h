/*
 * cli.h: what the trove subcommands share — the command table, error reporting, input
 * loading (Chrome JSON or a wire stream, detected from the first bytes; and, for import,
 * bundles and Parquet files), printing an event as `trove cat` does, a progress line on a
 * terminal for long work, and the options and store opening of the store commands
 * (volume, snapshot, verify, gc, ls, replay). Tools use only the public API in
 * include/trove/.
 */
#ifndef TROVE_CLI_H
#define TROVE_CLI_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "trove/common.h"
#include "trove/event.h"
#include "trove/flows.h"
#include "trove/gen.h"
#include "trove/input.h"
#include "trove/serve.h"
#include "trove/tables.h"
#include "trove/volume.h"
#include "trove/wire.h"

/* Subcommands: argv[0] is the subcommand name. Return the process exit status. */
int cmd_gen(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_volume(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* The producers' socket of `trove serve`: given, else a --store directory's
 * (STORE/trove.sock), else $TROVE_SOCKET, else the default store's (cli_producer.c). */
const char *cli_socket_for(const char *given, const char *store, char *buf, size_t cap);
/* A producer's connection to `trove serve` (cli_producer.c). */
struct cli_producer {
    int fd;
    struct trove_serve_answer accept;    /* the service's accept */
    volatile sig_atomic_t *stop;         /* may be NULL: set (by a signal), waits give up */
    int names_fallback;                  /* its thread and process names are guesses (a
                                            sampler's): the hello says "names":"fallback" */
    size_t in_len;
    char in[2 * TROVE_SERVE_ANSWER_MAX]; /* what the service sent, not yet taken as lines */
    int stopped; /* set by the calls below when the service stopped under the producer: it
                    said so ("stopping":true), or the connection ended with no word */
};
/* The exit status of a command whose service stopped under it (trove record, trove gen
 * --live, trove watch): told apart from an error (1) and a normal end (0). */
#define CLI_EXIT_STOPPED 3
/* Connect to the service at path, say hello for capture (append: continue it) and wait up
 * to 10 s for the answer: 0 with p->fd open and p->accept filled; else 1 after an error
 * line (the refusal's reason, no answer, no service; p->stopped when it stopped meanwhile).
 * p->stop is kept. */
int cli_producer_open(const char *cmd, const char *path, const char *capture, int append,
                      const char *producer, struct cli_producer *p);
/* Say how the service took the capture on stderr: always when the session replaces a stored
 * capture, else when verbose. */
void cli_producer_say(const char *cmd, const struct cli_producer *p, int verbose);
/* A write to p failed after `sent` events (UINT64_MAX: not said): the service closed it.
 * Print why (its error line, if it sent one; "service stopped" and p->stopped when it
 * stopped); returns 1. */
int cli_producer_closed(const char *cmd, struct cli_producer *p, uint64_t sent);
/* The stream is whole: shut the sending side and wait until the service has read it all and
 * closed (p->stop set gives up waiting). 0; or 1 after an error line when the service sent
 * an error line instead (p->stopped when that line says it stops). */
int cli_producer_finish(const char *cmd, struct cli_producer *p, uint64_t sent);
void cli_producer_close(struct cli_producer *p);
int cmd_replay(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_watch(int argc, char **argv);
/* `trove record NAME -- CMD ARGS...` and `trove record NAME --pid PID` (record_sample.c):
 * sampling call stacks into a profile. cmd_record hands over when it is given a command or
 * a pid and no --from. The exit status. */
int cli_record_sample(int argc, char **argv);
/* The hottest functions of profile p (top rows; json: as JSON) — record --top's and trove
 * top's table (record_sample.c). */
struct trove_profile;
struct trove_profile_func;
void cli_print_top(uint64_t top, int json, const struct trove_profile *p,
                   const struct trove_profile_func *f, size_t n, uint64_t samples);
/* Its usage text, which `trove record --help` prints after the producer's. */
void cli_record_sample_usage(FILE *f);
/* `trove gen --live` (cmd_record.c): the model g's events sent to the service at `rate` a
 * second for `seconds`, their times moved to when they are sent; attrs: each batch's
 * attributes (trove_gen_attrs) in an attrs frame before it. verbose: say how the service
 * took the capture (new, replace, append, join). The exit status. */
struct trove_gen_options;
int cli_gen_live(const char *name, const struct trove_gen_options *g, uint64_t rate,
                 double seconds, const char *sock, const char *store, int wire, uint64_t batch,
                 int append, int attrs, int json, int quiet, int verbose);

struct trove_store;
struct trove_profile;
/* `trove serve`'s context for its log callback. */
struct cli_serve_ctx {
    int verbose, quiet;
    int lost;           /* a capture was given up with events never committed */
};

/* Print "trove <cmd>: <message>" to stderr. Returns 1 (the exit status for errors). */
int cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* True if argv[i] is -h or --help. */
int cli_is_help(const char *arg);

/* --wire for a viewer: auto (0) or a TROVE_WIRE_* format. 0, or 2 after a usage error. */
int cli_parse_wire_auto(const char *cmd, const char *v, int *out);
/* opt's value v as a count in [lo, hi] (cli_parse_u64's suffixes). 0, or 2 after a usage
 * error naming opt. */
int cli_parse_u32(const char *cmd, const char *opt, const char *v, uint32_t lo, uint32_t hi,
                  uint32_t *out);

/* Parse a decimal count with an optional k/M/G suffix (powers of 1000). 0 on success. */
int cli_parse_u64(const char *s, uint64_t *out);

/* What --help says about inputs. */
#define INPUT_HELP                                                                            \
    "IN is any of: a Chrome JSON trace (also .gz or .zst), a Perfetto trace, a wire stream,\n" \
    "a bundle, a Parquet events file, a dataset directory, store:NAME (a capture in\n"       \
    "--store), or '-' for stdin; its kind is told from its bytes (--input-format auto|\n"   \
    "chrome-json|perfetto|wire|bundle|parquet|dir|capture forces one).\n"

/*
 * The input layer (trove/input.h) as the commands call it (cli_input.c): its progress drawn
 * on a terminal, its "read as" line with -v, its warnings said on stderr (unless quiet) and
 * kept, its error said as one line "trove CMD: ...".
 *
 * Where a reader hands a capture, in stream order. Either callback may be NULL. A callback
 * returns 0 to go on, nonzero to stop the read (it has reported its own error).
 */
struct cli_sink {
    /* A run of events. `names` holds every name read so far. */
    int (*events)(void *ctx, const struct trove_event *ev, size_t n, const struct trove_names *names);
    /* Names that arrived: a names frame, or a whole table before its events. */
    int (*names)(void *ctx, const struct trove_names *added);
    void *ctx;
};

struct cli_load_options {
    int format;          /* enum trove_input_kind */
    int strict;          /* Chrome JSON: unmatched B/E is an error */
    int quiet;           /* no warnings, no progress */
    int edited;          /* a bundle's tables were edited after export: an event count that
                            differs from manifest.json's is a warning, not an error */
    const char *store;   /* for store:NAME (NULL: $TROVE_STORE, else ./trove-data) */
    int verbose;         /* say on stderr what the input was read as */
    struct trove_profile *profile; /* a new profile: a bundle's samples, frames, stacks and
                                      switches tables go into it (NULL: not read) */
    struct trove_warnings *warnings; /* the warnings of the read are kept here too (NULL:
                                        only said on stderr, unless quiet) */
};

/*
 * Read the input at path (any kind trove_input_read takes) and hand it to sink: a wire stream
 * frame by frame (memory stays one frame), any other kind read whole and then handed out,
 * names first, events in runs. names_all (may be NULL) receives every name. Prints one error
 * line naming the input, the kind it was read as and where, and returns nonzero on failure.
 */
int cli_read(const char *cmd, const char *path, const struct cli_load_options *opt,
             const struct cli_sink *sink, struct trove_names *names_all);

/* The input at path into memory: every event appended to events (unchanged on failure),
 * every name into names. */
int cli_load(const char *cmd, const char *path, const struct cli_load_options *opt,
             struct trove_events *events, struct trove_names *names);

/* cli_load, and the flow rows (of a Chrome or Perfetto trace, or a bundle's flows table)
 * appended to flows (may be NULL; a wire stream has none); events and flows unchanged on
 * failure. */
int cli_load_flows(const char *cmd, const char *path, const struct cli_load_options *opt,
                   struct trove_events *events, struct trove_names *names,
                   struct trove_flows *flows);

/* ---- the options the event commands share (cli.c) -------------------------------------- */

enum cli_common_option {
    CLI_C_WIRE = 1 << 0,    /* --wire raw|packed|deflate (--to is an alias) */
    CLI_C_BATCH = 1 << 1,   /* --batch N: events per frame (--frame-events is an alias) */
    CLI_C_JSON = 1 << 2,    /* --json: one JSON document on stdout */
    CLI_C_QUIET = 1 << 3,   /* -q, --quiet: no summary, warnings or progress on stderr */
    CLI_C_VERBOSE = 1 << 4, /* -v, --verbose: more on stderr */
    CLI_C_INPUT = 1 << 5,   /* --input-format F, --strict, --edited */
    CLI_C_STORE = 1 << 6,   /* --store DIR */
    CLI_C_OUTPUT = 1 << 7,  /* -o, --output FILE */
    CLI_C_REMOTE = 1 << 8   /* --url URL, --token-file FILE: a remote service (cli_remote.c) */
};

struct cli_common {
    unsigned given;         /* CLI_C_* seen */
    int wire;               /* TROVE_WIRE_*: packed unless --wire says otherwise */
    uint64_t batch;         /* TROVE_BATCH_DEFAULT unless --batch */
    int json, quiet, verbose;
    const char *store;      /* NULL: cli_default_store */
    const char *out;        /* -o; NULL if not given */
    const char *url;        /* --url; NULL if not given */
    const char *token_file; /* --token-file; NULL if not given */
    struct cli_load_options in;
};
void cli_common_init(struct cli_common *c);
/*
 * If argv[*i] is one of the `accepted` options above, take it and its value (`--opt V` or
 * `--opt=V`; *i moves past it) into c and return 1; return 0 if it is none of them (the
 * caller parses it), or 2 after a usage error naming the option.
 */
int cli_common_opt(const char *cmd, int argc, char **argv, int *i, unsigned accepted,
                   struct cli_common *c);
/* --store given with an input that is not store:NAME (nor --input-format capture): 2 after
 * an error saying so, else 0. */
int cli_store_for_input(const char *cmd, const char *in, const struct cli_common *c);
/* Options that cannot go together: 2 after an error naming both, else 0. */
int cli_exclusive(const char *cmd, int a_given, const char *a, int b_given, const char *b);
#define COMMON_HELP_WIRE                                                                      \
    "  --wire W           raw (32-byte records), packed (the default) or deflate frames\n" \
    "                     (--to is the same)\n"
#define COMMON_HELP_BATCH "  --batch N          events per frame, 1..65536 (default 2048)\n"
#define COMMON_HELP_INPUT                                                                     \
    "  --input-format F   auto (default), chrome-json, perfetto, wire, bundle, parquet,\n"  \
    "                     dir, capture\n"                                                  \
    "  --strict           a Chrome B without E (or E without B) is an error, not a warning\n"
#define COMMON_HELP_QV                                                                        \
    "  -q, --quiet        nothing on stderr but errors\n"                                    \
    "  -v, --verbose      also say what was read and how (the input's kind)\n"

/* ---- outputs (cli_input.c) ----------------------------------------------------------- */

/* trove_output_open, _commit and _write_file (trove/input.h), each returning 0, or 1 after
 * printing its error as one line; cli_out_abort is trove_output_abort. */
int cli_out_open(const char *cmd, const char *path, int binary, struct trove_output *o);
int cli_out_commit(const char *cmd, struct trove_output *o);
#define cli_out_abort trove_output_abort
int cli_out_write_file(const char *cmd, const char *path, const void *data, size_t len);

/* Write all of p[0..n) to fd (a socket, a pipe), going on after EINTR. 0, or -1 with errno
 * set (a peer that closed: EPIPE, with SIGPIPE ignored). */
int cli_write_all(int fd, const void *p, size_t n);

/* A progress line on stderr, only when stderr is a terminal and the work is long. */
struct cli_progress {
    const char *what;
    uint64_t total;
    double start;
    double last;
    int active;
};
void cli_progress_begin(struct cli_progress *p, const char *what, uint64_t total);
/* -q: no progress line from here on, whatever stderr is. */
void cli_progress_quiet(void);
void cli_progress_update(struct cli_progress *p, uint64_t done);
void cli_progress_end(struct cli_progress *p);

/* The live commands' signals (cli.c): SIGINT and SIGTERM set cli_interrupted and stop a
 * service running in this process (trove_serve_stop); a second one exits at once; SIGPIPE
 * is ignored. cli_sleep_ns sleeps, cut short by them. */
extern volatile sig_atomic_t cli_interrupted;
void cli_live_signals(void);
void cli_sleep_ns(uint64_t ns);

/* Monotonic seconds. */
double cli_now(void);

/* The glue itself, for a command that calls the input layer directly (trove_export):
 * cli_glue_begin fills o from c, with g's callbacks (progress, -v's line) and the warnings
 * into w; cli_glue_end ends the progress line, says w's warnings (and keeps them in
 * c->warnings) and the error of rc (diag's; none when a sink said its own): 0 or 1. */
struct cli_glue {
    const char *cmd;
    int quiet, verbose;
    struct cli_progress prog;
    const char *what; /* the work the line shows; NULL: none begun */
};
void cli_glue_begin(struct cli_glue *g, const char *cmd, const struct cli_load_options *c,
                    struct trove_warnings *w, struct trove_input_options *o);
int cli_glue_end(struct cli_glue *g, const struct cli_load_options *c,
                 const struct trove_warnings *w, int rc, const struct trove_diag *diag);


/* Write s[0..len) as a JSON string literal (quotes included, control bytes escaped). */
void cli_json_string(FILE *o, const char *s, size_t len);

/* A warning: "trove CMD: warning: MESSAGE" on stderr unless quiet, and MESSAGE with count
 * into w (may be NULL; past TROVE_WARNINGS_MAX only counted, in more). The warnings of one
 * command (what it dropped, skipped or could not carry) are kept for its --json document as
 * well as said on stderr. */
void cli_warn(const char *cmd, int quiet, struct trove_warnings *w, uint64_t count,
              const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* `"warnings":[{"count":N,"message":"..."},...]` (an empty array when there are none; an
 * entry "N more warnings" for those past TROVE_WARNINGS_MAX). */
void cli_json_warnings(FILE *o, const struct trove_warnings *w);
/* Say the warnings of w on stderr (unless quiet) and add them to into (may be NULL). */
void cli_warnings_say(const char *cmd, int quiet, const struct trove_warnings *w,
                      struct trove_warnings *into);

/* One capture of `trove ls`, for cli_print_capture_line. */
struct cli_capture_line {
    const char *name;
    uint64_t events, segments, first_ns, end_ns, stored_bytes;
    uint64_t last_used_ns; /* Unix ns */
    int have_segments;     /* 0: segments unknown, shown as "?" */
    int have_used;         /* 0: never used */
    int live;              /* a service's capture that is being written */
    const char *format;    /* its segments' format (trove_capture_segment_format_name; NULL:
                              deflate) */
    uint64_t samples;      /* sampled call stacks (a profile) */
    uint64_t damaged;      /* slots naming objects on record as damaged */
};
/* Print l as `trove ls` does, its name padded to width: events, segments ("columnar
 * segments", "model segments" for format 5 and 8 ones) and samples if any — a capture of samples alone, its samples
 * only — how long and from when (in seconds), the bytes stored and the last use (UTC),
 * then "live" if it is, and "DAMAGED: N slots" if objects it names are on record as
 * damaged. */
void cli_print_capture_line(FILE *o, int width, const struct cli_capture_line *l);

/* Print one event as `trove cat` does: a text line (start_ns dur_ns pid tid kind depth extra
 * name [thread]) or, with json, one JSON object a line; names resolve the ids. */
void cli_print_event(FILE *o, const struct trove_event *e, const struct trove_names *names,
                     int json);

/* ---- the store commands ---------------------------------------------------------------- */

/*
 * Parse a byte size: decimal digits, optionally followed by a binary suffix K, M, G, T or P
 * (or KiB, MiB, GiB, TiB, PiB), in any case: 10G and 10gib are 10 x 2^30. Nothing else (no
 * sign, space or fraction). 0 on success; -1 if malformed or over UINT64_MAX.
 */
int cli_parse_size(const char *s, uint64_t *out);

/* Parse a stored segment format for `cmd`: deflate, columnar, columnar_deflate (also
 * columnar+deflate) or model into *out as a TROVE_WIRE_* value. 0, or the error printed and
 * -1. */
int cli_parse_segment_format(const char *cmd, const char *s, int *out);

/* The message for a failed call: diag's when it has one (diag may be NULL), else
 * trove_strerror(rc). */
const char *cli_diag_msg(const struct trove_diag *diag, int rc);

struct trove_store;
/* Why a call on store s failed with rc: for TROVE_ERR_REMOTE on S3, what S3 answered (the
 * request, the status, its code and message), else trove_strerror(rc). The text lives
 * until the next call. */
const char *cli_store_why(struct trove_store *s, int rc);

/* The options the store commands take; each command accepts some of them. */
enum cli_store_option {
    CLI_OPT_SIZE = 1 << 0,       /* --size SIZE */
    CLI_OPT_BLOCK_SIZE = 1 << 1, /* --block-size SIZE: a power of two from 4K to 1G */
    CLI_OPT_OFFSET = 1 << 2,     /* --offset N */
    CLI_OPT_LENGTH = 1 << 3,     /* --length N */
    CLI_OPT_JSON = 1 << 4,       /* --json */
    CLI_OPT_VERBOSE = 1 << 5,    /* --verbose, -v */
    CLI_OPT_DEEP = 1 << 6,       /* --deep */
    CLI_OPT_REPAIR = 1 << 7,     /* --repair */
    CLI_OPT_FORMAT = 1 << 8,     /* --recipe-format v1|v3 */
    CLI_OPT_NO_VERIFY = 1 << 9,  /* --no-verify: for benchmarks only (cli_store_no_verify) */
    CLI_OPT_QUIET = 1 << 10,     /* -q, --quiet */
    CLI_OPT_URL = 1 << 11,       /* --url URL: a remote service (cli_remote.c) */
    CLI_OPT_TOKEN_FILE = 1 << 12, /* --token-file FILE: its token */
    CLI_OPT_REPLACE = 1 << 13,    /* --replace (store copy) */
    CLI_OPT_FROM = 1 << 14        /* --from STORE: another copy (verify --repair) */
};

/* What a store command accepts: its --help text and its options and arguments. */
struct cli_store_usage {
    const char *usage;  /* printed by --help (stdout) and after a usage error (stderr) */
    unsigned accepted;  /* CLI_OPT_* besides --store, -q and -v, which every store command
                           takes (-q: no progress and no summary; -v: what it says) */
    unsigned required;  /* CLI_OPT_* that must be given */
    int min_args, max_args; /* positional arguments, at most 3 */
};

/* A store command's parsed command line. Sizes and offsets take cli_parse_size suffixes. */
struct cli_store_args {
    const char *store;   /* --store DIR, else $TROVE_STORE if set and not empty, else ./trove-data */
    int store_given;     /* --store DIR was given */
    const char *url, *token_file; /* --url, --token-file; NULL if not given */
    const char *from;    /* --from STORE; NULL if not given */
    const char *arg[3];  /* positional arguments in order ("-" is one); nargs of them */
    int nargs;
    unsigned given;      /* CLI_OPT_* given */
    uint64_t size, block_size, offset, length;
    int recipe_format;   /* --recipe-format, else $TROVE_RECIPE_FORMAT: TROVE_RECIPE_FORMAT_V1
                            or _V3; 0 if neither (the library's default) */
};

/*
 * Parse argv[1..argc) of store command cmd (e.g. "volume create") against u. Options may be
 * written `--opt VALUE` or `--opt=VALUE`; after `--` every argument is positional. Returns
 * -1 when the command should run, else the exit status to return at once: 0 after --help
 * (usage printed on stdout), 2 after a usage error (a message, or the usage, on stderr).
 */
int cli_store_args_parse(const char *cmd, int argc, char **argv, const struct cli_store_usage *u,
                         struct cli_store_args *out);

/*
 * Open the store at dir with TROVE_STORE_* flags. Without TROVE_STORE_CREATE, a directory
 * that is missing or has no volumes/ is reported as "no store at DIR; create one with ..."
 * and not touched. Returns 0, or 1 after printing one line "trove <cmd>: ...".
 */
int cli_store_open(const char *cmd, const char *dir, unsigned flags, struct trove_store **out);

/* Close a store cli_store_open opened (a NULL s is nothing). Until then, an error line
 * that would say only "remote store error" says what S3 answered, from its handle. */
void cli_store_close(struct trove_store *s);

/* --no-verify: every store this process opens from now on reads objects without checking
 * them against their names (TROVE_STORE_NOVERIFY). For benchmarks only. cli_store_flags:
 * the flags that adds (for the input layer's own opens). */
void cli_store_no_verify(void);
unsigned cli_store_flags(void);
#define NO_VERIFY_HELP                                                                        \
    "  --no-verify        do not check the objects read against their names: for\n"          \
    "                     benchmarks only (a damaged object then goes out as it is)\n"

/* ---- captures (cmd_import.c) ------------------------------------------------------------ */

/* `trove import IN --store DIR`: what cmd_import parsed. */
struct cli_capture_import {
    int to_store;            /* --store, --name, --segment-bytes/-format or --json given (or
                                no -o: the default store) */
    const char *in;
    const char *store;       /* NULL: $TROVE_STORE, else ./trove-data */
    const char *name;
    int name_defaulted;      /* name is IN's base name: no --name was given */
    uint64_t segment_bytes;  /* 0: the default */
    int segment_format;      /* --segment-format; 0: deflate */
    int no_summaries;        /* --no-summaries */
    int json, quiet;
    int edited;              /* --edited: see cli_load_options */
    struct cli_load_options lo; /* how IN is read (--input-format, --strict, -v, ...) */
};

/* Read ci->in (cli_load_flows) and store it as a capture. Returns the exit status. */
int cli_capture_import(const struct cli_capture_import *ci);

/* ---- a remote service (cli_remote.c, over libcurl) -------------------------------------- */

/* A service the command reaches (--url), with its token. Open, make requests, close. */
struct cli_remote {
    const char *cmd;   /* for messages: "trove CMD: ..." */
    char base[2048];   /* --url without its trailing '/': "http://HOST:PORT[/prefix]" */
    char prefix[2048]; /* the part of base after the host: "" or "/prefix" */
    char token[4096];  /* the bearer token; "" for none */
    void *curl;        /* the libcurl handle (its connection kept alive between requests) */
};

/*
 * The token of a request: the first line of token_file (its line end dropped) if it is not
 * NULL, else $TROVE_TOKEN if set and not empty, else none (out ""). A token is printable
 * ASCII without spaces (it goes into a header line); it is never printed. Returns 0, or 1
 * after one error line naming the file or the variable.
 */
int cli_remote_token(const char *cmd, const char *token_file, char *out, size_t cap);

/* Check url (http:// or https://, a host, no query) and read the token (cli_remote_token);
 * the libcurl handle starts with the first request. Returns 0, or 1 after one error line
 * (then nothing to close). */
int cli_remote_open(const char *cmd, const char *url, const char *token_file,
                    struct cli_remote *r);
void cli_remote_close(struct cli_remote *r);

/* One request and what came back. */
struct cli_request {
    const char *path;        /* after the base: "/api/captures" and its query (URL-safe) */
    FILE *body;              /* not NULL: POST body_len bytes read from here, as they go */
    uint64_t body_len;
    const char *body_name;   /* the body's file, for messages */
    FILE *out;               /* a 2xx answer's body is written here as it comes ... */
    const char *out_name;    /* (for messages) */
    struct trove_bytes *mem; /* ... or appended here, at most mem_max bytes */
    size_t mem_max;
    const char *progress;    /* not NULL: a progress line, so named, on a terminal */
    int quiet_status;        /* no error line for a status that is not 2xx (see status) */
    long status;             /* out: the HTTP status, 0 if none came */
    uint64_t bytes;          /* out: the 2xx body's bytes */
};

/*
 * Make request q of service r (`Authorization: Bearer` with its token). A status that is
 * not 2xx is an error whose line names the URL, the service's message and code and the
 * status (and, for 401, what to do about the token). Returns 0 on a whole 2xx answer; 1
 * after one error line (the connection failed or broke, the status, a write to q->out or a
 * read of q->body failed, the answer is over q->mem_max; a partial body may have gone to
 * q->out); 128 + the signal after an interruption (cli_remote_catch_signals).
 */
int cli_remote_do(struct cli_remote *r, struct cli_request *q);

/* From now on SIGINT and SIGTERM only set a flag (a second one acts as by default), which
 * a running request sees within a second: it then fails with 128 + the signal. */
void cli_remote_catch_signals(void);
/* The signal that came since cli_remote_catch_signals, or 0. */
int cli_remote_interrupted(void);

/* What --help says about --url and --token-file. */
#define REMOTE_HELP                                                                           \
    "  --url URL          a running `trove serve` (http://HOST:PORT/) instead of a store\n"   \
    "  --token-file FILE  with --url: the service's token, the file's first line (default:\n" \
    "                     $TROVE_TOKEN if set), sent as Authorization: Bearer\n"

/* Percent-encode s as KEY=S into the query being built in q (cap bytes): after '?' or '&'. */
void cli_query_add(char *q, size_t cap, const char *key, const char *s);
/* Read trace file `path` into a new temporary store (its directory into dir, cap bytes) as
 * capture "file": 0, or 1 after saying why (nothing is left then). cli_file_store_remove
 * deletes it (dir empty: nothing to do). */
int cli_file_store(const char *cmd, const char *path, const struct cli_load_options *in,
                   char *dir, size_t cap);
void cli_file_store_remove(char *dir);
/* The statistics of every name of a service's capture in [from, to) (to 0: to the end), its
 * JSON (GET /api/captures/NAME/stats?limit=0) into doc: 0, or nonzero after saying why. */
int cli_stats_remote_all(const char *cmd, const struct cli_common *c, const char *capture,
                         uint64_t from, uint64_t to, struct trove_bytes *doc);

/* ---- the commands against a remote service (cmd_remote.c) ------------------------------ */

/* What ls, export, import and replay parsed, with --url. */
struct cli_remote_args {
    const char *url, *token_file;
    const char *name;        /* the capture (export, import, replay) */
    int name_defaulted;      /* import: the name is IN's base name */
    const char *in;          /* import: the file to post ("-": stdin) */
    const char *out;         /* export, replay: -o (NULL: replay to stdout) */
    const char *format;      /* export: bundle, parquet, dir.zip, chrome-json or perfetto */
    uint64_t from_ns, to_ns; /* export, replay: [from, to); to UINT64_MAX: to the end */
    int wire;                /* replay: TROVE_WIRE_* */
    const char *speed;       /* replay: max, 1 or K; NULL: the service's default (max) */
    int append;              /* import: add the events to the capture */
    int json, quiet;
};

/* `trove ls --url`, `export --url`, `import --url`, `replay --url`. The exit status. */
int cli_remote_ls(const struct cli_remote_args *a);
int cli_remote_export(const struct cli_remote_args *a);
int cli_remote_import(const struct cli_remote_args *a);
int cli_remote_replay(const struct cli_remote_args *a);

/* ---- a capture in a store (cli_input.c, over trove/input.h) ------------------------------ */

struct trove_stream;
struct trove_stream_options;
struct trove_capture_info;

#define cli_default_store trove_input_default_store

/* Open the store at `store` read-only, check that capture `name` is there (*info), and
 * start a stream over the store's backend. Returns 0, or 1 after printing an error (*s and
 * *st, set as far as they got, are the caller's to free). */
int cli_capture_open(const char *cmd, const char *store, const char *name,
                     const struct trove_stream_options *so, struct trove_store **s,
                     struct trove_capture_info *info, struct trove_stream **st);

/* The profile of capture `name`, its samples and switches cut to [from_ns, to_ns), into a new
 * *out (NULL when the capture has none). Returns 0, or 1 after printing an error. */
int cli_capture_profile(const char *cmd, const char *store, const char *name, uint64_t from_ns,
                        uint64_t to_ns, struct trove_profile **out);

#endif
