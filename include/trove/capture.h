/*
 * trove/capture.h: captures in the store.
 *
 * A capture is an object volume (trove/volume.h) named after it:
 *
 *   slot 0     the capture header: counts, time range, and one index entry per segment
 *   slot 1     the names: a wire stream of names frames (trove/wire.h); names over one
 *              object's 16 MiB are cut into parts at frame boundaries, this the first
 *   slot 2+k   segment k: packed+deflate (or, by option, columnar) wire frames back to
 *              back, about segment_bytes of 32-byte events (1 MiB by default, 32,768
 *              events), in the input's order
 *   slot 2+S   the flows (trove/flows.h's flows object), when the capture has flow rows
 *   then       names parts 1 .. K-1, when the names pass one object (header flag 0x2)
 *   then       the profile objects, when the capture has a profile
 *
 * Every object is a deterministic function of the events and names, so importing the same
 * input again stores no new object. docs/formats/capture.md has the byte layouts.
 * Replay walks the names and the segments that overlap a time range through a
 * trove_stream (trove/stream.h) and hands the sink wire frames.
 *
 * Thread-safety: as the store's (trove/volume.h): one thread at a time per store handle.
 * During a replay the store is not used after the digests are taken; the objects are read
 * through the stream's backend and decoded on its walker thread.
 */
#ifndef TROVE_CAPTURE_H
#define TROVE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/event.h"
#include "trove/flows.h"
#include "trove/stream.h"
#include "trove/volume.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TROVE_CAPTURE_SEGMENT_BYTES_DEFAULT ((uint64_t)1 << 20) /* of 32-byte events */
#define TROVE_CAPTURE_FRAME_EVENTS_DEFAULT 2048u
#define TROVE_CAPTURE_BATCH_EVENTS 16384u /* events a replay batch holds at most */
#define TROVE_CAPTURE_MAX_OBJECT ((uint32_t)16 << 20) /* the volume's block size */
/* The header is one object: 2^18 index entries of 40 bytes (10 MiB) fit in MAX_OBJECT. */
#define TROVE_CAPTURE_MAX_SEGMENTS ((uint64_t)1 << 18)
/* A segment of 8 MiB of events packs and deflates to at most 44/32 of that (the packed
 * worst case), so it always fits in MAX_OBJECT. */
#define TROVE_CAPTURE_MAX_SEGMENT_BYTES ((uint64_t)8 << 20)
/* Header flag: the segments may hold format 5 (columnar) frames besides deflate ones. */
#define TROVE_CAPTURE_FLAG_COLUMNAR 1u
/* A capture's profile (sampled call stacks) is at most this many objects of samples frames. */
#define TROVE_CAPTURE_MAX_PROFILE_OBJECTS ((uint64_t)1 << 16)
/* Header flag: the names take several objects ("names parts", docs/formats/capture.md). */
#define TROVE_CAPTURE_FLAG_NAMES_PARTS 2u
/* A capture's names (every names frame of its names table) take at most this many bytes, in
 * at most MAX_NAMES_PARTS objects of at most MAX_OBJECT bytes each, cut at names frame
 * boundaries. A writer given more fails with TROVE_ERR_LIMIT. (Parts are cut only when the
 * next frame would not fit, and a frame is at most 1 MiB and 16 bytes, so every part but
 * the last holds over 15 MiB: 256 MiB take at most 18 parts.) */
#define TROVE_CAPTURE_MAX_NAMES_BYTES ((uint64_t)256 << 20)
#define TROVE_CAPTURE_MAX_NAMES_PARTS 32u
/* Header flag: summary objects (trove/summary.h) follow every other slot, one node per
 * segment and per 64^L segments (docs/formats/summary.md). */
#define TROVE_CAPTURE_FLAG_SUMMARY 4u
/* Flag: the events' attributes (trove/attrs.h): one attributes object per segment, its rows'
 * events counted from the segment's first, then one of the trace's own (scope TRACE), in the
 * slots after the profile's (docs/formats/capture.md). */
