/*
 * pq_meta.c: encode and decode Parquet's footer (FileMetaData) and page headers in the
 * Thrift compact protocol (thrift.h). Each decoder is a loop over the struct's fields: a
 * known field id is read with its expected wire type (another type is corrupt), an unknown
 * one is skipped, and the fields parquet.thrift requires are checked at the stop byte.
 */
#include "pq_meta.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "thrift.h"

/* ---- encoders ---- */

static void encode_stats(struct trove__tw *w, int16_t id, const struct trove__pq_stats *s)
{
    trove__tw_struct_begin(w, id);
    if (s->null_count >= 0)
        trove__tw_i64(w, 3, s->null_count);
    if (s->has_max)
        trove__tw_binary(w, 5, s->max, s->max_len);
    if (s->has_min)
        trove__tw_binary(w, 6, s->min, s->min_len);
    trove__tw_struct_end(w);
}

static void encode_schema(struct trove__tw *w, const struct trove__pq_schema *s)
{
    trove__tw_elem_struct_begin(w);
    if (s->type >= 0)
        trove__tw_i32(w, 1, s->type);
    if (s->repetition >= 0)
        trove__tw_i32(w, 3, s->repetition);
    trove__tw_binary(w, 4, s->name, s->name_len);
    if (s->num_children >= 0)
        trove__tw_i32(w, 5, s->num_children);
    if (s->converted_type >= 0)
        trove__tw_i32(w, 6, s->converted_type);
    if (s->logical == TROVE_PQL_STRING) {
        trove__tw_struct_begin(w, 10);
        trove__tw_struct_begin(w, 1);
        trove__tw_struct_end(w);
        trove__tw_struct_end(w);
    } else if (s->logical == TROVE_PQL_INTEGER) {
        trove__tw_struct_begin(w, 10);
        trove__tw_struct_begin(w, 10);
        trove__tw_i8(w, 1, (int8_t)s->int_bits);
        trove__tw_bool(w, 2, s->int_signed);
        trove__tw_struct_end(w);
        trove__tw_struct_end(w);
    }
    trove__tw_struct_end(w);
}

static void encode_column_chunk(struct trove__tw *w, const struct trove__pq_column_chunk *c)
{
    const struct trove__pq_column_meta *m = &c->meta;
    trove__tw_elem_struct_begin(w);
    trove__tw_i64(w, 2, c->file_offset);
    trove__tw_struct_begin(w, 3);
    trove__tw_i32(w, 1, m->type);
    trove__tw_list_begin(w, 2, TROVE_TT_I32, m->nencodings);
    for (uint32_t i = 0; i < m->nencodings; i++)
        trove__tw_elem_i32(w, m->encodings[i]);
    trove__tw_list_begin(w, 3, TROVE_TT_BINARY, 1);
    trove__tw_elem_binary(w, m->path, m->path_len);
    trove__tw_i32(w, 4, m->codec);
    trove__tw_i64(w, 5, m->num_values);
    trove__tw_i64(w, 6, m->total_uncompressed_size);
    trove__tw_i64(w, 7, m->total_compressed_size);
    trove__tw_i64(w, 9, m->data_page_offset);
    if (m->dictionary_page_offset >= 0)
        trove__tw_i64(w, 11, m->dictionary_page_offset);
    if (m->has_stats)
        encode_stats(w, 12, &m->stats);
    trove__tw_struct_end(w);
    trove__tw_struct_end(w);
}

