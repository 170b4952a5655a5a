/*
 * test_bundle_stream.c: the streaming bundle writer (src/columnar/bundle_stream.c) makes the
 * bytes libzip makes (trove_bundle_write_mem), stored and deflated, for entries empty,
 * small, around deflate's 8 KiB feed and 64 KiB output sizes, large (random, repetitive,
 * zeros), with UTF-8 names, and 1024 of them; whether an entry comes whole (_add) or through
 * the encoder in pieces of any size (_begin and _data, as an export copies a spooled file);
 * and what it refuses, with the error kept. With TROVE_TEST_ZIP64=1 it also writes bundles
 * past 4 GiB next to libzip's (zip64 records: an entry of exactly 0xffffffff bytes, one
 * over it, offsets past 4 GiB, a deflated entry libzip forces to zip64, one whose deflate
 * stream passes 4 GiB) and compares them byte for byte as they stream: several minutes and
 * 5 GiB of disk, so not by default.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zip.h>

#include "testutil.h"
#include "trove/bundle.h"
#include "trove/testing.h"

/* How stream_write gives entries: 0 all whole (_add), 1 all through the encoder in pieces of
 * piece bytes, 2 alternating. */
static int give_mode;
static size_t piece = 8192;

/* A sink that keeps what it gets and fails call fail_at (1-based; 0: never) with -EIO. */
struct keep {
    struct trove_bytes got;
    size_t calls, fail_at;
};

static int keep_write(void *ctx, const void *p, size_t n)
{
    struct keep *k = ctx;
    CHECK(n > 0);
    if (++k->calls == k->fail_at)
        return -EIO;
    return trove_bytes_append(&k->got, p, n);
}

/* One entry through an encoder into memory, in pieces, then begin + data in pieces. */
static int give_encoded(struct trove_bundle_writer *w, int deflate,
                        const struct trove_bundle_entry *e)
{
    struct trove_bytes stored = {0};
    struct trove_sink sk = {trove_bytes_sink_write, &stored}, via;
    struct trove_bundle_enc *enc = NULL;
    struct trove_bundle_entry_info info;
    int rc = trove_bundle_enc_new(deflate, &sk, &enc);

    trove_bundle_enc_sink(enc, &via);
    for (size_t at = 0; rc == TROVE_OK && at < e->len;) {
        size_t k = e->len - at < piece ? e->len - at : piece;
        rc = via.write(via.ctx, e->data + at, k);
        at += k;
    }
    if (rc == TROVE_OK)
        rc = trove_bundle_enc_finish(enc, &info);
    trove_bundle_enc_free(enc);
    if (rc == TROVE_OK) {
        CHECK_EQ_INT(info.size, e->len);
        CHECK_EQ_INT(info.stored_size, stored.len);
        rc = trove_bundle_writer_begin(w, e->name, &info, NULL);
    }
    for (size_t at = 0; rc == TROVE_OK && at < stored.len;) {
        size_t k = stored.len - at < piece + 3 ? stored.len - at : piece + 3;
        rc = trove_bundle_writer_data(w, stored.ptr + at, k);
        at += k;
    }
    trove_bytes_free(&stored);
    return rc;
}

static int stream_write(const struct trove_bundle_entry *e, size_t n, int deflate,
                        struct trove_bytes *out)
{
    struct keep k = {{0}, 0, 0};
    struct trove_sink sk = {keep_write, &k};
    struct trove_bundle_writer *w = NULL;
    int rc = trove_bundle_writer_new(deflate, &sk, &w);

    for (size_t i = 0; rc == TROVE_OK && i < n; i++)
        rc = give_mode == 0 || (give_mode == 2 && i % 2) ? trove_bundle_writer_add(w, &e[i], NULL)
                                                         : give_encoded(w, deflate, &e[i]);
    if (rc == TROVE_OK)
        rc = trove_bundle_writer_finish(w, NULL);
    if (rc == TROVE_OK)
        CHECK_EQ_INT(trove_bundle_writer_bytes(w), k.got.len);
    trove_bundle_writer_free(w);
    *out = k.got;
    return rc;
}

