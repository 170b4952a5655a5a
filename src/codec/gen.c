/*
 * gen.c: trove gen, the synthetic capture model (docs/gen.md has the reasoning for every
 * constant below).
 *
 * The model is a profiler capture of P processes x T threads. Each thread is an
 * independent timeline: idle gap, top-level zone (a call tree), idle gap, ... Programs
 * run the same code again and again, so a thread keeps a library of call trees: a
 * top-level zone runs a tree it knows (Zipf by age) or, now and then, a new one. A new
 * tree is built bottom-up: each zone draws a Zipf name id, a call-site median self time
 * (log-normal) and a number of children (each further child with a probability that falls
 * with depth). A run of a tree draws each zone's self time around its call site's median;
 * the children are laid out one after another inside it, separated by slices of the
 * parent's self time and a small instrumentation gap, and the parent's duration is
 * whatever that adds up to. kind, extra, pid and tid follow the rules in docs/gen.md.
 *
 * Determinism: every thread has its own xoshiro256** stream seeded from (seed, thread
 * index), so a thread's events do not depend on how far the other threads were generated.
 * Generation runs in rounds (trove_gen_open / _next): each raises a time horizon, runs
 * every thread up to it, and merges out the events that start before it (by start, ties by
 * thread index); since every event starting before the horizon exists by then, the merge
 * is one fixed sequence whatever the horizon steps were, and opt->events is where it is
 * cut. On one thread the starts strictly increase (preorder of the call tree; every child
 * starts after a gap of at least GAP_MIN_NS), so the merge order is total. A round aims at
 * GEN_ROUND_EVENTS events, and a thread drops what it handed out before the next, so
 * memory is the threads' call-tree libraries and about a round of events, whatever
 * opt->events is (trove_gen, which hands every event to one array, is that loop).
 *
 * A slowed name (opt->slow, `trove gen --slow`) changes no draw: run_tree stretches or
 * shrinks such a zone's last slice of self time once its duration is known, so every thread
 * draws the same stream as without it and only the times after a slowed zone move.
 *
 * Floating point (log, exp, sqrt, cos) only shapes the distributions; results are
 * identical across runs of one build. A different libm may change the last ulp of a
 * draw and so the bytes; the model's statistics do not depend on it.
 */
#include "trove/gen.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the model's constants (docs/gen.md, "Defaults and why") -------------------------- */

#define GEN_DEFAULT_EVENTS 1034313u
#define GEN_MAX_PROCESSES 4096u
#define GEN_MAX_THREADS 4096u
#define GEN_MAX_TOTAL_THREADS 65536u
#define GEN_MAX_NAMES 65536u

#define BOOT_BASE_NS 300000000000000.0   /* 3.0e14 ns: 3.5 days of uptime ... */
#define BOOT_SPAN_NS 100000000000000.0   /* ... plus up to 1.16 days more */
#define THREAD_OFFSET_NS 2000000u        /* threads begin within 2 ms of each other */

#define SELF_MEDIAN_NS 5000.0            /* a zone's own time: median 5 us ... */
#define SELF_SIGMA 1.2                   /* ... mean 10.3 us, 1% above 81 us */
#define LOCK_MEDIAN_NS 3000.0            /* a lock wait: median 3 us, long tail */
#define LOCK_SIGMA 1.6
#define JITTER_SIGMA 0.51                /* one call site's spread, of SELF_SIGMA's total */

#define P_NEW_TREE 0.12                  /* a top-level zone runs a call tree not seen before */
#define TREE_ZIPF_S 1.0                  /* popularity of a thread's known call trees */
#define MAX_TREES 1024                   /* call trees a thread remembers */
#define IDLE_MEDIAN_NS 400000.0          /* between top-level zones: median 400 us */
#define IDLE_SIGMA 2.0
#define BUSY_SIGMA 1.0                   /* per-thread scale of its idle gaps */
#define GAP_MIN_NS 20u                   /* instrumentation gap before a child: 20..119 ns */
#define GAP_SPAN_NS 100u

