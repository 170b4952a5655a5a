/*
 * test_volume_v3.c: volumes with recipe v3 (src/store/recipe_v3.c through
 * include/trove/volume.h) — a commit writes what changed (one slot of 5,000 costs its
 * segment, its chunk and a page); sparse volumes; a damaged v3 object named with its volume
 * in the error while other volumes open; v1 <-> v3 conversion in place and snapshots sharing
 * every recipe object; compact; and small commits written as patches of the committed
 * segments, which reopen, verify, snapshot and compact, in set cases and in random rounds
 * against a model.
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

/* ---- recipe v3 ------------------------------------------------------------------------ */

static void synth_digest(uint64_t x, struct trove_digest *d)
{
    uint64_t a = x * 0x9e3779b97f4a7c15ULL + 1, b = ~x;
    memcpy(d->b, &a, 8);
    memcpy(d->b + 8, &b, 8);
}

/* A commit writes what changed: one slot of 5,000 costs its segment, its chunk and a page. */
static void test_v3_commit_cost(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_volume_info in;
    const uint64_t n = 5000;
    struct trove_digest *d = calloc(n, sizeof *d), one;

    for (uint64_t i = 0; i < n; i++)
        synth_digest(i, &d[i]);
    CHECK_EQ_INT(trove_volume_create_format(s, "c", n * BS, BS, V3, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_testing_volume_set_slots(v, 0, d, n), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.recipe_format, V4); /* asking for v3 gets its successor */
    CHECK_EQ_INT(in.unique_objects, n);
    /* 5 segments, 5 chunks (5001 entries), 2 pages, all new. */
    CHECK_EQ_INT(in.last_commit_objects, 12);
    synth_digest(n + 7, &one);
    CHECK_EQ_INT(trove_testing_volume_set_slots(v, 2100, &one, 1), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    /* The new digest takes the index the old one freed (2101, in chunk 2), so segment 2's
     * bytes do not change: the commit writes chunk 2 and the page listing it. */
    CHECK_EQ_INT(in.last_commit_objects, 2);
    CHECK(in.last_commit_bytes < 24000);                /* v1 would write 80,064 */
    CHECK(in.recipe_bytes == 72 + 16 * 2 + 8);
    /* Nothing changed: nothing written. */
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.last_commit_objects, 2);
    trove_volume_close(v);
    /* Reopen: 4 bytes per slot and at most 40 per distinct digest (plus a fixed few
     * hundred); the same slots, converted to v1 to compare every entry. */
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "c", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK(in.resident_recipe_bytes <= 4 * n + 40 * n + 512);
    CHECK_EQ_INT(trove_volume_set_format(v, V1), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    {
        char path[256];
        size_t len;
        uint8_t *f;
        struct trove_recipe_v1 r;
        snprintf(path, sizeof path, "%s/volumes/c.recipe", sdir);
        f = test_read_file(path, &len);
        CHECK(f && trove_recipe_v1_decode(f, len, &r, NULL) == TROVE_OK);
        if (f && trove_recipe_v1_decode(f, len, &r, NULL) == TROVE_OK) {
            int same = r.slot_count == n;
            d[2100] = one;
            for (uint64_t i = 0; same && i < n; i++)
                same = memcmp(r.entries + 16 * i, d[i].b, 16) == 0;
            CHECK(same);
        }
        free(f);
    }
    trove_store_close(s);
    free(d);
}

static void test_v3_sparse(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_volume_info in;
    const uint64_t size = 10ull << 40;
    uint8_t one[4] = {9, 8, 7, 6}, back[4];

    CHECK_EQ_INT(trove_volume_create_format(s, "big", size, 0, V3, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.slots, 5242880);
    /* 5,120 empty segments are one object; 641 pages, most of them alike. */
    CHECK_EQ_INT(in.recipe_bytes, 72 + 16 * 641 + 8);
    CHECK(in.last_commit_objects <= 4);
    CHECK(in.resident_recipe_bytes <= 4 * 5242880 + 40 + 512);
    CHECK_EQ_INT(trove_volume_write(v, size - 4, one, 4), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    /* The last segment, chunk 0, and the two pages listing them. */
    CHECK_EQ_INT(in.last_commit_objects, 4);
    trove_volume_close(v);
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "big", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_read(v, size - 4, back, 4), TROVE_OK);
    CHECK(memcmp(back, one, 4) == 0);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.used_slots, 1);
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    CHECK(count_recipe_objects(s) <= 8);
    trove_store_close(s);
}

struct find_kind {
    struct trove_backend *be;
    uint8_t kind;
    struct trove_digest found;
    int n;
};

static int find_kind_cb(void *ctx, const struct trove_digest *d)
{
    struct find_kind *f = ctx;
    struct trove_bytes b = {0};

    if (trove_backend_get(f->be, d, &b, 1u << 20) == TROVE_OK && b.len >= 8 &&
        memcmp(b.ptr, "TRV3", 4) == 0 && b.ptr[4] == f->kind && f->n++ == 0)
        f->found = *d;
    trove_bytes_free(&b);
    return 0;
}

/* Find bytes p[0..n) in a pack file of the current store: its path and offset (-1: not found). */
static int find_in_packs(const uint8_t *p, size_t n, char *path, size_t psize, off_t *at)
{
    char dir[256];
    DIR *dp;
    struct dirent *de;

    *at = -1;
    snprintf(dir, sizeof dir, "%s/objects/packs", sdir);
    if (!(dp = opendir(dir)))
        return -1;
    while (*at < 0 && (de = readdir(dp)) != NULL) {
        size_t len = 0;
        uint8_t *f;
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, psize, "%s/%s", dir, de->d_name);
        if (!(f = test_read_file(path, &len)))
            continue;
        for (size_t i = 0; n <= len && i <= len - n; i++)
            if (memcmp(f + i, p, n) == 0) {
                *at = (off_t)i;
                break;
            }
        free(f);
    }
    closedir(dp);
    return *at < 0 ? -1 : 0;
}


/*
 * Open volume name and read all of it: the volume opens without its whole recipe, so a
 * damaged or missing recipe object fails the open (the last page, the tail chunk) or the
 * read that first needs it, whose message trove_volume_last_error keeps. The result is
 * the first failure's code, with its message in *diag, or TROVE_OK if the bytes read are
 * not want's (the caller expects a failure).
 */
static int open_and_read(struct trove_store *s, const char *name, const uint8_t *want,
                         size_t len, struct trove_diag *diag)
{
    struct trove_volume *v = NULL;
    uint8_t *got = malloc(len);
    int rc;

    memset(diag, 0, sizeof *diag);
    CHECK(got != NULL);
    if (!got)
        return TROVE_ERR_NOMEM;
    rc = trove_volume_open(s, name, &v, diag);
    if (rc == TROVE_OK) {
        rc = trove_volume_read(v, 0, got, len);
        if (rc != TROVE_OK)
            snprintf(diag->msg, sizeof diag->msg, "%s", trove_volume_last_error(v));
        else
            CHECK(memcmp(got, want, len) != 0);
        trove_volume_close(v);
    }
    free(got);
    return rc;
}

/* A damaged v3 object: the error names the volume and the object; other volumes open. */
static void test_v3_corrupt_objects(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_diag diag;
    struct trove_verify_report rep;
    uint8_t data[3 * BS], other[BS];
    uint64_t seed = 31;
    static const uint8_t kinds[] = {'S', 'D', 'P'};

    fill_random(data, sizeof data, &seed);
    fill_random(other, sizeof other, &seed);
    CHECK_EQ_INT(trove_volume_create_format(s, "a", sizeof data, BS, V3, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, sizeof data), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_volume_create_format(s, "b", 2 * BS, BS, V1, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, other, BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    {
        struct trove_gc_report gc; /* the create commit's recipe objects are garbage now */
        CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
    }
    for (size_t k = 0; k < sizeof kinds; k++) {
        struct find_kind f = {trove_store_backend(s), kinds[k], {{0}}, 0};
        struct trove_bytes orig = {0};
        char hex[33], pack[512];
        off_t at = -1;
        int fd;
        CHECK_EQ_INT(trove_backend_list(f.be, find_kind_cb, &f), TROVE_OK);
        CHECK_EQ_INT(f.n, 1);
        trove_digest_hex(&f.found, hex);
        CHECK_EQ_INT(trove_backend_get(f.be, &f.found, &orig, 1u << 20), TROVE_OK);
        /* Recipe objects live in pack files: find this one's bytes in a pack. */
        CHECK(find_in_packs(orig.ptr, orig.len, pack, sizeof pack, &at) == 0);
        if (at < 0) {
            trove_bytes_free(&orig);
            continue;
        }
        /* A flipped byte: the object no longer hashes to its name. */
        fd = open(pack, O_WRONLY);
        CHECK(fd >= 0 && pwrite(fd, "\xff", 1, at + (off_t)orig.len - 1) == 1);
        close(fd);
        CHECK_EQ_INT(open_and_read(s, "a", data, sizeof data, &diag), TROVE_ERR_CHECKSUM);
        CHECK(strstr(diag.msg, "volume 'a'") != NULL && strstr(diag.msg, hex) != NULL);
        CHECK(strstr(diag.msg, kinds[k] == 'S' ? "segment"
                              : kinds[k] == 'D' ? "dictionary chunk" : "page") != NULL);
        CHECK_EQ_INT(trove_volume_open(s, "b", &v, NULL), TROVE_OK);
        trove_volume_close(v);
        CHECK_EQ_INT(trove_store_verify(s, 0, &rep, NULL, NULL), TROVE_ERR_CORRUPT);
        CHECK_EQ_INT(rep.bad_recipes, 1);
        fd = open(pack, O_WRONLY);
        CHECK(fd >= 0 && pwrite(fd, orig.ptr + orig.len - 1, 1, at + (off_t)orig.len - 1) == 1);
        close(fd);
        /* Missing altogether (deleted behind the store's back), then put back. The volume
         * is damaged, not absent: TROVE_ERR_NOTFOUND would say there is no such volume. */
        CHECK_EQ_INT(trove_backend_delete(f.be, &f.found), TROVE_OK);
        CHECK_EQ_INT(open_and_read(s, "a", data, sizeof data, &diag), TROVE_ERR_CORRUPT);
        CHECK(strstr(diag.msg, "missing") != NULL && strstr(diag.msg, hex) != NULL);
        CHECK_EQ_INT(trove_backend_put(f.be, &f.found, orig.ptr, orig.len, NULL), TROVE_OK);
        trove_bytes_free(&orig);
        CHECK_EQ_INT(trove_volume_open(s, "a", &v, NULL), TROVE_OK);
        CHECK(volume_equals(v, data, sizeof data));
        trove_volume_close(v);
    }
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    trove_store_close(s);
}

/* v1 <-> v3 in place, and snapshots sharing every recipe object. */
static void test_v3_convert_and_share(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_volume_info in;
    uint8_t data[5 * BS + 9];
    uint64_t seed = 37, before;

    fill_random(data, sizeof data, &seed);
    memcpy(data + 3 * BS, data, BS);
    CHECK_EQ_INT(trove_volume_create_format(s, "m", sizeof data, BS, V1, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, data, sizeof data), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_set_format(v, V3), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "m", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.recipe_format, V4);
    CHECK_EQ_INT(in.unique_objects, 5);
    CHECK(volume_equals(v, data, sizeof data));
    trove_volume_close(v);
    before = count_recipe_objects(s);
    CHECK(before >= 3);
    CHECK_EQ_INT(trove_snapshot_create(s, "m", "m-snap", NULL), TROVE_OK);
    CHECK_EQ_INT(count_recipe_objects(s), before); /* the snapshot shares them all */
    CHECK_EQ_INT(trove_volume_open(s, "m-snap", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, data, sizeof data));
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK(in.readonly);
    trove_volume_close(v);
    /* Back to v1 for the source; the snapshot stays v3 and intact after gc. */
    CHECK_EQ_INT(trove_volume_open(s, "m", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_set_format(v, V1), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.recipe_bytes, 64 + 16 * 6);
    trove_volume_close(v);
    {
        struct trove_gc_report gc;
        CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
        CHECK_EQ_INT(gc.objects_deleted, 0);
    }
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    CHECK_EQ_INT(trove_volume_remove(s, "m-snap", NULL), TROVE_OK);
    {
        struct trove_gc_report gc;
        CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
    }
    CHECK_EQ_INT(count_recipe_objects(s), 0);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    trove_store_close(s);
}

/* compact renumbers in slot order and rewrites every recipe object; a snapshot taken
 * before keeps reading its own. */
static void test_v3_compact(void)
{
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_volume_info in;
    struct trove_gc_report gc;
    uint8_t data[6 * BS];
    uint64_t seed = 41;

    fill_random(data, sizeof data, &seed);
    CHECK_EQ_INT(trove_volume_create_format(s, "k", sizeof data, BS, V3, &v, NULL), TROVE_OK);
    /* Written back to front, so the dictionary's insertion order is the reverse. */
    for (int b = 5; b >= 0; b--)
        CHECK_EQ_INT(trove_volume_write(v, (uint64_t)b * BS, data + b * BS, BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_snapshot_create(s, "k", "k-before", NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_compact(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    /* Segment 0 is now the identity 1..6, chunk 0 the digests in slot order, one page. */
    CHECK_EQ_INT(in.last_commit_objects, 3);
    CHECK(volume_equals(v, data, sizeof data));
    trove_volume_close(v);
    CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
    s = reopen(s, 0);
    CHECK_EQ_INT(trove_volume_open(s, "k", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, data, sizeof data));
    trove_volume_close(v);
    CHECK_EQ_INT(trove_volume_open(s, "k-before", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, data, sizeof data));
    CHECK_EQ_INT(trove_volume_compact(v), TROVE_ERR_READONLY);
    trove_volume_close(v);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    trove_store_close(s);
}

/* The committed section record of column segment sg of volume name, read from its manifest
 * and page; its patch's base in *base if it is a patch. Returns the encoding, or -1. */
static int section_of(struct trove_store *s, const char *name, uint64_t sg,
                      struct trove_v3_section *out, struct trove_digest *base)
{
    struct trove_backend *be = trove_store_backend(s);
    struct trove_v3_section sec[TROVE_RECIPE_V3_PAGE_SECTIONS];
    struct trove_recipe_v3 m;
    struct trove_bytes page = {0};
    struct trove_digest pd;
    char path[512];
    size_t len = 0;
    uint32_t n = 0;
    uint8_t *f;
    int enc = -1;

    snprintf(path, sizeof path, "%s/volumes/%s.recipe", sdir, name);
    f = test_read_file(path, &len);
    if (f && trove_recipe_v3_decode(f, len, &m, NULL) == TROVE_OK) {
        trove_recipe_v3_page(&m, (uint32_t)(sg / TROVE_RECIPE_V3_PAGE_SECTIONS), &pd);
        if (trove_backend_get(be, &pd, &page, 1u << 20) == TROVE_OK &&
            trove_recipe_v3_page_decode(page.ptr, page.len, sec, &n, NULL) == TROVE_OK) {
            *out = sec[sg % TROVE_RECIPE_V3_PAGE_SECTIONS];
            enc = out->encoding;
        }
    }
    if (enc == TROVE_V3_ENC_PATCH) {
        struct trove_v3_patch p;
        page.len = 0;
        if (trove_backend_get(be, &out->d, &page, 1u << 20) != TROVE_OK ||
            trove_recipe_v3_patch_decode(page.ptr, page.len, SEG_SLOTS, 1u << 30, &p, NULL))
            enc = -1;
        else
            *base = p.base;
    }
    trove_bytes_free(&page);
    free(f);
    CHECK(enc >= 0);
    return enc;
}

/* Write block b of the pool into slot i of the volume and the model. */
static void put_block(struct trove_volume *v, uint8_t *model, const uint8_t *pool, uint64_t i,
                      uint32_t b)
{
    memcpy(model + i * BS, pool + (uint64_t)b * BS, BS);
    CHECK_EQ_INT(trove_volume_write(v, i * BS, pool + (uint64_t)b * BS, BS), TROVE_OK);
}

/* Small commits write patches of the committed segments, which reopen, verify, snapshot,
 * gc and resize all see through; a segment whose slots go back is its base again, and one
 * with more than 64 changed slots is written in full. */
static void test_v3_patches(void)
{
    enum { POOL = 300, N = 3 * SEG_SLOTS + 500 };
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    struct trove_volume_info in;
    struct trove_v3_section full1, full2, sec;
    struct trove_digest base;
    uint8_t *pool = malloc((size_t)POOL * BS), *model = malloc((size_t)N * BS);
    uint8_t *snap_model = malloc((size_t)N * BS), *orig = malloc((size_t)N * BS);
    struct trove_gc_report gc;
    uint64_t seed = 77;

    if (!pool || !model || !snap_model || !orig) {
        CHECK(0);
        goto out;
    }
    fill_random(pool, (size_t)POOL * BS, &seed);
    CHECK_EQ_INT(trove_volume_create_format(s, "p", (uint64_t)N * BS, BS, V3, &v, NULL), TROVE_OK);
    for (uint64_t i = 0; i < N; i++)
        put_block(v, model, pool, i, (uint32_t)(test_rand(&seed) % POOL));
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    memcpy(orig, model, (size_t)N * BS);
    CHECK_EQ_INT(section_of(s, "p", 1, &full1, &base), TROVE_V3_ENC_PACKED);
    CHECK_EQ_INT(section_of(s, "p", 2, &full2, &base), TROVE_V3_ENC_PACKED);

    /* One slot: a patch of segment 1 against its committed form, and its page. */
    put_block(v, model, pool, SEG_SLOTS + 5, (model[(SEG_SLOTS + 5) * BS] == pool[0]) ? 1 : 0);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.last_commit_objects, 2);
    CHECK_EQ_INT(section_of(s, "p", 1, &sec, &base), TROVE_V3_ENC_PATCH);
    CHECK(trove_digest_equal(&base, &full1.d));
    CHECK(volume_equals(v, model, (uint64_t)N * BS));

    /* Two more (one of them the same slot again): a patch of the same base. */
    put_block(v, model, pool, SEG_SLOTS + 5, 2);
    put_block(v, model, pool, SEG_SLOTS + 900, 3);
    put_block(v, model, pool, SEG_SLOTS + 1, 4);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(section_of(s, "p", 1, &sec, &base), TROVE_V3_ENC_PATCH);
    CHECK(trove_digest_equal(&base, &full1.d));
    trove_volume_close(v);
    s = reopen(s, 0);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    CHECK_EQ_INT(trove_volume_open(s, "p", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, model, (uint64_t)N * BS));

    /* A snapshot shares the patch; then 70 slots of segment 1 make it full again. */
    CHECK_EQ_INT(trove_snapshot_create(s, "p", "p-snap", NULL), TROVE_OK);
    memcpy(snap_model, model, (size_t)N * BS);
    for (uint64_t k = 0; k < 70; k++)
        put_block(v, model, pool, SEG_SLOTS + 10 * k + 3, (uint32_t)(5 + k));
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(section_of(s, "p", 1, &sec, &base), TROVE_V3_ENC_PACKED);
    CHECK_EQ_INT(section_of(s, "p-snap", 1, &sec, &base), TROVE_V3_ENC_PATCH);
    CHECK(trove_digest_equal(&base, &full1.d));

    /* Segment 2: changed, then every slot put back: the record is the base again, and the
     * commit writes only what the other change needs. */
    put_block(v, model, pool, 2 * SEG_SLOTS + 7, 0);
    put_block(v, model, pool, 2 * SEG_SLOTS + 8, 1);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(section_of(s, "p", 2, &sec, &base), TROVE_V3_ENC_PATCH);
    memcpy(model + (2 * SEG_SLOTS + 7) * BS, orig + (2 * SEG_SLOTS + 7) * BS, 2 * BS);
    CHECK_EQ_INT(trove_volume_write(v, (2 * SEG_SLOTS + 7) * BS, model + (2 * SEG_SLOTS + 7) * BS,
                                    2 * BS),
                 TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(section_of(s, "p", 2, &sec, &base), TROVE_V3_ENC_PACKED);
    CHECK(trove_digest_equal(&sec.d, &full2.d));
    CHECK_EQ_INT(trove_volume_info(v, &in), TROVE_OK);
    CHECK_EQ_INT(in.last_commit_objects, 1); /* the page; the segment is an old object */
    trove_volume_close(v);

    /* The volume goes; the snapshot's patch keeps its base alive through gc. */
    CHECK_EQ_INT(trove_volume_remove(s, "p", NULL), TROVE_OK);
    CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
    s = reopen(s, 0);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    CHECK_EQ_INT(trove_volume_open(s, "p-snap", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, snap_model, (uint64_t)N * BS));
    trove_volume_close(v);

    /* A copy of the snapshot's bytes, patched, then resized across its patched segment and
     * back: the segments whose slot count changes are written in full. */
    CHECK_EQ_INT(trove_volume_create_format(s, "q", (uint64_t)N * BS, BS, V3, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, snap_model, (size_t)N * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    put_block(v, snap_model, pool, SEG_SLOTS + 1023, 9);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(section_of(s, "q", 1, &sec, &base), TROVE_V3_ENC_PATCH);
    CHECK_EQ_INT(trove_volume_resize(v, (uint64_t)(SEG_SLOTS + 100) * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_resize(v, (uint64_t)N * BS), TROVE_OK);
    memset(snap_model + (SEG_SLOTS + 100) * BS, 0, (size_t)(N - SEG_SLOTS - 100) * BS);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    CHECK_EQ_INT(section_of(s, "q", 1, &sec, &base), TROVE_V3_ENC_PACKED);
    CHECK(volume_equals(v, snap_model, (uint64_t)N * BS));
    trove_volume_close(v);
    s = reopen(s, 0);
    CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
    CHECK_EQ_INT(trove_volume_open(s, "q", &v, NULL), TROVE_OK);
    CHECK(volume_equals(v, snap_model, (uint64_t)N * BS));
    trove_volume_close(v);
out:
    trove_store_close(s);
    free(pool);
    free(model);
    free(snap_model);
    free(orig);
}

/* Random small commits over a volume of 2.3 segments, with blocks from a pool of 6 (so a
 * slot often goes back to its base's block), snapshots along the way and gc: after every
 * reopen verify --deep is clean (the recount, patch bases included, equals the counts kept
 * commit by commit) and the volume and each snapshot read back their models. */
static void test_v3_patch_rounds(void)
{
    enum { POOL = 6, N = 2 * SEG_SLOTS + 300, ROUNDS = 60, SNAPS = 3 };
    static const uint32_t sizes[] = {1, 2, 5, 30, 70};
    struct trove_store *s = fresh_store();
    struct trove_volume *v = NULL;
    uint8_t *pool = malloc((size_t)(POOL + 1) * BS), *model = malloc((size_t)N * BS);
    uint8_t *snap[SNAPS] = {0};
    int snap_no[SNAPS] = {0}, nsnap = 0, patched = 0;
    uint64_t seed = 4242;
    char name[32];

    if (!pool || !model) {
        CHECK(0);
        goto out;
    }
    fill_random(pool, (size_t)POOL * BS, &seed);
    memset(pool + (size_t)POOL * BS, 0, BS); /* block POOL: zeros, an empty slot */
    CHECK_EQ_INT(trove_volume_create_format(s, "r", (uint64_t)N * BS, BS, V3, &v, NULL), TROVE_OK);
    for (uint64_t i = 0; i < N; i++)
        put_block(v, model, pool, i, (uint32_t)(test_rand(&seed) % (POOL + 1)));
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    for (int r = 0; r < ROUNDS; r++) {
        uint32_t k = sizes[test_rand(&seed) % (sizeof sizes / sizeof sizes[0])];
        uint64_t first = test_rand(&seed) % N;
        struct trove_v3_section sec;
        struct trove_digest base;
        for (uint32_t j = 0; j < k; j++) /* clustered: a few segments at a time */
            put_block(v, model, pool, (first + j * 7) % N,
                      (uint32_t)(test_rand(&seed) % (POOL + 1)));
        CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
        patched += section_of(s, "r", first / SEG_SLOTS, &sec, &base) == TROVE_V3_ENC_PATCH;
        if (r % 10 == 9) {
            if (nsnap == SNAPS) { /* the oldest goes */
                snprintf(name, sizeof name, "r-snap-%d", snap_no[0]);
                CHECK_EQ_INT(trove_volume_remove(s, name, NULL), TROVE_OK);
                free(snap[0]);
                memmove(snap, snap + 1, (SNAPS - 1) * sizeof *snap);
                memmove(snap_no, snap_no + 1, (SNAPS - 1) * sizeof *snap_no);
                nsnap--;
            }
            snprintf(name, sizeof name, "r-snap-%d", r / 10);
            CHECK_EQ_INT(trove_snapshot_create(s, "r", name, NULL), TROVE_OK);
            if ((snap[nsnap] = malloc((size_t)N * BS)) != NULL) {
                memcpy(snap[nsnap], model, (size_t)N * BS);
                snap_no[nsnap++] = r / 10;
            }
        }
        if (r % 15 == 14) {
            struct trove_gc_report gc;
            trove_volume_close(v);
            CHECK_EQ_INT(trove_store_gc(s, &gc, NULL, NULL), TROVE_OK);
            s = reopen(s, 0);
            CHECK(verify_clean(s, TROVE_VERIFY_DEEP));
            CHECK_EQ_INT(trove_volume_open(s, "r", &v, NULL), TROVE_OK);
            CHECK(volume_equals(v, model, (uint64_t)N * BS));
            for (int q = 0; q < nsnap; q++) {
                struct trove_volume *w = NULL;
                snprintf(name, sizeof name, "r-snap-%d", snap_no[q]);
                CHECK_EQ_INT(trove_volume_open(s, name, &w, NULL), TROVE_OK);
                CHECK(w && volume_equals(w, snap[q], (uint64_t)N * BS));
                trove_volume_close(w);
            }
        }
    }
    CHECK(patched > ROUNDS / 3); /* most small commits leave their first segment a patch */
    trove_volume_close(v);
out:
    trove_store_close(s);
    for (int q = 0; q < nsnap; q++)
        free(snap[q]);
    free(pool);
    free(model);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    snprintf(root, sizeof root, "/tmp/trove-volume-v3-XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_v3_commit_cost);
    RUN(test_v3_sparse);
    RUN(test_v3_corrupt_objects);
    RUN(test_v3_convert_and_share);
    RUN(test_v3_compact);
    RUN(test_v3_patches);
    RUN(test_v3_patch_rounds);
    if (test_failed == 0)
        test_rm_rf(root);
    else
        fprintf(stderr, "left %s for inspection\n", root);
    return test_done();
}
