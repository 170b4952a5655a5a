/*
 * backend_s3.c: the object backend on an S3-compatible object store, over libcurl. Object
 * d lives either loose, at key PREFIX/objects/<32 hex digits of d>, or inside a pack, at
 * PREFIX/packs/<32 hex> (the TRVPACK1 format of pack.h; the name is the xxh3-128 of the
 * whole pack), so `aws s3 ls` shows the objects and the packs and each one's xxh3-128 is
 * its name. PREFIX/packs/<hex>.dead lists a pack's deleted entries.
 * PREFIX/packs/<32 hex>.bad records that object <32 hex> was found damaged (its stored
 * bytes do not hash to its name; a line of text says how it was found): the quarantine of
 * backend.c. The records sit beside the packs so that the one listing that loads the pack
 * index loads them too, at no request more; a get of a recorded object answers
 * TROVE_ERR_CHECKSUM without a request, and a put of its good bytes replaces it (delete,
 * put) and deletes the record.
 *
 * Requests (s3_request.c). Every request runs in one curl multi handle driven by one
 * engine thread (so all share one connection cache, and any number are in flight without
 * a thread each): trove__s3_perform() submits and waits, publish keeps PUBLISH_IN_FLIGHT
 * in flight from its thread, and s3_get_start (trove_backend_get_start) is called back by
 * the engine. Each has SigV4 signing by libcurl itself (CURLOPT_AWS_SIGV4,
 * with the access key and secret as user name and password), the body's SHA-256 in
 * x-amz-content-sha256 (curl 7.88 hashes the body into the signature but does not send the
 * header S3 requires; trove computes the same hash with libcrypto), a timeout per request,
 * and retries with exponential backoff
 * and full jitter for what S3 says is worth retrying: 5xx, 429 and 503 SlowDown, timeouts
 * and dropped connections. An answer that is not a success is turned into a negative code
 * (404 -> TROVE_ERR_NOTFOUND, the rest TROVE_ERR_REMOTE) and a message that names the
 * request, the bucket and key, and what S3 said: the HTTP status and the <Code> and
 * <Message> of its XML body (trove_backend_s3_last_error).
 *
 * Trust. Bytes from the network are bounded before they are kept: a success body by the
 * caller's max_len (the Content-Length first, then the bytes that really arrive), an error
 * body by ERR_BODY_MAX, a listing page by LIST_BODY_MAX, a pack's tail by TAIL_GET (s3_load.c) and the
 * pack's size (from the answer's Content-Range) by PACK_MAX before its footer is read; a
 * footer's count and offset are checked by pack.c against that size, and the index by its
 * checksum, before either is used. The XML scanner (s3_xml.c) reads only inside the bytes
 * received. get's bytes are then hashed against their name by backend.c as for every
 * backend, packed or loose.
 *
 * put-if-absent. S3 has no create-exclusive PUT that every compatible server honours, so a
 * put is HEAD then PUT. Two writers racing on one name both see 404 and both PUT; that is
 * safe because the name is the digest of the bytes: both PUTs carry the same bytes, and an
 * S3 PUT replaces an object atomically, so a reader sees either no object or the whole
 * one, never a mixture. The only cost of the race is one redundant upload (and both
 * callers being told created = 1). An object already in a known pack is present: no
 * request at all.
 *
 * Staged puts (trove_backend_stage) are kept in memory, copied, until publish. Publish
 * packs the ones under LOOSE_MIN into packs of at most PACK_MAX bytes, each one PUT (no
 * HEAD: its name is new content), and puts the bigger ones loose as above: one thread
 * keeps PUBLISH_IN_FLIGHT units (a pack, or a loose object's HEAD then PUT) in flight on
 * the engine at a time. A failed publish keeps what did not go up staged, so a second
 * publish finishes the job. An object staged twice, or already in a known pack, is sent
 * once or not at all.
 *
 * The pack index (s3_packs.c) is loaded lazily (s3_load.c), by the first operation that
 * needs it, not at open: one listing of PREFIX/packs/, then each pack's tail with one suffix-range GET
 * (its footer and index; a second ranged GET when the index is bigger than what came) and
 * its .dead record when listed, several packs at once. A pack whose tail fails its checks
 * is unreadable (s3_unreadable), never guessed at. A get or size that finds a digest
 * neither in the index nor loose, and a get whose pack answers 404 (deleted by another
 * handle's gc), list the packs again once and load the new ones: another process may have
 * published since. A packed get is one ranged GET; a packed size, no request. A packed
 * delete replaces the pack's .dead record (one PUT); a pack with no live entry left is
 * deleted, and one with more than half its bytes dead is rewritten into a new pack.
 *
 * A bucket that does not exist yet is created by the first PUT that finds it missing
 * (NoSuchBucket), then the PUT is retried.
 *
 * Thread-safety: every op may run from several threads at once (the prefetcher's gets);
 * the handle pool, the last error, the staged list and the pack index each sit under the
 * one mutex, held only to take or return an entry or to look up or change the index,
 * never across a request. Loads of the pack list take turns (load_mu), and so do deletes
 * (del_mu), which change a pack's .dead record by a read-modify-write of the index.
 */
#define _GNU_SOURCE /* timegm */

#include "s3_request.h"
#include "common/alloc.h"
#include "backend_s3.h"
#include "pack.h"
#include "refmap.h"
#include "s3_load.h"
#include "s3_packs.h"
#include "s3_publish.h"
#include "s3_text.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct trove_backend_ops s3_ops;

/* ---- packs: reading ------------------------------------------------------------------ */

/* Where packed object d is read from: its pack and the range in it. */
struct place {
    char hex[33];
    uint32_t slot;
    uint64_t off, len;
};

