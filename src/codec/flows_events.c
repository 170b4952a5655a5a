/*
 * flows_events.c: the flows object, version 2 — flow rows coded against the events they join
 * (docs/formats/flows.md). A row on a thread that has events names one of them, by its index
 * in the capture, as a delta from the row before's, and keeps its time as a distance from
 * that event's start; its thread is the event's. So a flow's endpoints cost what it takes to
 * point at an event near the last one, not a time, a thread and an id each.
 *
 *    0                8         12        16             24             32
 *   +----------------+---------+---------+--------------+--------------+
 *   | magic          | version | flags   | rows     u64 | events   u64 |
 *   | "TROVFLW1"     | u32 = 2 | u32 = 0 | N            | E            |
 *   +----------------+---------+---------+--------------+--------------+
 *   32             40             48             56                    80
 *   +--------------+--------------+--------------+--------------------+
 *   | unit     u64 | raw_len  u64 | packed_len   | stream lengths     |
 *   | U (>= 1)     | R            | u64 = P      | u32 x 6, sum R     |
 *   +--------------+--------------+--------------+--------------------+
 *   80                      80 + P          88 + P
 *   +--------------------- - +---------------+
 *   | the six streams (P = R)| checksum u64  |  xxh3-64 of every byte before it
 *   | or a zstd frame of them|               |
 *   +--------------------- - +---------------+
 *
 *   stream 0 kind   u8 a row:     phase | flags << 2 | free << 3
 *   stream 1 flow   varint a row: zigzag(maxid + 1 - id), maxid the greatest id before (0)
 *   stream 2 name   varint a row: 0 when the name is predicted (its id's last row's; for an
 *                                 id not seen before, the row before's; 0 at first), else
 *                                 name_id + 1
 *   stream 3 event  varint a bound row: zigzag(index - the bound row before's index (0))
 *   stream 4 offset varint a bound row: zigzag((ts - the event's start) / U)
 *   stream 5 free   a free row: varint zigzag(ts - the free row before's ts (0)), varint pid,
 *                   varint tid
 *
 * The encoder binds a row with TROVE_FLOW_ENCLOSING to the last event of its thread that
 * starts at or before it, any other to the first that starts at or after it (else the
 * nearest on the other side): a choice that only moves bytes, since the offset keeps the time
 * exactly. The decoder trusts nothing: header fields against their limits and the object's
 * length, the streams' lengths against R and the rows, the zstd frame against R, every varint
 * against its stream's end, every index against E, every time against wrapping, every row
 * through trove_flow_check, and every stream read to its end.
 */
#include "trove/flows.h"
#include "trove/wire_format.h"
#include "flows_internal.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"
#include "common/sealed.h"
#include "common/varint.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define V2_FIXED 80u
#define V2_STREAMS 6
#define V2_ROW_MAX 57u /* 1 + 10 + 6 + 10 + 10 + 20: kind, flow, name, event, offset, free */
#define V2_LEVEL 15

enum { S_KIND, S_FLOW, S_NAME, S_EVENT, S_OFFSET, S_FREE };
static const char *const stream_name[V2_STREAMS] = {"kind", "flow", "name", "event", "offset",
                                                    "free"};
static const size_t stream_max[V2_STREAMS] = {1, 10, 5, 10, 10, 20}; /* bytes a row, at most */

/* ---- the events of an array -------------------------------------------------------------- */

static int array_get(void *ctx, uint64_t index, struct trove_event *out, struct trove_diag *diag)
{
    (void)diag;
    *out = ((const struct trove_event *)ctx)[index];
    return TROVE_OK;
}

void trove_flows_events_of(struct trove_flows_events *ev, const struct trove_event *events,
                           size_t n)
{
    ev->count = n;
    ev->get = array_get;
    ev->ctx = (void *)(uintptr_t)events;
}

/* ---- names by flow id: an open-addressed table (ids are never 0, so 0 is empty) ---------- */

struct id_names {
    uint64_t *id;
    uint32_t *name;
    size_t mask;
};

static int id_names_init(struct id_names *t, size_t rows)
{
    size_t cap = 16;
    while (cap < 2 * rows)
        cap *= 2;
    t->mask = cap - 1;
    t->id = trove__calloc(cap, sizeof *t->id);
    t->name = trove__malloc(cap * sizeof *t->name);
    return t->id && t->name ? TROVE_OK : TROVE_ERR_NOMEM;
}

