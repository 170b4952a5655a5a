/*
 * fuzz_pack.c: libFuzzer target for the pack file's footer and index decoders
 * (src/store/pack.c). The input is one whole pack file. A pack whose footer and index
 * decode is rebuilt with trove__pack_finish from its object area and the decoded entries,
 * which must give back exactly the input bytes (the index has one encoding). A pack refused
 * only for its checksum gets the right one written in and must then decode or fail an
 * entry check, so mutated entries reach the entry checks and the success path too. The
 * seed corpus is a 3-object pack written by the fs backend and hand-made damage to it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "store/pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check(const uint8_t *buf, size_t size)
{
    struct trove__pack_entry *e = NULL;
    struct trove_bytes b = {0};
    uint64_t count, index;
    int rc;

    if (size < TROVE__PACK_FOOTER) {
        uint8_t zero[TROVE__PACK_FOOTER] = {0};
        if (trove__pack_footer(zero, size, &count, &index, NULL) != TROVE_ERR_TRUNCATED)
            abort();
        return TROVE_ERR_TRUNCATED;
    }
    rc = trove__pack_footer(buf + size - TROVE__PACK_FOOTER, size, &count, &index, NULL);
    if (rc != TROVE_OK)
        return rc;
    if (index + count * TROVE__PACK_ENTRY + TROVE__PACK_FOOTER != size)
        abort();
    if (!(e = malloc(count * sizeof *e + 1)))
        return TROVE_ERR_NOMEM;
    rc = trove__pack_index(buf + index, count, index, e, NULL);
    if (rc == TROVE_OK) {
        for (uint64_t k = 0; k < count; k++)
            if (e[k].offset > index || e[k].len > index - e[k].offset)
                abort();
        if (trove_bytes_append(&b, buf, (size_t)index) == TROVE_OK &&
            trove__pack_finish(&b, e, (size_t)count) == TROVE_OK &&
            (b.len != size || memcmp(b.ptr, buf, size) != 0))
            abort();
    }
    free(e);
    trove_bytes_free(&b);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Only a footer that checked out reaches the checksum, so its count is sane here. */
    if (check(data, size) == TROVE_ERR_CHECKSUM) {
        uint64_t count = trove__get_le64(data + size - TROVE__PACK_FOOTER + 8);
        size_t index = size - TROVE__PACK_FOOTER - (size_t)count * TROVE__PACK_ENTRY;
        uint8_t *copy = malloc(size);
        if (!copy)
            return 0;
        memcpy(copy, data, size);
        trove__put_le64(copy + size - 8, trove_checksum64(copy + index, size - 8 - index));
        check(copy, size);
        free(copy);
    }
    return 0;
}