#define MAX_DEPTH 11                     /* depths 0..11: twelve levels */
#define MAX_CHILDREN 24
#define CHILD_P0 0.80                    /* P(one more child) at depth 0 ... */
#define CHILD_DECAY 0.78                 /* ... times 0.78 per level */

#define P_INSTANT 0.04                   /* a child is an instant (dur 0) */
#define P_LOCK 0.03                      /* a child is a lock wait */
#define P_SCOPE_PROCESS 0.08             /* instant scope: thread 90%, process 8%, global 2% */
#define P_SCOPE_GLOBAL 0.02
#define CATEGORIES 8                     /* extra of a zone: category 0..7 from its name */
#define SLOW_MAX_ADD_NS 1e12             /* --slow adds at most 1000 s to one zone */

/* ---- PRNG: splitmix64 to seed, xoshiro256** to draw ------------------------------------ */

struct rng {
    uint64_t s[4];
    double spare;
    int has_spare;
};

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
    r->has_spare = 0;
    r->spare = 0;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1). */
static double rng_unit(struct rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform in (0, 1]: safe for log(). */
static double rng_unit_open(struct rng *r) { return (double)((rng_next(r) >> 11) + 1) * 0x1.0p-53; }

/* Uniform in [0, n), n > 0, without modulo bias (rejects the top partial range). */
static uint64_t rng_below(struct rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;
    do
        x = rng_next(r);
    while (x >= limit);
    return x % n;
}

/* Standard normal by Box-Muller; the second value of each pair is kept for the next call. */
static double rng_normal(struct rng *r)
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u1 = rng_unit_open(r), u2 = rng_unit(r);
    double rad = sqrt(-2.0 * log(u1));
    double th = 6.283185307179586 * u2;
    r->spare = rad * sin(th);
    r->has_spare = 1;
    return rad * cos(th);
}

/* Log-normal nanoseconds with the given median and sigma, at least 1. */
static uint64_t rng_lognormal_ns(struct rng *r, double median_ns, double sigma)
{
    double v = median_ns * exp(sigma * rng_normal(r));
    if (v > 1e12) /* 1000 s: far past anything the model means; keeps the cast defined */
        v = 1e12;
    return v < 1.0 ? 1 : (uint64_t)(v + 0.5);
}

/* ---- Zipf over [0, n): precomputed CDF, binary search ---------------------------------- */

struct zipf {
    double *cdf; /* cdf[i] = P(id <= i); cdf[n-1] = 1 */
    uint32_t n;
};

static int zipf_init(struct zipf *z, uint32_t n, double s)
{
    double sum = 0;
    z->n = n;
    z->cdf = trove__malloc((size_t)n * sizeof *z->cdf);
    if (!z->cdf)
        return TROVE_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        sum += pow((double)i + 1.0, -s);
        z->cdf[i] = sum;
    }
    for (uint32_t i = 0; i < n; i++)
        z->cdf[i] /= sum;
    z->cdf[n - 1] = 1.0;
    return TROVE_OK;
}

