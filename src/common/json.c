/*
 * json.c: the streaming JSON tokenizer of common/json.h — the input window, strings,
 * numbers, literals, keys and the skipping of whole values.
 *
 * It was the lower half of the Chrome trace importer, which reads traces of tens of
 * megabytes whose bulk (args, categories, metadata) it throws away; that workload set its
 * shape. The input is never held whole: a FILE is read through a window of one chunk, and
 * a token may straddle two chunks, so every reader falls back to trove__json_peek_byte() at
 * the window's end while its fast paths (a run of plain string bytes, a run of digits) scan
 * the window directly. Nothing allocates but the window: strings are decoded into the
 * caller's bounded buffers or discarded, numbers are kept as digits, and skipping a value
 * uses a fixed stack of one byte per open bracket instead of recursion, so a hostile
 * document costs at most TROVE_JSON_MAX_DEPTH bytes of stack however deep it nests.
 *
 * The grammar is RFC 8259's. The readers trust nothing: a string ends at its '"' or is an
 * error, a control byte inside it is refused, an escape is one of the nine or \u with four
 * hex digits, a number has no leading zero and digits after '.' and 'e', and every error
 * carries the offset of the byte that broke the rule (of the backslash, for an escape).
 */
#include "common/json.h"

#include <errno.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "common/fail.h"
#include "common/hex.h"
#include "common/utf8.h"

#define EXP_CAP 1000000000 /* |exponent| saturates here */

/* ---- input window -------------------------------------------------------------------- */

void trove__json_init_mem(struct trove__json *j, const uint8_t *buf, size_t len,
                          struct trove_diag *diag)
{
    memset(j, 0, sizeof *j);
    j->start = j->p = buf ? buf : (const uint8_t *)"";
    j->end = j->p + len;
    j->eof = 1;
    j->limit = UINT64_MAX;
    j->diag = diag;
    j->doc = "input";
    j->max_depth = TROVE_JSON_MAX_DEPTH;
}

int trove__json_init_file(struct trove__json *j, FILE *f, size_t chunk, uint64_t limit,
                          struct trove_diag *diag)
{
    assert(f && chunk > 0);
    memset(j, 0, sizeof *j);
    j->f = f;
    j->chunk = chunk;
    j->limit = limit;
    j->diag = diag;
    j->doc = "input";
    j->max_depth = TROVE_JSON_MAX_DEPTH;
    if (!(j->buf = trove__malloc(chunk)))
        return TROVE_ERR_NOMEM;
    j->start = j->p = j->end = j->buf;
    return TROVE_OK;
}

void trove__json_free(struct trove__json *j)
{
    free(j->buf);
    j->buf = NULL;
}

int trove__json_fill(struct trove__json *j)
{
    size_t want, n;

    if (j->p < j->end)
        return 1;
    if (!j->f || j->eof || j->err)
        return 0;
    j->base += (uint64_t)(j->end - j->start);
    assert(j->base <= j->limit);
    j->start = j->p = j->end = j->buf;
    want = j->chunk;
    if (j->limit - j->base < (uint64_t)want) /* read one byte past the limit to detect it */
        want = (size_t)(j->limit - j->base) + 1;
    errno = 0;
    n = fread(j->buf, 1, want, j->f);
    if (n < want) {
        if (ferror(j->f)) {
            j->err = errno ? -errno : -EIO;
            return 0;
        }
        j->eof = 1;
    }
    if (n == 0)
        return 0;
    if (j->base + n > j->limit) {
        j->err = TROVE_ERR_LIMIT;
        return 0;
    }
    j->end = j->buf + n;
    if (j->progress)
        j->progress(j->progress_ctx, j->base + n);
    return 1;
}

/* ---- errors -------------------------------------------------------------------------- */

static const char *char_desc(int c, char buf[16])
{
    if (c < 0)
        return "end of input";
    if (c >= 0x21 && c < 0x7f)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02x", (unsigned)c);
    return buf;
}

