/*
 * read.c: the one input layer (trove/input.h: trove_input_read, trove_input_load). The
 * `trove` commands that read events and the service's import take any of these, recognized
 * from its bytes (or forced with --input-format):
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
 * into memory. An input that cannot be read fails with one message naming it (its label:
 * what the caller calls it), the kind it was taken for, the byte offset where that is known,
 * and what to try.
 */
#define _GNU_SOURCE /* fopencookie */

#include "input_internal.h"
#include "trove/attrs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "trove/chrome.h"
#include "trove/capture.h"
#include "trove/tables.h"
#include "trove/trace.h"
#include "trove/wire.h"

#define HEAD 256                     /* bytes looked at to tell the kinds apart (Perfetto's
                                        sniff wants 64 or more) */
#define ZBUF (256u << 10)            /* compressed bytes read at a time */
#define MAX_SLURP (8ull << 30)       /* a bundle or Parquet file read into memory */
#define STORE_PREFIX "store:"

static const char *const kind_names[] = {
    [TROVE_INPUT_AUTO] = "auto",      [TROVE_INPUT_CHROME_JSON] = "a Chrome JSON trace",
    [TROVE_INPUT_WIRE] = "a wire stream", [TROVE_INPUT_BUNDLE] = "a bundle (zip)",
    [TROVE_INPUT_PARQUET] = "a Parquet events file", [TROVE_INPUT_DIR] = "a dataset directory",
    [TROVE_INPUT_CAPTURE] = "a capture in a store", [TROVE_INPUT_PERFETTO] = "a Perfetto trace",
};

const char *trove_input_kind_name(int kind)
{
    return kind >= 0 && kind < (int)(sizeof kind_names / sizeof kind_names[0]) && kind_names[kind]
               ? kind_names[kind]
               : "an input";
}

int trove_input_kind_parse(const char *s)
{
    static const struct {
        const char *name;
        int kind;
    } forms[] = {
        {"auto", TROVE_INPUT_AUTO},       {"chrome-json", TROVE_INPUT_CHROME_JSON},
        {"chrome", TROVE_INPUT_CHROME_JSON}, {"json", TROVE_INPUT_CHROME_JSON},
        {"wire", TROVE_INPUT_WIRE},       {"raw", TROVE_INPUT_WIRE},
        {"packed", TROVE_INPUT_WIRE},     {"deflate", TROVE_INPUT_WIRE},
        {"bundle", TROVE_INPUT_BUNDLE},   {"zip", TROVE_INPUT_BUNDLE},
        {"parquet", TROVE_INPUT_PARQUET}, {"dir", TROVE_INPUT_DIR},
        {"capture", TROVE_INPUT_CAPTURE}, {"store", TROVE_INPUT_CAPTURE},
        {"perfetto", TROVE_INPUT_PERFETTO},
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
    const char *label; /* what messages call it */
    FILE *f;       /* reads the content from its first byte */
    int kind;      /* TROVE_INPUT_* */
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
        return TROVE_INPUT_BUNDLE;
    if (n >= 4 && !memcmp(h, "PAR1", 4))
        return TROVE_INPUT_PARQUET;
    if (n >= 2 && h[0] == 'T' && h[1] == 'V')
        return TROVE_INPUT_WIRE;
    if (trove_perfetto_sniff(h, n)) /* before the white space rule: it starts with 0x0a */
        return TROVE_INPUT_PERFETTO;
    if (n >= 3 && !memcmp(h, "\xef\xbb\xbf", 3))
        i = 3;
    while (i < n && (h[i] == ' ' || h[i] == '\t' || h[i] == '\n' || h[i] == '\r'))
        i++;
    if (i == n || h[i] == '[' || h[i] == '{')
        return TROVE_INPUT_CHROME_JSON; /* all white space so far: the JSON reader decides */
    return TROVE_INPUT_AUTO;            /* none of them */
}

/* Read up to HEAD bytes of in->f, then make in->f read them again. */
static int peek(struct input *in, uint8_t *h, size_t *n, struct trove_diag *diag)
{
    struct replay_cookie *c;
    FILE *f;

    *n = fread(h, 1, HEAD, in->f);
    if (*n < HEAD && ferror(in->f))
        return in_fail(diag, -errno, "%s: %s", in->label, strerror(errno));
    in->head[0] = 0;
    for (size_t i = 0, at = 0; i < *n && i < 12; i++)
        at += (size_t)snprintf(in->head + at, sizeof in->head - at, "%s%02x", i ? " " : "",
                               h[i]);
    if (in->plain && fseek(in->f, 0, SEEK_SET) == 0)
        return 0;
    in->plain = 0;
    if (!(c = calloc(1, sizeof *c)))
        return in_fail(diag, TROVE_ERR_NOMEM, "%s: out of memory", in->label);
    memcpy(c->head, h, *n);
    c->n = *n;
    c->under = in->f;
    if (!(f = fopencookie(c, "rb", (cookie_io_functions_t){replay_read, NULL, NULL,
                                                            replay_close}))) {
        free(c);
        return in_fail(diag, -errno, "%s: %s", in->label, strerror(errno));
    }
    in->f = f;
    return 0;
}

static int unpack(struct input *in, int z, struct trove_diag *diag)
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
        return in_fail(diag, -errno, "%s: %s", in->label, strerror(errno));
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
    return in_fail(diag, TROVE_ERR_NOMEM, "%s: out of memory", in->label);
}

