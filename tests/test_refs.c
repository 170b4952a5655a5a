/*
 * test_refs.c: the volume-name rule (src/store/name.c) and the reference-count file format
 * v1 (src/store/refs.c) — round trips (empty, several volumes and entries, names at the
 * 128-byte maximum, extreme field values), the golden vector tests/vectors/refs_v1.bin,
 * every check of the decoder with its error code and offset, every truncation and byte
 * flip of a valid file, and the encoder's argument checks (which must leave the output as
 * it was). With TROVE_REFS_CORPUS=<dir> set, the valid and broken files built here are also
 * written to <dir> as the fuzz seed corpus (fuzz/corpus/fuzz_refs/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "store/refs.h"
#include "testutil.h"
#include "trove/volume.h"

#define HDR TROVE__REFS_HEADER
#define BREC TROVE__REFS_BASIS_BYTES
#define EREC TROVE__REFS_ENTRY_BYTES

static void corpus_write(const char *name, const uint8_t *buf, size_t len)
{
    test_corpus_write("TROVE_REFS_CORPUS", name, NULL, 0, buf, len);
}

static int printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return 0;
    return 1;
}

/* ---- volume names ---------------------------------------------------------------------- */

static void expect_name_ok(const char *name)
{
    struct trove_diag diag = {0};
    int rc = trove_volume_name_check(name, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "name \"%s\": %s\n", name, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK_EQ_INT(trove_volume_name_check(name, NULL), TROVE_OK);
}

/* Refused with TROVE_ERR_INVALID at want_off, with a printable message containing needle. */
static void expect_name_bad(const char *name, uint64_t want_off, const char *needle,
                            const char *what)
{
    struct trove_diag diag = {0};
    int rc = trove_volume_name_check(name, &diag);
    if (rc != TROVE_ERR_INVALID)
        fprintf(stderr, "%s: got %d want TROVE_ERR_INVALID\n", what, rc);
    CHECK_EQ_INT(rc, TROVE_ERR_INVALID);
    CHECK_EQ_INT(diag.code, TROVE_ERR_INVALID);
    CHECK_EQ_INT(diag.offset, want_off);
    CHECK(diag.msg[0] != 0);
    CHECK(printable(diag.msg));
    CHECK(strlen(diag.msg) < sizeof diag.msg - 1); /* not cut off by the buffer */
    if (needle && !strstr(diag.msg, needle)) {
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, diag.msg, needle);
        CHECK(0);
    }
    CHECK_EQ_INT(trove_volume_name_check(name, NULL), TROVE_ERR_INVALID);
}

static void test_names(void)
{
    char n128[129], n129[130], *huge;

    memset(n128, 'x', 128);
    n128[128] = '\0';
    memset(n129, 'y', 129);
    n129[129] = '\0';

    expect_name_ok("a");
    expect_name_ok("disk.img");
    expect_name_ok("A-b_c.9");
    expect_name_ok(n128);
    expect_name_ok("0");
    expect_name_ok("_x");
    expect_name_ok("a.");
    expect_name_ok("a-");
    expect_name_ok("a..b");
    expect_name_ok("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-");

    expect_name_bad(NULL, 0, "NULL", "NULL");
    expect_name_bad("", 0, "empty", "empty");
    expect_name_bad(".", 0, "start with '.'", "\".\"");
    expect_name_bad("..", 0, "start with '.'", "\"..\"");
    expect_name_bad(".hidden", 0, "\".hidden\"", ".hidden");
    expect_name_bad("-x", 0, "starts with '-'", "-x");
    expect_name_bad("a/b", 1, "'/'", "a/b");
    expect_name_bad("../x", 0, "starts with '.'", "../x");
    expect_name_bad("a b", 1, "byte 0x20", "a b");
    expect_name_bad(n129, 128, "129 bytes", "129 bytes");
    expect_name_bad("\xc3\xa9", 0, "\"\\xc3\\xa9\"", "e-acute");
    expect_name_bad("a\n", 1, "\"a\\x0a\"", "a newline");
    expect_name_bad("a\"b", 1, "\"a\\\"b\"", "a quote");
    expect_name_bad("ok\\", 2, "\"ok\\\\\"", "a backslash");
    expect_name_bad("abc\x7f", 3, "0x7f", "DEL");
    /* A long name is quoted cut short ("...") and still reports its length. */
    expect_name_bad(n129, 128, "yyy...\"", "129 bytes, quoted short");
    huge = malloc(10001);
    CHECK(huge != NULL);
    if (huge) {
        memset(huge, 0x01, 10000);
        huge[10000] = '\0';
        expect_name_bad(huge, 128, "10000 bytes", "10,000 control bytes");
        memset(huge, 'a', 10000);
        huge[5000] = '/';
        expect_name_bad(huge, 128, "over the limit", "long, with a slash");
        free(huge);
    }
}

