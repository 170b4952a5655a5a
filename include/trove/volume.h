/*
 * trove/volume.h: a store's volumes (the store itself: trove/store.h). A volume is an array
 * of slots of block_size bytes, each empty or naming one object. Writes change an in-memory
 * copy of the recipe; trove_volume_commit makes it durable atomically. Objects are durable
 * before the recipe that names them, so a crash leaves every volume at its old or its new
 * committed state and never a recipe naming a missing object. A snapshot is a read-only
 * volume sharing its source's objects; an object volume keeps a whole object in each slot.
 * docs/formats/store.md describes the layout, the commit protocol and the crash story.
 */
#ifndef TROVE_VOLUME_H
#define TROVE_VOLUME_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/backend.h"
#include "trove/store.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TROVE_BLOCK_SIZE_DEFAULT ((uint32_t)2 << 20) /* 2 MiB */

struct trove_volume;

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

/* Recipe formats a commit can write (trove/recipe.h). v3 is still read, and asking for it
 * gets v4, its successor (the same objects; a commit need not load the whole recipe):
 * a v3 recipe is upgraded by its volume's next commit. */
#define TROVE_RECIPE_FORMAT_V1 1
#define TROVE_RECIPE_FORMAT_V3 3
#define TROVE_RECIPE_FORMAT_V4 4
#define TROVE_RECIPE_FORMAT_DEFAULT TROVE_RECIPE_FORMAT_V4

/* A volume is opened without loading its whole recipe (format v4, and v3): a part of it
 * that turns out damaged or missing is found when a read, write or commit first needs it,
 * which then fails (TROVE_ERR_CHECKSUM, TROVE_ERR_CORRUPT). This is what that failure said,
 * naming the volume, the recipe object and its digest; "" if nothing failed so. */
const char *trove_volume_last_error(const struct trove_volume *v);

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
    int recipe_format;       /* TROVE_RECIPE_FORMAT_V1 or _V4: what the next commit writes */
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
 * trove_volume_write of the len bytes of file fd from fd_offset on, at offset. Each block is
 * read once, to hash it; a whole block that is new is copied into its object by the kernel
 * (copy_file_range) where the store is on disk, rather than written again from memory
 * (elsewhere, and where the kernel cannot, it is written as trove_volume_write would). fd
 * must be open for reading and its bytes must not change meanwhile. Errors as
 * trove_volume_write's; TROVE_ERR_TRUNCATED when fd ends before fd_offset + len.
 */
int trove_volume_write_fd(struct trove_volume *v, uint64_t offset, int fd, uint64_t fd_offset,
                          uint64_t len);

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
    int recipe_format;    /* 1, 3 or 4 */
    int objects;          /* an object volume */
};

/*
 * List the committed volumes and snapshots, sorted by name, into a malloc'd array (*out,
 * freed by the caller with free(); NULL when there are none) of *count_out entries.
 * Errors: TROVE_ERR_NOMEM, -errno.
 */
int trove_volume_list(struct trove_store *s, struct trove_volume_entry **out, size_t *count_out);

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

/*
 * Store data[0..len) (1 .. block_size bytes) as an object of v's store without pointing a
 * slot at it yet; *out gets its name. A later trove_volume_set_slot_object points a slot at
 * it; an object no committed slot names is gc's, as an uncommitted put is. For a writer
 * that places objects only once it knows their slots (a capture's summaries, whose slots
 * shift as segments are added): each slot is then set once, to its final object, and a
 * write of what is there already changes nothing. Errors: as trove_volume_put_object.
 */
int trove_volume_stage_object(struct trove_volume *v, const void *data, size_t len,
                              struct trove_digest *out);

/* Point slot at the object named d, which this handle staged or put (or another slot of v
 * names). Durable with the next commit. Errors: TROVE_ERR_INVALID (not an object volume, a
 * slot past the end, d zero), TROVE_ERR_READONLY, TROVE_ERR_NOMEM. */
int trove_volume_set_slot_object(struct trove_volume *v, uint64_t slot,
                                 const struct trove_digest *d);

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
