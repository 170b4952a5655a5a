/*
 * test_parquet.c: trove's Parquet reader (include/trove/parquet.h) on files it did not write
 * and on bad input, and the Thrift layer under it: a golden file
 * (tests/vectors/parquet_small.parquet) and damaged copies of it (truncations, bad magic and
 * lengths, a footer re-encoded with bad sizes, counts, types and codecs), hand-made pages
 * that break the format (dictionary index past the dictionary, delta width over 64, a gzip
 * bomb, nulls), and Thrift fields of every type skipped, depth limited. With
 * TROVE_PARQUET_CORPUS=<dir> set, the SNAPPY files built here are written there as seeds of
 * fuzz/fuzz_parquet.c. The writer's round trips are test_parquet_writer.c's.
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

/* ---- golden file and damaged copies ---- */

static void golden(struct trove_bytes *out)
{
    struct trove_pq_column_def defs[4] = {
        {"id", TROVE_PQ_INT64, 64, 0, TROVE_PQ_ENC_DELTA},
        {"code", TROVE_PQ_INT32, 8, 1, TROVE_PQ_ENC_DICT},
        {"name", TROVE_PQ_STRING, 0, 0, TROVE_PQ_ENC_DICT},
        {"v", TROVE_PQ_INT32, 32, 0, TROVE_PQ_ENC_PLAIN}};
    int64_t id[10];
    int32_t code[10], v[10];
    const char *names[10];
    uint32_t nl[10];
    static const char *const pool[3] = {"", "alpha", "b"};
    struct trove_pq_column_data data[4] = {{0}};
    struct trove_pq_writer *w = NULL;
    for (int r = 0; r < 10; r++) {
        id[r] = 1000 + r * r;
        code[r] = 250 + r % 3;
        v[r] = -r * 100000;
        names[r] = pool[r % 3];
        nl[r] = (uint32_t)strlen(names[r]);
    }
    data[0].i64 = id;
    data[1].i32 = code;
    data[2].str = names;
    data[2].str_len = nl;
    data[3].i32 = v;
    CHECK_EQ_INT(trove_pq_writer_new(defs, 4, TROVE_PQ_CODEC_NONE, 6, &w), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_add(w, data, 10), TROVE_OK);
    CHECK_EQ_INT(trove_pq_writer_finish(w, out), TROVE_OK);
    trove_pq_writer_free(w);
}

/* Open an exact-size heap copy and, if it opens, read every column; returns the first
 * error (open or read), with diag checked to carry it. */
static int open_and_read(const uint8_t *buf, size_t len, char *msg_out, size_t msg_cap)
{
    uint8_t *copy = malloc(len ? len : 1);
    struct trove_pq_file *f = NULL;
    struct trove_diag diag = {0};
    int rc;
    memcpy(copy, buf, len);
    rc = trove_pq_open(copy, len, &f, &diag);
    if (rc == TROVE_OK) {
        uint64_t n = trove_pq_rows(f);
        int64_t *v = malloc((n ? n : 1) * sizeof *v);
        for (size_t i = 0; i < trove_pq_columns(f) && rc == TROVE_OK; i++) {
            if (trove_pq_column_type(f, i) == TROVE_PQ_STRING) {
                struct trove_pq_strings s = {0};
                rc = trove_pq_read_strings(f, i, &s, &diag);
                trove_pq_strings_free(&s);
            } else {
                rc = trove_pq_read_int(f, i, v, &diag);
            }
        }
        free(v);
        trove_pq_close(f);
    }
    if (rc != TROVE_OK) {
        CHECK_EQ_INT(diag.code, rc);
        CHECK(diag.msg[0] != 0);
    }
    if (msg_out)
        snprintf(msg_out, msg_cap, "%.255s", diag.msg);
    free(copy);
    return rc;
}

/* With TROVE_PARQUET_CORPUS=<dir> set, write file b there as a seed of fuzz_parquet. */
static void snappy_seed(const char *name, const struct trove_bytes *b)
{
    test_corpus_write("TROVE_PARQUET_CORPUS", name, NULL, 0, b->ptr, b->len);
}

static void expect(const uint8_t *buf, size_t len, int want, const char *needle, const char *what)
{
    char msg[256];
    int rc = open_and_read(buf, len, msg, sizeof msg);
    if (rc != want || (needle && !strstr(msg, needle)))
        fprintf(stderr, "%s: got %d \"%s\", want %d \"%s\"\n", what, rc, msg, want,
                needle ? needle : "");
    CHECK_EQ_INT(rc, want);
    if (needle)
        CHECK(strstr(msg, needle) != NULL);
}

/* Re-encode a file's footer after mut changed it. */
static void refooter(const struct trove_bytes *in, void (*mut)(struct trove__pq_file_meta *),
                     struct trove_bytes *out)
{
    struct trove__pq_file_meta fm;
    uint32_t flen = trove__get_le32(in->ptr + in->len - 8);
    size_t at = in->len - 8 - flen, start;
    uint8_t tail[8];
    CHECK_EQ_INT(footer(in->ptr, in->len, &fm), TROVE_OK);
    mut(&fm);
    out->len = 0;
    trove_bytes_append(out, in->ptr, at);
    start = out->len;
    CHECK_EQ_INT(trove__pq_file_meta_encode(&fm, 1, out), TROVE_OK);
    trove__put_le32(tail, (uint32_t)(out->len - start));
    memcpy(tail + 4, "PAR1", 4);
    trove_bytes_append(out, tail, 8);
    trove__pq_file_meta_free(&fm);
}

