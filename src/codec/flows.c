/*
 * flows.c: flow rows in memory (include/trove/flows.h) and the flows object, format v1, that
 * holds them in a capture (docs/formats/flows.md).
 *
 *    0                8         12        16             24             32
 *   +----------------+---------+---------+--------------+--------------+
 *   | magic          | version | flags   | rows     u64 | raw_len  u64 |
 *   | "TROVFLW1"     | u32 = 1 | u32 = 0 | N            | R            |
 *   +----------------+---------+---------+--------------+--------------+
 *   32             40                      40 + P          48 + P
 *   +--------------+--------------------- - +---------------+
 *   | packed_len   | DEFLATE (RFC 1951) of  | checksum u64  |  xxh3-64 of every byte
 *   | u64 = P      | the R-byte row stream  |               |  before it
 *   +--------------+--------------------- - +---------------+
 *
 *   row i of the stream (the values of row -1 are all 0):
 *     varint zigzag(ts_ns - ts_ns[i-1])     (64-bit wrapping difference)
 *     varint zigzag(id - id[i-1])
 *     varint pid, varint tid, varint name_id
 *     u8     phase | flags << 2
 *
 * Integers little-endian, varints LEB128 (common/varint.h). Rows are stored in the order
 * given; sorted by time (as importers make them) the deltas are small. The object is sealed
 * (common/sealed.h): magic, version gate, trailing checksum, checked in that order before any
 * field is trusted. Then the decoder bounds N by TROVE_FLOWS_MAX and R by 36N (the longest
 * row) before it allocates, requires the object to be exactly 48 + P bytes, inflates into
 * exactly R bytes and requires the deflate stream to end exactly at P, and reads the rows
 * with end-checked varints that must consume exactly R bytes, into a scratch array: the
 * caller's rows are touched only once the whole object decoded.
 */
#include "trove/flows.h"
#include "flows_internal.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"
#include "common/sealed.h"
#include "common/varint.h"

#include <inttypes.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC TROVE__FLOWS_MAGIC
#define VERSION 1u
#define FIXED TROVE__FLOWS_V1_FIXED
#define ROW_MAX 36u         /* the longest encoded row: 10 + 10 + 5 + 5 + 5 + 1 */
#define WHAT TROVE__FLOWS_WHAT


int trove_flows_reserve(struct trove_flows *a, size_t extra)
{
    struct trove_flow *p;
    size_t cap;

    if (extra <= a->cap - a->len)
        return TROVE_OK;
    if (extra > SIZE_MAX / sizeof *p - a->len)
        return TROVE_ERR_NOMEM;
    cap = a->len + extra;
    if (cap < 2 * a->cap && 2 * a->cap <= SIZE_MAX / sizeof *p)
        cap = 2 * a->cap;
    if (!(p = trove__realloc(a->f, cap * sizeof *p)))
        return TROVE_ERR_NOMEM;
    a->f = p;
    a->cap = cap;
    return TROVE_OK;
}

int trove_flows_push(struct trove_flows *a, const struct trove_flow *f)
{
    int rc = a->len < a->cap ? TROVE_OK : trove_flows_reserve(a, a->cap ? a->cap : 256);
    if (rc != TROVE_OK)
        return rc;
    a->f[a->len++] = *f;
    return TROVE_OK;
}

void trove_flows_free(struct trove_flows *a)
{
    free(a->f);
    a->f = NULL;
    a->len = a->cap = 0;
}

/* A row's place among the rows of its flow: (id, ts, index). */
struct by_flow {
    uint64_t id, ts;
    size_t i;
};

