/*
 * test_backend.c: object digests and the filesystem object backend — digest vectors
 * against xxhsum, hex round trips and bad names; put/get/size/delete round trips (empty,
 * 1 byte, 3 MiB), put-if-absent never overwriting, the limit on get, the zero digest,
 * list against the set of puts with stranger files around, the on-disk layout, cleaning
 * of dir/tmp at open, and 4 processes putting the same objects at once. Every test works
 * in a fresh mkdtemp directory that is removed at the end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "trove/backend.h"

static char root[64];

static void fill_random(uint8_t *p, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(test_rand(seed) >> 24);
}

static void object_path(const char *dir, const struct trove_digest *d, char *out, size_t n)
{
    char hex[33];
    trove_digest_hex(d, hex);
    snprintf(out, n, "%s/objects/%.2s/%s", dir, hex, hex);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* ---- digests ------------------------------------------------------------------------- */

static void check_digest_hex(const char *input, size_t len, const char *want)
{
    struct trove_digest d;
    char hex[33];
    trove_digest_of(input, len, &d);
    trove_digest_hex(&d, hex);
    if (strcmp(hex, want) != 0)
        fprintf(stderr, "digest of \"%s\": %s, want %s\n", input, hex, want);
    CHECK(strcmp(hex, want) == 0);
}

static void test_digest(void)
{
    struct trove_digest d, e, zero = {{0}};
    char hex[33], bad[40];
    uint64_t seed = 1;
    char *exact;

    /* Expected values from xxhsum 0.8.1 (`xxhsum -H2`, `xxhsum -H3`), canonical form. */
    check_digest_hex("", 0, "99aa06d3014798d86001c324468d497f");
    check_digest_hex("abc", 3, "06b05ab6733a618578af5f94892f3950");
    check_digest_hex("The quick brown fox jumps over the lazy dog", 43,
                     "ddd650205ca3e7fa24a1cc2e3a8a7651");
    CHECK(trove_checksum64("abc", 3) == 0x78af5f94892f3950ULL);
    CHECK(trove_checksum64("", 0) == 0x2d06800538d394c2ULL);

    for (int i = 0; i < 1000; i++) {
        fill_random(d.b, sizeof d.b, &seed);
        trove_digest_hex(&d, hex);
        CHECK(strlen(hex) == 32);
        CHECK(strspn(hex, "0123456789abcdef") == 32);
        memset(&e, 0xee, sizeof e);
        CHECK_EQ_INT(trove_digest_parse(hex, &e), TROVE_OK);
        CHECK(trove_digest_equal(&d, &e));
        for (int k = 0; k < 32; k++) /* upper case is accepted too */
            if (hex[k] >= 'a')
                hex[k] = (char)(hex[k] - 'a' + 'A');
        memset(&e, 0, sizeof e);
        CHECK_EQ_INT(trove_digest_parse(hex, &e), TROVE_OK);
        CHECK(trove_digest_equal(&d, &e));
    }
    CHECK(trove_digest_is_zero(&zero));
    d = zero;
    d.b[15] = 1;
    CHECK(!trove_digest_is_zero(&d));
    CHECK(!trove_digest_equal(&d, &zero));

    /* Bad names; e must be left untouched. */
    memset(&e, 0x5a, sizeof e);
    d = e;
    strcpy(bad, "0123456789abcdef0123456789abcdef");
    CHECK_EQ_INT(trove_digest_parse(bad, &e), TROVE_OK);
    e = d;
    bad[31] = 0; /* 31 digits */
    CHECK_EQ_INT(trove_digest_parse(bad, &e), TROVE_ERR_INVALID);
    strcpy(bad, "0123456789abcdef0123456789abcdef0"); /* 33 digits */
    CHECK_EQ_INT(trove_digest_parse(bad, &e), TROVE_ERR_INVALID);
    strcpy(bad, "0123456789abcdef0123456789abcdef\n");
    CHECK_EQ_INT(trove_digest_parse(bad, &e), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_digest_parse("", &e), TROVE_ERR_INVALID);
    const char *nonhex = "gG -x:/@`";
    for (int pos = 0; pos < 32; pos += 7) {
        for (const char *c = nonhex; *c; c++) {
            strcpy(bad, "0123456789abcdef0123456789abcdef");
            bad[pos] = *c;
            CHECK_EQ_INT(trove_digest_parse(bad, &e), TROVE_ERR_INVALID);
        }
    }
    strcpy(bad, "0123456789abcdef0123456789abcdef");
    bad[31] = 'z';
    CHECK_EQ_INT(trove_digest_parse(bad, &e), TROVE_ERR_INVALID);
    CHECK(trove_digest_equal(&d, &e));
    /* A short name in an exactly sized buffer: the parser must stop at the NUL (ASan). */
    for (size_t n = 0; n < 32; n++) {
        exact = malloc(n + 1);
        memset(exact, 'a', n);
        exact[n] = 0;
        CHECK_EQ_INT(trove_digest_parse(exact, &e), TROVE_ERR_INVALID);
        free(exact);
    }
}

