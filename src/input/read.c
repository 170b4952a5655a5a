/*
 * cli_input.c: the CLI's one input layer (cli.h: cli_read, cli_load). Every command that
 * reads events takes any of these, recognized from its bytes (or forced with
 * --input-format):
 *
 *   Chrome JSON     a trace in the Trace Event Format: '[' or '{' after white space or a BOM
 *   Perfetto        a protobuf trace (docs/formats/perfetto.md): Trace.packet first
 *   wire stream     trove's own frames (docs/formats/wire.md): "TV"
 *   bundle          a zip written by `trove export` (docs/formats/bundle.md): "PK\3\4"
 *   Parquet         an events table alone: "PAR1"
 *   dataset dir     a directory holding a bundle's files
 *   capture         a capture in a store: `store:NAME` (the store: --store, $TROVE_STORE,
 *                   ./trove-data), or NAME with --input-format capture
 *   compressed      any of the file kinds in gzip (1f 8b) or zstd (28 b5 2f fd), unpacked as
 *                   it is read
 *
 * and "-" for stdin. A wire stream is handed to the sink frame by frame (memory stays one
 * frame); the other kinds are read whole and handed out in runs. Stdin, a pipe or a
 * compressed file cannot be read twice, so its first bytes are kept and replayed in front
 * of the rest (a FILE over a cookie); a bundle or Parquet file that arrives that way is read
 * into memory. An input that cannot be read is reported once, naming the file, the kind it
 * was taken for, the byte offset where that is known, and what to try.
 */
#define _GNU_SOURCE /* fopencookie */

#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "trove/tables.h"

#define HEAD 256                     /* bytes looked at to tell the kinds apart (Perfetto's
                                        sniff wants 64 or more) */
#define ZBUF (256u << 10)            /* compressed bytes read at a time */
#define MAX_SLURP (8ull << 30)       /* a bundle or Parquet file read into memory */
#define STORE_PREFIX "store:"

static const char *const kind_names[] = {
    [CLI_INPUT_AUTO] = "auto",      [CLI_INPUT_CHROME_JSON] = "a Chrome JSON trace",
    [CLI_INPUT_WIRE] = "a wire stream", [CLI_INPUT_BUNDLE] = "a bundle (zip)",
    [CLI_INPUT_PARQUET] = "a Parquet events file", [CLI_INPUT_DIR] = "a dataset directory",
    [CLI_INPUT_CAPTURE] = "a capture in a store", [CLI_INPUT_PERFETTO] = "a Perfetto trace",
};

const char *cli_input_kind_name(int kind)
{
    return kind >= 0 && kind < (int)(sizeof kind_names / sizeof kind_names[0]) && kind_names[kind]
               ? kind_names[kind]
               : "an input";
}

