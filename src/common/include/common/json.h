/*
 * json.h (internal): a streaming JSON tokenizer for documents that arrive from outside —
 * the Chrome trace importer today, the hello lines of a network service next.
 *
 * It is a pull tokenizer, not a tree builder: the caller owns the grammar of its document
 * and asks for one token or value at a time. trove__json_peek() skips whitespace and returns
 * the first byte of the next token without consuming it:
 *
 *   '{' '}' '[' ']' ',' ':'   structure — consume with trove__json_take()
 *   '"'                       a string  — trove__json_string(), or trove__json_key()
 *   '-' '0'..'9'              a number  — trove__json_number()
 *   't' 'f' 'n'               a literal — trove__json_literal()
 *   anything else             not JSON  — trove__json_unexpected() names it
 *   -1                        end of input (or a read error: see `err`)
 *
 * and trove__json_skip() validates and discards a whole value of any shape. The input is
 * either one buffer in memory or a FILE* read through a window of one chunk, so memory is
 * bounded whatever the document's size: the window, the caller's string buffers (strings
 * longer than a buffer are truncated and flagged, never grown) and a fixed stack of at most
 * TROVE_JSON_MAX_DEPTH open brackets inside trove__json_skip(). Strings come back with
 * their escapes decoded, \u surrogate pairs joined into one code point; numbers come back
 * as their significant digits and decimal point, never through a double, so that a caller
 * converts them exactly (trove__json_num_scaled). Every error is a TROVE_ERR_JSON (or
 * TROVE_ERR_LIMIT for nesting and size, or the read error) in `diag`, with the byte offset
 * of the input where it was found.
 *
 * UTF-8: by default the raw bytes of a string are passed through as they are and a lone
 * surrogate escape becomes U+FFFD, so that a caller may repair bad names rather than refuse
 * the document (the Chrome importer does). With TROVE_JSON_UTF8 set, a string whose raw
 * bytes are not strict UTF-8 (trove__utf8_valid_prefix) or that escapes a lone surrogate
 * is an error, skipped strings included.
 *
 * Not thread-safe; one tokenizer per input. The inline functions below are the hot path of
 * a large import and stay inside the window; trove__json_fill() refills it.
 */
#ifndef TROVE_COMMON_JSON_H
#define TROVE_COMMON_JSON_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "trove/common.h"

#define TROVE_JSON_MAX_DEPTH 512   /* open brackets trove__json_skip can hold */
#define TROVE_JSON_NUM_DIGITS 24   /* significant digits a number keeps */

/* flags */
#define TROVE_JSON_UTF8 1u         /* strings must be strict UTF-8 */

/* trove__json_literal values */
enum { TROVE_JSON_NULL = 0, TROVE_JSON_FALSE = 1, TROVE_JSON_TRUE = 2 };

struct trove__json {
    /* The input window [start, end) at input offset `base`; p is the next byte. */
    FILE *f;                 /* NULL: the whole input is the window */
    const uint8_t *start, *p, *end;
    uint8_t *buf;            /* chunk storage when reading a FILE */
    size_t chunk;
    uint64_t base;
    uint64_t limit;          /* FILE input larger than this is TROVE_ERR_LIMIT */
    int eof;
    int err;                 /* sticky read error: -errno or TROVE_ERR_LIMIT; 0 if none */

    /* Set by the caller after init, as needed. */
    void (*progress)(void *ctx, uint64_t bytes); /* after each chunk read; may be NULL */
    void *progress_ctx;
    struct trove_diag *diag; /* may be NULL */
    const char *doc;         /* the document in messages: "the %s is truncated" */
    int max_depth;           /* <= TROVE_JSON_MAX_DEPTH, the document's own brackets included */
    unsigned flags;          /* TROVE_JSON_* */
};

/*
 * A decoded string in a caller's buffer of `cap` bytes: the first cap bytes are kept and
 * `over` says that more existed. Give it storage and cap; the readers set len and over.
 */
struct trove__json_str {
    uint8_t *ptr;
    size_t len, cap;
    int over;
};

/*
 * A number as digits: value = (neg ? -1 : 1) * 0.d[0]d[1]... * 10^point, leading zeros
 * dropped (nd == 0 is zero). Only the first TROVE_JSON_NUM_DIGITS significant digits are
 * kept, enough for a u64 and its rounding digit. is_int: written with no fraction or
 * exponent. |exponent| saturates at 10^9.
 */
struct trove__json_num {
    uint8_t neg, is_int, nd;
    uint8_t d[TROVE_JSON_NUM_DIGITS];
    int64_t point;
};

/* Tokenize buf[0..len) (borrowed until the tokenizer is done with it). */
void trove__json_init_mem(struct trove__json *j, const uint8_t *buf, size_t len,
                          struct trove_diag *diag);

/* Tokenize f, read `chunk` bytes at a time (chunk > 0), refusing input past `limit` bytes.
 * The window is allocated here: TROVE_ERR_NOMEM (diag untouched). trove__json_free releases
 * it; f stays the caller's. */
int trove__json_init_file(struct trove__json *j, FILE *f, size_t chunk, uint64_t limit,
                          struct trove_diag *diag);

void trove__json_free(struct trove__json *j);

