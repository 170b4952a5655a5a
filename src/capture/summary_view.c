/*
 * summary_view.c: trove_capture_view (a range of a capture at a width in pixels, as the view
 * frame of docs/formats/view.md) and trove_capture_tracks_json.
 *
 * A view walks the summary tree from its root: a node whose time bounds miss the range is
 * skipped; one whose cells are at least as fine as the answer's (its shift at most the
 * answer's) answers for its segments; any other is passed for its children, and a segment
 * whose node is too coarse (or missing, or damaged) is read. So zoomed out it reads a few
 * nodes, and zoomed in the segments the range touches. Every event of the covered segments
 * is counted once: from the node that answers for its segment, or from the segment itself.
 */
#include "summary_read.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"
#include "common/json.h"
#include "common/varint.h"

#include <inttypes.h>
#include <libdeflate.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VIEW_MAGIC "TROVVIEW"
#define VIEW_VERSION 1u
#define VIEW_FIXED 60u
#define VIEW_DEFLATE_OVER 4096u /* bodies longer than this go deflated */
/* An answer reads at most this many events' segments (16 of 1 MiB, 8 of model's 2 MiB), and
 * takes at most this many cells from nodes, when coarser summaries can spare it
 * (choose_shift). */
#define VIEW_MAX_SEGMENT_EVENTS ((uint64_t)1 << 19)
#define VIEW_MAX_CELLS 65536u
/* An answer is at most this long: one that is longer is made again coarser (a dense range
 * read from its segments has a cell per track, depth and pixel). */
#define VIEW_MAX_BYTES ((size_t)256 << 10)

struct vcell {
    uint64_t track;
    struct trove_summary_cell c;
};

struct vraw {
    uint64_t track;
    uint64_t index;
    struct trove_event ev;
};

struct view {
    struct trove__sumread r;
    const struct trove_view_options *opt;
    uint64_t from, to;        /* the range, to > from */
    uint32_t shift;           /* the answer's: the pixel's, or coarser (choose_shift, and
                                 VIEW_MAX_BYTES) */
    uint64_t c_lo, c_hi;      /* the columns that cover it */
    struct vcell *cells;
    size_t ncells, capcells;
    struct vraw *raw;
    size_t nraw, capraw;
    struct trove_diag *diag;
    /* the nodes read so far, by level and index (choose_shift's plans and the walk read the
     * same ones): a node, or state 2 for one that could not be read */
    struct trove_summary *cache[TROVE__SUMMARY_MAX_LEVELS];
    uint8_t *state[TROVE__SUMMARY_MAX_LEVELS];
};

/* Node (level, index), read once: NULL when it is missing or damaged. */
static const struct trove_summary *node_of(struct view *w, unsigned level, uint64_t index)
{
    if (!w->cache[level]) {
        w->cache[level] = trove__calloc((size_t)w->r.count[level] + 1, sizeof *w->cache[level]);
        w->state[level] = trove__calloc((size_t)w->r.count[level] + 1, 1);
        if (!w->cache[level] || !w->state[level])
            return NULL; /* out of memory: read what it covers instead */
    }
    if (w->state[level][index] == 0)
        w->state[level][index] =
            trove__sumread_node(&w->r, level, index, &w->cache[level][index]) == TROVE_OK ? 1 : 2;
    return w->state[level][index] == 1 ? &w->cache[level][index] : NULL;
}

static void cache_free(struct view *w)
{
    for (unsigned l = 0; l < TROVE__SUMMARY_MAX_LEVELS; l++) {
        for (uint64_t i = 0; w->cache[l] && w->state[l] && i < w->r.count[l]; i++)
            if (w->state[l][i] == 1)
                trove_summary_free(&w->cache[l][i]);
        free(w->cache[l]);
        free(w->state[l]);
    }
}

static int add_cell(struct view *w, uint64_t track, const struct trove_summary_cell *c)
{
    if (w->ncells == w->capcells) {
        size_t cap = w->capcells ? w->capcells * 2 : 1024;
        struct vcell *p = trove__realloc(w->cells, cap * sizeof *p);
        if (!p)
            return TROVE_FAIL(w->diag, TROVE_ERR_NOMEM, 0, "out of memory");
        w->cells = p;
        w->capcells = cap;
    }
    w->cells[w->ncells].track = track;
    w->cells[w->ncells++].c = *c;
    return TROVE_OK;
}

