/*
 * test_profile_json.c: the profile endpoint's JSON (src/net/profile_json.c), from profiles
 * built in memory. A small profile gives exactly the bytes worked out by hand: its counts,
 * the top functions in order with their hottest lines, the flame graph with two lines of
 * one function merged, the threads and every tick. Every answer is read back by jansson (an
 * independent parser, which also refuses any string that is not UTF-8) and checked: the
 * keys, every flame node at least the sum of its children, the root the samples in range,
 * the ticks thinned evenly to at most 20,000; a time range, a limit, an empty profile, names
 * that are not UTF-8 and too long, pruning, a stack deeper than the node budget, and every
 * allocation failing in turn (the output then as it was).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/profile_json.h"
#include "testutil.h"
#include "trove/testing.h"

static uint32_t str(struct trove_profile *p, const char *s)
{
    uint32_t id = 0;
    CHECK_EQ_INT(trove_profile_string(p, s, strlen(s), &id), TROVE_OK);
    return id;
}

static uint32_t frame(struct trove_profile *p, const char *module, const char *function,
                      const char *file, uint32_t line, uint64_t address)
{
    struct trove_profile_frame f = {str(p, module), str(p, function), str(p, file), line, address, 0};
    uint32_t id = 0;
    CHECK_EQ_INT(trove_profile_frame(p, &f, &id), TROVE_OK);
    return id;
}

static uint32_t path(struct trove_profile *p, const uint32_t *leaf_first, size_t n)
{
    uint32_t id = 0;
    CHECK_EQ_INT(trove_profile_stack_path(p, leaf_first, n, &id), TROVE_OK);
    return id;
}

static void sample(struct trove_profile *p, uint64_t t, uint32_t tid, uint32_t stack)
{
    struct trove_profile_sample s = {t, 10, tid, stack};
    CHECK_EQ_INT(trove_profile_sample(p, &s), TROVE_OK);
}

/*
 * main -> work -> alpha (line 30) x5, main -> work -> alpha (line 31) x3, main -> beta x4,
 * main alone x1 (thread 11 the first eight, 12 the next five), and one sample without
 * frames (thread 13): 14 samples at times 1000 .. 1013.
 */
static struct trove_profile *small(void)
{
    struct trove_profile *p = NULL;
    uint32_t f[5], st[4], k = 0;

    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    f[0] = frame(p, "/bin/app", "main", "/src/app.c", 10, 0x100);
    f[1] = frame(p, "/bin/app", "work", "/src/app.c", 20, 0x200);
    f[2] = frame(p, "/bin/app", "alpha", "/src/app.c", 30, 0x300);
    f[3] = frame(p, "/bin/app", "alpha", "/src/app.c", 31, 0x304);
    f[4] = frame(p, "/bin/app", "beta", "/src/beta.c", 40, 0x400);
    st[0] = path(p, (uint32_t[]){f[2], f[1], f[0]}, 3);
    st[1] = path(p, (uint32_t[]){f[3], f[1], f[0]}, 3);
    st[2] = path(p, (uint32_t[]){f[4], f[0]}, 2);
    st[3] = path(p, (uint32_t[]){f[0]}, 1);
    for (int i = 0; i < 5; i++)
        sample(p, 1000 + k++, 11, st[0]);
    for (int i = 0; i < 3; i++)
        sample(p, 1000 + k++, 11, st[1]);
    for (int i = 0; i < 4; i++)
        sample(p, 1000 + k++, 12, st[2]);
    sample(p, 1000 + k++, 12, st[3]);
    sample(p, 1000 + k++, 13, TROVE_PROFILE_ROOT);
    return p;
}

static struct trove_names *small_names(void)
{
    struct trove_names *n = NULL;
    CHECK_EQ_INT(trove_names_new(&n), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(n, TROVE_NAME_THREAD, 10, 11, "main-thread", 11), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(n, TROVE_NAME_THREAD, 10, 12, "worker \"2\"", 10), TROVE_OK);
    return n;
}

