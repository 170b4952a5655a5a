/*
 * chrome_json.c: the Chrome trace JSON importer (trove_chrome_import and its variants): the
 * document's grammar and the fields of each event. The trace rules — what each phase
 * becomes — are chrome_events.c, which this file calls at each event's '}'.
 *
 * Chrome writes a trace as one JSON document, either a bare array of event objects or an
 * object whose "traceEvents" member is that array (other members, such as "metadata", may
 * come before or after it). A real trace is tens of megabytes, almost all of it strings
 * and args we throw away, so the importer never builds a document tree and never holds the
 * input: the streaming tokenizer of common/json.h reads it through a window of one chunk
 * (1 MiB) refilled from the FILE*, and this file is the fixed-shape parser on top of it:
 *
 *   document := BOM? ( '[' events ']'? | '{' (member (',' member)*)? '}' )
 *   member   := "traceEvents" ':' '[' events ']'  |  key ':' value   (skipped)
 *   events   := event (',' event)*          (the bare array may stop at EOF, even after a ',')
 *   event    := '{' (key ':' value)* '}'    (keys we use are decoded; other values skipped)
 *
 * Values that are not used go through trove__json_skip(), which validates them with a fixed
 * stack of open brackets, capped at 512 levels counting the document's own. Strings are
 * decoded only into small bounded buffers (a lone surrogate escape becomes U+FFFD; names are
 * repaired byte by byte to valid UTF-8 by chrome_events.c); skipped strings are validated
 * and discarded. Numbers are never converted through a double on the way in: a time becomes
 * nanoseconds exactly, an id keeps its digits as text; only a counter's value becomes the
 * nearest double, from its digits.
 *
 * Each event object is collected into a flat set of fields (struct trove__cevent) and
 * evaluated when its '}' is read, because JSON does not order keys (the sample puts "args"
 * before "ph"). Of "args", only "name" (M), "step" (T) and the members whose values are
 * numbers (C: one counter value each; M: a sort index) are kept. Memory: one chunk, three name buffers of
 * TROVE_NAME_MAX bytes, and what chrome_events.c keeps per imported event; nothing is
 * proportional to the input size. See docs/formats/chrome-json.md.
 */
#include "chrome_json.h"
#include "chrome_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/fail.h"

#define CHUNK_DEFAULT ((size_t)1 << 20)
#define INPUT_DEFAULT ((uint64_t)4 << 30)   /* max_input when the caller passes 0 */
#define KEY_CAP TROVE__CHROME_KEY_CAP
#define SHORT_CAP TROVE__CHROME_SHORT_CAP
#define ID_CAP TROVE__CHROME_ID_CAP

/* ---- the fields of an event -------------------------------------------------------- */

/*
 * Read one value of an event field: strings into str (NULL: discard), numbers into num
 * (NULL: discard), anything else validated and discarded. Records the type and offset.
 */
static int read_field(struct trove__chrome *ps, struct trove__cfield *f,
                      struct trove__json_str *str, struct trove__json_num *num, int depth)
{
    struct trove__json *js = &ps->js;
    int c = trove__json_peek(js);
    struct trove__json_num tmp;
    f->off = trove__json_pos(js);
    if (c == '"') {
        f->type = TROVE__J_STRING;
        return trove__json_string(js, str);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        f->type = TROVE__J_NUMBER;
        return trove__json_number(js, num ? num : &tmp);
    }
    f->type = TROVE__J_OTHER;
    return trove__json_skip(js, depth);
}

/* A number's canonical text (trove__json_num_text), cut at the buffer (flagged over). */
static void num_text(const struct trove__json_num *n, struct trove__json_str *out)
{
    char tmp[TROVE_JSON_NUM_TEXT];
    size_t k = trove__json_num_text(n, tmp);
    out->len = k < out->cap ? k : out->cap;
    out->over = k > out->cap;
    memcpy(out->ptr, tmp, out->len);
}

/* An id ("id", id2's "local" or "global", "bind_id"): a string, or a number kept as its
 * text; anything else is validated, skipped and typed OTHER (no id). */
static int read_id(struct trove__chrome *ps, struct trove__cfield *f, struct trove__json_str *str,
                   uint8_t *is_num, int depth)
{
    struct trove__json_num num;
    int rc = read_field(ps, f, str, &num, depth);
    *is_num = 0;
    if (rc == TROVE_OK && f->type == TROVE__J_NUMBER) {
        num_text(&num, str);
        f->type = TROVE__J_STRING;
        *is_num = 1;
    }
    return rc;
}

/* "id2": {"local": ID} or {"global": ID} (the next byte is '{'). */
static int read_id2(struct trove__chrome *ps)
{
    struct trove__json *js = &ps->js;
    struct trove__cevent *ev = &ps->ev;
    int rc;

    trove__json_take(js);
    if (trove__json_peek(js) == '}') {
        trove__json_take(js);
        return TROVE_OK;
    }
    for (;;) {
        if ((rc = trove__json_key(js, &ps->key, "id2")) != TROVE_OK)
            return rc;
        if (trove__json_key_is(&ps->key, "local") || trove__json_key_is(&ps->key, "global")) {
            uint8_t kind = trove__json_key_is(&ps->key, "local") ? TROVE__ID_LOCAL
                                                                  : TROVE__ID_GLOBAL;
            if ((rc = read_id(ps, &ev->id, &ps->id, &ev->id_num, 3)) != TROVE_OK)
                return rc;
            ev->id_kind = ev->id.type == TROVE__J_STRING ? kind : 0;
        } else if ((rc = trove__json_skip(js, 3)) != TROVE_OK) {
            return rc;
        }
        if ((rc = trove__json_next_member(js, "id2")) <= 0)
            return rc;
    }
}

