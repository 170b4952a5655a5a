/*
 * recipe_v3.c: recipe format v3 — a volume's slot -> digest map as a dictionary of its
 * distinct digests plus a column of dictionary indices, cut into content-addressed objects
 * (include/trove/recipe.h, docs/formats/recipe-v3.md). The header fields v1 and v3 share,
 * and the version gate that tells them apart, are recipe_head.c's.
 *
 * The manifest (the recipe file, published by rename like v1):
 *
 *    0                   8         12         16                  24         28      32
 *   +-------------------+---------+----------+-------------------+----------+-------+
 *   | magic "TROVRCP1"  | version | digest   | slot_count    u64 | block    | flags |
 *   |                   | u32 = 3 | width=16 |                   | size u32 | u32   |
 *   +-------------------+---------+----------+-------------------+----------+-------+
 *   32                  40                  48         52         56         60
 *   +-------------------+-------------------+----------+----------+----------+----------+
 *   | volume_size   u64 | generation    u64 | dict     | segment  | chunk    | page     |
 *   |                   |                   | count u32| slots    | entries  | sections |
 *   |                   |                   | >= 1     | u32=1024 | u32=1024 | u32 = 8  |
 *   +-------------------+-------------------+----------+----------+----------+----------+
 *   64         68         72                                      72 + 16P       80 + 16P
 *   +----------+----------+----------------------------------- - -+-------------+
 *   | page     | reserved | page digest[0] ... page digest[P-1]   | checksum    |  xxh3-64 of
 *   | count P  | u32 = 0  | 16 bytes each, never zero             | u64         |  [0, 72+16P)
 *   +----------+----------+----------------------------------- - -+-------------+
 *
 * Sections are numbered column segments first (S = ceil(slot_count / 1024)), then dictionary
 * chunks (C = ceil(dict_count / 1024)), so that a growing dictionary appends sections
 * instead of moving every segment; P = ceil((S + C) / 8) and page i lists sections
 * [8i, min(8i + 8, C + S)). Pages, chunks and segments are objects in the store, each named
 * by the xxh3-128 of its bytes and each starting with the same 8-byte header:
 *
 *    0    1    2    3    4        5          6               8
 *   +----+----+----+----+--------+----------+---------------+------------------- - -
 *   | 'T'| 'R'| 'V'| '3'| kind   | encoding | count     u16 | payload
 *   +----+----+----+----+--------+----------+---------------+------------------- - -
 *
 *   page      kind 'P', encoding 0, count 1..8:     count records of 20 bytes
 *             digest[16] (nonzero) | kind u8 'D'/'S' | encoding u8 | reserved u16 = 0
 *   chunk     kind 'D', encoding 0, count 1..1024:  count digests of 16 bytes (zero allowed)
 *   segment   kind 'S', encoding 1 (RAW), count 1..1024: count digests (zero: empty slot)
 *             kind 'S', encoding 2 (PACKED), count 1..1024: an 8-byte descriptor
 *             scheme u8 (1 IDENTITY, 2 CONSTANT, 3 BITPACK) | width u8 | reserved u16 = 0 |
 *             base u32, then for BITPACK width * 128 bytes of FastLanes-packed idx - base
 *             (trove_bitpack_pack of 1024 values, slots past count padded with base)
 *
 * Integers are little-endian. Every object has exactly one encoding per content, and the
 * decoders refuse every other one: a packed segment is CONSTANT iff its values are all
 * equal, else IDENTITY iff idx[i] = idx[0] + i, else BITPACK with base = min, the least
 * width and padding that unpacks to base. So equal contents are equal bytes, are one object,
 * and an all-empty segment is the same object in every volume and snapshot.
 *
 * The decoders trust nothing: every count is bounded before it multiplies, every length is
 * compared in 64-bit arithmetic that cannot overflow (the largest object is 16,392 bytes,
 * the largest manifest 72 + 16 * 2^20 + 8), nothing is read past buf[len), packed payloads
 * (which may sit at any alignment) are copied into aligned words before they are unpacked,
 * and outputs are written only after every check passed. The encoders apply the same rules
 * to their arguments, so everything they write decodes back to the same bytes.
 */
#include "trove/recipe.h"

#include "common/endian.h"
#include "common/fail.h"
#include "common/sealed.h"
#include "recipe_head.h"
#include "trove/bitpack.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define RECIPE_V3 3u
#define RECIPE_V4 4u
#define DIGEST_WIDTH 16u
#define TRAILER TROVE__SEALED_TRAILER

#define OBJ_MAGIC "TRV3"
#define PAGE_RECORD 20u
#define DESC_SIZE 8u
#define PACKED_HEADER (TROVE_RECIPE_V3_OBJECT_HEADER + DESC_SIZE) /* 16 */
#define SEG_MAX TROVE_RECIPE_V3_SEGMENT_SLOTS

/* Manifest field offsets. */
#define M_VERSION 8
#define M_WIDTH 12
#define M_SLOTS 16
#define M_BLOCK 24
#define M_FLAGS 28
#define M_VOLSIZE 32
#define M_GEN 40
#define M_DICT 48
#define M_SEGSLOTS 52
#define M_CHUNKENT 56
#define M_PAGESEC 60
#define M_PAGES 64
#define M_RESERVED 68

