/*
 * test_bundle.c: the capture bundle (src/columnar/bundle*.c) — write/read round trips of
 * stored and deflated bundles from a file and from memory; byte-identical output for the
 * same entries, in several time zones; the name rule at write and at open (zips crafted
 * here byte by byte with each bad name, a NUL, a duplicate, too many entries, too many
 * declared bytes); a bundle zipped again as a folder, with directory entries and junk beside
 * it, and the errors that come with folders; every read check: a declared size over max, a
 * deflate bomb by ratio, a header that lies short or long, a flipped data byte (CRC), an
 * unsupported method; every truncation and every byte flip of a small bundle; the
 * manifest's exact encoding, round trips at the integer limits and every encode and decode
 * error. With TROVE_BUNDLE_CORPUS=<dir> set, the bundles built here are also written to
 * <dir> as the fuzz target's seed corpus (fuzz/corpus/fuzz_bundle/).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"
#include "trove/bundle.h"

static char dir[64];

static void corpus_write(const char *name, const uint8_t *buf, size_t len)
{
    test_corpus_write("TROVE_BUNDLE_CORPUS", name, NULL, 0, buf, len);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* --- a byte-level zip builder, for archives libzip would not write --- */

struct zent {
    const char *name;
    size_t nlen;
    const uint8_t *data; /* the bytes as stored (compressed for method 8) */
    size_t dlen;
    uint16_t method;
    uint32_t usize; /* declared uncompressed size */
    uint32_t crc;
};

static void put16(struct trove_bytes *b, uint32_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    CHECK(trove_bytes_append(b, x, 2) == TROVE_OK);
}

static void put32(struct trove_bytes *b, uint32_t v)
{
    put16(b, v & 0xFFFF);
    put16(b, v >> 16);
}

static void header(struct trove_bytes *b, const struct zent *e, int central, uint32_t off)
{
    put32(b, central ? 0x02014b50 : 0x04034b50);
    if (central)
        put16(b, 0x031e); /* made by: Unix, 3.0 */
    put16(b, 20);         /* version needed */
    put16(b, 0);          /* flags */
    put16(b, e->method);
    put16(b, 0);    /* time 00:00:00 */
    put16(b, 0x21); /* date 1980-01-01 */
    put32(b, e->crc);
    put32(b, (uint32_t)e->dlen);
    put32(b, e->usize);
    put16(b, (uint32_t)e->nlen);
    put16(b, 0); /* extra */
    if (central) {
        put16(b, 0); /* comment */
        put16(b, 0); /* disk */
        put16(b, 0); /* internal attributes */
        put32(b, 0100644u << 16);
        put32(b, off);
    }
    CHECK(trove_bytes_append(b, e->name, e->nlen) == TROVE_OK);
}

static void build_zip(const struct zent *e, size_t n, struct trove_bytes *out)
{
    uint32_t *off = calloc(n ? n : 1, sizeof *off), cd, cdsize;
    out->len = 0;
    for (size_t i = 0; i < n; i++) {
        off[i] = (uint32_t)out->len;
        header(out, &e[i], 0, 0);
        CHECK(trove_bytes_append(out, e[i].data, e[i].dlen) == TROVE_OK);
    }
    cd = (uint32_t)out->len;
    for (size_t i = 0; i < n; i++)
        header(out, &e[i], 1, off[i]);
    cdsize = (uint32_t)out->len - cd;
    put32(out, 0x06054b50);
    put16(out, 0);
    put16(out, 0);
    put16(out, (uint32_t)n);
    put16(out, (uint32_t)n);
    put32(out, cdsize);
    put32(out, cd);
    put16(out, 0);
    free(off);
}

/* A stored entry, honestly described. */
static struct zent stored(const char *name, const void *data, size_t len)
{
    struct zent z = {name, strlen(name), data, len, 0, (uint32_t)len, 0};
    z.crc = (uint32_t)crc32(0, data, (uInt)len);
    return z;
}

/* Raw-deflate src into out (replaced). */
static void raw_deflate(const uint8_t *src, size_t len, struct trove_bytes *out)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    out->len = 0;
    CHECK(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    CHECK(trove_bytes_reserve(out, deflateBound(&zs, (uLong)len)) == TROVE_OK);
    zs.next_in = (Bytef *)src;
    zs.avail_in = (uInt)len;
    zs.next_out = out->ptr;
    zs.avail_out = (uInt)out->cap;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    out->len = zs.total_out;
    deflateEnd(&zs);
}

/* Open buf as a bundle and expect the error want with needle in the message. */
static void expect_open_error(const uint8_t *buf, size_t len, int want, const char *needle,
                              const char *what)
{
    struct trove_bundle *b = (struct trove_bundle *)&b;
    struct trove_bundle *sentinel = b;
    struct trove_diag diag = {0};
    int rc = trove_bundle_open_mem(buf, len, &b, &diag);
    if (rc != want)
        fprintf(stderr, "%s: got %d (%s: %s)\n", what, rc, trove_strerror(rc), diag.msg);
    CHECK_EQ_INT(rc, want);
    CHECK_EQ_INT(diag.code, want);
    CHECK(want == TROVE_OK ? b != sentinel : b == sentinel);
    if (rc == TROVE_OK)
        trove_bundle_close(b);
    b = sentinel;
    if (needle && !strstr(diag.msg, needle)) {
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, diag.msg, needle);
        CHECK(0);
    }
    CHECK_EQ_INT(trove_bundle_open_mem(buf, len, &b, NULL), want);
    if (want == TROVE_OK && b != sentinel)
        trove_bundle_close(b);
}

/* Open buf (which must open) and expect reading name with max to fail with want. */
static void expect_read_error(const uint8_t *buf, size_t len, const char *name, uint64_t max,
                              int want, const char *what)
{
    struct trove_bundle *b = NULL;
    struct trove_bytes out = {0};
    struct trove_diag diag = {0};
    int rc = trove_bundle_open_mem(buf, len, &b, &diag);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK) {
        fprintf(stderr, "%s: open: %s\n", what, diag.msg);
        return;
    }
    CHECK(trove_bytes_append(&out, "keep", 4) == TROVE_OK);
    rc = trove_bundle_read(b, name, max, &out, &diag);
    if (rc != want)
        fprintf(stderr, "%s: got %d (%s: %s)\n", what, rc, trove_strerror(rc), diag.msg);
    CHECK_EQ_INT(rc, want);
    CHECK_EQ_INT(diag.code, want);
    CHECK(out.len == 4 && memcmp(out.ptr, "keep", 4) == 0);
    CHECK_EQ_INT(trove_bundle_read(b, name, max, &out, NULL), want);
    CHECK_EQ_INT(out.len, 4);
    trove_bytes_free(&out);
    trove_bundle_close(b);
}

/* --- the entries of a sample bundle --- */

static uint8_t events[70000], names_tbl[3000];
static const char manifest_json[] = "{\"format\": \"trove-bundle\"}\n";

static size_t sample_entries(struct trove_bundle_entry *e)
{
    uint64_t seed = 7;
    for (size_t i = 0; i < sizeof events; i++)
        events[i] = (uint8_t)(i % 251 == 0 ? test_rand(&seed) : i * 7 / 13);
    for (size_t i = 0; i < sizeof names_tbl; i++)
        names_tbl[i] = (uint8_t)test_rand(&seed); /* incompressible */
    e[0] = (struct trove_bundle_entry){"events.parquet", events, sizeof events};
    e[1] = (struct trove_bundle_entry){"names.parquet", names_tbl, sizeof names_tbl};
    e[2] = (struct trove_bundle_entry){"empty.parquet", NULL, 0};
    e[3] = (struct trove_bundle_entry){"sub/d\xc3\xa9j\xc3\xa0.bin", (const uint8_t *)"abc", 3};
    e[4] = (struct trove_bundle_entry){"manifest.json", (const uint8_t *)manifest_json,
                                       sizeof manifest_json - 1};
    return 5;
}

