/*
 * export_capture.c: `trove export --capture NAME` as a bundle, a Parquet events file or a
 * directory of the bundle's files (cli_export_capture), streamed: the capture is walked
 * through the streaming pipeline a frame at a time (cli_capture_walk) into a buffer of about
 * one row group of events, and each full row group goes to the events table's writer
 * (trove_tables_events_*), which encodes it and passes its bytes on. So memory holds one
 * row group (32 bytes an event, 1 Mi events by default, and the writer's scratch), never the
 * capture; the bytes are those the in-memory export (`trove export store:NAME`, cmd_export.c)
 * writes of the same events.
 *
 *   --format parquet   events.parquet straight to OUT as it is made (a pipe gets it as it
 *                      comes; a file is written beside OUT and renamed, as cli_out does)
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
#include <unistd.h>

#include "cli.h"
#include "trove/profile.h"
#include "trove/bundle.h"
#include "trove/parquet.h"
#include "trove/tables.h"

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

/* cli_capture_walk's frames: the whole row groups in the buffer go, the rest moves up. */
static int walk_frames(void *ctx, struct trove_events *ev)
{
    struct walk *w = ctx;
    size_t n;

    if (ev->len < w->rg)
        return 0;
    n = ev->len - (size_t)(ev->len % w->rg);
    if (walk_add(w, ev->ev, n))
        return 1;
    memmove(ev->ev, ev->ev + n, (ev->len - n) * sizeof *ev->ev);
    ev->len -= n;
    return 0;
}

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