_Static_assert(sizeof(struct trove_digest) == DIGEST_WIDTH, "a digest is 16 bytes");
_Static_assert(sizeof OBJ_MAGIC - 1 == 4, "the object magic is 4 bytes");
_Static_assert(M_RESERVED + 4 == TROVE_RECIPE_V3_HEADER, "the manifest header is 72 bytes");
_Static_assert(TROVE_RECIPE_V3_SEGMENT_SLOTS == TROVE_BITPACK_BLOCK, "a segment is one block");
_Static_assert(TROVE_RECIPE_V3_CHUNK_ENTRIES <= UINT16_MAX, "counts fit the u16 field");

/* ---- shared rules ------------------------------------------------------------------------ */

uint64_t trove_recipe_v3_sections(uint64_t slot_count, uint32_t dict_count)
{
    return trove__div_up(dict_count, TROVE_RECIPE_V3_CHUNK_ENTRIES) +
           trove__div_up(slot_count, TROVE_RECIPE_V3_SEGMENT_SLOTS);
}

uint64_t trove_recipe_v3_pages(uint64_t slot_count, uint32_t dict_count)
{
    return trove__div_up(trove_recipe_v3_sections(slot_count, dict_count),
                    TROVE_RECIPE_V3_PAGE_SECTIONS);
}

static const char *kind_name(uint8_t kind)
{
    switch (kind) {
    case TROVE_V3_KIND_PAGE:
        return "page";
    case TROVE_V3_KIND_DICT:
        return "dictionary chunk";
    case TROVE_V3_KIND_COLUMN:
        return "column segment";
    default:
        return "object of unknown kind";
    }
}

/* Is this a valid (kind, encoding) pair for a page record? */
static int section_kind_ok(uint8_t kind, uint8_t encoding)
{
    return (kind == TROVE_V3_KIND_DICT && encoding == TROVE_V3_ENC_NONE) ||
           (kind == TROVE_V3_KIND_COLUMN &&
            (encoding == TROVE_V3_ENC_RAW || encoding == TROVE_V3_ENC_PACKED ||
             encoding == TROVE_V3_ENC_PATCH));
}

static void put_object_header(uint8_t *p, uint8_t kind, uint8_t encoding, uint32_t count)
{
    assert(count >= 1 && count <= UINT16_MAX);
    memcpy(p, OBJ_MAGIC, 4);
    p[4] = kind;
    p[5] = encoding;
    trove__put_le16(p + 6, (uint16_t)count);
}

/*
 * Check an object header: length, magic, kind, count in 1..max and, when want_count is not
 * 0, equal to it. The encoding byte is the caller's to check (its rule depends on the kind);
 * it is returned in *encoding_out, the count in *count_out.
 */
static int check_object_header(const uint8_t *buf, size_t len, uint8_t kind, uint32_t max,
                               uint32_t want_count, uint8_t *encoding_out,
                               uint32_t *count_out, struct trove_diag *diag)
{
    const char *what = kind_name(kind);
    char object[40];
    uint32_t count;
    int rc;

    if (len < TROVE_RECIPE_V3_OBJECT_HEADER)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "recipe %s is %zu bytes, shorter than its %d-byte header; the "
                          "object was cut short",
                          what, len, TROVE_RECIPE_V3_OBJECT_HEADER);
    snprintf(object, sizeof object, "recipe v3 %s", what);
    if ((rc = trove__sealed_magic_at(buf, len, OBJ_MAGIC, 4, 0, object, diag)) != TROVE_OK)
        return rc;
    if (buf[4] != kind)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 4,
                          "recipe object has kind 0x%02x (a %s) where a %s ('%c') belongs",
                          (unsigned)buf[4], kind_name(buf[4]), what, kind);
    count = trove__get_le16(buf + 6);
    if (count == 0 || count > max)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 6,
                          "recipe %s holds %" PRIu32 " entries; it must hold 1 to %" PRIu32,
                          what, count, max);
    if (want_count != 0 && count != want_count)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 6,
                          "recipe %s holds %" PRIu32 " entries, but its place in the recipe "
                          "needs %" PRIu32,
                          what, count, want_count);
    *encoding_out = buf[5];
    *count_out = count;
    return TROVE_OK;
}

/* The start of a chunk, segment or patch decode: the arguments (a buffer, an output, n in
 * 1..max) and then the object header of `kind` for n entries. */
static int open_object(const char *what, const char *unit, int kind, uint32_t max,
                       const uint8_t *buf, size_t len, int has_out, uint32_t n,
                       uint8_t *encoding, uint32_t *count, struct trove_diag *diag)
{
    if ((!buf && len > 0) || !has_out || n == 0 || n > max)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "recipe %s decode called without a buffer or an output, or for "
                          "%" PRIu32 " %s (1 to %" PRIu32 ")",
                          what, n, unit, max);
    return check_object_header(buf, len, kind, max, n, encoding, count, diag);
}

/* Require len == want, the length the header's counts give: shorter is TRUNCATED at len,
 * longer CORRUPT at want. */
static int check_length(size_t len, uint64_t want, const char *what, struct trove_diag *diag)
{
    if ((uint64_t)len < want)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "recipe %s is %zu bytes but its header's counts need %" PRIu64
                          "; it was cut short",
                          what, len, want);
    if ((uint64_t)len > want)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, want,
                          "recipe %s is %zu bytes but its header's counts need %" PRIu64
                          "; %" PRIu64 " stray bytes follow",
                          what, len, want, (uint64_t)len - want);
    return TROVE_OK;
}

/* ---- the manifest ------------------------------------------------------------------------ */

/* The manifest's length for P pages; P < 2^32, so it fits in 37 bits. */
static uint64_t manifest_len(uint64_t pages)
{
    return TROVE_RECIPE_V3_HEADER + DIGEST_WIDTH * pages + TRAILER;
}