/* The answer for [from, to) with limit, as a string (NULL on error: rc in *rc_out). */
static char *answer(const struct trove_profile *p, const struct trove_names *names,
                    uint64_t from, uint64_t to, size_t limit)
{
    struct trove__profile_query q = {"cap", from, to, limit};
    struct trove_bytes b = {0};
    int rc = trove__profile_json(p, names, &q, &b);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        return NULL;
    CHECK(b.len <= TROVE__PROFILE_JSON_MAX);
    CHECK_EQ_INT(trove_bytes_append(&b, "", 1), TROVE_OK);
    return (char *)b.ptr;
}

static json_t *parse(const char *s)
{
    json_error_t e;
    json_t *j = s ? json_loads(s, 0, &e) : NULL;
    if (!j && s)
        fprintf(stderr, "not JSON (%s at %d): %.200s\n", e.text, e.position, s);
    CHECK(j != NULL);
    return j;
}

static int64_t num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    CHECK(json_is_integer(v));
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* Each node: its keys, a value of at least its children's sum, children by value; the
 * count of nodes and the deepest level into *nodes and *depth. */
static void check_flame(const json_t *n, size_t level, size_t *nodes, size_t *depth)
{
    const json_t *kids = json_object_get(n, "children");
    int64_t v = num(n, "value"), sum = 0, last = INT64_MAX;
    size_t i;
    const json_t *c;

    CHECK(json_object_size(n) == 3 && json_is_string(json_object_get(n, "name")) &&
          json_is_array(kids));
    (*nodes)++;
    if (level > *depth)
        *depth = level;
    json_array_foreach(kids, i, c) {
        int64_t cv = num(c, "value");
        CHECK(cv > 0 && cv <= last);
        last = cv;
        sum += cv;
        check_flame(c, level + 1, nodes, depth);
    }
    CHECK(sum <= v);
}

/* The keys of every part, and the counts that must agree with each other. */
static void check_shape(const json_t *j, int64_t want_samples)
{
    static const char *const keys[] = {"capture", "from_ns", "to_ns", "samples", "threads",
                                       "top", "flame", "ticks", "ticks_dropped"};
    const json_t *t, *ticks = json_object_get(j, "ticks");
    int64_t sum = 0;
    size_t i, nodes = 0, depth = 0;

    CHECK_EQ_INT(json_object_size(j), 9);
    for (i = 0; i < 9; i++)
        CHECK(json_object_get(j, keys[i]) != NULL);
    CHECK_EQ_INT(num(j, "samples"), want_samples);
    json_array_foreach(json_object_get(j, "threads"), i, t) {
        CHECK(json_object_size(t) == 3 && json_is_string(json_object_get(t, "name")));
        sum += num(t, "samples");
        (void)num(t, "tid");
    }
    if (json_array_size(json_object_get(j, "threads")) < TROVE__PROFILE_THREADS_MAX)
        CHECK_EQ_INT(sum, want_samples);
    json_array_foreach(json_object_get(j, "top"), i, t) {
        CHECK_EQ_INT(json_object_size(t), 6);
        CHECK(json_is_string(json_object_get(t, "function")) &&
              json_is_string(json_object_get(t, "file")) &&
              json_is_string(json_object_get(t, "module")));
        CHECK(num(t, "self") <= num(t, "total") && num(t, "total") <= want_samples);
        (void)num(t, "line");
    }
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(j, "flame"), "name")), "all"));
    CHECK_EQ_INT(num(json_object_get(j, "flame"), "value"), want_samples);
    check_flame(json_object_get(j, "flame"), 0, &nodes, &depth);
    CHECK(nodes <= TROVE__PROFILE_FLAME_MAX);
    CHECK(json_array_size(ticks) <= TROVE__PROFILE_TICKS_MAX);
    CHECK_EQ_INT((int64_t)json_array_size(ticks) + num(j, "ticks_dropped"), want_samples);
}

