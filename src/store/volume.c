/*
 * volume.c: a volume's slots — create, open, write, read, resize, commit and close
 * (include/trove/volume.h).
 *
 * An open volume keeps its recipe as the v1 file image (header, one 16-byte digest per
 * slot, checksum) in one buffer, so a commit seals the header and checksum in place and
 * writes the buffer as it is: no per-slot copy, no encode pass. Writes change the image's
 * entries and the store's live reference counts at once; the first change of a slot since
 * the last commit also logs the slot's committed digest (a bitmap says which slots are
 * logged). That undo log is what commit turns into committed-count changes, and what close
 * rolls back when a volume is dropped uncommitted, both in O(changed slots).
 *
 * Every block is stored with exactly its slot's length: block_size, except that the last
 * slot holds only the volume's remainder. A write hashes each touched block (after a
 * read-modify-write of a partial one); a block equal to the slot's current digest changes
 * nothing, an all-zero block empties the slot, and any other block is stored unless the
 * reference map already knows its digest and the object is there (a stat: then an object
 * with those bytes is durable, or queued). Stores go through the store's put pool (putpool.h), so the caller hashes the
 * next block while earlier ones are fsync'd; commit, and any read of an object, drain it
 * first, so a recipe never names an object that is not durable.
 */
#include "store_internal.h"

#include "common/endian.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_MIN 4096u
#define BLOCK_MAX (1u << 30)

static uint64_t slots_for(uint64_t size, uint32_t bs)
{
    return size / bs + (size % bs != 0);
}

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

static void volume_free(struct trove_volume *v)
{
    if (!v)
        return;
    trove_bytes_free(&v->img);
    trove_bytes_free(&v->cache);
    free(v->dirty_bits);
    free(v->undo);
    free(v->block);
    free(v);
}

/* Adopt a decoded recipe image (taking img's storage) as an open volume. */
static int volume_adopt(struct trove_store *s, const char *name, struct trove_bytes *img,
                        const struct trove_recipe_v1 *r, struct trove_volume **out)
{
    struct trove_volume *v = calloc(1, sizeof *v);
    int rc = TROVE_ERR_NOMEM;

    if (!v)
        goto out;
    v->s = s;
    snprintf(v->name, sizeof v->name, "%s", name);
    v->size = r->volume_size;
    v->block_size = r->block_size;
    v->flags = r->flags;
    v->slot_count = r->slot_count;
    v->generation = r->generation;
    v->recipe_bytes = img->len;
    v->img = *img;
    memset(img, 0, sizeof *img);
    v->next = s->open;
    s->open = v;
    *out = v;
    rc = TROVE_OK;
out:
    return rc;
}

static struct trove_volume *find_open(struct trove_store *s, const char *name)
{
    for (struct trove_volume *v = s->open; v; v = v->next)
        if (strcmp(v->name, name) == 0)
            return v;
    return NULL;
}

int trove_volume_create(struct trove_store *s, const char *name, uint64_t size,
                        uint32_t block_size, struct trove_volume **out, struct trove_diag *diag)
{
    struct trove_bytes img = {0};
    struct trove_recipe_v1 r;
    struct trove_volume *v = NULL;
    char path[4096];
    uint64_t n, len;
    int rc;

    if (out)
        *out = NULL;
    if (!s) {
        rc = trove_diag_set(diag, TROVE_ERR_INVALID, 0, "no store");
        goto out;
    }
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK ||
        (rc = trove__store_writable(s, diag)) != TROVE_OK)
        goto out;
    if (block_size == 0)
        block_size = TROVE_BLOCK_SIZE_DEFAULT;
    if (block_size < BLOCK_MIN || block_size > BLOCK_MAX || (block_size & (block_size - 1))) {
        rc = trove_diag_set(diag, TROVE_ERR_INVALID, 0,
                            "block size %u is not a power of two from 4 KiB to 1 GiB",
                            block_size);
        goto out;
    }
    n = slots_for(size, block_size);
    if (n > TROVE_RECIPE_MAX_SLOTS) {
        rc = trove_diag_set(diag, TROVE_ERR_INVALID, 0,
                            "a volume of %llu bytes needs %llu slots of %u bytes, over the "
                            "limit of %llu; use a larger --block-size",
                            (unsigned long long)size, (unsigned long long)n, block_size,
                            (unsigned long long)TROVE_RECIPE_MAX_SLOTS);
        goto out;
    }
    trove__recipe_path(s, name, path, sizeof path);
    if ((rc = trove__recipe_exists(s, name)) != 0) {
        if (rc > 0)
            rc = trove_diag_set(diag, TROVE_ERR_EXISTS, 0, "volume '%s' already exists (%s)",
                                name, path);
        else
            trove_diag_set(diag, rc, 0, "cannot check %s: %s", path, trove_strerror(rc));
        goto out;
    }
    len = TROVE_RECIPE_V1_LEN(n);
    if (len > SIZE_MAX) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    img.len = 0;
    if ((rc = trove_bytes_reserve(&img, (size_t)len)) != TROVE_OK)
        goto out;
    memset(img.ptr, 0, (size_t)len);
    img.len = (size_t)len;
    trove_recipe_v1_seal(img.ptr, size, block_size, 0, 1, n);
    if ((rc = trove__recipe_publish(s, name, img.ptr, img.len)) != TROVE_OK) {
        trove_diag_set(diag, rc, 0, "cannot write %s: %s", path, trove_strerror(rc));
        goto out;
    }
    rc = trove__basis_set(s, name, 1, trove__get_le64(img.ptr + img.len - 8));
    if (rc != TROVE_OK) {
        trove_diag_set(diag, rc, 0, "cannot record the new volume in %s/refs: %s", s->dir,
                       trove_strerror(rc));
        goto out;
    }
    if (out) {
        r.slot_count = n;
        r.block_size = block_size;
        r.flags = 0;
        r.volume_size = size;
        r.generation = 1;
        if ((rc = volume_adopt(s, name, &img, &r, &v)) != TROVE_OK)
            goto out;
        *out = v;
    }
    rc = TROVE_OK;