/* "flow_in" / "flow_out": true or false (anything else is validated and ignored). */
static int read_bool(struct trove__chrome *ps, struct trove__cfield *f, int c)
{
    int v, rc;
    f->off = trove__json_pos(&ps->js);
    if (c != 't' && c != 'f') {
        f->type = TROVE__J_OTHER;
        return trove__json_skip(&ps->js, 2);
    }
    if ((rc = trove__json_literal(&ps->js, &v)) != TROVE_OK)
        return rc;
    f->type = v == TROVE_JSON_TRUE ? TROVE__J_TRUE : TROVE__J_FALSE;
    return TROVE_OK;
}

/* A numeric member of "args", kept with its key (a counter's value). */
static int add_arg(struct trove__chrome *ps, const struct trove__json_num *num, uint64_t off)
{
    struct trove__cevent *ev = &ps->ev;
    struct trove__carg *a;
    int rc;

    if (ev->nargs == ps->cap_args) {
        size_t cap = ps->cap_args ? ps->cap_args * 2 : 8;
        struct trove__carg *p = trove__realloc(ps->args, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        ps->args = p;
        ps->cap_args = cap;
    }
    if (ps->arg_keys.len > UINT32_MAX - ps->arg_key.len)
        return TROVE_FAIL(ps->diag, TROVE_ERR_LIMIT, off, "too many arguments in one event");
    if ((rc = trove_bytes_append(&ps->arg_keys, ps->arg_key.ptr, ps->arg_key.len)) != TROVE_OK)
        return rc;
    a = &ps->args[ev->nargs++];
    a->key_off = (uint32_t)(ps->arg_keys.len - ps->arg_key.len);
    a->key_len = (uint32_t)ps->arg_key.len;
    a->over = ps->arg_key.over;
    a->off = off;
    a->num = *num;
    return TROVE_OK;
}

/* ---- attributes (opt->attrs) ---------------------------------------------------------- */

/* A value read whole: a string in ps->aval, a number, a literal, or (OTHER) null or a nested
 * value as its compact JSON in ps->ajson. cut: it passed TROVE_ATTRS_MAX_STRING bytes. */
struct aval {
    uint8_t type;            /* TROVE__J_* */
    uint64_t off;
    struct trove__json_num num;
    int cut;
};

static int read_value(struct trove__chrome *ps, int depth, struct aval *v)
{
    struct trove__json *js = &ps->js;
    int c = trove__json_peek(js), rc, lit;

    v->off = trove__json_pos(js);
    v->cut = 0;
    if (c == '"') {
        v->type = TROVE__J_STRING;
        rc = trove__json_string(js, &ps->aval);
        v->cut = ps->aval.over;
        return rc;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = TROVE__J_NUMBER;
        return trove__json_number(js, &v->num);
    }
    if (c == 't' || c == 'f') {
        if ((rc = trove__json_literal(js, &lit)) != TROVE_OK)
            return rc;
        v->type = lit == TROVE_JSON_TRUE ? TROVE__J_TRUE : TROVE__J_FALSE;
        return TROVE_OK;
    }
    v->type = TROVE__J_OTHER;
    ps->ajson.len = 0;
    return trove__json_copy(js, depth, &ps->ajson, &ps->aval, TROVE_ATTRS_MAX_STRING, &v->cut);
}

/* The value's text into a field's bounded buffer, as read_field would have read it. */
static void value_field(struct trove__chrome *ps, const struct aval *v, struct trove__cfield *f,
                        struct trove__json_str *str)
{
    f->type = v->type == TROVE__J_TRUE || v->type == TROVE__J_FALSE ? TROVE__J_OTHER : v->type;
    f->off = v->off;
    if (v->type == TROVE__J_STRING && str) {
        str->len = ps->aval.len < str->cap ? ps->aval.len : str->cap;
        str->over = ps->aval.over || ps->aval.len > str->cap;
        memcpy(str->ptr, ps->aval.ptr, str->len);
    }
}

/* A JSON integer as an int64, when it is one. */
static int num_int64(const struct trove__json_num *n, int64_t *out)
{
    uint64_t u = 0;
    if (!n->is_int || n->point < n->nd || n->point > 19)
        return 0;
    for (int64_t i = 0; i < n->point; i++) {
        unsigned d = i < n->nd ? n->d[i] : 0;
        if (u > (UINT64_MAX - d) / 10)
            return 0;
        u = u * 10 + d;
    }
    if (n->neg ? u > (uint64_t)INT64_MAX + 1 : u > (uint64_t)INT64_MAX)
        return 0;
    *out = n->neg ? (int64_t)(0 - u) : (int64_t)u;
    return 1;
}

/*
 * The value v of key as a row of t (event, scope): an integer that fits as an int, another
 * number as the nearest double (or, past a double or an int64 integer, its digits as JSON
 * text, so nothing is rounded away), a string, a bool, null or a nested value as JSON text.
 * *kept is 0 (and nothing added) when the key or the value was cut.
 */
static int stage_row(struct trove__chrome *ps, struct trove_attrs *t, uint64_t event,
                     uint8_t scope, const struct trove__json_str *key, const struct aval *v,
                     int *kept)
{
    struct trove_attr r;
    const uint8_t *p;
    size_t len;
    int rc;

    *kept = 0;
    if (key->over || v->cut)
        return TROVE_OK;
    memset(&r, 0, sizeof r);
    r.event = event;
    r.scope = scope;
    /* keys and strings as valid UTF-8, as names are (a bad byte made U+FFFD): what every
     * writer of them (JSON, Parquet) can hold */
    if ((rc = trove__chrome_repair_utf8(ps, key->ptr, key->len, &p, &len)) != TROVE_OK)
        return rc;
    if (len > TROVE_ATTRS_MAX_STRING)
        return TROVE_OK;
    if ((rc = trove_attrs_intern(t, p, len, &r.key)) != TROVE_OK)
        return rc;
    switch (v->type) {
    case TROVE__J_STRING:
        r.type = TROVE_ATTR_STRING;
        if ((rc = trove__chrome_repair_utf8(ps, ps->aval.ptr, ps->aval.len, &p, &len)) != TROVE_OK)
            return rc;
        if (len > TROVE_ATTRS_MAX_STRING)
            return TROVE_OK;
        rc = trove_attrs_intern(t, p, len, &r.v.s);
        break;
    case TROVE__J_NUMBER:
        if (num_int64(&v->num, &r.v.i)) {
            r.type = TROVE_ATTR_INT;
        } else if (!v->num.is_int && trove__json_num_double(&v->num, &r.v.d) == 0) {
            r.type = TROVE_ATTR_DOUBLE;
        } else {
            char text[TROVE_JSON_NUM_TEXT];
            r.type = TROVE_ATTR_JSON;
            rc = trove_attrs_intern(t, text, trove__json_num_text(&v->num, text), &r.v.s);
        }
        break;
    case TROVE__J_TRUE:
    case TROVE__J_FALSE:
        r.type = TROVE_ATTR_BOOL;
        r.v.b = v->type == TROVE__J_TRUE;
        break;
    default:
        r.type = TROVE_ATTR_JSON;
        rc = trove_attrs_intern(t, ps->ajson.ptr, ps->ajson.len, &r.v.s);
        break;
    }
    if (rc == TROVE_OK && (rc = trove_attrs_add(t, &r)) == TROVE_OK)
        *kept = 1;
    return rc;
}

/* The "args" object, every member kept as a row (opt->attrs): args.name, args.step and the
 * numbers are also read as without attributes. */
static int read_args_kept(struct trove__chrome *ps)
{
    struct trove__json *js = &ps->js;
    struct trove__cevent *ev = &ps->ev;
    struct aval v;
    int rc, kept;

    trove__json_take(js);
    if (trove__json_peek(js) == '}') {
        trove__json_take(js);
        return TROVE_OK;
    }
    for (;;) {
        if ((rc = trove__json_key(js, &ps->arg_key, "args")) != TROVE_OK ||
            (rc = read_value(ps, 3, &v)) != TROVE_OK)
            return rc;
        if (trove__json_key_is(&ps->arg_key, "name")) {
            value_field(ps, &v, &ev->args_name, &ps->args_name);
            ev->nonnum_args++;
            ev->has_args_name = 1;
        } else if (trove__json_key_is(&ps->arg_key, "step")) {
            value_field(ps, &v, &ev->args_step, &ps->args_step);
            ev->nonnum_args++;
            ev->has_args_step = 1;
        } else if (v.type == TROVE__J_NUMBER) {
            if ((rc = add_arg(ps, &v.num, v.off)) != TROVE_OK)
                return rc;
        } else {
            ev->nonnum_args++;
        }
        if ((rc = stage_row(ps, &ps->stage, ps->st.trace_events, TROVE_ATTR_ARG, &ps->arg_key,
                            &v, &kept)) != TROVE_OK)
            return rc;
        ev->lost_args += !kept;
        if ((rc = trove__json_next_member(js, "args")) <= 0)
            return rc;
    }
}

/* The "args" object of an event (the next byte is '{'): args.name, args.step and the
 * members whose values are numbers are kept. */
static int read_args(struct trove__chrome *ps)
{
    struct trove__json *js = &ps->js;
    struct trove__cevent *ev = &ps->ev;
    int c, rc;

    ev->args_name.type = ev->args_step.type = TROVE__J_NONE;
    ev->nargs = ev->nonnum_args = 0;
    ev->has_args_name = ev->has_args_step = 0;
    ps->arg_keys.len = 0;
    if (ps->keep)
        return read_args_kept(ps);
    trove__json_take(js);
    c = trove__json_peek(js);
    if (c == '}') {
        trove__json_take(js);
        return TROVE_OK;
    }
    for (;;) {
        if ((rc = trove__json_key(js, &ps->arg_key, "args")) != TROVE_OK)
            return rc;
        c = trove__json_peek(js);
        if (trove__json_key_is(&ps->arg_key, "name")) {
            rc = read_field(ps, &ev->args_name, &ps->args_name, NULL, 3);
            ev->nonnum_args++;
            ev->has_args_name = 1;
        } else if (trove__json_key_is(&ps->arg_key, "step")) {
            rc = read_field(ps, &ev->args_step, &ps->args_step, NULL, 3);
            ev->nonnum_args++;
            ev->has_args_step = 1;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            struct trove__json_num num;
            uint64_t off = trove__json_pos(js);
            if ((rc = trove__json_number(js, &num)) == TROVE_OK)
                rc = add_arg(ps, &num, off);
        } else {
            rc = trove__json_skip(js, 3);
            ev->nonnum_args++;
        }
        if (rc != TROVE_OK)
            return rc;
        if ((rc = trove__json_next_member(js, "args")) <= 0)
            return rc;
    }
}

/* The "trove" member (the next byte is '{'): {"kind":K,"extra":E,"depth":D}, each an integer
 * 0..255 and each optional; other members are skipped (a later trove may write more). */
static int read_trove(struct trove__chrome *ps)
{
    struct trove__json *js = &ps->js;
    struct trove__cevent *ev = &ps->ev;
    int rc;

    ev->tv_off = trove__json_pos(js);
    trove__json_take(js);
    if (trove__json_peek(js) == '}') {
        trove__json_take(js);
        return TROVE_OK;
    }
    for (;;) {
        unsigned bit = 0;
        if ((rc = trove__json_key(js, &ps->arg_key, "trove")) != TROVE_OK)
            return rc;
        if (trove__json_key_is(&ps->arg_key, "kind"))
            bit = TROVE__TV_KIND;
        else if (trove__json_key_is(&ps->arg_key, "extra"))
            bit = TROVE__TV_EXTRA;
        else if (trove__json_key_is(&ps->arg_key, "depth"))
            bit = TROVE__TV_DEPTH;
        if (bit) {
            struct trove__json_num num;
            uint64_t off = trove__json_pos(js);
            unsigned v = 0;
            int c = trove__json_peek(js);
            if (!(c >= '0' && c <= '9'))
                return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, off,
                                  "\"trove\".%s must be an integer from 0 to 255",
                                  bit == TROVE__TV_KIND ? "kind" : bit == TROVE__TV_EXTRA ? "extra" : "depth");
            if ((rc = trove__json_number(js, &num)) != TROVE_OK)
                return rc;
            if (!num.is_int || num.neg || num.point > 3)
                v = 256;
            for (int64_t i = 0; v < 256 && i < num.point; i++)
                v = v * 10 + (i < num.nd ? num.d[i] : 0);
            if (v > 255)
                return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, off,
                                  "\"trove\".%s must be an integer from 0 to 255",
                                  bit == TROVE__TV_KIND ? "kind" : bit == TROVE__TV_EXTRA ? "extra" : "depth");
            ev->tv_set |= (uint8_t)bit;
            if (bit == TROVE__TV_KIND)
                ev->tv_kind = (uint8_t)v;
            else if (bit == TROVE__TV_EXTRA)
                ev->tv_extra = (uint8_t)v;
            else
                ev->tv_depth = (uint8_t)v;
        } else if ((rc = trove__json_skip(js, 3)) != TROVE_OK) {
            return rc;
        }
        if ((rc = trove__json_next_member(js, "trove")) <= 0)
            return rc;
    }
}

