/*
 * store_internal.h: what the files of the store and its volumes share — the store and
 * volume structures and the calls between the levels, each declared under the file that
 * implements it. From the bottom: store.c (directory, lock, puts in flight,
 * recipe files), recipe_io.c (a volume's recipe loaded and committed), volume.c (a
 * volume's slots: write, read, resize, commit) and the store's high level, store_open.c,
 * store_recount.c, store_volumes.c and store_verify.c. A file calls only those below it.
 *
 * The store keeps no reference counts (store.c says why): the recipes are its only
 * metadata.
 */
#ifndef TROVE_STORE_INTERNAL_H
#define TROVE_STORE_INTERNAL_H

#include "trove/recipe.h"
#include "trove/backend.h"
#include "trove/volume.h"

#include "dict.h"
#include "putpool.h"
#include "refmap.h"

#include <stddef.h>
#include <stdint.h>

struct trove_store {
    char *dir;     /* as given, for messages */
    unsigned flags;
    int dir_fd;    /* DIR */
    int vol_fd;    /* DIR/volumes (open fails without it) */
    int lock_fd;   /* DIR/lock, or -1 */
    struct trove_backend *be;
    struct trove_volume *open; /* open volumes, linked through next */
    struct trove__putpool *pool; /* puts in flight; started by the first large write */
    /* Digests this handle put since the last drain (queued, or landed since): a write of
     * one again needs neither a second put nor a stat. */
    struct refmap put_set;
    int sticky; /* an error that left the in-memory state unreliable: every change fails */
    int s3;     /* on an S3 bucket (dir is its s3:// URL; no descriptors): store_s3.c */
    struct trove__lease *lease; /* s3 and writable: the writer's lease */
};

struct undo_entry {
    uint64_t slot;
    uint32_t old_idx; /* the slot's committed dictionary index */
};

/* A committed column segment that is a patch: its base segment's digest, and for each
 * patched slot (offsets increasing) the index the base holds there. The slots' current
 * indices are in the volume's column; a commit needs the base's to write the next patch. */
struct seg_patch {
    struct trove_digest base;
    uint32_t k;
    uint16_t off[TROVE_RECIPE_V3_PATCH_MAX];
    uint32_t bval[TROVE_RECIPE_V3_PATCH_MAX];
};

struct trove_volume {
    struct trove_store *s;
    struct trove_volume *next;
    char name[TROVE_VOLUME_NAME_MAX + 1];
    uint64_t size;
    uint32_t block_size;
    uint32_t flags;
    uint64_t slot_count;
    uint64_t generation;   /* committed */
    uint64_t recipe_bytes; /* committed recipe file's length */
    uint64_t recipe_sum;   /* its trailing checksum */
    int dirty;
    int format;           /* TROVE_RECIPE_FORMAT_*: what the next commit writes */
    int committed_format; /* the committed recipe's */
    /* The recipe in memory: a dictionary index per slot (0: empty) and the dictionary. */
    uint32_t *idx;
    uint64_t cap_slots;
    struct trove__dict dict;
    /* Slots changed since the commit, each logged once with its committed digest. */
    uint8_t *dirty_bits; /* one bit per slot; cap_bits slots */
    uint64_t cap_bits;
    struct undo_entry *undo;
    size_t nundo, cap_undo;
    uint8_t *seg_dirty;  /* one bit per 1024-slot column segment changed since the commit */
    uint64_t seg_cap;    /* bits */
    /* The committed v3 structure (none when the committed recipe is v1): sections in store
     * order — the column segments, then the dictionary chunks — and the pages. */
    struct trove_v3_section *sec;
    uint64_t nsec, nsec_seg;
    struct seg_patch **patch; /* nsec_seg entries (NULL: no patch), or NULL if none is */
    struct trove_digest *pages;
    uint64_t npages;
    uint64_t committed_slots; /* the committed recipe's slot count */
    uint64_t last_commit_bytes, last_commit_objects;
    int rewrite_all;          /* the next v3 commit re-encodes every section (compact) */
    /* Opened lazily (a v3 or v4 recipe: docs/formats/recipe-v4.md): only the manifest, the
     * last page and the tail dictionary chunk were read; a page, segment or chunk is
     * fetched when first touched, and the bits say which are in memory. Pages and chunks
     * from lazy_pages and lazy_chunks on were made here, so are in memory. An entry whose
     * chunk was loaded has refc TROVE__LAZY_REFC or more: its count is not known, and a
     * slot that stops naming it adds one to stale instead of counting down. lazy 0: the
     * whole recipe is in memory and every count is exact. */
    int lazy;
    uint8_t *page_ok, *seg_ok, *chunk_ok;
    uint64_t lazy_pages, lazy_chunks;
    uint32_t lazy_dict; /* the opened recipe's dict_count */
    uint32_t stale;     /* entries that may name no slot: the committed recipe's, and since */
    struct trove_diag err; /* what the last lazy load that failed said */
    struct trove_digest *peek; /* a committed chunk's entries, read for a slot's digest */
    uint64_t peek_c;           /* its chunk number plus one (0: none) */
    uint8_t *block;           /* block_size scratch for read-modify-write */
    struct trove_bytes cache; /* the last object read */
    struct trove_digest cache_d;
};

