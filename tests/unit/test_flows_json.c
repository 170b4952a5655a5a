/*
 * test_flows_json.c: the flows endpoint's JSON (src/net/flows_json.c) and its route
 * (src/net/api.c), from rows built in memory. A small set of chains gives exactly the bytes
 * worked out by hand: a chain is taken whole when one of its points is in the range on a
 * track asked for, and only then; rows sorted by id and time; the limit keeps the smallest
 * ids and says truncated; the row budget cuts at a whole chain; bad arguments and every
 * allocation failing in turn leave the output as it was. The route takes from_ns, to_ns,
 * tracks and limit (1 to 10000) and refuses anything else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/api.h"
#include "net/flows_json.h"
#include "testutil.h"
#include "trove/testing.h"

/* Flow 7: 100 on 1/1 (start) -> 300 on 1/2 (end, enclosing); flow 3: 250 on 2/5 (start) ->
 * 260 on 1/2 (step) -> 900 on 2/5 (end); flow 9: 5000 on 1/1 (start) alone. Stored out of
 * order. */
static const struct trove_flow rows[] = {
    {300, 7, 1, 2, 4, 2, 1, {0, 0}},  {250, 3, 2, 5, 1, 0, 0, {0, 0}},
    {100, 7, 1, 1, 4, 0, 0, {0, 0}},  {900, 3, 2, 5, 1, 2, 1, {0, 0}},
    {5000, 9, 1, 1, 6, 0, 0, {0, 0}}, {260, 3, 1, 2, 1, 1, 1, {0, 0}},
};
#define NROWS (sizeof rows / sizeof rows[0])

static char *answer(uint64_t from, uint64_t to, const uint64_t *tracks, size_t nt, size_t limit)
{
    struct trove__flows_query q = {"cap", from, to, tracks, nt, limit};
    struct trove_bytes b = {0};
    char *s;

    CHECK_EQ_INT(trove__flows_json(rows, NROWS, &q, &b), TROVE_OK);
    s = malloc(b.len + 1);
    memcpy(s, b.ptr, b.len);
    s[b.len] = 0;
    trove_bytes_free(&b);
    return s;
}

#define R7a "{\"id\":7,\"ts_ns\":100,\"pid\":1,\"tid\":1,\"name_id\":4,\"phase\":0,\"enclosing\":false}"
#define R7b "{\"id\":7,\"ts_ns\":300,\"pid\":1,\"tid\":2,\"name_id\":4,\"phase\":2,\"enclosing\":true}"
#define R3a "{\"id\":3,\"ts_ns\":250,\"pid\":2,\"tid\":5,\"name_id\":1,\"phase\":0,\"enclosing\":false}"
#define R3b "{\"id\":3,\"ts_ns\":260,\"pid\":1,\"tid\":2,\"name_id\":1,\"phase\":1,\"enclosing\":true}"
#define R3c "{\"id\":3,\"ts_ns\":900,\"pid\":2,\"tid\":5,\"name_id\":1,\"phase\":2,\"enclosing\":true}"
#define R9 "{\"id\":9,\"ts_ns\":5000,\"pid\":1,\"tid\":1,\"name_id\":6,\"phase\":0,\"enclosing\":false}"
#define HEAD(c, t) "{\"capture\":\"cap\",\"flows\":6,\"chains\":" c ",\"truncated\":" t ",\"rows\":["

static void expect(char *got, const char *want)
{
    CHECK(strcmp(got, want) == 0);
    if (strcmp(got, want))
        fprintf(stderr, "got  %s\nwant %s\n", got, want);
    free(got);
}

static void test_chains(void)
{
    const uint64_t t12 = (uint64_t)1 << 32 | 2, t11 = (uint64_t)1 << 32 | 1, t25 = (uint64_t)2 << 32 | 5;
    const uint64_t both[] = {t11, t12};

    /* everything: three chains, whole, by id then time */
    expect(answer(0, UINT64_MAX, NULL, 0, 1000),
           HEAD("3", "false") R3a "," R3b "," R3c "," R7a "," R7b "," R9 "]}");
    /* [255, 301) on 1/2: flow 3's step (260) and flow 7's end (300): both chains whole */
    expect(answer(255, 301, &t12, 1, 1000), HEAD("2", "false") R3a "," R3b "," R3c "," R7a "," R7b "]}");
    /* the same range on 1/1: no point there */
    expect(answer(255, 301, &t11, 1, 1000), HEAD("0", "false") "]}");
    /* to_ns is not in the range: 300 is left out, 260 kept */
    expect(answer(255, 300, &t12, 1, 1000), HEAD("1", "false") R3a "," R3b "," R3c "]}");
    /* on 2/5 from 900: flow 3 (its end) */
    expect(answer(900, 901, &t25, 1, 1000), HEAD("1", "false") R3a "," R3b "," R3c "]}");
    /* two tracks, a limit of one chain: the smallest id, truncated */
    expect(answer(0, UINT64_MAX, both, 2, 1), HEAD("3", "true") R3a "," R3b "," R3c "]}");
    expect(answer(0, UINT64_MAX, both, 2, 2), HEAD("3", "true") R3a "," R3b "," R3c "," R7a "," R7b "]}");
    /* nothing at all */
    {
        struct trove__flows_query q = {"cap", 0, UINT64_MAX, NULL, 0, 10};
        struct trove_bytes b = {0};
        CHECK_EQ_INT(trove__flows_json(NULL, 0, &q, &b), TROVE_OK);
        CHECK(b.len == strlen("{\"capture\":\"cap\",\"flows\":0,\"chains\":0,\"truncated\":false,\"rows\":[]}"));
        trove_bytes_free(&b);
    }
}

