/*
 * test_capture_store.c: captures written into a temp store and replayed (src/capture/):
 * writes of generated captures whose segments are as docs/formats/capture.md says, info and
 * list agreeing, a rewrite storing nothing new, a name held by another volume refused, and
 * the last-used marker; replay through a stream in every wire format, whole, by time range
 * and from an event index, against the input, with a damaged segment named in the error; the
 * segment formats (deflate and columnar) written and replayed. With
 * TROVE_CAPTURE_CORPUS=<dir> set, a segment and the names of a small capture are also
 * written to <dir> as seeds of fuzz/corpus/fuzz_capture/. The header format itself is
 * test_capture.c's; flows, profiles and names beside the events are test_capture_objects.c's.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/capture_internal.h"
#include "common/endian.h"
#include "testutil.h"
#include "capture_test.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/gen.h"
#include "trove/stream.h"
#include "trove/testing.h"
#include "trove/wire.h"

static void test_write(void)
{
    struct trove_store *s = open_store(TROVE_STORE_CREATE);
    struct trove_events ev = {0}, small = {0}, bad = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info, again, got;
    struct trove_capture_entry *list = NULL;
    struct trove_volume *v = NULL;
    struct trove_capture_options o;
    struct trove_diag diag = {0};
    size_t count = 0;
    uint64_t objects;

    if (!s)
        return;
    /* An empty store lists no captures (the service's first GET /api/captures). */
    CHECK_EQ_INT(trove_capture_list(s, &list, &count), TROVE_OK);
    CHECK_EQ_INT(count, 0);
    CHECK(list == NULL);
    gen_capture(100000, 3, &ev, &names);
    /* 2048 events a segment, 500 a frame: 49 segments of 5 frames (the last of 1696 events). */
    CHECK_EQ_INT(write_capture(s, "cap", &ev, names, 65536, 500, &info), TROVE_OK);
    CHECK_EQ_INT(info.events, 100000);
    CHECK_EQ_INT(info.segments, 49);
    CHECK_EQ_INT(info.raw_bytes, 3200000);
    CHECK_EQ_INT(info.names, trove_names_count(names));
    CHECK_EQ_INT(info.first_ns, ev.ev[0].start_ns);
    CHECK(info.end_ns >= ev.ev[ev.len - 1].start_ns);
    CHECK_EQ_INT(info.new_objects, 51 + 50); /* and the summaries: 49 segments', one above */
    CHECK(info.stored_bytes > 0 && info.stored_bytes < info.raw_bytes);
    objects = store_objects(s);
    check_layout(s, "cap", &ev, names, 2048, 500);

    memset(&got, 0, sizeof got);
    CHECK_EQ_INT(trove_capture_info(s, "cap", &got, &diag), TROVE_OK);
    CHECK(same_info(&info, &got) && got.new_objects == 0);

    /* Written again, the same objects: nothing new in the store. And under another name,
     * the same bytes: only its recipe is new. */
    CHECK_EQ_INT(write_capture(s, "cap", &ev, names, 65536, 500, &again), TROVE_OK);
    CHECK(same_info(&info, &again));
    CHECK_EQ_INT(again.new_objects, 0);
    CHECK_EQ_INT(store_objects(s), objects);
    CHECK_EQ_INT(write_capture(s, "cap2", &ev, names, 65536, 500, &again), TROVE_OK);
    CHECK_EQ_INT(again.new_objects, 0);
    CHECK_EQ_INT(store_objects(s), objects);

    /* Another shape replaces the capture whole: fewer segments, then more. */
    for (size_t i = 0; i < 5000; i++)
        CHECK_EQ_INT(trove_events_push(&small, &ev.ev[i]), TROVE_OK);
    CHECK_EQ_INT(write_capture(s, "cap2", &small, names, 65536, 500, &again), TROVE_OK);
    CHECK_EQ_INT(again.segments, 3);
    CHECK_EQ_INT(again.new_objects, 4); /* the last segment, its summary, the one above
                                             them all, and the header */
    check_layout(s, "cap2", &small, names, 2048, 500);
    CHECK_EQ_INT(write_capture(s, "cap2", &ev, names, 32768 * 32, 0, &again), TROVE_OK);
    CHECK_EQ_INT(again.segments, 4);
    check_layout(s, "cap2", &ev, names, 32768, TROVE_CAPTURE_FRAME_EVENTS_DEFAULT);

    /* No events, no names: a header and one empty names frame. */
    memset(&o, 0, sizeof o);
    CHECK_EQ_INT(trove_capture_write(s, "empty", NULL, 0, NULL, &o, &again, &diag), TROVE_OK);
    CHECK(again.events == 0 && again.segments == 0 && again.first_ns == 0 && again.end_ns == 0);
    CHECK_EQ_INT(again.stored_bytes, 96 + 16);
    CHECK_EQ_INT(trove_capture_info(s, "empty", &got, NULL), TROVE_OK);
    CHECK(same_info(&again, &got));

    /* One event per segment and per frame. */
    CHECK_EQ_INT(write_capture(s, "tiny", &small, names, 32, 1, &again), TROVE_OK);
    CHECK_EQ_INT(again.segments, 5000);

    /* Names the store holds otherwise. */
    CHECK_EQ_INT(trove_volume_create(s, "blocks", 1 << 20, 0, NULL, NULL), TROVE_OK);
    memset(&diag, 0, sizeof diag);
    CHECK_EQ_INT(trove_capture_write(s, "blocks", small.ev, small.len, names, NULL, &again, &diag),
                 TROVE_ERR_EXISTS);
    CHECK(strstr(diag.msg, "blocks") && strstr(diag.msg, "block volume"));
    CHECK_EQ_INT(trove_capture_info(s, "blocks", &got, &diag), TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "not a capture") != NULL);
    /* An object volume with something else in slot 0 is not a capture either ... */
    CHECK_EQ_INT(trove_volume_create_objects(s, "objs", 3, 4096, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_put_object(v, 0, "not a header", 12), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_capture_write(s, "objs", small.ev, small.len, names, NULL, &again, &diag),
                 TROVE_ERR_EXISTS);
    CHECK(strstr(diag.msg, "not a capture") && strstr(diag.msg, "cut short"));
    CHECK_EQ_INT(trove_capture_info(s, "objs", &got, &diag), TROVE_ERR_TRUNCATED);
    CHECK(strstr(diag.msg, "capture objs: header (slot 0)") != NULL);
    /* ... but one that no write filled (a crash before the commit) is taken over. */
    CHECK_EQ_INT(trove_volume_create_objects(s, "unfinished", 7, 1 << 20, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "unfinished", &got, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(write_capture(s, "unfinished", &small, names, 0, 0, &again), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "unfinished", &got, NULL), TROVE_OK);
    CHECK_EQ_INT(got.events, 5000);

    /* A snapshot of a capture is a capture, read-only. */
    CHECK_EQ_INT(trove_snapshot_create(s, "cap2", "cap2.snap", NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "cap2.snap", &got, NULL), TROVE_OK);
    CHECK_EQ_INT(got.events, 100000);
    CHECK_EQ_INT(trove_capture_write(s, "cap2.snap", small.ev, small.len, names, NULL, &again,
                                     &diag),
                 TROVE_ERR_READONLY);
    CHECK(strstr(diag.msg, "snapshot") != NULL);

    CHECK_EQ_INT(trove_capture_info(s, "nothing", &got, &diag), TROVE_ERR_NOTFOUND);
    CHECK(strstr(diag.msg, "nothing") != NULL);

    /* The list: captures sorted, block volumes left out, a bad header listed with its error. */
    CHECK_EQ_INT(trove_capture_list(s, &list, &count), TROVE_OK);
    CHECK_EQ_INT(count, 7);
    if (count == 7) {
        static const char *const want[] = {"cap", "cap2", "cap2.snap", "empty", "objs", "tiny",
                                           "unfinished"};
        for (size_t i = 0; i < 7; i++)
            CHECK(strcmp(list[i].name, want[i]) == 0);
        CHECK(list[0].error == TROVE_OK && same_info(&list[0].info, &info));
        CHECK(list[4].error == TROVE_ERR_TRUNCATED && list[4].info.events == 0);
        CHECK(list[5].error == TROVE_OK && list[5].info.segments == 5000);
    }
    free(list);

    /* Bad arguments change nothing. */
    objects = store_objects(s);
    memset(&o, 0, sizeof o);
    CHECK_EQ_INT(trove_capture_write(s, "a/b", small.ev, small.len, names, &o, &again, &diag),
                 TROVE_ERR_INVALID);
    o.segment_bytes = 33;
    CHECK_EQ_INT(trove_capture_write(s, "x", small.ev, small.len, names, &o, &again, &diag),
                 TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "multiple of 32") != NULL);
    o.segment_bytes = TROVE_CAPTURE_MAX_SEGMENT_BYTES + 32;
    CHECK_EQ_INT(trove_capture_write(s, "x", small.ev, small.len, names, &o, &again, &diag),
                 TROVE_ERR_INVALID);
    o.segment_bytes = 0;
    o.frame_events = TROVE_WIRE_MAX_EVENTS + 1;
    CHECK_EQ_INT(trove_capture_write(s, "x", small.ev, small.len, names, &o, &again, &diag),
                 TROVE_ERR_INVALID);
    o.frame_events = 0;
    CHECK_EQ_INT(trove_capture_write(s, "x", NULL, 5, names, &o, &again, &diag), TROVE_ERR_INVALID);
    small.ev[4321].pad = 1;
    CHECK_EQ_INT(trove_capture_write(s, "x", small.ev, small.len, names, &o, &again, &diag),
                 TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "event 4321") != NULL);
    small.ev[4321].pad = 0;
    /* 2^18 + 1 segments of one event: over the limit, refused before anything is stored. */
    CHECK_EQ_INT(trove_events_reserve(&bad, TROVE_CAPTURE_MAX_SEGMENTS + 1), TROVE_OK);
    if (bad.ev) {
        memset(bad.ev, 0, (size_t)(TROVE_CAPTURE_MAX_SEGMENTS + 1) * sizeof *bad.ev);
        o.segment_bytes = 32;
        CHECK_EQ_INT(trove_capture_write(s, "x", bad.ev, (size_t)TROVE_CAPTURE_MAX_SEGMENTS + 1,
                                         names, &o, &again, &diag),
                     TROVE_ERR_LIMIT);
        CHECK(strstr(diag.msg, "use larger segments") != NULL);
    }
    CHECK_EQ_INT(trove_capture_info(s, "x", &got, NULL), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(store_objects(s), objects);

    trove_store_close(s);
    /* A read-only store describes and lists captures. */
    s = open_store(TROVE_STORE_READONLY);
    CHECK_EQ_INT(trove_capture_info(s, "cap", &got, NULL), TROVE_OK);
    CHECK(same_info(&info, &got));
    CHECK_EQ_INT(trove_capture_list(s, &list, &count), TROVE_OK);
    CHECK_EQ_INT(count, 7);
    free(list);
    CHECK_EQ_INT(trove_capture_write(s, "cap", small.ev, small.len, names, NULL, &again, &diag),
                 TROVE_ERR_READONLY);
    trove_store_close(s);
    trove_events_free(&ev);
    trove_events_free(&small);
    trove_events_free(&bad);
    trove_names_free(names);
}