/* Make at least one byte available: 1, or 0 at the end of input or on a read error (then
 * j->err is set). */
int trove__json_fill(struct trove__json *j);

/* The input offset of the next byte. */
static inline uint64_t trove__json_pos(const struct trove__json *j)
{
    return j->base + (uint64_t)(j->p - j->start);
}

/* The next byte, whitespace included, without consuming it; -1 at the end of input. */
static inline int trove__json_peek_byte(struct trove__json *j)
{
    if (j->p == j->end && !trove__json_fill(j))
        return -1;
    return *j->p;
}

/* Skip whitespace; the next byte without consuming it, or -1 at the end of input. */
static inline int trove__json_peek(struct trove__json *j)
{
    for (;;) {
        while (j->p < j->end) {
            uint8_t c = *j->p;
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
                return c;
            j->p++;
        }
        if (!trove__json_fill(j))
            return -1;
    }
}

/* Consume the byte a peek returned. */
static inline void trove__json_take(struct trove__json *j)
{
    assert(j->p < j->end);
    j->p++;
}

/* ---- errors: each fills j->diag and returns the code ---------------------------------- */

/* The input ended (or could not be read, or passed the limit) while `inside` ("a string",
 * "the event array") was incomplete. */
int trove__json_eof_error(struct trove__json *j, const char *inside);

/* "expected EXPECTED in WHERE, got C" at the current byte; c < 0 is trove__json_eof_error. */
int trove__json_unexpected(struct trove__json *j, int c, const char *expected, const char *where);

/* ---- values -------------------------------------------------------------------------- */

/* The string whose '"' is the next byte, decoded into out (NULL: validate and discard). */
int trove__json_string(struct trove__json *j, struct trove__json_str *out);

/* The number whose first byte ('-' or a digit) is next, its grammar checked. */
int trove__json_number(struct trove__json *j, struct trove__json_num *out);

/* The literal (true, false, null) whose first byte is next; *value_out (may be NULL) gets
 * TROVE_JSON_TRUE, _FALSE or _NULL. */
int trove__json_literal(struct trove__json *j, int *value_out);

/* Validate and discard one value of any shape; `depth` brackets are open around it (those
 * count against max_depth). No recursion. */
int trove__json_skip(struct trove__json *j, int depth);

/*
 * Read one value of any shape, as trove__json_skip does, and append it to out as compact JSON:
 * no whitespace, strings re-escaped (trove__json_put_str), numbers as trove__json_num_text.
 * Strings are decoded through tmp (a string longer than tmp is cut). *cut is 1 when the text
 * would pass max bytes or a string did not fit in tmp: the value was read all the same, and
 * out is as it was. Errors: those of trove__json_skip, TROVE_ERR_NOMEM (the value was read;
 * out as it was).
 */
int trove__json_copy(struct trove__json *j, int depth, struct trove_bytes *out,
                     struct trove__json_str *tmp, size_t max, int *cut);

/* ---- objects ------------------------------------------------------------------------- */

/* `"key" :` — the key decoded into key (bounded). `where` names the object in messages. */
int trove__json_key(struct trove__json *j, struct trove__json_str *key, const char *where);

/* The key is exactly k (a truncated key never matches). */
static inline int trove__json_key_is(const struct trove__json_str *key, const char *k)
{
    size_t n = strlen(k);
    return !key->over && key->len == n && memcmp(key->ptr, k, n) == 0;
}

/* After a member of an object: 1 if a ',' follows (consumed: another member comes), 0 if
 * the closing '}' does (consumed), or the error for anything else. */
static inline int trove__json_next_member(struct trove__json *j, const char *where)
{
    int c = trove__json_peek(j);
    if (c == ',' || c == '}') {
        j->p++;
        return c == ',';
    }
    return trove__json_unexpected(j, c, "',' or '}'", where);
}

/* ---- numbers ------------------------------------------------------------------------- */

/*
 * n * 10^exp10 as a u64, exactly: digits past the integer rounded half away from zero.
 * TROVE_OK, TROVE_ERR_NEGATIVE (n < 0; -0 is 0) or TROVE_ERR_LIMIT (over UINT64_MAX);
 * *out is 0 on error. No diag: the caller words it.
 */
int trove__json_num_scaled(const struct trove__json_num *n, unsigned exp10, uint64_t *out);

/* A number as valid JSON text, NUL-terminated in out: its integer digits when it is an integer
 * of at most 40 digits ("-12"), else "0.DIGITSeP" ("0.15e1"). Returns the length. */
#define TROVE_JSON_NUM_TEXT 64
size_t trove__json_num_text(const struct trove__json_num *n, char out[TROVE_JSON_NUM_TEXT]);

/* The double nearest the number (strtod of its digits): 0, or -1 when it is past a double's
 * range (*out is then unchanged). */
int trove__json_num_double(const struct trove__json_num *n, double *out);

/* ---- writing ------------------------------------------------------------------------- */

/* Append s[0..len) to out as a JSON string: quoted, '"', '\\' and control bytes escaped, a
 * byte that starts no UTF-8 character written as U+FFFD. TROVE_OK or TROVE_ERR_NOMEM. */
int trove__json_put_str(struct trove_bytes *out, const char *s, size_t len);

#endif
