/*
 * export_capture.c: the table exports (in_export_tables, for trove_export): an input of any
 * kind read whole and written as a bundle, a Parquet events file or a directory of the
 * bundle's files; and a capture of a store, or a wire stream file, written the same way,
 * streamed: the capture is walked through the streaming pipeline a frame at a time
 * (trove_input_capture_walk), the wire stream read a frame at a time (trove_input_read),
 * into a buffer of about one row group of events, and each full row group goes to the events table's writer
 * (trove_tables_events_*), which encodes it and passes its bytes on. So memory holds one
 * row group (32 bytes an event, 1 Mi events by default, and the writer's scratch), never the
 * capture; the bytes are those the in-memory export (`trove export store:NAME`) writes of the
 * same events.
 *
 *   --format parquet   events.parquet straight to OUT as it is made (a pipe gets it as it
 *                      comes; a file is written beside OUT and renamed, as trove_output does)
 *   --format dir       OUT/events.parquet the same way, then the small tables, manifest.json
 *   --format bundle    the zip needs, before the events entry, manifest.json (the event
 *                      count and time range: known only at the end) and the entry's CRC-32
 *                      and size: events.parquet (deflated, with --zip-deflate) goes to an
 *                      unlinked temporary file while its CRC-32 is computed, and the zip is
 *                      then written front to back (trove_bundle_writer_*): manifest.json,
 *                      the spooled entry copied, the small tables
 *
 * The temporary file is made beside OUT when OUT is a file (the bundle goes there anyway),
 * else (a pipe, a device, stdout: the service's HTTP export) in $TMPDIR or /tmp; it is
 * unlinked from the start (O_TMPFILE, or mkstemp and unlink), so nothing is left behind.
 * The names, threads, flows and sort_indexes tables are small and are made in memory.
 */
#define _GNU_SOURCE /* O_TMPFILE */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input_internal.h"
#include "trove/attrs.h"
#include "trove/profile.h"
#include "trove/bundle.h"
#include "trove/parquet.h"
#include "trove/tables.h"
#include "trove/wire.h"

#define COPY_BYTES (1u << 20) /* the spool is copied into the zip this much at a time */

/* A sink writing to a stdio stream. */
struct file_sink {
    FILE *f;
};

static int file_write(void *ctx, const void *p, size_t n)
{
    struct file_sink *s = ctx;

    errno = 0;
    if (fwrite(p, 1, n, s->f) != n)
        return -(errno ? errno : EIO);
    return TROVE_OK;
}

/* An unlinked temporary file in dir, open for writing and reading back; NULL with errno. */
static FILE *spool_open(const char *dir)
{
    char path[4200];
    FILE *f;
    int fd = -1;

#ifdef O_TMPFILE
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (fd < 0) { /* a filesystem without O_TMPFILE */
        if ((size_t)snprintf(path, sizeof path, "%s/.trove-export-XXXXXX", dir) >= sizeof path) {
            errno = ENAMETOOLONG;
            return NULL;
        }
        if ((fd = mkstemp(path)) < 0)
            return NULL;
        unlink(path);
    }
    if (!(f = fdopen(fd, "w+b"))) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

/* The walk's state: the events table being written, and what the manifest needs. */
struct walk {
    struct trove_tables_events *tab;
    uint64_t rg;                 /* rows per row group */
    uint64_t events, start_ns, end_ns;
    int rc;                      /* the table's error, which ended the walk */
};

/* Hand ev[0..n) to the events table, noting their time range. */
static int walk_add(struct walk *w, const struct trove_event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t s = ev[i].start_ns, e = trove_event_end(&ev[i]);
        if (w->events + i == 0 || s < w->start_ns)
            w->start_ns = s;
        if (w->events + i == 0 || e > w->end_ns)
            w->end_ns = e;
    }
    if ((w->rc = trove_tables_events_add(w->tab, ev, n)) != TROVE_OK)
        return 1;
    w->events += n;
    return 0;
}

/* trove_input_capture_walk's frames: the whole row groups in the buffer go, the rest moves up. */
static int walk_frames(void *ctx, struct trove_events *ev)
{
    struct walk *w = ctx;
    size_t n;

    if (ev->len < w->rg)
        return 0;
    n = ev->len - (size_t)(ev->len % w->rg);
    if (walk_add(w, ev->ev, n))
        return w->rc;
    memmove(ev->ev, ev->ev + n, (ev->len - n) * sizeof *ev->ev);
    ev->len -= n;
    return 0;
}

