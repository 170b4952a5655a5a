/*
 * store_internal.h: what store.c (the store: lock, reference counts, recipes on disk,
 * snapshots, verify, gc) and volume.c (a volume's slots: write, read, resize, commit) share.
 *
 * The reference map is an open-addressing hash table (linear probing, backward-shift
 * deletion) keyed by digest. Its hash is the digest's low 8 bytes, which xxh3 already
 * spreads uniformly. An entry exists exactly while live > 0 or committed > 0; its
 * dict_index is allocated when it appears and returned to the free list when it goes.
 */
#ifndef TROVE_STORE_INTERNAL_H
#define TROVE_STORE_INTERNAL_H

#include "trove/recipe.h"
#include "trove/store.h"
#include "trove/volume.h"

#include "putpool.h"
#include "refs.h"

#include <stddef.h>
#include <stdint.h>

struct ref_entry {
    struct trove_digest d;
    uint64_t live;      /* slots of in-memory volume states naming d */
    uint64_t committed; /* slots of committed recipes naming d */
    uint64_t len;       /* verify's recount: the slot length d must have (0: unknown) */
    uint32_t dict_index;
    uint32_t used; /* 1: a table slot in use */
};

struct refmap {
    struct ref_entry *tab;
    size_t cap; /* a power of two, or 0 */
    size_t count;
};

struct trove_store {
    char *dir;     /* as given, for messages */
    unsigned flags;
    int dir_fd;    /* DIR */
    int vol_fd;    /* DIR/volumes, or -1 (read-only store without one) */
    int lock_fd;   /* DIR/lock, or -1 */
    struct trove_backend *be;
    struct refmap refs;
    uint32_t dict_size;  /* indices ever handed out: [0, dict_size) */
    uint32_t *free_idx;  /* returned indices, reused last-in first-out */
    size_t nfree, cap_free;
    struct trove__refs_basis *basis; /* the committed recipes, sorted by name */
    size_t nbasis, cap_basis;
    struct trove_volume *open; /* open volumes, linked through next */
    struct trove__putpool *pool; /* puts in flight; started by the first large write */
    int sticky; /* an error that left the in-memory counts unreliable: every change fails */
};

struct undo_entry {
    uint64_t slot;
    struct trove_digest old; /* the slot's committed digest */
};

struct trove_volume {
    struct trove_store *s;
    struct trove_volume *next;
    char name[TROVE_VOLUME_NAME_MAX + 1];
    /* The recipe's file image: header, slot_count entries, checksum (sealed at commit). */
    struct trove_bytes img;
    uint64_t size;
    uint32_t block_size;
    uint32_t flags;
    uint64_t slot_count;
    uint64_t generation;   /* committed */
    uint64_t recipe_bytes; /* committed file's length */
    int dirty;
    /* Slots changed since the commit, each logged once with its committed digest. */
    uint8_t *dirty_bits;   /* one bit per slot; cap_bits slots */
    uint64_t cap_bits;
    struct undo_entry *undo;
    size_t nundo, cap_undo;
    uint8_t *block;        /* block_size scratch for read-modify-write */
    struct trove_bytes cache; /* the last object read */
    struct trove_digest cache_d;
};

static inline struct trove_digest *vol_slots(struct trove_volume *v)
{
    return (struct trove_digest *)(void *)(v->img.ptr + TROVE_RECIPE_V1_HEADER);
}

/* ---- reference map (store.c) ---- */
struct ref_entry *trove__refmap_find(const struct refmap *m, const struct trove_digest *d);
/* Find d or add a zeroed entry for it (*created_out = 1). NULL when out of memory. The
 * returned pointer is valid until the next insert or remove. */
struct ref_entry *trove__refmap_insert(struct refmap *m, const struct trove_digest *d,
                                       int *created_out);
void trove__refmap_remove(struct refmap *m, struct ref_entry *e);
void trove__refmap_free(struct refmap *m);
/* Add dlive and dcommitted to d's counts, creating or dropping its entry (and dict index).
 * Errors: TROVE_ERR_NOMEM (nothing changed), TROVE_ERR_CORRUPT (a count would go negative). */
int trove__ref_add(struct trove_store *s, const struct trove_digest *d, int64_t dlive,
                   int64_t dcommitted);

/* ---- files (store.c) ---- */
/* "<dir>/volumes/<name>.recipe" into out (always NUL-terminated). */
void trove__recipe_path(const struct trove_store *s, const char *name, char *out, size_t n);
/* Read and decode volume name's committed recipe into img (replacing its content). */
/* 1 if volume name has a committed recipe file, 0 if not, or -errno. */
int trove__recipe_exists(struct trove_store *s, const char *name);
int trove__recipe_load(struct trove_store *s, const char *name, struct trove_bytes *img,
                       struct trove_recipe_v1 *r, struct trove_diag *diag);
/* Publish len bytes as volume name's recipe: temp file, fsync, rename, fsync dir. */
int trove__recipe_publish(struct trove_store *s, const char *name, const void *data,
                          size_t len);
/* Record name's new committed recipe in the basis and persist the counts (DIR/refs). */
int trove__basis_set(struct trove_store *s, const char *name, uint64_t generation,
                     uint64_t checksum);
int trove__store_save_refs(struct trove_store *s);

/* Store an object: queued on the put pool (started on first use), or put inline when it is
 * large. Not durable until trove__store_drain. Errors leave the store sticky. */
int trove__store_put(struct trove_store *s, const struct trove_digest *d, const void *data,
                     size_t len);
/* Wait for every queued put; on failure the store turns sticky (which slots name objects
 * that never landed is unknown, so nothing may be committed from this handle). */
int trove__store_drain(struct trove_store *s);

/* The store is writable, else TROVE_ERR_READONLY. */
int trove__store_writable(const struct trove_store *s, struct trove_diag *diag);

#endif