static int cmp_by_flow(const void *pa, const void *pb)
{
    const struct by_flow *a = pa, *b = pb;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

int trove_flows_one_name(const struct trove_flow *rows, size_t n, uint32_t *names_out)
{
    struct by_flow *o;

    if (n == 0)
        return TROVE_OK;
    if (!rows || !names_out)
        return TROVE_ERR_INVALID;
    if (n > SIZE_MAX / sizeof *o || !(o = trove__malloc(n * sizeof *o)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        o[i] = (struct by_flow){rows[i].id, rows[i].ts_ns, i};
    qsort(o, n, sizeof *o, cmp_by_flow);
    for (size_t i = 0, first = 0; i < n; i++) {
        if (i > 0 && o[i].id != o[i - 1].id)
            first = i;
        names_out[o[i].i] = rows[o[first].i].name_id;
    }
    free(o);
    return TROVE_OK;
}

int trove_flow_check(const struct trove_flow *f)
{
    if (f->phase > TROVE_FLOW_END || (f->flags & ~TROVE_FLOW_ENCLOSING) != 0 || f->pad[0] ||
        f->pad[1] || f->id == 0)
        return TROVE_ERR_INVALID;
    return TROVE_OK;
}

const char *trove_flow_phase_name(uint8_t phase)
{
    static const char *const names[] = {"start", "step", "end"};
    return phase < sizeof names / sizeof names[0] ? names[phase] : "other";
}

int trove_flows_encode(const struct trove_flow *rows, size_t n, struct trove_bytes *out)
{
    struct libdeflate_compressor *c = NULL;
    struct trove_bytes raw = {0};
    uint64_t prev_ts = 0, prev_id = 0;
    size_t bound, packed, start;
    uint8_t *p;
    int rc;

    if ((!rows && n > 0) || !out)
        return TROVE_ERR_INVALID;
    if ((uint64_t)n > TROVE_FLOWS_MAX)
        return TROVE_ERR_LIMIT;
    for (size_t i = 0; i < n; i++)
        if (trove_flow_check(&rows[i]) != TROVE_OK)
            return TROVE_ERR_INVALID;
    if ((rc = trove_bytes_reserve(&raw, n * ROW_MAX + 1)) != TROVE_OK)
        goto out;
    p = raw.ptr;
    for (size_t i = 0; i < n; i++) {
        const struct trove_flow *f = &rows[i];
        p = trove_put_varint(p, trove_zigzag64((int64_t)(f->ts_ns - prev_ts)));
        p = trove_put_varint(p, trove_zigzag64((int64_t)(f->id - prev_id)));
        p = trove_put_varint(p, f->pid);
        p = trove_put_varint(p, f->tid);
        p = trove_put_varint(p, f->name_id);
        *p++ = (uint8_t)(f->phase | f->flags << 2);
        prev_ts = f->ts_ns;
        prev_id = f->id;
    }
    raw.len = (size_t)(p - raw.ptr);
    if (!(c = libdeflate_alloc_compressor(1))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    bound = libdeflate_deflate_compress_bound(c, raw.len);
    start = out->len;
    if ((rc = trove_bytes_reserve(out, FIXED + bound + TROVE__SEALED_TRAILER)) != TROVE_OK)
        goto out;
    p = out->ptr + start;
    packed = libdeflate_deflate_compress(c, raw.ptr, raw.len, p + FIXED, bound);
    if (packed == 0) { /* cannot happen with a bound-sized buffer */
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    memcpy(p, MAGIC, 8);
    trove__put_le32(p + 8, VERSION);
    trove__put_le32(p + 12, 0);
    trove__put_le64(p + 16, n);
    trove__put_le64(p + 24, raw.len);
    trove__put_le64(p + 32, packed);
    trove__sealed_seal(p, FIXED + packed + TROVE__SEALED_TRAILER);
    out->len = start + FIXED + packed + TROVE__SEALED_TRAILER;
    rc = TROVE_OK;
out:
    libdeflate_free_compressor(c);
    trove_bytes_free(&raw);
    return rc;
}

/* One varint of the row stream, or TROVE_ERR_VARINT / TROVE_ERR_TRUNCATED at its offset. */
static int get(const uint8_t **p, const uint8_t *start, const uint8_t *end, unsigned bits,
               uint64_t *v, size_t row, const char *field, struct trove_diag *diag)
{
    int why = 0;
    const uint8_t *q = trove_get_varint(*p, end, bits, v, &why);
    if (!q)
        return TROVE_FAIL(diag, why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT,
                          FIXED + (uint64_t)(*p - start),
                          "flows object: row %zu: %s %s (at byte %zu of the inflated rows)",
                          row, field,
                          why == 1 ? "runs past the end of the rows" : "is not a valid varint",
                          (size_t)(*p - start));
    *p = q;
    return TROVE_OK;
}

int trove__flows_take(struct trove_flows *out, const struct trove_flow *rows, size_t n,
                      struct trove_diag *diag)
{
    if (trove_flows_reserve(out, n) != TROVE_OK)
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory for %zu flow rows", n);
    if (n > 0)
        memcpy(out->f + out->len, rows, n * sizeof *rows);
    out->len += n;
    return TROVE_OK;
}

int trove__flows_v1_decode(const uint8_t *buf, size_t len, struct trove_flows *out,
                           struct trove_diag *diag)
{
    struct libdeflate_decompressor *d = NULL;
    struct trove_flow *tmp = NULL;
    uint8_t *raw = NULL;
    const uint8_t *p, *end;
    uint64_t rows, raw_len, packed, prev_ts = 0, prev_id = 0;
    size_t used = 0, got = 0;
    uint32_t flags;
    enum libdeflate_result r;
    int rc;

    flags = trove__get_le32(buf + 12);
    rows = trove__get_le64(buf + 16);
    raw_len = trove__get_le64(buf + 24);
    packed = trove__get_le64(buf + 32);
    if (flags != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 12,
                          "flows object flags are 0x%" PRIx32 "; version 1 defines none", flags);
    if (rows > TROVE_FLOWS_MAX)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 16,
                          "flows object holds %" PRIu64 " rows, over the limit of %" PRIu64,
                          rows, TROVE_FLOWS_MAX);
    if (raw_len < rows * 6 || raw_len > rows * ROW_MAX)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 24,
                          "flows object: %" PRIu64 " rows cannot take %" PRIu64 " bytes (%"
                          PRIu64 " to %" PRIu64 ")",
                          rows, raw_len, rows * 6, rows * ROW_MAX);
    if (packed != (uint64_t)len - FIXED - TROVE__SEALED_TRAILER)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 32,
                          "flows object says its rows take %" PRIu64 " packed bytes; the "
                          "object holds %zu",
                          packed, len - FIXED - TROVE__SEALED_TRAILER);
    /* raw_len <= 36 * 2^28 fits any size_t of 32 bits or more. */
    if (!(raw = trove__malloc(raw_len ? (size_t)raw_len : 1)) ||
        !(d = libdeflate_alloc_decompressor())) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory for %" PRIu64 " flow rows",
                        rows);
        goto out;
    }
    r = libdeflate_deflate_decompress_ex(d, buf + FIXED, (size_t)packed, raw, (size_t)raw_len,
                                         &used, &got);
    if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, FIXED,
                        "flows object inflates past its declared %" PRIu64 " bytes", raw_len);
        goto out;
    }
    if (r != LIBDEFLATE_SUCCESS) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INFLATE, FIXED, "flows object: malformed deflate stream");
        goto out;
    }
    if (got != raw_len || used != packed) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, FIXED + used,
                        "flows object: the deflate stream gives %zu of %" PRIu64
                        " bytes and ends %" PRIu64 " bytes early",
                        got, raw_len, packed - used);
        goto out;
    }
    if (!(tmp = trove__malloc((rows ? (size_t)rows : 1) * sizeof *tmp))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory for %" PRIu64 " flow rows",
                        rows);
        goto out;
    }
    p = raw;
    end = raw + raw_len;
    for (size_t i = 0; i < (size_t)rows; i++) {
        struct trove_flow *f = &tmp[i];
        uint64_t dts, did, pid, tid, name;
        uint8_t pf;
        if ((rc = get(&p, raw, end, 64, &dts, i, "ts_ns", diag)) != TROVE_OK ||
            (rc = get(&p, raw, end, 64, &did, i, "id", diag)) != TROVE_OK ||
            (rc = get(&p, raw, end, 32, &pid, i, "pid", diag)) != TROVE_OK ||
            (rc = get(&p, raw, end, 32, &tid, i, "tid", diag)) != TROVE_OK ||
            (rc = get(&p, raw, end, 32, &name, i, "name_id", diag)) != TROVE_OK)
            goto out;
        if (p >= end) {
            rc = TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, FIXED,
                            "flows object: row %zu ends before its phase byte", i);
            goto out;
        }
        pf = *p++;
        memset(f, 0, sizeof *f);
        f->ts_ns = prev_ts + (uint64_t)trove_unzigzag64(dts);
        f->id = prev_id + (uint64_t)trove_unzigzag64(did);
        f->pid = (uint32_t)pid;
        f->tid = (uint32_t)tid;
        f->name_id = (uint32_t)name;
        f->phase = pf & 3;
        f->flags = pf >> 2;
        if (trove_flow_check(f) != TROVE_OK) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, FIXED,
                            "flows object: row %zu has phase %u, flags %u and id %" PRIu64
                            "; phases are 0 to 2, flags 0 or 1, ids from 1",
                            i, (unsigned)f->phase, (unsigned)f->flags, f->id);
            goto out;
        }
        prev_ts = f->ts_ns;
        prev_id = f->id;
    }
    if (p != end) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, FIXED,
                        "flows object: %zu bytes follow the last of its %" PRIu64 " rows",
                        (size_t)(end - p), rows);
        goto out;
    }
    /* out is touched only now, that every row decoded */
    rc = trove__flows_take(out, tmp, (size_t)rows, diag);
out:
    libdeflate_free_decompressor(d);
    free(raw);
    free(tmp);
    return rc;
}
