/*
 * fuzz_pq_encoding.c: libFuzzer target for the Parquet value decoders
 * (src/columnar/pq_rle.c, pq_delta.c, pq_plain.c): the RLE / bit-packing hybrid, DELTA_BINARY_PACKED for INT32
 * and INT64, and PLAIN byte arrays.
 *
 *   input := selector u8 (mod 4: 0 RLE, 1 delta INT32, 2 delta INT64, 3 strings),
 *            param u8 (RLE: bit width, mod 34 so that 33 is tried too; strings: max_len / 16,
 *            255 for no limit), n u16 little-endian, then the encoded bytes
 *
 * The oracles: decoding with and without a diag agrees (code, values, bytes consumed); a
 * failed decode sets diag.code and leaves every output and *used_out untouched; a decode
 * never writes past n outputs nor consumes more than its input, and gives the same values
 * from just the bytes it consumed. RLE values fit the width; INT32 deltas give INT32 values;
 * a delta stream is refused for any other n. The decoded values, encoded again, decode to
 * the same values using every byte, and encoding those gives the same bytes again (the
 * encoders are deterministic); so does their shortest split. As dictionary indices, they
 * lay out in pages each exactly as wide as its largest index, whose bodies decode back.
 * PLAIN is canonical: the strings re-encode to exactly the bytes consumed.
 */
#include <stdlib.h>
#include <string.h>

#include "columnar/pq_encoding.h"
#include "common/endian.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NMAX 65536u
#define SENT 0x5A

/* Outputs with spare entries past the largest n (the delta count check decodes n + 1). */
static uint32_t u32a[NMAX + 2], u32b[NMAX + 2];
static int64_t i64a[NMAX + 2], i64b[NMAX + 2];
static uint64_t starta[NMAX + 2], startb[NMAX + 2];
static uint32_t vlena[NMAX + 2], vlenb[NMAX + 2];

static int untouched(const void *p, size_t bytes)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < bytes; i++)
        if (b[i] != SENT)
            return 0;
    return 1;
}

/* The decoded values u32a[0..n) as dictionary indices (of as many entries as the largest
 * needs): laid out in pages, each as wide as its largest index, whose bodies decode back to
 * the indices in the new order, each naming its old entry. */
static void fuzz_layout(size_t n)
{
    static uint32_t idx[NMAX], order[NMAX + 1];
    struct trove__pq_dict_page *pages = NULL;
    struct trove_bytes body = {0};
    size_t np = 0, *off = NULL, at = 0, nd = 0;

    for (size_t r = 0; r < n; r++)
        nd = u32a[r] >= nd ? (size_t)u32a[r] + 1 : nd;
    if (nd > NMAX)
        return;
    memcpy(idx, u32a, n * sizeof *idx);
    if (trove__pq_dict_layout(idx, n, nd, 8 + n % 300, 24, order, &pages, &np) != TROVE_OK ||
        !(off = malloc((np + 1) * sizeof *off)) ||
        trove__pq_dict_pages_encode(idx, pages, np, &body, off) != TROVE_OK)
        abort();
    for (size_t r = 0; r < n; r++)
        if (idx[r] >= nd || order[idx[r]] != u32a[r])
            abort();
    for (size_t q = 0; q < np; q++) {
        uint32_t top = 0;
        size_t used;
        for (size_t r = at; r < at + pages[q].rows; r++)
            top = idx[r] > top ? idx[r] : top;
        if (at + pages[q].rows > n || pages[q].width != (top ? 32u - (unsigned)__builtin_clz(top) : 0u) ||
            body.ptr[off[q]] != pages[q].width ||
            trove__pq_rle_decode(body.ptr + off[q] + 1, off[q + 1] - off[q] - 1, pages[q].width,
                                 u32b, pages[q].rows, &used, NULL) != TROVE_OK ||
            memcmp(u32b, idx + at, pages[q].rows * sizeof *idx) != 0)
            abort();
        at += pages[q].rows;
    }
    if (at != n)
        abort();
    free(pages);
    free(off);
    trove_bytes_free(&body);
}

