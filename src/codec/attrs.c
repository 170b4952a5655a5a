/*
 * attrs.c: event attributes in memory (include/trove/attrs.h) and the attributes object,
 * format v1, that keeps them beside a run of events (docs/formats/attrs.md).
 *
 *    0                8         12        16             24             32
 *   +----------------+---------+---------+--------------+--------------+
 *   | magic          | version | flags   | rows     u64 | strings  u64 |
 *   | "TROVATR1"     | u32 = 1 | u32 = 0 | N            | S            |
 *   +----------------+---------+---------+--------------+--------------+
 *   32             40             48                     48 + P          56 + P
 *   +--------------+--------------+--------------------- - +---------------+
 *   | raw_len  u64 | packed_len   | one zstd frame of the  | checksum u64  |  xxh3-64 of
 *   | R            | u64 = P      | R-byte stream          |               |  every byte
 *   +--------------+--------------+--------------------- - +---------------+  before it
 *
 *   the stream, column by column:
 *     strings   S x (varint length, its bytes)          in id order
 *     events    N x varint (event - the previous row's event; the first's from 0)
 *     keys      N x varint key id
 *     types     N x u8: the type (1 int, 2 double, 3 string, 4 bool, 5 JSON text) in the
 *               low four bits, the scope (0 arg, 1 field, 2 trace) in the high four
 *     deltas    varint D, then D varint key ids, rising: the keys whose ints are written
 *               as differences
 *     values    N x, by the row's type: int varint zigzag (of its difference from the
 *               last int of the same key, for a key of the deltas list), double 8 bytes LE
 *               (its bits), string and JSON varint string id, bool u8 0 or 1
 *
 * Columns compress better than rows: a key's ids sit together, event deltas are mostly 0
 * and 1, strings are each stored once. The object is sealed (common/sealed.h): magic, version
 * gate and trailing checksum before any field is trusted; then N, S and R are bounded
 * (R at least S + 4N: a string and a row take a byte each field at least) before anything is
 * allocated, the frame must decompress to exactly R bytes and end exactly at P, and the
 * stream is read with end-checked varints that must use exactly R bytes.
 */
#include "trove/attrs.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/sealed.h"
#include "common/varint.h"
#include "trove/wire.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#define MAGIC "TROVATR1"
#define VERSION 1u
#define FIXED 48u             /* the object before the zstd frame */
#define RAW_MAX ((uint64_t)1 << 31)
#define WHAT "attributes object"

static const uint32_t known_version = VERSION;

/* ---- the table ------------------------------------------------------------------------------ */

static uint64_t str_hash(const void *s, size_t n)
{
    const uint8_t *p = s;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return trove__mix64(h);
}

/* Grow *p (cap elements of size) to hold need. */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    size_t c = *cap ? *cap : 16;
    void *q;
    if (need <= *cap)
        return TROVE_OK;
    while (c < need) {
        if (c > SIZE_MAX / 2 / size)
            return TROVE_ERR_NOMEM;
        c *= 2;
    }
    if (!(q = trove__realloc(*p, c * size)))
        return TROVE_ERR_NOMEM;
    *p = q;
    *cap = c;
    return TROVE_OK;
}

/* The hash index at twice the strings, rebuilt. */
static int reindex(struct trove_attrs *a, size_t slots)
{
    uint32_t *ix = trove__calloc(slots, sizeof *ix);
    if (!ix)
        return TROVE_ERR_NOMEM;
    for (size_t id = 0; id < a->nstr; id++) {
        size_t i = (size_t)str_hash(a->bytes + a->off[id], a->len[id]) & (slots - 1);
        while (ix[i])
            i = (i + 1) & (slots - 1);
        ix[i] = (uint32_t)id + 1;
    }
    free(a->index);
    a->index = ix;
    a->index_mask = slots - 1;
    return TROVE_OK;
}

