/*
 * test_chrome.c: the Chrome trace JSON importer.
 *
 * Hand-written traces in tests/data/chrome_*.json check each mapping exactly (depths,
 * B/E matching, metadata names, instant kinds and scopes, exact decimal -> ns rounding,
 * name id frequency order, unicode; async spans of both kinds, flows, counters and the
 * phases counted as skipped, with their synthetic tids and track names); every good file is
 * also read through a FILE with tiny read chunks and must give the same result as the
 * in-memory import. Bad inputs check the error code, that the offset points at the fault,
 * and that nothing is appended. The real sample trace (../shared/data) is checked against a
 * naive substring count.
 */
#include "testutil.h"

#include "trove/chrome.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/chrome_json.h"

#define DATA TROVE_SOURCE_DIR "/tests/data/"
#define US 1000ull

struct result {
    int rc;
    struct trove_events ev;
    struct trove_flows flows;
    struct trove_names *names;
    struct trove_chrome_stats st;
    struct trove_diag diag;
};

static void result_free(struct result *r)
{
    trove_events_free(&r->ev);
    trove_flows_free(&r->flows);
    trove_names_free(r->names);
    memset(r, 0, sizeof *r);
}

static void import_buf(const char *buf, size_t len, int strict, struct result *r)
{
    struct trove_chrome_options opt = {.strict = strict};
    memset(r, 0, sizeof *r);
    if (trove_names_new(&r->names) != TROVE_OK)
        abort();
    r->rc = trove_chrome_import_all_mem((const uint8_t *)buf, len, &opt, &r->ev, r->names,
                                        &r->flows, &r->st, &r->diag);
}

static void import_str(const char *s, int strict, struct result *r)
{
    import_buf(s, strlen(s), strict, r);
}

/* Read a test file; abort the test run if it is missing. */
static char *load(const char *name, size_t *len)
{
    char path[512];
    char *buf;
    snprintf(path, sizeof path, DATA "%s", name);
    buf = (char *)test_read_file(path, len);
    if (!buf) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    return buf;
}

static void import_file(const char *name, int strict, struct result *r)
{
    size_t len;
    char *buf = load(name, &len);
    import_buf(buf, len, strict, r);
    free(buf);
}

static const char *ev_name(const struct result *r, size_t i)
{
    const char *s = trove_names_get(r->names, TROVE_NAME_EVENT, r->ev.ev[i].name_id, 0, NULL);
    return s ? s : "(no name)";
}

static int same_events(const struct trove_events *a, const struct trove_events *b)
{
    return a->len == b->len && (a->len == 0 || !memcmp(a->ev, b->ev, a->len * sizeof *a->ev));
}


/* The same bytes through a FILE read `chunk` bytes at a time must give the same result. */
static void check_chunked(const char *buf, size_t len, int strict, const struct result *want)
{
    static const size_t chunks[] = {1, 2, 3, 7, 64};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        struct trove_chrome_options opt = {.strict = strict};
        struct result r;
        FILE *f = tmpfile();
        memset(&r, 0, sizeof r);
        if (!f || fwrite(buf, 1, len, f) != len || fseek(f, 0, SEEK_SET) != 0)
            abort();
        if (trove_names_new(&r.names) != TROVE_OK)
            abort();
        r.rc = trove__chrome_import_chunked(f, chunks[c], &opt, &r.ev, r.names, &r.flows, &r.st,
                                            &r.diag);
        fclose(f);
        CHECK_EQ_INT(r.rc, want->rc);
        CHECK(same_events(&r.ev, &want->ev));
        CHECK(r.flows.len == want->flows.len &&
              (r.flows.len == 0 ||
               !memcmp(r.flows.f, want->flows.f, r.flows.len * sizeof *r.flows.f)));
        CHECK(trove_names_equal(r.names, want->names));
        CHECK(!memcmp(&r.st, &want->st, sizeof r.st));
        if (want->rc != TROVE_OK) {
            CHECK_EQ_INT(r.diag.offset, want->diag.offset);
            CHECK(!strcmp(r.diag.msg, want->diag.msg));
        }
        result_free(&r);
    }
}

static void check_file_chunked(const char *name, int strict)
{
    struct result want;
    size_t len;
    char *buf = load(name, &len);
    import_buf(buf, len, strict, &want);
    check_chunked(buf, len, strict, &want);
    result_free(&want);
    free(buf);
}

/* Output order: start, then (pid, tid), then depth. */
static int sorted(const struct trove_events *a)
{
    for (size_t i = 1; i < a->len; i++) {
        const struct trove_event *p = &a->ev[i - 1], *e = &a->ev[i];
        if (p->start_ns != e->start_ns) {
            if (p->start_ns > e->start_ns)
                return 0;
        } else if (p->pid != e->pid) {
            if (p->pid > e->pid)
                return 0;
        } else if (p->tid != e->tid) {
            if (p->tid > e->tid)
                return 0;
        } else if (p->depth > e->depth) {
            return 0;
        }
    }
    return 1;
}

struct want_ev {
    uint64_t start, dur;
    uint32_t pid, tid;
    int kind, depth, extra;
    const char *name;
};

static void check_events(const struct result *r, const struct want_ev *w, size_t n)
{
    CHECK_EQ_INT(r->ev.len, n);
    for (size_t i = 0; i < n && i < r->ev.len; i++) {
        const struct trove_event *e = &r->ev.ev[i];
        CHECK_EQ_INT(e->start_ns, w[i].start);
        CHECK_EQ_INT(e->dur_ns, w[i].dur);
        CHECK_EQ_INT(e->pid, w[i].pid);
        CHECK_EQ_INT(e->tid, w[i].tid);
        CHECK_EQ_INT(e->kind, w[i].kind);
        CHECK_EQ_INT(e->depth, w[i].depth);
        CHECK_EQ_INT(e->extra, w[i].extra);
        CHECK_EQ_INT(e->pad, 0);
        if (strcmp(ev_name(r, i), w[i].name)) {
            fprintf(stderr, "event %zu: name '%s', want '%s'\n", i, ev_name(r, i), w[i].name);
            CHECK(0);
        }
    }
}

