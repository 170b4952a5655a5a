/*
 * wire_packed.c: the packed batch payload — send what changed.
 *
 * A capture is a long run of nearly identical records whose one fast-moving field is a
 * start time that advances by a few thousand nanoseconds. Packed writes each start as the
 * zigzag varint of its difference from the previous event's start (an out-of-order event
 * costs a sign bit), moves the few distinct (pid, tid) pairs into a table at the head of
 * the batch so that each event carries a one-byte index, and writes the duration and name
 * id as plain varints:
 *
 *   payload := n_threads:varint  { pid:varint tid:varint } * n_threads  event * count
 *   event   := index:u8 [escape:varint]  start_delta:zigzag-varint  dur:varint
 *              name_id:varint  kind:u8  depth:u8  extra:u8
 *
 * The first event's delta is taken from 0. Thread indices are in order of first appearance.
 * When the table has at most 256 entries the index byte is the index. When it has more,
 * bytes 0..254 are direct and byte 255 is followed by a varint holding index - 255, so any
 * number of threads encodes in one batch. pad is not carried (it is always 0).
 *
 * The decoder checks every byte against the payload end. While at least one worst-case
 * event (TROVE_PACKED_EVENT_MAX bytes) remains it runs a variant without the per-byte end
 * checks, which is the same code specialised by the compiler; the tail runs checked. On
 * x86-64 with fast BMI2 the unchecked part first tries a branch-free decoder (one 16-byte
 * load finds all three varint ends, pext gathers their bits): varint lengths on real data
 * are too irregular for branch prediction, and the branchy reader ran at about half the
 * speed there (measured with `trove bench wire` on trove gen data).
 */
#include "wire_internal.h"
#include "common/alloc.h"

#include <stdlib.h>

#include "common/fail.h"
#include "common/varint.h"

void trove__thread_map_free(struct trove__thread_map *m)
{
    free(m->keys);
    free(m->idx);
    free(m->gen);
    free(m->table);
    free(m->ev_idx);
    memset(m, 0, sizeof *m);
}

size_t trove_wire_packed_bound(size_t n)
{
    /* thread count varint + a table entry per event at most + the events */
    return 5 + n * (TROVE_PACKED_THREAD_MAX + TROVE_PACKED_EVENT_MAX);
}

static inline uint32_t map_hash(uint64_t key, uint32_t cap)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
}

/* Make the map hold at least 2 * n slots and the per-event and table arrays n entries. */
static int map_prepare(struct trove__thread_map *m, size_t n)
{
    uint32_t want = 1024;
    while (want < 2 * n)
        want *= 2;
    if (want > m->cap) {
        uint64_t *k = trove__malloc(want * sizeof *k);
        uint32_t *ix = trove__malloc(want * sizeof *ix);
        uint32_t *g = trove__calloc(want, sizeof *g);
        if (!k || !ix || !g) {
            free(k);
            free(ix);
            free(g);
            return TROVE_ERR_NOMEM;
        }
        free(m->keys);
        free(m->idx);
        free(m->gen);
        m->keys = k;
        m->idx = ix;
        m->gen = g;
        m->cap = want;
        m->cur = 0;
    }
    if (n > m->table_cap) {
        uint64_t *t = trove__malloc(n * sizeof *t);
        uint32_t *e = trove__malloc(n * sizeof *e);
        if (!t || !e) {
            free(t);
            free(e);
            return TROVE_ERR_NOMEM;
        }
        free(m->table);
        free(m->ev_idx);
        m->table = t;
        m->ev_idx = e;
        m->table_cap = (uint32_t)n;
    }
    if (++m->cur == 0) { /* generation wrapped: clear the stamps once */
        memset(m->gen, 0, m->cap * sizeof *m->gen);
        m->cur = 1;
    }
    return TROVE_OK;
}