int trove_attrs_intern(struct trove_attrs *a, const void *s, size_t n, uint32_t *id)
{
    size_t i, at;
    int rc, inside;

    if (!a || (!s && n) || !id)
        return TROVE_ERR_INVALID;
    if (n > TROVE_ATTRS_MAX_STRING)
        return TROVE_ERR_LIMIT;
    if (a->index) {
        for (i = (size_t)str_hash(s, n) & a->index_mask; a->index[i]; i = (i + 1) & a->index_mask) {
            uint32_t k = a->index[i] - 1;
            if (a->len[k] == n && (!n || !memcmp(a->bytes + a->off[k], s, n))) {
                *id = k;
                return TROVE_OK;
            }
        }
    }
    if (a->nstr >= TROVE_ATTRS_MAX_STRINGS)
        return TROVE_ERR_LIMIT;
    /* s may be a part of a string of the table itself, which growing would move */
    inside = n && a->bytes && (const uint8_t *)s >= a->bytes &&
             (const uint8_t *)s < a->bytes + a->nbytes;
    at = inside ? (size_t)((const uint8_t *)s - a->bytes) : 0;
    /* room first, so that a failure leaves the table as it was */
    if ((rc = grow((void **)&a->bytes, &a->capbytes, a->nbytes + n + 1, 1)) != TROVE_OK ||
        (rc = grow((void **)&a->off, &a->capstr, a->nstr + 1, sizeof *a->off)) != TROVE_OK ||
        (rc = grow((void **)&a->len, &a->caplen, a->nstr + 1, sizeof *a->len)) != TROVE_OK)
        return rc;
    if ((a->nstr + 1) * 2 > (a->index ? a->index_mask + 1 : 0)) {
        size_t slots = a->index ? (a->index_mask + 1) * 2 : 64;
        while (slots < (a->nstr + 1) * 2) /* a table whose strings came without an index */
            slots *= 2;
        if ((rc = reindex(a, slots)) != TROVE_OK)
            return rc;
    }
    if (inside)
        s = a->bytes + at;
    if (n)
        memcpy(a->bytes + a->nbytes, s, n);
    a->bytes[a->nbytes + n] = 0;
    a->off[a->nstr] = a->nbytes;
    a->len[a->nstr] = (uint32_t)n;
    a->nbytes += n + 1;
    for (i = (size_t)str_hash(s, n) & a->index_mask; a->index[i]; i = (i + 1) & a->index_mask)
        ;
    a->index[i] = (uint32_t)a->nstr + 1;
    *id = (uint32_t)a->nstr++;
    return TROVE_OK;
}

const char *trove_attrs_string(const struct trove_attrs *a, uint32_t id, size_t *len)
{
    if (!a || id >= a->nstr)
        return NULL;
    if (len)
        *len = a->len[id];
    return (const char *)a->bytes + a->off[id];
}

static int row_ok(const struct trove_attrs *a, const struct trove_attr *r)
{
    if (r->key >= a->nstr || r->type < TROVE_ATTR_INT || r->type > TROVE_ATTR_JSON ||
        r->scope > TROVE_ATTR_TRACE)
        return 0;
    if ((r->type == TROVE_ATTR_STRING || r->type == TROVE_ATTR_JSON) && r->v.s >= a->nstr)
        return 0;
    return r->type != TROVE_ATTR_BOOL || r->v.b <= 1;
}

int trove_attrs_add(struct trove_attrs *a, const struct trove_attr *row)
{
    int rc;

    if (!a || !row || !row_ok(a, row))
        return TROVE_ERR_INVALID;
    if (a->n >= TROVE_ATTRS_MAX_ROWS)
        return TROVE_ERR_LIMIT;
    if ((rc = grow((void **)&a->rows, &a->cap, a->n + 1, sizeof *a->rows)) != TROVE_OK)
        return rc;
    a->rows[a->n++] = *row;
    return TROVE_OK;
}

size_t trove_attrs_find(const struct trove_attrs *a, uint64_t event)
{
    size_t lo = 0, hi = a ? a->n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->rows[mid].event < event)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int trove_attrs_reserve(struct trove_attrs *a, size_t rows)
{
    if (!a || rows > TROVE_ATTRS_MAX_ROWS)
        return a ? TROVE_ERR_LIMIT : TROVE_ERR_INVALID;
    return grow((void **)&a->rows, &a->cap, a->n + rows, sizeof *a->rows);
}

/* The id in `to` of from's string id: interned once a call when map is given (map[id] is the
 * id + 1 once known), else every time. */
static int move_string(struct trove_attrs *to, const struct trove_attrs *from, uint32_t id,
                       uint32_t *map, uint32_t *out)
{
    size_t len = 0;
    const char *s;
    int rc;

    if (map && map[id]) {
        *out = map[id] - 1;
        return TROVE_OK;
    }
    s = trove_attrs_string(from, id, &len);
    if ((rc = trove_attrs_intern(to, s, len, out)) == TROVE_OK && map)
        map[id] = *out + 1;
    return rc;
}

