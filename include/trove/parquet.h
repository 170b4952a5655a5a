/*
 * trove/parquet.h: trove's own Parquet writer and reader, limited to what a capture needs
 * (docs/formats/bundle.md has the subset, the tables and the bundle around them).
 *
 * Columns are required (no nulls, no nesting) and of three kinds: INT32 and INT64 (signed,
 * or unsigned through the logical type INTEGER(bits, false)) and STRING (BYTE_ARRAY with
 * the logical type STRING). The writer encodes each column PLAIN, RLE_DICTIONARY (a PLAIN
 * dictionary page and RLE/bit-packed hybrid indices; it falls back to PLAIN for a column
 * chunk whose dictionary would be too large) or DELTA_BINARY_PACKED (integers), in data
 * pages v1, with min/max statistics and column orders, uncompressed or through zstd or
 * gzip, in row groups of a configurable number of rows. The reader takes that and what
 * DuckDB writes, by default (Snappy, which libsnappy decodes) or with zstd, gzip or no
 * codec: PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY and DELTA_BINARY_PACKED in data pages v1
 * and v2.
 *
 * The writer makes a file in memory, or hands it to a sink a row group at a time
 * (trove_pq_writer_set_sink) so that it never holds more than one row group's bytes; the
 * bytes are the same. The reader takes whole buffers in memory, and checks every length and
 * count from the file against the buffer and against the limits below before it allocates
 * or reads.
 */
#ifndef TROVE_PARQUET_H
#define TROVE_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