static int add_raw(struct view *w, uint64_t track, uint64_t index, const struct trove_event *e)
{
    if (w->nraw == w->capraw) {
        size_t cap = w->capraw ? w->capraw * 2 : 256;
        struct vraw *p = trove__realloc(w->raw, cap * sizeof *p);
        if (!p)
            return TROVE_FAIL(w->diag, TROVE_ERR_NOMEM, 0, "out of memory");
        w->raw = p;
        w->capraw = cap;
    }
    w->raw[w->nraw].track = track;
    w->raw[w->nraw].index = index;
    w->raw[w->nraw++].ev = *e;
    return TROVE_OK;
}

/* One event, wherever it came from: whole when it is a span of a cell or more that
 * overlaps the range, else into its cell when its column covers the range. */
static int take_event(struct view *w, const struct trove_event *e, uint64_t index)
{
    uint64_t track = (uint64_t)e->pid << 32 | e->tid, col;
    struct trove_summary_cell c;

    if (!trove__sumread_track_ok(w->opt->tracks, w->opt->ntracks, e->pid, e->tid))
        return TROVE_OK;
    if (trove__summary_is_long(e, w->shift)) {
        if (e->start_ns < w->to && trove_event_end(e) > w->from)
            return add_raw(w, track, index, e);
        return TROVE_OK;
    }
    col = e->start_ns >> w->shift;
    if (col < w->c_lo || col > w->c_hi)
        return TROVE_OK;
    memset(&c, 0, sizeof c);
    c.lane = trove__summary_lane(e);
    c.col = col;
    c.count = 1;
    c.busy = trove__summary_is_span(e->kind) ? e->dur_ns : 0;
    c.name = e->name_id;
    c.name_dur = c.busy;
    if (c.lane == TROVE_SUMMARY_LANE_COUNTER)
        c.vmin = c.vmax = e->dur_ns;
    return add_cell(w, track, &c);
}

/* A node fine enough: its cells (shifted to the answer's) and long events. */
static int take_node(struct view *w, const struct trove_summary *n, uint64_t first_event)
{
    int rc;

    for (size_t i = 0; i < n->ncells; i++) {
        const struct trove_summary_track *t = &n->tracks[n->cells[i].track];
        struct trove_summary_cell c = n->cells[i];
        if (!trove__sumread_track_ok(w->opt->tracks, w->opt->ntracks, t->pid, t->tid))
            continue;
        c.col >>= w->shift - n->shift;
        if (c.col < w->c_lo || c.col > w->c_hi)
            continue;
        if ((rc = add_cell(w, (uint64_t)t->pid << 32 | t->tid, &c)) != TROVE_OK)
            return rc;
    }
    for (size_t i = 0; i < n->nlongs; i++)
        if ((rc = take_event(w, &n->longs[i].ev, first_event + n->longs[i].index)) != TROVE_OK)
            return rc;
    return TROVE_OK;
}

static int take_segment(struct view *w, uint64_t k)
{
    size_t n;
    int rc;

    if ((rc = trove__sumread_segment(&w->r, k, &n, w->diag)) != TROVE_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = take_event(w, &w->r.ev[i], k * w->r.per + i)) != TROVE_OK)
            return rc;
    return TROVE_OK;
}

/* Node (level, index): skipped, used, passed to its children, or (a segment) read. */
static int walk(struct view *w, unsigned level, uint64_t index)
{
    const struct trove__sumbound *b = &w->r.b[level][index];
    uint64_t lo_t = w->c_lo << w->shift, span = trove__sumread_span(level);
    const struct trove_summary *node;
    int rc;

    /* raw events need start < to and end > from; cells a start in [lo_t, (c_hi + 1) << shift) */
    if (b->min_start >> w->shift > w->c_hi || (b->max_end <= w->from && b->max_start < lo_t))
        return TROVE_OK;
    if ((node = node_of(w, level, index)) && node->shift <= w->shift)
        return take_node(w, node, index * span * w->r.per);
    if (level == 0)
        return take_segment(w, index);
    for (uint64_t c = index * TROVE_SUMMARY_FANOUT;
         c < (index + 1) * TROVE_SUMMARY_FANOUT && c < w->r.count[level - 1]; c++)
        if ((rc = walk(w, level - 1, c)) != TROVE_OK)
            return rc;
    return TROVE_OK;
}