static int unknown_kind(const struct input *in, struct trove_diag *diag)
{
    return in_fail(diag, TROVE_ERR_FORMAT,
                   "%s: not something trove reads: %sit starts with %s, which is none of a "
                   "Chrome JSON trace ('[' or '{'), a Perfetto trace, a wire stream (\"TV\"), a "
                   "bundle (a zip), a Parquet file (\"PAR1\"), gzip or zstd; --input-format "
                   "takes one of chrome-json, perfetto, wire, bundle, parquet, dir, capture",
                   in->label, in->z == Z_GZIP ? "unpacked from gzip, " :
                   in->z == Z_ZSTD ? "unpacked from zstd, " : "",
                   in->head[0] ? in->head : "nothing (it is empty)");
}

/* Open path and find its kind: in->f then reads its content from the start. */
static int input_open(const char *path, const char *label, int forced, struct input *in,
                      struct trove_diag *diag)
{
    uint8_t h[HEAD];
    size_t n;
    struct stat st;
    int k, rc;

    memset(in, 0, sizeof *in);
    in->path = path;
    in->label = label;
    if (!strcmp(path, "-")) {
        in->f = stdin;
    } else {
        if (stat(path, &st) != 0)
            return in_fail(diag, -errno, "%s: %s", label, strerror(errno));
        if (S_ISDIR(st.st_mode)) {
            if (forced != TROVE_INPUT_AUTO && forced != TROVE_INPUT_DIR)
                return in_fail(diag, TROVE_ERR_INVALID, "%s is a directory, not %s", label,
                               trove_input_kind_name(forced));
            in->kind = TROVE_INPUT_DIR;
            return 0;
        }
        if (!(in->f = fopen(path, "rb")))
            return in_fail(diag, -errno, "%s: %s", label, strerror(errno));
        in->plain = S_ISREG(st.st_mode);
    }
    if (forced == TROVE_INPUT_DIR)
        return in_fail(diag, TROVE_ERR_INVALID, "%s is not a directory", label);
    for (int layer = 0;; layer++) {
        if ((rc = peek(in, h, &n, diag)) != TROVE_OK)
            return rc;
        k = sniff(h, n);
        if (k < 0 && layer == 0) { /* compressed: look again at what it unpacks to */
            if ((rc = unpack(in, -k, diag)) != TROVE_OK)
                return rc;
            continue;
        }
        break;
    }
    in->kind = forced != TROVE_INPUT_AUTO ? forced : k < 0 ? TROVE_INPUT_AUTO : k;
    if (in->kind == TROVE_INPUT_AUTO)
        return unknown_kind(in, diag);
    return 0;
}


static void input_close(struct input *in)
{
    if (in->f && in->f != stdin)
        fclose(in->f);
    in->f = NULL;
}