#define TROVE_CAPTURE_FLAG_ATTRS 8u
/* Header flag: the segments may hold format 8 (model) frames besides deflate ones. */
#define TROVE_CAPTURE_FLAG_MODEL 16u
/* Header flag, with FLAG_COLUMNAR: the format 5 frames are deflated (TROVE_WIRE_COLUMNAR_
 * DEFLATE). A capture written before this flag says only FLAG_COLUMNAR for either. */
#define TROVE_CAPTURE_FLAG_COLUMNAR_DEFLATE 32u
/* Header flag, with FLAG_COLUMNAR or FLAG_MODEL: some segments are packed + deflate frames
 * too (an append in another format than the capture was written in). */
#define TROVE_CAPTURE_FLAG_DEFLATE 64u

/* The segments' format a capture's header flags say: "deflate", "columnar",
 * "columnar_deflate" or "model", or those present joined by '+' for a capture an append
 * wrote in a second format ("deflate+model"). */
const char *trove_capture_segment_format_name(uint32_t flags);

struct trove_capture_options {
    uint64_t segment_bytes; /* 32-byte events per segment, in bytes (a multiple of 32 from
                               32 to MAX_SEGMENT_BYTES); 0: the default (2 MiB, 65,536
                               events, for TROVE_WIRE_MODEL segments; 1 MiB otherwise) */
    uint32_t frame_events;  /* events per frame, 1 .. TROVE_WIRE_MAX_EVENTS; 0: 2048 */
    /* The segments' frames: 0 or TROVE_WIRE_DEFLATE (packed + deflate, format 3),
     * TROVE_WIRE_COLUMNAR or TROVE_WIRE_COLUMNAR_DEFLATE (format 5), TROVE_WIRE_MODEL
     * (format 8; frame_events 0 then means one frame a segment, of up to 65,536 events, and
     * segment_bytes 0 segments of 65,536 events). A
     * frame that format 5 or 8 would make larger than packed's worst case, 16 + 44 bytes an
     * event, is stored as deflate, so a segment's bound holds. An append keeps the format 5
     * or 8 flag of what it continues. */
    int segment_format;
    /* 1: write no summary objects (trove/summary.h; a capture as builds before them wrote
     * it, which trove_capture_index can give them later); 0: write them. */
    int no_summaries;
    /* Called after each segment with segments done and the total; may be NULL. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
};

struct trove_capture_info {
    uint64_t events;
    uint64_t segments;
    uint64_t first_ns;     /* the smallest start (0 with no events) */
    uint64_t end_ns;       /* the largest start + dur (0 with no events) */
    uint64_t names;        /* names entries */
    uint64_t raw_bytes;    /* events * 32 */
    uint64_t stored_bytes; /* bytes of every object: header, names, segments, flows,
                              profile, summaries */
    uint64_t new_objects;  /* trove_capture_write: objects it stored, which the store did not
                              have (or had damaged): what was uploaded, on every backend */
    uint64_t flows;        /* flow rows (header v2) */
    uint64_t new_bytes;    /* trove_capture_write: the bytes of those objects */
    uint64_t samples;      /* sampled call stacks (header v3: a profile) */
    uint64_t switches;     /* context switches of the sampled threads (v3) */
    uint32_t flags;        /* the header's: TROVE_CAPTURE_FLAG_COLUMNAR, _NAMES_PARTS,
                              _SUMMARY, _ATTRS */
    uint64_t attr_rows;    /* attribute rows, the events' and the trace's (flag ATTRS) */
    uint64_t attrs_bytes;  /* the bytes of their objects (stored_bytes counts them) */
};

/*
 * Write events[0..n) and names (may be NULL) as capture `name` in s, replacing a capture of
 * that name, and commit: the capture is replaced whole or not at all. An object volume with
 * no object in any slot (a write that crashed before its commit) is taken over. info (may be
 * NULL) gets the counts, stored_bytes (every object's bytes) and new_objects (distinct
 * objects the store did not have before). Memory: one segment's encoding at a time.
 * Errors: TROVE_ERR_INVALID (name, options, an event's pad not 0), TROVE_ERR_EXISTS (name is
 * a volume that is not a capture), TROVE_ERR_READONLY (a snapshot, or a read-only store),
 * TROVE_ERR_LIMIT (more than MAX_SEGMENTS segments; names over MAX_NAMES_BYTES bytes or
 * MAX_NAMES_PARTS objects), the store's errors; diag says which. Names that fit in one
 * object (MAX_OBJECT) are one, in slot 1, byte for byte as before parts existed; more are
 * cut into parts (header flag TROVE_CAPTURE_FLAG_NAMES_PARTS), which a build older than
 * parts refuses rather than misreads.
 */
