/*
 * pack.c: the pack file's index and footer (pack.h has the layout). The writer appends
 * both after the object bytes; the reader validates the footer against the file size
 * before it reads the index, and every entry against the index offset, in arithmetic that
 * cannot overflow (a count is bounded by the file size before it multiplies).
 */
#include "pack.h"

#include "common/endian.h"
#include "common/fail.h"
#include "common/sealed.h"

#include <string.h>

#define PACK_MAGIC "TRVPACK1"

int trove__pack_finish(struct trove_bytes *pack, const struct trove__pack_entry *e, size_t n)
{
    size_t base = pack->len, need;
    uint8_t *p;
    int rc;

    if ((!e && n > 0) || n > (SIZE_MAX - base - TROVE__PACK_FOOTER) / TROVE__PACK_ENTRY)
        return TROVE_ERR_INVALID;
    for (size_t k = 0; k < n; k++)
        if (trove_digest_is_zero(&e[k].d) || e[k].offset > base || e[k].len > base - e[k].offset)
            return TROVE_ERR_INVALID;
    need = n * TROVE__PACK_ENTRY + TROVE__PACK_FOOTER;
    if ((rc = trove_bytes_reserve(pack, need)) != TROVE_OK)
        return rc;
    p = pack->ptr + base;
    for (size_t k = 0; k < n; k++, p += TROVE__PACK_ENTRY) {
        memcpy(p, e[k].d.b, 16);
        trove__put_le64(p + 16, e[k].offset);
        trove__put_le64(p + 24, e[k].len);
    }
    memcpy(p, PACK_MAGIC, 8);
    trove__put_le64(p + 8, n);
    trove__put_le64(p + 16, base);
    trove__sealed_seal(pack->ptr + base, need);
    pack->len = base + need;
    return TROVE_OK;
}

int trove__pack_footer(const uint8_t footer[TROVE__PACK_FOOTER], uint64_t file_size,
                       uint64_t *count_out, uint64_t *index_out, struct trove_diag *diag)
{
    uint64_t count, index;
    int rc;

    if (file_size < TROVE__PACK_FOOTER)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, file_size,
                          "pack is %llu bytes, shorter than its footer",
                          (unsigned long long)file_size);
    if ((rc = trove__sealed_magic_at(footer, TROVE__PACK_FOOTER, PACK_MAGIC, 8,
                                     file_size - TROVE__PACK_FOOTER, "pack footer", diag)))
        return rc;
    count = trove__get_le64(footer + 8);
    index = trove__get_le64(footer + 16);
    /* count is bounded by the file size before it is multiplied. */
    if (count > (file_size - TROVE__PACK_FOOTER) / TROVE__PACK_ENTRY ||
        index != file_size - TROVE__PACK_FOOTER - count * TROVE__PACK_ENTRY)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, file_size - TROVE__PACK_FOOTER + 8,
                          "pack footer: %llu entries at offset %llu do not end the %llu-byte "
                          "file",
                          (unsigned long long)count, (unsigned long long)index,
                          (unsigned long long)file_size);
    *count_out = count;
    *index_out = index;
    return TROVE_OK;
}

int trove__pack_index(const uint8_t *tail, uint64_t count, uint64_t index_off,
                      struct trove__pack_entry *out, struct trove_diag *diag)
{
    size_t len = (size_t)(count * TROVE__PACK_ENTRY + TROVE__PACK_FOOTER);
    int rc;

    if ((rc = trove__sealed_trailer_at(tail, len, index_off, "pack index", diag)) != TROVE_OK)
        return rc;
    for (uint64_t k = 0; k < count; k++) {
        const uint8_t *p = tail + k * TROVE__PACK_ENTRY;
        struct trove__pack_entry *e = &out[k];
        memcpy(e->d.b, p, 16);
        e->offset = trove__get_le64(p + 16);
        e->len = trove__get_le64(p + 24);
        if (trove_digest_is_zero(&e->d) || e->offset > index_off ||
            e->len > index_off - e->offset)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, index_off + k * TROVE__PACK_ENTRY,
                              "pack entry %llu is empty or points past the objects",
                              (unsigned long long)k);
    }
    return TROVE_OK;
}
