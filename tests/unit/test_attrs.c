/*
 * test_attrs.c: event attributes (include/trove/attrs.h) and the attributes object that keeps
 * them (src/codec/attrs.c, docs/formats/attrs.md).
 *
 * Round trips with every type at its extremes (doubles by their bits: -0, a NaN's payload),
 * determinism, the golden vector tests/vectors/attrs_small.bin with its fields where the
 * format document puts them; the table's interning and its refusals; and bad objects: every
 * prefix, a flipped bit anywhere, each header field broken with the checksum made right
 * again, and streams that a zstd frame made here carries past the checks (a key or string
 * past the strings, a bad type or bool, a cut varint, a string given twice, an event past
 * 2^64, bytes left over). Every allocation failing in turn leaves the output as it was. Each
 * bad object is also a seed of fuzz/corpus/fuzz_attrs (TROVE_ATTRS_CORPUS=dir writes them);
 * a bad object leaves the caller's table untouched.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/endian.h"
#include "trove/attrs.h"
#include "trove/digest.h"
#include "trove/testing.h"
#include "trove/wire.h"

#define FIXED 48u

static void corpus_write(const char *name, const uint8_t *buf, size_t len)
{
    test_corpus_write("TROVE_ATTRS_CORPUS", name, NULL, 0, buf, len);
}

static void seal(uint8_t *buf, size_t len)
{
    trove__put_le64(buf + len - 8, trove_checksum64(buf, len - 8));
}

static uint32_t sid(struct trove_attrs *a, const char *s)
{
    uint32_t id = UINT32_MAX;
    CHECK_EQ_INT(trove_attrs_intern(a, s, strlen(s), &id), TROVE_OK);
    return id;
}

static void add(struct trove_attrs *a, uint64_t ev, const char *key, int type, int64_t i, double d,
                const char *s)
{
    struct trove_attr r;
    memset(&r, 0, sizeof r);
    r.event = ev;
    r.key = sid(a, key);
    r.type = (uint8_t)type;
    if (type == TROVE_ATTR_INT)
        r.v.i = i;
    else if (type == TROVE_ATTR_DOUBLE)
        r.v.d = d;
    else if (type == TROVE_ATTR_BOOL)
        r.v.b = (uint8_t)i;
    else
        r.v.s = sid(a, s);
    CHECK_EQ_INT(trove_attrs_add(a, &r), TROVE_OK);
}

/* The table of the golden vector: three events' attributes, every type. */
static void small(struct trove_attrs *a)
{
    memset(a, 0, sizeof *a);
    add(a, 0, "url", TROVE_ATTR_STRING, 0, 0, "https://example.org/");
    add(a, 0, "size", TROVE_ATTR_INT, -5, 0, NULL);
    add(a, 2, "ratio", TROVE_ATTR_DOUBLE, 0, 0.5, NULL);
    add(a, 2, "ok", TROVE_ATTR_BOOL, 1, 0, NULL);
    add(a, 7, "data", TROVE_ATTR_JSON, 0, 0, "{\"k\":[1,2]}");
    add(a, 7, "url", TROVE_ATTR_STRING, 0, 0, "https://example.org/");
}

static int same(const struct trove_attrs *x, const struct trove_attrs *y)
{
    if (x->n != y->n || x->nstr != y->nstr)
        return 0;
    for (size_t i = 0; i < x->nstr; i++) {
        size_t lx, ly;
        const char *a = trove_attrs_string(x, (uint32_t)i, &lx), *b = trove_attrs_string(y, (uint32_t)i, &ly);
        if (lx != ly || memcmp(a, b, lx))
            return 0;
    }
    for (size_t i = 0; i < x->n; i++) {
        const struct trove_attr *a = &x->rows[i], *b = &y->rows[i];
        if (a->event != b->event || a->key != b->key || a->type != b->type)
            return 0;
        if (a->type == TROVE_ATTR_INT && a->v.i != b->v.i)
            return 0;
        if (a->type == TROVE_ATTR_DOUBLE && memcmp(&a->v.d, &b->v.d, 8))
            return 0;
        if (a->type == TROVE_ATTR_BOOL && a->v.b != b->v.b)
            return 0;
        if ((a->type == TROVE_ATTR_STRING || a->type == TROVE_ATTR_JSON) && a->v.s != b->v.s)
            return 0;
    }
    return 1;
}

