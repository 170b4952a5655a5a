/*
 * pq_read.c: trove's Parquet reader (include/trove/parquet.h) over a whole file in memory.
 *
 *   "PAR1" | column chunks ... | FileMetaData | u32 LE footer length | "PAR1"
 *
 * trove_pq_open checks the magic, the footer length, decodes the footer (pq_meta.c) and
 * checks everything the column readers rely on: a flat schema (a root and required or
 * optional leaves of INT32, INT64 or BYTE_ARRAY), one chunk per column per row group with
 * its metadata, row counts that agree, known codecs, and each chunk's byte range inside
 * the file before the footer. The column readers then walk each chunk's pages: at most one
 * dictionary page first, then data pages v1 or v2, each size checked against the chunk and
 * TROVE_PQ_MAX_PAGE before anything is allocated or decompressed, and decompression
 * bounded by the declared size. Every error names the column, row group and page.
 *
 * The page walk (next_page) stops after each data page, so that a cursor can hand out a
 * column page by page: its values go to a page-sized scratch, and a dictionary page's are
 * looked up from the checked indices a window at a time, when asked for.
 */
#include "trove/parquet.h"
#include "common/alloc.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "pq_encoding.h"
#include "pq_meta.h"
#include "snappy.h"
#include "common/endian.h"
#include "common/fail.h"

#define TROVE_PQ_MAX_STRING_BYTES (1ull << 34) /* bytes of one string column read */

struct rcol {
    char name[TROVE_PQ_MAX_NAME + 1];
    int type;      /* enum trove_pq_type */
    int phys;      /* TROVE_PQT_*: the schema's physical type */
    int bits;
    int is_unsigned;
    int optional;
};

struct trove_pq_file {
    const uint8_t *buf;
    size_t len;
    size_t footer_at;
    struct trove__pq_file_meta fm;
    size_t ncols;
    struct rcol cols[TROVE_PQ_MAX_COLUMNS];
};

static const char *type_name(int t)
{
    static const char *const n[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE",
                                    "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    return t >= 0 && t < 8 ? n[t] : "an unknown type";
}

static const char *codec_name(int c)
{
    static const char *const n[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4",
                                    "ZSTD", "LZ4_RAW"};
    return c >= 0 && c < 8 ? n[c] : "an unknown codec";
}

static const char *encoding_name(int e)
{
    static const char *const n[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE",
                                    "BIT_PACKED", "DELTA_BINARY_PACKED",
                                    "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
                                    "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    return e >= 0 && e < 10 ? n[e] : "an unknown encoding";
}

/* ---- open ---- */

static int check_leaf(struct trove_pq_file *f, size_t i, const struct trove__pq_schema *s,
                      uint64_t off, struct trove_diag *diag)
{
    struct rcol *c = &f->cols[i];
    int phys;

    if (s->name_len < 1 || s->name_len > TROVE_PQ_MAX_NAME || memchr(s->name, 0, s->name_len))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                          "column %zu: a name of %u bytes (1 to %u, no NUL)", i,
                          s->name_len, TROVE_PQ_MAX_NAME);
    memcpy(c->name, s->name, s->name_len);
    c->name[s->name_len] = 0;
    for (size_t k = 0; k < i; k++)
        if (strcmp(f->cols[k].name, c->name) == 0)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off, "column name %s given twice",
                              c->name);
    if (s->num_children > 0 || s->type < 0)
        return TROVE_FAIL(diag, TROVE_ERR_FORMAT, off,
                          "column %s is a group: nested schemas are not supported", c->name);
    if (s->repetition == TROVE_PQR_OPTIONAL)
        c->optional = 1;
    else if (s->repetition != TROVE_PQR_REQUIRED)
        return TROVE_FAIL(diag, TROVE_ERR_FORMAT, off,
                          "column %s is repeated: only required and optional columns are "
                          "supported", c->name);
    c->phys = s->type;
    if (s->type == TROVE_PQT_BYTE_ARRAY) {
        c->type = TROVE_PQ_STRING;
        return TROVE_OK;
    }
    if (s->type > TROVE_PQT_FIXED)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off, "column %s: physical type %d",
                          c->name, s->type);
    if (s->type != TROVE_PQT_INT32 && s->type != TROVE_PQT_INT64) {
        c->type = TROVE_PQ_OTHER; /* listed; reading it is the error (readable) */
        return TROVE_OK;
    }
    c->type = s->type == TROVE_PQT_INT32 ? TROVE_PQ_INT32 : TROVE_PQ_INT64;
    phys = s->type == TROVE_PQT_INT32 ? 32 : 64;
    c->bits = phys;
    if (s->logical == TROVE_PQL_INTEGER) {
        if ((s->int_bits != 8 && s->int_bits != 16 && s->int_bits != 32 && s->int_bits != 64) ||
            s->int_bits > phys)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                              "column %s: INTEGER(%d) on a %d-bit type", c->name,
                              s->int_bits, phys);
        c->bits = s->int_bits;
        c->is_unsigned = !s->int_signed;
    } else if (s->converted_type >= TROVE_PQCT_UINT_8 && s->converted_type <= TROVE_PQCT_INT_64) {
        int k = s->converted_type - TROVE_PQCT_UINT_8; /* UINT_8..UINT_64, INT_8..INT_64 */
        c->bits = 8 << (k % 4);
        c->is_unsigned = k < 4;
        if (c->bits > phys)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                              "column %s: a %d-bit converted type on a %d-bit type", c->name,
                              c->bits, phys);
    }
    return TROVE_OK;
}

