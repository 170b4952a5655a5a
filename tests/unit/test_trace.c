/*
 * test_trace.c: a capture out to other tools and back (include/trove/trace.h) — the Chrome
 * JSON writer (src/codec/chrome_export.c), the Perfetto writer and reader
 * (src/codec/perfetto_write.c, perfetto_read.c), and their shared layout (trace_sched.c).
 *
 * - Golden vectors: a small capture of every kind of event and a flow, written as
 *   tests/vectors/chrome_small.json and tests/vectors/perfetto_small.pftrace, byte for byte
 *   (docs/formats/perfetto.md dumps the latter); regenerate with TROVE_REGEN_VECTORS=1.
 * - Round trips: Chrome JSON export then import gives the same events, flows and names (ids
 *   may be renumbered: compared by their strings); Perfetto write then read gives exactly the
 *   same events and flows, and the same names — for the small capture, the hand-made
 *   chrome_async.json and the real sample trace (../shared/data); generated captures (with
 *   counters and flows added) at several seeds, sizes and clocks come back from both with
 *   every field of every event, depth included; a sampled capture's profile comes back from
 *   Perfetto sample for sample, frame for frame.
 * - Bad Perfetto input: every prefix of the golden file, and hand-built traces that break
 *   one rule each (a group, a long varint, a length past its message, a track nobody
 *   describes, parents in a loop, an end before its begin, unmatched slices when strict, a
 *   name over the limit, an event without a time); each is a seed of fuzz/corpus/fuzz_perfetto
 *   (TROVE_PERFETTO_CORPUS=dir writes them). And the sniffer, on every format trove reads.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/chrome.h"
#include "trove/gen.h"
#include "trove/profile.h"
#include "trove/trace.h"

#define SYN TROVE_TID_SYNTHETIC

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

static void ev(struct cap *c, uint64_t start, uint64_t dur, uint32_t pid, uint32_t tid,
               uint8_t kind, uint8_t depth, uint8_t extra, uint32_t name)
{
    struct trove_event e = {start, dur, pid, tid, kind, depth, extra, 0, name};
    if (trove_events_push(&c->ev, &e) != TROVE_OK)
        abort();
}

static void name(struct cap *c, int type, uint32_t a, uint32_t b, const char *s)
{
    if (trove_names_set(c->names, type, a, b, s, strlen(s)) != TROVE_OK)
        abort();
}

/*
 * The small capture: in trove order (start, pid, tid, depth), as the Chrome importer would
 * make it. A thread zone with a child and an instant inside, a process-scoped instant, a
 * nestable async span with a child and an async instant, a legacy span with a step, two
 * counter series, a flow of three points, names for all of it, and a name no event uses.
 */
static void small_capture(struct cap *c)
{
    cap_init(c);
    name(c, TROVE_NAME_PROCESS, 1, 0, "app");
    name(c, TROVE_NAME_THREAD, 1, 10, "main \"thread\"");
    name(c, TROVE_NAME_THREAD, 1, 11, "worker");
    /* the tids the Chrome importer hands out: by each track's first time */
    name(c, TROVE_NAME_THREAD, 1, SYN, "mem heap");
    name(c, TROVE_NAME_THREAD, 1, SYN + 1, "cpu value");
    name(c, TROVE_NAME_THREAD, 1, SYN + 2, "async: load");
    name(c, TROVE_NAME_THREAD, 1, SYN + 3, "async: job");
    static const char *const names[] = {"frame", "paint", "mark",  "load",
                                        "parse", "progress", "job", "step1",
                                        "mem",   "cpu",   "msg",   "unused \xc3\xa9"};
    for (uint32_t i = 0; i < sizeof names / sizeof names[0]; i++)
        name(c, TROVE_NAME_EVENT, i, 0, names[i]);
    ev(c, 1000, 0x4090000000000000ull, 1, SYN, TROVE_KIND_COUNTER, 0, 0, 8);    /* mem 1024 */
    ev(c, 1500, 0xBFE0000000000000ull, 1, SYN + 1, TROVE_KIND_COUNTER, 0, 0, 9); /* cpu -0.5 */
    ev(c, 2000, 100500, 1, 10, TROVE_KIND_ZONE, 0, 0, 0);
    ev(c, 2000, 0x40A0000000000000ull, 1, SYN, TROVE_KIND_COUNTER, 0, 0, 8);    /* mem 2048 */
    ev(c, 2250, 50000, 1, 10, TROVE_KIND_ZONE, 1, 0, 1);
    ev(c, 3000, 0, 1, 10, TROVE_KIND_INSTANT, 2, TROVE_SCOPE_THREAD, 2);
    ev(c, 4000, 0, 1, 11, TROVE_KIND_INSTANT, 0, TROVE_SCOPE_PROCESS, 2);
    ev(c, 5000, 20000, 1, SYN + 2, TROVE_KIND_ZONE, 0, TROVE_ASYNC_NESTABLE, 3);
    ev(c, 6000, 1000, 1, SYN + 2, TROVE_KIND_ZONE, 1, TROVE_ASYNC_NESTABLE, 4);
    ev(c, 6500, 0, 1, SYN + 2, TROVE_KIND_ASYNC_INSTANT, 2, 0, 5);
    ev(c, 7000, 3000, 1, SYN + 3, TROVE_KIND_ZONE, 0, TROVE_ASYNC_LEGACY, 6);
    ev(c, 8000, 2000, 1, SYN + 3, TROVE_KIND_ZONE, 1, TROVE_ASYNC_STEP, 7);
    {
        static const struct trove_flow f[] = {
            {2500, 1, 1, 10, 10, TROVE_FLOW_START, TROVE_FLOW_ENCLOSING, {0, 0}},
            {4000, 1, 1, 11, 10, TROVE_FLOW_STEP, TROVE_FLOW_ENCLOSING, {0, 0}},
            {9000, 1, 1, 11, 10, TROVE_FLOW_END, 0, {0, 0}},
        };
        for (size_t i = 0; i < 3; i++)
            if (trove_flows_push(&c->flows, &f[i]) != TROVE_OK)
                abort();
    }
}

/* The small capture with sort indexes: of its process, a thread, an async track, a thread
 * that has nothing else, and a process that has nothing else. */
static void sort_capture(struct cap *c)
{
    small_capture(c);
    if (trove_names_set_sort(c->names, TROVE_NAME_PROCESS_SORT, 1, 0, -1) != TROVE_OK ||
        trove_names_set_sort(c->names, TROVE_NAME_THREAD_SORT, 1, 10, 3) != TROVE_OK ||
        trove_names_set_sort(c->names, TROVE_NAME_THREAD_SORT, 1, SYN + 2, INT32_MIN) !=
            TROVE_OK ||
        trove_names_set_sort(c->names, TROVE_NAME_THREAD_SORT, 2, 20, 0) != TROVE_OK ||
        trove_names_set_sort(c->names, TROVE_NAME_PROCESS_SORT, 3, 0, INT32_MAX) != TROVE_OK)
        abort();
}

