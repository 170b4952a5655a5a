/*
 * profile_json.c: a capture's profile over a time range as the JSON the viewer draws
 * (profile_json.h; docs/serve.md, "GET /api/captures/NAME/profile").
 *
 * One pass over the samples counts the samples of each stack in range; everything else is
 * made from those counts and the stack trie, so the work is the samples plus the rows:
 *
 *   top     trove_profile_top (the library's, as `trove top` uses it), cut to the limit;
 *           each function's line is the line of its frame with the most self samples.
 *   flame   the trie's counts summed up to the root (a parent's id is below its
 *           children's, so one pass from the last stack down does it), then the stacks
 *           merged by function: two frames of one function (two lines of it) under the same
 *           node are one node, as a flame graph draws them. Nodes under 1/1000 of the
 *           samples are pruned (a node never holds more than its parent, so a kept node's
 *           parent is kept), so are those deeper than FLAME_DEPTH (a recursion keeps its
 *           top), and past FLAME_MAX nodes only the shallowest stay.
 *           Children are sorted by value, then name, so the answer does not depend on the
 *           order the rows were added in. Written without recursion: a stack can be as deep
 *           as the profile makes it.
 *   threads the samples' (tid, pid) pairs sorted, counted per tid; named by the capture's
 *           names (its first pid's thread name); the TROVE__PROFILE_THREADS_MAX busiest.
 *   ticks   every k-th sample in range, k = in range / TICKS_MAX, spread evenly.
 *
 * Strings come from the sampler (ELF and DWARF names, paths), which need not be UTF-8:
 * each is written as valid JSON and UTF-8, a byte that is not UTF-8 as U+FFFD, and cut to
 * STRING_MAX bytes at a character's start. A failed allocation is sticky: the writer stops,
 * and the output goes back to the length it had.
 */
#include "profile_json.h"
#include "common/alloc.h"
#include "common/hash.h"
#include "common/utf8.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

/* ---- the writer ------------------------------------------------------------------------ */

struct out {
    struct trove_bytes *b;
    int rc; /* sticky: TROVE_OK until an append fails */
};

static void put(struct out *o, const void *s, size_t n)
{
    if (o->rc == TROVE_OK)
        o->rc = trove_bytes_append(o->b, s, n);
}

static void puts_(struct out *o, const char *s) { put(o, s, strlen(s)); }

static void put_u64(struct out *o, uint64_t v)
{
    char s[24];
    int n = snprintf(s, sizeof s, "%" PRIu64, v);
    put(o, s, (size_t)n);
}

/* s[0..len) as a JSON string: valid UTF-8 whatever the bytes, at most STRING_MAX of them. */
static void put_str(struct out *o, const char *str, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *s = (const uint8_t *)str;
    size_t cut = len, i = 0;

    if (len > TROVE__PROFILE_STRING_MAX) { /* back to a character's first byte */
        cut = TROVE__PROFILE_STRING_MAX;
        while (cut > 0 && (s[cut] & 0xc0) == 0x80)
            cut--;
    }
    put(o, "\"", 1);
    while (i < cut) {
        size_t ok = trove__utf8_valid_prefix(s + i, cut - i), run = i;
        for (size_t j = i; j < i + ok; j++) { /* the valid run, escaped where JSON says */
            uint8_t c = s[j];
            if (c == '"' || c == '\\' || c < 0x20) {
                char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                put(o, s + run, j - run);
                if (c == '"' || c == '\\') {
                    e[1] = (char)c;
                    put(o, e, 2);
                } else {
                    put(o, e, 6);
                }
                run = j + 1;
            }
        }
        put(o, s + run, i + ok - run);
        i += ok;
        if (i < cut) { /* a byte that starts no character */
            put(o, "\\ufffd", 6);
            i++;
        }
    }
    if (cut < len)
        put(o, "\xe2\x80\xa6", 3); /* … */
    put(o, "\"", 1);
}

static void put_pstr(struct out *o, const struct trove_profile *p, uint32_t id)
{
    size_t len = 0;
    const char *s = trove_profile_string_get(p, id, &len);
    put_str(o, s ? s : "", s ? len : 0);
}

/* ---- the flame graph ------------------------------------------------------------------- */