/* The v3 and v4 manifests: version 4 keeps stale where v3 has its reserved zero. */
static int manifest_encode(uint32_t version, uint64_t volume_size, uint32_t block_size,
                           uint32_t flags, uint64_t generation, uint32_t dict_count,
                           uint32_t stale, const struct trove_digest *pages,
                           uint32_t page_count, struct trove_bytes *out)
{
    uint64_t slot_count, total;
    uint8_t *p;
    int rc;

    if (!out || !pages || !trove__recipe_block_size_ok(block_size) ||
        (flags & ~TROVE_RECIPE_FLAGS_KNOWN) != 0 || dict_count == 0 || stale >= dict_count)
        return TROVE_ERR_INVALID;
    slot_count = trove__recipe_slots_for(volume_size, block_size);
    if (slot_count > TROVE_RECIPE_MAX_SLOTS ||
        page_count != trove_recipe_v3_pages(slot_count, dict_count))
        return TROVE_ERR_INVALID;
    for (uint32_t i = 0; i < page_count; i++) {
        if (trove_digest_is_zero(&pages[i]))
            return TROVE_ERR_INVALID;
    }
    total = manifest_len(page_count); /* page_count <= 2^20 here: under 17 MB */
    rc = trove_bytes_reserve(out, (size_t)total);
    if (rc != TROVE_OK)
        return rc;

    p = out->ptr + out->len;
    {
        struct trove__recipe_head h = {slot_count, block_size, flags, volume_size, generation};
        trove__recipe_head_put(p, version, &h);
    }
    trove__put_le32(p + M_DICT, dict_count);
    trove__put_le32(p + M_SEGSLOTS, TROVE_RECIPE_V3_SEGMENT_SLOTS);
    trove__put_le32(p + M_CHUNKENT, TROVE_RECIPE_V3_CHUNK_ENTRIES);
    trove__put_le32(p + M_PAGESEC, TROVE_RECIPE_V3_PAGE_SECTIONS);
    trove__put_le32(p + M_PAGES, page_count);
    trove__put_le32(p + M_RESERVED, stale);
    memcpy(p + TROVE_RECIPE_V3_HEADER, pages, (size_t)DIGEST_WIDTH * page_count);
    trove__sealed_seal(p, (size_t)total);
    out->len += (size_t)total;
    return TROVE_OK;
}

int trove_recipe_v3_encode(uint64_t volume_size, uint32_t block_size, uint32_t flags,
                           uint64_t generation, uint32_t dict_count,
                           const struct trove_digest *pages, uint32_t page_count,
                           struct trove_bytes *out)
{
    return manifest_encode(RECIPE_V3, volume_size, block_size, flags, generation, dict_count,
                           0, pages, page_count, out);
}

int trove_recipe_v4_encode(uint64_t volume_size, uint32_t block_size, uint32_t flags,
                           uint64_t generation, uint32_t dict_count, uint32_t stale,
                           const struct trove_digest *pages, uint32_t page_count,
                           struct trove_bytes *out)
{
    return manifest_encode(RECIPE_V4, volume_size, block_size, flags, generation, dict_count,
                           stale, pages, page_count, out);
}

/* One of the fixed layout fields (segment_slots, chunk_entries, page_sections). */
static int check_fixed(const uint8_t *buf, unsigned at, uint32_t want, const char *name,
                       struct trove_diag *diag)
{
    uint32_t v = trove__get_le32(buf + at);
    if (v == want)
        return TROVE_OK;
    return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                      "recipe %s is %" PRIu32 "; version 3 fixes it at %" PRIu32
                      " — the header is damaged",
                      name, v, want);
}

int trove_recipe_v3_decode(const uint8_t *buf, size_t len, struct trove_recipe_v3 *out,
                           struct trove_diag *diag)
{
    struct trove__recipe_head h;
    uint32_t dict_count, page_count, reserved, version = RECIPE_V3;
    uint64_t slot_count, want_pages, want;
    int rc;