int trove__pq_file_meta_encode(const struct trove__pq_file_meta *fm, int with_orders,
                               struct trove_bytes *out)
{
    struct trove__tw w;
    uint32_t nleaves = fm->nschema ? fm->nschema - 1 : 0;
    trove__tw_init(&w, out);
    trove__tw_i32(&w, 1, fm->version);
    trove__tw_list_begin(&w, 2, TROVE_TT_STRUCT, fm->nschema);
    for (uint32_t i = 0; i < fm->nschema; i++)
        encode_schema(&w, &fm->schema[i]);
    trove__tw_i64(&w, 3, fm->num_rows);
    trove__tw_list_begin(&w, 4, TROVE_TT_STRUCT, fm->nrow_groups);
    for (uint32_t g = 0; g < fm->nrow_groups; g++) {
        const struct trove__pq_row_group *rg = &fm->row_groups[g];
        trove__tw_elem_struct_begin(&w);
        trove__tw_list_begin(&w, 1, TROVE_TT_STRUCT, rg->ncolumns);
        for (uint32_t c = 0; c < rg->ncolumns; c++)
            encode_column_chunk(&w, &rg->columns[c]);
        trove__tw_i64(&w, 2, rg->total_byte_size);
        trove__tw_i64(&w, 3, rg->num_rows);
        if (rg->file_offset >= 0)
            trove__tw_i64(&w, 5, rg->file_offset);
        if (rg->total_compressed_size >= 0)
            trove__tw_i64(&w, 6, rg->total_compressed_size);
        if (rg->ordinal >= 0 && rg->ordinal <= INT16_MAX) {
            trove__tw_i16(&w, 7, (int16_t)rg->ordinal);
        }
        trove__tw_struct_end(&w);
    }
    if (fm->has_created_by)
        trove__tw_binary(&w, 6, fm->created_by, fm->created_by_len);
    if (with_orders) {
        trove__tw_list_begin(&w, 7, TROVE_TT_STRUCT, nleaves);
        for (uint32_t i = 0; i < nleaves; i++) {
            trove__tw_elem_struct_begin(&w);
            trove__tw_struct_begin(&w, 1);
            trove__tw_struct_end(&w);
            trove__tw_struct_end(&w);
        }
    }
    return trove__tw_finish(&w);
}

int trove__pq_page_header_encode(const struct trove__pq_page_header *h, struct trove_bytes *out)
{
    struct trove__tw w;
    trove__tw_init(&w, out);
    trove__tw_i32(&w, 1, h->type);
    trove__tw_i32(&w, 2, h->uncompressed_page_size);
    trove__tw_i32(&w, 3, h->compressed_page_size);
    if (h->has_crc)
        trove__tw_i32(&w, 4, h->crc);
    if (h->type == TROVE_PQP_DATA_PAGE) {
        trove__tw_struct_begin(&w, 5);
        trove__tw_i32(&w, 1, h->num_values);
        trove__tw_i32(&w, 2, h->encoding);
        trove__tw_i32(&w, 3, h->def_encoding);
        trove__tw_i32(&w, 4, h->rep_encoding);
        trove__tw_struct_end(&w);
    } else if (h->type == TROVE_PQP_DICTIONARY_PAGE) {
        trove__tw_struct_begin(&w, 7);
        trove__tw_i32(&w, 1, h->num_values);
        trove__tw_i32(&w, 2, h->encoding);
        if (h->dict_sorted >= 0)
            trove__tw_bool(&w, 3, h->dict_sorted);
        trove__tw_struct_end(&w);
    } else if (h->type == TROVE_PQP_DATA_PAGE_V2) {
        trove__tw_struct_begin(&w, 8);
        trove__tw_i32(&w, 1, h->num_values);
        trove__tw_i32(&w, 2, h->num_nulls);
        trove__tw_i32(&w, 3, h->num_rows);
        trove__tw_i32(&w, 4, h->encoding);
        trove__tw_i32(&w, 5, h->def_len);
        trove__tw_i32(&w, 6, h->rep_len);
        if (!h->is_compressed)
            trove__tw_bool(&w, 7, 0);
        trove__tw_struct_end(&w);
    }
    return trove__tw_finish(&w);
}

/* ---- decoders ---- */

#define FIELD_LOOP(r, last, type, id, rc)                                                 \
    while (((rc) = trove__tr_field((r), &(last), &(type), &(id))) == 1)

/* The end of a struct's FIELD_LOOP: rc is the loop's last result, 0 at the stop field or
 * an error, which is returned as it is; at the stop the struct is left. */
static int struct_end(struct trove__tr *r, int rc)
{
    if (rc != 0)
        return rc;
    trove__tr_leave(r);
    return TROVE_OK;
}

static int missing(struct trove__tr *r, const char *st, const char *field)
{
    return trove__tr_fail(r, TROVE_ERR_CORRUPT, "%s lacks its required field %s", st, field);
}

