/*
 * cli.c: helpers every trove subcommand shares (see cli.h).
 */
#define _GNU_SOURCE /* sigaction */

#include "cli.h"
#include "trove/serve.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <sys/syscall.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

/* The stores this command has open (cli_store_open, cli_store_close): an error that says
 * only "remote store error" is told what S3 answered, which each S3 backend keeps on its
 * own handle (trove_backend_s3_last_error). */
#define OPEN_STORES 4
static struct trove_store *open_stores[OPEN_STORES];

static int open_stores_s3_error(char *buf, size_t cap)
{
    for (int i = OPEN_STORES - 1; i >= 0; i--)
        if (open_stores[i] &&
            trove_backend_s3_last_error(trove_store_backend(open_stores[i]), buf, cap) ==
                TROVE_OK &&
            buf[0])
            return TROVE_OK;
    return TROVE_ERR_NOTFOUND;
}

void cli_store_close(struct trove_store *s)
{
    for (int i = 0; s && i < OPEN_STORES; i++)
        if (open_stores[i] == s)
            open_stores[i] = NULL;
    trove_store_close(s);
}

int cli_error(const char *cmd, const char *fmt, ...)
{
    char msg[4096], s3[1024];
    const char *remote = trove_strerror(TROVE_ERR_REMOTE), *at;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* "remote store error" says nothing: say what S3 answered instead. */
    if ((at = strstr(msg, remote)) && open_stores_s3_error(s3, sizeof s3) == TROVE_OK) {
        char tail[4096];
        snprintf(tail, sizeof tail, "%s", at + strlen(remote));
        snprintf(msg + (at - msg), sizeof msg - (size_t)(at - msg), "%s%s", s3, tail);
    }
    fprintf(stderr, "trove %s: %s\n", cmd, msg);
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

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Atomic: the service runs the CLI's export on threads of its own, each saying -q. */
static atomic_int progress_off;

void cli_progress_quiet(void) { atomic_store(&progress_off, 1); }

void cli_progress_begin(struct cli_progress *p, const char *what, uint64_t total)
{
    p->what = what;
    p->total = total;
    p->start = cli_now();
    p->last = 0;
    p->active = !atomic_load(&progress_off) && isatty(STDERR_FILENO);
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

void cli_json_string(FILE *o, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    putc('"', o);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            putc('\\', o);
            putc(c, o);
        } else if (c < 0x20) {
            fputs("\\u00", o);
            putc(hex[c >> 4], o);
            putc(hex[c & 15], o);
        } else {
            putc(c, o);
        }
    }
    putc('"', o);
}

void cli_warn(const char *cmd, int quiet, struct trove_warnings *w, uint64_t count,
              const char *fmt, ...)
{
    char msg[sizeof w->w[0].message];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!quiet)
        fprintf(stderr, "trove %s: warning: %s\n", cmd, msg);
    if (!w)
        return;
    if (w->n < TROVE_WARNINGS_MAX) {
        w->w[w->n].count = count;
        memcpy(w->w[w->n].message, msg, sizeof msg);
        w->n++;
    } else {
        w->more++;
        w->more_count += count;
    }
}

void cli_json_warnings(FILE *o, const struct trove_warnings *w)
{
    fputs("\"warnings\":[", o);
    for (size_t i = 0; w && i < w->n; i++) {
        fprintf(o, "%s{\"count\":%llu,\"message\":", i ? "," : "",
                (unsigned long long)w->w[i].count);
        cli_json_string(o, w->w[i].message, strlen(w->w[i].message));
        putc('}', o);
    }
    if (w && w->more)
        fprintf(o, ",{\"count\":%llu,\"message\":\"%zu more warnings\"}",
                (unsigned long long)w->more_count, w->more);
    putc(']', o);
}