/* A member trove does not keep: counted, and its key named among the first 8 (counts by
 * name when counts is not NULL). */
static void note_member(uint64_t *total, char names[8][24], uint64_t *counts,
                        const struct trove__json_str *key)
{
    char k[24];
    size_t n = key->len < 20 ? key->len : 20, i;

    ++*total;
    memcpy(k, key->ptr, n); /* a key cut (by the key buffer, or here) ends in "..." */
    if (key->over || key->len > n)
        memcpy(k + n, "...", 3), n += 3;
    k[n] = 0;
    for (i = 0; i < 8 && names[i][0]; i++)
        if (!strcmp(names[i], k))
            break;
    if (i == 8)
        return;
    if (!names[i][0])
        memcpy(names[i], k, n + 1);
    if (counts)
        counts[i]++;
}

/* An event's category, among those seen (hashes of up to 65,536 told apart). */
static int note_category(struct trove__chrome *ps)
{
    uint64_t h = 1469598103934665603ULL;

    ps->st.cat_events++;
    if (ps->st.categories >= 65536)
        return TROVE_OK;
    if (!ps->cats) {
        if (!(ps->cats = trove__calloc(1024, sizeof *ps->cats)))
            return TROVE_ERR_NOMEM;
        ps->cats_mask = 1023;
    }
    for (size_t i = 0; i < ps->cat.len; i++)
        h = (h ^ ps->cat.ptr[i]) * 1099511628211ULL;
    h |= 1; /* 0 marks a free slot */
    for (uint32_t i = (uint32_t)h & ps->cats_mask;; i = (i + 1) & ps->cats_mask) {
        if (ps->cats[i] == h)
            return TROVE_OK;
        if (ps->cats[i] == 0) {
            ps->cats[i] = h;
            break;
        }
    }
    if (++ps->st.categories * 2 > ps->cats_mask) { /* keep it half empty */
        uint32_t cap = (ps->cats_mask + 1) * 2;
        uint64_t *t = trove__calloc(cap, sizeof *t);
        if (!t)
            return TROVE_ERR_NOMEM;
        for (uint32_t i = 0; i <= ps->cats_mask; i++)
            if (ps->cats[i])
                for (uint32_t j = (uint32_t)ps->cats[i] & (cap - 1);; j = (j + 1) & (cap - 1))
                    if (!t[j]) {
                        t[j] = ps->cats[i];
                        break;
                    }
        free(ps->cats);
        ps->cats = t;
        ps->cats_mask = cap - 1;
    }
    return TROVE_OK;
}

