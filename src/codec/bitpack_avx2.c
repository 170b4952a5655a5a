/*
 * bitpack_avx2.c: the generated FastLanes kernels (gen_bitpack.py) compiled a second time,
 * with -mavx2 (CMake sets it for this file on x86-64), so that the compiler vectorizes the
 * 32 lanes eight at a time. bitpack.c calls these where the CPU has AVX2.
 */
#include "bitpack_internal.h"

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