void cli_print_event(FILE *o, const struct trove_event *e, const struct trove_names *names, int json)
{
    size_t nl = 0, tl = 0, pl = 0;
    const char *name = trove_names_get(names, TROVE_NAME_EVENT, e->name_id, 0, &nl);
    const char *thread = trove_names_get(names, TROVE_NAME_THREAD, e->pid, e->tid, &tl);
    const char *proc = trove_names_get(names, TROVE_NAME_PROCESS, e->pid, 0, &pl);

    if (!json) {
        /* A counter's dur_ns is its value's bits: the text shows the value there. */
        if (e->kind == TROVE_KIND_COUNTER)
            fprintf(o, "%llu %.17g %u %u %s %u %u ", (unsigned long long)e->start_ns,
                    trove_counter_value(e), e->pid, e->tid, trove_kind_name(e->kind), e->depth,
                    e->extra);
        else
            fprintf(o, "%llu %llu %u %u %s %u %u ", (unsigned long long)e->start_ns,
                    (unsigned long long)e->dur_ns, e->pid, e->tid, trove_kind_name(e->kind),
                    e->depth, e->extra);
        if (name)
            fwrite(name, 1, nl, o);
        else
            fprintf(o, "#%u", e->name_id);
        if (thread) {
            fputs(" [", o);
            fwrite(thread, 1, tl, o);
            putc(']', o);
        }
        putc('\n', o);
        return;
    }
    fprintf(o, "{\"start_ns\":%llu,\"dur_ns\":%llu,\"pid\":%u,\"tid\":%u,\"kind\":\"%s\",\"depth\":%u,"
               "\"extra\":%u,\"name_id\":%u",
            (unsigned long long)e->start_ns, (unsigned long long)e->dur_ns, e->pid, e->tid,
            trove_kind_name(e->kind), e->depth, e->extra, e->name_id);
    if (e->kind == TROVE_KIND_COUNTER) {
        double v = trove_counter_value(e);
        if (v == v && v - v == 0) /* finite: JSON has no NaN or infinity */
            fprintf(o, ",\"value\":%.17g", v);
        else
            fputs(",\"value\":null", o);
    }
    if (name) {
        fputs(",\"name\":", o);
        cli_json_string(o, name, nl);
    }
    if (thread) {
        fputs(",\"thread\":", o);
        cli_json_string(o, thread, tl);
    }
    if (proc) {
        fputs(",\"process\":", o);
        cli_json_string(o, proc, pl);
    }
    fputs("}\n", o);
}