/* The streaming writer's bytes are libzip's for e[0..n), both kinds, every give mode. */
static void same_as_libzip(const struct trove_bundle_entry *e, size_t n, const char *what)
{
    for (int deflate = 0; deflate <= 1; deflate++) {
        struct trove_bytes ref = {0};
        CHECK_EQ_INT(trove_bundle_write_mem(e, n, deflate, &ref, NULL), TROVE_OK);
        for (give_mode = 0; give_mode <= 2; give_mode++) {
            struct trove_bytes got = {0};
            int same;
            CHECK_EQ_INT(stream_write(e, n, deflate, &got), TROVE_OK);
            same = got.len == ref.len && memcmp(got.ptr, ref.ptr, ref.len) == 0;
            CHECK(same);
            if (!same) {
                size_t at = 0;
                while (at < got.len && at < ref.len && got.ptr[at] == ref.ptr[at])
                    at++;
                fprintf(stderr, "%s, %s, mode %d: %zu bytes, libzip %zu, first difference at %zu\n",
                        what, deflate ? "deflated" : "stored", give_mode, got.len, ref.len, at);
            }
            trove_bytes_free(&got);
        }
        give_mode = 0;
        trove_bytes_free(&ref);
    }
}

static uint8_t *random_bytes(size_t n, uint64_t seed, int kind)
{
    uint8_t *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        p[i] = kind == 0   ? (uint8_t)test_rand(&seed)                     /* incompressible */
               : kind == 1 ? (uint8_t)(i % 251 == 0 ? test_rand(&seed) : i * 7 / 13) /* mixed */
                           : 0;                                            /* zeros */
    return p;
}

static void test_sizes(void)
{
    static const size_t sizes[] = {0, 1, 2, 100, 8191, 8192, 8193, 16384, 65535, 65536, 65537,
                                   200000};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int kind = 0; kind < 3; kind++) {
            uint8_t *d = random_bytes(sizes[si], 3 + si, kind);
            struct trove_bundle_entry e[2] = {{"manifest.json", (const uint8_t *)"{}\n", 3},
                                              {"events.parquet", d, sizes[si]}};
            char what[64];
            snprintf(what, sizeof what, "%zu bytes of kind %d", sizes[si], kind);
            same_as_libzip(e, 2, what);
            same_as_libzip(e + 1, 1, what); /* alone: the first entry at offset 0 */
            free(d);
        }
}

/* Entries of several MiB, in pieces that do not divide deflate's feed. */
static void test_large(void)
{
    size_t n = 12u << 20;
    uint8_t *a = random_bytes(n, 11, 1), *b = random_bytes(n / 3, 12, 0), *z = random_bytes(n, 0, 2);
    struct trove_bundle_entry e[4] = {{"manifest.json", (const uint8_t *)"{\"a\": 1}\n", 9},
                                      {"events.parquet", a, n},
                                      {"names.parquet", b, n / 3},
                                      {"zeros.bin", z, n}};
    piece = 1000003;
    same_as_libzip(e, 4, "large");
    piece = 8192;
    free(a);
    free(b);
    free(z);
}

/* The most entries a bundle holds, small and empty, with names of every length class, UTF-8
 * ones and ones in folders. */
static void test_many(void)
{
    static struct trove_bundle_entry e[TROVE_BUNDLE_MAX_ENTRIES];
    static char names[TROVE_BUNDLE_MAX_ENTRIES][TROVE_BUNDLE_MAX_NAME + 1];
    uint8_t *d = random_bytes(5000, 5, 1);

    for (size_t i = 0; i < TROVE_BUNDLE_MAX_ENTRIES; i++) {
        if (i % 97 == 0) {
            memset(names[i], 'n', TROVE_BUNDLE_MAX_NAME);
            snprintf(names[i], 8, "%05zu", i);
            names[i][5] = 'n';
        } else {
            snprintf(names[i], sizeof names[i], i % 3 ? "t%zu.parquet" : "d/\xc3\xa9t\xc3\xa9-%zu", i);
        }
        e[i].name = names[i];
        e[i].data = d + i % 3000;
        e[i].len = i % 5 == 0 ? 0 : i % 2000;
    }
    same_as_libzip(e, TROVE_BUNDLE_MAX_ENTRIES, "1024 entries");
    free(d);
}

