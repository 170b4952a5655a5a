/*
 * pq_encoding_test.h: the decoding harness of the Parquet encoding tests
 * (test_pq_encoding.c, test_pq_encoding_dict.c): every decoder's outputs, n + 1 entries
 * each, filled with a sentinel; a decode of an exact-size heap copy (so ASan sees any
 * overread) that must fail with an error at an offset, outputs untouched, or succeed with
 * the bytes it consumed; every truncation; and the fuzz corpus writer.
 */
#ifndef TROVE_PQ_ENCODING_TEST_H
#define TROVE_PQ_ENCODING_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "columnar/pq_encoding.h"
#include "testutil.h"

/* The fuzz target's input: selector u8, parameter u8 (RLE: width; strings: max_len / 16,
 * 255 for no limit), n u16, then the bytes (fuzz/fuzz_pq_encoding.c). */
enum { SEL_RLE = 0, SEL_DELTA32 = 1, SEL_DELTA64 = 2, SEL_STR = 3 };

static inline void corpus_write(const char *name, int sel, unsigned param, size_t n,
                                const uint8_t *buf, size_t len)
{
    uint8_t prefix[4];

    prefix[0] = (uint8_t)sel;
    prefix[1] = (uint8_t)param;
    trove__put_le16(prefix + 2, (uint16_t)n);
    test_corpus_write("TROVE_PQ_ENCODING_CORPUS", name, prefix, sizeof prefix, buf, len);
}

/* ---- decoding harness ------------------------------------------------------------------ */

/* Which decoder and its parameters. */
struct dec {
    int sel;
    unsigned w;       /* RLE */
    size_t n;
    uint32_t max_len; /* strings */
};

/* Every decoder's outputs, n + 1 entries each (the last must stay untouched). */
struct outs {
    uint32_t *u32;
    int64_t *i64;
    uint64_t *start;
    uint32_t *vlen;
    size_t n;
};

#define SENT 0xA5

static inline void outs_init(struct outs *o, size_t n)
{
    o->n = n;
    o->u32 = malloc((n + 1) * sizeof *o->u32);
    o->i64 = malloc((n + 1) * sizeof *o->i64);
    o->start = malloc((n + 1) * sizeof *o->start);
    o->vlen = malloc((n + 1) * sizeof *o->vlen);
    if (!o->u32 || !o->i64 || !o->start || !o->vlen)
        abort();
    memset(o->u32, SENT, (n + 1) * sizeof *o->u32);
    memset(o->i64, SENT, (n + 1) * sizeof *o->i64);
    memset(o->start, SENT, (n + 1) * sizeof *o->start);
    memset(o->vlen, SENT, (n + 1) * sizeof *o->vlen);
}

static inline void outs_free(struct outs *o)
{
    free(o->u32);
    free(o->i64);
    free(o->start);
    free(o->vlen);
}

static inline int all_sent(const void *p, size_t bytes)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < bytes; i++)
        if (b[i] != SENT)
            return 0;
    return 1;
}

/* Entries [from, n] of every output still hold the sentinel. */
static inline int outs_untouched_from(const struct outs *o, size_t from)
{
    size_t k = o->n + 1 - from;
    return all_sent(o->u32 + from, k * sizeof *o->u32) &&
           all_sent(o->i64 + from, k * sizeof *o->i64) &&
           all_sent(o->start + from, k * sizeof *o->start) &&
           all_sent(o->vlen + from, k * sizeof *o->vlen);
}

static inline int run_dec(const struct dec *d, const uint8_t *buf, size_t len, struct outs *o,
                          size_t *used, struct trove_diag *diag)
{
    switch (d->sel) {
    case SEL_RLE:
        return trove__pq_rle_decode(buf, len, d->w, o->u32, d->n, used, diag);
    case SEL_DELTA32:
    case SEL_DELTA64:
        return trove__pq_delta_decode(buf, len, d->n, d->sel == SEL_DELTA32, o->i64, used,
                                      diag);
    default:
        return trove__pq_plain_decode_strings(buf, len, d->n, d->max_len, o->start, o->vlen,
                                              used, diag);
    }
}