int cli_input_format_parse(const char *s)
{
    static const struct {
        const char *name;
        int kind;
    } forms[] = {
        {"auto", CLI_INPUT_AUTO},       {"chrome-json", CLI_INPUT_CHROME_JSON},
        {"chrome", CLI_INPUT_CHROME_JSON}, {"json", CLI_INPUT_CHROME_JSON},
        {"wire", CLI_INPUT_WIRE},       {"raw", CLI_INPUT_WIRE},
        {"packed", CLI_INPUT_WIRE},     {"deflate", CLI_INPUT_WIRE},
        {"bundle", CLI_INPUT_BUNDLE},   {"zip", CLI_INPUT_BUNDLE},
        {"parquet", CLI_INPUT_PARQUET}, {"dir", CLI_INPUT_DIR},
        {"capture", CLI_INPUT_CAPTURE}, {"store", CLI_INPUT_CAPTURE},
        {"perfetto", CLI_INPUT_PERFETTO},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        if (!strcmp(s, forms[i].name))
            return forms[i].kind;
    return -1;
}

/* ---- FILEs over cookies: the kept first bytes, then gzip or zstd ------------------------ */

/* The first bytes, read already to tell the kind, then the rest of `under`. */
struct replay_cookie {
    uint8_t head[HEAD];
    size_t n, at;
    FILE *under;
};

static ssize_t replay_read(void *c_, char *buf, size_t size)
{
    struct replay_cookie *c = c_;
    size_t got = 0;

    if (c->at < c->n) {
        got = c->n - c->at < size ? c->n - c->at : size;
        memcpy(buf, c->head + c->at, got);
        c->at += got;
        return (ssize_t)got;
    }
    got = fread(buf, 1, size, c->under);
    return got == 0 && ferror(c->under) ? -1 : (ssize_t)got;
}

static int replay_close(void *c_)
{
    struct replay_cookie *c = c_;
    int rc = c->under == stdin ? 0 : fclose(c->under);
    free(c);
    return rc;
}

struct zcookie {
    FILE *under;
    uint8_t *in;
    size_t in_len, in_at;
    int gzip; /* else zstd */
    int done, failed;
    z_stream zs;
    ZSTD_DStream *zd;
};

/* Refill the compressed buffer; 0 at the end of the file. */
static size_t zfill(struct zcookie *c)
{
    if (c->in_at < c->in_len)
        return c->in_len - c->in_at;
    c->in_at = 0;
    c->in_len = fread(c->in, 1, ZBUF, c->under);
    return c->in_len;
}

static ssize_t z_read(void *c_, char *buf, size_t size)
{
    struct zcookie *c = c_;
    size_t out = 0;

    while (out == 0 && !c->done) {
        if (zfill(c) == 0) {
            if (ferror(c->under))
                return -1;
            c->done = 1; /* a stream cut short is the reader's truncated input */
            break;
        }
        if (c->gzip) {
            int zr;
            c->zs.next_in = c->in + c->in_at;
            c->zs.avail_in = (uInt)(c->in_len - c->in_at);
            c->zs.next_out = (Bytef *)buf;
            c->zs.avail_out = (uInt)(size > (1u << 30) ? (1u << 30) : size);
            zr = inflate(&c->zs, Z_NO_FLUSH);
            c->in_at = c->in_len - c->zs.avail_in;
            out = (size_t)((char *)c->zs.next_out - buf);
            if (zr == Z_STREAM_END) {
                if (inflateReset(&c->zs) != Z_OK) /* another member may follow (gzip -c a b) */
                    return -1;
            } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
                c->failed = 1;
                errno = EILSEQ;
                return -1;
            }
        } else {
            ZSTD_inBuffer ib = {c->in, c->in_len, c->in_at};
            ZSTD_outBuffer ob = {buf, size, 0};
            size_t zr = ZSTD_decompressStream(c->zd, &ob, &ib);
            c->in_at = ib.pos;
            out = ob.pos;
            if (ZSTD_isError(zr)) {
                c->failed = 1;
                errno = EILSEQ;
                return -1;
            }
        }
    }
    return (ssize_t)out;
}

static int z_close(void *c_)
{
    struct zcookie *c = c_;
    int rc = c->under == stdin ? 0 : fclose(c->under);
    if (c->gzip)
        inflateEnd(&c->zs);
    else
        ZSTD_freeDStream(c->zd);
    free(c->in);
    free(c);
    return rc;
}

/* ---- opening: the kind from the first bytes -------------------------------------------- */

enum { Z_NONE, Z_GZIP, Z_ZSTD };

struct input {
    const char *path;
    FILE *f;       /* reads the content from its first byte */
    int kind;      /* CLI_INPUT_* */
    int z;         /* Z_*: how it was compressed */
    int plain;     /* f is the regular file at path itself, unread: a path-based reader may
                      open it again (libzip, for a bundle) */
    char head[64]; /* its first bytes, as hex, for a message */
};

