/*
 * digest.c: object digests (xxh3-128, canonical big-endian bytes) and xxh3-64 checksums,
 * the two hashes of the store (include/trove/store.h). xxHash's canonical form is used so
 * that a digest's bytes, and so its hex name, are the same on every host.
 */
#include "trove/store.h"

#include <string.h>
#include <xxhash.h>

#include "common/hex.h"

void trove_digest_of(const void *data, size_t len, struct trove_digest *out)
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
    memcpy(out->b, c.digest, sizeof out->b);
}

uint64_t trove_checksum64(const void *data, size_t len) { return XXH3_64bits(data, len); }

void trove_digest_hex(const struct trove_digest *d, char out[33])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[d->b[i] >> 4];
        out[2 * i + 1] = hex[d->b[i] & 15];
    }
    out[32] = 0;
}

int trove_digest_parse(const char *hex, struct trove_digest *out)
{
    struct trove_digest d;
    for (int i = 0; i < 16; i++) {
        int hi = trove__hex_value(hex[2 * i]), lo = hi < 0 ? -1 : trove__hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return TROVE_ERR_INVALID;
        d.b[i] = (uint8_t)(hi << 4 | lo);
    }
    if (hex[32] != 0)
        return TROVE_ERR_INVALID;
    *out = d;
    return TROVE_OK;
}

int trove_digest_is_zero(const struct trove_digest *d)
{
    static const struct trove_digest zero;
    return memcmp(d->b, zero.b, sizeof zero.b) == 0;
}

int trove_digest_equal(const struct trove_digest *a, const struct trove_digest *b)
{
    return memcmp(a->b, b->b, sizeof a->b) == 0;
}
