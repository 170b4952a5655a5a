/*
 * summary_stats.c: per-name statistics of a range (trove_capture_stats) and the instances of
 * a name (trove_capture_find_json), from the summaries where they answer and from the
 * segments where they do not.
 *
 * Statistics: a node above level 0 whose segments all start their events inside the range
 * (and no track filter) gives its sketches; a segment at the range's ends is read and its
 * events that start in the range counted one by one, with the self times its node would
 * have given them. Both add into the same accumulators: exact count, total, self, min and
 * max, and bucket counts from which the quantiles are read.
 *
 * Clipped statistics (opt->clip) count every event that overlaps the range, a span's
 * duration cut to it: a node's sketches answer only when all its events start and end inside
 * the range (its bounds say so: min_start, max_start, max_end); a node none of whose events
 * reaches the range is skipped; every other segment is read, event by event.
 *
 * Instances: the segments in groups of TROVE_SUMMARY_FANOUT (a level-1 node's), kept in a
 * bounded heap of the best `limit` so far. A group is skipped on its bounds alone when none
 * of its events starts in the range or could beat the worst kept (start, start_desc), and on
 * its node's sketches when it holds no such name, or none of the durations asked, or none
 * longer than the shortest kept (dur_desc). start_desc walks the groups and their segments
 * backwards so that the skips bite. A name can be every name that contains the text given,
 * ASCII case-blind (match): what a viewer's search steps through.
 */
#include "summary_read.h"
#include "trove/attrs.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/json.h"

#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nrec {
    uint32_t name;
    uint64_t count, total, self, min, max;
};

struct bkey {
    uint64_t key; /* name << 12 | bucket */
    uint64_t count;
};

struct acc {
    struct nrec *rec;
    size_t nrec, caprec;
    struct bkey *bk;
    size_t nbk, capbk;
};

struct stats_priv {
    struct trove_names *names;
    struct trove_summary_bucket *hist;
};