/* What of an event's "args" trove keeps nowhere: all but an M's args.name and
 * args.sort_index, a T's args.step and a C's numbers. */
static void note_args(struct trove__chrome *ps)
{
    const struct trove__cevent *ev = &ps->ev;
    uint64_t all = ev->nargs + ev->nonnum_args, kept = 0;
    char ph = ps->ph.len == 1 ? (char)ps->ph.ptr[0] : 0;

    if (ph == 'M') {
        kept = ev->has_args_name;
        for (size_t i = 0; i < ev->nargs; i++)
            if (ps->args[i].key_len == 10 &&
                !memcmp(ps->arg_keys.ptr + ps->args[i].key_off, "sort_index", 10))
                kept++;
    } else if (ph == 'T') {
        kept = ev->has_args_step;
    } else if (ph == 'C') {
        kept = ev->nargs;
    }
    if (all > kept) {
        ps->st.args_events++;
        ps->st.args_members += all - kept;
    }
}

/* A member of the event kept as a FIELD row (opt->attrs): "cat" (also read into f, str) or
 * one trove has no field for. One cut is counted as not kept. */
static int read_member_kept(struct trove__chrome *ps, struct trove__cfield *f,
                            struct trove__json_str *str)
{
    struct aval v;
    int rc, kept;