/* A wire stream input's frames, as they are read: into the buffer, whole row groups on. */
struct read_ctx {
    struct walk *w;
    struct trove_events *ev;
};

static int read_events(void *ctx, const struct trove_event *ev, size_t n,
                       const struct trove_names *names)
{
    struct read_ctx *c = ctx;

    (void)names;
    if (trove_events_reserve(c->ev, n) != TROVE_OK)
        return c->w->rc = TROVE_ERR_NOMEM;
    memcpy(c->ev->ev + c->ev->len, ev, n * sizeof *ev);
    c->ev->len += n;
    return walk_frames(c->w, c->ev);
}

/* The base name of in, without its extensions ("capture" for stdin): a bundle's capture. */
static void base_name(const char *in, char *out, size_t n);

/* The directory of path ("." for a bare name) into out. */
static void dir_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');

    if (!slash)
        snprintf(out, n, ".");
    else if (slash == path)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%.*s", (int)(slash - path), path);
}

static int table_in_bundle(int t, const uint64_t *rows)
{
    return !((t == TROVE_TABLE_SORT_INDEXES || t == TROVE_TABLE_STACKS ||
              t == TROVE_TABLE_SWITCHES || t == TROVE_TABLE_ARGS) &&
             rows[t] == 0);
}

static void bundle_manifest(struct trove_bundle_manifest *m, const char *capture, uint64_t start_ns,
                         uint64_t end_ns, const uint64_t *rows)
{
    memset(m, 0, sizeof *m);
    m->format_version = TROVE_BUNDLE_FORMAT_VERSION;
    snprintf(m->capture, sizeof m->capture, "%s", capture);
    m->start_ns = start_ns;
    m->end_ns = end_ns;
    m->events = rows[TROVE_TABLE_EVENTS];
    m->names = rows[TROVE_TABLE_NAMES];
    m->threads = rows[TROVE_TABLE_THREADS];
    m->samples = rows[TROVE_TABLE_SAMPLES];
    m->frames = rows[TROVE_TABLE_FRAMES];
    m->flows = rows[TROVE_TABLE_FLOWS];
    m->sort_indexes = rows[TROVE_TABLE_SORT_INDEXES];
    m->stacks = rows[TROVE_TABLE_STACKS];
    m->switches = rows[TROVE_TABLE_SWITCHES];
    m->args = rows[TROVE_TABLE_ARGS];
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++) {
        if (!table_in_bundle(t, rows))
            continue;
        snprintf(m->tables[m->ntables++], sizeof m->tables[0], "%.55s.parquet",
                 trove_table_name(t));
    }
    snprintf(m->trove_version, sizeof m->trove_version, "%s", trove_version());
}

static int table_write(int t, const struct trove_events *ev, const struct trove_names *names,
                    const struct trove_flows *flows, const struct trove_profile *profile,
                    const struct trove_attrs *attrs, const struct trove_attrs *meta,
                    const struct trove_tables_options *o, struct trove_bytes *out,
                    uint64_t *rows_out)
{
    if (t == TROVE_TABLE_ARGS)
        return trove_tables_write_args(attrs, meta, o, out, rows_out);
    if (t == TROVE_TABLE_FLOWS)
        return trove_tables_write_flows(flows ? flows->f : NULL, flows ? flows->len : 0, o, out,
                                        rows_out);
    if (TROVE_TABLE_IS_PROFILE(t))
        return trove_tables_write_profile(t, profile, o, out, rows_out);
    return trove_tables_write(t, ev, names, o, out, rows_out);
}

/* A capture streamed into the tables. */
static int export_capture(const struct trove_export_options *x, struct trove_export_result *res,
                          struct trove_diag *diag)
{
    struct trove_tables_options topt = x->topt;
    uint64_t to_ns = x->to_ns ? x->to_ns : UINT64_MAX;
    struct trove_bytes tab[TROVE_TABLE_COUNT_], man = {0};
    struct trove_events ev = {0};
    struct trove_flows flows = {0};
    struct trove_names *names = NULL;
    struct trove_profile *profile = NULL;
    struct trove_attrs attrs, meta;
    struct trove_input_options wo; /* the walk's: x's, with the attributes' tables */
    struct trove_bundle_enc *enc = NULL;
    struct trove_bundle_writer *zw = NULL;
    struct trove_bundle_entry_info info;
    struct trove_bundle_manifest m;
    struct trove_diag d = {0};
    struct trove_output o, oev;
    struct file_sink fs_out, fs_spool;
    struct trove_sink sk;
    struct walk w;
    struct read_ctx rctx = {&w, &ev};
    struct trove_input_sink in_sink = {read_events, NULL, &rctx};
    char cap_name[sizeof m.capture];
    uint64_t rows[TROVE_TABLE_COUNT_] = {0}, total = 0, ev_bytes = 0;
    char spool_dir[4096], entry[TROVE_TABLE_COUNT_][64], path[4200];
    const char *ev_dest;
    uint8_t *copy = NULL;
    FILE *spool = NULL;
    int rc;