static void test_nest_x(void)
{
    static const struct want_ev w[] = {
        {100 * US, 100 * US, 1, 1, TROVE_KIND_ZONE, 0, 0, "outer"},
        {100 * US, 100 * US, 1, 1, TROVE_KIND_ZONE, 1, 0, "same"},  /* identical, later: inside */
        {110 * US, 50 * US, 1, 1, TROVE_KIND_ZONE, 2, 0, "inner"},
        {115 * US, 1 * US, 1, 2, TROVE_KIND_ZONE, 0, 0, "other"},   /* another thread */
        {120 * US, 10 * US, 1, 1, TROVE_KIND_ZONE, 3, 0, "leaf"},
        {130 * US, 10 * US, 1, 1, TROVE_KIND_ZONE, 3, 0, "leaf"},   /* at the last leaf's end */
        {150 * US, 0, 1, 1, TROVE_KIND_ZONE, 3, 0, "zero"},
        {200 * US, 5 * US, 1, 1, TROVE_KIND_ZONE, 0, 0, "after"},   /* starts at outer's end */
        {300 * US, 0, 1, 1, TROVE_KIND_ZONE, 0, 0, "nodur"},        /* no dur: 0 */
    };
    struct result r;
    import_file("chrome_nest_x.json", 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    check_events(&r, w, sizeof w / sizeof w[0]);
    CHECK_EQ_INT(r.st.trace_events, 9);
    CHECK_EQ_INT(r.st.complete, 9);
    CHECK_EQ_INT(r.st.threads, 2);
    CHECK_EQ_INT(r.st.names, 8);
    CHECK_EQ_INT(r.st.skipped, 0);
    /* "leaf" is the only name used twice: id 0 */
    CHECK(!strcmp(trove_names_get(r.names, TROVE_NAME_EVENT, 0, 0, NULL), "leaf"));
    /* then first appearance: outer is id 1 */
    CHECK(!strcmp(trove_names_get(r.names, TROVE_NAME_EVENT, 1, 0, NULL), "outer"));
    result_free(&r);
    check_file_chunked("chrome_nest_x.json", 1);
}

static void test_begin_end(void)
{
    static const struct want_ev w[] = {
        {10 * US, 10 * US, 1, 1, TROVE_KIND_ZONE, 0, 0, "A"},
        {11 * US, 2500, 2, 7, TROVE_KIND_ZONE, 0, 0, "fromE"},  /* unnamed B: E's name */
        {12 * US, 3 * US, 1, 1, TROVE_KIND_ZONE, 1, 0, "B"},
        {16 * US, 2 * US, 1, 1, TROVE_KIND_ZONE, 1, 0, "C"},    /* B's name wins over E's */
    };
    struct result r;
    import_file("chrome_begin_end.json", 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    check_events(&r, w, sizeof w / sizeof w[0]);
    CHECK_EQ_INT(r.st.begin_end_pairs, 4);
    CHECK_EQ_INT(r.st.complete, 0);
    CHECK_EQ_INT(r.st.unmatched_begin, 0);
    CHECK_EQ_INT(r.st.unmatched_end, 0);
    CHECK_EQ_INT(r.st.threads, 2);
    CHECK_EQ_INT(r.st.names, 4);
    CHECK(trove_names_get(r.names, TROVE_NAME_EVENT, 4, 0, NULL) == NULL); /* "ignored" unused */
    result_free(&r);
    check_file_chunked("chrome_begin_end.json", 1);
}

static void test_meta_instants(void)
{
    static const struct want_ev w[] = {
        {5 * US, 0, 10, 11, TROVE_KIND_INSTANT, 0, TROVE_SCOPE_THREAD, "mark"},
        {6 * US, 0, 10, 11, TROVE_KIND_INSTANT, 0, TROVE_SCOPE_PROCESS, "mark"},
        {7 * US, 0, 10, 11, TROVE_KIND_INSTANT, 0, TROVE_SCOPE_GLOBAL, "glob"},
        {8 * US, 0, 10, 11, TROVE_KIND_INSTANT, 0, TROVE_SCOPE_THREAD, "thr"},
        /* an n with an id, a b/e pair and a counter: each on a track of its own */
        {9 * US, 0, 10, TROVE_TID_SYNTHETIC, TROVE_KIND_ASYNC_INSTANT, 0, 0, "async"},
        {9 * US, 0, 10, TROVE_TID_SYNTHETIC + 1, TROVE_KIND_ZONE, 0, TROVE_ASYNC_NESTABLE, "ab"},
        {9 * US, 0x3ff0000000000000ull, 10, TROVE_TID_SYNTHETIC + 2, TROVE_KIND_COUNTER, 0, 0,
         "ctr"},
    };
    struct result r;
    size_t len = 0;
    const char *s;

    import_file("chrome_meta_instants.json", 0, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    check_events(&r, w, sizeof w / sizeof w[0]);
    s = trove_names_get(r.names, TROVE_NAME_THREAD, 10, 11, &len);
    CHECK(s && len == 11 && !strcmp(s, "Main\tThread"));
    s = trove_names_get(r.names, TROVE_NAME_PROCESS, 10, 0, NULL);
    CHECK(s && !strcmp(s, "renderer"));
    /* pid -1 is stored as 0xffffffff; tid 4294967295 is the largest accepted */
    s = trove_names_get(r.names, TROVE_NAME_THREAD, 0xffffffffu, 0xffffffffu, NULL);
    CHECK(s && !strcmp(s, "edge A"));
    CHECK(trove_names_get(r.names, TROVE_NAME_PROCESS, 0xffffffffu, 0, NULL) == NULL);
    CHECK_EQ_INT(r.st.metadata, 3);
    CHECK_EQ_INT(r.st.instants, 5);
    CHECK_EQ_INT(r.st.async_pairs, 1);
    CHECK_EQ_INT(r.st.flow_events, 2);
    CHECK_EQ_INT(r.st.counters, 1);
    CHECK_EQ_INT(r.st.skipped, 3); /* uptime M, "XX", R */
    CHECK_EQ_INT(r.st.skipped_phase['M'], 1);
    CHECK_EQ_INT(r.st.skipped_phase['R'], 1);
    CHECK_EQ_INT(r.st.skipped_phase[0], 1);
    CHECK_EQ_INT(r.st.trace_events, 16);
    CHECK_EQ_INT(r.st.names, 7); /* the flows' "flow" too */
    CHECK_EQ_INT(r.st.threads, 4);
    /* "mark" (2 uses) is id 0 */
    CHECK(!strcmp(trove_names_get(r.names, TROVE_NAME_EVENT, 0, 0, NULL), "mark"));
    /* 3 from M events, 3 tracks, 7 event names */
    CHECK_EQ_INT(trove_names_count(r.names), 3 + 3 + 7);
    s = trove_names_get(r.names, TROVE_NAME_THREAD, 10, TROVE_TID_SYNTHETIC + 2, NULL);
    CHECK(s && !strcmp(s, "ctr v"));
    result_free(&r);
    check_file_chunked("chrome_meta_instants.json", 0);
}

/* zones that overlap without nesting, identical zones, and instants at a zone's end */
static void test_overlap(void)
{
    static const struct want_ev w[] = {
        {0, 10 * US, 0, 1, TROVE_KIND_ZONE, 0, 0, "a"},
        {0, 10 * US, 0, 1, TROVE_KIND_ZONE, 1, 0, "a"},
        {1 * US, 14 * US, 0, 1, TROVE_KIND_ZONE, 2, 0, "be"},
        {5 * US, 10 * US, 0, 1, TROVE_KIND_ZONE, 3, 0, "b"},
        {10 * US, 0, 0, 1, TROVE_KIND_ZONE, 2, 0, "z"},        /* both "a" ended at 10 */
        {10 * US, 0, 0, 1, TROVE_KIND_INSTANT, 2, 0, "mark"},
        {10 * US, 0, 0, 1, TROVE_KIND_INSTANT, 2, 0, "mark"},  /* 9.9995 us rounds to 10 */
        {12 * US, 1 * US, 0, 1, TROVE_KIND_ZONE, 2, 0, "c"},   /* in be and b, not in a */
        {15 * US, 1 * US, 0, 1, TROVE_KIND_ZONE, 0, 0, "d"},
    };
    struct result r;
    import_file("chrome_overlap.json", 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    check_events(&r, w, sizeof w / sizeof w[0]);
    CHECK_EQ_INT(r.st.begin_end_pairs, 1);
    result_free(&r);
    check_file_chunked("chrome_overlap.json", 1);
}

static void test_decimal(void)
{
    /* by tid: the expected ns for each ts in chrome_decimal.json */
    static const uint64_t want[16] = {
        0,
        1500,                    /* 1.5 */
        1,                       /* 0.0005: 0.5 ns rounds away from zero */
        12346,                   /* 12.3456: 12345.6 ns */
        1000000,                 /* 1e3 */
        150000,                  /* 1.5E+2 */
        2500,                    /* 25e-1 */
        0,                       /* 0.00049999 */
        2001,                    /* 2.0005: 2000.5 ns */
        123457,                  /* 1.234567891e2: 123456.7891 ns */
        0,                       /* X at 0.0 */
        0,                       /* -0 */
        18446744073709551000ull, /* the largest whole-us ts that fits */
        1000,                    /* 1e-30 * 1e30 */
        123456789,               /* 30 digits, e-24 */
        8000,                    /* 7.999...9 (27 digits) */
    };
    struct result r;
    int seen = 0;

    import_file("chrome_decimal.json", 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK_EQ_INT(r.ev.len, 15);
    for (size_t i = 0; i < r.ev.len; i++) {
        const struct trove_event *e = &r.ev.ev[i];
        CHECK(e->tid >= 1 && e->tid <= 15);
        if (e->tid < 1 || e->tid > 15)
            continue;
        seen |= 1 << e->tid;
        CHECK_EQ_INT(e->start_ns, want[e->tid]);
        if (e->tid == 10) /* dur 0.0015 us = 1.5 ns -> 2 */
            CHECK_EQ_INT(e->dur_ns, 2);
        else
            CHECK_EQ_INT(e->dur_ns, 0);
    }
    CHECK_EQ_INT(seen, 0xfffe);
    CHECK(sorted(&r.ev));
    result_free(&r);
    check_file_chunked("chrome_decimal.json", 1);

    /* single values, to pin the rounding rule */
    {
        static const struct {
            const char *ts;
            uint64_t ns;
        } v[] = {
            {"0.0004", 0}, {"0.0005", 1}, {"0.0015", 2}, {"0.0025", 3}, {"1.0004999", 1000},
            {"1e-3", 1}, {"5e-4", 1}, {"4.9e-4", 0}, {"0.1e1", 1000}, {"10E-1", 1000},
            {"12345678901234567.8905", 12345678901234567891ull}, {"0e5", 0}, {"0.0e-7", 0},
        };
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
            char doc[128];
            snprintf(doc, sizeof doc, "[{\"ph\":\"i\",\"ts\":%s}]", v[i].ts);
            import_str(doc, 1, &r);
            CHECK_EQ_INT(r.rc, TROVE_OK);
            CHECK_EQ_INT(r.ev.len, 1);
            if (r.ev.len == 1 && r.ev.ev[0].start_ns != v[i].ns) {
                fprintf(stderr, "ts %s -> %llu ns, want %llu\n", v[i].ts,
                        (unsigned long long)r.ev.ev[0].start_ns, (unsigned long long)v[i].ns);
                CHECK(0);
            }
            result_free(&r);
        }
    }
}

static void test_noclose(void)
{
    static const char *docs[] = {
        "[",
        "[\n",
        "[{\"ph\":\"X\",\"ts\":1,\"dur\":2,\"name\":\"a\"}",
        "[{\"ph\":\"X\",\"ts\":1,\"dur\":2,\"name\":\"a\"},",
        "[{\"ph\":\"X\",\"ts\":1,\"dur\":2,\"name\":\"a\"} , \n\t ",
        "  [{\"ph\":\"X\",\"ts\":1,\"dur\":2,\"name\":\"a\"}]  \n",
        "\xEF\xBB\xBF[{\"ph\":\"X\",\"ts\":1,\"dur\":2,\"name\":\"a\"}]",
    };
    struct result r;
    import_file("chrome_noclose.json", 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK_EQ_INT(r.ev.len, 2);
    if (r.ev.len == 2) {
        CHECK_EQ_INT(r.ev.ev[0].dur_ns, 2000);
        CHECK_EQ_INT(r.ev.ev[1].depth, 1);
        CHECK(!strcmp(ev_name(&r, 1), "two"));
    }
    result_free(&r);
    check_file_chunked("chrome_noclose.json", 1);
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        import_str(docs[i], 1, &r);
        CHECK_EQ_INT(r.rc, TROVE_OK);
        CHECK_EQ_INT(r.ev.len, i < 2 ? 0 : 1);
        check_chunked(docs[i], strlen(docs[i]), 1, &r);
        result_free(&r);
    }
}

static void test_freq(void)
{
    static const char *order[] = {"common", "mid", "rare", "tie1", "tie2"};
    struct result r;
    import_file("chrome_freq.json", 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK_EQ_INT(r.ev.len, 8);
    CHECK_EQ_INT(r.st.names, 5);
    for (uint32_t i = 0; i < 5; i++) {
        const char *s = trove_names_get(r.names, TROVE_NAME_EVENT, i, 0, NULL);
        CHECK(s && !strcmp(s, order[i]));
    }
    /* "dropped" (4 uses, but by a skipped phase: R) has no id */
    CHECK(trove_names_get(r.names, TROVE_NAME_EVENT, 5, 0, NULL) == NULL);
    /* missing pid/tid are 0 */
    CHECK_EQ_INT(r.ev.ev[0].pid, 0);
    CHECK_EQ_INT(r.ev.ev[0].tid, 0);
    result_free(&r);
    check_file_chunked("chrome_freq.json", 1);
}

static void test_unicode(void)
{
    static const char *want[] = {
        "caf\xC3\xA9 \xF0\x9F\x98\x80 lone:\xEF\xBF\xBDx \xEF\xBF\xBD end\xEF\xBF\xBD",
        "esc \"q\" \\ / \b\f\n\r\t \xC3\xBC",
        "raw \xC3\xBC \xE6\x97\xA5\xE6\x9C\xAC",
        "key escaped",
        "two highs \xEF\xBF\xBD\xF0\x9F\x98\x80",
    };
    struct result r;
    import_file("chrome_unicode.json", 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK_EQ_INT(r.ev.len, 5);
    for (size_t i = 0; i < 5 && i < r.ev.len; i++) {
        if (strcmp(ev_name(&r, i), want[i])) {
            fprintf(stderr, "unicode name %zu: got '%s'\n", i, ev_name(&r, i));
            CHECK(0);
        }
    }
    result_free(&r);
    check_file_chunked("chrome_unicode.json", 1);

    /* invalid raw UTF-8 becomes U+FFFD, byte by byte */
    import_str("[{\"ph\":\"i\",\"ts\":1,\"name\":\"a\xFF" "b\xC3\"}]", 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK(r.ev.len == 1 && !strcmp(ev_name(&r, 0), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD"));
    result_free(&r);
}

/* Errors: code, offset, and nothing appended to a non-empty events array or names table. */
struct bad {
    const char *doc;
    int strict;
    int code;
    long offset; /* -1: not checked */
};

/* Async spans (b/e, n with an id, S/T/F), flows (s/t/f, bind_id) and counters (C), each
 * on its track, and the phases kept as skipped by phase: chrome_async.json. */
static void test_async_flows_counters(void)
{
#define SYN TROVE_TID_SYNTHETIC
    static const struct want_ev w[] = {
        /* counters: one series per (pid, name, key); tids by (first time, class, key) */
        {5 * US, 0x4004000000000000ull, 1, SYN, TROVE_KIND_COUNTER, 0, 0, "mem"},     /* js 2.5 */
        {5 * US, 0x4090000000000000ull, 1, SYN + 1, TROVE_KIND_COUNTER, 0, 0, "mem"}, /* heap */
        {6 * US, 0x40A0000000000000ull, 1, SYN + 1, TROVE_KIND_COUNTER, 0, 0, "mem"}, /* 2048 */
        {7 * US, 0xBFE0000000000000ull, 2, SYN, TROVE_KIND_COUNTER, 0, 0, "cpu"},     /* -0.5 */
        {10 * US, 100 * US, 1, 10, TROVE_KIND_ZONE, 0, 0, "task"},
        /* nestable: load encloses parse encloses the n; e matched by name, any thread */
        {10 * US, 10 * US, 1, SYN + 2, TROVE_KIND_ZONE, 0, TROVE_ASYNC_NESTABLE, "load"},
        /* one id, two categories: two tracks */
        {11 * US, 19 * US, 1, SYN + 3, TROVE_KIND_ZONE, 0, TROVE_ASYNC_NESTABLE, "fetch"},
        {11 * US, 1 * US, 1, SYN + 4, TROVE_KIND_ZONE, 0, TROVE_ASYNC_NESTABLE, "read"},
        {12 * US, 3 * US, 1, SYN + 2, TROVE_KIND_ZONE, 1, TROVE_ASYNC_NESTABLE, "parse"},
        {13 * US, 0, 1, SYN + 2, TROVE_KIND_ASYNC_INSTANT, 2, 0, "progress"},
        /* the same name twice: an e closes the innermost */
        {40 * US, 10 * US, 1, SYN + 5, TROVE_KIND_ZONE, 0, TROVE_ASYNC_NESTABLE, "req"},
        {41 * US, 4 * US, 1, SYN + 5, TROVE_KIND_ZONE, 1, TROVE_ASYNC_NESTABLE, "req"},
        /* legacy: the S..F span and its T steps, each to the next T or the F */
        {100 * US, 30 * US, 2, SYN + 1, TROVE_KIND_ZONE, 0, TROVE_ASYNC_LEGACY, "job"},
        {110 * US, 10 * US, 2, SYN + 1, TROVE_KIND_ZONE, 1, TROVE_ASYNC_STEP, "phase1"},
        {120 * US, 10 * US, 2, SYN + 1, TROVE_KIND_ZONE, 1, TROVE_ASYNC_STEP, "phase2"},
        {200 * US, 5 * US, 1, 10, TROVE_KIND_ZONE, 0, 0, "send"},
        {300 * US, 5 * US, 2, 20, TROVE_KIND_ZONE, 0, 0, "recv"},
    };
    static const struct {
        uint64_t ts, id;
        uint32_t pid, tid;
        uint8_t phase, flags;
        const char *name;
    } wf[] = {
        {10500, 1, 1, 10, TROVE_FLOW_START, TROVE_FLOW_ENCLOSING, "msg"},
        {60 * US, 1, 1, 11, TROVE_FLOW_STEP, TROVE_FLOW_ENCLOSING, "msg"},
        {70 * US, 1, 2, 20, TROVE_FLOW_END, TROVE_FLOW_ENCLOSING, "msg"},  /* "bp":"e" */
        {80 * US, 2, 2, 20, TROVE_FLOW_END, 0, "msg2"},                    /* the next slice */
        {90 * US, 3, 2, 20, TROVE_FLOW_START, TROVE_FLOW_ENCLOSING, "other"}, /* cat x: its own */
        {200 * US, 4, 1, 10, TROVE_FLOW_START, TROVE_FLOW_ENCLOSING, "send"}, /* bind_id */
        {300 * US, 4, 2, 20, TROVE_FLOW_END, TROVE_FLOW_ENCLOSING, "send"}, /* one name a flow */
    };
    static const struct {
        uint32_t pid, tid;
        const char *name;
    } tracks[] = {
        {1, SYN, "mem js"},           {1, SYN + 1, "mem heap"},     {2, SYN, "cpu value"},
        {1, SYN + 2, "async: load"},  {1, SYN + 3, "async: fetch"}, {1, SYN + 4, "async: read"},
        {1, SYN + 5, "async: req"},   {2, SYN + 1, "async: job"},
    };
    /* by use: events first (mem 3, req 2), then flows (send 2: its flow's two rows), then
     * first appearance */
    static const char *const order[] = {"mem",    "req",   "send",   "task",   "load",  "parse",
                                        "progress", "fetch", "read", "job",    "phase1",
                                        "phase2", "recv",  "cpu",    "msg",    "msg2",  "other"};
    struct result r;
    const char *s;
    size_t len;
    char *buf;

    import_file("chrome_async.json", 0, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    check_events(&r, w, sizeof w / sizeof w[0]);
    CHECK_EQ_INT(r.flows.len, sizeof wf / sizeof wf[0]);
    for (size_t i = 0; i < r.flows.len && i < sizeof wf / sizeof wf[0]; i++) {
        const struct trove_flow *f = &r.flows.f[i];
        CHECK_EQ_INT(f->ts_ns, wf[i].ts);
        CHECK_EQ_INT(f->id, wf[i].id);
        CHECK_EQ_INT(f->pid, wf[i].pid);
        CHECK_EQ_INT(f->tid, wf[i].tid);
        CHECK_EQ_INT(f->phase, wf[i].phase);
        CHECK_EQ_INT(f->flags, wf[i].flags);
        CHECK(f->pad[0] == 0 && f->pad[1] == 0);
        s = trove_names_get(r.names, TROVE_NAME_EVENT, f->name_id, 0, NULL);
        CHECK(s && !strcmp(s, wf[i].name));
    }
    for (size_t i = 0; i < sizeof tracks / sizeof tracks[0]; i++) {
        s = trove_names_get(r.names, TROVE_NAME_THREAD, tracks[i].pid, tracks[i].tid, NULL);
        CHECK(s && !strcmp(s, tracks[i].name));
    }
    for (uint32_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        s = trove_names_get(r.names, TROVE_NAME_EVENT, i, 0, NULL);
        CHECK(s && !strcmp(s, order[i]));
    }
    /* "nope" (an unmatched e), "lost" (an open S), "none" (a C without a number) have none */
    CHECK(trove_names_get(r.names, TROVE_NAME_EVENT, 17, 0, NULL) == NULL);
    s = trove_names_get(r.names, TROVE_NAME_PROCESS, 1, 0, NULL);
    CHECK(s && !strcmp(s, "app"));
    s = trove_names_get(r.names, TROVE_NAME_THREAD, 1, 10, NULL);
    CHECK(s && !strcmp(s, "main"));
    /* 2 names and 2 sort indexes from M events, 8 tracks, 17 event names */
    CHECK_EQ_INT(trove_names_count(r.names), 4 + 8 + 17);
    {
        int32_t v = 0;
        CHECK(trove_names_get_sort(r.names, TROVE_NAME_PROCESS_SORT, 1, 0, &v) && v == -1);
        CHECK(trove_names_get_sort(r.names, TROVE_NAME_THREAD_SORT, 1, 10, &v) && v == 3);
    }
    CHECK_EQ_INT(r.st.trace_events, 38);
    CHECK_EQ_INT(r.st.complete, 3);
    CHECK_EQ_INT(r.st.begin_end_pairs, 0);
    CHECK_EQ_INT(r.st.instants, 1);
    CHECK_EQ_INT(r.st.metadata, 4);
    CHECK_EQ_INT(r.st.async_pairs, 7);
    CHECK_EQ_INT(r.st.async_steps, 2);
    CHECK_EQ_INT(r.st.flow_events, 5);
    CHECK_EQ_INT(r.st.flow_binds, 2);
    CHECK_EQ_INT(r.st.counters, 3);
    CHECK_EQ_INT(r.st.counter_values, 4);
    CHECK_EQ_INT(r.st.counter_args_skipped, 2); /* "label" and none's "s" */
    CHECK_EQ_INT(r.st.unmatched_begin, 1);      /* "lost" */
    CHECK_EQ_INT(r.st.unmatched_end, 1);        /* "nope" */
    CHECK_EQ_INT(r.st.skipped, 4);
    CHECK_EQ_INT(r.st.skipped_phase['M'], 1);  /* process_labels */
    CHECK_EQ_INT(r.st.skipped_metadata, 1);
    CHECK_EQ_INT(r.st.skipped_phase['C'], 1);
    CHECK_EQ_INT(r.st.skipped_phase['P'], 1);
    CHECK_EQ_INT(r.st.skipped_phase['R'], 1);
    CHECK_EQ_INT(r.st.async_tracks, 5);
    CHECK_EQ_INT(r.st.counter_series, 3);
    CHECK_EQ_INT(r.st.threads, 10);
    CHECK_EQ_INT(r.st.names, 17);
    {
        char text[128];
        CHECK_EQ_INT(trove_chrome_skipped_text(&r.st, text, sizeof text), 18);
        CHECK(!strcmp(text, "1 C, 1 M, 1 P, 1 R"));
        /* cut after the last whole entry */
        CHECK_EQ_INT(trove_chrome_skipped_text(&r.st, text, 12), 8);
        CHECK(!strcmp(text, "1 C, 1 M"));
    }
    result_free(&r);
    check_file_chunked("chrome_async.json", 0);

    /* strict: the open S is an error; nothing is appended */
    import_file("chrome_async.json", 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_ERR_UNMATCHED);
    CHECK(strstr(r.diag.msg, "nope") != NULL); /* the unmatched e comes first in the input */
    CHECK_EQ_INT(r.ev.len, 0);
    CHECK_EQ_INT(r.flows.len, 0);
    result_free(&r);
    buf = load("chrome_async.json", &len);
    {
        /* without the unmatched e, strict names the S that never finishes */
        char *p = strstr(buf, "{\"ph\":\"e\",\"name\":\"nope\"");
        char *q = p ? strchr(p, '\n') : NULL;
        CHECK(p && q);
        if (p && q) {
            memset(p, ' ', (size_t)(q - p));
            import_buf(buf, len, 1, &r);
            CHECK_EQ_INT(r.rc, TROVE_ERR_UNMATCHED);
            CHECK(strstr(r.diag.msg, "S event \"lost\"") != NULL);
            CHECK(r.diag.offset < len && buf[r.diag.offset] == '{');
            result_free(&r);
        }
    }
    free(buf);

    /* an e before its b's time; a T before the last step */
    import_str("[{\"ph\":\"b\",\"id\":1,\"ts\":5},{\"ph\":\"e\",\"id\":1,\"ts\":4}]", 0, &r);
    CHECK_EQ_INT(r.rc, TROVE_ERR_NEGATIVE);
    result_free(&r);
    import_str("[{\"ph\":\"S\",\"id\":1,\"ts\":5},{\"ph\":\"T\",\"id\":1,\"ts\":7},"
               "{\"ph\":\"T\",\"id\":1,\"ts\":6}]",
               0, &r);
    CHECK_EQ_INT(r.rc, TROVE_ERR_NEGATIVE);
    result_free(&r);
    /* a real thread that uses a synthetic tid keeps it; tracks take the next */
    import_str("[{\"ph\":\"X\",\"pid\":3,\"tid\":4261412864,\"ts\":1,\"dur\":1},"
               "{\"ph\":\"b\",\"pid\":3,\"id\":1,\"ts\":1},"
               "{\"ph\":\"e\",\"pid\":3,\"id\":1,\"ts\":2}]",
               1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK(r.ev.len == 2 && r.ev.ev[0].tid == SYN && r.ev.ev[1].tid == SYN + 1);
    result_free(&r);
#undef SYN
}

/* process_sort_index and thread_sort_index: an integer args.sort_index of 32 bits becomes a
 * sort index entry (counted in metadata); one that is missing, not an integer or too wide
 * leaves the event skipped, counted as an M. The last sort_index wins; the pid and tid are
 * checked as for a name. */
static void test_sort_indexes(void)
{
    struct result r;
    int32_t v = 0;
    char text[64];

    import_str("[{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1,\"tid\":9,"
               "\"args\":{\"sort_index\":-1}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":2,"
               "\"args\":{\"sort_index\":2147483647}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":-1,\"tid\":3,"
               "\"args\":{\"sort_index\":-2147483648}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":4,"
               "\"args\":{\"label\":\"x\",\"sort_index\":1,\"other\":7,\"sort_index\":0}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":2,"
               "\"args\":{\"sort_index\":5}},"
               "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":2,"
               "\"args\":{\"name\":\"main\"}}]",
               1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK_EQ_INT(r.st.metadata, 6);
    CHECK_EQ_INT(r.st.skipped, 0);
    CHECK_EQ_INT(r.ev.len, 0);
    /* a process's tid is not part of its key; replacing keeps the first place */
    CHECK(trove_names_get_sort(r.names, TROVE_NAME_PROCESS_SORT, 1, 0, &v) && v == -1);
    CHECK(trove_names_get_sort(r.names, TROVE_NAME_THREAD_SORT, 1, 2, &v) && v == 5);
    CHECK(trove_names_get_sort(r.names, TROVE_NAME_THREAD_SORT, 0xffffffffu, 3, &v) &&
          v == INT32_MIN);
    CHECK(trove_names_get_sort(r.names, TROVE_NAME_THREAD_SORT, 1, 4, &v) && v == 0);
    CHECK_EQ_INT(trove_names_count(r.names), 5);
    {
        struct trove_name_entry e;
        trove_names_entry(r.names, 1, &e);
        CHECK(e.type == TROVE_NAME_THREAD_SORT && e.a == 1 && e.b == 2 && e.sort_index == 5);
        trove_names_entry(r.names, 4, &e);
        CHECK(e.type == TROVE_NAME_THREAD && !strcmp(e.str, "main"));
    }
    result_free(&r);

    /* malformed: skipped and counted, never an error, nothing kept */
    import_str("[{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1},"
               "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1,\"args\":{}},"
               "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1,"
               "\"args\":{\"sort_index\":\"3\"}},"
               "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1,"
               "\"args\":{\"sort_index\":1.5}},"
               "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1,"
               "\"args\":{\"sort_index\":3.0}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":1,"
               "\"args\":{\"sort_index\":1e2}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":1,"
               "\"args\":{\"sort_index\":2147483648}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":1,"
               "\"args\":{\"sort_index\":-2147483649}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":1,"
               "\"args\":{\"sort_index\":123456789012345678901234567890}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":1,"
               "\"args\":{\"x\":{\"sort_index\":1}}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":1,"
               "\"args\":{\"sort_index\":null}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_indexes\",\"pid\":1,\"tid\":1,"
               "\"args\":{\"sort_index\":1}},"
               "{\"ph\":\"X\",\"name\":\"z\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1}]",
               1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK_EQ_INT(r.st.metadata, 0);
    CHECK_EQ_INT(r.st.skipped, 12);
    CHECK_EQ_INT(r.st.skipped_phase['M'], 12);
    CHECK_EQ_INT(r.st.skipped_metadata, 12);
    CHECK_EQ_INT(r.ev.len, 1);
    CHECK_EQ_INT(trove_names_count(r.names), 1); /* the event name "z" */
    CHECK(!trove_names_get_sort(r.names, TROVE_NAME_PROCESS_SORT, 1, 0, &v));
    CHECK(!trove_names_get_sort(r.names, TROVE_NAME_THREAD_SORT, 1, 1, &v));
    CHECK_EQ_INT(trove_chrome_skipped_text(&r.st, text, sizeof text), 4);
    CHECK(!strcmp(text, "12 M"));
    result_free(&r);

    /* a bad pid is the error it is for a name */
    import_str("[{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":\"1\",\"tid\":1,"
               "\"args\":{\"sort_index\":1}}]",
               0, &r);
    CHECK_EQ_INT(r.rc, TROVE_ERR_TRACE);
    CHECK(strstr(r.diag.msg, "pid") != NULL);
    CHECK_EQ_INT(trove_names_count(r.names), 0);
    result_free(&r);
}

static void check_bad(const struct bad *b)
{
    struct trove_chrome_options opt = {.strict = b->strict};
    struct trove_events ev = {0};
    struct trove_names *names;
    struct trove_chrome_stats st;
    struct trove_diag diag = {0};
    struct trove_event sentinel = {42, 7, 1, 2, TROVE_KIND_ZONE, 0, 0, 0, 0};
    int rc;

    if (trove_names_new(&names) != TROVE_OK || trove_events_push(&ev, &sentinel) != TROVE_OK ||
        trove_names_set(names, TROVE_NAME_EVENT, 0, 0, "keep", 4) != TROVE_OK)
        abort();
    rc = trove_chrome_import_mem((const uint8_t *)b->doc, strlen(b->doc), &opt, &ev, names, &st,
                                 &diag);
    if (rc != b->code || (b->offset >= 0 && diag.offset != (uint64_t)b->offset)) {
        fprintf(stderr, "doc %s: rc %d (%s) at %llu: %s; want %d at %ld\n", b->doc, rc,
                trove_strerror(rc), (unsigned long long)diag.offset, diag.msg, b->code, b->offset);
        CHECK(0);
    } else {
        CHECK(1);
    }
    CHECK_EQ_INT(diag.code, rc);
    CHECK(diag.msg[0] != 0);
    CHECK_EQ_INT(ev.len, 1);
    CHECK(!memcmp(&ev.ev[0], &sentinel, sizeof sentinel));
    CHECK_EQ_INT(trove_names_count(names), 1);
    CHECK(!strcmp(trove_names_get(names, TROVE_NAME_EVENT, 0, 0, NULL), "keep"));
    trove_events_free(&ev);
    trove_names_free(names);

    /* the same through a FILE read one byte at a time: same code, offset and message */
    {
        struct result want;
        import_str(b->doc, b->strict, &want);
        check_chunked(b->doc, strlen(b->doc), b->strict, &want);
        result_free(&want);
    }
}

static void test_bad(void)
{
    static const struct bad bad[] = {
        /* malformed JSON */
        {"", 0, TROVE_ERR_JSON, 0},
        {"   \n", 0, TROVE_ERR_JSON, 0},
        {"x", 0, TROVE_ERR_JSON, 0},
        {"[{\"ph\":\"X\",}]", 0, TROVE_ERR_JSON, 11},
        {"[{\"ph\":\"X\" \"ts\":1}]", 0, TROVE_ERR_JSON, 11},
        {"[{\"ph\":\"X\",\"ts\":01}]", 0, TROVE_ERR_JSON, 17},
        {"[{\"ph\":\"X\",\"ts\":1.}]", 0, TROVE_ERR_JSON, 18},
        {"[{\"ph\":\"X\",\"ts\":1e}]", 0, TROVE_ERR_JSON, 18},
        {"[{\"ph\":\"X\",\"ts\":-}]", 0, TROVE_ERR_JSON, 17},
        {"[{\"ph\":\"X\",\"ts\":+1}]", 0, TROVE_ERR_JSON, 16},
        {"[{\"ph\":\"X\",\"ts\":NaN}]", 0, TROVE_ERR_JSON, 16},
        {"[{\"ph\":\"X\",\"ts\":1,\"a\":tru}]", 0, TROVE_ERR_JSON, 22},
        {"[{\"ph\":\"X\",\"ts\":1,\"a\":nul}]", 0, TROVE_ERR_JSON, 22},
        {"[{\"name\":\"a\x01\"}]", 0, TROVE_ERR_JSON, 11},
        {"[{\"name\":\"\\q\"}]", 0, TROVE_ERR_JSON, 10},
        {"[{\"name\":\"\\u12G4\"}]", 0, TROVE_ERR_JSON, 10},
        {"[{\"name\":\"abc", 0, TROVE_ERR_JSON, 13},
        {"[{\"ph\":\"X\",\"ts\":1", 0, TROVE_ERR_JSON, 17},
        {"[{\"ph\":\"X\",\"ts\":1},]", 0, TROVE_ERR_JSON, 19},
        {"[] x", 0, TROVE_ERR_JSON, 3},
        {"[{\"ph\":\"X\",\"ts\":1}] ]", 0, TROVE_ERR_JSON, 20},
        {"[{\"ph\":\"X\",\"ts\":1} {}]", 0, TROVE_ERR_JSON, 19},
        {"{\"traceEvents\":[]", 0, TROVE_ERR_JSON, 17},
        {"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1}", 0, TROVE_ERR_JSON, 33},
        {"{\"traceEvents\":[],}", 0, TROVE_ERR_JSON, 18},
        {"{\"traceEvents\":[] \"x\":1}", 0, TROVE_ERR_JSON, 18},
        {"{\"traceEvents\" []}", 0, TROVE_ERR_JSON, 15},
        {"{\"meta\":{\"a\":[1,2}, \"traceEvents\":[]}", 0, TROVE_ERR_JSON, 17},
        {"[{\"ph\":\"X\",\"ts\":1,\"args\":{\"a\":[1,2}}]", 0, TROVE_ERR_JSON, 34},
        {"[{\"ph\":\"X\",\"ts\":1,\"args\":{\"a\" 1}}]", 0, TROVE_ERR_JSON, 30},
        {"[{\"ph\":\"X\",\"ts\":1,\"args\":{1:2}}]", 0, TROVE_ERR_JSON, 26},
        {"\xEF\xBB[]", 0, TROVE_ERR_JSON, 2},
        /* valid JSON, not a trace */
        {"{}", 0, TROVE_ERR_TRACE, 0},
        {"{\"metadata\":{}}", 0, TROVE_ERR_TRACE, 0},
        {"{\"traceEvents\":{}}", 0, TROVE_ERR_TRACE, 15},
        {"42", 0, TROVE_ERR_TRACE, 0},
        {"[1]", 0, TROVE_ERR_TRACE, 1},
        {"[{\"ph\":\"X\",\"ts\":1},null]", 0, TROVE_ERR_TRACE, 19},
        {"[{\"ts\":1}]", 0, TROVE_ERR_TRACE, 1},
        {"[{\"ph\":88,\"ts\":1}]", 0, TROVE_ERR_TRACE, 7},
        {"[{\"ph\":\"X\"}]", 0, TROVE_ERR_TRACE, 1},
        {"[{\"ph\":\"X\",\"ts\":\"1\"}]", 0, TROVE_ERR_TRACE, 16},
        {"[{\"ph\":\"X\",\"ts\":1,\"dur\":null}]", 0, TROVE_ERR_TRACE, 24},
        {"[{\"ph\":\"X\",\"ts\":1,\"tid\":1.5}]", 0, TROVE_ERR_TRACE, 24},
        {"[{\"ph\":\"X\",\"ts\":1,\"tid\":\"7\"}]", 0, TROVE_ERR_TRACE, 24},
        {"[{\"ph\":\"X\",\"ts\":1,\"pid\":1e2}]", 0, TROVE_ERR_TRACE, 24},
        {"[{\"ph\":\"X\",\"ts\":1,\"pid\":4294967296}]", 0, TROVE_ERR_TRACE, 24},
        {"[{\"ph\":\"X\",\"ts\":1,\"pid\":-2147483649}]", 0, TROVE_ERR_TRACE, 24},
        {"[{\"ph\":\"X\",\"ts\":1,\"pid\":99999999999}]", 0, TROVE_ERR_TRACE, 24},
        {"[{\"ph\":\"X\",\"ts\":1,\"name\":7}]", 0, TROVE_ERR_TRACE, 25},
        {"[{\"ph\":\"i\",\"ts\":1,\"s\":\"x\"}]", 0, TROVE_ERR_TRACE, 22},
        {"[{\"ph\":\"i\",\"ts\":1,\"s\":1}]", 0, TROVE_ERR_TRACE, 22},
        {"[{\"ph\":\"M\",\"name\":\"thread_name\",\"args\":{\"name\":5}}]", 0, TROVE_ERR_TRACE, 47},
        {"[{\"ph\":\"M\",\"name\":\"thread_name\",\"tid\":0.5,\"args\":{\"name\":\"t\"}}]", 0,
         TROVE_ERR_TRACE, 38},
        /* unmatched (strict only) */
        {"[{\"ph\":\"B\",\"ts\":1,\"name\":\"open\"},{\"ph\":\"X\",\"ts\":2}]", 1,
         TROVE_ERR_UNMATCHED, 1},
        {"[{\"ph\":\"X\",\"ts\":2},{\"ph\":\"E\",\"ts\":3,\"tid\":4}]", 1, TROVE_ERR_UNMATCHED, 19},
        {"[{\"ph\":\"B\",\"ts\":1,\"tid\":1},{\"ph\":\"E\",\"ts\":3,\"tid\":2}]", 1,
         TROVE_ERR_UNMATCHED, 27},
        /* negative times */
        {"[{\"ph\":\"B\",\"ts\":5},{\"ph\":\"E\",\"ts\":4}]", 0, TROVE_ERR_NEGATIVE, 19},
        {"[{\"ph\":\"B\",\"ts\":5},{\"ph\":\"E\",\"ts\":4.9994}]", 1, TROVE_ERR_NEGATIVE, 19},
        {"[{\"ph\":\"X\",\"ts\":-1}]", 0, TROVE_ERR_NEGATIVE, 16},
        {"[{\"ph\":\"X\",\"ts\":-0.0001}]", 0, TROVE_ERR_NEGATIVE, 16},
        {"[{\"ph\":\"X\",\"ts\":1,\"dur\":-2}]", 0, TROVE_ERR_NEGATIVE, 24},
        {"[{\"ph\":\"i\",\"ts\":-1e-9}]", 0, TROVE_ERR_NEGATIVE, 16},
        /* limits */
        {"[{\"ph\":\"X\",\"ts\":18446744073709552}]", 0, TROVE_ERR_LIMIT, 16},
        {"[{\"ph\":\"X\",\"ts\":1e17}]", 0, TROVE_ERR_LIMIT, 16},
        {"[{\"ph\":\"X\",\"ts\":1e999999999999999999}]", 0, TROVE_ERR_LIMIT, 16},
        {"[{\"ph\":\"X\",\"ts\":18446744073709551,\"dur\":1}]", 0, TROVE_ERR_LIMIT, 40},
    };
    struct result r;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        check_bad(&bad[i]);

    /* an E that rounds to its B's ts closes it with a zero-length zone */
    import_str("[{\"ph\":\"B\",\"ts\":5},{\"ph\":\"E\",\"ts\":4.9999}]", 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK(r.ev.len == 1 && r.ev.ev[0].start_ns == 5000 && r.ev.ev[0].dur_ns == 0);
    CHECK(r.ev.len == 1 && !strcmp(ev_name(&r, 0), ""));
    result_free(&r);

    /* a huge negative exponent is just zero */
    import_str("[{\"ph\":\"X\",\"ts\":5e-99999999999999999999}]", 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK(r.ev.len == 1 && r.ev.ev[0].start_ns == 0);
    result_free(&r);

    /* skipped phases do not check their fields */
    import_str("[{\"ph\":\"O\",\"ts\":\"x\",\"tid\":-9.5,\"name\":[]},{\"ph\":\"M\",\"name\":\"x\","
               "\"pid\":null}]",
               1, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK_EQ_INT(r.st.skipped, 2);
    result_free(&r);
}

static void test_unmatched_nonstrict(void)
{
    static const char *doc =
        "[{\"ph\":\"E\",\"ts\":1,\"tid\":1,\"name\":\"orphan\"},"
        "{\"ph\":\"B\",\"ts\":2,\"tid\":1,\"name\":\"outer\"},"
        "{\"ph\":\"B\",\"ts\":3,\"tid\":1,\"name\":\"never\"},"
        "{\"ph\":\"B\",\"ts\":4,\"tid\":1,\"name\":\"inner\"},"
        "{\"ph\":\"E\",\"ts\":5,\"tid\":1},"
        "{\"ph\":\"B\",\"ts\":6,\"tid\":2,\"name\":\"other\"},"
        "{\"ph\":\"E\",\"ts\":7,\"tid\":3}]";
    static const char *strict_doc =
        "[{\"ph\":\"B\",\"ts\":2,\"tid\":1,\"name\":\"outer\"},"
        "{\"ph\":\"B\",\"ts\":3,\"tid\":1,\"name\":\"never\"}]";
    struct result r;

    import_str(doc, 0, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK_EQ_INT(r.st.unmatched_begin, 3); /* outer, never, other */
    CHECK_EQ_INT(r.st.unmatched_end, 2);   /* orphan, tid 3 */
    CHECK_EQ_INT(r.st.begin_end_pairs, 1);
    CHECK_EQ_INT(r.ev.len, 1);
    if (r.ev.len == 1) {
        CHECK_EQ_INT(r.ev.ev[0].start_ns, 4000);
        CHECK_EQ_INT(r.ev.ev[0].dur_ns, 1000);
        CHECK_EQ_INT(r.ev.ev[0].depth, 0); /* the open B events are dropped, not enclosing */
        CHECK_EQ_INT(r.ev.ev[0].name_id, 0);
        CHECK(!strcmp(ev_name(&r, 0), "inner"));
    }
    CHECK_EQ_INT(r.st.names, 1); /* the dropped events' names get no id */
    CHECK(trove_names_get(r.names, TROVE_NAME_EVENT, 1, 0, NULL) == NULL);
    check_chunked(doc, strlen(doc), 0, &r);
    result_free(&r);

    /* strict: the first unclosed B is named in the message */
    import_str(strict_doc, 1, &r);
    CHECK_EQ_INT(r.rc, TROVE_ERR_UNMATCHED);
    CHECK(strstr(r.diag.msg, "outer") != NULL);
    CHECK(strstr(r.diag.msg, "0.002") == NULL && strstr(r.diag.msg, "2.000 us") != NULL);
    result_free(&r);
}

static void test_limits(void)
{
    struct trove_chrome_options opt = {.strict = 0};
    struct trove_events ev = {0};
    struct trove_diag diag;
    struct trove_chrome_stats st;
    char *doc;
    size_t n = 0;
    int rc;

    /* nesting: 512 levels are accepted, 513 are not (the event array and object count) */
    for (int levels = 509; levels <= 511; levels++) {
        doc = malloc(2 * (size_t)levels + 64);
        n = (size_t)sprintf(doc, "[{\"ph\":\"X\",\"ts\":1,\"args\":");
        for (int i = 0; i < levels; i++)
            doc[n++] = '[';
        for (int i = 0; i < levels; i++)
            doc[n++] = ']';
        n += (size_t)sprintf(doc + n, "}]");
        rc = trove_chrome_import_mem((const uint8_t *)doc, n, &opt, &ev, NULL, &st, &diag);
        /* depth = 2 (array, event) + levels */
        CHECK_EQ_INT(rc, levels + 2 <= 512 ? TROVE_OK : TROVE_ERR_LIMIT);
        if (rc == TROVE_ERR_LIMIT)
            CHECK_EQ_INT(diag.offset, 25 + 510);
        free(doc);
    }
    CHECK_EQ_INT(ev.len, 2);
    trove_events_free(&ev);

    /* deep nesting in a top-level member and inside args, as objects */
    doc = malloc(100000);
    n = (size_t)sprintf(doc, "{\"metadata\":");
    for (int i = 0; i < 10000; i++)
        n += (size_t)sprintf(doc + n, "{\"a\":");
    rc = trove_chrome_import_mem((const uint8_t *)doc, n, &opt, &ev, NULL, NULL, &diag);
    CHECK_EQ_INT(rc, TROVE_ERR_LIMIT);
    CHECK_EQ_INT(ev.len, 0);
    free(doc);

    /* a name longer than TROVE_NAME_MAX */
    doc = malloc(TROVE_NAME_MAX + 100);
    n = (size_t)sprintf(doc, "[{\"ph\":\"X\",\"ts\":1,\"name\":\"");
    memset(doc + n, 'a', TROVE_NAME_MAX + 1);
    n += TROVE_NAME_MAX + 1;
    n += (size_t)sprintf(doc + n, "\"}]");
    rc = trove_chrome_import_mem((const uint8_t *)doc, n, &opt, &ev, NULL, NULL, &diag);
    CHECK_EQ_INT(rc, TROVE_ERR_LIMIT);
    CHECK_EQ_INT(diag.offset, 25);
    /* ... fine on a skipped event, and at exactly the limit */
    memcpy(doc + 8, "R", 1);
    rc = trove_chrome_import_mem((const uint8_t *)doc, n, &opt, &ev, NULL, NULL, &diag);
    CHECK_EQ_INT(rc, TROVE_OK);
    memcpy(doc + 8, "X", 1);
    memmove(doc + 26 + TROVE_NAME_MAX, doc + 27 + TROVE_NAME_MAX, 4);
    rc = trove_chrome_import_mem((const uint8_t *)doc, n - 1, &opt, &ev, NULL, NULL, &diag);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK_EQ_INT(ev.len, 1);
    free(doc);
    trove_events_free(&ev);

    /* max_input, in memory and streamed */
    {
        static const char small[] = "[{\"ph\":\"X\",\"ts\":1}]";
        size_t len = sizeof small - 1;
        struct trove_names *names;
        FILE *f;
        opt.max_input = len - 1;
        rc = trove_chrome_import_mem((const uint8_t *)small, len, &opt, &ev, NULL, NULL, &diag);
        CHECK_EQ_INT(rc, TROVE_ERR_LIMIT);
        f = tmpfile();
        if (!f || fwrite(small, 1, len, f) != len || fseek(f, 0, SEEK_SET) != 0)
            abort();
        if (trove_names_new(&names) != TROVE_OK)
            abort();
        rc = trove__chrome_import_chunked(f, 4, &opt, &ev, names, NULL, &st, &diag);
        CHECK_EQ_INT(rc, TROVE_ERR_LIMIT);
        CHECK_EQ_INT(trove_names_count(names), 0);
        CHECK_EQ_INT(ev.len, 0);
        opt.max_input = len;
        rewind(f);
        rc = trove__chrome_import_chunked(f, 4, &opt, &ev, names, NULL, &st, &diag);
        CHECK_EQ_INT(rc, TROVE_OK);
        CHECK_EQ_INT(st.input_bytes, len);
        rc = trove_chrome_import_mem((const uint8_t *)small, len, &opt, &ev, NULL, NULL, &diag);
        CHECK_EQ_INT(rc, TROVE_OK);
        CHECK_EQ_INT(ev.len, 2);
        fclose(f);
        trove_names_free(names);
        trove_events_free(&ev);
    }

    /* a read error is passed through as -errno */
    {
        FILE *f = fopen("/dev/null", "w");
        if (!f)
            abort();
        rc = trove_chrome_import(f, NULL, &ev, NULL, NULL, &diag);
        CHECK(rc < 0 && rc > -1000);
        CHECK_EQ_INT(diag.code, rc);
        CHECK_EQ_INT(ev.len, 0);
        fclose(f);
    }

    /* arguments */
    CHECK_EQ_INT(trove_chrome_import(NULL, NULL, &ev, NULL, NULL, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_chrome_import_mem(NULL, 3, NULL, &ev, NULL, NULL, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_chrome_import_mem(NULL, 0, NULL, &ev, NULL, NULL, NULL), TROVE_ERR_JSON);
}

/* Importing twice into the same arrays appends, and names are merged (same ids). */
static void test_append(void)
{
    struct trove_events ev = {0};
    struct trove_names *names;
    size_t len;
    char *buf = load("chrome_begin_end.json", &len);
    if (trove_names_new(&names) != TROVE_OK)
        abort();
    CHECK_EQ_INT(trove_chrome_import_mem((uint8_t *)buf, len, NULL, &ev, names, NULL, NULL), 0);
    CHECK_EQ_INT(trove_chrome_import_mem((uint8_t *)buf, len, NULL, &ev, names, NULL, NULL), 0);
    CHECK_EQ_INT(ev.len, 8);
    CHECK(ev.len == 8 && !memcmp(ev.ev, ev.ev + 4, 4 * sizeof *ev.ev));
    CHECK_EQ_INT(trove_names_count(names), 4);
    trove_events_free(&ev);
    trove_names_free(names);
    free(buf);
}

/* ---- the real sample ---------------------------------------------------------------- */

/* Phases counted by a naive scan for `"ph":"<c>"` (the sample's compact formatting). */
struct phase_count {
    uint64_t n[128];
    char carry[8];
    size_t carry_len;
};

static void count_chunk(struct phase_count *pc, const char *buf, size_t len)
{
    static char tmp[8 + (1 << 16)];
    size_t total = pc->carry_len + len;
    memcpy(tmp, pc->carry, pc->carry_len);
    memcpy(tmp + pc->carry_len, buf, len);
    /* a match must end in buf, so that it is not counted twice */
    for (size_t i = 0; i + 8 <= total; i++) {
        if (tmp[i] == '"' && i + 8 > pc->carry_len && !memcmp(tmp + i, "\"ph\":\"", 6) &&
            tmp[i + 7] == '"' && (unsigned char)tmp[i + 6] < 128)
            pc->n[(unsigned char)tmp[i + 6]]++;
    }
    pc->carry_len = total < 7 ? total : 7;
    memcpy(pc->carry, tmp + total - pc->carry_len, pc->carry_len);
}

static void test_sample(void)
{
    static const char *path = TROVE_SHARED_DATA "/chrome-trace-dom.json.zst";
    static struct phase_count pc;
    struct trove_chrome_options opt = {.strict = 0};
    struct result r, m;
    char cmd[1024], *all = NULL;
    size_t all_len = 0, all_cap = 0, n;
    static char buf[1 << 16];
    uint64_t complete, instants, b, e;
    FILE *f;

    f = fopen(path, "rb");
    if (!f)
        test_skip("sample trace not found (" TROVE_SHARED_DATA ")");
    fclose(f);
    if (system("zstd --version >/dev/null 2>&1") != 0)
        test_skip("zstd not installed");
    snprintf(cmd, sizeof cmd, "zstd -dc '%s'", path);

    /* 1: the importer on the pipe */
    memset(&r, 0, sizeof r);
    if (trove_names_new(&r.names) != TROVE_OK || !(f = popen(cmd, "r")))
        abort();
    r.rc = trove_chrome_import(f, &opt, &r.ev, r.names, &r.st, &r.diag);
    CHECK_EQ_INT(pclose(f), 0);
    if (r.rc != TROVE_OK)
        fprintf(stderr, "sample: %s at %llu: %s\n", trove_strerror(r.rc),
                (unsigned long long)r.diag.offset, r.diag.msg);
    CHECK_EQ_INT(r.rc, TROVE_OK);

    /* 2: a naive count of phases in the text (compact "ph":"X" formatting), and a copy */
    if (!(f = popen(cmd, "r")))
        abort();
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        count_chunk(&pc, buf, n);
        if (all_len + n > all_cap) {
            all_cap = (all_len + n) * 2;
            all = realloc(all, all_cap);
            if (!all)
                abort();
        }
        memcpy(all + all_len, buf, n);
        all_len += n;
    }
    CHECK_EQ_INT(pclose(f), 0);
    complete = pc.n['X'];
    instants = pc.n['I'] + pc.n['i'] + pc.n['n'];
    b = pc.n['B'];
    e = pc.n['E'];
    /* the sample's documented composition */
    CHECK_EQ_INT(complete, 297047);
    CHECK_EQ_INT(pc.n['I'], 7249);
    CHECK_EQ_INT(pc.n['n'], 461);
    CHECK_EQ_INT(b, 52);
    CHECK_EQ_INT(e, 0);
    CHECK_EQ_INT(all_len, r.st.input_bytes);

    CHECK_EQ_INT(r.st.complete, complete);
    CHECK_EQ_INT(r.st.instants, instants);
    CHECK_EQ_INT(r.st.begin_end_pairs + r.st.async_pairs + r.st.unmatched_begin,
                 b + pc.n['b'] + pc.n['S']);
    CHECK_EQ_INT(r.st.begin_end_pairs + r.st.async_pairs + r.st.unmatched_end,
                 e + pc.n['e'] + pc.n['F']);
    CHECK_EQ_INT(r.ev.len, complete + instants + r.st.begin_end_pairs + r.st.async_pairs);
    /* 297,047 X, 7,249 I, 461 n, 1,992 b/e pairs; the 52 B and 14 b never end */
    CHECK_EQ_INT(r.ev.len, 306749);
    CHECK_EQ_INT(r.st.async_pairs, 1992);
    CHECK_EQ_INT(r.st.unmatched_begin, 66);
    CHECK_EQ_INT(r.st.flow_events, pc.n['s'] + pc.n['t'] + pc.n['f']);
    CHECK_EQ_INT(r.st.flow_events, 6366);
    CHECK_EQ_INT(r.st.skipped, 37);
    CHECK_EQ_INT(r.st.skipped_phase['R'], 28);
    CHECK_EQ_INT(r.st.skipped_phase['M'], 9); /* process_uptime_seconds */
    CHECK_EQ_INT(r.st.trace_events, 315288);
    CHECK(r.st.threads >= 68 && r.st.threads < 1000);
    CHECK(r.st.names >= 314 && r.st.names < 100000);
    CHECK(sorted(&r.ev));
    {
        int named = 1, kinds = 1;
        uint64_t zones = 0;
        for (size_t i = 0; i < r.ev.len; i++) {
            const struct trove_event *ev = &r.ev.ev[i];
            named &= ev->name_id < r.st.names &&
                     trove_names_get(r.names, TROVE_NAME_EVENT, ev->name_id, 0, NULL) != NULL;
            kinds &= ev->kind <= TROVE_KIND_ASYNC_INSTANT && (ev->kind == 0 || ev->dur_ns == 0);
            zones += ev->kind == TROVE_KIND_ZONE && ev->extra == 0;
        }
        CHECK(named);
        CHECK(kinds);
        CHECK_EQ_INT(zones, complete);
    }
    {
        const char *s = trove_names_get(r.names, TROVE_NAME_THREAD, 10585, 10585, NULL);
        CHECK(s && !strcmp(s, "CrBrowserMain"));
    }

    /* 3: the in-memory import of the same bytes is identical */
    import_buf(all, all_len, 0, &m);
    CHECK_EQ_INT(m.rc, TROVE_OK);
    CHECK(same_events(&m.ev, &r.ev));
    CHECK(trove_names_equal(m.names, r.names));
    result_free(&m);

    /* 4: strict refuses the 52 open B events */
    import_buf(all, all_len, 1, &m);
    CHECK_EQ_INT(m.rc, TROVE_ERR_UNMATCHED);
    CHECK_EQ_INT(m.ev.len, 0);
    CHECK(m.diag.offset < all_len && !memcmp(all + m.diag.offset, "{", 1));
    result_free(&m);

    free(all);
    result_free(&r);
}

/* The progress callback sees every chunk, in order, ending at the input's size. */
struct prog_seen {
    uint64_t calls, last, backwards;
};

static void on_progress(void *ctx, uint64_t bytes)
{
    struct prog_seen *p = ctx;
    p->backwards += bytes <= p->last;
    p->last = bytes;
    p->calls++;
}

/* What a trace carries that is not kept is counted by kind: args members kept nowhere (all
 * but an M's name and sort_index, a T's step and a C's numbers), categories (distinct),
 * members of events not read (by name), and top-level members besides traceEvents. */
static void test_not_kept(void)
{
    struct result r;
    import_str("{\"displayTimeUnit\":\"ns\",\"traceEvents\":["
               "{\"ph\":\"X\",\"name\":\"a\",\"cat\":\"blink\",\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1,"
               "\"tts\":5,\"tdur\":1,\"args\":{\"url\":\"x\",\"n\":3,\"o\":{\"k\":[1]}}},"
               "{\"ph\":\"X\",\"name\":\"b\",\"cat\":\"v8\",\"ts\":4,\"dur\":1,\"pid\":1,\"tid\":1,\"tts\":6,\"args\":{}},"
               "{\"ph\":\"i\",\"name\":\"c\",\"cat\":\"blink\",\"ts\":9,\"pid\":1,\"tid\":1,\"s\":\"t\",\"sf\":7},"
               "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"main\",\"extra\":1}},"
               "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":1,\"args\":{\"sort_index\":2}},"
               "{\"ph\":\"C\",\"name\":\"mem\",\"ts\":3,\"pid\":1,\"args\":{\"used\":7,\"label\":\"z\"}}"
               "],\"metadata\":{\"v\":1},\"systemTraceEvents\":\"\"}",
               0, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK_EQ_INT(r.st.args_events, 3);  /* the first X (3 members), the M's extra, the C's label */
    CHECK_EQ_INT(r.st.args_members, 5);
    CHECK_EQ_INT(r.st.cat_events, 3);
    CHECK_EQ_INT(r.st.categories, 2);
    CHECK_EQ_INT(r.st.other_members, 4); /* tts twice, tdur, sf */
    CHECK(!strcmp(r.st.other_names[0], "tts") && r.st.other_counts[0] == 2);
    CHECK(!strcmp(r.st.other_names[1], "tdur") && r.st.other_counts[1] == 1);
    CHECK(!strcmp(r.st.other_names[2], "sf") && r.st.other_counts[2] == 1);
    CHECK(r.st.other_names[3][0] == 0);
    CHECK_EQ_INT(r.st.top_members, 3);
    CHECK(!strcmp(r.st.top_names[0], "displayTimeUnit") && !strcmp(r.st.top_names[1], "metadata") &&
          !strcmp(r.st.top_names[2], "systemTraceEvents"));
    result_free(&r);
    /* more than 8 distinct keys: the first 8 named, every one counted */
    import_str("[{\"ph\":\"i\",\"name\":\"c\",\"ts\":9,\"pid\":1,\"tid\":1,\"k1\":1,\"k2\":1,\"k3\":1,"
               "\"k4\":1,\"k5\":1,\"k6\":1,\"k7\":1,\"k8\":1,\"k9\":1,\"a_key_longer_than_twenty_three_bytes\":1}]",
               0, &r);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK_EQ_INT(r.st.other_members, 10);
    CHECK(!strcmp(r.st.other_names[7], "k8") && r.st.other_counts[7] == 1);
    CHECK(r.st.other_names[0][0] == 'k');
    CHECK_EQ_INT(r.st.args_events, 0);
    CHECK_EQ_INT(r.st.cat_events, 0);
    result_free(&r);
}

static void test_progress(void)
{
    struct trove_chrome_options opt = {.strict = 0};
    struct prog_seen seen = {0, 0, 0};
    struct trove_events ev = {0};
    size_t len = 0;
    uint8_t *text = test_read_file(DATA "chrome_nest_x.json", &len);
    FILE *f = fopen(DATA "chrome_nest_x.json", "rb");
    CHECK(text != NULL && f != NULL);
    if (!text || !f)
        return;
    opt.progress = on_progress;
    opt.progress_ctx = &seen;
    CHECK_EQ_INT(trove__chrome_import_chunked(f, 64, &opt, &ev, NULL, NULL, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(seen.last, len);
    CHECK_EQ_INT(seen.calls, (len + 63) / 64);
    CHECK_EQ_INT(seen.backwards, 0);
    CHECK(ev.len > 0);
    fclose(f);
    free(text);
    trove_events_free(&ev);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_nest_x);
    RUN(test_begin_end);
    RUN(test_meta_instants);
    RUN(test_overlap);
    RUN(test_decimal);
    RUN(test_noclose);
    RUN(test_freq);
    RUN(test_unicode);
    RUN(test_async_flows_counters);
    RUN(test_sort_indexes);
    RUN(test_bad);
    RUN(test_unmatched_nonstrict);
    RUN(test_limits);
    RUN(test_append);
    RUN(test_progress);
    RUN(test_not_kept);
    RUN(test_sample);
    return test_done();
}
