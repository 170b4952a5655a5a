/*
 * test_oom_store.c: the store survives running out of memory at any allocation (the sweep
 * of oom_test.h), and its committed state is unchanged after a failure: the volume reads
 * back its old bytes and verify --deep is clean; after a success, the new bytes. Covered: a
 * volume commit, the store's gc (mark and sweep), a capture written into a store (with
 * flows, whose rows are then read back), a capture replayed from it, and a capture written
 * live (appended to, and new), each also with its names in parts (cut small).
 */

#include "testutil.h"
#include "oom_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trove/attrs.h"
#include "trove/bundle.h"
#include "trove/capture.h"
#include "trove/chrome.h"
#include "trove/gen.h"
#include "trove/input.h"
#include "trove/profile.h"
#include "trove/recipe.h"
#include "trove/sample.h"
#include "trove/tables.h"
#include "trove/testing.h"
#include "trove/trace.h"
#include "trove/volume.h"
#include "trove/wire.h"

static char tmpdir[] = "/tmp/trove_oom_XXXXXX";
static struct trove_events gen_events;
static struct trove_names *gen_names;

/* ---- the store: a volume commit, a capture import and its replay ----------------------- */

#define VBLOCK 4096u
#define VBLOCKS 24u
static uint8_t vold[VBLOCK * VBLOCKS], vnew[VBLOCK * VBLOCKS];

struct store_ctx {
    char dir[256];
    char live[16]; /* the live writer's case: "live" (append) or "fresh" */
    const struct trove_names *live_names; /* the names "live" holds before the append */
};

