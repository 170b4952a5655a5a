/*
 * volume.c: a volume's slots — create, open, write, read, resize and close
 * (include/trove/volume.h). Loading and committing recipes is recipe_io.c.
 *
 * In memory a volume's recipe is a dictionary index per slot (4 bytes; 0 is the empty
 * slot) and the volume's dictionary (dict.h: each distinct digest once, with the count of
 * slots naming it), whatever format it is stored in. A slot's digest is one dictionary
 * lookup away. Writes change the indices and the dictionary at once; the first change of a
 * slot since the last commit also logs the slot's committed digest (a bitmap says which
 * slots are logged) and marks its 1024-slot column segment dirty, in O(changed slots); the
 * dirty segments (and the dictionary's dirty chunks) are what a v3 commit rewrites, and a
 * volume closed uncommitted is simply dropped.
 *
 * Every block is stored with exactly its slot's length: block_size, except that the last
 * slot holds only the volume's remainder. An object volume (TROVE_RECIPE_FLAG_OBJECTS: a
 * capture's segments) instead names a whole object of 1 .. block_size bytes per slot, put
 * and got whole; it shares everything else (dedup, commits) with block volumes.
 * A write hashes each touched block (after a read-modify-write of a partial one); a block
 * equal to the slot's current digest changes nothing, an all-zero block empties the slot,
 * and any other block is stored unless this handle queued it since the last drain or the
 * backend has it (a stat: then an object with those bytes is durable, or queued). Stores
 * go through the store's put pool (putpool.h), so the caller hashes the next block while
 * earlier ones are fsync'd; commit, and any read of an object, drain it first, so a recipe
 * never names an object that is not durable.
 */
#include "store_internal.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/io.h"
#include "recipe_head.h"
#include "trove/testing.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEG TROVE_RECIPE_V3_SEGMENT_SLOTS

/* Bytes slot i holds in a volume of `size` bytes. */
static size_t slot_len(uint64_t size, uint32_t bs, uint64_t i)
{
    uint64_t start = i * bs;
    uint64_t left = size - start;
    return (size_t)(left < bs ? left : bs);
}

static int all_zero(const uint8_t *p, size_t n)
{
    uint64_t acc = 0;
    size_t i = 0;

    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, 32);
        acc |= w[0] | w[1] | w[2] | w[3];
        if (acc)
            return 0;
    }
    for (; i < n; i++)
        acc |= p[i];
    return acc == 0;
}

static int volume_writable(const struct trove_volume *v)
{
    if (trove__store_writable(v->s, NULL) != TROVE_OK ||
        (v->flags & TROVE_RECIPE_FLAG_READONLY))
        return TROVE_ERR_READONLY;
    return TROVE_OK;
}

static int format_ok(int f)
{
    return f == TROVE_RECIPE_FORMAT_V1 || f == TROVE_RECIPE_FORMAT_V3 ||
           f == TROVE_RECIPE_FORMAT_V4;
}

/* What a commit writes for format f: v3 is read but no longer written; v4 replaces it. */
static int format_written(int f)
{
    return f == TROVE_RECIPE_FORMAT_V3 ? TROVE_RECIPE_FORMAT_V4 : f;
}

/* Slot i's digest into *d (zero: empty), from what a lazily opened volume loads for it. */
static int slot_digest(struct trove_volume *v, uint64_t i, struct trove_digest *d)
{
    uint32_t x;

    return trove__volume_slot(v, i, &x, d, NULL);
}

static struct trove_volume *find_open(struct trove_store *s, const char *name)
{
    for (struct trove_volume *v = s->open; v; v = v->next)
        if (strcmp(v->name, name) == 0)
            return v;
    return NULL;
}

/* Mark column segment seg dirty (grows the bitmap). */
static int seg_dirty(struct trove_volume *v, uint64_t seg)
{
    if (seg >= v->seg_cap) {
        uint64_t cap = v->seg_cap ? v->seg_cap : 64;
        uint8_t *p;
        while (cap <= seg)
            cap *= 2;
        if (!(p = trove__realloc(v->seg_dirty, (size_t)(cap / 8))))
            return TROVE_ERR_NOMEM;
        memset(p + v->seg_cap / 8, 0, (size_t)((cap - v->seg_cap) / 8));
        v->seg_dirty = p;
        v->seg_cap = cap;
    }
    v->seg_dirty[seg / 8] |= (uint8_t)(1u << (seg % 8));
    return TROVE_OK;
}

/*
 * What a damaged recipe's header still says, for a volume made over it: *gen (0 if the
 * header cannot be read), and *bs and *flags when it can (left alone otherwise). rc is
 * TROVE_ERR_EXISTS if the recipe loads (it is not damaged), TROVE_ERR_NOMEM, else TROVE_OK.
 */
