/*
 * s3_request.c: S3 requests and what they need (s3_request.h). Every request runs in the
 * backend's engine: one curl multi handle driven by one thread, which adds each submitted
 * request (trove__s3_submit) with an easy handle from a small pool, lets curl run them all
 * at once over one connection cache, and ends each (its done callback) when its answer is
 * in. trove__s3_perform submits and waits; batches keep several in flight from one thread.
 * Each request has SigV4 by libcurl itself, the body's SHA-256 in x-amz-content-sha256
 * (curl 7.88 hashes the body into the signature but does not send the header), a timeout
 * per attempt, retries with backoff and jitter (waited out in the engine's queue), and an
 * answer that is not a success turned into a negative code and a message naming the
 * request and what S3 said. backend_s3.c's header comment says the rest.
 */
#define _GNU_SOURCE

#include "s3_request.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "s3_text.h"
#include "s3_xml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- small helpers ------------------------------------------------------------------- */

struct trove__s3_curl trove__s3_curl;
struct trove__s3_crypto trove__s3_crypto;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;

static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == 0 ? 0 : -1; }

int trove__s3_libs_load(struct trove_diag *diag)
{
    static struct trove__dl_once curl_lib, crypto_lib;
    static const char *const curl_names[] = {TROVE__S3_CURL_FUNCS(TROVE__DL_NAME)};
    static const char *const crypto_names[] = {TROVE__S3_CRYPTO_FUNCS(TROVE__DL_NAME)};
    int rc;

    if ((rc = trove__dl_load(&curl_lib, TROVE_SONAME_CURL, curl_names,
                             sizeof curl_names / sizeof *curl_names, (void **)&trove__s3_curl,
                             "an s3:// store", diag)) != TROVE_OK ||
        (rc = trove__dl_load(&crypto_lib, TROVE_SONAME_CRYPTO, crypto_names,
                             sizeof crypto_names / sizeof *crypto_names,
                             (void **)&trove__s3_crypto, "an s3:// store", diag)) != TROVE_OK)
        return rc;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != 0)
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "libcurl could not initialise (out of memory)");
    return TROVE_OK;
}

void trove__s3_set_err(struct s3_backend *s, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&s->mu);
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&s->mu);
}

/* Room for one more element of size bytes in *p (cap of them, n used). */
int trove__s3_grow(void **p, size_t *cap, size_t n, size_t size)
{
    size_t c = *cap ? 2 * *cap : 64;
    void *q;

    if (n < *cap)
        return TROVE_OK;
    if (c > SIZE_MAX / size || !(q = trove__realloc(*p, c * size)))
        return TROVE_ERR_NOMEM;
    *p = q;
    *cap = c;
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

/* ---- one request --------------------------------------------------------------------- */

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

static int add_header(struct curl_slist **hdrs, const char *line)
{
    struct curl_slist *t = curl_slist_append(*hdrs, line);
    if (!t)
        return -1;
    *hdrs = t;
    return 0;
}

/* The first half of an attempt: x->h set up for x->r (headers in x->hdrs, the answer into
 * x->k). CURLE_OK, or CURLE_OUT_OF_MEMORY. */
static CURLcode setup(struct s3_backend *s, struct s3_xfer *x)
{
    struct req *r = x->r;
    CURL *h = x->h;
    char line[KEY_MAX + 64], sha[65];

    curl_easy_reset(h);
    curl_slist_free_all(x->hdrs);
    x->hdrs = NULL;
    trove_bytes_free(&x->k.err);
    memset(&x->k, 0, sizeof x->k);
    x->k.r = r;
    x->k.h = h;
    if (r->out)
        r->out->len = x->out0;
    sha256_hex(r->body, r->body_len, sha);
    snprintf(line, sizeof line, "x-amz-content-sha256: %s", sha);
    if (add_header(&x->hdrs, line))
        return CURLE_OUT_OF_MEMORY;
    if (s->session_token) {
        snprintf(line, sizeof line, "x-amz-security-token: %s", s->session_token);
        if (add_header(&x->hdrs, line))
            return CURLE_OUT_OF_MEMORY;
    }
    if (r->range) {
        snprintf(line, sizeof line, "Range: %s", r->range);
        if (add_header(&x->hdrs, line))
            return CURLE_OUT_OF_MEMORY;
    }
    if (!strcmp(r->method, "PUT")) {
        if (add_header(&x->hdrs, "Content-Type: application/octet-stream"))
            return CURLE_OUT_OF_MEMORY;
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
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->hdrs);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
    curl_easy_setopt(h, CURLOPT_USERNAME, s->access_key);
    curl_easy_setopt(h, CURLOPT_PASSWORD, s->secret_key);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, s->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, s->timeout_ms < 10000 ? s->timeout_ms : 10000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (s->verbose) /* TROVE_S3_VERBOSE: curl's trace of every request on stderr */
        curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x->k);
    curl_easy_setopt(h, CURLOPT_PRIVATE, x);
    return CURLE_OK;
}

