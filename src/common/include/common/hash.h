/*
 * hash.h (internal): the 64-bit finalizer of MurmurHash3 (fmix64), for the in-memory hash
 * indexes of the layers above: every input bit reaches every output bit, so a table can
 * take the low bits of a key made of ids and addresses. Not for anything stored or sent
 * (the digests are xxh3, common/digest.c).
 */
#ifndef TROVE_COMMON_HASH_H
#define TROVE_COMMON_HASH_H

#include <stdint.h>

static inline uint64_t trove__mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

#endif