/*
 * How many segments an answer at the view's shift would read (stopping past `cap`), and
 * the least node shift above it among the nodes too coarse to answer (UINT32_MAX: none) —
 * the shift to try next. Nodes are read to know their shift; segments are not.
 */
static int plan(struct view *w, unsigned level, uint64_t index, uint64_t cap, uint64_t *raw,
                uint64_t *cells, uint32_t *next)
{
    const struct trove__sumbound *b = &w->r.b[level][index];
    uint64_t lo_t = w->c_lo << w->shift;
    const struct trove_summary *node;

    if (*raw > cap || *cells > VIEW_MAX_CELLS)
        return TROVE_OK;
    if (b->min_start >> w->shift > w->c_hi || (b->max_end <= w->from && b->max_start < lo_t))
        return TROVE_OK;
    if ((node = node_of(w, level, index)) != NULL) {
        if (node->shift <= w->shift) {
            *cells += node->ncells + node->nlongs;
            return TROVE_OK;
        }
        if (node->shift < *next)
            *next = node->shift;
    }
    if (level == 0) {
        (*raw)++;
        return TROVE_OK;
    }
    for (uint64_t c = index * TROVE_SUMMARY_FANOUT;
         c < (index + 1) * TROVE_SUMMARY_FANOUT && c < w->r.count[level - 1] && *raw <= cap; c++)
        plan(w, level - 1, c, cap, raw, cells, next);
    return TROVE_OK;
}

/* The answer's shift: the pixel's, unless the summaries would leave more than
 * VIEW_MAX_SEGMENT_EVENTS events' segments to read, or give more than VIEW_MAX_CELLS cells,
 * then the least coarser one at which they do not (or, when no shift does, the pixel's: the
 * segments are read). */
static void choose_shift(struct view *w)
{
    uint32_t shift = w->shift, floor = w->shift;
    uint64_t per = w->r.h.segment_bytes / TROVE_EVENT_SIZE;
    uint64_t cap = per && per < VIEW_MAX_SEGMENT_EVENTS ? VIEW_MAX_SEGMENT_EVENTS / per : 1;

    for (;;) {
        uint64_t raw = 0, cells = 0;
        uint32_t next = UINT32_MAX;
        w->shift = shift;
        w->c_lo = w->from >> shift;
        w->c_hi = (w->to - 1) >> shift;
        if (w->r.levels == 0)
            return;
        plan(w, w->r.levels - 1, 0, cap, &raw, &cells, &next);
        if (raw <= cap && cells <= VIEW_MAX_CELLS)
            return;
        if (next == UINT32_MAX || next > 63) { /* nothing coarser answers: the least */
            w->shift = floor;
            w->c_lo = w->from >> w->shift;
            w->c_hi = (w->to - 1) >> w->shift;
            return;
        }
        shift = next;
    }
}

static int vcell_cmp(const void *a, const void *b)
{
    const struct vcell *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->c.lane != y->c.lane)
        return x->c.lane < y->c.lane ? -1 : 1;
    return x->c.col < y->c.col ? -1 : x->c.col > y->c.col;
}

static int vraw_cmp(const void *a, const void *b)
{
    const struct vraw *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->ev.start_ns != y->ev.start_ns)
        return x->ev.start_ns < y->ev.start_ns ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Fold w's cells of equal keys, as a node merges them. */
