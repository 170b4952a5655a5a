/*
 * dict.h: a volume's digest dictionary — its distinct digests in insertion order, each
 * with the number of the volume's slots that name it, so that a slot is a uint32 index.
 *
 *   digests[0]        the zero digest: index 0 is the empty slot, never counted
 *   digests[1..len)   the digests some slot names (refc > 0), or zero where an index was
 *                     freed (refc 0) and waits on the free list for reuse
 *
 * Lookup is an open-addressing table of indices (linear probing, backward-shift deletion)
 * keyed by the digest an index holds; it stores 4 bytes per table slot and no digest, so
 * a digest costs 16 (dictionary) + 4 (count) + 8 (table at load 1/2) bytes resident.
 *
 * Index reuse prefers holes in the tail chunk and in chunks already dirty (recipe v3 keeps
 * the dictionary in 1024-entry chunks, rewritten when dirty), so reuse does not dirty a
 * clean chunk; otherwise a new index is appended. A bitmap marks the dirty chunks.
 */
#ifndef TROVE_STORE_DICT_H
#define TROVE_STORE_DICT_H

#include <stddef.h>
#include <stdint.h>

#include "trove/backend.h"

#define TROVE__DICT_MAX ((uint32_t)0xfffffffeu) /* indices below 2^32 - 1 */

struct trove__dict {
    struct trove_digest *digests;
    uint32_t *refc;
    uint32_t len, cap;   /* indices in use or free: [0, len) */
    uint32_t *table;     /* 0: empty table slot, else an index (index 0 is never stored) */
    size_t table_cap;    /* a power of two */
    size_t live;         /* indices holding a digest */
    size_t aliases;      /* of them, repeats of a digest the table maps to another index */
    uint32_t *free_idx;  /* freed indices, a stack */
    size_t nfree, cap_free;
    uint8_t *chunk_dirty; /* one bit per 1024-index chunk */
    size_t chunk_cap;     /* bits */
};

/* An empty dictionary (index 0 only). Errors: TROVE_ERR_NOMEM. */
int trove__dict_init(struct trove__dict *t);
void trove__dict_free(struct trove__dict *t);

/* The index of d (nonzero), or 0 if d is not in the dictionary. */
uint32_t trove__dict_find(const struct trove__dict *t, const struct trove_digest *d);

/* The index of d, adding it with refc 0 if new (*created_out = 1). The caller then counts
 * a reference with trove__dict_ref, or calls trove__dict_unref_new to drop an unused new
 * index. Errors: TROVE_ERR_NOMEM, TROVE_ERR_LIMIT. */
int trove__dict_intern(struct trove__dict *t, const struct trove_digest *d, uint32_t *idx_out,
                       int *created_out);

/* One more slot names idx (idx > 0). */
void trove__dict_ref(struct trove__dict *t, uint32_t idx);
/* One slot fewer names idx (idx > 0, refc > 0); at zero the index is freed. */
void trove__dict_unref(struct trove__dict *t, uint32_t idx);
/* Free idx if nothing counts it (an intern that was not used). */
void trove__dict_release_unused(struct trove__dict *t, uint32_t idx);

/* Room for indices [0, n] and a table for n digests at once, before loading n entries (a
 * table that doubles as it fills rehashes every entry again each time). Errors:
 * TROVE_ERR_NOMEM, TROVE_ERR_LIMIT. */
int trove__dict_reserve(struct trove__dict *t, uint32_t n);

/* A hint: d's table slot will be probed soon (a load of many entries asks ahead). */
void trove__dict_prefetch(const struct trove__dict *t, const struct trove_digest *d);

/*
 * Put entry idx = d with refc 0 while loading a stored dictionary (d may be zero for a
 * free index). A digest already at another index is refused, or with repeats set (recipe
 * v4 allows them) kept at idx too, outside the lookup table (an alias: lookups find the
 * other index). Errors: TROVE_ERR_NOMEM, TROVE_ERR_LIMIT, TROVE_ERR_CORRUPT (a repeat).
 */
int trove__dict_load_entry(struct trove__dict *t, uint32_t idx, const struct trove_digest *d,
                           int repeats);
/* Make t (just initialised) a dictionary of n entries, all zero until loaded: a volume
 * opened without its dictionary loads the chunks it touches (trove__dict_load_entry). The
 * arrays are zeroed lazily by the allocator, so this costs nothing per entry.
 * Errors: TROVE_ERR_INVALID (n 0), TROVE_ERR_LIMIT, TROVE_ERR_NOMEM. */
int trove__dict_open_sparse(struct trove__dict *t, uint32_t n);
/* After loading and counting: free the indices nothing counts, and rebuild the free list
 * (every zero entry). */
int trove__dict_finish_load(struct trove__dict *t);

/* Chunk c (indices [1024 c, 1024 c + 1024)) changed since the bits were cleared. */
int trove__dict_chunk_dirty(const struct trove__dict *t, uint32_t c);
void trove__dict_clear_dirty(struct trove__dict *t);

/* Bytes held in memory. */
uint64_t trove__dict_resident(const struct trove__dict *t);

#endif