int trove_capture_write(struct trove_store *s, const char *name, const struct trove_event *events,
                        size_t n, const struct trove_names *names,
                        const struct trove_capture_options *opt, struct trove_capture_info *info,
                        struct trove_diag *diag);

/*
 * trove_capture_write with flow rows flows[0..nflows) (may be 0), stored as the flows object
 * in slot 2 + S. A capture with flows or counter events gets a header of version 2 (older
 * trove builds refuse it as newer rather than misread it); one with neither is written
 * exactly as trove_capture_write always wrote it. Errors: those of trove_capture_write,
 * TROVE_ERR_INVALID (a flow row that fails trove_flow_check), TROVE_ERR_LIMIT (more than
 * TROVE_FLOWS_MAX rows; a flows object over MAX_OBJECT bytes).
 */
int trove_capture_write_trace(struct trove_store *s, const char *name,
                              const struct trove_event *events, size_t n,
                              const struct trove_names *names, const struct trove_flow *flows,
                              size_t nflows, const struct trove_capture_options *opt,
                              struct trove_capture_info *info, struct trove_diag *diag);

struct trove_profile;

/*
 * trove_capture_write_trace with a sampling profile (trove/profile.h; may be NULL): its rows
 * as samples frames (wire format 6) in objects of at most MAX_OBJECT bytes, in the slots
 * after the flows (2 + S, or 3 + S with flows). A capture with a profile that has rows gets
 * a header of version 3; one without is written exactly as trove_capture_write_trace writes
 * it. A capture may hold a profile and no events. Errors: those of
 * trove_capture_write_trace, TROVE_ERR_LIMIT (more than MAX_PROFILE_OBJECTS objects).
 */
int trove_capture_write_profile(struct trove_store *s, const char *name,
                                const struct trove_event *events, size_t n,
                                const struct trove_names *names, const struct trove_flow *flows,
                                size_t nflows, const struct trove_profile *profile,
                                const struct trove_capture_options *opt,
                                struct trove_capture_info *info, struct trove_diag *diag);

struct trove_attrs;

/*
 * trove_capture_write_profile with the events' attributes (trove/attrs.h; rows by event index
 * in events[0..n), not going back) and the trace's (meta); either may be NULL or empty. With
 * rows, one attributes object per segment (its rows' events counted from the segment's
 * first) and one of the trace's go in the slots after the profile's, and the header gets flag
 * ATTRS (a build older than it refuses the capture rather than lose them). Errors: those of
 * trove_capture_write_profile, TROVE_ERR_INVALID (rows going back, or of an event past n),
 * TROVE_ERR_LIMIT (a segment's attributes over MAX_OBJECT bytes).
 */
int trove_capture_write_attrs(struct trove_store *s, const char *name,
                              const struct trove_event *events, size_t n,
                              const struct trove_names *names, const struct trove_flow *flows,
                              size_t nflows, const struct trove_profile *profile,
                              const struct trove_attrs *attrs, const struct trove_attrs *meta,
                              const struct trove_capture_options *opt,
                              struct trove_capture_info *info, struct trove_diag *diag);

/*
 * The attributes of capture `name` appended to attrs (rows by the event's index in the
 * capture) and the trace's to meta (may be NULL): every attributes object, in order, decoded
 * with every bound checked (trove_attrs_decode), each row's event within its segment and the
 * rows the header's count. A capture without attributes adds none. Errors:
 * TROVE_ERR_INVALID, TROVE_ERR_NOTFOUND, the header's, the decoder's, TROVE_ERR_CORRUPT, the
 * store's; diag names the capture and slot. On error both tables hold the rows they had.
 */
int trove_capture_read_attrs(struct trove_store *s, const char *name, struct trove_attrs *attrs,
                             struct trove_attrs *meta, struct trove_diag *diag);