int trove_attrs_append(struct trove_attrs *to, const struct trove_attrs *from, size_t first,
                       size_t last, uint64_t shift, uint64_t unshift)
{
    uint32_t *map = NULL;
    size_t n0;
    int rc = TROVE_OK;

    if (!to || !from || first > last || last > from->n)
        return TROVE_ERR_INVALID;
    n0 = to->n;
    /* many rows of few strings: each string looked up once, through a map of from's ids */
    if ((last - first) * 4 >= from->nstr && from->nstr &&
        !(map = trove__calloc(from->nstr, sizeof *map)))
        return TROVE_ERR_NOMEM;
    if ((rc = grow((void **)&to->rows, &to->cap, to->n + (last - first), sizeof *to->rows)) !=
        TROVE_OK)
        goto out;
    for (size_t i = first; rc == TROVE_OK && i < last; i++) {
        struct trove_attr r = from->rows[i];
        if (r.event > UINT64_MAX - shift || r.event + shift < unshift) {
            rc = TROVE_ERR_INVALID;
            break;
        }
        r.event = r.event + shift - unshift;
        rc = move_string(to, from, r.key, map, &r.key);
        if (rc == TROVE_OK && (r.type == TROVE_ATTR_STRING || r.type == TROVE_ATTR_JSON))
            rc = move_string(to, from, r.v.s, map, &r.v.s);
        if (rc == TROVE_OK)
            rc = trove_attrs_add(to, &r);
    }
out:
    free(map);
    if (rc != TROVE_OK)
        to->n = n0;
    return rc;
}

int trove_attrs_take_strings(struct trove_attrs *to, struct trove_attrs *from)
{
    struct trove_attrs t;
    if (to->n || to->nstr)
        return 0;
    t = *to;
    to->bytes = from->bytes;
    to->nbytes = from->nbytes;
    to->capbytes = from->capbytes;
    to->off = from->off;
    to->len = from->len;
    to->nstr = from->nstr;
    to->capstr = from->capstr;
    to->caplen = from->caplen;
    to->index = from->index;
    to->index_mask = from->index_mask;
    from->bytes = t.bytes;
    from->off = t.off;
    from->len = t.len;
    from->index = t.index;
    from->capbytes = t.capbytes;
    from->capstr = t.capstr;
    from->caplen = t.caplen;
    from->nbytes = from->nstr = from->index_mask = 0;
    return 1;
}

int trove_attrs_equal(const struct trove_attrs *x, const struct trove_attrs *y)
{
    if (!x || !y || x->n != y->n)
        return 0;
    for (size_t i = 0; i < x->n; i++) {
        const struct trove_attr *a = &x->rows[i], *b = &y->rows[i];
        size_t la = 0, lb = 0;
        const char *sa = trove_attrs_string(x, a->key, &la), *sb = trove_attrs_string(y, b->key, &lb);
        if (a->event != b->event || a->scope != b->scope || a->type != b->type || la != lb ||
            memcmp(sa, sb, la))
            return 0;
        switch (a->type) {
        case TROVE_ATTR_INT:
            if (a->v.i != b->v.i)
                return 0;
            break;
        case TROVE_ATTR_BOOL:
            if (a->v.b != b->v.b)
                return 0;
            break;
        case TROVE_ATTR_DOUBLE:
            if (a->v.d != a->v.d ? b->v.d == b->v.d : memcmp(&a->v.d, &b->v.d, 8) != 0)
                return 0;
            break;
        default:
            sa = trove_attrs_string(x, a->v.s, &la);
            sb = trove_attrs_string(y, b->v.s, &lb);
            if (la != lb || memcmp(sa, sb, la))
                return 0;
            break;
        }
    }
    return 1;
}

void trove_attrs_free(struct trove_attrs *a)
{
    if (!a)
        return;
    free(a->rows);
    free(a->bytes);
    free(a->off);
    free(a->len);
    free(a->index);
    memset(a, 0, sizeof *a);
}

/* ---- the object ------------------------------------------------------------------------------ */

