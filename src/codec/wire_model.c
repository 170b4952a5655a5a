/*
 * wire_model.c: the model payload (wire format 8, docs/formats/wire.md "Format 8"): events
 * coded against what their track's structure predicts, the residuals in separate streams,
 * each stream through zstd.
 *
 * Each event, in the frame's order, is coded as
 *   track   its rank in a move-to-front list of the frame's tracks (the first 255 places;
 *           an escape names a track by its index, a new track by its pid and tid);
 *   kind    0: the kind and extra of the track's previous event, else 1, then both;
 *   pops    how many of the track's open zones ended at or before it starts (the decoder
 *           pops that many, so it never compares times);
 *   depth   its depth less the open zones left (zigzag; 0 when it nests as they say);
 *   name    its rank among the last names seen in its context (track, depth, the name of
 *           the zone it is in, the name of the zone that ended before it, kind), else its id;
 *   start   the gap from the end of the last zone popped (or, none popped, the track's
 *           previous start) in the frame's time unit, zigzag, as a bit length and the bits
 *           under the top one;
 *   dur     a zone's: the smallest of its distance from the name's last duration, from what
 *           remains of the zone it is in, or itself, and which; a counter's value: its
 *           distance from the last value of that (track, name); another event's: itself.
 * The time unit is the greatest common divisor of every start's distance from the first
 * and every duration but counters' (Chrome traces: 1000 ns), or 1 when the frame spans over
 * 2^62 ns. Every length read is checked against the frame's bounds before it is used, every
 * stream must be read to its end, and a value out of range is TROVE_ERR_CORRUPT.
 */
#include "wire_internal.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/varint.h"

#include <stdlib.h>
#include <zstd.h>

#define NONE UINT32_MAX
#define MTF_TRACKS 255u   /* track ranks a byte names; 255 escapes */
#define NAME_WAYS 4u      /* names a context remembers */
#define NAME_ESC 255u     /* a name byte that says: the id follows */
#define BYTE_ESC 255u     /* pops, depth and kind/extra escapes */
#define MAX_STACK 257u    /* depth <= 255, and one past */

enum {
    S_TRACK,  /* bytes: track rank, BYTE_ESC: a varint in S_VARS */
    S_KIND,   /* bytes: 0 the track's last kind and extra, 1 new ones */
    S_EXTRA,  /* bytes: the new kind, extra */
    S_POPS,   /* bytes, BYTE_ESC: varint in S_VARS */
    S_DEPTH,  /* bytes: zigzag residual, BYTE_ESC: varint in S_VARS */
    S_NAME,   /* bytes: rank, NAME_ESC: the id in S_VARS */
    S_GAP0,   /* bytes: bit length of a gap after no pop */
    S_GAP1,   /* bytes: ... after a pop */
    S_DURC,   /* bytes: a zone's duration predictor */
    S_DUR,    /* bytes: bit length of a duration's residual */
    S_CNT,    /* bytes: bit length of a counter's residual */
    S_VARS,   /* varints: escapes, new tracks' pid and tid, name ids */
    S_BITS,   /* the bits under the top one of every bit length, LSB first */
    /* version 2 */
    S_DUR1,   /* bytes: a zone's residual against what remains of its parent */
    S_DUR2,   /* bytes: a zone's duration itself */
    S_DURX,   /* bytes: another event's duration (not a counter) */
    S_GAP0P,  /* bytes: a gap after no pop, less the name's last (when that predicts well) */
    S_GAP1P,  /* bytes: ... after a pop */
    S_COUNT_
};
#define V1_STREAMS 13 /* S_TRACK .. S_BITS */

/* The streams a payload of a version holds. */
static int streams_of(unsigned version)
{
    return version == 1 ? V1_STREAMS : S_COUNT_;
}

/* ---- the model both sides keep ----------------------------------------------------------- */

struct mtrack {
    uint32_t pid, tid;
    uint64_t prev_start;
    uint8_t kind, extra;
    uint32_t depth; /* open zones */
    uint32_t cap;
    uint64_t *end;  /* open zones' ends and names, depth of them */
    uint32_t *name;
};

struct nlist {
    uint32_t names[NAME_WAYS];
    uint32_t n;          /* names[0..n) remembered */
};

struct dslot {
    uint64_t key;  /* a zone's name; a counter's track << 32 | name; a track's pid << 32 | tid */
    uint64_t last; /* the last duration, value, gap or track index */
    uint8_t used, has;
    int8_t score;  /* gaps (v2): > 0 when the last gap has predicted better than none */
};

/* Open-addressing tables that grow as they fill (at most half full), emptied frame to frame
 * without touching more than they hold: a frame's contexts are few beside its events. */
#define TABLE_MIN 256u
struct dtab {
    struct dslot *s;
    uint32_t mask, n;
};

