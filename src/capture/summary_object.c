/*
 * summary_object.c: a summary node's object (docs/formats/summary.md, "The object"): the
 * encoder and the decoder, which checks every bound before it trusts a field.
 */
#include "summary_internal.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"
#include "common/sealed.h"
#include "common/varint.h"
#include "trove/testing.h"

#include <inttypes.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "TROVSUM1"
#define VERSION 3u
#define FIXED 48u /* magic, version, flags, raw_len, packed_len, raw_a, packed_a (u64s) */
#define WHAT "summary object"

static const uint32_t known_version = VERSION;

/* ---- the object --------------------------------------------------------------------------- */

/* The object around an inflated payload: fixed part, two deflate streams — raw[0..split)
 * (all a view reads: the head, tracks, cells and long events) and raw[split..len) (the
 * sketches; none when empty) — and the checksum. */
static int seal(const uint8_t *raw, size_t len, size_t split, int level, struct trove_bytes *out)
{
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
    size_t bound, pa, pb = 0, start = out->len;
    uint8_t *p;
    int rc;

    if (!c)
        return TROVE_ERR_NOMEM;
    bound = libdeflate_deflate_compress_bound(c, split) + libdeflate_deflate_compress_bound(c, len - split);
    if ((rc = trove_bytes_reserve(out, FIXED + bound + TROVE__SEALED_TRAILER)) != TROVE_OK)
        goto out;
    p = out->ptr + start;
    pa = libdeflate_deflate_compress(c, raw, split, p + FIXED, bound);
    if (pa > 0 && len > split)
        pb = libdeflate_deflate_compress(c, raw + split, len - split, p + FIXED + pa, bound - pa);
    if (pa == 0 || (len > split && pb == 0)) { /* cannot happen with bound-sized room */
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if (FIXED + pa + pb + TROVE__SEALED_TRAILER > TROVE_SUMMARY_MAX_OBJECT) {
        rc = TROVE_ERR_LIMIT;
        goto out;
    }
    memcpy(p, MAGIC, 8);
    trove__put_le32(p + 8, VERSION);
    trove__put_le32(p + 12, 0);
    trove__put_le64(p + 16, len);
    trove__put_le64(p + 24, pa + pb);
    trove__put_le64(p + 32, split);
    trove__put_le64(p + 40, pa);
    trove__sealed_seal(p, FIXED + pa + pb + TROVE__SEALED_TRAILER);
    out->len = start + FIXED + pa + pb + TROVE__SEALED_TRAILER;
out:
    libdeflate_free_compressor(c);
    return rc;
}

/* The payload's columns (summary.md, "The object"): each section's fields are written one
 * column after another, each column's byte length first, so that like values sit together
 * for the deflate stage. */
enum {
    CELL_TRACK, CELL_LANE, CELL_COL, CELL_COUNT, CELL_BUSY, CELL_NAME, CELL_NAME_DUR, CELL_VMIN,
    CELL_VMAX, CELL_COLS
};
enum {
    LONG_TRACK, LONG_INDEX, LONG_START, LONG_DUR, LONG_KIND, LONG_DEPTH, LONG_EXTRA, LONG_NAME,
    LONG_COLS
};
enum {
    SK_NAME, SK_COUNT, SK_TOTAL, SK_OTHER, SK_MIN, SK_SPREAD, SK_N, SK_INDEX, SK_BCOUNT, SK_COLS
};
#define MOST_COLS 9 /* CELL_COLS, the most of any section */

/* Each column's bytes at col[j] (room for its values), appended to p with their lengths. */
static uint8_t *put_cols(uint8_t *p, uint8_t *const *col, uint8_t *const *end, int n)
{
    for (int j = 0; j < n; j++)
        p = trove_put_varint(p, (uint64_t)(end[j] - col[j]));
    for (int j = 0; j < n; j++) {
        memcpy(p, col[j], (size_t)(end[j] - col[j]));
        p += end[j] - col[j];
    }
    return p;
}

/* Room for `rows` varints in each of n columns from *scratch on. */
static void split(uint8_t **scratch, uint8_t **col, uint8_t **end, int n, size_t rows)
{
    for (int j = 0; j < n; j++) {
        col[j] = end[j] = *scratch;
        *scratch += rows * 10;
    }
}

int trove_summary_encode(const struct trove_summary *s, struct trove_bytes *out)
{
    return trove__summary_encode_draft(s, 0, out);
}

int trove__summary_encode_draft(const struct trove_summary *s, int draft, struct trove_bytes *out)
{
    struct trove_bytes raw = {0};
    uint8_t *col[MOST_COLS], *end[MOST_COLS], *scratch, *p;
    size_t view_end;
    size_t nsk = s && s->level ? s->nsketches : 0, nbk = s && s->level ? s->nbuckets : 0, rows;
    int rc;

    if (!s || !out || s->shift > 63)
        return TROVE_ERR_INVALID;
    /* the payload, and after it each section's columns at 10 bytes a value */
    rows = s->ncells > s->nlongs ? s->ncells : s->nlongs;
    rows = rows > nsk + nbk ? rows : nsk + nbk;
    if ((rc = trove_bytes_reserve(&raw, 2 * (16 * 10 + s->ntracks * 70 + s->ncells * 100 +
                                             s->nlongs * 80 + nsk * 80 + nbk * 20 + 200) +
                                            rows * 10 * MOST_COLS)) != TROVE_OK)
        goto out;
    p = raw.ptr;
    p = trove_put_varint(p, s->level);
    p = trove_put_varint(p, s->shift);
    p = trove_put_varint(p, s->events);
    p = trove_put_varint(p, s->first_ns);
    p = trove_put_varint(p, s->end_ns);
    p = trove_put_varint(p, s->ntracks);
    p = trove_put_varint(p, s->ncells);
    p = trove_put_varint(p, s->nlongs);
    p = trove_put_varint(p, nsk); /* level 0 keeps none (summary.md) */
    p = trove_put_varint(p, nbk);
    for (size_t i = 0; i < s->ntracks; i++) {
        const struct trove_summary_track *t = &s->tracks[i];
        p = trove_put_varint(p, t->pid);
        p = trove_put_varint(p, t->tid);
        p = trove_put_varint(p, t->events);
        p = trove_put_varint(p, t->max_depth);
        p = trove_put_varint(p, t->kinds);
        p = trove_put_varint(p, t->first_ns);
        p = trove_put_varint(p, t->end_ns);
    }
    /* the columns go past the payload's greatest size, then come back into it */
    scratch = raw.ptr + raw.cap - rows * 10 * MOST_COLS;
    split(&scratch, col, end, CELL_COLS, s->ncells);
    for (size_t i = 0; i < s->ncells; i++) {
        const struct trove_summary_cell *c0 = i ? &s->cells[i - 1] : NULL, *x = &s->cells[i];
        int same_t = c0 && c0->track == x->track, same_l = same_t && c0->lane == x->lane;
        end[CELL_TRACK] = trove_put_varint(end[CELL_TRACK], x->track - (c0 ? c0->track : 0));
        end[CELL_LANE] = trove_put_varint(end[CELL_LANE], same_t ? x->lane - c0->lane : x->lane);
        end[CELL_COL] = trove_put_varint(end[CELL_COL], same_l ? x->col - c0->col - 1 : x->col);
        end[CELL_COUNT] = trove_put_varint(end[CELL_COUNT], x->count - 1);
        end[CELL_BUSY] = trove_put_varint(end[CELL_BUSY], x->busy);
        end[CELL_NAME] = trove_put_varint(end[CELL_NAME], x->name);
        end[CELL_NAME_DUR] = trove_put_varint(end[CELL_NAME_DUR], x->name_dur);
        if (x->lane == TROVE_SUMMARY_LANE_COUNTER) {
            end[CELL_VMIN] = trove_put_varint(end[CELL_VMIN], x->vmin);
            end[CELL_VMAX] = trove_put_varint(end[CELL_VMAX], x->vmax);
        }
    }
    p = put_cols(p, col, end, CELL_COLS);
    scratch = raw.ptr + raw.cap - rows * 10 * MOST_COLS;
    split(&scratch, col, end, LONG_COLS, s->nlongs);
    for (size_t i = 0; i < s->nlongs; i++) {
        const struct trove_summary_long *l0 = i ? &s->longs[i - 1] : NULL, *x = &s->longs[i];
        int same_t = l0 && l0->track == x->track;
        end[LONG_TRACK] = trove_put_varint(end[LONG_TRACK], x->track - (l0 ? l0->track : 0));
        end[LONG_INDEX] = trove_put_varint(end[LONG_INDEX], x->index);
        end[LONG_START] = trove_put_varint(end[LONG_START], same_t ? x->ev.start_ns -
                                                                        l0->ev.start_ns
                                                                  : x->ev.start_ns);
        end[LONG_DUR] = trove_put_varint(end[LONG_DUR], x->ev.dur_ns);
        *end[LONG_KIND]++ = x->ev.kind;
        *end[LONG_DEPTH]++ = x->ev.depth;
        *end[LONG_EXTRA]++ = x->ev.extra;
        end[LONG_NAME] = trove_put_varint(end[LONG_NAME], x->ev.name_id);
    }
    p = put_cols(p, col, end, LONG_COLS);
    view_end = (size_t)(p - raw.ptr); /* what a view reads ends here */
    if (nsk) {
        scratch = raw.ptr + raw.cap - rows * 10 * MOST_COLS;
        split(&scratch, col, end, SK_INDEX, nsk);
        split(&scratch, col + SK_INDEX, end + SK_INDEX, SK_COLS - SK_INDEX, nbk);
        for (size_t i = 0; i < nsk; i++) {
            const struct trove_summary_sketch *k = &s->sketches[i];
            end[SK_NAME] = trove_put_varint(end[SK_NAME], i ? k->name - s->sketches[i - 1].name - 1
                                                              : k->name);
            end[SK_COUNT] = trove_put_varint(end[SK_COUNT], k->count - 1);
            if (k->count != 2) /* two events: the total is min + max */
                end[SK_TOTAL] = trove_put_varint(end[SK_TOTAL], k->total);
            /* 0 for spans that enclose none */
            end[SK_OTHER] = trove_put_varint(end[SK_OTHER], k->total - k->self);
            if (k->count == 1) /* its duration is the total, min and max, its bucket */
                continue;
            end[SK_MIN] = trove_put_varint(end[SK_MIN], k->min);
            end[SK_SPREAD] = trove_put_varint(end[SK_SPREAD], k->max - k->min);
            if (k->count == 2) /* its durations are min and max, its buckets theirs */
                continue;
            end[SK_N] = trove_put_varint(end[SK_N], k->n - 1);
            for (size_t j = 0; j < k->n; j++) {
                const struct trove_summary_bucket *b = &s->buckets[k->first + j];
                end[SK_INDEX] = trove_put_varint(
                    end[SK_INDEX], j ? b->index - s->buckets[k->first + j - 1].index - 1
                                     : b->index);
                end[SK_BCOUNT] = trove_put_varint(end[SK_BCOUNT], b->count - 1);
            }
        }
        p = put_cols(p, col, end, SK_COLS);
    }
    raw.len = (size_t)(p - raw.ptr);
    /* a segment's node is small and written for every segment: the fast level; the nodes
     * above hold most of the bytes and are written once for 64 segments or more — but a
     * draft, which the next commit replaces, is written fast too */
    rc = raw.len > TROVE__SUMMARY_MAX_RAW
             ? TROVE_ERR_LIMIT
             : seal(raw.ptr, raw.len, view_end, s->level && !draft ? 6 : 1, out);
out:
    trove_bytes_free(&raw);
    return rc;
}

int trove_testing_summary_wrap(const uint8_t *payload, size_t len, struct trove_bytes *out)
{
    return seal(payload, len, len, 1, out);
}

/* The decoder's cursor over the inflated payload. */
struct rd {
    const uint8_t *p, *start, *end;
    struct trove_diag *diag;
};

static int get(struct rd *r, unsigned bits, uint64_t *v, const char *field)
{
    int why = 0;
    const uint8_t *q = trove_get_varint(r->p, r->end, bits, v, &why);
    if (!q)
        return TROVE_FAIL(r->diag, why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT,
                          FIXED + (uint64_t)(r->p - r->start),
                          WHAT ": %s %s (at byte %zu of the inflated payload)", field,
                          why == 1 ? "runs past the end" : "is not a valid varint",
                          (size_t)(r->p - r->start));
    r->p = q;
    return TROVE_OK;
}

static int byte(struct rd *r, uint8_t *v, const char *field)
{
    if (r->p >= r->end)
        return TROVE_FAIL(r->diag, TROVE_ERR_TRUNCATED, FIXED + (uint64_t)(r->p - r->start),
                          WHAT ": %s runs past the end", field);
    *v = *r->p++;
    return TROVE_OK;
}

static int bad(struct rd *r, const char *what)
{
    return TROVE_FAIL(r->diag, TROVE_ERR_CORRUPT, FIXED + (uint64_t)(r->p - r->start),
                      WHAT ": %s (at byte %zu of the inflated payload)", what,
                      (size_t)(r->p - r->start));
}

/* A section's n columns: their lengths, then their bytes, each a cursor of its own in c[]. */
static int columns(struct rd *r, struct rd *c, int n, const char *section)
{
    uint64_t len[MOST_COLS];
    int rc;

    for (int j = 0; j < n; j++)
        if ((rc = get(r, 64, &len[j], section)) != TROVE_OK)
            return rc;
    for (int j = 0; j < n; j++) {
        if (len[j] > (uint64_t)(r->end - r->p))
            return bad(r, "a column runs past the end of the payload");
        c[j] = *r;
        c[j].end = r->p + len[j];
        r->p += len[j];
    }
    return TROVE_OK;
}

/* Every column read to its end. */
static int used_up(struct rd *c, int n)
{
    for (int j = 0; j < n; j++)
        if (c[j].p != c[j].end)
            return bad(&c[j], "bytes left over in a column");
    return TROVE_OK;
}

static int parse(struct rd *r, struct trove_summary *s, int sketches)
{
    uint64_t v[10], sum = 0, x;
    struct rd c[MOST_COLS];
    int rc;
    static const char *const head[10] = {"level", "shift", "events", "first_ns", "end_ns",
                                         "tracks", "cells", "long events", "sketches",
                                         "buckets"};
    /* the least bytes each takes: a bound on every count before anything is allocated */
    static const unsigned least[5] = {7, 7, 8, 4, 2};
    uint64_t left;

    for (int i = 0; i < 10; i++)
        if ((rc = get(r, 64, &v[i], head[i])) != TROVE_OK)
            return rc;
    if (v[0] > 8 || v[1] > 63)
        return bad(r, "level over 8 or shift over 63");
    if (v[2] >= TROVE_SUMMARY_MAX_EVENTS)
        return bad(r, "a node of 2^48 events or more");
    if (v[0] == 0 && (v[8] || v[9]))
        return bad(r, "a level-0 node with sketches");
    left = (uint64_t)(r->end - r->p);
    /* a view's read has only the first stream: the sketches are neither counted nor kept */
    for (int i = 0; i < (sketches ? 5 : 3); i++)
        if (v[5 + i] > left / least[i])
            return TROVE_FAIL(r->diag, TROVE_ERR_CORRUPT, FIXED,
                              WHAT ": %" PRIu64 " %s cannot fit in %" PRIu64 " bytes", v[5 + i],
                              head[5 + i], left);
    s->level = (uint32_t)v[0];
    s->shift = (uint32_t)v[1];
    s->events = v[2];
    s->first_ns = v[3];
    s->end_ns = v[4];
    if (!(s->tracks = trove__calloc((size_t)v[5] + 1, sizeof *s->tracks)) ||
        !(s->cells = trove__calloc((size_t)v[6] + 1, sizeof *s->cells)) ||
        !(s->longs = trove__calloc((size_t)v[7] + 1, sizeof *s->longs)) ||
        !(s->sketches = trove__calloc(sketches ? (size_t)v[8] + 1 : 1, sizeof *s->sketches)) ||
        !(s->buckets = trove__calloc(sketches ? (size_t)v[9] + 1 : 1, sizeof *s->buckets)))
        return TROVE_FAIL(r->diag, TROVE_ERR_NOMEM, 0, WHAT ": out of memory");
    for (size_t i = 0; i < (size_t)v[5]; i++) {
        struct trove_summary_track *t = &s->tracks[i];
        uint64_t f[7];
        for (int j = 0; j < 7; j++)
            if ((rc = get(r, j < 2 || j == 3 || j == 4 ? 32 : 64, &f[j], "a track")) != TROVE_OK)
                return rc;
        t->pid = (uint32_t)f[0];
        t->tid = (uint32_t)f[1];
        t->events = f[2];
        t->max_depth = (uint32_t)f[3];
        t->kinds = (uint32_t)f[4];
        t->first_ns = f[5];
        t->end_ns = f[6];
        if (i > 0 && trove__summary_track_cmp(&s->tracks[i - 1], t) >= 0)
            return bad(r, "tracks out of order");
        if (t->events == 0 || t->max_depth > 255 || t->first_ns > t->end_ns ||
            t->first_ns < s->first_ns || t->end_ns > s->end_ns)
            return bad(r, "a track with no events, a depth over 255 or times outside the node");
        if ((sum += t->events) > s->events)
            return bad(r, "tracks hold more events than the node");
        s->ntracks++;
    }
    if (sum != s->events)
        return bad(r, "tracks hold fewer events than the node");
    sum = 0;
    if ((rc = columns(r, c, CELL_COLS, "the cells' columns")) != TROVE_OK)
        return rc;
    for (size_t i = 0; i < (size_t)v[6]; i++) {
        struct trove_summary_cell *ce = &s->cells[i], *c0 = i ? &s->cells[i - 1] : NULL;
        uint64_t f[7];
        for (int j = 0; j < 7; j++)
            if ((rc = get(&c[j], j == 0 || j == 1 || j == 5 ? 32 : 64, &f[j], "a cell")) !=
                TROVE_OK)
                return rc;
        ce->track = (uint32_t)((c0 ? c0->track : 0) + f[0]);
        if (f[0] > s->ntracks || ce->track >= s->ntracks)
            return bad(&c[0], "a cell of no track");
        ce->lane = (uint32_t)(c0 && f[0] == 0 ? c0->lane + f[1] : f[1]);
        if (f[1] >= TROVE_SUMMARY_LANES || ce->lane >= TROVE_SUMMARY_LANES)
            return bad(&c[0], "a cell of no lane");
        if (c0 && f[0] == 0 && c0->lane == ce->lane) {
            if (f[2] >= UINT64_MAX - c0->col)
                return bad(&c[0], "a cell's column overflows");
            ce->col = c0->col + f[2] + 1;
        } else {
            ce->col = f[2];
        }
        if (f[3] == UINT64_MAX)
            return bad(&c[0], "a cell's count overflows");
        ce->count = f[3] + 1;
        ce->busy = f[4];
        ce->name = (uint32_t)f[5];
        ce->name_dur = f[6];
        if (ce->lane == TROVE_SUMMARY_LANE_COUNTER &&
            ((rc = get(&c[CELL_VMIN], 64, &ce->vmin, "a cell's least value")) != TROVE_OK ||
             (rc = get(&c[CELL_VMAX], 64, &ce->vmax, "a cell's greatest value")) != TROVE_OK))
            return rc;
        if (ce->count > s->events || (sum += ce->count) > s->events)
            return bad(&c[0], "cells hold more events than the node");
        s->ncells++;
    }
    if ((rc = used_up(c, CELL_COLS)) != TROVE_OK ||
        (rc = columns(r, c, LONG_COLS, "the long events' columns")) != TROVE_OK)
        return rc;
    for (size_t i = 0; i < (size_t)v[7]; i++) {
        struct trove_summary_long *l = &s->longs[i], *l0 = i ? &s->longs[i - 1] : NULL;
        uint64_t f[5];
        for (int j = 0; j < 4; j++)
            if ((rc = get(&c[j], j == 0 ? 32 : 64, &f[j], "a long event")) != TROVE_OK)
                return rc;
        if ((rc = byte(&c[LONG_KIND], &l->ev.kind, "a long event's kind")) != TROVE_OK ||
            (rc = byte(&c[LONG_DEPTH], &l->ev.depth, "a long event's depth")) != TROVE_OK ||
            (rc = byte(&c[LONG_EXTRA], &l->ev.extra, "a long event's extra")) != TROVE_OK ||
            (rc = get(&c[LONG_NAME], 32, &f[4], "a long event's name")) != TROVE_OK)
            return rc;
        l->track = (uint32_t)((l0 ? l0->track : 0) + f[0]);
        if (f[0] > s->ntracks || l->track >= s->ntracks)
            return bad(&c[0], "a long event of no track");
        l->index = f[1];
        if (l0 && f[0] == 0) {
            if (f[2] > UINT64_MAX - l0->ev.start_ns)
                return bad(&c[0], "a long event's start overflows");
            l->ev.start_ns = l0->ev.start_ns + f[2];
        } else {
            l->ev.start_ns = f[2];
        }
        l->ev.dur_ns = f[3];
        l->ev.name_id = (uint32_t)f[4];
        l->ev.pid = s->tracks[l->track].pid;
        l->ev.tid = s->tracks[l->track].tid;
        if (l->index >= s->events || !trove__summary_is_long(&l->ev, s->shift))
            return bad(&c[0], "a long event past the node's events, or shorter than a cell");
        if ((sum += 1) > s->events)
            return bad(&c[0], "cells and long events hold more events than the node");
        s->nlongs++;
    }
    if ((rc = used_up(c, LONG_COLS)) != TROVE_OK)
        return rc;
    if (!sketches) /* what a view reads: the rest is left unread */
        return TROVE_OK;
    if (v[8] == 0) { /* no sketches: no section */
        if (v[9] != 0)
            return bad(r, "buckets without sketches");
        goto end;
    }
    if ((rc = columns(r, c, SK_COLS, "the sketches' columns")) != TROVE_OK)
        return rc;
    sum = 0;
    x = 0;
    for (size_t i = 0; i < (size_t)v[8]; i++) {
        struct trove_summary_sketch *k = &s->sketches[i];
        uint64_t f[7], bsum = 0;
        if ((rc = get(&c[SK_NAME], 32, &f[0], "a sketch's name")) != TROVE_OK ||
            (rc = get(&c[SK_COUNT], 64, &f[1], "a sketch's count")) != TROVE_OK)
            return rc;
        f[2] = f[4] = f[5] = f[6] = 0;
        if (f[1] != 1 && (rc = get(&c[SK_TOTAL], 64, &f[2], "a sketch's total")) != TROVE_OK)
            return rc;
        if ((rc = get(&c[SK_OTHER], 64, &f[3], "a sketch's total less self")) != TROVE_OK)
            return rc;
        if (f[1] != 0 &&
            ((rc = get(&c[SK_MIN], 64, &f[4], "a sketch's least")) != TROVE_OK ||
             (rc = get(&c[SK_SPREAD], 64, &f[5], "a sketch's greatest")) != TROVE_OK))
            return rc;
        if (f[1] == 1) { /* two events, min and max: their total and buckets */
            if (f[4] > UINT64_MAX - f[5])
                return bad(&c[SK_SPREAD], "a sketch's greatest overflows");
            f[2] = f[4] > UINT64_MAX - (f[4] + f[5]) ? UINT64_MAX : 2 * f[4] + f[5];
            f[6] = trove_summary_bucket_of(f[4]) != trove_summary_bucket_of(f[4] + f[5]);
        } else if (f[1] > 1 && (rc = get(&c[SK_N], 64, &f[6], "a sketch's buckets")) != TROVE_OK)
            return rc;
        if (i > 0 && f[0] >= UINT32_MAX - s->sketches[i - 1].name)
            return bad(r, "a sketch's name overflows");
        k->name = (uint32_t)(i ? s->sketches[i - 1].name + f[0] + 1 : f[0]);
        if (f[1] == 0) { /* one event: the short form */
            if (x >= v[9])
                return bad(r, "a sketch of more buckets than the node holds");
            if (f[1] >= s->events)
                return bad(r, "a sketch of more events than the node holds");
            if (f[3] > f[2])
                return bad(r, "a sketch's self time over its total");
            k->count = 1;
            k->total = k->min = k->max = f[2];
            k->self = f[2] - f[3];
            k->first = (size_t)x;
            k->n = 1;
            s->buckets[x].index = trove_summary_bucket_of(f[2]);
            s->buckets[x].count = 1;
            x++;
            if ((sum += 1) > s->events)
                return bad(r, "sketches hold more events than the node");
            s->nsketches++;
            continue;
        }
        if (f[1] >= s->events || f[6] >= v[9] - x || f[4] > UINT64_MAX - f[5] || f[2] < f[4])
            return bad(r, "a sketch of more events or buckets than the node holds");
        if (f[3] > f[2])
            return bad(r, "a sketch's self time over its total");
        k->count = f[1] + 1;
        k->total = f[2];
        k->self = f[2] - f[3];
        k->min = f[4];
        k->max = f[4] + f[5];
        k->first = (size_t)x;
        k->n = (size_t)f[6] + 1;
        for (size_t j = 0; j < k->n; j++) {
            struct trove_summary_bucket *b = &s->buckets[x + j];
            uint64_t di, dc;
            if (k->count == 2) { /* min's bucket, then max's (or the one both are in) */
                uint32_t lo = trove_summary_bucket_of(k->min), hi = trove_summary_bucket_of(k->max);
                di = j ? hi - lo - 1 : lo;
                dc = k->n == 1;
            } else if ((rc = get(&c[SK_INDEX], 32, &di, "a bucket")) != TROVE_OK ||
                       (rc = get(&c[SK_BCOUNT], 64, &dc, "a bucket's count")) != TROVE_OK)
                return rc;
            b->index = (uint32_t)(j ? s->buckets[x + j - 1].index + di + 1 : di);
            if (di >= TROVE_SUMMARY_BUCKETS || b->index >= TROVE_SUMMARY_BUCKETS ||
                dc >= k->count || (bsum += dc + 1) > k->count)
                return bad(r, "a bucket past the last, or more than its sketch's count");
            b->count = dc + 1;
        }
        if (bsum != k->count)
            return bad(r, "a sketch's buckets do not add up to its count");
        x += k->n;
        if ((sum += k->count) > s->events)
            return bad(r, "sketches hold more events than the node");
        s->nsketches++;
    }
    if (x != v[9])
        return bad(r, "buckets left over after the sketches");
    s->nbuckets = (size_t)x;
    if ((rc = used_up(c, SK_COLS)) != TROVE_OK)
        return rc;
end:
    if (r->p != r->end)
        return bad(r, "bytes left over after the sketches");
    return TROVE_OK;
}

int trove_summary_decode(const uint8_t *buf, size_t len, struct trove_summary *out,
                         struct trove_diag *diag)
{
    return trove__summary_decode_part(buf, len, out, 1, diag);
}

int trove__summary_decode_part(const uint8_t *buf, size_t len, struct trove_summary *out,
                               int sketches, struct trove_diag *diag)
{
    struct libdeflate_decompressor *d = NULL;
    struct trove_summary s;
    uint8_t *raw = NULL;
    uint64_t raw_len, packed, raw_a, packed_a, want;
    struct rd r;
    int rc;

    if (!out || (!buf && len > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, WHAT " decode needs a buffer and an output");
    memset(out, 0, sizeof *out);
    memset(&s, 0, sizeof s);
    if (len < FIXED + TROVE__SEALED_TRAILER)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          WHAT " is %zu bytes, shorter than its %u-byte fixed part and checksum",
                          len, FIXED + TROVE__SEALED_TRAILER);
    if ((rc = trove__sealed_magic(buf, len, MAGIC, WHAT, diag)) != TROVE_OK ||
        (rc = trove__sealed_version(trove__get_le32(buf + 8), 8, &known_version, 1, WHAT,
                                    "version 3", diag)) != TROVE_OK ||
        (rc = trove__sealed_trailer(buf, len, WHAT, diag)) != TROVE_OK)
        return rc;
    if (trove__get_le32(buf + 12) != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 12, WHAT " flags are not 0");
    raw_len = trove__get_le64(buf + 16);
    packed = trove__get_le64(buf + 24);
    raw_a = trove__get_le64(buf + 32);
    packed_a = trove__get_le64(buf + 40);
    if (raw_len > TROVE__SUMMARY_MAX_RAW)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 16,
                          WHAT " inflates to %" PRIu64 " bytes, over the limit of %llu", raw_len,
                          (unsigned long long)TROVE__SUMMARY_MAX_RAW);
    if (packed != (uint64_t)len - FIXED - TROVE__SEALED_TRAILER)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 24,
                          WHAT " says its payload takes %" PRIu64 " packed bytes; it holds %zu",
                          packed, len - FIXED - TROVE__SEALED_TRAILER);
    if (raw_a > raw_len || packed_a > packed || (raw_a == raw_len) != (packed_a == packed))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 32,
                          WHAT ": its first stream (%" PRIu64 " bytes from %" PRIu64
                               ") does not fit the payload (%" PRIu64 " from %" PRIu64 ")",
                          raw_a, packed_a, raw_len, packed);
    /* a view (no sketches) inflates the first stream alone */
    want = sketches ? raw_len : raw_a;
    if (!(raw = trove__malloc(want ? (size_t)want : 1)) || !(d = libdeflate_alloc_decompressor())) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, WHAT ": out of memory");
        goto out;
    }
    for (int part = 0; part < (want > raw_a ? 2 : 1); part++) {
        uint64_t from = part ? packed_a : 0, plen = part ? packed - packed_a : packed_a;
        uint64_t rlen = part ? raw_len - raw_a : raw_a;
        size_t used = 0, got = 0;
        enum libdeflate_result lr = libdeflate_deflate_decompress_ex(
            d, buf + FIXED + from, (size_t)plen, raw + (part ? raw_a : 0), (size_t)rlen, &used, &got);
        if (lr == LIBDEFLATE_INSUFFICIENT_SPACE) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, FIXED + from,
                            WHAT " stream %d inflates past its declared %" PRIu64 " bytes",
                            part + 1, rlen);
            goto out;
        }
        if (lr != LIBDEFLATE_SUCCESS) {
            rc = TROVE_FAIL(diag, TROVE_ERR_INFLATE, FIXED + from,
                            WHAT ": malformed deflate stream %d", part + 1);
            goto out;
        }
        if (got != rlen || used != plen) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, FIXED + from + used,
                            WHAT ": deflate stream %d gives %zu of %" PRIu64 " bytes", part + 1,
                            got, rlen);
            goto out;
        }
    }
    raw_len = want;
    r.p = r.start = raw;
    r.end = raw + raw_len;
    r.diag = diag;
    if ((rc = parse(&r, &s, sketches)) != TROVE_OK)
        goto out;
    *out = s;
    memset(&s, 0, sizeof s);
out:
    trove_summary_free(&s);
    libdeflate_free_decompressor(d);
    free(raw);
    return rc;
}
