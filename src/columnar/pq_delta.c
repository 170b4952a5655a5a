/*
 * pq_delta.c: Parquet's DELTA_BINARY_PACKED (pq_encoding.h; Encodings.md of
 * apache/parquet-format), in which the writer stores the nanosecond columns: sorted
 * timestamps and short durations take a few bits a value.
 *
 * DELTA_BINARY_PACKED:
 *
 *   header := ULEB block_size (128k) | ULEB miniblocks (m; block_size / m = 32j) |
 *             ULEB total count | zigzag ULEB first value
 *   block  := zigzag ULEB min delta | m width bytes | m miniblocks of block_size / m values
 *             of (delta - min delta), each bit-packed LSB first at its width
 *
 *   A block holds block_size deltas (value[i] - value[i-1], wrapping: in 32 bits for INT32,
 *   64 for INT64); the last block stops after the last miniblock that holds a delta (that
 *   miniblock is padded to full length; later ones have no bytes, whatever their width).
 *   This encoder writes block 128 and 4 miniblocks of 32, zero padding and zero widths.
 *
 * Why it is built this way: a miniblock is a whole number of 32-value units, each packed or
 * unpacked by one of pq_bitpack.c's kernels per width. The decoder walks its input twice:
 * once only to check every header and bound (cheap: a few bytes per 128 values), then again
 * to write the outputs, so a failed decode leaves its outputs untouched. All delta
 * arithmetic is in unsigned types (wrapping is the format's rule, and signed overflow would
 * be undefined).
 *
 * Thread safety: no state; every function is safe to call concurrently on distinct outputs.
 */
#include "pq_encoding.h"

#include "pq_bitpack.h"

#include "common/varint.h"
#include "common/fail.h"

#include <assert.h>
#include <inttypes.h>

/* The largest delta block this decoder accepts (values); the format has no limit, writers
 * use 128 (parquet-mr, Arrow) to a few thousand. */
#define DELTA_MAX_BLOCK (1u << 20)
/* The encoder's delta layout. */
#define DELTA_BLOCK 128u
#define DELTA_MINIBLOCKS 4u
#define DELTA_MINI (DELTA_BLOCK / DELTA_MINIBLOCKS)

/* What the decoder reads instead of a NULL buffer of length 0. */
static const uint8_t no_bytes[1];