static const uint8_t *memfind(const uint8_t *hay, size_t hlen, const uint8_t *needle, size_t n)
{
    for (size_t i = 0; n <= hlen && i <= hlen - n; i++)
        if (memcmp(hay + i, needle, n) == 0)
            return hay + i;
    return NULL;
}

/* Check that b holds exactly e[0..n), in order. */
static void check_contents(struct trove_bundle *b, const struct trove_bundle_entry *e, size_t n)
{
    struct trove_bytes out = {0};
    size_t idx;
    CHECK_EQ_INT(trove_bundle_count(b), n);
    for (size_t i = 0; i < n && i < trove_bundle_count(b); i++) {
        CHECK(strcmp(trove_bundle_name(b, i), e[i].name) == 0);
        CHECK(trove_bundle_find(b, e[i].name, &idx) == TROVE_OK && idx == i);
        out.len = 0;
        CHECK_EQ_INT(trove_bundle_read(b, e[i].name, e[i].len, &out, NULL), TROVE_OK);
        CHECK(out.len == e[i].len && (e[i].len == 0 || memcmp(out.ptr, e[i].data, e[i].len) == 0));
        /* one byte under the declared size is refused before reading */
        if (e[i].len) {
            struct trove_diag diag;
            out.len = 0;
            CHECK_EQ_INT(trove_bundle_read(b, e[i].name, e[i].len - 1, &out, &diag),
                         TROVE_ERR_LIMIT);
            CHECK(strlen(e[i].name) > 100 || strstr(diag.msg, e[i].name) != NULL);
            CHECK_EQ_INT(out.len, 0);
        }
    }
    CHECK(trove_bundle_name(b, n) == NULL);
    CHECK_EQ_INT(trove_bundle_find(b, "nope", NULL), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_bundle_read(b, "nope", 100, &out, NULL), TROVE_ERR_NOTFOUND);
    /* appending: two reads in a row give both */
    out.len = 0;
    CHECK_EQ_INT(trove_bundle_read(b, e[0].name, UINT64_MAX, &out, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_read(b, e[0].name, UINT64_MAX, &out, NULL), TROVE_OK);
    CHECK(out.len == 2 * e[0].len && memcmp(out.ptr + e[0].len, e[0].data, e[0].len) == 0);
    trove_bytes_free(&out);
}

static void test_round_trip(void)
{
    struct trove_bundle_entry e[8];
    size_t n = sample_entries(e), flen[2];
    uint8_t *file[2];
    char path[128], tmp[160];
    struct trove_bundle *b;
    struct trove_diag diag;

    for (int deflate = 0; deflate <= 1; deflate++) {
        snprintf(path, sizeof path, "%s/b%d.zip", dir, deflate);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        CHECK_EQ_INT(trove_bundle_write(path, e, n, deflate, &diag), TROVE_OK);
        CHECK(!exists(tmp));
        file[deflate] = test_read_file(path, &flen[deflate]);
        CHECK(file[deflate] != NULL);
        if (!file[deflate])
            return;
        CHECK_EQ_INT(trove_bundle_open_file(path, &b, &diag), TROVE_OK);
        check_contents(b, e, n);
        trove_bundle_close(b);
        CHECK_EQ_INT(trove_bundle_open_mem(file[deflate], flen[deflate], &b, &diag), TROVE_OK);
        check_contents(b, e, n);
        trove_bundle_close(b);
        /* the DOS date of the first local header is 1980-01-01 00:00:00 */
        CHECK(file[deflate][10] == 0 && file[deflate][11] == 0 && file[deflate][12] == 0x21 &&
              file[deflate][13] == 0);
        CHECK_EQ_INT(file[deflate][8], deflate ? 8 : 0);
        {
            /* In memory: the very bytes the file got, appended after what out held. */
            struct trove_bytes mem = {0};
            CHECK_EQ_INT(trove_bytes_append(&mem, "xy", 2), TROVE_OK);
            CHECK_EQ_INT(trove_bundle_write_mem(e, n, deflate, &mem, &diag), TROVE_OK);
            CHECK(mem.len == flen[deflate] + 2 && memcmp(mem.ptr, "xy", 2) == 0 &&
                  memcmp(mem.ptr + 2, file[deflate], flen[deflate]) == 0);
            mem.len = 2;
            CHECK_EQ_INT(trove_bundle_write_mem(e, 0, deflate, &mem, NULL), TROVE_ERR_INVALID);
            CHECK_EQ_INT(mem.len, 2);
            trove_bytes_free(&mem);
        }
    }
    /* stored: the tables appear as they are; deflated: the compressible one does not */
    CHECK(memfind(file[0], flen[0], events, sizeof events) != NULL);
    CHECK(memfind(file[0], flen[0], names_tbl, sizeof names_tbl) != NULL);
    CHECK(memfind(file[1], flen[1], events, 4096) == NULL);
    CHECK(flen[1] < flen[0] - sizeof events / 2);
    free(file[0]);
    free(file[1]);

    /* write replaces an existing bundle */
    snprintf(path, sizeof path, "%s/b0.zip", dir);
    CHECK_EQ_INT(trove_bundle_write(path, e + 3, 1, 0, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_open_file(path, &b, NULL), TROVE_OK);
    check_contents(b, e + 3, 1);
    trove_bundle_close(b);

    /* a missing file, and a file that is not a zip */
    snprintf(path, sizeof path, "%s/missing.zip", dir);
    b = NULL;
    CHECK_EQ_INT(trove_bundle_open_file(path, &b, &diag), -ENOENT);
    CHECK(b == NULL);
    expect_open_error((const uint8_t *)"hello, world, not a zip at all", 30, TROVE_ERR_MAGIC,
                      NULL, "not a zip");
    /* libzip reads an empty input as an archive of no entries: not a bundle */
    expect_open_error(NULL, 0, TROVE_ERR_CORRUPT, "no entries", "empty");
}

static void test_determinism(void)
{
    static const char *zones[] = {"UTC0", "EST5EDT", "JST-9", "<+14>-14", "<-12>12"};
    struct trove_bundle_entry e[8];
    size_t n = sample_entries(e), len0 = 0, len;
    uint8_t *first = NULL, *again;
    const char *old = getenv("TZ");
    char *saved = old ? strdup(old) : NULL;
    char path[128];

    snprintf(path, sizeof path, "%s/det.zip", dir);
    for (int deflate = 0; deflate <= 1; deflate++) {
        for (size_t z = 0; z < sizeof zones / sizeof *zones; z++) {
            setenv("TZ", zones[z], 1);
            tzset();
            CHECK_EQ_INT(trove_bundle_write(path, e, n, deflate, NULL), TROVE_OK);
            again = test_read_file(path, &len);
            CHECK(again != NULL);
            if (z == 0) {
                first = again;
                len0 = len;
                continue;
            }
            CHECK(again && len == len0 && memcmp(again, first, len) == 0);
            free(again);
        }
        free(first);
        first = NULL;
    }
    if (saved)
        setenv("TZ", saved, 1);
    else
        unsetenv("TZ");
    tzset();
    free(saved);
}

static void test_write_errors(void)
{
    static const char *bad[] = {"../x", "/x", "a\\b", "", "a//b", "a/", ".", "x/./y", "x/..",
                                "a b", "c:x", "tab\there", "\xff.bin", "\xc0\xae.bin", "del\x7f"};
    uint8_t data[4] = {1, 2, 3, 4};
    char path[128], tmp[160], longname[300];
    struct trove_bundle_entry e[3];
    struct trove_bundle *b;
    struct trove_diag diag;

    snprintf(path, sizeof path, "%s/w.zip", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    /* an earlier bundle at path survives every failed write */
    e[0] = (struct trove_bundle_entry){"old.bin", data, 4};
    CHECK_EQ_INT(trove_bundle_write(path, e, 1, 0, NULL), TROVE_OK);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e[0] = (struct trove_bundle_entry){"ok.bin", data, 4};
        e[1] = (struct trove_bundle_entry){bad[i], data, 4};
        CHECK_EQ_INT(trove_bundle_write(path, e, 2, (int)(i & 1), &diag), TROVE_ERR_INVALID);
        CHECK_EQ_INT(diag.code, TROVE_ERR_INVALID);
        CHECK(strstr(diag.msg, "entry 1") != NULL);
        CHECK(!exists(tmp));
    }
    memset(longname, 'n', 256);
    longname[256] = 0;
    e[1] = (struct trove_bundle_entry){longname, data, 4};
    CHECK_EQ_INT(trove_bundle_write(path, e, 2, 0, NULL), TROVE_ERR_INVALID);
    longname[255] = 0; /* 255 bytes is fine */
    e[1] = (struct trove_bundle_entry){longname, data, 4};
    CHECK_EQ_INT(trove_bundle_write(path, e, 2, 0, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_open_file(path, &b, NULL), TROVE_OK);
    check_contents(b, e, 2);
    trove_bundle_close(b);
    e[0] = (struct trove_bundle_entry){"old.bin", data, 4};
    CHECK_EQ_INT(trove_bundle_write(path, e, 1, 0, NULL), TROVE_OK);

    /* duplicates, NULL name, NULL data with a length, no entries, too many */
    e[1] = (struct trove_bundle_entry){"dup", data, 4};
    e[2] = (struct trove_bundle_entry){"dup", data, 1};
    CHECK_EQ_INT(trove_bundle_write(path, e, 3, 0, &diag), TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "\"dup\" appears twice") != NULL);
    e[1] = (struct trove_bundle_entry){NULL, data, 4};
    CHECK_EQ_INT(trove_bundle_write(path, e, 2, 0, NULL), TROVE_ERR_INVALID);
    e[1] = (struct trove_bundle_entry){"x", NULL, 4};
    CHECK_EQ_INT(trove_bundle_write(path, e, 2, 0, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_write(path, e, 0, 0, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_write(path, NULL, 1, 0, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_write(NULL, e, 1, 0, NULL), TROVE_ERR_INVALID);
    {
        struct trove_bundle_entry *many = calloc(1025, sizeof *many);
        char (*nm)[8] = calloc(1025, 8);
        for (size_t i = 0; many && nm && i < 1025; i++) {
            snprintf(nm[i], 8, "%zu", i);
            many[i] = (struct trove_bundle_entry){nm[i], NULL, 0};
        }
        CHECK_EQ_INT(trove_bundle_write(path, many, 1025, 0, NULL), TROVE_ERR_INVALID);
        free(many);
        free(nm);
    }
    /* a total over 16 GiB, refused before anything is read (data never touched) */
    {
        struct trove_bundle_entry big[5];
        for (int i = 0; i < 5; i++)
            big[i] = (struct trove_bundle_entry){i == 0 ? "a" : i == 1 ? "b" : i == 2 ? "c"
                                                          : i == 3 ? "d" : "e",
                                                 data, (size_t)4 << 30};
        CHECK_EQ_INT(trove_bundle_write(path, big, 5, 0, &diag), TROVE_ERR_LIMIT);
    }
    CHECK(!exists(tmp));
    CHECK_EQ_INT(trove_bundle_open_file(path, &b, NULL), TROVE_OK);
    check_contents(b, e, 1);
    trove_bundle_close(b);

    /* path is a directory: the zip is written and fsync'd, the rename fails, the temp goes */
    snprintf(path, sizeof path, "%s/adir", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(mkdir(path, 0755) == 0);
    CHECK_EQ_INT(trove_bundle_write(path, e, 1, 0, &diag), -EISDIR);
    CHECK(strstr(diag.msg, "rename") != NULL);
    CHECK(!exists(tmp));
    /* a directory that does not exist: an -errno, nothing created */
    snprintf(path, sizeof path, "%s/no/such/dir/x.zip", dir);
    CHECK(trove_bundle_write(path, e, 1, 0, &diag) < 0);
    CHECK(!exists(path));
}

/* Crafted archives: every bad name, a NUL, a duplicate, too many entries or bytes. */
static void test_open_errors(void)
{
    static const char *bad[] = {"../x", "/x", "a\\b", "a//b", "a/", "x/../y", "..", "c:/x",
                                "sp ace", "\xff"};
    struct trove_bytes z = {0};
    struct zent e[3];
    char what[64];

    e[0] = stored("ok.bin", "hello", 5);
    e[2] = stored("manifest.json", manifest_json, sizeof manifest_json - 1);
    /* the builder itself makes a zip the bundle opens */
    e[1] = stored("fine.bin", "x", 1);
    build_zip(e, 3, &z);
    expect_open_error(z.ptr, z.len, TROVE_OK, NULL, "builder");
    expect_read_error(z.ptr, z.len, "nope", 10, TROVE_ERR_NOTFOUND, "builder");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e[1] = stored(bad[i], "x", 1);
        build_zip(e, 3, &z);
        snprintf(what, sizeof what, "name %zu", i);
        expect_open_error(z.ptr, z.len, TROVE_ERR_CORRUPT, "entry 1", what);
        if (i == 0)
            corpus_write("zipslip.zip", z.ptr, z.len);
        if (i == 2)
            corpus_write("backslash.zip", z.ptr, z.len);
    }
    e[1] = stored("", "x", 1);
    build_zip(e, 3, &z);
    expect_open_error(z.ptr, z.len, TROVE_ERR_CORRUPT, "empty name", "empty name");
    e[1] = stored("a", "x", 1);
    e[1].name = "a\0b";
    e[1].nlen = 3;
    build_zip(e, 3, &z);
    expect_open_error(z.ptr, z.len, TROVE_ERR_CORRUPT, "entry 1", "NUL");
    {
        char longname[257];
        memset(longname, 'n', 256);
        longname[256] = 0;
        e[1] = stored(longname, "x", 1);
        build_zip(e, 3, &z);
        expect_open_error(z.ptr, z.len, TROVE_ERR_CORRUPT, "longer than 255", "long name");
    }
    /* a duplicate, possibly refused by libzip itself: CORRUPT either way */
    e[1] = stored("ok.bin", "x", 1);
    build_zip(e, 3, &z);
    expect_open_error(z.ptr, z.len, TROVE_ERR_CORRUPT, "\"ok.bin\" appears twice", "duplicate");
    corpus_write("duplicate.zip", z.ptr, z.len);

    /* 1024 entries open, 1025 do not */
    {
        struct zent *many = calloc(1025, sizeof *many);
        char (*nm)[8] = calloc(1025, 8);
        for (size_t i = 0; many && nm && i < 1025; i++) {
            snprintf(nm[i], 8, "%zu", i);
            many[i] = stored(nm[i], "", 0);
        }
        build_zip(many, 1024, &z);
        expect_open_error(z.ptr, z.len, TROVE_OK, NULL, "1024 entries");
        build_zip(many, 1025, &z);
        expect_open_error(z.ptr, z.len, TROVE_ERR_LIMIT, "1025", "1025 entries");
        free(many);
        free(nm);
    }
    /* five deflated entries declaring 4 GiB - 1 each: over 16 GiB in all */
    {
        static const uint8_t empty_deflate[2] = {0x03, 0x00};
        struct zent big[5];
        static const char *nm[5] = {"a", "b", "c", "d", "e"};
        for (int i = 0; i < 5; i++)
            big[i] = (struct zent){nm[i], 1, empty_deflate, 2, 8, 0xFFFFFFFEu, 0};
        build_zip(big, 5, &z);
        expect_open_error(z.ptr, z.len, TROVE_ERR_LIMIT, "\"e\"", "over 16 GiB");
        corpus_write("total_over_limit.zip", z.ptr, z.len);
        build_zip(big, 4, &z); /* under: opens, and reading is refused by ratio */
        expect_read_error(z.ptr, z.len, "a", UINT64_MAX, TROVE_ERR_BOMB, "ratio bomb");
        expect_read_error(z.ptr, z.len, "a", 1000, TROVE_ERR_LIMIT, "over max");
    }
    trove_bytes_free(&z);
}

/* Read name from b and require exactly want[0..n). */
static void expect_entry(struct trove_bundle *b, const char *name, const char *want, size_t n)
{
    struct trove_bytes out = {0};
    CHECK_EQ_INT(trove_bundle_read(b, name, 1000, &out, NULL), TROVE_OK);
    CHECK(out.len == n && memcmp(out.ptr, want, n) == 0);
    trove_bytes_free(&out);
}

/* A bundle unzipped and zipped again by a zip tool: directory entries, and the files in
 * one folder (with the junk some tools add beside it). */
static void test_folders(void)
{
    struct trove_bytes z = {0};
    struct trove_bundle *b = NULL;
    struct zent e[6];
    size_t i = 99;

    e[0] = stored("cap/", "", 0);
    e[1] = stored("cap/manifest.json", manifest_json, sizeof manifest_json - 1);
    e[2] = stored("cap/events.parquet", "EV", 2);
    e[3] = stored("__MACOSX/", "", 0);
    e[4] = stored("__MACOSX/cap/._manifest.json", "junk", 4);
    e[5] = stored("events.parquet", "top", 3);
    build_zip(e, 5, &z);
    corpus_write("folder.zip", z.ptr, z.len);
    CHECK_EQ_INT(trove_bundle_open_mem(z.ptr, z.len, &b, NULL), TROVE_OK);
    if (b) {
        CHECK_EQ_INT(trove_bundle_count(b), 5);
        CHECK(strcmp(trove_bundle_name(b, 0), "cap/") == 0);
        CHECK(strcmp(trove_bundle_folder(b), "cap/") == 0);
        CHECK_EQ_INT(trove_bundle_find(b, "manifest.json", &i), TROVE_OK);
        CHECK_EQ_INT(i, 1);
        expect_entry(b, "manifest.json", manifest_json, sizeof manifest_json - 1);
        expect_entry(b, "events.parquet", "EV", 2);
        /* names are relative to the folder; directories are never found */
        CHECK_EQ_INT(trove_bundle_find(b, "cap/events.parquet", NULL), TROVE_ERR_NOTFOUND);
        CHECK_EQ_INT(trove_bundle_find(b, "", NULL), TROVE_ERR_NOTFOUND);
        trove_bundle_close(b);
        b = NULL;
    }
    expect_read_error(z.ptr, z.len, "cap/", 1000, TROVE_ERR_NOTFOUND, "read a directory");
    /* A manifest at the top wins: the bundle is the top, the folder is an extra. */
    e[3] = stored("manifest.json", "{}", 2);
    build_zip(e, 6, &z);
    CHECK_EQ_INT(trove_bundle_open_mem(z.ptr, z.len, &b, NULL), TROVE_OK);
    if (b) {
        CHECK(strcmp(trove_bundle_folder(b), "") == 0);
        expect_entry(b, "manifest.json", "{}", 2);
        expect_entry(b, "events.parquet", "top", 3);
        trove_bundle_close(b);
        b = NULL;
    }
    /* Two folders with a manifest: which is the bundle? */
    e[3] = stored("dup/manifest.json", "{}", 2);
    build_zip(e, 4, &z);
    expect_open_error(z.ptr, z.len, TROVE_ERR_CORRUPT,
                      "no manifest.json at the top, and one in both \"cap/manifest.json\" and "
                      "\"dup/manifest.json\"", "two folders");
    /* A directory entry that holds bytes, or breaks the name rule. */
    e[0] = stored("cap/", "x", 1);
    build_zip(e, 3, &z);
    expect_open_error(z.ptr, z.len, TROVE_ERR_CORRUPT, "entry 0: directory \"cap/\" holds 1 bytes",
                      "directory with data");
    corpus_write("folder_dir_data.zip", z.ptr, z.len);
    e[0] = stored("cap//", "", 0);
    build_zip(e, 3, &z);
    expect_open_error(z.ptr, z.len, TROVE_ERR_CORRUPT, "entry 0: empty path component",
                      "directory a//");
    e[0] = stored("../", "", 0);
    build_zip(e, 3, &z);
    expect_open_error(z.ptr, z.len, TROVE_ERR_CORRUPT, "entry 0: \"..\" component",
                      "directory ../");
    e[0] = stored("/", "", 0);
    build_zip(e, 3, &z);
    expect_open_error(z.ptr, z.len, TROVE_ERR_CORRUPT, "entry 0: absolute path", "directory /");
    trove_bytes_free(&z);
}

/* Reading: lies in the headers, a flipped byte, methods, a real bomb. */
static void test_read_errors(void)
{
    struct trove_bytes z = {0}, def = {0}, out = {0};
    uint8_t *plain = malloc(1 << 20);
    struct trove_bundle *b;
    struct zent e[2];
    uLong crc;

    for (size_t i = 0; i < 1 << 20; i++)
        plain[i] = (uint8_t)(i % 7 == 0 ? 'x' : 'a');
    crc = crc32(0, plain, 1 << 20);
    raw_deflate(plain, 1 << 20, &def);

    /* honest deflate entry: reads */
    e[0] = (struct zent){"bomb.bin", 8, def.ptr, def.len, 8, 1u << 20, (uint32_t)crc};
    e[1] = stored("s.bin", "stored data!", 12);
    build_zip(e, 2, &z);
    CHECK_EQ_INT(trove_bundle_open_mem(z.ptr, z.len, &b, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_read(b, "bomb.bin", 1 << 20, &out, NULL), TROVE_OK);
    CHECK(out.len == 1 << 20 && memcmp(out.ptr, plain, 1 << 20) == 0);
    trove_bundle_close(b);
    corpus_write("bomb_honest.zip", z.ptr, z.len);
    /* a real bomb: 1 MiB declared, under a 64 KiB cap */
    expect_read_error(z.ptr, z.len, "bomb.bin", 65536, TROVE_ERR_LIMIT, "bomb over max");

    /* a header that lies short: the data inflate past the declared size */
    e[0].usize = 4096;
    build_zip(e, 2, &z);
    expect_read_error(z.ptr, z.len, "bomb.bin", UINT64_MAX, TROVE_ERR_BOMB, "lying short");
    corpus_write("bomb_lying.zip", z.ptr, z.len);
    /* one that lies long: the data end early */
    e[0].usize = (1u << 20) + 1;
    build_zip(e, 2, &z);
    expect_read_error(z.ptr, z.len, "bomb.bin", UINT64_MAX, TROVE_ERR_CORRUPT, "lying long");
    /* over TROVE_BUNDLE_RATIO_FREE, the ratio is held to TROVE_BUNDLE_MAX_RATIO: 17 MiB of
     * one random 1000-byte block over and over (about 200:1, which deflate's own limit
     * lets by) is refused before anything is allocated; 17 MiB of text that deflates about
     * 1.6:1 reads */
    {
        size_t big = 17u << 20;
        uint8_t *zeros = calloc(1, big), *text = malloc(big);
        struct trove_bytes zdef = {0}, tdef = {0};
        uint64_t seed = 7;
        CHECK(zeros && text);
        for (size_t i = 0; text && i < big; i++)
            text[i] = (uint8_t)('a' + (test_rand(&seed) % 26));
        for (size_t i = 0; zeros && i < big; i++) /* "zeros": the repeated block */
            zeros[i] = i < 1000 ? (uint8_t)test_rand(&seed) : zeros[i - 1000];
        /* a header that lies long by far: 15 MiB declared, 1 MiB of text there. The
         * buffer grows with the bytes that come, not with the declared size. */
        raw_deflate(text, 1u << 20, &tdef);
        e[0] = (struct zent){"short.bin", 9, tdef.ptr, tdef.len, 8, 15u << 20,
                             (uint32_t)crc32(0, text, 1u << 20)};
        build_zip(e, 2, &z);
        CHECK_EQ_INT(trove_bundle_open_mem(z.ptr, z.len, &b, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_bundle_read(b, "short.bin", UINT64_MAX, &out, NULL), TROVE_ERR_CORRUPT);
        CHECK(out.cap <= (4u << 20));
        trove_bundle_close(b);
        trove_bytes_free(&out);
        out.len = 0;
        tdef.len = 0;
        raw_deflate(zeros, big, &zdef);
        raw_deflate(text, big, &tdef);
        e[0] = (struct zent){"repeat.bin", 10, zdef.ptr, zdef.len, 8, (uint32_t)big,
                             (uint32_t)crc32(0, zeros, (uInt)big)};
        build_zip(e, 2, &z);
        CHECK(zdef.len * 1032 > big && zdef.len * TROVE_BUNDLE_MAX_RATIO < big);
        expect_read_error(z.ptr, z.len, "repeat.bin", UINT64_MAX, TROVE_ERR_BOMB, "ratio 200:1");
        CHECK_EQ_INT(trove_bundle_open_mem(z.ptr, z.len, &b, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_bundle_read(b, "repeat.bin", UINT64_MAX, &out, NULL), TROVE_ERR_BOMB);
        CHECK_EQ_INT(out.cap, 0); /* refused before a byte was allocated */
        trove_bundle_close(b);
        e[0] = (struct zent){"text.bin", 8, tdef.ptr, tdef.len, 8, (uint32_t)big,
                             (uint32_t)crc32(0, text, (uInt)big)};
        build_zip(e, 2, &z);
        CHECK_EQ_INT(trove_bundle_open_mem(z.ptr, z.len, &b, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_bundle_read(b, "text.bin", UINT64_MAX, &out, NULL), TROVE_OK);
        CHECK(out.len == big && memcmp(out.ptr, text, big) == 0);
        trove_bundle_close(b);
        trove_bytes_free(&out);
        out.len = 0;
        trove_bytes_free(&zdef);
        trove_bytes_free(&tdef);
        free(zeros);
        free(text);
    }
    e[0] = (struct zent){"bomb.bin", 8, def.ptr, def.len, 8, 1u << 20, (uint32_t)crc};
    /* a wrong CRC on a deflated entry */
    e[0].usize = 1u << 20;
    e[0].crc ^= 1;
    build_zip(e, 2, &z);
    expect_read_error(z.ptr, z.len, "bomb.bin", UINT64_MAX, TROVE_ERR_CHECKSUM, "deflate crc");
    /* a malformed deflate stream */
    e[0].crc ^= 1;
    e[0].data = (const uint8_t *)"\xff\xff\xff\xff\xff\xff";
    e[0].dlen = 6;
    e[0].usize = 100;
    build_zip(e, 2, &z);
    expect_read_error(z.ptr, z.len, "bomb.bin", UINT64_MAX, TROVE_ERR_INFLATE, "bad deflate");
    /* a stored entry whose sizes differ */
    e[0] = stored("a.bin", "12345678", 8);
    e[0].usize = 9;
    build_zip(e, 2, &z);
    expect_read_error(z.ptr, z.len, "a.bin", UINT64_MAX, TROVE_ERR_CORRUPT, "stored sizes");
    /* methods other than stored and deflated: shrink (1), bzip2 (12), lzma (14), zstd (93);
     * AES (99) without its extra field libzip already refuses at open */
    {
        static const uint16_t methods[] = {1, 12, 14, 93};
        for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
            e[0] = stored("m.bin", "12345678", 8);
            e[0].method = methods[i];
            build_zip(e, 2, &z);
            expect_read_error(z.ptr, z.len, "m.bin", UINT64_MAX, TROVE_ERR_FORMAT, "method");
            if (i == 1)
                corpus_write("bzip2_method.zip", z.ptr, z.len);
        }
        e[0].method = 99;
        build_zip(e, 2, &z);
        expect_open_error(z.ptr, z.len, TROVE_ERR_CORRUPT, NULL, "AES");
    }
    /* a flipped data byte of a stored entry (written by trove_bundle_write) */
    {
        struct trove_bundle_entry we[2] = {{"a.parquet", (const uint8_t *)"PAR1 some table PAR1", 20},
                                           {"b.parquet", (const uint8_t *)"another", 7}};
        char path[128];
        uint8_t *file, *hit;
        size_t flen;
        snprintf(path, sizeof path, "%s/crc.zip", dir);
        CHECK_EQ_INT(trove_bundle_write(path, we, 2, 0, NULL), TROVE_OK);
        file = test_read_file(path, &flen);
        hit = file ? (uint8_t *)memfind(file, flen, we[0].data, we[0].len) : NULL;
        CHECK(hit != NULL);
        if (hit) {
            hit[7] ^= 0x20;
            expect_read_error(file, flen, "a.parquet", UINT64_MAX, TROVE_ERR_CHECKSUM, "flip");
            expect_read_error(file, flen, "a.parquet", 19, TROVE_ERR_LIMIT, "flip, max");
            corpus_write("crc_flip.zip", file, flen);
            /* the other entry still reads */
            CHECK_EQ_INT(trove_bundle_open_mem(file, flen, &b, NULL), TROVE_OK);
            out.len = 0;
            CHECK_EQ_INT(trove_bundle_read(b, "b.parquet", 7, &out, NULL), TROVE_OK);
            CHECK(out.len == 7 && memcmp(out.ptr, "another", 7) == 0);
            trove_bundle_close(b);
        }
        free(file);
    }
    free(plain);
    trove_bytes_free(&z);
    trove_bytes_free(&def);
    trove_bytes_free(&out);
}

/* Open and read everything; returns the first error. */
static int open_read_all(const uint8_t *buf, size_t len)
{
    struct trove_bundle *b = NULL;
    struct trove_bytes out = {0};
    struct trove_diag diag = {0};
    int rc = trove_bundle_open_mem(buf, len, &b, &diag);
    CHECK_EQ_INT(diag.code, rc);
    for (size_t i = 0; rc == TROVE_OK && i < trove_bundle_count(b); i++) {
        out.len = 0;
        rc = trove_bundle_read(b, trove_bundle_name(b, i), 1 << 20, &out, &diag);
        if (rc != TROVE_OK)
            CHECK_EQ_INT(diag.code, rc);
    }
    trove_bundle_close(b);
    trove_bytes_free(&out);
    return rc;
}

static struct trove_bundle_manifest sample_manifest(void);

static void test_truncations_and_flips(void)
{
    struct trove_bundle_manifest m = sample_manifest();
    struct trove_bytes mj = {0};
    struct trove_bundle_entry e[2];
    char path[128];
    uint8_t *file, *copy;
    size_t flen;
    int opened = 0;

    CHECK_EQ_INT(trove_bundle_manifest_encode(&m, &mj), TROVE_OK);
    e[0] = (struct trove_bundle_entry){"events.parquet", (const uint8_t *)"PAR1 events PAR1", 16};
    e[1] = (struct trove_bundle_entry){"manifest.json", mj.ptr, mj.len};

    for (int deflate = 0; deflate <= 1; deflate++) {
        snprintf(path, sizeof path, "%s/t%d.zip", dir, deflate);
        CHECK_EQ_INT(trove_bundle_write(path, e, 2, deflate, NULL), TROVE_OK);
        file = test_read_file(path, &flen);
        CHECK(file != NULL);
        if (!file)
            return;
        CHECK_EQ_INT(open_read_all(file, flen), TROVE_OK);
        corpus_write(deflate ? "deflated.zip" : "stored.zip", file, flen);
        for (size_t len = 0; len < flen; len++) {
            copy = malloc(len ? len : 1);
            memcpy(copy, file, len);
            CHECK(open_read_all(copy, len) != TROVE_OK);
            if (deflate && len == flen / 2)
                corpus_write("truncated.zip", copy, len);
            free(copy);
        }
        /* every byte flipped: no crash, and whatever opens and reads is checked by CRC */
        copy = malloc(flen);
        for (size_t i = 0; i < flen; i++) {
            memcpy(copy, file, flen);
            copy[i] ^= 0x55;
            opened += open_read_all(copy, flen) == TROVE_OK;
        }
        free(copy);
        free(file);
    }
    trove_bytes_free(&mj);
    CHECK(opened > 0); /* flips in ignored fields (e.g. "version made by") still open */
}

/* --- the manifest --- */

static struct trove_bundle_manifest sample_manifest(void)
{
    struct trove_bundle_manifest m;
    memset(&m, 0, sizeof m);
    m.format_version = 1;
    snprintf(m.capture, sizeof m.capture, "chrome-trace-dom \"caf\xc3\xa9\"");
    m.start_ns = 1000;
    m.end_ns = 9007199254740993ull; /* 2^53 + 1: not exact as a double */
    m.events = 1234567;
    m.names = 42;
    m.threads = 7;
    m.samples = 0;
    m.frames = 0;
    snprintf(m.tables[0], sizeof m.tables[0], "events.parquet");
    snprintf(m.tables[1], sizeof m.tables[1], "names.parquet");
    snprintf(m.tables[2], sizeof m.tables[2], "threads.parquet");
    m.ntables = 3;
    snprintf(m.trove_version, sizeof m.trove_version, "0.1.0");
    return m;
}

static const char golden_manifest[] =
    "{\n"
    "  \"format\": \"trove-bundle\",\n"
    "  \"format_version\": 1,\n"
    "  \"capture\": \"chrome-trace-dom \\\"caf\xc3\xa9\\\"\",\n"
    "  \"time_range_ns\": [\n"
    "    1000,\n"
    "    9007199254740993\n"
    "  ],\n"
    "  \"counts\": {\n"
    "    \"events\": 1234567,\n"
    "    \"names\": 42,\n"
    "    \"threads\": 7,\n"
    "    \"samples\": 0,\n"
    "    \"frames\": 0\n"
    "  },\n"
    "  \"tables\": [\n"
    "    \"events.parquet\",\n"
    "    \"names.parquet\",\n"
    "    \"threads.parquet\"\n"
    "  ],\n"
    "  \"trove_version\": \"0.1.0\"\n"
    "}\n";

static void expect_manifest_error(const char *json, size_t len, int want, const char *needle)
{
    struct trove_bundle_manifest m, sentinel;
    struct trove_diag diag = {0};
    uint8_t *copy = malloc(len ? len : 1);
    int rc;
    memcpy(copy, json, len);
    memset(&sentinel, 0x5A, sizeof sentinel);
    m = sentinel;
    rc = trove_bundle_manifest_decode(copy, len, &m, &diag);
    if (rc != want)
        fprintf(stderr, "manifest %.60s: got %d (%s)\n", json, rc, diag.msg);
    CHECK_EQ_INT(rc, want);
    CHECK_EQ_INT(diag.code, want);
    CHECK(memcmp(&m, &sentinel, sizeof m) == 0);
    if (needle && !strstr(diag.msg, needle)) {
        fprintf(stderr, "manifest %.60s: message \"%s\" lacks \"%s\"\n", json, diag.msg, needle);
        CHECK(0);
    }
    CHECK_EQ_INT(trove_bundle_manifest_decode(copy, len, &m, NULL), want);
    free(copy);
}

#define BAD(json, want, needle) expect_manifest_error(json, sizeof json - 1, want, needle)

/* A manifest whose part key is replaced by repl (the rest as in the golden one). */
#define HEAD "{\"format\":\"trove-bundle\",\"format_version\":1,"
#define RANGE "\"time_range_ns\":[1,2],"
#define COUNTS "\"counts\":{\"events\":1,\"names\":2,\"threads\":3,\"samples\":4,\"frames\":5},"
#define TABLES "\"tables\":[\"events.parquet\"],"
#define CAPTURE "\"capture\":\"c\","
#define VERSION "\"trove_version\":\"0.1.0\"}"

static void test_manifest(void)
{
    struct trove_bundle_manifest m = sample_manifest(), d, bad;
    struct trove_bytes out = {0};
    struct trove_diag diag;

    CHECK_EQ_INT(trove_bundle_manifest_encode(&m, &out), TROVE_OK);
    CHECK(out.len == sizeof golden_manifest - 1 &&
          memcmp(out.ptr, golden_manifest, out.len) == 0);
    if (out.len != sizeof golden_manifest - 1 || memcmp(out.ptr, golden_manifest, out.len) != 0)
        fprintf(stderr, "manifest:\n%.*s", (int)out.len, (const char *)out.ptr);
    memset(&d, 0x33, sizeof d);
    CHECK_EQ_INT(trove_bundle_manifest_decode(out.ptr, out.len, &d, &diag), TROVE_OK);
    CHECK(memcmp(&d, &m, sizeof m) == 0);

    /* flows and sort_indexes: written only when not 0, read when there, 0 when not */
    m.flows = 3;
    m.sort_indexes = 4;
    out.len = 0;
    CHECK_EQ_INT(trove_bundle_manifest_encode(&m, &out), TROVE_OK);
    CHECK(trove_bytes_append(&out, "", 1) == TROVE_OK);
    CHECK(strstr((const char *)out.ptr,
                 "    \"frames\": 0,\n    \"flows\": 3,\n    \"sort_indexes\": 4\n  },") !=
          NULL);
    memset(&d, 0x33, sizeof d);
    CHECK_EQ_INT(trove_bundle_manifest_decode(out.ptr, out.len - 1, &d, &diag), TROVE_OK);
    CHECK(memcmp(&d, &m, sizeof m) == 0);
    m.flows = 0;
    out.len = 0;
    CHECK_EQ_INT(trove_bundle_manifest_encode(&m, &out), TROVE_OK);
    CHECK(trove_bytes_append(&out, "", 1) == TROVE_OK);
    CHECK(strstr((const char *)out.ptr, "flows") == NULL);
    CHECK(strstr((const char *)out.ptr, "\"sort_indexes\": 4") != NULL);
    memset(&d, 0x33, sizeof d);
    CHECK_EQ_INT(trove_bundle_manifest_decode(out.ptr, out.len - 1, &d, &diag), TROVE_OK);
    CHECK(d.flows == 0 && d.sort_indexes == 4);
    m = sample_manifest();

    /* the integer limits: 2^63 - 1 round-trips, 2^63 is refused */
    m.start_ns = m.end_ns = m.events = m.names = m.threads = m.samples = m.frames = INT64_MAX;
    m.flows = m.sort_indexes = INT64_MAX;
    m.ntables = 8;
    for (int i = 0; i < 8; i++)
        snprintf(m.tables[i], sizeof m.tables[i], "t%d/%.55s", i,
                 "0123456789012345678901234567890123456789012345678901234567890");
    memset(m.capture, 'c', 255);
    m.capture[255] = 0;
    memset(m.trove_version, 'v', 31);
    m.trove_version[31] = 0;
    out.len = 0;
    CHECK_EQ_INT(trove_bundle_manifest_encode(&m, &out), TROVE_OK);
    memset(&d, 0x33, sizeof d);
    CHECK_EQ_INT(trove_bundle_manifest_decode(out.ptr, out.len, &d, &diag), TROVE_OK);
    CHECK(memcmp(&d, &m, sizeof m) == 0);
    m.ntables = 0;
    out.len = 0;
    CHECK_EQ_INT(trove_bundle_manifest_encode(&m, &out), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_manifest_decode(out.ptr, out.len, &d, &diag), TROVE_OK);
    CHECK(d.ntables == 0 && d.events == INT64_MAX);

    /* encode errors, with out unchanged */
    out.len = 0;
    CHECK(trove_bytes_append(&out, "keep", 4) == TROVE_OK);
#define ENC_BAD(stmt)                                                                     \
    do {                                                                                  \
        bad = sample_manifest();                                                          \
        stmt;                                                                             \
        CHECK_EQ_INT(trove_bundle_manifest_encode(&bad, &out), TROVE_ERR_INVALID);        \
        CHECK(out.len == 4 && memcmp(out.ptr, "keep", 4) == 0);                           \
    } while (0)
    ENC_BAD(bad.format_version = 2);
    ENC_BAD(bad.format_version = 0);
    ENC_BAD(bad.events = (uint64_t)INT64_MAX + 1);
    ENC_BAD(bad.frames = UINT64_MAX);
    ENC_BAD(bad.sort_indexes = (uint64_t)INT64_MAX + 1);
    ENC_BAD((bad.start_ns = (uint64_t)INT64_MAX + 1, bad.end_ns = UINT64_MAX));
    ENC_BAD(bad.start_ns = bad.end_ns + 1);
    ENC_BAD(bad.ntables = 17);
    ENC_BAD(bad.stacks = (uint64_t)INT64_MAX + 1);
    ENC_BAD(memset(bad.capture, 'x', sizeof bad.capture));
    ENC_BAD(memset(bad.trove_version, 'x', sizeof bad.trove_version));
    ENC_BAD(memset(bad.tables[1], 'x', sizeof bad.tables[1]));
    ENC_BAD(snprintf(bad.tables[1], sizeof bad.tables[1], "../x"));
    ENC_BAD(snprintf(bad.tables[0], sizeof bad.tables[0], "%s", ""));
    ENC_BAD(snprintf(bad.capture, sizeof bad.capture, "\xff"));
#undef ENC_BAD
    CHECK_EQ_INT(trove_bundle_manifest_encode(NULL, &out), TROVE_ERR_INVALID);

    /* decode errors */
    {
        char *big = malloc(TROVE_BUNDLE_MAX_MANIFEST + 2);
        size_t glen = sizeof golden_manifest - 1;
        memcpy(big, golden_manifest, glen);
        memset(big + glen, ' ', TROVE_BUNDLE_MAX_MANIFEST + 1 - glen);
        expect_manifest_error(big, TROVE_BUNDLE_MAX_MANIFEST + 1, TROVE_ERR_LIMIT, NULL);
        CHECK_EQ_INT(trove_bundle_manifest_decode((uint8_t *)big, TROVE_BUNDLE_MAX_MANIFEST, &d,
                                                  NULL), TROVE_OK);
        free(big);
    }
    BAD("", TROVE_ERR_JSON, NULL);
    BAD("{", TROVE_ERR_JSON, NULL);
    BAD("{\"format\":\"trove-bundle\",}", TROVE_ERR_JSON, NULL);
    BAD(HEAD CAPTURE RANGE COUNTS TABLES VERSION " x", TROVE_ERR_JSON, NULL);
    BAD(HEAD CAPTURE RANGE COUNTS TABLES "\"format\":\"trove-bundle\"," VERSION, TROVE_ERR_JSON,
        NULL);
    BAD(HEAD "\"capture\":\"a\\u0000b\"," RANGE COUNTS TABLES VERSION, TROVE_ERR_JSON, NULL);
    BAD(HEAD "\"capture\":\"\xff\"," RANGE COUNTS TABLES VERSION, TROVE_ERR_JSON, NULL);
    BAD(HEAD CAPTURE RANGE
        "\"counts\":{\"events\":9223372036854775808,\"names\":2,\"threads\":3,\"samples\":4,"
        "\"frames\":5}," TABLES VERSION,
        TROVE_ERR_JSON, NULL);
    BAD("[1,2]", TROVE_ERR_CORRUPT, "object");
    BAD("{\"format_version\":1}", TROVE_ERR_MAGIC, NULL);
    BAD("{\"format\":\"trove-bundles\",\"format_version\":1}", TROVE_ERR_MAGIC, NULL);
    BAD("{\"format\":7,\"format_version\":1}", TROVE_ERR_MAGIC, NULL);
    BAD("{\"format\":\"trove-bundle\",\"format_version\":2}", TROVE_ERR_VERSION, "2");
    BAD("{\"format\":\"trove-bundle\",\"format_version\":0}", TROVE_ERR_CORRUPT, "0");
    BAD("{\"format\":\"trove-bundle\"}", TROVE_ERR_CORRUPT, "format_version");
    BAD("{\"format\":\"trove-bundle\",\"format_version\":\"1\"}", TROVE_ERR_CORRUPT,
        "format_version");
    BAD("{\"format\":\"trove-bundle\",\"format_version\":1.0}", TROVE_ERR_CORRUPT,
        "format_version");
    BAD("{\"format\":\"trove-bundle\",\"format_version\":-1}", TROVE_ERR_CORRUPT,
        "format_version");
    BAD(HEAD RANGE COUNTS TABLES VERSION, TROVE_ERR_CORRUPT, "capture");
    BAD(HEAD "\"capture\":1," RANGE COUNTS TABLES VERSION, TROVE_ERR_CORRUPT, "capture");
    BAD(HEAD CAPTURE COUNTS TABLES VERSION, TROVE_ERR_CORRUPT, "time_range_ns");
    BAD(HEAD CAPTURE "\"time_range_ns\":[1]," COUNTS TABLES VERSION, TROVE_ERR_CORRUPT,
        "time_range_ns");
    BAD(HEAD CAPTURE "\"time_range_ns\":[1,2,3]," COUNTS TABLES VERSION, TROVE_ERR_CORRUPT,
        "time_range_ns");
    BAD(HEAD CAPTURE "\"time_range_ns\":[-1,2]," COUNTS TABLES VERSION, TROVE_ERR_CORRUPT,
        "time_range_ns");
    BAD(HEAD CAPTURE "\"time_range_ns\":[1,\"2\"]," COUNTS TABLES VERSION, TROVE_ERR_CORRUPT,
        "time_range_ns");
    BAD(HEAD CAPTURE "\"time_range_ns\":{\"a\":1}," COUNTS TABLES VERSION, TROVE_ERR_CORRUPT,
        "time_range_ns");
    BAD(HEAD CAPTURE "\"time_range_ns\":[3,2]," COUNTS TABLES VERSION, TROVE_ERR_NEGATIVE,
        "time_range_ns");
    BAD(HEAD CAPTURE RANGE TABLES VERSION, TROVE_ERR_CORRUPT, "counts");
    BAD(HEAD CAPTURE RANGE "\"counts\":[]," TABLES VERSION, TROVE_ERR_CORRUPT, "counts");
    BAD(HEAD CAPTURE RANGE
        "\"counts\":{\"events\":1,\"names\":2,\"threads\":3,\"samples\":4}," TABLES VERSION,
        TROVE_ERR_CORRUPT, "counts.\"frames\"");
    BAD(HEAD CAPTURE RANGE
        "\"counts\":{\"events\":1,\"names\":-2,\"threads\":3,\"samples\":4,\"frames\":5},"
        TABLES VERSION,
        TROVE_ERR_CORRUPT, "counts.\"names\"");
    BAD(HEAD CAPTURE RANGE
        "\"counts\":{\"events\":1,\"names\":2,\"threads\":3e0,\"samples\":4,\"frames\":5},"
        TABLES VERSION,
        TROVE_ERR_CORRUPT, "counts.\"threads\"");
    BAD(HEAD CAPTURE RANGE
        "\"counts\":{\"events\":1,\"names\":2,\"threads\":3,\"samples\":4,\"frames\":5,"
        "\"sort_indexes\":-1}," TABLES VERSION,
        TROVE_ERR_CORRUPT, "counts.\"sort_indexes\"");
    BAD(HEAD CAPTURE RANGE
        "\"counts\":{\"events\":1,\"names\":2,\"threads\":3,\"samples\":4,\"frames\":5,"
        "\"sort_indexes\":\"2\"}," TABLES VERSION,
        TROVE_ERR_CORRUPT, "counts.\"sort_indexes\"");
    BAD(HEAD CAPTURE RANGE COUNTS VERSION, TROVE_ERR_CORRUPT, "tables");
    BAD(HEAD CAPTURE RANGE COUNTS "\"tables\":\"events.parquet\"," VERSION, TROVE_ERR_CORRUPT,
        "tables");
    BAD(HEAD CAPTURE RANGE COUNTS "\"tables\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\","
        "\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"],"
        VERSION, TROVE_ERR_LIMIT, "17 tables");
    BAD(HEAD CAPTURE RANGE
        "\"counts\":{\"events\":1,\"names\":2,\"threads\":3,\"samples\":4,\"frames\":5,"
        "\"stacks\":-1}," TABLES VERSION,
        TROVE_ERR_CORRUPT, "counts.\"stacks\"");
    BAD(HEAD CAPTURE RANGE
        "\"counts\":{\"events\":1,\"names\":2,\"threads\":3,\"samples\":4,\"frames\":5,"
        "\"switches\":\"2\"}," TABLES VERSION,
        TROVE_ERR_CORRUPT, "counts.\"switches\"");
    BAD(HEAD CAPTURE RANGE COUNTS "\"tables\":[\"a\",1]," VERSION, TROVE_ERR_CORRUPT,
        "\"tables\"[1]");
    BAD(HEAD CAPTURE RANGE COUNTS "\"tables\":[\"../x\"]," VERSION, TROVE_ERR_CORRUPT, "..");
    BAD(HEAD CAPTURE RANGE COUNTS "\"tables\":[\"\"]," VERSION, TROVE_ERR_CORRUPT, "empty");
    BAD(HEAD CAPTURE RANGE COUNTS
        "\"tables\":[\"0123456789012345678901234567890123456789012345678901234567890123\"],"
        VERSION, TROVE_ERR_LIMIT, "64 bytes");
    BAD(HEAD CAPTURE RANGE COUNTS TABLES "\"x\":1}", TROVE_ERR_CORRUPT, "trove_version");
    BAD(HEAD CAPTURE RANGE COUNTS TABLES "\"trove_version\":\"0123456789012345678901234567890123\"}",
        TROVE_ERR_LIMIT, "trove_version");
    {
        /* capture of 256 bytes: over; 255 fine (checked above by the round trip) */
        char j[1024];
        int n = snprintf(j, sizeof j, HEAD "\"capture\":\"%0256d\"," RANGE COUNTS TABLES VERSION,
                         0);
        expect_manifest_error(j, (size_t)n, TROVE_ERR_LIMIT, "capture");
    }
    /* unknown keys are ignored, at the top and in counts; key order is free */
    {
        static const char ok[] = "{\"extra\":{\"deep\":[1,2,{}]}," VERSION;
        static const char j[] =
            "{\"zzz\":null,\"trove_version\":\"0.2.0\",\"tables\":[],\"counts\":{\"frames\":5,"
            "\"samples\":4,\"threads\":3,\"names\":2,\"events\":1,\"bytes\":99},"
            "\"time_range_ns\":[0,0],\"capture\":\"\",\"format_version\":1,"
            "\"format\":\"trove-bundle\"}";
        (void)ok;
        memset(&d, 0x33, sizeof d);
        CHECK_EQ_INT(trove_bundle_manifest_decode((const uint8_t *)j, sizeof j - 1, &d, NULL),
                     TROVE_OK);
        CHECK(d.format_version == 1 && d.events == 1 && d.frames == 5 && d.ntables == 0 &&
              d.capture[0] == 0 && strcmp(d.trove_version, "0.2.0") == 0 && d.end_ns == 0);
    }
    CHECK_EQ_INT(trove_bundle_manifest_decode(NULL, 1, &d, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_manifest_decode(out.ptr, out.len, NULL, NULL), TROVE_ERR_INVALID);
    trove_bytes_free(&out);
}

static void test_name_check(void)
{
    const char *why;
    CHECK_EQ_INT(trove_bundle_name_check("events.parquet", 14, &why), TROVE_OK);
    CHECK(why == NULL);
    CHECK_EQ_INT(trove_bundle_name_check("a/b/c.d", 7, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_name_check("..a/b..", 7, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_name_check("a\0b", 3, &why), TROVE_ERR_INVALID);
    CHECK(why && strstr(why, "NUL"));
    CHECK_EQ_INT(trove_bundle_name_check("a/../b", 6, &why), TROVE_ERR_INVALID);
    CHECK(why && strstr(why, ".."));
    CHECK_EQ_INT(trove_bundle_name_check(NULL, 0, &why), TROVE_ERR_INVALID);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    snprintf(dir, sizeof dir, "/tmp/trove-bundle-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_name_check);
    RUN(test_round_trip);
    RUN(test_determinism);
    RUN(test_write_errors);
    RUN(test_open_errors);
    RUN(test_folders);
    RUN(test_read_errors);
    RUN(test_truncations_and_flips);
    RUN(test_manifest);
    test_rm_rf(dir);
    return test_done();
}