static void fold(struct view *w)
{
    size_t m = 0;

    if (w->ncells == 0)
        return;
    qsort(w->cells, w->ncells, sizeof *w->cells, vcell_cmp);
    for (size_t i = 1; i < w->ncells; i++) {
        struct vcell *d = &w->cells[m], *c = &w->cells[i];
        if (vcell_cmp(d, c) != 0) {
            w->cells[++m] = *c;
            continue;
        }
        d->c.count += c->c.count;
        d->c.busy = d->c.busy + c->c.busy < d->c.busy ? UINT64_MAX : d->c.busy + c->c.busy;
        if (c->c.name_dur > d->c.name_dur ||
            (c->c.name_dur == d->c.name_dur && c->c.name < d->c.name)) {
            d->c.name = c->c.name;
            d->c.name_dur = c->c.name_dur;
        }
        if (d->c.lane == TROVE_SUMMARY_LANE_COUNTER) {
            uint64_t a = c->c.vmin, b = d->c.vmin, x = c->c.vmax, y = d->c.vmax;
            /* unsigned order of the mapped bits is the values' order */
            a = (a >> 63) ? ~a : a | (uint64_t)1 << 63;
            b = (b >> 63) ? ~b : b | (uint64_t)1 << 63;
            x = (x >> 63) ? ~x : x | (uint64_t)1 << 63;
            y = (y >> 63) ? ~y : y | (uint64_t)1 << 63;
            if (a < b)
                d->c.vmin = c->c.vmin;
            if (x > y)
                d->c.vmax = c->c.vmax;
        }
    }
    w->ncells = m + 1;
}

/* ---- the frame -------------------------------------------------------------------------- */

