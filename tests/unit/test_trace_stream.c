/*
 * test_trace_stream.c: the streaming trace writer (trove_trace_writer_*, include/trove/trace.h;
 * src/codec/trace_writer.c, trace_spill.c, trace_sched.c) against the whole-trace writers.
 *
 * - Today's bytes: a capture of every kind of event and flow row the writers know, given in
 *   no order (rich_capture below), written whole, has the digests the whole-trace writers
 *   gave it before they were built on the streaming one (recorded here), whole and cut to a
 *   time range, in both formats.
 * - Streamed: the same captures — and chrome_async.json, a generated capture, and the sample
 *   trace (../shared/data) whole and cut — added in pieces of every size, with runs of a few
 *   hundred events merged a few at a time (so that every sort spills many runs and merges
 *   them in several passes), write exactly the whole writers' bytes, in both formats; the
 *   stats say the runs were spilled and merged. A capture that fits in one run never touches
 *   the disk (its temporary directory does not even exist).
 * - Errors: a temporary directory that is missing, a disk that fills (ENOSPC at the Nth
 *   write of the temporary files, for every N) or fails a read (EIO), a sink that fails, a
 *   counter JSON cannot hold, an event past 2^64 ns, too many lanes: each is one error that
 *   says what failed, sticky, with nothing left behind. The allocation failures are
 *   tests/unit/test_oom.c's.
 *
 * `test_trace_stream [CASE...]` runs the cases named (testutil.h), or all.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trove/digest.h"
#include "trove/chrome.h"
#include "trove/gen.h"
#include "trove/testing.h"
#include "trove/trace.h"

struct cap {
    struct trove_events ev;
    struct trove_flows flows;
    struct trove_names *names;
};

static void cap_init(struct cap *c)
{
    memset(c, 0, sizeof *c);
    if (trove_names_new(&c->names) != TROVE_OK)
        abort();
}

static void cap_free(struct cap *c)
{
    trove_events_free(&c->ev);
    trove_flows_free(&c->flows);
    trove_names_free(c->names);
    memset(c, 0, sizeof *c);
}

static struct trove_trace as_trace(const struct cap *c)
{
    struct trove_trace t = {c->ev.ev, c->ev.len, c->names, c->flows.f, c->flows.len, NULL, NULL};
    return t;
}

static uint64_t below(uint64_t *s, uint64_t n) { return test_rand(s) % n; }

static void push_ev(struct cap *c, uint64_t start, uint64_t dur, uint32_t pid, uint32_t tid,
                    uint8_t kind, uint8_t extra, uint32_t name, uint8_t depth)
{
    struct trove_event e = {start, dur, pid, tid, kind, depth, extra, 0, name};
    if (trove_events_push(&c->ev, &e) != TROVE_OK)
        abort();
}

/* A time on a coarse grid (so that many events tie) or any nanosecond. */
static uint64_t step(uint64_t *s)
{
    return below(s, 4) == 0 ? below(s, 3) * 1000 : below(s, 5000);
}

/* Zones nested under [t, t + span) on (pid, tid), depth d: children laid one after another,
 * some ending where the next begins, some of zero length, and now and then one that
 * overlaps its sibling without nesting (a lane). Returns where the last child ends. */
