/*
 * backend_s3.c: the object backend on an S3-compatible object store, over libcurl. Object
 * d lives at key PREFIX/objects/<32 hex digits of d> in the bucket; nothing else of the
 * backend is kept in the bucket, so `aws s3 ls` shows exactly the objects and each one's
 * xxh3-128 is its name.
 *
 * Requests. Every request goes through perform(): one libcurl easy handle taken from a
 * small pool (so connections are reused across requests and threads can run requests at
 * once), SigV4 signing by libcurl itself (CURLOPT_AWS_SIGV4, with the access key and secret
 * as user name and password), the body's SHA-256 in x-amz-content-sha256 (curl 7.88 hashes
 * the body into the signature but does not send the header S3 requires; trove computes the
 * same hash with libcrypto), a timeout per request, and retries with exponential backoff
 * and full jitter for what S3 says is worth retrying: 5xx, 429 and 503 SlowDown, timeouts
 * and dropped connections. An answer that is not a success is turned into a negative code
 * (404 -> TROVE_ERR_NOTFOUND, the rest TROVE_ERR_REMOTE) and a message that names the
 * request, the bucket and key, and what S3 said: the HTTP status and the <Code> and
 * <Message> of its XML body (trove_backend_s3_last_error).
 *
 * Trust. Bytes from the network are bounded before they are kept: a success body by the
 * caller's max_len (the Content-Length first, then the bytes that really arrive), an error
 * body by ERR_BODY_MAX, a listing page by LIST_BODY_MAX; the XML scanner (s3_xml.c) reads
 * only inside the bytes received. get's bytes are then hashed against their name by
 * backend.c as for every backend.
 *
 * put-if-absent. S3 has no create-exclusive PUT that every compatible server honours, so a
 * put is HEAD then PUT. Two writers racing on one name both see 404 and both PUT; that is
 * safe because the name is the digest of the bytes: both PUTs carry the same bytes, and an
 * S3 PUT replaces an object atomically, so a reader sees either no object or the whole
 * one, never a mixture. The only cost of the race is one redundant upload (and both
 * callers being told created = 1).
 *
 * Staged puts (trove_backend_stage) are kept in memory, copied, until publish, which uploads
 * them PUBLISH_THREADS at a time (each a put as above) and forgets them. A failed publish
 * keeps the ones not yet uploaded staged, so a second publish finishes the job.
 *
 * A bucket that does not exist yet is created by the first PUT that finds it missing
 * (NoSuchBucket), then the PUT is retried.
 *
 * Thread-safety: every op may run from several threads at once (the prefetcher's gets);
 * the handle pool, the last error and the staged list each sit under the one mutex, held
 * only to take or return an entry.
 */
#define _GNU_SOURCE /* timegm */

#include "backend_internal.h"
#include "common/alloc.h"
#include "backend_s3.h"
#include "s3_xml.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POOL_MAX 16                /* idle easy handles kept for reuse */
#define ERR_BODY_MAX (64u << 10)   /* what is kept of an error answer's body */
#define LIST_BODY_MAX (8u << 20)   /* one ListObjectsV2 page (1,000 keys is ~300 KiB) */
#define PUBLISH_THREADS 8          /* uploads in flight during publish */
#define BACKOFF_BASE_MS 50u
#define BACKOFF_CAP_MS 2000u
#define KEY_MAX 1100               /* S3 keys are at most 1,024 bytes */

struct staged {
    struct trove_digest d;
    uint8_t *data;
    size_t len;
};

struct s3_backend {
    struct trove_backend base; /* first: backend.c sees only this */
    char *bucket;              /* for messages and URLs */
    char *prefix;              /* "" or "some/prefix/" */
    char *bucket_url;          /* scheme://host[:port]/bucket or scheme://bucket.host[:port] */
    char sigv4[96];            /* "aws:amz:REGION:s3" */
    char *access_key, *secret_key, *session_token;
    long timeout_ms;
    unsigned retries, list_page;
    int verbose;
    pthread_mutex_t mu; /* guards pool, npool, err, staged */
    CURL *pool[POOL_MAX];
    int npool;
    char err[768];
    struct staged *staged;
    size_t nstaged, capstaged;
    atomic_uint_fast64_t requests, retried;
};