static uint64_t sat(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static int nrec_cmp(const void *a, const void *b)
{
    const struct nrec *x = a, *y = b;
    return x->name < y->name ? -1 : x->name > y->name;
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int bkey_cmp(const void *a, const void *b)
{
    const struct bkey *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Sort and fold the accumulators (done when they grow, and at the end). */
static void compact(struct acc *a)
{
    size_t m = 0;

    if (a->nrec) {
        qsort(a->rec, a->nrec, sizeof *a->rec, nrec_cmp);
        for (size_t i = 1; i < a->nrec; i++) {
            struct nrec *d = &a->rec[m], *r = &a->rec[i];
            if (d->name != r->name) {
                a->rec[++m] = *r;
                continue;
            }
            d->count += r->count;
            d->total = sat(d->total, r->total);
            d->self = sat(d->self, r->self);
            d->min = r->min < d->min ? r->min : d->min;
            d->max = r->max > d->max ? r->max : d->max;
        }
        a->nrec = m + 1;
    }
    m = 0;
    if (a->nbk) {
        qsort(a->bk, a->nbk, sizeof *a->bk, bkey_cmp);
        for (size_t i = 1; i < a->nbk; i++) {
            if (a->bk[m].key == a->bk[i].key)
                a->bk[m].count += a->bk[i].count;
            else
                a->bk[++m] = a->bk[i];
        }
        a->nbk = m + 1;
    }
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    void *q;
    size_t c;

    if (n < *cap)
        return TROVE_OK;
    c = *cap ? *cap * 2 : 4096;
    if (!(q = trove__realloc(*p, c * size)))
        return TROVE_ERR_NOMEM;
    *p = q;
    *cap = c;
    return TROVE_OK;
}

static int add_rec(struct acc *a, const struct nrec *r)
{
    if (a->nrec >= ((size_t)1 << 20) && a->nrec == a->caprec)
        compact(a);
    if (grow((void **)&a->rec, &a->caprec, a->nrec, sizeof *a->rec) != TROVE_OK)
        return TROVE_ERR_NOMEM;
    a->rec[a->nrec++] = *r;
    return TROVE_OK;
}

static int add_bucket(struct acc *a, uint32_t name, uint32_t bucket, uint64_t count)
{
    if (a->nbk >= ((size_t)1 << 20) && a->nbk == a->capbk)
        compact(a);
    if (grow((void **)&a->bk, &a->capbk, a->nbk, sizeof *a->bk) != TROVE_OK)
        return TROVE_ERR_NOMEM;
    a->bk[a->nbk].key = (uint64_t)name << 12 | bucket;
    a->bk[a->nbk++].count = count;
    return TROVE_OK;
}

/* Does s[0..len) contain the NUL-terminated needle, ASCII case-blind? */
static int contains_ci(const char *s, size_t len, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= len; i++) {
        size_t j = 0;
        while (j < m && tolower((unsigned char)s[i + j]) == tolower((unsigned char)needle[j]))
            j++;
        if (j == m)
            return 1;
    }
    return 0;
}

/* The names' ids whose string is `name` (with match: contains it, case-blind), sorted; every
 * id (ids NULL) for NULL. */
static int name_ids_match(const struct trove_names *names, const char *name, int match,
                          uint32_t **ids, size_t *n)
{
    size_t count = trove_names_count(names), m = 0;

    *ids = NULL;
    *n = 0;
    if (!name)
        return TROVE_OK;
    if (!(*ids = trove__mallocarray(count + 1, sizeof **ids)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < count; i++) {
        struct trove_name_entry e;
        trove_names_entry(names, i, &e);
        if (e.type == TROVE_NAME_EVENT &&
            (match ? contains_ci(e.str, e.len, name)
                   : e.len == strlen(name) && !memcmp(e.str, name, e.len)))
            (*ids)[m++] = e.a;
    }
    if (match) {
        qsort(*ids, m, sizeof **ids, u32_cmp);
    } else {
        for (size_t i = 1; i < m; i++) /* few: a name given more than one id */
            for (size_t j = i; j > 0 && (*ids)[j - 1] > (*ids)[j]; j--) {
                uint32_t t = (*ids)[j];
                (*ids)[j] = (*ids)[j - 1];
                (*ids)[j - 1] = t;
            }
    }
    *n = m;
    return TROVE_OK;
}

static int name_ids(const struct trove_names *names, const char *name, uint32_t **ids,
                    size_t *n)
{
    return name_ids_match(names, name, 0, ids, n);
}

static int id_ok(const uint32_t *ids, size_t n, int filtered, uint32_t id)
{
    size_t lo = 0, hi = n;
    if (!filtered)
        return 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ids[lo] == id;
}

struct stats_walk {
    struct trove__sumread r;
    const struct trove_stats_options *opt;
    uint64_t from, to;
    const uint32_t *ids;
    size_t nids;
    int filtered;
    struct acc a;
    uint64_t events;
    struct trove_diag *diag;
};

static int stats_node(struct stats_walk *w, const struct trove_summary *n)
{
    for (size_t i = 0; i < n->nsketches; i++) {
        const struct trove_summary_sketch *k = &n->sketches[i];
        struct nrec r = {k->name, k->count, k->total, k->self, k->min, k->max};
        if (!id_ok(w->ids, w->nids, w->filtered, k->name))
            continue;
        if (add_rec(&w->a, &r) != TROVE_OK)
            return TROVE_FAIL(w->diag, TROVE_ERR_NOMEM, 0, "out of memory");
        for (size_t j = 0; j < k->n; j++) {
            const struct trove_summary_bucket *b = &n->buckets[k->first + j];
            if (add_bucket(&w->a, k->name, b->index, b->count) != TROVE_OK)
                return TROVE_FAIL(w->diag, TROVE_ERR_NOMEM, 0, "out of memory");
        }
        w->events += k->count;
    }
    return TROVE_OK;
}

/* With clip: does event e count in [from, to), and its clipped duration into *d (its self
 * time, at most that, into *self)? A span counts when it overlaps the range, an instant (or
 * a span of no duration) when it starts in it. */
static int clip_event(const struct stats_walk *w, const struct trove_event *e, uint64_t *d,
                      uint64_t *self)
{
    uint64_t a, z, end;

    if (!trove__summary_is_span(e->kind) || e->dur_ns == 0) {
        *d = 0;
        *self = 0;
        return e->start_ns >= w->from && e->start_ns < w->to;
    }
    end = trove_event_end(e);
    if (e->start_ns >= w->to || end <= w->from)
        return 0;
    a = e->start_ns > w->from ? e->start_ns : w->from;
    z = end < w->to ? end : w->to;
    *d = z - a;
    if (*self > *d)
        *self = *d;
    return 1;
}

static int stats_segment(struct stats_walk *w, uint64_t k)
{
    size_t n;
    int rc;

    if ((rc = trove__sumread_segment(&w->r, k, &n, w->diag)) != TROVE_OK ||
        (rc = trove__sumread_self(&w->r, n, w->diag)) != TROVE_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        const struct trove_event *e = &w->r.ev[i];
        uint64_t d = trove__summary_is_span(e->kind) ? e->dur_ns : 0, self = w->r.self[i];
        int in;
        if (e->kind == TROVE_KIND_COUNTER)
            continue;
        in = w->opt->clip ? clip_event(w, e, &d, &self)
                          : e->start_ns >= w->from && e->start_ns < w->to;
        struct nrec r = {e->name_id, 1, d, self, d, d};
        if (!in || !id_ok(w->ids, w->nids, w->filtered, e->name_id) ||
            !trove__sumread_track_ok(w->opt->tracks, w->opt->ntracks, e->pid, e->tid))
            continue;
        if (add_rec(&w->a, &r) != TROVE_OK ||
            add_bucket(&w->a, e->name_id, trove_summary_bucket_of(d), 1) != TROVE_OK)
            return TROVE_FAIL(w->diag, TROVE_ERR_NOMEM, 0, "out of memory");
        w->events++;
    }
    return TROVE_OK;
}

static int stats_walk(struct stats_walk *w, unsigned level, uint64_t index)
{
    const struct trove__sumbound *b = &w->r.b[level][index];
    struct trove_summary node;
    int rc;

    if (b->min_start >= w->to || (b->max_start < w->from && (!w->opt->clip || b->max_end <= w->from)))
        return TROVE_OK; /* no event of it starts (or, clipped, reaches) in the range */
    if (level > 0 && b->min_start >= w->from && b->max_start < w->to && w->opt->ntracks == 0 &&
        (!w->opt->clip || b->max_end <= w->to) &&
        trove__sumread_node(&w->r, level, index, &node) == TROVE_OK) {
        rc = stats_node(w, &node);
        trove_summary_free(&node);
        return rc;
    }
    if (level == 0)
        return stats_segment(w, index);
    for (uint64_t c = index * TROVE_SUMMARY_FANOUT;
         c < (index + 1) * TROVE_SUMMARY_FANOUT && c < w->r.count[level - 1]; c++)
        if ((rc = stats_walk(w, level - 1, c)) != TROVE_OK)
            return rc;
    return TROVE_OK;
}

static int sort_by;

static int row_cmp(const void *a, const void *b)
{
    const struct trove_stats_row *x = a, *y = b;
    double kx, ky;
    switch (sort_by) {
    case TROVE_STATS_SORT_COUNT: kx = (double)x->count; ky = (double)y->count; break;
    case TROVE_STATS_SORT_P99: kx = x->p99; ky = y->p99; break;
    case TROVE_STATS_SORT_SELF: kx = (double)x->self; ky = (double)y->self; break;
    case TROVE_STATS_SORT_MAX: kx = (double)x->max; ky = (double)y->max; break;
    default: kx = (double)x->total; ky = (double)y->total; break;
    }
    if (kx != ky)
        return kx > ky ? -1 : 1;
    return x->name_id < y->name_id ? -1 : x->name_id > y->name_id;
}

int trove_stats_sort_parse(const char *s)
{
    static const char *const names[] = {"total", "count", "p99", "self", "max"};
    for (int i = 0; i < 5; i++)
        if (s && !strcmp(s, names[i]))
            return i;
    return -1;
}

const char *trove_stats_sort_name(int sort)
{
    static const char *const names[] = {"total", "count", "p99", "self", "max"};
    return sort >= 0 && sort < 5 ? names[sort] : "total";
}

int trove_capture_stats(struct trove_store *s, const char *name,
                        const struct trove_stats_options *opt, struct trove_stats_result *res,
                        struct trove_diag *diag)
{
    static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER;
    struct stats_walk w;
    struct stats_priv *priv = NULL;
    uint32_t *ids = NULL;
    size_t nb = 0;
    int rc;

    memset(&w, 0, sizeof w);
    if (!s || !opt || !res)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "stats need a store, options and a result");
    memset(res, 0, sizeof *res);
    if (opt->sort < 0 || opt->sort > TROVE_STATS_SORT_MAX || (opt->ntracks && !opt->tracks))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "stats: a sort or a track list out of range");
    w.opt = opt;
    w.diag = diag;
    if (!(priv = trove__calloc(1, sizeof *priv)) || trove_names_new(&priv->names) != TROVE_OK) {
        free(priv);
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    }
    res->priv = priv;
    /* the names first: the reader holds the capture's volume open */
    if ((rc = trove_capture_read_names(s, name, priv->names, diag)) != TROVE_OK ||
        (rc = trove__sumread_open(&w.r, s, name, &res->read, diag)) != TROVE_OK)
        goto out;
    if (name_ids(priv->names, opt->name, &ids, &w.nids) != TROVE_OK) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    w.ids = ids;
    w.filtered = opt->name != NULL;
    w.from = opt->from_ns;
    w.to = opt->to_ns ? opt->to_ns : (w.r.h.info.end_ns == UINT64_MAX ? UINT64_MAX : w.r.h.info.end_ns + 1);
    /* the range as it applies: no wider than the capture's events */
    res->from_ns = w.from > w.r.h.info.first_ns ? w.from : w.r.h.info.first_ns;
    res->to_ns = w.r.h.info.end_ns < UINT64_MAX && w.to > w.r.h.info.end_ns + 1 ? w.r.h.info.end_ns + 1
                                                                                : w.to;
    if (w.to <= w.from) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "the range ends (%" PRIu64 ") at or before it starts (%" PRIu64 ")", w.to,
                        w.from);
        goto out;
    }
    if ((!w.filtered || w.nids > 0) && w.r.levels > 0 &&
        (rc = stats_walk(&w, w.r.levels - 1, 0)) != TROVE_OK)
        goto out;
    compact(&w.a);
    res->events = w.events;
    res->names = w.a.nrec;
    if (!(res->rows = trove__calloc(w.a.nrec + 1, sizeof *res->rows)) ||
        !(priv->hist = trove__calloc(w.a.nbk + 1, sizeof *priv->hist))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < w.a.nbk; i++) {
        priv->hist[i].index = (uint32_t)(w.a.bk[i].key & 4095);
        priv->hist[i].count = w.a.bk[i].count;
    }
    for (size_t i = 0; i < w.a.nrec; i++) {
        const struct nrec *r = &w.a.rec[i];
        struct trove_stats_row *row = &res->rows[i];
        struct trove_summary view;
        struct trove_summary_sketch k;
        const char *str;
        size_t first = nb;
        while (nb < w.a.nbk && (uint32_t)(w.a.bk[nb].key >> 12) == r->name)
            nb++;
        row->name_id = r->name;
        str = trove_names_get(priv->names, TROVE_NAME_EVENT, r->name, 0, &row->name_len);
        row->name = str ? str : "";
        row->count = r->count;
        row->total = r->total;
        row->self = r->self;
        row->min = r->min;
        row->max = r->max;
        row->hist = priv->hist + first;
        row->nhist = nb - first;
        memset(&view, 0, sizeof view);
        memset(&k, 0, sizeof k);
        view.buckets = priv->hist;
        k.count = r->count;
        k.min = r->min;
        k.max = r->max;
        k.first = first;
        k.n = nb - first;
        row->p50 = trove_summary_quantile(&view, &k, 0.50);
        row->p90 = trove_summary_quantile(&view, &k, 0.90);
        row->p99 = trove_summary_quantile(&view, &k, 0.99);
    }
    res->nrows = w.a.nrec;
    pthread_mutex_lock(&sort_mu); /* qsort has no context: the key is a static, guarded */
    sort_by = opt->sort;
    qsort(res->rows, res->nrows, sizeof *res->rows, row_cmp);
    pthread_mutex_unlock(&sort_mu);
    if (opt->limit && res->nrows > opt->limit)
        res->nrows = opt->limit;
    rc = TROVE_OK;