/* ---- the filesystem backend ---------------------------------------------------------- */

static int put_obj(struct trove_backend *be, const void *p, size_t n, struct trove_digest *d,
                   int *created)
{
    trove_digest_of(p, n, d);
    return trove_backend_put(be, d, p, n, created);
}

static void roundtrip(struct trove_backend *be, const char *dir, const void *p, size_t n)
{
    struct trove_digest d;
    struct trove_bytes got = {0};
    uint64_t size = 99;
    int created = -1;
    char path[512];
    uint8_t *file;
    size_t flen = 12345;

    CHECK_EQ_INT(put_obj(be, p, n, &d, &created), TROVE_OK);
    CHECK_EQ_INT(created, 1);
    CHECK_EQ_INT(trove_backend_get(be, &d, &got, SIZE_MAX), TROVE_OK);
    CHECK_EQ_INT(got.len, n);
    CHECK(n == 0 || (got.len == n && memcmp(got.ptr, p, n) == 0));
    CHECK_EQ_INT(trove_backend_size(be, &d, &size), TROVE_OK);
    CHECK_EQ_INT(size, n);
    /* Layout: objects/<first 2 hex>/<32 hex> holds exactly the bytes. */
    object_path(dir, &d, path, sizeof path);
    file = test_read_file(path, &flen);
    CHECK(file != NULL);
    if (file) {
        CHECK_EQ_INT(flen, n);
        CHECK(flen != n || n == 0 || memcmp(file, p, n) == 0);
    }
    free(file);
    trove_bytes_free(&got);
}

