/*
 * perfetto_args.c: what a Perfetto track event carries besides its times and names, as
 * attribute rows (opt->attrs; docs/formats/perfetto.md, "Attributes"): its debug annotations
 * (a scalar as a typed row; a dict, an array or a legacy nested value as its JSON text; an
 * interned string value by its iid in the sequence's debug_annotation_string_values) and its
 * log message's body. Each row is staged in r->stage by the event's number in the trace
 * (perfetto_read.c hands the rows of the events it keeps to the caller).
 *
 * Trust: every field is checked against its message (protobuf.h); a value that does not read
 * (malformed, deeper than NEST_MAX, a string not UTF-8 or over 1 MiB, an iid never interned)
 * is not kept and is counted, never an error of the trace.
 */
#include "perfetto_reader.h"
#include "common/json.h"
#include "common/utf8.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define FIELD_PREFIX "trove.field."

int trove__pr_string_ok(const uint8_t *p, size_t n)
{
    return n <= TROVE_ATTRS_MAX_STRING && trove__utf8_valid_prefix(p, n) == n;
}

int trove__pr_stage(struct pr *r, uint64_t seq, uint8_t scope, const uint8_t *key, size_t klen,
                    struct trove_attr *row, int *kept)
{
    int rc;
    row->event = seq;
    row->scope = scope;
    if ((rc = trove_attrs_intern(&r->stage, key, klen, &row->key)) != TROVE_OK ||
        (rc = trove_attrs_add(&r->stage, row)) != TROVE_OK)
        return rc;
    *kept = 1;
    return TROVE_OK;
}

#define NEST_MAX 32 /* levels of dicts and arrays in an annotation's value */

/* A double as JSON into num: a NaN or an infinity as null. */
static int json_double(char *num, size_t cap, uint64_t bits)
{
    double d;
    memcpy(&d, &bits, 8);
    return d == d && d - d == 0 ? snprintf(num, cap, "%.17g", d) : snprintf(num, cap, "null");
}

/* A leaf NestedValue's one value (int 5, double 6, bool 7, string 8) as a row's: 1 and *row
 * (a string's bytes in *sv) when f is a leaf, 0 when it is a dict or an array, CORRUPT when
 * it does not read (two values, none, a string not kept). */
static int legacy_leaf(const struct trove__pb_field *f, struct trove_attr *row,
                       const uint8_t **sv, size_t *svlen)
{
    struct trove__pb m = trove__pb_sub(f);
    struct trove__pb_field g;
    int rc, n = 0;
    uint64_t type = 0;

    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        if (g.num == 1 && g.wt == TROVE__PB_VARINT) {
            type = g.v;
        } else if (g.num == 5 && g.wt == TROVE__PB_VARINT) {
            row->type = TROVE_ATTR_INT;
            row->v.i = (int64_t)g.v;
            n++;
        } else if (g.num == 6 && g.wt == TROVE__PB_FIXED64) {
            row->type = TROVE_ATTR_DOUBLE;
            memcpy(&row->v.d, &g.v, 8);
            n++;
        } else if (g.num == 7 && g.wt == TROVE__PB_VARINT) {
            row->type = TROVE_ATTR_BOOL;
            row->v.b = g.v != 0;
            n++;
        } else if (g.num == 8 && g.wt == TROVE__PB_LEN && trove__pr_string_ok(g.data, g.len)) {
            row->type = TROVE_ATTR_STRING;
            *sv = g.data;
            *svlen = g.len;
            n++;
        } else if (g.num == 8 || g.num > 4) {
            return TROVE_ERR_CORRUPT; /* a value of the wrong kind, a string not kept */
        }
    }
    if (rc < 0)
        return TROVE_ERR_CORRUPT;
    if (type != 0)
        return 0;
    return n == 1 ? 1 : TROVE_ERR_CORRUPT;
}

/* A legacy NestedValue (DebugAnnotation field 8) as compact JSON appended to out: a dict
 * (nested_type 1) its dict_keys 2 paired in order with its dict_values 3, an array (2) its
 * array_values 4, a leaf its one value. TROVE_ERR_CORRUPT for what does not read (keys and
 * values not paired, another type, deeper than NEST_MAX), TROVE_ERR_NOMEM. */