static int decode_stats(struct trove__tr *r, struct trove__pq_stats *s)
{
    int16_t last = 0, id;
    int type, rc;
    const uint8_t *lmin = NULL, *lmax = NULL;
    uint32_t lmin_len = 0, lmax_len = 0;

    memset(s, 0, sizeof *s);
    s->null_count = -1;
    if ((rc = trove__tr_enter(r)) != TROVE_OK)
        return rc;
    FIELD_LOOP(r, last, type, id, rc) {
        switch (id) {
        case 1: rc = trove__tr_binary(r, type, "Statistics.max", &lmax, &lmax_len); break;
        case 2: rc = trove__tr_binary(r, type, "Statistics.min", &lmin, &lmin_len); break;
        case 3: rc = trove__tr_i64(r, type, "Statistics.null_count", &s->null_count); break;
        case 5:
            rc = trove__tr_binary(r, type, "Statistics.max_value", &s->max, &s->max_len);
            s->has_max = 1;
            break;
        case 6:
            rc = trove__tr_binary(r, type, "Statistics.min_value", &s->min, &s->min_len);
            s->has_min = 1;
            break;
        default: rc = trove__tr_skip(r, type); break;
        }
        if (rc != TROVE_OK)
            return rc;
    }
    if (rc != 0)
        return rc;
    if (!s->has_min && !s->has_max && (lmin || lmax)) {
        s->legacy = 1;
        s->min = lmin;
        s->min_len = lmin_len;
        s->has_min = lmin != NULL;
        s->max = lmax;
        s->max_len = lmax_len;
        s->has_max = lmax != NULL;
    }
    trove__tr_leave(r);
    return TROVE_OK;
}

/* LogicalType union: STRING, INTEGER(bitWidth, isSigned), others by member id. */
static int decode_logical(struct trove__tr *r, struct trove__pq_schema *s)
{
    int16_t last = 0, id;
    int type, rc;
    if ((rc = trove__tr_enter(r)) != TROVE_OK)
        return rc;
    FIELD_LOOP(r, last, type, id, rc) {
        if ((rc = trove__tr_want(r, type, TROVE_TT_STRUCT, "LogicalType member")) != TROVE_OK)
            return rc;
        s->logical = id;
        if (id == TROVE_PQL_INTEGER) {
            int16_t l2 = 0, id2;
            int t2, have = 0;
            int8_t bits = 0;
            if ((rc = trove__tr_enter(r)) != TROVE_OK)
                return rc;
            FIELD_LOOP(r, l2, t2, id2, rc) {
                if (id2 == 1) {
                    rc = trove__tr_i8(r, t2, "IntType.bitWidth", &bits);
                    have |= 1;
                } else if (id2 == 2) {
                    rc = trove__tr_bool(r, t2, "IntType.isSigned", &s->int_signed);
                    have |= 2;
                } else {
                    rc = trove__tr_skip(r, t2);
                }
                if (rc != TROVE_OK)
                    return rc;
            }
            if ((rc = struct_end(r, rc)) != TROVE_OK)
                return rc;
            if (have != 3)
                return missing(r, "IntType", have & 1 ? "isSigned" : "bitWidth");
            s->int_bits = bits;
        } else if ((rc = trove__tr_skip(r, type)) != TROVE_OK) {
            return rc;
        }
    }
    return struct_end(r, rc);
}

static int decode_schema(struct trove__tr *r, struct trove__pq_schema *s)
{
    int16_t last = 0, id;
    int type, rc, v32 = 0, have_name = 0;
    int32_t v;

    memset(s, 0, sizeof *s);
    s->type = s->repetition = s->converted_type = -1;
    s->num_children = -1;
    if ((rc = trove__tr_enter(r)) != TROVE_OK)
        return rc;
    FIELD_LOOP(r, last, type, id, rc) {
        v32 = 0;
        switch (id) {
        case 1: rc = trove__tr_i32(r, type, "SchemaElement.type", &v); v32 = 1; break;
        case 3: rc = trove__tr_i32(r, type, "SchemaElement.repetition_type", &v); v32 = 3; break;
        case 4:
            rc = trove__tr_binary(r, type, "SchemaElement.name", &s->name, &s->name_len);
            have_name = 1;
            break;
        case 5: rc = trove__tr_i32(r, type, "SchemaElement.num_children", &v); v32 = 5; break;
        case 6: rc = trove__tr_i32(r, type, "SchemaElement.converted_type", &v); v32 = 6; break;
        case 10:
            if ((rc = trove__tr_want(r, type, TROVE_TT_STRUCT, "SchemaElement.logicalType")) ==
                TROVE_OK)
                rc = decode_logical(r, s);
            break;
        default: rc = trove__tr_skip(r, type); break;
        }
        if (rc != TROVE_OK)
            return rc;
        if (v32 && v < 0)
            return trove__tr_fail(r, TROVE_ERR_CORRUPT, "SchemaElement field %d is negative",
                                  v32);
        if (v32 == 1) s->type = v;
        if (v32 == 3) s->repetition = v;
        if (v32 == 5) s->num_children = v;
        if (v32 == 6) s->converted_type = v;
    }
    if ((rc = struct_end(r, rc)) != TROVE_OK)
        return rc;
    if (!have_name)
        return missing(r, "SchemaElement", "name");
    return TROVE_OK;
}

