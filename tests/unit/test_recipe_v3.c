/*
 * test_recipe_v3.c: recipe format v3 (src/store/recipe_v3.c) — round trips of the manifest,
 * pages, dictionary chunks and raw and packed segments; the canonical scheme choice
 * (CONSTANT, IDENTITY, BITPACK at every width, short segments and their padding) and the
 * rule that equal contents are equal bytes; every check of every decoder with its error
 * code and offset, including each non-canonical encoding; every truncation and byte flip of
 * the golden objects; the version gate; the golden vectors tests/vectors/recipe_v3_*.bin;
 * the sizes docs/formats/recipe-v3.md gives for the seed's 26,214,400-slot cases; and the
 * encoders' argument checks; the segment tests run on both bit-packing builds (AVX2,
 * generic). With TROVE_RECIPE_V3_CORPUS=<dir> set, the valid and broken
 * objects built here are also written to <dir>, with the fuzz target's selector prefix, as
 * its seed corpus (fuzz/corpus/fuzz_recipe_v3/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/bitpack_internal.h"
#include "common/endian.h"
#include "testutil.h"
#include "trove/bitpack.h"
#include "trove/recipe.h"

#define MiB (1024ull * 1024)
#define SEG 1024u

/* The fuzz target's input: a selector byte, then for chunks and segments n (u16) and
 * dict_count (u32), then the object (fuzz/fuzz_recipe_v3.c). */
enum { SEL_MANIFEST = 0, SEL_PAGE = 1, SEL_CHUNK = 2, SEL_SEGMENT = 3, SEL_PATCH = 4 };

static void corpus_write(const char *name, int sel, uint32_t n, uint32_t dict_count,
                         const uint8_t *buf, size_t len)
{
    uint8_t prefix[7];
    size_t plen = 1;

    prefix[0] = (uint8_t)sel;
    if (sel == SEL_CHUNK || sel == SEL_SEGMENT || sel == SEL_PATCH) {
        trove__put_le16(prefix + 1, (uint16_t)n);
        trove__put_le32(prefix + 3, dict_count);
        plen = 7;
    }
    test_corpus_write("TROVE_RECIPE_V3_CORPUS", name, prefix, plen, buf, len);
}

/* Every decoder's outputs, so one helper can compare them against a sentinel. */
struct outs {
    struct trove_recipe_v3 m;
    struct trove_v3_section sec[TROVE_RECIPE_V3_PAGE_SECTIONS];
    uint32_t nsec;
    struct trove_digest d[SEG];
    uint32_t idx[SEG];
    uint8_t enc;
    struct trove_v3_patch patch;
};

static struct outs got, sentinel;

static int decode_any(int sel, const uint8_t *buf, size_t len, uint32_t n, uint32_t dict_count,
                      struct outs *o, struct trove_diag *diag)
{
    switch (sel) {
    case SEL_MANIFEST:
        return trove_recipe_v3_decode(buf, len, &o->m, diag);
    case SEL_PAGE:
        return trove_recipe_v3_page_decode(buf, len, o->sec, &o->nsec, diag);
    case SEL_CHUNK:
        return trove_recipe_v3_chunk_decode(buf, len, n, o->d, diag);
    case SEL_PATCH:
        return trove_recipe_v3_patch_decode(buf, len, n, dict_count, &o->patch, diag);
    default:
        return trove_recipe_v3_segment_decode(buf, len, n, dict_count, o->idx, o->d, &o->enc,
                                              diag);
    }
}

/* Decode an exact-size heap copy of buf[0..len) (so ASan sees any overread) and require
 * `want` at want_off, a message containing needle, and untouched outputs; a NULL diag
 * gives the same answer. */
static void expect_bad(int sel, const uint8_t *buf, size_t len, uint32_t n, uint32_t dict_count,
                       int want, uint64_t want_off, const char *needle, const char *what)
{
    uint8_t *copy = malloc(len ? len : 1);
    struct trove_diag diag = {0};
    int rc;

    CHECK(copy != NULL);
    if (!copy)
        return;
    if (len)
        memcpy(copy, buf, len);
    memset(&sentinel, 0xA5, sizeof sentinel);
    got = sentinel;
    rc = decode_any(sel, copy, len, n, dict_count, &got, &diag);
    if (rc != want || diag.offset != want_off)
        fprintf(stderr, "%s: got %d at %llu (%s), want %d at %llu\n", what, rc,
                (unsigned long long)diag.offset, diag.msg, want, (unsigned long long)want_off);
    CHECK_EQ_INT(rc, want);
    CHECK_EQ_INT(diag.code, want);
    CHECK_EQ_INT(diag.offset, want_off);
    CHECK(diag.msg[0] != 0);
    CHECK(strlen(diag.msg) < sizeof diag.msg - 1); /* not cut off */
    if (needle && !strstr(diag.msg, needle)) {
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, diag.msg, needle);
        CHECK(0);
    }
    /* Outputs untouched, except that a full packed segment may be unpacked into idx before
     * a check fails (recipe.h says so). */
    if (sel == SEL_SEGMENT && n == TROVE_RECIPE_V3_SEGMENT_SLOTS)
        memcpy(got.idx, sentinel.idx, sizeof got.idx);
    CHECK(memcmp(&got, &sentinel, sizeof got) == 0);
    CHECK_EQ_INT(decode_any(sel, copy, len, n, dict_count, &got, NULL), want);
    free(copy);
}

/* Decode an exact-size heap copy and require success; the outputs land in `got`. */
static int expect_ok(int sel, const uint8_t *buf, size_t len, uint32_t n, uint32_t dict_count,
                     const char *what)
{
    uint8_t *copy = malloc(len ? len : 1);
    struct trove_diag diag = {0};
    int rc;

    CHECK(copy != NULL);
    if (!copy)
        return -1;
    if (len)
        memcpy(copy, buf, len);
    memset(&got, 0xA5, sizeof got);
    rc = decode_any(sel, copy, len, n, dict_count, &got, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: %d (%s) at %llu\n", what, rc, diag.msg,
                (unsigned long long)diag.offset);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc == TROVE_OK && sel == SEL_MANIFEST)
        got.m.pages = (const uint8_t *)(got.m.pages - copy + buf); /* into the caller's buf */
    free(copy);
    return rc;
}

static void digest_of_str(const char *s, struct trove_digest *d)
{
    trove_digest_of(s, strlen(s), d);
}

/* A digest with every byte x (nonzero for x != 0). */
static struct trove_digest digest_fill(uint8_t x)
{
    struct trove_digest d;
    memset(d.b, x, sizeof d.b);
    return d;
}

/* ---- golden objects ---------------------------------------------------------------------- */

/*
 * The golden volume: 3000 slots of 2 MiB (6,291,456,000 bytes), generation 7, and a
 * dictionary of 5 entries — 0 the empty slot, 1 "hello", 2 "world", 3 2 MiB of 0xAB bytes,
 * 4 freed (zero). Slots 0-1023 are empty (segment 0: CONSTANT 0), slots 1024-2047 all hold
 * the 0xAB block (segment 1: CONSTANT 3), slots 2048-2999 hold "world" where i % 5 == 0 and
 * "hello" elsewhere (segment 2, 952 slots: BITPACK, width 1, base 1). One page lists the
 * three segments and then the chunk (sections: segments first). Plus two objects outside it: the IDENTITY segment of a
 * 4-slot volume holding 1, 2, 3, 4, and a raw segment of "hello", empty, the 0xAB block.
 */
struct golden {
    struct trove_digest dict[5];
    uint32_t seg2[952];
    struct trove_bytes chunk, seg[3], page, manifest, identity, raw, patch;
    struct trove_digest chunk_d, seg_d[3], page_d;
};

static void golden_build(struct golden *g)
{
    uint32_t zero[SEG] = {0}, three[SEG], ident[4] = {1, 2, 3, 4};
    struct trove_v3_section sec[4];
    struct trove_digest raw[3];
    uint8_t *block = malloc(2 * MiB);

    memset(g, 0, sizeof *g);
    digest_of_str("hello", &g->dict[1]);
    digest_of_str("world", &g->dict[2]);
    CHECK(block != NULL);
    if (block) {
        memset(block, 0xAB, 2 * MiB);
        trove_digest_of(block, 2 * MiB, &g->dict[3]);
    }
    free(block);
    for (uint32_t i = 0; i < SEG; i++)
        three[i] = 3;
    for (uint32_t i = 0; i < 952; i++)
        g->seg2[i] = (2048 + i) % 5 == 0 ? 2 : 1;

    CHECK_EQ_INT(trove_recipe_v3_chunk_encode(g->dict, 5, &g->chunk), TROVE_OK);
    CHECK_EQ_INT(trove_recipe_v3_segment_encode(zero, SEG, &g->seg[0]), TROVE_OK);
    CHECK_EQ_INT(trove_recipe_v3_segment_encode(three, SEG, &g->seg[1]), TROVE_OK);
    CHECK_EQ_INT(trove_recipe_v3_segment_encode(g->seg2, 952, &g->seg[2]), TROVE_OK);
    for (int s = 0; s < 3; s++) {
        trove_digest_of(g->seg[s].ptr, g->seg[s].len, &g->seg_d[s]);
        sec[s].d = g->seg_d[s];
        sec[s].kind = TROVE_V3_KIND_COLUMN;
        sec[s].encoding = TROVE_V3_ENC_PACKED;
    }
    trove_digest_of(g->chunk.ptr, g->chunk.len, &g->chunk_d);
    sec[3].d = g->chunk_d;
    sec[3].kind = TROVE_V3_KIND_DICT;
    sec[3].encoding = TROVE_V3_ENC_NONE;
    CHECK_EQ_INT(trove_recipe_v3_page_encode(sec, 4, &g->page), TROVE_OK);
    trove_digest_of(g->page.ptr, g->page.len, &g->page_d);
    CHECK_EQ_INT(trove_recipe_v3_encode(3000 * 2 * MiB, 2 * MiB, 0, 7, 5, &g->page_d, 1,
                                        &g->manifest),
                 TROVE_OK);
    CHECK_EQ_INT(trove_recipe_v3_segment_encode(ident, 4, &g->identity), TROVE_OK);
    raw[0] = g->dict[1];
    raw[1] = g->dict[0];
    raw[2] = g->dict[3];
    CHECK_EQ_INT(trove_recipe_v3_segment_encode_raw(raw, 3, &g->raw), TROVE_OK);
    {
        /* Segment 2 after a small commit: slot 0 (2048) holds the 0xAB block, slot 951
         * (2999) is emptied. */
        struct trove_v3_patch p = {.base = g->seg_d[2], .k = 2, .off = {0, 951}, .idx = {3, 0}};
        CHECK_EQ_INT(trove_recipe_v3_patch_encode(&p, 952, &g->patch), TROVE_OK);
    }
}

static void golden_free(struct golden *g)
{
    trove_bytes_free(&g->chunk);
    for (int s = 0; s < 3; s++)
        trove_bytes_free(&g->seg[s]);
    trove_bytes_free(&g->page);
    trove_bytes_free(&g->manifest);
    trove_bytes_free(&g->identity);
    trove_bytes_free(&g->raw);
    trove_bytes_free(&g->patch);
}

