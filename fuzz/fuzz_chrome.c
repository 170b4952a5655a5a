/*
 * fuzz_chrome.c: libFuzzer target for the Chrome trace JSON importer.
 *
 * Each input is imported four ways and the results are checked against each other:
 *   1. trove_chrome_import_mem, non-strict;
 *   2. the same bytes through a FILE (fmemopen) read 1..7 bytes at a time, non-strict,
 *      which puts a chunk boundary inside every token: same code, offset, message, stats,
 *      events and names as 1;
 *   3. trove_chrome_import_mem, strict: succeeds exactly when 1 did with nothing unmatched,
 *      and then gives the same events; fails whenever 1 failed;
 *   4. (implicitly) every call starts from a non-empty events array and names table, which
 *      must be untouched on error.
 * On success the output is checked: sorted, stats consistent with the events and flows,
 * every name id named, instants zero-length, flow rows well-formed and in time order, and,
 * for small outputs, depth against a brute-force count (kinds, extras and depths as the
 * phases make them unless a "trove" member gave some). Then (the exporter's oracle) the
 * events and flows are exported as Chrome JSON (trove_chrome_export) and imported again:
 * the same events and flows, with the same names and every sort index, must come back, for
 * every input whose tracks the export can name exactly (no legacy steps, no real thread with
 * a synthetic tid, names under 60,000 bytes; docs/formats/chrome-json.md says why those may
 * differ).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/chrome_json.h"
#include "trove/attrs.h"
#include "trove/chrome.h"
#include "trove/trace.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static const struct trove_event sentinel = {7, 3, 1, 1, TROVE_KIND_ZONE, 0, 0, 0, 0};

static const struct trove_flow flow_sentinel = {5, 9, 1, 2, 3, TROVE_FLOW_END, 0, {0, 0}};

struct run {
    int rc;
    struct trove_events ev;
    struct trove_flows flows;
    struct trove_names *names;
    struct trove_chrome_stats st;
    struct trove_diag diag;
};

static void run_init(struct run *r)
{
    memset(r, 0, sizeof *r);
    CHECK(trove_names_new(&r->names) == TROVE_OK);
    CHECK(trove_names_set(r->names, TROVE_NAME_PROCESS, 99, 0, "keep", 4) == TROVE_OK);
    CHECK(trove_events_push(&r->ev, &sentinel) == TROVE_OK);
    CHECK(trove_flows_push(&r->flows, &flow_sentinel) == TROVE_OK);
}

static void run_free(struct run *r)
{
    trove_events_free(&r->ev);
    trove_flows_free(&r->flows);
    trove_names_free(r->names);
}


static int same_events(const struct run *a, const struct run *b)
{
    return a->ev.len == b->ev.len && !memcmp(a->ev.ev, b->ev.ev, a->ev.len * sizeof *a->ev.ev) &&
           a->flows.len == b->flows.len &&
           !memcmp(a->flows.f, b->flows.f, a->flows.len * sizeof *a->flows.f);
}

static void check_output(const struct run *r)
{
    const struct trove_event *ev = r->ev.ev + 1;
    const struct trove_flow *fl = r->flows.f + 1;
    size_t n = r->ev.len - 1, nf = r->flows.len - 1;
    uint64_t skipped = 0;

    if (r->rc != TROVE_OK) {
        CHECK(r->diag.code == r->rc);
        CHECK(r->ev.len == 1 && !memcmp(r->ev.ev, &sentinel, sizeof sentinel));
        CHECK(r->flows.len == 1 && !memcmp(r->flows.f, &flow_sentinel, sizeof flow_sentinel));
        CHECK(trove_names_count(r->names) == 1);
        return;
    }
    CHECK(!memcmp(r->ev.ev, &sentinel, sizeof sentinel));
    CHECK(!memcmp(r->flows.f, &flow_sentinel, sizeof flow_sentinel));
    CHECK(n == r->st.complete + r->st.begin_end_pairs + r->st.instants + r->st.async_pairs +
                   r->st.async_steps + r->st.counter_values);
    CHECK(nf == r->st.flow_events + r->st.flow_binds);
    CHECK(r->st.names <= n + nf && r->st.threads <= n);
    /* every event object is counted once; a pair is two objects */
    CHECK(r->st.complete + 2 * (r->st.begin_end_pairs + r->st.async_pairs) + r->st.async_steps +
              r->st.instants + r->st.metadata + r->st.flow_events + r->st.counters +
              r->st.unmatched_begin + r->st.unmatched_end + r->st.skipped ==
          r->st.trace_events);
    for (int c = 0; c < 128; c++)
        skipped += r->st.skipped_phase[c];
    CHECK(skipped == r->st.skipped);
    for (size_t i = 0; i < n; i++) {
        const struct trove_event *e = &ev[i];
        CHECK(e->pad == 0);
        if (!r->st.trove_members) { /* what the phases alone make */
            CHECK(e->kind <= TROVE_KIND_COUNTER);
            CHECK(e->kind == TROVE_KIND_ZONE || e->kind == TROVE_KIND_COUNTER || e->dur_ns == 0);
            CHECK(e->kind == TROVE_KIND_INSTANT ? e->extra <= TROVE_SCOPE_GLOBAL
                  : e->kind == TROVE_KIND_ZONE  ? e->extra <= TROVE_ASYNC_STEP
                                                : e->extra == 0);
            /* async spans and counters, and only they, are on synthetic tids */
            if ((e->kind == TROVE_KIND_ZONE && e->extra) || e->kind == TROVE_KIND_COUNTER)
                CHECK(trove_tid_is_synthetic(e->tid));
        }
        if (e->kind == TROVE_KIND_COUNTER) /* only a C makes one, "trove" member or not */
            CHECK(trove_tid_is_synthetic(e->tid) && e->extra == 0);
        CHECK(e->name_id < r->st.names);
        CHECK(trove_names_get(r->names, TROVE_NAME_EVENT, e->name_id, 0, NULL) != NULL);
        CHECK(e->kind == TROVE_KIND_COUNTER || e->start_ns + e->dur_ns >= e->start_ns);
        if (i) {
            const struct trove_event *p = &ev[i - 1];
            CHECK(p->start_ns <= e->start_ns);
            if (p->start_ns == e->start_ns) {
                CHECK(p->pid <= e->pid);
                if (p->pid == e->pid) {
                    CHECK(p->tid <= e->tid);
                    if (p->tid == e->tid)
                        CHECK(p->depth <= e->depth);
                }
            }
        }
    }
    for (size_t i = 0; i < nf; i++) {
        CHECK(trove_flow_check(&fl[i]) == TROVE_OK);
        CHECK(fl[i].name_id < r->st.names);
        CHECK(i == 0 || fl[i - 1].ts_ns <= fl[i].ts_ns);
        CHECK(fl[i].id <= nf);
    }
    /* depth by brute force: zones on the thread that contain the start and sort before (a
     * "trove" member may give an event its depth instead) */
    if (n <= 256 && !r->st.trove_members) {
        for (size_t i = 0; i < n; i++) {
            size_t lo = 0, ties = 0;
            for (size_t j = 0; j < n; j++) {
                const struct trove_event *a = &ev[j], *b = &ev[i];
                if (j == i || a->pid != b->pid || a->tid != b->tid || a->dur_ns == 0 ||
                    a->kind == TROVE_KIND_COUNTER || a->start_ns > b->start_ns ||
                    a->start_ns + a->dur_ns <= b->start_ns)
                    continue;
                if (a->start_ns == b->start_ns && a->dur_ns == b->dur_ns)
                    ties++;
                else if (a->start_ns < b->start_ns || a->dur_ns > b->dur_ns)
                    lo++;
            }
            lo = lo > 255 ? 255 : lo;
            CHECK(ev[i].depth >= lo && ev[i].depth <= (lo + ties > 255 ? 255 : lo + ties));
        }
    }
}