/* The name of event name id in names ("" if none, which the small capture never has). */
static const char *event_name(const struct trove_names *n, uint32_t id, size_t *len)
{
    const char *s = trove_names_get(n, TROVE_NAME_EVENT, id, 0, len);
    if (!s) {
        *len = 0;
        return "";
    }
    return s;
}

/* The flow rows of a and b are the same, names by their strings. */
static int same_flows(const struct cap *a, const struct cap *b)
{
    if (a->flows.len != b->flows.len)
        return 0;
    for (size_t i = 0; i < a->flows.len; i++) {
        struct trove_flow x = a->flows.f[i], y = b->flows.f[i];
        size_t lx, ly;
        const char *nx = event_name(a->names, x.name_id, &lx);
        const char *ny = event_name(b->names, y.name_id, &ly);
        if (lx != ly || memcmp(nx, ny, lx))
            return 0;
        x.name_id = y.name_id = 0;
        if (memcmp(&x, &y, sizeof x))
            return 0;
    }
    return 1;
}

/* a and b hold the same events and flows, names compared by their strings. */
static int same_by_name(const struct cap *a, const struct cap *b)
{
    if (a->ev.len != b->ev.len || a->flows.len != b->flows.len)
        return 0;
    for (size_t i = 0; i < a->ev.len; i++) {
        struct trove_event x = a->ev.ev[i], y = b->ev.ev[i];
        size_t lx, ly;
        const char *nx = event_name(a->names, x.name_id, &lx);
        const char *ny = event_name(b->names, y.name_id, &ly);
        if (lx != ly || memcmp(nx, ny, lx))
            return 0;
        x.name_id = y.name_id = 0;
        if (memcmp(&x, &y, sizeof x)) {
            fprintf(stderr, "event %zu differs: %llu %llu %u %u %u %u %u vs %llu %llu %u %u %u "
                            "%u %u\n",
                    i, (unsigned long long)x.start_ns, (unsigned long long)x.dur_ns, x.pid, x.tid,
                    x.kind, x.depth, x.extra, (unsigned long long)y.start_ns,
                    (unsigned long long)y.dur_ns, y.pid, y.tid, y.kind, y.depth, y.extra);
            return 0;
        }
    }
    return same_flows(a, b);
}

static int same_exactly(const struct cap *a, const struct cap *b)
{
    return a->ev.len == b->ev.len && a->flows.len == b->flows.len &&
           (a->ev.len == 0 || !memcmp(a->ev.ev, b->ev.ev, a->ev.len * sizeof *a->ev.ev)) &&
           (a->flows.len == 0 ||
            !memcmp(a->flows.f, b->flows.f, a->flows.len * sizeof *a->flows.f));
}

/* Thread and process names and sort indexes of a equal those of b (event names are compared
 * elsewhere). */
static int same_track_names(const struct trove_names *a, const struct trove_names *b)
{
    for (int pass = 0; pass < 2; pass++) {
        const struct trove_names *x = pass ? b : a, *y = pass ? a : b;
        for (size_t i = 0; i < trove_names_count(x); i++) {
            struct trove_name_entry e;
            size_t len = 0;
            const char *s;
            trove_names_entry(x, i, &e);
            if (e.type == TROVE_NAME_EVENT)
                continue;
            if (trove_name_type_is_sort(e.type)) {
                int32_t v = 0;
                if (!trove_names_get_sort(y, e.type, e.a, e.b, &v) || v != e.sort_index)
                    return 0;
                continue;
            }
            s = trove_names_get(y, e.type, e.a, e.b, &len);
            if (!s || len != e.len || memcmp(s, e.str, len))
                return 0;
        }
    }
    return 1;
}

static void chrome_back(const struct trove_bytes *json, struct cap *out)
{
    struct trove_chrome_options opt = {.strict = 1};
    struct trove_diag diag = {0};
    int rc;
    cap_init(out);
    rc = trove_chrome_import_all_mem(json->ptr, json->len, &opt, &out->ev, out->names,
                                     &out->flows, NULL, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "chrome re-import: %s at %llu\n", diag.msg,
                (unsigned long long)diag.offset);
    CHECK_EQ_INT(rc, TROVE_OK);
}

static void perfetto_back(const struct trove_bytes *pb, struct cap *out,
                          struct trove_perfetto_stats *st)
{
    struct trove_perfetto_options opt = {.strict = 1, .max_input = 0};
    struct trove_diag diag = {0};
    int rc;
    cap_init(out);
    rc = trove_perfetto_read(pb->ptr, pb->len, &opt, &out->ev, out->names, &out->flows, st, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "perfetto read: %s at %llu\n", diag.msg, (unsigned long long)diag.offset);
    CHECK_EQ_INT(rc, TROVE_OK);
}

/* Both round trips of capture c; exact says the Chrome one must keep name ids too. */
static void round_trips(const struct cap *c, const char *what)
{
    struct trove_trace t = as_trace(c);
    struct trove_bytes json = {0}, pb = {0}, pb2 = {0};
    struct trove_perfetto_stats st;
    struct cap back;

    CHECK_EQ_INT(trove_chrome_export(&t, &json, NULL), TROVE_OK);
    chrome_back(&json, &back);
    if (!same_by_name(c, &back))
        fprintf(stderr, "%s: the Chrome JSON round trip differs\n", what);
    CHECK(same_by_name(c, &back));
    CHECK(same_track_names(c->names, back.names));
    cap_free(&back);

    CHECK_EQ_INT(trove_perfetto_write(&t, &pb, NULL), TROVE_OK);
    perfetto_back(&pb, &back, &st);
    if (!same_exactly(c, &back))
        fprintf(stderr, "%s: the Perfetto round trip differs\n", what);
    CHECK(same_exactly(c, &back));
    CHECK(test_same_names(c->names, back.names));
    CHECK_EQ_INT(st.unmatched_begin + st.unmatched_end + st.skipped_packets + st.skipped_events, 0);
    /* trove's own trace carries nothing it would not keep */
    CHECK_EQ_INT(st.annotated_events + st.category_events + st.log_messages + st.other_fields, 0);
    /* and again: the same bytes (names may come back in another order, ids the same) */
    t = as_trace(&back);
    CHECK_EQ_INT(trove_perfetto_write(&t, &pb2, NULL), TROVE_OK);
    CHECK(pb.len == pb2.len);
    cap_free(&back);
    trove_bytes_free(&json);
    trove_bytes_free(&pb);
    trove_bytes_free(&pb2);
}

/* Does buf[0..len) contain the string s? */
static int contains(const struct trove_bytes *b, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= b->len; i++)
        if (!memcmp(b->ptr + i, s, n))
            return 1;
    return 0;
}

