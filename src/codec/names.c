/*
 * names.c: a capture's names table (event names, thread names, process names).
 *
 * Entries live in an array in insertion order, which is the order they travel in names
 * frames; their strings live NUL-terminated in one arena. An open-addressing hash index on
 * (type, a, b) finds an entry in O(1). Replacing a name appends the new string and leaves
 * the old bytes in the arena: names change rarely, and the arena is freed whole.
 */
#include "trove/event.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

struct name_slot {
    uint8_t type;
    uint32_t a, b;
    size_t off, len;
};

struct trove_names {
    struct name_slot *ent;
    size_t n, cap;
    uint32_t *index;   /* entry index + 1; 0 = free */
    size_t index_cap;  /* power of two, at least twice n */
    struct trove_bytes arena;
};

const char *trove_kind_name(uint8_t kind)
{
    static const char *const names[] = {"zone", "instant", "async-instant", "frame", "lock",
                                        "counter"};
    return kind < sizeof names / sizeof names[0] ? names[kind] : "other";
}

static uint64_t key_hash(uint8_t type, uint32_t a, uint32_t b)
{
    uint64_t h = ((uint64_t)a << 32 | b) ^ ((uint64_t)type << 61);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static size_t find_slot(const struct trove_names *t, uint8_t type, uint32_t a, uint32_t b)
{
    size_t mask = t->index_cap - 1;
    size_t i = (size_t)key_hash(type, a, b) & mask;
    for (;;) {
        uint32_t v = t->index[i];
        if (v == 0)
            return i;
        const struct name_slot *e = &t->ent[v - 1];
        if (e->type == type && e->a == a && e->b == b)
            return i;
        i = (i + 1) & mask;
    }
}

static int grow_index(struct trove_names *t)
{
    size_t cap = t->index_cap ? t->index_cap * 2 : 64;
    uint32_t *old = t->index;
    size_t old_cap = t->index_cap;
    t->index = trove__calloc(cap, sizeof *t->index);
    if (!t->index) {
        t->index = old;
        return TROVE_ERR_NOMEM;
    }
    t->index_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i]) {
            const struct name_slot *e = &t->ent[old[i] - 1];
            t->index[find_slot(t, e->type, e->a, e->b)] = old[i];
        }
    }
    free(old);
    return TROVE_OK;
}

int trove_names_new(struct trove_names **out)
{
    struct trove_names *t = trove__calloc(1, sizeof *t);
    if (!t)
        return TROVE_ERR_NOMEM;
    if (grow_index(t) != TROVE_OK) {
        free(t);
        return TROVE_ERR_NOMEM;
    }
    *out = t;
    return TROVE_OK;
}

void trove_names_free(struct trove_names *t)
{
    if (!t)
        return;
    free(t->ent);
    free(t->index);
    trove_bytes_free(&t->arena);
    free(t);
}

int trove_names_set(struct trove_names *t, int type, uint32_t a, uint32_t b, const char *str,
                    size_t len)
{
    size_t slot, off;
    int rc;

    if (type < TROVE_NAME_EVENT || type > TROVE_NAME_PROCESS || len > TROVE_NAME_MAX ||
        (len && !str))
        return TROVE_ERR_INVALID;
    if (type != TROVE_NAME_THREAD)
        b = 0;
    if ((t->n + 1) * 2 > t->index_cap && (rc = grow_index(t)) != TROVE_OK)
        return rc;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct name_slot *p = trove__realloc(t->ent, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        t->ent = p;
        t->cap = cap;
    }
    if ((rc = trove_bytes_reserve(&t->arena, len + 1)) != TROVE_OK)
        return rc;
    off = t->arena.len;
    if (len)
        memcpy(t->arena.ptr + off, str, len);
    t->arena.ptr[off + len] = 0;
    t->arena.len += len + 1;

    slot = find_slot(t, (uint8_t)type, a, b);
    if (t->index[slot]) {
        struct name_slot *e = &t->ent[t->index[slot] - 1];
        e->off = off;
        e->len = len;
    } else {
        t->ent[t->n] = (struct name_slot){(uint8_t)type, a, b, off, len};
        t->index[slot] = (uint32_t)++t->n;
    }
    return TROVE_OK;
}

const char *trove_names_get(const struct trove_names *t, int type, uint32_t a, uint32_t b,
                            size_t *len_out)
{
    size_t slot;
    const struct name_slot *e;

    if (type < TROVE_NAME_EVENT || type > TROVE_NAME_PROCESS)
        return NULL;
    if (type != TROVE_NAME_THREAD)
        b = 0;
    slot = find_slot(t, (uint8_t)type, a, b);
    if (!t->index[slot])
        return NULL;
    e = &t->ent[t->index[slot] - 1];
    if (len_out)
        *len_out = e->len;
    return (const char *)t->arena.ptr + e->off;
}

size_t trove_names_count(const struct trove_names *t) { return t->n; }

void trove_names_entry(const struct trove_names *t, size_t i, struct trove_name_entry *out)
{
    const struct name_slot *e = &t->ent[i];
    out->type = e->type;
    out->a = e->a;
    out->b = e->b;
    out->str = (const char *)t->arena.ptr + e->off;
    out->len = e->len;
}

int trove_names_equal(const struct trove_names *a, const struct trove_names *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const struct name_slot *x = &a->ent[i], *y = &b->ent[i];
        if (x->type != y->type || x->a != y->a || x->b != y->b || x->len != y->len ||
            memcmp(a->arena.ptr + x->off, b->arena.ptr + y->off, x->len) != 0)
            return 0;
    }
    return 1;
}

int trove_names_merge(struct trove_names *dst, const struct trove_names *src)
{
    for (size_t i = 0; i < src->n; i++) {
        const struct name_slot *e = &src->ent[i];
        int rc = trove_names_set(dst, e->type, e->a, e->b,
                                 (const char *)src->arena.ptr + e->off, e->len);
        if (rc != TROVE_OK)
            return rc;
    }
    return TROVE_OK;
}
