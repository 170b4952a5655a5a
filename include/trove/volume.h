/*
 * trove/volume.h: the store and its volumes.
 *
 * A store is a directory holding an object backend (trove/store.h), one committed recipe
 * per volume and a lock file:
 *
 *   DIR/objects/..          objects, named by digest (the fs backend)
 *   DIR/tmp/                temp files of writes under way
 *   DIR/volumes/NAME.recipe each volume's committed recipe (format v1 or v3, trove/recipe.h;
 *                           a commit writes the volume's format, v3 unless asked for v1)
 *   DIR/lock                the lock file: an fcntl record lock on it is held by every
 *                           open of the store, until its close
 *
 * A volume is an array of slots of block_size bytes, each empty or naming one object. Writes
 * change an in-memory copy of the recipe; trove_volume_commit makes it durable atomically.
 * Objects are durable before the recipe that names them, so a crash leaves every volume at
 * its old or its new committed state and never a recipe naming a missing object.
 *
 * No store-wide metadata. The recipes are all the store knows about its objects: there is
 * no reference-count table, so a commit writes its new objects and its recipe and nothing
 * else (O(what changed)), and an open reads no recipe and no object list. A write asks
 * the backend whether an object is there before putting it (dedup); gc marks what every
 * recipe and every open volume names and deletes the rest (mark and sweep, O(store)).
 *
 * Concurrency: a store handle and its volumes are used by one thread at a time. Several
 * handles, in one process or many, may open one store: one writable handle at a time (a
 * second waits, or fails with TROVE_STORE_NOWAIT), and any number of read-only ones beside
 * it, which never wait for the writer: a commit is atomic and objects are durable before
 * the recipe naming them, so a reader sees each volume at one commit or a later one. gc
 * waits for every reader to close before it deletes anything, and readers opening during
 * it wait for it. The locks are open file description locks on bytes of DIR/lock, owned by
 * the handle (docs/formats/store.md); a read-only open of a store without DIR/lock takes none.
 *
 * docs/formats/store.md describes the layout, the commit protocol and the crash story.
 */
#ifndef TROVE_VOLUME_H
#define TROVE_VOLUME_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/store.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TROVE_BLOCK_SIZE_DEFAULT ((uint32_t)2 << 20) /* 2 MiB */
#define TROVE_VOLUME_NAME_MAX 128                      /* bytes, without the NUL */

struct trove_store;
struct trove_volume;

/* trove_store_open flags. */
#define TROVE_STORE_CREATE 1u   /* create DIR (and its parents) if it does not exist */
#define TROVE_STORE_READONLY 2u /* shared lock; every change returns TROVE_ERR_READONLY */
#define TROVE_STORE_NOSYNC 4u   /* no fsync anywhere: for benchmarks and scratch stores only;
                                   a crash may then lose or corrupt anything */
#define TROVE_STORE_NOVERIFY 8u /* reads do not check objects against their names: for
                                   benchmarks only (trove ... --no-verify); a damaged object
                                   then reaches the decoders, which catch only some damage */
#define TROVE_STORE_NOWAIT 16u  /* a writable open fails with TROVE_ERR_BUSY, rather than
                                   waiting, while another handle has the store for writing */

/*
 * Open the store at dir: the lock and the directories, nothing else (no recipe is read).
 * A recipe that cannot be read does not stop the open: that volume is reported by
 * trove_volume_open, trove_volume_list and verify, and its objects are kept (gc refuses to
 * run while any recipe is unreadable). A writable open removes an older trove's DIR/refs.
 * Errors: TROVE_ERR_NOTFOUND (dir missing, no CREATE), TROVE_ERR_INVALID, TROVE_ERR_NOMEM,
 * -errno; diag (may be NULL) gets a message naming the file.
 */
int trove_store_open(const char *dir, unsigned flags, struct trove_store **out,
                     struct trove_diag *diag);

/* Close the store: volumes still open are closed first (their uncommitted changes are
 * lost) and puts in flight are waited for. Nothing is written. */
void trove_store_close(struct trove_store *s);

