/*
 * recipe_v1.c: recipe format v1 — a volume's slot -> digest map as one flat file
 * (include/trove/recipe.h, docs/formats/store.md).
 *
 *    0                   8         12         16                  24         28      32
 *   +-------------------+---------+----------+-------------------+----------+-------+
 *   | magic "TROVRCP1"  | version | digest   | slot_count    u64 | block    | flags |
 *   |                   | u32 = 1 | width=16 |                   | size u32 | u32   |
 *   +-------------------+---------+----------+-------------------+----------+-------+
 *   32                  40                  48                  56
 *   +-------------------+-------------------+-------------------+--------------------- - -
 *   | volume_size   u64 | generation    u64 | reserved  u64 = 0 | entry[0] entry[1] ...
 *   +-------------------+-------------------+-------------------+--------------------- - -
 *   56 + 16n            64 + 16n
 *   +-------------------+
 *   | checksum      u64 |   xxh3-64 of the entry area, bytes [56, 56 + 16n)
 *   +-------------------+
 *
 *   Integers are little-endian. entry[i] is slot i's xxh3-128 digest in canonical byte
 *   order (16 bytes); all zero means the slot is empty. flags bit 0: read-only (e.g. a
 *   snapshot); bit 1: an object volume (whole objects, no stated length). slot_count
 *   n = ceil(volume_size / block_size); block_size is a power of two from 4 KiB to 1 GiB;
 *   n <= TROVE_RECIPE_MAX_SLOTS (2^32). The file is 64 + 16n bytes.
 *
 * The layout is one fixed-width entry per slot, so a decode is a header check, a length
 * check and one checksum pass; the entries are not copied (the decoded recipe borrows
 * them from the caller's buffer) and a slot lookup is a 16-byte copy at 56 + 16 i. The
 * decoder trusts nothing it reads: the block size is bounded before it divides, the slot
 * count is bounded (TROVE_RECIPE_MAX_SLOTS) before it multiplies, and the file length is
 * compared in 64-bit arithmetic that cannot overflow (16 * 2^32 + 64 < 2^37), so it never
 * reads past buf[len). The encoder applies the same rules to its arguments, so everything
 * it writes decodes, and appends to the caller's buffer only after everything checked.
 */
#include "trove/recipe.h"

#include "common/endian.h"
#include "common/fail.h"
#include "common/sealed.h"
#include "recipe_head.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

#define RECIPE_VERSION 1u
#define RECIPE_DIGEST_WIDTH 16u
#define RECIPE_TRAILER TROVE__SEALED_TRAILER

_Static_assert(sizeof(struct trove_digest) == RECIPE_DIGEST_WIDTH, "a digest is 16 bytes");

/* The file's length for n slots; n <= TROVE_RECIPE_MAX_SLOTS, so it fits in 37 bits. */
static uint64_t file_len(uint64_t n)
{
    assert(n <= TROVE_RECIPE_MAX_SLOTS);
    return TROVE_RECIPE_V1_HEADER + RECIPE_DIGEST_WIDTH * n + RECIPE_TRAILER;
}

int trove_recipe_v1_encode(uint64_t volume_size, uint32_t block_size, uint32_t flags,
                           uint64_t generation, const struct trove_digest *slots,
                           uint64_t slot_count, struct trove_bytes *out)
{
    uint64_t total;
    size_t entry_bytes;
    uint8_t *p;
    int rc;

    if (!out || !trove__recipe_block_size_ok(block_size) ||
        (flags & ~TROVE_RECIPE_FLAGS_KNOWN) != 0 || slot_count > TROVE_RECIPE_MAX_SLOTS ||
        slot_count != trove__recipe_slots_for(volume_size, block_size) ||
        (slot_count > 0 && !slots))
        return TROVE_ERR_INVALID;
    total = file_len(slot_count);
    if (total > SIZE_MAX - out->len)
        return TROVE_ERR_NOMEM; /* cannot be addressed on this host */
    entry_bytes = (size_t)(RECIPE_DIGEST_WIDTH * slot_count);
    rc = trove_bytes_reserve(out, (size_t)total);
    if (rc != TROVE_OK)
        return rc;

    p = out->ptr + out->len;
    if (entry_bytes)
        memcpy(p + TROVE_RECIPE_V1_HEADER, slots, entry_bytes);
    trove_recipe_v1_seal(p, volume_size, block_size, flags, generation, slot_count);
    out->len += (size_t)total;
    return TROVE_OK;
}

void trove_recipe_v1_seal(uint8_t *img, uint64_t volume_size, uint32_t block_size,
                          uint32_t flags, uint64_t generation, uint64_t slot_count)
{
    size_t entry_bytes = (size_t)(RECIPE_DIGEST_WIDTH * slot_count);
    struct trove__recipe_head h = {slot_count, block_size, flags, volume_size, generation};

    assert(trove__recipe_block_size_ok(block_size) &&
           slot_count == trove__recipe_slots_for(volume_size, block_size));
    trove__recipe_head_put(img, RECIPE_VERSION, &h);
    trove__put_le64(img + 48, 0); /* reserved */
    trove__sealed_seal(img + TROVE_RECIPE_V1_HEADER, entry_bytes + RECIPE_TRAILER);
}

int trove_recipe_v1_decode(const uint8_t *buf, size_t len, struct trove_recipe_v1 *out,
                           struct trove_diag *diag)
{
    struct trove__recipe_head h;
    uint64_t slot_count, reserved, want;
    int rc;

    if (!out || (!buf && len > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "recipe decode called without a buffer or an output");
    rc = trove__recipe_head(buf, len, TROVE_RECIPE_V1_HEADER, RECIPE_VERSION, &h, diag);
    if (rc != TROVE_OK)
        return rc;
    slot_count = h.slot_count;
    reserved = trove__get_le64(buf + 48);
    if (reserved != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 48,
                          "recipe reserved field is 0x%" PRIx64 ", must be 0", reserved);
    want = file_len(slot_count);
    if ((uint64_t)len < want)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "recipe is %zu bytes but its %" PRIu64 " slots need %" PRIu64
                          "; the file was cut short",
                          len, slot_count, want);
    if ((uint64_t)len > want)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, want,
                          "recipe is %zu bytes but its %" PRIu64 " slots need %" PRIu64
                          "; %" PRIu64 " stray bytes follow the checksum",
                          len, slot_count, want, (uint64_t)len - want);
    /* The checksum covers the entry area only: the sealed part starts at the entries. */
    rc = trove__sealed_trailer_at(buf + TROVE_RECIPE_V1_HEADER, len - TROVE_RECIPE_V1_HEADER,
                                  TROVE_RECIPE_V1_HEADER, "recipe entries", diag);
    if (rc != TROVE_OK)
        return rc;

    out->slot_count = slot_count;
    out->block_size = h.block_size;
    out->flags = h.flags;
    out->volume_size = h.volume_size;
    out->generation = h.generation;
    out->entries = buf + TROVE_RECIPE_V1_HEADER;
    return TROVE_OK;
}

void trove_recipe_v1_slot(const struct trove_recipe_v1 *r, uint64_t i, struct trove_digest *out)
{
    assert(r && out && i < r->slot_count);
    memcpy(out->b, r->entries + (size_t)i * RECIPE_DIGEST_WIDTH, RECIPE_DIGEST_WIDTH);
}
