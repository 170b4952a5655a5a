/*
 * pq_write.c: trove's Parquet writer (include/trove/parquet.h). Rows are buffered per
 * column until a row group is full; each row group is then encoded column by column:
 *
 *   column chunk   [dictionary page: PLAIN values] data page ... data page
 *   data page v1   PageHeader | body (compressed as a whole by the file's codec)
 *   body           PLAIN values, or DELTA_BINARY_PACKED, or 1 byte bit width + RLE/bit-packed
 *                  hybrid dictionary indices (RLE_DICTIONARY); required columns have no
 *                  levels
 *
 * trove_pq_writer_add_groups and _add_fetch skip the buffers: each row group is encoded
 * straight from the caller's arrays (or what its fetch gives, a column at a time), which
 * saves a copy and the buffers' memory; the bytes are the same.
 *
 * The file is made in w->body. Without a sink body is the whole file, handed over at finish;
 * with one (trove_pq_writer_set_sink) body is drained into the sink after each row group
 * and after the footer, so the writer holds one row group's bytes at a time, and the
 * footer's row group records (offsets from w->flushed + body.len) until the end. The bytes
 * are the same either way.
 *
 * Pages hold at most page_bytes (1 MiB by default) of values (PLAIN size; a dictionary
 * index counts 4 bytes, and such a page has at least 8 rows), so a large row group still has
 * many pages. The pages of a dictionary-encoded chunk are also cut where a narrower bit
 * width pays for a page header, and the dictionary ordered to make them narrow
 * (trove__pq_dict_layout). A dictionary is given up for PLAIN when a chunk has more than
 * TROVE_PQ_DICT_MAX_ENTRIES distinct values or their PLAIN size passes
 * TROVE_PQ_DICT_MAX_BYTES. zstd runs at level 3, gzip (a gzip wrapper, as Parquet wants)
 * at level 1 (level 6 is 5x slower for a few percent). The output depends only on the input: no time or randomness goes in.
 */
#include "trove/parquet.h"
#include "common/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "pq_encoding.h"
#include "pq_meta.h"
#include "common/endian.h"

#define TROVE_PQ_PAGE_BYTES (1u << 20)
#define TROVE_PQ_DICT_MAX_ENTRIES 65536u
#define TROVE_PQ_DICT_MAX_BYTES (1u << 20)
#define TROVE_PQ_ZSTD_LEVEL 3
#define TROVE_PQ_GZIP_LEVEL 1
#define TROVE_PQ_STATS_MAX 4096u /* string statistics longer than this are left out */
/* What starting a data page costs, for the cuts of dictionary-encoded chunks: a v1 page
 * header (about 20 bytes of Thrift), the width byte and a run header. */
#define PQ_PAGE_COST 24u
/* With a codec, each page is compressed alone: a cut also costs what the codec would have
 * found across it, so pages are cut only for a large saving. */
#define PQ_PAGE_COST_CODEC 4096u

struct wcol {
    struct trove_pq_column_def def;
    char name[TROVE_PQ_MAX_NAME + 1];
    int64_t *iv;            /* integers: n values (INT32 sign-extended) */
    struct trove_bytes sb;  /* strings: bytes ... */
    uint64_t *soff;         /* ... and n + 1 offsets */
    size_t cap;
};

struct trove_pq_writer {
    size_t ncols;
    struct wcol *cols;
    int codec;
    uint64_t rg_rows;
    size_t page_bytes;
    size_t nbuf;            /* rows buffered */
    uint64_t rows;          /* rows in the file */
    struct trove_bytes body; /* the file's bytes not yet given to the sink (all, without) */
    struct trove_sink sink; /* write NULL: none */
    uint64_t flushed;       /* bytes given to the sink: body starts at this file offset */
    struct trove__pq_row_group *rgs;
    uint32_t nrgs, rgcap;
    struct trove_bytes page, comp, hdr;
    struct trove_bytes bodies; /* a dictionary-encoded chunk's data page bodies */
    struct trove_bytes alt;    /* a DELTA chunk, while its dictionary twin is tried */
    uint32_t *idx;
    size_t idxcap;
    const char **sptr;      /* strings of a chunk as pointers and lengths */
    uint32_t *slen;
    size_t scap;
    int64_t *wide;          /* an INT32 column's values widened, for the delta encoder */
    size_t widecap;
    ZSTD_CCtx *zc;
    z_stream zs;
    int zs_ready;
    int broken;
};

int trove_pq_writer_set_page_bytes(struct trove_pq_writer *w, size_t bytes)
{
    if (!w || bytes < 1 || bytes > TROVE_PQ_MAX_PAGE / 2)
        return TROVE_ERR_INVALID;
    w->page_bytes = bytes;
    return TROVE_OK;
}

int trove_pq_writer_set_sink(struct trove_pq_writer *w, const struct trove_sink *sink)
{
    if (!w || !sink || !sink->write || w->broken || w->sink.write || w->rows || w->nbuf ||
        w->nrgs)
        return TROVE_ERR_INVALID;
    w->sink = *sink;
    return TROVE_OK;
}

uint64_t trove_pq_writer_bytes(const struct trove_pq_writer *w)
{
    return w ? w->flushed + w->body.len : 0;
}

/* The file offset of the next byte the writer makes. */
static int64_t here(const struct trove_pq_writer *w)
{
    return (int64_t)(w->flushed + w->body.len);
}