static void test_small(void)
{
    struct cap c;
    struct trove_trace t;
    struct trove_bytes json = {0}, pb = {0};
    struct trove_perfetto_stats st;
    struct cap back;

    small_capture(&c);
    t = as_trace(&c);
    CHECK_EQ_INT(trove_chrome_export(&t, &json, NULL), TROVE_OK);
    test_check_vector("chrome_small.json", json.ptr, json.len);
    CHECK_EQ_INT(trove_perfetto_write(&t, &pb, NULL), TROVE_OK);
    test_check_vector("perfetto_small.pftrace", pb.ptr, pb.len);
    test_corpus_write("TROVE_PERFETTO_CORPUS", "golden.pftrace", NULL, 0, pb.ptr, pb.len);
    CHECK_EQ_INT(trove_perfetto_sniff(pb.ptr, pb.len), 1);
    round_trips(&c, "small");

    /* what the reader counted: 6 zones (each a begin and an end), 2 instants and an async
     * instant, 3 counter values, 3 flow points */
    perfetto_back(&pb, &back, &st);
    CHECK_EQ_INT(st.slices, 6);
    CHECK_EQ_INT(st.instants, 3);
    CHECK_EQ_INT(st.counters, 3);
    CHECK_EQ_INT(st.flows, 3);
    /* processes 1, tracks (1,10) (1,11) and four synthetic ones */
    CHECK_EQ_INT(st.track_descriptors, 1 + 2 + 4);
    /* the clock, 7 descriptors, 2 * 6 + 3 + 3 + 3 events, and the unused name */
    CHECK_EQ_INT(st.packets, 1 + 7 + 12 + 3 + 3 + 3 + 1);
    CHECK_EQ_INT(st.track_events, 12 + 3 + 3 + 3);
    CHECK_EQ_INT(st.names, 12);
    {
        const char *s = trove_names_get(back.names, TROVE_NAME_EVENT, 11, 0, NULL);
        CHECK(s && !strcmp(s, "unused \xc3\xa9"));
    }
    cap_free(&back);

    /* what the JSON says, for a few lines */
    CHECK(strstr((const char *)json.ptr, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n") ==
          (const char *)json.ptr);
    CHECK(contains(&json, "\"ts\":2.25,"));
    CHECK(contains(&json, "\"dur\":100.5}"));
    CHECK(contains(&json, "\"args\":{\"heap\":1024}"));
    CHECK(contains(&json, "\"args\":{\"value\":-0.5}"));
    CHECK(contains(&json, "\"main \\\"thread\\\"\""));
    /* a counter JSON cannot hold */
    {
        struct trove_diag diag = {0};
        size_t before = json.len;
        c.ev.ev[0].dur_ns = 0x7ff0000000000000ull; /* +inf */
        CHECK_EQ_INT(trove_chrome_export(&t, &json, &diag), TROVE_ERR_INVALID);
        CHECK(strstr(diag.msg, "not a finite") != NULL);
        CHECK_EQ_INT(json.len, before);
        /* Perfetto holds it */
        pb.len = 0;
        CHECK_EQ_INT(trove_perfetto_write(&t, &pb, NULL), TROVE_OK);
        perfetto_back(&pb, &back, NULL);
        CHECK(back.ev.len == c.ev.len && back.ev.ev[0].dur_ns == 0x7ff0000000000000ull);
        CHECK(isinf(trove_counter_value(&back.ev.ev[0])));
        cap_free(&back);
    }
    trove_bytes_free(&json);
    trove_bytes_free(&pb);
    cap_free(&c);
}

/* Sort indexes: the Chrome writer puts one M event each after the names, in the names
 * table's order, tracks' too, and the importer takes them all back; the Perfetto writer puts
 * them in the process and thread descriptors, and reads them back. */
static void test_sort_indexes(void)
{
    static const char *const want =
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":11,\"args\":{\"name\":"
        "\"worker\"}},\n"
        "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1,\"tid\":0,\"args\":"
        "{\"sort_index\":-1}},\n"
        "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":10,\"args\":"
        "{\"sort_index\":3}},\n"
        "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":4261412866,"
        "\"args\":{\"sort_index\":-2147483648}},\n"
        "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":2,\"tid\":20,\"args\":"
        "{\"sort_index\":0}},\n"
        "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":3,\"tid\":0,\"args\":"
        "{\"sort_index\":2147483647}},\n"
        "{\"ph\":\"C\",";
    struct cap c, plain;
    struct trove_trace t;
    struct trove_bytes json = {0}, json0 = {0};

    sort_capture(&c);
    t = as_trace(&c);
    CHECK_EQ_INT(trove_chrome_export(&t, &json, NULL), TROVE_OK);
    CHECK(contains(&json, want));
    /* and back: every sort index, the async track's too (it gets the same tid again) */
    {
        struct cap back;
        chrome_back(&json, &back);
        CHECK(same_by_name(&c, &back));
        CHECK(same_track_names(c.names, back.names)); /* both ways */
        cap_free(&back);
    }
    /* without them, the same output as ever, less those lines */
    small_capture(&plain);
    t = as_trace(&plain);
    CHECK_EQ_INT(trove_chrome_export(&t, &json0, NULL), TROVE_OK);
    CHECK(!contains(&json0, "sort_index"));
    /* Perfetto: a process's and a real thread's sort index ride in their descriptors; an
     * async track's has no place there and is the one left behind */
    {
        struct trove_names *kept = NULL;
        struct trove_bytes pb = {0}, pb0 = {0};
        struct cap back;
        int32_t v = 0;
        CHECK_EQ_INT(trove_names_new(&kept), TROVE_OK);
        for (size_t i = 0; i < trove_names_count(c.names); i++) {
            struct trove_name_entry e;
            trove_names_entry(c.names, i, &e);
            if (!(e.type == TROVE_NAME_THREAD_SORT && trove_tid_is_synthetic(e.b)))
                CHECK_EQ_INT(trove_names_put(kept, &e), TROVE_OK);
        }
        t = as_trace(&c);
        CHECK_EQ_INT(trove_perfetto_write(&t, &pb, NULL), TROVE_OK);
        test_corpus_write("TROVE_PERFETTO_CORPUS", "sort_indexes.pftrace", NULL, 0, pb.ptr,
                          pb.len);
        perfetto_back(&pb, &back, NULL);
        CHECK(same_exactly(&c, &back));
        CHECK(test_same_names(kept, back.names) && test_same_names(back.names, kept));
        CHECK(trove_names_get_sort(back.names, TROVE_NAME_PROCESS_SORT, 3, 0, &v) &&
              v == INT32_MAX);
        CHECK(trove_names_get_sort(back.names, TROVE_NAME_THREAD_SORT, 2, 20, &v) && v == 0);
        CHECK(!trove_names_get_sort(back.names, TROVE_NAME_THREAD_SORT, 1, SYN + 2, &v));
        CHECK(trove_names_get(back.names, TROVE_NAME_THREAD, 2, 20, NULL) == NULL);
        /* written again from what was read: the same length (names may come in another
         * order) */
        t = as_trace(&back);
        CHECK_EQ_INT(trove_perfetto_write(&t, &pb0, NULL), TROVE_OK);
        CHECK_EQ_INT(pb0.len, pb.len);
        cap_free(&back);
        trove_bytes_free(&pb);
        trove_bytes_free(&pb0);
        trove_names_free(kept);
    }
    CHECK_EQ_INT(json.len, json0.len + strlen(want) - strlen("{\"ph\":\"M\",\"name\":\"thread_name"
                                                             "\",\"pid\":1,\"tid\":11,\"args\":{"
                                                             "\"name\":\"worker\"}},\n{\"ph\":\"C\","));
    trove_bytes_free(&json);
    trove_bytes_free(&json0);
    cap_free(&plain);
    cap_free(&c);
}

/* chrome_async.json: what the Chrome importer makes, out and back through both formats. */
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
    CHECK(c.ev.len > 10 && c.flows.len == 7);
    round_trips(&c, "chrome_async.json");
    cap_free(&c);
    free(buf);
}

