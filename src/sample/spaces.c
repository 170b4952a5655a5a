/*
 * spaces.c: per-process tables of executable mappings (spaces.h).
 *
 * A space is an array of mappings sorted by start, never overlapping; an address is found
 * by binary search. A new mapping is spliced in by building the array anew — the parts of
 * old mappings before it, it, the parts after — which costs O(mappings) per mmap:
 * processes map tens to hundreds of executable regions, mostly as they start, while
 * lookups (one per frame of every sample) are O(log n). Spaces are found by pid in a short
 * array: sampled processes are few.
 */
#include "spaces.h"
#include "common/alloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MAPS (1u << 20)

struct map {
    uint64_t start, end, pgoff;
    uint32_t module;
};

struct space {
    uint32_t pid;
    struct map *m;
    size_t n;
};

struct trove__spaces {
    struct space *s;
    size_t n, cap;
};

int trove__spaces_new(struct trove__spaces **out)
{
    if (!(*out = trove__calloc(1, sizeof **out)))
        return TROVE_ERR_NOMEM;
    return TROVE_OK;
}

void trove__spaces_free(struct trove__spaces *sp)
{
    if (!sp)
        return;
    for (size_t i = 0; i < sp->n; i++)
        free(sp->s[i].m);
    free(sp->s);
    free(sp);
}

static struct space *find_space(const struct trove__spaces *sp, uint32_t pid)
{
    for (size_t i = 0; i < sp->n; i++)
        if (sp->s[i].pid == pid)
            return &sp->s[i];
    return NULL;
}

/* pid's space, made empty if new; NULL when out of memory. */
static struct space *get_space(struct trove__spaces *sp, uint32_t pid)
{
    struct space *s = find_space(sp, pid);
    if (s)
        return s;
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? sp->cap * 2 : 8;
        struct space *q = trove__realloc(sp->s, cap * sizeof *q);
        if (!q)
            return NULL;
        sp->s = q;
        sp->cap = cap;
    }
    s = &sp->s[sp->n++];
    *s = (struct space){pid, NULL, 0};
    return s;
}

int trove__spaces_map(struct trove__spaces *sp, uint32_t pid, uint64_t start, uint64_t end,
                      uint64_t pgoff, uint32_t module)
{
    struct space *s;
    struct map *m;
    size_t k = 0;
    int placed = 0;
    if (end <= start)
        return TROVE_ERR_INVALID;
    if (!(s = get_space(sp, pid)))
        return TROVE_ERR_NOMEM;
    if (s->n + 2 > MAX_MAPS)
        return TROVE_ERR_LIMIT;
    /* At most one old mapping is split in two by the new one: n + 2 rows are enough. */
    if (!(m = trove__mallocarray(s->n + 2, sizeof *m)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < s->n; i++) {
        struct map o = s->m[i];
        if (o.end <= start || o.start >= end) { /* apart from the new one */
            if (!placed && o.start >= end) {
                m[k++] = (struct map){start, end, pgoff, module};
                placed = 1;
            }
            m[k++] = o;
            continue;
        }
        if (o.start < start) /* the part before */
            m[k++] = (struct map){o.start, start, o.pgoff, o.module};
        if (!placed) {
            m[k++] = (struct map){start, end, pgoff, module};
            placed = 1;
        }
        if (o.end > end) /* the part after */
            m[k++] = (struct map){end, o.end, o.pgoff + (end - o.start), o.module};
    }
    if (!placed)
        m[k++] = (struct map){start, end, pgoff, module};
    assert(k <= s->n + 2);
    free(s->m);
    s->m = m;
    s->n = k;
    return TROVE_OK;
}

void trove__spaces_exec(struct trove__spaces *sp, uint32_t pid)
{
    struct space *s = find_space(sp, pid);
    if (s) {
        free(s->m);
        s->m = NULL;
        s->n = 0;
    }
}

int trove__spaces_fork(struct trove__spaces *sp, uint32_t ppid, uint32_t pid)
{
    struct space *parent, *child;
    struct map *m = NULL;
    size_t n;
    if (ppid == pid)
        return TROVE_OK;
    /* The child's slot first: adding it may move the array the parent is in. */
    if (!(child = get_space(sp, pid)))
        return TROVE_ERR_NOMEM;
    parent = find_space(sp, ppid);
    n = parent ? parent->n : 0;
    if (n) {
        if (!(m = trove__mallocarray(n, sizeof *m)))
            return TROVE_ERR_NOMEM;
        memcpy(m, parent->m, n * sizeof *m);
    }
    free(child->m);
    child->m = m;
    child->n = n;
    return TROVE_OK;
}

int trove__spaces_find(const struct trove__spaces *sp, uint32_t pid, uint64_t addr,
                       struct trove_sample_frame *out)
{
    const struct space *s = find_space(sp, pid);
    size_t lo = 0, hi;
    if (!s || !s->n)
        return 0;
    hi = s->n; /* the first mapping with start > addr is in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->m[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr >= s->m[lo - 1].end)
        return 0;
    out->module = s->m[lo - 1].module;
    out->offset = addr - s->m[lo - 1].start + s->m[lo - 1].pgoff;
    return 1;
}

size_t trove__spaces_count(const struct trove__spaces *sp, uint32_t pid)
{
    const struct space *s = find_space(sp, pid);
    return s ? s->n : 0;
}