static void fuzz_rle(const uint8_t *buf, size_t len, unsigned w, size_t n)
{
    struct trove_diag diag;
    struct trove_bytes b = {0}, b2 = {0};
    size_t used = 777, used2 = 777;
    int rc, rc2;

    memset(u32a, SENT, (n + 2) * sizeof *u32a);
    memset(u32b, SENT, (n + 2) * sizeof *u32b);
    rc = trove__pq_rle_decode(buf, len, w, u32a, n, &used, &diag);
    rc2 = trove__pq_rle_decode(buf, len, w, u32b, n, &used2, NULL);
    if (rc != rc2 || used != used2 || memcmp(u32a, u32b, (n + 2) * sizeof *u32a) != 0)
        abort();
    if (rc != TROVE_OK) {
        if (diag.code != rc || used != 777 || !untouched(u32a, (n + 1) * sizeof *u32a) ||
            (w > 32 && rc != TROVE_ERR_INVALID))
            abort();
        return;
    }
    if (w > 32 || used > len || !untouched(u32a + n, sizeof *u32a))
        abort();
    for (size_t i = 0; i < n; i++)
        if (w < 32 && (u32a[i] >> w) != 0)
            abort();
    /* The bytes consumed suffice. */
    if (trove__pq_rle_decode(buf, used, w, u32b, n, &used2, NULL) != TROVE_OK || used2 != used ||
        memcmp(u32a, u32b, n * sizeof *u32a) != 0)
        abort();
    /* Re-encode: the same values from every byte, and the same bytes once more. */
    if (trove__pq_rle_encode(u32a, n, w, &b) != TROVE_OK ||
        trove__pq_rle_decode(b.ptr, b.len, w, u32b, n, &used2, NULL) != TROVE_OK ||
        used2 != b.len || memcmp(u32a, u32b, n * sizeof *u32a) != 0 ||
        trove__pq_rle_encode(u32b, n, w, &b2) != TROVE_OK || b2.len != b.len ||
        (b.len && memcmp(b.ptr, b2.ptr, b.len) != 0))
        abort();
    /* The shortest split of the same values decodes to them too. */
    b2.len = 0;
    if (trove__pq_rle_encode_shortest(u32a, n, w, &b2) != TROVE_OK ||
        trove__pq_rle_decode(b2.ptr, b2.len, w, u32b, n, &used2, NULL) != TROVE_OK ||
        used2 != b2.len || memcmp(u32a, u32b, n * sizeof *u32a) != 0)
        abort();
    trove_bytes_free(&b);
    trove_bytes_free(&b2);
    fuzz_layout(n);
}

