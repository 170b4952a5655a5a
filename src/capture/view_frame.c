/*
 * view_frame.c: the view frame's decoder (docs/formats/view.md; the encoder is beside the
 * view, summary_view.c). The page decodes the same bytes with the same checks (web/view.js).
 *
 * Order of checks: the fixed part (magic, version, flags), the body's lengths against the
 * frame and the limits, the body inflated into exactly its declared length, then every
 * count against the bytes left before anything is allocated, and every varint end-checked.
 */
#include "summary_internal.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"
#include "common/varint.h"

#include <inttypes.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "TROVVIEW"
#define VERSION 1u
#define FIXED 60u
#define WHAT "view frame"
#define MAX_BODY ((uint64_t)64 << 20)

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
                          FIXED + (uint64_t)(r->p - r->start), WHAT ": %s %s (body byte %zu)",
                          field, why == 1 ? "runs past the end" : "is not a valid varint",
                          (size_t)(r->p - r->start));
    r->p = q;
    return TROVE_OK;
}

static int bad(struct rd *r, const char *what)
{
    return TROVE_FAIL(r->diag, TROVE_ERR_CORRUPT, FIXED + (uint64_t)(r->p - r->start),
                      WHAT ": %s (body byte %zu)", what, (size_t)(r->p - r->start));
}

