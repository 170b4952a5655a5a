/*
 * dict.c: a volume's digest dictionary (dict.h).
 *
 * The table stores indices, not digests; a probe compares the probed index's digest. Its
 * hash is trove__digest_hash (refmap.h). The table is kept at most
 * half full. Chunk bits mark every index whose entry changed (added, freed, reused), which
 * is what a v3 commit rewrites.
 */
#include "dict.h"
#include "common/alloc.h"
#include "refmap.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 1024u


static void mark_chunk(struct trove__dict *t, uint32_t idx)
{
    uint32_t c = idx / CHUNK;
    if (c < t->chunk_cap)
        t->chunk_dirty[c / 8] |= (uint8_t)(1u << (c % 8));
}

static int grow_chunks(struct trove__dict *t, uint32_t idx)
{
    size_t need = idx / CHUNK + 1, cap = t->chunk_cap ? t->chunk_cap : 64;
    uint8_t *p;

    if (need <= t->chunk_cap)
        return TROVE_OK;
    while (cap < need)
        cap *= 2;
    if (!(p = trove__realloc(t->chunk_dirty, cap / 8)))
        return TROVE_ERR_NOMEM;
    memset(p + t->chunk_cap / 8, 0, (cap - t->chunk_cap) / 8);
    t->chunk_dirty = p;
    t->chunk_cap = cap;
    return TROVE_OK;
}

static int grow_entries(struct trove__dict *t, uint32_t need)
{
    uint32_t cap = t->cap ? t->cap : 16;
    struct trove_digest *d;
    uint32_t *r;

    if (need <= t->cap)
        return TROVE_OK;
    while (cap < need)
        cap = cap > TROVE__DICT_MAX / 2 ? TROVE__DICT_MAX : cap * 2;
    if (!(d = trove__realloc(t->digests, (size_t)cap * sizeof *d)))
        return TROVE_ERR_NOMEM;
    t->digests = d;
    if (!(r = trove__realloc(t->refc, (size_t)cap * sizeof *r)))
        return TROVE_ERR_NOMEM;
    t->refc = r;
    t->cap = cap;
    return TROVE_OK;
}

static void table_put(uint32_t *tab, size_t cap, const struct trove__dict *t, uint32_t idx)
{
    size_t i;
    for (i = trove__digest_hash(&t->digests[idx]) & (cap - 1); tab[i]; i = (i + 1) & (cap - 1))
        ;
    tab[i] = idx;
}

/* Rebuild the table with cap slots (a power of two above 2 * live). */
static int rebuild_table(struct trove__dict *t, size_t cap)
{
    uint32_t *tab = trove__calloc(cap, sizeof *tab);

    if (!tab)
        return TROVE_ERR_NOMEM;
    for (size_t k = 0; k < t->table_cap; k++)
        if (t->table[k])
            table_put(tab, cap, t, t->table[k]);
    free(t->table);
    t->table = tab;
    t->table_cap = cap;
    return TROVE_OK;
}

static int grow_table(struct trove__dict *t)
{
    return rebuild_table(t, t->table_cap ? t->table_cap * 2 : 16);
}

static size_t table_slot(const struct trove__dict *t, const struct trove_digest *d)
{
    size_t i, mask = t->table_cap - 1;
    for (i = trove__digest_hash(d) & mask; t->table[i]; i = (i + 1) & mask)
        if (trove__digest_same(&t->digests[t->table[i]], d))
            return i;
    return i; /* the empty slot where d would go */
}

/* Empty table slot hole (where lookups find the index it holds), moving back the entries
 * after it that would no longer be found. */
static void table_remove_at(struct trove__dict *t, size_t hole)
{
    size_t mask = t->table_cap - 1, i = hole;

    for (;;) {
        size_t home;
        i = (i + 1) & mask;
        if (!t->table[i])
            break;
        home = trove__digest_hash(&t->digests[t->table[i]]) & mask;
        if ((i > hole && (home <= hole || home > i)) || (i < hole && home <= hole && home > i)) {
            t->table[hole] = t->table[i];
            hole = i;
        }
    }
    t->table[hole] = 0;
}

int trove__dict_init(struct trove__dict *t)
{
    memset(t, 0, sizeof *t);
    if (grow_entries(t, 1) != TROVE_OK || grow_table(t) != TROVE_OK ||
        grow_chunks(t, 0) != TROVE_OK) {
        trove__dict_free(t);
        return TROVE_ERR_NOMEM;
    }
    memset(&t->digests[0], 0, sizeof t->digests[0]);
    t->refc[0] = 0;
    t->len = 1;
    return TROVE_OK;
}

