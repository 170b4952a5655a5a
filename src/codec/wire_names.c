/*
 * wire_names.c: the names frame — how a capture's names travel in a stream.
 *
 *   payload := entry * count
 *   entry   := type:u8  a:varint  [b:varint if type is 2 or 5]  body
 *   body    := len:varint  utf8[len]          types 1, 2, 3
 *            | value:zigzag varint            types 4, 5 (header version 2 only)
 *   type 1: event name    a = name_id
 *   type 2: thread name   a = pid, b = tid
 *   type 3: process name  a = pid
 *   type 4: process sort index   a = pid,            value = the signed 32-bit index
 *   type 5: thread sort index    a = pid, b = tid,   value = the signed 32-bit index
 *
 * A frame is version 1 (the header's version byte) unless it holds a sort index, when it is
 * version 2, so that a table without sort indexes encodes exactly as before they existed
 * and a reader that knows only version 1 refuses a frame it would misread (its header
 * check says TROVE_ERR_VERSION) rather than skip entries. A version 1 frame may hold types
 * 1 to 3 only; version 2 any of 1 to 5. ids are u32 varints (at most 5 bytes), the value a
 * zigzag varint of at most 5 bytes (32 bits), len is at most TROVE_NAME_MAX, and the bytes
 * must be well-formed UTF-8. A stream sends a names frame before the event frames that use
 * its ids; later frames may add names or replace them (the latest wins). Decoding validates
 * the whole payload before it changes the caller's table.
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
    int version = TROVE_WIRE_VERSION;
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
        payload += 1 + trove_varint_len(e.a) +
                   (trove_name_type_has_tid(e.type) ? trove_varint_len(e.b) : 0);
        if (trove_name_type_is_sort(e.type)) {
            payload += trove_varint_len(trove_zigzag64(e.sort_index));
            version = TROVE_WIRE_NAMES_VERSION;
        } else {
            payload += trove_varint_len(e.len) + e.len;
        }
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
        if (trove_name_type_has_tid(e.type))
            p = trove_put_varint(p, e.b);
        if (trove_name_type_is_sort(e.type)) {
            p = trove_put_varint(p, trove_zigzag64(e.sort_index));
            continue;
        }
        p = trove_put_varint(p, e.len);
        memcpy(p, e.str, e.len);
        p += e.len;
    }
    assert(p == out->ptr + start + TROVE_WIRE_HEADER_SIZE + payload);
    trove__wire_put_header(out->ptr + start, TROVE_WIRE_NAMES, version, (uint32_t)(to - from),
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

/* Walk the payload of a frame of `version`; with names == NULL only validate. */
static int walk(const uint8_t *p0, size_t len, uint32_t count, unsigned version,
                struct trove_names *names, uint64_t base, struct trove_diag *diag)
{
    const uint8_t *p = p0, *end = p0 + len;
    uint8_t max_type = version >= TROVE_WIRE_NAMES_VERSION ? TROVE_NAME_THREAD_SORT
                                                           : TROVE_NAME_PROCESS;
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
        if (type < TROVE_NAME_EVENT || type > max_type)
            return entry_error(diag, TROVE_ERR_CORRUPT, base, at,
                               trove_name_type_is_sort(type)
                                   ? "sort index entry in a version 1 frame"
                                   : "unknown entry type",
                               i, count);
        b = 0;
        if (!(p = trove_get_varint(p, end, 32, &a, &why)) ||
            (trove_name_type_has_tid(type) && !(p = trove_get_varint(p, end, 32, &b, &why))) ||
            !(p = trove_get_varint(p, end, 32, &n, &why)))
            return entry_error(diag, why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT, base, at,
                               why == 1 ? "payload ends inside an entry"
                                        : "varint longer or wider than its field",
                               i, count);
        if (trove_name_type_is_sort(type)) {
            /* n is the zigzag of a 32-bit value: it fits, as the varint held 32 bits */
            int32_t v = (int32_t)trove_unzigzag64(n);
            if (names && (rc = trove_names_set_sort(names, type, (uint32_t)a, (uint32_t)b, v)) !=
                             TROVE_OK)
                return entry_error(diag, rc, base, at, "out of memory", i, count);
            continue;
        }
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

int trove__names_decode(const uint8_t *p, size_t len, uint32_t count, unsigned version,
                        struct trove_names *names, uint64_t base, struct trove_diag *diag)
{
    int rc = walk(p, len, count, version, NULL, base, diag);
    if (rc == TROVE_OK && names)
        rc = walk(p, len, count, version, names, base, diag);
    return rc;
}