static int decode_column_meta(struct trove__tr *r, struct trove__pq_column_meta *m)
{
    int16_t last = 0, id;
    int type, rc, et;
    unsigned have = 0;
    uint32_t n;
    int32_t v;

    memset(m, 0, sizeof *m);
    m->dictionary_page_offset = -1;
    if ((rc = trove__tr_enter(r)) != TROVE_OK)
        return rc;
    FIELD_LOOP(r, last, type, id, rc) {
        switch (id) {
        case 1:
            rc = trove__tr_i32(r, type, "ColumnMetaData.type", &v);
            m->type = v;
            break;
        case 2:
            if ((rc = trove__tr_list(r, type, "ColumnMetaData.encodings", &et, &n)) != TROVE_OK)
                break;
            for (uint32_t i = 0; i < n && rc == TROVE_OK; i++) {
                int dup = 0;
                if ((rc = trove__tr_i32(r, et, "ColumnMetaData.encodings", &v)) != TROVE_OK)
                    break;
                for (uint32_t k = 0; k < m->nencodings; k++)
                    dup |= m->encodings[k] == v;
                if (!dup && m->nencodings < TROVE_PQ_META_MAX_ENCODINGS)
                    m->encodings[m->nencodings++] = v;
            }
            break;
        case 3:
            if ((rc = trove__tr_list(r, type, "ColumnMetaData.path_in_schema", &et, &n)) !=
                TROVE_OK)
                break;
            m->npath = n;
            for (uint32_t i = 0; i < n && rc == TROVE_OK; i++)
                rc = trove__tr_binary(r, et, "ColumnMetaData.path_in_schema", &m->path,
                                      &m->path_len);
            break;
        case 4:
            rc = trove__tr_i32(r, type, "ColumnMetaData.codec", &v);
            m->codec = v;
            break;
        case 5: rc = trove__tr_i64(r, type, "ColumnMetaData.num_values", &m->num_values); break;
        case 6:
            rc = trove__tr_i64(r, type, "ColumnMetaData.total_uncompressed_size",
                               &m->total_uncompressed_size);
            break;
        case 7:
            rc = trove__tr_i64(r, type, "ColumnMetaData.total_compressed_size",
                               &m->total_compressed_size);
            break;
        case 9:
            rc = trove__tr_i64(r, type, "ColumnMetaData.data_page_offset", &m->data_page_offset);
            break;
        case 11:
            rc = trove__tr_i64(r, type, "ColumnMetaData.dictionary_page_offset",
                               &m->dictionary_page_offset);
            if (rc == TROVE_OK && m->dictionary_page_offset < 0)
                rc = trove__tr_fail(r, TROVE_ERR_CORRUPT, "negative dictionary_page_offset");
            break;
        case 12:
            if ((rc = trove__tr_want(r, type, TROVE_TT_STRUCT, "ColumnMetaData.statistics")) ==
                TROVE_OK)
                rc = decode_stats(r, &m->stats);
            m->has_stats = 1;
            break;
        default: rc = trove__tr_skip(r, type); break;
        }
        if (rc != TROVE_OK)
            return rc;
        if (id >= 1 && id <= 9)
            have |= 1u << id;
    }
    if ((rc = struct_end(r, rc)) != TROVE_OK)
        return rc;
    {
        static const char *const req[] = {NULL, "type", "encodings", "path_in_schema", "codec",
                                          "num_values", "total_uncompressed_size",
                                          "total_compressed_size", NULL, "data_page_offset"};
        for (int i = 1; i <= 9; i++)
            if (req[i] && !(have & (1u << i)))
                return missing(r, "ColumnMetaData", req[i]);
    }
    if (m->num_values < 0 || m->total_compressed_size < 0 || m->total_uncompressed_size < 0 ||
        m->data_page_offset < 0)
        return trove__tr_fail(r, TROVE_ERR_CORRUPT, "ColumnMetaData has a negative size, count "
                                                    "or offset");
    return TROVE_OK;
}