static const struct trove_backend_ops s3_ops;

/* ---- small helpers ------------------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;

static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == 0 ? 0 : -1; }

/* The last error of any S3 backend in the process (trove_backend_s3_process_error). */
static pthread_mutex_t process_err_mu = PTHREAD_MUTEX_INITIALIZER;
static char process_err[768];

static void set_err(struct s3_backend *s, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&s->mu);
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&process_err_mu);
    memcpy(process_err, s->err, sizeof process_err);
    pthread_mutex_unlock(&process_err_mu);
    pthread_mutex_unlock(&s->mu);
}

int trove_backend_s3_process_error(char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return TROVE_ERR_INVALID;
    pthread_mutex_lock(&process_err_mu);
    snprintf(buf, cap, "%s", process_err);
    pthread_mutex_unlock(&process_err_mu);
    return TROVE_OK;
}

static CURL *take_handle(struct s3_backend *s)
{
    CURL *h = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->npool > 0)
        h = s->pool[--s->npool];
    pthread_mutex_unlock(&s->mu);
    return h ? h : curl_easy_init();
}

static void give_handle(struct s3_backend *s, CURL *h)
{
    pthread_mutex_lock(&s->mu);
    if (s->npool < POOL_MAX) {
        s->pool[s->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    if (h)
        curl_easy_cleanup(h);
}

static void sha256_hex(const void *p, size_t n, char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    if (EVP_Digest(p ? p : "", n, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32) {
        hex[0] = '\0'; /* the server then refuses the request, which is reported */
        return;
    }
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
}

/* A random number for the jitter: splitmix64 over a shared counter and the clock. */
static uint64_t jitter_rand(void)
{
    static atomic_uint_fast64_t counter;
    struct timespec ts;
    uint64_t z;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    z = atomic_fetch_add(&counter, 0x9e3779b97f4a7c15ull) + (uint64_t)ts.tv_nsec;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void backoff(unsigned attempt)
{
    uint64_t cap = BACKOFF_BASE_MS << (attempt < 10 ? attempt : 10), ms;
    struct timespec ts;
    if (cap > BACKOFF_CAP_MS)
        cap = BACKOFF_CAP_MS;
    ms = cap / 2 + jitter_rand() % (cap / 2 + 1); /* in [cap/2, cap] */
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- one request --------------------------------------------------------------------- */

struct req {
    const char *method;      /* GET, HEAD, PUT, DELETE */
    const char *url;
    const char *what;        /* s3://bucket/key, for messages */
    const void *body;        /* PUT only */
    size_t body_len;
    const char *range;       /* "bytes=a-b" or NULL */
    struct trove_bytes *out; /* a success body is appended here (NULL: none wanted) */
    size_t max_len;          /* ... up to this many bytes, else TROVE_ERR_LIMIT */
    /* results */
    long status;
    curl_off_t length;       /* Content-Length of the answer (-1 unknown) */
    char code[64];           /* <Code> of an error body, "" if none */
};

struct sink {
    struct req *r;
    CURL *h;
    struct trove_bytes err; /* an error answer's body, up to ERR_BODY_MAX */
    int limit, nomem;
};

static size_t on_write(char *p, size_t size, size_t nmemb, void *ctx)
{
    struct sink *k = ctx;
    size_t n = size * nmemb;
    long status = 0;

    curl_easy_getinfo(k->h, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
        struct trove_bytes *out = k->r->out;
        if (!out)
            return n;
        if (out->len == 0) {
            curl_off_t cl = -1;
            curl_easy_getinfo(k->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
            if (cl > 0 && (uint64_t)cl > k->r->max_len) {
                k->limit = 1;
                return 0;
            }
            if (cl > 0 && trove_bytes_reserve(out, (size_t)cl) != TROVE_OK) {
                k->nomem = 1;
                return 0;
            }
        }
        if (n > k->r->max_len - out->len) {
            k->limit = 1;
            return 0;
        }
        if (trove_bytes_append(out, p, n) != TROVE_OK) {
            k->nomem = 1;
            return 0;
        }
        return n;
    }
    if (k->err.len < ERR_BODY_MAX) {
        size_t keep = n < ERR_BODY_MAX - k->err.len ? n : ERR_BODY_MAX - k->err.len;
        if (trove_bytes_append(&k->err, p, keep) != TROVE_OK)
            k->nomem = 1;
    }
    return n;
}

static int retryable_curl(CURLcode c)
{
    return c == CURLE_OPERATION_TIMEDOUT || c == CURLE_COULDNT_CONNECT || c == CURLE_SEND_ERROR ||
           c == CURLE_RECV_ERROR || c == CURLE_GOT_NOTHING || c == CURLE_PARTIAL_FILE ||
           c == CURLE_COULDNT_RESOLVE_HOST;
}

/* One attempt. Returns the CURLcode; fills r->status, r->length, r->code and msg. */
static CURLcode attempt(struct s3_backend *s, CURL *h, struct req *r, struct sink *k, char *msg,
                        size_t msg_cap)
{
    struct curl_slist *hdrs = NULL, *t;
    char line[KEY_MAX + 64], sha[65];
    CURLcode c = CURLE_OUT_OF_MEMORY;

    curl_easy_reset(h);
    sha256_hex(r->body, r->body_len, sha);
    snprintf(line, sizeof line, "x-amz-content-sha256: %s", sha);
    if (!(t = curl_slist_append(hdrs, line)))
        goto out;
    hdrs = t;
    if (s->session_token) {
        snprintf(line, sizeof line, "x-amz-security-token: %s", s->session_token);
        if (!(t = curl_slist_append(hdrs, line)))
            goto out;
        hdrs = t;
    }
    if (r->range) {
        snprintf(line, sizeof line, "Range: %s", r->range);
        if (!(t = curl_slist_append(hdrs, line)))
            goto out;
        hdrs = t;
    }
    if (!strcmp(r->method, "PUT")) {
        if (!(t = curl_slist_append(hdrs, "Content-Type: application/octet-stream")))
            goto out;
        hdrs = t;
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
        /* POSTFIELDS, not an upload callback: curl hashes these bytes into the signature. */
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body_len ? (const char *)r->body : "");
    } else if (!strcmp(r->method, "HEAD")) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (!strcmp(r->method, "DELETE")) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    curl_easy_setopt(h, CURLOPT_URL, r->url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
    curl_easy_setopt(h, CURLOPT_USERNAME, s->access_key);
    curl_easy_setopt(h, CURLOPT_PASSWORD, s->secret_key);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, s->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, s->timeout_ms < 10000 ? s->timeout_ms : 10000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (s->verbose) /* TROVE_S3_VERBOSE: curl's trace of every request on stderr */
        curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, k);
    atomic_fetch_add(&s->requests, 1);
    c = curl_easy_perform(h);
    r->status = 0;
    r->length = -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->length);
    r->code[0] = '\0';
    msg[0] = '\0';
    if (c == CURLE_OK && (r->status < 200 || r->status >= 300) && k->err.len > 0) {
        size_t pos = 0;
        trove__s3_xml_next((const char *)k->err.ptr, k->err.len, &pos, "Code", r->code,
                           sizeof r->code);
        pos = 0;
        trove__s3_xml_next((const char *)k->err.ptr, k->err.len, &pos, "Message", msg, msg_cap);
    }
out:
    curl_slist_free_all(hdrs);
    return c;
}

/*
 * Run r with retries. Returns TROVE_OK for a 2xx answer, TROVE_ERR_NOTFOUND for 404 (with
 * r->code telling NoSuchKey from NoSuchBucket), TROVE_ERR_LIMIT when the body passed
 * r->max_len, TROVE_ERR_NOMEM, or TROVE_ERR_REMOTE with the last error set.
 */
static int perform(struct s3_backend *s, struct req *r)
{
    struct sink k;
    char msg[384];
    CURLcode c = CURLE_OK;
    CURL *h;
    int rc = TROVE_ERR_REMOTE;
    size_t out0 = r->out ? r->out->len : 0;

    if (!(h = take_handle(s)))
        return TROVE_ERR_NOMEM;
    for (unsigned n = 0;; n++) {
        memset(&k, 0, sizeof k);
        k.r = r;
        k.h = h;
        if (r->out)
            r->out->len = out0;
        c = attempt(s, h, r, &k, msg, sizeof msg);
        trove_bytes_free(&k.err);
        if (k.limit) {
            rc = TROVE_ERR_LIMIT;
            break;
        }
        if (k.nomem || c == CURLE_OUT_OF_MEMORY) {
            rc = TROVE_ERR_NOMEM;
            break;
        }
        if (c == CURLE_OK && r->status >= 200 && r->status < 300) {
            rc = TROVE_OK;
            break;
        }
        if (c == CURLE_OK && r->status == 404) {
            rc = TROVE_ERR_NOTFOUND;
            set_err(s, "S3 %s %s: not found (HTTP 404%s%s)", r->method, r->what,
                    r->code[0] ? " " : "", r->code);
            break;
        }
        if (n < s->retries &&
            (c == CURLE_OK ? r->status >= 500 || r->status == 429 : retryable_curl(c))) {
            atomic_fetch_add(&s->retried, 1);
            backoff(n);
            continue;
        }
        if (c == CURLE_OK && !strcmp(r->method, "HEAD") && !r->code[0]) {
            /* A HEAD answer has no body: ask again with a one-byte GET to learn S3's code and
             * message (a success now is not kept; the HEAD's failure stands). */
            struct req g = *r;
            long status = r->status;
            g.method = "GET";
            g.range = "bytes=0-0";
            g.out = NULL;
            memset(&k, 0, sizeof k);
            k.r = &g;
            k.h = h;
            if (attempt(s, h, &g, &k, msg, sizeof msg) == CURLE_OK && g.status == status)
                memcpy(r->code, g.code, sizeof r->code);
            else
                msg[0] = '\0';
            trove_bytes_free(&k.err);
        }
        if (c != CURLE_OK)
            set_err(s, "S3 %s %s: %s (after %u attempts; is the endpoint right and up?)",
                    r->method, r->what, curl_easy_strerror(c), n + 1);
        else
            set_err(s, "S3 %s %s: HTTP %ld %s%s%s%s", r->method, r->what, r->status,
                    r->code[0] ? r->code : "(no error code)", msg[0] ? ": " : "", msg,
                    n > 0 ? " (after retries)" : "");
        rc = TROVE_ERR_REMOTE;
        break;
    }
    if (rc != TROVE_OK && r->out)
        r->out->len = out0;
    give_handle(s, h);
    return rc;
}

/* ---- object requests ----------------------------------------------------------------- */

struct obj {
    char url[KEY_MAX + 512];
    char what[KEY_MAX + 128];
};

/* The URL and the s3:// name of key PREFIX + rel. */
static void key_names(const struct s3_backend *s, const char *rel, struct obj *o)
{
    snprintf(o->url, sizeof o->url, "%s/%s%s", s->bucket_url, s->prefix, rel);
    snprintf(o->what, sizeof o->what, "s3://%s/%s%s", s->bucket, s->prefix, rel);
}

static void obj_names(const struct s3_backend *s, const struct trove_digest *d, struct obj *o)
{
    char rel[48];
    trove_digest_hex(d, rel + 8);
    memcpy(rel, "objects/", 8);
    key_names(s, rel, o);
}

static int create_bucket(struct s3_backend *s)
{
    char url[KEY_MAX + 512], what[256];
    struct req r = {0};
    int rc;

    snprintf(url, sizeof url, "%s/", s->bucket_url);
    snprintf(what, sizeof what, "s3://%s (creating the bucket)", s->bucket);
    r.method = "PUT";
    r.url = url;
    r.what = what;
    rc = perform(s, &r);
    if (rc == TROVE_ERR_REMOTE && r.status == 409) /* created by someone else meanwhile */
        rc = TROVE_OK;
    return rc;
}

/* PUT data at o (replacing what is there), creating the bucket if it is missing. */
static int put_at(struct s3_backend *s, const struct obj *o, const void *data, size_t len)
{
    struct req r = {0};
    int rc;

    r.method = "PUT";
    r.url = o->url;
    r.what = o->what;
    r.body = data;
    r.body_len = len;
    rc = perform(s, &r);
    if (rc == TROVE_ERR_NOTFOUND) { /* NoSuchBucket: the first write creates it */
        if ((rc = create_bucket(s)) != TROVE_OK)
            return rc;
        rc = perform(s, &r);
    }
    if (rc == TROVE_ERR_NOTFOUND)
        rc = TROVE_ERR_REMOTE; /* a PUT is never "not found"; the message says why */
    return rc;
}

static int s3_put(struct trove_backend *base, const struct trove_digest *d, const void *data,
                  size_t len, int *created_out)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct obj o;
    struct req r = {0};
    int rc;

    *created_out = 0;
    obj_names(s, d, &o);
    r.method = "HEAD";
    r.url = o.url;
    r.what = o.what;
    rc = perform(s, &r);
    if (rc == TROVE_OK)
        return TROVE_OK; /* present: put-if-absent leaves it */
    if (rc != TROVE_ERR_NOTFOUND)
        return rc;
    if ((rc = put_at(s, &o, data, len)) == TROVE_OK)
        *created_out = 1;
    return rc;
}

static int s3_get(struct trove_backend *base, const struct trove_digest *d,
                  struct trove_bytes *out, size_t max_len)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct obj o;
    struct req r = {0};

    obj_names(s, d, &o);
    r.method = "GET";
    r.url = o.url;
    r.what = o.what;
    r.out = out;
    r.max_len = max_len;
    return perform(s, &r);
}

static int s3_size(struct trove_backend *base, const struct trove_digest *d, uint64_t *len_out)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct obj o;
    struct req r = {0};
    int rc;

    obj_names(s, d, &o);
    r.method = "HEAD";
    r.url = o.url;
    r.what = o.what;
    if ((rc = perform(s, &r)) != TROVE_OK)
        return rc;
    if (r.length < 0) {
        set_err(s, "S3 HEAD %s: the answer has no Content-Length", o.what);
        return TROVE_ERR_REMOTE;
    }
    *len_out = (uint64_t)r.length;
    return TROVE_OK;
}

static int s3_del(struct trove_backend *base, const struct trove_digest *d)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct obj o;
    struct req r = {0};
    int rc;

    obj_names(s, d, &o);
    r.method = "HEAD"; /* S3 deletes a missing key with 204: ask first */
    r.url = o.url;
    r.what = o.what;
    if ((rc = perform(s, &r)) != TROVE_OK)
        return rc;
    memset(&r, 0, sizeof r);
    r.method = "DELETE";
    r.url = o.url;
    r.what = o.what;
    return perform(s, &r);
}

