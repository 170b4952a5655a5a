/*
 * test_capture_live.c: the live capture writer (src/capture/capture_live.c). The key
 * property is determinism: a capture written through the writer — in batches of random
 * sizes, names merged at random points, committed at random points, closed without a commit
 * (the tail lost, as a kill would lose it) and reopened with append — has, after each commit,
 * exactly the objects trove_capture_write makes of the events and names committed so far
 * with the same options: the same digest in every slot, the same header bytes. Around it:
 * each commit is seen through the writer's own store handle, through a read-only handle open
 * since before the writer started and through one opened after the commit (info, list, and
 * a replay of every event); a commit that changes nothing writes nothing; a capture never
 * committed leaves nothing behind; the errors of open, add and commit, each leaving the
 * capture and the writer as they were; a writer killed with SIGKILL at random moments,
 * the capture then at its last commit and continued by the next writer; and names past one
 * object, in parts, a commit putting only the parts that changed (counted), the same
 * objects as the one-shot write after random renames, beside a live profile.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/gen.h"
#include "trove/stream.h"
#include "trove/testing.h"
#include "trove/wire.h"

static char root[] = "/tmp/trove_test_capture_live_XXXXXX";
static char sdir[sizeof root + 16];

static struct trove_store *open_store(unsigned flags)
{
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int rc = trove_store_open(sdir, flags | TROVE_STORE_NOSYNC, &s, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "store open: %s\n", diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    return s;
}

static int count_object(void *ctx, const struct trove_digest *d)
{
    (void)d;
    (*(uint64_t *)ctx)++;
    return 0;
}

static uint64_t store_objects(struct trove_store *s)
{
    uint64_t n = 0;
    CHECK_EQ_INT(trove_backend_list(trove_store_backend(s), count_object, &n), TROVE_OK);
    return n;
}

/* The committed recipe's generation of volume `name` (0: no such volume). */
static uint64_t generation(struct trove_store *s, const char *name)
{
    struct trove_volume_entry *ve = NULL;
    size_t n = 0;
    uint64_t gen = 0;
    CHECK_EQ_INT(trove_volume_list(s, &ve, &n), TROVE_OK);
    for (size_t i = 0; i < n; i++)
        if (strcmp(ve[i].name, name) == 0)
            gen = ve[i].generation;
    free(ve);
    return gen;
}

static int same_info(const struct trove_capture_info *a, const struct trove_capture_info *b)
{
    return a->events == b->events && a->segments == b->segments && a->first_ns == b->first_ns &&
           a->end_ns == b->end_ns && a->names == b->names && a->raw_bytes == b->raw_bytes &&
           a->stored_bytes == b->stored_bytes && a->flows == b->flows;
}

/* Captures a and b of s are the same objects: as many slots, the same digest in each, the
 * same header bytes. */
static int same_objects(struct trove_store *s, const char *a, const char *b, const char *what)
{
    struct trove_volume *va = NULL, *vb = NULL;
    struct trove_volume_info ia, ib;
    struct trove_bytes ha = {0}, hb = {0};
    struct trove_digest *da = NULL, *db = NULL;
    int same = 0;

    if (trove_volume_open(s, a, &va, NULL) != TROVE_OK ||
        trove_volume_open(s, b, &vb, NULL) != TROVE_OK || trove_volume_info(va, &ia) != TROVE_OK ||
        trove_volume_info(vb, &ib) != TROVE_OK)
        goto out;
    if (ia.slots != ib.slots) {
        fprintf(stderr, "%s: %llu slots, want %llu\n", what, (unsigned long long)ia.slots,
                (unsigned long long)ib.slots);
        goto out;
    }
    da = calloc(ia.slots, sizeof *da);
    db = calloc(ia.slots, sizeof *db);
    if (!da || !db || trove_volume_slot_digests(va, 0, ia.slots, da) != TROVE_OK ||
        trove_volume_slot_digests(vb, 0, ia.slots, db) != TROVE_OK)
        goto out;
    for (uint64_t k = 0; k < ia.slots; k++)
        if (!trove_digest_equal(&da[k], &db[k])) {
            fprintf(stderr, "%s: slot %llu differs\n", what, (unsigned long long)k);
            goto out;
        }
    same = trove_volume_get_object(va, 0, &ha) == TROVE_OK &&
           trove_volume_get_object(vb, 0, &hb) == TROVE_OK && ha.len == hb.len && ha.len > 0 &&
           memcmp(ha.ptr, hb.ptr, ha.len) == 0;
out:
    trove_volume_close(va);
    trove_volume_close(vb);
    trove_bytes_free(&ha);
    trove_bytes_free(&hb);
    free(da);
    free(db);
    return same;
}

/* ---- the input: generated events, some counters, names in pieces ----------------------- */

#define PIECES 7

struct input {
    struct trove_events ev;
    struct trove_names *piece[PIECES]; /* merged in this order */
    struct trove_names *final;         /* every piece merged */
};

static void input_make(struct input *in, uint64_t n, uint64_t seed, int counters)
{
    struct trove_gen_options g;
    struct trove_names *all = NULL;
    size_t count, cut[PIECES - 1];

    memset(in, 0, sizeof *in);
    trove_gen_defaults(&g);
    g.events = n;
    g.seed = seed;
    g.names = 300;
    CHECK_EQ_INT(trove_names_new(&all), TROVE_OK);
    CHECK_EQ_INT(trove_gen(&g, &in->ev, all), TROVE_OK);
    if (counters)
        for (size_t i = 5; i < in->ev.len; i += 97) {
            in->ev.ev[i].kind = TROVE_KIND_COUNTER;
            in->ev.ev[i].dur_ns = trove_counter_bits((double)i * -1.5);
        }
    /* Pieces of the table; piece 3 renames some entries of the pieces before and after it,
     * and piece 5 gives a few of them their first names back (a replacement in place). */
    count = trove_names_count(all);
    for (int p = 0; p < PIECES - 1; p++)
        cut[p] = count * (size_t)(p + 1) / PIECES;
    for (int p = 0; p < PIECES; p++) {
        size_t from = p == 0 ? 0 : cut[p - 1], to = p == PIECES - 1 ? count : cut[p];
        CHECK_EQ_INT(trove_names_new(&in->piece[p]), TROVE_OK);
        for (size_t i = from; i < to; i++) {
            struct trove_name_entry e;
            trove_names_entry(all, i, &e);
            CHECK_EQ_INT(trove_names_set(in->piece[p], e.type, e.a, e.b, e.str, e.len), TROVE_OK);
        }
    }
    for (size_t i = 0; i < count; i += 13) {
        struct trove_name_entry e;
        char s[64];
        int len = snprintf(s, sizeof s, "renamed %zu", i);
        trove_names_entry(all, i, &e);
        CHECK_EQ_INT(trove_names_set(in->piece[3], e.type, e.a, e.b, s, (size_t)len), TROVE_OK);
        if (i % 26 == 0)
            CHECK_EQ_INT(trove_names_set(in->piece[5], e.type, e.a, e.b, e.str, e.len), TROVE_OK);
    }
    CHECK_EQ_INT(trove_names_new(&in->final), TROVE_OK);
    for (int p = 0; p < PIECES; p++)
        CHECK_EQ_INT(trove_names_merge(in->final, in->piece[p]), TROVE_OK);
    trove_names_free(all);
}

static void input_free(struct input *in)
{
    trove_events_free(&in->ev);
    for (int p = 0; p < PIECES; p++)
        trove_names_free(in->piece[p]);
    trove_names_free(in->final);
}