    if (!out || (!buf && len > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "recipe decode called without a buffer or an output");
    /* Version 4 is version 3's layout; the header check names whichever was given. */
    if (buf && len >= M_WIDTH && trove__get_le32(buf + M_VERSION) == RECIPE_V4)
        version = RECIPE_V4;
    rc = trove__recipe_head(buf, len, TROVE_RECIPE_V3_HEADER, version, &h, diag);
    if (rc != TROVE_OK)
        return rc;
    slot_count = h.slot_count;
    dict_count = trove__get_le32(buf + M_DICT);
    page_count = trove__get_le32(buf + M_PAGES);
    reserved = trove__get_le32(buf + M_RESERVED);
    if (version == RECIPE_V3 && reserved != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, M_RESERVED,
                          "recipe reserved field is 0x%" PRIx32 ", must be 0", reserved);
    rc = check_fixed(buf, M_SEGSLOTS, TROVE_RECIPE_V3_SEGMENT_SLOTS, "segment_slots", diag);
    if (rc == TROVE_OK)
        rc = check_fixed(buf, M_CHUNKENT, TROVE_RECIPE_V3_CHUNK_ENTRIES, "chunk_entries", diag);
    if (rc == TROVE_OK)
        rc = check_fixed(buf, M_PAGESEC, TROVE_RECIPE_V3_PAGE_SECTIONS, "page_sections", diag);
    if (rc != TROVE_OK)
        return rc;
    if (dict_count == 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, M_DICT,
                          "recipe dictionary count is 0; it always holds entry 0, the empty "
                          "slot");
    if (version == RECIPE_V4 && reserved >= dict_count)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, M_RESERVED,
                          "recipe counts %" PRIu32 " stale dictionary entries of %" PRIu32
                          "; entry 0 is never stale",
                          reserved, dict_count);
    want_pages = trove_recipe_v3_pages(slot_count, dict_count);
    if (page_count != want_pages)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, M_PAGES,
                          "recipe lists %" PRIu32 " pages, but %" PRIu64 " slots and %" PRIu32
                          " dictionary entries make %" PRIu64 " sections in %" PRIu64 " pages",
                          page_count, slot_count, dict_count,
                          trove_recipe_v3_sections(slot_count, dict_count), want_pages);
    want = manifest_len(page_count);
    rc = check_length(len, want, "manifest", diag);
    if (rc != TROVE_OK)
        return rc;
    if ((rc = trove__sealed_trailer(buf, len, "recipe", diag)) != TROVE_OK)
        return rc;
    for (uint32_t i = 0; i < page_count; i++) {
        struct trove_digest d;
        size_t at = TROVE_RECIPE_V3_HEADER + (size_t)DIGEST_WIDTH * i;
        memcpy(d.b, buf + at, DIGEST_WIDTH);
        if (trove_digest_is_zero(&d))
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "recipe page %" PRIu32 " has the zero digest, which names no "
                              "object",
                              i);
    }

    out->slot_count = slot_count;
    out->block_size = h.block_size;
    out->flags = h.flags;
    out->volume_size = h.volume_size;
    out->generation = h.generation;
    out->dict_count = dict_count;
    out->page_count = page_count;
    out->nchunks = trove__div_up(dict_count, TROVE_RECIPE_V3_CHUNK_ENTRIES);
    out->nsegments = trove__div_up(slot_count, TROVE_RECIPE_V3_SEGMENT_SLOTS);
    out->pages = buf + TROVE_RECIPE_V3_HEADER;
    out->version = version;
    out->stale = version == RECIPE_V4 ? reserved : 0;
    return TROVE_OK;
}

void trove_recipe_v3_page(const struct trove_recipe_v3 *m, uint32_t i, struct trove_digest *out)
{
    assert(m && out && i < m->page_count);
    memcpy(out->b, m->pages + (size_t)i * DIGEST_WIDTH, DIGEST_WIDTH);
}

/* ---- pages ------------------------------------------------------------------------------- */

int trove_recipe_v3_page_encode(const struct trove_v3_section *sec, uint32_t n,
                                struct trove_bytes *out)
{
    size_t total;
    uint8_t *p;
    int rc;

    if (!out || !sec || n == 0 || n > TROVE_RECIPE_V3_PAGE_SECTIONS)
        return TROVE_ERR_INVALID;
    total = TROVE_RECIPE_V3_OBJECT_HEADER + (size_t)PAGE_RECORD * n;
    for (uint32_t i = 0; i < n; i++) {
        if (trove_digest_is_zero(&sec[i].d) || !section_kind_ok(sec[i].kind, sec[i].encoding) ||
            (i > 0 && sec[i].kind == TROVE_V3_KIND_COLUMN && sec[i - 1].kind != TROVE_V3_KIND_COLUMN))
            return TROVE_ERR_INVALID;
    }
    rc = trove_bytes_reserve(out, total);
    if (rc != TROVE_OK)
        return rc;

    p = out->ptr + out->len;
    put_object_header(p, TROVE_V3_KIND_PAGE, TROVE_V3_ENC_NONE, n);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *r = p + TROVE_RECIPE_V3_OBJECT_HEADER + (size_t)PAGE_RECORD * i;
        memcpy(r, sec[i].d.b, DIGEST_WIDTH);
        r[16] = sec[i].kind;
        r[17] = sec[i].encoding;
        trove__put_le16(r + 18, 0);
    }
    out->len += total;
    return TROVE_OK;
}

int trove_recipe_v3_page_decode(const uint8_t *buf, size_t len, struct trove_v3_section *out,
                                uint32_t *n_out, struct trove_diag *diag)
{
    struct trove_v3_section sec[TROVE_RECIPE_V3_PAGE_SECTIONS];
    uint32_t count = 0;
    uint8_t encoding = 0;
    int rc;

    if (!out || !n_out || (!buf && len > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "recipe page decode called without a buffer or an output");
    rc = check_object_header(buf, len, TROVE_V3_KIND_PAGE, TROVE_RECIPE_V3_PAGE_SECTIONS, 0,
                             &encoding, &count, diag);
    if (rc != TROVE_OK)
        return rc;
    if (encoding != TROVE_V3_ENC_NONE)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 5,
                          "recipe page has encoding %u; pages have encoding 0",
                          (unsigned)encoding);
    rc = check_length(len, TROVE_RECIPE_V3_OBJECT_HEADER + (uint64_t)PAGE_RECORD * count,
                      "page", diag);
    if (rc != TROVE_OK)
        return rc;
    for (uint32_t i = 0; i < count; i++) {
        size_t at = TROVE_RECIPE_V3_OBJECT_HEADER + (size_t)PAGE_RECORD * i;
        const uint8_t *r = buf + at;
        uint16_t reserved = trove__get_le16(r + 18);

        memcpy(sec[i].d.b, r, DIGEST_WIDTH);
        sec[i].kind = r[16];
        sec[i].encoding = r[17];
        if (trove_digest_is_zero(&sec[i].d))
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "recipe page record %" PRIu32 " has the zero digest, which "
                              "names no object",
                              i);
        if (sec[i].kind != TROVE_V3_KIND_DICT && sec[i].kind != TROVE_V3_KIND_COLUMN)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 16,
                              "recipe page record %" PRIu32 " has kind 0x%02x; a section is "
                              "a dictionary chunk ('D') or a column segment ('S')",
                              i, (unsigned)sec[i].kind);
        if (i > 0 && sec[i].kind == TROVE_V3_KIND_COLUMN &&
            sec[i - 1].kind != TROVE_V3_KIND_COLUMN)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 16,
                              "recipe page record %" PRIu32 " is a column segment after a "
                              "dictionary chunk; segments are numbered first",
                              i);
        if (!section_kind_ok(sec[i].kind, sec[i].encoding))
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 17,
                              "recipe page record %" PRIu32 " (a %s) has encoding %u; %s",
                              i, kind_name(sec[i].kind), (unsigned)sec[i].encoding,
                              sec[i].kind == TROVE_V3_KIND_DICT
                                  ? "dictionary chunks have encoding 0"
                                  : "segments are raw (1), packed (2) or patches (3)");
        if (reserved != 0)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 18,
                              "recipe page record %" PRIu32 " reserved field is 0x%04x, must "
                              "be 0",
                              i, (unsigned)reserved);
    }
    memcpy(out, sec, count * sizeof *sec);
    *n_out = count;
    return TROVE_OK;
}