/* ---- refs format ----------------------------------------------------------------------- */

static struct trove__refs_basis basis_of(const char *name, uint64_t generation, uint64_t checksum)
{
    struct trove__refs_basis b;
    memset(&b, 0, sizeof b);
    snprintf(b.name, sizeof b.name, "%s", name);
    b.generation = generation;
    b.checksum = checksum;
    return b;
}

static struct trove__refs_entry entry_of(const void *data, size_t len, uint64_t committed,
                                         uint32_t dict_index)
{
    struct trove__refs_entry e;
    memset(&e, 0, sizeof e);
    trove_digest_of(data, len, &e.d);
    e.committed = committed;
    e.dict_index = dict_index;
    return e;
}

static void fix_checksum(uint8_t *buf, size_t len)
{
    trove__put_le64(buf + len - 8, trove_checksum64(buf, len - 8));
}

/* Encode after a 3-byte prefix (so the decoder sees an unaligned buffer and the encoder must
 * append), decode, compare every record, and re-encode the decoded records to the same bytes. */
static void roundtrip(const struct trove__refs_basis *basis, size_t nb,
                      const struct trove__refs_entry *entries, size_t ne, uint32_t dict_size,
                      const char *what)
{
    struct trove_bytes b = {0}, again = {0};
    struct trove__refs_basis *rb = NULL;
    struct trove__refs_entry *re = NULL;
    struct trove__refs_view v;
    struct trove_diag diag = {0};
    int rc;

    CHECK_EQ_INT(trove_bytes_append(&b, "abc", 3), TROVE_OK);
    rc = trove__refs_encode(basis, nb, entries, ne, dict_size, &b);
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: encode %d\n", what, rc);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        goto out;
    CHECK_EQ_INT(b.len, 3 + 48 + BREC * nb + EREC * ne);
    CHECK(memcmp(b.ptr, "abc", 3) == 0);
    rc = trove__refs_decode(b.ptr + 3, b.len - 3, &v, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "%s: %s\n", what, diag.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        goto out;
    CHECK_EQ_INT(v.volume_count, nb);
    CHECK_EQ_INT(v.entry_count, ne);
    CHECK(v.dict_size == dict_size);
    CHECK(v.basis == b.ptr + 3 + HDR);
    CHECK(v.entries == b.ptr + 3 + HDR + BREC * nb);
    rb = calloc(nb + 1, sizeof *rb);
    re = calloc(ne + 1, sizeof *re);
    CHECK(rb && re);
    if (!rb || !re)
        goto out;
    for (size_t i = 0; i < nb; i++) {
        trove__refs_basis_at(&v, i, &rb[i]);
        CHECK(strcmp(rb[i].name, basis[i].name) == 0);
        CHECK(rb[i].generation == basis[i].generation);
        CHECK(rb[i].checksum == basis[i].checksum);
    }
    for (size_t i = 0; i < ne; i++) {
        trove__refs_entry_at(&v, i, &re[i]);
        CHECK(trove_digest_equal(&re[i].d, &entries[i].d));
        CHECK(re[i].committed == entries[i].committed);
        CHECK(re[i].dict_index == entries[i].dict_index);
    }
    CHECK_EQ_INT(trove__refs_encode(rb, nb, re, ne, v.dict_size, &again), TROVE_OK);
    CHECK(again.len == b.len - 3 && memcmp(again.ptr, b.ptr + 3, again.len) == 0);
out:
    free(rb);
    free(re);
    trove_bytes_free(&b);
    trove_bytes_free(&again);
}

static void test_roundtrips(void)
{
    static struct trove__refs_entry many[1000];
    struct trove__refs_basis bs[4];
    struct trove__refs_entry es[3];
    char n128[129];
    uint64_t seed = 11;

    roundtrip(NULL, 0, NULL, 0, 0, "empty");
    roundtrip(NULL, 0, NULL, 0, UINT32_MAX, "empty with a dictionary");

    bs[0] = basis_of("alpha", 1, 0x1111);
    bs[1] = basis_of("beta.snap-1", UINT64_MAX, UINT64_MAX);
    bs[2] = basis_of("gamma_2", 0, 0);
    roundtrip(bs, 3, NULL, 0, 0, "volumes, all empty");
    es[0] = entry_of("x", 1, 1, 0);
    roundtrip(NULL, 0, es, 1, 1, "an entry, no volumes");
    for (size_t i = 0; i < 1000; i++) {
        uint64_t r = test_rand(&seed);
        many[i] = entry_of(&r, sizeof r, 1 + r % 100000, (uint32_t)(999 - i));
    }
    many[7].committed = UINT64_MAX;
    roundtrip(bs, 3, many, 1000, 1000, "3 volumes, 1000 entries");
    es[1] = entry_of("y", 1, 2, UINT32_MAX - 1); /* the largest index there can be */
    roundtrip(bs, 2, es, 2, UINT32_MAX, "index UINT32_MAX - 1");

    /* Names at the 128-byte maximum fill their field with no NUL. "a" < "aaa...a" <
     * "aaa...ab" < "b" in strcmp order. */
    memset(n128, 'a', 128);
    n128[128] = '\0';
    bs[0] = basis_of("a", 5, 6);
    bs[1] = basis_of(n128, 7, 8);
    n128[127] = 'b';
    bs[2] = basis_of(n128, 9, 10);
    bs[3] = basis_of("b", 11, 12);
    CHECK_EQ_INT(strlen(bs[1].name), 128);
    roundtrip(bs, 4, es, 2, UINT32_MAX, "names of 128 bytes");
    {
        struct trove_bytes b = {0};
        CHECK_EQ_INT(trove__refs_encode(bs, 4, NULL, 0, 0, &b), TROVE_OK);
        if (b.len == 48 + 4 * BREC) {
            CHECK(memchr(b.ptr + HDR + BREC, 0, 128) == NULL);
            CHECK(b.ptr[HDR + 2 * BREC + 127] == 'b');
            CHECK(b.ptr[HDR + 1] == 0 && b.ptr[HDR + 127] == 0); /* "a" is NUL-padded */
            corpus_write("max-names.bin", b.ptr, b.len);
        }
        trove_bytes_free(&b);
    }
}

/* The golden file: volumes "a" (generation 3) and "disk.img" (generation 1) with fixed
 * recipe checksums; entries for the digests of "hello" and "world" and for the digest whose
 * 16 bytes are all 0xAB; dict_size 4. docs/formats/store.md shows it as hex. */
#define GOLDEN_LEN (48 + 2 * BREC + 3 * EREC)

static void golden(struct trove_bytes *b, struct trove__refs_basis bs[2],
                   struct trove__refs_entry es[3])
{
    bs[0] = basis_of("a", 3, 0x0123456789abcdefull);
    bs[1] = basis_of("disk.img", 1, 0xfedcba9876543210ull);
    es[0] = entry_of("hello", 5, 2, 0);
    es[1] = entry_of("world", 5, 1, 2);
    memset(&es[2], 0, sizeof es[2]);
    memset(es[2].d.b, 0xAB, 16);
    es[2].committed = 7;
    es[2].dict_index = 3;
    CHECK_EQ_INT(trove__refs_encode(bs, 2, es, 3, 4, b), TROVE_OK);
}

static void test_golden(void)
{
    struct trove_bytes b = {0};
    struct trove__refs_basis bs[2], rb;
    struct trove__refs_entry es[3], re;
    struct trove__refs_view v;
    struct trove_diag diag = {0};
    uint8_t *file;
    size_t len = 0;

    golden(&b, bs, es);
    CHECK_EQ_INT(b.len, GOLDEN_LEN);
    CHECK_EQ_INT(b.len, 432);
    test_check_vector("refs_v1.bin", b.ptr, b.len);
    corpus_write("golden.bin", b.ptr, b.len);

    file = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/refs_v1.bin", &len);
    CHECK(file != NULL);
    if (file) {
        CHECK_EQ_INT(len, GOLDEN_LEN);
        CHECK_EQ_INT(trove__refs_decode(file, len, &v, &diag), TROVE_OK);
        CHECK_EQ_INT(v.volume_count, 2);
        CHECK_EQ_INT(v.entry_count, 3);
        CHECK_EQ_INT(v.dict_size, 4);
        for (int i = 0; i < 2 && v.volume_count == 2; i++) {
            trove__refs_basis_at(&v, (uint64_t)i, &rb);
            CHECK(strcmp(rb.name, bs[i].name) == 0);
            CHECK(rb.generation == bs[i].generation && rb.checksum == bs[i].checksum);
        }
        for (int i = 0; i < 3 && v.entry_count == 3; i++) {
            trove__refs_entry_at(&v, (uint64_t)i, &re);
            CHECK(trove_digest_equal(&re.d, &es[i].d));
            CHECK(re.committed == es[i].committed && re.dict_index == es[i].dict_index);
        }
        /* The fields as the format spec places them. */
        CHECK(memcmp(file, "TROVREFS", 8) == 0);
        CHECK(file[8] == 1 && file[12] == 0 && file[16] == 2 && file[24] == 3);
        CHECK(file[32] == 4 && file[36] == 0);
        CHECK(memcmp(file + 40, "a\0\0", 3) == 0);
        CHECK(file[40 + 128] == 3 && file[40 + 136] == 0xef && file[40 + 143] == 0x01);
        CHECK(memcmp(file + 184, "disk.img\0", 9) == 0);
        CHECK(file[184 + 128] == 1 && file[184 + 136] == 0x10 && file[184 + 143] == 0xfe);
        CHECK(memcmp(file + 328, es[0].d.b, 16) == 0);
        CHECK(file[328 + 16] == 2 && file[328 + 24] == 0);
        CHECK(file[360 + 16] == 1 && file[360 + 24] == 2);
        CHECK(file[392] == 0xAB && file[392 + 15] == 0xAB);
        CHECK(file[392 + 16] == 7 && file[392 + 24] == 3);
        CHECK(trove__get_le64(file + 424) == trove_checksum64(file, 424));
    }
    free(file);
    trove_bytes_free(&b);
}

/* The decoder under test, for test_expect_decode_error. */
static int decode_refs(const uint8_t *buf, size_t len, void *out, struct trove_diag *diag)
{
    return trove__refs_decode(buf, len, out, diag);
}

static void expect_bad(const uint8_t *buf, size_t len, int want, uint64_t want_off,
                       const char *needle, const char *what)
{
    test_expect_decode_error(decode_refs, sizeof(struct trove__refs_view), buf, len, want, want_off, needle, what);
}

/* A fresh copy of the golden file in work[] to break one field of. */
static uint8_t work[1024];

static uint8_t *mutant(const struct trove_bytes *g)
{
    memcpy(work, g->ptr, g->len);
    return work;
}

/* The same, with the checksum made right again after the change: record checks. */
static void expect_bad_record(size_t n, uint64_t want_off, const char *needle, const char *what,
                              const char *corpus_name)
{
    fix_checksum(work, n);
    expect_bad(work, n, TROVE_ERR_CORRUPT, want_off, needle, what);
    if (corpus_name)
        corpus_write(corpus_name, work, n);
}

static void test_bad_header(void)
{
    struct trove_bytes g = {0};
    struct trove__refs_basis bs[2];
    struct trove__refs_entry es[3];
    const size_t n = GOLDEN_LEN;

    golden(&g, bs, es);
    CHECK_EQ_INT(g.len, n);
    if (g.len != n)
        goto out;

    /* Every prefix: under 48 bytes the header is short, from 48 on the records are. */
    for (size_t len = 0; len < n; len++)
        expect_bad(g.ptr, len, TROVE_ERR_TRUNCATED, len, "cut short", "prefix");
    corpus_write("short-header.bin", g.ptr, 30);
    corpus_write("short-basis.bin", g.ptr, 100);
    corpus_write("no-checksum.bin", g.ptr, n - 8);

    mutant(&g)[0] = 'X';
    expect_bad(work, n, TROVE_ERR_MAGIC, 0, "TROVREFS", "magic");
    corpus_write("bad-magic.bin", work, n);
    memcpy(mutant(&g), "TROVRCP1", 8); /* a recipe is not a refs file */
    expect_bad(work, n, TROVE_ERR_MAGIC, 0, NULL, "recipe magic");

    trove__put_le32(mutant(&g) + 8, 2);
    expect_bad(work, n, TROVE_ERR_VERSION, 8,
               "written by a newer trove; this build reads version 1", "version 2");
    corpus_write("version-2.bin", work, n);
    trove__put_le32(mutant(&g) + 8, UINT32_MAX);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "newer", "version 2^32-1");
    trove__put_le32(mutant(&g) + 8, 0);
    expect_bad(work, n, TROVE_ERR_VERSION, 8, "reads version 1", "version 0");

    /* Header errors come before the checksum: these are not fixed up. */
    trove__put_le32(mutant(&g) + 12, 1);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 12, "flags", "flags bit 0");
    corpus_write("flags.bin", work, n);
    trove__put_le32(mutant(&g) + 12, 0x80000000u);
    expect_bad(work, n, TROVE_ERR_CORRUPT, 12, "flags", "flags bit 31");

    mutant(&g)[39] = 1;
    expect_bad(work, n, TROVE_ERR_CORRUPT, 36, "reserved", "reserved");
    corpus_write("reserved.bin", work, n);

    trove__put_le64(mutant(&g) + 16, TROVE__REFS_MAX_VOLUMES + 1);
    expect_bad(work, n, TROVE_ERR_LIMIT, 16, "volumes", "2^20 + 1 volumes");
    corpus_write("volumes-over-limit.bin", work, n);
    trove__put_le64(work + 16, UINT64_MAX);
    expect_bad(work, n, TROVE_ERR_LIMIT, 16, NULL, "2^64 - 1 volumes");
    trove__put_le64(mutant(&g) + 24, TROVE__REFS_MAX_ENTRIES + 1);
    expect_bad(work, n, TROVE_ERR_LIMIT, 24, "entries", "2^32 + 1 entries");
    corpus_write("entries-over-limit.bin", work, n);
    trove__put_le64(work + 24, UINT64_MAX);
    expect_bad(work, n, TROVE_ERR_LIMIT, 24, NULL, "2^64 - 1 entries");
    /* Both at their limits: allowed by the header, then far too short; no overflow. */
    trove__put_le64(mutant(&g) + 16, TROVE__REFS_MAX_VOLUMES);
    trove__put_le64(work + 24, TROVE__REFS_MAX_ENTRIES);
    expect_bad(work, n, TROVE_ERR_TRUNCATED, n, NULL, "both counts at the limit");
    corpus_write("counts-at-limit.bin", work, n);

    /* The counts disagree with the length. */
    trove__put_le64(mutant(&g) + 16, 3);
    expect_bad(work, n, TROVE_ERR_TRUNCATED, n, "need", "one volume more");
    trove__put_le64(mutant(&g) + 24, 4);
    expect_bad(work, n, TROVE_ERR_TRUNCATED, n, "need", "one entry more");
    trove__put_le64(mutant(&g) + 16, 1);
    expect_bad(work, n, TROVE_ERR_CORRUPT, n - BREC, "stray", "one volume less");
    corpus_write("volumes-1.bin", work, n);
    trove__put_le64(mutant(&g) + 24, 0);
    expect_bad(work, n, TROVE_ERR_CORRUPT, n - 3 * EREC, "stray", "no entries");

    mutant(&g)[n] = 0;
    expect_bad(work, n + 1, TROVE_ERR_CORRUPT, n, "stray", "trailing byte");
    corpus_write("trailing.bin", work, n + 1);
    memset(work + n, 0, 100);
    expect_bad(work, n + 100, TROVE_ERR_CORRUPT, n, NULL, "trailing 100 bytes");

    /* The checksum covers the header as well as the records. */
    trove__put_le32(mutant(&g) + 32, 5);
    expect_bad(work, n, TROVE_ERR_CHECKSUM, n - 8, "checksum", "dict_size changed");
    corpus_write("dict-size-changed.bin", work, n);
    mutant(&g)[n - 1] ^= 0x80;
    expect_bad(work, n, TROVE_ERR_CHECKSUM, n - 8, NULL, "flipped checksum");
    corpus_write("flipped-checksum.bin", work, n);
    mutant(&g)[200] ^= 0x01;
    corpus_write("flipped-generation.bin", work, n);

    /* Every byte flipped, three ways: past the header only the checksum can catch it; in the
     * header it is the checksum or a header check, never success. */
    for (size_t at = 0; at < n; at++) {
        static const uint8_t flips[] = {0x01, 0x80, 0xff};
        for (size_t k = 0; k < sizeof flips; k++) {
            struct trove__refs_view v;
            int rc;
            mutant(&g)[at] ^= flips[k];
            if (at >= HDR) {
                expect_bad(work, n, TROVE_ERR_CHECKSUM, n - 8, NULL, "flipped byte");
                continue;
            }
            rc = trove__refs_decode(work, n, &v, NULL);
            CHECK(rc == TROVE_ERR_CHECKSUM || rc == TROVE_ERR_MAGIC ||
                  rc == TROVE_ERR_VERSION || rc == TROVE_ERR_CORRUPT ||
                  rc == TROVE_ERR_LIMIT || rc == TROVE_ERR_TRUNCATED);
        }
    }