static int store_clean(const char *dir)
{
    struct trove_store *s = NULL;
    struct trove_verify_report rep;
    int rc = trove_store_open(dir, TROVE_STORE_READONLY, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_store_verify(s, TROVE_VERIFY_DEEP, &rep, NULL, NULL);
    trove_store_close(s);
    return rc == TROVE_OK;
}

static int volume_equals(const char *dir, const uint8_t *want)
{
    struct trove_store *s = NULL;
    struct trove_volume *v = NULL;
    static uint8_t got[sizeof vold];
    int rc = trove_store_open(dir, TROVE_STORE_READONLY, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_volume_open(s, "vol", &v, NULL);
    if (rc == TROVE_OK)
        rc = trove_volume_read(v, 0, got, sizeof got);
    trove_volume_close(v);
    trove_store_close(s);
    return rc == TROVE_OK && memcmp(got, want, sizeof got) == 0;
}

/* Write `data` over the whole volume and commit, as `trove volume write` does. */
static int volume_put(const char *dir, const uint8_t *data)
{
    struct trove_store *s = NULL;
    struct trove_volume *v = NULL;
    int rc = trove_store_open(dir, TROVE_STORE_NOSYNC, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_volume_open(s, "vol", &v, NULL);
    if (rc == TROVE_OK)
        rc = trove_volume_write(v, 0, data, sizeof vold);
    if (rc == TROVE_OK)
        rc = trove_volume_commit(v);
    trove_volume_close(v);
    trove_store_close(s);
    return rc;
}

static int op_volume_commit(void *p) { return volume_put(((struct store_ctx *)p)->dir, vnew); }

static int check_volume_commit(void *p, int rc)
{
    struct store_ctx *c = p;
    int ok = store_clean(c->dir) && volume_equals(c->dir, rc == TROVE_OK ? vnew : vold);
    if (ok && rc == TROVE_OK) /* back to the old bytes for the next run */
        ok = volume_put(c->dir, vold) == TROVE_OK;
    return ok;
}

/* gc: the mark (every recipe, counted) and the sweep (the backend's list) allocate. */
static const char garbage[] = "an object no recipe names";

static int garbage_put(const char *dir)
{
    struct trove_store *s = NULL;
    struct trove_digest d;
    int rc = trove_store_open(dir, TROVE_STORE_NOSYNC, &s, NULL);
    trove_digest_of(garbage, sizeof garbage, &d);
    if (rc == TROVE_OK)
        rc = trove_backend_put(trove_store_backend(s), &d, garbage, sizeof garbage, NULL);
    trove_store_close(s);
    return rc;
}

static int garbage_there(const char *dir)
{
    struct trove_store *s = NULL;
    struct trove_digest d;
    uint64_t len = 0;
    int rc = trove_store_open(dir, TROVE_STORE_READONLY, &s, NULL);
    trove_digest_of(garbage, sizeof garbage, &d);
    if (rc == TROVE_OK)
        rc = trove_backend_size(trove_store_backend(s), &d, &len);
    trove_store_close(s);
    return rc == TROVE_OK;
}

static int op_gc(void *p)
{
    struct trove_store *s = NULL;
    struct trove_gc_report rep;
    int rc = trove_store_open(((struct store_ctx *)p)->dir, TROVE_STORE_NOSYNC, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_store_gc(s, &rep, NULL, NULL);
    trove_store_close(s);
    return rc;
}

static int check_gc(void *p, int rc)
{
    struct store_ctx *c = p;
    int ok = store_clean(c->dir) && volume_equals(c->dir, vold);
    if (ok && rc == TROVE_OK) /* the garbage went; put it back for the next run */
        ok = !garbage_there(c->dir) && garbage_put(c->dir) == TROVE_OK;
    return ok;
}

static int op_capture_write(void *p)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_capture_options o = {.segment_bytes = 32 * 256, .frame_events = 100};
    int rc = trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_write(s, "cap", gen_events.ev, gen_events.len, gen_names, &o, NULL,
                                 NULL);
    trove_store_close(s);
    return rc;
}

/* Flow rows for the capture with flows: one per 10 events, on their threads. */
static struct trove_flows cap_flows;

static int op_capture_write_flows(void *p)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_capture_options o = {.segment_bytes = 32 * 256, .frame_events = 100};
    int rc = trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_write_trace(s, "cap", gen_events.ev, gen_events.len, gen_names,
                                       cap_flows.f, cap_flows.len, &o, NULL, NULL);
    trove_store_close(s);
    return rc;
}

static int op_capture_read_flows(void *p)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_flows got = {0};
    int rc = trove_store_open(c->dir, TROVE_STORE_READONLY, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_read_flows(s, "cap", 0, UINT64_MAX, &got, NULL);
    if (rc == TROVE_OK && !same_flows(&got, &cap_flows))
        rc = TROVE_ERR_MISMATCH;
    trove_flows_free(&got);
    trove_store_close(s);
    return rc;
}

static int capture_events(const char *dir, uint64_t *events_out)
{
    struct trove_store *s = NULL;
    struct trove_capture_info info;
    int rc = trove_store_open(dir, TROVE_STORE_READONLY, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_info(s, "cap", &info, NULL);
    trove_store_close(s);
    *events_out = rc == TROVE_OK ? info.events : 0;
    return rc;
}

static int check_capture_write(void *p, int rc)
{
    struct store_ctx *c = p;
    uint64_t events = 0;
    int got = capture_events(c->dir, &events);
    int ok = store_clean(c->dir);

    if (rc == TROVE_OK) {
        ok = ok && got == TROVE_OK && events == gen_events.len;
        /* remove it again, so the next run writes it from nothing */
        struct trove_store *s = NULL;
        ok = ok && trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL) == TROVE_OK &&
             trove_volume_remove(s, "cap", NULL) == TROVE_OK;
        trove_store_close(s);
    } else {
        /* the capture is there whole or not at all */
        ok = ok && (got == TROVE_ERR_NOTFOUND || (got == TROVE_OK && events == gen_events.len));
    }
    return ok;
}

/* The live writer (capture_live.c) over the same events, names and sizes as "cap": an append
 * to "live", which holds the first half without names, adds the second half in batches that
 * fill segments, merges the names and commits; a new capture "fresh" gets them all. */
static const struct trove_capture_options live_opt = {.segment_bytes = 32 * 256,
                                                      .frame_events = 100};

static int live_write(struct trove_store *s, const char *name, int append, size_t from)
{
    struct trove_capture_writer *w = NULL;
    int rc = trove_capture_writer_open(s, name, append, &live_opt, &w, NULL);
    for (size_t at = from; rc == TROVE_OK && at < gen_events.len; at += 150)
        rc = trove_capture_writer_add(w, gen_events.ev + at,
                                      gen_events.len - at < 150 ? gen_events.len - at : 150, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_writer_names(w, gen_names, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_writer_commit(w, NULL, NULL);
    trove_capture_writer_close(w);
    return rc;
}

static int op_capture_live(void *p)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    int rc = trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL);
    if (rc == TROVE_OK)
        rc = live_write(s, c->live, c->live[0] == 'l', c->live[0] == 'l' ? gen_events.len / 2 : 0);
    trove_store_close(s);
    return rc;
}

/* Capture `name` has the objects of "cap" (-> 1), or it holds `events` events (-> 2), or
 * neither (0). */
static int live_state(struct trove_store *s, const char *name, uint64_t events)
{
    struct trove_volume *va = NULL, *vb = NULL;
    struct trove_volume_info ia, ib;
    struct trove_digest da[40], db[40];
    struct trove_capture_info info;
    int state = 0;

    if (trove_capture_info(s, name, &info, NULL) != TROVE_OK)
        return 0;
    if (info.events == events && events != gen_events.len)
        return 2;
    if (trove_volume_open(s, name, &va, NULL) == TROVE_OK &&
        trove_volume_open(s, "cap", &vb, NULL) == TROVE_OK && trove_volume_info(va, &ia) == 0 &&
        trove_volume_info(vb, &ib) == 0 && ia.slots == ib.slots && ia.slots <= 40 &&
        trove_volume_slot_digests(va, 0, ia.slots, da) == 0 &&
        trove_volume_slot_digests(vb, 0, ib.slots, db) == 0 &&
        memcmp(da, db, ia.slots * sizeof *da) == 0)
        state = 1;
    trove_volume_close(va);
    trove_volume_close(vb);
    return state;
}

/* After a failure "live" is still the first half (or, after a failure once the commit was
 * durable, whole) and "fresh" is not there; after a success either is "cap", object for
 * object, and is put back for the next run. */
static int check_capture_live(void *p, int rc)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_capture_info info;
    int append = c->live[0] == 'l', ok = store_clean(c->dir), state;

    ok = ok && trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL) == TROVE_OK;
    state = ok ? live_state(s, c->live, append ? gen_events.len / 2 : 0) : -1;
    if (rc == TROVE_OK)
        ok = ok && state == 1;
    else if (append)
        ok = ok && (state == 1 || state == 2);
    else /* a new capture is there whole or not at all: no volume is left behind */
        ok = ok &&
             (state == 1 || trove_capture_info(s, c->live, &info, NULL) == TROVE_ERR_NOTFOUND);
    if (ok && state == 1)
        ok = append ? trove_capture_write(s, c->live, gen_events.ev, gen_events.len / 2,
                                          c->live_names, &live_opt, NULL, NULL) == TROVE_OK
                    : trove_volume_remove(s, c->live, NULL) == TROVE_OK;
    trove_store_close(s);
    return ok;
}

