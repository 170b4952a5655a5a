/*
 * trace_writer.c: the streaming trace writer (trove_trace_writer_*, include/trove/trace.h),
 * and the whole-trace writers trove_chrome_export and trove_perfetto_write, which are it with
 * a run as long as the trace.
 *
 * Both formats write a capture's events in the order of trace_sched.c (by time, each begin
 * before what it encloses and each end after), and a capture comes in the order its
 * producers sent it. So the writer sorts, in memory bounded by its options:
 *
 *   add     each event (with its index, its seq) into the START sorter (trace_spill.c):
 *           runs of run_events, sorted and spilled to a temporary file when they fill;
 *           Perfetto also notes its (pid, tid) (the tracks) and checks its end
 *   finish  1. the starts merged (fan_in runs at a time), read once: each paired event
 *              (Chrome: async spans; Perfetto: slices, which get their lanes here, in
 *              START order) into the END sorter, spilled the same way
 *           2. the head: Chrome's metadata, or Perfetto's clock and track descriptors
 *              (which needed the lanes, hence the first pass)
 *           3. the starts read again, merged with the ends and the flow rows (in memory,
 *              sorted) as trace_sched.c says, each item written as it comes (Perfetto puts
 *              each slice on its lane again, the same lane), and the tail
 *
 * A capture whose events fit in one run is sorted in memory and never touches the disk;
 * the ends are then in memory too. The output goes to the sink in pieces of 64 KiB. Every
 * error is sticky: the writer can then only be freed.
 */
#include "perfetto_profile.h"
#include "trace_emit.h"
#include "trove/chrome.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct trove_trace_writer {
    struct trove_trace_writer_options opt;
    char *tmp_dir;
    struct trove__tsort *starts;
    struct trove__tset tracks;   /* Perfetto: the events' (pid, tid) */
    uint64_t events, paired;
    const struct trove_profile *profile; /* borrowed until the finish (Perfetto) */
    const struct trove_attrs *attrs, *meta; /* borrowed until the finish (Chrome JSON) */
    int rc;                      /* sticky */
    int finished;
};

static const char *format_name(int format)
{
    return format == TROVE_TRACE_PERFETTO ? "a Perfetto trace" : "Chrome JSON";
}

static int paired(int format, const struct trove__tsrec *r)
{
    return format == TROVE_TRACE_PERFETTO ? trove__pf_slice(r->kind, r->dur_ns)
                                          : trove__cj_paired(r->kind, r->extra, r->tid);
}

int trove_trace_writer_new(const struct trove_trace_writer_options *opt,
                           struct trove_trace_writer **out)
{
    struct trove_trace_writer *w;
    struct trove__tsort_options so;
    const char *dir;
    int rc;

    if (!out)
        return TROVE_ERR_INVALID;
    *out = NULL;
    if (!opt || (opt->format != TROVE_TRACE_CHROME_JSON && opt->format != TROVE_TRACE_PERFETTO) ||
        opt->fan_in == 1 || opt->fan_in > TROVE_TRACE_FAN_IN_MAX)
        return TROVE_ERR_INVALID;
    if (!(w = trove__calloc(1, sizeof *w)))
        return TROVE_ERR_NOMEM;
    w->opt = *opt;
    if (!w->opt.run_events)
        w->opt.run_events = TROVE_TRACE_RUN_EVENTS_DEFAULT;
    if (!w->opt.fan_in)
        w->opt.fan_in = TROVE_TRACE_FAN_IN_DEFAULT;
    dir = opt->tmp_dir;
    if (!dir || !*dir)
        dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    if (!(w->tmp_dir = trove__strdup(dir))) {
        free(w);
        return TROVE_ERR_NOMEM;
    }
    w->opt.tmp_dir = w->tmp_dir;
    so.run = w->opt.run_events;
    so.fan_in = w->opt.fan_in;
    so.dir = w->tmp_dir;
    if ((rc = trove__tsort_new(TROVE__TORDER_START, &so, &w->starts)) != TROVE_OK) {
        trove_trace_writer_free(w);
        return rc;
    }
    *out = w;
    return TROVE_OK;
}

