/*
 * import.c: an input of any kind stored as a capture (trove/input.h: trove_import) — what
 * `trove import` and the service (the body of POST /api/captures/import, on its store
 * thread, through its own store handle) both run. fuzz/fuzz_import.c runs this very function
 * on hostile bodies.
 *
 * A wire stream (a file, stdin, a pipe) arrives in order, so it is stored as it is read:
 * each frame's events go to a capture writer (trove_capture_writer_*, include/trove/
 * capture.h), which puts every segment as it fills, and its names frames are merged into the
 * writer's table; memory is one frame, one segment and the names, whatever the stream's
 * length. The writer commits once, after the last frame, so an input that fails part way
 * leaves the capture (or its absence) as it was: the segments it put are not in any committed
 * recipe, and gc removes them. The capture it commits is byte for byte what
 * trove_capture_write makes of the same events and names (the writer's promise), so
 * importing the same stream again stores no new object, however it was read. Every other
 * kind (Chrome JSON, Perfetto, a bundle, a Parquet file, a directory, a capture) is read
 * whole first, as its reader needs, and written with trove_capture_write_profile; one of
 * more than WHOLE_NOTE_EVENTS events says so in a warning. Errors name the input as the
 * caller does (the upload's name, never the temporary file the body was spooled to).
 */
#include <stdio.h>
#include <string.h>

#include "input_internal.h"
#include "trove/capture.h"
#include "trove/attrs.h"
#include "trove/profile.h"

/* An input read whole with more events than this says so in a warning (128 MiB of them). */
#define WHOLE_NOTE_EVENTS ((size_t)4 << 20)

/* The streamed import: where the wire reader's frames go. */
struct stream_ctx {
    struct trove_store *s;
    const char *name;
    const struct trove_import_options *opt;
    const struct trove_capture_options *co;
    struct trove_capture_writer *w;
    uint64_t events;
    struct trove_attrs *attrs; /* the reader's rows of the events it hands out next */
    uint64_t attr_rows;   /* rows stored */
    int store_failed;     /* the store (or opening it) failed: diag says so */
    int write_failed;     /* the writer failed: diag says so */
    struct trove_diag *diag;
};

/* The store, opened when the input proved readable (opt->open_store), then the writer. */
static int stream_open(struct stream_ctx *c)
{
    int rc;

    if (c->w)
        return TROVE_OK;
    if (!c->s && (rc = c->opt->open_store(c->opt->open_ctx, &c->s, c->diag)) != TROVE_OK) {
        c->store_failed = 1;
        return rc;
    }
    if ((rc = trove_capture_writer_open(c->s, c->name, c->opt->append, c->co, &c->w,
                                        c->diag)) != TROVE_OK)
        c->write_failed = 1;
    return rc;
}

static int stream_events(void *ctx, const struct trove_event *ev, size_t n,
                         const struct trove_names *names)
{
    struct stream_ctx *c = ctx;
    int rc;

    (void)names;
    if ((rc = stream_open(c)) != TROVE_OK)
        return rc;
    if (c->attrs && c->attrs->n) {
        /* the rows the reader kept for these events (by their index among those read), as
         * rows of this run; the table starts again for the next */
        struct trove_attrs run;
        memset(&run, 0, sizeof run);
        rc = trove_attrs_append(&run, c->attrs, trove_attrs_find(c->attrs, c->events),
                                trove_attrs_find(c->attrs, c->events + n), 0, c->events);
        if (rc == TROVE_OK)
            rc = trove_capture_writer_add_attrs(c->w, ev, n, &run, c->diag);
        else
            in_fail(c->diag, rc, "keeping attributes: %s", trove_strerror(rc));
        c->attr_rows += run.n;
        trove_attrs_free(&run);
        trove_attrs_free(c->attrs);
    } else {
        rc = trove_capture_writer_add(c->w, ev, n, c->diag);
    }
    if (rc != TROVE_OK) {
        c->write_failed = 1;
        return rc;
    }
    c->events += n;
    return TROVE_OK;
}

static int stream_names(void *ctx, const struct trove_names *added)
{
    struct stream_ctx *c = ctx;
    int rc;

    if ((rc = stream_open(c)) != TROVE_OK)
        return rc;
    if ((rc = trove_capture_writer_names(c->w, added, c->diag)) != TROVE_OK)
        c->write_failed = 1;
    return rc;
}

static void store_progress(void *ctx, uint64_t done, uint64_t total)
{
    in_progress(ctx, "storing", done, total);
}

int trove_import(struct trove_store *s, const char *name, const char *path,
                 const struct trove_import_options *opt, struct trove_import_result *res,
                 struct trove_diag *diag)
{
    static const struct trove_import_options none;
    struct trove_input_options lo;
    struct trove_events ev = {0};
    struct trove_flows flows = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info;
    struct trove_capture_options co;
    struct trove_diag local = {0};
    struct stream_ctx sc;
    struct trove_input_sink sink = {stream_events, stream_names, &sc};
    struct trove_attrs attrs, meta;
    int rc, streamed = 0;

