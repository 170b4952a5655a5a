/*
 * store_volumes.c: whole volumes of a store — snapshots, removal and the listing
 * (include/trove/volume.h). A snapshot is the source's committed recipe with the read-only
 * flag set, published under a new name: it names the same objects, so it costs one recipe
 * file and shares every block, segment, chunk and page. Removing a volume deletes its recipe
 * durably and nothing else: what only it named is garbage for gc, which finds it by what
 * the remaining recipes name, so a recipe that cannot be read is removed as easily. The
 * listing reads each recipe file alone (a v3 manifest's objects are not fetched) and
 * reports what it says.
 */
#include "store_internal.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "recipe_head.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int trove_snapshot_create(struct trove_store *s, const char *src, const char *name,
                          struct trove_diag *diag)
{
    struct trove_bytes raw = {0};
    struct trove_volume *v = NULL;
    char path[4096];
    int rc;

    if (!s) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no store");
        goto out;
    }
    if ((rc = trove_volume_name_check(src, diag)) != TROVE_OK ||
        (rc = trove_volume_name_check(name, diag)) != TROVE_OK ||
        (rc = trove__store_writable(s, diag)) != TROVE_OK)
        goto out;
    trove__recipe_path(s, name, path, sizeof path);
    if ((rc = trove__recipe_exists(s, name)) != 0) {
        if (rc > 0)
            rc = TROVE_FAIL(diag, TROVE_ERR_EXISTS, 0, "'%s' already exists (%s)", name,
                            path);
        goto out;
    }
    /* The source's committed recipe, loaded (which checks it and every object it names)
     * and as bytes: a snapshot is the same recipe with the read-only flag, naming the same
     * objects, so it shares every segment, chunk and page. */
    if ((rc = trove__volume_load(s, src, &v, diag)) != TROVE_OK ||
        (rc = trove__recipe_read(s, src, &raw, diag)) != TROVE_OK)
        goto out;
    if ((rc = trove__recipe_set_readonly(raw.ptr, raw.len)) != TROVE_OK ||
        (rc = trove__recipe_publish(s, name, raw.ptr, raw.len)) != TROVE_OK)
        TROVE_FAIL(diag, rc, 0, "cannot write %s: %s", path, trove_strerror(rc));
out:
    trove__volume_free(v);
    trove_bytes_free(&raw);
    return rc;
}

int trove_volume_remove(struct trove_store *s, const char *name, struct trove_diag *diag)
{
    char path[4096];
    int rc;

    if (!s)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no store");
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK ||
        (rc = trove__store_writable(s, diag)) != TROVE_OK)
        return rc;
    for (const struct trove_volume *o = s->open; o; o = o->next)
        if (strcmp(o->name, name) == 0)
            return TROVE_FAIL(diag, TROVE_ERR_BUSY, 0, "volume '%s' is open; close it first",
                              name);
    trove__recipe_path(s, name, path, sizeof path);
    if ((rc = trove__recipe_exists(s, name)) == 0)
        return TROVE_FAIL(diag, TROVE_ERR_NOTFOUND, 0, "no volume '%s' in the store %s", name,
                          s->dir);
    if (rc < 0 || (rc = trove__recipe_remove(s, name)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "cannot remove %s: %s", path, trove_strerror(rc));
    return TROVE_OK;
}

int trove_volume_list(struct trove_store *s, struct trove_volume_entry **out, size_t *count_out)
{
    struct trove_volume_entry *ents = NULL;
    struct trove_bytes img = {0};
    char **names = NULL;
    size_t n = 0;
    int rc;

    if (!s || !out || !count_out)
        return TROVE_ERR_INVALID;
    *out = NULL;
    *count_out = 0;
    if ((rc = trove__recipe_names(s, &names, &n)) != TROVE_OK)
        goto out;
    if (n > 0 && !(ents = trove__calloc(n, sizeof *ents))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        struct trove_recipe_v1 r1;
        struct trove_recipe_v3 r3;
        uint32_t version = 0;
        snprintf(ents[k].name, sizeof ents[k].name, "%s", names[k]);
        /* The recipe file only (a v3 manifest's objects are not fetched): what it says. */
        rc = trove__recipe_read(s, names[k], &img, NULL);
        if (rc == TROVE_OK)
            rc = trove_recipe_version(img.ptr, img.len, &version, NULL);
        if (rc == TROVE_OK && version == 1 &&
            (rc = trove_recipe_v1_decode(img.ptr, img.len, &r1, NULL)) == TROVE_OK) {
            r3.flags = r1.flags;
            r3.volume_size = r1.volume_size;
            r3.block_size = r1.block_size;
            r3.slot_count = r1.slot_count;
            r3.generation = r1.generation;
        } else if (rc == TROVE_OK) { /* 3 or 4: one layout */
            rc = trove_recipe_v3_decode(img.ptr, img.len, &r3, NULL);
        }
        if (rc == TROVE_ERR_NOMEM)
            goto out;
        if (rc != TROVE_OK) {
            ents[k].error = rc;
            continue;
        }
        ents[k].readonly = (r3.flags & TROVE_RECIPE_FLAG_READONLY) != 0;
        ents[k].objects = (r3.flags & TROVE_RECIPE_FLAG_OBJECTS) != 0;
        ents[k].size = r3.volume_size;
        ents[k].block_size = r3.block_size;
        ents[k].slots = r3.slot_count;
        ents[k].generation = r3.generation;
        ents[k].recipe_bytes = img.len;
        ents[k].recipe_format = (int)version;
    }
    *out = ents;
    *count_out = n;
    ents = NULL;
    rc = TROVE_OK;
out:
    free(ents);
    trove__names_free(names, n);
    trove_bytes_free(&img);
    return rc;
}