/* Forget an earlier failure that left this handle unable to change anything (a put that
 * failed in flight: which slots name objects that never landed was unknown). Allowed only
 * while no volume of the handle has uncommitted changes — close them first, dropping those
 * — so that nothing that may name a lost object can be committed. Waits for the puts in
 * flight (their errors are forgotten too). Errors: TROVE_ERR_INVALID, TROVE_ERR_BUSY (a
 * volume with uncommitted changes is open). */
int trove_store_reset(struct trove_store *s);

/* The store's object backend (borrowed; valid until trove_store_close). */
struct trove_backend *trove_store_backend(struct trove_store *s);

/* Whether object d is stored and its length, as a writer deciding to put it asks: the
 * backend's trove_backend_size, except that on S3 the store's writer (the lease holder)
 * answers from its index of packs, with no request, and says TROVE_ERR_NOTFOUND for an
 * object in no pack (a put-if-absent of it then finds a loose copy, if there is one). */
int trove_store_object_size(struct trove_store *s, const struct trove_digest *d,
                            uint64_t *len_out);

/* 1 if this handle stored object d since its puts were last drained (a commit or a read of
 * an object drains them): a volume write found the store lacking d, or holding it damaged,
 * and put it. 0 otherwise, e.g. when the store had d whole. A writer asks right after
 * writing d, to count what it really stored. Not thread-safe against writes on s. */
int trove_store_put_pending(const struct trove_store *s, const struct trove_digest *d);

/*
 * A volume or snapshot name: 1..128 bytes of [A-Za-z0-9._-], not starting with '.' or '-'.
 * Returns TROVE_OK or TROVE_ERR_INVALID (with a message in diag saying which rule failed).
 */
int trove_volume_name_check(const char *name, struct trove_diag *diag);

/*
 * Create volume `name` of `size` bytes (all slots empty) and commit it. block_size 0 means
 * TROVE_BLOCK_SIZE_DEFAULT; otherwise a power of two from 4 KiB to 1 GiB. The volume is
 * returned open in *out (may be NULL: then it is closed). Errors: TROVE_ERR_INVALID (name,
 * block size, more than TROVE_RECIPE_MAX_SLOTS slots), TROVE_ERR_EXISTS, TROVE_ERR_READONLY,
 * TROVE_ERR_NOMEM, -errno.
 */
int trove_volume_create(struct trove_store *s, const char *name, uint64_t size,
                        uint32_t block_size, struct trove_volume **out, struct trove_diag *diag);

/* Recipe formats a commit can write (trove/recipe.h). */
#define TROVE_RECIPE_FORMAT_V1 1
#define TROVE_RECIPE_FORMAT_V3 3
#define TROVE_RECIPE_FORMAT_DEFAULT TROVE_RECIPE_FORMAT_V3

/* trove_volume_create with the recipe format its commits write (0: the default). */
int trove_volume_create_format(struct trove_store *s, const char *name, uint64_t size,
                               uint32_t block_size, int recipe_format,
                               struct trove_volume **out, struct trove_diag *diag);

/*
 * Make volume `name` afresh over a damaged one: like trove_volume_create_format (objects:
 * an object volume whose slots hold objects of up to block_size bytes), except that `name`
 * may exist with a recipe that cannot be loaded (a damaged manifest, page, chunk or
 * segment, or one that is missing). Then nothing is written until the volume's first
 * commit, which replaces the damaged recipe (its generation past the old one when the old
 * header reads); closing uncommitted leaves the damaged recipe as it was. block_size 0
 * takes the damaged recipe's when its header reads, else the default. Where `name` does
 * not exist this is an ordinary create. Writing the volume's content again through it heals
 * the recipe's objects as a put heals a block (docs/formats/store.md). Errors: those of
 * create, TROVE_ERR_EXISTS (name loads: it is not damaged; or it is of the other kind),
 * TROVE_ERR_READONLY (a damaged snapshot: remove it and snapshot again).
 */
int trove_volume_create_over(struct trove_store *s, const char *name, uint64_t size,
                             uint32_t block_size, int recipe_format, int objects,
                             struct trove_volume **out, struct trove_diag *diag);