/* "LABEL (read as KIND)": how every reader below names its input in an error. */
static const char *as_what(const struct input *in, char *buf, size_t n)
{
    snprintf(buf, n, "%s (read as %s%s)", in->label, trove_input_kind_name(in->kind),
             in->z == Z_GZIP ? ", unpacked from gzip" : in->z == Z_ZSTD ? ", unpacked from zstd"
                                                                        : "");
    return buf;
}

static void say_kind(const struct input *in, const struct trove_input_options *opt)
{
    char what[4200];
    if (opt->read_as)
        opt->read_as(opt->ctx, as_what(in, what, sizeof what));
}

/* ---- the readers ----------------------------------------------------------------------- */

/* A frame of the stream at frame_at that did not decode (d says why, within it). */
static int frame_fail(struct trove_diag *diag, int rc, const char *what, uint64_t frame_at,
                      const struct trove_diag *d)
{
    return trove_diag_set(diag, rc, frame_at + d->offset, "%s: frame at byte %llu: %s (at byte %llu)",
                          what, (unsigned long long)frame_at, d->msg,
                          (unsigned long long)(frame_at + d->offset));
}

/* Stream a wire stream frame by frame into sink. */
static int read_wire(const struct input *in, const struct trove_input_options *opt,
                     const struct trove_input_sink *sink, struct trove_names *names_all,
                     struct trove_diag *diag)
{
    struct trove_wire_decoder *dec = NULL;
    struct trove_names *added = NULL;
    struct trove_event *buf = NULL;
    struct trove_bytes frame = {0};
    struct trove_diag d = {0};
    struct trove_wire_frame fr;
    struct trove_attrs held;
    struct stat st;
    uint64_t offset = 0, frame_at, total, events = 0, lost_rows = 0;
    char what[4200];
    int rc, has_held = 0;

    memset(&held, 0, sizeof held);
    as_what(in, what, sizeof what);
    /* Progress counts bytes of a regular file; of a pipe, there is no total to show. */
    total = in->plain && fstat(fileno(in->f), &st) == 0 ? (uint64_t)st.st_size : 0;
    in_progress(opt, "reading", 0, total);
    if (trove_wire_decoder_new(&dec) != TROVE_OK ||
        !(buf = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *buf))) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "%s: out of memory", in->label);
        goto out;
    }
    for (;;) {
        frame_at = offset;
        rc = trove_wire_read_frame(in->f, &frame, &offset, &d);
        if (rc == 0)
            break;
        if (rc < 0) {
            rc = trove_diag_set(diag, rc, d.offset, "%s: at byte %llu: %s", what,
                                (unsigned long long)d.offset, d.msg);
            goto out;
        }
        if (frame.ptr[2] == TROVE_WIRE_ATTRS) { /* the next events frame's attributes */
            trove_attrs_free(&held);
            if ((rc = trove_attrs_wire_decode(frame.ptr, frame.len, &held, &d)) != TROVE_OK) {
                rc = frame_fail(diag, rc, what, frame_at, &d);
                goto out;
            }
            if (has_held)
                lost_rows += held.n; /* two in a row: the first had no events frame */
            has_held = 1;
            in_progress(opt, "reading", offset, total);
            continue;
        }
        if (frame.ptr[2] == TROVE_WIRE_NAMES) { /* a fresh table for what this frame adds */
            trove_names_free(added);
            added = NULL;
            if (trove_names_new(&added) != TROVE_OK) {
                rc = in_fail(diag, TROVE_ERR_NOMEM, "%s: out of memory", in->label);
                goto out;
            }
        }
        rc = trove_wire_decode(dec, frame.ptr, frame.len, buf, TROVE_WIRE_MAX_EVENTS, added, &fr,
                               &d);
        if (rc != TROVE_OK) {
            rc = frame_fail(diag, rc, what, frame_at, &d);
            goto out;
        }
        if (fr.format == TROVE_WIRE_NAMES) {
            if (names_all && trove_names_merge(names_all, added) != TROVE_OK) {
                rc = in_fail(diag, TROVE_ERR_NOMEM, "%s: out of memory", in->label);
                goto out;
            }
            if (sink->names && (rc = sink->names(sink->ctx, added)) != 0)
                goto out;
        } else if (fr.n_events) {
            if (has_held && held.n) { /* rows by the event's index among those read */
                if (held.rows[held.n - 1].event >= fr.n_events) {
                    rc = trove_diag_set(diag, TROVE_ERR_CORRUPT, frame_at,
                                        "%s: frame at byte %llu: the attrs frame before it "
                                        "names event %llu of its %zu",
                                        what, (unsigned long long)frame_at,
                                        (unsigned long long)held.rows[held.n - 1].event,
                                        fr.n_events);
                    goto out;
                }
                if (opt->attrs &&
                    (rc = trove_attrs_append(opt->attrs, &held, 0, held.n, events, 0)) != TROVE_OK) {
                    rc = in_fail(diag, rc, "%s: keeping attributes: %s", in->label, trove_strerror(rc));
                    goto out;
                }
                if (!opt->attrs)
                    lost_rows += held.n;
            }
            trove_attrs_free(&held);
            has_held = 0;
            if (sink->events && (rc = sink->events(sink->ctx, buf, fr.n_events, names_all)) != 0)
                goto out;
            events += fr.n_events;
        }
        in_progress(opt, "reading", offset, total);
    }
    if (has_held)
        lost_rows += held.n; /* the stream ended before its events frame */
    if (lost_rows)
        trove_warn(opt->warnings, lost_rows,
                   "%s: not kept: %llu attribute rows of its attrs frames (%s)", in->label,
                   (unsigned long long)lost_rows,
                   opt->attrs ? "an attrs frame with no events frame after it"
                              : "this output carries no attributes");
    rc = TROVE_OK;