struct trove__model {
    struct mtrack *tracks;
    uint32_t ntracks, captracks;
    uint32_t mtf[MTF_TRACKS];
    uint32_t nmtf;
    struct dtab ctx;               /* a name context's key -> its list in lists */
    struct nlist *lists;
    uint32_t nlists, caplists;
    struct dtab dur, cnt, trk, gap;
    unsigned version;               /* of the frame being coded */
    struct trove_bytes s[S_COUNT_]; /* the encoder's streams, the decoder's inflated ones */
    uint64_t bitacc;
    unsigned bitn;
    ZSTD_CCtx *zc;
    ZSTD_DCtx *zd;
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* Empty *tab (*mask + 1 slots of elem bytes): a large one goes back to TABLE_MIN slots. */
static int table_empty(void **tab, uint32_t *mask, size_t elem)
{
    if (*tab && *mask + 1 <= 4 * TABLE_MIN) {
        memset(*tab, 0, ((size_t)*mask + 1) * elem);
        return TROVE_OK;
    }
    free(*tab);
    if (!(*tab = trove__calloc(TABLE_MIN, elem)))
        return TROVE_ERR_NOMEM;
    *mask = TABLE_MIN - 1;
    return TROVE_OK;
}

/* Ready m for a frame: no tracks, empty tables. */
static int model_reset(struct trove__model *m)
{
    int rc;
    m->ntracks = 0;
    m->nmtf = 0;
    m->ctx.n = m->dur.n = m->cnt.n = m->trk.n = m->gap.n = 0;
    m->nlists = 0;
    if ((rc = table_empty((void **)&m->ctx.s, &m->ctx.mask, sizeof *m->ctx.s)) != TROVE_OK ||
        (rc = table_empty((void **)&m->dur.s, &m->dur.mask, sizeof *m->dur.s)) != TROVE_OK ||
        (rc = table_empty((void **)&m->cnt.s, &m->cnt.mask, sizeof *m->cnt.s)) != TROVE_OK ||
        (rc = table_empty((void **)&m->trk.s, &m->trk.mask, sizeof *m->trk.s)) != TROVE_OK ||
        (rc = table_empty((void **)&m->gap.s, &m->gap.mask, sizeof *m->gap.s)) != TROVE_OK)
        return rc;
    return TROVE_OK;
}

static int track_new(struct trove__model *m, uint32_t pid, uint32_t tid, uint64_t base,
                     uint32_t *out)
{
    struct mtrack *t;
    if (m->ntracks == m->captracks) {
        uint32_t c = m->captracks ? m->captracks * 2 : 64;
        void *p = trove__realloc(m->tracks, (size_t)c * sizeof *m->tracks);
        if (!p)
            return TROVE_ERR_NOMEM;
        m->tracks = p;
        memset(m->tracks + m->captracks, 0, (size_t)(c - m->captracks) * sizeof *m->tracks);
        m->captracks = c;
    }
    t = &m->tracks[m->ntracks];
    t->pid = pid;
    t->tid = tid;
    t->prev_start = base;
    t->kind = t->extra = 0;
    t->depth = 0;
    *out = m->ntracks++;
    return TROVE_OK;
}

/* Move track ti to the front of the MTF list (it was at rank r, or not in it: r = nmtf). */
static void mtf_front(struct trove__model *m, uint32_t r, uint32_t ti)
{
    if (r == m->nmtf && m->nmtf < MTF_TRACKS)
        m->nmtf++;
    if (r >= m->nmtf)
        r = m->nmtf - 1; /* the last one falls off */
    memmove(m->mtf + 1, m->mtf, (size_t)r * sizeof *m->mtf);
    m->mtf[0] = ti;
}

static int stack_room(struct mtrack *t, uint32_t need)
{
    uint32_t c;
    uint64_t *e;
    uint32_t *nm;
    if (need <= t->cap)
        return TROVE_OK;
    c = t->cap ? t->cap * 2 : 8;
    if (c < need)
        c = need;
    if (c > MAX_STACK)
        c = MAX_STACK;
    if (!(e = trove__realloc(t->end, (size_t)c * sizeof *e)))
        return TROVE_ERR_NOMEM;
    t->end = e;
    if (!(nm = trove__realloc(t->name, (size_t)c * sizeof *nm)))
        return TROVE_ERR_NOMEM;
    t->name = nm;
    t->cap = c;
    return TROVE_OK;
}

/* Zone e opens on t: the zones at and past its depth close (a depth past the open ones
 * opens it after them), and its end and name are kept. */
static int open_zone(struct mtrack *t, const struct trove_event *e)
{
    int rc;
    if (e->depth <= t->depth)
        t->depth = e->depth;
    if ((rc = stack_room(t, t->depth + 1)) != TROVE_OK)
        return rc;
    t->end[t->depth] = e->start_ns + e->dur_ns;
    t->name[t->depth] = e->name_id;
    t->depth++;
    return TROVE_OK;
}

/* Name `name` to the front of c's list: it was at rank r, or (r >= c->n) not in it. */
static void name_front(struct nlist *c, unsigned r, uint32_t name)
{
    if (r >= c->n)
        r = c->n < NAME_WAYS ? c->n++ : NAME_WAYS - 1; /* new: the last one falls off */
    memmove(c->names + 1, c->names, r * sizeof *c->names);
    c->names[0] = name;
}

static struct dslot *dtab_find(struct dtab *t, uint64_t key)
{
    uint32_t i = (uint32_t)mix(key) & t->mask;
    while (t->s[i].used && t->s[i].key != key)
        i = (i + 1) & t->mask;
    return &t->s[i];
}

/* The slot of key in t, found or claimed (has 0: nothing remembered yet); NULL out of
 * memory. */
static struct dslot *slot(struct dtab *t, uint64_t key)
{
    struct dslot *d;

