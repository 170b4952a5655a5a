/*
 * store_copy.c: copy a store into another (include/trove/volume.h), either of them on a
 * local disk or on S3. What is copied is what the source's committed recipes name — every
 * slot's object and every object of the recipes themselves, counted as gc counts them
 * (store_recount.c) — and then the recipes (the volumes' heads), byte for byte: a head
 * names objects by digest only, so it means the same in any store holding those objects.
 *
 * The heads are read first and copied as read: a volume whose head changed during the copy
 * (a writer committing) is not copied, since the count may have missed objects its new
 * head names; the report says how many, and a second run copies them.
 *
 * Order keeps the destination consistent at every moment: the objects it lacks first
 * (fetched COPY_THREADS at a time from the source, put through the destination's puts in
 * flight, drained), and each head after, one publish each. A copy stopped anywhere leaves
 * the destination's volumes as they were, or copied whole, plus objects gc can take; run
 * again it copies only what is still missing. Objects the destination already has (listed
 * once up front) are not read at all, unless it has them on record as damaged (its
 * quarantine): those are copied, and the put of their good bytes heals them.
 */
#include "store_internal.h"
#include "store_recount.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define COPY_THREADS 8
#define COPY_BATCH 64                  /* objects fetched before they are put */
#define COPY_CAP_UNKNOWN ((size_t)1 << 30) /* the cap on an object whose length is unknown */

struct copy_batch {
    struct trove_store *src;
    const struct ref_entry *e[COPY_BATCH];
    struct trove_bytes b[COPY_BATCH];
    int rc[COPY_BATCH];
    size_t n;
    atomic_size_t next;
};

static void *fetch_worker(void *arg)
{
    struct copy_batch *cb = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&cb->next, 1);
        size_t cap;
        if (i >= cb->n)
            break;
        cap = cb->e[i]->len ? (size_t)cb->e[i]->len : COPY_CAP_UNKNOWN;
        cb->b[i].len = 0;
        cb->rc[i] = trove_backend_get(cb->src->be, &cb->e[i]->d, &cb->b[i], cap);
    }
    return NULL;
}

static void fetch_batch(struct copy_batch *cb)
{
    pthread_t th[COPY_THREADS];
    int nth = 0;

    atomic_store(&cb->next, 0);
    for (int i = 0; i < COPY_THREADS && (size_t)i < cb->n; i++)
        if (pthread_create(&th[nth], NULL, fetch_worker, cb) == 0)
            nth++;
    if (nth == 0)
        fetch_worker(cb);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
}

static int note_present(void *ctx, const struct trove_digest *d)
{
    int created;
    return trove__refmap_insert(ctx, d, &created) ? 0 : TROVE_ERR_NOMEM;
}

/* Put the fetched batch into dst; the first failure is returned with diag set. */
static int put_batch(struct copy_batch *cb, struct trove_store *dst, struct trove_copy_report *rep,
                     struct trove_diag *diag)
{
    for (size_t i = 0; i < cb->n; i++) {
        char hex[33];
        int rc = cb->rc[i];
        trove_digest_hex(&cb->e[i]->d, hex);
        if (rc != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0,
                              "cannot read object %s from %s: %s (is the source damaged? "
                              "`trove verify --deep` says)",
                              hex, cb->src->dir, trove_strerror(rc));
        if ((rc = trove__store_put(dst, &cb->e[i]->d, cb->b[i].ptr, cb->b[i].len)) != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "cannot write object %s to %s: %s", hex, dst->dir,
                              trove_strerror(rc));
        rep->objects_copied++;
        rep->bytes_copied += cb->b[i].len;
    }
    return TROVE_OK;
}

/* The volumes to copy: every name of src whose head (heads[i], read before anything was
 * counted) differs from dst's, or that dst lacks; a differing one is refused without
 * TROVE_COPY_REPLACE. */
static int plan_heads(const char *src_dir, struct trove_store *dst, unsigned flags, char **names,
                      const struct trove_bytes *heads, size_t n, unsigned char *todo,
                      struct trove_copy_report *rep, struct trove_diag *diag)
{
    struct trove_bytes b = {0};
    int rc = TROVE_OK;