static int find_packed(struct s3_backend *s, const struct trove_digest *d, struct place *pl)
{
    const struct ref_entry *m;
    int found;

    pthread_mutex_lock(&s->mu);
    if ((found = (m = trove__s3_packs_find(&s->packs, d)) != NULL)) {
        pl->slot = m->dict_index;
        pl->off = m->committed;
        pl->len = m->len;
        memcpy(pl->hex, s->packs.p[pl->slot].hex, sizeof pl->hex);
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

int trove__s3_is_packed(struct s3_backend *s, const struct trove_digest *d)
{
    int found;
    pthread_mutex_lock(&s->mu);
    found = trove__s3_packs_find(&s->packs, d) != NULL;
    pthread_mutex_unlock(&s->mu);
    return found;
}

/* Packed object pl into out: one ranged GET, refused before it when longer than max_len. */
static int packed_get(struct s3_backend *s, const struct place *pl, struct trove_bytes *out,
                      size_t max_len)
{
    char range[64];
    struct obj o;

    if (pl->len > (uint64_t)max_len)
        return TROVE_ERR_LIMIT;
    if (pl->len == 0)
        return TROVE_OK;
    assert(pl->len <= PACK_MAX); /* the entry lies inside a pack no bigger */
    trove__s3_pack_names(s, pl->hex, "", &o);
    snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)pl->off,
             (unsigned long long)(pl->off + pl->len - 1));
    return trove__s3_get_exact(s, &o, range, out, pl->len);
}

/* Pack pl answered 404: deleted since it was listed (another handle's gc or repack). Its
 * objects move to other copies the index knows, or are forgotten until a refresh. */
static void forget_pack(struct s3_backend *s, const struct place *pl)
{
    pthread_mutex_lock(&s->mu);
    if (strcmp(s->packs.p[pl->slot].hex, pl->hex) == 0)
        trove__s3_packs_drop(&s->packs, pl->slot);
    pthread_mutex_unlock(&s->mu);
}

/* ---- packs: writing and deleting ----------------------------------------------------- */

/* Pack hex (len bytes, holding entries e[0..n), taken over) is up: add it to the index. A
 * name this handle has seen before (a pack of these very bytes, since deleted, or
 * unreadable, or a .dead record listed alone) may have left a .dead record, which would
 * hide these objects: it goes first. */
int trove__s3_pack_stored(struct s3_backend *s, const char *hex, uint64_t len,
                          struct trove__pack_entry *e, size_t n)
{
    struct obj o;
    int rc, seen;

    pthread_mutex_lock(&s->mu);
    seen = trove__s3_packs_slot(&s->packs, hex) >= 0 || trove__s3_packs_known(&s->packs, hex) ||
           trove__s3_packs_orphan(&s->packs, hex);
    pthread_mutex_unlock(&s->mu);
    trove__s3_pack_names(s, hex, ".dead", &o);
    if (seen && (rc = trove__s3_delete_at(s, &o)) != TROVE_OK) {
        free(e);
        return rc;
    }
    pthread_mutex_lock(&s->mu);
    trove__s3_packs_forget_orphan(&s->packs, hex);
    rc = trove__s3_packs_add(&s->packs, hex, len, (int64_t)time(NULL), e, n, NULL, 0, NULL);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* The name of pack bytes buf: PREFIX/packs/<xxh3-128 of buf>, its hex in hex. */
void trove__s3_pack_name(const struct s3_backend *s, const struct trove_bytes *buf, char hex[33],
                         struct obj *o)
{
    struct trove_digest name;

    trove_digest_of(buf->ptr, buf->len, &name);
    trove_digest_hex(&name, hex);
    trove__s3_pack_names(s, hex, "", o);
}

/* PUT pack bytes buf, holding entries e[0..n) (taken over), and add it to the index. No
 * HEAD: the name is new content, and a PUT of the same bytes replaces them with themselves. */
static int store_pack(struct s3_backend *s, const struct trove_bytes *buf,
                      struct trove__pack_entry *e, size_t n)
{
    char hex[33];
    struct obj o;
    int rc;