/* ---- dictionary chunks and raw segments -------------------------------------------------- */

/* Write an object of n (1..1024) digests at p: a chunk or a raw segment. */
static void digests_put(uint8_t kind, uint8_t encoding, const struct trove_digest *d, uint32_t n,
                        uint8_t *p)
{
    put_object_header(p, kind, encoding, n);
    memcpy(p + TROVE_RECIPE_V3_OBJECT_HEADER, d, (size_t)DIGEST_WIDTH * n);
}

/* Append an object of n digests (a chunk or a raw segment). */
static int encode_digests(uint8_t kind, uint8_t encoding, const struct trove_digest *d,
                          uint32_t n, struct trove_bytes *out)
{
    size_t total;
    int rc;

    if (!out || !d || n == 0 || n > TROVE_RECIPE_V3_CHUNK_ENTRIES)
        return TROVE_ERR_INVALID;
    total = TROVE_RECIPE_V3_OBJECT_HEADER + (size_t)DIGEST_WIDTH * n;
    rc = trove_bytes_reserve(out, total);
    if (rc != TROVE_OK)
        return rc;
    digests_put(kind, encoding, d, n, out->ptr + out->len);
    out->len += total;
    return TROVE_OK;
}

_Static_assert(TROVE_RECIPE_V3_CHUNK_ENTRIES == TROVE_RECIPE_V3_SEGMENT_SLOTS,
               "chunks and raw segments share one limit");

int trove_recipe_v3_chunk_encode(const struct trove_digest *d, uint32_t n,
                                 struct trove_bytes *out)
{
    return encode_digests(TROVE_V3_KIND_DICT, TROVE_V3_ENC_NONE, d, n, out);
}

int trove_recipe_v3_segment_encode_raw(const struct trove_digest *d, uint32_t n,
                                       struct trove_bytes *out)
{
    return encode_digests(TROVE_V3_KIND_COLUMN, TROVE_V3_ENC_RAW, d, n, out);
}

int trove_recipe_v3_chunk_decode(const uint8_t *buf, size_t len, uint32_t n,
                                 struct trove_digest *out, struct trove_diag *diag)
{
    uint32_t count = 0;
    uint8_t encoding = 0;
    int rc;

    rc = open_object("chunk", "entries", TROVE_V3_KIND_DICT, TROVE_RECIPE_V3_CHUNK_ENTRIES, buf,
                     len, out != NULL, n, &encoding, &count, diag);
    if (rc != TROVE_OK)
        return rc;
    if (encoding != TROVE_V3_ENC_NONE)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 5,
                          "recipe dictionary chunk has encoding %u; chunks have encoding 0",
                          (unsigned)encoding);
    rc = check_length(len, TROVE_RECIPE_V3_OBJECT_HEADER + (uint64_t)DIGEST_WIDTH * count,
                      "dictionary chunk", diag);
    if (rc != TROVE_OK)
        return rc;
    memcpy(out, buf + TROVE_RECIPE_V3_OBJECT_HEADER, (size_t)DIGEST_WIDTH * count);
    return TROVE_OK;
}

/* ---- packed segments --------------------------------------------------------------------- */

/* A packed segment's canonical form: its scheme, base and width. */
struct seg_form {
    uint8_t scheme;
    unsigned w;
    uint32_t base;
};

/* The canonical form of idx[0..n) (n 1..1024); returns the object's length. */
static size_t segment_form(const uint32_t *idx, uint32_t n, struct seg_form *f)
{
    uint32_t lo, hi;
    int identity = 1;

    assert(n >= 1 && n <= SEG_MAX);
    trove_bitpack_range(idx, n, &lo, &hi, &identity);
    f->w = 0;
    if (lo == hi) {
        f->scheme = TROVE_SCHEME_CONSTANT;
    } else if (identity) {
        f->scheme = TROVE_SCHEME_IDENTITY;
        lo = idx[0];
    } else {
        f->scheme = TROVE_SCHEME_BITPACK;
        f->w = trove_bitpack_width(hi - lo);
    }
    f->base = lo;
    return PACKED_HEADER + (size_t)f->w * 128;
}

