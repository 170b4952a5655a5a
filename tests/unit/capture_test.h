/*
 * capture_test.h: what the tests of captures in a store share (test_capture_store.c,
 * test_capture_objects.c): a temp store, generated captures, written with chosen segment
 * sizes and formats, their layout read back by hand against docs/formats/capture.md, and
 * replays through a stream that check every batch against the input. Each test binary is
 * one file, so the helpers are static inline here, and the state (the temp directory, the
 * replays' backend and send mode) is each binary's own.
 */
#ifndef TROVE_CAPTURE_TEST_H
#define TROVE_CAPTURE_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/capture_internal.h"
#include "capture/summary_internal.h"
#include "common/endian.h"
#include "testutil.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/gen.h"
#include "trove/stream.h"
#include "trove/testing.h"
#include "trove/wire.h"

static char root[] = "/tmp/trove_test_capture_XXXXXX";
static char sdir[512];

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

static inline int count_object(void *ctx, const struct trove_digest *d)
{
    (void)d;
    (*(uint64_t *)ctx)++;
    return 0;
}

static inline uint64_t store_objects(struct trove_store *s)
{
    uint64_t n = 0;
    CHECK_EQ_INT(trove_backend_list(trove_store_backend(s), count_object, &n), TROVE_OK);
    return n;
}

/* A generated capture of n events (sorted by start, as gen makes them). */
static inline void gen_capture(uint64_t n, uint64_t seed, struct trove_events *ev,
                               struct trove_names **names)
{
    struct trove_gen_options g;
    trove_gen_defaults(&g);
    g.events = n;
    g.seed = seed;
    g.names = 500;
    CHECK_EQ_INT(trove_names_new(names), TROVE_OK);
    CHECK_EQ_INT(trove_gen(&g, ev, *names), TROVE_OK);
    CHECK_EQ_INT(ev->len, n);
}

static inline void progress(void *ctx, uint64_t done, uint64_t total)
{
    uint64_t *p = ctx;
    CHECK(done == p[0] + 1 && done <= total);
    p[0] = done;
    p[1] = total;
}

static int write_format; /* write_capture's segment format (0: deflate) */
static int write_no_summaries; /* write_capture: no summary objects */

static inline int write_capture(struct trove_store *s, const char *name,
                                const struct trove_events *ev, const struct trove_names *names,
                                uint64_t seg_bytes, uint32_t fe, struct trove_capture_info *info)
{
    struct trove_capture_options o;
    struct trove_diag diag = {0};
    uint64_t prog[2] = {0, 0};
    int rc;
    memset(&o, 0, sizeof o);
    o.segment_bytes = seg_bytes;
    o.frame_events = fe;
    o.segment_format = write_format;
    o.no_summaries = write_no_summaries;
    o.progress = progress;
    o.progress_ctx = prog;
    rc = trove_capture_write(s, name, ev->ev, ev->len, names, &o, info, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "write %s: %s\n", name, diag.msg);
    else
        CHECK(prog[0] == info->segments && (info->segments == 0 || prog[1] == info->segments));
    return rc;
}

static inline int same_info(const struct trove_capture_info *a, const struct trove_capture_info *b)
{
    return a->events == b->events && a->segments == b->segments && a->first_ns == b->first_ns &&
           a->end_ns == b->end_ns && a->names == b->names && a->raw_bytes == b->raw_bytes &&
           a->stored_bytes == b->stored_bytes;
}

