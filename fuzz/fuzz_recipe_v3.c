/*
 * fuzz_recipe_v3.c: libFuzzer target for the recipe v3 and v4 decoders (src/store/recipe_v3.c):
 * the manifest (v4 is v3's layout with a stale count), pages, dictionary chunks, column segments and patches, and the version gate.
 *
 *   input := selector u8, then
 *            0 (mod 5): a manifest                      1: a page
 *            2: n u16, dict_count u32, a chunk          3: n u16, dict_count u32, a segment
 *            4: n u16, dict_count u32, a patch
 *
 * The oracles: decoding with and without a diag agrees, and a failed decode leaves every
 * output untouched and sets diag.code. Every object a decoder accepts is re-encoded from
 * what it decoded and must give back exactly the input bytes — each v3 encoding is
 * canonical, so this is what makes equal contents one object. A decoded packed segment's
 * indices are all below dict_count, it still decodes with dict_count = max + 1 and is
 * refused with max; a chunk or segment is refused for any other n; nothing is written past
 * n. A manifest refused only for its checksum gets the right checksum written in and must
 * then decode, or fail only the page-digest check, so mutated headers reach the field
 * checks and the success path too; a manifest that decodes is version 3 or 4 to the gate,
 * and re-encodes (v3 or v4, with its stale count) to its input. A
 * patch that decodes has increasing slots below n and indices below dict_count, re-encodes
 * to its input, and applied to a base either changes exactly its slots (handing back the
 * base's indices) or, where an entry repeats the base, is refused and changes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "trove/recipe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEG TROVE_RECIPE_V3_SEGMENT_SLOTS

/* Outputs with one spare element past the largest n, to catch writes past n; their
 * sentinel images; scratch outputs for the second decodes. */
static struct trove_digest dig[SEG + 1], dig_sentinel[SEG + 1], dig_tmp[SEG + 1];
static uint32_t idx[SEG + 1], idx_sentinel[SEG + 1], idx_tmp[SEG + 1];

/* Decode a manifest and, on success, check the oracles. Returns the decoder's result. */
static int check_manifest(const uint8_t *buf, size_t size)
{
    struct trove_recipe_v3 m, sentinel;
    struct trove_diag diag;
    struct trove_digest *pages = NULL;
    struct trove_bytes b = {0};
    uint32_t version = 0;
    int rc;

    memset(&sentinel, 0x5A, sizeof sentinel);
    m = sentinel;
    rc = trove_recipe_v3_decode(buf, size, &m, &diag);
    if (rc != trove_recipe_v3_decode(buf, size, &sentinel, NULL))
        abort();
    if (rc != TROVE_OK) {
        if (diag.code != rc || memcmp(&m, &sentinel, sizeof m) != 0)
            abort();
        goto out;
    }
    if (m.page_count != trove_recipe_v3_pages(m.slot_count, m.dict_count) ||
        m.page_count > size / 16 || m.pages != buf + TROVE_RECIPE_V3_HEADER ||
        trove_recipe_version(buf, size, &version, NULL) != TROVE_OK || version != m.version ||
        (version != 3 && version != 4) || (version == 3 && m.stale != 0) ||
        m.stale >= m.dict_count)
        abort();
    pages = malloc((size_t)m.page_count * sizeof *pages);
    if (!pages)
        goto out;
    for (uint32_t i = 0; i < m.page_count; i++)
        trove_recipe_v3_page(&m, i, &pages[i]);
    if ((version == 3 ? trove_recipe_v3_encode(m.volume_size, m.block_size, m.flags,
                                               m.generation, m.dict_count, pages,
                                               m.page_count, &b)
                      : trove_recipe_v4_encode(m.volume_size, m.block_size, m.flags,
                                               m.generation, m.dict_count, m.stale, pages,
                                               m.page_count, &b)) != TROVE_OK ||
        b.len != size || memcmp(b.ptr, buf, size) != 0)
        abort();
out:
    free(pages);
    trove_bytes_free(&b);
    return rc;
}

static void fuzz_manifest(const uint8_t *buf, size_t size)
{
    uint8_t *fixed;
    int rc;

    if (check_manifest(buf, size) != TROVE_ERR_CHECKSUM)
        return;
    /* Every field check passed, so size = 80 + 16P: fix the checksum and decode again. */
    if (size < TROVE_RECIPE_V3_HEADER + 8 + 16)
        abort();
    fixed = malloc(size);
    if (!fixed)
        return;
    memcpy(fixed, buf, size);
    trove__put_le64(fixed + size - 8, trove_checksum64(fixed, size - 8));
    rc = check_manifest(fixed, size);
    if (rc != TROVE_OK && rc != TROVE_ERR_CORRUPT)
        abort();
    free(fixed);
}