    trove__s3_pack_name(s, buf, hex, &o);
    if ((rc = trove__s3_put_at(s, &o, buf->ptr, buf->len)) != TROVE_OK) {
        free(e);
        return rc;
    }
    return trove__s3_pack_stored(s, hex, buf->len, e, n);
}

/* Rewrite pack slot, more than half of whose object bytes are dead, as a new pack of its
 * live entries: one GET of the whole pack, one PUT of the new one, then the old pack and
 * its record deleted. Any failure leaves the old pack as it is: still right, only bigger. */
static void repack(struct s3_backend *s, uint32_t slot)
{
    struct trove__pack_entry *live = NULL, *e = NULL;
    struct trove_bytes old = {0}, buf = {0};
    struct trove_digest got;
    size_t n = 0;
    uint64_t size;
    char hex[33];
    struct obj o;
    int rc;

    pthread_mutex_lock(&s->mu);
    memcpy(hex, s->packs.p[slot].hex, sizeof hex);
    size = s->packs.p[slot].size;
    rc = trove__s3_packs_live(&s->packs, slot, &live, &n);
    pthread_mutex_unlock(&s->mu);
    trove__s3_pack_names(s, hex, "", &o);
    if (rc != TROVE_OK || trove__s3_get_exact(s, &o, NULL, &old, size) != TROVE_OK ||
        !(e = trove__mallocarray(n + 1, sizeof *e)))
        goto out;
    for (size_t k = 0; k < n; k++) { /* entries lie inside the pack: checked at load */
        trove_digest_of(old.ptr + live[k].offset, (size_t)live[k].len, &got);
        if (!trove_digest_equal(&got, &live[k].d))
            goto out; /* damaged bytes are not copied: the pack stays for verify to see */
        e[k] = live[k];
        e[k].offset = buf.len;
        if (trove_bytes_append(&buf, old.ptr + live[k].offset, (size_t)live[k].len) != TROVE_OK)
            goto out;
    }
    if (trove__pack_finish(&buf, e, n) != TROVE_OK)
        goto out;
    rc = store_pack(s, &buf, e, n); /* the index has two copies of each now */
    e = NULL;
    if (rc != TROVE_OK)
        goto out;
    pthread_mutex_lock(&s->mu);
    trove__s3_packs_drop(&s->packs, slot); /* ... and reads the new one */
    pthread_mutex_unlock(&s->mu);
    if (trove__s3_delete_at(s, &o) == TROVE_OK) {
        trove__s3_pack_names(s, hex, ".dead", &o);
        trove__s3_delete_at(s, &o);
    }
out:
    free(live);
    free(e);
    trove_bytes_free(&old);
    trove_bytes_free(&buf);
}

/* Delete d from pack slot, where it is live: the pack's .dead record replaced by one that
 * names d too (one PUT), or, when d was its last live entry, the pack and its record
 * deleted; then the index. *repack_out: the pack is now more than half dead bytes. */
static int pack_entry_delete(struct s3_backend *s, uint32_t slot, const struct trove_digest *d,
                             int *repack_out)
{
    struct trove_bytes rec = {0};
    const struct trove__s3_pack *p;
    char hex[33];
    struct obj o;
    int rc = TROVE_OK, last;

    *repack_out = 0;
    pthread_mutex_lock(&s->mu);
    p = &s->packs.p[slot];
    memcpy(hex, p->hex, sizeof hex);
    last = p->nlive == 1;
    if (!last)
        rc = trove__s3_packs_dead_record(&s->packs, slot, d, &rec);
    pthread_mutex_unlock(&s->mu);
    if (rc != TROVE_OK)
        goto out;
    trove__s3_pack_names(s, hex, last ? "" : ".dead", &o);
    if ((rc = last ? trove__s3_delete_at(s, &o) : trove__s3_put_at(s, &o, rec.ptr, rec.len)) !=
        TROVE_OK)
        goto out;
    if (last) { /* best effort: a record without its pack is ignored */
        trove__s3_pack_names(s, hex, ".dead", &o);
        trove__s3_delete_at(s, &o);
    }
    pthread_mutex_lock(&s->mu);
    rc = trove__s3_packs_mark_dead(&s->packs, slot, d);
    if (rc == TROVE_ERR_NOTFOUND)
        rc = TROVE_OK; /* its pack was dropped meanwhile (a get found it deleted) */
    p = &s->packs.p[slot];
    *repack_out = rc == TROVE_OK && !p->gone && p->live_bytes * 2 < p->data_bytes;
    pthread_mutex_unlock(&s->mu);
out:
    trove_bytes_free(&rec);
    return rc;
}

/* Delete packed object d from every pack that holds it live, the copy the index reads
 * last (so that a failure leaves the index on a copy that is still there). Under del_mu. */
static int packed_delete(struct s3_backend *s, const struct trove_digest *d)
{
    uint32_t holders[8];
    size_t n;
    int rc = TROVE_OK, rp;

    for (;;) {
        pthread_mutex_lock(&s->mu);
        n = trove__s3_packs_holders(&s->packs, d, holders, sizeof holders / sizeof holders[0]);
        pthread_mutex_unlock(&s->mu);
        if (n == 0)
            return TROVE_OK;
        for (size_t k = 0; k < n; k++) {
            if ((rc = pack_entry_delete(s, holders[k], d, &rp)) != TROVE_OK)
                return rc;
            if (rp)
                repack(s, holders[k]);
        }
    }
}

/* ---- the object operations ----------------------------------------------------------- */

static int s3_put(struct trove_backend *base, const struct trove_digest *d, const void *data,
                  size_t len, int *created_out)
{
    struct s3_backend *s = (struct s3_backend *)base;
    int rc;

    *created_out = 0;
    if ((rc = trove__s3_ensure_loaded(s)) != TROVE_OK)
        return rc;
    if (trove__s3_is_packed(s, d))
        return TROVE_OK; /* present, in a pack */
    return trove__s3_loose_put(s, d, data, len, created_out);
}

/* Packed (one ranged GET), else loose (one GET), else, once, the packs published since. */
static int s3_get(struct trove_backend *base, const struct trove_digest *d,
                  struct trove_bytes *out, size_t max_len)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct place pl;
    unsigned seen;
    int rc;

    if ((rc = trove__s3_ensure_loaded(s)) != TROVE_OK)
        return rc;
    seen = atomic_load(&s->gen);
    if (find_packed(s, d, &pl)) {
        if ((rc = packed_get(s, &pl, out, max_len)) != TROVE_ERR_NOTFOUND)
            return rc;
        forget_pack(s, &pl);
    }
    if ((rc = trove__s3_loose_get(s, d, out, max_len)) != TROVE_ERR_NOTFOUND)
        return rc;
    if ((rc = trove__s3_refresh(s, seen)) != TROVE_OK)
        return rc;
    if (!find_packed(s, d, &pl))
        return TROVE_ERR_NOTFOUND;
    if ((rc = packed_get(s, &pl, out, max_len)) == TROVE_ERR_NOTFOUND)
        forget_pack(s, &pl);
    return rc;
}

/* An asynchronous get in the engine: one ranged GET of a pack, or one GET of a loose key. */
struct get_run {
    struct s3_xfer x; /* first: done gets &x */
    struct req r;
    struct obj o;
    char range[64];
    struct place pl;
    int packed;
    struct s3_backend *s;
    trove_get_done_fn done;
    void *ctx;
};

