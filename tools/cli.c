/*
 * cli.c: helpers every trove subcommand shares (see cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "trove %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

int cli_is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

int cli_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    uint64_t mul = 1;
    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    if (*end == 'k' || *end == 'K')
        mul = 1000, end++;
    else if (*end == 'M')
        mul = 1000000, end++;
    else if (*end == 'G')
        mul = 1000000000, end++;
    if (*end || (v && mul > UINT64_MAX / v))
        return -1;
    *out = v * mul;
    return 0;
}

int cli_input_format_parse(const char *s)
{
    if (!strcmp(s, "auto"))
        return CLI_INPUT_AUTO;
    if (!strcmp(s, "chrome-json") || !strcmp(s, "chrome") || !strcmp(s, "json"))
        return CLI_INPUT_CHROME_JSON;
    if (!strcmp(s, "raw") || !strcmp(s, "wire") || !strcmp(s, "packed") || !strcmp(s, "deflate"))
        return CLI_INPUT_WIRE;
    return -1;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_begin(struct cli_progress *p, const char *what, uint64_t total)
{
    p->what = what;
    p->total = total;
    p->start = cli_now();
    p->last = 0;
    p->active = isatty(STDERR_FILENO);
}

void cli_progress_update(struct cli_progress *p, uint64_t done)
{
    double now;
    if (!p->active)
        return;
    now = cli_now();
    /* Quiet for the first second, then at most ten updates a second. */
    if (now - p->start < 1.0 || now - p->last < 0.1)
        return;
    p->last = now;
    if (p->total)
        fprintf(stderr, "\r%s: %3.0f%% (%llu of %llu)", p->what, 100.0 * (double)done / (double)p->total,
                (unsigned long long)done, (unsigned long long)p->total);
    else
        fprintf(stderr, "\r%s: %llu", p->what, (unsigned long long)done);
}

void cli_progress_end(struct cli_progress *p)
{
    if (p->active && p->last > 0)
        fprintf(stderr, "\r\033[K");
    p->active = 0;
}

/* Stream a wire file frame by frame into sink. */
static int read_wire(const char *cmd, const char *path, FILE *f, const struct cli_sink *sink,
                     struct trove_names *names_all)
{
    struct trove_wire_decoder *dec = NULL;
    struct trove_names *added = NULL;
    struct trove_event *buf = NULL;
    struct trove_bytes frame = {0};
    struct trove_diag diag = {0};
    struct trove_wire_frame fr;
    struct cli_progress prog;
    struct stat st;
    uint64_t offset = 0, frame_at;
    int rc, status = 1;

    /* Progress counts bytes of a regular file; of a pipe, there is no total to show. */
    cli_progress_begin(&prog, "reading",
                       fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0);
    if (trove_wire_decoder_new(&dec) != TROVE_OK ||
        !(buf = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *buf))) {
        cli_error(cmd, "%s: out of memory", path);
        goto out;
    }
    for (;;) {
        frame_at = offset;
        rc = trove_wire_read_frame(f, &frame, &offset, &diag);
        if (rc == 0)
            break;
        if (rc < 0) {
            cli_error(cmd, "%s: at byte %llu: %s", path, (unsigned long long)diag.offset, diag.msg);
            goto out;
        }
        if (frame.ptr[2] == TROVE_WIRE_NAMES) { /* a fresh table for what this frame adds */
            trove_names_free(added);
            added = NULL;
            if (trove_names_new(&added) != TROVE_OK) {
                cli_error(cmd, "%s: out of memory", path);
                goto out;
            }
        }
        rc = trove_wire_decode(dec, frame.ptr, frame.len, buf, TROVE_WIRE_MAX_EVENTS, added, &fr, &diag);
        if (rc != TROVE_OK) {
            cli_error(cmd, "%s: frame at byte %llu: %s (at byte %llu)", path,
                      (unsigned long long)frame_at, diag.msg,
                      (unsigned long long)(frame_at + diag.offset));
            goto out;
        }
        if (fr.format == TROVE_WIRE_NAMES) {
            if (names_all && trove_names_merge(names_all, added) != TROVE_OK) {
                cli_error(cmd, "%s: out of memory", path);
                goto out;
            }
            if (sink->names && sink->names(sink->ctx, added) != 0)
                goto out;
        } else if (sink->events && fr.n_events &&
                   sink->events(sink->ctx, buf, fr.n_events, names_all) != 0) {
            goto out;
        }
        cli_progress_update(&prog, offset);
    }
    status = 0;
out:
    cli_progress_end(&prog);
    trove_names_free(added);
    trove_bytes_free(&frame);
    free(buf);
    trove_wire_decoder_free(dec);
    return status;
}