out:
    in_progress(opt, "reading", UINT64_MAX, total);
    trove_attrs_free(&held);
    trove_names_free(added);
    trove_bytes_free(&frame);
    free(buf);
    trove_wire_decoder_free(dec);
    return rc;
}

struct chrome_progress {
    const struct trove_input_options *opt;
    uint64_t total;
};

/* The names of up to 8 keys, with their counts when given: "tts 120, tdur 98". */
static void key_list(char *buf, size_t cap, const char names[8][24], const uint64_t *counts)
{
    size_t k = 0;

    buf[0] = 0;
    for (int i = 0; i < 8 && names[i][0] && k < cap; i++) {
        int w = counts ? snprintf(buf + k, cap - k, "%s%s %llu", i ? ", " : "", names[i],
                                  (unsigned long long)counts[i])
                       : snprintf(buf + k, cap - k, "%s%s", i ? ", " : "", names[i]);
        if (w < 0)
            break;
        k += (size_t)w;
    }
}

/* What a Chrome trace carried that the import did not keep, said by kind (never silently:
 * docs/formats/chrome-json.md, "Not kept"). */
/* kept: the attributes were (opt->attrs), and what is counted is what even they miss */
static void chrome_not_kept(struct trove_warnings *w, const char *label,
                            const struct trove_chrome_stats *st, int kept)
{
    static const char why[] = "; flow, metadata (M), step (T) and skipped events keep none";
    char keys[256];

    if (st->args_events)
        trove_warn(w, st->args_events, "%s: not kept: the args of %llu trace events (%llu members)%s",
                   label, (unsigned long long)st->args_events,
                   (unsigned long long)st->args_members,
                   kept ? "; flow, metadata (M), step (T) and skipped events keep none, a counter "
                          "keeps its numbers, and a value over 1 MiB is not kept"
                        : "; trove keeps no event attributes");
    if (st->cat_events)
        trove_warn(w, st->cat_events,
                   "%s: not kept: the categories (\"cat\") of %llu trace events, %u distinct%s%s",
                   label, (unsigned long long)st->cat_events, st->categories,
                   st->categories >= 65536 ? " or more" : "", kept ? why : "");
    if (st->other_members) {
        key_list(keys, sizeof keys, st->other_names, st->other_counts);
        trove_warn(w, st->other_members,
                   "%s: not kept: %llu members of trace events trove does not read (%s%s)", label,
                   (unsigned long long)st->other_members, keys,
                   st->other_names[7][0] ? ", ..." : "");
    }
    if (st->top_members) {
        key_list(keys, sizeof keys, st->top_names, NULL);
        trove_warn(w, st->top_members,
                   "%s: not kept: %llu members of the top-level object besides traceEvents (%s%s)",
                   label, (unsigned long long)st->top_members, keys,
                   st->top_names[7][0] ? ", ..." : "");
    }
}