static void get_ended(struct s3_xfer *x)
{
    struct get_run *g = (struct get_run *)x;
    struct s3_backend *s = g->s;
    trove_get_done_fn done = g->done;
    void *ctx = g->ctx;
    int rc = x->rc;

    if (g->packed && (rc == TROVE_ERR_LIMIT || (rc == TROVE_OK && g->r.out->len != g->pl.len))) {
        trove__s3_set_err(s,
                          "S3 GET %s (%s): the answer is not the %llu bytes asked for (does the "
                          "server honour Range?)",
                          g->o.what, g->range, (unsigned long long)g->pl.len);
        g->r.out->len = 0;
        rc = TROVE_ERR_REMOTE;
    } else if (g->packed && rc == TROVE_ERR_NOTFOUND) {
        forget_pack(s, &g->pl); /* deleted since listed: a get now looks again */
    }
    free(g);
    done(ctx, rc);
}

/*
 * s3_get's first request, in the engine: packed, one ranged GET; else one GET of the loose
 * key. What s3_get does after a miss (the packs published since, listed again) is not done
 * here: the miss is the answer, and a caller that needs more asks trove_backend_get. Before
 * the index is loaded, and for an empty packed object, there is nothing to start
 * (TROVE_ERR_INVALID): get it the ordinary way.
 */
static int s3_get_start(struct trove_backend *base, const struct trove_digest *d,
                        struct trove_bytes *out, size_t max_len, trove_get_done_fn done,
                        void *ctx)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct get_run *g;
    int rc;

    if (trove__s3_on_engine() && !atomic_load(&s->loaded))
        return TROVE_ERR_INVALID; /* loading waits for requests: not on the engine */
    if ((rc = trove__s3_ensure_loaded(s)) != TROVE_OK)
        return rc;
    if (!(g = trove__calloc(1, sizeof *g)))
        return TROVE_ERR_NOMEM;
    g->s = s;
    g->done = done;
    g->ctx = ctx;
    g->r.method = "GET";
    g->r.out = out;
    g->r.max_len = max_len;
    if ((g->packed = find_packed(s, d, &g->pl))) {
        if (g->pl.len > (uint64_t)max_len || g->pl.len == 0) {
            rc = g->pl.len == 0 ? TROVE_ERR_INVALID : TROVE_ERR_LIMIT;
            free(g);
            return rc;
        }
        trove__s3_pack_names(s, g->pl.hex, "", &g->o);
        snprintf(g->range, sizeof g->range, "bytes=%llu-%llu", (unsigned long long)g->pl.off,
                 (unsigned long long)(g->pl.off + g->pl.len - 1));
        g->r.range = g->range;
        g->r.max_len = (size_t)g->pl.len;
    } else {
        trove__s3_obj_names(s, d, &g->o);
    }
    g->r.url = g->o.url;
    g->r.what = g->o.what;
    g->x.r = &g->r;
    g->x.done = get_ended;
    if ((rc = trove__s3_submit(s, &g->x)) != TROVE_OK)
        free(g);
    return rc;
}

/* Packed: the index knows, no request. Else a HEAD, else, once, the packs published since. */
static int s3_size(struct trove_backend *base, const struct trove_digest *d, uint64_t *len_out)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct place pl;
    unsigned seen;
    int rc;

    if ((rc = trove__s3_ensure_loaded(s)) != TROVE_OK)
        return rc;
    seen = atomic_load(&s->gen);
    if (!find_packed(s, d, &pl)) {
        if ((rc = trove__s3_loose_size(s, d, len_out)) != TROVE_ERR_NOTFOUND)
            return rc;
        if ((rc = trove__s3_refresh(s, seen)) != TROVE_OK)
            return rc;
        if (!find_packed(s, d, &pl))
            return TROVE_ERR_NOTFOUND;
    }
    *len_out = pl.len;
    return TROVE_OK;
}

/* Loose: HEAD (S3 deletes a missing key with 204, so ask first) and DELETE. Packed: out of
 * every pack, and any loose copy too (a put before a stage), so that it is gone. */
static int s3_del(struct trove_backend *base, const struct trove_digest *d)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct place pl;
    struct obj o;
    struct req r;
    unsigned seen;
    int rc, loose_absent = 0;

    if ((rc = trove__s3_ensure_loaded(s)) != TROVE_OK)
        return rc;
    pthread_mutex_lock(&s->del_mu);
    seen = atomic_load(&s->gen);
    trove__s3_obj_names(s, d, &o);
    if (!find_packed(s, d, &pl)) {
        if ((rc = trove__s3_bare_at(s, &o, "HEAD", &r)) == TROVE_OK) {
            rc = trove__s3_bare_at(s, &o, "DELETE", &r);
            goto out;
        }
        if (rc != TROVE_ERR_NOTFOUND || (rc = trove__s3_refresh(s, seen)) != TROVE_OK)
            goto out;
        if (!find_packed(s, d, &pl)) {
            rc = TROVE_ERR_NOTFOUND;
            goto out;
        }
        loose_absent = 1;
    }
    if ((rc = packed_delete(s, d)) == TROVE_OK && !loose_absent)
        rc = trove__s3_delete_at(s, &o);
out:
    pthread_mutex_unlock(&s->del_mu);
    return rc;
}


struct list_objects {
    int (*fn)(void *ctx, const struct trove_digest *d);
    int (*aged)(void *ctx, const struct trove_digest *d, int64_t mtime);
    void *ctx;
    struct s3_backend *s;
};

static int list_object_key(void *ctx, const char *rest, int64_t mtime)
{
    struct list_objects *l = ctx;
    struct trove_digest d;

    if (strlen(rest) != 32 || trove_digest_parse(rest, &d) != TROVE_OK || trove_digest_is_zero(&d))
        return 0; /* not an object of trove's: ignored, as strangers in fs dirs */
    if (trove__s3_is_packed(l->s, &d))
        return 0; /* also packed: listed with the packed ones */
    return l->fn ? l->fn(l->ctx, &d) : l->aged(l->ctx, &d, mtime);
}

