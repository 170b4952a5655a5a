/*
 * trove/backend.h: the content-addressed store's lowest layer — object backends. An object is an immutable byte string named by the xxh3-128 digest of its
 * bytes; a backend keeps objects and knows nothing of volumes or recipes. The interface
 * asks only for what an S3-like service gives cheaply: put-if-absent, get, delete and a
 * list, and never relies on a cheap stat. docs/formats/store.md describes the layout.
 */
#ifndef TROVE_BACKEND_H
#define TROVE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/digest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- object backends ------------------------------------------------------------------ */

struct trove_backend;

/*
 * The local filesystem backend: objects under dir/objects/<first 2 hex digits>/<32 hex
 * digits>, each written as a temp file in dir/tmp, fsync'd, linked into place (link never
 * overwrites), the temp unlinked and the directory fsync'd, so an object either is complete
 * and durable or is not there. An object is never overwritten. Objects written as a batch
 * (trove_backend_stage) go into pack files under dir/objects/packs, whose indexes are read
 * at open. dir is created if missing (with dir/objects and dir/tmp); opening removes temp
 * files left by dead processes. Errors: -errno from the filesystem, TROVE_ERR_NOMEM.
 * Thread-safety: one handle may be used from several threads for put, get, size and list
 * on different or equal digests; stage, publish and delete are for one thread at a time
 * (with puts from others still allowed).
 */
int trove_backend_fs_open(const char *dir, struct trove_backend **out);
/* The same backend, read-only: creates and cleans nothing (dir/objects must exist, else
 * TROVE_ERR_NOTFOUND); put and delete return TROVE_ERR_READONLY. */
int trove_backend_fs_open_readonly(const char *dir, struct trove_backend **out);

#define TROVE_BACKEND_READONLY 1u /* as trove_backend_fs_open_readonly */
#define TROVE_BACKEND_NOSYNC 2u   /* no fsync or syncfs at all: benchmarks, scratch stores */
#define TROVE_BACKEND_NOVERIFY 4u /* gets do not rehash what they read: benchmarks only */
int trove_backend_fs_open_flags(const char *dir, unsigned flags, struct trove_backend **out);

/*
 * The S3 backend (docs/s3.md): object d at key PREFIX/objects/<32 hex digits> of BUCKET on
 * an S3-compatible service, or, staged under 1 MiB, inside a pack at PREFIX/packs/<32 hex>
 * (read by ranged GETs; the pack index is loaded by the first operation that needs it),
 * through libcurl with SigV4. url is "s3://BUCKET[/PREFIX]".
 * Every NULL or zero field of opt (opt itself may be NULL) comes from the environment, as
 * the AWS CLI has it: endpoint from TROVE_S3_ENDPOINT (else AWS, https://s3.REGION.
 * amazonaws.com), region from AWS_REGION or AWS_DEFAULT_REGION (else us-east-1),
 * credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, else
 * from profile AWS_PROFILE (else "default") of AWS_SHARED_CREDENTIALS_FILE (else
 * ~/.aws/credentials); addressing from TROVE_S3_ADDRESSING ("path" or "virtual"; the
 * default is virtual-host on AWS and path-style on any other endpoint); the timeout of one
 * request from TROVE_S3_TIMEOUT_MS (else 30 s) and the retries of a failed one from
 * TROVE_S3_RETRIES (else 5). Opening sends nothing; the bucket is created by the first
 * write that finds it missing.
 *
 * Errors: TROVE_ERR_INVALID (a malformed url, bucket name, prefix, endpoint or region, or no
 * credentials anywhere), TROVE_ERR_NOMEM, TROVE_ERR_NOTFOUND (libcurl or libcrypto, loaded by
 * the first open rather than when the program starts, is not installed). The requests then return TROVE_ERR_NOTFOUND for a
 * missing object and TROVE_ERR_REMOTE for anything else S3 refused or could not be reached
 * for, after the retries; trove_backend_s3_last_error tells what S3 said.
 * Thread-safety: every call may run from several threads at once.
 */
enum { TROVE_S3_AUTO = 0, TROVE_S3_PATH = 1, TROVE_S3_VIRTUAL = 2 };
struct trove_s3_options {
    const char *endpoint;      /* "http://127.0.0.1:8080", "https://s3.example.com" */
    const char *region;
    const char *access_key, *secret_key, *session_token;
    const char *profile;       /* of the credentials file, when no key is given */
    int addressing;            /* TROVE_S3_AUTO, _PATH or _VIRTUAL */
    unsigned timeout_ms;       /* one request, retries apart */
    unsigned retries;
    unsigned list_page;        /* keys per ListObjectsV2 page, 1..1000 (0: 1000) */
};
int trove_backend_s3_open(const char *url, const struct trove_s3_options *opt,
                          struct trove_backend **out);