out:
    free(ids);
    free(w.a.rec);
    free(w.a.bk);
    trove__sumread_close(&w.r);
    if (rc != TROVE_OK)
        trove_stats_result_free(res);
    return rc;
}

void trove_stats_result_free(struct trove_stats_result *res)
{
    struct stats_priv *priv;

    if (!res)
        return;
    priv = res->priv;
    if (priv) {
        trove_names_free(priv->names);
        free(priv->hist);
        free(priv);
    }
    free(res->rows);
    memset(res, 0, sizeof *res);
}


static int put_read(struct trove_bytes *out, const struct trove_query_figures *q)
{
    return trove__sumread_fmt(out,
                   "\"read\":{\"nodes\":%" PRIu64 ",\"segments\":%" PRIu64 ",\"events\":%" PRIu64
                   ",\"damaged\":%" PRIu64 "}",
                   q->nodes, q->segments, q->events, q->damaged);
}

int trove_stats_result_json(const struct trove_stats_result *res, const char *capture, int sort,
                            struct trove_bytes *out)
{
    int rc = trove__sumread_fmt(out,
                     "{\"capture\":\"%s\",\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64
                     ",\"events\":%" PRIu64 ",\"names\":%" PRIu64 ",\"sort\":\"%s\",\"rows\":[",
                     capture, res->from_ns, res->to_ns, res->events, res->names,
                     trove_stats_sort_name(sort));

