/*
 * test_recipe.c: recipe format v1 — round trips (empty, one slot, a partly empty volume,
 * 10,000 random slots, the seed's 10 TiB volume at 2 MiB blocks), the golden vector
 * tests/vectors/recipe_v1.bin, and every class of bad input the decoder must refuse with
 * its own error code, plus the encoder's argument checks. With TROVE_RECIPE_CORPUS=<dir>
 * set, the valid and broken recipes built here are also written to <dir> as a fuzz seed
 * corpus (fuzz/corpus/fuzz_recipe/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "testutil.h"
#include "trove/recipe.h"

#define MiB (1024ull * 1024)
#define TiB (1024ull * 1024 * 1024 * 1024)

static void corpus_write(const char *name, const uint8_t *buf, size_t len)
{
    test_corpus_write("TROVE_RECIPE_CORPUS", name, NULL, 0, buf, len);
}

/* Encode after a 3-byte prefix (so the decoder sees an unaligned buffer and the encoder
 * must append), decode, and compare every field and slot. */
static void roundtrip(uint64_t volume_size, uint32_t block_size, uint32_t flags,
                      uint64_t generation, const struct trove_digest *slots, uint64_t n,
                      const char *what)
{
    struct trove_bytes b = {0};
    struct trove_recipe_v1 r;
    struct trove_diag diag = {0};
    struct trove_digest d;
    int rc;

    CHECK_EQ_INT(trove_bytes_append(&b, "abc", 3), TROVE_OK);
    rc = trove_recipe_v1_encode(volume_size, block_size, flags, generation, slots, n, &b);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        goto out;
    CHECK_EQ_INT(b.len, 3 + 64 + 16 * n);
    CHECK(memcmp(b.ptr, "abc", 3) == 0);
    rc = trove_recipe_v1_decode(b.ptr + 3, b.len - 3, &r, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: %s\n", what, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        goto out;
    CHECK_EQ_INT(r.slot_count, n);
    CHECK_EQ_INT(r.block_size, block_size);
    CHECK_EQ_INT(r.flags, flags);
    CHECK(r.volume_size == volume_size);
    CHECK(r.generation == generation);
    CHECK(r.entries == b.ptr + 3 + 56);
    if (n)
        CHECK(memcmp(r.entries, slots, 16 * n) == 0);
    for (uint64_t i = 0; i < n; i += 1 + n / 7) {
        trove_recipe_v1_slot(&r, i, &d);
        CHECK(trove_digest_equal(&d, &slots[i]));
    }
    if (n) {
        trove_recipe_v1_slot(&r, n - 1, &d);
        CHECK(trove_digest_equal(&d, &slots[n - 1]));
    }
out:
    trove_bytes_free(&b);
}

static void test_roundtrips(void)
{
    static struct trove_digest many[10000];
    struct trove_digest one, part[9] = {{{0}}};
    uint64_t seed = 4;

    roundtrip(0, 4096, 0, 0, NULL, 0, "empty volume");
    roundtrip(0, 1u << 30, TROVE_RECIPE_FLAG_READONLY, UINT64_MAX, NULL, 0, "empty, 1 GiB blocks");
    trove_digest_of("one", 3, &one);
    roundtrip(1, 4096, 0, 1, &one, 1, "one byte");
    roundtrip(4096, 4096, TROVE_RECIPE_FLAG_READONLY, 2, &one, 1, "one full slot");
    roundtrip(1u << 30, 1u << 30, 0, 3, &one, 1, "one 1 GiB slot");
    /* A partly empty volume: slots 0, 4 and 8 written, the rest zero digests. */
    trove_digest_of("a", 1, &part[0]);
    trove_digest_of("b", 1, &part[4]);
    part[8] = part[0]; /* dedup: the same block twice */
    roundtrip(8 * 65536 + 100, 65536, 0, 12, part, 9, "partly empty");
    for (size_t i = 0; i < 10000; i++) {
        uint64_t a = test_rand(&seed), c = test_rand(&seed);
        memcpy(many[i].b, &a, 8);
        memcpy(many[i].b + 8, &c, 8);
    }
    roundtrip(10000ull * 2 * MiB, 2 * MiB, 0, 99, many, 10000, "10,000 random slots");
    roundtrip(9999ull * 2 * MiB + 1, 2 * MiB, 0, 99, many, 10000, "10,000, last slot partial");
}

/* The golden recipe: 5 MiB + 1 byte at 2 MiB blocks, so 3 slots: "hello", empty, and
 * 2 MiB of 0xAB bytes; generation 7, no flags. docs/formats/store.md shows it as hex. */
static void golden(struct trove_bytes *b, struct trove_digest slots[3])
{
    uint8_t *block = malloc(2 * MiB);
    memset(slots, 0, 3 * sizeof *slots);
    trove_digest_of("hello", 5, &slots[0]);
    CHECK(block != NULL);
    if (block) {
        memset(block, 0xAB, 2 * MiB);
        trove_digest_of(block, 2 * MiB, &slots[2]);
    }
    free(block);
    CHECK_EQ_INT(trove_recipe_v1_encode(5 * MiB + 1, 2 * MiB, 0, 7, slots, 3, b), TROVE_OK);
}

static void test_golden(void)
{
    struct trove_bytes b = {0};
    struct trove_digest slots[3], d;
    struct trove_recipe_v1 r;
    struct trove_diag diag = {0};
    size_t len = 0;
    uint8_t *file;

    golden(&b, slots);
    CHECK_EQ_INT(b.len, 64 + 3 * 16);
    test_check_vector("recipe_v1.bin", b.ptr, b.len);
    corpus_write("golden.bin", b.ptr, b.len);

    file = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/recipe_v1.bin", &len);
    CHECK(file != NULL);
    if (file) {
        CHECK_EQ_INT(trove_recipe_v1_decode(file, len, &r, &diag), TROVE_OK);
        CHECK_EQ_INT(r.slot_count, 3);
        CHECK_EQ_INT(r.block_size, 2 * MiB);
        CHECK_EQ_INT(r.flags, 0);
        CHECK(r.volume_size == 5 * MiB + 1);
        CHECK(r.generation == 7);
        for (int i = 0; i < 3; i++) {
            trove_recipe_v1_slot(&r, (uint64_t)i, &d);
            CHECK(trove_digest_equal(&d, &slots[i]));
        }
        trove_recipe_v1_slot(&r, 1, &d);
        CHECK(trove_digest_is_zero(&d));
        /* The header fields as the format spec places them. */
        CHECK(memcmp(file, "TROVRCP1", 8) == 0);
        CHECK(file[8] == 1 && file[12] == 16 && file[16] == 3);
        CHECK(file[24] == 0 && file[25] == 0 && file[26] == 0x20 && file[27] == 0);
        CHECK(file[40] == 7);
        CHECK(memcmp(file + 56, slots[0].b, 16) == 0);
    }
    free(file);
    trove_bytes_free(&b);
}

/* The seed's size fact: 10 TiB at 2 MiB blocks is 5,242,880 slots and an 83,886,144-byte
 * recipe (56 + 16 * 5,242,880 + 8). */
static void test_ten_tib(void)
{
    const uint64_t n = 5242880;
    struct trove_digest *slots = calloc(n, sizeof *slots);
    struct trove_bytes b = {0};
    struct trove_recipe_v1 r;
    struct trove_diag diag = {0};
    struct trove_digest d;

    CHECK(slots != NULL);
    if (!slots)
        return;
    CHECK_EQ_INT((10 * TiB + 2 * MiB - 1) / (2 * MiB), n);
    CHECK_EQ_INT(trove_recipe_v1_encode(10 * TiB, 2 * MiB, 0, 1, slots, n, &b), TROVE_OK);
    CHECK_EQ_INT(b.len, 83886144);
    CHECK_EQ_INT(b.len, 56 + 16 * n + 8);
    CHECK_EQ_INT(trove_recipe_v1_decode(b.ptr, b.len, &r, &diag), TROVE_OK);
    CHECK_EQ_INT(r.slot_count, n);
    trove_recipe_v1_slot(&r, n - 1, &d);
    CHECK(trove_digest_is_zero(&d));
    free(slots);
    trove_bytes_free(&b);
}

/* The decoder under test, for test_expect_decode_error. */
static int decode_v1(const uint8_t *buf, size_t len, void *out, struct trove_diag *diag)
{
    return trove_recipe_v1_decode(buf, len, out, diag);
}

static void expect_bad(const uint8_t *buf, size_t len, int want, uint64_t want_off,
                       const char *needle, const char *what)
{
    test_expect_decode_error(decode_v1, sizeof(struct trove_recipe_v1), buf, len, want, want_off, needle, what);
}

/* A fresh copy of the golden recipe in work[] to break one field of. */
static uint8_t work[1024];

static uint8_t *mutant(const struct trove_bytes *g)
{
    memcpy(work, g->ptr, g->len);
    return work;
}

static void test_bad_input(void)
{
    struct trove_bytes g = {0};
    struct trove_digest slots[3];
    const size_t n = 64 + 3 * 16;

    golden(&g, slots);
    CHECK_EQ_INT(g.len, n);
    if (g.len != n)
        goto out;

    /* Every prefix. */
    for (size_t len = 0; len < n; len++)
        expect_bad(g.ptr, len, TROVE_ERR_TRUNCATED, len, NULL, "prefix");
    corpus_write("short-header.bin", g.ptr, 40);
    corpus_write("short-entries.bin", g.ptr, 80);
    corpus_write("no-checksum.bin", g.ptr, n - 8);

    mutant(&g)[0] = 'X';
    expect_bad(work, n, TROVE_ERR_MAGIC, 0, NULL, "magic");
    corpus_write("bad-magic.bin", work, n);

    trove__put_le32(mutant(&g) + 8, 2);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "unknown", "version 2");
    corpus_write("version-2.bin", work, n);
    trove__put_le32(mutant(&g) + 8, 0);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "unknown", "version 0");
    trove__put_le32(mutant(&g) + 8, 3); /* a v3 recipe is this build's, not the v1 decoder's */
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "trove_recipe_version", "version 3");
    trove__put_le32(mutant(&g) + 8, 4); /* as is v4 */
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "trove_recipe_version", "version 4");
    trove__put_le32(mutant(&g) + 8, 5);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "newer", "version 5");
    trove__put_le32(mutant(&g) + 8, UINT32_MAX);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "newer", "version 2^32-1");

    trove__put_le32(mutant(&g) + 12, 20);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 12, NULL, "digest width 20");
    corpus_write("width-20.bin", work, n);

    {
        static const uint32_t bad_bs[] = {3000, 1u << 31, 0, 2048, 3 * 4096, UINT32_MAX};
        for (size_t i = 0; i < sizeof bad_bs / sizeof bad_bs[0]; i++) {
            trove__put_le32(mutant(&g) + 24, bad_bs[i]);
            expect_bad(work, n, TROVE_ERR_CORRUPT, 24, NULL, "block size");
        }
        trove__put_le32(mutant(&g) + 24, 3000);
        corpus_write("block-3000.bin", work, n);
    }

    trove__put_le32(mutant(&g) + 28, 4);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 28, NULL, "flags bit 2");
    corpus_write("flags-bit1.bin", work, n);
    trove__put_le32(mutant(&g) + 28, 0x80000001u);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 28, NULL, "flags bit 31");
    {
        /* Bit 0 is read-only and valid; the checksum covers only the entries. */
        struct trove_recipe_v1 r;
        trove__put_le32(mutant(&g) + 28, TROVE_RECIPE_FLAG_READONLY);
        CHECK_EQ_INT(trove_recipe_v1_decode(work, n, &r, NULL), TROVE_OK);
        CHECK_EQ_INT(r.flags, TROVE_RECIPE_FLAG_READONLY);
        corpus_write("readonly.bin", work, n);
        /* Bit 1 marks an object volume: valid too. */
        trove__put_le32(mutant(&g) + 28, TROVE_RECIPE_FLAG_OBJECTS);
        CHECK_EQ_INT(trove_recipe_v1_decode(work, n, &r, NULL), TROVE_OK);
        CHECK_EQ_INT(r.flags, TROVE_RECIPE_FLAG_OBJECTS);
    }

    mutant(&g)[55] = 1;
    expect_bad(work, n, TROVE_ERR_CORRUPT, 48, NULL, "reserved");
    corpus_write("reserved.bin", work, n);

    trove__put_le64(mutant(&g) + 16, 4);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 16, "disagrees", "one slot more");
    corpus_write("slots-4.bin", work, n);
    trove__put_le64(mutant(&g) + 16, 2);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 16, "disagrees", "one slot less");
    trove__put_le64(mutant(&g) + 32, 6 * MiB + 1); /* size says 4 slots */
    expect_bad(work, n, TROVE_ERR_CORRUPT, 16, "disagrees", "size one slot more");
    trove__put_le64(mutant(&g) + 32, UINT64_MAX); /* ceil must not overflow */
    expect_bad(work, n, TROVE_ERR_CORRUPT, 16, "disagrees", "size 2^64-1");

    /* Slot counts over the limit, even when they agree with the size. */
    mutant(&g);
    trove__put_le64(work + 16, TROVE_RECIPE_MAX_SLOTS + 1);
    trove__put_le32(work + 24, 4096);
    trove__put_le64(work + 32, (TROVE_RECIPE_MAX_SLOTS + 1) * 4096);
    expect_bad(work, n, TROVE_ERR_LIMIT, 16, NULL, "2^32 + 1 slots");
    corpus_write("over-limit.bin", work, n);
    trove__put_le64(work + 16, UINT64_MAX);
    expect_bad(work, n, TROVE_ERR_LIMIT, 16, NULL, "2^64-1 slots");
    /* Exactly at the limit is allowed by the header and then short: no overflow. */
    trove__put_le64(work + 16, TROVE_RECIPE_MAX_SLOTS);
    trove__put_le64(work + 32, TROVE_RECIPE_MAX_SLOTS * 4096);
    expect_bad(work, n, TROVE_ERR_TRUNCATED, n, NULL, "2^32 slots, 112 bytes");

    mutant(&g)[n] = 0;
    expect_bad(work, n + 1, TROVE_ERR_CORRUPT, n, NULL, "trailing byte");
    corpus_write("trailing.bin", work, n + 1);
    memset(work + n, 0, 100);
    expect_bad(work, n + 100, TROVE_ERR_CORRUPT, n, NULL, "trailing 100 bytes");

    for (size_t at = 56; at < n - 8; at += 7) {
        mutant(&g)[at] ^= 0x10;
        expect_bad(work, n, TROVE_ERR_CHECKSUM, n - 8, NULL, "flipped entry byte");
    }
    mutant(&g)[72] ^= 1; /* the empty slot is no longer empty */
    corpus_write("flipped-entry.bin", work, n);
    for (size_t at = n - 8; at < n; at++) {
        mutant(&g)[at] ^= 0x80;
        expect_bad(work, n, TROVE_ERR_CHECKSUM, n - 8, NULL, "flipped checksum byte");
    }
    corpus_write("flipped-checksum.bin", work, n);
