/*
 * sample_profile.c: a sample set, symbolized, into the profile model (trove_sample_profile,
 * trove/sample.h; the model is trove/profile.h).
 *
 * Each distinct (module, lookup offset) of the set is symbolized once per call and becomes
 * one or more profile frames (one per inline level), whose ids are kept for the call
 * (addr_map.c); a sample is then its frames' ids, leaf first, made a stack by
 * trove_profile_stack_path. Lookup offsets are the leaf's own and each caller's return
 * address minus one, so a caller is named by its call instruction (the return address can
 * be the first instruction of the next line, or of the next function after a call that
 * does not return). Samples are added in time order (a stable sort of the set's order),
 * whatever order the set holds them in.
 */
#include "trove/sample.h"
#include "addr_map.h"
#include "common/alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SYMBOLS 64
/* Frames of one sample after inline expansion, at most (deeper ones are dropped). */
#define MAX_EXPANDED (TROVE_SAMPLE_MAX_FRAMES * 8)

struct build {
    struct trove_symbolizer *sym;
    const struct trove_sample_set *set;
    struct trove_profile *p;
    uint32_t *mod_path;  /* per set module: the string id of its path (UINT32_MAX: not yet) */
    uint32_t unknown;    /* "[unknown]" */
    struct trove__addr_map seen; /* (module, lookup offset) -> its frames in ids */
    uint32_t *ids;
    size_t n_ids, cap_ids;
};

static int str(struct build *b, const char *s, uint32_t *id)
{
    size_t len = strlen(s);
    if (len > TROVE_PROFILE_STRING_MAX)
        len = TROVE_PROFILE_STRING_MAX;
    return trove_profile_string(b->p, s, len, id);
}

/* The profile frames of (module, offset) into b->ids, innermost first: *first, *n. */
static int frames_of(struct build *b, uint32_t module, uint64_t offset, uint32_t *first,
                     uint32_t *n)
{
    struct trove_symbol sy[MAX_SYMBOLS];
    struct trove_sample_module mm;
    size_t ns = 0;
    char name[4200];
    const char *base;
    uint32_t mpath, fname;
    int rc;

    if (module == TROVE_SAMPLE_NO_MODULE) {
        mpath = b->unknown;
        base = TROVE_PROFILE_UNKNOWN_MODULE;
    } else {
        if ((rc = trove_sample_set_module_get(b->set, module, &mm)) != TROVE_OK)
            return rc;
        if (b->mod_path[module] == UINT32_MAX &&
            (rc = str(b, mm.path, &b->mod_path[module])) != TROVE_OK)
            return rc;
        mpath = b->mod_path[module];
        base = strrchr(mm.path, '/') ? strrchr(mm.path, '/') + 1 : mm.path;
        if ((rc = trove_symbolizer_lookup(b->sym, &mm, offset, sy, MAX_SYMBOLS, &ns)) != TROVE_OK)
            return rc;
    }
    if (b->n_ids + (ns ? ns : 1) > b->cap_ids) {
        size_t c = b->cap_ids ? b->cap_ids * 2 : 4096;
        uint32_t *q;
        while (c < b->n_ids + MAX_SYMBOLS)
            c *= 2;
        if (!(q = trove__realloc(b->ids, c * sizeof *q)))
            return TROVE_ERR_NOMEM;
        b->ids = q;
        b->cap_ids = c;
    }
    *first = (uint32_t)b->n_ids;
    /* "MODULE+0xOFFSET", for an address without a symbol (made only when needed, so that
     * the profile's strings are the ones its frames use). */
    fname = UINT32_MAX;
    for (size_t i = 0; i < (ns ? ns : 1) && fname == UINT32_MAX; i++)
        if (ns == 0 || !sy[i].function) {
            snprintf(name, sizeof name, "%s+0x%" PRIx64, base, offset);
            if ((rc = str(b, name, &fname)) != TROVE_OK)
                return rc;
        }
    if (ns == 0) {
        struct trove_profile_frame f = {mpath, fname, 0, 0, offset, 0};
        if ((rc = trove_profile_frame(b->p, &f, &b->ids[b->n_ids])) != TROVE_OK)
            return rc;
        b->n_ids++;
    }
    for (size_t i = 0; i < ns; i++) {
        struct trove_profile_frame f = {mpath, fname, 0, sy[i].line, offset, sy[i].inline_depth};
        if ((sy[i].function && (rc = str(b, sy[i].function, &f.function)) != TROVE_OK) ||
            (sy[i].file && (rc = str(b, sy[i].file, &f.file)) != TROVE_OK) ||
            (rc = trove_profile_frame(b->p, &f, &b->ids[b->n_ids])) != TROVE_OK)
            return rc;
        b->n_ids++;
    }
    *n = (uint32_t)(b->n_ids - *first);
    return TROVE_OK;
}

struct order {
    uint64_t time_ns;
    size_t i;
};

