/*
 * bitpack_avx2.c: the generated FastLanes kernels (gen_bitpack.py) compiled a second time,
 * with -mavx2 (CMake sets it for this file on x86-64), so that the compiler vectorizes the
 * 32 lanes eight at a time; and trove_bitpack_range on AVX2's unsigned 32-bit min and max.
 * bitpack.c calls these where the CPU has AVX2.
 */
#include "bitpack_internal.h"

#include <stddef.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#define KNAME(x) avx2_##x
#include "bitpack_kernels.h"

void trove__bitpack_pack_avx2(const uint32_t *in, uint32_t *out, unsigned w, uint32_t base)
{
    avx2_pack_table[w](in, out, base);
}

void trove__bitpack_unpack_avx2(const uint32_t *in, uint32_t *out, unsigned w, uint32_t base)
{
    avx2_unpack_table[w](in, out, base);
}

#if defined(__AVX2__)
#define PREFETCH_BLOCKS 1

/*
 * Unpack nblocks contiguous blocks into a large output with non-temporal stores: each
 * block is unpacked into a buffer in L1, then streamed out. A plain store to memory that
 * is not in cache first reads the line (read for ownership), so unpacking straight into a
 * 100 MB array moves more bytes than memcpy, which streams. out must be 32-byte aligned.
 */
void trove__bitpack_unpack_stream_avx2(const uint32_t *in, uint32_t *out, size_t nblocks,
                                       unsigned w, uint32_t base)
{
    uint32_t tmp[1024] __attribute__((aligned(32)));
    for (size_t b = 0; b < nblocks; b++) {
        /* Fetch the next block's packed words while this one unpacks: the hardware
         * prefetcher alone left the kernel waiting on DRAM (0.79x of memcpy at w = 25;
         * about 1.0x with this, 1 to 3 blocks ahead alike, measured in one loop). */
        if (b + PREFETCH_BLOCKS < nblocks)
            for (unsigned i = 0; i < w * 32; i += 16)
                _mm_prefetch((const char *)(in + (b + PREFETCH_BLOCKS) * w * 32 + i), _MM_HINT_T0);
        avx2_unpack_table[w](in + b * w * 32, tmp, base);
        for (unsigned i = 0; i < 1024; i += 8)
            _mm256_stream_si256((__m256i *)(void *)(out + b * 1024 + i),
                                _mm256_load_si256((const __m256i *)(const void *)(tmp + i)));
    }
    _mm_sfence();
}

/* The unsigned least and greatest of the 8 lanes of a vector. */
static uint32_t hmin_epu32(__m256i v)
{
    __m128i x = _mm_min_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_min_epu32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(1, 0, 3, 2)));
    x = _mm_min_epu32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)));
    return (uint32_t)_mm_cvtsi128_si32(x);
}

static uint32_t hmax_epu32(__m256i v)
{
    __m128i x = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_max_epu32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(1, 0, 3, 2)));
    x = _mm_max_epu32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)));
    return (uint32_t)_mm_cvtsi128_si32(x);
}

/*
 * trove_bitpack_range: unsigned min and max eight values at a time (two accumulator pairs,
 * 16 values an iteration), the last n % 8 one by one. Consecutive values span exactly
 * n - 1 from in[0] up, so only then does a second pass OR together in[i] ^ (in[0] + i)
 * (want holds in[0] + i for the eight i of a vector); hi = in[0] + n - 1 then also rules
 * out a wrap past 2^32 - 1. A 1024-value block in L1 took ~70 ns on the 2-core AVX-512 VM
 * the recipe benchmarks run on, the baseline build ~0.47 us (its emulated unsigned compares),
 * and the one-pass min, max and OR loop this replaced ~0.75 us.
 */
void trove__bitpack_range_avx2(const uint32_t *in, uint32_t n, uint32_t *lo_out,
                               uint32_t *hi_out, int *consecutive_out)
{
    const uint32_t v0 = in[0];
    __m256i lo0 = _mm256_set1_epi32((int)v0), hi0 = lo0, lo1 = lo0, hi1 = lo0;
    uint32_t i = 0, lo, hi, diff = 0;

    for (; i + 16 <= n; i += 16) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(in + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(in + i + 8));
        lo0 = _mm256_min_epu32(lo0, a);
        hi0 = _mm256_max_epu32(hi0, a);
        lo1 = _mm256_min_epu32(lo1, b);
        hi1 = _mm256_max_epu32(hi1, b);
    }
    for (; i + 8 <= n; i += 8) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(in + i));
        lo0 = _mm256_min_epu32(lo0, a);
        hi0 = _mm256_max_epu32(hi0, a);
    }
    lo = hmin_epu32(_mm256_min_epu32(lo0, lo1));
    hi = hmax_epu32(_mm256_max_epu32(hi0, hi1));
    for (; i < n; i++) {
        lo = in[i] < lo ? in[i] : lo;
        hi = in[i] > hi ? in[i] : hi;
    }
    if (lo == v0 && hi - lo == n - 1) {
        const __m256i eight = _mm256_set1_epi32(8);
        __m256i want = _mm256_add_epi32(_mm256_set1_epi32((int)v0),
                                        _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256i d = _mm256_setzero_si256();
        for (i = 0; i + 8 <= n; i += 8) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(in + i));
            d = _mm256_or_si256(d, _mm256_xor_si256(a, want));
            want = _mm256_add_epi32(want, eight);
        }
        diff = (uint32_t)!_mm256_testz_si256(d, d);
        for (; i < n; i++)
            diff |= in[i] ^ (v0 + i);
    }
    *lo_out = lo;
    *hi_out = hi;
    *consecutive_out = lo == v0 && hi - lo == n - 1 && diff == 0;
}
#endif
