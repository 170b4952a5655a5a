/*
 * remap.c: producers' event name ids mapped to their capture's by name (remap.h). The
 * capture's dictionary is a hash table from the name's bytes to its id (FNV-1a, linear
 * probing, at most half full); a producer's map is a hash table from its id to the
 * capture's. Ids are handed out from 0 up (0 is an id like any other: the gen model names
 * it); the producer map keeps capture id + 1, so that 0 marks an empty slot.
 */
#include "remap.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

struct str_slot {
    uint32_t id;  /* the capture id + 1; 0: empty */
    uint64_t hash;
};

struct trove__capture_names {
    struct trove_names *all; /* capture id -> name */
    struct str_slot *tab;    /* name -> capture id (the string is all's) */
    size_t cap, count;
    uint32_t next_id;
};

struct id_slot {
    uint32_t from, to; /* to: the capture id + 1; 0: empty */
};

struct trove__producer_names {
    struct id_slot *tab;
    size_t cap, count;
};

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

int trove__capture_names_new(struct trove__capture_names **out)
{
    struct trove__capture_names *c = trove__calloc(1, sizeof *c);

    *out = NULL;
    if (!c || trove_names_new(&c->all) != TROVE_OK) {
        free(c);
        return TROVE_ERR_NOMEM;
    }
    c->next_id = 0;
    *out = c;
    return TROVE_OK;
}

void trove__capture_names_free(struct trove__capture_names *c)
{
    if (!c)
        return;
    trove_names_free(c->all);
    free(c->tab);
    free(c);
}

int trove__producer_names_new(struct trove__producer_names **out)
{
    *out = trove__calloc(1, sizeof **out);
    return *out ? TROVE_OK : TROVE_ERR_NOMEM;
}

void trove__producer_names_free(struct trove__producer_names *p)
{
    if (!p)
        return;
    free(p->tab);
    free(p);
}

const struct trove_names *trove__capture_names_all(const struct trove__capture_names *c)
{
    return c->all;
}

/* ---- name -> capture id ------------------------------------------------------------- */

static int str_grow(struct trove__capture_names *c)
{
    size_t cap = c->cap ? c->cap * 2 : 64;
    struct str_slot *t;

    if ((c->count + 1) * 2 <= c->cap)
        return TROVE_OK;
    if (!(t = trove__calloc(cap, sizeof *t)))
        return TROVE_ERR_NOMEM;
    for (size_t k = 0; k < c->cap; k++) {
        size_t i;
        if (!c->tab[k].id)
            continue;
        for (i = c->tab[k].hash & (cap - 1); t[i].id; i = (i + 1) & (cap - 1))
            ;
        t[i] = c->tab[k];
    }
    free(c->tab);
    c->tab = t;
    c->cap = cap;
    return TROVE_OK;
}

/* The capture id of name s[0..n), made if new (*created = 1). */
static int name_id(struct trove__capture_names *c, const char *s, size_t n, uint32_t *id_out,
                   int *created)
{
    uint64_t h = fnv1a(s, n);
    size_t i;
    int rc;

    *created = 0;
    if ((rc = str_grow(c)) != TROVE_OK)
        return rc;
    for (i = h & (c->cap - 1); c->tab[i].id; i = (i + 1) & (c->cap - 1)) {
        size_t len = 0;
        const char *have;
        if (c->tab[i].hash != h)
            continue;
        have = trove_names_get(c->all, TROVE_NAME_EVENT, c->tab[i].id - 1, 0, &len);
        if (have && len == n && memcmp(have, s, n) == 0) {
            *id_out = c->tab[i].id - 1;
            return TROVE_OK;
        }
    }
    if (c->next_id == UINT32_MAX)
        return TROVE_ERR_LIMIT;
    if ((rc = trove_names_set(c->all, TROVE_NAME_EVENT, c->next_id, 0, s, n)) != TROVE_OK)
        return rc;
    c->tab[i].id = c->next_id + 1;
    c->tab[i].hash = h;
    c->count++;
    *id_out = c->next_id++;
    *created = 1;
    return TROVE_OK;
}

/* ---- producer id -> capture id ------------------------------------------------------ */