static int check_chunk(const struct trove_pq_file *f, size_t g, size_t i,
                       const struct trove__pq_row_group *rg, uint64_t off,
                       struct trove_diag *diag)
{
    const struct trove__pq_column_chunk *cc = &rg->columns[i];
    const struct trove__pq_column_meta *m = &cc->meta;
    const struct rcol *c = &f->cols[i];
    uint64_t start, size;

    if (cc->has_file_path)
        return TROVE_FAIL(diag, TROVE_ERR_FORMAT, off,
                          "column %s, row group %zu: data in another file", c->name, g);
    if (!cc->has_meta)
        return TROVE_FAIL(diag, TROVE_ERR_FORMAT, off,
                          "column %s, row group %zu: no column metadata", c->name, g);
    if (m->type != c->phys)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                          "column %s, row group %zu: chunk of type %s in a %s column",
                          c->name, g, type_name(m->type), type_name(c->phys));
    if (m->npath != 1 || m->path_len != strlen(c->name) ||
        memcmp(m->path, c->name, m->path_len) != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                          "column %s, row group %zu: path_in_schema names another column",
                          c->name, g);
    if (c->type != TROVE_PQ_OTHER && m->codec != TROVE_PQC_UNCOMPRESSED &&
        m->codec != TROVE_PQC_ZSTD && m->codec != TROVE_PQC_GZIP && m->codec != TROVE_PQC_SNAPPY)
        return TROVE_FAIL(diag, TROVE_ERR_FORMAT, off,
                          "column %s, row group %zu: codec %s is not supported (only "
                          "UNCOMPRESSED, SNAPPY, ZSTD, GZIP)", c->name, g,
                          codec_name(m->codec));
    if (m->num_values != rg->num_rows)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                          "column %s, row group %zu: %lld values in a row group of %lld "
                          "rows", c->name, g, (long long)m->num_values,
                          (long long)rg->num_rows);
    start = m->dictionary_page_offset > 0 ? (uint64_t)m->dictionary_page_offset
                                          : (uint64_t)m->data_page_offset;
    size = (uint64_t)m->total_compressed_size;
    if (start < 4 || start > f->footer_at || size > f->footer_at - start ||
        (uint64_t)m->data_page_offset < start ||
        (rg->num_rows > 0 && (uint64_t)m->data_page_offset >= start + size))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                          "column %s, row group %zu: pages at %llu (%llu bytes, data at "
                          "%lld) outside the file's data [4, %zu)", c->name, g,
                          (unsigned long long)start, (unsigned long long)size,
                          (long long)m->data_page_offset, f->footer_at);
    return TROVE_OK;
}

int trove_pq_open(const uint8_t *buf, size_t len, struct trove_pq_file **out,
                  struct trove_diag *diag)
{
    struct trove_pq_file *f = NULL;
    uint32_t flen;
    uint64_t rows = 0, off;
    int rc;

    if (!out || (!buf && len))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no buffer");
    if (len < 12)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "%zu bytes: too short for a Parquet file", len);
    if (memcmp(buf, "PAR1", 4) != 0)
        return TROVE_FAIL(diag, TROVE_ERR_MAGIC, 0, "no PAR1 magic at the start");
    if (memcmp(buf + len - 4, "PAR1", 4) != 0)
        return TROVE_FAIL(diag, TROVE_ERR_MAGIC, len - 4,
                          "no PAR1 magic at the end (an encrypted footer, or truncated)");
    flen = trove__get_le32(buf + len - 8);
    if (flen > TROVE_PQ_MAX_FOOTER)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, len - 8,
                          "a footer of %u bytes (at most %u)", flen, TROVE_PQ_MAX_FOOTER);
    if (flen > len - 12)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len - 8,
                          "footer length %u past the start of the file of %zu bytes", flen,
                          len);
    if (!(f = trove__calloc(1, sizeof *f)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    f->buf = buf;
    f->len = len;
    f->footer_at = len - 8 - flen;
    off = f->footer_at;
    if ((rc = trove__pq_file_meta_decode(buf + f->footer_at, flen, f->footer_at, &f->fm,
                                         diag)) != TROVE_OK)
        goto out;
    if (f->fm.encrypted) {
        rc = TROVE_FAIL(diag, TROVE_ERR_FORMAT, off, "encrypted files are not supported");
        goto out;
    }
    if (f->fm.nschema < 2 || f->fm.schema[0].num_children != (int32_t)(f->fm.nschema - 1)) {
        rc = TROVE_FAIL(diag, f->fm.nschema < 2 ? TROVE_ERR_CORRUPT : TROVE_ERR_FORMAT, off,
                        "schema of %u elements is not a root and its %u leaf columns",
                        f->fm.nschema, f->fm.nschema ? f->fm.nschema - 1 : 0);
        goto out;
    }
    if (f->fm.nschema - 1 > TROVE_PQ_MAX_COLUMNS) {
        rc = TROVE_FAIL(diag, TROVE_ERR_LIMIT, off, "%u columns (at most %u)",
                        f->fm.nschema - 1, TROVE_PQ_MAX_COLUMNS);
        goto out;
    }
    f->ncols = f->fm.nschema - 1;
    for (size_t i = 0; i < f->ncols; i++)
        if ((rc = check_leaf(f, i, &f->fm.schema[i + 1], off, diag)) != TROVE_OK)
            goto out;
    if ((uint64_t)f->fm.num_rows > TROVE_PQ_MAX_ROWS) {
        rc = TROVE_FAIL(diag, TROVE_ERR_LIMIT, off, "%lld rows (at most %llu)",
                        (long long)f->fm.num_rows, (unsigned long long)TROVE_PQ_MAX_ROWS);
        goto out;
    }
    for (size_t g = 0; g < f->fm.nrow_groups; g++) {
        const struct trove__pq_row_group *rg = &f->fm.row_groups[g];
        if (rg->ncolumns != f->ncols) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                            "row group %zu has %u column chunks for %zu columns", g,
                            rg->ncolumns, f->ncols);
            goto out;
        }
        if ((uint64_t)rg->num_rows > TROVE_PQ_MAX_ROWS - rows) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                            "row groups hold more rows than the file's %lld",
                            (long long)f->fm.num_rows);
            goto out;
        }
        rows += (uint64_t)rg->num_rows;
        for (size_t i = 0; i < f->ncols; i++)
            if ((rc = check_chunk(f, g, i, rg, off, diag)) != TROVE_OK)
                goto out;
    }
    if (rows != (uint64_t)f->fm.num_rows) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                        "row groups hold %llu rows, the file says %lld",
                        (unsigned long long)rows, (long long)f->fm.num_rows);
        goto out;
    }
    *out = f;
    rc = TROVE_OK;
