/*
 * test_volume_v4.c: volumes with recipe v4 (docs/formats/recipe-v4.md) — opened without
 * their column and dictionary, each segment and chunk loaded when a slot needs it; a
 * commit of a lazily opened volume counts the entries it could not free as stale, and a
 * digest it could not find becomes a second index of it (an alias), both of which read
 * back, verify, count once and survive gc; the stale count passing a quarter of the
 * dictionary makes the next commit load the whole recipe and free them; writing what a
 * volume holds already commits nothing (each write's old entry is read and compared); and
 * a v3 recipe reads as it is and is upgraded to v4 by its volume's next commit.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "volume_test.h"
#include "trove/recipe.h"
#include "trove/testing.h"
#include "trove/volume.h"

static void synth(uint64_t x, struct trove_digest *d)
{
    uint64_t a = x * 0x9e3779b97f4a7c15ULL + 7, b = ~x ^ 0x5555;
    memcpy(d->b, &a, 8);
    memcpy(d->b + 8, &b, 8);
}

/* Volume name's committed manifest, decoded (version and stale); 0 on success. */
static int manifest_of(const char *name, struct trove_recipe_v3 *m, uint8_t **img, size_t *len)
{
    char path[512];

    snprintf(path, sizeof path, "%s/volumes/%s.recipe", sdir, name);
    *img = test_read_file(path, len);
    if (!*img)
        return -1;
    return trove_recipe_v3_decode(*img, *len, m, NULL) == TROVE_OK ? 0 : -1;
}

static uint32_t stale_of(const char *name, uint32_t *version)
{
    struct trove_recipe_v3 m;
    uint8_t *img = NULL;
    size_t len = 0;
    uint32_t st = UINT32_MAX;

    if (manifest_of(name, &m, &img, &len) == 0) {
        st = m.stale;
        *version = m.version;
    }
    free(img);
    return st;
}

/* Every slot of v reads as model[]. */
static int slots_equal(struct trove_volume *v, const struct trove_digest *model, uint64_t n)
{
    struct trove_digest *got = calloc(n, sizeof *got);
    int ok = got && trove_volume_slot_digests(v, 0, n, got) == TROVE_OK &&
             memcmp(got, model, n * sizeof *got) == 0;

    free(got);
    return ok;
}

/* A lazy commit: replaced entries counted stale, a digest held in an unloaded chunk
 * becomes an alias, and everything reads back; info counts the alias once. */
static void test_v4_lazy_commit(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_volume_info in;
    const uint64_t n = 5000; /* 5 segments; 5,001 entries in 5 chunks */
    struct trove_digest *d = calloc(n, sizeof *d), x;
    uint32_t version = 0;

    for (uint64_t i = 0; i < n; i++)
        synth(i, &d[i]);
    CHECK_EQ_INT(trove_volume_create(s, "a", n * BS, BS, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_testing_volume_set_slots(v, 0, d, n), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(stale_of("a", &version), 0);
    CHECK_EQ_INT(version, 4);

    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "a", &v, NULL), TROVE_OK);
    /* Three new digests, and slot 10 given the digest slot 4000 holds: its entry (4001)
     * lies in chunk 3, which nothing loaded, so it gets a new index too. */
    for (uint64_t k = 0; k < 3; k++) {
        synth(n + k, &x);
        CHECK_EQ_INT(trove_testing_volume_set_slots(v, 100 + 1500 * k, &x, 1), TROVE_OK);
        d[100 + 1500 * k] = x;
    }
    d[10] = d[4000];
    CHECK_EQ_INT(trove_testing_volume_set_slots(v, 10, &d[10], 1), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    /* The four entries replaced may be unreferenced now: the commit could not tell. */
    CHECK_EQ_INT(stale_of("a", &version), 4);
    CHECK_EQ_INT(version, 4);

    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "a", &v, NULL), TROVE_OK);
    CHECK(slots_equal(v, d, n));
    /* info loads the rest: the alias is one object, the four replaced are gone. */
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.used_slots, n);
    CHECK_EQ_INT(in.unique_objects, n - 1);
    trove_volume_close(v);
    free(d);
    trove_store_close(s);
}

/* Stale entries past a quarter of the dictionary: the next commit loads the whole recipe,
 * frees them and writes stale 0; the slots never change. */