    for (size_t i = 0; i < n; i++) {
        int have;
        todo[i] = 1;
        for (struct trove_volume *v = dst->open; v; v = v->next)
            if (!strcmp(v->name, names[i])) {
                rc = TROVE_FAIL(diag, TROVE_ERR_BUSY, 0, "volume '%s' is open in %s", names[i],
                                dst->dir);
                goto out;
            }
        if ((have = trove__recipe_exists(dst, names[i])) < 0) {
            rc = TROVE_FAIL(diag, have, 0, "cannot look for volume '%s' in %s: %s", names[i],
                            dst->dir, trove_strerror(have));
            goto out;
        }
        if (!have)
            continue;
        TROVE_TRY(rc, trove__recipe_read(dst, names[i], &b, diag));
        if (heads[i].len == b.len && !memcmp(heads[i].ptr, b.ptr, b.len)) {
            todo[i] = 0;
            rep->volumes_same++;
        } else if (!(flags & TROVE_COPY_REPLACE)) {
            rc = TROVE_FAIL(diag, TROVE_ERR_EXISTS, 0,
                            "volume '%s' differs in %s and %s; nothing was copied (replace "
                            "the destination's with --replace, or remove it)",
                            names[i], src_dir, dst->dir);
            goto out;
        }
    }
out:
    trove_bytes_free(&b);
    return rc;
}

int trove_store_copy(struct trove_store *src, struct trove_store *dst, unsigned flags,
                     struct trove_copy_report *rep, trove_progress_fn progress,
                     void *progress_ctx, struct trove_diag *diag)
{
    struct recount rcnt;
    struct refmap have = {0};
    struct copy_batch *cb = NULL;
    struct trove_bytes head = {0}, *heads = NULL;
    char **names = NULL;
    unsigned char *todo = NULL;
    size_t nnames = 0, done = 0;
    int rc, counted = 0;

    if (!src || !dst || !rep || src == dst || (flags & ~TROVE_COPY_REPLACE))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "store copy: bad arguments");
    memset(rep, 0, sizeof *rep);
    TROVE_TRY(rc, trove__store_writable(dst, diag));
    TROVE_TRY(rc, trove__store_drain(src));
    /* The heads first, as bytes: what is copied is these, and the count below (which
     * reads the heads again) covers their objects unless a head changes meanwhile — which
     * the read-back at the end catches. */
    if ((rc = trove__recipe_names(src, &names, &nnames)) != TROVE_OK) {
        TROVE_FAIL(diag, rc, 0, "cannot list the volumes of %s: %s", src->dir,
                   trove_strerror(rc));
        goto out;
    }
    if (!(todo = trove__calloc(nnames ? nnames : 1, 1)) ||
        !(heads = trove__calloc(nnames ? nnames : 1, sizeof *heads)) ||
        !(cb = trove__calloc(1, sizeof *cb))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < nnames; i++)
        TROVE_TRY(rc, trove__recipe_read(src, names[i], &heads[i], diag));
    if ((rc = trove__recount(src, &rcnt)) != TROVE_OK) {
        TROVE_FAIL(diag, rc, 0, "cannot read the recipes of %s: %s", src->dir,
                   trove_strerror(rc));
        goto out;
    }
    counted = 1;
    if (rcnt.bad_recipes) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                        "%s has %llu unreadable recipe(s) (%s); nothing was copied",
                        src->dir, (unsigned long long)rcnt.bad_recipes, rcnt.first_bad);
        goto out;
    }
    TROVE_TRY(rc, plan_heads(src->dir, dst, flags, names, heads, nnames, todo, rep, diag));
    rep->volumes = nnames;
    rep->objects = rcnt.map.count;
    if ((rc = trove_backend_list(dst->be, note_present, &have)) != TROVE_OK) {
        rc = rc > 0 ? TROVE_ERR_NOMEM : rc;
        TROVE_FAIL(diag, rc, 0, "cannot list the objects of %s: %s", dst->dir,
                   trove_strerror(rc));
        goto out;
    }
    cb->src = src;
    for (size_t i = 0; i < rcnt.map.cap; i++) {
        const struct ref_entry *e = &rcnt.map.tab[i];
        if (!e->used)
            continue;
        /* One dst has on record as damaged is copied again: the good bytes heal it. */
        if (trove__refmap_find(&have, &e->d) && !trove_backend_quarantined(dst->be, &e->d)) {
            rep->objects_present++;
        } else {
            cb->e[cb->n++] = e;
            if (cb->n == COPY_BATCH) {
                fetch_batch(cb);
                TROVE_TRY(rc, put_batch(cb, dst, rep, diag));
                cb->n = 0;
            }
        }
        if (progress)
            progress(progress_ctx, ++done, rcnt.map.count);
    }
    fetch_batch(cb);
    TROVE_TRY(rc, put_batch(cb, dst, rep, diag));
    if ((rc = trove__store_drain(dst)) != TROVE_OK) {
        TROVE_FAIL(diag, rc, 0, "writing the objects to %s failed: %s", dst->dir,
                   trove_strerror(rc));
        goto out;
    }
    /* Every object is in; now the heads, each one atomic — each as read at the start, and
     * only if it is still that: a head that changed may name objects the count missed. */
    for (size_t i = 0; i < nnames; i++) {
        if (!todo[i])
            continue;
        TROVE_TRY(rc, trove__recipe_read(src, names[i], &head, diag));
        if (head.len != heads[i].len || memcmp(head.ptr, heads[i].ptr, head.len) != 0) {
            rep->volumes_changed++;
            continue;
        }
        if ((rc = trove__recipe_publish(dst, names[i], head.ptr, head.len)) != TROVE_OK) {
            TROVE_FAIL(diag, rc, 0, "cannot write volume '%s' to %s: %s", names[i], dst->dir,
                       trove_strerror(rc));
            goto out;
        }
        rep->volumes_copied++;
    }