int trove__thread_table(struct trove__thread_map *m, const struct trove_event *ev, size_t n,
                        uint32_t *nthreads_out)
{
    uint32_t nthreads = 0, cap, cur;
    uint64_t last_key;
    uint32_t last_idx = 0;
    int rc;

    if ((rc = map_prepare(m, n)) != TROVE_OK)
        return rc;
    cap = m->cap;
    cur = m->cur;
    /* A key no event of the batch can match first, so event 0 always goes through the map. */
    last_key = n ? ((uint64_t)ev[0].pid << 32 | ev[0].tid) ^ 1 : 0;
    /* Runs of one thread skip the map. */
    for (size_t i = 0; i < n; i++) {
        uint64_t key = (uint64_t)ev[i].pid << 32 | ev[i].tid;
        if (key != last_key) {
            uint32_t h = map_hash(key, cap);
            while (m->gen[h] == cur && m->keys[h] != key)
                h = (h + 1) & (cap - 1);
            if (m->gen[h] != cur) {
                m->gen[h] = cur;
                m->keys[h] = key;
                m->idx[h] = nthreads;
                m->table[nthreads++] = key;
            }
            last_key = key;
            last_idx = m->idx[h];
        }
        m->ev_idx[i] = last_idx;
    }
    *nthreads_out = nthreads;
    return TROVE_OK;
}

size_t trove__packed_encode(struct trove__thread_map *m, const struct trove_event *ev, size_t n,
                            uint8_t *out, int *rc)
{
    uint8_t *p = out;
    uint32_t nthreads = 0;
    uint64_t prev = 0;

    /* Pass 1: the thread table, and each event's index. */
    if ((*rc = trove__thread_table(m, ev, n, &nthreads)) != TROVE_OK)
        return 0;
    p = trove_put_varint(p, nthreads);
    for (uint32_t t = 0; t < nthreads; t++) {
        p = trove_put_varint(p, m->table[t] >> 32);
        p = trove_put_varint(p, (uint32_t)m->table[t]);
    }
    /* Pass 2: the events. */
    for (size_t i = 0; i < n; i++) {
        const struct trove_event *e = &ev[i];
        uint32_t ix = m->ev_idx[i];
        if (e->pad != 0) {
            *rc = TROVE_ERR_INVALID;
            return 0;
        }
        if (nthreads <= 256 || ix < TROVE_PACKED_DIRECT) {
            *p++ = (uint8_t)ix;
        } else {
            *p++ = TROVE_PACKED_DIRECT;
            p = trove_put_varint(p, ix - TROVE_PACKED_DIRECT);
        }
        p = trove_put_varint(p, trove_zigzag64((int64_t)(e->start_ns - prev)));
        prev = e->start_ns;
        p = trove_put_varint(p, e->dur_ns);
        p = trove_put_varint(p, e->name_id);
        p[0] = e->kind;
        p[1] = e->depth;
        p[2] = e->extra;
        p += 3;
    }
    *rc = TROVE_OK;
    return (size_t)(p - out);
}

/*
 * Read a varint of at most max_bytes bytes whose last byte may carry only `top_bits` bits.
 * With checked == 0 the caller guarantees max_bytes readable bytes at p. Returns NULL on
 * any failure; the caller classifies it with the checked reader in varint.h.
 */
static inline __attribute__((always_inline)) const uint8_t *
rd_varint(const uint8_t *p, const uint8_t *end, unsigned max_bytes, unsigned top_bits, uint64_t *v,
          const int checked)
{
    uint64_t b, r;
    if (checked && p >= end)
        return NULL;
    b = *p++;
    if (b < 0x80) {
        *v = b;
        return p;
    }
    r = b & 0x7f;
    for (unsigned i = 1; i < max_bytes; i++) {
        if (checked && p >= end)
            return NULL;
        b = *p++;
        r |= (b & 0x7f) << (7 * i);
        if (b < 0x80) {
            if (i == max_bytes - 1 && (b >> top_bits) != 0)
                return NULL;
            *v = r;
            return p;
        }
    }
    return NULL;
}

#define RD64(p, v) rd_varint((p), end, 10, 1, (v), checked)
#define RD32(p, v) rd_varint((p), end, 5, 4, (v), checked)