/* The rows of events [from, to) of capture `name` (capture indexes) appended to attrs,
 * reading only the attributes objects of the segments the range touches: what a viewer asks
 * of a selected event. Errors as trove_capture_read_attrs; none for a capture without
 * attributes or an empty range. */
int trove_capture_read_attrs_range(struct trove_store *s, const char *name, uint64_t from,
                                   uint64_t to, struct trove_attrs *attrs,
                                   struct trove_diag *diag);

/*
 * Read the profile of capture `name` into p, a new profile (trove_profile_new, no rows
 * added): every profile object, in order, checked against its name and decoded frame by
 * frame with every bound checked (trove_profile_decode); the samples and switches must be
 * the header's counts. A capture without a profile gives no rows. Errors: TROVE_ERR_INVALID
 * (p not new), TROVE_ERR_NOTFOUND, the header's, the decoder's (TROVE_ERR_CORRUPT for counts
 * that disagree), the store's; diag names the capture and slot. On error p holds what was
 * read before it: free it.
 */
int trove_capture_read_profile(struct trove_store *s, const char *name, struct trove_profile *p,
                               struct trove_diag *diag);

/*
 * Read the names of capture `name` (event, thread and process names, sort indexes) into
 * names, a new table (trove_names_new): its names objects (one, or each part in order)
 * decoded frame by frame, every bound checked, without reading any event. Errors:
 * TROVE_ERR_INVALID, TROVE_ERR_NOTFOUND, the header's, the wire decoder's, TROVE_ERR_CORRUPT
 * (a frame that is not a names frame, sizes or counts that disagree with the header), the
 * store's; diag names the capture, the part's slot and the byte. On error names holds what
 * was read before it: free it.
 */
int trove_capture_read_names(struct trove_store *s, const char *name, struct trove_names *names,
                             struct trove_diag *diag);

/* ---- writing live -----------------------------------------------------------------------
 *
 * A capture built batch by batch, as `trove serve` spools one: events are added in order,
 * each segment is encoded and put as soon as it fills, and a commit makes everything added so
 * far durable and visible (the header, the names and the partial last segment, then the
 * volume's commit). The capture a writer leaves is byte for byte the one trove_capture_write
 * makes of the same events and final names with the same options, however the events were
 * batched and committed, and across an append-reopen. Memory: one frame of raw events, the
 * last segment's encoded frames, the header index (40 bytes a segment), the names and, at a
 * commit, one names part's encoding.
 *
 * The volume is open in s (trove_volume_open: other opens of it through s get
 * TROVE_ERR_BUSY) only while the writer holds uncommitted objects: from the put of a full
 * segment, or the start of a commit, to the end of the commit (after a failed commit, until
 * the next one succeeds or the writer is closed). Between, trove_capture_info, _list and
 * _replay through s read the last commit. A writer finds the capture again by its recipe's
 * generation: a capture committed or removed by anyone else since is TROVE_ERR_MISMATCH.
 *
 * Thread-safety: one thread at a time per writer, and not at the same time as another use of
 * s (trove/volume.h). Close every writer before the store.
 */
struct trove_capture_writer;

/* Open capture `name` of s to be written batch by batch. append 0: start it anew (a
 * capture of that name is replaced at the first commit; until then readers see the old
 * one). append 1: continue the capture s has: its events stay, its last partial segment
 * and its names are read back (checked like every read), and later adds go after them;
 * TROVE_ERR_NOTFOUND if there is no such capture (an object volume into which no write ever
 * committed one counts as none). opt as for trove_capture_write (segment_bytes,
 * frame_events; progress unused); may be NULL. With append the capture's own sizes are
 * kept: an option that is not 0 and differs from them is TROVE_ERR_INVALID. Errors as
 * trove_capture_write's open (name, a block volume of that name -> TROVE_ERR_EXISTS,
 * READONLY), the header/segment decoders' for append, TROVE_ERR_INVALID for append to a
 * capture with flow rows (the writer does not carry them), NOMEM; diag says which. *out is
 * the writer (close it), NULL on error, when nothing is left behind. A new capture (append
 * 0, no capture of that name) is pending until its first commit: nothing of it is written
 * before, so a writer closed or killed first leaves no capture; until then s holds its
 * volume open, and other opens of the name through s are TROVE_ERR_BUSY. */