/* Zones that overlap without nesting, the same interval twice, zero-length zones, frames
 * and locks of the generator's kinds: the Perfetto writer puts the overlaps on lanes. */
static void test_overlap_and_kinds(void)
{
    struct cap c, back;
    struct trove_trace t;
    struct trove_bytes pb = {0};
    struct trove_perfetto_stats st;

    cap_init(&c);
    name(&c, TROVE_NAME_EVENT, 0, 0, "a");
    ev(&c, 0, 10, 5, 6, TROVE_KIND_ZONE, 0, 0, 0);
    ev(&c, 0, 10, 5, 6, TROVE_KIND_ZONE, 1, 0, 0);   /* the same interval */
    ev(&c, 5, 10, 5, 6, TROVE_KIND_FRAME, 2, 0, 0);  /* overlaps both, nests in neither */
    ev(&c, 7, 0, 5, 6, TROVE_KIND_LOCK, 3, 0, 0);    /* zero-length, inside all three */
    ev(&c, 7, 0, 5, 6, TROVE_KIND_ZONE, 3, 0, 1);    /* an id the names do not hold */
    ev(&c, 10, 3, 5, 6, TROVE_KIND_ZONE, 1, 0, 0);   /* starts where the first two end */
    ev(&c, 15, 0, 5, 6, 9, 0, 7, 0);                 /* a kind trove does not know */
    t = as_trace(&c);
    CHECK_EQ_INT(trove_perfetto_write(&t, &pb, NULL), TROVE_OK);
    perfetto_back(&pb, &back, &st);
    CHECK(same_exactly(&c, &back)); /* kinds and extras ride in categories */
    CHECK_EQ_INT(st.track_descriptors, 1 + 1 + 1); /* the process, the thread, one lane */
    CHECK(trove_names_get(back.names, TROVE_NAME_EVENT, 1, 0, NULL) == NULL);
    cap_free(&back);
    trove_bytes_free(&pb);
    cap_free(&c);
}

/* An event with its name's string, to compare captures whose name ids differ. */
struct named {
    struct trove_event e; /* name_id 0 */
    const char *name;
    size_t len;
};