int trove__pq_delta_encode(const int64_t *v, size_t n, int is32, struct trove_bytes *out)
{
    size_t old_len = out ? out->len : 0;
    uint64_t rel[DELTA_BLOCK];
    uint8_t *p;
    int rc = TROVE_OK;

    if (!out || (n > 0 && !v)) {
        rc = TROVE_ERR_INVALID;
        goto out;
    }
    if (is32)
        for (size_t i = 0; i < n; i++)
            if (v[i] < INT32_MIN || v[i] > INT32_MAX) {
                rc = TROVE_ERR_INVALID;
                goto out;
            }
    rc = trove_bytes_reserve(out, 4 + 2 * TROVE_VARINT64_MAX);
    if (rc != TROVE_OK)
        goto out;
    p = out->ptr + out->len;
    p = trove_put_varint(p, DELTA_BLOCK);
    p = trove_put_varint(p, DELTA_MINIBLOCKS);
    p = trove_put_varint(p, (uint64_t)n);
    p = trove_put_varint(p, trove_zigzag64(n > 0 ? v[0] : 0));
    out->len = (size_t)(p - out->ptr);

    for (size_t b = 1; b < n; b += DELTA_BLOCK) {
        size_t k = n - b < DELTA_BLOCK ? n - b : DELTA_BLOCK, bytes = TROVE_VARINT64_MAX +
                                                                      DELTA_MINIBLOCKS;
        unsigned width[DELTA_MINIBLOCKS];
        int64_t min;
        /* Deltas as signed values of the column's width (wrapping), then relative to min. */
        for (size_t i = 0; i < k; i++) {
            uint64_t d = (uint64_t)v[b + i] - (uint64_t)v[b + i - 1];
            rel[i] = is32 ? (uint64_t)(int64_t)(int32_t)(uint32_t)d : d;
        }
        min = (int64_t)rel[0];
        for (size_t i = 1; i < k; i++)
            if ((int64_t)rel[i] < min)
                min = (int64_t)rel[i];
        for (size_t i = 0; i < k; i++)
            rel[i] -= (uint64_t)min;
        for (size_t i = k; i < DELTA_BLOCK; i++)
            rel[i] = 0;
        for (unsigned m = 0; m < DELTA_MINIBLOCKS; m++) {
            uint64_t any = 0;
            if ((size_t)m * DELTA_MINI < k)
                for (unsigned i = 0; i < DELTA_MINI; i++)
                    any |= rel[m * DELTA_MINI + i];
            width[m] = trove__pq_width64(any);
            assert(!is32 || width[m] <= 32);
            bytes += 4 * width[m];
        }
        rc = trove_bytes_reserve(out, bytes);
        if (rc != TROVE_OK)
            goto out;
        p = out->ptr + out->len;
        p = trove_put_varint(p, trove_zigzag64(min));
        for (unsigned m = 0; m < DELTA_MINIBLOCKS; m++)
            *p++ = (uint8_t)width[m];
        for (unsigned m = 0; m < DELTA_MINIBLOCKS && (size_t)m * DELTA_MINI < k; m++) {
            if (width[m] <= 32) {
                uint32_t r32[DELTA_MINI];
                for (unsigned i = 0; i < DELTA_MINI; i++)
                    r32[i] = (uint32_t)rel[m * DELTA_MINI + i];
                trove__pq_pack32_tab[width[m]](r32, p);
                p += 4 * width[m];
            } else {
                p = trove__pq_pack32_u64(rel + m * DELTA_MINI, width[m], p);
            }
        }
        out->len = (size_t)(p - out->ptr);
    }
    rc = TROVE_OK;
out:
    if (rc != TROVE_OK) {
        if (out)
            out->len = old_len;
    }
    return rc;
}

/* Read a ULEB128 of up to 64 bits at *pp for the delta decoder; on failure set diag. */
static int delta_varint(const uint8_t *buf, size_t len, const uint8_t **pp, uint64_t *v_out,
                        const char *what, struct trove_diag *diag)
{
    int why = 0;
    const uint8_t *q = trove_get_varint(*pp, buf + len, 64, v_out, &why);
    size_t at = (size_t)(*pp - buf);

    if (!q) {
        if (why == 1)
            return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                              "DELTA_BINARY_PACKED data ends inside the %s at byte %zu; "
                              "the page was cut short",
                              what, at);
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                          "DELTA_BINARY_PACKED %s at byte %zu is a varint longer than 10 "
                          "bytes or over 64 bits",
                          what, at);
    }
    *pp = q;
    return TROVE_OK;
}

/* Walk a DELTA_BINARY_PACKED stream of n values: check everything and, when out is not
 * NULL, write the values. */