static void test_small(void)
{
    static const char want[] =
        "{\"capture\":\"cap\",\"from_ns\":1000,\"to_ns\":1014,\"samples\":14,"
        "\"threads\":[{\"tid\":11,\"name\":\"main-thread\",\"samples\":8},"
        "{\"tid\":12,\"name\":\"worker \\\"2\\\"\",\"samples\":5},"
        "{\"tid\":13,\"name\":\"\",\"samples\":1}],"
        "\"top\":[{\"function\":\"alpha\",\"file\":\"/src/app.c\",\"line\":30,\"module\":\"/bin/app\",\"self\":8,\"total\":8},"
        "{\"function\":\"beta\",\"file\":\"/src/beta.c\",\"line\":40,\"module\":\"/bin/app\",\"self\":4,\"total\":4},"
        "{\"function\":\"main\",\"file\":\"/src/app.c\",\"line\":10,\"module\":\"/bin/app\",\"self\":1,\"total\":13},"
        "{\"function\":\"work\",\"file\":\"/src/app.c\",\"line\":20,\"module\":\"/bin/app\",\"self\":0,\"total\":8}],"
        "\"flame\":{\"name\":\"all\",\"value\":14,\"children\":[{\"name\":\"main\",\"value\":13,\"children\":["
        "{\"name\":\"work\",\"value\":8,\"children\":[{\"name\":\"alpha\",\"value\":8,\"children\":[]}]},"
        "{\"name\":\"beta\",\"value\":4,\"children\":[]}]}]},"
        "\"ticks\":[[11,1000],[11,1001],[11,1002],[11,1003],[11,1004],[11,1005],[11,1006],"
        "[11,1007],[12,1008],[12,1009],[12,1010],[12,1011],[12,1012],[13,1013]],"
        "\"ticks_dropped\":0}\n";
    struct trove_profile *p = small();
    struct trove_names *names = small_names();
    uint64_t from = 0, to = 0;
    char *s;
    json_t *j;

    /* the whole span: the samples', or wider with events around them */
    trove__profile_span(p, 0, 0, 0, &from, &to);
    CHECK(from == 1000 && to == 1014);
    trove__profile_span(p, 3, 500, 1200, &from, &to);
    CHECK(from == 500 && to == 1200);
    trove__profile_span(p, 3, 1005, 1006, &from, &to);
    CHECK(from == 1000 && to == 1014);
    trove__profile_span(p, 0, 0, 0, &from, &to);
    s = answer(p, names, from, to, 50);
    CHECK(s && !strcmp(s, want));
    if (s && strcmp(s, want))
        fprintf(stderr, "got:  %s\nwant: %s", s, want);
    j = parse(s);
    if (j)
        check_shape(j, 14);
    json_decref(j);
    free(s);

    /* a limit: the first two; a range: thread 11's alpha samples only (1003 .. 1006) */
    s = answer(p, names, from, to, 2);
    j = parse(s);
    CHECK(j && json_array_size(json_object_get(j, "top")) == 2);
    json_decref(j);
    free(s);
    s = answer(p, names, 1003, 1007, 50);
    j = parse(s);
    if (j) {
        const json_t *top = json_object_get(j, "top"), *th = json_object_get(j, "threads");
        check_shape(j, 4);
        CHECK(num(j, "from_ns") == 1003 && num(j, "to_ns") == 1007);
        CHECK(json_array_size(th) == 1 && num(json_array_get(th, 0), "tid") == 11);
        CHECK(!strcmp(json_string_value(json_object_get(json_array_get(top, 0), "function")), "alpha"));
        /* lines 30 (1003, 1004) and 31 (1005, 1006) tie: the first frame's */
        CHECK_EQ_INT(num(json_array_get(top, 0), "line"), 30);
        CHECK_EQ_INT(num(json_array_get(top, 0), "self"), 4);
    }
    json_decref(j);
    free(s);
    s = answer(p, names, 1005, 1008, 50);
    j = parse(s);
    CHECK(j && num(json_array_get(json_object_get(j, "top"), 0), "line") == 31);
    json_decref(j);
    free(s);
    /* nothing in range: zero counts and empty arrays, a root with no children */
    s = answer(p, names, 0, 1000, 50);
    CHECK(s && strstr(s, "\"samples\":0,\"threads\":[],\"top\":[],\"flame\":{\"name\":\"all\","
                         "\"value\":0,\"children\":[]},\"ticks\":[],\"ticks_dropped\":0}"));
    free(s);
    /* no names table: the threads are unnamed */
    s = answer(p, NULL, from, to, 50);
    CHECK(s && strstr(s, "{\"tid\":11,\"name\":\"\",\"samples\":8}"));
    free(s);
    {
        struct trove__profile_query q = {"cap", 5, 4, 50};
        struct trove_bytes b = {0};
        CHECK_EQ_INT(trove__profile_json(p, names, &q, &b), TROVE_ERR_INVALID);
        q.from_ns = 0;
        CHECK_EQ_INT(trove__profile_json(NULL, names, &q, &b), TROVE_ERR_INVALID);
        CHECK_EQ_INT(b.len, 0);
    }
    trove_names_free(names);
    trove_profile_free(p);
}