void trove_trace_writer_free(struct trove_trace_writer *w)
{
    if (!w)
        return;
    trove__tsort_free(w->starts);
    trove__tset_free(&w->tracks);
    free(w->tmp_dir);
    free(w);
}

/* The sticky error: rc, which also says out of memory in diag when that is what it is. */
static int fail(struct trove_trace_writer *w, int rc, struct trove_diag *diag)
{
    if (rc == TROVE_ERR_NOMEM)
        TROVE_FAIL(diag, rc, 0, "out of memory writing %llu events as %s",
                   (unsigned long long)w->events, format_name(w->opt.format));
    return w->rc = rc;
}

int trove_trace_writer_add(struct trove_trace_writer *w, const struct trove_event *events,
                           size_t n, struct trove_diag *diag)
{
    int rc;

    if (!w || (!events && n))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "trace writer: no writer or no events");
    if (w->rc != TROVE_OK)
        return w->rc;
    if (w->finished)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "trace writer: events after the finish");
    for (size_t i = 0; i < n; i++) {
        const struct trove_event *e = &events[i];
        struct trove__tsrec r = {.start_ns = e->start_ns, .dur_ns = e->dur_ns,
                                 .seq = w->events,    .depth = e->depth,
                                 .pid = e->pid,       .tid = e->tid,
                                 .name_id = e->name_id, .kind = e->kind,
                                 .extra = e->extra,   .lane = 0};
        if (w->events >= TROVE__TSREC_SEQ_MAX)
            return w->rc = TROVE_FAIL(diag, TROVE_ERR_LIMIT, w->events,
                                      "trace writer: more than 2^56 events");
        if (w->opt.format == TROVE_TRACE_CHROME_JSON && e->kind == TROVE_KIND_COUNTER &&
            !isfinite(trove_counter_value(e))) {
            rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, w->events,
                            "event %llu: a counter whose value is not a finite number; JSON "
                            "cannot hold it",
                            (unsigned long long)w->events);
            return w->rc = rc;
        }
        if (w->opt.format == TROVE_TRACE_PERFETTO) {
            if (e->kind != TROVE_KIND_COUNTER && e->dur_ns > UINT64_MAX - e->start_ns) {
                rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, w->events,
                                "event %llu ends past 2^64 ns (start %llu, dur %llu)",
                                (unsigned long long)w->events, (unsigned long long)e->start_ns,
                                (unsigned long long)e->dur_ns);
                return w->rc = rc;
            }
            if ((rc = trove__tset_add(&w->tracks, e->pid, e->tid,
                                      e->kind == TROVE_KIND_COUNTER)) != TROVE_OK)
                return fail(w, rc, diag);
        }
        if ((rc = trove__tsort_add(w->starts, &r, diag)) != TROVE_OK)
            return fail(w, rc, diag);
        w->paired += paired(w->opt.format, &r) != 0;
        w->events++;
    }
    return TROVE_OK;
}

/* Step 1: the paired events, from the starts in START order, into a new END sorter (*out;
 * NULL when nothing is paired); Perfetto gives each slice its lane on the way. */
static int sort_ends(struct trove_trace_writer *w, struct trove__pf *pf, struct trove__tsort **out,
                     struct trove_diag *diag)
{
    struct trove__tsort_options so = {w->opt.run_events, w->opt.fan_in, w->tmp_dir};
    const struct trove__tsrec *r;
    int rc;

    *out = NULL;
    if (w->paired == 0)
        return TROVE_OK;
    if ((rc = trove__tsort_new(TROVE__TORDER_END, &so, out)) != TROVE_OK)
        return rc;
    while ((r = trove__tsort_head(w->starts)) != NULL) {
        if (paired(w->opt.format, r)) {
            struct trove__tsrec e = *r;
            if ((pf && (rc = trove__pf_lane(pf, &e, &e.lane, diag)) != TROVE_OK) ||
                (rc = trove__tsort_add(*out, &e, diag)) != TROVE_OK)
                return rc;
        }
        if ((rc = trove__tsort_next(w->starts, diag)) != TROVE_OK)
            return rc;
    }
    if ((rc = trove__tsort_finish(*out, diag)) != TROVE_OK ||
        (rc = trove__tsort_rewind(w->starts, diag)) != TROVE_OK)
        return rc;
    return TROVE_OK;
}