out:
    trove_bytes_free(&g);
}

static void test_bad_records(void)
{
    struct trove_bytes g = {0};
    struct trove__refs_basis bs[2];
    struct trove__refs_entry es[3];
    struct trove__refs_view v;
    const size_t n = GOLDEN_LEN;
    const uint64_t b0 = HDR, b1 = HDR + BREC, e0 = HDR + 2 * BREC;
    const uint64_t e1 = e0 + EREC, e2 = e0 + 2 * EREC;

    golden(&g, bs, es);
    CHECK_EQ_INT(g.len, n);
    if (g.len != n)
        goto out;

    /* Names: each breaks the volume-name rule, and the message carries the rule's words. */
    memcpy(mutant(&g) + b1, "disk/img", 8);
    expect_bad_record(n, b1, "'/'", "a slash", "name-slash.bin");
    mutant(&g)[b0] = '.';
    expect_bad_record(n, b0, "start with '.'", "name \".\"", "name-dot.bin");
    mutant(&g)[b0] = '-';
    expect_bad_record(n, b0, "start with '.' or '-'", "name \"-\"", NULL);
    mutant(&g)[b0] = 0;
    expect_bad_record(n, b0, "empty", "empty name", "name-empty.bin");
    mutant(&g)[b1 + 4] = 0xff;
    expect_bad_record(n, b1, "0xff", "a byte >= 0x80", NULL);
    mutant(&g)[b0 + 1] = '\n';
    expect_bad_record(n, b0, "0x0a", "a newline", NULL);
    memset(mutant(&g) + b1, 'z', 128); /* 128 bytes is fine, the padding can be empty */
    fix_checksum(work, n);
    CHECK_EQ_INT(trove__refs_decode(work, n, &v, NULL), TROVE_OK);

    /* Padding after the first NUL must be NUL. */
    mutant(&g)[b0 + 2] = 'x';
    expect_bad_record(n, b0, "padding", "a byte after the NUL", "name-padding.bin");
    mutant(&g)[b1 + 127] = 1;
    expect_bad_record(n, b1, "padding", "the field's last byte", NULL);

    /* Order: strictly increasing. */
    memcpy(mutant(&g) + b0, g.ptr + b1, BREC);
    memcpy(work + b1, g.ptr + b0, BREC);
    expect_bad_record(n, b1, "sorts before", "swapped records", "unsorted.bin");
    memcpy(mutant(&g) + b1, g.ptr + b0, 128);
    expect_bad_record(n, b1, "repeats", "a repeated name", "repeated-name.bin");
    memset(mutant(&g) + b1, 0, 128);
    work[b1] = 'A'; /* 'A' < 'a' */
    expect_bad_record(n, b1, "sorts before", "upper case sorts first", NULL);

    /* Entries. */
    memset(mutant(&g) + e1, 0, 16);
    expect_bad_record(n, e1, "zero digest", "zero digest", "zero-digest.bin");
    trove__put_le64(mutant(&g) + e2 + 16, 0);
    expect_bad_record(n, e2, "committed count of 0", "committed 0", "committed-0.bin");
    trove__put_le32(mutant(&g) + e0 + 24, 4);
    expect_bad_record(n, e0, "dict index 4", "dict_index = dict_size", "dict-index-4.bin");
    trove__put_le32(mutant(&g) + e0 + 24, UINT32_MAX);
    expect_bad_record(n, e0, "past the dictionary", "dict_index 2^32 - 1", NULL);
    trove__put_le32(mutant(&g) + 32, 3); /* entry 2 has index 3 */
    expect_bad_record(n, e2, "dictionary size 3", "dict_size 3", "dict-size-3.bin");
    trove__put_le32(mutant(&g) + 32, 0);
    expect_bad_record(n, e0, "dictionary size 0", "dict_size 0", NULL);
    mutant(&g)[e1 + 31] = 0x40;
    expect_bad_record(n, e1, "reserved", "entry reserved", "entry-reserved.bin");

    /* Not the decoder's job: repeated digests and dict indices decode (the loader refuses
     * them), as does a dict_size far above the entry count. */
    memcpy(mutant(&g) + e1, g.ptr + e0, EREC);
    fix_checksum(work, n);
    CHECK_EQ_INT(trove__refs_decode(work, n, &v, NULL), TROVE_OK);
    corpus_write("duplicate-entry.bin", work, n);
out:
    trove_bytes_free(&g);
}