static void test_golden(void)
{
    static struct golden g;
    size_t len = 0;
    uint8_t *file;

    golden_build(&g);
    CHECK_EQ_INT(g.manifest.len, 72 + 16 + 8);
    CHECK_EQ_INT(g.page.len, 8 + 4 * 20);
    CHECK_EQ_INT(g.chunk.len, 8 + 5 * 16);
    CHECK_EQ_INT(g.seg[0].len, 16);
    CHECK_EQ_INT(g.seg[1].len, 16);
    CHECK_EQ_INT(g.seg[2].len, 16 + 128);
    CHECK_EQ_INT(g.identity.len, 16);
    CHECK_EQ_INT(g.raw.len, 8 + 3 * 16);
    test_check_vector("recipe_v3_manifest.bin", g.manifest.ptr, g.manifest.len);
    test_check_vector("recipe_v3_page.bin", g.page.ptr, g.page.len);
    test_check_vector("recipe_v3_chunk.bin", g.chunk.ptr, g.chunk.len);
    test_check_vector("recipe_v3_seg_constant.bin", g.seg[0].ptr, g.seg[0].len);
    test_check_vector("recipe_v3_seg_bitpack.bin", g.seg[2].ptr, g.seg[2].len);
    test_check_vector("recipe_v3_seg_identity.bin", g.identity.ptr, g.identity.len);
    test_check_vector("recipe_v3_seg_raw.bin", g.raw.ptr, g.raw.len);
    CHECK_EQ_INT(g.patch.len, 28 + 2 * 6);
    test_check_vector("recipe_v3_seg_patch.bin", g.patch.ptr, g.patch.len);
    corpus_write("patch-golden", SEL_PATCH, 952, 5, g.patch.ptr, g.patch.len);
    corpus_write("manifest-golden", SEL_MANIFEST, 0, 0, g.manifest.ptr, g.manifest.len);
    corpus_write("page-golden", SEL_PAGE, 0, 0, g.page.ptr, g.page.len);
    corpus_write("chunk-golden", SEL_CHUNK, 5, 0, g.chunk.ptr, g.chunk.len);
    corpus_write("seg-constant-0", SEL_SEGMENT, SEG, 5, g.seg[0].ptr, g.seg[0].len);
    corpus_write("seg-bitpack-952", SEL_SEGMENT, 952, 5, g.seg[2].ptr, g.seg[2].len);
    corpus_write("seg-identity-4", SEL_SEGMENT, 4, 5, g.identity.ptr, g.identity.len);
    corpus_write("seg-raw-3", SEL_SEGMENT, 3, 0, g.raw.ptr, g.raw.len);

    /* The manifest from disk: every field, and its page. */
    file = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/recipe_v3_manifest.bin", &len);
    CHECK(file != NULL);
    if (file && expect_ok(SEL_MANIFEST, file, len, 0, 0, "golden manifest") == TROVE_OK) {
        struct trove_digest d;
        uint32_t version = 0;
        CHECK_EQ_INT(got.m.slot_count, 3000);
        CHECK_EQ_INT(got.m.block_size, 2 * MiB);
        CHECK_EQ_INT(got.m.flags, 0);
        CHECK(got.m.volume_size == 3000 * 2 * MiB);
        CHECK(got.m.generation == 7);
        CHECK_EQ_INT(got.m.dict_count, 5);
        CHECK_EQ_INT(got.m.page_count, 1);
        CHECK_EQ_INT(got.m.nchunks, 1);
        CHECK_EQ_INT(got.m.nsegments, 3);
        CHECK(got.m.pages == file + 72);
        trove_recipe_v3_page(&got.m, 0, &d);
        CHECK(trove_digest_equal(&d, &g.page_d));
        CHECK_EQ_INT(trove_recipe_version(file, len, &version, NULL), TROVE_OK);
        CHECK_EQ_INT(version, 3);
        /* Header fields where the spec places them. */
        CHECK(memcmp(file, "TROVRCP1", 8) == 0);
        CHECK(file[8] == 3 && file[12] == 16 && file[16] == 0xb8 && file[17] == 0x0b);
        CHECK(file[26] == 0x20 && file[40] == 7 && file[48] == 5);
        CHECK(file[53] == 4 && file[57] == 4 && file[60] == 8 && file[64] == 1);
    }
    free(file);

    /* The page from disk. */
    file = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/recipe_v3_page.bin", &len);
    CHECK(file != NULL);
    if (file && expect_ok(SEL_PAGE, file, len, 0, 0, "golden page") == TROVE_OK) {
        CHECK_EQ_INT(got.nsec, 4);
        for (int s = 0; s < 3; s++) {
            CHECK(trove_digest_equal(&got.sec[s].d, &g.seg_d[s]));
            CHECK_EQ_INT(got.sec[s].kind, 'S');
            CHECK_EQ_INT(got.sec[s].encoding, TROVE_V3_ENC_PACKED);
        }
        CHECK(trove_digest_equal(&got.sec[3].d, &g.chunk_d));
        CHECK_EQ_INT(got.sec[3].kind, 'D');
        CHECK_EQ_INT(got.sec[3].encoding, 0);
        CHECK(memcmp(file, "TRV3P\0\4\0", 8) == 0);
    }
    free(file);

    /* The chunk from disk. */
    file = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/recipe_v3_chunk.bin", &len);
    CHECK(file != NULL);
    if (file && expect_ok(SEL_CHUNK, file, len, 5, 0, "golden chunk") == TROVE_OK) {
        CHECK(memcmp(got.d, g.dict, sizeof g.dict) == 0);
        CHECK(trove_digest_is_zero(&got.d[0]) && trove_digest_is_zero(&got.d[4]));
        CHECK(memcmp(file, "TRV3D\0\5\0", 8) == 0);
    }
    free(file);

    /* The segments from disk: scheme bytes and values. */
    file = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/recipe_v3_seg_bitpack.bin", &len);
    CHECK(file != NULL);
    if (file && expect_ok(SEL_SEGMENT, file, len, 952, 5, "golden bitpack") == TROVE_OK) {
        CHECK_EQ_INT(got.enc, TROVE_V3_ENC_PACKED);
        CHECK(memcmp(got.idx, g.seg2, sizeof g.seg2) == 0);
        CHECK(memcmp(file, "TRV3S\2\xb8\3\3\1\0\0\1\0\0\0", 16) == 0);
    }
    free(file);
    file = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/recipe_v3_seg_constant.bin", &len);
    CHECK(file != NULL);
    if (file && expect_ok(SEL_SEGMENT, file, len, SEG, 1, "golden constant") == TROVE_OK) {
        CHECK(got.idx[0] == 0 && got.idx[SEG - 1] == 0);
        CHECK(memcmp(file, "TRV3S\2\0\4\2\0\0\0\0\0\0\0", 16) == 0);
    }
    free(file);
    file = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/recipe_v3_seg_identity.bin", &len);
    CHECK(file != NULL);
    if (file && expect_ok(SEL_SEGMENT, file, len, 4, 5, "golden identity") == TROVE_OK) {
        CHECK(got.idx[0] == 1 && got.idx[1] == 2 && got.idx[2] == 3 && got.idx[3] == 4);
        CHECK(memcmp(file, "TRV3S\2\4\0\1\0\0\0\1\0\0\0", 16) == 0);
    }
    free(file);
    file = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/recipe_v3_seg_raw.bin", &len);
    CHECK(file != NULL);
    if (file && expect_ok(SEL_SEGMENT, file, len, 3, 0, "golden raw") == TROVE_OK) {
        CHECK_EQ_INT(got.enc, TROVE_V3_ENC_RAW);
        CHECK(trove_digest_equal(&got.d[0], &g.dict[1]));
        CHECK(trove_digest_is_zero(&got.d[1]));
        CHECK(trove_digest_equal(&got.d[2], &g.dict[3]));
        CHECK(got.idx[0] == 0xA5A5A5A5u); /* a raw segment leaves idx alone */
    }
    free(file);
    golden_free(&g);
}

/* ---- section and page counts ------------------------------------------------------------- */

static void test_counts(void)
{
    CHECK_EQ_INT(trove_recipe_v3_sections(0, 1), 1);
    CHECK_EQ_INT(trove_recipe_v3_pages(0, 1), 1);
    CHECK_EQ_INT(trove_recipe_v3_sections(1, 1), 2);
    CHECK_EQ_INT(trove_recipe_v3_sections(1024, 1024), 2);
    CHECK_EQ_INT(trove_recipe_v3_sections(1025, 1025), 4);
    CHECK_EQ_INT(trove_recipe_v3_sections(3000, 5), 4);
    CHECK_EQ_INT(trove_recipe_v3_pages(3000, 5), 1);
    CHECK_EQ_INT(trove_recipe_v3_pages(7 * 1024, 1), 1);     /* 8 sections: one full page */
    CHECK_EQ_INT(trove_recipe_v3_pages(7 * 1024 + 1, 1), 2); /* 9 */
    CHECK_EQ_INT(trove_recipe_v3_sections(0, UINT32_MAX), 4194304);
    CHECK_EQ_INT(trove_recipe_v3_sections(TROVE_RECIPE_MAX_SLOTS, UINT32_MAX), 8388608);
    CHECK_EQ_INT(trove_recipe_v3_pages(TROVE_RECIPE_MAX_SLOTS, UINT32_MAX), 1048576);
    CHECK_EQ_INT(trove_recipe_v3_pages(UINT64_MAX, UINT32_MAX), /* no overflow */
                 (UINT64_MAX / 1024 + 1 + 4194304 + 7) / 8);
    /* The seed's 50 TiB at 2 MiB blocks, no dedup: 25,600 segments and 25,601 chunks. */
    CHECK_EQ_INT(trove_recipe_v3_sections(26214400, 26214401), 51201);
    CHECK_EQ_INT(trove_recipe_v3_pages(26214400, 26214401), 6401);
}

/* ---- manifest round trips ---------------------------------------------------------------- */

static void manifest_roundtrip(uint64_t volume_size, uint32_t block_size, uint32_t flags,
                               uint64_t generation, uint32_t dict_count, const char *what)
{
    uint64_t slots = volume_size / block_size + (volume_size % block_size != 0);
    uint32_t np = (uint32_t)trove_recipe_v3_pages(slots, dict_count);
    struct trove_digest *pages = calloc(np, sizeof *pages), d;
    struct trove_bytes b = {0};
    struct trove_recipe_v3 m;
    struct trove_diag diag = {0};
    uint64_t seed = np;
    uint32_t version = 0;
    int rc;

    CHECK(pages != NULL);
    if (!pages)
        return;
    for (uint32_t i = 0; i < np; i++) {
        uint64_t a = test_rand(&seed), c = test_rand(&seed) | 1;
        memcpy(pages[i].b, &a, 8);
        memcpy(pages[i].b + 8, &c, 8);
    }
    CHECK_EQ_INT(trove_bytes_append(&b, "abc", 3), TROVE_OK);
    rc = trove_recipe_v3_encode(volume_size, block_size, flags, generation, dict_count, pages,
                                np, &b);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        goto out;
    CHECK_EQ_INT(b.len, 3 + 80 + 16 * (uint64_t)np);
    CHECK(memcmp(b.ptr, "abc", 3) == 0);
    rc = trove_recipe_v3_decode(b.ptr + 3, b.len - 3, &m, &diag); /* unaligned */
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: %s\n", what, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        goto out;
    CHECK_EQ_INT(m.slot_count, slots);
    CHECK_EQ_INT(m.block_size, block_size);
    CHECK_EQ_INT(m.flags, flags);
    CHECK(m.volume_size == volume_size);
    CHECK(m.generation == generation);
    CHECK_EQ_INT(m.dict_count, dict_count);
    CHECK_EQ_INT(m.page_count, np);
    CHECK_EQ_INT(m.nchunks, (dict_count + 1023ull) / 1024);
    CHECK_EQ_INT(m.nsegments, (slots + 1023) / 1024);
    CHECK(m.pages == b.ptr + 3 + 72);
    for (uint32_t i = 0; i < np; i += 1 + np / 5) {
        trove_recipe_v3_page(&m, i, &d);
        CHECK(trove_digest_equal(&d, &pages[i]));
    }
    trove_recipe_v3_page(&m, np - 1, &d);
    CHECK(trove_digest_equal(&d, &pages[np - 1]));
    CHECK_EQ_INT(trove_recipe_version(b.ptr + 3, b.len - 3, &version, NULL), TROVE_OK);
    CHECK_EQ_INT(version, 3);
out:
    free(pages);
    trove_bytes_free(&b);
}

