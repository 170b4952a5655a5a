/*
 * test_tables.c: a capture as Parquet tables (src/columnar/tables.c) — every table round
 * trips in every mode and codec; the threads table carries process names with and without
 * named threads; the encodings each mode promises are what the files hold; values out of
 * range, missing columns and rows in the sample tables are refused with the table, column
 * and row named; the flows table round trips and refuses a bad phase, flags or id; and the
 * golden tables tests/vectors/tables_events.parquet, tables_threads.parquet and
 * tables_flows.parquet. The events table written in pieces to a sink is, in pieces of
 * whole row groups, the table written at once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "trove/parquet.h"
#include "trove/profile.h"
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
    CHECK_EQ_INT(trove_names_set_sort(*names, TROVE_NAME_PROCESS_SORT, 1000, 0, -1), TROVE_OK);
    CHECK_EQ_INT(trove_names_set_sort(*names, TROVE_NAME_THREAD_SORT, 1000, 1001, 2), TROVE_OK);
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
                           : t == TROVE_TABLE_THREADS ? 4 : t == TROVE_TABLE_SORT_INDEXES ? 2
                                                                                         : 0);
        memset(&diag, 0, sizeof diag);
        if (TROVE_TABLE_IS_PROFILE(t) || t == TROVE_TABLE_ARGS) { /* read by their own */
            CHECK_EQ_INT(trove_tables_read(t, f.ptr, f.len, &back, nb, NULL), TROVE_ERR_INVALID);
            trove_bytes_free(&f);
            continue;
        }
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
    for (int mode = 0; mode < TROVE_TABLES_MODE_COUNT_; mode++)
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
    static const int want[TROVE_TABLES_MODE_COUNT_][8] = {
        [TROVE_TABLES_PLAIN] = {0, 0, 0, 0, 0, 0, 0, 0},
        [TROVE_TABLES_DICT] = {1, 1, 1, 1, 1, 1, 1, 1},
        [TROVE_TABLES_DELTA_DICT] = {2, 2, 1, 1, 1, 1, 1, 1},
    };

    capture(&ev, &names, 2000);
    trove_tables_defaults(&o);
    CHECK_EQ_INT(o.mode, TROVE_TABLES_DELTA_DICT);
    CHECK_EQ_INT(o.codec, TROVE_PQ_CODEC_ZSTD);
    {   /* NULL is the defaults (ZSTD); a zeroed struct is delta-dict without a codec */
        struct trove_tables_options z;
        struct trove_bytes a = {0}, b = {0}, c = {0};
        struct trove_pq_file *fa = NULL, *fz = NULL;
        memset(&z, 0, sizeof z);
        CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_EVENTS, &ev, names, &o, &a, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_EVENTS, &ev, names, NULL, &c, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_EVENTS, &ev, names, &z, &b, NULL), TROVE_OK);
        CHECK(a.len > 0 && a.len == c.len && !memcmp(a.ptr, c.ptr, a.len));
        CHECK(b.len > a.len); /* the codec's gain on 2,000 events */
        CHECK_EQ_INT(trove_pq_open(a.ptr, a.len, &fa, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_pq_open(b.ptr, b.len, &fz, NULL), TROVE_OK);
        CHECK(fa && trove_pq_codec(fa) == TROVE_PQ_CODEC_ZSTD);
        CHECK(fz && trove_pq_codec(fz) == TROVE_PQ_CODEC_NONE);
        trove_pq_close(fa);
        trove_pq_close(fz);
        trove_bytes_free(&a);
        trove_bytes_free(&b);
        trove_bytes_free(&c);
    }
    for (int mode = 0; mode < TROVE_TABLES_MODE_COUNT_; mode++) {
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
    /* The profile's tables are not read here (trove_tables_read_profile reads them). */
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
                     TROVE_ERR_INVALID);
    }
    /* A names table whose second name is not UTF-8 (a Parquet STRING may hold any bytes;
     * trove's names may not): refused naming the row, the names as they were. */
    f.len = 0;
    {
        struct trove_pq_column_def d[2] = {{"name_id", TROVE_PQ_INT32, 32, 1, 0},
                                           {"name", TROVE_PQ_STRING, 0, 0, 0}};
        int32_t id[2] = {1, 2};
        const char *str[2] = {"fine", "bad\xfe"};
        uint32_t len[2] = {4, 4};
        struct trove_pq_column_data v[2] = {{id, NULL, NULL, NULL}, {NULL, NULL, str, len}};
        struct trove_pq_writer *w = NULL;
        CHECK_EQ_INT(trove_pq_writer_new(d, 2, TROVE_PQ_CODEC_NONE, 0, &w), TROVE_OK);
        CHECK_EQ_INT(trove_pq_writer_add(w, v, 2), TROVE_OK);
        CHECK_EQ_INT(trove_pq_writer_finish(w, &f), TROVE_OK);
        trove_pq_writer_free(w);
        memset(&diag, 0, sizeof diag);
        CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_NAMES, f.ptr, f.len, &ev, names, &diag),
                     TROVE_ERR_CORRUPT);
        CHECK(strstr(diag.msg, "not valid UTF-8") && strstr(diag.msg, "row 1"));
        CHECK_EQ_INT(trove_names_count(names), 0);
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
    struct trove_tables_options plain; /* zeroed: delta-dict, no codec */

    memset(&plain, 0, sizeof plain);
    capture(&ev, &names, 20);
    CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_EVENTS, &ev, names, &plain, &f, NULL), TROVE_OK);
    test_check_vector("tables_events.parquet", f.ptr, f.len);
    f.len = 0;
    CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_THREADS, &ev, names, &plain, &f, NULL), TROVE_OK);
    test_check_vector("tables_threads.parquet", f.ptr, f.len);
    trove_bytes_free(&f);
    trove_events_free(&ev);
    trove_names_free(names);
}

