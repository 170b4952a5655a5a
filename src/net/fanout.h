/*
 * fanout.h (internal): the live path's fan-out (docs/serve.md). The capture pass hands each
 * batch of events (and each names delta) to trove__fanout_publish, which encodes it once
 * per wire format some viewer uses and puts the same bytes — one reference-counted frame —
 * in the queue of every viewer of that format. A viewer's queue is bounded in bytes: when a
 * batch does not fit, the oldest unsent event frames are dropped (names frames never are,
 * since later events need their ids) and counted, and the next thing the viewer takes is a
 * gap report of what it lost. Publishing never waits for a viewer: a slow one loses its own
 * frames and no one else's.
 *
 * Thread-safe: one thread publishes (the capture pass), others add, remove and drain
 * viewers (the socket threads). A viewer's queue has its own lock, so draining one viewer
 * does not hold up the others.
 */
#ifndef TROVE_NET_FANOUT_H
#define TROVE_NET_FANOUT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "trove/event.h"
#include "trove/wire.h"

/* Bytes kept free before a frame's data, for a transport's own header. (The web thread
 * sends a WebSocket frame's header as a piece of its own beside the shared data.) */
#define TROVE__FRAME_HEADROOM 32

/* One encoded frame, shared by every queue it is in. */
struct trove__frame_buf {
    atomic_int refs;
    int names;       /* a names frame: never dropped */
    int attrs;       /* an attrs frame: queued and dropped with the events frame after it */
    uint32_t events; /* events in it (0 for names) */
    size_t len;
    uint8_t pre[TROVE__FRAME_HEADROOM]; /* free for the sender */
    uint8_t data[];  /* the whole wire frame, header and payload */
};

/* A frame holding a copy of data[0..len), with one reference. NULL when out of memory. */
struct trove__frame_buf *trove__frame_buf_new(const uint8_t *data, size_t len, int names,
                                              uint32_t events);
void trove__frame_buf_release(struct trove__frame_buf *fb);

struct trove__viewer;

/* What trove__viewer_next gives: a frame to send, or a gap report before it. */
struct trove__viewer_item {
    struct trove__frame_buf *frame; /* NULL when gap_batches > 0 (send the report first) */
    uint64_t gap_events, gap_batches;
};

struct trove__viewer_stats {
    uint64_t queued_bytes;       /* now */
    uint64_t sent_frames, sent_bytes, sent_events;
    uint64_t dropped_events, dropped_batches;
};

struct trove__fanout;

/* A fan-out whose viewer queues hold at most max_queue_bytes each. Errors: TROVE_ERR_NOMEM. */
int trove__fanout_new(size_t max_queue_bytes, struct trove__fanout **out);
/* Every viewer must be removed first. */
void trove__fanout_free(struct trove__fanout *fo);

/*
 * A viewer of wire format `format` (TROVE_WIRE_RAW, _PACKED or _DEFLATE). The names seen so
 * far are queued for it first (every id a later batch uses is then known to it). Errors:
 * TROVE_ERR_INVALID, TROVE_ERR_NOMEM.
 */
int trove__fanout_add(struct trove__fanout *fo, int format, struct trove__viewer **out);
/* As trove__fanout_add, with flags: TROVE__VIEW_NAMES, the names so far first (without
 * it, a viewer that gets them another way, before anything this queue holds);
 * TROVE__VIEW_ATTRS, each batch's attributes as an attrs frame before its events frame
 * (docs/formats/wire.md; a viewer without it is never sent one). */
#define TROVE__VIEW_NAMES 1
#define TROVE__VIEW_ATTRS 2
int trove__fanout_add_ex(struct trove__fanout *fo, int format, int flags,
                         struct trove__viewer **out);
/* Remove v and free its queue (the frames it did not take are released). */
void trove__fanout_remove(struct trove__fanout *fo, struct trove__viewer *v);

/*
 * Publish names (added: the entries new since the last call, may be NULL or empty) and then
 * events[0..n) (n <= TROVE_WIRE_MAX_EVENTS; may be 0) with their attributes (rows by index
 * in events; may be NULL): each encoded once per format in use (the attrs frame once for
 * every viewer that asked for them) and queued for every viewer. Errors: TROVE_ERR_NOMEM,
 * the encoder's (nothing queued).
 */
struct trove_attrs;
int trove__fanout_publish(struct trove__fanout *fo, const struct trove_names *added,
                          const struct trove_event *events, size_t n,
                          const struct trove_attrs *attrs);

/* The next thing for v: 1 and *it (the frame then belongs to the caller, who releases it
 * with trove__frame_buf_release after sending), or 0 when the queue is empty. */
int trove__viewer_next(struct trove__viewer *v, struct trove__viewer_item *it);
void trove__viewer_stats(struct trove__viewer *v, struct trove__viewer_stats *out);
/* Has v dropped frames it has not been told of (a gap report waits)? */
int trove__viewer_has_gap(struct trove__viewer *v);
int trove__viewer_format(const struct trove__viewer *v);

/* Merge every name published so far into out. Errors: TROVE_ERR_NOMEM. */
int trove__fanout_names(struct trove__fanout *fo, struct trove_names *out);

/* Encodings made so far, per format (index TROVE_WIRE_RAW .. TROVE_WIRE_NAMES; index 0: attrs
 * frames): each batch is encoded at most once per format, however many viewers take it. */
void trove__fanout_encodings(struct trove__fanout *fo, uint64_t out[5]);

#endif