static void id_names_free(struct id_names *t)
{
    free(t->id);
    free(t->name);
}

/* The slot of id: where it is, or the empty slot it would take. */
static size_t id_slot(const struct id_names *t, uint64_t id)
{
    size_t i = (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & t->mask;
    while (t->id[i] && t->id[i] != id)
        i = (i + 1) & t->mask;
    return i;
}

/* The name a row of flow id is predicted to have (prev: the row before's); *slot is where
 * remember() keeps the row's own. */
static uint32_t predict_name(const struct id_names *t, uint64_t id, uint32_t prev, size_t *slot)
{
    *slot = id_slot(t, id);
    return t->id[*slot] ? t->name[*slot] : prev;
}

static void remember(struct id_names *t, size_t slot, uint64_t id, uint32_t name)
{
    t->id[slot] = id;
    t->name[slot] = name;
}

/* A zstd frame may give at most 1024 times its bytes (and 4 KiB), so that an object cannot
 * make its reader allocate far more than it holds; the encoder stores streams that would
 * need more as they are. */
static int ratio_ok(uint64_t raw, uint64_t packed)
{
    return raw <= packed * 1024 + 4096;
}

/* ---- encoding ----------------------------------------------------------------------------- */

struct track_ev {
    uint32_t pid, tid;
    uint64_t start;
    uint64_t index;
};

static int cmp_track_ev(const void *pa, const void *pb)
{
    const struct track_ev *a = pa, *b = pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int cmp_track(uint32_t pid, uint32_t tid, const struct track_ev *e)
{
    if (pid != e->pid)
        return pid < e->pid ? -1 : 1;
    return tid < e->tid ? -1 : tid > e->tid;
}

/* The first of t[0..n) not before (pid, tid, start) — with start UINT64_MAX and after = 1,
 * past every event of the thread. */
static size_t lower(const struct track_ev *t, size_t n, uint32_t pid, uint32_t tid,
                    uint64_t start, int after)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_track(pid, tid, &t[mid]);
        if (c == 0)
            c = start < t[mid].start ? -1 : start > t[mid].start ? 1 : after ? 1 : -1;
        if (c > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The event row f binds to (its index in t), or SIZE_MAX when its thread has none. */
static size_t bind(const struct track_ev *t, size_t n, const struct trove_flow *f)
{
    size_t first = lower(t, n, f->pid, f->tid, 0, 0);
    size_t end = lower(t, n, f->pid, f->tid, UINT64_MAX, 1);
    size_t at;

    if (first == end)
        return SIZE_MAX;
    if (f->flags & TROVE_FLOW_ENCLOSING) {
        at = lower(t + first, end - first, f->pid, f->tid, f->ts_ns, 1); /* past ts */
        return first + (at > 0 ? at - 1 : 0);
    }
    at = lower(t + first, end - first, f->pid, f->tid, f->ts_ns, 0); /* at or past ts */
    return first + (at < end - first ? at : end - first - 1);
}

/* Does the distance from start to ts fit an int64? */
static int offset_fits(uint64_t ts, uint64_t start)
{
    return ts >= start ? ts - start <= (uint64_t)INT64_MAX : start - ts <= (uint64_t)INT64_MAX;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* The events of the threads the rows are on, sorted by (thread, start, index). */
static int thread_events(const struct trove_flow *rows, size_t n, const struct trove_event *ev,
                         size_t nev, struct track_ev **out, size_t *nout)
{
    struct track_ev *thr, *t = NULL;
    size_t nthr = 0, k = 0;
    int rc = TROVE_ERR_NOMEM;

    *out = NULL;
    *nout = 0;
    if (!(thr = trove__malloc((n ? n : 1) * sizeof *thr)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        thr[i] = (struct track_ev){rows[i].pid, rows[i].tid, 0, 0};
    if (n > 0)
        qsort(thr, n, sizeof *thr, cmp_track_ev);
    for (size_t i = 0; i < n; i++)
        if (nthr == 0 || cmp_track(thr[i].pid, thr[i].tid, &thr[nthr - 1]) != 0)
            thr[nthr++] = thr[i];
    for (int pass = 0; pass < 2; pass++) {
        k = 0;
        for (size_t i = 0; i < nev; i++) {
            size_t at = lower(thr, nthr, ev[i].pid, ev[i].tid, 0, 0);
            if (at == nthr || cmp_track(ev[i].pid, ev[i].tid, &thr[at]) != 0)
                continue;
            if (pass == 1)
                t[k] = (struct track_ev){ev[i].pid, ev[i].tid, ev[i].start_ns, i};
            k++;
        }
        if (pass == 0 && !(t = trove__malloc((k ? k : 1) * sizeof *t)))
            goto out;
    }
    if (k > 0)
        qsort(t, k, sizeof *t, cmp_track_ev);
    *out = t;
    *nout = k;
    t = NULL;
    rc = TROVE_OK;
out:
    free(thr);
    free(t);
    return rc;
}

int trove_flows_encode_events(const struct trove_flow *rows, size_t n,
                              const struct trove_event *events, size_t nevents,
                              struct trove_bytes *out)
{
    struct trove_bytes s[V2_STREAMS];
    struct track_ev *t = NULL;
    struct id_names names = {0};
    size_t nt = 0, *bound = NULL, start, packed;
    uint64_t unit = 0, maxid = 0, prev_index = 0, prev_free = 0;
    uint32_t prev_name = 0;
    uint8_t *p;
    int rc;

    memset(s, 0, sizeof s);
    if ((!rows && n > 0) || (!events && nevents > 0) || !out)
        return TROVE_ERR_INVALID;
    if ((uint64_t)n > TROVE_FLOWS_MAX)
        return TROVE_ERR_LIMIT;
    for (size_t i = 0; i < n; i++)
        if (trove_flow_check(&rows[i]) != TROVE_OK)
            return TROVE_ERR_INVALID;
    rc = TROVE_ERR_NOMEM;
    if (!(bound = trove__malloc((n ? n : 1) * sizeof *bound)) ||
        id_names_init(&names, n) != TROVE_OK)
        goto out;
    for (int k = 0; k < V2_STREAMS; k++)
        if (trove_bytes_reserve(&s[k], n * stream_max[k] + 1) != TROVE_OK)
            goto out;
    if ((rc = thread_events(rows, n, events, nevents, &t, &nt)) != TROVE_OK)
        goto out;
    /* bind every row, and the unit its offsets share */
    for (size_t i = 0; i < n; i++) {
        size_t at = bind(t, nt, &rows[i]);
        if (at != SIZE_MAX && !offset_fits(rows[i].ts_ns, t[at].start))
            at = SIZE_MAX;
        bound[i] = at;
        if (at != SIZE_MAX)
            unit = gcd64(unit, rows[i].ts_ns >= t[at].start ? rows[i].ts_ns - t[at].start
                                                            : t[at].start - rows[i].ts_ns);
    }
    if (unit == 0)
        unit = 1;
    for (size_t i = 0; i < n; i++) {
        const struct trove_flow *f = &rows[i];
        size_t slot;
        uint32_t guess = predict_name(&names, f->id, prev_name, &slot);
        remember(&names, slot, f->id, f->name_id);
        s[S_KIND].ptr[s[S_KIND].len++] =
            (uint8_t)(f->phase | f->flags << 2 | (bound[i] == SIZE_MAX) << 3);
        p = trove_put_varint(s[S_FLOW].ptr + s[S_FLOW].len,
                             trove_zigzag64((int64_t)(maxid + 1 - f->id)));
        s[S_FLOW].len = (size_t)(p - s[S_FLOW].ptr);
        p = trove_put_varint(s[S_NAME].ptr + s[S_NAME].len,
                             f->name_id == guess ? 0 : (uint64_t)f->name_id + 1);
        s[S_NAME].len = (size_t)(p - s[S_NAME].ptr);
        if (bound[i] != SIZE_MAX) {
            const struct track_ev *e = &t[bound[i]];
            int64_t off = f->ts_ns >= e->start ? (int64_t)((f->ts_ns - e->start) / unit)
                                               : -(int64_t)((e->start - f->ts_ns) / unit);
            p = trove_put_varint(s[S_EVENT].ptr + s[S_EVENT].len,
                                 trove_zigzag64((int64_t)(e->index - prev_index)));
            s[S_EVENT].len = (size_t)(p - s[S_EVENT].ptr);
            p = trove_put_varint(s[S_OFFSET].ptr + s[S_OFFSET].len, trove_zigzag64(off));
            s[S_OFFSET].len = (size_t)(p - s[S_OFFSET].ptr);
            prev_index = e->index;
        } else {
            p = trove_put_varint(s[S_FREE].ptr + s[S_FREE].len,
                                 trove_zigzag64((int64_t)(f->ts_ns - prev_free)));
            p = trove_put_varint(p, f->pid);
            p = trove_put_varint(p, f->tid);
            s[S_FREE].len = (size_t)(p - s[S_FREE].ptr);
            prev_free = f->ts_ns;
        }
        if (f->id > maxid)
            maxid = f->id;
        prev_name = f->name_id;
    }
    {
        size_t raw = 0, bound_z;
        struct trove_bytes all = {0};
        for (int k = 0; k < V2_STREAMS; k++)
            raw += s[k].len;
        bound_z = ZSTD_compressBound(raw);
        start = out->len;
        if ((rc = trove_bytes_reserve(&all, raw + 1)) != TROVE_OK ||
            (rc = trove_bytes_reserve(out, V2_FIXED + (bound_z > raw ? bound_z : raw) +
                                               TROVE__SEALED_TRAILER)) != TROVE_OK) {
            trove_bytes_free(&all);
            goto out;
        }
        for (int k = 0; k < V2_STREAMS; k++)
            trove_bytes_append(&all, s[k].ptr, s[k].len); /* reserved: cannot fail */
        p = out->ptr + start;
        packed = raw > 0 ? ZSTD_compress(p + V2_FIXED, bound_z, all.ptr, raw, V2_LEVEL) : 0;
        if (ZSTD_isError(packed) || packed >= raw || !ratio_ok(raw, packed)) {
            memcpy(p + V2_FIXED, all.ptr, raw);
            packed = raw;
        }
        trove_bytes_free(&all);
        memcpy(p, TROVE__FLOWS_MAGIC, 8);
        trove__put_le32(p + 8, 2);
        trove__put_le32(p + 12, 0);
        trove__put_le64(p + 16, n);
        trove__put_le64(p + 24, nevents);
        trove__put_le64(p + 32, unit);
        trove__put_le64(p + 40, raw);
        trove__put_le64(p + 48, packed);
        for (int k = 0; k < V2_STREAMS; k++)
            trove__put_le32(p + 56 + 4 * k, (uint32_t)s[k].len);
        trove__sealed_seal(p, V2_FIXED + packed + TROVE__SEALED_TRAILER);
        out->len = start + V2_FIXED + packed + TROVE__SEALED_TRAILER;
    }
    rc = TROVE_OK;
out:
    for (int k = 0; k < V2_STREAMS; k++)
        trove_bytes_free(&s[k]);
    free(t);
    free(bound);
    id_names_free(&names);
    return rc;
}

/* ---- decoding ----------------------------------------------------------------------------- */

struct v2_in {
    const uint8_t *p[V2_STREAMS], *end[V2_STREAMS];
};

static int v2_varint(struct v2_in *in, int k, unsigned bits, uint64_t *v, size_t row,
                     struct trove_diag *diag)
{
    int why = 0;
    const uint8_t *q = trove_get_varint(in->p[k], in->end[k], bits, v, &why);
    if (!q)
        return TROVE_FAIL(diag, why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT, V2_FIXED,
                          "flows object: row %zu: its %s %s", row, stream_name[k],
                          why == 1 ? "runs past the end of its stream" : "is not a valid varint");
    in->p[k] = q;
    return TROVE_OK;
}

static int v2_decode(const uint8_t *buf, size_t len, const struct trove_flows_events *ev,
                     struct trove_flows *out, struct trove_diag *diag)
{
    struct trove_flow *tmp = NULL;
    struct id_names names = {0};
    struct v2_in in;
    uint8_t *raw = NULL;
    const uint8_t *streams;
    uint64_t rows, nev, unit, raw_len, packed, sum = 0, maxid = 0, prev_index = 0, prev_free = 0;
    uint32_t flags, lens[V2_STREAMS], prev_name = 0;
    int rc;

    if (len < V2_FIXED + TROVE__SEALED_TRAILER)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "flows object of version 2 is %zu bytes, shorter than its %u-byte "
                          "fixed part and checksum; the object was cut short",
                          len, V2_FIXED + TROVE__SEALED_TRAILER);
    flags = trove__get_le32(buf + 12);
    rows = trove__get_le64(buf + 16);
    nev = trove__get_le64(buf + 24);
    unit = trove__get_le64(buf + 32);
    raw_len = trove__get_le64(buf + 40);
    packed = trove__get_le64(buf + 48);
    for (int k = 0; k < V2_STREAMS; k++)
        sum += lens[k] = trove__get_le32(buf + 56 + 4 * k);
    if (flags != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 12,
                          "flows object flags are 0x%" PRIx32 "; version 2 defines none", flags);
    if (rows > TROVE_FLOWS_MAX)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 16,
                          "flows object holds %" PRIu64 " rows, over the limit of %" PRIu64,
                          rows, TROVE_FLOWS_MAX);
    if (nev != ev->count)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 24,
                          "flows object is coded against %" PRIu64 " events; its capture has %"
                          PRIu64,
                          nev, ev->count);
    if (unit == 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 32, "flows object: its time unit is 0");
    if (raw_len < rows * 3 || raw_len > rows * V2_ROW_MAX || sum != raw_len ||
        lens[S_KIND] != rows)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 40,
                          "flows object: %" PRIu64 " rows cannot take %" PRIu64
                          " bytes in streams of %" PRIu64 " (%" PRIu64 " to %" PRIu64
                          ", the kinds a byte a row)",
                          rows, raw_len, sum, rows * 3, rows * V2_ROW_MAX);
    if (packed != (uint64_t)len - V2_FIXED - TROVE__SEALED_TRAILER || packed > raw_len)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 48,
                          "flows object says its streams take %" PRIu64 " packed bytes of %"
                          PRIu64 "; the object holds %zu",
                          packed, raw_len, len - V2_FIXED - TROVE__SEALED_TRAILER);
    if (!ratio_ok(raw_len, packed))
        return TROVE_FAIL(diag, TROVE_ERR_BOMB, 40,
                          "flows object: %" PRIu64 " packed bytes say they give %" PRIu64
                          ", over 1024 times their size",
                          packed, raw_len);
    streams = buf + V2_FIXED;
    if (packed < raw_len) {
        size_t got;
        /* raw_len <= 57 * 2^28 fits any size_t of 64 bits; on 32 bits the allocation fails */
        if (raw_len > SIZE_MAX || !(raw = trove__malloc((size_t)raw_len))) {
            rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory for %" PRIu64 " flow rows",
                            rows);
            goto out;
        }
        got = ZSTD_decompress(raw, (size_t)raw_len, streams, (size_t)packed);
        if (ZSTD_isError(got) || got != raw_len) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, V2_FIXED,
                            "flows object: its zstd frame does not give its %" PRIu64 " bytes%s",
                            raw_len, ZSTD_isError(got) ? " (a malformed frame)" : "");
            goto out;
        }
        streams = raw;
    }
    for (int k = 0; k < V2_STREAMS; k++) {
        in.p[k] = streams;
        in.end[k] = streams + lens[k];
        streams += lens[k];
    }
    if (!(tmp = trove__malloc((rows ? (size_t)rows : 1) * sizeof *tmp)) ||
        id_names_init(&names, (size_t)rows) != TROVE_OK) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory for %" PRIu64 " flow rows",
                        rows);
        goto out;
    }
    for (size_t i = 0; i < (size_t)rows; i++) {
        struct trove_flow *f = &tmp[i];
        uint64_t code, name;
        uint8_t kind = *in.p[S_KIND]++;
        memset(f, 0, sizeof *f);
        if (kind > 15 || (kind & 3) > TROVE_FLOW_END) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, V2_FIXED,
                            "flows object: row %zu has kind 0x%02x; a phase is 0 to 2, then the "
                            "flag and the free bit",
                            i, kind);
            goto out;
        }
        f->phase = kind & 3;
        f->flags = (kind >> 2) & 1;
        if ((rc = v2_varint(&in, S_FLOW, 64, &code, i, diag)) != TROVE_OK ||
            (rc = v2_varint(&in, S_NAME, 33, &name, i, diag)) != TROVE_OK)
            goto out;
        f->id = maxid + 1 - (uint64_t)trove_unzigzag64(code);
        if (f->id == 0 || name > (uint64_t)UINT32_MAX + 1) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, V2_FIXED,
                            "flows object: row %zu has id 0 or a name past 2^32", i);
            goto out;
        }
        if (kind & 8) {
            uint64_t dts, pid, tid;
            if ((rc = v2_varint(&in, S_FREE, 64, &dts, i, diag)) != TROVE_OK ||
                (rc = v2_varint(&in, S_FREE, 32, &pid, i, diag)) != TROVE_OK ||
                (rc = v2_varint(&in, S_FREE, 32, &tid, i, diag)) != TROVE_OK)
                goto out;
            f->ts_ns = prev_free + (uint64_t)trove_unzigzag64(dts);
            f->pid = (uint32_t)pid;
            f->tid = (uint32_t)tid;
            prev_free = f->ts_ns;
        } else {
            uint64_t dix, zoff, index, step;
            int64_t off;
            struct trove_event e;
            if ((rc = v2_varint(&in, S_EVENT, 64, &dix, i, diag)) != TROVE_OK ||
                (rc = v2_varint(&in, S_OFFSET, 64, &zoff, i, diag)) != TROVE_OK)
                goto out;
            index = prev_index + (uint64_t)trove_unzigzag64(dix);
            if (index >= nev) {
                rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, V2_FIXED,
                                "flows object: row %zu names event %" PRIu64 " of %" PRIu64, i,
                                index, nev);
                goto out;
            }
            if ((rc = ev->get(ev->ctx, index, &e, diag)) != TROVE_OK)
                goto out;
            off = trove_unzigzag64(zoff);
            step = (off >= 0 ? (uint64_t)off : -(uint64_t)off);
            if (step > UINT64_MAX / unit ||
                (off >= 0 ? step * unit > UINT64_MAX - e.start_ns : step * unit > e.start_ns)) {
                rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, V2_FIXED,
                                "flows object: row %zu lies outside the clock (event %" PRIu64
                                " and an offset of %" PRId64 " units)",
                                i, index, off);
                goto out;
            }
            f->ts_ns = off >= 0 ? e.start_ns + step * unit : e.start_ns - step * unit;
            f->pid = e.pid;
            f->tid = e.tid;
            prev_index = index;
        }
        {
            size_t slot;
            uint32_t guess = predict_name(&names, f->id, prev_name, &slot);
            f->name_id = name ? (uint32_t)(name - 1) : guess;
            remember(&names, slot, f->id, f->name_id);
        }
        if (f->id > maxid)
            maxid = f->id;
        prev_name = f->name_id;
    }
    for (int k = 0; k < V2_STREAMS; k++)
        if (in.p[k] != in.end[k]) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, V2_FIXED,
                            "flows object: %zu bytes of its %s stream follow the last row",
                            (size_t)(in.end[k] - in.p[k]), stream_name[k]);
            goto out;
        }
    rc = trove__flows_take(out, tmp, (size_t)rows, diag);
