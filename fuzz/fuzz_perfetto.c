/*
 * fuzz_perfetto.c: libFuzzer target for the Perfetto trace reader (src/codec/perfetto_read.c)
 * and, through it, the writer (perfetto_write.c).
 *
 * Every input is read twice, loose and strict, into outputs that already hold an event and a
 * flow row, which must be untouched on error; strict fails whenever loose does, and succeeds
 * exactly when loose dropped nothing unmatched, with the same result. The sniffer must not
 * crash on any head. A trace that reads is then written by trove_perfetto_write and read
 * again: the same events (in order), the same flow rows (as a set: the writer puts them in
 * time order) and the same names must come back — the writer's oracle.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/profile.h"
#include "trove/attrs.h"
#include "trove/trace.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static const struct trove_event sentinel = {7, 3, 1, 1, TROVE_KIND_ZONE, 0, 0, 0, 0};
static const struct trove_flow flow_sentinel = {1, 2, 3, 4, 5, TROVE_FLOW_STEP, 1, {0, 0}};

struct run {
    int rc;
    struct trove_events ev;
    struct trove_flows flows;
    struct trove_names *names;
    struct trove_perfetto_stats st;
    struct trove_diag diag;
};

static void run_init(struct run *r)
{
    memset(r, 0, sizeof *r);
    CHECK(trove_names_new(&r->names) == TROVE_OK);
    CHECK(trove_events_push(&r->ev, &sentinel) == TROVE_OK);
    CHECK(trove_flows_push(&r->flows, &flow_sentinel) == TROVE_OK);
}

static void run_free(struct run *r)
{
    trove_events_free(&r->ev);
    trove_flows_free(&r->flows);
    trove_names_free(r->names);
}

static void run_read(struct run *r, const uint8_t *data, size_t size, int strict)
{
    struct trove_perfetto_options opt = {strict, 0, NULL, NULL};
    run_init(r);
    /* the profile's decoder too (perf samples and their interned tables), on every input */
    CHECK(trove_profile_new(&opt.profile) == TROVE_OK);
    r->rc = trove_perfetto_read(data, size, &opt, &r->ev, r->names, &r->flows, &r->st, &r->diag);
    CHECK(r->rc != TROVE_OK || trove_profile_sample_count(opt.profile) == r->st.samples);
    trove_profile_free(opt.profile);
    CHECK(!memcmp(r->ev.ev, &sentinel, sizeof sentinel));
    CHECK(!memcmp(r->flows.f, &flow_sentinel, sizeof flow_sentinel));
    if (r->rc != TROVE_OK) {
        CHECK(r->diag.code == r->rc && r->ev.len == 1 && r->flows.len == 1);
        CHECK(trove_names_count(r->names) == 0);
        return;
    }
    for (size_t i = 2; i < r->ev.len; i++)
        CHECK(r->ev.ev[i - 1].start_ns <= r->ev.ev[i].start_ns);
    for (size_t i = 1; i < r->flows.len; i++)
        CHECK(trove_flow_check(&r->flows.f[i]) == TROVE_OK);
}

static int same_events(const struct run *a, const struct run *b)
{
    return a->ev.len == b->ev.len && !memcmp(a->ev.ev, b->ev.ev, a->ev.len * sizeof *a->ev.ev);
}

static int cmp_flow(const void *pa, const void *pb)
{
    return memcmp(pa, pb, sizeof(struct trove_flow));
}