/* Pieces [0, p) merged into a fresh table. */
static struct trove_names *names_upto(const struct input *in, int p)
{
    struct trove_names *t = NULL;
    CHECK_EQ_INT(trove_names_new(&t), TROVE_OK);
    for (int i = 0; i < p; i++)
        CHECK_EQ_INT(trove_names_merge(t, in->piece[i]), TROVE_OK);
    return t;
}

/* ---- replay through a store handle ------------------------------------------------------- */

/* Replay capture `name` through s and require events[0..n) and names. */
static void expect_replay(struct trove_store *s, const char *name, const struct trove_event *ev,
                          size_t n, const struct trove_names *names)
{
    struct trove_events got = {0};
    struct trove_names *got_names = NULL;

    CHECK_EQ_INT(trove_names_new(&got_names), TROVE_OK);
    CHECK_EQ_INT(test_capture_load(s, name, &got, got_names), TROVE_OK);
    CHECK_EQ_INT(got.len, n);
    CHECK(got.len == n && (n == 0 || memcmp(got.ev, ev, n * sizeof *ev) == 0));
    CHECK(trove_names_equal(got_names, names));
    trove_names_free(got_names);
    trove_events_free(&got);
}

/* ---- determinism ------------------------------------------------------------------------- */

static struct trove_capture_options sizes(uint64_t seg_bytes, uint32_t fe)
{
    struct trove_capture_options o;
    memset(&o, 0, sizeof o);
    o.segment_bytes = seg_bytes;
    o.frame_events = fe;
    return o;
}

/* The writer's capture "live" is what trove_capture_write makes of events[0..n) and names
 * (as "ref"); the writer's store handle sees it, and so do a read-only one opened now and
 * `reader`, read-only and open since before the writer started. */
static void expect_committed(struct trove_store *s, struct trove_store *reader,
                             const struct trove_event *ev, size_t n,
                             const struct trove_names *names, const struct trove_capture_options *o,
                             const struct trove_capture_info *got, int replay, const char *what)
{
    struct trove_capture_info want, seen;
    struct trove_capture_entry *list = NULL;
    struct trove_diag diag = {0};
    struct trove_store *ro = open_store(TROVE_STORE_READONLY);
    size_t count = 0, found = 0;

    if (!ro)
        return;
    CHECK_EQ_INT(trove_capture_write(s, "ref", ev, n, names, o, &want, &diag), TROVE_OK);
    CHECK(same_objects(s, "live", "ref", what));
    CHECK(same_info(got, &want));
    memset(&seen, 0, sizeof seen);
    CHECK_EQ_INT(trove_capture_info(s, "live", &seen, &diag), TROVE_OK);
    CHECK(same_info(&seen, &want));
    memset(&seen, 0, sizeof seen);
    CHECK_EQ_INT(trove_capture_info(ro, "live", &seen, &diag), TROVE_OK);
    CHECK(same_info(&seen, &want));
    memset(&seen, 0, sizeof seen);
    CHECK_EQ_INT(trove_capture_info(reader, "live", &seen, &diag), TROVE_OK);
    CHECK(same_info(&seen, &want));
    CHECK_EQ_INT(trove_capture_list(reader, &list, &count), TROVE_OK);
    for (size_t i = 0; i < count; i++)
        if (strcmp(list[i].name, "live") == 0) {
            found++;
            CHECK(list[i].error == TROVE_OK && same_info(&list[i].info, &want));
        }
    CHECK_EQ_INT(found, 1);
    free(list);
    if (replay) {
        expect_replay(ro, "live", ev, n, names);
        expect_replay(reader, "live", ev, n, names);
    }
    trove_store_close(ro);
}

/*
 * Write in through a writer into "live" with random batches (0 events, a few, more than a
 * segment), names merged, commits, and (reopen) closes with or without a commit followed by
 * an append reopen; after some commits, and at the end, compare with the one-shot write.
 */