    if ((t->n + 1) * 2 > t->mask + 1) {
        struct dtab g = {trove__calloc((size_t)(t->mask + 1) * 2, sizeof *t->s), t->mask * 2 + 1,
                         t->n};
        if (!g.s)
            return NULL;
        for (uint32_t i = 0; i <= t->mask; i++)
            if (t->s[i].used)
                *dtab_find(&g, t->s[i].key) = t->s[i];
        free(t->s);
        *t = g;
    }
    d = dtab_find(t, key);
    if (!d->used) {
        d->used = 1;
        d->key = key;
        d->has = 0;
        d->score = 0;
        t->n++;
    }
    return d;
}

/* The name context of an event: its list (found or made), or NULL out of memory. */
static struct nlist *name_ctx(struct trove__model *m, uint32_t ti, uint32_t depth,
                              uint32_t parent, uint32_t popped, uint8_t kind)
{
    uint64_t key = ((uint64_t)ti << 40) ^ ((uint64_t)depth << 32) ^ ((uint64_t)kind << 29) ^
                   mix(((uint64_t)parent << 32) | popped);
    struct dslot *d = slot(&m->ctx, key);

    if (!d)
        return NULL;
    if (!d->has) {
        if (m->nlists == m->caplists) {
            uint32_t c = m->caplists ? m->caplists * 2 : 256;
            void *p = trove__realloc(m->lists, (size_t)c * sizeof *m->lists);
            if (!p)
                return NULL;
            m->lists = p;
            m->caplists = c;
        }
        m->lists[m->nlists].n = 0;
        d->last = m->nlists++;
        d->has = 1;
    }
    return &m->lists[d->last];
}

#define zz trove_zigzag64
#define unzz trove_unzigzag64
static unsigned bitlen(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0u; }

int trove__model_new(struct trove__model **out)
{
    if (!(*out = trove__calloc(1, sizeof **out)))
        return TROVE_ERR_NOMEM;
    return TROVE_OK;
}

void trove__model_free(struct trove__model *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->captracks; i++) {
        free(m->tracks[i].end);
        free(m->tracks[i].name);
    }
    free(m->tracks);
    free(m->ctx.s);
    free(m->lists);
    free(m->dur.s);
    free(m->cnt.s);
    free(m->trk.s);
    free(m->gap.s);
    for (int i = 0; i < S_COUNT_; i++)
        trove_bytes_free(&m->s[i]);
    ZSTD_freeCCtx(m->zc);
    ZSTD_freeDCtx(m->zd);
    free(m);
}

/* ---- encoding ---------------------------------------------------------------------------- */

static int put_byte(struct trove__model *m, int s, uint8_t b)
{
    return trove_bytes_append(&m->s[s], &b, 1);
}

static int put_var_to(struct trove_bytes *b, uint64_t v)
{
    uint8_t t[10];
    return trove_bytes_append(b, t, (size_t)(trove_put_varint(t, v) - t));
}

static int put_var(struct trove__model *m, uint64_t v)
{
    return put_var_to(&m->s[S_VARS], v);
}

/* A byte of stream s, or (v >= BYTE_ESC) the escape and v - BYTE_ESC as a varint. */
static int put_small(struct trove__model *m, int s, uint64_t v)
{
    int rc;
    if (v < BYTE_ESC)
        return put_byte(m, s, (uint8_t)v);
    if ((rc = put_byte(m, s, BYTE_ESC)) != TROVE_OK)
        return rc;
    return put_var(m, v - BYTE_ESC);
}

static int put_bits(struct trove__model *m, uint64_t v, unsigned n)
{
    int rc;
    while (n) {
        unsigned k = n < 64u - m->bitn ? n : 64u - m->bitn;
        uint64_t part = k == 64 ? v : v & ((1ull << k) - 1);
        m->bitacc |= part << m->bitn;
        m->bitn += k;
        v = k == 64 ? 0 : v >> k;
        n -= k;
        if (m->bitn == 64) {
            uint8_t b[8];
            trove__put_le64(b, m->bitacc);
            if ((rc = trove_bytes_append(&m->s[S_BITS], b, 8)) != TROVE_OK)
                return rc;
            m->bitacc = 0;
            m->bitn = 0;
        }
    }
    return TROVE_OK;
}