/* The format v's next commits write (a v1 volume stays v1 until asked). Marks v dirty when
 * the format changes. Errors: TROVE_ERR_INVALID, TROVE_ERR_READONLY. */
int trove_volume_set_format(struct trove_volume *v, int recipe_format);

/*
 * Renumber v's dictionary in slot order (first use first), so that a volume written without
 * dedup has an identity column again and freed indices are gone; the next commit rewrites
 * every column segment and dictionary chunk. Snapshots taken before keep the old objects,
 * so they no longer share the volume's recipe objects (their data stays shared). Never done
 * implicitly. Errors: TROVE_ERR_READONLY, TROVE_ERR_NOMEM.
 */
int trove_volume_compact(struct trove_volume *v);

/*
 * Open volume or snapshot `name` at its committed state. A volume can be open once at a
 * time per store handle. Errors: TROVE_ERR_INVALID (name), TROVE_ERR_NOTFOUND, TROVE_ERR_BUSY
 * (already open), the recipe decoder's errors (diag names the recipe file), TROVE_ERR_NOMEM,
 * -errno.
 */
int trove_volume_open(struct trove_store *s, const char *name, struct trove_volume **out,
                      struct trove_diag *diag);

/* Close a volume. Uncommitted changes are dropped (the reference counts roll back). */
void trove_volume_close(struct trove_volume *v);

struct trove_volume_info {
    uint64_t size;           /* logical bytes */
    uint32_t block_size;
    uint64_t slots;
    uint64_t used_slots;     /* non-empty slots */
    uint64_t unique_objects; /* distinct digests among the slots */
    uint64_t stored_bytes;   /* bytes of those distinct objects (each counted once; one
                                the backend lacks counts 0) */
    uint64_t recipe_bytes;   /* size of the committed recipe file */
    uint64_t generation;     /* of the committed recipe: create writes 1, each commit adds 1,
                                a snapshot keeps its source's */
    int readonly;            /* a snapshot */
    int dirty;               /* uncommitted changes */
    int recipe_format;       /* TROVE_RECIPE_FORMAT_V1 or _V3: what the next commit writes */
    uint64_t resident_recipe_bytes; /* memory the in-memory recipe takes */
    uint64_t last_commit_bytes;     /* bytes the last commit of this handle wrote (recipe,
                                       segments, chunks, pages; not data objects) */
    uint64_t last_commit_objects;   /* recipe objects it wrote (v3) */
    int objects;                    /* an object volume (trove_volume_create_objects) */
};

/* Describe v's in-memory state (recipe_bytes and generation: the committed file's). */
int trove_volume_info(struct trove_volume *v, struct trove_volume_info *out);

/*
 * Write len bytes at offset. Partial blocks are read, modified and rewritten; every touched
 * block is hashed and, when its digest differs from the slot's, stored (an object that
 * exists already is not written again) and the slot updated; an all-zero block empties its
 * slot. New objects are written on worker threads while the caller goes on; they, and
 * the recipe naming them, are durable when trove_volume_commit returns.
 * Errors: TROVE_ERR_INVALID (past the end: offset + len > size), TROVE_ERR_READONLY,
 * TROVE_ERR_CORRUPT / TROVE_ERR_NOTFOUND (a block to modify is missing or has the wrong
 * length), TROVE_ERR_NOMEM, -errno.
 */
int trove_volume_write(struct trove_volume *v, uint64_t offset, const void *buf, size_t len);

/*
 * Read len bytes at offset into buf; empty slots read as zeros. Errors: TROVE_ERR_INVALID
 * (past the end), TROVE_ERR_NOTFOUND (a named object is missing), TROVE_ERR_CORRUPT (an
 * object has the wrong length), TROVE_ERR_NOMEM, -errno.
 */
int trove_volume_read(struct trove_volume *v, uint64_t offset, void *buf, size_t len);

/*
 * Change the volume's size. Growing adds empty slots (the old partial last block grows with
 * zeros); shrinking drops slots and cuts the new last block. Errors as for write.
 */
