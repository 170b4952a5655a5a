/*
 * test_profile.c: the profile model (trove/profile.h): strings, frames and stacks each
 * deduplicated, the trie's parent-before-child order, samples, and the top functions —
 * self against total, recursion counted once a sample, the time range, and an order that
 * does not depend on the order rows were added in. And the samples frame (wire format 6):
 * its golden vector, round trips whole and in steps, a profile spread over many frames,
 * and bad frames refused with the profile left as it was.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/profile.h"
#include "trove/wire.h"

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


/* ---- the samples frame ------------------------------------------------------------------- */

/* The profile of the golden vector: two modules, an inlined frame, a shared caller, samples
 * out of time order, switches. */
static struct trove_profile *small_profile(void)
{
    struct trove_profile *p = NULL;
    struct trove_profile_frame f;
    uint32_t fr[4], st[3];
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    f = (struct trove_profile_frame){S(p, "/bin/app"), S(p, "main"), S(p, "app.c"), 10, 0x1100, 0};
    CHECK_EQ_INT(trove_profile_frame(p, &f, &fr[0]), TROVE_OK);
    f = (struct trove_profile_frame){f.module, S(p, "work"), f.file, 22, 0x1230, 0};
    CHECK_EQ_INT(trove_profile_frame(p, &f, &fr[1]), TROVE_OK);
    f = (struct trove_profile_frame){f.module, S(p, "step"), S(p, "step.h"), 3, 0x1230, 1};
    CHECK_EQ_INT(trove_profile_frame(p, &f, &fr[2]), TROVE_OK);
    f = (struct trove_profile_frame){S(p, "/lib/libc.so.6"), S(p, "libc.so.6+0x9a0"), 0, 0, 0x9a0, 0};
    CHECK_EQ_INT(trove_profile_frame(p, &f, &fr[3]), TROVE_OK);
    {
        uint32_t a[] = {fr[2], fr[1], fr[0]}, b[] = {fr[3], fr[0]}, c[] = {fr[0]};
        CHECK_EQ_INT(trove_profile_stack_path(p, a, 3, &st[0]), TROVE_OK);
        CHECK_EQ_INT(trove_profile_stack_path(p, b, 2, &st[1]), TROVE_OK);
        CHECK_EQ_INT(trove_profile_stack_path(p, c, 1, &st[2]), TROVE_OK);
    }
    {
        struct trove_profile_sample sm[] = {{1000000, 7, 7, st[0]}, {2001000, 7, 8, st[1]},
                                            {2000500, 7, 7, st[0]}, {3000000, 7, 8, 0}};
        struct trove_profile_switch sw[] = {{1500000, 7, 8, TROVE_PROFILE_SWITCH_OUT},
                                            {1600000, 7, 8, 0},
                                            {2500000, 7, 7, TROVE_PROFILE_SWITCH_OUT | TROVE_PROFILE_SWITCH_PREEMPT}};
        for (size_t i = 0; i < 4; i++)
            CHECK_EQ_INT(trove_profile_sample(p, &sm[i]), TROVE_OK);
        for (size_t i = 0; i < 3; i++)
            CHECK_EQ_INT(trove_profile_switch(p, &sw[i]), TROVE_OK);
    }
    return p;
}

/* a and b hold the same rows. */
static void check_same(const struct trove_profile *a, const struct trove_profile *b)
{
    struct trove_profile_counts ca, cb;
    trove_profile_get_counts(a, &ca);
    trove_profile_get_counts(b, &cb);
    CHECK(!memcmp(&ca, &cb, sizeof ca));
    for (uint32_t i = 0; i < ca.strings; i++) {
        size_t la, lb;
        const char *x = trove_profile_string_get(a, i, &la), *y = trove_profile_string_get(b, i, &lb);
        CHECK(la == lb && !memcmp(x, y, la));
    }
    for (uint32_t i = 0; i < ca.frames; i++) {
        const struct trove_profile_frame *x = trove_profile_frame_get(a, i), *y = trove_profile_frame_get(b, i);
        CHECK(x->module == y->module && x->function == y->function && x->file == y->file &&
              x->line == y->line && x->address == y->address && x->inline_depth == y->inline_depth);
    }
    for (uint32_t i = 1; i <= ca.stacks; i++) {
        const struct trove_profile_stack *x = trove_profile_stack_get(a, i), *y = trove_profile_stack_get(b, i);
        CHECK(x->frame == y->frame && x->parent == y->parent);
    }
    for (size_t i = 0; i < ca.samples; i++) {
        const struct trove_profile_sample *x = &trove_profile_samples(a)[i], *y = &trove_profile_samples(b)[i];
        CHECK(x->time_ns == y->time_ns && x->pid == y->pid && x->tid == y->tid && x->stack == y->stack);
    }
    for (size_t i = 0; i < ca.switches; i++) {
        const struct trove_profile_switch *x = &trove_profile_switches(a)[i], *y = &trove_profile_switches(b)[i];
        CHECK(x->time_ns == y->time_ns && x->pid == y->pid && x->tid == y->tid && x->flags == y->flags);
    }
}