static int decode_column_chunk(struct trove__tr *r, struct trove__pq_column_chunk *c)
{
    int16_t last = 0, id;
    int type, rc;
    const uint8_t *p;
    uint32_t n;

    memset(c, 0, sizeof *c);
    if ((rc = trove__tr_enter(r)) != TROVE_OK)
        return rc;
    FIELD_LOOP(r, last, type, id, rc) {
        switch (id) {
        case 1:
            rc = trove__tr_binary(r, type, "ColumnChunk.file_path", &p, &n);
            c->has_file_path = 1;
            break;
        case 2: rc = trove__tr_i64(r, type, "ColumnChunk.file_offset", &c->file_offset); break;
        case 3:
            if ((rc = trove__tr_want(r, type, TROVE_TT_STRUCT, "ColumnChunk.meta_data")) ==
                TROVE_OK)
                rc = decode_column_meta(r, &c->meta);
            c->has_meta = 1;
            break;
        default: rc = trove__tr_skip(r, type); break;
        }
        if (rc != TROVE_OK)
            return rc;
    }
    return struct_end(r, rc);
}

static int decode_row_group(struct trove__tr *r, struct trove__pq_row_group *g)
{
    int16_t last = 0, id;
    int type, rc, et;
    unsigned have = 0;
    uint32_t n;
    if ((rc = trove__tr_enter(r)) != TROVE_OK)
        return rc;
    FIELD_LOOP(r, last, type, id, rc) {
        switch (id) {
        case 1:
            if (g->columns) {
                rc = trove__tr_fail(r, TROVE_ERR_CORRUPT, "RowGroup.columns given twice");
                break;
            }
            if ((rc = trove__tr_list(r, type, "RowGroup.columns", &et, &n)) != TROVE_OK)
                break;
            if ((rc = trove__tr_want(r, et, TROVE_TT_STRUCT, "RowGroup.columns")) != TROVE_OK)
                break;
            if (n > 4096) {
                rc = trove__tr_fail(r, TROVE_ERR_LIMIT, "a row group of %u columns", n);
                break;
            }
            g->columns = trove__calloc(n ? n : 1, sizeof *g->columns);
            if (!g->columns) {
                rc = trove__tr_fail(r, TROVE_ERR_NOMEM, "out of memory");
                break;
            }
            for (uint32_t i = 0; i < n && rc == TROVE_OK; i++) {
                rc = decode_column_chunk(r, &g->columns[i]);
                g->ncolumns = i + 1;
            }
            break;
        case 2:
            rc = trove__tr_i64(r, type, "RowGroup.total_byte_size", &g->total_byte_size);
            break;
        case 3: rc = trove__tr_i64(r, type, "RowGroup.num_rows", &g->num_rows); break;
        case 5: rc = trove__tr_i64(r, type, "RowGroup.file_offset", &g->file_offset); break;
        case 6:
            rc = trove__tr_i64(r, type, "RowGroup.total_compressed_size",
                               &g->total_compressed_size);
            break;
        default: rc = trove__tr_skip(r, type); break;
        }
        if (rc != TROVE_OK)
            return rc;
        if (id >= 1 && id <= 3)
            have |= 1u << id;
    }
    if ((rc = struct_end(r, rc)) != TROVE_OK)
        return rc;
    if (!(have & 2))
        return missing(r, "RowGroup", "columns");
    if (!(have & 4))
        return missing(r, "RowGroup", "total_byte_size");
    if (!(have & 8))
        return missing(r, "RowGroup", "num_rows");
    if (g->num_rows < 0)
        return trove__tr_fail(r, TROVE_ERR_CORRUPT, "RowGroup.num_rows is negative");
    return TROVE_OK;
}