    memset(tab, 0, sizeof tab);
    memset(&o, 0, sizeof o);
    memset(&oev, 0, sizeof oev);
    memset(&attrs, 0, sizeof attrs);
    memset(&meta, 0, sizeof meta);
    memset(&w, 0, sizeof w);
    wo = x->in_opt;
    memset(&info, 0, sizeof info);
    rc = TROVE_OK;
    w.rg = topt.row_group_rows ? topt.row_group_rows : TROVE_PQ_DEFAULT_ROW_GROUP;
    if (trove_names_new(&names) != TROVE_OK) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "out of memory");
        goto out;
    }

    /* Where events.parquet goes as it is made: OUT, OUT/events.parquet, or the spool. */
    if (x->format == TROVE_EXPORT_DIR) {
        if ((size_t)snprintf(path, sizeof path, "%s/events.parquet", x->out) >= sizeof path) {
            rc = in_fail(diag, TROVE_ERR_INVALID, "%s: path too long", x->out);
            goto out;
        }
        if ((rc = trove_output_open(path, 1, &oev, diag)) != TROVE_OK)
            goto out;
        fs_out.f = oev.f;
        ev_dest = path;
    } else {
        if ((rc = trove_output_open(x->out, 1, &o, diag)) != TROVE_OK)
            goto out;
        fs_out.f = o.f;
        ev_dest = x->out;
    }
    sk.write = file_write;
    sk.ctx = &fs_out;
    if (x->format == TROVE_EXPORT_BUNDLE) {
        const char *tmp = getenv("TMPDIR");
        if (o.tmp[0])
            dir_of(o.tmp, spool_dir, sizeof spool_dir);
        else
            snprintf(spool_dir, sizeof spool_dir, "%s", tmp && *tmp ? tmp : "/tmp");
        if (!(spool = spool_open(spool_dir))) {
            rc = in_fail(diag, -errno, "cannot make a temporary file in %s for the events table: "
                         "%s (TMPDIR names another directory)", spool_dir, strerror(errno));
            goto out;
        }
        fs_spool.f = spool;
        sk.ctx = &fs_spool;
        if ((rc = trove_bundle_enc_new(x->deflate, &sk, &enc)) != TROVE_OK) {
            in_fail(diag, rc, "%s", trove_strerror(rc));
            goto out;
        }
        trove_bundle_enc_sink(enc, &sk);
        ev_dest = "a temporary file";
    }
    if ((rc = trove_tables_events_begin(&topt, &sk, &w.tab)) != TROVE_OK) {
        in_fail(diag, rc, "the events table: %s", trove_strerror(rc));
        goto out;
    }

    /* The flow rows first (they are few, and a capture whose flows cannot be read fails
     * before the long walk); then the walk, about one row group in memory at a time. */
    if (x->capture && x->format != TROVE_EXPORT_PARQUET &&
        ((rc = trove_input_capture_flows(x->store, x->capture, x->from_ns, to_ns, &flows,
                                         diag)) != TROVE_OK ||
         (rc = trove_input_capture_profile(x->store, x->capture, x->from_ns, to_ns, &profile,
                                           diag)) != TROVE_OK))
        goto out;
    if (x->format != TROVE_EXPORT_PARQUET) { /* the walked events' rows, by index among them */
        wo.attrs = &attrs;
        wo.meta = &meta;
    }
    if (w.rg <= (1u << 24) && trove_events_reserve(&ev, (size_t)w.rg + TROVE_WIRE_MAX_EVENTS)) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (x->capture)
        rc = trove_input_capture_walk(x->store, x->capture, x->from_ns, to_ns, &wo, &ev,
                                      names, walk_frames, &w, diag);
    else /* a wire stream, in order: no flows, no profile */
        rc = trove_input_read(x->in, &x->in_opt, &in_sink, names, diag);
    if (rc != TROVE_OK) {
        if (w.rc != TROVE_OK)
            in_fail(diag, w.rc, "writing the events table to %s: %s", ev_dest,
                    trove_strerror(w.rc));
        goto out;
    }
    if (walk_add(&w, ev.ev, ev.len) ||
        (w.rc = trove_tables_events_finish(w.tab, &rows[TROVE_TABLE_EVENTS], &ev_bytes)) !=
            TROVE_OK) {
        rc = in_fail(diag, w.rc, "writing the events table to %s: %s", ev_dest,
                     trove_strerror(w.rc));
        goto out;
    }
    trove_events_free(&ev);
    total = ev_bytes;
    if (enc && (rc = trove_bundle_enc_finish(enc, &info)) != TROVE_OK) {
        in_fail(diag, rc, "writing the events table to %s: %s", ev_dest, trove_strerror(rc));
        goto out;
    }
    if (x->format == TROVE_EXPORT_PARQUET) {
        rc = trove_output_commit(&o, diag);
        goto out;
    }
    if (x->format == TROVE_EXPORT_DIR && (rc = trove_output_commit(&oev, diag)) != TROVE_OK)
        goto out;

    /* The small tables, and manifest.json. */
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++) {
        if (t == TROVE_TABLE_EVENTS)
            continue;
        rc = table_write(t, &ev, names, &flows, profile, &attrs, &meta, &topt, &tab[t],
                         &rows[t]);
        if (rc != TROVE_OK) {
            in_fail(diag, rc, "writing the %s table: %s", trove_table_name(t),
                    trove_strerror(rc));
            goto out;
        }
        total += tab[t].len;
    }
    if (x->manifest_name || x->capture)
        snprintf(cap_name, sizeof cap_name, "%s", x->manifest_name ? x->manifest_name : x->capture);
    else
        base_name(x->in, cap_name, sizeof cap_name);
    bundle_manifest(&m, cap_name, w.start_ns, w.end_ns, rows);
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++)
        snprintf(entry[t], sizeof entry[t], "%s.parquet", trove_table_name(t));
    if ((rc = trove_bundle_manifest_encode(&m, &man)) != TROVE_OK) {
        in_fail(diag, rc, "manifest.json: %s", trove_strerror(rc));
        goto out;
    }
    total += man.len;

    if (x->format == TROVE_EXPORT_DIR) {
        for (int k = -1; k < TROVE_TABLE_COUNT_; k++) {
            if (k == TROVE_TABLE_EVENTS || (k >= 0 && !table_in_bundle(k, rows)))
                continue;
            if ((size_t)snprintf(path, sizeof path, "%s/%s", x->out,
                                 k < 0 ? TROVE_BUNDLE_MANIFEST_NAME : entry[k]) >= sizeof path) {
                rc = in_fail(diag, TROVE_ERR_INVALID, "%s: path too long", x->out);
                goto out;
            }
            if ((rc = trove_output_write_file(path, k < 0 ? man.ptr : tab[k].ptr,
                                              k < 0 ? man.len : tab[k].len, diag)) != TROVE_OK)
                goto out;
        }
        goto out;
    }

    /* The bundle, front to back: manifest.json, the spooled events, the small tables. */
    sk.write = file_write;
    sk.ctx = &fs_out;
    if ((rc = trove_bundle_writer_new(x->deflate, &sk, &zw)) != TROVE_OK ||
        !(copy = malloc(COPY_BYTES))) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    {
        struct trove_bundle_entry e = {TROVE_BUNDLE_MANIFEST_NAME, man.ptr, man.len};
        rc = trove_bundle_writer_add(zw, &e, &d);
    }
    if (rc == TROVE_OK && (fflush(spool) != 0 || fseek(spool, 0, SEEK_SET) != 0)) {
        rc = in_fail(diag, -errno, "the temporary file of the events table: %s", strerror(errno));
        goto out;
    }
    if (rc == TROVE_OK)
        rc = trove_bundle_writer_begin(zw, entry[TROVE_TABLE_EVENTS], &info, &d);
    for (uint64_t left = info.stored_size; rc == TROVE_OK && left > 0;) {
        size_t k = left < COPY_BYTES ? (size_t)left : COPY_BYTES;
        if (fread(copy, 1, k, spool) != k) {
            rc = in_fail(diag, TROVE_ERR_TRUNCATED,
                         "reading back the temporary file of the events table: %s",
                         ferror(spool) ? strerror(errno) : "it is shorter than written");
            goto out;
        }
        if ((rc = trove_bundle_writer_data(zw, copy, k)) != TROVE_OK)
            trove_diag_set(&d, rc, 0, "writing %s: %s", entry[TROVE_TABLE_EVENTS],
                           trove_strerror(rc));
        left -= k;
    }
    for (int t = 0; rc == TROVE_OK && t < TROVE_TABLE_COUNT_; t++) {
        struct trove_bundle_entry e = {entry[t], tab[t].ptr, tab[t].len};
        if (t == TROVE_TABLE_EVENTS || !table_in_bundle(t, rows))
            continue;
        rc = trove_bundle_writer_add(zw, &e, &d);
    }
    if (rc == TROVE_OK)
        rc = trove_bundle_writer_finish(zw, &d);
    if (rc != TROVE_OK) {
        trove_diag_set(diag, rc, d.offset, "%s: %s", x->out, in_msg(&d, rc));
        goto out;
    }
    rc = trove_output_commit(&o, diag);