/* ---- list ---------------------------------------------------------------------------- */

/* "2026-12-02T00:01:02.000Z" as seconds since the epoch, or -1. */
static int64_t parse_time(const char *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (sscanf(t, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm);
}

typedef int (*key_fn)(void *ctx, const char *rest, int64_t mtime);

/* Every key under PREFIX + rel_prefix, a ListObjectsV2 page at a time: fn gets the part of
 * the key after rel_prefix and its LastModified (seconds, -1 when missing or unreadable);
 * a nonzero return stops the listing and is returned. A missing bucket lists as empty. */
static int list_keys(struct s3_backend *s, const char *rel_prefix, key_fn fn, void *ctx)
{
    struct trove_bytes page = {0};
    char url[8192], what[KEY_MAX + 128], key[KEY_MAX], token[2048], trunc[16], pfx[KEY_MAX];
    char mtime[64];
    size_t plen;
    char *epfx = NULL;
    int rc = TROVE_OK, pages = 0;

    snprintf(pfx, sizeof pfx, "%s%s", s->prefix, rel_prefix);
    plen = strlen(pfx);
    {
        CURL *h = take_handle(s);
        if (!h)
            return TROVE_ERR_NOMEM;
        epfx = curl_easy_escape(h, pfx, (int)plen);
        give_handle(s, h);
        if (!epfx)
            return TROVE_ERR_NOMEM;
    }
    snprintf(what, sizeof what, "s3://%s/%s (listing)", s->bucket, pfx);
    token[0] = '\0';
    for (;;) {
        struct req r = {0};
        size_t pos = 0;
        int found;

        if (token[0]) {
            CURL *h = take_handle(s);
            char *etok = h ? curl_easy_escape(h, token, 0) : NULL;
            if (h)
                give_handle(s, h);
            if (!etok) {
                rc = TROVE_ERR_NOMEM;
                goto out;
            }
            /* Parameters in sorted order: curl 7.88 signs the query as it is written. */
            snprintf(url, sizeof url, "%s/?continuation-token=%s&list-type=2&max-keys=%u&prefix=%s",
                     s->bucket_url, etok, s->list_page, epfx);
            curl_free(etok);
        } else {
            snprintf(url, sizeof url, "%s/?list-type=2&max-keys=%u&prefix=%s", s->bucket_url,
                     s->list_page, epfx);
        }
        page.len = 0;
        r.method = "GET";
        r.url = url;
        r.what = what;
        r.out = &page;
        r.max_len = LIST_BODY_MAX;
        rc = perform(s, &r);
        if (rc == TROVE_ERR_NOTFOUND && !strcmp(r.code, "NoSuchBucket")) {
            rc = TROVE_OK; /* no bucket yet: no keys */
            goto out;
        }
        if (rc != TROVE_OK)
            goto out;
        pages++;
        while ((found = trove__s3_xml_next((const char *)page.ptr, page.len, &pos, "Key", key,
                                           sizeof key)) == 1) {
            size_t mpos = pos;
            int64_t t = -1;
            /* Within a <Contents>, LastModified follows Key (S3, Swift, MinIO all write it so). */
            if (trove__s3_xml_next((const char *)page.ptr, page.len, &mpos, "LastModified",
                                   mtime, sizeof mtime) == 1)
                t = parse_time(mtime);
            if (strncmp(key, pfx, plen) != 0)
                continue;
            if ((rc = fn(ctx, key + plen, t)) != 0)
                goto out;
        }
        if (found < 0) {
            set_err(s, "S3 list %s: a <Key> in page %d is malformed or too long", what, pages);
            rc = TROVE_ERR_REMOTE;
            goto out;
        }
        pos = 0;
        if (trove__s3_xml_next((const char *)page.ptr, page.len, &pos, "IsTruncated", trunc,
                               sizeof trunc) != 1 || strcmp(trunc, "true") != 0)
            break;
        pos = 0;
        if (trove__s3_xml_next((const char *)page.ptr, page.len, &pos, "NextContinuationToken",
                               token, sizeof token) != 1 || !token[0]) {
            set_err(s, "S3 list %s: page %d is truncated but has no usable continuation token",
                    what, pages);
            rc = TROVE_ERR_REMOTE;
            goto out;
        }
    }
out:
    curl_free(epfx);
    trove_bytes_free(&page);
    return rc;
}

struct list_objects {
    int (*fn)(void *ctx, const struct trove_digest *d);
    int (*aged)(void *ctx, const struct trove_digest *d, int64_t mtime);
    void *ctx;
};

static int list_object_key(void *ctx, const char *rest, int64_t mtime)
{
    struct list_objects *l = ctx;
    struct trove_digest d;

    if (strlen(rest) != 32 || trove_digest_parse(rest, &d) != TROVE_OK || trove_digest_is_zero(&d))
        return 0; /* not an object of trove's: ignored, as strangers in fs dirs */
    return l->fn ? l->fn(l->ctx, &d) : l->aged(l->ctx, &d, mtime);
}

static int s3_list(struct trove_backend *base, int (*fn)(void *ctx, const struct trove_digest *d),
                   void *ctx)
{
    struct list_objects l = {fn, NULL, ctx};
    return list_keys((struct s3_backend *)base, "objects/", list_object_key, &l);
}

/* ---- staged puts --------------------------------------------------------------------- */

static int s3_stage(struct trove_backend *base, const struct trove_digest *d, const void *data,
                    size_t len)
{
    struct s3_backend *s = (struct s3_backend *)base;
    uint8_t *copy = trove__malloc(len ? len : 1);
    int rc = TROVE_OK;

    if (!copy)
        return TROVE_ERR_NOMEM;
    if (len)
        memcpy(copy, data, len);
    pthread_mutex_lock(&s->mu);
    if (s->nstaged == s->capstaged) {
        size_t cap = s->capstaged ? 2 * s->capstaged : 64;
        struct staged *p = cap > SIZE_MAX / sizeof *p ? NULL
                                                      : trove__realloc(s->staged, cap * sizeof *p);
        if (!p)
            rc = TROVE_ERR_NOMEM;
        else {
            s->staged = p;
            s->capstaged = cap;
        }
    }
    if (rc == TROVE_OK) {
        s->staged[s->nstaged].d = *d;
        s->staged[s->nstaged].data = copy;
        s->staged[s->nstaged].len = len;
        s->nstaged++;
        copy = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    free(copy);
    return rc;
}

struct publish_job {
    struct s3_backend *s;
    struct staged *items;
    size_t n;
    atomic_size_t next;
    atomic_int rc;
};

static void *publish_worker(void *arg)
{
    struct publish_job *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        int created, rc;
        if (i >= j->n || atomic_load(&j->rc) != TROVE_OK)
            break;
        rc = s3_put(&j->s->base, &j->items[i].d, j->items[i].data, j->items[i].len, &created);
        if (rc != TROVE_OK) {
            int ok = TROVE_OK;
            atomic_compare_exchange_strong(&j->rc, &ok, rc);
            break;
        }
        free(j->items[i].data);
        j->items[i].data = NULL;
    }
    return NULL;
}

static int s3_publish(struct trove_backend *base, uint64_t *overhead_out)
{
    struct s3_backend *s = (struct s3_backend *)base;
    struct publish_job j;
    pthread_t th[PUBLISH_THREADS];
    int nth = 0, rc;
    size_t keep = 0;

    if (overhead_out)
        *overhead_out = 0;
    pthread_mutex_lock(&s->mu);
    j.items = s->staged;
    j.n = s->nstaged;
    s->staged = NULL;
    s->nstaged = s->capstaged = 0;
    pthread_mutex_unlock(&s->mu);
    if (j.n == 0) {
        free(j.items);
        return TROVE_OK;
    }
    j.s = s;
    atomic_init(&j.next, 0);
    atomic_init(&j.rc, TROVE_OK);
    for (int i = 0; i < PUBLISH_THREADS && (size_t)i < j.n; i++)
        if (pthread_create(&th[nth], NULL, publish_worker, &j) == 0)
            nth++;
    if (nth == 0)
        publish_worker(&j);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    rc = atomic_load(&j.rc);
    /* What did not go up stays staged (before anything staged meanwhile). */
    for (size_t i = 0; i < j.n; i++)
        if (j.items[i].data)
            j.items[keep++] = j.items[i];
    if (keep == 0) {
        free(j.items);
        return rc;
    }
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nstaged; i++) { /* rare: both lists, merged into items */
        if (keep == j.n) {
            struct staged *p = trove__realloc(j.items, 2 * j.n * sizeof *p);
            if (!p)
                break;
            j.items = p;
            j.n *= 2;
        }
        j.items[keep++] = s->staged[i];
        s->staged[i].data = NULL;
    }
    for (size_t i = 0; i < s->nstaged; i++)
        free(s->staged[i].data);
    free(s->staged);
    s->staged = j.items;
    s->nstaged = keep;
    s->capstaged = j.n;
    pthread_mutex_unlock(&s->mu);
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
    for (int i = 0; i < s->npool; i++)
        curl_easy_cleanup(s->pool[i]);
    for (size_t i = 0; i < s->nstaged; i++)
        free(s->staged[i].data);
    free(s->staged);
    pthread_mutex_destroy(&s->mu);
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
    .size = s3_size,
    .del = s3_del,
    .list = s3_list,
    .stage = s3_stage,
    .publish = s3_publish,
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
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != 0)
        return TROVE_ERR_NOMEM;
    b = url + 5;
    slash = strchr(b, '/');
    blen = slash ? (size_t)(slash - b) : strlen(b);
    if (!bucket_ok(b, blen))
        return TROVE_ERR_INVALID;
    if (!(s = trove__calloc(1, sizeof *s)))
        return TROVE_ERR_NOMEM;
    s->base.ops = &s3_ops;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s);
        return TROVE_ERR_NOMEM;
    }
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

