/*
 * pq_dict.c: the dictionary builders behind RLE_DICTIONARY (pq_encoding.h): the distinct
 * values of a column chunk in order of first appearance, and each row's index into them.
 * pq_dict_layout.c then orders the dictionary and lays out its pages.
 *
 * Why it is built this way: building the dictionary is on the writer's path for every row
 * of every dictionary column, so integers of a small range (kinds, depths, ids) go through a
 * direct table indexed by value - min, and everything else through an open-addressing hash
 * table (described below) whose slots carry what a probe compares, so a probe stays within
 * the table. A builder gives up as soon as the dictionary outgrows max_distinct, and the
 * writer falls back to PLAIN.
 *
 * Thread safety: no state; every function is safe to call concurrently on distinct outputs.
 */
#include "pq_encoding.h"
#include "common/alloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/*
 * Open addressing with linear probing, at most half full, the size a power of two, the home
 * slot the top bits of key * 2^64/phi (Fibonacci hashing). A slot holds a 64-bit key — the
 * value itself for ints, its XXH3 hash for strings — and its entry's index + 1 (0: empty);
 * for strings also the entry's bytes and length, so that a probe compares within the slot
 * and reads only the entry's own bytes, not the caller's arrays at a far row. Entries are
 * kept as the row of their first appearance. Growing rehashes from the slots alone.
 */
struct dict_slot {
    uint64_t key;
    const char *str;
    uint32_t len;
    uint32_t idx1;
};

struct dict {
    struct dict_slot *tab;
    size_t size;     /* slots, a power of two */
    unsigned shift;  /* 64 - log2(size) */
    size_t *first;   /* first[k]: the row where entry k first appears */
    size_t cap, nd, limit;
};

static size_t dict_home(const struct dict *d, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> d->shift);
}

static int dict_init(struct dict *d, size_t max_distinct)
{
    memset(d, 0, sizeof *d);
    d->size = 64;
    d->shift = 64 - 6;
    /* Indices are uint32. */
    d->limit = max_distinct < (size_t)UINT32_MAX ? max_distinct : (size_t)UINT32_MAX;
    d->cap = 16;
    d->tab = trove__calloc(d->size, sizeof *d->tab);
    d->first = trove__malloc(d->cap * sizeof *d->first);
    return d->tab && d->first ? TROVE_OK : TROVE_ERR_NOMEM;
}

static void dict_free(struct dict *d)
{
    free(d->tab);
    free(d->first);
}

/* Make row the next entry, with key, in the empty slot s; grow past half full. Returns
 * TROVE_OK, TROVE_ERR_LIMIT (no room under the limit) or TROVE_ERR_NOMEM. */
static int dict_add(struct dict *d, size_t s, uint64_t key, const char *str, uint32_t len,
                    size_t row)
{
    struct dict_slot *big;

    assert(d->tab[s].idx1 == 0);
    if (d->nd >= d->limit)
        return TROVE_ERR_LIMIT;
    if (d->nd == d->cap) {
        size_t *p = NULL;
        if (d->cap <= SIZE_MAX / 2 / sizeof *p)
            p = trove__realloc(d->first, 2 * d->cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        d->first = p;
        d->cap *= 2;
    }
    d->first[d->nd] = row;
    d->tab[s].key = key;
    d->tab[s].str = str;
    d->tab[s].len = len;
    d->tab[s].idx1 = (uint32_t)++d->nd;
    if (d->nd * 2 <= d->size)
        return TROVE_OK;
    big = trove__calloc(d->size * 2, sizeof *big);
    if (!big)
        return TROVE_ERR_NOMEM;
    d->shift--;
    for (size_t k = 0; k < d->size; k++) {
        size_t t;
        if (d->tab[k].idx1 == 0)
            continue;
        t = dict_home(d, d->tab[k].key);
        while (big[t].idx1 != 0)
            t = (t + 1) & (d->size * 2 - 1);
        big[t] = d->tab[k];
    }
    free(d->tab);
    d->tab = big;
    d->size *= 2;
    return TROVE_OK;
}

/* The widest value range (max - min) given a direct table (4 bytes a slot) instead of hashing. */
#define DICT_DIRECT_RANGE (1u << 20)

/* Integers whose range is small (kind, depth, ids): a table indexed by value - min, each slot
 * 0 or the entry's index + 1; first appearance order as with hashing. Returns
 * TROVE_ERR_LIMIT past limit entries. */
#define DICT_DIRECT_LOOP(V)                                                                   \
    for (size_t i = 0; i < n; i++) {                                                          \
        const size_t k = (size_t)((uint64_t)(int64_t)(V)[i] - (uint64_t)min);                 \
        uint32_t e = map[k];                                                                  \
        if (e == 0) {                                                                         \
            if (nd >= limit) {                                                                \
                rc = TROVE_ERR_LIMIT;                                                         \
                goto out;                                                                     \
            }                                                                                 \
            vals[nd] = (int64_t)(V)[i];                                                       \
            e = map[k] = (uint32_t)++nd;                                                      \
        }                                                                                     \
        idx_out[i] = e - 1;                                                                   \
    }

static int dict_direct(const int64_t *v64, const int32_t *v32, size_t n, int64_t min,
                       size_t range, size_t limit, uint32_t *idx_out, int64_t **values_out,
                       size_t *ndistinct_out)
{
    size_t nd = 0, cap = range + 1 < n ? range + 1 : n;
    uint32_t *map = trove__calloc(range + 1, sizeof *map);
    int64_t *vals = trove__malloc((cap ? cap : 1) * sizeof *vals);
    int rc = TROVE_ERR_NOMEM;

    if (!map || !vals)
        goto out;
    rc = TROVE_OK;
    if (v64) {
        DICT_DIRECT_LOOP(v64)
    } else {
        DICT_DIRECT_LOOP(v32)
    }
    *values_out = vals;
    *ndistinct_out = nd;
    vals = NULL;
out:
    free(map);
    free(vals);
    return rc;
}

/* Hashing, for values spread wide. */
static int dict_hashed(const int64_t *v64, const int32_t *v32, size_t n, size_t max_distinct,
                       uint32_t *idx_out, int64_t **values_out, size_t *ndistinct_out)
{
    struct dict d = {0};
    int64_t *vals = NULL;
    int rc;

    rc = dict_init(&d, max_distinct);
    if (rc != TROVE_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const uint64_t key = v64 ? (uint64_t)v64[i] : (uint64_t)(int64_t)v32[i];
        size_t s = dict_home(&d, key);
        while (d.tab[s].idx1 != 0 && d.tab[s].key != key)
            s = (s + 1) & (d.size - 1);
        if (d.tab[s].idx1 == 0) {
            rc = dict_add(&d, s, key, NULL, 0, i);
            if (rc != TROVE_OK)
                goto out;
            idx_out[i] = (uint32_t)(d.nd - 1);
        } else {
            idx_out[i] = d.tab[s].idx1 - 1;
        }
    }
    vals = trove__malloc((d.nd ? d.nd : 1) * sizeof *vals);
    if (!vals) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < d.nd; k++)
        vals[k] = v64 ? v64[d.first[k]] : (int64_t)v32[d.first[k]];
    *values_out = vals;
    *ndistinct_out = d.nd;
    rc = TROVE_OK;
out:
    dict_free(&d);
    return rc;
}

