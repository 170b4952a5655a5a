/*
 * thrift.c: the Thrift compact protocol subset of thrift.h. The writer appends to a
 * trove_bytes with a sticky error; the reader is a cursor over a bounded buffer that never
 * reads past len, limits nesting to TROVE_THRIFT_MAX_DEPTH and checks wire types.
 */
#include "thrift.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/varint.h"
#include "common/fail.h"

/* ---- writer ---- */

void trove__tw_init(struct trove__tw *w, struct trove_bytes *out)
{
    w->out = out;
    w->depth = 1;
    w->last[0] = 0;
    w->err = TROVE_OK;
}

static void put(struct trove__tw *w, const void *p, size_t n)
{
    if (w->err == TROVE_OK)
        w->err = trove_bytes_append(w->out, p, n);
}

static void put_byte(struct trove__tw *w, uint8_t b) { put(w, &b, 1); }

static void put_varint(struct trove__tw *w, uint64_t v)
{
    uint8_t tmp[TROVE_VARINT64_MAX];
    put(w, tmp, (size_t)(trove_put_varint(tmp, v) - tmp));
}

static void field_header(struct trove__tw *w, int16_t id, int type)
{
    int16_t *last;
    if (w->depth < 1 || w->depth > TROVE_THRIFT_MAX_DEPTH) {
        w->err = TROVE_ERR_INVALID;
        return;
    }
    last = &w->last[w->depth - 1];
    if (id > *last && id - *last <= 15) {
        put_byte(w, (uint8_t)((id - *last) << 4 | type));
    } else {
        put_byte(w, (uint8_t)type);
        put_varint(w, trove_zigzag64(id));
    }
    *last = id;
}

int trove__tw_finish(struct trove__tw *w)
{
    if (w->depth != 1 && w->err == TROVE_OK)
        w->err = TROVE_ERR_INVALID;
    put_byte(w, 0);
    w->depth = 0;
    return w->err;
}

void trove__tw_i32(struct trove__tw *w, int16_t id, int32_t v)
{
    field_header(w, id, TROVE_TT_I32);
    put_varint(w, trove_zigzag64(v));
}

void trove__tw_i64(struct trove__tw *w, int16_t id, int64_t v)
{
    field_header(w, id, TROVE_TT_I64);
    put_varint(w, trove_zigzag64(v));
}

void trove__tw_i16(struct trove__tw *w, int16_t id, int16_t v)
{
    field_header(w, id, TROVE_TT_I16);
    put_varint(w, trove_zigzag64(v));
}

void trove__tw_i8(struct trove__tw *w, int16_t id, int8_t v)
{
    field_header(w, id, TROVE_TT_I8);
    put_byte(w, (uint8_t)v);
}

void trove__tw_bool(struct trove__tw *w, int16_t id, int v)
{
    field_header(w, id, v ? TROVE_TT_TRUE : TROVE_TT_FALSE);
}

void trove__tw_binary(struct trove__tw *w, int16_t id, const void *p, size_t n)
{
    field_header(w, id, TROVE_TT_BINARY);
    trove__tw_elem_binary(w, p, n);
}

static void push(struct trove__tw *w)
{
    if (w->depth >= TROVE_THRIFT_MAX_DEPTH) {
        w->err = TROVE_ERR_INVALID;
        return;
    }
    w->last[w->depth++] = 0;
}

void trove__tw_struct_begin(struct trove__tw *w, int16_t id)
{
    field_header(w, id, TROVE_TT_STRUCT);
    push(w);
}

void trove__tw_elem_struct_begin(struct trove__tw *w) { push(w); }

void trove__tw_struct_end(struct trove__tw *w)
{
    if (w->depth <= 1) {
        w->err = TROVE_ERR_INVALID;
        return;
    }
    put_byte(w, 0);
    w->depth--;
}

void trove__tw_list_begin(struct trove__tw *w, int16_t id, int elem_type, size_t n)
{
    field_header(w, id, TROVE_TT_LIST);
    if (n < 15) {
        put_byte(w, (uint8_t)(n << 4 | (unsigned)elem_type));
    } else {
        put_byte(w, (uint8_t)(0xF0 | elem_type));
        put_varint(w, n);
    }
}

void trove__tw_elem_i32(struct trove__tw *w, int32_t v) { put_varint(w, trove_zigzag64(v)); }

void trove__tw_elem_binary(struct trove__tw *w, const void *p, size_t n)
{
    put_varint(w, n);
    if (n)
        put(w, p, n);
}

/* ---- reader ---- */

void trove__tr_init(struct trove__tr *r, const uint8_t *buf, size_t len, uint64_t base,
                    const char *what, struct trove_diag *diag)
{
    r->buf = buf;
    r->len = len;
    r->pos = 0;
    r->base = base;
    r->depth = 0;
    r->diag = diag;
    r->what = what;
}