static void test_manifest_roundtrips(void)
{
    manifest_roundtrip(0, 4096, 0, 0, 1, "empty volume");
    manifest_roundtrip(0, 1u << 30, TROVE_RECIPE_FLAG_READONLY, UINT64_MAX, 1, "empty, 1 GiB");
    manifest_roundtrip(1, 4096, 0, 1, 2, "one byte");
    manifest_roundtrip(3000 * 2 * MiB + 1, 2 * MiB, 0, 9, 3000, "3001 slots, 3000 digests");
    manifest_roundtrip(7 * 1024 * 4096ull, 4096, 0, 3, 1024, "exactly one full page");
    manifest_roundtrip(7 * 1024 * 4096ull + 1, 4096, 0, 3, 1024, "one section over a page");
    manifest_roundtrip(1000000 * 4096ull, 4096, 1, 5, UINT32_MAX, "the largest dictionary");
    /* The seed's 50 TiB volume at 2 MiB blocks with no dedup: a 102,496-byte manifest. */
    manifest_roundtrip(26214400 * 2 * MiB, 2 * MiB, 0, 2, 26214401, "50 TiB");
}

/* ---- object round trips ------------------------------------------------------------------ */

static void test_page_roundtrips(void)
{
    struct trove_v3_section sec[8];
    for (uint32_t n = 1; n <= 8; n++) {
        for (uint32_t nseg = 0; nseg <= n; nseg++) { /* nseg segments, then chunks */
            struct trove_bytes b = {0};
            for (uint32_t i = 0; i < n; i++) {
                sec[i].d = digest_fill((uint8_t)(i + 1));
                sec[i].d.b[0] = (uint8_t)(n * 16 + nseg);
                sec[i].kind = i < nseg ? TROVE_V3_KIND_COLUMN : TROVE_V3_KIND_DICT;
                sec[i].encoding = i >= nseg ? TROVE_V3_ENC_NONE
                                  : (i % 2)  ? TROVE_V3_ENC_RAW
                                             : TROVE_V3_ENC_PACKED;
            }
            CHECK_EQ_INT(trove_bytes_append(&b, "x", 1), TROVE_OK);
            CHECK_EQ_INT(trove_recipe_v3_page_encode(sec, n, &b), TROVE_OK);
            CHECK_EQ_INT(b.len, 1 + 8 + 20 * n);
            if (expect_ok(SEL_PAGE, b.ptr + 1, b.len - 1, 0, 0, "page") == TROVE_OK) {
                CHECK_EQ_INT(got.nsec, n);
                CHECK(memcmp(got.sec, sec, n * sizeof *sec) == 0);
                CHECK(got.sec[n < 8 ? n : 7].kind == (n < 8 ? 0xA5 : sec[7].kind));
            }
            if (n == 8 && nseg == 6)
                corpus_write("page-8", SEL_PAGE, 0, 0, b.ptr + 1, b.len - 1);
            trove_bytes_free(&b);
        }
    }
}

static void test_digest_objects(void)
{
    static struct trove_digest d[SEG];
    uint64_t seed = 77;
    const uint32_t ns[] = {1, 2, 5, 1023, 1024};

    for (uint32_t i = 0; i < SEG; i++) {
        uint64_t a = test_rand(&seed), c = test_rand(&seed);
        memcpy(d[i].b, &a, 8);
        memcpy(d[i].b + 8, &c, 8);
        if (i % 7 == 0)
            memset(d[i].b, 0, 16); /* zero digests: free entries, empty slots */
    }
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        uint32_t n = ns[k];
        struct trove_bytes c = {0}, r = {0};
        CHECK_EQ_INT(trove_bytes_append(&c, "xy", 2), TROVE_OK);
        CHECK_EQ_INT(trove_recipe_v3_chunk_encode(d, n, &c), TROVE_OK);
        CHECK_EQ_INT(c.len, 2 + 8 + 16 * n);
        if (expect_ok(SEL_CHUNK, c.ptr + 2, c.len - 2, n, 0, "chunk") == TROVE_OK) {
            CHECK(memcmp(got.d, d, n * sizeof *d) == 0);
            if (n < SEG)
                CHECK(got.d[n].b[0] == 0xA5);
        }
        CHECK_EQ_INT(trove_recipe_v3_segment_encode_raw(d, n, &r), TROVE_OK);
        CHECK_EQ_INT(r.len, 8 + 16 * n);
        /* The same digests as a chunk and as a raw segment differ only in the header. */
        CHECK(memcmp(r.ptr + 8, c.ptr + 10, 16 * n) == 0);
        CHECK(r.ptr[4] == 'S' && r.ptr[5] == TROVE_V3_ENC_RAW);
        if (expect_ok(SEL_SEGMENT, r.ptr, r.len, n, 0, "raw segment") == TROVE_OK) {
            CHECK_EQ_INT(got.enc, TROVE_V3_ENC_RAW);
            CHECK(memcmp(got.d, d, n * sizeof *d) == 0);
        }
        /* A chunk is not a segment and the other way round. */
        expect_bad(SEL_SEGMENT, c.ptr + 2, c.len - 2, n, 1, TROVE_ERR_CORRUPT, 4, "kind",
                   "chunk as a segment");
        expect_bad(SEL_CHUNK, r.ptr, r.len, n, 0, TROVE_ERR_CORRUPT, 4, "kind",
                   "segment as a chunk");
        if (n == 2)
            corpus_write("chunk-2", SEL_CHUNK, n, 0, c.ptr + 2, c.len - 2);
        trove_bytes_free(&c);
        trove_bytes_free(&r);
    }
}

/* ---- packed segments: the canonical scheme ----------------------------------------------- */

/*
 * Encode idx[0..n) (after a 1-byte prefix, so the decoder sees an unaligned buffer), check
 * the scheme, width and base and the length, decode with dict_count = max + 1 and compare,
 * and check that dict_count = max is refused at the right offset. Returns the length.
 */
static size_t packed_roundtrip(const uint32_t *idx, uint32_t n, uint8_t scheme, unsigned w,
                               uint32_t base, const char *what)
{
    struct trove_bytes b = {0};
    uint32_t hi = 0;
    size_t len = 0;
    int rc;

    for (uint32_t i = 0; i < n; i++)
        hi = idx[i] > hi ? idx[i] : hi;
    CHECK_EQ_INT(trove_bytes_append(&b, "p", 1), TROVE_OK);
    rc = trove_recipe_v3_segment_encode(idx, n, &b);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        goto out;
    len = b.len - 1;
    if (b.ptr[9] != scheme || b.ptr[10] != w || trove__get_le32(b.ptr + 13) != base)
        fprintf(stderr, "%s: scheme %u width %u base %u, want %u %u %u\n", what, b.ptr[9],
                b.ptr[10], trove__get_le32(b.ptr + 13), scheme, w, base);
    CHECK_EQ_INT(b.ptr[9], scheme);
    CHECK_EQ_INT(b.ptr[10], w);
    CHECK_EQ_INT(trove__get_le32(b.ptr + 13), base);
    CHECK_EQ_INT(trove__get_le16(b.ptr + 7), n);
    CHECK_EQ_INT(len, 16 + 128 * w);
    if (hi < UINT32_MAX &&
        expect_ok(SEL_SEGMENT, b.ptr + 1, len, n, hi + 1, what) == TROVE_OK) {
        CHECK_EQ_INT(got.enc, TROVE_V3_ENC_PACKED);
        CHECK(memcmp(got.idx, idx, n * sizeof *idx) == 0);
        if (n < SEG)
            CHECK(got.idx[n] == 0xA5A5A5A5u); /* nothing written past n */
    }
    if (hi > 0) {
        /* One entry fewer: the first slot holding hi is past the dictionary. */
        uint64_t off = 12;
        if (scheme == TROVE_SCHEME_BITPACK) {
            uint32_t i = 0;
            while (idx[i] != hi)
                i++;
            off = 16 + 4 * ((uint64_t)(i / 32 * w / 32) * 32 + i % 32);
        }
        expect_bad(SEL_SEGMENT, b.ptr + 1, len, n, hi, TROVE_ERR_CORRUPT, off, "dictionary",
                   what);
    }
out:
    trove_bytes_free(&b);
    return len;
}

static void test_schemes(void)
{
    static uint32_t v[SEG];
    uint64_t seed = 1024;

    /* CONSTANT: one slot, all equal (any value), every length. */
    v[0] = 123456;
    packed_roundtrip(v, 1, TROVE_SCHEME_CONSTANT, 0, 123456, "one slot");
    v[0] = 0;
    packed_roundtrip(v, 1, TROVE_SCHEME_CONSTANT, 0, 0, "one empty slot");
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = 7;
    packed_roundtrip(v, SEG, TROVE_SCHEME_CONSTANT, 0, 7, "1024 x 7");
    packed_roundtrip(v, 3, TROVE_SCHEME_CONSTANT, 0, 7, "3 x 7");
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = UINT32_MAX - 1;
    packed_roundtrip(v, SEG, TROVE_SCHEME_CONSTANT, 0, UINT32_MAX - 1, "1024 x 2^32-2");

    /* IDENTITY: two slots and up, any base, up to the top of the range. */
    v[0] = 5;
    v[1] = 6;
    packed_roundtrip(v, 2, TROVE_SCHEME_IDENTITY, 0, 5, "5, 6");
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = 1 + i;
    packed_roundtrip(v, SEG, TROVE_SCHEME_IDENTITY, 0, 1, "1 .. 1024");
    packed_roundtrip(v, 100, TROVE_SCHEME_IDENTITY, 0, 1, "1 .. 100");
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = UINT32_MAX - SEG + i; /* ends at 2^32 - 2: still below a dict_count */
    packed_roundtrip(v, SEG, TROVE_SCHEME_IDENTITY, 0, UINT32_MAX - SEG, "top identity");

    /* BITPACK: not IDENTITY when it runs backwards, has a gap, or wraps. */
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = SEG - i;
    packed_roundtrip(v, SEG, TROVE_SCHEME_BITPACK, 10, 1, "1024 .. 1");
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = 1 + i + (i >= 500);
    packed_roundtrip(v, SEG, TROVE_SCHEME_BITPACK, 11, 1, "identity with a gap");
    v[0] = UINT32_MAX - 1;
    v[1] = 0; /* would be IDENTITY only by wrapping: 2^32-2, 0 is not consecutive anyway */
    packed_roundtrip(v, 2, TROVE_SCHEME_BITPACK, 32, 0, "2^32-2, 0");
    v[0] = 0;
    v[1] = 1;
    v[2] = 0;
    packed_roundtrip(v, 3, TROVE_SCHEME_BITPACK, 1, 0, "0, 1, 0");

    /* Every width, full and short segments: base = min, width = bits(max - min). */
    for (unsigned w = 1; w <= 32; w++) {
        uint32_t base = w == 32 ? 0 : (uint32_t)(test_rand(&seed) % 1000), n;
        uint32_t span = w == 32 ? UINT32_MAX - 1 : (uint32_t)((1ull << w) - 1);
        for (uint32_t i = 0; i < SEG; i++)
            v[i] = base + (uint32_t)(test_rand(&seed) % ((uint64_t)span + 1));
        v[17] = base;
        v[900] = base + span; /* the range is exactly span */
        if (w == 1)
            v[0] = v[1] = base; /* not accidentally IDENTITY */
        packed_roundtrip(v, SEG, TROVE_SCHEME_BITPACK, w, base, "full, every width");
        n = 901 + w; /* short: slots [n, 1024) are padding */
        packed_roundtrip(v, n, TROVE_SCHEME_BITPACK, w, base, "short, every width");
    }
    /* Width 32, a short segment whose padding (base 0, packed 0) sits under nonzero slots. */
    for (uint32_t i = 0; i < 33; i++)
        v[i] = i % 2 ? UINT32_MAX - 1 : 0;
    packed_roundtrip(v, 33, TROVE_SCHEME_BITPACK, 32, 0, "width 32, 33 slots");
    {
        struct trove_bytes b = {0};
        CHECK_EQ_INT(trove_recipe_v3_segment_encode(v, 33, &b), TROVE_OK);
        corpus_write("seg-bitpack-w32", SEL_SEGMENT, 33, UINT32_MAX, b.ptr, b.len);
        trove_bytes_free(&b);
    }
}

