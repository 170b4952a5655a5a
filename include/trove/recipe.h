/*
 * trove/recipe.h: the recipe formats — a volume's slot -> digest map. Format v1 is one
 * flat file (below); format v3 (further down) a manifest naming content-addressed objects.
 * Both open with the same 48 bytes, and trove_recipe_version reads which one a file is.
 *
 *   offset  0  magic        "TROVRCP1" (8 bytes)
 *           8  version      u32 = 1
 *          12  digest_width u32 = 16 (xxh3-128)
 *          16  slot_count   u64
 *          24  block_size   u32 (bytes per slot; a power of two, 4 KiB .. 1 GiB)
 *          28  flags        u32 (bit 0: read-only, e.g. a snapshot; bit 1: an object volume;
 *                                others 0)
 *          32  volume_size  u64 (logical bytes; slot_count = ceil(volume_size / block_size))
 *          40  generation   u64 (commit counter)
 *          48  reserved     u64 = 0
 *          56  entries      slot_count x 16 bytes (the all-zero digest: an empty slot)
 *   56 + 16n  checksum     u64, xxh3-64 over the entry area
 *
 * Little-endian. The v1 reader refuses unknown magic, versions other than 1 (a newer version
 * names itself in the error), a digest width other than 16, a slot count that disagrees
 * with the size, a length other than 64 + 16 * slot_count, and a checksum mismatch.
 * docs/formats/store.md has the diagram and a golden vector.
 */
#ifndef TROVE_RECIPE_H
#define TROVE_RECIPE_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TROVE_RECIPE_V1_HEADER 56
#define TROVE_RECIPE_FLAG_READONLY 1u
#define TROVE_RECIPE_FLAG_OBJECTS 2u /* slots hold whole objects of 1..block_size bytes */
#define TROVE_RECIPE_FLAGS_KNOWN (TROVE_RECIPE_FLAG_READONLY | TROVE_RECIPE_FLAG_OBJECTS)
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


/* ---- recipe format v3 ------------------------------------------------------------------
 *
 * A volume's recipe as a dictionary of its distinct digests plus a column of dictionary
 * indices, cut into content-addressed objects so that a commit rewrites what changed:
 *
 *   manifest (the recipe file)  header + page_count page digests + checksum
 *   page object                 up to 8 section records {digest, kind, encoding}
 *   dictionary chunk object     up to 1024 digests (index 0 of chunk 0: the empty slot)
 *   column segment object       1024 slots' dictionary indices (the last may be short),
 *                               packed (one FastLanes block) or raw (v1-style digests),
 *                               or a patch: a packed segment's digest and up to 64 slots
 *                               that differ from it (what a small commit writes)
 *
 * Sections are numbered column segments first (nsegments = ceil(slot_count / 1024)), then
 * dictionary chunks (nchunks = ceil(dict_count / 1024)), so that a growing dictionary
 * appends sections and pages instead of shifting every segment's; page i lists sections
 * [8 i, 8 i + 8). Every object is named by the xxh3-128 of its bytes, which is also its
 * checksum. Every encoding is canonical (one content has exactly one encoding), so equal
 * segments, chunks and pages are one object. docs/formats/recipe-v3.md has the layouts.
 */
#define TROVE_RECIPE_V3_HEADER 72
#define TROVE_RECIPE_V3_SEGMENT_SLOTS 1024u /* slots per column segment */
#define TROVE_RECIPE_V3_CHUNK_ENTRIES 1024u /* digests per dictionary chunk */
#define TROVE_RECIPE_V3_PAGE_SECTIONS 8u    /* section records per page */
#define TROVE_RECIPE_V3_OBJECT_HEADER 8     /* every page, chunk and segment starts so */

/* Section kinds and segment encodings, as stored in page records and object headers. */
#define TROVE_V3_KIND_DICT 'D'
#define TROVE_V3_KIND_COLUMN 'S'
#define TROVE_V3_KIND_PAGE 'P'
#define TROVE_V3_ENC_NONE 0   /* dictionary chunks and pages */
#define TROVE_V3_ENC_RAW 1    /* a segment of 16-byte digests, as v1 entries */
#define TROVE_V3_ENC_PACKED 2 /* a segment of bit-packed dictionary indices */
#define TROVE_V3_ENC_PATCH 3  /* a packed base segment's digest plus the slots that differ */
#define TROVE_RECIPE_V3_PATCH_MAX 64u /* entries in a patch */