int trove_capture_writer_open(struct trove_store *s, const char *name, int append,
                              const struct trove_capture_options *opt,
                              struct trove_capture_writer **out, struct trove_diag *diag);
/* Add events[0..n) after those added so far (pad must be 0: TROVE_ERR_INVALID). A segment
 * that fills is encoded (DEFLATE frames of frame_events, as trove_capture_write) and put at
 * once, uncommitted; memory holds at most one segment of raw events. TROVE_ERR_LIMIT past
 * MAX_SEGMENTS. On INVALID and LIMIT nothing was added; any other error (encoding, the
 * store's) is sticky: every later add and commit returns it, and the writer can only be
 * closed (the capture stays at its last commit). */
int trove_capture_writer_add(struct trove_capture_writer *w, const struct trove_event *events,
                             size_t n, struct trove_diag *diag);
/* As trove_capture_writer_add, with the events' attributes (trove/attrs.h; rows by index in
 * events[0..n), not going back; may be NULL). The first rows turn the capture's attributes
 * on (flag ATTRS; the segments before have none), and from then on every commit writes its
 * attributes objects (docs/formats/capture.md): each full segment's is stored as it fills,
 * the last one's at each commit. TROVE_ERR_INVALID also for rows going back or past n. */
struct trove_attrs;
int trove_capture_writer_add_attrs(struct trove_capture_writer *w,
                                   const struct trove_event *events, size_t n,
                                   const struct trove_attrs *attrs, struct trove_diag *diag);
/* Merge names entries into the capture's names (as a names frame merges into a table:
 * an entry for an existing key replaces its string or sort index, in its place; new keys go
 * last). An entry equal to the one there changes nothing. On error (NOMEM) some entries may
 * be merged already; merging again is harmless. */
int trove_capture_writer_names(struct trove_capture_writer *w, const struct trove_names *added,
                               struct trove_diag *diag);
/*
 * Add samples frames (wire format 6) to the capture's profile: frames[0..len) whole frames
 * back to back, holding `samples` samples and `switches` switches in all, continuing the
 * frames added before (the caller decoded them, with trove_profile_decode, into a profile that
 * follows the stream: the writer checks the frames' headers and the sample count only). They
 * go into profile objects of about 1 MiB (a commit rewrites the last one; one that reached
 * 1 MiB is sealed and the next frames start another), after the segments, which move them up
 * a slot as they grow. A capture written with samples is not byte for byte what
 * trove_capture_write_profile makes of the same profile (its frames are cut where the caller
 *  * cut them), but reads back to the same rows. After an append-open the frames must go on
 * from the stored profile's rows (as the same stream would); trove serve takes no samples
 * into a capture a producer continued with append. Errors: the sticky error, TROVE_ERR_INVALID
 * (not samples frames, counts that disagree), TROVE_ERR_LIMIT (more than MAX_OBJECT bytes
 * since the last commit, or at once; the profile full), TROVE_ERR_NOMEM; nothing is taken on
 * error.
 */
int trove_capture_writer_samples(struct trove_capture_writer *w, const uint8_t *frames,
                                 size_t len, uint64_t samples, uint64_t switches,
                                 struct trove_diag *diag);

/* Make everything added so far durable: put the partial last segment (if any), the names
 * parts that changed (if any: the last one, when names were only added; from the part
 * before the one an entry was replaced in, when one was), the last profile object (if
 * samples came) and the header, and commit the volume. Afterwards trove_capture_info
 * / replay / list (from this or any other handle or process) see every event added so far.
 * Cheap when nothing changed since the last commit (no write at all). info (may be NULL)
 * gets the counts like trove_capture_write's (stored_bytes = header+names+segments bytes;
 * new_objects: objects this commit and the adds since the last one stored that the store did
 * not have). A failed commit changes nothing the writer knows and may be retried. Errors:
 * the sticky error, TROVE_ERR_LIMIT (names over MAX_NAMES_BYTES bytes or MAX_NAMES_PARTS
 * objects), TROVE_ERR_MISMATCH (the
 * capture changed behind the writer), the store's. */
int trove_capture_writer_commit(struct trove_capture_writer *w, struct trove_capture_info *info,
                                struct trove_diag *diag);
