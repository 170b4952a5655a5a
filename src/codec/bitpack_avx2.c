/*
 * bitpack_avx2.c: the generated FastLanes kernels (gen_bitpack.py) compiled a second time,
 * with -mavx2 (CMake sets it for this file on x86-64), so that the compiler vectorizes the
 * 32 lanes eight at a time. bitpack.c calls these where the CPU has AVX2.
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
#endif
