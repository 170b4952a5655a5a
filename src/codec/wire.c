/*
 * wire.c: wire frames — the raw and deflate formats, the encoder and decoder objects, and
 * reading frames from a stream. The 16-byte header is in wire_frame.c, the packed payload
 * in wire_packed.c and the names payload in wire_names.c.
 *
 *   frame := header payload          (header: see wire_frame.c)
 *
 *   raw payload     := event[count], 32 bytes each (trove/event.h)
 *   packed payload  := see wire_packed.c
 *   deflate payload := raw deflate (RFC 1951, level 1) of a packed payload of raw_len bytes
 *   names payload   := see wire_names.c
 *   columnar payload := see wire_columnar.c; with raw_len != 0, the raw deflate (level 1)
 *                       of a columnar payload of raw_len bytes
 *
 * The header's sizes are checked (wire_frame.c) before any allocation. A deflate stream is
 * inflated into exactly raw_len bytes, so one that would inflate further fails as a bomb
 * without writing past its buffer; it must also end exactly at the payload's end.
 */
#include "wire_internal.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <errno.h>
#include <libdeflate.h>
#include <stdlib.h>

struct trove_wire_encoder {
    struct trove__thread_map map;
    struct trove_bytes scratch; /* the packed payload before deflate */
    struct trove__columnar_scratch columns;
    struct libdeflate_compressor *deflate;
    struct trove__model *model; /* format 8's tables (made at the first such frame) */
};

struct trove_wire_decoder {
    struct libdeflate_decompressor *inflate;
    uint8_t *scratch; /* inflated payload */
    size_t scratch_cap;
    uint64_t *threads; /* thread table, up to TROVE_WIRE_MAX_EVENTS entries */
    uint64_t *columns; /* columnar: threads' last starts and events' thread indexes */
    int generic;       /* TROVE_WIRE_GENERIC was set: the portable packed decoder only */
    struct trove__model *model; /* format 8's tables (made at the first such frame) */
};

int trove_wire_encoder_new(struct trove_wire_encoder **out)
{
    struct trove_wire_encoder *enc = trove__calloc(1, sizeof *enc);
    if (!enc)
        return TROVE_ERR_NOMEM;
    *out = enc;
    return TROVE_OK;
}

void trove_wire_encoder_free(struct trove_wire_encoder *enc)
{
    if (!enc)
        return;
    trove__thread_map_free(&enc->map);
    trove__columnar_free(&enc->columns);
    trove_bytes_free(&enc->scratch);
    if (enc->deflate)
        libdeflate_free_compressor(enc->deflate);
    trove__model_free(enc->model);
    free(enc);
}

static int encode_raw(const struct trove_event *ev, size_t n, uint8_t *p)
{
    for (size_t i = 0; i < n; i++)
        if (ev[i].pad != 0)
            return TROVE_ERR_INVALID;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, ev, n * TROVE_EVENT_SIZE);
#else
    for (size_t i = 0; i < n; i++, p += TROVE_EVENT_SIZE) {
        trove__put_le64(p, ev[i].start_ns);
        trove__put_le64(p + 8, ev[i].dur_ns);
        trove__put_le32(p + 16, ev[i].pid);
        trove__put_le32(p + 20, ev[i].tid);
        p[24] = ev[i].kind;
        p[25] = ev[i].depth;
        p[26] = ev[i].extra;
        p[27] = 0;
        trove__put_le32(p + 28, ev[i].name_id);
    }
#endif
    return TROVE_OK;
}

/* Deflate (libdeflate level 1) enc->scratch[0..len) into out past a frame header's room:
 * *payload gets the deflated length; out->len is left for the caller to advance. */
static int deflate_scratch(struct trove_wire_encoder *enc, size_t len, struct trove_bytes *out,
                           size_t *payload)
{
    size_t bound;
    int rc;

    if (!enc->deflate && !(enc->deflate = libdeflate_alloc_compressor(1)))
        return TROVE_ERR_NOMEM;
    bound = libdeflate_deflate_compress_bound(enc->deflate, len);
    if ((rc = trove_bytes_reserve(out, TROVE_WIRE_HEADER_SIZE + bound)) != TROVE_OK)
        return rc;
    *payload = libdeflate_deflate_compress(enc->deflate, enc->scratch.ptr, len,
                                           out->ptr + out->len + TROVE_WIRE_HEADER_SIZE, bound);
    if (*payload == 0 && len != 0)
        return TROVE_ERR_NOMEM; /* cannot happen with a bound-sized buffer */
    return TROVE_OK;
}