void trove__pq_file_meta_free(struct trove__pq_file_meta *fm)
{
    if (!fm)
        return;
    for (uint32_t g = 0; g < fm->nrow_groups; g++)
        free(fm->row_groups[g].columns);
    free(fm->row_groups);
    free(fm->schema);
    memset(fm, 0, sizeof *fm);
}

static int decode_column_orders(struct trove__tr *r, int type, struct trove__pq_file_meta *fm)
{
    int et, rc;
    uint32_t n;
    if ((rc = trove__tr_list(r, type, "FileMetaData.column_orders", &et, &n)) != TROVE_OK)
        return rc;
    if ((rc = trove__tr_want(r, et, TROVE_TT_STRUCT, "FileMetaData.column_orders")) != TROVE_OK)
        return rc;
    fm->ncolumn_orders = n;
    for (uint32_t i = 0; i < n; i++) {
        int16_t last = 0, id;
        int ft, kind = 0;
        if ((rc = trove__tr_enter(r)) != TROVE_OK)
            return rc;
        FIELD_LOOP(r, last, ft, id, rc) {
            kind = id;
            if ((rc = trove__tr_skip(r, ft)) != TROVE_OK)
                return rc;
        }
        if ((rc = struct_end(r, rc)) != TROVE_OK)
            return rc;
        fm->ntype_orders += kind == 1;
    }
    return TROVE_OK;
}

int trove__pq_file_meta_decode(const uint8_t *buf, size_t len, uint64_t base,
                               struct trove__pq_file_meta *out, struct trove_diag *diag)
{
    struct trove__tr r;
    struct trove__pq_file_meta fm;
    int16_t last = 0, id;
    int type, rc, et;
    unsigned have = 0;
    uint32_t n;