static void run_live(struct trove_store *s, struct trove_store *reader, const struct input *in,
                     uint64_t seg_bytes, uint32_t fe, uint64_t seed, int reopen, const char *what)
{
    struct trove_capture_options o = sizes(seg_bytes, fe);
    struct trove_capture_writer *w = NULL;
    struct trove_capture_info info;
    struct trove_diag diag = {0};
    uint64_t rng = seed, per = (seg_bytes ? seg_bytes : TROVE_CAPTURE_SEGMENT_BYTES_DEFAULT) / 32;
    size_t n = in->ev.len, pos = 0, pos_committed = 0;
    int p = 0, p_committed = 0, commits = 0, closes = 0, committed_once = 0, rounds = 0;
    struct trove_names *cur = names_upto(in, 0);

    trove_volume_remove(s, "live", NULL);
    CHECK_EQ_INT(trove_capture_writer_open(s, "live", 0, &o, &w, &diag), TROVE_OK);
    while (w && pos < n) {
        uint64_t r = test_rand(&rng);
        size_t batch;
        switch (r % 6) {
        case 0: batch = 0; break;
        case 1: batch = 1 + (size_t)(r >> 8) % 7; break;
        case 2: /* more than a segment, if that is not the whole input */
            if (per <= 8192) {
                batch = (size_t)per + (size_t)(r >> 8) % (2 * per + 1);
                break;
            }
            /* fall through */
        default: batch = (size_t)(r >> 8) % (per < 400 ? 3 * per : 1200); break;
        }
        if (batch > n - pos)
            batch = n - pos;
        rounds++;
        CHECK_EQ_INT(trove_capture_writer_add(w, in->ev.ev + pos, batch, &diag), TROVE_OK);
        pos += batch;
        CHECK_EQ_INT(trove_capture_writer_events(w), pos);
        if ((r >> 20) % 5 == 0 && p < PIECES) {
            CHECK_EQ_INT(trove_capture_writer_names(w, in->piece[p], &diag), TROVE_OK);
            CHECK_EQ_INT(trove_names_merge(cur, in->piece[p]), TROVE_OK);
            p++;
        }
        if ((r >> 24) % 3 == 0) {
            CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
            CHECK_EQ_INT(trove_capture_writer_committed(w), pos);
            pos_committed = pos;
            p_committed = p;
            committed_once = 1;
            {
                struct trove_capture_info seen;
                CHECK_EQ_INT(trove_capture_info(reader, "live", &seen, NULL), TROVE_OK);
                CHECK_EQ_INT(seen.events, pos);
            }
            /* the first few commits and some later ones against the one-shot write */
            if (commits < 3 || (r >> 28) % 6 == 0)
                expect_committed(s, reader, in->ev.ev, pos, cur, &o, &info, commits == 1, what);
            commits++;
        }
        if (reopen && closes < 3 && (r >> 32) % 9 == 0) {
            /* Closed, with or without a commit: what was not committed is gone (a kill), and
             * the capture continues from its last commit. */
            struct trove_capture_info seen;
            int rc;
            trove_capture_writer_close(w);
            w = NULL;
            closes++;
            rc = trove_capture_info(s, "live", &seen, NULL);
            CHECK_EQ_INT(rc, committed_once ? TROVE_OK : TROVE_ERR_NOTFOUND);
            CHECK(rc != TROVE_OK || seen.events == pos_committed);
            rc = trove_capture_writer_open(s, "live", 1, (r >> 36) % 2 ? &o : NULL, &w, &diag);
            if (!committed_once) {
                CHECK_EQ_INT(rc, TROVE_ERR_NOTFOUND);
                CHECK(w == NULL);
                CHECK_EQ_INT(trove_capture_writer_open(s, "live", 0, &o, &w, &diag), TROVE_OK);
            } else {
                if (rc != TROVE_OK)
                    fprintf(stderr, "%s: append: %s\n", what, diag.msg);
                CHECK_EQ_INT(rc, TROVE_OK);
            }
            CHECK_EQ_INT(trove_capture_writer_events(w), pos_committed);
            CHECK_EQ_INT(trove_capture_writer_committed(w), pos_committed);
            pos = pos_committed;
            p = p_committed;
            trove_names_free(cur);
            cur = names_upto(in, p);
        }
    }
    for (; w && p < PIECES; p++)
        CHECK_EQ_INT(trove_capture_writer_names(w, in->piece[p], &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_committed(w), n);
    trove_capture_writer_close(w);
    expect_committed(s, reader, in->ev.ev, n, in->final, &o, &info, 1, what);
    trove_names_free(cur);
    fprintf(stderr, "%s: %d batches, %d commits, %d closes\n", what, rounds, commits + 1,
            closes);
}

static void test_determinism(void)
{
    struct trove_store *s = open_store(TROVE_STORE_CREATE);
    struct trove_store *reader = open_store(TROVE_STORE_READONLY); /* open all along */
    struct input in;

    if (!s || !reader)
        goto out;
    input_make(&in, 30000, 1, 1);
    run_live(s, reader, &in, 65536, 500, 11, 0, "2048-event segments, 500-event frames");
    run_live(s, reader, &in, 65536, 500, 12, 1, "the same, closed and reopened");
    run_live(s, reader, &in, 32 * 1000, 333, 13, 1, "1000-event segments, 333-event frames");
    run_live(s, reader, &in, 32 * 2048, 2048, 14, 1, "a frame a segment");
    run_live(s, reader, &in, 0, 0, 15, 1, "the default sizes");
    input_free(&in);
    input_make(&in, 700, 2, 0);
    run_live(s, reader, &in, 32 * 7, 3, 16, 1, "7-event segments, no counters");
    run_live(s, reader, &in, 32, 1, 17, 1, "an event a segment");
    input_free(&in);
    input_make(&in, 70000, 3, 1);
    run_live(s, reader, &in, 0, 0, 18, 1, "the default sizes, three segments");
    input_free(&in);
out:
    trove_store_close(reader);
    trove_store_close(s);
}

/* ---- commits, rollbacks and the volume between them ------------------------------------- */

static void test_commits(void)
{
    struct trove_store *s = open_store(0), *ro = NULL;
    struct trove_capture_options o = sizes(32 * 1024, 100);
    struct trove_capture_writer *w = NULL;
    struct trove_capture_info i1, i2, seen;
    struct trove_diag diag = {0};
    struct input in;
    uint64_t objects, gen;

    if (!s)
        return;
    input_make(&in, 10000, 4, 0);

    /* An empty capture: the first commit writes it even with nothing added. */
    CHECK_EQ_INT(trove_capture_writer_open(s, "empty", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &i1, &diag), TROVE_OK);
    CHECK(i1.events == 0 && i1.segments == 0 && i1.stored_bytes == 96 + 16);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_write(s, "empty.ref", NULL, 0, NULL, &o, &i2, &diag), TROVE_OK);
    CHECK(same_objects(s, "empty", "empty.ref", "empty"));

    /* A commit that changes nothing writes nothing, names merged again included. */
    CHECK_EQ_INT(trove_capture_writer_open(s, "c", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 5000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, in.piece[0], &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &i1, &diag), TROVE_OK);
    CHECK(i1.new_objects > 0);
    objects = store_objects(s);
    gen = generation(s, "c");
    CHECK_EQ_INT(trove_capture_writer_names(w, in.piece[0], &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 0, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &i2, &diag), TROVE_OK);
    CHECK(same_info(&i1, &i2) && i2.new_objects == 0);
    CHECK_EQ_INT(store_objects(s), objects);
    CHECK_EQ_INT(generation(s, "c"), gen);
    /* Reopened with append and committed with nothing new: nothing written either. */
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_writer_open(s, "c", 1, NULL, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, in.piece[0], &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &i2, &diag), TROVE_OK);
    CHECK(same_info(&i1, &i2));
    CHECK_EQ_INT(store_objects(s), objects);
    CHECK_EQ_INT(generation(s, "c"), gen);

    /* Adds that fill segments, then a close without a commit: the capture stays at its last
     * commit for both handles, objects and all. While the filled segments are uncommitted
     * the volume is open in the writer's store handle; the other handle reads the commit. */
    CHECK_EQ_INT(trove_capture_write(s, "c.ref", in.ev.ev, 5000, in.piece[0], &o, NULL, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev + 5000, 4000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "c", &seen, NULL), TROVE_ERR_BUSY);
    ro = open_store(TROVE_STORE_READONLY);
    CHECK_EQ_INT(trove_capture_info(ro, "c", &seen, NULL), TROVE_OK);
    CHECK_EQ_INT(seen.events, 5000);
    CHECK_EQ_INT(trove_capture_writer_events(w), 9000);
    CHECK_EQ_INT(trove_capture_writer_committed(w), 5000);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_info(s, "c", &seen, NULL), TROVE_OK);
    CHECK(same_info(&seen, &i1));
    CHECK(same_objects(s, "c", "c.ref", "rolled back"));
    CHECK_EQ_INT(generation(s, "c"), gen);

    /* A new capture never committed leaves nothing, full segments put or not. */
    CHECK_EQ_INT(trove_capture_writer_open(s, "never", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 3500, &diag), TROVE_OK);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(generation(s, "never"), 0);
    CHECK_EQ_INT(trove_capture_info(s, "never", &seen, NULL), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_capture_writer_open(s, "never", 0, &o, &w, &diag), TROVE_OK);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(generation(s, "never"), 0);

    /* Starting anew over a capture: the old one is there until the first commit. */
    CHECK_EQ_INT(trove_capture_writer_open(s, "c", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_events(w), 0);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev + 100, 2000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(ro, "c", &seen, NULL), TROVE_OK);
    CHECK_EQ_INT(seen.events, 5000);
    trove_store_close(ro);
    trove_capture_writer_close(w);
    CHECK(same_objects(s, "c", "c.ref", "not replaced"));
    CHECK_EQ_INT(trove_capture_writer_open(s, "c", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev + 100, 2000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &i1, &diag), TROVE_OK);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_write(s, "c.ref", in.ev.ev + 100, 2000, NULL, &o, NULL, &diag),
                 TROVE_OK);
    CHECK(same_objects(s, "c", "c.ref", "replaced"));

    /* Someone else commits the capture behind an open writer: the writer stops, and its
     * close leaves the other's capture alone (a new one it made too). */
    CHECK_EQ_INT(trove_capture_writer_open(s, "c", 1, NULL, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_write(s, "c", in.ev.ev, 300, NULL, &o, NULL, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 10, &diag), TROVE_OK);
    memset(&diag, 0, sizeof diag);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &i1, &diag), TROVE_ERR_MISMATCH);
    CHECK(strstr(diag.msg, "changed") != NULL);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 10, &diag), TROVE_ERR_MISMATCH);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &i1, &diag), TROVE_ERR_MISMATCH);
    CHECK_EQ_INT(trove_capture_info(s, "c", &seen, NULL), TROVE_OK); /* not held open */
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_info(s, "c", &seen, NULL), TROVE_OK);
    CHECK_EQ_INT(seen.events, 300);
    /* A new capture is pending until its first commit: nothing of it is in the store (a
     * reader finds none), and the writer holds it, so another write of the name through
     * this handle is BUSY rather than taken over; closed uncommitted, it leaves nothing. */
    CHECK_EQ_INT(trove_capture_writer_open(s, "new", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 10, &diag), TROVE_OK);
    {
        struct trove_volume_entry *vl = NULL;
        size_t nv = 0;
        CHECK_EQ_INT(trove_volume_list(s, &vl, &nv), TROVE_OK);
        for (size_t k = 0; k < nv; k++)
            CHECK(strcmp(vl[k].name, "new") != 0);
        free(vl);
    }
    CHECK_EQ_INT(trove_capture_write(s, "new", in.ev.ev, 300, NULL, &o, NULL, &diag),
                 TROVE_ERR_BUSY);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_info(s, "new", &seen, NULL), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_capture_writer_open(s, "new", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 10, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &i1, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_write(s, "new", in.ev.ev, 300, NULL, &o, NULL, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 10, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &i1, &diag), TROVE_ERR_MISMATCH);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_info(s, "new", &seen, NULL), TROVE_OK);
    CHECK_EQ_INT(seen.events, 300);
    input_free(&in);
    trove_store_close(s);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void expect_open(struct trove_store *s, const char *name, int append,
                        const struct trove_capture_options *o, int want, const char *needle)
{
    struct trove_capture_writer *w = (struct trove_capture_writer *)&w; /* not NULL */
    struct trove_diag diag = {0};
    int rc = trove_capture_writer_open(s, name, append, o, &w, &diag);
    if (rc != want || (needle && !strstr(diag.msg, needle)))
        fprintf(stderr, "open %s (append %d): got %d (%s)\n", name, append, rc, diag.msg);
    CHECK_EQ_INT(rc, want);
    CHECK(!needle || strstr(diag.msg, needle));
    CHECK(rc == TROVE_OK || w == NULL);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_writer_open(s, name, append, o, &w, NULL), want);
    trove_capture_writer_close(w);
}