static void chrome_progress(void *ctx, uint64_t bytes)
{
    struct chrome_progress *p = ctx;
    in_progress(p->opt, "importing", bytes, p->total);
}

/* A Chrome trace, imported whole (its events must be sorted). */
static int read_chrome(const struct input *in, const struct trove_input_options *opt,
                       struct trove_events *ev, struct trove_names *names,
                       struct trove_flows *flows, struct trove_diag *diag)
{
    struct trove_chrome_options co = {0};
    struct trove_chrome_stats st;
    struct chrome_progress prog = {opt, 0};
    struct stat fst;
    struct trove_diag d = {0};
    char what[4200];
    int rc;

    as_what(in, what, sizeof what);
    co.strict = opt->strict;
    co.attrs = opt->attrs;
    co.meta = opt->meta;
    co.progress = chrome_progress;
    co.progress_ctx = &prog;
    prog.total = in->plain && fstat(fileno(in->f), &fst) == 0 ? (uint64_t)fst.st_size : 0;
    in_progress(opt, "importing", 0, prog.total);
    rc = trove_chrome_import_all(in->f, &co, ev, names, flows, &st, &d);
    in_progress(opt, "importing", UINT64_MAX, prog.total);
    if (rc == TROVE_ERR_UNMATCHED)
        return trove_diag_set(diag, rc, d.offset,
                              "%s: at byte %llu: %s (without --strict, unmatched events are "
                              "dropped with a warning)",
                              what, (unsigned long long)d.offset, d.msg);
    if (rc != TROVE_OK)
        return trove_diag_set(diag, rc, d.offset, "%s: at byte %llu: %s%s", what,
                              (unsigned long long)d.offset, in_msg(&d, rc),
                              in->kind == TROVE_INPUT_CHROME_JSON &&
                                      opt->format == TROVE_INPUT_AUTO && d.offset == 0
                                  ? " (if it is not JSON, --input-format says what it is)"
                                  : "");
    if (st.unmatched_begin || st.unmatched_end) {
        char text[512];
        trove_chrome_unmatched_text(&st, text, sizeof text);
        trove_warn(opt->warnings, st.unmatched_begin + st.unmatched_end,
                   "%s: dropped %s (--strict makes this an error)", in->label, text);
    }
    if (st.skipped) {
        char phases[512];
        trove_chrome_skipped_text(&st, phases, sizeof phases);
        trove_warn(opt->warnings, st.skipped,
                   "%s: skipped %llu trace events trove does not keep (%s; by phase)", in->label,
                   (unsigned long long)st.skipped, phases);
    }
    chrome_not_kept(opt->warnings, in->label, &st, opt->attrs != NULL);
    return 0;
}

/* A bundle or Parquet file that is not a plain regular file: read into memory first. */
static int slurp(const struct input *in, struct trove_bytes *out, struct trove_diag *diag)
{
    for (;;) {
        size_t got;
        if (out->len >= MAX_SLURP)
            return in_fail(diag, TROVE_ERR_LIMIT,
                           "%s: over %llu bytes, more than a bundle is read into memory",
                           in->label, (unsigned long long)MAX_SLURP);
        if (trove_bytes_reserve(out, out->len + ZBUF) != TROVE_OK)
            return in_fail(diag, TROVE_ERR_NOMEM, "%s: out of memory", in->label);
        got = fread(out->ptr + out->len, 1, ZBUF, in->f);
        out->len += got;
        if (got < ZBUF) {
            if (ferror(in->f))
                return in_fail(diag, -errno, "%s: %s", in->label, strerror(errno));
            return 0;
        }
    }
}

/* Any kind but a wire stream: read whole into ev and names. */
static int read_whole(struct input *in, const struct trove_input_options *opt,
                      struct trove_events *ev, struct trove_names *names,
                      struct trove_flows *flows, struct trove_diag *diag)
{
    struct trove_bytes buf = {0};
    int rc;

