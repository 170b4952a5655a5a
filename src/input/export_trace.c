/*
 * export_trace.c: the trace exports, Chrome JSON and Perfetto (in_export_trace, for
 * trove_export), written by the codec's streaming trace writer (trove_trace_writer_*,
 * include/trove/trace.h) through trove_output.
 *
 * A capture of the store (--capture NAME, or the input store:NAME) is walked through the
 * streaming pipeline a frame at a time (trove_input_capture_walk, as export_capture.c walks it for
 * Parquet) and each frame's events go straight into the writer, which sorts them in runs
 * spilled to an unlinked temporary file in $TMPDIR (else /tmp) and merges them as it writes:
 * the capture is never in memory, and the service's export of a trace (which is this
 * function) holds about the writer's bound whatever the capture's length. The flow rows and
 * names are read whole (they are small: an object each). A wire stream input (a file,
 * stdin) goes to the same writer a frame at a time as it is read, so it is never in memory
 * either; any other input is read whole as its reader needs (read.c; a Chrome JSON or
 * Perfetto input is parsed whole anyway) and then handed to the writer, so only its events
 * are held, not a second copy nor the output. The output file appears only once complete (trove_output); a pipe is
 * given a 1 MiB buffer, as the output is made while it is read.
 */
#define _GNU_SOURCE /* F_SETPIPE_SZ */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input_internal.h"
#include "trove/attrs.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/trace.h"
#include "trove/volume.h"

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

/* trove_input_capture_walk's frames: every event into the writer, the buffer emptied. */
static int walk_frames(void *ctx, struct trove_events *ev)
{
    struct walk *k = ctx;

    if ((k->rc = trove_trace_writer_add(k->w, ev->ev, ev->len, &k->diag)) != TROVE_OK)
        return k->rc;
    ev->len = 0;
    return 0;
}

/* A wire stream's frames, as they are read: every event into the writer. */
static int read_events(void *ctx, const struct trove_event *ev, size_t n,
                       const struct trove_names *names)
{
    struct walk *k = ctx;

    (void)names;
    return k->rc = trove_trace_writer_add(k->w, ev, n, &k->diag);
}

/* An environment variable's count in [lo, hi] into *out (left alone when it is not set). */
static int env_count(const char *name, uint64_t lo, uint64_t hi, uint64_t *out,
                     struct trove_diag *diag)
{
    const char *v = getenv(name);
    char *end;

    if (!v || !*v)
        return TROVE_OK;
    errno = 0;
    *out = strtoull(v, &end, 10);
    if (errno || *end || *v == '-' || *out < lo || *out > hi)
        return in_fail(diag, TROVE_ERR_INVALID, "%s: '%s' is not a count in %llu..%llu", name, v,
                       (unsigned long long)lo, (unsigned long long)hi);
    return TROVE_OK;
}

/* What a trace of this format cannot carry of a profile, counted as a warning: Chrome
 * JSON, the samples; either, the context switches (the events and flows go out whole). */
static void profile_warning(const struct trove_export_options *x, const struct trove_profile *p,
                            struct trove_warnings *warn)
{
    size_t ns = p ? trove_profile_sample_count(p) : 0, nw = p ? trove_profile_switch_count(p) : 0;

    if (ns && x->format != TROVE_EXPORT_PERFETTO)
        trove_warn(warn, ns,
                   "%zu samples (%zu stacks, %zu frames) not carried: Chrome JSON has no sample "
                   "events that Perfetto UI or trove read back; --format perfetto or bundle "
                   "keeps them",
                   ns, trove_profile_stack_count(p), trove_profile_frame_count(p));
    if (nw)
        trove_warn(warn, nw,
                   "%zu context switches not carried: a trace export has no place for them; "
                   "--format bundle keeps them",
                   nw);
}

int in_export_trace(const struct trove_export_options *x, struct trove_export_result *res,
                    struct trove_diag *diag)
{
    struct trove_input_options lo = x->in_opt;
    struct trove_trace_writer_options wo;
    struct trove_trace_writer_stats st;
    struct trove_trace_writer *w = NULL;
    struct trove_events ev = {0};
    struct trove_flows flows = {0};
    struct trove_names *names = NULL;
    struct trove_profile *profile = NULL;
    struct trove_attrs attrs, meta;
    struct trove_diag d = {0};
    struct trove_sink sink;
    struct trove_output o = {0};
    struct walk k;
    struct trove_input_sink in_sink = {read_events, NULL, &k};
    int streamed = 0;
    const char *what = x->format == TROVE_EXPORT_PERFETTO ? "perfetto" : "chrome-json";
    const char *cap = x->capture ? x->capture
                      : x->in    ? trove_input_capture_name(x->in, x->in_opt.format)
                                 : NULL;
    uint64_t to_ns = x->to_ns ? x->to_ns : UINT64_MAX;
    uint64_t run = x->trace_run_events, fan_in = x->trace_fan_in;
    int rc;