out:
    if (rc == TROVE_OK) {
        res->events = rows[TROVE_TABLE_EVENTS];
        res->bytes = total;
        res->flow_rows = flows.len;
        res->samples = profile ? trove_profile_sample_count(profile) : 0;
    }
    trove_output_abort(&o);
    trove_output_abort(&oev);
    if (spool)
        fclose(spool);
    free(copy);
    trove_bundle_writer_free(zw);
    trove_bundle_enc_free(enc);
    trove_tables_events_free(w.tab);
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++)
        trove_bytes_free(&tab[t]);
    trove_bytes_free(&man);
    trove_events_free(&ev);
    trove_flows_free(&flows);
    trove_attrs_free(&attrs);
    trove_attrs_free(&meta);
    trove_profile_free(profile);
    trove_names_free(names);
    return rc;
}


/* The base name of in, without its extensions ("capture" for stdin): a bundle's capture. */
static void base_name(const char *in, char *out, size_t n)
{
    const char *b = strrchr(in, '/');
    char *dot;
    snprintf(out, n, "%s", b ? b + 1 : in);
    if (!strcmp(out, "-") || !out[0])
        snprintf(out, n, "capture");
    if ((dot = strchr(out, '.')) != NULL && dot != out)
        *dot = 0;
}

/* An input of any kind read whole, then written as the tables. */
static int export_loaded(const struct trove_export_options *x, struct trove_export_result *res,
                         struct trove_diag *diag)
{
    struct trove_input_options lo = x->in_opt;
    struct trove_flows flows = {0};
    struct trove_attrs attrs, meta;
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_bytes tab[TROVE_TABLE_COUNT_], man = {0};
    struct trove_bundle_manifest m;
    struct trove_bundle_entry ent[TROVE_TABLE_COUNT_ + 1];
    struct trove_diag d = {0};
    char entry_names[TROVE_TABLE_COUNT_][64];
    uint64_t rows[TROVE_TABLE_COUNT_] = {0}, total = 0;
    size_t nent = 1; /* manifest.json, then the tables the bundle holds */
    int rc;

