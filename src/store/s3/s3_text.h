/*
 * s3_text.h: the small texts of the store on S3 that come from the network, parsed in one
 * place (s3_text.c) and fuzzed together (fuzz/fuzz_s3_text.c): the writer's lease object
 * (store_s3.c), a listing's LastModified and a ranged answer's Content-Range
 * (backend_s3.c). Every parser takes a bounded, NUL-terminated text or a length, trusts
 * nothing in it, and says "not one" rather than guess.
 */
#ifndef TROVE_STORE_S3_TEXT_H
#define TROVE_STORE_S3_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define TROVE__S3_LEASE_MAX 4096 /* bytes a lease object may hold */

/* The lease object's content:
 *   trove-lease 1\n token <32 lowercase hex>\n holder <host> <pid>\n expires <unix ms>\n */
struct trove__s3_lease {
    char token[33];
    char host[128]; /* no spaces or newlines */
    long pid;
    int64_t expires_ms;
};

/* Parse n bytes at p (not NUL-terminated) as a lease: 0, or -1 when they are not one. */
int trove__s3_lease_parse(const void *p, size_t n, struct trove__s3_lease *out);
/* Write l as a lease's text into out (cap bytes): its length, or -1 if l is not one
 * (a bad token, a host with a space) or it does not fit. */
int trove__s3_lease_format(const struct trove__s3_lease *l, char *out, size_t cap);

/* S3's time "2026-12-02T00:01:02.000Z" (a listing's LastModified) as seconds since the
 * epoch, or -1. */
int64_t trove__s3_parse_time(const char *t);

/* Content-Range "bytes A-B/SIZE" into *a, *b, *size: 1 if it is exactly that with
 * A <= B < SIZE, else 0. */
int trove__s3_parse_content_range(const char *p, uint64_t *a, uint64_t *b, uint64_t *size);

#endif