/* The message of the last failed request of an S3 backend ("" if none), into buf (cap
 * bytes, NUL-terminated): the method, s3://bucket/key, the HTTP status and S3's error code
 * and message. TROVE_ERR_INVALID for a backend that is not S3. */
int trove_backend_s3_last_error(struct trove_backend *be, char *buf, size_t cap);
/* Requests sent so far (every attempt counts) and how many of them were retries. */
int trove_backend_s3_stats(struct trove_backend *be, uint64_t *requests_out,
                           uint64_t *retries_out);
void trove_backend_close(struct trove_backend *be);

/*
 * Store len bytes under digest d if no object has that digest yet. The caller computed d
 * from the bytes (trove_digest_of); the backend does not rehash. *created_out (may be NULL)
 * is 1 if the object was written, 0 if it already existed. Durable on return.
 * Errors: TROVE_ERR_INVALID (the zero digest), -errno.
 */
int trove_backend_put(struct trove_backend *be, const struct trove_digest *d, const void *data,
                      size_t len, int *created_out);

/*
 * Read object d into out (replacing its content; out->len is 0 after an error). Objects
 * larger than max_len are refused with TROVE_ERR_LIMIT before anything is read into memory.
 * The bytes read are hashed and must be named d (else TROVE_ERR_CHECKSUM, and out is left
 * empty), unless the backend was opened with TROVE_BACKEND_NOVERIFY.
 * Errors: TROVE_ERR_INVALID (the zero digest), TROVE_ERR_NOTFOUND, TROVE_ERR_LIMIT,
 * TROVE_ERR_CORRUPT (not a regular file), TROVE_ERR_TRUNCATED (shorter than its size),
 * TROVE_ERR_CHECKSUM (bytes that do not hash to d), TROVE_ERR_NOMEM, -errno.
 */
int trove_backend_get(struct trove_backend *be, const struct trove_digest *d,
                      struct trove_bytes *out, size_t max_len);

/*
 * Asynchronous gets, for backends that run requests without a thread each (S3: its curl
 * multi engine; the fault wrapper over such a backend). trove_backend_get_async says
 * whether be has them (1) or not (0). trove_backend_get_start begins what trove_backend_get
 * does and returns at once: TROVE_OK, and done(ctx, rc) is then called exactly once, on
 * another thread, with rc and out as trove_backend_get would leave them; or an error (the
 * argument checks, TROVE_ERR_INVALID for a backend without them, TROVE_ERR_CHECKSUM for a
 * quarantined object, or what the backend could not start with), and done is never
 * called. d, out and ctx must stay valid until done. done must not wait for another get
 * of the same backend (it runs on the thread that drives them); it may start one.
 */
typedef void (*trove_get_done_fn)(void *ctx, int rc);
int trove_backend_get_async(const struct trove_backend *be);
int trove_backend_get_start(struct trove_backend *be, const struct trove_digest *d,
                            struct trove_bytes *out, size_t max_len, trove_get_done_fn done,
                            void *ctx);

/* The size of object d in *len_out (a stat on fs; a HEAD on S3, nothing for a packed
 * object). Errors as for get. */
int trove_backend_size(struct trove_backend *be, const struct trove_digest *d, uint64_t *len_out);

/*
 * Batched puts. trove_backend_stage writes object d (if absent) without making it durable
 * or visible; trove_backend_publish makes every staged object durable and then visible
 * under its name, with a constant number of filesystem syncs for the whole batch (fs: one
 * syncfs, the links, another syncfs). A name still never appears before its bytes are
 * durable. Staged objects cannot be read before publish. Not thread-safe against other
 * stage/publish calls on the same handle. *overhead_out (may be NULL) gets the bytes publish
 * wrote besides the objects' own (fs: the pack's index and footer). Errors: as for put.
 */
int trove_backend_stage(struct trove_backend *be, const struct trove_digest *d, const void *data,
                        size_t len);
int trove_backend_publish(struct trove_backend *be, uint64_t *overhead_out);

/*
 * The quarantine of damaged objects. A get whose bytes do not hash to d records d here (the
 * fs backend: DIR/quarantine/<hex>, even from a read-only handle); from then on a get of d
 * answers TROVE_ERR_CHECKSUM without reading (size still tells the stored length), until
 * good bytes arrive: a put or stage of
 * d checks that its bytes hash to d (TROVE_ERR_INVALID if not), replaces the stored object
 * and drops the record (the put reports created = 1). A delete drops the record too.
 * trove_backend_quarantined: 1 if d is recorded, else 0. trove_backend_quarantine records d
 * (why: one line of text, kept with the record). trove_backend_release drops a record.
 * trove_backend_quarantine_list calls fn for every record (fn as for trove_backend_list).
 * trove_backend_get_raw reads d's stored bytes with no check at all: for verify's repair,
 * which looks again at a quarantined object. Thread-safe as get and put are.
 */