static uint64_t zones(struct cap *c, uint64_t *s, uint32_t pid, uint32_t tid, uint64_t t,
                      uint64_t span, int d, size_t *left)
{
    uint64_t at = t, end = t + span;
    while (*left > 0 && at < end) {
        uint64_t gap = step(s), dur = step(s) * (uint64_t)(4 - (d < 3 ? d : 3));
        uint8_t kind = TROVE_KIND_ZONE, extra = (uint8_t)below(s, 8);
        uint64_t r = below(s, 100);
        if (at + gap >= end)
            break;
        at += gap;
        if (at + dur > end)
            dur = end - at;
        (*left)--;
        if (r < 6) { /* an instant, of any scope */
            push_ev(c, at, 0, pid, tid, TROVE_KIND_INSTANT, (uint8_t)below(s, 3),
                    (uint32_t)below(s, 180), (uint8_t)d);
            continue;
        }
        if (r < 9)
            kind = TROVE_KIND_LOCK;
        else if (r < 11)
            dur = 0;
        else if (r < 13) { /* a kind this build does not know, with and without a duration */
            push_ev(c, at, below(s, 2) ? dur : 0, pid, tid, 9, 7, (uint32_t)below(s, 180),
                    (uint8_t)d);
            continue;
        } else if (r < 15) { /* an async instant on a thread */
            push_ev(c, at, 0, pid, tid, TROVE_KIND_ASYNC_INSTANT, 0, (uint32_t)below(s, 180),
                    (uint8_t)d);
            continue;
        } else if (r < 18 && d > 0) { /* overlaps the rest of its parent and past it */
            push_ev(c, at, end - at + 1 + below(s, 3000), pid, tid, TROVE_KIND_ZONE, extra,
                    (uint32_t)below(s, 180), (uint8_t)d);
            continue;
        }
        if (d == 0 && tid == pid + 1)
            kind = TROVE_KIND_FRAME;
        push_ev(c, at, dur, pid, tid, kind, extra, (uint32_t)below(s, 180), (uint8_t)d);
        if (r < 19) /* the same zone twice */
            push_ev(c, at, dur, pid, tid, kind, extra, (uint32_t)below(s, 180), (uint8_t)d);
        if (kind == TROVE_KIND_ZONE && dur > 0 && d < 6)
            zones(c, s, pid, tid, at, dur, d + 1, left);
        at += dur;
    }
    return at;
}

/* Async spans (nestable, with children and async instants) or legacy spans (with steps) on
 * a synthetic track. */
static void spans(struct cap *c, uint64_t *s, uint32_t pid, uint32_t tid, int legacy,
                  uint64_t t, size_t n)
{
    uint64_t at = t;
    for (size_t k = 0; k < n; k++) {
        uint64_t dur = 1000 + below(s, 40000);
        uint32_t nm = (uint32_t)below(s, 180);
        at += step(s);
        if (legacy) {
            push_ev(c, at, dur, pid, tid, TROVE_KIND_ZONE, TROVE_ASYNC_LEGACY, nm, 0);
            for (uint64_t st = at + below(s, 3) * 500; st + 500 <= at + dur;
                 st += 500 + below(s, 9000))
                push_ev(c, st, 500, pid, tid, TROVE_KIND_ZONE, TROVE_ASYNC_STEP,
                        (uint32_t)below(s, 180), 1);
        } else {
            push_ev(c, at, dur, pid, tid, TROVE_KIND_ZONE, TROVE_ASYNC_NESTABLE, nm, 0);
            if (below(s, 2))
                push_ev(c, at, dur / 2, pid, tid, TROVE_KIND_ZONE, TROVE_ASYNC_NESTABLE,
                        (uint32_t)below(s, 180), 1);
            if (below(s, 3) == 0) /* ends where its parent ends */
                push_ev(c, at + dur / 3, dur - dur / 3, pid, tid, TROVE_KIND_ZONE,
                        TROVE_ASYNC_NESTABLE, nm, 1);
            push_ev(c, at + below(s, dur), 0, pid, tid, TROVE_KIND_ASYNC_INSTANT, 0,
                    (uint32_t)below(s, 180), 1);
        }
        if (below(s, 4))
            at += dur; /* else the next span overlaps this one */
    }
}

static const double counter_values[] = {0.0, -0.0, 1.0, -1.5, 1024.0, 0.1, 1e-300, 3.5e300,
                                        123456789.125, -2.2250738585072014e-308, 1.0 / 3.0};

/*
 * A capture of every kind the writers know, about n events, in no order at all: nested
 * zones (frames, locks, zero-length, repeated, overlapping without nesting), instants of
 * every scope, kinds this build does not know, async instants; nestable async spans with
 * children and legacy spans with steps on synthetic tracks; counters on counter tracks and
 * on threads; flow rows of every phase, some on threads with nothing else; names for most
 * of it (a few not UTF-8-safe for JSON, some ids without a name, one unused), sort indexes.
 * Every time is on a coarse grid often enough that many events tie.
 */
