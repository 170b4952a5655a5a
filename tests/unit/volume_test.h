/*
 * volume_test.h: what the volume tests share (test_volume.c, test_volume_v3.c): a fresh
 * store directory per case under the binary's temp root, reopening, counting the data and
 * recipe objects a store holds, comparing a volume with its in-memory model, and a clean
 * verify.
 */
#ifndef TROVE_VOLUME_TEST_H
#define TROVE_VOLUME_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "trove/recipe.h"
#include "trove/volume.h"

#define BS 4096u
#define SEG_SLOTS TROVE_RECIPE_V3_SEGMENT_SLOTS

static char root[64];
static char sdir[128];
static int store_seq;

#define V1 TROVE_RECIPE_FORMAT_V1
#define V3 TROVE_RECIPE_FORMAT_V3
#define V4 TROVE_RECIPE_FORMAT_V4

static inline void fill_random(uint8_t *p, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(test_rand(seed) >> 24);
}

/* A fresh store directory for one test. */
static inline struct trove_store *fresh_store(void)
{
    struct trove_store *s = NULL;
    snprintf(sdir, sizeof sdir, "%s/s%d", root, store_seq++);
    CHECK_EQ_INT(trove_store_open(sdir, TROVE_STORE_CREATE, &s, NULL), TROVE_OK);
    return s;
}

static inline struct trove_store *reopen(struct trove_store *s, unsigned flags)
{
    struct trove_store *t = NULL;
    trove_store_close(s);
    CHECK_EQ_INT(trove_store_open(sdir, flags, &t, NULL), TROVE_OK);
    return t;
}

struct count_ctx {
    struct trove_backend *be;
    uint64_t data, recipe;
};

/* Recipe objects (v3 pages, chunks, segments) start with "TRV3"; test data never does. */
static inline int count_objects_cb(void *ctx, const struct trove_digest *d)
{
    struct count_ctx *c = ctx;
    struct trove_bytes b = {0};

    if (trove_backend_get(c->be, d, &b, 1u << 30) == TROVE_OK && b.len >= 4 &&
        memcmp(b.ptr, "TRV3", 4) == 0)
        c->recipe++;
    else
        c->data++;
    trove_bytes_free(&b);
    return 0;
}

/* Data objects in the store (recipe objects not counted). */
static inline uint64_t count_objects(struct trove_store *s)
{
    struct count_ctx c = {trove_store_backend(s), 0, 0};
    CHECK_EQ_INT(trove_backend_list(c.be, count_objects_cb, &c), TROVE_OK);
    return c.data;
}

/* Recipe objects in the store. */
static inline uint64_t count_recipe_objects(struct trove_store *s)
{
    struct count_ctx c = {trove_store_backend(s), 0, 0};
    CHECK_EQ_INT(trove_backend_list(c.be, count_objects_cb, &c), TROVE_OK);
    return c.recipe;
}

static inline int volume_equals(struct trove_volume *v, const uint8_t *model, uint64_t size)
{
    struct trove_volume_info in;
    uint8_t *buf = malloc(size ? size : 1);
    int ok;

    if (trove_volume_info(v, &in) != TROVE_OK || in.size != size) {
        free(buf);
        return 0;
    }
    ok = trove_volume_read(v, 0, buf, size) == TROVE_OK && memcmp(buf, model, size) == 0;
    free(buf);
    return ok;
}

static inline int verify_clean(struct trove_store *s, unsigned flags)
{
    struct trove_verify_report rep;
    int rc = trove_store_verify(s, flags, &rep, NULL, NULL);
    if (rc != TROVE_OK)
        fprintf(stderr, "verify: %s (%s)\n", trove_strerror(rc), rep.first_problem);
    return rc == TROVE_OK;
}

#endif