int cli_export_capture(const struct cli_export_capture *x, uint64_t *events_out,
                       uint64_t *total_out)
{
    struct trove_tables_options topt = x->topt;
    struct trove_bytes tab[TROVE_TABLE_COUNT_], man = {0};
    struct trove_events ev = {0};
    struct trove_flows flows = {0};
    struct trove_names *names = NULL;
    struct trove_profile *profile = NULL;
    struct trove_bundle_enc *enc = NULL;
    struct trove_bundle_writer *zw = NULL;
    struct trove_bundle_entry_info info;
    struct trove_bundle_manifest m;
    struct trove_diag diag = {0};
    struct cli_out o, oev;
    struct file_sink fs_out, fs_spool;
    struct trove_sink sk;
    struct walk w;
    uint64_t rows[TROVE_TABLE_COUNT_] = {0}, total = 0, ev_bytes = 0;
    char spool_dir[4096], entry[TROVE_TABLE_COUNT_][64], path[4200];
    const char *ev_dest;
    uint8_t *copy = NULL;
    FILE *spool = NULL;
    int status = 1, rc;

    memset(tab, 0, sizeof tab);
    memset(&o, 0, sizeof o);
    memset(&oev, 0, sizeof oev);
    memset(&w, 0, sizeof w);
    memset(&info, 0, sizeof info);
    w.rg = topt.row_group_rows ? topt.row_group_rows : TROVE_PQ_DEFAULT_ROW_GROUP;
    if (trove_names_new(&names) != TROVE_OK) {
        cli_error("export", "out of memory");
        goto out;
    }

    /* Where events.parquet goes as it is made: OUT, OUT/events.parquet, or the spool. */
    if (x->format == CLI_EXPORT_DIR) {
        if ((size_t)snprintf(path, sizeof path, "%s/events.parquet", x->out) >= sizeof path) {
            cli_error("export", "%s: path too long", x->out);
            goto out;
        }
        if (cli_out_open("export", path, 1, &oev))
            goto out;
        fs_out.f = oev.f;
        ev_dest = path;
    } else {
        if (cli_out_open("export", x->out, 1, &o))
            goto out;
        fs_out.f = o.f;
        ev_dest = x->out;
    }
    sk.write = file_write;
    sk.ctx = &fs_out;
    if (x->format == CLI_EXPORT_BUNDLE) {
        const char *tmp = getenv("TMPDIR");
        if (o.tmp[0])
            dir_of(o.tmp, spool_dir, sizeof spool_dir);
        else
            snprintf(spool_dir, sizeof spool_dir, "%s", tmp && *tmp ? tmp : "/tmp");
        if (!(spool = spool_open(spool_dir))) {
            cli_error("export", "cannot make a temporary file in %s for the events table: %s "
                                "(TMPDIR names another directory)", spool_dir, strerror(errno));
            goto out;
        }
        fs_spool.f = spool;
        sk.ctx = &fs_spool;
        if ((rc = trove_bundle_enc_new(x->deflate, &sk, &enc)) != TROVE_OK) {
            cli_error("export", "%s", trove_strerror(rc));
            goto out;
        }
        trove_bundle_enc_sink(enc, &sk);
        ev_dest = "a temporary file";
    }
    if ((rc = trove_tables_events_begin(&topt, &sk, &w.tab)) != TROVE_OK) {
        cli_error("export", "the events table: %s", trove_strerror(rc));
        goto out;
    }

    /* The flow rows first (they are few, and a capture whose flows cannot be read fails
     * before the long walk); then the walk, about one row group in memory at a time. */
    if (x->format != CLI_EXPORT_PARQUET &&
        (cli_capture_flows("export", x->store, x->capture, x->from_ns, x->to_ns, &flows) ||
         cli_capture_profile("export", x->store, x->capture, x->from_ns, x->to_ns, &profile)))
        goto out;
    if (w.rg <= (1u << 24) && trove_events_reserve(&ev, (size_t)w.rg + TROVE_WIRE_MAX_EVENTS)) {
        cli_error("export", "out of memory");
        goto out;
    }
    if (cli_capture_walk("export", x->store, x->capture, x->from_ns, x->to_ns, x->quiet, &ev,
                         names, walk_frames, &w)) {
        if (w.rc != TROVE_OK)
            cli_error("export", "writing the events table to %s: %s", ev_dest,
                      trove_strerror(w.rc));
        goto out;
    }
    if (walk_add(&w, ev.ev, ev.len) ||
        (w.rc = trove_tables_events_finish(w.tab, &rows[TROVE_TABLE_EVENTS], &ev_bytes)) !=
            TROVE_OK) {
        cli_error("export", "writing the events table to %s: %s", ev_dest, trove_strerror(w.rc));
        goto out;
    }
    trove_events_free(&ev);
    total = ev_bytes;
    if (enc && (rc = trove_bundle_enc_finish(enc, &info)) != TROVE_OK) {
        cli_error("export", "writing the events table to %s: %s", ev_dest, trove_strerror(rc));
        goto out;
    }
    if (x->format == CLI_EXPORT_PARQUET) {
        if (cli_out_commit("export", &o))
            goto out;
        status = 0;
        goto out;
    }
    if (x->format == CLI_EXPORT_DIR && cli_out_commit("export", &oev))
        goto out;

    /* The small tables, and manifest.json. */
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++) {
        if (t == TROVE_TABLE_EVENTS)
            continue;
        rc = cli_table_write(t, &ev, names, &flows, profile, &topt, &tab[t], &rows[t]);
        if (rc != TROVE_OK) {
            cli_error("export", "writing the %s table: %s", trove_table_name(t),
                      trove_strerror(rc));
            goto out;
        }
        total += tab[t].len;
    }
    cli_bundle_manifest(&m, x->manifest_name, w.start_ns, w.end_ns, rows);
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++)
        snprintf(entry[t], sizeof entry[t], "%s.parquet", trove_table_name(t));
    if ((rc = trove_bundle_manifest_encode(&m, &man)) != TROVE_OK) {
        cli_error("export", "manifest.json: %s", trove_strerror(rc));
        goto out;
    }
    total += man.len;

    if (x->format == CLI_EXPORT_DIR) {
        for (int k = -1; k < TROVE_TABLE_COUNT_; k++) {
            if (k == TROVE_TABLE_EVENTS || (k >= 0 && !cli_table_in_bundle(k, rows)))
                continue;
            if ((size_t)snprintf(path, sizeof path, "%s/%s", x->out,
                                 k < 0 ? TROVE_BUNDLE_MANIFEST_NAME : entry[k]) >= sizeof path) {
                cli_error("export", "%s: path too long", x->out);
                goto out;
            }
            if (cli_out_write_file("export", path, k < 0 ? man.ptr : tab[k].ptr,
                                   k < 0 ? man.len : tab[k].len))
                goto out;
        }
        status = 0;
        goto out;
    }

    /* The bundle, front to back: manifest.json, the spooled events, the small tables. */
    sk.write = file_write;
    sk.ctx = &fs_out;
    if ((rc = trove_bundle_writer_new(x->deflate, &sk, &zw)) != TROVE_OK ||
        !(copy = malloc(COPY_BYTES))) {
        cli_error("export", "out of memory");
        goto out;
    }
    {
        struct trove_bundle_entry e = {TROVE_BUNDLE_MANIFEST_NAME, man.ptr, man.len};
        rc = trove_bundle_writer_add(zw, &e, &diag);
    }
    if (rc == TROVE_OK && (fflush(spool) != 0 || fseek(spool, 0, SEEK_SET) != 0)) {
        cli_error("export", "the temporary file of the events table: %s", strerror(errno));
        goto out;
    }
    if (rc == TROVE_OK)
        rc = trove_bundle_writer_begin(zw, entry[TROVE_TABLE_EVENTS], &info, &diag);
    for (uint64_t left = info.stored_size; rc == TROVE_OK && left > 0;) {
        size_t k = left < COPY_BYTES ? (size_t)left : COPY_BYTES;
        if (fread(copy, 1, k, spool) != k) {
            cli_error("export", "reading back the temporary file of the events table: %s",
                      ferror(spool) ? strerror(errno) : "it is shorter than written");
            goto out;
        }
        if ((rc = trove_bundle_writer_data(zw, copy, k)) != TROVE_OK)
            trove_diag_set(&diag, rc, 0, "writing %s: %s", entry[TROVE_TABLE_EVENTS],
                           trove_strerror(rc));
        left -= k;
    }
    for (int t = 0; rc == TROVE_OK && t < TROVE_TABLE_COUNT_; t++) {
        struct trove_bundle_entry e = {entry[t], tab[t].ptr, tab[t].len};
        if (t == TROVE_TABLE_EVENTS || !cli_table_in_bundle(t, rows))
            continue;
        rc = trove_bundle_writer_add(zw, &e, &diag);
    }
    if (rc == TROVE_OK)
        rc = trove_bundle_writer_finish(zw, &diag);
    if (rc != TROVE_OK) {
        cli_error("export", "%s: %s", x->out, cli_diag_msg(&diag, rc));
        goto out;
    }
    if (cli_out_commit("export", &o))
        goto out;
    status = 0;