/* v as its bit length (a byte of stream s) and the bits under the top one; in version 2 a
 * length of 3 or more is sent as 2 × length + the bit under the top one, the rest raw. */
static int put_num(struct trove__model *m, int s, uint64_t v)
{
    unsigned b = bitlen(v);
    int rc;
    if (m->version >= 2 && b >= 3) {
        if ((rc = put_byte(m, s, (uint8_t)(2 * b + ((v >> (b - 2)) & 1)))) != TROVE_OK)
            return rc;
        return put_bits(m, v, b - 2);
    }
    if ((rc = put_byte(m, s, (uint8_t)b)) != TROVE_OK)
        return rc;
    return b > 1 ? put_bits(m, v, b - 1) : TROVE_OK;
}

/* Version 2's gap predictor for (name, popped or not): the last gap, used while it has
 * predicted better than nothing (score > 0); both sides update it after each gap. */
static struct dslot *gap_slot(struct trove__model *m, uint32_t name, int popped)
{
    return slot(&m->gap, (uint64_t)name << 1 | (popped != 0));
}

static void gap_seen(struct dslot *d, uint64_t gap)
{
    if (d->has) {
        unsigned with = bitlen(zz((int64_t)(gap - d->last))), without = bitlen(zz((int64_t)gap));
        if (with < without && d->score < 8)
            d->score++;
        else if (with > without && d->score > -8)
            d->score--;
    }
    d->has = 1;
    d->last = gap;
}

/* The stream of a gap and its prediction (0: none). */
static int gap_stream(const struct trove__model *m, const struct dslot *d, uint32_t k,
                      uint64_t *pred)
{
    *pred = m->version >= 2 && d->has && d->score > 0 ? d->last : 0;
    if (*pred)
        return k ? S_GAP1P : S_GAP0P;
    return k ? S_GAP1 : S_GAP0;
}

/* The stream of a duration: a zone's by its predictor, another event's. */
static int dur_stream(const struct trove__model *m, int zone, unsigned how)
{
    if (m->version < 2)
        return S_DUR;
    if (!zone)
        return S_DURX;
    return how == 0 ? S_DUR : how == 1 ? S_DUR1 : S_DUR2;
}

/* The frame's time unit: see the file's comment. */
static uint64_t time_unit(const struct trove_event *ev, size_t n)
{
    uint64_t lo = UINT64_MAX, hi = 0, g = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = ev[i].start_ns, e = s + ev[i].dur_ns;
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
        if (ev[i].kind != TROVE_KIND_COUNTER) {
            if (e < s)
                return 1; /* an end past 2^64: modular arithmetic, unit 1 */
            hi = e > hi ? e : hi;
        }
    }
    if (n == 0 || hi - lo >= (1ull << 62))
        return 1;
    for (size_t i = 0; i < n && g != 1; i++) {
        uint64_t a = ev[i].start_ns - ev[0].start_ns, b;
        if (ev[i].start_ns < ev[0].start_ns)
            a = ev[0].start_ns - ev[i].start_ns;
        while (a) { /* g = gcd(g, a) */
            b = g % a;
            g = a;
            a = b;
        }
        if (ev[i].kind != TROVE_KIND_COUNTER) {
            a = ev[i].dur_ns;
            while (a) {
                b = g % a;
                g = a;
                a = b;
            }
        }
    }
    return g ? g : 1;
}

static int is_zone(uint8_t kind)
{
    return kind == TROVE_KIND_ZONE || kind == TROVE_KIND_FRAME || kind == TROVE_KIND_LOCK;
}

