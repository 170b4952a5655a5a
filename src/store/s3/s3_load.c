/*
 * s3_load.c: the S3 backend's pack index, loaded from the bucket (s3_load.h). One listing
 * of PREFIX/packs/ names the packs, their .dead records and the quarantine's .bad records;
 * each pack this handle does not know yet is then fetched by its tail alone: one
 * suffix-range GET of TAIL_GET bytes for its footer and index (a second ranged GET when
 * the index is bigger than what came), and its .dead record when the listing showed one,
 * several packs at once on up to LOAD_THREADS threads. What passed pack.c's checks goes
 * into the index (s3_packs.c); a pack whose tail fails them is recorded as bad
 * (s3_unreadable), never guessed at; a pack deleted since the listing is skipped.
 *
 * Trust. A listing names at most PACKS_MAX packs; a tail is at most TAIL_GET bytes, and
 * the pack's size (from the answer's Content-Range, which must name exactly the bytes
 * that came) at most PACK_MAX before its footer is read; the footer's count and offset are
 * checked by pack.c against that size, and the index by its checksum, before either is
 * used. A .dead record is taken only when it is whole digests, no more than the pack holds.
 *
 * Thread-safety: loads take turns under the backend's load_mu; the index and the
 * quarantine's set change only under its mu, held for the change alone, never across a
 * request. The requests themselves are s3_request.c's. backend_s3.c's header comment says
 * when a load happens (the first operation that needs the index, and a miss).
 */
#define _GNU_SOURCE

#include "s3_load.h"
#include "common/alloc.h"
#include "pack.h"
#include "refmap.h"
#include "s3_packs.h"
#include "s3_publish.h"
#include "s3_text.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOAD_THREADS 8             /* pack tails loaded at once */
#define TAIL_GET (64u << 10)       /* the suffix range that loads a pack's index */
#define PACKS_MAX (1u << 20)       /* packs one listing may name */

/* ---- work on several threads --------------------------------------------------------- */

struct par {
    int (*fn)(void *ctx, size_t i);
    void *ctx;
    size_t n;
    atomic_size_t next;
    atomic_int rc;
};

static void *par_worker(void *arg)
{
    struct par *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        int rc, ok = TROVE_OK;
        if (i >= p->n || atomic_load(&p->rc) != TROVE_OK)
            break;
        if ((rc = p->fn(p->ctx, i)) != TROVE_OK) {
            atomic_compare_exchange_strong(&p->rc, &ok, rc);
            break;
        }
    }
    return NULL;
}

/* fn(ctx, i) for every i in [0, n), on up to LOAD_THREADS threads (on this one alone
 * when n is 1 or no thread starts). After the first error no new i is begun; that error is
 * returned. */
static int run_parallel(size_t n, int (*fn)(void *ctx, size_t i), void *ctx)
{
    pthread_t th[LOAD_THREADS];
    struct par p;
    int nth = 0;

    p.fn = fn;
    p.ctx = ctx;
    p.n = n;
    atomic_init(&p.next, 0);
    atomic_init(&p.rc, TROVE_OK);
    for (size_t i = 0; n > 1 && i < LOAD_THREADS && i < n; i++)
        if (pthread_create(&th[nth], NULL, par_worker, &p) == 0)
            nth++;
    if (nth == 0)
        par_worker(&p);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    return atomic_load(&p.rc);
}

/* ---- packs: loading the index -------------------------------------------------------- */

struct pack_key {
    char hex[33];
    int64_t mtime;
};

/* What one listing of PREFIX/packs/ found: the packs, and the names of the .dead records
 * (the .bad records, the quarantine, go straight into the backend's set). */
struct pack_keys {
    struct s3_backend *s;
    struct pack_key *k;
    size_t n, cap;
    char (*dead)[33];
    size_t ndead, capdead;
};

static int cmp_hex(const void *a, const void *b) { return memcmp(a, b, 32); }

/* 1 if p[0..32) is a name trove writes (32 lowercase hex digits, not the zero digest);
 * the name, NUL-terminated, into hex. */
static int hex_name(const char *p, char hex[33])
{
    struct trove_digest d;
    char again[33];

    memcpy(hex, p, 32);
    hex[32] = '\0';
    if (trove_digest_parse(hex, &d) != TROVE_OK || trove_digest_is_zero(&d))
        return 0;
    trove_digest_hex(&d, again);
    return memcmp(again, hex, 32) == 0;
}

