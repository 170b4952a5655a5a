/*
 * perfetto_profile_read.c: Perfetto's profile packets into a trove profile (the reader half
 * of perfetto_profile.h): PerfSample packets and the InternedData tables they refer to —
 * callstacks, frames, mappings, function names, source and mapping paths — as trove's
 * writer makes them (perfetto_profile.c) and as Perfetto's own profilers do.
 *
 * A decoder of outside bytes. An interned entry is noted by its iid (a varint read and
 * bounded here) and the span of its bytes in the input, nothing more, until a sample needs
 * it; then every field is read with the checked protobuf cursor, every iid looked up (one
 * that no entry has is TROVE_ERR_CORRUPT), a callstack bounded to MAX_FRAMES frames and a
 * mapping to MAX_PATH path parts before anything is built. Entries per table are bounded by
 * MAX_ENTRIES. A Perfetto frame becomes a trove frame once (cached by iid); its inline depth
 * comes from where it first appears in a callstack: after the frame of the same mapping and
 * address that it is inlined into, one deeper. A mapping's path is its parts joined by '/'.
 */
#include "perfetto_profile.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ENTRIES ((size_t)1 << 24)
#define MAX_FRAMES 4096
#define MAX_PATH 64
#define NONE UINT32_MAX

enum { T_FUNC, T_FRAME, T_STACK, T_MPATH, T_SPATH, T_MAP, T_COUNT };

/* iid -> index into the table's spans; open addressing, power-of-two capacity. */
struct table {
    uint64_t *key;
    uint32_t *val;     /* NONE: free */
    size_t n, cap;
    const uint8_t **span;
    size_t *len;
    uint32_t *frame;   /* T_FRAME only: the trove frame made of it, or NONE */
    size_t nspan, capspan;
};

struct trove__pfp {
    struct table t[T_COUNT];
    uint32_t path[MAX_FRAMES];  /* one callstack's trove frames, outermost first */
    uint64_t piid[MAX_FRAMES];  /* ... and their Perfetto iids */
    char join[8192];            /* a mapping's path, joined */
};

int trove__pfp_new(struct trove__pfp **out)
{
    *out = trove__calloc(1, sizeof **out);
    return *out ? TROVE_OK : TROVE_ERR_NOMEM;
}

void trove__pfp_free(struct trove__pfp *x)
{
    if (!x)
        return;
    for (int i = 0; i < T_COUNT; i++) {
        free(x->t[i].key);
        free(x->t[i].val);
        free(x->t[i].span);
        free(x->t[i].len);
        free(x->t[i].frame);
    }
    free(x);
}

void trove__pfp_clear(struct trove__pfp *x)
{
    for (int i = 0; x && i < T_COUNT; i++) {
        struct table *t = &x->t[i];
        for (size_t k = 0; k < t->cap; k++)
            t->val[k] = NONE;
        t->n = t->nspan = 0;
    }
}

static size_t slot(const struct table *t, uint64_t k)
{
    uint64_t h = k * 0x9E3779B97F4A7C15ULL;
    size_t i = (size_t)(h ^ (h >> 29)) & (t->cap - 1);
    while (t->val[i] != NONE && t->key[i] != k)
        i = (i + 1) & (t->cap - 1);
    return i;
}

static uint32_t lookup(const struct table *t, uint64_t k)
{
    return t->cap ? t->val[slot(t, k)] : NONE;
}

static int grow(struct table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    uint64_t *key = trove__malloc(cap * sizeof *key);
    uint32_t *val = trove__malloc(cap * sizeof *val);
    struct table nt;

    if (!key || !val) {
        free(key);
        free(val);
        return TROVE_ERR_NOMEM;
    }
    for (size_t i = 0; i < cap; i++)
        val[i] = NONE;
    nt = *t;
    nt.key = key;
    nt.val = val;
    nt.cap = cap;
    for (size_t i = 0; i < t->cap; i++)
        if (t->val[i] != NONE) {
            size_t j = slot(&nt, t->key[i]);
            key[j] = t->key[i];
            val[j] = t->val[i];
        }
    free(t->key);
    free(t->val);
    t->key = key;
    t->val = val;
    t->cap = cap;
    return TROVE_OK;
}