static unsigned varint_len(uint64_t v)
{
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static int put_varint(struct trove_bytes *b, uint64_t v)
{
    uint8_t tmp[10];
    return trove_bytes_append(b, tmp, (size_t)(trove_put_varint(tmp, v) - tmp));
}

/* The R-byte stream of a. */
static int stream(const struct trove_attrs *a, struct trove_bytes *s)
{
    uint64_t prev = 0, nd = 0;
    int64_t *last = NULL, *cost = NULL; /* each key's last int, and what differences save */
    int rc = TROVE_OK;

    for (size_t i = 0; rc == TROVE_OK && i < a->nstr; i++) {
        rc = put_varint(s, a->len[i]);
        rc = rc ? rc : trove_bytes_append(s, a->bytes + a->off[i], a->len[i]);
    }
    for (size_t i = 0; rc == TROVE_OK && i < a->n; i++) {
        rc = put_varint(s, a->rows[i].event - prev);
        prev = a->rows[i].event;
    }
    for (size_t i = 0; rc == TROVE_OK && i < a->n; i++)
        rc = put_varint(s, a->rows[i].key);
    for (size_t i = 0; rc == TROVE_OK && i < a->n; i++) {
        uint8_t t = (uint8_t)(a->rows[i].type | a->rows[i].scope << 4);
        rc = trove_bytes_append(s, &t, 1);
    }
    /* the keys whose ints are written as the difference from the last int of the same key
     * (a thread time, an id that climbs): their count, then each; then the values */
    if (rc == TROVE_OK && a->nstr &&
        (!(last = trove__calloc(a->nstr, sizeof *last)) ||
         !(cost = trove__calloc(a->nstr, sizeof *cost))))
        rc = TROVE_ERR_NOMEM;
    /* a key takes differences when they save a quarter of its ints' varint bytes: a value
     * that repeats, or jumps about (a source line), compresses better as it is */
    for (size_t i = 0; rc == TROVE_OK && i < a->n; i++) {
        const struct trove_attr *r = &a->rows[i];
        if (r->type != TROVE_ATTR_INT)
            continue;
        cost[r->key] += 3 * (int64_t)varint_len(trove_zigzag64(r->v.i)) -
                        4 * (int64_t)varint_len(trove_zigzag64(
                                (int64_t)((uint64_t)r->v.i - (uint64_t)last[r->key])));
        last[r->key] = r->v.i;
    }
    for (size_t k = 0; rc == TROVE_OK && k < a->nstr; k++)
        nd += cost[k] > 0;
    if (rc == TROVE_OK)
        rc = put_varint(s, nd);
    for (size_t k = 0; rc == TROVE_OK && k < a->nstr; k++) {
        if (cost[k] > 0)
            rc = put_varint(s, k);
        last[k] = 0;
    }
    for (size_t i = 0; rc == TROVE_OK && i < a->n; i++) {
        const struct trove_attr *r = &a->rows[i];
        uint8_t d[8];
        uint64_t bits;
        switch (r->type) {
        case TROVE_ATTR_INT:
            rc = put_varint(s, trove_zigzag64(cost[r->key] > 0
                                                   ? (int64_t)((uint64_t)r->v.i - (uint64_t)last[r->key])
                                                   : r->v.i));
            last[r->key] = r->v.i;
            break;
        case TROVE_ATTR_DOUBLE:
            memcpy(&bits, &r->v.d, 8);
            trove__put_le64(d, bits);
            rc = trove_bytes_append(s, d, 8);
            break;
        case TROVE_ATTR_BOOL:
            rc = trove_bytes_append(s, &r->v.b, 1);
            break;
        default:
            rc = put_varint(s, r->v.s);
            break;
        }
    }
    free(last);
    free(cost);
    return rc;
}

int trove_attrs_encode(const struct trove_attrs *a, int level, struct trove_bytes *out)
{
    struct trove_bytes raw = {0};
    size_t at, bound, packed;
    uint8_t *o;
    int rc;

    if (!a || !out || level < 0 || level > 19)
        return TROVE_ERR_INVALID;
    for (size_t i = 0; i < a->n; i++)
        if (!row_ok(a, &a->rows[i]) || (i && a->rows[i].event < a->rows[i - 1].event))
            return TROVE_ERR_INVALID;
    if ((rc = stream(a, &raw)) != TROVE_OK)
        goto out;
    if (raw.len > RAW_MAX) {
        rc = TROVE_ERR_LIMIT;
        goto out;
    }
    bound = ZSTD_compressBound(raw.len);
    at = out->len;
    if ((rc = trove_bytes_reserve(out, FIXED + bound + TROVE__SEALED_TRAILER)) != TROVE_OK)
        goto out;
    o = out->ptr + at;
    packed = ZSTD_compress(o + FIXED, bound, raw.ptr, raw.len, level ? level : TROVE_ATTRS_LEVEL);
    if (ZSTD_isError(packed)) {
        rc = TROVE_ERR_NOMEM; /* zstd fails only for want of memory here */
        goto out;
    }
    memcpy(o, MAGIC, 8);
    trove__put_le32(o + 8, VERSION);
    trove__put_le32(o + 12, 0);
    trove__put_le64(o + 16, a->n);
    trove__put_le64(o + 24, a->nstr);
    trove__put_le64(o + 32, raw.len);
    trove__put_le64(o + 40, packed);
    trove__sealed_seal(o, FIXED + packed + TROVE__SEALED_TRAILER);
    out->len = at + FIXED + packed + TROVE__SEALED_TRAILER;
out:
    trove_bytes_free(&raw);
    return rc;
}

/* Where a stream sits, for diag: the bytes before it, and what holds it. */
struct where {
    uint64_t base;
    const char *what;
};

/* A varint of at most `bits` from [*p, end), or the error at stream offset. */
static int get(const uint8_t **p, const uint8_t *end, unsigned bits, uint64_t *v,
               const uint8_t *base, const struct where *w, struct trove_diag *diag)
{
    int why = 0;
    const uint8_t *q = trove_get_varint(*p, end, bits, v, &why);
    if (!q)
        return TROVE_FAIL(diag, why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT,
                          w->base + (uint64_t)(*p - base),
                          "%s: %s at byte %" PRIu64 " of its stream", w->what,
                          why == 1 ? "a varint cut by the end" : "a varint too wide",
                          (uint64_t)(*p - base));
    *p = q;
    return TROVE_OK;
}

static int bad(struct trove_diag *diag, const struct where *w, uint64_t at, const char *what)
{
    return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, w->base + at, "%s: %s at byte %" PRIu64 " of its stream",
                      w->what, what, at);
}

