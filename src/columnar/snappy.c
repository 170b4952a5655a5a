/*
 * snappy.c: the Snappy block decoder (snappy.h has the format).
 */
#include "snappy.h"

#include <string.h>

#include "common/endian.h"
#include "common/fail.h"

/* Copy len bytes from off bytes back (1 <= off <= bytes already written before d). The
 * source and destination overlap when off < len: each pass copies the whole pattern
 * written so far, which doubles it, so no memcpy ever overlaps. */
static void copy_back(uint8_t *d, size_t off, size_t len)
{
    const uint8_t *s = d - off;
    while (len > off) {
        memcpy(d, s, off);
        d += off;
        len -= off;
        off *= 2;
    }
    memcpy(d, s, len);
}

int trove__snappy_decode(const uint8_t *src, size_t slen, uint8_t *dst, size_t dlen,
                         struct trove_diag *diag)
{
    const uint8_t *p = src, *end = src + slen;
    uint64_t n = 0;
    size_t o = 0;

    for (unsigned shift = 0;; shift += 7) {
        uint8_t b;
        if (p == end)
            return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, (uint64_t)(p - src),
                              "snappy: the block ends inside its length");
        b = *p++;
        if (shift == 28 && b > 0x0f)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, (uint64_t)(p - 1 - src),
                              "snappy: a block length of more than 32 bits");
        n |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    if (n != dlen)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "snappy: a block of %llu bytes where %zu are declared",
                          (unsigned long long)n, dlen);
    while (p < end) {
        const size_t at = (size_t)(p - src);
        const uint8_t tag = *p++;
        size_t len, off;

        if ((tag & 3) == 0) {
            len = tag >> 2;
            if (len >= 60) {
                const size_t nb = len - 59;
                if ((size_t)(end - p) < nb)
                    return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, at,
                                      "snappy: the block ends inside a literal's length");
                len = 0;
                for (size_t b = 0; b < nb; b++)
                    len |= (size_t)p[b] << (8 * b);
                p += nb;
            }
            len += 1;
            if (len > (size_t)(end - p))
                return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, at,
                                  "snappy: a literal of %zu bytes with %zu left in the "
                                  "block", len, (size_t)(end - p));
            if (len > dlen - o)
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                                  "snappy: a literal of %zu bytes past the %zu declared",
                                  len, dlen);
            memcpy(dst + o, p, len);
            p += len;
            o += len;
            continue;
        }
        if ((tag & 3) == 1) {
            if (p == end)
                return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, at,
                                  "snappy: the block ends inside a copy");
            len = 4 + ((tag >> 2) & 7);
            off = (size_t)(tag >> 5) << 8 | *p++;
        } else {
            const size_t nb = (tag & 3) == 2 ? 2 : 4;
            if ((size_t)(end - p) < nb)
                return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, at,
                                  "snappy: the block ends inside a copy");
            len = 1 + (size_t)(tag >> 2);
            off = nb == 2 ? trove__get_le16(p) : trove__get_le32(p);
            p += nb;
        }
        if (off == 0 || off > o)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "snappy: a copy from %zu bytes back at output byte %zu", off,
                              o);
        if (len > dlen - o)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "snappy: a copy of %zu bytes past the %zu declared", len,
                              dlen);
        copy_back(dst + o, off, len);
        o += len;
    }
    if (o != dlen)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, slen,
                          "snappy: the block decodes to %zu of its declared %zu bytes", o,
                          dlen);
    return TROVE_OK;
}
