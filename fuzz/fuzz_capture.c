/*
 * fuzz_capture.c: libFuzzer target for what a capture reads from the store — the header
 * decoder (src/capture/capture_header.c) and replay's walk over a names object, a names
 * part or a segment object (src/capture/replay.c).
 *
 * Every input is first decoded as a header; one that decodes must re-encode to the same
 * bytes (a round-trip oracle). An input that starts with 'S', 'N' or 'P' is also an object
 * for the walk, after a parameter block:
 *
 *   'S' wire u8 (bit 7: the header's columnar flag), stored frame_events u16, replay
 *       frame_events u16, range u8, events u32, frames u16, then the segment object
 *   'N' names u16, then the names object
 *   'P' part u8, parts u8, entries u32, then names part `part % parts` of a capture of
 *       2 + parts % 31 parts (its entry in the part table: the object's length and entries)
 *
 * (integers little-endian). The segment's entry claims those counts and the object's
 * length, with times 0 .. 2^64 - 1; range 0 replays everything (so a DEFLATE replay at the
 * stored frame size takes the fast path), r in 1 .. 63 the window [0, 2^r), and r >= 64
 * the window [2^(r % 64), 2^(r % 64 + 1)). Every frame the walk
 * re-encodes must decode again to at most the asked-for number of events.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/capture_internal.h"
#include "common/endian.h"
#include "trove/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sink {
    struct trove_wire_decoder *dec;
    struct trove_event *ev;
    uint32_t max_events;
};

static int emit(void *ctx, const struct trove_stream_batch *b)
{
    struct sink *k = ctx;
    struct trove_wire_frame fr;
    if (b->owned) { /* re-encoded: whole frames that decode, within the frame size */
        uint64_t events = 0;
        for (size_t at = 0; at < b->len; at += fr.frame_len) {
            if (trove_wire_decode(k->dec, (const uint8_t *)b->data + at, b->len - at, k->ev,
                                  TROVE_WIRE_MAX_EVENTS, NULL, &fr, NULL) != TROVE_OK ||
                fr.n_events == 0 || fr.n_events > k->max_events)
                abort();
            events += fr.n_events;
        }
        if (events != b->events)
            abort();
        free(b->owned);
    }
    return TROVE_OK;
}

static void walk(const uint8_t *data, size_t size)
{
    static const struct trove_digest zero;
    struct trove_capture_segment seg;
    struct trove_capture_header h;
    struct trove_capture_replay_options o;
    struct trove__capture_walk w;
    struct sink k;
    const uint8_t *obj;
    size_t len;
    uint32_t part = 0;

    memset(&h, 0, sizeof h);
    memset(&seg, 0, sizeof seg);
    memset(&o, 0, sizeof o);
    memset(&k, 0, sizeof k);
    h.seg = &seg;
    h.info.segments = 1;
    if (data[0] == 'S') {
        if (size < 13)
            return;
        o.wire = 1 + (data[1] & 0x7f) % 3;
        h.info.flags = data[1] & 0x80 ? TROVE_CAPTURE_FLAG_COLUMNAR : 0;
        h.frame_events = 1 + trove__get_le16(data + 2);
        o.frame_events = trove__get_le16(data + 4);
        o.from_ns = data[6] >= 64 ? (uint64_t)1 << (data[6] % 64) : 0;
        o.to_ns = data[6] == 0 ? UINT64_MAX : o.from_ns + ((uint64_t)1 << (data[6] % 64));
        seg.events = trove__get_le32(data + 7);
        seg.frames = trove__get_le16(data + 11);
        obj = data + 13;
        len = size - 13;
        seg.max_start_ns = seg.max_end_ns = UINT64_MAX;
        seg.bytes = (uint32_t)len;
    } else if (data[0] == 'N') {
        if (size < 3)
            return;
        o.wire = TROVE_WIRE_DEFLATE;
        o.to_ns = UINT64_MAX;
        h.frame_events = 1;
        h.info.names = trove__get_le16(data + 1);
        obj = data + 3;
        len = size - 3;
        h.names_bytes = len;
    } else {
        if (size < 7 || size - 7 > TROVE_CAPTURE_MAX_OBJECT)
            return;
        o.wire = TROVE_WIRE_DEFLATE;
        o.to_ns = UINT64_MAX;
        h.frame_events = 1;
        h.names_parts = 2 + data[2] % (TROVE_CAPTURE_MAX_NAMES_PARTS - 1);
        part = data[1] % h.names_parts;
        h.names_part[part].entries = trove__get_le32(data + 3);
        obj = data + 7;
        len = size - 7;
        h.names_part[part].bytes = (uint32_t)len;
    }
    if (trove__capture_walk_init(&w, "fuzz", &h, &o, NULL) != TROVE_OK)
        return;
    k.max_events = w.frame_events;
    if (trove_wire_decoder_new(&k.dec) == TROVE_OK &&
        (k.ev = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *k.ev)) != NULL) {
        if (data[0] == 'S')
            (void)trove__capture_walk_segment(&w, 0, &zero, obj, len, emit, &k, NULL);
        else
            (void)trove__capture_walk_names(&w, part, &zero, obj, len, emit, &k, NULL);
    }
    free(k.ev);
    trove_wire_decoder_free(k.dec);
    trove__capture_walk_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_capture_header h;
    struct trove_bytes again = {0};

    if (trove_capture_header_decode(data, size, &h, NULL) == TROVE_OK) {
        if (trove_capture_header_encode(&h, &again) != TROVE_OK || again.len != size ||
            memcmp(again.ptr, data, size) != 0)
            abort();
        trove_capture_header_free(&h);
        trove_bytes_free(&again);
    }
    if (size > 0 && (data[0] == 'S' || data[0] == 'N' || data[0] == 'P'))
        walk(data, size);
    return 0;
}