static void test_v4_reclaim(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    const uint64_t n = 2048;
    struct trove_digest *d = calloc(n, sizeof *d);
    uint32_t version = 0, st, last = 0;
    uint64_t next = n;
    int reclaimed = 0;

    for (uint64_t i = 0; i < n; i++)
        synth(i, &d[i]);
    CHECK_EQ_INT(trove_volume_create(s, "r", n * BS, BS, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_testing_volume_set_slots(v, 0, d, n), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    /* Rounds of 100 new slots, each in a fresh open: the count grows by 100 a round until
     * it passes 2,048 / 4, then drops back to what the last round added since. */
    for (int round = 0; round < 8; round++) {
        CHECK_EQ_INT(trove_volume_open(s, "r", &v, NULL), TROVE_OK);
        for (uint64_t k = 0; k < 100; k++) {
            uint64_t slot = (k * 37 + (uint64_t)round * 11) % n;
            synth(next++, &d[slot]);
            CHECK_EQ_INT(trove_testing_volume_set_slots(v, slot, &d[slot], 1), TROVE_OK);
        }
        CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
        trove_volume_close(v);
        st = stale_of("r", &version);
        CHECK_EQ_INT(version, 4);
        if (st < last)
            reclaimed++;
        CHECK(st <= n / 4 + 100);
        last = st;
        CHECK_EQ_INT(trove_volume_open(s, "r", &v, NULL), TROVE_OK);
        CHECK(slots_equal(v, d, n));
        trove_volume_close(v);
    }
    CHECK(reclaimed >= 1);
    free(d);
    trove_store_close(s);
}

/* Real blocks: a lazy write, commit, gc and verify; an alias's block is kept while a slot
 * names it, and a stale entry's block goes with gc. */
static void test_v4_blocks_gc(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_gc_report gc;
    enum { N = 3000 };
    uint8_t *data = malloc((size_t)N * BS);
    uint64_t seed = 41;

    fill_random(data, (size_t)N * BS, &seed);
    CHECK_EQ_INT(trove_volume_create(s, "b", (uint64_t)N * BS, BS, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, (size_t)N * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "b", &v, NULL), TROVE_OK);
    /* Block 5 gets block 2500's bytes (an alias: chunk 2 is not loaded), block 7 new ones. */
    memcpy(data + 5 * BS, data + 2500 * BS, BS);
    memset(data + 7 * BS, 0x3c, BS);
    CHECK_EQ_INT(trove_volume_write(v, 5 * BS, data + 5 * BS, BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 7 * BS, data + 7 * BS, BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
    CHECK(gc.objects_deleted >= 2); /* old blocks 5 and 7 */
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    CHECK_EQ_INT(trove_volume_open(s, "b", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, data, (uint64_t)N * BS));
    trove_volume_close(v);
    free(data);
    trove_store_close(s);
}

/* Writing what a volume holds already changes nothing: each write's slot entry is read
 * from its chunk and compared, so the commit has nothing to do (no aliases, no stale
 * entries, the same generation). Then one block really changes, and only it is new. */
static void test_v4_same_content(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_volume_info in;
    enum { N = 2500 };
    uint8_t *data = malloc((size_t)N * BS);
    uint64_t seed = 47, gen;
    uint32_t version = 0;

    fill_random(data, (size_t)N * BS, &seed);
    memcpy(data + 9 * BS, data + 2 * BS, BS); /* a duplicate block: one entry, two slots */
    CHECK_EQ_INT(trove_volume_create(s, "w", (uint64_t)N * BS, BS, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, (size_t)N * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    gen = in.generation;
    trove_volume_close(v);
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "w", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, (size_t)N * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(stale_of("w", &version), 0);
    CHECK_EQ_INT(trove_volume_open(s, "w", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK(in.generation == gen); /* nothing was committed */
    CHECK_EQ_INT(in.unique_objects, N - 1);
    trove_volume_close(v);
    /* One block changed, in a fresh open: one stale entry, one new. */
    CHECK_EQ_INT(trove_volume_open(s, "w", &v, NULL), TROVE_OK);
    memset(data + 1500 * BS, 0x11, BS);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, (size_t)N * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(stale_of("w", &version), 1);
    CHECK_EQ_INT(trove_volume_open(s, "w", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, data, (uint64_t)N * BS));
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK(in.generation == gen + 1);
    CHECK_EQ_INT(in.unique_objects, N - 1);
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    free(data);
    trove_store_close(s);
}

/* A v3 recipe (the same objects under a version 3 manifest) opens and reads as it is; the
 * next commit writes v4, and everything still reads and verifies. */
static void test_v3_upgrade(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_recipe_v3 m;
    struct trove_bytes v3 = {0};
    struct trove_digest *pages = NULL;
    enum { N = 2100 };
    uint8_t *data = malloc((size_t)N * BS), *img = NULL;
    uint64_t seed = 43;
    uint32_t version = 0;
    size_t len = 0;
    char path[512];

    fill_random(data, (size_t)N * BS, &seed);
    CHECK_EQ_INT(trove_volume_create(s, "u", (uint64_t)N * BS, BS, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, (size_t)N * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    trove_store_close(s);
    /* Rewrite the manifest as v3: the object graph is the same. */
    CHECK(manifest_of("u", &m, &img, &len) == 0);
    CHECK_EQ_INT(m.stale, 0);
    pages = calloc(m.page_count, sizeof *pages);
    for (uint32_t p = 0; p < m.page_count; p++)
        trove_recipe_v3_page(&m, p, &pages[p]);
    CHECK_EQ_INT(trove_recipe_v3_encode(m.volume_size, m.block_size, m.flags, m.generation,
                                        m.dict_count, pages, m.page_count, &v3),
                 TROVE_OK);
    snprintf(path, sizeof path, "%s/volumes/u.recipe", sdir);
    {
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(v3.ptr, 1, v3.len, f) == v3.len);
        if (f)
            fclose(f);
    }
    CHECK_EQ_INT(stale_of("u", &version), 0);
    CHECK_EQ_INT(version, 3);

    CHECK_EQ_INT(trove_store_open(sdir, 0, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_open(s, "u", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, data, (uint64_t)N * BS));
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    CHECK_EQ_INT(stale_of("u", &version), 0);
    CHECK_EQ_INT(version, 3); /* reading changes nothing */

    CHECK_EQ_INT(trove_volume_open(s, "u", &v, NULL), TROVE_OK);
    memset(data + 2000 * BS, 0x77, BS);
    CHECK_EQ_INT(trove_volume_write(v, 2000 * BS, data + 2000 * BS, BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(stale_of("u", &version), 1);
    CHECK_EQ_INT(version, 4);
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "u", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, data, (uint64_t)N * BS));
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    free(pages);
    free(img);
    free(data);
    trove_bytes_free(&v3);
    trove_store_close(s);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    snprintf(root, sizeof root, "/tmp/trove-volume-v4-XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_v4_lazy_commit);
    RUN(test_v4_reclaim);
    RUN(test_v4_blocks_gc);
    RUN(test_v4_same_content);
    RUN(test_v3_upgrade);
    if (test_failed == 0)
        test_rm_rf(root);
    else
        fprintf(stderr, "left %s for inspection\n", root);
    return test_done();
}