static int dict_build_ints(const int64_t *v64, const int32_t *v32, size_t n,
                           size_t max_distinct, uint32_t *idx_out, int64_t **values_out,
                           size_t *ndistinct_out)
{
    size_t limit = max_distinct < (size_t)UINT32_MAX ? max_distinct : (size_t)UINT32_MAX;
    int64_t min = 0, max = 0;

    if (!values_out || !ndistinct_out || (n > 0 && (!(v64 || v32) || !idx_out)))
        return TROVE_ERR_INVALID;
    if (n > 0) {
        if (v64) {
            min = max = v64[0];
            for (size_t i = 1; i < n; i++) {
                min = v64[i] < min ? v64[i] : min;
                max = v64[i] > max ? v64[i] : max;
            }
        } else {
            int32_t mi = v32[0], ma = v32[0];
            for (size_t i = 1; i < n; i++) {
                mi = v32[i] < mi ? v32[i] : mi;
                ma = v32[i] > ma ? v32[i] : ma;
            }
            min = mi;
            max = ma;
        }
        if ((uint64_t)max - (uint64_t)min < DICT_DIRECT_RANGE &&
            (uint64_t)max - (uint64_t)min <= 2 * (uint64_t)n + 4096)
            return dict_direct(v64, v32, n, min, (size_t)((uint64_t)max - (uint64_t)min),
                               limit, idx_out, values_out, ndistinct_out);
    }
    return dict_hashed(v64, v32, n, max_distinct, idx_out, values_out, ndistinct_out);
}

int trove__pq_dict_build_int(const int64_t *v, size_t n, size_t max_distinct, uint32_t *idx_out,
                             int64_t **values_out, size_t *ndistinct_out)
{
    return dict_build_ints(v, NULL, n, max_distinct, idx_out, values_out, ndistinct_out);
}

int trove__pq_dict_build_i32(const int32_t *v, size_t n, size_t max_distinct, uint32_t *idx_out,
                             int64_t **values_out, size_t *ndistinct_out)
{
    return dict_build_ints(NULL, v, n, max_distinct, idx_out, values_out, ndistinct_out);
}

int trove__pq_dict_build_str(const char *const *str, const uint32_t *len, size_t n,
                             size_t max_distinct, uint32_t *idx_out, size_t **first_out,
                             size_t *ndistinct_out)
{
    struct dict d = {0};
    int rc;

    if (!first_out || !ndistinct_out || (n > 0 && (!str || !len || !idx_out))) {
        rc = TROVE_ERR_INVALID;
        goto out;
    }
    rc = dict_init(&d, max_distinct);
    if (rc != TROVE_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const char *p = str[i];
        const uint32_t l = len[i];
        uint64_t h;
        size_t s;
        if (l > 0 && !p) {
            rc = TROVE_ERR_INVALID;
            goto out;
        }
        h = XXH3_64bits(l ? p : "", l);
        for (s = dict_home(&d, h); d.tab[s].idx1 != 0; s = (s + 1) & (d.size - 1))
            if (d.tab[s].key == h && d.tab[s].len == l &&
                (l == 0 || memcmp(d.tab[s].str, p, l) == 0))
                break;
        if (d.tab[s].idx1 == 0) {
            rc = dict_add(&d, s, h, p, l, i);
            if (rc != TROVE_OK)
                goto out;
            idx_out[i] = (uint32_t)(d.nd - 1);
        } else {
            idx_out[i] = d.tab[s].idx1 - 1;
        }
    }
    *first_out = d.first;
    *ndistinct_out = d.nd;
    d.first = NULL;
    rc = TROVE_OK;
out:
    dict_free(&d);
    return rc;
}
