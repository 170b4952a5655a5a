/*
 * cli.c: helpers every trove subcommand shares (see cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

static int load_wire(const char *cmd, const char *path, FILE *f, struct trove_events *events,
                     struct trove_names *names)
{
    struct trove_wire_decoder *dec = NULL;
    struct trove_event *buf = NULL;
    struct trove_bytes frame = {0};
    struct trove_diag diag = {0};
    struct trove_wire_frame fr;
    struct cli_progress prog;
    uint64_t offset = 0, frame_at;
    size_t start_len = events->len;
    int rc, status = 1;

    cli_progress_begin(&prog, "reading", 0);
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
        rc = trove_wire_decode(dec, frame.ptr, frame.len, buf, TROVE_WIRE_MAX_EVENTS, names, &fr, &diag);
        if (rc != TROVE_OK) {
            cli_error(cmd, "%s: frame at byte %llu: %s", path, (unsigned long long)frame_at,
                      diag.msg);
            goto out;
        }
        for (size_t i = 0; i < fr.n_events; i++)
            if (trove_events_push(events, &buf[i]) != TROVE_OK) {
                cli_error(cmd, "%s: out of memory", path);
                goto out;
            }
        cli_progress_update(&prog, events->len - start_len);
    }
    status = 0;
out:
    cli_progress_end(&prog);
    if (status)
        events->len = start_len;
    trove_bytes_free(&frame);
    free(buf);
    trove_wire_decoder_free(dec);
    return status;
}

static int load_chrome(const char *cmd, const char *path, FILE *f, const struct cli_load_options *opt,
                       struct trove_events *events, struct trove_names *names)
{
    struct trove_chrome_options co = {0};
    struct trove_chrome_stats st;
    struct trove_diag diag = {0};
    int rc;

    co.strict = opt->strict;
    rc = trove_chrome_import(f, &co, events, names, &st, &diag);
    if (rc != TROVE_OK) {
        if (rc == TROVE_ERR_UNMATCHED)
            return cli_error(cmd, "%s: at byte %llu: %s (without --strict, unmatched events are "
                             "dropped with a warning)",
                             path, (unsigned long long)diag.offset, diag.msg);
        return cli_error(cmd, "%s: at byte %llu: %s", path, (unsigned long long)diag.offset,
                         diag.msg[0] ? diag.msg : trove_strerror(rc));
    }
    if (!opt->quiet && (st.unmatched_begin || st.unmatched_end))
        fprintf(stderr,
                "trove %s: warning: %s: dropped %llu B events never ended and %llu E events "
                "never begun (--strict makes this an error)\n",
                cmd, path, (unsigned long long)st.unmatched_begin,
                (unsigned long long)st.unmatched_end);
    return 0;
}

int cli_load(const char *cmd, const char *path, const struct cli_load_options *opt,
             struct trove_events *events, struct trove_names *names)
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
        status = load_wire(cmd, path, f, events, names);
    else if (format == CLI_INPUT_CHROME_JSON)
        status = load_chrome(cmd, path, f, opt, events, names);
    else
        status = cli_error(cmd, "%s: cannot detect the input format; pass --input-format", path);
    if (f != stdin)
        fclose(f);
    return status;
}
