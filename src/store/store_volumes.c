/*
 * store_volumes.c: whole volumes of a store — snapshots, removal and the listing
 * (include/trove/volume.h). A snapshot is the source's committed recipe with the read-only
 * flag set, published under a new name: it names the same objects, so it costs one recipe
 * file and shares every block, segment, chunk and page, and its references are counted
 * like any volume's. Removing a volume deletes its recipe durably, then drops its
 * references; when the recipe cannot be read they cannot be told, so the remaining recipes
 * are counted again instead (store_recount.c). The listing reads each recipe file alone
 * (a v3 manifest's objects are not fetched) and reports what it says.
 */
#include "store_recount.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "recipe_head.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Count every reference of a loaded volume's committed recipe: its slots and its recipe
 * objects, delta (+1 or -1) to both the live and the committed counts. */
static int volume_refs(struct trove_store *s, struct trove_volume *v, int delta)
{
    int rc;

    for (uint64_t i = 0; i < v->slot_count; i++)
        if (v->idx[i] != 0 && (rc = trove__ref_add(s, vol_digest(v, i), delta, delta)))
            return rc;
    return trove__volume_meta_refs(v, delta);
}

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
        (rc = trove__recipe_publish(s, name, raw.ptr, raw.len)) != TROVE_OK) {
        TROVE_FAIL(diag, rc, 0, "cannot write %s: %s", path, trove_strerror(rc));
        goto out;
    }
    if ((rc = volume_refs(s, v, +1)) != TROVE_OK) {
        s->sticky = rc; /* the snapshot is committed; this handle's counts are not */
        goto out;
    }
    rc = trove__basis_set(s, name, v->generation, trove__recipe_checksum(raw.ptr, raw.len));
out:
    trove__volume_free(v);
    trove_bytes_free(&raw);
    return rc;
}

int trove_volume_remove(struct trove_store *s, const char *name, struct trove_diag *diag)
{
    struct trove_volume *v = NULL;
    struct recount rcnt;
    char path[4096];
    int rc;

    if (!s) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no store");
        goto out;
    }
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK ||
        (rc = trove__store_writable(s, diag)) != TROVE_OK)
        goto out;
    for (const struct trove_volume *o = s->open; o; o = o->next)
        if (strcmp(o->name, name) == 0) {
            rc = TROVE_FAIL(diag, TROVE_ERR_BUSY, 0, "volume '%s' is open; close it first",
                            name);
            goto out;
        }
    trove__recipe_path(s, name, path, sizeof path);
    rc = trove__volume_load(s, name, &v, NULL);
    if (rc == TROVE_ERR_NOTFOUND && trove__recipe_exists(s, name) == 0) {
        TROVE_FAIL(diag, rc, 0, "no volume '%s' in the store %s", name, s->dir);
        goto out;
    }
    if (rc == TROVE_ERR_NOMEM)
        goto out;
    if (rc != TROVE_OK && trove__store_any_dirty(s)) {
        rc = TROVE_FAIL(diag, TROVE_ERR_BUSY, 0,
                        "%s is unreadable, so removing it means recounting every recipe; "
                        "commit or close the open volumes first",
                        path);
        goto out;
    }
    if ((rc = trove__recipe_remove(s, name)) != TROVE_OK) {
        TROVE_FAIL(diag, rc, 0, "cannot remove %s: %s", path, trove_strerror(rc));
        goto out;
    }
    trove__basis_drop(s, name);
    if (v) {
        if ((rc = volume_refs(s, v, -1)) != TROVE_OK) {
            s->sticky = rc;
            goto out;
        }
    } else {
        /* Its references cannot be read: count the remaining recipes again. */
        if ((rc = trove__recount(s, &rcnt)) != TROVE_OK) {
            s->sticky = rc;
            goto out;
        }
        trove__recount_adopt(s, &rcnt);
        trove__recount_free(&rcnt);
    }
    rc = TROVE_OK;
out:
    trove__volume_free(v);
    return rc;
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
        } else if (rc == TROVE_OK && version == 3) {
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

