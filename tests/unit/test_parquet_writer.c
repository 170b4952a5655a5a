/*
 * test_parquet_writer.c: trove's Parquet writer (include/trove/parquet.h), read back by its
 * reader — round trips of every column kind x encoding x codec over several row groups and
 * pages (0, 1 and many rows, one-value dictionaries, dictionary fallback); row groups added
 * whole and read by cursor; the footer's statistics, encodings and column orders; the
 * writer's argument checks; and a file sent to a sink a row group at a time, which is the
 * file made in memory, with the sink's errors stopping it.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "columnar/pq_encoding.h"
#include "columnar/pq_meta.h"
#include "columnar/thrift.h"
#include "common/endian.h"
#include "parquet_test.h"
#include "testutil.h"
#include "trove/parquet.h"
#include "trove/testing.h"

struct kind {
    const char *name;
    int type, bits, is_unsigned;
};

static const struct kind kinds[] = {
    {"i32", TROVE_PQ_INT32, 32, 0}, {"u32", TROVE_PQ_INT32, 32, 1},
    {"i8", TROVE_PQ_INT32, 8, 0},   {"u8", TROVE_PQ_INT32, 8, 1},
    {"i64", TROVE_PQ_INT64, 64, 0}, {"u64", TROVE_PQ_INT64, 64, 1},
    {"s", TROVE_PQ_STRING, 0, 0},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

/* Values for kind k row r; distinct: how many distinct values (0: random). */
static int64_t int_value(const struct kind *k, uint64_t *rs, size_t distinct, size_t r)
{
    uint64_t x = distinct ? (r * 2654435761u) % distinct * 0x9E3779B97F4A7C15ull : test_rand(rs);
    if (k->bits == 8)
        return k->is_unsigned ? (int64_t)(x & 0xFF) : (int64_t)(int8_t)x;
    if (k->bits == 32)
        return (int64_t)(int32_t)x;
    return (int64_t)x;
}

struct table {
    size_t n;
    int64_t *iv[NKINDS];
    int32_t *i32[NKINDS];
    char **str;
    uint32_t *len;
};

static void table_make(struct table *t, size_t n, size_t distinct, uint64_t seed)
{
    uint64_t rs = seed;
    t->n = n;
    for (size_t k = 0; k < NKINDS; k++) {
        t->iv[k] = malloc((n ? n : 1) * sizeof(int64_t));
        t->i32[k] = malloc((n ? n : 1) * sizeof(int32_t));
        for (size_t r = 0; r < n; r++) {
            t->iv[k][r] = kinds[k].type == TROVE_PQ_STRING ? 0 : int_value(&kinds[k], &rs, distinct, r);
            t->i32[k][r] = (int32_t)t->iv[k][r];
        }
    }
    t->str = malloc((n ? n : 1) * sizeof *t->str);
    t->len = malloc((n ? n : 1) * sizeof *t->len);
    for (size_t r = 0; r < n; r++) {
        uint64_t x = distinct ? (r * 7919) % distinct : test_rand(&rs);
        size_t len = (size_t)(x % 23); /* includes empty strings */
        t->str[r] = malloc(len + 1);
        for (size_t b = 0; b < len; b++)
            t->str[r][b] = (char)('a' + (x >> (b % 16)) % 26);
        t->len[r] = (uint32_t)len;
    }
}

static void table_free(struct table *t)
{
    for (size_t k = 0; k < NKINDS; k++) {
        free(t->iv[k]);
        free(t->i32[k]);
    }
    for (size_t r = 0; r < t->n; r++)
        free(t->str[r]);
    free(t->str);
    free(t->len);
}

/* How write_table adds rows: 0 in uneven batches through trove_pq_writer_add, 1 all at once
 * through trove_pq_writer_add_groups, 2 a batch through _add and the rest through
 * _add_groups, 3 through _add_groups in batches of exactly the row group size. */
static int add_mode;

/* With sink_to set, write_table sends the file to it (trove_pq_writer_set_sink) and out
 * gets nothing. */
static const struct trove_sink *sink_to;