/* Steps 2 and 3: everything, in the schedule's order, to o. */
static int write_all(struct trove__cj *cj, struct trove__pf *pf, struct trove__tsched *ts,
                     const struct trove_profile *profile, uint64_t *samples,
                     struct trove__tout *o, struct trove_diag *diag)
{
    struct trove__titem it;
    int rc, more;

    if ((rc = pf ? trove__pf_begin(pf, trove__tsched_first_ts(ts), o)
                 : trove__cj_begin(cj, o)) != TROVE_OK)
        return rc;
    while ((more = trove__tsched_next(ts, &it, diag)) == 1) {
        if (it.what == TROVE__TS_FLOW) {
            const struct trove_flow *f = &ts->flows[it.flow];
            rc = pf ? trove__pf_flow(pf, f, o) : trove__cj_flow(cj, f, o);
        } else if (pf) {
            if (it.what == TROVE__TS_START && trove__pf_slice(it.r.kind, it.r.dur_ns) &&
                (rc = trove__pf_lane(pf, &it.r, &it.r.lane, diag)) != TROVE_OK)
                return rc;
            rc = trove__pf_event(pf, &it.r, it.what == TROVE__TS_END, o);
        } else {
            rc = trove__cj_event(cj, &it.r, it.what == TROVE__TS_END, o, diag);
        }
        if (rc != TROVE_OK)
            return rc;
    }
    if (more < 0)
        return more;
    if ((rc = pf ? trove__pf_end(pf, o) : trove__cj_end(cj, o)) != TROVE_OK)
        return rc;
    if (pf && (rc = trove__pf_profile_write(profile, 1, o, samples)) != TROVE_OK)
        return rc;
    return trove__tout_flush(o, 0);
}

int trove_trace_writer_profile(struct trove_trace_writer *w, const struct trove_profile *p)
{
    if (!w || w->finished)
        return TROVE_ERR_INVALID;
    w->profile = p;
    return TROVE_OK;
}

int trove_trace_writer_attrs(struct trove_trace_writer *w, const struct trove_attrs *attrs,
                             const struct trove_attrs *meta)
{
    if (!w || w->finished)
        return TROVE_ERR_INVALID;
    for (size_t i = 1; attrs && i < attrs->n; i++)
        if (attrs->rows[i].event < attrs->rows[i - 1].event)
            return TROVE_ERR_INVALID;
    w->attrs = attrs;
    w->meta = meta;
    return TROVE_OK;
}

int trove_trace_writer_finish(struct trove_trace_writer *w, const struct trove_names *names,
                              const struct trove_flow *flows, size_t nflows,
                              const struct trove_sink *sink,
                              struct trove_trace_writer_stats *stats, struct trove_diag *diag)
{
    struct trove__tsort *ends = NULL;
    struct trove__tsched ts;
    struct trove__tout o;
    struct trove__cj *cj = NULL;
    struct trove__pf *pf = NULL;
    uint64_t samples = 0;
    int rc;

