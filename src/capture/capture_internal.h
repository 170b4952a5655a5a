/*
 * capture_internal.h (internal): what the capture modules share — the header's fixed sizes
 * (capture_header.c), the volume's slot layout, how names are cut into frames and parts,
 * the steps of a write (capture.c, used by capture_live.c too), and replay's walk
 * (replay.c).
 * docs/formats/capture.md is the specification.
 */
#ifndef TROVE_CAPTURE_INTERNAL_H
#define TROVE_CAPTURE_INTERNAL_H

#include <stdint.h>

#include "common/sealed.h"
#include "trove/attrs.h"
#include "trove/capture.h"
#include "trove/wire.h"

/* The header is a sealed object (common/sealed.h): magic, version, ..., checksum. */
#define TROVE__CAPTURE_MAGIC "TROVCAP1"
#define TROVE__CAPTURE_VERSION 1u
#define TROVE__CAPTURE_VERSION2 2u /* flows, counters */
#define TROVE__CAPTURE_VERSION3 3u /* a profile (sampled call stacks) */
#define TROVE__CAPTURE_FIXED 88u /* the header before the segment entries */
#define TROVE__CAPTURE_ENTRY 40u /* one segment entry */
#define TROVE__CAPTURE_TRAILER TROVE__SEALED_TRAILER
#define TROVE__CAPTURE_FLAGS                                                                 \
    (TROVE_CAPTURE_FLAG_COLUMNAR | TROVE_CAPTURE_FLAG_NAMES_PARTS | TROVE_CAPTURE_FLAG_SUMMARY | \
     TROVE_CAPTURE_FLAG_ATTRS | TROVE_CAPTURE_FLAG_MODEL | TROVE_CAPTURE_FLAG_COLUMNAR_DEFLATE |  \
     TROVE_CAPTURE_FLAG_DEFLATE)

/* The volume's slots. */
#define TROVE__CAPTURE_SLOT_HEADER 0u
#define TROVE__CAPTURE_SLOT_NAMES 1u
#define TROVE__CAPTURE_SLOT_SEGMENT0 2u
/* v2 with flows: the flows object is the slot after the last segment, 2 + S; with names in K
 * parts (flag 0x2), parts 1 .. K-1 follow, 2 + S + F + j - 1 (F: 1 with flows, else 0); v3:
 * the profile objects follow them, 2 + S + F + (K - 1) + k. Readers and the one-shot write
 * compute them with these helpers; the live writer keeps the same layout by its counts of
 * each kind of slot (capture_live.c). */

/* The names parts of h: 1 for one names object (names_parts 0 or 1). */
static inline uint32_t trove__capture_parts(const struct trove_capture_header *h)
{
    return h->names_parts > 1 ? h->names_parts : 1;
}

/* Part j's length and entries (one names object: names_bytes and info.names). */
static inline uint64_t trove__capture_part_bytes(const struct trove_capture_header *h,
                                                 uint32_t j)
{
    return h->names_parts > 1 ? h->names_part[j].bytes : h->names_bytes;
}
static inline uint64_t trove__capture_part_entries(const struct trove_capture_header *h,
                                                   uint32_t j)
{
    return h->names_parts > 1 ? h->names_part[j].entries : h->info.names;
}

/* The slot of names part j (< the parts) of a capture of `segments` segments and flows > 0
 * flow rows: 1, then the slots after the segments and the flows. */
static inline uint64_t trove__capture_names_slot(uint64_t segments, uint64_t flows, uint32_t j)
{
    return j == 0 ? TROVE__CAPTURE_SLOT_NAMES
                  : TROVE__CAPTURE_SLOT_SEGMENT0 + segments + (flows > 0) + j - 1;
}

/* The slot of h's profile object 0: after the segments, the flows and the names parts. */
static inline uint64_t trove__capture_profile_slot(const struct trove_capture_header *h)
{
    return TROVE__CAPTURE_SLOT_SEGMENT0 + h->info.segments + (h->info.flows > 0) +
           trove__capture_parts(h) - 1;
}

/* The slot of h's attributes object of segment 0 (flag ATTRS): after the profile's objects;
 * segment k's is k after it, and the trace's after the last segment's. */
static inline uint64_t trove__capture_attrs_slot(const struct trove_capture_header *h)
{
    return trove__capture_profile_slot(h) + h->profile_objects;
}

/* The first summary slot of h: after the attributes objects. */
static inline uint64_t trove__capture_summary_slot(const struct trove_capture_header *h)
{
    return trove__capture_attrs_slot(h) +
           (h->info.flags & TROVE_CAPTURE_FLAG_ATTRS ? h->info.segments + 1 : 0);
}

/* A names frame holds at most this many entries, and entries are added to it while its
 * payload stays within NAMES_FRAME_BYTES (a single longer entry gets a frame of its own).
 * Names are cut into parts at frame boundaries: a part takes frames while it stays within
 * MAX_OBJECT. */
