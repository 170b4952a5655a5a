/*
 * refmap.c: the open-addressing hash table of digests behind the fs backend's pack index,
 * the store's counts of what its recipes name, and sets of digests (refmap.h).
 */
#include "refmap.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>


struct ref_entry *trove__refmap_find(const struct refmap *m, const struct trove_digest *d)
{
    size_t mask, i;

    if (m->cap == 0)
        return NULL;
    mask = m->cap - 1;
    for (i = trove__digest_hash(d) & mask; m->tab[i].used; i = (i + 1) & mask)
        if (trove__digest_same(&m->tab[i].d, d))
            return &m->tab[i];
    return NULL;
}

/* Rehash into a table of cap slots (a power of two above the count). */
static int refmap_rehash(struct refmap *m, size_t cap)
{
    struct ref_entry *tab = trove__calloc(cap, sizeof *tab);

    if (!tab)
        return TROVE_ERR_NOMEM;
    for (size_t k = 0; k < m->cap; k++) {
        size_t i;
        if (!m->tab[k].used)
            continue;
        for (i = trove__digest_hash(&m->tab[k].d) & (cap - 1); tab[i].used; i = (i + 1) & (cap - 1))
            ;
        tab[i] = m->tab[k];
    }
    free(m->tab);
    m->tab = tab;
    m->cap = cap;
    return TROVE_OK;
}

static int refmap_grow(struct refmap *m)
{
    return refmap_rehash(m, m->cap ? m->cap * 2 : 64);
}

int trove__refmap_reserve(struct refmap *m, size_t n)
{
    size_t cap = m->cap ? m->cap : 64;

    while (cap * 3 < (m->count + n) * 4) {
        if (cap > SIZE_MAX / 2 / sizeof *m->tab)
            return TROVE_ERR_NOMEM;
        cap *= 2;
    }
    return cap == m->cap ? TROVE_OK : refmap_rehash(m, cap);
}

struct ref_entry *trove__refmap_insert(struct refmap *m, const struct trove_digest *d,
                                       int *created_out)
{
    struct ref_entry *e = trove__refmap_find(m, d);
    size_t i;

    *created_out = 0;
    if (e)
        return e;
    /* Load factor at most 3/4. */
    if ((m->count + 1) * 4 > m->cap * 3 && refmap_grow(m) != TROVE_OK)
        return NULL;
    for (i = trove__digest_hash(d) & (m->cap - 1); m->tab[i].used; i = (i + 1) & (m->cap - 1))
        ;
    memset(&m->tab[i], 0, sizeof m->tab[i]);
    m->tab[i].d = *d;
    m->tab[i].used = 1;
    m->count++;
    *created_out = 1;
    return &m->tab[i];
}

/* Backward-shift deletion: later members of the probe run move up into the hole. */
void trove__refmap_remove(struct refmap *m, struct ref_entry *e)
{
    size_t mask = m->cap - 1, hole = (size_t)(e - m->tab), i = hole;

    for (;;) {
        size_t home;
        i = (i + 1) & mask;
        if (!m->tab[i].used)
            break;
        home = trove__digest_hash(&m->tab[i].d) & mask;
        /* Move i into the hole unless its home lies cyclically in (hole, i]. */
        if ((i > hole && (home <= hole || home > i)) || (i < hole && home <= hole && home > i)) {
            m->tab[hole] = m->tab[i];
            hole = i;
        }
    }
    memset(&m->tab[hole], 0, sizeof m->tab[hole]);
    m->count--;
}

void trove__refmap_free(struct refmap *m)
{
    free(m->tab);
    memset(m, 0, sizeof *m);
}

