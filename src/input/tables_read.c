/*
 * tables_read.c: the table kinds of the input layer (read.c): a bundle (a zip of Parquet
 * tables, from its file or from memory), a dataset directory of its files, and a Parquet
 * events file alone, read into events, names, flows and a profile (in_load_tables).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input_internal.h"
#include "trove/attrs.h"
#include "trove/bundle.h"
#include "trove/profile.h"
#include "trove/tables.h"

#define MAX_TABLE_BYTES (8ull << 30) /* one table read from a bundle or directory */

/* Read a whole regular file (at most max bytes). */
static int read_file(const char *path, const char *label, uint64_t max,
                     struct trove_bytes *out, struct trove_diag *diag)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    int rc;

    if (!f)
        return in_fail(diag, -errno, "cannot open %s: %s", label, strerror(errno));
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = in_fail(diag, TROVE_ERR_INVALID, "%s: not a regular file", label);
        goto out;
    }
    if ((uint64_t)st.st_size > max || (uint64_t)st.st_size > SIZE_MAX) {
        rc = in_fail(diag, TROVE_ERR_LIMIT, "%s: %llu bytes, over the %llu a table may have",
                     label, (unsigned long long)st.st_size, (unsigned long long)max);
        goto out;
    }
    out->len = 0;
    if (trove_bytes_reserve(out, (size_t)st.st_size + 1) != TROVE_OK) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "%s: out of memory", label);
        goto out;
    }
    out->len = fread(out->ptr, 1, (size_t)st.st_size, f);
    if (out->len != (size_t)st.st_size) {
        rc = in_fail(diag, TROVE_ERR_TRUNCATED, "reading %s: %s", label,
                     ferror(f) ? strerror(errno) : "file shrank");
        goto out;
    }
    rc = 0;
out:
    fclose(f);
    return rc;
}

/* How a bundle's tables are taken (trove_input_options). */
struct table_opts {
    int edited;
    struct trove_flows *flows;       /* the flows table's rows go here (NULL: dropped) */
    struct trove_profile *profile;   /* the profile's tables go here (NULL: not read) */
    struct trove_warnings *warnings; /* NULL: dropped */
    struct trove_attrs *attrs, *meta; /* the args table's rows (NULL: counted, not kept) */
};

/* The args table (its bytes in buf) of a bundle of `events` events, the first of them event
 * `first` of the input: its rows to the caller's tables, or counted as not kept. */
static int import_args(const struct trove_bytes *buf, const char *where, uint64_t events,
                       size_t first, const struct table_opts *to, struct trove_diag *diag)
{
    struct trove_attrs a, m;
    struct trove_diag d = {0};
    size_t n0 = to->attrs ? to->attrs->n : 0;
    int rc;

    memset(&a, 0, sizeof a);
    memset(&m, 0, sizeof m);
    rc = trove_tables_read_args(buf->ptr, buf->len, events, &a, &m, &d);
    if (rc != TROVE_OK) {
        rc = trove_diag_set(diag, rc, d.offset, "%s: %s", where, in_msg(&d, rc));
    } else if (!to->attrs) {
        if (a.n + m.n)
            trove_warn(to->warnings, a.n + m.n,
                       "%s: not kept: %zu attribute rows (args, categories, other members); "
                       "what is made of the input here has no place for them",
                       where, a.n + m.n);
    } else if (trove_attrs_append(to->attrs, &a, 0, a.n, first, 0) != TROVE_OK ||
               (to->meta && trove_attrs_append(to->meta, &m, 0, m.n, 0, 0) != TROVE_OK)) {
        to->attrs->n = n0;
        rc = in_fail(diag, TROVE_ERR_NOMEM, "%s: out of memory", where);
    }
    trove_attrs_free(&a);
    trove_attrs_free(&m);
    return rc;
}

/* Read table t (its bytes in buf) into the capture, naming where it came from on error. An
 * event count other than the manifest's (want_rows; UINT64_MAX: none) is an error, or with
 * edited a warning. */
