/*
 * pq_meta.h (internal to src/columnar): Parquet's Thrift metadata (parquet.thrift in
 * apache/parquet-format), the part trove writes and reads: FileMetaData, SchemaElement,
 * RowGroup, ColumnChunk, ColumnMetaData, Statistics, ColumnOrder and PageHeader with its
 * data page (v1, v2) and dictionary page headers.
 *
 *   file    "PAR1" | column chunks (pages) ... | FileMetaData (compact Thrift) |
 *           footer length u32 LE | "PAR1"
 *   page    PageHeader (compact Thrift) | compressed_page_size bytes
 *
 * Decoded byte strings (names, statistics) point into the decoder's input, which must
 * outlive the struct. Fields absent from the input are -1 (enums, counts) or has_* = 0.
 * Decoders check wire types, skip unknown fields, require the fields parquet.thrift marks
 * required, and cap list lengths before they allocate.
 */
#ifndef TROVE_PQ_META_H
#define TROVE_PQ_META_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

/* parquet.thrift enums */
enum {
    TROVE_PQT_BOOLEAN = 0, TROVE_PQT_INT32 = 1, TROVE_PQT_INT64 = 2, TROVE_PQT_INT96 = 3,
    TROVE_PQT_FLOAT = 4, TROVE_PQT_DOUBLE = 5, TROVE_PQT_BYTE_ARRAY = 6, TROVE_PQT_FIXED = 7
};
enum {
    TROVE_PQE_PLAIN = 0, TROVE_PQE_PLAIN_DICTIONARY = 2, TROVE_PQE_RLE = 3,
    TROVE_PQE_BIT_PACKED = 4, TROVE_PQE_DELTA_BINARY_PACKED = 5,
    TROVE_PQE_DELTA_LENGTH_BYTE_ARRAY = 6, TROVE_PQE_DELTA_BYTE_ARRAY = 7,
    TROVE_PQE_RLE_DICTIONARY = 8, TROVE_PQE_BYTE_STREAM_SPLIT = 9
};
enum {
    TROVE_PQC_UNCOMPRESSED = 0, TROVE_PQC_SNAPPY = 1, TROVE_PQC_GZIP = 2, TROVE_PQC_LZO = 3,
    TROVE_PQC_BROTLI = 4, TROVE_PQC_LZ4 = 5, TROVE_PQC_ZSTD = 6, TROVE_PQC_LZ4_RAW = 7
};
enum {
    TROVE_PQP_DATA_PAGE = 0, TROVE_PQP_INDEX_PAGE = 1, TROVE_PQP_DICTIONARY_PAGE = 2,
    TROVE_PQP_DATA_PAGE_V2 = 3
};
enum { TROVE_PQR_REQUIRED = 0, TROVE_PQR_OPTIONAL = 1, TROVE_PQR_REPEATED = 2 };
/* ConvertedType values trove uses */
enum { TROVE_PQCT_UTF8 = 0, TROVE_PQCT_UINT_8 = 11, TROVE_PQCT_INT_8 = 15, TROVE_PQCT_INT_64 = 18 };
/* LogicalType union members trove uses */
enum { TROVE_PQL_NONE = 0, TROVE_PQL_STRING = 1, TROVE_PQL_INTEGER = 10 };

#define TROVE_PQ_META_MAX_ENCODINGS 16     /* distinct encodings kept per column chunk */
#define TROVE_PQ_META_MAX_ROW_GROUPS (1u << 20)

struct trove__pq_stats {
    const uint8_t *min, *max; /* min_value/max_value, or legacy min/max if those are absent */
    uint32_t min_len, max_len;
    int has_min, has_max;
    int legacy;               /* the values came from the legacy min/max fields */
    int64_t null_count;       /* -1: absent */
};

struct trove__pq_schema {
    int type;              /* TROVE_PQT_*, -1: a group */
    int repetition;        /* TROVE_PQR_*, -1: absent */
    const uint8_t *name;
    uint32_t name_len;
    int32_t num_children;  /* -1: absent */
    int converted_type;    /* -1: absent */
    int logical;           /* TROVE_PQL_NONE, _STRING, _INTEGER, or another union member id */
    int int_bits;          /* INTEGER: bitWidth */
    int int_signed;        /* INTEGER: isSigned */
};

