/*
 * wire_frame.c: the 16-byte header that opens every wire frame — written, parsed and
 * checked — and the names of the frame formats. The encoders of every payload (wire.c for
 * raw and deflate, wire_packed.c, wire_names.c) write their header through
 * trove__wire_put_header, and every reader of frames parses it here, so the one place
 * that knows the header's bytes sits below all of them.
 *
 *   header (16 bytes, little-endian):
 *     0  magic    'T' 'V'
 *     2  format   u8   1 raw, 2 packed, 3 deflate, 4 names, 5 columnar, 6 samples
 *     3  version  u8   1; 2 for a names frame that holds sort indexes (wire_names.c)
 *     4  count    u32  events (raw, packed, deflate) or entries (names)
 *     8  payload  u32  bytes that follow the header
 *    12  raw_len  u32  deflate: the inflated packed payload's size; columnar: 0, or the
 *                      inflated columnar payload's size when the payload is its deflate;
 *                      0 for the others
 *
 * Every size in a header is checked against a hard limit and against the count before any
 * allocation: count <= TROVE_WIRE_MAX_EVENTS (TROVE_WIRE_MAX_NAMES for names),
 * payload <= TROVE_WIRE_MAX_PAYLOAD, raw payload == 32 * count, packed and inflated sizes
 * <= trove_wire_packed_bound(count), columnar <= trove__columnar_bound(count).
 */
#include "wire_internal.h"

#include <assert.h>

#define WIRE_MAGIC0 'T'
#define WIRE_MAGIC1 'V'

int trove_wire_format_parse(const char *name)
{
    if (!name)
        return 0;
    if (!strcmp(name, "raw"))
        return TROVE_WIRE_RAW;
    if (!strcmp(name, "packed"))
        return TROVE_WIRE_PACKED;
    if (!strcmp(name, "deflate") || !strcmp(name, "packed+deflate") ||
        !strcmp(name, "packed_deflate"))
        return TROVE_WIRE_DEFLATE;
    if (!strcmp(name, "names"))
        return TROVE_WIRE_NAMES;
    if (!strcmp(name, "columnar"))
        return TROVE_WIRE_COLUMNAR;
    if (!strcmp(name, "columnar_deflate") || !strcmp(name, "columnar+deflate"))
        return TROVE_WIRE_COLUMNAR_DEFLATE;
    if (!strcmp(name, "model"))
        return TROVE_WIRE_MODEL;
    return 0;
}

const char *trove_wire_format_name(int format)
{
    switch (format) {
    case TROVE_WIRE_RAW: return "raw";
    case TROVE_WIRE_PACKED: return "packed";
    case TROVE_WIRE_DEFLATE: return "deflate";
    case TROVE_WIRE_NAMES: return "names";
    case TROVE_WIRE_COLUMNAR: return "columnar";
    case TROVE_WIRE_COLUMNAR_DEFLATE: return "columnar_deflate";
    case TROVE_WIRE_SAMPLES: return "samples";
    case TROVE_WIRE_ATTRS: return "attrs";
    case TROVE_WIRE_MODEL: return "model";
    default: return "unknown";
    }
}

void trove__wire_put_header(uint8_t *p, int format, int version, uint32_t count,
                            uint32_t payload_len, uint32_t raw_len)
{
    assert(version == TROVE_WIRE_VERSION ||
           (format == TROVE_WIRE_NAMES && version == TROVE_WIRE_NAMES_VERSION));
    p[0] = WIRE_MAGIC0;
    p[1] = WIRE_MAGIC1;
    p[2] = (uint8_t)format;
    p[3] = (uint8_t)version;
    trove__put_le32(p + 4, count);
    trove__put_le32(p + 8, payload_len);
    trove__put_le32(p + 12, raw_len);
}

/* Failures here call trove_diag_set by name, not through TROVE_FAIL (the same call):
 * tools/check_layers.py sees calls by name only, and tests/layers.sh checks that it finds a
 * circle through common by planting a call from common to trove_wire_format_name. */