/* Code one event against the model (the encoder's side of decode_event). */
static int encode_event(struct trove__model *m, const struct trove_event *e, uint64_t base,
                        uint64_t g)
{
    struct dslot *known = slot(&m->trk, ((uint64_t)e->pid << 32) | e->tid);
    struct mtrack *t = NULL;
    struct nlist *c;
    uint32_t ti = NONE, r, k = 0, popped = NONE, parent;
    uint64_t anchor, gap;
    int rc;

    if (!known)
        return TROVE_ERR_NOMEM;
    if (known->has)
        ti = (uint32_t)known->last;
    for (r = 0; ti != NONE && r < m->nmtf && m->mtf[r] != ti; r++)
        ;
    if (ti == NONE || r == m->nmtf) { /* past the list, or new */
        r = m->nmtf;
        if ((rc = put_byte(m, S_TRACK, BYTE_ESC)) != TROVE_OK)
            return rc;
        if (ti == NONE) {
            if ((rc = put_var(m, 0)) != TROVE_OK || (rc = put_var(m, e->pid)) != TROVE_OK ||
                (rc = put_var(m, e->tid)) != TROVE_OK ||
                (rc = track_new(m, e->pid, e->tid, base, &ti)) != TROVE_OK)
                return rc;
            known->has = 1;
            known->last = ti;
        } else if ((rc = put_var(m, 1 + (uint64_t)ti)) != TROVE_OK) {
            return rc;
        }
    } else if ((rc = put_byte(m, S_TRACK, (uint8_t)r)) != TROVE_OK) {
        return rc;
    }
    mtf_front(m, r, ti);
    t = &m->tracks[ti];
    if (e->kind == t->kind && e->extra == t->extra) {
        rc = put_byte(m, S_KIND, 0);
    } else if ((rc = put_byte(m, S_KIND, 1)) == TROVE_OK &&
               (rc = put_byte(m, S_EXTRA, e->kind)) == TROVE_OK) {
        rc = put_byte(m, S_EXTRA, e->extra);
    }
    if (rc != TROVE_OK)
        return rc;
    t->kind = e->kind;
    t->extra = e->extra;
    anchor = t->prev_start;
    while (t->depth > 0 && t->end[t->depth - 1] <= e->start_ns) {
        t->depth--;
        anchor = t->end[t->depth];
        popped = t->name[t->depth];
        k++;
    }
    if ((rc = put_small(m, S_POPS, k)) != TROVE_OK ||
        (rc = put_small(m, S_DEPTH, zz((int64_t)e->depth - (int64_t)t->depth))) != TROVE_OK)
        return rc;
    parent = e->depth > 0 && e->depth <= t->depth ? t->name[e->depth - 1] : NONE;
    if (!(c = name_ctx(m, ti, e->depth, parent, popped, e->kind)))
        return TROVE_ERR_NOMEM;
    for (r = 0; r < c->n && c->names[r] != e->name_id; r++)
        ;
    if (r < c->n) {
        rc = put_byte(m, S_NAME, (uint8_t)r);
    } else if ((rc = put_byte(m, S_NAME, NAME_ESC)) == TROVE_OK) {
        rc = put_var(m, e->name_id);
    }
    if (rc != TROVE_OK)
        return rc;
    name_front(c, r, e->name_id);
    gap = (uint64_t)((int64_t)(e->start_ns - anchor) / (int64_t)g);
    if (g == 1)
        gap = e->start_ns - anchor;
    {
        struct dslot *gs = gap_slot(m, e->name_id, k > 0);
        uint64_t pred;
        int stream;
        if (!gs)
            return TROVE_ERR_NOMEM;
        stream = gap_stream(m, gs, k, &pred);
        if ((rc = put_num(m, stream, zz((int64_t)(gap - pred)))) != TROVE_OK)
            return rc;
        gap_seen(gs, gap);
    }
    t->prev_start = e->start_ns;
    if (is_zone(e->kind)) {
        struct dslot *d = slot(&m->dur, e->name_id);
        uint64_t du = e->dur_ns / g, best = du, v;
        uint8_t how = 2;
        if (!d)
            return TROVE_ERR_NOMEM;
        if (d->has && (v = zz((int64_t)(du - d->last))) < best) {
            best = v;
            how = 0;
        }
        if (e->depth > 0 && e->depth <= t->depth) {
            uint64_t rem = (t->end[e->depth - 1] - e->start_ns) / g;
            if (t->end[e->depth - 1] >= e->start_ns && rem >= du && rem - du < best) {
                best = rem - du;
                how = 1;
            }
        }
        d->last = du;
        d->has = 1;
        if ((rc = put_byte(m, S_DURC, how)) != TROVE_OK ||
            (rc = put_num(m, dur_stream(m, 1, how), best)) != TROVE_OK)
            return rc;
        if ((rc = open_zone(t, e)) != TROVE_OK)
            return rc;
    } else if (e->kind == TROVE_KIND_COUNTER) {
        struct dslot *d = slot(&m->cnt, ((uint64_t)ti << 32) | e->name_id);
        uint64_t last;
        if (!d)
            return TROVE_ERR_NOMEM;
        last = d->has ? d->last : 0;
        d->last = e->dur_ns;
        d->has = 1;
        if ((rc = put_num(m, S_CNT, zz((int64_t)(e->dur_ns - last)))) != TROVE_OK)
            return rc;
    } else if ((rc = put_num(m, dur_stream(m, 0, 0), e->dur_ns)) != TROVE_OK) {
        return rc;
    }
    return TROVE_OK;
}

