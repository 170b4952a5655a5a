/*
 * export_trace.c: `trove export --format chrome-json|perfetto` (cli_export_trace, which
 * cmd_export.c calls), written by the library's streaming trace writer (trove_trace_writer_*,
 * include/trove/trace.h) through cli_out.
 *
 * A capture of the store (--capture NAME, or the input store:NAME) is walked through the
 * streaming pipeline a frame at a time (cli_capture_walk, as export_capture.c walks it for
 * Parquet) and each frame's events go straight into the writer, which sorts them in runs
 * spilled to an unlinked temporary file in $TMPDIR (else /tmp) and merges them as it writes:
 * the capture is never in memory, and the service's export of a trace (which is this
 * command) holds about the writer's bound whatever the capture's length. The flow rows and
 * names are read whole (they are small: an object each). A file input is read whole as
 * every export reads it (capture_load.c; a Chrome JSON or Perfetto input is parsed whole
 * anyway) and then handed to the same writer, so only its events are held, not a second
 * copy nor the output. The output file appears only once complete (cli_out); a pipe is
 * given a 1 MiB buffer, as the output is made while it is read.
 */
#define _GNU_SOURCE /* F_SETPIPE_SZ */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trove/capture.h"
#include "trove/profile.h"
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

/* The writer's sink: the output file. */
static int file_write(void *ctx, const void *p, size_t n)
{
    errno = 0;
    if (fwrite(p, 1, n, (FILE *)ctx) != n)
        return -(errno ? errno : EIO);
    return TROVE_OK;
}

/* The walk's state: the writer the frames go into, and its error. */
struct walk {
    struct trove_trace_writer *w;
    struct trove_diag diag;
    int rc;
};

/* cli_capture_walk's frames: every event into the writer, the buffer emptied. */
static int walk_frames(void *ctx, struct trove_events *ev)
{
    struct walk *k = ctx;

    if ((k->rc = trove_trace_writer_add(k->w, ev->ev, ev->len, &k->diag)) != TROVE_OK)
        return 1;
    ev->len = 0;
    return 0;
}

/* An environment variable's count in [lo, hi] into *out (left alone when it is not set).
 * 0, or 1 after an error. */
static int env_count(const char *name, uint64_t lo, uint64_t hi, uint64_t *out)
{
    const char *v = getenv(name);

    if (!v || !*v)
        return 0;
    if (cli_parse_u64(v, out) || *out < lo || *out > hi)
        return cli_error("export", "%s: '%s' is not a count in %llu..%llu", name, v,
                         (unsigned long long)lo, (unsigned long long)hi);
    return 0;
}

/* What a trace of this format cannot carry of a profile, counted as a warning: Chrome
 * JSON, the samples; either, the context switches (the events and flows go out whole). */
static void profile_warning(const struct cli_trace_export *x, const struct trove_profile *p,
                            struct cli_warnings *warn)
{
    size_t ns = p ? trove_profile_sample_count(p) : 0, nw = p ? trove_profile_switch_count(p) : 0;

    if (ns && x->format != CLI_TRACE_PERFETTO)
        cli_warn("export", x->quiet, warn, ns,
                 "%zu samples (%zu stacks, %zu frames) not carried: Chrome JSON has no sample "
                 "events that Perfetto UI or trove read back; --format perfetto or bundle keeps "
                 "them",
                 ns, trove_profile_stack_count(p), trove_profile_frame_count(p));
    if (nw)
        cli_warn("export", x->quiet, warn, nw,
                 "%zu context switches not carried: a trace export has no place for them; "
                 "--format bundle keeps them",
                 nw);
}

