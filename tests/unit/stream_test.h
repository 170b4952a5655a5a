/*
 * stream_test.h: what the streaming tests share (test_stream.c, test_stream_fault.c): a real
 * fs backend (NOSYNC) in a mkdtemp directory, sets of objects whose every byte is a function
 * of (set, item, offset), and the fault backend over it with a hook that counts the gets of
 * every object and fails chosen ones. Each binary runs its cases REPS times, the fault
 * backend's gets asynchronous on odd reps.
 */
#ifndef TROVE_STREAM_TEST_H
#define TROVE_STREAM_TEST_H

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "trove/backend.h"
#include "trove/testing.h"

#define REPS 20
#define MAXN 1100

static char root[64];
static struct trove_backend *fs; /* every object set lives here */
static int async_mode;           /* odd reps: the fault backend's gets are asynchronous */

/* ---- object sets --------------------------------------------------------------------- */

struct objset {
    uint32_t tag;
    size_t n;
    size_t sizes[MAXN];
    struct trove_digest d[MAXN]; /* zero: an empty slot */
};

static inline uint8_t obj_byte(uint32_t tag, size_t item, size_t k)
{
    if (k < 4)
        return (uint8_t)(tag >> (8 * k));
    if (k < 8)
        return (uint8_t)(item >> (8 * (k - 4)));
    return (uint8_t)(tag * 131u + item * 29u + k * 7u + (k >> 8));
}

/* Store n objects of the given sizes (>= 8 so that every one is distinct); empty[i] set
 * makes slot i empty (zero digest, nothing stored). */
static inline void make_set(struct objset *s, uint32_t tag, size_t n, const size_t *sizes,
                            const uint8_t *empty)
{
    memset(s, 0, sizeof *s);
    s->tag = tag;
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        uint8_t *p;
        if (empty && empty[i])
            continue;
        s->sizes[i] = sizes[i];
        p = malloc(sizes[i]);
        for (size_t k = 0; k < sizes[i]; k++)
            p[k] = obj_byte(tag, i, k);
        trove_digest_of(p, sizes[i], &s->d[i]);
        CHECK_EQ_INT(trove_backend_put(fs, &s->d[i], p, sizes[i], NULL), TROVE_OK);
        free(p);
    }
}

static inline int matches(const struct objset *s, size_t item, size_t off, const uint8_t *p,
                          size_t len)
{
    for (size_t k = 0; k < len; k++)
        if (p[k] != obj_byte(s->tag, item, off + k))
            return 0;
    return 1;
}

static inline void uniform_sizes(size_t *sizes, size_t n, size_t lo, size_t hi, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++)
        sizes[i] = lo + (hi > lo ? (size_t)(test_rand(seed) % (hi - lo + 1)) : 0);
}

/* ---- the fault backend's hook: get counts per item, and missing objects --------------- */

struct hook {
    const struct objset *set;
    atomic_uint_fast64_t gets[MAXN];
    atomic_uint_fast64_t strangers; /* gets of digests not in the set */
    long missing;                   /* item whose gets fail, or -1 */
    uint64_t missing_for;           /* its first gets that fail (UINT64_MAX: all) */
    int missing_rc;
};

static inline void hook_init(struct hook *h, const struct objset *set)
{
    h->set = set;
    for (size_t i = 0; i < MAXN; i++)
        atomic_init(&h->gets[i], 0);
    atomic_init(&h->strangers, 0);
    h->missing = -1;
    h->missing_for = 0;
    h->missing_rc = TROVE_ERR_NOTFOUND;
}

static inline int hook_fn(void *ctx, const struct trove_digest *d, uint64_t nth)
{
    struct hook *h = ctx;
    for (size_t i = 0; i < h->set->n; i++) {
        if (trove_digest_equal(d, &h->set->d[i])) {
            atomic_fetch_add(&h->gets[i], 1);
            if ((long)i == h->missing && nth < h->missing_for)
                return h->missing_rc;
            return TROVE_OK;
        }
    }
    atomic_fetch_add(&h->strangers, 1);
    return TROVE_OK;
}

static inline struct trove_backend *fault_over(struct hook *h, uint32_t latency_us)
{
    struct trove_fault_options fo = {0};
    struct trove_backend *be = NULL;
    fo.latency_us = latency_us;
    fo.get_hook = hook_fn;
    fo.hook_ctx = h;
    fo.async = async_mode;
    CHECK_EQ_INT(trove_backend_fault_wrap(fs, &fo, &be), TROVE_OK);
    if (be)
        CHECK_EQ_INT(trove_backend_get_async(be), async_mode);
    return be;
}

#endif