static void fuzz_page(const uint8_t *buf, size_t size)
{
    struct trove_v3_section sec[TROVE_RECIPE_V3_PAGE_SECTIONS], sentinel[8], tmp[8];
    struct trove_diag diag;
    struct trove_bytes b = {0};
    uint32_t n = 0x5A5A, n2 = 0x5A5A;
    int rc;

    memset(sec, 0x5A, sizeof sec);
    memcpy(sentinel, sec, sizeof sec);
    rc = trove_recipe_v3_page_decode(buf, size, sec, &n, &diag);
    if (rc != trove_recipe_v3_page_decode(buf, size, tmp, &n2, NULL))
        abort();
    if (rc != TROVE_OK) {
        if (diag.code != rc || n != 0x5A5A || memcmp(sec, sentinel, sizeof sec) != 0)
            abort();
        return;
    }
    if (n < 1 || n > TROVE_RECIPE_V3_PAGE_SECTIONS ||
        (n < 8 && memcmp(&sec[n], &sentinel[n], (8 - n) * sizeof *sec) != 0) ||
        trove_recipe_v3_page_encode(sec, n, &b) != TROVE_OK || b.len != size ||
        memcmp(b.ptr, buf, size) != 0)
        abort();
    trove_bytes_free(&b);
}

static void fuzz_chunk(const uint8_t *buf, size_t size, uint32_t n)
{
    struct trove_diag diag;
    struct trove_bytes b = {0};
    int rc;

    memset(dig, 0x5A, sizeof dig);
    rc = trove_recipe_v3_chunk_decode(buf, size, n, dig, &diag);
    if (rc != trove_recipe_v3_chunk_decode(buf, size, n, dig_tmp, NULL))
        abort();
    if (rc != TROVE_OK) {
        if (diag.code != rc || memcmp(dig, dig_sentinel, sizeof dig) != 0)
            abort();
        return;
    }
    if (memcmp(&dig[n], &dig_sentinel[n], (SEG + 1 - n) * sizeof *dig) != 0 ||
        trove_recipe_v3_chunk_decode(buf, size, n == SEG ? n - 1 : n + 1, dig_tmp, NULL) !=
            TROVE_ERR_CORRUPT ||
        trove_recipe_v3_chunk_encode(dig, n, &b) != TROVE_OK || b.len != size ||
        memcmp(b.ptr, buf, size) != 0)
        abort();
    trove_bytes_free(&b);
}

static void fuzz_segment(const uint8_t *buf, size_t size, uint32_t n, uint32_t dict_count)
{
    struct trove_diag diag;
    struct trove_bytes b = {0};
    uint8_t enc = 0x5A, enc2 = 0x5A;
    uint32_t hi = 0, other = n == SEG ? n - 1 : n + 1;
    int rc;

    memset(dig, 0x5A, sizeof dig);
    memset(idx, 0x5A, sizeof idx);
    rc = trove_recipe_v3_segment_decode(buf, size, n, dict_count, idx, dig, &enc, &diag);
    if (rc != trove_recipe_v3_segment_decode(buf, size, n, dict_count, idx_tmp, dig_tmp, &enc2,
                                             NULL))
        abort();
    if (rc != TROVE_OK) {
        /* idx may hold a full segment's unpacked values; nothing past n is touched. */
        if (diag.code != rc || enc != 0x5A || memcmp(dig, dig_sentinel, sizeof dig) != 0 ||
            (n <= SEG && memcmp(idx + n, idx_sentinel + n, (SEG + 1 - n) * sizeof *idx) != 0) ||
            (n < SEG && memcmp(idx, idx_sentinel, sizeof idx) != 0))
            abort();
        return;
    }
    if (trove_recipe_v3_segment_decode(buf, size, other, dict_count, idx_tmp, dig_tmp, NULL,
                                       NULL) != TROVE_ERR_CORRUPT)
        abort();
    if (enc == TROVE_V3_ENC_RAW) {
        /* idx untouched; a caller that takes packed segments only is refused. */
        if (idx[0] != idx_sentinel[0] ||
            memcmp(&dig[n], &dig_sentinel[n], (SEG + 1 - n) * sizeof *dig) != 0 ||
            trove_recipe_v3_segment_decode(buf, size, n, dict_count, idx_tmp, NULL, NULL, NULL) !=
                TROVE_ERR_INVALID ||
            trove_recipe_v3_segment_encode_raw(dig, n, &b) != TROVE_OK)
            abort();
    } else {
        if (enc != TROVE_V3_ENC_PACKED || idx[n] != idx_sentinel[n] ||
            memcmp(dig, dig_sentinel, sizeof dig) != 0 ||
            trove_recipe_v3_segment_decode(buf, size, n, dict_count, NULL, dig_tmp, NULL, NULL) !=
                TROVE_ERR_INVALID)
            abort();
        for (uint32_t i = 0; i < n; i++) {
            if (idx[i] >= dict_count)
                abort();
            hi = idx[i] > hi ? idx[i] : hi;
        }
        /* The dictionary bound is exact: max + 1 entries suffice, max do not. */
        if (trove_recipe_v3_segment_decode(buf, size, n, hi + 1, idx_tmp, NULL, NULL, NULL) !=
                TROVE_OK ||
            (hi > 0 && trove_recipe_v3_segment_decode(buf, size, n, hi, idx_tmp, NULL, NULL,
                                                      NULL) != TROVE_ERR_CORRUPT) ||
            trove_recipe_v3_segment_encode(idx, n, &b) != TROVE_OK)
            abort();
    }
    if (b.len != size || memcmp(b.ptr, buf, size) != 0)
        abort();
    trove_bytes_free(&b);
}