static void test_errors(void)
{
    struct trove_store *s = open_store(0), *ro = NULL;
    struct trove_capture_options o = sizes(32 * 512, 64), bad;
    struct trove_capture_writer *w = NULL;
    struct trove_capture_info info, seen;
    struct trove_diag diag = {0};
    struct trove_event *many = NULL;
    struct trove_flow f;
    struct input in;
    uint64_t gen;

    if (!s)
        return;
    input_make(&in, 3000, 5, 1);

    expect_open(s, "missing", 1, NULL, TROVE_ERR_NOTFOUND, "no capture named missing");
    expect_open(s, ".bad", 0, NULL, TROVE_ERR_INVALID, NULL);
    expect_open(s, "x", 0, NULL, TROVE_OK, NULL);
    bad = sizes(33, 0);
    expect_open(s, "x", 0, &bad, TROVE_ERR_INVALID, "segment size");
    bad = sizes(0, TROVE_WIRE_MAX_EVENTS + 1);
    expect_open(s, "x", 0, &bad, TROVE_ERR_INVALID, "events per frame");
    CHECK_EQ_INT(trove_capture_writer_open(NULL, "x", 0, NULL, &w, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_writer_open(s, "x", 0, NULL, NULL, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(generation(s, "x"), 0);

    /* Names the store holds otherwise: a block volume, a snapshot, a read-only store. */
    CHECK_EQ_INT(trove_volume_create(s, "blocks", 1 << 20, 0, NULL, NULL), TROVE_OK);
    expect_open(s, "blocks", 0, NULL, TROVE_ERR_EXISTS, "block volume");
    expect_open(s, "blocks", 1, NULL, TROVE_ERR_EXISTS, "block volume");
    CHECK_EQ_INT(trove_capture_write(s, "cap", in.ev.ev, 1000, in.final, &o, &info, &diag),
                 TROVE_OK);
    CHECK_EQ_INT(trove_snapshot_create(s, "cap", "cap.snap", NULL), TROVE_OK);
    expect_open(s, "cap.snap", 0, NULL, TROVE_ERR_READONLY, "snapshot");
    expect_open(s, "cap.snap", 1, NULL, TROVE_ERR_READONLY, "snapshot");
    if ((ro = open_store(TROVE_STORE_READONLY)) != NULL) {
        expect_open(ro, "cap", 1, NULL, TROVE_ERR_READONLY, NULL);
        expect_open(ro, "cap", 0, NULL, TROVE_ERR_READONLY, NULL);
        expect_open(ro, "new", 0, NULL, TROVE_ERR_READONLY, NULL);
        trove_store_close(ro);
    }
    /* An append keeps the capture's sizes. */
    bad = sizes(32 * 1024, 0);
    expect_open(s, "cap", 1, &bad, TROVE_ERR_INVALID, "segments of 16384 bytes");
    bad = sizes(0, 63);
    expect_open(s, "cap", 1, &bad, TROVE_ERR_INVALID, "frames of 64 events");
    expect_open(s, "cap", 1, &o, TROVE_OK, NULL);
    /* A capture write is one commit: its new volume wrote nothing before it. */
    CHECK_EQ_INT(generation(s, "cap"), 1);
    /* An object volume no write committed into is no capture to append to; a new write takes
     * it over. */
    CHECK_EQ_INT(trove_volume_create_objects(s, "unfinished", 5, 1 << 20, NULL, NULL), TROVE_OK);
    expect_open(s, "unfinished", 1, NULL, TROVE_ERR_NOTFOUND, "never committed");
    CHECK_EQ_INT(trove_capture_writer_open(s, "unfinished", 0, NULL, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, NULL, &diag), TROVE_OK);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_info(s, "unfinished", &seen, NULL), TROVE_OK);
    /* A capture with flow rows cannot be appended to (the writer has none), only replaced. */
    memset(&f, 0, sizeof f);
    f.ts_ns = in.ev.ev[0].start_ns;
    f.id = 1;
    f.pid = in.ev.ev[0].pid;
    f.tid = in.ev.ev[0].tid;
    f.flags = 1;
    CHECK_EQ_INT(trove_capture_write_trace(s, "flows", in.ev.ev, 100, NULL, &f, 1, NULL, NULL,
                                           &diag),
                 TROVE_OK);
    expect_open(s, "flows", 1, NULL, TROVE_ERR_INVALID, "flow rows");
    expect_open(s, "flows", 0, NULL, TROVE_OK, NULL);

    /* A bad pad: refused, nothing added, the writer goes on. */
    CHECK_EQ_INT(trove_capture_writer_open(s, "cap", 1, NULL, &w, &diag), TROVE_OK);
    gen = generation(s, "cap");
    in.ev.ev[1500].pad = 1;
    memset(&diag, 0, sizeof diag);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev + 1000, 1000, &diag), TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "event 500 has pad byte 0x01") != NULL);
    CHECK_EQ_INT(diag.offset, 500 * 32 + 27);
    CHECK_EQ_INT(trove_capture_writer_events(w), 1000);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &seen, &diag), TROVE_OK);
    CHECK(same_info(&seen, &info));
    CHECK_EQ_INT(generation(s, "cap"), gen);
    in.ev.ev[1500].pad = 0;
    CHECK_EQ_INT(trove_capture_writer_add(NULL, in.ev.ev, 1, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_writer_add(w, NULL, 1, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_writer_add(w, NULL, 0, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(NULL, in.final, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_writer_names(w, NULL, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(NULL, NULL, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_writer_events(NULL), 0);
    CHECK_EQ_INT(trove_capture_writer_committed(NULL), 0);
    trove_capture_writer_close(NULL);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev + 1000, 2000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &seen, &diag), TROVE_OK);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_write(s, "cap.ref", in.ev.ev, 3000, in.final, &o, NULL, &diag),
                 TROVE_OK);
    CHECK(same_objects(s, "cap", "cap.ref", "after a bad pad"));

    /* Past MAX_SEGMENTS: refused whole, nothing added. */
    CHECK((many = calloc(TROVE_CAPTURE_MAX_SEGMENTS + 1, sizeof *many)) != NULL);
    o = sizes(32, 1);
    CHECK_EQ_INT(trove_capture_writer_open(s, "limit", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 3, &diag), TROVE_OK);
    memset(&diag, 0, sizeof diag);
    CHECK_EQ_INT(trove_capture_writer_add(w, many, TROVE_CAPTURE_MAX_SEGMENTS - 2, &diag),
                 TROVE_ERR_LIMIT);
    CHECK(strstr(diag.msg, "larger segments") != NULL);
    CHECK_EQ_INT(trove_capture_writer_add(w, many, SIZE_MAX, &diag), TROVE_ERR_LIMIT);
    CHECK_EQ_INT(trove_capture_writer_events(w), 3);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &seen, &diag), TROVE_OK);
    CHECK_EQ_INT(seen.segments, 3);
    trove_capture_writer_close(w);
    free(many);
    input_free(&in);
    trove_store_close(s);
}

