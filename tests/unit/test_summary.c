/*
 * test_summary.c: summary nodes (trove/summary.h, docs/formats/summary.md) and the answers
 * made from them (docs/formats/view.md) — each against a brute-force pass over the events.
 *
 * The brute force is written from the rules alone: a span of at least 2^shift ns that
 * overlaps the range goes whole, every other event into its track's cell (lane, start >>
 * shift) when that column covers the range; statistics count the events that start in the
 * range, with the self time of a span within its segment. The same capture is also written
 * without summaries (every answer then comes from its segments): both must give the same
 * bytes. Golden vectors: tests/vectors/summary_leaf.bin, summary_group.bin, view_frame.bin.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/summary_internal.h"
#include "common/endian.h"
#include "common/sealed.h"
#include "testutil.h"
#include "trove/capture.h"
#include "trove/gen.h"
#include "trove/input.h"
#include "trove/store.h"
#include "trove/summary.h"
#include "trove/testing.h"
#include "trove/volume.h"

/* ---- small events by hand ----------------------------------------------------------- */

static struct trove_event ev(uint64_t start, uint64_t dur, uint32_t pid, uint32_t tid,
                             uint8_t kind, uint8_t depth, uint32_t name)
{
    struct trove_event e;
    memset(&e, 0, sizeof e);
    e.start_ns = start;
    e.dur_ns = dur;
    e.pid = pid;
    e.tid = tid;
    e.kind = kind;
    e.depth = depth;
    e.name_id = name;
    return e;
}

/* A thread with nesting, an instant, a counter track and a frame, written children first. */
static size_t hand_events(struct trove_event *e)
{
    size_t n = 0;
    e[n++] = ev(1100, 200, 1, 10, TROVE_KIND_ZONE, 1, 2);  /* child of the next */
    e[n++] = ev(1400, 100, 1, 10, TROVE_KIND_ZONE, 1, 3);
    e[n++] = ev(1000, 1000, 1, 10, TROVE_KIND_ZONE, 0, 1); /* self 700 */
    e[n++] = ev(1500, 0, 1, 10, TROVE_KIND_INSTANT, 0, 4);
    e[n++] = ev(3000, 50, 1, 11, TROVE_KIND_LOCK, 0, 5);
    e[n++] = ev(3100, trove_counter_bits(2.5), 1, TROVE_TID_SYNTHETIC, TROVE_KIND_COUNTER, 0, 6);
    e[n++] = ev(3200, trove_counter_bits(-1.0), 1, TROVE_TID_SYNTHETIC, TROVE_KIND_COUNTER, 0, 6);
    e[n++] = ev(0, 5000, 2, 20, TROVE_KIND_FRAME, 0, 7);
    e[n++] = ev(2000, 300, 1, 10, TROVE_KIND_ZONE, 0, 1);
    return n;
}

static int same_node(const struct trove_summary *a, const struct trove_summary *b)
{
    if (a->level != b->level || a->shift != b->shift || a->events != b->events ||
        a->first_ns != b->first_ns || a->end_ns != b->end_ns || a->ntracks != b->ntracks ||
        a->ncells != b->ncells || a->nlongs != b->nlongs || a->nsketches != b->nsketches ||
        a->nbuckets != b->nbuckets)
        return 0;
    if ((a->ntracks && memcmp(a->tracks, b->tracks, a->ntracks * sizeof *a->tracks)) ||
        (a->nbuckets && memcmp(a->buckets, b->buckets, a->nbuckets * sizeof *a->buckets)))
        return 0;
    for (size_t i = 0; i < a->ncells; i++) {
        const struct trove_summary_cell *x = &a->cells[i], *y = &b->cells[i];
        if (x->track != y->track || x->lane != y->lane || x->col != y->col ||
            x->count != y->count || x->busy != y->busy || x->name != y->name ||
            x->name_dur != y->name_dur || x->vmin != y->vmin || x->vmax != y->vmax)
            return 0;
    }
    for (size_t i = 0; i < a->nlongs; i++)
        if (a->longs[i].track != b->longs[i].track || a->longs[i].index != b->longs[i].index ||
            memcmp(&a->longs[i].ev, &b->longs[i].ev, sizeof a->longs[i].ev))
            return 0;
    for (size_t i = 0; i < a->nsketches; i++) {
        const struct trove_summary_sketch *x = &a->sketches[i], *y = &b->sketches[i];
        if (x->name != y->name || x->count != y->count || x->total != y->total ||
            x->self != y->self || x->min != y->min || x->max != y->max || x->first != y->first ||
            x->n != y->n)
            return 0;
    }
    return 1;
}

