/*
 * test_tables.c: a capture as Parquet tables (src/columnar/tables.c) — every table round
 * trips in every mode and codec; the threads table carries process names with and without
 * named threads; the encodings each mode promises are what the files hold; values out of
 * range, missing columns and rows in the sample tables are refused with the table, column
 * and row named; and the golden events table tests/vectors/tables_events.parquet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "trove/parquet.h"
#include "trove/tables.h"

/* A small capture: events with every field's extremes, event names, thread names (one
 * process has named threads, one only a name, one thread has no process name). */
static void capture(struct trove_events *ev, struct trove_names **names, size_t n)
{
    uint64_t seed = 99;
    CHECK_EQ_INT(trove_names_new(names), TROVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct trove_event e;
        memset(&e, 0, sizeof e);
        e.start_ns = 400000000000000ull + i * 1000 + test_rand(&seed) % 500;
        e.dur_ns = i % 7 == 0 ? 0 : test_rand(&seed) % 100000;
        e.pid = i % 3 == 0 ? 4000000000u : 1000 + (uint32_t)(i % 3);
        e.tid = e.pid + (uint32_t)(i % 5);
        e.kind = (uint8_t)(i % 5);
        e.depth = (uint8_t)(i % 12);
        e.extra = i == 5 ? 255 : (uint8_t)(i % 8);
        e.name_id = i == 6 ? UINT32_MAX : (uint32_t)(test_rand(&seed) % 50);
        CHECK_EQ_INT(trove_events_push(ev, &e), TROVE_OK);
    }
    if (n > 0) {
        ev->ev[0].start_ns = UINT64_MAX - 1000; /* the top bit set: an unsigned column */
        ev->ev[0].dur_ns = 1000;
    }
    for (uint32_t id = 0; id < 50; id++) {
        char s[32];
        int len = snprintf(s, sizeof s, id == 3 ? "" : "zone \xc3\xa9%u", id); /* UTF-8, one empty */
        CHECK_EQ_INT(trove_names_set(*names, TROVE_NAME_EVENT, id, 0, s, (size_t)len), TROVE_OK);
    }
    CHECK_EQ_INT(trove_names_set(*names, TROVE_NAME_PROCESS, 1000, 0, "browser", 7), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(*names, TROVE_NAME_THREAD, 1000, 1000, "main", 4), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(*names, TROVE_NAME_THREAD, 1000, 1001, "io", 2), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(*names, TROVE_NAME_PROCESS, 1001, 0, "gpu", 3), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(*names, TROVE_NAME_THREAD, 1002, 1004, "worker", 6), TROVE_OK);
}

/* Every name of a in b, and the counts equal (order may differ). */
static void roundtrip(size_t n, int mode, int codec, uint64_t rg)
{
    struct trove_events ev = {0}, back = {0};
    struct trove_names *names = NULL, *nb = NULL;
    struct trove_tables_options o;
    struct trove_diag diag;

    capture(&ev, &names, n);
    CHECK_EQ_INT(trove_names_new(&nb), TROVE_OK);
    trove_tables_defaults(&o);
    o.mode = mode;
    o.codec = codec;
    o.row_group_rows = rg;
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++) {
        struct trove_bytes f = {0};
        uint64_t rows = 99;
        CHECK_EQ_INT(trove_tables_write(t, &ev, names, &o, &f, &rows), TROVE_OK);
        CHECK(f.len >= 12 && memcmp(f.ptr, "PAR1", 4) == 0);
        CHECK_EQ_INT(rows, t == TROVE_TABLE_EVENTS ? n : t == TROVE_TABLE_NAMES ? 50
                           : t == TROVE_TABLE_THREADS ? 4 : 0);
        memset(&diag, 0, sizeof diag);
        CHECK_EQ_INT(trove_tables_read(t, f.ptr, f.len, &back, nb, &diag), TROVE_OK);
        if (diag.msg[0])
            fprintf(stderr, "table %d: %s\n", t, diag.msg);
        trove_bytes_free(&f);
    }
    CHECK_EQ_INT(back.len, n);
    CHECK(back.len == n && (n == 0 || memcmp(back.ev, ev.ev, n * sizeof *ev.ev) == 0));
    CHECK(test_same_names(names, nb));
    trove_events_free(&ev);
    trove_events_free(&back);
    trove_names_free(names);
    trove_names_free(nb);
}