int trove__tr_fail(struct trove__tr *r, int code, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return TROVE_FAIL(r->diag, code, r->base + r->pos, "%s: %s", r->what, msg);
}

static int get_varint(struct trove__tr *r, unsigned bits, uint64_t *v)
{
    int why = 0;
    const uint8_t *p = r->buf + r->pos, *end = r->buf + r->len;
    const uint8_t *q = trove_get_varint(p, end, bits, v, &why);
    if (!q) {
        if (why == 1)
            return trove__tr_fail(r, TROVE_ERR_TRUNCATED, "ends inside a varint");
        return trove__tr_fail(r, TROVE_ERR_CORRUPT, "varint wider than %u bits", bits);
    }
    r->pos += (size_t)(q - p);
    return TROVE_OK;
}

int trove__tr_enter(struct trove__tr *r)
{
    if (r->depth >= TROVE_THRIFT_MAX_DEPTH)
        return trove__tr_fail(r, TROVE_ERR_LIMIT, "structures nested deeper than %d",
                              TROVE_THRIFT_MAX_DEPTH);
    r->depth++;
    return TROVE_OK;
}

void trove__tr_leave(struct trove__tr *r) { r->depth--; }

int trove__tr_field(struct trove__tr *r, int16_t *last, int *type, int16_t *id)
{
    uint8_t b;
    int rc;
    if (r->pos >= r->len)
        return trove__tr_fail(r, TROVE_ERR_TRUNCATED, "ends inside a structure");
    b = r->buf[r->pos++];
    if (b == 0)
        return 0;
    *type = b & 0x0F;
    if (*type > TROVE_TT_STRUCT)
        return trove__tr_fail(r, TROVE_ERR_CORRUPT, "unknown wire type %d", *type);
    if (b >> 4) {
        int next = *last + (b >> 4);
        if (next > INT16_MAX)
            return trove__tr_fail(r, TROVE_ERR_CORRUPT, "field id past 32767");
        *id = (int16_t)next;
    } else {
        uint64_t z;
        int64_t v;
        if ((rc = get_varint(r, 32, &z)) != TROVE_OK)
            return rc;
        v = trove_unzigzag64(z);
        if (v < INT16_MIN || v > INT16_MAX)
            return trove__tr_fail(r, TROVE_ERR_CORRUPT, "field id %lld out of range",
                                  (long long)v);
        *id = (int16_t)v;
    }
    *last = *id;
    return 1;
}

static int wrong(struct trove__tr *r, const char *field, int type, const char *want)
{
    return trove__tr_fail(r, TROVE_ERR_CORRUPT, "field %s has wire type %d, not %s", field, type,
                          want);
}

int trove__tr_want(struct trove__tr *r, int type, int want, const char *field)
{
    static const char *const names[] = {"stop", "bool", "bool", "i8", "i16", "i32", "i64",
                                        "double", "binary", "list", "set", "map", "struct"};
    if (type == want)
        return TROVE_OK;
    return wrong(r, field, type, names[want]);
}

int trove__tr_i64(struct trove__tr *r, int type, const char *field, int64_t *v)
{
    uint64_t z;
    int rc;
    if (type != TROVE_TT_I64)
        return wrong(r, field, type, "i64");
    if ((rc = get_varint(r, 64, &z)) != TROVE_OK)
        return rc;
    *v = trove_unzigzag64(z);
    return TROVE_OK;
}

int trove__tr_i32(struct trove__tr *r, int type, const char *field, int32_t *v)
{
    uint64_t z;
    int rc;
    if (type != TROVE_TT_I32)
        return wrong(r, field, type, "i32");
    if ((rc = get_varint(r, 32, &z)) != TROVE_OK)
        return rc;
    *v = (int32_t)trove_unzigzag64(z);
    return TROVE_OK;
}

int trove__tr_i8(struct trove__tr *r, int type, const char *field, int8_t *v)
{
    if (type != TROVE_TT_I8)
        return wrong(r, field, type, "i8");
    if (r->pos >= r->len)
        return trove__tr_fail(r, TROVE_ERR_TRUNCATED, "ends inside field %s", field);
    *v = (int8_t)r->buf[r->pos++];
    return TROVE_OK;
}

int trove__tr_bool(struct trove__tr *r, int type, const char *field, int *v)
{
    if (type != TROVE_TT_TRUE && type != TROVE_TT_FALSE)
        return wrong(r, field, type, "bool");
    *v = type == TROVE_TT_TRUE;
    return TROVE_OK;
}

int trove__tr_binary(struct trove__tr *r, int type, const char *field, const uint8_t **p,
                     uint32_t *n)
{
    uint64_t len;
    int rc;
    if (type != TROVE_TT_BINARY)
        return wrong(r, field, type, "binary");
    if ((rc = get_varint(r, 32, &len)) != TROVE_OK)
        return rc;
    if (len > r->len - r->pos)
        return trove__tr_fail(r, TROVE_ERR_TRUNCATED, "field %s: %llu bytes past the end",
                              field, (unsigned long long)len);
    *p = r->buf + r->pos;
    *n = (uint32_t)len;
    r->pos += (size_t)len;
    return TROVE_OK;
}

