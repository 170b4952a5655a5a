/*
 * recipe_head.c: what every recipe version shares (recipe_head.h) — the magic, the version
 * gate that picks the decoder, and the header fields at bytes 12 to 48 — checked and
 * written in one place, so that the v1 and v3 decoders refuse a damaged header alike, with
 * the same offsets and messages, and a reader of either version says "written by a newer
 * trove" of the next one. The magic and the version gate are the sealed-object checks of
 * common/sealed.h; this file only names the recipe's versions.
 */
#include "recipe_head.h"

#include "common/endian.h"
#include "common/fail.h"
#include "common/sealed.h"
#include "trove/recipe.h"

#include <inttypes.h>
#include <string.h>

#define RECIPE_MAGIC "TROVRCP1"
#define VERSION_AT 8
#define FLAGS_AT 28
#define GENERATION_AT 40
#define DIGEST_WIDTH 16u
#define MIN_BLOCK 4096u
#define MAX_BLOCK (1u << 30)

int trove__recipe_block_size_ok(uint32_t bs)
{
    return bs >= MIN_BLOCK && bs <= MAX_BLOCK && (bs & (bs - 1)) == 0;
}

uint64_t trove__recipe_slots_for(uint64_t volume_size, uint32_t block_size)
{
    return trove__div_up(volume_size, block_size);
}

/* The versions this build reads, ascending (trove__sealed_version). */
static const uint32_t known_versions[] = {1, 3, 4};

int trove_recipe_version(const uint8_t *buf, size_t len, uint32_t *version_out,
                         struct trove_diag *diag)
{
    uint32_t version;
    int rc;

    if (!version_out || (!buf && len > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "recipe version called without a buffer or an output");
    /* The shortest header of any version (v1's); every recipe file is longer. */
    if (len < TROVE_RECIPE_V1_HEADER)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "recipe is %zu bytes, shorter than any recipe header (%d bytes); the "
                          "file was cut short",
                          len, TROVE_RECIPE_V1_HEADER);
    if ((rc = trove__sealed_magic(buf, len, RECIPE_MAGIC, "recipe", diag)) != TROVE_OK)
        return rc;
    version = trove__get_le32(buf + VERSION_AT);
    if ((rc = trove__sealed_version(version, VERSION_AT, known_versions,
                                    sizeof known_versions / sizeof known_versions[0], "recipe",
                                    "versions 1, 3 and 4", diag)) != TROVE_OK)
        return rc;
    *version_out = version;
    return TROVE_OK;
}

uint64_t trove__recipe_generation(const uint8_t *buf)
{
    return trove__get_le64(buf + GENERATION_AT);
}

uint64_t trove__recipe_checksum(const uint8_t *buf, size_t len)
{
    return trove__get_le64(buf + len - TROVE__SEALED_TRAILER);
}

int trove__recipe_set_readonly(uint8_t *buf, size_t len)
{
    uint32_t version = 0;
    int rc;

    if ((rc = trove_recipe_version(buf, len, &version, NULL)) != TROVE_OK)
        return rc;
    trove__put_le32(buf + FLAGS_AT, trove__get_le32(buf + FLAGS_AT) | TROVE_RECIPE_FLAG_READONLY);
    if (version != 1) /* v1's checksum covers the entries only */
        trove__sealed_seal(buf, len);
    return TROVE_OK;
}

void trove__recipe_head_put(uint8_t *buf, uint32_t version, const struct trove__recipe_head *h)
{
    memcpy(buf, RECIPE_MAGIC, 8);
    trove__put_le32(buf + VERSION_AT, version);
    trove__put_le32(buf + 12, DIGEST_WIDTH);
    trove__put_le64(buf + 16, h->slot_count);
    trove__put_le32(buf + 24, h->block_size);
    trove__put_le32(buf + FLAGS_AT, h->flags);
    trove__put_le64(buf + 32, h->volume_size);
    trove__put_le64(buf + GENERATION_AT, h->generation);
}

int trove__recipe_head(const uint8_t *buf, size_t len, size_t header_len, uint32_t version,
                       struct trove__recipe_head *h, struct trove_diag *diag)
{
    uint32_t got = 0, width, block_size, flags;
    uint64_t slot_count, volume_size;
    int rc;

    if (len < header_len)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                              "recipe is %zu bytes, shorter than its %zu-byte version %" PRIu32
                              " header; the file was cut short",
                              len, header_len, version);
    if ((rc = trove_recipe_version(buf, len, &got, diag)) != TROVE_OK)
        return rc; /* bad magic, an unknown or a newer version */
    if (got != version)
        return TROVE_FAIL(diag, TROVE_ERR_VERSION, VERSION_AT,
                              "recipe version %" PRIu32 " given to the version %" PRIu32
                              " decoder; trove_recipe_version picks the decoder",
                              got, version);
    width = trove__get_le32(buf + 12);
    if (width != DIGEST_WIDTH)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 12,
                              "recipe digest width is %" PRIu32 " bytes; version %" PRIu32
                              " has 16 (xxh3-128)",
                              width, version);
    slot_count = trove__get_le64(buf + 16);
    block_size = trove__get_le32(buf + 24);
    flags = trove__get_le32(buf + FLAGS_AT);
    volume_size = trove__get_le64(buf + 32);
    if (!trove__recipe_block_size_ok(block_size))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 24,
                              "recipe block size %" PRIu32 " is not a power of two from 4096 "
                              "to 2^30; the header is damaged",
                              block_size);
    if ((flags & ~TROVE_RECIPE_FLAGS_KNOWN) != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, FLAGS_AT,
                              "recipe flags 0x%" PRIx32 " set unknown bits (only bits 0 and 1 are "
                              "defined)",
                              flags);
    if (slot_count > TROVE_RECIPE_MAX_SLOTS)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 16,
                              "recipe has %" PRIu64 " slots, over the limit of %llu",
                              slot_count, (unsigned long long)TROVE_RECIPE_MAX_SLOTS);
    if (slot_count != trove__recipe_slots_for(volume_size, block_size))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 16,
                              "recipe slot count disagrees with the size: %" PRIu64 " slots, "
                              "but a volume of %" PRIu64 " bytes at %" PRIu32 "-byte blocks "
                              "has %" PRIu64,
                              slot_count, volume_size, block_size,
                              trove__recipe_slots_for(volume_size, block_size));
    h->slot_count = slot_count;
    h->block_size = block_size;
    h->flags = flags;
    h->volume_size = volume_size;
    h->generation = trove__get_le64(buf + GENERATION_AT);
    return TROVE_OK;
}