static int legacy(const struct trove__pb_field *f, int depth, struct trove_bytes *out)
{
    struct trove__pb m = trove__pb_sub(f), keys = trove__pb_sub(f);
    struct trove__pb_field g, k;
    struct trove_attr leaf;
    const uint8_t *sv = NULL;
    size_t svlen = 0;
    char num[40];
    int rc, n = 0, w = 0;
    uint32_t want;

    if (depth > NEST_MAX)
        return TROVE_ERR_CORRUPT;
    memset(&leaf, 0, sizeof leaf);
    if ((rc = legacy_leaf(f, &leaf, &sv, &svlen)) < 0)
        return rc;
    if (rc == 1) {
        if (leaf.type == TROVE_ATTR_STRING)
            return trove__json_put_str(out, (const char *)sv, svlen);
        if (leaf.type == TROVE_ATTR_INT)
            w = snprintf(num, sizeof num, "%" PRId64, leaf.v.i);
        else if (leaf.type == TROVE_ATTR_BOOL)
            w = snprintf(num, sizeof num, "%s", leaf.v.b ? "true" : "false");
        else {
            uint64_t bits;
            memcpy(&bits, &leaf.v.d, 8);
            w = json_double(num, sizeof num, bits);
        }
        return trove_bytes_append(out, num, (size_t)w);
    }
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK && !(g.num == 1 && g.wt == 0))
        ;
    if (rc != TROVE__PB_OK || (g.v != 1 && g.v != 2))
        return TROVE_ERR_CORRUPT;
    want = g.v == 1 ? 3 : 4;
    if ((rc = trove_bytes_append(out, want == 3 ? "{" : "[", 1)) != TROVE_OK)
        return rc;
    m = trove__pb_sub(f);
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        if (g.num != 3 && g.num != 4)
            continue;
        if (g.num != want || g.wt != TROVE__PB_LEN)
            return TROVE_ERR_CORRUPT; /* a dict's array values, or the other way */
        if (n++ && (rc = trove_bytes_append(out, ",", 1)) != TROVE_OK)
            return rc;
        if (want == 3) { /* the next key */
            while ((rc = trove__pb_next(&keys, &k)) == TROVE__PB_OK && k.num != 2)
                ;
            if (rc != TROVE__PB_OK || k.wt != TROVE__PB_LEN || !trove__pr_string_ok(k.data, k.len))
                return TROVE_ERR_CORRUPT;
            if ((rc = trove__json_put_str(out, (const char *)k.data, k.len)) != TROVE_OK ||
                (rc = trove_bytes_append(out, ":", 1)) != TROVE_OK)
                return rc;
        }
        if ((rc = legacy(&g, depth + 1, out)) != TROVE_OK)
            return rc;
    }
    if (rc < 0)
        return TROVE_ERR_CORRUPT;
    if (want == 3) { /* a key left over has no value */
        while ((rc = trove__pb_next(&keys, &k)) == TROVE__PB_OK)
            if (k.num == 2)
                return TROVE_ERR_CORRUPT;
    }
    return trove_bytes_append(out, want == 3 ? "}" : "]", 1);
}

/* The value of the DebugAnnotation f (its dict's entries 11, each "name": value, or its
 * array's values 12, or one scalar) as compact JSON appended to out; keyed: an entry of a
 * dict, its name (10, or name_iid 1) first. TROVE_ERR_CORRUPT for what is not read (a value
 * malformed, deeper than NEST_MAX, an interned string 17 never interned), TROVE_ERR_NOMEM. A
 * NaN or an infinity is null, a pointer its hex as a string, legacy JSON its text as a
 * string, a legacy nested value 8 its JSON (legacy). */
