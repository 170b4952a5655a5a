/*
 * wire_names.c: the names frame — how a capture's names travel in a stream.
 *
 *   payload := entry * count
 *   entry   := type:u8  a:varint  [b:varint if type == 2]  len:varint  utf8[len]
 *   type 1: event name    a = name_id
 *   type 2: thread name   a = pid, b = tid
 *   type 3: process name  a = pid
 *
 * ids are u32 varints (at most 5 bytes), len is at most TROVE_NAME_MAX, and the bytes must be
 * well-formed UTF-8. A stream sends a names frame before the event frames that use its ids;
 * later frames may add names or replace them (the latest wins). Decoding validates the
 * whole payload before it changes the caller's table.
 */
#include "wire_internal.h"

#include <assert.h>

#include "common/fail.h"
#include "common/utf8.h"
#include "common/varint.h"

int trove_wire_encode_names(const struct trove_names *names, size_t from, size_t to,
                            struct trove_bytes *out)
{
    size_t total = trove_names_count(names), payload = 0, start = out->len;
    struct trove_name_entry e;
    uint8_t *p;
    int rc;

    if (to > total)
        to = total;
    if (from > to)
        from = to;
    if (to - from > TROVE_WIRE_MAX_NAMES)
        return TROVE_ERR_LIMIT;
    for (size_t i = from; i < to; i++) {
        trove_names_entry(names, i, &e);
        payload += 1 + trove_varint_len(e.a) + trove_varint_len(e.len) + e.len +
                   (e.type == TROVE_NAME_THREAD ? trove_varint_len(e.b) : 0);
    }
    if (payload > TROVE_WIRE_MAX_PAYLOAD)
        return TROVE_ERR_LIMIT;
    if ((rc = trove_bytes_reserve(out, TROVE_WIRE_HEADER_SIZE + payload)) != TROVE_OK)
        return rc;
    p = out->ptr + start + TROVE_WIRE_HEADER_SIZE;
    for (size_t i = from; i < to; i++) {
        trove_names_entry(names, i, &e);
        *p++ = e.type;
        p = trove_put_varint(p, e.a);
        if (e.type == TROVE_NAME_THREAD)
            p = trove_put_varint(p, e.b);
        p = trove_put_varint(p, e.len);
        memcpy(p, e.str, e.len);
        p += e.len;
    }
    assert(p == out->ptr + start + TROVE_WIRE_HEADER_SIZE + payload);
    trove__wire_put_header(out->ptr + start, TROVE_WIRE_NAMES, (uint32_t)(to - from),
                           (uint32_t)payload, 0);
    out->len = start + TROVE_WIRE_HEADER_SIZE + payload;
    return TROVE_OK;
}

/* "names frame: WHAT (entry I of COUNT)" at the entry that starts at p0 + at. */
static int entry_error(struct trove_diag *diag, int rc, uint64_t base, size_t at,
                       const char *what, uint32_t i, uint32_t count)
{
    return TROVE_FAIL(diag, rc, base + (uint64_t)at, "names frame: %s (entry %u of %u)", what, i,
                      count);
}

/* Walk the payload; with names == NULL only validate. */
static int walk(const uint8_t *p0, size_t len, uint32_t count, struct trove_names *names,
                uint64_t base, struct trove_diag *diag)
{
    const uint8_t *p = p0, *end = p0 + len;
    uint64_t a = 0, b = 0, n = 0;
    int why = 0, rc;
    uint32_t i;

    for (i = 0; i < count; i++) {
        size_t at = (size_t)(p - p0);
        uint8_t type;
        if (p >= end)
            return entry_error(diag, TROVE_ERR_TRUNCATED, base, at,
                               "payload ends before the entry", i, count);
        type = *p++;
        if (type < TROVE_NAME_EVENT || type > TROVE_NAME_PROCESS)
            return entry_error(diag, TROVE_ERR_CORRUPT, base, at, "unknown entry type", i, count);
        b = 0;
        if (!(p = trove_get_varint(p, end, 32, &a, &why)) ||
            (type == TROVE_NAME_THREAD && !(p = trove_get_varint(p, end, 32, &b, &why))) ||
            !(p = trove_get_varint(p, end, 32, &n, &why)))
            return entry_error(diag, why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT, base, at,
                               why == 1 ? "payload ends inside an entry"
                                        : "varint longer or wider than its field",
                               i, count);
        if (n > TROVE_NAME_MAX)
            return entry_error(diag, TROVE_ERR_LIMIT, base, at, "name longer than 65535 bytes", i,
                               count);
        if (n > (uint64_t)(end - p))
            return entry_error(diag, TROVE_ERR_OVERRUN, base, at,
                               "name length past the end of the payload", i, count);
        if (trove__utf8_valid_prefix(p, (size_t)n) != n)
            return entry_error(diag, TROVE_ERR_CORRUPT, base, at, "name is not valid UTF-8", i,
                               count);
        if (names && (rc = trove_names_set(names, type, (uint32_t)a, (uint32_t)b, (const char *)p,
                                           (size_t)n)) != TROVE_OK)
            return entry_error(diag, rc, base, at, "out of memory", i, count);
        p += n;
    }
    if (p != end)
        return entry_error(diag, TROVE_ERR_CORRUPT, base, (size_t)(p - p0),
                           "trailing bytes after the last entry", i, count);
    return TROVE_OK;
}

int trove__names_decode(const uint8_t *p, size_t len, uint32_t count, struct trove_names *names,
                        uint64_t base, struct trove_diag *diag)
{
    int rc = walk(p, len, count, NULL, base, diag);
    if (rc == TROVE_OK && names)
        rc = walk(p, len, count, names, base, diag);
    return rc;
}
