/*
 * tables_args.c: the events' attributes (trove/attrs.h) as a bundle's args table, and back
 * (include/trove/tables.h, docs/formats/bundle.md, "args.parquet").
 *
 * One row an attribute: the trace's rows first (scope "trace", event 0), then the events'
 * in event order. Parquet columns here are required and integer or string, so a value is its
 * text in one string column and its type says how to read it: an int's decimal digits, a
 * double's fewest digits (15 to 17) that read back as the same double ("nan", "inf" and
 * "-inf" past JSON), a string as it is, a bool as true or false, JSON as its text. Read
 * back, each text must be what the writer makes of its value, so that a bundle gives the
 * rows it was written from exactly (a NaN's payload aside).
 */
#include "trove/tables.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/utf8.h"

#include "trove/attrs.h"
#include "trove/parquet.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCOLS 5

static const char *const scope_name[] = {"arg", "field", "trace"};
static const char *const type_name[] = {"", "int", "double", "string", "bool", "json"};

/* A double's text that strtod reads back as the same double. */
static size_t double_text(double d, char out[48])
{
    if (isnan(d))
        return (size_t)snprintf(out, 48, "nan");
    if (isinf(d))
        return (size_t)snprintf(out, 48, d < 0 ? "-inf" : "inf");
    for (int p = 15;; p++) {
        int n = snprintf(out, 48, "%.*g", p, d);
        if (p == 17 || strtod(out, NULL) == d)
            return (size_t)n;
    }
}

/* Row r of a as its value's text: in t (numbers, bools) or a's own string. */
static void value_text(const struct trove_attrs *a, const struct trove_attr *r, char t[48],
                       const char **s, size_t *len)
{
    switch (r->type) {
    case TROVE_ATTR_INT:
        *len = (size_t)snprintf(t, 48, "%" PRId64, r->v.i);
        *s = t;
        break;
    case TROVE_ATTR_DOUBLE:
        *len = double_text(r->v.d, t);
        *s = t;
        break;
    case TROVE_ATTR_BOOL:
        *s = r->v.b ? "true" : "false";
        *len = r->v.b ? 4 : 5;
        break;
    default:
        *s = trove_attrs_string(a, r->v.s, len);
        break;
    }
}