/* Every object once: the loose ones that are not also packed, then the packed ones (with
 * their pack's LastModified), after loading the packs published since the last look. */
static int list_all(struct s3_backend *s, struct list_objects *l)
{
    struct trove_digest *d = NULL;
    int64_t *t = NULL;
    size_t n = 0;
    int rc;

    if ((rc = trove__s3_refresh(s, atomic_load(&s->gen))) != TROVE_OK ||
        (rc = trove__s3_list_keys(s, "objects/", list_object_key, l)) != TROVE_OK)
        return rc;
    pthread_mutex_lock(&s->mu);
    rc = trove__s3_packs_snapshot(&s->packs, &d, l->aged ? &t : NULL, &n);
    pthread_mutex_unlock(&s->mu);
    for (size_t k = 0; rc == TROVE_OK && k < n; k++)
        rc = l->fn ? l->fn(l->ctx, &d[k]) : l->aged(l->ctx, &d[k], t[k]);
    free(d);
    free(t);
    return rc;
}

static int s3_list(struct trove_backend *base, int (*fn)(void *ctx, const struct trove_digest *d),
                   void *ctx)
{
    struct list_objects l = {fn, NULL, ctx, (struct s3_backend *)base};
    return list_all(l.s, &l);
}

/* The packs whose tail failed its checks, as "packs/<hex>" with why. With remove, each is
 * fetched again first: one that now reads is kept (the next refresh loads it), one still
 * bad is deleted with its .dead record. */
static int s3_unreadable(struct trove_backend *base, int remove,
                         int (*fn)(void *ctx, const char *name, const char *why), void *ctx)
{
    struct s3_backend *s = (struct s3_backend *)base;
    int rc;

    if ((rc = trove__s3_ensure_loaded(s)) != TROVE_OK)
        return rc;
    for (size_t k = 0;;) {
        char hex[33] = "", name[48], why[224];
        struct obj o;
        long b;
        int bad;

        pthread_mutex_lock(&s->mu);
        if (k < s->packs.nbad) {
            memcpy(hex, s->packs.bad[k].hex, sizeof hex);
            memcpy(why, s->packs.bad[k].why, sizeof why);
        }
        pthread_mutex_unlock(&s->mu);
        if (!hex[0])
            break;
        snprintf(name, sizeof name, "packs/%s", hex);
        if (fn(ctx, name, why) != 0)
            break;
        if (!remove) {
            k++;
            continue;
        }
        if ((rc = trove__s3_pack_recheck(s, hex, &bad)) != TROVE_OK)
            break;
        trove__s3_pack_names(s, hex, "", &o);
        if (bad && (rc = trove__s3_delete_at(s, &o)) != TROVE_OK)
            break;
        trove__s3_pack_names(s, hex, ".dead", &o);
        if (bad && (rc = trove__s3_delete_at(s, &o)) != TROVE_OK)
            break;
        pthread_mutex_lock(&s->mu);
        for (b = 0; b < (long)s->packs.nbad; b++)
            if (strcmp(s->packs.bad[b].hex, hex) == 0)
                break;
        trove__s3_packs_forget_bad(&s->packs, (size_t)b);
        pthread_mutex_unlock(&s->mu);
    }
    return rc;
}

int trove__s3_size_sole(struct trove_backend *be, const struct trove_digest *d, int loose,
                        uint64_t *len_out)
{
    struct s3_backend *s = (struct s3_backend *)be;
    struct place pl;
    int rc;

    if ((rc = trove__s3_ensure_loaded(s)) != TROVE_OK)
        return rc;
    if (!find_packed(s, d, &pl)) { /* the sole writer knows every pack: no refresh */
        int was_dead;
        /* a small object is looked for loose too when a pack lost it: a damaged copy healed
         * by a put of its good bytes went loose (s3_put), and is not put a second time */
        pthread_mutex_lock(&s->mu);
        was_dead = !loose && trove__s3_packs_was_dead(&s->packs, d);
        pthread_mutex_unlock(&s->mu);
        return loose || was_dead ? trove__s3_loose_size(s, d, len_out) : TROVE_ERR_NOTFOUND;
    }
    *len_out = pl.len;
    return TROVE_OK;
}

/* ---- the quarantine ------------------------------------------------------------------ */

static void bad_key(const struct trove_digest *d, char rel[48])
{
    char hex[33];

    trove_digest_hex(d, hex);
    snprintf(rel, 48, "packs/%s" BAD_SUFFIX, hex);
}

/* Record d as damaged: the record's PUT, then the set (so a record this handle could not
 * write is still honoured by it). Even a reader records what it found. */
