/*
 * trove/event.h: the event record and the names that give it meaning.
 *
 * An event is a fixed 32-byte record, little-endian on the wire and on disk:
 *
 *   offset  0: start_ns u64   nanoseconds on the capture's clock
 *   offset  8: dur_ns   u64   duration in nanoseconds (0 for instants)
 *   offset 16: pid      u32
 *   offset 20: tid      u32
 *   offset 24: kind     u8    enum trove_kind
 *   offset 25: depth    u8    nesting depth on its thread (0 = outermost)
 *   offset 26: extra    u8    kind-specific byte (instant scope, async source, ...)
 *   offset 27: pad      u8    always 0
 *   offset 28: name_id  u32   key into the capture's names table
 *
 * The in-memory struct (trove/wire_format.h, with the kinds and the name types, shared with
 * libtrove-client) has exactly this layout on a little-endian host, so raw frames decode
 * with a memcpy. A capture also carries names: name_id -> UTF-8 event name,
 * (pid, tid) -> thread name and pid -> process name, and the sort indexes of processes and
 * threads, kept in a struct trove_names and sent on the wire as names frames (see
 * trove/wire.h and docs/formats/wire.md).
 */
#ifndef TROVE_EVENT_H
#define TROVE_EVENT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trove/common.h"
#include "trove/wire_format.h"