/* The stream s[0..r) of n rows and ns strings into t (empty, sized for them). */
static int parse(const uint8_t *s, size_t r, uint64_t n, uint64_t ns, struct trove_attrs *t,
                 const struct where *w, struct trove_diag *diag)
{
    const uint8_t *p = s, *end = s + r;
    uint64_t v, ev = 0;
    int64_t *last = NULL; /* the last int of each key */
    uint8_t *delta = NULL; /* the keys whose ints are differences */
    uint64_t nd;
    int rc;

    for (uint64_t i = 0; i < ns; i++) {
        uint32_t id;
        if ((rc = get(&p, end, 32, &v, s, w, diag)) != TROVE_OK)
            return rc;
        if (v > TROVE_ATTRS_MAX_STRING || v > (uint64_t)(end - p))
            return bad(diag, w, (uint64_t)(p - s), "a string longer than the stream or 1 MiB");
        if ((rc = trove_attrs_intern(t, p, (size_t)v, &id)) != TROVE_OK)
            return TROVE_FAIL(diag, rc, w->base + (uint64_t)(p - s), "%s: out of memory", w->what);
        if (id != i) /* a string given twice would make ids shift */
            return bad(diag, w, (uint64_t)(p - s), "a string given twice");
        p += v;
    }
    for (uint64_t i = 0; i < n; i++) {
        if ((rc = get(&p, end, 64, &v, s, w, diag)) != TROVE_OK)
            return rc;
        if (v > UINT64_MAX - ev)
            return bad(diag, w, (uint64_t)(p - s), "an event index past 2^64");
        ev += v;
        t->rows[i].event = ev;
    }
    for (uint64_t i = 0; i < n; i++) {
        if ((rc = get(&p, end, 32, &v, s, w, diag)) != TROVE_OK)
            return rc;
        if (v >= ns)
            return bad(diag, w, (uint64_t)(p - s), "a key past the strings");
        t->rows[i].key = (uint32_t)v;
    }
    if ((uint64_t)(end - p) < n)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, w->base + r, "%s: the types cut by the end", w->what);
    for (uint64_t i = 0; i < n; i++, p++) {
        uint8_t type = *p & 15, scope = *p >> 4;
        if (type < TROVE_ATTR_INT || type > TROVE_ATTR_JSON)
            return bad(diag, w, (uint64_t)(p - s), "a type outside 1..5");
        if (scope > TROVE_ATTR_TRACE)
            return bad(diag, w, (uint64_t)(p - s), "a scope outside 0..2");
        t->rows[i].type = type;
        t->rows[i].scope = scope;
    }
    /* the keys whose ints are differences, then ints, doubles, string ids, bools */
    if (ns && (!(last = trove__calloc((size_t)ns, sizeof *last)) ||
               !(delta = trove__calloc((size_t)ns, 1)))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, w->base, "%s: out of memory", w->what);
        goto out;
    }
    if ((rc = get(&p, end, 32, &nd, s, w, diag)) != TROVE_OK)
        goto out;
    if (nd > ns) {
        rc = bad(diag, w, (uint64_t)(p - s), "more keys of differences than strings");
        goto out;
    }
    for (uint64_t k = 0, prevk = 0; k < nd; k++) {
        if ((rc = get(&p, end, 32, &v, s, w, diag)) != TROVE_OK)
            goto out;
        if (v >= ns || (k && v <= prevk)) {
            rc = bad(diag, w, (uint64_t)(p - s), "a key of differences past the strings or not rising");
            goto out;
        }
        delta[v] = 1;
        prevk = v;
    }
    for (uint64_t i = 0; i < n; i++) {
        struct trove_attr *a = &t->rows[i];
        switch (a->type) {
        case TROVE_ATTR_INT:
            if ((rc = get(&p, end, 64, &v, s, w, diag)) != TROVE_OK)
                goto out;
            a->v.i = delta[a->key] ? (int64_t)((uint64_t)last[a->key] + (uint64_t)trove_unzigzag64(v))
                                   : trove_unzigzag64(v);
            last[a->key] = a->v.i;
            break;
        case TROVE_ATTR_DOUBLE:
            if (end - p < 8) {
                rc = TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, w->base + r, "%s: a double cut by the end",
                                w->what);
                goto out;
            }
            v = trove__get_le64(p);
            memcpy(&a->v.d, &v, 8);
            p += 8;
            break;
        case TROVE_ATTR_BOOL:
            if (p == end) {
                rc = TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, w->base + r, "%s: a bool cut by the end", w->what);
                goto out;
            }
            if (*p > 1) {
                rc = bad(diag, w, (uint64_t)(p - s), "a bool not 0 or 1");
                goto out;
            }
            a->v.b = *p++;
            break;
        default:
            if ((rc = get(&p, end, 32, &v, s, w, diag)) != TROVE_OK)
                goto out;
            if (v >= ns) {
                rc = bad(diag, w, (uint64_t)(p - s), "a string value past the strings");
                goto out;
            }
            a->v.s = (uint32_t)v;
            break;
        }
    }
    free(last);
    free(delta);
    last = NULL;
    delta = NULL;
    if (p != end)
        return bad(diag, w, (uint64_t)(p - s), "bytes after the last value");
    t->n = (size_t)n;
    return TROVE_OK;