    for (size_t i = 0; rc == TROVE_OK && i < res->nrows; i++) {
        const struct trove_stats_row *r = &res->rows[i];
        rc = trove__sumread_fmt(out, "%s{\"name\":", i ? "," : "");
        rc = rc ? rc : trove__json_put_str(out, r->name, r->name_len);
        rc = rc ? rc : trove__sumread_fmt(out,
                               ",\"name_id\":%" PRIu32 ",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64
                               ",\"self_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64
                               ",\"p50_ns\":%.0f,\"p90_ns\":%.0f,\"p99_ns\":%.0f,\"max_ns\":%" PRIu64
                               ",\"hist\":[",
                               r->name_id, r->count, r->total, r->self, r->min, r->p50, r->p90,
                               r->p99, r->max);
        for (size_t j = 0; rc == TROVE_OK && j < r->nhist; j++)
            rc = trove__sumread_fmt(out, "%s[%.0f,%" PRIu64 "]", j ? "," : "",
                         trove_summary_bucket_value(r->hist[j].index), (uint64_t)r->hist[j].count);
        rc = rc ? rc : trove__sumread_fmt(out, "]}");
    }
    rc = rc ? rc : trove__sumread_fmt(out, "],");
    rc = rc ? rc : put_read(out, &res->read);
    return rc ? rc : trove__sumread_fmt(out, "}");
}

