/*
 * column.c: block-scheme uint32 columns on the FastLanes kernels of include/trove/bitpack.h
 * (docs/formats/bitpack.md). No product code uses them: the API is declared in
 * include/trove/testing.h, for the tests and the fuzz target.
 *
 *   column    := header block* directory
 *   header    := "TBPC" version:u8 dir_kind:u8 reserved:u16 value_count:u64
 *                block_count:u32 dir_offset:u32                                  (24 bytes)
 *   block     := scheme:u8 width:u8 byte_len:u16 base:u32 payload                 (aligned to 4)
 *                IDENTITY, CONSTANT: no payload (byte_len 8)
 *                BITPACK: width * 128 bytes, 1024 slots (a short last block pads with base)
 *   directory := dir_kind 0: offset:u32 * block_count     dir_kind 1: first:u32 stride:u32
 *
 * Every block carries its own descriptor, so one block can be rewritten without touching
 * another, and offsets are relative to the column's start, so a column can move. When all
 * blocks have one size (a column of IDENTITY or CONSTANT blocks, or one width throughout)
 * the directory is two numbers: 26,214,400 consecutive values take 204,832 bytes.
 *
 * trove_column_open() validates the whole structure (O(blocks), not O(values)); every
 * read after it stays inside the buffer without further checks.
 */
#include "trove/bitpack.h"
#include "trove/testing.h"
#include "common/alloc.h"

#include "common/endian.h"
#include "common/fail.h"
#include "common/sealed.h"

#include <stdlib.h>
#include <string.h>

#define COLUMN_VERSION 1
#define DIR_EXPLICIT 0
#define DIR_ARITHMETIC 1

/* Encode block b's m values at p (room for 8 + 4096 bytes); return its byte length. */
static size_t encode_block(const uint32_t *v, size_t m, uint8_t *p)
{
    uint32_t lo = v[0], hi = v[0], buf[TROVE_BITPACK_BLOCK];
    int identity = 1;
    unsigned w;

    for (size_t i = 1; i < m; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
        identity &= (uint64_t)v[i] == (uint64_t)v[0] + i;
    }
    p[1] = 0;
    p[2] = TROVE_COLUMN_DESC_SIZE;
    p[3] = 0;
    if (lo == hi) {
        p[0] = TROVE_SCHEME_CONSTANT;
        trove__put_le32(p + 4, lo);
        return TROVE_COLUMN_DESC_SIZE;
    }
    if (identity) {
        p[0] = TROVE_SCHEME_IDENTITY;
        trove__put_le32(p + 4, v[0]);
        return TROVE_COLUMN_DESC_SIZE;
    }
    w = trove_bitpack_width(hi - lo);
    memcpy(buf, v, m * sizeof *v);
    for (size_t i = m; i < TROVE_BITPACK_BLOCK; i++)
        buf[i] = lo;
    p[0] = TROVE_SCHEME_BITPACK;
    p[1] = (uint8_t)w;
    p[2] = (uint8_t)((TROVE_COLUMN_DESC_SIZE + w * 128) & 0xff);
    p[3] = (uint8_t)((TROVE_COLUMN_DESC_SIZE + w * 128) >> 8);
    trove__put_le32(p + 4, lo);
    /* the payload is 4-byte aligned in the buffer (offsets are multiples of 4), but out's
     * storage may move later; pack into a local copy of the words, then store them */
    {
        uint32_t packed[32 * 32];
        trove_bitpack_pack(buf, packed, w, lo);
        memcpy(p + TROVE_COLUMN_DESC_SIZE, packed, (size_t)w * 128);
    }
    return TROVE_COLUMN_DESC_SIZE + (size_t)w * 128;
}