/* The version field of a recipe file (any version): checks the magic and a header-sized
 * length, and returns 1, 3 or 4 in *version_out. Errors: TROVE_ERR_TRUNCATED, TROVE_ERR_MAGIC,
 * TROVE_ERR_VERSION (any other version; a newer one says so). */
int trove_recipe_version(const uint8_t *buf, size_t len, uint32_t *version_out,
                         struct trove_diag *diag);

struct trove_recipe_v3 {
    uint64_t slot_count;
    uint32_t block_size;
    uint32_t flags;
    uint64_t volume_size;
    uint64_t generation;
    uint32_t dict_count; /* dictionary entries, index 0 (the empty slot) included: >= 1 */
    uint32_t page_count;
    uint64_t nchunks;    /* ceil(dict_count / 1024) */
    uint64_t nsegments;  /* ceil(slot_count / 1024) */
    const uint8_t *pages; /* borrowed: page_count digests of 16 bytes */
    uint32_t version;    /* 3 or 4 */
    uint32_t stale;      /* v4: entries that may name no slot (an upper bound); v3: 0 */
};

/* Sections and pages for a recipe of slot_count slots and dict_count entries. */
uint64_t trove_recipe_v3_sections(uint64_t slot_count, uint32_t dict_count);
uint64_t trove_recipe_v3_pages(uint64_t slot_count, uint32_t dict_count);

/* Encode a v3 manifest (appended to out). page_count must equal trove_recipe_v3_pages().
 * Errors: TROVE_ERR_INVALID (rules as for v1, dict_count 0, page count), TROVE_ERR_NOMEM. */
int trove_recipe_v3_encode(uint64_t volume_size, uint32_t block_size, uint32_t flags,
                           uint64_t generation, uint32_t dict_count,
                           const struct trove_digest *pages, uint32_t page_count,
                           struct trove_bytes *out);

/*
 * Encode a v4 manifest: the v3 layout with version 4 and, at offset 68 (v3's reserved
 * field), stale — an upper bound on the dictionary entries that hold a digest no slot
 * names, below dict_count. A v4 dictionary may also hold one digest at several indices.
 * Both let a commit change slots without loading the whole dictionary
 * (docs/formats/recipe-v4.md). Errors as trove_recipe_v3_encode, and TROVE_ERR_INVALID for
 * stale >= dict_count.
 */
int trove_recipe_v4_encode(uint64_t volume_size, uint32_t block_size, uint32_t flags,
                           uint64_t generation, uint32_t dict_count, uint32_t stale,
                           const struct trove_digest *pages, uint32_t page_count,
                           struct trove_bytes *out);

/* Validate a v3 or v4 manifest (pages borrowed from buf). Errors as for v1 (with
 * offsets and messages in diag), plus TROVE_ERR_CORRUPT for dict_count 0, fixed fields
 * (segment_slots, chunk_entries, page_sections) other than this build's, a page count that
 * disagrees with the slot and dictionary counts, nonzero reserved bytes (v3) and a stale
 * count not below dict_count (v4). */
int trove_recipe_v3_decode(const uint8_t *buf, size_t len, struct trove_recipe_v3 *out,
                           struct trove_diag *diag);

/* Page i's digest (i < page_count). */
void trove_recipe_v3_page(const struct trove_recipe_v3 *m, uint32_t i, struct trove_digest *out);

/* One section record of a page. */
struct trove_v3_section {
    struct trove_digest d; /* never zero */
    uint8_t kind;          /* TROVE_V3_KIND_DICT or _COLUMN */
    uint8_t encoding;      /* NONE for DICT; RAW, PACKED or PATCH for COLUMN */
};

/* A page object of n (1..8) records. Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM. */
int trove_recipe_v3_page_encode(const struct trove_v3_section *sec, uint32_t n,
                                struct trove_bytes *out);
/* Decode a page object into out[0..8); *n_out records. Errors: TROVE_ERR_TRUNCATED,
 * TROVE_ERR_MAGIC, TROVE_ERR_CORRUPT (kind, encoding, count, length, reserved bytes). */