/* A sink that keeps what it gets and fails call fail_at (1-based; 0: never) with -EIO. */
struct keep_sink {
    struct trove_bytes got;
    size_t calls, fail_at;
};

static int keep_write(void *ctx, const void *p, size_t n)
{
    struct keep_sink *k = ctx;
    if (++k->calls == k->fail_at)
        return -5;
    return trove_bytes_append(&k->got, p, n);
}

/* The events table written in pieces of chunk rows (0: all at once) to a sink. */
static int events_in_pieces(const struct trove_events *ev, const struct trove_tables_options *o,
                            size_t chunk, struct keep_sink *k, uint64_t *rows, uint64_t *bytes)
{
    struct trove_sink sk = {keep_write, k};
    struct trove_tables_events *t = NULL;
    int rc = trove_tables_events_begin(o, &sk, &t);

    for (size_t at = 0; rc == TROVE_OK && at < ev->len;) {
        size_t n = chunk == 0 || ev->len - at < chunk ? ev->len - at : chunk;
        rc = trove_tables_events_add(t, ev->ev + at, n);
        at += n;
    }
    if (rc == TROVE_OK)
        rc = trove_tables_events_finish(t, rows, bytes);
    trove_tables_events_free(t);
    return rc;
}

/* The events table in pieces of whole row groups is the table written at once, byte for byte,
 * in every mode and codec; pieces of other sizes make more row groups of the same rows. */
static void test_events_in_pieces(void)
{
    static const size_t sizes[] = {0, 1, 999, 1000, 1001, 3500};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int mode = 0; mode < TROVE_TABLES_MODE_COUNT_; mode++)
            for (int codec = TROVE_PQ_CODEC_NONE; codec <= TROVE_PQ_CODEC_GZIP; codec++) {
                struct trove_events ev = {0}, back = {0};
                struct trove_names *names = NULL, *nb = NULL;
                struct trove_tables_options o;
                struct trove_bytes whole = {0};
                struct keep_sink k = {{0}, 0, 0};
                uint64_t rows = 0, bytes = 0;

                capture(&ev, &names, sizes[si]);
                trove_tables_defaults(&o);
                o.mode = mode;
                o.codec = codec;
                o.row_group_rows = 1000;
                CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_EVENTS, &ev, names, &o, &whole, NULL),
                             TROVE_OK);
                for (size_t chunk = 1000; chunk <= 3000; chunk += 2000) { /* 1 and 3 groups */
                    k.got.len = 0;
                    CHECK_EQ_INT(events_in_pieces(&ev, &o, chunk, &k, &rows, &bytes), TROVE_OK);
                    CHECK(k.got.len == whole.len && memcmp(k.got.ptr, whole.ptr, whole.len) == 0);
                    CHECK_EQ_INT(rows, sizes[si]);
                    CHECK_EQ_INT(bytes, whole.len);
                }
                /* Pieces of 700: row groups of 700, the same events read back. */
                k.got.len = 0;
                CHECK_EQ_INT(events_in_pieces(&ev, &o, 700, &k, &rows, &bytes), TROVE_OK);
                CHECK((sizes[si] <= 700) == (k.got.len == whole.len &&
                                             memcmp(k.got.ptr, whole.ptr, whole.len) == 0));
                CHECK_EQ_INT(trove_names_new(&nb), TROVE_OK);
                CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_EVENTS, k.got.ptr, k.got.len, &back, nb,
                                               NULL), TROVE_OK);
                CHECK(back.len == ev.len &&
                      (ev.len == 0 || memcmp(back.ev, ev.ev, ev.len * sizeof *ev.ev) == 0));
                trove_events_free(&back);
                trove_names_free(nb);
                trove_bytes_free(&k.got);
                trove_bytes_free(&whole);
                trove_events_free(&ev);
                trove_names_free(names);
            }
}