/* A varint of the event at p is too long or too wide (or cut short): *pp = p. */
static inline __attribute__((always_inline)) int bad_varint(const uint8_t **pp, const uint8_t *p)
{
    *pp = p;
    return TROVE_ERR_VARINT;
}

/* Decode one event at *pp; returns 0 or a negative code, leaving *pp at the failure. */
static inline __attribute__((always_inline)) int
decode_event(const uint8_t **pp, const uint8_t *end, const uint64_t *threads, uint32_t nthreads,
             uint64_t *prev, struct trove_event *e, const int checked)
{
    const uint8_t *p = *pp, *q;
    uint64_t ix, delta, dur, name, key;

    if (checked && p >= end)
        return TROVE_ERR_TRUNCATED;
    ix = *p++;
    if (ix == TROVE_PACKED_DIRECT && nthreads > 256) {
        if (!(q = RD32(p, &ix)))
            return bad_varint(pp, p);
        p = q;
        ix += TROVE_PACKED_DIRECT;
    }
    if (ix >= nthreads)
        return TROVE_ERR_THREAD;
    if (!(q = RD64(p, &delta)))
        return bad_varint(pp, p);
    p = q;
    if (!(q = RD64(p, &dur)))
        return bad_varint(pp, p);
    p = q;
    if (!(q = RD32(p, &name)))
        return bad_varint(pp, p);
    p = q;
    if (checked && end - p < 3)
        return TROVE_ERR_TRUNCATED;
    key = threads[ix];
    *prev += (uint64_t)trove_unzigzag64(delta);
    e->start_ns = *prev;
    e->dur_ns = dur;
    e->pid = (uint32_t)(key >> 32);
    e->tid = (uint32_t)key;
    e->kind = p[0];
    e->depth = p[1];
    e->extra = p[2];
    e->pad = 0;
    e->name_id = (uint32_t)name;
    *pp = p + 3;
    return TROVE_OK;
}

int trove__packed_force_generic;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(TROVE_NO_PEXT)
#include <immintrin.h>
#define HAVE_PEXT_PATH 1

/* BMI2's pext is one fast instruction on Intel since Haswell and AMD since Zen 3; Zen 1 and
 * 2 microcode it (hundreds of cycles), so they take the generic path. */
static int use_pext_path(void)
{
    return !trove__packed_force_generic && __builtin_cpu_supports("bmi2") &&
           !__builtin_cpu_is("znver1") && !__builtin_cpu_is("znver2");
}

/* The value of a varint of len (1..8) bytes at p; 8 bytes at p must be readable. */
static inline __attribute__((target("bmi2"))) uint64_t varint_pext(const uint8_t *p, unsigned len)
{
    uint64_t w;
    memcpy(&w, p, 8); /* x86 is little-endian */
    return _pext_u64(w, 0x7f7f7f7f7f7f7f7fULL >> (64 - 8 * len));
}

/*
 * Decode one event with no branch on varint lengths. The branchy reader in decode_event()
 * is fast while the CPU predicts every varint's length, and loses 15-20 cycles a varint
 * when it does not, which on a real capture's mix of durations and name ids is often.
 * Here one 16-byte load after the index byte gives every varint's end at once (its high
 * bits, by movemask), three bit scans give the three lengths and the next event's place,
 * and pext gathers each value's 7-bit groups. Takes the common shape only: a direct
 * thread index, a start delta and a duration of at most 8 bytes, a name id of at most 4.
 * Returns 0 for anything else, leaving the event to decode_event(). The caller guarantees
 * TROVE_PACKED_EVENT_MAX readable bytes at *pp.
 */
