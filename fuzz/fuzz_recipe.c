/*
 * fuzz_recipe.c: libFuzzer target for the recipe v1 decoder (src/store/recipe_v1.c). The
 * input is one recipe file. A recipe that decodes is re-encoded from its decoded fields
 * and entries, which must give back exactly the input bytes (a round-trip oracle: the
 * format has one encoding per recipe), and trove_recipe_v1_slot must return the entries
 * where the spec places them. A recipe refused only for its checksum gets the right
 * checksum written in and must then decode, so mutated entries reach the success path
 * too. Decoding with and without a diag must agree, and a failed decode leaves its
 * output untouched.
 */
#include <stdlib.h>
#include <string.h>

#include "trove/recipe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode buf and, on success, check the oracles. Returns the decoder's result. */
static int check(const uint8_t *buf, size_t size)
{
    struct trove_recipe_v1 r, sentinel;
    struct trove_diag diag;
    struct trove_digest *slots = NULL, d;
    struct trove_bytes b = {0};
    int rc, rc2;

    memset(&sentinel, 0x5A, sizeof sentinel);
    r = sentinel;
    rc = trove_recipe_v1_decode(buf, size, &r, &diag);
    rc2 = trove_recipe_v1_decode(buf, size, &sentinel, NULL);
    if (rc != rc2)
        abort();
    if (rc != TROVE_OK) {
        if (diag.code != rc || memcmp(&r, &sentinel, sizeof r) != 0)
            abort();
        goto out;
    }
    if (r.slot_count > size / 16 || r.entries != buf + TROVE_RECIPE_V1_HEADER)
        abort();
    if (r.slot_count) {
        slots = malloc((size_t)r.slot_count * sizeof *slots);
        if (!slots)
            goto out;
        memcpy(slots, r.entries, (size_t)r.slot_count * 16);
    }
    if (trove_recipe_v1_encode(r.volume_size, r.block_size, r.flags, r.generation, slots,
                               r.slot_count, &b) != TROVE_OK ||
        b.len != size || memcmp(b.ptr, buf, size) != 0)
        abort();
    for (uint64_t i = 0; i < r.slot_count; i += 1 + r.slot_count / 4) {
        trove_recipe_v1_slot(&r, i, &d);
        if (memcmp(d.b, buf + TROVE_RECIPE_V1_HEADER + 16 * i, 16) != 0)
            abort();
    }
    if (r.slot_count) {
        trove_recipe_v1_slot(&r, r.slot_count - 1, &d);
        if (memcmp(d.b, buf + size - 24, 16) != 0)
            abort();
    }
out:
    free(slots);
    trove_bytes_free(&b);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *fixed;
    uint64_t sum;

    if (check(data, size) != TROVE_ERR_CHECKSUM)
        return 0;
    /* Every other check passed, so size = 64 + 16n: fix the checksum and decode again. */
    if (size < TROVE_RECIPE_V1_HEADER + 8 || (size - 64) % 16 != 0)
        abort();
    fixed = malloc(size);
    if (!fixed)
        return 0;
    memcpy(fixed, data, size);
    sum = trove_checksum64(fixed + TROVE_RECIPE_V1_HEADER, size - 64);
    for (int i = 0; i < 8; i++)
        fixed[size - 8 + i] = (uint8_t)(sum >> (8 * i));
    if (check(fixed, size) != TROVE_OK)
        abort();
    free(fixed);
    return 0;
}