out:
    if (status == 0) {
        *events_out = rows[TROVE_TABLE_EVENTS];
        *total_out = total;
    }
    cli_out_abort(&o);
    cli_out_abort(&oev);
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
    trove_profile_free(profile);
    trove_names_free(names);
    return status;
}

void cli_bundle_manifest(struct trove_bundle_manifest *m, const char *capture, uint64_t start_ns,
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
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++) {
        if (!cli_table_in_bundle(t, rows))
            continue;
        snprintf(m->tables[m->ntables++], sizeof m->tables[0], "%.55s.parquet",
                 trove_table_name(t));
    }
    snprintf(m->trove_version, sizeof m->trove_version, "%s", trove_version());
}

int cli_table_in_bundle(int t, const uint64_t *rows)
{
    return !((t == TROVE_TABLE_SORT_INDEXES || t == TROVE_TABLE_STACKS ||
              t == TROVE_TABLE_SWITCHES) &&
             rows[t] == 0);
}

int cli_table_write(int t, const struct trove_events *ev, const struct trove_names *names,
                    const struct trove_flows *flows, const struct trove_profile *profile,
                    const struct trove_tables_options *o, struct trove_bytes *out,
                    uint64_t *rows_out)
{
    if (t == TROVE_TABLE_FLOWS)
        return trove_tables_write_flows(flows ? flows->f : NULL, flows ? flows->len : 0, o, out,
                                        rows_out);
    if (TROVE_TABLE_IS_PROFILE(t))
        return trove_tables_write_profile(t, profile, o, out, rows_out);
    return trove_tables_write(t, ev, names, o, out, rows_out);
}