/* Note entry (iid, p[0..n)) of table t; the first of an iid wins. */
static int note(struct table *t, int is_frame, uint64_t iid, const uint8_t *p, size_t n)
{
    size_t j;
    int rc;
    if (lookup(t, iid) != NONE)
        return TROVE_OK;
    if (t->nspan >= MAX_ENTRIES)
        return TROVE_ERR_LIMIT;
    if ((t->n + 1) * 2 > t->cap && (rc = grow(t)) != TROVE_OK)
        return rc;
    if (t->nspan == t->capspan) {
        size_t cap = t->capspan ? t->capspan * 2 : 64;
        const uint8_t **sp = trove__realloc((void *)t->span, cap * sizeof *sp);
        size_t *ln;
        uint32_t *fr = NULL;
        if (!sp)
            return TROVE_ERR_NOMEM;
        t->span = sp;
        if (!(ln = trove__realloc(t->len, cap * sizeof *ln)))
            return TROVE_ERR_NOMEM;
        t->len = ln;
        if (is_frame && !(fr = trove__realloc(t->frame, cap * sizeof *fr)))
            return TROVE_ERR_NOMEM;
        if (is_frame)
            t->frame = fr;
        t->capspan = cap;
    }
    j = slot(t, iid);
    t->key[j] = iid;
    t->val[j] = (uint32_t)t->nspan;
    t->span[t->nspan] = p;
    t->len[t->nspan] = n;
    if (is_frame)
        t->frame[t->nspan] = NONE;
    t->nspan++;
    t->n++;
    return TROVE_OK;
}

static int corrupt(struct trove_diag *diag, const uint8_t *buf, const uint8_t *at,
                   const char *what)
{
    return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, (uint64_t)(at - buf), "Perfetto trace: %s", what);
}

int trove__pfp_interned(struct trove__pfp *x, const uint8_t *buf,
                        const struct trove__pb_field *f, struct trove_diag *diag)
{
    struct trove__pb m;
    struct trove__pb_field g;
    uint64_t iid = 0;
    int t, rc;

    switch (f->num) {
    case TROVE__PF_IN_FUNCTION_NAMES: t = T_FUNC; break;
    case TROVE__PF_IN_FRAMES: t = T_FRAME; break;
    case TROVE__PF_IN_CALLSTACKS: t = T_STACK; break;
    case TROVE__PF_IN_MAPPING_PATHS: t = T_MPATH; break;
    case TROVE__PF_IN_SOURCE_PATHS: t = T_SPATH; break;
    case TROVE__PF_IN_MAPPINGS: t = T_MAP; break;
    default: return 0;
    }
    if (f->wt != TROVE__PB_LEN)
        return 1; /* not a message: nothing to note */
    m = trove__pb_sub(f);
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK)
        if (g.num == 1 && g.wt == TROVE__PB_VARINT)
            iid = g.v;
    if (rc < 0)
        return corrupt(diag, buf, m.p, "a malformed interned profile entry");
    if (iid == 0)
        return 1; /* no key: nothing can refer to it */
    rc = note(&x->t[t], t == T_FRAME, iid, f->data, f->len);
    if (rc == TROVE_ERR_LIMIT)
        return TROVE_FAIL(diag, rc, (uint64_t)(f->data - buf),
                          "Perfetto trace: more than 2^24 interned profile entries of a kind");
    return rc != TROVE_OK ? rc : 1;
}

/* The entry of iid in table t, as a cursor; NULL-ish (end == p == NULL) when missing. */
static int entry(const struct trove__pfp *x, int t, uint64_t iid, struct trove__pb *out,
                 uint32_t *index_out)
{
    uint32_t k = lookup(&x->t[t], iid);
    if (k == NONE)
        return 0;
    out->p = x->t[t].span[k];
    out->end = out->p + x->t[t].len[k];
    if (index_out)
        *index_out = k;
    return 1;
}

/* The str of InternedString iid of table t, into the profile: its string id. */
static int string_of(struct trove__pfp *x, const uint8_t *buf, int t, uint64_t iid,
                     struct trove_profile *p, uint32_t *id_out, struct trove_diag *diag)
{
    struct trove__pb m;
    struct trove__pb_field g;
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc;

