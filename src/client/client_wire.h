/*
 * client_wire.h (internal): the bytes the client sends `trove serve`, written without the
 * codec layer so that libtrove-client needs only libc (the record, the kinds, the name types
 * and the frame header are trove/wire_format.h's, which the codec shares): the hello line
 * (docs/serve.md), the
 * header of a raw frame and names frames of event, thread and process names
 * (docs/formats/wire.md). tests/test_client.c decodes what these write with
 * trove_wire_decode, which is what holds them to the format. And the type of the answer
 * lines the service sends back.
 */
#ifndef TROVE_CLIENT_WIRE_H
#define TROVE_CLIENT_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "trove/wire_format.h"

#define TROVE__CLIENT_NAME_MAX 65535u    /* bytes of a name on the wire */
#define TROVE__CLIENT_CAPTURE_MAX 128u

/* A growable byte buffer; a failed growth sets failed and drops every later append. */
struct trove__client_buf {
    uint8_t *ptr;
    size_t len, cap;
    int failed;
};

void trove__client_buf_free(struct trove__client_buf *b);
/* Make room for n more bytes: a pointer to them (len not advanced), or NULL (failed set). */
uint8_t *trove__client_buf_reserve(struct trove__client_buf *b, size_t n);

/* Append the 16-byte header of a raw frame of n events (n <= TROVE_BATCH_DEFAULT). */
void trove__client_raw_header(struct trove__client_buf *b, uint32_t n);

/*
 * A names frame under construction: begin reserves its header, add appends entries, end
 * fills the header in (or removes the frame if it has no entry). The strings must be valid
 * UTF-8 of at most TROVE__CLIENT_NAME_MAX bytes (trove__client_sanitize makes them so).
 */
struct trove__client_names {
    size_t at;      /* offset of the frame's header in the buffer */
    uint32_t count; /* entries so far */
};
void trove__client_names_begin(struct trove__client_buf *b, struct trove__client_names *nf);
void trove__client_names_add(struct trove__client_buf *b, struct trove__client_names *nf,
                             int type, uint32_t a, uint32_t tid, const char *s, size_t len);
void trove__client_names_end(struct trove__client_buf *b, struct trove__client_names *nf);

/*
 * The rows of one events frame, as the attrs frame (format 7: docs/formats/wire.md, the
 * stream of docs/formats/attrs.md uncompressed) sent before it: what the client attaches to
 * an event (a zone's text and values, a message's text). Keys and string values are
 * interned within the frame. A failed growth sets failed and drops every later row.
 */
struct trove__client_row {
    uint32_t event, key, s; /* s: a string value's id */
    uint8_t tb;             /* the type, and the scope in the high four bits */
    int64_t i;              /* an int's value */
};
struct trove__client_attrs {
    struct trove__client_buf str; /* each string's varint length and bytes, in id order */
    uint32_t nstr;
    uint32_t *soff, *slen; /* id -> where its bytes are in str, and how many */
    size_t scap;
    uint32_t *slot; /* open addressing over the strings: id + 1, 0 empty */
    size_t nslot;
    struct trove__client_row *rows;
    size_t n, cap;
    int failed;
};
#define TROVE__CLIENT_ATTR_INT 1
#define TROVE__CLIENT_ATTR_STRING 3
#define TROVE__CLIENT_ATTR_JSON 5
#define TROVE__CLIENT_SCOPE_ARG 0
#define TROVE__CLIENT_SCOPE_FIELD 1

void trove__client_attrs_reset(struct trove__client_attrs *a); /* no rows, no strings */
void trove__client_attrs_free(struct trove__client_attrs *a);
/* A row of event `event` with key[0..klen): a string or JSON text s[0..len) (type STRING or
 * JSON), or the int v (type INT; s unused). The strings must be valid UTF-8. */
void trove__client_attrs_add(struct trove__client_attrs *a, uint32_t event, int scope,
                             const char *key, size_t klen, int type, const char *s, size_t len,
                             int64_t v);
/* Append the attrs frame of a's rows to b (nothing when there are none). */
void trove__client_attrs_frame(const struct trove__client_attrs *a, struct trove__client_buf *b);

/*
 * Copy src[0..len) into dst (room for cap bytes, a NUL included) as valid UTF-8: every byte
 * not part of a well-formed sequence becomes '?', and the copy is cut at a character
 * boundary to fit. Returns the bytes written (the NUL excluded).
 */
size_t trove__client_sanitize(char *dst, size_t cap, const char *src, size_t len);

/* Is s a valid capture name (docs/serve.md)? */
int trove__client_capture_valid(const char *s);

/* Write the default capture name, "PROGRAM-PID" made valid, into dst[0..cap) (cap >= 32). */
void trove__client_default_capture(char *dst, size_t cap, const char *program, uint32_t pid);

/* The program's name into dst[0..cap): the kernel's (/proc/self/comm, at most 15 bytes),
 * else the last component of argv[0] (/proc/self/cmdline); "" if neither can be read. */
void trove__client_program_name(char *dst, size_t cap);

#define TROVE__CLIENT_TSC_HZ_MIN 1000000ull /* the service's lower bound of "tsc_hz" */

/* Append the hello line: {"capture":"NAME","producer":"trove-client","pid":PID[,"append":true]
 * [,"clock":"tsc","tsc_hz":HZ,"tsc_ref":T,"ns_ref":N]}\n (the clock members when tsc_hz is
 * not 0: the events' times are TSC ticks, T ticks being N ns of CLOCK_MONOTONIC; the name
 * must be valid, so it needs no escaping). */
void trove__client_hello(struct trove__client_buf *b, const char *capture, uint32_t pid,
                         int append, uint64_t tsc_hz, uint64_t tsc_ref, uint64_t ns_ref);

/* What the service says back (docs/serve.md, "Producers"): one JSON line per answer. */
#define TROVE__CLIENT_ANSWER_MAX 1024u /* bytes of a line, its newline included */
#define TROVE__CLIENT_ANSWER_ACCEPT 1
#define TROVE__CLIENT_ANSWER_REFUSE 2
#define TROVE__CLIENT_ANSWER_ERROR 3

/*
 * The "type" of the service's line line[0..len) (its newline excluded):
 * TROVE__CLIENT_ANSWER_ACCEPT, _REFUSE or _ERROR, or 0 when it is not a JSON object (a flat
 * scan: brackets, strings and the rest are skipped, not validated) or has no type this
 * client knows. Reads nothing outside line[0..len).
 */
int trove__client_answer_type(const char *line, size_t len);

#endif