struct trove__pq_column_meta {
    int type;
    int codec;
    uint32_t nencodings;
    int encodings[TROVE_PQ_META_MAX_ENCODINGS];
    const uint8_t *path;   /* the last element of path_in_schema (the leaf name) */
    uint32_t path_len, npath;
    int64_t num_values, total_uncompressed_size, total_compressed_size;
    int64_t data_page_offset;
    int64_t dictionary_page_offset; /* -1: absent */
    int has_stats;
    struct trove__pq_stats stats;
};

struct trove__pq_column_chunk {
    int64_t file_offset;
    int has_file_path;      /* column data in another file: outside trove's subset */
    int has_meta;
    struct trove__pq_column_meta meta;
};

struct trove__pq_row_group {
    struct trove__pq_column_chunk *columns;
    uint32_t ncolumns;
    int64_t total_byte_size, num_rows;
    int64_t file_offset, total_compressed_size; /* -1: absent */
    int32_t ordinal;                            /* -1: absent */
};

struct trove__pq_file_meta {
    int32_t version;
    struct trove__pq_schema *schema;
    uint32_t nschema;
    int64_t num_rows;
    struct trove__pq_row_group *row_groups;
    uint32_t nrow_groups;
    const uint8_t *created_by;
    uint32_t created_by_len;
    int has_created_by;
    uint32_t ncolumn_orders;
    uint32_t ntype_orders;   /* how many of them are TYPE_ORDER */
    int encrypted;           /* encryption_algorithm present */
};

/* Encode fm (schema, row groups, created_by as given; column_orders: TYPE_ORDER for each
 * leaf if with_orders) and append it to out. Errors: TROVE_ERR_NOMEM, TROVE_ERR_INVALID. */
int trove__pq_file_meta_encode(const struct trove__pq_file_meta *fm, int with_orders,
                               struct trove_bytes *out);
/* Decode a FileMetaData from buf[0..len) (base: buf's offset in the file, for diag). Up to
 * max_schema schema elements. Frees nothing on failure that it did not allocate; free the
 * result with trove__pq_file_meta_free. Errors: TROVE_ERR_TRUNCATED, TROVE_ERR_CORRUPT,
 * TROVE_ERR_LIMIT, TROVE_ERR_NOMEM. */
int trove__pq_file_meta_decode(const uint8_t *buf, size_t len, uint64_t base,
                               struct trove__pq_file_meta *out, struct trove_diag *diag);
void trove__pq_file_meta_free(struct trove__pq_file_meta *fm);

struct trove__pq_page_header {
    int type;                     /* TROVE_PQP_* */
    int32_t uncompressed_page_size, compressed_page_size;
    int has_crc;
    int32_t crc;
    /* DATA_PAGE and DATA_PAGE_V2 and DICTIONARY_PAGE: num_values and encoding */
    int has_data, has_dict, has_v2;
    int32_t num_values;
    int encoding;
    int def_encoding, rep_encoding;  /* v1 */
    int dict_sorted;                 /* dictionary, -1: absent */
    int32_t num_nulls, num_rows;     /* v2 */
    int32_t def_len, rep_len;        /* v2 */
    int is_compressed;               /* v2, default 1 */
};

/* Append a page header. Errors: TROVE_ERR_NOMEM. */
int trove__pq_page_header_encode(const struct trove__pq_page_header *h, struct trove_bytes *out);
/* Decode a page header from buf[0..len); *used_out gets its length. The header of the kind
 * type names must be present. Errors: TROVE_ERR_TRUNCATED, TROVE_ERR_CORRUPT. */
int trove__pq_page_header_decode(const uint8_t *buf, size_t len, uint64_t base,
                                 struct trove__pq_page_header *out, size_t *used_out,
                                 struct trove_diag *diag);

/* Writer-side statistics: encode into a Statistics struct body (min_value, max_value,
 * null_count 0). */

#endif