int trove_column_encode(const uint32_t *values, uint64_t n, struct trove_bytes *out)
{
    size_t start = out->len, blocks, pos;
    uint32_t *offs = NULL, stride;
    int rc = TROVE_OK, arithmetic;
    uint8_t *h;

    if (n > TROVE_COLUMN_MAX_VALUES || (n && !values))
        return TROVE_ERR_INVALID;
    blocks = (size_t)trove__div_up(n, TROVE_BITPACK_BLOCK);
    if (blocks && !(offs = trove__malloc(blocks * sizeof *offs)))
        return TROVE_ERR_NOMEM;
    TROVE_TRY(rc, trove_bytes_reserve(out, TROVE_COLUMN_HEADER_SIZE));
    out->len += TROVE_COLUMN_HEADER_SIZE;
    for (size_t b = 0; b < blocks; b++) {
        size_t first = b * TROVE_BITPACK_BLOCK;
        size_t m = n - first < TROVE_BITPACK_BLOCK ? (size_t)(n - first) : TROVE_BITPACK_BLOCK;
        TROVE_TRY(rc, trove_bytes_reserve(out, TROVE_COLUMN_DESC_SIZE + 32 * 128));
        offs[b] = (uint32_t)(out->len - start);
        out->len += encode_block(values + first, m, out->ptr + out->len);
    }
    /* One size for every block: the directory is (first, stride). */
    stride = blocks > 1 ? offs[1] - offs[0] : (uint32_t)(out->len - start - TROVE_COLUMN_HEADER_SIZE);
    arithmetic = 1;
    for (size_t b = 1; b < blocks && arithmetic; b++)
        arithmetic = offs[b] - offs[b - 1] == stride;
    arithmetic = arithmetic && (size_t)(out->len - start) == TROVE_COLUMN_HEADER_SIZE + blocks * (size_t)stride;
    pos = out->len - start;
    TROVE_TRY(rc, trove_bytes_reserve(out, arithmetic ? 8 : 4 * blocks));
    if (arithmetic) {
        trove__put_le32(out->ptr + out->len, TROVE_COLUMN_HEADER_SIZE);
        trove__put_le32(out->ptr + out->len + 4, stride);
        out->len += 8;
    } else {
        for (size_t b = 0; b < blocks; b++, out->len += 4)
            trove__put_le32(out->ptr + out->len, offs[b]);
    }
    h = out->ptr + start;
    memcpy(h, "TBPC", 4);
    h[4] = COLUMN_VERSION;
    h[5] = arithmetic ? DIR_ARITHMETIC : DIR_EXPLICIT;
    h[6] = h[7] = 0;
    trove__put_le32(h + 8, (uint32_t)n);
    trove__put_le32(h + 12, (uint32_t)(n >> 32));
    trove__put_le32(h + 16, (uint32_t)blocks);
    trove__put_le32(h + 20, (uint32_t)pos);
out:
    if (rc != TROVE_OK)
        out->len = start;
    free(offs);
    return rc;
}

/* The offset of block b from a validated column. */
static uint32_t block_offset(const struct trove_column *c, uint32_t b)
{
    const uint8_t *d = c->buf + c->dir_offset;
    if (c->dir_kind == DIR_ARITHMETIC)
        return trove__get_le32(d) + b * trove__get_le32(d + 4);
    return trove__get_le32(d + 4 * (size_t)b);
}

static size_t block_values(const struct trove_column *c, uint32_t b)
{
    uint64_t first = (uint64_t)b * TROVE_BITPACK_BLOCK;
    return c->n - first < TROVE_BITPACK_BLOCK ? (size_t)(c->n - first) : TROVE_BITPACK_BLOCK;
}

int trove_column_open(const uint8_t *buf, size_t len, struct trove_column *col,
                      struct trove_diag *diag)
{
    uint64_t n, expect_blocks, dir_len, prev_end = TROVE_COLUMN_HEADER_SIZE;
    uint32_t blocks, dir_offset, b;
    struct trove_column c;

