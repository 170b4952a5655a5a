/*
 * cli.c: helpers every trove subcommand shares (see cli.h).
 */
#include "cli.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

void cli_print_event(FILE *o, const struct trove_event *e, const struct trove_names *names, int json)
{
    size_t nl = 0, tl = 0, pl = 0;
    const char *name = trove_names_get(names, TROVE_NAME_EVENT, e->name_id, 0, &nl);
    const char *thread = trove_names_get(names, TROVE_NAME_THREAD, e->pid, e->tid, &tl);
    const char *proc = trove_names_get(names, TROVE_NAME_PROCESS, e->pid, 0, &pl);

    if (!json) {
        fprintf(o, "%llu %llu %u %u %s %u %u ", (unsigned long long)e->start_ns,
                (unsigned long long)e->dur_ns, e->pid, e->tid, trove_kind_name(e->kind), e->depth,
                e->extra);
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

const char *cli_diag_msg(const struct trove_diag *diag, int rc)
{
    return diag && diag->msg[0] ? diag->msg : trove_strerror(rc);
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
        return 0;
    }
    if (opt == CLI_OPT_FORMAT) {
        if (!strcmp(val, "v1") || !strcmp(val, "1"))
            a->recipe_format = TROVE_RECIPE_FORMAT_V1;
        else if (!strcmp(val, "v3") || !strcmp(val, "3"))
            a->recipe_format = TROVE_RECIPE_FORMAT_V3;
        else {
            cli_error(cmd, "%s: '%s' is not v1 or v3", name, val);
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
                (store_options[k].opt == 0 || (u->accepted & store_options[k].opt)))
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
    if (!(flags & TROVE_STORE_CREATE) &&
        (size_t)snprintf(volumes, sizeof volumes, "%s/volumes", dir) < sizeof volumes &&
        stat(volumes, &st) != 0 && errno == ENOENT)
        rc = TROVE_ERR_NOTFOUND;
    else
        rc = trove_store_open(dir, flags, out, &diag);
    if (rc == TROVE_OK)
        return 0;
    *out = NULL;
    if (!(flags & TROVE_STORE_CREATE) && (rc == TROVE_ERR_NOTFOUND || rc == -ENOENT))
        return cli_error(cmd, "no store at %s; create one with `trove volume create` or pass --store",
                         dir);
    if (diag.msg[0]) /* it names the store */
        return cli_error(cmd, "%s", diag.msg);
    return cli_error(cmd, "opening the store at %s: %s", dir, trove_strerror(rc));
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
                       const struct cli_sink *sink, struct trove_names *names_all,
                       struct trove_flows *flows)
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
    rc = trove_chrome_import_all(f, &co, &ev, names, flows, &st, &diag);
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
    if (!opt->quiet && st.skipped) {
        char what[512];
        trove_chrome_skipped_text(&st, what, sizeof what);
        fprintf(stderr, "trove %s: warning: %s: skipped %llu trace events trove does not keep "
                        "(%s; by phase)\n",
                cmd, path, (unsigned long long)st.skipped, what);
    }
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

/* cli_read, with a Chrome trace's flow rows appended to flows (may be NULL). */
static int read_any(const char *cmd, const char *path, const struct cli_load_options *opt,
                    const struct cli_sink *sink, struct trove_names *names_all,
                    struct trove_flows *flows)
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
        status = read_chrome(cmd, path, f, opt, sink, names_all, flows);
    if (f != stdin)
        fclose(f);
    return status;
}

int cli_read(const char *cmd, const char *path, const struct cli_load_options *opt,
             const struct cli_sink *sink, struct trove_names *names_all)
{
    return read_any(cmd, path, opt, sink, names_all, NULL);
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

int cli_load_flows(const char *cmd, const char *path, const struct cli_load_options *opt,
                   struct trove_events *events, struct trove_names *names,
                   struct trove_flows *flows)
{
    struct load_ctx c = {cmd, path, events};
    struct cli_sink sink = {load_events, NULL, &c};
    size_t start = events->len, fstart = flows ? flows->len : 0;
    int status = read_any(cmd, path, opt, &sink, names, flows);
    if (status) {
        events->len = start;
        if (flows)
            flows->len = fstart;
    }
    return status;
}

int cli_load(const char *cmd, const char *path, const struct cli_load_options *opt,
             struct trove_events *events, struct trove_names *names)
{
    return cli_load_flows(cmd, path, opt, events, names, NULL);
}