/* ---- finding instances ---------------------------------------------------------------- */

struct hit {
    uint64_t index;
    struct trove_event ev;
};

struct find {
    struct trove__sumread r;
    const struct trove_find_options *opt;
    uint64_t from, to;
    const uint32_t *ids;
    size_t nids;
    int by_attrs;        /* text: the segments' attributes are searched too */
    uint8_t *attr_hit;   /* by_attrs: per event of the segment read, a value holds the text */
    struct hit *heap; /* the worst kept on top */
    size_t n;
    struct trove_diag *diag;
};

/* Is a worse than b (kept after it)? start order: a later start (then a later index);
 * start_desc: an earlier start (then an earlier index); dur_desc: a shorter one. */
static int worse(const struct find *f, const struct hit *a, const struct hit *b)
{
    if (f->opt->order == TROVE_FIND_DUR_DESC) {
        if (a->ev.dur_ns != b->ev.dur_ns)
            return a->ev.dur_ns < b->ev.dur_ns;
    } else if (f->opt->order == TROVE_FIND_START_DESC) {
        if (a->ev.start_ns != b->ev.start_ns)
            return a->ev.start_ns < b->ev.start_ns;
        return a->index < b->index;
    } else if (a->ev.start_ns != b->ev.start_ns) {
        return a->ev.start_ns > b->ev.start_ns;
    }
    return a->index > b->index;
}

