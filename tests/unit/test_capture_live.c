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
 * the capture then at its last commit and continued by the next writer; and a live profile.
 * Names past one object, in parts, are test_capture_live_names.c's.
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
#include "trove/attrs.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/gen.h"
#include "trove/stream.h"
#include "trove/testing.h"
#include "trove/wire.h"

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

/* all's rows of events [from, to), their events less from, into a fresh *out. */
static void attrs_slice(const struct trove_attrs *all, uint64_t from, uint64_t to,
                        struct trove_attrs *out)
{
    memset(out, 0, sizeof *out);
    CHECK_EQ_INT(trove_attrs_append(out, all, trove_attrs_find(all, from), trove_attrs_find(all, to),
                                    0, from),
                 TROVE_OK);
}

/* Add events [from, to) of in with their rows of all. */
static void add_with(struct trove_capture_writer *w, const struct input *in,
                     const struct trove_attrs *all, uint64_t from, uint64_t to)
{
    struct trove_attrs part;
    struct trove_diag diag = {0};
    attrs_slice(all, from, to, &part);
    CHECK_EQ_INT(trove_capture_writer_add_attrs(w, in->ev.ev + from, (size_t)(to - from), &part,
                                                &diag),
                 TROVE_OK);
    trove_attrs_free(&part);
}

