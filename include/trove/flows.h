/*
 * trove/flows.h: flows, the arrows a trace draws between events — Chrome's flow events
 * (s, t, f, and bind_id on a complete event), Perfetto's flow ids — kept beside a capture's
 * events as rows of their own, and the flows object that holds them in a capture.
 *
 * A flow row is a point: a time on a thread (pid, tid), the flow it belongs to (id) and
 * whether it starts, continues or ends it. The zone it is drawn from or to is the one that
 * encloses its time on that thread (for an end without TROVE_FLOW_ENCLOSING: the next zone
 * to start there), as the Trace Event Format binds them; rows keep the point, so a viewer
 * binds it as it likes. Rows of one id, in time order, are one chain of arrows.
 *
 *   struct trove_flow, 32 bytes
 *   offset  0: ts_ns    u64   the point, on the capture's clock
 *   offset  8: id       u64   the flow (1 ..); the same id in every row of one flow
 *   offset 16: pid      u32
 *   offset 20: tid      u32
 *   offset 24: name_id  u32   key into the names table (TROVE_NAME_EVENT)
 *   offset 28: phase    u8    enum trove_flow_phase
 *   offset 29: flags    u8    TROVE_FLOW_ENCLOSING or 0
 *   offset 30: pad      u8[2] always 0
 *
 * The flows object (trove_flows_encode_events, docs/formats/flows.md) is how a capture stores them;
 * a bundle stores them as its flows table (trove/tables.h). Not thread-safe; one writer or
 * many readers.
 */
#ifndef TROVE_FLOWS_H
#define TROVE_FLOWS_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Values are part of the formats: never renumber. */
enum trove_flow_phase {
    TROVE_FLOW_START = 0, /* Chrome s, or bind_id with flow_out */
    TROVE_FLOW_STEP = 1,  /* Chrome t, or bind_id with flow_in and flow_out */
    TROVE_FLOW_END = 2    /* Chrome f, or bind_id with flow_in */
};

/* flags: the row binds to the zone that encloses its time (Chrome: every s and t, and an f
 * with "bp":"e"); without it an end binds to the next zone to start on its thread. */
#define TROVE_FLOW_ENCLOSING 1u

struct trove_flow {
    uint64_t ts_ns;
    uint64_t id;
    uint32_t pid;
    uint32_t tid;
    uint32_t name_id;
    uint8_t phase;
    uint8_t flags;
    uint8_t pad[2];
};

_Static_assert(sizeof(struct trove_flow) == 32, "a flow row is 32 bytes");

/* Rows a capture may hold (as for events: 2^28). */
#define TROVE_FLOWS_MAX ((uint64_t)1 << 28)

/* A growable array of flow rows. A zeroed struct is empty; free with trove_flows_free. */
struct trove_flows {
    struct trove_flow *f;
    size_t len;
    size_t cap;
};

/* Append one row. TROVE_OK or TROVE_ERR_NOMEM (the array is then unchanged). */
int trove_flows_push(struct trove_flows *a, const struct trove_flow *f);
/* Make room for extra more rows past len (one allocation). TROVE_OK or TROVE_ERR_NOMEM. */
int trove_flows_reserve(struct trove_flows *a, size_t extra);
void trove_flows_free(struct trove_flows *a);

/* Is the row well-formed: phase a known one, flags 0 or TROVE_FLOW_ENCLOSING, pad zero,
 * id not 0? Returns TROVE_OK or TROVE_ERR_INVALID. */
int trove_flow_check(const struct trove_flow *f);

/*
 * The one name of each flow: names_out[i] (n entries, the caller's) gets the name_id of the
 * first row of rows[i]'s flow — of the rows with its id, the one with the smallest ts, then
 * the smallest index. A writer gives every row of a flow that name, since a trace whose
 * flow points differ in name is several flows to Perfetto's importer (it keys Chrome's s, t
 * and f by name as well as id). Errors: TROVE_ERR_INVALID (NULL arguments with n > 0),
 * TROVE_ERR_NOMEM (names_out is then untouched).
 */
