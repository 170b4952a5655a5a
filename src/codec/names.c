/*
 * names.c: a capture's names table (event names, thread names, process names, and the sort
 * indexes of processes and threads).
 *
 * Entries live in an array in insertion order, which is the order they travel in names
 * frames; their strings live NUL-terminated in one arena. A sort index entry holds its
 * value in the entry itself and nothing in the arena. An open-addressing hash index on
 * (type, a, b) finds an entry in O(1). Replacing a name appends the new string and leaves
 * the old bytes in the arena: names change rarely, and the arena is freed whole.
 */
#include "trove/event.h"
#include "common/alloc.h"
#include "common/utf8.h"
#include "common/hash.h"

#include <stdlib.h>
#include <string.h>

struct name_slot {
    uint8_t type;
    uint32_t a, b;
    int32_t sort;     /* a sort index entry's value; 0 for the others */
    size_t off, len;  /* the string in the arena (0, 0 for a sort index) */
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
    return trove__mix64(((uint64_t)a << 32 | b) ^ ((uint64_t)type << 61));
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

/* Room for one more entry (index and array); TROVE_OK or TROVE_ERR_NOMEM, nothing changed
 * on failure. */
static int reserve_entry(struct trove_names *t)
{
    int rc;
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
    return TROVE_OK;
}

/* Set (type, a, b) to the string at off, len or the sort index `sort` (room reserved). */
static void put_slot(struct trove_names *t, uint8_t type, uint32_t a, uint32_t b, int32_t sort,
                     size_t off, size_t len)
{
    size_t slot = find_slot(t, type, a, b);
    if (t->index[slot]) {
        struct name_slot *e = &t->ent[t->index[slot] - 1];
        e->sort = sort;
        e->off = off;
        e->len = len;
    } else {
        t->ent[t->n] = (struct name_slot){type, a, b, sort, off, len};
        t->index[slot] = (uint32_t)++t->n;
    }
}

int trove_names_set(struct trove_names *t, int type, uint32_t a, uint32_t b, const char *str,
                    size_t len)
{
    size_t off;
    int rc;

    if (type < TROVE_NAME_EVENT || type > TROVE_NAME_PROCESS || len > TROVE_NAME_MAX ||
        (len && !str) || (len && trove__utf8_valid_prefix((const uint8_t *)str, len) != len))
        return TROVE_ERR_INVALID;
    if (type != TROVE_NAME_THREAD)
        b = 0;
    if ((rc = reserve_entry(t)) != TROVE_OK)
        return rc;
    if ((rc = trove_bytes_reserve(&t->arena, len + 1)) != TROVE_OK)
        return rc;
    off = t->arena.len;
    if (len)
        memcpy(t->arena.ptr + off, str, len);
    t->arena.ptr[off + len] = 0;
    t->arena.len += len + 1;
    put_slot(t, (uint8_t)type, a, b, 0, off, len);
    return TROVE_OK;
}

int trove_names_set_sort(struct trove_names *t, int type, uint32_t pid, uint32_t tid,
                         int32_t sort_index)
{
    int rc;

    if (!trove_name_type_is_sort(type))
        return TROVE_ERR_INVALID;
    if (type != TROVE_NAME_THREAD_SORT)
        tid = 0;
    if ((rc = reserve_entry(t)) != TROVE_OK)
        return rc;
    put_slot(t, (uint8_t)type, pid, tid, sort_index, 0, 0);
    return TROVE_OK;
}

int trove_names_put(struct trove_names *t, const struct trove_name_entry *e)
{
    if (trove_name_type_is_sort(e->type))
        return trove_names_set_sort(t, e->type, e->a, e->b, e->sort_index);
    return trove_names_set(t, e->type, e->a, e->b, e->str, e->len);
}

/* The entry of (type, a, b), or NULL. */
static const struct name_slot *lookup(const struct trove_names *t, int type, uint32_t a,
                                      uint32_t b)
{
    size_t slot;
    if (!trove_name_type_has_tid(type))
        b = 0;
    slot = find_slot(t, (uint8_t)type, a, b);
    return t->index[slot] ? &t->ent[t->index[slot] - 1] : NULL;
}

const char *trove_names_get(const struct trove_names *t, int type, uint32_t a, uint32_t b,
                            size_t *len_out)
{
    const struct name_slot *e;

    if (type < TROVE_NAME_EVENT || type > TROVE_NAME_PROCESS || !(e = lookup(t, type, a, b)))
        return NULL;
    if (len_out)
        *len_out = e->len;
    return (const char *)t->arena.ptr + e->off;
}

int trove_names_get_sort(const struct trove_names *t, int type, uint32_t pid, uint32_t tid,
                         int32_t *out)
{
    const struct name_slot *e;

    if (!trove_name_type_is_sort(type) || !(e = lookup(t, type, pid, tid)))
        return 0;
    if (out)
        *out = e->sort;
    return 1;
}

int trove_names_find(const struct trove_names *t, int type, uint32_t a, uint32_t b,
                     size_t *index_out)
{
    const struct name_slot *e;

    if (type < TROVE_NAME_EVENT || type > TROVE_NAME_THREAD_SORT || !(e = lookup(t, type, a, b)))
        return 0;
    if (index_out)
        *index_out = (size_t)(e - t->ent);
    return 1;
}

size_t trove_names_count(const struct trove_names *t) { return t->n; }

void trove_names_entry(const struct trove_names *t, size_t i, struct trove_name_entry *out)
{
    const struct name_slot *e = &t->ent[i];
    out->type = e->type;
    out->a = e->a;
    out->b = e->b;
    out->str = trove_name_type_is_sort(e->type) ? "" : (const char *)t->arena.ptr + e->off;
    out->len = e->len;
    out->sort_index = e->sort;
}

int trove_names_equal(const struct trove_names *a, const struct trove_names *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const struct name_slot *x = &a->ent[i], *y = &b->ent[i];
        if (x->type != y->type || x->a != y->a || x->b != y->b || x->sort != y->sort ||
            x->len != y->len ||
            (!trove_name_type_is_sort(x->type) &&
             memcmp(a->arena.ptr + x->off, b->arena.ptr + y->off, x->len) != 0))
            return 0;
    }
    return 1;
}

int trove_names_merge(struct trove_names *dst, const struct trove_names *src)
{
    for (size_t i = 0; i < src->n; i++) {
        struct trove_name_entry e;
        int rc;
        trove_names_entry(src, i, &e);
        if ((rc = trove_names_put(dst, &e)) != TROVE_OK)
            return rc;
    }
    return TROVE_OK;
}
