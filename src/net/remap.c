/*
 * remap.c: producers' event name ids mapped to their capture's by name (remap.h). The
 * capture's dictionary is a hash table from the name's bytes to its id (FNV-1a, linear
 * probing, at most half full); a producer's map is a hash table from its id to the
 * capture's. Ids are handed out from 0 up (0 is an id like any other: the gen model names
 * it); the producer map keeps capture id + 1, so that 0 marks an empty slot.
 *
 * The dictionary also counts what its names take in the capture's names object: each
 * entry's bytes in a names frame (docs/formats/wire.md, format 4) and the writer's own
 * estimate (16 bytes and the string), by which it cuts the object into frames of at most
 * 65,536 entries and about 1 MiB (docs/formats/capture.md, "The names object"), so that a
 * names frame that would make the capture's names too big to commit is refused before it
 * changes anything.
 */
#include "remap.h"
#include "common/alloc.h"
#include "common/varint.h"

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
    uint64_t bytes;          /* all's entries as a names frame encodes them */
    uint64_t est;            /* the writer's estimate of them: 16 + the string's bytes each */
};

/* The capture writer's names frames (docs/formats/capture.md): at most this many entries,
 * filled while their estimate stays within FRAME_BYTES. */
#define FRAME_ENTRIES 65536u
#define FRAME_BYTES ((uint64_t)1 << 20)

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

/* e's bytes in a names frame: type, a, [b], then the string with its length or the sort
 * index as a zigzag varint. */
static uint64_t entry_bytes(const struct trove_name_entry *e)
{
    uint64_t n = 1 + trove_varint_len(e->a);

    if (trove_name_type_has_tid(e->type))
        n += trove_varint_len(e->b);
    if (e->type == TROVE_NAME_PROCESS_SORT || e->type == TROVE_NAME_THREAD_SORT)
        return n + trove_varint_len(((uint32_t)e->sort_index << 1) ^
                                    (uint32_t)(e->sort_index >> 31));
    return n + trove_varint_len(e->len) + e->len;
}

/* The names object's bytes for entries of `bytes` (estimate `est`) in `count` entries: a
 * frame is cut at FRAME_ENTRIES entries, or before an entry that would take its estimate
 * past FRAME_BYTES (so the frame's estimate is then over FRAME_BYTES - 16 - TROVE_NAME_MAX),
 * and each has a 16-byte header. An upper bound. */
static uint64_t object_bytes(uint64_t bytes, uint64_t est, uint64_t count)
{
    uint64_t frames = 1 + count / FRAME_ENTRIES + est / (FRAME_BYTES - 16 - TROVE_NAME_MAX);
    return bytes + 16 * frames;
}

uint64_t trove__capture_names_stored_bytes(const struct trove__capture_names *c)
{
    return object_bytes(c->bytes, c->est, trove_names_count(c->all));
}

/* The bytes of the entry all holds under e's key (0, 0 and *had 0 if none). */
static void held(const struct trove__capture_names *c, const struct trove_name_entry *e,
                 uint64_t *bytes, uint64_t *est, int *had)
{
    struct trove_name_entry old = *e;
    size_t len = 0;

    *bytes = *est = 0;
    *had = 0;
    if (e->type == TROVE_NAME_PROCESS_SORT || e->type == TROVE_NAME_THREAD_SORT) {
        if (!trove_names_get_sort(c->all, e->type, e->a, e->b, &old.sort_index))
            return;
        old.len = 0;
    } else if (!trove_names_get(c->all, e->type, e->a, e->b, &len)) {
        return;
    }
    old.len = len;
    *bytes = entry_bytes(&old);
    *est = 16 + len;
    *had = 1;
}

/* Put e into all, keeping the counts. */
static int all_put(struct trove__capture_names *c, const struct trove_name_entry *e)
{
    uint64_t ob, oe;
    int had, rc;

    held(c, e, &ob, &oe, &had);
    if ((rc = trove_names_put(c->all, e)) != TROVE_OK)
        return rc;
    c->bytes += entry_bytes(e) - ob;
    c->est += 16 + e->len - oe;
    return TROVE_OK;
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

/* The slot of name s[0..n) (hash h) in c's table, or of the empty slot where it would go;
 * c->cap > 0. */
static size_t name_slot(const struct trove__capture_names *c, const char *s, size_t n, uint64_t h)
{
    size_t i;

    for (i = h & (c->cap - 1); c->tab[i].id; i = (i + 1) & (c->cap - 1)) {
        size_t len = 0;
        const char *have;
        if (c->tab[i].hash != h)
            continue;
        have = trove_names_get(c->all, TROVE_NAME_EVENT, c->tab[i].id - 1, 0, &len);
        if (have && len == n && memcmp(have, s, n) == 0)
            break;
    }
    return i;
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
    i = name_slot(c, s, n, h);
    if (c->tab[i].id) {
        *id_out = c->tab[i].id - 1;
        return TROVE_OK;
    }
    if (c->next_id == UINT32_MAX)
        return TROVE_ERR_LIMIT;
    if ((rc = trove_names_set(c->all, TROVE_NAME_EVENT, c->next_id, 0, s, n)) != TROVE_OK)
        return rc;
    {
        struct trove_name_entry e = {TROVE_NAME_EVENT, c->next_id, 0, s, n, 0};
        c->bytes += entry_bytes(&e);
        c->est += 16 + n;
    }
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
            if ((rc = trove_names_put(out, &e)) != TROVE_OK || (rc = all_put(c, &e)) != TROVE_OK)
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

int trove__remap_names_max(struct trove__capture_names *c, struct trove__producer_names *p,
                           const struct trove_names *added, struct trove_names *out,
                           uint64_t max, uint64_t *would_out)
{
    size_t n = added ? trove_names_count(added) : 0;
    uint64_t bytes = c->bytes, est = c->est, count = trove_names_count(c->all), would;
    uint32_t next = c->next_id;

    /* What the names would take, nothing changed yet: an entry new to the capture adds
     * itself, one that replaces (keyed by pid) adds the difference. A name twice in the
     * frame counts twice: an upper bound. */
    for (size_t k = 0; k < n; k++) {
        struct trove_name_entry e;
        uint64_t ob, oe;
        int had;
        trove_names_entry(added, k, &e);
        if (e.type == TROVE_NAME_EVENT) {
            if (c->cap && c->tab[name_slot(c, e.str, e.len, fnv1a(e.str, e.len))].id)
                continue;
            e.a = next < UINT32_MAX ? next++ : next; /* the id it would get */
            ob = oe = 0;
            had = 0;
        } else {
            held(c, &e, &ob, &oe, &had);
        }
        bytes += entry_bytes(&e) - ob;
        est += 16 + e.len - oe;
        count += !had;
    }
    would = object_bytes(bytes, est, count);
    if (would_out)
        *would_out = would;
    if (would > max)
        return TROVE_ERR_LIMIT;
    return trove__remap_names(c, p, added, out);
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
        if ((rc = all_put(c, &e)) != TROVE_OK)
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