/* Decode every frame of buf[0..len) into p; the first error, or TROVE_OK. */
static int decode_all(struct trove_profile *p, const uint8_t *buf, size_t len, size_t *frames_out,
                      struct trove_diag *diag)
{
    size_t at = 0, n = 0;
    while (at < len) {
        size_t fl = 0;
        int rc = trove_profile_decode(p, buf + at, len - at, &fl, diag);
        if (rc != TROVE_OK)
            return rc;
        at += fl;
        n++;
    }
    if (frames_out)
        *frames_out = n;
    return TROVE_OK;
}

static void test_frame_golden(void)
{
    struct trove_profile *p = small_profile(), *q = NULL;
    struct trove_bytes b = {0};
    struct trove_wire_decoder *dec = NULL;
    struct trove_wire_frame fr;
    struct trove_event ev[4];
    size_t frames = 0;

    CHECK_EQ_INT(trove_profile_encode(p, NULL, &b), TROVE_OK);
    /* As for the deflate events vector (test_wire.c), the compressed bytes depend on the
     * compressor: what is frozen is that the vector decodes to this profile (its inflated
     * body is docs/formats/wire.md's), and so does a fresh encoding. */
    if (getenv("TROVE_REGEN_VECTORS"))
        test_check_vector("wire_samples.bin", b.ptr, b.len);
    CHECK(b.len > 16 && b.ptr[2] == TROVE_WIRE_SAMPLES && b.ptr[3] == 1);
    CHECK_EQ_INT(trove_profile_new(&q), TROVE_OK);
    CHECK_EQ_INT(decode_all(q, b.ptr, b.len, &frames, NULL), TROVE_OK);
    CHECK_EQ_INT(frames, 1);
    check_same(p, q);
    {
        char path[1024];
        size_t len = 0;
        uint8_t *want;
        struct trove_profile *v = NULL;
        snprintf(path, sizeof path, "%s/tests/vectors/wire_samples.bin", TROVE_SOURCE_DIR);
        want = test_read_file(path, &len);
        CHECK(want != NULL && len > 16);
        CHECK(want && want[12] == 154 && want[13] == 0); /* the body's 154 bytes */
        CHECK_EQ_INT(trove_profile_new(&v), TROVE_OK);
        CHECK_EQ_INT(want ? decode_all(v, want, len, &frames, NULL) : -1, TROVE_OK);
        check_same(p, v);
        trove_profile_free(v);
        free(want);
    }
    /* the same frame again: it starts where q no longer is */
    {
        struct trove_diag diag = {0};
        CHECK_EQ_INT(trove_profile_decode(q, b.ptr, b.len, NULL, &diag), TROVE_ERR_CORRUPT);
        CHECK(strstr(diag.msg, "start at") != NULL);
        check_same(p, q);
    }
    /* a reader of events passes over it */
    CHECK_EQ_INT(trove_wire_decoder_new(&dec), TROVE_OK);
    CHECK_EQ_INT(trove_wire_decode(dec, b.ptr, b.len, ev, 4, NULL, &fr, NULL), TROVE_OK);
    CHECK(fr.format == TROVE_WIRE_SAMPLES && fr.n_events == 0 && fr.frame_len == b.len);
    trove_wire_decoder_free(dec);
    /* nothing new: no frame */
    {
        struct trove_profile_counts c;
        size_t len = b.len;
        trove_profile_get_counts(p, &c);
        CHECK_EQ_INT(trove_profile_encode(p, &c, &b), TROVE_OK);
        CHECK_EQ_INT(b.len, len);
        c.samples++;
        CHECK_EQ_INT(trove_profile_encode(p, &c, &b), TROVE_ERR_INVALID);
        CHECK_EQ_INT(b.len, len);
    }
    trove_profile_free(q);
    trove_profile_free(p);
    trove_bytes_free(&b);
}