static int id_grow(struct trove__producer_names *p)
{
    size_t cap = p->cap ? p->cap * 2 : 64;
    struct id_slot *t;

    if ((p->count + 1) * 2 <= p->cap)
        return TROVE_OK;
    if (!(t = trove__calloc(cap, sizeof *t)))
        return TROVE_ERR_NOMEM;
    for (size_t k = 0; k < p->cap; k++) {
        size_t i;
        if (!p->tab[k].to)
            continue;
        for (i = (p->tab[k].from * 0x9e3779b1u) & (cap - 1); t[i].to; i = (i + 1) & (cap - 1))
            ;
        t[i] = p->tab[k];
    }
    free(p->tab);
    p->tab = t;
    p->cap = cap;
    return TROVE_OK;
}

/* The slot of `from` in p (empty if it has none); p->cap > 0. */
static struct id_slot *id_slot(struct trove__producer_names *p, uint32_t from)
{
    size_t i;
    for (i = (from * 0x9e3779b1u) & (p->cap - 1); p->tab[i].to && p->tab[i].from != from;
         i = (i + 1) & (p->cap - 1))
        ;
    return &p->tab[i];
}

static int id_set(struct trove__producer_names *p, uint32_t from, uint32_t to)
{
    struct id_slot *s;
    int rc;

    if ((rc = id_grow(p)) != TROVE_OK)
        return rc;
    s = id_slot(p, from);
    if (!s->to)
        p->count++;
    s->from = from;
    s->to = to;
    return TROVE_OK;
}

int trove__remap_names(struct trove__capture_names *c, struct trove__producer_names *p,
                       const struct trove_names *added, struct trove_names *out)
{
    size_t n = added ? trove_names_count(added) : 0;
    int rc;

    for (size_t k = 0; k < n; k++) {
        struct trove_name_entry e;
        uint32_t id;
        int created;
        trove_names_entry(added, k, &e);
        if (e.type != TROVE_NAME_EVENT) { /* keyed by pid: passes through */
            if ((rc = trove_names_put(out, &e)) != TROVE_OK ||
                (rc = trove_names_put(c->all, &e)) != TROVE_OK)
                return rc;
            continue;
        }
        if ((rc = name_id(c, e.str, e.len, &id, &created)) != TROVE_OK ||
            (rc = id_set(p, e.a, id + 1)) != TROVE_OK)
            return rc;
        if (created && (rc = trove_names_set(out, TROVE_NAME_EVENT, id, 0, e.str, e.len)))
            return rc;
    }
    return TROVE_OK;
}

int trove__remap_events(struct trove__capture_names *c, struct trove__producer_names *p,
                        struct trove_event *ev, size_t n)
{
    uint32_t last_from = 0, last_to = 0; /* last_to: capture id + 1; 0: none yet */
    int rc;

    for (size_t i = 0; i < n; i++) {
        struct id_slot *s;
        uint32_t from = ev[i].name_id;
        if (from == last_from && last_to) { /* runs of one name are common */
            ev[i].name_id = last_to - 1;
            continue;
        }
        if ((rc = id_grow(p)) != TROVE_OK)
            return rc;
        s = id_slot(p, from);
        if (!s->to) { /* never named: an id of its own, nameless */
            if (c->next_id == UINT32_MAX)
                return TROVE_ERR_LIMIT;
            s->from = from;
            s->to = ++c->next_id; /* the id c->next_id had, + 1 */
            p->count++;
        }
        last_from = from;
        last_to = s->to;
        ev[i].name_id = s->to - 1;
    }
    return TROVE_OK;
}

int trove__capture_names_seed(struct trove__capture_names *c, const struct trove_names *stored,
                              uint32_t max_id)
{
    size_t n = stored ? trove_names_count(stored) : 0;
    int rc;

    if (max_id == UINT32_MAX)
        return TROVE_ERR_LIMIT;
    for (size_t k = 0; k < n; k++) {
        struct trove_name_entry e;
        uint64_t h;
        size_t i;
        trove_names_entry(stored, k, &e);
        if ((rc = trove_names_put(c->all, &e)) != TROVE_OK)
            return rc;
        if (e.type != TROVE_NAME_EVENT)
            continue;
        if (e.a == UINT32_MAX)
            return TROVE_ERR_LIMIT;
        if (e.a >= c->next_id)
            c->next_id = e.a + 1;
        if ((rc = str_grow(c)) != TROVE_OK)
            return rc;
        h = fnv1a(e.str, e.len);
        for (i = h & (c->cap - 1); c->tab[i].id; i = (i + 1) & (c->cap - 1))
            ;
        c->tab[i].id = e.a + 1;
        c->tab[i].hash = h;
        c->count++;
    }
    if (max_id >= c->next_id)
        c->next_id = max_id + 1;
    return TROVE_OK;
}
