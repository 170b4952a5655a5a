/*
 * test_api_route.c: the service's router (src/net/api.c) for what a trace carries besides
 * names: an event's attributes (/attrs?event=I), a capture's frames (/frames), the events
 * whose name or attribute values hold a text (/events?text=), the live socket's attrs=1; and
 * a query's '+', which a browser's URLSearchParams writes for a space.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "net/api.h"
#include "testutil.h"

static void expect_bad(const char *path, const char *query, unsigned status, const char *needle)
{
    struct trove__api_req r;
    struct trove__api_error e;
    CHECK_EQ_INT(trove__api_route(TROVE__GET, path, query, &r, &e), -1);
    CHECK_EQ_INT(e.status, status);
    if (needle && !strstr(e.msg, needle)) {
        CHECK(!"the error says why");
        fprintf(stderr, "%s?%s: %s\n", path, query ? query : "", e.msg);
    }
}

static void test_attrs_frames(void)
{
    struct trove__api_req r;
    struct trove__api_error e;

    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/attrs", "event=18446744073709551615", &r, &e), 0);
    CHECK(r.route == TROVE__R_ATTRS && r.index == UINT64_MAX && !strcmp(r.name, "c"));
    expect_bad("/api/captures/c/attrs", NULL, 400, "needs event=INDEX");
    expect_bad("/api/captures/c/attrs", "event=x", 400, "not an event's index");
    expect_bad("/api/captures/c/attrs", "event=1&limit=3", 400, "unknown parameter");
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/frames", NULL, &r, &e), 0);
    CHECK(r.route == TROVE__R_FRAMES && r.qlimit == 20000 && r.from_ns == 0);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/frames", "from_ns=5&to_ns=9&limit=100000", &r, &e), 0);
    CHECK(r.qlimit == 100000 && r.from_ns == 5 && r.to_ns == 9);
    expect_bad("/api/captures/c/frames", "limit=0", 400, "1 to 100000");
    expect_bad("/api/captures/c/frames", "limit=100001", 400, NULL);
    expect_bad("/api/captures/c/frames", "event=1", 400, "unknown parameter");
    CHECK_EQ_INT(trove__api_route(TROVE__POST, "/api/captures/c/frames", NULL, &r, &e), -1);
    CHECK_EQ_INT(e.status, 405);
}

static void test_text(void)
{
    struct trove__api_req r;
    struct trove__api_error e;

    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/events", "text=over+budget%21&limit=5", &r, &e), 0);
    CHECK(r.route == TROVE__R_EVENTS && r.has_text && !strcmp(r.text, "over budget!") && !r.has_event);
    /* '+' is a space in every query value; %2B is a '+' */
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/captures/c/events", "name=a+b%2Bc", &r, &e), 0);
    CHECK(!strcmp(r.event, "a b+c"));
    /* but a token's '+' is its own: tokens are base64 */
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/login", "token=ab+c/d=", &r, &e), 0);
    CHECK(!strcmp(r.token, "ab+c/d="));
    expect_bad("/api/captures/c/events", "text=a&name=b", 400, "one of name=");
    expect_bad("/api/captures/c/events", "text=a&ids=1", 400, "one of name=");
    expect_bad("/api/captures/c/events", "text=a&match=1", 400, "no match=1");
    expect_bad("/api/captures/c/events", "text=", 400, "empty");
    expect_bad("/api/captures/c/events", "text=a&text=b", 400, "twice");
    expect_bad("/api/captures/c/stats", "text=a", 400, "unknown parameter");
}

static void test_live_attrs(void)
{
    struct trove__api_req r;
    struct trove__api_error e;

    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/live", "capture=c&attrs=1", &r, &e), 0);
    CHECK(r.route == TROVE__R_LIVE && r.attrs == 1);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/live", "capture=c", &r, &e), 0);
    CHECK(r.attrs == 0);
    CHECK_EQ_INT(trove__api_route(TROVE__GET, "/api/live", "capture=c&attrs=false", &r, &e), 0);
    CHECK(r.attrs == 0);
    expect_bad("/api/live", "capture=c&attrs=2", 400, "attrs=2 is not 0 or 1");
    expect_bad("/api/replay", "capture=c&attrs=1", 400, "unknown parameter");
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_attrs_frames);
    RUN(test_text);
    RUN(test_live_attrs);
    return test_done();
}
