/*
 * s3_load.h: loading the S3 backend's pack index from the bucket (s3_load.c), for the
 * backend's operations (backend_s3.c) and its publish (s3_publish.c). Internal to the
 * store layer.
 */
#ifndef TROVE_STORE_S3_LOAD_H
#define TROVE_STORE_S3_LOAD_H

#include "s3_request.h"

#define BAD_SUFFIX ".bad" /* PREFIX/packs/<object hex>.bad: the object is damaged */

/* The pack index (and the quarantine's records), loaded once, by the first operation that
 * needs it: TROVE_OK, or the load's error (then the next call tries again). */
int trove__s3_ensure_loaded(struct s3_backend *s);

/* A miss: load the packs published since, unless another thread did so while this one
 * looked (s->gen is no longer seen, the load count read before the lookup). */
int trove__s3_refresh(struct s3_backend *s, unsigned seen);

/* Fetch pack hex's tail (32 lowercase hex digits) again and check it as a load does:
 * *bad_out is 1 if it still fails a check, 0 if it reads now or is gone. Errors: a request
 * that fails (TROVE_ERR_REMOTE, TROVE_ERR_NOMEM), *bad_out then 0. */
int trove__s3_pack_recheck(struct s3_backend *s, const char *hex, int *bad_out);

/* A load that failed (rc) for the quarantine's question, which backend.c asks right
 * before the operation itself, because the service could not be reached (after the
 * retries): the next trove__s3_ensure_loaded of s on this thread, within a second,
 * answers rc instead of the same retries again. */
void trove__s3_load_failed(const struct s3_backend *s, int rc);

#endif
