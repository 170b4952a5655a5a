/*
 * test_json.c: the streaming JSON tokenizer (common/json.h).
 *
 * A small walker turns any document into a line of tokens (strings in hex after their
 * escapes are decoded, numbers as their digits and point, literals, brackets) or into the
 * error it stopped at (code, offset, message). Each case is walked from memory and through a
 * FILE read 1 to 7 bytes at a time, which puts a chunk boundary inside every token, and all
 * of them must give the same line; then the line is checked against the expected one. Other
 * cases check the number conversion, the nesting limit, truncated strings, strict UTF-8,
 * read errors, the input limit and the progress callback.
 */
#include "testutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

#define LOG_CAP 4096

struct log {
    char s[LOG_CAP];
    size_t n;
};

static void logp(struct log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void logp(struct log *l, const char *fmt, ...)
{
    va_list ap;
    int k;
    va_start(ap, fmt);
    k = vsnprintf(l->s + l->n, LOG_CAP - l->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        l->n += (size_t)k < LOG_CAP - l->n ? (size_t)k : LOG_CAP - l->n - 1;
}

static void log_str(struct log *l, const char *s) { logp(l, "%s", s); }

static void log_bytes(struct log *l, const struct trove__json_str *s)
{
    log_str(l, "s:");
    for (size_t i = 0; i < s->len; i++) {
        char h[4];
        snprintf(h, sizeof h, "%02x", s->ptr[i]);
        log_str(l, h);
    }
    if (s->over)
        log_str(l, "+");
    log_str(l, " ");
}

static void log_num(struct log *l, const struct trove__json_num *n)
{
    log_str(l, n->neg ? "n:-" : "n:");
    for (unsigned i = 0; i < n->nd; i++) {
        char d[2] = {(char)('0' + n->d[i]), 0};
        log_str(l, d);
    }
    logp(l, "%se%lld", n->is_int ? "i" : "", (long long)n->point);
    log_str(l, " ");
}

/* Walk one value, logging its tokens; the error code, or TROVE_OK. */
static int walk_value(struct trove__json *j, struct log *l, int depth)
{
    uint8_t buf[8];
    struct trove__json_str s = {buf, 0, sizeof buf, 0};
    struct trove__json_num num;
    int c = trove__json_peek(j), rc, v;

    if (depth > 16)
        return trove__json_skip(j, depth);
    if (c == '{' || c == '[') {
        int close = c == '{' ? '}' : ']';
        trove__json_take(j);
        log_str(l, c == '{' ? "{ " : "[ ");
        if (trove__json_peek(j) == close) {
            trove__json_take(j);
            log_str(l, close == '}' ? "} " : "] ");
            return TROVE_OK;
        }
        for (;;) {
            if (close == '}') {
                if ((rc = trove__json_key(j, &s, "an object")) != TROVE_OK)
                    return rc;
                log_str(l, "k:");
                log_bytes(l, &s);
            }
            if ((rc = walk_value(j, l, depth + 1)) != TROVE_OK)
                return rc;
            if (close == '}') {
                if ((rc = trove__json_next_member(j, "an object")) < 0)
                    return rc;
                if (rc == 0)
                    break;
                continue;
            }
            c = trove__json_peek(j);
            if (c == ']') {
                trove__json_take(j);
                break;
            }
            if (c != ',')
                return trove__json_unexpected(j, c, "',' or ']'", "an array");
            trove__json_take(j);
        }
        log_str(l, close == '}' ? "} " : "] ");
        return TROVE_OK;
    }
    if (c == '"') {
        if ((rc = trove__json_string(j, &s)) == TROVE_OK)
            log_bytes(l, &s);
        return rc;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        if ((rc = trove__json_number(j, &num)) == TROVE_OK)
            log_num(l, &num);
        return rc;
    }
    if (c == 't' || c == 'f' || c == 'n') {
        if ((rc = trove__json_literal(j, &v)) == TROVE_OK)
            log_str(l, v == TROVE_JSON_TRUE ? "true " : v == TROVE_JSON_FALSE ? "false " : "null ");
        return rc;
    }
    return trove__json_unexpected(j, c, "a value", "the document");
}

/* The whole document: one value, then only whitespace. */
static void walk(struct trove__json *j, struct log *l)
{
    struct trove_diag *d = j->diag;
    int rc = walk_value(j, l, 0);
    if (rc == TROVE_OK && trove__json_peek(j) >= 0)
        log_str(l, "TRAILING");
    else if (rc != TROVE_OK)
        logp(l, "ERR %d @%llu %s", d->code, (unsigned long long)d->offset, d->msg);
    logp(l, " |%llu", (unsigned long long)trove__json_pos(j));
}

static void walk_mem(const char *doc, size_t len, unsigned flags, struct log *l)
{
    struct trove__json j;
    struct trove_diag d;
    memset(l, 0, sizeof *l);
    trove__json_init_mem(&j, (const uint8_t *)doc, len, &d);
    j.flags = flags;
    walk(&j, l);
    trove__json_free(&j);
}

static void walk_file(const char *doc, size_t len, size_t chunk, unsigned flags, struct log *l)
{
    struct trove__json j;
    struct trove_diag d;
    FILE *f = tmpfile();
    memset(l, 0, sizeof *l);
    if (!f || fwrite(doc, 1, len, f) != len || fseek(f, 0, SEEK_SET) != 0)
        abort();
    if (trove__json_init_file(&j, f, chunk, UINT64_MAX, &d) != TROVE_OK)
        abort();
    j.flags = flags;
    walk(&j, l);
    trove__json_free(&j);
    fclose(f);
}

/* doc must walk to `want`, from memory and through every small chunk size. */
static void expect_n(const char *doc, size_t len, unsigned flags, const char *want)
{
    struct log m, f;
    walk_mem(doc, len, flags, &m);
    if (strcmp(m.s, want) != 0)
        fprintf(stderr, "doc %s\n  got  %s\n  want %s\n", doc, m.s, want);
    CHECK(strcmp(m.s, want) == 0);
    for (size_t chunk = 1; chunk <= 7; chunk++) {
        walk_file(doc, len, chunk, flags, &f);
        if (strcmp(m.s, f.s) != 0)
            fprintf(stderr, "doc %s chunk %zu\n  file %s\n  mem  %s\n", doc, chunk, f.s, m.s);
        CHECK(strcmp(m.s, f.s) == 0);
    }
}

static void expect(const char *doc, const char *want) { expect_n(doc, strlen(doc), 0, want); }

static void expect_utf8(const char *doc, const char *want)
{
    expect_n(doc, strlen(doc), TROVE_JSON_UTF8, want);
}

static void test_tokens(void)
{
    expect("  {\"a\" : [1, -2.50, 3e2, true, false, null, \"x\"], \"\":{}} \n",
           "{ k:s:61 [ n:1ie1 n:-250e1 n:3e3 true false null s:78 ] k:s: { } }  |58");
    expect("[]", "[ ]  |2");
    expect("0", "n:ie0  |1");
    expect("-0", "n:-ie0  |2");
    expect("0.00125", "n:125e-2  |7");
    expect("1E+2", "n:1e3  |4");
    expect("12345678901234567890123456789",
           "n:123456789012345678901234ie29  |29"); /* 24 digits kept */
}

static void test_strings(void)
{
    /* the nine escapes, \u in the BMP, a surrogate pair, and truncation at the buffer */
    expect("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "s:225c2f080c0a0d09  |18");
    expect("\"\\u00e9\\u20AC\"", "s:c3a9e282ac  |14");
    expect("\"\\uD83D\\uDE00\"", "s:f09f9880  |14");
    expect("\"abcdefghij\"", "s:6162636465666768+  |12");
    /* lone surrogates become U+FFFD; a high one waits for its low half */
    expect("\"\\uD83Dx\"", "s:efbfbd78  |9");
    expect("\"\\uDE00\"", "s:efbfbd  |8");
    expect("\"\\uD83D\\uD83D\\uDE00\"", "s:efbfbdf09f9880  |20");
    expect("\"\\uD83D\\n\"", "s:efbfbd0a  |10");
    expect("\"\\uD83D\"", "s:efbfbd  |8");
    /* raw bytes pass through unchecked by default */
    expect("\"\xC0\x80\xFF\"", "s:c080ff  |5");
}

static void test_errors(void)
{
    expect("\"abc", "ERR -1014 @4 unexpected end of input inside a string; the input is "
                    "truncated |4");
    expect("\"a\nb\"", "ERR -1014 @2 control byte 0x0a inside a string (JSON requires it to "
                       "be escaped) |2");
    expect("\"ab\\x\"", "ERR -1014 @3 invalid escape: backslash followed by 'x' |5");
    expect("\"ab\\u12G4\"", "ERR -1014 @3 \\u escape needs four hex digits |7");
    expect("\"ab\\u12", "ERR -1014 @7 unexpected end of input inside a \\u escape; the input "
                        "is truncated |7");
    expect("\"ab\\", "ERR -1014 @4 unexpected end of input inside a string escape; the input "
                     "is truncated |4");
    expect("01", "ERR -1014 @1 number with a leading zero |1");
    expect("1.", "ERR -1014 @2 unexpected end of input inside a number; the input is "
                 "truncated |2");
    expect("1.e5", "ERR -1014 @2 expected a digit after '.' in a number, got 'e' |2");
    expect("1e+", "ERR -1014 @3 unexpected end of input inside a number; the input is "
                  "truncated |3");
    expect("-x", "ERR -1014 @1 expected a digit in a number, got 'x' |1");
    expect("[nul]", "[ ERR -1014 @1 invalid literal (expected null, true, false or null) |4");
    expect("[tru", "[ ERR -1014 @4 unexpected end of input inside a literal; the input is "
                   "truncated |4");
    expect("{\"a\" 1}", "{ ERR -1014 @5 expected ':' after a key in an object, got '1' |5");
    expect("{1:2}", "{ ERR -1014 @1 expected a string key in an object, got '1' |1");
    expect("{\"a\":1 \"b\":2}",
           "{ k:s:61 n:1ie1 ERR -1014 @7 expected ',' or '}' in an object, got '\"' |7");
    expect("[1 2]", "[ n:1ie1 ERR -1014 @3 expected ',' or ']' in an array, got '2' |3");
    expect("\x01", "ERR -1014 @0 expected a value in the document, got byte 0x01 |0");
    expect("", "ERR -1014 @0 unexpected end of input inside the document; the input is "
               "truncated |0");
    expect("[1] x", "[ n:1ie1 ] TRAILING |4");
}

/* Strict UTF-8: raw bytes through trove__utf8_valid_prefix, and no lone surrogates. */
static void test_utf8(void)
{
    expect_utf8("\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF\"",
                "s:636166c3a920e282+  |21"); /* 8 bytes of buffer kept */
    expect_utf8("[\"\xC3\xA9\",\"\xF0\x9F\x98\x80\"]", "[ s:c3a9 s:f09f9880 ]  |13");
    expect_utf8("\"\\uD83D\\uDE00\"", "s:f09f9880  |14");
    expect_utf8("\"a\xC0\x80\"", "ERR -1014 @2 invalid UTF-8 inside a string |4");
    expect_utf8("\"a\xC1\xBF\"", "ERR -1014 @2 invalid UTF-8 inside a string |4");
    expect_utf8("\"a\xE0\x80\xAF\"", "ERR -1014 @2 invalid UTF-8 inside a string |5");
    expect_utf8("\"a\xED\xA0\x80\"", "ERR -1014 @2 invalid UTF-8 inside a string |5");
    expect_utf8("\"a\xF4\x90\x80\x80\"", "ERR -1014 @2 invalid UTF-8 inside a string |6");
    expect_utf8("\"a\xF5\x80\x80\x80\"", "ERR -1014 @2 invalid UTF-8 inside a string |6");
    expect_utf8("\"a\x80\"", "ERR -1014 @2 invalid UTF-8 inside a string |3");
    expect_utf8("\"a\xE2\x82\"", "ERR -1014 @2 invalid UTF-8 inside a string |4");
    expect_utf8("\"a\xE2\x82", "ERR -1014 @4 unexpected end of input inside a string; the "
                               "input is truncated |4");
    expect_utf8("\"\\uD83Dx\"", "ERR -1014 @1 \\u escape of a lone surrogate (not a Unicode "
                                "character) |7");
    expect_utf8("\"\\uDE00\"", "ERR -1014 @1 \\u escape of a lone surrogate (not a Unicode "
                               "character) |7");
    expect_utf8("\"x\\uD83D\"", "ERR -1014 @2 \\u escape of a lone surrogate (not a Unicode "
                                "character) |8");
    expect_utf8("\"\\uD83D\\uD83D\"", "ERR -1014 @1 \\u escape of a lone surrogate (not a "
                                      "Unicode character) |13");
    /* skipped strings are checked too */
    {
        static const char doc[] = "{\"a\":[\"ok\",\"\xED\xBF\xBF\"]}";
        struct trove__json j;
        struct trove_diag d;
        trove__json_init_mem(&j, (const uint8_t *)doc, sizeof doc - 1, &d);
        CHECK_EQ_INT(trove__json_skip(&j, 0), TROVE_OK); /* lenient */
        trove__json_init_mem(&j, (const uint8_t *)doc, sizeof doc - 1, &d);
        j.flags = TROVE_JSON_UTF8;
        CHECK_EQ_INT(trove__json_skip(&j, 0), TROVE_ERR_JSON);
        CHECK_EQ_INT(d.offset, 12);
    }
}

static void test_numbers(void)
{
    static const struct {
        const char *doc;
        unsigned exp10;
        int rc;
        uint64_t v;
    } cases[] = {
        {"0", 3, TROVE_OK, 0},
        {"-0", 3, TROVE_OK, 0},
        {"-0.0e5", 3, TROVE_OK, 0},
        {"1.0005", 3, TROVE_OK, 1001},   /* half away from zero */
        {"1.00049", 3, TROVE_OK, 1000},
        {"0.0004", 3, TROVE_OK, 0},
        {"0.0005", 3, TROVE_OK, 1},
        {"12.5", 0, TROVE_OK, 13},
        {"5e-99999999999", 3, TROVE_OK, 0},
        {"18446744073709551615", 0, TROVE_OK, UINT64_MAX},
        {"18446744073709551616", 0, TROVE_ERR_LIMIT, 0},
        {"18446744073709551615.4", 0, TROVE_OK, UINT64_MAX},
        {"18446744073709551615.5", 0, TROVE_ERR_LIMIT, 0},
        {"18446744073709552", 3, TROVE_ERR_LIMIT, 0},
        {"1e20", 0, TROVE_ERR_LIMIT, 0},
        {"1e19", 0, TROVE_OK, 10000000000000000000ull},
        {"1e999999999999", 0, TROVE_ERR_LIMIT, 0},
        {"-1", 0, TROVE_ERR_NEGATIVE, 0},
        {"-0.0001", 3, TROVE_ERR_NEGATIVE, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct trove__json j;
        struct trove__json_num n;
        uint64_t v = 7;
        trove__json_init_mem(&j, (const uint8_t *)cases[i].doc, strlen(cases[i].doc), NULL);
        CHECK_EQ_INT(trove__json_number(&j, &n), TROVE_OK);
        CHECK_EQ_INT(trove__json_pos(&j), strlen(cases[i].doc));
        CHECK_EQ_INT(trove__json_num_scaled(&n, cases[i].exp10, &v), cases[i].rc);
        if (v != cases[i].v)
            fprintf(stderr, "%s: %llu\n", cases[i].doc, (unsigned long long)v);
        CHECK(v == cases[i].v);
    }
}

static void test_nesting(void)
{
    char doc[2 * TROVE_JSON_MAX_DEPTH + 8];
    struct trove__json j;
    struct trove_diag d;
    size_t n;

    /* the most brackets trove__json_skip holds, and one more */
    for (int levels = TROVE_JSON_MAX_DEPTH; levels <= TROVE_JSON_MAX_DEPTH + 1; levels++) {
        n = 0;
        for (int i = 0; i < levels; i++)
            doc[n++] = '[';
        for (int i = 0; i < levels; i++)
            doc[n++] = ']';
        trove__json_init_mem(&j, (const uint8_t *)doc, n, &d);
        CHECK_EQ_INT(trove__json_skip(&j, 0), levels <= TROVE_JSON_MAX_DEPTH ? TROVE_OK
                                                                               : TROVE_ERR_LIMIT);
        if (levels > TROVE_JSON_MAX_DEPTH) {
            CHECK_EQ_INT(d.offset, TROVE_JSON_MAX_DEPTH);
            CHECK(strcmp(d.msg, "JSON nested deeper than 512 levels") == 0);
        } else {
            CHECK_EQ_INT(trove__json_pos(&j), n);
        }
    }
    /* a lower limit, counting the brackets the caller already opened */
    trove__json_init_mem(&j, (const uint8_t *)"{\"a\":[{}]}", 10, &d);
    j.max_depth = 3;
    CHECK_EQ_INT(trove__json_skip(&j, 0), TROVE_OK);
    trove__json_init_mem(&j, (const uint8_t *)"{\"a\":[{}]}", 10, &d);
    j.max_depth = 3;
    CHECK_EQ_INT(trove__json_skip(&j, 1), TROVE_ERR_LIMIT);
    CHECK_EQ_INT(d.offset, 6);
    CHECK(strcmp(d.msg, "JSON nested deeper than 3 levels") == 0);
    /* deep nesting costs no memory: an unclosed 100000-level document */
    {
        size_t len = 100000;
        char *deep = malloc(len);
        if (!deep)
            abort();
        memset(deep, '[', len);
        trove__json_init_mem(&j, (const uint8_t *)deep, len, &d);
        CHECK_EQ_INT(trove__json_skip(&j, 0), TROVE_ERR_LIMIT);
        CHECK_EQ_INT(d.offset, TROVE_JSON_MAX_DEPTH);
        free(deep);
    }
}

static void count_progress(void *ctx, uint64_t bytes)
{
    uint64_t *p = ctx;
    CHECK(bytes > p[1]);
    p[0]++;
    p[1] = bytes;
}

static void test_file(void)
{
    static const char doc[] = "{\"key\": \"value\", \"n\": [1, 2, 3]}";
    struct trove__json j;
    struct trove_diag d;
    uint64_t prog[2] = {0, 0};
    FILE *f;

    /* progress after each chunk; the window is all the memory there is */
    f = tmpfile();
    if (!f || fwrite(doc, 1, sizeof doc - 1, f) != sizeof doc - 1 || fseek(f, 0, SEEK_SET))
        abort();
    CHECK_EQ_INT(trove__json_init_file(&j, f, 8, UINT64_MAX, &d), TROVE_OK);
    j.progress = count_progress;
    j.progress_ctx = prog;
    CHECK_EQ_INT(trove__json_skip(&j, 0), TROVE_OK);
    CHECK_EQ_INT(trove__json_peek(&j), -1);
    CHECK_EQ_INT(trove__json_pos(&j), sizeof doc - 1);
    CHECK_EQ_INT(prog[0], (sizeof doc - 1 + 7) / 8);
    CHECK_EQ_INT(prog[1], sizeof doc - 1);
    CHECK_EQ_INT(j.err, 0);
    trove__json_free(&j);

    /* the limit: exactly the input passes, one byte less fails where the limit is passed */
    rewind(f);
    CHECK_EQ_INT(trove__json_init_file(&j, f, 5, sizeof doc - 1, &d), TROVE_OK);
    CHECK_EQ_INT(trove__json_skip(&j, 0), TROVE_OK);
    trove__json_free(&j);
    rewind(f);
    CHECK_EQ_INT(trove__json_init_file(&j, f, 5, sizeof doc - 2, &d), TROVE_OK);
    CHECK_EQ_INT(trove__json_skip(&j, 0), TROVE_ERR_LIMIT);
    CHECK_EQ_INT(j.err, TROVE_ERR_LIMIT);
    CHECK_EQ_INT(d.offset, 30);
    CHECK(strstr(d.msg, "larger than max_input (31 bytes)") != NULL);
    trove__json_free(&j);
    fclose(f);

    /* a read error is -errno, named with the document */
    f = fopen("/dev/null", "w");
    if (!f)
        abort();
    CHECK_EQ_INT(trove__json_init_file(&j, f, 4, UINT64_MAX, &d), TROVE_OK);
    j.doc = "hello line";
    CHECK_EQ_INT(trove__json_peek(&j), -1);
    CHECK(j.err < 0 && j.err > -1000);
    CHECK_EQ_INT(trove__json_eof_error(&j, "a value"), j.err);
    CHECK(strncmp(d.msg, "reading the hello line failed: ", 31) == 0);
    trove__json_free(&j);
    fclose(f);

    /* keys: bounded, and key_is never matches a truncated one */
    {
        static const char obj[] = "{\"ts\":1,\"tsxxxxxxxxx\":2}";
        uint8_t kb[4];
        struct trove__json_str key = {kb, 0, sizeof kb, 0};
        struct trove__json_num n;
        trove__json_init_mem(&j, (const uint8_t *)obj, sizeof obj - 1, &d);
        CHECK_EQ_INT(trove__json_peek(&j), '{');
        trove__json_take(&j);
        CHECK_EQ_INT(trove__json_key(&j, &key, "an object"), TROVE_OK);
        CHECK(trove__json_key_is(&key, "ts"));
        CHECK_EQ_INT(trove__json_number(&j, &n), TROVE_OK);
        CHECK_EQ_INT(trove__json_next_member(&j, "an object"), 1);
        CHECK_EQ_INT(trove__json_key(&j, &key, "an object"), TROVE_OK);
        CHECK(key.over && key.len == 4 && !trove__json_key_is(&key, "tsxx"));
        CHECK_EQ_INT(trove__json_skip(&j, 1), TROVE_OK);
        CHECK_EQ_INT(trove__json_next_member(&j, "an object"), 0);
        CHECK_EQ_INT(trove__json_pos(&j), sizeof obj - 1);
    }
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_tokens);
    RUN(test_strings);
    RUN(test_errors);
    RUN(test_utf8);
    RUN(test_numbers);
    RUN(test_nesting);
    RUN(test_file);
    return test_done();
}