static void test_events_pieces_errors(void)
{
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct keep_sink k = {{0}, 0, 0};
    struct trove_sink sk = {keep_write, &k}, none = {NULL, NULL};
    struct trove_tables_events *t = NULL;
    struct trove_tables_options o;

    capture(&ev, &names, 2500);
    trove_tables_defaults(&o);
    o.row_group_rows = 1000;
    CHECK_EQ_INT(trove_tables_events_begin(&o, NULL, &t), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_tables_events_begin(&o, &none, &t), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_tables_events_begin(&o, &sk, NULL), TROVE_ERR_INVALID);
    o.codec = 99;
    CHECK_EQ_INT(trove_tables_events_begin(&o, &sk, &t), TROVE_ERR_INVALID);
    CHECK(t == NULL);
    o.codec = TROVE_PQ_CODEC_NONE;
    /* Defaults with no options; NULL rows refused; nothing after finish. */
    CHECK_EQ_INT(trove_tables_events_begin(NULL, &sk, &t), TROVE_OK);
    CHECK_EQ_INT(trove_tables_events_add(t, NULL, 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_tables_events_add(t, NULL, 0), TROVE_OK);
    CHECK_EQ_INT(trove_tables_events_finish(t, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_tables_events_add(t, ev.ev, 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_tables_events_finish(t, NULL, NULL), TROVE_ERR_INVALID);
    trove_tables_events_free(t);
    trove_tables_events_free(NULL);
    /* The sink's error is the add's, and after it only free is left. */
    k.got.len = 0;
    k.calls = 0;
    k.fail_at = 2;
    CHECK_EQ_INT(trove_tables_events_begin(&o, &sk, &t), TROVE_OK);
    CHECK_EQ_INT(trove_tables_events_add(t, ev.ev, 1000), TROVE_OK);
    CHECK_EQ_INT(trove_tables_events_add(t, ev.ev + 1000, 1000), -5);
    CHECK_EQ_INT(trove_tables_events_add(t, ev.ev + 2000, 500), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_tables_events_finish(t, NULL, NULL), TROVE_ERR_INVALID);
    trove_tables_events_free(t);
    trove_bytes_free(&k.got);
    trove_events_free(&ev);
    trove_names_free(names);
}

/* The flows table: every mode, rows with each field's extremes, and what it refuses. */
static void test_flows(void)
{
    static const int modes[] = {TROVE_TABLES_PLAIN, TROVE_TABLES_DICT, TROVE_TABLES_DELTA_DICT};
    struct trove_flow rows[300];
    struct trove_flows back = {0}, keep = {0};
    struct trove_tables_options o;
    struct trove_bytes f = {0};
    struct trove_events ev = {0};
    struct trove_diag diag;
    uint64_t nrows = 0;

    memset(rows, 0, sizeof rows);
    for (size_t i = 0; i < 300; i++) {
        rows[i].ts_ns = i == 0 ? UINT64_MAX : 1000 * i;
        rows[i].id = i == 1 ? UINT64_MAX : 1 + i / 3;
        rows[i].pid = i == 2 ? UINT32_MAX : (uint32_t)(i % 4);
        rows[i].tid = (uint32_t)(i * 7);
        rows[i].name_id = i == 3 ? UINT32_MAX : (uint32_t)(i % 11);
        rows[i].phase = (uint8_t)(i % 3);
        rows[i].flags = (uint8_t)(i % 2);
    }
    for (size_t m = 0; m < 3; m++) {
        trove_tables_defaults(&o);
        o.mode = modes[m];
        o.row_group_rows = 128;
        f.len = 0;
        CHECK_EQ_INT(trove_tables_write_flows(rows, 300, &o, &f, &nrows), TROVE_OK);
        CHECK_EQ_INT(nrows, 300);
        back.len = 0;
        CHECK_EQ_INT(trove_tables_read_flows(f.ptr, f.len, &back, NULL), TROVE_OK);
        CHECK(back.len == 300 && !memcmp(back.f, rows, sizeof rows));
        /* the generic reader checks it and keeps nothing */
        CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_FLOWS, f.ptr, f.len, &ev, NULL, NULL),
                     TROVE_OK);
        CHECK_EQ_INT(ev.len, 0);
    }
    /* no rows; the table trove_tables_write makes is this one */
    f.len = 0;
    CHECK_EQ_INT(trove_tables_write_flows(NULL, 0, NULL, &f, &nrows), TROVE_OK);
    CHECK_EQ_INT(nrows, 0);
    {
        struct trove_bytes g = {0};
        CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_FLOWS, &ev, NULL, NULL, &g, NULL), TROVE_OK);
        CHECK(g.len == f.len && !memcmp(g.ptr, f.ptr, f.len));
        trove_bytes_free(&g);
    }
    back.len = 0;
    CHECK_EQ_INT(trove_tables_read_flows(f.ptr, f.len, &back, NULL), TROVE_OK);
    CHECK_EQ_INT(back.len, 0);
    /* rows the writer refuses */
    rows[5].phase = 3;
    CHECK_EQ_INT(trove_tables_write_flows(rows, 300, NULL, &f, NULL), TROVE_ERR_INVALID);
    rows[5].phase = 2;
    /* a phase of 3, flags of 2, an id of 0 written by hand: refused, naming the column */
    for (int bad = 0; bad < 3; bad++) {
        static const char *const cols[7] = {"ts_ns", "flow_id", "pid", "tid", "name_id", "phase",
                                            "flags"};
        static const char *const want[3] = {"phase", "flags", "flow_id"};
        struct trove_pq_column_def d[7];
        struct trove_pq_column_data v[7];
        int64_t ts[2] = {1, 2}, id[2] = {1, 1};
        int32_t z[2] = {0, 0}, ph[2] = {0, 0}, fl[2] = {0, 0};
        struct trove_pq_writer *w = NULL;
        memset(d, 0, sizeof d);
        memset(v, 0, sizeof v);
        if (bad == 0)
            ph[1] = 3;
        else if (bad == 1)
            fl[1] = 2;
        else
            id[1] = 0;
        for (int k = 0; k < 7; k++) {
            d[k].name = cols[k];
            d[k].type = k < 2 ? TROVE_PQ_INT64 : TROVE_PQ_INT32;
            d[k].bits = k < 2 ? 64 : 32;
            d[k].encoding = TROVE_PQ_ENC_PLAIN;
        }
        v[0].i64 = ts;
        v[1].i64 = id;
        v[2].i32 = v[3].i32 = v[4].i32 = z;
        v[5].i32 = ph;
        v[6].i32 = fl;
        f.len = 0;
        CHECK_EQ_INT(trove_pq_writer_new(d, 7, TROVE_PQ_CODEC_NONE, 0, &w), TROVE_OK);
        CHECK_EQ_INT(trove_pq_writer_add(w, v, 2), TROVE_OK);
        CHECK_EQ_INT(trove_pq_writer_finish(w, &f), TROVE_OK);
        trove_pq_writer_free(w);
        CHECK_EQ_INT(trove_flows_push(&keep, &rows[0]), TROVE_OK);
        memset(&diag, 0, sizeof diag);
        CHECK_EQ_INT(trove_tables_read_flows(f.ptr, f.len, &keep, &diag), TROVE_ERR_CORRUPT);
        CHECK(strstr(diag.msg, want[bad]) && strstr(diag.msg, "row 1"));
        CHECK_EQ_INT(keep.len, (size_t)bad + 1); /* nothing appended */
    }
    /* an events file is no flows table */
    f.len = 0;
    write_custom(NULL, 0, &f);
    CHECK_EQ_INT(trove_tables_read_flows(f.ptr, f.len, &keep, NULL), TROVE_ERR_CORRUPT);
    CHECK(strcmp(trove_table_name(TROVE_TABLE_FLOWS), "flows") == 0);
    /* the golden flows table: the first 20 rows, delta-dict, no codec */
    f.len = 0;
    {
        struct trove_tables_options plain;
        memset(&plain, 0, sizeof plain);
        CHECK_EQ_INT(trove_tables_write_flows(rows, 20, &plain, &f, NULL), TROVE_OK);
    }
    test_check_vector("tables_flows.parquet", f.ptr, f.len);
    trove_bytes_free(&f);
    trove_flows_free(&back);
    trove_flows_free(&keep);
    trove_events_free(&ev);
}

