/*
 * fuzz_json.c: libFuzzer target for the streaming JSON tokenizer (common/json.h).
 *
 * Each input is walked as one JSON document by a small walker over the whole interface
 * (peek, take, key, next_member, string, number, literal, skip below a depth) that folds
 * every token into a hash. It is walked four ways and the results are checked against
 * each other:
 *   1. from memory, lenient;
 *   2. through a FILE (fmemopen) read 1..7 bytes at a time, lenient, which puts a chunk
 *      boundary inside every token: the same code, offset, message, position and hash as 1;
 *   3. from memory with TROVE_JSON_UTF8: every string it returns is strict UTF-8; when it
 *      succeeds, 1 did with the same hash; when 1 failed, so does it;
 *   4. through a FILE, strict: the same as 3.
 * A failure always leaves a diag with the code and an offset within the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/utf8.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


#define WALK_DEPTH 40 /* deeper values go through trove__json_skip */

struct walk {
    uint64_t hash;
    int strict;
};

static void mix(struct walk *w, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        w->hash = (w->hash ^ b[i]) * 1099511628211ull;
}

static void mix_str(struct walk *w, const struct trove__json_str *s)
{
    if (w->strict && !s->over)
        CHECK(trove__utf8_valid_prefix(s->ptr, s->len) == s->len);
    mix(w, &s->len, sizeof s->len);
    mix(w, &s->over, sizeof s->over);
    mix(w, s->ptr, s->len);
}

static int walk_value(struct trove__json *j, struct walk *w, int depth)
{
    uint8_t buf[64];
    struct trove__json_str s = {buf, 0, sizeof buf, 0};
    struct trove__json_num n;
    int c = trove__json_peek(j), rc, v;

    mix(w, &c, sizeof c);
    if (depth >= WALK_DEPTH)
        return trove__json_skip(j, depth);
    if (c == '{' || c == '[') {
        int close = c == '{' ? '}' : ']';
        trove__json_take(j);
        if (trove__json_peek(j) == close) {
            trove__json_take(j);
            return TROVE_OK;
        }
        for (;;) {
            if (close == '}') {
                if ((rc = trove__json_key(j, &s, "an object")) != TROVE_OK)
                    return rc;
                mix_str(w, &s);
            }
            if ((rc = walk_value(j, w, depth + 1)) != TROVE_OK)
                return rc;
            if (close == '}') {
                if ((rc = trove__json_next_member(j, "an object")) <= 0)
                    return rc;
                continue;
            }
            c = trove__json_peek(j);
            if (c != ',' && c != ']')
                return trove__json_unexpected(j, c, "',' or ']'", "an array");
            trove__json_take(j);
            if (c == ']')
                return TROVE_OK;
        }
    }
    if (c == '"') {
        if ((rc = trove__json_string(j, &s)) == TROVE_OK)
            mix_str(w, &s);
        return rc;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        uint64_t us;
        if ((rc = trove__json_number(j, &n)) != TROVE_OK)
            return rc;
        CHECK(n.nd <= TROVE_JSON_NUM_DIGITS && (n.nd == 0 || n.d[0] != 0));
        mix(w, &n.neg, 1);
        mix(w, &n.is_int, 1);
        mix(w, n.d, n.nd);
        mix(w, &n.point, sizeof n.point);
        rc = trove__json_num_scaled(&n, 3, &us);
        CHECK(rc == TROVE_OK || rc == TROVE_ERR_NEGATIVE || rc == TROVE_ERR_LIMIT);
        CHECK(rc == TROVE_OK || us == 0);
        mix(w, &us, sizeof us);
        return TROVE_OK;
    }
    if (c == 't' || c == 'f' || c == 'n') {
        if ((rc = trove__json_literal(j, &v)) == TROVE_OK)
            mix(w, &v, sizeof v);
        return rc;
    }
    return trove__json_unexpected(j, c, "a value", "the document");
}

struct run {
    int rc;
    uint64_t hash, pos;
    struct trove_diag diag;
};

static void walk(struct trove__json *j, int strict, struct run *r, size_t size)
{
    struct walk w = {1469598103934665603ull, strict};
    if (strict)
        j->flags = TROVE_JSON_UTF8;
    r->rc = walk_value(j, &w, 0);
    if (r->rc == TROVE_OK && trove__json_peek(j) >= 0)
        r->rc = 1; /* data after the document */
    r->hash = w.hash;
    r->pos = trove__json_pos(j);
    CHECK(r->pos <= size);
    if (r->rc < 0)
        CHECK(r->diag.code == r->rc && r->diag.offset <= size);
}

static void run_mem(const uint8_t *data, size_t size, int strict, struct run *r)
{
    struct trove__json j;
    memset(r, 0, sizeof *r);
    trove__json_init_mem(&j, data, size, &r->diag);
    walk(&j, strict, r, size);
    trove__json_free(&j);
}

static void run_file(const uint8_t *data, size_t size, int strict, struct run *r)
{
    struct trove__json j;
    FILE *f = fmemopen((void *)data, size, "rb");
    CHECK(f != NULL);
    memset(r, 0, sizeof *r);
    CHECK(trove__json_init_file(&j, f, 1 + size % 7, UINT64_MAX, &r->diag) == TROVE_OK);
    walk(&j, strict, r, size);
    trove__json_free(&j);
    fclose(f);
}

static void same(const struct run *a, const struct run *b)
{
    CHECK(a->rc == b->rc);
    if (a->rc < 0)
        CHECK(a->diag.offset == b->diag.offset && !strcmp(a->diag.msg, b->diag.msg));
    else
        CHECK(a->hash == b->hash && a->pos == b->pos);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct run a, b, c, d;

    run_mem(data, size, 0, &a);
    run_mem(data, size, 1, &c);
    if (size > 0) { /* fmemopen refuses an empty buffer */
        run_file(data, size, 0, &b);
        same(&a, &b);
        run_file(data, size, 1, &d);
        same(&c, &d);
    }
    if (c.rc >= 0)
        CHECK(a.rc == c.rc && a.hash == c.hash && a.pos == c.pos);
    if (a.rc < 0)
        CHECK(c.rc < 0);
    return 0;
}