out:
    free(last);
    free(delta);
    return rc;
}

int trove_attrs_decode(const uint8_t *buf, size_t len, struct trove_attrs *result,
                       struct trove_diag *diag)
{
    struct trove_attrs t, *out = &t;
    uint64_t n, ns, r, pk;
    uint8_t *raw = NULL;
    size_t got;
    int rc;

    memset(&t, 0, sizeof t);
    if (!result || (!buf && len))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "%s: no buffer or no table", WHAT);
    if ((rc = trove__sealed_magic(buf, len, MAGIC, WHAT, diag)) != TROVE_OK)
        return rc;
    if (len < FIXED + TROVE__SEALED_TRAILER)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len, "%s: %zu bytes, under the 56 of an empty one",
                          WHAT, len);
    if ((rc = trove__sealed_version(trove__get_le32(buf + 8), 8, &known_version, 1, WHAT,
                                    "version 1", diag)) != TROVE_OK ||
        (rc = trove__sealed_trailer(buf, len, WHAT, diag)) != TROVE_OK)
        return rc;
    if (trove__get_le32(buf + 12) != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 12, "%s: flags not 0", WHAT);
    n = trove__get_le64(buf + 16);
    ns = trove__get_le64(buf + 24);
    r = trove__get_le64(buf + 32);
    pk = trove__get_le64(buf + 40);
    if (n > TROVE_ATTRS_MAX_ROWS)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 16, "%s: %" PRIu64 " rows, over 2^28", WHAT, n);
    if (ns > TROVE_ATTRS_MAX_STRINGS)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 24, "%s: %" PRIu64 " strings, over 2^24", WHAT, ns);
    if (r > RAW_MAX)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 32, "%s: a stream of %" PRIu64 " bytes, over 2 GiB", WHAT, r);
    if (r < ns + 4 * n)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 32,
                          "%s: a stream of %" PRIu64 " bytes cannot hold %" PRIu64 " strings and %" PRIu64 " rows",
                          WHAT, r, ns, n);
    if (pk != len - FIXED - TROVE__SEALED_TRAILER)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 40, "%s: the frame is %" PRIu64 " bytes, the object holds %zu",
                          WHAT, pk, len - FIXED - TROVE__SEALED_TRAILER);
    if (ZSTD_findFrameCompressedSize(buf + FIXED, (size_t)pk) != pk)
        return TROVE_FAIL(diag, TROVE_ERR_INFLATE, FIXED, "%s: not one zstd frame that ends with the object",
                          WHAT);
    {
        unsigned long long cs = ZSTD_getFrameContentSize(buf + FIXED, (size_t)pk);
        if (cs != ZSTD_CONTENTSIZE_UNKNOWN && cs != ZSTD_CONTENTSIZE_ERROR && cs != r)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 32, "%s: the frame holds %llu bytes, not %" PRIu64,
                              WHAT, cs, r);
    }
    if (!(raw = trove__malloc(r ? (size_t)r : 1)) ||
        (n && !(out->rows = trove__calloc((size_t)n, sizeof *out->rows)))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "%s: out of memory", WHAT);
        goto out;
    }
    out->cap = (size_t)n;
    got = ZSTD_decompress(raw, (size_t)r, buf + FIXED, (size_t)pk);
    if (ZSTD_isError(got) && ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 32, "%s: the frame holds more than %" PRIu64 " bytes",
                        WHAT, r);
        goto out;
    }
    if (ZSTD_isError(got)) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INFLATE, FIXED, "%s: zstd: %s", WHAT, ZSTD_getErrorName(got));
        goto out;
    }
    if (got != r) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 32, "%s: the frame holds %zu bytes, not %" PRIu64, WHAT,
                        got, r);
        goto out;
    }
    {
        static const struct where obj = {FIXED, WHAT};
        rc = parse(raw, (size_t)r, n, ns, out, &obj, diag);
    }