int trove_flows_one_name(const struct trove_flow *rows, size_t n, uint32_t *names_out);

/* A short lowercase name of a phase: "start", "step", "end", or "other". */
const char *trove_flow_phase_name(uint8_t phase);

/*
 * The flows object, version 1 (what a capture wrote before version 2, below; still written
 * here for a caller without the events): rows[0..n) as one sealed object (magic "TROVFLW1",
 * version 1, the row
 * count, the rows as varints, DEFLATE-compressed, and an xxh3-64 checksum), appended to out.
 * The same rows give the same bytes. Errors: TROVE_ERR_INVALID (a row that fails
 * trove_flow_check, NULL rows with n > 0), TROVE_ERR_LIMIT (n over TROVE_FLOWS_MAX),
 * TROVE_ERR_NOMEM. out is unchanged on error.
 */
int trove_flows_encode(const struct trove_flow *rows, size_t n, struct trove_bytes *out);

/*
 * Decode a flows object of version 1 in buf[0..len) (a version 2 object, which needs the events
 * it was coded against, is TROVE_ERR_INVALID: trove_flows_decode_events reads both) and append
 * its rows to out. Every length is checked
 * before it is used: the row count against TROVE_FLOWS_MAX, the packed and unpacked sizes
 * against the input and the row count, the checksum before anything is inflated, and every
 * row as it is read. Errors, with the byte offset in diag: TROVE_ERR_TRUNCATED,
 * TROVE_ERR_MAGIC, TROVE_ERR_VERSION, TROVE_ERR_CHECKSUM, TROVE_ERR_LIMIT, TROVE_ERR_INFLATE,
 * TROVE_ERR_CORRUPT, TROVE_ERR_VARINT, TROVE_ERR_NOMEM. out is unchanged on error.
 */
int trove_flows_decode(const uint8_t *buf, size_t len, struct trove_flows *out,
                       struct trove_diag *diag);

struct trove_event;

/*
 * The events a flows object of version 2 is coded against: a capture's, in its order.
 * get fills *out with event `index` (< count) and returns TROVE_OK, or an error (with diag)
 * that the decoder passes on. trove_flows_events_of sets one up over an array in memory.
 */
struct trove_flows_events {
    uint64_t count;
    int (*get)(void *ctx, uint64_t index, struct trove_event *out, struct trove_diag *diag);
    void *ctx;
};
void trove_flows_events_of(struct trove_flows_events *ev, const struct trove_event *events,
                           size_t n);

/*
 * The flows object, version 2: rows[0..n) coded against the events they join
 * (docs/formats/flows.md) — each row whose thread has events names one of them by its index
 * (a delta from the row before's) and keeps its time as a distance from that event's start,
 * so its thread is the event's; a flow's id is coded against the ids before it and its name
 * against its flow's. Rows on a thread without events keep their point as version 1 does.
 * The streams go through zstd when that makes them smaller. The same rows and events give the
 * same bytes. Errors as trove_flows_encode, and TROVE_ERR_INVALID for NULL events with
 * nevents > 0.
 */
int trove_flows_encode_events(const struct trove_flow *rows, size_t n,
                              const struct trove_event *events, size_t nevents,
                              struct trove_bytes *out);

/*
 * trove_flows_decode for both versions: a version 2 object needs the events it was coded
 * against (ev; its count must be the object's, TROVE_ERR_CORRUPT otherwise), and reads only
 * the events its rows name, in the rows' order. Without ev (NULL) a version 2 object is
 * TROVE_ERR_INVALID. Errors as trove_flows_decode, and ev->get's.
 */
int trove_flows_decode_events(const uint8_t *buf, size_t len, const struct trove_flows_events *ev,
                              struct trove_flows *out, struct trove_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