#define TROVE__CAPTURE_NAMES_FRAME_ENTRIES 65536u
#define TROVE__CAPTURE_NAMES_FRAME_BYTES ((uint64_t)1 << 20)

/* ---- writing (capture.c), shared by trove_capture_write and the live writer ----------- */

/* A capture volume being written: the volume, and what the puts into it stored. */
struct trove__fresh {
    struct trove_digest d;
    uint64_t len;
};

struct trove__capture_vol {
    struct trove_store *s;
    struct trove_volume *v;       /* open while the write is under way */
    const char *name;             /* the capture, for messages */
    uint32_t block;               /* the volume's object limit */
    struct trove__fresh *fresh;   /* objects this write stored (the store lacked them) */
    size_t nfresh, capfresh;
    uint64_t stored;              /* bytes of every object put */
};

/* trove__capture_open_for_write's slots: an existing volume keeps its slots, a new one gets
 * the header's and the names'. */
#define TROVE__CAPTURE_KEEP_SLOTS UINT64_MAX

/* The options' segment_bytes, frame_events and segment_format, defaults applied and checked
 * (TROVE_ERR_INVALID). opt may be NULL. */
int trove__capture_sizes(const struct trove_capture_options *opt, uint64_t *seg_bytes_out,
                         uint32_t *frame_events_out, int *format_out, struct trove_diag *diag);

/* Check that every event of events[0..n) has pad 0 (TROVE_ERR_INVALID, diag naming the
 * first that does not, at offset 32 * (first + i) + 27) and or into *counters whether one is
 * a counter (TROVE_KIND_COUNTER: the header is then version 2). */
int trove__capture_check_events(const struct trove_event *events, size_t n, uint64_t first,
                                int *counters, struct trove_diag *diag);

/* Open w->v (w->s, w->name set) for a capture write: an existing capture (or an object
 * volume no write ever filled), resized to `slots` (KEEP_SLOTS: as it is, checked to be
 * writable); else, with create, a new object volume of `slots` slots (*created is then 1;
 * over a damaged recipe it is 0, and the volume is dirty until its first commit);
 * without create TROVE_ERR_NOTFOUND. create 2 makes the new volume pending: nothing of it is
 * written before its first commit (a writer that dies first leaves no volume). A block volume, or an object volume that is not a
 * capture, is TROVE_ERR_EXISTS; a snapshot TROVE_ERR_READONLY. On error w->v may be open:
 * the caller closes it. */
int trove__capture_open_for_write(struct trove__capture_vol *w, uint64_t slots, int create,
                                  int *created, struct trove_diag *diag);

/* Put data[0..len) into slot of w->v, noting whether the store had the object before.
 * Errors: TROVE_ERR_LIMIT (over w->block), the volume's and the backend's. */
int trove__capture_put(struct trove__capture_vol *w, uint64_t slot, const uint8_t *data,
                       size_t len, struct trove_diag *diag);

/* Store data[0..len) as an object of w's store, its digest in *d, no slot pointing at it yet
 * (trove_volume_stage_object), counted as trove__capture_put counts. */
int trove__capture_stage(struct trove__capture_vol *w, const uint8_t *data, size_t len,
                         struct trove_digest *d, struct trove_diag *diag);

/* Distinct digests among w's fresh ones (sorts them). */
uint64_t trove__capture_count_fresh(struct trove__capture_vol *w, uint64_t *bytes);

/*
 * The names part of names (may be NULL) that starts at entry `from` (a part's first entry,
 * < the count; 0 for a table without entries) appended to out: whole names frames, cut as
 * the format says, while the part stays within MAX_OBJECT. *to_out gets the first entry not
 * in it (the count: it is the last part). A table without entries is one empty frame. Parts
 * cut from any part's start are the parts cut from entry 0, whatever came before, so a
 * writer may encode the last parts again without the first. Errors: the encoder's,
 * TROVE_ERR_LIMIT (one frame over an object); diag names the capture.
 */
int trove__capture_names_part(const char *name, const struct trove_names *names, size_t from,
                              struct trove_bytes *out, size_t *to_out, struct trove_diag *diag);

/* TROVE_ERR_LIMIT (diag naming the capture) when names of `parts` parts and `bytes` bytes
 * pass MAX_NAMES_PARTS or MAX_NAMES_BYTES. */
int trove__capture_names_limits(const char *name, uint32_t parts, uint64_t bytes,
                                struct trove_diag *diag);

/* Append one frame of events[0..n) (1 .. frame_events) in `format` (DEFLATE, COLUMNAR or
 * COLUMNAR_DEFLATE; a format 5 frame over packed's worst case, 16 + 44n bytes, is made
 * DEFLATE instead) to segment object out and count it into entry g, which starts zeroed for
 * the segment's first frame: events, frames, bytes (out->len), the times. Errors: the
 * encoder's, diag naming segment k. */
int trove__capture_segment_frame(struct trove_wire_encoder *enc, int format,
                                 const struct trove_event *events, size_t n,
                                 struct trove_bytes *out, struct trove_capture_segment *g,
                                 const char *name, uint64_t k, struct trove_diag *diag);