static void m_rows_neg(struct trove__pq_file_meta *fm) { fm->num_rows = -1; }
static void m_rows_more(struct trove__pq_file_meta *fm) { fm->num_rows += 1; }
static void m_rg_rows(struct trove__pq_file_meta *fm) { fm->row_groups[0].num_rows = 1; }
static void m_size_huge(struct trove__pq_file_meta *fm)
{
    fm->row_groups[0].columns[1].meta.total_compressed_size = INT64_MAX;
}
static void m_size_neg(struct trove__pq_file_meta *fm)
{
    fm->row_groups[0].columns[1].meta.total_compressed_size = -5;
}
static void m_offset_past(struct trove__pq_file_meta *fm)
{
    fm->row_groups[1].columns[0].meta.data_page_offset = 1 << 30;
}
static void m_lz4(struct trove__pq_file_meta *fm) { fm->row_groups[0].columns[2].meta.codec = 5; }
/* SNAPPY on pages that were never compressed: read as Snappy blocks, they are not ones. */
static void m_snappy(struct trove__pq_file_meta *fm)
{
    fm->row_groups[0].columns[2].meta.codec = TROVE_PQC_SNAPPY;
}
/* Column v becomes DOUBLE in the schema and every chunk (its pages stay INT32 PLAIN). */
static void m_double(struct trove__pq_file_meta *fm)
{
    fm->schema[4].type = TROVE_PQT_DOUBLE;
    for (uint32_t g = 0; g < fm->nrow_groups; g++)
        fm->row_groups[g].columns[3].meta.type = TROVE_PQT_DOUBLE;
}
/* ... and in the schema alone. */
static void m_double_schema(struct trove__pq_file_meta *fm) { fm->schema[4].type = TROVE_PQT_DOUBLE; }
static void m_type_9(struct trove__pq_file_meta *fm) { fm->schema[4].type = 9; }
static void m_nested(struct trove__pq_file_meta *fm) { fm->schema[0].num_children = 2; }
static void m_repeated(struct trove__pq_file_meta *fm) { fm->schema[1].repetition = TROVE_PQR_REPEATED; }
static void m_values(struct trove__pq_file_meta *fm)
{
    fm->row_groups[0].columns[0].meta.num_values = 1000;
}
static void m_chunk_short(struct trove__pq_file_meta *fm)
{
    /* The chunk's range ends inside its first data page. */
    fm->row_groups[0].columns[3].meta.total_compressed_size = 10;
}
static void m_no_dict(struct trove__pq_file_meta *fm)
{
    /* Start the chunk at its first data page: the dictionary is skipped. */
    struct trove__pq_column_meta *m = &fm->row_groups[0].columns[1].meta;
    m->total_compressed_size -= m->data_page_offset - m->dictionary_page_offset;
    m->dictionary_page_offset = -1;
}