/* Equal contents are equal bytes: whatever the caller's array holds past n, and whichever
 * volume the segment comes from, so identical segments are one object. */
static void test_equal_bytes(void)
{
    static uint32_t a[SEG], b[SEG];
    struct trove_bytes x = {0}, y = {0};
    struct trove_digest dx, dy;
    uint64_t seed = 5;

    /* All-empty segments of one length: identical, and one digest. */
    for (uint32_t n = 1; n <= SEG; n += 341) {
        x.len = y.len = 0;
        memset(a, 0, sizeof a);
        for (uint32_t i = 0; i < SEG; i++)
            b[i] = i < n ? 0 : 0xDEAD0000u + i; /* garbage past n */
        CHECK_EQ_INT(trove_recipe_v3_segment_encode(a, n, &x), TROVE_OK);
        CHECK_EQ_INT(trove_recipe_v3_segment_encode(b, n, &y), TROVE_OK);
        CHECK(x.len == 16 && x.len == y.len && memcmp(x.ptr, y.ptr, x.len) == 0);
        trove_digest_of(x.ptr, x.len, &dx);
        trove_digest_of(y.ptr, y.len, &dy);
        CHECK(trove_digest_equal(&dx, &dy));
    }
    /* Empty segments of different lengths differ (the count is in the header). */
    x.len = y.len = 0;
    CHECK_EQ_INT(trove_recipe_v3_segment_encode(a, SEG, &x), TROVE_OK);
    CHECK_EQ_INT(trove_recipe_v3_segment_encode(a, SEG - 1, &y), TROVE_OK);
    CHECK(x.len == y.len && memcmp(x.ptr, y.ptr, x.len) != 0);
    /* A short BITPACK segment: garbage past n changes nothing (padding is base). */
    for (uint32_t i = 0; i < SEG; i++)
        a[i] = b[i] = 10 + (uint32_t)(test_rand(&seed) % 300);
    for (uint32_t i = 700; i < SEG; i++)
        b[i] = (uint32_t)test_rand(&seed);
    x.len = y.len = 0;
    CHECK_EQ_INT(trove_recipe_v3_segment_encode(a, 700, &x), TROVE_OK);
    CHECK_EQ_INT(trove_recipe_v3_segment_encode(b, 700, &y), TROVE_OK);
    CHECK(x.len == 16 + 128 * 9 && x.len == y.len && memcmp(x.ptr, y.ptr, x.len) == 0);
    trove_bytes_free(&x);
    trove_bytes_free(&y);
}

/* ---- packed segments built by hand (non-canonical and broken) ---------------------------- */

static uint8_t hand[16 + 32 * 128 + 64];

/* A packed segment: header, descriptor and for w > 0 the 1024 values v packed at width w
 * with base (every v[i] - base below 2^w), no rule applied. Returns its length. */
static size_t hand_packed(uint32_t count, uint8_t scheme, unsigned w, uint32_t base,
                          const uint32_t *v)
{
    uint32_t words[SEG];
    memcpy(hand, "TRV3S\2", 6);
    trove__put_le16(hand + 6, (uint16_t)count);
    hand[8] = scheme;
    hand[9] = (uint8_t)w;
    trove__put_le16(hand + 10, 0);
    trove__put_le32(hand + 12, base);
    if (w) {
        trove_bitpack_pack(v, words, w, base);
        memcpy(hand + 16, words, 128 * (size_t)w);
    }
    return 16 + 128 * (size_t)w;
}

/* Where value i of a packed block of width w starts (FastLanes: lane i % 32, row i / 32). */
static uint64_t voff(uint32_t i, unsigned w)
{
    return 16 + 4 * ((uint64_t)(i / 32 * w / 32) * 32 + i % 32);
}

static void test_noncanonical(void)
{
    static uint32_t v[SEG];
    size_t len;

    /* BITPACK holding one value everywhere: must be CONSTANT. */
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = 5;
    len = hand_packed(SEG, TROVE_SCHEME_BITPACK, 1, 5, v);
    expect_bad(SEL_SEGMENT, hand, len, SEG, 10, TROVE_ERR_CORRUPT, 8, "CONSTANT",
               "bitpack that is constant");
    corpus_write("seg-bitpack-constant", SEL_SEGMENT, SEG, 10, hand, len);
    len = hand_packed(1, TROVE_SCHEME_BITPACK, 3, 5, v);
    expect_bad(SEL_SEGMENT, hand, len, 1, 10, TROVE_ERR_CORRUPT, 8, "CONSTANT",
               "bitpack of one slot");
    /* BITPACK holding a run: must be IDENTITY. */
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = i;
    len = hand_packed(SEG, TROVE_SCHEME_BITPACK, 10, 0, v);
    expect_bad(SEL_SEGMENT, hand, len, SEG, SEG, TROVE_ERR_CORRUPT, 8, "IDENTITY",
               "bitpack that is identity");
    corpus_write("seg-bitpack-identity", SEL_SEGMENT, SEG, SEG, hand, len);
    /* A short run with padding = base: still IDENTITY over its count. */
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = i < 40 ? 3 + i : 3;
    len = hand_packed(40, TROVE_SCHEME_BITPACK, 6, 3, v);
    expect_bad(SEL_SEGMENT, hand, len, 40, 100, TROVE_ERR_CORRUPT, 8, "IDENTITY",
               "short bitpack that is identity");
    /* IDENTITY of one slot: must be CONSTANT. */
    len = hand_packed(1, TROVE_SCHEME_IDENTITY, 0, 4, NULL);
    expect_bad(SEL_SEGMENT, hand, len, 1, 10, TROVE_ERR_CORRUPT, 8, "CONSTANT",
               "identity of one slot");
    corpus_write("seg-identity-1", SEL_SEGMENT, 1, 10, hand, len);

    /* A width larger than needed: values 0..2 at width 3 (2 suffice). */
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = (i * 7) % 3;
    len = hand_packed(SEG, TROVE_SCHEME_BITPACK, 3, 0, v);
    expect_bad(SEL_SEGMENT, hand, len, SEG, 3, TROVE_ERR_CORRUPT, 9, "needs 2",
               "width 3 for range 2");
    corpus_write("seg-wide", SEL_SEGMENT, SEG, 3, hand, len);
    len = hand_packed(SEG, TROVE_SCHEME_BITPACK, 32, 0, v);
    expect_bad(SEL_SEGMENT, hand, len, SEG, 3, TROVE_ERR_CORRUPT, 9, "needs 2",
               "width 32 for range 2");
    len = hand_packed(SEG, TROVE_SCHEME_BITPACK, 2, 0, v);
    CHECK_EQ_INT(expect_ok(SEL_SEGMENT, hand, len, SEG, 3, "width 2 for range 2"), TROVE_OK);

    /* A base that is not the min: values 3..6 with base 2. */
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = 3 + (i * 5) % 4;
    len = hand_packed(SEG, TROVE_SCHEME_BITPACK, 3, 2, v);
    expect_bad(SEL_SEGMENT, hand, len, SEG, 10, TROVE_ERR_CORRUPT, 12, "least",
               "base below the min");
    corpus_write("seg-base-low", SEL_SEGMENT, SEG, 10, hand, len);
    /* A value that wraps past 2^32 - 1: base 2^32 - 16, packed 16 + 20 = value 20. */
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = UINT32_MAX - 15 + (i % 4);
    v[77] = 20; /* 20 - (2^32 - 16) mod 2^32 = 36: fits 6 bits */
    len = hand_packed(SEG, TROVE_SCHEME_BITPACK, 6, UINT32_MAX - 15, v);
    expect_bad(SEL_SEGMENT, hand, len, SEG, UINT32_MAX, TROVE_ERR_CORRUPT, 12, "wraps",
               "a value wrapping past 2^32");

    /* Nonzero padding: 900 values, slot 1000 packs 1 instead of 0. */
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = i < 900 ? 10 + i % 5 : 10;
    v[1000] = 11;
    len = hand_packed(900, TROVE_SCHEME_BITPACK, 3, 10, v);
    expect_bad(SEL_SEGMENT, hand, len, 900, 20, TROVE_ERR_CORRUPT, voff(1000, 3), "padding",
               "padding slot 1000");
    corpus_write("seg-padding", SEL_SEGMENT, 900, 20, hand, len);
    v[1000] = 10;
    v[1023] = 17;
    len = hand_packed(900, TROVE_SCHEME_BITPACK, 3, 10, v);
    expect_bad(SEL_SEGMENT, hand, len, 900, 20, TROVE_ERR_CORRUPT, voff(1023, 3), "padding",
               "padding slot 1023");
    v[1023] = 10;
    len = hand_packed(900, TROVE_SCHEME_BITPACK, 3, 10, v);
    CHECK_EQ_INT(expect_ok(SEL_SEGMENT, hand, len, 900, 20, "clean padding"), TROVE_OK);
    /* A stray top bit in the last payload byte (lane 31's last word: row 31, slot 1023). */
    len = hand_packed(900, TROVE_SCHEME_BITPACK, 3, 10, v);
    hand[len - 1] |= 0x80;
    expect_bad(SEL_SEGMENT, hand, len, 900, 20, TROVE_ERR_CORRUPT, voff(1023, 3), "padding",
               "a stray high bit");

    /* Index past the dictionary, each scheme (the boundary itself is accepted). */
    len = hand_packed(SEG, TROVE_SCHEME_CONSTANT, 0, 9, NULL);
    expect_bad(SEL_SEGMENT, hand, len, SEG, 9, TROVE_ERR_CORRUPT, 12, "dictionary",
               "constant past the dictionary");
    corpus_write("seg-constant-past", SEL_SEGMENT, SEG, 9, hand, len);
    CHECK_EQ_INT(expect_ok(SEL_SEGMENT, hand, len, SEG, 10, "constant at the end"), TROVE_OK);
    expect_bad(SEL_SEGMENT, hand, len, SEG, 0, TROVE_ERR_CORRUPT, 12, "dictionary",
               "an empty dictionary");
    len = hand_packed(SEG, TROVE_SCHEME_IDENTITY, 0, 1, NULL);
    expect_bad(SEL_SEGMENT, hand, len, SEG, SEG, TROVE_ERR_CORRUPT, 12, "dictionary",
               "identity past the dictionary");
    CHECK_EQ_INT(expect_ok(SEL_SEGMENT, hand, len, SEG, SEG + 1, "identity at the end"),
                 TROVE_OK);
    len = hand_packed(SEG, TROVE_SCHEME_IDENTITY, 0, UINT32_MAX - 1000, NULL);
    expect_bad(SEL_SEGMENT, hand, len, SEG, UINT32_MAX, TROVE_ERR_CORRUPT, 12, "dictionary",
               "identity wrapping past 2^32");
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = 1 + (i * 13) % 50;
    len = hand_packed(SEG, TROVE_SCHEME_BITPACK, 6, 1, v);
    CHECK_EQ_INT(expect_ok(SEL_SEGMENT, hand, len, SEG, 51, "bitpack at the end"), TROVE_OK);
    {
        uint32_t first = 0;
        while (v[first] < 50)
            first++;
        CHECK_EQ_INT(first, 23); /* 13 * 23 = 299 = 49 mod 50 */
        expect_bad(SEL_SEGMENT, hand, len, SEG, 50, TROVE_ERR_CORRUPT, voff(first, 6),
                   "dictionary", "bitpack past the dictionary");
    }
    corpus_write("seg-bitpack-past", SEL_SEGMENT, SEG, 50, hand, len);
}