/* The live writer's sweeps: an append to "live", which holds the first half of the events
 * (and c->live_names) as "cap" would, and a new capture "fresh". */
static void sweep_live(struct store_ctx *c, const char *what)
{
    struct trove_store *s = NULL;
    char label[80];

    CHECK_EQ_INT(trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_write(s, "live", gen_events.ev, gen_events.len / 2, c->live_names,
                                     &live_opt, NULL, NULL),
                 TROVE_OK);
    trove_store_close(s);
    snprintf(c->live, sizeof c->live, "live");
    snprintf(label, sizeof label, "%s, append", what);
    sweep(label, op_capture_live, check_capture_live, c);
    snprintf(c->live, sizeof c->live, "fresh");
    snprintf(label, sizeof label, "%s, new", what);
    sweep(label, op_capture_live, check_capture_live, c);
}

/* The streamed import: trove_import of a wire stream (the names frame, then frames of 100
 * events), which goes through a capture writer committed once at the end. */
static char import_path[4200];

static int op_import(void *p)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_import_options io;
    struct trove_import_result res;
    int rc = trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL);

    memset(&io, 0, sizeof io);
    io.segment_bytes = 32 * 256;
    if (rc == TROVE_OK)
        rc = trove_import(s, "imp", import_path, &io, &res, NULL);
    trove_store_close(s);
    return rc;
}

/* Volumes a and b of s name the same objects, slot for slot. */
static int same_slots(struct trove_store *s, const char *a, const char *b)
{
    struct trove_volume *va = NULL, *vb = NULL;
    struct trove_volume_info ia, ib;
    struct trove_digest da[40], db[40];
    int same = trove_volume_open(s, a, &va, NULL) == TROVE_OK &&
               trove_volume_open(s, b, &vb, NULL) == TROVE_OK &&
               trove_volume_info(va, &ia) == 0 && trove_volume_info(vb, &ib) == 0 &&
               ia.slots == ib.slots && ia.slots <= 40 &&
               trove_volume_slot_digests(va, 0, ia.slots, da) == 0 &&
               trove_volume_slot_digests(vb, 0, ib.slots, db) == 0 &&
               memcmp(da, db, ia.slots * sizeof *da) == 0;
    trove_volume_close(va);
    trove_volume_close(vb);
    return same;
}