static void test_empty(void)
{
    struct trove_profile *p = NULL;
    uint64_t from = 1, to = 1;
    char *s;

    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    trove__profile_span(p, 0, 0, 0, &from, &to);
    CHECK(from == 0 && to == 0);
    s = answer(p, NULL, from, to, 50);
    CHECK(s && !strcmp(s, "{\"capture\":\"cap\",\"from_ns\":0,\"to_ns\":0,\"samples\":0,"
                          "\"threads\":[],\"top\":[],\"flame\":{\"name\":\"all\",\"value\":0,"
                          "\"children\":[]},\"ticks\":[],\"ticks_dropped\":0}\n"));
    free(s);
    trove_profile_free(p);
}

/* 50,000 samples on three threads: 20,000 ticks, evenly spread, in order. */
static void test_ticks(void)
{
    struct trove_profile *p = NULL;
    uint32_t f, st;
    const size_t n = 50000;
    char *s;
    json_t *j;

    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    f = frame(p, "/bin/app", "spin", "/src/app.c", 1, 0x10);
    st = path(p, &f, 1);
    for (size_t i = 0; i < n; i++)
        sample(p, 1000000 + i * 10, 100 + (uint32_t)(i % 3), st);
    s = answer(p, NULL, 0, (uint64_t)INT64_MAX, 50);
    j = parse(s);
    if (j) {
        const json_t *ticks = json_object_get(j, "ticks"), *t;
        size_t i;
        check_shape(j, (int64_t)n);
        CHECK_EQ_INT(json_array_size(ticks), TROVE__PROFILE_TICKS_MAX);
        CHECK_EQ_INT(num(j, "ticks_dropped"), (int64_t)(n - TROVE__PROFILE_TICKS_MAX));
        json_array_foreach(ticks, i, t) { /* tick i is sample floor(i * n / 20000) */
            size_t k = i * n / TROVE__PROFILE_TICKS_MAX;
            CHECK(json_array_size(t) == 2 &&
                  json_integer_value(json_array_get(t, 0)) == (json_int_t)(100 + k % 3) &&
                  json_integer_value(json_array_get(t, 1)) == (json_int_t)(1000000 + k * 10));
        }
        /* every thread gets its share of them */
        CHECK_EQ_INT(json_array_size(json_object_get(j, "threads")), 3);
    }
    json_decref(j);
    free(s);
    /* a sub-range thinned the same way: [half, end) has 25,000 samples, 20,000 ticks */
    s = answer(p, NULL, 1000000 + n / 2 * 10, (uint64_t)INT64_MAX, 50);
    j = parse(s);
    if (j) {
        check_shape(j, (int64_t)(n / 2));
        CHECK_EQ_INT(json_array_size(json_object_get(j, "ticks")), TROVE__PROFILE_TICKS_MAX);
        CHECK_EQ_INT(json_integer_value(json_array_get(json_array_get(json_object_get(j, "ticks"), 0), 1)),
                     1000000 + n / 2 * 10);
    }
    json_decref(j);
    free(s);
    trove_profile_free(p);
}

/* Pruning: 1,000 functions of one sample each beside 99,000 samples of one: under 1/1000,
 * none of them is a node. A recursion 6,000 frames deep keeps its top FLAME_DEPTH levels;
 * 6,000 nodes no deeper than that, the FLAME_MAX shallowest. */