    if (!diag)
        diag = &local;
    memset(diag, 0, sizeof *diag);
    opt = opt ? opt : &none;
    memset(res, 0, sizeof *res);
    memset(&co, 0, sizeof co);
    memset(&info, 0, sizeof info);
    memset(&sc, 0, sizeof sc);
    if (!s && !opt->open_store)
        return in_fail(diag, TROVE_ERR_INVALID, "an import needs a store");
    /* a new capture's segments are format 8 unless asked otherwise; an append goes on in the
     * capture's own format */
    co.segment_format = opt->segment_format ? opt->segment_format
                        : opt->append       ? 0
                                            : TROVE_WIRE_MODEL;
    co.segment_bytes = opt->segment_bytes;
    co.no_summaries = opt->no_summaries;
    sc.s = s;
    sc.name = name;
    sc.opt = opt;
    sc.co = &co;
    sc.diag = diag;
    lo = opt->in;
    lo.profile = NULL;
    memset(&attrs, 0, sizeof attrs);
    memset(&meta, 0, sizeof meta);
    lo.attrs = &attrs;
    lo.meta = &meta;
    sc.attrs = &attrs;
    if (trove_names_new(&names) != TROVE_OK ||
        (!opt->append && trove_profile_new(&lo.profile) != TROVE_OK)) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    rc = in_read_import(path, &lo, &sink, &ev, names, &flows, &streamed, diag);
    if (rc != TROVE_OK && !sc.store_failed && !sc.write_failed) {
        res->bad_input = res->read_failed = 1; /* diag says what is wrong with it */
        goto out;
    }
    if (rc == TROVE_OK && streamed) { /* the whole stream was read: commit what it held */
        if ((rc = stream_open(&sc)) == TROVE_OK &&
            (rc = trove_capture_writer_commit(sc.w, &info, diag)) != TROVE_OK)
            sc.write_failed = 1;
    } else if (rc == TROVE_OK) {
        if (ev.len > WHOLE_NOTE_EVENTS)
            trove_warn(lo.warnings, ev.len,
                       "%s: read whole into memory before it was stored (%zu events, about "
                       "%zu MiB; only a wire stream is stored as it is read)",
                       in_label(&lo, path), ev.len, ev.len * sizeof *ev.ev >> 20);
        if (!s) {
            if ((rc = opt->open_store(opt->open_ctx, &s, diag)) != TROVE_OK) {
                sc.store_failed = 1;
                goto out;
            }
            sc.s = s;
        }
        co.progress = store_progress;
        co.progress_ctx = &lo;
        if (opt->append) {
            struct trove_capture_writer *w = NULL;
            if (flows.len > 0) {
                res->bad_input = 1;
                rc = in_fail(diag, TROVE_ERR_INVALID,
                             "an append carries no flow rows; import it whole instead");
                goto out;
            }
            if (meta.n)
                trove_warn(lo.warnings, meta.n,
                           "%s: not kept: %zu attribute rows of the trace's own (its top-level "
                           "members): an append keeps the capture's; import it whole to keep them",
                           in_label(&lo, path), meta.n);
            rc = trove_capture_writer_open(s, name, 1, &co, &w, diag);
            if (rc == TROVE_OK && (rc = trove_capture_writer_names(w, names, diag)) == TROVE_OK &&
                (rc = trove_capture_writer_add_attrs(w, ev.ev, ev.len, &attrs, diag)) == TROVE_OK)
                rc = trove_capture_writer_commit(w, &info, diag);
            trove_capture_writer_close(w);
        } else {
            rc = trove_capture_write_attrs(s, name, ev.ev, ev.len, names, flows.f, flows.len,
                                           lo.profile, &attrs, &meta, &co, &info, diag);
        }
        in_progress(&lo, "storing", UINT64_MAX, 0);
    }
    if (rc != TROVE_OK) {
        if (sc.store_failed)
            goto out; /* the store could not be opened: its opener said why */
        if (!diag->msg[0])
            in_fail(diag, rc, "%s", trove_strerror(rc));
        in_remote_detail(sc.s, rc, diag);
        /* the capture's writer refusing what was read (an event it does not store, say) is
         * the input's fault too; a name the caller gave was checked before */
        res->bad_input = rc == TROVE_ERR_INVALID;
        goto out;
    }
    res->events = streamed ? sc.events : ev.len;
    res->flow_rows = flows.len;
    res->attr_rows = streamed ? sc.attr_rows : attrs.n + (opt->append ? 0 : meta.n);
    res->samples = lo.profile ? trove_profile_sample_count(lo.profile) : 0;
    res->new_objects = info.new_objects;
    res->new_bytes = info.new_bytes;
    res->info = info;
out:
    trove_capture_writer_close(sc.w); /* uncommitted: the capture stays as it was */
    trove_events_free(&ev);
    trove_flows_free(&flows);
    trove_profile_free(lo.profile);
    trove_attrs_free(&attrs);
    trove_attrs_free(&meta);
    trove_names_free(names);
    return rc;
}