static int import_table(int t, const struct trove_bytes *buf, const char *where,
                        struct trove_events *ev, struct trove_names *names, uint64_t want_rows,
                        const struct table_opts *to, struct trove_diag *diag)
{
    struct trove_diag d = {0};
    size_t before = ev->len;
    int rc = t == TROVE_TABLE_FLOWS && to->flows
                 ? trove_tables_read_flows(buf->ptr, buf->len, to->flows, &d)
                 : trove_tables_read(t, buf->ptr, buf->len, ev, names, &d);
    if (rc != TROVE_OK)
        return trove_diag_set(diag, rc, d.offset, "%s: %s", where, in_msg(&d, rc));
    if (t != TROVE_TABLE_EVENTS || want_rows == UINT64_MAX || ev->len - before == want_rows)
        return 0;
    if (!to->edited)
        return in_fail(diag, TROVE_ERR_MISMATCH,
                       "%s: %zu events, but manifest.json says %llu (if the table was edited, "
                       "--edited takes it as it is)",
                       where, ev->len - before, (unsigned long long)want_rows);
    trove_warn(to->warnings, ev->len - before,
               "%s: %zu events where manifest.json says %llu; taking the edited table's", where,
               ev->len - before, (unsigned long long)want_rows);
    return 0;
}

/* A bundle (zip: the file at in, or mem) or a directory: manifest.json, then the tables. */
static int import_bundle(const char *in, const char *label, int is_dir, const uint8_t *mem,
                         size_t mem_len, struct trove_events *ev, struct trove_names *names,
                         const struct table_opts *to, struct trove_diag *diag)
{
    struct trove_bundle *b = NULL;
    struct trove_bundle_manifest m;
    struct trove_bytes buf = {0}, prof[TROVE_TABLE_COUNT_];
    struct trove_tables_profile_in pin;
    struct trove_diag d = {0};
    char where[4200], path[4096];
    size_t first = ev->len; /* this bundle's first event */
    int rc;

    memset(prof, 0, sizeof prof);
    memset(&pin, 0, sizeof pin);

    if (!is_dir) {
        rc = mem ? trove_bundle_open_mem(mem, mem_len, &b, &d)
                 : trove_bundle_open_file(in, &b, &d);
        if (rc != TROVE_OK) {
            const char *msg = in_msg(&d, rc);
            size_t n = strlen(in);
            if (!strncmp(msg, in, n) && !strncmp(msg + n, ": ", 2))
                msg += n + 2; /* the reader named the file already */
            return trove_diag_set(diag, rc, d.offset, "%s (read as a bundle): %s", label, msg);
        }
    }
    for (int t = -1; t < TROVE_TABLE_COUNT_; t++) {
        const char *entry = t < 0 ? TROVE_BUNDLE_MANIFEST_NAME : NULL;
        char ename[64];
        if (t >= 0) {
            snprintf(ename, sizeof ename, "%s.parquet", trove_table_name(t));
            entry = ename;
        }
        snprintf(where, sizeof where, "%s: %s", label, entry);
        if (t >= 0 && TROVE_TABLE_IS_PROFILE(t) && !to->profile)
            continue; /* not asked for */
        buf.len = 0;
        if (is_dir) {
            snprintf(path, sizeof path, "%s/%s", in, entry);
            if (access(path, F_OK) != 0 && t >= TROVE_TABLE_SAMPLES)
                continue; /* samples, frames and the optional tables may be left out */
            if ((rc = read_file(path, where, t < 0 ? TROVE_BUNDLE_MAX_MANIFEST : MAX_TABLE_BYTES,
                                &buf, diag)) != TROVE_OK)
                goto out;
        } else {
            if (t >= TROVE_TABLE_SAMPLES && trove_bundle_find(b, entry, NULL) != TROVE_OK)
                continue;
            rc = trove_bundle_read(b, entry, t < 0 ? TROVE_BUNDLE_MAX_MANIFEST : MAX_TABLE_BYTES,
                                   &buf, &d);
            if (rc != TROVE_OK) {
                rc = trove_diag_set(diag, rc, d.offset, "%s: %s", where, in_msg(&d, rc));
                goto out;
            }
        }
        if (t < 0) {
            if ((rc = trove_bundle_manifest_decode(buf.ptr, buf.len, &m, &d)) != TROVE_OK) {
                rc = trove_diag_set(diag, rc, d.offset, "%s: %s", where, in_msg(&d, rc));
                goto out;
            }
            continue;
        }
        if (TROVE_TABLE_IS_PROFILE(t)) { /* read together, once all are in */
            prof[t] = buf;
            memset(&buf, 0, sizeof buf);
            pin.buf[t] = prof[t].ptr;
            pin.len[t] = prof[t].len;
            continue;
        }
        if (t == TROVE_TABLE_ARGS) {
            if ((rc = import_args(&buf, where, ev->len - first, first, to, diag)) != TROVE_OK)
                goto out;
            continue;
        }
        if ((rc = import_table(t, &buf, where, ev, names,
                               t == TROVE_TABLE_EVENTS ? m.events : UINT64_MAX, to, diag)) !=
            TROVE_OK)
            goto out;
    }
    if (to->profile && (pin.buf[TROVE_TABLE_SAMPLES] || pin.buf[TROVE_TABLE_FRAMES] ||
                        pin.buf[TROVE_TABLE_STACKS] || pin.buf[TROVE_TABLE_SWITCHES])) {
        if ((rc = trove_tables_read_profile(&pin, to->profile, &d)) != TROVE_OK) {
            rc = trove_diag_set(diag, rc, d.offset, "%s: the profile's tables: %s", label,
                                in_msg(&d, rc));
            goto out;
        }
        if (trove_profile_sample_count(to->profile) != m.samples ||
            trove_profile_frame_count(to->profile) != m.frames) {
            if (!to->edited) {
                rc = in_fail(diag, TROVE_ERR_MISMATCH,
                             "%s: %zu samples and %zu frames, but manifest.json says %llu and "
                             "%llu (if the tables were edited, --edited takes them as they are)",
                          label, trove_profile_sample_count(to->profile),
                          trove_profile_frame_count(to->profile), (unsigned long long)m.samples,
                          (unsigned long long)m.frames);
                goto out;
            }
        }
    }
    rc = TROVE_OK;
out:
    trove_bytes_free(&buf);
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++)
        trove_bytes_free(&prof[t]);
    trove_bundle_close(b);
    return rc;
}