/* The capture's names so far (those read back by an append included): borrowed, valid
 * until the next call on w. */
const struct trove_names *trove_capture_writer_names_all(const struct trove_capture_writer *w);
/* Events added so far, and events the last commit made durable. */
uint64_t trove_capture_writer_events(const struct trove_capture_writer *w);
uint64_t trove_capture_writer_committed(const struct trove_capture_writer *w);
/* Samples the writer has (trove_capture_writer_samples, and those an append read back). */
uint64_t trove_capture_writer_sample_count(const struct trove_capture_writer *w);
/*
 * Drafts (on = 1): until told otherwise, a commit writes the summary nodes that a later commit
 * replaces — the last segment's while it fills, and each level's last node while it waits for
 * children — compressed fast rather than small (deflate level 1 for every level, where a
 * whole node above level 0 is level 6: the same content, other bytes). A live capture that
 * commits every second and makes its last commit with drafts off (on = 0, the default) ends
 * with the objects a one-shot write of its events makes.
 */
void trove_capture_writer_drafts(struct trove_capture_writer *w, int on);
/* Close without committing: what was not committed is lost (the volume stays at its last
 * commit; a new capture never committed leaves nothing behind). NULL is fine. */
void trove_capture_writer_close(struct trove_capture_writer *w);

/*
 * Append the flow rows of capture `name` whose ts_ns is in [from_ns, to_ns) to flows, in
 * stored order (none for a capture without flows, or of header version 1). The object is read
 * through the volume (checked against its name) and decoded with every bound checked
 * (trove_flows_decode). Errors: TROVE_ERR_NOTFOUND (no such capture), TROVE_ERR_INVALID (not
 * a capture, from_ns after to_ns), TROVE_ERR_CORRUPT (the object's length is not the
 * header's), the header's and the flows decoder's errors, the store's; diag names the
 * capture and slot. flows is unchanged on error.
 */
int trove_capture_read_flows(struct trove_store *s, const char *name, uint64_t from_ns,
                             uint64_t to_ns, struct trove_flows *flows, struct trove_diag *diag);

struct trove_digest;
/*
 * The digests that name capture `name`'s header (key[0]) and flows object (key[1]; zero when
 * it has no flows): equal keys, equal flow rows. A reader that keeps decoded rows compares them
 * to know the rows are still the capture's — a version 2 flows object is read with the events
 * it names (docs/formats/flows.md), which costs what decoding those segments costs. Errors as
 * trove_capture_info's, and the store's.
 */
int trove_capture_flows_key(struct trove_store *s, const char *name, struct trove_digest key[2],
                            struct trove_diag *diag);

/* Describe capture `name` (reads its header; stored_bytes derived from it, new_objects 0).
 * Errors: TROVE_ERR_NOTFOUND (no such capture; a volume that is not one is
 * TROVE_ERR_INVALID), header decode errors. */
int trove_capture_info(struct trove_store *s, const char *name, struct trove_capture_info *out,
                       struct trove_diag *diag);

struct trove_capture_entry {
    char name[TROVE_VOLUME_NAME_MAX + 1];
    int error; /* TROVE_OK, or why its header could not be read (the rest is then 0) */
    struct trove_capture_info info;
};

/* The captures of s sorted by name, in a malloc'd array (free()); block volumes are
 * skipped. A capture whose header, or a volume whose recipe, cannot be read is listed with
 * the error (it may be a capture: nothing says otherwise). Errors: TROVE_ERR_NOMEM, -errno. */
int trove_capture_list(struct trove_store *s, struct trove_capture_entry **out, size_t *count_out);

/* ---- a capture as JSON ------------------------------------------------------------------- */

/* What `trove ls` and the service's capture list say of one capture. */
struct trove_capture_listing {
    const char *name;
    struct trove_capture_info info; /* trove_capture_info's (first_ns/end_ns: the samples'
                                       span for a samples-only capture, see below) */
    int have_used;                  /* last_used_ns is known (else it is null) */
    uint64_t last_used_ns;          /* Unix ns of the last replay or export */
    uint64_t damaged;               /* slots naming objects on record as damaged */
};