/* ---- decode errors ----------------------------------------------------------------------- */

static uint8_t work[20000];

static uint8_t *mutant(const struct trove_bytes *g)
{
    memcpy(work, g->ptr, g->len);
    return work;
}

/* Rewrite the manifest checksum in work[0..len) so a field check, not the checksum, decides. */
static void reseal(size_t len)
{
    trove__put_le64(work + len - 8, trove_checksum64(work, len - 8));
}

static void test_manifest_errors(const struct golden *g)
{
    const struct trove_bytes *m = &g->manifest;
    const size_t n = 96;

    CHECK_EQ_INT(m->len, n);
    if (m->len != n)
        return;
    for (size_t len = 0; len < n; len++)
        expect_bad(SEL_MANIFEST, m->ptr, len, 0, 0, TROVE_ERR_TRUNCATED, len, NULL, "prefix");
    corpus_write("manifest-short", SEL_MANIFEST, 0, 0, m->ptr, 80);

    mutant(m)[3] = 'X';
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_MAGIC, 0, "TROVRCP1", "magic");
    corpus_write("manifest-magic", SEL_MANIFEST, 0, 0, work, n);
    trove__put_le32(mutant(m) + 8, 4);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_VERSION, 8, "newer", "version 4");
    corpus_write("manifest-version-4", SEL_MANIFEST, 0, 0, work, n);
    trove__put_le32(mutant(m) + 8, UINT32_MAX);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_VERSION, 8, "newer", "version 2^32-1");
    trove__put_le32(mutant(m) + 8, 2);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_VERSION, 8, "unknown", "version 2");
    trove__put_le32(mutant(m) + 8, 0);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_VERSION, 8, "unknown", "version 0");
    trove__put_le32(mutant(m) + 8, 1);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_VERSION, 8, "trove_recipe_version",
               "version 1");

    trove__put_le32(mutant(m) + 12, 32);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 12, "width", "digest width 32");
    {
        static const uint32_t bad_bs[] = {3000, 1u << 31, 0, 2048, 3 * 4096, UINT32_MAX};
        for (size_t i = 0; i < sizeof bad_bs / sizeof bad_bs[0]; i++) {
            trove__put_le32(mutant(m) + 24, bad_bs[i]);
            expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 24, "block size",
                       "block size");
        }
    }
    trove__put_le32(mutant(m) + 28, 4);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 28, "flags", "flags bit 2");
    trove__put_le32(mutant(m) + 28, 0x80000000u);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 28, "flags", "flags bit 31");
    mutant(m)[71] = 1;
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 68, "reserved", "reserved");
    corpus_write("manifest-reserved", SEL_MANIFEST, 0, 0, work, n);
    trove__put_le32(mutant(m) + 52, 2048);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 52, "segment_slots",
               "segment slots");
    trove__put_le32(mutant(m) + 56, 512);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 56, "chunk_entries",
               "chunk entries");
    trove__put_le32(mutant(m) + 60, 0);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 60, "page_sections",
               "page sections");

    /* Slot counts: over the limit (even when they agree with the size), against the size. */
    mutant(m);
    trove__put_le64(work + 16, TROVE_RECIPE_MAX_SLOTS + 1);
    trove__put_le32(work + 24, 4096);
    trove__put_le64(work + 32, (TROVE_RECIPE_MAX_SLOTS + 1) * 4096);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_LIMIT, 16, "limit", "2^32 + 1 slots");
    trove__put_le64(work + 16, UINT64_MAX);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_LIMIT, 16, "limit", "2^64-1 slots");
    trove__put_le64(mutant(m) + 16, 3001);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 16, "disagrees", "slot + 1");
    corpus_write("manifest-slots", SEL_MANIFEST, 0, 0, work, n);
    trove__put_le64(mutant(m) + 32, 3000 * 2 * MiB + 1);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 16, "disagrees", "size + 1");
    trove__put_le64(mutant(m) + 32, UINT64_MAX);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 16, "disagrees", "size 2^64-1");

    trove__put_le32(mutant(m) + 48, 0);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 48, "dictionary", "dict 0");
    corpus_write("manifest-dict-0", SEL_MANIFEST, 0, 0, work, n);
    /* Page count: 0, 2, and a dictionary that needs more sections than the pages list. */
    trove__put_le32(mutant(m) + 64, 0);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 64, "pages", "0 pages");
    trove__put_le32(mutant(m) + 64, 2);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 64, "pages", "2 pages");
    corpus_write("manifest-pages-2", SEL_MANIFEST, 0, 0, work, n);
    trove__put_le32(mutant(m) + 48, 5 * 1024 + 1); /* 6 chunks + 3 segments: 2 pages */
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 64, "9 sections in 2 pages",
               "dictionary outgrows the page");
    trove__put_le32(work + 48, 5 * 1024); /* 5 + 3: still 1 page */
    reseal(n);
    CHECK_EQ_INT(expect_ok(SEL_MANIFEST, work, n, 0, 0, "5120 entries, 8 sections"), TROVE_OK);
    trove__put_le32(mutant(m) + 64, UINT32_MAX);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 64, "pages", "2^32-1 pages");

    /* Length and checksum. */
    mutant(m)[n] = 0;
    expect_bad(SEL_MANIFEST, work, n + 1, 0, 0, TROVE_ERR_CORRUPT, n, "stray", "trailing byte");
    corpus_write("manifest-trailing", SEL_MANIFEST, 0, 0, work, n + 1);
    memset(work + n, 0, 16);
    expect_bad(SEL_MANIFEST, work, n + 16, 0, 0, TROVE_ERR_CORRUPT, n, "stray", "one page more");
    for (size_t at = 0; at < n; at++) {
        /* Every byte is covered: a flip is caught by a field check or the checksum. */
        int rc;
        mutant(m)[at] ^= 0x01;
        memset(&got, 0, sizeof got);
        rc = trove_recipe_v3_decode(work, n, &got.m, NULL);
        CHECK(rc != TROVE_OK);
        if (at >= 72 || at == 40 || at == 41) /* page digests, generation, checksum */
            expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CHECKSUM, n - 8, "checksum",
                       "flipped covered byte");
    }
    trove__put_le64(mutant(m) + 40, 8); /* generation 8 needs a new checksum */
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CHECKSUM, n - 8, "checksum", "generation");
    reseal(n);
    if (expect_ok(SEL_MANIFEST, work, n, 0, 0, "generation 8 resealed") == TROVE_OK)
        CHECK(got.m.generation == 8);
    /* A zero page digest (checksum right): a writer's bug, not bit rot. */
    memset(mutant(m) + 72, 0, 16);
    reseal(n);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 72, "zero digest", "zero page");
    corpus_write("manifest-zero-page", SEL_MANIFEST, 0, 0, work, n);
    /* Read-only flag: valid. */
    trove__put_le32(mutant(m) + 28, TROVE_RECIPE_FLAG_READONLY);
    reseal(n);
    if (expect_ok(SEL_MANIFEST, work, n, 0, 0, "read-only") == TROVE_OK)
        CHECK_EQ_INT(got.m.flags, TROVE_RECIPE_FLAG_READONLY);
    corpus_write("manifest-readonly", SEL_MANIFEST, 0, 0, work, n);
}

/* The checks every object shares, on a valid object obj of kind sel: every prefix is
 * TRUNCATED at its length; then magic (0), another object's kind (4, the message names it),
 * an unknown kind (4), encoding bad_enc (5), count 0 and max + 1 (6), a trailing byte. */
static void header_errors(int sel, const struct trove_bytes *obj, uint32_t n, uint32_t dict,
                          uint8_t other_kind, const char *other_name, uint8_t bad_enc,
                          uint32_t max, const char *what)
{
    char range[32];

    snprintf(range, sizeof range, "1 to %u", (unsigned)max);
    for (size_t len = 0; len < obj->len; len++)
        expect_bad(sel, obj->ptr, len, n, dict, TROVE_ERR_TRUNCATED, len, NULL, what);
    mutant(obj)[1] ^= 0x20;
    expect_bad(sel, work, obj->len, n, dict, TROVE_ERR_MAGIC, 0, "TRV3", what);
    mutant(obj)[4] = other_kind;
    expect_bad(sel, work, obj->len, n, dict, TROVE_ERR_CORRUPT, 4, other_name, what);
    mutant(obj)[4] = 'Q';
    expect_bad(sel, work, obj->len, n, dict, TROVE_ERR_CORRUPT, 4, "unknown", what);
    mutant(obj)[5] = bad_enc;
    expect_bad(sel, work, obj->len, n, dict, TROVE_ERR_CORRUPT, 5, "encoding", what);
    trove__put_le16(mutant(obj) + 6, 0);
    expect_bad(sel, work, obj->len, n, dict, TROVE_ERR_CORRUPT, 6, range, what);
    trove__put_le16(mutant(obj) + 6, (uint16_t)(max + 1));
    expect_bad(sel, work, obj->len, n, dict, TROVE_ERR_CORRUPT, 6, range, what);
    mutant(obj)[obj->len] = 0;
    expect_bad(sel, work, obj->len + 1, n, dict, TROVE_ERR_CORRUPT, obj->len, "stray", what);
}