int in_load_tables(const char *path, const char *label, int kind, const uint8_t *mem,
                   size_t mem_len, const struct trove_input_options *opt,
                   struct trove_events *ev, struct trove_names *names,
                   struct trove_flows *flows, struct trove_diag *diag)
{
    const struct table_opts topts = {opt->edited, flows, opt->profile, opt->warnings,
                                     opt->attrs, opt->meta},
                            *to = &topts;
    struct trove_bytes buf = {0};
    size_t start = ev->len, fstart = flows ? flows->len : 0;
    size_t astart = opt->attrs ? opt->attrs->n : 0, mstart = opt->meta ? opt->meta->n : 0;
    char where[4200];
    int rc;

    if (kind == TROVE_INPUT_DIR || kind == TROVE_INPUT_BUNDLE) {
        rc = import_bundle(path, label, kind == TROVE_INPUT_DIR, mem, mem_len, ev, names, to,
                           diag);
    } else {
        struct trove_bytes view = {(uint8_t *)(uintptr_t)mem, mem_len, mem_len};
        snprintf(where, sizeof where, "%s (read as a Parquet events file)", label);
        rc = mem ? TROVE_OK : read_file(path, label, MAX_TABLE_BYTES, &buf, diag);
        if (rc == TROVE_OK)
            rc = import_table(TROVE_TABLE_EVENTS, mem ? &view : &buf, where, ev, names,
                              UINT64_MAX, to, diag);
    }
    if (rc != TROVE_OK) {
        ev->len = start;
        if (flows)
            flows->len = fstart;
        if (opt->attrs)
            opt->attrs->n = astart;
        if (opt->meta)
            opt->meta->n = mstart;
    }
    trove_bytes_free(&buf);
    return rc;
}
