/*
 * test_capture_objects.c: what a capture keeps beside its events (src/capture/), in a temp
 * store: flows and counters (the flows object, header version 2, rows back whole and by time
 * range); a profile (version 3, alone or beside events, over two objects, kept by the live
 * writer's append); the names object read back without a replay, and sort indexes riding in
 * it; and names past one object (300,000 names of about 100 bytes) written in parts, read
 * back, replayed, appended to, a damaged part named, and, cut small, beside flows and a
 * profile and past the limits.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/capture_internal.h"
#include "common/endian.h"
#include "testutil.h"
#include "capture_test.h"
#include "trove/attrs.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/gen.h"
#include "trove/stream.h"
#include "trove/testing.h"
#include "trove/wire.h"

/* The header version of capture `name` (slot 0 read and decoded), or 0. */
static uint32_t header_version(struct trove_store *s, const char *name)
{
    struct trove_volume *v = NULL;
    struct trove_bytes b = {0};
    struct trove_capture_header h;
    uint32_t version = 0;
    memset(&h, 0, sizeof h);
    if (trove_volume_open(s, name, &v, NULL) == TROVE_OK &&
        trove_volume_get_object(v, 0, &b) == TROVE_OK &&
        trove_capture_header_decode(b.ptr, b.len, &h, NULL) == TROVE_OK)
        version = h.version;
    trove_capture_header_free(&h);
    trove_bytes_free(&b);
    trove_volume_close(v);
    return version;
}

/*
 * The flows object is coded against the capture's events (version 2, docs/formats/flows.md):
 * rows that name events in every segment, in and out of order (so the reader goes back to
 * segments it has let go), and rows on a thread without events come back exactly, from an
 * object smaller than version 1's; a damaged segment the rows need is named.
 */