out:
    free(raw);
    if (rc != TROVE_OK)
        trove_attrs_free(out);
    else
        *result = t; /* the caller's table only once the whole object decoded */
    return rc;
}

/* ---- the attributes frame of the wire --------------------------------------------------- */

#define WIRE_WHAT "attributes frame"

int trove_attrs_wire_encode(const struct trove_attrs *a, struct trove_bytes *out)
{
    size_t at;
    int rc;

    if (!a || !out)
        return TROVE_ERR_INVALID;
    for (size_t i = 0; i < a->n; i++)
        if (!row_ok(a, &a->rows[i]) || (i && a->rows[i].event < a->rows[i - 1].event))
            return TROVE_ERR_INVALID;
    if (a->n > TROVE_WIRE_MAX_ATTRS)
        return TROVE_ERR_LIMIT;
    at = out->len;
    if ((rc = trove_bytes_reserve(out, TROVE_WIRE_HEADER_SIZE)) != TROVE_OK)
        return rc;
    out->len += TROVE_WIRE_HEADER_SIZE;
    if ((rc = put_varint(out, a->nstr)) == TROVE_OK && (rc = stream(a, out)) == TROVE_OK &&
        out->len - at - TROVE_WIRE_HEADER_SIZE > TROVE_WIRE_MAX_PAYLOAD)
        rc = TROVE_ERR_LIMIT;
    if (rc != TROVE_OK) {
        out->len = at;
        return rc;
    }
    out->ptr[at] = TROVE_WIRE_MAGIC0;
    out->ptr[at + 1] = TROVE_WIRE_MAGIC1;
    out->ptr[at + 2] = TROVE_WIRE_ATTRS;
    out->ptr[at + 3] = TROVE_WIRE_VERSION;
    trove__put_le32(out->ptr + at + 4, (uint32_t)a->n);
    trove__put_le32(out->ptr + at + 8, (uint32_t)(out->len - at - TROVE_WIRE_HEADER_SIZE));
    trove__put_le32(out->ptr + at + 12, 0);
    return TROVE_OK;
}

int trove_attrs_wire_decode(const uint8_t *buf, size_t len, struct trove_attrs *result,
                            struct trove_diag *diag)
{
    struct trove_wire_header h;
    struct trove_attrs t;
    const uint8_t *p, *end;
    uint64_t ns;
    int rc, why = 0;