    if ((rc = read_value(ps, 2, &v)) != TROVE_OK)
        return rc;
    if (f)
        value_field(ps, &v, f, str);
    if ((rc = stage_row(ps, &ps->stage, ps->st.trace_events, TROVE_ATTR_FIELD, &ps->key, &v,
                        &kept)) != TROVE_OK)
        return rc;
    if (!kept)
        note_member(&ps->st.other_members, ps->st.other_names, ps->st.other_counts, &ps->key);
    return TROVE_OK;
}

/* Which rows of the event just read stay (opt->attrs), by its phase: all of those that become
 * zones and instants (X, B, E, i, I, n, b, e, S, F); a C's FIELD rows (its numbers are its
 * values); none of the others (M, T, flows, skipped phases), whose args and members are
 * counted as not kept — but for what is kept as data: an M's args.name and args.sort_index,
 * a T's args.step, a C's numbers. */
static int settle_rows(struct trove__chrome *ps)
{
    struct trove_attrs *t = &ps->stage;
    char ph = ps->ph.len == 1 && !ps->ph.over ? (char)ps->ph.ptr[0] : 0;
    int args = ph && strchr("XBEIinbeSF", ph) != NULL, fields = args || ph == 'C';
    uint64_t lost = ps->ev.lost_args;
    size_t k = ps->ev_row0;

    for (size_t i = ps->ev_row0; i < t->n; i++) {
        const struct trove_attr *r = &t->rows[i];
        size_t klen = 0;
        const char *key = trove_attrs_string(t, r->key, &klen);
        if (r->scope == TROVE_ATTR_ARG ? args : fields) {
            t->rows[k++] = *r;
            continue;
        }
        if (r->scope == TROVE_ATTR_ARG) {
            int data = (ph == 'M' && ((klen == 4 && !memcmp(key, "name", 4)) ||
                                      (klen == 10 && !memcmp(key, "sort_index", 10)))) ||
                       (ph == 'T' && klen == 4 && !memcmp(key, "step", 4)) ||
                       (ph == 'C' && (r->type == TROVE_ATTR_INT || r->type == TROVE_ATTR_DOUBLE));
            lost += !data;
        } else if (klen == 3 && !memcmp(key, "cat", 3)) {
            int rc = ps->cat.len ? note_category(ps) : TROVE_OK;
            if (rc != TROVE_OK)
                return rc;
        } else {
            struct trove__json_str ks = {(uint8_t *)key, klen, klen, 0};
            note_member(&ps->st.other_members, ps->st.other_names, ps->st.other_counts, &ks);
        }
    }
    t->n = k;
    if (lost) {
        ps->st.args_events++;
        ps->st.args_members += lost;
    }
    return TROVE_OK;
}

/* The value of the member whose key was just read: a field we use, or skipped. `c` is the
 * value's first byte. */