/* The second half: what the answer said, into r->status, length, code, crange and x->msg. */
static void read_answer(struct s3_xfer *x)
{
    struct req *r = x->r;
    CURL *h = x->h;

    r->status = 0;
    r->length = -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->length);
    r->code[0] = '\0';
    r->crange[0] = '\0';
    x->msg[0] = '\0';
    if (x->c == CURLE_OK && r->status == 206) {
        struct curl_header *hd = NULL;
        if (curl_easy_header(h, "Content-Range", 0, CURLH_HEADER, -1, &hd) == CURLHE_OK && hd)
            snprintf(r->crange, sizeof r->crange, "%s", hd->value);
    }
    if (x->c == CURLE_OK && (r->status < 200 || r->status >= 300) && x->k.err.len > 0) {
        size_t pos = 0;
        trove__s3_xml_next((const char *)x->k.err.ptr, x->k.err.len, &pos, "Code", r->code,
                           sizeof r->code);
        pos = 0;
        trove__s3_xml_next((const char *)x->k.err.ptr, x->k.err.len, &pos, "Message", x->msg,
                           sizeof x->msg);
    }
}

/* x failed for good: the message that says what S3 answered. */
static void report(struct s3_backend *s, const struct s3_xfer *x)
{
    const struct req *r = x->r;

    if (x->c != CURLE_OK)
        trove__s3_set_err(s, "S3 %s %s: %s (after %u attempts; is the endpoint right and up?)",
                          r->method, r->what, curl_easy_strerror(x->c), x->attempts);
    else
        trove__s3_set_err(s, "S3 %s %s: HTTP %ld %s%s%s%s", r->method, r->what, r->status,
                          r->code[0] ? r->code : "(no error code)", x->msg[0] ? ": " : "",
                          x->msg, x->attempts > 1 ? " (after retries)" : "");
}

