/*
 * protobuf.h (internal to src/codec): the protocol buffers wire format, as much as the
 * Perfetto writer and reader need — written from the encoding rules
 * (protobuf.dev/programming-guides/encoding), not from any generated code.
 *
 *   field := tag value             tag = varint (number << 3 | wire type)
 *   wire type 0  varint            LEB128, at most 10 bytes
 *   wire type 1  fixed64           8 bytes little-endian (double, fixed64)
 *   wire type 2  length-delimited  varint length, then that many bytes (string, bytes,
 *                                  an embedded message, a packed repeated field)
 *   wire type 5  fixed32           4 bytes little-endian
 *   (wire types 3 and 4, groups, are deprecated and refused)
 *
 * The reader walks one message's bytes: every tag, varint and length is checked against
 * the end of that message before it is used, so an embedded message is read with the same
 * cursor over its own bytes and nothing is ever read past the input. Field numbers are 1 ..
 * 2^29 - 1. The writer appends to a trove_bytes; an embedded message is built in a buffer of
 * its own and appended with its length.
 */
#ifndef TROVE_PROTOBUF_H
#define TROVE_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/endian.h"
#include "common/varint.h"
#include "trove/common.h"

enum { TROVE__PB_VARINT = 0, TROVE__PB_FIXED64 = 1, TROVE__PB_LEN = 2, TROVE__PB_FIXED32 = 5 };

#define TROVE__PB_MAX_FIELD ((1u << 29) - 1)

/* ---- writing ---------------------------------------------------------------------------- */

static inline int trove__pb_varint(struct trove_bytes *b, uint64_t v)
{
    int rc = trove_bytes_reserve(b, TROVE_VARINT64_MAX);
    if (rc != TROVE_OK)
        return rc;
    b->len = (size_t)(trove_put_varint(b->ptr + b->len, v) - b->ptr);
    return TROVE_OK;
}

static inline int trove__pb_tag(struct trove_bytes *b, uint32_t field, unsigned wt)
{
    return trove__pb_varint(b, (uint64_t)field << 3 | wt);
}

/* A varint field (uint32/64, int64, bool, enum). */
static inline int trove__pb_uint(struct trove_bytes *b, uint32_t field, uint64_t v)
{
    int rc = trove__pb_tag(b, field, TROVE__PB_VARINT);
    return rc != TROVE_OK ? rc : trove__pb_varint(b, v);
}

/* An int32 field: a negative value is sign-extended to 64 bits (10 bytes), as protobuf
 * writes int32. */
static inline int trove__pb_int32(struct trove_bytes *b, uint32_t field, int32_t v)
{
    return trove__pb_uint(b, field, (uint64_t)(int64_t)v);
}

static inline int trove__pb_fixed64(struct trove_bytes *b, uint32_t field, uint64_t v)
{
    int rc = trove__pb_tag(b, field, TROVE__PB_FIXED64);
    if (rc == TROVE_OK)
        rc = trove_bytes_reserve(b, 8);
    if (rc != TROVE_OK)
        return rc;
    trove__put_le64(b->ptr + b->len, v);
    b->len += 8;
    return TROVE_OK;
}

/* A length-delimited field: string, bytes, or an embedded message already encoded. */
static inline int trove__pb_bytes(struct trove_bytes *b, uint32_t field, const void *p, size_t n)
{
    int rc = trove__pb_tag(b, field, TROVE__PB_LEN);
    if (rc == TROVE_OK)
        rc = trove__pb_varint(b, n);
    if (rc == TROVE_OK)
        rc = trove_bytes_append(b, p, n);
    return rc;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* The bytes of one message still to read. */
struct trove__pb {
    const uint8_t *p, *end;
};

struct trove__pb_field {
    uint32_t num;
    uint8_t wt;
    uint64_t v;             /* varint, fixed64 and fixed32 values */
    const uint8_t *data;    /* wire type 2: its bytes */
    size_t len;
};

/* Why trove__pb_next stopped, for the caller's message. */
enum { TROVE__PB_END = 0, TROVE__PB_OK = 1 };

/*
 * The next field of m into *f: TROVE__PB_OK, TROVE__PB_END at the message's end, or an error
 * (TROVE_ERR_TRUNCATED: a field runs past the end; TROVE_ERR_VARINT: a varint over 10 bytes;
 * TROVE_ERR_CORRUPT: field number 0 or over 2^29 - 1, a group or an unknown wire type).
 * On error m is where the bad field starts, for the caller's offset.
 */
static inline int trove__pb_next(struct trove__pb *m, struct trove__pb_field *f)
{
    uint64_t tag, v;
    int why = 0;
    const uint8_t *q;

    if (m->p >= m->end)
        return TROVE__PB_END;
    if (!(q = trove_get_varint(m->p, m->end, 64, &tag, &why)))
        return why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT;
    if ((tag >> 3) == 0 || (tag >> 3) > TROVE__PB_MAX_FIELD)
        return TROVE_ERR_CORRUPT;
    f->num = (uint32_t)(tag >> 3);
    f->wt = (uint8_t)(tag & 7);
    f->data = NULL;
    f->len = 0;
    f->v = 0;
    switch (f->wt) {
    case TROVE__PB_VARINT:
        if (!(q = trove_get_varint(q, m->end, 64, &v, &why)))
            return why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT;
        f->v = v;
        break;
    case TROVE__PB_FIXED64:
        if (m->end - q < 8)
            return TROVE_ERR_TRUNCATED;
        f->v = trove__get_le64(q);
        q += 8;
        break;
    case TROVE__PB_FIXED32:
        if (m->end - q < 4)
            return TROVE_ERR_TRUNCATED;
        f->v = trove__get_le32(q);
        q += 4;
        break;
    case TROVE__PB_LEN:
        if (!(q = trove_get_varint(q, m->end, 64, &v, &why)))
            return why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT;
        if (v > (uint64_t)(m->end - q))
            return TROVE_ERR_TRUNCATED;
        f->data = q;
        f->len = (size_t)v;
        q += v;
        break;
    default:
        return TROVE_ERR_CORRUPT;
    }
    m->p = q;
    return TROVE__PB_OK;
}

/* A cursor over the bytes of an embedded message (a wire type 2 field). */
static inline struct trove__pb trove__pb_sub(const struct trove__pb_field *f)
{
    struct trove__pb m = {f->data, f->data + f->len};
    return m;
}

#endif