out:
    trove_bytes_free(&img);
    return rc;
}

int trove_volume_open(struct trove_store *s, const char *name, struct trove_volume **out,
                      struct trove_diag *diag)
{
    struct trove_bytes img = {0};
    struct trove_recipe_v1 r;
    int rc;

    if (out)
        *out = NULL;
    if (!s || !out) {
        rc = trove_diag_set(diag, TROVE_ERR_INVALID, 0, "no store or no output");
        goto out;
    }
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK)
        goto out;
    if (find_open(s, name)) {
        rc = trove_diag_set(diag, TROVE_ERR_BUSY, 0, "volume '%s' is already open", name);
        goto out;
    }
    if ((rc = trove__recipe_load(s, name, &img, &r, diag)) != TROVE_OK)
        goto out;
    rc = volume_adopt(s, name, &img, &r, out);
out:
    trove_bytes_free(&img);
    return rc;
}

/* Undo every uncommitted slot change in the live counts (the image is about to go). */
static void rollback_live(struct trove_volume *v)
{
    const struct trove_digest *slots = vol_slots(v);

    for (size_t k = 0; k < v->nundo; k++) {
        const struct undo_entry *u = &v->undo[k];
        if (u->slot < v->slot_count && !trove_digest_is_zero(&slots[u->slot]))
            trove__ref_add(v->s, &slots[u->slot], -1, 0);
        if (!trove_digest_is_zero(&u->old))
            trove__ref_add(v->s, &u->old, +1, 0);
    }
    v->nundo = 0;
}

void trove_volume_close(struct trove_volume *v)
{
    struct trove_volume **pp;

    if (!v)
        return;
    rollback_live(v);
    for (pp = &v->s->open; *pp; pp = &(*pp)->next)
        if (*pp == v) {
            *pp = v->next;
            break;
        }
    volume_free(v);
}

int trove_volume_info(struct trove_volume *v, struct trove_volume_info *out)
{
    const struct trove_digest *slots;
    struct refmap seen = {0};
    int rc = TROVE_OK;

    if (!v || !out)
        return TROVE_ERR_INVALID;
    memset(out, 0, sizeof *out);
    out->size = v->size;
    out->block_size = v->block_size;
    out->slots = v->slot_count;
    out->recipe_bytes = v->recipe_bytes;
    out->generation = v->generation;
    out->readonly = (v->flags & TROVE_RECIPE_FLAG_READONLY) != 0;
    out->dirty = v->dirty;
    slots = vol_slots(v);
    /* Distinct digests, with the store's table code in a private map. */
    for (uint64_t i = 0; i < v->slot_count; i++) {
        int created;
        if (trove_digest_is_zero(&slots[i]))
            continue;
        out->used_slots++;
        if (!trove__refmap_insert(&seen, &slots[i], &created)) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        if (created) {
            out->unique_objects++;
            out->stored_bytes += slot_len(v->size, v->block_size, i);
        }
    }
out:
    trove__refmap_free(&seen);
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
        p = realloc(v->dirty_bits, (size_t)(cap / 8));
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
        struct undo_entry *p = realloc(v->undo, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        v->undo = p;
        v->cap_undo = cap;
    }
    v->undo[v->nundo].slot = i;
    v->undo[v->nundo].old = vol_slots(v)[i];
    v->nundo++;
    v->dirty_bits[i / 8] |= (uint8_t)(1u << (i % 8));
    return TROVE_OK;
}

