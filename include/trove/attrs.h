/*
 * trove/attrs.h: key/value attributes of events — what a trace's args, a Perfetto debug
 * annotation or a zone's text and value hold — and the attributes object that keeps them
 * beside a run of events (docs/formats/attrs.md).
 *
 * A row names an event by its index (in the run the object keeps them for), a key and a
 * typed value: a 64-bit integer, a double, a string, a bool, or JSON text (a nested value,
 * kept as its text). Keys and string values are interned in the table's strings, so a key
 * or a value that repeats costs its id; an id is the string's index in the order first
 * interned.
 *
 * A zeroed struct trove_attrs is an empty table. Not thread-safe; one writer or many
 * readers of a table.
 */
#ifndef TROVE_ATTRS_H
#define TROVE_ATTRS_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

#ifdef __cplusplus
extern "C" {
#endif

enum trove_attr_type {
    TROVE_ATTR_INT = 1,    /* v.i */
    TROVE_ATTR_DOUBLE = 2, /* v.d (its bits kept exactly: NaN payloads, -0) */
    TROVE_ATTR_STRING = 3, /* v.s: a string id */
    TROVE_ATTR_BOOL = 4,   /* v.b: 0 or 1 */
    TROVE_ATTR_JSON = 5    /* v.s: the string id of a JSON value's text (an object, an array) */
};

/* Whose attribute a row is: one of the event's arguments (Chrome's "args", a Perfetto debug
 * annotation, a zone's text or value), or a member of the event itself that trove has no
 * field for (Chrome's "cat", "tts", "tdur", ...), or of the trace as a whole (the members of a
 * Chrome trace's top-level object besides its events). */
enum trove_attr_scope {
    TROVE_ATTR_ARG = 0,
    TROVE_ATTR_FIELD = 1,
    TROVE_ATTR_TRACE = 2
};

/* At most this many rows, strings, and bytes a string, in a table or an object. */
#define TROVE_ATTRS_MAX_ROWS ((uint64_t)1 << 28)
#define TROVE_ATTRS_MAX_STRINGS ((uint64_t)1 << 24)
#define TROVE_ATTRS_MAX_STRING ((size_t)1 << 20)

struct trove_attr {
    uint64_t event;   /* the event's index */
    uint32_t key;     /* a string id */
    uint8_t type;     /* enum trove_attr_type */
    uint8_t scope;    /* enum trove_attr_scope */
    union {
        int64_t i;
        double d;
        uint32_t s;
        uint8_t b;
    } v;
};

struct trove_attrs {
    struct trove_attr *rows;
    size_t n, cap;
    /* the strings: string i is bytes[off[i] .. off[i] + len[i]), NUL after it */
    uint8_t *bytes;
    size_t nbytes, capbytes;
    uint64_t *off;
    uint32_t *len;
    size_t nstr, capstr, caplen;
    uint32_t *index;  /* a hash of the strings: id + 1, 0 free; index_mask + 1 slots */
    size_t index_mask;
};

/* The id of string s[0..n) in a, interned if new. Errors: TROVE_ERR_LIMIT (n over
 * TROVE_ATTRS_MAX_STRING, or a table of TROVE_ATTRS_MAX_STRINGS), TROVE_ERR_NOMEM (a is as it
 * was). */
int trove_attrs_intern(struct trove_attrs *a, const void *s, size_t n, uint32_t *id);

/* String id (NUL-terminated, its length in *len when len is not NULL), or NULL past the
 * table. */
const char *trove_attrs_string(const struct trove_attrs *a, uint32_t id, size_t *len);

/* Append a row (its key and string value ids must be a's). Errors: TROVE_ERR_INVALID (an id
 * past the strings, a type outside 1..5, a scope outside 0..2, a bool not 0 or 1), TROVE_ERR_LIMIT,
 * TROVE_ERR_NOMEM. */
int trove_attrs_add(struct trove_attrs *a, const struct trove_attr *row);

/*
 * The attributes object of a (docs/formats/attrs.md) appended to out: its strings and rows,
 * the rows in the order given, which must not go back in event (TROVE_ERR_INVALID). level is
 * zstd's (1 .. 19; 0: TROVE_ATTRS_LEVEL). The same table and level give the same bytes.
 * Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM; out is unchanged on error.
 */
#define TROVE_ATTRS_LEVEL 9
int trove_attrs_encode(const struct trove_attrs *a, int level, struct trove_bytes *out);

/*
 * Decode an attributes object: on success *out is the table it holds (what *out held is not
 * read nor freed: pass a zeroed or freed table). Trusts nothing: the magic, the version and
 * the checksum first; every count against its limit before anything is allocated; every
 * varint, string and id against the stream. Errors: TROVE_ERR_TRUNCATED, _MAGIC, _VERSION,
 * _CHECKSUM, _CORRUPT, _LIMIT, _VARINT, _INFLATE, _NOMEM, _INVALID; diag says where. *out is
 * untouched on error.
 */
int trove_attrs_decode(const uint8_t *buf, size_t len, struct trove_attrs *out,
                       struct trove_diag *diag);

/*
 * The attributes frame of the wire (format 7, docs/formats/wire.md): the rows of the events
 * frame that follows it, by their index in that frame. Header count = rows, raw_len 0;
 * payload = the strings' count (varint) and the same stream an attributes object holds,
 * uncompressed. encode appends one frame to out (rows not going back, at most
 * TROVE_WIRE_MAX_ATTRS, a payload within TROVE_WIRE_MAX_PAYLOAD): TROVE_ERR_INVALID,
 * TROVE_ERR_LIMIT, TROVE_ERR_NOMEM, out unchanged on error. decode reads one whole frame at
 * buf[0..len) into *out (as trove_attrs_decode: untouched on error), trusting nothing: the
 * header's errors (trove_wire_parse_header), TROVE_ERR_FORMAT (another format),
 * TROVE_ERR_TRUNCATED, _CORRUPT, _LIMIT, _VARINT, _NOMEM; diag offsets are the frame's.
 */
int trove_attrs_wire_encode(const struct trove_attrs *a, struct trove_bytes *out);
int trove_attrs_wire_decode(const uint8_t *buf, size_t len, struct trove_attrs *out,
                            struct trove_diag *diag);

/*
 * Rows [from, to) of a appended to out as a JSON array, each row
 * {"event":E,"scope":"arg"|"field"|"trace","key":"K","type":"int"|"double"|"string"|"bool"|"json","value":V}:
 * an int as its number, a double as its number (17 digits; a NaN or an infinity as the string
 * "NaN", "Infinity", "-Infinity"), a bool as true or false, a string as a JSON string, JSON
 * text as a JSON string of that text (so that the answer is valid JSON whatever a producer
 * sent). Errors: TROVE_ERR_NOMEM.
 */
int trove_attrs_json(const struct trove_attrs *a, size_t from, size_t to, struct trove_bytes *out);

/* The first row of a (rows in event order) whose event is `event` or later: a->n when none. */
size_t trove_attrs_find(const struct trove_attrs *a, uint64_t event);

/* Room for `rows` more rows without another allocation: TROVE_OK or TROVE_ERR_NOMEM. */
int trove_attrs_reserve(struct trove_attrs *a, size_t rows);

/* Rows from->rows[first .. last) appended to `to`, each row's event + shift - unshift, its key and string value interned
 * in `to`. Errors: TROVE_ERR_INVALID (an event past 2^64, or under unshift), TROVE_ERR_LIMIT,
 * TROVE_ERR_NOMEM; `to` then holds the rows it had (strings interned may stay). */
int trove_attrs_append(struct trove_attrs *to, const struct trove_attrs *from, size_t first,
                       size_t last, uint64_t shift, uint64_t unshift);

/* When `to` is empty (no row, no string), it takes from's strings as they are (from keeps
 * to's empty storage and none of its strings) and 1 is returned: from's rows can then be
 * added to `to` with their ids unchanged, nothing interned twice (an importer's staged rows
 * handed to its caller's fresh table). Else nothing changes and 0 is returned. */
int trove_attrs_take_strings(struct trove_attrs *to, struct trove_attrs *from);

/* 1 when x and y hold the same rows in the same order: events, scopes, keys and types, values
 * by what they are (strings by their bytes, whatever their ids; doubles by their bits, any
 * NaN equal to any NaN); else 0. */
int trove_attrs_equal(const struct trove_attrs *x, const struct trove_attrs *y);

void trove_attrs_free(struct trove_attrs *a);

#ifdef __cplusplus
}
#endif
#endif
