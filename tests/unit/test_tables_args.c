/*
 * test_tables_args.c: the bundle's args table (src/columnar/tables_args.c): the trace's rows
 * then the events', every type and its text (a double's fewest digits, nan and the
 * infinities, -0, a subnormal), read back to the same rows; its golden vector; every rule of the reader
 * (a scope, a type, an event out of order or past the events, a text the writer would not
 * make, a column missing) refused naming the row, the tables as they were; and an empty table.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "trove/attrs.h"
#include "trove/parquet.h"
#include "trove/tables.h"

static uint32_t sid(struct trove_attrs *a, const char *s)
{
    uint32_t id = 0;
    CHECK_EQ_INT(trove_attrs_intern(a, s, strlen(s), &id), TROVE_OK);
    return id;
}

static void row(struct trove_attrs *a, uint64_t ev, uint8_t scope, const char *key, int type,
                int64_t i, double d, const char *s)
{
    struct trove_attr r;
    memset(&r, 0, sizeof r);
    r.event = ev;
    r.scope = scope;
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

static void sample(struct trove_attrs *a, struct trove_attrs *m)
{
    memset(a, 0, sizeof *a);
    memset(m, 0, sizeof *m);
    row(m, 0, TROVE_ATTR_TRACE, "metadata", TROVE_ATTR_JSON, 0, 0, "{\"v\":1}");
    row(a, 0, TROVE_ATTR_FIELD, "cat", TROVE_ATTR_STRING, 0, 0, "blink");
    row(a, 0, TROVE_ATTR_ARG, "url", TROVE_ATTR_STRING, 0, 0, "https://example.org/\xc3\xa9");
    row(a, 0, TROVE_ATTR_ARG, "n", TROVE_ATTR_INT, INT64_MIN, 0, NULL);
    row(a, 3, TROVE_ATTR_ARG, "x", TROVE_ATTR_DOUBLE, 0, 0.1, NULL);
    row(a, 3, TROVE_ATTR_ARG, "y", TROVE_ATTR_DOUBLE, 0, -0.0, NULL);
    row(a, 3, TROVE_ATTR_ARG, "big", TROVE_ATTR_DOUBLE, 0, 1.7976931348623157e308, NULL);
    row(a, 4, TROVE_ATTR_ARG, "inf", TROVE_ATTR_DOUBLE, 0, -INFINITY, NULL);
    row(a, 4, TROVE_ATTR_ARG, "nan", TROVE_ATTR_DOUBLE, 0, NAN, NULL);
    row(a, 4, TROVE_ATTR_ARG, "ok", TROVE_ATTR_BOOL, 0, 0, NULL);
    row(a, 9, TROVE_ATTR_ARG, "o", TROVE_ATTR_JSON, 0, 0, "[1,{\"k\":null}]");
    row(a, 9, TROVE_ATTR_ARG, "empty", TROVE_ATTR_STRING, 0, 0, "");
    row(a, 9, TROVE_ATTR_ARG, "tiny", TROVE_ATTR_DOUBLE, 0, 4.9406564584124654e-324, NULL);
}

static void test_round_trip(void)
{
    struct trove_attrs a, m, a2, m2;
    struct trove_bytes f = {0};
    struct trove_pq_file *pf = NULL;
    struct trove_pq_strings s;
    uint64_t rows = 0;

    sample(&a, &m);
    {
        struct trove_tables_options plain; /* the vector: delta-dict, no codec */
        memset(&plain, 0, sizeof plain);
        CHECK_EQ_INT(trove_tables_write_args(&a, &m, &plain, &f, &rows), TROVE_OK);
    }
    CHECK_EQ_INT(rows, 13);
    test_check_vector("tables_args.parquet", f.ptr, f.len);
    /* the texts as written: the trace's row first */
    memset(&s, 0, sizeof s);
    CHECK_EQ_INT(trove_pq_open(f.ptr, f.len, &pf, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_pq_read_strings(pf, 4, &s, NULL), TROVE_OK);
    if (s.n == 13) {
        static const char *const want[] = {"{\"v\":1}", "blink", "https://example.org/\xc3\xa9",
                                           "-9223372036854775808", "0.1", "-0",
                                           "1.7976931348623157e+308", "-inf", "nan", "false",
                                           "[1,{\"k\":null}]", "", "4.94065645841247e-324"};
        for (size_t i = 0; i < 13; i++)
            CHECK(s.off[i + 1] - s.off[i] == strlen(want[i]) &&
                  !memcmp(s.bytes + s.off[i], want[i], strlen(want[i])));
    }
    trove_pq_strings_free(&s);
    trove_pq_close(pf);
    memset(&a2, 0, sizeof a2);
    memset(&m2, 0, sizeof m2);
    CHECK_EQ_INT(trove_tables_read_args(f.ptr, f.len, 10, &a2, &m2, NULL), TROVE_OK);
    CHECK(trove_attrs_equal(&a, &a2) && trove_attrs_equal(&m, &m2));
    /* the trace's rows dropped without a table for them */
    trove_attrs_free(&a2);
    memset(&a2, 0, sizeof a2);
    CHECK_EQ_INT(trove_tables_read_args(f.ptr, f.len, 10, &a2, NULL, NULL), TROVE_OK);
    CHECK(trove_attrs_equal(&a, &a2));
    /* the same rows, the same bytes; with other options the same rows */
    {
        struct trove_bytes g = {0};
        struct trove_tables_options o = {TROVE_TABLES_PLAIN, TROVE_PQ_CODEC_ZSTD, 3};
        struct trove_attrs a3;
        memset(&a3, 0, sizeof a3);
        struct trove_tables_options plain;
        memset(&plain, 0, sizeof plain);
        CHECK_EQ_INT(trove_tables_write_args(&a, &m, &plain, &g, NULL), TROVE_OK);
        CHECK(g.len == f.len && !memcmp(g.ptr, f.ptr, f.len));
        g.len = 0;
        CHECK_EQ_INT(trove_tables_write_args(&a, &m, &o, &g, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_tables_read_args(g.ptr, g.len, 10, &a3, NULL, NULL), TROVE_OK);
        CHECK(trove_attrs_equal(&a, &a3));
        trove_attrs_free(&a3);
        trove_bytes_free(&g);
    }
    /* an event past the events */
    {
        size_t n0 = a2.n;
        struct trove_diag d = {0};
        CHECK_EQ_INT(trove_tables_read_args(f.ptr, f.len, 9, &a2, &m2, &d), TROVE_ERR_CORRUPT);
        CHECK(strstr(d.msg, "past the events") != NULL && d.offset == 10);
        CHECK_EQ_INT(a2.n, n0);
        CHECK_EQ_INT(m2.n, 1);
    }
    /* rows going back are not written */
    a.rows[1].event = 5;
    f.len = 0;
    CHECK_EQ_INT(trove_tables_write_args(&a, &m, NULL, &f, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(f.len, 0);
    /* none: a table with no rows */
    {
        struct trove_attrs none, back;
        memset(&none, 0, sizeof none);
        memset(&back, 0, sizeof back);
        CHECK_EQ_INT(trove_tables_write_args(&none, NULL, NULL, &f, &rows), TROVE_OK);
        CHECK_EQ_INT(rows, 0);
        CHECK_EQ_INT(trove_tables_read_args(f.ptr, f.len, 0, &back, NULL, NULL), TROVE_OK);
        CHECK_EQ_INT(back.n, 0);
    }
    trove_attrs_free(&a);
    trove_attrs_free(&m);
    trove_attrs_free(&a2);
    trove_attrs_free(&m2);
    trove_bytes_free(&f);
}

/* A table of one row (as a user's tool might write it): its columns' texts. */
static void one_row(struct trove_bytes *out, int64_t event, const char *scope, const char *key,
                    const char *type, const char *value, int drop_value)
{
    static const char *const names[] = {"event", "scope", "key", "type", "value"};
    struct trove_pq_column_def defs[5];
    struct trove_pq_column_data data[5];
    const char *str[4] = {scope, key, type, value};
    uint32_t len[4];
    struct trove_pq_writer *w = NULL;
    size_t nc = drop_value ? 4 : 5;

    for (int k = 0; k < 5; k++) {
        defs[k] = (struct trove_pq_column_def){names[k], k ? TROVE_PQ_STRING : TROVE_PQ_INT64,
                                               k ? 0 : 64, k == 0, TROVE_PQ_ENC_PLAIN};
        memset(&data[k], 0, sizeof data[k]);
    }
    data[0].i64 = &event;
    for (int k = 0; k < 4; k++) {
        len[k] = (uint32_t)strlen(str[k]);
        data[k + 1].str = &str[k];
        data[k + 1].str_len = &len[k];
    }
    out->len = 0;
    CHECK_EQ_INT(trove_pq_writer_new(defs, nc, TROVE_PQ_CODEC_NONE, 0, &w), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_add(w, data, 1), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_finish(w, out), TROVE_OK);
    trove_pq_writer_free(w);
}

static void test_bad(void)
{
    static const struct {
        int64_t event;
        const char *scope, *key, *type, *value;
        int rc;
        const char *needle;
    } cases[] = {
        {0, "args", "k", "int", "1", TROVE_ERR_CORRUPT, "scope"},
        {0, "arg", "k", "integer", "1", TROVE_ERR_CORRUPT, "type"},
        {0, "arg", "k", "int", "01", TROVE_ERR_CORRUPT, "not the text of a int"},
        {0, "arg", "k", "int", " 1", TROVE_ERR_CORRUPT, "not the text"},
        {0, "arg", "k", "int", "9223372036854775808", TROVE_ERR_CORRUPT, "not the text"},
        {0, "arg", "k", "double", "0.10", TROVE_ERR_CORRUPT, "not the text"},
        {0, "arg", "k", "double", "", TROVE_ERR_CORRUPT, "not the text"},
        {0, "arg", "k", "bool", "1", TROVE_ERR_CORRUPT, "not the text"},
        {0, "arg", "k\xff", "string", "v", TROVE_ERR_CORRUPT, "UTF-8"},
        {1, "trace", "k", "string", "v", TROVE_ERR_CORRUPT, "which is 0"},
        {7, "arg", "k", "int", "1", TROVE_ERR_CORRUPT, "past the events"},
        {-1, "arg", "k", "int", "1", TROVE_ERR_CORRUPT, "past the events"},
    };
    struct trove_bytes f = {0};
    struct trove_attrs a;

    memset(&a, 0, sizeof a);
    row(&a, 0, TROVE_ATTR_ARG, "before", TROVE_ATTR_INT, 1, 0, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct trove_diag d = {0};
        int rc;
        one_row(&f, cases[i].event, cases[i].scope, cases[i].key, cases[i].type, cases[i].value, 0);
        rc = trove_tables_read_args(f.ptr, f.len, 5, &a, NULL, &d);
        CHECK_EQ_INT(rc, cases[i].rc);
        if (!strstr(d.msg, cases[i].needle))
            fprintf(stderr, "case %zu: \"%s\" lacks \"%s\"\n", i, d.msg, cases[i].needle);
        CHECK(strstr(d.msg, cases[i].needle) != NULL);
        CHECK_EQ_INT(a.n, 1);
    }
    /* what reads: the writer's texts */
    one_row(&f, 2, "field", "cat", "string", "x", 0);
    CHECK_EQ_INT(trove_tables_read_args(f.ptr, f.len, 5, &a, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(a.n, 2);
    one_row(&f, 2, "arg", "k", "double", "1e+100", 0);
    CHECK_EQ_INT(trove_tables_read_args(f.ptr, f.len, 5, &a, NULL, NULL), TROVE_OK);
    CHECK(a.n == 3 && a.rows[2].v.d == 1e100);
    /* a column missing */
    {
        struct trove_diag d = {0};
        one_row(&f, 0, "arg", "k", "int", "1", 1);
        CHECK_EQ_INT(trove_tables_read_args(f.ptr, f.len, 5, &a, NULL, &d), TROVE_ERR_FORMAT);
        CHECK(strstr(d.msg, "\"value\"") != NULL);
    }
    trove_attrs_free(&a);
    trove_bytes_free(&f);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_round_trip);
    RUN(test_bad);
    return test_done();
}