int trove_wire_encode(struct trove_wire_encoder *enc, int format, const struct trove_event *ev,
                      size_t n, struct trove_bytes *out)
{
    uint8_t *hdr;
    size_t payload = 0, packed_len;
    int rc;

    if (n > TROVE_WIRE_MAX_EVENTS || (n && !ev))
        return TROVE_ERR_INVALID;
    switch (format) {
    case TROVE_WIRE_RAW:
        if ((rc = trove_bytes_reserve(out, TROVE_WIRE_HEADER_SIZE + n * TROVE_EVENT_SIZE)) != TROVE_OK)
            return rc;
        hdr = out->ptr + out->len;
        if ((rc = encode_raw(ev, n, hdr + TROVE_WIRE_HEADER_SIZE)) != TROVE_OK)
            return rc;
        payload = n * TROVE_EVENT_SIZE;
        trove__wire_put_header(hdr, format, TROVE_WIRE_VERSION, (uint32_t)n, (uint32_t)payload, 0);
        break;
    case TROVE_WIRE_PACKED:
        if ((rc = trove_bytes_reserve(out, TROVE_WIRE_HEADER_SIZE + trove_wire_packed_bound(n))) != TROVE_OK)
            return rc;
        hdr = out->ptr + out->len;
        payload = trove__packed_encode(&enc->map, ev, n, hdr + TROVE_WIRE_HEADER_SIZE, &rc);
        if (rc != TROVE_OK)
            return rc;
        trove__wire_put_header(hdr, format, TROVE_WIRE_VERSION, (uint32_t)n, (uint32_t)payload, 0);
        break;
    case TROVE_WIRE_DEFLATE:
        enc->scratch.len = 0;
        if ((rc = trove_bytes_reserve(&enc->scratch, trove_wire_packed_bound(n))) != TROVE_OK)
            return rc;
        packed_len = trove__packed_encode(&enc->map, ev, n, enc->scratch.ptr, &rc);
        if (rc != TROVE_OK || (rc = deflate_scratch(enc, packed_len, out, &payload)) != TROVE_OK)
            return rc;
        hdr = out->ptr + out->len;
        trove__wire_put_header(hdr, format, TROVE_WIRE_VERSION, (uint32_t)n, (uint32_t)payload, (uint32_t)packed_len);
        break;
    case TROVE_WIRE_COLUMNAR:
        if ((rc = trove_bytes_reserve(out, TROVE_WIRE_HEADER_SIZE + trove__columnar_bound(n))) != TROVE_OK)
            return rc;
        hdr = out->ptr + out->len;
        rc = trove__columnar_encode(&enc->columns, &enc->map, ev, n, hdr + TROVE_WIRE_HEADER_SIZE,
                                    &payload);
        if (rc != TROVE_OK)
            return rc;
        trove__wire_put_header(hdr, format, TROVE_WIRE_VERSION, (uint32_t)n, (uint32_t)payload, 0);
        break;
    case TROVE_WIRE_COLUMNAR_DEFLATE:
        enc->scratch.len = 0;
        if ((rc = trove_bytes_reserve(&enc->scratch, trove__columnar_bound(n))) != TROVE_OK)
            return rc;
        if ((rc = trove__columnar_encode(&enc->columns, &enc->map, ev, n, enc->scratch.ptr,
                                         &packed_len)) != TROVE_OK ||
            (rc = deflate_scratch(enc, packed_len, out, &payload)) != TROVE_OK)
            return rc;
        hdr = out->ptr + out->len;
        /* a columnar payload is never empty, so raw_len != 0 says "deflated" */
        trove__wire_put_header(hdr, TROVE_WIRE_COLUMNAR, TROVE_WIRE_VERSION, (uint32_t)n,
                               (uint32_t)payload, (uint32_t)packed_len);
        break;
    case TROVE_WIRE_MODEL: {
        size_t at = out->len;
        if (!enc->model && (rc = trove__model_new(&enc->model)) != TROVE_OK)
            return rc;
        if ((rc = trove_bytes_reserve(out, TROVE_WIRE_HEADER_SIZE)) != TROVE_OK)
            return rc;
        out->len += TROVE_WIRE_HEADER_SIZE; /* the payload goes after the header's room */
        rc = trove__model_encode(enc->model, ev, n, TROVE_WIRE_MODEL_LEVEL, out);
        payload = out->len - at - TROVE_WIRE_HEADER_SIZE;
        out->len = at;
        if (rc == TROVE_OK && payload > TROVE_WIRE_MAX_PAYLOAD)
            rc = TROVE_ERR_LIMIT;
        if (rc != TROVE_OK)
            return rc;
        trove__wire_put_header(out->ptr + at, format, TROVE_WIRE_VERSION, (uint32_t)n,
                               (uint32_t)payload, 0);
        break;
    }
    default:
        return TROVE_ERR_INVALID;
    }
    out->len += TROVE_WIRE_HEADER_SIZE + payload;
    return TROVE_OK;
}