static void test_frame_steps(void)
{
    struct trove_profile *p = NULL, *q = NULL;
    struct trove_bytes b = {0}, stream = {0};
    struct trove_profile_counts mark;
    size_t frames = 0;
    uint32_t stack = 0;

    /* A profile grown in three steps, each step's rows in their own frames, read by a
     * profile that follows; then one that big spreads over several frames. */
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    CHECK_EQ_INT(trove_profile_new(&q), TROVE_OK);
    trove_profile_get_counts(p, &mark);
    for (int step = 0; step < 3; step++) {
        char name[32];
        b.len = 0;
        for (uint32_t i = 0; i < 50; i++) {
            uint32_t f;
            snprintf(name, sizeof name, "fn_%d_%u", step, i);
            f = F(p, "/bin/t", name, 0x1000u * (uint32_t)step + i, i % 3);
            CHECK_EQ_INT(trove_profile_stack(p, stack % 7, f, &stack), TROVE_OK);
            {
                struct trove_profile_sample sm = {(uint64_t)step * 1000 + i, 1, 2 + i % 4, stack};
                struct trove_profile_switch sw = {(uint64_t)step * 1000 + i, 1, 2, i & 1};
                CHECK_EQ_INT(trove_profile_sample(p, &sm), TROVE_OK);
                CHECK_EQ_INT(trove_profile_switch(p, &sw), TROVE_OK);
            }
        }
        CHECK_EQ_INT(trove_profile_encode(p, &mark, &b), TROVE_OK);
        CHECK_EQ_INT(trove_bytes_append(&stream, b.ptr, b.len), TROVE_OK);
        CHECK_EQ_INT(decode_all(q, b.ptr, b.len, NULL, NULL), TROVE_OK);
        check_same(p, q);
        trove_profile_get_counts(p, &mark);
    }
    test_corpus_write("TROVE_SAMPLES_CORPUS", "steps.bin", NULL, 0, stream.ptr, stream.len);
    trove_bytes_free(&stream);
    trove_profile_free(q);

    /* 300,000 samples and 70,000 frames and stacks: more than one frame's samples, more
     * than a megabyte of body */
    for (uint32_t i = 0; i < 70000; i++) {
        char name[32];
        uint32_t f;
        snprintf(name, sizeof name, "big_%u", i);
        f = F(p, "/bin/big", name, i, 0);
        CHECK_EQ_INT(trove_profile_stack(p, i % 100, f, &stack), TROVE_OK);
    }
    for (uint32_t i = 0; i < 300000; i++) {
        struct trove_profile_sample sm = {5000 + (uint64_t)i * 1001, 1, 2, 1 + (i * 7919) % 70000};
        CHECK_EQ_INT(trove_profile_sample(p, &sm), TROVE_OK);
    }
    b.len = 0;
    CHECK_EQ_INT(trove_profile_encode(p, NULL, &b), TROVE_OK);
    CHECK_EQ_INT(trove_profile_new(&q), TROVE_OK);
    CHECK_EQ_INT(decode_all(q, b.ptr, b.len, &frames, NULL), TROVE_OK);
    CHECK(frames >= 300150 / TROVE_PROFILE_FRAME_MAX_SAMPLES + 1);
    check_same(p, q);
    /* the same bytes again from the same rows */
    {
        struct trove_bytes again = {0};
        CHECK_EQ_INT(trove_profile_encode(q, NULL, &again), TROVE_OK);
        CHECK(again.len == b.len && !memcmp(again.ptr, b.ptr, b.len));
        trove_bytes_free(&again);
    }
    trove_profile_free(q);
    trove_profile_free(p);
    trove_bytes_free(&b);
}

/* frame (len bytes, a valid samples frame but for what the caller changed) is refused with
 * `want` and leaves q as it was. */
static void expect_refused(struct trove_profile *q, const uint8_t *frame, size_t len, int want,
                           const char *needle)
{
    struct trove_profile_counts before, after;
    struct trove_diag diag = {0};
    int rc;
    trove_profile_get_counts(q, &before);
    rc = trove_profile_decode(q, frame, len, NULL, &diag);
    if (want)
        CHECK_EQ_INT(rc, want);
    else
        CHECK(rc < 0);
    if (needle && !strstr(diag.msg, needle)) {
        fprintf(stderr, "message '%s' lacks '%s'\n", diag.msg, needle);
        CHECK(0);
    }
    trove_profile_get_counts(q, &after);
    CHECK(!memcmp(&before, &after, sizeof before));
}