/* The writer reads back as the bundle it is. */
static void test_reads_back(void)
{
    uint8_t *d = random_bytes(300000, 9, 1);
    struct trove_bundle_entry e[3] = {{"manifest.json", (const uint8_t *)"{}\n", 3},
                                      {"events.parquet", d, 300000},
                                      {"empty.parquet", NULL, 0}};
    for (int deflate = 0; deflate <= 1; deflate++) {
        struct trove_bytes got = {0}, back = {0};
        struct trove_bundle *b = NULL;
        give_mode = 1;
        CHECK_EQ_INT(stream_write(e, 3, deflate, &got), TROVE_OK);
        give_mode = 0;
        CHECK_EQ_INT(trove_bundle_open_mem(got.ptr, got.len, &b, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_bundle_read(b, "events.parquet", UINT64_MAX, &back, NULL), TROVE_OK);
        CHECK(back.len == 300000 && memcmp(back.ptr, d, 300000) == 0);
        trove_bundle_close(b);
        trove_bytes_free(&back);
        trove_bytes_free(&got);
    }
    free(d);
}

static void test_errors(void)
{
    static const char *bad[] = {"../x", "/x", "a\\b", "", "a//b", "a/", "a b", "\xff.bin"};
    struct keep k = {{0}, 0, 0};
    struct trove_sink sk = {keep_write, &k}, none = {NULL, NULL};
    struct trove_bundle_writer *w = NULL;
    struct trove_bundle_enc *enc = NULL;
    struct trove_bundle_entry_info info, big;
    struct trove_bundle_entry ok = {"a.bin", (const uint8_t *)"abc", 3};
    struct trove_diag diag;
    uint8_t junk[4] = {0};

    CHECK_EQ_INT(trove_bundle_writer_new(0, NULL, &w), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_writer_new(0, &none, &w), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_writer_new(0, &sk, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_enc_new(0, NULL, &enc), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_enc_new(0, &sk, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_writer_finish(NULL, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_writer_bytes(NULL), 0);
    trove_bundle_writer_free(NULL);
    trove_bundle_enc_free(NULL);

    /* Each refusal, with the entry named, and the writer keeps the error. */
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct trove_bundle_entry e = {bad[i], junk, 4};
        CHECK_EQ_INT(trove_bundle_writer_new(0, &sk, &w), TROVE_OK);
        memset(&diag, 0, sizeof diag);
        CHECK_EQ_INT(trove_bundle_writer_add(w, &e, &diag), TROVE_ERR_INVALID);
        CHECK(strstr(diag.msg, "entry 0") != NULL);
        CHECK_EQ_INT(trove_bundle_writer_add(w, &ok, NULL), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_bundle_writer_finish(w, NULL), TROVE_ERR_INVALID);
        trove_bundle_writer_free(w);
    }
    CHECK_EQ_INT(k.calls, 0); /* nothing was written for any of them */

    /* A repeated name; NULL data with a length; no entries. */
    CHECK_EQ_INT(trove_bundle_writer_new(1, &sk, &w), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_add(w, &ok, NULL), TROVE_OK);
    memset(&diag, 0, sizeof diag);
    CHECK_EQ_INT(trove_bundle_writer_add(w, &ok, &diag), TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "twice") != NULL);
    trove_bundle_writer_free(w);
    CHECK_EQ_INT(trove_bundle_writer_new(0, &sk, &w), TROVE_OK);
    {
        struct trove_bundle_entry e = {"x.bin", NULL, 5};
        CHECK_EQ_INT(trove_bundle_writer_add(w, &e, NULL), TROVE_ERR_INVALID);
    }
    trove_bundle_writer_free(w);
    CHECK_EQ_INT(trove_bundle_writer_new(0, &sk, &w), TROVE_OK);
    memset(&diag, 0, sizeof diag);
    CHECK_EQ_INT(trove_bundle_writer_finish(w, &diag), TROVE_ERR_INVALID);
    CHECK(strstr(diag.msg, "entries") != NULL);
    trove_bundle_writer_free(w);

    /* Over the entry count. */
    CHECK_EQ_INT(trove_bundle_writer_new(0, &sk, &w), TROVE_OK);
    for (size_t i = 0; i <= TROVE_BUNDLE_MAX_ENTRIES; i++) {
        char name[32];
        struct trove_bundle_entry e = {name, NULL, 0};
        snprintf(name, sizeof name, "e%zu", i);
        CHECK_EQ_INT(trove_bundle_writer_add(w, &e, NULL),
                     i < TROVE_BUNDLE_MAX_ENTRIES ? TROVE_OK : TROVE_ERR_INVALID);
    }
    trove_bundle_writer_free(w);

    /* An encoded entry: its stored bytes exactly, of the writer's kind. */
    k.got.len = 0;
    CHECK_EQ_INT(trove_bundle_enc_new(0, &sk, &enc), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_enc_write(enc, NULL, 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_enc_write(enc, "abcd", 4), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_enc_finish(enc, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_enc_finish(enc, &info), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_enc_write(enc, "e", 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_bundle_enc_finish(enc, &info), TROVE_ERR_INVALID);
    trove_bundle_enc_free(enc);
    CHECK_EQ_INT(info.size, 4);
    CHECK_EQ_INT(info.stored_size, 4);
    CHECK_EQ_INT(info.deflated, 0);
    CHECK_EQ_INT(trove_bundle_writer_new(1, &sk, &w), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_begin(w, "a", &info, NULL), TROVE_ERR_INVALID);
    trove_bundle_writer_free(w);
    CHECK_EQ_INT(trove_bundle_writer_new(0, &sk, &w), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_begin(w, "a", &info, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_data(w, "abc", 3), TROVE_OK);
    memset(&diag, 0, sizeof diag);
    CHECK_EQ_INT(trove_bundle_writer_finish(w, &diag), TROVE_ERR_INVALID); /* 1 byte short */
    CHECK(strstr(diag.msg, "short") != NULL);
    trove_bundle_writer_free(w);
    CHECK_EQ_INT(trove_bundle_writer_new(0, &sk, &w), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_begin(w, "a", &info, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_data(w, "abcde", 5), TROVE_ERR_INVALID); /* past it */
    CHECK_EQ_INT(trove_bundle_writer_data(w, "abcd", 4), TROVE_ERR_INVALID);   /* kept */
    trove_bundle_writer_free(w);
    CHECK_EQ_INT(trove_bundle_writer_new(0, &sk, &w), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_begin(w, "a", &info, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_data(w, "ab", 2), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_begin(w, "b", &info, NULL), TROVE_ERR_INVALID);
    trove_bundle_writer_free(w);

    /* Past TROVE_BUNDLE_MAX_TOTAL: refused at the header, before any byte of it. */
    memset(&big, 0, sizeof big);
    big.size = big.stored_size = TROVE_BUNDLE_MAX_TOTAL / 2 + 1;
    k.got.len = 0;
    CHECK_EQ_INT(trove_bundle_writer_new(0, &sk, &w), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_begin(w, "a", &big, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_data(w, junk, 4), TROVE_OK);
    trove_bundle_writer_free(w);
    CHECK_EQ_INT(trove_bundle_writer_new(0, &sk, &w), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_add(w, &ok, NULL), TROVE_OK);
    big.size = big.stored_size = TROVE_BUNDLE_MAX_TOTAL - 2;
    memset(&diag, 0, sizeof diag);
    k.got.len = 0;
    CHECK_EQ_INT(trove_bundle_writer_begin(w, "big", &big, &diag), TROVE_ERR_LIMIT);
    CHECK(strstr(diag.msg, "big") != NULL);
    CHECK_EQ_INT(k.got.len, 0);
    trove_bundle_writer_free(w);

    /* A sink's failure: the call's error, then kept. */
    k.calls = 0;
    k.fail_at = 2;
    CHECK_EQ_INT(trove_bundle_writer_new(0, &sk, &w), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_writer_add(w, &ok, NULL), -EIO); /* header, then data fails */
    CHECK_EQ_INT(trove_bundle_writer_finish(w, NULL), -EIO);
    trove_bundle_writer_free(w);
    k.calls = 0;
    k.fail_at = 1;
    CHECK_EQ_INT(trove_bundle_enc_new(1, &sk, &enc), TROVE_OK);
    CHECK_EQ_INT(trove_bundle_enc_write(enc, "abcd", 4), TROVE_OK); /* still in the feed */
    CHECK_EQ_INT(trove_bundle_enc_finish(enc, &info), -EIO);
    CHECK_EQ_INT(trove_bundle_enc_write(enc, "abcd", 4), -EIO);
    trove_bundle_enc_free(enc);
    k.fail_at = 0;
    trove_bytes_free(&k.got);
}

/* Out of memory at each allocation of a deflated bundle in pieces: an error, never a crash
 * or a leak (the sink's own growth is the test's and may fail too). */
static void test_oom(void)
{
    uint8_t *d = random_bytes(50000, 4, 1);
    struct trove_bundle_entry e[2] = {{"manifest.json", (const uint8_t *)"{}\n", 3},
                                      {"events.parquet", d, 50000}};
    struct trove_bytes ref = {0};
    CHECK_EQ_INT(trove_bundle_write_mem(e, 2, 1, &ref, NULL), TROVE_OK);
    for (uint64_t n = 1; n < 200; n++) {
        struct trove_bytes got = {0};
        int rc;
        give_mode = 2;
        trove_testing_alloc_fail_at(n, 0);
        rc = stream_write(e, 2, 1, &got);
        trove_testing_alloc_fail_at(0, 0);
        give_mode = 0;
        CHECK(rc == TROVE_OK || rc == TROVE_ERR_NOMEM);
        if (rc == TROVE_OK)
            CHECK(got.len == ref.len && memcmp(got.ptr, ref.ptr, ref.len) == 0);
        trove_bytes_free(&got);
    }
    trove_bytes_free(&ref);
    free(d);
}

/* ---- past 4 GiB (TROVE_TEST_ZIP64=1) --------------------------------------------------- */

/* An entry's bytes made on the fly, from its seed s: below 100, cheap to make and to
 * deflate; from 100 on, random (deflate's output is then larger than its input). */
static void big_fill(uint64_t s, uint64_t at, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t x = at + i;
        if (s < 100) {
            p[i] = (uint8_t)((x >> 12) * 31 + s + ((x & 4095) == 7 ? x >> 20 : 0));
        } else {
            uint64_t z = (x >> 3) * 0x9E3779B97F4A7C15ull + s;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            p[i] = (uint8_t)((z ^ (z >> 31)) >> ((x & 7) * 8));
        }
    }
}

struct big_src {
    uint64_t seed, size, at;
};

static zip_int64_t big_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
    struct big_src *b = ud;
    switch (cmd) {
    case ZIP_SOURCE_OPEN:
        b->at = 0;
        return 0;
    case ZIP_SOURCE_READ: {
        zip_uint64_t n = b->size - b->at < len ? b->size - b->at : len;
        big_fill(b->seed, b->at, data, (size_t)n);
        b->at += n;
        return (zip_int64_t)n;
    }
    case ZIP_SOURCE_CLOSE:
        return 0;
    case ZIP_SOURCE_STAT: {
        zip_stat_t *st = data;
        zip_stat_init(st);
        st->size = b->size;
        st->valid |= ZIP_STAT_SIZE;
        return sizeof *st;
    }
    case ZIP_SOURCE_ERROR:
        return 2 * sizeof(int);
    case ZIP_SOURCE_FREE:
        return 0;
    case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                              ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE,
                                              -1);
    default:
        return -1;
    }
}

/* A sink comparing what it gets with the file f as it goes. */
struct cmp_sink {
    FILE *f;
    uint64_t at, first_diff;
    uint8_t buf[1 << 16];
};

static int cmp_write(void *ctx, const void *p, size_t n)
{
    struct cmp_sink *c = ctx;
    const uint8_t *b = p;
    while (n > 0) {
        size_t k = n < sizeof c->buf ? n : sizeof c->buf, got = fread(c->buf, 1, k, c->f);
        for (size_t i = 0; i < k; i++)
            if ((i >= got || c->buf[i] != b[i]) && c->first_diff == UINT64_MAX)
                c->first_diff = c->at + i;
        c->at += k;
        b += k;
        n -= k;
    }
    return TROVE_OK;
}

/* Entries sizes[0..n) of made-up bytes as a bundle by libzip (configured as bundle_zip.c
 * configures it) into a file, and by the streaming writer against that file. */
static void zip64_case(const uint64_t *sizes, size_t n, int deflate, uint64_t seed0,
                       const char *what)
{
    char path[] = "/tmp/trove-zip64-XXXXXX";
    struct cmp_sink *c = calloc(1, sizeof *c);
    struct trove_sink sk = {cmp_write, c};
    struct trove_bundle_writer *w = NULL;
    struct tm tm;
    time_t epoch;
    zip_t *za;
    int fd = mkstemp(path), zerr = 0;
    uint8_t *chunk = malloc(1 << 20);

    CHECK(fd >= 0);
    close(fd);
    memset(&tm, 0, sizeof tm);
    tm.tm_year = 80;
    tm.tm_mday = 1;
    tm.tm_isdst = -1;
    epoch = mktime(&tm);
    za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
    CHECK(za != NULL);
    for (size_t i = 0; za && i < n; i++) {
        struct big_src *b = calloc(1, sizeof *b);
        char name[32];
        zip_source_t *src;
        zip_int64_t idx;
        b->seed = seed0 + i;
        b->size = sizes[i];
        snprintf(name, sizeof name, "e%zu.bin", i);
        src = zip_source_function(za, big_cb, b);
        idx = zip_file_add(za, name, src, ZIP_FL_ENC_UTF_8);
        CHECK(idx >= 0);
        CHECK(zip_set_file_compression(za, (zip_uint64_t)idx, deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE,
                                       deflate ? 6 : 0) == 0);
        CHECK(zip_file_set_mtime(za, (zip_uint64_t)idx, epoch, 0) == 0);
        CHECK(zip_file_set_external_attributes(za, (zip_uint64_t)idx, 0, ZIP_OPSYS_UNIX,
                                               (zip_uint32_t)0100644 << 16) == 0);
    }
    CHECK(za && zip_close(za) == 0); /* the sources are freed by then; their structs leak */
    c->f = fopen(path, "rb");
    c->first_diff = UINT64_MAX;
    CHECK(c->f != NULL);
    CHECK_EQ_INT(trove_bundle_writer_new(deflate, &sk, &w), TROVE_OK);
    for (size_t i = 0; c->f && i < n; i++) {
        struct trove_bytes stored = {0};
        struct trove_sink ss = {trove_bytes_sink_write, &stored};
        struct trove_bundle_enc *enc = NULL;
        struct trove_bundle_entry_info info;
        char name[32];
        FILE *tmp = tmpfile();
        snprintf(name, sizeof name, "e%zu.bin", i);
        /* the stored form goes to a temp file when it is large (stored entries) */
        CHECK_EQ_INT(trove_bundle_enc_new(deflate, &ss, &enc), TROVE_OK);
        for (uint64_t at = 0; at < sizes[i];) {
            size_t k = sizes[i] - at < (1u << 20) ? (size_t)(sizes[i] - at) : (1u << 20);
            big_fill(seed0 + i, at, chunk, k);
            CHECK_EQ_INT(trove_bundle_enc_write(enc, chunk, k), TROVE_OK);
            if (stored.len >= (64u << 20)) {
                CHECK(fwrite(stored.ptr, 1, stored.len, tmp) == stored.len);
                stored.len = 0;
            }
            at += k;
        }
        CHECK_EQ_INT(trove_bundle_enc_finish(enc, &info), TROVE_OK);
        trove_bundle_enc_free(enc);
        CHECK(fwrite(stored.ptr, 1, stored.len, tmp) == stored.len);
        trove_bytes_free(&stored);
        rewind(tmp);
        CHECK_EQ_INT(trove_bundle_writer_begin(w, name, &info, NULL), TROVE_OK);
        for (;;) {
            size_t got = fread(chunk, 1, 1u << 20, tmp);
            if (got == 0)
                break;
            CHECK_EQ_INT(trove_bundle_writer_data(w, chunk, got), TROVE_OK);
        }
        fclose(tmp);
    }
    CHECK_EQ_INT(trove_bundle_writer_finish(w, NULL), TROVE_OK);
    if (c->f) {
        uint8_t one;
        CHECK(fread(&one, 1, 1, c->f) == 0); /* libzip's file has no more */
        fclose(c->f);
    }
    CHECK(c->first_diff == UINT64_MAX);
    printf("zip64 %s: %llu bytes, %s\n", what, (unsigned long long)c->at,
           c->first_diff == UINT64_MAX ? "the same as libzip's" : "DIFFERENT from libzip's");
    trove_bundle_writer_free(w);
    unlink(path);
    free(chunk);
    free(c);
}

static void test_zip64(void)
{
    const char *env = getenv("TROVE_TEST_ZIP64");
    static const uint64_t exact[] = {1000, 0xffffffffull, 3000};
    static const uint64_t over[] = {(1ull << 32) + 17, 5};
    static const uint64_t forced[] = {4293656964ull, 100};
    static const uint64_t noisy[] = {(1ull << 32) + 5, 70000};

    if (!env || strcmp(env, "1") != 0) {
        printf("zip64 cases skipped (TROVE_TEST_ZIP64=1 runs them: minutes, 5 GiB of disk)\n");
        return;
    }
    zip64_case(exact, 3, 0, 0, "stored, an entry of 0xffffffff bytes, one after it");
    zip64_case(over, 2, 0, 0, "stored, an entry over 4 GiB, one after it");
    zip64_case(forced, 2, 1, 0, "deflated, an entry libzip forces to zip64, one after it");
    zip64_case(noisy, 2, 1, 100, "deflated, a random entry whose deflate stream passes 4 GiB, "
                                  "one after it");
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_sizes);
    RUN(test_large);
    RUN(test_many);
    RUN(test_reads_back);
    RUN(test_errors);
    RUN(test_oom);
    RUN(test_zip64);
    return test_done();
}