static int read_member(struct trove__chrome *ps, int c)
{
    struct trove__cevent *ev = &ps->ev;
    const struct trove__json_str *key = &ps->key;

    switch (key->over ? 0 : key->len) {
    case 1:
        if (key->ptr[0] == 's')
            return read_field(ps, &ev->s, &ps->scope, NULL, 2);
        break;
    case 2:
        if (trove__json_key_is(key, "ph"))
            return read_field(ps, &ev->ph, &ps->ph, NULL, 2);
        if (trove__json_key_is(key, "ts"))
            return read_field(ps, &ev->ts, NULL, &ev->ts_n, 2);
        if (trove__json_key_is(key, "id")) {
            int rc = read_id(ps, &ev->id, &ps->id, &ev->id_num, 2);
            ev->id_kind = ev->id.type == TROVE__J_STRING ? TROVE__ID_PLAIN : 0;
            return rc;
        }
        if (trove__json_key_is(key, "bp"))
            return read_field(ps, &ev->bp, &ps->bp, NULL, 2);
        break;
    case 3:
        if (trove__json_key_is(key, "pid"))
            return read_field(ps, &ev->pid, NULL, &ev->pid_n, 2);
        if (trove__json_key_is(key, "tid"))
            return read_field(ps, &ev->tid, NULL, &ev->tid_n, 2);
        if (trove__json_key_is(key, "dur"))
            return read_field(ps, &ev->dur, NULL, &ev->dur_n, 2);
        if (trove__json_key_is(key, "cat")) {
            if (ps->keep)
                return read_member_kept(ps, &ev->cat, &ps->cat);
            return read_field(ps, &ev->cat, &ps->cat, NULL, 2);
        }
        if (trove__json_key_is(key, "id2") && c == '{')
            return read_id2(ps);
        break;
    case 4:
        if (trove__json_key_is(key, "name"))
            return read_field(ps, &ev->name, &ps->name, NULL, 2);
        if (trove__json_key_is(key, "args") && c == '{')
            return read_args(ps);
        break;
    case 5:
        if (trove__json_key_is(key, "scope"))
            return read_field(ps, &ev->scope, &ps->idscope, NULL, 2);
        if (trove__json_key_is(key, "trove") && c == '{')
            return read_trove(ps);
        break;
    case 7:
        if (trove__json_key_is(key, "bind_id"))
            return read_id(ps, &ev->bind_id, &ps->bind, &ev->bind_num, 2);
        if (trove__json_key_is(key, "flow_in"))
            return read_bool(ps, &ev->flow_in, c);
        break;
    case 8:
        if (trove__json_key_is(key, "flow_out"))
            return read_bool(ps, &ev->flow_out, c);
        break;
    }
    if (ps->keep)
        return read_member_kept(ps, NULL, NULL);
    note_member(&ps->st.other_members, ps->st.other_names, ps->st.other_counts, key);
    return trove__json_skip(&ps->js, 2);
}

static int trace_error(struct trove__chrome *ps, uint64_t off, const char *msg,
                       const char *field)
{
    return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, off, msg, field);
}

/* Read one event object and act on it. */
static int parse_event(struct trove__chrome *ps)
{
    struct trove__json *js = &ps->js;
    struct trove__cevent *ev = &ps->ev;
    int c = trove__json_peek(js), rc;

    if (c != '{') {
        if (c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' ||
            c == 'n')
            return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, trove__json_pos(js),
                              "trace event %llu is not a JSON object",
                              (unsigned long long)ps->st.trace_events + 1);
        return trove__json_unexpected(js, c, "a trace event object", "the event array");
    }
    ev->off = trove__json_pos(js);
    ev->ph.type = ev->name.type = ev->ts.type = ev->dur.type = TROVE__J_NONE;
    ev->pid.type = ev->tid.type = ev->s.type = ev->args_name.type = TROVE__J_NONE;
    ev->args_step.type = ev->cat.type = ev->id.type = ev->scope.type = TROVE__J_NONE;
    ev->bp.type = ev->bind_id.type = ev->flow_in.type = ev->flow_out.type = TROVE__J_NONE;
    ev->id_kind = ev->id_num = ev->bind_num = 0;
    ev->nargs = ev->nonnum_args = 0;
    ev->has_args_name = ev->has_args_step = 0;
    ev->lost_args = 0;
    ev->tv_set = 0;
    ps->ev_row0 = ps->stage.n;
    trove__json_take(js);
    c = trove__json_peek(js);
    if (c == '}') {
        trove__json_take(js);
    } else {
        do {
            if ((rc = trove__json_key(js, &ps->key, "a trace event")) != TROVE_OK ||
                (rc = read_member(ps, trove__json_peek(js))) != TROVE_OK ||
                (rc = trove__json_next_member(js, "a trace event")) < 0)
                return rc;
        } while (rc);
    }

    ps->st.trace_events++;
    if (ev->ph.type == TROVE__J_NONE)
        return trace_error(ps, ev->off, "trace event has no \"%s\" field", "ph");
    if (ev->ph.type != TROVE__J_STRING)
        return trace_error(ps, ev->ph.off, "\"%s\" must be a string", "ph");
    if (ps->keep) {
        if ((rc = settle_rows(ps)) != TROVE_OK)
            return TROVE_FAIL(ps->diag, rc, ev->off, "out of memory");
    } else {
        note_args(ps);
        if (ev->cat.type == TROVE__J_STRING && ps->cat.len && (rc = note_category(ps)) != TROVE_OK)
            return TROVE_FAIL(ps->diag, rc, ev->off, "out of memory");
    }
    return trove__chrome_event(ps);
}

/* The event array after its '['. `bare`: the document is this array, whose ']' (and a
 * trailing ',' before EOF) may be missing. */