static int damaged_recipe_head(struct trove_store *s, const char *name, uint64_t *gen,
                               uint32_t *bs, uint32_t *flags, struct trove_diag *diag)
{
    struct trove_volume *old = NULL;
    struct trove_bytes buf = {0};
    struct trove__recipe_head h;
    uint32_t version;
    int rc = trove__volume_load(s, name, &old, NULL);

    trove__volume_free(old);
    if (rc == TROVE_OK)
        return TROVE_FAIL(diag, TROVE_ERR_EXISTS, 0,
                          "volume '%s' already exists and is not damaged", name);
    if (rc == TROVE_ERR_NOMEM)
        return rc;
    if (rc == TROVE_ERR_VERSION) /* not damage: a newer trove's, which this one must keep */
        return TROVE_FAIL(diag, rc, 0,
                          "volume '%s' has a recipe of a newer format; a newer trove reads it",
                          name);
    *gen = 0;
    if (trove__recipe_read(s, name, &buf, NULL) == TROVE_OK &&
        trove_recipe_version(buf.ptr, buf.len, &version, NULL) == TROVE_OK &&
        trove__recipe_head(buf.ptr, buf.len, 48, version, &h, NULL) == TROVE_OK) {
        *gen = h.generation;
        *bs = h.block_size;
        *flags = h.flags;
    }
    trove_bytes_free(&buf);
    return TROVE_OK;
}

/* Make volume name in memory and (unless over) publish its empty recipe. With over 1, name
 * may exist with a damaged recipe: nothing is written until the first commit replaces it.
 * With over 2 (pending), name must be new, and nothing is written until the first commit. */
static int create_volume(struct trove_store *s, const char *name, uint64_t size,
                         uint32_t block_size, int recipe_format, uint32_t flags, int over,
                         struct trove_volume **out, struct trove_diag *diag)
{
    struct trove_volume *v = NULL;
    char path[4096];
    uint64_t n, gen = 0;
    int rc, pending = 0;

    if (out)
        *out = NULL;
    if (!s) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no store");
        goto out;
    }
    if (recipe_format == 0)
        recipe_format = TROVE_RECIPE_FORMAT_DEFAULT;
    if (!format_ok(recipe_format)) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "recipe format %d is not 1 or 3",
                        recipe_format);
        goto out;
    }
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK ||
        (rc = trove__store_writable(s, diag)) != TROVE_OK)
        goto out;
    trove__recipe_path(s, name, path, sizeof path);
    for (const struct trove_volume *o = s->open; o; o = o->next)
        if (strcmp(o->name, name) == 0) { /* a pending one has no recipe to find */
            rc = TROVE_FAIL(diag, TROVE_ERR_EXISTS, 0, "volume '%s' is open already", name);
            goto out;
        }
    if (over == 2) {
        over = 0;
        pending = 1;
    }
    if (over && (rc = trove__recipe_exists(s, name)) > 0) {
        uint32_t old_bs = 0, old_flags = flags;
        if ((rc = damaged_recipe_head(s, name, &gen, &old_bs, &old_flags, diag)) != TROVE_OK)
            goto out;
        if (old_flags & TROVE_RECIPE_FLAG_READONLY) {
            rc = TROVE_FAIL(diag, TROVE_ERR_READONLY, 0,
                            "'%s' is a damaged snapshot; remove it (`trove volume rm`) and "
                            "snapshot again", name);
            goto out;
        }
        if ((old_flags ^ flags) & TROVE_RECIPE_FLAG_OBJECTS) {
            rc = TROVE_FAIL(diag, TROVE_ERR_EXISTS, 0,
                            "'%s' is a damaged %s volume; it cannot be replaced by a%s", name,
                            (old_flags & TROVE_RECIPE_FLAG_OBJECTS) ? "capture's object"
                                                                    : "block",
                            (flags & TROVE_RECIPE_FLAG_OBJECTS) ? " capture" : " block volume");
            goto out;
        }
        if (block_size == 0 && trove__recipe_block_size_ok(old_bs))
            block_size = old_bs; /* what the damaged recipe had */
    } else if (over && rc < 0) {
        TROVE_FAIL(diag, rc, 0, "cannot check %s: %s", path, trove_strerror(rc));
        goto out;
    } else {
        over = 0; /* nothing there: an ordinary create */
    }
    if (block_size == 0)
        block_size = TROVE_BLOCK_SIZE_DEFAULT;
    if (!trove__recipe_block_size_ok(block_size)) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "block size %u is not a power of two from 4 KiB to 1 GiB",
                        block_size);
        goto out;
    }
    n = trove__recipe_slots_for(size, block_size);
    if (n > TROVE_RECIPE_MAX_SLOTS) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "a volume of %llu bytes needs %llu slots of %u bytes, over the "
                        "limit of %llu; use a larger --block-size",
                        (unsigned long long)size, (unsigned long long)n, block_size,
                        (unsigned long long)TROVE_RECIPE_MAX_SLOTS);
        goto out;
    }
    if (!over && (rc = trove__recipe_exists(s, name)) != 0) {
        if (rc > 0)
            rc = TROVE_FAIL(diag, TROVE_ERR_EXISTS, 0, "volume '%s' already exists (%s)",
                            name, path);
        else
            TROVE_FAIL(diag, rc, 0, "cannot check %s: %s", path, trove_strerror(rc));
        goto out;
    }
    if (!(v = trove__volume_new(s, name)) ||
        (n > 0 && !(v->idx = trove__calloc((size_t)n, 4)))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    v->size = size;
    v->block_size = block_size;
    v->flags = flags;
    v->slot_count = v->cap_slots = n;
    v->format = format_written(recipe_format);
    v->committed_format = 0; /* nothing committed yet: commit writes every section */
    v->generation = gen;    /* over a damaged recipe: the commit goes past its generation */
    v->dirty = 1;
    if (!over && !pending && (rc = trove__volume_write_recipe(v)) != TROVE_OK) {
        TROVE_FAIL(diag, rc, 0, "cannot write %s: %s", path, trove_strerror(rc));
        goto out;
    }
    if (out) {
        v->next = s->open;
        s->open = v;
        *out = v;
        v = NULL;
    }
    rc = TROVE_OK;
out:
    trove__volume_free(v);
    return rc;
}

