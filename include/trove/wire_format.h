/*
 * trove/wire_format.h: the constants of trove's record and wire formats, and nothing else —
 * the 32-byte event record (its layout: trove/event.h; docs/formats/wire.md), the event
 * kinds, the names-frame entry types, the frame formats and the frame header. Header-only
 * and below every layer that needs it: the codec (trove/event.h, trove/wire.h include it)
 * and libtrove-client, which writes raw and names frames itself and so must agree with the
 * codec byte for byte. Values here are part of the formats: never renumber.
 */
#ifndef TROVE_WIRE_FORMAT_H
#define TROVE_WIRE_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the record ---------------------------------------------------------------------- */

struct trove_event {
    uint64_t start_ns;
    uint64_t dur_ns;
    uint32_t pid;
    uint32_t tid;
    uint8_t kind;
    uint8_t depth;
    uint8_t extra;
    uint8_t pad;
    uint32_t name_id;
};

#define TROVE_EVENT_SIZE 32
_Static_assert(sizeof(struct trove_event) == TROVE_EVENT_SIZE, "event record must be 32 bytes");

/* Default events per batch (the capture pass drains producers about every 5 ms). */
#define TROVE_BATCH_DEFAULT 2048

/* Event kinds. Values are part of the wire and bundle formats: never renumber. */
enum trove_kind {
    TROVE_KIND_ZONE = 0,          /* a timed zone: Chrome X, a matched B/E pair, or an async
                                     span (extra: enum trove_async) */
    TROVE_KIND_INSTANT = 1,       /* a zero-duration mark: Chrome I or i; extra = scope */
    TROVE_KIND_ASYNC_INSTANT = 2, /* Chrome n (async instant) */
    TROVE_KIND_FRAME = 3,         /* a frame: a zone the frame's work nests in (gen model,
                                     extra 0), or the time from one frame mark to the next
                                     (extra TROVE_FRAME_MARKS) */
    TROVE_KIND_LOCK = 4,          /* a lock wait zone (gen model) */
    TROVE_KIND_COUNTER = 5,       /* a counter sample: Chrome C; dur_ns holds the value */
    TROVE_KIND_COUNT_ = 6
};

/* Names-frame entry types (trove/event.h: struct trove_names says what each keys). */
/* extra of a frame (kind 3) timed by frame marks (libtrove-client's TROVE_FRAME_MARK): it
 * spans from one mark of its set (its name) to the next one the same thread made, at depth 0
 * on the set's own track in the process (a synthetic tid named "frames" or "frames: SET"). */
#define TROVE_FRAME_MARKS 255 /* no category of the generator's frames (0..7) */

enum trove_name_type {
    TROVE_NAME_EVENT = 1,
    TROVE_NAME_THREAD = 2,
    TROVE_NAME_PROCESS = 3,
    TROVE_NAME_PROCESS_SORT = 4,
    TROVE_NAME_THREAD_SORT = 5
};

/* ---- frames -------------------------------------------------------------------------- */

/* A frame's header: 'T' 'V' format version, then count, payload_len and raw_len, each u32
 * little-endian (docs/formats/wire.md). */
#define TROVE_WIRE_MAGIC0 'T'
#define TROVE_WIRE_MAGIC1 'V'
#define TROVE_WIRE_HEADER_SIZE 16
#define TROVE_WIRE_VERSION 1
#define TROVE_WIRE_NAMES_VERSION 2            /* a names frame that holds sort indexes */

enum trove_wire_format {
    TROVE_WIRE_RAW = 1,     /* 32-byte records back to back */
    TROVE_WIRE_PACKED = 2,  /* thread table, zigzag start deltas, varints */
    TROVE_WIRE_DEFLATE = 3, /* the packed payload through deflate level 1 */
    TROVE_WIRE_NAMES = 4,   /* names table entries */
    TROVE_WIRE_COLUMNAR = 5, /* each field a column of bit-packed, dictionary or run blocks */
    TROVE_WIRE_SAMPLES = 6,  /* sampled call stacks (trove/profile.h) */
    TROVE_WIRE_ATTRS = 7,    /* attributes of the events frame that follows (trove/attrs.h) */
    TROVE_WIRE_MODEL = 8,    /* events coded against their tracks' structure, streams via zstd */
    /* For trove_wire_encode only: a format 5 frame whose payload went through deflate
     * level 1 (its raw_len is the columnar payload's size). It decodes as format 5. */
    TROVE_WIRE_COLUMNAR_DEFLATE = 0x105
};

#ifdef __cplusplus
}
#endif
#endif
