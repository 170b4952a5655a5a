/*
 * bitpack_internal.h (internal to src/codec): the AVX2 build of the generated kernels and
 * of trove_bitpack_range, compiled from bitpack_avx2.c with -mavx2 and chosen at run time
 * by bitpack.c.
 */
#ifndef TROVE_BITPACK_INTERNAL_H
#define TROVE_BITPACK_INTERNAL_H

#include <stdint.h>

void trove__bitpack_pack_avx2(const uint32_t *in, uint32_t *out, unsigned w, uint32_t base);
void trove__bitpack_unpack_avx2(const uint32_t *in, uint32_t *out, unsigned w, uint32_t base);

#include <stddef.h>

/* nblocks blocks of width w with non-temporal stores; out 32-byte aligned. Defined only
 * where bitpack_avx2.c is built with AVX2 (TROVE_HAVE_AVX2_BUILD). */
void trove__bitpack_unpack_stream_avx2(const uint32_t *in, uint32_t *out, size_t nblocks,
                                       unsigned w, uint32_t base);

/* trove_bitpack_range with AVX2 (unsigned 32-bit min and max). Defined only where
 * bitpack_avx2.c is built with AVX2 (TROVE_HAVE_AVX2_BUILD). */
void trove__bitpack_range_avx2(const uint32_t *in, uint32_t n, uint32_t *lo_out,
                               uint32_t *hi_out, int *consecutive_out);

/* Tests only: nonzero keeps trove_bitpack_pack/unpack/range on the baseline build. */
extern int trove__bitpack_force_generic;

#endif