static void test_basic(const char *dir)
{
    struct trove_backend *be = NULL;
    struct trove_digest d, zero = {{0}};
    struct trove_bytes got = {0};
    uint64_t seed = 7, size;
    size_t big_n = 3u << 20;
    uint8_t *big = malloc(big_n), one = 0x42;
    int created;
    char path[512];
    struct stat st1, st2;

    CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
    if (!be || !big) {
        free(big);
        return;
    }
    fill_random(big, big_n, &seed);
    roundtrip(be, dir, "", 0);
    roundtrip(be, dir, &one, 1);
    roundtrip(be, dir, big, big_n);

    /* put-if-absent: a second put is created = 0, even with other bytes, and the file is
     * not touched (same inode, same bytes). */
    trove_digest_of(big, big_n, &d);
    object_path(dir, &d, path, sizeof path);
    CHECK(stat(path, &st1) == 0);
    created = -1;
    CHECK_EQ_INT(trove_backend_put(be, &d, big, big_n, &created), TROVE_OK);
    CHECK_EQ_INT(created, 0);
    CHECK_EQ_INT(trove_backend_put(be, &d, "forged", 6, &created), TROVE_OK);
    CHECK_EQ_INT(created, 0);
    CHECK_EQ_INT(trove_backend_put(be, &d, big + 1, big_n - 1, NULL), TROVE_OK);
    CHECK(stat(path, &st2) == 0);
    CHECK(st1.st_ino == st2.st_ino);
    CHECK(st1.st_mtime == st2.st_mtime);
    CHECK_EQ_INT(st2.st_size, big_n);
    CHECK_EQ_INT(trove_backend_get(be, &d, &got, big_n), TROVE_OK);
    CHECK(got.len == big_n && memcmp(got.ptr, big, big_n) == 0);

    test_backend_limits(be, &d, big_n);

    /* Delete, then everything says not found; a put brings it back. */
    CHECK_EQ_INT(trove_backend_delete(be, &d), TROVE_OK);
    CHECK(access(path, F_OK) != 0);
    CHECK_EQ_INT(trove_backend_get(be, &d, &got, SIZE_MAX), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_backend_size(be, &d, &size), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_backend_delete(be, &d), TROVE_ERR_NOTFOUND);
    created = -1;
    CHECK_EQ_INT(trove_backend_put(be, &d, big, big_n, &created), TROVE_OK);
    CHECK_EQ_INT(created, 1);
    CHECK_EQ_INT(trove_backend_size(be, &d, &size), TROVE_OK);
    CHECK_EQ_INT(size, big_n);

    /* The zero digest and other arguments outside the contract. */
    created = -1;
    CHECK_EQ_INT(trove_backend_put(be, &zero, "x", 1, &created), TROVE_ERR_INVALID);
    CHECK_EQ_INT(created, 0);
    CHECK_EQ_INT(trove_backend_get(be, &zero, &got, SIZE_MAX), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_backend_size(be, &zero, &size), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_backend_delete(be, &zero), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_backend_put(be, &d, NULL, 1, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_backend_put(NULL, &d, "x", 1, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_backend_get(be, &d, NULL, SIZE_MAX), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_backend_list(be, NULL, NULL), TROVE_ERR_INVALID);
    {
        struct trove_backend *none = be;
        CHECK_EQ_INT(trove_backend_fs_open("", &none), TROVE_ERR_INVALID);
        CHECK(none == NULL);
        CHECK_EQ_INT(trove_backend_fs_open(NULL, &none), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_backend_fs_open(dir, NULL), TROVE_ERR_INVALID);
    }

    /* Nothing is left in dir/tmp by successful puts. */
    snprintf(path, sizeof path, "%s/tmp", dir);
    CHECK_EQ_INT(test_count_dir(path), 0);

    trove_bytes_free(&got);
    trove_backend_close(be);
    free(big);
}

/* ---- list ---------------------------------------------------------------------------- */

struct collect {
    struct trove_digest *d;
    size_t n, cap;
    int stop_after; /* return 7 after this many calls, 0 = never */
};

static int collect_fn(void *ctx, const struct trove_digest *d)
{
    struct collect *c = ctx;
    if (c->n < c->cap)
        c->d[c->n] = *d;
    c->n++;
    return c->stop_after && (int)c->n >= c->stop_after ? 7 : 0;
}

static int cmp_digest(const void *a, const void *b) { return memcmp(a, b, 16); }

#define LIST_N 300

static void check_list(struct trove_backend *be, const struct trove_digest *want_in, size_t n)
{
    struct trove_digest got[LIST_N + 16], want[LIST_N + 16];
    struct collect c = {got, 0, LIST_N + 16, 0};
    CHECK_EQ_INT(trove_backend_list(be, collect_fn, &c), 0);
    CHECK_EQ_INT(c.n, n);
    if (c.n != n || n > LIST_N + 16)
        return;
    memcpy(want, want_in, n * sizeof *want);
    qsort(got, n, sizeof *got, cmp_digest);
    qsort(want, n, sizeof *want, cmp_digest);
    CHECK(memcmp(got, want, n * sizeof *got) == 0);
}

static void test_list(const char *dir)
{
    struct trove_backend *be = NULL;
    struct trove_digest want[LIST_N], d;
    struct trove_digest one[1];
    struct collect c = {one, 0, 1, 1};
    uint8_t buf[2048];
    uint64_t seed = 99;
    char path[1024], hex[33], fan[400];
    int created;

    CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
    if (!be)
        return;
    check_list(be, want, 0); /* an empty store lists nothing */
    for (int i = 0; i < LIST_N; i++) {
        size_t n = (size_t)(test_rand(&seed) % sizeof buf);
        fill_random(buf, n, &seed);
        buf[0] = (uint8_t)i; /* distinct even when n is tiny */
        buf[1] = (uint8_t)(i >> 8);
        created = 0;
        CHECK_EQ_INT(put_obj(be, buf, n < 2 ? 2 : n, &want[i], &created), TROVE_OK);
        CHECK_EQ_INT(created, 1);
    }
    check_list(be, want, LIST_N);

    /* Strangers next to the objects are never listed. */
    trove_digest_hex(&want[0], hex);
    snprintf(fan, sizeof fan, "%s/objects/%.2s", dir, hex);
    snprintf(path, sizeof path, "%s/junk", fan);
    CHECK(write_file(path, "junk") == 0);
    snprintf(path, sizeof path, "%s/%.31s", fan, hex); /* 31 digits */
    CHECK(write_file(path, "short") == 0);
    snprintf(path, sizeof path, "%s/%s.tmp", fan, hex);
    CHECK(write_file(path, "suffix") == 0);
    snprintf(path, sizeof path, "%s/%.2s%s", fan, hex, "0000000000000000000000000000ab"); /* dir */
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/%.2s%s", fan, hex, "0000000000000000000000000000cd");
    CHECK(symlink("../../../nowhere", path) == 0);
    snprintf(path, sizeof path, "%s/%.2sABCDEF0000000000000000000000ef", fan, hex); /* upper */
    CHECK(write_file(path, "upper") == 0);
    snprintf(path, sizeof path, "%s/%s", fan, hex[0] == 'f' ? "0" : "f"); /* wrong fan-out */
    strcat(path, hex + 1);
    CHECK(write_file(path, "misplaced") == 0);
    snprintf(path, sizeof path, "%s/objects/00", dir); /* the zero digest is never an object */
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/objects/00/00000000000000000000000000000000", dir);
    CHECK(write_file(path, "zero") == 0);
    snprintf(path, sizeof path, "%s/objects/zz", dir);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/objects/zz/zz%s", dir, hex + 2);
    CHECK(write_file(path, "bad fan") == 0);
    snprintf(path, sizeof path, "%s/objects/%s", dir, hex); /* an object outside the fan-out */
    CHECK(write_file(path, "flat") == 0);
    snprintf(path, sizeof path, "%s/tmp/%ld-1-0.tmp", dir, (long)getpid());
    CHECK(write_file(path, "in flight") == 0);
    check_list(be, want, LIST_N);

    /* Each listed digest can be read back. */
    for (int i = 0; i < LIST_N; i += 37) {
        struct trove_bytes got = {0};
        CHECK_EQ_INT(trove_backend_get(be, &want[i], &got, sizeof buf), TROVE_OK);
        trove_digest_of(got.ptr, got.len, &d);
        CHECK(trove_digest_equal(&d, &want[i]));
        trove_bytes_free(&got);
    }

    /* A nonzero return from the callback stops the walk and is returned. */
    CHECK_EQ_INT(trove_backend_list(be, collect_fn, &c), 7);
    CHECK_EQ_INT(c.n, 1);

    /* After deleting a third, list reports the rest. */
    for (int i = 0; i < LIST_N / 3; i++)
        CHECK_EQ_INT(trove_backend_delete(be, &want[i]), TROVE_OK);
    check_list(be, want + LIST_N / 3, LIST_N - LIST_N / 3);
    trove_backend_close(be);
}

/* ---- dir/tmp cleaning ---------------------------------------------------------------- */

static void test_tmp_cleaning(const char *dir)
{
    struct trove_backend *be = NULL;
    char tmp[512], path[600], live[600];
    struct timespec old[2];

    CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
    trove_backend_close(be);
    be = NULL;
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    snprintf(path, sizeof path, "%s/junk", tmp);
    CHECK(write_file(path, "x") == 0);
    snprintf(path, sizeof path, "%s/999999999-1-0123456789abcdef.tmp", tmp); /* dead pid */
    CHECK(write_file(path, "x") == 0);
    snprintf(path, sizeof path, "%s/-5-0.tmp", tmp);
    CHECK(write_file(path, "x") == 0);
    snprintf(live, sizeof live, "%s/%ld-1-0123456789abcdef.tmp", tmp, (long)getpid());
    CHECK(write_file(live, "x") == 0);
    CHECK_EQ_INT(test_count_dir(tmp), 4);

    /* Reopening removes the orphans but spares a put in flight in a live process. */
    CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
    trove_backend_close(be);
    be = NULL;
    CHECK_EQ_INT(test_count_dir(tmp), 1);
    CHECK(access(live, F_OK) == 0);

    /* ... unless it is more than a day old. */
    old[0].tv_sec = old[1].tv_sec = time(NULL) - 2 * 24 * 3600;
    old[0].tv_nsec = old[1].tv_nsec = 0;
    CHECK(utimensat(AT_FDCWD, live, old, 0) == 0);
    CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
    trove_backend_close(be);
    CHECK_EQ_INT(test_count_dir(tmp), 0);
}

/* ---- concurrent puts ----------------------------------------------------------------- */

#define PROCS 4
#define SHARED_N 50

static size_t shared_len(int i) { return (size_t)(i * 997) % 70000; }

static void shared_obj(int i, uint8_t *buf)
{
    uint64_t seed = 1000 + (uint64_t)i;
    size_t n = shared_len(i);
    fill_random(buf, n, &seed);
    if (n >= 2) {
        buf[0] = (uint8_t)i;
        buf[1] = 0xa5;
    }
}

/* A child: open its own handle (whose tmp cleaning runs while siblings put), put all
 * objects starting at a different place, exit with the number it created, 255 on error. */
static void child(const char *dir, int k)
{
    static uint8_t buf[70000];
    struct trove_backend *be = NULL;
    int made = 0;
    if (trove_backend_fs_open(dir, &be) != TROVE_OK)
        _exit(255);
    for (int j = 0; j < SHARED_N; j++) {
        int i = (j + k * 13) % SHARED_N, created = -1;
        struct trove_digest d;
        shared_obj(i, buf);
        trove_digest_of(buf, shared_len(i), &d);
        if (trove_backend_put(be, &d, buf, shared_len(i), &created) != TROVE_OK)
            _exit(255);
        made += created;
    }
    trove_backend_close(be);
    _exit(made);
}

static void test_concurrent(const char *dir)
{
    static uint8_t buf[70000];
    struct trove_backend *be = NULL;
    struct trove_digest want[SHARED_N];
    pid_t pids[PROCS];
    int total = 0;
    char tmp[512];

    fflush(NULL);
    for (int k = 0; k < PROCS; k++) {
        pids[k] = fork();
        CHECK(pids[k] >= 0);
        if (pids[k] == 0)
            child(dir, k);
    }
    for (int k = 0; k < PROCS; k++) {
        int status = 0;
        if (pids[k] <= 0)
            continue;
        CHECK(waitpid(pids[k], &status, 0) == pids[k]);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) <= SHARED_N);
        total += WIFEXITED(status) && WEXITSTATUS(status) <= SHARED_N ? WEXITSTATUS(status) : 0;
    }
    CHECK_EQ_INT(total, SHARED_N); /* each object created exactly once */

    CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
    if (!be)
        return;
    for (int i = 0; i < SHARED_N; i++) {
        struct trove_bytes got = {0};
        shared_obj(i, buf);
        trove_digest_of(buf, shared_len(i), &want[i]);
        CHECK_EQ_INT(trove_backend_get(be, &want[i], &got, sizeof buf), TROVE_OK);
        CHECK(got.len == shared_len(i) && (got.len == 0 || memcmp(got.ptr, buf, got.len) == 0));
        trove_bytes_free(&got);
    }
    check_list(be, want, SHARED_N);
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    CHECK_EQ_INT(test_count_dir(tmp), 0);
    trove_backend_close(be);
}