static void test_roundtrips(void)
{
    for (int mode = TROVE_TABLES_PLAIN; mode <= TROVE_TABLES_DELTA_DICT; mode++)
        for (int codec = TROVE_PQ_CODEC_NONE; codec <= TROVE_PQ_CODEC_GZIP; codec++)
            roundtrip(3000, mode, codec, 1000);
    roundtrip(0, TROVE_TABLES_DELTA_DICT, TROVE_PQ_CODEC_NONE, 0);
    roundtrip(1, TROVE_TABLES_DELTA_DICT, TROVE_PQ_CODEC_ZSTD, 0);
}

/* What each mode writes, as the file's own metadata says. */
static void test_encodings(void)
{
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_tables_options o;
    static const int want[3][8] = {
        {0, 0, 0, 0, 0, 0, 0, 0},
        {1, 1, 1, 1, 1, 1, 1, 1},
        {2, 2, 1, 1, 1, 1, 1, 1},
    };

    capture(&ev, &names, 2000);
    trove_tables_defaults(&o);
    CHECK_EQ_INT(o.mode, TROVE_TABLES_DELTA_DICT);
    CHECK_EQ_INT(o.codec, TROVE_PQ_CODEC_NONE);
    for (int mode = 0; mode < 3; mode++) {
        struct trove_bytes f = {0};
        struct trove_pq_file *pf = NULL;
        o.mode = mode;
        CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_EVENTS, &ev, names, &o, &f, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_pq_open(f.ptr, f.len, &pf, NULL), TROVE_OK);
        if (pf) {
            CHECK_EQ_INT(trove_pq_columns(pf), 8);
            for (size_t k = 0; k < 8 && k < trove_pq_columns(pf); k++) {
                CHECK_EQ_INT(trove_pq_column_encoding(pf, k), want[mode][k]);
                CHECK(trove_pq_column_unsigned(pf, k));
            }
            CHECK_EQ_INT(trove_pq_column_type(pf, 0), TROVE_PQ_INT64);
            CHECK_EQ_INT(trove_pq_column_type(pf, 4), TROVE_PQ_INT32);
            CHECK(strcmp(trove_pq_column_name(pf, 7), "name_id") == 0);
        }
        trove_pq_close(pf);
        trove_bytes_free(&f);
    }
    trove_events_free(&ev);
    trove_names_free(names);
}

/* A Parquet file of one table's columns with one value changed: out of range, or a column
 * renamed away; the table reader must say which. */
static void write_custom(const char *rename_col, int bad_kind, struct trove_bytes *out)
{
    static const char *const cols[8] = {"start_ns", "dur_ns", "pid", "tid", "kind", "depth",
                                        "extra", "name_id"};
    struct trove_pq_column_def d[8];
    struct trove_pq_column_data v[8];
    int64_t t[2][3] = {{1, 2, 3}, {0, 0, 0}};
    int32_t x[6][3] = {{1, 1, 1}, {2, 2, 2}, {0, 0, 0}, {0, 1, 2}, {0, 0, 0}, {5, 6, 7}};
    struct trove_pq_writer *w = NULL;

    memset(d, 0, sizeof d);
    memset(v, 0, sizeof v);
    x[2][1] = bad_kind;
    for (int k = 0; k < 8; k++) {
        d[k].name = rename_col && !strcmp(rename_col, cols[k]) ? "renamed" : cols[k];
        d[k].type = k < 2 ? TROVE_PQ_INT64 : TROVE_PQ_INT32;
        d[k].bits = k < 2 ? 64 : 32;
        d[k].encoding = TROVE_PQ_ENC_PLAIN;
        if (k < 2)
            v[k].i64 = t[k];
        else
            v[k].i32 = x[k - 2];
    }
    CHECK_EQ_INT(trove_pq_writer_new(d, 8, TROVE_PQ_CODEC_NONE, 0, &w), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_add(w, v, 3), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_finish(w, out), TROVE_OK);
    trove_pq_writer_free(w);
}

