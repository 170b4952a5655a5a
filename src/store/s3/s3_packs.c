/*
 * s3_packs.c: the S3 backend's in-memory index of its packs (s3_packs.h has the
 * invariants). Lookups of a live object are one hash probe; the questions that need a
 * pack's own lists (is d live in this pack, which other packs hold d) are binary searches
 * over its sorted entries and dead list, asked only on deletes and lost packs, and only
 * of the packs a second copy may be in (the map entry's count of other copies says
 * whether there is any).
 */
#include "s3_packs.h"
#include "common/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_digest(const void *a, const void *b) { return memcmp(a, b, 16); }

static int cmp_entry(const void *a, const void *b)
{
    const struct trove__pack_entry *x = a, *y = b;
    return memcmp(x->d.b, y->d.b, 16);
}

static const struct trove__pack_entry *entry_of(const struct trove__s3_pack *p,
                                                const struct trove_digest *d)
{
    struct trove__pack_entry key;
    if (p->n == 0)
        return NULL;
    key.d = *d;
    return bsearch(&key, p->e, p->n, sizeof *p->e, cmp_entry);
}

static int is_dead(const struct trove__s3_pack *p, const struct trove_digest *d)
{
    return p->ndead > 0 && bsearch(d, p->dead, p->ndead, sizeof *p->dead, cmp_digest) != NULL;
}

/* d's entry in p if it is live there, else NULL. */
static const struct trove__pack_entry *live_in(const struct trove__s3_pack *p,
                                               const struct trove_digest *d)
{
    const struct trove__pack_entry *e;
    if (p->gone || !(e = entry_of(p, d)))
        return NULL;
    return is_dead(p, d) ? NULL : e;
}

/* Sort e and keep each digest once; the new count. */
static size_t sort_unique_entries(struct trove__pack_entry *e, size_t n)
{
    size_t k = 0;
    if (n == 0)
        return 0;
    qsort(e, n, sizeof *e, cmp_entry);
    for (size_t i = 1; i < n; i++)
        if (memcmp(e[i].d.b, e[k].d.b, 16) != 0)
            e[++k] = e[i];
    return k + 1;
}

/* Sort dead, keep each digest once and only digests of entries; the new count. */
static size_t sort_filter_dead(const struct trove__s3_pack *p, struct trove_digest *dead,
                               size_t n)
{
    size_t k = 0;
    if (n == 0)
        return 0;
    qsort(dead, n, sizeof *dead, cmp_digest);
    for (size_t i = 0; i < n; i++)
        if ((k == 0 || memcmp(dead[i].b, dead[k - 1].b, 16) != 0) && entry_of(p, &dead[i]))
            dead[k++] = dead[i];
    return k;
}

long trove__s3_packs_slot(const struct trove__s3_packs *x, const char *hex)
{
    struct trove_digest name;
    const struct ref_entry *m;

    if (trove_digest_parse(hex, &name) != TROVE_OK || !(m = trove__refmap_find(&x->names, &name)))
        return -1;
    return (long)m->dict_index;
}

static long bad_slot(const struct trove__s3_packs *x, const char *hex)
{
    for (size_t i = 0; i < x->nbad; i++)
        if (strcmp(x->bad[i].hex, hex) == 0)
            return (long)i;
    return -1;
}

int trove__s3_packs_known(const struct trove__s3_packs *x, const char *hex)
{
    long i = trove__s3_packs_slot(x, hex);
    return (i >= 0 && !x->p[i].gone) || bad_slot(x, hex) >= 0;
}