out:
    if (rc != TROVE_OK)
        trove_pq_close(f);
    return rc;
}

void trove_pq_close(struct trove_pq_file *f)
{
    if (!f)
        return;
    trove__pq_file_meta_free(&f->fm);
    free(f);
}

uint64_t trove_pq_rows(const struct trove_pq_file *f) { return (uint64_t)f->fm.num_rows; }
size_t trove_pq_columns(const struct trove_pq_file *f) { return f->ncols; }

const char *trove_pq_column_name(const struct trove_pq_file *f, size_t i)
{
    return i < f->ncols ? f->cols[i].name : NULL;
}

int trove_pq_column_type(const struct trove_pq_file *f, size_t i)
{
    return i < f->ncols ? f->cols[i].type : TROVE_ERR_INVALID;
}

int trove_pq_column_unsigned(const struct trove_pq_file *f, size_t i)
{
    return i < f->ncols ? f->cols[i].is_unsigned : 0;
}

int trove_pq_column_bits(const struct trove_pq_file *f, size_t i)
{
    if (i >= f->ncols || (f->cols[i].type != TROVE_PQ_INT32 && f->cols[i].type != TROVE_PQ_INT64))
        return 0;
    return f->cols[i].bits;
}

int trove_pq_find(const struct trove_pq_file *f, const char *name)
{
    for (size_t i = 0; name && i < f->ncols; i++)
        if (strcmp(f->cols[i].name, name) == 0)
            return (int)i;
    return -1;
}

int trove_pq_column_encoding(const struct trove_pq_file *f, size_t i)
{
    const struct trove__pq_column_meta *m;
    int delta = 0;
    if (i >= f->ncols)
        return TROVE_ERR_INVALID;
    if (f->fm.nrow_groups == 0)
        return TROVE_ERR_NOTFOUND;
    m = &f->fm.row_groups[0].columns[i].meta;
    for (uint32_t k = 0; k < m->nencodings; k++) {
        if (m->encodings[k] == TROVE_PQE_RLE_DICTIONARY ||
            m->encodings[k] == TROVE_PQE_PLAIN_DICTIONARY)
            return TROVE_PQ_ENC_DICT;
        delta |= m->encodings[k] == TROVE_PQE_DELTA_BINARY_PACKED;
    }
    return delta ? TROVE_PQ_ENC_DELTA : TROVE_PQ_ENC_PLAIN;
}

int trove_pq_codec(const struct trove_pq_file *f)
{
    int c;
    if (f->fm.nrow_groups == 0)
        return TROVE_PQ_CODEC_NONE;
    c = f->fm.row_groups[0].columns[0].meta.codec;
    return c == TROVE_PQC_ZSTD     ? TROVE_PQ_CODEC_ZSTD
           : c == TROVE_PQC_GZIP   ? TROVE_PQ_CODEC_GZIP
           : c == TROVE_PQC_SNAPPY ? TROVE_PQ_CODEC_SNAPPY
                                   : TROVE_PQ_CODEC_NONE;
}

/* ---- column readers ---- */

/* Values of a dictionary page a cursor looks up at a time. */
#define CURSOR_WINDOW 4096u

struct rd {
    struct trove_pq_file *f;
    const struct rcol *c;
    size_t col, g, page;
    size_t row0;            /* the first row of row group g */
    struct trove_diag *diag;
    int codec;
    ZSTD_DCtx *zd;
    struct trove_bytes dec, dictdec;  /* decompressed page and dictionary */
    /* dictionary of the current chunk */
    int has_dict;
    size_t nd;
    int64_t *dint;
    uint64_t *dstart;       /* string dictionary: value k is dbase[dstart[k] .. + dlen[k]) */
    uint32_t *dlen;
    const uint8_t *dbase;
    size_t dcap;
    /* per-page scratch */
    uint32_t *idx;
    uint64_t *pstart;
    uint32_t *plen;
    size_t pcap;
    /* where the walk is: row group g's chunk from pos to end, done of its want values */
    int in_chunk;
    uint64_t pos, end;
    size_t done, want;
    /* a cursor (trove_pq_cursor_*): each data page is decoded to iout[0 ..), except that a
     * dictionary page's indices stay in idx (lazy) and are looked up a window at a time */
    int cursor, lazy;
    size_t ocap;
    /* outputs */
    int64_t *iout;
    struct trove_pq_strings *sout;
    struct trove_bytes sbytes;
    size_t offcap;
};

