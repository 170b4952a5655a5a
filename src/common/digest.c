/*
 * digest.c: object digests (xxh3-128, canonical big-endian bytes) and xxh3-64 checksums,
 * the two hashes of every trove format (include/trove/digest.h). xxHash's canonical form is used so
 * that a digest's bytes, and so its hex name, are the same on every host. On a CPU with AVX2
 * the hashes run from an AVX2 build of the same functions (digest_avx2.c); the choice is
 * made once, on first use.
 */
#include "trove/digest.h"

#include <stdatomic.h>
#include <string.h>
#include <xxhash.h>

#include "common/hex.h"
#include "digest_internal.h"

/* 1: AVX2 build, 2: the library's; 0: not decided yet. */
static atomic_int use_avx2;

static int avx2(void)
{
    int v = atomic_load_explicit(&use_avx2, memory_order_relaxed);
    if (v == 0) {
#if defined(TROVE_HAVE_AVX2_BUILD) && (defined(__GNUC__) || defined(__clang__))
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx2") ? 1 : 2;
#else
        v = 2;
#endif
        atomic_store_explicit(&use_avx2, v, memory_order_relaxed);
    }
    return v == 1;
}

void trove_digest_of(const void *data, size_t len, struct trove_digest *out)
{
    XXH128_canonical_t c;
#if defined(TROVE_HAVE_AVX2_BUILD)
    if (avx2()) {
        trove__xxh3_128_avx2(data, len, out->b);
        return;
    }
#endif
    XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
    memcpy(out->b, c.digest, sizeof out->b);
}

uint64_t trove_checksum64(const void *data, size_t len)
{
#if defined(TROVE_HAVE_AVX2_BUILD)
    if (avx2())
        return trove__xxh3_64_avx2(data, len);
#endif
    return XXH3_64bits(data, len);
}

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
