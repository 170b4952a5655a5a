/*
 * capture_live_test.h: what the live writer's tests share (test_capture_live.c,
 * test_capture_live_names.c): a temp store; generated input (events, some counters, names
 * in pieces); replay through a store handle; the determinism check (the writer's capture is
 * what trove_capture_write makes of what was committed so far: the same digest in every
 * slot) and a writer run that adds, merges names, commits and reopens at random points; and
 * a profile grown step by step and sent to the writer.
 */
#ifndef TROVE_CAPTURE_LIVE_TEST_H
#define TROVE_CAPTURE_LIVE_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/gen.h"
#include "trove/stream.h"
#include "trove/testing.h"
#include "trove/wire.h"

static char root[] = "/tmp/trove_test_capture_live_XXXXXX";
static char sdir[sizeof root + 16];

static inline struct trove_store *open_store(unsigned flags)
{
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int rc = trove_store_open(sdir, flags | TROVE_STORE_NOSYNC, &s, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "store open: %s\n", diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    return s;
}

static inline int same_info(const struct trove_capture_info *a, const struct trove_capture_info *b)
{
    return a->events == b->events && a->segments == b->segments && a->first_ns == b->first_ns &&
           a->end_ns == b->end_ns && a->names == b->names && a->raw_bytes == b->raw_bytes &&
           a->stored_bytes == b->stored_bytes && a->flows == b->flows;
}

/* Captures a and b of s are the same objects: as many slots, the same digest in each, the
 * same header bytes. */
static inline int same_objects(struct trove_store *s, const char *a, const char *b,
                               const char *what)
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

static inline void input_make(struct input *in, uint64_t n, uint64_t seed, int counters)
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

static inline void input_free(struct input *in)
{
    trove_events_free(&in->ev);
    for (int p = 0; p < PIECES; p++)
        trove_names_free(in->piece[p]);
    trove_names_free(in->final);
}

/* Pieces [0, p) merged into a fresh table. */
static inline struct trove_names *names_upto(const struct input *in, int p)
{
    struct trove_names *t = NULL;
    CHECK_EQ_INT(trove_names_new(&t), TROVE_OK);
    for (int i = 0; i < p; i++)
        CHECK_EQ_INT(trove_names_merge(t, in->piece[i]), TROVE_OK);
    return t;
}

/* ---- replay through a store handle ------------------------------------------------------- */

/* Replay capture `name` through s and require events[0..n) and names. */
static inline void expect_replay(struct trove_store *s, const char *name,
                                 const struct trove_event *ev, size_t n,
                                 const struct trove_names *names)
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

static inline struct trove_capture_options sizes(uint64_t seg_bytes, uint32_t fe)
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
static inline void expect_committed(struct trove_store *s, struct trove_store *reader,
                                    const struct trove_event *ev, size_t n,
                                    const struct trove_names *names,
                                    const struct trove_capture_options *o,
                                    const struct trove_capture_info *got, int replay,
                                    const char *what)
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
static inline void run_live(struct trove_store *s, struct trove_store *reader,
                            const struct input *in, uint64_t seg_bytes, uint32_t fe, uint64_t seed,
                            int reopen, const char *what)
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

/* ---- a profile, written live --------------------------------------------------------------- */

/* Grow p by one step: 20 frames and stacks, `samples` samples, a switch every 4; with big,
 * 40 strings of 60,000 random bytes (deflate keeps them near their size). */
static inline void profile_step(struct trove_profile *p, int step, uint32_t samples, int big,
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
static inline void send_since(struct trove_capture_writer *w, const struct trove_profile *p,
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

static inline void expect_profile(struct trove_store *s, const char *name,
                                  const struct trove_profile *want,
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

#endif