static inline __attribute__((target("bmi2"))) int
decode_event_pext(const uint8_t **pp, const uint64_t *threads, uint32_t nthreads, uint64_t *prev,
                  struct trove_event *e)
{
    const uint8_t *p = *pp;
    unsigned ix = p[0];
    unsigned t1 = ~(unsigned)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(p + 1))) & 0xffff;
    unsigned t2 = t1 & (t1 - 1), t3 = t2 & (t2 - 1);
    unsigned e1, e2, e3;
    uint64_t key;

    if (t3 == 0 || ix >= nthreads || (ix == TROVE_PACKED_DIRECT && nthreads > 256))
        return 0;
    e1 = (unsigned)__builtin_ctz(t1); /* the last byte of each varint, from p + 1 */
    e2 = (unsigned)__builtin_ctz(t2);
    e3 = (unsigned)__builtin_ctz(t3);
    if (e1 >= 8 || e2 - e1 > 8 || e3 - e2 > 4)
        return 0;
    key = threads[ix];
    *prev += (uint64_t)trove_unzigzag64(varint_pext(p + 1, e1 + 1));
    {
        /* The record in two 16-byte stores: (start, dur) and (pid, tid, kind depth extra
         * pad, name_id). The 4-byte load of kind, depth, extra reads one byte past the
         * event, inside the caller's guaranteed TROVE_PACKED_EVENT_MAX (this shape of
         * event is at most 24 bytes). */
        uint32_t kde, name = (uint32_t)varint_pext(p + 2 + e2, e3 - e2);
        uint64_t dur = varint_pext(p + 2 + e1, e2 - e1);
        memcpy(&kde, p + 2 + e3, 4);
        _mm_storeu_si128((__m128i *)(void *)e, _mm_set_epi64x((long long)dur, (long long)*prev));
        _mm_storeu_si128((__m128i *)(void *)&e->pid,
                         _mm_set_epi32((int)name, (int)(kde & 0xffffff), (int)(uint32_t)key,
                                       (int)(uint32_t)(key >> 32)));
    }
    *pp = p + 5 + e3;
    return 1;
}
#endif

/*
 * The unchecked loop: decode while a whole worst-case event is in bounds. Returns the
 * index of the first event not decoded; on failure sets *rc and leaves *pp at that event.
 */
static inline __attribute__((always_inline)) size_t
fast_loop(const uint8_t **pp, const uint8_t *end, const uint64_t *threads, uint32_t nthreads,
          uint64_t *prev, struct trove_event *out, size_t i, uint32_t count, int *rc,
          const int pext)
{
    const uint8_t *p = *pp, *at;
    (void)pext;
    while (i < count && (size_t)(end - p) >= TROVE_PACKED_EVENT_MAX) {
#ifdef HAVE_PEXT_PATH
        if (pext && decode_event_pext(&p, threads, nthreads, prev, &out[i])) {
            i++;
            continue;
        }
#endif
        at = p;
        if ((*rc = decode_event(&p, end, threads, nthreads, prev, &out[i], 0)) != TROVE_OK) {
            p = at;
            break;
        }
        i++;
    }
    *pp = p;
    return i;
}

static size_t fast_generic(const uint8_t **pp, const uint8_t *end, const uint64_t *threads,
                           uint32_t nthreads, uint64_t *prev, struct trove_event *out, size_t i,
                           uint32_t count, int *rc)
{
    return fast_loop(pp, end, threads, nthreads, prev, out, i, count, rc, 0);
}

#ifdef HAVE_PEXT_PATH
__attribute__((target("bmi2"))) static size_t
fast_pext(const uint8_t **pp, const uint8_t *end, const uint64_t *threads, uint32_t nthreads,
          uint64_t *prev, struct trove_event *out, size_t i, uint32_t count, int *rc)
{
    return fast_loop(pp, end, threads, nthreads, prev, out, i, count, rc, 1);
}
#endif

/* After a fast or checked event decode failed on a varint: did the payload end inside it
 * (TROVE_ERR_TRUNCATED), or is it too long or too wide (TROVE_ERR_VARINT)? */
