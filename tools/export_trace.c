/*
 * export_trace.c: `trove export --format chrome-json|perfetto` (cli_export_trace, which
 * cmd_export.c calls): the input read as every export reads it (capture_load.c, or a capture
 * of the store with its flows), then written by the library (include/trove/trace.h) through
 * cli_out. Perfetto input is trace_load.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trove/capture.h"
#include "trove/trace.h"
#include "trove/volume.h"

int cli_trace_format_parse(const char *s)
{
    if (!strcmp(s, "chrome-json") || !strcmp(s, "json"))
        return CLI_TRACE_CHROME_JSON;
    if (!strcmp(s, "perfetto"))
        return CLI_TRACE_PERFETTO;
    return 0;
}

int cli_export_trace(const struct cli_trace_export *x)
{
    struct cli_load_options lo = x->lo;
    struct trove_events ev = {0};
    struct trove_flows flows = {0};
    struct trove_names *names = NULL;
    struct trove_bytes buf = {0};
    struct trove_diag diag = {0};
    struct trove_trace t;
    struct cli_out o = {0};
    const char *what = x->format == CLI_TRACE_PERFETTO ? "perfetto" : "chrome-json";
    int rc, status = 1;

    lo.quiet = x->quiet;
    if (trove_names_new(&names) != TROVE_OK) {
        cli_error("export", "out of memory");
        goto out;
    }
    if (x->capture) {
        if (cli_capture_load("export", x->store, x->capture, x->from_ns, x->to_ns, x->quiet, &ev,
                             names) ||
            cli_capture_flows("export", x->store, x->capture, x->from_ns, x->to_ns, &flows))
            goto out;
    } else if (cli_load_flows("export", x->in, &lo, &ev, names, &flows) != 0) {
        goto out;
    }
    t.events = ev.ev;
    t.n_events = ev.len;
    t.names = names;
    t.flows = flows.f;
    t.n_flows = flows.len;
    rc = x->format == CLI_TRACE_PERFETTO ? trove_perfetto_write(&t, &buf, &diag)
                                         : trove_chrome_export(&t, &buf, &diag);
    if (rc != TROVE_OK) {
        cli_error("export", "%s: writing %s: %s", x->out, what, cli_diag_msg(&diag, rc));
        goto out;
    }
    if (cli_out_open("export", x->out, x->format == CLI_TRACE_PERFETTO, &o))
        goto out;
    if (fwrite(buf.ptr, 1, buf.len, o.f) != buf.len) {
        cli_error("export", "writing %s: %s", o.path, strerror(errno ? errno : EIO));
        goto out;
    }
    if (cli_out_commit("export", &o))
        goto out;
    if (!x->quiet)
        fprintf(stderr, "trove export: %zu events, %zu flow rows -> %s (%s): %zu bytes, %.2f "
                        "bytes/event\n",
                ev.len, flows.len, x->out, what, buf.len,
                ev.len ? (double)buf.len / (double)ev.len : 0.0);
    status = 0;
out:
    cli_out_abort(&o);
    trove_bytes_free(&buf);
    trove_events_free(&ev);
    trove_flows_free(&flows);
    trove_names_free(names);
    return status;
}