out:
    trove_bytes_free(&g);
}

/* More valid seeds: small recipes of several shapes. */
static void test_corpus_seeds(void)
{
    struct trove_bytes b = {0};
    struct trove_digest s[4] = {{{0}}};
    if (!getenv("TROVE_RECIPE_CORPUS"))
        return;
    CHECK_EQ_INT(trove_recipe_v1_encode(0, 4096, 0, 0, NULL, 0, &b), TROVE_OK);
    corpus_write("empty.bin", b.ptr, b.len);
    b.len = 0;
    trove_digest_of("x", 1, &s[0]);
    s[3] = s[0];
    CHECK_EQ_INT(trove_recipe_v1_encode(4 * 4096 - 1, 4096, 1, 42, s, 4, &b), TROVE_OK);
    corpus_write("four-4k.bin", b.ptr, b.len);
    b.len = 0;
    CHECK_EQ_INT(trove_recipe_v1_encode(1u << 30, 1u << 30, 0, 5, s, 1, &b), TROVE_OK);
    corpus_write("one-1g.bin", b.ptr, b.len);
    trove_bytes_free(&b);
}

/* Encode refuses bad arguments with TROVE_ERR_INVALID and leaves out as it was. */
static void expect_invalid(uint64_t volume_size, uint32_t block_size, uint32_t flags,
                           const struct trove_digest *slots, uint64_t n, const char *what)
{
    struct trove_bytes b = {0};
    uint8_t *ptr;
    size_t cap;
    int rc;
    CHECK_EQ_INT(trove_bytes_append(&b, "keep", 4), TROVE_OK);
    ptr = b.ptr;
    cap = b.cap;
    rc = trove_recipe_v1_encode(volume_size, block_size, flags, 0, slots, n, &b);
    if (rc != TROVE_ERR_INVALID)
        fprintf(stderr, "%s: got %d want TROVE_ERR_INVALID\n", what, rc);
    CHECK_EQ_INT(rc, TROVE_ERR_INVALID);
    CHECK(b.ptr == ptr && b.cap == cap);
    CHECK_EQ_INT(b.len, 4);
    CHECK(memcmp(b.ptr, "keep", 4) == 0);
    trove_bytes_free(&b);
}