/* A sort_indexes table written by hand: a type column (u8), pid, tid, and sort_index as the
 * physical type `sort_type` (INT32 or INT64) signed, two rows. */
static void write_sort(const int32_t type[2], const int64_t sort[2], int sort_type,
                       const char *sort_col, struct trove_bytes *out)
{
    struct trove_pq_column_def d[4] = {{"type", TROVE_PQ_INT32, 8, 1, TROVE_PQ_ENC_PLAIN},
                                       {"pid", TROVE_PQ_INT32, 32, 1, TROVE_PQ_ENC_PLAIN},
                                       {"tid", TROVE_PQ_INT32, 32, 1, TROVE_PQ_ENC_PLAIN},
                                       {sort_col, sort_type, sort_type == TROVE_PQ_INT64 ? 64 : 32,
                                        0, TROVE_PQ_ENC_PLAIN}};
    int32_t pid[2] = {7, 8}, tid[2] = {9, 10}, s32[2] = {(int32_t)sort[0], (int32_t)sort[1]};
    struct trove_pq_column_data v[4];
    struct trove_pq_writer *w = NULL;

    memset(v, 0, sizeof v);
    v[0].i32 = (int32_t *)type;
    v[1].i32 = pid;
    v[2].i32 = tid;
    if (sort_type == TROVE_PQ_INT64)
        v[3].i64 = (int64_t *)sort;
    else
        v[3].i32 = s32;
    out->len = 0;
    CHECK_EQ_INT(trove_pq_writer_new(d, 4, TROVE_PQ_CODEC_NONE, 0, &w), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_add(w, v, 2), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_finish(w, out), TROVE_OK);
    trove_pq_writer_free(w);
}

/* The sort_indexes table: a row per sort index entry with its type, every mode, the extremes
 * of the value, the golden table, and what it refuses. */
