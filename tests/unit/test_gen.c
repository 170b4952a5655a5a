/*
 * test_gen.c: the synthetic capture model (src/codec/gen.c, docs/gen.md).
 *
 * Checks the properties docs/gen.md promises: determinism (same options, same bytes; a
 * different seed, different bytes), the exact count, order by start, nesting (each zone
 * lies inside its parent on its thread, depth = nesting), the documented ranges of every
 * field (kinds, extra, pids, tids, name ids, the start-time base), the mean start gap, the
 * Zipf shape, the names table (exactly the ids used, every thread and process), and that a
 * prefix of a longer run is the shorter run (trimming is a time cut, not a re-draw), and
 * what --slow promises: the same draws, each slowed zone's duration scaled exactly, every
 * other zone's changed by just what its children's changed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "trove/gen.h"

static int gen(const struct trove_gen_options *o, struct trove_events *ev, struct trove_names **nm)
{
    int rc;
    memset(ev, 0, sizeof *ev);
    if (nm && (rc = trove_names_new(nm)) != TROVE_OK)
        return rc;
    return trove_gen(o, ev, nm ? *nm : NULL);
}

static void test_defaults(void)
{
    struct trove_gen_options o;
    memset(&o, 0xff, sizeof o);
    trove_gen_defaults(&o);
    CHECK_EQ_INT(o.seed, 1);
    CHECK_EQ_INT(o.events, 1034313);
    CHECK_EQ_INT(o.processes, 4);
    CHECK_EQ_INT(o.threads, 8);
    CHECK_EQ_INT(o.names, 65536);
    CHECK(o.zipf_s == 1.0);
}

static void test_invalid(void)
{
    struct trove_gen_options o, b;
    struct trove_events ev = {0};
    trove_gen_defaults(&b);
    b.events = 10;
    o = b, o.names = 65537;
    CHECK_EQ_INT(trove_gen(&o, &ev, NULL), TROVE_ERR_INVALID);
    o = b, o.zipf_s = -2.0;
    CHECK_EQ_INT(trove_gen(&o, &ev, NULL), TROVE_ERR_INVALID);
    o = b, o.zipf_s = 10.5;
    CHECK_EQ_INT(trove_gen(&o, &ev, NULL), TROVE_ERR_INVALID);
    o = b, o.zipf_s = NAN;
    CHECK_EQ_INT(trove_gen(&o, &ev, NULL), TROVE_ERR_INVALID);
    o = b, o.processes = 4097;
    CHECK_EQ_INT(trove_gen(&o, &ev, NULL), TROVE_ERR_INVALID);
    o = b, o.processes = 1024, o.threads = 1024;
    CHECK_EQ_INT(trove_gen(&o, &ev, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_gen(NULL, &ev, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(ev.len, 0);
    trove_events_free(&ev);
}

/* A zeroed struct is every default: the same events as trove_gen_defaults gives (a field
 * left 0 is its default, so a smaller count with the rest zeroed matches too). */