static void fuzz_patch(const uint8_t *buf, size_t size, uint32_t n, uint32_t dict_count)
{
    struct trove_v3_patch p, sentinel, tmp;
    struct trove_diag diag;
    struct trove_bytes b = {0};
    uint32_t base_out[TROVE_RECIPE_V3_PATCH_MAX];
    int rc, repeats = 0;

    memset(&p, 0x5A, sizeof p);
    sentinel = p;
    rc = trove_recipe_v3_patch_decode(buf, size, n, dict_count, &p, &diag);
    if (rc != trove_recipe_v3_patch_decode(buf, size, n, dict_count, &tmp, NULL))
        abort();
    if (rc != TROVE_OK) {
        if (diag.code != rc || memcmp(&p, &sentinel, sizeof p) != 0)
            abort();
        return;
    }
    if (p.k < 1 || p.k > TROVE_RECIPE_V3_PATCH_MAX ||
        trove_recipe_v3_patch_encode(&p, n, &b) != TROVE_OK || b.len != size ||
        memcmp(b.ptr, buf, size) != 0)
        abort();
    trove_bytes_free(&b);
    /* A base of slot numbers (mod dict_count): some entries may repeat it. */
    for (uint32_t i = 0; i <= SEG; i++)
        idx[i] = idx_sentinel[i] = i % dict_count;
    for (uint32_t j = 0; j < p.k; j++) {
        if (p.off[j] >= n || (j > 0 && p.off[j] <= p.off[j - 1]) || p.idx[j] >= dict_count)
            abort();
        repeats += idx[p.off[j]] == p.idx[j];
    }
    rc = trove_recipe_v3_patch_apply(&p, idx, base_out, &diag);
    if (repeats) {
        if (rc != TROVE_ERR_CORRUPT || diag.code != rc ||
            memcmp(idx, idx_sentinel, sizeof idx) != 0)
            abort();
        return;
    }
    if (rc != TROVE_OK)
        abort();
    for (uint32_t j = 0; j < p.k; j++) {
        if (idx[p.off[j]] != p.idx[j] || base_out[j] != idx_sentinel[p.off[j]])
            abort();
        idx[p.off[j]] = idx_sentinel[p.off[j]];
    }
    if (memcmp(idx, idx_sentinel, sizeof idx) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *obj;
    size_t len;
    uint32_t n = 0, dict_count = 0;
    int sel;

    if (size < 1)
        return 0;
    sel = data[0] % 5;
    data++;
    size--;
    if (sel >= 2) {
        if (size < 6)
            return 0;
        n = trove__get_le16(data);
        dict_count = trove__get_le32(data + 2);
        data += 6;
        size -= 6;
    }
    /* An exact-size copy, so ASan sees any read past the object. */
    len = size;
    obj = malloc(len ? len : 1);
    if (!obj)
        return 0;
    if (len)
        memcpy(obj, data, len);
    memset(dig_sentinel, 0x5A, sizeof dig_sentinel);
    memset(idx_sentinel, 0x5A, sizeof idx_sentinel);
    switch (sel) {
    case 0:
        fuzz_manifest(obj, len);
        break;
    case 1:
        fuzz_page(obj, len);
        break;
    case 2:
        fuzz_chunk(obj, len, n);
        break;
    case 4:
        fuzz_patch(obj, len, n, dict_count);
        break;
    default:
        fuzz_segment(obj, len, n, dict_count);
        break;
    }
    free(obj);
    return 0;
}