/* ---- kill -9 ----------------------------------------------------------------------------
 *
 * Each round forks a child that continues capture "kill" from where the last round left it
 * (append, or anew while nothing was committed) with random batches, names and commits, and
 * appends to a journal, one write(2) a line, "pending POS PIECES" before each commit and
 * "commit POS PIECES" after it. The parent kills it with SIGKILL after a random delay, then
 * requires the capture to be, object for object, the one-shot write of the last commit's
 * events and names (or of the pending one's, for a kill inside a commit), verify --deep to be
 * clean, and the next round continues from that state.
 */

#define KILL_ROUNDS 40

static void journal(int fd, const char *fmt, size_t pos, int p)
{
    char line[64];
    int len = snprintf(line, sizeof line, fmt, pos, p);
    if (write(fd, line, (size_t)len) != len)
        _exit(3);
}

static void kill_child(const struct input *in, const struct trove_capture_options *o, size_t pos,
                       int p, int append, uint64_t seed, int fd)
{
    struct trove_store *s = NULL;
    struct trove_capture_writer *w = NULL;
    uint64_t rng = seed;
    size_t n = in->ev.len;

    if (trove_store_open(sdir, TROVE_STORE_NOSYNC, &s, NULL) != TROVE_OK ||
        trove_capture_writer_open(s, "kill", append, o, &w, NULL) != TROVE_OK ||
        trove_capture_writer_events(w) != (append ? pos : 0))
        _exit(2);
    for (;;) {
        uint64_t r = test_rand(&rng);
        size_t batch = (size_t)(r % 900);
        if (batch > n - pos)
            batch = n - pos;
        if (trove_capture_writer_add(w, in->ev.ev + pos, batch, NULL) != TROVE_OK)
            _exit(2);
        pos += batch;
        if ((r >> 16) % 4 == 0 && p < PIECES &&
            trove_capture_writer_names(w, in->piece[p++], NULL) != TROVE_OK)
            _exit(2);
        if ((r >> 24) % 3 == 0 || (pos == n && p == PIECES)) {
            journal(fd, "pending %zu %d\n", pos, p);
            if (trove_capture_writer_commit(w, NULL, NULL) != TROVE_OK)
                _exit(2);
            journal(fd, "commit %zu %d\n", pos, p);
        }
        if (pos == n && p == PIECES)
            pause(); /* all written: wait for the kill */
    }
}

/* The capture is the one-shot write of events[0..pos) and pieces [0, p) (-> 1), or is not
 * there (-> 0 when pos is SIZE_MAX: nothing was committed yet), else -> -1. */
static int kill_state(struct trove_store *s, const struct input *in,
                      const struct trove_capture_options *o, size_t pos, int p)
{
    struct trove_capture_info seen;
    struct trove_names *names;
    int rc = trove_capture_info(s, "kill", &seen, NULL), same;

    if (pos == SIZE_MAX) /* none, or an empty object volume a kill left */
        return rc == TROVE_ERR_NOTFOUND || rc == TROVE_ERR_INVALID ? 0 : -1;
    if (rc != TROVE_OK || seen.events != pos)
        return -1;
    names = names_upto(in, p);
    same = trove_capture_write(s, "kill.ref", in->ev.ev, pos, names, o, NULL, NULL) == TROVE_OK &&
           same_objects(s, "kill", "kill.ref", "after a kill");
    trove_names_free(names);
    return same ? 1 : -1;
}

static void test_kill(void)
{
    struct trove_capture_options o = sizes(32 * 1024, 100);
    struct trove_verify_report vr;
    struct input in;
    size_t pos = SIZE_MAX; /* committed events: SIZE_MAX, none yet */
    int p = 0, rounds = 0, inside = 0;
    long extra = 0; /* ns added to the delay while rounds commit nothing (a slow build) */
    char jpath[sizeof root + 16];
    uint64_t rng = 99;

    snprintf(jpath, sizeof jpath, "%s/journal", root);
    input_make(&in, 100000, 6, 1);
    while (rounds < KILL_ROUNDS && !(pos == in.ev.len && p == PIECES)) {
        struct trove_store *s = NULL;
        struct timespec ts;
        size_t pend_pos = SIZE_MAX, last_pos = pos;
        int fd, status = 0, pend_p = 0, last_p = p, state;
        char buf[1 << 16], *line, *save = NULL;
        ssize_t len;
        pid_t pid;

        fd = open(jpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
        CHECK(fd >= 0);
        if (fd < 0)
            break;
        pid = fork();
        if (pid == 0)
            kill_child(&in, &o, pos == SIZE_MAX ? 0 : pos, p, pos != SIZE_MAX, test_rand(&rng),
                       fd);
        close(fd);
        ts.tv_sec = 0;
        ts.tv_nsec = extra + (long)(200000 + test_rand(&rng) % 6000000);
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        kill(pid, SIGKILL);
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        rounds++;

        /* The journal: the last commit that returned, and one that began after it. */
        fd = open(jpath, O_RDONLY);
        len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        CHECK(len >= 0 && (size_t)len < sizeof buf - 1);
        buf[len > 0 ? len : 0] = '\0';
        for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            size_t jp;
            int jq;
            if (sscanf(line, "pending %zu %d", &jp, &jq) == 2) {
                pend_pos = jp;
                pend_p = jq;
            } else if (sscanf(line, "commit %zu %d", &jp, &jq) == 2) {
                last_pos = jp;
                last_p = jq;
                pend_pos = SIZE_MAX;
            } else {
                CHECK(0);
            }
        }

        CHECK_EQ_INT(trove_store_open(sdir, TROVE_STORE_NOSYNC, &s, NULL), TROVE_OK);
        if (!s)
            break;
        state = kill_state(s, &in, &o, last_pos, last_p);
        if (state < 0 && pend_pos != SIZE_MAX) {
            state = kill_state(s, &in, &o, pend_pos, pend_p);
            last_pos = pend_pos;
            last_p = pend_p;
            inside++;
        }
        if (state < 0)
            fprintf(stderr, "kill round %d: not the capture of %zu events and %d name pieces "
                            "(nor of the pending commit)\n",
                    rounds, last_pos, last_p);
        CHECK(state >= 0);
        CHECK_EQ_INT(trove_store_verify(s, TROVE_VERIFY_DEEP, &vr, NULL, NULL), TROVE_OK);
        trove_store_close(s);
        if (state < 0)
            break;
        if (last_pos == pos && last_p == p)
            extra = extra ? (extra < 400000000 ? 2 * extra : extra) : 2000000;
        else
            extra /= 2;
        pos = last_pos;
        p = last_p;
    }
    fprintf(stderr, "kill -9: %d rounds, %d inside a commit that landed, %zu events committed\n",
            rounds, inside, pos == SIZE_MAX ? 0 : pos);
    CHECK(pos != SIZE_MAX && pos > 0); /* the kills did not all land before a commit */
    input_free(&in);
}