static void test_leaf(void)
{
    struct trove_event e[16];
    size_t n = hand_events(e);
    struct trove_summary s, d, g, gd;
    struct trove_bytes b = {0}, gb = {0};
    struct trove_diag diag = {0};
    uint64_t counted = 0;

    CHECK_EQ_INT(trove_summary_build(e, n, &s), TROVE_OK);
    CHECK_EQ_INT(s.level, 0);
    CHECK_EQ_INT(s.events, n);
    CHECK_EQ_INT(s.ntracks, 4); /* (1,10) (1,11) (1,synthetic) (2,20) */
    CHECK(s.tracks[0].pid == 1 && s.tracks[0].tid == 10 && s.tracks[0].events == 5);
    CHECK_EQ_INT(s.tracks[0].max_depth, 1);
    CHECK(s.first_ns == 0 && s.end_ns == 5000);
    CHECK_EQ_INT(s.shift, 0); /* nine events fit any budget at the finest shift */
    for (size_t i = 0; i < s.ncells; i++)
        counted += s.cells[i].count;
    CHECK_EQ_INT(counted + s.nlongs, n);
    /* at shift 0 every span with a duration is whole: three zones of thread 10 and its
     * last, the lock, the frame */
    CHECK_EQ_INT(s.nlongs, 6);
    /* self time: name 1 is 1000 - 200 - 100 = 700 plus 300 */
    CHECK(s.nsketches == 6 && s.sketches[0].name == 1 && s.sketches[0].count == 2 &&
          s.sketches[0].total == 1300 && s.sketches[0].self == 1000 && s.sketches[0].min == 300 &&
          s.sketches[0].max == 1000);
    /* the counter cell keeps its least and greatest value */
    for (size_t i = 0; i < s.ncells; i++)
        if (s.cells[i].lane == TROVE_SUMMARY_LANE_COUNTER)
            CHECK(s.cells[i].vmin == trove_counter_bits(-1.0) ||
                  s.cells[i].vmax == trove_counter_bits(2.5));
    CHECK_EQ_INT(trove_summary_encode(&s, &b), TROVE_OK);
    test_check_vector("summary_leaf.bin", b.ptr, b.len);
    CHECK_EQ_INT(trove_summary_decode(b.ptr, b.len, &d, &diag), TROVE_OK);
    /* a level-0 object keeps no sketches */
    CHECK_EQ_INT(d.nsketches, 0);
    s.nsketches = s.nbuckets = 0;
    CHECK(same_node(&s, &d));
    trove_summary_free(&d);
    trove_summary_free(&s);

    /* a level-1 node of two leaves: its sketches add up, its cells fold */
    CHECK_EQ_INT(trove_summary_build(e, 4, &s), TROVE_OK);
    CHECK_EQ_INT(trove_summary_build(e + 4, n - 4, &d), TROVE_OK);
    memset(&g, 0, sizeof g);
    CHECK_EQ_INT(trove_summary_join(&g, &s, &d, 4, 1), TROVE_OK);
    CHECK(g.level == 1 && g.events == n && g.ntracks == 4);
    CHECK_EQ_INT(trove_summary_encode(&g, &gb), TROVE_OK);
    test_check_vector("summary_group.bin", gb.ptr, gb.len);
    CHECK_EQ_INT(trove_summary_decode(gb.ptr, gb.len, &gd, &diag), TROVE_OK);
    CHECK(same_node(&g, &gd));
    {
        /* two streams: a view inflates the first alone, so a node whose sketches' stream is
         * spoilt (and sealed again) still gives its cells to a view, but not a statistic */
        uint64_t pa = trove__get_le64(gb.ptr + 40);
        struct trove_bytes bad = {0};
        struct trove_summary part;
        CHECK(pa > 0 && 48 + pa < gb.len - 8);
        CHECK_EQ_INT(trove_bytes_append(&bad, gb.ptr, gb.len), TROVE_OK);
        memset(bad.ptr + 48 + pa, 0xff, gb.len - 8 - 48 - pa);
        trove__sealed_seal(bad.ptr, bad.len);
        CHECK(trove_summary_decode(bad.ptr, bad.len, &part, &diag) == TROVE_ERR_INFLATE ||
              diag.code == TROVE_ERR_CORRUPT);
        CHECK_EQ_INT(trove__summary_decode_part(bad.ptr, bad.len, &part, 0, &diag), TROVE_OK);
        CHECK(part.ncells == g.ncells && part.nlongs == g.nlongs && part.nsketches == 0 &&
              memcmp(part.cells, g.cells, g.ncells * sizeof *g.cells) == 0);
        trove_summary_free(&part);
        trove_bytes_free(&bad);
    }
    {
        /* a node of many sketches and few cells (a root of many names): its first stream is
         * small beside the sketches' counts, which a view's read must not hold against it */
        struct trove_summary big;
        struct trove_summary_track tr = {1, 1, 3000, 0, 1, 0, 3000};
        struct trove_bytes o = {0};
        struct trove_summary part;
        memset(&big, 0, sizeof big);
        big.level = 1;
        big.events = 3000;
        big.end_ns = 3000;
        big.tracks = &tr;
        big.ntracks = 1;
        big.sketches = calloc(3000, sizeof *big.sketches);
        big.buckets = calloc(3000, sizeof *big.buckets);
        for (size_t i = 0; big.sketches && big.buckets && i < 3000; i++) {
            big.sketches[i].name = (uint32_t)i;
            big.sketches[i].count = 1;
            big.sketches[i].total = big.sketches[i].min = big.sketches[i].max = i + 1;
            big.sketches[i].self = i + 1;
            big.sketches[i].first = i;
            big.sketches[i].n = 1;
            big.buckets[i].index = trove_summary_bucket_of(i + 1);
            big.buckets[i].count = 1;
        }
        big.nsketches = big.nbuckets = 3000;
        CHECK_EQ_INT(trove_summary_encode(&big, &o), TROVE_OK);
        CHECK(trove__get_le64(o.ptr + 32) < 3000 * 4); /* the first stream: fewer bytes than K x 4 */
        CHECK_EQ_INT(trove__summary_decode_part(o.ptr, o.len, &part, 0, &diag), TROVE_OK);
        CHECK(part.ntracks == 1 && part.nsketches == 0 && part.events == 3000);
        trove_summary_free(&part);
        CHECK_EQ_INT(trove_summary_decode(o.ptr, o.len, &part, &diag), TROVE_OK);
        CHECK(part.nsketches == 3000 && part.nbuckets == 3000);
        trove_summary_free(&part);
        free(big.sketches);
        free(big.buckets);
        trove_bytes_free(&o);
    }
    for (size_t i = 0; i < g.nlongs; i++) /* the second leaf's indexes moved by 4 */
        CHECK(memcmp(&g.longs[i].ev, &e[g.longs[i].index], sizeof e[0]) == 0);
    trove_summary_free(&gd);
    trove_summary_free(&g);
    trove_summary_free(&s);
    trove_summary_free(&d);
    trove_bytes_free(&b);
    trove_bytes_free(&gb);
    {
        /* a bucket's count takes 48 bits: a node of 2^48 events is refused, decoded or
         * joined; one event fewer is not (the head of a node with no tracks: it fails
         * later, on its tracks) */
        static const uint8_t big[] = {1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40,
                                      0, 0, 0, 0, 0, 0, 0};
        struct trove_bytes w = {0};
        struct trove_summary x, y, z;
        CHECK_EQ_INT(trove_testing_summary_wrap(big, sizeof big, &w), TROVE_OK);
        CHECK_EQ_INT(trove_summary_decode(w.ptr, w.len, &x, &diag), TROVE_ERR_CORRUPT);
        CHECK(strstr(diag.msg, "2^48") != NULL);
        trove_bytes_free(&w);
        memset(&x, 0, sizeof x);
        memset(&y, 0, sizeof y);
        memset(&z, 0, sizeof z);
        x.events = TROVE_SUMMARY_MAX_EVENTS - 1;
        y.events = 1;
        CHECK_EQ_INT(trove_summary_join(&z, &x, &y, 0, 1), TROVE_ERR_INVALID);
        CHECK_EQ_INT(z.events, 0);
    }
}

static void test_buckets(void)
{
    uint64_t st = 7;
    uint32_t prev = 0;

    CHECK_EQ_INT(trove_summary_bucket_of(0), 0);
    CHECK(trove_summary_bucket_value(0) == 0);
    for (uint64_t d = 1; d < 200000; d++) {
        uint32_t b = trove_summary_bucket_of(d);
        double v = trove_summary_bucket_value(b);
        if (b < prev || fabs(v - (double)d) > 0.01 * (double)d) {
            CHECK(!"bucket out of order or over 1 % off");
            return;
        }
        prev = b;
    }
    for (int i = 0; i < 200000; i++) {
        uint64_t d = test_rand(&st) >> (test_rand(&st) % 64);
        uint32_t b;
        if (!d)
            continue;
        b = trove_summary_bucket_of(d);
        if (b >= TROVE_SUMMARY_BUCKETS || fabs(trove_summary_bucket_value(b) - (double)d) > 0.01 * (double)d) {
            CHECK(!"a random duration's bucket over 1 % off");
            return;
        }
    }
    CHECK(trove_summary_bucket_of(UINT64_MAX) < TROVE_SUMMARY_BUCKETS);
    CHECK(1);
}

