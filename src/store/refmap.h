/*
 * refmap.h: an open-addressing hash table keyed by digest (linear probing, backward-shift
 * deletion), hashed by trove__digest_hash.
 * verify and gc count what the recipes name in one (store_recount.c: committed is the
 * count, len the slot length stated), a handle keeps the digests it put in another, and
 * the fs backend keeps its pack index in a third (see backend_fs.c for what the fields
 * hold).
 */
#ifndef TROVE_STORE_REFMAP_H
#define TROVE_STORE_REFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trove/backend.h"

/* The tables' hash of a digest: both halves mixed (a multiply and a shift), so that digests
 * that are not xxh3 output (synthetic ones, say) spread as well as real ones do. */
static inline size_t trove__digest_hash(const struct trove_digest *d)
{
    uint64_t a, b, h;
    memcpy(&a, d->b, 8);
    memcpy(&b, d->b + 8, 8);
    h = (a ^ b) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 29));
}

static inline int trove__digest_same(const struct trove_digest *x, const struct trove_digest *y)
{
    return memcmp(x->b, y->b, sizeof x->b) == 0;
}

struct ref_entry {
    struct trove_digest d;
    uint64_t live;      /* a counter of the user's (the fault backend's gets of d) */
    uint64_t committed; /* a recount: slots and records of committed recipes naming d */
    uint64_t len;       /* a recount: the slot length d must have (0: unknown) */
    uint32_t dict_index; /* a recount: first-seen order; the pack index: the pack */
    uint32_t used; /* 1: a table slot in use */
};

struct refmap {
    struct ref_entry *tab;
    size_t cap; /* a power of two, or 0 */
    size_t count;
};

struct ref_entry *trove__refmap_find(const struct refmap *m, const struct trove_digest *d);
/* Find d or add a zeroed entry for it (*created_out = 1). NULL when out of memory. The
 * returned pointer is valid until the next insert or remove. */
struct ref_entry *trove__refmap_insert(struct refmap *m, const struct trove_digest *d,
                                       int *created_out);
void trove__refmap_remove(struct refmap *m, struct ref_entry *e);
/* Size the table for n more entries at once. Inserting many keys into a table that doubles
 * as it goes, in the order of a bigger table's slots (as a saved table comes back), makes
 * long probe runs; a table sized up front does not. Errors: TROVE_ERR_NOMEM. */
int trove__refmap_reserve(struct refmap *m, size_t n);
void trove__refmap_free(struct refmap *m);

#endif