    memset(tab, 0, sizeof tab);
    memset(&attrs, 0, sizeof attrs);
    memset(&meta, 0, sizeof meta);
    lo.profile = NULL;
    lo.attrs = &attrs;
    lo.meta = &meta;
    if (trove_names_new(&names) != TROVE_OK || trove_profile_new(&lo.profile) != TROVE_OK) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((rc = trove_input_load(x->in, &lo, &ev, names, &flows, diag)) != TROVE_OK)
        goto out;
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++) {
        if (x->format == TROVE_EXPORT_PARQUET && t != TROVE_TABLE_EVENTS)
            continue;
        in_progress(&x->in_opt, "export", (uint64_t)t, TROVE_TABLE_COUNT_);
        if ((rc = table_write(t, &ev, names, &flows, lo.profile, &attrs, &meta, &x->topt, &tab[t],
                              &rows[t])) != TROVE_OK) {
            in_fail(diag, rc, "writing the %s table: %s", trove_table_name(t), trove_strerror(rc));
            goto out;
        }
        total += tab[t].len;
    }
    in_progress(&x->in_opt, "export", UINT64_MAX, TROVE_TABLE_COUNT_);
    if (x->format == TROVE_EXPORT_PARQUET) {
        rc = trove_output_write_file(x->out, tab[TROVE_TABLE_EVENTS].ptr,
                                     tab[TROVE_TABLE_EVENTS].len, diag);
        goto out;
    }
    {
        char cap_name[sizeof m.capture];
        uint64_t first = 0, last = 0;
        if (x->manifest_name)
            snprintf(cap_name, sizeof cap_name, "%s", x->manifest_name);
        else
            base_name(x->in, cap_name, sizeof cap_name);
        for (size_t i = 0; i < ev.len; i++) {
            uint64_t s = ev.ev[i].start_ns, e = trove_event_end(&ev.ev[i]);
            if (i == 0 || s < first)
                first = s;
            if (i == 0 || e > last)
                last = e;
        }
        bundle_manifest(&m, cap_name, first, last, rows);
    }
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++) {
        if (!table_in_bundle(t, rows))
            continue; /* as the manifest: not in the bundle */
        snprintf(entry_names[t], sizeof entry_names[t], "%s.parquet", trove_table_name(t));
        ent[nent].name = entry_names[t];
        ent[nent].data = tab[t].ptr;
        ent[nent].len = tab[t].len;
        nent++;
    }
    if ((rc = trove_bundle_manifest_encode(&m, &man)) != TROVE_OK) {
        in_fail(diag, rc, "manifest.json: %s", trove_strerror(rc));
        goto out;
    }
    ent[0].name = TROVE_BUNDLE_MANIFEST_NAME;
    ent[0].data = man.ptr;
    ent[0].len = man.len;
    total += man.len;
    if (x->format == TROVE_EXPORT_BUNDLE) {
        struct trove_bytes zip = {0};
        rc = trove_bundle_write_mem(ent, nent, x->deflate, &zip, &d);
        if (rc != TROVE_OK) {
            trove_bytes_free(&zip);
            trove_diag_set(diag, rc, d.offset, "%s: %s", x->out, in_msg(&d, rc));
            goto out;
        }
        rc = trove_output_write_file(x->out, zip.ptr, zip.len, diag);
        trove_bytes_free(&zip);
        goto out;
    }
    for (size_t k = 0; k < nent; k++) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", x->out, ent[k].name) >= sizeof path) {
            rc = in_fail(diag, TROVE_ERR_INVALID, "%s: path too long", x->out);
            goto out;
        }
        if ((rc = trove_output_write_file(path, ent[k].data, ent[k].len, diag)) != TROVE_OK)
            goto out;
    }