int trove_volume_resize(struct trove_volume *v, uint64_t new_size);

/*
 * Make v's in-memory state durable in its recipe format: for v3, first the recipe objects
 * that changed (one pack file, fsync'd); then the recipe file is written new, fsync'd,
 * renamed over the old one and the directory fsync'd; nothing else is written. When no slot
 * changed the recipe is left alone, and only the objects written since the last commit
 * (a rewrite of the same content putting back one that went missing or was damaged) are
 * made durable.
 * Errors: TROVE_ERR_READONLY, TROVE_ERR_NOMEM, -errno (v stays dirty and a later commit may
 * be retried).
 */
int trove_volume_commit(struct trove_volume *v);

/*
 * Snapshot volume `src`'s committed state as the read-only volume `name` (one recipe file,
 * sharing every object; src's recipe and objects are checked first). src may be open (its uncommitted changes are not in the
 * snapshot). Errors: TROVE_ERR_INVALID, TROVE_ERR_NOTFOUND, TROVE_ERR_EXISTS,
 * TROVE_ERR_READONLY (store), recipe errors, TROVE_ERR_NOMEM, -errno.
 */
int trove_snapshot_create(struct trove_store *s, const char *src, const char *name,
                          struct trove_diag *diag);

/*
 * Remove volume or snapshot `name`: its recipe is deleted durably (the objects only it
 * named stay until gc). Errors: TROVE_ERR_NOTFOUND, TROVE_ERR_BUSY (open),
 * TROVE_ERR_READONLY (store), -errno. An unreadable (corrupt) recipe can be removed.
 */
int trove_volume_remove(struct trove_store *s, const char *name, struct trove_diag *diag);

/* One entry of trove_volume_list. */
struct trove_volume_entry {
    char name[TROVE_VOLUME_NAME_MAX + 1];
    int error;            /* TROVE_OK, or why the recipe could not be read (then the rest is 0) */
    int readonly;         /* a snapshot */
    uint64_t size;
    uint32_t block_size;
    uint64_t slots;
    uint64_t generation;
    uint64_t recipe_bytes;
    int recipe_format;    /* 1 or 3 */
    int objects;          /* an object volume */
};

/*
 * List the committed volumes and snapshots, sorted by name, into a malloc'd array (*out,
 * freed by the caller with free(); NULL when there are none) of *count_out entries.
 * Errors: TROVE_ERR_NOMEM, -errno.
 */
int trove_volume_list(struct trove_store *s, struct trove_volume_entry **out, size_t *count_out);

/* Progress for long store operations: done of total units (bytes or objects). */
typedef void (*trove_progress_fn)(void *ctx, uint64_t done, uint64_t total);

#define TROVE_VERIFY_DEEP 1u   /* read and rehash every object */
#define TROVE_VERIFY_REPAIR 2u /* look at quarantined objects again, release the healed */

/* What verify found. Counts are store-wide. */
struct trove_verify_report {
    uint64_t volumes;            /* recipes checked */
    uint64_t bad_recipes;        /* recipes that could not be read */
    uint64_t slots;              /* non-empty slots checked */
    uint64_t objects;            /* distinct objects checked */
    uint64_t missing_objects;    /* named by a recipe but absent */
    uint64_t bad_length;         /* present with a length other than its slot's */
    uint64_t bad_hash;           /* --deep: bytes that do not hash to the name */
    uint64_t quarantined;        /* of bad_hash: objects whose damage is on record, never
                                    served until their content is put again */
    uint64_t healed;             /* REPAIR: quarantined objects that now hash to their name
                                    (put again since, or damage that is gone), released */
    int deep;                    /* DEEP: contents were read; else only presence, sizes and
                                    the damage on record were checked */
    uint64_t bad_packs;          /* pack files the backend could not read (their objects are
                                    absent; a problem only through the recipes naming them,
                                    and gc deletes them once no recipe does) */
    /* The first problem found, for a message ("" if none). */
    char first_problem[256];
};

