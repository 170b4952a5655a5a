/*
 * store_recount.c: the references of a store counted from its committed recipes, the
 * store's only metadata (store_recount.h), for verify (what must exist, and how long) and
 * gc (what must stay).
 *
 * A recount loads every recipe as a volume (recipe_io.c: v3 objects are fetched and
 * rehashed) and counts each slot, section, page and patch base once, into a map of its
 * own. A recipe that cannot be read is counted as bad, not as an error, so that one
 * damaged volume does not stop verify: what it named is missing from the recount, and gc
 * refuses to run on such a recount.
 */
#include "store_recount.h"
#include "common/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void trove__recount_free(struct recount *rc)
{
    trove__refmap_free(&rc->map);
    memset(rc, 0, sizeof *rc);
}

/* Count one reference to d in a recount; len is the slot's length (0: a recipe object or
 * an object volume's slot, whose length no recipe states). The first stated length is the
 * one verify checks; a different one is a conflict. */
static int recount_add(struct recount *out, const struct trove_digest *d, uint64_t len)
{
    struct ref_entry *e;
    int created;

    if (!(e = trove__refmap_insert(&out->map, d, &created)))
        return TROVE_ERR_NOMEM;
    if (created) {
        e->dict_index = (uint32_t)(out->map.count - 1);
        e->len = len;
    } else if (len != 0 && e->len == 0) {
        e->len = len;
    } else if (len != 0 && e->len != len) {
        out->length_conflicts++;
    }
    e->committed++;
    return TROVE_OK;
}

/* Count the objects v's committed v3 recipe is made of: sections, pages, patch bases. */
static int recount_recipe_objects(struct recount *out, const struct trove_volume *v)
{
    int rc;

    for (uint64_t j = 0; j < v->nsec; j++)
        if ((rc = recount_add(out, &v->sec[j].d, 0)) != TROVE_OK)
            return rc;
    for (uint64_t j = 0; j < v->npages; j++)
        if ((rc = recount_add(out, &v->pages[j], 0)) != TROVE_OK)
            return rc;
    for (uint64_t j = 0; v->patch && j < v->nsec_seg; j++)
        if (v->patch[j] && (rc = recount_add(out, &v->patch[j]->base, 0)) != TROVE_OK)
            return rc;
    return TROVE_OK;
}

int trove__recount(struct trove_store *s, struct recount *out)
{
    struct trove_volume *v = NULL;
    char **names = NULL;
    size_t n = 0;
    int rc;

    memset(out, 0, sizeof *out);
    if ((rc = trove__recipe_names(s, &names, &n)) != TROVE_OK)
        goto out;
    for (size_t k = 0; k < n; k++) {
        struct trove_diag diag = {0};
        out->volumes++;
        rc = trove__volume_load(s, names[k], &v, &diag);
        if (rc == TROVE_ERR_NOMEM)
            goto out;
        if (rc != TROVE_OK) {
            if (out->bad_recipes++ == 0)
                snprintf(out->first_bad, sizeof out->first_bad, "%.255s", diag.msg);
            continue;
        }
        for (uint64_t i = 0; i < v->slot_count; i++) {
            uint64_t left = v->size - i * v->block_size;
            if (v->idx[i] == 0)
                continue;
            out->slots++;
            if (v->flags & TROVE_RECIPE_FLAG_OBJECTS)
                left = 0; /* any length up to the block size */
            else if (left > v->block_size)
                left = v->block_size;
            rc = recount_add(out, vol_digest(v, i), left);
            if (rc != TROVE_OK)
                goto out;
        }
        if ((rc = recount_recipe_objects(out, v)) != TROVE_OK)
            goto out;
        trove__volume_free(v);
        v = NULL;
    }
    rc = TROVE_OK;
out:
    trove__volume_free(v);
    trove__names_free(names, n);
    if (rc != TROVE_OK)
        trove__recount_free(out);
    return rc;
}

int trove__recount_open(struct trove_store *s, struct recount *out)
{
    int rc;

    for (const struct trove_volume *v = s->open; v; v = v->next) {
        /* The dictionary holds every digest a slot names now (entry 0 is the empty one);
         * the recipe objects are the committed recipe's, counted already unless it has
         * gone since, so they are counted again here. */
        for (uint32_t k = 1; k < v->dict.len; k++)
            if (!trove_digest_is_zero(&v->dict.digests[k]) &&
                (rc = recount_add(out, &v->dict.digests[k], 0)) != TROVE_OK)
                return rc;
        if ((rc = recount_recipe_objects(out, v)) != TROVE_OK)
            return rc;
    }
    return TROVE_OK;
}