/* Point slot i at d (zero: empty), keeping the live counts and the undo log. */
static int set_slot(struct trove_volume *v, uint64_t i, const struct trove_digest *d)
{
    struct trove_digest *slot = &vol_slots(v)[i];
    int rc;

    if (trove_digest_equal(slot, d))
        return TROVE_OK;
    if ((rc = log_slot(v, i)) != TROVE_OK)
        return rc;
    if (!trove_digest_is_zero(d) && (rc = trove__ref_add(v->s, d, +1, 0)) != TROVE_OK)
        return rc;
    if (!trove_digest_is_zero(slot))
        trove__ref_add(v->s, slot, -1, 0);
    *slot = *d;
    v->dirty = 1;
    return TROVE_OK;
}

/* Fetch object d, which must be exactly len bytes, into the volume's cache. */
static int load_object(struct trove_volume *v, const struct trove_digest *d, size_t len)
{
    int rc;

    if (v->cache.len == len && trove_digest_equal(&v->cache_d, d))
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
    const struct trove_digest *d = &vol_slots(v)[i];
    int rc;

    if (trove_digest_is_zero(d)) {
        memset(dst, 0, len);
        return TROVE_OK;
    }
    if ((rc = load_object(v, d, len)) != TROVE_OK)
        return rc;
    memcpy(dst, v->cache.ptr, len);
    return TROVE_OK;
}

/* Store len bytes as slot i's block: hash, compare, put if new, point the slot. */
static int store_block(struct trove_volume *v, uint64_t i, const uint8_t *data, size_t len)
{
    struct trove_digest d;
    const struct ref_entry *e;
    int rc;

    if (all_zero(data, len)) {
        memset(&d, 0, sizeof d);
        return set_slot(v, i, &d);
    }
    trove_digest_of(data, len, &d);
    if (trove_digest_is_zero(&d))
        return TROVE_ERR_CORRUPT; /* a block hashing to the empty digest: report, never store */
    if (trove_digest_equal(&d, &vol_slots(v)[i]))
        return TROVE_OK;
    /* A known digest needs no put, unless its object went missing behind the store's back
     * (then writing the same bytes again restores it). Checking costs a stat, not a write. */
    e = trove__refmap_find(&v->s->refs, &d);
    if (e) {
        uint64_t have;
        rc = trove_backend_size(v->s->be, &d, &have);
        if (rc == TROVE_OK && have != len)
            rc = TROVE_ERR_CORRUPT; /* same digest, other length: verify reports it */
        if (rc != TROVE_OK && rc != TROVE_ERR_NOTFOUND)
            return rc;
    }
    if ((!e || rc == TROVE_ERR_NOTFOUND) && (rc = trove__store_put(v->s, &d, data, len)))
        return rc;
    return set_slot(v, i, &d);
}

static int ensure_block(struct trove_volume *v)
{
    if (!v->block && !(v->block = malloc(v->block_size)))
        return TROVE_ERR_NOMEM;
    return TROVE_OK;
}

int trove_volume_write(struct trove_volume *v, uint64_t offset, const void *buf, size_t len)
{
    const uint8_t *src = buf;
    uint64_t end;
    int rc;

    if (!v || (!buf && len > 0))
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK)
        return rc;
    if (offset > v->size || len > v->size - offset)
        return TROVE_ERR_INVALID;
    end = offset + len;
    while (offset < end) {
        uint64_t i = offset / v->block_size;
        uint64_t start = i * v->block_size;
        size_t slen = slot_len(v->size, v->block_size, i);
        size_t within = (size_t)(offset - start);
        size_t n = (size_t)(end - offset < slen - within ? end - offset : slen - within);

        if (within == 0 && n == slen) {
            rc = store_block(v, i, src, n);
        } else {
            if ((rc = ensure_block(v)) != TROVE_OK || (rc = load_block(v, i, slen, v->block)))
                return rc;
            memcpy(v->block + within, src, n);
            rc = store_block(v, i, v->block, slen);
        }
        if (rc != TROVE_OK)
            return rc;
        src += n;
        offset += n;
    }
    return TROVE_OK;
}

