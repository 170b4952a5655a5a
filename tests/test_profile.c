/*
 * test_profile.c: the profile model (trove/profile.h): strings, frames and stacks each
 * deduplicated, the trie's parent-before-child order, samples, and the top functions —
 * self against total, recursion counted once a sample, the time range, and an order that
 * does not depend on the order rows were added in.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/profile.h"

static uint32_t S(struct trove_profile *p, const char *s)
{
    uint32_t id = UINT32_MAX;
    CHECK_EQ_INT(trove_profile_string(p, s, strlen(s), &id), TROVE_OK);
    return id;
}

static uint32_t F(struct trove_profile *p, const char *module, const char *fn, uint64_t addr,
                  uint32_t depth)
{
    struct trove_profile_frame f = {S(p, module), S(p, fn), S(p, "x.c"), 7, addr, depth};
    uint32_t id = UINT32_MAX;
    CHECK_EQ_INT(trove_profile_frame(p, &f, &id), TROVE_OK);
    return id;
}

static void test_strings(void)
{
    struct trove_profile *p = NULL;
    char big[TROVE_PROFILE_STRING_MAX + 2];
    uint32_t a, b, c, id = 99;
    size_t len = 9;
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    CHECK_EQ_INT(trove_profile_string_count(p), 1);
    CHECK(!strcmp(trove_profile_string_get(p, 0, &len), "") && len == 0);
    a = S(p, "alpha");
    b = S(p, "beta");
    c = S(p, "alpha");
    CHECK(a != 0 && a != b && a == c);
    CHECK_EQ_INT(S(p, ""), 0);
    CHECK(!strcmp(trove_profile_string_get(p, b, &len), "beta") && len == 4);
    CHECK(trove_profile_string_get(p, 1000, NULL) == NULL);
    CHECK_EQ_INT(trove_profile_string(p, "a\0b", 3, &id), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_profile_string(p, NULL, 1, &id), TROVE_ERR_INVALID);
    memset(big, 'x', sizeof big);
    CHECK_EQ_INT(trove_profile_string(p, big, TROVE_PROFILE_STRING_MAX + 1, &id), TROVE_ERR_LIMIT);
    CHECK_EQ_INT(trove_profile_string(p, big, TROVE_PROFILE_STRING_MAX, &id), TROVE_OK);
    CHECK_EQ_INT(id, 3);
    CHECK_EQ_INT(trove_profile_string_count(p), 4);
    /* Many strings: the index grows and every one is still found once. */
    for (int i = 0; i < 20000; i++) {
        char s[32];
        snprintf(s, sizeof s, "fn_%d", i);
        CHECK_EQ_INT(S(p, s), 4 + i);
    }
    for (int i = 0; i < 20000; i += 997) {
        char s[32];
        snprintf(s, sizeof s, "fn_%d", i);
        CHECK_EQ_INT(S(p, s), 4 + i);
    }
    trove_profile_free(p);
}