static void rich_capture(struct cap *c, uint64_t seed, size_t n)
{
    static const uint32_t pids[] = {100, 200, 300};
    uint64_t s = seed, t0 = 1000000000000ull + below(&s, 1000);
    size_t left;
    char buf[64];

    cap_init(c);
    for (uint32_t i = 0; i < 200; i++) {
        int len = snprintf(buf, sizeof buf, i % 17 == 3 ? "n\"%u\\\t\x01" : "name_%u", i);
        if (i == 7)
            len = snprintf(buf, sizeof buf, "caf\xc3\xa9 \xe2\x82\xac %u", i);
        if (i % 50 != 49) /* some ids without a name */
            if (trove_names_set(c->names, TROVE_NAME_EVENT, i, 0, buf, (size_t)len) != TROVE_OK)
                abort();
    }
    for (size_t p = 0; p < 3; p++) {
        uint32_t pid = pids[p];
        if (p != 2) {
            snprintf(buf, sizeof buf, "proc %u", pid);
            if (trove_names_set(c->names, TROVE_NAME_PROCESS, pid, 0, buf, strlen(buf)) != TROVE_OK)
                abort();
        }
        for (uint32_t k = 1; k <= 4; k++) {
            snprintf(buf, sizeof buf, k == 1 ? "main" : "worker %u", k);
            if (k != 3 &&
                trove_names_set(c->names, TROVE_NAME_THREAD, pid, pid + k, buf, strlen(buf)) !=
                    TROVE_OK)
                abort();
        }
        for (uint32_t k = 0; k < 4; k++) {
            snprintf(buf, sizeof buf, k < 2 ? "async: track %u" : "c%u value", k);
            if (trove_names_set(c->names, TROVE_NAME_THREAD, pid, TROVE_TID_SYNTHETIC + k, buf,
                                strlen(buf)) != TROVE_OK)
                abort();
        }
    }
    if (trove_names_set_sort(c->names, TROVE_NAME_PROCESS_SORT, 200, 0, -3) != TROVE_OK ||
        trove_names_set_sort(c->names, TROVE_NAME_THREAD_SORT, 100, 102, 7) != TROVE_OK ||
        trove_names_set_sort(c->names, TROVE_NAME_THREAD_SORT, 300, TROVE_TID_SYNTHETIC + 1, 2) !=
            TROVE_OK ||
        trove_names_set_sort(c->names, TROVE_NAME_THREAD_SORT, 400, 401, 1) != TROVE_OK ||
        trove_names_set(c->names, TROVE_NAME_EVENT, 1000, 0, "never used", 10) != TROVE_OK)
        abort();

    left = n - n / 4;
    while (left > 0) /* thread timelines, one top-level zone of each thread at a time */
        for (size_t p = 0; p < 3 && left > 0; p++)
            for (uint32_t k = 1; k <= 4 && left > 0; k++)
                zones(c, &s, pids[p], pids[p] + k, t0 + below(&s, 2000000) * 10, 200000, 0,
                      &left);
    for (size_t p = 0; p < 3; p++) {
        spans(c, &s, pids[p], TROVE_TID_SYNTHETIC + 0, 0, t0, n / 40 + 1);
        spans(c, &s, pids[p], TROVE_TID_SYNTHETIC + 1, 1, t0 + 777, n / 60 + 1);
        for (uint32_t k = 2; k < 4; k++)
            for (size_t j = 0; j < n / 50 + 1; j++) {
                struct trove_event e = {t0 + below(&s, 20000000), 0, pids[p],
                                        TROVE_TID_SYNTHETIC + k, TROVE_KIND_COUNTER, 0, 0, 0,
                                        (uint32_t)below(&s, 180)};
                double v = counter_values[below(&s, sizeof counter_values /
                                                        sizeof counter_values[0])];
                memcpy(&e.dur_ns, &v, sizeof v);
                if (trove_events_push(&c->ev, &e) != TROVE_OK)
                    abort();
            }
        for (size_t j = 0; j < n / 100 + 1; j++) { /* a thread's own counters */
            double v = (double)below(&s, 1000) / 8.0;
            struct trove_event e = {t0 + below(&s, 20000000), 0, pids[p], pids[p] + 2,
                                    TROVE_KIND_COUNTER, 0, 0, 0, 5};
            memcpy(&e.dur_ns, &v, sizeof v);
            if (trove_events_push(&c->ev, &e) != TROVE_OK)
                abort();
        }
    }
    for (size_t j = 0; j < n / 30 + 3; j++) { /* flows: s, then t's, then f */
        uint64_t id = 1 + below(&s, 1u << 20), at = t0 + below(&s, 20000000);
        int steps = (int)below(&s, 3);
        for (int k = 0; k <= steps + 1; k++) {
            uint32_t pid = pids[below(&s, 3)], tid = pid + 1 + (uint32_t)below(&s, 5);
            uint8_t phase = k == 0 ? TROVE_FLOW_START
                            : k <= steps ? TROVE_FLOW_STEP
                                         : TROVE_FLOW_END;
            struct trove_flow f = {at, id, pid, tid, (uint32_t)below(&s, 180), phase, 0, {0, 0}};
            if (f.phase != TROVE_FLOW_END || below(&s, 2))
                f.flags = TROVE_FLOW_ENCLOSING;
            if (trove_flows_push(&c->flows, &f) != TROVE_OK)
                abort();
            at += step(&s);
        }
    }
    /* no order at all: a shuffle of events and of flow rows */
    for (size_t i = c->ev.len; i > 1; i--) {
        size_t j = (size_t)below(&s, i);
        struct trove_event e = c->ev.ev[i - 1];
        c->ev.ev[i - 1] = c->ev.ev[j];
        c->ev.ev[j] = e;
    }
    for (size_t i = c->flows.len; i > 1; i--) {
        size_t j = (size_t)below(&s, i);
        struct trove_flow f = c->flows.f[i - 1];
        c->flows.f[i - 1] = c->flows.f[j];
        c->flows.f[j] = f;
    }
}