/* The header flags a segment format sets. */
uint32_t trove__capture_format_flags(int format);
/* The header flags after events written in `format` to a capture whose flags were `had`
 * (had_events: it held events before, in the formats `had` says). */
uint32_t trove__capture_append_flags(uint32_t had, int had_events, int format);

/* Complete header h — whose info.events, info.segments, info.names, info.flows,
 * segment_bytes, frame_events, names_bytes, names_parts, names_part, flows_bytes and
 * seg[0..segments) the caller set — with raw_bytes, first_ns, end_ns and the version (2 with counters or flows, else 1),
 * encode it into buf (replacing its content) and put it into slot 0 of w. */
int trove__capture_header_put(struct trove__capture_vol *w, struct trove_capture_header *h,
                              int counters, struct trove_bytes *buf, struct trove_diag *diag);

/* Parse a last-used marker's bytes (marker.c): 1..20 decimal digits and a newline, at most
 * 32 bytes, no overflow. TROVE_OK, or TROVE_ERR_CORRUPT (*unix_ns_out is then 0). */
int trove__capture_marker_parse(const uint8_t *buf, size_t len, uint64_t *unix_ns_out);

/* Open capture `name` and read its header. The volume stays open in *v_out. */
int trove__capture_open_read(struct trove_store *s, const char *name, struct trove_volume **v_out,
                             struct trove_capture_header *h, struct trove_diag *diag);
/* rc with diag's message prefixed by "capture NAME: WHAT: ". */
int trove__capture_prefix_diag(struct trove_diag *diag, int rc, const char *name,
                               const char *what);
/* Read and decode the header of capture volume v (named `name`, for messages). Errors:
 * TROVE_ERR_INVALID (not an object volume, or no header in slot 0), the volume's errors,
 * the header decoder's; diag names the capture. */
int trove__capture_read_header(struct trove_volume *v, const char *name,
                               struct trove_capture_header *h, struct trove_diag *diag);

/*
 * Replay's walk over one object at a time, apart from the stream so that the fuzz target
 * can drive it: batches go to emit(ctx, batch), which takes b->owned over whatever it
 * returns (as trove_stream_emit does). Not thread-safe; one walk per replay.
 */
typedef int (*trove__capture_emit_fn)(void *ctx, const struct trove_stream_batch *b);

struct trove__capture_walk {
    const char *name;                    /* the capture, for messages */
    const struct trove_capture_header *h;
    uint64_t from_ns, to_ns;             /* to_ns UINT64_MAX: no end */
    uint64_t from_event;                 /* the first event index sent (0: all) */
    uint64_t *seg_first;                 /* with from_event: each segment's first index */
    int wire;                            /* RAW, PACKED or DEFLATE */
    uint32_t frame_events;               /* events per re-encoded frame (not 0) */
    struct trove_wire_decoder *dec;
    struct trove_wire_encoder *enc;
    struct trove_event *ev;              /* TROVE_WIRE_MAX_EVENTS: one stored frame */
    struct trove_event *out;             /* frame_events: the frame being filled */
    struct trove_bytes pend;             /* re-encoded frames not yet emitted */
    uint64_t pend_events;
    const struct trove_attrs *attrs;     /* rows by capture index (NULL: no attrs frames) */
    uint64_t *out_index;                 /* with attrs: each of out's capture index */
    struct trove_attrs part;             /* with attrs: one frame's rows */
};

/* Set w up for header h and the options (checked: TROVE_ERR_INVALID), or TROVE_ERR_NOMEM. */
int trove__capture_walk_init(struct trove__capture_walk *w, const char *name,
                             const struct trove_capture_header *h,
                             const struct trove_capture_replay_options *opt,
                             struct trove_diag *diag);
void trove__capture_walk_free(struct trove__capture_walk *w);

/* Does segment k overlap the range (one of its events may start in it, at or past
 * from_event)? */
int trove__capture_segment_overlaps(const struct trove__capture_walk *w, uint64_t k);

/* Emit names part j (< the header's parts; 0 for one names object) data[0..len) (d: its
 * digest, for messages) frame by frame, checked against the header: its length, that every
 * frame is a names frame that decodes, and its entries. */
int trove__capture_walk_names(struct trove__capture_walk *w, uint32_t j,
                              const struct trove_digest *d, const uint8_t *data, size_t len,
                              trove__capture_emit_fn emit, void *ctx, struct trove_diag *diag);

/* Emit the events of segment k (its object data[0..len), digest d) that start in the range,
 * as frames of w->wire. Errors: TROVE_ERR_CORRUPT and the wire decoder's (diag names the
 * segment and its digest), emit's. */
int trove__capture_walk_segment(struct trove__capture_walk *w, uint64_t k,
                                const struct trove_digest *d, const uint8_t *data, size_t len,
                                trove__capture_emit_fn emit, void *ctx, struct trove_diag *diag);

#endif