static void test_errors(void)
{
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_bytes f = {0};
    struct trove_diag diag;

    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    /* Signed INT32 columns (no logical type): a valid file with 3 events. */
    write_custom(NULL, 7, &f);
    CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_EVENTS, f.ptr, f.len, &ev, names, NULL), TROVE_OK);
    CHECK(ev.len == 3 && ev.ev[1].kind == 7 && ev.ev[2].start_ns == 3 && ev.ev[0].name_id == 5);
    /* kind 300: past its 8 bits; nothing appended. */
    f.len = 0;
    write_custom(NULL, 300, &f);
    memset(&diag, 0, sizeof diag);
    CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_EVENTS, f.ptr, f.len, &ev, names, &diag),
                 TROVE_ERR_CORRUPT);
    CHECK(strstr(diag.msg, "kind") && strstr(diag.msg, "row 1") && strstr(diag.msg, "events"));
    CHECK_EQ_INT(ev.len, 3);
    /* A negative kind (signed -1) too. */
    f.len = 0;
    write_custom(NULL, -1, &f);
    CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_EVENTS, f.ptr, f.len, &ev, names, NULL),
                 TROVE_ERR_CORRUPT);
    /* A missing column. */
    f.len = 0;
    write_custom("tid", 0, &f);
    memset(&diag, 0, sizeof diag);
    CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_EVENTS, f.ptr, f.len, &ev, names, &diag),
                 TROVE_ERR_CORRUPT);
    CHECK(strstr(diag.msg, "no column tid") != NULL);
    /* The names table read from an events file: no such columns. */
    CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_NAMES, f.ptr, f.len, &ev, names, NULL),
                 TROVE_ERR_CORRUPT);
    CHECK_EQ_INT(trove_names_count(names), 0);
    /* Samples with rows are refused for now. */
    f.len = 0;
    {
        struct trove_pq_column_def d[4] = {{"time_ns", TROVE_PQ_INT64, 64, 1, 0},
                                           {"pid", TROVE_PQ_INT32, 32, 1, 0},
                                           {"tid", TROVE_PQ_INT32, 32, 1, 0},
                                           {"stack_id", TROVE_PQ_INT32, 32, 1, 0}};
        int64_t tm[1] = {5};
        int32_t z[1] = {0};
        struct trove_pq_column_data v[4] = {{NULL, tm, NULL, NULL}, {z, NULL, NULL, NULL},
                                            {z, NULL, NULL, NULL}, {z, NULL, NULL, NULL}};
        struct trove_pq_writer *w = NULL;
        CHECK_EQ_INT(trove_pq_writer_new(d, 4, TROVE_PQ_CODEC_NONE, 0, &w), TROVE_OK);
        CHECK_EQ_INT(trove_pq_writer_add(w, v, 1), TROVE_OK);
        CHECK_EQ_INT(trove_pq_writer_finish(w, &f), TROVE_OK);
        trove_pq_writer_free(w);
        CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_SAMPLES, f.ptr, f.len, &ev, names, NULL),
                     TROVE_ERR_FORMAT);
    }
    /* Not Parquet at all; bad arguments. */
    CHECK(trove_tables_read(TROVE_TABLE_EVENTS, (const uint8_t *)"PAR1", 4, &ev, names, NULL) < 0);
    CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_COUNT_, f.ptr, f.len, &ev, names, NULL),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_tables_write(-1, &ev, names, NULL, &f, NULL), TROVE_ERR_INVALID);
    CHECK(trove_table_name(TROVE_TABLE_COUNT_) == NULL);
    CHECK(strcmp(trove_table_name(TROVE_TABLE_THREADS), "threads") == 0);
    CHECK_EQ_INT(ev.len, 3);
    trove_bytes_free(&f);
    trove_events_free(&ev);
    trove_names_free(names);
}

/* The golden events table: 20 events of the capture above, delta-dict, no codec. */
static void test_golden(void)
{
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_bytes f = {0};

    capture(&ev, &names, 20);
    CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_EVENTS, &ev, names, NULL, &f, NULL), TROVE_OK);
    test_check_vector("tables_events.parquet", f.ptr, f.len);
    f.len = 0;
    CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_THREADS, &ev, names, NULL, &f, NULL), TROVE_OK);
    test_check_vector("tables_threads.parquet", f.ptr, f.len);
    trove_bytes_free(&f);
    trove_events_free(&ev);
    trove_names_free(names);
}

int main(void)
{
    test_roundtrips();
    test_encodings();
    test_errors();
    test_golden();
    return test_done();
}