/* c cut to [from, to): the events that start there and the flow rows there, as a ranged
 * export of a capture reads them. */
static void cut(const struct cap *c, uint64_t from, uint64_t to, struct cap *out)
{
    cap_init(out);
    if (trove_names_merge(out->names, c->names) != TROVE_OK)
        abort();
    for (size_t i = 0; i < c->ev.len; i++)
        if (c->ev.ev[i].start_ns >= from && c->ev.ev[i].start_ns < to &&
            trove_events_push(&out->ev, &c->ev.ev[i]) != TROVE_OK)
            abort();
    for (size_t i = 0; i < c->flows.len; i++)
        if (c->flows.f[i].ts_ns >= from && c->flows.f[i].ts_ns < to &&
            trove_flows_push(&out->flows, &c->flows.f[i]) != TROVE_OK)
            abort();
}

/* ---- helpers ----------------------------------------------------------------------------- */

static char tmpdir[] = "/tmp/trove_trace_stream_XXXXXX";

static int whole(int format, const struct cap *c, struct trove_bytes *out)
{
    struct trove_trace t = as_trace(c);
    return format == TROVE_TRACE_PERFETTO ? trove_perfetto_write(&t, out, NULL)
                                          : trove_chrome_export(&t, out, NULL);
}

/* Write c through a streaming writer: run, fan_in, events added in pieces of 1 .. piece
 * (random sizes of seed), to out. */
static int streamed(int format, const struct cap *c, size_t run, unsigned fan_in, size_t piece,
                    uint64_t seed, const char *dir, struct trove_bytes *out,
                    struct trove_trace_writer_stats *st, struct trove_diag *diag)
{
    struct trove_trace_writer_options o = {format, run, fan_in, dir};
    struct trove_trace_writer *w = NULL;
    struct trove_sink sink = {trove_bytes_sink_write, out};
    int rc = trove_trace_writer_new(&o, &w);

    for (size_t at = 0; rc == TROVE_OK && at < c->ev.len;) {
        size_t k = 1 + (size_t)(test_rand(&seed) % piece);
        if (k > c->ev.len - at)
            k = c->ev.len - at;
        rc = trove_trace_writer_add(w, c->ev.ev + at, k, diag);
        at += k;
    }
    if (rc == TROVE_OK)
        rc = trove_trace_writer_finish(w, c->names, c->flows.f, c->flows.len, &sink, st, diag);
    trove_trace_writer_free(w);
    return rc;
}

static const char *fmt_name(int format)
{
    return format == TROVE_TRACE_PERFETTO ? "perfetto" : "chrome-json";
}

/* c streamed with (run, fan_in) gives the whole writer's bytes, in both formats; the stats
 * say at least min_runs runs and min_passes merge passes went through the disk. */