static int parse_events(struct trove__chrome *ps, int bare)
{
    struct trove__json *js = &ps->js;
    int c = trove__json_peek(js), rc;

    if (c == ']') {
        trove__json_take(js);
        return TROVE_OK;
    }
    if (c < 0)
        return bare && !js->err ? TROVE_OK : trove__json_eof_error(js, "the event array");
    for (;;) {
        if ((rc = parse_event(ps)) != TROVE_OK)
            return rc;
        c = trove__json_peek(js);
        if (c == ',') {
            trove__json_take(js);
            c = trove__json_peek(js);
            if (c < 0 && bare && !js->err)
                return TROVE_OK;
            if (c == ']')
                return TROVE_FAIL(ps->diag, TROVE_ERR_JSON, trove__json_pos(js),
                                  "trailing ',' before ']' in the event array");
            continue;
        }
        if (c == ']') {
            trove__json_take(js);
            return TROVE_OK;
        }
        if (c < 0 && bare && !js->err)
            return TROVE_OK;
        return trove__json_unexpected(js, c, "',' or ']' after a trace event", "the event array");
    }
}

/* The members of the top-level object after its '{': "traceEvents" is read, others skipped. */
static int parse_top_object(struct trove__chrome *ps)
{
    struct trove__json *js = &ps->js;
    int c = trove__json_peek(js), rc, found = 0;

    if (c == '}')
        trove__json_take(js);
    while (c != '}') {
        if ((rc = trove__json_key(js, &ps->key, "the top-level object")) != TROVE_OK)
            return rc;
        if (trove__json_key_is(&ps->key, "traceEvents")) {
            c = trove__json_peek(js);
            if (c != '[') {
                if (c < 0)
                    return trove__json_eof_error(js, "the top-level object");
                return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, trove__json_pos(js),
                                  "\"traceEvents\" must be an array");
            }
            trove__json_take(js);
            if ((rc = parse_events(ps, 0)) != TROVE_OK)
                return rc;
            found = 1;
        } else if (ps->keep) {
            struct aval v;
            int kept;
            if ((rc = read_value(ps, 1, &v)) != TROVE_OK ||
                (rc = stage_row(ps, &ps->meta, 0, TROVE_ATTR_TRACE, &ps->key, &v, &kept)) !=
                    TROVE_OK)
                return rc;
            if (!kept)
                note_member(&ps->st.top_members, ps->st.top_names, NULL, &ps->key);
        } else {
            note_member(&ps->st.top_members, ps->st.top_names, NULL, &ps->key);
            if ((rc = trove__json_skip(js, 1)) != TROVE_OK)
                return rc;
        }
        if ((rc = trove__json_next_member(js, "the top-level object")) < 0)
            return rc;
        if (rc == 0)
            break;
    }
    if (!found)
        return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, 0,
                          "the top-level object has no \"traceEvents\" array; is this a "
                          "Chrome trace?");
    return TROVE_OK;
}

static int parse_document(struct trove__chrome *ps)
{
    struct trove__json *js = &ps->js;
    int c = trove__json_peek_byte(js), rc;

    if (c == 0xEF) { /* UTF-8 byte order mark */
        static const uint8_t bom[3] = {0xEF, 0xBB, 0xBF};
        for (int i = 0; i < 3; i++) {
            if ((c = trove__json_peek_byte(js)) != bom[i])
                return trove__json_unexpected(js, c, "a UTF-8 byte order mark", "the document");
            trove__json_take(js);
        }
    }
    c = trove__json_peek(js);
    if (c == '[') {
        trove__json_take(js);
        rc = parse_events(ps, 1);
    } else if (c == '{') {
        trove__json_take(js);
        rc = parse_top_object(ps);
    } else if (c < 0) {
        if (js->err)
            return trove__json_eof_error(js, "the document");
        return TROVE_FAIL(ps->diag, TROVE_ERR_JSON, 0, "empty input: no JSON document");
    } else if (c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' ||
               c == 'n') {
        return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, trove__json_pos(js),
                          "a Chrome trace is an array of events or an object with "
                          "\"traceEvents\", not a scalar");
    } else {
        return trove__json_unexpected(js, c, "'[' or '{'", "the document");
    }
    if (rc != TROVE_OK)
        return rc;
    if (trove__json_peek(js) >= 0)
        return TROVE_FAIL(ps->diag, TROVE_ERR_JSON, trove__json_pos(js),
                          "unexpected data after the end of the trace");
    if (js->err)
        return trove__json_eof_error(js, "the document");
    return TROVE_OK;
}

/* ---- the import ------------------------------------------------------------------- */

/* A bounded string buffer of cap bytes, from storage or (store NULL) allocated. */
static int str_init(struct trove__json_str *s, uint8_t *store, size_t cap)
{
    *s = (struct trove__json_str){store ? store : trove__malloc(cap), 0, cap, 0};
    return s->ptr ? TROVE_OK : TROVE_ERR_NOMEM;
}

/* The importer over the input ps->js was opened on (FILE or memory). */
static int run(struct trove__chrome *ps, const struct trove_chrome_options *opt,
               struct trove_events *events, struct trove_names *names,
               struct trove_flows *flows, struct trove_chrome_stats *stats)
{
    int rc;

