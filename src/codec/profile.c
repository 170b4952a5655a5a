/*
 * profile.c: the profile model of trove/profile.h — strings, frames, stacks and samples,
 * each table deduplicated as it grows.
 *
 * Each deduplicated table is an array of rows in id order and an open-addressing hash index
 * beside it (slots hold id + 1, 0 is free, at most half full, linear probing), as names.c
 * keeps its names: adding is a hash, a probe and an append; nothing is ever removed, so
 * the index only grows. Strings live NUL-terminated in one arena. Every add reserves what
 * it needs (array, index, arena) before it changes anything, so a failed add leaves the
 * profile as it was.
 *
 * The stack trie is an array of (frame, parent) rows with index 0 standing for the root;
 * a row's parent is always an earlier row, which is what lets trove_profile_top (in
 * profile_top.c) and a reader of the tables walk from any stack to the root.
 */
#include "trove/profile.h"
#include "profile_internal.h"
#include "common/alloc.h"
#include "common/hash.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct str_row {
    size_t off;
    uint32_t len;
};

struct index {
    uint32_t *slot; /* id + 1; 0 = free */
    size_t cap;     /* a power of two, at least twice the rows */
};

struct trove_profile {
    struct trove_bytes arena;
    struct str_row *str;
    size_t n_str, cap_str;
    struct index str_ix;

    struct trove_profile_frame *frame;
    size_t n_frame, cap_frame;
    struct index frame_ix;

    struct trove_profile_stack *stack; /* [0] is the root */
    size_t n_stack, cap_stack;         /* rows counting the root */
    struct index stack_ix;

    struct trove_profile_sample *sample;
    size_t n_sample, cap_sample;

    struct trove_profile_switch *sw;
    size_t n_sw, cap_sw;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a, then mixed */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
    return trove__mix64(h ^ n);
}

static uint64_t hash_frame(const struct trove_profile_frame *f)
{
    return trove__mix64(f->address ^ trove__mix64((uint64_t)f->module << 32 | f->inline_depth));
}

static uint64_t hash_stack(uint32_t parent, uint32_t frame)
{
    return trove__mix64((uint64_t)parent << 32 | frame);
}

/* The slot of key (hash h, eq(ctx, id) true for a match): a match or the free slot where
 * it would go. */
static size_t probe(const struct index *ix, uint64_t h, int (*eq)(const void *, uint32_t, const void *),
                    const void *ctx, const void *key)
{
    size_t mask = ix->cap - 1, i = (size_t)h & mask;
    while (ix->slot[i] && !eq(ctx, ix->slot[i] - 1, key))
        i = (i + 1) & mask;
    return i;
}

static int str_eq(const void *ctx, uint32_t id, const void *key)
{
    const struct trove_profile *p = ctx;
    const struct str_row *k = key;
    const struct str_row *r = &p->str[id];
    return r->len == k->len && memcmp(p->arena.ptr + r->off, p->arena.ptr + k->off, k->len) == 0;
}

static int frame_eq(const void *ctx, uint32_t id, const void *key)
{
    const struct trove_profile *p = ctx;
    const struct trove_profile_frame *a = &p->frame[id], *b = key;
    return a->module == b->module && a->address == b->address &&
           a->inline_depth == b->inline_depth;
}

static int stack_eq(const void *ctx, uint32_t id, const void *key)
{
    const struct trove_profile *p = ctx;
    const struct trove_profile_stack *a = &p->stack[id], *b = key;
    return a->parent == b->parent && a->frame == b->frame;
}

static uint64_t rehash(const struct trove_profile *p, int table, uint32_t id)
{
    if (table == 0)
        return hash_bytes((const char *)p->arena.ptr + p->str[id].off, p->str[id].len);
    if (table == 1)
        return hash_frame(&p->frame[id]);
    return hash_stack(p->stack[id].parent, p->stack[id].frame);
}

/* Make room in ix for one more of n rows (index of table 0 strings, 1 frames, 2 stacks);
 * nothing changes on failure. */