static void test_flows_against_events(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_flows flows = {0}, back = {0};
    struct trove_capture_options co;
    struct trove_capture_info info;
    struct trove_diag diag = {0};
    struct trove_bytes obj = {0}, v1 = {0};
    struct trove_digest d;
    uint64_t st = 5;

    if (!s)
        return;
    memset(&co, 0, sizeof co);
    co.segment_bytes = 500 * 32; /* 10 segments of 500 events */
    gen_capture(5000, 13, &ev, &names);
    for (uint32_t i = 0; i < 400; i++) {
        size_t at = i % 2 ? (size_t)(i * 12) : (size_t)(test_rand(&st) % ev.len);
        struct trove_flow f = {ev.ev[at].start_ns + (i % 5 == 0 ? 250 : 0), 1 + i / 2,
                               ev.ev[at].pid, ev.ev[at].tid, i % 4, (uint8_t)(i % 3), i % 3 != 2,
                               {0, 0}};
        if (i % 50 == 7) { /* a thread without events */
            f.pid = 999;
            f.tid = 1000 + i;
        }
        CHECK_EQ_INT(trove_flows_push(&flows, &f), TROVE_OK);
    }
    CHECK_EQ_INT(trove_capture_write_attrs(s, "fe", ev.ev, ev.len, names, flows.f, flows.len,
                                           NULL, NULL, NULL, &co, &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(info.segments, 10);
    CHECK_EQ_INT(trove_capture_read_flows(s, "fe", 0, UINT64_MAX, &back, &diag), TROVE_OK);
    CHECK(back.len == 400 && !memcmp(back.f, flows.f, 400 * sizeof *flows.f));
    /* the object in the slot after the last segment is version 2, smaller than version 1 */
    slot_digest(s, "fe", 2 + 10, &d);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    CHECK(obj.len > 12 && !memcmp(obj.ptr, "TROVFLW1", 8) && obj.ptr[8] == 2);
    CHECK_EQ_INT(trove_flows_encode(flows.f, flows.len, &v1), TROVE_OK);
    CHECK(obj.len < v1.len);
    /* segment 3 damaged: the rows that name its events cannot be read, and say where */
    slot_digest(s, "fe", 2 + 3, &d);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    obj.ptr[obj.len / 2] ^= 0x20;
    damage(s, &d, obj.ptr, obj.len);
    back.len = 0;
    diag.msg[0] = 0;
    CHECK_EQ_INT(trove_capture_read_flows(s, "fe", 0, UINT64_MAX, &back, &diag),
                 TROVE_ERR_CHECKSUM);
    CHECK(!strncmp(diag.msg, "capture fe: segment 3", 21) && !strstr(diag.msg + 1, "capture fe"));
    CHECK_EQ_INT(back.len, 0);
    trove_bytes_free(&obj);
    trove_bytes_free(&v1);
    trove_flows_free(&flows);
    trove_flows_free(&back);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/*
 * Flows and counters in a capture: the flows object in the slot after the last segment, a
 * header of version 2, the rows back whole and by time range; a capture with neither is
 * written exactly as trove_capture_write writes it (version 1, the same objects).
 */
static void test_write_flows(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_flows flows = {0}, back = {0};
    struct trove_capture_info info, got;
    struct trove_diag diag = {0};
    uint64_t objects;

    if (!s)
        return;
    gen_capture(5000, 11, &ev, &names);
    CHECK_EQ_INT(trove_capture_write(s, "plain", ev.ev, ev.len, names, NULL, &info, &diag),
                 TROVE_OK);
    objects = store_objects(s);
    CHECK_EQ_INT(trove_capture_write_trace(s, "plain2", ev.ev, ev.len, names, NULL, 0, NULL,
                                           &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(info.new_objects, 0); /* the same objects as trove_capture_write's */
    CHECK_EQ_INT(store_objects(s), objects);
    CHECK_EQ_INT(header_version(s, "plain2"), 1);
    CHECK_EQ_INT(trove_capture_read_flows(s, "plain2", 0, UINT64_MAX, &back, &diag), TROVE_OK);
    CHECK_EQ_INT(back.len, 0);

    for (uint32_t i = 0; i < 300; i++) {
        struct trove_flow f = {ev.ev[i * 10].start_ns, 1 + i / 3, ev.ev[i * 10].pid,
                               ev.ev[i * 10].tid, i % 7, (uint8_t)(i % 3), 1, {0, 0}};
        CHECK_EQ_INT(trove_flows_push(&flows, &f), TROVE_OK);
    }
    CHECK_EQ_INT(trove_capture_write_trace(s, "flowcap", ev.ev, ev.len, names, flows.f, flows.len,
                                           NULL, &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(info.flows, 300);
    CHECK_EQ_INT(header_version(s, "flowcap"), 2);
    CHECK_EQ_INT(info.new_objects, 2); /* the header and the flows: the segments are shared */
    memset(&got, 0, sizeof got);
    CHECK_EQ_INT(trove_capture_info(s, "flowcap", &got, &diag), TROVE_OK);
    CHECK(same_info(&info, &got) && got.flows == 300);
    CHECK_EQ_INT(trove_capture_read_flows(s, "flowcap", 0, UINT64_MAX, &back, &diag), TROVE_OK);
    CHECK(back.len == 300 && !memcmp(back.f, flows.f, 300 * sizeof *flows.f));
    {
        uint64_t from = flows.f[100].ts_ns, to = flows.f[200].ts_ns;
        size_t want = 0;
        for (size_t i = 0; i < flows.len; i++)
            want += flows.f[i].ts_ns >= from && flows.f[i].ts_ns < to;
        back.len = 0;
        CHECK_EQ_INT(trove_capture_read_flows(s, "flowcap", from, to, &back, &diag), TROVE_OK);
        CHECK(back.len == want && want >= 100);
        CHECK_EQ_INT(trove_capture_read_flows(s, "flowcap", to, from, &back, &diag),
                     TROVE_ERR_INVALID);
        CHECK_EQ_INT(back.len, want);
    }
    /* replaced by a capture without flows: the slot goes, version 1 again */
    CHECK_EQ_INT(trove_capture_write(s, "flowcap", ev.ev, ev.len, names, NULL, &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(header_version(s, "flowcap"), 1);
    back.len = 0;
    CHECK_EQ_INT(trove_capture_read_flows(s, "flowcap", 0, UINT64_MAX, &back, &diag), TROVE_OK);
    CHECK_EQ_INT(back.len, 0);
    /* a bad row is refused before anything is stored */
    flows.f[7].phase = 3;
    CHECK_EQ_INT(trove_capture_write_trace(s, "badflow", ev.ev, ev.len, names, flows.f, flows.len,
                                           NULL, &info, &diag),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_info(s, "badflow", &got, NULL), TROVE_ERR_NOTFOUND);
    flows.f[7].phase = 2;

    /* counters: version 2 without flows; their ends are their starts */
    ev.ev[10].kind = TROVE_KIND_COUNTER;
    ev.ev[10].dur_ns = trove_counter_bits(-1e300);
    CHECK_EQ_INT(trove_capture_write_trace(s, "counters", ev.ev, ev.len, names, NULL, 0, NULL,
                                           &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(header_version(s, "counters"), 2);
    CHECK_EQ_INT(info.flows, 0);
    CHECK(info.end_ns < UINT64_MAX / 2);
    check_layout(s, "counters", &ev, names, TROVE_CAPTURE_SEGMENT_BYTES_DEFAULT / 32,
                 TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    /* replayed whole, and a range re-encoded (each event checked against its segment) */
    expect_range(s, "counters", &ev, names, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0,
                 TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    expect_range(s, "counters", &ev, names, ev.ev[5].start_ns, ev.ev[3000].start_ns,
                 TROVE_WIRE_PACKED, 100, TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    CHECK_EQ_INT(trove_capture_read_flows(s, "nosuch", 0, UINT64_MAX, &back, &diag),
                 TROVE_ERR_NOTFOUND);

    trove_flows_free(&flows);
    trove_flows_free(&back);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/* A profile of nframes frames (a call chain each, under a shared root), nsamples samples
 * over them and a switch every 10 samples; with big, also 320 strings of 65,535 random
 * bytes, which deflate cannot shrink below 16 MiB: the profile then takes two objects. */
static struct trove_profile *make_profile(uint32_t nframes, uint32_t nsamples, int big)
{
    struct trove_profile *p = NULL;
    uint32_t mod = 0, file = 0, stack = 0, top = 0;
    uint64_t r = 12345;
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    CHECK_EQ_INT(trove_profile_string(p, "/bin/prog", 9, &mod), TROVE_OK);
    CHECK_EQ_INT(trove_profile_string(p, "prog.c", 6, &file), TROVE_OK);
    for (uint32_t i = 0; i < nframes; i++) {
        char fn[32];
        struct trove_profile_frame f = {mod, 0, file, 10 + i, 0x1000 + 16 * (uint64_t)i, 0};
        uint32_t id;
        int len = snprintf(fn, sizeof fn, "fn_%u", i);
        CHECK_EQ_INT(trove_profile_string(p, fn, (size_t)len, &f.function), TROVE_OK);
        CHECK_EQ_INT(trove_profile_frame(p, &f, &id), TROVE_OK);
        CHECK_EQ_INT(trove_profile_stack(p, i ? top : 0, id, &stack), TROVE_OK);
        if (!i)
            top = stack;
    }
    for (uint32_t i = 0; i < nsamples; i++) {
        struct trove_profile_sample sm = {1000000 + (uint64_t)i * 1001001, 40, 41 + i % 3,
                                          nframes ? 1 + i % nframes : 0};
        CHECK_EQ_INT(trove_profile_sample(p, &sm), TROVE_OK);
        if (i % 10 == 0) {
            struct trove_profile_switch sw = {sm.time_ns + 5, 40, sm.tid, TROVE_PROFILE_SWITCH_OUT};
            CHECK_EQ_INT(trove_profile_switch(p, &sw), TROVE_OK);
        }
    }
    if (big) {
        char *buf = malloc(TROVE_PROFILE_STRING_MAX);
        CHECK(buf != NULL);
        for (int k = 0; buf && k < 320; k++) {
            uint32_t id;
            for (size_t i = 0; i < TROVE_PROFILE_STRING_MAX; i++) {
                r = r * 6364136223846793005ULL + 1442695040888963407ULL;
                buf[i] = (char)(1 + (r >> 33) % 127);
            }
            CHECK_EQ_INT(trove_profile_string(p, buf, TROVE_PROFILE_STRING_MAX, &id), TROVE_OK);
        }
        free(buf);
    }
    return p;
}

static void check_profiles_equal(const struct trove_profile *a, const struct trove_profile *b)
{
    struct trove_profile_counts ca, cb;
    trove_profile_get_counts(a, &ca);
    trove_profile_get_counts(b, &cb);
    CHECK(ca.strings == cb.strings && ca.frames == cb.frames && ca.stacks == cb.stacks &&
          ca.samples == cb.samples && ca.switches == cb.switches);
    for (uint32_t i = 0; i < ca.strings && i < cb.strings; i++) {
        size_t la = 0, lb = 1;
        const char *x = trove_profile_string_get(a, i, &la), *y = trove_profile_string_get(b, i, &lb);
        CHECK(la == lb && !memcmp(x, y, la));
    }
    for (uint32_t i = 0; i < ca.frames && i < cb.frames; i++) {
        const struct trove_profile_frame *x = trove_profile_frame_get(a, i), *y = trove_profile_frame_get(b, i);
        CHECK(x->function == y->function && x->address == y->address && x->line == y->line);
    }
    for (size_t i = 0; i < ca.samples && i < cb.samples; i++) {
        const struct trove_profile_sample *x = &trove_profile_samples(a)[i], *y = &trove_profile_samples(b)[i];
        CHECK(x->time_ns == y->time_ns && x->tid == y->tid && x->stack == y->stack);
    }
    for (size_t i = 0; i < ca.switches && i < cb.switches; i++)
        CHECK(trove_profile_switches(a)[i].time_ns == trove_profile_switches(b)[i].time_ns);
}

/* A capture's profile: written beside its events (version 3, events replayed as before),
 * alone, again to the same objects, over two objects; read back equal; replaced by a
 * capture without one; refused by the live writer's append. */
static void test_write_profile(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_profile *p, *back = NULL, *big;
    struct trove_capture_info info, got;
    struct trove_diag diag = {0};
    struct trove_capture_writer *w = NULL;

    if (!s)
        return;
    gen_capture(5000, 12, &ev, &names);
    p = make_profile(200, 100000, 0);
    CHECK_EQ_INT(trove_capture_write_profile(s, "prof", ev.ev, ev.len, names, NULL, 0, p, NULL,
                                             &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(header_version(s, "prof"), 3);
    CHECK(info.samples == 100000 && info.switches == 10000 && info.events == 5000);
    memset(&got, 0, sizeof got);
    CHECK_EQ_INT(trove_capture_info(s, "prof", &got, &diag), TROVE_OK);
    CHECK(same_info(&info, &got) && got.samples == 100000 && got.switches == 10000);
    CHECK_EQ_INT(trove_profile_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, "prof", back, &diag), TROVE_OK);
    check_profiles_equal(p, back);
    /* read into a profile that has rows: refused */
    CHECK_EQ_INT(trove_capture_read_profile(s, "prof", back, &diag), TROVE_ERR_INVALID);
    trove_profile_free(back);
    check_layout(s, "prof", &ev, names, TROVE_CAPTURE_SEGMENT_BYTES_DEFAULT / 32,
                 TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    expect_range(s, "prof", &ev, names, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0,
                 TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    /* the same again: nothing new; a profile alone, no events */
    CHECK_EQ_INT(trove_capture_write_profile(s, "prof", ev.ev, ev.len, names, NULL, 0, p, NULL,
                                             &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(info.new_objects, 0);
    CHECK_EQ_INT(trove_capture_write_profile(s, "alone", NULL, 0, names, NULL, 0, p, NULL, &info,
                                             &diag),
                 TROVE_OK);
    CHECK(info.events == 0 && info.samples == 100000);
    CHECK_EQ_INT(info.new_objects, 1); /* its header: the names and the profile are shared */
    CHECK_EQ_INT(trove_profile_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, "alone", back, &diag), TROVE_OK);
    check_profiles_equal(p, back);
    trove_profile_free(back);
    /* the live writer appends to a capture with a profile, keeping it */
    CHECK_EQ_INT(trove_capture_writer_open(s, "prof", 1, NULL, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev, 10, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
    CHECK(info.events == ev.len + 10 && info.samples == 100000);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_profile_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, "prof", back, &diag), TROVE_OK);
    check_profiles_equal(p, back);
    trove_profile_free(back);
    /* two objects */
    big = make_profile(10, 1000, 1);
    CHECK_EQ_INT(trove_capture_write_profile(s, "big", ev.ev, 100, names, NULL, 0, big, NULL,
                                             &info, &diag),
                 TROVE_OK);
    CHECK(info.stored_bytes > TROVE_CAPTURE_MAX_OBJECT);
    {
        struct trove_volume *v = NULL;
        struct trove_bytes obj = {0};
        struct trove_capture_header h;
        CHECK_EQ_INT(trove_volume_open(s, "big", &v, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_volume_get_object(v, 0, &obj), TROVE_OK);
        CHECK_EQ_INT(trove_capture_header_decode(obj.ptr, obj.len, &h, NULL), TROVE_OK);
        CHECK(h.profile_objects == 2 && h.profile_bytes > TROVE_CAPTURE_MAX_OBJECT);
        {
            struct trove_volume_info vi;
            CHECK_EQ_INT(trove_volume_info(v, &vi), TROVE_OK);
            /* header, names, a segment, two objects, the segment's summary */
            CHECK_EQ_INT(vi.slots, 2 + 1 + 2 + 1);
        }
        trove_capture_header_free(&h);
        trove_bytes_free(&obj);
        trove_volume_close(v);
    }
    CHECK_EQ_INT(trove_profile_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, "big", back, &diag), TROVE_OK);
    check_profiles_equal(big, back);
    trove_profile_free(back);
    /* replaced without a profile: version 1, no rows */
    CHECK_EQ_INT(trove_capture_write(s, "prof", ev.ev, ev.len, names, NULL, &info, &diag), TROVE_OK);
    CHECK_EQ_INT(header_version(s, "prof"), 1);
    CHECK_EQ_INT(trove_profile_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, "prof", back, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_profile_sample_count(back), 0);
    trove_profile_free(back);
    CHECK_EQ_INT(trove_capture_read_profile(s, "nosuch", p, &diag), TROVE_ERR_INVALID);
    {
        struct trove_profile *fresh = NULL;
        CHECK_EQ_INT(trove_profile_new(&fresh), TROVE_OK);
        CHECK_EQ_INT(trove_capture_read_profile(s, "nosuch", fresh, &diag), TROVE_ERR_NOTFOUND);
        trove_profile_free(fresh);
    }
    trove_profile_free(big);
    trove_profile_free(p);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/* One row of event ev with key k and int value v, in t. */
static void add_int(struct trove_attrs *t, uint64_t ev, const char *k, int64_t v, uint8_t scope)
{
    struct trove_attr r;
    memset(&r, 0, sizeof r);
    r.event = ev;
    r.scope = scope;
    r.type = TROVE_ATTR_INT;
    r.v.i = v;
    if (trove_attrs_intern(t, k, strlen(k), &r.key) != TROVE_OK || trove_attrs_add(t, &r) != TROVE_OK)
        abort();
}

/*
 * Attributes in a capture: one object per segment with the rows of its events (counted from
 * its first), one of the trace's, in the slots after the profile's and before the
 * summaries'; read back as they were written, beside a profile, flows and summaries; an
 * append keeps none; the same again stores nothing new; rows that go back or pass the events
 * are refused; a damaged object is named.
 */
static void test_write_attrs(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_profile *p;
    struct trove_capture_options co;
    struct trove_capture_info info, got;
    struct trove_diag diag = {0};
    struct trove_attrs a, meta, back, mback;
    uint64_t which[] = {0, 1, 1, 999, 1000, 2500, 4999};

    if (!s)
        return;
    memset(&a, 0, sizeof a);
    memset(&meta, 0, sizeof meta);
    memset(&back, 0, sizeof back);
    memset(&mback, 0, sizeof mback);
    memset(&co, 0, sizeof co);
    co.segment_bytes = 1000 * 32; /* 5 segments of 1,000 events */
    gen_capture(5000, 12, &ev, &names);
    p = make_profile(20, 1000, 0);
    for (size_t i = 0; i < sizeof which / sizeof which[0]; i++)
        add_int(&a, which[i], i % 2 ? "odd" : "even", (int64_t)i - 3, TROVE_ATTR_ARG);
    add_int(&meta, 0, "version", 42, TROVE_ATTR_TRACE);
    CHECK_EQ_INT(trove_capture_write_attrs(s, "at", ev.ev, ev.len, names, NULL, 0, p, &a, &meta,
                                           &co, &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(info.attr_rows, 8);
    CHECK(info.flags & TROVE_CAPTURE_FLAG_ATTRS);
    memset(&got, 0, sizeof got);
    CHECK_EQ_INT(trove_capture_info(s, "at", &got, &diag), TROVE_OK);
    CHECK(same_info(&info, &got) && got.attr_rows == 8);
    CHECK_EQ_INT(trove_capture_read_attrs(s, "at", &back, &mback, &diag), TROVE_OK);
    CHECK_EQ_INT(back.n, a.n);
    for (size_t i = 0; i < a.n && i < back.n; i++) {
        size_t l1, l2;
        const char *k1 = trove_attrs_string(&a, a.rows[i].key, &l1);
        const char *k2 = trove_attrs_string(&back, back.rows[i].key, &l2);
        CHECK(back.rows[i].event == which[i] && back.rows[i].v.i == a.rows[i].v.i && l1 == l2 &&
              !memcmp(k1, k2, l1) && back.rows[i].scope == TROVE_ATTR_ARG);
    }
    CHECK(mback.n == 1 && mback.rows[0].v.i == 42 && mback.rows[0].scope == TROVE_ATTR_TRACE);
    /* the profile and the replay are where they were */
    {
        struct trove_profile *pb = NULL;
        CHECK_EQ_INT(trove_profile_new(&pb), TROVE_OK);
        CHECK_EQ_INT(trove_capture_read_profile(s, "at", pb, &diag), TROVE_OK);
        check_profiles_equal(p, pb);
        trove_profile_free(pb);
    }
    expect_range(s, "at", &ev, names, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0,
                 TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    /* the same again: nothing new */
    CHECK_EQ_INT(trove_capture_write_attrs(s, "at", ev.ev, ev.len, names, NULL, 0, p, &a, &meta,
                                           &co, &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(info.new_objects, 0);
    /* without rows: no flag, the capture trove_capture_write_profile makes */
    {
        struct trove_attrs none;
        memset(&none, 0, sizeof none);
        CHECK_EQ_INT(trove_capture_write_attrs(s, "plain", ev.ev, ev.len, names, NULL, 0, NULL,
                                               &none, NULL, &co, &info, &diag),
                     TROVE_OK);
        CHECK(!(info.flags & TROVE_CAPTURE_FLAG_ATTRS) && info.attr_rows == 0);
        back.n = 0;
        CHECK_EQ_INT(trove_capture_read_attrs(s, "plain", &back, NULL, &diag), TROVE_OK);
        CHECK_EQ_INT(back.n, 0);
    }
    /* refused: a row past the events, rows going back */
    add_int(&a, 5000, "past", 1, TROVE_ATTR_ARG);
    CHECK_EQ_INT(trove_capture_write_attrs(s, "bad", ev.ev, ev.len, names, NULL, 0, NULL, &a,
                                           NULL, &co, &info, &diag),
                 TROVE_ERR_INVALID);
    a.n--;
    add_int(&a, 3, "back", 1, TROVE_ATTR_ARG);
    CHECK_EQ_INT(trove_capture_write_attrs(s, "bad", ev.ev, ev.len, names, NULL, 0, NULL, &a,
                                           NULL, &co, &info, &diag),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_info(s, "bad", &got, &diag), TROVE_ERR_NOTFOUND);
    trove_attrs_free(&a);
    trove_attrs_free(&meta);
    trove_attrs_free(&back);
    trove_attrs_free(&mback);
    trove_profile_free(p);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/* Replay [from, to) of "ra" (from_event too) with its rows (each row's value its event's
 * capture index): exactly the rows of the events sent, each before its events frame and by
 * its index among the events collected. */
static void expect_replay_rows(struct trove_store *s, const struct trove_events *ev,
                               const struct trove_attrs *a, uint64_t from, uint64_t to, int wire,
                               uint32_t fe)
{
    struct collect c;
    struct trove_diag diag = {0};
    size_t want = 0;

    collect_init(&c, wire, fe ? fe : TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    replay_attrs = a;
    CHECK_EQ_INT(replay(s, "ra", from, to, wire, fe, &c, NULL, &diag), TROVE_OK);
    replay_attrs = NULL;
    CHECK_EQ_INT(c.bad, 0);
    for (size_t i = 0; i < a->n; i++) {
        const struct trove_event *e = &ev->ev[a->rows[i].event];
        want += e->start_ns >= from && e->start_ns < to && a->rows[i].event >= replay_from_event;
    }
    CHECK_EQ_INT(c.rows.n, want);
    for (size_t i = 0; i < c.rows.n; i++) {
        int64_t at = c.rows.rows[i].v.i; /* the event's index in the capture */
        CHECK(c.rows.rows[i].event < c.ev.len && at >= 0 && (size_t)at < ev->len &&
              !memcmp(&c.ev.ev[c.rows.rows[i].event], &ev->ev[at], sizeof ev->ev[0]));
    }
    collect_free(&c);
}

/*
 * A replay asked for the capture's rows (trove_capture_replay_options.attrs) sends an attrs
 * frame before each events frame whose events have rows: a window, a window from an event,
 * every wire format and frame size, a segment wholly inside the range (not sent as stored
 * when it has rows), and a capture without rows asked for none.
 */
static void test_replay_attrs(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_capture_options co;
    struct trove_capture_info info;
    struct trove_diag diag = {0};
    struct trove_attrs a, none;
    uint64_t lo, hi;

    if (!s)
        return;
    memset(&a, 0, sizeof a);
    memset(&none, 0, sizeof none);
    memset(&co, 0, sizeof co);
    co.segment_bytes = 1000 * 32; /* 5 segments of 1,000 events */
    gen_capture(5000, 12, &ev, &names);
    for (uint64_t i = 0; i < ev.len; i++) {
        if (i % 7 == 0 || (i >= 2000 && i < 3000)) /* a segment with a row an event */
            add_int(&a, i, "at", (int64_t)i, TROVE_ATTR_ARG);
        if (i % 13 == 0)
            add_int(&a, i, "again", (int64_t)i, TROVE_ATTR_ARG);
    }
    CHECK_EQ_INT(trove_capture_write_attrs(s, "ra", ev.ev, ev.len, names, NULL, 0, NULL, &a,
                                           NULL, &co, &info, &diag),
                 TROVE_OK);
    lo = ev.ev[0].start_ns;
    hi = ev.ev[ev.len - 1].start_ns + 1;
    for (size_t i = 0; i < ev.len; i++) {
        lo = ev.ev[i].start_ns < lo ? ev.ev[i].start_ns : lo;
        hi = ev.ev[i].start_ns >= hi ? ev.ev[i].start_ns + 1 : hi;
    }
    expect_replay_rows(s, &ev, &a, 0, UINT64_MAX, TROVE_WIRE_RAW, 0);
    expect_replay_rows(s, &ev, &a, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0);
    expect_replay_rows(s, &ev, &a, lo + (hi - lo) / 3, lo + (hi - lo) * 2 / 3, TROVE_WIRE_RAW, 0);
    expect_replay_rows(s, &ev, &a, lo + (hi - lo) / 5, hi, TROVE_WIRE_PACKED, 100);
    expect_replay_rows(s, &ev, &a, lo + (hi - lo) / 4, lo + (hi - lo) / 2, TROVE_WIRE_DEFLATE,
                       333);
    replay_from_event = 2500;
    expect_replay_rows(s, &ev, &a, lo + (hi - lo) / 4, hi, TROVE_WIRE_RAW, 0);
    replay_from_event = 0;
    /* the events are those of a replay without rows */
    replay_attrs = &a;
    expect_range(s, "ra", &ev, names, lo + (hi - lo) / 3, hi, TROVE_WIRE_DEFLATE, 0,
                 TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
    replay_attrs = NULL;
    /* rows for none of the events sent: no attrs frame */
    add_int(&none, 0, "first", 0, TROVE_ATTR_ARG);
    expect_replay_rows(s, &ev, &none, ev.ev[0].start_ns + 1, ev.ev[0].start_ns + 1,
                       TROVE_WIRE_RAW, 0);
    trove_attrs_free(&a);
    trove_attrs_free(&none);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

static void test_read_names(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL, *back = NULL;
    struct trove_diag diag = {0};
    struct trove_digest d;
    struct trove_bytes obj = {0}, seg = {0};

    if (!s)
        return;
    gen_capture(5000, 21, &ev, &names);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_THREAD, 7, 8, "worker é", 9), TROVE_OK);
    CHECK_EQ_INT(trove_capture_write(s, "nm", ev.ev, ev.len, names, NULL, NULL, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_names(s, "nm", back, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_names_count(back), trove_names_count(names));
    for (size_t i = 0; i < trove_names_count(names) && i < trove_names_count(back); i++) {
        struct trove_name_entry a, b;
        trove_names_entry(names, i, &a);
        trove_names_entry(back, i, &b);
        CHECK(a.type == b.type && a.a == b.a && a.b == b.b && a.len == b.len &&
              !memcmp(a.str, b.str, a.len) && a.sort_index == b.sort_index);
    }
    CHECK(!strcmp(trove_names_get(back, TROVE_NAME_THREAD, 7, 8, NULL), "worker é"));
    trove_names_free(back);
    back = NULL;
    CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_names(s, "nosuch", back, &diag), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_capture_read_names(s, "../x", back, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_read_names(NULL, "nm", back, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_count(back), 0);
    /* a flipped byte: the read checks the object against its name */
    slot_digest(s, "nm", 1, &d);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    obj.ptr[obj.len / 2] ^= 0x20;
    damage(s, &d, obj.ptr, obj.len);
    diag.msg[0] = 0;
    CHECK_EQ_INT(trove_capture_read_names(s, "nm", back, &diag), TROVE_ERR_CHECKSUM);
    CHECK(strstr(diag.msg, "names (slot 1)") != NULL);
    /* unverified: a segment's object in its place is not names */
    trove_store_close(s);
    s = open_store(TROVE_STORE_NOVERIFY);
    {
        struct trove_digest sd;
        slot_digest(s, "nm", 2, &sd);
        CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &sd, &seg, 1 << 30), TROVE_OK);
    }
    damage(s, &d, seg.ptr, seg.len);
    diag.msg[0] = 0;
    CHECK_EQ_INT(trove_capture_read_names(s, "nm", back, &diag), TROVE_ERR_CORRUPT);
    CHECK(strstr(diag.msg, "capture nm: names (slot 1)") != NULL);
    trove_names_free(back);
    trove_bytes_free(&obj);
    trove_bytes_free(&seg);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/* Sort indexes ride in the names object as version 2 names frames (split across frames
 * like any names), come back whole from every replay, and leave a capture without them
 * with version 1 frames only. */
static void test_sort_indexes(void)
{
    static const int wires[] = {TROVE_WIRE_RAW, TROVE_WIRE_PACKED, TROVE_WIRE_DEFLATE};
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info;
    struct trove_volume *v = NULL;
    struct trove_bytes obj = {0};
    int32_t got = 0;

    if (!s)
        return;
    gen_capture(3000, 17, &ev, &names);
    CHECK_EQ_INT(write_capture(s, "plain_names", &ev, names, 32 * 1000, 250, &info), TROVE_OK);
    CHECK_EQ_INT(trove_volume_open(s, "plain_names", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 1, &obj), TROVE_OK);
    CHECK(obj.len > 16 && obj.ptr[3] == TROVE_WIRE_VERSION);
    trove_volume_close(v);
    v = NULL;

    CHECK_EQ_INT(trove_names_set_sort(names, TROVE_NAME_PROCESS_SORT, ev.ev[0].pid, 0, -7),
                 TROVE_OK);
    /* more entries than one names frame holds */
    for (uint32_t i = 0; i < TROVE__CAPTURE_NAMES_FRAME_ENTRIES + 100; i++)
        CHECK_EQ_INT(trove_names_set_sort(names, TROVE_NAME_THREAD_SORT, 9, i, (int32_t)i - 50),
                     TROVE_OK);
    CHECK_EQ_INT(write_capture(s, "sorted", &ev, names, 32 * 1000, 250, &info), TROVE_OK);
    CHECK_EQ_INT(info.names, trove_names_count(names));
    check_layout(s, "sorted", &ev, names, 1000, 250);
    CHECK_EQ_INT(trove_volume_open(s, "sorted", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 1, &obj), TROVE_OK);
    CHECK(obj.len > 16 && obj.ptr[3] == TROVE_WIRE_NAMES_VERSION);
    trove_volume_close(v);
    for (int w = 0; w < 3; w++)
        expect_range(s, "sorted", &ev, names, 0, UINT64_MAX, wires[w], 0, 250);
    expect_range(s, "sorted", &ev, names, ev.ev[100].start_ns, ev.ev[200].start_ns,
                 TROVE_WIRE_PACKED, 0, 250);
    {
        struct collect c;
        collect_init(&c, TROVE_WIRE_PACKED, 250);
        CHECK_EQ_INT(replay(s, "sorted", 0, UINT64_MAX, TROVE_WIRE_PACKED, 0, &c, NULL, NULL),
                     TROVE_OK);
        CHECK(trove_names_get_sort(c.names, TROVE_NAME_PROCESS_SORT, ev.ev[0].pid, 0, &got) &&
              got == -7);
        CHECK(trove_names_get_sort(c.names, TROVE_NAME_THREAD_SORT, 9,
                                   TROVE__CAPTURE_NAMES_FRAME_ENTRIES + 99, &got) &&
              got == (int32_t)TROVE__CAPTURE_NAMES_FRAME_ENTRIES + 49);
        collect_free(&c);
    }
    trove_bytes_free(&obj);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/* ---- names in parts ------------------------------------------------------------------- */

/* `extra` distinct event names of about 100 bytes (ids first_id on) into names. */
static void add_long_names(struct trove_names *names, uint32_t extra, uint32_t first_id)
{
    char s[160];
    for (uint32_t i = 0; i < extra; i++) {
        int len = snprintf(s, sizeof s,
                           "ns%u::detail::Widget<ns%u::Alloc<%u>, std::vector<int>>::"
                           "render_frame_%07u(int, const char *)",
                           i % 89, i % 13, i % 7, i);
        if (trove_names_set(names, TROVE_NAME_EVENT, first_id + i, 0, s, (size_t)len) != TROVE_OK) {
            CHECK(0);
            return;
        }
    }
}

/* Captures a and b are the same objects: as many slots, the same digest in each. */
static int same_slots(struct trove_store *s, const char *a, const char *b)
{
    struct trove_volume *va = NULL, *vb = NULL;
    struct trove_volume_info ia, ib;
    struct trove_digest *da = NULL, *db = NULL;
    int same = 0;

    if (trove_volume_open(s, a, &va, NULL) == TROVE_OK &&
        trove_volume_open(s, b, &vb, NULL) == TROVE_OK && trove_volume_info(va, &ia) == 0 &&
        trove_volume_info(vb, &ib) == 0 && ia.slots == ib.slots &&
        (da = calloc(ia.slots, sizeof *da)) && (db = calloc(ia.slots, sizeof *db)) &&
        trove_volume_slot_digests(va, 0, ia.slots, da) == 0 &&
        trove_volume_slot_digests(vb, 0, ib.slots, db) == 0)
        same = memcmp(da, db, ia.slots * sizeof *da) == 0;
    trove_volume_close(va);
    trove_volume_close(vb);
    free(da);
    free(db);
    return same;
}

/* Read capture `name`'s names back and require `want`. */
static void expect_names(struct trove_store *s, const char *name, const struct trove_names *want)
{
    struct trove_names *back = NULL;
    struct trove_diag diag = {0};
    int rc;
    CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
    rc = trove_capture_read_names(s, name, back, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "read names %s: %s\n", name, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK(trove_names_equal(want, back));
    trove_names_free(back);
}

/*
 * Names over one object's 16 MiB: 300,000 distinct names of about 100 bytes (31 MB of names
 * frames) beside gen's. They are stored in parts of at most 16 MiB, read back, replayed,
 * rewritten with nothing new, appended to through the live writer (the same objects as a
 * write of the whole), and a damaged part is named. Then, with names cut small
 * (trove_testing_capture_names_cut), many parts beside flows and a profile, and the limits.
 */
static void test_names_parts(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0}, all = {0};
    struct trove_names *names = NULL, *more = NULL;
    struct trove_capture_info info, again;
    struct trove_capture_header h;
    struct trove_capture_writer *w = NULL;
    struct trove_diag diag = {0};
    uint64_t objects;

    if (!s)
        return;
    gen_capture(20000, 31, &ev, &names);
    add_long_names(names, 300000, 1000000);
    CHECK_EQ_INT(write_capture(s, "np", &ev, names, 32 * 4096, 1000, &info), TROVE_OK);
    CHECK_EQ_INT(info.names, trove_names_count(names));
    CHECK_EQ_INT(info.segments, 5);
    CHECK_EQ_INT(info.new_objects, 1 + 5 + 2 + 6); /* header, segments, parts, summaries */
    CHECK(info.stored_bytes > TROVE_CAPTURE_MAX_OBJECT);
    CHECK_EQ_INT(read_header(s, "np", &h), TROVE_OK);
    CHECK(h.names_parts == 2 && (h.info.flags & TROVE_CAPTURE_FLAG_NAMES_PARTS) &&
          h.names_bytes > TROVE_CAPTURE_MAX_OBJECT &&
          h.names_part[0].bytes + (uint64_t)h.names_part[1].bytes == h.names_bytes &&
          h.names_part[0].entries + (uint64_t)h.names_part[1].entries == h.info.names &&
          h.names_part[0].bytes > TROVE_CAPTURE_MAX_OBJECT - (1 << 20) - 16);
    fprintf(stderr, "names parts: %zu names in %" PRIu64 " bytes, parts of %" PRIu32 " and %" PRIu32
            " bytes\n",
            trove_names_count(names), h.names_bytes, h.names_part[0].bytes,
            h.names_part[1].bytes);
    trove_capture_header_free(&h);
    check_layout(s, "np", &ev, names, 4096, 1000);
    expect_names(s, "np", names);
    expect_range(s, "np", &ev, names, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, 1000);
    expect_range(s, "np", &ev, names, 0, UINT64_MAX, TROVE_WIRE_RAW, 300, 1000);
    expect_range(s, "np", &ev, names, ev.ev[5000].start_ns, ev.ev[9000].start_ns,
                 TROVE_WIRE_PACKED, 0, 1000);
    /* again: the same objects, nothing new */
    objects = store_objects(s);
    CHECK_EQ_INT(write_capture(s, "np", &ev, names, 32 * 4096, 1000, &again), TROVE_OK);
    CHECK(same_info(&info, &again) && again.new_objects == 0);
    CHECK_EQ_INT(store_objects(s), objects);
    CHECK_EQ_INT(trove_capture_info(s, "np", &again, &diag), TROVE_OK);
    CHECK(same_info(&info, &again));

    /* appended to: more events, more names and one renamed in part 0, through the live
     * writer; the capture is then the one a write of everything makes */
    CHECK_EQ_INT(trove_capture_writer_open(s, "np", 1, NULL, &w, &diag), TROVE_OK);
    CHECK(w && trove_names_equal(trove_capture_writer_names_all(w), names));
    CHECK_EQ_INT(trove_names_new(&more), TROVE_OK);
    add_long_names(more, 2000, 5000000);
    CHECK_EQ_INT(trove_names_set(more, TROVE_NAME_EVENT, 1000007, 0, "renamed", 7), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev, 7000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, more, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_names_merge(names, more), TROVE_OK);
    for (size_t i = 0; i < ev.len; i++)
        CHECK_EQ_INT(trove_events_push(&all, &ev.ev[i]), TROVE_OK);
    for (size_t i = 0; i < 7000; i++)
        CHECK_EQ_INT(trove_events_push(&all, &ev.ev[i]), TROVE_OK);
    CHECK_EQ_INT(write_capture(s, "np.ref", &all, names, 32 * 4096, 1000, &again), TROVE_OK);
    CHECK(same_slots(s, "np", "np.ref"));
    CHECK(same_info(&info, &again) && info.names == trove_names_count(names));
    expect_names(s, "np", names);
    expect_range(s, "np", &all, names, 0, UINT64_MAX, TROVE_WIRE_PACKED, 0, 1000);

    /* a damaged part is named by reads and replays */
    {
        struct trove_digest d;
        struct trove_bytes obj = {0};
        struct trove_names *back = NULL;
        char hex[33], want[64];
        uint64_t slot;
        CHECK_EQ_INT(read_header(s, "np", &h), TROVE_OK);
        slot = 2 + h.info.segments;
        CHECK(h.info.segments == 7 && h.names_parts == 2);
        slot_digest(s, "np", slot, &d);
        trove_capture_header_free(&h);
        trove_digest_hex(&d, hex);
        CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
        obj.ptr[obj.len / 2] ^= 0x20;
        damage(s, &d, obj.ptr, obj.len);
        CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
        diag.msg[0] = 0;
        CHECK_EQ_INT(trove_capture_read_names(s, "np.ref", back, &diag), TROVE_ERR_CHECKSUM);
        snprintf(want, sizeof want, "names part (slot %" PRIu64 ")", slot);
        CHECK(strstr(diag.msg, want) != NULL);
        snprintf(want, sizeof want, "names part 1 of 2 (slot %" PRIu64 ")", slot);
        expect_replay_error(s, "np.ref", TROVE_WIRE_DEFLATE, TROVE_ERR_CHECKSUM, want, hex,
                            "a damaged names part");
        trove_bytes_free(&obj);
        trove_names_free(back);
        /* written again, it heals */
        CHECK_EQ_INT(write_capture(s, "np.ref", &all, names, 32 * 4096, 1000, &again), TROVE_OK);
        expect_names(s, "np", names);
    }
    trove_names_free(more);
    trove_names_free(names);
    trove_events_free(&ev);
    trove_events_free(&all);
    trove_volume_remove(s, "np", NULL);
    trove_volume_remove(s, "np.ref", NULL);

    /* Cut small: 2,000 names of about 100 bytes in frames of about 2 KiB and parts of at
     * most 16 KiB, beside flows and a profile, whose slots follow the parts. */
    trove_testing_capture_names_cut(2048, 16384);
    gen_capture(3000, 32, &ev, &names);
    add_long_names(names, 2000, 1000000);
    {
        struct trove_flows flows = {0}, fback = {0};
        struct trove_profile *p = make_profile(20, 1000, 0), *pback = NULL;
        for (size_t i = 0; i < ev.len; i += 10) {
            struct trove_flow f = {ev.ev[i].start_ns, 1 + i / 30, ev.ev[i].pid, ev.ev[i].tid, 0,
                                   (uint8_t)(i / 10 % 3), 1, {0, 0}};
            CHECK_EQ_INT(trove_flows_push(&flows, &f), TROVE_OK);
        }
        CHECK_EQ_INT(trove_capture_write_profile(s, "small", ev.ev, ev.len, names, flows.f,
                                                 flows.len, p, NULL, &info, &diag),
                     TROVE_OK);
        CHECK_EQ_INT(read_header(s, "small", &h), TROVE_OK);
        CHECK(h.names_parts >= 10 && h.version == 3 && h.profile_objects == 1);
        for (uint32_t j = 0; j < h.names_parts; j++)
            CHECK(h.names_part[j].bytes <= 16384);
        trove_capture_header_free(&h);
        check_layout(s, "small", &ev, names, TROVE_CAPTURE_SEGMENT_BYTES_DEFAULT / 32,
                     TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
        expect_names(s, "small", names);
        expect_range(s, "small", &ev, names, 0, UINT64_MAX, TROVE_WIRE_RAW, 0,
                     TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);
        CHECK_EQ_INT(trove_capture_read_flows(s, "small", 0, UINT64_MAX, &fback, &diag), TROVE_OK);
        CHECK(fback.len == flows.len && memcmp(fback.f, flows.f, flows.len * sizeof *flows.f) == 0);
        CHECK_EQ_INT(trove_profile_new(&pback), TROVE_OK);
        CHECK_EQ_INT(trove_capture_read_profile(s, "small", pback, &diag), TROVE_OK);
        check_profiles_equal(p, pback);
        trove_profile_free(pback);
        trove_profile_free(p);
        trove_flows_free(&flows);
        trove_flows_free(&fback);
    }
    /* a profile, no flows: the live writer appends and the profile stays readable */
    {
        struct trove_profile *p = make_profile(20, 1000, 0), *pback = NULL;
        CHECK_EQ_INT(trove_capture_write_profile(s, "small2", ev.ev, ev.len, names, NULL, 0, p,
                                                 NULL, &info, &diag),
                     TROVE_OK);
        CHECK_EQ_INT(trove_names_new(&more), TROVE_OK);
        add_long_names(more, 500, 3000000); /* four parts more: the profile moves up */
        CHECK_EQ_INT(trove_capture_writer_open(s, "small2", 1, NULL, &w, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_capture_writer_names(w, more, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev, 100, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
        trove_capture_writer_close(w);
        CHECK_EQ_INT(trove_names_merge(names, more), TROVE_OK);
        expect_names(s, "small2", names);
        CHECK_EQ_INT(trove_profile_new(&pback), TROVE_OK);
        CHECK_EQ_INT(trove_capture_read_profile(s, "small2", pback, &diag), TROVE_OK);
        check_profiles_equal(p, pback);
        trove_profile_free(pback);
        trove_profile_free(p);
        trove_names_free(more);
    }
    /* the limits: a frame over a part, names over MAX_NAMES_PARTS parts; no capture is
     * committed, by a write or a live writer */
    trove_testing_capture_names_cut(2048, 1024);
    diag.msg[0] = 0;
    CHECK_EQ_INT(trove_capture_write(s, "over", ev.ev, ev.len, names, NULL, &info, &diag),
                 TROVE_ERR_LIMIT);
    CHECK(strstr(diag.msg, "capture over: the names frame of entries ") &&
          strstr(diag.msg, "over the 1024-byte limit of an object"));
    trove_testing_capture_names_cut(256, 512);
    diag.msg[0] = 0;
    CHECK_EQ_INT(trove_capture_write(s, "over", ev.ev, ev.len, names, NULL, &info, &diag),
                 TROVE_ERR_LIMIT);
    CHECK(strstr(diag.msg, "capture over: its names pass the limit") &&
          strstr(diag.msg, "in 33 objects so far"));
    CHECK_EQ_INT(trove_capture_info(s, "over", &info, NULL), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_capture_writer_open(s, "over", 0, NULL, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, names, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_ERR_LIMIT);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_info(s, "over", &info, NULL), TROVE_ERR_NOTFOUND);
    trove_testing_capture_names_cut(0, 0);
    trove_names_free(names);
    trove_events_free(&ev);
    trove_store_close(s);
}

int main(int argc, char **argv)
{
    struct trove_store *s = NULL;

    test_init(argc, argv);
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(sdir, sizeof sdir, "%s/store", root);
    if (trove_store_open(sdir, TROVE_STORE_CREATE | TROVE_STORE_NOSYNC, &s, NULL) != TROVE_OK) {
        fprintf(stderr, "cannot create the store %s\n", sdir);
        test_rm_rf(root);
        return 1;
    }
    trove_store_close(s);
    RUN(test_write_flows);
    RUN(test_flows_against_events);
    RUN(test_write_profile);
    RUN(test_write_attrs);
    RUN(test_replay_attrs);
    RUN(test_read_names);
    RUN(test_sort_indexes);
    RUN(test_names_parts);
    test_rm_rf(root);
    return test_done();
}