int trove_wire_decoder_new(struct trove_wire_decoder **out)
{
    struct trove_wire_decoder *dec = trove__calloc(1, sizeof *dec);
    if (!dec)
        return TROVE_ERR_NOMEM;
    dec->generic = getenv("TROVE_WIRE_GENERIC") != NULL;
    *out = dec;
    return TROVE_OK;
}

void trove_wire_decoder_free(struct trove_wire_decoder *dec)
{
    if (!dec)
        return;
    if (dec->inflate)
        libdeflate_free_decompressor(dec->inflate);
    free(dec->scratch);
    free(dec->threads);
    free(dec->columns);
    trove__model_free(dec->model);
    free(dec);
}

static void decode_raw(const uint8_t *p, uint32_t n, struct trove_event *ev)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(ev, p, (size_t)n * TROVE_EVENT_SIZE);
#else
    for (uint32_t i = 0; i < n; i++, p += TROVE_EVENT_SIZE) {
        ev[i].start_ns = trove__get_le64(p);
        ev[i].dur_ns = trove__get_le64(p + 8);
        ev[i].pid = trove__get_le32(p + 16);
        ev[i].tid = trove__get_le32(p + 20);
        ev[i].kind = p[24];
        ev[i].depth = p[25];
        ev[i].extra = p[26];
        ev[i].pad = p[27];
        ev[i].name_id = trove__get_le32(p + 28);
    }
#endif
}

/* Inflate a deflate frame's payload into the decoder's scratch; exactly raw_len bytes. */
static int inflate_payload(struct trove_wire_decoder *dec, const uint8_t *p,
                           const struct trove_wire_header *h, struct trove_diag *diag)
{
    size_t got = 0, used = 0;
    enum libdeflate_result r;

    if (!dec->inflate && !(dec->inflate = libdeflate_alloc_decompressor()))
        return TROVE_ERR_NOMEM;
    /* At least one byte, so that an empty payload still has a real buffer behind it. */
    if (h->raw_len > dec->scratch_cap || !dec->scratch) {
        size_t cap = h->raw_len ? h->raw_len : 1;
        uint8_t *s = trove__realloc(dec->scratch, cap);
        if (!s)
            return TROVE_ERR_NOMEM;
        dec->scratch = s;
        dec->scratch_cap = cap;
    }
    r = libdeflate_deflate_decompress_ex(dec->inflate, p, h->payload_len, dec->scratch, h->raw_len,
                                         &used, &got);
    if (r == LIBDEFLATE_INSUFFICIENT_SPACE)
        return TROVE_FAIL(diag, TROVE_ERR_BOMB, TROVE_WIRE_HEADER_SIZE,
                          "%s frame inflates past its declared %u bytes",
                          trove_wire_format_name(h->format), h->raw_len);
    if (r != LIBDEFLATE_SUCCESS)
        return TROVE_FAIL(diag, TROVE_ERR_INFLATE, TROVE_WIRE_HEADER_SIZE,
                          "%s frame: malformed deflate stream", trove_wire_format_name(h->format));
    if (got != h->raw_len)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, TROVE_WIRE_HEADER_SIZE,
                          "%s frame inflates to %zu bytes, header says %u",
                          trove_wire_format_name(h->format), got, h->raw_len);
    if (used != h->payload_len)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, TROVE_WIRE_HEADER_SIZE + used,
                          "%s frame: %zu bytes after the end of the deflate stream",
                          trove_wire_format_name(h->format), h->payload_len - used);
    return TROVE_OK;
}

int trove_wire_decode(struct trove_wire_decoder *dec, const uint8_t *buf, size_t len,
                      struct trove_event *events, size_t cap, struct trove_names *names,
                      struct trove_wire_frame *out, struct trove_diag *diag)
{
    struct trove_wire_header h = {0};
    const uint8_t *payload;
    int rc;