static int pack_key_fn(void *ctx, const char *rest, int64_t mtime)
{
    struct pack_keys *l = ctx;
    size_t n = strlen(rest);
    char hex[33];
    int rc;

    if (n == 36 && strcmp(rest + 32, BAD_SUFFIX) == 0 && hex_name(rest, hex)) {
        struct trove_digest d;
        int created, ok;
        trove_digest_parse(hex, &d);
        pthread_mutex_lock(&l->s->mu);
        ok = trove__refmap_insert(&l->s->bad_objects, &d, &created) != NULL;
        pthread_mutex_unlock(&l->s->mu);
        return ok ? 0 : TROVE_ERR_NOMEM;
    }
    if ((n != 32 && (n != 37 || strcmp(rest + 32, ".dead") != 0)) || !hex_name(rest, hex))
        return 0; /* not a name trove writes: ignored */
    if (l->n + l->ndead >= 2 * (size_t)PACKS_MAX) {
        trove__s3_set_err(l->s,
                          "S3 list s3://%s/%spacks/: more than %u packs, more than trove reads",
                          l->s->bucket, l->s->prefix, PACKS_MAX);
        return TROVE_ERR_LIMIT;
    }
    if (n == 37) {
        if ((rc = trove__s3_grow((void **)&l->dead, &l->capdead, l->ndead, sizeof *l->dead)) != TROVE_OK)
            return rc;
        memcpy(l->dead[l->ndead++], hex, 33);
        return 0;
    }
    if ((rc = trove__s3_grow((void **)&l->k, &l->cap, l->n, sizeof *l->k)) != TROVE_OK)
        return rc;
    memcpy(l->k[l->n].hex, hex, 33);
    l->k[l->n++].mtime = mtime;
    return 0;
}

/* One pack's index, as its tail and its .dead record gave it. */
struct pack_load {
    struct pack_key key;
    int has_dead; /* the listing showed a .dead record */
    int done;     /* fetched: bad, missing, or the lists below */
    int bad;      /* its tail failed a check: why */
    int missing;  /* deleted since it was listed */
    uint64_t size;
    struct trove__pack_entry *e;
    size_t n;
    struct trove_digest *dead;
    size_t ndead;
    char why[224];
};

static void set_bad(struct pack_load *l, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void set_bad(struct pack_load *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->why, sizeof l->why, fmt, ap);
    va_end(ap);
    l->bad = 1;
}

/* The size of the object whose last got bytes a suffix-range GET (r) read: from a 206's
 * Content-Range, which must name exactly those bytes, or the body's own length when the
 * server sent the whole object (200). */
static int tail_size(struct s3_backend *s, const struct req *r, size_t got, uint64_t *size_out)
{
    uint64_t a = 0, b = 0, size = 0;

    if (r->status == 200) {
        *size_out = got;
        return TROVE_OK;
    }
    if (r->status == 206 && trove__s3_parse_content_range(r->crange, &a, &b, &size) &&
        b + 1 == size && b - a + 1 == got && got == (size < TAIL_GET ? size : TAIL_GET)) {
        *size_out = size;
        return TROVE_OK;
    }
    trove__s3_set_err(
        s,
        "S3 GET %s (the last %u bytes): the answer (HTTP %ld, Content-Range \"%s\", %zu "
        "bytes) does not say what part of the object it is",
        r->what, TAIL_GET, r->status, r->crange, got);
    return TROVE_ERR_REMOTE;
}

/* Fetch and check pack l's footer and index: one suffix-range GET, and a second for the
 * rest of an index bigger than what came. A check that fails makes l bad, with why; a
 * pack gone since the listing is missing; only a request that fails is an error. */