static inline const struct trove_digest *vol_digest(const struct trove_volume *v, uint64_t i)
{
    return &v->dict.digests[v->idx[i]];
}

/* ---- loading and writing recipes (recipe_io.c) ---- */
/* A volume named name of store s with nothing in it (an empty dictionary, no slots), not
 * on the store's open list; NULL when out of memory. */
struct trove_volume *trove__volume_new(struct trove_store *s, const char *name);
/* Free a volume made by trove__volume_new or trove__volume_load (NULL is fine). */
void trove__volume_free(struct trove_volume *v);
/* Load volume name's committed recipe (v1 or v3; v3 objects are fetched and rehashed) as a
 * volume that is not on the store's open list. diag names the volume and the file or
 * object at fault. */
int trove__volume_load(struct trove_store *s, const char *name, struct trove_volume **out,
                       struct trove_diag *diag);
/* trove__volume_load for a v3 or v4 recipe without its column and dictionary (v->lazy);
 * v1 recipes load whole. */
int trove__volume_open_lazy(struct trove_store *s, const char *name, struct trove_volume **out,
                            struct trove_diag *diag);
/* Slot i's dictionary index in *x, and with d its digest in *d (zero: empty); a lazy
 * volume loads the slot's segment first, and reads the digest from the entry's chunk
 * without putting the chunk in the lookup table. Errors: the loader's (TROVE_ERR_CORRUPT,
 * with the object named in diag, also for a slot naming a free entry; TROVE_ERR_NOMEM;
 * the backend's). */
int trove__volume_slot(struct trove_volume *v, uint64_t i, uint32_t *x, struct trove_digest *d,
                       struct trove_diag *diag);
/* 1 if entry x's digest is in memory (x 0, not lazy, its chunk loaded or made here). */
int trove__volume_entry_known(const struct trove_volume *v, uint32_t x);
/* Load whatever of a lazy volume is not in memory and count every entry exactly (entries
 * no slot names are freed); then v->lazy is 0. */
int trove__volume_load_all(struct trove_volume *v, struct trove_diag *diag);
#define TROVE__LAZY_REFC 0x80000000u

/* Write v's recipe in its format (its new objects first) and publish it. */
int trove__volume_write_recipe(struct trove_volume *v);

/* ---- the directory and the lock (store.c) ---- */
/* The low half of trove_store_open, for valid arguments: make (CREATE) and open dir and
 * DIR/volumes, take the lock, open the objects, remove a dead writer's temp files (and an
 * older trove's DIR/refs). diag says what failed. */
int trove__store_open_dir(const char *dir, unsigned flags, struct trove_store **out,
                          struct trove_diag *diag);
/* The low half of trove_store_close, once no volume is open: wait for the puts in flight,
 * release the lock and free s (NULL is fine). */
void trove__store_release(struct trove_store *s);
/* 1 if an open volume of s has changes since its commit, else 0. */
int trove__store_any_dirty(const struct trove_store *s);