#ifdef __cplusplus
extern "C" {
#endif

enum trove_pq_type {
    TROVE_PQ_INT32 = 1, /* Parquet INT32 */
    TROVE_PQ_INT64 = 2, /* Parquet INT64 */
    TROVE_PQ_STRING = 6, /* Parquet BYTE_ARRAY, logical type STRING (UTF-8) */
    TROVE_PQ_OTHER = 7   /* read only: a flat column of another physical type (BOOLEAN,
                          * INT96, FLOAT, DOUBLE, FIXED_LEN_BYTE_ARRAY), such as one added
                          * to a table in DuckDB; listed, checked, never decoded */
};

enum trove_pq_encoding {
    TROVE_PQ_ENC_PLAIN = 0,
    TROVE_PQ_ENC_DICT = 1,  /* RLE_DICTIONARY */
    TROVE_PQ_ENC_DELTA = 2  /* DELTA_BINARY_PACKED (integers only) */
};

enum trove_pq_codec {
    TROVE_PQ_CODEC_NONE = 0,
    TROVE_PQ_CODEC_ZSTD = 1,
    TROVE_PQ_CODEC_GZIP = 2,
    TROVE_PQ_CODEC_SNAPPY = 3 /* read only (DuckDB's default): the writer refuses it */
};

#define TROVE_PQ_MAX_COLUMNS 64u
#define TROVE_PQ_MAX_NAME 64u            /* bytes of a column name */
#define TROVE_PQ_MAX_ROWS (1ull << 32)   /* rows in a file */
#define TROVE_PQ_MAX_FOOTER (64u << 20)  /* footer bytes */
#define TROVE_PQ_MAX_PAGE (256u << 20)   /* a page, compressed or not */
#define TROVE_PQ_MAX_STRING (16u << 20)  /* one string value */
#define TROVE_PQ_DEFAULT_ROW_GROUP 1048576u

/* One column of a table to write. */
struct trove_pq_column_def {
    const char *name;  /* 1 .. TROVE_PQ_MAX_NAME bytes, unique within the table */
    int type;          /* enum trove_pq_type */
    int bits;          /* integers: the logical type's width, 8, 16, 32 or 64 (<= physical) */
    int is_unsigned;   /* integers: logical INTEGER(bits, false) */
    int encoding;      /* enum trove_pq_encoding; DELTA only for integers */
};

/* One column's values for rows [0, nrows) of a trove_pq_writer_add call. Integers of an
 * unsigned column are their bit patterns in the signed physical type. */
struct trove_pq_column_data {
    const int32_t *i32;       /* TROVE_PQ_INT32 */
    const int64_t *i64;       /* TROVE_PQ_INT64 */
    const char *const *str;   /* TROVE_PQ_STRING: pointers ... */
    const uint32_t *str_len;  /* ... and lengths (each <= TROVE_PQ_MAX_STRING) */
};

struct trove_pq_writer;

/* A writer for a table of ncols (1 .. TROVE_PQ_MAX_COLUMNS) columns. row_group_rows 0 means
 * TROVE_PQ_DEFAULT_ROW_GROUP. The definitions are copied. Errors: TROVE_ERR_INVALID,
 * TROVE_ERR_NOMEM. */
int trove_pq_writer_new(const struct trove_pq_column_def *cols, size_t ncols, int codec,
                        uint64_t row_group_rows, struct trove_pq_writer **out);
/* Append nrows rows (cols[i] for column i); full row groups are encoded as they fill.
 * Errors: TROVE_ERR_INVALID, TROVE_ERR_LIMIT (rows), TROVE_ERR_NOMEM; the writer is then
 * unusable. */
int trove_pq_writer_add(struct trove_pq_writer *w, const struct trove_pq_column_data *cols,
                        size_t nrows);
/* Append nrows rows as trove_pq_writer_add does, but encoded straight from the caller's
 * arrays instead of copied first: the rows buffered so far end as a row group of their own,
 * then these rows become row groups of row_group_rows (the last one shorter, and ended
 * here). Adding all of a table's rows in one call makes the same file as one
 * trove_pq_writer_add, faster. Errors as for trove_pq_writer_add. */
int trove_pq_writer_add_groups(struct trove_pq_writer *w,
                               const struct trove_pq_column_data *cols, size_t nrows);
/* Where trove_pq_writer_add_fetch gets the values of column col for rows [from, from + n)
 * of its call: it fills out (as for trove_pq_writer_add, n values) with arrays that stay
 * valid until it is called again or the add returns, so a reused scratch array will do.
 * It returns TROVE_OK, or an error that the add then returns. */
typedef int (*trove_pq_fetch_fn)(void *ctx, size_t col, uint64_t from, size_t n,
                                 struct trove_pq_column_data *out);
/* trove_pq_writer_add_groups with the values fetched a column chunk at a time (columns in
 * order, rows in order), for a caller whose rows are not in column arrays: it needs room
 * for one row group's values of one column, not the whole table's. Errors as for
 * trove_pq_writer_add, and the fetch's. */
int trove_pq_writer_add_fetch(struct trove_pq_writer *w, size_t nrows, trove_pq_fetch_fn fetch,
                              void *ctx);
/* Encode the last row group and the footer, and append the whole file to out (an empty out
 * takes the writer's buffer, which saves a copy; as with any append, out's buffer may be
 * replaced); with a sink, out is NULL and the rest of the file goes to the sink. A table of
 * no rows is a valid file of no row groups. Errors: TROVE_ERR_INVALID (out given with a
 * sink, or missing without one; a writer finished or broken), TROVE_ERR_LIMIT (footer),
 * TROVE_ERR_NOMEM, the sink's. The writer takes no more rows after it. */
int trove_pq_writer_finish(struct trove_pq_writer *w, struct trove_bytes *out);
void trove_pq_writer_free(struct trove_pq_writer *w);
/* Send the file to sink (copied; its ctx must outlive the writer's use) instead of keeping
 * it: the magic and each row group go to it once encoded, the footer at finish, and the
 * writer holds one row group's bytes at most (trove_pq_writer_add's buffered rows aside).
 * Only before the first row. A sink's error fails the call that wrote, and the writer.
 * Errors: TROVE_ERR_INVALID (rows added already, a sink set already, no write function). */
int trove_pq_writer_set_sink(struct trove_pq_writer *w, const struct trove_sink *sink);
/* Bytes of the file made so far, given to the sink or not; after finish, the file's size. */
uint64_t trove_pq_writer_bytes(const struct trove_pq_writer *w);
/* Cap a data page at about bytes (1 .. TROVE_PQ_MAX_PAGE / 2) of PLAIN-size values (default
 * 1 MiB); takes effect for row groups encoded after the call. For tests that want many
 * pages from few rows. Errors: TROVE_ERR_INVALID. */
int trove_pq_writer_set_page_bytes(struct trove_pq_writer *w, size_t bytes);

/* A parsed file: the footer, checked, over the caller's buffer (which must outlive it). */
struct trove_pq_file;

/* Parse buf[0..len): magic at both ends, footer length, the Thrift footer, the schema
 * (flat, required or optional leaf columns of the types above; a column of another
 * physical type opens as TROVE_PQ_OTHER, and only reading it is an error, which names the
 * type), row groups and column chunks against the buffer. Errors, with an offset and a
 * message in diag: TROVE_ERR_TRUNCATED, TROVE_ERR_MAGIC, TROVE_ERR_CORRUPT,
 * TROVE_ERR_LIMIT, TROVE_ERR_FORMAT (a feature outside the subset), TROVE_ERR_NOMEM. */
int trove_pq_open(const uint8_t *buf, size_t len, struct trove_pq_file **out,
                  struct trove_diag *diag);
void trove_pq_close(struct trove_pq_file *f);

uint64_t trove_pq_rows(const struct trove_pq_file *f);
size_t trove_pq_columns(const struct trove_pq_file *f);
/* Column i's name, type (enum trove_pq_type) and logical width and signedness. */
const char *trove_pq_column_name(const struct trove_pq_file *f, size_t i);
int trove_pq_column_type(const struct trove_pq_file *f, size_t i);
int trove_pq_column_unsigned(const struct trove_pq_file *f, size_t i);
/* Integer column i's logical width (8, 16, 32 or 64; the physical width without a logical
 * type); 0 for a string column. */
int trove_pq_column_bits(const struct trove_pq_file *f, size_t i);
/* The index of the column named name, or -1. */
int trove_pq_find(const struct trove_pq_file *f, const char *name);

/*
 * Read all rows of integer column i into out[0 .. trove_pq_rows(f)), widened to 64 bits
 * (INT32 sign-extended, or zero-extended if unsigned). Optional columns must have no null.
 * Errors, with the column, row group and page in diag: TROVE_ERR_CORRUPT (a page or
 * encoding that breaks the format: a dictionary index past the dictionary, a delta width
 * over 64, counts that disagree), TROVE_ERR_TRUNCATED, TROVE_ERR_FORMAT (an encoding or codec
 * outside the subset), TROVE_ERR_BOMB (a page that declares or decompresses past
 * TROVE_PQ_MAX_PAGE), TROVE_ERR_INVALID (not an integer column), TROVE_ERR_NOMEM.
 */
int trove_pq_read_int(struct trove_pq_file *f, size_t i, int64_t *out, struct trove_diag *diag);

/*
 * A cursor reads integer column i a page at a time, for a reader that combines columns row
 * by row without holding any of them whole. trove_pq_cursor_peek points *vals_out at the
 * next *n_out values (those left of the current page, widened as by trove_pq_read_int),
 * valid until the next peek, advance or free; *n_out is 0 past the last row. Peeking does
 * not consume: trove_pq_cursor_advance(c, k) takes the first k (<= *n_out) of them. A
 * cursor uses f (which must outlive it) and does not change it; distinct cursors of one
 * file may be used together from one thread. Errors of peek: those of trove_pq_read_int,
 * with diag; after one the cursor can only be freed. trove_pq_cursor_new:
 * TROVE_ERR_INVALID (no such integer column), TROVE_ERR_NOMEM.
 */
struct trove_pq_cursor;
int trove_pq_cursor_new(struct trove_pq_file *f, size_t i, struct trove_pq_cursor **out,
                        struct trove_diag *diag);
int trove_pq_cursor_peek(struct trove_pq_cursor *c, const int64_t **vals_out, size_t *n_out,
                         struct trove_diag *diag);
void trove_pq_cursor_advance(struct trove_pq_cursor *c, size_t k);
void trove_pq_cursor_free(struct trove_pq_cursor *c);

/* The values of a string column: value k is bytes[off[k] .. off[k + 1]). */
struct trove_pq_strings {
    uint64_t n;
    uint64_t *off;     /* n + 1 entries */
    uint8_t *bytes;
};
/* Read all rows of string column i (errors as for trove_pq_read_int). out is replaced;
 * free it with trove_pq_strings_free. */
int trove_pq_read_strings(struct trove_pq_file *f, size_t i, struct trove_pq_strings *out,
                          struct trove_diag *diag);
void trove_pq_strings_free(struct trove_pq_strings *s);

/* What the writer chose for column i of a file (for tests and the bench): the encodings
 * of its first row group's data pages (enum trove_pq_encoding), and the codec. */
int trove_pq_column_encoding(const struct trove_pq_file *f, size_t i);
int trove_pq_codec(const struct trove_pq_file *f);

#ifdef __cplusplus
}
#endif
#endif