static void test_zeroed(void)
{
    struct trove_gen_options d, z;
    struct trove_events a = {0}, b = {0};

    trove_gen_defaults(&d);
    d.events = 20000;
    memset(&z, 0, sizeof z);
    z.events = 20000;
    CHECK_EQ_INT(trove_gen(&d, &a, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_gen(&z, &b, NULL), TROVE_OK);
    CHECK(a.len == 20000 && b.len == a.len && !memcmp(a.ev, b.ev, a.len * sizeof *a.ev));
    trove_events_free(&a);
    trove_events_free(&b);
}

static void test_determinism(void)
{
    struct trove_gen_options o;
    struct trove_events a, b, c;
    trove_gen_defaults(&o);
    o.events = 50000;
    CHECK_EQ_INT(gen(&o, &a, NULL), TROVE_OK);
    CHECK_EQ_INT(gen(&o, &b, NULL), TROVE_OK);
    CHECK_EQ_INT(a.len, 50000);
    CHECK_EQ_INT(b.len, 50000);
    CHECK(a.len == b.len && memcmp(a.ev, b.ev, a.len * sizeof *a.ev) == 0);
    o.seed = 2;
    CHECK_EQ_INT(gen(&o, &c, NULL), TROVE_OK);
    CHECK_EQ_INT(c.len, 50000);
    CHECK(memcmp(a.ev, c.ev, a.len * sizeof *a.ev) != 0);
    CHECK(a.ev[0].start_ns != c.ev[0].start_ns);
    trove_events_free(&a);
    trove_events_free(&b);
    trove_events_free(&c);
}

/* A shorter run is a prefix of a longer one, and gen appends to what is already there. */
static void test_prefix_and_append(void)
{
    struct trove_gen_options o;
    struct trove_events a, b;
    trove_gen_defaults(&o);
    o.events = 40000;
    CHECK_EQ_INT(gen(&o, &a, NULL), TROVE_OK);
    for (uint64_t n = 1; n <= 40000; n *= 7) {
        o.events = n;
        CHECK_EQ_INT(gen(&o, &b, NULL), TROVE_OK);
        CHECK_EQ_INT(b.len, n);
        CHECK(b.len == n && memcmp(a.ev, b.ev, n * sizeof *b.ev) == 0);
        trove_events_free(&b);
    }
    /* Append: 3 events already present stay, the generated ones follow. */
    memset(&b, 0, sizeof b);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(trove_events_push(&b, &a.ev[39990 + i]), TROVE_OK);
    o.events = 1000;
    CHECK_EQ_INT(trove_gen(&o, &b, NULL), TROVE_OK);
    CHECK_EQ_INT(b.len, 1003);
    CHECK(memcmp(b.ev, &a.ev[39990], 3 * sizeof *b.ev) == 0);
    CHECK(memcmp(b.ev + 3, a.ev, 1000 * sizeof *b.ev) == 0);
    trove_events_free(&a);
    trove_events_free(&b);
}

/* The generator a few events at a time hands out trove_gen's array, byte for byte, whatever
 * the calls' sizes (the rounds of its horizon are its own), and its names after the last
 * event are trove_gen's; the names so far are those of the events so far. */
static void test_incremental(void)
{
    static const size_t caps[] = {1, 7, 2048, 65536, 300000};
    struct trove_gen_options o;
    struct trove_events a;
    struct trove_names *an = NULL;

    trove_gen_defaults(&o);
    o.events = 250000;
    o.processes = 3;
    o.threads = 5;
    o.tick_ns = 1;
    CHECK_EQ_INT(gen(&o, &a, &an), TROVE_OK);
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        struct trove_gen *g = NULL;
        struct trove_event *buf = calloc(caps[c], sizeof *buf);
        struct trove_names *bn = NULL;
        uint64_t at = 0;
        size_t n = 0;
        int same = 1;

        CHECK(buf != NULL);
        CHECK_EQ_INT(trove_gen_open(&o, &g), TROVE_OK);
        CHECK_EQ_INT(trove_names_new(&bn), TROVE_OK);
        do {
            CHECK_EQ_INT(trove_gen_next(g, buf, caps[c], &n), TROVE_OK);
            CHECK(n <= caps[c] && at + n <= a.len);
            if (at + n <= a.len && memcmp(buf, a.ev + at, n * sizeof *buf) != 0)
                same = 0;
            at += n;
            CHECK_EQ_INT(trove_gen_count(g), at);
        } while (n > 0 && at <= a.len);
        CHECK(same);
        CHECK_EQ_INT(at, a.len);
        CHECK_EQ_INT(trove_gen_next(g, buf, caps[c], &n), TROVE_OK); /* past the end: none */
        CHECK_EQ_INT(n, 0);
        CHECK_EQ_INT(trove_gen_names(g, bn), TROVE_OK);
        CHECK(test_same_names(an, bn));
        trove_names_free(bn);
        trove_gen_free(g);
        free(buf);
    }
    {   /* after 10 events, the names of those 10 */
        struct trove_gen *g = NULL;
        struct trove_event buf[10];
        struct trove_names *want = NULL, *got = NULL;
        struct trove_events ten;
        size_t n;
        o.events = 10;
        CHECK_EQ_INT(gen(&o, &ten, &want), TROVE_OK);
        o.events = 250000;
        CHECK_EQ_INT(trove_gen_open(&o, &g), TROVE_OK);
        CHECK_EQ_INT(trove_gen_next(g, buf, 10, &n), TROVE_OK);
        CHECK_EQ_INT(n, 10);
        CHECK_EQ_INT(trove_names_new(&got), TROVE_OK);
        CHECK_EQ_INT(trove_gen_names(g, got), TROVE_OK);
        CHECK(test_same_names(want, got));
        CHECK(memcmp(buf, ten.ev, sizeof buf) == 0);
        trove_names_free(want);
        trove_names_free(got);
        trove_events_free(&ten);
        trove_gen_free(g);
    }
    {   /* bad arguments */
        struct trove_gen *g = (struct trove_gen *)&o;
        size_t n = 5;
        o.names = 65537;
        CHECK_EQ_INT(trove_gen_open(&o, &g), TROVE_ERR_INVALID);
        CHECK(g == NULL);
        CHECK_EQ_INT(trove_gen_open(NULL, &g), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_gen_next(NULL, a.ev, 1, &n), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_gen_names(NULL, an), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_gen_count(NULL), 0);
        trove_gen_free(NULL);
    }
    trove_names_free(an);
    trove_events_free(&a);
}

