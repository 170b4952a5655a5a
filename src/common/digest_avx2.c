/*
 * digest_avx2.c: xxh3-128 and xxh3-64 compiled for AVX2, from xxHash's own header
 * (XXH_INLINE_ALL: private static copies, no clash with the shared library's symbols).
 * Debian's libxxhash is built for baseline x86-64 (SSE2), which hashes at about 7.5 GB/s on
 * this project's VM against memcpy's 10.4; the AVX2 build keeps up with memcpy (about 10
 * GB/s there). digest.c calls these only on a CPU with AVX2; the results are the same
 * functions' (test_backend checks digests against xxhsum's).
 */
#include <stddef.h>
#include <stdint.h>

#include "digest_internal.h"

#if defined(TROVE_HAVE_AVX2_BUILD) /* x86-64 only; elsewhere this file is empty */
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

void trove__xxh3_128_avx2(const void *data, size_t len, uint8_t out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
    for (int i = 0; i < 16; i++)
        out[i] = c.digest[i];
}

uint64_t trove__xxh3_64_avx2(const void *data, size_t len)
{
    return XXH3_64bits(data, len);
}
#else
typedef int trove__digest_avx2_unused; /* ISO C wants a translation unit to declare something */
#endif