/* More rows than the budget: whole chains up to it, then truncated. */
static void test_budget(void)
{
    size_t n = TROVE__FLOWS_ROWS_MAX + 10;
    struct trove_flow *r = calloc(n, sizeof *r);
    struct trove__flows_query q = {"cap", 0, UINT64_MAX, NULL, 0, TROVE__FLOWS_LIMIT_MAX};
    struct trove_bytes b = {0};
    size_t got = 0;

    for (size_t i = 0; i < n; i++) { /* chains of 20 rows: 5000 chains and a half */
        r[i].ts_ns = i;
        r[i].id = 1 + i / 20;
        r[i].pid = r[i].tid = 1;
        r[i].phase = i % 20 == 0 ? 0 : 1;
    }
    CHECK_EQ_INT(trove__flows_json(r, n, &q, &b), TROVE_OK);
    CHECK_EQ_INT(trove_bytes_append(&b, "", 1), TROVE_OK);
    for (const char *p = (const char *)b.ptr; (p = strstr(p, "\"id\":")); p++)
        got++;
    CHECK_EQ_INT(got, TROVE__FLOWS_ROWS_MAX); /* 100000 is 5000 whole chains of 20 */
    CHECK(strstr((const char *)b.ptr, "\"chains\":5001,\"truncated\":true") != NULL);
    trove_bytes_free(&b);
    free(r);
}

static void test_bad(void)
{
    struct trove__flows_query q = {"cap", 0, UINT64_MAX, NULL, 0, 10};
    struct trove_bytes b = {0};

    CHECK_EQ_INT(trove_bytes_append(&b, "x", 1), TROVE_OK);
    q.limit = 0;
    CHECK_EQ_INT(trove__flows_json(rows, NROWS, &q, &b), TROVE_ERR_INVALID);
    q.limit = TROVE__FLOWS_LIMIT_MAX + 1;
    CHECK_EQ_INT(trove__flows_json(rows, NROWS, &q, &b), TROVE_ERR_INVALID);
    q.limit = 10;
    CHECK_EQ_INT(trove__flows_json(NULL, NROWS, &q, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove__flows_json(rows, NROWS, NULL, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove__flows_json(rows, NROWS, &q, NULL), TROVE_ERR_INVALID);
    q.ntracks = 1;
    CHECK_EQ_INT(trove__flows_json(rows, NROWS, &q, &b), TROVE_ERR_INVALID);
    CHECK(b.len == 1);
    trove_bytes_free(&b);
}

static void test_oom(void)
{
    struct trove__flows_query q = {"cap", 0, UINT64_MAX, NULL, 0, 10};
    struct trove_bytes b = {0};
    int rc, done = 0;

    CHECK_EQ_INT(trove_bytes_append(&b, "before", 6), TROVE_OK);
    for (uint64_t n = 1; n < 50 && !done; n++) {
        trove_testing_alloc_fail_at(n, 0);
        rc = trove__flows_json(rows, NROWS, &q, &b);
        done = trove_testing_alloc_failures() == 0;
        trove_testing_alloc_fail_at(0, 0);
        if (done) {
            CHECK_EQ_INT(rc, TROVE_OK);
        } else {
            CHECK_EQ_INT(rc, TROVE_ERR_NOMEM);
            CHECK(b.len == 6 && !memcmp(b.ptr, "before", 6));
        }
        b.len = 6;
    }
    CHECK(done);
    trove_bytes_free(&b);
}

static void test_route(void)
{
    struct trove__api_req r;
    struct trove__api_error e;

    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/dom/flows", NULL, &r, &e), 0);
    CHECK_EQ_INT(r.route, TROVE__R_FLOWS);
    CHECK(strcmp(r.name, "dom") == 0);
    CHECK_EQ_INT(r.qlimit, TROVE__FLOWS_LIMIT_DEFAULT);
    CHECK(r.from_ns == 0 && r.to_ns == UINT64_MAX && r.ntracks == 0);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/dom/flows",
                                  "from_ns=5&to_ns=9&tracks=2:5,1:1&limit=10000", &r, &e), 0);
    CHECK(r.from_ns == 5 && r.to_ns == 9 && r.ntracks == 2 && r.qlimit == 10000);
    CHECK(r.tracks[0] == ((uint64_t)1 << 32 | 1) && r.tracks[1] == ((uint64_t)2 << 32 | 5));
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/dom/flows", "limit=0", &r, &e), -1);
    CHECK_EQ_INT(e.status, 400);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/dom/flows", "limit=10001", &r, &e), -1);
    CHECK_EQ_INT(e.status, 400);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/dom/flows", "name=x", &r, &e), -1);
    CHECK_EQ_INT(e.status, 400);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/dom/flows", "from_ns=9&to_ns=5", &r, &e), -1);
    CHECK_EQ_INT(trove__api_route(TROVE__POST, "/api/captures/dom/flows", NULL, &r, &e), -1);
    CHECK_EQ_INT(e.status, 405);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_chains);
    RUN(test_budget);
    RUN(test_bad);
    RUN(test_oom);
    RUN(test_route);
    return test_done();
}