static int perr(struct rd *x, int code, uint64_t off, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int perr(struct rd *x, int code, uint64_t off, const char *fmt, ...)
{
    char msg[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return TROVE_FAIL(x->diag, code, off, "column %s, row group %zu, page %zu: %s",
                      x->c->name, x->g, x->page, msg);
}

/* A sub-decoder failed with rc and its own diag ld: restate it with our context. */
static int sub_err(struct rd *x, int rc, uint64_t at, const struct trove_diag *ld)
{
    return perr(x, rc, at + (ld->msg[0] ? ld->offset : 0), "%s",
                ld->msg[0] ? ld->msg : trove_strerror(rc));
}

static int decompress(struct rd *x, const uint8_t *src, size_t slen, size_t ulen, uint64_t at,
                      struct trove_bytes *dst, const uint8_t **out)
{
    int rc;
    if (x->codec == TROVE_PQC_UNCOMPRESSED) {
        if (slen != ulen)
            return perr(x, TROVE_ERR_CORRUPT, at,
                        "uncompressed page of %zu bytes declares %zu", slen, ulen);
        *out = src;
        return TROVE_OK;
    }
    dst->len = 0;
    if ((rc = trove_bytes_reserve(dst, ulen ? ulen : 1)) != TROVE_OK)
        return perr(x, rc, at, "out of memory for a page of %zu bytes", ulen);
    if (x->codec == TROVE_PQC_ZSTD) {
        unsigned long long fcs = ZSTD_getFrameContentSize(src, slen);
        size_t r;
        if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != ZSTD_CONTENTSIZE_ERROR && fcs != ulen)
            return perr(x, fcs > TROVE_PQ_MAX_PAGE ? TROVE_ERR_BOMB : TROVE_ERR_CORRUPT, at,
                        "zstd frame of %llu bytes in a page that declares %zu", fcs, ulen);
        if (!x->zd && !(x->zd = ZSTD_createDCtx()))
            return perr(x, TROVE_ERR_NOMEM, at, "out of memory");
        r = ZSTD_decompressDCtx(x->zd, dst->ptr, ulen, src, slen);
        if (ZSTD_isError(r))
            return perr(x, TROVE_ERR_CORRUPT, at, "zstd: %s (page declares %zu bytes)",
                        ZSTD_getErrorName(r), ulen);
        if (r != ulen)
            return perr(x, TROVE_ERR_CORRUPT, at, "zstd page of %zu bytes declares %zu", r,
                        ulen);
    } else if (x->codec == TROVE_PQC_SNAPPY) {
        struct trove_diag ld = {0};
        if ((rc = trove__snappy_decode(src, slen, dst->ptr, ulen, &ld)) != TROVE_OK)
            return sub_err(x, rc, at, &ld);
    } else {
        z_stream zs;
        int zr;
        memset(&zs, 0, sizeof zs);
        if (inflateInit2(&zs, 15 + 32) != Z_OK)
            return perr(x, TROVE_ERR_NOMEM, at, "out of memory");
        zs.next_in = (Bytef *)(uintptr_t)src;
        zs.avail_in = (uInt)slen;
        zs.next_out = dst->ptr;
        zs.avail_out = (uInt)ulen;
        zr = inflate(&zs, Z_FINISH);
        if (zr == Z_STREAM_END && zs.total_out == ulen) {
            rc = TROVE_OK;
        } else if (zr == Z_STREAM_END) {
            rc = perr(x, TROVE_ERR_CORRUPT, at, "gzip page inflates to %lu of its declared %zu "
                      "bytes", zs.total_out, ulen);
        } else if (zs.avail_out == 0 && (zr == Z_BUF_ERROR || zr == Z_OK)) {
            rc = perr(x, TROVE_ERR_CORRUPT, at, "gzip page inflates past its declared %zu "
                      "bytes", ulen);
        } else {
            rc = perr(x, zr == Z_MEM_ERROR ? TROVE_ERR_NOMEM : TROVE_ERR_CORRUPT, at,
                      "gzip: %s", zs.msg ? zs.msg : "truncated or malformed stream");
        }
        inflateEnd(&zs);
        if (rc != TROVE_OK)
            return rc;
    }
    dst->len = ulen;
    *out = dst->ptr;
    return TROVE_OK;
}

static int grow_scratch(struct rd *x, size_t n)
{
    void *p;
    if (n <= x->pcap)
        return TROVE_OK;
    if (!(p = trove__realloc(x->idx, n * sizeof *x->idx)))
        return TROVE_ERR_NOMEM;
    x->idx = p;
    if (!(p = trove__realloc(x->pstart, n * sizeof *x->pstart)))
        return TROVE_ERR_NOMEM;
    x->pstart = p;
    if (!(p = trove__realloc(x->plen, n * sizeof *x->plen)))
        return TROVE_ERR_NOMEM;
    x->plen = p;
    x->pcap = n;
    return TROVE_OK;
}

static int64_t widen(const struct rd *x, int64_t v)
{
    if (x->c->type == TROVE_PQ_INT32)
        return x->c->is_unsigned ? (int64_t)(uint32_t)v : (int64_t)(int32_t)v;
    return v;
}

static int read_dict(struct rd *x, const struct trove__pq_page_header *h, const uint8_t *p,
                     size_t len, uint64_t at)
{
    struct trove_diag ld = {0};
    size_t n = (size_t)h->num_values, used;
    int rc;
    void *q;

    if (h->encoding != TROVE_PQE_PLAIN && h->encoding != TROVE_PQE_PLAIN_DICTIONARY)
        return perr(x, TROVE_ERR_FORMAT, at, "dictionary page in encoding %s",
                    encoding_name(h->encoding));
    if (n > len / (x->c->type == TROVE_PQ_STRING ? 4 : x->c->type == TROVE_PQ_INT32 ? 4 : 8))
        return perr(x, TROVE_ERR_CORRUPT, at, "dictionary of %zu values in %zu bytes", n, len);
    if (n > x->dcap) {
        if (!(q = trove__realloc(x->dint, (n ? n : 1) * sizeof *x->dint)))
            return perr(x, TROVE_ERR_NOMEM, at, "out of memory");
        x->dint = q;
        if (!(q = trove__realloc(x->dstart, (n ? n : 1) * sizeof *x->dstart)))
            return perr(x, TROVE_ERR_NOMEM, at, "out of memory");
        x->dstart = q;
        if (!(q = trove__realloc(x->dlen, (n ? n : 1) * sizeof *x->dlen)))
            return perr(x, TROVE_ERR_NOMEM, at, "out of memory");
        x->dlen = q;
        x->dcap = n;
    }
    if (x->c->type == TROVE_PQ_STRING) {
        if (n && (rc = trove__pq_plain_decode_strings(p, len, n, TROVE_PQ_MAX_STRING, x->dstart,
                                                      x->dlen, &used, &ld)) != TROVE_OK)
            return sub_err(x, rc, at, &ld);
        x->dbase = p;
    } else {
        for (size_t k = 0; k < n; k++)
            x->dint[k] = widen(x, x->c->type == TROVE_PQ_INT32
                                      ? (int64_t)(int32_t)trove__get_le32(p + 4 * k)
                                      : (int64_t)trove__get_le64(p + 8 * k));
    }
    x->nd = n;
    x->has_dict = 1;
    return TROVE_OK;
}

static int put_strings_cap(struct rd *x, size_t need)
{
    size_t ncap;
    void *p;
    if (need <= x->offcap)
        return TROVE_OK;
    ncap = x->offcap ? x->offcap : 1024;
    while (ncap < need)
        ncap *= 2;
    if (!(p = trove__realloc(x->sout->off, ncap * sizeof *x->sout->off)))
        return TROVE_ERR_NOMEM;
    x->sout->off = p;
    x->offcap = ncap;
    return TROVE_OK;
}

static int put_string(struct rd *x, const uint8_t *p, size_t len, size_t row, uint64_t at)
{
    if (x->sbytes.len + len > TROVE_PQ_MAX_STRING_BYTES)
        return perr(x, TROVE_ERR_LIMIT, at, "string column over %llu bytes",
                    (unsigned long long)TROVE_PQ_MAX_STRING_BYTES);
    if (len && trove_bytes_append(&x->sbytes, p, len) != TROVE_OK)
        return perr(x, TROVE_ERR_NOMEM, at, "out of memory");
    x->sout->off[row + 1] = x->sbytes.len;
    return TROVE_OK;
}

/* Decode n values of a data page in encoding enc from p[0..len) to rows [row, row + n). */
static int read_values(struct rd *x, int enc, const uint8_t *p, size_t len, size_t n, size_t row,
                       uint64_t at)
{
    struct trove_diag ld = {0};
    int is_str = x->c->type == TROVE_PQ_STRING, is32 = x->c->type == TROVE_PQ_INT32, rc;
    size_t used;

    if (n == 0)
        return TROVE_OK;
    if ((rc = grow_scratch(x, n)) != TROVE_OK)
        return perr(x, rc, at, "out of memory");
    if (is_str && (rc = put_strings_cap(x, row + n + 1)) != TROVE_OK)
        return perr(x, rc, at, "out of memory");
    if (enc == TROVE_PQE_PLAIN) {
        if (is_str) {
            if ((rc = trove__pq_plain_decode_strings(p, len, n, TROVE_PQ_MAX_STRING, x->pstart,
                                                     x->plen, &used, &ld)) != TROVE_OK)
                return sub_err(x, rc, at, &ld);
            for (size_t k = 0; k < n; k++)
                if ((rc = put_string(x, p + x->pstart[k], x->plen[k], row + k, at)) != TROVE_OK)
                    return rc;
            return TROVE_OK;
        }
        if (len / (is32 ? 4 : 8) < n)
            return perr(x, TROVE_ERR_TRUNCATED, at, "%zu PLAIN values in %zu bytes", n, len);
        for (size_t k = 0; k < n; k++)
            x->iout[row + k] = widen(x, is32 ? (int64_t)(int32_t)trove__get_le32(p + 4 * k)
                                             : (int64_t)trove__get_le64(p + 8 * k));
        return TROVE_OK;
    }
    if (enc == TROVE_PQE_RLE_DICTIONARY || enc == TROVE_PQE_PLAIN_DICTIONARY) {
        unsigned bw;
        if (!x->has_dict)
            return perr(x, TROVE_ERR_CORRUPT, at, "dictionary-encoded page without a dictionary");
        if (len < 1)
            return perr(x, TROVE_ERR_TRUNCATED, at, "dictionary page data lacks its bit width");
        bw = p[0];
        if (bw > 32)
            return perr(x, TROVE_ERR_CORRUPT, at, "dictionary index bit width %u over 32", bw);
        if ((rc = trove__pq_rle_decode(p + 1, len - 1, bw, x->idx, n, NULL, &ld)) != TROVE_OK)
            return sub_err(x, rc, at + 1, &ld);
        {
            /* Check every index first (a max, which vectorizes), then gather without a
             * branch. */
            uint32_t top = 0;
            for (size_t k = 0; k < n; k++)
                top = x->idx[k] > top ? x->idx[k] : top;
            if (top >= x->nd)
                return perr(x, TROVE_ERR_CORRUPT, at,
                            "dictionary index %u past the dictionary of %zu values", top, x->nd);
        }
        if (!is_str && x->cursor) {
            x->lazy = 1;
            return TROVE_OK;
        }
        if (!is_str) {
            const int64_t *dict = x->dint;
            const uint32_t *idx = x->idx;
            int64_t *o = x->iout + row;
            for (size_t k = 0; k < n; k++)
                o[k] = dict[idx[k]];
            return TROVE_OK;
        }
        for (size_t k = 0; k < n; k++) {
            uint32_t v = x->idx[k];
            if ((rc = put_string(x, x->dbase + x->dstart[v], x->dlen[v], row + k, at)) !=
                TROVE_OK)
                return rc;
        }
        return TROVE_OK;
    }
    if (enc == TROVE_PQE_DELTA_BINARY_PACKED && !is_str) {
        if ((rc = trove__pq_delta_decode(p, len, n, is32, x->iout + row, &used, &ld)) !=
            TROVE_OK)
            return sub_err(x, rc, at, &ld);
        if (is32 && x->c->is_unsigned)
            for (size_t k = 0; k < n; k++)
                x->iout[row + k] = widen(x, x->iout[row + k]);
        return TROVE_OK;
    }
    return perr(x, TROVE_ERR_FORMAT, at, "encoding %s is not supported for a %s column",
                encoding_name(enc), is_str ? "string" : "integer");
}

/* Definition levels of an optional column: every one must be 1 (no nulls). */
static int check_levels(struct rd *x, const uint8_t *p, size_t len, size_t n, uint64_t at)
{
    struct trove_diag ld = {0};
    int rc;
    if ((rc = grow_scratch(x, n ? n : 1)) != TROVE_OK)
        return perr(x, rc, at, "out of memory");
    if ((rc = trove__pq_rle_decode(p, len, 1, x->idx, n, NULL, &ld)) != TROVE_OK)
        return sub_err(x, rc, at, &ld);
    for (size_t k = 0; k < n; k++)
        if (x->idx[k] != 1)
            return perr(x, TROVE_ERR_FORMAT, at, "nulls are not supported (row %zu of the page)",
                        k);
    return TROVE_OK;
}

/* Walk the column's pages on from where the last call stopped, to the next data page, and
 * decode it: to rows [row0 + done ..) of the outputs, or for a cursor to iout[0 ..). *n_out
 * gets its values, 0 at the end of the column. */
static int next_page(struct rd *x, size_t *n_out)
{
    const struct trove__pq_row_group *rg;
    const struct trove__pq_column_meta *m;
    int rc;

    *n_out = 0;
    for (;;) {
        struct trove__pq_page_header h;
        struct trove_diag ld = {0};
        size_t hlen, body, row;
        uint64_t pos;
        const uint8_t *data;
        if (!x->in_chunk) {
            uint64_t start;
            if (x->g >= x->f->fm.nrow_groups)
                return TROVE_OK;
            rg = &x->f->fm.row_groups[x->g];
            m = &rg->columns[x->col].meta;
            start = m->dictionary_page_offset > 0 ? (uint64_t)m->dictionary_page_offset
                                                  : (uint64_t)m->data_page_offset;
            x->pos = start;
            x->end = start + (uint64_t)m->total_compressed_size;
            x->want = (size_t)rg->num_rows;
            x->done = 0;
            x->codec = m->codec;
            x->has_dict = 0;
            x->nd = 0;
            x->page = 0;
            x->in_chunk = 1;
        }
        if (x->done == x->want) {
            x->row0 += x->want;
            x->g++;
            x->in_chunk = 0;
            continue;
        }
        pos = x->pos;
        row = x->cursor ? 0 : x->row0 + x->done;
        if (pos >= x->end)
            return perr(x, TROVE_ERR_CORRUPT, pos,
                        "the column chunk ends after %zu of its %zu values", x->done, x->want);
        if ((rc = trove__pq_page_header_decode(x->f->buf + pos, (size_t)(x->end - pos), pos, &h,
                                               &hlen, &ld)) != TROVE_OK)
            return sub_err(x, rc, 0, &ld);
        body = (size_t)pos + hlen;
        if ((uint32_t)h.uncompressed_page_size > TROVE_PQ_MAX_PAGE ||
            (uint32_t)h.compressed_page_size > TROVE_PQ_MAX_PAGE)
            return perr(x, TROVE_ERR_BOMB, pos, "a page of %d bytes (%d compressed) is over "
                        "the limit of %u", h.uncompressed_page_size, h.compressed_page_size,
                        TROVE_PQ_MAX_PAGE);
        if ((uint64_t)h.compressed_page_size > x->end - body)
            return perr(x, TROVE_ERR_TRUNCATED, pos,
                        "a page of %d bytes past the end of its column chunk",
                        h.compressed_page_size);
        if ((h.type == TROVE_PQP_DATA_PAGE || h.type == TROVE_PQP_DATA_PAGE_V2) &&
            (size_t)h.num_values > x->want - x->done)
            return perr(x, TROVE_ERR_CORRUPT, pos, "a page of %zu values past the chunk's "
                        "%zu", (size_t)h.num_values, x->want);
        if ((h.type == TROVE_PQP_DATA_PAGE || h.type == TROVE_PQP_DATA_PAGE_V2) && x->cursor) {
            size_t need = (size_t)h.num_values;
            if ((h.encoding == TROVE_PQE_RLE_DICTIONARY ||
                 h.encoding == TROVE_PQE_PLAIN_DICTIONARY) && need > CURSOR_WINDOW)
                need = CURSOR_WINDOW;
            if (need > x->ocap) {
                void *q = trove__realloc(x->iout, need * sizeof *x->iout);
                if (!q)
                    return perr(x, TROVE_ERR_NOMEM, pos, "out of memory");
                x->iout = q;
                x->ocap = need;
            }
            x->lazy = 0;
        }
        if (h.type == TROVE_PQP_DICTIONARY_PAGE) {
            if (x->page != 0 || x->has_dict)
                return perr(x, TROVE_ERR_CORRUPT, pos,
                            "a dictionary page that is not the chunk's first page");
            if ((rc = decompress(x, x->f->buf + body, (size_t)h.compressed_page_size,
                                 (size_t)h.uncompressed_page_size, pos, &x->dictdec, &data)) !=
                TROVE_OK)
                return rc;
            if ((rc = read_dict(x, &h, data, (size_t)h.uncompressed_page_size, pos)) != TROVE_OK)
                return rc;
        } else if (h.type == TROVE_PQP_DATA_PAGE) {
            size_t n = (size_t)h.num_values, len = (size_t)h.uncompressed_page_size;
            if ((rc = decompress(x, x->f->buf + body, (size_t)h.compressed_page_size, len, pos,
                                 &x->dec, &data)) != TROVE_OK)
                return rc;
            if (x->c->optional) {
                uint32_t llen;
                if (len < 4)
                    return perr(x, TROVE_ERR_TRUNCATED, pos, "page ends in its level length");
                llen = trove__get_le32(data);
                if (llen > len - 4)
                    return perr(x, TROVE_ERR_TRUNCATED, pos,
                                "definition levels of %u bytes past the page", llen);
                if ((rc = check_levels(x, data + 4, llen, n, pos)) != TROVE_OK)
                    return rc;
                data += 4 + llen;
                len -= 4 + (size_t)llen;
            }
            if ((rc = read_values(x, h.encoding, data, len, n, row, pos)) != TROVE_OK)
                return rc;
            x->done += n;
            *n_out = n;
        } else if (h.type == TROVE_PQP_DATA_PAGE_V2) {
            size_t n = (size_t)h.num_values, lv = (size_t)h.def_len + (size_t)h.rep_len;
            size_t clen = (size_t)h.compressed_page_size, ulen = (size_t)h.uncompressed_page_size;
            int codec = x->codec;
            if (h.num_nulls != 0)
                return perr(x, TROVE_ERR_FORMAT, pos, "nulls are not supported (%d in the page)",
                            h.num_nulls);
            if (h.rep_len != 0)
                return perr(x, TROVE_ERR_FORMAT, pos, "repetition levels: nested columns are "
                            "not supported");
            if (lv > clen || lv > ulen)
                return perr(x, TROVE_ERR_CORRUPT, pos, "levels of %zu bytes in a page of %zu",
                            lv, clen);
            if (x->c->optional && (rc = check_levels(x, x->f->buf + body, (size_t)h.def_len, n,
                                                     pos)) != TROVE_OK)
                return rc;
            if (!h.is_compressed)
                x->codec = TROVE_PQC_UNCOMPRESSED;
            rc = decompress(x, x->f->buf + body + lv, clen - lv, ulen - lv, pos, &x->dec, &data);
            x->codec = codec;
            if (rc != TROVE_OK)
                return rc;
            if ((rc = read_values(x, h.encoding, data, ulen - lv, n, row, pos)) != TROVE_OK)
                return rc;
            x->done += n;
            *n_out = n;
        }
        /* Other pages (index pages) are skipped. */
        x->pos = body + (size_t)h.compressed_page_size;
        x->page++;
        if (*n_out > 0)
            return TROVE_OK;
    }
}

static void rd_free(struct rd *x)
{
    ZSTD_freeDCtx(x->zd);
    trove_bytes_free(&x->dec);
    trove_bytes_free(&x->dictdec);
    free(x->dint);
    free(x->dstart);
    free(x->dlen);
    free(x->idx);
    free(x->pstart);
    free(x->plen);
    trove_bytes_free(&x->sbytes);
    if (x->cursor)
        free(x->iout);
}

static int read_column(struct trove_pq_file *f, size_t i, int64_t *iout,
                       struct trove_pq_strings *sout, struct trove_diag *diag)
{
    struct rd x;
    int rc = TROVE_OK;

    memset(&x, 0, sizeof x);
    x.f = f;
    x.col = i;
    x.c = &f->cols[i];
    x.diag = diag;
    x.iout = iout;
    x.sout = sout;
    if (sout && (rc = put_strings_cap(&x, 1)) != TROVE_OK) {
        rc = TROVE_FAIL(diag, rc, 0, "out of memory");
        goto out;
    }
    if (sout)
        sout->off[0] = 0;
    for (;;) {
        size_t n;
        if ((rc = next_page(&x, &n)) != TROVE_OK)
            goto out;
        if (n == 0)
            break;
    }
    if (sout) {
        sout->n = (uint64_t)f->fm.num_rows;
        sout->bytes = x.sbytes.ptr;
        if (!sout->bytes && !(sout->bytes = trove__malloc(1))) {
            rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
            goto out;
        }
        x.sbytes.ptr = NULL;
    }
out:
    rd_free(&x);
    return rc;
}

/* May column i be read as a string column (want_string) or an integer column? */
static int readable(const struct trove_pq_file *f, size_t i, int want_string,
                    struct trove_diag *diag)
{
    const struct rcol *c = &f->cols[i];
    if (c->type == TROVE_PQ_OTHER)
        return TROVE_FAIL(diag, TROVE_ERR_FORMAT, 0,
                          "column %s has type %s, which trove does not read (only INT32, "
                          "INT64 and BYTE_ARRAY)", c->name, type_name(c->phys));
    if ((c->type == TROVE_PQ_STRING) != want_string)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "column %s is not %s column", c->name,
                          want_string ? "a string" : "an integer");
    return TROVE_OK;
}