/* With a sink, hand it the bytes made so far; body is then empty. */
static int drain(struct trove_pq_writer *w)
{
    int rc;

    if (!w->sink.write || w->body.len == 0)
        return TROVE_OK;
    if ((rc = w->sink.write(w->sink.ctx, w->body.ptr, w->body.len)) != TROVE_OK)
        return rc;
    w->flushed += w->body.len;
    w->body.len = 0;
    return TROVE_OK;
}

int trove_pq_writer_new(const struct trove_pq_column_def *cols, size_t ncols, int codec,
                        uint64_t row_group_rows, struct trove_pq_writer **out)
{
    struct trove_pq_writer *w = NULL;
    int rc = TROVE_ERR_INVALID;

    if (!out || !cols || ncols < 1 || ncols > TROVE_PQ_MAX_COLUMNS ||
        (codec != TROVE_PQ_CODEC_NONE && codec != TROVE_PQ_CODEC_ZSTD &&
         codec != TROVE_PQ_CODEC_GZIP) ||
        row_group_rows > TROVE_PQ_MAX_ROWS)
        return TROVE_ERR_INVALID;
    for (size_t i = 0; i < ncols; i++) {
        const struct trove_pq_column_def *d = &cols[i];
        size_t len = d->name ? strlen(d->name) : 0;
        if (len < 1 || len > TROVE_PQ_MAX_NAME)
            return TROVE_ERR_INVALID;
        for (size_t k = 0; k < i; k++)
            if (strcmp(cols[k].name, d->name) == 0)
                return TROVE_ERR_INVALID;
        if (d->encoding != TROVE_PQ_ENC_PLAIN && d->encoding != TROVE_PQ_ENC_DICT &&
            d->encoding != TROVE_PQ_ENC_DELTA)
            return TROVE_ERR_INVALID;
        if (d->type == TROVE_PQ_STRING) {
            if (d->encoding == TROVE_PQ_ENC_DELTA)
                return TROVE_ERR_INVALID;
        } else if (d->type == TROVE_PQ_INT32 || d->type == TROVE_PQ_INT64) {
            int phys = d->type == TROVE_PQ_INT32 ? 32 : 64;
            if ((d->bits != 8 && d->bits != 16 && d->bits != 32 && d->bits != 64) ||
                d->bits > phys)
                return TROVE_ERR_INVALID;
        } else {
            return TROVE_ERR_INVALID;
        }
    }
    rc = TROVE_ERR_NOMEM;
    if (!(w = trove__calloc(1, sizeof *w)) || !(w->cols = trove__calloc(ncols, sizeof *w->cols)))
        goto out;
    w->ncols = ncols;
    for (size_t i = 0; i < ncols; i++) {
        w->cols[i].def = cols[i];
        memcpy(w->cols[i].name, cols[i].name, strlen(cols[i].name) + 1);
        w->cols[i].def.name = w->cols[i].name;
        w->cols[i].def.is_unsigned = cols[i].type != TROVE_PQ_STRING && cols[i].is_unsigned;
    }
    w->codec = codec;
    w->rg_rows = row_group_rows ? row_group_rows : TROVE_PQ_DEFAULT_ROW_GROUP;
    w->page_bytes = TROVE_PQ_PAGE_BYTES;
    if (trove_bytes_append(&w->body, "PAR1", 4) != TROVE_OK)
        goto out;
    *out = w;
    rc = TROVE_OK;
out:
    if (rc != TROVE_OK)
        trove_pq_writer_free(w);
    return rc;
}

void trove_pq_writer_free(struct trove_pq_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; w->cols && i < w->ncols; i++) {
        free(w->cols[i].iv);
        free(w->cols[i].soff);
        trove_bytes_free(&w->cols[i].sb);
    }
    free(w->cols);
    for (uint32_t g = 0; g < w->nrgs; g++) {
        for (uint32_t c = 0; c < w->rgs[g].ncolumns; c++)
            if (w->rgs[g].columns[c].meta.has_stats)
                free((void *)(uintptr_t)w->rgs[g].columns[c].meta.stats.min);
        free(w->rgs[g].columns);
    }
    free(w->rgs);
    trove_bytes_free(&w->body);
    trove_bytes_free(&w->page);
    trove_bytes_free(&w->bodies);
    trove_bytes_free(&w->alt);
    trove_bytes_free(&w->comp);
    trove_bytes_free(&w->hdr);
    free(w->idx);
    free(w->sptr);
    free(w->slen);
    free(w->wide);
    ZSTD_freeCCtx(w->zc);
    if (w->zs_ready)
        deflateEnd(&w->zs);
    free(w);
}

/* Whether v fits column d's logical width. */
static int fits(const struct trove_pq_column_def *d, int64_t v)
{
    int phys = d->type == TROVE_PQ_INT32 ? 32 : 64;
    if (d->bits >= phys)
        return 1;
    if (d->is_unsigned)
        return v >= 0 && (uint64_t)v < (1ull << d->bits);
    return v >= -(1ll << (d->bits - 1)) && v < (1ll << (d->bits - 1));
}

static int grow_col(struct wcol *c, size_t need)
{
    size_t ncap;
    void *p;
    if (need <= c->cap)
        return TROVE_OK;
    ncap = c->cap ? c->cap : 1024;
    while (ncap < need)
        ncap *= 2;
    if (c->def.type == TROVE_PQ_STRING) {
        if (!(p = trove__realloc(c->soff, (ncap + 1) * sizeof *c->soff)))
            return TROVE_ERR_NOMEM;
        c->soff = p;
    } else {
        if (!(p = trove__realloc(c->iv, ncap * sizeof *c->iv)))
            return TROVE_ERR_NOMEM;
        c->iv = p;
    }
    c->cap = ncap;
    return TROVE_OK;
}

