/*
 * fuzz_thrift.c: libFuzzer target for the Thrift compact decoders of Parquet's footer and
 * page headers (src/columnar/thrift.c, pq_meta.c) alone. The input is decoded as a
 * FileMetaData and as a PageHeader. Failures must set a diag of the same code; what
 * decodes is encoded again, and decoding and encoding that must give the same bytes (the
 * encoding of a decoded struct is a fixed point: unknown fields drop out once).
 */
#include <stdlib.h>
#include <string.h>

#include "columnar/pq_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void footer(const uint8_t *buf, size_t size)
{
    struct trove__pq_file_meta fm, fm2;
    struct trove_diag diag;
    struct trove_bytes a = {0}, b = {0};
    int rc;

    memset(&diag, 0, sizeof diag);
    rc = trove__pq_file_meta_decode(buf, size, 0, &fm, &diag);
    if (rc != TROVE_OK) {
        if (diag.code != rc || !diag.msg[0] || diag.offset > size)
            abort();
        return;
    }
    /* The writer only writes TYPE_ORDER column orders: compare with and without. */
    if (trove__pq_file_meta_encode(&fm, 0, &a) != TROVE_OK)
        goto out;
    if (trove__pq_file_meta_decode(a.ptr, a.len, 0, &fm2, NULL) != TROVE_OK)
        abort();
    if (trove__pq_file_meta_encode(&fm2, 0, &b) != TROVE_OK || a.len != b.len ||
        memcmp(a.ptr, b.ptr, a.len) != 0)
        abort();
    if (fm2.num_rows != fm.num_rows || fm2.nrow_groups != fm.nrow_groups ||
        fm2.nschema != fm.nschema)
        abort();
    trove__pq_file_meta_free(&fm2);
out:
    trove__pq_file_meta_free(&fm);
    trove_bytes_free(&a);
    trove_bytes_free(&b);
}

static void page_header(const uint8_t *buf, size_t size)
{
    struct trove__pq_page_header h, h2;
    struct trove_diag diag;
    struct trove_bytes a = {0};
    size_t used = 0, used2 = 0;
    int rc;

    memset(&diag, 0, sizeof diag);
    rc = trove__pq_page_header_decode(buf, size, 0, &h, &used, &diag);
    if (rc != TROVE_OK) {
        if (diag.code != rc || !diag.msg[0] || diag.offset > size)
            abort();
        return;
    }
    if (used > size)
        abort();
    if (trove__pq_page_header_encode(&h, &a) != TROVE_OK)
        goto out;
    if (trove__pq_page_header_decode(a.ptr, a.len, 0, &h2, &used2, NULL) != TROVE_OK ||
        used2 != a.len || h2.type != h.type)
        abort();
    if (h.type != TROVE_PQP_DATA_PAGE && h.type != TROVE_PQP_DICTIONARY_PAGE &&
        h.type != TROVE_PQP_DATA_PAGE_V2)
        goto out; /* the encoder writes no sub-header for other page types */
    if (h2.num_values != h.num_values ||
        h2.compressed_page_size != h.compressed_page_size ||
        h2.uncompressed_page_size != h.uncompressed_page_size || h2.encoding != h.encoding)
        abort();
out:
    trove_bytes_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    footer(copy, size);
    page_header(copy, size);
    free(copy);
    return 0;
}
