/*
 * sealed.h (internal): the checks every on-disk trove object shares, written once. A sealed
 * object opens with an 8-byte magic and a little-endian u32 version, and ends with the
 * xxh3-64 checksum (little-endian) of every byte before it:
 *
 *   0 magic[8]   8 version u32   ... the format's own fields ...   len-8 checksum u64
 *
 * The decoders of recipes (v1, v3), capture headers and packs call these in this
 * order: magic, version gate, trailer, then their own fields. `what` names the object in
 * messages ("recipe", "capture header"), so a user reads which file is damaged.
 */
#ifndef TROVE_COMMON_SEALED_H
#define TROVE_COMMON_SEALED_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

#define TROVE__SEALED_TRAILER 8u

/* ceil(a / b) for b > 0, without the overflow of (a + b - 1) / b. */
static inline uint64_t trove__div_up(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* The first 8 bytes are `magic`, else TROVE_ERR_MAGIC at offset 0 ("not a trove WHAT (it
 * does not start with "MAGIC")"). len < 8 is TROVE_ERR_TRUNCATED. */
int trove__sealed_magic(const uint8_t *buf, size_t len, const char magic[8], const char *what,
                        struct trove_diag *diag);

/*
 * The version gate: version (read at offset `off`) must be one of known[0..n) (ascending).
 * A version above the last is "written by a newer trove ... upgrade trove to read it";
 * any other is "unknown (not a trove WHAT version)". Both are TROVE_ERR_VERSION at `off`;
 * `reads` completes "this build reads ..." ("version 1", "versions 1 and 3").
 */
int trove__sealed_version(uint32_t version, uint64_t off, const uint32_t *known, size_t n,
                          const char *what, const char *reads, struct trove_diag *diag);

/* The trailing checksum: len >= 8 and the last 8 bytes equal the xxh3-64 of the rest, else
 * TROVE_ERR_TRUNCATED or TROVE_ERR_CHECKSUM at offset len - 8. */
int trove__sealed_trailer(const uint8_t *buf, size_t len, const char *what,
                          struct trove_diag *diag);

/* Write the trailing checksum of buf[0 .. len-8) into its last 8 bytes (len >= 8). */
void trove__sealed_seal(uint8_t *buf, size_t len);

/*
 * The same checks for a sealed part of a file that is not the whole of it: buf[0..len) sits
 * at offset `at` of its file, and the offsets in diag are the file's. The magic is its first
 * n bytes (a 4-byte object magic, or a footer's at the end of a file); the trailer covers
 * buf[0 .. len-8) (the entry area of a recipe v1, a pack's index). With n = 8 and at = 0
 * they are trove__sealed_magic and trove__sealed_trailer.
 */
int trove__sealed_magic_at(const uint8_t *buf, size_t len, const char *magic, size_t n,
                           uint64_t at, const char *what, struct trove_diag *diag);
int trove__sealed_trailer_at(const uint8_t *buf, size_t len, uint64_t at, const char *what,
                             struct trove_diag *diag);

#endif