    if (!entry(x, t, iid, &m, NULL))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "Perfetto trace: a profile frame names string %llu, which no "
                          "interned entry has",
                          (unsigned long long)iid);
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK)
        if (g.num == 2 && g.wt == TROVE__PB_LEN) {
            s = g.data;
            n = g.len;
        }
    if (rc < 0)
        return corrupt(diag, buf, m.p, "a malformed interned string");
    if ((n && memchr(s, 0, n)) || n > TROVE_PROFILE_STRING_MAX)
        return TROVE_FAIL(diag, n > TROVE_PROFILE_STRING_MAX ? TROVE_ERR_LIMIT : TROVE_ERR_CORRUPT,
                          (uint64_t)(s - buf), "Perfetto trace: %s",
                          "a profile string with a NUL byte or over 65,535 bytes");
    return trove_profile_string(p, n ? (const char *)s : "", n, id_out);
}

/* Mapping iid's path (its parts joined by '/'), into the profile. */
static int mapping_path(struct trove__pfp *x, const uint8_t *buf, uint64_t iid,
                        struct trove_profile *p, uint32_t *id_out, struct trove_diag *diag)
{
    struct trove__pb m, sm;
    struct trove__pb_field g, h;
    size_t k = 0, parts = 0;
    int rc;

    if (iid == 0)
        return trove_profile_string(p, TROVE_PROFILE_UNKNOWN_MODULE,
                                    strlen(TROVE_PROFILE_UNKNOWN_MODULE), id_out);
    if (!entry(x, T_MAP, iid, &m, NULL))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "Perfetto trace: a profile frame's mapping %llu is not interned",
                          (unsigned long long)iid);
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        if (g.num != 7 || (g.wt != TROVE__PB_VARINT && g.wt != TROVE__PB_LEN))
            continue;
        sm.p = g.wt == TROVE__PB_LEN ? g.data : NULL; /* packed, or one value */
        sm.end = g.wt == TROVE__PB_LEN ? g.data + g.len : NULL;
        for (;;) {
            uint64_t piid = g.v;
            struct trove__pb pm;
            const uint8_t *s = NULL;
            size_t n = 0;
            if (sm.p) {
                int why = 0;
                const uint8_t *q;
                if (sm.p >= sm.end)
                    break;
                if (!(q = trove_get_varint(sm.p, sm.end, 64, &piid, &why)))
                    return corrupt(diag, buf, sm.p, "a malformed mapping path");
                sm.p = q;
            }
            if (++parts > MAX_PATH)
                return TROVE_FAIL(diag, TROVE_ERR_LIMIT, (uint64_t)(g.data ? g.data - buf : 0),
                                  "Perfetto trace: %s", "a mapping path of over 64 parts");
            if (!entry(x, T_MPATH, piid, &pm, NULL))
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                                  "Perfetto trace: a mapping's path part %llu is not interned",
                                  (unsigned long long)piid);
            while ((rc = trove__pb_next(&pm, &h)) == TROVE__PB_OK)
                if (h.num == 2 && h.wt == TROVE__PB_LEN) {
                    s = h.data;
                    n = h.len;
                }
            if (rc < 0)
                return corrupt(diag, buf, pm.p, "a malformed mapping path");
            if (k + (parts > 1) + n >= sizeof x->join)
                return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "Perfetto trace: %s",
                                  "a mapping path over 8 KiB");
            if (parts > 1)
                x->join[k++] = '/';
            if (n)
                memcpy(x->join + k, s, n);
            k += n;
            if (!sm.p)
                break;
        }
    }
    if (rc < 0)
        return corrupt(diag, buf, m.p, "a malformed mapping");
    if (memchr(x->join, 0, k))
        return corrupt(diag, buf, buf, "a mapping path with a NUL byte");
    return trove_profile_string(p, x->join, k, id_out);
}

/* Perfetto frame piid, at position i of the callstack (x->path, x->piid before it), as a
 * trove frame. */
static int frame_of(struct trove__pfp *x, const uint8_t *buf, uint64_t piid, size_t i,
                    struct trove_profile *p, uint32_t *id_out, struct trove_diag *diag)
{
    struct trove_profile_frame fr;
    struct trove__pb m;
    struct trove__pb_field g;
    uint64_t fn = 0, map = 0, sp = 0;
    uint32_t k;
    int rc;