int trove_volume_create_format(struct trove_store *s, const char *name, uint64_t size,
                               uint32_t block_size, int recipe_format,
                               struct trove_volume **out, struct trove_diag *diag)
{
    return create_volume(s, name, size, block_size, recipe_format, 0, 0, out, diag);
}

int trove_volume_create_over(struct trove_store *s, const char *name, uint64_t size,
                             uint32_t block_size, int recipe_format, int objects,
                             struct trove_volume **out, struct trove_diag *diag)
{
    if (!out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no output");
    if (objects && block_size != 0 && size / block_size * block_size != size)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "an object volume's size is a whole number of slots");
    return create_volume(s, name, size, block_size, recipe_format,
                         objects ? TROVE_RECIPE_FLAG_OBJECTS : 0, 1, out, diag);
}

int trove_volume_create(struct trove_store *s, const char *name, uint64_t size,
                        uint32_t block_size, struct trove_volume **out, struct trove_diag *diag)
{
    return create_volume(s, name, size, block_size, 0, 0, 0, out, diag);
}

static int create_objects(struct trove_store *s, const char *name, uint64_t slots,
                          uint32_t max_object, int pending, struct trove_volume **out,
                          struct trove_diag *diag)
{
    if (max_object != 0 && slots > UINT64_MAX / max_object) {
        if (out)
            *out = NULL;
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "%llu slots of %u bytes overflow",
                          (unsigned long long)slots, max_object);
    }
    /* A block size of 0 is refused by create_volume (as is any other bad one). */
    return create_volume(s, name, slots * (max_object ? max_object : 1),
                         max_object ? max_object : 1, 0, TROVE_RECIPE_FLAG_OBJECTS,
                         pending ? 2 : 0, out, diag);
}

int trove_volume_create_objects(struct trove_store *s, const char *name, uint64_t slots,
                                uint32_t max_object, struct trove_volume **out,
                                struct trove_diag *diag)
{
    return create_objects(s, name, slots, max_object, 0, out, diag);
}

int trove_volume_create_objects_pending(struct trove_store *s, const char *name,
                                        uint64_t slots, uint32_t max_object,
                                        struct trove_volume **out, struct trove_diag *diag)
{
    if (!out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no output");
    return create_objects(s, name, slots, max_object, 1, out, diag);
}

int trove_volume_is_objects(const struct trove_volume *v)
{
    return v && (v->flags & TROVE_RECIPE_FLAG_OBJECTS) != 0;
}

int trove_volume_open(struct trove_store *s, const char *name, struct trove_volume **out,
                      struct trove_diag *diag)
{
    int rc;