static int parse(struct rd *r, struct trove_view_frame *f, uint32_t ntracks, uint32_t nnames,
                 uint32_t nevents, uint32_t ncells)
{
    uint64_t left = (uint64_t)(r->end - r->p), v, strbytes = 0;
    size_t at = 0;
    int rc;

    /* the least bytes each takes: a name 2, a track 4, an event 7, a cell 6 */
    if (nnames > left / 2 || ntracks > left / 4 || nevents > left / 7 || ncells > left / 6)
        return bad(r, "more names, tracks, events or cells than its body can hold");
    if (!(f->names = trove__calloc((size_t)nnames + 1, sizeof *f->names)) ||
        !(f->tracks = trove__calloc((size_t)ntracks + 1, sizeof *f->tracks)) ||
        !(f->events = trove__calloc((size_t)nevents + 1, sizeof *f->events)) ||
        !(f->cells = trove__calloc((size_t)ncells + 1, sizeof *f->cells)) ||
        !(f->strings = trove__malloc((size_t)left + (size_t)nnames + 1)))
        return TROVE_FAIL(r->diag, TROVE_ERR_NOMEM, 0, WHAT ": out of memory");
    for (uint32_t i = 0; i < nnames; i++) {
        struct trove_view_name *n = &f->names[i];
        uint64_t id, len;
        if ((rc = get(r, 32, &id, "a name's id")) != TROVE_OK ||
            (rc = get(r, 32, &len, "a name's length")) != TROVE_OK)
            return rc;
        if (len > (uint64_t)(r->end - r->p))
            return bad(r, "a name runs past the body");
        if (i > 0 && id <= f->names[i - 1].id)
            return bad(r, "names out of order");
        n->id = (uint32_t)id;
        n->str = f->strings + strbytes;
        n->len = (size_t)len;
        memcpy(f->strings + strbytes, r->p, (size_t)len);
        f->strings[strbytes + len] = 0;
        strbytes += len + 1;
        r->p += len;
    }
    f->nnames = nnames;
    for (uint32_t t = 0; t < ntracks; t++) {
        struct trove_view_track *tr = &f->tracks[t];
        uint64_t pid, tid, ne, nc, prev = f->from_ns, prev_lane = 0, prev_col = 0;
        if ((rc = get(r, 32, &pid, "a track's pid")) != TROVE_OK ||
            (rc = get(r, 32, &tid, "a track's tid")) != TROVE_OK ||
            (rc = get(r, 32, &ne, "a track's events")) != TROVE_OK ||
            (rc = get(r, 32, &nc, "a track's cells")) != TROVE_OK)
            return rc;
        if (ne > nevents - f->nevents || nc > ncells - f->ncells)
            return bad(r, "a track holds more events or cells than the frame");
        if (t > 0 && ((uint64_t)tr[-1].pid << 32 | tr[-1].tid) >= (pid << 32 | tid))
            return bad(r, "tracks out of order");
        tr->pid = (uint32_t)pid;
        tr->tid = (uint32_t)tid;
        tr->first_event = f->nevents;
        tr->nevents = (size_t)ne;
        tr->first_cell = f->ncells;
        tr->ncells = (size_t)nc;
        if (ne == 0 && nc == 0)
            return bad(r, "a track with nothing in it");
        for (uint64_t i = 0; i < ne; i++) {
            struct trove_view_event *e = &f->events[f->nevents];
            uint64_t zs, dur, name, index;
            if ((rc = get(r, 64, &zs, "an event's start")) != TROVE_OK ||
                (rc = get(r, 64, &dur, "an event's duration")) != TROVE_OK)
                return rc;
            if (r->end - r->p < 3)
                return bad(r, "an event's kind, depth and extra run past the body");
            e->ev.kind = r->p[0];
            e->ev.depth = r->p[1];
            e->ev.extra = r->p[2];
            r->p += 3;
            if ((rc = get(r, 32, &name, "an event's name")) != TROVE_OK ||
                (rc = get(r, 64, &index, "an event's index")) != TROVE_OK)
                return rc;
            e->ev.start_ns = prev + (uint64_t)trove_unzigzag64(zs);
            e->ev.dur_ns = dur;
            e->ev.pid = tr->pid;
            e->ev.tid = tr->tid;
            e->ev.name_id = (uint32_t)name;
            e->index = index;
            if (i > 0 && e->ev.start_ns < prev)
                return bad(r, "a track's events out of order");
            prev = e->ev.start_ns;
            f->nevents++;
        }
        for (uint64_t i = 0; i < nc; i++) {
            struct trove_summary_cell *c = &f->cells[f->ncells];
            uint64_t lane, col, count;
            if ((rc = get(r, 32, &lane, "a cell's lane")) != TROVE_OK ||
                (rc = get(r, 64, &col, "a cell's column")) != TROVE_OK ||
                (rc = get(r, 64, &count, "a cell's count")) != TROVE_OK ||
                (rc = get(r, 64, &c->busy, "a cell's busy time")) != TROVE_OK ||
                (rc = get(r, 32, &v, "a cell's name")) != TROVE_OK ||
                (rc = get(r, 64, &c->name_dur, "a cell's name duration")) != TROVE_OK)
                return rc;
            c->name = (uint32_t)v;
            c->track = t;
            c->lane = (uint32_t)(i > 0 ? prev_lane + lane : lane);
            if (lane >= TROVE_SUMMARY_LANES || c->lane >= TROVE_SUMMARY_LANES)
                return bad(r, "a cell of no lane");
            if (i > 0 && lane == 0) {
                if (col >= UINT64_MAX - prev_col)
                    return bad(r, "a cell's column overflows");
                c->col = prev_col + col + 1;
            } else {
                if (col > (UINT64_MAX >> f->shift) - (f->from_ns >> f->shift))
                    return bad(r, "a cell's column overflows");
                c->col = (f->from_ns >> f->shift) + col;
            }
            if (count == UINT64_MAX)
                return bad(r, "a cell's count overflows");
            c->count = count + 1;
            if (c->lane == TROVE_SUMMARY_LANE_COUNTER &&
                ((rc = get(r, 64, &c->vmin, "a cell's least value")) != TROVE_OK ||
                 (rc = get(r, 64, &c->vmax, "a cell's greatest value")) != TROVE_OK))
                return rc;
            if (c->col > ((f->to_ns - 1) >> f->shift))
                return bad(r, "a cell past the frame's range");
            prev_lane = c->lane;
            prev_col = c->col;
            f->ncells++;
        }
        at++;
    }
    f->ntracks = at;
    if (f->nevents != nevents || f->ncells != ncells)
        return bad(r, "its tracks hold fewer events or cells than its header says");
    if (r->p != r->end)
        return bad(r, "bytes left over after the tracks");
    return TROVE_OK;
}

