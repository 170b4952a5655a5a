/*
 * recipe_head.h: the header fields every recipe version shares, checked in one place (the
 * magic and the version gate, trove_recipe_version, are declared in trove/recipe.h and
 * implemented in recipe_head.c too).
 *
 *   0  magic "TROVRCP1"   8  version u32   12  digest_width u32 = 16   16  slot_count u64
 *   24 block_size u32     28 flags u32     32  volume_size u64         40  generation u64
 *
 * Bytes 48 and on belong to each version (v1: a reserved u64; v3: the dictionary and page
 * counts), and so do the length and checksum rules; the version's decoder checks those.
 */
#ifndef TROVE_STORE_RECIPE_HEAD_H
#define TROVE_STORE_RECIPE_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

struct trove__recipe_head {
    uint64_t slot_count;
    uint32_t block_size;
    uint32_t flags;
    uint64_t volume_size;
    uint64_t generation;
};

/* A power of two from 4 KiB to 1 GiB. */
int trove__recipe_block_size_ok(uint32_t bs);
/* ceil(volume_size / block_size) without overflow; block_size is nonzero. */
uint64_t trove__recipe_slots_for(uint64_t volume_size, uint32_t block_size);

/* Write the shared 48 bytes of a version `version` header from h. */
void trove__recipe_head_put(uint8_t *buf, uint32_t version, const struct trove__recipe_head *h);

/* What the store reads of a committed recipe file of any version without decoding it: the
 * generation (bytes 40..48 of buf, which holds at least the 48 shared bytes) and the
 * trailing checksum (the last 8 of len >= 8 bytes). */
uint64_t trove__recipe_generation(const uint8_t *buf);
uint64_t trove__recipe_checksum(const uint8_t *buf, size_t len);

/* Set the read-only flag in a recipe file's bytes (v1 or v3, as trove_recipe_version
 * reads them) and seal them again: v3's checksum covers the header, v1's only the
 * entries. Errors: those of trove_recipe_version (buf unchanged). */
int trove__recipe_set_readonly(uint8_t *buf, size_t len);

/*
 * Check, in this order, and stop at the first failure with the offset and a message in
 * diag: at least header_len bytes (TROVE_ERR_TRUNCATED), the magic and a known version
 * (trove_recipe_version), the version is `version` (TROVE_ERR_VERSION), digest width 16,
 * block size, flags (TROVE_ERR_CORRUPT), slot count within TROVE_RECIPE_MAX_SLOTS
 * (TROVE_ERR_LIMIT) and equal to ceil(volume_size / block_size) (TROVE_ERR_CORRUPT). On
 * success fill h. buf is non-NULL when len > 0.
 */
int trove__recipe_head(const uint8_t *buf, size_t len, size_t header_len, uint32_t version,
                       struct trove__recipe_head *h, struct trove_diag *diag);

#endif