static int s3_quarantine(struct trove_backend *base, const struct trove_digest *d,
                         const char *why)
{
    struct s3_backend *s = (struct s3_backend *)base;
    char rel[48], line[256];
    int created, rc, n;

    pthread_mutex_lock(&s->mu);
    rc = trove__refmap_insert(&s->bad_objects, d, &created) ? TROVE_OK : TROVE_ERR_NOMEM;
    pthread_mutex_unlock(&s->mu);
    if (rc != TROVE_OK)
        return rc;
    bad_key(d, rel);
    n = snprintf(line, sizeof line, "%s\n", why);
    return trove__s3_key_put(base, rel, line,
                             n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* 1 if d is on record. The records come with the pack index: the first call of a handle
 * loads it (a get or put would, in any case), except on the engine thread, where loading
 * would wait for itself: there what is known answers. */
static int s3_quarantined(struct trove_backend *base, const struct trove_digest *d)
{
    struct s3_backend *s = (struct s3_backend *)base;
    int found;

    if (!atomic_load(&s->loaded) && !trove__s3_on_engine()) {
        int rc = trove__s3_ensure_loaded(s);
        if (rc == TROVE_ERR_REMOTE) /* the operation asked next reports it, not retrying */
            trove__s3_load_failed(s, rc);
    }
    pthread_mutex_lock(&s->mu);
    found = trove__refmap_find(&s->bad_objects, d) != NULL;
    pthread_mutex_unlock(&s->mu);
    return found;
}

static int s3_release(struct trove_backend *base, const struct trove_digest *d)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct ref_entry *e;
    char rel[48];
    int found;

    if (!atomic_load(&s->loaded) && !trove__s3_on_engine())
        trove__s3_ensure_loaded(s);
    pthread_mutex_lock(&s->mu);
    found = trove__refmap_find(&s->bad_objects, d) != NULL;
    pthread_mutex_unlock(&s->mu);
    if (!found)
        return TROVE_OK;
    bad_key(d, rel);
    if (trove__s3_key_del(base, rel) != TROVE_OK)
        return TROVE_ERR_REMOTE; /* the record stays: the object is still served as damaged */
    pthread_mutex_lock(&s->mu);
    if ((e = trove__refmap_find(&s->bad_objects, d)) != NULL)
        trove__refmap_remove(&s->bad_objects, e);
    pthread_mutex_unlock(&s->mu);
    return TROVE_OK;
}

static int s3_quarantine_list(struct trove_backend *base,
                              int (*fn)(void *ctx, const struct trove_digest *d), void *ctx)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct trove_digest *d = NULL;
    size_t n = 0;
    int rc;

    /* The records written since this handle loaded, by other handles, too. */
    if ((rc = trove__s3_refresh(s, atomic_load(&s->gen))) != TROVE_OK)
        return rc;
    pthread_mutex_lock(&s->mu);
    if (s->bad_objects.count > 0 &&
        !(d = trove__malloc(s->bad_objects.count * sizeof *d)))
        rc = TROVE_ERR_NOMEM;
    for (size_t k = 0; rc == TROVE_OK && k < s->bad_objects.cap; k++)
        if (s->bad_objects.tab[k].used)
            d[n++] = s->bad_objects.tab[k].d;
    pthread_mutex_unlock(&s->mu);
    for (size_t k = 0; rc == TROVE_OK && k < n; k++)
        if ((rc = fn(ctx, &d[k])) != 0)
            break;
    free(d);
    return rc;
}

/* ---- open and close ------------------------------------------------------------------ */

static void s3_close(struct trove_backend *base)
{
    struct s3_backend *s = (struct s3_backend *)base;
    const char *stats = getenv("TROVE_S3_STATS");

    if (stats && *stats && strcmp(stats, "0") != 0 && s->bucket) /* for benchmarks */
        fprintf(stderr, "s3 stats: s3://%s/%s: %llu requests, %llu retried\n", s->bucket,
                s->prefix ? s->prefix : "", (unsigned long long)atomic_load(&s->requests),
                (unsigned long long)atomic_load(&s->retried));
    trove__s3_engine_stop(s);
    for (int i = 0; i < s->npool; i++)
        curl_easy_cleanup(s->pool[i]);
    for (size_t i = 0; i < s->nstaged; i++)
        free(s->staged[i].data);
    free(s->staged);
    trove__refmap_free(&s->staged_set);
    trove__refmap_free(&s->bad_objects);
    trove__s3_packs_free(&s->packs);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->load_mu);
    pthread_mutex_destroy(&s->del_mu);
    pthread_mutex_destroy(&s->qmu);
    free(s->bucket);
    free(s->prefix);
    free(s->bucket_url);
    free(s->access_key);
    if (s->secret_key)
        memset(s->secret_key, 0, strlen(s->secret_key));
    free(s->secret_key);
    free(s->session_token);
    free(s);
}

static const struct trove_backend_ops s3_ops = {
    .name = "s3",
    .put = s3_put,
    .get = s3_get,
    .get_start = s3_get_start,
    .size = s3_size,
    .del = s3_del,
    .list = s3_list,
    .stage = trove__s3_stage,
    .publish = trove__s3_publish,
    .quarantine = s3_quarantine,
    .quarantined = s3_quarantined,
    .release = s3_release,
    .quarantine_list = s3_quarantine_list,
    .unreadable = s3_unreadable,
    .close = s3_close,
};

static const char *pick(const char *given, const char *env)
{
    const char *v;
    if (given && *given)
        return given;
    v = env ? getenv(env) : NULL;
    return v && *v ? v : NULL;
}

/* The [profile] section of the AWS CLI's credentials file: its three keys, each strdup'ed
 * into the slot if that slot is still empty. A missing file is no error. */
static int read_profile(const char *profile, char **key, char **secret, char **token)
{
    char path[1024], line[2048], want[256];
    const char *file = getenv("AWS_SHARED_CREDENTIALS_FILE"), *home = getenv("HOME");
    FILE *f;
    int in = 0, rc = TROVE_OK;

    if (file && *file)
        snprintf(path, sizeof path, "%s", file);
    else if (home && *home)
        snprintf(path, sizeof path, "%s/.aws/credentials", home);
    else
        return TROVE_OK;
    if (!(f = fopen(path, "r")))
        return TROVE_OK;
    snprintf(want, sizeof want, "[%s]", profile);
    while (fgets(line, sizeof line, f)) {
        char *p = line, *e, *eq, *v, **slot = NULL;
        while (*p == ' ' || *p == '\t')
            p++;
        e = p + strlen(p);
        while (e > p && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            *--e = '\0';
        if (*p == '[') {
            in = !strcmp(p, want);
            continue;
        }
        if (!in || *p == '#' || *p == ';' || !(eq = strchr(p, '=')))
            continue;
        v = eq + 1;
        while (eq > p && (eq[-1] == ' ' || eq[-1] == '\t'))
            eq--;
        *eq = '\0';
        while (*v == ' ' || *v == '\t')
            v++;
        if (!strcmp(p, "aws_access_key_id"))
            slot = key;
        else if (!strcmp(p, "aws_secret_access_key"))
            slot = secret;
        else if (!strcmp(p, "aws_session_token"))
            slot = token;
        if (slot && !*slot && *v && !(*slot = trove__strdup(v))) {
            rc = TROVE_ERR_NOMEM;
            break;
        }
    }
    fclose(f);
    return rc;
}

static int bucket_ok(const char *b, size_t n)
{
    if (n < 3 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '-' ||
              b[i] == '.'))
            return 0;
    return b[0] != '-' && b[0] != '.' && b[n - 1] != '-' && b[n - 1] != '.';
}