/*
 * Call fn for every slot of every committed volume that names an object on record as
 * damaged (trove_backend_quarantined): the object, the volume and the slot, in volume
 * order. fn returns 0 to go on, nonzero to stop. For a report after verify: what still
 * needs good bytes, and who needs them. Costs a walk of every recipe.
 * Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM, the recipes' read errors.
 */
int trove_store_damaged(struct trove_store *s,
                        int (*fn)(void *ctx, const struct trove_digest *d, const char *volume,
                                  uint64_t slot),
                        void *ctx);

/*
 * Check every committed recipe: each slot's object exists with its slot's length and is
 * not on record as damaged (DEEP: and hashes to its name; REPAIR: quarantined objects are
 * looked at again first, and those that hash right now are released). Returns TROVE_OK
 * when the store is clean, TROVE_ERR_CORRUPT when a problem remains (see the report), or
 * an error that stopped the check. progress (may be NULL) is called with objects done.
 */
int trove_store_verify(struct trove_store *s, unsigned flags, struct trove_verify_report *rep,
                       trove_progress_fn progress, void *progress_ctx);

struct trove_gc_report {
    uint64_t objects_seen;
    uint64_t objects_deleted;
    uint64_t bytes_deleted;
    uint64_t bad_packs_deleted; /* unreadable pack files (trove_backend_unreadable) */
    uint64_t objects_young; /* S3: unnamed but kept, stored within the grace period
                               ($TROVE_GC_GRACE_SEC, default 3600 s) */
};

/*
 * Delete every object that no slot of any volume names, committed or in memory, and every
 * pack file the backend could not read (every recipe reads without it, so nothing needs
 * it). Crash-safe: only unreferenced objects are deleted, each durably, in any order. Refuses to run
 * (TROVE_ERR_CORRUPT) while a recipe is unreadable, since its objects cannot be told apart.
 * On S3 an unnamed object stored within the grace period is kept (objects_young): another
 * writer may be about to name it. Readers of an S3 store hold no lock, so gc does not wait
 * for them (docs/s3.md).
 * Errors: TROVE_ERR_READONLY, TROVE_ERR_CORRUPT, TROVE_ERR_NOMEM, TROVE_ERR_REMOTE, -errno.
 */
int trove_store_gc(struct trove_store *s, struct trove_gc_report *rep, trove_progress_fn progress,
                   void *progress_ctx);

/* ---- copying a store ------------------------------------------------------------------ */

#define TROVE_COPY_REPLACE 1u /* a volume that differs in dst is replaced, not refused */

struct trove_copy_report {
    uint64_t volumes;         /* in the source */
    uint64_t volumes_copied;  /* heads written to the destination */
    uint64_t volumes_same;    /* already identical in the destination */
    uint64_t volumes_changed; /* not copied: committed to in the source during the copy */
    uint64_t objects;         /* named by the source's recipes */
    uint64_t objects_present; /* of those, already in the destination */
    uint64_t objects_copied;
    uint64_t bytes_copied;
};

/*
 * Copy every committed volume of src (and snapshot: they are volumes) into dst, either one
 * on a disk or on S3: the objects dst lacks, then each volume's recipe as it is. A volume
 * dst already holds with the same recipe is left; one that differs is refused
 * (TROVE_ERR_EXISTS, before anything is copied) unless flags has TROVE_COPY_REPLACE.
 * Progress counts the objects looked at. dst must be writable; src may be read-only. A
 * volume committed to in src during the copy is left out (volumes_changed): copy again.
 * Stopped anywhere, dst holds each volume as it was or as copied, never a mix. Errors:
 * TROVE_ERR_INVALID, TROVE_ERR_READONLY, TROVE_ERR_EXISTS, TROVE_ERR_BUSY (a volume open in
 * dst), TROVE_ERR_CORRUPT (an unreadable source recipe), what the backends return.
 */
int trove_store_copy(struct trove_store *src, struct trove_store *dst, unsigned flags,
                     struct trove_copy_report *rep, trove_progress_fn progress,
                     void *progress_ctx, struct trove_diag *diag);