static void same_streamed(const struct cap *c, const char *what, size_t run, unsigned fan_in,
                          uint64_t min_runs, uint64_t min_passes)
{
    for (int format = TROVE_TRACE_CHROME_JSON; format <= TROVE_TRACE_PERFETTO; format++) {
        struct trove_bytes want = {0}, got = {0};
        struct trove_trace_writer_stats st;
        struct trove_diag diag = {0};
        int rc;
        CHECK_EQ_INT(whole(format, c, &want), TROVE_OK);
        rc = streamed(format, c, run, fan_in, 5000, 42 + (uint64_t)format, tmpdir, &got, &st,
                      &diag);
        if (rc != TROVE_OK)
            fprintf(stderr, "%s, %s: %s\n", what, fmt_name(format), diag.msg);
        CHECK_EQ_INT(rc, TROVE_OK);
        if (got.len != want.len || memcmp(got.ptr, want.ptr, got.len))
            fprintf(stderr, "%s, %s: the streamed output (%zu bytes) differs from the whole "
                            "writer's (%zu bytes)\n",
                    what, fmt_name(format), got.len, want.len);
        CHECK(got.len == want.len && !memcmp(got.ptr, want.ptr, got.len));
        CHECK_EQ_INT(st.events, c->ev.len);
        CHECK_EQ_INT(st.flows, c->flows.len);
        CHECK_EQ_INT(st.bytes, got.len);
        if (st.runs < min_runs || st.passes < min_passes)
            fprintf(stderr, "%s, %s: %llu runs, %llu passes\n", what, fmt_name(format),
                    (unsigned long long)st.runs, (unsigned long long)st.passes);
        CHECK(st.runs >= min_runs);
        CHECK(st.passes >= min_passes);
        CHECK(st.runs == 0 || st.spill_bytes >= c->ev.len * 40);
        trove_bytes_free(&want);
        trove_bytes_free(&got);
    }
    CHECK_EQ_INT(test_count_dir(tmpdir), 0); /* the temporary files were never named */
}

static void digest_hex(const struct trove_bytes *b, char hex[33])
{
    struct trove_digest d;
    trove_digest_of(b->ptr, b->len, &d);
    trove_digest_hex(&d, hex);
}

/* ---- today's bytes ----------------------------------------------------------------------- */

/* The digests the whole-trace writers give: the capture, its length and both outputs'
 * lengths and xxh3-128 digests. First recorded before the writers were built on the
 * streaming one; recorded again when the writers began to carry what an importer would not
 * get back by itself (a thread zone whose extra is 1 or 2 as an X with its extra, not as an
 * async span; the depths the geometry misses), so that a round trip keeps every event. */
static const struct {
    uint64_t seed;
    size_t n;
    int cut;
    size_t events, json_len, pf_len;
    const char *json, *pf;
} today[] = {
    {1, 3000, 0, 4377, 530106, 163775, "5e72289f3817dced49df6ef3994edb06",
     "58890157507809885e62d22550f58a6d"},
    {2, 60000, 0, 86803, 10586370, 3149970, "00ea3225496233cf8e25661c7546e834",
     "0fcc7bd14bdc0ce82f1e858da485f54e"},
    {2, 60000, 1, 30537, 3677794, 1121389, "9c08b4ff4faf15e19156f5f380a69363",
     "2f8d0feccad5c4e5ee9ad5ff6e2c013b"},
};

#define CUT_FROM (1000000000000ull + 5000000)
#define CUT_TO (1000000000000ull + 12000000)

static void test_today(void)
{
    for (size_t i = 0; i < sizeof today / sizeof today[0]; i++) {
        struct cap c, r;
        struct trove_bytes j = {0}, p = {0};
        char hex[33];
        rich_capture(&c, today[i].seed, today[i].n);
        if (today[i].cut) {
            cut(&c, CUT_FROM, CUT_TO, &r);
            cap_free(&c);
            c = r;
        }
        CHECK_EQ_INT(c.ev.len, today[i].events);
        CHECK_EQ_INT(whole(TROVE_TRACE_CHROME_JSON, &c, &j), TROVE_OK);
        CHECK_EQ_INT(whole(TROVE_TRACE_PERFETTO, &c, &p), TROVE_OK);
        CHECK_EQ_INT(j.len, today[i].json_len);
        digest_hex(&j, hex);
        if (strcmp(hex, today[i].json))
            fprintf(stderr, "case %zu: Chrome JSON %zu bytes, digest %s\n", i, j.len, hex);
        CHECK(!strcmp(hex, today[i].json));
        CHECK_EQ_INT(p.len, today[i].pf_len);
        digest_hex(&p, hex);
        if (strcmp(hex, today[i].pf))
            fprintf(stderr, "case %zu: Perfetto %zu bytes, digest %s\n", i, p.len, hex);
        CHECK(!strcmp(hex, today[i].pf));
        trove_bytes_free(&j);
        trove_bytes_free(&p);
        cap_free(&c);
    }
}