static void test_round_trip(void)
{
    struct trove_attrs a, back = {0}, back2 = {0};
    struct trove_bytes e1 = {0}, e2 = {0}, e19 = {0};
    uint64_t nan_bits = 0x7ff8000000012345ull;
    double nan_d, neg0 = -0.0;

    memcpy(&nan_d, &nan_bits, 8);
    small(&a);
    add(&a, 7, "min", TROVE_ATTR_INT, INT64_MIN, 0, NULL);
    add(&a, 9, "max", TROVE_ATTR_INT, INT64_MAX, 0, NULL);
    add(&a, 9, "nan", TROVE_ATTR_DOUBLE, 0, nan_d, NULL);
    add(&a, (uint64_t)1 << 40, "neg0", TROVE_ATTR_DOUBLE, 0, neg0, NULL);
    add(&a, UINT64_MAX, "empty", TROVE_ATTR_STRING, 0, 0, "");
    add(&a, UINT64_MAX, "no", TROVE_ATTR_BOOL, 0, 0, NULL);
    CHECK_EQ_INT(trove_attrs_encode(&a, 0, &e1), TROVE_OK);
    CHECK_EQ_INT(trove_attrs_encode(&a, 0, &e2), TROVE_OK);
    CHECK(e1.len == e2.len && !memcmp(e1.ptr, e2.ptr, e1.len)); /* the same bytes */
    CHECK_EQ_INT(trove_attrs_encode(&a, 19, &e19), TROVE_OK);
    CHECK_EQ_INT(trove_attrs_decode(e1.ptr, e1.len, &back, NULL), TROVE_OK);
    CHECK(same(&a, &back));
    CHECK_EQ_INT(trove_attrs_decode(e19.ptr, e19.len, &back2, NULL), TROVE_OK);
    CHECK(same(&a, &back2));
    CHECK(back.rows[8].type == TROVE_ATTR_DOUBLE && !memcmp(&back.rows[8].v.d, &nan_d, 8));
    CHECK(signbit(back.rows[9].v.d) && back.rows[9].v.d == 0);
    /* interning: a string's id is its first one; the strings come back in id order */
    CHECK_EQ_INT(sid(&a, "url"), 0);
    CHECK_EQ_INT(a.rows[5].v.s, a.rows[0].v.s);
    {
        size_t n;
        const char *s = trove_attrs_string(&back, back.rows[4].v.s, &n);
        CHECK(s && n == 11 && !strcmp(s, "{\"k\":[1,2]}"));
        CHECK(trove_attrs_string(&back, (uint32_t)back.nstr, NULL) == NULL);
    }
    /* an empty table */
    {
        struct trove_attrs z = {0}, zb = {0};
        struct trove_bytes ze = {0};
        CHECK_EQ_INT(trove_attrs_encode(&z, 1, &ze), TROVE_OK);
        CHECK_EQ_INT(trove_attrs_decode(ze.ptr, ze.len, &zb, NULL), TROVE_OK);
        CHECK(zb.n == 0 && zb.nstr == 0);
        trove_bytes_free(&ze);
    }
    trove_attrs_free(&a);
    trove_attrs_free(&back);
    trove_attrs_free(&back2);
    trove_bytes_free(&e1);
    trove_bytes_free(&e2);
    trove_bytes_free(&e19);
}

static void test_golden(void)
{
    struct trove_attrs a, back = {0};
    struct trove_bytes g = {0};

    small(&a);
    CHECK_EQ_INT(trove_attrs_encode(&a, 1, &g), TROVE_OK);
    test_check_vector("attrs_small.bin", g.ptr, g.len);
    corpus_write("golden.bin", g.ptr, g.len);
    CHECK(g.len > FIXED + 8 && !memcmp(g.ptr, "TROVATR1", 8));
    CHECK_EQ_INT(trove__get_le32(g.ptr + 8), 1);
    CHECK_EQ_INT(trove__get_le32(g.ptr + 12), 0);
    CHECK_EQ_INT(trove__get_le64(g.ptr + 16), 6);
    CHECK_EQ_INT(trove__get_le64(g.ptr + 24), 7); /* url, https://..., size, ratio, ok, data, {...} */
    /* strings: 1+3, 1+20, 1+4, 1+5, 1+2, 1+4, 1+11 = 56; events 6, keys 6, types 6; no key
     * of differences 1; values: string id 1, zigzag(-5) 1, a double 8, a bool 1, JSON id 1,
     * string id 1 = 13 */
    CHECK_EQ_INT(trove__get_le64(g.ptr + 32), 56 + 6 + 6 + 6 + 1 + 13);
    CHECK_EQ_INT(trove__get_le64(g.ptr + 40), g.len - FIXED - 8);
    CHECK(trove__get_le64(g.ptr + g.len - 8) == trove_checksum64(g.ptr, g.len - 8));
    CHECK_EQ_INT(trove_attrs_decode(g.ptr, g.len, &back, NULL), TROVE_OK);
    CHECK(same(&a, &back));
    trove_attrs_free(&a);
    trove_attrs_free(&back);
    trove_bytes_free(&g);
}