int trove__s3_is(const struct trove_backend *be) { return be && be->ops == &s3_ops; }

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

    key_names(s, rel, &o);
    out->len = 0;
    r.method = "GET";
    r.url = o.url;
    r.what = o.what;
    r.out = out;
    r.max_len = max_len;
    return perform(s, &r);
}

int trove__s3_key_exists(struct trove_backend *be, const char *rel)
{
    struct s3_backend *s = (struct s3_backend *)be;
    struct obj o;
    struct req r = {0};
    int rc;

    key_names(s, rel, &o);
    r.method = "HEAD";
    r.url = o.url;
    r.what = o.what;
    rc = perform(s, &r);
    return rc == TROVE_OK ? 1 : rc == TROVE_ERR_NOTFOUND ? 0 : rc;
}

int trove__s3_key_put(struct trove_backend *be, const char *rel, const void *data, size_t len)
{
    struct s3_backend *s = (struct s3_backend *)be;
    struct obj o;

    key_names(s, rel, &o);
    return put_at(s, &o, data, len);
}

int trove__s3_key_del(struct trove_backend *be, const char *rel)
{
    struct s3_backend *s = (struct s3_backend *)be;
    struct obj o;
    struct req r = {0};
    int rc;

    key_names(s, rel, &o);
    r.method = "DELETE";
    r.url = o.url;
    r.what = o.what;
    rc = perform(s, &r);
    return rc == TROVE_ERR_NOTFOUND ? TROVE_OK : rc; /* gone is what was asked */
}

int trove__s3_key_list(struct trove_backend *be, const char *rel_prefix,
                       int (*fn)(void *ctx, const char *rest, int64_t mtime), void *ctx)
{
    return list_keys((struct s3_backend *)be, rel_prefix, fn, ctx);
}

int trove__s3_list_aged(struct trove_backend *be,
                        int (*fn)(void *ctx, const struct trove_digest *d, int64_t mtime),
                        void *ctx)
{
    struct list_objects l = {NULL, fn, ctx};
    return list_keys((struct s3_backend *)be, "objects/", list_object_key, &l);
}