static int put_v(struct trove_bytes *b, uint64_t v)
{
    uint8_t tmp[10];
    return trove_bytes_append(b, tmp, (size_t)(trove_put_varint(tmp, v) - tmp));
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int encode(struct view *w, struct trove_names *names, struct trove_bytes *out)
{
    struct trove_bytes body = {0};
    uint32_t *ids = NULL;
    size_t nids = 0, ntracks = 0, ri = 0, ci = 0, start = out->len;
    struct libdeflate_compressor *z = NULL;
    uint32_t flags = 0;
    int rc = TROVE_OK;

    /* the names the answer refers to, each once, by id */
    if (names) {
        if (!(ids = trove__mallocarray(w->nraw + w->ncells + 1, sizeof *ids)))
            return TROVE_ERR_NOMEM;
        for (size_t i = 0; i < w->nraw; i++)
            ids[nids++] = w->raw[i].ev.name_id;
        for (size_t i = 0; i < w->ncells; i++)
            ids[nids++] = w->cells[i].c.name;
        qsort(ids, nids, sizeof *ids, u32_cmp);
        {
            size_t m = 0;
            for (size_t i = 0; i < nids; i++)
                if (m == 0 || ids[m - 1] != ids[i])
                    ids[m++] = ids[i];
            nids = m;
        }
        for (size_t i = 0; i < nids && rc == TROVE_OK; i++) {
            size_t len = 0;
            const char *s = trove_names_get(names, TROVE_NAME_EVENT, ids[i], 0, &len);
            if ((rc = put_v(&body, ids[i])) == TROVE_OK && (rc = put_v(&body, s ? len : 0)) == TROVE_OK)
                rc = trove_bytes_append(&body, s ? s : "", s ? len : 0);
        }
    }
    /* the tracks, each with its events and cells */
    while (rc == TROVE_OK && (ri < w->nraw || ci < w->ncells)) {
        uint64_t t = ri < w->nraw && (ci == w->ncells || w->raw[ri].track <= w->cells[ci].track)
                         ? w->raw[ri].track
                         : w->cells[ci].track;
        size_t re = ri, ce = ci;
        uint64_t prev = w->from;
        while (re < w->nraw && w->raw[re].track == t)
            re++;
        while (ce < w->ncells && w->cells[ce].track == t)
            ce++;
        ntracks++;
        rc = put_v(&body, t >> 32);
        rc = rc ? rc : put_v(&body, (uint32_t)t);
        rc = rc ? rc : put_v(&body, re - ri);
        rc = rc ? rc : put_v(&body, ce - ci);
        for (; rc == TROVE_OK && ri < re; ri++) {
            const struct vraw *v = &w->raw[ri];
            uint8_t k[3] = {v->ev.kind, v->ev.depth, v->ev.extra};
            rc = put_v(&body, trove_zigzag64((int64_t)(v->ev.start_ns - prev)));
            rc = rc ? rc : put_v(&body, v->ev.dur_ns);
            rc = rc ? rc : trove_bytes_append(&body, k, 3);
            rc = rc ? rc : put_v(&body, v->ev.name_id);
            rc = rc ? rc : put_v(&body, v->index);
            prev = v->ev.start_ns;
        }
        for (size_t c0 = ci; rc == TROVE_OK && ci < ce; ci++) {
            const struct trove_summary_cell *c = &w->cells[ci].c, *p = ci > c0 ? &w->cells[ci - 1].c : NULL;
            rc = put_v(&body, p ? c->lane - p->lane : c->lane);
            rc = rc ? rc : put_v(&body, p && p->lane == c->lane ? c->col - p->col - 1 : c->col - w->c_lo);
            rc = rc ? rc : put_v(&body, c->count - 1);
            rc = rc ? rc : put_v(&body, c->busy);
            rc = rc ? rc : put_v(&body, c->name);
            rc = rc ? rc : put_v(&body, c->name_dur);
            if (rc == TROVE_OK && c->lane == TROVE_SUMMARY_LANE_COUNTER) {
                rc = put_v(&body, c->vmin);
                rc = rc ? rc : put_v(&body, c->vmax);
            }
        }
    }
    if (rc != TROVE_OK)
        goto out;
    if (body.len > UINT32_MAX / 2) {
        rc = TROVE_ERR_LIMIT;
        goto out;
    }
    if ((rc = trove_bytes_reserve(out, VIEW_FIXED + body.len + 64)) != TROVE_OK)
        goto out;
    if (body.len > VIEW_DEFLATE_OVER && (z = libdeflate_alloc_compressor(1))) {
        size_t bound = libdeflate_deflate_compress_bound(z, body.len), packed;
        if ((rc = trove_bytes_reserve(out, VIEW_FIXED + bound)) != TROVE_OK)
            goto out;
        packed = libdeflate_deflate_compress(z, body.ptr, body.len, out->ptr + start + VIEW_FIXED,
                                             bound);
        if (packed > 0 && packed < body.len) {
            flags = 1;
            out->len = start + VIEW_FIXED + packed;
        }
    }
    if (!flags) {
        if (body.len)
            memcpy(out->ptr + start + VIEW_FIXED, body.ptr, body.len);
        out->len = start + VIEW_FIXED + body.len;
    }
    {
        uint8_t *h = out->ptr + start;
        memcpy(h, VIEW_MAGIC, 8);
        trove__put_le32(h + 8, VIEW_VERSION);
        trove__put_le32(h + 12, flags);
        trove__put_le64(h + 16, w->from);
        trove__put_le64(h + 24, w->to);
        trove__put_le32(h + 32, w->shift);
        trove__put_le32(h + 36, (uint32_t)ntracks);
        trove__put_le32(h + 40, (uint32_t)nids);
        trove__put_le32(h + 44, (uint32_t)w->nraw);
        trove__put_le32(h + 48, (uint32_t)w->ncells);
        trove__put_le32(h + 52, (uint32_t)(out->len - start - VIEW_FIXED));
        trove__put_le32(h + 56, (uint32_t)body.len);
    }
out:
    libdeflate_free_compressor(z);
    trove_bytes_free(&body);
    free(ids);
    return rc;
}

int trove_capture_view(struct trove_store *s, const char *name,
                       const struct trove_view_options *opt, struct trove_bytes *out,
                       struct trove_query_figures *qs, struct trove_diag *diag)
{
    struct trove_query_figures local = {0};
    struct trove_names *names = NULL;
    struct view w;
    uint64_t width;
    int rc;

    memset(&w, 0, sizeof w);
    if (!s || !opt || !out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "a view needs a store, options and an output");
    if (opt->px < 1 || opt->px > TROVE_VIEW_MAX_PX)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "px is %" PRIu32 "; it is 1 to %u", opt->px,
                          TROVE_VIEW_MAX_PX);
    if (opt->ntracks && !opt->tracks)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "a track list without its tracks");
    for (size_t i = 1; i < opt->ntracks; i++)
        if (opt->tracks[i] <= opt->tracks[i - 1])
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "the track list is not sorted");
    w.opt = opt;
    w.diag = diag;
    /* the names first: the reader holds the capture's volume open */
    if (opt->names && ((rc = trove_names_new(&names)) != TROVE_OK ||
                       (rc = trove_capture_read_names(s, name, names, diag)) != TROVE_OK)) {
        trove_names_free(names);
        return rc == TROVE_ERR_NOMEM ? TROVE_FAIL(diag, rc, 0, "out of memory") : rc;
    }
    if ((rc = trove__sumread_open(&w.r, s, name, qs ? qs : &local, diag)) != TROVE_OK) {
        trove_names_free(names);
        return rc;
    }
    /* left out (0): the capture's own span, from its first event to past its last */
    w.r.no_sketches = 1;
    w.from = opt->from_ns ? opt->from_ns : w.r.h.info.first_ns;
    w.to = opt->to_ns ? opt->to_ns
                      : w.r.h.info.end_ns < UINT64_MAX ? w.r.h.info.end_ns + 1 : UINT64_MAX;
    if (w.to <= w.from) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "the range ends (%" PRIu64 ") at or before it starts (%" PRIu64 ")", w.to,
                        w.from);
        goto out;
    }
    width = (w.to - w.from) / opt->px;
    w.shift = width ? 63u - (unsigned)__builtin_clzll(width) : 0;
    for (size_t start = out->len;;) {
        choose_shift(&w);
        if (w.r.levels > 0 && (rc = walk(&w, w.r.levels - 1, 0)) != TROVE_OK)
            goto out;
        fold(&w);
        if (w.nraw)
            qsort(w.raw, w.nraw, sizeof *w.raw, vraw_cmp);
        if ((rc = encode(&w, names, out)) != TROVE_OK) {
            rc = TROVE_FAIL(diag, rc, 0, "capture %s: encoding the view: %s", name,
                            trove_strerror(rc));
            goto out;
        }
        if (out->len - start <= VIEW_MAX_BYTES || w.shift >= 63)
            break;
        /* too long: again, twice as coarse (four times when it is over twice the bound) */
        w.shift += out->len - start > 2 * VIEW_MAX_BYTES && w.shift < 62 ? 2 : 1;
        out->len = start;
        w.ncells = w.nraw = 0;
    }
