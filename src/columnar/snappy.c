/*
 * snappy.c: Snappy blocks through libsnappy (snappy.h has the contract). The length is read
 * first, in O(1), so that a block that does not match its page is refused before any pass
 * over it; the block is then validated whole before anything is written, so an error leaves
 * dst as it was. libsnappy's own varint reader refuses exactly two things, a block that ends
 * inside its length (under 5 bytes, each with the continuation bit) and a fifth byte over
 * 0x0f, which is how the two errors are told apart.
 */
#include "snappy.h"

#include <snappy-c.h>

#include "common/fail.h"

int trove__snappy_decode(const uint8_t *src, size_t slen, uint8_t *dst, size_t dlen,
                         struct trove_diag *diag)
{
    const char *in = (const char *)src;
    size_t n, out = dlen;

    if (snappy_uncompressed_length(in, slen, &n) != SNAPPY_OK)
        return slen < 5 ? TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, slen,
                                     "snappy: the block ends inside its length")
                        : TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 4,
                                     "snappy: a block length of more than 32 bits");
    if (n != dlen)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "snappy: a block of %zu bytes where %zu are declared", n, dlen);
    if (snappy_validate_compressed_buffer(in, slen) != SNAPPY_OK ||
        snappy_uncompress(in, slen, (char *)dst, &out) != SNAPPY_OK || out != dlen)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "snappy: the block of %zu bytes does not decode to its %zu (cut "
                          "short, or a copy from before its start or past its end)",
                          slen, dlen);
    return TROVE_OK;
}