/* The same node whatever order children are joined in. */
static void test_join_order(void)
{
    struct trove_gen_options go = {0};
    struct trove_events a = {0};
    struct trove_summary leaf[8], seq, tree, l2[4], r2[2];
    struct trove_bytes x = {0}, y = {0};
    size_t per;

    go.events = 8000;
    go.seed = 3;
    CHECK_EQ_INT(trove_gen(&go, &a, NULL), TROVE_OK);
    per = a.len / 8;
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(trove_summary_build(a.ev + i * per, per, &leaf[i]), TROVE_OK);
    memset(&seq, 0, sizeof seq);
    CHECK_EQ_INT(trove_summary_join(&seq, &leaf[0], NULL, 0, 1), TROVE_OK);
    for (int i = 1; i < 8; i++)
        CHECK_EQ_INT(trove_summary_join(&seq, &seq, &leaf[i], i * per, 1), TROVE_OK);
    for (int i = 0; i < 4; i++) {
        memset(&l2[i], 0, sizeof l2[i]);
        CHECK_EQ_INT(trove_summary_join(&l2[i], &leaf[2 * i], &leaf[2 * i + 1], per, 1), TROVE_OK);
    }
    memset(r2, 0, sizeof r2);
    CHECK_EQ_INT(trove_summary_join(&r2[0], &l2[0], &l2[1], 2 * per, 1), TROVE_OK);
    CHECK_EQ_INT(trove_summary_join(&r2[1], &l2[2], &l2[3], 2 * per, 1), TROVE_OK);
    memset(&tree, 0, sizeof tree);
    CHECK_EQ_INT(trove_summary_join(&tree, &r2[0], &r2[1], 4 * per, 1), TROVE_OK);
    CHECK_EQ_INT(trove_summary_encode(&seq, &x), TROVE_OK);
    CHECK_EQ_INT(trove_summary_encode(&tree, &y), TROVE_OK);
    CHECK(x.len == y.len && memcmp(x.ptr, y.ptr, x.len) == 0);
    for (int i = 0; i < 8; i++)
        trove_summary_free(&leaf[i]);
    for (int i = 0; i < 4; i++)
        trove_summary_free(&l2[i]);
    trove_summary_free(&r2[0]);
    trove_summary_free(&r2[1]);
    trove_summary_free(&seq);
    trove_summary_free(&tree);
    trove_bytes_free(&x);
    trove_bytes_free(&y);
    trove_events_free(&a);
}

/* The reader's place of each node (trove__summary_slot_of) is the order the writers put
 * them in, for every count of segments and a last one full or not. */
struct order_rec {
    uint64_t segments, sealed, next;
    int ok;
};

static int order_put(void *ctx, unsigned level, uint64_t index, const uint8_t *p, size_t len,
                     struct trove_diag *diag)
{
    struct order_rec *o = ctx;
    (void)p;
    (void)len;
    (void)diag;
    if (trove__summary_slot_of(o->segments, o->sealed, level, index) != o->next++)
        o->ok = 0;
    return TROVE_OK;
}

static void test_slot_order(void)
{
    static const uint64_t counts[] = {1, 2, 63, 64, 65, 127, 128, 200, 4095, 4096, 4097, 4160, 8200};
    struct trove_event e = ev(5, 3, 1, 1, TROVE_KIND_ZONE, 0, 1);
    struct trove_summary leaf;

    CHECK_EQ_INT(trove_summary_build(&e, 1, &leaf), TROVE_OK);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        for (int partial = 0; partial < 2; partial++) {
            struct trove__sumtree t;
            struct order_rec o = {counts[c], counts[c] - (uint64_t)partial, 0, 1};
            memset(&t, 0, sizeof t);
            t.per = 1;
            for (uint64_t k = 0; k < o.sealed; k++) {
                struct trove_summary one;
                CHECK_EQ_INT(trove_summary_build(&e, 1, &one), TROVE_OK);
                CHECK_EQ_INT(trove__sumtree_seal(&t, &one, order_put, &o, NULL), TROVE_OK);
                trove_summary_free(&one);
            }
            CHECK_EQ_INT(trove__sumtree_finish(&t, partial ? &leaf : NULL, order_put, &o, NULL),
                         TROVE_OK);
            if (!o.ok || o.next != trove__summary_slots(counts[c]))
                fprintf(stderr, "%" PRIu64 " segments, the last %s: %" PRIu64 " nodes put\n",
                        counts[c], partial ? "partial" : "full", o.next);
            CHECK(o.ok);
            CHECK_EQ_INT(o.next, trove__summary_slots(counts[c]));
            trove__sumtree_free(&t);
        }
    trove_summary_free(&leaf);
}

/* ---- a capture: views and statistics against the brute force --------------------------- */

struct cap {
    char dir[256];
    struct trove_store *s;
    struct trove_events ev;
    struct trove_names *names;
    uint64_t per;
};

static int cap_make(struct cap *c, const struct trove_events *ev, struct trove_names *names,
                    uint64_t seg_bytes)
{
    struct trove_capture_options co = {0};
    struct trove_diag diag = {0};
    int rc;

    snprintf(c->dir, sizeof c->dir, "/tmp/trove_test_summary_%d", (int)getpid());
    test_rm_rf(c->dir);
    if ((rc = trove_store_open(c->dir, TROVE_STORE_CREATE, &c->s, &diag)) != TROVE_OK)
        return rc;
    c->ev = *ev;
    c->names = names;
    co.segment_bytes = seg_bytes;
    c->per = seg_bytes / 32;
    if ((rc = trove_capture_write(c->s, "sum", ev->ev, ev->len, names, &co, NULL, &diag)))
        return rc;
    co.no_summaries = 1;
    return trove_capture_write(c->s, "raw", ev->ev, ev->len, names, &co, NULL, &diag);
}

static void cap_free(struct cap *c)
{
    trove_store_close(c->s);
    test_rm_rf(c->dir);
}

struct bcell {
    uint64_t track, col;
    uint32_t lane;
    struct trove_summary_cell c;
};

static int bcell_cmp(const void *a, const void *b)
{
    const struct bcell *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->lane != y->lane)
        return x->lane < y->lane ? -1 : 1;
    return x->col < y->col ? -1 : x->col > y->col;
}