int trove_wire_parse_header(const uint8_t *buf, size_t len, struct trove_wire_header *h,
                            struct trove_diag *diag)
{
    if (len < TROVE_WIRE_HEADER_SIZE)
        return trove_diag_set(diag, TROVE_ERR_TRUNCATED, 0,
                              "frame header truncated: %zu of 16 bytes", len);
    if (buf[0] != WIRE_MAGIC0 || buf[1] != WIRE_MAGIC1)
        return trove_diag_set(diag, TROVE_ERR_MAGIC, 0,
                              "not a trove wire frame (magic %02x %02x, expected 54 56)", buf[0],
                              buf[1]);
    h->format = buf[2];
    h->version = buf[3];
    h->count = trove__get_le32(buf + 4);
    h->payload_len = trove__get_le32(buf + 8);
    h->raw_len = trove__get_le32(buf + 12);
    if (h->version != TROVE_WIRE_VERSION &&
        !(h->format == TROVE_WIRE_NAMES && h->version == TROVE_WIRE_NAMES_VERSION))
        return trove_diag_set(diag, TROVE_ERR_VERSION, 3,
                              "wire frame version %u; this build reads version %u (and %u for "
                              "names frames)",
                              h->version, TROVE_WIRE_VERSION, TROVE_WIRE_NAMES_VERSION);
    if (h->format < TROVE_WIRE_RAW || h->format > TROVE_WIRE_MODEL)
        return trove_diag_set(diag, TROVE_ERR_FORMAT, 2, "unknown wire format id %u", h->format);
    if (h->payload_len > TROVE_WIRE_MAX_PAYLOAD)
        return trove_diag_set(diag, TROVE_ERR_LIMIT, 8, "frame payload of %u bytes over the %u limit",
                              h->payload_len, TROVE_WIRE_MAX_PAYLOAD);
    if (h->format == TROVE_WIRE_NAMES) {
        if (h->count > TROVE_WIRE_MAX_NAMES)
            return trove_diag_set(diag, TROVE_ERR_LIMIT, 4, "names frame of %u entries over the %u limit",
                                  h->count, TROVE_WIRE_MAX_NAMES);
        if (h->raw_len != 0)
            return trove_diag_set(diag, TROVE_ERR_CORRUPT, 12, "names frame with nonzero raw_len");
        return TROVE_OK;
    }
    if (h->format == TROVE_WIRE_ATTRS) {
        if (h->count > TROVE_WIRE_MAX_ATTRS)
            return trove_diag_set(diag, TROVE_ERR_LIMIT, 4, "attrs frame of %u rows over the %u limit",
                                  h->count, TROVE_WIRE_MAX_ATTRS);
        if (h->raw_len != 0)
            return trove_diag_set(diag, TROVE_ERR_CORRUPT, 12, "attrs frame with nonzero raw_len");
        /* the strings' count, then a byte at least for each of a row's event, key, type and
         * value */
        if (h->payload_len < 1 + 4 * (uint64_t)h->count)
            return trove_diag_set(diag, TROVE_ERR_CORRUPT, 8,
                                  "attrs frame of %u rows with a %u-byte payload", h->count,
                                  h->payload_len);
        return TROVE_OK;
    }
    if (h->count > TROVE_WIRE_MAX_EVENTS)
        return trove_diag_set(diag, TROVE_ERR_LIMIT, 4, "frame of %u %s over the %u limit",
                              h->count, h->format == TROVE_WIRE_SAMPLES ? "samples" : "events",
                              TROVE_WIRE_MAX_EVENTS);
    if (h->format == TROVE_WIRE_SAMPLES) {
        /* a deflate stream expands at most 1032:1; the body has its five counts at least */
        if (h->raw_len > TROVE_WIRE_MAX_PAYLOAD ||
            h->raw_len > (uint64_t)h->payload_len * 1032 + 64)
            return trove_diag_set(diag, TROVE_ERR_BOMB, 12,
                                  "samples frame declares %u inflated bytes from %u (limit %u, "
                                  "and 1032 times the payload)",
                                  h->raw_len, h->payload_len, TROVE_WIRE_MAX_PAYLOAD);
        if (h->raw_len < TROVE_WIRE_SAMPLES_MIN_BODY)
            return trove_diag_set(diag, TROVE_ERR_CORRUPT, 12,
                                  "samples frame declares a %u-byte body; it has %u at least",
                                  h->raw_len, TROVE_WIRE_SAMPLES_MIN_BODY);
        return TROVE_OK;
    }
    switch (h->format) {
    case TROVE_WIRE_RAW:
        if (h->payload_len != (uint64_t)h->count * TROVE_EVENT_SIZE || h->raw_len != 0)
            return trove_diag_set(diag, TROVE_ERR_CORRUPT, 8,
                                  "raw frame of %u events with a %u-byte payload", h->count,
                                  h->payload_len);
        break;
    case TROVE_WIRE_PACKED:
        if (h->payload_len > trove_wire_packed_bound(h->count) || h->raw_len != 0)
            return trove_diag_set(diag, TROVE_ERR_CORRUPT, 8,
                                  "packed frame of %u events with a %u-byte payload", h->count,
                                  h->payload_len);
        break;
    case TROVE_WIRE_COLUMNAR:
        /* raw_len 0: the columnar payload itself; else its deflate, of raw_len bytes */
        if (h->raw_len > trove__columnar_bound(h->count) || h->raw_len > TROVE_WIRE_MAX_PAYLOAD)
            return trove_diag_set(diag, TROVE_ERR_BOMB, 12,
                                  "columnar frame declares %u inflated bytes for %u events "
                                  "(limit %zu)",
                                  h->raw_len, h->count, trove__columnar_bound(h->count));
        if (h->raw_len == 0 && h->payload_len > trove__columnar_bound(h->count))
            return trove_diag_set(diag, TROVE_ERR_CORRUPT, 8,
                                  "columnar frame of %u events with a %u-byte payload",
                                  h->count, h->payload_len);
        break;
    case TROVE_WIRE_MODEL:
        /* the version, base, unit and 13 streams' two lengths, each a byte at least */
        if (h->raw_len != 0 || (h->count > 0 && h->payload_len < 30))
            return trove_diag_set(diag, TROVE_ERR_CORRUPT, 8,
                                  "model frame of %u events with a %u-byte payload and raw_len %u",
                                  h->count, h->payload_len, h->raw_len);
        break;
    case TROVE_WIRE_DEFLATE:
        if (h->raw_len > trove_wire_packed_bound(h->count) || h->raw_len > TROVE_WIRE_MAX_PAYLOAD)
            return trove_diag_set(diag, TROVE_ERR_BOMB, 12,
                                  "deflate frame declares %u inflated bytes for %u events "
                                  "(limit %zu)",
                                  h->raw_len, h->count, trove_wire_packed_bound(h->count));
        break;
    }
    return TROVE_OK;
}
