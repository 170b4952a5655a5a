/*
 * test_flows_cache.c: the service's flows cache (src/net/flows_cache.c). The second question
 * about a capture's flows is answered from the cache (a hit, the same rows); a capture written
 * again with other flows, or without them, is read again, never answered with the old rows;
 * a fifth capture takes the place of the one asked about longest ago.
 */
#include "capture_test.h"
#include "net/flows_cache.h"

static void flows_of(const struct trove_events *ev, uint64_t first_id, struct trove_flows *f)
{
    f->len = 0;
    for (uint32_t i = 0; i < 60; i++) {
        const struct trove_event *e = &ev->ev[i * 7];
        struct trove_flow r = {e->start_ns, first_id + i / 2, e->pid, e->tid, i % 3,
                               (uint8_t)(i % 2 ? TROVE_FLOW_END : TROVE_FLOW_START),
                               TROVE_FLOW_ENCLOSING, {0, 0}};
        CHECK_EQ_INT(trove_flows_push(f, &r), TROVE_OK);
    }
}

static int same(const struct trove_flows *a, const struct trove_flows *b)
{
    return a->len == b->len && (a->len == 0 || !memcmp(a->f, b->f, a->len * sizeof *a->f));
}

static void test_cache(void)
{
    struct trove_store *s = open_store(0);
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_flows f1 = {0}, f2 = {0}, got = {0};
    struct trove__flows_cache c;
    struct trove_capture_info info;
    struct trove_diag diag = {0};
    char name[16];

    if (!s)
        return;
    trove__flows_cache_init(&c);
    gen_capture(3000, 21, &ev, &names);
    flows_of(&ev, 1, &f1);
    flows_of(&ev, 100, &f2);
    CHECK_EQ_INT(trove_capture_write_trace(s, "a", ev.ev, ev.len, names, f1.f, f1.len, NULL,
                                           &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(trove__flows_cached(&c, s, "a", &got, &diag), TROVE_OK);
    CHECK(same(&got, &f1) && c.misses == 1 && c.hits == 0);
    got.len = 0;
    CHECK_EQ_INT(trove__flows_cached(&c, s, "a", &got, &diag), TROVE_OK);
    CHECK(same(&got, &f1) && c.misses == 1 && c.hits == 1);
    /* written again with other flows: read again */
    CHECK_EQ_INT(trove_capture_write_trace(s, "a", ev.ev, ev.len, names, f2.f, f2.len, NULL,
                                           &info, &diag),
                 TROVE_OK);
    got.len = 0;
    CHECK_EQ_INT(trove__flows_cached(&c, s, "a", &got, &diag), TROVE_OK);
    CHECK(same(&got, &f2) && c.misses == 2 && c.hits == 1);
    /* and without flows */
    CHECK_EQ_INT(trove_capture_write(s, "a", ev.ev, ev.len, names, NULL, &info, &diag), TROVE_OK);
    got.len = 0;
    CHECK_EQ_INT(trove__flows_cached(&c, s, "a", &got, &diag), TROVE_OK);
    CHECK(got.len == 0 && c.misses == 3);
    /* four more captures: the first asked about ("a") is let go, the rest stay */
    for (int k = 0; k < 4; k++) {
        snprintf(name, sizeof name, "b%d", k);
        CHECK_EQ_INT(trove_capture_write_trace(s, name, ev.ev, ev.len, names, f1.f, f1.len, NULL,
                                               &info, &diag),
                     TROVE_OK);
        got.len = 0;
        CHECK_EQ_INT(trove__flows_cached(&c, s, name, &got, &diag), TROVE_OK);
        CHECK(same(&got, &f1));
    }
    CHECK_EQ_INT(c.misses, 7);
    got.len = 0;
    CHECK_EQ_INT(trove__flows_cached(&c, s, "b0", &got, &diag), TROVE_OK);
    CHECK(same(&got, &f1) && c.hits == 2);
    got.len = 0;
    CHECK_EQ_INT(trove__flows_cached(&c, s, "a", &got, &diag), TROVE_OK);
    CHECK(got.len == 0 && c.misses == 8);
    /* an unknown capture: the read's error, nothing appended */
    got.len = 0;
    CHECK_EQ_INT(trove__flows_cached(&c, s, "nosuch", &got, &diag), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(got.len, 0);
    trove__flows_cache_free(&c);
    trove_flows_free(&f1);
    trove_flows_free(&f2);
    trove_flows_free(&got);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

int main(int argc, char **argv)
{
    struct trove_store *s = NULL;
    int rc;

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
    RUN(test_cache);
    rc = test_done();
    test_rm_rf(root);
    return rc;
}