/* ---- a profile, written live --------------------------------------------------------------- */

/* Grow p by one step: 20 frames and stacks, `samples` samples, a switch every 4; with big,
 * 40 strings of 60,000 random bytes (deflate keeps them near their size). */
static void profile_step(struct trove_profile *p, int step, uint32_t samples, int big,
                         uint64_t *rng)
{
    uint32_t mod = 0, stack = 0;
    CHECK_EQ_INT(trove_profile_string(p, "/bin/live", 9, &mod), TROVE_OK);
    for (uint32_t i = 0; i < 20; i++) {
        char fn[32];
        struct trove_profile_frame f = {mod, 0, 0, i, 0x1000u * (uint64_t)step + 4 * i, 0};
        uint32_t id;
        int n = snprintf(fn, sizeof fn, "step%d_fn%u", step, i);
        CHECK_EQ_INT(trove_profile_string(p, fn, (size_t)n, &f.function), TROVE_OK);
        CHECK_EQ_INT(trove_profile_frame(p, &f, &id), TROVE_OK);
        CHECK_EQ_INT(trove_profile_stack(p, stack, id, &stack), TROVE_OK);
    }
    for (uint32_t i = 0; i < samples; i++) {
        struct trove_profile_sample sm = {(uint64_t)step * 1000000 + i, 9, 10 + i % 2,
                                          stack - i % 20};
        CHECK_EQ_INT(trove_profile_sample(p, &sm), TROVE_OK);
        if (i % 4 == 0) {
            struct trove_profile_switch sw = {sm.time_ns, 9, sm.tid, i % 8 ? 0 : TROVE_PROFILE_SWITCH_OUT};
            CHECK_EQ_INT(trove_profile_switch(p, &sw), TROVE_OK);
        }
    }
    if (big) {
        static char buf[60000];
        for (int k = 0; k < 40; k++) {
            uint32_t id;
            for (size_t i = 0; i < sizeof buf; i++)
                buf[i] = (char)(1 + (test_rand(rng) >> 20) % 127);
            CHECK_EQ_INT(trove_profile_string(p, buf, sizeof buf, &id), TROVE_OK);
        }
    }
}

/* The samples frames of p's rows since *mark, into the writer; *mark moves on. */
static void send_since(struct trove_capture_writer *w, const struct trove_profile *p,
                       struct trove_profile_counts *mark, struct trove_bytes *frames)
{
    struct trove_profile_counts now;
    struct trove_diag diag = {0};
    frames->len = 0;
    CHECK_EQ_INT(trove_profile_encode(p, mark, frames), TROVE_OK);
    trove_profile_get_counts(p, &now);
    CHECK_EQ_INT(trove_capture_writer_samples(w, frames->ptr, frames->len,
                                              now.samples - mark->samples,
                                              now.switches - mark->switches, &diag),
                 TROVE_OK);
    *mark = now;
}

static void expect_profile(struct trove_store *s, const char *name, const struct trove_profile *want,
                           const struct trove_profile_counts *upto)
{
    struct trove_profile *got = NULL;
    struct trove_profile_counts c;
    struct trove_diag diag = {0};
    CHECK_EQ_INT(trove_profile_new(&got), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, name, got, &diag), TROVE_OK);
    if (diag.msg[0])
        fprintf(stderr, "%s\n", diag.msg);
    trove_profile_get_counts(got, &c);
    CHECK(c.strings == upto->strings && c.frames == upto->frames && c.stacks == upto->stacks &&
          c.samples == upto->samples && c.switches == upto->switches);
    for (size_t i = 0; i < c.samples && i < upto->samples; i++) {
        const struct trove_profile_sample *x = &trove_profile_samples(got)[i];
        const struct trove_profile_sample *y = &trove_profile_samples(want)[i];
        CHECK(x->time_ns == y->time_ns && x->tid == y->tid && x->stack == y->stack);
    }
    for (uint32_t i = 0; i < c.frames && i < upto->frames; i++)
        CHECK(trove_profile_frame_get(got, i)->address == trove_profile_frame_get(want, i)->address);
    trove_profile_free(got);
}

/* A live capture with events and a profile: samples frames added between batches of events,
 * commits now and then, segments filling (which moves the profile's slots), a profile past
 * 1 MiB (sealed objects); after each commit a reader sees the events and the profile
 * committed; the writer's refusals. */
static void test_profile(void)
{
    struct trove_store *s = open_store(0), *reader = open_store(TROVE_STORE_READONLY);
    struct trove_capture_options o = sizes(64 * 32, 16); /* 64 events a segment */
    struct trove_capture_writer *w = NULL;
    struct trove_capture_info info;
    struct trove_profile *p = NULL;
    struct trove_profile_counts mark, committed;
    struct trove_bytes frames = {0};
    struct trove_diag diag = {0};
    struct input in;
    uint64_t rng = 77;
    size_t pos = 0;

    if (!s || !reader)
        return;
    input_make(&in, 3000, 5, 0);
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    trove_profile_get_counts(p, &mark);
    committed = mark;
    CHECK_EQ_INT(trove_capture_writer_open(s, "prof", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, in.final, &diag), TROVE_OK);
    for (int step = 0; step < 12 && w; step++) {
        size_t batch = step == 11 ? in.ev.len - pos : 1 + (size_t)(test_rand(&rng) % 400);
        if (pos + batch > in.ev.len)
            batch = in.ev.len - pos;
        CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev + pos, batch, &diag), TROVE_OK);
        pos += batch;
        profile_step(p, step, 50 + (uint32_t)(test_rand(&rng) % 500), step == 4 || step == 7, &rng);
        send_since(w, p, &mark, &frames);
        if (step % 3 != 1) {
            CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
            committed = mark;
            CHECK(info.samples == committed.samples && info.events == pos);
            expect_profile(reader, "prof", p, &committed);
            expect_replay(reader, "prof", in.ev.ev, pos, in.final);
        } else {
            /* between commits, readers see the last one */
            expect_profile(reader, "prof", p, &committed);
        }
    }
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
    expect_profile(reader, "prof", p, &mark);
    expect_replay(reader, "prof", in.ev.ev, in.ev.len, in.final);
    {
        struct trove_capture_info ci;
        struct trove_volume *v = NULL;
        struct trove_bytes obj = {0};
        struct trove_capture_header h;
        CHECK_EQ_INT(trove_capture_info(reader, "prof", &ci, &diag), TROVE_OK);
        CHECK(ci.segments == (in.ev.len + 63) / 64 && ci.samples == mark.samples);
        CHECK_EQ_INT(trove_volume_open(reader, "prof", &v, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_volume_get_object(v, 0, &obj), TROVE_OK);
        CHECK_EQ_INT(trove_capture_header_decode(obj.ptr, obj.len, &h, NULL), TROVE_OK);
        CHECK(h.version == 3 && h.profile_objects >= 2); /* 2.4 MB of strings: sealed objects */
        trove_capture_header_free(&h);
        trove_bytes_free(&obj);
        trove_volume_close(v);
    }
    /* refusals, each leaving the writer usable */
    {
        uint8_t junk[32] = {'T', 'V', 1, 1};
        frames.len = 0;
        CHECK_EQ_INT(trove_capture_writer_samples(w, junk, sizeof junk, 0, 0, &diag), TROVE_ERR_CORRUPT);
        profile_step(p, 20, 10, 0, &rng);
        CHECK_EQ_INT(trove_profile_encode(p, &mark, &frames), TROVE_OK);
        CHECK_EQ_INT(trove_capture_writer_samples(w, frames.ptr, frames.len, 11, 0, &diag),
                     TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_capture_writer_samples(w, frames.ptr, frames.len - 1, 10, 3, &diag),
                     TROVE_ERR_CORRUPT);
        CHECK_EQ_INT(trove_capture_writer_samples(w, frames.ptr, frames.len, 10, 3, &diag), TROVE_OK);
        trove_profile_get_counts(p, &mark);
        CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
        expect_profile(reader, "prof", p, &mark);
    }
    trove_capture_writer_close(w);
    /* an append goes on with the same stream: more events, more frames from where the
     * profile stopped, read back whole; twice, the second over a sealed object */
    for (int round = 0; round < 2; round++) {
        w = NULL;
        CHECK_EQ_INT(trove_capture_writer_open(s, "prof", 1, NULL, &w, &diag), TROVE_OK);
        if (!w)
            break;
        CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 100, &diag), TROVE_OK);
        profile_step(p, 30 + round, 200, round == 0, &rng);
        send_since(w, p, &mark, &frames);
        CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
        trove_capture_writer_close(w);
        expect_profile(reader, "prof", p, &mark);
    }
    trove_bytes_free(&frames);
    trove_profile_free(p);
    input_free(&in);
    trove_store_close(reader);
    trove_store_close(s);
}