/* After a success capture "imp" is "ref" (trove_capture_write of the same events and names)
 * object for object; after a failure it is that whole (a failure once the commit was
 * durable) or not there at all. It goes for the next run. */
static int check_import(void *p, int rc)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_capture_info info;
    int ok = store_clean(c->dir) &&
             trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL) == TROVE_OK;
    int whole = ok && same_slots(s, "imp", "ref");

    if (ok && rc == TROVE_OK)
        ok = whole;
    else if (ok && !whole)
        ok = trove_capture_info(s, "imp", &info, NULL) == TROVE_ERR_NOTFOUND;
    if (ok && whole)
        ok = trove_volume_remove(s, "imp", NULL) == TROVE_OK;
    trove_store_close(s);
    return ok;
}

static void sweep_import(struct store_ctx *c)
{
    /* format 8: an import's default */
    struct trove_capture_options o = {.segment_bytes = 32 * 256, .segment_format = TROVE_WIRE_MODEL};
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes buf = {0};
    struct trove_store *s = NULL;
    FILE *f;

    snprintf(import_path, sizeof import_path, "%s/import.wire", tmpdir);
    CHECK_EQ_INT(trove_wire_encoder_new(&enc), TROVE_OK);
    CHECK_EQ_INT(trove_wire_encode_names(gen_names, 0, trove_names_count(gen_names), &buf),
                 TROVE_OK);
    for (size_t i = 0; i < gen_events.len; i += 100)
        CHECK_EQ_INT(trove_wire_encode(enc, TROVE_WIRE_PACKED, gen_events.ev + i,
                                       gen_events.len - i < 100 ? gen_events.len - i : 100, &buf),
                     TROVE_OK);
    CHECK((f = fopen(import_path, "wb")) != NULL);
    CHECK(f && fwrite(buf.ptr, 1, buf.len, f) == buf.len);
    if (f)
        fclose(f);
    trove_bytes_free(&buf);
    trove_wire_encoder_free(enc);
    CHECK_EQ_INT(trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_write(s, "ref", gen_events.ev, gen_events.len, gen_names, &o, NULL,
                                     NULL),
                 TROVE_OK);
    trove_store_close(s);
    sweep("streamed import", op_import, check_import, c);
}

static int replay_send(void *ctx, const struct trove_stream_batch *b)
{
    uint64_t *events = ctx;
    *events += b->events;
    return TROVE_OK;
}

/* The rows the replay with attributes is given (made before its sweep), and its window's
 * start (0: the plain replay, every event). */
static struct trove_attrs replay_rows;
static uint64_t replay_from_ns;

static int op_capture_replay(void *p)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_stream *st = NULL;
    struct trove_stream_options so;
    struct trove_capture_replay_options ro = {.to_ns = UINT64_MAX, .wire = TROVE_WIRE_PACKED};
    uint64_t events = 0, want = 0;
    struct trove_stream_sink sink = {.send = replay_send, .ctx = &events};
    int rc = trove_store_open(c->dir, TROVE_STORE_READONLY, &s, NULL);
    trove_stream_options_default(&so);
    so.send_mode = TROVE_STREAM_SEND_INLINE;
    if (rc == TROVE_OK)
        rc = trove_stream_new(trove_store_backend(s), &so, &st);
    ro.from_ns = replay_from_ns;
    ro.attrs = replay_from_ns ? &replay_rows : NULL;
    if (rc == TROVE_OK)
        rc = trove_capture_replay(s, "cap", st, &ro, &sink, NULL, NULL);
    for (size_t i = 0; i < gen_events.len; i++)
        want += gen_events.ev[i].start_ns >= replay_from_ns;
    if (rc == TROVE_OK && events != want)
        rc = TROVE_ERR_MISMATCH;
    trove_stream_free(st);
    trove_store_close(s);
    return rc;
}