    memset(&fm, 0, sizeof fm);
    trove__tr_init(&r, buf, len, base, "footer", diag);
    if ((rc = trove__tr_enter(&r)) != TROVE_OK)
        goto out;
    FIELD_LOOP(&r, last, type, id, rc) {
        switch (id) {
        case 1: rc = trove__tr_i32(&r, type, "FileMetaData.version", &fm.version); break;
        case 2:
            if (fm.schema) {
                rc = trove__tr_fail(&r, TROVE_ERR_CORRUPT, "FileMetaData.schema given twice");
                break;
            }
            if ((rc = trove__tr_list(&r, type, "FileMetaData.schema", &et, &n)) != TROVE_OK)
                break;
            if ((rc = trove__tr_want(&r, et, TROVE_TT_STRUCT, "FileMetaData.schema")) != TROVE_OK)
                break;
            if (n > 4096) {
                rc = trove__tr_fail(&r, TROVE_ERR_LIMIT, "a schema of %u elements", n);
                break;
            }
            fm.schema = trove__calloc(n ? n : 1, sizeof *fm.schema);
            if (!fm.schema) {
                rc = trove__tr_fail(&r, TROVE_ERR_NOMEM, "out of memory");
                break;
            }
            for (uint32_t i = 0; i < n && rc == TROVE_OK; i++) {
                rc = decode_schema(&r, &fm.schema[i]);
                fm.nschema = i + 1;
            }
            break;
        case 3: rc = trove__tr_i64(&r, type, "FileMetaData.num_rows", &fm.num_rows); break;
        case 4: {
            uint32_t cap = 0;
            if (fm.row_groups) {
                rc = trove__tr_fail(&r, TROVE_ERR_CORRUPT, "FileMetaData.row_groups given twice");
                break;
            }
            if ((rc = trove__tr_list(&r, type, "FileMetaData.row_groups", &et, &n)) != TROVE_OK)
                break;
            if ((rc = trove__tr_want(&r, et, TROVE_TT_STRUCT, "FileMetaData.row_groups")) !=
                TROVE_OK)
                break;
            if (n > TROVE_PQ_META_MAX_ROW_GROUPS) {
                rc = trove__tr_fail(&r, TROVE_ERR_LIMIT, "%u row groups (at most %u)", n,
                                    TROVE_PQ_META_MAX_ROW_GROUPS);
                break;
            }
            /* Grow as row groups decode, so a large count costs memory only once its
             * bytes are there. */
            for (uint32_t i = 0; i < n && rc == TROVE_OK; i++) {
                if (i == cap) {
                    uint32_t ncap = cap ? cap * 2 : 8;
                    void *p = trove__realloc(fm.row_groups, (size_t)ncap * sizeof *fm.row_groups);
                    if (!p) {
                        rc = trove__tr_fail(&r, TROVE_ERR_NOMEM, "out of memory");
                        break;
                    }
                    fm.row_groups = p;
                    cap = ncap;
                }
                memset(&fm.row_groups[i], 0, sizeof fm.row_groups[i]);
                fm.row_groups[i].file_offset = -1;
                fm.row_groups[i].total_compressed_size = -1;
                fm.row_groups[i].ordinal = -1;
                fm.nrow_groups = i + 1;
                rc = decode_row_group(&r, &fm.row_groups[i]);
            }
            if (rc == TROVE_OK && !fm.row_groups) {
                fm.row_groups = trove__calloc(1, sizeof *fm.row_groups);
                if (!fm.row_groups)
                    rc = trove__tr_fail(&r, TROVE_ERR_NOMEM, "out of memory");
            }
            break;
        }
        case 6:
            rc = trove__tr_binary(&r, type, "FileMetaData.created_by", &fm.created_by,
                                  &fm.created_by_len);
            fm.has_created_by = 1;
            break;
        case 7: rc = decode_column_orders(&r, type, &fm); break;
        case 8:
            fm.encrypted = 1;
            rc = trove__tr_skip(&r, type);
            break;
        default: rc = trove__tr_skip(&r, type); break;
        }
        if (rc != TROVE_OK)
            goto out;
        if (id >= 1 && id <= 4)
            have |= 1u << id;
    }
    if (rc != 0)
        goto out;
    trove__tr_leave(&r);
    if (!(have & 2))
        rc = missing(&r, "FileMetaData", "version");
    else if (!(have & 4))
        rc = missing(&r, "FileMetaData", "schema");
    else if (!(have & 8))
        rc = missing(&r, "FileMetaData", "num_rows");
    else if (!(have & 16))
        rc = missing(&r, "FileMetaData", "row_groups");
    else if (fm.num_rows < 0)
        rc = trove__tr_fail(&r, TROVE_ERR_CORRUPT, "FileMetaData.num_rows is negative");
    if (rc != TROVE_OK)
        goto out;
    *out = fm;
    rc = TROVE_OK;
out:
    if (rc != TROVE_OK)
        trove__pq_file_meta_free(&fm);
    return rc;
}

static int decode_sub_page(struct trove__tr *r, int kind, struct trove__pq_page_header *h)
{
    int16_t last = 0, id;
    int type, rc;
    unsigned have = 0;
    int32_t v;
    static const char *const names[4] = {"DataPageHeader", "", "DictionaryPageHeader",
                                         "DataPageHeaderV2"};

    if ((rc = trove__tr_enter(r)) != TROVE_OK)
        return rc;
    FIELD_LOOP(r, last, type, id, rc) {
        if (kind == TROVE_PQP_DATA_PAGE_V2 && id == 7) {
            rc = trove__tr_bool(r, type, "DataPageHeaderV2.is_compressed", &h->is_compressed);
        } else if (kind == TROVE_PQP_DICTIONARY_PAGE && id == 3) {
            rc = trove__tr_bool(r, type, "DictionaryPageHeader.is_sorted", &h->dict_sorted);
        } else if (id >= 1 && id <= (kind == TROVE_PQP_DATA_PAGE_V2 ? 6 : kind == TROVE_PQP_DATA_PAGE ? 4 : 2)) {
            rc = trove__tr_i32(r, type, names[kind], &v);
            if (rc == TROVE_OK && v < 0)
                rc = trove__tr_fail(r, TROVE_ERR_CORRUPT, "%s field %d is negative",
                                    names[kind], id);
            have |= 1u << id;
            if (kind == TROVE_PQP_DATA_PAGE_V2) {
                switch (id) {
                case 1: h->num_values = v; break;
                case 2: h->num_nulls = v; break;
                case 3: h->num_rows = v; break;
                case 4: h->encoding = v; break;
                case 5: h->def_len = v; break;
                case 6: h->rep_len = v; break;
                }
            } else {
                switch (id) {
                case 1: h->num_values = v; break;
                case 2: h->encoding = v; break;
                case 3: h->def_encoding = v; break;
                case 4: h->rep_encoding = v; break;
                }
            }
        } else {
            rc = trove__tr_skip(r, type);
        }
        if (rc != TROVE_OK)
            return rc;
    }
    if ((rc = struct_end(r, rc)) != TROVE_OK)
        return rc;
    {
        unsigned want = kind == TROVE_PQP_DATA_PAGE_V2 ? 0x7e : kind == TROVE_PQP_DATA_PAGE ? 0x1e : 0x6;
        if ((have & want) != want)
            return trove__tr_fail(r, TROVE_ERR_CORRUPT, "%s lacks a required field",
                                  names[kind]);
    }
    return TROVE_OK;
}

