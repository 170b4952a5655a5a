/*
 * fuzz_refs.c: libFuzzer target for the reference-count file decoder (src/store/refs.c). The
 * input is one refs file. A file that decodes is re-encoded from the records read back
 * through trove__refs_basis_at / trove__refs_entry_at, which must give back exactly the
 * input bytes (a round-trip oracle: for a given record order the format has one encoding,
 * and a decoded file's records satisfy every rule the encoder checks). A file refused only
 * for its checksum gets the right checksum written in and must then decode or fail a record
 * check, so mutated records reach the record checks and the success path too. Decoding
 * with and without a diag must agree, and a failed decode leaves its output untouched.
 */
#include <stdlib.h>
#include <string.h>

#include "store/refs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode buf and, on success, check the oracles. Returns the decoder's result. */
static int check(const uint8_t *buf, size_t size)
{
    struct trove__refs_view v, sentinel;
    struct trove_diag diag;
    struct trove__refs_basis *basis = NULL;
    struct trove__refs_entry *entries = NULL;
    struct trove_bytes b = {0};
    int rc, rc2;

    memset(&sentinel, 0x5A, sizeof sentinel);
    v = sentinel;
    rc = trove__refs_decode(buf, size, &v, &diag);
    rc2 = trove__refs_decode(buf, size, &sentinel, NULL);
    if (rc != rc2)
        abort();
    if (rc != TROVE_OK) {
        if (diag.code != rc || memcmp(&v, &sentinel, sizeof v) != 0)
            abort();
        goto out;
    }
    if (v.volume_count > size / TROVE__REFS_BASIS_BYTES ||
        v.entry_count > size / TROVE__REFS_ENTRY_BYTES || v.basis != buf + TROVE__REFS_HEADER ||
        v.entries != v.basis + v.volume_count * TROVE__REFS_BASIS_BYTES)
        abort();
    basis = calloc((size_t)v.volume_count + 1, sizeof *basis);
    entries = calloc((size_t)v.entry_count + 1, sizeof *entries);
    if (!basis || !entries)
        goto out;
    for (uint64_t i = 0; i < v.volume_count; i++)
        trove__refs_basis_at(&v, i, &basis[i]);
    for (uint64_t i = 0; i < v.entry_count; i++)
        trove__refs_entry_at(&v, i, &entries[i]);
    if (trove__refs_encode(basis, (size_t)v.volume_count, entries, (size_t)v.entry_count,
                           v.dict_size, &b) != TROVE_OK ||
        b.len != size || memcmp(b.ptr, buf, size) != 0)
        abort();
out:
    free(basis);
    free(entries);
    trove_bytes_free(&b);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *fixed;
    uint64_t sum;
    int rc;

    if (check(data, size) != TROVE_ERR_CHECKSUM)
        return 0;
    /* Every header check passed, so size = 48 + 144V + 32E: fix the checksum, decode again. */
    if (size < TROVE__REFS_HEADER + 8)
        abort();
    fixed = malloc(size);
    if (!fixed)
        return 0;
    memcpy(fixed, data, size);
    sum = trove_checksum64(fixed, size - 8);
    for (int i = 0; i < 8; i++)
        fixed[size - 8 + i] = (uint8_t)(sum >> (8 * i));
    rc = check(fixed, size);
    if (rc != TROVE_OK && rc != TROVE_ERR_CORRUPT)
        abort();
    free(fixed);
    return 0;
}