/* The volume's objects, read back by hand, are what docs/formats/capture.md says. */
static inline void check_layout(struct trove_store *s, const char *name,
                                const struct trove_events *ev, const struct trove_names *names,
                                uint64_t per, uint32_t fe)
{
    struct trove_volume *v = NULL;
    struct trove_wire_decoder *dec = NULL;
    struct trove_names *back = NULL;
    struct trove_bytes obj = {0};
    struct trove_event *buf = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *buf);
    struct trove_capture_header h;
    uint64_t segs = (ev->len + per - 1) / per;

    CHECK(buf != NULL);
    CHECK_EQ_INT(trove_volume_open(s, name, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_wire_decoder_new(&dec), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
    if (!v || !buf)
        goto out;
    CHECK(trove_volume_is_objects(v));
    CHECK_EQ_INT(trove_volume_get_object(v, 0, &obj), TROVE_OK);
    CHECK_EQ_INT(trove_capture_header_decode(obj.ptr, obj.len, &h, NULL), TROVE_OK);
    CHECK_EQ_INT(h.info.segments, segs);
    CHECK_EQ_INT(h.frame_events, fe);
    CHECK_EQ_INT(h.segment_bytes, 32 * per);
    /* the names: slot 1, and with parts the slots after the segments (and the flows) */
    for (uint32_t j = 0, total = 0; j < trove__capture_parts(&h); j++) {
        uint64_t slot = j == 0 ? 1 : 2 + segs + (h.info.flows > 0) + j - 1, entries = 0;
        CHECK_EQ_INT(trove_volume_get_object(v, slot, &obj), TROVE_OK);
        CHECK_EQ_INT(obj.len, trove__capture_part_bytes(&h, j));
        CHECK(obj.len <= TROVE_CAPTURE_MAX_OBJECT);
        for (size_t at = 0; at < obj.len;) {
            struct trove_wire_frame fr;
            struct trove_wire_header wh;
            if (trove_wire_parse_header(obj.ptr + at, obj.len - at, &wh, NULL) != TROVE_OK ||
                trove_wire_decode(dec, obj.ptr + at, obj.len - at, buf, 0, back, &fr, NULL) !=
                    TROVE_OK) {
                CHECK(0);
                break;
            }
            CHECK_EQ_INT(fr.format, TROVE_WIRE_NAMES);
            entries += wh.count;
            at += fr.frame_len;
        }
        CHECK_EQ_INT(entries, trove__capture_part_entries(&h, j));
        total += (uint32_t)entries;
        CHECK_EQ_INT(trove_names_count(back), total); /* a part's entries follow the last's */
    }
    CHECK(trove_names_equal(names, back));
    for (uint64_t k = 0; k < segs; k++) {
        size_t first = (size_t)(k * per), at = 0, got = 0, frames = 0;
        CHECK_EQ_INT(trove_volume_get_object(v, 2 + k, &obj), TROVE_OK);
        CHECK_EQ_INT(obj.len, h.seg[k].bytes);
        while (at < obj.len) {
            struct trove_wire_frame fr;
            if (trove_wire_decode(dec, obj.ptr + at, obj.len - at, buf, TROVE_WIRE_MAX_EVENTS,
                                  NULL, &fr, NULL) != TROVE_OK) {
                CHECK(0);
                break;
            }
            CHECK_EQ_INT(fr.format, TROVE_WIRE_DEFLATE);
            CHECK(fr.n_events >= 1 && fr.n_events <= fe);
            CHECK(first + got + fr.n_events <= ev->len &&
                  memcmp(buf, ev->ev + first + got, fr.n_events * sizeof *buf) == 0);
            got += fr.n_events;
            at += fr.frame_len;
            frames++;
        }
        CHECK_EQ_INT(got, h.seg[k].events);
        CHECK_EQ_INT(frames, h.seg[k].frames);
        CHECK_EQ_INT(got, k + 1 < segs ? per : ev->len - first);
    }
    { /* the summaries after the profile (each a node of the level and events its place
       * says, their bytes the header's), and nothing after the last object it counts */
        struct trove_volume_info vi;
        uint64_t z = h.info.flags & TROVE_CAPTURE_FLAG_SUMMARY ? trove__summary_slots(segs) : 0;
        uint64_t first = trove__capture_summary_slot(&h), sealed = trove__summary_sealed(&h);
        uint64_t count[TROVE__SUMMARY_MAX_LEVELS], bytes = 0;
        unsigned levels = trove__summary_levels(segs, count);
        CHECK_EQ_INT(trove_volume_info(v, &vi), TROVE_OK);
        CHECK_EQ_INT(vi.slots, trove__capture_profile_slot(&h) + h.profile_objects + z);
        for (unsigned l = 0; z && l < levels; l++)
            for (uint64_t i = 0; i < count[l]; i++) {
                struct trove_summary node;
                uint64_t span = 1, lo, hi;
                for (unsigned m = 0; m < l; m++)
                    span *= TROVE_SUMMARY_FANOUT;
                lo = i * span * per;
                hi = (i + 1) * span * per < ev->len ? (i + 1) * span * per : ev->len;
                obj.len = 0;
                CHECK_EQ_INT(trove_volume_get_object(
                                 v, first + trove__summary_slot_of(segs, sealed, l, i), &obj),
                             TROVE_OK);
                bytes += obj.len;
                CHECK_EQ_INT(trove_summary_decode(obj.ptr, obj.len, &node, NULL), TROVE_OK);
                CHECK(node.level == l && node.events == hi - lo);
                trove_summary_free(&node);
            }
        CHECK_EQ_INT(bytes, h.summary_bytes);
    }
    trove_capture_header_free(&h);
out:
    trove_volume_close(v);
    trove_bytes_free(&obj);
    trove_names_free(back);
    trove_wire_decoder_free(dec);
    free(buf);
}

/* ---- replay ---------------------------------------------------------------------------- */

/* What a replay's sink saw: every batch decoded, checked to be one whole frame. */
struct collect {
    struct trove_wire_decoder *dec;
    struct trove_event *buf;
    struct trove_events ev;
    struct trove_names *names;
    int wire;
    uint32_t max_frame;
    uint64_t batches, name_batches, bad, last_item;
    struct trove_bytes item_bytes[64]; /* the bytes of items 0..63, for the fast path */
    /* attrs frames (replay_attrs): each one's rows, by the index among the events collected
     * of the events frame after it, in the same batch */
    struct trove_attrs held, rows;
    int has_held;
};

/* A batch is whole frames: one names frame, or event frames of one format holding at most
 * TROVE_CAPTURE_BATCH_EVENTS events (more only as a single frame). */
static inline int collect_send(void *ctx, const struct trove_stream_batch *b)
{
    struct collect *c = ctx;
    struct trove_wire_frame fr;
    uint64_t events = 0, frames = 0;
    int names = 0;

    if (b->item < c->last_item || b->len == 0) {
        c->bad++;
        return 0;
    }
    c->last_item = b->item;
    if (b->item < 64)
        trove_bytes_append(&c->item_bytes[b->item], b->data, b->len);
    c->batches++;
    for (size_t at = 0; at < b->len; at += fr.frame_len, frames++) {
        const uint8_t *p = (const uint8_t *)b->data + at;
        if (b->len - at > 2 && p[2] == TROVE_WIRE_ATTRS) {
            struct trove_wire_header wh;
            trove_attrs_free(&c->held);
            if (c->has_held || trove_wire_parse_header(p, b->len - at, &wh, NULL) != TROVE_OK ||
                trove_attrs_wire_decode(p, TROVE_WIRE_HEADER_SIZE + (size_t)wh.payload_len,
                                        &c->held, NULL) != TROVE_OK) {
                c->bad++; /* two in a row, or one that does not decode */
                return 0;
            }
            c->has_held = 1;
            fr.frame_len = TROVE_WIRE_HEADER_SIZE + (size_t)wh.payload_len;
            frames--;
            continue;
        }
        if (trove_wire_decode(c->dec, (const uint8_t *)b->data + at, b->len - at, c->buf,
                              TROVE_WIRE_MAX_EVENTS, c->names, &fr, NULL) != TROVE_OK) {
            c->bad++;
            return 0;
        }
        if (fr.format == TROVE_WIRE_NAMES) {
            names = 1;
            if (at != 0 || fr.frame_len != b->len || b->events != 0 || c->ev.len > 0)
                c->bad++; /* names come first, one frame a batch */
            continue;
        }
        if (fr.format != c->wire || fr.n_events == 0 || fr.n_events > c->max_frame)
            c->bad++;
        if (c->has_held && (c->held.rows[c->held.n - 1].event >= fr.n_events ||
                            trove_attrs_append(&c->rows, &c->held, 0, c->held.n, c->ev.len,
                                               0) != TROVE_OK))
            c->bad++;
        c->has_held = 0;
        events += fr.n_events;
        for (size_t i = 0; i < fr.n_events; i++)
            trove_events_push(&c->ev, &c->buf[i]);
    }
    if (names) {
        c->name_batches++;
        return 0;
    }
    if (events != b->events || (frames > 1 && events > TROVE_CAPTURE_BATCH_EVENTS) ||
        c->has_held) /* an attrs frame ends the batch */
        c->bad++;
    return 0;
}

static inline void collect_init(struct collect *c, int wire, uint32_t max_frame)
{
    memset(c, 0, sizeof *c);
    CHECK_EQ_INT(trove_wire_decoder_new(&c->dec), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&c->names), TROVE_OK);
    c->buf = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *c->buf);
    CHECK(c->buf != NULL);
    c->wire = wire;
    c->max_frame = max_frame;
}