static void test_golden(void)
{
    struct trove_bytes g = {0}, b = {0};
    uint8_t *copy;
    char msg[256];
    int fails = 0;

    golden(&g);
    test_check_vector("parquet_small.parquet", g.ptr, g.len);
    CHECK_EQ_INT(open_and_read(g.ptr, g.len, NULL, 0), TROVE_OK);
    {
        struct trove_pq_file *f = NULL;
        int64_t v[10];
        struct trove_pq_strings s = {0};
        CHECK_EQ_INT(trove_pq_open(g.ptr, g.len, &f, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_pq_rows(f), 10);
        CHECK_EQ_INT(trove_pq_read_int(f, 0, v, NULL), TROVE_OK);
        CHECK_EQ_INT(v[9], 1081);
        CHECK_EQ_INT(trove_pq_read_int(f, 1, v, NULL), TROVE_OK);
        CHECK_EQ_INT(v[2], 252);
        CHECK_EQ_INT(trove_pq_read_int(f, 3, v, NULL), TROVE_OK);
        CHECK_EQ_INT(v[9], -900000);
        CHECK_EQ_INT(trove_pq_read_strings(f, 2, &s, NULL), TROVE_OK);
        CHECK(s.n == 10 && s.off[2] - s.off[1] == 5 && memcmp(s.bytes + s.off[1], "alpha", 5) == 0);
        CHECK(s.off[1] == s.off[0]);
        CHECK_EQ_INT(trove_pq_column_encoding(f, 0), TROVE_PQ_ENC_DELTA);
        CHECK_EQ_INT(trove_pq_column_encoding(f, 1), TROVE_PQ_ENC_DICT);
        CHECK_EQ_INT(trove_pq_column_encoding(f, 3), TROVE_PQ_ENC_PLAIN);
        CHECK_EQ_INT(trove_pq_read_int(f, 9, v, NULL), TROVE_ERR_INVALID);
        trove_pq_strings_free(&s);
        trove_pq_close(f);
    }
    /* Every truncation fails cleanly. */
    for (size_t k = 0; k < g.len; k++)
        fails += open_and_read(g.ptr, k, NULL, 0) != TROVE_OK;
    CHECK_EQ_INT(fails, (int)g.len);
    expect(g.ptr, 5, TROVE_ERR_TRUNCATED, NULL, "5 bytes");
    copy = malloc(g.len);
    memcpy(copy, g.ptr, g.len);
    copy[0] = 'Q';
    expect(copy, g.len, TROVE_ERR_MAGIC, "magic", "bad magic at the start");
    memcpy(copy, g.ptr, g.len);
    copy[g.len - 1] = '0';
    expect(copy, g.len, TROVE_ERR_MAGIC, "magic", "bad magic at the end");
    memcpy(copy, g.ptr, g.len);
    trove__put_le32(copy + g.len - 8, (uint32_t)g.len);
    expect(copy, g.len, TROVE_ERR_TRUNCATED, "footer length", "footer length past the file");
    trove__put_le32(copy + g.len - 8, 0xFFFFFFF0u);
    expect(copy, g.len, TROVE_ERR_LIMIT, "footer", "huge footer length");
    trove__put_le32(copy + g.len - 8, 0);
    expect(copy, g.len, TROVE_ERR_TRUNCATED, NULL, "empty footer");
    /* Thrift: FileMetaData.version (field 1, i32: 0x15) as an i64 or as binary. */
    memcpy(copy, g.ptr, g.len);
    {
        size_t at = g.len - 8 - trove__get_le32(g.ptr + g.len - 8);
        CHECK_EQ_INT(copy[at], 0x15);
        copy[at] = 0x16;
        expect(copy, g.len, TROVE_ERR_CORRUPT, "version", "version as i64");
        copy[at] = 0x18;
        expect(copy, g.len, TROVE_ERR_CORRUPT, "version", "version as binary");
        copy[at] = 0x1D; /* wire type 13: unknown */
        expect(copy, g.len, TROVE_ERR_CORRUPT, "wire type", "unknown wire type");
        /* The schema list (field 2: 0x19) as a struct. */
        memcpy(copy, g.ptr, g.len);
        CHECK_EQ_INT(copy[at + 2], 0x19);
        copy[at + 2] = 0x1C;
        expect(copy, g.len, TROVE_ERR_CORRUPT, "schema", "schema as a struct");
    }
    /* A page header's field of the wrong type: the first data page of column 0. */
    memcpy(copy, g.ptr, g.len);
    CHECK_EQ_INT(copy[4], 0x15); /* PageHeader.type, i32 */
    copy[4] = 0x16;
    expect(copy, g.len, TROVE_ERR_CORRUPT, "PageHeader.type", "page type as i64");
    free(copy);

    refooter(&g, m_rows_neg, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "negative", "negative num_rows");
    refooter(&g, m_rows_more, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "rows", "num_rows disagrees");
    refooter(&g, m_rg_rows, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, NULL, "row group num_rows");
    refooter(&g, m_size_huge, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "outside", "huge total_compressed_size");
    refooter(&g, m_size_neg, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "negative", "negative total_compressed_size");
    refooter(&g, m_offset_past, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "outside", "data page past the end");
    refooter(&g, m_lz4, &b);
    expect(b.ptr, b.len, TROVE_ERR_FORMAT, "codec LZ4 is not supported", "lz4 codec");
    refooter(&g, m_snappy, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "snappy: ", "uncompressed pages called snappy");
    refooter(&g, m_double, &b);
    expect(b.ptr, b.len, TROVE_ERR_FORMAT, "column v has type DOUBLE, which trove does not read",
           "double column");
    {
        /* A column of another type opens and is listed; the others read; it does not. */
        struct trove_pq_file *f = NULL;
        CHECK_EQ_INT(trove_pq_open(b.ptr, b.len, &f, NULL), TROVE_OK);
        if (f) {
            int64_t v[10];
            struct trove_pq_strings sv = {0};
            struct trove_pq_cursor *cur = NULL;
            struct trove_diag d;
            CHECK_EQ_INT(trove_pq_columns(f), 4);
            CHECK_EQ_INT(trove_pq_column_type(f, 3), TROVE_PQ_OTHER);
            CHECK_EQ_INT(trove_pq_column_bits(f, 3), 0);
            CHECK_EQ_INT(trove_pq_find(f, "v"), 3);
            CHECK_EQ_INT(trove_pq_read_int(f, 0, v, NULL), TROVE_OK);
            CHECK(v[3] == 1009);
            CHECK_EQ_INT(trove_pq_read_int(f, 3, v, &d), TROVE_ERR_FORMAT);
            CHECK(strstr(d.msg, "DOUBLE") != NULL);
            CHECK_EQ_INT(trove_pq_read_strings(f, 3, &sv, NULL), TROVE_ERR_FORMAT);
            CHECK_EQ_INT(trove_pq_cursor_new(f, 3, &cur, NULL), TROVE_ERR_FORMAT);
            CHECK(cur == NULL);
            trove_pq_close(f);
        }
    }
    refooter(&g, m_double_schema, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "chunk of type INT32 in a DOUBLE column",
           "double schema, int32 chunks");
    refooter(&g, m_type_9, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "physical type 9", "type 9");
    refooter(&g, m_nested, &b);
    expect(b.ptr, b.len, TROVE_ERR_FORMAT, NULL, "nested schema");
    refooter(&g, m_repeated, &b);
    expect(b.ptr, b.len, TROVE_ERR_FORMAT, "repeated", "repeated column");
    refooter(&g, m_values, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "values", "num_values disagrees");
    refooter(&g, m_chunk_short, &b);
    expect(b.ptr, b.len, TROVE_ERR_TRUNCATED, "row group 0, page 0", "page past its chunk");
    refooter(&g, m_no_dict, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "without a dictionary", "dictionary skipped");
    (void)msg;
    trove_bytes_free(&b);
    trove_bytes_free(&g);
}

/* ---- hand-made single-column files ---- */

struct tpage {
    struct trove__pq_page_header h;
    const uint8_t *body;
    size_t len;
};

static void make_file(int ptype, int repetition, int codec, const struct tpage *pages, size_t np,
                      int64_t nrows, struct trove_bytes *out)
{
    struct trove__pq_schema schema[2];
    struct trove__pq_column_chunk cc;
    struct trove__pq_row_group rg;
    struct trove__pq_file_meta fm;
    size_t start, at;
    uint8_t tail[8];

    out->len = 0;
    trove_bytes_append(out, "PAR1", 4);
    memset(&cc, 0, sizeof cc);
    cc.has_meta = 1;
    cc.meta.type = ptype;
    cc.meta.codec = codec;
    cc.meta.nencodings = 1;
    cc.meta.path = (const uint8_t *)"c";
    cc.meta.path_len = 1;
    cc.meta.npath = 1;
    cc.meta.num_values = nrows;
    cc.meta.dictionary_page_offset = -1;
    cc.meta.data_page_offset = 4;
    for (size_t p = 0; p < np; p++) {
        struct trove__pq_page_header h = pages[p].h;
        if (h.type == TROVE_PQP_DICTIONARY_PAGE && p == 0)
            cc.meta.dictionary_page_offset = 4;
        if (p == 1 && cc.meta.dictionary_page_offset == 4)
            cc.meta.data_page_offset = (int64_t)out->len;
        if (h.compressed_page_size == 0 && pages[p].len)
            h.compressed_page_size = (int32_t)pages[p].len;
        if (h.uncompressed_page_size == 0 && codec == 0)
            h.uncompressed_page_size = h.compressed_page_size;
        if (h.dict_sorted == 0)
            h.dict_sorted = -1;
        trove__pq_page_header_encode(&h, out);
        trove_bytes_append(out, pages[p].body, pages[p].len);
    }
    cc.meta.total_compressed_size = cc.meta.total_uncompressed_size = (int64_t)out->len - 4;
    memset(&rg, 0, sizeof rg);
    rg.columns = &cc;
    rg.ncolumns = 1;
    rg.num_rows = nrows;
    rg.file_offset = rg.total_compressed_size = -1;
    rg.ordinal = -1;
    memset(schema, 0, sizeof schema);
    schema[0].type = schema[0].repetition = schema[0].converted_type = -1;
    schema[0].name = (const uint8_t *)"schema";
    schema[0].name_len = 6;
    schema[0].num_children = 1;
    schema[1].type = ptype;
    schema[1].repetition = repetition;
    schema[1].name = (const uint8_t *)"c";
    schema[1].name_len = 1;
    schema[1].num_children = -1;
    schema[1].converted_type = -1;
    memset(&fm, 0, sizeof fm);
    fm.version = 2;
    fm.schema = schema;
    fm.nschema = 2;
    fm.num_rows = nrows;
    fm.row_groups = &rg;
    fm.nrow_groups = 1;
    start = out->len;
    CHECK_EQ_INT(trove__pq_file_meta_encode(&fm, 0, out), TROVE_OK);
    at = out->len - start;
    trove__put_le32(tail, (uint32_t)at);
    memcpy(tail + 4, "PAR1", 4);
    trove_bytes_append(out, tail, 8);
}

static struct tpage page(int type, int enc, int32_t nvalues, const void *body, size_t len)
{
    struct tpage p;
    memset(&p, 0, sizeof p);
    p.h.type = type;
    p.h.encoding = enc;
    p.h.num_values = nvalues;
    p.h.def_encoding = p.h.rep_encoding = TROVE_PQE_RLE;
    p.h.is_compressed = 1;
    p.body = body;
    p.len = len;
    return p;
}

static void test_pages(void)
{
    struct trove_bytes b = {0};
    uint8_t dict[8], idx[4], plain[12], lv[32];
    struct tpage pg[3];
    struct trove_pq_file *f = NULL;
    int64_t v[8];

    trove__put_le32(dict, 7);
    trove__put_le32(dict + 4, (uint32_t)-9);
    /* PLAIN_DICTIONARY (the old name) reads; bit width 1, a run of 3 ones. */
    idx[0] = 1;
    idx[1] = 3 << 1;
    idx[2] = 1;
    pg[0] = page(TROVE_PQP_DICTIONARY_PAGE, TROVE_PQE_PLAIN_DICTIONARY, 2, dict, 8);
    pg[1] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN_DICTIONARY, 3, idx, 3);
    make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, 0, pg, 2, 3, &b);
    CHECK_EQ_INT(trove_pq_open(b.ptr, b.len, &f, NULL), TROVE_OK);
    if (f) {
        CHECK_EQ_INT(trove_pq_read_int(f, 0, v, NULL), TROVE_OK);
        CHECK(v[0] == -9 && v[2] == -9);
        CHECK_EQ_INT(trove_pq_column_encoding(f, 0), TROVE_PQ_ENC_PLAIN); /* as listed */
        trove_pq_close(f);
    }
    /* Index 3 past a dictionary of 2 (bit width 2). */
    idx[0] = 2;
    idx[2] = 3;
    pg[1] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_RLE_DICTIONARY, 3, idx, 3);
    make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, 0, pg, 2, 3, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "past the dictionary", "dictionary index");
    /* Bit width 33. */
    idx[0] = 33;
    make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, 0, pg, 2, 3, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "bit width", "bit width 33");
    /* A dictionary page after a data page. */
    trove__put_le32(plain, 1);
    pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 1, plain, 4);
    pg[1] = page(TROVE_PQP_DICTIONARY_PAGE, TROVE_PQE_PLAIN, 2, dict, 8);
    pg[2] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 1, plain, 4);
    make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, 0, pg, 3, 2, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "page 1", "late dictionary");
    /* Delta: a miniblock width of 65 in an INT64 column. */
    {
        static const uint8_t delta[] = {0x80, 0x01, 0x04, 0x02, 0x00, 0x00, 65, 0, 0, 0,
                                        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
        pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_DELTA_BINARY_PACKED, 2, delta, sizeof delta);
        make_file(TROVE_PQT_INT64, TROVE_PQR_REQUIRED, 0, pg, 1, 2, &b);
        expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "column c, row group 0, page 0", "delta width 65");
    }
    /* Page sizes: negative, huge, past the chunk; counts past the row group. */
    pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 1, plain, 4);
    pg[0].h.compressed_page_size = -4;
    make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, 0, pg, 1, 1, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "negative", "negative page size");
    pg[0].h.compressed_page_size = 4;
    pg[0].h.uncompressed_page_size = INT32_MAX;
    make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, TROVE_PQC_ZSTD, pg, 1, 1, &b);
    expect(b.ptr, b.len, TROVE_ERR_BOMB, "limit", "huge page");
    pg[0].h.uncompressed_page_size = 0;
    pg[0].h.compressed_page_size = 40;
    make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, 0, pg, 1, 1, &b);
    expect(b.ptr, b.len, TROVE_ERR_TRUNCATED, "past the end", "page past the chunk");
    pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 5, plain, 4);
    make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, 0, pg, 1, 1, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "values past", "page count over the rows");
    pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 1, plain, 4);
    make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, 0, pg, 1, 2, &b);
    expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "ends after", "chunk short of values");
    pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 3, plain, 4);
    make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, 0, pg, 1, 3, &b);
    expect(b.ptr, b.len, TROVE_ERR_TRUNCATED, "PLAIN", "plain values short");
    pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_BYTE_STREAM_SPLIT, 1, plain, 4);
    make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, 0, pg, 1, 1, &b);
    expect(b.ptr, b.len, TROVE_ERR_FORMAT, "BYTE_STREAM_SPLIT", "unsupported encoding");
    /* A gzip page that inflates past its declared size. */
    {
        uint8_t raw[400], gz[600];
        z_stream zs;
        memset(raw, 'x', sizeof raw);
        memset(&zs, 0, sizeof zs);
        deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
        zs.next_in = raw;
        zs.avail_in = sizeof raw;
        zs.next_out = gz;
        zs.avail_out = sizeof gz;
        CHECK_EQ_INT(deflate(&zs, Z_FINISH), Z_STREAM_END);
        pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 25, gz, zs.total_out);
        pg[0].h.uncompressed_page_size = 100;
        make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, TROVE_PQC_GZIP, pg, 1, 25, &b);
        expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "inflates past", "gzip bomb");
        /* Declared right: reads. */
        pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 100, gz, zs.total_out);
        pg[0].h.uncompressed_page_size = 400;
        make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, TROVE_PQC_GZIP, pg, 1, 100, &b);
        expect(b.ptr, b.len, TROVE_OK, NULL, "gzip page");
        /* Declared too large. */
        pg[0].h.uncompressed_page_size = 500;
        expect(b.ptr, b.len, TROVE_OK, NULL, "gzip page (unchanged file)");
        make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, TROVE_PQC_GZIP, pg, 1, 100, &b);
        expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "declared", "gzip short");
        deflateEnd(&zs);
    }
    /* zstd: a frame whose content size disagrees with the header. */
    {
        uint8_t raw[64], zc[256];
        size_t zn;
        memset(raw, 3, sizeof raw);
        zn = ZSTD_compress(zc, sizeof zc, raw, sizeof raw, 1);
        pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 8, zc, zn);
        pg[0].h.uncompressed_page_size = 32;
        make_file(TROVE_PQT_INT64, TROVE_PQR_REQUIRED, TROVE_PQC_ZSTD, pg, 1, 8, &b);
        expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "zstd", "zstd size mismatch");
        pg[0].h.uncompressed_page_size = 64;
        make_file(TROVE_PQT_INT64, TROVE_PQR_REQUIRED, TROVE_PQC_ZSTD, pg, 1, 8, &b);
        expect(b.ptr, b.len, TROVE_OK, NULL, "zstd page");
    }
    /* Optional column, v1: 4-byte level length, levels, values. No nulls reads; a null
     * is refused. */
    {
        size_t n = 0;
        trove__put_le32(lv, 2);
        lv[4] = 3 << 1;
        lv[5] = 1;
        trove__put_le32(lv + 6, 10);
        trove__put_le32(lv + 10, 20);
        trove__put_le32(lv + 14, 30);
        n = 18;
        pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 3, lv, n);
        make_file(TROVE_PQT_INT32, TROVE_PQR_OPTIONAL, 0, pg, 1, 3, &b);
        CHECK_EQ_INT(trove_pq_open(b.ptr, b.len, &f, NULL), TROVE_OK);
        if (f) {
            CHECK_EQ_INT(trove_pq_read_int(f, 0, v, NULL), TROVE_OK);
            CHECK(v[0] == 10 && v[1] == 20 && v[2] == 30);
            trove_pq_close(f);
        }
        lv[5] = 0;
        make_file(TROVE_PQT_INT32, TROVE_PQR_OPTIONAL, 0, pg, 1, 3, &b);
        expect(b.ptr, b.len, TROVE_ERR_FORMAT, "nulls are not supported", "v1 null");
        trove__put_le32(lv, 200);
        make_file(TROVE_PQT_INT32, TROVE_PQR_OPTIONAL, 0, pg, 1, 3, &b);
        expect(b.ptr, b.len, TROVE_ERR_TRUNCATED, "definition levels", "level length");
    }
    /* SNAPPY (DuckDB's default, decoded by libsnappy): a dictionary page and a data page,
     * each a Snappy block built by hand; the data page's values are 8 fives and a seven,
     * PLAIN: a 4-byte literal, a 2-byte-offset copy of 28 from 4 back, and a 4-byte
     * literal. Each file is also a seed of fuzz/fuzz_parquet.c (TROVE_PARQUET_CORPUS). */
    {
        static const uint8_t sdict[] = {0x08, 0x1c, 7, 0, 0, 0, 0xf7, 0xff, 0xff, 0xff};
        static const uint8_t sdata[] = {0x24, 0x0c, 5, 0, 0, 0, 0x6e, 0x04, 0x00,
                                        0x0c, 7,    0, 0, 0};
        static const uint8_t sidx[] = {0x03, 0x08, 0x01, 0x03, 0x07};
        uint8_t bad[sizeof sdata];
        pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 9, sdata, sizeof sdata);
        pg[0].h.uncompressed_page_size = 36;
        make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, TROVE_PQC_SNAPPY, pg, 1, 9, &b);
        snappy_seed("snappy_plain.parquet", &b);
        CHECK_EQ_INT(trove_pq_open(b.ptr, b.len, &f, NULL), TROVE_OK);
        if (f) {
            int64_t w[9];
            CHECK_EQ_INT(trove_pq_codec(f), TROVE_PQ_CODEC_SNAPPY);
            CHECK_EQ_INT(trove_pq_read_int(f, 0, w, NULL), TROVE_OK);
            for (int i = 0; i < 9; i++)
                CHECK_EQ_INT(w[i], i < 8 ? 5 : 7);
            trove_pq_close(f);
        }
        /* Dictionary {7, -9}, then indices 1, 1, 1, 0: width 1, one bit-packed group
         * (header 0x03, bits 0111), as a 3-byte literal. */
        pg[0] = page(TROVE_PQP_DICTIONARY_PAGE, TROVE_PQE_PLAIN, 2, sdict, sizeof sdict);
        pg[0].h.uncompressed_page_size = 8;
        pg[1] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_RLE_DICTIONARY, 4, sidx, sizeof sidx);
        pg[1].h.uncompressed_page_size = 3;
        make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, TROVE_PQC_SNAPPY, pg, 2, 4, &b);
        snappy_seed("snappy_dict.parquet", &b);
        CHECK_EQ_INT(trove_pq_open(b.ptr, b.len, &f, NULL), TROVE_OK);
        if (f) {
            CHECK_EQ_INT(trove_pq_read_int(f, 0, v, NULL), TROVE_OK);
            CHECK(v[0] == -9 && v[1] == -9 && v[2] == -9 && v[3] == 7);
            trove_pq_close(f);
        }
        /* The copy reaches 5 back with 4 bytes decoded: libsnappy refuses the block. */
        memcpy(bad, sdata, sizeof bad);
        bad[7] = 5;
        pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 9, bad, sizeof bad);
        pg[0].h.uncompressed_page_size = 36;
        make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, TROVE_PQC_SNAPPY, pg, 1, 9, &b);
        snappy_seed("broken_snappy_copy.parquet", &b);
        expect(b.ptr, b.len, TROVE_ERR_CORRUPT,
               "snappy: the block of 14 bytes does not decode to its 36", "snappy offset");
        pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 9, sdata, sizeof sdata);
        pg[0].h.uncompressed_page_size = 35;
        make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, TROVE_PQC_SNAPPY, pg, 1, 9, &b);
        snappy_seed("broken_snappy_size.parquet", &b);
        expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "a block of 36 bytes where 35 are declared",
               "snappy size");
        /* A block that declares 4 GiB - 1 in a page that declares 36: refused on its
         * length alone, with only the page's 36 bytes allocated. */
        memcpy(bad, sdata, sizeof bad);
        memcpy(bad, "\xff\xff\xff\xff\x0f", 5);
        pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 9, bad, sizeof bad);
        pg[0].h.uncompressed_page_size = 36;
        make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, TROVE_PQC_SNAPPY, pg, 1, 9, &b);
        snappy_seed("broken_snappy_4gib.parquet", &b);
        expect(b.ptr, b.len, TROVE_ERR_CORRUPT,
               "snappy: a block of 4294967295 bytes where 36 are declared", "snappy 4 GiB");
        /* A page that declares more than TROVE_PQ_MAX_PAGE: refused before anything is
         * allocated for it, with every allocation failing from the read on. */
        pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 9, sdata, sizeof sdata);
        pg[0].h.uncompressed_page_size = INT32_MAX;
        make_file(TROVE_PQT_INT32, TROVE_PQR_REQUIRED, TROVE_PQC_SNAPPY, pg, 1, 9, &b);
        CHECK_EQ_INT(trove_pq_open(b.ptr, b.len, &f, NULL), TROVE_OK);
        if (f) {
            int64_t w[9];
            struct trove_diag d;
            trove_testing_alloc_fail_at(1, 1);
            CHECK_EQ_INT(trove_pq_read_int(f, 0, w, &d), TROVE_ERR_BOMB);
            trove_testing_alloc_fail_at(0, 0);
            CHECK(strstr(d.msg, "over the limit") != NULL);
            trove_pq_close(f);
        }
    }
    /* A BOOLEAN column in LZ4 pages: neither is read, so the file opens; reading says so. */
    {
        static const uint8_t bits[] = {0x05};
        struct trove_diag d;
        pg[0] = page(TROVE_PQP_DATA_PAGE, TROVE_PQE_PLAIN, 3, bits, sizeof bits);
        make_file(TROVE_PQT_BOOLEAN, TROVE_PQR_REQUIRED, 5, pg, 1, 3, &b);
        CHECK_EQ_INT(trove_pq_open(b.ptr, b.len, &f, NULL), TROVE_OK);
        if (f) {
            CHECK_EQ_INT(trove_pq_rows(f), 3);
            CHECK_EQ_INT(trove_pq_column_type(f, 0), TROVE_PQ_OTHER);
            CHECK_EQ_INT(trove_pq_read_int(f, 0, v, &d), TROVE_ERR_FORMAT);
            CHECK(strstr(d.msg, "column c has type BOOLEAN") != NULL);
            trove_pq_close(f);
        }
    }
    /* Data page v2, optional, zstd values after uncompressed levels; strings PLAIN. */
    {
        uint8_t body[64], vals[32], zc[128];
        size_t zn, vn = 0;
        const char *s[2] = {"hi", ""};
        struct trove_bytes sv = {0};
        struct trove_pq_strings out = {0};
        uint32_t sl[2] = {2, 0};
        body[0] = 2 << 1; /* levels: a run of 2 ones */
        body[1] = 1;
        CHECK_EQ_INT(trove__pq_plain_encode_strings(s, sl, 2, &sv), TROVE_OK);
        memcpy(vals, sv.ptr, sv.len);
        vn = sv.len;
        zn = ZSTD_compress(zc, sizeof zc, vals, vn, 1);
        memcpy(body + 2, zc, zn);
        pg[0] = page(TROVE_PQP_DATA_PAGE_V2, TROVE_PQE_PLAIN, 2, body, 2 + zn);
        pg[0].h.num_rows = 2;
        pg[0].h.def_len = 2;
        pg[0].h.uncompressed_page_size = (int32_t)(2 + vn);
        make_file(TROVE_PQT_BYTE_ARRAY, TROVE_PQR_OPTIONAL, TROVE_PQC_ZSTD, pg, 1, 2, &b);
        CHECK_EQ_INT(trove_pq_open(b.ptr, b.len, &f, NULL), TROVE_OK);
        if (f) {
            CHECK_EQ_INT(trove_pq_read_strings(f, 0, &out, NULL), TROVE_OK);
            CHECK(out.n == 2 && out.off[1] == 2 && out.off[2] == 2 &&
                  memcmp(out.bytes, "hi", 2) == 0);
            trove_pq_close(f);
        }
        pg[0].h.num_nulls = 1;
        make_file(TROVE_PQT_BYTE_ARRAY, TROVE_PQR_OPTIONAL, TROVE_PQC_ZSTD, pg, 1, 2, &b);
        expect(b.ptr, b.len, TROVE_ERR_FORMAT, "nulls are not supported", "v2 nulls");
        pg[0].h.num_nulls = 0;
        pg[0].h.def_len = 100;
        make_file(TROVE_PQT_BYTE_ARRAY, TROVE_PQR_OPTIONAL, TROVE_PQC_ZSTD, pg, 1, 2, &b);
        expect(b.ptr, b.len, TROVE_ERR_CORRUPT, "levels", "v2 level length");
        /* Uncompressed values in a zstd file (is_compressed false). */
        memcpy(body + 2, vals, vn);
        pg[0] = page(TROVE_PQP_DATA_PAGE_V2, TROVE_PQE_PLAIN, 2, body, 2 + vn);
        pg[0].h.def_len = 2;
        pg[0].h.is_compressed = 0;
        pg[0].h.uncompressed_page_size = (int32_t)(2 + vn);
        make_file(TROVE_PQT_BYTE_ARRAY, TROVE_PQR_OPTIONAL, TROVE_PQC_ZSTD, pg, 1, 2, &b);
        expect(b.ptr, b.len, TROVE_OK, NULL, "v2 uncompressed values");
        /* A string longer than its page. */
        trove__put_le32(body + 2, 1000);
        make_file(TROVE_PQT_BYTE_ARRAY, TROVE_PQR_OPTIONAL, TROVE_PQC_ZSTD, pg, 1, 2, &b);
        expect(b.ptr, b.len, TROVE_ERR_TRUNCATED, NULL, "string past the page");
        trove_pq_strings_free(&out);
        trove_bytes_free(&sv);
    }
    trove_bytes_free(&b);
}