    memset(&t, 0, sizeof t);
    if (!result || (!buf && len))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "%s: no buffer or no table", WIRE_WHAT);
    if ((rc = trove_wire_parse_header(buf, len, &h, diag)) != TROVE_OK)
        return rc;
    if (h.format != TROVE_WIRE_ATTRS)
        return TROVE_FAIL(diag, TROVE_ERR_FORMAT, 2, "a %s frame, not an attrs frame",
                          trove_wire_format_name(h.format));
    if (len - TROVE_WIRE_HEADER_SIZE < h.payload_len)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len, "%s truncated: payload of %u bytes, %zu present",
                          WIRE_WHAT, h.payload_len, len - TROVE_WIRE_HEADER_SIZE);
    p = buf + TROVE_WIRE_HEADER_SIZE;
    end = p + h.payload_len;
    if (!(p = trove_get_varint(p, end, 32, &ns, &why)))
        return TROVE_FAIL(diag, why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT,
                          TROVE_WIRE_HEADER_SIZE, "%s: its strings' count is not a varint", WIRE_WHAT);
    if (ns > TROVE_ATTRS_MAX_STRINGS)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, TROVE_WIRE_HEADER_SIZE,
                          "%s: %" PRIu64 " strings, over 2^24", WIRE_WHAT, ns);
    if ((uint64_t)(end - p) < ns + 4 * (uint64_t)h.count)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 8,
                          "%s: %" PRIu64 " strings and %u rows cannot fit %zu bytes", WIRE_WHAT,
                          ns, h.count, (size_t)(end - p));
    if (h.count && !(t.rows = trove__calloc(h.count, sizeof *t.rows)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "%s: out of memory", WIRE_WHAT);
    t.cap = h.count;
    {
        const struct where w = {(uint64_t)(p - buf), WIRE_WHAT};
        rc = parse(p, (size_t)(end - p), h.count, ns, &t, &w, diag);
    }
    if (rc != TROVE_OK) {
        trove_attrs_free(&t);
        return rc;
    }
    *result = t;
    return TROVE_OK;
}

/* ---- JSON ------------------------------------------------------------------------------- */

int trove_attrs_json(const struct trove_attrs *a, size_t from, size_t to, struct trove_bytes *out)
{
    static const char *const scopes[] = {"arg", "field", "trace"};
    static const char *const types[] = {"", "int", "double", "string", "bool", "json"};
    char num[64];
    size_t at = out->len, len;
    int rc = trove_bytes_append(out, "[", 1);

    for (size_t i = from; rc == TROVE_OK && i < to && i < a->n; i++) {
        const struct trove_attr *r = &a->rows[i];
        const char *k = trove_attrs_string(a, r->key, &len);
        int n = snprintf(num, sizeof num, "%s{\"event\":%" PRIu64 ",\"scope\":\"%s\",\"key\":",
                         i > from ? "," : "", r->event, scopes[r->scope % 3]);
        rc = trove_bytes_append(out, num, (size_t)n);
        rc = rc ? rc : trove__json_put_str(out, k ? k : "", k ? len : 0);
        n = snprintf(num, sizeof num, ",\"type\":\"%s\",\"value\":", types[r->type % 6]);
        rc = rc ? rc : trove_bytes_append(out, num, (size_t)n);
        if (rc != TROVE_OK)
            break;
        switch (r->type) {
        case TROVE_ATTR_INT:
            n = snprintf(num, sizeof num, "%" PRId64, r->v.i);
            break;
        case TROVE_ATTR_DOUBLE:
            n = r->v.d != r->v.d ? snprintf(num, sizeof num, "\"NaN\"")
                : r->v.d > 1.7976931348623157e308 ? snprintf(num, sizeof num, "\"Infinity\"")
                : r->v.d < -1.7976931348623157e308 ? snprintf(num, sizeof num, "\"-Infinity\"")
                                                    : snprintf(num, sizeof num, "%.17g", r->v.d);
            break;
        case TROVE_ATTR_BOOL:
            n = snprintf(num, sizeof num, "%s", r->v.b ? "true" : "false");
            break;
        default: {
            const char *v = trove_attrs_string(a, r->v.s, &len);
            n = 0;
            rc = trove__json_put_str(out, v ? v : "", v ? len : 0);
            break;
        }
        }
        if (rc == TROVE_OK && n > 0)
            rc = trove_bytes_append(out, num, (size_t)n);
        rc = rc ? rc : trove_bytes_append(out, "}", 1);
    }
    rc = rc ? rc : trove_bytes_append(out, "]", 1);
    if (rc != TROVE_OK)
        out->len = at;
    return rc;
}