static void test_frames_and_stacks(void)
{
    struct trove_profile *p = NULL;
    struct trove_profile_frame bad = {99, 0, 0, 0, 0, 0};
    struct trove_profile_sample smp = {10, 1, 2, 0};
    uint32_t f0, f1, f2, f0b, f1d, path[3], s3, s3b, s2, id;
    const struct trove_profile_stack *st;
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    f0 = F(p, "/bin/a", "leaf", 0x100, 0);
    f1 = F(p, "/bin/a", "mid", 0x200, 0);
    f2 = F(p, "/bin/a", "main", 0x300, 0);
    CHECK(f0 == 0 && f1 == 1 && f2 == 2);
    /* The same module, address and depth is the same frame, whatever else it says. */
    f0b = F(p, "/bin/a", "another name", 0x100, 0);
    CHECK_EQ_INT(f0b, f0);
    CHECK(!strcmp(trove_profile_string_get(p, trove_profile_frame_get(p, f0)->function, NULL),
                  "leaf"));
    f1d = F(p, "/bin/a", "inlined", 0x200, 1); /* another inline level of one address */
    CHECK(f1d != f1);
    CHECK(F(p, "/lib/b.so", "leaf", 0x100, 0) != f0); /* another module */
    CHECK_EQ_INT(trove_profile_frame_count(p), 5);
    CHECK_EQ_INT(trove_profile_frame(p, &bad, &id), TROVE_ERR_INVALID);
    CHECK(trove_profile_frame_get(p, 5) == NULL);

    /* leaf first: main <- mid <- leaf */
    path[0] = f0;
    path[1] = f1;
    path[2] = f2;
    CHECK_EQ_INT(trove_profile_stack_path(p, path, 3, &s3), TROVE_OK);
    CHECK_EQ_INT(trove_profile_stack_count(p), 3);
    st = trove_profile_stack_get(p, s3);
    CHECK(st && st->frame == f0);
    s2 = st->parent;
    st = trove_profile_stack_get(p, s2);
    CHECK(st && st->frame == f1 && st->parent < s2);
    st = trove_profile_stack_get(p, st->parent);
    CHECK(st && st->frame == f2 && st->parent == TROVE_PROFILE_ROOT);
    CHECK_EQ_INT(trove_profile_stack_path(p, path, 3, &s3b), TROVE_OK);
    CHECK_EQ_INT(s3b, s3);
    /* A shared prefix: main <- mid is stack s2 already. */
    CHECK_EQ_INT(trove_profile_stack_path(p, path + 1, 2, &id), TROVE_OK);
    CHECK_EQ_INT(id, s2);
    CHECK_EQ_INT(trove_profile_stack_count(p), 3);
    CHECK_EQ_INT(trove_profile_stack_path(p, path, 0, &id), TROVE_OK);
    CHECK_EQ_INT(id, TROVE_PROFILE_ROOT);
    CHECK(trove_profile_stack_get(p, 0) == NULL);
    CHECK(trove_profile_stack_get(p, 4) == NULL);
    CHECK_EQ_INT(trove_profile_stack(p, 9, f0, &id), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_profile_stack(p, 0, 99, &id), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_profile_stack_count(p), 3);

    /* Every row's parent is an earlier row, over many random paths. */
    {
        uint64_t seed = 42;
        for (int i = 0; i < 5000; i++) {
            uint32_t fr[12];
            size_t n = 1 + test_rand(&seed) % 12;
            for (size_t k = 0; k < n; k++)
                fr[k] = (uint32_t)(test_rand(&seed) % 5);
            CHECK_EQ_INT(trove_profile_stack_path(p, fr, n, &id), TROVE_OK);
        }
        for (uint32_t s = 1; s <= trove_profile_stack_count(p); s++) {
            st = trove_profile_stack_get(p, s);
            if (!(st->parent < s))
                CHECK(st->parent < s);
        }
        /* ... and no two rows are the same (parent, frame). */
        for (uint32_t s = 2; s <= trove_profile_stack_count(p); s++) {
            const struct trove_profile_stack *a = trove_profile_stack_get(p, s);
            uint32_t again;
            CHECK_EQ_INT(trove_profile_stack(p, a->parent, a->frame, &again), TROVE_OK);
            if (again != s)
                CHECK_EQ_INT(again, s);
        }
    }

    smp.stack = s3;
    CHECK_EQ_INT(trove_profile_sample(p, &smp), TROVE_OK);
    smp.stack = 100000;
    CHECK_EQ_INT(trove_profile_sample(p, &smp), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_profile_sample_count(p), 1);
    CHECK(trove_profile_samples(p)[0].stack == s3 && trove_profile_samples(p)[0].time_ns == 10);
    trove_profile_free(p);
}

struct want {
    const char *fn;
    uint64_t self, total;
};

/* The top functions of p over [from, to) are want[0..n), in order. */
static void check_top(const struct trove_profile *p, uint64_t from, uint64_t to,
                      const struct want *want, size_t n, uint64_t samples)
{
    struct trove_profile_func *f = NULL;
    size_t got = 0;
    uint64_t in = 0;
    CHECK_EQ_INT(trove_profile_top(p, from, to, &f, &got, &in), TROVE_OK);
    CHECK_EQ_INT(got, n);
    CHECK_EQ_INT(in, samples);
    for (size_t i = 0; i < n && i < got; i++) {
        const char *name = trove_profile_string_get(p, f[i].function, NULL);
        if (strcmp(name, want[i].fn) != 0) {
            fprintf(stderr, "top %zu: %s, not %s\n", i, name, want[i].fn);
            CHECK(0);
        }
        CHECK_EQ_INT(f[i].self, want[i].self);
        CHECK_EQ_INT(f[i].total, want[i].total);
        CHECK(!strcmp(trove_profile_string_get(p, f[i].file, NULL), "x.c"));
    }
    free(f);
}