static int prefix_ok(const char *p)
{
    size_t n = strlen(p);
    if (n > 512)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == '/'))
            return 0;
        if (c == '/' && i > 0 && p[i - 1] == '/')
            return 0;
    }
    return 1;
}

/* The four mutexes, all or none. 0 or an error number. */
static int init_locks(struct s3_backend *s)
{
    int rc;
    if ((rc = pthread_mutex_init(&s->mu, NULL)) != 0)
        return rc;
    if ((rc = pthread_mutex_init(&s->load_mu, NULL)) != 0) {
        pthread_mutex_destroy(&s->mu);
        return rc;
    }
    if ((rc = pthread_mutex_init(&s->del_mu, NULL)) != 0) {
        pthread_mutex_destroy(&s->load_mu);
        pthread_mutex_destroy(&s->mu);
        return rc;
    }
    if ((rc = pthread_mutex_init(&s->qmu, NULL)) != 0) {
        pthread_mutex_destroy(&s->del_mu);
        pthread_mutex_destroy(&s->load_mu);
        pthread_mutex_destroy(&s->mu);
    }
    return rc;
}

int trove_backend_s3_open(const char *url, const struct trove_s3_options *opt,
                          struct trove_backend **out)
{
    struct trove_s3_options none = {0};
    struct s3_backend *s = NULL;
    const char *b, *slash, *endpoint, *region, *profile, *env;
    char *prefix = NULL;
    size_t blen;
    int rc = TROVE_ERR_INVALID, virtual_host;

    if (out)
        *out = NULL;
    if (!url || !out || strncmp(url, "s3://", 5) != 0)
        return TROVE_ERR_INVALID;
    if (!opt)
        opt = &none;
    if ((rc = trove__s3_libs_load(NULL)) != TROVE_OK)
        return rc;
    b = url + 5;
    slash = strchr(b, '/');
    blen = slash ? (size_t)(slash - b) : strlen(b);
    if (!bucket_ok(b, blen))
        return TROVE_ERR_INVALID;
    if (!(s = trove__calloc(1, sizeof *s)))
        return TROVE_ERR_NOMEM;
    s->base.ops = &s3_ops;
    if (init_locks(s) != 0) {
        free(s);
        return TROVE_ERR_NOMEM;
    }
    atomic_init(&s->loaded, 0);
    atomic_init(&s->gen, 0);
    atomic_init(&s->requests, 0);
    atomic_init(&s->retried, 0);
    rc = TROVE_ERR_NOMEM;
    if (!(s->bucket = trove__malloc(blen + 1)))
        goto fail;
    memcpy(s->bucket, b, blen);
    s->bucket[blen] = '\0';
    {
        /* PREFIX without leading or trailing slashes, then one '/' after it. */
        const char *p = slash ? slash : "";
        size_t n;
        while (*p == '/')
            p++;
        n = strlen(p);
        while (n > 0 && p[n - 1] == '/')
            n--;
        if (!(prefix = trove__malloc(n + 2)))
            goto fail;
        memcpy(prefix, p, n);
        prefix[n] = '\0';
        rc = TROVE_ERR_INVALID;
        if (!prefix_ok(prefix))
            goto fail;
        rc = TROVE_ERR_NOMEM;
        if (n)
            strcat(prefix, "/");
        s->prefix = prefix;
        prefix = NULL;
    }
    region = pick(opt->region, "AWS_REGION");
    if (!region)
        region = pick(NULL, "AWS_DEFAULT_REGION");
    if (!region)
        region = "us-east-1";
    if (strlen(region) > 64 || strchr(region, ':')) {
        rc = TROVE_ERR_INVALID;
        goto fail;
    }
    snprintf(s->sigv4, sizeof s->sigv4, "aws:amz:%s:s3", region);
    endpoint = pick(opt->endpoint, "TROVE_S3_ENDPOINT");
    virtual_host = opt->addressing == TROVE_S3_VIRTUAL   ? 1
                   : opt->addressing == TROVE_S3_PATH    ? 0
                   : (env = getenv("TROVE_S3_ADDRESSING")) && !strcmp(env, "virtual") ? 1
                   : (env && !strcmp(env, "path")) ? 0
                                                   : !endpoint; /* AWS: virtual-host */
    {
        char host[512];
        const char *scheme = "https://", *rest;
        size_t need;
        if (endpoint) {
            const char *sep = strstr(endpoint, "://");
            if (!sep || strlen(endpoint) > 400) {
                rc = TROVE_ERR_INVALID;
                goto fail;
            }
            snprintf(host, sizeof host, "%.*s", (int)(sep + 3 - endpoint), endpoint);
            rest = sep + 3;
            scheme = host;
        } else {
            snprintf(host, sizeof host, "https://");
            rest = NULL;
        }
        need = strlen(scheme) + blen + strlen(region) + (rest ? strlen(rest) : 0) + 64;
        if (!(s->bucket_url = trove__malloc(need)))
            goto fail;
        if (rest) {
            size_t rn = strlen(rest);
            while (rn > 0 && rest[rn - 1] == '/')
                rn--;
            if (virtual_host)
                snprintf(s->bucket_url, need, "%s%s.%.*s", scheme, s->bucket, (int)rn, rest);
            else
                snprintf(s->bucket_url, need, "%s%.*s/%s", scheme, (int)rn, rest, s->bucket);
        } else if (virtual_host) {
            snprintf(s->bucket_url, need, "https://%s.s3.%s.amazonaws.com", s->bucket, region);
        } else {
            snprintf(s->bucket_url, need, "https://s3.%s.amazonaws.com/%s", region, s->bucket);
        }
    }
    {
        const char *k = pick(opt->access_key, "AWS_ACCESS_KEY_ID");
        const char *sk = pick(opt->secret_key, "AWS_SECRET_ACCESS_KEY");
        const char *t = pick(opt->session_token, "AWS_SESSION_TOKEN");
        if (k && sk) {
            if (!(s->access_key = trove__strdup(k)) || !(s->secret_key = trove__strdup(sk)) ||
                (t && !(s->session_token = trove__strdup(t))))
                goto fail;
        } else {
            profile = pick(opt->profile, "AWS_PROFILE");
            if ((rc = read_profile(profile ? profile : "default", &s->access_key, &s->secret_key,
                                   &s->session_token)) != TROVE_OK)
                goto fail;
            if (!s->access_key || !s->secret_key) {
                rc = TROVE_ERR_INVALID; /* no credentials anywhere */
                goto fail;
            }
        }
    }
    s->timeout_ms = opt->timeout_ms ? (long)opt->timeout_ms : 30000L;
    if (!opt->timeout_ms && (env = getenv("TROVE_S3_TIMEOUT_MS")) && atol(env) > 0)
        s->timeout_ms = atol(env);
    s->retries = opt->retries ? opt->retries : 5;
    if (!opt->retries && (env = getenv("TROVE_S3_RETRIES")) && *env)
        s->retries = (unsigned)strtoul(env, NULL, 10);
    s->verbose = (env = getenv("TROVE_S3_VERBOSE")) && *env && strcmp(env, "0") != 0;
    s->list_page = opt->list_page && opt->list_page <= 1000 ? opt->list_page : 1000;
    *out = &s->base;
    return TROVE_OK;
fail:
    free(prefix);
    s3_close(&s->base);
    return rc;
}