static void test_page_errors(const struct golden *g)
{
    const struct trove_bytes *p = &g->page;
    const size_t n = 88;

    CHECK_EQ_INT(p->len, n);
    if (p->len != n)
        return;
    header_errors(SEL_PAGE, p, 0, 0, 'S', "column segment", 2, 8, "page header");
    corpus_write("page-short", SEL_PAGE, 0, 0, p->ptr, 50);
    trove__put_le16(mutant(p) + 6, 9);
    corpus_write("page-count-9", SEL_PAGE, 0, 0, work, n);
    trove__put_le16(mutant(p) + 6, 5);
    expect_bad(SEL_PAGE, work, n, 0, 0, TROVE_ERR_TRUNCATED, n, "cut short", "page count 5");
    trove__put_le16(mutant(p) + 6, 3);
    expect_bad(SEL_PAGE, work, n, 0, 0, TROVE_ERR_CORRUPT, 68, "stray", "page count 3");
    /* Records: zero digest, kind, kinds out of order, encoding, reserved. */
    memset(mutant(p) + 8 + 20 * 2, 0, 16);
    expect_bad(SEL_PAGE, work, n, 0, 0, TROVE_ERR_CORRUPT, 48, "zero digest", "record zero");
    corpus_write("page-zero-record", SEL_PAGE, 0, 0, work, n);
    mutant(p)[8 + 20 * 3 + 16] = 'P';
    expect_bad(SEL_PAGE, work, n, 0, 0, TROVE_ERR_CORRUPT, 84, "kind", "record kind P");
    mutant(p)[8 + 16] = 'D';
    work[8 + 17] = 0;
    expect_bad(SEL_PAGE, work, n, 0, 0, TROVE_ERR_CORRUPT, 44, "after a dictionary chunk",
               "segment after a chunk");
    corpus_write("page-s-after-d", SEL_PAGE, 0, 0, work, n);
    mutant(p)[8 + 20 * 3 + 17] = 1;
    expect_bad(SEL_PAGE, work, n, 0, 0, TROVE_ERR_CORRUPT, 85, "encoding 0", "chunk raw");
    mutant(p)[8 + 20 + 17] = 0;
    expect_bad(SEL_PAGE, work, n, 0, 0, TROVE_ERR_CORRUPT, 45, "raw (1), packed (2) or patches",
               "segment encoding 0");
    mutant(p)[8 + 20 + 17] = 4;
    expect_bad(SEL_PAGE, work, n, 0, 0, TROVE_ERR_CORRUPT, 45, "raw (1), packed (2) or patches",
               "segment encoding 4");
    mutant(p)[8 + 20 + 17] = TROVE_V3_ENC_PATCH; /* a patch record is valid */
    CHECK_EQ_INT(expect_ok(SEL_PAGE, work, n, 0, 0, "patch record"), TROVE_OK);
    mutant(p)[8 + 20 * 3 + 19] = 0x80;
    expect_bad(SEL_PAGE, work, n, 0, 0, TROVE_ERR_CORRUPT, 86, "reserved", "record reserved");
    /* Valid variants: a raw segment record; segments only; chunks only. */
    mutant(p)[8 + 20 + 17] = TROVE_V3_ENC_RAW;
    CHECK_EQ_INT(expect_ok(SEL_PAGE, work, n, 0, 0, "raw record"), TROVE_OK);
    mutant(p)[8 + 20 * 3 + 16] = 'S';
    work[8 + 20 * 3 + 17] = TROVE_V3_ENC_PACKED;
    CHECK_EQ_INT(expect_ok(SEL_PAGE, work, n, 0, 0, "segments only"), TROVE_OK);
    mutant(p);
    for (int i = 0; i < 4; i++) {
        work[8 + 20 * i + 16] = 'D';
        work[8 + 20 * i + 17] = TROVE_V3_ENC_NONE;
    }
    CHECK_EQ_INT(expect_ok(SEL_PAGE, work, n, 0, 0, "chunks only"), TROVE_OK);
}

static void test_chunk_errors(const struct golden *g)
{
    const struct trove_bytes *c = &g->chunk;
    const size_t n = 88;

    CHECK_EQ_INT(c->len, n);
    if (c->len != n)
        return;
    header_errors(SEL_CHUNK, c, 5, 0, 'P', "a page", 1, SEG, "chunk header");
    trove__put_le16(mutant(c) + 6, 1025);
    corpus_write("chunk-count-1025", SEL_CHUNK, 5, 0, work, n);
    /* A chunk in the wrong place: the caller expects 4 or 6 entries. */
    expect_bad(SEL_CHUNK, c->ptr, n, 4, 0, TROVE_ERR_CORRUPT, 6, "needs 4", "chunk wants 4");
    expect_bad(SEL_CHUNK, c->ptr, n, 6, 0, TROVE_ERR_CORRUPT, 6, "needs 6", "chunk wants 6");
    corpus_write("chunk-wants-6", SEL_CHUNK, 6, 0, c->ptr, n);
    memset(mutant(c) + n, 0, 16);
    expect_bad(SEL_CHUNK, work, n + 16, 5, 0, TROVE_ERR_CORRUPT, n, "stray", "chunk + 16");
}

static void test_segment_errors(const struct golden *g)
{
    const struct trove_bytes *s = &g->seg[2], *r = &g->raw, *k = &g->seg[0];
    const size_t n = 144, rn = 56;

    CHECK_EQ_INT(s->len, n);
    CHECK_EQ_INT(r->len, rn);
    if (s->len != n || r->len != rn)
        return;
    /* The header, on a packed, a constant and a raw segment (every prefix included). */
    header_errors(SEL_SEGMENT, s, 952, 5, 'D', "dictionary chunk", 0, SEG, "bitpack header");
    header_errors(SEL_SEGMENT, k, SEG, 5, 'P', "a page", 3, SEG, "constant header");
    header_errors(SEL_SEGMENT, r, 3, 5, 'D', "dictionary chunk", 0xFF, SEG, "raw header");
    corpus_write("seg-short", SEL_SEGMENT, 952, 5, s->ptr, 100);
    mutant(s)[5] = 3;
    expect_bad(SEL_SEGMENT, work, n, 952, 5, TROVE_ERR_CORRUPT, 5, "is a patch", "encoding 3");
    corpus_write("seg-encoding-3", SEL_SEGMENT, 952, 5, work, n);
    mutant(s)[5] = 4;
    expect_bad(SEL_SEGMENT, work, n, 952, 5, TROVE_ERR_CORRUPT, 5, "encoding 4", "encoding 4");
    mutant(s)[5] = TROVE_V3_ENC_RAW; /* now a raw segment of 952 slots: far too short */
    expect_bad(SEL_SEGMENT, work, n, 952, 5, TROVE_ERR_TRUNCATED, n, "cut short", "as raw");
    trove__put_le16(mutant(s) + 6, UINT16_MAX);
    expect_bad(SEL_SEGMENT, work, n, 952, 5, TROVE_ERR_CORRUPT, 6, "1 to 1024", "count 65535");
    expect_bad(SEL_SEGMENT, s->ptr, n, 951, 5, TROVE_ERR_CORRUPT, 6, "needs 951", "wants 951");
    expect_bad(SEL_SEGMENT, s->ptr, n, SEG, 5, TROVE_ERR_CORRUPT, 6, "needs 1024", "wants 1024");
    corpus_write("seg-wants-1024", SEL_SEGMENT, SEG, 5, s->ptr, n);

    /* The descriptor. */
    mutant(s)[8] = 0;
    expect_bad(SEL_SEGMENT, work, n, 952, 5, TROVE_ERR_CORRUPT, 8, "scheme", "scheme 0");
    mutant(s)[8] = 4;
    expect_bad(SEL_SEGMENT, work, n, 952, 5, TROVE_ERR_CORRUPT, 8, "scheme", "scheme 4");
    corpus_write("seg-scheme-4", SEL_SEGMENT, 952, 5, work, n);
    mutant(s)[11] = 1;
    expect_bad(SEL_SEGMENT, work, n, 952, 5, TROVE_ERR_CORRUPT, 10, "reserved", "desc reserved");
    mutant(k)[10] = 1;
    expect_bad(SEL_SEGMENT, work, 16, SEG, 5, TROVE_ERR_CORRUPT, 10, "reserved",
               "constant reserved");
    mutant(k)[9] = 1;
    expect_bad(SEL_SEGMENT, work, 16, SEG, 5, TROVE_ERR_CORRUPT, 9, "width 0", "constant w 1");
    mutant(&g->identity)[9] = 5;
    expect_bad(SEL_SEGMENT, work, 16, 4, 5, TROVE_ERR_CORRUPT, 9, "width 0", "identity w 5");
    mutant(s)[9] = 0;
    expect_bad(SEL_SEGMENT, work, n, 952, 5, TROVE_ERR_CORRUPT, 9, "1 to 32", "bitpack w 0");
    mutant(s)[9] = 33;
    expect_bad(SEL_SEGMENT, work, n, 952, 5, TROVE_ERR_CORRUPT, 9, "1 to 32", "bitpack w 33");
    corpus_write("seg-width-33", SEL_SEGMENT, 952, 5, work, n);
    mutant(s)[9] = 2; /* needs 272 bytes */
    expect_bad(SEL_SEGMENT, work, n, 952, 5, TROVE_ERR_TRUNCATED, n, "cut short", "w 2 short");
    mutant(s)[n] = 0;
    expect_bad(SEL_SEGMENT, work, n + 128, 952, 5, TROVE_ERR_CORRUPT, n, "stray", "w 1 long");

    /* A caller that takes only one encoding, and bad arguments. */
    {
        int (*dec)(const uint8_t *, size_t, uint32_t, uint32_t, uint32_t *,
                   struct trove_digest *, uint8_t *, struct trove_diag *) =
            trove_recipe_v3_segment_decode;
        struct trove_diag diag = {0};
        uint32_t idx[SEG];
        struct trove_digest d[3];
        uint8_t enc = 0x77;
        CHECK_EQ_INT(dec(r->ptr, rn, 3, 5, idx, NULL, &enc, &diag), TROVE_ERR_INVALID);
        CHECK_EQ_INT(diag.offset, 5);
        CHECK(strstr(diag.msg, "raw") != NULL);
        CHECK_EQ_INT(enc, 0x77);
        CHECK_EQ_INT(dec(s->ptr, n, 952, 5, NULL, d, &enc, &diag), TROVE_ERR_INVALID);
        CHECK_EQ_INT(diag.offset, 5);
        CHECK_EQ_INT(enc, 0x77);
        CHECK_EQ_INT(dec(r->ptr, rn, 3, 5, NULL, d, NULL, &diag), TROVE_OK);
        CHECK_EQ_INT(dec(s->ptr, n, 952, 5, idx, NULL, NULL, &diag), TROVE_OK);
        CHECK_EQ_INT(dec(s->ptr, n, 952, 5, NULL, NULL, &enc, &diag), TROVE_ERR_INVALID);
        CHECK_EQ_INT(dec(s->ptr, n, 0, 5, idx, d, &enc, &diag), TROVE_ERR_INVALID);
        CHECK_EQ_INT(dec(s->ptr, n, 1025, 5, idx, d, &enc, &diag), TROVE_ERR_INVALID);
        CHECK_EQ_INT(dec(NULL, 1, 952, 5, idx, d, &enc, &diag), TROVE_ERR_INVALID);
        CHECK_EQ_INT(dec(NULL, 0, 952, 5, idx, d, &enc, &diag), TROVE_ERR_TRUNCATED);
    }
}

/* Every single-byte change of every golden object: refused cleanly, or accepted and then
 * re-encoded to exactly the changed bytes (one content, one encoding). */
static void test_flips(const struct golden *g)
{
    const struct {
        const struct trove_bytes *b;
        int sel;
        uint32_t n, dict;
    } objs[] = {
        {&g->page, SEL_PAGE, 0, 0},          {&g->chunk, SEL_CHUNK, 5, 0},
        {&g->seg[0], SEL_SEGMENT, SEG, 5},   {&g->seg[1], SEL_SEGMENT, SEG, 5},
        {&g->seg[2], SEL_SEGMENT, 952, 5},   {&g->identity, SEL_SEGMENT, 4, 5},
        {&g->raw, SEL_SEGMENT, 3, 5},
    };
    static const uint8_t masks[] = {0x01, 0x80, 0xFF};

    for (size_t o = 0; o < sizeof objs / sizeof objs[0]; o++) {
        const struct trove_bytes *b = objs[o].b;
        for (size_t at = 0; at < b->len; at++) {
            for (size_t k = 0; k < sizeof masks; k++) {
                struct trove_bytes re = {0};
                int rc;
                mutant(b)[at] ^= masks[k];
                memset(&got, 0, sizeof got);
                rc = decode_any(objs[o].sel, work, b->len, objs[o].n, objs[o].dict, &got, NULL);
                if (rc != TROVE_OK)
                    continue;
                if (objs[o].sel == SEL_PAGE)
                    rc = trove_recipe_v3_page_encode(got.sec, got.nsec, &re);
                else if (objs[o].sel == SEL_CHUNK)
                    rc = trove_recipe_v3_chunk_encode(got.d, objs[o].n, &re);
                else if (got.enc == TROVE_V3_ENC_RAW)
                    rc = trove_recipe_v3_segment_encode_raw(got.d, objs[o].n, &re);
                else
                    rc = trove_recipe_v3_segment_encode(got.idx, objs[o].n, &re);
                CHECK_EQ_INT(rc, TROVE_OK);
                if (re.len != b->len || memcmp(re.ptr, work, re.len) != 0) {
                    fprintf(stderr, "object %zu byte %zu ^ %02x: accepted, not canonical\n", o,
                            at, masks[k]);
                    CHECK(0);
                }
                trove_bytes_free(&re);
            }
        }
    }
}