/* The name of event name id `id` in names. */
static const char *name_of(const struct trove_names *names, uint32_t id, size_t *len)
{
    const char *s = trove_names_get(names, TROVE_NAME_EVENT, id, 0, len);
    CHECK(s != NULL);
    return s;
}

/* Can the export name every track of r exactly (see the file's comment)? */
static int exportable(const struct run *r)
{
    if (r->st.async_steps)
        return 0;
    for (size_t i = 1; i < r->ev.len; i++) {
        const struct trove_event *e = &r->ev.ev[i];
        int synthetic_kind = (e->kind == TROVE_KIND_ZONE && e->extra) ||
                             e->kind == TROVE_KIND_COUNTER;
        if (!trove_tid_is_synthetic(e->tid))
            continue;
        if (!synthetic_kind && e->kind != TROVE_KIND_ASYNC_INSTANT)
            return 0; /* a real thread whose tid is in the synthetic range */
        if (e->kind == TROVE_KIND_ASYNC_INSTANT &&
            !trove_names_get(r->names, TROVE_NAME_THREAD, e->pid, e->tid, NULL))
            return 0; /* an n without an id on such a thread (tracks are always named) */
    }
    for (size_t i = 0; i < trove_names_count(r->names); i++) {
        struct trove_name_entry e;
        trove_names_entry(r->names, i, &e);
        if (e.len > 60000)
            return 0;
    }
    return 1;
}

