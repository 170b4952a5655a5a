/*
 * oom_test.h: the sweep the out-of-memory tests share (test_oom.c, test_oom_store.c,
 * test_oom_profile.c). A case runs one operation with allocation N failing
 * (trove_testing_alloc_fail_at), for N = 1, 2, ... until a run in which no allocation was
 * refused, and checks every time that the operation either failed cleanly — TROVE_ERR_NOMEM
 * or -ENOMEM, its outputs as they were — or coped with the failure and produced exactly the
 * result of an unhindered run. Leaks show under ASan, where `make check` runs these too.
 *
 * Threaded code (the store's put pool) may order its allocations differently from run to
 * run; the sweep then still ends at the first run in which nothing was refused.
 */
#ifndef TROVE_OOM_TEST_H
#define TROVE_OOM_TEST_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "trove/testing.h"
#include "trove/trace.h"

/* Generous: the largest case here asks for a few thousand allocations. */
#define MAX_STEPS 200000u

static inline int is_nomem(int rc) { return rc == TROVE_ERR_NOMEM || rc == -ENOMEM; }

/*
 * One case: op runs the operation once and returns its result; it frees whatever it made
 * itself. check (may be NULL) is called after every run, with the hook off, and returns 1
 * when the outputs are as they must be after that result. Returns the number of
 * allocations the operation made when nothing failed.
 */
typedef int (*op_fn)(void *ctx);
typedef int (*check_fn)(void *ctx, int rc);

static inline uint64_t sweep(const char *what, op_fn op, check_fn check, void *ctx)
{
    uint64_t n, bad_rc = 0, bad_state = 0;
    for (n = 1; n < MAX_STEPS; n++) {
        int rc;
        uint64_t refused;
        trove_testing_alloc_fail_at(n, 0);
        rc = op(ctx);
        refused = trove_testing_alloc_failures();
        trove_testing_alloc_fail_at(0, 0);
        if (rc != TROVE_OK && !is_nomem(rc)) {
            if (bad_rc++ < 3)
                fprintf(stderr, "%s: allocation %llu failing gave %d (%s), not out of memory\n",
                        what, (unsigned long long)n, rc, trove_strerror(rc));
        }
        if (check && !check(ctx, rc)) {
            if (bad_state++ < 3)
                fprintf(stderr, "%s: allocation %llu failing (rc %d) left the wrong state\n",
                        what, (unsigned long long)n, rc);
        }
        if (refused == 0) {
            CHECK_EQ_INT(rc, TROVE_OK); /* nothing failed: it must have worked */
            break;
        }
    }
    CHECK(n < MAX_STEPS);
    CHECK_EQ_INT(bad_rc, 0);
    CHECK_EQ_INT(bad_state, 0);
    fprintf(stderr, "%-28s %6llu allocations, each made to fail once\n", what,
            (unsigned long long)(n - 1));
    return n - 1;
}

static inline int same_flows(const struct trove_flows *a, const struct trove_flows *b)
{
    return a->len == b->len && (a->len == 0 || !memcmp(a->f, b->f, a->len * sizeof *a->f));
}

#endif