int trove_view_decode(const uint8_t *buf, size_t len, struct trove_view_frame *out,
                      struct trove_diag *diag)
{
    struct libdeflate_decompressor *d = NULL;
    struct trove_view_frame f;
    uint8_t *raw = NULL;
    uint32_t version, flags, body_len, raw_len;
    struct rd r;
    int rc;

    if (!out || (!buf && len > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, WHAT " decode needs a buffer and an output");
    memset(&f, 0, sizeof f);
    if (len < FIXED)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          WHAT " is %zu bytes, shorter than its %u-byte fixed part", len, FIXED);
    if (memcmp(buf, MAGIC, 8))
        return TROVE_FAIL(diag, TROVE_ERR_MAGIC, 0, "not a trove " WHAT " (it does not start with \"" MAGIC "\")");
    version = trove__get_le32(buf + 8);
    if (version != VERSION)
        return TROVE_FAIL(diag, TROVE_ERR_VERSION, 8,
                          WHAT " version %" PRIu32 "; this build reads version 1", version);
    flags = trove__get_le32(buf + 12);
    if (flags & ~1u)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 12, WHAT " flags 0x%" PRIx32 "; only 0x1 is defined",
                          flags);
    f.from_ns = trove__get_le64(buf + 16);
    f.to_ns = trove__get_le64(buf + 24);
    f.shift = trove__get_le32(buf + 32);
    body_len = trove__get_le32(buf + 52);
    raw_len = trove__get_le32(buf + 56);
    if (f.to_ns <= f.from_ns || f.shift > 63)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 16, WHAT ": an empty range or a shift over 63");
    if ((uint64_t)body_len != (uint64_t)len - FIXED)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 52,
                          WHAT " says its body is %" PRIu32 " bytes; it holds %zu", body_len,
                          len - FIXED);
    if (raw_len > MAX_BODY || (!(flags & 1) && raw_len != body_len))
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 56,
                          WHAT ": a body of %" PRIu32 " bytes (limit %llu; unpacked, it is its "
                          "stored length)",
                          raw_len, (unsigned long long)MAX_BODY);
    if (flags & 1) {
        size_t used = 0, got = 0;
        enum libdeflate_result lr;
        if (!(raw = trove__malloc(raw_len ? raw_len : 1)) || !(d = libdeflate_alloc_decompressor())) {
            rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, WHAT ": out of memory");
            goto out;
        }
        lr = libdeflate_deflate_decompress_ex(d, buf + FIXED, body_len, raw, raw_len, &used, &got);
        if (lr != LIBDEFLATE_SUCCESS || got != raw_len || used != body_len) {
            rc = TROVE_FAIL(diag, lr == LIBDEFLATE_BAD_DATA ? TROVE_ERR_INFLATE : TROVE_ERR_CORRUPT,
                            FIXED, WHAT ": the body does not inflate to its %" PRIu32 " bytes",
                            raw_len);
            goto out;
        }
        r.p = r.start = raw;
    } else {
        r.p = r.start = buf + FIXED;
    }
    r.end = r.start + raw_len;
    r.diag = diag;
    if ((rc = parse(&r, &f, trove__get_le32(buf + 36), trove__get_le32(buf + 40),
                    trove__get_le32(buf + 44), trove__get_le32(buf + 48))) != TROVE_OK)
        goto out;
    *out = f;
    memset(&f, 0, sizeof f);
out:
    trove_view_frame_free(&f);
    libdeflate_free_decompressor(d);
    free(raw);
    return rc;
}

void trove_view_frame_free(struct trove_view_frame *f)
{
    if (!f)
        return;
    free(f->tracks);
    free(f->events);
    free(f->cells);
    free(f->names);
    free(f->strings);
    memset(f, 0, sizeof *f);
}
