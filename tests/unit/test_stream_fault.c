/*
 * test_stream_fault.c: the fault-injecting backend (trove_backend_fault_wrap) that the
 * streaming tests run over, around a real fs backend (NOSYNC) in a mkdtemp directory: its
 * hook sees every get and fails the ones it chooses, latency holds gets back, concurrent
 * gets are counted as concurrent; and trove_backend_get_start, refused where there are no
 * asynchronous gets, else each get ending once with its result. What is asserted is counts
 * and bytes, never time. main runs the cases 20 times, the gets asynchronous on odd runs.
 */

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stream_test.h"
#include "testutil.h"
#include "trove/backend.h"
#include "trove/stream.h"
#include "trove/testing.h"

#include "stream/bufpool.h"

/* ---- the fault backend ---------------------------------------------------------------- */

static void test_fault_backend(int rep)
{
    struct objset *set = malloc(sizeof *set);
    size_t sizes[4] = {100, 2000, 30000, 9};
    struct trove_fault_stats fst;
    struct trove_bytes got = {0};
    struct trove_backend *be;
    struct trove_digest other;
    struct hook *h = malloc(sizeof *h);
    uint64_t len = 0;

    make_set(set, 100 + (uint32_t)rep, 4, sizes, NULL);
    hook_init(h, set);
    h->missing = 1;
    h->missing_for = 2;
    be = fault_over(h, 100);
    if (!be)
        goto out;
    CHECK_EQ_INT(trove_backend_fault_stats(fs, &fst), TROVE_ERR_INVALID); /* not a fault one */
    CHECK_EQ_INT(trove_backend_fault_stats(be, NULL), TROVE_ERR_INVALID);
    {
        struct trove_backend *none = be;
        CHECK_EQ_INT(trove_backend_fault_wrap(NULL, &(struct trove_fault_options){0}, &none),
                     TROVE_ERR_INVALID);
        CHECK(none == NULL);
        CHECK_EQ_INT(trove_backend_fault_wrap(fs, NULL, &none), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_backend_fault_wrap(fs, &(struct trove_fault_options){0}, NULL),
                     TROVE_ERR_INVALID);
    }
    /* Item 1 appears on its third get; the hook saw nth 0, 1, 2. */
    CHECK_EQ_INT(trove_backend_get(be, &set->d[1], &got, SIZE_MAX), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_backend_get(be, &set->d[1], &got, SIZE_MAX), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_backend_get(be, &set->d[1], &got, SIZE_MAX), TROVE_OK);
    CHECK(got.len == 2000 && matches(set, 1, 0, got.ptr, got.len));
    /* The limit passes through: refused, nothing counted as bytes. */
    CHECK_EQ_INT(trove_backend_get(be, &set->d[2], &got, 29999), TROVE_ERR_LIMIT);
    CHECK_EQ_INT(got.len, 0);
    CHECK_EQ_INT(trove_backend_get(be, &set->d[2], &got, 30000), TROVE_OK);
    CHECK_EQ_INT(got.len, 30000);
    trove_digest_of("not there", 9, &other);
    CHECK_EQ_INT(trove_backend_get(be, &other, &got, SIZE_MAX), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_backend_fault_stats(be, &fst), TROVE_OK);
    CHECK_EQ_INT(fst.gets, 6);
    CHECK_EQ_INT(fst.failed, 2);
    CHECK_EQ_INT(fst.bytes, 32000);
    CHECK_EQ_INT(fst.max_concurrent, 1);
    CHECK_EQ_INT(atomic_load(&h->gets[1]), 3);
    CHECK_EQ_INT(atomic_load(&h->gets[2]), 2);
    CHECK_EQ_INT(atomic_load(&h->strangers), 1);
    /* Everything else goes to inner. */
    CHECK_EQ_INT(trove_backend_size(be, &set->d[3], &len), TROVE_OK);
    CHECK_EQ_INT(len, 9);
    CHECK_EQ_INT(trove_backend_put(be, &other, "not there", 9, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_backend_size(fs, &other, &len), TROVE_OK);
    CHECK_EQ_INT(trove_backend_delete(be, &other), TROVE_OK);
    CHECK_EQ_INT(trove_backend_size(fs, &other, &len), TROVE_ERR_NOTFOUND);
    trove_backend_close(be); /* the wrapper only: fs still serves */
    CHECK_EQ_INT(trove_backend_size(fs, &set->d[0], &len), TROVE_OK);
out:
    trove_bytes_free(&got);
    free(h);
    free(set);
}

/* trove_backend_get_start: refused where there are no asynchronous gets; else each ends
 * once, with what trove_backend_get would have said, many in flight at once. */
struct started {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ended, rc[8];
};

struct one_get {
    struct started *st;
    int i;
    struct trove_bytes b;
};

static void get_ended(void *ctx, int rc)
{
    struct one_get *g = ctx;
    pthread_mutex_lock(&g->st->mu);
    g->st->rc[g->i] = rc;
    g->st->ended++;
    pthread_cond_signal(&g->st->cv);
    pthread_mutex_unlock(&g->st->mu);
}

static void test_get_start(int rep)
{
    struct objset *set = malloc(sizeof *set);
    size_t sizes[4] = {100, 2000, 30000, 9};
    struct hook *h = malloc(sizeof *h);
    struct started st = {.ended = 0};
    struct one_get g[8];
    struct trove_digest other;
    struct trove_backend *be;
    struct trove_fault_stats fst;
    size_t limit[8] = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, 29999, SIZE_MAX, SIZE_MAX, 8};
    const struct trove_digest *want[8];
    int nstarted = 0;

    make_set(set, 300 + (uint32_t)rep, 4, sizes, NULL);
    hook_init(h, set);
    h->missing = 1;
    h->missing_for = 1;
    trove_digest_of("not there", 9, &other);
    pthread_mutex_init(&st.mu, NULL);
    pthread_cond_init(&st.cv, NULL);
    memset(g, 0, sizeof g);
    /* 0..3 the set (1 missing on its first get), 4 over its limit, 5 a stranger, 6 item 1
     * again (found now), 7 item 3 over its limit. */
    for (int i = 0; i < 8; i++)
        want[i] = i < 4 ? &set->d[i] : i == 4 ? &set->d[2] : i == 5 ? &other
                                                : i == 6 ? &set->d[1] : &set->d[3];
    CHECK_EQ_INT(trove_backend_get_start(fs, &set->d[0], &g[0].b, SIZE_MAX, get_ended, &g[0]),
                 TROVE_ERR_INVALID);
    be = fault_over(h, 3000);
    if (!be)
        goto out;
    CHECK_EQ_INT(trove_backend_get_start(be, &set->d[0], &g[0].b, SIZE_MAX, NULL, NULL),
                 TROVE_ERR_INVALID);
    if (!async_mode) {
        CHECK_EQ_INT(trove_backend_get_start(be, &set->d[0], &g[0].b, SIZE_MAX, get_ended, &g[0]),
                     TROVE_ERR_INVALID);
        trove_backend_close(be);
        goto out;
    }
    for (int i = 0; i < 8; i++) {
        g[i].st = &st;
        g[i].i = i;
        if (i == 6) { /* after item 1's first get has failed */
            pthread_mutex_lock(&st.mu);
            while (st.rc[1] == 0 && st.ended < nstarted)
                pthread_cond_wait(&st.cv, &st.mu);
            pthread_mutex_unlock(&st.mu);
        }
        CHECK_EQ_INT(trove_backend_get_start(be, want[i], &g[i].b, limit[i], get_ended, &g[i]),
                     TROVE_OK);
        nstarted++;
    }
    pthread_mutex_lock(&st.mu);
    while (st.ended < nstarted)
        pthread_cond_wait(&st.cv, &st.mu);
    pthread_mutex_unlock(&st.mu);
    for (int i = 0; i < 4; i++)
        if (i != 1) {
            CHECK_EQ_INT(st.rc[i], TROVE_OK);
            CHECK(g[i].b.len == sizes[i] && matches(set, (size_t)i, 0, g[i].b.ptr, g[i].b.len));
        }
    CHECK_EQ_INT(st.rc[1], TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(g[1].b.len, 0);
    CHECK_EQ_INT(st.rc[4], TROVE_ERR_LIMIT);
    CHECK_EQ_INT(g[4].b.len, 0);
    CHECK_EQ_INT(st.rc[5], TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(st.rc[6], TROVE_OK);
    CHECK(g[6].b.len == 2000 && matches(set, 1, 0, g[6].b.ptr, g[6].b.len));
    CHECK_EQ_INT(st.rc[7], TROVE_ERR_LIMIT);
    CHECK_EQ_INT(trove_backend_fault_stats(be, &fst), TROVE_OK);
    CHECK_EQ_INT(fst.gets, 8);
    CHECK_EQ_INT(fst.failed, 1);
    CHECK_EQ_INT(fst.bytes, 100 + 30000 + 9 + 2000); /* item 1 once, the second time */
    CHECK(fst.max_concurrent >= 1 && fst.max_concurrent <= 8);
    trove_backend_close(be);
out:
    for (int i = 0; i < 8; i++)
        trove_bytes_free(&g[i].b);
    pthread_cond_destroy(&st.cv);
    pthread_mutex_destroy(&st.mu);
    free(h);
    free(set);
}

/* Concurrent gets are counted as concurrent, with a latency that makes them overlap. */
struct conc_arg {
    struct trove_backend *be;
    const struct trove_digest *d;
    int rc;
};

static void *conc_get(void *arg)
{
    struct conc_arg *a = arg;
    struct trove_bytes b = {0};
    a->rc = trove_backend_get(a->be, a->d, &b, SIZE_MAX);
    trove_bytes_free(&b);
    return NULL;
}

static void test_fault_concurrent(int rep)
{
    struct objset *set = malloc(sizeof *set);
    size_t sizes[1] = {64};
    struct hook *h = malloc(sizeof *h);
    struct trove_backend *be;
    struct trove_fault_stats fst;
    struct conc_arg a[4];
    pthread_t t[4];

    make_set(set, 200 + (uint32_t)rep, 1, sizes, NULL);
    hook_init(h, set);
    be = fault_over(h, 2000);
    for (int i = 0; be && i < 4; i++) {
        a[i] = (struct conc_arg){be, &set->d[0], -1};
        CHECK_EQ_INT(pthread_create(&t[i], NULL, conc_get, &a[i]), 0);
    }
    for (int i = 0; be && i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_INT(a[i].rc, TROVE_OK);
    }
    if (be) {
        CHECK_EQ_INT(trove_backend_fault_stats(be, &fst), TROVE_OK);
        CHECK_EQ_INT(fst.gets, 4);
        CHECK(fst.max_concurrent >= 1 && fst.max_concurrent <= 4);
        CHECK_EQ_INT(atomic_load(&h->gets[0]), 4);
    }
    trove_backend_close(be);
    free(h);
    free(set);
}

int main(int argc, char **argv)
{
    char dir[128];

    test_init(argc, argv);
    snprintf(root, sizeof root, "/tmp/trove_stream_fault_XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/store", root);
    if (trove_backend_fs_open_flags(dir, TROVE_BACKEND_NOSYNC, &fs) != TROVE_OK) {
        fprintf(stderr, "cannot open the fs backend %s\n", dir);
        test_rm_rf(root);
        return 1;
    }
    for (int rep = 0; rep < REPS; rep++) {
        async_mode = rep & 1;
        RUN_WITH(test_fault_backend, rep);
        RUN_WITH(test_get_start, rep);
        RUN_WITH(test_fault_concurrent, rep);
    }
    trove_backend_close(fs);
    test_rm_rf(root);
    return test_done();
}
