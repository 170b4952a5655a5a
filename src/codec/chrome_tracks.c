/*
 * chrome_tracks.c: the Chrome importer's tracks that are not threads (chrome_tracks.h).
 *
 * A track is found by its class, pid and key bytes through an open-addressing index, as the
 * importer finds its names; its key lives in one arena. Each track keeps a stack of the spans
 * open on it; an end may close a span below the top (an e closes the innermost b of its
 * name), so removal shifts the stack — spans open at once on one id are few. Synthetic tids
 * are handed out only at the end, ordered by what the tracks hold (their first time, class
 * and key) rather than by when the input first named them, so that the same events give the
 * same tids whichever order a file lists them in: an exported trace imports again with its
 * tids. Memory: one entry per track and its key, and the open spans.
 */
#include "chrome_tracks.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "trove/digest.h"
#include "trove/event.h"

#define MAX_TRACKS ((uint32_t)1 << 28)

static uint32_t key_hash(uint8_t cls, uint32_t pid, const uint8_t *key, size_t len)
{
    uint64_t h = trove_checksum64(key, len);
    h ^= ((uint64_t)pid << 8 | cls) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
    return (uint32_t)h;
}

static int rehash(struct trove__ctracks *t)
{
    uint32_t cap = t->index ? (t->mask + 1) * 2 : 64;
    uint32_t *p = trove__calloc(cap, sizeof *p);
    if (!p)
        return TROVE_ERR_NOMEM;
    free(t->index);
    t->index = p;
    t->mask = cap - 1;
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t j = t->t[i].hash & t->mask;
        while (t->index[j])
            j = (j + 1) & t->mask;
        t->index[j] = i + 1;
    }
    return TROVE_OK;
}

int trove__ct_find(struct trove__ctracks *t, uint8_t cls, uint32_t pid, const uint8_t *key,
                   size_t len, int create, uint32_t *idx_out)
{
    uint32_t h = key_hash(cls, pid, key, len), j;
    int rc;

    *idx_out = TROVE__CT_NONE;
    if (!t->index || (uint64_t)(t->n + 1) * 2 > (uint64_t)t->mask + 1) {
        if ((rc = rehash(t)) != TROVE_OK)
            return rc;
    }
    for (j = h & t->mask; t->index[j]; j = (j + 1) & t->mask) {
        const struct trove__ctrack *e = &t->t[t->index[j] - 1];
        if (e->hash == h && e->cls == cls && e->pid == pid && e->key_len == len &&
            (len == 0 || memcmp(t->arena.ptr + e->key_off, key, len) == 0)) {
            *idx_out = t->index[j] - 1;
            return TROVE_OK;
        }
    }
    if (!create)
        return TROVE_OK;
    if (t->n >= MAX_TRACKS || len > UINT32_MAX)
        return TROVE_ERR_LIMIT;
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        struct trove__ctrack *p = trove__realloc(t->t, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        t->t = p;
        t->cap = cap;
    }
    if ((rc = trove_bytes_append(&t->arena, key, len)) != TROVE_OK)
        return rc;
    memset(&t->t[t->n], 0, sizeof t->t[t->n]);
    t->t[t->n].cls = cls;
    t->t[t->n].pid = pid;
    t->t[t->n].key_off = t->arena.len - len;
    t->t[t->n].key_len = (uint32_t)len;
    t->t[t->n].hash = h;
    t->t[t->n].name = TROVE__CT_NONE;
    t->t[t->n].tid = TROVE__CT_NONE;
    t->index[j] = ++t->n;
    *idx_out = t->n - 1;
    return TROVE_OK;
}

const uint8_t *trove__ct_key(const struct trove__ctracks *t, uint32_t i)
{
    return t->arena.ptr + t->t[i].key_off;
}