static void test_sort_indexes(void)
{
    static const int modes[] = {TROVE_TABLES_PLAIN, TROVE_TABLES_DICT, TROVE_TABLES_DELTA_DICT};
    struct trove_names *names = NULL, *want = NULL, *back = NULL;
    struct trove_events ev = {0};
    struct trove_tables_options o;
    struct trove_bytes f = {0};
    struct trove_diag diag;
    uint64_t rows = 0;
    int32_t v = 0;

    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&want), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_EVENT, 0, 0, "zone", 4), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_THREAD, 1, 2, "main", 4), TROVE_OK);
    /* the table holds the sort indexes alone, in the names table's order */
    for (int k = 0; k < 2; k++) {
        struct trove_names *t = k ? want : names;
        CHECK_EQ_INT(trove_names_set_sort(t, TROVE_NAME_PROCESS_SORT, 1, 0, -1), TROVE_OK);
        CHECK_EQ_INT(trove_names_set_sort(t, TROVE_NAME_THREAD_SORT, 1, 2, 3), TROVE_OK);
        CHECK_EQ_INT(trove_names_set_sort(t, TROVE_NAME_THREAD_SORT, UINT32_MAX, UINT32_MAX,
                                          INT32_MIN),
                     TROVE_OK);
        CHECK_EQ_INT(trove_names_set_sort(t, TROVE_NAME_PROCESS_SORT, UINT32_MAX, 0, INT32_MAX),
                     TROVE_OK);
    }
    for (size_t m = 0; m < 3; m++) {
        trove_tables_defaults(&o);
        o.mode = modes[m];
        o.codec = (int)m;
        f.len = 0;
        CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_SORT_INDEXES, &ev, names, &o, &f, &rows),
                     TROVE_OK);
        CHECK_EQ_INT(rows, 4);
        CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
        CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_SORT_INDEXES, f.ptr, f.len, &ev, back, NULL),
                     TROVE_OK);
        CHECK(trove_names_equal(back, want));
        trove_names_free(back);
        back = NULL;
    }
    f.len = 0;
    memset(&o, 0, sizeof o); /* the vector: delta-dict, no codec */
    CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_SORT_INDEXES, &ev, names, &o, &f, NULL),
                 TROVE_OK);
    test_check_vector("tables_sort_indexes.parquet", f.ptr, f.len);
    CHECK(strcmp(trove_table_name(TROVE_TABLE_SORT_INDEXES), "sort_indexes") == 0);
    /* no sort index: no rows (the bundle then leaves the table out) */
    trove_names_free(back);
    CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
    f.len = 0;
    CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_SORT_INDEXES, &ev, back, NULL, &f, &rows),
                 TROVE_OK);
    CHECK_EQ_INT(rows, 0);
    CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_SORT_INDEXES, f.ptr, f.len, &ev, back, NULL),
                 TROVE_OK);
    CHECK_EQ_INT(trove_names_count(back), 0);
    CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_SORT_INDEXES, f.ptr, f.len, &ev, NULL, NULL),
                 TROVE_ERR_INVALID);
    /* tables another tool wrote: sort_index as a signed BIGINT is fine; a process row's tid is
     * not part of its key */
    {
        static const int32_t types[2] = {TROVE_NAME_PROCESS_SORT, TROVE_NAME_THREAD_SORT};
        static const int64_t sorts[2] = {-5, 6};
        write_sort(types, sorts, TROVE_PQ_INT64, "sort_index", &f);
        CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_SORT_INDEXES, f.ptr, f.len, &ev, back, NULL),
                     TROVE_OK);
        CHECK_EQ_INT(trove_names_count(back), 2);
        CHECK(trove_names_get_sort(back, TROVE_NAME_PROCESS_SORT, 7, 0, &v) && v == -5);
        CHECK(trove_names_get_sort(back, TROVE_NAME_THREAD_SORT, 8, 10, &v) && v == 6);
    }
    /* refused, naming the column and row, with nothing set: a type other than 4 and 5, an
     * index past 32 signed bits, a missing column */
    {
        static const int32_t bad_type[2] = {TROVE_NAME_PROCESS_SORT, TROVE_NAME_PROCESS};
        static const int32_t types[2] = {TROVE_NAME_PROCESS_SORT, TROVE_NAME_THREAD_SORT};
        static const int64_t sorts[2] = {1, 2}, big[2] = {1, (int64_t)INT32_MAX + 1},
                             small[2] = {(int64_t)INT32_MIN - 1, 0};
        trove_names_free(back);
        CHECK_EQ_INT(trove_names_new(&back), TROVE_OK);
        write_sort(bad_type, sorts, TROVE_PQ_INT32, "sort_index", &f);
        memset(&diag, 0, sizeof diag);
        CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_SORT_INDEXES, f.ptr, f.len, &ev, back, &diag),
                     TROVE_ERR_CORRUPT);
        CHECK(strstr(diag.msg, "column type row 1") != NULL);
        write_sort(types, big, TROVE_PQ_INT64, "sort_index", &f);
        memset(&diag, 0, sizeof diag);
        CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_SORT_INDEXES, f.ptr, f.len, &ev, back, &diag),
                     TROVE_ERR_CORRUPT);
        CHECK(strstr(diag.msg, "column sort_index row 1") != NULL);
        write_sort(types, small, TROVE_PQ_INT64, "sort_index", &f);
        CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_SORT_INDEXES, f.ptr, f.len, &ev, back, NULL),
                     TROVE_ERR_CORRUPT);
        write_sort(types, sorts, TROVE_PQ_INT32, "order", &f);
        memset(&diag, 0, sizeof diag);
        CHECK_EQ_INT(trove_tables_read(TROVE_TABLE_SORT_INDEXES, f.ptr, f.len, &ev, back, &diag),
                     TROVE_ERR_CORRUPT);
        CHECK(strstr(diag.msg, "no column sort_index") != NULL);
        CHECK_EQ_INT(trove_names_count(back), 0);
    }
    trove_bytes_free(&f);
    trove_names_free(names);
    trove_names_free(want);
    trove_names_free(back);
}

/* ---- the profile's tables ---------------------------------------------------------------- */

static uint32_t pstr(struct trove_profile *p, const char *s)
{
    uint32_t id = 0;
    CHECK_EQ_INT(trove_profile_string(p, s, strlen(s), &id), TROVE_OK);
    return id;
}

/* main -> work (with step inlined) and main -> libc+0x9a0; samples on two threads, one
 * without frames; switches. */
