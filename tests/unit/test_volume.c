/*
 * test_volume.c: the store and its volumes (include/trove/volume.h) — random writes at
 * random offsets against an in-memory model, through commit and reopen; dedup (one object
 * for identical blocks) and zero blocks as empty slots; rewriting identical bytes changes
 * nothing; uncommitted changes dropped at close and their objects collected by gc; resize
 * both ways around a partial last block; snapshots sharing objects and staying read-only;
 * object volumes (each of these with v1 and with v3 recipes); no store-wide metadata (a
 * 4 KiB write's metadata is the same with 1,000 or 100,000 other objects, at most 64 KiB; an
 * old DIR/refs is removed); corrupt recipes (named in the error, other volumes still usable,
 * gc refusing, removal allowed); verify finding missing, truncated and altered objects;
 * names; a read-only store; locks; and the 10 TiB sparse volume whose v1 recipe is
 * 83,886,144 bytes. What is particular to recipe v3 is test_volume_v3.c's.
 */

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "volume_test.h"
#include "trove/recipe.h"
#include "trove/testing.h"
#include "trove/volume.h"

static int fmt; /* the recipe format the format-independent tests run with */

static void test_random_writes(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    const uint64_t size = 10 * BS + 123; /* a partial last block */
    uint8_t *model = calloc(size, 1), *data = malloc(3 * BS);
    uint64_t seed = 42;

    CHECK_EQ_INT(trove_volume_create_format(s, "r", size, BS, fmt, &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, model, size));
    for (int round = 0; round < 300; round++) {
        uint64_t off = test_rand(&seed) % size;
        size_t len = (size_t)(test_rand(&seed) % (3 * BS));
        if (len > size - off)
            len = (size_t)(size - off);
        switch (test_rand(&seed) % 4) {
        case 0: memset(data, 0, len); break;                              /* zeros */
        case 1: memcpy(data, model + (test_rand(&seed) % (size - len + 1)), len); break;
        default: fill_random(data, len, &seed); break;
        }
        CHECK_EQ_INT(trove_volume_write(v, off, data, len), TROVE_OK);
        memcpy(model + off, data, len);
        if (round % 50 == 49) {
            CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
            trove_volume_close(v);
            s = reopen(s, 0);
            CHECK_EQ_INT(trove_volume_open(s, "r", &v, NULL), TROVE_OK);
        }
        if (round % 10 == 0)
            CHECK(volume_equals(v, model, size));
    }
    CHECK(volume_equals(v, model, size));
    /* Reads at unaligned offsets across blocks, and past the end refused. */
    {
        uint8_t buf[BS + 7];
        CHECK_EQ_INT(trove_volume_read(v, BS - 3, buf, sizeof buf), TROVE_OK);
        CHECK(memcmp(buf, model + BS - 3, sizeof buf) == 0);
        CHECK_EQ_INT(trove_volume_read(v, size - 1, buf, 2), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_volume_write(v, size, buf, 1), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_volume_read(v, size, buf, 0), TROVE_OK);
    }
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    trove_store_close(s);
    free(model);
    free(data);
}