static void test_replay(void)
{
    static const int wires[] = {TROVE_WIRE_RAW, TROVE_WIRE_PACKED, TROVE_WIRE_DEFLATE};
    struct trove_store *s = open_store(TROVE_STORE_CREATE);
    struct trove_events ev = {0}, shuf = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info;
    struct trove_digest d;
    struct trove_bytes obj = {0};
    struct collect c;
    char hex[33], bad[64];
    uint64_t a, b, seed = 5;

    if (!s)
        return;
    gen_capture(100000, 9, &ev, &names);
    CHECK_EQ_INT(write_capture(s, "r", &ev, names, 65536, 500, &info), TROVE_OK);
    CHECK_EQ_INT(info.segments, 49);
    a = ev.ev[ev.len / 3].start_ns;
    b = ev.ev[2 * ev.len / 3].start_ns;
    for (int w = 0; w < 3; w++) {
        expect_range(s, "r", &ev, names, 0, UINT64_MAX, wires[w], 0, 500);
        expect_range(s, "r", &ev, names, 0, UINT64_MAX, wires[w], 77, 500);
        expect_range(s, "r", &ev, names, a, b, wires[w], 0, 500);
        expect_range(s, "r", &ev, names, a + 1, b + 1, wires[w], 4096, 500);
    }
    /* Edges: nothing before the first event or from the end on; one nanosecond; a range
     * ending exactly at a start leaves that event out. */
    expect_range(s, "r", &ev, names, 0, info.first_ns, TROVE_WIRE_DEFLATE, 0, 500);
    expect_range(s, "r", &ev, names, ev.ev[ev.len - 1].start_ns + 1, UINT64_MAX,
                 TROVE_WIRE_PACKED, 0, 500);
    expect_range(s, "r", &ev, names, a, a + 1, TROVE_WIRE_RAW, 0, 500);
    expect_range(s, "r", &ev, names, a, a, TROVE_WIRE_RAW, 0, 500);
    expect_range(s, "r", &ev, names, ev.ev[ev.len - 1].start_ns, UINT64_MAX, TROVE_WIRE_RAW, 1,
                 500);

    /* From an event index (a viewer catching up from the last event it has): exactly the
     * events from there on, alone or with a time range, at a segment's first event, inside
     * one, the last event, and past the end; the segments before it are not read. */
    {
        const uint64_t froms[] = {1, 2048, 2049, 4095, ev.len / 2, ev.len - 1, ev.len,
                                  ev.len + 5};
        for (size_t f = 0; f < sizeof froms / sizeof froms[0]; f++) {
            replay_from_event = froms[f];
            for (int w = 0; w < 3; w++)
                expect_range(s, "r", &ev, names, 0, UINT64_MAX, wires[w], 0, 500);
            expect_range(s, "r", &ev, names, a, b, TROVE_WIRE_PACKED, 300, 500);
        }
        replay_from_event = ev.len - 1; /* one event: the names and the last segment only */
        {
            struct trove_stream_stats st;
            collect_init(&c, TROVE_WIRE_DEFLATE, 500);
            CHECK_EQ_INT(replay(s, "r", 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, &c, &st, NULL),
                         TROVE_OK);
            CHECK_EQ_INT(st.items, 2);
            CHECK_EQ_INT(c.ev.len, 1);
            collect_free(&c);
        }
        replay_from_event = 0;
    }

    /* Every send mode, and a slow backend whose downloads finish out of order. */
    {
        struct trove_fault_options fo;
        memset(&fo, 0, sizeof fo);
        fo.latency_us = 300;
        CHECK_EQ_INT(trove_backend_fault_wrap(trove_store_backend(s), &fo, &replay_be), TROVE_OK);
        for (replay_mode = TROVE_STREAM_SEND_RENDEZVOUS;
             replay_mode <= TROVE_STREAM_SEND_BUFFERED; replay_mode++) {
            expect_range(s, "r", &ev, names, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, 500);
            expect_range(s, "r", &ev, names, a, b, TROVE_WIRE_PACKED, 300, 500);
        }
        trove_backend_close(replay_be);
        replay_be = NULL;
        replay_mode = TROVE_STREAM_SEND_RENDEZVOUS;
    }

    /* The fast path: a whole replay in the stored form sends each segment's bytes as they
     * are stored. */
    collect_init(&c, TROVE_WIRE_DEFLATE, 500);
    CHECK_EQ_INT(replay(s, "r", 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, &c, NULL, NULL), TROVE_OK);
    {
        struct trove_volume *v = NULL;
        CHECK_EQ_INT(trove_volume_open(s, "r", &v, NULL), TROVE_OK);
        for (uint64_t i = 0; i < 50 && v; i++) {
            CHECK_EQ_INT(trove_volume_get_object(v, 1 + i, &obj), TROVE_OK);
            CHECK(obj.len == c.item_bytes[i].len &&
                  memcmp(obj.ptr, c.item_bytes[i].ptr, obj.len) == 0);
        }
        trove_volume_close(v);
    }
    collect_free(&c);

    /* Unsorted input: segments overlap in time, and a range picks events from several. */
    for (size_t i = 0; i < ev.len; i++)
        CHECK_EQ_INT(trove_events_push(&shuf, &ev.ev[i]), TROVE_OK);
    for (size_t i = shuf.len - 1; i > 0; i--) {
        size_t j = (size_t)(test_rand(&seed) % (i + 1));
        struct trove_event t = shuf.ev[i];
        shuf.ev[i] = shuf.ev[j];
        shuf.ev[j] = t;
    }
    CHECK_EQ_INT(write_capture(s, "shuffled", &shuf, names, 32 * 3000, 700, &info), TROVE_OK);
    for (int w = 0; w < 3; w++)
        expect_range(s, "shuffled", &shuf, names, a, b, wires[w], 0, 700);
    expect_range(s, "shuffled", &shuf, names, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, 700);

    /* The empty capture: one names frame, nothing else. */
    CHECK_EQ_INT(trove_capture_write(s, "empty", NULL, 0, NULL, NULL, &info, NULL), TROVE_OK);
    {
        struct trove_names *none = NULL;
        struct trove_events no = {0};
        CHECK_EQ_INT(trove_names_new(&none), TROVE_OK);
        expect_range(s, "empty", &no, none, 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, 2048);
        trove_names_free(none);
    }

    /* A read-only store replays. */
    trove_store_close(s);
    s = open_store(TROVE_STORE_READONLY);
    expect_range(s, "r", &ev, names, a, b, TROVE_WIRE_PACKED, 0, 500);
    trove_store_close(s);
    s = open_store(0);

    /* Bad requests. */
    expect_replay_error(s, "none", TROVE_WIRE_RAW, TROVE_ERR_NOTFOUND, "none", NULL, "missing");
    CHECK_EQ_INT(trove_volume_create(s, "blocks", 1 << 20, 0, NULL, NULL), TROVE_OK);
    expect_replay_error(s, "blocks", TROVE_WIRE_RAW, TROVE_ERR_INVALID, "not a capture", NULL,
                        "a block volume");
    expect_replay_error(s, "r", 9, TROVE_ERR_INVALID, "wire format", NULL, "wire 9");
    collect_init(&c, TROVE_WIRE_RAW, 500);
    CHECK_EQ_INT(replay(s, "r", 10, 9, TROVE_WIRE_RAW, 0, &c, NULL, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(c.batches, 0);
    collect_free(&c);

    /* Damaged objects, named in the error with the segment and the digest. Every read is
     * checked against the object's name, so a flipped byte never reaches a decoder or a
     * sink, whatever the wire (the fast path too). */
    slot_digest(s, "r", 2 + 7, &d);
    trove_digest_hex(&d, hex);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    obj.ptr[obj.len / 2] ^= 0x55; /* inside the deflate stream of a frame */
    damage(s, &d, obj.ptr, obj.len);
    for (int w = 0; w < 3; w++)
        expect_replay_error(s, "r", wires[w], TROVE_ERR_CHECKSUM, "segment 7 (slot 9)", hex,
                            "a flipped byte, verified");
    collect_init(&c, TROVE_WIRE_DEFLATE, 500);
    CHECK_EQ_INT(replay(s, "r", 0, UINT64_MAX, TROVE_WIRE_DEFLATE, 0, &c, NULL, NULL),
                 TROVE_ERR_CHECKSUM);
    CHECK_EQ_INT(c.item_bytes[1 + 7].len, 0); /* not a byte of segment 7 (item 8) was sent */
    CHECK(c.ev.len <= 7 * 2048);              /* nor anything after it */
    collect_free(&c);
    /* Without verification (benchmarks only) the decoders still catch what they can. */
    trove_store_close(s);
    s = open_store(TROVE_STORE_NOVERIFY);
    for (int w = 0; w < 2; w++)
        expect_replay_error(s, "r", wires[w], TROVE_ERR_INFLATE, "segment 7 (slot 9)", hex,
                            "a flipped byte");
    expect_replay_error(s, "r", TROVE_WIRE_DEFLATE, TROVE_OK, NULL, NULL,
                        "the fast path does not inflate");
    memset(obj.ptr, 0xee, obj.len); /* frame headers gone: the fast path sees it too */
    damage(s, &d, obj.ptr, obj.len);
    expect_replay_error(s, "r", TROVE_WIRE_DEFLATE, TROVE_ERR_MAGIC, "segment 7", hex, "garbage");
    expect_replay_error(s, "r", TROVE_WIRE_RAW, TROVE_ERR_MAGIC, "segment 7", hex, "garbage");
    damage(s, &d, obj.ptr, obj.len - 1);
    expect_replay_error(s, "r", TROVE_WIRE_PACKED, TROVE_ERR_CORRUPT, "the header says", hex,
                        "a short object");
    /* Another segment's object in its place: the counts or the times give it away. */
    slot_digest(s, "r", 2 + 48, &d);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    slot_digest(s, "r", 2 + 7, &d);
    damage(s, &d, obj.ptr, obj.len);
    expect_replay_error(s, "r", TROVE_WIRE_RAW, TROVE_ERR_CORRUPT, "segment 7", NULL, "swapped");
    /* A missing object. */
    damage(s, &d, NULL, 0);
    snprintf(bad, sizeof bad, "%s", hex);
    expect_replay_error(s, "r", TROVE_WIRE_RAW, TROVE_ERR_NOTFOUND, NULL, NULL, "missing object");
    /* The names object. */
    slot_digest(s, "r", 1, &d);
    trove_digest_hex(&d, hex);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    obj.ptr[0] = 'X';
    damage(s, &d, obj.ptr, obj.len);
    expect_replay_error(s, "r", TROVE_WIRE_DEFLATE, TROVE_ERR_MAGIC, "names (slot 1)", hex,
                        "names");
    /* The header: replay refuses before it sends anything. */
    slot_digest(s, "r", 0, &d);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    obj.ptr[20] ^= 1;
    damage(s, &d, obj.ptr, obj.len);
    collect_init(&c, TROVE_WIRE_RAW, 500);
    CHECK_EQ_INT(replay(s, "r", 0, UINT64_MAX, TROVE_WIRE_RAW, 0, &c, NULL, NULL),
                 TROVE_ERR_CHECKSUM);
    CHECK_EQ_INT(c.batches, 0);
    collect_free(&c);

    trove_store_close(s);
    trove_bytes_free(&obj);
    trove_events_free(&ev);
    trove_events_free(&shuf);
    trove_names_free(names);
}

/* The frame formats of a segment object, as a bit set (1 << format). */
static unsigned segment_frame_formats(struct trove_store *s, const char *name, uint64_t k)
{
    struct trove_volume *v = NULL;
    struct trove_bytes obj = {0};
    unsigned set = 0;
    CHECK_EQ_INT(trove_volume_open(s, name, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 2 + k, &obj), TROVE_OK);
    for (size_t at = 0; at + TROVE_WIRE_HEADER_SIZE <= obj.len;) {
        struct trove_wire_header wh;
        if (trove_wire_parse_header(obj.ptr + at, obj.len - at, &wh, NULL) != TROVE_OK)
            break;
        set |= 1u << wh.format;
        at += TROVE_WIRE_HEADER_SIZE + wh.payload_len;
    }
    trove_volume_close(v);
    trove_bytes_free(&obj);
    return set;
}

/* n events whose columns are noise (random starts, durations, names, threads, depths,
 * extras; kinds below `kinds`), ends within 2^64, appended to ev. */
static void noise(struct trove_events *ev, size_t n, unsigned kinds, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        struct trove_event e;
        memset(&e, 0, sizeof e);
        e.start_ns = test_rand(seed);
        e.dur_ns = test_rand(seed) >> 1;
        if (e.start_ns > UINT64_MAX - e.dur_ns)
            e.start_ns = UINT64_MAX - e.dur_ns;
        e.name_id = (uint32_t)test_rand(seed);
        e.tid = (uint32_t)test_rand(seed);
        e.depth = (uint8_t)test_rand(seed);
        e.kind = (uint8_t)(test_rand(seed) % kinds);
        e.extra = (uint8_t)test_rand(seed);
        CHECK_EQ_INT(trove_events_push(ev, &e), TROVE_OK);
    }
}

/*
 * Segments in format 5 (segment_format): the same events stored as columnar and as
 * columnar_deflate take fewer bytes than as deflate, the header carries the columnar flag,
 * and every wire and range replays the same events; the live writer writes format 5 too
 * and an append goes on in it; events format 5 would store larger than packed's worst case
 * are stored as deflate frames in the same capture; a capture without the flag whose segment
 * holds a format 5 frame is refused, naming the segment.
 */
static void test_segment_format(void)
{
    static const int wires[] = {TROVE_WIRE_RAW, TROVE_WIRE_PACKED, TROVE_WIRE_DEFLATE};
    static const int formats[] = {TROVE_WIRE_DEFLATE, TROVE_WIRE_COLUMNAR,
                                  TROVE_WIRE_COLUMNAR_DEFLATE};
    static const char *const cap[] = {"f-deflate", "f-columnar", "f-columnar-deflate"};
    struct trove_store *s = open_store(TROVE_STORE_CREATE);
    struct trove_events ev = {0}, wild = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info[3], back;
    struct trove_capture_options o;
    struct trove_capture_writer *w = NULL;
    struct trove_diag diag = {0};
    struct trove_digest d;
    struct trove_bytes obj = {0};
    uint64_t a, b, seed = 99;

    if (!s)
        return;
    gen_capture(60000, 12, &ev, &names);
    a = ev.ev[ev.len / 4].start_ns;
    b = ev.ev[3 * ev.len / 4].start_ns;
    for (int f = 0; f < 3; f++) {
        write_format = formats[f];
        CHECK_EQ_INT(write_capture(s, cap[f], &ev, names, 32 * 8192, 1000, &info[f]), TROVE_OK);
        write_format = 0;
        CHECK_EQ_INT(info[f].flags & ~TROVE_CAPTURE_FLAG_SUMMARY,
                     f == 0   ? 0
                     : f == 1 ? TROVE_CAPTURE_FLAG_COLUMNAR
                              : TROVE_CAPTURE_FLAG_COLUMNAR | TROVE_CAPTURE_FLAG_COLUMNAR_DEFLATE);
        CHECK(!strcmp(trove_capture_segment_format_name(info[f].flags),
                      f == 0 ? "deflate" : f == 1 ? "columnar" : "columnar_deflate"));
        CHECK_EQ_INT(trove_capture_info(s, cap[f], &back, NULL), TROVE_OK);
        CHECK_EQ_INT(back.flags, info[f].flags);
        CHECK_EQ_INT(back.stored_bytes, info[f].stored_bytes);
        CHECK_EQ_INT(segment_frame_formats(s, cap[f], 3),
                     1u << (f ? TROVE_WIRE_COLUMNAR : TROVE_WIRE_DEFLATE));
        for (int wi = 0; wi < 3; wi++) {
            expect_range(s, cap[f], &ev, names, 0, UINT64_MAX, wires[wi], 0, 1000);
            expect_range(s, cap[f], &ev, names, a, b, wires[wi], 333, 1000);
        }
    }
    CHECK(info[1].stored_bytes < info[0].stored_bytes);
    CHECK(info[2].stored_bytes < info[1].stored_bytes);
    /* the same names object whatever the segments */
    {
        struct trove_digest n0, n1;
        slot_digest(s, cap[0], 1, &n0);
        slot_digest(s, cap[1], 1, &n1);
        CHECK(trove_digest_equal(&n0, &n1));
    }

    /* The live writer: format 5 segments, committed twice; an append without a format goes
     * on in format 5 (the flag stays), and the whole replays. */
    memset(&o, 0, sizeof o);
    o.segment_bytes = 32 * 8192;
    o.frame_events = 1000;
    o.segment_format = TROVE_WIRE_COLUMNAR;
    CHECK_EQ_INT(trove_capture_writer_open(s, "f-live", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, names, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev, 25000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &back, &diag), TROVE_OK);
    CHECK_EQ_INT(back.flags & ~TROVE_CAPTURE_FLAG_SUMMARY, TROVE_CAPTURE_FLAG_COLUMNAR);
    trove_capture_writer_close(w);
    w = NULL;
    CHECK_EQ_INT(trove_capture_writer_open(s, "f-live", 1, NULL, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev + 25000, ev.len - 25000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &back, &diag), TROVE_OK);
    CHECK_EQ_INT(back.flags & ~TROVE_CAPTURE_FLAG_SUMMARY, TROVE_CAPTURE_FLAG_COLUMNAR);
    CHECK_EQ_INT(back.events, ev.len);
    trove_capture_writer_close(w);
    w = NULL;
    CHECK_EQ_INT(segment_frame_formats(s, "f-live", 0), 1u << TROVE_WIRE_COLUMNAR);
    CHECK_EQ_INT(segment_frame_formats(s, "f-live", 5), 1u << TROVE_WIRE_COLUMNAR);
    for (int wi = 0; wi < 3; wi++)
        expect_range(s, "f-live", &ev, names, 0, UINT64_MAX, wires[wi], 0, 1000);
    expect_range(s, "f-live", &ev, names, a, b, TROVE_WIRE_PACKED, 0, 1000);
    /* ... and a live writer of a bad segment format is refused */
    o.segment_format = TROVE_WIRE_PACKED;
    CHECK_EQ_INT(trove_capture_writer_open(s, "f-bad", 0, &o, &w, &diag), TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "segment format") != NULL);
    o.segment_format = 0x205;
    CHECK_EQ_INT(trove_capture_write(s, "f-bad", ev.ev, 10, names, &o, NULL, &diag),
                 TROVE_ERR_INVALID);

    /* Events whose columns are noise (random starts, durations, names, threads, kinds,
     * depths, extras): format 5 still stays within packed's worst case (16 + 44 bytes an
     * event a frame: past it a frame would be stored as deflate), and the capture replays. */
    noise(&wild, 3000, 5, &seed);
    write_format = TROVE_WIRE_COLUMNAR;
    write_no_summaries = 1; /* the segments' bytes alone are measured */
    CHECK_EQ_INT(write_capture(s, "f-wild", &wild, NULL, 32 * 1024, 100, &back), TROVE_OK);
    write_no_summaries = 0;
    write_format = 0;
    CHECK_EQ_INT(back.flags & ~TROVE_CAPTURE_FLAG_SUMMARY, TROVE_CAPTURE_FLAG_COLUMNAR);
    {
        unsigned all = 0;
        for (uint64_t k = 0; k < back.segments; k++)
            all |= segment_frame_formats(s, "f-wild", k);
        CHECK_EQ_INT(all, 1u << TROVE_WIRE_COLUMNAR);
        CHECK(back.stored_bytes < 40 * wild.len); /* about 34.5 bytes an event, all in */
        {
            struct trove_names *none = NULL;
            CHECK_EQ_INT(trove_names_new(&none), TROVE_OK);
            expect_range(s, "f-wild", &wild, none, 0, UINT64_MAX, TROVE_WIRE_RAW, 0, 100);
            trove_names_free(none);
        }
    }

    /* A capture whose header lost the flag (rewritten with a right checksum under its name,
     * read without verification) while its segments hold format 5 frames: refused, as any
     * frame in a format the header does not allow. */
    trove_store_close(s);
    s = open_store(TROVE_STORE_NOVERIFY);
    slot_digest(s, cap[1], 0, &d);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    CHECK_EQ_INT(trove__get_le32(obj.ptr + 12),
                 TROVE_CAPTURE_FLAG_COLUMNAR | TROVE_CAPTURE_FLAG_SUMMARY);
    trove__put_le32(obj.ptr + 12, TROVE_CAPTURE_FLAG_SUMMARY);
    trove__put_le64(obj.ptr + obj.len - 8, trove_checksum64(obj.ptr, obj.len - 8));
    damage(s, &d, obj.ptr, obj.len);
    expect_replay_error(s, cap[1], TROVE_WIRE_DEFLATE, TROVE_ERR_CORRUPT,
                        "is columnar, not deflate", "segment 0", "the flag gone: fast path");
    expect_replay_error(s, cap[1], TROVE_WIRE_RAW, TROVE_ERR_CORRUPT, "is columnar, not deflate",
                        "segment 0", "the flag gone");

    trove_store_close(s);
    trove_bytes_free(&obj);
    trove_events_free(&ev);
    trove_events_free(&wild);
    trove_names_free(names);
}

