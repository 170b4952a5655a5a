/*
 * store_s3.c: the store's low level on an S3 bucket — what store.c does with files and
 * locks on a local disk, done with keys (docs/s3.md, "The store on S3"):
 *
 *   PREFIX/objects/<32 hex>        the objects (backend_s3.c)
 *   PREFIX/volumes/<NAME>.recipe   a volume's head: its recipe file, as on disk, replaced by
 *                                  one PUT per commit (S3 replaces an object atomically, so a
 *                                  reader gets the old head or the new one, never a mix)
 *   PREFIX/lease                   the writer's lease: who holds the store for writing, and
 *                                  until when
 *
 * A commit uploads its new objects first (the puts drain before the head is written), then
 * PUTs the head. A crash before that PUT leaves the old head and some objects nothing names
 * yet; gc spares objects younger than its grace period, so objects a live writer uploaded
 * but has not yet named survive a gc run by another process (store_verify.c).
 *
 * The lease. S3 has no lock and no compare-and-swap that every service honours, so one
 * writer per store is kept by a lease object: a writable open reads PREFIX/lease; a lease
 * held by someone else that has not expired (and whose holder is not a dead process on this
 * host) refuses the open with TROVE_ERR_BUSY and a message naming the holder. Otherwise the
 * open writes its own lease (a random token, the holder, an expiry TROVE_S3_LEASE_SEC ahead,
 * default 60 s) and returns; a thread reads it back a moment later (the open's work goes
 * on meanwhile, and the first commit waits for it): a different token means another writer
 * won a race, and this handle commits nothing. The thread renews the lease every third of
 * its term.
 * A commit (a head PUT or delete) is refused when the lease was lost (someone else's token
 * found at renewal) or has run out before a renewal landed. Close deletes the lease if it is
 * still this handle's. The lease is advisory against a writer whose clock is far off, or
 * one stopped for longer than a term: the doc says so.
 */
#define _GNU_SOURCE /* gethostname */

#include "store_internal.h"
#include "backend_internal.h"
#include "backend_s3.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "s3_curl.h"
#include "s3_text.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEASE_KEY "lease"
#define LEASE_MAX TROVE__S3_LEASE_MAX
#define LEASE_DEFAULT_SEC 60
#define LEASE_SETTLE_MS 200        /* between writing the lease and reading it back */
#define HEAD_MAX ((size_t)1 << 30) /* the largest volume head (recipe file) read */