    memset(&ts, 0, sizeof ts);
    memset(&o, 0, sizeof o);
    if (!w || (!flows && nflows) || !sink || !sink->write)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "trace writer: no writer, flow rows or output");
    if (w->rc != TROVE_OK)
        return w->rc;
    if (w->finished)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "trace writer: finished already");
    w->finished = 1;
    if (w->opt.format == TROVE_TRACE_PERFETTO)
        for (size_t i = 0; i < nflows; i++)
            if (trove_flow_check(&flows[i]) != TROVE_OK) {
                rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, i,
                                "flow row %zu is not well-formed (phase, flags, pad or id 0)", i);
                goto out;
            }
    TROVE_TRY(rc, trove__tsort_finish(w->starts, diag));
    if (w->opt.format == TROVE_TRACE_PERFETTO)
        TROVE_TRY(rc, trove__pf_new(&w->tracks, flows, nflows, names, &pf, diag));
    else
        TROVE_TRY(rc, trove__cj_new(names, flows, nflows, &cj));
    if (cj)
        trove__cj_attrs(cj, w->attrs, w->meta);
    if (pf)
        trove__pf_attrs(pf, w->attrs);
    TROVE_TRY(rc, sort_ends(w, pf, &ends, diag));
    if (pf)
        trove__pf_lanes_again(pf);
    TROVE_TRY(rc, trove__tsched_init(&ts, w->starts, ends, flows, nflows));
    o.sink = sink;
    TROVE_TRY(rc, write_all(cj, pf, &ts, w->profile, &samples, &o, diag));
    if (stats) {
        struct trove__tsort_stats a, b;
        memset(&b, 0, sizeof b);
        trove__tsort_stats(w->starts, &a);
        if (ends)
            trove__tsort_stats(ends, &b);
        memset(stats, 0, sizeof *stats);
        stats->events = w->events;
        stats->flows = nflows;
        stats->bytes = o.written;
        stats->runs = a.runs + b.runs;
        stats->passes = a.passes + b.passes;
        stats->spill_bytes = a.bytes + b.bytes;
        stats->samples = samples;
    }
out:
    if (rc != TROVE_OK) {
        if (rc == TROVE_ERR_NOMEM)
            fail(w, rc, diag);
        w->rc = rc;
    }
    trove__tsched_free(&ts);
    trove__tsort_free(ends);
    trove__cj_free(cj);
    trove__pf_free(pf);
    trove_bytes_free(&o.buf);
    return rc;
}

/* ---- the whole-trace writers --------------------------------------------------------------- */

static int whole(int format, const struct trove_trace *t, struct trove_bytes *out,
                 struct trove_diag *diag)
{
    struct trove_trace_writer_options opt;
    struct trove_trace_writer *w = NULL;
    struct trove_sink sink = {trove_bytes_sink_write, out};
    size_t start;
    int rc;

    if (!t || !out || (!t->events && t->n_events) || (!t->flows && t->n_flows))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "%s needs a trace and an output",
                          format == TROVE_TRACE_PERFETTO ? "perfetto write" : "chrome export");
    if (format == TROVE_TRACE_PERFETTO) /* the flow rows first, as this always did */
        for (size_t i = 0; i < t->n_flows; i++)
            if (trove_flow_check(&t->flows[i]) != TROVE_OK)
                return TROVE_FAIL(diag, TROVE_ERR_INVALID, i,
                                  "flow row %zu is not well-formed (phase, flags, pad or id 0)",
                                  i);
    memset(&opt, 0, sizeof opt);
    opt.format = format;
    opt.run_events = t->n_events ? t->n_events : 1; /* one run: all in memory */
    start = out->len;
    TROVE_TRY(rc, trove_trace_writer_new(&opt, &w));
    TROVE_TRY(rc, trove_trace_writer_add(w, t->events, t->n_events, diag));
    if ((t->attrs || t->meta) && (rc = trove_trace_writer_attrs(w, t->attrs, t->meta)) != TROVE_OK) {
        TROVE_FAIL(diag, rc, 0, "the attributes go back in event");
        goto out;
    }
    TROVE_TRY(rc, trove_trace_writer_finish(w, t->names, t->flows, t->n_flows, &sink, NULL, diag));
out:
    if (rc != TROVE_OK) {
        out->len = start; /* what was there stays; the bytes past it are not the output's */
        if (rc == TROVE_ERR_NOMEM)
            TROVE_FAIL(diag, rc, 0, "out of memory writing %zu events as %s", t->n_events,
                       format_name(format));
    }
    trove_trace_writer_free(w);
    return rc;
}

int trove_chrome_export(const struct trove_trace *t, struct trove_bytes *out,
                        struct trove_diag *diag)
{
    return whole(TROVE_TRACE_CHROME_JSON, t, out, diag);
}

int trove_perfetto_write(const struct trove_trace *t, struct trove_bytes *out,
                         struct trove_diag *diag)
{
    return whole(TROVE_TRACE_PERFETTO, t, out, diag);
}