/* The reference: trove_capture_write_attrs of events [0, n) with their rows, as `name`. */
static void reference(struct trove_store *s, const char *name, const struct input *in,
                      const struct trove_names *names, const struct trove_attrs *all, uint64_t n,
                      const struct trove_capture_options *o)
{
    struct trove_attrs part;
    struct trove_capture_info info;
    struct trove_diag diag = {0};
    int rc;
    attrs_slice(all, 0, n, &part);
    rc = trove_capture_write_attrs(s, name, in->ev.ev, (size_t)n, names, NULL, 0, NULL, &part,
                                   NULL, o, &info, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "reference %s: %s\n", name, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    trove_attrs_free(&part);
}

/* Attributes through the live writer: after each commit, the same objects as
 * trove_capture_write_attrs makes of what was committed (the first rows coming part way, so
 * that the segments before get empty objects; a partial segment's rows; an append that reads
 * them back and goes on), and trove_capture_read_attrs the rows added. Rows going back or
 * past the events added are refused, changing nothing. */
static void test_attrs(void)
{
    struct trove_store *s = open_store(0);
    struct trove_capture_options o = sizes(32 * 1024, 100); /* 1024 events a segment */
    struct trove_capture_writer *w = NULL;
    struct trove_capture_info info;
    struct trove_diag diag = {0};
    struct trove_attrs all = {0}, back = {0}, meta = {0};
    struct trove_names *names;
    struct input in;

    if (!s)
        return;
    input_make(&in, 10000, 9, 0);
    names = names_upto(&in, PIECES);
    for (uint64_t i = 2500; i < 10000; i += 3) {
        struct trove_attr r;
        memset(&r, 0, sizeof r);
        r.event = i;
        r.type = TROVE_ATTR_INT;
        CHECK_EQ_INT(trove_attrs_intern(&all, "i", 1, &r.key), TROVE_OK);
        r.v.i = (int64_t)i;
        CHECK_EQ_INT(trove_attrs_add(&all, &r), TROVE_OK);
        if (i % 7 == 0) {
            char v[16];
            int n = snprintf(v, sizeof v, "v%d", (int)(i % 50));
            r.type = TROVE_ATTR_STRING;
            r.scope = TROVE_ATTR_FIELD;
            CHECK_EQ_INT(trove_attrs_intern(&all, "s", 1, &r.key), TROVE_OK);
            CHECK_EQ_INT(trove_attrs_intern(&all, v, (size_t)n, &r.v.s), TROVE_OK);
            CHECK_EQ_INT(trove_attrs_add(&all, &r), TROVE_OK);
        }
    }

    CHECK_EQ_INT(trove_capture_writer_open(s, "la", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, names, &diag), TROVE_OK);
    add_with(w, &in, &all, 0, 2000); /* no rows yet */
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
    CHECK(!(info.flags & TROVE_CAPTURE_FLAG_ATTRS) && info.attr_rows == 0);
    reference(s, "la.1", &in, names, &all, 2000, &o);
    CHECK(same_objects(s, "la", "la.1", "attrs: none yet"));
    add_with(w, &in, &all, 2000, 2600);
    add_with(w, &in, &all, 2600, 5500);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
    CHECK((info.flags & TROVE_CAPTURE_FLAG_ATTRS) && info.attr_rows == trove_attrs_find(&all, 5500));
    reference(s, "la.2", &in, names, &all, 5500, &o);
    CHECK(same_objects(s, "la", "la.2", "attrs: turned on"));
    /* refused: rows going back, a row past the events */
    {
        struct trove_attrs bad;
        attrs_slice(&all, 5500, 5600, &bad);
        bad.rows[0].event = bad.rows[1].event + 1; /* the first row after the second */
        CHECK_EQ_INT(trove_capture_writer_add_attrs(w, in.ev.ev + 5500, 100, &bad, &diag),
                     TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_capture_writer_add_attrs(w, in.ev.ev + 5500, 1, &all, &diag),
                     TROVE_ERR_INVALID);
        trove_attrs_free(&bad);
        CHECK_EQ_INT(trove_capture_writer_events(w), 5500);
    }
    /* a close without a commit loses the tail; the append reads the rows back */
    add_with(w, &in, &all, 5500, 6000);
    trove_capture_writer_close(w);
    CHECK_EQ_INT(trove_capture_writer_open(s, "la", 1, NULL, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_events(w), 5500);
    add_with(w, &in, &all, 5500, 7000);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
    reference(s, "la.3", &in, names, &all, 7000, &o);
    CHECK(same_objects(s, "la", "la.3", "attrs: appended"));
    add_with(w, &in, &all, 7000, 10000);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
    trove_capture_writer_close(w);
    reference(s, "la.4", &in, names, &all, 10000, &o);
    CHECK(same_objects(s, "la", "la.4", "attrs: all"));
    CHECK_EQ_INT(trove_capture_read_attrs(s, "la", &back, &meta, &diag), TROVE_OK);
    CHECK(trove_attrs_equal(&back, &all) && meta.n == 0);
    trove_attrs_free(&back);

    /* An imported capture's rows and trace's rows, kept by an append that adds more. */
    {
        struct trove_attrs first, m = {0}, m2 = {0};
        struct trove_attr r;
        attrs_slice(&all, 0, 3000, &first);
        memset(&r, 0, sizeof r);
        r.scope = TROVE_ATTR_TRACE;
        r.type = TROVE_ATTR_STRING;
        CHECK_EQ_INT(trove_attrs_intern(&m, "otherData", 9, &r.key), TROVE_OK);
        CHECK_EQ_INT(trove_attrs_intern(&m, "{}", 2, &r.v.s), TROVE_OK);
        CHECK_EQ_INT(trove_attrs_add(&m, &r), TROVE_OK);
        CHECK_EQ_INT(trove_capture_write_attrs(s, "imp", in.ev.ev, 3000, names, NULL, 0, NULL,
                                               &first, &m, &o, &info, &diag),
                     TROVE_OK);
        CHECK_EQ_INT(trove_capture_writer_open(s, "imp", 1, NULL, &w, &diag), TROVE_OK);
        add_with(w, &in, &all, 3000, 4200);
        CHECK_EQ_INT(trove_capture_writer_commit(w, &info, &diag), TROVE_OK);
        trove_capture_writer_close(w);
        CHECK_EQ_INT(trove_capture_read_attrs(s, "imp", &back, &m2, &diag), TROVE_OK);
        trove_attrs_free(&first);
        attrs_slice(&all, 0, 4200, &first);
        CHECK(trove_attrs_equal(&back, &first) && trove_attrs_equal(&m2, &m));
        CHECK_EQ_INT(info.attr_rows, first.n + 1);
        trove_attrs_free(&first);
        trove_attrs_free(&m);
        trove_attrs_free(&m2);
        trove_attrs_free(&back);
    }
    trove_attrs_free(&all);
    trove_attrs_free(&meta);
    trove_names_free(names);
    input_free(&in);
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
    RUN(test_attrs);
    test_rm_rf(root);
    return test_done();
}
