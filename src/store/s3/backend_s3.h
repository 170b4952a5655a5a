/*
 * backend_s3.h: what the store (store.c, store_verify.c) asks of the S3 backend beyond the
 * object interface: keys that are not content-addressed — a volume's head
 * (PREFIX/volumes/NAME.recipe, replaced by one PUT) and the writer's lease (PREFIX/lease) —
 * and objects listed with their age, for gc's grace period. rel is a key relative to
 * PREFIX. Errors as the object calls: TROVE_ERR_NOTFOUND for 404, TROVE_ERR_REMOTE with
 * trove_backend_s3_last_error saying what S3 answered.
 */
#ifndef TROVE_STORE_BACKEND_S3_H
#define TROVE_STORE_BACKEND_S3_H

#include "trove/backend.h"

#include <stddef.h>
#include <stdint.h>

/* 1 if be is an S3 backend. */
int trove__s3_is(const struct trove_backend *be);
/* "s3://BUCKET[/PREFIX]" into buf, for messages. */
void trove__s3_url(const struct trove_backend *be, char *buf, size_t cap);
/* The whole of key rel into out (replacing its bytes), at most max_len bytes. */
int trove__s3_key_get(struct trove_backend *be, const char *rel, struct trove_bytes *out,
                      size_t max_len);
/* 1 if key rel exists, 0 if not, or an error. */
int trove__s3_key_exists(struct trove_backend *be, const char *rel);
/* Replace key rel by data (one PUT: readers see the old bytes or the new, never a mix). */
int trove__s3_key_put(struct trove_backend *be, const char *rel, const void *data, size_t len);
/* Delete key rel; a missing key is no error. */
int trove__s3_key_del(struct trove_backend *be, const char *rel);
/* Every key starting with PREFIX + rel_prefix: fn(ctx, the rest of the key, LastModified
 * in seconds since the epoch or -1); a nonzero return from fn stops and is returned. */
int trove__s3_key_list(struct trove_backend *be, const char *rel_prefix,
                       int (*fn)(void *ctx, const char *rest, int64_t mtime), void *ctx);
/* Every object, with the time it was stored (seconds since the epoch, -1 unknown): a loose
 * one's own LastModified, a packed one's its pack's. Each object once. */
int trove__s3_list_aged(struct trove_backend *be,
                        int (*fn)(void *ctx, const struct trove_digest *d, int64_t mtime),
                        void *ctx);
/* The bytes staged and not yet published (a publish under way counts none of its own): the
 * store publishes early when they pass a bound, so that staging holds bounded memory. 0
 * for a backend that is not S3. */
size_t trove__s3_staged_bytes(struct trove_backend *be);

/* For the store's writer, which holds the lease (so no other writer adds packs): d's
 * length if d is in a pack; else, with loose (an object big enough to be stored loose), one
 * HEAD of its loose key; else TROVE_ERR_NOTFOUND without a request (a small object is
 * packed when stored). No refresh of the pack list. */
int trove__s3_size_sole(struct trove_backend *be, const struct trove_digest *d, int loose,
                        uint64_t *len_out);
/* Objects under this many bytes go into packs when staged; larger ones are put loose. */
#define TROVE__S3_PACK_OBJECT_MAX ((size_t)1 << 20)
/* The store publishes its staged objects once they hold this many bytes. */
#define TROVE__S3_STAGE_FLUSH ((size_t)16 << 20)

#endif