/* Write t with every kind at encoding enc (strings: PLAIN for DELTA). */
static int write_table(const struct table *t, int enc, int codec, uint64_t rg_rows,
                       size_t page_bytes, struct trove_bytes *out)
{
    struct trove_pq_column_def defs[NKINDS];
    struct trove_pq_column_data data[NKINDS];
    struct trove_pq_writer *w = NULL;
    int rc;
    memset(data, 0, sizeof data);
    for (size_t k = 0; k < NKINDS; k++) {
        defs[k].name = kinds[k].name;
        defs[k].type = kinds[k].type;
        defs[k].bits = kinds[k].bits;
        defs[k].is_unsigned = kinds[k].is_unsigned;
        defs[k].encoding = (kinds[k].type == TROVE_PQ_STRING && enc == TROVE_PQ_ENC_DELTA)
                               ? TROVE_PQ_ENC_PLAIN : enc;
        if (kinds[k].type == TROVE_PQ_INT32)
            data[k].i32 = t->i32[k];
        else if (kinds[k].type == TROVE_PQ_INT64)
            data[k].i64 = t->iv[k];
        else {
            data[k].str = (const char *const *)t->str;
            data[k].str_len = t->len;
        }
    }
    if ((rc = trove_pq_writer_new(defs, NKINDS, codec, rg_rows, &w)) != TROVE_OK)
        return rc;
    if (page_bytes)
        trove_pq_writer_set_page_bytes(w, page_bytes);
    if (sink_to && (rc = trove_pq_writer_set_sink(w, sink_to)) != TROVE_OK) {
        trove_pq_writer_free(w);
        return rc;
    }
    /* Add in uneven batches. */
    for (size_t at = 0; at < t->n && rc == TROVE_OK;) {
        size_t k = add_mode == 1 ? t->n : add_mode == 2 && at ? t->n - at
                 : add_mode == 3 ? (t->n - at < rg_rows ? t->n - at : (size_t)rg_rows)
                 : t->n - at < 77 ? t->n - at : 77;
        struct trove_pq_column_data d[NKINDS];
        for (size_t c = 0; c < NKINDS; c++) {
            d[c] = data[c];
            if (d[c].i32)
                d[c].i32 += at;
            if (d[c].i64)
                d[c].i64 += at;
            if (d[c].str) {
                d[c].str += at;
                d[c].str_len += at;
            }
        }
        rc = add_mode == 0 || (add_mode == 2 && at == 0) ? trove_pq_writer_add(w, d, k)
                                                          : trove_pq_writer_add_groups(w, d, k);
        at += k;
    }
    if (rc == TROVE_OK)
        rc = trove_pq_writer_finish(w, sink_to ? NULL : out);
    trove_pq_writer_free(w);
    return rc;
}

/* Read every column of buf and compare with t. Returns the number of mismatches. */
static int check_table(const struct table *t, const uint8_t *buf, size_t len, int enc, int codec)
{
    struct trove_pq_file *f = NULL;
    struct trove_diag diag = {0};
    int bad = 0, rc;
    int64_t *v = malloc((t->n ? t->n : 1) * sizeof *v);

    rc = trove_pq_open(buf, len, &f, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "open: %s\n", diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK) {
        free(v);
        return 1;
    }
    CHECK_EQ_INT(trove_pq_rows(f), t->n);
    CHECK_EQ_INT(trove_pq_columns(f), NKINDS);
    if (t->n)
        CHECK_EQ_INT(trove_pq_codec(f), codec);
    for (size_t k = 0; k < NKINDS; k++) {
        CHECK(strcmp(trove_pq_column_name(f, k), kinds[k].name) == 0);
        CHECK_EQ_INT(trove_pq_find(f, kinds[k].name), (int)k);
        CHECK_EQ_INT(trove_pq_column_type(f, k), kinds[k].type);
        CHECK_EQ_INT(trove_pq_column_unsigned(f, k), kinds[k].is_unsigned);
        CHECK_EQ_INT(trove_pq_column_bits(f, k), kinds[k].bits);
        if (t->n && enc >= 0) {
            int want = kinds[k].type == TROVE_PQ_STRING && enc == TROVE_PQ_ENC_DELTA
                           ? TROVE_PQ_ENC_PLAIN : enc, got = trove_pq_column_encoding(f, k);
            /* under a codec a DELTA integer column keeps the smaller of DELTA and a
             * dictionary (test_delta_or_dict) */
            if (want == TROVE_PQ_ENC_DELTA && codec != TROVE_PQ_CODEC_NONE)
                CHECK(got == TROVE_PQ_ENC_DELTA || got == TROVE_PQ_ENC_DICT);
            else
                CHECK_EQ_INT(got, want);
        }
        if (kinds[k].type == TROVE_PQ_STRING) {
            struct trove_pq_strings s = {0};
            rc = trove_pq_read_strings(f, k, &s, &diag);
            if (rc != TROVE_OK)
                fprintf(stderr, "read %s: %s\n", kinds[k].name, diag.msg);
            CHECK_EQ_INT(rc, TROVE_OK);
            if (rc == TROVE_OK) {
                CHECK_EQ_INT(s.n, t->n);
                for (size_t r = 0; r < t->n; r++)
                    if (s.off[r + 1] - s.off[r] != t->len[r] ||
                        memcmp(s.bytes + s.off[r], t->str[r], t->len[r]) != 0)
                        bad++;
            }
            trove_pq_strings_free(&s);
            CHECK_EQ_INT(trove_pq_read_int(f, k, v, NULL), TROVE_ERR_INVALID);
        } else {
            rc = trove_pq_read_int(f, k, v, &diag);
            if (rc != TROVE_OK)
                fprintf(stderr, "read %s: %s\n", kinds[k].name, diag.msg);
            CHECK_EQ_INT(rc, TROVE_OK);
            for (size_t r = 0; rc == TROVE_OK && r < t->n; r++) {
                int64_t want = t->iv[k][r];
                if (kinds[k].type == TROVE_PQ_INT32 && kinds[k].is_unsigned)
                    want = (int64_t)(uint32_t)want;
                if (v[r] != want)
                    bad++;
            }
        }
    }
    CHECK_EQ_INT(bad, 0);
    trove_pq_close(f);
    free(v);
    return bad;
}

