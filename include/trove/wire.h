/*
 * trove/wire.h: the wire formats. One frame carries one batch of events (raw, packed or
 * packed+deflate) or a set of names; one decoder accepts every format. A wire stream (a
 * file, a socket) is frames back to back. The byte layouts are in docs/formats/wire.md and
 * frozen by the golden vectors in tests/vectors/.
 *
 *   frame header, 16 bytes, little-endian:
 *   +-----+-----+--------+---------+-----------+-------------+-------------+
 *   | 'T' | 'V' | format | version | count u32 | payload u32 | raw_len u32 |
 *   +-----+-----+--------+---------+-----------+-------------+-------------+
 *     0     1      2        3        4           8             12
 *
 * Limits are checked on the header before anything is allocated or read further.
 */
#ifndef TROVE_WIRE_H
#define TROVE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trove/common.h"
#include "trove/event.h"

#ifdef __cplusplus
extern "C" {
#endif


#define TROVE_WIRE_MAX_EVENTS 65536u          /* events per frame, hard limit */
#define TROVE_WIRE_MAX_NAMES 1048576u         /* entries per names frame */
#define TROVE_WIRE_MAX_PAYLOAD (64u << 20)    /* payload and inflated size, hard limit */
#define TROVE_WIRE_MAX_ATTRS 1048576u         /* rows per attrs frame */

/* "raw", "packed", "deflate", "names", "columnar", "columnar_deflate" -> format id; 0 if
 * unknown. And back. */
int trove_wire_format_parse(const char *name);
const char *trove_wire_format_name(int format);

struct trove_wire_header {
    uint8_t format;
    uint8_t version;
    uint32_t count;       /* events, or names entries */
    uint32_t payload_len; /* bytes after the header */
    uint32_t raw_len;     /* deflate and deflated columnar: the inflated size; else 0 */
};

/*
 * Parse and check a frame header at buf[0..len). Checks magic, version (TROVE_WIRE_VERSION,
 * or TROVE_WIRE_NAMES_VERSION for a names frame), format, count and payload limits, and
 * the per-format relations (raw: payload = 32 * count; deflate: raw_len within the bound
 * for count). Does not require the payload to be present.
 * Errors: TROVE_ERR_TRUNCATED (len < 16), TROVE_ERR_MAGIC, TROVE_ERR_VERSION,
 * TROVE_ERR_FORMAT, TROVE_ERR_LIMIT, TROVE_ERR_BOMB, TROVE_ERR_CORRUPT.
 */
int trove_wire_parse_header(const uint8_t *buf, size_t len, struct trove_wire_header *out,
                            struct trove_diag *diag);

/* An upper bound on a packed payload holding n events (n <= TROVE_WIRE_MAX_EVENTS). */
size_t trove_wire_packed_bound(size_t n);

/*
 * Encoder: owns scratch space (thread table, packed bytes, a libdeflate compressor). Reuse
 * one per thread; not thread-safe.
 */
struct trove_wire_encoder;

int trove_wire_encoder_new(struct trove_wire_encoder **out);
void trove_wire_encoder_free(struct trove_wire_encoder *enc);

/*
 * Append one frame holding events[0..n) in `format` (RAW, PACKED, DEFLATE, COLUMNAR or
 * COLUMNAR_DEFLATE) to out.
 * n may be 0 and at most TROVE_WIRE_MAX_EVENTS. Every event's pad must be 0.
 * Errors: TROVE_ERR_INVALID (format, n, nonzero pad), TROVE_ERR_NOMEM. On error out->len
 * is unchanged.
 */
int trove_wire_encode(struct trove_wire_encoder *enc, int format, const struct trove_event *events,
                      size_t n, struct trove_bytes *out);

/*
 * Append one names frame holding entries [from, to) of names to out (to is clamped to the
 * table's count; a writer sends a table incrementally by remembering the last `to`). The
 * frame is version TROVE_WIRE_VERSION unless one of those entries is a sort index, when it
 * is TROVE_WIRE_NAMES_VERSION (which a reader of version 1 only refuses).
 * Errors: TROVE_ERR_LIMIT (more than TROVE_WIRE_MAX_NAMES entries or the payload limit),
 * TROVE_ERR_NOMEM.
 */
int trove_wire_encode_names(const struct trove_names *names, size_t from, size_t to,
                            struct trove_bytes *out);

/* Decoder: owns inflate scratch and a libdeflate decompressor. Not thread-safe. */
struct trove_wire_decoder;

int trove_wire_decoder_new(struct trove_wire_decoder **out);
void trove_wire_decoder_free(struct trove_wire_decoder *dec);

struct trove_wire_frame {
    int format;         /* enum trove_wire_format */
    size_t n_events;    /* events written to the caller's array (0 for names frames) */
    size_t n_names;     /* entries merged into names (names frames) */
    size_t frame_len;   /* header + payload: where the next frame starts */
};

/*
 * Decode the one frame at buf[0..len). Event frames write their events to events[0..cap)
 * (cap must be at least the header's count, else TROVE_ERR_LIMIT). Names frames are
 * merged into `names` if it is not NULL and skipped (after validation) if it is.
 * A samples frame (format 6) is skipped after its header's checks, with n_events 0: a
 * reader of events passes over a stream's samples, and one that wants them decodes the same
 * bytes with trove_profile_decode (trove/profile.h); an attrs frame (format 7) likewise,
 * for trove_attrs_wire_decode (trove/attrs.h). Every bound is checked; nothing is read outside buf. On error the contents of events
 * are unspecified and names is unchanged; diag gets the offset within buf and a message.
 * Errors: the header errors above, TROVE_ERR_TRUNCATED (payload shorter than declared),
 * TROVE_ERR_OVERRUN, TROVE_ERR_VARINT, TROVE_ERR_THREAD, TROVE_ERR_INFLATE, TROVE_ERR_BOMB,
 * TROVE_ERR_CORRUPT (trailing bytes, bad UTF-8, nonzero reserved fields; columnar: an
 * unknown block scheme, a width over 32, an index past a dictionary, runs that do not fill
 * their block, a zero gcd, a value wider than its field), TROVE_ERR_NOMEM. A columnar frame
 * (deflated or not) reports format TROVE_WIRE_COLUMNAR.
 */
int trove_wire_decode(struct trove_wire_decoder *dec, const uint8_t *buf, size_t len,
                      struct trove_event *events, size_t cap, struct trove_names *names,
                      struct trove_wire_frame *out, struct trove_diag *diag);

/*
 * Read one whole frame from a stdio stream into frame (replacing its content): the header,
 * checked, then exactly payload_len bytes. Returns 1 when a frame was read, 0 at a clean end
 * of stream (no byte left), or an error: TROVE_ERR_TRUNCATED if the stream ends inside a
 * frame, header errors, -errno on a read error. `offset` (may be NULL) is the stream offset
 * of the frame, advanced past it on success; diag offsets are stream offsets.
 */
int trove_wire_read_frame(FILE *f, struct trove_bytes *frame, uint64_t *offset,
                          struct trove_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