static int delta_walk(const uint8_t *buf, size_t len, size_t n, int is32, int64_t *out,
                      size_t *used_out, struct trove_diag *diag)
{
    const uint8_t *p = buf, *end = buf + len, *field;
    const unsigned max_w = is32 ? 32 : 64;
    uint64_t block, mini, count, first, cur, rel[32];
    size_t per_mini, pos;
    int rc;

    field = p;
    rc = delta_varint(buf, len, &p, &block, "block size", diag);
    if (rc != TROVE_OK)
        return rc;
    if (block == 0 || block % 128 != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, (size_t)(field - buf),
                          "DELTA_BINARY_PACKED block size %" PRIu64 " is not a positive "
                          "multiple of 128",
                          block);
    if (block > DELTA_MAX_BLOCK)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, (size_t)(field - buf),
                          "DELTA_BINARY_PACKED block size %" PRIu64 " is over this "
                          "reader's limit of %u values",
                          block, DELTA_MAX_BLOCK);
    field = p;
    rc = delta_varint(buf, len, &p, &mini, "miniblock count", diag);
    if (rc != TROVE_OK)
        return rc;
    if (mini == 0 || block % mini != 0 || (block / mini) % 32 != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, (size_t)(field - buf),
                          "DELTA_BINARY_PACKED block of %" PRIu64 " values cannot have %"
                          PRIu64 " miniblocks (each must hold a multiple of 32 values)",
                          block, mini);
    per_mini = (size_t)(block / mini);
    field = p;
    rc = delta_varint(buf, len, &p, &count, "value count", diag);
    if (rc != TROVE_OK)
        return rc;
    if (count != (uint64_t)n)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, (size_t)(field - buf),
                          "DELTA_BINARY_PACKED header counts %" PRIu64 " values where the "
                          "page has %zu",
                          count, n);
    rc = delta_varint(buf, len, &p, &first, "first value", diag);
    if (rc != TROVE_OK)
        return rc;
    cur = (uint64_t)trove_unzigzag64(first);
    if (out && n > 0)
        out[0] = is32 ? (int64_t)(int32_t)(uint32_t)cur : (int64_t)cur;

    for (pos = n > 0 ? 1 : 0; pos < n;) {
        const uint8_t *widths;
        uint64_t zmin, min;
        rc = delta_varint(buf, len, &p, &zmin, "min delta", diag);
        if (rc != TROVE_OK)
            return rc;
        min = (uint64_t)trove_unzigzag64(zmin);
        if ((uint64_t)(end - p) < mini)
            return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                              "DELTA_BINARY_PACKED data ends inside the %" PRIu64
                              " miniblock widths at byte %zu; the page was cut short",
                              mini, (size_t)(p - buf));
        widths = p;
        p += mini;
        for (size_t m = 0; m < mini && pos < n; m++) {
            const unsigned w = widths[m];
            size_t nbytes = per_mini / 8 * w, take = n - pos < per_mini ? n - pos : per_mini;
            if (w > max_w)
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, (size_t)(widths + m - buf),
                                  "DELTA_BINARY_PACKED miniblock width %u at byte %zu is "
                                  "over %u bits, the widest an %s delta can need",
                                  w, (size_t)(widths + m - buf), max_w,
                                  is32 ? "INT32" : "INT64");
            if (nbytes > (size_t)(end - p))
                return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                                  "DELTA_BINARY_PACKED miniblock at byte %zu needs %zu "
                                  "bytes, only %zu left; the page was cut short",
                                  (size_t)(p - buf), nbytes, (size_t)(end - p));
            if (out) {
                const uint8_t *q = p;
                for (size_t done = 0; done < take; done += 32, q += 4 * w) {
                    size_t c = take - done < 32 ? take - done : 32;
                    trove__pq_unpack32_64(q, 4 * (size_t)w, (size_t)(end - q), rel, w);
                    if (is32) {
                        uint32_t c32 = (uint32_t)cur, m32 = (uint32_t)min;
                        for (size_t i = 0; i < c; i++) {
                            c32 += m32 + (uint32_t)rel[i];
                            out[pos + done + i] = (int64_t)(int32_t)c32;
                        }
                        cur = c32;
                    } else {
                        for (size_t i = 0; i < c; i++) {
                            cur += min + rel[i];
                            out[pos + done + i] = (int64_t)cur;
                        }
                    }
                }
            }
            p += nbytes;
            pos += take;
        }
    }
    if (used_out)
        *used_out = (size_t)(p - buf);
    return TROVE_OK;
}

int trove__pq_delta_decode(const uint8_t *buf, size_t len, size_t n, int is32, int64_t *out,
                           size_t *used_out, struct trove_diag *diag)
{
    size_t used = 0;
    int rc;

    if ((!buf && len > 0) || (!out && n > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "delta decode called without a buffer or an output");
    if (!buf)
        buf = no_bytes;
    rc = delta_walk(buf, len, n, is32, NULL, &used, diag);
    if (rc == TROVE_OK && n > 0) {
        rc = delta_walk(buf, len, n, is32, out, &used, NULL);
        assert(rc == TROVE_OK);
    }
    if (rc == TROVE_OK && used_out)
        *used_out = used;
    return rc;
}