int trove__model_encode(struct trove__model *m, const struct trove_event *ev, size_t n,
                        int level, struct trove_bytes *out)
{
    struct trove_bytes z = {0};
    size_t zlen[S_COUNT_], start = out->len;
    uint64_t base = n ? ev[0].start_ns : 0, g = time_unit(ev, n);
    int rc;

    if ((rc = model_reset(m)) != TROVE_OK)
        return rc;
    m->version = TROVE__MODEL_VERSION;
    for (int i = 0; i < S_COUNT_; i++)
        m->s[i].len = 0;
    m->bitacc = 0;
    m->bitn = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].pad != 0)
            return TROVE_ERR_INVALID;
        if ((rc = encode_event(m, &ev[i], base, g)) != TROVE_OK)
            goto out;
    }
    if (m->bitn) { /* the last bits, in as few bytes as hold them */
        uint8_t b[8];
        trove__put_le64(b, m->bitacc);
        if ((rc = trove_bytes_append(&m->s[S_BITS], b, (m->bitn + 7) / 8)) != TROVE_OK)
            goto out;
    }
    if (!m->zc && !(m->zc = ZSTD_createCCtx())) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    /* each stream through zstd, kept as it is when that is no smaller */
    for (int i = 0; i < S_COUNT_; i++) {
        size_t bound = ZSTD_compressBound(m->s[i].len), r = 0;
        if ((rc = trove_bytes_reserve(&z, bound)) != TROVE_OK)
            goto out;
        if (m->s[i].len > 0 && i != S_BITS) {
            r = ZSTD_compressCCtx(m->zc, z.ptr + z.len, bound, m->s[i].ptr, m->s[i].len, level);
            if (ZSTD_isError(r)) {
                rc = TROVE_ERR_NOMEM;
                goto out;
            }
        }
        if (r == 0 || r >= m->s[i].len) {
            if (m->s[i].len)
                memcpy(z.ptr + z.len, m->s[i].ptr, m->s[i].len);
            r = m->s[i].len;
        }
        zlen[i] = r;
        z.len += r;
    }
    if ((rc = trove_bytes_append(out, (const uint8_t[]){TROVE__MODEL_VERSION}, 1)) == TROVE_OK &&
        (rc = put_var_to(out, base)) == TROVE_OK)
        rc = put_var_to(out, g);
    for (int i = 0; i < S_COUNT_ && rc == TROVE_OK; i++)
        if ((rc = put_var_to(out, m->s[i].len)) == TROVE_OK)
            rc = put_var_to(out, zlen[i]);
    if (rc == TROVE_OK)
        rc = trove_bytes_append(out, z.ptr, z.len);
out:
    if (rc != TROVE_OK)
        out->len = start;
    trove_bytes_free(&z);
    return rc;
}

/* ---- decoding ---------------------------------------------------------------------------- */

struct rd {
    unsigned version;
    const uint8_t *p[S_COUNT_];
    size_t len[S_COUNT_], at[S_COUNT_];
    uint64_t bit; /* S_BITS: bits read */
};

static int get_byte(struct rd *r, int s, uint8_t *v)
{
    if (r->at[s] >= r->len[s])
        return TROVE_ERR_CORRUPT;
    *v = r->p[s][r->at[s]++];
    return TROVE_OK;
}

static int get_var_at(const uint8_t *p, size_t len, size_t *at, uint64_t *v)
{
    int why;
    const uint8_t *q = trove_get_varint(p + *at, p + len, 64, v, &why);
    if (!q)
        return TROVE_ERR_CORRUPT;
    *at = (size_t)(q - p);
    return TROVE_OK;
}

static int get_var(struct rd *r, uint64_t *v)
{
    return get_var_at(r->p[S_VARS], r->len[S_VARS], &r->at[S_VARS], v);
}

static int get_small(struct rd *r, int s, uint64_t *v)
{
    uint8_t b;
    if (get_byte(r, s, &b) != TROVE_OK)
        return TROVE_ERR_CORRUPT;
    if (b < BYTE_ESC) {
        *v = b;
        return TROVE_OK;
    }
    if (get_var(r, v) != TROVE_OK || *v > UINT64_MAX - BYTE_ESC)
        return TROVE_ERR_CORRUPT;
    *v += BYTE_ESC;
    return TROVE_OK;
}

static int get_bits(struct rd *r, unsigned n, uint64_t *v)
{
    uint64_t x = 0;
    unsigned got = 0;
    if (n > (uint64_t)r->len[S_BITS] * 8 - r->bit)
        return TROVE_ERR_CORRUPT;
    if (n <= 56 && (r->bit >> 3) + 8 <= r->len[S_BITS]) { /* one load holds them */
        *v = (trove__get_le64(r->p[S_BITS] + (r->bit >> 3)) >> (r->bit & 7)) &
             ((1ull << n) - 1);
        r->bit += n;
        return TROVE_OK;
    }
    while (got < n) {
        unsigned off = (unsigned)(r->bit & 7), take = 8 - off;
        uint64_t byte = r->p[S_BITS][r->bit >> 3] >> off;
        if (take > n - got)
            take = n - got;
        x |= (byte & ((1u << take) - 1)) << got;
        got += take;
        r->bit += take;
    }
    *v = x;
    return TROVE_OK;
}

static int get_num(struct rd *r, int s, uint64_t *v)
{
    uint8_t b;
    uint64_t low = 0;
    if (get_byte(r, s, &b) != TROVE_OK)
        return TROVE_ERR_CORRUPT;
    if (r->version >= 2 && b >= 6) { /* 2 × length + the bit under the top one */
        unsigned len = b / 2u;
        if (len > 64 || get_bits(r, len - 2, &low) != TROVE_OK)
            return TROVE_ERR_CORRUPT;
        *v = (1ull << (len - 1)) | ((uint64_t)(b & 1) << (len - 2)) | low;
        return TROVE_OK;
    }
    if (b > (r->version >= 2 ? 2 : 64))
        return TROVE_ERR_CORRUPT;
    if (b <= 1) {
        *v = b;
        return TROVE_OK;
    }
    if (get_bits(r, b - 1, &low) != TROVE_OK)
        return TROVE_ERR_CORRUPT;
    *v = (1ull << (b - 1)) | low;
    return TROVE_OK;
}