static int cmp_named(const void *pa, const void *pb)
{
    const struct named *a = pa, *b = pb;
    int c = memcmp(&a->e, &b->e, sizeof a->e);
    if (c)
        return c;
    c = memcmp(a->name, b->name, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static struct named *as_named(const struct cap *c)
{
    struct named *v = malloc((c->ev.len ? c->ev.len : 1) * sizeof *v);
    if (!v)
        abort();
    for (size_t i = 0; i < c->ev.len; i++) {
        v[i].e = c->ev.ev[i];
        v[i].name = event_name(c->names, v[i].e.name_id, &v[i].len);
        v[i].e.name_id = 0;
    }
    qsort(v, c->ev.len, sizeof *v, cmp_named);
    return v;
}

/* a and b hold the same events, every field (names by their strings), in any order; the
 * first that differs is said. */
static int same_events(const struct cap *a, const struct cap *b, const char *what)
{
    struct named *x, *y;
    size_t diff = 0;
    if (a->ev.len != b->ev.len) {
        fprintf(stderr, "%s: %zu events came back as %zu\n", what, a->ev.len, b->ev.len);
        return 0;
    }
    x = as_named(a);
    y = as_named(b);
    for (size_t i = 0; i < a->ev.len; i++) {
        if (!cmp_named(&x[i], &y[i]))
            continue;
        if (diff++ == 0)
            fprintf(stderr, "%s: event %llu %llu %u %u kind %u depth %u extra %u %.*s came back "
                            "as %llu %llu %u %u kind %u depth %u extra %u %.*s\n",
                    what, (unsigned long long)x[i].e.start_ns, (unsigned long long)x[i].e.dur_ns,
                    x[i].e.pid, x[i].e.tid, x[i].e.kind, x[i].e.depth, x[i].e.extra,
                    (int)x[i].len, x[i].name, (unsigned long long)y[i].e.start_ns,
                    (unsigned long long)y[i].e.dur_ns, y[i].e.pid, y[i].e.tid, y[i].e.kind,
                    y[i].e.depth, y[i].e.extra, (int)y[i].len, y[i].name);
    }
    if (diff)
        fprintf(stderr, "%s: %zu of %zu events differ\n", what, diff, a->ev.len);
    free(x);
    free(y);
    return diff == 0;
}

/* Add to a generated capture what the generator does not make: a counter series on each
 * pid's first synthetic tid (named as an importer names it), and flows from one zone to a
 * later one on another thread, as rows an importer makes (sorted by time, ids by first row,
 * each flow named after its first row). */
static void add_counters_and_flows(struct cap *c, uint64_t seed)
{
    uint64_t s = seed * 7919 + 1;
    size_t n = c->ev.len, nzones = 0;
    size_t *zones = malloc((n ? n : 1) * sizeof *zones);
    uint32_t cname = 70000;

    if (!zones)
        abort();
    CHECK_EQ_INT(trove_names_set(c->names, TROVE_NAME_EVENT, cname, 0, "load", 4), TROVE_OK);
    for (size_t i = 0; i < n; i++) {
        const struct trove_event e = c->ev.ev[i]; /* a copy: the push below may move them */
        if (e.kind != TROVE_KIND_INSTANT && e.dur_ns > 0)
            zones[nzones++] = i;
        if (i % 97 == 0) { /* a counter sample of the event's process */
            struct trove_event k = {e.start_ns, trove_counter_bits((double)(i % 1000) / 8), e.pid,
                                    SYN, TROVE_KIND_COUNTER, 0, 0, 0, cname};
            CHECK_EQ_INT(trove_events_push(&c->ev, &k), TROVE_OK);
            CHECK_EQ_INT(trove_names_set(c->names, TROVE_NAME_THREAD, e.pid, SYN, "load value",
                                         10), TROVE_OK);
        }
    }
    for (size_t k = 0; nzones > 1 && k < 40; k++) {
        const struct trove_event *a = &c->ev.ev[zones[test_rand(&s) % nzones]];
        const struct trove_event *b = &c->ev.ev[zones[test_rand(&s) % nzones]];
        struct trove_flow f = {0};
        if (a->start_ns >= b->start_ns || (a->pid == b->pid && a->tid == b->tid))
            continue;
        f.ts_ns = a->start_ns;
        f.pid = a->pid;
        f.tid = a->tid;
        f.name_id = a->name_id;
        f.phase = TROVE_FLOW_START;
        f.flags = TROVE_FLOW_ENCLOSING;
        f.id = k + 1;
        CHECK_EQ_INT(trove_flows_push(&c->flows, &f), TROVE_OK);
        f.ts_ns = b->start_ns;
        f.pid = b->pid;
        f.tid = b->tid;
        f.phase = TROVE_FLOW_END;
        CHECK_EQ_INT(trove_flows_push(&c->flows, &f), TROVE_OK);
    }
    free(zones);
    { /* as an importer gives them: by (ts, pid, tid, input order), ids by first row */
        struct trove_flow *f = c->flows.f;
        uint64_t *map = calloc(64, sizeof *map), next = 1;
        for (size_t i = 1; i < c->flows.len; i++) /* insertion sort: stable, and few rows */
            for (size_t j = i; j > 0; j--) {
                struct trove_flow t;
                if (f[j - 1].ts_ns < f[j].ts_ns ||
                    (f[j - 1].ts_ns == f[j].ts_ns &&
                     (f[j - 1].pid < f[j].pid ||
                      (f[j - 1].pid == f[j].pid && f[j - 1].tid <= f[j].tid))))
                    break;
                t = f[j];
                f[j] = f[j - 1];
                f[j - 1] = t;
            }
        if (!map)
            abort();
        for (size_t i = 0; i < c->flows.len; i++) {
            if (!map[f[i].id])
                map[f[i].id] = next++;
            f[i].id = map[f[i].id];
        }
        free(map);
    }
}

/*
 * Generated captures — nested zones, frames and locks (whose extra is the generator's
 * category, 1 and 2 among them), instants of every scope, children that start on the tick
 * their parent ends, zones of 0 ns — with counters and flows added, through both formats
 * and back: every event comes back exactly, depth and extra and kind included, at a few
 * seeds, sizes and clocks (the case: 200,000 events at the default 1 µs tick, which
 * came back 9,172 events short from Chrome JSON).
 */
static void test_gen(void)
{
    static const struct {
        uint64_t seed, events, tick;
        uint32_t processes, threads;
    } cases[] = {
        {1, 200000, 1000, 4, 8}, {2, 30000, 1000, 2, 3}, {3, 30000, 1, 4, 8},
        {4, 5000, 100000, 1, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct trove_gen_options g;
        struct cap c, back;
        struct trove_trace t;
        struct trove_bytes json = {0}, pb = {0};
        char what[96];

        cap_init(&c);
        trove_gen_defaults(&g);
        g.seed = cases[k].seed;
        g.events = cases[k].events;
        g.tick_ns = cases[k].tick;
        g.processes = cases[k].processes;
        g.threads = cases[k].threads;
        CHECK_EQ_INT(trove_gen(&g, &c.ev, c.names), TROVE_OK);
        add_counters_and_flows(&c, cases[k].seed);
        t = as_trace(&c);

        CHECK_EQ_INT(trove_chrome_export(&t, &json, NULL), TROVE_OK);
        chrome_back(&json, &back);
        snprintf(what, sizeof what, "gen seed %llu, %llu events: Chrome JSON",
                 (unsigned long long)cases[k].seed, (unsigned long long)cases[k].events);
        CHECK(same_events(&c, &back, what));
        CHECK(same_flows(&c, &back));
        cap_free(&back);

        CHECK_EQ_INT(trove_perfetto_write(&t, &pb, NULL), TROVE_OK);
        perfetto_back(&pb, &back, NULL);
        snprintf(what, sizeof what, "gen seed %llu, %llu events: Perfetto",
                 (unsigned long long)cases[k].seed, (unsigned long long)cases[k].events);
        CHECK(same_events(&c, &back, what));
        CHECK(same_flows(&c, &back));
        cap_free(&back);
        trove_bytes_free(&json);
        trove_bytes_free(&pb);
        cap_free(&c);
    }
}

/* ---- a profile through Perfetto -------------------------------------------------------- */

static int bytes_sink(void *ctx, const void *p, size_t n)
{
    return trove_bytes_append(ctx, p, n);
}

static uint32_t pstr(struct trove_profile *p, const char *s)
{
    uint32_t id = 0;
    CHECK_EQ_INT(trove_profile_string(p, s, strlen(s), &id), TROVE_OK);
    return id;
}

static uint32_t pframe(struct trove_profile *p, const char *module, const char *fn,
                       const char *file, uint32_t line, uint64_t address, uint32_t inl)
{
    struct trove_profile_frame f = {pstr(p, module), pstr(p, fn), pstr(p, file), line, address,
                                    inl};
    uint32_t id = 0;
    CHECK_EQ_INT(trove_profile_frame(p, &f, &id), TROVE_OK);
    return id;
}

/* Stack s of a and stack t of b hold the same frames, every field, strings by their bytes. */
static int same_stack(const struct trove_profile *a, uint32_t s, const struct trove_profile *b,
                      uint32_t t)
{
    while (s != TROVE_PROFILE_ROOT && t != TROVE_PROFILE_ROOT) {
        const struct trove_profile_stack *x = trove_profile_stack_get(a, s);
        const struct trove_profile_stack *y = trove_profile_stack_get(b, t);
        const struct trove_profile_frame *fx = trove_profile_frame_get(a, x->frame);
        const struct trove_profile_frame *fy = trove_profile_frame_get(b, y->frame);
        const uint32_t ix[3] = {fx->module, fx->function, fx->file};
        const uint32_t iy[3] = {fy->module, fy->function, fy->file};
        for (int k = 0; k < 3; k++) {
            size_t lx, ly;
            const char *sx = trove_profile_string_get(a, ix[k], &lx);
            const char *sy = trove_profile_string_get(b, iy[k], &ly);
            if (!sx || !sy || lx != ly || memcmp(sx, sy, lx))
                return 0;
        }
        if (fx->line != fy->line || fx->address != fy->address ||
            fx->inline_depth != fy->inline_depth)
            return 0;
        s = x->parent;
        t = y->parent;
    }
    return s == t;
}

/*
 * A sampled capture written as a Perfetto trace and read back: the events as they were, and
 * every sample (time, pid, tid) with the same stack, frame for frame — inlined frames (two
 * levels into one address), recursion (a frame called from itself), a frame in no module, a
 * frame with its file and line, and a sample with no frames at all.
 */
static void test_profile(void)
{
    struct trove_gen_options g;
    struct trove_profile *p = NULL, *q = NULL;
    struct trove_trace_writer_options wo = {TROVE_TRACE_PERFETTO, 0, 0, NULL};
    struct trove_trace_writer_stats wst;
    struct trove_trace_writer *w = NULL;
    struct trove_perfetto_options po = {1, 0, NULL, NULL};
    struct trove_perfetto_stats st;
    struct trove_bytes out = {0};
    struct trove_sink sink = {bytes_sink, &out};
    struct cap c, back;
    uint32_t main_f, run_f, inl1, inl2, rec, unk, stacks[5];
    uint64_t t0;

    cap_init(&c);
    trove_gen_defaults(&g);
    g.events = 3000;
    CHECK_EQ_INT(trove_gen(&g, &c.ev, c.names), TROVE_OK);
    t0 = c.ev.ev[0].start_ns;
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    main_f = pframe(p, "/usr/bin/app", "main", "app.c", 10, 0x1100, 0);
    run_f = pframe(p, "/usr/bin/app", "run", "app.c", 42, 0x1200, 0);
    inl1 = pframe(p, "/usr/bin/app", "step", "step.h", 7, 0x1200, 1);  /* inlined into run */
    inl2 = pframe(p, "/usr/bin/app", "leaf", "leaf.h", 3, 0x1200, 2);  /* ... and deeper */
    rec = pframe(p, "/lib/libc.so.6", "qsort_r", "", 0, 0x4000, 0);
    unk = pframe(p, TROVE_PROFILE_UNKNOWN_MODULE, "[unknown]+0x7f00", "", 0, 0x7f00, 0);
    {
        const uint32_t s0[] = {inl2, inl1, run_f, main_f};           /* leaf first */
        const uint32_t s1[] = {rec, rec, rec, run_f, main_f};         /* recursion */
        const uint32_t s2[] = {unk, main_f};
        const uint32_t s3[] = {run_f, main_f};
        CHECK_EQ_INT(trove_profile_stack_path(p, s0, 4, &stacks[0]), TROVE_OK);
        CHECK_EQ_INT(trove_profile_stack_path(p, s1, 5, &stacks[1]), TROVE_OK);
        CHECK_EQ_INT(trove_profile_stack_path(p, s2, 2, &stacks[2]), TROVE_OK);
        CHECK_EQ_INT(trove_profile_stack_path(p, s3, 2, &stacks[3]), TROVE_OK);
        stacks[4] = TROVE_PROFILE_ROOT;
    }
    for (uint32_t i = 0; i < 500; i++) {
        struct trove_profile_sample sm = {t0 + 1000 * (uint64_t)i + i % 7, c.ev.ev[i].pid,
                                          c.ev.ev[i].tid, stacks[i % 5]};
        CHECK_EQ_INT(trove_profile_sample(p, &sm), TROVE_OK);
    }
    {
        struct trove_profile_switch sw = {t0, c.ev.ev[0].pid, c.ev.ev[0].tid, 0};
        CHECK_EQ_INT(trove_profile_switch(p, &sw), TROVE_OK); /* not carried */
    }

    CHECK_EQ_INT(trove_trace_writer_new(&wo, &w), TROVE_OK);
    CHECK_EQ_INT(trove_trace_writer_add(w, c.ev.ev, c.ev.len, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_trace_writer_profile(w, p), TROVE_OK);
    CHECK_EQ_INT(trove_trace_writer_finish(w, c.names, NULL, 0, &sink, &wst, NULL), TROVE_OK);
    CHECK_EQ_INT(wst.samples, 500);
    CHECK_EQ_INT(trove_trace_writer_profile(w, p), TROVE_ERR_INVALID); /* after the finish */
    trove_trace_writer_free(w);

    CHECK_EQ_INT(trove_profile_new(&q), TROVE_OK);
    po.profile = q;
    cap_init(&back);
    CHECK_EQ_INT(trove_perfetto_read(out.ptr, out.len, &po, &back.ev, back.names, &back.flows,
                                     &st, NULL),
                 TROVE_OK);
    CHECK(same_events(&c, &back, "a sampled capture through Perfetto"));
    CHECK_EQ_INT(st.samples, 500);
    CHECK_EQ_INT(trove_profile_sample_count(q), 500);
    CHECK_EQ_INT(trove_profile_switch_count(q), 0);
    for (size_t i = 0; i < 500 && i < trove_profile_sample_count(q); i++) {
        const struct trove_profile_sample *a = &trove_profile_samples(p)[i];
        const struct trove_profile_sample *b = &trove_profile_samples(q)[i];
        CHECK(a->time_ns == b->time_ns && a->pid == b->pid && a->tid == b->tid);
        CHECK(same_stack(p, a->stack, q, b->stack));
    }
    /* without a profile to read into, the samples are counted as skipped packets */
    cap_free(&back);
    cap_init(&back);
    po.profile = NULL;
    CHECK_EQ_INT(trove_perfetto_read(out.ptr, out.len, &po, &back.ev, back.names, &back.flows,
                                     &st, NULL),
                 TROVE_OK);
    CHECK_EQ_INT(st.samples, 0);
    CHECK_EQ_INT(st.skipped_packets, 500);
    CHECK(same_events(&c, &back, "a sampled capture through Perfetto, profile not read"));
    cap_free(&back);
    trove_profile_free(q);
    trove_profile_free(p);
    trove_bytes_free(&out);
    cap_free(&c);
}

/* ---- the sample ------------------------------------------------------------------------- */

static void test_sample(void)
{
    static const char *path = TROVE_SHARED_DATA "/chrome-trace-dom.json.zst";
    struct trove_chrome_options opt = {.strict = 0};
    struct cap c;
    char cmd[1024];
    FILE *f = fopen(path, "rb");
    int rc;

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
    rc = trove_chrome_import_all(f, &opt, &c.ev, c.names, &c.flows, NULL, NULL);
    CHECK_EQ_INT(pclose(f), 0);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK_EQ_INT(c.ev.len, 306749);
    CHECK_EQ_INT(c.flows.len, 6366);
    round_trips(&c, "the sample");
    cap_free(&c);
}

/* ---- bad Perfetto input ------------------------------------------------------------------ */

#include "perfetto_test.h"

static int decode_perfetto(const uint8_t *buf, size_t len, void *out, struct trove_diag *diag)
{
    struct trove_perfetto_options opt = {.strict = 1, .max_input = 0};
    return trove_perfetto_read(buf, len, &opt, out, NULL, NULL, NULL, diag);
}

static void expect_bad(const struct pb *p, int want, const char *needle, const char *what,
                       const char *seed)
{
    test_expect_decode_error(decode_perfetto, sizeof(struct trove_events), p->b, p->n, want,
                             UINT64_MAX, needle, what);
    if (seed)
        test_corpus_write("TROVE_PERFETTO_CORPUS", seed, NULL, 0, p->b, p->n);
}

/* What a foreign trace's track events carry that trove does not keep is counted: debug
 * annotations (and the events with them), categories other than trove's own, log messages
 * and other fields; trove's own export carries none of them. */
static void test_perfetto_not_kept(void)
{
    struct pb p = {{0}, 0}, e1 = {{0}, 0}, e2 = {{0}, 0}, pk1 = {{0}, 0}, pk2 = {{0}, 0};
    struct pb ann = {{0}, 0}, cat = {{0}, 0}, trove_cat = {{0}, 0};
    struct trove_perfetto_options opt = {0, 0, NULL, NULL};
    struct trove_perfetto_stats st;
    struct trove_events ev = {0};
    struct trove_diag diag = {0};

    put_track(&p, 7, 0, 1, 1);
    /* an instant with two annotations, a category "blink", a log message, field 99 */
    put_uint(&e1, 9, 3);
    put_uint(&e1, 11, 7);
    put_uint(&ann, 10, 1);
    put_msg(&e1, 4, &ann);
    put_msg(&e1, 4, &ann);
    memcpy(cat.b, "blink", 5), cat.n = 5;
    put_msg(&e1, 22, &cat);
    put_msg(&e1, 21, &ann);
    put_uint(&e1, 99, 5);
    put_uint(&pk1, 8, 100);
    put_uint(&pk1, 10, 1);
    put_msg(&pk1, 11, &e1);
    put_msg(&p, 1, &pk1);
    /* an instant with only trove's own category: nothing to say */
    put_uint(&e2, 9, 3);
    put_uint(&e2, 11, 7);
    memcpy(trove_cat.b, "trove:depth:0", 13), trove_cat.n = 13;
    put_msg(&e2, 22, &trove_cat);
    put_uint(&pk2, 8, 200);
    put_uint(&pk2, 10, 1);
    put_msg(&pk2, 11, &e2);
    put_msg(&p, 1, &pk2);
    CHECK_EQ_INT(trove_perfetto_read(p.b, p.n, &opt, &ev, NULL, NULL, &st, &diag), TROVE_OK);
    CHECK_EQ_INT(ev.len, 2);
    CHECK_EQ_INT(st.annotated_events, 1);
    CHECK_EQ_INT(st.annotations, 2);
    CHECK_EQ_INT(st.category_events, 1);
    CHECK_EQ_INT(st.log_messages, 1);
    CHECK_EQ_INT(st.other_fields, 1);
    trove_events_free(&ev);
}

/* Bad profile input: a perf sample whose callstack, frame or mapping no interned entry has
 * is refused by name (with a profile to read into), and a Chrome "trove" member that is not
 * an integer 0..255, or a kind the phase cannot be, is refused; a good one is kept. */
static int decode_with_profile(const uint8_t *buf, size_t len, void *out, struct trove_diag *diag)
{
    struct trove_perfetto_options opt = {1, 0, NULL, NULL};
    int rc;
    if (trove_profile_new(&opt.profile) != TROVE_OK)
        abort();
    rc = trove_perfetto_read(buf, len, &opt, out, NULL, NULL, NULL, diag);
    trove_profile_free(opt.profile);
    return rc;
}

static void test_bad_profile(void)
{
    static const struct {
        const char *json;
        int rc;
    } members[] = {
        {"{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1,\"trove\":{\"kind\":5}}",
         TROVE_ERR_TRACE},
        {"{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1,\"trove\":{\"depth\":300}}",
         TROVE_ERR_TRACE},
        {"{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1,\"trove\":{\"extra\":-1}}",
         TROVE_ERR_TRACE},
        {"{\"ph\":\"i\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"trove\":{\"kind\":3}}",
         TROVE_ERR_TRACE},
        {"{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1,"
         "\"trove\":{\"kind\":3,\"extra\":7,\"depth\":2,\"later\":[1]}}",
         TROVE_OK},
    };
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        struct trove_chrome_options opt = {.strict = 1};
        struct trove_events ev = {0};
        struct trove_diag diag = {0};
        char doc[512];
        int n = snprintf(doc, sizeof doc, "[%s]", members[i].json);
        int rc = trove_chrome_import_all_mem((const uint8_t *)doc, (size_t)n, &opt, &ev, NULL, NULL,
                                             NULL, &diag);
        CHECK_EQ_INT(rc, members[i].rc);
        if (rc != TROVE_OK) {
            CHECK(strstr(diag.msg, "\"trove\"") != NULL);
            CHECK_EQ_INT(ev.len, 0);
        } else {
            CHECK_EQ_INT(ev.len, 1);
            CHECK(ev.len == 1 && ev.ev[0].kind == TROVE_KIND_FRAME && ev.ev[0].extra == 7 &&
                  ev.ev[0].depth == 2);
        }
        trove_events_free(&ev);
    }
    {
        struct pb p = {{0}, 0}, pkt = {{0}, 0}, ps = {{0}, 0}, in = {{0}, 0}, cs = {{0}, 0};
        /* a sample of callstack 9, which nothing interned */
        put_uint(&ps, 2, 1);
        put_uint(&ps, 3, 1);
        put_uint(&ps, 4, 9);
        put_uint(&pkt, 8, 100);
        put_uint(&pkt, 10, 1);
        put_msg(&pkt, 66, &ps);
        put_msg(&p, 1, &pkt);
        test_expect_decode_error(decode_with_profile, sizeof(struct trove_events), p.b, p.n,
                                 TROVE_ERR_CORRUPT, UINT64_MAX, "callstack 9 is not interned",
                                 "a perf sample of a callstack nobody interned");
        /* callstack 9 interned, its frame 4 not */
        p.n = pkt.n = 0;
        put_uint(&cs, 1, 9);
        put_uint(&cs, 2, 4);
        put_msg(&in, 7, &cs);
        put_uint(&pkt, 10, 1);
        put_msg(&pkt, 12, &in);
        put_msg(&p, 1, &pkt);
        pkt.n = 0;
        put_uint(&pkt, 8, 100);
        put_uint(&pkt, 10, 1);
        put_msg(&pkt, 66, &ps);
        put_msg(&p, 1, &pkt);
        test_expect_decode_error(decode_with_profile, sizeof(struct trove_events), p.b, p.n,
                                 TROVE_ERR_CORRUPT, UINT64_MAX, "frame 4 is not interned",
                                 "a callstack of a frame nobody interned");
        test_corpus_write("TROVE_PERFETTO_CORPUS", "profile-frame-missing.pftrace", NULL, 0, p.b,
                          p.n);
    }
}

static void test_bad(void)
{
    struct trove_bytes g = {0};
    struct cap c;
    struct trove_trace t;
    struct trove_events out = {0};
    struct pb p;

    /* every prefix of the golden file fails cleanly or reads a prefix of the events */
    small_capture(&c);
    t = as_trace(&c);
    CHECK_EQ_INT(trove_perfetto_write(&t, &g, NULL), TROVE_OK);
    for (size_t len = 0; len < g.len; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        struct trove_perfetto_options loose = {0, 0, NULL, NULL};
        int rc;
        memcpy(copy, g.ptr, len);
        rc = trove_perfetto_read(copy, len, &loose, &out, NULL, NULL, NULL, NULL);
        CHECK(rc == TROVE_OK || rc == TROVE_ERR_TRUNCATED || rc == TROVE_ERR_CORRUPT);
        CHECK(rc != TROVE_OK || out.len <= c.ev.len);
        out.len = 0;
        free(copy);
    }
    test_corpus_write("TROVE_PERFETTO_CORPUS", "cut.pftrace", NULL, 0, g.ptr, g.len / 2);
    cap_free(&c);

    p.n = 0; /* a top-level field that is not a packet */
    put_uint(&p, 2, 7);
    expect_bad(&p, TROVE_ERR_CORRUPT, "top-level field 2", "top-level varint", "top-field.pftrace");
    p.n = 0; /* a group (wire type 3) */
    p.b[p.n++] = 0x0a;
    p.b[p.n++] = 1;
    p.b[p.n++] = 0x0b;
    expect_bad(&p, TROVE_ERR_CORRUPT, "wire type", "a group", "group.pftrace");
    p.n = 0; /* a varint of 11 bytes */
    p.b[p.n++] = 0x0a;
    p.b[p.n++] = 11;
    p.b[p.n++] = 0x40; /* field 8, varint */
    memset(p.b + p.n, 0xff, 10);
    p.n += 10;
    p.b[p.n - 1] = 0x7f;
    expect_bad(&p, TROVE_ERR_VARINT, "varint", "a long varint", "long-varint.pftrace");
    p.n = 0; /* a length past the end of the trace */
    p.b[p.n++] = 0x0a;
    p.b[p.n++] = 0x7f;
    p.b[p.n++] = 0x40;
    p.b[p.n++] = 1;
    expect_bad(&p, TROVE_ERR_TRUNCATED, "past the end", "length past the end", "past-end.pftrace");
    p.n = 0; /* a length past the end of its message (the packet is shorter) */
    {
        struct pb pkt = {{0}, 0};
        pkt.b[pkt.n++] = 0x5a; /* field 11, length-delimited */
        pkt.b[pkt.n++] = 0x05;
        pkt.b[pkt.n++] = 0x48;
        put_msg(&p, 1, &pkt);
    }
    expect_bad(&p, TROVE_ERR_TRUNCATED, NULL, "length past its message", "past-message.pftrace");
    p.n = 0; /* an event on a track no descriptor describes */
    put_event(&p, 5, 3, 77);
    expect_bad(&p, TROVE_ERR_CORRUPT, "no track descriptor", "unknown track", "no-track.pftrace");
    p.n = 0; /* parents in a loop */
    put_track(&p, 13, 17, 0, 0);
    put_track(&p, 17, 13, 0, 0);
    expect_bad(&p, TROVE_ERR_CORRUPT, "loop", "a loop of parents", "loop.pftrace");
    p.n = 0; /* an end before its begin */
    put_track(&p, 5, 0, 1, 2);
    put_event(&p, 100, 1, 5);
    put_event(&p, 90, 2, 5);
    expect_bad(&p, TROVE_ERR_NEGATIVE, "before it begins", "end before begin", "end-first.pftrace");
    p.n = 0; /* strict: an end with nothing open, a begin never ended */
    put_track(&p, 5, 0, 1, 2);
    put_event(&p, 100, 2, 5);
    expect_bad(&p, TROVE_ERR_UNMATCHED, "no open slice", "unmatched end", "lone-end.pftrace");
    p.n = 0;
    put_track(&p, 5, 0, 1, 2);
    put_event(&p, 100, 1, 5);
    expect_bad(&p, TROVE_ERR_UNMATCHED, "never ends", "unmatched begin", "lone-begin.pftrace");
    {
        struct trove_perfetto_options loose = {0, 0, NULL, NULL};
        struct trove_perfetto_stats st;
        CHECK_EQ_INT(trove_perfetto_read(p.b, p.n, &loose, &out, NULL, NULL, &st, NULL),
                     TROVE_OK);
        CHECK(out.len == 0 && st.unmatched_begin == 1);
    }
    p.n = 0; /* a track event packet without a timestamp */
    {
        struct pb pkt = {{0}, 0}, te = {{0}, 0};
        put_track(&p, 5, 0, 1, 2);
        put_uint(&te, 9, 3);
        put_uint(&te, 11, 5);
        put_uint(&pkt, 10, 1);
        put_msg(&pkt, 11, &te);
        put_msg(&p, 1, &pkt);
    }
    expect_bad(&p, TROVE_ERR_CORRUPT, "without a timestamp", "no timestamp", "no-time.pftrace");
    /* a name over TROVE_NAME_MAX: refused before it is copied */
    {
        size_t big = TROVE_NAME_MAX + 1, n = 0, td_len = 2 + 1 + 3 + big, pkt_len = 2 + 3 + td_len;
        uint8_t *b = malloc(pkt_len + 8);
        struct pb v;
        b[n++] = 0x0a; /* Trace.packet */
        v.n = 0;
        put_varint(&v, pkt_len);
        memcpy(b + n, v.b, v.n);
        n += v.n;
        b[n++] = 0xe2; /* track_descriptor: field 60, length-delimited */
        b[n++] = 0x03;
        v.n = 0;
        put_varint(&v, td_len);
        memcpy(b + n, v.b, v.n);
        n += v.n;
        b[n++] = 0x08; /* uuid 1 */
        b[n++] = 0x01;
        b[n++] = 0x12; /* name */
        v.n = 0;
        put_varint(&v, big);
        memcpy(b + n, v.b, v.n);
        n += v.n;
        memset(b + n, 'x', big);
        n += big;
        test_expect_decode_error(decode_perfetto, sizeof(struct trove_events), b, n,
                                 TROVE_ERR_LIMIT, UINT64_MAX, "over the 65535", "a long name");
        free(b);
    }
    p.n = 0; /* a track named with bytes that are not UTF-8 (names are UTF-8 in trove: the
              * capture's names frame would refuse it), found by fuzz_import */
    {
        static const uint8_t td[] = {0x08, 0x01, 0x12, 0x02, 'a', 0xff};
        struct pb pkt = {{0}, 0}, d = {{0}, 0};
        memcpy(d.b, td, sizeof td);
        d.n = sizeof td;
        put_msg(&pkt, 60, &d);
        put_msg(&p, 1, &pkt);
    }
    expect_bad(&p, TROVE_ERR_CORRUPT, "not valid UTF-8", "a name not UTF-8", "not-utf8.pftrace");
    out.len = 0;
    trove_events_free(&out);
    trove_bytes_free(&g);
}

static void test_sniff(void)
{
    static const char *const not[] = {"[{\"ph\":\"X\"}]", "\n[{}]", " {\"traceEvents\":[]}",
                                      "\xef\xbb\xbf[", "TV\x01\x01", "PK\x03\x04", "PAR1",
                                      "\n\n\n\n", "\n\x05\x0b\x00\x00\x00", ""};
    struct cap c;
    struct trove_trace t;
    struct trove_bytes g = {0};
    for (size_t i = 0; i < sizeof not / sizeof not[0]; i++)
        CHECK_EQ_INT(trove_perfetto_sniff((const uint8_t *)not[i], strlen(not[i])), 0);
    small_capture(&c);
    t = as_trace(&c);
    CHECK_EQ_INT(trove_perfetto_write(&t, &g, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_perfetto_sniff(g.ptr, g.len), 1);
    CHECK_EQ_INT(trove_perfetto_sniff(g.ptr, 64), 1); /* a head cut inside a packet */
    CHECK_EQ_INT(trove_perfetto_sniff(g.ptr, 2), 0);
    trove_bytes_free(&g);
    cap_free(&c);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_small);
    RUN(test_sort_indexes);
    RUN(test_async_file);
    RUN(test_overlap_and_kinds);
    RUN(test_gen);
    RUN(test_profile);
    RUN(test_bad_profile);
    RUN(test_perfetto_not_kept);
    RUN(test_bad);
    RUN(test_sniff);
    RUN(test_sample);
    return test_done();
}
