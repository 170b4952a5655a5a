/*
 * test_recipe_v3_errors.c: recipe format v3's decoders on bad input (src/store/recipe_v3.c)
 * — every check of the manifest, page, chunk and segment decoders with its error code and
 * offset; every truncation and byte flip of the golden objects (the segments on both
 * bit-packing builds, AVX2 and generic); the version gate; the decoders' argument checks;
 * and patches: the golden one decoded and applied, then every check of its decoder and of
 * apply. With TROVE_RECIPE_V3_CORPUS=<dir> set, the broken objects built here are also
 * written to <dir>, with the fuzz target's selector prefix, as seeds of
 * fuzz/corpus/fuzz_recipe_v3/.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/bitpack_internal.h"
#include "common/endian.h"
#include "common/sealed.h"
#include "recipe_v3_test.h"
#include "testutil.h"
#include "trove/bitpack.h"
#include "trove/recipe.h"

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
    trove__put_le32(mutant(m) + 8, 5);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_VERSION, 8, "newer", "version 5");
    corpus_write("manifest-version-5", SEL_MANIFEST, 0, 0, work, n);
    /* Version 4 is the same layout with a stale count where v3 has its reserved zero: the
     * count must be below dict_count (it is re-sealed, so only that check can fail). */
    trove__put_le32(mutant(m) + 8, 4);
    trove__put_le32(work + 68, 5); /* the vectors' dictionary has 5 entries */
    trove__sealed_seal(work, n);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 68, "stale", "v4 stale = dict");
    corpus_write("manifest-v4-stale", SEL_MANIFEST, 0, 0, work, n);
    trove__put_le32(work + 68, 4);
    trove__sealed_seal(work, n);
    {
        struct trove_recipe_v3 r;
        CHECK_EQ_INT(trove_recipe_v3_decode(work, n, &r, NULL), TROVE_OK);
        CHECK_EQ_INT(r.version, 4);
        CHECK_EQ_INT(r.stale, 4);
    }
    trove__put_le32(mutant(m) + 8, 3); /* and v3 refuses a nonzero reserved field */
    trove__put_le32(work + 68, 4);
    trove__sealed_seal(work, n);
    expect_bad(SEL_MANIFEST, work, n, 0, 0, TROVE_ERR_CORRUPT, 68, "reserved", "v3 reserved");
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
    trove__put_le32(work + 8, 5);
    expect_version_bad(work, 96, TROVE_ERR_VERSION, 8, "newer", "version 5");
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
    golden_build(&g);
    RUN_WITH(test_manifest_errors, &g);
    RUN_WITH(test_page_errors, &g);
    RUN_WITH(test_chunk_errors, &g);
    /* The segment decoders run on the AVX2 build (where the CPU has it) and on the generic
     * one. */
    for (int generic = 0; generic < 2; generic++) {
        trove__bitpack_force_generic = generic;
        RUN_WITH(test_segment_errors, &g);
        RUN_WITH(test_flips, &g);
    }
    trove__bitpack_force_generic = 0;
    RUN_WITH(test_version, &g);
    RUN_WITH(test_decode_invalid, &g);
    RUN_WITH(test_patch, &g);
    golden_free(&g);
    return test_done();
}