struct open_zone {
    uint64_t start, end;
};

/* The shape of one run: order, nesting, field ranges, names. */
static void check_model(const struct trove_gen_options *o, const struct trove_events *ev,
                        const struct trove_names *nm)
{
    uint32_t nthreads = o->processes * o->threads;
    uint64_t *freq = calloc(o->names, sizeof *freq);
    uint64_t kinds[TROVE_KIND_COUNT_] = {0}, tid_seen = 0;
    struct open_zone(*stack)[16] = calloc(nthreads, sizeof *stack);
    uint32_t *pids = calloc(nthreads, sizeof *pids), *tids = calloc(nthreads, sizeof *tids);
    unsigned *sp = calloc(nthreads, sizeof *sp);
    size_t bad_order = 0, bad_nest = 0, bad_field = 0, bad_thread = 0, used_ids = 0;
    uint64_t coarse = o->tick_ns > 1; /* a zone may round to 0 ns, a child onto its parent */
    double gap;

    if (!freq || !stack || !pids || !tids || !sp) {
        test_fail(__FILE__, __LINE__, "out of memory");
        goto out;
    }
    CHECK_EQ_INT(ev->len, o->events);
    for (size_t i = 0; i < ev->len; i++) {
        const struct trove_event *e = &ev->ev[i];
        size_t t;

        if (i && e->start_ns < ev->ev[i - 1].start_ns)
            bad_order++;
        if (e->pad != 0 || e->name_id >= o->names || e->kind >= TROVE_KIND_COUNT_ ||
            e->kind == TROVE_KIND_ASYNC_INSTANT || e->depth > 11 ||
            (e->kind == TROVE_KIND_INSTANT && (e->dur_ns != 0 || e->extra > 2)) ||
            (e->kind != TROVE_KIND_INSTANT && ((e->dur_ns == 0 && !coarse) || e->extra > 7)) ||
            e->start_ns % o->tick_ns != 0 || e->dur_ns % o->tick_ns != 0 ||
            (e->kind == TROVE_KIND_FRAME && e->depth != 0) ||
            (e->kind != TROVE_KIND_FRAME && e->kind != TROVE_KIND_ZONE && e->depth == 0) ||
            e->pid < 1000 || e->pid >= 40000 || e->tid < e->pid || e->tid >= e->pid + o->threads ||
            e->start_ns < 300000000000000ull || e->start_ns > 420000000000000ull)
            bad_field++;
        if (e->name_id < o->names)
            freq[e->name_id]++;
        if (e->kind < TROVE_KIND_COUNT_)
            kinds[e->kind]++;

        /* Find the thread's slot (first come), keep a stack of open zones on it. */
        for (t = 0; t < tid_seen; t++)
            if (pids[t] == e->pid && tids[t] == e->tid)
                break;
        if (t == tid_seen) {
            if (tid_seen == nthreads) {
                bad_thread++;
                continue;
            }
            pids[t] = e->pid;
            tids[t] = e->tid;
            tid_seen++;
        }
        /* The open zones deeper than this event must have ended by its start (they are
         * earlier siblings' subtrees); the one at depth - 1 is its parent. */
        if (e->depth > sp[t] || e->depth >= 16) {
            bad_nest++;
            sp[t] = 0;
            continue;
        }
        while (sp[t] > e->depth) {
            if (stack[t][sp[t] - 1].end > e->start_ns)
                bad_nest++;
            sp[t]--;
        }
        if (sp[t] > 0) {
            const struct open_zone *p = &stack[t][sp[t] - 1];
            /* A coarser clock rounds a child's start down onto its parent's. */
            if (!((coarse ? e->start_ns >= p->start : e->start_ns > p->start) &&
                  e->start_ns + e->dur_ns <= p->end))
                bad_nest++;
        }
        if (e->kind != TROVE_KIND_INSTANT) {
            stack[t][sp[t]].start = e->start_ns;
            stack[t][sp[t]].end = e->start_ns + e->dur_ns;
            sp[t]++;
        }
    }
    CHECK_EQ_INT(bad_order, 0);
    CHECK_EQ_INT(bad_nest, 0);
    CHECK_EQ_INT(bad_field, 0);
    CHECK_EQ_INT(bad_thread, 0);
    CHECK(tid_seen <= nthreads);
    if (ev->len >= 2000 * (size_t)nthreads)
        CHECK_EQ_INT(tid_seen, nthreads); /* every thread shows up in a long enough run */

    /* Mean start gap: docs/gen.md promises 1..10 us at the default thread count. */
    gap = (double)(ev->ev[ev->len - 1].start_ns - ev->ev[0].start_ns) / (double)(ev->len - 1);
    if (nthreads == 32) {
        CHECK(gap >= 1000.0 && gap <= 10000.0);
        if (!(gap >= 1000.0 && gap <= 10000.0))
            fprintf(stderr, "mean start gap %.0f ns\n", gap);
    }

    /* Kinds: mostly zones; instants, locks and frames all present; no async instants. */
    CHECK(kinds[TROVE_KIND_ZONE] > ev->len * 8 / 10);
    CHECK(kinds[TROVE_KIND_INSTANT] > 0);
    CHECK(kinds[TROVE_KIND_LOCK] > 0);
    CHECK(kinds[TROVE_KIND_FRAME] > 0);
    CHECK_EQ_INT(kinds[TROVE_KIND_ASYNC_INSTANT], 0);

    /* Zipf: id 0 is the most frequent; with s = 1, id 0 is about twice id 1. */
    for (uint32_t id = 1; o->zipf_s > 0 && id < o->names; id++)
        if (freq[id] > freq[0])
            bad_field++;
    CHECK_EQ_INT(bad_field, 0);
    if (o->zipf_s == 1.0 && o->names > 1) {
        double r = (double)freq[0] / (double)freq[1];
        CHECK(r > 1.6 && r < 2.5);
    }

    /* Names: exactly the ids used, "zone_<id>"; every thread and process named. */
    if (nm) {
        size_t n_event = 0, n_thread = 0, n_process = 0, bad = 0;
        for (uint32_t id = 0; id < o->names; id++) {
            const char *s = trove_names_get(nm, TROVE_NAME_EVENT, id, 0, NULL);
            char want[32];
            used_ids += freq[id] > 0;
            snprintf(want, sizeof want, "zone_%u", id);
            if ((freq[id] > 0) != (s != NULL) || (s && strcmp(s, want) != 0))
                bad++;
        }
        for (size_t i = 0; i < trove_names_count(nm); i++) {
            struct trove_name_entry en;
            trove_names_entry(nm, i, &en);
            n_event += en.type == TROVE_NAME_EVENT;
            n_thread += en.type == TROVE_NAME_THREAD;
            n_process += en.type == TROVE_NAME_PROCESS;
        }
        for (uint32_t t = 0; t < tid_seen; t++) {
            const char *s = trove_names_get(nm, TROVE_NAME_THREAD, pids[t], tids[t], NULL);
            if (!s || (tids[t] == pids[t] ? strcmp(s, "main") != 0 : strncmp(s, "worker-", 7) != 0))
                bad++;
            if (!trove_names_get(nm, TROVE_NAME_PROCESS, pids[t], 0, NULL))
                bad++;
        }
        CHECK_EQ_INT(bad, 0);
        CHECK_EQ_INT(n_event, used_ids);
        CHECK_EQ_INT(n_thread, tid_seen); /* only threads that have events are named */
        for (uint32_t t = 0; t < tid_seen; t++)
            for (uint32_t u = 0; u < t; u++)
                if (pids[u] == pids[t]) {
                    n_process++; /* count each pid once: cancel repeats below */
                    break;
                }
        CHECK_EQ_INT(n_process, tid_seen);
    }
out:
    free(freq);
    free(stack);
    free(pids);
    free(tids);
    free(sp);
}