out:
    if (rc == TROVE_OK) {
        res->events = ev.len;
        res->bytes = total;
        res->flow_rows = flows.len;
        res->samples = trove_profile_sample_count(lo.profile);
    }
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++)
        trove_bytes_free(&tab[t]);
    trove_bytes_free(&man);
    trove_events_free(&ev);
    trove_flows_free(&flows);
    trove_attrs_free(&attrs);
    trove_attrs_free(&meta);
    trove_profile_free(lo.profile);
    trove_names_free(names);
    return rc;
}

/* Remove what a failed directory export made in dir, and dir. */
static void dir_remove(const char *dir)
{
    for (int k = -1; k < TROVE_TABLE_COUNT_; k++) {
        char path[4200];
        if (k < 0)
            snprintf(path, sizeof path, "%s/%s", dir, TROVE_BUNDLE_MANIFEST_NAME);
        else
            snprintf(path, sizeof path, "%s/%s.parquet", dir, trove_table_name(k));
        unlink(path);
    }
    rmdir(dir);
}

int in_export_tables(const struct trove_export_options *x, struct trove_export_result *res,
                     struct trove_diag *diag)
{
    int rc;

    if (x->format == TROVE_EXPORT_DIR && mkdir(x->out, 0777) != 0)
        return in_fail(diag, -errno, "cannot create directory %s: %s%s", x->out, strerror(errno),
                       errno == EEXIST ? " (export makes a new directory)" : "");
    /* A capture, or a wire stream file (read in order), is streamed; any other input is
     * read whole (stdin too: it cannot be looked at before it is read). */
    rc = x->capture || in_input_is_wire(x->in, &x->in_opt) ? export_capture(x, res, diag)
                                                           : export_loaded(x, res, diag);
    if (rc != TROVE_OK && x->format == TROVE_EXPORT_DIR)
        dir_remove(x->out); /* a directory export that failed leaves nothing behind */
    return rc;
}
