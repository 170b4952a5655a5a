/*
 * fuzz_parquet.c: libFuzzer target for trove's Parquet reader (src/columnar/pq_read.c and
 * what it calls). The input is a whole file. A file that opens has every column read; any
 * failure must come with a diag of the same code. A file whose columns all read (and whose
 * values the writer accepts) is written again by trove's writer with the encodings and
 * codec the reader reports (none for SNAPPY, which trove only reads), and that file must
 * read back to the same values (a round-trip oracle through the writer). SNAPPY pages are
 * decoded by trove's own decoder behind trove's checks (src/columnar/snappy.c); the corpus seeds them
 * with a file DuckDB wrote and with the SNAPPY files test_parquet builds, valid and broken.
 * Every file is also read as a bundle's args table (src/columnar/tables_args.c): a failure
 * leaves the tables as they were and says why; rows that read are written again and read
 * back the same.
 */
#include <stdlib.h>
#include <string.h>

#include "trove/attrs.h"
#include "trove/parquet.h"
#include "trove/tables.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ROWS (1u << 16) /* rows read per file, so a tiny file cannot ask for gigabytes */

struct col {
    int type;
    int64_t *iv;
    int32_t *i32;
    struct trove_pq_strings s;
    const char **sp;
    uint32_t *sl;
};

static void free_cols(struct col *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(c[i].iv);
        free(c[i].i32);
        free(c[i].sp);
        free(c[i].sl);
        trove_pq_strings_free(&c[i].s);
    }
}

/* Read every column of f into c; returns the first error. */
static int read_all(struct trove_pq_file *f, struct col *c)
{
    struct trove_diag diag;
    uint64_t n = trove_pq_rows(f);
    int rc = TROVE_OK;
    for (size_t i = 0; i < trove_pq_columns(f) && rc == TROVE_OK; i++) {
        c[i].type = trove_pq_column_type(f, i);
        memset(&diag, 0, sizeof diag);
        if (c[i].type == TROVE_PQ_STRING) {
            rc = trove_pq_read_strings(f, i, &c[i].s, &diag);
        } else {
            c[i].iv = malloc((size_t)(n ? n : 1) * sizeof *c[i].iv);
            if (!c[i].iv)
                return TROVE_ERR_NOMEM;
            rc = trove_pq_read_int(f, i, c[i].iv, &diag);
        }
        if (rc != TROVE_OK && (diag.code != rc || !diag.msg[0]))
            abort();
    }
    return rc;
}