    switch (in->kind) {
    case TROVE_INPUT_CHROME_JSON:
        return read_chrome(in, opt, ev, names, flows, diag);
    case TROVE_INPUT_DIR:
        return in_load_tables(in->path, in->label, TROVE_INPUT_DIR, NULL, 0, opt, ev, names,
                              flows, diag);
    case TROVE_INPUT_BUNDLE:
    case TROVE_INPUT_PARQUET:
        if (in->plain) /* libzip (or the reader) opens the file itself */
            return in_load_tables(in->path, in->label, in->kind, NULL, 0, opt, ev, names, flows,
                                  diag);
        if ((rc = slurp(in, &buf, diag)) == TROVE_OK)
            rc = in_load_tables(in->path, in->label, in->kind, buf.ptr, buf.len, opt, ev, names,
                                flows, diag);
        trove_bytes_free(&buf);
        return rc;
    case TROVE_INPUT_PERFETTO:
        if ((rc = slurp(in, &buf, diag)) == TROVE_OK)
            rc = in_load_perfetto_mem(in->label, buf.ptr, buf.len, opt, ev, names, flows, diag);
        trove_bytes_free(&buf);
        return rc;
    default:
        return in_fail(diag, TROVE_ERR_INVALID, "%s: cannot read %s here", in->label,
                       trove_input_kind_name(in->kind));
    }
}

const char *trove_input_capture_name(const char *path, int forced)
{
    if (forced == TROVE_INPUT_CAPTURE)
        return strncmp(path, STORE_PREFIX, sizeof STORE_PREFIX - 1) ? path
                                                                     : path + sizeof STORE_PREFIX - 1;
    if (forced == TROVE_INPUT_AUTO && !strncmp(path, STORE_PREFIX, sizeof STORE_PREFIX - 1))
        return path + sizeof STORE_PREFIX - 1;
    return NULL;
}

struct append_ctx {
    const char *label;
    struct trove_events *events;
    struct trove_diag *diag;
};

static int append_events(void *ctx, const struct trove_event *ev, size_t n,
                         const struct trove_names *names)
{
    struct append_ctx *c = ctx;
    (void)names;
    if (trove_events_reserve(c->events, n) != TROVE_OK)
        return in_fail(c->diag, TROVE_ERR_NOMEM, "%s: out of memory", c->label);
    memcpy(c->events->ev + c->events->len, ev, n * sizeof *ev);
    c->events->len += n;
    return 0;
}

static const struct trove_input_options no_options;

/* A capture (store:NAME) whole: its events, names, flows and profile. */
static int load_capture(const char *cap, const struct trove_input_options *opt,
                        struct trove_events *events, struct trove_names *names,
                        struct trove_flows *flows, struct trove_diag *diag)
{
    size_t start = events->len, fstart = flows ? flows->len : 0;
    int rc = trove_input_capture_walk(opt->store, cap, 0, UINT64_MAX, opt, events, names, NULL,
                                      NULL, diag);

    if (rc == TROVE_OK && flows)
        rc = trove_input_capture_flows(opt->store, cap, 0, UINT64_MAX, flows, diag);
    if (rc == TROVE_OK && opt->profile)
        rc = in_capture_profile_into(opt->store, cap, opt->profile, diag);
    if (rc != TROVE_OK) {
        events->len = start;
        if (flows)
            flows->len = fstart;
    }
    return rc;
}

int trove_input_load(const char *path, const struct trove_input_options *opt,
                     struct trove_events *events, struct trove_names *names,
                     struct trove_flows *flows, struct trove_diag *diag)
{
    struct trove_diag local = {0};
    struct input in;
    const char *cap;
    size_t start = events->len, fstart = flows ? flows->len : 0;
    int rc;