static void test_prune(void)
{
    struct trove_profile *p = NULL;
    uint32_t hot, st, root;
    char name[32], *s;
    json_t *j;

    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    root = frame(p, "/bin/app", "main", "", 0, 1);
    hot = frame(p, "/bin/app", "hot", "", 0, 2);
    st = path(p, (uint32_t[]){hot, root}, 2);
    for (uint32_t i = 0; i < 99000; i++)
        sample(p, i, 1, st);
    for (uint32_t i = 0; i < 1000; i++) {
        uint32_t f;
        snprintf(name, sizeof name, "cold%u", i);
        f = frame(p, "/bin/app", name, "", 0, 100 + i);
        sample(p, 99000 + i, 1, path(p, (uint32_t[]){f, root}, 2));
    }
    s = answer(p, NULL, 0, (uint64_t)INT64_MAX, 5);
    j = parse(s);
    if (j) {
        const json_t *main_ = json_array_get(json_object_get(json_object_get(j, "flame"), "children"), 0);
        check_shape(j, 100000);
        CHECK_EQ_INT(num(main_, "value"), 100000);
        CHECK_EQ_INT(json_array_size(json_object_get(main_, "children")), 1);
        CHECK_EQ_INT(json_array_size(json_object_get(j, "top")), 5);
    }
    json_decref(j);
    free(s);
    trove_profile_free(p);

    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    {
        enum { DEPTH = 6000 };
        uint32_t *frames = malloc(DEPTH * sizeof *frames);
        CHECK(frames != NULL);
        for (uint32_t i = 0; frames && i < DEPTH; i++) {
            snprintf(name, sizeof name, "f%u", i);
            frames[DEPTH - 1 - i] = frame(p, "/bin/app", name, "", 0, i + 1); /* leaf first */
        }
        st = frames ? path(p, frames, DEPTH) : 0;
        for (uint32_t i = 0; i < 10; i++)
            sample(p, i, 1, st);
        free(frames);
    }
    s = answer(p, NULL, 0, (uint64_t)INT64_MAX, 50);
    j = parse(s);
    if (j) {
        size_t depth = 0;
        const json_t *n = json_object_get(j, "flame");
        check_shape(j, 10);
        /* one chain from the outermost frame down, cut at FLAME_DEPTH */
        while (json_array_size(json_object_get(n, "children")) == 1) {
            n = json_array_get(json_object_get(n, "children"), 0);
            if (depth == 0)
                CHECK(!strcmp(json_string_value(json_object_get(n, "name")), "f0"));
            depth++;
        }
        CHECK_EQ_INT(depth, TROVE__PROFILE_FLAME_DEPTH);
        CHECK_EQ_INT(json_array_size(json_object_get(n, "children")), 0);
    }
    json_decref(j);
    free(s);
    trove_profile_free(p);

    /* 100 chains of 60 frames: 6,000 nodes over the budget, whole levels kept from the top */
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    for (uint32_t c = 0; c < 100; c++) {
        uint32_t frames[60];
        for (uint32_t d = 0; d < 60; d++) {
            snprintf(name, sizeof name, "c%u_%u", c, d);
            frames[59 - d] = frame(p, "/bin/app", name, "", 0, c * 100 + d + 1);
        }
        st = path(p, frames, 60);
        for (uint32_t i = 0; i < 10; i++)
            sample(p, c * 10 + i, 1, st);
    }
    s = answer(p, NULL, 0, (uint64_t)INT64_MAX, 50);
    j = parse(s);
    if (j) {
        size_t nodes = 0, depth = 0;
        check_shape(j, 1000);
        check_flame(json_object_get(j, "flame"), 0, &nodes, &depth);
        CHECK_EQ_INT(nodes, TROVE__PROFILE_FLAME_MAX);
        CHECK_EQ_INT(depth, (TROVE__PROFILE_FLAME_MAX - 1 + 99) / 100);
    }
    json_decref(j);
    free(s);
    trove_profile_free(p);
}

