/*
 * recipe_io.c: a volume's recipe between memory and the store — loading a committed
 * recipe (v1 or v3) into the in-memory form (dictionary indices plus a dictionary), and
 * committing that form in the volume's format. The in-memory volume is made and freed here
 * too (trove__volume_new, trove__volume_free), so that this file calls only the store's
 * low level (store.c) below it, and volume.c and the store's high level call it.
 *
 * v1 is one file: the commit gathers each slot's digest from the dictionary into the file
 * image, seals it and publishes it by rename. v3 is a manifest naming pages that name
 * column segments and dictionary chunks, each a content-addressed object
 * (docs/formats/recipe-v3.md). The store orders a v3 volume's sections column segments
 * first, then dictionary chunks, so that a growing dictionary appends sections and pages
 * at the end instead of moving every segment. A commit re-encodes only the segments with
 * a changed slot, the chunks with a changed entry and the pages with a changed record;
 * identical objects (every all-empty segment, say) are one object and written once.
 *
 * Durability of a v3 commit: the data objects are already durable (the put pool is
 * drained first); the new recipe objects are staged — written unsynced — and published
 * together with one filesystem sync before their names appear and one after
 * (trove_backend_publish), and only then is the manifest published by write, fsync,
 * rename, fsync of the directory. A crash leaves the old manifest naming old objects, or
 * the new one naming durable new ones; staged objects that never got a manifest are
 * garbage for gc. Loading fetches every page, chunk and segment and rehashes it: an object
 * whose bytes do not hash to its name is reported, never decoded.
 */
#include "store_internal.h"
#include "backend_internal.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/sealed.h"
#include "recipe_head.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEG TROVE_RECIPE_V3_SEGMENT_SLOTS
#define CHUNK TROVE_RECIPE_V3_CHUNK_ENTRIES
#define PAGE TROVE_RECIPE_V3_PAGE_SECTIONS
#define OBJ_HDR TROVE_RECIPE_V3_OBJECT_HEADER
#define SEG_MAX_BYTES (OBJ_HDR + 16 * SEG) /* a raw segment; packed ones are smaller */
#define CHUNK_MAX_BYTES (OBJ_HDR + 16 * CHUNK)
#define PAGE_MAX_BYTES (OBJ_HDR + 20 * PAGE)

struct trove_volume *trove__volume_new(struct trove_store *s, const char *name)
{
    struct trove_volume *v = trove__calloc(1, sizeof *v);

    if (!v)
        return NULL;
    if (trove__dict_init(&v->dict) != TROVE_OK) {
        free(v);
        return NULL;
    }
    v->s = s;
    snprintf(v->name, sizeof v->name, "%s", name);
    return v;
}

/* Free a per-segment patch table of n entries (and the patches it holds). */
static void free_patches(struct seg_patch **patch, uint64_t n)
{
    for (uint64_t k = 0; patch && k < n; k++)
        free(patch[k]);
    free(patch);
}

void trove__volume_free(struct trove_volume *v)
{
    if (!v)
        return;
    free(v->idx);
    trove__dict_free(&v->dict);
    free(v->dirty_bits);
    free(v->undo);
    free(v->seg_dirty);
    free_patches(v->patch, v->nsec_seg);
    free(v->sec);
    free(v->pages);
    free(v->page_ok);
    free(v->seg_ok);
    free(v->chunk_ok);
    free(v->peek);
    free(v->block);
    trove_bytes_free(&v->cache);
    free(v);
}

/* Fetch recipe object d (at most max bytes) into buf and check that it hashes to d. */
static int fetch(struct trove_volume *v, const struct trove_digest *d, size_t max,
                 struct trove_bytes *buf, const char *what, uint64_t no,
                 struct trove_diag *diag)
{
    struct trove_digest got;
    char hex[33];
    int rc;

    trove_digest_hex(d, hex);
    rc = trove_backend_get(v->s->be, d, buf, max);
    if (rc == TROVE_OK && !trove__backend_verifies(v->s->be)) { /* else the get checked it */
        trove_digest_of(buf->ptr, buf->len, &got);
        if (!trove_digest_equal(&got, d))
            rc = TROVE_ERR_CHECKSUM;
    }
    if (rc == TROVE_ERR_CHECKSUM || rc == TROVE_ERR_NOTFOUND)
        /* The volume exists and its recipe is damaged: not TROVE_ERR_NOTFOUND, which
         * callers take for "no such volume". */
        return TROVE_FAIL(diag, rc == TROVE_ERR_NOTFOUND ? TROVE_ERR_CORRUPT : rc, 0,
                          "volume '%s': %s %llu (object %s) %s (%s again heals it)", v->name,
                          what, (unsigned long long)no, hex,
                          rc == TROVE_ERR_NOTFOUND ? "is missing" : "does not hash to its name",
                          (v->flags & TROVE_RECIPE_FLAG_OBJECTS)
                              ? "importing the capture"
                              : "writing the volume's content (`trove volume put`)");
    if (rc == TROVE_ERR_LIMIT)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "volume '%s': %s %llu (object %s) is larger than any %s",
                          v->name, what, (unsigned long long)no, hex, what);
    if (rc != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "volume '%s': cannot read %s %llu (object %s): %s",
                          v->name, what, (unsigned long long)no, hex, trove_strerror(rc));
    return TROVE_OK;
}

/* Prefix a decoder's message with the volume, the object kind and number. */
static int reword(struct trove_volume *v, struct trove_diag *diag, int rc, const char *what,
                  uint64_t no, const struct trove_digest *d)
{
    char hex[33], msg[sizeof diag->msg];

    if (!diag)
        return rc;
    trove_digest_hex(d, hex);
    snprintf(msg, sizeof msg, "%s", diag->msg);
    return TROVE_FAIL(diag, rc, diag->offset, "volume '%s': %s %llu (object %s): %s",
                      v->name, what, (unsigned long long)no, hex, msg);
}

/* Count slot i as naming dictionary index x (> 0) in the volume being loaded. */
static int load_slot(struct trove_volume *v, uint64_t i, uint32_t x)
{
    v->idx[i] = x;
    if (x != 0)
        trove__dict_ref(&v->dict, x);
    return TROVE_OK;
}