static int nested(struct pr *r, struct seq *s, const struct trove__pb_field *f, int depth,
                  int keyed, struct trove_bytes *out)
{
    struct trove__pb m;
    struct trove__pb_field g;
    char num[40];
    int rc, kind = 0, n = 0, w;

    if (depth > NEST_MAX)
        return TROVE_ERR_CORRUPT;
    if (keyed) {
        const char *key = NULL;
        size_t klen = 0;
        m = trove__pb_sub(f);
        while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK)
            if (g.num == 10 && g.wt == TROVE__PB_LEN && trove__pr_string_ok(g.data, g.len)) {
                key = (const char *)g.data;
                klen = g.len;
            } else if (g.num == 1 && g.wt == TROVE__PB_VARINT &&
                       trove__pr_map_get(&s->anames, g.v) != NONE) {
                key = trove_attrs_string(&r->stage, trove__pr_map_get(&s->anames, g.v), &klen);
            }
        if (rc < 0 || !key)
            return TROVE_ERR_CORRUPT;
        if ((rc = trove__json_put_str(out, key, klen)) != TROVE_OK ||
            (rc = trove_bytes_append(out, ":", 1)) != TROVE_OK)
            return rc;
    }
    m = trove__pb_sub(f);
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        if (g.num == 1 || g.num == 10)
            continue;
        if (g.num == 11 || g.num == 12) {
            if (g.wt != TROVE__PB_LEN || (kind && kind != (int)g.num) || n)
                return TROVE_ERR_CORRUPT;
            if ((rc = trove_bytes_append(out, kind ? "," : g.num == 11 ? "{" : "[", 1)) != TROVE_OK ||
                (rc = nested(r, s, &g, depth + 1, g.num == 11, out)) != TROVE_OK)
                return rc;
            kind = (int)g.num;
            continue;
        }
        if (kind || n++) /* a value beside entries, or two values */
            return TROVE_ERR_CORRUPT;
        w = -1;
        if (g.wt == TROVE__PB_VARINT && g.num == 2)
            w = snprintf(num, sizeof num, "%s", g.v ? "true" : "false");
        else if (g.wt == TROVE__PB_VARINT && g.num == 3)
            w = snprintf(num, sizeof num, "%" PRIu64, g.v);
        else if (g.wt == TROVE__PB_VARINT && g.num == 4)
            w = snprintf(num, sizeof num, "%" PRId64, (int64_t)g.v);
        else if (g.wt == TROVE__PB_VARINT && g.num == 7)
            w = snprintf(num, sizeof num, "\"0x%" PRIx64 "\"", g.v);
        else if (g.wt == TROVE__PB_FIXED64 && g.num == 5)
            w = json_double(num, sizeof num, g.v);
        else if (g.wt == TROVE__PB_LEN && (g.num == 6 || g.num == 9) &&
                 trove__pr_string_ok(g.data, g.len)) {
            if ((rc = trove__json_put_str(out, (const char *)g.data, g.len)) != TROVE_OK)
                return rc;
            continue;
        } else if (g.wt == TROVE__PB_VARINT && g.num == 17 &&
                   trove__pr_map_get(&s->svals, g.v) != NONE) {
            size_t len;
            const char *str = trove_attrs_string(&r->stage, trove__pr_map_get(&s->svals, g.v), &len);
            if ((rc = trove__json_put_str(out, str, len)) != TROVE_OK)
                return rc;
            continue;
        } else if (g.wt == TROVE__PB_LEN && g.num == 8) {
            if ((rc = legacy(&g, depth + 1, out)) != TROVE_OK)
                return rc;
            continue;
        } else {
            return TROVE_ERR_CORRUPT;
        }
        if ((rc = trove_bytes_append(out, num, (size_t)w)) != TROVE_OK)
            return rc;
    }
    if (rc < 0)
        return TROVE_ERR_CORRUPT;
    if (kind)
        return trove_bytes_append(out, kind == 11 ? "}" : "]", 1);
    return n ? TROVE_OK : trove_bytes_append(out, "null", 4); /* an empty dict or array */
}

/* A DebugAnnotation: name (10) or name_iid (1); a bool (2), uint (3), int (4), double (5),
 * string (6), interned string (17), pointer (7) or legacy JSON (9) value kept as a row, a dict
 * (11) or an array (12) as its JSON text (nested), a legacy nested value (8) as its leaf's row
 * or its dict's or array's JSON text (legacy); what does not read is not (*kept 0). */