/* Names as the sampler may find them: bytes that are not UTF-8, control characters, and a
 * C++ name of 2,000 bytes: valid JSON and UTF-8, cut to STRING_MAX bytes at a character. */
static void test_strings(void)
{
    struct trove_profile *p = NULL;
    struct trove_names *names = NULL;
    char lng[2001], odd[2002], *s;
    uint32_t f, g;
    json_t *j;

    for (int i = 0; i < 2000; i++)
        lng[i] = "\xc3\xa9"[i % 2]; /* é, 1,000 times */
    lng[2000] = 0;
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_THREAD, 10, 5, "t\x01\"\\", 4), TROVE_OK);
    f = frame(p, "/lib/\xff\xfe.so", "bad\x80name\x1f\xed\xa0\x80", "/src/\xc3", 7, 1);
    g = frame(p, "/bin/app", lng, "", 0, 2);
    sample(p, 1, 5, path(p, (uint32_t[]){f, g}, 2));
    s = answer(p, names, 0, (uint64_t)INT64_MAX, 50);
    j = parse(s);
    if (j) {
        const json_t *top = json_object_get(j, "top");
        const char *fn0 = json_string_value(json_object_get(json_array_get(top, 0), "function"));
        const char *fn1 = json_string_value(json_object_get(json_array_get(top, 1), "function"));
        const char *th = json_string_value(json_object_get(json_array_get(json_object_get(j, "threads"), 0), "name"));
        check_shape(j, 1);
        CHECK(fn0 && !strcmp(fn0, "bad\xef\xbf\xbdname\x1f\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
        CHECK(!strcmp(json_string_value(json_object_get(json_array_get(top, 0), "module")),
                      "/lib/\xef\xbf\xbd\xef\xbf\xbd.so"));
        CHECK(!strcmp(json_string_value(json_object_get(json_array_get(top, 0), "file")),
                      "/src/\xef\xbf\xbd"));
        /* 256 é (512 bytes), then the ellipsis */
        CHECK(fn1 && strlen(fn1) == TROVE__PROFILE_STRING_MAX + 3 &&
              !memcmp(fn1, lng, TROVE__PROFILE_STRING_MAX) &&
              !strcmp(fn1 + TROVE__PROFILE_STRING_MAX, "\xe2\x80\xa6"));
        CHECK(th && !strcmp(th, "t\x01\"\\"));
    }
    json_decref(j);
    free(s);
    /* cut inside a character: back to its first byte */
    odd[0] = 'x';
    memcpy(odd + 1, lng, sizeof lng);
    g = frame(p, "/bin/app", odd, "", 0, 3);
    trove_profile_clear_samples(p);
    sample(p, 1, 5, path(p, &g, 1));
    s = answer(p, NULL, 0, (uint64_t)INT64_MAX, 50);
    j = parse(s);
    if (j) {
        const char *fn = json_string_value(json_object_get(json_array_get(json_object_get(j, "top"), 0), "function"));
        CHECK(fn && strlen(fn) == TROVE__PROFILE_STRING_MAX - 1 + 3 && fn[0] == 'x');
    }
    json_decref(j);
    free(s);
    trove_names_free(names);
    trove_profile_free(p);
}

/* Every allocation failing in turn: TROVE_ERR_NOMEM, and the output as it was. */
static void test_oom(void)
{
    struct trove_profile *p = small();
    struct trove_names *names = small_names();
    struct trove__profile_query q = {"cap", 0, UINT64_MAX, 50};
    struct trove_bytes b = {0};
    int rc, done = 0;

    CHECK_EQ_INT(trove_bytes_append(&b, "before", 6), TROVE_OK);
    for (uint64_t n = 1; n < 200 && !done; n++) {
        trove_testing_alloc_fail_at(n, 0);
        rc = trove__profile_json(p, names, &q, &b);
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
    trove_names_free(names);
    trove_profile_free(p);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_small);
    RUN(test_empty);
    RUN(test_ticks);
    RUN(test_prune);
    RUN(test_strings);
    RUN(test_oom);
    return test_done();
}