static void test_round_trips(void)
{
    static const size_t sizes[] = {0, 1, 1000};
    static const size_t distincts[] = {0, 1, 5};
    for (size_t si = 0; si < 3; si++)
        for (size_t di = 0; di < 3; di++)
            for (int enc = 0; enc < 3; enc++)
                for (int codec = 0; codec < 3; codec++) {
                    struct table t;
                    struct trove_bytes b = {0};
                    table_make(&t, sizes[si], distincts[di], 1 + si * 100 + di);
                    CHECK_EQ_INT(write_table(&t, enc, codec, 300, 256, &b), TROVE_OK);
                    if (check_table(&t, b.ptr, b.len, enc, codec))
                        fprintf(stderr, "round trip n=%zu distinct=%zu enc=%d codec=%d\n",
                                sizes[si], distincts[di], enc, codec);
                    /* Deterministic: the same input gives the same bytes. */
                    {
                        struct trove_bytes b2 = {0};
                        CHECK_EQ_INT(write_table(&t, enc, codec, 300, 256, &b2), TROVE_OK);
                        CHECK(b2.len == b.len && memcmp(b.ptr, b2.ptr, b.len) == 0);
                        trove_bytes_free(&b2);
                    }
                    trove_bytes_free(&b);
                    table_free(&t);
                }
    /* Default page size and row group (one row group, one page per column). */
    {
        struct table t;
        struct trove_bytes b = {0};
        table_make(&t, 5000, 0, 77);
        CHECK_EQ_INT(write_table(&t, TROVE_PQ_ENC_DICT, TROVE_PQ_CODEC_ZSTD, 0, 0, &b), TROVE_OK);
        check_table(&t, b.ptr, b.len, -1, TROVE_PQ_CODEC_ZSTD);
        trove_bytes_free(&b);
        table_free(&t);
    }
}

/* trove_pq_writer_add_groups makes the same file as batched adds; the cursor reads what
 * trove_pq_read_int does. */