/* ---- streamed = whole ---------------------------------------------------------------------- */

static void test_rich(void)
{
    struct cap c, r;

    rich_capture(&c, 1, 3000);
    same_streamed(&c, "rich 3000", 64, 4, 60, 2);      /* 4377 events: 69 runs, 3 passes */
    same_streamed(&c, "rich 3000, runs of 1", 1, 2, 4000, 10);
    same_streamed(&c, "rich 3000, one run", 5000, 2, 0, 0);
    cap_free(&c);
    rich_capture(&c, 2, 60000);
    same_streamed(&c, "rich 60000", 700, 8, 100, 2);
    cut(&c, CUT_FROM, CUT_TO, &r);
    same_streamed(&r, "rich 60000 cut", 500, 16, 50, 1);
    cap_free(&r);
    cap_free(&c);
}

static void test_async_file(void)
{
    struct trove_chrome_options opt = {.strict = 0};
    struct cap c;
    size_t len;
    uint8_t *buf = test_read_file(TROVE_SOURCE_DIR "/tests/data/chrome_async.json", &len);
    CHECK(buf != NULL);
    if (!buf)
        return;
    cap_init(&c);
    CHECK_EQ_INT(trove_chrome_import_all_mem(buf, len, &opt, &c.ev, c.names, &c.flows, NULL,
                                             NULL),
                 TROVE_OK);
    same_streamed(&c, "chrome_async.json", 2, 2, 5, 2);
    free(buf);
    cap_free(&c);
}

static void test_gen(void)
{
    struct trove_gen_options g;
    struct cap c;

    cap_init(&c);
    trove_gen_defaults(&g);
    g.events = 100000;
    CHECK_EQ_INT(trove_gen(&g, &c.ev, c.names), TROVE_OK);
    same_streamed(&c, "gen 100000", 1000, 16, 100, 1);
    cap_free(&c);
}

static void test_empty(void)
{
    struct cap c;
    struct trove_flow f = {5, 1, 1, 2, 0, TROVE_FLOW_START, TROVE_FLOW_ENCLOSING, {0, 0}};

    cap_init(&c);
    same_streamed(&c, "nothing", 1, 2, 0, 0);
    CHECK_EQ_INT(trove_flows_push(&c.flows, &f), TROVE_OK);
    same_streamed(&c, "a flow row alone", 1, 2, 0, 0);
    cap_free(&c);
}

/* The sample trace, imported, streamed with runs of 1,000 events whole and cut to the
 * middle two seconds. */
static void test_sample(void)
{
    static const char *path = TROVE_SHARED_DATA "/chrome-trace-dom.json.zst";
    struct trove_chrome_options opt = {.strict = 0};
    struct cap c, r;
    char cmd[1024];
    FILE *f = fopen(path, "rb");

    if (!f) {
        fprintf(stderr, "sample trace not found (%s): skipped\n", path);
        return;
    }
    fclose(f);
    if (system("zstd --version >/dev/null 2>&1") != 0) {
        fprintf(stderr, "zstd not installed: the sample is skipped\n");
        return;
    }
    snprintf(cmd, sizeof cmd, "zstd -dc '%s'", path);
    cap_init(&c);
    if (!(f = popen(cmd, "r")))
        abort();
    CHECK_EQ_INT(trove_chrome_import_all(f, &opt, &c.ev, c.names, &c.flows, NULL, NULL),
                 TROVE_OK);
    CHECK_EQ_INT(pclose(f), 0);
    CHECK_EQ_INT(c.ev.len, 306749);
    same_streamed(&c, "the sample", 1000, 16, 300, 1);
    cut(&c, 591000000000ull, 593000000000ull, &r);
    CHECK(r.ev.len > 50000 && r.flows.len > 1000);
    same_streamed(&r, "the sample, cut", 1000, 64, 50, 0);
    cap_free(&r);
    cap_free(&c);
}

/* ---- errors -------------------------------------------------------------------------------- */

/* Stream c (runs of 100 merged 4 at a time) with the nth of the temporary files' writes and
 * reads failing with err (ENOSPC: from the nth write on, as a full disk; EIO: that call
 * alone), for n = 1, 2, ... until a run succeeds, with the whole writer's bytes. Each
 * failure is err, said of the temporary file; *reads counts those said of a read. Returns
 * the n that succeeded. */
