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
 * On success the output is checked: sorted, stats consistent with the events, every name
 * id named, instants zero-length, and, for small outputs, depth against a brute-force count.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/chrome_json.h"
#include "trove/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                          \
    do {                                                                                  \
        if (!(c)) {                                                                       \
            fprintf(stderr, "fuzz_chrome: check failed at line %d: %s\n", __LINE__, #c);  \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

static const struct trove_event sentinel = {7, 3, 1, 1, TROVE_KIND_ZONE, 0, 0, 0, 0};

struct run {
    int rc;
    struct trove_events ev;
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
}

static void run_free(struct run *r)
{
    trove_events_free(&r->ev);
    trove_names_free(r->names);
}


static int same_events(const struct run *a, const struct run *b)
{
    return a->ev.len == b->ev.len && !memcmp(a->ev.ev, b->ev.ev, a->ev.len * sizeof *a->ev.ev);
}

static void check_output(const struct run *r)
{
    const struct trove_event *ev = r->ev.ev + 1;
    size_t n = r->ev.len - 1;

    if (r->rc != TROVE_OK) {
        CHECK(r->diag.code == r->rc);
        CHECK(r->ev.len == 1 && !memcmp(r->ev.ev, &sentinel, sizeof sentinel));
        CHECK(trove_names_count(r->names) == 1);
        return;
    }
    CHECK(!memcmp(r->ev.ev, &sentinel, sizeof sentinel));
    CHECK(n == r->st.complete + r->st.begin_end_pairs + r->st.instants);
    CHECK(r->st.names <= n && r->st.threads <= n);
    /* every event object is counted once; a pair is two objects */
    CHECK(r->st.complete + 2 * r->st.begin_end_pairs + r->st.instants + r->st.metadata +
              r->st.unmatched_begin + r->st.unmatched_end + r->st.skipped ==
          r->st.trace_events);
    for (size_t i = 0; i < n; i++) {
        const struct trove_event *e = &ev[i];
        CHECK(e->kind <= TROVE_KIND_ASYNC_INSTANT && e->pad == 0);
        CHECK(e->kind == TROVE_KIND_ZONE || e->dur_ns == 0);
        CHECK(e->kind == TROVE_KIND_INSTANT || e->extra == 0);
        CHECK(e->extra <= TROVE_SCOPE_GLOBAL);
        CHECK(e->name_id < r->st.names);
        CHECK(trove_names_get(r->names, TROVE_NAME_EVENT, e->name_id, 0, NULL) != NULL);
        CHECK(e->start_ns + e->dur_ns >= e->start_ns);
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
    /* depth by brute force: zones on the thread that contain the start and sort before */
    if (n <= 256) {
        for (size_t i = 0; i < n; i++) {
            size_t lo = 0, ties = 0;
            for (size_t j = 0; j < n; j++) {
                const struct trove_event *a = &ev[j], *b = &ev[i];
                if (j == i || a->pid != b->pid || a->tid != b->tid || a->dur_ns == 0 ||
                    a->start_ns > b->start_ns || a->start_ns + a->dur_ns <= b->start_ns)
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_chrome_options loose = {.strict = 0}, strict = {.strict = 1};
    struct run a, b, c;

    run_init(&a);
    a.rc = trove_chrome_import_mem(data, size, &loose, &a.ev, a.names, &a.st, &a.diag);
    check_output(&a);

    if (size > 0) {
        FILE *f = fmemopen((void *)data, size, "rb");
        CHECK(f != NULL);
        run_init(&b);
        b.rc = trove__chrome_import_chunked(f, 1 + size % 7, &loose, &b.ev, b.names, &b.st,
                                            &b.diag);
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
    c.rc = trove_chrome_import_mem(data, size, &strict, &c.ev, c.names, &c.st, &c.diag);
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
    run_free(&a);
    return 0;
}