static void test_add_groups_cursor(void)
{
    static const size_t sizes[] = {0, 1, 299, 300, 1000};
    for (size_t si = 0; si < 5; si++)
        for (int enc = 0; enc < 3; enc++) {
            struct table t;
            struct trove_bytes b = {0}, b2 = {0}, b3 = {0};
            struct trove_pq_file *f = NULL;
            table_make(&t, sizes[si], si % 2 ? 5 : 0, 11 + si);
            add_mode = 0;
            CHECK_EQ_INT(write_table(&t, enc, TROVE_PQ_CODEC_NONE, 300, 256, &b), TROVE_OK);
            add_mode = 1;
            CHECK_EQ_INT(write_table(&t, enc, TROVE_PQ_CODEC_NONE, 300, 256, &b2), TROVE_OK);
            CHECK(b2.len == b.len && memcmp(b.ptr, b2.ptr, b.len) == 0);
            add_mode = 2;
            CHECK_EQ_INT(write_table(&t, enc, TROVE_PQ_CODEC_NONE, 300, 256, &b3), TROVE_OK);
            check_table(&t, b3.ptr, b3.len, enc, TROVE_PQ_CODEC_NONE);
            add_mode = 0;
            CHECK_EQ_INT(trove_pq_open(b.ptr, b.len, &f, NULL), TROVE_OK);
            for (size_t k = 0; f && k < NKINDS; k++) {
                struct trove_pq_cursor *c = NULL;
                int64_t *v = malloc((t.n ? t.n : 1) * sizeof *v);
                size_t at = 0, bad = 0;
                if (kinds[k].type == TROVE_PQ_STRING) {
                    CHECK_EQ_INT(trove_pq_cursor_new(f, k, &c, NULL), TROVE_ERR_INVALID);
                    free(v);
                    continue;
                }
                CHECK_EQ_INT(trove_pq_read_int(f, k, v, NULL), TROVE_OK);
                CHECK_EQ_INT(trove_pq_cursor_new(f, k, &c, NULL), TROVE_OK);
                for (;;) {
                    const int64_t *p;
                    size_t n = 0, take;
                    CHECK_EQ_INT(trove_pq_cursor_peek(c, &p, &n, NULL), TROVE_OK);
                    if (n == 0)
                        break;
                    take = n < 7 ? n : 7; /* take a few at a time, across pages */
                    for (size_t i = 0; i < take && at + i < t.n; i++)
                        bad += p[i] != v[at + i];
                    trove_pq_cursor_advance(c, take);
                    at += take;
                }
                CHECK_EQ_INT(at, t.n);
                CHECK_EQ_INT(bad, 0);
                trove_pq_cursor_free(c);
                free(v);
            }
            trove_pq_close(f);
            trove_bytes_free(&b);
            trove_bytes_free(&b2);
            trove_bytes_free(&b3);
            table_free(&t);
        }
}

/* A sink that keeps what it gets, counts the calls, and fails call fail_at (1-based; 0:
 * never) with -EIO. */
struct test_sink {
    struct trove_bytes got;
    size_t calls, fail_at;
};

static int test_sink_write(void *ctx, const void *p, size_t n)
{
    struct test_sink *s = ctx;
    CHECK(n > 0);
    if (++s->calls == s->fail_at)
        return -5; /* -EIO */
    return trove_bytes_append(&s->got, p, n);
}

/* A file sent to a sink is the file made in memory, whatever the add mode, and the sink gets
 * it a row group at a time: the magic with the first, the footer at finish. Feeding
 * trove_pq_writer_add_groups exactly a row group at a time makes the file one call makes. A
 * sink's error fails the add that wrote, and the writer from then on. */
static void test_sink(void)
{
    static const size_t sizes[] = {0, 1, 299, 300, 301, 1000, 1200};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int enc = 0; enc < 3; enc++)
            for (int codec = TROVE_PQ_CODEC_NONE; codec <= TROVE_PQ_CODEC_GZIP; codec++) {
                struct table t;
                struct trove_bytes mem = {0}, mem0 = {0};
                struct test_sink ts = {{0}, 0, 0};
                struct trove_sink sk = {test_sink_write, &ts};
                size_t groups = (sizes[si] + 299) / 300;
                table_make(&t, sizes[si], si % 2 ? 7 : 0, 40 + si);
                add_mode = 1;
                CHECK_EQ_INT(write_table(&t, enc, codec, 300, 512, &mem), TROVE_OK);
                add_mode = 3;
                sink_to = &sk;
                CHECK_EQ_INT(write_table(&t, enc, codec, 300, 512, NULL), TROVE_OK);
                CHECK(ts.got.len == mem.len && memcmp(ts.got.ptr, mem.ptr, mem.len) == 0);
                CHECK_EQ_INT(ts.calls, groups + 1);
                /* Buffered adds through a sink: the same file as buffered adds in memory. */
                add_mode = 0;
                sink_to = NULL;
                CHECK_EQ_INT(write_table(&t, enc, codec, 300, 512, &mem0), TROVE_OK);
                ts.got.len = 0;
                ts.calls = 0;
                sink_to = &sk;
                CHECK_EQ_INT(write_table(&t, enc, codec, 300, 512, NULL), TROVE_OK);
                CHECK(ts.got.len == mem0.len && memcmp(ts.got.ptr, mem0.ptr, mem0.len) == 0);
                CHECK_EQ_INT(ts.calls, groups + 1);
                sink_to = NULL;
                add_mode = 0;
                trove_bytes_free(&mem);
                trove_bytes_free(&mem0);
                trove_bytes_free(&ts.got);
                table_free(&t);
            }
}