struct trove__lease {
    struct trove_backend *be;
    pthread_t th;
    int running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;           /* under mu: close asks the renewer to go */
    int lost;           /* under mu: another writer's token was found */
    int confirmed;      /* under mu: read back after LEASE_SETTLE_MS and found ours */
    int64_t expires_ms; /* under mu: this handle's lease runs until then */
    int64_t term_ms;
    struct trove__s3_lease me; /* token, host and pid; the expiry is expires_ms */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void s3_message(struct trove_store *s, char *buf, size_t cap)
{
    trove_backend_s3_last_error(s->be, buf, cap);
    if (!buf[0])
        snprintf(buf, cap, "the S3 request failed");
}

/* ---- the lease's text ------------------------------------------------------------------ */

/* Parse what a lease object holds; 0 if it is one, else -1 (damaged: treated as expired). */
static int lease_parse(const struct trove_bytes *b, struct trove__s3_lease *t)
{
    return trove__s3_lease_parse(b->ptr, b->len, t);
}

/* A holder that is a process of this host which no longer runs (killed, crashed). */
static int holder_dead(const struct trove__s3_lease *t)
{
    char host[128];
    if (gethostname(host, sizeof host) != 0)
        return 0;
    host[sizeof host - 1] = '\0';
    return !strcmp(host, t->host) && t->pid > 0 && kill((pid_t)t->pid, 0) != 0 && errno == ESRCH;
}

static int lease_read(struct trove__lease *l, struct trove__s3_lease *t, int *present)
{
    struct trove_bytes b = {0};
    int rc = trove__s3_key_get(l->be, LEASE_KEY, &b, LEASE_MAX);

    *present = 0;
    if (rc == TROVE_OK) {
        *present = lease_parse(&b, t) == 0;
        if (!*present)
            memset(t, 0, sizeof *t); /* damaged: nobody's, as if expired */
    } else if (rc == TROVE_ERR_NOTFOUND || rc == TROVE_ERR_LIMIT) {
        rc = TROVE_OK; /* none (or not a lease of ours: too long), so free */
    }
    trove_bytes_free(&b);
    return rc;
}

static int lease_write(struct trove__lease *l, int64_t expires)
{
    struct trove__s3_lease t = l->me;
    char text[LEASE_MAX];
    int n;

    t.expires_ms = expires;
    if ((n = trove__s3_lease_format(&t, text, sizeof text)) < 0)
        return TROVE_ERR_INVALID; /* cannot be: lease_take made the fields */
    return trove__s3_key_put(l->be, LEASE_KEY, text, (size_t)n);
}

/* ---- the renewer ------------------------------------------------------------------------ */

/* The read-back of a lease just written: after LEASE_SETTLE_MS, so that a racing writer's
 * PUT has landed by then; another token means that writer won. Meanwhile the open has
 * returned and the work goes on; the first commit waits for this (lease_ok). */
static void confirm(struct trove__lease *l)
{
    struct timespec until;
    struct trove__s3_lease t;
    int64_t at = now_ms() + LEASE_SETTLE_MS;
    int present, rc, ours;

    until.tv_sec = (time_t)(at / 1000);
    until.tv_nsec = (long)(at % 1000) * 1000000L;
    while (!l->stop && now_ms() < at)
        pthread_cond_timedwait(&l->cv, &l->mu, &until);
    pthread_mutex_unlock(&l->mu);
    rc = lease_read(l, &t, &present);
    ours = rc != TROVE_OK || (present && !strcmp(t.token, l->me.token));
    pthread_mutex_lock(&l->mu);
    /* A failed read proves nothing either way: the renewals go on checking. */
    l->lost = !ours;
    l->confirmed = 1;
    pthread_cond_broadcast(&l->cv);
}

static void *renewer(void *arg)
{
    struct trove__lease *l = arg;

    pthread_mutex_lock(&l->mu);
    confirm(l);
    for (;;) {
        struct timespec until;
        int64_t at = now_ms() + l->term_ms / 3, exp;
        struct trove__s3_lease t;
        int present, rc;

        until.tv_sec = (time_t)(at / 1000);
        until.tv_nsec = (long)(at % 1000) * 1000000L;
        while (!l->stop && now_ms() < at)
            pthread_cond_timedwait(&l->cv, &l->mu, &until);
        if (l->stop || l->lost)
            break;
        pthread_mutex_unlock(&l->mu);
        rc = lease_read(l, &t, &present);
        if (rc == TROVE_OK && present && strcmp(t.token, l->me.token) != 0) {
            pthread_mutex_lock(&l->mu);
            l->lost = 1; /* taken over after ours ran out: never write it back */
            break;
        }
        exp = now_ms() + l->term_ms;
        rc = rc == TROVE_OK ? lease_write(l, exp) : rc;
        pthread_mutex_lock(&l->mu);
        if (rc == TROVE_OK)
            l->expires_ms = exp;
        /* A failed renewal is tried again next time; a commit checks the expiry itself. */
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* ---- taking and giving back the lease ----------------------------------------------------- */

static void random_token(char out[33])
{
    uint64_t z[2];
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(z, sizeof z, 1, f) != 1) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        z[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
        z[1] = (uint64_t)ts.tv_sec * 0xbf58476d1ce4e5b9ULL ^ (uint64_t)(uintptr_t)out;
    }
    if (f)
        fclose(f);
    snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, z[0], z[1]);
}

static int64_t lease_term_ms(void)
{
    const char *e = getenv("TROVE_S3_LEASE_SEC");
    double sec = e && *e ? strtod(e, NULL) : 0;
    return sec > 0 && sec < 86400 ? (int64_t)(sec * 1000) : LEASE_DEFAULT_SEC * 1000;
}

static int lease_busy(struct trove_store *s, const struct trove__s3_lease *t, const char *how,
                      struct trove_diag *diag)
{
    int64_t left = t->expires_ms - now_ms();
    return TROVE_FAIL(diag, TROVE_ERR_BUSY, 0,
                      "%s is open for writing by %s pid %ld (%s; its lease runs %" PRId64
                      ".%" PRId64 " s more unless renewed); stop that writer (a running "
                      "`trove serve`?), or read the store while it runs",
                      s->dir, t->host, t->pid, how, left > 0 ? left / 1000 : 0,
                      left > 0 ? left % 1000 / 100 : 0);
}

static void lease_free(struct trove__lease *l)
{
    if (!l)
        return;
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

static int lease_take(struct trove_store *s, struct trove_diag *diag)
{
    struct trove__lease *l = trove__calloc(1, sizeof *l);
    struct trove__s3_lease t;
    char host[128], msg[768];
    int present, rc;
    int64_t exp;

    if (!l)
        return TROVE_ERR_NOMEM;
    if (pthread_mutex_init(&l->mu, NULL) != 0) {
        free(l);
        return TROVE_ERR_NOMEM;
    }
    if (pthread_cond_init(&l->cv, NULL) != 0) {
        pthread_mutex_destroy(&l->mu);
        free(l);
        return TROVE_ERR_NOMEM;
    }
    l->be = s->be;
    l->term_ms = lease_term_ms();
    random_token(l->me.token);
    if (gethostname(host, sizeof host) != 0 || !host[0])
        snprintf(host, sizeof host, "unknown-host");
    host[sizeof host - 1] = '\0';
    for (char *p = host; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            *p = '_';
    snprintf(l->me.host, sizeof l->me.host, "%s", host);
    l->me.pid = (long)getpid();

    if ((rc = lease_read(l, &t, &present)) != TROVE_OK)
        goto remote;
    if (present && t.expires_ms > now_ms() && !holder_dead(&t)) {
        rc = lease_busy(s, &t, "it holds the lease", diag);
        goto out;
    }
    exp = now_ms() + l->term_ms;
    if ((rc = lease_write(l, exp)) != TROVE_OK)
        goto remote;
    l->expires_ms = exp; /* the renewer reads it back first (confirm) */
    if (pthread_create(&l->th, NULL, renewer, l) != 0) {
        trove__s3_key_del(s->be, LEASE_KEY);
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    l->running = 1;
    s->lease = l;
    return TROVE_OK;
remote:
    s3_message(s, msg, sizeof msg);
    TROVE_FAIL(diag, rc, 0, "cannot take the writer's lease of %s: %s", s->dir, msg);
out:
    lease_free(l);
    return rc;
}

static void lease_give(struct trove_store *s)
{
    struct trove__lease *l = s->lease;
    struct trove__s3_lease t;
    int present, lost;

    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (l->running)
        pthread_join(l->th, NULL);
    lost = l->lost;
    if (!lost && lease_read(l, &t, &present) == TROVE_OK && present &&
        !strcmp(t.token, l->me.token))
        trove__s3_key_del(s->be, LEASE_KEY);
    lease_free(l);
    s->lease = NULL;
}

int trove__s3store_lease_ok(struct trove_store *s)
{
    struct trove__lease *l = s->lease;
    int ok;

    if (!l)
        return TROVE_ERR_READONLY;
    pthread_mutex_lock(&l->mu);
    while (!l->confirmed && !l->lost)
        pthread_cond_wait(&l->cv, &l->mu);
    ok = !l->lost && now_ms() < l->expires_ms;
    pthread_mutex_unlock(&l->mu);
    return ok ? TROVE_OK : TROVE_ERR_BUSY;
}

/* ---- open and release ------------------------------------------------------------------- */

/* Whether url looks like s3://BUCKET[/PREFIX] as trove_backend_s3_open takes it (so that
 * its refusal is about the credentials, or the endpoint). */
static int s3_url_ok(const char *url)
{
    const char *b = url + 5, *e = strchr(b, '/');
    size_t n = e ? (size_t)(e - b) : strlen(b);

    if (n < 3 || n > 63 || b[0] == '-' || b[0] == '.' || b[n - 1] == '-' || b[n - 1] == '.')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '-' ||
              b[i] == '.'))
            return 0;
    for (const char *p = e ? e : ""; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.' || *p == '/'))
            return 0;
    return 1;
}

int trove__s3store_open(struct trove_store *s, struct trove_diag *diag)
{
    char msg[768];
    int rc = trove__s3_libs_load(diag);

    if (rc != TROVE_OK)
        return rc;
    rc = trove_backend_s3_open(s->dir, NULL, &s->be);

    if (rc == TROVE_ERR_INVALID && s3_url_ok(s->dir))
        return TROVE_FAIL(diag, rc, 0,
                          "cannot open the store %s: no S3 credentials (set AWS_ACCESS_KEY_ID "
                          "and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE; docs/s3.md)",
                          s->dir);
    if (rc == TROVE_ERR_INVALID)
        return TROVE_FAIL(diag, rc, 0,
                          "%s is not s3://BUCKET[/PREFIX] (a bucket is 3-63 of a-z 0-9 . -; "
                          "a prefix A-Z a-z 0-9 - _ . /)",
                          s->dir);
    if (rc != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "cannot open the store %s: %s", s->dir,
                          trove_strerror(rc));
    s->be->no_verify = (s->flags & TROVE_STORE_NOVERIFY) != 0;
    if (s->flags & TROVE_STORE_READONLY)
        return TROVE_OK;
    if ((rc = lease_take(s, diag)) != TROVE_OK && diag && !diag->msg[0]) {
        s3_message(s, msg, sizeof msg);
        TROVE_FAIL(diag, rc, 0, "cannot open %s for writing: %s", s->dir, msg);
    }
    return rc;
}

void trove__s3store_release(struct trove_store *s) { lease_give(s); }

/* ---- heads ------------------------------------------------------------------------------ */

static void head_key(const char *name, char out[TROVE_VOLUME_NAME_MAX + 32])
{
    snprintf(out, TROVE_VOLUME_NAME_MAX + 32, "volumes/%s.recipe", name);
}

void trove__s3store_head_url(const struct trove_store *s, const char *name, char *out, size_t n)
{
    snprintf(out, n, "%s/volumes/%s.recipe", s->dir, name);
}

int trove__s3store_head_exists(struct trove_store *s, const char *name)
{
    char key[TROVE_VOLUME_NAME_MAX + 32];
    head_key(name, key);
    return trove__s3_key_exists(s->be, key);
}

int trove__s3store_head_read(struct trove_store *s, const char *name, struct trove_bytes *buf,
                             struct trove_diag *diag)
{
    char key[TROVE_VOLUME_NAME_MAX + 32], msg[768];
    int rc;

    head_key(name, key);
    rc = trove__s3_key_get(s->be, key, buf, HEAD_MAX);
    if (rc == TROVE_ERR_NOTFOUND)
        return TROVE_FAIL(diag, rc, 0, "no volume '%s' in the store %s", name, s->dir);
    if (rc != TROVE_OK) {
        s3_message(s, msg, sizeof msg);
        return TROVE_FAIL(diag, rc, 0, "cannot read the head of volume '%s': %s", name, msg);
    }
    return TROVE_OK;
}

int trove__s3store_head_publish(struct trove_store *s, const char *name, const void *data,
                                size_t len)
{
    char key[TROVE_VOLUME_NAME_MAX + 32];
    int rc;

    if ((rc = trove__s3store_lease_ok(s)) != TROVE_OK)
        return rc;
    head_key(name, key);
    return trove__s3_key_put(s->be, key, data, len);
}

int trove__s3store_head_remove(struct trove_store *s, const char *name)
{
    char key[TROVE_VOLUME_NAME_MAX + 32];
    int rc;

    if ((rc = trove__s3store_lease_ok(s)) != TROVE_OK)
        return rc;
    head_key(name, key);
    return trove__s3_key_del(s->be, key);
}

struct names {
    char **v;
    size_t n, cap;
};

static int add_head(void *ctx, const char *rest, int64_t mtime)
{
    struct names *ns = ctx;
    size_t len = strlen(rest), sl = sizeof ".recipe" - 1;
    char name[TROVE_VOLUME_NAME_MAX + 1];

    (void)mtime;
    if (len <= sl || len - sl > TROVE_VOLUME_NAME_MAX || strcmp(rest + len - sl, ".recipe") != 0)
        return 0;
    memcpy(name, rest, len - sl);
    name[len - sl] = '\0';
    if (trove_volume_name_check(name, NULL) != TROVE_OK)
        return 0;
    if (ns->n == ns->cap) {
        size_t c = ns->cap ? ns->cap * 2 : 16;
        char **p = trove__realloc(ns->v, c * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        ns->v = p;
        ns->cap = c;
    }
    if (!(ns->v[ns->n] = trove__strdup(name)))
        return TROVE_ERR_NOMEM;
    ns->n++;
    return 0;
}

int trove__s3store_head_names(struct trove_store *s, char ***out, size_t *count_out)
{
    struct names ns = {0};
    int rc = trove__s3_key_list(s->be, "volumes/", add_head, &ns);

    if (rc != TROVE_OK) {
        for (size_t i = 0; i < ns.n; i++)
            free(ns.v[i]);
        free(ns.v);
        return rc;
    }
    *out = ns.v; /* in key order, which is not strcmp's of the names: store.c sorts */
    *count_out = ns.n;
    return TROVE_OK;
}