/* Object i of the pack test: 1..3000 bytes of a pattern that differs per i. */
static size_t pack_obj(int i, uint8_t *buf)
{
    size_t n = 1 + (size_t)(i * 977) % 3000;
    for (size_t k = 0; k < n; k++)
        buf[k] = (uint8_t)(i * 31 + k * 7);
    return n;
}

/* Pack files in dir's store (-1: no packs directory). */
static int count_packs(const char *dir)
{
    char packs[512];
    struct dirent *de;
    DIR *dp;
    int n = 0;

    snprintf(packs, sizeof packs, "%s/objects/packs", dir);
    if (!(dp = opendir(packs)))
        return -1;
    while ((de = readdir(dp)) != NULL)
        n += strlen(de->d_name) > 5 && !strcmp(de->d_name + strlen(de->d_name) - 5, ".pack");
    closedir(dp);
    return n;
}

/*
 * Staged puts become one pack file: every object reads back, lists, survives a reopen;
 * deletes drop objects from the index, a pack under half live is rewritten without its
 * dead objects, an empty one is unlinked; deletes survive a reopen (the dead lists); a
 * damaged pack is skipped at open.
 */
static void test_packs(const char *dir)
{
    enum { N = 60 };
    struct trove_backend *be = NULL;
    struct trove_digest d[N];
    uint8_t buf[3000];

    CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
    if (!be)
        return;
    for (int i = 0; i < N; i++) {
        size_t n = pack_obj(i, buf);
        trove_digest_of(buf, n, &d[i]);
        CHECK_EQ_INT(trove_backend_stage(be, &d[i], buf, n), TROVE_OK);
        CHECK_EQ_INT(trove_backend_stage(be, &d[i], buf, n), TROVE_OK); /* once only */
    }
    CHECK_EQ_INT(count_packs(dir), -1); /* nothing written before publish */
    {
        uint64_t overhead = 0;
        CHECK_EQ_INT(trove_backend_publish(be, &overhead), TROVE_OK);
        CHECK_EQ_INT(overhead, 32 * N + 32); /* the index and the footer */
        CHECK_EQ_INT(count_packs(dir), 1);
        CHECK_EQ_INT(trove_backend_publish(be, &overhead), TROVE_OK); /* nothing staged */
        CHECK_EQ_INT(overhead, 0);
    }
    CHECK_EQ_INT(count_packs(dir), 1);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < N; i++) {
            struct trove_bytes got = {0};
            uint64_t len = 0;
            size_t n = pack_obj(i, buf);
            CHECK_EQ_INT(trove_backend_get(be, &d[i], &got, sizeof buf), TROVE_OK);
            CHECK(got.len == n && memcmp(got.ptr, buf, n) == 0);
            CHECK_EQ_INT(trove_backend_size(be, &d[i], &len), TROVE_OK);
            CHECK_EQ_INT(len, n);
            CHECK_EQ_INT(trove_backend_get(be, &d[i], &got, n - 1), TROVE_ERR_LIMIT);
            trove_bytes_free(&got);
        }
        check_list(be, d, N);
        trove_backend_close(be); /* the index comes back from the pack's own at open */
        be = NULL;
        CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
        if (!be)
            return;
    }
    /* A third of the objects deleted: the pack stays (over half its bytes are live). */
    for (int i = 0; i < N / 3; i++)
        CHECK_EQ_INT(trove_backend_delete(be, &d[i]), TROVE_OK);
    CHECK_EQ_INT(trove_backend_delete(be, &d[0]), TROVE_ERR_NOTFOUND);
    check_list(be, d + N / 3, N - N / 3);
    /* Past half: rewritten without the dead, which are then gone for good. */
    for (int i = N / 3; i < 2 * N / 3; i++)
        CHECK_EQ_INT(trove_backend_delete(be, &d[i]), TROVE_OK);
    CHECK_EQ_INT(count_packs(dir), 1);
    trove_backend_close(be);
    be = NULL;
    CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
    if (!be)
        return;
    check_list(be, d + 2 * N / 3, N - 2 * N / 3);
    for (int i = 2 * N / 3; i < N; i++) {
        struct trove_bytes got = {0};
        size_t n = pack_obj(i, buf);
        CHECK_EQ_INT(trove_backend_get(be, &d[i], &got, sizeof buf), TROVE_OK);
        CHECK(got.len == n && memcmp(got.ptr, buf, n) == 0);
        trove_bytes_free(&got);
    }
    /* All gone: the pack file too. */
    for (int i = 2 * N / 3; i < N; i++)
        CHECK_EQ_INT(trove_backend_delete(be, &d[i]), TROVE_OK);
    CHECK_EQ_INT(count_packs(dir), 0);
    check_list(be, d, 0);
    /* A damaged pack is skipped: its objects are absent, nothing crashes. */
    for (int i = 0; i < 4; i++) {
        size_t n = pack_obj(i, buf);
        CHECK_EQ_INT(trove_backend_stage(be, &d[i], buf, n), TROVE_OK);
    }
    CHECK_EQ_INT(trove_backend_publish(be, NULL), TROVE_OK);
    trove_backend_close(be);
    be = NULL;
    {
        /* One byte of the index changed: its checksum fails. */
        char packs[512], path[1024];
        struct dirent *de;
        struct stat st;
        DIR *dp;
        int fd, done = 0;
        snprintf(packs, sizeof packs, "%s/objects/packs", dir);
        dp = opendir(packs);
        while (dp && (de = readdir(dp)) != NULL && !done) {
            if (de->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "%s/%s", packs, de->d_name);
            fd = open(path, O_WRONLY);
            CHECK(fd >= 0 && fstat(fd, &st) == 0 && pwrite(fd, "X", 1, st.st_size - 40) == 1);
            if (fd >= 0)
                close(fd);
            done = 1;
        }
        if (dp)
            closedir(dp);
        CHECK(done);
    }
    CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
    if (!be)
        return;
    {
        struct trove_bytes got = {0};
        CHECK_EQ_INT(trove_backend_get(be, &d[0], &got, sizeof buf), TROVE_ERR_NOTFOUND);
        trove_bytes_free(&got);
    }
    check_list(be, d, 0);
    trove_backend_close(be);
}