/* One sample at time t of the path given outermost first. */
static void add(struct trove_profile *p, uint64_t t, const uint32_t *outer_first, size_t n)
{
    uint32_t leaf_first[16], id;
    struct trove_profile_sample s = {t, 1, 1, 0};
    for (size_t i = 0; i < n; i++)
        leaf_first[i] = outer_first[n - 1 - i];
    CHECK_EQ_INT(trove_profile_stack_path(p, leaf_first, n, &id), TROVE_OK);
    s.stack = id;
    CHECK_EQ_INT(trove_profile_sample(p, &s), TROVE_OK);
}

static void test_top(void)
{
    struct trove_profile *p = NULL;
    struct trove_profile_func *f = (void *)1;
    size_t n = 9;
    uint32_t main_, a, a2, b, r, ra, rb;
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    CHECK_EQ_INT(trove_profile_top(p, 0, UINT64_MAX, &f, &n, NULL), TROVE_OK);
    CHECK(f == NULL && n == 0);
    main_ = F(p, "/bin/t", "main", 0x10, 0);
    a = F(p, "/bin/t", "a", 0x20, 0);
    a2 = F(p, "/bin/t", "a", 0x24, 0); /* another address of a: the same function */
    b = F(p, "/bin/t", "b", 0x30, 0);
    r = F(p, "/bin/t", "r", 0x40, 0);
    ra = F(p, "/bin/t", "r", 0x44, 0);
    rb = F(p, "/bin/t", "r", 0x48, 0);
    {
        uint32_t s1[] = {main_, a}, s2[] = {main_, b, a2}, s3[] = {main_, b},
                 s4[] = {main_, r, ra, rb}, s5[] = {main_, r};
        add(p, 100, s1, 2);
        add(p, 110, s1, 2);
        add(p, 120, s1, 2);
        add(p, 130, s2, 3);
        add(p, 140, s2, 3);
        add(p, 150, s3, 2);
        add(p, 160, s4, 4); /* r recursing: once in its total */
        add(p, 170, s5, 2);
        add(p, 500, s3, 2); /* outside [0, 200) */
        add(p, 180, NULL, 0); /* no frames */
    }
    {
        struct want w[] = {{"a", 5, 5}, {"r", 2, 2}, {"b", 1, 3}, {"main", 0, 8}};
        check_top(p, 0, 200, w, 4, 9);
    }
    {
        struct want w[] = {{"a", 5, 5}, {"b", 2, 4}, {"r", 2, 2}, {"main", 0, 9}};
        check_top(p, 0, UINT64_MAX, w, 4, 10);
    }
    {
        struct want w[] = {{"a", 3, 3}, {"main", 0, 3}, {"b", 0, 2}};
        check_top(p, 120, 150, w, 3, 3);
    }
    check_top(p, 1000, 2000, NULL, 0, 0);
    CHECK_EQ_INT(trove_profile_top(NULL, 0, 1, &f, &n, NULL), TROVE_ERR_INVALID);
    trove_profile_free(p);

    /* Ties: the same self and total are ordered by name, and the order does not depend on
     * the order the frames were added in. */
    for (int order = 0; order < 2; order++) {
        uint32_t m, x, y;
        CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
        m = F(p, "/bin/t", "main", 0x10, 0);
        if (order) {
            y = F(p, "/bin/t", "yy", 0x30, 0);
            x = F(p, "/bin/t", "xx", 0x20, 0);
        } else {
            x = F(p, "/bin/t", "xx", 0x20, 0);
            y = F(p, "/bin/t", "yy", 0x30, 0);
        }
        {
            uint32_t s1[] = {m, x}, s2[] = {m, y};
            struct want w[] = {{"xx", 1, 1}, {"yy", 1, 1}, {"main", 0, 2}};
            add(p, 1, order ? s2 : s1, 2);
            add(p, 2, order ? s1 : s2, 2);
            check_top(p, 0, UINT64_MAX, w, 3, 2);
        }
        trove_profile_free(p);
    }
}

int main(void)
{
    test_strings();
    test_frames_and_stacks();
    test_top();
    return test_done();
}
