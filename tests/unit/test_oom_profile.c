/*
 * test_oom_profile.c: profiles survive running out of memory at any allocation (the sweep of
 * oom_test.h): a profile's samples frames encoded and decoded and its tables written and
 * read; the profile model (strings, frames, stacks, samples and the top functions; a failed
 * add leaves the profile as it was); and a sample set made into a profile.
 */

#include "testutil.h"
#include "oom_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trove/bundle.h"
#include "trove/capture.h"
#include "trove/chrome.h"
#include "trove/gen.h"
#include "trove/profile.h"
#include "trove/recipe.h"
#include "trove/sample.h"
#include "trove/tables.h"
#include "trove/testing.h"
#include "trove/trace.h"
#include "trove/volume.h"
#include "trove/wire.h"

/* ---- a profile: its samples frames and its tables ---- */

static struct trove_profile *oom_prof;
static struct trove_bytes prof_frames, prof_tab[TROVE_TABLE_COUNT_];
static const int prof_tables[4] = {TROVE_TABLE_SAMPLES, TROVE_TABLE_FRAMES, TROVE_TABLE_STACKS,
                                   TROVE_TABLE_SWITCHES};

static void make_oom_profile(void)
{
    uint32_t mod, file, stack = 0;
    CHECK_EQ_INT(trove_profile_new(&oom_prof), TROVE_OK);
    CHECK_EQ_INT(trove_profile_string(oom_prof, "/bin/x", 6, &mod), TROVE_OK);
    CHECK_EQ_INT(trove_profile_string(oom_prof, "x.c", 3, &file), TROVE_OK);
    for (uint32_t i = 0; i < 300; i++) {
        char fn[16];
        struct trove_profile_frame f = {mod, 0, file, i, 16 * (uint64_t)i, i % 2};
        struct trove_profile_sample sm = {1000 * (uint64_t)i, 1, 2 + i % 3, 0};
        struct trove_profile_switch sw = {1000 * (uint64_t)i + 1, 1, 2, i % 2};
        uint32_t id;
        int n = snprintf(fn, sizeof fn, "f%u", i);
        CHECK_EQ_INT(trove_profile_string(oom_prof, fn, (size_t)n, &f.function), TROVE_OK);
        CHECK_EQ_INT(trove_profile_frame(oom_prof, &f, &id), TROVE_OK);
        CHECK_EQ_INT(trove_profile_stack(oom_prof, stack % 50, id, &stack), TROVE_OK);
        sm.stack = stack;
        CHECK_EQ_INT(trove_profile_sample(oom_prof, &sm), TROVE_OK);
        CHECK_EQ_INT(trove_profile_switch(oom_prof, &sw), TROVE_OK);
    }
    CHECK_EQ_INT(trove_profile_encode(oom_prof, NULL, &prof_frames), TROVE_OK);
    for (int k = 0; k < 4; k++)
        CHECK_EQ_INT(trove_tables_write_profile(prof_tables[k], oom_prof, NULL,
                                                &prof_tab[prof_tables[k]], NULL),
                     TROVE_OK);
}

static int same_counts(const struct trove_profile *a, const struct trove_profile *b)
{
    struct trove_profile_counts x, y;
    trove_profile_get_counts(a, &x);
    trove_profile_get_counts(b, &y);
    return !memcmp(&x, &y, sizeof x);
}

static int op_profile_encode(void *p)
{
    struct trove_bytes out = {0};
    int rc = trove_profile_encode(oom_prof, NULL, &out);
    (void)p;
    if (rc == TROVE_OK)
        rc = out.len == prof_frames.len && !memcmp(out.ptr, prof_frames.ptr, out.len)
                 ? TROVE_OK
                 : TROVE_ERR_MISMATCH;
    trove_bytes_free(&out);
    return rc;
}

static int op_profile_decode(void *p)
{
    struct trove_profile *q = NULL;
    size_t at = 0;
    int rc = trove_profile_new(&q);
    (void)p;
    while (rc == TROVE_OK && at < prof_frames.len) {
        size_t len = 0;
        struct trove_profile_counts before, after;
        trove_profile_get_counts(q, &before);
        rc = trove_profile_decode(q, prof_frames.ptr + at, prof_frames.len - at, &len, NULL);
        trove_profile_get_counts(q, &after);
        if (rc != TROVE_OK && memcmp(&before, &after, sizeof before))
            rc = TROVE_ERR_MISMATCH; /* a failed frame must leave the profile as it was */
        at += len;
    }
    if (rc == TROVE_OK && !same_counts(q, oom_prof))
        rc = TROVE_ERR_MISMATCH;
    trove_profile_free(q);
    return rc;
}