struct node {
    uint32_t parent, module, function; /* parent: NONE for the root */
    uint32_t child, next;              /* the first kept child, the next kept sibling */
    uint32_t depth;                    /* the root's children are 1 */
    uint64_t value;
};

static int str_cmp(const struct trove_profile *p, uint32_t a, uint32_t b)
{
    size_t la, lb;
    const char *sa = trove_profile_string_get(p, a, &la), *sb = trove_profile_string_get(p, b, &lb);
    int c = memcmp(sa, sb, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

/* Is node a before node b? By depth (by_depth), else by parent; then by value (descending),
 * then by name: siblings in the order they are drawn, or the shallowest nodes first. */
static int node_before(const struct trove_profile *p, const struct node *n, int by_depth,
                       uint32_t a, uint32_t b)
{
    int c;
    if (by_depth && n[a].depth != n[b].depth)
        return n[a].depth < n[b].depth;
    if (!by_depth && n[a].parent != n[b].parent)
        return n[a].parent < n[b].parent;
    if (n[a].value != n[b].value)
        return n[a].value > n[b].value;
    if ((c = str_cmp(p, n[a].function, n[b].function)) != 0)
        return c < 0;
    return str_cmp(p, n[a].module, n[b].module) < 0;
}

/* Stable merge sort of v[0..k) (node ids) by node_before, through tmp. */
static void sort_nodes(const struct trove_profile *p, const struct node *n, int by_depth,
                       uint32_t *v, uint32_t *tmp, size_t k)
{
    size_t h, i, j, m;
    if (k < 2)
        return;
    h = k / 2;
    sort_nodes(p, n, by_depth, v, tmp, h);
    sort_nodes(p, n, by_depth, v + h, tmp, k - h);
    for (i = 0, j = h, m = 0; i < h && j < k;)
        tmp[m++] = node_before(p, n, by_depth, v[j], v[i]) ? v[j++] : v[i++];
    while (i < h)
        tmp[m++] = v[i++];
    while (j < k)
        tmp[m++] = v[j++];
    memcpy(v, tmp, k * sizeof *v);
}

static void open_node(struct out *o, const struct trove_profile *p, const struct node *nd)
{
    puts_(o, "{\"name\":");
    if (nd->parent == NONE)
        puts_(o, "\"all\"");
    else
        put_pstr(o, p, nd->function);
    puts_(o, ",\"value\":");
    put_u64(o, nd->value);
    puts_(o, ",\"children\":[");
}

/*
 * The flame graph of the stacks' counts (count[0..n_stack), the root's samples total).
 * Returns TROVE_OK or TROVE_ERR_NOMEM (nothing written).
 */
static int flame(struct out *o, const struct trove_profile *p, const uint64_t *count,
                 size_t n_stack, uint64_t total)
{
    uint64_t *value = NULL, thr;
    uint32_t *mnode = NULL, *ix = NULL, *kept = NULL, *tmp = NULL, *tail = NULL;
    struct node *nd = NULL;
    size_t used = 0, ix_cap = 16, n_nodes = 1, n_kept;
    int rc = TROVE_ERR_NOMEM;

    if (!(value = trove__mallocarray(n_stack, sizeof *value)) ||
        !(mnode = trove__mallocarray(n_stack, sizeof *mnode)))
        goto out;
    memcpy(value, count, n_stack * sizeof *value);
    for (size_t st = n_stack - 1; st >= 1; st--) {
        value[trove_profile_stack_get(p, (uint32_t)st)->parent] += value[st];
        used += value[st] > 0;
    }
    while (ix_cap < 2 * (used + 1))
        ix_cap *= 2;
    if (!(nd = trove__mallocarray(used + 1, sizeof *nd)) ||
        !(ix = trove__calloc(ix_cap, sizeof *ix)))
        goto out;
    nd[0] = (struct node){NONE, 0, 0, NONE, NONE, 0, total};
    mnode[0] = 0;
    /* Merge the stacks by (parent node, function), parents first. */
    for (uint32_t st = 1; st < n_stack; st++) {
        const struct trove_profile_stack *row = trove_profile_stack_get(p, st);
        const struct trove_profile_frame *fr;
        uint32_t pn;
        size_t j;
        mnode[st] = NONE;
        if (!value[st])
            continue;
        fr = trove_profile_frame_get(p, row->frame);
        pn = mnode[row->parent];
        assert(pn != NONE); /* a parent holds at least its child's samples */
        j = (size_t)trove__mix64(((uint64_t)pn << 40) ^ ((uint64_t)fr->module << 20) ^
                                 fr->function) & (ix_cap - 1);
        while (ix[j] && !(nd[ix[j]].parent == pn && nd[ix[j]].module == fr->module &&
                          nd[ix[j]].function == fr->function))
            j = (j + 1) & (ix_cap - 1);
        if (!ix[j]) {
            nd[n_nodes] = (struct node){pn, fr->module, fr->function, NONE, NONE,
                                        nd[pn].depth + 1, 0};
            ix[j] = (uint32_t)n_nodes++;
        }
        nd[ix[j]].value += value[st];
        mnode[st] = ix[j];
    }
    /* Prune: at least 1/PRUNE of the samples and at most FLAME_DEPTH deep; then, past
     * FLAME_MAX nodes, the shallowest (by value within a depth). Each rule keeps every kept
     * node's parent. */
    thr = (total + TROVE__PROFILE_FLAME_PRUNE - 1) / TROVE__PROFILE_FLAME_PRUNE;
    if (thr == 0)
        thr = 1;
    n_kept = 0;
    for (size_t i = 1; i < n_nodes; i++)
        n_kept += nd[i].value >= thr && nd[i].depth <= TROVE__PROFILE_FLAME_DEPTH;
    if (!(kept = trove__mallocarray(n_kept + 1, sizeof *kept)) ||
        !(tmp = trove__mallocarray(n_kept + 1, sizeof *tmp)) ||
        !(tail = trove__mallocarray(n_nodes, sizeof *tail)))
        goto out;
    n_kept = 0;
    for (uint32_t i = 1; i < n_nodes; i++)
        if (nd[i].value >= thr && nd[i].depth <= TROVE__PROFILE_FLAME_DEPTH)
            kept[n_kept++] = i;
    if (n_kept > TROVE__PROFILE_FLAME_MAX - 1) {
        sort_nodes(p, nd, 1, kept, tmp, n_kept);
        n_kept = TROVE__PROFILE_FLAME_MAX - 1;
    }
    sort_nodes(p, nd, 0, kept, tmp, n_kept);
    for (size_t i = 0; i < n_nodes; i++)
        tail[i] = NONE;
    for (size_t i = 0; i < n_kept; i++) {
        uint32_t k = kept[i], par = nd[k].parent;
        if (tail[par] == NONE)
            nd[par].child = k;
        else
            nd[tail[par]].next = k;
        tail[par] = k;
    }
    /* Pre-order, iteratively: down to the first child, else close and go to the next
     * sibling, closing every parent left behind. */
    {
        uint32_t n = 0;
        open_node(o, p, &nd[0]);
        for (;;) {
            if (nd[n].child != NONE) {
                n = nd[n].child;
                open_node(o, p, &nd[n]);
                continue;
            }
            puts_(o, "]}");
            while (n != 0 && nd[n].next == NONE) {
                n = nd[n].parent;
                puts_(o, "]}");
            }
            if (n == 0)
                break;
            n = nd[n].next;
            puts_(o, ",");
            open_node(o, p, &nd[n]);
        }
    }
    rc = TROVE_OK;
out:
    free(value);
    free(mnode);
    free(ix);
    free(nd);
    free(kept);
    free(tmp);
    free(tail);
    return rc;
}

/* ---- threads --------------------------------------------------------------------------- */

struct thread {
    uint32_t tid, pid;
    uint64_t samples;
};

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int thread_cmp(const void *a, const void *b)
{
    const struct thread *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples < y->samples ? 1 : -1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

static int threads(struct out *o, const struct trove_profile *p, const struct trove_names *names,
                   uint64_t from, uint64_t to, uint64_t in_range)
{
    const struct trove_profile_sample *s = trove_profile_samples(p);
    size_t n = trove_profile_sample_count(p), k = 0, nt = 0;
    uint64_t *key = NULL;
    struct thread *t = NULL;

    if (in_range) {
        if (!(key = trove__mallocarray((size_t)in_range, sizeof *key)))
            return TROVE_ERR_NOMEM;
        for (size_t i = 0; i < n; i++)
            if (s[i].time_ns >= from && s[i].time_ns < to)
                key[k++] = (uint64_t)s[i].tid << 32 | s[i].pid;
        qsort(key, k, sizeof *key, u64_cmp);
        for (size_t i = 0; i < k; i++)
            nt += i == 0 || key[i] >> 32 != key[i - 1] >> 32;
        if (!(t = trove__mallocarray(nt, sizeof *t))) {
            free(key);
            return TROVE_ERR_NOMEM;
        }
        nt = 0;
        for (size_t i = 0; i < k; i++) { /* the thread's first (lowest) pid names it */
            uint32_t tid = (uint32_t)(key[i] >> 32);
            if (nt && t[nt - 1].tid == tid)
                t[nt - 1].samples++;
            else
                t[nt++] = (struct thread){tid, (uint32_t)key[i], 1};
        }
        qsort(t, nt, sizeof *t, thread_cmp);
    }
    puts_(o, ",\"threads\":[");
    for (size_t i = 0; i < nt && i < TROVE__PROFILE_THREADS_MAX; i++) {
        size_t len = 0;
        const char *name =
            names ? trove_names_get(names, TROVE_NAME_THREAD, t[i].pid, t[i].tid, &len) : NULL;
        puts_(o, i ? ",{\"tid\":" : "{\"tid\":");
        put_u64(o, t[i].tid);
        puts_(o, ",\"name\":");
        put_str(o, name ? name : "", name ? len : 0);
        puts_(o, ",\"samples\":");
        put_u64(o, t[i].samples);
        puts_(o, "}");
    }
    puts_(o, "]");
    free(key);
    free(t);
    return TROVE_OK;
}

/* ---- top ------------------------------------------------------------------------------- */

/* The top functions f[0..n), each with its line: that of its frame with the most self
 * samples (self_of[frame]), or without self samples its first frame that has a line. */
static int top(struct out *o, const struct trove_profile *p, const struct trove_profile_func *f,
               size_t n, const uint64_t *self_of)
{
    size_t n_frame = trove_profile_frame_count(p), cap = 16;
    uint32_t *ix = NULL, *line = NULL;
    uint64_t *best = NULL;

    while (cap < 2 * n + 2)
        cap *= 2;
    if (!(ix = trove__calloc(cap, sizeof *ix)) ||
        !(line = trove__calloc(n ? n : 1, sizeof *line)) ||
        !(best = trove__calloc(n ? n : 1, sizeof *best))) {
        free(ix);
        free(line);
        return TROVE_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) { /* (module, function) -> its entry; each pair is once */
        size_t j = (size_t)trove__mix64((uint64_t)f[i].module << 32 | f[i].function) & (cap - 1);
        while (ix[j])
            j = (j + 1) & (cap - 1);
        ix[j] = (uint32_t)i + 1;
    }
    for (uint32_t fi = 0; fi < n_frame; fi++) {
        const struct trove_profile_frame *fr = trove_profile_frame_get(p, fi);
        size_t j = (size_t)trove__mix64((uint64_t)fr->module << 32 | fr->function) & (cap - 1);
        while (ix[j] && !(f[ix[j] - 1].module == fr->module && f[ix[j] - 1].function == fr->function))
            j = (j + 1) & (cap - 1);
        if (!ix[j])
            continue;
        if (self_of[fi] > best[ix[j] - 1] || (best[ix[j] - 1] == 0 && line[ix[j] - 1] == 0)) {
            best[ix[j] - 1] = self_of[fi];
            line[ix[j] - 1] = fr->line;
        }
    }
    puts_(o, ",\"top\":[");
    for (size_t i = 0; i < n; i++) {
        puts_(o, i ? ",{\"function\":" : "{\"function\":");
        put_pstr(o, p, f[i].function);
        puts_(o, ",\"file\":");
        put_pstr(o, p, f[i].file);
        puts_(o, ",\"line\":");
        put_u64(o, line[i]);
        puts_(o, ",\"module\":");
        put_pstr(o, p, f[i].module);
        puts_(o, ",\"self\":");
        put_u64(o, f[i].self);
        puts_(o, ",\"total\":");
        put_u64(o, f[i].total);
        puts_(o, "}");
    }
    puts_(o, "]");
    free(ix);
    free(line);
    free(best);
    return TROVE_OK;
}

/* ---- the answer ------------------------------------------------------------------------ */

void trove__profile_span(const struct trove_profile *p, uint64_t events, uint64_t first_ns,
                         uint64_t end_ns, uint64_t *from_out, uint64_t *to_out)
{
    const struct trove_profile_sample *s = p ? trove_profile_samples(p) : NULL;
    size_t n = p ? trove_profile_sample_count(p) : 0;
    uint64_t from = UINT64_MAX, to = 0;

    if (events) {
        from = first_ns;
        to = end_ns;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i].time_ns < from)
            from = s[i].time_ns;
        if (s[i].time_ns >= to)
            to = s[i].time_ns == UINT64_MAX ? UINT64_MAX : s[i].time_ns + 1;
    }
    if (from > to) /* neither */
        from = to = 0;
    *from_out = from;
    *to_out = to;
}

int trove__profile_json(const struct trove_profile *p, const struct trove_names *names,
                        const struct trove__profile_query *q, struct trove_bytes *out)
{
    const struct trove_profile_sample *s;
    struct trove_profile_func *f = NULL;
    struct out o = {out, TROVE_OK};
    size_t n_stack, n_frame, n_sample, n_func = 0, start;
    uint64_t *count = NULL, *self_of = NULL, in_range = 0;
    int rc;

    if (!p || !q || !q->capture || !out || q->from_ns > q->to_ns)
        return TROVE_ERR_INVALID;
    start = out->len;
    n_stack = trove_profile_stack_count(p) + 1;
    n_frame = trove_profile_frame_count(p);
    n_sample = trove_profile_sample_count(p);
    s = trove_profile_samples(p);
    if ((rc = trove_profile_top(p, q->from_ns, q->to_ns, &f, &n_func, &in_range)) != TROVE_OK)
        goto out;
    rc = TROVE_ERR_NOMEM;
    if (!(count = trove__calloc(n_stack, sizeof *count)) ||
        !(self_of = trove__calloc(n_frame ? n_frame : 1, sizeof *self_of)))
        goto out;
    for (size_t i = 0; i < n_sample; i++)
        if (s[i].time_ns >= q->from_ns && s[i].time_ns < q->to_ns)
            count[s[i].stack]++;
    for (uint32_t st = 1; st < n_stack; st++)
        self_of[trove_profile_stack_get(p, st)->frame] += count[st];

    puts_(&o, "{\"capture\":");
    put_str(&o, q->capture, strlen(q->capture));
    puts_(&o, ",\"from_ns\":");
    put_u64(&o, q->from_ns);
    puts_(&o, ",\"to_ns\":");
    put_u64(&o, q->to_ns);
    puts_(&o, ",\"samples\":");
    put_u64(&o, in_range);
    if ((rc = threads(&o, p, names, q->from_ns, q->to_ns, in_range)) != TROVE_OK)
        goto out;
    if ((rc = top(&o, p, f, n_func < q->limit ? n_func : q->limit, self_of)) != TROVE_OK)
        goto out;
    puts_(&o, ",\"flame\":");
    if ((rc = flame(&o, p, count, n_stack, in_range)) != TROVE_OK)
        goto out;
    /* The ticks: the samples in range, every (in_range / k)-th of them. */
    {
        uint64_t k = in_range < TROVE__PROFILE_TICKS_MAX ? in_range : TROVE__PROFILE_TICKS_MAX;
        uint64_t r = 0, picked = 0;
        puts_(&o, ",\"ticks\":[");
        for (size_t i = 0; i < n_sample && picked < k; i++) {
            if (s[i].time_ns < q->from_ns || s[i].time_ns >= q->to_ns)
                continue;
            if (r++ != picked * in_range / k)
                continue;
            puts_(&o, picked++ ? ",[" : "[");
            put_u64(&o, s[i].tid);
            puts_(&o, ",");
            put_u64(&o, s[i].time_ns);
            puts_(&o, "]");
        }
        puts_(&o, "],\"ticks_dropped\":");
        put_u64(&o, in_range - k);
    }
    puts_(&o, "}\n");
    rc = o.rc;
    assert(rc != TROVE_OK || out->len - start <= TROVE__PROFILE_JSON_MAX);
out:
    if (rc != TROVE_OK)
        out->len = start;
    free(f);
    free(count);
    free(self_of);
    return rc;
}
