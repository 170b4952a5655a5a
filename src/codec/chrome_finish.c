/*
 * chrome_finish.c: the end of a Chrome import (trove__chrome_finish), once chrome_json.c
 * has read the whole document and chrome_events.c has turned each event into records,
 * flows and names: open spans are counted (or refused, when strict, naming the earliest),
 * the synthetic tids of async tracks and counter series handed out by what the tracks hold
 * (so that they do not depend on the order of the input), depth and order computed
 * (trace_order.c), names renumbered by descending use, flows given their final ids in order
 * of first appearance once the rows are sorted, and only then are the caller's events,
 * names and flows touched, so that a failure leaves them as they were (the one exception:
 * an allocation failure inside the final trove_names_merge() can leave names partly
 * merged; events and flows stay intact). Also the texts of an import's stats
 * (trove_chrome_skipped_text, trove_chrome_unmatched_text; trove/import.h).
 */
#include "chrome_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"

#define NO_NAME TROVE__CHROME_NO_NAME
#define NO_TRACK TROVE__CT_NONE

/* Unclosed B events and async spans: an error when strict (naming the earliest), else
 * counted. */
static int check_open(struct trove__chrome *ps)
{
    const struct trove__cthread *worst = NULL;
    const struct trove__ctrack *wt = NULL;
    uint64_t total = 0;
    char nbuf[72], t1[40];

    for (uint32_t i = 0; i < ps->nthr; i++) {
        const struct trove__cthread *t = &ps->thr[i];
        if (t->n == 0)
            continue;
        total += t->n;
        ps->st.unmatched_begin_phase['B'] += t->n;
        if (!worst || t->stk[0].off < worst->stk[0].off)
            worst = t;
    }
    for (uint32_t i = 0; i < ps->tracks.n; i++) {
        const struct trove__ctrack *t = &ps->tracks.t[i];
        for (size_t j = 0; j < t->nopen; j++) {
            uint64_t steps = t->open[j].nsteps + (t->open[j].has_step != 0);
            total += 1 + steps;
            ps->st.unmatched_begin_phase[t->cls == TROVE__CT_NESTABLE ? 'b' : 'S']++;
            ps->st.unmatched_begin_phase['T'] += steps;
        }
        if (t->nopen && (!wt || t->open[0].off < wt->open[0].off))
            wt = t;
    }
    ps->st.unmatched_begin += total;
    if (!ps->strict || (!worst && !wt))
        return TROVE_OK;
    if (worst && (!wt || worst->stk[0].off < wt->open[0].off))
        return TROVE_FAIL(ps->diag, TROVE_ERR_UNMATCHED, worst->stk[0].off,
                          "B event \"%s\" on pid %u tid %u at ts %s is never closed by an E "
                          "(%llu begin events are open at the end)",
                          trove__chrome_show_name(ps, worst->stk[0].name, nbuf), worst->pid,
                          worst->tid, trove__chrome_show_us(worst->stk[0].ts, t1),
                          (unsigned long long)total);
    return TROVE_FAIL(ps->diag, TROVE_ERR_UNMATCHED, wt->open[0].off,
                      "%c event \"%s\" on pid %u at ts %s is never closed by an %c (%llu "
                      "begin events are open at the end)",
                      wt->cls == TROVE__CT_NESTABLE ? 'b' : 'S',
                      trove__chrome_show_name(ps, wt->open[0].name, nbuf), wt->pid,
                      trove__chrome_show_us(wt->open[0].ts, t1),
                      wt->cls == TROVE__CT_NESTABLE ? 'e' : 'F', (unsigned long long)total);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* Synthetic tids for the tracks that have events, then every record's final tid. */
static int assign_tids(struct trove__chrome *ps)
{
    uint64_t *real = NULL;
    size_t nreal = 0;
    uint32_t bad_pid;
    int rc;

    if (ps->tracks.n == 0)
        return TROVE_OK;
    if (!(real = trove__malloc((ps->nrec ? ps->nrec : 1) * sizeof *real)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < ps->nrec; i++) {
        const struct trove__trec *r = &ps->rec[i];
        if (r->track == NO_TRACK) {
            real[nreal++] = (uint64_t)r->pid << 32 | r->tid;
        } else {
            struct trove__ctrack *t = &ps->tracks.t[r->track];
            if (!t->used || r->start < t->first_ts)
                t->first_ts = r->start;
            t->used = 1;
        }
    }
    qsort(real, nreal, sizeof *real, cmp_u64);
    rc = trove__ct_assign(&ps->tracks, real, nreal, &bad_pid);
    free(real);
    if (rc == TROVE_ERR_LIMIT)
        return TROVE_FAIL(ps->diag, rc, 0,
                          "pid %u has more than %u async tracks and counter series", bad_pid,
                          TROVE_TID_SYNTHETIC_COUNT);
    if (rc != TROVE_OK)
        return rc;
    for (size_t i = 0; i < ps->nrec; i++)
        if (ps->rec[i].track != NO_TRACK)
            ps->rec[i].tid = ps->tracks.t[ps->rec[i].track].tid;
    for (uint32_t i = 0; i < ps->tracks.n; i++) {
        const struct trove__ctrack *t = &ps->tracks.t[i];
        if (t->used && t->cls == TROVE__CT_COUNTER)
            ps->st.counter_series++;
        else if (t->used)
            ps->st.async_tracks++;
    }
    return TROVE_OK;
}

/* Set a thread name of at most TROVE_NAME_MAX bytes from prefix + a + sep + b (cut at a
 * UTF-8 boundary when longer). */
static int set_track_name(struct trove__chrome *ps, uint32_t pid, uint32_t tid,
                          const char *prefix, const uint8_t *a, size_t alen, const char *sep,
                          const uint8_t *b, size_t blen)
{
    struct trove_bytes *s = &ps->fix;
    int rc;
    s->len = 0;
    if ((rc = trove_bytes_append(s, prefix, strlen(prefix))) != TROVE_OK ||
        (rc = trove_bytes_append(s, a, alen)) != TROVE_OK ||
        (rc = trove_bytes_append(s, sep, strlen(sep))) != TROVE_OK ||
        (rc = trove_bytes_append(s, b, blen)) != TROVE_OK)
        return rc;
    if (s->len > TROVE_NAME_MAX) {
        s->len = TROVE_NAME_MAX;
        while (s->len > 0 && (s->ptr[s->len] & 0xC0) == 0x80)
            s->len--;
    }
    return trove_names_set(ps->tmp_names, TROVE_NAME_THREAD, pid, tid, (const char *)s->ptr,
                           s->len);
}

/* Name every track that has events: "async: NAME" after its first event (in output order),
 * "COUNTER KEY" for a counter series. Called after the records are in output order. */
static int name_tracks(struct trove__chrome *ps)
{
    uint8_t *seen = NULL;
    int rc = TROVE_OK;

    if (ps->tracks.n == 0)
        return TROVE_OK;
    if (!(seen = trove__calloc(ps->tracks.n, 1)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; rc == TROVE_OK && i < ps->nrec; i++) {
        const struct trove__trec *r = &ps->rec[i];
        const struct trove__ctrack *t;
        const struct trove__cname *nm;
        if (r->track == NO_TRACK || seen[r->track])
            continue;
        seen[r->track] = 1;
        t = &ps->tracks.t[r->track];
        if (t->cls == TROVE__CT_COUNTER) {
            const uint8_t *key = trove__ct_key(&ps->tracks, r->track);
            uint32_t nlen = trove__get_le32(key);
            nm = &ps->nm[t->name];
            rc = set_track_name(ps, t->pid, t->tid, "", ps->arena.ptr + nm->off, nm->len, " ",
                                key + 4 + nlen, t->key_len - 4 - nlen);
        } else {
            nm = &ps->nm[r->name];
            rc = set_track_name(ps, t->pid, t->tid, "async: ", ps->arena.ptr + nm->off, nm->len,
                                "", NULL, 0);
        }
    }
    free(seen);
    return rc;
}

struct name_order {
    uint32_t count, flows, id;
};

static int cmp_name_order(const void *pa, const void *pb)
{
    const struct name_order *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    if (a->flows != b->flows)
        return a->flows > b->flows ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Final ids by descending use (events, then flows); event names into tmp_names;
 * map[provisional] = id. */
static int assign_names(struct trove__chrome *ps, uint32_t **map_out)
{
    struct name_order *ord = NULL;
    uint32_t *map = NULL, n = 0;
    int rc = TROVE_ERR_NOMEM;

    map = trove__malloc((ps->nnm ? ps->nnm : 1) * sizeof *map);
    ord = trove__malloc((ps->nnm ? ps->nnm : 1) * sizeof *ord);
    if (!map || !ord)
        goto out;
    for (uint32_t i = 0; i < ps->nnm; i++)
        if (ps->nm[i].count || ps->nm[i].flows)
            ord[n++] = (struct name_order){ps->nm[i].count, ps->nm[i].flows, i};
    qsort(ord, n, sizeof *ord, cmp_name_order);
    for (uint32_t i = 0; i < n; i++) {
        const struct trove__cname *e = &ps->nm[ord[i].id];
        map[ord[i].id] = i;
        rc = trove_names_set(ps->tmp_names, TROVE_NAME_EVENT, i, 0,
                             (const char *)ps->arena.ptr + e->off, e->len);
        if (rc != TROVE_OK)
            goto out;
    }
    ps->st.names = n;
    *map_out = map;
    map = NULL;
    rc = TROVE_OK;
out:
    free(map);
    free(ord);
    return rc;
}

static int cmp_flow(const void *pa, const void *pb)
{
    const struct trove__cflow *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Flow rows sorted by (ts, pid, tid, input order); ids 1.. by first appearance in that
 * order, into key_id[key]. Every row of a flow takes the name of its first row: a bind_id's
 * rows come named after the slices they bind to, which differ, and a flow whose s and f
 * differ in name is two flows to Perfetto's importer (it keys them by name too). */
static int order_flows(struct trove__chrome *ps, uint64_t **key_id_out)
{
    uint64_t *key_id, next = 1;
    uint32_t *key_name;
    size_t nk = ps->flowkeys.n ? ps->flowkeys.n : 1;

    key_id = trove__calloc(nk, sizeof *key_id);
    key_name = trove__malloc(nk * sizeof *key_name);
    if (!key_id || !key_name) {
        free(key_id);
        free(key_name);
        return TROVE_ERR_NOMEM;
    }
    if (ps->nflows > 1)
        qsort(ps->flows, ps->nflows, sizeof *ps->flows, cmp_flow);
    for (size_t i = 0; i < ps->nflows; i++) {
        struct trove__cflow *c = &ps->flows[i];
        if (key_id[c->key] == 0) {
            key_id[c->key] = next++;
            key_name[c->key] = c->name;
        } else if (c->name != key_name[c->key]) {
            ps->nm[c->name].flows--;
            ps->nm[key_name[c->key]].flows++;
            c->name = key_name[c->key];
        }
    }
    free(key_name);
    *key_id_out = key_id;
    return TROVE_OK;
}

/* A row's scope and key, and its place among the event's rows (merge_keys' sort). */
struct skey {
    uint32_t key;
    uint8_t scope;
    size_t at;
};

static int cmp_skey(const void *x, const void *y)
{
    const struct skey *a = x, *b = y;
    if (a->scope != b->scope)
        return a->scope < b->scope ? -1 : 1;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->at < b->at ? -1 : a->at > b->at;
}

/* The rows of a from `first` on (one event's): of those with the same scope and key, only the
 * last stays (in its place). TROVE_OK or TROVE_ERR_NOMEM. */
static int merge_keys(struct trove_attrs *a, size_t first)
{
    size_t n = a->n - first, k = first;
    struct skey *sk;
    uint8_t *drop;

    if (n < 2)
        return TROVE_OK;
    sk = trove__malloc(n * sizeof *sk);
    drop = trove__calloc(n, 1);
    if (!sk || !drop) {
        free(sk);
        free(drop);
        return TROVE_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        sk[i] = (struct skey){a->rows[first + i].key, a->rows[first + i].scope, i};
    qsort(sk, n, sizeof *sk, cmp_skey);
    for (size_t i = 0; i + 1 < n; i++)
        if (sk[i].scope == sk[i + 1].scope && sk[i].key == sk[i + 1].key)
            drop[sk[i].at] = 1;
    for (size_t i = first; i < a->n; i++)
        if (!drop[i - first])
            a->rows[k++] = a->rows[i];
    a->n = k;
    free(sk);
    free(drop);
    return TROVE_OK;
}

struct hand {
    uint32_t out, order;
    uint64_t in;
};

static int cmp_hand(const void *x, const void *y)
{
    const struct hand *a = x, *b = y;
    if (a->out != b->out)
        return a->out < b->out ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* The staged rows to attrs, each as the event its record became (base + its index in the
 * order), in that order; the top-level rows to meta (may be NULL). Records in order
 * already (trace_order). On error both are cut back to n0, m0 (strings interned stay). */
static int hand_rows(struct trove__chrome *ps, uint64_t base, struct trove_attrs *attrs,
                     struct trove_attrs *meta)
{
    size_t n0 = attrs->n, m0 = meta ? meta->n : 0;
    uint32_t *inv = trove__malloc((ps->nrec ? ps->nrec : 1) * sizeof *inv);
    struct hand *h = trove__malloc((ps->nlinks ? ps->nlinks : 1) * sizeof *h);
    const struct trove_attrs *st = &ps->stage;
    size_t first = n0;
    int rc = TROVE_OK, adopted = 0;

    if (!inv || !h) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    /* an empty table (an import's) takes the staged strings as they are, so that the rows
     * keep their ids and nothing is interned twice */
    if ((adopted = trove_attrs_take_strings(attrs, &ps->stage)) &&
        (rc = trove_attrs_reserve(attrs, st->n)) != TROVE_OK)
        goto out;
    for (size_t i = 0; i < ps->nrec; i++)
        inv[ps->rec[i].seq] = (uint32_t)i;
    for (size_t k = 0; k < ps->nlinks; k++)
        h[k] = (struct hand){inv[ps->links[k].rec], (uint32_t)k, ps->links[k].in};
    if (ps->nlinks > 1)
        qsort(h, ps->nlinks, sizeof *h, cmp_hand);
    for (size_t k = 0; rc == TROVE_OK && k < ps->nlinks; k++) {
        size_t lo = trove_attrs_find(st, h[k].in), hi; /* input event h[k].in's rows */
        for (hi = lo; hi < st->n && st->rows[hi].event == h[k].in;)
            hi++;
        if (k == 0 || h[k].out != h[k - 1].out)
            first = attrs->n; /* the first row of this event */
        if (adopted) { /* the same strings: the rows as they are, on their event */
            for (; rc == TROVE_OK && lo < hi; lo++) {
                struct trove_attr r = st->rows[lo];
                r.event = base + h[k].out;
                rc = trove_attrs_add(attrs, &r);
            }
        } else {
            rc = trove_attrs_append(attrs, st, lo, hi, base + h[k].out, h[k].in);
        }
        /* a zone of two events (B and E, b and e): one row a key, the later's, as Chrome
         * merges them */
        if (rc == TROVE_OK && k > 0 && h[k].out == h[k - 1].out)
            rc = merge_keys(attrs, first);
    }
    ps->st.attr_rows = attrs->n - n0;
    if (rc == TROVE_OK && meta)
        rc = trove_attrs_append(meta, &ps->meta, 0, ps->meta.n, 0, 0);
out:
    if (rc != TROVE_OK) {
        attrs->n = n0;
        if (meta)
            meta->n = m0;
    }
    free(inv);
    free(h);
    return rc;
}

int trove__chrome_finish(struct trove__chrome *ps, struct trove_events *events,
                         struct trove_names *names, struct trove_flows *flows,
                         struct trove_attrs *attrs, struct trove_attrs *meta)
{
    uint32_t *map = NULL;
    uint64_t *key_id = NULL;
    size_t n0 = attrs ? attrs->n : 0, m0 = meta ? meta->n : 0;
    int rc;

    TROVE_TRY(rc, check_open(ps));
    TROVE_TRY(rc, assign_tids(ps));
    TROVE_TRY(rc, trove__trace_order(ps->rec, ps->nrec, &ps->st.threads));
    TROVE_TRY(rc, name_tracks(ps));
    TROVE_TRY(rc, order_flows(ps, &key_id)); /* before the names: it renames rows */
    TROVE_TRY(rc, assign_names(ps, &map));
    TROVE_TRY(rc, trove_events_reserve(events, ps->nrec));
    if (flows)
        TROVE_TRY(rc, trove_flows_reserve(flows, ps->nflows));
    if (attrs)
        TROVE_TRY(rc, hand_rows(ps, events->len, attrs, meta));
    if (names && (rc = trove_names_merge(names, ps->tmp_names)) != TROVE_OK) {
        if (attrs)
            attrs->n = n0;
        if (meta)
            meta->n = m0;
        goto out;
    }
    for (size_t i = 0; i < ps->nrec; i++) {
        const struct trove__trec *r = &ps->rec[i];
        events->ev[events->len + i] = (struct trove_event){
            r->start, r->dur, r->pid, r->tid, r->kind, r->depth, r->extra, 0, map[r->name]};
    }
    events->len += ps->nrec;
    for (size_t i = 0; flows && i < ps->nflows; i++) {
        const struct trove__cflow *c = &ps->flows[i];
        struct trove_flow *f = &flows->f[flows->len + i];
        memset(f, 0, sizeof *f);
        f->ts_ns = c->ts;
        f->id = key_id[c->key];
        f->pid = c->pid;
        f->tid = c->tid;
        f->name_id = map[c->name];
        f->phase = c->phase;
        f->flags = c->flags;
    }
    if (flows)
        flows->len += ps->nflows;
out:
    free(map);
    free(key_id);
    return rc;
}

void trove__chrome_free(struct trove__chrome *ps)
{
    trove__json_free(&ps->js);
    free(ps->name.ptr);
    free(ps->args_name.ptr);
    free(ps->args_step.ptr);
    free(ps->arg_key.ptr);
    trove_bytes_free(&ps->fix);
    trove_bytes_free(&ps->arg_keys);
    trove_bytes_free(&ps->tkey);
    free(ps->args);
    free(ps->cats);
    free(ps->rec);
    trove_bytes_free(&ps->arena);
    free(ps->nm);
    free(ps->nm_index);
    for (uint32_t i = 0; i < ps->nthr; i++)
        free(ps->thr[i].stk);
    free(ps->thr);
    free(ps->thr_index);
    trove__ct_free(&ps->tracks);
    trove__ct_free(&ps->flowkeys);
    free(ps->flows);
    trove_names_free(ps->tmp_names);
    trove_attrs_free(&ps->stage);
    trove_attrs_free(&ps->meta);
    free(ps->aval.ptr);
    trove_bytes_free(&ps->ajson);
    free(ps->links);
}

size_t trove_chrome_skipped_text(const struct trove_chrome_stats *st, char *buf, size_t n)
{
    size_t k = 0;
    if (n == 0)
        return 0;
    buf[0] = 0;
    for (int c = 0; c < 128; c++) {
        int w;
        if (!st->skipped_phase[c])
            continue;
        if (c == 0)
            w = snprintf(buf + k, n - k, "%s%llu of other phases", k ? ", " : "",
                         (unsigned long long)st->skipped_phase[c]);
        else if (c > 0x20 && c < 0x7f && c != '"' && c != '\\')
            w = snprintf(buf + k, n - k, "%s%llu %c", k ? ", " : "",
                         (unsigned long long)st->skipped_phase[c], c);
        else
            w = snprintf(buf + k, n - k, "%s%llu of ph 0x%02x", k ? ", " : "",
                         (unsigned long long)st->skipped_phase[c], (unsigned)c);
        if (w < 0 || (size_t)w >= n - k) {
            buf[k] = 0;
            return k;
        }
        k += (size_t)w;
    }
    return k;
}

/* The non-zero counts of by[] for the phases in order, as "104 B events, 3 b events and 2 S
 * events" then tail, written at buf + k. Returns the new length, or (size_t)-1 when it does
 * not fit (buf[k] is then the caller's to cut). */
static size_t unmatched_list(const uint64_t *by, const char *order, const char *tail,
                             char *buf, size_t n, size_t k)
{
    size_t count = 0, done = 0;
    int w;
    for (const char *c = order; *c; c++)
        count += by[(uint8_t)*c] != 0;
    if (!count)
        return k;
    for (const char *c = order; *c; c++) {
        uint64_t v = by[(uint8_t)*c];
        const char *sep = done == 0 ? "" : done + 1 == count ? " and " : ", ";
        if (!v)
            continue;
        if (*c == 'T' && !strcmp(tail, " never ended")) /* the steps of an open S */
            w = snprintf(buf + k, n - k, "%s%llu T step%s of S spans", sep,
                         (unsigned long long)v, v == 1 ? "" : "s");
        else
            w = snprintf(buf + k, n - k, "%s%llu %c event%s", sep, (unsigned long long)v, *c,
                         v == 1 ? "" : "s");
        if (w < 0 || (size_t)w >= n - k)
            return (size_t)-1;
        k += (size_t)w;
        done++;
    }
    w = snprintf(buf + k, n - k, "%s", tail);
    if (w < 0 || (size_t)w >= n - k)
        return (size_t)-1;
    return k + (size_t)w;
}

size_t trove_chrome_unmatched_text(const struct trove_chrome_stats *st, char *buf, size_t n)
{
    size_t k, k2;
    if (n == 0)
        return 0;
    buf[0] = 0;
    k = unmatched_list(st->unmatched_begin_phase, "BbST", " never ended", buf, n, 0);
    if (k == (size_t)-1) {
        buf[0] = 0;
        return 0;
    }
    if (k && k + 3 >= n)
        return k;
    k2 = unmatched_list(st->unmatched_end_phase, "EeTF", " never begun", buf, n,
                        k ? k + 2 : 0);
    if (k2 == (size_t)-1 || k2 == k + 2 || (k == 0 && k2 == 0)) {
        buf[k] = 0; /* nothing (more) fits, or nothing never begun */
        return k;
    }
    if (k)
        memcpy(buf + k, "; ", 2);
    return k2;
}