static int op_profile_tables_write(void *p)
{
    int rc = TROVE_OK;
    (void)p;
    for (int k = 0; rc == TROVE_OK && k < 4; k++) {
        struct trove_bytes out = {0};
        int t = prof_tables[k];
        rc = trove_tables_write_profile(t, oom_prof, NULL, &out, NULL);
        if (rc == TROVE_OK && (out.len != prof_tab[t].len || memcmp(out.ptr, prof_tab[t].ptr, out.len)))
            rc = TROVE_ERR_MISMATCH;
        trove_bytes_free(&out);
    }
    return rc;
}

static int op_profile_tables_read(void *p)
{
    struct trove_tables_profile_in in;
    struct trove_profile *q = NULL;
    int rc = trove_profile_new(&q);
    (void)p;
    memset(&in, 0, sizeof in);
    for (int k = 0; k < 4; k++) {
        in.buf[prof_tables[k]] = prof_tab[prof_tables[k]].ptr;
        in.len[prof_tables[k]] = prof_tab[prof_tables[k]].len;
    }
    if (rc == TROVE_OK)
        rc = trove_tables_read_profile(&in, q, NULL);
    if (rc == TROVE_OK && !same_counts(q, oom_prof))
        rc = TROVE_ERR_MISMATCH;
    trove_profile_free(q);
    return rc;
}

static void test_profile(void)
{
    make_oom_profile();
    sweep("profile samples frames", op_profile_encode, NULL, NULL);
    sweep("profile frames decode", op_profile_decode, NULL, NULL);
    sweep("profile tables write", op_profile_tables_write, NULL, NULL);
    sweep("profile tables read", op_profile_tables_read, NULL, NULL);
    trove_profile_free(oom_prof);
    trove_bytes_free(&prof_frames);
    for (int k = 0; k < 4; k++)
        trove_bytes_free(&prof_tab[prof_tables[k]]);
}

/* ---- the profile model ----------------------------------------------------------------- */

/* A profile of 40 functions in 3 modules, 300 samples on paths through them. */
static int fill_profile(struct trove_profile *p)
{
    uint64_t seed = 7;
    int rc = TROVE_OK;
    for (int i = 0; i < 300 && rc == TROVE_OK; i++) {
        uint32_t frames[8], st = 0;
        size_t n = 1 + (size_t)(test_rand(&seed) % 8);
        for (size_t k = 0; k < n && rc == TROVE_OK; k++) {
            char fn[32], mod[32];
            uint64_t r = test_rand(&seed) % 40;
            struct trove_profile_frame f = {0, 0, 0, (uint32_t)r, r * 16, 0};
            snprintf(fn, sizeof fn, "function_%u", (unsigned)r);
            snprintf(mod, sizeof mod, "/lib/m%u.so", (unsigned)(r % 3));
            if ((rc = trove_profile_string(p, mod, strlen(mod), &f.module)) == TROVE_OK &&
                (rc = trove_profile_string(p, fn, strlen(fn), &f.function)) == TROVE_OK)
                rc = trove_profile_frame(p, &f, &frames[k]);
        }
        if (rc == TROVE_OK && (rc = trove_profile_stack_path(p, frames, n, &st)) == TROVE_OK) {
            struct trove_profile_sample s = {(uint64_t)i, 1, 2, st};
            rc = trove_profile_sample(p, &s);
        }
    }
    return rc;
}

struct profile_ctx {
    size_t frames, stacks, samples, funcs; /* of a run that did not fail */
    uint64_t top_self;
    struct trove_profile *kept; /* for the unchanged-on-failure case */
    size_t k_strings, k_frames, k_stacks, k_samples;
    size_t done; /* op_profile_add: items added whole, and the stage it stopped at */
    int stage;
};

static int op_profile(void *p)
{
    struct profile_ctx *c = p;
    struct trove_profile *pr = NULL;
    struct trove_profile_func *top = NULL;
    size_t n = 0;
    int rc = trove_profile_new(&pr);
    if (rc == TROVE_OK)
        rc = fill_profile(pr);
    if (rc == TROVE_OK)
        rc = trove_profile_top(pr, 0, UINT64_MAX, &top, &n, NULL);
    if (rc == TROVE_OK) {
        c->frames = trove_profile_frame_count(pr);
        c->stacks = trove_profile_stack_count(pr);
        c->samples = trove_profile_sample_count(pr);
        c->funcs = n;
        c->top_self = n ? top[0].self : 0;
    }
    free(top);
    trove_profile_free(pr);
    return rc;
}

static int check_profile(void *p, int rc)
{
    struct profile_ctx *c = p;
    if (rc != TROVE_OK)
        return 1; /* the op freed what it made: a leak would show under ASan */
    return c->frames == 40 && c->samples == 300 && c->funcs == 40 && c->top_self > 0;
}

/* 200 more strings, frames, stacks and samples into a profile that holds some: each add
 * all or nothing, so the counts say exactly how far the run got. */