/* The exporter's oracle: export a's events and flows, import them again, compare. */
static void round_trip(const struct run *a)
{
    struct trove_trace t = {a->ev.ev + 1, a->ev.len - 1, a->names, a->flows.f + 1,
                            a->flows.len - 1, NULL, NULL};
    struct trove_chrome_options strict = {.strict = 1};
    struct trove_bytes json = {0};
    struct run b;

    /* only a counter that is not finite fails, and JSON never makes one */
    CHECK(trove_chrome_export(&t, &json, NULL) == TROVE_OK);
    memset(&b, 0, sizeof b);
    CHECK(trove_names_new(&b.names) == TROVE_OK);
    b.rc = trove_chrome_import_all_mem(json.ptr, json.len, &strict, &b.ev, b.names, &b.flows,
                                       &b.st, &b.diag);
    if (b.rc != TROVE_OK)
        fprintf(stderr, "fuzz_chrome: re-import: %s\n", b.diag.msg);
    CHECK(b.rc == TROVE_OK);
    CHECK(b.ev.len == t.n_events && b.flows.len == t.n_flows);
    for (size_t i = 0; i < b.ev.len; i++) {
        struct trove_event x = t.events[i], y = b.ev.ev[i];
        size_t lx, ly;
        const char *nx = name_of(a->names, x.name_id, &lx), *ny = name_of(b.names, y.name_id, &ly);
        CHECK(lx == ly && !memcmp(nx, ny, lx));
        x.name_id = y.name_id = 0;
        CHECK(!memcmp(&x, &y, sizeof x));
    }
    for (size_t i = 0; i < b.flows.len; i++) {
        struct trove_flow x = t.flows[i], y = b.flows.f[i];
        size_t lx, ly;
        const char *nx = name_of(a->names, x.name_id, &lx), *ny = name_of(b.names, y.name_id, &ly);
        CHECK(lx == ly && !memcmp(nx, ny, lx));
        x.name_id = y.name_id = 0;
        CHECK(!memcmp(&x, &y, sizeof x));
    }
    /* every sort index comes back: the export writes them all, tracks' too */
    {
        size_t na = 0, nb = 0;
        for (size_t i = 0; i < trove_names_count(a->names); i++) {
            struct trove_name_entry e;
            int32_t v = 0;
            trove_names_entry(a->names, i, &e);
            if (!trove_name_type_is_sort(e.type))
                continue;
            na++;
            CHECK(trove_names_get_sort(b.names, e.type, e.a, e.b, &v) && v == e.sort_index);
        }
        for (size_t i = 0; i < trove_names_count(b.names); i++) {
            struct trove_name_entry e;
            trove_names_entry(b.names, i, &e);
            nb += trove_name_type_is_sort(e.type);
        }
        CHECK(na == nb);
    }
    trove_bytes_free(&json);
    run_free(&b);
}

/* With attributes: the same events as without (a), read from memory and through a small
 * window alike (a nested value copied across refills), rows in event order on events that
 * exist; exported and imported again, as many rows. */
/* Does a hold a row whose key is k? */
static int has_key(const struct trove_attrs *a, const char *k)
{
    for (size_t i = 0; i < a->n; i++) {
        const char *s = trove_attrs_string(a, a->rows[i].key, NULL);
        if (s && !strcmp(s, k))
            return 1;
    }
    return 0;
}