/*
 * Append the members of l's JSON object, without the braces, to out: name, events,
 * segments, names, flows, samples, switches, first_ns, end_ns, raw_bytes, stored_bytes,
 * segment_format (trove_capture_segment_format_name), damaged and last_used_ns (null when
 * not known), every one of them for every capture. The one set of keys `trove ls --json` and GET
 * /api/captures share (docs/serve.md, "A capture as JSON"); the caller may add its own
 * members and closes the object. Errors: TROVE_ERR_INVALID (no name, or not a volume
 * name), TROVE_ERR_NOMEM; out is unchanged on error. Thread-safe.
 */
int trove_capture_listing_json(const struct trove_capture_listing *l, struct trove_bytes *out);

/*
 * For a capture with samples and no events (a sampled program, an imported profile), set
 * info->first_ns and info->end_ns to its samples' span (the first and the last sample's
 * time) by reading its profile (trove_capture_read_profile); for any other capture leave
 * info as it is, at no cost. Errors: trove_capture_read_profile's; diag names the capture.
 */
int trove_capture_samples_span(struct trove_store *s, const char *name,
                               struct trove_capture_info *info, struct trove_diag *diag);

struct trove_capture_replay_options {
    uint64_t from_ns;       /* events that start at or after ... */
    uint64_t to_ns;         /* ... and before this (exclusive; UINT64_MAX: to the end) */
    int wire;               /* TROVE_WIRE_RAW, _PACKED or _DEFLATE: the frames the sink gets */
    uint32_t frame_events;  /* events per frame re-encoded (0: as stored, but at most
                               2048 for format 8 segments) */
    uint64_t from_event;    /* and whose index in the capture (its events in stored order,
                               from 0) is at least this; the segments wholly before it are
                               not read (0: from the first event) */
    /* The capture's attribute rows by capture index (trove_capture_read_attrs; NULL: none
     * sent): each events frame sent whose events have rows comes after an attrs frame (wire
     * format 7) of those rows, by their index in that frame, in the same batch; a segment
     * with rows is then re-encoded rather than sent as stored. Borrowed for the replay. */
    const struct trove_attrs *attrs;
};

/*
 * Stream capture `name` to sink through st: first the names frames, then the events of
 * every segment that overlaps [from_ns, to_ns) and holds an event at or past
 * opt->from_event, in stored order, as frames of opt->wire (only the events that start in
 * the range and whose index is at least from_event: a viewer catching up from an event it
 * knows reads no segment before it).
 * Each batch is whole frames back to back: the names frames one a batch, then runs of a
 * segment's frames holding at most TROVE_CAPTURE_BATCH_EVENTS events (a single larger
 * frame is a batch of its own), so a sender thread's handoff is paid a few times a segment
 * rather than once a frame; no batch spans two segments. Stored frames that need no change (DEFLATE at the stored
 * frame size, the segment wholly inside the range) are sent as they are, aliasing the
 * object, after a check of their headers only; others are decoded, filtered to the events
 * that start in the range and re-encoded. st must stream from trove_store_backend(s); s may
 * be read-only. Items 0 .. K-1 of the run are the K names parts (K = 1: the names object)
 * and item K - 1 + i the i-th picked segment (the stream's slot numbers are first_slot 1 +
 * item). Errors: trove_stream_run's,
 * TROVE_ERR_NOTFOUND (no such capture), TROVE_ERR_INVALID (not a capture, options, from_ns
 * after to_ns), header decode errors, and for an object that disagrees with the header or
 * does not decode TROVE_ERR_CORRUPT or the wire decoder's error (diag names the segment and
 * its object's digest).
 */
int trove_capture_replay(struct trove_store *s, const char *name, struct trove_stream *st,
                         const struct trove_capture_replay_options *opt,
                         const struct trove_stream_sink *sink, struct trove_stream_stats *stats,
                         struct trove_diag *diag);

/* ---- the header object (slot 0) ---- */

struct trove_capture_segment {
    uint64_t min_start_ns;
    uint64_t max_start_ns;
    uint64_t max_end_ns;   /* the largest start + dur (UINT64_MAX if that overflows) */
    uint32_t events;
    uint32_t frames;
    uint32_t bytes;        /* the segment object's length */
};