static int load_v1(struct trove_volume *v, const uint8_t *buf, size_t len,
                   struct trove_diag *diag)
{
    struct trove_recipe_v1 r;
    const struct trove_digest *e;
    int rc;

    if ((rc = trove_recipe_v1_decode(buf, len, &r, diag)) != TROVE_OK)
        return rc;
    v->size = r.volume_size;
    v->block_size = r.block_size;
    v->flags = r.flags;
    v->generation = r.generation;
    v->slot_count = v->cap_slots = r.slot_count;
    v->format = v->committed_format = TROVE_RECIPE_FORMAT_V1;
    v->committed_slots = r.slot_count;
    if (r.slot_count > 0 && !(v->idx = trove__calloc((size_t)r.slot_count, 4)))
        return TROVE_ERR_NOMEM;
    e = (const struct trove_digest *)(const void *)r.entries;
    for (uint64_t i = 0; i < r.slot_count; i++) {
        uint32_t x;
        int created;
        if (trove_digest_is_zero(&e[i]))
            continue;
        if ((rc = trove__dict_intern(&v->dict, &e[i], &x, &created)) != TROVE_OK)
            return rc;
        load_slot(v, i, x);
    }
    trove__dict_clear_dirty(&v->dict);
    return trove__dict_finish_load(&v->dict);
}

/*
 * Load column segment sg, a patch: fetch and decode the patch, then its base (a packed
 * segment of the same slot count) into seg[0..n), apply the patch there and keep what the
 * next commit needs (the base's digest and its indices at the patched slots). *last holds
 * the previous patch's base and indices, so that patches of one base (the all-empty
 * segment, say) fetch it once.
 */
struct patch_cache {
    struct trove_digest d; /* zero: nothing cached */
    uint32_t n;
    uint32_t idx[SEG];
};

static int load_patch(struct trove_volume *v, uint64_t sg, uint32_t n, uint32_t dict_count,
                      struct trove_bytes *obj, uint32_t *seg, struct patch_cache *last,
                      struct trove_diag *diag)
{
    const struct trove_v3_section *sc = &v->sec[sg];
    struct trove_v3_patch p;
    struct seg_patch *sp = NULL;
    uint8_t enc = 0;
    int rc;

    if ((rc = fetch(v, &sc->d, SEG_MAX_BYTES, obj, "segment", sg, diag)) != TROVE_OK)
        goto out;
    if ((rc = trove_recipe_v3_patch_decode(obj->ptr, obj->len, n, dict_count, &p, diag))) {
        rc = reword(v, diag, rc, "segment", sg, &sc->d);
        goto out;
    }
    if (!(trove_digest_equal(&last->d, &p.base) && last->n == n)) {
        memset(&last->d, 0, sizeof last->d);
        if ((rc = fetch(v, &p.base, SEG_MAX_BYTES, obj, "segment base of", sg, diag)))
            goto out;
        rc = trove_recipe_v3_segment_decode(obj->ptr, obj->len, n, dict_count, last->idx,
                                            NULL, &enc, diag);
        if (rc != TROVE_OK) {
            rc = reword(v, diag, rc, "segment base of", sg, &p.base);
            goto out;
        }
        last->d = p.base;
        last->n = n;
    }
    memcpy(seg, last->idx, n * sizeof *seg);
    if (!v->patch && !(v->patch = trove__calloc((size_t)v->nsec_seg, sizeof *v->patch))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if (!(sp = trove__calloc(1, sizeof *sp))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if ((rc = trove_recipe_v3_patch_apply(&p, seg, sp->bval, diag)) != TROVE_OK) {
        rc = reword(v, diag, rc, "segment", sg, &sc->d);
        goto out;
    }
    sp->base = p.base;
    sp->k = p.k;
    memcpy(sp->off, p.off, p.k * sizeof *p.off);
    v->patch[sg] = sp;
    sp = NULL;
out:
    free(sp);
    return rc;
}

/* What a v3 or v4 manifest says of its volume, whether it is loaded whole or lazily. */
static void v3_header(struct trove_volume *v, const struct trove_recipe_v3 *m)
{
    v->size = m->volume_size;
    v->block_size = m->block_size;
    v->flags = m->flags;
    v->generation = m->generation;
    v->slot_count = v->cap_slots = v->committed_slots = m->slot_count;
    v->format = TROVE_RECIPE_FORMAT_V4; /* a v3 recipe is upgraded by the next commit */
    v->committed_format = (int)m->version;
}

/* Page p of a recipe of total sections (the first nseg column segments): fetched, checked
 * and decoded into v->sec[8p ..]; it holds 8 records, or what is left for the last page, of
 * the kinds their positions need. On failure those records are zero again. */
static int read_page(struct trove_volume *v, uint64_t p, uint64_t total, uint64_t nseg,
                     struct trove_bytes *obj, struct trove_diag *diag)
{
    uint64_t first = p * PAGE, want = total - first < PAGE ? total - first : PAGE;
    uint32_t n;
    int rc;

    if ((rc = fetch(v, &v->pages[p], PAGE_MAX_BYTES, obj, "page", p, diag)) != TROVE_OK)
        return rc;
    rc = trove_recipe_v3_page_decode(obj->ptr, obj->len, v->sec + first, &n, diag);
    if (rc == TROVE_OK && n != want)
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "holds %u sections, not %llu", n,
                        (unsigned long long)want);
    for (uint32_t k = 0; rc == TROVE_OK && k < n; k++) {
        uint8_t kind = first + k < nseg ? TROVE_V3_KIND_COLUMN : TROVE_V3_KIND_DICT;
        if (v->sec[first + k].kind != kind)
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                            "section %llu is kind '%c'; column segments come first, then "
                            "dictionary chunks",
                            (unsigned long long)(first + k), v->sec[first + k].kind);
    }
    if (rc != TROVE_OK) {
        memset(v->sec + first, 0, PAGE * sizeof *v->sec);
        return reword(v, diag, rc, "page", p, &v->pages[p]);
    }
    return TROVE_OK;
}

static int load_v3(struct trove_volume *v, const uint8_t *buf, size_t len,
                   struct trove_diag *diag)
{
    struct trove_recipe_v3 m;
    struct patch_cache patch;
    struct trove_bytes obj = {0};
    struct trove_digest *raw = NULL;
    uint32_t *seg = NULL;
    uint8_t *named = NULL;
    uint64_t total;
    int rc;