static uint32_t zipf_draw(const struct zipf *z, struct rng *r)
{
    double u = rng_unit(r);
    uint32_t lo = 0, hi = z->n - 1; /* the first i with cdf[i] > u; cdf[n-1] = 1 > u */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (z->cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The category of a name (the extra byte of zones, frames and locks): a fixed hash. */
static uint8_t name_category(uint32_t name_id)
{
    uint32_t h = name_id * 0x9e3779b1u;
    h ^= h >> 15;
    return (uint8_t)(h % CATEGORIES);
}

/* ---- one thread's timeline ------------------------------------------------------------- */

struct thread_gen {
    struct rng rng;
    uint32_t pid, tid;
    int main_thread;     /* thread 0 of its process: top-level zones are frames */
    double idle_median;  /* IDLE_MEDIAN_NS scaled by this thread's busyness */
    uint64_t cursor;     /* where the next top-level zone starts */
    struct trove_event *ev;
    size_t n, cap;
    size_t head;         /* merge position */
    size_t used;         /* events of this thread in the output */
    struct tnode *nodes; /* the thread's known call trees, each in preorder, back to back */
    size_t nnodes, nodes_cap;
    uint32_t tree_start[MAX_TREES + 1]; /* tree i is nodes[tree_start[i] .. tree_start[i+1]) */
    uint32_t ntrees;
};

/* One zone of a call tree: what stays the same every time the tree runs. */
struct tnode {
    uint64_t base_ns;    /* median self time (zones, frames) or wait (locks); 0 for instants */
    uint32_t name_id;
    uint8_t kind, extra, depth, nchild;
};

struct model {
    struct zipf zipf;
    struct zipf trees;   /* Zipf over a thread's known trees, by the order it learned them */
    double child_p[MAX_DEPTH + 1];
    uint8_t *slow_of;    /* per name id: 0, or 1 + its index in slow_factor; NULL: none */
    double slow_factor[TROVE_GEN_MAX_SLOW];
};

static int push(struct thread_gen *t, const struct trove_event *e)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        struct trove_event *p = trove__realloc(t->ev, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        t->ev = p;
        t->cap = cap;
    }
    t->ev[t->n++] = *e;
    return TROVE_OK;
}

static int push_node(struct thread_gen *t, const struct tnode *n)
{
    if (t->nnodes == t->nodes_cap) {
        size_t cap = t->nodes_cap ? t->nodes_cap * 2 : 1024;
        struct tnode *p = trove__realloc(t->nodes, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        t->nodes = p;
        t->nodes_cap = cap;
    }
    t->nodes[t->nnodes++] = *n;
    return TROVE_OK;
}

/*
 * Append a new call tree rooted at a zone of `kind` at `depth` to t->nodes, in preorder:
 * names, kinds, shape and each zone's median self time, everything that repeats when the
 * program runs the same code again. Recursion depth is bounded by MAX_DEPTH.
 */
static int build_tree(const struct model *m, struct thread_gen *t, unsigned depth, uint8_t kind)
{
    struct tnode n;
    size_t idx = t->nnodes;
    unsigned k = 0;
    int rc;

    assert(depth <= MAX_DEPTH);
    memset(&n, 0, sizeof n);
    n.kind = kind;
    n.depth = (uint8_t)depth;
    n.name_id = zipf_draw(&m->zipf, &t->rng);
    if (kind == TROVE_KIND_INSTANT) {
        double u = rng_unit(&t->rng);
        n.extra = u < P_SCOPE_GLOBAL ? TROVE_SCOPE_GLOBAL
                  : u < P_SCOPE_GLOBAL + P_SCOPE_PROCESS ? TROVE_SCOPE_PROCESS
                                                         : TROVE_SCOPE_THREAD;
    } else {
        n.extra = name_category(n.name_id);
    }
    /* The base takes the part of the spread that differs between call sites; each run
     * adds JITTER_SIGMA on top, so one run's durations have the total sigma. */
    if (kind == TROVE_KIND_LOCK)
        n.base_ns = rng_lognormal_ns(&t->rng, LOCK_MEDIAN_NS,
                                     sqrt(LOCK_SIGMA * LOCK_SIGMA - JITTER_SIGMA * JITTER_SIGMA));
    else if (kind != TROVE_KIND_INSTANT)
        n.base_ns = rng_lognormal_ns(&t->rng, SELF_MEDIAN_NS,
                                     sqrt(SELF_SIGMA * SELF_SIGMA - JITTER_SIGMA * JITTER_SIGMA));
    if ((rc = push_node(t, &n)) != TROVE_OK)
        return rc;
    if (kind == TROVE_KIND_INSTANT || kind == TROVE_KIND_LOCK || depth == MAX_DEPTH)
        return TROVE_OK;
    while (k < MAX_CHILDREN && rng_unit(&t->rng) < m->child_p[depth])
        k++;
    for (unsigned i = 0; i < k; i++) {
        double u = rng_unit(&t->rng);
        uint8_t ck = u < P_INSTANT ? TROVE_KIND_INSTANT
                     : u < P_INSTANT + P_LOCK ? TROVE_KIND_LOCK
                                              : TROVE_KIND_ZONE;
        if ((rc = build_tree(m, t, depth + 1, ck)) != TROVE_OK)
            return rc;
    }
    t->nodes[idx].nchild = (uint8_t)k;
    return TROVE_OK;
}

/*
 * The end of a zone from `start` to `end` whose name is slowed by `factor`, its last child
 * ending at `kids_end` (`start` if it has none): at factor >= 1 its last slice of self time
 * grows by (factor - 1) x its duration (at most SLOW_MAX_ADD_NS), below 1 it shrinks by
 * (1 - factor) x its duration but never past kids_end. Both round the change down to a ns.
 */
static uint64_t slow_end(uint64_t start, uint64_t kids_end, uint64_t end, double factor)
{
    double dur = (double)(end - start), d;

    assert(factor > 0 && factor <= 1000 && start <= kids_end && kids_end <= end);
    if (factor >= 1.0) {
        d = (factor - 1.0) * dur;
        return end + (d > SLOW_MAX_ADD_NS ? (uint64_t)SLOW_MAX_ADD_NS : (uint64_t)d);
    }
    d = (1.0 - factor) * dur; /* < dur, so the cast is defined */
    return (uint64_t)d > end - kids_end ? kids_end : end - (uint64_t)d;
}

/*
 * Run the call tree node t->nodes[*pos] (and its subtree) starting at `start`: emit its
 * events in preorder with this run's durations; *end_out gets its end, *pos moves past the
 * subtree. A zone's self time is cut into nchild + 1 slices at uniform random points; each
 * child follows a slice and a small instrumentation gap, and the last slice follows the
 * last child; a slowed name's last slice then stretches or shrinks (slow_end). Recursion
 * depth is bounded by MAX_DEPTH.
 */
static int run_tree(const struct model *m, struct thread_gen *t, size_t *pos, uint64_t start,
                    uint64_t *end_out)
{
    const struct tnode n = t->nodes[(*pos)++];
    struct trove_event e;
    size_t idx = t->n;
    uint64_t cursor = start, kids_end = start;
    int rc;

    memset(&e, 0, sizeof e);
    e.start_ns = start;
    e.pid = t->pid;
    e.tid = t->tid;
    e.kind = n.kind;
    e.depth = n.depth;
    e.extra = n.extra;
    e.name_id = n.name_id;
    if ((rc = push(t, &e)) != TROVE_OK)
        return rc;
    if (n.kind == TROVE_KIND_INSTANT) {
        *end_out = start;
        return TROVE_OK;
    }
    if (n.kind == TROVE_KIND_LOCK) {
        cursor = start + rng_lognormal_ns(&t->rng, (double)n.base_ns, JITTER_SIGMA);
    } else {
        uint64_t self = rng_lognormal_ns(&t->rng, (double)n.base_ns, JITTER_SIGMA);
        double w[MAX_CHILDREN + 1], wsum = 0, wacc = 0;
        uint64_t self_used = 0;

        /* Exponential weights: a uniform split of the self time into k + 1 pieces. */
        for (unsigned i = 0; i <= n.nchild; i++) {
            w[i] = -log(rng_unit_open(&t->rng));
            wsum += w[i];
        }
        for (unsigned i = 0; i < n.nchild; i++) {
            uint64_t upto, cend;
            wacc += w[i];
            upto = (uint64_t)((double)self * (wacc / wsum));
            if (upto > self)
                upto = self;
            cursor += upto - self_used + GAP_MIN_NS + rng_below(&t->rng, GAP_SPAN_NS);
            self_used = upto;
            if ((rc = run_tree(m, t, pos, cursor, &cend)) != TROVE_OK)
                return rc;
            cursor = cend;
        }
        kids_end = cursor;
        cursor += self - self_used;
    }
    if (m->slow_of && m->slow_of[n.name_id])
        cursor = slow_end(start, kids_end, cursor, m->slow_factor[m->slow_of[n.name_id] - 1]);
    t->ev[idx].dur_ns = cursor - start;
    *end_out = cursor;
    return TROVE_OK;
}

/*
 * Extend a thread's timeline until its next top-level zone starts at or after `horizon`.
 * Each top-level zone runs a call tree the thread knows (Zipf by the order it learned
 * them) or, with probability P_NEW_TREE, a new one, which it remembers while it knows
 * fewer than MAX_TREES.
 */
static int thread_run(const struct model *m, struct thread_gen *t, uint64_t horizon)
{
    while (t->cursor < horizon) {
        uint64_t end;
        size_t pos, mark = t->nnodes;
        int rc;

        if (t->ntrees == 0 || rng_unit(&t->rng) < P_NEW_TREE) {
            uint8_t kind = t->main_thread ? TROVE_KIND_FRAME : TROVE_KIND_ZONE;
            if ((rc = build_tree(m, t, 0, kind)) != TROVE_OK)
                return rc;
            pos = mark;
            if ((rc = run_tree(m, t, &pos, t->cursor, &end)) != TROVE_OK)
                return rc;
            if (t->ntrees < MAX_TREES)
                t->tree_start[++t->ntrees] = (uint32_t)t->nnodes;
            else
                t->nnodes = mark; /* run once, not remembered */
        } else {
            double u = rng_unit(&t->rng) * m->trees.cdf[t->ntrees - 1];
            uint32_t lo = 0, hi = t->ntrees - 1; /* the first tree with cdf > u */
            while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (m->trees.cdf[mid] > u)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            pos = t->tree_start[lo];
            if ((rc = run_tree(m, t, &pos, t->cursor, &end)) != TROVE_OK)
                return rc;
        }
        t->cursor = end + rng_lognormal_ns(&t->rng, t->idle_median, IDLE_SIGMA);
    }
    return TROVE_OK;
}

/* Events of t starting before h (starts strictly increase on a thread). */
static size_t count_before(const struct thread_gen *t, uint64_t h)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ev[mid].start_ns < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---- the merge: a binary min-heap of thread indices keyed by (head start, index) ------ */

static int heap_less(const struct thread_gen *th, uint32_t a, uint32_t b)
{
    uint64_t sa = th[a].ev[th[a].head].start_ns, sb = th[b].ev[th[b].head].start_ns;
    return sa < sb || (sa == sb && a < b);
}

static void heap_down(const struct thread_gen *th, uint32_t *heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, s = i;
        if (l < n && heap_less(th, heap[l], heap[s]))
            s = l;
        if (r < n && heap_less(th, heap[r], heap[s]))
            s = r;
        if (s == i)
            return;
        uint32_t tmp = heap[i];
        heap[i] = heap[s];
        heap[s] = tmp;
        i = s;
    }
}

/* ---- public API ------------------------------------------------------------------------ */

void trove_gen_defaults(struct trove_gen_options *opt)
{
    opt->seed = 1;
    opt->events = GEN_DEFAULT_EVENTS;
    opt->processes = 4;
    opt->threads = 8;
    opt->names = GEN_MAX_NAMES;
    opt->zipf_s = 1.0;
    opt->tick_ns = 1000;
    opt->slow = NULL;
    opt->nslow = 0;
}

static int set_names(struct trove_names *names, const struct thread_gen *th, uint32_t nthreads,
                     uint32_t threads_per_proc, const uint8_t *used, uint32_t nnames)
{
    char buf[48];
    int rc, len;

    for (uint32_t i = 0; i < nthreads; i += threads_per_proc) {
        size_t used_threads = 0;
        for (uint32_t k = 0; k < threads_per_proc; k++)
            used_threads += th[i + k].used;
        if (!used_threads)
            continue;
        len = snprintf(buf, sizeof buf, "proc-%u", i / threads_per_proc);
        if ((rc = trove_names_set(names, TROVE_NAME_PROCESS, th[i].pid, 0, buf, (size_t)len)))
            return rc;
    }
    for (uint32_t i = 0; i < nthreads; i++) {
        if (!th[i].used)
            continue;
        if (th[i].main_thread)
            len = snprintf(buf, sizeof buf, "main");
        else
            len = snprintf(buf, sizeof buf, "worker-%u", i % threads_per_proc);
        if ((rc = trove_names_set(names, TROVE_NAME_THREAD, th[i].pid, th[i].tid, buf,
                                  (size_t)len)))
            return rc;
    }
    for (uint32_t id = 0; id < nnames; id++) {
        if (!used[id])
            continue;
        len = snprintf(buf, sizeof buf, "zone_%u", id);
        if ((rc = trove_names_set(names, TROVE_NAME_EVENT, id, 0, buf, (size_t)len)))
            return rc;
    }
    return TROVE_OK;
}

/* ---- the generator: rounds of a raised horizon, merged as they go ------------------------ */

struct trove_gen {
    struct trove_gen_options opt;  /* normalized: every field its value */
    struct model m;
    struct thread_gen *th;
    uint32_t nthreads;
    uint32_t *heap;                /* threads with an event before the horizon not yet out */
    size_t heap_n;
    uint8_t *used;                 /* name ids of the events handed out */
    uint64_t first;                /* the earliest thread start */
    uint64_t horizon;              /* every event starting before it exists */
    uint64_t step;                 /* the last raise of the horizon */
    uint64_t before;               /* events starting before the horizon, all threads */
    uint64_t out;                  /* events handed out */
    int started;                   /* a round ran */
};

/* Check and normalize opt (a field left 0 is its default; TROVE_GEN_UNIFORM an exponent
 * of 0) into *norm. */
static int gen_normalize(const struct trove_gen_options *given, struct trove_gen_options *norm)
{
    struct trove_gen_options dflt;

    if (!given)
        return TROVE_ERR_INVALID;
    trove_gen_defaults(&dflt);
    *norm = *given;
    norm->seed = norm->seed ? norm->seed : dflt.seed;
    norm->events = norm->events ? norm->events : dflt.events;
    norm->processes = norm->processes ? norm->processes : dflt.processes;
    norm->threads = norm->threads ? norm->threads : dflt.threads;
    norm->names = norm->names ? norm->names : dflt.names;
    norm->zipf_s = norm->zipf_s == TROVE_GEN_UNIFORM ? 0.0
                   : norm->zipf_s == 0.0         ? dflt.zipf_s
                                                 : norm->zipf_s;
    norm->tick_ns = norm->tick_ns ? norm->tick_ns : dflt.tick_ns;
    if (norm->processes == 0 || norm->threads == 0 || norm->names == 0 ||
        norm->names > GEN_MAX_NAMES || norm->processes > GEN_MAX_PROCESSES ||
        norm->threads > GEN_MAX_THREADS ||
        (uint64_t)norm->processes * norm->threads > GEN_MAX_TOTAL_THREADS ||
        !(norm->zipf_s >= 0.0 && norm->zipf_s <= 10.0) || norm->tick_ns < 1 ||
        norm->tick_ns > 1000000000 || norm->nslow > TROVE_GEN_MAX_SLOW ||
        (norm->nslow && !norm->slow))
        return TROVE_ERR_INVALID;
    for (size_t i = 0; i < norm->nslow; i++) {
        if (norm->slow[i].name_id >= norm->names ||
            !(norm->slow[i].factor > 0.0 && norm->slow[i].factor <= 1000.0))
            return TROVE_ERR_INVALID;
        for (size_t k = 0; k < i; k++)
            if (norm->slow[k].name_id == norm->slow[i].name_id)
                return TROVE_ERR_INVALID;
    }
    return TROVE_OK;
}

void trove_gen_free(struct trove_gen *g)
{
    if (!g)
        return;
    for (uint32_t i = 0; g->th && i < g->nthreads; i++) {
        free(g->th[i].ev);
        free(g->th[i].nodes);
    }
    free(g->th);
    free(g->heap);
    free(g->used);
    free(g->m.zipf.cdf);
    free(g->m.trees.cdf);
    free(g->m.slow_of);
    free(g);
}

int trove_gen_open(const struct trove_gen_options *given, struct trove_gen **out)
{
    struct trove_gen *g = NULL;
    struct trove_gen_options *opt;
    struct rng top;
    uint32_t span, slot;
    int rc;

    if (!out)
        return TROVE_ERR_INVALID;
    *out = NULL;
    if (!(g = trove__calloc(1, sizeof *g)))
        return TROVE_ERR_NOMEM;
    opt = &g->opt;
    TROVE_TRY(rc, gen_normalize(given, opt));
    g->nthreads = opt->processes * opt->threads;
    TROVE_TRY(rc, zipf_init(&g->m.zipf, opt->names, opt->zipf_s));
    TROVE_TRY(rc, zipf_init(&g->m.trees, MAX_TREES, TREE_ZIPF_S));
    for (unsigned d = 0; d <= MAX_DEPTH; d++)
        g->m.child_p[d] = CHILD_P0 * pow(CHILD_DECAY, (double)d);
    g->th = trove__calloc(g->nthreads, sizeof *g->th);
    g->heap = trove__malloc(g->nthreads * sizeof *g->heap);
    g->used = trove__calloc(opt->names, 1);
    if (!g->th || !g->heap || !g->used) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    /* The slowed names, copied: the caller's list is not kept. */
    if (opt->nslow) {
        if (!(g->m.slow_of = trove__calloc(opt->names, 1))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        for (size_t i = 0; i < opt->nslow; i++) {
            g->m.slow_of[opt->slow[i].name_id] = (uint8_t)(i + 1);
            g->m.slow_factor[i] = opt->slow[i].factor;
        }
    }
    opt->slow = NULL; /* g->m holds the list now; the caller's is not kept */
    opt->nslow = 0;

    /* Processes: pids in [1000, 1000 + span), one slot each, so pid + T stays inside. */
    rng_seed(&top, opt->seed, 0);
    g->horizon = (uint64_t)(BOOT_BASE_NS + BOOT_SPAN_NS * rng_unit(&top));
    span = 39000;
    if ((uint64_t)opt->processes * (opt->threads + 1) * 2 > span)
        span = opt->processes * (opt->threads + 1) * 2;
    slot = span / opt->processes;
    g->first = UINT64_MAX;
    for (uint32_t p = 0; p < opt->processes; p++) {
        uint32_t pid = 1000 + p * slot + (uint32_t)rng_below(&top, slot - opt->threads);
        for (uint32_t k = 0; k < opt->threads; k++) {
            struct thread_gen *t = &g->th[p * opt->threads + k];
            rng_seed(&t->rng, opt->seed, 1 + (uint64_t)p * opt->threads + k);
            t->pid = pid;
            t->tid = pid + k;
            t->main_thread = k == 0;
            t->idle_median = IDLE_MEDIAN_NS * exp(BUSY_SIGMA * rng_normal(&t->rng));
            t->cursor = g->horizon + rng_below(&t->rng, THREAD_OFFSET_NS) +
                        rng_lognormal_ns(&t->rng, t->idle_median, IDLE_SIGMA);
            if (t->cursor < g->first)
                g->first = t->cursor;
        }
    }
    g->horizon = g->first;
    rc = TROVE_OK;
out:
    if (rc != TROVE_OK) {
        trove_gen_free(g);
        return rc;
    }
    *out = g;
    return TROVE_OK;
}

/*
 * One round: raise the horizon, run every thread up to it, and heap the threads that have
 * an event before it. What a thread handed out already is dropped first, so a thread holds
 * the events of one round and the rest of its last call tree. The raise aims at about
 * GEN_ROUND_EVENTS events a round from the rate so far (the first guesses one event per
 * microsecond); the events do not depend on it, as every event starting before the horizon
 * exists when the round ends.
 */
#define GEN_ROUND_EVENTS 65536u

static int gen_round(struct trove_gen *g)
{
    uint64_t before = 0;
    int rc;

    if (!g->started) {
        g->step = GEN_ROUND_EVENTS * 1000ull;
        g->started = 1;
    } else if (g->before == 0) {
        g->step *= 2;
    } else {
        double rate = (double)g->before / (double)(g->horizon - g->first); /* events a ns */
        double want = (double)GEN_ROUND_EVENTS / rate;
        double most = 4.0 * (double)g->step;
        want = want > most ? most : want;
        g->step = want < 1.0 ? 1 : (uint64_t)want;
    }
    g->horizon += g->step;
    g->heap_n = 0;
    for (uint32_t i = 0; i < g->nthreads; i++) {
        struct thread_gen *t = &g->th[i];
        size_t k;
        if (t->head > 0) {
            memmove(t->ev, t->ev + t->head, (t->n - t->head) * sizeof *t->ev);
            t->n -= t->head;
            t->head = 0;
        }
        if ((rc = thread_run(&g->m, t, g->horizon)) != TROVE_OK)
            return rc;
        k = count_before(t, g->horizon);
        before += k;
        if (k > 0)
            g->heap[g->heap_n++] = i;
    }
    g->before += before;
    for (size_t i = g->heap_n; i-- > 0;)
        heap_down(g->th, g->heap, g->heap_n, i);
    return TROVE_OK;
}

int trove_gen_next(struct trove_gen *g, struct trove_event *ev, size_t cap, size_t *n_out)
{
    const uint64_t tick = g ? g->opt.tick_ns : 1;
    size_t n = 0;
    int rc;

    if (!g || !n_out || (!ev && cap > 0))
        return TROVE_ERR_INVALID;
    *n_out = 0;
    while (n < cap && g->out < g->opt.events) {
        struct thread_gen *t;
        struct trove_event *e;
        if (g->heap_n == 0) {
            if ((rc = gen_round(g)) != TROVE_OK)
                return rc;
            continue;
        }
        t = &g->th[g->heap[0]];
        assert(t->ev[t->head].start_ns < g->horizon);
        e = &ev[n++];
        *e = t->ev[t->head];
        if (tick > 1) {
            /* A coarser clock: round start and end down. Rounding is monotonic, so order
             * and nesting survive (equal starts may appear). */
            uint64_t s0 = e->start_ns - e->start_ns % tick;
            uint64_t e0 = e->start_ns + e->dur_ns - (e->start_ns + e->dur_ns) % tick;
            e->start_ns = s0;
            e->dur_ns = e0 - s0;
        }
        g->out++;
        g->used[t->ev[t->head].name_id] = 1;
        t->used++;
        if (++t->head == t->n || t->ev[t->head].start_ns >= g->horizon)
            g->heap[0] = g->heap[--g->heap_n];
        heap_down(g->th, g->heap, g->heap_n, 0);
    }
    *n_out = n;
    return TROVE_OK;
}

uint64_t trove_gen_count(const struct trove_gen *g)
{
    return g ? g->out : 0;
}

int trove_gen_names(const struct trove_gen *g, struct trove_names *names)
{
    struct trove_names *tmp = NULL;
    int rc;

    if (!g || !names)
        return TROVE_ERR_INVALID;
    TROVE_TRY(rc, trove_names_new(&tmp));
    TROVE_TRY(rc, set_names(tmp, g->th, g->nthreads, g->opt.threads, g->used, g->opt.names));
    TROVE_TRY(rc, trove_names_merge(names, tmp));
out:
    trove_names_free(tmp);
    return rc;
}

int trove_gen(const struct trove_gen_options *given, struct trove_events *events,
              struct trove_names *names)
{
    struct trove_gen_options opt;
    struct trove_gen *g = NULL;
    size_t got;
    int rc;

    if (!events || gen_normalize(given, &opt) != TROVE_OK ||
        opt.events > (SIZE_MAX / sizeof(struct trove_event)) / 2 - events->len)
        return TROVE_ERR_INVALID;
    if (events->cap - events->len < opt.events) {
        size_t cap = events->len + (size_t)opt.events;
        struct trove_event *p = trove__realloc(events->ev, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        events->ev = p;
        events->cap = cap;
    }
    TROVE_TRY(rc, trove_gen_open(given, &g));
    TROVE_TRY(rc, trove_gen_next(g, events->ev + events->len, (size_t)opt.events, &got));
    assert(got == opt.events);
    if (names)
        TROVE_TRY(rc, trove_gen_names(g, names));
    events->len += got;
out:
    trove_gen_free(g);
    return rc;
}