static void test_table(void)
{
    struct trove_attrs a = {0};
    struct trove_attr r;
    struct trove_bytes out = {0};
    uint32_t id;
    char *big = calloc(TROVE_ATTRS_MAX_STRING + 1, 1);

    CHECK(big != NULL);
    CHECK_EQ_INT(trove_attrs_intern(&a, big, TROVE_ATTRS_MAX_STRING + 1, &id), TROVE_ERR_LIMIT);
    CHECK_EQ_INT(trove_attrs_intern(&a, big, TROVE_ATTRS_MAX_STRING, &id), TROVE_OK);
    CHECK_EQ_INT(trove_attrs_intern(&a, NULL, 3, &id), TROVE_ERR_INVALID);
    free(big);
    /* many strings: ids in order, each found again */
    for (int i = 0; i < 5000; i++) {
        char s[16];
        snprintf(s, sizeof s, "k%d", i);
        CHECK_EQ_INT(sid(&a, s), (uint32_t)i + 1);
    }
    CHECK_EQ_INT(sid(&a, "k4321"), 4322);
    memset(&r, 0, sizeof r);
    r.key = (uint32_t)a.nstr; /* past the strings */
    r.type = TROVE_ATTR_INT;
    CHECK_EQ_INT(trove_attrs_add(&a, &r), TROVE_ERR_INVALID);
    r.key = 1;
    r.type = 0;
    CHECK_EQ_INT(trove_attrs_add(&a, &r), TROVE_ERR_INVALID);
    r.type = 6;
    CHECK_EQ_INT(trove_attrs_add(&a, &r), TROVE_ERR_INVALID);
    r.type = TROVE_ATTR_BOOL;
    r.v.b = 2;
    CHECK_EQ_INT(trove_attrs_add(&a, &r), TROVE_ERR_INVALID);
    r.type = TROVE_ATTR_STRING;
    r.v.s = (uint32_t)a.nstr;
    CHECK_EQ_INT(trove_attrs_add(&a, &r), TROVE_ERR_INVALID);
    CHECK(a.n == 0);
    /* rows that go back in event cannot be encoded; out stays as it was */
    r.type = TROVE_ATTR_INT;
    r.event = 5;
    CHECK_EQ_INT(trove_attrs_add(&a, &r), TROVE_OK);
    r.event = 4;
    CHECK_EQ_INT(trove_attrs_add(&a, &r), TROVE_OK);
    CHECK_EQ_INT(trove_bytes_append(&out, "x", 1), TROVE_OK);
    CHECK_EQ_INT(trove_attrs_encode(&a, 1, &out), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_attrs_encode(&a, 20, &out), TROVE_ERR_INVALID);
    CHECK(out.len == 1);
    trove_attrs_free(&a);
    trove_bytes_free(&out);
}

static int decode(const uint8_t *buf, size_t len, void *out, struct trove_diag *diag)
{
    return trove_attrs_decode(buf, len, out, diag);
}

static void expect_bad(const uint8_t *buf, size_t len, int want, uint64_t off, const char *needle,
                       const char *what)
{
    test_expect_decode_error(decode, sizeof(struct trove_attrs), buf, len, want, off, needle, what);
}

/* An object around a raw stream (compressed here, any bytes), claiming n rows, ns strings. */
static size_t object(uint8_t *out, size_t cap, uint64_t n, uint64_t ns, const void *raw, size_t r)
{
    size_t p = ZSTD_compress(out + FIXED, cap - FIXED - 8, raw, r, 1);
    CHECK(!ZSTD_isError(p));
    memcpy(out, "TROVATR1", 8);
    trove__put_le32(out + 8, 1);
    trove__put_le32(out + 12, 0);
    trove__put_le64(out + 16, n);
    trove__put_le64(out + 24, ns);
    trove__put_le64(out + 32, r);
    trove__put_le64(out + 40, p);
    seal(out, FIXED + p + 8);
    return FIXED + p + 8;
}