    if (out)
        *out = NULL;
    if (!s || !out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no store or no output");
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK)
        return rc;
    if (find_open(s, name))
        return TROVE_FAIL(diag, TROVE_ERR_BUSY, 0, "volume '%s' is already open", name);
    if ((rc = trove__volume_open_lazy(s, name, out, diag)) != TROVE_OK)
        return rc;
    (*out)->next = s->open;
    s->open = *out;
    return TROVE_OK;
}

const char *trove_volume_last_error(const struct trove_volume *v)
{
    return v ? v->err.msg : "";
}

void trove_volume_close(struct trove_volume *v)
{
    struct trove_volume **pp;

    if (!v)
        return;
    for (pp = &v->s->open; *pp; pp = &(*pp)->next)
        if (*pp == v) {
            *pp = v->next;
            break;
        }
    trove__volume_free(v);
}

int trove_volume_info(struct trove_volume *v, struct trove_volume_info *out)
{
    uint8_t *seen = NULL;
    int rc;

    if (!v || !out)
        return TROVE_ERR_INVALID;
    memset(out, 0, sizeof *out);
    if ((rc = trove__volume_load_all(v, NULL)) != TROVE_OK) /* it counts every slot */
        return rc;
    out->size = v->size;
    out->block_size = v->block_size;
    out->slots = v->slot_count;
    out->recipe_bytes = v->recipe_bytes;
    out->generation = v->generation;
    out->readonly = (v->flags & TROVE_RECIPE_FLAG_READONLY) != 0;
    out->objects = (v->flags & TROVE_RECIPE_FLAG_OBJECTS) != 0;
    out->dirty = v->dirty;
    out->recipe_format = v->format;
    out->last_commit_bytes = v->last_commit_bytes;
    out->last_commit_objects = v->last_commit_objects;
    out->resident_recipe_bytes = v->cap_slots * 4 + trove__dict_resident(&v->dict);
    if (v->patch) {
        out->resident_recipe_bytes += v->nsec_seg * sizeof *v->patch;
        for (uint64_t sg = 0; sg < v->nsec_seg; sg++)
            out->resident_recipe_bytes += v->patch[sg] ? sizeof **v->patch : 0;
    }
    /* Each distinct object's bytes once: its first slot's length. */
    if (!(seen = trove__calloc((size_t)v->dict.len / 8 + 1, 1)))
        return TROVE_ERR_NOMEM;
    for (uint64_t i = 0; i < v->slot_count; i++) {
        uint32_t x = v->idx[i];
        uint64_t len;
        if (x == 0)
            continue;
        out->used_slots++;
        /* A v4 dictionary may hold a digest twice: count the index lookups find. */
        if (v->dict.aliases > 0) {
            uint32_t y = trove__dict_find(&v->dict, &v->dict.digests[x]);
            x = y ? y : x;
        }
        if (seen[x / 8] & (1u << (x % 8)))
            continue;
        seen[x / 8] |= (uint8_t)(1u << (x % 8));
        out->unique_objects++;
        if (!out->objects) {
            out->stored_bytes += slot_len(v->size, v->block_size, i);
            continue;
        }
        /* An object's length is not in the recipe: ask the backend (after any put). One that
         * went missing holds no bytes; verify reports it, and the next write of its bytes
         * puts it again, so it must not stop a writer from opening the volume. */
        if ((rc = trove__store_drain(v->s)) != TROVE_OK)
            goto out;
        rc = trove_backend_size(v->s->be, vol_digest(v, i), &len);
        if (rc != TROVE_OK && rc != TROVE_ERR_NOTFOUND)
            goto out;
        out->stored_bytes += rc == TROVE_OK ? len : 0;
    }
    rc = TROVE_OK;
out:
    free(seen);
    return rc;
}

/* Log slot i's committed digest the first time it changes after a commit. */
static int log_slot(struct trove_volume *v, uint64_t i)
{
    if (i >= v->cap_bits) {
        uint64_t cap = v->cap_bits ? v->cap_bits : 4096;
        uint8_t *p;
        while (cap <= i)
            cap *= 2;
        p = trove__realloc(v->dirty_bits, (size_t)(cap / 8));
        if (!p)
            return TROVE_ERR_NOMEM;
        memset(p + v->cap_bits / 8, 0, (size_t)((cap - v->cap_bits) / 8));
        v->dirty_bits = p;
        v->cap_bits = cap;
    }
    if (v->dirty_bits[i / 8] & (1u << (i % 8)))
        return TROVE_OK;
    if (v->nundo == v->cap_undo) {
        size_t cap = v->cap_undo ? v->cap_undo * 2 : 64;
        struct undo_entry *p = trove__realloc(v->undo, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        v->undo = p;
        v->cap_undo = cap;
    }
    v->undo[v->nundo].slot = i;
    v->undo[v->nundo].old_idx = v->idx[i];
    v->nundo++;
    v->dirty_bits[i / 8] |= (uint8_t)(1u << (i % 8));
    return TROVE_OK;
}

/* Point slot i at d (zero: empty), keeping the counts, the undo log and the dirty bits.
 * The old index is released before the new digest is interned, so that a digest replacing
 * the last use of another takes its index back, in a chunk that is dirty already. */
static int set_slot(struct trove_volume *v, uint64_t i, const struct trove_digest *d, int fresh)
{
    uint32_t old, nx = 0;
    struct trove_digest old_d;
    int created, rc, known, counted;

    /* A lazy volume loads the slot's segment; whether the slot names d already is asked
     * of its entry, read from the entry's chunk if that is not loaded. Not when d was just
     * put (fresh): the store lacked it, so no committed slot names it, and the chunk's
     * fetch is saved. (Should one still have, after its object went missing, the slot
     * gets a second index of d: an alias, which reads the same.) */
    if ((rc = trove__volume_slot(v, i, &old, NULL, NULL)) != TROVE_OK)
        return rc;
    known = trove__volume_entry_known(v, old);
    if (known)
        old_d = v->dict.digests[old];
    else if (trove_digest_is_zero(d))
        fresh = 1; /* old is not 0 (that is known): it differs */
    else if (!fresh && (rc = trove__volume_slot(v, i, &old, &old_d, NULL)) != TROVE_OK)
        return rc;
    if ((known || !fresh) && trove_digest_equal(&old_d, d))
        return TROVE_OK;
    if ((rc = log_slot(v, i)) != TROVE_OK || (rc = seg_dirty(v, i / SEG)))
        return rc;
    counted = old != 0 && known && v->dict.refc[old] < TROVE__LAZY_REFC;
    if (old != 0 && !counted) {
        /* A lazily opened volume's entry: other slots may name it or not. It stays,
         * counted stale until a commit that loads the whole recipe frees it if nothing
         * names it. */
        if (v->stale < v->dict.len - 1)
            v->stale++;
    } else if (old != 0) {
        trove__dict_unref(&v->dict, old);
    }
    if (!trove_digest_is_zero(d)) {
        rc = trove__dict_intern(&v->dict, d, &nx, &created);
        if (rc != TROVE_OK) {
            /* Put the slot back as it was; if even that fails, this handle is unusable. */
            if (old != 0) {
                if (!counted)
                    ; /* never counted down */
                else if (trove__dict_intern(&v->dict, &old_d, &nx, &created) == TROVE_OK &&
                         nx == old)
                    trove__dict_ref(&v->dict, nx);
                else
                    v->s->sticky = rc;
            }
            return rc;
        }
        trove__dict_ref(&v->dict, nx);
    }
    v->idx[i] = nx;
    v->dirty = 1;
    return TROVE_OK;
}

/* Fetch object d, which must be exactly len bytes, into the volume's cache. */
static int load_object(struct trove_volume *v, const struct trove_digest *d, size_t len)
{
    int rc;

    /* The cached bytes were checked when read; once the object is on record as damaged
     * (found by another read), it is not served from here either. */
    if (v->cache.len == len && trove_digest_equal(&v->cache_d, d) &&
        !trove_backend_quarantined(v->s->be, d))
        return TROVE_OK;
    memset(&v->cache_d, 0, sizeof v->cache_d);
    if ((rc = trove__store_drain(v->s)) != TROVE_OK) /* d may be a put in flight */
        return rc;
    rc = trove_backend_get(v->s->be, d, &v->cache, v->block_size);
    if (rc == TROVE_ERR_LIMIT)
        rc = TROVE_ERR_CORRUPT;
    if (rc != TROVE_OK)
        return rc;
    if (v->cache.len != len) {
        v->cache.len = 0;
        return TROVE_ERR_CORRUPT;
    }
    v->cache_d = *d;
    return TROVE_OK;
}

/* Copy slot i's current bytes [0, len) into dst (zeros for an empty slot). */
static int load_block(struct trove_volume *v, uint64_t i, size_t len, uint8_t *dst)
{
    struct trove_digest d;
    int rc;

    if ((rc = slot_digest(v, i, &d)) != TROVE_OK)
        return rc;
    if (trove_digest_is_zero(&d)) {
        memset(dst, 0, len);
        return TROVE_OK;
    }
    if ((rc = load_object(v, &d, len)) != TROVE_OK)
        return rc;
    memcpy(dst, v->cache.ptr, len);
    return TROVE_OK;
}

/* Store len bytes (at least one) as slot i's object: hash, put if the store lacks it, point
 * the slot. */
/* Make sure the store holds data[0..len), named *d (computed here): put it when it is new
 * or damaged. *fresh (if given): 1 if the store did not hold it. */
static int ensure_object(struct trove_volume *v, const uint8_t *data, size_t len,
                         struct trove_digest *d, int src_fd, uint64_t src_off, int *fresh)
{
    uint64_t have;
    int rc, put;

    if (fresh)
        *fresh = 0;
    trove_digest_of(data, len, d);
    if (trove_digest_is_zero(d))
        return TROVE_ERR_CORRUPT; /* a block hashing to the empty digest: report, never store */
    put = trove_backend_quarantined(v->s->be, d); /* damaged: these bytes heal it */
    /* Dedup asks the backend, not a store-wide table, even when the slot names these bytes
     * already (a recipe naming an object does not make it present): an object this handle
     * queued since the last drain needs nothing more; any other costs a stat, and is put
     * when it is not there (never stored, or gone behind the store's back) or not whole
     * (its length is not these bytes': recorded as damaged, and these bytes heal it). */
    if (!put && !trove__store_has_put(v->s, d)) {
        rc = trove__store_lookup(v->s, d, len, &have);
        if (rc != TROVE_OK && rc != TROVE_ERR_NOTFOUND)
            return rc;
        if (rc == TROVE_OK && have != len) {
            char why[96];
            snprintf(why, sizeof why, "stored as %llu bytes, written as %zu",
                     (unsigned long long)have, len);
            if ((rc = trove_backend_quarantine(v->s->be, d, why)) != TROVE_OK)
                return rc;
        }
        put = rc != TROVE_OK || have != len;
        if (fresh)
            *fresh = rc == TROVE_ERR_NOTFOUND;
    }
    if (!put)
        return TROVE_OK;
    return src_fd >= 0 ? trove__store_put_from(v->s, d, data, len, src_fd, src_off)
                       : trove__store_put(v->s, d, data, len);
}

/* src_fd >= 0: data[0..len) are also the bytes of file src_fd at src_off, which a new
 * object is copied from (trove__store_put_from). */
static int store_object(struct trove_volume *v, uint64_t i, const uint8_t *data, size_t len,
                        int src_fd, uint64_t src_off)
{
    struct trove_digest d;
    int rc, fresh;

    if ((rc = ensure_object(v, data, len, &d, src_fd, src_off, &fresh)) != TROVE_OK)
        return rc;
    return set_slot(v, i, &d, fresh); /* which does nothing if the slot names d already */
}

/* Store len bytes as slot i's block; an all-zero block empties the slot. */
static int store_block(struct trove_volume *v, uint64_t i, const uint8_t *data, size_t len,
                       int src_fd, uint64_t src_off)
{
    static const struct trove_digest zero;

    if (all_zero(data, len))
        return set_slot(v, i, &zero, 0);
    return store_object(v, i, data, len, src_fd, src_off);
}

int trove_volume_put_object(struct trove_volume *v, uint64_t slot, const void *data, size_t len)
{
    static const struct trove_digest zero;
    int rc;

    if (!v || (!data && len > 0) || !(v->flags & TROVE_RECIPE_FLAG_OBJECTS) ||
        slot >= v->slot_count || len > v->block_size)
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK)
        return rc;
    if (len == 0)
        return set_slot(v, slot, &zero, 0);
    return store_object(v, slot, data, len, -1, 0);
}

int trove_volume_stage_object(struct trove_volume *v, const void *data, size_t len,
                              struct trove_digest *out)
{
    int rc;