/* Is e's duration within the options' bounds? */
static int dur_ok(const struct trove_find_options *o, uint64_t d)
{
    return d >= o->min_dur_ns && (o->max_dur_ns == 0 || d <= o->max_dur_ns);
}

static void sift_down(struct find *f, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < f->n && worse(f, &f->heap[l], &f->heap[m]))
            m = l;
        if (r < f->n && worse(f, &f->heap[r], &f->heap[m]))
            m = r;
        if (m == i)
            return;
        struct hit t = f->heap[i];
        f->heap[i] = f->heap[m];
        f->heap[m] = t;
        i = m;
    }
}

static void offer(struct find *f, const struct hit *h)
{
    if (f->n < f->opt->limit) {
        size_t i = f->n++;
        f->heap[i] = *h;
        while (i > 0 && worse(f, &f->heap[i], &f->heap[(i - 1) / 2])) {
            struct hit t = f->heap[i];
            f->heap[i] = f->heap[(i - 1) / 2];
            f->heap[(i - 1) / 2] = t;
            i = (i - 1) / 2;
        }
        return;
    }
    if (!worse(f, h, &f->heap[0])) {
        f->heap[0] = *h;
        sift_down(f, 0);
    }
}

/* by_attrs: which events of segment k (n of them) have a string or JSON value that holds the
 * text, from the segment's attributes object. */
static int attr_hits(struct find *f, uint64_t k, size_t n)
{
    struct trove_attrs t;
    uint64_t slot = trove__capture_attrs_slot(&f->r.h) + k;
    int rc;

    memset(&t, 0, sizeof t);
    memset(f->attr_hit, 0, n);
    f->r.obj.len = 0;
    if ((rc = trove_volume_get_object(f->r.v, slot, &f->r.obj)) != TROVE_OK)
        return TROVE_FAIL(f->diag, rc, 0, "capture %s: attributes (slot %" PRIu64 "): %s",
                          f->r.name, slot, trove_strerror(rc));
    if ((rc = trove_attrs_decode(f->r.obj.ptr, f->r.obj.len, &t, f->diag)) != TROVE_OK)
        return rc;
    {
        /* each string once: does it hold the text? */
        uint8_t *str_hit = trove__calloc(t.nstr ? t.nstr : 1, 1);
        if (!str_hit) {
            trove_attrs_free(&t);
            return TROVE_FAIL(f->diag, TROVE_ERR_NOMEM, 0, "out of memory");
        }
        for (size_t i = 0; i < t.nstr; i++) {
            size_t len;
            const char *s = trove_attrs_string(&t, (uint32_t)i, &len);
            str_hit[i] = (uint8_t)contains_ci(s, len, f->opt->text);
        }
        for (size_t i = 0; i < t.n; i++) {
            const struct trove_attr *a = &t.rows[i];
            if ((a->type == TROVE_ATTR_STRING || a->type == TROVE_ATTR_JSON) && a->event < n &&
                str_hit[a->v.s])
                f->attr_hit[a->event] = 1;
        }
        free(str_hit);
    }
    trove_attrs_free(&t);
    return TROVE_OK;
}

static int find_segment(struct find *f, uint64_t k)
{
    const struct trove__sumbound *b = &f->r.b[0][k];
    size_t n;
    int rc;

    if (b->min_start >= f->to || b->max_start < f->from)
        return TROVE_OK;
    if (f->opt->order == TROVE_FIND_START && f->n == f->opt->limit &&
        b->min_start > f->heap[0].ev.start_ns)
        return TROVE_OK; /* every event of it starts after the worst kept */
    if (f->opt->order == TROVE_FIND_START_DESC && f->n == f->opt->limit &&
        b->max_start < f->heap[0].ev.start_ns)
        return TROVE_OK; /* every event of it starts before the worst kept */
    if ((rc = trove__sumread_segment(&f->r, k, &n, f->diag)) != TROVE_OK ||
        (f->by_attrs && (rc = attr_hits(f, k, n)) != TROVE_OK))
        return rc;
    for (size_t i = 0; i < n; i++) {
        const struct trove_event *e = &f->r.ev[i];
        struct hit h;
        if (e->start_ns < f->from || e->start_ns >= f->to ||
            !(id_ok(f->ids, f->nids, 1, e->name_id) || (f->by_attrs && f->attr_hit[i])) ||
            !dur_ok(f->opt, e->dur_ns) ||
            !trove__sumread_track_ok(f->opt->tracks, f->opt->ntracks, e->pid, e->tid))
            continue;
        h.index = k * f->r.per + i;
        h.ev = *e;
        offer(f, &h);
    }
    return TROVE_OK;
}