/* Write the segment of idx[0..n) in form f at p (any alignment). */
static void segment_put(const uint32_t *idx, uint32_t n, const struct seg_form *f, uint8_t *p)
{
    uint32_t vals[SEG_MAX], words[SEG_MAX];

    put_object_header(p, TROVE_V3_KIND_COLUMN, TROVE_V3_ENC_PACKED, n);
    p[8] = f->scheme;
    p[9] = (uint8_t)f->w;
    trove__put_le16(p + 10, 0);
    trove__put_le32(p + 12, f->base);
    if (f->scheme == TROVE_SCHEME_BITPACK) {
        const uint32_t *src = idx;
        if (n < SEG_MAX) { /* padding packs as 0 */
            memcpy(vals, idx, (size_t)n * sizeof *vals);
            for (uint32_t i = n; i < SEG_MAX; i++)
                vals[i] = f->base;
            src = vals;
        }
        if (((uintptr_t)(p + PACKED_HEADER) & 3) == 0) {
            trove_bitpack_pack(src, (uint32_t *)(void *)(p + PACKED_HEADER), f->w, f->base);
        } else {
            trove_bitpack_pack(src, words, f->w, f->base);
            memcpy(p + PACKED_HEADER, words, (size_t)f->w * 128);
        }
    }
}

int trove_recipe_v3_segment_encode(const uint32_t *idx, uint32_t n, struct trove_bytes *out)
{
    struct seg_form f;
    size_t total;
    int rc;

    if (!out || !idx || n == 0 || n > SEG_MAX)
        return TROVE_ERR_INVALID;
    total = segment_form(idx, n, &f);
    rc = trove_bytes_reserve(out, total);
    if (rc != TROVE_OK)
        return rc;
    segment_put(idx, n, &f, out->ptr + out->len);
    out->len += total;
    return TROVE_OK;
}

/* Where value i of a packed block of width w starts: the byte of its (first) word. */
static uint64_t value_offset(uint32_t i, unsigned w)
{
    uint32_t lane = i % TROVE_BITPACK_LANES, row = i / TROVE_BITPACK_LANES;
    return PACKED_HEADER + 4 * ((uint64_t)(row * w / 32) * TROVE_BITPACK_LANES + lane);
}

/*
 * Check a BITPACK payload of count values at width w (1..32) with base and unpack it into
 * vals[0..1024): padding unpacks to base, base is the least value, the values are not all
 * equal (CONSTANT) nor consecutive (IDENTITY), w is the least width and every value is below
 * dict_count. buf holds PACKED_HEADER + w * 128 bytes.
 */
static int unpack_canonical(const uint8_t *buf, uint32_t count, unsigned w, uint32_t base,
                            uint32_t dict_count, uint32_t vals[SEG_MAX],
                            struct trove_diag *diag)
{
    uint32_t words[SEG_MAX], lo, hi;
    const uint32_t *src = words;
    int identity;

    assert(w >= 1 && w <= 32 && count >= 1 && count <= SEG_MAX);
    if (((uintptr_t)(buf + PACKED_HEADER) & 3) == 0)
        src = (const uint32_t *)(const void *)(buf + PACKED_HEADER); /* aligned: read in place */
    else
        memcpy(words, buf + PACKED_HEADER, (size_t)w * 128);
    trove_bitpack_unpack(src, vals, w, base);
    /* One vectorized pass each over the padding and the values (trove_bitpack_range); the
     * loops that find the slot to name run only when a check failed. */
    if (count < SEG_MAX) {
        trove_bitpack_range(vals + count, SEG_MAX - count, &lo, &hi, &identity);
        for (uint32_t i = count; (lo != base || hi != base) && i < SEG_MAX; i++) {
            if (vals[i] != base)
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, value_offset(i, w),
                                  "packed segment padding slot %" PRIu32 " unpacks to %" PRIu32
                                  ", not the base %" PRIu32 "; slots past the count must "
                                  "pack as 0",
                                  i, vals[i], base);
        }
    }
    trove_bitpack_range(vals, count, &lo, &hi, &identity);
    if (lo != base)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 12,
                          "packed segment base %" PRIu32 " is not its least index %" PRIu32
                          " (or a value wraps past 2^32 - 1); the encoding is not canonical",
                          base, lo);
    if (lo == hi)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 8,
                          "packed segment is BITPACK but all %" PRIu32 " indices are %" PRIu32
                          "; the canonical encoding is CONSTANT",
                          count, lo);
    if (identity)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 8,
                          "packed segment is BITPACK but its indices run %" PRIu32
                          ", %" PRIu32 ", ...; the canonical encoding is IDENTITY",
                          vals[0], vals[0] + 1);
    if (w != trove_bitpack_width(hi - lo))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 9,
                          "packed segment width is %u bits but its range %" PRIu32
                          " needs %u; the encoding is not canonical",
                          w, hi - lo, trove_bitpack_width(hi - lo));
    for (uint32_t i = 0; hi >= dict_count && i < count; i++) {
        if (vals[i] >= dict_count)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, value_offset(i, w),
                              "packed segment slot %" PRIu32 " names dictionary index %" PRIu32
                              ", past the dictionary's %" PRIu32 " entries",
                              i, vals[i], dict_count);
    }
    return TROVE_OK;
}