static void test_dedup_and_zero(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_volume_info in;
    uint8_t *img = calloc(4 * BS, 1);
    uint64_t seed = 7, gen;

    fill_random(img, BS, &seed);
    memcpy(img + 2 * BS, img, BS); /* slot 2 = slot 0; slot 1 zeros; slot 3 other */
    fill_random(img + 3 * BS, BS, &seed);
    CHECK_EQ_INT(trove_volume_create_format(s, "d", 4 * BS, BS, fmt, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, img, 4 * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.slots, 4);
    CHECK_EQ_INT(in.used_slots, 3);
    CHECK_EQ_INT(in.unique_objects, 2);
    CHECK_EQ_INT(in.stored_bytes, 2 * BS);
    CHECK(in.dirty);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK); /* puts in flight are durable now */
    CHECK_EQ_INT(count_objects(s), 2);              /* the zero block is no object */
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.generation, 2);
    CHECK(!in.dirty);
    if (fmt == V1)
        CHECK_EQ_INT(in.recipe_bytes, 64 + 16 * 4);
    gen = in.generation;
    /* The same bytes again: nothing changes, commit is a no-op. */
    CHECK_EQ_INT(trove_volume_write(v, 0, img, 4 * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK(!in.dirty);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.generation, gen);
    /* Zeroing a block empties its slot. */
    memset(img, 0, BS);
    CHECK_EQ_INT(trove_volume_write(v, 0, img, BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.used_slots, 2);
    CHECK_EQ_INT(in.unique_objects, 2);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    /* A second volume with the same content stores no new object. */
    {
        struct trove_volume *w = NULL;
        CHECK_EQ_INT(trove_volume_create_format(s, "d2", 4 * BS, BS, fmt, &w, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_volume_write(w, 0, img, 4 * BS), TROVE_OK);
        CHECK_EQ_INT(trove_volume_commit(w), TROVE_OK);
        CHECK_EQ_INT(count_objects(s), 2);
        CHECK(volume_equals(w, img, 4 * BS));
        trove_volume_close(w);
    }
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    trove_store_close(s);
    free(img);
}

static void test_uncommitted_dropped(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_gc_report gc;
    uint8_t a[BS], b[BS];
    uint64_t seed = 9;

    fill_random(a, BS, &seed);
    fill_random(b, BS, &seed);
    CHECK_EQ_INT(trove_volume_create_format(s, "u", 2 * BS, BS, fmt, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, a, BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, b, BS), TROVE_OK); /* replaces a in memory */
    {
        uint8_t back[BS]; /* a read waits for the puts in flight */
        CHECK_EQ_INT(trove_volume_read(v, 0, back, BS), TROVE_OK);
        CHECK(memcmp(back, b, BS) == 0);
    }
    CHECK_EQ_INT(count_objects(s), 2);
    /* gc with the change pending keeps both: a is committed, b is live. */
    CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(count_objects(s), 2);
    trove_volume_close(v); /* drops b */
    CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(count_objects(s), 1);
    if (fmt == V1) {
        CHECK_EQ_INT(gc.objects_seen, 2);
        CHECK_EQ_INT(gc.objects_deleted, 1);
        CHECK_EQ_INT(gc.bytes_deleted, BS);
    }
    CHECK_EQ_INT(trove_volume_open(s, "u", &v, NULL), TROVE_OK);
    {
        uint8_t want[2 * BS];
        memcpy(want, a, BS);
        memset(want + BS, 0, BS);
        CHECK(volume_equals(v, want, 2 * BS));
    }
    /* Open twice is refused; remove while open is refused. */
    {
        struct trove_volume *w = NULL;
        CHECK_EQ_INT(trove_volume_open(s, "u", &w, NULL), TROVE_ERR_BUSY);
        CHECK_EQ_INT(trove_volume_remove(s, "u", NULL), TROVE_ERR_BUSY);
    }
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    trove_store_close(s);
}

static void test_resize(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    uint64_t seed = 11, size = 3 * BS + 100;
    uint8_t *model = calloc(8 * BS, 1);
    static const uint64_t sizes[] = {5 * BS + 7, 2 * BS + 1, 2 * BS, 6 * BS - 1, 1, 0,
                                     4 * BS + 4095, 3 * BS};

    fill_random(model, size, &seed);
    CHECK_EQ_INT(trove_volume_create_format(s, "z", size, BS, fmt, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, model, size), TROVE_OK);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t ns = sizes[k];
        CHECK_EQ_INT(trove_volume_resize(v, ns), TROVE_OK);
        if (ns > size)
            memset(model + size, 0, ns - size);
        size = ns;
        CHECK(volume_equals(v, model, size));
        /* Fill the new end with data so the next cut has something to keep. */
        if (size > 10) {
            fill_random(model + size - 10, 10, &seed);
            CHECK_EQ_INT(trove_volume_write(v, size - 10, model + size - 10, 10), TROVE_OK);
        }
        if (k % 2 == 1) {
            CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
            trove_volume_close(v);
            s = reopen(s, 0);
            CHECK_EQ_INT(trove_volume_open(s, "z", &v, NULL), TROVE_OK);
            CHECK(volume_equals(v, model, size));
        }
        CHECK(verify_clean(s, 0));
    }
    /* A resize that is dropped uncommitted leaves the committed size. */
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_resize(v, 7 * BS), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_volume_open(s, "z", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, model, size));
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    trove_store_close(s);
    free(model);
}

static void test_snapshots(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL, *snap = NULL;
    struct trove_gc_report gc;
    struct trove_volume_info in;
    uint8_t a[2 * BS], b[2 * BS];
    uint64_t seed = 13;

    fill_random(a, sizeof a, &seed);
    fill_random(b, sizeof b, &seed);
    CHECK_EQ_INT(trove_volume_create_format(s, "src", sizeof a, BS, fmt, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, a, sizeof a), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_snapshot_create(s, "src", "snap", NULL), TROVE_OK);
    CHECK_EQ_INT(trove_snapshot_create(s, "src", "snap", NULL), TROVE_ERR_EXISTS);
    CHECK_EQ_INT(trove_snapshot_create(s, "nope", "snap2", NULL), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(count_objects(s), 2);
    CHECK_EQ_INT(trove_volume_write(v, 0, b, sizeof b), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_volume_open(s, "snap", &snap, NULL), TROVE_OK);
    CHECK(volume_equals(snap, a, sizeof a));
    CHECK_EQ_INT(trove_volume_info(snap, &in), TROVE_OK);
    CHECK(in.readonly);
    CHECK_EQ_INT(in.generation, 2);
    CHECK_EQ_INT(trove_volume_write(snap, 0, b, 1), TROVE_ERR_READONLY);
    CHECK_EQ_INT(trove_volume_resize(snap, BS), TROVE_ERR_READONLY);
    trove_volume_close(snap);
    /* Removing the source keeps the snapshot's objects; removing both frees everything. */
    CHECK_EQ_INT(trove_volume_remove(s, "src", NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_remove(s, "src", NULL), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(count_objects(s), 2); /* b's two blocks went; a's stay */
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "snap", &snap, NULL), TROVE_OK);
    CHECK(volume_equals(snap, a, sizeof a));
    trove_volume_close(snap);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    CHECK_EQ_INT(trove_volume_remove(s, "snap", NULL), TROVE_OK);
    CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(count_objects(s), 0);
    CHECK_EQ_INT(count_recipe_objects(s), 0); /* nothing names any recipe object now */
    trove_store_close(s);
}

/* Bytes this process has passed to write(2) and friends so far, all threads (the put
 * pool's too): the wchar line of /proc/self/io. */
static uint64_t bytes_written(void)
{
    char line[128];
    unsigned long long v = 0;
    FILE *f = fopen("/proc/self/io", "r");
    CHECK(f != NULL);
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "wchar: %llu", &v) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)v;
}