    ps->diag = ps->js.diag;
    ps->js.doc = "trace";
    ps->strict = opt && opt->strict;
    ps->keep = opt && opt->attrs;
    str_init(&ps->key, ps->key_store, KEY_CAP);
    str_init(&ps->ph, ps->ph_store, SHORT_CAP);
    str_init(&ps->scope, ps->s_store, SHORT_CAP);
    str_init(&ps->bp, ps->bp_store, SHORT_CAP);
    str_init(&ps->cat, ps->cat_store, ID_CAP);
    str_init(&ps->idscope, ps->scope_store, ID_CAP);
    str_init(&ps->id, ps->id_store, ID_CAP);
    str_init(&ps->bind, ps->bind_store, ID_CAP);
    if (str_init(&ps->name, NULL, TROVE_NAME_MAX) != TROVE_OK ||
        str_init(&ps->args_name, NULL, TROVE_NAME_MAX) != TROVE_OK ||
        str_init(&ps->args_step, NULL, TROVE_NAME_MAX) != TROVE_OK ||
        str_init(&ps->arg_key, NULL, TROVE__CHROME_ARG_KEY_CAP) != TROVE_OK ||
        (ps->keep && str_init(&ps->aval, NULL, TROVE_ATTRS_MAX_STRING) != TROVE_OK)) {
        rc = TROVE_FAIL(ps->diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    /* the arena is never NULL, so that name offsets (even of "") always point into it */
    if ((rc = trove_bytes_reserve(&ps->arena, 4096)) != TROVE_OK ||
        (rc = trove_names_new(&ps->tmp_names)) != TROVE_OK) {
        TROVE_FAIL(ps->diag, rc, 0, "out of memory");
        goto out;
    }
    rc = parse_document(ps);
    if (rc == TROVE_OK)
        rc = trove__chrome_finish(ps, events, names, flows, opt ? opt->attrs : NULL,
                                  opt ? opt->meta : NULL);
    if (rc == TROVE_ERR_NOMEM) /* allocation sites return the code without a message */
        TROVE_FAIL(ps->diag, rc, trove__json_pos(&ps->js),
                   "out of memory after %zu events; the trace is too large for this machine",
                   ps->nrec);
out:
    ps->st.input_bytes = trove__json_pos(&ps->js);
    if (stats)
        *stats = ps->st;
    trove__chrome_free(ps);
    return rc;
}

int trove__chrome_import_chunked(FILE *in, size_t chunk, const struct trove_chrome_options *opt,
                                 struct trove_events *events, struct trove_names *names,
                                 struct trove_flows *flows, struct trove_chrome_stats *stats,
                                 struct trove_diag *diag)
{
    struct trove__chrome ps;

    if (!in || !events || chunk == 0) {
        if (stats)
            memset(stats, 0, sizeof *stats);
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no input stream or events array");
    }
    memset(&ps, 0, sizeof ps);
    if (trove__json_init_file(&ps.js, in, chunk,
                              opt && opt->max_input ? opt->max_input : INPUT_DEFAULT,
                              diag) != TROVE_OK) {
        if (stats)
            memset(stats, 0, sizeof *stats);
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    }
    if (opt) {
        ps.js.progress = opt->progress;
        ps.js.progress_ctx = opt->progress_ctx;
    }
    return run(&ps, opt, events, names, flows, stats);
}

int trove_chrome_import_all(FILE *in, const struct trove_chrome_options *opt,
                            struct trove_events *events, struct trove_names *names,
                            struct trove_flows *flows, struct trove_chrome_stats *stats,
                            struct trove_diag *diag)
{
    return trove__chrome_import_chunked(in, CHUNK_DEFAULT, opt, events, names, flows, stats,
                                        diag);
}

int trove_chrome_import(FILE *in, const struct trove_chrome_options *opt,
                        struct trove_events *events, struct trove_names *names,
                        struct trove_chrome_stats *stats, struct trove_diag *diag)
{
    return trove__chrome_import_chunked(in, CHUNK_DEFAULT, opt, events, names, NULL, stats,
                                        diag);
}

int trove_chrome_import_all_mem(const uint8_t *buf, size_t len,
                                const struct trove_chrome_options *opt,
                                struct trove_events *events, struct trove_names *names,
                                struct trove_flows *flows, struct trove_chrome_stats *stats,
                                struct trove_diag *diag)
{
    struct trove__chrome ps;
    uint64_t limit = opt && opt->max_input ? opt->max_input : INPUT_DEFAULT;

    if (stats)
        memset(stats, 0, sizeof *stats);
    if ((!buf && len) || !events)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no input buffer or events array");
    if ((uint64_t)len > limit)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, limit,
                          "input is larger than max_input (%llu bytes); raise the limit to "
                          "import it",
                          (unsigned long long)limit);
    memset(&ps, 0, sizeof ps);
    trove__json_init_mem(&ps.js, buf, len, diag);
    return run(&ps, opt, events, names, flows, stats);
}

int trove_chrome_import_mem(const uint8_t *buf, size_t len, const struct trove_chrome_options *opt,
                            struct trove_events *events, struct trove_names *names,
                            struct trove_chrome_stats *stats, struct trove_diag *diag)
{
    return trove_chrome_import_all_mem(buf, len, opt, events, names, NULL, stats, diag);
}