static inline void collect_free(struct collect *c)
{
    trove_wire_decoder_free(c->dec);
    trove_names_free(c->names);
    free(c->buf);
    trove_events_free(&c->ev);
    for (int i = 0; i < 64; i++)
        trove_bytes_free(&c->item_bytes[i]);
    trove_attrs_free(&c->held);
    trove_attrs_free(&c->rows);
}

/* The stream replays run through: the store's backend unless replay_be is set, a
 * rendezvous sender unless replay_mode is set. */
static struct trove_backend *replay_be;
static int replay_mode = TROVE_STREAM_SEND_RENDEZVOUS;
/* The replays' from_event (expect_range wants only the events from that index on). */
static uint64_t replay_from_event;
/* The replays' attribute rows (NULL: none asked). */
static const struct trove_attrs *replay_attrs;

static inline int replay(struct trove_store *s, const char *name, uint64_t from, uint64_t to,
                         int wire, uint32_t fe, struct collect *c, struct trove_stream_stats *stats,
                         struct trove_diag *diag)
{
    struct trove_capture_replay_options ro;
    struct trove_stream_options so;
    struct trove_stream *st = NULL;
    struct trove_stream_sink sink;
    int rc;

    trove_stream_options_default(&so);
    so.retries = 1;
    so.backoff_ms = 1;
    so.send_mode = replay_mode;
    so.depth = 8;
    so.budget = 256 << 10; /* a few segments at a time */
    CHECK_EQ_INT(trove_stream_new(replay_be ? replay_be : trove_store_backend(s), &so, &st),
                 TROVE_OK);
    memset(&ro, 0, sizeof ro);
    ro.from_ns = from;
    ro.to_ns = to;
    ro.wire = wire;
    ro.frame_events = fe;
    ro.from_event = replay_from_event;
    ro.attrs = replay_attrs;
    memset(&sink, 0, sizeof sink);
    sink.send = collect_send;
    sink.ctx = c;
    rc = trove_capture_replay(s, name, st, &ro, &sink, stats, diag);
    trove_stream_free(st);
    return rc;
}