int trove__pr_annotation(struct pr *r, struct seq *s, const struct trove__pb_field *f,
                         uint64_t seq, int *kept)
{
    struct trove__pb m = trove__pb_sub(f);
    struct trove__pb_field g;
    struct trove_attr row;
    const uint8_t *key = NULL, *sv = NULL;
    size_t klen = 0, svlen = 0, tlen;
    uint32_t kid = NONE; /* a key interned in r->stage: its bytes may move */
    struct trove__pb_field lf; /* the legacy nested value */
    char text[32];
    int rc, have = 0, other = 0;

    *kept = 0;
    memset(&lf, 0, sizeof lf);
    memset(&row, 0, sizeof row);
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        switch (g.num) {
        case 1:
            if (g.wt == TROVE__PB_VARINT) {
                kid = trove__pr_map_get(&s->anames, g.v);
                key = NULL;
            }
            break;
        case 10:
            if (g.wt == TROVE__PB_LEN && trove__pr_string_ok(g.data, g.len)) {
                key = g.data;
                klen = g.len;
                kid = NONE;
            }
            break;
        case 2: case 3: case 4: case 7:
            if (g.wt != TROVE__PB_VARINT)
                break;
            have = 1;
            sv = NULL;
            if (g.num == 2) {
                row.type = TROVE_ATTR_BOOL;
                row.v.b = g.v != 0;
            } else if (g.num == 4 || (g.num == 3 && g.v <= INT64_MAX)) {
                row.type = TROVE_ATTR_INT;
                row.v.i = (int64_t)g.v;
            } else { /* a uint past int64 as its digits, a pointer as hex */
                if (g.num == 3)
                    tlen = (size_t)snprintf(text, sizeof text, "%" PRIu64, g.v);
                else
                    tlen = (size_t)snprintf(text, sizeof text, "0x%" PRIx64, g.v);
                row.type = g.num == 3 ? TROVE_ATTR_JSON : TROVE_ATTR_STRING;
                sv = (const uint8_t *)text;
                svlen = tlen;
            }
            break;
        case 5:
            if (g.wt == TROVE__PB_FIXED64) {
                have = 1;
                sv = NULL;
                row.type = TROVE_ATTR_DOUBLE;
                memcpy(&row.v.d, &g.v, 8);
            }
            break;
        case 6:
        case 9:
            if (g.wt == TROVE__PB_LEN && trove__pr_string_ok(g.data, g.len)) {
                have = 1;
                row.type = g.num == 6 ? TROVE_ATTR_STRING : TROVE_ATTR_JSON;
                sv = g.data;
                svlen = g.len;
            } else {
                other = 1;
            }
            break;
        case 11:
        case 12: /* a dict or an array: its JSON, below */
            if (g.wt == TROVE__PB_LEN)
                have = 2;
            else
                other = 1;
            break;
        case 17: /* an interned string: its iid in debug_annotation_string_values */
            if (g.wt == TROVE__PB_VARINT && trove__pr_map_get(&s->svals, g.v) != NONE) {
                have = 1;
                sv = NULL;
                row.type = TROVE_ATTR_STRING;
                row.v.s = trove__pr_map_get(&s->svals, g.v);
            } else {
                other = 1;
            }
            break;
        case 8: /* a legacy nested value: below */
            if (g.wt == TROVE__PB_LEN) {
                have = 3;
                lf = g;
            } else {
                other = 1;
            }
            break;
        default: /* what a later Perfetto adds */
            other = 1;
            break;
        }
    }
    if (rc >= 0 && have == 3) { /* a leaf as its row, a dict or an array as its JSON */
        sv = NULL;
        if ((rc = legacy_leaf(&lf, &row, &sv, &svlen)) == 1)
            have = 1;
        else if (rc == 0)
            have = 2;
        else
            other = 1;
        rc = 0;
    }
    if (rc < 0 || (!key && kid == NONE) || !have || other) /* malformed: not kept, as without */
        return TROVE_OK;
    if (have == 2) { /* the whole value as JSON text; one that is not read is not kept */
        r->nest.len = 0;
        if ((rc = nested(r, s, f, 0, 0, &r->nest)) == TROVE_ERR_NOMEM)
            return rc;
        if (rc != TROVE_OK || r->nest.len > TROVE_ATTRS_MAX_STRING)
            return TROVE_OK;
        row.type = TROVE_ATTR_JSON;
        sv = r->nest.ptr;
        svlen = r->nest.len;
    }
    if (sv && (rc = trove_attrs_intern(&r->stage, sv, svlen, &row.v.s)) != TROVE_OK)
        return rc;
    if (kid != NONE) /* after the value: interning it may move the strings */
        key = (const uint8_t *)trove_attrs_string(&r->stage, kid, &klen);
    if (klen > strlen(FIELD_PREFIX) && !memcmp(key, FIELD_PREFIX, strlen(FIELD_PREFIX)))
        return trove__pr_stage(r, seq, TROVE_ATTR_FIELD, key + strlen(FIELD_PREFIX),
                     klen - strlen(FIELD_PREFIX), &row, kept);
    return trove__pr_stage(r, seq, TROVE_ATTR_ARG, key, klen, &row, kept);
}

/* A LogMessage's body (body_iid 2, interned) as the FIELD row "log_message". */
int trove__pr_log_message(struct pr *r, struct seq *s, const struct trove__pb_field *f,
                          uint64_t seq, int *kept)
{
    struct trove__pb m = trove__pb_sub(f);
    struct trove__pb_field g;
    struct trove_attr row;
    uint32_t id = NONE;
    int rc;

    *kept = 0;
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK)
        if (g.num == 2 && g.wt == TROVE__PB_VARINT)
            id = trove__pr_map_get(&s->bodies, g.v);
    if (rc < 0 || id == NONE) /* malformed, or no body: not kept */
        return TROVE_OK;
    memset(&row, 0, sizeof row);
    row.type = TROVE_ATTR_STRING;
    row.v.s = id;
    return trove__pr_stage(r, seq, TROVE_ATTR_FIELD, (const uint8_t *)"log_message", 11, &row, kept);
}