int trove_volume_read(struct trove_volume *v, uint64_t offset, void *buf, size_t len)
{
    uint8_t *dst = buf;
    uint64_t end;
    int rc;

    if (!v || (!buf && len > 0))
        return TROVE_ERR_INVALID;
    if (offset > v->size || len > v->size - offset)
        return TROVE_ERR_INVALID;
    end = offset + len;
    while (offset < end) {
        uint64_t i = offset / v->block_size;
        const struct trove_digest *d = &vol_slots(v)[i];
        size_t slen = slot_len(v->size, v->block_size, i);
        size_t within = (size_t)(offset - i * v->block_size);
        size_t n = (size_t)(end - offset < slen - within ? end - offset : slen - within);

        if (trove_digest_is_zero(d)) {
            memset(dst, 0, n);
        } else {
            if ((rc = load_object(v, d, slen)) != TROVE_OK)
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
    if (new_size == v->size)
        return TROVE_OK;
    n = slots_for(new_size, v->block_size);
    old_n = v->slot_count;
    if (n > TROVE_RECIPE_MAX_SLOTS || TROVE_RECIPE_V1_LEN(n) > SIZE_MAX)
        return TROVE_ERR_INVALID;
    if ((rc = ensure_block(v)) != TROVE_OK)
        return rc;
    /* The block straddling the smaller of the two sizes (the old last block when growing,
     * the new last block when shrinking) keeps its bytes below that size; the rest of it
     * becomes zeros. It is a slot of both the old and the new volume. */
    edge = new_size < v->size ? new_size : v->size;
    edge_slot = edge / v->block_size;
    if (edge % v->block_size != 0 && !trove_digest_is_zero(&vol_slots(v)[edge_slot])) {
        keep_len = (size_t)(edge % v->block_size);
        rc = load_block(v, edge_slot, slot_len(v->size, v->block_size, edge_slot), v->block);
        if (rc != TROVE_OK)
            return rc;
    }
    /* Empty the slots that go away, so that their references drop and are logged. */
    for (uint64_t i = n; i < old_n; i++)
        if ((rc = set_slot(v, i, &zero)) != TROVE_OK)
            return rc;
    if (n > old_n) {
        rc = trove_bytes_reserve(&v->img, (size_t)(TROVE_RECIPE_V1_LEN(n) - v->img.len));
        if (rc != TROVE_OK)
            return rc;
        memset(v->img.ptr + TROVE_RECIPE_V1_HEADER + 16 * old_n, 0,
               (size_t)(16 * (n - old_n)) + 8);
    }
    v->img.len = (size_t)TROVE_RECIPE_V1_LEN(n);
    v->slot_count = n;
    v->size = new_size;
    v->dirty = 1;
    if (keep_len) {
        size_t new_len = slot_len(new_size, v->block_size, edge_slot);
        memset(v->block + keep_len, 0, new_len - keep_len);
        rc = store_block(v, edge_slot, v->block, new_len);
    }
    return rc;
}

int trove_volume_commit(struct trove_volume *v)
{
    struct trove_store *s;
    const struct trove_digest *slots;
    uint64_t gen;
    int rc;

    if (!v)
        return TROVE_ERR_INVALID;
    if ((rc = volume_writable(v)) != TROVE_OK)
        return rc;
    if (!v->dirty)
        return TROVE_OK;
    s = v->s;
    /* Objects are durable before the recipe that names them. */
    if ((rc = trove__store_drain(s)) != TROVE_OK)
        return rc;
    gen = v->generation + 1;
    trove_recipe_v1_seal(v->img.ptr, v->size, v->block_size, v->flags, gen, v->slot_count);
    /* Every object a slot names was made durable by the write that named it. */
    if ((rc = trove__recipe_publish(s, v->name, v->img.ptr, v->img.len)) != TROVE_OK)
        return rc;
    v->generation = gen;
    v->recipe_bytes = v->img.len;
    v->dirty = 0;
    /* The committed state moved: move the committed counts the same way. Adding before
     * dropping keeps each entry (and its dict index) alive across the move. */
    slots = vol_slots(v);
    for (size_t k = 0; k < v->nundo; k++) {
        const struct undo_entry *u = &v->undo[k];
        /* The slot's digest is live, so its entry exists: the add allocates nothing. */
        if (u->slot < v->slot_count && !trove_digest_is_zero(&slots[u->slot])) {
            rc = trove__ref_add(s, &slots[u->slot], 0, +1);
            assert(rc == TROVE_OK);
        }
        if (!trove_digest_is_zero(&u->old))
            trove__ref_add(s, &u->old, 0, -1);
        v->dirty_bits[u->slot / 8] &= (uint8_t)~(1u << (u->slot % 8));
    }
    v->nundo = 0;
    return trove__basis_set(s, v->name, gen, trove__get_le64(v->img.ptr + v->img.len - 8));
}