/* Read capture `name`'s names back through s and require `want`. */
static void expect_names(struct trove_store *s, const char *name, const struct trove_names *want)
{
    struct trove_names *back = NULL;
    struct trove_diag diag = {0};
    CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_names(s, name, back, &diag), TROVE_OK);
    CHECK(trove_names_equal(want, back));
    trove_names_free(back);
}

/* ---- names in parts ------------------------------------------------------------------- */

/* `n` distinct event names of about 100 bytes, ids first_id on, into a new table. */
static struct trove_names *long_names(uint32_t n, uint32_t first_id)
{
    struct trove_names *t = NULL;
    char s[160];
    CHECK_EQ_INT(trove_names_new(&t), TROVE_OK);
    for (uint32_t i = 0; t && i < n; i++) {
        int len = snprintf(s, sizeof s,
                           "ns%u::detail::Widget<ns%u::Alloc<%u>, std::vector<int>>::"
                           "render_frame_%07u(int, const char *)",
                           i % 89, i % 13, i % 7, first_id + i);
        CHECK_EQ_INT(trove_names_set(t, TROVE_NAME_EVENT, first_id + i, 0, s, (size_t)len),
                     TROVE_OK);
    }
    return t;
}

/* The names parts of capture `name`'s header (0: no header). */
static uint32_t names_parts(struct trove_store *s, const char *name)
{
    struct trove_volume *v = NULL;
    struct trove_bytes obj = {0};
    struct trove_capture_header h;
    uint32_t parts = 0;
    if (trove_volume_open(s, name, &v, NULL) == TROVE_OK &&
        trove_volume_get_object(v, 0, &obj) == TROVE_OK &&
        trove_capture_header_decode(obj.ptr, obj.len, &h, NULL) == TROVE_OK) {
        parts = h.names_parts;
        trove_capture_header_free(&h);
    }
    trove_bytes_free(&obj);
    trove_volume_close(v);
    return parts;
}

/* Merge `add` into the writer and into cur, commit, and require: the objects the commit
 * stored that the store did not have (info.new_objects: every object is a function of its
 * content, so a part put again unchanged is not one) are `want_new`; the capture has
 * `want_parts` names parts; it is what trove_capture_write makes of the same. */
static void commit_names(struct trove_store *s, struct trove_store *reader,
                         struct trove_capture_writer *w, const struct trove_names *add,
                         struct trove_names *cur, const struct input *in, size_t n,
                         const struct trove_capture_options *o, uint64_t want_new,
                         uint32_t want_parts, int replay, const char *what)
{
    struct trove_capture_info info;
    struct trove_diag diag = {0};
    int rc;

    if (add) {
        CHECK_EQ_INT(trove_capture_writer_names(w, add, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_names_merge(cur, add), TROVE_OK);
    }
    rc = trove_capture_writer_commit(w, &info, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: commit: %s\n", what, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (info.new_objects != want_new)
        fprintf(stderr, "%s: %llu new objects, want %llu\n", what,
                (unsigned long long)info.new_objects, (unsigned long long)want_new);
    CHECK_EQ_INT(info.new_objects, want_new);
    CHECK_EQ_INT(names_parts(s, "live"), want_parts);
    expect_committed(s, reader, in->ev.ev, n, cur, o, &info, replay, what);
}

/*
 * The live writer with names past one object (300,000-odd names of about 100 bytes, 30 MB
 * of names frames): they go in parts, and a commit puts only the parts that changed, counted
 * by the objects it stores: the last part when names were added, a new part when it filled,
 * from the renamed entry's part on after a rename (whose later parts, the same bytes, are
 * not new), none when only events came; across an append reopen too. After each commit the
 * capture is, object for object, what trove_capture_write makes of it.
 */
static void test_names_parts(void)
{
    struct trove_store *s = open_store(0), *reader = open_store(TROVE_STORE_READONLY);
    struct trove_capture_options o = sizes(0, 0);
    struct trove_capture_writer *w = NULL;
    struct trove_names *a = long_names(250000, 1000000), *b = long_names(1000, 2000000);
    struct trove_names *c = long_names(100000, 3000000), *d = long_names(1000, 4000000);
    struct trove_names *cur = NULL, *r = NULL;
    struct trove_diag diag = {0};
    struct input in;
    char renamed[160];

    CHECK_EQ_INT(trove_names_new(&cur), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&r), TROVE_OK);
    if (!s || !reader || !cur || !r)
        goto out;
    input_make(&in, 40000, 7, 0);
    trove_volume_remove(s, "live", NULL);
    CHECK_EQ_INT(trove_capture_writer_open(s, "live", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 10000, &diag), TROVE_OK);
    /* 250,000 names: two parts, with the header and the segment */
    commit_names(s, reader, w, a, cur, &in, 10000, &o, 4, 2, 1, "250,000 names");
    /* 1,000 names more: the last part again, and the header */
    commit_names(s, reader, w, b, cur, &in, 10000, &o, 2, 2, 0, "1,000 names more");
    /* 100,000 more: the last part fills and a third starts */
    commit_names(s, reader, w, c, cur, &in, 10000, &o, 3, 3, 0, "100,000 names more");
    /* an entry of part 0 renamed, its length kept: part 0 again; parts 1 and 2 and the
     * header (sizes and counts all kept) are the same objects */
    {
        struct trove_name_entry e;
        trove_names_entry(cur, 20, &e);
        CHECK(e.len < sizeof renamed);
        memcpy(renamed, e.str, e.len);
        renamed[0] = renamed[0] == 'X' ? 'Y' : 'X';
        CHECK_EQ_INT(trove_names_set(r, e.type, e.a, e.b, renamed, e.len), TROVE_OK);
    }
    commit_names(s, reader, w, r, cur, &in, 10000, &o, 1, 3, 0, "a rename in part 0");
    /* events only: the names are not touched (segment 0 filled, segment 1, the header) */
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev + 10000, 25000, &diag), TROVE_OK);
    commit_names(s, reader, w, NULL, cur, &in, 35000, &o, 3, 3, 0, "events only");
    /* reopened with append, names read back from the parts: the last part again */
    trove_capture_writer_close(w);
    w = NULL;
    CHECK_EQ_INT(trove_capture_writer_open(s, "live", 1, &o, &w, &diag), TROVE_OK);
    CHECK(w && trove_names_equal(trove_capture_writer_names_all(w), cur));
    if (w)
        commit_names(s, reader, w, d, cur, &in, 35000, &o, 2, 3, 1, "appended");
    trove_capture_writer_close(w);
    input_free(&in);