int trove_pq_read_int(struct trove_pq_file *f, size_t i, int64_t *out, struct trove_diag *diag)
{
    int rc;
    if (!f || i >= f->ncols || (!out && f->fm.num_rows > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no such column %zu", i);
    if ((rc = readable(f, i, 0, diag)) != TROVE_OK)
        return rc;
    return read_column(f, i, out, NULL, diag);
}

int trove_pq_read_strings(struct trove_pq_file *f, size_t i, struct trove_pq_strings *out,
                          struct trove_diag *diag)
{
    struct trove_pq_strings s = {0};
    int rc;
    if (!f || i >= f->ncols || !out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no such column %zu", i);
    if ((rc = readable(f, i, 1, diag)) != TROVE_OK)
        return rc;
    rc = read_column(f, i, NULL, &s, diag);
    if (rc != TROVE_OK) {
        trove_pq_strings_free(&s);
        return rc;
    }
    trove_pq_strings_free(out);
    *out = s;
    return TROVE_OK;
}

void trove_pq_strings_free(struct trove_pq_strings *s)
{
    if (!s)
        return;
    free(s->off);
    free(s->bytes);
    memset(s, 0, sizeof *s);
}

struct trove_pq_cursor {
    struct rd x;
    size_t n, at;            /* the current page's values and how many were taken */
    size_t w0, w1;           /* a lazy page: values [w0, w1) are looked up in x.iout */
    int broken;
};

int trove_pq_cursor_new(struct trove_pq_file *f, size_t i, struct trove_pq_cursor **out,
                        struct trove_diag *diag)
{
    struct trove_pq_cursor *c;
    int rc;

    if (!f || i >= f->ncols || !out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no such column %zu", i);
    if ((rc = readable(f, i, 0, diag)) != TROVE_OK)
        return rc;
    if (!(c = trove__calloc(1, sizeof *c)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    c->x.f = f;
    c->x.col = i;
    c->x.c = &f->cols[i];
    c->x.cursor = 1;
    *out = c;
    return TROVE_OK;
}

int trove_pq_cursor_peek(struct trove_pq_cursor *c, const int64_t **vals_out, size_t *n_out,
                         struct trove_diag *diag)
{
    int rc;

    if (!c || c->broken || !vals_out || !n_out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "bad arguments to trove_pq_cursor_peek");
    if (c->at == c->n) {
        c->x.diag = diag;
        c->n = c->at = 0;
        rc = next_page(&c->x, &c->n);
        c->x.diag = NULL;
        if (rc != TROVE_OK) {
            c->n = 0;
            c->broken = 1;
            return rc;
        }
        c->w0 = c->w1 = 0;
    }
    if (!c->x.lazy) {
        *vals_out = c->x.iout + c->at;
        *n_out = c->n - c->at;
        return TROVE_OK;
    }
    if (c->at >= c->w1) {
        /* The indices were checked against the dictionary when the page was decoded. */
        const int64_t *dict = c->x.dint;
        const uint32_t *idx = c->x.idx + c->at;
        size_t k = c->n - c->at < CURSOR_WINDOW ? c->n - c->at : CURSOR_WINDOW;
        for (size_t i = 0; i < k; i++)
            c->x.iout[i] = dict[idx[i]];
        c->w0 = c->at;
        c->w1 = c->at + k;
    }
    *vals_out = c->x.iout + (c->at - c->w0);
    *n_out = c->w1 - c->at;
    return TROVE_OK;
}

void trove_pq_cursor_advance(struct trove_pq_cursor *c, size_t k)
{
    assert(c && k <= c->n - c->at);
    c->at += k;
}

void trove_pq_cursor_free(struct trove_pq_cursor *c)
{
    if (!c)
        return;
    rd_free(&c->x);
    free(c);
}