/* A group of segments (a level-1 node's): skipped when its sketches say it holds no
 * instance, or (longest first) none longer than the shortest kept. */
static int find_group(struct find *f, uint64_t g)
{
    struct trove_summary node;
    uint64_t first = g * TROVE_SUMMARY_FANOUT;
    int rc = TROVE_OK, skip = 0;

    if (f->r.levels >= 2) { /* its bounds first: a group out of the range, or past what is kept, is not read */
        const struct trove__sumbound *b = &f->r.b[1][g];
        if (b->min_start >= f->to || b->max_start < f->from ||
            (f->n == f->opt->limit && f->opt->order == TROVE_FIND_START &&
             b->min_start > f->heap[0].ev.start_ns) ||
            (f->n == f->opt->limit && f->opt->order == TROVE_FIND_START_DESC &&
             b->max_start < f->heap[0].ev.start_ns))
            return TROVE_OK;
    }
    if (f->r.levels >= 2 && trove__sumread_node(&f->r, 1, g, &node) == TROVE_OK) {
        uint64_t max = 0;
        int any = 0;
        for (size_t i = 0; i < node.nsketches; i++)
            if ((f->by_attrs || id_ok(f->ids, f->nids, 1, node.sketches[i].name)) &&
                node.sketches[i].max >= f->opt->min_dur_ns &&
                (f->opt->max_dur_ns == 0 || node.sketches[i].min <= f->opt->max_dur_ns)) {
                any = 1;
                max = node.sketches[i].max > max ? node.sketches[i].max : max;
            }
        skip = !any || (f->opt->order == TROVE_FIND_DUR_DESC && f->n == f->opt->limit &&
                        max < f->heap[0].ev.dur_ns);
        trove_summary_free(&node);
    }
    {
        uint64_t end = first + TROVE_SUMMARY_FANOUT < f->r.h.info.segments ? first + TROVE_SUMMARY_FANOUT
                                                                          : f->r.h.info.segments;
        for (uint64_t i = 0; !skip && rc == TROVE_OK && first + i < end; i++) /* start_desc: backwards */
            rc = find_segment(f, f->opt->order == TROVE_FIND_START_DESC ? end - 1 - i : first + i);
    }
    return rc;
}

