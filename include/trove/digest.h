/*
 * trove/digest.h: the two hashes every trove format uses — xxh3-128 digests that name the
 * store's objects, and xxh3-64 checksums that seal recipes, manifests, capture headers and
 * packs. Both run from an AVX2 build of xxHash where the CPU has it (chosen once, on first
 * use). Thread-safe; no allocation.
 */
#ifndef TROVE_DIGEST_H
#define TROVE_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An xxh3-128 digest in canonical (big-endian) byte order. All zero means "no object". */
struct trove_digest {
    uint8_t b[16];
};

/* The digest of len bytes at data. Never all zero for real data in practice; callers that
 * reserve the zero digest for "empty" treat a zero result as a hash collision to report. */
void trove_digest_of(const void *data, size_t len, struct trove_digest *out);
/* 32 lowercase hex digits and a NUL. */
void trove_digest_hex(const struct trove_digest *d, char out[33]);
/* Parse 32 hex digits (either case, nothing else). Returns TROVE_OK or TROVE_ERR_INVALID. */
int trove_digest_parse(const char *hex, struct trove_digest *out);
int trove_digest_is_zero(const struct trove_digest *d);
int trove_digest_equal(const struct trove_digest *a, const struct trove_digest *b);
/* The xxh3-64 checksum of len bytes (recipes, manifests). */
uint64_t trove_checksum64(const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif
