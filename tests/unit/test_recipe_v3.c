/*
 * test_recipe_v3.c: recipe format v3 (src/store/recipe_v3.c) — round trips of the manifest,
 * pages, dictionary chunks and raw and packed segments; the canonical scheme choice
 * (CONSTANT, IDENTITY, BITPACK at every width, short segments and their padding) and the
 * rule that equal contents are equal bytes; each non-canonical encoding refused; the golden
 * vectors tests/vectors/recipe_v3_*.bin; the sizes docs/formats/recipe-v3.md gives for the
 * seed's 26,214,400-slot cases; and the encoders' argument checks; the segment tests run on
 * both bit-packing builds (AVX2, generic). Every decoder's checks on bad input are
 * test_recipe_v3_errors.c's. With TROVE_RECIPE_V3_CORPUS=<dir> set, the valid and broken
 * objects built here are also written to <dir>, with the fuzz target's selector prefix, as
 * its seed corpus (fuzz/corpus/fuzz_recipe_v3/).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/bitpack_internal.h"
#include "common/endian.h"
#include "recipe_v3_test.h"
#include "testutil.h"
#include "trove/bitpack.h"
#include "trove/recipe.h"

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
    CHECK_EQ_INT(g.manifest_v4.len, 72 + 16 + 8);
    test_check_vector("recipe_v4_manifest.bin", g.manifest_v4.ptr, g.manifest_v4.len);
    corpus_write("manifest-v4-golden", SEL_MANIFEST, 0, 0, g.manifest_v4.ptr, g.manifest_v4.len);
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

    /* The v4 manifest from disk: v3's bytes but the version, the stale count (where v3 has
     * its reserved zero) and the checksum. */
    file = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/recipe_v4_manifest.bin", &len);
    CHECK(file != NULL);
    if (file && expect_ok(SEL_MANIFEST, file, len, 0, 0, "golden v4 manifest") == TROVE_OK) {
        uint32_t version = 0;
        CHECK_EQ_INT(got.m.version, 4);
        CHECK_EQ_INT(got.m.stale, 1);
        CHECK_EQ_INT(got.m.dict_count, 5);
        CHECK_EQ_INT(got.m.page_count, 1);
        CHECK_EQ_INT(trove_recipe_version(file, len, &version, NULL), TROVE_OK);
        CHECK_EQ_INT(version, 4);
        CHECK(file[8] == 4 && file[68] == 1);
        CHECK(len == g.manifest.len && memcmp(file + 9, g.manifest.ptr + 9, 68 - 9) == 0 &&
              memcmp(file + 72, g.manifest.ptr + 72, 16) == 0);
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

int main(int argc, char **argv)
{
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
    RUN(test_seed_sizes);
    RUN(test_encode_invalid);
    return test_done();
}