static int sniff(const uint8_t *h, size_t n)
{
    size_t i = 0;
    if (n >= 2 && h[0] == 0x1f && h[1] == 0x8b)
        return -Z_GZIP;
    if (n >= 4 && !memcmp(h, "\x28\xb5\x2f\xfd", 4))
        return -Z_ZSTD;
    if (n >= 4 && !memcmp(h, "PK\003\004", 4))
        return CLI_INPUT_BUNDLE;
    if (n >= 4 && !memcmp(h, "PAR1", 4))
        return CLI_INPUT_PARQUET;
    if (n >= 2 && h[0] == 'T' && h[1] == 'V')
        return CLI_INPUT_WIRE;
    if (cli_trace_sniff(h, n)) /* before the white space rule: it starts with 0x0a */
        return CLI_INPUT_PERFETTO;
    if (n >= 3 && !memcmp(h, "\xef\xbb\xbf", 3))
        i = 3;
    while (i < n && (h[i] == ' ' || h[i] == '\t' || h[i] == '\n' || h[i] == '\r'))
        i++;
    if (i == n || h[i] == '[' || h[i] == '{')
        return CLI_INPUT_CHROME_JSON; /* all white space so far: the JSON reader decides */
    return CLI_INPUT_AUTO;            /* none of them */
}

/* Read up to HEAD bytes of in->f, then make in->f read them again. */
static int peek(const char *cmd, struct input *in, uint8_t *h, size_t *n)
{
    struct replay_cookie *c;
    FILE *f;

    *n = fread(h, 1, HEAD, in->f);
    if (*n < HEAD && ferror(in->f))
        return cli_error(cmd, "%s: %s", in->path, strerror(errno));
    in->head[0] = 0;
    for (size_t i = 0, at = 0; i < *n && i < 12; i++)
        at += (size_t)snprintf(in->head + at, sizeof in->head - at, "%s%02x", i ? " " : "",
                               h[i]);
    if (in->plain && fseek(in->f, 0, SEEK_SET) == 0)
        return 0;
    in->plain = 0;
    if (!(c = calloc(1, sizeof *c)))
        return cli_error(cmd, "%s: out of memory", in->path);
    memcpy(c->head, h, *n);
    c->n = *n;
    c->under = in->f;
    if (!(f = fopencookie(c, "rb", (cookie_io_functions_t){replay_read, NULL, NULL,
                                                            replay_close}))) {
        free(c);
        return cli_error(cmd, "%s: %s", in->path, strerror(errno));
    }
    in->f = f;
    return 0;
}

static int unpack(const char *cmd, struct input *in, int z)
{
    struct zcookie *c = calloc(1, sizeof *c);
    FILE *f;

    if (!c || !(c->in = malloc(ZBUF)))
        goto nomem;
    c->under = in->f;
    c->gzip = z == Z_GZIP;
    if (c->gzip ? inflateInit2(&c->zs, 15 + 16) != Z_OK : !(c->zd = ZSTD_createDStream()))
        goto nomem;
    if (!c->gzip)
        ZSTD_initDStream(c->zd);
    if (!(f = fopencookie(c, "rb", (cookie_io_functions_t){z_read, NULL, NULL, z_close}))) {
        z_close(c);
        in->f = NULL;
        return cli_error(cmd, "%s: %s", in->path, strerror(errno));
    }
    in->f = f;
    in->z = z;
    in->plain = 0;
    return 0;
nomem:
    if (c) {
        free(c->in);
        free(c);
    }
    return cli_error(cmd, "%s: out of memory", in->path);
}

static int unknown_kind(const char *cmd, const struct input *in)
{
    return cli_error(cmd, "%s: not something trove reads: %sit starts with %s, which is none "
                          "of a Chrome JSON trace ('[' or '{'), a Perfetto trace, a wire stream "
                          "(\"TV\"), a bundle (a zip), a Parquet file (\"PAR1\"), gzip or "
                          "zstd; --input-format takes one of chrome-json, perfetto, wire, "
                          "bundle, parquet, dir, capture",
                     in->path, in->z == Z_GZIP ? "unpacked from gzip, " :
                     in->z == Z_ZSTD ? "unpacked from zstd, " : "",
                     in->head[0] ? in->head : "nothing (it is empty)");
}