static void chrome_progress(void *ctx, uint64_t bytes) { cli_progress_update(ctx, bytes); }

/* Import a Chrome trace whole, then hand its names and its events (in runs) to sink. */
static int read_chrome(const char *cmd, const char *path, FILE *f, const struct cli_load_options *opt,
                       const struct cli_sink *sink, struct trove_names *names_all)
{
    struct trove_chrome_options co = {0};
    struct trove_chrome_stats st;
    struct cli_progress prog;
    struct stat fst;
    struct trove_diag diag = {0};
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    int rc, status = 1;

    co.strict = opt->strict;
    co.progress = chrome_progress;
    co.progress_ctx = &prog;
    cli_progress_begin(&prog, "importing",
                       fstat(fileno(f), &fst) == 0 && S_ISREG(fst.st_mode) ? (uint64_t)fst.st_size : 0);
    if (trove_names_new(&names) != TROVE_OK) {
        cli_error(cmd, "%s: out of memory", path);
        goto out;
    }
    rc = trove_chrome_import(f, &co, &ev, names, &st, &diag);
    cli_progress_end(&prog);
    if (rc != TROVE_OK) {
        if (rc == TROVE_ERR_UNMATCHED)
            cli_error(cmd, "%s: at byte %llu: %s (without --strict, unmatched events are "
                           "dropped with a warning)",
                      path, (unsigned long long)diag.offset, diag.msg);
        else
            cli_error(cmd, "%s: at byte %llu: %s", path, (unsigned long long)diag.offset,
                      diag.msg[0] ? diag.msg : trove_strerror(rc));
        goto out;
    }
    if (!opt->quiet && (st.unmatched_begin || st.unmatched_end))
        fprintf(stderr,
                "trove %s: warning: %s: dropped %llu B events never ended and %llu E events "
                "never begun (--strict makes this an error)\n",
                cmd, path, (unsigned long long)st.unmatched_begin,
                (unsigned long long)st.unmatched_end);
    if (names_all && trove_names_merge(names_all, names) != TROVE_OK) {
        cli_error(cmd, "%s: out of memory", path);
        goto out;
    }
    if (sink->names && sink->names(sink->ctx, names) != 0)
        goto out;
    for (size_t i = 0; sink->events && i < ev.len; i += TROVE_WIRE_MAX_EVENTS) {
        size_t n = ev.len - i < TROVE_WIRE_MAX_EVENTS ? ev.len - i : TROVE_WIRE_MAX_EVENTS;
        if (sink->events(sink->ctx, ev.ev + i, n, names_all ? names_all : names) != 0)
            goto out;
    }
    status = 0;
out:
    cli_progress_end(&prog);
    trove_events_free(&ev);
    trove_names_free(names);
    return status;
}

int cli_read(const char *cmd, const char *path, const struct cli_load_options *opt,
             const struct cli_sink *sink, struct trove_names *names_all)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    int format = opt->format, status;

    if (!f)
        return cli_error(cmd, "cannot open %s: %s", path, strerror(errno));
    if (format == CLI_INPUT_AUTO) {
        /* One byte decides: a wire stream starts with 'T' (its magic is "TV"); a JSON trace
         * starts with '[', '{', white space or a byte order mark, never with 'T'. */
        int c = getc(f);
        format = c == 'T' ? CLI_INPUT_WIRE : CLI_INPUT_CHROME_JSON;
        if (c != EOF)
            ungetc(c, f);
    }
    if (format == CLI_INPUT_WIRE)
        status = read_wire(cmd, path, f, sink, names_all);
    else
        status = read_chrome(cmd, path, f, opt, sink, names_all);
    if (f != stdin)
        fclose(f);
    return status;
}

struct load_ctx {
    const char *cmd, *path;
    struct trove_events *events;
};

static int load_events(void *ctx, const struct trove_event *ev, size_t n,
                       const struct trove_names *names)
{
    struct load_ctx *c = ctx;
    (void)names;
    for (size_t i = 0; i < n; i++)
        if (trove_events_push(c->events, &ev[i]) != TROVE_OK)
            return cli_error(c->cmd, "%s: out of memory", c->path);
    return 0;
}

int cli_load(const char *cmd, const char *path, const struct cli_load_options *opt,
             struct trove_events *events, struct trove_names *names)
{
    struct load_ctx c = {cmd, path, events};
    struct cli_sink sink = {load_events, NULL, &c};
    size_t start = events->len;
    int status = cli_read(cmd, path, opt, &sink, names);
    if (status)
        events->len = start;
    return status;
}
