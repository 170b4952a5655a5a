/*
 * test_diff.c: two captures compared (src/capture/diff.c, docs/diff.md), on captures written
 * here with durations worked out by hand:
 *   - exact: the figures, U (the pairs where B's instance is longer, ties half) counted by
 *     brute force, effect, the groups' order (slower, new, faster, gone, same) and the JSON
 *     of a row byte for byte; a range, min_count, a glob and a limit;
 *   - sketch: the same two sides from the summaries give the same order and U within the
 *     ties a bucket makes; a side built row by row (a service's) compares like one read;
 *   - by thread: rows per thread name, a thread without a name is "tid N";
 *   - bad arguments, a bad histogram, a missing capture, and every allocation failing in turn
 *     (NOMEM, or the same answer where a summary is read around).
 * Also the route of GET /api/diff: every parameter, and each bad one a 400.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/api.h"
#include "testutil.h"
#include "trove/capture.h"
#include "trove/diff.h"
#include "trove/testing.h"

static char dir[256];
static struct trove_store *st;

/* name ids: 0 "same" (equal in both), 1 "slow" (B longer), 2 "fast" (B shorter), 3 "gone"
 * (A only), 4 "new" (B only); two threads, 1/1 "main" and 1/2 unnamed */
static void add(struct trove_events *ev, uint64_t t, uint64_t dur, uint32_t name, uint32_t tid)
{
    struct trove_event e;
    memset(&e, 0, sizeof e);
    e.start_ns = t;
    e.dur_ns = dur;
    e.pid = 1;
    e.tid = tid;
    e.name_id = name;
    e.kind = TROVE_KIND_ZONE;
    CHECK_EQ_INT(trove_events_push(ev, &e), TROVE_OK);
}

static void write_capture(const char *name, int b)
{
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_diag diag = {0};
    static const char *const nm[] = {"same", "slow", "fast", "gone", "new"};
    uint64_t t = 1000000;

    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    for (uint32_t i = 0; i < 5; i++)
        CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_EVENT, i, 0, nm[i], strlen(nm[i])), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_THREAD, 1, 1, "main", 4), TROVE_OK);
    for (int i = 0; i < 40; i++) {
        add(&ev, t += 1000, 100 + (uint64_t)i, 0, 1 + (uint32_t)(i & 1));           /* same */
        add(&ev, t += 1000, (b ? 300 : 200) + (uint64_t)i * 2, 1, 1);                /* slow */
        add(&ev, t += 1000, (b ? 150 : 400) + (uint64_t)i, 2, 2);                    /* fast */
        if (!b)
            add(&ev, t += 1000, 50, 3, 1);                                           /* gone */
        if (b && i < 5)
            add(&ev, t += 1000, 70, 4, 1);                                           /* new */
    }
    CHECK_EQ_INT(trove_capture_write(st, name, ev.ev, ev.len, names, NULL, NULL, &diag), TROVE_OK);
    trove_events_free(&ev);
    trove_names_free(names);
}