out:
    if (cb)
        for (size_t i = 0; i < COPY_BATCH; i++)
            trove_bytes_free(&cb->b[i]);
    free(cb);
    free(todo);
    for (size_t i = 0; heads && i < nnames; i++)
        trove_bytes_free(&heads[i]);
    free(heads);
    trove__names_free(names, nnames);
    trove__refmap_free(&have);
    trove_bytes_free(&head);
    if (counted)
        trove__recount_free(&rcnt);
    return rc;
}

/* ---- repair from another store ---------------------------------------------------------- */

int trove_store_repair_from(struct trove_store *s, struct trove_store *src,
                            struct trove_repair_report *rep, struct trove_diag *diag)
{
    struct recount rcnt;
    struct trove_bytes b = {0};
    int rc, counted = 0;

    if (!s || !src || !rep || s == src)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "repair: bad arguments");
    memset(rep, 0, sizeof *rep);
    TROVE_TRY(rc, trove__store_writable(s, diag));
    TROVE_TRY(rc, trove__store_drain(s));
    if ((rc = trove__recount(s, &rcnt)) != TROVE_OK) {
        TROVE_FAIL(diag, rc, 0, "cannot read the recipes of %s: %s", s->dir, trove_strerror(rc));
        goto out;
    }
    counted = 1;
    for (size_t i = 0; i < rcnt.map.cap; i++) {
        const struct ref_entry *e = &rcnt.map.tab[i];
        uint64_t len;
        char hex[33];
        if (!e->used)
            continue;
        rc = trove_backend_size(s->be, &e->d, &len);
        if (rc == TROVE_OK && !trove_backend_quarantined(s->be, &e->d))
            continue; /* present, and not on record as damaged */
        if (rc != TROVE_OK && rc != TROVE_ERR_NOTFOUND) {
            TROVE_FAIL(diag, rc, 0, "cannot look for an object in %s: %s", s->dir,
                       trove_strerror(rc));
            goto out;
        }
        rep->needed++;
        trove_digest_hex(&e->d, hex);
        /* The other copy's bytes are checked against the name as they are read: only good
         * bytes are put, and a put of a name on record heals it. */
        rc = trove_backend_get(src->be, &e->d, &b,
                               e->len ? (size_t)e->len : COPY_CAP_UNKNOWN);
        if (rc == TROVE_ERR_NOTFOUND || rc == TROVE_ERR_CHECKSUM || rc == TROVE_ERR_LIMIT) {
            rep->unavailable++;
            continue;
        }
        if (rc != TROVE_OK) {
            TROVE_FAIL(diag, rc, 0, "cannot read object %s from %s: %s", hex, src->dir,
                       trove_strerror(rc));
            goto out;
        }
        if ((rc = trove__store_put(s, &e->d, b.ptr, b.len)) != TROVE_OK) {
            TROVE_FAIL(diag, rc, 0, "cannot write object %s to %s: %s", hex, s->dir,
                       trove_strerror(rc));
            goto out;
        }
        rep->repaired++;
        rep->bytes += b.len;
    }
    if ((rc = trove__store_drain(s)) != TROVE_OK)
        TROVE_FAIL(diag, rc, 0, "cannot make the repaired objects durable in %s: %s", s->dir,
                   trove_strerror(rc));
out:
    if (counted)
        trove__recount_free(&rcnt);
    trove_bytes_free(&b);
    return rc;
}
