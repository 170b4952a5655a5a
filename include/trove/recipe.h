/*
 * trove/recipe.h: recipe format v1 — a volume's slot -> digest map as one file.
 *
 *   offset  0  magic        "TROVRCP1" (8 bytes)
 *           8  version      u32 = 1
 *          12  digest_width u32 = 16 (xxh3-128)
 *          16  slot_count   u64
 *          24  block_size   u32 (bytes per slot; a power of two, 4 KiB .. 1 GiB)
 *          28  flags        u32 (bit 0: read-only, e.g. a snapshot; others 0)
 *          32  volume_size  u64 (logical bytes; slot_count = ceil(volume_size / block_size))
 *          40  generation   u64 (commit counter)
 *          48  reserved     u64 = 0
 *          56  entries      slot_count x 16 bytes (the all-zero digest: an empty slot)
 *   56 + 16n  checksum     u64, xxh3-64 over the entry area
 *
 * Little-endian. A reader refuses unknown magic, versions other than 1 (a newer version
 * names itself in the error), a digest width other than 16, a slot count that disagrees
 * with the size, a length other than 64 + 16 * slot_count, and a checksum mismatch.
 * docs/formats/store.md has the diagram and a golden vector.
 */
#ifndef TROVE_RECIPE_H
#define TROVE_RECIPE_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/store.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TROVE_RECIPE_V1_HEADER 56
#define TROVE_RECIPE_FLAG_READONLY 1u
#define TROVE_RECIPE_MAX_SLOTS (1ull << 32) /* 8 PiB at 2 MiB blocks; 64 GiB of entries */

struct trove_recipe_v1 {
    uint64_t slot_count;
    uint32_t block_size;
    uint32_t flags;
    uint64_t volume_size;
    uint64_t generation;
    const uint8_t *entries; /* borrowed: slot_count * 16 bytes inside the caller's buffer */
};

/*
 * Encode a v1 recipe into out (appended). slots[i] is slot i's digest (zero: empty).
 * Errors: TROVE_ERR_INVALID (block_size not a power of two in range, slot_count not
 * ceil(volume_size / block_size), too many slots), TROVE_ERR_NOMEM (out unchanged).
 */
int trove_recipe_v1_encode(uint64_t volume_size, uint32_t block_size, uint32_t flags,
                           uint64_t generation, const struct trove_digest *slots,
                           uint64_t slot_count, struct trove_bytes *out);

/*
 * Seal a recipe image in place: img holds 64 + 16 * slot_count bytes whose entry area
 * (bytes [56, 56 + 16n)) the caller filled; write the header and the trailing checksum.
 * For a caller that keeps a volume's recipe as its file image, so that a commit writes it
 * without a copy. The arguments must satisfy trove_recipe_v1_encode's rules (asserted).
 */
void trove_recipe_v1_seal(uint8_t *img, uint64_t volume_size, uint32_t block_size,
                          uint32_t flags, uint64_t generation, uint64_t slot_count);

/* The v1 file length for slot_count slots (<= TROVE_RECIPE_MAX_SLOTS): 64 + 16 * n. */
#define TROVE_RECIPE_V1_LEN(n) ((uint64_t)TROVE_RECIPE_V1_HEADER + 16u * (uint64_t)(n) + 8u)

/*
 * Validate a v1 recipe in buf[0..len) and describe it in out (entries point into buf).
 * Errors, each with the offset and a message in diag: TROVE_ERR_TRUNCATED (short file),
 * TROVE_ERR_MAGIC, TROVE_ERR_VERSION (unknown or newer version), TROVE_ERR_CORRUPT (digest
 * width, block size, slot count against the size, flags or reserved bits, length),
 * TROVE_ERR_LIMIT (slot count over the limit), TROVE_ERR_CHECKSUM.
 */
int trove_recipe_v1_decode(const uint8_t *buf, size_t len, struct trove_recipe_v1 *out,
                           struct trove_diag *diag);

/* Slot i's digest from a decoded recipe (i < slot_count). */
void trove_recipe_v1_slot(const struct trove_recipe_v1 *r, uint64_t i, struct trove_digest *out);

#ifdef __cplusplus
}
#endif
#endif
