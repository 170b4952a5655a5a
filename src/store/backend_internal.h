/*
 * backend_internal.h: the object backend's internal vtable. struct trove_backend is the
 * common head of every backend; a backend embeds it as its first member and sets ops, and
 * the public functions in backend.c check their arguments once and dispatch through ops.
 * A new backend (S3, an in-memory test double) is one .c file with one ops table and one
 * open function; nothing above store.h changes.
 *
 * The ops receive arguments already validated by backend.c: be and d are non-NULL, d is
 * not the zero digest, data is non-NULL when len > 0, out and fn are non-NULL. They return
 * what the matching public function documents in include/trove/store.h.
 */
#ifndef TROVE_STORE_BACKEND_INTERNAL_H
#define TROVE_STORE_BACKEND_INTERNAL_H

#include "trove/store.h"

struct trove_backend_ops {
    const char *name; /* "fs", "s3", ... for messages */
    int (*put)(struct trove_backend *be, const struct trove_digest *d, const void *data,
               size_t len, int *created_out);
    /* out->len is 0 on entry; get appends the object's bytes. */
    int (*get)(struct trove_backend *be, const struct trove_digest *d, struct trove_bytes *out,
               size_t max_len);
    int (*size)(struct trove_backend *be, const struct trove_digest *d, uint64_t *len_out);
    int (*del)(struct trove_backend *be, const struct trove_digest *d);
    int (*list)(struct trove_backend *be, int (*fn)(void *ctx, const struct trove_digest *d),
                void *ctx);
    /* Optional (NULL: backend.c puts at once and publish does nothing). */
    int (*stage)(struct trove_backend *be, const struct trove_digest *d, const void *data,
                 size_t len);
    int (*publish)(struct trove_backend *be, uint64_t *overhead_out);
    /* Optional (NULL: none): trove_backend_get_start's op, done called as it documents;
     * async_ok says whether this handle has it now (a wrapper asks its inner backend). */
    int (*get_start)(struct trove_backend *be, const struct trove_digest *d,
                     struct trove_bytes *out, size_t max_len, trove_get_done_fn done, void *ctx);
    int (*async_ok)(const struct trove_backend *be);
    /* Optional (NULL: damage is reported but not remembered): the quarantine of damaged
     * objects. quarantine records that d's stored bytes do not hash to d (why: a line of
     * text), even on a read-only handle; quarantined says whether d is recorded (1) or not
     * (0); release drops the record; quarantine_list calls fn for every record. Thread-safe. */
    int (*quarantine)(struct trove_backend *be, const struct trove_digest *d, const char *why);
    int (*quarantined)(struct trove_backend *be, const struct trove_digest *d);
    int (*release)(struct trove_backend *be, const struct trove_digest *d);
    int (*quarantine_list)(struct trove_backend *be,
                           int (*fn)(void *ctx, const struct trove_digest *d), void *ctx);
    /* Optional (NULL: none): the containers of objects the backend could not read at open
     * (fs: pack files whose footer or index fails its checks), each by name with why; with
     * remove, each still unreadable is deleted after fn sees it. Owner thread only. */
    int (*unreadable)(struct trove_backend *be, int remove,
                      int (*fn)(void *ctx, const char *name, const char *why), void *ctx);
    /* Release everything, including be itself. */
    void (*close)(struct trove_backend *be);
};

struct trove_backend {
    const struct trove_backend_ops *ops;
    int no_verify; /* TROVE_BACKEND_NOVERIFY: trove_backend_get trusts the bytes */
};

/* Whether trove_backend_get checks what it reads against the digest (callers that must
 * check in any case, as the recipe loader, hash only when it does not). */
static inline int trove__backend_verifies(const struct trove_backend *be) { return !be->no_verify; }

#endif