/* Decode a packed segment of count slots (header checked) into vals[0..count). */
static int decode_packed(const uint8_t *buf, size_t len, uint32_t count, uint32_t dict_count,
                         uint32_t vals[SEG_MAX], struct trove_diag *diag)
{
    uint8_t scheme, w;
    uint16_t reserved;
    uint32_t base;
    int rc;

    if (len < PACKED_HEADER)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "packed segment is %zu bytes, shorter than its header and "
                          "descriptor (%u bytes); it was cut short",
                          len, PACKED_HEADER);
    scheme = buf[8];
    w = buf[9];
    reserved = trove__get_le16(buf + 10);
    base = trove__get_le32(buf + 12);
    if (scheme < TROVE_SCHEME_IDENTITY || scheme > TROVE_SCHEME_BITPACK)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 8,
                          "packed segment has scheme %u; the schemes are 1 IDENTITY, "
                          "2 CONSTANT, 3 BITPACK",
                          (unsigned)scheme);
    if (reserved != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 10,
                          "packed segment descriptor reserved field is 0x%04x, must be 0",
                          (unsigned)reserved);
    if (scheme != TROVE_SCHEME_BITPACK && w != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 9,
                          "packed segment is %s with width %u; that scheme has width 0",
                          scheme == TROVE_SCHEME_IDENTITY ? "IDENTITY" : "CONSTANT",
                          (unsigned)w);
    if (scheme == TROVE_SCHEME_BITPACK && (w == 0 || w > 32))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 9,
                          "packed segment is BITPACK with width %u; BITPACK widths are 1 to "
                          "32 (one value is CONSTANT)",
                          (unsigned)w);
    rc = check_length(len, PACKED_HEADER + 128 * (uint64_t)w, "packed segment", diag);
    if (rc != TROVE_OK)
        return rc;
    switch (scheme) {
    case TROVE_SCHEME_CONSTANT:
        if (base >= dict_count)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 12,
                              "packed segment is CONSTANT at dictionary index %" PRIu32
                              ", past the dictionary's %" PRIu32 " entries",
                              base, dict_count);
        for (uint32_t i = 0; i < count; i++)
            vals[i] = base;
        break;
    case TROVE_SCHEME_IDENTITY:
        if (count == 1)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 8,
                              "packed segment of one slot is IDENTITY; the canonical "
                              "encoding of one value is CONSTANT");
        if ((uint64_t)base + count - 1 >= dict_count)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 12,
                              "packed segment is IDENTITY from %" PRIu32 " over %" PRIu32
                              " slots, past the dictionary's %" PRIu32 " entries",
                              base, count, dict_count);
        for (uint32_t i = 0; i < count; i++)
            vals[i] = base + i;
        break;
    default:
        rc = unpack_canonical(buf, count, w, base, dict_count, vals, diag);
        if (rc != TROVE_OK)
            return rc;
        break;
    }
    return TROVE_OK;
}

int trove_recipe_v3_segment_decode(const uint8_t *buf, size_t len, uint32_t n,
                                   uint32_t dict_count, uint32_t *idx,
                                   struct trove_digest *digests, uint8_t *encoding_out,
                                   struct trove_diag *diag)
{
    uint32_t vals[SEG_MAX], count = 0;
    uint8_t encoding = 0;
    int rc;

    rc = open_object("segment", "slots", TROVE_V3_KIND_COLUMN, SEG_MAX, buf, len,
                     idx != NULL || digests != NULL, n, &encoding, &count, diag);
    if (rc != TROVE_OK)
        return rc;
    if (encoding == TROVE_V3_ENC_RAW) {
        rc = check_length(len, TROVE_RECIPE_V3_OBJECT_HEADER + (uint64_t)DIGEST_WIDTH * count,
                          "raw segment", diag);
        if (rc != TROVE_OK)
            return rc;
        if (!digests)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 5,
                              "recipe segment is raw, and the caller takes packed segments "
                              "only");
        memcpy(digests, buf + TROVE_RECIPE_V3_OBJECT_HEADER, (size_t)DIGEST_WIDTH * count);
    } else if (encoding == TROVE_V3_ENC_PACKED) {
        if (!idx)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 5,
                              "recipe segment is packed, and the caller takes raw segments "
                              "only");
        /* A full segment unpacks straight into the caller's array (which then holds
         * garbage if a check fails); a short one through a local block of 1024 that is
         * copied out once every check passed. */
        if (count == SEG_MAX) {
            rc = decode_packed(buf, len, count, dict_count, idx, diag);
        } else {
            rc = decode_packed(buf, len, count, dict_count, vals, diag);
            if (rc == TROVE_OK)
                memcpy(idx, vals, (size_t)count * sizeof *vals);
        }
        if (rc != TROVE_OK)
            return rc;
    } else if (encoding == TROVE_V3_ENC_PATCH) {
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 5,
                          "recipe segment is a patch (encoding 3) where a full segment (raw or "
                          "packed) belongs");
    } else {
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 5,
                          "recipe segment has encoding %u; segments are raw (1), packed (2) "
                          "or patches (3)",
                          (unsigned)encoding);
    }
    if (encoding_out)
        *encoding_out = encoding;
    return TROVE_OK;
}

/* ---- patch segments ---------------------------------------------------------------------- */

#define PATCH_BASE 8u   /* base digest */
#define PATCH_K 24u     /* entry count u16, reserved u16 */
#define PATCH_OFFS 28u  /* k offsets u16, then k indices u32 */
_Static_assert(TROVE_RECIPE_V3_PATCH_LEN(0) == PATCH_OFFS, "patch header");

