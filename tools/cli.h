/*
 * cli.h: what the trove subcommands share — the command table, error reporting, input
 * loading (Chrome JSON or a wire stream, detected from the first bytes), and a progress
 * line on a terminal for long work. Tools use only the public API in include/trove/.
 */
#ifndef TROVE_CLI_H
#define TROVE_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "trove/common.h"
#include "trove/event.h"
#include "trove/import.h"
#include "trove/wire.h"

/* Subcommands: argv[0] is the subcommand name. Return the process exit status. */
int cmd_gen(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* Print "trove <cmd>: <message>" to stderr. Returns 1 (the exit status for errors). */
int cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* True if argv[i] is -h or --help. */
int cli_is_help(const char *arg);

/* Parse a decimal count with an optional k/M/G suffix (powers of 1000). 0 on success. */
int cli_parse_u64(const char *s, uint64_t *out);

enum cli_input_format { CLI_INPUT_AUTO = 0, CLI_INPUT_CHROME_JSON = 1, CLI_INPUT_WIRE = 2 };

/* "chrome-json", "raw"/"wire" (any wire stream) -> enum; -1 if unknown. */
int cli_input_format_parse(const char *s);

/*
 * Where a reader hands a capture, in stream order. Either callback may be NULL. A callback
 * returns 0 to go on, nonzero to stop the read (it has reported its own error).
 */
struct cli_sink {
    /* A run of events. `names` holds every name read so far. */
    int (*events)(void *ctx, const struct trove_event *ev, size_t n, const struct trove_names *names);
    /* Names that arrived: a names frame, or a Chrome trace's whole table before its events. */
    int (*names)(void *ctx, const struct trove_names *added);
    void *ctx;
};

/*
 * Read a capture from path ("-" for stdin) and hand it to sink. AUTO detects a wire stream
 * by its magic and otherwise reads Chrome JSON. A wire stream is streamed frame by frame
 * (memory stays one frame); a Chrome trace is imported whole (its events must be sorted)
 * and then handed out in runs. names_all (may be NULL) receives every name. Prints a
 * one-line error naming the input and returns nonzero on failure.
 */
struct cli_load_options {
    int format;          /* enum cli_input_format */
    int strict;          /* Chrome JSON: unmatched B/E is an error */
    int quiet;           /* no warnings */
};
int cli_read(const char *cmd, const char *path, const struct cli_load_options *opt,
             const struct cli_sink *sink, struct trove_names *names_all);

/* cli_read into memory: every event appended to events (unchanged on failure). */
int cli_load(const char *cmd, const char *path, const struct cli_load_options *opt,
             struct trove_events *events, struct trove_names *names);

/* A progress line on stderr, only when stderr is a terminal and the work is long. */
struct cli_progress {
    const char *what;
    uint64_t total;
    double start;
    double last;
    int active;
};
void cli_progress_begin(struct cli_progress *p, const char *what, uint64_t total);
void cli_progress_update(struct cli_progress *p, uint64_t done);
void cli_progress_end(struct cli_progress *p);

/* Monotonic seconds. */
double cli_now(void);

#endif