static void oracle(const struct run *a)
{
    struct trove_trace t = {a->ev.ev + 1, a->ev.len - 1, a->names, a->flows.f + 1,
                            a->flows.len - 1, NULL, NULL};
    struct trove_bytes out = {0};
    struct run b;
    int rc = trove_perfetto_write(&t, &out, NULL);
    if (rc == TROVE_ERR_LIMIT) { /* over 1,024 lanes on a thread: refused, not wrong */
        trove_bytes_free(&out);
        return;
    }
    CHECK(rc == TROVE_OK);
    CHECK(trove_perfetto_sniff(out.ptr, out.len) == (out.len > 2));
    run_read(&b, out.ptr, out.len, 1);
    CHECK(b.rc == TROVE_OK);
    CHECK(same_events(a, &b));
    CHECK(b.flows.len == a->flows.len);
    qsort(a->flows.f + 1, a->flows.len - 1, sizeof *a->flows.f, cmp_flow);
    qsort(b.flows.f + 1, b.flows.len - 1, sizeof *b.flows.f, cmp_flow);
    CHECK(!memcmp(a->flows.f, b.flows.f, a->flows.len * sizeof *a->flows.f));
    CHECK(test_same_names(a->names, b.names));
    run_free(&b);
    trove_bytes_free(&out);
}

/* With attributes: the same result and events as without (a); rows on events that exist, in
 * event order; written back and read again, the same rows. */
static void attrs_run(const uint8_t *data, size_t size, const struct run *a)
{
    struct trove_perfetto_options opt = {0, 0, NULL, NULL};
    struct trove_attrs at;
    struct run m;

    memset(&at, 0, sizeof at);
    opt.attrs = &at;
    run_init(&m);
    CHECK(trove_profile_new(&opt.profile) == TROVE_OK); /* as run_read's */
    m.rc = trove_perfetto_read(data, size, &opt, &m.ev, m.names, &m.flows, &m.st, &m.diag);
    trove_profile_free(opt.profile);
    CHECK(m.rc == a->rc);
    if (m.rc == TROVE_OK) {
        CHECK(same_events(a, &m) && m.st.attr_rows == at.n);
        for (size_t i = 0; i < at.n; i++)
            CHECK(at.rows[i].event >= 1 && at.rows[i].event < m.ev.len &&
                  (i == 0 || at.rows[i].event >= at.rows[i - 1].event));
        if (m.ev.len < 20000) {
            struct trove_attrs shifted, back;
            struct trove_bytes pb = {0};
            struct trove_events ev2 = {0};
            struct trove_perfetto_options o2 = {0, 0, NULL, NULL};
            memset(&shifted, 0, sizeof shifted);
            memset(&back, 0, sizeof back);
            CHECK(trove_attrs_append(&shifted, &at, 0, at.n, 0, 1) == TROVE_OK); /* no sentinel */
            {
                struct trove_trace t = {m.ev.ev + 1, m.ev.len - 1, m.names, m.flows.f + 1,
                                        m.flows.len - 1, &shifted, NULL};
                if (trove_perfetto_write(&t, &pb, NULL) == TROVE_OK) {
                    o2.attrs = &back;
                    CHECK(trove_perfetto_read(pb.ptr, pb.len, &o2, &ev2, NULL, NULL, NULL, NULL) ==
                          TROVE_OK);
                    CHECK(back.n == shifted.n);
                }
            }
            trove_bytes_free(&pb);
            trove_events_free(&ev2);
            trove_attrs_free(&shifted);
            trove_attrs_free(&back);
        }
    } else {
        CHECK(at.n == 0);
    }
    trove_attrs_free(&at);
    run_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct run a, c;

    (void)trove_perfetto_sniff(data, size);
    run_read(&a, data, size, 0);
    run_read(&c, data, size, 1);
    if (a.rc != TROVE_OK) {
        CHECK(c.rc != TROVE_OK);
    } else if (a.st.unmatched_begin || a.st.unmatched_end) {
        CHECK(c.rc == TROVE_ERR_UNMATCHED);
    } else {
        CHECK(c.rc == TROVE_OK && same_events(&a, &c));
    }
    if (a.rc == TROVE_OK && a.ev.len < 20000)
        oracle(&a);
    attrs_run(data, size, &a);
    run_free(&c);
    run_free(&a);
    return 0;
}
