/*
 * s3_publish.c: the S3 backend's staged puts and their publish (s3_publish.h). A staged
 * object is copied into memory until publish. Publish drops what a known pack already
 * holds, packs the objects under LOOSE_MIN, in the order staged, into packs of at most
 * PACK_MAX bytes (each one PUT with no HEAD: its name is new content), and puts the bigger
 * ones loose (HEAD, then PUT if missing). One thread keeps PUBLISH_IN_FLIGHT units in
 * flight on the request engine (s3_request.c) and takes each as it ends: a pack is built
 * when its unit begins, so at most that many packs' bytes are held besides the staged
 * copies. What did not go up stays staged, in front of anything staged meanwhile, so a
 * second publish finishes the job. backend_s3.c's header comment says the rest.
 */
#include "s3_publish.h"
#include "backend_s3.h"
#include "common/alloc.h"
#include "pack.h"
#include "s3_load.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define PUBLISH_IN_FLIGHT 8 /* units in flight during publish */

int trove__s3_stage(struct trove_backend *base, const struct trove_digest *d, const void *data,
                    size_t len)
{
    struct s3_backend *s = (struct s3_backend *)base;
    uint8_t *copy;
    int rc = TROVE_OK, skip, created = 0;

    pthread_mutex_lock(&s->mu);
    skip = trove__s3_packs_find(&s->packs, d) || trove__refmap_find(&s->staged_set, d);
    pthread_mutex_unlock(&s->mu);
    if (skip)
        return TROVE_OK; /* in a known pack, or staged already */
    if (!(copy = trove__malloc(len ? len : 1)))
        return TROVE_ERR_NOMEM;
    if (len)
        memcpy(copy, data, len);
    pthread_mutex_lock(&s->mu);
    rc = trove__s3_grow((void **)&s->staged, &s->capstaged, s->nstaged, sizeof *s->staged);
    if (rc == TROVE_OK && !trove__refmap_insert(&s->staged_set, d, &created))
        rc = TROVE_ERR_NOMEM;
    if (rc == TROVE_OK && created) {
        s->staged[s->nstaged].d = *d;
        s->staged[s->nstaged].data = copy;
        s->staged[s->nstaged].len = len;
        s->nstaged++;
        s->staged_bytes += len;
        copy = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    free(copy);
    return rc;
}

/* What one worker of publish sends: one pack of small objects, or one big object loose. */
struct unit {
    size_t first, n; /* the items order[first .. first + n) */
    int loose;
};

struct publish_job {
    struct s3_backend *s;
    struct staged *items;
    size_t *order;
    struct unit *units;
    atomic_uint_fast64_t overhead;
};

/* Item it went up (or needs not): it is no longer staged. */
static void unstage(struct s3_backend *s, struct staged *it)
{
    struct ref_entry *e;

    pthread_mutex_lock(&s->mu);
    if ((e = trove__refmap_find(&s->staged_set, &it->d)) != NULL)
        trove__refmap_remove(&s->staged_set, e);
    pthread_mutex_unlock(&s->mu);
    free(it->data);
    it->data = NULL;
}

/* The staged objects items[idx[0..n)] as one pack in buf, their entries in *e_out. */
static int build_pack(const struct staged *items, const size_t *idx, size_t n,
                      struct trove_bytes *buf, struct trove__pack_entry **e_out)
{
    struct trove__pack_entry *e = trove__mallocarray(n + 1, sizeof *e);
    size_t total = TROVE__PACK_FOOTER + n * TROVE__PACK_ENTRY;
    int rc;

    *e_out = e;
    if (!e)
        return TROVE_ERR_NOMEM;
    for (size_t k = 0; k < n; k++)
        total += items[idx[k]].len; /* at most PACK_MAX: plan() cut the run so */
    if ((rc = trove_bytes_reserve(buf, total)) != TROVE_OK)
        return rc;
    for (size_t k = 0; k < n; k++) {
        const struct staged *it = &items[idx[k]];
        e[k].d = it->d;
        e[k].offset = buf->len;
        e[k].len = it->len;
        if ((rc = trove_bytes_append(buf, it->data, it->len)) != TROVE_OK)
            return rc;
    }
    return trove__pack_finish(buf, e, n);
}

/* One unit on its way up: its request in the engine, and what comes after it. */
struct unit_run {
    struct s3_xfer x; /* first: the batch hands back &x */
    struct req r;
    struct obj o;
    const struct unit *u;
    enum { STEP_HEAD, STEP_PUT } step;
    int made_bucket;          /* the bucket was created for this unit once already */
    struct trove_bytes buf;   /* a pack's bytes */
    struct trove__pack_entry *e;
    char hex[33];
};

static int unit_submit(struct publish_job *j, struct s3_batch *b, struct unit_run *ur,
                       const char *method, const void *body, size_t len)
{
    memset(&ur->r, 0, sizeof ur->r);
    ur->r.method = method;
    ur->r.url = ur->o.url;
    ur->r.what = ur->o.what;
    ur->r.body = body;
    ur->r.body_len = len;
    memset(&ur->x, 0, sizeof ur->x);
    ur->x.r = &ur->r;
    return trove__s3_batch_submit(j->s, b, &ur->x);
}

/* Begin unit u: a loose object's HEAD, or a pack built and its PUT. */
static int unit_begin(struct publish_job *j, struct s3_batch *b, struct unit_run *ur,
                      const struct unit *u)
{
    int rc;

    memset(ur, 0, sizeof *ur);
    ur->u = u;
    if (u->loose) {
        trove__s3_obj_names(j->s, &j->items[j->order[u->first]].d, &ur->o);
        ur->step = STEP_HEAD;
        return unit_submit(j, b, ur, "HEAD", NULL, 0);
    }
    if ((rc = build_pack(j->items, j->order + u->first, u->n, &ur->buf, &ur->e)) != TROVE_OK)
        return rc;
    trove__s3_pack_name(j->s, &ur->buf, ur->hex, &ur->o);
    ur->step = STEP_PUT;
    return unit_submit(j, b, ur, "PUT", ur->buf.ptr, ur->buf.len);
}

/* ur's request finished: 1 when its next request is in flight, TROVE_OK when the unit is
 * up (its items unstaged), else the error. */
static int unit_step(struct publish_job *j, struct s3_batch *b, struct unit_run *ur)
{
    const struct unit *u = ur->u;
    int rc = trove__s3_settle(j->s, &ur->x);

    if (ur->step == STEP_HEAD) {
        if (rc == TROVE_OK)
            goto up; /* present: put-if-absent leaves it */
        if (rc != TROVE_ERR_NOTFOUND)
            return rc;
        ur->step = STEP_PUT;
        const struct staged *it = &j->items[j->order[u->first]];
        return (rc = unit_submit(j, b, ur, "PUT", it->data, it->len)) == TROVE_OK ? 1 : rc;
    }
    if (rc == TROVE_ERR_NOTFOUND && !ur->made_bucket) { /* NoSuchBucket: the first write */
        ur->made_bucket = 1;
        if ((rc = trove__s3_create_bucket(j->s)) != TROVE_OK)
            return rc;
        return (rc = unit_submit(j, b, ur, "PUT", ur->r.body, ur->r.body_len)) == TROVE_OK ? 1
                                                                                            : rc;
    }
    if (rc == TROVE_ERR_NOTFOUND)
        return TROVE_ERR_REMOTE; /* a PUT is never "not found"; the message says why */
    if (rc != TROVE_OK)
        return rc;
    if (!u->loose) {
        rc = trove__s3_pack_stored(j->s, ur->hex, ur->buf.len, ur->e, u->n);
        ur->e = NULL;
        if (rc != TROVE_OK)
            return rc;
        atomic_fetch_add(&j->overhead, (uint64_t)u->n * TROVE__PACK_ENTRY + TROVE__PACK_FOOTER);
    }
up:
    for (size_t k = 0; k < u->n; k++)
        unstage(j->s, &j->items[j->order[u->first + k]]);
    return TROVE_OK;
}

static void unit_end(struct unit_run *ur)
{
    free(ur->e);
    ur->e = NULL;
    trove_bytes_free(&ur->buf);
    ur->u = NULL;
}

/*
 * Every unit up through the engine, PUBLISH_IN_FLIGHT at a time (which bounds the pack
 * bytes built and not yet sent). After the first error no new unit is begun; the ones in
 * flight finish, and whatever went up is unstaged. That first error is returned.
 */
static int publish_units(struct publish_job *j, size_t nunits)
{
    struct unit_run *run = trove__calloc(PUBLISH_IN_FLIGHT, sizeof *run);
    struct s3_batch b;
    size_t next = 0, inflight = 0;
    int rc = TROVE_OK;

    if (!run)
        return TROVE_ERR_NOMEM;
    trove__s3_batch_init(&b);
    for (;;) {
        struct s3_xfer *x;
        int r;
        for (size_t k = 0; rc == TROVE_OK && next < nunits && k < PUBLISH_IN_FLIGHT; k++) {
            if (run[k].u)
                continue;
            if ((r = unit_begin(j, &b, &run[k], &j->units[next++])) != TROVE_OK) {
                unit_end(&run[k]);
                rc = r;
            } else {
                inflight++;
            }
        }
        if (inflight == 0 || !(x = trove__s3_batch_wait(&b)))
            break;
        struct unit_run *ur = (struct unit_run *)x;
        if ((r = unit_step(j, &b, ur)) != 1) {
            unit_end(ur);
            inflight--;
            if (r != TROVE_OK && rc == TROVE_OK)
                rc = r;
        }
    }
    trove__s3_batch_free(&b);
    free(run);
    return rc;
}

/* Drop the items already in a known pack, then cut the rest into units: runs of small ones
 * (in the order staged) that fill a pack up to PACK_MAX, then each big one alone. */
static int plan(struct s3_backend *s, struct publish_job *j, size_t n, size_t *nunits_out)
{
    size_t no = 0, nsmall, nu = 0;

    if (!(j->order = trove__mallocarray(n, sizeof *j->order)) ||
        !(j->units = trove__mallocarray(n, sizeof *j->units)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        if (trove__s3_is_packed(s, &j->items[i].d))
            unstage(s, &j->items[i]);
    for (size_t i = 0; i < n; i++)
        if (j->items[i].data && j->items[i].len < LOOSE_MIN)
            j->order[no++] = i;
    nsmall = no;
    for (size_t i = 0; i < n; i++)
        if (j->items[i].data && j->items[i].len >= LOOSE_MIN)
            j->order[no++] = i;
    for (size_t k = 0; k < nsmall; nu++) {
        uint64_t bytes = TROVE__PACK_FOOTER;
        j->units[nu].first = k;
        j->units[nu].n = 0;
        j->units[nu].loose = 0;
        /* The first always fits: LOOSE_MIN is far below PACK_MAX. */
        while (k < nsmall && bytes + TROVE__PACK_ENTRY + j->items[j->order[k]].len <= PACK_MAX) {
            bytes += TROVE__PACK_ENTRY + j->items[j->order[k]].len;
            j->units[nu].n++;
            k++;
        }
    }
    for (size_t k = nsmall; k < no; k++, nu++) {
        j->units[nu].first = k;
        j->units[nu].n = 1;
        j->units[nu].loose = 1;
    }
    *nunits_out = nu;
    return TROVE_OK;
}

/* What publish could not send goes back in front of the staged list, before anything
 * staged meanwhile. items (cap slots, n used) is taken over. */
static int restage(struct s3_backend *s, struct staged *items, size_t n, size_t cap)
{
    size_t keep = 0, bytes = 0;
    int rc = TROVE_OK;

    for (size_t i = 0; i < n; i++)
        if (items[i].data) {
            bytes += items[i].len;
            items[keep++] = items[i];
        }
    if (keep == 0) {
        free(items);
        return TROVE_OK;
    }
    pthread_mutex_lock(&s->mu);
    if (keep + s->nstaged > cap) {
        size_t want = keep + s->nstaged;
        struct staged *p =
            want > SIZE_MAX / sizeof *p ? NULL : trove__realloc(items, want * sizeof *p);
        if (p) {
            items = p;
            cap = want;
        } else {
            rc = TROVE_ERR_NOMEM;
        }
    }
    if (rc == TROVE_OK) {
        if (s->nstaged)
            memcpy(items + keep, s->staged, s->nstaged * sizeof *items);
        free(s->staged);
        s->staged = items;
        s->nstaged += keep;
        s->capstaged = cap;
        s->staged_bytes += bytes;
    }
    pthread_mutex_unlock(&s->mu);
    if (rc != TROVE_OK) { /* lost: the publish fails, and says so */
        for (size_t i = 0; i < keep; i++)
            unstage(s, &items[i]);
        free(items);
    }
    return rc;
}

int trove__s3_publish(struct trove_backend *base, uint64_t *overhead_out)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct publish_job j;
    size_t n, cap, nunits = 0;
    int rc, r;

    if (overhead_out)
        *overhead_out = 0;
    memset(&j, 0, sizeof j);
    pthread_mutex_lock(&s->mu);
    j.items = s->staged;
    n = s->nstaged;
    cap = s->capstaged;
    s->staged = NULL;
    s->nstaged = s->capstaged = s->staged_bytes = 0;
    pthread_mutex_unlock(&s->mu);
    if (n == 0) {
        free(j.items);
        return TROVE_OK;
    }
    j.s = s;
    atomic_init(&j.overhead, 0);
    if ((rc = trove__s3_ensure_loaded(s)) == TROVE_OK && (rc = plan(s, &j, n, &nunits)) == TROVE_OK)
        rc = publish_units(&j, nunits);
    if (overhead_out)
        *overhead_out = atomic_load(&j.overhead);
    free(j.order);
    free(j.units);
    r = restage(s, j.items, n, cap);
    return rc != TROVE_OK ? rc : r;
}

size_t trove__s3_staged_bytes(struct trove_backend *be)
{
    struct s3_backend *s = (struct s3_backend *)be;
    size_t n;

    if (!trove__s3_is(be))
        return 0;
    pthread_mutex_lock(&s->mu);
    n = s->staged_bytes;
    pthread_mutex_unlock(&s->mu);
    return n;
}