int trove__json_eof_error(struct trove__json *j, const char *inside)
{
    if (j->err == TROVE_ERR_LIMIT)
        return TROVE_FAIL(j->diag, TROVE_ERR_LIMIT, trove__json_pos(j),
                          "input is larger than max_input (%llu bytes); raise the limit to "
                          "import it",
                          (unsigned long long)j->limit);
    if (j->err)
        return TROVE_FAIL(j->diag, j->err, trove__json_pos(j), "reading the %s failed: %s",
                          j->doc, trove_strerror(j->err));
    return TROVE_FAIL(j->diag, TROVE_ERR_JSON, trove__json_pos(j),
                      "unexpected end of input inside %s; the %s is truncated", inside, j->doc);
}

int trove__json_unexpected(struct trove__json *j, int c, const char *expected, const char *where)
{
    char buf[16];
    if (c < 0)
        return trove__json_eof_error(j, where);
    return TROVE_FAIL(j->diag, TROVE_ERR_JSON, trove__json_pos(j), "expected %s in %s, got %s",
                      expected, where, char_desc(c, buf));
}

/* ---- strings ------------------------------------------------------------------------- */

static void str_put(struct trove__json_str *b, const uint8_t *p, size_t n)
{
    size_t room;
    if (!b)
        return;
    room = b->cap - b->len;
    if (n > room) {
        n = room;
        b->over = 1;
    }
    memcpy(b->ptr + b->len, p, n);
    b->len += n;
}