static void rewrite(struct trove_pq_file *f, struct col *c)
{
    size_t nc = trove_pq_columns(f);
    uint64_t n = trove_pq_rows(f);
    struct trove_pq_column_def defs[TROVE_PQ_MAX_COLUMNS];
    struct trove_pq_column_data data[TROVE_PQ_MAX_COLUMNS];
    struct trove_pq_writer *w = NULL;
    struct trove_bytes out = {0};
    struct trove_pq_file *g = NULL;
    struct col back[TROVE_PQ_MAX_COLUMNS];
    int rc, codec;

    memset(data, 0, sizeof data);
    memset(back, 0, sizeof back);
    for (size_t i = 0; i < nc; i++) {
        int enc = trove_pq_column_encoding(f, i);
        defs[i].name = trove_pq_column_name(f, i);
        defs[i].type = c[i].type;
        defs[i].bits = trove_pq_column_bits(f, i);
        defs[i].is_unsigned = trove_pq_column_unsigned(f, i);
        if (enc < 0 || (enc == TROVE_PQ_ENC_DELTA && c[i].type == TROVE_PQ_STRING))
            enc = TROVE_PQ_ENC_PLAIN;
        defs[i].encoding = enc;
        if (c[i].type == TROVE_PQ_STRING) {
            c[i].sp = malloc((size_t)(n ? n : 1) * sizeof *c[i].sp);
            c[i].sl = malloc((size_t)(n ? n : 1) * sizeof *c[i].sl);
            if (!c[i].sp || !c[i].sl)
                return;
            for (uint64_t r = 0; r < n; r++) {
                c[i].sp[r] = (const char *)c[i].s.bytes + c[i].s.off[r];
                c[i].sl[r] = (uint32_t)(c[i].s.off[r + 1] - c[i].s.off[r]);
            }
            data[i].str = c[i].sp;
            data[i].str_len = c[i].sl;
        } else if (c[i].type == TROVE_PQ_INT32) {
            c[i].i32 = malloc((size_t)(n ? n : 1) * sizeof *c[i].i32);
            if (!c[i].i32)
                return;
            for (uint64_t r = 0; r < n; r++)
                c[i].i32[r] = (int32_t)c[i].iv[r];
            data[i].i32 = c[i].i32;
        } else {
            data[i].i64 = c[i].iv;
        }
    }
    codec = trove_pq_codec(f) == TROVE_PQ_CODEC_SNAPPY ? TROVE_PQ_CODEC_NONE : trove_pq_codec(f);
    if (trove_pq_writer_new(defs, nc, codec, 1000, &w) != TROVE_OK)
        abort();
    trove_pq_writer_set_page_bytes(w, 512);
    rc = trove_pq_writer_add(w, data, (size_t)n);
    if (rc == TROVE_ERR_INVALID) /* a value outside its column's logical width */
        goto out;
    if (rc != TROVE_OK || trove_pq_writer_finish(w, &out) != TROVE_OK)
        abort();
    if (trove_pq_open(out.ptr, out.len, &g, NULL) != TROVE_OK || trove_pq_rows(g) != n ||
        trove_pq_columns(g) != nc || read_all(g, back) != TROVE_OK)
        abort();
    for (size_t i = 0; i < nc; i++) {
        if (trove_pq_column_type(g, i) != c[i].type ||
            trove_pq_column_unsigned(g, i) != trove_pq_column_unsigned(f, i) ||
            strcmp(trove_pq_column_name(g, i), trove_pq_column_name(f, i)) != 0)
            abort();
        if (c[i].type == TROVE_PQ_STRING) {
            if (back[i].s.n != n || memcmp(back[i].s.off, c[i].s.off, (size_t)(n + 1) * 8) != 0 ||
                memcmp(back[i].s.bytes, c[i].s.bytes, (size_t)c[i].s.off[n]) != 0)
                abort();
        } else if (n && memcmp(back[i].iv, c[i].iv, (size_t)n * 8) != 0) {
            abort();
        }
    }
out:
    free_cols(back, nc);
    trove_pq_close(g);
    trove_pq_writer_free(w);
    trove_bytes_free(&out);
}

/* The args table's reader: rows (of at most MAX_ROWS events) that read write back and read
 * again to as many rows with the same texts (the writer's bytes the second time). */
static void args_table(const uint8_t *data, size_t size)
{
    struct trove_attrs a, m, a2, m2;
    struct trove_bytes w = {0}, w2 = {0};
    struct trove_diag diag;
    int rc;

    memset(&a, 0, sizeof a);
    memset(&m, 0, sizeof m);
    memset(&a2, 0, sizeof a2);
    memset(&m2, 0, sizeof m2);
    memset(&diag, 0, sizeof diag);
    rc = trove_tables_read_args(data, size, MAX_ROWS, &a, &m, &diag);
    if (rc != TROVE_OK) {
        if (diag.code != rc || !diag.msg[0] || a.n || m.n)
            abort();
        goto out;
    }
    if (trove_tables_write_args(&a, &m, NULL, &w, NULL) != TROVE_OK ||
        trove_tables_read_args(w.ptr, w.len, MAX_ROWS, &a2, &m2, NULL) != TROVE_OK ||
        a2.n != a.n || m2.n != m.n || trove_tables_write_args(&a2, &m2, NULL, &w2, NULL) != TROVE_OK ||
        w.len != w2.len || memcmp(w.ptr, w2.ptr, w.len) != 0)
        abort();
out:
    trove_attrs_free(&a);
    trove_attrs_free(&m);
    trove_attrs_free(&a2);
    trove_attrs_free(&m2);
    trove_bytes_free(&w);
    trove_bytes_free(&w2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_pq_file *f = NULL;
    struct trove_diag diag;
    struct col c[TROVE_PQ_MAX_COLUMNS];
    uint8_t *copy = malloc(size ? size : 1);
    int rc;

    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    memset(&diag, 0, sizeof diag);
    memset(c, 0, sizeof c);
    rc = trove_pq_open(copy, size, &f, &diag);
    if (rc != TROVE_OK) {
        if (diag.code != rc || !diag.msg[0] || f)
            abort();
        goto out;
    }
    if (trove_pq_rows(f) > MAX_ROWS)
        goto out;
    if (read_all(f, c) == TROVE_OK)
        rewrite(f, c);
    args_table(copy, size);
out:
    free_cols(c, TROVE_PQ_MAX_COLUMNS);
    trove_pq_close(f);
    free(copy);
    return 0;
}