    if (!v || !data || !out || len == 0 || !(v->flags & TROVE_RECIPE_FLAG_OBJECTS) ||
        len > v->block_size)
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK)
        return rc;
    return ensure_object(v, data, len, out, -1, 0, NULL);
}

int trove_volume_set_slot_object(struct trove_volume *v, uint64_t slot,
                                 const struct trove_digest *d)
{
    int rc;

    if (!v || !d || trove_digest_is_zero(d) || !(v->flags & TROVE_RECIPE_FLAG_OBJECTS) ||
        slot >= v->slot_count)
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK)
        return rc;
    return set_slot(v, slot, d, 0);
}

int trove_volume_copy_slot(struct trove_volume *v, uint64_t from, uint64_t to)
{
    struct trove_digest d; /* a copy: set_slot may move the dictionary */
    int rc;

    if (!v || !(v->flags & TROVE_RECIPE_FLAG_OBJECTS) || from >= v->slot_count ||
        to >= v->slot_count)
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK || (rc = slot_digest(v, from, &d)) != TROVE_OK)
        return rc;
    return set_slot(v, to, &d, 0);
}

int trove_volume_get_object(struct trove_volume *v, uint64_t slot, struct trove_bytes *out)
{
    struct trove_digest d;
    int rc;

    if (!v || !out || slot >= v->slot_count)
        return TROVE_ERR_INVALID;
    out->len = 0;
    if ((rc = slot_digest(v, slot, &d)) != TROVE_OK)
        return rc;
    if (trove_digest_is_zero(&d))
        return TROVE_OK;
    if ((rc = trove__store_drain(v->s)) != TROVE_OK) /* it may be a put in flight */
        return rc;
    return trove_backend_get(v->s->be, &d, out, v->block_size);
}