static int index_reserve(struct trove_profile *p, struct index *ix, int table, size_t n)
{
    size_t cap;
    uint32_t *slot;
    if ((n + 1) * 2 <= ix->cap)
        return TROVE_OK;
    cap = ix->cap ? ix->cap * 2 : 256;
    if (!(slot = trove__calloc(cap, sizeof *slot)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < ix->cap; i++) {
        uint32_t v = ix->slot[i];
        size_t j;
        if (!v)
            continue;
        j = (size_t)rehash(p, table, v - 1) & (cap - 1);
        while (slot[j])
            j = (j + 1) & (cap - 1);
        slot[j] = v;
    }
    free(ix->slot);
    ix->slot = slot;
    ix->cap = cap;
    return TROVE_OK;
}

/* Room for one more row of `size` bytes in arr (n rows, *cap allocated): the array, moved
 * if it grew, or NULL with *rc set (arr is then as it was). */
static void *room(void *arr, size_t *cap, size_t n, size_t size, int *rc)
{
    size_t c;
    void *q;
    if (n < *cap)
        return arr;
    if (n >= TROVE_PROFILE_MAX_ROWS) {
        *rc = TROVE_ERR_LIMIT;
        return NULL;
    }
    c = *cap ? *cap * 2 : 64;
    if (c > SIZE_MAX / size || !(q = trove__realloc(arr, c * size))) {
        *rc = TROVE_ERR_NOMEM;
        return NULL;
    }
    *cap = c;
    return q;
}

/* ROOM(p, field): room for one more row of p->field (p->n_field rows, p->cap_field), or
 * return the error. */
#define ROOM(p, f)                                                                            \
    do {                                                                                      \
        void *q_ = room((p)->f, &(p)->cap_##f, (p)->n_##f, sizeof *(p)->f, &rc);               \
        if (!q_)                                                                              \
            return rc;                                                                        \
        (p)->f = q_;                                                                          \
    } while (0)

int trove_profile_new(struct trove_profile **out)
{
    struct trove_profile *p;
    uint32_t id;
    int rc = TROVE_OK;
    if (!out)
        return TROVE_ERR_INVALID;
    *out = NULL;
    if (!(p = trove__calloc(1, sizeof *p)))
        return TROVE_ERR_NOMEM;
    if ((rc = trove_profile_string(p, "", 0, &id)) != TROVE_OK ||
        !(p->stack = room(NULL, &p->cap_stack, 0, sizeof *p->stack, &rc))) {
        trove_profile_free(p);
        return rc;
    }
    assert(id == 0);
    p->stack[0] = (struct trove_profile_stack){0, 0};
    p->n_stack = 1;
    *out = p;
    return TROVE_OK;
}

void trove_profile_free(struct trove_profile *p)
{
    if (!p)
        return;
    trove_bytes_free(&p->arena);
    free(p->str);
    free(p->str_ix.slot);
    free(p->frame);
    free(p->frame_ix.slot);
    free(p->stack);
    free(p->stack_ix.slot);
    free(p->sample);
    free(p->sw);
    free(p);
}

int trove_profile_string(struct trove_profile *p, const char *s, size_t len, uint32_t *id_out)
{
    struct str_row key;
    size_t slot;
    int rc = TROVE_OK;
    if (!p || !id_out || (!s && len) || (len && memchr(s, 0, len)))
        return TROVE_ERR_INVALID;
    if (len > TROVE_PROFILE_STRING_MAX)
        return TROVE_ERR_LIMIT;
    /* The candidate goes past the arena's end first (reserved, not yet counted), so that
     * the probe compares arena bytes with arena bytes. */
    if ((rc = trove_bytes_reserve(&p->arena, len + 1)) != TROVE_OK ||
        (rc = index_reserve(p, &p->str_ix, 0, p->n_str)) != TROVE_OK)
        return rc;
    ROOM(p, str);
    if (len)
        memcpy(p->arena.ptr + p->arena.len, s, len);
    p->arena.ptr[p->arena.len + len] = 0;
    key = (struct str_row){p->arena.len, (uint32_t)len};
    slot = probe(&p->str_ix, hash_bytes(s, len), str_eq, p, &key);
    if (!p->str_ix.slot[slot]) {
        p->str[p->n_str] = key;
        p->arena.len += len + 1;
        p->str_ix.slot[slot] = (uint32_t)++p->n_str;
    }
    *id_out = p->str_ix.slot[slot] - 1;
    return TROVE_OK;
}

const char *trove_profile_string_get(const struct trove_profile *p, uint32_t id, size_t *len_out)
{
    if (!p || id >= p->n_str)
        return NULL;
    if (len_out)
        *len_out = p->str[id].len;
    return (const char *)p->arena.ptr + p->str[id].off;
}

size_t trove_profile_string_count(const struct trove_profile *p) { return p ? p->n_str : 0; }

int trove_profile_frame(struct trove_profile *p, const struct trove_profile_frame *f,
                        uint32_t *id_out)
{
    size_t slot;
    int rc = TROVE_OK;
    if (!p || !f || !id_out || f->module >= p->n_str || f->function >= p->n_str ||
        f->file >= p->n_str)
        return TROVE_ERR_INVALID;
    if ((rc = index_reserve(p, &p->frame_ix, 1, p->n_frame)) != TROVE_OK)
        return rc;
    ROOM(p, frame);
    slot = probe(&p->frame_ix, hash_frame(f), frame_eq, p, f);
    if (!p->frame_ix.slot[slot]) {
        p->frame[p->n_frame] = *f;
        p->frame_ix.slot[slot] = (uint32_t)++p->n_frame;
    }
    *id_out = p->frame_ix.slot[slot] - 1;
    return TROVE_OK;
}

size_t trove_profile_frame_count(const struct trove_profile *p) { return p ? p->n_frame : 0; }

const struct trove_profile_frame *trove_profile_frame_get(const struct trove_profile *p,
                                                          uint32_t id)
{
    return p && id < p->n_frame ? &p->frame[id] : NULL;
}

int trove_profile_stack(struct trove_profile *p, uint32_t parent, uint32_t frame,
                        uint32_t *id_out)
{
    struct trove_profile_stack key = {frame, parent};
    size_t slot;
    int rc = TROVE_OK;
    if (!p || !id_out || parent >= p->n_stack || frame >= p->n_frame)
        return TROVE_ERR_INVALID;
    if ((rc = index_reserve(p, &p->stack_ix, 2, p->n_stack)) != TROVE_OK)
        return rc;
    ROOM(p, stack);
    slot = probe(&p->stack_ix, hash_stack(parent, frame), stack_eq, p, &key);
    if (!p->stack_ix.slot[slot]) {
        p->stack[p->n_stack] = key;
        p->stack_ix.slot[slot] = (uint32_t)++p->n_stack;
    }
    /* The index holds row + 1 and row 0 (the root) is never in it: a row's id is its row. */
    *id_out = p->stack_ix.slot[slot] - 1;
    assert(*id_out > parent);
    return TROVE_OK;
}

int trove_profile_stack_path(struct trove_profile *p, const uint32_t *frames, size_t n,
                             uint32_t *id_out)
{
    uint32_t s = TROVE_PROFILE_ROOT;
    int rc = TROVE_OK;
    if (!p || !id_out || (n && !frames))
        return TROVE_ERR_INVALID;
    for (size_t i = n; i-- > 0;)
        if ((rc = trove_profile_stack(p, s, frames[i], &s)) != TROVE_OK)
            return rc;
    *id_out = s;
    return TROVE_OK;
}

size_t trove_profile_stack_count(const struct trove_profile *p) { return p ? p->n_stack - 1 : 0; }

const struct trove_profile_stack *trove_profile_stack_get(const struct trove_profile *p,
                                                          uint32_t id)
{
    return p && id > 0 && id < p->n_stack ? &p->stack[id] : NULL;
}

int trove_profile_sample(struct trove_profile *p, const struct trove_profile_sample *s)
{
    int rc = TROVE_OK;
    if (!p || !s || s->stack >= p->n_stack)
        return TROVE_ERR_INVALID;
    ROOM(p, sample);
    p->sample[p->n_sample++] = *s;
    return TROVE_OK;
}

size_t trove_profile_sample_count(const struct trove_profile *p) { return p ? p->n_sample : 0; }

const struct trove_profile_sample *trove_profile_samples(const struct trove_profile *p)
{
    return p && p->n_sample ? p->sample : NULL;
}

int trove_profile_switch(struct trove_profile *p, const struct trove_profile_switch *sw)
{
    int rc = TROVE_OK;
    if (!p || !sw || (sw->flags & ~(TROVE_PROFILE_SWITCH_OUT | TROVE_PROFILE_SWITCH_PREEMPT)) ||
        ((sw->flags & TROVE_PROFILE_SWITCH_PREEMPT) && !(sw->flags & TROVE_PROFILE_SWITCH_OUT)))
        return TROVE_ERR_INVALID;
    ROOM(p, sw);
    p->sw[p->n_sw++] = *sw;
    return TROVE_OK;
}

size_t trove_profile_switch_count(const struct trove_profile *p) { return p ? p->n_sw : 0; }

const struct trove_profile_switch *trove_profile_switches(const struct trove_profile *p)
{
    return p && p->n_sw ? p->sw : NULL;
}

void trove_profile_get_counts(const struct trove_profile *p, struct trove_profile_counts *out)
{
    memset(out, 0, sizeof *out);
    if (!p)
        return;
    out->strings = p->n_str;
    out->frames = p->n_frame;
    out->stacks = p->n_stack - 1;
    out->samples = p->n_sample;
    out->switches = p->n_sw;
}

/* Rebuild ix (of table 0 strings, 1 frames, 2 stacks) from rows [first, n), at its size. */
static void index_rebuild(struct trove_profile *p, struct index *ix, int table, size_t first,
                          size_t n)
{
    if (!ix->cap)
        return;
    memset(ix->slot, 0, ix->cap * sizeof *ix->slot);
    for (size_t id = first; id < n; id++) {
        size_t j = (size_t)rehash(p, table, (uint32_t)id) & (ix->cap - 1);
        while (ix->slot[j])
            j = (j + 1) & (ix->cap - 1);
        ix->slot[j] = (uint32_t)id + 1;
    }
}

void trove__profile_truncate(struct trove_profile *p, const struct trove_profile_counts *c)
{
    if (c->strings < p->n_str) {
        p->n_str = c->strings;
        p->arena.len = p->n_str ? p->str[p->n_str - 1].off + p->str[p->n_str - 1].len + 1 : 0;
        index_rebuild(p, &p->str_ix, 0, 0, p->n_str);
    }
    if (c->frames < p->n_frame) {
        p->n_frame = c->frames;
        index_rebuild(p, &p->frame_ix, 1, 0, p->n_frame);
    }
    if (c->stacks + 1 < p->n_stack) {
        p->n_stack = c->stacks + 1;
        index_rebuild(p, &p->stack_ix, 2, 1, p->n_stack);
    }
    if (c->samples < p->n_sample)
        p->n_sample = c->samples;
    if (c->switches < p->n_sw)
        p->n_sw = c->switches;
}

int trove_profile_slice(const struct trove_profile *p, uint64_t from_ns, uint64_t to_ns,
                        struct trove_profile **out)
{
    struct trove_profile *q = NULL;
    uint32_t id;
    int rc;

    if (!p || !out || from_ns > to_ns)
        return TROVE_ERR_INVALID;
    *out = NULL;
    if ((rc = trove_profile_new(&q)) != TROVE_OK)
        return rc;
    for (size_t i = 1; i < p->n_str && rc == TROVE_OK; i++)
        rc = trove_profile_string(q, (const char *)p->arena.ptr + p->str[i].off, p->str[i].len, &id);
    for (size_t i = 0; i < p->n_frame && rc == TROVE_OK; i++)
        rc = trove_profile_frame(q, &p->frame[i], &id);
    for (size_t i = 1; i < p->n_stack && rc == TROVE_OK; i++)
        rc = trove_profile_stack(q, p->stack[i].parent, p->stack[i].frame, &id);
    for (size_t i = 0; i < p->n_sample && rc == TROVE_OK; i++)
        if (p->sample[i].time_ns >= from_ns && p->sample[i].time_ns < to_ns)
            rc = trove_profile_sample(q, &p->sample[i]);
    for (size_t i = 0; i < p->n_sw && rc == TROVE_OK; i++)
        if (p->sw[i].time_ns >= from_ns && p->sw[i].time_ns < to_ns)
            rc = trove_profile_switch(q, &p->sw[i]);
    if (rc != TROVE_OK) {
        trove_profile_free(q);
        return rc;
    }
    *out = q;
    return TROVE_OK;
}

void trove_profile_clear_samples(struct trove_profile *p)
{
    if (p)
        p->n_sample = p->n_sw = 0;
}