int trove__ct_open(struct trove__ctracks *t, uint32_t i, const struct trove__cspan *s)
{
    struct trove__ctrack *k = &t->t[i];
    if (k->nopen == k->capopen) {
        size_t cap = k->capopen ? k->capopen * 2 : 4;
        struct trove__cspan *p = trove__realloc(k->open, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        k->open = p;
        k->capopen = cap;
    }
    k->open[k->nopen++] = *s;
    t->open_total++;
    return TROVE_OK;
}

long trove__ct_match(const struct trove__ctracks *t, uint32_t i, uint32_t name)
{
    const struct trove__ctrack *k = &t->t[i];
    for (size_t j = k->nopen; j > 0; j--)
        if (name == TROVE__CT_NONE || k->open[j - 1].name == name)
            return (long)(j - 1);
    return -1;
}

void trove__ct_close(struct trove__ctracks *t, uint32_t i, size_t k, struct trove__cspan *out)
{
    struct trove__ctrack *tr = &t->t[i];
    *out = tr->open[k];
    memmove(tr->open + k, tr->open + k + 1, (tr->nopen - k - 1) * sizeof *tr->open);
    tr->nopen--;
    t->open_total--;
}

int trove__ct_add_step(struct trove__cspan *s, uint64_t start, uint64_t end, uint32_t name,
                       uint32_t seq)
{
    if (s->nsteps == s->capsteps) {
        size_t cap = s->capsteps ? s->capsteps * 2 : 4;
        struct trove__cstep *p = trove__realloc(s->steps, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        s->steps = p;
        s->capsteps = cap;
    }
    s->steps[s->nsteps++] = (struct trove__cstep){start, end, name, seq};
    return TROVE_OK;
}

/* A track being given its tid, with what the sort compares (qsort has no context). */
struct ord {
    uint64_t first_ts;
    const uint8_t *key;
    uint32_t pid, key_len, idx;
    uint8_t cls;
};

static int cmp_track(const void *pa, const void *pb)
{
    const struct ord *a = pa, *b = pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->first_ts != b->first_ts)
        return a->first_ts < b->first_ts ? -1 : 1;
    if (a->cls != b->cls)
        return a->cls < b->cls ? -1 : 1;
    if (a->key_len != b->key_len)
        return a->key_len < b->key_len ? -1 : 1;
    return a->key_len ? memcmp(a->key, b->key, a->key_len) : 0;
}

/* Does pid use tid for a real thread? (real is sorted) */
static int is_real(const uint64_t *real, size_t n, uint32_t pid, uint32_t tid)
{
    uint64_t want = (uint64_t)pid << 32 | tid;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (real[mid] < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && real[lo] == want;
}

int trove__ct_assign(struct trove__ctracks *t, const uint64_t *real, size_t nreal,
                     uint32_t *pid_out)
{
    struct ord *ord;
    uint32_t n = 0, next = 0, pid = 0;
    int rc = TROVE_OK;

    *pid_out = 0;
    if (t->n == 0)
        return TROVE_OK;
    if (!(ord = trove__malloc(t->n * sizeof *ord)))
        return TROVE_ERR_NOMEM;
    for (uint32_t i = 0; i < t->n; i++) {
        const struct trove__ctrack *tr = &t->t[i];
        if (tr->used && tr->cls != TROVE__CT_FLOW)
            ord[n++] = (struct ord){tr->first_ts, t->arena.ptr + tr->key_off, tr->pid,
                                    tr->key_len, i, tr->cls};
    }
    qsort(ord, n, sizeof *ord, cmp_track);
    for (uint32_t k = 0; k < n; k++) {
        struct trove__ctrack *tr = &t->t[ord[k].idx];
        if (k == 0 || tr->pid != pid) {
            pid = tr->pid;
            next = 0;
        }
        while (next < TROVE_TID_SYNTHETIC_COUNT &&
               is_real(real, nreal, pid, TROVE_TID_SYNTHETIC + next))
            next++;
        if (next >= TROVE_TID_SYNTHETIC_COUNT) {
            *pid_out = pid;
            rc = TROVE_ERR_LIMIT;
            break;
        }
        tr->tid = TROVE_TID_SYNTHETIC + next++;
    }
    free(ord);
    return rc;
}

void trove__ct_free(struct trove__ctracks *t)
{
    for (uint32_t i = 0; i < t->n; i++) {
        for (size_t j = 0; j < t->t[i].nopen; j++)
            free(t->t[i].open[j].steps);
        free(t->t[i].open);
    }
    free(t->t);
    free(t->index);
    trove_bytes_free(&t->arena);
    memset(t, 0, sizeof *t);
}
