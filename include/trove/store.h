/*
 * trove/store.h: the store — open, close, verify, gc, copy, repair — which trove/volume.h
 * fills with volumes.
 *
 * A store is a directory holding an object backend (trove/backend.h), one committed recipe
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
#ifndef TROVE_STORE_H
#define TROVE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/digest.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TROVE_VOLUME_NAME_MAX 128 /* bytes of a volume's name, without the NUL */

struct trove_store;
struct trove_backend; /* trove/backend.h */

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

#ifdef __cplusplus
}
#endif
#endif