void trove__dict_free(struct trove__dict *t)
{
    free(t->digests);
    free(t->refc);
    free(t->table);
    free(t->free_idx);
    free(t->chunk_dirty);
    memset(t, 0, sizeof *t);
}

uint32_t trove__dict_find(const struct trove__dict *t, const struct trove_digest *d)
{
    if (trove_digest_is_zero(d))
        return 0;
    return t->table[table_slot(t, d)];
}

static int push_free(struct trove__dict *t, uint32_t idx)
{
    if (t->nfree == t->cap_free) {
        size_t cap = t->cap_free ? t->cap_free * 2 : 64;
        uint32_t *p = trove__realloc(t->free_idx, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        t->free_idx = p;
        t->cap_free = cap;
    }
    t->free_idx[t->nfree++] = idx;
    return TROVE_OK;
}

/* A free index in the tail chunk or a dirty chunk, else a new one at the end. */
static int take_index(struct trove__dict *t, uint32_t *out)
{
    if (t->nfree > 0) {
        uint32_t idx = t->free_idx[t->nfree - 1];
        uint32_t c = idx / CHUNK;
        if (c == (t->len - 1) / CHUNK || trove__dict_chunk_dirty(t, c)) {
            t->nfree--;
            *out = idx;
            return TROVE_OK;
        }
    }
    if (t->len >= TROVE__DICT_MAX)
        return TROVE_ERR_LIMIT;
    if (grow_entries(t, t->len + 1) != TROVE_OK || grow_chunks(t, t->len) != TROVE_OK)
        return TROVE_ERR_NOMEM;
    *out = t->len++;
    return TROVE_OK;
}

int trove__dict_intern(struct trove__dict *t, const struct trove_digest *d, uint32_t *idx_out,
                       int *created_out)
{
    uint32_t idx;
    int rc;

    *created_out = 0;
    if (trove_digest_is_zero(d)) {
        *idx_out = 0;
        return TROVE_OK;
    }
    if ((idx = trove__dict_find(t, d)) != 0) {
        *idx_out = idx;
        return TROVE_OK;
    }
    if ((t->live + 1) * 2 > t->table_cap && (rc = grow_table(t)) != TROVE_OK)
        return rc;
    if ((rc = take_index(t, &idx)) != TROVE_OK)
        return rc;
    t->digests[idx] = *d;
    t->refc[idx] = 0;
    t->table[table_slot(t, d)] = idx;
    t->live++;
    mark_chunk(t, idx);
    *idx_out = idx;
    *created_out = 1;
    return TROVE_OK;
}

void trove__dict_ref(struct trove__dict *t, uint32_t idx)
{
    assert(idx > 0 && idx < t->len);
    t->refc[idx]++;
}

static void free_index(struct trove__dict *t, uint32_t idx)
{
    size_t at = table_slot(t, &t->digests[idx]);

    if (t->table[at] == idx)
        table_remove_at(t, at);
    else
        t->aliases--; /* a repeat of a digest the table maps to another index */
    memset(&t->digests[idx], 0, sizeof t->digests[idx]);
    t->live--;
    mark_chunk(t, idx);
    /* If the free list cannot grow the index is leaked: it stays zero, never reused. */
    push_free(t, idx);
}

void trove__dict_unref(struct trove__dict *t, uint32_t idx)
{
    assert(idx > 0 && idx < t->len && t->refc[idx] > 0);
    if (--t->refc[idx] == 0)
        free_index(t, idx);
}

void trove__dict_release_unused(struct trove__dict *t, uint32_t idx)
{
    if (idx > 0 && t->refc[idx] == 0)
        free_index(t, idx);
}

int trove__dict_reserve(struct trove__dict *t, uint32_t n)
{
    size_t cap = t->table_cap ? t->table_cap : 16;
    int rc;

    if (n >= TROVE__DICT_MAX)
        return TROVE_ERR_LIMIT;
    if ((rc = grow_entries(t, n + 1)) != TROVE_OK || (rc = grow_chunks(t, n)) != TROVE_OK)
        return rc;
    while (cap < 2 * (size_t)n + 2)
        cap *= 2;
    return cap > t->table_cap ? rebuild_table(t, cap) : TROVE_OK;
}

void trove__dict_prefetch(const struct trove__dict *t, const struct trove_digest *d)
{
    if (t->table_cap)
        __builtin_prefetch(&t->table[trove__digest_hash(d) & (t->table_cap - 1)]);
}

int trove__dict_load_entry(struct trove__dict *t, uint32_t idx, const struct trove_digest *d,
                           int repeats)
{
    size_t slot;
    int rc;

    if (idx >= TROVE__DICT_MAX)
        return TROVE_ERR_LIMIT;
    if ((rc = grow_entries(t, idx + 1)) != TROVE_OK || (rc = grow_chunks(t, idx)) != TROVE_OK)
        return rc;
    while (t->len <= idx) {
        memset(&t->digests[t->len], 0, sizeof t->digests[0]);
        t->refc[t->len++] = 0;
    }
    if (idx == 0 || trove_digest_is_zero(d))
        return idx == 0 && !trove_digest_is_zero(d) ? TROVE_ERR_CORRUPT : TROVE_OK;
    if ((t->live + 1) * 2 > t->table_cap && (rc = grow_table(t)) != TROVE_OK)
        return rc;
    /* One probe: where d is (a repeat: refused, or kept untabled) or where it goes. */
    if (t->table[slot = table_slot(t, d)] != 0) {
        if (!repeats)
            return TROVE_ERR_CORRUPT;
        t->aliases++;
    } else {
        t->table[slot] = idx;
    }
    t->digests[idx] = *d;
    t->live++;
    return TROVE_OK;
}

/* Trim the arrays to what is used, and the table to the smallest power of two above
 * 2 * live: a loaded recipe costs 20 bytes per dictionary entry plus 8 to 16 of table. */
static void trim(struct trove__dict *t)
{
    size_t cap = 16;
    struct trove_digest *d;
    uint32_t *r;

    while (cap < 2 * t->live + 2)
        cap *= 2;
    if (cap < t->table_cap)
        rebuild_table(t, cap); /* on failure the bigger table stays: still correct */
    if (t->len < t->cap) {
        if ((d = trove__realloc(t->digests, (size_t)t->len * sizeof *d)) != NULL)
            t->digests = d;
        if ((r = trove__realloc(t->refc, (size_t)t->len * sizeof *r)) != NULL)
            t->refc = r;
        t->cap = t->len; /* either way both arrays hold at least len entries */
    }
}

int trove__dict_open_sparse(struct trove__dict *t, uint32_t n)
{
    struct trove_digest *d;
    uint32_t *r, cap;

    if (n == 0 || n >= TROVE__DICT_MAX)
        return n == 0 ? TROVE_ERR_INVALID : TROVE_ERR_LIMIT;
    /* Room for a chunk of new entries past the stored ones: a commit's new digests append
     * there, and growing would copy the whole (mostly untouched) arrays. */
    cap = n > TROVE__DICT_MAX - CHUNK ? TROVE__DICT_MAX : n + CHUNK;
    if (!(d = trove__calloc(cap, sizeof *d)) || !(r = trove__calloc(cap, sizeof *r))) {
        free(d);
        return TROVE_ERR_NOMEM;
    }
    free(t->digests);
    free(t->refc);
    t->digests = d;
    t->refc = r;
    t->cap = cap;
    t->len = n;
    return grow_chunks(t, n - 1);
}

int trove__dict_finish_load(struct trove__dict *t)
{
    t->nfree = 0; /* every free index is found again below */
    /* Free from the top down, so the stack hands out low indices first. */
    for (uint32_t idx = t->len; idx-- > 1;) {
        if (t->refc[idx] > 0)
            continue;
        if (!trove_digest_is_zero(&t->digests[idx])) {
            free_index(t, idx); /* a stored entry no slot names: free it */
            continue;
        }
        if (push_free(t, idx) != TROVE_OK)
            return TROVE_ERR_NOMEM;
    }
    trim(t);
    return TROVE_OK;
}

int trove__dict_chunk_dirty(const struct trove__dict *t, uint32_t c)
{
    return c < t->chunk_cap && (t->chunk_dirty[c / 8] & (1u << (c % 8)));
}

void trove__dict_clear_dirty(struct trove__dict *t)
{
    if (t->chunk_dirty)
        memset(t->chunk_dirty, 0, t->chunk_cap / 8);
}

uint64_t trove__dict_resident(const struct trove__dict *t)
{
    return (uint64_t)t->cap * (sizeof *t->digests + sizeof *t->refc) +
           (uint64_t)t->table_cap * sizeof *t->table + (uint64_t)t->cap_free * 4 +
           t->chunk_cap / 8;
}