static void test_bad(void)
{
    static uint8_t work[1024];
    struct trove_attrs a;
    struct trove_bytes g = {0};
    size_t n;

    small(&a);
    CHECK_EQ_INT(trove_attrs_encode(&a, 1, &g), TROVE_OK);
    n = g.len;
    CHECK(n < sizeof work);
    for (size_t len = 0; len < n; len++)
        expect_bad(g.ptr, len, len < 8 || len < FIXED + 8 ? TROVE_ERR_TRUNCATED : TROVE_ERR_CHECKSUM,
                   UINT64_MAX, NULL, "prefix");
    corpus_write("short.bin", g.ptr, 30);
    for (size_t i = 12; i < n; i++) {
        memcpy(work, g.ptr, n);
        work[i] ^= 0x10;
        expect_bad(work, n, TROVE_ERR_CHECKSUM, n - 8, "checksum", "flipped bit");
    }
    memcpy(work, g.ptr, n);
    work[0] = 'X';
    expect_bad(work, n, TROVE_ERR_MAGIC, 0, "TROVATR1", "magic");
    memcpy(work, g.ptr, n);
    trove__put_le32(work + 8, 2);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "newer trove", "version 2");
    corpus_write("version-2.bin", work, n);
    /* header fields broken, the checksum made right */
    {
        static const struct {
            size_t at;
            int w; /* 4 or 8 bytes */
            uint64_t v;
            int rc;
            uint64_t off;
            const char *needle, *name;
        } cases[] = {
            {12, 4, 1, TROVE_ERR_CORRUPT, 12, "flags", "flags"},
            {16, 8, ((uint64_t)1 << 28) + 1, TROVE_ERR_LIMIT, 16, "rows", "rows over the limit"},
            {24, 8, ((uint64_t)1 << 24) + 1, TROVE_ERR_LIMIT, 24, "strings", "strings over the limit"},
            {32, 8, ((uint64_t)1 << 31) + 1, TROVE_ERR_LIMIT, 32, "2 GiB", "stream over 2 GiB"},
            {16, 8, 100, TROVE_ERR_CORRUPT, 32, "cannot hold", "rows past the stream"},
            {40, 8, 5, TROVE_ERR_CORRUPT, 40, "frame", "packed_len not the object's"},
            {32, 8, 80, TROVE_ERR_CORRUPT, 32, "holds", "raw_len short of the frame"},
        };
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            char name[64];
            memcpy(work, g.ptr, n);
            if (cases[k].w == 4)
                trove__put_le32(work + cases[k].at, (uint32_t)cases[k].v);
            else
                trove__put_le64(work + cases[k].at, cases[k].v);
            seal(work, n);
            expect_bad(work, n, cases[k].rc, cases[k].off, cases[k].needle, cases[k].name);
            snprintf(name, sizeof name, "header-%zu.bin", k);
            corpus_write(name, work, n);
        }
    }
    /* a frame that is not zstd */
    memcpy(work, g.ptr, n);
    memset(work + FIXED, 0xAB, 4);
    seal(work, n);
    expect_bad(work, n, TROVE_ERR_INFLATE, FIXED, "zstd", "not zstd");
    /* streams past the frame: each a well-formed object around bad rows */
    {
        static const struct {
            const char *raw;
            size_t r;
            uint64_t rows, strings;
            int rc;
            const char *needle, *name;
        } s[] = {
            /* 1 string "k"; a row: event 0, key 1 (past), INT; no keys of differences, 0 */
            {"\x01k\x00\x01\x01\x00\x00", 7, 1, 1, TROVE_ERR_CORRUPT, "key past", "key-past.bin"},
            {"\x01k\x00\x00\x09\x00\x00", 7, 1, 1, TROVE_ERR_CORRUPT, "type", "type-9.bin"},
            {"\x01k\x00\x00\x31\x00\x00", 7, 1, 1, TROVE_ERR_CORRUPT, "scope", "scope-3.bin"},
            {"\x01k\x00\x00\x04\x00\x02", 7, 1, 1, TROVE_ERR_CORRUPT, "bool", "bool-2.bin"},
            {"\x01k\x00\x00\x03\x00\x05", 7, 1, 1, TROVE_ERR_CORRUPT, "string value past", "value-past.bin"},
            {"\x01k\x00\x00\x01\x00\x00\x00", 8, 1, 1, TROVE_ERR_CORRUPT, "after the last", "left-over.bin"},
            {"\x01k\x00\x00\x01\x00\x80", 7, 1, 1, TROVE_ERR_TRUNCATED, "cut", "cut-varint.bin"},
            {"\x09k\x00\x00\x01\x00\x00", 7, 1, 1, TROVE_ERR_CORRUPT, "longer than the stream", "long-string.bin"},
            {"\x01k\x01k\x00\x00\x01\x00\x00", 9, 1, 2, TROVE_ERR_CORRUPT, "twice", "twice.bin"},
            {"\x01k\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x01\x00\x00\x01\x01\x00\x00\x00", 20, 2, 1,
             TROVE_ERR_CORRUPT, "2^64", "event-overflow.bin"},
            {"\x01k\x00\x00\x02\x00\x00\x00\x00", 9, 1, 1, TROVE_ERR_TRUNCATED, "double", "cut-double.bin"},
            /* the keys of differences: more than the strings, past them, not rising */
            {"\x01k\x00\x00\x01\x02\x00\x00\x00", 9, 1, 1, TROVE_ERR_CORRUPT, "more keys", "delta-count.bin"},
            {"\x01k\x00\x00\x01\x01\x01\x00", 8, 1, 1, TROVE_ERR_CORRUPT, "not rising", "delta-past.bin"},
            {"\x01k\x01j\x00\x00\x01\x02\x01\x00\x00", 11, 1, 2, TROVE_ERR_CORRUPT, "not rising", "delta-order.bin"},
        };
        for (size_t k = 0; k < sizeof s / sizeof s[0]; k++) {
            size_t len = object(work, sizeof work, s[k].rows, s[k].strings, s[k].raw, s[k].r);
            expect_bad(work, len, s[k].rc, UINT64_MAX, s[k].needle, s[k].name);
            corpus_write(s[k].name, work, len);
        }
    }
    trove_attrs_free(&a);
    trove_bytes_free(&g);
}