    if ((rc = trove_recipe_v3_decode(buf, len, &m, diag)) != TROVE_OK)
        goto out;
    v3_header(v, &m);
    memset(&patch.d, 0, sizeof patch.d);
    patch.n = 0;
    total = m.nsegments + m.nchunks;
    v->nsec_seg = m.nsegments;
    /* Room for a whole page past the last section: a page decodes up to 8 records before
     * its count is checked against what the manifest leaves for it. */
    if (!(v->sec = trove__calloc((size_t)total + PAGE, sizeof *v->sec)) ||
        !(v->pages = trove__calloc((size_t)m.page_count + 1, sizeof *v->pages)) ||
        (m.slot_count > 0 && !(v->idx = trove__calloc((size_t)m.slot_count, 4))) ||
        !(seg = trove__malloc(SEG * sizeof *seg)) || !(raw = trove__malloc(SEG * sizeof *raw))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    v->npages = m.page_count;
    /* Pages: the section table. Segments must come first, then chunks. */
    for (uint32_t p = 0; p < m.page_count; p++) {
        trove_recipe_v3_page(&m, p, &v->pages[p]);
        if ((rc = read_page(v, p, total, m.nsegments, &obj, diag)) != TROVE_OK)
            goto out;
        v->nsec += total - v->nsec < PAGE ? total - v->nsec : PAGE;
    }
    /* The dictionary, at its stored indices; `named` marks the entries that hold a digest,
     * so that the column's check of each slot reads a bit, not the slot's digest. */
    if ((rc = trove__dict_reserve(&v->dict, m.dict_count)) != TROVE_OK ||
        (m.dict_count > 0 && !(named = trove__calloc((size_t)m.dict_count / 8 + 1, 1)))) {
        rc = rc != TROVE_OK ? rc : TROVE_ERR_NOMEM;
        goto out;
    }
    for (uint64_t c = 0; c < m.nchunks; c++) {
        const struct trove_v3_section *sc = &v->sec[m.nsegments + c];
        uint32_t n = (uint32_t)(m.dict_count - c * CHUNK < CHUNK ? m.dict_count - c * CHUNK
                                                                 : CHUNK);
        if ((rc = fetch(v, &sc->d, CHUNK_MAX_BYTES, &obj, "dictionary chunk", c, diag)))
            goto out;
        if ((rc = trove_recipe_v3_chunk_decode(obj.ptr, obj.len, n, raw, diag)) != TROVE_OK) {
            rc = reword(v, diag, rc, "dictionary chunk", c, &sc->d);
            goto out;
        }
        for (uint32_t k = 0; k < n; k++) {
            if (k + 8 < n) /* each entry lands at a random table slot: ask for it early */
                trove__dict_prefetch(&v->dict, &raw[k + 8]);
            rc = trove__dict_load_entry(&v->dict, (uint32_t)(c * CHUNK + k), &raw[k],
                                        m.version == 4);
            if (rc == TROVE_ERR_CORRUPT)
                rc = TROVE_FAIL(diag, rc, 0,
                                "volume '%s': dictionary entry %llu repeats a digest, or "
                                "entry 0 is not empty",
                                v->name, (unsigned long long)(c * CHUNK + k));
            if (rc != TROVE_OK)
                goto out;
            if (!trove_digest_is_zero(&raw[k])) {
                uint32_t x = (uint32_t)(c * CHUNK + k);
                named[x / 8] |= (uint8_t)(1u << (x % 8));
            }
        }
    }
    /* The column. Raw segments name digests; they join the dictionary. A patch is its base
     * segment (fetched and checked like any other) with a few slots replaced. */
    for (uint64_t sg = 0; sg < m.nsegments; sg++) {
        const struct trove_v3_section *sc = &v->sec[sg];
        uint32_t n = (uint32_t)(m.slot_count - sg * SEG < SEG ? m.slot_count - sg * SEG : SEG);
        uint8_t enc;
        if (sc->encoding == TROVE_V3_ENC_PATCH) {
            rc = load_patch(v, sg, n, m.dict_count, &obj, seg, &patch, diag);
            if (rc != TROVE_OK)
                goto out;
            enc = TROVE_V3_ENC_PACKED;
        } else {
            if ((rc = fetch(v, &sc->d, SEG_MAX_BYTES, &obj, "segment", sg, diag)) != TROVE_OK)
                goto out;
            rc = trove_recipe_v3_segment_decode(obj.ptr, obj.len, n, m.dict_count, seg, raw,
                                                &enc, diag);
            if (rc == TROVE_OK && enc != sc->encoding)
                rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                                "encoding %u disagrees with its page's %u", enc,
                                sc->encoding);
            if (rc != TROVE_OK) {
                rc = reword(v, diag, rc, "segment", sg, &sc->d);
                goto out;
            }
        }
        if (enc == TROVE_V3_ENC_RAW) {
            for (uint32_t k = 0; k < n; k++) {
                uint32_t x = 0;
                int created;
                if ((rc = trove__dict_intern(&v->dict, &raw[k], &x, &created)) != TROVE_OK)
                    goto out;
                load_slot(v, sg * SEG + k, x);
            }
            continue;
        }
        /* Indices into the stored dictionary (decode checked that each is below its
         * count). The counts are spread over the whole dictionary, so each increment is a
         * cache miss: ask for each a few slots ahead. */
        {
            uint32_t *refc = v->dict.refc, *dst = v->idx + sg * SEG;
            for (uint32_t k = 0; k < n; k++) {
                uint32_t x = seg[k];
                if (k + 32 < n)
                    __builtin_prefetch(&refc[seg[k + 32]], 1);
                if (x != 0 && !(named[x / 8] & (1u << (x % 8)))) {
                    rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                                    "slot %u names dictionary entry %u, which is free", k, x);
                    rc = reword(v, diag, rc, "segment", sg, &sc->d);
                    goto out;
                }
                dst[k] = x;
                refc[x] += x != 0;
            }
        }
    }
    if ((rc = trove__dict_finish_load(&v->dict)) != TROVE_OK)
        goto out;
    /* What loading itself changed (entries no slot names, raw digests) is already marked;
     * the chunks as stored are clean. */
    rc = TROVE_OK;
out:
    trove_bytes_free(&obj);
    free(named);
    free(seg);
    free(raw);
    return rc;
}