int trove_backend_quarantined(struct trove_backend *be, const struct trove_digest *d);
int trove_backend_quarantine(struct trove_backend *be, const struct trove_digest *d,
                             const char *why);
int trove_backend_release(struct trove_backend *be, const struct trove_digest *d);
int trove_backend_quarantine_list(struct trove_backend *be,
                                  int (*fn)(void *ctx, const struct trove_digest *d), void *ctx);
int trove_backend_get_raw(struct trove_backend *be, const struct trove_digest *d,
                          struct trove_bytes *out, size_t max_len);

/*
 * Containers of objects that the backend could not read when it was opened: for the fs
 * backend, pack files (objects/packs/<hex>.pack, where v3 recipe objects live) whose
 * footer or index fails its checks, so that every object in them is absent; for the S3
 * backend, packs (packs/<hex>, relative to PREFIX) whose tail fails them when the index
 * is loaded. fn is called with each one's name (relative to the store directory or
 * PREFIX) and why; nonzero stops. With remove (a writable handle), each one that still
 * fails its checks is deleted after fn has seen it: gc does so once every recipe reads
 * without it, when nothing can need it.
 * A commit that writes a pack of the same name replaces the damaged file (it is healed,
 * and no longer listed). Errors: TROVE_ERR_INVALID, TROVE_ERR_READONLY (remove on a
 * read-only handle), -errno.
 */
int trove_backend_unreadable(struct trove_backend *be, int remove,
                             int (*fn)(void *ctx, const char *name, const char *why), void *ctx);

/* Delete object d; durable on return (fs: a loose object's directory is fsync'd; a packed
 * object's delete goes to its pack's fsync'd dead list, and the pack is unlinked when empty
 * or rewritten when under half live; S3: the same with the pack's .dead record, replaced
 * by one PUT, and any loose copy deleted too). Deleting an object that is not there is
 * TROVE_ERR_NOTFOUND; the zero digest is TROVE_ERR_INVALID. */
int trove_backend_delete(struct trove_backend *be, const struct trove_digest *d);

/*
 * Call fn once for every object, in no particular order; fn returns 0 to go on, or a
 * positive value to stop (that value is returned). Loose and packed objects are listed
 * alike (an object in both, once). Files that are not well-named objects (temp files,
 * strangers) are skipped. Errors: TROVE_ERR_INVALID (fn NULL), -errno.
 */
int trove_backend_list(struct trove_backend *be,
                       int (*fn)(void *ctx, const struct trove_digest *d), void *ctx);

/* ---- the fault backend ---------------------------------------------------------------- */

/*
 * A fault-injecting backend (src/store/backend_fault.c), for the streaming tests and
 * benchmarks: gets made slow and unreliable on purpose over any other backend.
 */
struct trove_fault_options {
    uint32_t latency_us;      /* added to every get before it reads */
    uint64_t bytes_per_sec;   /* a get of len bytes also waits len / bytes_per_sec (0: none) */
    /* Called at the start of every get with the digest and how many gets of it came
     * before (0 for the first); a nonzero return is that get's result (TROVE_ERR_NOTFOUND
     * for a missing object or one that appears late, -EIO for an error ...), before any
     * latency. May be NULL. Called from several threads at once. */
    int (*get_hook)(void *ctx, const struct trove_digest *d, uint64_t nth);
    void *hook_ctx;
    /* Nonzero: asynchronous gets (trove_backend_get_start) even over an inner backend
     * without them, whose gets then run on the wrapper's timer thread, one at a time; for
     * testing what runs on asynchronous backends (S3) over a local one. */
    int async;
};

struct trove_fault_stats {
    uint64_t gets;            /* get calls */
    uint64_t failed;          /* gets the hook failed */
    uint64_t bytes;           /* bytes returned by successful gets */
    uint32_t max_concurrent;  /* gets under way at once, at most */
};

/*
 * Wrap inner (borrowed: it must outlive the wrapper, and closing the wrapper does not close
 * it) in a backend whose gets are delayed and failed as opt says; every other call goes
 * straight to inner. Thread-safety as inner's. Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM.
 */
int trove_backend_fault_wrap(struct trove_backend *inner, const struct trove_fault_options *opt,
                             struct trove_backend **out);
/* Its counters so far (be must come from trove_backend_fault_wrap, else TROVE_ERR_INVALID). */
int trove_backend_fault_stats(struct trove_backend *be, struct trove_fault_stats *out);

#ifdef __cplusplus
}
#endif
#endif