/* Open path and find its kind: in->f then reads its content from the start. */
static int input_open(const char *cmd, const char *path, int forced, struct input *in)
{
    uint8_t h[HEAD];
    size_t n;
    struct stat st;
    int k;

    memset(in, 0, sizeof *in);
    in->path = path;
    if (!strcmp(path, "-")) {
        in->f = stdin;
    } else {
        if (stat(path, &st) != 0)
            return cli_error(cmd, "%s: %s", path, strerror(errno));
        if (S_ISDIR(st.st_mode)) {
            if (forced != CLI_INPUT_AUTO && forced != CLI_INPUT_DIR)
                return cli_error(cmd, "%s is a directory, not %s", path,
                                 cli_input_kind_name(forced));
            in->kind = CLI_INPUT_DIR;
            return 0;
        }
        if (!(in->f = fopen(path, "rb")))
            return cli_error(cmd, "%s: %s", path, strerror(errno));
        in->plain = S_ISREG(st.st_mode);
    }
    if (forced == CLI_INPUT_DIR)
        return cli_error(cmd, "%s is not a directory", path);
    for (int layer = 0;; layer++) {
        if (peek(cmd, in, h, &n))
            return 1;
        k = sniff(h, n);
        if (k < 0 && layer == 0) { /* compressed: look again at what it unpacks to */
            if (unpack(cmd, in, -k))
                return 1;
            continue;
        }
        break;
    }
    in->kind = forced != CLI_INPUT_AUTO ? forced : k < 0 ? CLI_INPUT_AUTO : k;
    if (in->kind == CLI_INPUT_AUTO)
        return unknown_kind(cmd, in);
    return 0;
}


static void input_close(struct input *in)
{
    if (in->f && in->f != stdin)
        fclose(in->f);
    in->f = NULL;
}

/* "PATH (read as KIND)": how every reader below names its input in an error. */
static const char *as_what(const struct input *in, char *buf, size_t n)
{
    snprintf(buf, n, "%s (read as %s%s)", in->path, cli_input_kind_name(in->kind),
             in->z == Z_GZIP ? ", unpacked from gzip" : in->z == Z_ZSTD ? ", unpacked from zstd"
                                                                        : "");
    return buf;
}

static void say_kind(const char *cmd, const struct input *in, const struct cli_load_options *opt)
{
    char what[4200];
    if (opt->verbose)
        fprintf(stderr, "trove %s: %s\n", cmd, as_what(in, what, sizeof what));
}

/* ---- the readers ----------------------------------------------------------------------- */