int trove_volume_slot_digests(const struct trove_volume *v, uint64_t first, uint64_t n,
                              struct trove_digest *out)
{
    /* A lazily opened volume loads what it lists: the recipe in memory is a cache of the
     * committed one, so this changes nothing the caller can see but the time. */
    struct trove_volume *w = (struct trove_volume *)v;
    int rc;

    if (!v || (!out && n > 0) || first > v->slot_count || n > v->slot_count - first)
        return TROVE_ERR_INVALID;
    for (uint64_t k = 0; k < n; k++)
        if ((rc = slot_digest(w, first + k, &out[k])) != TROVE_OK)
            return rc;
    return TROVE_OK;
}

/* The part of [offset, end) in offset's block: the slot i, its length, where offset falls
 * in it and how many bytes of the range it holds. */
static void block_span(const struct trove_volume *v, uint64_t offset, uint64_t end, uint64_t *i,
                       size_t *slen, size_t *within, size_t *n)
{
    *i = offset / v->block_size;
    *slen = slot_len(v->size, v->block_size, *i);
    *within = (size_t)(offset - *i * v->block_size);
    *n = (size_t)(end - offset < *slen - *within ? end - offset : *slen - *within);
}

static int ensure_block(struct trove_volume *v)
{
    if (!v->block && !(v->block = trove__malloc(v->block_size)))
        return TROVE_ERR_NOMEM;
    return TROVE_OK;
}

