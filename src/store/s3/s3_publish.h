/*
 * s3_publish.h: the S3 backend's staging and publish (s3_publish.c), and what they use of
 * the backend's pack index (backend_s3.c; s3_load.h loads it). Internal to the store layer.
 */
#ifndef TROVE_STORE_S3_PUBLISH_H
#define TROVE_STORE_S3_PUBLISH_H

#include "backend_s3.h"
#include "s3_request.h"

#define LOOSE_MIN TROVE__S3_PACK_OBJECT_MAX /* staged objects this big or bigger stay loose */
#define PACK_MAX (16u << 20)                /* a pack's bytes, index and footer included */

/* The backend ops (backend_s3.c's table names them). */
int trove__s3_stage(struct trove_backend *base, const struct trove_digest *d, const void *data,
                    size_t len);
int trove__s3_publish(struct trove_backend *base, uint64_t *overhead_out);

/* From backend_s3.c: whether a known pack holds d; pack hex (len bytes, entries e[0..n),
 * taken over) is up, into the index; the name of pack bytes buf. */
int trove__s3_is_packed(struct s3_backend *s, const struct trove_digest *d);
int trove__s3_pack_stored(struct s3_backend *s, const char *hex, uint64_t len,
                          struct trove__pack_entry *e, size_t n);
void trove__s3_pack_name(const struct s3_backend *s, const struct trove_bytes *buf, char hex[33],
                         struct obj *o);

#endif