int trove_recipe_v3_page_decode(const uint8_t *buf, size_t len, struct trove_v3_section *out,
                                uint32_t *n_out, struct trove_diag *diag);

/* A dictionary chunk object of n (1..1024) digests (zero digests: free entries, and the
 * reserved entry 0). Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM. */
int trove_recipe_v3_chunk_encode(const struct trove_digest *d, uint32_t n,
                                 struct trove_bytes *out);
/* Decode a chunk object that must hold exactly n digests into out[0..n). */
int trove_recipe_v3_chunk_decode(const uint8_t *buf, size_t len, uint32_t n,
                                 struct trove_digest *out, struct trove_diag *diag);

/* A packed column segment of n (1..1024) dictionary indices (0: empty slot), canonical:
 * CONSTANT if all are equal, else IDENTITY if idx[i] = idx[0] + i, else BITPACK with base =
 * min and the least width. Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM. */
int trove_recipe_v3_segment_encode(const uint32_t *idx, uint32_t n, struct trove_bytes *out);
/* A raw column segment of n (1..1024) digests (zero: empty slot), as v1 entries. */
int trove_recipe_v3_segment_encode_raw(const struct trove_digest *d, uint32_t n,
                                       struct trove_bytes *out);
/*
 * Decode a segment that must hold exactly n slots. A packed one fills idx[0..n) (each
 * below dict_count) and sets *encoding_out = TROVE_V3_ENC_PACKED; a raw one fills
 * digests[0..n) (digests may be NULL only if the caller refuses raw segments: then
 * TROVE_ERR_INVALID) and sets TROVE_V3_ENC_RAW. Only canonical encodings are accepted.
 * On failure digests are untouched, and so is idx except that a full (1024-slot) packed
 * segment may have been unpacked into it before a check failed.
 * Errors: TROVE_ERR_TRUNCATED, TROVE_ERR_MAGIC, TROVE_ERR_CORRUPT (with offsets in diag).
 */
int trove_recipe_v3_segment_decode(const uint8_t *buf, size_t len, uint32_t n,
                                   uint32_t dict_count, uint32_t *idx,
                                   struct trove_digest *digests, uint8_t *encoding_out,
                                   struct trove_diag *diag);

/*
 * A patch segment: the segment is its base — a packed segment of the same slot count,
 * named by digest — with k (1..64) slots replaced. off[] strictly increases and stays below
 * the slot count; every idx[] is below dict_count and differs from the base's index at
 * that slot (checked by trove_recipe_v3_patch_apply, which has the base). A patch of a
 * patch does not exist: the base is always a full segment, so loading any segment reads
 * at most two objects.
 */
struct trove_v3_patch {
    struct trove_digest base; /* never zero */
    uint32_t k;
    uint16_t off[TROVE_RECIPE_V3_PATCH_MAX];
    uint32_t idx[TROVE_RECIPE_V3_PATCH_MAX];
};

/* The byte length of a patch of k entries: 28 + 6 k. */
#define TROVE_RECIPE_V3_PATCH_LEN(k) (28u + 6u * (k))

/* Encode a patch of a segment of n (1..1024) slots. Errors: TROVE_ERR_INVALID (n, k, zero
 * base, offsets not increasing or not below n), TROVE_ERR_NOMEM. */
int trove_recipe_v3_patch_encode(const struct trove_v3_patch *p, uint32_t n,
                                 struct trove_bytes *out);
/* Decode a patch object of a segment that must hold exactly n slots, with every index
 * below dict_count. Errors: TROVE_ERR_TRUNCATED, TROVE_ERR_MAGIC, TROVE_ERR_CORRUPT (with
 * offsets in diag); a full segment handed here is CORRUPT. */
int trove_recipe_v3_patch_decode(const uint8_t *buf, size_t len, uint32_t n,
                                 uint32_t dict_count, struct trove_v3_patch *out,
                                 struct trove_diag *diag);
/* Apply a decoded patch to its base's indices idx[0..n) (n as decoded). Each base index
 * it replaces goes to base_out[j] (base_out may be NULL). Errors: TROVE_ERR_CORRUPT (an
 * entry that repeats the base's index: not canonical); idx is then unchanged. */
int trove_recipe_v3_patch_apply(const struct trove_v3_patch *p, uint32_t *idx,
                                uint32_t *base_out, struct trove_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