struct trove_repair_report {
    uint64_t needed;      /* objects s's recipes name that s lacks or has on record as damaged */
    uint64_t repaired;    /* of those, fetched from the other store and put (healed) */
    uint64_t unavailable; /* of those, the other store lacks too, or holds damaged */
    uint64_t bytes;       /* bytes repaired */
};

/*
 * Repair s from another copy: every object s's committed recipes name that s lacks, or
 * has on record as damaged (a read or `verify --deep` found it), is read from src —
 * checked against its name — and put into s, which heals a damaged one (delete, put,
 * release: docs/formats/store.md). Objects src cannot give whole are counted unavailable
 * and left. Damage no read has found yet is not seen: run a deep verify first. Costs a
 * walk of s's recipes and a size of each object. s must be writable; src may be read-only
 * (either on a disk or on S3). Errors: TROVE_ERR_INVALID, TROVE_ERR_READONLY, the recipes'
 * read errors, what the backends return; diag says which store.
 */
int trove_store_repair_from(struct trove_store *s, struct trove_store *src,
                            struct trove_repair_report *rep, struct trove_diag *diag);

/* ---- object volumes ---------------------------------------------------------------------
 *
 * An object volume keeps a whole object of 1 .. block_size bytes in each slot instead of a
 * fixed-size block: a capture is one, with one encoded segment per slot. Its size is
 * slots * block_size; verify checks that each object is at most block_size bytes (rather
 * than exactly a block); trove_volume_read and trove_volume_write refuse it
 * (TROVE_ERR_INVALID) and trove_volume_resize takes slots * block_size. Everything else —
 * dedup, commits, snapshots, gc — is the same. The recipe says so with
 * TROVE_RECIPE_FLAG_OBJECTS.
 */

/* Create object volume `name` of `slots` empty slots whose objects are at most max_object
 * bytes (a power of two from 4 KiB to 1 GiB), in the default recipe format, and commit it.
 * Errors as trove_volume_create. */
int trove_volume_create_objects(struct trove_store *s, const char *name, uint64_t slots,
                                uint32_t max_object, struct trove_volume **out,
                                struct trove_diag *diag);
/* As trove_volume_create_objects, except that nothing is written until the volume's first
 * commit: a volume closed (or a process killed) before it leaves no volume at all. `name`
 * must be new. */
int trove_volume_create_objects_pending(struct trove_store *s, const char *name,
                                        uint64_t slots, uint32_t max_object,
                                        struct trove_volume **out, struct trove_diag *diag);

/* 1 if v is an object volume, else 0. */
int trove_volume_is_objects(const struct trove_volume *v);

/* Point slot at an object holding data[0..len) (stored if new; len 0 empties the slot).
 * Durable with the next commit, as trove_volume_write. Errors: TROVE_ERR_INVALID (not an
 * object volume, slot past the end, len over block_size), TROVE_ERR_READONLY,
 * TROVE_ERR_NOMEM, -errno. */
int trove_volume_put_object(struct trove_volume *v, uint64_t slot, const void *data, size_t len);

/* Point slot `to` at the object slot `from` names (an empty slot empties it), without
 * reading or storing anything: the object is the volume's already. Durable with the next
 * commit. Errors: TROVE_ERR_INVALID (not an object volume, a slot past the end),
 * TROVE_ERR_READONLY, TROVE_ERR_NOMEM. */
int trove_volume_copy_slot(struct trove_volume *v, uint64_t from, uint64_t to);

/* Read slot's object into out (replacing its content; out->len 0 for an empty slot).
 * Errors: TROVE_ERR_INVALID (slot past the end), TROVE_ERR_NOTFOUND, TROVE_ERR_LIMIT (over
 * block_size), -errno. */
int trove_volume_get_object(struct trove_volume *v, uint64_t slot, struct trove_bytes *out);

/* Copy the digests of slots [first, first + n) of v's in-memory state to out[0..n) (zero
 * for an empty slot). For either kind of volume: what a trove_stream_run walks. Errors:
 * TROVE_ERR_INVALID (range). */
int trove_volume_slot_digests(const struct trove_volume *v, uint64_t first, uint64_t n,
                              struct trove_digest *out);

#ifdef __cplusplus
}
#endif
#endif