static char *run(const char *a, const char *b, int by_thread, int method,
                 const struct trove_diff_options *o)
{
    struct trove_diff_side sa, sb;
    struct trove_diag diag = {0};
    struct trove_bytes out = {0};
    char *s;

    CHECK_EQ_INT(trove_diff_side_read(st, a, 0, 0, by_thread, method, &sa, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_diff_side_read(st, b, 0, 0, by_thread, method, &sb, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_diff_json(&sa, &sb, o, &out), TROVE_OK);
    trove_diff_side_free(&sa);
    trove_diff_side_free(&sb);
    s = malloc(out.len + 1);
    memcpy(s, out.ptr, out.len);
    s[out.len] = 0;
    trove_bytes_free(&out);
    return s;
}

/* The names of the rows, in order, space-separated. */
static void row_names(const char *json, char *buf, size_t cap)
{
    const char *p = strstr(json, "\"rows\":[");
    size_t n = 0;
    buf[0] = 0;
    while (p && (p = strstr(p, "{\"name\":\"")) != NULL) {
        const char *q = p + 9, *e = strchr(q, '"');
        n += (size_t)snprintf(buf + n, cap - n, "%s%.*s", n ? " " : "", (int)(e - q), q);
        p = e;
    }
}

static void test_exact(void)
{
    char names[256], *j = run("a", "b", 0, TROVE_DIFF_EXACT, NULL);
    /* slow: A 200..278 step 2, B 300..378: every B longer, U = 1600, effect 1 */
    CHECK(strstr(j, "\"method\":\"exact\"") != NULL);
    row_names(j, names, sizeof names);
    CHECK(strcmp(names, "slow new fast gone same") == 0);
    if (strcmp(names, "slow new fast gone same"))
        fprintf(stderr, "rows: %s\n", names);
    CHECK(strstr(j, "{\"name\":\"slow\",\"in\":\"both\",\"change\":\"slower\",\"significant\":true,"
                    "\"a\":{\"count\":40,\"total_ns\":9560,\"min_ns\":200,\"p50_ns\":238,\"p90_ns\":270,"
                    "\"p99_ns\":278,\"max_ns\":278},\"b\":{\"count\":40,\"total_ns\":13560,\"min_ns\":300,"
                    "\"p50_ns\":338,\"p90_ns\":370,\"p99_ns\":378,\"max_ns\":378},\"ratio\":{\"count\":1,"
                    "\"total\":1.41841,\"p50\":1.42017,\"p90\":1.37037,\"p99\":1.35971,\"max\":1.35971},"
                    "\"delta\":{\"count\":0,\"total_ns\":4000,\"p50_ns\":100,\"p90_ns\":100,\"p99_ns\":100,"
                    "\"max_ns\":100},\"test\":{\"method\":\"exact\",\"u\":1600.0,") != NULL);
    CHECK(strstr(j, "\"effect\":1.0000,\"shift\":1.4") != NULL);
    /* fast: every B shorter (A 400.., B 150..): U 0 */
    CHECK(strstr(j, "\"change\":\"faster\",\"significant\":true") != NULL);
    CHECK(strstr(j, "\"u\":0.0,") != NULL);
    /* same: equal sets, U = n^2/2, p 1, not significant */
    CHECK(strstr(j, "{\"name\":\"same\",\"in\":\"both\",\"change\":\"same\",\"significant\":false") != NULL);
    CHECK(strstr(j, "\"u\":800.0,\"z\":0,\"p\":1,\"effect\":0.5000,\"shift\":1}") != NULL);
    /* gone and new: one side null, no ratio, no test */
    CHECK(strstr(j, "{\"name\":\"gone\",\"in\":\"a\",\"change\":\"gone\",\"significant\":false,\"a\":{\"count\":40,"
                    "\"total_ns\":2000,\"min_ns\":50,\"p50_ns\":50,\"p90_ns\":50,\"p99_ns\":50,\"max_ns\":50},"
                    "\"b\":null,\"ratio\":null,\"delta\":null,\"test\":null}") != NULL);
    CHECK(strstr(j, "{\"name\":\"new\",\"in\":\"b\",\"change\":\"new\"") != NULL);
    CHECK(strstr(j, "\"a\":{\"capture\":\"a\",\"from_ns\":1001000,") != NULL);
    CHECK(strstr(j, "\"events\":160,\"names\":4},\"b\":{\"capture\":\"b\"") != NULL);
    CHECK(strstr(j, "\"by\":\"name\",\"method\":\"exact\",\"alpha\":0.001,\"min_effect\":0.05,"
                    "\"min_count\":0,\"nrows\":5,\"significant\":2,\"rows\":[") != NULL);
    free(j);
    /* min_count 10 leaves out new (5 in B, 0 in A); a glob; a limit */
    {
        struct trove_diff_options o = {0};
        const char *g[] = {"s*"};
        o.min_count = 10;
        j = run("a", "b", 0, TROVE_DIFF_EXACT, &o);
        row_names(j, names, sizeof names);
        CHECK(strcmp(names, "slow fast gone same") == 0);
        free(j);
        memset(&o, 0, sizeof o);
        o.globs = g;
        o.nglobs = 1;
        o.limit = 1;
        j = run("a", "b", 0, TROVE_DIFF_EXACT, &o);
        row_names(j, names, sizeof names);
        CHECK(strcmp(names, "slow") == 0);
        CHECK(strstr(j, "\"nrows\":2,") != NULL);
        free(j);
        /* alpha so small nothing passes: slow and fast join the rest */
        memset(&o, 0, sizeof o);
        o.alpha = 1e-300;
        j = run("a", "b", 0, TROVE_DIFF_EXACT, &o);
        CHECK(strstr(j, "\"significant\":true") == NULL);
        free(j);
    }
}

static void test_sketch(void)
{
    char names[256], *j = run("a", "b", 0, TROVE_DIFF_SKETCH, NULL);
    CHECK(strstr(j, "\"method\":\"sketch\"") != NULL);
    row_names(j, names, sizeof names);
    CHECK(strcmp(names, "slow new fast gone same") == 0);
    /* no bucket holds both an A and a B duration of slow: U exact */
    CHECK(strstr(j, "\"test\":{\"method\":\"sketch\",\"u\":1600.0,") != NULL);
    /* figures: counts, totals, min, max exact; quantiles within 1 % */
    CHECK(strstr(j, "\"a\":{\"count\":40,\"total_ns\":9560,\"min_ns\":200,") != NULL);
    free(j);
    /* a side built row by row: an exact side against it is bucketed */
    {
        struct trove_diff_side sa, sb;
        struct trove_diag diag = {0};
        struct trove_bytes out = {0};
        struct trove_diff_figures f = {4, 4000, 1000, 1000, 1000, 1000, 1000};
        struct trove_summary_bucket h[1];
        h[0].index = trove_summary_bucket_of(1000);
        h[0].count = 4;
        CHECK_EQ_INT(trove_diff_side_read(st, "a", 0, 0, 0, TROVE_DIFF_EXACT, &sa, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_diff_side_init(&sb, "svc", 0, 1, 4), TROVE_OK);
        CHECK_EQ_INT(trove_diff_side_add(&sb, "slow", 4, NULL, &f, h, 1), TROVE_OK);
        CHECK_EQ_INT(trove_diff_json(&sa, &sb, NULL, &out), TROVE_OK);
        CHECK_EQ_INT(trove_bytes_append(&out, "", 1), TROVE_OK);
        CHECK(out.len > 0 && strstr((const char *)out.ptr, "\"method\":\"sketch\",\"alpha\"") != NULL);
        /* every B (1000) longer than every A (200..278): U 160 */
        CHECK(strstr((const char *)out.ptr, "\"u\":160.0,") != NULL);
        /* a bad histogram: out of order, past the count, past the buckets */
        {
            struct trove_summary_bucket bad[2];
            bad[0].index = 9;
            bad[0].count = 1;
            bad[1].index = 9;
            bad[1].count = 1;
            CHECK_EQ_INT(trove_diff_side_add(&sb, "x", 1, NULL, &f, bad, 2), TROVE_ERR_INVALID);
            bad[1].index = 10;
            bad[1].count = 4;
            CHECK_EQ_INT(trove_diff_side_add(&sb, "x", 1, NULL, &f, bad, 2), TROVE_ERR_INVALID);
            bad[0].index = TROVE_SUMMARY_BUCKETS;
            CHECK_EQ_INT(trove_diff_side_add(&sb, "x", 1, NULL, &f, bad, 1), TROVE_ERR_INVALID);
            CHECK(sb.nrows == 1);
        }
        trove_bytes_free(&out);
        memset(&out, 0, sizeof out);
        /* one side by thread and the other not */
        sb.by_thread = 1;
        CHECK_EQ_INT(trove_diff_json(&sa, &sb, NULL, &out), TROVE_ERR_INVALID);
        CHECK(out.len == 0);
        trove_diff_side_free(&sa);
        trove_diff_side_free(&sb);
    }
}

static void test_thread(void)
{
    char *j = run("a", "b", 1, TROVE_DIFF_EXACT, NULL);
    /* same is on both threads: 20 each; slow on main; fast on tid 2 */
    CHECK(strstr(j, "\"by\":\"thread\"") != NULL);
    CHECK(strstr(j, "{\"name\":\"slow\",\"thread\":\"main\",\"in\":\"both\",\"change\":\"slower\"") != NULL);
    CHECK(strstr(j, "{\"name\":\"fast\",\"thread\":\"tid 2\",\"in\":\"both\",\"change\":\"faster\"") != NULL);
    CHECK(strstr(j, "{\"name\":\"same\",\"thread\":\"main\",\"in\":\"both\",\"change\":\"same\",\"significant\":false,"
                    "\"a\":{\"count\":20,") != NULL);
    CHECK(strstr(j, "{\"name\":\"same\",\"thread\":\"tid 2\",") != NULL);
    CHECK(strstr(j, "\"names\":4},\"b\"") != NULL);
    free(j);
    /* by thread from the segments' histograms */
    j = run("a", "b", 1, TROVE_DIFF_SKETCH, NULL);
    CHECK(strstr(j, "{\"name\":\"slow\",\"thread\":\"main\",\"in\":\"both\",\"change\":\"slower\"") != NULL);
    CHECK(strstr(j, "\"method\":\"sketch\",\"u\":1600.0,") != NULL);
    free(j);
}

static void test_bad(void)
{
    struct trove_diff_side sa;
    struct trove_diag diag = {0};

    CHECK_EQ_INT(trove_diff_side_read(st, "nosuch", 0, 0, 0, TROVE_DIFF_AUTO, &sa, &diag), TROVE_ERR_NOTFOUND);
    CHECK(strstr(diag.msg, "nosuch") != NULL);
    trove_diff_side_free(&sa);
    CHECK_EQ_INT(trove_diff_side_read(st, "a", 9000000, 5000, 0, TROVE_DIFF_AUTO, &sa, &diag), TROVE_ERR_INVALID);
    trove_diff_side_free(&sa);
    CHECK_EQ_INT(trove_diff_side_read(st, "a", 0, 0, 0, 7, &sa, &diag), TROVE_ERR_INVALID);
    trove_diff_side_free(&sa);
    CHECK_EQ_INT(trove_diff_json(NULL, NULL, NULL, NULL), TROVE_ERR_INVALID);
    /* a range that holds nothing of a: every name new */
    {
        struct trove_diff_side sb;
        struct trove_bytes out = {0};
        CHECK_EQ_INT(trove_diff_side_read(st, "a", 1, 2, 0, TROVE_DIFF_AUTO, &sa, &diag), TROVE_OK);
        CHECK(sa.nrows == 0 && sa.events == 0);
        CHECK_EQ_INT(trove_diff_side_read(st, "b", 0, 0, 0, TROVE_DIFF_AUTO, &sb, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_diff_json(&sa, &sb, NULL, &out), TROVE_OK);
        CHECK_EQ_INT(trove_bytes_append(&out, "", 1), TROVE_OK);
        CHECK(strstr((const char *)out.ptr, "\"in\":\"both\"") == NULL);
        CHECK(strstr((const char *)out.ptr, "\"change\":\"new\"") != NULL);
        trove_bytes_free(&out);
        trove_diff_side_free(&sa);
        trove_diff_side_free(&sb);
    }
}

/* Every allocation failing in turn: an error that says NOMEM, or (where a summary that could
 * not be read is read around, from its segments) the very answer of a run without failures. */
static void test_oom(void)
{
    int done = 0;
    char *want[2] = {run("a", "b", 0, TROVE_DIFF_SKETCH, NULL), run("a", "b", 1, TROVE_DIFF_AUTO, NULL)};

    for (uint64_t n = 1; n < 400 && !done; n++) {
        struct trove_diff_side sa, sb;
        struct trove_diag diag = {0};
        struct trove_bytes out = {0};
        int r1, r2, r3 = TROVE_OK, k = (int)(n & 1);
        memset(&sb, 0, sizeof sb);
        trove_testing_alloc_fail_at(n, 0);
        r1 = trove_diff_side_read(st, "a", 0, 0, k, k ? TROVE_DIFF_AUTO : TROVE_DIFF_SKETCH, &sa, &diag);
        r2 = r1 == TROVE_OK ? trove_diff_side_read(st, "b", 0, 0, k, k ? TROVE_DIFF_AUTO : TROVE_DIFF_SKETCH, &sb, &diag) : r1;
        if (r2 == TROVE_OK)
            r3 = trove_diff_json(&sa, &sb, NULL, &out);
        done = trove_testing_alloc_failures() == 0;
        trove_testing_alloc_fail_at(0, 0);
        if (r1 == TROVE_OK && r2 == TROVE_OK && r3 == TROVE_OK)
            CHECK(out.len == strlen(want[k]) && !memcmp(out.ptr, want[k], out.len));
        else
            CHECK(r1 == TROVE_ERR_NOMEM || r2 == TROVE_ERR_NOMEM || r3 == TROVE_ERR_NOMEM);
        trove_bytes_free(&out);
        trove_diff_side_free(&sa);
        trove_diff_side_free(&sb);
    }
    CHECK(done);
    free(want[0]);
    free(want[1]);
}

static void test_route(void)
{
    struct trove__api_req r;
    struct trove__api_error e;
    static const char *const bad[] = {
        "a=x",  "b=x", "a=x&b=y&by=process", "a=x&b=y&alpha=0", "a=x&b=y&alpha=1",
        "a=x&b=y&method=fast", "a=x&b=y&a_from_ns=9&a_to_ns=3", "a=x&b=y&b_from_ns=9&b_to_ns=9",
        "a=x&b=y&a=z", "a=x&b=y&min_count=-1", "a=x&b=y&colour=1", "a=../x&b=y", "a=x&b=y&limit=100001",
        "a=x&b=y&tracks=1:1"};

    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/diff",
                                  "a=run1&b=run2&a_from_ns=1&a_to_ns=9&b_from_ns=2&b_to_ns=8&by=thread"
                                  "&min_count=3&name=zone_*&alpha=0.01&method=exact&limit=5",
                                  &r, &e), 0);
    CHECK_EQ_INT(r.route, TROVE__R_DIFF);
    CHECK(!strcmp(r.name, "run1") && !strcmp(r.name_b, "run2") && r.has_event && !strcmp(r.event, "zone_*"));
    CHECK(r.a_from_ns == 1 && r.a_to_ns == 9 && r.b_from_ns == 2 && r.b_to_ns == 8 && r.by_thread == 1);
    CHECK(r.min_count == 3 && fabs(r.alpha - 0.01) < 1e-12 && r.method == TROVE_DIFF_EXACT && r.qlimit == 5);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/diff", "a=x&b=y", &r, &e), 0);
    CHECK(r.qlimit == 0 && r.method == TROVE_DIFF_AUTO && r.alpha == 0 && !r.by_thread && !r.has_event);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/diff", bad[i], &r, &e), -1);
        CHECK_EQ_INT(e.status, 400);
    }
    CHECK_EQ_INT(trove__api_route(TROVE__POST, "/api/diff", "a=x&b=y", &r, &e), -1);
    CHECK_EQ_INT(e.status, 405);
}

int main(int argc, char **argv)
{
    struct trove_diag diag = {0};

    test_init(argc, argv);
    snprintf(dir, sizeof dir, "/tmp/trove_test_diff_%d", (int)getpid());
    test_rm_rf(dir);
    CHECK_EQ_INT(trove_store_open(dir, TROVE_STORE_CREATE, &st, &diag), TROVE_OK);
    write_capture("a", 0);
    write_capture("b", 1);
    RUN(test_exact);
    RUN(test_sketch);
    RUN(test_thread);
    RUN(test_bad);
    RUN(test_oom);
    RUN(test_route);
    trove_store_close(st);
    test_rm_rf(dir);
    return test_done();
}