static uint64_t io_sweep(int format, const struct cap *c, int err, uint64_t *reads)
{
    struct trove_bytes want = {0}, out = {0};
    uint64_t n;

    CHECK_EQ_INT(whole(format, c, &want), TROVE_OK);
    for (n = 1; n < 100000; n++) {
        struct trove_diag diag = {0};
        int rc;
        out.len = 0;
        trove_testing_io_fail_at(n, err, err == ENOSPC);
        rc = streamed(format, c, 100, 4, 50, 1, tmpdir, &out, NULL, &diag);
        trove_testing_io_fail_at(0, 0, 0);
        if (rc == TROVE_OK) {
            CHECK(out.len == want.len && !memcmp(out.ptr, want.ptr, out.len));
            break;
        }
        CHECK_EQ_INT(rc, -err);
        CHECK(strstr(diag.msg, "the temporary file that sorts the events") != NULL);
        *reads += strstr(diag.msg, "reading back") != NULL;
        if (err == ENOSPC)
            CHECK_EQ_INT(out.len, 0);
    }
    trove_bytes_free(&want);
    trove_bytes_free(&out);
    return n;
}

static int failing_sink(void *ctx, const void *p, size_t n)
{
    size_t *left = ctx;
    (void)p;
    if (n > *left)
        return -EPIPE;
    *left -= n;
    return TROVE_OK;
}