/* A samples frame of the body body[0..n), its header's count `count`. */
static void make_frame(struct trove_bytes *out, const uint8_t *body, size_t n, uint32_t count)
{
    /* STORED deflate blocks: 01, LEN, ~LEN, the bytes (n < 65536) */
    uint8_t h[16] = {'T', 'V', TROVE_WIRE_SAMPLES, 1};
    uint32_t payload = (uint32_t)(5 + n);
    h[4] = (uint8_t)count, h[5] = (uint8_t)(count >> 8), h[6] = (uint8_t)(count >> 16);
    h[8] = (uint8_t)payload, h[9] = (uint8_t)(payload >> 8);
    h[12] = (uint8_t)n, h[13] = (uint8_t)(n >> 8);
    out->len = 0;
    CHECK_EQ_INT(trove_bytes_append(out, h, 16), TROVE_OK);
    {
        uint8_t blk[5] = {1, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)~n, (uint8_t)(~n >> 8)};
        CHECK_EQ_INT(trove_bytes_append(out, blk, 5), TROVE_OK);
    }
    CHECK_EQ_INT(trove_bytes_append(out, body, n), TROVE_OK);
}

static void test_frame_errors(void)
{
    struct trove_profile *p = small_profile(), *q = NULL, *r = NULL;
    struct trove_bytes b = {0}, f = {0};

    CHECK_EQ_INT(trove_profile_encode(p, NULL, &b), TROVE_OK);
    CHECK_EQ_INT(trove_profile_new(&q), TROVE_OK);
    /* every prefix */
    for (size_t len = 0; len < b.len; len++)
        expect_refused(q, b.ptr, len, 0, NULL);
    /* every single bit flipped: refused with q unchanged, or read as some valid profile */
    for (size_t i = 0; i < b.len * 8; i++) {
        struct trove_profile *z = NULL;
        b.ptr[i / 8] ^= (uint8_t)(1u << (i % 8));
        CHECK_EQ_INT(trove_profile_new(&z), TROVE_OK);
        if (trove_profile_decode(z, b.ptr, b.len, NULL, NULL) != TROVE_OK) {
            struct trove_profile_counts c;
            trove_profile_get_counts(z, &c);
            CHECK(c.strings == 1 && c.frames == 0 && c.stacks == 0 && c.samples == 0 &&
                  c.switches == 0);
        }
        trove_profile_free(z);
        b.ptr[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    /* hand-made bodies (stored deflate), each one thing wrong */
    {
        /* strings base 1, one "x"; frames 0 / 1: module 1 function 1 file 0 line 0 addr 5
         * depth 0; stacks 0 / 1: frame 0 parent 0; one sample at 9 of stack 1; no switches */
        static const uint8_t ok[] = {1, 1, 1, 'x', 0, 1, 1, 1, 0, 0, 5, 0, 0, 1, 0, 0, 1, 18, 1, 1, 1, 0};
        uint8_t body[sizeof ok];
        make_frame(&f, ok, sizeof ok, 1);
        CHECK_EQ_INT(trove_profile_new(&r), TROVE_OK);
        CHECK_EQ_INT(trove_profile_decode(r, f.ptr, f.len, NULL, NULL), TROVE_OK);
        CHECK(trove_profile_sample_count(r) == 1 && trove_profile_samples(r)[0].time_ns == 9);
        trove_profile_free(r);
#define BAD(at, value, want, needle, seed)                                                       \
        do {                                                                                   \
            memcpy(body, ok, sizeof ok);                                                       \
            body[at] = (value);                                                                \
            make_frame(&f, body, sizeof body, 1);                                              \
            expect_refused(q, f.ptr, f.len, want, needle);                                     \
            test_corpus_write("TROVE_SAMPLES_CORPUS", seed, NULL, 0, f.ptr, f.len);            \
        } while (0)
        BAD(0, 2, TROVE_ERR_CORRUPT, "start at", "base.bin");
        BAD(4, 2, TROVE_ERR_CORRUPT, "start at", "frames-base.bin");
        BAD(6, 2, TROVE_ERR_CORRUPT, "does not have", "frame-string.bin");
        BAD(14, 1, TROVE_ERR_CORRUPT, "does not have", "stack-frame.bin");
        BAD(15, 1, TROVE_ERR_CORRUPT, "does not have", "stack-parent.bin");
        BAD(20, 2, TROVE_ERR_CORRUPT, "does not have", "sample-stack.bin");
        BAD(16, 2, TROVE_ERR_CORRUPT, "counts 1 samples", "count.bin");
        BAD(21, 1, TROVE_ERR_CORRUPT, NULL, "switches.bin");
        BAD(3, 0, TROVE_ERR_CORRUPT, "NUL", "nul.bin");
        BAD(2, 60, TROVE_ERR_CORRUPT, "longer than the body", "long-string.bin");
        BAD(20, 0x80, TROVE_ERR_TRUNCATED, "runs past", "cut-varint.bin");
        /* bytes after the last switch */
        {
            uint8_t longer[sizeof ok + 1];
            memcpy(longer, ok, sizeof ok);
            longer[sizeof ok] = 0;
            make_frame(&f, longer, sizeof longer, 1);
            expect_refused(q, f.ptr, f.len, TROVE_ERR_CORRUPT, "after its last switch");
        }
        /* a string that repeats one the profile holds: ids would shift */
        {
            static const uint8_t rep[] = {1, 1, 0, 0, 0, 0, 0, 0, 0};
            make_frame(&f, rep, sizeof rep, 0);
            expect_refused(q, f.ptr, f.len, TROVE_ERR_CORRUPT, "repeats");
        }
        /* a header that declares more than the payload can inflate to */
        make_frame(&f, ok, sizeof ok, 1);
        f.ptr[12] = 0xff, f.ptr[13] = 0xff, f.ptr[14] = 0xff;
        expect_refused(q, f.ptr, f.len, TROVE_ERR_BOMB, NULL);
        make_frame(&f, ok, sizeof ok, 1);
        f.ptr[12] = 4;
        expect_refused(q, f.ptr, f.len, TROVE_ERR_CORRUPT, "at least");
        /* an events frame is not a samples frame */
        make_frame(&f, ok, sizeof ok, 1);
        f.ptr[2] = TROVE_WIRE_DEFLATE;
        expect_refused(q, f.ptr, f.len, TROVE_ERR_FORMAT, NULL);
#undef BAD
    }
    /* failing half way (a switch with bad flags after good strings, frames, stacks and a
     * sample) undoes it all, and the profile's indexes then hold only what it has */
    {
        static const uint8_t late[] = {1, 1, 1, 'x', 0, 1, 1, 1, 0, 0, 5, 0, 0, 1, 0, 0,
                                       1, 18, 1, 1, 1, 1, 2, 1, 1, 5};
        struct trove_profile_frame fx = {1, 1, 0, 0, 5, 0};
        uint32_t id = 99;
        CHECK_EQ_INT(trove_profile_new(&r), TROVE_OK);
        make_frame(&f, late, sizeof late, 1);
        expect_refused(r, f.ptr, f.len, TROVE_ERR_CORRUPT, "flags");
        CHECK_EQ_INT(trove_profile_string(r, "x", 1, &id), TROVE_OK);
        CHECK_EQ_INT(id, 1);
        CHECK_EQ_INT(trove_profile_frame(r, &fx, &id), TROVE_OK);
        CHECK_EQ_INT(id, 0);
        CHECK_EQ_INT(trove_profile_stack(r, 0, 0, &id), TROVE_OK);
        CHECK_EQ_INT(id, 1);
        CHECK_EQ_INT(trove_profile_sample_count(r), 0);
        /* and the frame with good flags reads */
        {
            uint8_t good[sizeof late];
            struct trove_profile *z = NULL;
            memcpy(good, late, sizeof late);
            good[sizeof late - 1] = 3;
            make_frame(&f, good, sizeof good, 1);
            CHECK_EQ_INT(trove_profile_new(&z), TROVE_OK);
            CHECK_EQ_INT(trove_profile_decode(z, f.ptr, f.len, NULL, NULL), TROVE_OK);
            CHECK(trove_profile_switch_count(z) == 1 && trove_profile_switches(z)[0].time_ns == 1 &&
                  trove_profile_switches(z)[0].flags == 3);
            trove_profile_free(z);
        }
        trove_profile_free(r);
    }
    trove_profile_free(q);
    trove_profile_free(p);
    trove_bytes_free(&b);
    trove_bytes_free(&f);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_strings);
    RUN(test_frames_and_stacks);
    RUN(test_top);
    RUN(test_frame_golden);
    RUN(test_frame_steps);
    RUN(test_frame_errors);
    return test_done();
}