int trove_volume_write(struct trove_volume *v, uint64_t offset, const void *buf, size_t len)
{
    const uint8_t *src = buf;
    uint64_t end;
    int rc;

    if (!v || (!buf && len > 0) || (v->flags & TROVE_RECIPE_FLAG_OBJECTS))
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK)
        return rc;
    if (offset > v->size || len > v->size - offset)
        return TROVE_ERR_INVALID;
    end = offset + len;
    while (offset < end) {
        uint64_t i;
        size_t slen, within, n;
        block_span(v, offset, end, &i, &slen, &within, &n);

        if (within == 0 && n == slen) {
            rc = store_block(v, i, src, n, -1, 0);
        } else {
            if ((rc = ensure_block(v)) != TROVE_OK || (rc = load_block(v, i, slen, v->block)))
                return rc;
            memcpy(v->block + within, src, n);
            rc = store_block(v, i, v->block, slen, -1, 0);
        }
        if (rc != TROVE_OK)
            return rc;
        src += n;
        offset += n;
    }
    return TROVE_OK;
}

/* n bytes of fd at off into dst: TROVE_OK, TROVE_ERR_TRUNCATED (the file ends first),
 * -errno. */
static int pread_all(int fd, uint8_t *dst, size_t n, uint64_t off)
{
    while (n > 0) {
        ssize_t r = trove__io_pread(fd, dst, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return TROVE_ERR_TRUNCATED;
        dst += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return TROVE_OK;
}

int trove_volume_write_fd(struct trove_volume *v, uint64_t offset, int fd, uint64_t fd_offset,
                          uint64_t len)
{
    uint64_t end;
    int rc;

    if (!v || fd < 0 || (v->flags & TROVE_RECIPE_FLAG_OBJECTS) || fd_offset > INT64_MAX ||
        len > INT64_MAX - fd_offset)
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK)
        return rc;
    if (offset > v->size || len > v->size - offset)
        return TROVE_ERR_INVALID;
    if ((rc = ensure_block(v)) != TROVE_OK)
        return rc;
    end = offset + len;
    while (offset < end) {
        uint64_t i;
        size_t slen, within, n;
        block_span(v, offset, end, &i, &slen, &within, &n);

        if (within == 0 && n == slen) { /* whole: read once, to hash; copied by the kernel */
            if ((rc = pread_all(fd, v->block, n, fd_offset)) == TROVE_OK)
                rc = store_block(v, i, v->block, n, fd, fd_offset);
        } else {
            if ((rc = load_block(v, i, slen, v->block)) == TROVE_OK &&
                (rc = pread_all(fd, v->block + within, n, fd_offset)) == TROVE_OK)
                rc = store_block(v, i, v->block, slen, -1, 0);
        }
        if (rc != TROVE_OK)
            return rc;
        fd_offset += n;
        offset += n;
    }
    return TROVE_OK;
}

int trove_testing_volume_set_slots(struct trove_volume *v, uint64_t first,
                                     const struct trove_digest *d, size_t n)
{
    int rc;

    if (!v || (!d && n > 0) || first > v->slot_count || n > v->slot_count - first)
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK)
        return rc;
    for (size_t k = 0; k < n; k++)
        if ((rc = set_slot(v, first + k, &d[k], 0)) != TROVE_OK)
            return rc;
    return TROVE_OK;
}

int trove_volume_compact(struct trove_volume *v)
{
    struct trove__dict nd;
    uint32_t *nidx = NULL;
    int rc;

    if (!v)
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK || (rc = trove__volume_load_all(v, NULL)))
        return rc;
    if ((rc = trove__dict_init(&nd)) != TROVE_OK)
        return rc;
    if (v->slot_count > 0 && !(nidx = trove__malloc((size_t)v->slot_count * 4))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (uint64_t i = 0; i < v->slot_count; i++) {
        int created;
        nidx[i] = 0;
        if (v->idx[i] == 0)
            continue;
        if ((rc = trove__dict_intern(&nd, vol_digest(v, i), &nidx[i], &created)) != TROVE_OK)
            goto out;
        trove__dict_ref(&nd, nidx[i]);
    }
    trove__dict_free(&v->dict);
    v->dict = nd;
    memset(&nd, 0, sizeof nd);
    free(v->idx);
    v->idx = nidx;
    nidx = NULL;
    v->cap_slots = v->slot_count;
    v->rewrite_all = 1;
    v->dirty = 1;
    rc = TROVE_OK;
out:
    free(nidx);
    trove__dict_free(&nd);
    return rc;
}