static struct trove_profile *small_profile(void)
{
    struct trove_profile *p = NULL;
    uint32_t f[4], st = 0;
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    {
        struct trove_profile_frame rows[4] = {
            {pstr(p, "/bin/app"), pstr(p, "main"), pstr(p, "app.c"), 10, 0x1100, 0},
            {pstr(p, "/bin/app"), pstr(p, "work"), pstr(p, "app.c"), 22, 0x1230, 0},
            {pstr(p, "/bin/app"), pstr(p, "step"), pstr(p, "step.h"), 3, 0x1230, 1},
            {pstr(p, "/lib/libc.so.6"), pstr(p, "libc.so.6+0x9a0"), 0, 0, 0x9a0, 0}};
        for (int i = 0; i < 4; i++)
            CHECK_EQ_INT(trove_profile_frame(p, &rows[i], &f[i]), TROVE_OK);
    }
    {
        uint32_t a[] = {f[2], f[1], f[0]}, b[] = {f[3], f[0]};
        struct trove_profile_sample sm = {1000, 7, 7, 0};
        CHECK_EQ_INT(trove_profile_stack_path(p, a, 3, &st), TROVE_OK);
        sm.stack = st;
        CHECK_EQ_INT(trove_profile_sample(p, &sm), TROVE_OK);
        CHECK_EQ_INT(trove_profile_stack_path(p, b, 2, &st), TROVE_OK);
        sm = (struct trove_profile_sample){2000, 7, 8, st};
        CHECK_EQ_INT(trove_profile_sample(p, &sm), TROVE_OK);
        sm = (struct trove_profile_sample){1500, 7, 8, 0};
        CHECK_EQ_INT(trove_profile_sample(p, &sm), TROVE_OK);
    }
    {
        struct trove_profile_switch sw[3] = {{1200, 7, 8, TROVE_PROFILE_SWITCH_OUT},
                                             {1300, 7, 8, 0},
                                             {2500, 7, 7, TROVE_PROFILE_SWITCH_OUT | TROVE_PROFILE_SWITCH_PREEMPT}};
        for (int i = 0; i < 3; i++)
            CHECK_EQ_INT(trove_profile_switch(p, &sw[i]), TROVE_OK);
    }
    return p;
}

/* The function names of the stack s, leaf first, joined by '<'. */
static void stack_names(const struct trove_profile *p, uint32_t s, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (; s; s = trove_profile_stack_get(p, s)->parent) {
        const struct trove_profile_frame *f = trove_profile_frame_get(p, trove_profile_stack_get(p, s)->frame);
        n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s", n ? "<" : "",
                              trove_profile_string_get(p, f->function, NULL));
    }
}

/* a and b hold the same samples with the same call paths, and the same switches. */
static void same_profile(const struct trove_profile *a, const struct trove_profile *b)
{
    CHECK_EQ_INT(trove_profile_sample_count(a), trove_profile_sample_count(b));
    CHECK_EQ_INT(trove_profile_switch_count(a), trove_profile_switch_count(b));
    CHECK_EQ_INT(trove_profile_frame_count(a), trove_profile_frame_count(b));
    CHECK_EQ_INT(trove_profile_stack_count(a), trove_profile_stack_count(b));
    for (size_t i = 0; i < trove_profile_sample_count(a) && i < trove_profile_sample_count(b); i++) {
        const struct trove_profile_sample *x = &trove_profile_samples(a)[i], *y = &trove_profile_samples(b)[i];
        char sa[256], sb[256];
        stack_names(a, x->stack, sa, sizeof sa);
        stack_names(b, y->stack, sb, sizeof sb);
        CHECK(x->time_ns == y->time_ns && x->pid == y->pid && x->tid == y->tid && !strcmp(sa, sb));
    }
    for (size_t i = 0; i < trove_profile_switch_count(a) && i < trove_profile_switch_count(b); i++) {
        const struct trove_profile_switch *x = &trove_profile_switches(a)[i], *y = &trove_profile_switches(b)[i];
        CHECK(x->time_ns == y->time_ns && x->tid == y->tid && x->flags == y->flags);
    }
    for (uint32_t i = 0; i < trove_profile_frame_count(a) && i < trove_profile_frame_count(b); i++) {
        const struct trove_profile_frame *x = trove_profile_frame_get(a, i), *y = trove_profile_frame_get(b, i);
        CHECK(x->address == y->address && x->line == y->line && x->inline_depth == y->inline_depth &&
              !strcmp(trove_profile_string_get(a, x->file, NULL), trove_profile_string_get(b, y->file, NULL)) &&
              !strcmp(trove_profile_string_get(a, x->module, NULL), trove_profile_string_get(b, y->module, NULL)));
    }
}

/* A Parquet table of int columns (names[k], values v[k][0..rows)), except those k with
 * strs[k] set, which are strings ("N..." holds a NUL after its first byte). */
static void write_cols(struct trove_bytes *out, const char *const *names, size_t ncols,
                       int64_t v[][4], size_t rows, const char *const *const *strs)
{
    struct trove_pq_column_def d[8];
    struct trove_pq_column_data c[8];
    uint32_t len[8][4];
    struct trove_pq_writer *w = NULL;
    memset(c, 0, sizeof c);
    for (size_t k = 0; k < ncols; k++) {
        int str = strs && strs[k];
        d[k] = (struct trove_pq_column_def){names[k], str ? TROVE_PQ_STRING : TROVE_PQ_INT64,
                                            str ? 0 : 64, 0, 0};
        if (str) {
            for (size_t r = 0; r < rows; r++)
                len[k][r] = (uint32_t)strlen(strs[k][r]) + (strs[k][r][0] == 'N');
            c[k].str = strs[k];
            c[k].str_len = len[k];
        } else {
            c[k].i64 = v[k];
        }
    }
    out->len = 0;
    CHECK_EQ_INT(trove_pq_writer_new(d, ncols, TROVE_PQ_CODEC_NONE, 0, &w), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_add(w, c, rows), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_finish(w, out), TROVE_OK);
    trove_pq_writer_free(w);
}

