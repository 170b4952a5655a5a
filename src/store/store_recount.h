/*
 * store_recount.h: the store's reference counts recounted from its committed recipes
 * (store_recount.c), for open, remove, verify and gc.
 */
#ifndef TROVE_STORE_RECOUNT_H
#define TROVE_STORE_RECOUNT_H

#include "store_internal.h"

struct recount {
    struct refmap map; /* committed counts; dict_index in first-seen order; len */
    struct trove__refs_basis *basis;
    size_t nbasis;
    uint64_t volumes, bad_recipes, slots, length_conflicts;
    char first_bad[256];
};

/* Count the references of every committed recipe of s into out (which the caller frees
 * with trove__recount_free; on failure it is freed already). Unreadable recipes are
 * counted in bad_recipes, the first one's message kept in first_bad. Errors:
 * TROVE_ERR_NOMEM, -errno (listing DIR/volumes). */
int trove__recount(struct trove_store *s, struct recount *out);
void trove__recount_free(struct recount *rc);

/* Replace the store's counts and basis with a recount's, taking them from it (it is still
 * freed with trove__recount_free). Live = committed: nothing may be dirty
 * (trove__store_any_dirty). */
void trove__recount_adopt(struct trove_store *s, struct recount *rc);

/* Entries whose committed count differs between the store's map and a recount. */
uint64_t trove__recount_mismatches(const struct trove_store *s, const struct recount *rc);

#endif