static int pack_tail(struct s3_backend *s, struct pack_load *l)
{
    struct trove_bytes body = {0}, rest = {0};
    struct trove_diag diag = {0};
    uint8_t foot[TROVE__PACK_FOOTER] = {0};
    const uint8_t *tail;
    uint64_t size = 0, count = 0, index = 0;
    char range[64];
    struct obj o;
    struct req r;
    int rc;

    trove__s3_pack_names(s, l->key.hex, "", &o);
    snprintf(range, sizeof range, "bytes=-%u", TAIL_GET);
    rc = trove__s3_get_at(s, &o, range, &body, TAIL_GET, &r);
    if (rc == TROVE_ERR_REMOTE && r.status == 416) { /* no suffix of an empty object */
        set_bad(l, "it is empty");
        rc = TROVE_OK;
        goto out;
    }
    if (rc == TROVE_ERR_LIMIT) {
        trove__s3_set_err(s,
                          "S3 GET %s (%s): the answer is longer than the range asked for (does the "
                          "server honour Range?)",
                          o.what, range);
        rc = TROVE_ERR_REMOTE;
    }
    if (rc == TROVE_OK)
        rc = tail_size(s, &r, body.len, &size);
    if (rc != TROVE_OK)
        goto out;
    if (size > PACK_MAX) {
        set_bad(l, "it is %llu bytes, more than the %u a pack may be", (unsigned long long)size,
                PACK_MAX);
        goto out;
    }
    if (body.len >= TROVE__PACK_FOOTER)
        memcpy(foot, body.ptr + body.len - TROVE__PACK_FOOTER, TROVE__PACK_FOOTER);
    if (trove__pack_footer(foot, size, &count, &index, &diag) != TROVE_OK) {
        set_bad(l, "%s", diag.msg);
        goto out;
    }
    /* The index and footer, count * 32 + 32 bytes, end the pack: what did not come is the
     * index's start, [index, size - body.len). */
    if (size - index > body.len) {
        uint64_t first = index, last = size - body.len - 1;
        snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)first,
                 (unsigned long long)last);
        if ((rc = trove__s3_get_exact(s, &o, range, &rest, last - first + 1)) != TROVE_OK ||
            (rc = trove_bytes_append(&rest, body.ptr, body.len)) != TROVE_OK)
            goto out;
        tail = rest.ptr;
    } else {
        tail = body.ptr + body.len - (size - index);
    }
    if (!(l->e = trove__mallocarray(count + 1, sizeof *l->e))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if (trove__pack_index(tail, count, index, l->e, &diag) != TROVE_OK) {
        free(l->e);
        l->e = NULL;
        set_bad(l, "%s", diag.msg);
        goto out;
    }
    l->n = (size_t)count;
    l->size = size;
out:
    if (rc == TROVE_ERR_NOTFOUND) { /* deleted since the listing */
        l->missing = 1;
        rc = TROVE_OK;
    }
    trove_bytes_free(&body);
    trove_bytes_free(&rest);
    return rc;
}

int trove__s3_pack_recheck(struct s3_backend *s, const char *hex, int *bad_out)
{
    struct pack_load l;
    int rc;

    memset(&l, 0, sizeof l);
    memcpy(l.key.hex, hex, sizeof l.key.hex);
    rc = pack_tail(s, &l);
    free(l.e);
    *bad_out = rc == TROVE_OK && l.bad;
    return rc;
}

/* Pack l's .dead record: the 16-byte digests of its deleted entries. A record that is not
 * whole digests, or names more than the pack holds, is not trove's and is ignored: its
 * deletes are undone (the objects are back, which gc can take again), where trusting it
 * could hide live objects. */