    memset(&k, 0, sizeof k);
    memset(&wo, 0, sizeof wo);
    memset(&attrs, 0, sizeof attrs);
    memset(&meta, 0, sizeof meta);
    /* Not given: the environment's, for tests and benchmarks of the service's export too. */
    if ((!run && (rc = env_count("TROVE_EXPORT_RUN_EVENTS", 1, SIZE_MAX, &run, diag))) ||
        (!fan_in &&
         (rc = env_count("TROVE_EXPORT_FAN_IN", 2, TROVE_TRACE_FAN_IN_MAX, &fan_in, diag))))
        return rc;
    wo.format = x->format == TROVE_EXPORT_PERFETTO ? TROVE_TRACE_PERFETTO
                                                   : TROVE_TRACE_CHROME_JSON;
    wo.run_events = (size_t)run;
    wo.fan_in = (unsigned)fan_in;
    if (trove_names_new(&names) != TROVE_OK ||
        trove_trace_writer_new(&wo, &w) != TROVE_OK) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    k.w = w;
    if (cap) {
        /* the flow rows first (few, and a capture whose flows cannot be read fails before
         * the long walk), then the events a frame at a time; the profile to count what the
         * trace cannot carry */
        const char *store = x->capture ? x->store : x->in_opt.store;
        if ((rc = trove_input_capture_flows(store, cap, x->from_ns, to_ns, &flows, diag)) !=
                TROVE_OK ||
            (rc = trove_input_capture_profile(store, cap, x->from_ns, to_ns, &profile, diag)) !=
                TROVE_OK)
            goto out;
        lo.attrs = &attrs; /* the rows of the events walked, by their index among them */
        lo.meta = &meta;
        if ((rc = trove_input_capture_walk(store, cap, x->from_ns, to_ns, &lo, &ev, names,
                                           walk_frames, &k, diag)) != TROVE_OK) {
            if (k.rc != TROVE_OK)
                trove_diag_set(diag, k.rc, k.diag.offset, "%s: writing %s: %s", x->out, what,
                               in_msg(&k.diag, k.rc));
            goto out;
        }
        walk_frames(&k, &ev); /* what the walk left in the buffer (sets k.rc) */
    } else {
        if (trove_profile_new(&profile) != TROVE_OK) {
            rc = in_fail(diag, TROVE_ERR_NOMEM, "out of memory");
            goto out;
        }
        lo.profile = profile; /* a bundle's samples, to be counted */
        lo.attrs = &attrs;
        lo.meta = &meta;
        /* a wire stream a frame at a time into the writer; any other kind read whole */
        rc = in_read_import(x->in, &lo, &in_sink, &ev, names, &flows, &streamed, diag);
        if (rc != TROVE_OK && k.rc != TROVE_OK)
            trove_diag_set(diag, k.rc, k.diag.offset, "%s: writing %s: %s", x->out, what,
                           in_msg(&k.diag, k.rc));
        if (rc != TROVE_OK)
            goto out;
        if (!streamed)
            k.rc = trove_trace_writer_add(w, ev.ev, ev.len, &k.diag);
    }
    trove_events_free(&ev); /* the writer has them */
    if (k.rc != TROVE_OK) {
        rc = trove_diag_set(diag, k.rc, k.diag.offset, "%s: writing %s: %s", x->out, what,
                            in_msg(&k.diag, k.rc));
        goto out;
    }
    if ((rc = trove_output_open(x->out, x->format == TROVE_EXPORT_PERFETTO, &o, diag)) !=
        TROVE_OK)
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
        in_fail(diag, rc, "%s: writing %s: %s", x->out, what, trove_strerror(rc));
        goto out;
    }
    if (x->format == TROVE_EXPORT_PERFETTO && meta.n)
        trove_warn(x->in_opt.warnings, meta.n,
                   "%zu members of the trace (its metadata) not written: a Perfetto trace has "
                   "no place for them; --format chrome-json or bundle keeps them",
                   meta.n);
    if ((rc = trove_trace_writer_attrs(w, &attrs, &meta)) != TROVE_OK) {
        in_fail(diag, rc, "%s: writing %s: the attributes go back in event", x->out, what);
        goto out;
    }
    rc = trove_trace_writer_finish(w, names, flows.f, flows.len, &sink, &st, &d);
    if (rc != TROVE_OK) {
        trove_diag_set(diag, rc, d.offset, "%s: writing %s: %s", x->out, what, in_msg(&d, rc));
        goto out;
    }
    if ((rc = trove_output_commit(&o, diag)) != TROVE_OK)
        goto out;
    profile_warning(x, profile, x->in_opt.warnings);
    res->events = st.events;
    res->bytes = st.bytes;
    res->flow_rows = flows.len;
    res->samples = profile ? trove_profile_sample_count(profile) : 0;
    res->samples_carried = st.samples;
    res->runs = st.runs;
    res->passes = st.passes;
    res->spill_bytes = st.spill_bytes;
out:
    trove_output_abort(&o);
    trove_trace_writer_free(w);
    trove_events_free(&ev);
    trove_flows_free(&flows);
    trove_names_free(names);
    trove_attrs_free(&attrs);
    trove_attrs_free(&meta);
    trove_profile_free(profile);
    return rc;
}

int trove_export(const struct trove_export_options *x, struct trove_export_result *res,
                 struct trove_diag *diag)
{
    struct trove_diag local = {0};
    struct trove_export_result r;

    if (!diag)
        diag = &local;
    memset(diag, 0, sizeof *diag);
    memset(&r, 0, sizeof r);
    if (!x || !x->out || (!x->capture == !x->in))
        return in_fail(diag, TROVE_ERR_INVALID, "an export needs an output and one of a "
                                                "capture or an input");
    if (x->format < TROVE_EXPORT_BUNDLE || x->format > TROVE_EXPORT_PERFETTO)
        return in_fail(diag, TROVE_ERR_INVALID, "unknown export format %d", x->format);
    if (x->deflate && x->format != TROVE_EXPORT_BUNDLE)
        return in_fail(diag, TROVE_ERR_INVALID, "--zip-deflate applies to --format bundle only");
    if (x->to_ns && x->from_ns > x->to_ns)
        return in_fail(diag, TROVE_ERR_INVALID, "--from-ns %llu is after --to-ns %llu",
                       (unsigned long long)x->from_ns, (unsigned long long)x->to_ns);
    int rc = x->format >= TROVE_EXPORT_CHROME_JSON ? in_export_trace(x, &r, diag)
                                                   : in_export_tables(x, &r, diag);
    if (rc == TROVE_OK && res)
        *res = r;
    return rc;
}