static void attrs_runs(const uint8_t *data, size_t size, const struct run *a)
{
    struct trove_attrs am, mm, af, mf;
    struct trove_chrome_options o = {.strict = 0};
    struct run m, f;

    memset(&am, 0, sizeof am);
    memset(&mm, 0, sizeof mm);
    memset(&af, 0, sizeof af);
    memset(&mf, 0, sizeof mf);
    o.attrs = &am;
    o.meta = &mm;
    run_init(&m);
    m.rc = trove_chrome_import_all_mem(data, size, &o, &m.ev, m.names, &m.flows, &m.st, &m.diag);
    CHECK(m.rc == a->rc);
    if (m.rc == TROVE_OK) {
        CHECK(same_events(a, &m));
        for (size_t i = 0; i < am.n; i++) {
            CHECK(am.rows[i].event >= 1 && am.rows[i].event < m.ev.len); /* past the sentinel */
            CHECK(i == 0 || am.rows[i].event >= am.rows[i - 1].event);
        }
        CHECK(m.st.attr_rows == am.n);
    } else {
        CHECK(am.n == 0 && mm.n == 0);
    }
    if (size > 0) {
        FILE *fp = fmemopen((void *)data, size, "rb");
        CHECK(fp != NULL);
        o.attrs = &af;
        o.meta = &mf;
        run_init(&f);
        f.rc = trove__chrome_import_chunked(fp, 1 + size % 5, &o, &f.ev, f.names, &f.flows, &f.st,
                                            &f.diag);
        fclose(fp);
        CHECK(f.rc == m.rc && !memcmp(&f.st, &m.st, sizeof m.st));
        CHECK(trove_attrs_equal(&am, &af) && trove_attrs_equal(&mm, &mf));
        run_free(&f);
    }
    if (m.rc == TROVE_OK && m.ev.len <= 4096 && exportable(&m)) {
        struct trove_attrs shifted, a2, m2;
        struct trove_bytes json = {0};
        struct run b;
        memset(&shifted, 0, sizeof shifted);
        memset(&a2, 0, sizeof a2);
        memset(&m2, 0, sizeof m2);
        CHECK(trove_attrs_append(&shifted, &am, 0, am.n, 0, 1) == TROVE_OK); /* no sentinel */
        {
            struct trove_trace t = {m.ev.ev + 1, m.ev.len - 1, m.names, m.flows.f + 1,
                                    m.flows.len - 1, &shifted, &mm};
            CHECK(trove_chrome_export(&t, &json, NULL) == TROVE_OK);
        }
        o.attrs = &a2;
        o.meta = &m2;
        memset(&b, 0, sizeof b);
        CHECK(trove_names_new(&b.names) == TROVE_OK);
        b.rc = trove_chrome_import_all_mem(json.ptr, json.len, &o, &b.ev, b.names, &b.flows,
                                           &b.st, &b.diag);
        CHECK(b.rc == TROVE_OK);
        /* every row is written and none is made up: the export adds no member of its own
         * that the importer keeps as an attribute (the trace's displayTimeUnit aside) */
        CHECK(a2.n == shifted.n && m2.n == mm.n + !has_key(&mm, "displayTimeUnit"));
        trove_bytes_free(&json);
        trove_attrs_free(&shifted);
        trove_attrs_free(&a2);
        trove_attrs_free(&m2);
        run_free(&b);
    }
    trove_attrs_free(&am);
    trove_attrs_free(&mm);
    trove_attrs_free(&af);
    trove_attrs_free(&mf);
    run_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_chrome_options loose = {.strict = 0}, strict = {.strict = 1};
    struct run a, b, c;

    run_init(&a);
    a.rc = trove_chrome_import_all_mem(data, size, &loose, &a.ev, a.names, &a.flows, &a.st,
                                       &a.diag);
    check_output(&a);
    if (a.rc == TROVE_OK && a.ev.len <= 4096 && exportable(&a))
        round_trip(&a);

    if (size > 0) {
        FILE *f = fmemopen((void *)data, size, "rb");
        CHECK(f != NULL);
        run_init(&b);
        b.rc = trove__chrome_import_chunked(f, 1 + size % 7, &loose, &b.ev, b.names, &b.flows,
                                            &b.st, &b.diag);
        fclose(f);
        CHECK(b.rc == a.rc);
        CHECK(!memcmp(&b.st, &a.st, sizeof a.st));
        CHECK(same_events(&a, &b));
        CHECK(trove_names_equal(a.names, b.names));
        if (a.rc != TROVE_OK)
            CHECK(b.diag.offset == a.diag.offset && !strcmp(b.diag.msg, a.diag.msg));
        run_free(&b);
    }

    run_init(&c);
    c.rc = trove_chrome_import_all_mem(data, size, &strict, &c.ev, c.names, &c.flows, &c.st,
                                       &c.diag);
    check_output(&c);
    if (a.rc != TROVE_OK) {
        CHECK(c.rc != TROVE_OK);
    } else if (a.st.unmatched_begin || a.st.unmatched_end) {
        CHECK(c.rc == TROVE_ERR_UNMATCHED);
    } else {
        CHECK(c.rc == TROVE_OK);
        CHECK(same_events(&a, &c));
        CHECK(trove_names_equal(a.names, c.names));
    }
    run_free(&c);
    attrs_runs(data, size, &a);
    run_free(&a);
    return 0;
}