int trove_tables_write_args(const struct trove_attrs *attrs, const struct trove_attrs *meta,
                            const struct trove_tables_options *o, struct trove_bytes *out,
                            uint64_t *rows_out)
{
    static const char *const names[NCOLS] = {"event", "scope", "key", "type", "value"};
    struct trove_pq_column_def defs[NCOLS];
    struct trove_pq_column_data data[NCOLS];
    struct trove_tables_options dflt;
    struct trove_pq_writer *w = NULL;
    size_t nm = meta ? meta->n : 0, na = attrs ? attrs->n : 0, n = nm + na;
    int64_t *ev = NULL;
    const char **str[4] = {0};
    uint32_t *len[4] = {0};
    struct trove_bytes nums = {0}; /* the numbers' and bools' texts, back to back */
    uint64_t *at = NULL;           /* where in nums (UINT64_MAX: a string of the table) */
    size_t start = out ? out->len : 0;
    int rc = TROVE_OK;

    if (!out)
        return TROVE_ERR_INVALID;
    for (size_t i = 1; i < na; i++)
        if (attrs->rows[i].event < attrs->rows[i - 1].event)
            return TROVE_ERR_INVALID;
    if (!o) {
        trove_tables_defaults(&dflt);
        o = &dflt;
    }
    if (!(ev = trove__malloc((n ? n : 1) * sizeof *ev)) ||
        !(at = trove__malloc((n ? n : 1) * sizeof *at))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (int k = 0; k < 4; k++)
        if (!(str[k] = trove__malloc((n ? n : 1) * sizeof *str[k])) ||
            !(len[k] = trove__malloc((n ? n : 1) * sizeof *len[k]))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
    for (size_t i = 0; i < n; i++) {
        const struct trove_attrs *a = i < nm ? meta : attrs;
        const struct trove_attr *r = &a->rows[i < nm ? i : i - nm];
        char t[48];
        const char *s;
        size_t l = 0, kl = 0;
        if (r->scope > TROVE_ATTR_TRACE || r->type < TROVE_ATTR_INT || r->type > TROVE_ATTR_JSON) {
            rc = TROVE_ERR_INVALID;
            goto out;
        }
        ev[i] = i < nm ? 0 : (int64_t)r->event;
        str[0][i] = scope_name[i < nm ? TROVE_ATTR_TRACE : r->scope];
        len[0][i] = (uint32_t)strlen(str[0][i]);
        str[1][i] = trove_attrs_string(a, r->key, &kl);
        len[1][i] = (uint32_t)kl;
        str[2][i] = type_name[r->type];
        len[2][i] = (uint32_t)strlen(str[2][i]);
        value_text(a, r, t, &s, &l);
        if (s == t || r->type == TROVE_ATTR_BOOL) { /* kept in nums: pointers set below */
            at[i] = nums.len;
            if ((rc = trove_bytes_append(&nums, s, l)) != TROVE_OK)
                goto out;
            str[3][i] = NULL;
        } else {
            at[i] = UINT64_MAX;
            str[3][i] = s;
        }
        len[3][i] = (uint32_t)l;
    }
    for (size_t i = 0; i < n; i++)
        if (at[i] != UINT64_MAX)
            str[3][i] = (const char *)nums.ptr + at[i];
    for (int k = 0; k < NCOLS; k++) {
        defs[k].name = names[k];
        defs[k].type = k == 0 ? TROVE_PQ_INT64 : TROVE_PQ_STRING;
        defs[k].bits = k == 0 ? 64 : 0;
        defs[k].is_unsigned = k == 0;
        defs[k].encoding = o->mode == TROVE_TABLES_PLAIN                    ? TROVE_PQ_ENC_PLAIN
                           : k == 0 && o->mode == TROVE_TABLES_DELTA_DICT ? TROVE_PQ_ENC_DELTA
                                                                          : TROVE_PQ_ENC_DICT;
        memset(&data[k], 0, sizeof data[k]);
    }
    data[0].i64 = ev;
    for (int k = 1; k < NCOLS; k++) {
        data[k].str = str[k - 1];
        data[k].str_len = len[k - 1];
    }
    if ((rc = trove_pq_writer_new(defs, NCOLS, o->codec, o->row_group_rows, &w)) != TROVE_OK ||
        (n && (rc = trove_pq_writer_add(w, data, n)) != TROVE_OK) ||
        (rc = trove_pq_writer_finish(w, out)) != TROVE_OK)
        goto out;
    if (rows_out)
        *rows_out = n;
out:
    if (rc != TROVE_OK)
        out->len = start;
    trove_pq_writer_free(w);
    free(ev);
    free(at);
    for (int k = 0; k < 4; k++) {
        free((void *)str[k]);
        free(len[k]);
    }
    trove_bytes_free(&nums);
    return rc;
}

/* ---- reading ---------------------------------------------------------------------------- */

static int name_index(const char *const *names, int n, const uint8_t *s, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && !memcmp(names[i], s, len))
            return i;
    return -1;
}

/* The value of row r of type `type` from its text s[0..len): only the text the writer makes
 * of a value is one (so that what reads also writes back the same). */
static int parse_value(struct trove_attrs *a, int type, const uint8_t *s, size_t len,
                       struct trove_attr *r)
{
    char t[48], back[48];
    char *end;

    switch (type) {
    case TROVE_ATTR_INT:
    case TROVE_ATTR_DOUBLE:
        if (len == 0 || len >= sizeof t)
            return TROVE_ERR_CORRUPT;
        memcpy(t, s, len);
        t[len] = 0;
        /* no errno: the text read back decides (an int past int64 prints otherwise, and
         * strtod's ERANGE for a subnormal is no error here) */
        if (type == TROVE_ATTR_INT) {
            r->v.i = strtoll(t, &end, 10);
            snprintf(back, sizeof back, "%" PRId64, r->v.i);
        } else {
            r->v.d = strtod(t, &end);
            double_text(r->v.d, back);
        }
        return *end == 0 && !strcmp(back, t) ? TROVE_OK : TROVE_ERR_CORRUPT;
    case TROVE_ATTR_BOOL:
        if (len == 4 && !memcmp(s, "true", 4))
            r->v.b = 1;
        else if (len == 5 && !memcmp(s, "false", 5))
            r->v.b = 0;
        else
            return TROVE_ERR_CORRUPT;
        return TROVE_OK;
    default:
        return trove_attrs_intern(a, s, len, &r->v.s);
    }
}

int trove_tables_read_args(const uint8_t *buf, size_t len, uint64_t events,
                           struct trove_attrs *attrs, struct trove_attrs *meta,
                           struct trove_diag *diag)
{
    static const char *const names[NCOLS] = {"event", "scope", "key", "type", "value"};
    struct trove_pq_file *f = NULL;
    struct trove_pq_strings s[4];
    int64_t *ev = NULL;
    size_t col[NCOLS], n0 = attrs ? attrs->n : 0, m0 = meta ? meta->n : 0;
    uint64_t rows, last = 0;
    int rc;

    memset(s, 0, sizeof s);
    if (!buf || !attrs)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "bad arguments to trove_tables_read_args");
    if ((rc = trove_pq_open(buf, len, &f, diag)) != TROVE_OK)
        return rc;
    rows = trove_pq_rows(f);
    if (rows > TROVE_ATTRS_MAX_ROWS * 2) {
        rc = TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "table args: %" PRIu64 " rows, over %" PRIu64,
                        rows, TROVE_ATTRS_MAX_ROWS * 2);
        goto out;
    }
    for (int k = 0; k < NCOLS; k++) {
        int i = trove_pq_find(f, names[k]);
        if (i < 0 || trove_pq_column_type(f, (size_t)i) !=
                         (k == 0 ? TROVE_PQ_INT64 : TROVE_PQ_STRING)) {
            rc = TROVE_FAIL(diag, TROVE_ERR_FORMAT, 0,
                            "table args: no %s column \"%s\"", k == 0 ? "INT64" : "string",
                            names[k]);
            goto out;
        }
        col[k] = (size_t)i;
    }
    if (!(ev = trove__malloc((size_t)(rows ? rows : 1) * sizeof *ev))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    if ((rc = trove_pq_read_int(f, col[0], ev, diag)) != TROVE_OK)
        goto out;
    for (int k = 0; k < 4; k++)
        if ((rc = trove_pq_read_strings(f, col[k + 1], &s[k], diag)) != TROVE_OK)
            goto out;
    for (uint64_t i = 0; i < rows; i++) {
        struct trove_attr r;
        const uint8_t *p[4];
        size_t l[4];
        int scope, type;
        struct trove_attrs *to;
        for (int k = 0; k < 4; k++) {
            p[k] = s[k].bytes + s[k].off[i];
            l[k] = (size_t)(s[k].off[i + 1] - s[k].off[i]);
        }
        scope = name_index(scope_name, 3, p[0], l[0]);
        type = name_index(type_name, 6, p[2], l[2]);
        to = scope == TROVE_ATTR_TRACE ? meta : attrs;
        memset(&r, 0, sizeof r);
        r.event = (uint64_t)ev[i];
        r.scope = (uint8_t)scope;
        r.type = (uint8_t)type;
        if (scope < 0 || type < TROVE_ATTR_INT) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, i,
                            "table args, row %" PRIu64 ": %s \"%.*s\" is not one of %s", i,
                            scope < 0 ? "scope" : "type", (int)(scope < 0 ? l[0] : l[2]) & 63,
                            (const char *)(scope < 0 ? p[0] : p[2]),
                            scope < 0 ? "arg, field, trace" : "int, double, string, bool, json");
            goto out;
        }
        if (scope == TROVE_ATTR_TRACE ? r.event != 0 : r.event >= events || r.event < last) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, i,
                            "table args, row %" PRIu64 ": event %" PRIu64 " %s", i, r.event,
                            scope == TROVE_ATTR_TRACE ? "for the trace, which is 0"
                            : r.event >= events       ? "past the events"
                                                      : "before the row above's");
            goto out;
        }
        if ((l[1] > TROVE_ATTRS_MAX_STRING || l[3] > TROVE_ATTRS_MAX_STRING) ||
            (type != TROVE_ATTR_INT && type != TROVE_ATTR_DOUBLE && type != TROVE_ATTR_BOOL &&
             trove__utf8_valid_prefix(p[3], l[3]) != l[3]) ||
            trove__utf8_valid_prefix(p[1], l[1]) != l[1]) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, i,
                            "table args, row %" PRIu64 ": a key or value over %zu bytes, or not "
                            "UTF-8",
                            i, TROVE_ATTRS_MAX_STRING);
            goto out;
        }
        if (scope != TROVE_ATTR_TRACE)
            last = r.event;
        if (!to)
            continue;
        if ((rc = trove_attrs_intern(to, p[1], l[1], &r.key)) != TROVE_OK ||
            (rc = parse_value(to, type, p[3], l[3], &r)) != TROVE_OK ||
            (rc = trove_attrs_add(to, &r)) != TROVE_OK) {
            if (rc == TROVE_ERR_CORRUPT)
                TROVE_FAIL(diag, rc, i,
                           "table args, row %" PRIu64 ": \"%.*s\" is not the text of a %s", i,
                           (int)(l[3] & 63), (const char *)p[3], type_name[type]);
            else
                TROVE_FAIL(diag, rc, i, "table args, row %" PRIu64 ": %s", i, trove_strerror(rc));
            goto out;
        }
    }
    rc = TROVE_OK;
out:
    if (rc != TROVE_OK) {
        attrs->n = n0;
        if (meta)
            meta->n = m0;
    }
    free(ev);
    for (int k = 0; k < 4; k++)
        trove_pq_strings_free(&s[k]);
    trove_pq_close(f);
    return rc;
}