/* Buffer rows [from, from + k) of the caller's columns. */
static int buffer_rows(struct trove_pq_writer *w, const struct trove_pq_column_data *cols,
                       size_t from, size_t k)
{
    int rc;
    for (size_t i = 0; i < w->ncols; i++) {
        struct wcol *c = &w->cols[i];
        const struct trove_pq_column_data *d = &cols[i];
        if ((rc = grow_col(c, w->nbuf + k)) != TROVE_OK)
            return rc;
        if (c->def.type == TROVE_PQ_STRING) {
            if (w->nbuf == 0)
                c->soff[0] = 0;
            for (size_t r = from; r < from + k; r++) {
                if (d->str_len[r] > TROVE_PQ_MAX_STRING || (d->str_len[r] && !d->str[r]))
                    return TROVE_ERR_INVALID;
                if ((rc = trove_bytes_append(&c->sb, d->str[r], d->str_len[r])) != TROVE_OK)
                    return rc;
                c->soff[w->nbuf + (r - from) + 1] = c->sb.len;
            }
        } else if (c->def.type == TROVE_PQ_INT32) {
            for (size_t r = from; r < from + k; r++) {
                if (!fits(&c->def, d->i32[r]))
                    return TROVE_ERR_INVALID;
                c->iv[w->nbuf + (r - from)] = d->i32[r];
            }
        } else {
            for (size_t r = from; r < from + k; r++) {
                if (!fits(&c->def, d->i64[r]))
                    return TROVE_ERR_INVALID;
                c->iv[w->nbuf + (r - from)] = d->i64[r];
            }
        }
    }
    w->nbuf += k;
    return TROVE_OK;
}

/* The most rows of a dictionary-encoded data page. */
static size_t per_index_page(const struct trove_pq_writer *w)
{
    return w->page_bytes / 4 < 8 ? 8 : w->page_bytes / 4;
}

/* Compress the page data[0..len) into w->comp (or point at it) and append header + body to
 * the file. */
static int put_page(struct trove_pq_writer *w, const uint8_t *data, size_t len,
                    struct trove__pq_page_header *h, struct trove__pq_column_meta *m)
{
    const uint8_t *body = data;
    size_t clen = len;
    int rc;

    if (len > TROVE_PQ_MAX_PAGE)
        return TROVE_ERR_LIMIT;
    if (w->codec == TROVE_PQ_CODEC_ZSTD) {
        size_t bound = ZSTD_compressBound(len), r;
        w->comp.len = 0;
        if (!w->zc && !(w->zc = ZSTD_createCCtx()))
            return TROVE_ERR_NOMEM;
        if ((rc = trove_bytes_reserve(&w->comp, bound)) != TROVE_OK)
            return rc;
        r = ZSTD_compressCCtx(w->zc, w->comp.ptr, bound, data, len,
                              TROVE_PQ_ZSTD_LEVEL);
        if (ZSTD_isError(r))
            return TROVE_ERR_NOMEM;
        body = w->comp.ptr;
        clen = r;
    } else if (w->codec == TROVE_PQ_CODEC_GZIP) {
        size_t bound;
        if (!w->zs_ready) {
            memset(&w->zs, 0, sizeof w->zs);
            if (deflateInit2(&w->zs, TROVE_PQ_GZIP_LEVEL, Z_DEFLATED, 31, 8,
                             Z_DEFAULT_STRATEGY) != Z_OK)
                return TROVE_ERR_NOMEM;
            w->zs_ready = 1;
        } else if (deflateReset(&w->zs) != Z_OK) {
            return TROVE_ERR_NOMEM;
        }
        bound = deflateBound(&w->zs, (uLong)len) + 32;
        w->comp.len = 0;
        if ((rc = trove_bytes_reserve(&w->comp, bound)) != TROVE_OK)
            return rc;
        w->zs.next_in = (Bytef *)(uintptr_t)data; /* zlib does not write it */
        w->zs.avail_in = (uInt)len;
        w->zs.next_out = w->comp.ptr;
        w->zs.avail_out = (uInt)bound;
        if (deflate(&w->zs, Z_FINISH) != Z_STREAM_END)
            return TROVE_ERR_NOMEM;
        body = w->comp.ptr;
        clen = bound - w->zs.avail_out;
    }
    if (clen > TROVE_PQ_MAX_PAGE)
        return TROVE_ERR_LIMIT;
    h->uncompressed_page_size = (int32_t)len;
    h->compressed_page_size = (int32_t)clen;
    w->hdr.len = 0;
    if ((rc = trove__pq_page_header_encode(h, &w->hdr)) != TROVE_OK)
        return rc;
    if ((rc = trove_bytes_reserve(&w->body, w->hdr.len + clen)) != TROVE_OK)
        return rc;
    trove_bytes_append(&w->body, w->hdr.ptr, w->hdr.len);
    trove_bytes_append(&w->body, body, clen);
    m->total_uncompressed_size += (int64_t)(w->hdr.len + len);
    m->total_compressed_size += (int64_t)(w->hdr.len + clen);
    return TROVE_OK;
}

static void put_plain_int(struct trove_bytes *b, int64_t v, int is32)
{
    uint8_t tmp[8];
    if (is32)
        trove__put_le32(tmp, (uint32_t)v);
    else
        trove__put_le64(tmp, (uint64_t)v);
    memcpy(b->ptr + b->len, tmp, is32 ? 4 : 8);
    b->len += is32 ? 4 : 8;
}

/* The values of a column chunk: the writer's buffers, or the caller's arrays (for
 * trove_pq_writer_add_groups). Integers come as i64 (INT32 columns sign-extended) or i32;
 * strings as pointers and lengths. */