/* The defaults (a 1 us clock) and the same model on a 1 ns clock. */
static void test_model_default(void)
{
    for (int fine = 0; fine < 2; fine++) {
        struct trove_gen_options o;
        struct trove_events ev;
        struct trove_names *nm = NULL;
        trove_gen_defaults(&o);
        o.events = 200000;
        if (fine)
            o.tick_ns = 1;
        CHECK_EQ_INT(gen(&o, &ev, &nm), TROVE_OK);
        check_model(&o, &ev, nm);
        trove_events_free(&ev);
        trove_names_free(nm);
    }
}

static void test_model_shapes(void)
{
    static const struct {
        uint32_t p, t, names;
        double s;
        uint64_t n;
    } cases[] = {
        {1, 1, 1, 1.0, 5000}, {1, 3, 100, TROVE_GEN_UNIFORM, 20000}, {2, 2, 5000, 1.3, 20000},
        {16, 16, 65536, 1.0, 30000}, {4, 8, 7, 2.0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct trove_gen_options o;
        struct trove_events ev;
        struct trove_names *nm = NULL;
        trove_gen_defaults(&o);
        o.processes = cases[i].p;
        o.threads = cases[i].t;
        o.names = cases[i].names;
        o.zipf_s = cases[i].s;
        o.events = cases[i].n;
        o.seed = 100 + i;
        o.tick_ns = i % 2 ? 1 : 1000;
        CHECK_EQ_INT(gen(&o, &ev, &nm), TROVE_OK);
        CHECK_EQ_INT(ev.len, o.events);
        if (o.events >= 5000 && o.processes * o.threads <= 256)
            check_model(&o, &ev, nm);
        for (size_t k = 0; k < ev.len; k++)
            if (ev.ev[k].name_id >= o.names || (k && ev.ev[k].start_ns < ev.ev[k - 1].start_ns)) {
                test_fail(__FILE__, __LINE__, "name id or order");
                break;
            }
        trove_events_free(&ev);
        trove_names_free(nm);
    }
}

/*
 * Call trees repeat: a program runs the same code again and again (in the Chrome sample,
 * 98 % of a thread's top-level trees repeat an earlier one name for name). Split each
 * thread's events into top-level trees (a depth-0 event starts one; a thread's events are
 * in preorder) and count the trees whose name sequence the thread has run before, and
 * among those, how many ran with exactly the same durations (they should not: each run
 * draws its own times around the call site's).
 */
static uint64_t fnv(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        h = (h ^ (v & 0xff)) * 0x100000001b3ULL;
    return h;
}

static void test_call_trees(void)
{
    enum { THREADS = 32, MAXT = 20000 };
    struct trove_gen_options o;
    struct trove_events ev = {0};
    static uint64_t names_h[THREADS][MAXT], durs_h[THREADS][MAXT];
    uint32_t ntrees[THREADS] = {0}, tids[THREADS] = {0}, nt = 0;
    uint64_t cur_n[THREADS], cur_d[THREADS];
    size_t trees = 0, repeats = 0, same_durations = 0;

    trove_gen_defaults(&o);
    o.events = 300000;
    o.tick_ns = 1; /* at 1 ns a repeated tree's durations never repeat */
    CHECK_EQ_INT(gen(&o, &ev, NULL), TROVE_OK);
    for (size_t i = 0; i < ev.len; i++) {
        const struct trove_event *e = &ev.ev[i];
        uint32_t t = 0;
        while (t < nt && tids[t] != e->tid)
            t++;
        if (t == nt) {
            if (nt == THREADS)
                break;
            tids[nt++] = e->tid;
        }
        if (e->depth == 0) {
            if (ntrees[t] + 1 >= MAXT)
                continue;
            ntrees[t]++;
            cur_n[t] = cur_d[t] = 0xcbf29ce484222325ULL;
        }
        if (ntrees[t] == 0)
            continue;
        cur_n[t] = fnv(cur_n[t], e->name_id);
        cur_d[t] = fnv(cur_d[t], e->dur_ns);
        names_h[t][ntrees[t] - 1] = cur_n[t];
        durs_h[t][ntrees[t] - 1] = cur_d[t];
    }
    for (uint32_t t = 0; t < nt; t++) {
        for (uint32_t k = 0; k < ntrees[t]; k++) {
            int seen = 0, dup = 0;
            for (uint32_t j = 0; j < k && !dup; j++)
                if (names_h[t][j] == names_h[t][k]) {
                    seen = 1;
                    dup = durs_h[t][j] == durs_h[t][k];
                }
            trees++;
            repeats += seen;
            same_durations += dup;
        }
    }
    /* P_NEW_TREE is 0.12: about 88 % repeat; the first tree of every thread cannot. */
    CHECK(trees > 1000);
    CHECK(repeats * 100 > trees * 75);
    CHECK(repeats * 100 < trees * 95);
    CHECK(same_durations * 100 < repeats); /* single-zone trees may collide, rarely */
    trove_events_free(&ev);
}

/* --tick: every time a multiple of the tick, order and nesting kept, same shape otherwise. */
static void test_tick(void)
{
    struct trove_gen_options o;
    struct trove_events a = {0}, b = {0};
    size_t bad = 0, coarser = 0;

    trove_gen_defaults(&o);
    CHECK_EQ_INT(o.tick_ns, 1000); /* the Chrome sample's clock (docs/gen.md) */
    o.events = 20000;
    o.tick_ns = 1;
    CHECK_EQ_INT(gen(&o, &a, NULL), TROVE_OK);
    o.tick_ns = 1000;
    CHECK_EQ_INT(gen(&o, &b, NULL), TROVE_OK);
    CHECK_EQ_INT(b.len, a.len);
    for (size_t i = 0; i < b.len && i < a.len; i++) {
        const struct trove_event *x = &a.ev[i], *y = &b.ev[i];
        bad += y->start_ns % 1000 != 0 || y->dur_ns % 1000 != 0 || y->start_ns > x->start_ns ||
               x->start_ns - y->start_ns >= 1000 || y->name_id != x->name_id || y->tid != x->tid ||
               (i > 0 && y->start_ns < b.ev[i - 1].start_ns);
        coarser += y->start_ns != x->start_ns;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(coarser > b.len / 2);
    o.tick_ns = 1000000001;
    CHECK_EQ_INT(trove_gen(&o, &b, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(b.len, a.len); /* unchanged */
    trove_events_free(&a);
    trove_events_free(&b);
}

/* --slow: the options that slow zone_1 (and zone_4, checked the same way) by `factor`. */
enum { SLOW_K = 1, SLOW_K2 = 4, SLOW_THREADS = 32 };

static void slow_options(struct trove_gen_options *o, struct trove_gen_slow *s, double factor)
{
    trove_gen_defaults(o);
    o->events = 200000;
    o->tick_ns = 1; /* no rounding: every duration exact */
    s[0].name_id = SLOW_K;
    s[0].factor = factor;
    s[1].name_id = SLOW_K2;
    s[1].factor = factor;
    o->slow = s;
    o->nslow = 2;
}

/*
 * Compare a run slowed by `factor` (b) with the same options without --slow (a), thread by
 * thread over the complete call trees both runs have (the cut at opt->events is in time, and
 * the slowed run's threads reach less far). The same events in the same order on each
 * thread: name, kind, depth, extra, pid, tid. Durations, bottom-up: a zone's duration before
 * slowing is a's plus what its children grew by; a slowed zone's is then
 * pre + (uint64_t)((factor - 1) * pre) at factor >= 1, and below 1
 * pre - (uint64_t)((1 - factor) * pre) but never ending before its last child; any other
 * zone keeps pre, so a zone with no slowed descendant keeps a's duration exactly. Instants
 * stay 0 ns. At factor >= 1 no event starts earlier than in a, and none is ever reordered.
 */
static void check_slowed(const struct trove_events *a, const struct trove_events *b, double factor)
{
    enum { MAXE = 200000 };
    static size_t ia[MAXE], ib[MAXE], parent[MAXE], last_child[MAXE];
    static int64_t kids[MAXE];
    size_t at_a[SLOW_THREADS + 1] = {0}, at_b[SLOW_THREADS + 1] = {0};
    uint32_t tids[SLOW_THREADS], nt = 0;
    size_t slowed = 0, grown = 0, same = 0, instants = 0, floored = 0, bad_shape = 0,
           bad_dur = 0, bad_start = 0;

    CHECK_EQ_INT(a->len, b->len);
    CHECK(a->len <= MAXE);
    if (a->len != b->len || a->len > MAXE)
        return;
    /* Each run's event indices grouped by thread (a counting sort, stable): thread t's are
     * ia[at_a[t] .. at_a[t + 1]). */
    for (int run = 0; run < 2; run++) {
        const struct trove_events *e = run ? b : a;
        size_t *at = run ? at_b : at_a, *idx = run ? ib : ia, fill[SLOW_THREADS];
        for (int pass = 0; pass < 2; pass++) {
            for (size_t i = 0; i < e->len; i++) {
                uint32_t t = 0;
                while (t < nt && tids[t] != e->ev[i].tid)
                    t++;
                if (t == nt) {
                    CHECK(nt < SLOW_THREADS);
                    if (nt == SLOW_THREADS)
                        return;
                    tids[nt++] = e->ev[i].tid;
                }
                if (pass == 0)
                    at[t + 1]++;
                else
                    idx[fill[t]++] = i;
            }
            for (uint32_t t = 0; pass == 0 && t < SLOW_THREADS; t++)
                fill[t] = at[t + 1] += at[t];
            for (uint32_t t = 0; pass == 0 && t < SLOW_THREADS; t++)
                fill[t] = at[t];
        }
    }
    for (uint32_t t = 0; t < nt; t++) {
        const size_t *xa = ia + at_a[t], *xb = ib + at_b[t];
        size_t na = at_a[t + 1] - at_a[t], nb = at_b[t + 1] - at_b[t];
        size_t n = na < nb ? na : nb, cut = 0, stack[16];

        /* The trees that start before the thread's last common top-level zone are whole. */
        for (size_t k = 0; k < n; k++)
            if (a->ev[xa[k]].depth == 0)
                cut = k;
        for (size_t k = 0; k < n; k++) {
            const struct trove_event *x = &a->ev[xa[k]], *y = &b->ev[xb[k]];
            bad_shape += x->name_id != y->name_id || x->kind != y->kind || x->depth != y->depth ||
                         x->extra != y->extra || x->pid != y->pid || x->tid != y->tid;
            if (factor >= 1.0 && k > 0)
                bad_start += y->start_ns < x->start_ns ||
                             y->start_ns - x->start_ns <
                                 b->ev[xb[k - 1]].start_ns - a->ev[xa[k - 1]].start_ns;
        }
        /* Each event's parent (the last event one level up), then durations bottom-up. */
        for (size_t k = 0; k < cut; k++) {
            unsigned d = b->ev[xb[k]].depth;
            CHECK(d < 16);
            if (d >= 16)
                return;
            stack[d] = k;
            parent[k] = d ? stack[d - 1] : SIZE_MAX;
            last_child[k] = SIZE_MAX;
            kids[k] = 0;
            if (d)
                last_child[stack[d - 1]] = k;
        }
        for (size_t k = cut; k-- > 0;) {
            const struct trove_event *x = &a->ev[xa[k]], *y = &b->ev[xb[k]];
            uint64_t pre = (uint64_t)((int64_t)x->dur_ns + kids[k]), want = pre;
            if (x->kind == TROVE_KIND_INSTANT) {
                bad_dur += x->dur_ns != 0;
                instants++;
            } else if (x->name_id == SLOW_K || x->name_id == SLOW_K2) {
                if (factor >= 1.0) {
                    double add = (factor - 1.0) * (double)pre;
                    want = pre + (add > 1e12 ? (uint64_t)1e12 : (uint64_t)add);
                } else {
                    uint64_t floor = 0;
                    if (last_child[k] != SIZE_MAX) {
                        const struct trove_event *c = &b->ev[xb[last_child[k]]];
                        floor = c->start_ns + c->dur_ns - y->start_ns;
                    }
                    want = pre - (uint64_t)((1.0 - factor) * (double)pre);
                    if (want < floor) {
                        want = floor;
                        floored++;
                    }
                }
                slowed++;
            } else {
                grown += kids[k] != 0;
                same += kids[k] == 0 && y->dur_ns == x->dur_ns;
            }
            bad_dur += y->dur_ns != want;
            if (parent[k] != SIZE_MAX)
                kids[parent[k]] += (int64_t)y->dur_ns - (int64_t)x->dur_ns;
        }
    }
    CHECK_EQ_INT(nt, SLOW_THREADS);
    CHECK_EQ_INT(bad_shape, 0);
    CHECK_EQ_INT(bad_start, 0);
    CHECK_EQ_INT(bad_dur, 0);
    /* Enough of each kind of event for the checks above to mean something. */
    CHECK(slowed > 5000);
    CHECK(grown > 1000);
    CHECK(same > 50000);
    CHECK(instants > 1000);
    if (factor < 1.0)
        CHECK(floored > 0);
}

static void test_slow(void)
{
    static const double factors[] = {1.3, 0.5, 1000, 0.01};
    struct trove_gen_options o;
    struct trove_gen_slow s[2];
    struct trove_events a, b;

    slow_options(&o, s, 1.0);
    o.nslow = 0;
    CHECK_EQ_INT(gen(&o, &a, NULL), TROVE_OK);
    for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++) {
        slow_options(&o, s, factors[f]);
        CHECK_EQ_INT(gen(&o, &b, NULL), TROVE_OK);
        check_slowed(&a, &b, factors[f]);
        trove_events_free(&b);
    }
    trove_events_free(&a);
}

/* Factor 1 and no --slow give the same bytes; the list is copied by trove_gen_open, not
 * kept; a bad list is TROVE_ERR_INVALID and leaves the events as they were. */
static void test_slow_edges(void)
{
    struct trove_gen_options o, bad;
    struct trove_gen_slow s[TROVE_GEN_MAX_SLOW + 1];
    struct trove_events a, b, c = {0};
    struct trove_gen *g = NULL;
    size_t n = 0;

    slow_options(&o, s, 1.0);
    o.tick_ns = 0; /* the default clock */
    CHECK_EQ_INT(gen(&o, &b, NULL), TROVE_OK);
    o.nslow = 0;
    CHECK_EQ_INT(gen(&o, &a, NULL), TROVE_OK);
    CHECK(a.len == b.len && !memcmp(a.ev, b.ev, a.len * sizeof *a.ev));
    trove_events_free(&b);

    slow_options(&o, s, 1.3);
    CHECK_EQ_INT(gen(&o, &b, NULL), TROVE_OK);
    CHECK(memcmp(a.ev, b.ev, a.len * sizeof *a.ev) != 0);
    CHECK_EQ_INT(trove_gen_open(&o, &g), TROVE_OK);
    memset(s, 0, sizeof s); /* trove_gen_open made its own copy */
    CHECK_EQ_INT(trove_events_reserve(&c, b.len), TROVE_OK);
    CHECK_EQ_INT(trove_gen_next(g, c.ev, b.len, &n), TROVE_OK);
    CHECK(n == b.len && !memcmp(c.ev, b.ev, n * sizeof *b.ev));
    trove_gen_free(g);
    trove_events_free(&c);
    trove_events_free(&a);

    slow_options(&o, s, 1.3);
    o.events = 10;
    bad = o, bad.slow = NULL;
    CHECK_EQ_INT(trove_gen(&bad, &b, NULL), TROVE_ERR_INVALID);
    bad = o, s[1].name_id = SLOW_K; /* twice */
    CHECK_EQ_INT(trove_gen(&bad, &b, NULL), TROVE_ERR_INVALID);
    bad = o, s[1].name_id = 65536;
    CHECK_EQ_INT(trove_gen(&bad, &b, NULL), TROVE_ERR_INVALID);
    bad = o, bad.names = 4, s[1].name_id = SLOW_K2; /* zone_4 is not among 4 names */
    CHECK_EQ_INT(trove_gen(&bad, &b, NULL), TROVE_ERR_INVALID);
    bad = o, s[1].factor = 0;
    CHECK_EQ_INT(trove_gen(&bad, &b, NULL), TROVE_ERR_INVALID);
    s[1].factor = 1000.5;
    CHECK_EQ_INT(trove_gen(&bad, &b, NULL), TROVE_ERR_INVALID);
    s[1].factor = NAN;
    CHECK_EQ_INT(trove_gen(&bad, &b, NULL), TROVE_ERR_INVALID);
    s[1].factor = -1;
    CHECK_EQ_INT(trove_gen(&bad, &b, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(b.len, 200000); /* unchanged */
    s[1].factor = 1000;
    CHECK_EQ_INT(trove_gen(&bad, &b, NULL), TROVE_OK);
    CHECK_EQ_INT(b.len, 200010);
    for (uint32_t i = 0; i <= TROVE_GEN_MAX_SLOW; i++)
        s[i].name_id = i, s[i].factor = 2;
    bad = o, bad.nslow = TROVE_GEN_MAX_SLOW;
    CHECK_EQ_INT(trove_gen(&bad, &b, NULL), TROVE_OK);
    bad.nslow = TROVE_GEN_MAX_SLOW + 1;
    CHECK_EQ_INT(trove_gen(&bad, &b, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_gen_open(&bad, &g), TROVE_ERR_INVALID);
    CHECK(g == NULL);
    trove_events_free(&b);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_defaults);
    RUN(test_invalid);
    RUN(test_zeroed);
    RUN(test_determinism);
    RUN(test_prefix_and_append);
    RUN(test_incremental);
    RUN(test_model_default);
    RUN(test_model_shapes);
    RUN(test_call_trees);
    RUN(test_tick);
    RUN(test_slow);
    RUN(test_slow_edges);
    return test_done();
}