void cli_print_capture_line(FILE *o, int width, const struct cli_capture_line *l)
{
    char when[64] = "never", segs[32] = "?";
    uint64_t len = l->end_ns > l->first_ns ? l->end_ns - l->first_ns : 0;

    if (l->have_used) {
        time_t t = (time_t)(l->last_used_ns / 1000000000u);
        struct tm tm;
        if (gmtime_r(&t, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    }
    if (l->have_segments)
        snprintf(segs, sizeof segs, "%llu", (unsigned long long)l->segments);
    fprintf(o, "%-*s ", width, l->name);
    if (l->events > 0 || l->samples == 0)
        fprintf(o, "%llu events  %s %s%ssegments  ", (unsigned long long)l->events, segs,
                l->format ? l->format : "", l->format ? " " : "");
    if (l->samples > 0)
        fprintf(o, "%llu samples  ", (unsigned long long)l->samples);
    /* Times in seconds for a reader (--json keeps the nanoseconds). */
    fprintf(o, "%.3f s long, from %.6f s  %llu bytes stored  last used %s%s", (double)len / 1e9,
            (double)l->first_ns / 1e9, (unsigned long long)l->stored_bytes, when,
            l->live ? "  live" : "");
    if (l->damaged > 0)
        fprintf(o, "  DAMAGED: %llu slot%s name%s damaged objects", (unsigned long long)l->damaged,
                l->damaged == 1 ? "" : "s", l->damaged == 1 ? "s" : "");
    fputc('\n', o);
}

int cli_parse_size(const char *s, uint64_t *out)
{
    static const char units[] = "KMGTP";
    const char *unit;
    char *end;
    unsigned long long v;
    unsigned shift = 0;

    if (!s || *s < '0' || *s > '9') /* strtoull would take a sign or leading space */
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    if (*end) {
        if (!(unit = strchr(units, toupper((unsigned char)*end))))
            return -1;
        shift = 10 * (unsigned)(unit - units + 1);
        end++;
        if (*end && strcasecmp(end, "iB") != 0)
            return -1;
    }
    if (v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

int cli_parse_segment_format(const char *cmd, const char *s, int *out)
{
    int f = trove_wire_format_parse(s);
    if (f != TROVE_WIRE_DEFLATE && f != TROVE_WIRE_COLUMNAR && f != TROVE_WIRE_COLUMNAR_DEFLATE &&
        f != TROVE_WIRE_MODEL) {
        cli_error(cmd, "--segment-format: '%s' is not deflate, columnar, columnar_deflate or model",
                  s);
        return -1;
    }
    *out = f;
    return 0;
}

const char *cli_diag_msg(const struct trove_diag *diag, int rc)
{
    return diag && diag->msg[0] ? diag->msg : trove_strerror(rc);
}

const char *cli_store_why(struct trove_store *s, int rc)
{
    static char buf[1024];
    if (rc == TROVE_ERR_REMOTE && s &&
        trove_backend_s3_last_error(trove_store_backend(s), buf, sizeof buf) == TROVE_OK && buf[0])
        return buf;
    return trove_strerror(rc);
}

/* The options of the store commands: what each sets, and whether it takes a value. */
static const struct {
    const char *name;
    unsigned opt; /* 0: --store, which every store command takes */
    int takes_value;
} store_options[] = {
    {"--store", 0, 1},
    {"--size", CLI_OPT_SIZE, 1},
    {"--block-size", CLI_OPT_BLOCK_SIZE, 1},
    {"--offset", CLI_OPT_OFFSET, 1},
    {"--length", CLI_OPT_LENGTH, 1},
    {"--json", CLI_OPT_JSON, 0},
    {"--verbose", CLI_OPT_VERBOSE, 0},
    {"-v", CLI_OPT_VERBOSE, 0},
    {"--deep", CLI_OPT_DEEP, 0},
    {"--repair", CLI_OPT_REPAIR, 0},
    {"--recipe-format", CLI_OPT_FORMAT, 1},
    {"--no-verify", CLI_OPT_NO_VERIFY, 0},
    {"--quiet", CLI_OPT_QUIET, 0},
    {"-q", CLI_OPT_QUIET, 0},
    {"--url", CLI_OPT_URL, 1},
    {"--token-file", CLI_OPT_TOKEN_FILE, 1},
    {"--replace", CLI_OPT_REPLACE, 0},
    {"--from", CLI_OPT_FROM, 1},
};

/* Set option opt of a from its value text. 0, or 2 after a usage error. */
static int store_option_value(const char *cmd, const char *name, unsigned opt, const char *val,
                              struct cli_store_args *a)
{
    uint64_t v;
    if (opt == 0) {
        if (!*val)
            goto bad;
        a->store = val;
        a->store_given = 1;
        return 0;
    }
    if (opt == CLI_OPT_URL || opt == CLI_OPT_TOKEN_FILE || opt == CLI_OPT_FROM) {
        if (!*val) {
            cli_error(cmd, "%s needs a %s", name,
                      opt == CLI_OPT_URL    ? "URL"
                      : opt == CLI_OPT_FROM ? "store (a directory or s3://BUCKET[/PREFIX])"
                                            : "file");
            return 2;
        }
        *(opt == CLI_OPT_URL ? &a->url : opt == CLI_OPT_FROM ? &a->from : &a->token_file) = val;
        return 0;
    }
    if (opt == CLI_OPT_FORMAT) {
        if (!strcmp(val, "v1") || !strcmp(val, "1"))
            a->recipe_format = TROVE_RECIPE_FORMAT_V1;
        else if (!strcmp(val, "v4") || !strcmp(val, "4") || !strcmp(val, "v3") ||
                 !strcmp(val, "3")) /* v3 is read, and written as v4 */
            a->recipe_format = TROVE_RECIPE_FORMAT_V4;
        else {
            cli_error(cmd, "%s: '%s' is not v1 or v4 (v3 is accepted and means v4)", name, val);
            return 2;
        }
        return 0;
    }
    if (cli_parse_size(val, &v) != 0)
        goto bad;
    if (opt == CLI_OPT_BLOCK_SIZE && (v < 4096 || v > (1u << 30) || (v & (v - 1)))) {
        cli_error(cmd, "%s: '%s' is not a power of two from 4K to 1G", name, val);
        return 2;
    }
    if (opt == CLI_OPT_SIZE)
        a->size = v;
    else if (opt == CLI_OPT_BLOCK_SIZE)
        a->block_size = v;
    else if (opt == CLI_OPT_OFFSET)
        a->offset = v;
    else
        a->length = v;
    return 0;
bad:
    if (opt == 0)
        cli_error(cmd, "%s needs a directory", name);
    else
        cli_error(cmd, "%s: '%s' is not a byte count (digits, optionally with K, M, G, T or P: "
                       "powers of 1024, up to 16 EiB)",
                  name, val);
    return 2;
}

int cli_store_args_parse(const char *cmd, int argc, char **argv, const struct cli_store_usage *u,
                         struct cli_store_args *out)
{
    const char *env;
    int only_args = 0;

    assert(u->max_args <= 3);
    memset(out, 0, sizeof *out);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL, *eq;
        size_t k, nlen;

        if (only_args || a[0] != '-' || !a[1]) {
            if (out->nargs >= u->max_args) {
                cli_error(cmd, "unexpected argument '%s'; see `trove %s --help`", a, cmd);
                return 2;
            }
            out->arg[out->nargs++] = a;
            continue;
        }
        if (cli_is_help(a)) {
            fputs(u->usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--")) {
            only_args = 1;
            continue;
        }
        eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        nlen = eq ? (size_t)(eq - a) : strlen(a);
        for (k = 0; k < sizeof store_options / sizeof store_options[0]; k++)
            if (strlen(store_options[k].name) == nlen && !strncmp(a, store_options[k].name, nlen) &&
                (store_options[k].opt == 0 || (u->accepted & store_options[k].opt) ||
                 store_options[k].opt == CLI_OPT_QUIET || store_options[k].opt == CLI_OPT_VERBOSE))
                break;
        if (k == sizeof store_options / sizeof store_options[0]) {
            cli_error(cmd, "unknown option '%.*s'; see `trove %s --help`", (int)nlen, a, cmd);
            return 2;
        }
        if (!store_options[k].takes_value) {
            if (eq) {
                cli_error(cmd, "%.*s takes no value", (int)nlen, a);
                return 2;
            }
            out->given |= store_options[k].opt;
            if (store_options[k].opt == CLI_OPT_QUIET)
                cli_progress_quiet();
            continue;
        }
        if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            cli_error(cmd, "%s needs a value; see `trove %s --help`", a, cmd);
            return 2;
        }
        if (store_option_value(cmd, store_options[k].name, store_options[k].opt, val, out) != 0)
            return 2;
        out->given |= store_options[k].opt;
    }
    for (size_t k = 0; k < sizeof store_options / sizeof store_options[0]; k++)
        if ((u->required & store_options[k].opt) && !(out->given & store_options[k].opt)) {
            cli_error(cmd, "%s is required; see `trove %s --help`", store_options[k].name, cmd);
            return 2;
        }
    if (out->nargs < u->min_args) {
        fputs(u->usage, stderr);
        return 2;
    }
    if (!out->store)
        out->store = (env = getenv("TROVE_STORE")) && *env ? env : "./trove-data";
    /* The recipe format of new volumes: --recipe-format, else $TROVE_RECIPE_FORMAT. */
    if ((u->accepted & CLI_OPT_FORMAT) && !out->recipe_format &&
        (env = getenv("TROVE_RECIPE_FORMAT")) && *env &&
        store_option_value(cmd, "$TROVE_RECIPE_FORMAT", CLI_OPT_FORMAT, env, out) != 0)
        return 2;
    return -1;
}

static int store_no_verify;

void cli_store_no_verify(void) { store_no_verify = 1; }

unsigned cli_store_flags(void) { return store_no_verify ? TROVE_STORE_NOVERIFY : 0; }

int cli_store_open(const char *cmd, const char *dir, unsigned flags, struct trove_store **out)
{
    struct trove_diag diag = {0};
    struct stat st;
    char volumes[4096];
    int rc;

    *out = NULL;
    if (store_no_verify)
        flags |= TROVE_STORE_NOVERIFY;
    /* Opening makes the store's subdirectories; without CREATE, a directory that has no
     * volumes/ is not a store, and is left as it is. */
    if (!(flags & TROVE_STORE_CREATE) && strncmp(dir, "s3://", 5) != 0 &&
        (size_t)snprintf(volumes, sizeof volumes, "%s/volumes", dir) < sizeof volumes &&
        stat(volumes, &st) != 0 && errno == ENOENT)
        rc = TROVE_ERR_NOTFOUND;
    else
        rc = trove_store_open(dir, flags | TROVE_STORE_NOWAIT, out, &diag);
    /* (On S3 the holder of the lease is named in the message; there is no lock to wait on.) */
    if (rc == TROVE_ERR_BUSY && !(flags & TROVE_STORE_NOWAIT) && strncmp(dir, "s3://", 5) != 0) {
        /* Another process writes the store (a `trove serve`, an import): say so, then wait. */
        if (isatty(2))
            fprintf(stderr, "trove %s: waiting for %s: another process has it open for "
                            "writing (a running `trove serve`?)\n", cmd, dir);
        memset(&diag, 0, sizeof diag);
        rc = trove_store_open(dir, flags, out, &diag);
    }
    if (rc == TROVE_OK) {
        for (int i = 0; i < OPEN_STORES; i++)
            if (!open_stores[i]) {
                open_stores[i] = *out;
                break;
            }
        return 0;
    }
    *out = NULL;
    if (!(flags & TROVE_STORE_CREATE) && (rc == TROVE_ERR_NOTFOUND || rc == -ENOENT))
        return cli_error(cmd, "no store at %s; create one with `trove volume create` or pass --store",
                         dir);
    if (diag.msg[0]) /* it names the store */
        return cli_error(cmd, "%s", diag.msg);
    return cli_error(cmd, "opening the store at %s: %s", dir, trove_strerror(rc));
}

/* ---- the live commands' signals (serve, record, gen --live, watch) --------------------------------------------------------------------------- */

volatile sig_atomic_t cli_interrupted;

static void on_signal(int sig)
{
    static const char now[] = "trove: a second signal: exiting at once, without finishing the "
                              "stop\n";
    (void)sig;
    if (cli_interrupted) { /* the stop is under way and the user will not wait for it */
        if (write(STDERR_FILENO, now, sizeof now - 1) < 0) {
            ; /* nowhere to say it */
        }
        /* exit_group directly: the threads are left as they are, on purpose (a sanitizer's
         * _exit would report each as leaked) */
        syscall(SYS_exit_group, 1);
    }
    cli_interrupted = 1;
    trove_serve_stop();
}

void cli_live_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

void cli_sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !cli_interrupted)
        ;
}

int cli_parse_wire_auto(const char *cmd, const char *v, int *out)
{
    if (strcmp(v, "auto") == 0) {
        *out = 0;
        return 0;
    }
    *out = trove_wire_format_parse(v);
    if (*out < TROVE_WIRE_RAW || *out > TROVE_WIRE_DEFLATE)
        return cli_error(cmd, "--wire: '%s' is not auto, raw, packed or deflate", v) + 1;
    return 0;
}

int cli_parse_u32(const char *cmd, const char *opt, const char *v, uint32_t lo, uint32_t hi,
                  uint32_t *out)
{
    uint64_t x;
    if (cli_parse_u64(v, &x) || x < lo || x > hi)
        return cli_error(cmd, "%s: '%s' is not a number from %" PRIu32 " to %" PRIu32, opt, v, lo,
                         hi) + 1;
    *out = (uint32_t)x;
    return 0;
}