#ifdef __cplusplus
extern "C" {
#endif




/* extra for instants: the Chrome scope. */
enum trove_scope { TROVE_SCOPE_THREAD = 0, TROVE_SCOPE_PROCESS = 1, TROVE_SCOPE_GLOBAL = 2 };

/*
 * extra for zones: where the zone came from. 0 is a zone of a thread (Chrome X or B/E, the
 * generator's zones); the others are async spans, which live on tracks of their own (below).
 * Values are part of the formats: never renumber.
 */
enum trove_async {
    TROVE_ASYNC_NONE = 0,     /* a thread's zone */
    TROVE_ASYNC_NESTABLE = 1, /* Chrome b/e: a nestable async span */
    TROVE_ASYNC_LEGACY = 2,   /* Chrome S/F: a legacy async span */
    TROVE_ASYNC_STEP = 3      /* Chrome T: a step of a legacy span, from the T to the next T
                                 or the F */
};

/*
 * Tracks that are not threads. An async span (Chrome b/e, S/T/F, and an n with an id) and a
 * counter series (Chrome C: one per pid, counter name and argument) each get a track of their
 * own: a synthetic tid in the event's pid, taken from [TROVE_TID_SYNTHETIC,
 * TROVE_TID_SYNTHETIC + TROVE_TID_SYNTHETIC_COUNT) and never one a real thread of that pid
 * uses, named in the names table like a thread ("async: NAME", "COUNTER KEY").
 * docs/formats/chrome-json.md has the rules.
 */
#define TROVE_TID_SYNTHETIC 0xFE000000u
#define TROVE_TID_SYNTHETIC_COUNT 0x01000000u

/* Is tid in the synthetic range? */
static inline int trove_tid_is_synthetic(uint32_t tid)
{
    return tid - TROVE_TID_SYNTHETIC < TROVE_TID_SYNTHETIC_COUNT;
}

/*
 * A counter's value is an IEEE-754 double (binary64) whose bits are dur_ns, so that any
 * value a Chrome trace or a Perfetto counter holds is kept exactly. A counter has no
 * duration: its end is its start (trove_event_end).
 */
static inline double trove_counter_value(const struct trove_event *e)
{
    double v;
    _Static_assert(sizeof v == sizeof e->dur_ns, "a double is 64 bits");
    memcpy(&v, &e->dur_ns, sizeof v);
    return v;
}

static inline uint64_t trove_counter_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* Where an event ends: start_ns + dur_ns (UINT64_MAX if that overflows), and start_ns for a
 * counter, whose dur_ns is its value. Time ranges (a bundle's, a capture's) use this. */
static inline uint64_t trove_event_end(const struct trove_event *e)
{
    uint64_t end;
    if (e->kind == TROVE_KIND_COUNTER)
        return e->start_ns;
    end = e->start_ns + e->dur_ns;
    return end < e->start_ns ? UINT64_MAX : end;
}

/* A short lowercase name for a kind ("zone", "instant", ...), or "other" if unknown. */
const char *trove_kind_name(uint8_t kind);

/*
 * The names of a capture. Three maps from an id to a UTF-8 string:
 *   TROVE_NAME_EVENT   name_id      -> event name
 *   TROVE_NAME_THREAD  (pid, tid)   -> thread name
 *   TROVE_NAME_PROCESS pid          -> process name
 * and two from an id to a signed 32-bit sort index (Chrome's process_sort_index and
 * thread_sort_index: where a viewer should place the track among its siblings, lower
 * first), which carry no string:
 *   TROVE_NAME_PROCESS_SORT pid        -> the process's sort index
 *   TROVE_NAME_THREAD_SORT  (pid, tid) -> the thread's sort index
 * Setting an id again replaces its value. Entries are kept in insertion order (a
 * replaced entry keeps its place), which is the order they are written in names frames.
 * Not thread-safe; one writer or many readers. The types are enum trove_name_type
 * (trove/wire_format.h).
 */

/* Does an entry of this type hold a sort index (rather than a string)? Is it keyed by
 * (pid, tid) (rather than by one id)? */
static inline int trove_name_type_is_sort(int type)
{
    return type == TROVE_NAME_PROCESS_SORT || type == TROVE_NAME_THREAD_SORT;
}

static inline int trove_name_type_has_tid(int type)
{
    return type == TROVE_NAME_THREAD || type == TROVE_NAME_THREAD_SORT;
}

/* Longest name trove stores or accepts from outside, in bytes. */
#define TROVE_NAME_MAX 65535

struct trove_names;

struct trove_name_entry {
    uint8_t type;       /* enum trove_name_type */
    uint32_t a;         /* name_id, or pid */
    uint32_t b;         /* tid for TROVE_NAME_THREAD and TROVE_NAME_THREAD_SORT, else 0 */
    const char *str;    /* borrowed; valid until the next set or free; NUL-terminated; ""
                           for a sort index */
    size_t len;
    int32_t sort_index; /* the value of a sort index entry; 0 for the others */
};

/* Create an empty table. Returns TROVE_OK or TROVE_ERR_NOMEM. */
int trove_names_new(struct trove_names **out);
void trove_names_free(struct trove_names *names);

/*
 * Set a name (types TROVE_NAME_EVENT, _THREAD, _PROCESS). `b` is ignored (stored as 0)
 * unless type is TROVE_NAME_THREAD.
 * Errors: TROVE_ERR_INVALID (another type, len > TROVE_NAME_MAX, a string that is not
 * well-formed UTF-8: every name in trove is UTF-8, and a names frame refuses anything
 * else), TROVE_ERR_NOMEM. The string is copied; it need not be NUL-terminated.
 */
int trove_names_set(struct trove_names *names, int type, uint32_t a, uint32_t b,
                    const char *str, size_t len);

/* Look a name up. Returns a borrowed NUL-terminated string (valid until the next set or
 * free) and its length in *len_out (may be NULL), or NULL when the id has no name (and for
 * the sort index types, which hold no string). */
const char *trove_names_get(const struct trove_names *names, int type, uint32_t a, uint32_t b,
                            size_t *len_out);

/*
 * Set a sort index: type TROVE_NAME_PROCESS_SORT (pid; tid is ignored, stored as 0) or
 * TROVE_NAME_THREAD_SORT (pid, tid). Errors: TROVE_ERR_INVALID (another type),
 * TROVE_ERR_NOMEM.
 */
int trove_names_set_sort(struct trove_names *names, int type, uint32_t pid, uint32_t tid,
                         int32_t sort_index);

/* Look a sort index up: 1 with the value in *out (may be NULL) when (type, pid, tid) has
 * one, else 0 (*out untouched). */
int trove_names_get_sort(const struct trove_names *names, int type, uint32_t pid, uint32_t tid,
                         int32_t *out);

/* Set the entry e describes, whatever its type: its string (trove_names_set) or its sort
 * index (trove_names_set_sort). Errors as theirs. */
int trove_names_put(struct trove_names *names, const struct trove_name_entry *e);

/* Find the entry of (type, a, b) (b counts only for the types with a tid): 1 with its index
 * in insertion order in *index_out (may be NULL), or 0 when there is none. */
int trove_names_find(const struct trove_names *names, int type, uint32_t a, uint32_t b,
                     size_t *index_out);

/* Number of entries, and the i-th in insertion order (0 <= i < count). */
size_t trove_names_count(const struct trove_names *names);
void trove_names_entry(const struct trove_names *names, size_t i, struct trove_name_entry *out);

/* Nonzero when a and b hold the same entries, in the same order, with the same strings and
 * sort indexes. */
int trove_names_equal(const struct trove_names *a, const struct trove_names *b);

/* Copy every entry of src into dst (replacing names and sort indexes dst already has). */
int trove_names_merge(struct trove_names *dst, const struct trove_names *src);

/* ---- an array of events ------------------------------------------------------------ */

/* A growable array of events. A zeroed struct is empty; free with trove_events_free. */
struct trove_events {
    struct trove_event *ev;
    size_t len;
    size_t cap;
};

int trove_events_push(struct trove_events *a, const struct trove_event *e);
/* Make room for extra more events past len (one allocation). TROVE_OK or TROVE_ERR_NOMEM. */
int trove_events_reserve(struct trove_events *a, size_t extra);
void trove_events_free(struct trove_events *a);

#ifdef __cplusplus
}
#endif
#endif
