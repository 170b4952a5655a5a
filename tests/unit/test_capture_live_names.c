/*
 * test_capture_live_names.c: the live capture writer (src/capture/capture_live.c) with
 * names past one object: written in parts, a commit putting only the parts that changed
 * (counted), and after each commit the same objects as the one-shot write of what was
 * committed; with names cut small (trove_testing_capture_names_cut), many parts, random
 * renames that move entries between parts, and beside a live profile.
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

#include "capture_live_test.h"
#include "testutil.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/gen.h"
#include "trove/stream.h"
#include "trove/testing.h"
#include "trove/wire.h"

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
    /* 250,000 names: two parts, with the header, the segment and its summary */
    commit_names(s, reader, w, a, cur, &in, 10000, &o, 5, 2, 1, "250,000 names");
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
    /* events only: the names are not touched (segment 0 filled, segment 1, the header, and
     * the summaries of both and of the two together) */
    CHECK_EQ_INT(trove_capture_writer_add(w, in.ev.ev + 10000, 25000, &diag), TROVE_OK);
    commit_names(s, reader, w, NULL, cur, &in, 35000, &o, 6, 3, 0, "events only");
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
    struct trove_store *s = NULL;

    test_init(argc, argv);
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(sdir, sizeof sdir, "%s/store", root);
    if (trove_store_open(sdir, TROVE_STORE_CREATE | TROVE_STORE_NOSYNC, &s, NULL) != TROVE_OK) {
        fprintf(stderr, "cannot create the store %s\n", sdir);
        test_rm_rf(root);
        return 1;
    }
    trove_store_close(s);
    RUN(test_names_parts);
    RUN(test_names_parts_small);
    test_rm_rf(root);
    return test_done();
}