static void fuzz_delta(const uint8_t *buf, size_t len, int is32, size_t n)
{
    struct trove_diag diag;
    struct trove_bytes b = {0}, b2 = {0};
    size_t used = 777, used2 = 777;
    int rc, rc2;

    memset(i64a, SENT, (n + 2) * sizeof *i64a);
    memset(i64b, SENT, (n + 2) * sizeof *i64b);
    rc = trove__pq_delta_decode(buf, len, n, is32, i64a, &used, &diag);
    rc2 = trove__pq_delta_decode(buf, len, n, is32, i64b, &used2, NULL);
    if (rc != rc2 || used != used2 || memcmp(i64a, i64b, (n + 2) * sizeof *i64a) != 0)
        abort();
    if (rc != TROVE_OK) {
        if (diag.code != rc || used != 777 || !untouched(i64a, (n + 1) * sizeof *i64a))
            abort();
        return;
    }
    if (used > len || !untouched(i64a + n, sizeof *i64a))
        abort();
    for (size_t i = 0; i < n; i++)
        if (is32 && (i64a[i] < INT32_MIN || i64a[i] > INT32_MAX))
            abort();
    if (trove__pq_delta_decode(buf, used, n, is32, i64b, &used2, NULL) != TROVE_OK ||
        used2 != used || memcmp(i64a, i64b, n * sizeof *i64a) != 0 ||
        trove__pq_delta_decode(buf, len, n + 1, is32, i64b, NULL, NULL) != TROVE_ERR_CORRUPT ||
        (n > 0 &&
         trove__pq_delta_decode(buf, len, n - 1, is32, i64b, NULL, NULL) != TROVE_ERR_CORRUPT))
        abort();
    if (trove__pq_delta_encode(i64a, n, is32, &b) != TROVE_OK ||
        trove__pq_delta_decode(b.ptr, b.len, n, is32, i64b, &used2, NULL) != TROVE_OK ||
        used2 != b.len || memcmp(i64a, i64b, n * sizeof *i64a) != 0 ||
        trove__pq_delta_encode(i64b, n, is32, &b2) != TROVE_OK || b2.len != b.len ||
        memcmp(b.ptr, b2.ptr, b.len) != 0)
        abort();
    trove_bytes_free(&b);
    trove_bytes_free(&b2);
}

static void fuzz_strings(const uint8_t *buf, size_t len, uint32_t max_len, size_t n)
{
    struct trove_diag diag;
    struct trove_bytes b = {0};
    const char **str = NULL;
    size_t used = 777, used2 = 777;
    int rc, rc2;

    memset(starta, SENT, (n + 2) * sizeof *starta);
    memset(startb, SENT, (n + 2) * sizeof *startb);
    memset(vlena, SENT, (n + 2) * sizeof *vlena);
    memset(vlenb, SENT, (n + 2) * sizeof *vlenb);
    rc = trove__pq_plain_decode_strings(buf, len, n, max_len, starta, vlena, &used, &diag);
    rc2 = trove__pq_plain_decode_strings(buf, len, n, max_len, startb, vlenb, &used2, NULL);
    if (rc != rc2 || used != used2 || memcmp(starta, startb, (n + 2) * sizeof *starta) != 0 ||
        memcmp(vlena, vlenb, (n + 2) * sizeof *vlena) != 0)
        abort();
    if (rc != TROVE_OK) {
        if (diag.code != rc || used != 777 || !untouched(starta, (n + 1) * sizeof *starta) ||
            !untouched(vlena, (n + 1) * sizeof *vlena))
            abort();
        return;
    }
    if (used > len || !untouched(starta + n, sizeof *starta) ||
        !untouched(vlena + n, sizeof *vlena))
        abort();
    str = malloc((n ? n : 1) * sizeof *str);
    if (!str)
        abort();
    for (size_t i = 0; i < n; i++) {
        if (vlena[i] > max_len || starta[i] < 4 || starta[i] + vlena[i] > used)
            abort();
        str[i] = (const char *)buf + starta[i];
    }
    if (trove__pq_plain_encode_strings(str, vlena, n, &b) != TROVE_OK || b.len != used ||
        (used && memcmp(b.ptr, buf, used) != 0))
        abort();
    free(str);
    trove_bytes_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *obj;
    size_t len, n;
    unsigned sel, param;

    if (size < 4)
        return 0;
    sel = data[0] % 4;
    param = data[1];
    n = trove__get_le16(data + 2);
    data += 4;
    size -= 4;
    /* An exact-size copy, so ASan sees any read past the input. */
    len = size;
    obj = malloc(len ? len : 1);
    if (!obj)
        return 0;
    if (len)
        memcpy(obj, data, len);
    switch (sel) {
    case 0:
        fuzz_rle(obj, len, param % 34, n);
        break;
    case 1:
    case 2:
        fuzz_delta(obj, len, sel == 1, n);
        break;
    default:
        fuzz_strings(obj, len, param == 255 ? UINT32_MAX : param * 16u, n);
        break;
    }
    free(obj);
    return 0;
}