static void str_put_cp(struct trove__json_str *b, uint32_t cp)
{
    uint8_t u[4];
    size_t n;
    if (!b)
        return;
    if (cp < 0x80) {
        u[0] = (uint8_t)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (uint8_t)(0xC0 | cp >> 6);
        u[1] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (uint8_t)(0xE0 | cp >> 12);
        u[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (uint8_t)(0xF0 | cp >> 18);
        u[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
        u[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        u[3] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 4;
    }
    str_put(b, u, n);
}

/* 1 for the bytes that end a plain run inside a string: '"', '\\' and controls; with
 * TROVE_JSON_UTF8 also every byte >= 0x80, which then goes through utf8_char(). */
#define SPECIAL_ASCII                                                                         \
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,                                           \
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,                                           \
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,                                           \
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,                                           \
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,                                           \
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,                                           \
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,                                           \
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define SPECIAL_HIGH_16 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
static const uint8_t special_plain[256] = {SPECIAL_ASCII};
static const uint8_t special_utf8[256] = {
    SPECIAL_ASCII,   SPECIAL_HIGH_16, SPECIAL_HIGH_16, SPECIAL_HIGH_16, SPECIAL_HIGH_16,
    SPECIAL_HIGH_16, SPECIAL_HIGH_16, SPECIAL_HIGH_16, SPECIAL_HIGH_16};

/* With TROVE_JSON_UTF8: the raw character whose lead byte (>= 0x80) is next, checked
 * strict and copied to out. It may straddle two chunks. */
static int utf8_char(struct trove__json *j, struct trove__json_str *out)
{
    uint64_t off = trove__json_pos(j);
    uint8_t u[4];
    size_t n = 0, want;
    int c = *j->p;

    want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    u[n++] = (uint8_t)c;
    j->p++;
    while (n < want && (c = trove__json_peek_byte(j)) >= 0x80 && c <= 0xBF) {
        u[n++] = (uint8_t)c;
        j->p++;
    }
    if (n < want && c < 0)
        return trove__json_eof_error(j, "a string");
    if (n < want || trove__utf8_valid_prefix(u, n) != n)
        return TROVE_FAIL(j->diag, TROVE_ERR_JSON, off, "invalid UTF-8 inside a string");
    str_put(out, u, n);
    return TROVE_OK;
}

static int lone_surrogate(struct trove__json *j, uint64_t off)
{
    return TROVE_FAIL(j->diag, TROVE_ERR_JSON, off,
                      "\\u escape of a lone surrogate (not a Unicode character)");
}

/*
 * A high surrogate waits in `hi` (its escape at hi_off) for its low half; if anything else
 * follows, or a low half comes alone, it becomes U+FFFD — or, with TROVE_JSON_UTF8, an
 * error.
 */
int trove__json_string(struct trove__json *j, struct trove__json_str *out)
{
    const int strict = (j->flags & TROVE_JSON_UTF8) != 0;
    const uint8_t *special = strict ? special_utf8 : special_plain;
    uint64_t hi_off = 0;
    uint32_t hi = 0;
    int rc;

    if (out) {
        out->len = 0;
        out->over = 0;
    }
    j->p++;
    for (;;) {
        const uint8_t *q;
        uint64_t esc_off;
        int c;

        if (j->p == j->end && !trove__json_fill(j))
            return trove__json_eof_error(j, "a string");
        q = j->p;
        while (q < j->end && !special[*q])
            q++;
        if (q > j->p) {
            if (hi) {
                if (strict)
                    return lone_surrogate(j, hi_off);
                str_put_cp(out, 0xFFFD);
                hi = 0;
            }
            str_put(out, j->p, (size_t)(q - j->p));
            j->p = q;
            continue;
        }
        c = *q;
        if (c == '"') {
            if (hi) {
                if (strict)
                    return lone_surrogate(j, hi_off);
                str_put_cp(out, 0xFFFD);
            }
            j->p++;
            return TROVE_OK;
        }
        if (c < 0x20)
            return TROVE_FAIL(j->diag, TROVE_ERR_JSON, trove__json_pos(j),
                              "control byte 0x%02x inside a string (JSON requires it to be "
                              "escaped)",
                              (unsigned)c);
        if (c >= 0x80) { /* only with TROVE_JSON_UTF8 */
            if (hi)
                return lone_surrogate(j, hi_off);
            if ((rc = utf8_char(j, out)) != TROVE_OK)
                return rc;
            continue;
        }
        esc_off = trove__json_pos(j);
        j->p++;
        if ((c = trove__json_peek_byte(j)) < 0)
            return trove__json_eof_error(j, "a string escape");
        j->p++;
        if (c == 'u') {
            uint32_t cp = 0;
            for (int i = 0; i < 4; i++) {
                int h = trove__json_peek_byte(j);
                if (h < 0)
                    return trove__json_eof_error(j, "a \\u escape");
                if ((h = trove__hex_value(h)) < 0)
                    return TROVE_FAIL(j->diag, TROVE_ERR_JSON, esc_off,
                                      "\\u escape needs four hex digits");
                j->p++;
                cp = cp << 4 | (uint32_t)h;
            }
            if (hi) {
                if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    str_put_cp(out, 0x10000 + ((hi - 0xD800) << 10) + (cp - 0xDC00));
                    hi = 0;
                    continue;
                }
                if (strict)
                    return lone_surrogate(j, hi_off);
                str_put_cp(out, 0xFFFD);
                hi = 0;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                hi = cp;
                hi_off = esc_off;
                continue;
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF && strict)
                return lone_surrogate(j, esc_off);
            str_put_cp(out, cp >= 0xDC00 && cp <= 0xDFFF ? 0xFFFD : cp);
            continue;
        }
        if (hi) {
            if (strict)
                return lone_surrogate(j, hi_off);
            str_put_cp(out, 0xFFFD);
            hi = 0;
        }
        switch (c) {
        case '"': case '\\': case '/': break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        default: {
            char buf[16];
            return TROVE_FAIL(j->diag, TROVE_ERR_JSON, esc_off,
                              "invalid escape: backslash followed by %s", char_desc(c, buf));
        }
        }
        {
            uint8_t b = (uint8_t)c;
            str_put(out, &b, 1);
        }
    }
}

/* ---- numbers ------------------------------------------------------------------------- */

static void num_digit(struct trove__json_num *n, int d, int int_part)
{
    if (n->nd == 0 && d == 0) {
        if (!int_part)
            n->point--;
        return;
    }
    if (n->nd < TROVE_JSON_NUM_DIGITS)
        n->d[n->nd++] = (uint8_t)d;
    if (int_part)
        n->point++;
}

int trove__json_number(struct trove__json *j, struct trove__json_num *n)
{
    int c = trove__json_peek_byte(j);
    int64_t exp = 0;
    int exp_neg = 0;

    n->neg = 0;
    n->is_int = 1;
    n->nd = 0;
    n->point = 0;
    if (c == '-') {
        n->neg = 1;
        j->p++;
        c = trove__json_peek_byte(j);
    }
    if (c < '0' || c > '9')
        return trove__json_unexpected(j, c, "a digit", "a number");
    j->p++;
    if (c == '0') {
        c = trove__json_peek_byte(j);
        if (c >= '0' && c <= '9')
            return TROVE_FAIL(j->diag, TROVE_ERR_JSON, trove__json_pos(j),
                              "number with a leading zero");
    } else {
        num_digit(n, c - '0', 1);
        for (;;) {
            /* the fast path stays inside the window */
            while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
                num_digit(n, *j->p++ - '0', 1);
            c = trove__json_peek_byte(j);
            if (c < '0' || c > '9')
                break;
        }
    }
    if (c == '.') {
        n->is_int = 0;
        j->p++;
        c = trove__json_peek_byte(j);
        if (c < '0' || c > '9')
            return trove__json_unexpected(j, c, "a digit after '.'", "a number");
        while (c >= '0' && c <= '9') {
            num_digit(n, c - '0', 0);
            j->p++;
            c = trove__json_peek_byte(j);
        }
    }
    if (c == 'e' || c == 'E') {
        n->is_int = 0;
        j->p++;
        c = trove__json_peek_byte(j);
        if (c == '+' || c == '-') {
            exp_neg = c == '-';
            j->p++;
            c = trove__json_peek_byte(j);
        }
        if (c < '0' || c > '9')
            return trove__json_unexpected(j, c, "a digit in the exponent", "a number");
        while (c >= '0' && c <= '9') {
            exp = exp * 10 + (c - '0');
            if (exp > EXP_CAP)
                exp = EXP_CAP;
            j->p++;
            c = trove__json_peek_byte(j);
        }
        n->point += exp_neg ? -exp : exp;
    }
    return TROVE_OK;
}

int trove__json_num_scaled(const struct trove__json_num *n, unsigned exp10, uint64_t *out)
{
    int64_t q;
    uint64_t v = 0;

    *out = 0;
    if (n->nd == 0)
        return TROVE_OK; /* zero, including -0 */
    if (n->neg)
        return TROVE_ERR_NEGATIVE;
    q = n->point + (int64_t)exp10; /* digits before the point of the result */
    if (q > 20)
        return TROVE_ERR_LIMIT;
    for (int64_t i = 0; i < q; i++) {
        unsigned d = i < n->nd ? n->d[i] : 0;
        if (v > (UINT64_MAX - d) / 10)
            return TROVE_ERR_LIMIT;
        v = v * 10 + d;
    }
    if (q >= 0 && q < n->nd && n->d[q] >= 5) {
        if (v == UINT64_MAX)
            return TROVE_ERR_LIMIT;
        v++;
    }
    *out = v;
    return TROVE_OK;
}

/* ---- literals, keys, whole values ---------------------------------------------------- */

int trove__json_literal(struct trove__json *j, int *value_out)
{
    int first = trove__json_peek_byte(j);
    const char *lit = first == 'n' ? "null" : first == 't' ? "true" : "false";
    uint64_t off = trove__json_pos(j);

    for (const char *l = lit; *l; l++) {
        int c = trove__json_peek_byte(j);
        if (c < 0)
            return trove__json_eof_error(j, "a literal");
        if (c != *l)
            return TROVE_FAIL(j->diag, TROVE_ERR_JSON, off,
                              "invalid literal (expected %s, true, false or null)", lit);
        j->p++;
    }
    if (value_out)
        *value_out = *lit == 'n' ? TROVE_JSON_NULL : *lit == 't' ? TROVE_JSON_TRUE
                                                                 : TROVE_JSON_FALSE;
    return TROVE_OK;
}

int trove__json_key(struct trove__json *j, struct trove__json_str *key, const char *where)
{
    int c = trove__json_peek(j), rc;
    if (c != '"')
        return trove__json_unexpected(j, c, "a string key", where);
    if ((rc = trove__json_string(j, key)) != TROVE_OK)
        return rc;
    c = trove__json_peek(j);
    if (c != ':')
        return trove__json_unexpected(j, c, "':' after a key", where);
    j->p++;
    return TROVE_OK;
}

/* An explicit stack of the brackets this call opened replaces recursion. Keys of skipped
 * objects are validated and discarded. */
/* Append what the walk reads to out (when copying): cut past max bytes. */
struct copy {
    struct trove_bytes *out;
    struct trove__json_str *tmp;
    size_t max;
    int cut, nomem;
};

static void copy_put(struct copy *cp, const void *p, size_t n)
{
    if (cp->cut || cp->out->len + n > cp->max)
        cp->cut = 1;
    else if (trove_bytes_append(cp->out, p, n) != TROVE_OK)
        cp->cut = cp->nomem = 1;
}

/* A string (or a key, with its ':' already consumed by the caller's read) re-written. */
static void copy_str(struct copy *cp)
{
    size_t at = cp->out->len;
    if (cp->tmp->over) {
        cp->cut = 1;
        return;
    }
    if (cp->cut)
        return;
    if (trove__json_put_str(cp->out, (const char *)cp->tmp->ptr, cp->tmp->len) != TROVE_OK)
        cp->nomem = 1;
    if (cp->nomem || cp->out->len > cp->max) {
        cp->out->len = at;
        cp->cut = 1;
    }
}

/* A key of an object being copied: `"key":`. */
static int walk_key(struct trove__json *j, struct copy *cp)
{
    int rc;
    if (!cp)
        return trove__json_key(j, NULL, "an object");
    if ((rc = trove__json_key(j, cp->tmp, "an object")) != TROVE_OK)
        return rc;
    copy_str(cp);
    copy_put(cp, ":", 1);
    return TROVE_OK;
}

/* trove__json_skip, and with cp its copy. */
static int walk(struct trove__json *j, int depth, struct copy *cp)
{
    char stack[TROVE_JSON_MAX_DEPTH];
    struct trove__json_num tmp;
    int top = 0, rc, c;

    assert(j->max_depth <= TROVE_JSON_MAX_DEPTH);
    for (;;) {
        /* a value starts here */
        c = trove__json_peek(j);
        switch (c) {
        case '{':
        case '[':
            if (depth + top + 1 > j->max_depth)
                return TROVE_FAIL(j->diag, TROVE_ERR_LIMIT, trove__json_pos(j),
                                  "JSON nested deeper than %d levels", j->max_depth);
            stack[top++] = (char)c;
            j->p++;
            if (cp)
                copy_put(cp, &stack[top - 1], 1);
            c = trove__json_peek(j);
            if (c == (stack[top - 1] == '{' ? '}' : ']')) {
                j->p++;
                if (cp)
                    copy_put(cp, c == '}' ? "}" : "]", 1);
                top--;
                break;
            }
            if (stack[top - 1] == '{' && (rc = walk_key(j, cp)) != TROVE_OK)
                return rc;
            continue;
        case '"':
            if ((rc = trove__json_string(j, cp ? cp->tmp : NULL)) != TROVE_OK)
                return rc;
            if (cp)
                copy_str(cp);
            break;
        case 't':
        case 'f':
        case 'n': {
            int v;
            if ((rc = trove__json_literal(j, &v)) != TROVE_OK)
                return rc;
            if (cp)
                copy_put(cp, v == TROVE_JSON_NULL ? "null" : v == TROVE_JSON_TRUE ? "true" : "false",
                         v == TROVE_JSON_FALSE ? 5 : 4);
            break;
        }
        case '-': case '0': case '1': case '2': case '3': case '4':
        case '5': case '6': case '7': case '8': case '9':
            if ((rc = trove__json_number(j, &tmp)) != TROVE_OK)
                return rc;
            if (cp) {
                char text[TROVE_JSON_NUM_TEXT];
                copy_put(cp, text, trove__json_num_text(&tmp, text));
            }
            break;
        default:
            return trove__json_unexpected(j, c, "a value",
                                          !top                    ? "a value"
                                          : stack[top - 1] == '{' ? "an object"
                                                                  : "an array");
        }
        /* after a value: close brackets until a ',' asks for the next value */
        for (;;) {
            char close;
            if (top == 0)
                return TROVE_OK;
            close = stack[top - 1] == '{' ? '}' : ']';
            c = trove__json_peek(j);
            if (c == ',') {
                j->p++;
                if (cp)
                    copy_put(cp, ",", 1);
                if (stack[top - 1] == '{' && (rc = walk_key(j, cp)) != TROVE_OK)
                    return rc;
                break;
            }
            if (c != close)
                return trove__json_unexpected(j, c, close == '}' ? "',' or '}'" : "',' or ']'",
                                              close == '}' ? "an object" : "an array");
            j->p++;
            if (cp)
                copy_put(cp, &close, 1);
            top--;
        }
    }
}

int trove__json_skip(struct trove__json *j, int depth)
{
    return walk(j, depth, NULL);
}

int trove__json_copy(struct trove__json *j, int depth, struct trove_bytes *out,
                     struct trove__json_str *tmp, size_t max, int *cut)
{
    struct copy cp = {out, tmp, max, 0, 0};
    size_t at = out->len;
    int rc = walk(j, depth, &cp);
    if (rc == TROVE_OK && cp.nomem)
        rc = TROVE_ERR_NOMEM;
    if (rc != TROVE_OK || cp.cut)
        out->len = at;
    *cut = rc == TROVE_OK && cp.cut;
    return rc;
}

size_t trove__json_num_text(const struct trove__json_num *n, char out[TROVE_JSON_NUM_TEXT])
{
    size_t k = 0;
    if (n->nd && n->neg)
        out[k++] = '-';
    if (n->nd == 0) {
        out[k++] = '0';
    } else if (n->is_int && n->point >= n->nd && n->point <= 40) {
        for (int64_t i = 0; i < n->point; i++)
            out[k++] = (char)('0' + (i < n->nd ? n->d[i] : 0));
    } else {
        out[k++] = '0';
        out[k++] = '.';
        for (uint8_t i = 0; i < n->nd; i++)
            out[k++] = (char)('0' + n->d[i]);
        k += (size_t)snprintf(out + k, TROVE_JSON_NUM_TEXT - k, "e%lld", (long long)n->point);
    }
    out[k] = 0;
    return k;
}

int trove__json_num_double(const struct trove__json_num *n, double *out)
{
    char text[TROVE_JSON_NUM_TEXT];
    double v;

    if (n->nd == 0) {
        *out = n->neg ? -0.0 : 0.0;
        return 0;
    }
    text[0] = n->neg ? '-' : '+';
    text[1] = '0';
    text[2] = '.';
    for (uint8_t i = 0; i < n->nd; i++)
        text[3 + i] = (char)('0' + n->d[i]);
    snprintf(text + 3 + n->nd, sizeof text - 3 - n->nd, "e%lld", (long long)n->point);
    v = strtod(text, NULL);
    if (v - v != 0) /* infinite */
        return -1;
    *out = v;
    return 0;
}

int trove__json_put_str(struct trove_bytes *out, const char *str, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *s = (const uint8_t *)str;
    size_t i = 0;
    int rc = trove_bytes_append(out, "\"", 1);

    while (rc == TROVE_OK && i < len) {
        size_t ok = trove__utf8_valid_prefix(s + i, len - i), run = i;
        for (size_t j = i; j < i + ok && rc == TROVE_OK; j++) {
            uint8_t c = s[j];
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            if (c != '"' && c != '\\' && c >= 0x20)
                continue;
            if ((rc = trove_bytes_append(out, s + run, j - run)) != TROVE_OK)
                break;
            if (c == '"' || c == '\\') {
                e[1] = (char)c;
                rc = trove_bytes_append(out, e, 2);
            } else {
                rc = trove_bytes_append(out, e, 6);
            }
            run = j + 1;
        }
        if (rc == TROVE_OK)
            rc = trove_bytes_append(out, s + run, i + ok - run);
        i += ok;
        if (rc == TROVE_OK && i < len) {
            rc = trove_bytes_append(out, "\\ufffd", 6);
            i++;
        }
    }
    return rc == TROVE_OK ? trove_bytes_append(out, "\"", 1) : rc;
}