#define write_ints(out, names, ncols, v, rows, unused_col, unused_strs) \
    write_cols(out, names, ncols, v, rows, NULL)

static void expect_profile_error(const struct trove_tables_profile_in *in, const char *needle)
{
    struct trove_profile *q = NULL;
    struct trove_diag diag = {0};
    CHECK_EQ_INT(trove_profile_new(&q), TROVE_OK);
    CHECK_EQ_INT(trove_tables_read_profile(in, q, &diag), TROVE_ERR_CORRUPT);
    if (!strstr(diag.msg, needle)) {
        fprintf(stderr, "profile tables: message '%s' lacks '%s'\n", diag.msg, needle);
        CHECK(0);
    }
    trove_profile_free(q);
}

static void test_profile_tables(void)
{
    static const int pt[4] = {TROVE_TABLE_SAMPLES, TROVE_TABLE_FRAMES, TROVE_TABLE_STACKS,
                              TROVE_TABLE_SWITCHES};
    struct trove_profile *p = small_profile(), *q = NULL;
    struct trove_bytes tab[TROVE_TABLE_COUNT_];
    struct trove_tables_profile_in in;
    struct trove_diag diag = {0};
    uint64_t rows = 0;

    memset(tab, 0, sizeof tab);
    memset(&in, 0, sizeof in);
    for (int mode = 0; mode < TROVE_TABLES_MODE_COUNT_; mode++) {
        struct trove_tables_options o;
        trove_tables_defaults(&o);
        o.mode = mode;
        for (int k = 0; k < 4; k++) {
            int t = pt[k];
            tab[t].len = 0;
            CHECK_EQ_INT(trove_tables_write_profile(t, p, &o, &tab[t], &rows), TROVE_OK);
            CHECK_EQ_INT(rows, t == TROVE_TABLE_SAMPLES ? 3 : t == TROVE_TABLE_FRAMES ? 4
                               : t == TROVE_TABLE_STACKS ? 4 : 3);
            in.buf[t] = tab[t].ptr;
            in.len[t] = tab[t].len;
        }
        CHECK_EQ_INT(trove_profile_new(&q), TROVE_OK);
        CHECK_EQ_INT(trove_tables_read_profile(&in, q, &diag), TROVE_OK);
        same_profile(p, q);
        /* into a profile that has rows: refused */
        CHECK_EQ_INT(trove_tables_read_profile(&in, q, NULL), TROVE_ERR_INVALID);
        trove_profile_free(q);
    }
    /* no profile: empty tables, read as no rows; absent tables too */
    {
        struct trove_tables_profile_in none;
        struct trove_bytes e = {0};
        memset(&none, 0, sizeof none);
        CHECK_EQ_INT(trove_tables_write_profile(TROVE_TABLE_SAMPLES, NULL, NULL, &e, &rows), TROVE_OK);
        CHECK_EQ_INT(rows, 0);
        none.buf[TROVE_TABLE_SAMPLES] = e.ptr;
        none.len[TROVE_TABLE_SAMPLES] = e.len;
        CHECK_EQ_INT(trove_profile_new(&q), TROVE_OK);
        CHECK_EQ_INT(trove_tables_read_profile(&none, q, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_profile_sample_count(q), 0);
        trove_profile_free(q);
        CHECK_EQ_INT(trove_tables_write_profile(TROVE_TABLE_EVENTS, p, NULL, &e, &rows), TROVE_ERR_INVALID);
        trove_bytes_free(&e);
    }
    /* tables another tool rewrote: stacks in another row order, the ids as they were */
    {
        static const char *const sn[3] = {"stack_id", "parent_id", "frame_id"};
        int64_t v[3][4] = {{4, 2, 3, 1}, {1, 1, 2, 0}, {3, 1, 2, 0}};
        struct trove_bytes st = {0};
        write_ints(&st, sn, 3, v, 4, -1, NULL);
        in.buf[TROVE_TABLE_STACKS] = st.ptr;
        in.len[TROVE_TABLE_STACKS] = st.len;
        CHECK_EQ_INT(trove_profile_new(&q), TROVE_OK);
        CHECK_EQ_INT(trove_tables_read_profile(&in, q, &diag), TROVE_OK);
        same_profile(p, q);
        trove_profile_free(q);
        /* a stack id twice; a parent after its child; a frame that is not there */
        v[0][0] = 2;
        write_ints(&st, sn, 3, v, 4, -1, NULL);
        in.buf[TROVE_TABLE_STACKS] = st.ptr, in.len[TROVE_TABLE_STACKS] = st.len;
        expect_profile_error(&in, "each once");
        v[0][0] = 4, v[1][3] = 2;
        write_ints(&st, sn, 3, v, 4, -1, NULL);
        in.buf[TROVE_TABLE_STACKS] = st.ptr, in.len[TROVE_TABLE_STACKS] = st.len;
        expect_profile_error(&in, "parent_id < stack_id");
        v[1][3] = 0, v[2][0] = 9;
        write_ints(&st, sn, 3, v, 4, -1, NULL);
        in.buf[TROVE_TABLE_STACKS] = st.ptr, in.len[TROVE_TABLE_STACKS] = st.len;
        expect_profile_error(&in, "frame_id of the frames table");
        in.buf[TROVE_TABLE_STACKS] = tab[TROVE_TABLE_STACKS].ptr;
        in.len[TROVE_TABLE_STACKS] = tab[TROVE_TABLE_STACKS].len;
        trove_bytes_free(&st);
    }
    /* a sample's stack that is not there; a switch's flags out of range */
    {
        static const char *const sn[4] = {"time_ns", "pid", "tid", "stack_id"};
        static const char *const wn[5] = {"time_ns", "pid", "tid", "out", "preempt"};
        int64_t v[5][4] = {{1, 2}, {7, 7}, {7, 7}, {1, 5}, {0, 0}};
        struct trove_bytes b = {0};
        write_ints(&b, sn, 4, v, 2, -1, NULL);
        in.buf[TROVE_TABLE_SAMPLES] = b.ptr, in.len[TROVE_TABLE_SAMPLES] = b.len;
        expect_profile_error(&in, "stack_id of the stacks table");
        in.buf[TROVE_TABLE_SAMPLES] = tab[TROVE_TABLE_SAMPLES].ptr;
        in.len[TROVE_TABLE_SAMPLES] = tab[TROVE_TABLE_SAMPLES].len;
        v[3][0] = 0, v[3][1] = 0, v[4][1] = 1; /* preempt without out */
        {
            struct trove_bytes w = {0};
            write_ints(&w, wn, 5, v, 2, -1, NULL);
            in.buf[TROVE_TABLE_SWITCHES] = w.ptr, in.len[TROVE_TABLE_SWITCHES] = w.len;
            expect_profile_error(&in, "preempt 1 only with out 1");
            v[3][0] = 2;
            write_ints(&w, wn, 5, v, 2, -1, NULL);
            in.buf[TROVE_TABLE_SWITCHES] = w.ptr, in.len[TROVE_TABLE_SWITCHES] = w.len;
            expect_profile_error(&in, "column out");
            in.buf[TROVE_TABLE_SWITCHES] = tab[TROVE_TABLE_SWITCHES].ptr;
            in.len[TROVE_TABLE_SWITCHES] = tab[TROVE_TABLE_SWITCHES].len;
            trove_bytes_free(&w);
        }
        trove_bytes_free(&b);
    }
    /* frames: rows in another order read the same; an id twice; a function that is not
     * UTF-8; one with a NUL; a module column of integers */
    {
        static const char *const fn[7] = {"frame_id", "module", "function", "file", "line",
                                          "address", "inline_depth"};
        static const char *const mod[4] = {"/lib/libc.so.6", "/bin/app", "/bin/app", "/bin/app"};
        static const char *const fun[4] = {"libc.so.6+0x9a0", "step", "work", "main"};
        static const char *const bad8[4] = {"libc.so.6+0x9a0", "st\xff" "ep", "work", "main"};
        static const char *const nul[4] = {"libc.so.6+0x9a0", "Nstep", "work", "main"};
        static const char *const file[4] = {"", "step.h", "app.c", "app.c"};
        const char *const *strs[7] = {NULL, mod, fun, file, NULL, NULL, NULL};
        int64_t v[7][4] = {{3, 2, 1, 0}, {0}, {0}, {0}, {0, 3, 22, 10}, {0x9a0, 0x1230, 0x1230, 0x1100},
                           {0, 1, 0, 0}};
        struct trove_bytes f = {0};
        write_cols(&f, fn, 7, v, 4, strs);
        in.buf[TROVE_TABLE_FRAMES] = f.ptr, in.len[TROVE_TABLE_FRAMES] = f.len;
        CHECK_EQ_INT(trove_profile_new(&q), TROVE_OK);
        CHECK_EQ_INT(trove_tables_read_profile(&in, q, &diag), TROVE_OK);
        same_profile(p, q);
        trove_profile_free(q);
        v[0][1] = 3;
        write_cols(&f, fn, 7, v, 4, strs);
        in.buf[TROVE_TABLE_FRAMES] = f.ptr, in.len[TROVE_TABLE_FRAMES] = f.len;
        expect_profile_error(&in, "each once");
        v[0][1] = 2;
        strs[2] = bad8;
        write_cols(&f, fn, 7, v, 4, strs);
        in.buf[TROVE_TABLE_FRAMES] = f.ptr, in.len[TROVE_TABLE_FRAMES] = f.len;
        expect_profile_error(&in, "column function row 1 is not valid UTF-8");
        strs[2] = nul;
        write_cols(&f, fn, 7, v, 4, strs);
        in.buf[TROVE_TABLE_FRAMES] = f.ptr, in.len[TROVE_TABLE_FRAMES] = f.len;
        expect_profile_error(&in, "NUL");
        strs[2] = fun;
        strs[1] = NULL;
        write_cols(&f, fn, 7, v, 4, strs);
        in.buf[TROVE_TABLE_FRAMES] = f.ptr, in.len[TROVE_TABLE_FRAMES] = f.len;
        expect_profile_error(&in, "column module is an integer, not a string");
        trove_bytes_free(&f);
    }
    for (int k = 0; k < 4; k++)
        trove_bytes_free(&tab[pt[k]]);
    trove_profile_free(p);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_roundtrips);
    RUN(test_encodings);
    RUN(test_errors);
    RUN(test_golden);
    RUN(test_events_in_pieces);
    RUN(test_events_pieces_errors);
    RUN(test_flows);
    RUN(test_sort_indexes);
    RUN(test_profile_tables);
    return test_done();
}
