/*
 * s3_packs.h: the S3 backend's index of its pack objects, in memory. Which packs the
 * bucket holds (by name), each one's entries and dead entries, and for every live packed
 * object the one place a get reads it from. There is no network here: backend_s3.c lists
 * the packs and fetches their tails, checks them with pack.c, and hands this module what
 * passed; the module keeps it, answers lookups and applies deletes. Not thread-safe: the
 * backend's mutex guards every call.
 *
 * Invariants. A pack's entries are sorted by digest, each digest once; its dead list is
 * sorted and holds only digests of its entries. An entry is live if its digest is not in
 * the dead list. The map holds every digest live in some pack that is not gone, once,
 * pointing at one of those packs (dict_index = the pack's slot, committed = the offset,
 * len = the length); its `live` field counts the other packs that hold it live, so that a
 * delete or a lost pack moves the object to another copy instead of losing it. A gone pack
 * (every entry dead, or deleted by someone else) keeps its slot, so that slot numbers stay
 * valid, but holds nothing.
 */
#ifndef TROVE_STORE_S3_PACKS_H
#define TROVE_STORE_S3_PACKS_H

#include <stddef.h>
#include <stdint.h>

#include "pack.h"
#include "refmap.h"
#include "trove/common.h"

struct trove__s3_pack {
    char hex[33];                /* the pack is the key PREFIX/packs/<hex> */
    uint64_t size;               /* its bytes, index and footer included */
    int64_t mtime;               /* LastModified in seconds since the epoch, -1 unknown */
    struct trove__pack_entry *e; /* sorted by digest */
    size_t n, nlive;
    struct trove_digest *dead; /* sorted */
    size_t ndead;
    uint64_t data_bytes; /* the object bytes, before the index */
    uint64_t live_bytes; /* those of live entries */
    int gone;
};

struct trove__s3_bad_pack {
    char hex[33];
    char why[224];
};

struct trove__s3_packs {
    struct trove__s3_pack *p;
    size_t n, cap;
    struct refmap map;   /* live object -> its pack, as above */
    struct refmap names; /* a pack's name (its hex as a digest) -> dict_index = its slot */
    struct refmap orphans; /* names of .dead records listed without their pack */
    struct trove__s3_bad_pack *bad; /* packs whose tail failed its checks */
    size_t nbad;
};

/*
 * Add pack hex (32 lowercase hex digits; size bytes, stored at mtime) with entries e[0..n),
 * as they came from its index (their count is what the footer says) and dead digests
 * dead[0..ndead), both malloc'd and taken over (freed here, on error too). The entries are
 * sorted and deduplicated, dead digests that name no entry dropped. A slot of the same
 * name is reused (a pack published again), a bad record of the name dropped (healed).
 * *slot_out (may be NULL) gets the slot. Errors: TROVE_ERR_NOMEM (nothing changed).
 */
int trove__s3_packs_add(struct trove__s3_packs *x, const char *hex, uint64_t size, int64_t mtime,
                        struct trove__pack_entry *e, size_t n, struct trove_digest *dead,
                        size_t ndead, uint32_t *slot_out);

/* The map entry of live packed object d, or NULL. Valid until the next change. */
/* Is d a dead entry of a pack (deleted from it: by gc, or as a damaged copy healed by a put
 * of its good bytes, which may have gone loose)? */
int trove__s3_packs_was_dead(const struct trove__s3_packs *x, const struct trove_digest *d);
const struct ref_entry *trove__s3_packs_find(const struct trove__s3_packs *x,
                                             const struct trove_digest *d);

/* The slot of pack hex (gone or not), or -1. One hash probe. */
long trove__s3_packs_slot(const struct trove__s3_packs *x, const char *hex);

/* 1 if hex is a pack not gone or a bad pack: a refresh need not fetch it again. */
int trove__s3_packs_known(const struct trove__s3_packs *x, const char *hex);

/* The slots of the packs where d is live, at most cap of them, the map's own last; the
 * count. */
size_t trove__s3_packs_holders(const struct trove__s3_packs *x, const struct trove_digest *d,
                               uint32_t *out, size_t cap);

/* The bytes of pack slot's dead record once d is added to it: the sorted 16-byte digests,
 * into out (replacing its content). Errors: TROVE_ERR_NOMEM. */
int trove__s3_packs_dead_record(const struct trove__s3_packs *x, uint32_t slot,
                                const struct trove_digest *d, struct trove_bytes *out);

/* d, live in pack slot, is dead there now: the map moves it to another copy or forgets
 * it, and a pack with no live entry left is gone. Errors: TROVE_ERR_NOMEM (nothing
 * changed), TROVE_ERR_NOTFOUND (d is not live in slot). */
int trove__s3_packs_mark_dead(struct trove__s3_packs *x, uint32_t slot,
                              const struct trove_digest *d);

/* Pack slot is gone (deleted, by this handle or another): its objects move to other copies
 * or are forgotten. */
void trove__s3_packs_drop(struct trove__s3_packs *x, uint32_t slot);

/* A malloc'd copy of pack slot's live entries into *e_out, their count in *n_out.
 * Errors: TROVE_ERR_NOMEM. */
int trove__s3_packs_live(const struct trove__s3_packs *x, uint32_t slot,
                         struct trove__pack_entry **e_out, size_t *n_out);

/* Every live packed object, with its pack's mtime: malloc'd arrays *d_out and *mtime_out
 * (either may be NULL, not wanted), *n_out of them. Errors: TROVE_ERR_NOMEM. */
int trove__s3_packs_snapshot(const struct trove__s3_packs *x, struct trove_digest **d_out,
                             int64_t **mtime_out, size_t *n_out);

/* Remember (note) or forget .dead record hex, listed without its pack: a pack published
 * under that name later must delete it first. trove__s3_packs_orphan: 1 if remembered.
 * Errors: TROVE_ERR_NOMEM. */
int trove__s3_packs_note_orphan(struct trove__s3_packs *x, const char *hex);
int trove__s3_packs_orphan(const struct trove__s3_packs *x, const char *hex);
void trove__s3_packs_forget_orphan(struct trove__s3_packs *x, const char *hex);

/* Record pack hex as unreadable (why: one line); an existing record is updated.
 * Errors: TROVE_ERR_NOMEM. */
int trove__s3_packs_note_bad(struct trove__s3_packs *x, const char *hex, const char *why);
/* Forget bad record i (the last one takes its place). */
void trove__s3_packs_forget_bad(struct trove__s3_packs *x, size_t i);

void trove__s3_packs_free(struct trove__s3_packs *x);

#endif