    if (!entry(x, T_FRAME, piid, &m, &k))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "Perfetto trace: a callstack's frame %llu is not interned",
                          (unsigned long long)piid);
    if (x->t[T_FRAME].frame[k] != NONE) {
        *id_out = x->t[T_FRAME].frame[k];
        return TROVE_OK;
    }
    memset(&fr, 0, sizeof fr);
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        if (g.wt != TROVE__PB_VARINT)
            continue;
        if (g.num == 2)
            fn = g.v;
        else if (g.num == 3)
            map = g.v;
        else if (g.num == 4)
            fr.address = g.v;
        else if (g.num == 5)
            sp = g.v;
        else if (g.num == 6)
            fr.line = (uint32_t)g.v;
    }
    if (rc < 0)
        return corrupt(diag, buf, m.p, "a malformed profile frame");
    if ((fn && (rc = string_of(x, buf, T_FUNC, fn, p, &fr.function, diag)) != TROVE_OK) ||
        (sp && (rc = string_of(x, buf, T_SPATH, sp, p, &fr.file, diag)) != TROVE_OK) ||
        (rc = mapping_path(x, buf, map, p, &fr.module, diag)) != TROVE_OK)
        return rc;
    if (i > 0 && x->piid[i - 1] != piid) { /* inlined into the frame before it? */
        const struct trove_profile_frame *prev = trove_profile_frame_get(p, x->path[i - 1]);
        if (prev && prev->module == fr.module && prev->address == fr.address)
            fr.inline_depth = prev->inline_depth + 1;
    }
    if ((rc = trove_profile_frame(p, &fr, id_out)) != TROVE_OK)
        return rc;
    x->t[T_FRAME].frame[k] = *id_out;
    return TROVE_OK;
}

int trove__pfp_sample(struct trove__pfp *x, const uint8_t *buf, const struct trove__pb_field *f,
                      uint64_t ts, struct trove_profile *p, int *added,
                      struct trove_diag *diag)
{
    struct trove__pb m = trove__pb_sub(f), cs;
    struct trove__pb_field g;
    struct trove_profile_sample s;
    uint64_t csid = 0;
    size_t n = 0;
    int not_sample = 0;
    uint32_t leaf_first[MAX_FRAMES];
    int rc;

    *added = 0;
    memset(&s, 0, sizeof s);
    s.time_ns = ts;
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        if (g.num == 17 || g.num == 18)
            not_sample = 1; /* a record of lost or skipped samples */
        if (g.wt != TROVE__PB_VARINT)
            continue;
        if (g.num == 2)
            s.pid = (uint32_t)g.v;
        else if (g.num == 3)
            s.tid = (uint32_t)g.v;
        else if (g.num == 4)
            csid = g.v;
    }
    if (rc < 0)
        return corrupt(diag, buf, m.p, "a malformed perf sample");
    if (not_sample)
        return TROVE_OK;
    if (csid) {
        if (!entry(x, T_STACK, csid, &cs, NULL))
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, (uint64_t)(f->data - buf),
                              "Perfetto trace: a perf sample's callstack %llu is not interned",
                              (unsigned long long)csid);
        while ((rc = trove__pb_next(&cs, &g)) == TROVE__PB_OK) {
            struct trove__pb pk = {NULL, NULL};
            if (g.num != 2 || (g.wt != TROVE__PB_VARINT && g.wt != TROVE__PB_LEN))
                continue;
            if (g.wt == TROVE__PB_LEN)
                pk = trove__pb_sub(&g);
            for (;;) {
                uint64_t v = g.v;
                if (pk.p) {
                    int why = 0;
                    const uint8_t *q;
                    if (pk.p >= pk.end)
                        break;
                    if (!(q = trove_get_varint(pk.p, pk.end, 64, &v, &why)))
                        return corrupt(diag, buf, pk.p, "a malformed callstack");
                    pk.p = q;
                } else if (g.wt == TROVE__PB_LEN) {
                    break; /* an empty packed run */
                }
                if (n == MAX_FRAMES)
                    return TROVE_FAIL(diag, TROVE_ERR_LIMIT, (uint64_t)(f->data - buf),
                                      "Perfetto trace: %s", "a callstack of over 4,096 frames");
                if ((rc = frame_of(x, buf, v, n, p, &x->path[n], diag)) != TROVE_OK)
                    return rc;
                x->piid[n++] = v;
                if (!pk.p)
                    break;
            }
        }
        if (rc < 0)
            return corrupt(diag, buf, cs.p, "a malformed callstack");
    }
    for (size_t i = 0; i < n; i++)
        leaf_first[i] = x->path[n - 1 - i];
    if ((rc = trove_profile_stack_path(p, leaf_first, n, &s.stack)) != TROVE_OK ||
        (rc = trove_profile_sample(p, &s)) != TROVE_OK)
        return rc;
    *added = 1;
    return TROVE_OK;
}