static void test_store(void)
{
    struct store_ctx c;
    struct trove_store *s = NULL;
    struct trove_volume *v = NULL;
    struct trove_names *half = NULL;

    memset(&c, 0, sizeof c);
    snprintf(c.dir, sizeof c.dir, "%s/store", tmpdir);
    for (size_t i = 0; i < sizeof vold; i++) {
        vold[i] = (uint8_t)(i * 7 + (i >> 12));
        vnew[i] = (uint8_t)(i >> 12) == 3 || (uint8_t)(i >> 12) == 17 ? (uint8_t)(i * 13) : vold[i];
    }
    CHECK_EQ_INT(trove_store_open(c.dir, TROVE_STORE_CREATE | TROVE_STORE_NOSYNC, &s, NULL),
                 TROVE_OK);
    CHECK_EQ_INT(trove_volume_create(s, "vol", sizeof vold, VBLOCK, &v, NULL), TROVE_OK);
    trove_volume_close(v);
    trove_store_close(s);
    CHECK_EQ_INT(volume_put(c.dir, vold), TROVE_OK);
    CHECK(volume_equals(c.dir, vold));
    sweep("volume commit", op_volume_commit, check_volume_commit, &c);
    CHECK_EQ_INT(garbage_put(c.dir), TROVE_OK);
    sweep("store gc", op_gc, check_gc, &c);
    sweep("capture import", op_capture_write, check_capture_write, &c);
    for (size_t i = 0; i < gen_events.len; i += 10) {
        struct trove_flow f = {gen_events.ev[i].start_ns, 1 + i / 30, gen_events.ev[i].pid,
                               gen_events.ev[i].tid, 0, (uint8_t)(i / 10 % 3), 1, {0, 0}};
        CHECK_EQ_INT(trove_flows_push(&cap_flows, &f), TROVE_OK);
    }
    sweep("capture import, flows", op_capture_write_flows, check_capture_write, &c);
    CHECK_EQ_INT(op_capture_write_flows(&c), TROVE_OK);
    sweep("capture flows read", op_capture_read_flows, NULL, &c);
    CHECK_EQ_INT(op_capture_write(&c), TROVE_OK);
    sweep("capture replay", op_capture_replay, NULL, &c);
    /* a window with attrs frames (every third event's row) */
    for (size_t i = 0; i < gen_events.len; i += 3) {
        struct trove_attr r = {.event = i, .type = TROVE_ATTR_INT, .v.i = (int64_t)i};
        CHECK(trove_attrs_intern(&replay_rows, i % 2 ? "odd" : "even", i % 2 ? 3 : 4, &r.key) ==
                  TROVE_OK &&
              trove_attrs_add(&replay_rows, &r) == TROVE_OK);
    }
    replay_from_ns = gen_events.ev[gen_events.len / 3].start_ns;
    sweep("capture replay, attrs", op_capture_replay, NULL, &c);
    replay_from_ns = 0;
    trove_attrs_free(&replay_rows);
    sweep_live(&c, "capture live writer");
    sweep_import(&c);
    /* Names in parts (cut small: 20-odd parts of gen's names): the import, and the live
     * writer's append (which reads parts back and puts the last again) and new capture. */
    trove_testing_capture_names_cut(64, 200);
    sweep("capture import, names parts", op_capture_write, check_capture_write, &c);
    CHECK_EQ_INT(op_capture_write(&c), TROVE_OK); /* what the live writer's must equal */
    {
        struct trove_capture_info info;
        CHECK_EQ_INT(trove_store_open(c.dir, TROVE_STORE_READONLY, &s, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_capture_info(s, "cap", &info, NULL), TROVE_OK);
        CHECK(info.flags & TROVE_CAPTURE_FLAG_NAMES_PARTS);
        trove_store_close(s);
    }
    CHECK_EQ_INT(trove_names_new(&half), TROVE_OK);
    for (size_t i = 0; half && i < trove_names_count(gen_names) / 2; i++) {
        struct trove_name_entry e;
        trove_names_entry(gen_names, i, &e);
        CHECK_EQ_INT(trove_names_put(half, &e), TROVE_OK);
    }
    c.live_names = half;
    sweep_live(&c, "capture live writer, names parts");
    trove_testing_capture_names_cut(0, 0);
    trove_names_free(half);
    CHECK(store_clean(c.dir));
    trove_flows_free(&cap_flows);
}

int main(int argc, char **argv)
{
    struct trove_gen_options g;

    test_init(argc, argv);
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    trove_gen_defaults(&g);
    g.events = 700;
    g.processes = 2;
    g.threads = 3;
    g.names = 50;
    if (trove_names_new(&gen_names) != TROVE_OK ||
        trove_gen(&g, &gen_events, gen_names) != TROVE_OK) {
        fprintf(stderr, "the generator failed\n");
        test_rm_rf(tmpdir);
        return 1;
    }

    RUN(test_store);

    trove_events_free(&gen_events);
    trove_names_free(gen_names);
    test_rm_rf(tmpdir);
    return test_done();
}