/* The delay before retry n (0-based): exponential, capped, with jitter in [cap/2, cap]. */
static uint64_t backoff_ms(unsigned n)
{
    uint64_t cap = BACKOFF_BASE_MS << (n < 10 ? n : 10);
    if (cap > BACKOFF_CAP_MS)
        cap = BACKOFF_CAP_MS;
    return cap / 2 + jitter_rand() % (cap / 2 + 1);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- the engine ---------------------------------------------------------------------- */

static void complete(struct s3_backend *s, struct s3_xfer *x, int rc)
{
    if (rc != TROVE_OK && x->r->out)
        x->r->out->len = x->out0;
    trove_bytes_free(&x->k.err);
    curl_slist_free_all(x->hdrs);
    x->hdrs = NULL;
    if (x->h)
        give_handle(s, x->h);
    x->h = NULL;
    x->rc = rc;
    x->done(x); /* x may be gone after this */
}

static void enqueue(struct s3_backend *s, struct s3_xfer *x)
{
    pthread_mutex_lock(&s->qmu);
    x->next = s->queue;
    s->queue = x;
    pthread_mutex_unlock(&s->qmu);
    curl_multi_wakeup(s->multi);
}

/* An attempt of x ended with curl's c: done, or due again after a backoff. Engine thread. */
static void attempt_ended(struct s3_backend *s, struct s3_xfer *x)
{
    const struct req *r = x->r;
    int rc;

    read_answer(x);
    if (x->k.limit) {
        rc = TROVE_ERR_LIMIT;
    } else if (x->k.nomem || x->c == CURLE_OUT_OF_MEMORY) {
        rc = TROVE_ERR_NOMEM;
    } else if (x->c == CURLE_OK && r->status >= 200 && r->status < 300) {
        rc = TROVE_OK;
    } else if (x->c == CURLE_OK && r->status == 404) {
        rc = TROVE_ERR_NOTFOUND;
        trove__s3_set_err(s, "S3 %s %s: not found (HTTP 404%s%s)", r->method, r->what,
                          r->code[0] ? " " : "", r->code);
    } else if (!x->no_retry && x->attempts <= s->retries &&
               (x->c == CURLE_OK ? r->status >= 500 || r->status == 429 : retryable_curl(x->c))) {
        atomic_fetch_add(&s->retried, 1);
        x->due_ms = now_ms() + backoff_ms(x->attempts - 1);
        enqueue(s, x);
        return;
    } else {
        rc = TROVE_ERR_REMOTE;
        if (x->c == CURLE_OK && !strcmp(r->method, "HEAD") && !r->code[0])
            x->explain = 1; /* trove__s3_settle asks why */
        else
            report(s, x);
    }
    complete(s, x, rc);
}

/* Begin the next attempt of x. Engine thread. */
static void attempt_begin(struct s3_backend *s, struct s3_xfer *x)
{
    CURLMcode mc;

    if (!x->h && !(x->h = take_handle(s))) {
        complete(s, x, TROVE_ERR_NOMEM);
        return;
    }
    if (setup(s, x) != CURLE_OK) {
        complete(s, x, TROVE_ERR_NOMEM);
        return;
    }
    x->attempts++;
    atomic_fetch_add(&s->requests, 1);
    if ((mc = curl_multi_add_handle(s->multi, x->h)) != CURLM_OK) {
        trove__s3_set_err(s, "S3 %s %s: %s", x->r->method, x->r->what, curl_multi_strerror(mc));
        complete(s, x, mc == CURLM_OUT_OF_MEMORY ? TROVE_ERR_NOMEM : TROVE_ERR_REMOTE);
        return;
    }
    s->running++;
}

/*
 * The engine's loop: move the submitted requests that are due into the multi handle, let
 * curl run every transfer, end the attempts that finished, and sleep in curl_multi_poll
 * until a socket is ready, a backoff is due or trove__s3_submit wakes it. It ends when
 * asked to at close, with nothing queued or running.
 */
static _Thread_local int on_engine;

int trove__s3_on_engine(void) { return on_engine; }

static void *engine_main(void *arg)
{
    struct s3_backend *s = arg;

    on_engine = 1;
    for (;;) {
        struct s3_xfer *due = NULL, **pp;
        uint64_t now = now_ms(), next = UINT64_MAX;
        int stop, still = 0, left;
        CURLMsg *m;
        long timeout;

        pthread_mutex_lock(&s->qmu);
        for (pp = &s->queue; *pp;) {
            struct s3_xfer *x = *pp;
            if (x->due_ms <= now) {
                *pp = x->next;
                x->next = due;
                due = x;
            } else {
                next = x->due_ms < next ? x->due_ms : next;
                pp = &x->next;
            }
        }
        stop = s->engine_stop && !s->queue;
        pthread_mutex_unlock(&s->qmu);
        while (due) {
            struct s3_xfer *x = due;
            due = x->next;
            attempt_begin(s, x);
        }
        if (stop && s->running == 0)
            break;
        curl_multi_perform(s->multi, &still);
        while ((m = curl_multi_info_read(s->multi, &left)) != NULL) {
            struct s3_xfer *x = NULL;
            if (m->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            x->c = m->data.result;
            curl_multi_remove_handle(s->multi, m->easy_handle);
            s->running--;
            attempt_ended(s, x);
        }
        /* A backoff begun just now is in the queue: look again before sleeping. */
        now = now_ms();
        pthread_mutex_lock(&s->qmu);
        for (struct s3_xfer *x = s->queue; x; x = x->next)
            next = x->due_ms < next ? x->due_ms : next;
        pthread_mutex_unlock(&s->qmu);
        timeout = next == UINT64_MAX ? 1000 : next <= now ? 0 : (long)(next - now);
        if (timeout > 1000)
            timeout = 1000;
        curl_multi_poll(s->multi, NULL, 0, (int)timeout, NULL);
    }
    return NULL;
}

int trove__s3_submit(struct s3_backend *s, struct s3_xfer *x)
{
    int rc = TROVE_OK;

    x->rc = TROVE_ERR_REMOTE;
    x->explain = 0;
    x->h = NULL;
    x->hdrs = NULL;
    memset(&x->k, 0, sizeof x->k);
    x->msg[0] = '\0';
    x->out0 = x->r->out ? x->r->out->len : 0;
    x->attempts = 0;
    x->due_ms = 0;
    x->c = CURLE_OK;
    pthread_mutex_lock(&s->qmu);
    if (!s->engine_up) {
        if (!(s->multi = curl_multi_init())) {
            rc = TROVE_ERR_NOMEM;
        } else {
            curl_multi_setopt(s->multi, CURLMOPT_MAXCONNECTS, (long)POOL_MAX);
            if (pthread_create(&s->engine, NULL, engine_main, s) != 0) {
                curl_multi_cleanup(s->multi);
                s->multi = NULL;
                rc = TROVE_ERR_REMOTE;
            } else {
                s->engine_up = 1;
            }
        }
    }
    if (rc == TROVE_OK) {
        x->next = s->queue;
        s->queue = x;
    }
    pthread_mutex_unlock(&s->qmu);
    if (rc == TROVE_OK)
        curl_multi_wakeup(s->multi);
    else
        trove__s3_set_err(s, "S3 %s %s: cannot start the request engine", x->r->method,
                          x->r->what);
    return rc;
}

void trove__s3_engine_stop(struct s3_backend *s)
{
    int up;

    pthread_mutex_lock(&s->qmu);
    up = s->engine_up;
    s->engine_stop = 1;
    pthread_mutex_unlock(&s->qmu);
    if (!up)
        return;
    curl_multi_wakeup(s->multi);
    pthread_join(s->engine, NULL);
    curl_multi_cleanup(s->multi);
    s->multi = NULL;
    s->engine_up = 0;
}

/* ---- waiting for one request --------------------------------------------------------- */

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
};

static void wake(struct s3_xfer *x)
{
    struct waiter *w = x->ctx;
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* x submitted and waited for; its rc, or the submit's error. */
static int run_one(struct s3_backend *s, struct s3_xfer *x)
{
    struct waiter w = {.done = 0};
    int rc;

    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    x->done = wake;
    x->ctx = &w;
    if ((rc = trove__s3_submit(s, x)) == TROVE_OK) {
        pthread_mutex_lock(&w.mu);
        while (!w.done)
            pthread_cond_wait(&w.cv, &w.mu);
        pthread_mutex_unlock(&w.mu);
        rc = x->rc;
    }
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    return rc;
}

int trove__s3_settle(struct s3_backend *s, struct s3_xfer *x)
{
    if (x->explain) {
        /* A HEAD answer has no body: ask again with a one-byte GET to learn S3's code and
         * message (a success now is not kept; the HEAD's failure stands). */
        struct req g = *x->r;
        struct s3_xfer y = {.r = &g, .no_retry = 1};
        g.method = "GET";
        g.range = "bytes=0-0";
        g.out = NULL;
        run_one(s, &y);
        if (y.c == CURLE_OK && g.status == x->r->status) {
            memcpy(x->r->code, g.code, sizeof x->r->code);
            memcpy(x->msg, y.msg, sizeof x->msg);
        } else {
            x->msg[0] = '\0';
        }
        x->explain = 0;
        report(s, x);
    }
    return x->rc;
}

/* ---- several in flight -------------------------------------------------------------- */

void trove__s3_batch_init(struct s3_batch *b)
{
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->finished = NULL;
    b->pending = 0;
}

void trove__s3_batch_free(struct s3_batch *b)
{
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
}

static void batch_done(struct s3_xfer *x)
{
    struct s3_batch *b = x->ctx;
    pthread_mutex_lock(&b->mu);
    x->next = b->finished; /* the engine is done with x: its link is free */
    b->finished = x;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

int trove__s3_batch_submit(struct s3_backend *s, struct s3_batch *b, struct s3_xfer *x)
{
    int rc;

    x->done = batch_done;
    x->ctx = b;
    pthread_mutex_lock(&b->mu);
    b->pending++;
    pthread_mutex_unlock(&b->mu);
    if ((rc = trove__s3_submit(s, x)) != TROVE_OK) {
        pthread_mutex_lock(&b->mu);
        b->pending--;
        pthread_mutex_unlock(&b->mu);
    }
    return rc;
}

struct s3_xfer *trove__s3_batch_wait(struct s3_batch *b)
{
    struct s3_xfer *x = NULL;

    pthread_mutex_lock(&b->mu);
    while (b->pending > 0 && !b->finished)
        pthread_cond_wait(&b->cv, &b->mu);
    if ((x = b->finished) != NULL) {
        b->finished = x->next;
        b->pending--;
    }
    pthread_mutex_unlock(&b->mu);
    return x;
}

/*
 * Run r with retries. Returns TROVE_OK for a 2xx answer, TROVE_ERR_NOTFOUND for 404 (with
 * r->code telling NoSuchKey from NoSuchBucket), TROVE_ERR_LIMIT when the body passed
 * r->max_len, TROVE_ERR_NOMEM, or TROVE_ERR_REMOTE with the last error set.
 */
int trove__s3_perform(struct s3_backend *s, struct req *r)
{
    struct s3_xfer x = {.r = r};
    int rc = run_one(s, &x);
    return x.explain ? trove__s3_settle(s, &x) : rc;
}

/* ---- object requests ----------------------------------------------------------------- */


/* The URL and the s3:// name of key PREFIX + rel. */
void trove__s3_key_names(const struct s3_backend *s, const char *rel, struct obj *o)
{
    snprintf(o->url, sizeof o->url, "%s/%s%s", s->bucket_url, s->prefix, rel);
    snprintf(o->what, sizeof o->what, "s3://%s/%s%s", s->bucket, s->prefix, rel);
}

void trove__s3_obj_names(const struct s3_backend *s, const struct trove_digest *d, struct obj *o)
{
    char rel[48];
    trove_digest_hex(d, rel + 8);
    memcpy(rel, "objects/", 8);
    trove__s3_key_names(s, rel, o);
}

int trove__s3_create_bucket(struct s3_backend *s)
{
    char url[KEY_MAX + 512], what[256];
    struct req r = {0};
    int rc;

    snprintf(url, sizeof url, "%s/", s->bucket_url);
    snprintf(what, sizeof what, "s3://%s (creating the bucket)", s->bucket);
    r.method = "PUT";
    r.url = url;
    r.what = what;
    rc = trove__s3_perform(s, &r);
    if (rc == TROVE_ERR_REMOTE && r.status == 409) /* created by someone else meanwhile */
        rc = TROVE_OK;
    return rc;
}

/* PUT data at o (replacing what is there), creating the bucket if it is missing. */
int trove__s3_put_at(struct s3_backend *s, const struct obj *o, const void *data, size_t len)
{
    struct req r = {0};
    int rc;

    r.method = "PUT";
    r.url = o->url;
    r.what = o->what;
    r.body = data;
    r.body_len = len;
    rc = trove__s3_perform(s, &r);
    if (rc == TROVE_ERR_NOTFOUND) { /* NoSuchBucket: the first write creates it */
        if ((rc = trove__s3_create_bucket(s)) != TROVE_OK)
            return rc;
        rc = trove__s3_perform(s, &r);
    }
    if (rc == TROVE_ERR_NOTFOUND)
        rc = TROVE_ERR_REMOTE; /* a PUT is never "not found"; the message says why */
    return rc;
}

void trove__s3_pack_names(const struct s3_backend *s, const char *hex, const char *suffix,
                          struct obj *o)
{
    char rel[48];
    snprintf(rel, sizeof rel, "packs/%.32s%s", hex, suffix);
    trove__s3_key_names(s, rel, o);
}

/* GET o (the bytes of range, "bytes=a-b" or "bytes=-n", when not NULL), appended to out,
 * at most max_len bytes. */
int trove__s3_get_at(struct s3_backend *s, const struct obj *o, const char *range,
                     struct trove_bytes *out, size_t max_len, struct req *r)
{
    memset(r, 0, sizeof *r);
    r->method = "GET";
    r->url = o->url;
    r->what = o->what;
    r->range = range;
    r->out = out;
    r->max_len = max_len;
    return trove__s3_perform(s, r);
}

/* A GET of exactly want bytes; any other length is TROVE_ERR_REMOTE, with why. */
int trove__s3_get_exact(struct s3_backend *s, const struct obj *o, const char *range,
                        struct trove_bytes *out, uint64_t want)
{
    struct req r;
    size_t out0 = out->len;
    int rc = trove__s3_get_at(s, o, range, out, (size_t)want, &r);

    if (rc == TROVE_ERR_LIMIT || (rc == TROVE_OK && out->len - out0 != want)) {
        trove__s3_set_err(
            s,
            "S3 GET %s (%s): the answer is not the %llu bytes asked for (does the server "
            "honour Range?)",
            o->what, range ? range : "whole", (unsigned long long)want);
        out->len = out0;
        rc = TROVE_ERR_REMOTE;
    }
    return rc;
}

/* A request with no body either way: HEAD or DELETE. */
int trove__s3_bare_at(struct s3_backend *s, const struct obj *o, const char *method, struct req *r)
{
    memset(r, 0, sizeof *r);
    r->method = method;
    r->url = o->url;
    r->what = o->what;
    return trove__s3_perform(s, r);
}

/* DELETE o; a key (or bucket) that is not there is no error: gone is what was asked. */
int trove__s3_delete_at(struct s3_backend *s, const struct obj *o)
{
    struct req r;
    int rc = trove__s3_bare_at(s, o, "DELETE", &r);
    return rc == TROVE_ERR_NOTFOUND ? TROVE_OK : rc;
}

/* put-if-absent of loose object d: HEAD, then PUT if it is missing. */
int trove__s3_loose_put(struct s3_backend *s, const struct trove_digest *d, const void *data,
                        size_t len, int *created_out)
{
    struct obj o;
    struct req r;
    int rc;

    *created_out = 0;
    trove__s3_obj_names(s, d, &o);
    rc = trove__s3_bare_at(s, &o, "HEAD", &r);
    if (rc == TROVE_OK)
        return TROVE_OK; /* present: put-if-absent leaves it */
    if (rc != TROVE_ERR_NOTFOUND)
        return rc;
    if ((rc = trove__s3_put_at(s, &o, data, len)) == TROVE_OK)
        *created_out = 1;
    return rc;
}

int trove__s3_loose_get(struct s3_backend *s, const struct trove_digest *d, struct trove_bytes *out,
                        size_t max_len)
{
    struct obj o;
    struct req r;

    trove__s3_obj_names(s, d, &o);
    return trove__s3_get_at(s, &o, NULL, out, max_len, &r);
}

int trove__s3_loose_size(struct s3_backend *s, const struct trove_digest *d, uint64_t *len_out)
{
    struct obj o;
    struct req r;
    int rc;

    trove__s3_obj_names(s, d, &o);
    if ((rc = trove__s3_bare_at(s, &o, "HEAD", &r)) != TROVE_OK)
        return rc;
    if (r.length < 0) {
        trove__s3_set_err(s, "S3 HEAD %s: the answer has no Content-Length", o.what);
        return TROVE_ERR_REMOTE;
    }
    *len_out = (uint64_t)r.length;
    return TROVE_OK;
}

/* ---- list ---------------------------------------------------------------------------- */


/* Every key under PREFIX + rel_prefix, a ListObjectsV2 page at a time: fn gets the part of
 * the key after rel_prefix and its LastModified (seconds, -1 when missing or unreadable);
 * a nonzero return stops the listing and is returned. A missing bucket lists as empty. */
int trove__s3_list_keys(struct s3_backend *s, const char *rel_prefix, key_fn fn, void *ctx)
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
        rc = trove__s3_perform(s, &r);
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
            if (trove__s3_xml_next((const char *)page.ptr, page.len, &mpos, "LastModified", mtime,
                                   sizeof mtime) == 1)
                t = trove__s3_parse_time(mtime);
            if (strncmp(key, pfx, plen) != 0)
                continue;
            if ((rc = fn(ctx, key + plen, t)) != 0)
                goto out;
        }
        if (found < 0) {
            trove__s3_set_err(s, "S3 list %s: a <Key> in page %d is malformed or too long", what,
                              pages);
            rc = TROVE_ERR_REMOTE;
            goto out;
        }
        pos = 0;
        if (trove__s3_xml_next((const char *)page.ptr, page.len, &pos, "IsTruncated", trunc,
                               sizeof trunc) != 1 ||
            strcmp(trunc, "true") != 0)
            break;
        pos = 0;
        if (trove__s3_xml_next((const char *)page.ptr, page.len, &pos, "NextContinuationToken",
                               token, sizeof token) != 1 ||
            !token[0]) {
            trove__s3_set_err(
                s, "S3 list %s: page %d is truncated but has no usable continuation token", what,
                pages);
            rc = TROVE_ERR_REMOTE;
            goto out;
        }
    }
out:
    curl_free(epfx);
    trove_bytes_free(&page);
    return rc;
}