/* More valid seeds: small files of several shapes. */
static void test_corpus_seeds(void)
{
    struct trove_bytes b = {0};
    struct trove__refs_basis bs[3];
    struct trove__refs_entry es[2];
    if (!getenv("TROVE_REFS_CORPUS"))
        return;
    CHECK_EQ_INT(trove__refs_encode(NULL, 0, NULL, 0, 0, &b), TROVE_OK);
    corpus_write("empty.bin", b.ptr, b.len);
    b.len = 0;
    bs[0] = basis_of("vol", 1, 2);
    CHECK_EQ_INT(trove__refs_encode(bs, 1, NULL, 0, 0, &b), TROVE_OK);
    corpus_write("one-empty-volume.bin", b.ptr, b.len);
    b.len = 0;
    bs[1] = basis_of("vol.snap", 1, 2);
    bs[2] = basis_of("vol2", 9, 3);
    es[0] = entry_of("x", 1, 3, 0);
    es[1] = entry_of("y", 1, 1, 9);
    CHECK_EQ_INT(trove__refs_encode(bs, 3, es, 2, 10, &b), TROVE_OK);
    corpus_write("three-volumes.bin", b.ptr, b.len);
    trove_bytes_free(&b);
}

/* Encode must return `want` and leave out exactly as it was. */
static void expect_encode_fails(const struct trove__refs_basis *basis, size_t nb,
                                const struct trove__refs_entry *entries, size_t ne,
                                uint32_t dict_size, int want, const char *what)
{
    struct trove_bytes b = {0};
    uint8_t *ptr;
    size_t cap;
    int rc;
    CHECK_EQ_INT(trove_bytes_append(&b, "keep", 4), TROVE_OK);
    ptr = b.ptr;
    cap = b.cap;
    rc = trove__refs_encode(basis, nb, entries, ne, dict_size, &b);
    if (rc != want)
        fprintf(stderr, "%s: got %d want %d\n", what, rc, want);
    CHECK_EQ_INT(rc, want);
    CHECK(b.ptr == ptr && b.cap == cap);
    CHECK_EQ_INT(b.len, 4);
    CHECK(memcmp(b.ptr, "keep", 4) == 0);
    trove_bytes_free(&b);
}