static void test_sink_errors(void)
{
    struct trove_pq_column_def d = {"v", TROVE_PQ_INT64, 64, 0, TROVE_PQ_ENC_PLAIN};
    struct trove_pq_writer *w = NULL;
    struct test_sink ts = {{0}, 0, 2};
    struct trove_sink sk = {test_sink_write, &ts}, none = {NULL, NULL};
    struct trove_bytes out = {0};
    int64_t v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    struct trove_pq_column_data cd = {NULL, v, NULL, NULL};

    /* Set before the first row only, once, with a write function; finish takes out
     * exactly when there is no sink. */
    CHECK_EQ_INT(trove_pq_writer_new(&d, 1, TROVE_PQ_CODEC_NONE, 4, &w), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_set_sink(w, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_pq_writer_set_sink(w, &none), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_pq_writer_finish(w, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_pq_writer_add(w, &cd, 1), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_set_sink(w, &sk), TROVE_ERR_INVALID);
    trove_pq_writer_free(w);
    CHECK_EQ_INT(trove_pq_writer_new(&d, 1, TROVE_PQ_CODEC_NONE, 4, &w), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_set_sink(w, &sk), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_set_sink(w, &sk), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_pq_writer_finish(w, &out), TROVE_ERR_INVALID);
    /* The first row group reaches the sink, the second fails there, and then nothing. */
    CHECK_EQ_INT(trove_pq_writer_add_groups(w, &cd, 4), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_bytes(w), ts.got.len);
    CHECK_EQ_INT(trove_pq_writer_add_groups(w, &cd, 4), -5);
    CHECK_EQ_INT(trove_pq_writer_add_groups(w, &cd, 2), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_pq_writer_finish(w, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(ts.calls, 2);
    trove_pq_writer_free(w);
    /* A failure in the footer's write fails finish. */
    ts.got.len = 0;
    ts.calls = 0;
    ts.fail_at = 1;
    CHECK_EQ_INT(trove_pq_writer_new(&d, 1, TROVE_PQ_CODEC_NONE, 4, &w), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_set_sink(w, &sk), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_finish(w, NULL), -5);
    trove_pq_writer_free(w);
    CHECK_EQ_INT(trove_pq_writer_bytes(NULL), 0);
    trove_bytes_free(&ts.got);
}

static void test_footer(void)
{
    struct table t;
    struct trove_bytes b = {0};
    struct trove__pq_file_meta fm;
    table_make(&t, 1000, 0, 5);
    /* Known extremes in row group 0 (rows 0..299). */
    t.iv[1][10] = t.i32[1][10] = -1;  /* u32: max 0xFFFFFFFF */
    t.iv[1][11] = t.i32[1][11] = 0;   /* u32: min 0 */
    t.iv[5][10] = -1;                 /* u64 max */
    t.iv[5][11] = 0;
    t.iv[4][12] = INT64_MIN;          /* i64 min */
    t.iv[4][13] = INT64_MAX;
    CHECK_EQ_INT(write_table(&t, TROVE_PQ_ENC_DICT, TROVE_PQ_CODEC_NONE, 300, 1024, &b), TROVE_OK);
    CHECK_EQ_INT(footer(b.ptr, b.len, &fm), TROVE_OK);
    CHECK_EQ_INT(fm.version, 1);
    CHECK_EQ_INT(fm.num_rows, 1000);
    CHECK_EQ_INT(fm.nrow_groups, 4);
    CHECK_EQ_INT(fm.nschema, NKINDS + 1);
    CHECK_EQ_INT(fm.ncolumn_orders, NKINDS);
    CHECK_EQ_INT(fm.ntype_orders, NKINDS);
    CHECK(fm.has_created_by && fm.created_by_len > 6 && memcmp(fm.created_by, "trove ", 6) == 0);
    if (fm.nrow_groups == 4 && fm.nschema == NKINDS + 1) {
        const struct trove__pq_column_meta *m;
        uint8_t u32max[4] = {0xFF, 0xFF, 0xFF, 0xFF}, zero[8] = {0};
        CHECK_EQ_INT(fm.schema[2].logical, TROVE_PQL_INTEGER);
        CHECK_EQ_INT(fm.schema[2].int_bits, 32);
        CHECK_EQ_INT(fm.schema[2].int_signed, 0);
        CHECK_EQ_INT(fm.schema[2].converted_type, 13); /* UINT_32 */
        CHECK_EQ_INT(fm.schema[3].converted_type, 15); /* INT_8 */
        CHECK_EQ_INT(fm.schema[7].logical, TROVE_PQL_STRING);
        CHECK_EQ_INT(fm.schema[7].converted_type, TROVE_PQCT_UTF8);
        m = &fm.row_groups[0].columns[1].meta;
        CHECK(m->has_stats && m->stats.min_len == 4 && memcmp(m->stats.min, zero, 4) == 0);
        CHECK(m->stats.max_len == 4 && memcmp(m->stats.max, u32max, 4) == 0);
        CHECK(!m->stats.legacy && m->stats.null_count == 0);
        m = &fm.row_groups[0].columns[5].meta;
        CHECK(m->stats.min_len == 8 && memcmp(m->stats.min, zero, 8) == 0);
        CHECK(m->stats.max_len == 8 && trove__get_le64(m->stats.max) == UINT64_MAX);
        m = &fm.row_groups[0].columns[4].meta;
        CHECK(m->stats.min_len == 8 && (int64_t)trove__get_le64(m->stats.min) == INT64_MIN);
        CHECK((int64_t)trove__get_le64(m->stats.max) == INT64_MAX);
        for (uint32_t g = 0; g < fm.nrow_groups; g++) {
            int64_t sumc = 0;
            CHECK_EQ_INT(fm.row_groups[g].ncolumns, NKINDS);
            for (uint32_t c = 0; c < NKINDS; c++) {
                m = &fm.row_groups[g].columns[c].meta;
                /* Dictionary page first, data pages right after. */
                CHECK(m->dictionary_page_offset > 0 &&
                      m->dictionary_page_offset < m->data_page_offset);
                CHECK_EQ_INT(m->nencodings, 2);
                CHECK_EQ_INT(m->encodings[0], TROVE_PQE_PLAIN);
                CHECK_EQ_INT(m->encodings[1], TROVE_PQE_RLE_DICTIONARY);
                CHECK_EQ_INT(m->num_values, fm.row_groups[g].num_rows);
                CHECK_EQ_INT(m->total_compressed_size, m->total_uncompressed_size);
                sumc += m->total_compressed_size;
                if (c + 1 < NKINDS)
                    CHECK_EQ_INT(m->dictionary_page_offset + m->total_compressed_size,
                                 fm.row_groups[g].columns[c + 1].meta.dictionary_page_offset);
            }
            CHECK_EQ_INT(fm.row_groups[g].total_compressed_size, sumc);
            CHECK_EQ_INT(fm.row_groups[g].file_offset,
                         fm.row_groups[g].columns[0].meta.dictionary_page_offset);
        }
        /* String statistics: byte-wise min and max. */
        m = &fm.row_groups[0].columns[6].meta;
        CHECK(m->has_stats && m->stats.min_len == 0); /* an empty string is the minimum */
    }
    trove__pq_file_meta_free(&fm);
    trove_bytes_free(&b);
    table_free(&t);
}

/* Many distinct strings: the dictionary is given up for PLAIN, recorded as such. */
static void test_dict_fallback(void)
{
    size_t n = 70000;
    char **s = malloc(n * sizeof *s);
    uint32_t *len = malloc(n * sizeof *len);
    int64_t *iv = malloc(n * sizeof *iv);
    struct trove_pq_column_def defs[2] = {
        {"s", TROVE_PQ_STRING, 0, 0, TROVE_PQ_ENC_DICT}, {"i", TROVE_PQ_INT64, 64, 0, TROVE_PQ_ENC_DICT}};
    struct trove_pq_column_data data[2] = {{0}};
    struct trove_pq_writer *w = NULL;
    struct trove_bytes b = {0};
    struct trove_pq_file *f = NULL;
    struct trove_pq_strings out = {0};
    struct trove__pq_file_meta fm;
    int64_t *back = malloc(n * sizeof *back);
    int bad = 0;

    for (size_t r = 0; r < n; r++) {
        s[r] = malloc(16);
        len[r] = (uint32_t)snprintf(s[r], 16, "v%zu", r);
        iv[r] = (int64_t)r * 3;
    }
    data[0].str = (const char *const *)s;
    data[0].str_len = len;
    data[1].i64 = iv;
    CHECK_EQ_INT(trove_pq_writer_new(defs, 2, TROVE_PQ_CODEC_ZSTD, 0, &w), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_add(w, data, n), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_finish(w, &b), TROVE_OK);
    trove_pq_writer_free(w);
    CHECK_EQ_INT(trove_pq_open(b.ptr, b.len, &f, NULL), TROVE_OK);
    if (f) {
        CHECK_EQ_INT(trove_pq_column_encoding(f, 0), TROVE_PQ_ENC_PLAIN);
        CHECK_EQ_INT(trove_pq_column_encoding(f, 1), TROVE_PQ_ENC_PLAIN);
        CHECK_EQ_INT(trove_pq_read_strings(f, 0, &out, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_pq_read_int(f, 1, back, NULL), TROVE_OK);
        for (size_t r = 0; r < n && out.off; r++)
            bad += out.off[r + 1] - out.off[r] != len[r] ||
                   memcmp(out.bytes + out.off[r], s[r], len[r]) != 0 || back[r] != iv[r];
        CHECK_EQ_INT(bad, 0);
        trove_pq_close(f);
    }
    CHECK_EQ_INT(footer(b.ptr, b.len, &fm), TROVE_OK);
    CHECK_EQ_INT(fm.row_groups[0].columns[0].meta.nencodings, 1);
    CHECK_EQ_INT(fm.row_groups[0].columns[0].meta.encodings[0], TROVE_PQE_PLAIN);
    CHECK_EQ_INT(fm.row_groups[0].columns[0].meta.dictionary_page_offset, -1);
    trove__pq_file_meta_free(&fm);
    trove_pq_strings_free(&out);
    trove_bytes_free(&b);
    for (size_t r = 0; r < n; r++)
        free(s[r]);
    free(s);
    free(len);
    free(iv);
    free(back);
}

/* Under a codec a DELTA column is written both ways and the smaller chunk kept: a sorted
 * column of distinct values stays DELTA, one of 13 values in no order becomes a dictionary
 * (and the file is then no larger than one written with that column a dictionary); without
 * a codec both stay DELTA. Every value reads back. */
static void test_delta_or_dict(void)
{
    size_t n = 100000;
    int64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *back = malloc(n * sizeof *back);
    struct trove_pq_column_def defs[2] = {{"a", TROVE_PQ_INT64, 64, 0, TROVE_PQ_ENC_DELTA},
                                          {"b", TROVE_PQ_INT64, 64, 0, TROVE_PQ_ENC_DELTA}};
    struct trove_pq_column_data data[2] = {{0}};
    struct trove_bytes out[3] = {{0}};
    int codecs[3] = {TROVE_PQ_CODEC_ZSTD, TROVE_PQ_CODEC_NONE, TROVE_PQ_CODEC_ZSTD};

    for (size_t r = 0; r < n; r++) {
        a[r] = (int64_t)r * 1000 + (int64_t)(r % 7);
        b[r] = (int64_t)((r * 7919u) % 13u) * 1000003;
    }
    data[0].i64 = a;
    data[1].i64 = b;
    for (int i = 0; i < 3; i++) {
        struct trove_pq_writer *w = NULL;
        struct trove_pq_file *f = NULL;
        int bad = 0;
        if (i == 2)
            defs[1].encoding = TROVE_PQ_ENC_DICT;
        CHECK_EQ_INT(trove_pq_writer_new(defs, 2, codecs[i], 0, &w), TROVE_OK);
        CHECK_EQ_INT(trove_pq_writer_add(w, data, n), TROVE_OK);
        CHECK_EQ_INT(trove_pq_writer_finish(w, &out[i]), TROVE_OK);
        trove_pq_writer_free(w);
        CHECK_EQ_INT(trove_pq_open(out[i].ptr, out[i].len, &f, NULL), TROVE_OK);
        if (!f)
            continue;
        CHECK_EQ_INT(trove_pq_column_encoding(f, 0), TROVE_PQ_ENC_DELTA);
        CHECK_EQ_INT(trove_pq_column_encoding(f, 1),
                     i == 1 ? TROVE_PQ_ENC_DELTA : TROVE_PQ_ENC_DICT);
        CHECK_EQ_INT(trove_pq_read_int(f, 0, back, NULL), TROVE_OK);
        for (size_t r = 0; r < n; r++)
            bad += back[r] != a[r];
        CHECK_EQ_INT(trove_pq_read_int(f, 1, back, NULL), TROVE_OK);
        for (size_t r = 0; r < n; r++)
            bad += back[r] != b[r];
        CHECK_EQ_INT(bad, 0);
        trove_pq_close(f);
    }
    CHECK(out[0].len == out[2].len && !memcmp(out[0].ptr, out[2].ptr, out[0].len));
    CHECK(out[0].len < out[1].len);
    for (int i = 0; i < 3; i++)
        trove_bytes_free(&out[i]);
    free(a);
    free(b);
    free(back);
}

static void test_writer_args(void)
{
    struct trove_pq_column_def d = {"x", TROVE_PQ_INT32, 8, 0, TROVE_PQ_ENC_PLAIN};
    struct trove_pq_column_def two[2] = {{"x", TROVE_PQ_INT32, 32, 0, 0}, {"x", TROVE_PQ_INT32, 32, 0, 0}};
    struct trove_pq_writer *w = NULL;
    struct trove_pq_column_data data = {0};
    int32_t v[2] = {5, 300};
    CHECK_EQ_INT(trove_pq_writer_new(&d, 0, 0, 0, &w), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_pq_writer_new(two, 2, 0, 0, &w), TROVE_ERR_INVALID);
    d.bits = 64;
    CHECK_EQ_INT(trove_pq_writer_new(&d, 1, 0, 0, &w), TROVE_ERR_INVALID);
    d.bits = 8;
    CHECK_EQ_INT(trove_pq_writer_new(&d, 1, 7, 0, &w), TROVE_ERR_INVALID);
    d.type = TROVE_PQ_STRING;
    d.encoding = TROVE_PQ_ENC_DELTA;
    CHECK_EQ_INT(trove_pq_writer_new(&d, 1, 0, 0, &w), TROVE_ERR_INVALID);
    d.type = TROVE_PQ_INT32;
    d.encoding = TROVE_PQ_ENC_PLAIN;
    CHECK_EQ_INT(trove_pq_writer_new(&d, 1, 0, 0, &w), TROVE_OK);
    data.i32 = v;
    /* 300 does not fit INT(8). */
    CHECK_EQ_INT(trove_pq_writer_add(w, &data, 2), TROVE_ERR_INVALID);
    trove_pq_writer_free(w);
    /* Nor through _add_groups, for signed and unsigned widths. */
    {
        static const struct {
            int bits, is_unsigned;
            int32_t bad;
        } cases[] = {{8, 0, 300}, {8, 0, -129}, {8, 1, 256}, {8, 1, -1}, {16, 1, -1}};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            int32_t vals[3] = {1, cases[i].bad, 2};
            d.bits = cases[i].bits;
            d.is_unsigned = cases[i].is_unsigned;
            data.i32 = vals;
            CHECK_EQ_INT(trove_pq_writer_new(&d, 1, 0, 0, &w), TROVE_OK);
            CHECK_EQ_INT(trove_pq_writer_add_groups(w, &data, 3), TROVE_ERR_INVALID);
            CHECK_EQ_INT(trove_pq_writer_add_groups(w, &data, 1), TROVE_ERR_INVALID); /* broken */
            trove_pq_writer_free(w);
        }
        d.bits = 8;
        d.is_unsigned = 0;
        data.i32 = v;
    }
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_writer_args);
    RUN(test_round_trips);
    RUN(test_add_groups_cursor);
    RUN(test_sink);
    RUN(test_sink_errors);
    RUN(test_footer);
    RUN(test_dict_fallback);
    RUN(test_delta_or_dict);
    return test_done();
}