/* The store keeps no metadata but the recipes: a commit and a close leave no other file;
 * an older trove's DIR/refs is removed by a writable open (a read-only open leaves it). */
static void test_no_store_metadata(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    uint8_t data[3 * BS];
    char path[256];
    uint64_t seed = 17;
    DIR *dp;
    struct dirent *de;
    FILE *f;

    fill_random(data, sizeof data, &seed);
    CHECK_EQ_INT(trove_volume_create(s, "x", sizeof data, BS, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, sizeof data), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    trove_store_close(s);
    CHECK((dp = opendir(sdir)) != NULL);
    while (dp && (de = readdir(dp)) != NULL) {
        const char *n = de->d_name;
        int known = strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strcmp(n, "lock") == 0 ||
                    strcmp(n, "objects") == 0 || strcmp(n, "tmp") == 0 ||
                    strcmp(n, "volumes") == 0;
        if (!known)
            fprintf(stderr, "unexpected %s/%s\n", sdir, n);
        CHECK(known);
    }
    if (dp)
        closedir(dp);
    snprintf(path, sizeof path, "%s/refs", sdir);
    CHECK((f = fopen(path, "w")) != NULL && fputs("an old counts file", f) >= 0);
    if (f)
        fclose(f);
    CHECK_EQ_INT(trove_store_open(sdir, TROVE_STORE_READONLY, &s, NULL), TROVE_OK);
    trove_store_close(s);
    CHECK(access(path, F_OK) == 0);
    s = NULL;
    CHECK_EQ_INT(trove_store_open(sdir, 0, &s, NULL), TROVE_OK);
    CHECK(access(path, F_OK) != 0);
    CHECK_EQ_INT(trove_volume_open(s, "x", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, data, sizeof data));
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    trove_store_close(s);
}

/*
 * A change costs what changed: a 4 KiB `volume write` (open, write, commit, close) into a
 * store holding `others` unique objects writes the block and at most 64 KiB besides — and
 * exactly as much with 100,000 unique objects as with 1,000. Returns the bytes beyond the
 * block. The objects are small ones in an object volume, so that the store is quick to make.
 */
#define META_VOL_SLOTS 16384u /* a 64 MiB volume of 4 KiB blocks */
static uint64_t small_write_metadata(uint32_t others)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    uint8_t blk[BS];
    uint64_t seed = 41, before, after;

    s = reopen(s, TROVE_STORE_NOSYNC);
    CHECK_EQ_INT(trove_volume_create_objects(s, "objs", others, 4096, &v, NULL), TROVE_OK);
    for (uint32_t i = 0; i < others; i++) {
        char obj[32];
        int n = snprintf(obj, sizeof obj, "object %u", i);
        CHECK_EQ_INT(trove_volume_put_object(v, i, obj, (size_t)n), TROVE_OK);
    }
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_volume_create(s, "vol", (uint64_t)META_VOL_SLOTS * BS, BS, &v, NULL),
                 TROVE_OK);
    for (uint32_t i = 0; i < META_VOL_SLOTS; i += 64) { /* a sparse volume, a slot in 64 used */
        fill_random(blk, BS, &seed);
        CHECK_EQ_INT(trove_volume_write(v, (uint64_t)i * BS, blk, BS), TROVE_OK);
    }
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    trove_store_close(s);
    s = NULL;

    fill_random(blk, BS, &seed);
    before = bytes_written();
    CHECK_EQ_INT(trove_store_open(sdir, TROVE_STORE_NOSYNC, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_open(s, "vol", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, (uint64_t)5000 * BS, blk, BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    trove_store_close(s);
    after = bytes_written();
    CHECK(after - before >= BS);
    CHECK(after - before <= BS + (64u << 10));
    s = NULL;
    CHECK_EQ_INT(trove_store_open(sdir, TROVE_STORE_READONLY, &s, NULL), TROVE_OK);
    CHECK(verify_clean(s, 0));
    trove_store_close(s);
    test_rm_rf(sdir); /* 100,000 small files: gone at once */
    return after - before - BS;
}

static void test_metadata_o_changed(void)
{
    uint64_t small = small_write_metadata(1000), big = small_write_metadata(100000);

    printf("a 4 KiB write and commit: %llu bytes of metadata with 1,000 other objects, %llu with "
           "100,000\n",
           (unsigned long long)small, (unsigned long long)big);
    CHECK_EQ_INT(big, small);
    CHECK(big <= (64u << 10));
}

/* A volume made afresh over a damaged one: nothing is written until its commit, which
 * replaces the damaged recipe with a later generation (and the old block size when the
 * header still reads); a volume that loads, a damaged snapshot, a newer format or the other
 * kind of volume is refused. */
static void test_create_over(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_volume_info in;
    struct trove_diag diag = {0};
    uint8_t data[3 * BS], *orig;
    char path[256];
    size_t olen;
    uint64_t seed = 23;
    int fd;

    fill_random(data, sizeof data, &seed);
    /* Over nothing: an ordinary create. */
    CHECK_EQ_INT(trove_volume_create_over(s, "x", sizeof data, BS, V3, 0, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, sizeof data), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_snapshot_create(s, "x", "snap", NULL), TROVE_OK);
    /* Over a volume that loads: refused. */
    CHECK_EQ_INT(trove_volume_create_over(s, "x", sizeof data, BS, V3, 0, &v, &diag),
                 TROVE_ERR_EXISTS);
    CHECK(strstr(diag.msg, "not damaged") != NULL);
    /* Damage x's manifest past its header (the v3 checksum covers it all). */
    snprintf(path, sizeof path, "%s/volumes/x.recipe", sdir);
    orig = test_read_file(path, &olen);
    CHECK(orig != NULL && olen > 60);
    CHECK((fd = open(path, O_WRONLY)) >= 0 && pwrite(fd, "\xff", 1, 60) == 1);
    close(fd);
    CHECK(trove_volume_open(s, "x", &v, NULL) != TROVE_OK);
    /* The other kind, or a newer format: refused. */
    CHECK_EQ_INT(trove_volume_create_over(s, "x", 2 * 4096, 4096, V3, 1, &v, NULL),
                 TROVE_ERR_EXISTS);
    /* Closed uncommitted: the damaged recipe is left exactly as it was. */
    CHECK_EQ_INT(trove_volume_create_over(s, "x", sizeof data, 0, V3, 0, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.block_size, BS); /* from the damaged header */
    trove_volume_close(v);
    {
        size_t n;
        uint8_t *now = test_read_file(path, &n);
        CHECK(now && n == olen && now[60] == 0xff && memcmp(now, orig, 60) == 0 &&
              memcmp(now + 61, orig + 61, olen - 61) == 0);
        free(now);
    }
    /* Committed: replaced, at a later generation, and it reads back. */
    CHECK_EQ_INT(trove_volume_create_over(s, "x", sizeof data, 0, V3, 0, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, sizeof data), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK(in.generation > 2);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_volume_open(s, "x", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, data, sizeof data));
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    /* A damaged snapshot is not rewritten as a writable volume. */
    snprintf(path, sizeof path, "%s/volumes/snap.recipe", sdir);
    CHECK((fd = open(path, O_WRONLY)) >= 0 && pwrite(fd, "\xff", 1, 60) == 1);
    close(fd);
    CHECK_EQ_INT(trove_volume_create_over(s, "snap", sizeof data, 0, V3, 0, &v, &diag),
                 TROVE_ERR_READONLY);
    /* A recipe of a newer format is kept. */
    snprintf(path, sizeof path, "%s/volumes/snap.recipe", sdir);
    CHECK((fd = open(path, O_WRONLY)) >= 0 && pwrite(fd, "\x09", 1, 8) == 1);
    close(fd);
    CHECK_EQ_INT(trove_volume_create_over(s, "snap", sizeof data, 0, V3, 0, &v, &diag),
                 TROVE_ERR_VERSION);
    free(orig);
    trove_store_close(s);
}

static void test_corrupt_recipe(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_diag diag = {0};
    struct trove_verify_report rep;
    struct trove_gc_report gc;
    uint8_t data[2 * BS];
    char path[256];
    uint64_t seed = 19;
    int fd;

    fill_random(data, sizeof data, &seed);
    CHECK_EQ_INT(trove_volume_create_format(s, "good", sizeof data, BS, V1, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, sizeof data), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_volume_create_format(s, "bad", sizeof data, BS, V1, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data + BS, BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    trove_store_close(s);
    snprintf(path, sizeof path, "%s/volumes/bad.recipe", sdir);
    static const struct {
        off_t at;
        const char *bytes;
        int len;
        int err;
    } cases[] = {
        {0, "X", 1, TROVE_ERR_MAGIC},
        {8, "\x05", 1, TROVE_ERR_VERSION},
        {60, "\xff", 1, TROVE_ERR_CHECKSUM},
        {32, "\x00\x00\x10", 3, TROVE_ERR_CORRUPT}, /* size disagrees with the slot count */
        {-1, NULL, 0, TROVE_ERR_TRUNCATED},         /* cut short */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint8_t *orig;
        size_t olen;
        orig = test_read_file(path, &olen);
        CHECK(orig != NULL);
        if (!orig)
            return;
        fd = open(path, O_WRONLY);
        if (cases[k].at >= 0)
            CHECK(pwrite(fd, cases[k].bytes, (size_t)cases[k].len, cases[k].at) == cases[k].len);
        else
            CHECK(ftruncate(fd, (off_t)olen - 9) == 0);
        close(fd);
        CHECK_EQ_INT(trove_store_open(sdir, 0, &s, NULL), TROVE_OK);
        memset(&diag, 0, sizeof diag);
        CHECK_EQ_INT(trove_volume_open(s, "bad", &v, &diag), cases[k].err);
        CHECK(strstr(diag.msg, path) != NULL);
        if (cases[k].err == TROVE_ERR_VERSION)
            CHECK(strstr(diag.msg, "newer") != NULL);
        /* The other volume is fine; verify reports the bad one; gc refuses. */
        CHECK_EQ_INT(trove_volume_open(s, "good", &v, NULL), TROVE_OK);
        CHECK(volume_equals(v, data, sizeof data));
        trove_volume_close(v);
        CHECK_EQ_INT(trove_store_verify(s, 0, &rep, NULL, NULL), TROVE_ERR_CORRUPT);
        CHECK_EQ_INT(rep.bad_recipes, 1);
        CHECK(strstr(rep.first_problem, "bad.recipe") != NULL);
        CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_ERR_CORRUPT);
        {
            struct trove_volume_entry *ents = NULL;
            size_t n = 0;
            CHECK_EQ_INT(trove_volume_list(s, &ents, &n), TROVE_OK);
            CHECK_EQ_INT(n, 2);
            if (n == 2) {
                CHECK(strcmp(ents[0].name, "bad") == 0 && ents[0].error == cases[k].err);
                CHECK(strcmp(ents[1].name, "good") == 0 && ents[1].error == TROVE_OK);
                CHECK_EQ_INT(ents[1].slots, 2);
            }
            free(ents);
        }
        trove_store_close(s);
        {
            FILE *f = fopen(path, "wb");
            CHECK(f && fwrite(orig, 1, olen, f) == olen);
            if (f)
                fclose(f);
        }
        free(orig);
    }
    /* A corrupt volume can be removed; then gc runs and frees its object. */
    fd = open(path, O_WRONLY);
    CHECK(pwrite(fd, "X", 1, 0) == 1);
    close(fd);
    CHECK_EQ_INT(trove_store_open(sdir, 0, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_remove(s, "bad", NULL), TROVE_OK);
    CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(gc.objects_deleted, 0); /* bad's block is good's slot 1 */
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    trove_store_close(s);
}

static int delete_first(void *ctx, const struct trove_digest *d)
{
    *(struct trove_digest *)ctx = *d;
    return 1;
}

static void test_verify_finds(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_verify_report rep;
    struct trove_digest d;
    uint8_t data[2 * BS];
    char path[512], hex[33];
    uint64_t seed = 23;
    int fd;

    fill_random(data, sizeof data, &seed);
    CHECK_EQ_INT(trove_volume_create_format(s, "v", sizeof data, BS, V1, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, sizeof data), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_backend_list(trove_store_backend(s), delete_first, &d), 1);
    trove_digest_hex(&d, hex);
    snprintf(path, sizeof path, "%s/objects/%.2s/%s", sdir, hex, hex);
    /* Same length, other bytes: only --deep sees it. */
    fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, "!", 1, 5) == 1);
    close(fd);
    CHECK(verify_clean(s, 0));
    CHECK_EQ_INT(trove_store_verify(s, TROVE_VERIFY_DEEP, &rep, NULL, NULL), TROVE_ERR_CORRUPT);
    CHECK_EQ_INT(rep.bad_hash, 1);
    CHECK_EQ_INT(rep.objects, 2);
    CHECK_EQ_INT(rep.slots, 2);
    CHECK(strstr(rep.first_problem, hex) != NULL);
    /* The deep read quarantined it: from now on even the shallow check reports it, and no
     * read serves it, until good bytes arrive (or the record is dropped, as here, to see the
     * shallow checks of a missing or short object on their own). */
    CHECK_EQ_INT(rep.quarantined, 1);
    CHECK_EQ_INT(trove_backend_quarantined(trove_store_backend(s), &d), 1);
    CHECK_EQ_INT(trove_store_verify(s, 0, &rep, NULL, NULL), TROVE_ERR_CORRUPT);
    CHECK_EQ_INT(rep.bad_hash, 1);
    CHECK_EQ_INT(rep.quarantined, 1);
    CHECK_EQ_INT(rep.deep, 0);
    CHECK_EQ_INT(trove_volume_open(s, "v", &v, NULL), TROVE_OK);
    {
        uint8_t buf[sizeof data];
        CHECK(trove_volume_read(v, 0, buf, sizeof buf) == TROVE_ERR_CHECKSUM);
    }
    trove_volume_close(v);
    CHECK_EQ_INT(trove_backend_release(trove_store_backend(s), &d), TROVE_OK);
    /* A volume that read the object before it went on record does not serve it from its
     * cache afterwards either. */
    {
        uint8_t buf[sizeof data];
        struct trove_digest d0;
        size_t blk;
        int fd2 = open(path, O_WRONLY);
        trove_digest_of(data, BS, &d0);
        blk = trove_digest_equal(&d, &d0) ? 0 : 1; /* which block the damaged object is */
        CHECK(fd2 >= 0 && pwrite(fd2, data + blk * BS + 5, 1, 5) == 1); /* its good bytes */
        if (fd2 >= 0)
            close(fd2);
        CHECK_EQ_INT(trove_volume_open(s, "v", &v, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_volume_read(v, 0, buf, sizeof buf), TROVE_OK);
        CHECK_EQ_INT(trove_backend_quarantine(trove_store_backend(s), &d, "a test"), TROVE_OK);
        CHECK_EQ_INT(trove_volume_read(v, 0, buf, sizeof buf), TROVE_ERR_CHECKSUM);
        trove_volume_close(v);
        CHECK_EQ_INT(trove_backend_release(trove_store_backend(s), &d), TROVE_OK);
    }
    /* Shorter: the shallow check sees it. */
    CHECK(truncate(path, 100) == 0);
    CHECK_EQ_INT(trove_store_verify(s, 0, &rep, NULL, NULL), TROVE_ERR_CORRUPT);
    CHECK_EQ_INT(rep.bad_length, 1);
    /* Gone. */
    CHECK(unlink(path) == 0);
    CHECK_EQ_INT(trove_store_verify(s, 0, &rep, NULL, NULL), TROVE_ERR_CORRUPT);
    CHECK_EQ_INT(rep.missing_objects, 1);
    CHECK_EQ_INT(trove_volume_open(s, "v", &v, NULL), TROVE_OK);
    {
        uint8_t buf[sizeof data];
        CHECK(trove_volume_read(v, 0, buf, sizeof buf) == TROVE_ERR_NOTFOUND);
    }
    trove_volume_close(v);
    /* The same bytes written into another volume bring the object back. */
    CHECK_EQ_INT(trove_volume_create_format(s, "w", sizeof data, BS, V1, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, sizeof data), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    CHECK_EQ_INT(count_objects(s), 2);
    trove_store_close(s);
}

static void test_names_and_modes(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_diag diag = {0};
    static const char *bad[] = {"", ".", "..", "../x", "a/b", ".hidden", "-x", "a b"};
    char path[256];

    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK_EQ_INT(trove_volume_create(s, bad[k], BS, BS, &v, &diag), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_volume_open(s, bad[k], &v, NULL), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_snapshot_create(s, "a", bad[k], NULL), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_volume_remove(s, bad[k], NULL), TROVE_ERR_INVALID);
    }
    snprintf(path, sizeof path, "%s/x.recipe", root);
    CHECK(access(path, F_OK) != 0);
    CHECK_EQ_INT(trove_volume_create(s, "a", 3 * BS, 1000, NULL, NULL), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_volume_create(s, "a", 3 * BS, 0, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_create(s, "a", 3 * BS, 0, NULL, &diag), TROVE_ERR_EXISTS);
    CHECK_EQ_INT(trove_volume_open(s, "a", &v, NULL), TROVE_OK);
    {
        struct trove_volume_info in;
        CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
        CHECK_EQ_INT(in.block_size, TROVE_BLOCK_SIZE_DEFAULT);
        CHECK_EQ_INT(in.slots, 1);
        CHECK_EQ_INT(in.generation, 1);
    }
    trove_volume_close(v);
    CHECK_EQ_INT(trove_volume_open(s, "missing", &v, &diag), TROVE_ERR_NOTFOUND);
    /* A read-only store reads and refuses every change. */
    s = reopen(s, TROVE_STORE_READONLY);
    CHECK_EQ_INT(trove_volume_open(s, "a", &v, NULL), TROVE_OK);
    {
        uint8_t b[16] = {1};
        CHECK_EQ_INT(trove_volume_read(v, 0, b, sizeof b), TROVE_OK);
        CHECK(b[0] == 0);
        CHECK_EQ_INT(trove_volume_write(v, 0, b, sizeof b), TROVE_ERR_READONLY);
    }
    trove_volume_close(v);
    CHECK_EQ_INT(trove_volume_create(s, "b", BS, BS, NULL, NULL), TROVE_ERR_READONLY);
    CHECK_EQ_INT(trove_snapshot_create(s, "a", "c", NULL), TROVE_ERR_READONLY);
    CHECK_EQ_INT(trove_volume_remove(s, "a", NULL), TROVE_ERR_READONLY);
    {
        struct trove_gc_report gc;
        CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_ERR_READONLY);
    }
    trove_store_close(s);
    /* A missing store is not created without the flag; a directory that is not a store is
     * left exactly as it was, read-only or not. */
    snprintf(path, sizeof path, "%s/none", root);
    CHECK_EQ_INT(trove_store_open(path, 0, &s, &diag), TROVE_ERR_NOTFOUND);
    CHECK(strstr(diag.msg, path) != NULL);
    CHECK(mkdir(path, 0755) == 0);
    CHECK_EQ_INT(trove_store_open(path, 0, &s, &diag), TROVE_ERR_NOTFOUND);
    CHECK(strstr(diag.msg, "not a trove store") != NULL);
    CHECK_EQ_INT(trove_store_open(path, TROVE_STORE_READONLY, &s, NULL), TROVE_ERR_NOTFOUND);
    CHECK(rmdir(path) == 0); /* still empty */
}

static void test_sparse_10tib(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_volume_info in;
    const uint64_t size = 10ull << 40;
    uint8_t one[4] = {1, 2, 3, 4}, back[4];
    struct stat st;
    char path[256];

    CHECK_EQ_INT(trove_volume_create_format(s, "big", size, 0, V1, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.slots, 5242880);
    CHECK_EQ_INT(in.recipe_bytes, 83886144);
    CHECK_EQ_INT(in.used_slots, 0);
    /* One write near the end, commit, reopen. */
    CHECK_EQ_INT(trove_volume_write(v, size - 4, one, 4), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "big", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.slots, 5242880);
    CHECK_EQ_INT(in.used_slots, 1);
    CHECK_EQ_INT(in.size, size);
    CHECK_EQ_INT(in.unique_objects, 1);
    CHECK_EQ_INT(trove_volume_read(v, size - 4, back, 4), TROVE_OK);
    CHECK(memcmp(back, one, 4) == 0);
    CHECK_EQ_INT(trove_volume_read(v, 5ull << 40, back, 4), TROVE_OK);
    CHECK(back[0] == 0 && back[3] == 0);
    trove_volume_close(v);
    snprintf(path, sizeof path, "%s/volumes/big.recipe", sdir);
    CHECK(stat(path, &st) == 0 && st.st_size == 83886144);
    CHECK(verify_clean(s, 0));
    trove_store_close(s);
}

/* Object volumes: whole objects of any length up to the block size, one per slot. */
static void test_object_volumes(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL, *b = NULL;
    struct trove_volume_info in;
    struct trove_volume_entry *ents = NULL;
    struct trove_bytes got = {0};
    struct trove_digest d[5], hello;
    static uint8_t zeros[BS];
    uint8_t big[BS + 1] = {0};
    size_t n = 0;

    CHECK_EQ_INT(trove_volume_create_objects(s, "cap", 5, BS, &v, NULL), TROVE_OK);
    CHECK(trove_volume_is_objects(v));
    CHECK_EQ_INT(trove_volume_set_format(v, fmt), TROVE_OK);
    CHECK_EQ_INT(trove_volume_put_object(v, 0, "hello", 5), TROVE_OK);
    CHECK_EQ_INT(trove_volume_put_object(v, 1, zeros, BS), TROVE_OK); /* stored, not emptied */
    CHECK_EQ_INT(trove_volume_put_object(v, 2, "hello", 5), TROVE_OK);
    CHECK_EQ_INT(trove_volume_put_object(v, 3, big, BS + 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_volume_put_object(v, 5, "x", 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_volume_read(v, 0, big, 5), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_volume_write(v, 0, big, 5), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_volume_resize(v, 3 * BS + 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "cap", &v, NULL), TROVE_OK);
    CHECK(trove_volume_is_objects(v));
    CHECK_EQ_INT(trove_volume_get_object(v, 0, &got), TROVE_OK);
    CHECK(got.len == 5 && memcmp(got.ptr, "hello", 5) == 0);
    CHECK_EQ_INT(trove_volume_get_object(v, 1, &got), TROVE_OK);
    CHECK(got.len == BS && memcmp(got.ptr, zeros, BS) == 0);
    CHECK_EQ_INT(trove_volume_get_object(v, 4, &got), TROVE_OK);
    CHECK_EQ_INT(got.len, 0);
    CHECK_EQ_INT(trove_volume_get_object(v, 5, &got), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_volume_slot_digests(v, 0, 5, d), TROVE_OK);
    CHECK_EQ_INT(trove_volume_slot_digests(v, 1, 5, d), TROVE_ERR_INVALID);
    trove_digest_of("hello", 5, &hello);
    CHECK(trove_digest_equal(&d[0], &hello) && trove_digest_equal(&d[2], &hello));
    CHECK(trove_digest_is_zero(&d[3]) && trove_digest_is_zero(&d[4]));
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK(in.objects);
    CHECK_EQ_INT(in.slots, 5);
    CHECK_EQ_INT(in.size, 5 * BS);
    CHECK_EQ_INT(in.used_slots, 3);
    CHECK_EQ_INT(in.unique_objects, 2);
    CHECK_EQ_INT(in.stored_bytes, 5 + BS);
    /* A slot copied names the same object (nothing stored); an empty one copied empties;
     * both last over a reopen. */
    CHECK_EQ_INT(trove_volume_copy_slot(v, 1, 4), TROVE_OK);
    CHECK_EQ_INT(trove_volume_copy_slot(v, 3, 2), TROVE_OK);
    CHECK_EQ_INT(trove_volume_copy_slot(v, 5, 0), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_volume_copy_slot(v, 0, 5), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "cap", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_get_object(v, 4, &got), TROVE_OK);
    CHECK(got.len == BS && memcmp(got.ptr, zeros, BS) == 0);
    CHECK_EQ_INT(trove_volume_get_object(v, 2, &got), TROVE_OK);
    CHECK_EQ_INT(got.len, 0);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK(in.used_slots == 3 && in.unique_objects == 2 && in.stored_bytes == 5 + BS);
    CHECK_EQ_INT(trove_volume_copy_slot(v, 4, 2), TROVE_OK); /* and back as it was */
    CHECK_EQ_INT(trove_volume_copy_slot(v, 3, 4), TROVE_OK);
    CHECK_EQ_INT(trove_volume_put_object(v, 2, "hello", 5), TROVE_OK);
    /* Shrinking keeps whole slots. A block volume of the same 5 bytes shares the object:
     * its recipe states the length (5) that verify checks, the object volume's states none. */
    CHECK_EQ_INT(trove_volume_resize(v, 3 * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_volume_create_format(s, "blocks", 5, BS, fmt, &b, NULL), TROVE_OK);
    CHECK(!trove_volume_is_objects(b));
    CHECK_EQ_INT(trove_volume_put_object(b, 0, "hello", 5), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_volume_write(b, 0, "hello", 5), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(b), TROVE_OK);
    trove_volume_close(b);
    CHECK_EQ_INT(trove_snapshot_create(s, "cap", "cap-snap", NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_list(s, &ents, &n), TROVE_OK);
    CHECK_EQ_INT(n, 3);
    for (size_t k = 0; k < n; k++)
        CHECK_EQ_INT(ents[k].objects, strcmp(ents[k].name, "blocks") != 0);
    free(ents);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "cap-snap", &v, NULL), TROVE_OK);
    CHECK(trove_volume_is_objects(v));
    CHECK_EQ_INT(trove_volume_put_object(v, 0, "x", 1), TROVE_ERR_READONLY);
    CHECK_EQ_INT(trove_volume_get_object(v, 2, &got), TROVE_OK);
    CHECK(got.len == 5 && memcmp(got.ptr, "hello", 5) == 0);
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    trove_bytes_free(&got);
    trove_store_close(s);
}

/* A pending object volume writes nothing before its first commit: closed uncommitted it
 * leaves no volume (as a writer killed before its commit would), a second create of the
 * name while it is open is refused, and committed it is an ordinary volume. */
static void test_pending_create(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL, *w = NULL;
    struct trove_volume_entry *ents = NULL;
    size_t n = 9;

    CHECK_EQ_INT(trove_volume_create_objects_pending(s, "p", 3, BS, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_put_object(v, 0, "abc", 3), TROVE_OK);
    CHECK_EQ_INT(trove_volume_list(s, &ents, &n), TROVE_OK);
    CHECK_EQ_INT(n, 0);
    free(ents);
    CHECK_EQ_INT(trove_volume_create_objects(s, "p", 3, BS, &w, NULL), TROVE_ERR_EXISTS);
    CHECK_EQ_INT(trove_volume_create_objects_pending(s, "p", 3, BS, &w, NULL), TROVE_ERR_EXISTS);
    trove_volume_close(v); /* uncommitted: dropped, and nothing was ever written */
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "p", &v, NULL), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_volume_create_objects_pending(s, "p", 3, BS, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_put_object(v, 1, "abc", 3), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_volume_create_objects_pending(s, "p", 3, BS, &v, NULL), TROVE_ERR_EXISTS);
    CHECK_EQ_INT(trove_volume_create_objects_pending(s, "q", 3, BS, NULL, NULL), TROVE_ERR_INVALID);
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_list(s, &ents, &n), TROVE_OK);
    CHECK(n == 1 && !strcmp(ents[0].name, "p") && ents[0].objects && ents[0].generation == 1);
    free(ents);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    trove_store_close(s);
}

/*
 * The store's locks: one writer at a time (a second writable open with NOWAIT is refused,
 * in this process as in another, and closing it does not release the first), readers beside
 * the writer without waiting, and each reader sees a volume at its latest commit.
 */
static void test_locks(void)
{
    struct trove_store *w = fresh_store(), *w2 = NULL, *r = NULL;
    struct trove_volume *v = NULL, *rv = NULL;
    struct trove_diag diag = {0};
    uint8_t a[BS], back[BS];
    uint64_t seed = 31;

    fill_random(a, BS, &seed);
    CHECK_EQ_INT(trove_store_open(sdir, TROVE_STORE_NOWAIT, &w2, &diag), TROVE_ERR_BUSY);
    CHECK(w2 == NULL);
    CHECK(strstr(diag.msg, "open for writing by another process") != NULL);
    /* A reader opens beside the writer, and sees the writer's commits only. */
    CHECK_EQ_INT(trove_volume_create(w, "l", BS, BS, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_store_open(sdir, TROVE_STORE_READONLY, &r, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, a, BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_open(r, "l", &rv, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_read(rv, 0, back, BS), TROVE_OK);
    CHECK(back[0] == 0 && memcmp(back, back + 1, BS - 1) == 0); /* not committed yet */
    trove_volume_close(rv);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_open(r, "l", &rv, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_read(rv, 0, back, BS), TROVE_OK);
    CHECK(memcmp(back, a, BS) == 0);
    trove_volume_close(rv);
    trove_store_close(r); /* a reader's close keeps the writer's lock */
    CHECK_EQ_INT(trove_store_open(sdir, TROVE_STORE_NOWAIT, &w2, NULL), TROVE_ERR_BUSY);
    trove_volume_close(v);
    trove_store_close(w);
    CHECK_EQ_INT(trove_store_open(sdir, TROVE_STORE_NOWAIT, &w2, NULL), TROVE_OK);
    trove_store_close(w2);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    snprintf(root, sizeof root, "/tmp/trove-volume-XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    for (fmt = V1; fmt <= V3; fmt += V3 - V1) {
        RUN(test_random_writes);
        RUN(test_dedup_and_zero);
        RUN(test_uncommitted_dropped);
        RUN(test_resize);
        RUN(test_snapshots);
        RUN(test_object_volumes);
    }
    RUN(test_locks);
    RUN(test_pending_create);
    RUN(test_no_store_metadata);
    RUN(test_metadata_o_changed);
    RUN(test_corrupt_recipe);
    RUN(test_create_over);
    RUN(test_verify_finds);
    RUN(test_names_and_modes);
    RUN(test_sparse_10tib);
    if (test_failed == 0)
        test_rm_rf(root);
    else
        fprintf(stderr, "left %s for inspection\n", root);
    return test_done();
}
