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

/* A number's canonical text: its integer digits when it is an integer ("-12"), else
 * "0.DIGITSeP"; cut at the buffer (flagged over). */
static void num_text(const struct trove__json_num *n, struct trove__json_str *out)
{
    char tmp[64];
    size_t k = 0;
    if (n->nd && n->neg)
        tmp[k++] = '-';
    if (n->nd == 0) {
        tmp[k++] = '0';
    } else if (n->is_int && n->point >= n->nd && n->point <= 40) {
        for (int64_t i = 0; i < n->point; i++)
            tmp[k++] = (char)('0' + (i < n->nd ? n->d[i] : 0));
    } else {
        tmp[k++] = '0';
        tmp[k++] = '.';
        for (uint8_t i = 0; i < n->nd; i++)
            tmp[k++] = (char)('0' + n->d[i]);
        k += (size_t)snprintf(tmp + k, sizeof tmp - k, "e%lld", (long long)n->point);
    }
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
        if (trove__json_key_is(key, "cat"))
            return read_field(ps, &ev->cat, &ps->cat, NULL, 2);
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
    ev->tv_set = 0;
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
    note_args(ps);
    if (ev->cat.type == TROVE__J_STRING && ps->cat.len && (rc = note_category(ps)) != TROVE_OK)
        return TROVE_FAIL(ps->diag, rc, ev->off, "out of memory");
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
        str_init(&ps->arg_key, NULL, TROVE__CHROME_ARG_KEY_CAP) != TROVE_OK) {
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
        rc = trove__chrome_finish(ps, events, names, flows);
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