int trove__tr_list(struct trove__tr *r, int type, const char *field, int *elem_type, uint32_t *n)
{
    uint8_t b;
    uint64_t size;
    int rc;
    if (type != TROVE_TT_LIST && type != TROVE_TT_SET)
        return wrong(r, field, type, "list");
    if (r->pos >= r->len)
        return trove__tr_fail(r, TROVE_ERR_TRUNCATED, "ends inside list %s", field);
    b = r->buf[r->pos++];
    *elem_type = b & 0x0F;
    if (*elem_type == TROVE_TT_STOP || *elem_type > TROVE_TT_STRUCT)
        return trove__tr_fail(r, TROVE_ERR_CORRUPT, "list %s: bad element type %d", field,
                              *elem_type);
    if ((b >> 4) != 15) {
        size = b >> 4;
    } else if ((rc = get_varint(r, 32, &size)) != TROVE_OK) {
        return rc;
    }
    /* Every element takes at least one byte. */
    if (size > r->len - r->pos)
        return trove__tr_fail(r, TROVE_ERR_TRUNCATED, "list %s: %llu elements past the end",
                              field, (unsigned long long)size);
    *n = (uint32_t)size;
    return TROVE_OK;
}

static int skip_bytes(struct trove__tr *r, size_t n)
{
    if (n > r->len - r->pos)
        return trove__tr_fail(r, TROVE_ERR_TRUNCATED, "ends inside a skipped value");
    r->pos += n;
    return TROVE_OK;
}

int trove__tr_skip(struct trove__tr *r, int type)
{
    uint64_t v;
    int rc = TROVE_OK;
    switch (type) {
    case TROVE_TT_TRUE:
    case TROVE_TT_FALSE:
        return TROVE_OK; /* a bool field's value is its type */
    case TROVE_TT_I8:
        return skip_bytes(r, 1);
    case TROVE_TT_I16:
    case TROVE_TT_I32:
    case TROVE_TT_I64:
        return get_varint(r, 64, &v);
    case TROVE_TT_DOUBLE:
        return skip_bytes(r, 8);
    case TROVE_TT_BINARY:
        if ((rc = get_varint(r, 32, &v)) != TROVE_OK)
            return rc;
        return skip_bytes(r, (size_t)v);
    case TROVE_TT_LIST:
    case TROVE_TT_SET: {
        int et;
        uint32_t n;
        if ((rc = trove__tr_list(r, type, "(skipped)", &et, &n)) != TROVE_OK)
            return rc;
        if ((rc = trove__tr_enter(r)) != TROVE_OK)
            return rc;
        for (uint32_t i = 0; i < n && rc == TROVE_OK; i++)
            rc = (et == TROVE_TT_TRUE || et == TROVE_TT_FALSE) ? skip_bytes(r, 1)
                                                               : trove__tr_skip(r, et);
        trove__tr_leave(r);
        return rc;
    }
    case TROVE_TT_MAP: {
        uint64_t n;
        int kt, vt;
        if ((rc = get_varint(r, 32, &n)) != TROVE_OK)
            return rc;
        if (n == 0)
            return TROVE_OK;
        if (r->pos >= r->len || n > r->len - r->pos)
            return trove__tr_fail(r, TROVE_ERR_TRUNCATED, "map of %llu entries past the end",
                                  (unsigned long long)n);
        kt = r->buf[r->pos] >> 4;
        vt = r->buf[r->pos] & 0x0F;
        r->pos++;
        if (kt == 0 || kt > TROVE_TT_STRUCT || vt == 0 || vt > TROVE_TT_STRUCT)
            return trove__tr_fail(r, TROVE_ERR_CORRUPT, "map of bad element types");
        if ((rc = trove__tr_enter(r)) != TROVE_OK)
            return rc;
        for (uint64_t i = 0; i < n && rc == TROVE_OK; i++) {
            rc = (kt <= TROVE_TT_FALSE) ? skip_bytes(r, 1) : trove__tr_skip(r, kt);
            if (rc == TROVE_OK)
                rc = (vt <= TROVE_TT_FALSE) ? skip_bytes(r, 1) : trove__tr_skip(r, vt);
        }
        trove__tr_leave(r);
        return rc;
    }
    case TROVE_TT_STRUCT: {
        int16_t last = 0, id;
        int ft;
        if ((rc = trove__tr_enter(r)) != TROVE_OK)
            return rc;
        while ((rc = trove__tr_field(r, &last, &ft, &id)) == 1)
            if ((rc = trove__tr_skip(r, ft)) != TROVE_OK)
                break;
        trove__tr_leave(r);
        return rc;
    }
    default:
        return trove__tr_fail(r, TROVE_ERR_CORRUPT, "unknown wire type %d", type);
    }
}