/* Every allocation failing in turn: encode leaves out as it was, decode leaves out empty. */
/* The scope rides in the type byte's high bits; trove_attrs_append moves rows between
 * tables, their events shifted, their strings interned again. */
static void test_scope_append(void)
{
    struct trove_attrs a, b, back;
    struct trove_bytes enc = {0};
    struct trove_attr r;

    small(&a);
    a.rows[1].scope = TROVE_ATTR_FIELD;
    a.rows[4].scope = TROVE_ATTR_TRACE;
    CHECK_EQ_INT(trove_attrs_encode(&a, 1, &enc), TROVE_OK);
    memset(&back, 0, sizeof back);
    CHECK_EQ_INT(trove_attrs_decode(enc.ptr, enc.len, &back, NULL), TROVE_OK);
    CHECK(same(&a, &back) && back.rows[1].scope == TROVE_ATTR_FIELD &&
          back.rows[4].scope == TROVE_ATTR_TRACE && back.rows[0].scope == TROVE_ATTR_ARG);
    CHECK(trove_attrs_equal(&a, &back) && !trove_attrs_equal(&a, NULL));
    back.rows[2].v.d = 0.25; /* a value, a scope, a string's bytes: each tells them apart */
    CHECK(!trove_attrs_equal(&a, &back));
    back.rows[2].v.d = 0.5;
    back.rows[1].scope = TROVE_ATTR_ARG;
    CHECK(!trove_attrs_equal(&a, &back));
    back.rows[1].scope = a.rows[1].scope;
    back.bytes[back.off[a.rows[0].v.s]] ^= 1;
    CHECK(!trove_attrs_equal(&a, &back));
    r = a.rows[0];
    r.scope = 3;
    CHECK_EQ_INT(trove_attrs_add(&a, &r), TROVE_ERR_INVALID);
    /* rows 2..6 (events 2, 2, 7, 7) into b, which has a string of its own, shifted by 10 - 2 */
    memset(&b, 0, sizeof b);
    sid(&b, "other");
    CHECK_EQ_INT(trove_attrs_append(&b, &a, 2, 6, 10, 2), TROVE_OK);
    CHECK_EQ_INT(b.n, 4);
    CHECK(b.rows[0].event == 10 && b.rows[3].event == 15 && b.rows[2].scope == TROVE_ATTR_TRACE);
    {
        size_t len;
        const char *k = trove_attrs_string(&b, b.rows[3].key, &len);
        const char *v = trove_attrs_string(&b, b.rows[3].v.s, NULL);
        CHECK(len == 3 && !memcmp(k, "url", 3) && !strcmp(v, "https://example.org/"));
    }
    /* a part of one of its own strings interned as the table grows (the bytes move) */
    {
        struct trove_attrs t;
        uint32_t id0, id1;
        size_t len;
        const char *s0;
        memset(&t, 0, sizeof t);
        CHECK_EQ_INT(trove_attrs_intern(&t, "abcdefghijkl", 12, &id0), TROVE_OK);
        for (int k = 0; k < 40; k++) {
            s0 = trove_attrs_string(&t, id0, &len);
            CHECK_EQ_INT(trove_attrs_intern(&t, s0 + 1 + k % 10, 2, &id1), TROVE_OK);
            CHECK(!memcmp(trove_attrs_string(&t, id1, NULL), "abcdefghijkl" + 1 + k % 10, 2));
            s0 = trove_attrs_string(&t, id0, &len); /* the bytes may have moved */
            CHECK_EQ_INT(trove_attrs_intern(&t, s0, 12 - k % 12, &id1), TROVE_OK);
        }
        trove_attrs_free(&t);
    }
    /* an event under unshift, a range past the rows: refused, b as it was */
    CHECK_EQ_INT(trove_attrs_append(&b, &a, 0, 2, 0, 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_attrs_append(&b, &a, 0, 7, 0, 0), TROVE_ERR_INVALID);
    CHECK_EQ_INT(b.n, 4);
    trove_attrs_free(&a);
    trove_attrs_free(&b);
    trove_attrs_free(&back);
    trove_bytes_free(&enc);
}

/* A key whose ints climb is written as differences (a quarter of its bytes saved), one whose
 * ints jump about is not; both come back exactly, wrapping past int64 included. */
static void test_deltas(void)
{
    struct trove_attrs a, back;
    struct trove_bytes enc = {0};
    uint64_t seed = 5;

    memset(&a, 0, sizeof a);
    for (int i = 0; i < 4000; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        add(&a, (uint64_t)i, "tts", TROVE_ATTR_INT, 1000000000 + i * 37 + (int64_t)(seed >> 60), 0, NULL);
        add(&a, (uint64_t)i, "line", TROVE_ATTR_INT, (int64_t)(seed >> 52), 0, NULL);
    }
    add(&a, 4000, "tts", TROVE_ATTR_INT, INT64_MIN, 0, NULL);
    add(&a, 4001, "tts", TROVE_ATTR_INT, INT64_MAX, 0, NULL);
    add(&a, 4002, "tts", TROVE_ATTR_INT, -1, 0, NULL);
    CHECK_EQ_INT(trove_attrs_encode(&a, 1, &enc), TROVE_OK);
    memset(&back, 0, sizeof back);
    CHECK_EQ_INT(trove_attrs_decode(enc.ptr, enc.len, &back, NULL), TROVE_OK);
    CHECK(same(&a, &back) && trove_attrs_equal(&a, &back));
    /* the stream: event deltas, keys and types a byte each of 8,003 rows, the lines 2 bytes
     * each; the climbing ints a byte each as differences (5 as they are: 16,000 more) */
    CHECK(trove__get_le64(enc.ptr + 32) < 3 * 8003 + 4000 * 2 + 4000 + 128);
    trove_attrs_free(&back);
    /* the same rows as an attrs frame: the wire's decoders (web/wire.js too) take the
     * differences back, the extremes included */
    enc.len = 0;
    CHECK_EQ_INT(trove_attrs_wire_encode(&a, &enc), TROVE_OK);
    test_check_vector("wire_attrs_deltas.bin", enc.ptr, enc.len);
    memset(&back, 0, sizeof back);
    CHECK_EQ_INT(trove_attrs_wire_decode(enc.ptr, enc.len, &back, NULL), TROVE_OK);
    CHECK(trove_attrs_equal(&a, &back));
    trove_attrs_free(&back);
    trove_bytes_free(&enc);
    trove_attrs_free(&a);
}

static void test_oom(void)
{
    struct trove_attrs a;
    struct trove_bytes g = {0};
    int done = 0;

    small(&a);
    CHECK_EQ_INT(trove_attrs_encode(&a, 1, &g), TROVE_OK);
    for (uint64_t k = 1; k < 200 && !done; k++) {
        struct trove_attrs back = {0}, t = {0};
        struct trove_bytes out = {0};
        uint32_t id;
        int r1, r2, r3;
        CHECK_EQ_INT(trove_bytes_append(&out, "ab", 2), TROVE_OK);
        trove_testing_alloc_fail_at(k, 0);
        r1 = trove_attrs_encode(&a, 1, &out);
        r2 = trove_attrs_decode(g.ptr, g.len, &back, NULL);
        r3 = trove_attrs_intern(&t, "key", 3, &id);
        done = trove_testing_alloc_failures() == 0;
        trove_testing_alloc_fail_at(0, 0);
        CHECK(r1 == TROVE_OK || (r1 == TROVE_ERR_NOMEM && out.len == 2));
        CHECK(r2 == TROVE_OK ? same(&a, &back) : (r2 == TROVE_ERR_NOMEM && back.n == 0 && !back.rows && !back.bytes));
        CHECK(r3 == TROVE_OK ? t.nstr == 1 : (r3 == TROVE_ERR_NOMEM && t.nstr == 0));
        if (r3 == TROVE_ERR_NOMEM) /* the table as it was: the next intern works */
            CHECK(trove_attrs_intern(&t, "key", 3, &id) == TROVE_OK && id == 0);
        trove_attrs_free(&back);
        trove_attrs_free(&t);
        trove_bytes_free(&out);
    }
    CHECK(done);
    trove_attrs_free(&a);
    trove_bytes_free(&g);
}

static int wire_decode(const uint8_t *buf, size_t len, void *out, struct trove_diag *diag)
{
    return trove_attrs_wire_decode(buf, len, out, diag);
}

static void expect_bad_frame(const uint8_t *buf, size_t len, int want, uint64_t off,
                             const char *needle, const char *what)
{
    corpus_write(what, buf, len);
    test_expect_decode_error(wire_decode, sizeof(struct trove_attrs), buf, len, want, off, needle,
                             what);
}

/* The attrs frame of the wire (format 7): the golden vector, its stream the object's, a
 * reader of events passing it by, and bad frames: every prefix, a flipped bit anywhere,
 * each header field, and streams broken past the header's checks. */
static void test_wire_frame(void)
{
    static uint8_t work[512];
    struct trove_attrs a, back = {0}, z = {0};
    struct trove_bytes f = {0}, obj = {0};
    struct trove_wire_decoder *dec = NULL;
    struct trove_wire_frame fr;
    struct trove_event ev[1];
    uint8_t raw[256];
    size_t r;

    small(&a);
    CHECK_EQ_INT(trove_attrs_wire_encode(&a, &f), TROVE_OK);
    test_check_vector("wire_attrs.bin", f.ptr, f.len);
    corpus_write("wire_golden.bin", f.ptr, f.len);
    CHECK(f.len == 16 + 1 + 88); /* the header, the strings' count, the 88-byte stream */
    CHECK(f.ptr[0] == 'T' && f.ptr[1] == 'V' && f.ptr[2] == TROVE_WIRE_ATTRS && f.ptr[3] == 1);
    CHECK_EQ_INT(trove__get_le32(f.ptr + 4), 6);
    CHECK_EQ_INT(trove__get_le32(f.ptr + 8), f.len - 16);
    CHECK_EQ_INT(trove__get_le32(f.ptr + 12), 0);
    CHECK_EQ_INT(f.ptr[16], 7);
    /* the stream is the attributes object's, byte for byte */
    CHECK_EQ_INT(trove_attrs_encode(&a, 1, &obj), TROVE_OK);
    r = ZSTD_decompress(raw, sizeof raw, obj.ptr + FIXED, obj.len - FIXED - 8);
    CHECK(r == 88 && !memcmp(raw, f.ptr + 17, r));
    CHECK_EQ_INT(trove_attrs_wire_decode(f.ptr, f.len, &back, NULL), TROVE_OK);
    CHECK(same(&a, &back));
    trove_attrs_free(&back);
    /* a reader of events passes it by */
    CHECK_EQ_INT(trove_wire_decoder_new(&dec), TROVE_OK);
    CHECK_EQ_INT(trove_wire_decode(dec, f.ptr, f.len, ev, 1, NULL, &fr, NULL), TROVE_OK);
    CHECK(fr.format == TROVE_WIRE_ATTRS && fr.n_events == 0 && fr.frame_len == f.len);
    trove_wire_decoder_free(dec);
    CHECK(!strcmp(trove_wire_format_name(TROVE_WIRE_ATTRS), "attrs"));
    /* an empty table: the header, no strings and no keys of differences */
    {
        struct trove_bytes e = {0};
        CHECK_EQ_INT(trove_attrs_wire_encode(&z, &e), TROVE_OK);
        CHECK(e.len == 18 && e.ptr[16] == 0 && e.ptr[17] == 0); /* no strings, no deltas */
        CHECK_EQ_INT(trove_attrs_wire_decode(e.ptr, e.len, &back, NULL), TROVE_OK);
        CHECK(back.n == 0 && back.nstr == 0);
        trove_attrs_free(&back);
        trove_bytes_free(&e);
    }
    /* rows going back are not encoded */
    {
        struct trove_bytes e = {0};
        struct trove_attrs g;
        small(&g);
        g.rows[5].event = 1;
        CHECK_EQ_INT(trove_attrs_wire_encode(&g, &e), TROVE_ERR_INVALID);
        CHECK(e.len == 0);
        trove_attrs_free(&g);
    }
    /* every prefix */
    for (size_t k = 0; k < f.len; k++)
        expect_bad_frame(f.ptr, k, TROVE_ERR_TRUNCATED, UINT64_MAX, NULL, "wire_prefix.bin");
    /* a flipped bit anywhere: an error, or a table that encodes back to what was read */
    for (size_t k = 0; k < f.len * 8; k++) {
        int rc;
        memcpy(work, f.ptr, f.len);
        work[k / 8] ^= (uint8_t)(1u << (k % 8));
        rc = trove_attrs_wire_decode(work, f.len, &back, NULL);
        if (rc == TROVE_OK) {
            struct trove_bytes e = {0};
            CHECK_EQ_INT(trove_attrs_wire_encode(&back, &e), TROVE_OK);
            trove_bytes_free(&e);
            trove_attrs_free(&back);
        } else {
            CHECK(rc < 0 && back.n == 0 && !back.rows);
        }
    }
    /* the header */
    memcpy(work, f.ptr, f.len);
    trove__put_le32(work + 4, TROVE_WIRE_MAX_ATTRS + 1);
    expect_bad_frame(work, f.len, TROVE_ERR_LIMIT, 4, "rows over", "wire_rows_limit.bin");
    memcpy(work, f.ptr, f.len);
    trove__put_le32(work + 4, 23); /* 1 + 4 x 23 > the 89-byte payload */
    expect_bad_frame(work, f.len, TROVE_ERR_CORRUPT, 8, "payload", "wire_rows_room.bin");
    memcpy(work, f.ptr, f.len);
    trove__put_le32(work + 12, 1);
    expect_bad_frame(work, f.len, TROVE_ERR_CORRUPT, 12, "raw_len", "wire_raw_len.bin");
    memcpy(work, f.ptr, f.len);
    work[2] = TROVE_WIRE_NAMES;
    expect_bad_frame(work, f.len, TROVE_ERR_FORMAT, 2, "not an attrs frame", "wire_format.bin");
    memcpy(work, f.ptr, f.len);
    work[3] = 2;
    expect_bad_frame(work, f.len, TROVE_ERR_VERSION, 3, NULL, "wire_version.bin");
    /* the stream: more strings than it holds, fewer rows than it holds, a byte left over */
    memcpy(work, f.ptr, f.len);
    work[16] = 0x7f;
    expect_bad_frame(work, f.len, TROVE_ERR_CORRUPT, 8, "cannot fit", "wire_strings.bin");
    memcpy(work, f.ptr, f.len);
    trove__put_le32(work + 4, 5);
    expect_bad_frame(work, f.len, TROVE_ERR_CORRUPT, UINT64_MAX, NULL, "wire_rows.bin");
    memcpy(work, f.ptr, f.len);
    work[f.len] = 0;
    trove__put_le32(work + 8, (uint32_t)(f.len - 16 + 1));
    expect_bad_frame(work, f.len + 1, TROVE_ERR_CORRUPT, f.len, "bytes after the last value",
                     "wire_trailing.bin");
    memcpy(work, f.ptr, f.len);
    work[17 + 56 + 6] = 9; /* a key past the strings */
    expect_bad_frame(work, f.len, TROVE_ERR_CORRUPT, 17 + 56 + 6 + 1, "a key past the strings",
                     "wire_key.bin");
    trove_attrs_free(&a);
    trove_bytes_free(&f);
    trove_bytes_free(&obj);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_round_trip);
    RUN(test_golden);
    RUN(test_table);
    RUN(test_bad);
    RUN(test_scope_append);
    RUN(test_deltas);
    RUN(test_oom);
    RUN(test_wire_frame);
    return test_done();
}