static inline uint8_t *heap_copy(const uint8_t *buf, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        abort();
    if (len)
        memcpy(copy, buf, len);
    return copy;
}

/* Decode an exact-size heap copy (so ASan sees any overread) and require want at want_off
 * (UINT64_MAX: any), a message with needle (NULL: any), untouched outputs and *used, and
 * the same answer with a NULL diag. */
static inline void expect_err(const struct dec *d, const uint8_t *buf, size_t len, int want,
                              uint64_t want_off, const char *needle, const char *what)
{
    uint8_t *copy = heap_copy(buf, len);
    struct trove_diag diag = {0};
    struct outs o;
    size_t used = 777;
    int rc;

    outs_init(&o, d->n);
    rc = run_dec(d, copy, len, &o, &used, &diag);
    if (rc != want || (want_off != UINT64_MAX && diag.offset != want_off))
        fprintf(stderr, "%s: got %d at %llu (%s), want %d at %llu\n", what, rc,
                (unsigned long long)diag.offset, diag.msg, want, (unsigned long long)want_off);
    CHECK_EQ_INT(rc, want);
    CHECK_EQ_INT(diag.code, want);
    if (want_off != UINT64_MAX)
        CHECK_EQ_INT(diag.offset, want_off);
    CHECK(diag.msg[0] != 0);
    CHECK(strlen(diag.msg) < sizeof diag.msg - 1);
    if (needle && !strstr(diag.msg, needle)) {
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, diag.msg, needle);
        CHECK(0);
    }
    CHECK(outs_untouched_from(&o, 0));
    CHECK_EQ_INT(used, 777);
    CHECK_EQ_INT(run_dec(d, copy, len, &o, NULL, NULL), want);
    CHECK(outs_untouched_from(&o, 0));
    outs_free(&o);
    free(copy);
}

/* Decode an exact-size heap copy and require success with want_used bytes consumed
 * (SIZE_MAX: any); the outputs land in *o (outs_free it), entry n untouched. */
static inline int expect_ok(const struct dec *d, const uint8_t *buf, size_t len, size_t want_used,
                            struct outs *o, const char *what)
{
    uint8_t *copy = heap_copy(buf, len);
    struct trove_diag diag = {0};
    size_t used = 777;
    int rc;

    outs_init(o, d->n);
    rc = run_dec(d, copy, len, o, &used, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: %d (%s) at %llu\n", what, rc, diag.msg,
                (unsigned long long)diag.offset);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc == TROVE_OK && want_used != SIZE_MAX) {
        if (used != want_used)
            fprintf(stderr, "%s: used %zu, want %zu\n", what, used, want_used);
        CHECK_EQ_INT(used, want_used);
    }
    CHECK(outs_untouched_from(o, d->n));
    free(copy);
    return rc;
}

/* Every proper prefix of buf[0..len) is TRUNCATED at its own length. */
static inline void expect_truncations(const struct dec *d, const uint8_t *buf, size_t len,
                                      const char *what)
{
    char name[128];
    for (size_t k = 0; k < len; k++) {
        snprintf(name, sizeof name, "%s cut to %zu", what, k);
        expect_err(d, buf, k, TROVE_ERR_TRUNCATED, k, "cut short", name);
    }
}

static inline void check_bytes(const struct trove_bytes *b, const uint8_t *want, size_t n,
                               const char *what)
{
    int same = b->len == n && (n == 0 || memcmp(b->ptr, want, n) == 0);
    if (!same) {
        fprintf(stderr, "%s: got", what);
        for (size_t i = 0; i < b->len; i++)
            fprintf(stderr, " %02x", b->ptr[i]);
        fprintf(stderr, "\n");
    }
    CHECK(same);
}

#endif
