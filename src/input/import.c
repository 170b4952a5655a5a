/*
 * import.c: an input of any kind stored as a capture (trove/input.h: trove_import) — what the
 * service does with the body of POST /api/captures/import, on its store thread, through its
 * own store handle. The whole input is read and checked before anything is put, so an input
 * that fails leaves the store as it was; its errors name it as the caller does (the upload's
 * name, never the temporary file the body was spooled to). fuzz/fuzz_import.c runs this very
 * function on hostile bodies.
 */
#include <stdio.h>
#include <string.h>

#include "input_internal.h"
#include "trove/capture.h"
#include "trove/profile.h"

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
    int rc;

    if (!diag)
        diag = &local;
    memset(diag, 0, sizeof *diag);
    opt = opt ? opt : &none;
    memset(res, 0, sizeof *res);
    memset(&co, 0, sizeof co);
    memset(&info, 0, sizeof info);
    co.segment_format = opt->segment_format;
    co.segment_bytes = opt->segment_bytes;
    lo = opt->in;
    lo.profile = NULL;
    if (trove_names_new(&names) != TROVE_OK ||
        (!opt->append && trove_profile_new(&lo.profile) != TROVE_OK)) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((rc = trove_input_load(path, &lo, &ev, names, &flows, diag)) != TROVE_OK) {
        res->bad_input = 1; /* diag says what is wrong with it */
        goto out;
    }
    if (opt->append) {
        struct trove_capture_writer *w = NULL;
        if (flows.len > 0) {
            res->bad_input = 1;
            rc = in_fail(diag, TROVE_ERR_INVALID,
                         "an append carries no flow rows; import it whole instead");
            goto out;
        }
        rc = trove_capture_writer_open(s, name, 1, &co, &w, diag);
        if (rc == TROVE_OK && (rc = trove_capture_writer_names(w, names, diag)) == TROVE_OK &&
            (rc = trove_capture_writer_add(w, ev.ev, ev.len, diag)) == TROVE_OK)
            rc = trove_capture_writer_commit(w, &info, diag);
        trove_capture_writer_close(w);
    } else {
        rc = trove_capture_write_profile(s, name, ev.ev, ev.len, names, flows.f, flows.len,
                                         lo.profile, &co, &info, diag);
    }
    if (rc != TROVE_OK) {
        if (!diag->msg[0])
            in_fail(diag, rc, "%s", trove_strerror(rc));
        in_remote_detail(s, rc, diag);
        /* the capture's writer refusing what was read (an event it does not store, say) is
         * the input's fault too; a name the caller gave was checked before */
        res->bad_input = rc == TROVE_ERR_INVALID;
        goto out;
    }
    res->events = ev.len;
    res->flow_rows = flows.len;
    res->samples = lo.profile ? trove_profile_sample_count(lo.profile) : 0;
    res->new_objects = info.new_objects;
    res->new_bytes = info.new_bytes;
out:
    trove_events_free(&ev);
    trove_flows_free(&flows);
    trove_profile_free(lo.profile);
    trove_names_free(names);
    return rc;
}