/* The Thrift layer alone: unknown fields of every type are skipped, depth is limited. */
static void test_thrift(void)
{
    struct trove_bytes b = {0};
    struct trove__tw w;
    struct trove__pq_page_header h;
    size_t used;
    uint8_t deep[80];
    int rc;

    /* A page header with extra fields of every type, and a long field id jump. */
    trove__tw_init(&w, &b);
    trove__tw_i32(&w, 1, TROVE_PQP_DATA_PAGE);
    trove__tw_i32(&w, 2, 4);
    trove__tw_i32(&w, 3, 4);
    trove__tw_struct_begin(&w, 5);
    trove__tw_i32(&w, 1, 1);
    trove__tw_i32(&w, 2, 0);
    trove__tw_i32(&w, 3, 3);
    trove__tw_i32(&w, 4, 3);
    trove__tw_struct_begin(&w, 5); /* statistics: skipped as unknown-to-us */
    trove__tw_binary(&w, 5, "abc", 3);
    trove__tw_struct_end(&w);
    trove__tw_struct_end(&w);
    trove__tw_bool(&w, 40, 1);
    trove__tw_i8(&w, 41, 7);
    trove__tw_i16(&w, 42, -300);
    trove__tw_i64(&w, 100, INT64_MIN);
    trove__tw_list_begin(&w, 101, TROVE_TT_BINARY, 20);
    for (int i = 0; i < 20; i++)
        trove__tw_elem_binary(&w, "x", 1);
    CHECK_EQ_INT(trove__tw_finish(&w), TROVE_OK);
    /* A double, a list of bools and a map, appended by hand before the stop byte. */
    b.len--;
    {
        static const uint8_t extra[] = {0x17, 1, 2, 3, 4, 5, 6, 7, 8,       /* 102: double */
                                        0x19, 0x31, 1, 2, 0,               /* 103: bools */
                                        0x1B, 0x02, 0x86, 0x02, 'k', 2, 0x01, 0x00, 0x04, /* map */
                                        0x00};
        trove_bytes_append(&b, extra, sizeof extra);
    }
    {
        struct trove_diag d = {0};
        rc = trove__pq_page_header_decode(b.ptr, b.len, 0, &h, &used, &d);
        if (rc != TROVE_OK)
            fprintf(stderr, "thrift: %s at %llu\n", d.msg, (unsigned long long)d.offset);
    }
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK_EQ_INT(used, b.len);
    CHECK_EQ_INT(h.num_values, 1);
    CHECK_EQ_INT(h.compressed_page_size, 4);
    /* Every truncation fails. */
    for (size_t k = 0; k < b.len; k++)
        CHECK(trove__pq_page_header_decode(b.ptr, k, 0, &h, &used, NULL) != TROVE_OK);
    /* Nesting past the limit. */
    for (size_t i = 0; i < sizeof deep; i++)
        deep[i] = 0x9C; /* field +9 (unknown), struct */
    {
        struct trove_diag d = {0};
        CHECK_EQ_INT(trove__pq_page_header_decode(deep, sizeof deep, 0, &h, &used, &d),
                     TROVE_ERR_LIMIT);
        CHECK(strstr(d.msg, "nested") != NULL);
    }
    /* A list claiming more elements than bytes. */
    {
        static const uint8_t lst[] = {0x29, 0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0};
        struct trove__pq_file_meta fm;
        CHECK_EQ_INT(trove__pq_file_meta_decode(lst, sizeof lst, 0, &fm, NULL),
                     TROVE_ERR_TRUNCATED);
    }
    /* A missing required field. */
    {
        static const uint8_t nover[] = {0x00};
        struct trove__pq_file_meta fm;
        struct trove_diag d = {0};
        CHECK_EQ_INT(trove__pq_file_meta_decode(nover, 1, 0, &fm, &d), TROVE_ERR_CORRUPT);
        CHECK(strstr(d.msg, "version") != NULL);
    }
    trove_bytes_free(&b);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_thrift);
    RUN(test_golden);
    RUN(test_pages);
    return test_done();
}