    if (!diag)
        diag = &local;
    memset(diag, 0, sizeof *diag);
    opt = opt ? opt : &no_options;
    cap = trove_input_capture_name(path, opt->format);
    if (cap)
        return load_capture(cap, opt, events, names, flows, diag);
    if ((rc = input_open(path, in_label(opt, path), opt->format, &in, diag)) != TROVE_OK) {
        input_close(&in);
        return rc;
    }
    say_kind(&in, opt);
    if (in.kind == TROVE_INPUT_WIRE) {
        struct append_ctx c = {in.label, events, diag};
        struct trove_input_sink sink = {append_events, NULL, &c};
        rc = read_wire(&in, opt, &sink, names, diag);
    } else {
        rc = read_whole(&in, opt, events, names, flows, diag);
    }
    input_close(&in);
    if (rc != TROVE_OK) {
        events->len = start;
        if (flows)
            flows->len = fstart;
    }
    return rc;
}

int in_input_is_wire(const char *path, const struct trove_input_options *opt)
{
    struct trove_diag d = {0};
    struct input in;
    int wire;

    if (!strcmp(path, "-") || trove_input_capture_name(path, opt->format))
        return 0; /* stdin cannot be looked at twice; a capture is no file */
    wire = input_open(path, in_label(opt, path), opt->format, &in, &d) == TROVE_OK &&
           in.kind == TROVE_INPUT_WIRE;
    input_close(&in);
    return wire;
}

int in_read_import(const char *path, const struct trove_input_options *opt,
                   const struct trove_input_sink *sink, struct trove_events *events,
                   struct trove_names *names, struct trove_flows *flows, int *streamed,
                   struct trove_diag *diag)
{
    struct input in;
    const char *cap;
    int rc;

    *streamed = 0;
    cap = trove_input_capture_name(path, opt->format);
    if (cap)
        return load_capture(cap, opt, events, names, flows, diag);
    if ((rc = input_open(path, in_label(opt, path), opt->format, &in, diag)) != TROVE_OK) {
        input_close(&in);
        return rc;
    }
    say_kind(&in, opt);
    if (in.kind == TROVE_INPUT_WIRE) { /* in order: frame by frame, in constant memory */
        *streamed = 1;
        rc = read_wire(&in, opt, sink, names, diag);
    } else {
        size_t start = events->len, fstart = flows->len;
        rc = read_whole(&in, opt, events, names, flows, diag);
        if (rc != TROVE_OK) {
            events->len = start;
            flows->len = fstart;
        }
    }
    input_close(&in);
    return rc;
}

int trove_input_read(const char *path, const struct trove_input_options *opt,
                     const struct trove_input_sink *sink, struct trove_names *names_all,
                     struct trove_diag *diag)
{
    struct trove_diag local = {0};
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct input in;
    const char *cap;
    int rc;

    if (!diag)
        diag = &local;
    memset(diag, 0, sizeof *diag);
    opt = opt ? opt : &no_options;
    cap = trove_input_capture_name(path, opt->format);
    memset(&in, 0, sizeof in);
    if (!cap && (rc = input_open(path, in_label(opt, path), opt->format, &in, diag)) != TROVE_OK)
        goto out;
    if (!cap)
        say_kind(&in, opt);
    if (!cap && in.kind == TROVE_INPUT_WIRE) { /* frame by frame, in constant memory */
        rc = read_wire(&in, opt, sink, names_all, diag);
        goto out;
    }
    /* Everything else is read whole, then handed out: its names, then runs of events. */
    if (trove_names_new(&names) != TROVE_OK) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    rc = cap ? load_capture(cap, opt, &ev, names, NULL, diag)
             : read_whole(&in, opt, &ev, names, NULL, diag);
    if (rc != TROVE_OK)
        goto out;
    if (names_all && trove_names_merge(names_all, names) != TROVE_OK) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "%s: out of memory", in_label(opt, path));
        goto out;
    }
    if (sink->names && (rc = sink->names(sink->ctx, names)) != 0)
        goto out;
    for (size_t i = 0; sink->events && i < ev.len; i += TROVE_WIRE_MAX_EVENTS) {
        size_t n = ev.len - i < TROVE_WIRE_MAX_EVENTS ? ev.len - i : TROVE_WIRE_MAX_EVENTS;
        if ((rc = sink->events(sink->ctx, ev.ev + i, n, names_all ? names_all : names)) != 0)
            goto out;
    }
    rc = TROVE_OK;
out:
    input_close(&in);
    trove_events_free(&ev);
    trove_names_free(names);
    return rc;
}