    if ((uintptr_t)buf & 3)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "column buffer is not 4-byte aligned");
    if (len < TROVE_COLUMN_HEADER_SIZE)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len, "column header truncated: %zu of 24 bytes", len);
    if (memcmp(buf, "TBPC", 4) != 0)
        return TROVE_FAIL(diag, TROVE_ERR_MAGIC, 0, "not a trove bit-packed column (bad magic)");
    if (buf[4] != COLUMN_VERSION)
        return TROVE_FAIL(diag, TROVE_ERR_VERSION, 4, "column version %u; this build reads version %u",
                          buf[4], COLUMN_VERSION);
    if (buf[5] > DIR_ARITHMETIC || buf[6] || buf[7])
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 5, "column: unknown directory kind %u or nonzero reserved bytes",
                          buf[5]);
    n = (uint64_t)trove__get_le32(buf + 8) | (uint64_t)trove__get_le32(buf + 12) << 32;
    blocks = trove__get_le32(buf + 16);
    dir_offset = trove__get_le32(buf + 20);
    if (n > TROVE_COLUMN_MAX_VALUES)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 8, "column of %llu values over the %llu limit",
                          (unsigned long long)n, (unsigned long long)TROVE_COLUMN_MAX_VALUES);
    expect_blocks = trove__div_up(n, TROVE_BITPACK_BLOCK);
    if (blocks != expect_blocks)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 16, "column: %u blocks for %llu values (expected %llu)",
                          blocks, (unsigned long long)n, (unsigned long long)expect_blocks);
    dir_len = buf[5] == DIR_ARITHMETIC ? 8 : 4 * (uint64_t)blocks;
    if (dir_offset < TROVE_COLUMN_HEADER_SIZE || dir_offset % 4)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 20, "column: directory offset %u is inside the header or unaligned",
                          dir_offset);
    if ((uint64_t)dir_offset + dir_len > len)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len, "column: directory at %u (%llu bytes) past the end of %zu bytes",
                          dir_offset, (unsigned long long)dir_len, len);
    if ((uint64_t)dir_offset + dir_len < len)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, dir_offset + dir_len, "column: %llu trailing bytes after the directory",
                          (unsigned long long)(len - dir_offset - dir_len));
    c.buf = buf;
    c.len = len;
    c.n = n;
    c.blocks = blocks;
    c.dir_offset = dir_offset;
    c.dir_kind = buf[5];
    if (c.dir_kind == DIR_ARITHMETIC && blocks &&
        (uint64_t)trove__get_le32(buf + dir_offset) + (uint64_t)(blocks - 1) * trove__get_le32(buf + dir_offset + 4) > dir_offset)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, dir_offset, "column: directory runs past the blocks");
    /* Blocks tile [24, dir_offset) in order, each with a descriptor that fits its scheme. */
    for (b = 0; b < blocks; b++) {
        uint32_t off = block_offset(&c, b);
        const uint8_t *d;
        unsigned byte_len, want;
        if (off != prev_end || off % 4)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT,
                              c.dir_kind == DIR_EXPLICIT ? dir_offset + 4 * (uint64_t)b : dir_offset,
                              "column: block %u at offset %u, expected %llu "
                              "(offsets out of order, overlapping or with gaps)",
                              b, off, (unsigned long long)prev_end);
        if ((uint64_t)off + TROVE_COLUMN_DESC_SIZE > dir_offset)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off, "column: block %u descriptor past the end of the blocks", b);
        d = buf + off;
        byte_len = (unsigned)d[2] | (unsigned)d[3] << 8;
        switch (d[0]) {
        case TROVE_SCHEME_IDENTITY:
        case TROVE_SCHEME_CONSTANT:
            if (d[1] != 0)
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off + 1, "column: block %u: width %u on a scheme without payload",
                                  b, d[1]);
            want = TROVE_COLUMN_DESC_SIZE;
            if (d[0] == TROVE_SCHEME_IDENTITY &&
                (uint64_t)trove__get_le32(d + 4) + block_values(&c, b) - 1 > UINT32_MAX)
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off + 4, "column: block %u: identity run from %u overflows",
                                  b, trove__get_le32(d + 4));
            break;
        case TROVE_SCHEME_BITPACK:
            if (d[1] > 32)
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off + 1, "column: block %u: width %u over 32", b, d[1]);
            want = TROVE_COLUMN_DESC_SIZE + d[1] * 128u;
            break;
        default:
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off, "column: block %u: unknown scheme %u", b, d[0]);
        }
        if (byte_len != want)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off + 2, "column: block %u: byte length %u, its scheme needs %u",
                              b, byte_len, want);
        if ((uint64_t)off + byte_len > dir_offset)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off + 2, "column: block %u: %u bytes past the end of the blocks",
                              b, byte_len);
        prev_end = (uint64_t)off + byte_len;
    }
    if (prev_end != dir_offset)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, prev_end, "column: %llu bytes between the last block and the directory",
                          (unsigned long long)(dir_offset - prev_end));
    *col = c;
    return TROVE_OK;
}