    memset(out, 0, sizeof *out);
    if (!buf)
        len = 0; /* nothing to read: the header check says so */
    if ((rc = trove_wire_parse_header(buf, len, &h, diag)) != TROVE_OK)
        return rc;
    payload = buf + TROVE_WIRE_HEADER_SIZE; /* buf holds the header now */
    if (len - TROVE_WIRE_HEADER_SIZE < h.payload_len)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "%s frame truncated: payload of %u bytes, %zu present",
                          trove_wire_format_name(h.format), h.payload_len,
                          len - TROVE_WIRE_HEADER_SIZE);
    out->format = h.format;
    out->frame_len = TROVE_WIRE_HEADER_SIZE + (size_t)h.payload_len;
    if (h.format == TROVE_WIRE_NAMES) {
        rc = trove__names_decode(payload, h.payload_len, h.count, h.version, names,
                                 TROVE_WIRE_HEADER_SIZE, diag);
        if (rc == TROVE_OK)
            out->n_names = h.count;
        return rc;
    }
    if (h.format == TROVE_WIRE_SAMPLES || h.format == TROVE_WIRE_ATTRS)
        return TROVE_OK; /* trove_profile_decode, trove_attrs_wire_decode read them */
    if (h.count > cap)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 4,
                          "frame of %u events is larger than the caller's %zu-event buffer",
                          h.count, cap);
    if (h.format == TROVE_WIRE_RAW) {
        decode_raw(payload, h.count, events);
        out->n_events = h.count;
        return TROVE_OK;
    }
    if (h.format == TROVE_WIRE_MODEL) {
        if (!dec->model && (rc = trove__model_new(&dec->model)) != TROVE_OK)
            return rc;
        rc = trove__model_decode(dec->model, payload, h.payload_len, h.count, events,
                                 TROVE_WIRE_HEADER_SIZE, diag);
        if (rc == TROVE_OK)
            out->n_events = h.count;
        return rc;
    }
    if (!dec->threads && !(dec->threads = trove__malloc(TROVE_WIRE_MAX_EVENTS * sizeof *dec->threads)))
        return TROVE_ERR_NOMEM;
    if (h.format == TROVE_WIRE_COLUMNAR) {
        if (!dec->columns &&
            !(dec->columns = trove__malloc(2 * TROVE_WIRE_MAX_EVENTS * sizeof *dec->columns)))
            return TROVE_ERR_NOMEM;
        if (h.raw_len) { /* the payload is the deflate of the columnar payload */
            if ((rc = inflate_payload(dec, payload, &h, diag)) != TROVE_OK)
                return rc;
            rc = trove__columnar_decode(dec->scratch, h.raw_len, h.count, events, dec->threads,
                                        dec->columns, TROVE_WIRE_HEADER_SIZE, diag);
            if (rc != TROVE_OK && diag)
                diag->offset = TROVE_WIRE_HEADER_SIZE;
        } else {
            rc = trove__columnar_decode(payload, h.payload_len, h.count, events, dec->threads,
                                        dec->columns, TROVE_WIRE_HEADER_SIZE, diag);
        }
    } else if (h.format == TROVE_WIRE_DEFLATE) {
        if ((rc = inflate_payload(dec, payload, &h, diag)) != TROVE_OK)
            return rc;
        /* Offsets inside the inflated payload have no place in buf; report the payload's. */
        rc = trove__packed_decode(dec->scratch, h.raw_len, h.count, events, dec->threads,
                                  TROVE_WIRE_HEADER_SIZE, dec->generic, diag);
        if (rc != TROVE_OK && diag)
            diag->offset = TROVE_WIRE_HEADER_SIZE;
    } else {
        rc = trove__packed_decode(payload, h.payload_len, h.count, events, dec->threads,
                                  TROVE_WIRE_HEADER_SIZE, dec->generic, diag);
    }
    if (rc == TROVE_OK)
        out->n_events = h.count;
    return rc;
}

int trove_wire_read_frame(FILE *f, struct trove_bytes *frame, uint64_t *offset,
                          struct trove_diag *diag)
{
    struct trove_wire_header h = {0};
    uint64_t at = offset ? *offset : 0;
    size_t got;
    int rc;

    frame->len = 0;
    if ((rc = trove_bytes_reserve(frame, TROVE_WIRE_HEADER_SIZE)) != TROVE_OK)
        return rc;
    got = fread(frame->ptr, 1, TROVE_WIRE_HEADER_SIZE, f);
    if (got == 0 && !ferror(f))
        return 0;
    if (ferror(f))
        return TROVE_FAIL(diag, errno ? -errno : -EIO, at, "read error");
    if ((rc = trove_wire_parse_header(frame->ptr, got, &h, diag)) != TROVE_OK) {
        if (diag)
            diag->offset += at;
        if (rc == TROVE_ERR_TRUNCATED && diag)
            snprintf(diag->msg, sizeof diag->msg,
                     "stream ends inside a frame header (%zu of 16 bytes)", got);
        return rc;
    }
    frame->len = TROVE_WIRE_HEADER_SIZE;
    if ((rc = trove_bytes_reserve(frame, h.payload_len)) != TROVE_OK)
        return rc;
    got = fread(frame->ptr + frame->len, 1, h.payload_len, f);
    if (ferror(f))
        return TROVE_FAIL(diag, errno ? -errno : -EIO, at, "read error");
    if (got != h.payload_len)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, at + TROVE_WIRE_HEADER_SIZE + got,
                          "stream ends inside a %s frame: %zu of %u payload bytes",
                          trove_wire_format_name(h.format), got, h.payload_len);
    frame->len += got;
    if (offset)
        *offset = at + frame->len;
    return 1;
}