out:
    trove_names_free(names);
    cache_free(&w);
    trove__sumread_close(&w.r);
    free(w.cells);
    free(w.raw);
    return rc;
}

/* ---- tracks ------------------------------------------------------------------------------- */


static const char *track_kind(const struct trove_summary_track *t)
{
    if (!trove_tid_is_synthetic(t->tid))
        return "thread";
    return t->kinds == 1u << TROVE_KIND_COUNTER ? "counter"
           : t->kinds == 1u << TROVE_KIND_FRAME  ? "frames"
                                                 : "async";
}

/* Every track of the capture: the root node's, or (without summaries, or with a damaged
 * root) a node built from every segment. */
static int all_tracks(struct trove__sumread *r, struct trove_summary *out, struct trove_diag *diag)
{
    int rc;

    memset(out, 0, sizeof *out);
    if (r->levels == 0)
        return TROVE_OK;
    if (trove__sumread_node(r, r->levels - 1, 0, out) == TROVE_OK)
        return TROVE_OK;
    for (uint64_t k = 0; k < r->h.info.segments; k++) {
        struct trove_summary leaf;
        size_t n;
        if ((rc = trove__sumread_segment(r, k, &n, diag)) != TROVE_OK)
            return rc;
        if ((rc = trove_summary_build(r->ev, n, &leaf)) != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "out of memory");
        /* only the tracks matter: drop the rest before joining */
        leaf.ncells = leaf.nlongs = leaf.nsketches = leaf.nbuckets = 0;
        rc = trove_summary_join(out, out, &leaf, 0, 1);
        trove_summary_free(&leaf);
        if (rc != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "out of memory");
    }
    return TROVE_OK;
}

int trove_capture_tracks_json(struct trove_store *s, const char *name, struct trove_bytes *out,
                              struct trove_query_figures *qs, struct trove_diag *diag)
{
    struct trove_query_figures local = {0};
    struct trove__sumread r;
    struct trove_summary all;
    struct trove_names *names = NULL;
    int rc;