/* Replay [from, to) and require exactly the input's events that start in it, in order. */
static inline void expect_range(struct trove_store *s, const char *name,
                                const struct trove_events *ev, const struct trove_names *names,
                                uint64_t from, uint64_t to, int wire, uint32_t fe,
                                uint32_t stored_fe)
{
    struct collect c;
    struct trove_stream_stats stats;
    struct trove_diag diag = {0};
    size_t want = 0, i, j = 0;
    int rc;

    collect_init(&c, wire, fe ? fe : stored_fe);
    rc = replay(s, name, from, to, wire, fe, &c, &stats, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "replay %s: %s\n", name, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK_EQ_INT(c.bad, 0);
    CHECK(c.name_batches >= 1);
    CHECK(trove_names_equal(names, c.names));
    for (i = 0; i < ev->len; i++) {
        if (ev->ev[i].start_ns < from || (to != UINT64_MAX && ev->ev[i].start_ns >= to) ||
            i < replay_from_event)
            continue;
        want++;
        if (j < c.ev.len && memcmp(&ev->ev[i], &c.ev.ev[j], sizeof ev->ev[i]) == 0)
            j++;
    }
    CHECK_EQ_INT(c.ev.len, want);
    CHECK_EQ_INT(j, want);
    CHECK_EQ_INT(stats.events, want);
    CHECK_EQ_INT(stats.batches, c.batches);
    collect_free(&c);
}

/* Replace object d's bytes (the backend does not rehash: a damaged object). */
static inline void damage(struct trove_store *s, const struct trove_digest *d, const void *bytes,
                          size_t len)
{
    struct trove_backend *be = trove_store_backend(s);
    CHECK_EQ_INT(trove_backend_delete(be, d), TROVE_OK);
    if (len)
        CHECK_EQ_INT(trove_backend_put(be, d, bytes, len, NULL), TROVE_OK);
}

static inline void slot_digest(struct trove_store *s, const char *name, uint64_t slot,
                               struct trove_digest *d)
{
    struct trove_volume *v = NULL;
    CHECK_EQ_INT(trove_volume_open(s, name, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_slot_digests(v, slot, 1, d), TROVE_OK);
    trove_volume_close(v);
}

static inline void expect_replay_error(struct trove_store *s, const char *name, int wire, int want,
                                       const char *needle1, const char *needle2, const char *what)
{
    struct collect c;
    struct trove_diag diag = {0};
    int rc;
    collect_init(&c, wire, TROVE_WIRE_MAX_EVENTS);
    rc = replay(s, name, 0, UINT64_MAX, wire, 0, &c, NULL, &diag);
    if (rc != want || (needle1 && !strstr(diag.msg, needle1)) ||
        (needle2 && !strstr(diag.msg, needle2)))
        fprintf(stderr, "%s: got %d (%s)\n", what, rc, diag.msg);
    CHECK_EQ_INT(rc, want);
    CHECK(!needle1 || strstr(diag.msg, needle1));
    CHECK(!needle2 || strstr(diag.msg, needle2));
    collect_free(&c);
}

/* The header of capture `name`, decoded (free it). */
static inline int read_header(struct trove_store *s, const char *name,
                              struct trove_capture_header *h)
{
    struct trove_volume *v = NULL;
    struct trove_bytes obj = {0};
    int rc = trove_volume_open(s, name, &v, NULL);
    memset(h, 0, sizeof *h);
    if (rc == TROVE_OK)
        rc = trove_volume_get_object(v, 0, &obj);
    if (rc == TROVE_OK)
        rc = trove_capture_header_decode(obj.ptr, obj.len, h, NULL);
    trove_bytes_free(&obj);
    trove_volume_close(v);
    return rc;
}

#endif
