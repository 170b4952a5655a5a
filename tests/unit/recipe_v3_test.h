/*
 * recipe_v3_test.h: what the recipe v3 tests share (test_recipe_v3.c,
 * test_recipe_v3_errors.c): the fuzz corpus writer, decoding of any object kind into
 * outputs compared against a sentinel (expect_bad: the error, its offset and message, the
 * outputs untouched; expect_ok), and the golden objects.
 */
#ifndef TROVE_RECIPE_V3_TEST_H
#define TROVE_RECIPE_V3_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "trove/recipe.h"

#define MiB (1024ull * 1024)
#define SEG 1024u

/* The fuzz target's input: a selector byte, then for chunks and segments n (u16) and
 * dict_count (u32), then the object (fuzz/fuzz_recipe_v3.c). */
enum { SEL_MANIFEST = 0, SEL_PAGE = 1, SEL_CHUNK = 2, SEL_SEGMENT = 3, SEL_PATCH = 4 };

static inline void corpus_write(const char *name, int sel, uint32_t n, uint32_t dict_count,
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

static inline int decode_any(int sel, const uint8_t *buf, size_t len, uint32_t n,
                             uint32_t dict_count, struct outs *o, struct trove_diag *diag)
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
static inline void expect_bad(int sel, const uint8_t *buf, size_t len, uint32_t n,
                              uint32_t dict_count, int want, uint64_t want_off, const char *needle,
                              const char *what)
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
static inline int expect_ok(int sel, const uint8_t *buf, size_t len, uint32_t n,
                            uint32_t dict_count, const char *what)
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

static inline void digest_of_str(const char *s, struct trove_digest *d)
{
    trove_digest_of(s, strlen(s), d);
}

/* A digest with every byte x (nonzero for x != 0). */
static inline struct trove_digest digest_fill(uint8_t x)
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
    struct trove_bytes chunk, seg[3], page, manifest, manifest_v4, identity, raw, patch;
    struct trove_digest chunk_d, seg_d[3], page_d;
};

static inline void golden_build(struct golden *g)
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
    /* The same volume under a v4 manifest, with one stale entry counted: a commit made it
     * that replaced a slot's digest without loading the dictionary, so it could not tell
     * whether the entry was still named. */
    CHECK_EQ_INT(trove_recipe_v4_encode(3000 * 2 * MiB, 2 * MiB, 0, 7, 5, 1, &g->page_d, 1,
                                        &g->manifest_v4),
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

static inline void golden_free(struct golden *g)
{
    trove_bytes_free(&g->chunk);
    for (int s = 0; s < 3; s++)
        trove_bytes_free(&g->seg[s]);
    trove_bytes_free(&g->page);
    trove_bytes_free(&g->manifest);
    trove_bytes_free(&g->manifest_v4);
    trove_bytes_free(&g->identity);
    trove_bytes_free(&g->raw);
    trove_bytes_free(&g->patch);
}

#endif