int trove_backend_s3_last_error(struct trove_backend *be, char *buf, size_t cap)
{
    struct s3_backend *s = (struct s3_backend *)be;
    if (!be || !buf || cap == 0 || be->ops != &s3_ops)
        return TROVE_ERR_INVALID;
    pthread_mutex_lock(&s->mu);
    snprintf(buf, cap, "%s", s->err);
    pthread_mutex_unlock(&s->mu);
    return TROVE_OK;
}

int trove_backend_s3_stats(struct trove_backend *be, uint64_t *requests_out,
                           uint64_t *retries_out)
{
    struct s3_backend *s = (struct s3_backend *)be;
    if (!be || be->ops != &s3_ops)
        return TROVE_ERR_INVALID;
    if (requests_out)
        *requests_out = atomic_load(&s->requests);
    if (retries_out)
        *retries_out = atomic_load(&s->retried);
    return TROVE_OK;
}

/* ---- named keys: the store's heads and lease (backend_s3.h) --------------------------- */

int trove__s3_is(const struct trove_backend *be)
{
    return be && be->ops == &s3_ops;
}

void trove__s3_url(const struct trove_backend *be, char *buf, size_t cap)
{
    const struct s3_backend *s = (const struct s3_backend *)be;
    size_t n = strlen(s->prefix);
    snprintf(buf, cap, "s3://%s%s%.*s", s->bucket, n ? "/" : "", n ? (int)n - 1 : 0, s->prefix);
}

int trove__s3_key_get(struct trove_backend *be, const char *rel, struct trove_bytes *out,
                      size_t max_len)
{
    struct s3_backend *s = (struct s3_backend *)be;
    struct obj o;
    struct req r = {0};

    trove__s3_key_names(s, rel, &o);
    out->len = 0;
    r.method = "GET";
    r.url = o.url;
    r.what = o.what;
    r.out = out;
    r.max_len = max_len;
    return trove__s3_perform(s, &r);
}

int trove__s3_key_exists(struct trove_backend *be, const char *rel)
{
    struct s3_backend *s = (struct s3_backend *)be;
    struct obj o;
    struct req r;
    int rc;

    trove__s3_key_names(s, rel, &o);
    rc = trove__s3_bare_at(s, &o, "HEAD", &r);
    return rc == TROVE_OK ? 1 : rc == TROVE_ERR_NOTFOUND ? 0 : rc;
}

int trove__s3_key_put(struct trove_backend *be, const char *rel, const void *data, size_t len)
{
    struct s3_backend *s = (struct s3_backend *)be;
    struct obj o;

    trove__s3_key_names(s, rel, &o);
    return trove__s3_put_at(s, &o, data, len);
}

int trove__s3_key_del(struct trove_backend *be, const char *rel)
{
    struct s3_backend *s = (struct s3_backend *)be;
    struct obj o;

    trove__s3_key_names(s, rel, &o);
    return trove__s3_delete_at(s, &o);
}

int trove__s3_key_list(struct trove_backend *be, const char *rel_prefix,
                       int (*fn)(void *ctx, const char *rest, int64_t mtime), void *ctx)
{
    return trove__s3_list_keys((struct s3_backend *)be, rel_prefix, fn, ctx);
}

int trove__s3_list_aged(struct trove_backend *be,
                        int (*fn)(void *ctx, const struct trove_digest *d, int64_t mtime),
                        void *ctx)
{
    struct list_objects l = {NULL, fn, ctx, (struct s3_backend *)be};
    return list_all(l.s, &l);
}