/* ---- files (store.c) ---- */
/* "<dir>/volumes/<name>.recipe" into out (always NUL-terminated). */
void trove__recipe_path(const struct trove_store *s, const char *name, char *out, size_t n);
/* 1 if volume name has a committed recipe file, 0 if not, or -errno. */
int trove__recipe_exists(struct trove_store *s, const char *name);
/* Read volume name's recipe file (any version) into buf; diag names it on failure. */
int trove__recipe_read(struct trove_store *s, const char *name, struct trove_bytes *buf,
                       struct trove_diag *diag);
/* Publish len bytes as volume name's recipe: temp file, fsync, rename, fsync dir. */
int trove__recipe_publish(struct trove_store *s, const char *name, const void *data,
                          size_t len);
/* Delete volume name's recipe file durably (unlink, fsync of DIR/volumes). Returns -errno. */
int trove__recipe_remove(struct trove_store *s, const char *name);
/* The volume names with a recipe file, sorted, into *out (free with trove__names_free);
 * files that are no recipe of a valid volume name, and temp files, are skipped. */
int trove__recipe_names(struct trove_store *s, char ***out, size_t *count_out);
void trove__names_free(char **names, size_t n);

/* Store an object: queued on the put pool (started on first use), or put inline when it is
 * large. Not durable until trove__store_drain. Errors leave the store sticky. */
int trove__store_put(struct trove_store *s, const struct trove_digest *d, const void *data,
                     size_t len);
/* trove__store_put of data[0..len), which are also the bytes of file src_fd at src_off: on
 * a backend that copies between files (fs), the object is copied from there by the kernel,
 * inline, rather than from memory; else as trove__store_put. */
int trove__store_put_from(struct trove_store *s, const struct trove_digest *d, const void *data,
                          size_t len, int src_fd, uint64_t src_off);
/* Whether d is stored, and its length, for a write deciding to put it: the backend's size,
 * except on S3 for the lease holder, which knows every pack and asks nothing for an object
 * in none (NOTFOUND: the put that follows finds a loose copy, if any). */
int trove__store_lookup(struct trove_store *s, const struct trove_digest *d, size_t len,
                        uint64_t *len_out);
/* 1 if this handle put d (trove__store_put succeeded) since the last trove__store_drain:
 * then d is durable once the puts are drained. */
int trove__store_has_put(const struct trove_store *s, const struct trove_digest *d);
/* Wait for every queued put (and forget which digests were put); on failure the store
 * turns sticky (which slots name objects that never landed is unknown, so nothing may be
 * committed from this handle). */
int trove__store_drain(struct trove_store *s);

/* The store is writable, else TROVE_ERR_READONLY. */
int trove__store_writable(const struct trove_store *s, struct trove_diag *diag);
/* gc: turn this handle's read lock on the readers' byte into a write lock (exclude 1),
 * waiting for every reader to close, or back (exclude 0). */
int trove__store_exclude_readers(struct trove_store *s, int exclude);

/* ---- the store on S3 (store_s3.c): store.c's files and lock as keys ---- */
/* Open s->dir (an s3:// URL) as s->be, and take the writer's lease unless READONLY; diag
 * says what failed (a lease held by another writer: TROVE_ERR_BUSY naming it). */
int trove__s3store_open(struct trove_store *s, struct trove_diag *diag);
/* Give the lease back (if this handle still holds it). */
void trove__s3store_release(struct trove_store *s);
/* TROVE_OK while this handle's lease holds, else TROVE_ERR_BUSY (lost or run out). */
int trove__s3store_lease_ok(struct trove_store *s);
/* As trove__recipe_path, _exists, _read, _publish, _remove and _names, on keys
 * PREFIX/volumes/NAME.recipe (publish and remove refused without the lease). */
void trove__s3store_head_url(const struct trove_store *s, const char *name, char *out, size_t n);
int trove__s3store_head_exists(struct trove_store *s, const char *name);
int trove__s3store_head_read(struct trove_store *s, const char *name, struct trove_bytes *buf,
                             struct trove_diag *diag);
int trove__s3store_head_publish(struct trove_store *s, const char *name, const void *data,
                                size_t len);
int trove__s3store_head_remove(struct trove_store *s, const char *name);
int trove__s3store_head_names(struct trove_store *s, char ***out, size_t *count_out);

#endif
