/*
 * pq_plain.c: Parquet's PLAIN encoding of byte arrays (pq_encoding.h; Encodings.md of
 * apache/parquet-format), in which the writer stores string columns it does not put in a
 * dictionary, and the dictionary page of a string column.
 *
 *   value := u32 length little-endian | length bytes        (one per value, no padding)
 *
 * Why it is built this way: the decoder does not copy: it returns where each value starts
 * and how long it is, so the reader can point into the page. It checks every length (against
 * the bytes left and the caller's max_len) before it writes any output, so a failed decode
 * leaves its outputs untouched.
 *
 * Thread safety: no state; every function is safe to call concurrently on distinct outputs.
 */
#include "pq_encoding.h"

#include "common/endian.h"
#include "common/fail.h"

#include <inttypes.h>
#include <string.h>

int trove__pq_plain_encode_strings(const char *const *str, const uint32_t *len, size_t n,
                                   struct trove_bytes *out)
{
    size_t total = 0;
    uint8_t *p;
    int rc;

    if (!out || (n > 0 && (!str || !len)))
        return TROVE_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        if (len[i] > 0 && !str[i])
            return TROVE_ERR_INVALID;
        if (total > SIZE_MAX - 4 - len[i])
            return TROVE_ERR_NOMEM;
        total += 4 + (size_t)len[i];
    }
    if (n == 0)
        return TROVE_OK;
    rc = trove_bytes_reserve(out, total);
    if (rc != TROVE_OK)
        return rc;
    p = out->ptr + out->len;
    for (size_t i = 0; i < n; i++) {
        trove__put_le32(p, len[i]);
        if (len[i] > 0)
            memcpy(p + 4, str[i], len[i]);
        p += 4 + (size_t)len[i];
    }
    out->len += total;
    return TROVE_OK;
}

int trove__pq_plain_decode_strings(const uint8_t *buf, size_t len, size_t n, uint32_t max_len,
                                   uint64_t *start, uint32_t *vlen, size_t *used_out,
                                   struct trove_diag *diag)
{
    size_t at = 0;

    if ((!buf && len > 0) || (n > 0 && (!start || !vlen)))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "PLAIN strings decode called without a buffer or an output");
    /* First check every length, then write: a failed decode leaves the outputs as they were. */
    for (size_t k = 0; k < n; k++) {
        uint32_t l;
        if (len - at < 4)
            return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                              "PLAIN data ends inside the length of value %zu of %zu at "
                              "byte %zu; the page was cut short",
                              k, n, at);
        l = trove__get_le32(buf + at);
        if (l > max_len)
            return TROVE_FAIL(diag, TROVE_ERR_LIMIT, at,
                              "PLAIN value %zu at byte %zu is %" PRIu32 " bytes, over the "
                              "limit of %" PRIu32,
                              k, at, l, max_len);
        if (len - at - 4 < l)
            return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                              "PLAIN value %zu at byte %zu is %" PRIu32 " bytes but only "
                              "%zu are left; the page was cut short",
                              k, at, l, len - at - 4);
        at += 4 + (size_t)l;
    }
    at = 0;
    for (size_t k = 0; k < n; k++) {
        vlen[k] = trove__get_le32(buf + at);
        start[k] = at + 4;
        at += 4 + (size_t)vlen[k];
    }
    if (used_out)
        *used_out = at;
    return TROVE_OK;
}