static int op_profile_add(void *p)
{
    struct profile_ctx *c = p;
    c->done = 0;
    c->stage = 0;
    for (uint32_t j = 0; j < 200; j++) {
        char name[32];
        struct trove_profile_frame f = {0, 0, 0, 1, 0x100000 + j, 0};
        struct trove_profile_sample s = {j, 1, 1, 0};
        uint32_t id;
        int rc;
        snprintf(name, sizeof name, "added_%u", (unsigned)j);
        c->stage = 0;
        if ((rc = trove_profile_string(c->kept, name, strlen(name), &f.function)) != TROVE_OK)
            return rc;
        c->stage = 1;
        if ((rc = trove_profile_frame(c->kept, &f, &id)) != TROVE_OK)
            return rc;
        c->stage = 2;
        if ((rc = trove_profile_stack(c->kept, TROVE_PROFILE_ROOT, id, &s.stack)) != TROVE_OK)
            return rc;
        c->stage = 3;
        if ((rc = trove_profile_sample(c->kept, &s)) != TROVE_OK)
            return rc;
        c->done++;
    }
    return TROVE_OK;
}

static int check_profile_add(void *p, int rc)
{
    struct profile_ctx *c = p;
    size_t d = c->done, g = rc == TROVE_OK ? 0 : (size_t)c->stage;
    int ok = trove_profile_string_count(c->kept) == c->k_strings + d + (g > 0) &&
             trove_profile_frame_count(c->kept) == c->k_frames + d + (g > 1) &&
             trove_profile_stack_count(c->kept) == c->k_stacks + d + (g > 2) &&
             trove_profile_sample_count(c->kept) == c->k_samples + d;
    /* Back to the state before, for the next run. */
    trove_profile_free(c->kept);
    c->kept = NULL;
    if (trove_profile_new(&c->kept) != TROVE_OK || fill_profile(c->kept) != TROVE_OK)
        return 0;
    return ok;
}

struct sprof_ctx {
    struct trove_sample_set *set;
    size_t frames, stacks, samples;
};

static int op_sample_profile(void *p)
{
    struct sprof_ctx *c = p;
    struct trove_symbolizer *sym = NULL;
    struct trove_profile *pr = NULL;
    int rc = trove_symbolizer_new(&sym);
    if (rc == TROVE_OK)
        rc = trove_profile_new(&pr);
    if (rc == TROVE_OK)
        rc = trove_sample_profile(sym, c->set, pr);
    if (rc == TROVE_OK) {
        c->frames = trove_profile_frame_count(pr);
        c->stacks = trove_profile_stack_count(pr);
        c->samples = trove_profile_sample_count(pr);
    }
    trove_profile_free(pr);
    trove_symbolizer_free(sym);
    return rc;
}

static int check_sample_profile(void *p, int rc)
{
    struct sprof_ctx *c = p;
    if (rc != TROVE_OK)
        return 1;
    return c->frames == 12 && c->stacks == 12 && c->samples == 10;
}

static void test_profiles(void)
{
    struct profile_ctx c;
    struct sprof_ctx sc;
    uint32_t m1, m2;
    memset(&c, 0, sizeof c);
    sweep("profile model and top", op_profile, check_profile, &c);
    CHECK(trove_profile_new(&c.kept) == TROVE_OK && fill_profile(c.kept) == TROVE_OK);
    c.k_strings = trove_profile_string_count(c.kept);
    c.k_frames = trove_profile_frame_count(c.kept);
    c.k_stacks = trove_profile_stack_count(c.kept);
    c.k_samples = trove_profile_sample_count(c.kept);
    sweep("profile add, unchanged", op_profile_add, check_profile_add, &c);
    trove_profile_free(c.kept);

    /* Modules that are not there: symbolized as module + offset, without libdw's memory. */
    memset(&sc, 0, sizeof sc);
    CHECK(trove_sample_set_new(&sc.set) == TROVE_OK);
    CHECK(trove_sample_set_module(sc.set, "/nonexistent/a.so", NULL, 0, &m1) == TROVE_OK);
    CHECK(trove_sample_set_module(sc.set, "/nonexistent/b.so", NULL, 0, &m2) == TROVE_OK);
    for (uint32_t i = 0; i < 10; i++) {
        struct trove_sample_frame f[3] = {{m1, 0x100 + i}, {m2, 0x2001},
                                          {TROVE_SAMPLE_NO_MODULE, 0x77}};
        CHECK(trove_sample_set_add(sc.set, 100 - i, 1, 1, f, 3) == TROVE_OK);
    }
    sweep("sample set into a profile", op_sample_profile, check_sample_profile, &sc);
    trove_sample_set_free(sc.set);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_profile);
    RUN(test_profiles);
    return test_done();
}