/* The view by brute force, compared with the decoded frame. */
static int view_matches(const struct trove_events *a, const struct trove_view_options *o,
                        const struct trove_view_frame *f, uint64_t end)
{
    uint64_t to = o->to_ns ? o->to_ns : end + 1, width = (to - o->from_ns) / o->px;
    uint32_t pixel = width ? 63u - (unsigned)__builtin_clzll(width) : 0;
    /* the answer's cells are a pixel wide, or coarser when the summaries could not spare
     * reading many segments: exact at the shift it says */
    uint32_t shift = f->shift;
    uint64_t lo = o->from_ns >> shift, hi = (to - 1) >> shift;
    struct bcell *cells = calloc(a->len + 1, sizeof *cells);
    size_t nc = 0, nraw = 0, m = 0;
    int ok = f->shift >= pixel;

    for (size_t i = 0; i < a->len && ok; i++) {
        const struct trove_event *e = &a->ev[i];
        int span = e->kind == TROVE_KIND_ZONE || e->kind == TROVE_KIND_FRAME || e->kind == TROVE_KIND_LOCK;
        uint64_t col = e->start_ns >> shift;
        if (o->ntracks) {
            int found = 0;
            for (size_t t = 0; t < o->ntracks; t++)
                found |= o->tracks[t] == ((uint64_t)e->pid << 32 | e->tid);
            if (!found)
                continue;
        }
        if (span && (e->dur_ns >> shift) != 0) {
            if (e->start_ns < to && trove_event_end(e) > o->from_ns) {
                /* find it among the frame's events, by index */
                int found = 0;
                for (size_t j = 0; j < f->nevents && !found; j++)
                    found = f->events[j].index == i &&
                            !memcmp(&f->events[j].ev, e, sizeof *e);
                ok &= found;
                nraw++;
            }
            continue;
        }
        if (col < lo || col > hi)
            continue;
        cells[nc].track = (uint64_t)e->pid << 32 | e->tid;
        cells[nc].col = col;
        cells[nc].lane = span ? e->depth : e->kind == TROVE_KIND_COUNTER ? 257 : 256;
        cells[nc].c.count = 1;
        cells[nc].c.busy = span ? e->dur_ns : 0;
        cells[nc].c.name = e->name_id;
        cells[nc].c.name_dur = span ? e->dur_ns : 0;
        nc++;
    }
    ok &= nraw == f->nevents;
    qsort(cells, nc, sizeof *cells, bcell_cmp);
    for (size_t i = 0; i < nc; i++) { /* fold, then compare in order */
        if (m > 0 && bcell_cmp(&cells[m - 1], &cells[i]) == 0) {
            struct trove_summary_cell *d = &cells[m - 1].c, *c = &cells[i].c;
            d->count++;
            d->busy += c->busy;
            if (c->name_dur > d->name_dur || (c->name_dur == d->name_dur && c->name < d->name)) {
                d->name = c->name;
                d->name_dur = c->name_dur;
            }
        } else {
            cells[m++] = cells[i];
        }
    }
    ok &= m == f->ncells;
    for (size_t i = 0; i < f->ncells && ok; i++) {
        const struct trove_summary_cell *c = &f->cells[i];
        const struct trove_view_track *t = &f->tracks[c->track];
        const struct bcell *b = &cells[i];
        ok &= b->track == ((uint64_t)t->pid << 32 | t->tid) && b->lane == c->lane &&
              b->col == c->col && b->c.count == c->count && b->c.busy == c->busy &&
              b->c.name == c->name && b->c.name_dur == c->name_dur;
    }
    free(cells);
    return ok;
}

static void check_views(struct cap *c, uint64_t seed)
{
    uint64_t first = UINT64_MAX, end = 0, st = seed;
    uint64_t tracks[3];
    size_t nt = 0;
    int checked = 0, used_nodes = 0, coarser = 0, capped = 0;

    for (size_t i = 0; i < c->ev.len; i++) {
        first = c->ev.ev[i].start_ns < first ? c->ev.ev[i].start_ns : first;
        end = trove_event_end(&c->ev.ev[i]) > end ? trove_event_end(&c->ev.ev[i]) : end;
    }
    /* two tracks, sorted */
    tracks[0] = (uint64_t)c->ev.ev[0].pid << 32 | c->ev.ev[0].tid;
    tracks[1] = (uint64_t)c->ev.ev[c->ev.len / 2].pid << 32 | c->ev.ev[c->ev.len / 2].tid;
    nt = tracks[0] == tracks[1] ? 1 : 2;
    if (nt == 2 && tracks[0] > tracks[1]) {
        tracks[2] = tracks[0];
        tracks[0] = tracks[1];
        tracks[1] = tracks[2];
    }
    for (int zoom = 0; zoom < 24; zoom++) {
        uint64_t span = (end - first + 1) >> zoom, from, to;
        if (span < 4)
            break;
        for (int rep = 0; rep < 4; rep++) {
            struct trove_view_options o = {0};
            struct trove_bytes a = {0}, b = {0};
            struct trove_query_figures qa = {0}, qb = {0};
            struct trove_view_frame f = {0};
            struct trove_diag diag = {0};
            from = first + (rep ? test_rand(&st) % (end - first + 1 - span + 1) : 0);
            to = from + span;
            o.from_ns = from;
            o.to_ns = to;
            o.px = rep == 2 ? 97 : rep == 3 ? TROVE_VIEW_MAX_PX : 1500;
            o.tracks = rep == 1 ? tracks : NULL;
            o.ntracks = rep == 1 ? nt : 0;
            o.names = 1;
            struct trove_view_frame fb = {0};
            uint64_t width;
            CHECK_EQ_INT(trove_capture_view(c->s, "sum", &o, &a, &qa, &diag), TROVE_OK);
            CHECK_EQ_INT(trove_capture_view(c->s, "raw", &o, &b, &qb, &diag), TROVE_OK);
            CHECK_EQ_INT(trove_view_decode(a.ptr, a.len, &f, &diag), TROVE_OK);
            CHECK_EQ_INT(trove_view_decode(b.ptr, b.len, &fb, &diag), TROVE_OK);
            width = (to - from) / o.px;
            /* without summaries, the segments at the pixel's shift (coarser only when that
             * answer would pass 256 KiB); with them, at most 16 segments read, else as fine
             * as the summaries hold; at one shift, one answer */
            CHECK(a.len <= 256 << 10 && b.len <= 256 << 10);
            CHECK(fb.shift >= (width ? 63u - (unsigned)__builtin_clzll(width) : 0));
            capped += fb.shift > (width ? 63u - (unsigned)__builtin_clzll(width) : 0);
            CHECK(f.shift == fb.shift || qa.segments <= 16);
            if (f.shift == fb.shift)
                CHECK(a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0);
            else
                coarser++;
            CHECK(qb.nodes == 0);
            CHECK(qa.damaged == 0); /* every node read decoded where the reader looked */
            used_nodes |= qa.nodes > 0 && qa.segments < qb.segments;
            CHECK(view_matches(&c->ev, &o, &fb, end));
            trove_view_frame_free(&fb);
            if (!view_matches(&c->ev, &o, &f, end)) {
                fprintf(stderr, "view differs: zoom %d rep %d from %" PRIu64 " to %" PRIu64 "\n",
                        zoom, rep, from, to);
                CHECK(0);
            }
            checked++;
            trove_view_frame_free(&f);
            trove_bytes_free(&a);
            trove_bytes_free(&b);
        }
    }
    CHECK(checked > 20);
    CHECK(used_nodes); /* zoomed out, nodes answered instead of segments */
    CHECK(capped > 0); /* 16,384 px of a whole capture read from its segments is too long */
    (void)coarser;
}