    memset(&all, 0, sizeof all);
    memset(&r, 0, sizeof r);
    if ((rc = trove_names_new(&names)) != TROVE_OK ||
        (rc = trove_capture_read_names(s, name, names, diag)) != TROVE_OK ||
        (rc = trove__sumread_open(&r, s, name, qs ? qs : &local, diag)) != TROVE_OK)
        goto out;
    r.no_sketches = 1;
    if ((rc = all_tracks(&r, &all, diag)) != TROVE_OK)
        goto out;
    rc = trove__sumread_fmt(out, "{\"capture\":\"%s\",\"events\":%" PRIu64 ",\"first_ns\":%" PRIu64
                      ",\"end_ns\":%" PRIu64 ",\"summaries\":%s,\"processes\":[",
                 name, r.h.info.events, r.h.info.first_ns, r.h.info.end_ns,
                 r.summaries ? "true" : "false");
    for (size_t i = 0; rc == TROVE_OK && i < all.ntracks; i++) {
        const struct trove_summary_track *t = &all.tracks[i];
        uint64_t events = 0, first = UINT64_MAX, end = 0;
        size_t len = 0;
        const char *pn;
        int32_t sort = 0;
        if (i > 0 && all.tracks[i - 1].pid == t->pid)
            continue;
        for (size_t j = i; j < all.ntracks && all.tracks[j].pid == t->pid; j++) {
            events += all.tracks[j].events;
            first = all.tracks[j].first_ns < first ? all.tracks[j].first_ns : first;
            end = all.tracks[j].end_ns > end ? all.tracks[j].end_ns : end;
        }
        pn = trove_names_get(names, TROVE_NAME_PROCESS, t->pid, 0, &len);
        trove_names_get_sort(names, TROVE_NAME_PROCESS_SORT, t->pid, 0, &sort);
        rc = trove__sumread_fmt(out, "%s{\"id\":\"%" PRIu32 "\",\"pid\":%" PRIu32 ",\"name\":", i ? "," : "",
                     t->pid, t->pid);
        rc = rc ? rc : trove__json_put_str(out, pn ? pn : "", pn ? len : 0);
        rc = rc ? rc : trove__sumread_fmt(out, ",\"sort\":%" PRId32 ",\"events\":%" PRIu64 ",\"first_ns\":%"
                                    PRIu64 ",\"end_ns\":%" PRIu64 "}",
                               sort, events, first, end);
    }
    rc = rc ? rc : trove__sumread_fmt(out, "],\"tracks\":[");
    for (size_t i = 0; rc == TROVE_OK && i < all.ntracks; i++) {
        const struct trove_summary_track *t = &all.tracks[i];
        size_t len = 0;
        const char *tn = trove_names_get(names, TROVE_NAME_THREAD, t->pid, t->tid, &len);
        int32_t sort = 0;
        trove_names_get_sort(names, TROVE_NAME_THREAD_SORT, t->pid, t->tid, &sort);
        rc = trove__sumread_fmt(out,
                     "%s{\"id\":\"%" PRIu32 ":%" PRIu32 "\",\"process\":\"%" PRIu32
                     "\",\"kind\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"name\":",
                     i ? "," : "", t->pid, t->tid, t->pid, track_kind(t), t->pid, t->tid);
        rc = rc ? rc : trove__json_put_str(out, tn ? tn : "", tn ? len : 0);
        rc = rc ? rc : trove__sumread_fmt(out, ",\"sort\":%" PRId32 ",\"events\":%" PRIu64
                                    ",\"max_depth\":%" PRIu32 ",\"first_ns\":%" PRIu64
                                    ",\"end_ns\":%" PRIu64 "}",
                               sort, t->events, t->max_depth, t->first_ns, t->end_ns);
    }
    rc = rc ? rc : trove__sumread_fmt(out, "]}");
    if (rc != TROVE_OK)
        rc = TROVE_FAIL(diag, rc, 0, "capture %s: writing its tracks: %s", name, trove_strerror(rc));
out:
    trove_names_free(names);
    trove_summary_free(&all);
    trove__sumread_close(&r);
    return rc;
}