int trove_volume_set_format(struct trove_volume *v, int recipe_format)
{
    int rc;

    if (!v || !format_ok(recipe_format))
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK)
        return rc;
    recipe_format = format_written(recipe_format);
    if (recipe_format == TROVE_RECIPE_FORMAT_V1 && (rc = trove__volume_load_all(v, NULL)))
        return rc;
    if (recipe_format != v->format) {
        v->format = recipe_format;
        v->dirty = 1;
    }
    return TROVE_OK;
}

int trove_volume_read(struct trove_volume *v, uint64_t offset, void *buf, size_t len)
{
    uint8_t *dst = buf;
    uint64_t end;
    int rc;

    if (!v || (!buf && len > 0) || (v->flags & TROVE_RECIPE_FLAG_OBJECTS))
        return TROVE_ERR_INVALID;
    if (offset > v->size || len > v->size - offset)
        return TROVE_ERR_INVALID;
    end = offset + len;
    while (offset < end) {
        uint64_t i = offset / v->block_size;
        size_t slen = slot_len(v->size, v->block_size, i);
        size_t within = (size_t)(offset - i * v->block_size);
        size_t n = (size_t)(end - offset < slen - within ? end - offset : slen - within);
        struct trove_digest d;

        if ((rc = slot_digest(v, i, &d)) != TROVE_OK)
            return rc;
        if (trove_digest_is_zero(&d)) {
            memset(dst, 0, n);
        } else {
            if ((rc = load_object(v, &d, slen)) != TROVE_OK)
                return rc;
            memcpy(dst, v->cache.ptr + within, n);
        }
        dst += n;
        offset += n;
    }
    return TROVE_OK;
}

int trove_volume_resize(struct trove_volume *v, uint64_t new_size)
{
    static const struct trove_digest zero;
    uint64_t n, old_n, edge, edge_slot;
    size_t keep_len = 0;
    int rc;

    if (!v)
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK)
        return rc;
    if ((v->flags & TROVE_RECIPE_FLAG_OBJECTS) && new_size % v->block_size != 0)
        return TROVE_ERR_INVALID; /* an object volume is whole slots */
    if (new_size == v->size)
        return TROVE_OK;
    if ((rc = trove__volume_load_all(v, NULL)) != TROVE_OK) /* the segments move */
        return rc;
    n = trove__recipe_slots_for(new_size, v->block_size);
    old_n = v->slot_count;
    if (n > TROVE_RECIPE_MAX_SLOTS || n > SIZE_MAX / 4)
        return TROVE_ERR_INVALID;
    if ((rc = ensure_block(v)) != TROVE_OK)
        return rc;
    /* The block straddling the smaller of the two sizes (the old last block when growing,
     * the new last block when shrinking) keeps its bytes below that size; the rest of it
     * becomes zeros. It is a slot of both the old and the new volume. */
    edge = new_size < v->size ? new_size : v->size;
    edge_slot = edge / v->block_size;
    if (edge % v->block_size != 0 && v->idx[edge_slot] != 0) {
        keep_len = (size_t)(edge % v->block_size);
        rc = load_block(v, edge_slot, slot_len(v->size, v->block_size, edge_slot), v->block);
        if (rc != TROVE_OK)
            return rc;
    }
    /* Empty the slots that go away, so that the dictionary drops them and they are logged. */
    for (uint64_t i = n; i < old_n; i++)
        if ((rc = set_slot(v, i, &zero, 0)) != TROVE_OK)
            return rc;
    if (n > v->cap_slots) {
        uint32_t *p = trove__realloc(v->idx, (size_t)n * 4);
        if (!p)
            return TROVE_ERR_NOMEM;
        v->idx = p;
        v->cap_slots = n;
    }
    if (n > old_n)
        memset(v->idx + old_n, 0, (size_t)(n - old_n) * 4);
    /* The segments whose slot count changes, or that appear, are rewritten. */
    {
        uint64_t lo = (n < old_n ? n : old_n), hi = (n > old_n ? n : old_n);
        for (uint64_t sg = lo / SEG; sg <= (hi - 1) / SEG; sg++)
            if ((rc = seg_dirty(v, sg)) != TROVE_OK)
                return rc;
    }
    v->slot_count = n;
    v->size = new_size;
    v->dirty = 1;
    if (keep_len) {
        size_t new_len = slot_len(new_size, v->block_size, edge_slot);
        memset(v->block + keep_len, 0, new_len - keep_len);
        rc = store_block(v, edge_slot, v->block, new_len, -1, 0);
    }
    return rc;
}

int trove_volume_commit(struct trove_volume *v)
{
    int rc;

    if (!v)
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK)
        return rc;
    /* Nothing to publish, but a write of the same content may have put objects again (ones
     * gone missing or damaged): those are made durable, as a commit promises. */
    if (!v->dirty)
        return trove__store_drain(v->s);
    return trove__volume_write_recipe(v);
}