int cli_export_trace(const struct cli_trace_export *x)
{
    struct cli_load_options lo = x->lo;
    struct trove_trace_writer_options wo;
    struct trove_trace_writer_stats st;
    struct trove_trace_writer *w = NULL;
    struct trove_events ev = {0};
    struct trove_flows flows = {0};
    struct trove_names *names = NULL;
    struct trove_profile *profile = NULL;
    struct trove_diag diag = {0};
    struct cli_warnings warn;
    struct trove_sink sink;
    struct cli_out o = {0};
    struct walk k;
    const char *what = x->format == CLI_TRACE_PERFETTO ? "perfetto" : "chrome-json";
    const char *cap = x->capture ? x->capture
                      : x->in    ? cli_input_capture_name(x->in, x->lo.format)
                                 : NULL;
    uint64_t run = 0, fan_in = 0;
    int rc, status = 1;

    memset(&k, 0, sizeof k);
    memset(&wo, 0, sizeof wo);
    memset(&warn, 0, sizeof warn);
    lo.quiet = x->quiet;
    lo.warnings = &warn;
    if (env_count("TROVE_EXPORT_RUN_EVENTS", 1, SIZE_MAX, &run) ||
        env_count("TROVE_EXPORT_FAN_IN", 2, TROVE_TRACE_FAN_IN_MAX, &fan_in))
        return 1;
    wo.format = x->format == CLI_TRACE_PERFETTO ? TROVE_TRACE_PERFETTO : TROVE_TRACE_CHROME_JSON;
    wo.run_events = (size_t)run;
    wo.fan_in = (unsigned)fan_in;
    if (trove_names_new(&names) != TROVE_OK ||
        trove_trace_writer_new(&wo, &w) != TROVE_OK) {
        cli_error("export", "out of memory");
        goto out;
    }
    k.w = w;
    if (cap) {
        /* the flow rows first (few, and a capture whose flows cannot be read fails before
         * the long walk), then the events a frame at a time; the profile to count what the
         * trace cannot carry */
        if (cli_capture_flows("export", x->store, cap, x->from_ns, x->to_ns, &flows) ||
            cli_capture_profile("export", x->store, cap, x->from_ns, x->to_ns, &profile))
            goto out;
        if (cli_capture_walk("export", x->store, cap, x->from_ns, x->to_ns, x->quiet, &ev, names,
                             walk_frames, &k)) {
            if (k.rc != TROVE_OK)
                cli_error("export", "%s: writing %s: %s", x->out, what,
                          cli_diag_msg(&k.diag, k.rc));
            goto out;
        }
        walk_frames(&k, &ev); /* what the walk left in the buffer (sets k.rc) */
    } else {
        if (trove_profile_new(&profile) != TROVE_OK) {
            cli_error("export", "out of memory");
            goto out;
        }
        lo.profile = profile; /* a bundle's samples, to be counted */
        if (cli_load_flows("export", x->in, &lo, &ev, names, &flows) != 0)
            goto out;
        k.rc = trove_trace_writer_add(w, ev.ev, ev.len, &k.diag);
    }
    trove_events_free(&ev); /* the writer has them */
    if (k.rc != TROVE_OK) {
        cli_error("export", "%s: writing %s: %s", x->out, what, cli_diag_msg(&k.diag, k.rc));
        goto out;
    }
    if (cli_out_open("export", x->out, x->format == CLI_TRACE_PERFETTO, &o))
        goto out;
#ifdef F_SETPIPE_SZ
    /* A pipe (the service's export reads one, waking every few ms when it is empty) takes
     * 1 MiB at a time rather than 64 KiB: the output is made as fast as it is read. */
    if (o.direct)
        (void)fcntl(fileno(o.f), F_SETPIPE_SZ, 1 << 20);
#endif
    sink.write = file_write;
    sink.ctx = o.f;
    if (profile && (rc = trove_trace_writer_profile(w, profile)) != TROVE_OK) {
        cli_error("export", "%s: writing %s: %s", x->out, what, trove_strerror(rc));
        goto out;
    }
    rc = trove_trace_writer_finish(w, names, flows.f, flows.len, &sink, &st, &diag);
    if (rc != TROVE_OK) {
        cli_error("export", "%s: writing %s: %s", x->out, what, cli_diag_msg(&diag, rc));
        goto out;
    }
    if (cli_out_commit("export", &o))
        goto out;
    profile_warning(x, profile, &warn);
    if (x->json) {
        const char *in = x->capture ? x->capture : x->in;
        fputs("{\"input\":", stdout);
        cli_json_string(stdout, in, strlen(in));
        fputs(",\"output\":", stdout);
        cli_json_string(stdout, x->out, strlen(x->out));
        printf(",\"format\":\"%s\",\"events\":%llu,\"flow_rows\":%zu,\"samples\":%zu,"
               "\"samples_carried\":%llu,\"bytes\":%llu,\"bytes_per_event\":%.4f,",
               what, (unsigned long long)st.events, flows.len,
               profile ? trove_profile_sample_count(profile) : (size_t)0,
               (unsigned long long)st.samples,
               (unsigned long long)st.bytes,
               st.events ? (double)st.bytes / (double)st.events : 0.0);
        cli_json_warnings(stdout, &warn);
        fputs("}\n", stdout);
        if (fflush(stdout) != 0) {
            cli_error("export", "writing stdout: %s", strerror(errno));
            goto out;
        }
    } else if (!x->quiet) {
        fprintf(stderr, "trove export: %llu events, %zu flow rows%s -> %s (%s): %llu bytes, %.2f "
                        "bytes/event\n",
                (unsigned long long)st.events, flows.len,
                st.samples ? ", the profile's samples" : "", x->out, what,
                (unsigned long long)st.bytes,
                st.events ? (double)st.bytes / (double)st.events : 0.0);
        if (lo.verbose && st.runs)
            fprintf(stderr, "trove export: sorted in %llu runs (%llu merge passes, %llu bytes) "
                            "of a temporary file\n",
                    (unsigned long long)st.runs, (unsigned long long)st.passes,
                    (unsigned long long)st.spill_bytes);
    }
    status = 0;
out:
    cli_out_abort(&o);
    trove_trace_writer_free(w);
    trove_events_free(&ev);
    trove_flows_free(&flows);
    trove_names_free(names);
    trove_profile_free(profile);
    return status;
}