/* Stream a wire stream frame by frame into sink. */
static int read_wire(const char *cmd, const struct input *in, const struct cli_sink *sink,
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
    char what[4200];
    int rc, status = 1;

    as_what(in, what, sizeof what);
    /* Progress counts bytes of a regular file; of a pipe, there is no total to show. */
    cli_progress_begin(&prog, "reading",
                       in->plain && fstat(fileno(in->f), &st) == 0 ? (uint64_t)st.st_size : 0);
    if (trove_wire_decoder_new(&dec) != TROVE_OK ||
        !(buf = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *buf))) {
        cli_error(cmd, "%s: out of memory", in->path);
        goto out;
    }
    for (;;) {
        frame_at = offset;
        rc = trove_wire_read_frame(in->f, &frame, &offset, &diag);
        if (rc == 0)
            break;
        if (rc < 0) {
            cli_error(cmd, "%s: at byte %llu: %s", what, (unsigned long long)diag.offset,
                      diag.msg);
            goto out;
        }
        if (frame.ptr[2] == TROVE_WIRE_NAMES) { /* a fresh table for what this frame adds */
            trove_names_free(added);
            added = NULL;
            if (trove_names_new(&added) != TROVE_OK) {
                cli_error(cmd, "%s: out of memory", in->path);
                goto out;
            }
        }
        rc = trove_wire_decode(dec, frame.ptr, frame.len, buf, TROVE_WIRE_MAX_EVENTS, added, &fr,
                               &diag);
        if (rc != TROVE_OK) {
            cli_error(cmd, "%s: frame at byte %llu: %s (at byte %llu)", what,
                      (unsigned long long)frame_at, diag.msg,
                      (unsigned long long)(frame_at + diag.offset));
            goto out;
        }
        if (fr.format == TROVE_WIRE_NAMES) {
            if (names_all && trove_names_merge(names_all, added) != TROVE_OK) {
                cli_error(cmd, "%s: out of memory", in->path);
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

/* A Chrome trace, imported whole (its events must be sorted). */
static int read_chrome(const char *cmd, const struct input *in, const struct cli_load_options *opt,
                       struct trove_events *ev, struct trove_names *names,
                       struct trove_flows *flows)
{
    struct trove_chrome_options co = {0};
    struct trove_chrome_stats st;
    struct cli_progress prog;
    struct stat fst;
    struct trove_diag diag = {0};
    char what[4200];
    int rc;

    as_what(in, what, sizeof what);
    co.strict = opt->strict;
    co.progress = chrome_progress;
    co.progress_ctx = &prog;
    cli_progress_begin(&prog, "importing",
                       in->plain && fstat(fileno(in->f), &fst) == 0 ? (uint64_t)fst.st_size : 0);
    prog.active = prog.active && !opt->quiet;
    rc = trove_chrome_import_all(in->f, &co, ev, names, flows, &st, &diag);
    cli_progress_end(&prog);
    if (rc == TROVE_ERR_UNMATCHED)
        return cli_error(cmd, "%s: at byte %llu: %s (without --strict, unmatched events are "
                              "dropped with a warning)",
                         what, (unsigned long long)diag.offset, diag.msg);
    if (rc != TROVE_OK)
        return cli_error(cmd, "%s: at byte %llu: %s%s", what, (unsigned long long)diag.offset,
                         cli_diag_msg(&diag, rc),
                         in->kind == CLI_INPUT_CHROME_JSON && opt->format == CLI_INPUT_AUTO &&
                                 diag.offset == 0
                             ? " (if it is not JSON, --input-format says what it is)"
                             : "");
    if (st.unmatched_begin || st.unmatched_end) {
        char text[512];
        trove_chrome_unmatched_text(&st, text, sizeof text);
        cli_warn(cmd, opt->quiet, opt->warnings, st.unmatched_begin + st.unmatched_end,
                 "%s: dropped %s (--strict makes this an error)", in->path, text);
    }
    if (st.skipped) {
        char phases[512];
        trove_chrome_skipped_text(&st, phases, sizeof phases);
        cli_warn(cmd, opt->quiet, opt->warnings, st.skipped,
                 "%s: skipped %llu trace events trove does not keep (%s; by phase)", in->path,
                 (unsigned long long)st.skipped, phases);
    }
    return 0;
}

/* A bundle or Parquet file that is not a plain regular file: read into memory first. */
static int slurp(const char *cmd, const struct input *in, struct trove_bytes *out)
{
    for (;;) {
        size_t got;
        if (out->len >= MAX_SLURP)
            return cli_error(cmd, "%s: over %llu bytes, more than a bundle is read into memory",
                             in->path, (unsigned long long)MAX_SLURP);
        if (trove_bytes_reserve(out, out->len + ZBUF) != TROVE_OK)
            return cli_error(cmd, "%s: out of memory", in->path);
        got = fread(out->ptr + out->len, 1, ZBUF, in->f);
        out->len += got;
        if (got < ZBUF) {
            if (ferror(in->f))
                return cli_error(cmd, "%s: %s", in->path, strerror(errno));
            return 0;
        }
    }
}

/* Any kind but a wire stream: read whole into ev and names. */
static int read_whole(const char *cmd, struct input *in, const struct cli_load_options *opt,
                      struct trove_events *ev, struct trove_names *names,
                      struct trove_flows *flows)
{
    struct trove_bytes buf = {0};
    int status;

    switch (in->kind) {
    case CLI_INPUT_CHROME_JSON:
        return read_chrome(cmd, in, opt, ev, names, flows);
    case CLI_INPUT_DIR:
        return cli_load_tables(cmd, in->path, CLI_INPUT_DIR, NULL, 0, opt, ev, names, flows);
    case CLI_INPUT_BUNDLE:
    case CLI_INPUT_PARQUET:
        if (in->plain) /* libzip (or the reader) opens the file itself */
            return cli_load_tables(cmd, in->path, in->kind, NULL, 0, opt, ev, names, flows);
        status = slurp(cmd, in, &buf) || cli_load_tables(cmd, in->path, in->kind, buf.ptr,
                                                         buf.len, opt, ev, names, flows);
        trove_bytes_free(&buf);
        return status;
    case CLI_INPUT_PERFETTO:
        status = slurp(cmd, in, &buf) ||
                 cli_load_perfetto_mem(cmd, in->path, buf.ptr, buf.len, opt, ev, names, flows);
        trove_bytes_free(&buf);
        return status;
    default:
        return cli_error(cmd, "%s: cannot read %s here", in->path, cli_input_kind_name(in->kind));
    }
}

const char *cli_input_capture_name(const char *path, int forced)
{
    if (forced == CLI_INPUT_CAPTURE)
        return strncmp(path, STORE_PREFIX, sizeof STORE_PREFIX - 1) ? path
                                                                     : path + sizeof STORE_PREFIX - 1;
    if (forced == CLI_INPUT_AUTO && !strncmp(path, STORE_PREFIX, sizeof STORE_PREFIX - 1))
        return path + sizeof STORE_PREFIX - 1;
    return NULL;
}

struct append_ctx {
    const char *cmd, *path;
    struct trove_events *events;
};

static int append_events(void *ctx, const struct trove_event *ev, size_t n,
                         const struct trove_names *names)
{
    struct append_ctx *c = ctx;
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
    struct input in;
    const char *cap = cli_input_capture_name(path, opt->format);
    size_t start = events->len, fstart = flows ? flows->len : 0;
    int status;

    if (cap) {
        if (cli_capture_load(cmd, opt->store, cap, 0, UINT64_MAX, opt->quiet, events, names))
            return 1;
        if (opt->profile && cli_capture_profile_into(cmd, opt->store, cap, opt->profile)) {
            events->len = start;
            return 1;
        }
        return 0;
    }
    if (input_open(cmd, path, opt->format, &in)) {
        input_close(&in);
        return 1;
    }
    say_kind(cmd, &in, opt);
    if (in.kind == CLI_INPUT_WIRE) {
        struct append_ctx c = {cmd, path, events};
        struct cli_sink sink = {append_events, NULL, &c};
        status = read_wire(cmd, &in, &sink, names);
    } else {
        status = read_whole(cmd, &in, opt, events, names, flows);
    }
    input_close(&in);
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

int cli_read(const char *cmd, const char *path, const struct cli_load_options *opt,
             const struct cli_sink *sink, struct trove_names *names_all)
{
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct input in;
    const char *cap = cli_input_capture_name(path, opt->format);
    int status = 1;

    memset(&in, 0, sizeof in);
    if (!cap && input_open(cmd, path, opt->format, &in))
        goto out;
    if (!cap)
        say_kind(cmd, &in, opt);
    if (!cap && in.kind == CLI_INPUT_WIRE) { /* frame by frame, in constant memory */
        status = read_wire(cmd, &in, sink, names_all);
        goto out;
    }
    /* Everything else is read whole, then handed out: its names, then runs of events. */
    if (trove_names_new(&names) != TROVE_OK) {
        cli_error(cmd, "out of memory");
        goto out;
    }
    if (cap ? cli_capture_load(cmd, opt->store, cap, 0, UINT64_MAX, opt->quiet, &ev, names) ||
                  (opt->profile &&
                   cli_capture_profile_into(cmd, opt->store, cap, opt->profile))
            : read_whole(cmd, &in, opt, &ev, names, NULL))
        goto out;
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
    input_close(&in);
    trove_events_free(&ev);
    trove_names_free(names);
    return status;
}