static void test_encode_invalid(void)
{
    struct trove__refs_basis bs[3];
    struct trove__refs_entry es[2];
    const int inv = TROVE_ERR_INVALID;

    bs[0] = basis_of("a", 1, 1);
    bs[1] = basis_of("b", 1, 1);
    bs[2] = basis_of("a", 1, 1);
    es[0] = entry_of("x", 1, 1, 0);
    es[1] = entry_of("y", 1, 1, 1);
    expect_encode_fails(bs + 1, 2, NULL, 0, 0, inv, "unsorted basis");
    expect_encode_fails(bs, 3, NULL, 0, 0, inv, "unsorted basis, a repeat");
    bs[1] = basis_of("a", 2, 2);
    expect_encode_fails(bs, 2, NULL, 0, 0, inv, "a repeated name");
    bs[1] = basis_of(".b", 1, 1);
    expect_encode_fails(bs, 2, NULL, 0, 0, inv, "name \".b\"");
    bs[1] = basis_of("b/c", 1, 1);
    expect_encode_fails(bs, 2, NULL, 0, 0, inv, "name \"b/c\"");
    bs[1] = basis_of("", 1, 1);
    expect_encode_fails(bs + 1, 1, NULL, 0, 0, inv, "empty name");
    memset(bs[1].name, 'b', sizeof bs[1].name); /* no NUL anywhere in the array */
    expect_encode_fails(bs, 2, NULL, 0, 0, inv, "an unterminated name");
    bs[1] = basis_of("b", 1, 1);
    {
        struct trove_bytes ok = {0};
        CHECK_EQ_INT(trove__refs_encode(bs, 2, es, 2, 2, &ok), TROVE_OK); /* the base is valid */
        trove_bytes_free(&ok);
    }

    memset(es[1].d.b, 0, 16);
    expect_encode_fails(bs, 2, es, 2, 2, inv, "zero digest");
    es[1] = entry_of("y", 1, 0, 1);
    expect_encode_fails(bs, 2, es, 2, 2, inv, "committed 0");
    es[1] = entry_of("y", 1, 1, 2);
    expect_encode_fails(bs, 2, es, 2, 2, inv, "dict_index = dict_size");
    expect_encode_fails(bs, 2, es, 1, 0, inv, "dict_size 0");
    es[1] = entry_of("y", 1, 1, UINT32_MAX);
    expect_encode_fails(bs, 2, es, 2, UINT32_MAX, inv, "dict_index 2^32 - 1");

    expect_encode_fails(NULL, 1, NULL, 0, 0, inv, "NULL basis");
    expect_encode_fails(NULL, 0, NULL, 1, 1, inv, "NULL entries");
    /* Over the limits: refused before any record is read. */
    expect_encode_fails(bs, TROVE__REFS_MAX_VOLUMES + 1, NULL, 0, 0, TROVE_ERR_LIMIT,
                        "2^20 + 1 volumes");
    expect_encode_fails(NULL, 0, es, (size_t)TROVE__REFS_MAX_ENTRIES + 1, 2, TROVE_ERR_LIMIT,
                        "2^32 + 1 entries");
    CHECK_EQ_INT(trove__refs_encode(NULL, 0, NULL, 0, 0, NULL), TROVE_ERR_INVALID);
}

static void test_decode_invalid(void)
{
    static const uint8_t byte[1];
    struct trove__refs_view v;
    struct trove_diag diag = {0};
    CHECK_EQ_INT(trove__refs_decode(NULL, 48, &v, &diag), TROVE_ERR_INVALID);
    CHECK_EQ_INT(diag.code, TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove__refs_decode(byte, 1, NULL, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove__refs_decode(NULL, 0, &v, NULL), TROVE_ERR_TRUNCATED);
}

int main(void)
{
    test_names();
    test_roundtrips();
    test_golden();
    test_bad_header();
    test_bad_records();
    test_corpus_seeds();
    test_encode_invalid();
    test_decode_invalid();
    return test_done();
}
