/*
 * store_recount.h: the references of a store counted from its committed recipes
 * (store_recount.c), for verify and gc. The store keeps no counts of its own; this is the
 * one place they are counted, on demand, in O(store).
 */
#ifndef TROVE_STORE_RECOUNT_H
#define TROVE_STORE_RECOUNT_H

#include "store_internal.h"

struct recount {
    struct refmap map; /* committed: slots and recipe records naming d; len */
    uint64_t volumes, bad_recipes, slots, length_conflicts;
    char first_bad[256];
};

/* Count the references of every committed recipe of s into out (which the caller frees
 * with trove__recount_free; on failure it is freed already). Unreadable recipes are
 * counted in bad_recipes, the first one's message kept in first_bad. Errors:
 * TROVE_ERR_NOMEM, -errno (listing DIR/volumes). */
int trove__recount(struct trove_store *s, struct recount *out);
/* Add what the open volumes of s name now, committed or not (gc must keep those too).
 * Errors: TROVE_ERR_NOMEM. */
int trove__recount_open(struct trove_store *s, struct recount *out);
void trove__recount_free(struct recount *rc);

#endif