out:
    free(raw);
    free(tmp);
    id_names_free(&names);
    return rc;
}

/* ---- both versions ---------------------------------------------------------------------- */

static const uint32_t known_versions[] = {1, 2};

int trove_flows_decode(const uint8_t *buf, size_t len, struct trove_flows *out,
                       struct trove_diag *diag)
{
    return trove_flows_decode_events(buf, len, NULL, out, diag);
}

int trove_flows_decode_events(const uint8_t *buf, size_t len, const struct trove_flows_events *ev,
                              struct trove_flows *out, struct trove_diag *diag)
{
    uint32_t version;
    int rc;

    if (!out || (!buf && len > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "flows decode needs a buffer and an output");
    if (len < TROVE__FLOWS_V1_FIXED + TROVE__SEALED_TRAILER)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "flows object is %zu bytes, shorter than its %u-byte fixed part and "
                          "checksum; the object was cut short",
                          len, TROVE__FLOWS_V1_FIXED + TROVE__SEALED_TRAILER);
    if ((rc = trove__sealed_magic(buf, len, TROVE__FLOWS_MAGIC, TROVE__FLOWS_WHAT, diag)) !=
        TROVE_OK)
        return rc;
    version = trove__get_le32(buf + 8);
    if ((rc = trove__sealed_version(version, 8, known_versions, 2, TROVE__FLOWS_WHAT,
                                    "versions 1 and 2", diag)))
        return rc;
    if ((rc = trove__sealed_trailer(buf, len, TROVE__FLOWS_WHAT, diag)) != TROVE_OK)
        return rc;
    if (version == 1)
        return trove__flows_v1_decode(buf, len, out, diag);
    if (!ev)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 8,
                          "flows object of version 2 is coded against its capture's events; "
                          "decode it with them");
    return v2_decode(buf, len, ev, out, diag);
}