int trove__pq_page_header_decode(const uint8_t *buf, size_t len, uint64_t base,
                                 struct trove__pq_page_header *out, size_t *used_out,
                                 struct trove_diag *diag)
{
    struct trove__tr r;
    struct trove__pq_page_header h;
    int16_t last = 0, id;
    int type, rc;
    unsigned have = 0;
    int32_t v;

    memset(&h, 0, sizeof h);
    h.type = -1;
    h.dict_sorted = -1;
    h.is_compressed = 1;
    trove__tr_init(&r, buf, len, base, "page header", diag);
    if ((rc = trove__tr_enter(&r)) != TROVE_OK)
        return rc;
    FIELD_LOOP(&r, last, type, id, rc) {
        switch (id) {
        case 1: rc = trove__tr_i32(&r, type, "PageHeader.type", &h.type); break;
        case 2:
            rc = trove__tr_i32(&r, type, "PageHeader.uncompressed_page_size",
                               &h.uncompressed_page_size);
            break;
        case 3:
            rc = trove__tr_i32(&r, type, "PageHeader.compressed_page_size",
                               &h.compressed_page_size);
            break;
        case 4:
            rc = trove__tr_i32(&r, type, "PageHeader.crc", &v);
            h.crc = v;
            h.has_crc = 1;
            break;
        case 5:
        case 7:
        case 8: {
            int kind = id == 5 ? TROVE_PQP_DATA_PAGE : id == 7 ? TROVE_PQP_DICTIONARY_PAGE
                                                               : TROVE_PQP_DATA_PAGE_V2;
            int *flag = id == 5 ? &h.has_data : id == 7 ? &h.has_dict : &h.has_v2;
            if (*flag) {
                rc = trove__tr_fail(&r, TROVE_ERR_CORRUPT, "page header field %d given twice",
                                    id);
                break;
            }
            if ((rc = trove__tr_want(&r, type, TROVE_TT_STRUCT, "PageHeader sub-header")) ==
                TROVE_OK)
                rc = decode_sub_page(&r, kind, &h);
            *flag = 1;
            break;
        }
        default: rc = trove__tr_skip(&r, type); break;
        }
        if (rc != TROVE_OK)
            return rc;
        if (id >= 1 && id <= 3)
            have |= 1u << id;
    }
    if (rc != 0)
        return rc;
    if ((have & 0xe) != 0xe)
        return missing(&r, "PageHeader", !(have & 2) ? "type" : !(have & 4)
                                                                ? "uncompressed_page_size"
                                                                : "compressed_page_size");
    if (h.uncompressed_page_size < 0 || h.compressed_page_size < 0)
        return trove__tr_fail(&r, TROVE_ERR_CORRUPT, "negative page size");
    if (h.has_data + h.has_dict + h.has_v2 > 1)
        return trove__tr_fail(&r, TROVE_ERR_CORRUPT, "page header with more than one kind");
    if ((h.type == TROVE_PQP_DATA_PAGE && !h.has_data) ||
        (h.type == TROVE_PQP_DICTIONARY_PAGE && !h.has_dict) ||
        (h.type == TROVE_PQP_DATA_PAGE_V2 && !h.has_v2))
        return trove__tr_fail(&r, TROVE_ERR_CORRUPT, "page of type %d lacks its header", h.type);
    *out = h;
    *used_out = r.pos;
    return TROVE_OK;
}