static void test_encode_invalid(void)
{
    struct trove_digest s[4] = {{{0}}};
    expect_invalid(3000, 3000, 0, s, 1, "block size 3000");
    expect_invalid(4096, 2048, 0, s, 2, "block size 2048");
    expect_invalid(1ull << 31, 1u << 31, 0, s, 1, "block size 2^31");
    expect_invalid(0, 0, 0, NULL, 0, "block size 0");
    expect_invalid(4096, 4096, 4, s, 1, "flags bit 2");
    expect_invalid(4096, 4096, 0x80000000u, s, 1, "flags bit 31");
    expect_invalid(4096, 4096, 0, s, 2, "one slot more");
    expect_invalid(8193, 4096, 0, s, 2, "one slot less");
    expect_invalid(0, 4096, 0, s, 1, "slots for an empty volume");
    expect_invalid(4096, 4096, 0, NULL, 1, "no slots");
    /* Over the limit: the count agrees with the size, and slots is never read. */
    expect_invalid((TROVE_RECIPE_MAX_SLOTS + 1) * 4096, 4096, 0, s, TROVE_RECIPE_MAX_SLOTS + 1,
                   "2^32 + 1 slots");
    expect_invalid(UINT64_MAX, 4096, 0, s, UINT64_MAX / 4096 + 1, "2^64-1 bytes");
    CHECK_EQ_INT(trove_recipe_v1_encode(0, 4096, 0, 0, NULL, 0, NULL), TROVE_ERR_INVALID);
}

static void test_decode_invalid(void)
{
    static const uint8_t byte[1];
    struct trove_recipe_v1 r;
    struct trove_diag diag = {0};
    CHECK_EQ_INT(trove_recipe_v1_decode(NULL, 64, &r, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(diag.code, TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v1_decode(byte, 1, NULL, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_recipe_v1_decode(NULL, 0, &r, NULL), TROVE_ERR_TRUNCATED);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_roundtrips);
    RUN(test_golden);
    RUN(test_ten_tib);
    RUN(test_bad_input);
    RUN(test_corpus_seeds);
    RUN(test_encode_invalid);
    RUN(test_decode_invalid);
    return test_done();
}
