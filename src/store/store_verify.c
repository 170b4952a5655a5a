/*
 * store_verify.c: verify and gc (include/trove/volume.h), the two operations that walk
 * the whole store. Both count the references of every committed recipe
 * (store_recount.c). Verify then checks that every object the recipes name exists with its
 * slots' length (DEEP: and hashes to its name). Objects whose bytes do not hash to their
 * name are quarantined by the read that finds them (backend.c); verify counts them, and
 * REPAIR looks at each quarantined object again and releases the ones that hash right now
 * (healed). gc is mark and sweep: it refuses to run unless every recipe is readable, marks
 * what the recipes and this handle's open volumes name, and deletes every other object the
 * backend lists, so a crash during gc leaves fewer unreferenced objects, never a recipe
 * naming a missing one.
 */
#include "store_recount.h"
#include "s3/backend_s3.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Keep the first problem's description for the report. */
static void problem(struct trove_verify_report *rep, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void problem(struct trove_verify_report *rep, const char *fmt, ...)
{
    va_list ap;

    if (rep->first_problem[0] != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(rep->first_problem, sizeof rep->first_problem, fmt, ap);
    va_end(ap);
}

/* REPAIR: look again at every quarantined object; one that hashes to its name now (its
 * content was put again by a handle that did not know, or the damage is gone) is released. */
struct reexamine_ctx {
    struct trove_store *s;
    struct trove_verify_report *rep;
    struct trove_bytes obj;
    int rc;
};

static int reexamine_one(void *ctx, const struct trove_digest *d)
{
    struct reexamine_ctx *c = ctx;
    struct trove_digest got;
    int rc = trove_backend_get_raw(c->s->be, d, &c->obj, SIZE_MAX);

    if (rc == TROVE_ERR_NOTFOUND)
        return 0; /* gone: verify reports it as missing if anything names it */
    if (rc != TROVE_OK) {
        c->rc = rc;
        return 1;
    }
    trove_digest_of(c->obj.ptr, c->obj.len, &got);
    if (trove_digest_equal(&got, d)) {
        if ((rc = trove_backend_release(c->s->be, d)) != TROVE_OK) {
            c->rc = rc;
            return 1;
        }
        c->rep->healed++;
    }
    return 0;
}

static int reexamine(struct trove_store *s, struct trove_verify_report *rep)
{
    struct reexamine_ctx c = {s, rep, {0}, TROVE_OK};
    int rc = trove_backend_quarantine_list(s->be, reexamine_one, &c);

    trove_bytes_free(&c.obj);
    return c.rc != TROVE_OK ? c.rc : rc > 0 ? TROVE_OK : rc;
}

static int note_damaged(void *ctx, const struct trove_digest *d)
{
    int created;
    return trove__refmap_insert(ctx, d, &created) ? 0 : 1; /* 1: stop, out of memory */
}

int trove_store_damaged(struct trove_store *s,
                        int (*fn)(void *ctx, const struct trove_digest *d, const char *volume,
                                  uint64_t slot),
                        void *ctx)
{
    enum { CHUNK = 4096 };
    struct trove_volume_entry *ve = NULL;
    struct trove_digest *dig = NULL;
    struct refmap bad = {0};
    size_t nv = 0;
    int rc, stop = 0;

    if (!s || !fn)
        return TROVE_ERR_INVALID;
    /* The records, in memory: then each slot costs a lookup, not a stat. */
    if ((rc = trove_backend_quarantine_list(s->be, note_damaged, &bad)) != TROVE_OK) {
        rc = rc > 0 ? TROVE_ERR_NOMEM : rc;
        goto out;
    }
    if (bad.count == 0)
        goto out;
    TROVE_TRY(rc, trove_volume_list(s, &ve, &nv));
    if (!(dig = trove__malloc(CHUNK * sizeof *dig))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < nv && !stop; i++) {
        struct trove_volume *v = NULL;
        if (ve[i].error != TROVE_OK)
            continue; /* verify reports an unreadable recipe on its own */
        rc = trove_volume_open(s, ve[i].name, &v, NULL);
        if (rc == TROVE_ERR_CHECKSUM || rc == TROVE_ERR_CORRUPT || rc == TROVE_ERR_TRUNCATED ||
            rc == TROVE_ERR_NOTFOUND || rc == TROVE_ERR_VERSION)
            continue; /* a recipe that does not load (a damaged v3 recipe object, say), or
                       * is gone since the list: reported on its own, as above */
        if (rc != TROVE_OK)
            goto out;
        for (uint64_t first = 0; first < ve[i].slots && !stop; first += CHUNK) {
            uint64_t n = ve[i].slots - first < CHUNK ? ve[i].slots - first : CHUNK;
            if ((rc = trove_volume_slot_digests(v, first, n, dig)) != TROVE_OK) {
                trove_volume_close(v);
                v = NULL;
                if (rc == TROVE_ERR_CHECKSUM || rc == TROVE_ERR_CORRUPT)
                    break; /* a recipe object the lazy open reached only now: as above */
                goto out;
            }
            for (uint64_t k = 0; k < n && !stop; k++)
                if (!trove_digest_is_zero(&dig[k]) && trove__refmap_find(&bad, &dig[k]))
                    stop = fn(ctx, &dig[k], ve[i].name, first + k) != 0;
        }
        trove_volume_close(v);
    }
    rc = TROVE_OK;
out:
    trove__refmap_free(&bad);
    free(dig);
    free(ve);
    return rc;
}

static int count_bad_pack(void *ctx, const char *name, const char *why)
{
    (void)name;
    (void)why;
    ((struct trove_verify_report *)ctx)->bad_packs++;
    return 0;
}

int trove_store_verify(struct trove_store *s, unsigned flags, struct trove_verify_report *rep,
                       trove_progress_fn progress, void *progress_ctx)
{
    struct recount rcnt;
    struct trove_bytes obj = {0};
    uint64_t done = 0;
    int rc, have_count = 0;

    if (!s || !rep || (flags & ~(TROVE_VERIFY_DEEP | TROVE_VERIFY_REPAIR)))
        return TROVE_ERR_INVALID;
    memset(rep, 0, sizeof *rep);
    if ((flags & TROVE_VERIFY_REPAIR) && (rc = trove__store_writable(s, NULL)) != TROVE_OK)
        return rc;
    trove__store_drain(s); /* verify reads the committed state; a failed put shows there */
    rep->deep = (flags & TROVE_VERIFY_DEEP) != 0;
    if ((flags & TROVE_VERIFY_REPAIR) && (rc = reexamine(s, rep)) != TROVE_OK)
        goto out;
    if ((rc = trove__recount(s, &rcnt)) != TROVE_OK)
        goto out;
    have_count = 1;
    rep->volumes = rcnt.volumes;
    rep->bad_recipes = rcnt.bad_recipes;
    rep->slots = rcnt.slots;
    rep->bad_length = rcnt.length_conflicts;
    if (rcnt.bad_recipes)
        snprintf(rep->first_problem, sizeof rep->first_problem, "%s", rcnt.first_bad);
    if (rcnt.length_conflicts)
        problem(rep, "%llu slots name an object that other slots name with another length",
                (unsigned long long)rcnt.length_conflicts);
    for (size_t k = 0; k < rcnt.map.cap; k++) {
        const struct ref_entry *e = &rcnt.map.tab[k];
        char hex[33];
        uint64_t len;
        if (!e->used)
            continue;
        rep->objects++;
        trove_digest_hex(&e->d, hex);
        rc = trove_backend_size(s->be, &e->d, &len);
        if (rc == TROVE_OK && trove_backend_quarantined(s->be, &e->d))
            rc = TROVE_ERR_CHECKSUM;
        if (rc == TROVE_ERR_CHECKSUM) { /* on record as damaged */
            rep->bad_hash++;
            rep->quarantined++;
            problem(rep, "object %s is damaged (named by %llu slot%s); put its content again to "
                    "heal it", hex, (unsigned long long)e->committed, e->committed == 1 ? "" : "s");
            rc = TROVE_OK;
        } else if (rc == TROVE_ERR_NOTFOUND) {
            rep->missing_objects++;
            problem(rep, "object %s is missing (named by %llu slot%s)", hex,
                    (unsigned long long)e->committed, e->committed == 1 ? "" : "s");
        } else if (rc != TROVE_OK) {
            goto out;
        } else if (e->len != 0 && len != e->len) { /* len 0: a recipe object, checked at load */
            rep->bad_length++;
            problem(rep, "object %s is %llu bytes, its slots hold %llu", hex,
                    (unsigned long long)len, (unsigned long long)e->len);
        } else if (flags & TROVE_VERIFY_DEEP) {
            struct trove_digest d;
            rc = trove_backend_get(s->be, &e->d, &obj, (size_t)len);
            if (rc == TROVE_ERR_NOTFOUND) {
                rep->missing_objects++;
                problem(rep, "object %s disappeared during verify", hex);
            } else if (rc == TROVE_ERR_LIMIT || rc == TROVE_ERR_TRUNCATED) {
                rep->bad_length++;
                problem(rep, "object %s changed length during verify", hex);
            } else if (rc == TROVE_ERR_CHECKSUM) { /* the get checked it, and quarantined it */
                rep->bad_hash++;
                rep->quarantined += trove_backend_quarantined(s->be, &e->d);
                problem(rep, "object %s does not hash to its name (%llu bytes); put its "
                        "content again to heal it", hex, (unsigned long long)len);
                rc = TROVE_OK;
            } else if (rc != TROVE_OK) {
                goto out;
            } else {
                trove_digest_of(obj.ptr, obj.len, &d);
                if (!trove_digest_equal(&d, &e->d)) {
                    rep->bad_hash++;
                    problem(rep, "object %s does not hash to its name (%zu bytes)", hex,
                            obj.len);
                }
            }
        }
        if (progress)
            progress(progress_ctx, ++done, rcnt.map.count);
    }
    if ((rc = trove_backend_unreadable(s->be, 0, count_bad_pack, rep)) != TROVE_OK)
        goto out;
    rc = (rep->bad_recipes || rep->missing_objects || rep->bad_length || rep->bad_hash)
             ? TROVE_ERR_CORRUPT
             : TROVE_OK;
out:
    if (have_count)
        trove__recount_free(&rcnt);
    trove_bytes_free(&obj);
    return rc;
}

struct digest_vec {
    struct trove_digest *d;
    size_t n, cap;
};

static int collect(void *ctx, const struct trove_digest *d)
{
    struct digest_vec *v = ctx;

    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 256;
        struct trove_digest *p = trove__realloc(v->d, cap * sizeof *p);
        if (!p)
            return 1; /* stop: reported as out of memory */
        v->d = p;
        v->cap = cap;
    }
    v->d[v->n++] = *d;
    return 0;
}

/* On S3 (docs/s3.md): objects stored less than the grace period ago are kept, since a
 * writer in another process may have uploaded them for a commit whose head it has not yet
 * written (it holds no lock gc could wait for). */
#define GC_GRACE_DEFAULT_SEC 3600

struct aged {
    struct digest_vec *all;
    struct digest_vec *young; /* stored after the cutoff: kept, counted if unreferenced */
    int64_t cutoff;           /* seconds since the epoch */
};

static int collect_aged(void *ctx, const struct trove_digest *d, int64_t mtime)
{
    struct aged *a = ctx;

    return collect(mtime < 0 || mtime > a->cutoff ? a->young : a->all, d);
}

static int64_t gc_grace_sec(void)
{
    const char *e = getenv("TROVE_GC_GRACE_SEC");
    char *end;
    long long v;

    if (!e || !*e)
        return GC_GRACE_DEFAULT_SEC;
    v = strtoll(e, &end, 10);
    return *end || v < 0 ? GC_GRACE_DEFAULT_SEC : (int64_t)v;
}

/* Every object of the backend into all; on S3 only those older than the grace period,
 * the younger ones into young. */
static int list_collectable(struct trove_store *s, struct digest_vec *all,
                            struct digest_vec *young)
{
    struct aged a;

    if (!s->s3)
        return trove_backend_list(s->be, collect, all);
    a.all = all;
    a.young = young;
    a.cutoff = (int64_t)time(NULL) - gc_grace_sec();
    return trove__s3_list_aged(s->be, collect_aged, &a);
}

static int count_deleted_pack(void *ctx, const char *name, const char *why)
{
    (void)name;
    (void)why;
    ((struct trove_gc_report *)ctx)->bad_packs_deleted++;
    return 0;
}

int trove_store_gc(struct trove_store *s, struct trove_gc_report *rep, trove_progress_fn progress,
                   void *progress_ctx)
{
    struct recount rcnt;
    struct digest_vec all = {0}, young = {0};
    int rc, have_count = 0;

    if (!s || !rep)
        return TROVE_ERR_INVALID;
    memset(rep, 0, sizeof *rep);
    if ((rc = trove__store_writable(s, NULL)) != TROVE_OK ||
        (rc = trove__store_drain(s)) != TROVE_OK)
        return rc;
    /* Readers in other handles may hold an older commit's objects: wait for them to go. */
    if ((rc = trove__store_exclude_readers(s, 1)) != TROVE_OK)
        return rc;
    /* Mark: what every recipe names, and what this handle's open volumes name now. A
     * recipe that cannot be read names objects nobody can tell, so gc refuses. */
    if ((rc = trove__recount(s, &rcnt)) != TROVE_OK)
        goto out;
    have_count = 1;
    if (rcnt.bad_recipes) {
        rc = TROVE_ERR_CORRUPT;
        goto out;
    }
    if ((rc = trove__recount_open(s, &rcnt)) != TROVE_OK)
        goto out;
    /* Sweep. (The drain above emptied the handle's list of puts: a later write of
     * anything deleted here stats, finds it gone and puts it again.) */
    rc = list_collectable(s, &all, &young);
    if (rc > 0)
        rc = TROVE_ERR_NOMEM;
    if (rc != TROVE_OK)
        goto out;
    /* Young: what gc would delete but for the grace period; an object in use is not. */
    for (size_t k = 0; k < young.n; k++)
        rep->objects_young += !trove__refmap_find(&rcnt.map, &young.d[k]);
    rep->objects_seen = all.n + young.n;
    for (size_t k = 0; k < all.n; k++) {
        uint64_t len = 0;
        if (trove__refmap_find(&rcnt.map, &all.d[k]))
            goto next;
        if (trove_backend_size(s->be, &all.d[k], &len) != TROVE_OK)
            len = 0;
        rc = trove_backend_delete(s->be, &all.d[k]);
        if (rc == TROVE_OK) {
            rep->objects_deleted++;
            rep->bytes_deleted += len;
        } else if (rc != TROVE_ERR_NOTFOUND) {
            goto out;
        }
    next:
        if (progress)
            progress(progress_ctx, k + 1, all.n);
    }
    /* Every recipe read without the unreadable packs: nothing needs what they held. */
    rc = trove_backend_unreadable(s->be, 1, count_deleted_pack, rep);
out:
    trove__store_exclude_readers(s, 0); /* readers may come back */
    if (have_count)
        trove__recount_free(&rcnt);
    free(all.d);
    free(young.d);
    return rc;
}