static int count_record(void *ctx, const struct trove_digest *d)
{
    (void)d;
    ++*(int *)ctx;
    return 0;
}

/* A get whose bytes do not hash to the name: TROVE_ERR_CHECKSUM, the name quarantined (even
 * through a read-only handle), never served again until good bytes are put, which heal it;
 * wrong bytes under the name are refused. Loose and packed objects alike. */
static void test_quarantine(const char *dir)
{
    struct trove_backend *be = NULL, *ro = NULL;
    struct trove_bytes got = {0};
    struct trove_digest d[2];
    uint8_t buf[2][3000], bad[3000];
    char path[512], rec[512];
    struct stat st;
    int created = 0, n = 0;

    CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
    if (!be)
        return;
    for (int i = 0; i < 2; i++) {
        uint64_t seed = 40 + (uint64_t)i;
        fill_random(buf[i], sizeof buf[i], &seed);
        trove_digest_of(buf[i], sizeof buf[i], &d[i]);
    }
    CHECK_EQ_INT(trove_backend_put(be, &d[0], buf[0], sizeof buf[0], NULL), TROVE_OK); /* loose */
    CHECK_EQ_INT(trove_backend_stage(be, &d[1], buf[1], sizeof buf[1]), TROVE_OK);     /* packed */
    CHECK_EQ_INT(trove_backend_publish(be, NULL), TROVE_OK);
    /* Damage the loose one in place, read it through a read-only handle. */
    object_path(dir, &d[0], path, sizeof path);
    memcpy(bad, buf[0], sizeof bad);
    bad[77] ^= 0x10;
    {
        FILE *f = fopen(path, "r+b");
        CHECK(f && fseek(f, 77, SEEK_SET) == 0 && fputc(bad[77], f) != EOF);
        if (f)
            fclose(f);
    }
    CHECK_EQ_INT(trove_backend_fs_open_readonly(dir, &ro), TROVE_OK);
    CHECK_EQ_INT(trove_backend_quarantined(ro, &d[0]), 0);
    CHECK_EQ_INT(trove_backend_get(ro, &d[0], &got, 1 << 20), TROVE_ERR_CHECKSUM);
    CHECK_EQ_INT(got.len, 0);
    CHECK_EQ_INT(trove_backend_quarantined(ro, &d[0]), 1);
    trove_backend_close(ro);
    {
        char hex[33];
        trove_digest_hex(&d[0], hex);
        snprintf(rec, sizeof rec, "%s/quarantine/%s", dir, hex);
        CHECK(stat(rec, &st) == 0 && st.st_size > 0);
    }
    /* A new handle knows it from the record: never served, even were the bytes good. */
    CHECK_EQ_INT(trove_backend_quarantined(be, &d[0]), 0); /* opened before the record */
    trove_backend_close(be);
    CHECK_EQ_INT(trove_backend_fs_open(dir, &be), TROVE_OK);
    CHECK_EQ_INT(trove_backend_quarantined(be, &d[0]), 1);
    CHECK_EQ_INT(trove_backend_get(be, &d[0], &got, 1 << 20), TROVE_ERR_CHECKSUM);
    CHECK_EQ_INT(trove_backend_quarantine_list(be, count_record, &n), TROVE_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(trove_backend_get_raw(be, &d[0], &got, 1 << 20), TROVE_OK); /* the raw bytes */
    CHECK(got.len == sizeof bad && memcmp(got.ptr, bad, sizeof bad) == 0);
    /* Other bytes under its name are refused; its own bytes heal it. */
    CHECK_EQ_INT(trove_backend_put(be, &d[0], bad, sizeof bad, &created), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_backend_quarantined(be, &d[0]), 1);
    CHECK_EQ_INT(trove_backend_put(be, &d[0], buf[0], sizeof buf[0], &created), TROVE_OK);
    CHECK_EQ_INT(created, 1);
    CHECK_EQ_INT(trove_backend_quarantined(be, &d[0]), 0);
    CHECK(stat(rec, &st) != 0);
    CHECK_EQ_INT(trove_backend_get(be, &d[0], &got, 1 << 20), TROVE_OK);
    CHECK(got.len == sizeof buf[0] && memcmp(got.ptr, buf[0], sizeof buf[0]) == 0);
    /* The packed one: quarantined by hand (as verify's deep read would), healed by a stage. */
    CHECK_EQ_INT(trove_backend_quarantine(be, &d[1], "test"), TROVE_OK);
    CHECK_EQ_INT(trove_backend_get(be, &d[1], &got, 1 << 20), TROVE_ERR_CHECKSUM);
    CHECK_EQ_INT(trove_backend_stage(be, &d[1], buf[1], sizeof buf[1]), TROVE_OK);
    CHECK_EQ_INT(trove_backend_quarantined(be, &d[1]), 0);
    CHECK_EQ_INT(trove_backend_get(be, &d[1], &got, 1 << 20), TROVE_OK);
    CHECK(got.len == sizeof buf[1] && memcmp(got.ptr, buf[1], sizeof buf[1]) == 0);
    /* A delete drops a record; NOVERIFY trusts what it reads. */
    CHECK_EQ_INT(trove_backend_quarantine(be, &d[1], "test"), TROVE_OK);
    CHECK_EQ_INT(trove_backend_delete(be, &d[1]), TROVE_OK);
    CHECK_EQ_INT(trove_backend_quarantined(be, &d[1]), 0);
    trove_backend_close(be);
    CHECK_EQ_INT(trove_backend_fs_open_flags(dir, TROVE_BACKEND_NOVERIFY, &be), TROVE_OK);
    {
        FILE *f = fopen(path, "r+b");
        CHECK(f && fseek(f, 77, SEEK_SET) == 0 && fputc(bad[77], f) != EOF);
        if (f)
            fclose(f);
    }
    CHECK_EQ_INT(trove_backend_get(be, &d[0], &got, 1 << 20), TROVE_OK);
    CHECK(got.len == sizeof bad && memcmp(got.ptr, bad, sizeof bad) == 0);
    CHECK_EQ_INT(trove_backend_quarantined(be, &d[0]), 0);
    trove_backend_close(be);
    trove_bytes_free(&got);
}

int main(int argc, char **argv)
{
    char dir[256];

    test_init(argc, argv);
    snprintf(root, sizeof root, "/tmp/trove_backend_XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_digest);
    snprintf(dir, sizeof dir, "%s/basic/nested//store/", root); /* mkdir -p, odd slashes */
    RUN_WITH(test_basic, dir);
    snprintf(dir, sizeof dir, "%s/list", root);
    RUN_WITH(test_list, dir);
    snprintf(dir, sizeof dir, "%s/clean", root);
    RUN_WITH(test_tmp_cleaning, dir);
    snprintf(dir, sizeof dir, "%s/concurrent", root);
    RUN_WITH(test_concurrent, dir);
    snprintf(dir, sizeof dir, "%s/packs", root);
    RUN_WITH(test_packs, dir);
    snprintf(dir, sizeof dir, "%s/quarantine", root);
    RUN_WITH(test_quarantine, dir);
    test_rm_rf(root);
    return test_done();
}