static int decode_event(struct trove__model *m, struct rd *r, uint64_t base, uint64_t g,
                        struct trove_event *e)
{
    struct mtrack *t;
    struct nlist *c;
    uint32_t ti, parent, popped = NONE;
    uint64_t v, k, anchor;
    uint8_t b;
    int rc;

    memset(e, 0, sizeof *e);
    if (get_byte(r, S_TRACK, &b) != TROVE_OK)
        return TROVE_ERR_CORRUPT;
    if (b != BYTE_ESC) {
        if (b >= m->nmtf)
            return TROVE_ERR_CORRUPT;
        ti = m->mtf[b];
        mtf_front(m, b, ti);
    } else {
        if (get_var(r, &v) != TROVE_OK)
            return TROVE_ERR_CORRUPT;
        if (v == 0) {
            uint64_t pid, tid;
            if (get_var(r, &pid) != TROVE_OK || get_var(r, &tid) != TROVE_OK ||
                pid > UINT32_MAX || tid > UINT32_MAX)
                return TROVE_ERR_CORRUPT;
            if ((rc = track_new(m, (uint32_t)pid, (uint32_t)tid, base, &ti)) != TROVE_OK)
                return rc;
        } else {
            if (v > m->ntracks)
                return TROVE_ERR_CORRUPT;
            ti = (uint32_t)(v - 1);
            for (uint32_t i = 0; i < m->nmtf; i++)
                if (m->mtf[i] == ti)
                    return TROVE_ERR_CORRUPT; /* a listed track is named by its rank */
        }
        mtf_front(m, m->nmtf, ti);
    }
    t = &m->tracks[ti];
    e->pid = t->pid;
    e->tid = t->tid;
    if (get_byte(r, S_KIND, &b) != TROVE_OK || b > 1)
        return TROVE_ERR_CORRUPT;
    if (b && (get_byte(r, S_EXTRA, &t->kind) != TROVE_OK ||
              get_byte(r, S_EXTRA, &t->extra) != TROVE_OK))
        return TROVE_ERR_CORRUPT;
    e->kind = t->kind;
    e->extra = t->extra;
    if (get_small(r, S_POPS, &k) != TROVE_OK || k > t->depth)
        return TROVE_ERR_CORRUPT;
    anchor = t->prev_start;
    for (uint64_t i = 0; i < k; i++) {
        t->depth--;
        anchor = t->end[t->depth];
        popped = t->name[t->depth];
    }
    if (get_small(r, S_DEPTH, &v) != TROVE_OK)
        return TROVE_ERR_CORRUPT;
    {
        int64_t d = (int64_t)t->depth + unzz(v);
        if (d < 0 || d > 255)
            return TROVE_ERR_CORRUPT;
        e->depth = (uint8_t)d;
    }
    parent = e->depth > 0 && e->depth <= t->depth ? t->name[e->depth - 1] : NONE;
    if (!(c = name_ctx(m, ti, e->depth, parent, popped, e->kind)))
        return TROVE_ERR_NOMEM;
    if (get_byte(r, S_NAME, &b) != TROVE_OK)
        return TROVE_ERR_CORRUPT;
    if (b == NAME_ESC) {
        if (get_var(r, &v) != TROVE_OK || v > UINT32_MAX)
            return TROVE_ERR_CORRUPT;
        e->name_id = (uint32_t)v;
        for (b = 0; b < c->n && c->names[b] != e->name_id; b++)
            ;
        if (b < c->n)
            return TROVE_ERR_CORRUPT; /* a remembered name is named by its rank */
    } else {
        if (b >= c->n)
            return TROVE_ERR_CORRUPT;
        e->name_id = c->names[b];
    }
    name_front(c, b, e->name_id);
    {
        struct dslot *gs = gap_slot(m, e->name_id, k > 0);
        uint64_t pred, gap;
        if (!gs)
            return TROVE_ERR_NOMEM;
        if (get_num(r, gap_stream(m, gs, (uint32_t)k, &pred), &v) != TROVE_OK)
            return TROVE_ERR_CORRUPT;
        gap = pred + (uint64_t)unzz(v);
        gap_seen(gs, gap);
        e->start_ns = anchor + gap * g;
    }
    t->prev_start = e->start_ns;
    if (is_zone(e->kind)) {
        struct dslot *d = slot(&m->dur, e->name_id);
        uint64_t du;
        if (!d)
            return TROVE_ERR_NOMEM;
        if (get_byte(r, S_DURC, &b) != TROVE_OK || b > 2 ||
            get_num(r, dur_stream(m, 1, b), &v) != TROVE_OK)
            return TROVE_ERR_CORRUPT;
        if (b == 0) {
            if (!d->has)
                return TROVE_ERR_CORRUPT;
            du = d->last + (uint64_t)unzz(v);
        } else if (b == 1) {
            uint64_t pe;
            if (e->depth == 0 || e->depth > t->depth)
                return TROVE_ERR_CORRUPT;
            pe = t->end[e->depth - 1];
            if (pe < e->start_ns || (pe - e->start_ns) / g < v)
                return TROVE_ERR_CORRUPT;
            du = (pe - e->start_ns) / g - v;
        } else {
            du = v;
        }
        d->last = du;
        d->has = 1;
        e->dur_ns = du * g;
        if ((rc = open_zone(t, e)) != TROVE_OK)
            return rc;
    } else if (e->kind == TROVE_KIND_COUNTER) {
        struct dslot *d = slot(&m->cnt, ((uint64_t)ti << 32) | e->name_id);
        if (!d)
            return TROVE_ERR_NOMEM;
        if (get_num(r, S_CNT, &v) != TROVE_OK)
            return TROVE_ERR_CORRUPT;
        e->dur_ns = (d->has ? d->last : 0) + (uint64_t)unzz(v);
        d->last = e->dur_ns;
        d->has = 1;
    } else if (get_num(r, dur_stream(m, 0, 0), &e->dur_ns) != TROVE_OK) {
        return TROVE_ERR_CORRUPT;
    }
    return TROVE_OK;
}