static int classify_varint_failure(const uint8_t *ev, const uint8_t *end, uint32_t nthreads)
{
    static const unsigned bits[3] = {64, 64, 32}; /* start delta, duration, name id */
    const uint8_t *q = ev + 1;
    uint64_t v;
    int why = 2;

    if (nthreads > 256 && *ev == TROVE_PACKED_DIRECT && !(q = trove_get_varint(q, end, 32, &v, &why)))
        return why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT;
    for (int f = 0; f < 3; f++)
        if (!(q = trove_get_varint(q, end, bits[f], &v, &why)))
            return why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT;
    return TROVE_ERR_VARINT;
}

/* "packed frame: WHAT (event I of COUNT, N threads)" at offset off of the caller's buffer. */
static int packed_error(struct trove_diag *diag, int rc, uint64_t off, const char *what, size_t i,
                        uint32_t count, uint32_t nthreads)
{
    return TROVE_FAIL(diag, rc, off, "packed frame: %s (event %zu of %u, %u threads)", what, i,
                      count, nthreads);
}

/* A thread table varint failed (why as trove_get_varint's). */
static int table_error(struct trove_diag *diag, int why, uint64_t off, uint32_t count,
                       uint32_t nthreads)
{
    return packed_error(diag, why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT, off,
                        why == 1 ? "payload ends inside the thread table"
                                 : "thread table varint longer or wider than its field",
                        0, count, nthreads);
}

/* Event i, at `at`, failed to decode with rc. */
static int event_error(struct trove_diag *diag, int rc, const uint8_t *p0, const uint8_t *at,
                       const uint8_t *end, uint64_t base, size_t i, uint32_t count,
                       uint32_t nthreads)
{
    if (rc == TROVE_ERR_VARINT)
        rc = classify_varint_failure(at, end, nthreads);
    return packed_error(diag, rc, base + (uint64_t)(at - p0),
                        rc == TROVE_ERR_THREAD      ? "thread index past the thread table"
                        : rc == TROVE_ERR_TRUNCATED ? "payload ends inside an event"
                                                    : "varint longer or wider than its field",
                        i, count, nthreads);
}

int trove__packed_decode(const uint8_t *p0, size_t len, uint32_t count, struct trove_event *out,
                         uint64_t *threads, uint64_t base, int generic, struct trove_diag *diag)
{
    const uint8_t *p = p0, *end = p0 + len, *at;
    uint64_t v, pid, tid, prev = 0;
    uint32_t nthreads = 0;
    int why = 0, rc = TROVE_OK;
    size_t i = 0;

    if (!(p = trove_get_varint(p, end, 32, &v, &why)))
        return table_error(diag, why, base, count, 0);
    if (v > count)
        return packed_error(diag, TROVE_ERR_CORRUPT, base,
                            "thread table larger than the event count", 0, count, 0);
    nthreads = (uint32_t)v;
    for (uint32_t t = 0; t < nthreads; t++) {
        at = p;
        if (!(p = trove_get_varint(p, end, 32, &pid, &why)) ||
            !(p = trove_get_varint(p, end, 32, &tid, &why)))
            return table_error(diag, why, base + (uint64_t)(at - p0), count, nthreads);
        threads[t] = pid << 32 | tid;
    }
    /* Fast loop: a whole worst-case event is in bounds, so skip the per-byte checks. */
    (void)generic; /* used only where there is a BMI2 path */
#ifdef HAVE_PEXT_PATH
    if (!generic && use_pext_path())
        i = fast_pext(&p, end, threads, nthreads, &prev, out, i, count, &rc);
    else
#endif
        i = fast_generic(&p, end, threads, nthreads, &prev, out, i, count, &rc);
    if (rc != TROVE_OK)
        return event_error(diag, rc, p0, p, end, base, i, count, nthreads);
    while (i < count) {
        at = p;
        if ((rc = decode_event(&p, end, threads, nthreads, &prev, &out[i], 1)) != TROVE_OK)
            return event_error(diag, rc, p0, at, end, base, i, count, nthreads);
        i++;
    }
    if (p != end)
        return packed_error(diag, TROVE_ERR_CORRUPT, base + (uint64_t)(p - p0),
                            "trailing bytes after the last event", i, count, nthreads);
    return TROVE_OK;
}