/*
 * Segments in format 8 (segment_format TROVE_WIRE_MODEL): one frame a segment by default
 * (frame_events 0), the model flag in the header, fewer bytes than format 5 with deflate,
 * every wire and range replaying the same events; the live writer writes them and an append
 * goes on in them; noise is stored within packed's worst case (as deflate frames where
 * format 8 would pass it) and replays; a header that lost the flag is refused.
 */
static void test_model_segments(void)
{
    static const int wires[] = {TROVE_WIRE_RAW, TROVE_WIRE_PACKED, TROVE_WIRE_DEFLATE};
    struct trove_store *s = open_store(TROVE_STORE_CREATE);
    struct trove_events ev = {0}, wild = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info model, col, back;
    struct trove_capture_options o;
    struct trove_capture_writer *w = NULL;
    struct trove_diag diag = {0};
    struct trove_digest d;
    struct trove_bytes obj = {0};
    uint64_t a, b, seed = 5;

    if (!s)
        return;
    gen_capture(60000, 13, &ev, &names);
    a = ev.ev[ev.len / 4].start_ns;
    b = ev.ev[3 * ev.len / 4].start_ns;
    write_no_summaries = 1; /* the segments' bytes alone are compared */
    write_format = TROVE_WIRE_COLUMNAR_DEFLATE;
    CHECK_EQ_INT(write_capture(s, "m-col", &ev, names, 32 * 8192, 0, &col), TROVE_OK);
    write_format = TROVE_WIRE_MODEL;
    CHECK_EQ_INT(write_capture(s, "m-model", &ev, names, 32 * 8192, 0, &model), TROVE_OK);
    write_format = 0;
    write_no_summaries = 0;
    CHECK_EQ_INT(model.flags, TROVE_CAPTURE_FLAG_MODEL);
    CHECK(model.stored_bytes < col.stored_bytes * 4 / 5);
    CHECK_EQ_INT(segment_frame_formats(s, "m-model", 2), 1u << TROVE_WIRE_MODEL);
    {
        struct trove_capture_header h;
        CHECK_EQ_INT(read_header(s, "m-model", &h), TROVE_OK);
        CHECK(h.frame_events == 8192 && h.seg && h.seg[0].frames == 1);
        trove_capture_header_free(&h);
    }
    for (int wi = 0; wi < 3; wi++) {
        expect_range(s, "m-model", &ev, names, 0, UINT64_MAX, wires[wi], 0, 8192);
        expect_range(s, "m-model", &ev, names, a, b, wires[wi], 333, 8192);
    }

    /* the live writer, committed twice; an append without a format goes on in format 8 */
    memset(&o, 0, sizeof o);
    o.segment_bytes = 32 * 8192;
    o.segment_format = TROVE_WIRE_MODEL;
    CHECK_EQ_INT(trove_capture_writer_open(s, "m-live", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, names, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev, 25000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &back, &diag), TROVE_OK);
    CHECK(back.flags & TROVE_CAPTURE_FLAG_MODEL);
    trove_capture_writer_close(w);
    w = NULL;
    CHECK_EQ_INT(trove_capture_writer_open(s, "m-live", 1, NULL, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev + 25000, ev.len - 25000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &back, &diag), TROVE_OK);
    CHECK(back.flags & TROVE_CAPTURE_FLAG_MODEL);
    CHECK_EQ_INT(back.events, ev.len);
    trove_capture_writer_close(w);
    w = NULL;
    CHECK_EQ_INT(segment_frame_formats(s, "m-live", 0), 1u << TROVE_WIRE_MODEL);
    for (int wi = 0; wi < 3; wi++)
        expect_range(s, "m-live", &ev, names, 0, UINT64_MAX, wires[wi], 0, 8192);
    CHECK(!strcmp(trove_capture_segment_format_name(back.flags), "model"));

    /* a deflate capture appended in format 8 says it holds both; a columnar_deflate one
     * refuses an append in plain columnar, whose frames its name would hide */
    memset(&o, 0, sizeof o);
    o.segment_bytes = 32 * 8192;
    CHECK_EQ_INT(trove_capture_writer_open(s, "m-mixed", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, names, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev, 25000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &back, &diag), TROVE_OK);
    CHECK(!strcmp(trove_capture_segment_format_name(back.flags), "deflate"));
    trove_capture_writer_close(w);
    o.segment_format = TROVE_WIRE_MODEL;
    CHECK_EQ_INT(trove_capture_writer_open(s, "m-mixed", 1, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &back, &diag), TROVE_OK); /* nothing added */
    CHECK(!strcmp(trove_capture_segment_format_name(back.flags), "deflate"));
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev + 25000, ev.len - 25000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &back, &diag), TROVE_OK);
    CHECK_EQ_INT(back.flags & ~TROVE_CAPTURE_FLAG_SUMMARY,
                 TROVE_CAPTURE_FLAG_MODEL | TROVE_CAPTURE_FLAG_DEFLATE);
    CHECK(!strcmp(trove_capture_segment_format_name(back.flags), "deflate+model"));
    trove_capture_writer_close(w);
    w = NULL;
    CHECK_EQ_INT(trove_capture_info(s, "m-mixed", &back, NULL), TROVE_OK);
    CHECK(!strcmp(trove_capture_segment_format_name(back.flags), "deflate+model"));
    CHECK_EQ_INT(segment_frame_formats(s, "m-mixed", 0), 1u << TROVE_WIRE_DEFLATE);
    CHECK_EQ_INT(segment_frame_formats(s, "m-mixed", back.segments - 1), 1u << TROVE_WIRE_MODEL);
    expect_range(s, "m-mixed", &ev, names, 0, UINT64_MAX, TROVE_WIRE_RAW, 0, 2048);
    o.segment_format = TROVE_WIRE_COLUMNAR_DEFLATE;
    CHECK_EQ_INT(trove_capture_writer_open(s, "m-cd", 0, &o, &w, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_names(w, names, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_add(w, ev.ev, 1000, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_commit(w, &back, &diag), TROVE_OK);
    CHECK(!strcmp(trove_capture_segment_format_name(back.flags), "columnar_deflate"));
    trove_capture_writer_close(w);
    w = NULL;
    o.segment_format = TROVE_WIRE_COLUMNAR;
    CHECK_EQ_INT(trove_capture_writer_open(s, "m-cd", 1, &o, &w, &diag), TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "columnar_deflate segments") != NULL);
    CHECK(w == NULL);
    CHECK(!strcmp(trove_capture_segment_format_name(TROVE_CAPTURE_FLAG_COLUMNAR |
                                                    TROVE_CAPTURE_FLAG_MODEL |
                                                    TROVE_CAPTURE_FLAG_DEFLATE),
                  "deflate+columnar+model"));

    /* noise: within packed's worst case, format 8 frames or deflate ones, replaying */
    noise(&wild, 3000, 6, &seed);
    write_format = TROVE_WIRE_MODEL;
    write_no_summaries = 1;
    CHECK_EQ_INT(write_capture(s, "m-wild", &wild, NULL, 32 * 1024, 0, &back), TROVE_OK);
    write_no_summaries = 0;
    write_format = 0;
    {
        unsigned all = 0;
        struct trove_names *none = NULL;
        for (uint64_t k = 0; k < back.segments; k++)
            all |= segment_frame_formats(s, "m-wild", k);
        CHECK(all != 0 && (all & ~((1u << TROVE_WIRE_MODEL) | (1u << TROVE_WIRE_DEFLATE))) == 0);
        CHECK(back.stored_bytes < 16 * back.segments + 44 * wild.len + 4096);
        CHECK_EQ_INT(trove_names_new(&none), TROVE_OK);
        expect_range(s, "m-wild", &wild, none, 0, UINT64_MAX, TROVE_WIRE_RAW, 0, 1024);
        trove_names_free(none);
    }

    /* the flag gone from the header (rewritten under its name with a right checksum, read
     * without verification): its model frames are refused */
    trove_store_close(s);
    s = open_store(TROVE_STORE_NOVERIFY);
    slot_digest(s, "m-model", 0, &d);
    CHECK_EQ_INT(trove_backend_get(trove_store_backend(s), &d, &obj, 1 << 30), TROVE_OK);
    CHECK_EQ_INT(trove__get_le32(obj.ptr + 12), TROVE_CAPTURE_FLAG_MODEL);
    trove__put_le32(obj.ptr + 12, 0);
    trove__put_le64(obj.ptr + obj.len - 8, trove_checksum64(obj.ptr, obj.len - 8));
    damage(s, &d, obj.ptr, obj.len);
    expect_replay_error(s, "m-model", TROVE_WIRE_RAW, TROVE_ERR_CORRUPT, "is model, not deflate",
                        "segment 0", "the model flag gone");

    trove_store_close(s);
    trove_bytes_free(&obj);
    trove_events_free(&ev);
    trove_events_free(&wild);
    trove_names_free(names);
}

/* Seeds for the walk of fuzz_capture: a segment and the names of a small capture, behind the
 * target's parameter blocks (see fuzz/fuzz_capture.c). */
static void seed(const char *file, const uint8_t *params, size_t np, const struct trove_bytes *obj)
{
    struct trove_bytes b = {0};
    CHECK_EQ_INT(trove_bytes_append(&b, params, np), TROVE_OK);
    CHECK_EQ_INT(trove_bytes_append(&b, obj->ptr, obj->len), TROVE_OK);
    test_corpus_write("TROVE_CAPTURE_CORPUS", file, NULL, 0, b.ptr, b.len);
    trove_bytes_free(&b);
}

static void test_corpus_seeds(void)
{
    struct trove_store *s;
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info info;
    struct trove_volume *v = NULL;
    struct trove_bytes seg = {0}, nm = {0};
    /* 'S' wire, stored frame_events - 1, replay frame_events, range, events, frames */
    uint8_t p[13] = {'S', 3, 49, 0, 0, 0, 0, 64, 0, 0, 0, 2, 0};

    if (!getenv("TROVE_CAPTURE_CORPUS"))
        return;
    s = open_store(TROVE_STORE_CREATE);
    gen_capture(300, 1, &ev, &names);
    CHECK_EQ_INT(write_capture(s, "seed", &ev, names, 64 * 32, 50, &info), TROVE_OK);
    CHECK_EQ_INT(trove_volume_open(s, "seed", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 2, &seg), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 1, &nm), TROVE_OK);
    trove_volume_close(v);
    seed("seg-deflate-whole.bin", p, sizeof p, &seg);
    p[1] = 1;
    p[6] = 1; /* [0, 2^r) holds half of the segment's events */
    while (p[6] < 63 && ((uint64_t)1 << p[6]) <= ev.ev[32].start_ns)
        p[6]++;
    seed("seg-raw-window.bin", p, sizeof p, &seg);
    p[1] = 2;
    p[4] = 7;
    p[6] = 0;
    seed("seg-packed-7.bin", p, sizeof p, &seg);
    p[0] = 'N';
    p[1] = (uint8_t)info.names;
    p[2] = (uint8_t)(info.names >> 8);
    seed("names.bin", p, 3, &nm);
    /* the same events in format 5: the walk of a capture with the columnar flag (bit 7 of
     * the wire byte) */
    write_format = TROVE_WIRE_COLUMNAR;
    CHECK_EQ_INT(write_capture(s, "seed5", &ev, names, 64 * 32, 50, &info), TROVE_OK);
    write_format = 0;
    CHECK_EQ_INT(trove_volume_open(s, "seed5", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 2, &seg), TROVE_OK);
    trove_volume_close(v);
    {
        uint8_t q[13] = {'S', 0x80 | 3, 49, 0, 0, 0, 0, 64, 0, 0, 0, 2, 0};
        seed("seg-columnar-whole.bin", q, sizeof q, &seg);
        q[1] = 0x80 | 1;
        q[4] = 7;
        seed("seg-columnar-raw-7.bin", q, sizeof q, &seg);
        q[1] = 3; /* no flag: refused, a format 5 frame in a deflate capture */
        seed("seg-columnar-unflagged.bin", q, sizeof q, &seg);
    }
    /* names in parts (cut small): part 1 of a capture's parts, as the walk of names part
     * 1 of 3 */
    trove_testing_capture_names_cut(128, 512);
    CHECK_EQ_INT(write_capture(s, "seedparts", &ev, names, 64 * 32, 50, &info), TROVE_OK);
    trove_testing_capture_names_cut(0, 0);
    {
        struct trove_capture_header h;
        CHECK_EQ_INT(read_header(s, "seedparts", &h), TROVE_OK);
        CHECK(h.names_parts >= 3);
        CHECK_EQ_INT(trove_volume_open(s, "seedparts", &v, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_volume_get_object(v, 2 + h.info.segments, &nm), TROVE_OK);
        trove_volume_close(v);
        if (h.names_parts >= 3) {
            uint8_t q[7] = {'P', 1, 1, 0, 0, 0, 0}; /* part 1 of 2 + 1 parts */
            trove__put_le32(q + 3, h.names_part[1].entries);
            seed("names-part.bin", q, sizeof q, &nm);
            q[3] ^= 1; /* entries that disagree */
            seed("names-part-entries.bin", q, sizeof q, &nm);
        }
        trove_capture_header_free(&h);
    }
    trove_bytes_free(&seg);
    trove_bytes_free(&nm);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
}

/* The last-used marker: a round trip, a replacement, and every way a read can fail. */
static void test_marker(void)
{
    char path[600];
    uint64_t ns = 1;
    FILE *f;

    CHECK_EQ_INT(trove_capture_last_used(root, "cap", &ns), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(ns, 0);
    CHECK_EQ_INT(trove_capture_mark_used(root, "cap", 1234567890123456789ull), TROVE_OK);
    CHECK_EQ_INT(trove_capture_last_used(root, "cap", &ns), TROVE_OK);
    CHECK(ns == 1234567890123456789ull);
    CHECK_EQ_INT(trove_capture_mark_used(root, "cap", UINT64_MAX), TROVE_OK);
    CHECK_EQ_INT(trove_capture_last_used(root, "cap", &ns), TROVE_OK);
    CHECK(ns == UINT64_MAX);
    CHECK_EQ_INT(test_count_dir(strcat(strcpy(path, root), "/markers")), 1); /* no temp left */
    CHECK_EQ_INT(trove_capture_mark_used(root, "../x", 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_last_used(root, ".x", &ns), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_capture_last_used(root, "cap", NULL), TROVE_ERR_INVALID);
    snprintf(path, sizeof path, "%s/markers/cap.last-used", root);
    static const char *const bad[] = {"", "\n", "12", "12x\n", "-1\n", " 1\n", "1\n\n",
                                      "18446744073709551616\n",
                                      "123456789012345678901234567890123\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK((f = fopen(path, "w")) != NULL);
        if (!f)
            return;
        fputs(bad[i], f);
        fclose(f);
        CHECK_EQ_INT(trove_capture_last_used(root, "cap", &ns), TROVE_ERR_CORRUPT);
    }
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(sdir, sizeof sdir, "%s/store", root);
    RUN(test_write);
    RUN(test_marker);
    test_rm_rf(root);
    CHECK(mkdtemp(strcpy(root, "/tmp/trove_test_capture_XXXXXX")) != NULL);
    snprintf(sdir, sizeof sdir, "%s/store", root);
    RUN(test_replay);
    RUN(test_segment_format);
    RUN(test_model_segments);
    RUN(test_corpus_seeds);
    test_rm_rf(root);
    return test_done();
}