static int volume_read(struct trove_store *s, const char *name, int lazy,
                       struct trove_volume **out, struct trove_diag *diag);

/* ---- lazy volumes (docs/formats/recipe-v4.md, "Opening what a commit touches") ---- */

static int bit_get(const uint8_t *b, uint64_t i)
{
    return (b[i / 8] >> (i % 8)) & 1;
}

static void bit_set(uint8_t *b, uint64_t i)
{
    b[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* Page p of a lazy volume: its records into v->sec (checked against their positions). */
static int lazy_page(struct trove_volume *v, uint64_t p, struct trove_diag *diag)
{
    struct trove_bytes obj = {0};
    int rc;

    if (p >= v->lazy_pages || bit_get(v->page_ok, p))
        return TROVE_OK;
    if ((rc = read_page(v, p, v->nsec, v->nsec_seg, &obj, diag)) == TROVE_OK)
        bit_set(v->page_ok, p);
    trove_bytes_free(&obj);
    return rc;
}

/* Dictionary chunk c of a lazy volume: its entries at their indices, counts unknown. */
static int lazy_chunk(struct trove_volume *v, uint64_t c, struct trove_diag *diag)
{
    struct trove_bytes obj = {0};
    struct trove_digest *raw = NULL;
    const struct trove_v3_section *sc;
    uint32_t n = (uint32_t)(v->lazy_dict - c * CHUNK < CHUNK ? v->lazy_dict - c * CHUNK : CHUNK);
    int rc;

    if (c >= v->lazy_chunks || bit_get(v->chunk_ok, c))
        return TROVE_OK;
    if ((rc = lazy_page(v, (v->nsec_seg + c) / PAGE, diag)) != TROVE_OK)
        return rc;
    sc = &v->sec[v->nsec_seg + c];
    if (!(raw = trove__malloc(CHUNK * sizeof *raw))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if ((rc = fetch(v, &sc->d, CHUNK_MAX_BYTES, &obj, "dictionary chunk", c, diag)) != TROVE_OK)
        goto out;
    if ((rc = trove_recipe_v3_chunk_decode(obj.ptr, obj.len, n, raw, diag)) != TROVE_OK) {
        rc = reword(v, diag, rc, "dictionary chunk", c, &sc->d);
        goto out;
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t x = (uint32_t)(c * CHUNK + k);
        if ((rc = trove__dict_load_entry(&v->dict, x, &raw[k], 1)) != TROVE_OK) {
            if (rc == TROVE_ERR_CORRUPT)
                rc = TROVE_FAIL(diag, rc, 0, "volume '%s': dictionary entry 0 is not empty",
                                v->name);
            goto out;
        }
        v->dict.refc[x] = trove_digest_is_zero(&raw[k]) ? 0 : TROVE__LAZY_REFC;
    }
    bit_set(v->chunk_ok, c);
out:
    trove_bytes_free(&obj);
    free(raw);
    return rc;
}

/* Column segment sg of a lazy volume into v->idx. */
static int lazy_segment(struct trove_volume *v, uint64_t sg, struct trove_diag *diag)
{
    struct trove_bytes obj = {0};
    struct trove_digest *raw = NULL;
    struct patch_cache *pc = NULL;
    uint32_t n = (uint32_t)(v->slot_count - sg * SEG < SEG ? v->slot_count - sg * SEG : SEG);
    uint32_t *dst = v->idx + sg * SEG;
    uint8_t enc;
    int rc;

    if (!v->lazy || bit_get(v->seg_ok, sg))
        return TROVE_OK;
    if ((rc = lazy_page(v, sg / PAGE, diag)) != TROVE_OK)
        return rc;
    if (!(raw = trove__malloc(SEG * sizeof *raw)) || !(pc = trove__calloc(1, sizeof *pc))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if (v->sec[sg].encoding == TROVE_V3_ENC_PATCH) {
        if ((rc = load_patch(v, sg, n, v->lazy_dict, &obj, dst, pc, diag)) != TROVE_OK)
            goto out;
        enc = TROVE_V3_ENC_PACKED;
    } else {
        if ((rc = fetch(v, &v->sec[sg].d, SEG_MAX_BYTES, &obj, "segment", sg, diag)))
            goto out;
        rc = trove_recipe_v3_segment_decode(obj.ptr, obj.len, n, v->lazy_dict, dst, raw, &enc,
                                            diag);
        if (rc == TROVE_OK && enc != v->sec[sg].encoding)
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "encoding %u disagrees with its page's %u",
                            enc, v->sec[sg].encoding);
        if (rc != TROVE_OK) {
            memset(dst, 0, n * sizeof *dst);
            rc = reword(v, diag, rc, "segment", sg, &v->sec[sg].d);
            goto out;
        }
    }
    /* A raw segment names digests: they join the dictionary (found there, or new). */
    for (uint32_t k = 0; enc == TROVE_V3_ENC_RAW && k < n; k++) {
        uint32_t x = 0;
        int created;
        if ((rc = trove__dict_intern(&v->dict, &raw[k], &x, &created)) != TROVE_OK) {
            memset(dst, 0, n * sizeof *dst);
            goto out;
        }
        if (x != 0)
            trove__dict_ref(&v->dict, x);
        dst[k] = x;
    }
    bit_set(v->seg_ok, sg);
out:
    trove_bytes_free(&obj);
    free(pc);
    free(raw);
    return rc;
}

int trove__volume_entry_known(const struct trove_volume *v, uint32_t x)
{
    uint64_t c = x / CHUNK;
    return x == 0 || !v->lazy || c >= v->lazy_chunks || bit_get(v->chunk_ok, c);
}

/* Entry x's digest into *out from its chunk, kept in v->peek (one chunk, fetched and
 * checked once for the slots that follow): a read needs the digest, not the chunk in the
 * lookup table, and a thousand random slots would otherwise table a thousand chunks. */
static int peek_entry(struct trove_volume *v, uint32_t x, struct trove_digest *out,
                      struct trove_diag *diag)
{
    uint64_t c = x / CHUNK;
    struct trove_bytes obj = {0};
    const struct trove_v3_section *sc;
    uint32_t n = (uint32_t)(v->lazy_dict - c * CHUNK < CHUNK ? v->lazy_dict - c * CHUNK : CHUNK);
    int rc;

    if (trove__volume_entry_known(v, x)) {
        *out = v->dict.digests[x];
        return TROVE_OK;
    }
    if (v->peek_c != c + 1) {
        if ((rc = lazy_page(v, (v->nsec_seg + c) / PAGE, diag)) != TROVE_OK)
            return rc;
        sc = &v->sec[v->nsec_seg + c];
        if (!v->peek && !(v->peek = trove__malloc(CHUNK * sizeof *v->peek)))
            return TROVE_ERR_NOMEM;
        v->peek_c = 0;
        rc = fetch(v, &sc->d, CHUNK_MAX_BYTES, &obj, "dictionary chunk", c, diag);
        if (rc == TROVE_OK &&
            (rc = trove_recipe_v3_chunk_decode(obj.ptr, obj.len, n, v->peek, diag)) != TROVE_OK)
            rc = reword(v, diag, rc, "dictionary chunk", c, &sc->d);
        trove_bytes_free(&obj);
        if (rc != TROVE_OK)
            return rc;
        v->peek_c = c + 1;
    }
    *out = v->peek[x % CHUNK];
    return TROVE_OK;
}

int trove__volume_slot(struct trove_volume *v, uint64_t i, uint32_t *x, struct trove_digest *d,
                       struct trove_diag *diag)
{
    int rc;

    *x = 0;
    if (!diag) { /* what trove_volume_last_error says: this load's failure, or nothing */
        diag = &v->err;
        v->err.msg[0] = 0;
    }
    if (v->lazy && (rc = lazy_segment(v, i / SEG, diag)) != TROVE_OK)
        return rc;
    *x = v->idx[i];
    if (!d)
        return TROVE_OK;
    if ((rc = peek_entry(v, *x, d, diag)) != TROVE_OK)
        return rc;
    if (*x != 0 && trove_digest_is_zero(d))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "volume '%s': slot %llu names dictionary entry %u, which is free",
                          v->name, (unsigned long long)i, *x);
    return TROVE_OK;
}

int trove__volume_load_all(struct trove_volume *v, struct trove_diag *diag)
{
    uint64_t nseg = v->nsec_seg;
    int rc;

    if (!v->lazy)
        return TROVE_OK;
    if (!diag) {
        diag = &v->err;
        v->err.msg[0] = 0;
    }
    for (uint64_t c = 0; c < v->lazy_chunks; c++)
        if ((rc = lazy_chunk(v, c, diag)) != TROVE_OK)
            return rc;
    for (uint64_t sg = 0; sg < nseg; sg++)
        if ((rc = lazy_segment(v, sg, diag)) != TROVE_OK)
            return rc;
    /* Every count exact: the slots', nothing else. */
    memset(v->dict.refc, 0, (size_t)v->dict.len * sizeof *v->dict.refc);
    for (uint64_t i = 0; i < v->slot_count; i++) {
        uint32_t x = v->idx[i];
        if (x == 0)
            continue;
        if (trove_digest_is_zero(&v->dict.digests[x]))
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                              "volume '%s': slot %llu names dictionary entry %u, which is free",
                              v->name, (unsigned long long)i, x);
        v->dict.refc[x]++;
    }
    if ((rc = trove__dict_finish_load(&v->dict)) != TROVE_OK) /* frees the stale entries */
        return rc;
    free(v->page_ok);
    free(v->seg_ok);
    free(v->chunk_ok);
    v->page_ok = v->seg_ok = v->chunk_ok = NULL;
    v->lazy = 0;
    v->stale = 0;
    return TROVE_OK;
}

static int open_lazy_v3(struct trove_volume *v, const uint8_t *buf, size_t len,
                        struct trove_diag *diag)
{
    struct trove_recipe_v3 m;
    int rc;

    if ((rc = trove_recipe_v3_decode(buf, len, &m, diag)) != TROVE_OK)
        return rc;
    v3_header(v, &m);
    v->nsec_seg = m.nsegments;
    v->nsec = m.nsegments + m.nchunks;
    v->npages = v->lazy_pages = m.page_count;
    v->lazy_chunks = m.nchunks;
    v->lazy_dict = m.dict_count;
    v->stale = m.stale;
    v->lazy = 1;
    /* Zeroed by the allocator page by page as they are touched: opening a large volume
     * costs its manifest, not its slot count. */
    if (!(v->sec = trove__calloc((size_t)v->nsec + PAGE, sizeof *v->sec)) ||
        !(v->pages = trove__calloc((size_t)m.page_count + 1, sizeof *v->pages)) ||
        (m.slot_count > 0 && !(v->idx = trove__calloc((size_t)m.slot_count, 4))) ||
        !(v->page_ok = trove__calloc((size_t)m.page_count / 8 + 1, 1)) ||
        !(v->seg_ok = trove__calloc((size_t)m.nsegments / 8 + 1, 1)) ||
        !(v->chunk_ok = trove__calloc((size_t)m.nchunks / 8 + 1, 1)))
        return TROVE_ERR_NOMEM;
    for (uint32_t p = 0; p < m.page_count; p++)
        trove_recipe_v3_page(&m, p, &v->pages[p]);
    if ((rc = trove__dict_open_sparse(&v->dict, m.dict_count)) != TROVE_OK)
        return rc;
    /* What any commit may rewrite without touching a slot: the last page (a chunk
     * appended to the dictionary changes it) and the tail chunk (new entries go there). */
    if ((rc = lazy_page(v, m.page_count - 1, diag)) != TROVE_OK ||
        (rc = lazy_chunk(v, m.nchunks - 1, diag)) != TROVE_OK)
        return rc;
    trove__dict_clear_dirty(&v->dict);
    return TROVE_OK;
}

int trove__volume_open_lazy(struct trove_store *s, const char *name, struct trove_volume **out,
                            struct trove_diag *diag)
{
    return volume_read(s, name, 1, out, diag);
}

/* Read volume name's recipe: whole, or with lazy set and a v3 or v4 recipe, lazily. */
static int volume_read(struct trove_store *s, const char *name, int lazy,
                       struct trove_volume **out, struct trove_diag *diag)
{
    struct trove_bytes buf = {0};
    struct trove_volume *v = NULL;
    char path[4096];
    uint32_t version;
    int rc;

    *out = NULL;
    if ((rc = trove__recipe_read(s, name, &buf, diag)) != TROVE_OK)
        goto out;
    if (!(v = trove__volume_new(s, name))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    trove__recipe_path(s, name, path, sizeof path);
    rc = trove_recipe_version(buf.ptr, buf.len, &version, diag);
    if (rc == TROVE_OK)
        rc = version == 1 ? load_v1(v, buf.ptr, buf.len, diag)
             : lazy       ? open_lazy_v3(v, buf.ptr, buf.len, diag)
                          : load_v3(v, buf.ptr, buf.len, diag);
    if (rc != TROVE_OK) {
        if (diag && rc != TROVE_ERR_NOMEM && strncmp(diag->msg, "volume '", 8) != 0) {
            char msg[sizeof diag->msg];
            snprintf(msg, sizeof msg, "%s", diag->msg);
            TROVE_FAIL(diag, rc, diag->offset, "%s: %s (at byte %llu)", path, msg,
                       (unsigned long long)diag->offset);
        }
        goto out;
    }
    v->recipe_bytes = buf.len;
    v->recipe_sum = trove__recipe_checksum(buf.ptr, buf.len);
    *out = v;
    v = NULL;
out:
    trove__volume_free(v);
    trove_bytes_free(&buf);
    return rc;
}

int trove__volume_load(struct trove_store *s, const char *name, struct trove_volume **out,
                       struct trove_diag *diag)
{
    return volume_read(s, name, 0, out, diag);
}

/* ---- committing ---------------------------------------------------------------------- */

struct commit_ctx {
    struct trove_volume *v;
    struct refmap staged; /* digests staged by this commit */
    struct trove_bytes buf;
    uint64_t bytes, objects;
    uint64_t overhead; /* what publishing the batch wrote besides the objects */
};

/* Name buf's bytes and stage them unless this commit staged them already (the backend
 * skips an object it holds). */
static int stage(struct commit_ctx *c, struct trove_digest *d_out)
{
    struct trove_store *s = c->v->s;
    int created;

    trove_digest_of(c->buf.ptr, c->buf.len, d_out);
    if (!trove__refmap_insert(&c->staged, d_out, &created))
        return TROVE_ERR_NOMEM;
    if (!created)
        return TROVE_OK;
    c->bytes += c->buf.len;
    c->objects++;
    return trove_backend_stage(s->be, d_out, c->buf.ptr, c->buf.len);
}

static int same_section(const struct trove_v3_section *a, const struct trove_v3_section *b)
{
    return trove_digest_equal(&a->d, &b->d) && a->kind == b->kind && a->encoding == b->encoding;
}

static int seg_is_dirty(const struct trove_volume *v, uint64_t sg)
{
    return sg < v->seg_cap && (v->seg_dirty[sg / 8] & (1u << (sg % 8)));
}

/*
 * The slots of each patchable column segment that changed since the commit, with their
 * committed indices: for segment sg, entries [start[sg], start[sg + 1]) of ent. Only the
 * segments that were full (1024 slots) in the committed recipe and have at most
 * PATCH_MAX changed slots get entries; the rest need a full segment anyway.
 */
struct dirty_ent {
    uint16_t off;
    uint32_t old_idx;
};

struct dirty_index {
    uint64_t nseg;
    uint32_t *start; /* nseg + 1 */
    uint8_t *many;   /* nseg: more than PATCH_MAX slots changed (no entries kept) */
    struct dirty_ent *ent;
};

static int dirty_index_build(const struct trove_volume *v, struct dirty_index *di)
{
    uint64_t nseg = v->committed_slots / SEG; /* the full committed segments */
    uint32_t *cnt = NULL;
    uint64_t sum = 0;
    int rc = TROVE_ERR_NOMEM;

    memset(di, 0, sizeof *di);
    if (nseg > v->nsec_seg)
        nseg = v->nsec_seg;
    di->nseg = nseg;
    if (!(di->start = trove__calloc((size_t)nseg + 1, sizeof *di->start)) ||
        !(di->many = trove__calloc((size_t)nseg + 1, 1)) ||
        !(cnt = trove__calloc((size_t)nseg + 1, sizeof *cnt)))
        goto out;
    for (size_t k = 0; k < v->nundo; k++) {
        uint64_t sg = v->undo[k].slot / SEG;
        if (sg < nseg && cnt[sg] <= TROVE_RECIPE_V3_PATCH_MAX)
            cnt[sg]++;
    }
    for (uint64_t sg = 0; sg < nseg; sg++) {
        di->start[sg] = (uint32_t)sum;
        di->many[sg] = cnt[sg] > TROVE_RECIPE_V3_PATCH_MAX;
        sum += di->many[sg] ? 0 : cnt[sg];
        cnt[sg] = di->start[sg]; /* now the next free entry */
    }
    di->start[nseg] = (uint32_t)sum;
    if (sum > 0 && !(di->ent = trove__malloc((size_t)sum * sizeof *di->ent)))
        goto out;
    for (size_t k = 0; k < v->nundo; k++) {
        uint64_t sg = v->undo[k].slot / SEG;
        if (sg >= nseg || di->start[sg + 1] - di->start[sg] == 0)
            continue;
        di->ent[cnt[sg]].off = (uint16_t)(v->undo[k].slot % SEG);
        di->ent[cnt[sg]].old_idx = v->undo[k].old_idx;
        cnt[sg]++;
    }
    rc = TROVE_OK;
out:
    free(cnt);
    return rc;
}

static void dirty_index_free(struct dirty_index *di)
{
    free(di->start);
    free(di->many);
    free(di->ent);
}

/* Free a patch table of n entries and the patches in it that other[0..nother) does not
 * hold at the same position (a commit's new table shares the unchanged ones). */
static void free_patches_unshared(struct seg_patch **tab, uint64_t n, struct seg_patch **other,
                                  uint64_t nother)
{
    for (uint64_t k = 0; tab && k < n; k++)
        if (tab[k] && !(other && k < nother && other[k] == tab[k]))
            free(tab[k]);
    free(tab);
}

/*
 * Segment sg changed: the patch against its base that gives its current slots, if one can
 * be written. The base is the committed segment itself when that is a packed one, or the
 * committed patch's base. A slot differs from the base if it is patched now and still
 * differs from the base's index there, or changed since the commit (from the committed
 * index, which is the base's unless the slot is patched). Returns 1 with *p filled (p->k
 * may be 0: the segment equals its base again), 0 if no patch applies (too many slots, not
 * a full segment, or no packed base).
 */
static int make_patch(const struct trove_volume *v, const struct dirty_index *di, uint64_t sg,
                      struct trove_v3_patch *p, uint32_t *bval)
{
    const struct seg_patch *old = v->patch && sg < v->nsec_seg ? v->patch[sg] : NULL;
    const uint32_t *cur = v->idx + sg * SEG;
    struct dirty_ent d[TROVE_RECIPE_V3_PATCH_MAX];
    uint32_t nd, i = 0, j = 0, ok = 1;

    if (sg >= di->nseg || di->many[sg] || (!old && v->sec[sg].encoding != TROVE_V3_ENC_PACKED) ||
        (uint64_t)(sg + 1) * SEG > v->slot_count)
        return 0;
    nd = di->start[sg + 1] - di->start[sg];
    if (nd == 0 && !old)
        return 0; /* dirty without a logged slot: cannot tell what changed */
    memcpy(d, di->ent + di->start[sg], nd * sizeof *d);
    for (uint32_t a = 1; a < nd; a++) { /* insertion sort by slot: at most 64 */
        struct dirty_ent x = d[a];
        uint32_t b = a;
        for (; b > 0 && d[b - 1].off > x.off; b--)
            d[b] = d[b - 1];
        d[b] = x;
    }
    p->base = old ? old->base : v->sec[sg].d;
    p->k = 0;
    /* Merge the patched slots (base index known) with the changed ones. */
    while (ok && (i < (old ? old->k : 0) || j < nd)) {
        uint16_t off;
        uint32_t base_idx;
        if (old && i < old->k && (j >= nd || old->off[i] <= d[j].off)) {
            off = old->off[i];
            base_idx = old->bval[i];
            if (j < nd && d[j].off == off)
                j++;
            i++;
        } else {
            off = d[j].off;
            base_idx = d[j].old_idx;
            j++;
        }
        if (cur[off] == base_idx)
            continue;
        if (p->k == TROVE_RECIPE_V3_PATCH_MAX) {
            ok = 0;
            break;
        }
        p->off[p->k] = off;
        p->idx[p->k] = cur[off];
        bval[p->k] = base_idx;
        p->k++;
    }
    return ok;
}

/* Write the v3 objects that changed; fill the new section, patch and page tables. */
static int write_v3_objects(struct commit_ctx *c, struct trove_v3_section **sec_out,
                            struct seg_patch ***patch_out, uint64_t *nseg_out,
                            uint64_t *nsec_out, struct trove_digest **pages_out,
                            uint64_t *npages_out)
{
    struct trove_volume *v = c->v;
    int was_v3 = (v->committed_format == TROVE_RECIPE_FORMAT_V3 ||
                  v->committed_format == TROVE_RECIPE_FORMAT_V4) && !v->rewrite_all;
    uint64_t nseg = trove__div_up(v->slot_count, SEG), nch = trove__div_up(v->dict.len, CHUNK);
    uint64_t total = nseg + nch, npages = trove__div_up(total, PAGE);
    uint64_t old_nch = was_v3 ? v->nsec - v->nsec_seg : 0;
    struct trove_v3_section *sec = trove__calloc((size_t)total + 1, sizeof *sec);
    struct trove_digest *pages = trove__calloc((size_t)npages + 1, sizeof *pages);
    struct seg_patch **patch = NULL;
    struct dirty_index di = {0};
    struct trove_v3_patch pt;
    uint32_t bval[TROVE_RECIPE_V3_PATCH_MAX];
    int rc = TROVE_ERR_NOMEM;

    if (!sec || !pages)
        goto out;
    if (was_v3 && (rc = dirty_index_build(v, &di)) != TROVE_OK)
        goto out;
    for (uint64_t sg = 0; sg < nseg; sg++) {
        uint32_t n = (uint32_t)(v->slot_count - sg * SEG < SEG ? v->slot_count - sg * SEG : SEG);
        int patched = 0;
        if (was_v3 && sg < v->nsec_seg && !seg_is_dirty(v, sg)) {
            sec[sg] = v->sec[sg];
            if (v->patch && v->patch[sg]) { /* the same patch, shared until the swap */
                if (!patch && !(patch = trove__calloc((size_t)nseg, sizeof *patch))) {
                    rc = TROVE_ERR_NOMEM;
                    goto out;
                }
                patch[sg] = v->patch[sg];
            }
            continue;
        }
        sec[sg].kind = TROVE_V3_KIND_COLUMN;
        sec[sg].encoding = TROVE_V3_ENC_PACKED;
        c->buf.len = 0;
        if ((rc = trove_recipe_v3_segment_encode(v->idx + sg * SEG, n, &c->buf)) != TROVE_OK)
            goto out;
        if (was_v3 && make_patch(v, &di, sg, &pt, bval)) {
            if (pt.k == 0) { /* back to its base, which is durable: a committed recipe names it */
                sec[sg].d = pt.base;
                continue;
            }
            patched = c->buf.len > TROVE_RECIPE_V3_PATCH_LEN(pt.k);
        }
        if (patched) {
            struct seg_patch *sp;
            if ((!patch && !(patch = trove__calloc((size_t)nseg, sizeof *patch))) ||
                !(sp = patch[sg] = trove__malloc(sizeof *sp))) {
                rc = TROVE_ERR_NOMEM;
                goto out;
            }
            sp->base = pt.base;
            sp->k = pt.k;
            memcpy(sp->off, pt.off, pt.k * sizeof *pt.off);
            memcpy(sp->bval, bval, pt.k * sizeof *bval);
            c->buf.len = 0;
            if ((rc = trove_recipe_v3_patch_encode(&pt, n, &c->buf)) != TROVE_OK)
                goto out;
            sec[sg].encoding = TROVE_V3_ENC_PATCH;
        }
        if ((rc = stage(c, &sec[sg].d)) != TROVE_OK)
            goto out;
    }
    for (uint64_t ch = 0; ch < nch; ch++) {
        uint32_t n = (uint32_t)(v->dict.len - ch * CHUNK < CHUNK ? v->dict.len - ch * CHUNK
                                                                 : CHUNK);
        struct trove_v3_section *x = &sec[nseg + ch];
        if (was_v3 && ch < old_nch && !trove__dict_chunk_dirty(&v->dict, (uint32_t)ch)) {
            *x = v->sec[v->nsec_seg + ch];
            continue;
        }
        c->buf.len = 0;
        rc = trove_recipe_v3_chunk_encode(v->dict.digests + ch * CHUNK, n, &c->buf);
        if (rc != TROVE_OK || (rc = stage(c, &x->d)) != TROVE_OK)
            goto out;
        x->kind = TROVE_V3_KIND_DICT;
        x->encoding = TROVE_V3_ENC_NONE;
    }
    for (uint64_t p = 0; p < npages; p++) {
        uint64_t first = p * PAGE, n = total - first < PAGE ? total - first : PAGE;
        int same = was_v3 && p < v->npages;
        /* The old page p listed the old table's sections [first, first + PAGE): it still
         * serves if the new table holds the same records at the same positions. */
        for (uint64_t k = 0; same && k < PAGE; k++) {
            uint64_t j = first + k;
            int old_has = j < v->nsec, new_has = k < n;
            if (old_has != new_has || (new_has && !same_section(&v->sec[j], &sec[j])))
                same = 0;
        }
        if (same || (v->lazy && p < v->lazy_pages && !bit_get(v->page_ok, p))) {
            /* (A page never loaded lists nothing that changed: a changed section's page
             * was loaded to reach it.) */
            pages[p] = v->pages[p];
            continue;
        }
        if (v->lazy && p < v->lazy_pages)
            bit_set(v->page_ok, p); /* re-encoded: every record of it is known */
        c->buf.len = 0;
        if ((rc = trove_recipe_v3_page_encode(sec + first, (uint32_t)n, &c->buf)) != TROVE_OK ||
            (rc = stage(c, &pages[p])) != TROVE_OK)
            goto out;
    }
    *sec_out = sec;
    *patch_out = patch;
    *nseg_out = nseg;
    *nsec_out = total;
    *pages_out = pages;
    *npages_out = npages;
    sec = NULL;
    pages = NULL;
    patch = NULL;
    rc = TROVE_OK;
out:
    dirty_index_free(&di);
    free_patches_unshared(patch, nseg, v->patch, v->nsec_seg);
    free(sec);
    free(pages);
    return rc;
}

int trove__volume_write_recipe(struct trove_volume *v)
{
    struct trove_store *s = v->s;
    struct commit_ctx c;
    struct trove_v3_section *sec = NULL;
    struct seg_patch **patch = NULL;
    struct trove_digest *pages = NULL;
    uint64_t nseg = 0, nsec = 0, npages = 0, gen = v->generation + 1;
    int rc;

    memset(&c, 0, sizeof c);
    c.v = v;
    /* Objects are durable before the recipe that names them. */
    if ((rc = trove__store_drain(s)) != TROVE_OK)
        goto out;
    /* A v1 recipe lists every slot; a v4 one whose stale entries pass a quarter of its
     * dictionary loads the rest of the recipe, which frees them. */
    if (v->lazy && (v->format == TROVE_RECIPE_FORMAT_V1 || v->stale > (v->dict.len - 1) / 4) &&
        (rc = trove__volume_load_all(v, NULL)) != TROVE_OK)
        goto out;
    if (v->format == TROVE_RECIPE_FORMAT_V1) {
        uint64_t len = TROVE_RECIPE_V1_LEN(v->slot_count);
        if (len > SIZE_MAX || (rc = trove_bytes_reserve(&c.buf, (size_t)len)) != TROVE_OK) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        for (uint64_t i = 0; i < v->slot_count; i++)
            memcpy(c.buf.ptr + TROVE_RECIPE_V1_HEADER + 16 * i, vol_digest(v, i), 16);
        trove_recipe_v1_seal(c.buf.ptr, v->size, v->block_size, v->flags, gen, v->slot_count);
        c.buf.len = (size_t)len;
    } else {
        rc = write_v3_objects(&c, &sec, &patch, &nseg, &nsec, &pages, &npages);
        if (rc == TROVE_OK)
            rc = trove_backend_publish(s->be, &c.overhead);
        if (rc != TROVE_OK)
            goto out;
        c.buf.len = 0;
        rc = trove_recipe_v4_encode(v->size, v->block_size, v->flags, gen, v->dict.len,
                                    v->stale, pages, (uint32_t)npages, &c.buf);
        if (rc != TROVE_OK)
            goto out;
    }
    /* The commit point: after this the new recipe is the volume's, and nothing else needs
     * writing — there are no store-wide counts to move. */
    if ((rc = trove__recipe_publish(s, v->name, c.buf.ptr, c.buf.len)) != TROVE_OK)
        goto out;
    /* Committed: the undo log and its bitmap are cleared, O(changed slots). */
    for (size_t k = 0; k < v->nundo; k++) {
        const struct undo_entry *u = &v->undo[k];
        v->dirty_bits[u->slot / 8] &= (uint8_t)~(1u << (u->slot % 8));
    }
    v->nundo = 0;
    free_patches_unshared(v->patch, v->nsec_seg, patch, nseg);
    free(v->sec);
    free(v->pages);
    v->sec = sec;
    v->nsec = nsec;
    v->nsec_seg = nseg;
    v->patch = patch;
    v->pages = pages;
    v->npages = npages;
    v->committed_slots = v->slot_count;
    sec = NULL;
    patch = NULL;
    pages = NULL;
    if (v->seg_dirty)
        memset(v->seg_dirty, 0, (size_t)(v->seg_cap / 8));
    trove__dict_clear_dirty(&v->dict);
    v->committed_format = v->format;
    v->rewrite_all = 0;
    v->generation = gen;
    v->recipe_bytes = c.buf.len;
    v->dirty = 0;
    /* The objects, what the backend wrote around them, and the recipe file. */
    v->last_commit_bytes = c.bytes + c.overhead + c.buf.len;
    v->last_commit_objects = c.objects;
    v->recipe_sum = trove__recipe_checksum(c.buf.ptr, c.buf.len);
    rc = TROVE_OK;
out:
    free_patches_unshared(patch, nseg, v->patch, v->nsec_seg);
    free(sec);
    free(pages);
    trove__refmap_free(&c.staged);
    trove_bytes_free(&c.buf);
    return rc;
}
