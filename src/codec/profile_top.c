/*
 * profile_top.c: the top functions of a profile over a time range (trove_profile_top) —
 * the core of `trove top` and of a viewer's top-functions table.
 *
 * One pass over the samples counts samples per stack; then each stack with samples gives
 * its count to the function of its leaf frame (self) and, walking its parents to the root,
 * to every function on it (total), once per stack: a per-function mark holds the last stack
 * that counted it, so recursion is counted once. The work is the samples in range plus, for
 * each distinct stack among them, its depth; the trie makes a stack shared by many samples
 * cost one walk. Functions are (module, name) pairs, found from the frames through a hash
 * index built for the call.
 */
#include "trove/profile.h"
#include "common/alloc.h"
#include "common/hash.h"

#include <stdlib.h>
#include <string.h>

struct func {
    struct trove_profile_func f;
    uint32_t mark; /* the last stack that counted it in total; 0: none */
};

static int str_cmp(const struct trove_profile *p, uint32_t a, uint32_t b)
{
    size_t la, lb;
    const char *sa = trove_profile_string_get(p, a, &la), *sb = trove_profile_string_get(p, b, &lb);
    int c = memcmp(sa, sb, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

static int func_before(const struct trove_profile *p, const struct trove_profile_func *a,
                       const struct trove_profile_func *b)
{
    int c;
    if (a->self != b->self)
        return a->self > b->self;
    if (a->total != b->total)
        return a->total > b->total;
    if ((c = str_cmp(p, a->function, b->function)) != 0)
        return c < 0;
    if ((c = str_cmp(p, a->module, b->module)) != 0)
        return c < 0;
    return str_cmp(p, a->file, b->file) < 0;
}

/* Stable merge sort of v[0..n) by func_before, through tmp[0..n). */
static void sort_funcs(const struct trove_profile *p, struct trove_profile_func *v,
                       struct trove_profile_func *tmp, size_t n)
{
    size_t h, i, j, k;
    if (n < 2)
        return;
    h = n / 2;
    sort_funcs(p, v, tmp, h);
    sort_funcs(p, v + h, tmp, n - h);
    for (i = 0, j = h, k = 0; i < h && j < n;)
        tmp[k++] = func_before(p, &v[j], &v[i]) ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

int trove_profile_top(const struct trove_profile *p, uint64_t from_ns, uint64_t to_ns,
                      struct trove_profile_func **out, size_t *n_out, uint64_t *samples_out)
{
    size_t n_stack, n_frame, n_sample, n_func = 0, ix_cap = 64, n_out_f = 0;
    uint64_t *count = NULL, in_range = 0;
    uint32_t *func_of = NULL, *ix = NULL;
    struct func *fn = NULL;
    struct trove_profile_func *res = NULL, *tmp = NULL;
    const struct trove_profile_sample *s;
    int rc = TROVE_ERR_NOMEM;

    if (!p || !out || !n_out)
        return TROVE_ERR_INVALID;
    *out = NULL;
    *n_out = 0;
    n_stack = trove_profile_stack_count(p) + 1;
    n_frame = trove_profile_frame_count(p);
    n_sample = trove_profile_sample_count(p);
    s = trove_profile_samples(p);
    while (ix_cap < n_frame * 2)
        ix_cap *= 2;
    if (!(count = trove__calloc(n_stack, sizeof *count)) ||
        !(func_of = trove__mallocarray(n_frame ? n_frame : 1, sizeof *func_of)) ||
        !(ix = trove__calloc(ix_cap, sizeof *ix)) ||
        !(fn = trove__mallocarray(n_frame ? n_frame : 1, sizeof *fn)))
        goto out;
    for (size_t i = 0; i < n_sample; i++)
        if (s[i].time_ns >= from_ns && s[i].time_ns < to_ns) {
            count[s[i].stack]++;
            in_range++;
        }
    /* The functions, in the order their first frames come. */
    for (uint32_t f = 0; f < n_frame; f++) {
        const struct trove_profile_frame *fr = trove_profile_frame_get(p, f);
        size_t j = (size_t)trove__mix64((uint64_t)fr->module << 32 | fr->function) & (ix_cap - 1);
        while (ix[j] && !(fn[ix[j] - 1].f.module == fr->module &&
                          fn[ix[j] - 1].f.function == fr->function))
            j = (j + 1) & (ix_cap - 1);
        if (!ix[j]) {
            fn[n_func] = (struct func){{fr->module, fr->function, fr->file, 0, 0}, 0};
            ix[j] = (uint32_t)++n_func;
        } else if (fn[ix[j] - 1].f.file == 0) {
            fn[ix[j] - 1].f.file = fr->file;
        }
        func_of[f] = ix[j] - 1;
    }
    for (uint32_t st = 1; st < n_stack; st++) {
        if (!count[st])
            continue;
        fn[func_of[trove_profile_stack_get(p, st)->frame]].f.self += count[st];
        for (uint32_t at = st; at != TROVE_PROFILE_ROOT;) {
            const struct trove_profile_stack *row = trove_profile_stack_get(p, at);
            struct func *g = &fn[func_of[row->frame]];
            if (g->mark != st) {
                g->mark = st;
                g->f.total += count[st];
            }
            at = row->parent;
        }
    }
    for (size_t i = 0; i < n_func; i++)
        n_out_f += fn[i].f.total > 0;
    if (n_out_f) {
        size_t k = 0;
        if (!(res = trove__mallocarray(n_out_f, sizeof *res)) ||
            !(tmp = trove__mallocarray(n_out_f, sizeof *tmp)))
            goto out;
        for (size_t i = 0; i < n_func; i++)
            if (fn[i].f.total > 0)
                res[k++] = fn[i].f;
        sort_funcs(p, res, tmp, n_out_f);
    }
    *out = res;
    *n_out = n_out_f;
    res = NULL;
    if (samples_out)
        *samples_out = in_range;
    rc = TROVE_OK;
out:
    free(count);
    free(func_of);
    free(ix);
    free(fn);
    free(res);
    free(tmp);
    return rc;
}
