/*
 * snappy.c: the Snappy block format, decoded (snappy.h has the contract). The format, as
 * Google's format_description.txt gives it:
 *
 *   varint32 length | element ...        an element is a tag byte and what its low 2 bits say:
 *     00 literal   length - 1 in the tag's top 6 bits, or (60..63) in the next 1..4 bytes LE
 *     01 copy      length 4 + bits 2..4, offset bits 5..7 << 8 | the next byte
 *     10 copy      length 1 + bits 2..7, offset the next 2 bytes LE
 *     11 copy      length 1 + bits 2..7, offset the next 4 bytes LE
 *   a copy repeats `length` bytes from `offset` back (offset 0 and offsets before the start
 *   are errors; length over offset repeats what it just wrote).
 *
 * The length is read first, so that a block that does not match its page is refused before
 * any pass over it; the elements are then walked twice, once to validate the whole block
 * (nothing written) and once to write it, so an error leaves dst as it was. The length's
 * varint refuses what libsnappy's does: a block that ends inside it, and a fifth byte over
 * 0x0f (more than 32 bits).
 */
#include "snappy.h"

#include <inttypes.h>
#include <string.h>

#include "common/fail.h"

/* Walk the elements of src[0..slen) (the length already read) into dlen bytes, writing to
 * dst when it is not NULL. 0, or -1 with why (and where, the element's offset) set. */
static int walk(const uint8_t *src, size_t slen, size_t pos, uint8_t *dst, size_t dlen,
                const char **why, size_t *where)
{
    size_t out = 0;

    while (pos < slen) {
        const uint8_t tag = src[pos];
        size_t len, off, at = pos++;
        *where = at;
        if ((tag & 3) == 0) {
            len = tag >> 2;
            if (len >= 60) {
                const size_t k = len - 59; /* 1..4 bytes of length - 1 */
                if (slen - pos < k)
                    return *why = "a literal's length is cut short", -1;
                len = 0;
                for (size_t i = 0; i < k; i++)
                    len |= (size_t)src[pos + i] << (8 * i);
                pos += k;
            }
            len += 1;
            if (slen - pos < len)
                return *why = "a literal runs past the block", -1;
            if (dlen - out < len)
                return *why = "a literal runs past the declared length", -1;
            if (dst)
                memcpy(dst + out, src + pos, len);
            pos += len;
            out += len;
            continue;
        }
        if ((tag & 3) == 1) {
            if (slen - pos < 1)
                return *why = "a copy is cut short", -1;
            len = 4 + ((tag >> 2) & 7);
            off = (size_t)(tag >> 5) << 8 | src[pos];
            pos += 1;
        } else if ((tag & 3) == 2) {
            if (slen - pos < 2)
                return *why = "a copy is cut short", -1;
            len = 1 + (tag >> 2);
            off = (size_t)src[pos] | (size_t)src[pos + 1] << 8;
            pos += 2;
        } else {
            if (slen - pos < 4)
                return *why = "a copy is cut short", -1;
            len = 1 + (tag >> 2);
            off = (size_t)src[pos] | (size_t)src[pos + 1] << 8 | (size_t)src[pos + 2] << 16 |
                  (size_t)src[pos + 3] << 24;
            pos += 4;
        }
        if (off == 0 || off > out)
            return *why = off == 0 ? "a copy of offset 0" : "a copy from before the start", -1;
        if (dlen - out < len)
            return *why = "a copy runs past the declared length", -1;
        if (dst)
            for (size_t i = 0; i < len; i++) /* byte by byte: a copy may overlap itself */
                dst[out + i] = dst[out + i - off];
        out += len;
    }
    *where = slen;
    if (out != dlen)
        return *why = "the elements end short of the declared length", -1;
    return 0;
}

int trove__snappy_decode(const uint8_t *src, size_t slen, uint8_t *dst, size_t dlen,
                         struct trove_diag *diag)
{
    uint64_t n = 0;
    size_t pos = 0, where = 0;
    const char *why = "";

    for (;;) {
        if (pos == slen)
            return slen < 5 ? TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, slen,
                                         "snappy: the block ends inside its length")
                            : TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 4,
                                         "snappy: a block length of more than 32 bits");
        const uint8_t b = src[pos];
        if (pos == 4) {
            if (b > 0x0f)
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 4,
                                  "snappy: a block length of more than 32 bits");
            n |= (uint64_t)b << 28;
            pos++;
            break;
        }
        n |= (uint64_t)(b & 0x7f) << (7 * pos);
        pos++;
        if (b < 0x80)
            break;
    }
    if (n != dlen)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "snappy: a block of %" PRIu64 " bytes where %zu are declared", n,
                          dlen);
    if (walk(src, slen, pos, NULL, dlen, &why, &where) != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "snappy: the block of %zu bytes does not decode to its %zu (%s, at "
                          "byte %zu)",
                          slen, dlen, why, where);
    walk(src, slen, pos, dst, dlen, &why, &where); /* valid: cannot fail now */
    return TROVE_OK;
}