out:
    trove_names_free(a);
    trove_names_free(b);
    trove_names_free(c);
    trove_names_free(d);
    trove_names_free(r);
    trove_names_free(cur);
    trove_store_close(reader);
    trove_store_close(s);
}

/* With names cut small (trove_testing_capture_names_cut): many parts, renames that move
 * frame cuts (input piece 3), random commits, closes and appends, each commit the objects
 * trove_capture_write makes; and beside a live profile, whose slots move as parts come. */
static void test_names_parts_small(void)
{
    struct trove_store *s = open_store(0), *reader = open_store(TROVE_STORE_READONLY);
    struct trove_capture_options o = sizes(64 * 32, 16); /* 64 events a segment */
    struct trove_capture_writer *w = NULL;
    struct trove_capture_info info;
    struct trove_profile *p = NULL;
    struct trove_profile_counts mark;
    struct trove_bytes frames = {0};
    struct trove_diag diag = {0};
    struct trove_names *cur = NULL;
    struct input in;
    uint64_t rng = 91;
    size_t pos = 0;

    if (!s || !reader)
        goto out;
    trove_testing_capture_names_cut(128, 384);
    input_make(&in, 5000, 8, 1);
    run_live(s, reader, &in, 32 * 100, 30, 41, 1, "names cut small");
    run_live(s, reader, &in, 32 * 1000, 300, 42, 1, "names cut small, larger segments");
    fprintf(stderr, "names cut small: %" PRIu32 " parts\n", names_parts(s, "live"));
    CHECK(names_parts(s, "live") > 5);
    /* renames of random lengths anywhere, a few a commit, and every commit the objects a
     * write of the same makes: the parts a commit keeps are the ones that could not change */
    trove_volume_remove(s, "live", NULL);
    cur = names_upto(&in, PIECES);
    CHECK_EQ_INT(trove_capture_writer_open(s, "live", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 300, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, cur, &diag), TROVE_OK);
    for (int round = 0; round < 80 && w; round++) {
        struct trove_names *r = NULL;
        CHECK_EQ_INT(trove_names_new(&r), TROVE_OK);
        for (uint64_t k = 1 + test_rand(&rng) % 3; k > 0; k--) {
            struct trove_name_entry e;
            char str[64];
            size_t len = (size_t)(test_rand(&rng) % 60);
            trove_names_entry(cur, (size_t)(test_rand(&rng) % trove_names_count(cur)), &e);
            if (trove_name_type_is_sort(e.type))
                continue;
            for (size_t i = 0; i < len; i++)
                str[i] = (char)('a' + (test_rand(&rng) % 26));
            CHECK_EQ_INT(trove_names_set(r, e.type, e.a, e.b, str, len), TROVE_OK);
        }
        if (round % 10 == 4) /* a sort index, new or replaced (a version 2 frame) */
            CHECK_EQ_INT(trove_names_set_sort(r, TROVE_NAME_THREAD_SORT, 1, (uint32_t)round % 20,
                                              round - 40),
                         TROVE_OK);
        if (round % 10 == 9) { /* and now and then a new name */
            char str[32];
            int len = snprintf(str, sizeof str, "new %d", round);
            CHECK_EQ_INT(trove_names_set(r, TROVE_NAME_EVENT, 900000 + (uint32_t)round, 0, str,
                                         (size_t)len),
                         TROVE_OK);
        }
        CHECK_EQ_INT(trove_capture_writer_names(w, r, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_names_merge(cur, r), TROVE_OK);
        trove_names_free(r);
        CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_capture_write(s, "ref", in.ev.ev, 300, cur, &o, NULL, &diag), TROVE_OK);
        if (!same_objects(s, "live", "ref", "random renames")) {
            fprintf(stderr, "random renames: round %d differs\n", round);
            CHECK(0);
            break;
        }
    }
    trove_capture_writer_close(w);
    w = NULL;
    trove_names_free(cur);

    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    trove_profile_get_counts(p, &mark);
    cur = names_upto(&in, 0);
    CHECK_EQ_INT(trove_capture_writer_open(s, "profnp", 0, &o, &w, &diag), TROVE_OK);
    for (int step = 0; step < PIECES && w; step++) {
        size_t batch = step == PIECES - 1 ? in.ev.len - pos : 1 + (size_t)(test_rand(&rng) % 700);
        if (pos + batch > in.ev.len)
            batch = in.ev.len - pos;
        CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev + pos, batch, &diag), TROVE_OK);
        pos += batch;
        CHECK_EQ_INT(trove_capture_writer_names(w, in.piece[step], &diag), TROVE_OK);
        CHECK_EQ_INT(trove_names_merge(cur, in.piece[step]), TROVE_OK);
        profile_step(p, step, 50 + (uint32_t)(test_rand(&rng) % 500), 0, &rng);
        send_since(w, p, &mark, &frames);
        CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
        expect_profile(reader, "profnp", p, &mark);
        expect_replay(reader, "profnp", in.ev.ev, pos, cur);
    }
    trove_capture_writer_close(w);
    w = NULL;
    CHECK(names_parts(s, "profnp") > 5);
    /* an append reads the parts and the profile back and goes on */
    CHECK_EQ_INT(trove_capture_writer_open(s, "profnp", 1, NULL, &w, &diag), TROVE_OK);
    CHECK(w && trove_names_equal(trove_capture_writer_names_all(w), cur));
    if (w) {
        struct trove_names *more = long_names(40, 7000000);
        CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev, 100, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_capture_writer_names(w, more, &diag), TROVE_OK);
        CHECK_EQ_INT(trove_names_merge(cur, more), TROVE_OK);
        profile_step(p, 30, 200, 0, &rng);
        send_since(w, p, &mark, &frames);
        CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
        expect_profile(reader, "profnp", p, &mark);
        expect_names(reader, "profnp", cur);
        trove_names_free(more);
    }
    trove_capture_writer_close(w);
    input_free(&in);
out:
    trove_testing_capture_names_cut(0, 0);
    trove_names_free(cur);
    trove_bytes_free(&frames);
    trove_profile_free(p);
    trove_store_close(reader);
    trove_store_close(s);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(sdir, sizeof sdir, "%s/store", root);
    RUN(test_determinism);
    RUN(test_commits);
    RUN(test_errors);
    RUN(test_kill);
    RUN(test_profile);
    RUN(test_names_parts);
    RUN(test_names_parts_small);
    test_rm_rf(root);
    return test_done();
}