struct src {
    const int64_t *i64;
    const int32_t *i32;
    const char *const *str;
    const uint32_t *len;
};

/* The min and max of integers v->i64 or v->i32 [0..n), n >= 1: signed, or unsigned under
 * mask (the physical width). */
static void int_range(const struct src *v, size_t n, int is_unsigned, uint64_t mask,
                      int64_t *min_out, int64_t *max_out)
{
    if (v->i64 && is_unsigned) {
        uint64_t mi = UINT64_MAX, ma = 0;
        for (size_t r = 0; r < n; r++) {
            uint64_t u = (uint64_t)v->i64[r] & mask;
            mi = u < mi ? u : mi;
            ma = u > ma ? u : ma;
        }
        *min_out = (int64_t)mi;
        *max_out = (int64_t)ma;
    } else if (v->i64) {
        int64_t mi = INT64_MAX, ma = INT64_MIN;
        for (size_t r = 0; r < n; r++) {
            mi = v->i64[r] < mi ? v->i64[r] : mi;
            ma = v->i64[r] > ma ? v->i64[r] : ma;
        }
        *min_out = mi;
        *max_out = ma;
    } else if (is_unsigned) {
        uint32_t mi = UINT32_MAX, ma = 0;
        for (size_t r = 0; r < n; r++) {
            uint32_t u = (uint32_t)v->i32[r];
            mi = u < mi ? u : mi;
            ma = u > ma ? u : ma;
        }
        *min_out = (int64_t)(mi & mask);
        *max_out = (int64_t)(ma & mask);
    } else {
        int32_t mi = INT32_MAX, ma = INT32_MIN;
        for (size_t r = 0; r < n; r++) {
            mi = v->i32[r] < mi ? v->i32[r] : mi;
            ma = v->i32[r] > ma ? v->i32[r] : ma;
        }
        *min_out = mi;
        *max_out = ma;
    }
}

/* Min and max under the column's order; they are stored PLAIN (strings without a length).
 * check: also refuse (TROVE_ERR_INVALID) a value outside the column's logical width or a
 * string that is too long or NULL, as buffer_rows does for buffered rows. */
static int chunk_stats(const struct wcol *c, const struct src *v, size_t n, int check,
                       struct trove__pq_stats *s)
{
    uint8_t *blk;
    memset(s, 0, sizeof *s);
    s->null_count = 0;
    if (n == 0)
        return TROVE_OK;
    if (c->def.type == TROVE_PQ_STRING) {
        size_t mi = 0, ma = 0;
        if (check)
            for (size_t r = 0; r < n; r++)
                if (v->len[r] > TROVE_PQ_MAX_STRING || (v->len[r] && !v->str[r]))
                    return TROVE_ERR_INVALID;
        for (size_t r = 1; r < n; r++) {
            const char *p = v->str[r];
            size_t len = v->len[r], lmi = v->len[mi], lma = v->len[ma];
            int k = len && lmi ? memcmp(p, v->str[mi], len < lmi ? len : lmi) : 0;
            if (k < 0 || (k == 0 && len < lmi))
                mi = r;
            k = len && lma ? memcmp(p, v->str[ma], len < lma ? len : lma) : 0;
            if (k > 0 || (k == 0 && len > lma))
                ma = r;
        }
        s->min_len = v->len[mi];
        s->max_len = v->len[ma];
        if (s->min_len > TROVE_PQ_STATS_MAX || s->max_len > TROVE_PQ_STATS_MAX)
            return 1; /* no statistics */
        if (!(blk = trove__malloc((size_t)s->min_len + s->max_len + 1)))
            return TROVE_ERR_NOMEM;
        if (s->min_len)
            memcpy(blk, v->str[mi], s->min_len);
        if (s->max_len)
            memcpy(blk + s->min_len, v->str[ma], s->max_len);
    } else {
        int is32 = c->def.type == TROVE_PQ_INT32;
        int64_t mi, ma;
        /* Under the column's order: for an unsigned column the min and max unsigned, and
         * those are also what decides whether every value fits the logical width. */
        int_range(v, n, c->def.is_unsigned, is32 ? 0xFFFFFFFFull : ~0ull, &mi, &ma);
        if (check && (!fits(&c->def, mi) || !fits(&c->def, ma)))
            return TROVE_ERR_INVALID;
        s->min_len = s->max_len = is32 ? 4 : 8;
        if (!(blk = trove__malloc(16)))
            return TROVE_ERR_NOMEM;
        if (is32) {
            trove__put_le32(blk, (uint32_t)mi);
            trove__put_le32(blk + 4, (uint32_t)ma);
        } else {
            trove__put_le64(blk, (uint64_t)mi);
            trove__put_le64(blk + 8, (uint64_t)ma);
        }
    }
    s->min = blk;
    s->max = blk + s->min_len;
    s->has_min = s->has_max = 1;
    return TROVE_OK;
}

static int reserve_scratch(struct trove_pq_writer *w, size_t n)
{
    void *p;
    if (n <= w->scap)
        return TROVE_OK;
    if (!(p = trove__realloc(w->idx, n * sizeof *w->idx)))
        return TROVE_ERR_NOMEM;
    w->idx = p;
    if (!(p = trove__realloc(w->sptr, n * sizeof *w->sptr)))
        return TROVE_ERR_NOMEM;
    w->sptr = p;
    if (!(p = trove__realloc(w->slen, n * sizeof *w->slen)))
        return TROVE_ERR_NOMEM;
    w->slen = p;
    w->scap = n;
    return TROVE_OK;
}