static void test_errors(void)
{
    struct trove_trace_writer_options o = {TROVE_TRACE_CHROME_JSON, 16, 2, NULL};
    struct trove_trace_writer *w = NULL;
    struct trove_bytes out = {0};
    struct trove_sink sink = {trove_bytes_sink_write, &out};
    struct trove_diag diag = {0};
    struct cap c;
    char missing[200];
    int rc;

    rich_capture(&c, 3, 2000);

    /* a temporary directory that is not there: one clear error, at the first spill, sticky */
    snprintf(missing, sizeof missing, "%s/missing", tmpdir);
    for (int format = TROVE_TRACE_CHROME_JSON; format <= TROVE_TRACE_PERFETTO; format++) {
        out.len = 0;
        rc = streamed(format, &c, 100, 4, 50, 1, missing, &out, NULL, &diag);
        CHECK_EQ_INT(rc, -ENOENT);
        CHECK(strstr(diag.msg, "cannot make a temporary file in") != NULL);
        CHECK(strstr(diag.msg, "/missing") != NULL);
        CHECK_EQ_INT(out.len, 0);
    }
    o.tmp_dir = missing;
    CHECK_EQ_INT(trove_trace_writer_new(&o, &w), TROVE_OK);
    CHECK_EQ_INT(trove_trace_writer_add(w, c.ev.ev, 16, NULL), TROVE_OK); /* one run: memory */
    CHECK_EQ_INT(trove_trace_writer_add(w, c.ev.ev, 1, &diag), -ENOENT);  /* the spill */
    CHECK_EQ_INT(trove_trace_writer_add(w, c.ev.ev, 1, NULL), -ENOENT);   /* sticky */
    CHECK_EQ_INT(trove_trace_writer_finish(w, c.names, NULL, 0, &sink, NULL, NULL), -ENOENT);
    trove_trace_writer_free(w);
    w = NULL;
    o.tmp_dir = tmpdir;

    /* a disk that fills, at every write of the temporary files in turn (the spills all
     * come before the output); one EIO at every write and read in turn (the reads are the
     * merges' and the output's, which may have begun: what the sink took is not a trace) */
    for (int format = TROVE_TRACE_CHROME_JSON; format <= TROVE_TRACE_PERFETTO; format++) {
        uint64_t reads = 0;
        CHECK(io_sweep(format, &c, ENOSPC, &reads) > 10); /* it spilled, and merged */
        CHECK(io_sweep(format, &c, EIO, &reads) > 10);
        CHECK(reads > 10);
    }
    CHECK_EQ_INT(test_count_dir(tmpdir), 0);

    /* a sink that fails part way: its error, sticky */
    for (int format = TROVE_TRACE_CHROME_JSON; format <= TROVE_TRACE_PERFETTO; format++) {
        size_t left = 100000;
        struct trove_sink bad = {failing_sink, &left};
        o.format = format;
        CHECK_EQ_INT(trove_trace_writer_new(&o, &w), TROVE_OK);
        CHECK_EQ_INT(trove_trace_writer_add(w, c.ev.ev, c.ev.len, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_trace_writer_finish(w, c.names, c.flows.f, c.flows.len, &bad, NULL,
                                               NULL),
                     -EPIPE);
        CHECK_EQ_INT(trove_trace_writer_add(w, c.ev.ev, 1, NULL), -EPIPE);
        CHECK_EQ_INT(trove_trace_writer_finish(w, c.names, NULL, 0, &sink, NULL, NULL), -EPIPE);
        trove_trace_writer_free(w);
        w = NULL;
    }

    /* what a format cannot hold, named by the event's index among those added */
    {
        struct trove_event e = c.ev.ev[0];
        o.format = TROVE_TRACE_CHROME_JSON;
        e.kind = TROVE_KIND_COUNTER;
        e.dur_ns = 0x7ff8000000000000ull; /* NaN */
        CHECK_EQ_INT(trove_trace_writer_new(&o, &w), TROVE_OK);
        CHECK_EQ_INT(trove_trace_writer_add(w, c.ev.ev, 5, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_trace_writer_add(w, &e, 1, &diag), TROVE_ERR_INVALID);
        CHECK(strstr(diag.msg, "event 5: a counter whose value is not a finite") != NULL);
        CHECK_EQ_INT(trove_trace_writer_finish(w, c.names, NULL, 0, &sink, NULL, NULL),
                     TROVE_ERR_INVALID);
        trove_trace_writer_free(w);
        o.format = TROVE_TRACE_PERFETTO; /* Perfetto holds it, but not an end past 2^64 */
        CHECK_EQ_INT(trove_trace_writer_new(&o, &w), TROVE_OK);
        CHECK_EQ_INT(trove_trace_writer_add(w, &e, 1, NULL), TROVE_OK);
        e.kind = TROVE_KIND_ZONE;
        e.dur_ns = UINT64_MAX - e.start_ns + 1;
        CHECK_EQ_INT(trove_trace_writer_add(w, &e, 1, &diag), TROVE_ERR_INVALID);
        CHECK(strstr(diag.msg, "event 1 ends past 2^64 ns") != NULL);
        trove_trace_writer_free(w);
    }
    /* more than 1,024 zones open at once that do not nest, on one thread */
    {
        struct trove_event e = {1000, 5000, 1, 2, TROVE_KIND_ZONE, 0, 0, 0, 0};
        o.format = TROVE_TRACE_PERFETTO;
        CHECK_EQ_INT(trove_trace_writer_new(&o, &w), TROVE_OK);
        for (int i = 0; i < 1100; i++, e.start_ns++)
            CHECK_EQ_INT(trove_trace_writer_add(w, &e, 1, NULL), TROVE_OK);
        out.len = 0;
        CHECK_EQ_INT(trove_trace_writer_finish(w, NULL, NULL, 0, &sink, NULL, &diag),
                     TROVE_ERR_LIMIT);
        CHECK(strstr(diag.msg, "pid 1 tid 2 has more than 1024 zones open at once") != NULL);
        CHECK_EQ_INT(out.len, 0);
        trove_trace_writer_free(w);
    }
    /* the contract's edges */
    o.fan_in = 1;
    CHECK_EQ_INT(trove_trace_writer_new(&o, &w), TROVE_ERR_INVALID);
    CHECK(w == NULL);
    o.fan_in = 2;
    o.format = 3;
    CHECK_EQ_INT(trove_trace_writer_new(&o, &w), TROVE_ERR_INVALID);
    o.format = TROVE_TRACE_CHROME_JSON;
    CHECK_EQ_INT(trove_trace_writer_new(&o, &w), TROVE_OK);
    CHECK_EQ_INT(trove_trace_writer_add(w, NULL, 1, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_trace_writer_finish(w, NULL, NULL, 0, &sink, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_trace_writer_finish(w, NULL, NULL, 0, &sink, NULL, NULL),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_trace_writer_add(w, c.ev.ev, 1, NULL), TROVE_ERR_INVALID);
    trove_trace_writer_free(w);
    trove_trace_writer_free(NULL);
    trove_bytes_free(&out);
    cap_free(&c);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_today);
    RUN(test_rich);
    RUN(test_async_file);
    RUN(test_gen);
    RUN(test_empty);
    RUN(test_errors);
    RUN(test_sample);
    test_rm_rf(tmpdir);
    return test_done();
}