int trove__model_decode(struct trove__model *m, const uint8_t *p, size_t len, uint32_t count,
                        struct trove_event *out, size_t off, struct trove_diag *diag)
{
    struct rd r;
    uint64_t base, g, raw[S_COUNT_], stored[S_COUNT_], total = 0;
    size_t at = 1;
    int rc, ns;

    memset(&r, 0, sizeof r);
    if (len < 1 || p[0] < 1 || p[0] > TROVE__MODEL_VERSION)
        return TROVE_FAIL(diag, len < 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VERSION, off,
                          "model payload version %u; this build reads 1 to %u", len ? p[0] : 0,
                          TROVE__MODEL_VERSION);
    r.version = m->version = p[0];
    ns = streams_of(r.version);
    if (get_var_at(p, len, &at, &base) != TROVE_OK || get_var_at(p, len, &at, &g) != TROVE_OK ||
        g == 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off + at, "model payload: a bad base or unit");
    for (int i = 0; i < ns; i++) {
        if (get_var_at(p, len, &at, &raw[i]) != TROVE_OK ||
            get_var_at(p, len, &at, &stored[i]) != TROVE_OK)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off + at, "model payload: stream %d's lengths",
                              i);
        /* no stream holds more than 40 bytes an event (bits: 3 numbers of 63; varints: 3 of 10) */
        if (raw[i] > (uint64_t)count * 40 + 16 || stored[i] > len)
            return TROVE_FAIL(diag, TROVE_ERR_LIMIT, off + at,
                              "model payload: stream %d of %llu bytes (%llu stored) for %u events",
                              i, (unsigned long long)raw[i], (unsigned long long)stored[i], count);
        total += stored[i];
    }
    if (total != len - at)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off + at,
                          "model payload: streams of %llu bytes in %zu", (unsigned long long)total,
                          len - at);
    for (int i = 0; i < ns; i++) {
        if (stored[i] == raw[i]) {
            r.p[i] = p + at;
        } else {
            size_t got;
            if (!m->zd && !(m->zd = ZSTD_createDCtx()))
                return TROVE_ERR_NOMEM;
            m->s[i].len = 0;
            if ((rc = trove_bytes_reserve(&m->s[i], (size_t)raw[i] + 1)) != TROVE_OK)
                return rc;
            got = ZSTD_decompressDCtx(m->zd, m->s[i].ptr, (size_t)raw[i], p + at, (size_t)stored[i]);
            if (ZSTD_isError(got) || got != raw[i])
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off + at,
                                  "model payload: stream %d does not inflate to its %llu bytes", i,
                                  (unsigned long long)raw[i]);
            r.p[i] = m->s[i].ptr;
        }
        r.len[i] = (size_t)raw[i];
        at += (size_t)stored[i];
    }
    if ((rc = model_reset(m)) != TROVE_OK)
        return rc;
    for (uint32_t i = 0; i < count; i++)
        if ((rc = decode_event(m, &r, base, g, &out[i])) != TROVE_OK)
            return rc == TROVE_ERR_CORRUPT
                       ? TROVE_FAIL(diag, rc, off, "model payload: event %u does not decode", i)
                       : rc;
    for (int i = 0; i < ns; i++)
        if (i != S_BITS && r.at[i] != r.len[i])
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                              "model payload: stream %d has %zu bytes past its events", i,
                              r.len[i] - r.at[i]);
    if ((r.bit + 7) / 8 != r.len[S_BITS])
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, off,
                          "model payload: the bit stream has bytes past its events");
    return TROVE_OK;
}
