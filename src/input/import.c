/*
 * serve_import.c: the body of POST /api/captures/import, as `trove serve` stores it
 * (trove/serve.h, import_fn; cli.h, cli_serve_import). The service has written the body to a
 * temporary file; this reads it with the CLI's one input layer (cli_input.c: any kind trove
 * reads, told from its bytes) and stores it as a capture through the service's own store
 * handle, on its store thread. The whole body is read and checked before anything is put,
 * so a body that fails leaves the store as it was. In a file of its own, apart from the
 * service's command, so that fuzz/fuzz_import.c runs this very function on hostile bodies.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "trove/profile.h"
#include "trove/capture.h"
#include "trove/serve.h"

int cli_serve_import(void *ctx, struct trove_store *s, const char *name, int append,
                     const char *path, struct trove_serve_import_result *res, char *err,
                     size_t errlen)
{
    struct cli_load_options lo;
    struct trove_events ev = {0};
    struct trove_flows flows = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info;
    struct trove_capture_options co;
    struct trove_diag diag = {0};
    int rc, status = 500;

    memset(&co, 0, sizeof co);
    co.segment_format = ctx ? ((const struct cli_serve_ctx *)ctx)->segment_format : 0;
    memset(&lo, 0, sizeof lo);
    lo.quiet = 1;
    memset(&info, 0, sizeof info);
    if (trove_names_new(&names) != TROVE_OK) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (!append && trove_profile_new(&lo.profile) != TROVE_OK) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    cli_error_capture(err, errlen); /* the input layer's one line, for the answer */
    rc = cli_load_flows("import", path, &lo, &ev, names, &flows);
    cli_error_capture(NULL, 0);
    if (rc != 0) {
        status = 400; /* the body: err says what is wrong with it */
        goto out;
    }
    if (append) {
        struct trove_capture_writer *w = NULL;
        if (flows.len > 0) {
            snprintf(err, errlen, "an append carries no flow rows; import it whole instead");
            status = 400;
            goto out;
        }
        rc = trove_capture_writer_open(s, name, 1, &co, &w, &diag);
        if (rc == TROVE_OK && (rc = trove_capture_writer_names(w, names, &diag)) == TROVE_OK &&
            (rc = trove_capture_writer_add(w, ev.ev, ev.len, &diag)) == TROVE_OK)
            rc = trove_capture_writer_commit(w, &info, &diag);
        trove_capture_writer_close(w);
    } else {
        rc = trove_capture_write_profile(s, name, ev.ev, ev.len, names, flows.f, flows.len,
                                         lo.profile, &co, &info, &diag);
    }
    if (rc != TROVE_OK) {
        snprintf(err, errlen, "%s", cli_diag_msg(&diag, rc));
        status = rc == TROVE_ERR_NOTFOUND ? 404 : rc == TROVE_ERR_EXISTS ? 409
                 : rc == TROVE_ERR_INVALID ? 400 : 500;
        goto out;
    }
    res->events = ev.len;
    res->new_objects = info.new_objects;
    res->new_bytes = info.new_bytes;
    status = 0;
out:
    trove_events_free(&ev);
    trove_flows_free(&flows);
    trove_profile_free(lo.profile);
    trove_names_free(names);
    return status;
}
