/*
 * digest_internal.h: the AVX2 build of the store's two hashes (digest_avx2.c, compiled with
 * -mavx2), which digest.c picks on a CPU that has AVX2.
 */
#ifndef TROVE_STORE_DIGEST_INTERNAL_H
#define TROVE_STORE_DIGEST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

void trove__xxh3_128_avx2(const void *data, size_t len, uint8_t out[16]);
uint64_t trove__xxh3_64_avx2(const void *data, size_t len);

#endif
