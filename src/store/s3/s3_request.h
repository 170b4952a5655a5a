/*
 * s3_request.h: the S3 backend's request layer (s3_request.c), shared with the backend
 * itself (backend_s3.c): the backend's state, one request with its retries and its error
 * message, the URLs of keys, objects and packs, and listing keys. Nothing here knows packs
 * or staging; backend_s3.c builds those on these calls. Internal to the store layer.
 */
#ifndef TROVE_STORE_S3_REQUEST_H
#define TROVE_STORE_S3_REQUEST_H

#include "backend_internal.h"
#include "refmap.h"
#include "s3_packs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "s3_curl.h"

#define POOL_MAX 16                /* idle easy handles kept for reuse */
#define ERR_BODY_MAX (64u << 10)   /* what is kept of an error answer's body */
#define LIST_BODY_MAX (8u << 20)   /* one ListObjectsV2 page (1,000 keys is ~300 KiB) */
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
    pthread_mutex_t mu; /* guards pool, npool, err, staged..., packs */
    CURL *pool[POOL_MAX];
    int npool;
    char err[768];
    struct staged *staged;
    size_t nstaged, capstaged, staged_bytes;
    struct refmap staged_set;    /* digests staged or being published */
    struct trove__s3_packs packs; /* the pack index */
    struct refmap bad_objects;    /* the quarantine: objects on record as damaged */
    pthread_mutex_t load_mu;     /* loads of the pack list take turns */
    pthread_mutex_t del_mu;      /* deletes take turns */
    atomic_int loaded;           /* the pack list was read once */
    atomic_uint gen;             /* loads of the pack list so far */
    atomic_uint_fast64_t requests, retried;
    /* The engine (s3_request.c): one curl multi handle, driven by one thread, runs every
     * request of this backend, so all of them share one connection cache. */
    pthread_mutex_t qmu;     /* guards queue, engine_up, engine_stop */
    CURLM *multi;
    pthread_t engine;
    int engine_up, engine_stop;
    struct s3_xfer *queue;   /* submitted or waiting out a backoff, not yet in multi */
    size_t running;          /* in multi (the engine thread's own count) */
};


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
    char crange[96];         /* Content-Range of a 206 answer, "" if none */
};

/* Where an answer's body goes (the write callback's state), per attempt. */
struct sink {
    struct req *r;
    CURL *h;
    struct trove_bytes err; /* an error answer's body, up to ERR_BODY_MAX */
    int limit, nomem;
};

/*
 * One request in the engine, with its retries. The submitter fills r, done and ctx (and
 * no_retry), and keeps x and everything r points at alive until done is called. done runs
 * once, on the engine's thread, with rc set as trove__s3_perform documents; it may submit
 * further requests but must not wait for one. A failed HEAD's answer has no body to say
 * why: then explain is set, and trove__s3_settle (on any other thread) asks again.
 */
struct s3_xfer {
    struct req *r;
    void (*done)(struct s3_xfer *x);
    void *ctx;
    int no_retry;
    /* results */
    int rc, explain;
    /* the engine's */
    CURL *h;
    struct curl_slist *hdrs;
    struct sink k;
    char msg[384];
    size_t out0;
    unsigned attempts;
    uint64_t due_ms; /* not before (a backoff), CLOCK_MONOTONIC */
    CURLcode c;
    struct s3_xfer *next;
};

struct obj {
    char url[KEY_MAX + 512];
    char what[KEY_MAX + 128];
};

typedef int (*key_fn)(void *ctx, const char *rest, int64_t mtime);

void trove__s3_set_err(struct s3_backend *s, const char *fmt, ...);

/* Room for one more element of size bytes in *p (cap of them, n used): TROVE_OK, or
 * TROVE_ERR_NOMEM with *p and *cap as they were. */
int trove__s3_grow(void **p, size_t *cap, size_t n, size_t size);

/* Hand x to the engine (started on first use): TROVE_OK, and x->done will be called; or
 * TROVE_ERR_NOMEM / TROVE_ERR_IO when the engine cannot start, and it will not. */
int trove__s3_submit(struct s3_backend *s, struct s3_xfer *x);