/* One names part: an object of whole names frames. */
struct trove_capture_names_part {
    uint32_t bytes;        /* the object's length, 16 .. MAX_OBJECT */
    uint32_t entries;      /* the names entries its frames hold */
};

struct trove_capture_header {
    struct trove_capture_info info;       /* events, segments, first_ns, end_ns, names,
                                             raw_bytes, flows; decode derives stored_bytes
                                             (this header's length + names_bytes +
                                             flows_bytes + every segment's bytes), encode
                                             ignores it; new_objects 0 */
    uint64_t segment_bytes;
    uint32_t frame_events;
    uint64_t names_bytes;                 /* the names objects' length together */
    struct trove_capture_segment *seg;    /* info.segments entries; malloc'd by decode */
    uint32_t version;                     /* 1, 2 or 3 (decode); encode: 0 is 3 with a
                                             profile, 2 with flows, else 1 */
    uint64_t flows_bytes;                 /* v2: the flows object's length (0: none) */
    uint64_t profile_objects;             /* v3: the profile's objects (0: none) */
    uint64_t profile_bytes;               /* v3: their bytes together */
    /* The names' objects: decode sets names_parts to 1 for one object (names_part[0] is
     * then names_bytes and info.names) or 2 .. MAX_NAMES_PARTS for parts (flag
     * NAMES_PARTS); encode writes parts when names_parts is 2 or more (the flag is its
     * doing: info.flags' bit is ignored), else the one object of names_bytes. */
    uint32_t names_parts;
    struct trove_capture_names_part names_part[TROVE_CAPTURE_MAX_NAMES_PARTS];
    uint64_t summary_bytes;               /* flag SUMMARY: the summary objects' bytes
                                             together (stored_bytes counts them) */
    uint64_t attr_rows;                   /* flag ATTRS: the rows of every attributes
                                             object together */
    uint64_t attrs_bytes;                 /* flag ATTRS: those objects' bytes together
                                             (stored_bytes counts them) */
};

/* The encoded length of a version 1 header of `segments` entries (<= MAX_SEGMENTS); a
 * version 2 header is 16 bytes longer, a version 3 header 48, names in K parts add 8K and
 * summaries (flag SUMMARY) 8. */
size_t trove_capture_header_size(uint64_t segments);

/* Append the header's encoding to out. The header must obey every rule the decoder checks
 * (docs/formats/capture.md), else TROVE_ERR_INVALID and out is unchanged.
 * Errors: TROVE_ERR_INVALID, TROVE_ERR_LIMIT (segments, names parts), TROVE_ERR_NOMEM. */
int trove_capture_header_encode(const struct trove_capture_header *h, struct trove_bytes *out);
/* Decode buf[0..len) into h (h->seg malloc'd; free with trove_capture_header_free). Every
 * bound is checked. Errors: TROVE_ERR_TRUNCATED, TROVE_ERR_MAGIC, TROVE_ERR_VERSION,
 * TROVE_ERR_LIMIT, TROVE_ERR_CHECKSUM, TROVE_ERR_CORRUPT, TROVE_ERR_NOMEM. */
int trove_capture_header_decode(const uint8_t *buf, size_t len, struct trove_capture_header *h,
                                struct trove_diag *diag);
void trove_capture_header_free(struct trove_capture_header *h);

/* ---- the last-used marker -------------------------------------------------------------
 *
 * Bookkeeping beside the store: DIR/markers/NAME.last-used holds the time of a capture's
 * last replay (decimal Unix nanoseconds and a newline), replaced by a rename and not
 * fsync'd. Replay does not write it: a caller runs trove_capture_mark_used off the request's
 * critical path (trove_bg_start), since it must never delay the first batch.
 */

/* Record that capture `name` of the store at store_dir was used at unix_ns. Errors:
 * TROVE_ERR_INVALID (name), TROVE_ERR_LIMIT (path too long), -errno. */
int trove_capture_mark_used(const char *store_dir, const char *name, uint64_t unix_ns);
/* Read it back: TROVE_OK, TROVE_ERR_NOTFOUND (never marked), TROVE_ERR_CORRUPT, -errno. */
int trove_capture_last_used(const char *store_dir, const char *name, uint64_t *unix_ns_out);

#ifdef __cplusplus
}
#endif
#endif