/* Encode rows [0, n) of column c as one column chunk into the file with encoding enc (a
 * dictionary that is too large falls back to PLAIN): from the writer's buffers (v NULL), or
 * from the caller's arrays v, then checked as buffer_rows would. */
static int encode_chunk_as(struct trove_pq_writer *w, struct wcol *c, const struct src *v,
                           size_t n, struct trove__pq_column_chunk *cc, int enc)
{
    struct src buffered;
    struct trove__pq_column_meta *m = &cc->meta;
    struct trove__pq_page_header h;
    int is_str = c->def.type == TROVE_PQ_STRING, is32 = c->def.type == TROVE_PQ_INT32;
    int rc, stats_later;
    size_t nd = 0, *first = NULL, width = is32 ? 4 : 8, per_page;
    int64_t *dvals = NULL;
    uint32_t *order = NULL;
    struct trove__pq_dict_page *pages = NULL;
    size_t npages = 0, *off = NULL;

    memset(cc, 0, sizeof *cc);
    m->type = is_str ? TROVE_PQT_BYTE_ARRAY : is32 ? TROVE_PQT_INT32 : TROVE_PQT_INT64;
    m->codec = w->codec == TROVE_PQ_CODEC_ZSTD   ? TROVE_PQC_ZSTD
               : w->codec == TROVE_PQ_CODEC_GZIP ? TROVE_PQC_GZIP
                                                 : TROVE_PQC_UNCOMPRESSED;
    m->path = (const uint8_t *)c->name;
    m->path_len = (uint32_t)strlen(c->name);
    m->npath = 1;
    m->num_values = (int64_t)n;
    m->dictionary_page_offset = -1;
    if ((rc = reserve_scratch(w, n ? n : 1)) != TROVE_OK)
        goto out;
    if (!v) {
        memset(&buffered, 0, sizeof buffered);
        buffered.i64 = c->iv;
        if (is_str)
            for (size_t r = 0; r < n; r++) {
                w->sptr[r] = (c->sb.ptr ? (const char *)c->sb.ptr : "") + c->soff[r];
                w->slen[r] = (uint32_t)(c->soff[r + 1] - c->soff[r]);
            }
        buffered.str = w->sptr;
        buffered.len = w->slen;
        v = &buffered;
    }
    /* An integer dictionary holds every value once: its statistics (and the check that the
     * values fit) come from the dictionary, after it is built. */
    stats_later = enc == TROVE_PQ_ENC_DICT && !is_str;
    if (!stats_later) {
        if ((rc = chunk_stats(c, v, n, v != &buffered, &m->stats)) < 0)
            goto out;
        m->has_stats = rc == TROVE_OK;
    }

    if (enc == TROVE_PQ_ENC_DICT) {
        size_t bytes = 0;
        rc = is_str  ? trove__pq_dict_build_str(v->str, v->len, n, TROVE_PQ_DICT_MAX_ENTRIES,
                                                w->idx, &first, &nd)
             : v->i64 ? trove__pq_dict_build_int(v->i64, n, TROVE_PQ_DICT_MAX_ENTRIES, w->idx,
                                                &dvals, &nd)
                      : trove__pq_dict_build_i32(v->i32, n, TROVE_PQ_DICT_MAX_ENTRIES, w->idx,
                                                &dvals, &nd);
        if (rc == TROVE_ERR_LIMIT) {
            enc = TROVE_PQ_ENC_PLAIN;
        } else if (rc != TROVE_OK) {
            goto out;
        } else {
            if (is_str)
                for (size_t k = 0; k < nd; k++)
                    bytes += 4 + v->len[first[k]];
            else
                bytes = nd * width;
            if (bytes > TROVE_PQ_DICT_MAX_BYTES)
                enc = TROVE_PQ_ENC_PLAIN;
        }
    }
    if (stats_later) {
        struct src d;
        memset(&d, 0, sizeof d);
        d.i64 = dvals;
        rc = enc == TROVE_PQ_ENC_DICT ? chunk_stats(c, &d, nd, v != &buffered, &m->stats)
                                      : chunk_stats(c, v, n, v != &buffered, &m->stats);
        if (rc < 0)
            goto out;
        m->has_stats = rc == TROVE_OK;
    }

    if (enc == TROVE_PQ_ENC_DICT) {
        /* The dictionary page: PLAIN values in the order the layout chose; the data pages'
         * bodies are encoded now, all together, and written after it. */
        if (!(order = trove__malloc((nd ? nd : 1) * sizeof *order))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        if ((rc = trove__pq_dict_layout(w->idx, n, nd, per_index_page(w),
                                        w->codec == TROVE_PQ_CODEC_NONE ? PQ_PAGE_COST
                                                                        : PQ_PAGE_COST_CODEC,
                                        order, &pages, &npages)) != TROVE_OK)
            goto out;
        if (!(off = trove__malloc((npages + 1) * sizeof *off))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        w->bodies.len = 0;
        if ((rc = trove__pq_dict_pages_encode(w->idx, pages, npages, &w->bodies, off)) !=
            TROVE_OK)
            goto out;
        m->dictionary_page_offset = here(w);
        w->page.len = 0;
        if (is_str) {
            for (size_t k = 0; k < nd; k++) {
                const char *p = v->str[first[order[k]]];
                uint32_t len = v->len[first[order[k]]];
                if ((rc = trove__pq_plain_encode_strings(&p, &len, 1, &w->page)) != TROVE_OK)
                    goto out;
            }
        } else {
            if ((rc = trove_bytes_reserve(&w->page, nd * width)) != TROVE_OK)
                goto out;
            for (size_t k = 0; k < nd; k++)
                put_plain_int(&w->page, dvals[order[k]], is32);
        }
        memset(&h, 0, sizeof h);
        h.type = TROVE_PQP_DICTIONARY_PAGE;
        h.num_values = (int32_t)nd;
        h.encoding = TROVE_PQE_PLAIN;
        h.dict_sorted = -1;
        if ((rc = put_page(w, w->page.ptr, w->page.len, &h, m)) != TROVE_OK)
            goto out;
        m->encodings[m->nencodings++] = TROVE_PQE_PLAIN;
        m->encodings[m->nencodings++] = TROVE_PQE_RLE_DICTIONARY;
    } else {
        m->encodings[m->nencodings++] =
            enc == TROVE_PQ_ENC_DELTA ? TROVE_PQE_DELTA_BINARY_PACKED : TROVE_PQE_PLAIN;
    }
    m->data_page_offset = here(w);
    if (enc == TROVE_PQ_ENC_DELTA && !v->i64) {
        /* The delta encoder takes 64-bit values. */
        if (n > w->widecap) {
            int64_t *p = trove__realloc(w->wide, n * sizeof *p);
            if (!p) {
                rc = TROVE_ERR_NOMEM;
                goto out;
            }
            w->wide = p;
            w->widecap = n;
        }
        for (size_t r = 0; r < n; r++)
            w->wide[r] = v->i32[r];
    }

    per_page = w->page_bytes / (enc == TROVE_PQ_ENC_DICT ? 4 : width);
    if (per_page < 1)
        per_page = 1;
    for (size_t at = 0, pi = 0; at < n; pi++) {
        size_t cnt = enc == TROVE_PQ_ENC_DICT ? pages[pi].rows
                     : n - at < per_page      ? n - at
                                              : per_page;
        if (is_str && enc == TROVE_PQ_ENC_PLAIN) {
            size_t bytes = 0;
            cnt = 0;
            while (at + cnt < n && (cnt == 0 || bytes + 4 + v->len[at + cnt] <= w->page_bytes)) {
                bytes += 4 + v->len[at + cnt];
                cnt++;
            }
        }
        w->page.len = 0;
        if (enc == TROVE_PQ_ENC_DICT) {
            /* Encoded already, in w->bodies. */
        } else if (enc == TROVE_PQ_ENC_DELTA) {
            if ((rc = trove__pq_delta_encode((v->i64 ? v->i64 : w->wide) + at, cnt, is32,
                                             &w->page)) != TROVE_OK)
                goto out;
        } else if (is_str) {
            if ((rc = trove__pq_plain_encode_strings(v->str + at, v->len + at, cnt,
                                                     &w->page)) != TROVE_OK)
                goto out;
        } else {
            if ((rc = trove_bytes_reserve(&w->page, cnt * width)) != TROVE_OK)
                goto out;
            if (v->i64)
                for (size_t r = at; r < at + cnt; r++)
                    put_plain_int(&w->page, v->i64[r], is32);
            else
                for (size_t r = at; r < at + cnt; r++)
                    put_plain_int(&w->page, v->i32[r], is32);
        }
        memset(&h, 0, sizeof h);
        h.type = TROVE_PQP_DATA_PAGE;
        h.num_values = (int32_t)cnt;
        h.encoding = enc == TROVE_PQ_ENC_DICT    ? TROVE_PQE_RLE_DICTIONARY
                     : enc == TROVE_PQ_ENC_DELTA ? TROVE_PQE_DELTA_BINARY_PACKED
                                                 : TROVE_PQE_PLAIN;
        h.def_encoding = h.rep_encoding = TROVE_PQE_RLE;
        rc = enc == TROVE_PQ_ENC_DICT
                 ? put_page(w, w->bodies.ptr + off[pi], off[pi + 1] - off[pi], &h, m)
                 : put_page(w, w->page.ptr, w->page.len, &h, m);
        if (rc != TROVE_OK)
            goto out;
        at += cnt;
    }
    rc = TROVE_OK;
out:
    free(first);
    free(dvals);
    free(order);
    free(pages);
    free(off);
    return rc;
}

/*
 * Encode column c's chunk with its encoding; but a DELTA column under a codec is encoded both
 * ways, DELTA and dictionary, and the smaller chunk is kept: after zstd, bit-packed deltas
 * of a sorted column win on one trace and lose to a dictionary's indexes on another (the
 * sample Chrome trace's events against gen's, docs/BENCHMARKS.md). Without a codec DELTA is
 * kept as it is (the golden vectors' bytes).
 */
static int encode_chunk(struct trove_pq_writer *w, struct wcol *c, const struct src *v, size_t n,
                        struct trove__pq_column_chunk *cc)
{
    struct trove__pq_column_chunk alt;
    size_t start = w->body.len, first_len;
    int rc;

    if (c->def.encoding != TROVE_PQ_ENC_DELTA || w->codec == TROVE_PQ_CODEC_NONE)
        return encode_chunk_as(w, c, v, n, cc, c->def.encoding);
    if ((rc = encode_chunk_as(w, c, v, n, cc, TROVE_PQ_ENC_DELTA)) != TROVE_OK)
        return rc;
    first_len = w->body.len - start;
    /* the DELTA chunk moves aside; the dictionary one is written where it was */
    if ((rc = trove_bytes_append(&w->alt, w->body.ptr + start, first_len)) != TROVE_OK)
        return rc;
    w->body.len = start;
    rc = encode_chunk_as(w, c, v, n, &alt, TROVE_PQ_ENC_DICT);
    if (rc == TROVE_OK && w->body.len - start < first_len) {
        free((void *)(uintptr_t)cc->meta.stats.min);
        *cc = alt;
    } else {
        free((void *)(uintptr_t)alt.meta.stats.min);
        w->body.len = start; /* (the DELTA chunk fits: it was there) */
        if (rc == TROVE_OK || rc == TROVE_ERR_LIMIT)
            rc = trove_bytes_append(&w->body, w->alt.ptr, first_len);
    }
    w->alt.len = 0;
    return rc;
}

/* Encode a row group: the nbuf buffered rows (fetch NULL), or the caller's rows
 * [from, from + nrows) as fetch gives them. */
static int put_row_group(struct trove_pq_writer *w, trove_pq_fetch_fn fetch, void *ctx,
                         uint64_t from, size_t nrows)
{
    struct trove__pq_row_group *rg;
    size_t n = fetch ? nrows : w->nbuf;
    int rc;

    if (n == 0)
        return TROVE_OK;
    if (w->nrgs == w->rgcap) {
        uint32_t ncap = w->rgcap ? w->rgcap * 2 : 4;
        void *p;
        if (w->rgcap >= TROVE_PQ_META_MAX_ROW_GROUPS)
            return TROVE_ERR_LIMIT;
        if (!(p = trove__realloc(w->rgs, ncap * sizeof *w->rgs)))
            return TROVE_ERR_NOMEM;
        w->rgs = p;
        w->rgcap = ncap;
    }
    rg = &w->rgs[w->nrgs];
    memset(rg, 0, sizeof *rg);
    if (!(rg->columns = trove__calloc(w->ncols, sizeof *rg->columns)))
        return TROVE_ERR_NOMEM;
    w->nrgs++;
    rg->num_rows = (int64_t)n;
    rg->file_offset = here(w);
    rg->ordinal = (int32_t)(w->nrgs - 1);
    for (size_t i = 0; i < w->ncols; i++) {
        struct src v;
        rc = TROVE_OK;
        if (fetch) {
            struct trove_pq_column_data d;
            int t = w->cols[i].def.type;
            memset(&d, 0, sizeof d);
            memset(&v, 0, sizeof v);
            if ((rc = fetch(ctx, i, from, n, &d)) == TROVE_OK &&
                ((t == TROVE_PQ_INT32 && !d.i32) || (t == TROVE_PQ_INT64 && !d.i64) ||
                 (t == TROVE_PQ_STRING && (!d.str || !d.str_len))))
                rc = TROVE_ERR_INVALID;
            v.i64 = t == TROVE_PQ_INT64 ? d.i64 : NULL;
            v.i32 = t == TROVE_PQ_INT32 ? d.i32 : NULL;
            v.str = t == TROVE_PQ_STRING ? d.str : NULL;
            v.len = t == TROVE_PQ_STRING ? d.str_len : NULL;
        }
        if (rc == TROVE_OK)
            rc = encode_chunk(w, &w->cols[i], fetch ? &v : NULL, n, &rg->columns[i]);
        rg->ncolumns = (uint32_t)i + 1;
        if (rc != TROVE_OK)
            return rc;
        rg->total_byte_size += rg->columns[i].meta.total_uncompressed_size;
        rg->total_compressed_size += rg->columns[i].meta.total_compressed_size;
    }
    if (!fetch) {
        for (size_t i = 0; i < w->ncols; i++)
            w->cols[i].sb.len = 0;
        w->nbuf = 0;
    }
    return drain(w);
}

static int flush_row_group(struct trove_pq_writer *w)
{
    return put_row_group(w, NULL, NULL, 0, 0);
}

/* The checks of trove_pq_writer_add and _add_groups before any row is taken. */
static int check_add(const struct trove_pq_writer *w, const struct trove_pq_column_data *cols,
                     size_t nrows)
{
    if (nrows > TROVE_PQ_MAX_ROWS - w->rows)
        return TROVE_ERR_LIMIT;
    for (size_t i = 0; i < w->ncols && nrows; i++) {
        const struct trove_pq_column_data *d = &cols[i];
        int t = w->cols[i].def.type;
        if ((t == TROVE_PQ_INT32 && !d->i32) || (t == TROVE_PQ_INT64 && !d->i64) ||
            (t == TROVE_PQ_STRING && (!d->str || !d->str_len)))
            return TROVE_ERR_INVALID;
    }
    return TROVE_OK;
}

int trove_pq_writer_add_fetch(struct trove_pq_writer *w, size_t nrows, trove_pq_fetch_fn fetch,
                              void *ctx)
{
    int rc;

    if (!w || w->broken || (nrows && !fetch))
        return TROVE_ERR_INVALID;
    if (nrows > TROVE_PQ_MAX_ROWS - w->rows) {
        rc = TROVE_ERR_LIMIT;
        goto out;
    }
    if ((rc = flush_row_group(w)) != TROVE_OK)
        goto out;
    for (size_t done = 0; done < nrows;) {
        size_t k = nrows - done < w->rg_rows ? nrows - done : (size_t)w->rg_rows;
        if ((rc = put_row_group(w, fetch, ctx, done, k)) != TROVE_OK)
            goto out;
        done += k;
    }
    w->rows += nrows;
out:
    if (rc != TROVE_OK)
        w->broken = 1;
    return rc;
}

/* trove_pq_writer_add_groups's fetch: the caller's arrays from row from on. */
static int fetch_arrays(void *ctx, size_t col, uint64_t from, size_t n,
                        struct trove_pq_column_data *out)
{
    const struct trove_pq_column_data *d = (const struct trove_pq_column_data *)ctx + col;
    (void)n;
    out->i32 = d->i32 ? d->i32 + from : NULL;
    out->i64 = d->i64 ? d->i64 + from : NULL;
    out->str = d->str ? d->str + from : NULL;
    out->str_len = d->str_len ? d->str_len + from : NULL;
    return TROVE_OK;
}

int trove_pq_writer_add_groups(struct trove_pq_writer *w,
                               const struct trove_pq_column_data *cols, size_t nrows)
{
    int rc;

    if (!w || w->broken || (nrows && !cols))
        return TROVE_ERR_INVALID;
    if ((rc = check_add(w, cols, nrows)) != TROVE_OK) {
        w->broken = 1;
        return rc;
    }
    return trove_pq_writer_add_fetch(w, nrows, fetch_arrays, (void *)(uintptr_t)cols);
}

int trove_pq_writer_add(struct trove_pq_writer *w, const struct trove_pq_column_data *cols,
                        size_t nrows)
{
    size_t done = 0;
    int rc = TROVE_OK;

    if (!w || w->broken || (nrows && !cols))
        return TROVE_ERR_INVALID;
    if ((rc = check_add(w, cols, nrows)) != TROVE_OK)
        goto out;
    while (done < nrows) {
        size_t k = nrows - done;
        if (k > w->rg_rows - w->nbuf)
            k = (size_t)(w->rg_rows - w->nbuf);
        if ((rc = buffer_rows(w, cols, done, k)) != TROVE_OK)
            goto out;
        done += k;
        if (w->nbuf == w->rg_rows && (rc = flush_row_group(w)) != TROVE_OK)
            goto out;
    }
    w->rows += nrows;
out:
    if (rc != TROVE_OK)
        w->broken = 1;
    return rc;
}

int trove_pq_writer_finish(struct trove_pq_writer *w, struct trove_bytes *out)
{
    struct trove__pq_file_meta fm;
    struct trove__pq_schema *schema = NULL;
    char created_by[64];
    size_t footer_at;
    uint8_t tail[8];
    int rc;

    if (!w || w->broken || !out != !!w->sink.write)
        return TROVE_ERR_INVALID;
    if ((rc = flush_row_group(w)) != TROVE_OK)
        goto out;
    rc = TROVE_ERR_NOMEM;
    if (!(schema = trove__calloc(w->ncols + 1, sizeof *schema)))
        goto out;
    schema[0].type = schema[0].repetition = schema[0].converted_type = -1;
    schema[0].name = (const uint8_t *)"schema";
    schema[0].name_len = 6;
    schema[0].num_children = (int32_t)w->ncols;
    for (size_t i = 0; i < w->ncols; i++) {
        const struct trove_pq_column_def *d = &w->cols[i].def;
        struct trove__pq_schema *s = &schema[i + 1];
        s->repetition = TROVE_PQR_REQUIRED;
        s->name = (const uint8_t *)w->cols[i].name;
        s->name_len = (uint32_t)strlen(w->cols[i].name);
        s->num_children = -1;
        if (d->type == TROVE_PQ_STRING) {
            s->type = TROVE_PQT_BYTE_ARRAY;
            s->converted_type = TROVE_PQCT_UTF8;
            s->logical = TROVE_PQL_STRING;
        } else {
            int lg = d->bits == 8 ? 0 : d->bits == 16 ? 1 : d->bits == 32 ? 2 : 3;
            s->type = d->type == TROVE_PQ_INT32 ? TROVE_PQT_INT32 : TROVE_PQT_INT64;
            s->converted_type = (d->is_unsigned ? TROVE_PQCT_UINT_8 : TROVE_PQCT_INT_8) + lg;
            s->logical = TROVE_PQL_INTEGER;
            s->int_bits = d->bits;
            s->int_signed = !d->is_unsigned;
        }
    }
    memset(&fm, 0, sizeof fm);
    fm.version = 1;
    fm.schema = schema;
    fm.nschema = (uint32_t)w->ncols + 1;
    fm.num_rows = (int64_t)w->rows;
    fm.row_groups = w->rgs;
    fm.nrow_groups = w->nrgs;
    snprintf(created_by, sizeof created_by, "trove %s", trove_version());
    fm.created_by = (const uint8_t *)created_by;
    fm.created_by_len = (uint32_t)strlen(created_by);
    fm.has_created_by = 1;
    footer_at = w->body.len;
    if ((rc = trove__pq_file_meta_encode(&fm, 1, &w->body)) != TROVE_OK)
        goto out;
    if (w->body.len - footer_at > TROVE_PQ_MAX_FOOTER) {
        rc = TROVE_ERR_LIMIT;
        goto out;
    }
    trove__put_le32(tail, (uint32_t)(w->body.len - footer_at));
    memcpy(tail + 4, "PAR1", 4);
    if ((rc = trove_bytes_append(&w->body, tail, 8)) != TROVE_OK)
        goto out;
    if (w->sink.write) {
        rc = drain(w);
        goto out;
    }
    if (out->len == 0) {
        /* Nothing to append to: hand over the file's buffer instead of copying it (the
         * writer frees out's old buffer). */
        struct trove_bytes old = *out;
        *out = w->body;
        w->body = old;
    } else if ((rc = trove_bytes_append(out, w->body.ptr, w->body.len)) != TROVE_OK) {
        goto out;
    }
    rc = TROVE_OK;
out:
    free(schema);
    w->broken = 1; /* finished (or failed): no more rows */
    return rc;
}