/* Exact nearest-rank quantile of sorted d[0..n). */
static double exact_q(const uint64_t *d, size_t n, double q)
{
    size_t rank = (size_t)ceil(q * (double)n);
    return (double)d[(rank < 1 ? 1 : rank) - 1];
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void check_stats(struct cap *c, uint64_t from, uint64_t to)
{
    struct trove_stats_options o = {0};
    struct trove_stats_result a, b;
    struct trove_diag diag = {0};
    uint64_t *self = malloc((c->ev.len + 1) * sizeof *self), *durs;
    size_t rows_ok = 0;

    /* self times within each segment, as the nodes hold them */
    for (size_t k = 0; k * c->per < c->ev.len; k++) {
        size_t n = c->ev.len - k * c->per < c->per ? c->ev.len - k * c->per : c->per;
        CHECK_EQ_INT(trove__summary_self_times(c->ev.ev + k * c->per, n, self + k * c->per), TROVE_OK);
    }
    o.from_ns = from;
    o.to_ns = to;
    o.sort = TROVE_STATS_SORT_COUNT;
    CHECK_EQ_INT(trove_capture_stats(c->s, "sum", &o, &a, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_stats(c->s, "raw", &o, &b, &diag), TROVE_OK);
    CHECK(a.nrows == b.nrows && a.events == b.events);
    CHECK(a.read.damaged == 0);
    durs = malloc((c->ev.len + 1) * sizeof *durs);
    for (size_t r = 0; r < a.nrows && r < 40; r++) {
        const struct trove_stats_row *row = &a.rows[r];
        uint64_t count = 0, total = 0, sf = 0, mn = UINT64_MAX, mx = 0;
        size_t nd = 0;
        int ok;
        for (size_t i = 0; i < c->ev.len; i++) {
            const struct trove_event *e = &c->ev.ev[i];
            uint64_t d;
            if (e->name_id != row->name_id || e->kind == TROVE_KIND_COUNTER || e->start_ns < from ||
                e->start_ns >= to)
                continue;
            d = e->kind == TROVE_KIND_ZONE || e->kind == TROVE_KIND_FRAME || e->kind == TROVE_KIND_LOCK
                    ? e->dur_ns
                    : 0;
            count++;
            total += d;
            sf += self[i];
            mn = d < mn ? d : mn;
            mx = d > mx ? d : mx;
            durs[nd++] = d;
        }
        qsort(durs, nd, sizeof *durs, u64_cmp);
        ok = count == row->count && total == row->total && sf == row->self && mn == row->min &&
             mx == row->max;
        for (int q = 0; q < 3 && ok; q++) {
            double qq = q == 0 ? 0.5 : q == 1 ? 0.9 : 0.99;
            double want = exact_q(durs, nd, qq), got = q == 0 ? row->p50 : q == 1 ? row->p90 : row->p99;
            ok = fabs(got - want) <= 0.01 * want;
        }
        /* the summaries' answer is the segments' answer */
        ok &= row->count == b.rows[r].count && row->p99 == b.rows[r].p99 && row->self == b.rows[r].self;
        if (!ok)
            fprintf(stderr, "stats differ for name %" PRIu32 " in [%" PRIu64 ", %" PRIu64 ")\n",
                    row->name_id, from, to);
        rows_ok += ok;
        CHECK(ok);
    }
    CHECK(rows_ok > 0 || a.nrows == 0);
    free(durs);
    free(self);
    trove_stats_result_free(&a);
    trove_stats_result_free(&b);
}

/* Clipped statistics (opt.clip) against a brute-force clip of every event: each span that
 * overlaps [from, to) with min(end, to) - max(start, from), each instant that starts in it;
 * count, total, min and max exact, the quantiles within 1 %, a cut span's self time at most
 * its clipped duration; the summaries' answer equals the segments'. */
static void check_stats_clip(struct cap *c, uint64_t from, uint64_t to)
{
    struct trove_stats_options o = {0};
    struct trove_stats_result a, b;
    struct trove_diag diag = {0};
    uint64_t *durs = malloc((c->ev.len + 1) * sizeof *durs);
    size_t rows_ok = 0;

    o.from_ns = from;
    o.to_ns = to;
    o.sort = TROVE_STATS_SORT_TOTAL;
    o.clip = 1;
    CHECK_EQ_INT(trove_capture_stats(c->s, "sum", &o, &a, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_stats(c->s, "raw", &o, &b, &diag), TROVE_OK);
    CHECK(a.nrows == b.nrows && a.events == b.events);
    for (size_t r = 0; r < a.nrows && r < 40; r++) {
        const struct trove_stats_row *row = &a.rows[r];
        uint64_t count = 0, total = 0, mn = UINT64_MAX, mx = 0;
        size_t nd = 0;
        int ok;
        for (size_t i = 0; i < c->ev.len; i++) {
            const struct trove_event *e = &c->ev.ev[i];
            int span = e->kind == TROVE_KIND_ZONE || e->kind == TROVE_KIND_FRAME ||
                       e->kind == TROVE_KIND_LOCK;
            uint64_t d = 0, end = e->start_ns + e->dur_ns;
            if (e->name_id != row->name_id || e->kind == TROVE_KIND_COUNTER)
                continue;
            if (span && e->dur_ns > 0) {
                if (e->start_ns >= to || end <= from)
                    continue;
                d = (end < to ? end : to) - (e->start_ns > from ? e->start_ns : from);
            } else if (e->start_ns < from || e->start_ns >= to) {
                continue;
            }
            count++;
            total += d;
            mn = d < mn ? d : mn;
            mx = d > mx ? d : mx;
            durs[nd++] = d;
        }
        qsort(durs, nd, sizeof *durs, u64_cmp);
        ok = count == row->count && total == row->total && mn == row->min && mx == row->max &&
             row->self <= row->total;
        for (int q = 0; q < 3 && ok; q++) {
            double qq = q == 0 ? 0.5 : q == 1 ? 0.9 : 0.99;
            double want = exact_q(durs, nd, qq), got = q == 0 ? row->p50 : q == 1 ? row->p90 : row->p99;
            ok = fabs(got - want) <= 0.01 * want;
        }
        ok &= row->count == b.rows[r].count && row->total == b.rows[r].total &&
              row->self == b.rows[r].self && row->p99 == b.rows[r].p99;
        if (!ok)
            fprintf(stderr, "clipped stats differ for name %" PRIu32 " in [%" PRIu64 ", %" PRIu64
                            "): count %" PRIu64 "/%" PRIu64 " total %" PRIu64 "/%" PRIu64 "\n",
                    row->name_id, from, to, row->count, count, row->total, total);
        rows_ok += ok;
        CHECK(ok);
    }
    CHECK(rows_ok > 0 || a.nrows == 0);
    free(durs);
    trove_stats_result_free(&a);
    trove_stats_result_free(&b);
}

/* ---- finding instances (trove_capture_find_json) against the brute force ---------------- */

struct want_hit {
    uint64_t index, start, dur;
};

static int find_order; /* the order check_find sorts by */

static int want_cmp(const void *a, const void *b)
{
    const struct want_hit *x = a, *y = b;
    if (find_order == TROVE_FIND_DUR_DESC && x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1;
    if (find_order != TROVE_FIND_DUR_DESC && x->start != y->start)
        return (x->start < y->start ? -1 : 1) * (find_order == TROVE_FIND_START_DESC ? -1 : 1);
    return (x->index < y->index ? -1 : x->index > y->index) * (find_order == TROVE_FIND_START_DESC ? -1 : 1);
}

static int u32_sort(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int has_ci(const char *s, size_t len, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= len; i++) {
        size_t j = 0;
        while (j < m && tolower((unsigned char)s[i + j]) == tolower((unsigned char)needle[j]))
            j++;
        if (j == m)
            return 1;
    }
    return 0;
}

/* The answer of trove_capture_find_json for o equals the brute force's: the same instances
 * (by index) in the same order, with their starts. */
static void check_find(struct cap *c, const struct trove_find_options *o)
{
    struct trove_bytes out = {0};
    struct trove_diag diag = {0};
    struct want_hit *w = malloc((c->ev.len + 1) * sizeof *w);
    size_t n = 0, got = 0;
    const char *p;
    int ok = 1;

    for (size_t i = 0; i < c->ev.len; i++) {
        const struct trove_event *e = &c->ev.ev[i];
        size_t len = 0;
        const char *str = trove_names_get(c->names, TROVE_NAME_EVENT, e->name_id, 0, &len);
        if (!str || e->start_ns < o->from_ns || (o->to_ns && e->start_ns >= o->to_ns) ||
            e->dur_ns < o->min_dur_ns || (o->max_dur_ns && e->dur_ns > o->max_dur_ns))
            continue;
        if (o->nids) {
            size_t k = 0;
            while (k < o->nids && o->ids[k] != e->name_id)
                k++;
            if (k == o->nids)
                continue;
        } else if (o->match ? !has_ci(str, len, o->name) : (len != strlen(o->name) || memcmp(str, o->name, len))) {
            continue;
        }
        w[n].index = i;
        w[n].start = e->start_ns;
        w[n++].dur = e->dur_ns;
    }
    find_order = o->order;
    qsort(w, n, sizeof *w, want_cmp);
    CHECK_EQ_INT(trove_capture_find_json(c->s, "sum", o, &out, NULL, &diag), TROVE_OK);
    CHECK(trove_bytes_append(&out, "", 1) == TROVE_OK);
    for (p = (const char *)out.ptr; (p = strstr(p, "{\"index\":")) != NULL; p++, got++) {
        unsigned long long idx = 0, st = 0;
        if (sscanf(p, "{\"index\":%llu,\"start_ns\":%llu", &idx, &st) != 2 || got >= n ||
            idx != w[got].index || st != w[got].start)
            ok = 0;
    }
    if (!ok || got != (n < o->limit ? n : o->limit))
        fprintf(stderr, "find %s (match %d, %zu ids, order %d) in [%" PRIu64 ", %" PRIu64 "): %zu of %zu, %s\n",
                o->name ? o->name : "(ids)", o->match, o->nids, o->order, o->from_ns, o->to_ns, got, n, ok ? "in order" : "differ");
    CHECK(ok && got == (n < o->limit ? n : o->limit));
    trove_bytes_free(&out);
    free(w);
}

/* A name's match, each order, a range and a duration window, against the brute force. */
static void check_finds(struct cap *c, const char *name, const char *part, uint64_t first, uint64_t last)
{
    struct trove_find_options o = {0};
    uint64_t mid = first + (last - first) / 2;

    o.limit = 50;
    for (int order = 0; order < 3; order++) {
        o.order = order;
        o.name = name;
        o.match = 0;
        o.from_ns = 0;
        o.to_ns = 0;
        check_find(c, &o);
        o.name = part;
        o.match = 1;
        check_find(c, &o);
        o.from_ns = mid; /* the next after a time, the previous before it */
        check_find(c, &o);
        o.from_ns = 0;
        o.to_ns = mid;
        check_find(c, &o);
        o.min_dur_ns = 1000;
        o.max_dur_ns = 20000;
        check_find(c, &o);
        o.min_dur_ns = o.max_dur_ns = 0;
        /* the ids of the names that contain part, given in place of it: the same answers */
        {
            uint32_t *ids = malloc((trove_names_count(c->names) + 1) * sizeof *ids);
            size_t n = 0;
            for (size_t i = 0; i < trove_names_count(c->names); i++) {
                struct trove_name_entry e;
                trove_names_entry(c->names, i, &e);
                if (e.type == TROVE_NAME_EVENT && has_ci(e.str, e.len, part))
                    ids[n++] = e.a;
            }
            qsort(ids, n, sizeof *ids, u32_sort);
            o.name = NULL;
            o.match = 0;
            o.ids = ids;
            o.nids = n;
            o.to_ns = 0;
            o.from_ns = mid;
            if (n > 0)
                check_find(c, &o);
            o.ids = NULL;
            o.nids = 0;
            free(ids);
        }
    }
}

static void check_capture(struct cap *c, uint64_t seed)
{
    uint64_t first = UINT64_MAX, last = 0, st = seed;

    for (size_t i = 0; i < c->ev.len; i++) {
        first = c->ev.ev[i].start_ns < first ? c->ev.ev[i].start_ns : first;
        last = c->ev.ev[i].start_ns > last ? c->ev.ev[i].start_ns : last;
    }
    check_views(c, seed);
    check_stats(c, 0, UINT64_MAX);
    for (int i = 0; i < 4; i++) { /* ranges that cut segments in the middle */
        uint64_t a = first + test_rand(&st) % (last - first + 1), b = first + test_rand(&st) % (last - first + 1);
        check_stats(c, a < b ? a : b, (a < b ? b : a) + 1);
        check_stats_clip(c, a < b ? a : b, (a < b ? b : a) + 1);
    }
    check_stats_clip(c, 0, UINT64_MAX);
    /* a narrow range in the middle: spans that began segments before it reach into it */
    check_stats_clip(c, first + (last - first) / 2, first + (last - first) / 2 + (last - first) / 500 + 1);
}

/* The view frame of a small capture: its golden vector, and what it holds. */
static void test_view_frame(void)
{
    struct trove_event e[16];
    size_t n = hand_events(e);
    struct trove_events a = {e, n, n};
    struct trove_names *names = NULL;
    struct trove_view_options o = {0};
    struct trove_view_frame f = {0};
    struct trove_bytes b = {0};
    struct trove_diag diag = {0};
    struct cap c;

    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_EVENT, 1, 0, "frame work", 10), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_EVENT, 4, 0, "mark", 4), TROVE_OK);
    CHECK_EQ_INT(cap_make(&c, &a, names, 4 * 32), TROVE_OK);
    o.from_ns = 0;
    o.to_ns = 6000;
    o.px = 3; /* 2000 ns a pixel: cells of 1024 ns */
    o.names = 1;
    CHECK_EQ_INT(trove_capture_view(c.s, "sum", &o, &b, NULL, &diag), TROVE_OK);
    test_check_vector("view_frame.bin", b.ptr, b.len);
    CHECK_EQ_INT(trove_view_decode(b.ptr, b.len, &f, &diag), TROVE_OK);
    CHECK(f.shift == 10 && f.from_ns == 0 && f.to_ns == 6000);
    CHECK(view_matches(&a, &o, &f, 5000));
    /* whole: the frame (5000 ns); in cells: the rest */
    CHECK_EQ_INT(f.nevents, 1);
    CHECK(f.events[0].ev.dur_ns == 5000 && f.events[0].index == 7);
    CHECK_EQ_INT(f.ntracks, 4);
    CHECK(f.nnames >= 2 && f.names[0].id <= 1);
    for (size_t i = 0; i < f.nnames; i++)
        if (f.names[i].id == 4)
            CHECK(f.names[i].len == 4 && !memcmp(f.names[i].str, "mark", 4));
    for (size_t i = 0; i < f.ncells; i++)
        if (f.cells[i].lane == TROVE_SUMMARY_LANE_COUNTER) /* both samples, at 3100 and 3200 */
            CHECK(f.cells[i].count == 2 && f.cells[i].vmin == trove_counter_bits(-1.0) &&
                  f.cells[i].vmax == trove_counter_bits(2.5));
    trove_view_frame_free(&f);
    trove_bytes_free(&b);
    trove_names_free(names);
    cap_free(&c);
}

static void test_gen(void)
{
    static const uint64_t seeds[] = {1, 9};
    for (size_t s = 0; s < 2; s++) {
        struct trove_gen_options go = {0};
        struct trove_events a = {0};
        struct trove_names *names = NULL;
        struct cap c;
        go.events = 150000;
        go.seed = seeds[s];
        go.names = 300;
        CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
        CHECK_EQ_INT(trove_gen(&go, &a, names), TROVE_OK);
        /* 512 events a segment: 293 segments, three levels of nodes */
        if (cap_make(&c, &a, names, 512 * 32) == TROVE_OK) {
            check_capture(&c, seeds[s]);
            check_finds(&c, "zone_3", "ZONE_32", c.ev.ev[0].start_ns, c.ev.ev[c.ev.len - 1].start_ns);
        }
        else
            CHECK(!"capture written");
        cap_free(&c);
        trove_names_free(names);
        trove_events_free(&a);
    }
}

/* Frames (trove_capture_frames_json) from frame marks in two segments of 293 among events
 * with no frame: the same answer with summaries as without, reading only those two segments
 * (the nodes say which hold a frame event); with no frame mark at all, no segment. */
static void test_frames(void)
{
    struct trove_gen_options go = {0};
    struct trove_events a = {0}, b = {0};
    struct trove_names *names = NULL;
    struct trove_query_figures qs;
    struct trove_bytes x = {0}, y = {0};
    struct trove_diag diag = {0};
    struct cap c;

    go.events = 150000;
    go.seed = 5;
    go.names = 300;
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(trove_gen(&go, &a, names), TROVE_OK);
    for (size_t i = 0; i < a.len; i++) /* the generator's frames go: only the marks below */
        if (a.ev[i].kind != TROVE_KIND_FRAME)
            trove_events_push(&b, &a.ev[i]);
    for (size_t i = 40000; i < 41000; i += 100) { /* segments 78 and 79 of 512 events */
        b.ev[i].kind = TROVE_KIND_FRAME;
        b.ev[i].extra = TROVE_FRAME_MARKS;
        b.ev[i].tid = TROVE_TID_SYNTHETIC + 1;
        b.ev[i].depth = 0;
    }
    if (cap_make(&c, &b, names, 512 * 32) == TROVE_OK) {
        memset(&qs, 0, sizeof qs);
        CHECK_EQ_INT(trove_capture_frames_json(c.s, "sum", 0, 0, 100, &x, &qs, &diag), TROVE_OK);
        CHECK_EQ_INT(qs.segments, 2);
        CHECK_EQ_INT(trove_capture_frames_json(c.s, "raw", 0, 0, 100, &y, NULL, &diag), TROVE_OK);
        /* {"capture":"sum" and {"capture":"raw": the rest the same */
        CHECK(x.len > 16 && x.len == y.len && memcmp(x.ptr + 16, y.ptr + 16, x.len - 16) == 0);
        CHECK(strstr((const char *)x.ptr, "\"frames\":10,") != NULL);
        cap_free(&c);
    } else {
        CHECK(!"capture written");
    }
    b.len = 0;
    for (size_t i = 0; i < a.len; i++)
        if (a.ev[i].kind != TROVE_KIND_FRAME)
            trove_events_push(&b, &a.ev[i]);
    if (cap_make(&c, &b, names, 512 * 32) == TROVE_OK) {
        x.len = 0;
        memset(&qs, 0, sizeof qs);
        CHECK_EQ_INT(trove_capture_frames_json(c.s, "sum", 0, 0, 100, &x, &qs, &diag), TROVE_OK);
        CHECK_EQ_INT(qs.segments, 0);
        CHECK_EQ_INT(qs.nodes, 1);
        CHECK(strstr((const char *)x.ptr, "\"frames\":0,") != NULL);
        cap_free(&c);
    } else {
        CHECK(!"capture written");
    }
    trove_bytes_free(&x);
    trove_bytes_free(&y);
    trove_names_free(names);
    trove_events_free(&a);
    trove_events_free(&b);
}

static void test_sample(void)
{
    char path[512];
    struct trove_input_options io = {0};
    struct trove_events a = {0};
    struct trove_flows fl = {0};
    struct trove_names *names = NULL;
    struct trove_diag diag = {0};
    struct cap c;

    snprintf(path, sizeof path, "%s/chrome-trace-dom.json.zst", TROVE_SHARED_DATA);
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "test_summary: no sample trace at %s; its case is skipped\n", path);
        return;
    }
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(trove_input_load(path, &io, &a, names, &fl, &diag), TROVE_OK);
    if (cap_make(&c, &a, names, 4096 * 32) == TROVE_OK) {
        check_capture(&c, 5);
        check_finds(&c, "RunTask", "runtask", c.ev.ev[0].start_ns, c.ev.ev[c.ev.len - 1].start_ns);
    }
    else
        CHECK(!"capture written");
    cap_free(&c);
    trove_flows_free(&fl);
    trove_names_free(names);
    trove_events_free(&a);
}

