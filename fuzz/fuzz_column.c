/*
 * fuzz_column.c: libFuzzer target for the bit-packed column reader (trove_column_open and
 * the reads it promises are safe afterwards). The input is copied into a malloc'd buffer of
 * exactly its size (4-byte aligned, and ASan sees any read past it) and opened. A column
 * that opens is decoded whole, and then checked against that decode three ways: every
 * block through trove_column_block, a sample of single values through trove_column_get,
 * and every block's descriptor through trove_column_block_info (IDENTITY and CONSTANT
 * values follow from the base, BITPACK values lie in [base, base + 2^w)). The values are
 * then re-encoded: the new column must open, decode to the same values, and encode again
 * to the same bytes (a round-trip and determinism oracle, not only a crash check). Any
 * disagreement aborts.
 */
#include <stdlib.h>
#include <string.h>

#include "trove/bitpack.h"
#include "trove/testing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode c fully; NULL if out of memory. */
static uint32_t *decode_all(const struct trove_column *c)
{
    uint32_t *v = malloc(c->n ? (size_t)c->n * sizeof *v : 1);
    if (v && trove_column_decode(c, v) != TROVE_OK)
        abort();
    return v;
}

/* The checks on an opened column against its full decode v. */
static void check_views(const struct trove_column *c, const uint32_t *v)
{
    static uint32_t blk[TROVE_BITPACK_BLOCK];
    uint64_t seed = c->n * 0x9e3779b97f4a7c15ULL + c->len;
    uint32_t x;

    if (c->blocks != (c->n + TROVE_BITPACK_BLOCK - 1) / TROVE_BITPACK_BLOCK)
        abort();
    for (uint32_t b = 0; b < c->blocks; b++) {
        const uint32_t *bv = v + (size_t)b * TROVE_BITPACK_BLOCK;
        struct trove_block_info info;
        size_t m = 0;
        if (trove_column_block(c, b, blk, &m) != TROVE_OK || m == 0 || m > TROVE_BITPACK_BLOCK ||
            (uint64_t)b * TROVE_BITPACK_BLOCK + m > c->n ||
            (b + 1 < c->blocks && m != TROVE_BITPACK_BLOCK) || memcmp(blk, bv, m * sizeof *bv) != 0)
            abort();
        if (trove_column_block_info(c, b, &info) != TROVE_OK || info.offset % 4 ||
            info.offset < TROVE_COLUMN_HEADER_SIZE ||
            (uint64_t)info.offset + info.byte_len > c->dir_offset)
            abort();
        for (size_t j = 0; j < m; j++) {
            int ok;
            switch (info.scheme) {
            case TROVE_SCHEME_IDENTITY: ok = bv[j] == info.base + (uint32_t)j; break;
            case TROVE_SCHEME_CONSTANT: ok = bv[j] == info.base; break;
            case TROVE_SCHEME_BITPACK:
                ok = info.width <= 32 && info.byte_len == 8 + info.width * 128 &&
                     (info.width == 32 || bv[j] - info.base < (1ull << info.width));
                break;
            default: ok = 0; break;
            }
            if (!ok)
                abort();
        }
        /* first and last value of every block */
        if (trove_column_get(c, (uint64_t)b * TROVE_BITPACK_BLOCK, &x) != TROVE_OK || x != bv[0] ||
            trove_column_get(c, (uint64_t)b * TROVE_BITPACK_BLOCK + m - 1, &x) != TROVE_OK ||
            x != bv[m - 1])
            abort();
    }
    /* a sample of single values, and the ends */
    for (int k = 0; k < 256 && c->n; k++) {
        uint64_t i;
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        i = (seed >> 11) % c->n;
        if (trove_column_get(c, i, &x) != TROVE_OK || x != v[i])
            abort();
    }
    if (trove_column_get(c, c->n, &x) != TROVE_ERR_INVALID ||
        trove_column_block(c, c->blocks, blk, NULL) != TROVE_ERR_INVALID)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);
    struct trove_bytes e1 = {0}, e2 = {0};
    struct trove_column c, c2;
    struct trove_diag diag;
    uint32_t *v = NULL, *v2 = NULL;
    int rc;

    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);
    rc = trove_column_open(buf, size, &c, &diag);
    if (rc != TROVE_OK) {
        if (rc != diag.code || diag.offset > size || diag.msg[0] == 0 ||
            trove_column_open(buf, size, &c, NULL) != rc)
            abort();
        goto out;
    }
    if (c.buf != buf || c.len != size || c.n > TROVE_COLUMN_MAX_VALUES)
        abort();
    if (!(v = decode_all(&c)))
        goto out;
    check_views(&c, v);

    /* Round trip: encode, open, decode to the same values; encoding again gives the same
     * bytes. (e1 is exact-size-copied so that the open runs on a malloc'd buffer.) */
    if (trove_column_encode(v, c.n, &e1) != TROVE_OK)
        goto out; /* out of memory only */
    free(buf);
    buf = malloc(e1.len);
    if (!buf)
        goto out;
    memcpy(buf, e1.ptr, e1.len);
    if (trove_column_open(buf, e1.len, &c2, &diag) != TROVE_OK || c2.n != c.n)
        abort();
    if (!(v2 = decode_all(&c2)))
        goto out;
    if (c.n && memcmp(v, v2, (size_t)c.n * sizeof *v) != 0)
        abort();
    check_views(&c2, v2);
    if (trove_column_encode(v2, c2.n, &e2) != TROVE_OK)
        goto out;
    if (e2.len != e1.len || memcmp(e1.ptr, e2.ptr, e1.len) != 0)
        abort();
out:
    free(buf);
    free(v);
    free(v2);
    trove_bytes_free(&e1);
    trove_bytes_free(&e2);
    return 0;
}