static int order_cmp(const void *x, const void *y)
{
    const struct order *a = x, *b = y;
    if (a->time_ns != b->time_ns)
        return a->time_ns < b->time_ns ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* The set's context switches into p, in time order. The sampler reads them already merged
 * in time order, so an insertion sort is one pass; it is stable, so an out keeps its place
 * before the in of the same time that follows it. */
static int add_switches(const struct trove_sample_set *set, size_t first, struct trove_profile *p)
{
    size_t n;
    const struct trove_sample_switch *sw = trove_sample_set_switches(set, &n);
    struct trove_profile_switch *rows;
    int rc = TROVE_OK;
    if (first >= n)
        return TROVE_OK;
    sw += first;
    n -= first;
    if (!(rows = trove__mallocarray(n, sizeof *rows)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        rows[i] = (struct trove_profile_switch){
            sw[i].time_ns, sw[i].pid, sw[i].tid,
            sw[i].out ? TROVE_PROFILE_SWITCH_OUT | (sw[i].preempt ? TROVE_PROFILE_SWITCH_PREEMPT : 0)
                      : 0};
    for (size_t i = 1; i < n; i++) {
        struct trove_profile_switch x = rows[i];
        size_t j = i;
        for (; j > 0 && rows[j - 1].time_ns > x.time_ns; j--)
            rows[j] = rows[j - 1];
        rows[j] = x;
    }
    for (size_t i = 0; i < n && rc == TROVE_OK; i++)
        rc = trove_profile_switch(p, &rows[i]);
    free(rows);
    return rc;
}

int trove_sample_profile(struct trove_symbolizer *sym, const struct trove_sample_set *set,
                         struct trove_profile *p)
{
    return trove_sample_profile_since(sym, set, 0, 0, p);
}

int trove_sample_profile_since(struct trove_symbolizer *sym, const struct trove_sample_set *set,
                               size_t first_sample, size_t first_switch, struct trove_profile *p)
{
    struct build b;
    struct order *ord = NULL;
    uint32_t *stack = NULL;
    size_t n = trove_sample_set_count(set), n_mod = trove_sample_set_module_count(set);
    int rc = TROVE_ERR_NOMEM;

    if (!sym || !set || !p)
        return TROVE_ERR_INVALID;
    memset(&b, 0, sizeof b);
    b.sym = sym;
    b.set = set;
    b.p = p;
    if (!(b.mod_path = trove__mallocarray(n_mod ? n_mod : 1, sizeof *b.mod_path)) ||
        !(ord = trove__mallocarray(n ? n : 1, sizeof *ord)) ||
        !(stack = trove__mallocarray(MAX_EXPANDED, sizeof *stack)))
        goto out;
    for (size_t i = 0; i < n_mod; i++)
        b.mod_path[i] = UINT32_MAX;
    if ((rc = str(&b, TROVE_PROFILE_UNKNOWN_MODULE, &b.unknown)) != TROVE_OK)
        goto out;
    if (first_sample > n)
        first_sample = n;
    for (size_t i = first_sample; i < n; i++) {
        struct trove_sample s;
        trove_sample_set_get(set, i, &s);
        ord[i - first_sample] = (struct order){s.time_ns, i};
    }
    n -= first_sample;
    qsort(ord, n, sizeof *ord, order_cmp);
    for (size_t k = 0; k < n; k++) {
        struct trove_sample s;
        struct trove_profile_sample row;
        size_t depth = 0;
        trove_sample_set_get(set, ord[k].i, &s);
        for (uint32_t j = 0; j < s.n_frames; j++) {
            uint32_t module = s.frames[j].module;
            uint64_t off = s.frames[j].offset - (j > 0 && s.frames[j].offset > 0);
            const struct trove__addr_entry *at = trove__addr_map_get(&b.seen, module, off);
            if (!at) {
                uint32_t first, cnt;
                if ((rc = frames_of(&b, module, off, &first, &cnt)) != TROVE_OK ||
                    (rc = trove__addr_map_put(&b.seen, module, off, first, cnt)) != TROVE_OK)
                    goto out;
                at = trove__addr_map_get(&b.seen, module, off);
            }
            for (uint32_t q = 0; q < at->n && depth < MAX_EXPANDED; q++)
                stack[depth++] = b.ids[at->first + q];
        }
        row = (struct trove_profile_sample){s.time_ns, s.pid, s.tid, TROVE_PROFILE_ROOT};
        if ((rc = trove_profile_stack_path(p, stack, depth, &row.stack)) != TROVE_OK ||
            (rc = trove_profile_sample(p, &row)) != TROVE_OK)
            goto out;
    }
    if ((rc = add_switches(set, first_switch, p)) != TROVE_OK)
        goto out;
    rc = TROVE_OK;
out:
    free(b.mod_path);
    trove__addr_map_free(&b.seen);
    free(b.ids);
    free(ord);
    free(stack);
    return rc;
}