/* A capture written without summaries gets them from trove_capture_index; a damaged one is
 * rebuilt; answers stay the same. */
static void test_index(void)
{
    struct trove_gen_options go = {0};
    struct trove_events a = {0};
    struct trove_capture_index_result r;
    struct trove_view_options o = {0};
    struct trove_bytes before = {0}, after = {0};
    struct trove_query_figures q = {0};
    struct trove_diag diag = {0};
    struct trove_capture_info info;
    struct cap c;

    go.events = 40000;
    CHECK_EQ_INT(trove_gen(&go, &a, NULL), TROVE_OK);
    CHECK_EQ_INT(cap_make(&c, &a, NULL, 1024 * 32), TROVE_OK);
    o.px = 800;
    /* the view the capture written with summaries answers */
    CHECK_EQ_INT(trove_capture_view(c.s, "sum", &o, &before, NULL, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(c.s, "raw", &info, &diag), TROVE_OK);
    CHECK(!(info.flags & TROVE_CAPTURE_FLAG_SUMMARY));
    CHECK_EQ_INT(trove_capture_index(c.s, "raw", NULL, &r, &diag), TROVE_OK);
    CHECK(!r.already && r.segments == 40 && r.summaries == 41 && r.built == 41);
    CHECK_EQ_INT(trove_capture_info(c.s, "raw", &info, &diag), TROVE_OK);
    CHECK(info.flags & TROVE_CAPTURE_FLAG_SUMMARY);
    /* the same objects the one-shot write made: nothing new */
    CHECK_EQ_INT(r.new_objects, 0);
    CHECK_EQ_INT(trove_capture_index(c.s, "raw", NULL, &r, &diag), TROVE_OK);
    CHECK(r.already && r.built == 0);
    CHECK_EQ_INT(trove_capture_view(c.s, "raw", &o, &after, &q, &diag), TROVE_OK);
    CHECK(before.len == after.len && memcmp(before.ptr, after.ptr, before.len) == 0);
    CHECK(q.nodes > 0);
    trove_bytes_free(&before);
    trove_bytes_free(&after);
    cap_free(&c);
    trove_events_free(&a);
}

/* The slots of captures a and b of s hold the same objects. */
static int same_slots(struct trove_store *s, const char *a, const char *b)
{
    struct trove_volume *va = NULL, *vb = NULL;
    struct trove_volume_info ia, ib;
    struct trove_digest *da = NULL, *db = NULL;
    int same = 0;

    if (trove_volume_open(s, a, &va, NULL) || trove_volume_open(s, b, &vb, NULL) ||
        trove_volume_info(va, &ia) || trove_volume_info(vb, &ib))
        goto out;
    if (ia.slots != ib.slots) {
        fprintf(stderr, "%s has %" PRIu64 " slots, %s %" PRIu64 "\n", a, ia.slots, b, ib.slots);
        goto out;
    }
    da = calloc(ia.slots + 1, sizeof *da);
    db = calloc(ia.slots + 1, sizeof *db);
    if (trove_volume_slot_digests(va, 0, ia.slots, da) || trove_volume_slot_digests(vb, 0, ia.slots, db))
        goto out;
    same = 1;
    for (uint64_t i = 0; i < ia.slots; i++)
        if (memcmp(&da[i], &db[i], sizeof da[i])) {
            fprintf(stderr, "slot %" PRIu64 " differs\n", i);
            same = 0;
        }
out:
    free(da);
    free(db);
    trove_volume_close(va);
    trove_volume_close(vb);
    return same;
}

/* A capture written batch by batch, committed often (mostly as drafts) and reopened for
 * appends, holds the same objects in the same slots as the one-shot write of the same events
 * once its last commit is not a draft: the summaries' slots too (complete nodes as their
 * segments fill, the incomplete ones at each commit). */
static void test_live_writer(void)
{
    static const uint64_t sizes[] = {150000, 512 * 64 * 2, 512 * 64 + 77, 300};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        struct trove_gen_options go = {0};
        struct trove_events a = {0};
        struct trove_names *names = NULL;
        struct trove_capture_options co = {0};
        struct trove_capture_writer *w = NULL;
        struct trove_diag diag = {0};
        uint64_t st = 11 + z;
        size_t at = 0, rounds = 0;
        struct cap c;

        go.events = sizes[z];
        go.seed = 4;
        go.names = 200;
        CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
        CHECK_EQ_INT(trove_gen(&go, &a, names), TROVE_OK);
        CHECK_EQ_INT(cap_make(&c, &a, names, 512 * 32), TROVE_OK);
        co.segment_bytes = 512 * 32;
        CHECK_EQ_INT(trove_capture_writer_open(c.s, "live", 0, &co, &w, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_capture_writer_names(w, names, &diag), TROVE_OK);
        while (at < a.len) {
            size_t k = 1 + test_rand(&st) % 9000;
            k = k > a.len - at ? a.len - at : k;
            CHECK_EQ_INT(trove_capture_writer_add(w, a.ev + at, k, &diag), TROVE_OK);
            at += k;
            /* commits as a live capture makes them: drafts, often */
            trove_capture_writer_drafts(w, (int)(test_rand(&st) % 4 != 0));
            if (test_rand(&st) % 3 == 0)
                CHECK_EQ_INT(trove_capture_writer_commit(w, NULL, &diag), TROVE_OK);
            if (++rounds % 7 == 0) { /* closed and opened again to append */
                CHECK_EQ_INT(trove_capture_writer_commit(w, NULL, &diag), TROVE_OK);
                trove_capture_writer_close(w);
                w = NULL;
                CHECK_EQ_INT(trove_capture_writer_open(c.s, "live", 1, NULL, &w, &diag), TROVE_OK);
                if (!w) {
                    fprintf(stderr, "reopen: %s\n", diag.msg);
                    break;
                }
            }
        }
        if (w && z == 0) {
            /* a draft's incomplete nodes are other bytes (fast), the last commit's the
             * one-shot write's */
            struct trove_capture_info d, f;
            trove_capture_writer_drafts(w, 1);
            CHECK_EQ_INT(trove_capture_writer_commit(w, &d, &diag), TROVE_OK);
            trove_capture_writer_drafts(w, 0);
            CHECK_EQ_INT(trove_capture_writer_commit(w, &f, &diag), TROVE_OK);
            CHECK(d.stored_bytes > f.stored_bytes && d.events == f.events);
        }
        trove_capture_writer_drafts(w, 0);
        if (w)
            CHECK_EQ_INT(trove_capture_writer_commit(w, NULL, &diag), TROVE_OK);
        trove_capture_writer_close(w);
        CHECK(same_slots(c.s, "sum", "live"));
        cap_free(&c);
        trove_names_free(names);
        trove_events_free(&a);
    }
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_leaf);
    RUN(test_buckets);
    RUN(test_view_frame);
    RUN(test_join_order);
    RUN(test_slot_order);
    RUN(test_index);
    RUN(test_live_writer);
    RUN(test_gen);
    RUN(test_sample);
    RUN(test_frames);
    return test_done();
}