/* After x's done, on a thread other than the engine's: x->rc, with a failed HEAD's
 * message completed first (one GET of its first byte for S3's code and message). */
int trove__s3_settle(struct s3_backend *s, struct s3_xfer *x);

/* Several requests in flight, waited for by one thread: submit any number, then take
 * each as it finishes (in the order they finish). */
struct s3_batch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct s3_xfer *finished; /* done, not yet taken */
    size_t pending;           /* submitted, not yet taken */
};

void trove__s3_batch_init(struct s3_batch *b);
void trove__s3_batch_free(struct s3_batch *b); /* with nothing pending */
/* trove__s3_submit with x->done and x->ctx set to b's. */
int trove__s3_batch_submit(struct s3_backend *s, struct s3_batch *b, struct s3_xfer *x);
/* The next request of b to finish (waiting for it), or NULL when none is pending. */
struct s3_xfer *trove__s3_batch_wait(struct s3_batch *b);

/* Create the bucket (PUT /); one created meanwhile by someone else is no error. */
int trove__s3_create_bucket(struct s3_backend *s);

/* Whether this thread is an engine's (where nothing may wait for a request). */
int trove__s3_on_engine(void);

/* Stop the engine (at close, with nothing in flight) and free it. */
void trove__s3_engine_stop(struct s3_backend *s);

/*
 * Run r with retries, on the engine, waiting for the answer. Returns TROVE_OK for a 2xx answer, TROVE_ERR_NOTFOUND for 404 (with
 * r->code telling NoSuchKey from NoSuchBucket), TROVE_ERR_LIMIT when the body passed
 * r->max_len, TROVE_ERR_NOMEM, or TROVE_ERR_REMOTE with the last error set.
 */
int trove__s3_perform(struct s3_backend *s, struct req *r);

/* The URL and the s3:// name of key PREFIX + rel. */
void trove__s3_key_names(const struct s3_backend *s, const char *rel, struct obj *o);

void trove__s3_obj_names(const struct s3_backend *s, const struct trove_digest *d, struct obj *o);

/* PUT data at o (replacing what is there), creating the bucket if it is missing. */
int trove__s3_put_at(struct s3_backend *s, const struct obj *o, const void *data, size_t len);

void trove__s3_pack_names(const struct s3_backend *s, const char *hex, const char *suffix,
                       struct obj *o);

/* GET o (the bytes of range, "bytes=a-b" or "bytes=-n", when not NULL), appended to out,
 * at most max_len bytes. */
int trove__s3_get_at(struct s3_backend *s, const struct obj *o, const char *range,
                  struct trove_bytes *out, size_t max_len, struct req *r);

/* A GET of o (of range, when not NULL) that must answer exactly want bytes, appended to
 * out; an answer of any other length is TROVE_ERR_REMOTE, with the last error saying so
 * (out as it was). */
int trove__s3_get_exact(struct s3_backend *s, const struct obj *o, const char *range,
                        struct trove_bytes *out, uint64_t want);

/* A request with no body either way: HEAD or DELETE. */
int trove__s3_bare_at(struct s3_backend *s, const struct obj *o, const char *method, struct req *r);

/* DELETE o; a key (or bucket) that is not there is no error: gone is what was asked. */
int trove__s3_delete_at(struct s3_backend *s, const struct obj *o);

/* put-if-absent of loose object d: HEAD, then PUT if it is missing. */
int trove__s3_loose_put(struct s3_backend *s, const struct trove_digest *d, const void *data,
                     size_t len, int *created_out);

int trove__s3_loose_get(struct s3_backend *s, const struct trove_digest *d, struct trove_bytes *out,
                     size_t max_len);

int trove__s3_loose_size(struct s3_backend *s, const struct trove_digest *d, uint64_t *len_out);

/* Every key under PREFIX + rel_prefix, a ListObjectsV2 page at a time: fn gets the part of
 * the key after rel_prefix and its LastModified (seconds, -1 when missing or unreadable);
 * a nonzero return stops the listing and is returned. A missing bucket lists as empty. */
int trove__s3_list_keys(struct s3_backend *s, const char *rel_prefix, key_fn fn, void *ctx);

#endif