/* Offsets strictly increasing and below n. */
static int patch_offsets_ok(const uint16_t *off, uint32_t k, uint32_t n, uint32_t *bad)
{
    for (uint32_t j = 0; j < k; j++)
        if (off[j] >= n || (j > 0 && off[j] <= off[j - 1])) {
            *bad = j;
            return 0;
        }
    return 1;
}

int trove_recipe_v3_patch_encode(const struct trove_v3_patch *p, uint32_t n,
                                 struct trove_bytes *out)
{
    uint32_t bad;
    uint8_t *q;
    int rc;

    if (!p || !out || n == 0 || n > SEG_MAX || p->k == 0 || p->k > TROVE_RECIPE_V3_PATCH_MAX ||
        trove_digest_is_zero(&p->base) || !patch_offsets_ok(p->off, p->k, n, &bad))
        return TROVE_ERR_INVALID;
    if ((rc = trove_bytes_reserve(out, TROVE_RECIPE_V3_PATCH_LEN(p->k))) != TROVE_OK)
        return rc;
    q = out->ptr + out->len;
    put_object_header(q, TROVE_V3_KIND_COLUMN, TROVE_V3_ENC_PATCH, n);
    memcpy(q + PATCH_BASE, p->base.b, DIGEST_WIDTH);
    trove__put_le16(q + PATCH_K, (uint16_t)p->k);
    trove__put_le16(q + PATCH_K + 2, 0);
    for (uint32_t j = 0; j < p->k; j++) {
        trove__put_le16(q + PATCH_OFFS + 2 * j, p->off[j]);
        trove__put_le32(q + PATCH_OFFS + 2 * p->k + 4 * j, p->idx[j]);
    }
    out->len += TROVE_RECIPE_V3_PATCH_LEN(p->k);
    return TROVE_OK;
}

int trove_recipe_v3_patch_decode(const uint8_t *buf, size_t len, uint32_t n,
                                 uint32_t dict_count, struct trove_v3_patch *out,
                                 struct trove_diag *diag)
{
    struct trove_v3_patch p;
    uint32_t count = 0, bad = 0;
    uint16_t reserved;
    uint8_t encoding = 0;
    int rc;

    rc = open_object("patch", "slots", TROVE_V3_KIND_COLUMN, SEG_MAX, buf, len, out != NULL, n,
                     &encoding, &count, diag);
    if (rc != TROVE_OK)
        return rc;
    if (encoding != TROVE_V3_ENC_PATCH)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 5,
                          "recipe segment has encoding %u where a patch (3) belongs",
                          (unsigned)encoding);
    if (len < PATCH_OFFS)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "recipe patch is %zu bytes, shorter than its %u-byte header; it "
                          "was cut short",
                          len, PATCH_OFFS);
    memcpy(p.base.b, buf + PATCH_BASE, DIGEST_WIDTH);
    p.k = trove__get_le16(buf + PATCH_K);
    reserved = trove__get_le16(buf + PATCH_K + 2);
    if (trove_digest_is_zero(&p.base))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, PATCH_BASE,
                          "recipe patch names the zero digest as its base");
    if (p.k == 0 || p.k > TROVE_RECIPE_V3_PATCH_MAX)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, PATCH_K,
                          "recipe patch holds %" PRIu32 " entries; a patch holds 1 to %u",
                          p.k, TROVE_RECIPE_V3_PATCH_MAX);
    if (reserved != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, PATCH_K + 2,
                          "recipe patch reserved field is 0x%04x, must be 0",
                          (unsigned)reserved);
    if ((rc = check_length(len, TROVE_RECIPE_V3_PATCH_LEN(p.k), "patch", diag)) != TROVE_OK)
        return rc;
    for (uint32_t j = 0; j < p.k; j++) {
        p.off[j] = trove__get_le16(buf + PATCH_OFFS + 2 * j);
        p.idx[j] = trove__get_le32(buf + PATCH_OFFS + 2 * p.k + 4 * j);
    }
    if (!patch_offsets_ok(p.off, p.k, n, &bad))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, PATCH_OFFS + 2 * bad,
                          "recipe patch entry %" PRIu32 " is for slot %u, %s", bad,
                          (unsigned)p.off[bad],
                          p.off[bad] >= n ? "past the segment's slots"
                                          : "not after the previous entry's slot");
    for (uint32_t j = 0; j < p.k; j++)
        if (p.idx[j] >= dict_count)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, PATCH_OFFS + 2 * p.k + 4 * j,
                              "recipe patch sets slot %u to dictionary index %" PRIu32
                              ", past the dictionary's %" PRIu32 " entries",
                              (unsigned)p.off[j], p.idx[j], dict_count);
    *out = p;
    return TROVE_OK;
}

int trove_recipe_v3_patch_apply(const struct trove_v3_patch *p, uint32_t *idx,
                                uint32_t *base_out, struct trove_diag *diag)
{
    if (!p || !idx || p->k > TROVE_RECIPE_V3_PATCH_MAX)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "recipe patch apply: bad arguments");
    for (uint32_t j = 0; j < p->k; j++)
        if (idx[p->off[j]] == p->idx[j])
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, PATCH_OFFS + 2 * p->k + 4 * j,
                              "recipe patch sets slot %u to dictionary index %" PRIu32
                              ", which its base already holds; the patch is not canonical",
                              (unsigned)p->off[j], p->idx[j]);
    for (uint32_t j = 0; j < p->k; j++) {
        if (base_out)
            base_out[j] = idx[p->off[j]];
        idx[p->off[j]] = p->idx[j];
    }
    return TROVE_OK;
}