static int hit_cmp_start(const void *a, const void *b)
{
    const struct hit *x = a, *y = b;
    if (x->ev.start_ns != y->ev.start_ns)
        return x->ev.start_ns < y->ev.start_ns ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int hit_cmp_start_desc(const void *a, const void *b) { return hit_cmp_start(b, a); }

static int hit_cmp_dur(const void *a, const void *b)
{
    const struct hit *x = a, *y = b;
    if (x->ev.dur_ns != y->ev.dur_ns)
        return x->ev.dur_ns > y->ev.dur_ns ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

int trove_capture_find_json(struct trove_store *s, const char *name,
                            const struct trove_find_options *opt, struct trove_bytes *out,
                            struct trove_query_figures *qs, struct trove_diag *diag)
{
    struct trove_query_figures local = {0};
    struct trove_names *names = NULL;
    uint32_t *ids = NULL;
    struct find f;
    int rc;

    memset(&f, 0, sizeof f);
    if (!s || !opt || !out || (!opt->name && !opt->nids && !opt->text) || (opt->nids && !opt->ids) ||
        (opt->text && (opt->name || opt->nids)) ||
        opt->limit < 1 || opt->limit > 10000 ||
        (opt->order != TROVE_FIND_START && opt->order != TROVE_FIND_DUR_DESC &&
         opt->order != TROVE_FIND_START_DESC) ||
        (opt->ntracks && !opt->tracks))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "finding events needs a name (or name ids, or a text), an order and a limit of 1 to 10000");
    f.opt = opt;
    f.diag = diag;
    /* name ids given: the names are not read (a capture of many names saves most of a small
     * answer's time) */
    if (!opt->nids && ((rc = trove_names_new(&names)) != TROVE_OK ||
                       (rc = trove_capture_read_names(s, name, names, diag)) != TROVE_OK))
        goto out;
    if ((rc = trove__sumread_open(&f.r, s, name, qs ? qs : &local, diag)) != TROVE_OK)
        goto out;
    f.by_attrs = opt->text && (f.r.h.info.flags & TROVE_CAPTURE_FLAG_ATTRS);
    if ((!opt->nids && name_ids_match(names, opt->text ? opt->text : opt->name, opt->text ? 1 : opt->match,
                                      &ids, &f.nids) != TROVE_OK) ||
        !(f.heap = trove__mallocarray(opt->limit, sizeof *f.heap)) ||
        (f.by_attrs && !(f.attr_hit = trove__malloc(f.r.per ? (size_t)f.r.per : 1)))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    for (size_t i = 1; i < opt->nids; i++)
        if (opt->ids[i - 1] >= opt->ids[i]) {
            rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "finding events: the name ids are not sorted and distinct");
            goto out;
        }
    f.ids = opt->nids ? opt->ids : ids;
    if (opt->nids)
        f.nids = opt->nids;
    f.from = opt->from_ns;
    f.to = opt->to_ns ? opt->to_ns : UINT64_MAX;
    {
        /* the groups in the order the answer wants: backwards for start_desc, so that the
         * bounds above skip the ones before what is kept */
        uint64_t ng = (f.r.h.info.segments + TROVE_SUMMARY_FANOUT - 1) / TROVE_SUMMARY_FANOUT;
        for (uint64_t k = 0; (f.nids > 0 || f.by_attrs) && rc == TROVE_OK && k < ng; k++)
            rc = find_group(&f, opt->order == TROVE_FIND_START_DESC ? ng - 1 - k : k);
    }
    if (rc != TROVE_OK)
        goto out;
    qsort(f.heap, f.n, sizeof *f.heap,
          opt->order == TROVE_FIND_DUR_DESC    ? hit_cmp_dur
          : opt->order == TROVE_FIND_START_DESC ? hit_cmp_start_desc
                                                : hit_cmp_start);
    rc = trove__sumread_fmt(out, "{\"capture\":\"%s\",\"name\":", name);
    if (opt->name || opt->text)
        rc = rc ? rc : trove__json_put_str(out, opt->name ? opt->name : opt->text,
                                           strlen(opt->name ? opt->name : opt->text));
    else
        rc = rc ? rc : trove__sumread_fmt(out, "null");
    rc = rc ? rc : trove__sumread_fmt(out, ",\"order\":\"%s\",\"events\":[",
                           opt->order == TROVE_FIND_DUR_DESC    ? "dur_desc"
                           : opt->order == TROVE_FIND_START_DESC ? "start_desc"
                                                                 : "start");
    for (size_t i = 0; rc == TROVE_OK && i < f.n; i++) {
        const struct hit *h = &f.heap[i];
        rc = trove__sumread_fmt(out,
                     "%s{\"index\":%" PRIu64 ",\"start_ns\":%" PRIu64 ",\"dur_ns\":%" PRIu64
                     ",\"end_ns\":%" PRIu64 ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
                     ",\"track\":\"%" PRIu32 ":%" PRIu32 "\",\"depth\":%u,\"kind\":\"%s\",\"name_id\":%" PRIu32 "}",
                     i ? "," : "", h->index, h->ev.start_ns, h->ev.dur_ns, trove_event_end(&h->ev),
                     h->ev.pid, h->ev.tid, h->ev.pid, h->ev.tid, (unsigned)h->ev.depth,
                     trove_kind_name(h->ev.kind), h->ev.name_id);
    }
    rc = rc ? rc : trove__sumread_fmt(out, "],");
    rc = rc ? rc : put_read(out, qs ? qs : &local);
    rc = rc ? rc : trove__sumread_fmt(out, "}");
    if (rc != TROVE_OK)
        rc = TROVE_FAIL(diag, rc, 0, "capture %s: writing the events: %s", name, trove_strerror(rc));
out:
    free(ids);
    free(f.heap);
    free(f.attr_hit);
    trove_names_free(names);
    trove__sumread_close(&f.r);
    return rc;
}