int trove_column_block_info(const struct trove_column *col, uint32_t b, struct trove_block_info *out)
{
    const uint8_t *d;
    if (b >= col->blocks)
        return TROVE_ERR_INVALID;
    out->offset = block_offset(col, b);
    d = col->buf + out->offset;
    out->scheme = d[0];
    out->width = d[1];
    out->byte_len = (uint16_t)(d[2] | d[3] << 8);
    out->base = trove__get_le32(d + 4);
    return TROVE_OK;
}

int trove_column_get(const struct trove_column *col, uint64_t i, uint32_t *value_out)
{
    struct trove_block_info bi = {0};
    uint32_t b = (uint32_t)(i / TROVE_BITPACK_BLOCK), j = (uint32_t)(i % TROVE_BITPACK_BLOCK);
    if (i >= col->n)
        return TROVE_ERR_INVALID;
    trove_column_block_info(col, b, &bi);
    if (bi.scheme == TROVE_SCHEME_IDENTITY)
        *value_out = bi.base + j;
    else if (bi.scheme == TROVE_SCHEME_CONSTANT)
        *value_out = bi.base;
    else
        *value_out = trove_bitpack_get((const uint32_t *)(const void *)(col->buf + bi.offset + TROVE_COLUMN_DESC_SIZE),
                                       bi.width, bi.base, j);
    return TROVE_OK;
}

int trove_column_block(const struct trove_column *col, uint32_t b, uint32_t *out, size_t *n_out)
{
    struct trove_block_info bi = {0};
    size_t m;
    if (trove_column_block_info(col, b, &bi) != TROVE_OK)
        return TROVE_ERR_INVALID;
    m = block_values(col, b);
    if (bi.scheme == TROVE_SCHEME_IDENTITY) {
        for (size_t i = 0; i < TROVE_BITPACK_BLOCK; i++)
            out[i] = bi.base + (uint32_t)i;
    } else if (bi.scheme == TROVE_SCHEME_CONSTANT) {
        for (size_t i = 0; i < TROVE_BITPACK_BLOCK; i++)
            out[i] = bi.base;
    } else {
        trove_bitpack_unpack((const uint32_t *)(const void *)(col->buf + bi.offset + TROVE_COLUMN_DESC_SIZE), out,
                             bi.width, bi.base);
    }
    if (n_out)
        *n_out = m;
    return TROVE_OK;
}

int trove_column_decode(const struct trove_column *col, uint32_t *out)
{
    uint32_t tmp[TROVE_BITPACK_BLOCK];
    for (uint32_t b = 0; b < col->blocks; b++) {
        size_t m = block_values(col, b);
        uint32_t *dst = m == TROVE_BITPACK_BLOCK ? out + (size_t)b * TROVE_BITPACK_BLOCK : tmp;
        trove_column_block(col, b, dst, NULL);
        if (dst == tmp)
            memcpy(out + (size_t)b * TROVE_BITPACK_BLOCK, tmp, m * sizeof *tmp);
    }
    return TROVE_OK;
}
