/*
 * varint.h (internal): LEB128 varints and zigzag, shared by every encoder in trove.
 *
 * A varint stores 7 bits per byte, least significant group first, with the high bit set on
 * every byte but the last. A u64 takes at most 10 bytes, a u32 at most 5. Readers take an
 * end pointer and never read past it; they reject a varint that runs longer than its field
 * allows or whose last byte carries bits above the field's width.
 */
#ifndef TROVE_VARINT_H
#define TROVE_VARINT_H

#include <stdint.h>

#define TROVE_VARINT64_MAX 10
#define TROVE_VARINT32_MAX 5

static inline uint64_t trove_zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t trove_unzigzag64(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Write v at p (room for TROVE_VARINT64_MAX bytes); return the byte after it. */
static inline uint8_t *trove_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline unsigned trove_varint_len(uint64_t v)
{
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/*
 * Read a varint of at most `max_bytes` bytes and at most `bits` significant bits from
 * [p, end). Returns the byte after it, or NULL: *err_out is TROVE_ERR_TRUNCATED-style 1 when
 * the input ended inside the varint, 2 when the varint is too long or too wide.
 */
static inline const uint8_t *trove_get_varint(const uint8_t *p, const uint8_t *end, unsigned bits,
                                              uint64_t *v_out, int *why_out)
{
    uint64_t v = 0;
    unsigned shift = 0;
    unsigned max_bytes = (bits + 6) / 7;
    for (unsigned i = 0; i < max_bytes; i++) {
        if (p >= end) {
            *why_out = 1;
            return 0;
        }
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            /* The last byte may not carry bits above `bits`. */
            if (i == max_bytes - 1 && bits % 7 && (b >> (bits % 7)) != 0) {
                *why_out = 2;
                return 0;
            }
            *v_out = v;
            return p;
        }
        shift += 7;
    }
    *why_out = 2;
    return 0;
}

#endif