/* ---- the version gate -------------------------------------------------------------------- */

static void expect_version_bad(const uint8_t *buf, size_t len, int want, uint64_t off,
                               const char *needle, const char *what)
{
    uint8_t *copy = malloc(len ? len : 1);
    struct trove_diag diag = {0};
    uint32_t v = 0x5A5A;
    int rc;
    CHECK(copy != NULL);
    if (!copy)
        return;
    if (len)
        memcpy(copy, buf, len);
    rc = trove_recipe_version(copy, len, &v, &diag);
    if (rc != want)
        fprintf(stderr, "%s: got %d (%s)\n", what, rc, diag.msg);
    CHECK_EQ_INT(rc, want);
    CHECK_EQ_INT(diag.offset, off);
    CHECK_EQ_INT(v, 0x5A5A);
    if (needle && !strstr(diag.msg, needle)) {
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, diag.msg, needle);
        CHECK(0);
    }
    CHECK_EQ_INT(trove_recipe_version(copy, len, &v, NULL), want);
    free(copy);
}

static void test_version(const struct golden *g)
{
    size_t len = 0;
    uint8_t *v1 = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/recipe_v1.bin", &len);
    struct trove_recipe_v1 r1;
    struct trove_diag diag = {0};
    uint32_t v = 0;

    CHECK(v1 != NULL);
    if (v1) {
        CHECK_EQ_INT(trove_recipe_version(v1, len, &v, NULL), TROVE_OK);
        CHECK_EQ_INT(v, 1);
        CHECK_EQ_INT(trove_recipe_version(v1, 56, &v, NULL), TROVE_OK); /* the header is enough */
        expect_version_bad(v1, 55, TROVE_ERR_TRUNCATED, 55, "cut short", "v1, 55 bytes");
        /* The v3 decoder refuses v1 and names the dispatcher. */
        expect_bad(SEL_MANIFEST, v1, len, 0, 0, TROVE_ERR_VERSION, 8, "trove_recipe_version",
                   "v1 to v3");
        corpus_write("manifest-v1", SEL_MANIFEST, 0, 0, v1, len);
    }
    free(v1);
    CHECK_EQ_INT(trove_recipe_version(g->manifest.ptr, g->manifest.len, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(v, 3);
    for (size_t l = 0; l < 56; l++)
        expect_version_bad(g->manifest.ptr, l, TROVE_ERR_TRUNCATED, l, NULL, "short");
    mutant(&g->manifest)[7] = '2';
    expect_version_bad(work, 96, TROVE_ERR_MAGIC, 0, "TROVRCP1", "magic");
    trove__put_le32(mutant(&g->manifest) + 8, 2);
    expect_version_bad(work, 96, TROVE_ERR_VERSION, 8, "unknown", "version 2");
    trove__put_le32(work + 8, 0);
    expect_version_bad(work, 96, TROVE_ERR_VERSION, 8, "unknown", "version 0");
    trove__put_le32(work + 8, 4);
    expect_version_bad(work, 96, TROVE_ERR_VERSION, 8, "newer", "version 4");
    trove__put_le32(work + 8, UINT32_MAX);
    expect_version_bad(work, 96, TROVE_ERR_VERSION, 8, "newer", "version 2^32-1");
    /* The v1 decoder refuses a v3 recipe at its version field (a build that reads only v1
     * says "newer": the magic is shared on purpose). */
    CHECK_EQ_INT(trove_recipe_v1_decode(g->manifest.ptr, g->manifest.len, &r1, &diag),
                 TROVE_ERR_VERSION);
    CHECK_EQ_INT(diag.offset, 8);
    CHECK(strstr(diag.msg, "trove_recipe_version") != NULL);
    CHECK_EQ_INT(trove_recipe_version(NULL, 56, &v, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_version(g->manifest.ptr, 96, NULL, NULL), TROVE_ERR_INVALID);
}

/* ---- sizes at the seed's scale ----------------------------------------------------------- */

/* Bytes of the dictionary chunks, pages and manifest of a recipe (computed as the formats
 * lay them out), plus nseg segments of seg_bytes each. */
static uint64_t recipe_bytes(uint64_t slots, uint32_t dict_count, uint64_t seg_bytes,
                             uint64_t *dict_out, uint64_t *pages_out, uint64_t *manifest_out)
{
    uint64_t chunks = (dict_count + 1023ull) / 1024, segs = (slots + 1023) / 1024;
    uint64_t sections = chunks + segs, pages = (sections + 7) / 8;
    *dict_out = 8 * chunks + 16ull * dict_count;
    *pages_out = 8 * pages + 20 * sections;
    *manifest_out = 72 + 16 * pages + 8;
    return *dict_out + *pages_out + *manifest_out + segs * seg_bytes;
}

/* One segment's size at the seed's scale: 1024 indices spread over [1, u] with both ends
 * present (unstructured references, no empty slot), as the encoder writes it. */
static size_t spread_segment(uint32_t u)
{
    static uint32_t v[SEG];
    struct trove_bytes b = {0};
    uint64_t seed = u;
    size_t len;
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = 1 + (uint32_t)(test_rand(&seed) % u);
    v[3] = 1;
    v[600] = u;
    CHECK_EQ_INT(trove_recipe_v3_segment_encode(v, SEG, &b), TROVE_OK);
    len = b.len;
    trove_bytes_free(&b);
    return len;
}

static void test_seed_sizes(void)
{
    const uint64_t slots = 26214400, v1 = 56 + 16 * slots + 8;
    uint64_t dict, pages, man, total;
    static uint32_t v[SEG];
    struct trove_bytes b = {0};

    CHECK_EQ_INT(v1, 419430464);
    /* 1. No empties, no dedup: u = slots, every segment IDENTITY (16 bytes). */
    for (uint32_t i = 0; i < SEG; i++)
        v[i] = 1 + 5000 * SEG + i;
    CHECK_EQ_INT(trove_recipe_v3_segment_encode(v, SEG, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, 16);
    total = recipe_bytes(slots, 26214401, 16, &dict, &pages, &man);
    CHECK_EQ_INT(dict, 419635224);
    CHECK_EQ_INT(pages, 1075228);
    CHECK_EQ_INT(man, 102496);
    CHECK_EQ_INT(total, 421222548);
    /* 2. Half empty (the second half), no dedup: 12,800 IDENTITY and 12,800 CONSTANT 0. */
    total = recipe_bytes(slots, 13107201, 16, &dict, &pages, &man);
    CHECK_EQ_INT(dict, 209817624);
    CHECK_EQ_INT(total, 211110548);
    /* 3-5. Unstructured references over u digests: BITPACK at bits(u - 1). */
    CHECK_EQ_INT(spread_segment(2621440), 16 + 128 * 22);
    total = recipe_bytes(slots, 2621441, 16 + 128 * 22, &dict, &pages, &man);
    CHECK_EQ_INT(total, 115110548);
    CHECK_EQ_INT(spread_segment(262144), 16 + 128 * 18);
    total = recipe_bytes(slots, 262145, 16 + 128 * 18, &dict, &pages, &man);
    CHECK_EQ_INT(total, 64183188);
    CHECK_EQ_INT(spread_segment(1024), 16 + 128 * 10);
    total = recipe_bytes(slots, 1025, 16 + 128 * 10, &dict, &pages, &man);
    CHECK_EQ_INT(total, 33782960);
    trove_bytes_free(&b);
}

/* ---- encoder argument checks ------------------------------------------------------------- */

static void check_unchanged(int rc, struct trove_bytes *b, uint8_t *ptr, size_t cap,
                            const char *what)
{
    if (rc != TROVE_ERR_INVALID)
        fprintf(stderr, "%s: got %d want TROVE_ERR_INVALID\n", what, rc);
    CHECK_EQ_INT(rc, TROVE_ERR_INVALID);
    CHECK(b->ptr == ptr && b->cap == cap);
    CHECK_EQ_INT(b->len, 4);
    CHECK(memcmp(b->ptr, "keep", 4) == 0);
}

static void test_encode_invalid(void)
{
    static uint32_t idx[SEG + 1];
    static struct trove_digest d[SEG + 1];
    struct trove_digest pg[2];
    struct trove_v3_section sec[9];
    struct trove_bytes b = {0};
    uint8_t *ptr;
    size_t cap;

    CHECK_EQ_INT(trove_bytes_append(&b, "keep", 4), TROVE_OK);
    ptr = b.ptr;
    cap = b.cap;
    pg[0] = pg[1] = digest_fill(1);
    for (int i = 0; i < 9; i++) {
        sec[i].d = digest_fill((uint8_t)(i + 1));
        sec[i].kind = TROVE_V3_KIND_COLUMN;
        sec[i].encoding = TROVE_V3_ENC_PACKED;
    }
    d[0] = digest_fill(9);

    /* The manifest. */
    check_unchanged(trove_recipe_v3_encode(4096, 3000, 0, 0, 1, pg, 1, &b), &b, ptr, cap,
                    "block size 3000");
    check_unchanged(trove_recipe_v3_encode(4096, 1u << 31, 0, 0, 1, pg, 1, &b), &b, ptr, cap,
                    "block size 2^31");
    check_unchanged(trove_recipe_v3_encode(4096, 4096, 4, 0, 1, pg, 1, &b), &b, ptr, cap,
                    "flags bit 2");
    check_unchanged(trove_recipe_v3_encode(4096, 4096, 0, 0, 0, pg, 1, &b), &b, ptr, cap,
                    "dict_count 0");
    check_unchanged(trove_recipe_v3_encode(4096, 4096, 0, 0, 1, pg, 2, &b), &b, ptr, cap,
                    "page count 2");
    check_unchanged(trove_recipe_v3_encode(4096, 4096, 0, 0, 1, pg, 0, &b), &b, ptr, cap,
                    "page count 0");
    check_unchanged(trove_recipe_v3_encode(4096, 4096, 0, 0, 1, NULL, 1, &b), &b, ptr, cap,
                    "no pages");
    check_unchanged(trove_recipe_v3_encode((TROVE_RECIPE_MAX_SLOTS + 1) * 4096, 4096, 0, 0, 1,
                                           pg, 1, &b),
                    &b, ptr, cap, "2^32 + 1 slots");
    check_unchanged(trove_recipe_v3_encode(UINT64_MAX, 4096, 0, 0, 1, pg, 1, &b), &b, ptr, cap,
                    "2^64-1 bytes");
    pg[0] = digest_fill(0);
    check_unchanged(trove_recipe_v3_encode(4096, 4096, 0, 0, 1, pg, 1, &b), &b, ptr, cap,
                    "zero page digest");
    CHECK_EQ_INT(trove_recipe_v3_encode(4096, 4096, 0, 0, 1, pg + 1, 1, NULL), TROVE_ERR_INVALID);

    /* Pages. */
    check_unchanged(trove_recipe_v3_page_encode(sec, 0, &b), &b, ptr, cap, "page of 0");
    check_unchanged(trove_recipe_v3_page_encode(sec, 9, &b), &b, ptr, cap, "page of 9");
    check_unchanged(trove_recipe_v3_page_encode(NULL, 1, &b), &b, ptr, cap, "no records");
    sec[2].d = digest_fill(0);
    check_unchanged(trove_recipe_v3_page_encode(sec, 3, &b), &b, ptr, cap, "zero record");
    sec[2].d = digest_fill(3);
    sec[1].kind = 'P';
    check_unchanged(trove_recipe_v3_page_encode(sec, 3, &b), &b, ptr, cap, "record kind P");
    sec[1].kind = TROVE_V3_KIND_DICT;
    check_unchanged(trove_recipe_v3_page_encode(sec, 3, &b), &b, ptr, cap, "D encoded 2");
    sec[1].encoding = TROVE_V3_ENC_NONE;
    check_unchanged(trove_recipe_v3_page_encode(sec, 3, &b), &b, ptr, cap, "S after D");
    sec[2].kind = TROVE_V3_KIND_DICT;
    sec[2].encoding = TROVE_V3_ENC_NONE;
    sec[0].encoding = TROVE_V3_ENC_NONE;
    check_unchanged(trove_recipe_v3_page_encode(sec, 3, &b), &b, ptr, cap, "S encoded 0");
    sec[0].encoding = TROVE_V3_ENC_RAW;
    CHECK_EQ_INT(trove_recipe_v3_page_encode(sec, 3, &b), TROVE_OK); /* S D D */
    b.len = 4;

    /* Chunks and segments. */
    check_unchanged(trove_recipe_v3_chunk_encode(d, 0, &b), &b, ptr, cap, "chunk of 0");
    check_unchanged(trove_recipe_v3_chunk_encode(d, SEG + 1, &b), &b, ptr, cap, "chunk 1025");
    check_unchanged(trove_recipe_v3_chunk_encode(NULL, 1, &b), &b, ptr, cap, "chunk NULL");
    check_unchanged(trove_recipe_v3_segment_encode_raw(d, 0, &b), &b, ptr, cap, "raw of 0");
    check_unchanged(trove_recipe_v3_segment_encode_raw(d, SEG + 1, &b), &b, ptr, cap, "raw 1025");
    check_unchanged(trove_recipe_v3_segment_encode_raw(NULL, 1, &b), &b, ptr, cap, "raw NULL");
    check_unchanged(trove_recipe_v3_segment_encode(idx, 0, &b), &b, ptr, cap, "packed of 0");
    check_unchanged(trove_recipe_v3_segment_encode(idx, SEG + 1, &b), &b, ptr, cap,
                    "packed 1025");
    check_unchanged(trove_recipe_v3_segment_encode(NULL, 1, &b), &b, ptr, cap, "packed NULL");
    CHECK_EQ_INT(trove_recipe_v3_chunk_encode(d, 1, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_segment_encode(idx, 1, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_page_encode(sec, 1, NULL), TROVE_ERR_INVALID);
    trove_bytes_free(&b);
}

static void test_decode_invalid(const struct golden *g)
{
    struct trove_diag diag = {0};
    struct trove_recipe_v3 m;
    struct trove_v3_section sec[8];
    struct trove_digest d[8];
    uint32_t n;

    CHECK_EQ_INT(trove_recipe_v3_decode(NULL, 96, &m, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(diag.code, TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_decode(g->manifest.ptr, 96, NULL, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_decode(NULL, 0, &m, NULL), TROVE_ERR_TRUNCATED);
    CHECK_EQ_INT(trove_recipe_v3_page_decode(g->page.ptr, 88, NULL, &n, NULL),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_page_decode(g->page.ptr, 88, sec, NULL, NULL),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_page_decode(NULL, 0, sec, &n, NULL), TROVE_ERR_TRUNCATED);
    CHECK_EQ_INT(trove_recipe_v3_chunk_decode(g->chunk.ptr, 88, 5, NULL, NULL),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_chunk_decode(g->chunk.ptr, 88, 0, d, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_chunk_decode(g->chunk.ptr, 88, 1025, d, NULL),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_chunk_decode(NULL, 0, 5, d, NULL), TROVE_ERR_TRUNCATED);
}

/* Patches: the golden one decodes and applies; every check of the decoder, apply and the
 * encoder. */
static void test_patch(const struct golden *g)
{
    const struct trove_bytes *pb = &g->patch;
    uint32_t seg[SEG], base_out[TROVE_RECIPE_V3_PATCH_MAX];
    struct trove_v3_patch p, q;
    struct trove_bytes b = {0};
    size_t n = pb->len;
    struct trove_diag diag;

    CHECK_EQ_INT(expect_ok(SEL_PATCH, pb->ptr, n, 952, 5, "golden patch"), TROVE_OK);
    p = got.patch;
    CHECK(trove_digest_equal(&p.base, &g->seg_d[2]));
    CHECK_EQ_INT(p.k, 2);
    CHECK(p.off[0] == 0 && p.off[1] == 951 && p.idx[0] == 3 && p.idx[1] == 0);
    CHECK_EQ_INT(trove_recipe_v3_patch_encode(&p, 952, &b), TROVE_OK);
    CHECK(b.len == n && memcmp(b.ptr, pb->ptr, n) == 0);
    /* Apply to the base's indices: the two slots change, the base's values come out. */
    memcpy(seg, g->seg2, sizeof g->seg2);
    CHECK_EQ_INT(trove_recipe_v3_patch_apply(&p, seg, base_out, NULL), TROVE_OK);
    CHECK(seg[0] == 3 && seg[951] == 0 && base_out[0] == 1 && base_out[1] == 1);
    CHECK(memcmp(seg + 1, g->seg2 + 1, 950 * sizeof *seg) == 0);
    /* Applying it again repeats the base: not canonical, and nothing changes. */
    CHECK_EQ_INT(trove_recipe_v3_patch_apply(&p, seg, base_out, &diag), TROVE_ERR_CORRUPT);
    CHECK(diag.offset == 28 + 2 * 2 && strstr(diag.msg, "not canonical") != NULL);
    CHECK(seg[0] == 3 && seg[951] == 0 && seg[1] == g->seg2[1]);
    CHECK_EQ_INT(trove_recipe_v3_patch_apply(&p, seg, NULL, NULL), TROVE_ERR_CORRUPT);

    /* The header (every prefix); the length; the encoding. */
    header_errors(SEL_PATCH, pb, 952, 5, 'D', "dictionary chunk", 0, SEG, "patch header");
    corpus_write("patch-short", SEL_PATCH, 952, 5, pb->ptr, 30);
    mutant(pb)[5] = TROVE_V3_ENC_PACKED;
    expect_bad(SEL_PATCH, work, n, 952, 5, TROVE_ERR_CORRUPT, 5, "where a patch (3)",
               "patch as packed");
    expect_bad(SEL_SEGMENT, pb->ptr, n, 952, 5, TROVE_ERR_CORRUPT, 5, "is a patch",
               "patch to the segment decoder");
    /* Base, count, reserved. */
    memset(mutant(pb) + 8, 0, 16);
    expect_bad(SEL_PATCH, work, n, 952, 5, TROVE_ERR_CORRUPT, 8, "zero digest", "zero base");
    trove__put_le16(mutant(pb) + 24, 0);
    expect_bad(SEL_PATCH, work, n, 952, 5, TROVE_ERR_CORRUPT, 24, "1 to 64", "k 0");
    trove__put_le16(mutant(pb) + 24, 65);
    expect_bad(SEL_PATCH, work, n, 952, 5, TROVE_ERR_CORRUPT, 24, "1 to 64", "k 65");
    corpus_write("patch-k65", SEL_PATCH, 952, 5, work, n);
    trove__put_le16(mutant(pb) + 24, 1);
    expect_bad(SEL_PATCH, work, n, 952, 5, TROVE_ERR_CORRUPT, 28 + 6, "stray", "k 1");
    trove__put_le16(mutant(pb) + 26, 1);
    expect_bad(SEL_PATCH, work, n, 952, 5, TROVE_ERR_CORRUPT, 26, "reserved", "patch reserved");
    /* Entries: order, range, dictionary bound. */
    trove__put_le16(mutant(pb) + 30, 0);
    expect_bad(SEL_PATCH, work, n, 952, 5, TROVE_ERR_CORRUPT, 30, "not after", "same slot");
    corpus_write("patch-same-slot", SEL_PATCH, 952, 5, work, n);
    trove__put_le16(mutant(pb) + 30, 952);
    expect_bad(SEL_PATCH, work, n, 952, 5, TROVE_ERR_CORRUPT, 30, "past the segment",
               "slot 952");
    expect_bad(SEL_PATCH, pb->ptr, n, 952, 3, TROVE_ERR_CORRUPT, 32, "past the dictionary",
               "index 3 of 3");
    expect_bad(SEL_PATCH, pb->ptr, n, 1024, 5, TROVE_ERR_CORRUPT, 6, "needs 1024",
               "patch for 1024 slots");
    CHECK_EQ_INT(expect_ok(SEL_PATCH, pb->ptr, n, 952, 4, "index 3 of 4"), TROVE_OK);

    /* The encoder refuses what the decoder would. */
    q = p;
    q.k = 0;
    CHECK_EQ_INT(trove_recipe_v3_patch_encode(&q, 952, &b), TROVE_ERR_INVALID);
    q.k = TROVE_RECIPE_V3_PATCH_MAX + 1;
    CHECK_EQ_INT(trove_recipe_v3_patch_encode(&q, 952, &b), TROVE_ERR_INVALID);
    q = p;
    memset(&q.base, 0, sizeof q.base);
    CHECK_EQ_INT(trove_recipe_v3_patch_encode(&q, 952, &b), TROVE_ERR_INVALID);
    q = p;
    q.off[1] = 0;
    CHECK_EQ_INT(trove_recipe_v3_patch_encode(&q, 952, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_patch_encode(&p, 951, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_patch_encode(&p, 0, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v3_patch_encode(NULL, 952, &b), TROVE_ERR_INVALID);
    CHECK_EQ_INT(b.len, n); /* unchanged by every refusal */
    /* The largest patch: 64 entries over a full segment. */
    q = p;
    q.k = TROVE_RECIPE_V3_PATCH_MAX;
    for (uint32_t j = 0; j < q.k; j++) {
        q.off[j] = (uint16_t)(j * 16 + 15);
        q.idx[j] = j % 5;
    }
    b.len = 0;
    CHECK_EQ_INT(trove_recipe_v3_patch_encode(&q, SEG, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, TROVE_RECIPE_V3_PATCH_LEN(64));
    CHECK_EQ_INT(expect_ok(SEL_PATCH, b.ptr, b.len, SEG, 5, "64 entries"), TROVE_OK);
    CHECK(memcmp(&got.patch, &q, sizeof q) == 0);
    corpus_write("patch-64", SEL_PATCH, SEG, 5, b.ptr, b.len);
    trove_bytes_free(&b);
}

int main(int argc, char **argv)
{
    static struct golden g;

    test_init(argc, argv);
    RUN(test_counts);
    RUN(test_golden);
    RUN(test_manifest_roundtrips);
    RUN(test_page_roundtrips);
    RUN(test_digest_objects);
    /* What runs through trove_bitpack_pack/unpack/range, on the AVX2 build (where the CPU
     * has it) and on the generic one. */
    for (int generic = 0; generic < 2; generic++) {
        trove__bitpack_force_generic = generic;
        RUN(test_schemes);
        RUN(test_equal_bytes);
        RUN(test_noncanonical);
    }
    trove__bitpack_force_generic = 0;
    golden_build(&g);
    RUN_WITH(test_manifest_errors, &g);
    RUN_WITH(test_page_errors, &g);
    RUN_WITH(test_chunk_errors, &g);
    for (int generic = 0; generic < 2; generic++) {
        trove__bitpack_force_generic = generic;
        RUN_WITH(test_segment_errors, &g);
        RUN_WITH(test_flips, &g);
    }
    trove__bitpack_force_generic = 0;
    RUN_WITH(test_version, &g);
    RUN(test_seed_sizes);
    RUN(test_encode_invalid);
    RUN_WITH(test_decode_invalid, &g);
    RUN_WITH(test_patch, &g);
    golden_free(&g);
    return test_done();
}