static int pack_dead(struct s3_backend *s, struct pack_load *l)
{
    struct trove_bytes b = {0};
    struct obj o;
    struct req r;
    int rc;

    trove__s3_pack_names(s, l->key.hex, ".dead", &o);
    rc = trove__s3_get_at(s, &o, NULL, &b, 16 * l->n, &r);
    if (rc == TROVE_ERR_NOTFOUND || rc == TROVE_ERR_LIMIT || (rc == TROVE_OK && b.len % 16)) {
        rc = TROVE_OK; /* gone since the listing, or not a record of trove's */
        goto out;
    }
    if (rc != TROVE_OK || b.len == 0)
        goto out;
    if (!(l->dead = trove__malloc(b.len))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    memcpy(l->dead, b.ptr, b.len);
    l->ndead = b.len / 16;
out:
    trove_bytes_free(&b);
    return rc;
}

struct load_job {
    struct s3_backend *s;
    struct pack_load *l;
};

static int load_one(void *ctx, size_t i)
{
    struct load_job *j = ctx;
    struct pack_load *l = &j->l[i];
    int rc = pack_tail(j->s, l);

    if (rc == TROVE_OK && !l->bad && !l->missing && l->has_dead && l->n > 0)
        rc = pack_dead(j->s, l);
    l->done = rc == TROVE_OK;
    return rc;
}

/* The packs loaded into the index (their lists taken over), the bad ones recorded. */
static int install_loaded(struct s3_backend *s, struct pack_load *l, size_t n)
{
    int rc = TROVE_OK, r;

    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < n; i++) {
        if (!l[i].done || l[i].missing)
            continue;
        if (l[i].bad) {
            r = trove__s3_packs_note_bad(&s->packs, l[i].key.hex, l[i].why);
        } else {
            r = trove__s3_packs_add(&s->packs, l[i].key.hex, l[i].size, l[i].key.mtime, l[i].e,
                                    l[i].n, l[i].dead, l[i].ndead, NULL);
            l[i].e = NULL;
            l[i].dead = NULL;
        }
        if (r != TROVE_OK && rc == TROVE_OK)
            rc = r;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* List PREFIX/packs/ and load every pack this handle does not know yet, several at once. */
static int load_new_packs(struct s3_backend *s)
{
    struct pack_keys keys = {0};
    struct pack_load *l = NULL;
    struct load_job job;
    size_t nl = 0;
    int rc, r;

    keys.s = s;
    if ((rc = trove__s3_list_keys(s, "packs/", pack_key_fn, &keys)) != TROVE_OK)
        goto out;
    if (keys.n > 0 && !(l = trove__calloc(keys.n, sizeof *l))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if (keys.ndead > 0)
        qsort(keys.dead, keys.ndead, sizeof *keys.dead, cmp_hex);
    if (keys.n > 0)
        qsort(keys.k, keys.n, sizeof *keys.k, cmp_hex); /* hex is the first member */
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < keys.ndead && rc == TROVE_OK; i++) /* a pack's last delete died */
        if (keys.n == 0 || !bsearch(keys.dead[i], keys.k, keys.n, sizeof *keys.k, cmp_hex))
            rc = trove__s3_packs_note_orphan(&s->packs, keys.dead[i]);
    for (size_t i = 0; i < keys.n; i++) {
        if (trove__s3_packs_known(&s->packs, keys.k[i].hex))
            continue;
        l[nl].key = keys.k[i];
        l[nl].has_dead = keys.ndead > 0 && bsearch(keys.k[i].hex, keys.dead, keys.ndead,
                                                   sizeof *keys.dead, cmp_hex) != NULL;
        nl++;
    }
    pthread_mutex_unlock(&s->mu);
    if (rc != TROVE_OK)
        goto out;
    job.s = s;
    job.l = l;
    rc = run_parallel(nl, load_one, &job);
    r = install_loaded(s, l, nl); /* what did load is kept, even after an error */
    if (rc == TROVE_OK)
        rc = r;
    if (rc == TROVE_OK)
        atomic_fetch_add(&s->gen, 1);
out:
    for (size_t i = 0; i < nl; i++) {
        free(l[i].e);
        free(l[i].dead);
    }
    free(l);
    free(keys.k);
    free(keys.dead);
    return rc;
}

/* A load that failed for the quarantine's question (s3_quarantined), which backend.c asks
 * right before the operation itself, because the service could not be reached (after
 * the retries): that operation, on this thread, gets the same answer instead of the same
 * retries again. Consumed by the next load of that backend on this
 * thread, and only within LOAD_FAIL_REUSE_NS of the failure. */
#define LOAD_FAIL_REUSE_NS 1000000000ull
static _Thread_local const struct s3_backend *failed_be;
static _Thread_local int failed_rc;
static _Thread_local uint64_t failed_at;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void trove__s3_load_failed(const struct s3_backend *s, int rc)
{
    failed_be = s;
    failed_rc = rc;
    failed_at = mono_ns();
}

int trove__s3_ensure_loaded(struct s3_backend *s)
{
    int rc = TROVE_OK;

    if (atomic_load(&s->loaded))
        return TROVE_OK;
    if (failed_be == s) {
        failed_be = NULL;
        if (mono_ns() - failed_at < LOAD_FAIL_REUSE_NS)
            return failed_rc;
    }
    pthread_mutex_lock(&s->load_mu);
    if (!atomic_load(&s->loaded) && (rc = load_new_packs(s)) == TROVE_OK)
        atomic_store(&s->loaded, 1);
    pthread_mutex_unlock(&s->load_mu);
    return rc;
}

int trove__s3_refresh(struct s3_backend *s, unsigned seen)
{
    int rc = TROVE_OK;

    pthread_mutex_lock(&s->load_mu);
    if (atomic_load(&s->gen) == seen && (rc = load_new_packs(s)) == TROVE_OK)
        atomic_store(&s->loaded, 1);
    pthread_mutex_unlock(&s->load_mu);
    return rc;
}