int trove__s3_packs_was_dead(const struct trove__s3_packs *x, const struct trove_digest *d)
{
    for (size_t i = 0; i < x->n; i++) {
        const struct trove__s3_pack *p = &x->p[i];
        size_t lo = 0, hi = p->ndead;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            int c = memcmp(p->dead[mid].b, d->b, 16);
            if (c == 0)
                return 1;
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    return 0;
}

const struct ref_entry *trove__s3_packs_find(const struct trove__s3_packs *x,
                                             const struct trove_digest *d)
{
    return trove__refmap_find(&x->map, d);
}

/* Pack slot no longer holds d live: move the map entry to another copy, or forget it. */
static void unmap(struct trove__s3_packs *x, uint32_t slot, const struct trove_digest *d)
{
    struct ref_entry *m = trove__refmap_find(&x->map, d);

    if (!m)
        return;
    if (m->dict_index != slot) { /* the map reads another copy: one copy fewer */
        if (m->live > 0)
            m->live--;
        return;
    }
    for (size_t q = x->n; m->live > 0 && q-- > 0;) { /* newest first: a repack is last */
        const struct trove__pack_entry *e;
        if (q == slot || !(e = live_in(&x->p[q], d)))
            continue;
        m->dict_index = (uint32_t)q;
        m->committed = e->offset;
        m->len = e->len;
        m->live--;
        return;
    }
    trove__refmap_remove(&x->map, m);
}

static void free_lists(struct trove__s3_pack *p)
{
    free(p->e);
    free(p->dead);
    p->e = NULL;
    p->dead = NULL;
    p->n = p->nlive = p->ndead = 0;
    p->data_bytes = p->live_bytes = 0;
}

void trove__s3_packs_drop(struct trove__s3_packs *x, uint32_t slot)
{
    struct trove__s3_pack *p = &x->p[slot];

    if (p->gone)
        return;
    for (size_t k = 0; k < p->n; k++)
        if (!is_dead(p, &p->e[k].d))
            unmap(x, slot, &p->e[k].d);
    free_lists(p);
    p->gone = 1;
}

/* A slot for hex: its old one (emptied) or a new one. Fails only before any change. */
static int take_slot(struct trove__s3_packs *x, const char *hex, uint32_t *out)
{
    struct trove_digest name;
    struct ref_entry *m;
    long i = trove__s3_packs_slot(x, hex);
    int created, rc;

    if (i >= 0) {
        trove__s3_packs_drop(x, (uint32_t)i);
        *out = (uint32_t)i;
        return TROVE_OK;
    }
    if (trove_digest_parse(hex, &name) != TROVE_OK || strlen(hex) != 32)
        return TROVE_ERR_INVALID;
    if (x->n >= UINT32_MAX)
        return TROVE_ERR_LIMIT;
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 16;
        struct trove__s3_pack *p = cap > SIZE_MAX / sizeof *p ? NULL
                                                              : trove__realloc(x->p, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        x->p = p;
        x->cap = cap;
    }
    if ((rc = trove__refmap_reserve(&x->names, 1)) != TROVE_OK)
        return rc;
    m = trove__refmap_insert(&x->names, &name, &created); /* reserved: cannot fail */
    m->dict_index = (uint32_t)x->n;
    memset(&x->p[x->n], 0, sizeof x->p[0]);
    snprintf(x->p[x->n].hex, sizeof x->p[0].hex, "%s", hex);
    *out = (uint32_t)x->n++;
    return TROVE_OK;
}

int trove__s3_packs_add(struct trove__s3_packs *x, const char *hex, uint64_t size, int64_t mtime,
                        struct trove__pack_entry *e, size_t n, struct trove_digest *dead,
                        size_t ndead, uint32_t *slot_out)
{
    struct trove__s3_pack *p;
    uint32_t slot;
    long b;
    int rc;

    uint64_t index_bytes = (uint64_t)n * TROVE__PACK_ENTRY + TROVE__PACK_FOOTER;

    n = sort_unique_entries(e, n);
    /* Room first: past this point nothing can fail, so an error changes nothing. */
    if ((rc = trove__refmap_reserve(&x->map, n)) != TROVE_OK ||
        (rc = take_slot(x, hex, &slot)) != TROVE_OK) {
        free(e);
        free(dead);
        return rc;
    }
    p = &x->p[slot];
    p->size = size;
    p->data_bytes = size > index_bytes ? size - index_bytes : 0;
    p->mtime = mtime;
    p->e = e;
    p->n = n;
    p->dead = dead;
    p->ndead = sort_filter_dead(p, dead, ndead);
    p->gone = 0;
    for (size_t k = 0; k < n; k++) {
        struct ref_entry *m;
        int created;
        if (is_dead(p, &e[k].d))
            continue;
        p->nlive++;
        p->live_bytes += e[k].len;
        m = trove__refmap_insert(&x->map, &e[k].d, &created); /* reserved: cannot fail */
        if (!created) {
            m->live++;
            continue;
        }
        m->dict_index = slot;
        m->committed = e[k].offset;
        m->len = e[k].len;
    }
    if (p->nlive == 0)
        trove__s3_packs_drop(x, slot);
    if ((b = bad_slot(x, hex)) >= 0)
        trove__s3_packs_forget_bad(x, (size_t)b);
    if (slot_out)
        *slot_out = slot;
    return TROVE_OK;
}

size_t trove__s3_packs_holders(const struct trove__s3_packs *x, const struct trove_digest *d,
                               uint32_t *out, size_t cap)
{
    const struct ref_entry *m = trove__refmap_find(&x->map, d);
    size_t n = 0;

    if (!m || cap == 0)
        return 0;
    for (size_t q = 0; m->live > 0 && q < x->n && n + 1 < cap; q++)
        if (q != m->dict_index && live_in(&x->p[q], d))
            out[n++] = (uint32_t)q;
    out[n++] = m->dict_index;
    return n;
}

int trove__s3_packs_dead_record(const struct trove__s3_packs *x, uint32_t slot,
                                const struct trove_digest *d, struct trove_bytes *out)
{
    const struct trove__s3_pack *p = &x->p[slot];
    size_t at = 0;
    int rc;

    out->len = 0;
    if ((rc = trove_bytes_reserve(out, 16 * (p->ndead + 1))) != TROVE_OK)
        return rc;
    while (at < p->ndead && memcmp(p->dead[at].b, d->b, 16) < 0)
        at++;
    if (at > 0)
        memcpy(out->ptr, p->dead, 16 * at);
    memcpy(out->ptr + 16 * at, d->b, 16);
    if (p->ndead > at)
        memcpy(out->ptr + 16 * (at + 1), p->dead + at, 16 * (p->ndead - at));
    out->len = 16 * (p->ndead + 1);
    return TROVE_OK;
}

int trove__s3_packs_mark_dead(struct trove__s3_packs *x, uint32_t slot,
                              const struct trove_digest *d)
{
    struct trove__s3_pack *p = &x->p[slot];
    const struct trove__pack_entry *e = live_in(p, d);
    struct trove_digest *dead;
    size_t at = 0;

    if (!e)
        return TROVE_ERR_NOTFOUND;
    if (!(dead = trove__realloc(p->dead, (p->ndead + 1) * sizeof *dead)))
        return TROVE_ERR_NOMEM;
    p->dead = dead;
    while (at < p->ndead && memcmp(dead[at].b, d->b, 16) < 0)
        at++;
    memmove(dead + at + 1, dead + at, (p->ndead - at) * sizeof *dead);
    dead[at] = *d;
    p->ndead++;
    p->nlive--;
    p->live_bytes -= e->len;
    unmap(x, slot, d);
    if (p->nlive == 0) {
        free_lists(p);
        p->gone = 1;
    }
    return TROVE_OK;
}

int trove__s3_packs_live(const struct trove__s3_packs *x, uint32_t slot,
                         struct trove__pack_entry **e_out, size_t *n_out)
{
    const struct trove__s3_pack *p = &x->p[slot];
    struct trove__pack_entry *e = trove__mallocarray(p->nlive + 1, sizeof *e);
    size_t n = 0;

    if (!e)
        return TROVE_ERR_NOMEM;
    for (size_t k = 0; k < p->n; k++)
        if (!is_dead(p, &p->e[k].d))
            e[n++] = p->e[k];
    *e_out = e;
    *n_out = n;
    return TROVE_OK;
}

int trove__s3_packs_snapshot(const struct trove__s3_packs *x, struct trove_digest **d_out,
                             int64_t **mtime_out, size_t *n_out)
{
    struct trove_digest *d = d_out ? trove__mallocarray(x->map.count + 1, sizeof *d) : NULL;
    int64_t *t = mtime_out ? trove__mallocarray(x->map.count + 1, sizeof *t) : NULL;
    size_t n = 0;

    if ((d_out && !d) || (mtime_out && !t)) {
        free(d);
        free(t);
        return TROVE_ERR_NOMEM;
    }
    for (size_t k = 0; k < x->map.cap; k++) {
        const struct ref_entry *m = &x->map.tab[k];
        if (!m->used)
            continue;
        if (d)
            d[n] = m->d;
        if (t)
            t[n] = x->p[m->dict_index].mtime;
        n++;
    }
    if (d_out)
        *d_out = d;
    if (mtime_out)
        *mtime_out = t;
    *n_out = n;
    return TROVE_OK;
}

int trove__s3_packs_note_orphan(struct trove__s3_packs *x, const char *hex)
{
    struct trove_digest name;
    int created;

    if (trove_digest_parse(hex, &name) != TROVE_OK)
        return TROVE_ERR_INVALID;
    return trove__refmap_insert(&x->orphans, &name, &created) ? TROVE_OK : TROVE_ERR_NOMEM;
}

int trove__s3_packs_orphan(const struct trove__s3_packs *x, const char *hex)
{
    struct trove_digest name;
    return trove_digest_parse(hex, &name) == TROVE_OK &&
           trove__refmap_find(&x->orphans, &name) != NULL;
}

void trove__s3_packs_forget_orphan(struct trove__s3_packs *x, const char *hex)
{
    struct trove_digest name;
    struct ref_entry *m;

    if (trove_digest_parse(hex, &name) == TROVE_OK &&
        (m = trove__refmap_find(&x->orphans, &name)) != NULL)
        trove__refmap_remove(&x->orphans, m);
}

int trove__s3_packs_note_bad(struct trove__s3_packs *x, const char *hex, const char *why)
{
    long i = bad_slot(x, hex);
    struct trove__s3_bad_pack *b;

    if (i < 0) {
        if (!(b = trove__realloc(x->bad, (x->nbad + 1) * sizeof *b)))
            return TROVE_ERR_NOMEM;
        x->bad = b;
        i = (long)x->nbad++;
        snprintf(b[i].hex, sizeof b[i].hex, "%s", hex);
    }
    snprintf(x->bad[i].why, sizeof x->bad[i].why, "%s", why);
    return TROVE_OK;
}

void trove__s3_packs_forget_bad(struct trove__s3_packs *x, size_t i)
{
    if (i < x->nbad)
        x->bad[i] = x->bad[--x->nbad];
}

void trove__s3_packs_free(struct trove__s3_packs *x)
{
    for (size_t i = 0; i < x->n; i++)
        free_lists(&x->p[i]);
    free(x->p);
    free(x->bad);
    trove__refmap_free(&x->map);
    trove__refmap_free(&x->names);
    trove__refmap_free(&x->orphans);
    memset(x, 0, sizeof *x);
}
