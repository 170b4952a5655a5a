/*
 * store_recount.c: the reference counts of a store counted again from its committed
 * recipes, the one source they derive from (store_recount.h). Open recounts when DIR/refs
 * is missing, damaged or behind the recipes; remove when the recipe it drops cannot be
 * read; verify and gc to check the counts they trust against the recipes.
 *
 * A recount loads every recipe as a volume (recipe_io.c: v3 objects are fetched and
 * rehashed) and counts each slot, section, page and patch base once, into a map of its
 * own; the store's counts are untouched until the caller adopts the recount. A recipe that
 * cannot be read is counted as bad, not as an error, so that one damaged volume does not
 * stop the store from opening: what it named is missing from the recount, and gc refuses
 * to run on such a recount.
 */
#include "store_recount.h"
#include "common/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void trove__recount_free(struct recount *rc)
{
    trove__refmap_free(&rc->map);
    free(rc->basis);
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

int trove__recount(struct trove_store *s, struct recount *out)
{
    struct trove_volume *v = NULL;
    char **names = NULL;
    size_t n = 0;
    int rc;

    memset(out, 0, sizeof *out);
    if ((rc = trove__recipe_names(s, &names, &n)) != TROVE_OK)
        goto out;
    if (n > 0 && !(out->basis = trove__calloc(n, sizeof *out->basis))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        struct trove_diag diag = {0};
        out->volumes++;
        rc = trove__volume_load(s, names[k], &v, &diag);
        if (rc == TROVE_ERR_NOMEM)
            goto out;
        if (rc != TROVE_OK) {
            if (out->bad_recipes++ == 0)
                snprintf(out->first_bad, sizeof out->first_bad, "%s", diag.msg);
            continue;
        }
        snprintf(out->basis[out->nbasis].name, sizeof out->basis[0].name, "%s", names[k]);
        out->basis[out->nbasis].generation = v->generation;
        out->basis[out->nbasis].checksum = v->recipe_sum;
        out->nbasis++;
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
        for (uint64_t j = 0; j < v->nsec; j++)
            if ((rc = recount_add(out, &v->sec[j].d, 0)) != TROVE_OK)
                goto out;
        for (uint64_t j = 0; j < v->npages; j++)
            if ((rc = recount_add(out, &v->pages[j], 0)) != TROVE_OK)
                goto out;
        for (uint64_t j = 0; v->patch && j < v->nsec_seg; j++)
            if (v->patch[j] && (rc = recount_add(out, &v->patch[j]->base, 0)) != TROVE_OK)
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

void trove__recount_adopt(struct trove_store *s, struct recount *rc)
{
    trove__refmap_free(&s->refs);
    s->refs = rc->map;
    memset(&rc->map, 0, sizeof rc->map);
    for (size_t k = 0; k < s->refs.cap; k++)
        if (s->refs.tab[k].used) {
            s->refs.tab[k].live = s->refs.tab[k].committed;
            s->refs.tab[k].len = 0;
        }
    s->dict_size = (uint32_t)s->refs.count;
    s->nfree = 0;
    free(s->basis);
    s->basis = rc->basis;
    s->nbasis = rc->nbasis;
    s->cap_basis = rc->nbasis;
    rc->basis = NULL;
    rc->nbasis = 0;
}

uint64_t trove__recount_mismatches(const struct trove_store *s, const struct recount *rc)
{
    uint64_t bad = 0;

    for (size_t k = 0; k < s->refs.cap; k++) {
        const struct ref_entry *e = &s->refs.tab[k], *f;
        if (!e->used || e->committed == 0)
            continue;
        f = trove__refmap_find(&rc->map, &e->d);
        if (!f || f->committed != e->committed)
            bad++;
    }
    for (size_t k = 0; k < rc->map.cap; k++) {
        const struct ref_entry *e = &rc->map.tab[k], *f;
        if (!e->used)
            continue;
        f = trove__refmap_find(&s->refs, &e->d);
        if (!f || f->committed == 0)
            bad++;
    }
    return bad;
}

