/*
 * chrome_events.c: the trace rules of the Chrome importer — what each phase of a trace event
 * becomes (docs/formats/chrome-json.md). chrome_json.c reads
 * an event's fields (chrome_internal.h) and calls trove__chrome_event() at its '}'.
 *
 * Imported events become struct trove__trec records in one growable array; a B waits on its
 * thread's stack for its E; an async b or S waits on its track (chrome_tracks.c), keyed by
 * pid, category, scope and id, for the e or F that closes it (an e closes the innermost open b
 * of its name, as the Trace Event Format matches them; an S collects its T steps). Async
 * spans, n events with an id and counter values go on tracks of their own, whose synthetic
 * tids are handed out only at the end, by what the tracks hold, so that they do not depend
 * on the order of the input. Flow events (s, t, f, and bind_id on an X) wait with their key
 * for a final id, given in order of first appearance once the rows are sorted. Names are
 * interned with first-appearance ids and counted. The end of an import, which hands all
 * this over, is chrome_finish.c's.
 */
#include "chrome_internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"
#include "common/utf8.h"

#define MAX_EVENTS ((uint64_t)1 << 28)      /* imported events plus open B and async spans */
#define NO_NAME TROVE__CHROME_NO_NAME
#define NO_TRACK TROVE__CT_NONE

/* ---- messages ---------------------------------------------------------------------- */

/* Copy a name into out for a message: at most 60 bytes, control bytes as '?'. */
const char *trove__chrome_show_name(const struct trove__chrome *ps, uint32_t id, char out[72])
{
    const uint8_t *p;
    size_t len, n = 0;
    if (id == NO_NAME)
        return "(unnamed)";
    p = ps->arena.ptr + ps->nm[id].off;
    len = ps->nm[id].len;
    if (len > 60) {
        len = 60;
        while (len > 0 && (p[len] & 0xC0) == 0x80)
            len--;
    }
    for (size_t i = 0; i < len; i++)
        out[n++] = (char)(p[i] < 0x20 || p[i] == 0x7f ? '?' : p[i]);
    if (len < ps->nm[id].len) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = 0;
    return out;
}

/* ns as a microsecond decimal for messages, e.g. "12.345 us". */
const char *trove__chrome_show_us(uint64_t ns, char out[40])
{
    snprintf(out, 40, "%llu.%03llu us", (unsigned long long)(ns / 1000),
             (unsigned long long)(ns % 1000));
    return out;
}

/* ---- names and threads -------------------------------------------------------------- */

static uint32_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, p, n);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    }
    h ^= h >> 32;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 29;
    return (uint32_t)h;
}

/* Replace an open-addressing index with an empty one twice the size (64 at first). */
static int grow_u32_index(uint32_t **index, uint32_t *mask)
{
    uint32_t cap = *index ? (*mask + 1) * 2 : 64;
    uint32_t *p = trove__calloc(cap, sizeof *p);
    if (!p)
        return TROVE_ERR_NOMEM;
    free(*index);
    *index = p;
    *mask = cap - 1;
    return TROVE_OK;
}

static int names_rehash(struct trove__chrome *ps)
{
    int rc = grow_u32_index(&ps->nm_index, &ps->nm_mask);
    if (rc != TROVE_OK)
        return rc;
    for (uint32_t i = 0; i < ps->nnm; i++) {
        uint32_t j = ps->nm[i].hash & ps->nm_mask;
        while (ps->nm_index[j])
            j = (j + 1) & ps->nm_mask;
        ps->nm_index[j] = i + 1;
    }
    return TROVE_OK;
}

/* Find or add a name; its provisional id (first-appearance order) goes to *id. */
static int intern(struct trove__chrome *ps, const uint8_t *p, size_t len, uint32_t *id)
{
    uint32_t h = hash_bytes(p, len), j;
    int rc;

    if (!ps->nm_index || (uint64_t)(ps->nnm + 1) * 2 > (uint64_t)ps->nm_mask + 1) {
        if ((rc = names_rehash(ps)) != TROVE_OK)
            return rc;
    }
    for (j = h & ps->nm_mask; ps->nm_index[j]; j = (j + 1) & ps->nm_mask) {
        const struct trove__cname *e = &ps->nm[ps->nm_index[j] - 1];
        if (e->hash == h && e->len == len && memcmp(ps->arena.ptr + e->off, p, len) == 0) {
            *id = ps->nm_index[j] - 1;
            return TROVE_OK;
        }
    }
    if (ps->nnm == ps->nm_cap) {
        uint32_t cap = ps->nm_cap ? ps->nm_cap * 2 : 256;
        struct trove__cname *n = trove__realloc(ps->nm, cap * sizeof *n);
        if (!n)
            return TROVE_ERR_NOMEM;
        ps->nm = n;
        ps->nm_cap = cap;
    }
    if ((rc = trove_bytes_append(&ps->arena, p, len)) != TROVE_OK)
        return rc;
    ps->nm[ps->nnm] = (struct trove__cname){ps->arena.len - len, (uint32_t)len, h, 0, 0};
    ps->nm_index[j] = ++ps->nnm;
    *id = ps->nnm - 1;
    return TROVE_OK;
}

static int threads_rehash(struct trove__chrome *ps)
{
    int rc = grow_u32_index(&ps->thr_index, &ps->thr_mask);
    if (rc != TROVE_OK)
        return rc;
    for (uint32_t i = 0; i < ps->nthr; i++) {
        uint32_t key[2] = {ps->thr[i].pid, ps->thr[i].tid};
        uint32_t j = hash_bytes((const uint8_t *)key, 8) & ps->thr_mask;
        while (ps->thr_index[j])
            j = (j + 1) & ps->thr_mask;
        ps->thr_index[j] = i + 1;
    }
    return TROVE_OK;
}

/* The B/E state of thread (pid, tid); created when `create`, else NULL if absent. */
static int find_thread(struct trove__chrome *ps, uint32_t pid, uint32_t tid, int create,
                       struct trove__cthread **out)
{
    uint32_t key[2] = {pid, tid}, j;
    int rc;

    *out = NULL;
    if (!ps->thr_index || (uint64_t)(ps->nthr + 1) * 2 > (uint64_t)ps->thr_mask + 1) {
        if ((rc = threads_rehash(ps)) != TROVE_OK)
            return rc;
    }
    for (j = hash_bytes((const uint8_t *)key, 8) & ps->thr_mask; ps->thr_index[j];
         j = (j + 1) & ps->thr_mask) {
        struct trove__cthread *t = &ps->thr[ps->thr_index[j] - 1];
        if (t->pid == pid && t->tid == tid) {
            *out = t;
            return TROVE_OK;
        }
    }
    if (!create)
        return TROVE_OK;
    if (ps->nthr == ps->thr_cap) {
        uint32_t cap = ps->thr_cap ? ps->thr_cap * 2 : 16;
        struct trove__cthread *n = trove__realloc(ps->thr, cap * sizeof *n);
        if (!n)
            return TROVE_ERR_NOMEM;
        ps->thr = n;
        ps->thr_cap = cap;
    }
    ps->thr[ps->nthr] = (struct trove__cthread){pid, tid, NULL, 0, 0};
    ps->thr_index[j] = ++ps->nthr;
    *out = &ps->thr[ps->nthr - 1];
    return TROVE_OK;
}

/* ---- names from outside ------------------------------------------------------------- */

static int name_too_long(struct trove__chrome *ps, const struct trove__cfield *f,
                         const char *what)
{
    return TROVE_FAIL(ps->diag, TROVE_ERR_LIMIT, f->off,
                      "%s is longer than %d bytes, the longest name trove stores", what,
                      TROVE_NAME_MAX);
}

/* Make p[0..len) valid UTF-8: each byte that starts no valid sequence becomes U+FFFD.
 * *out points into p or into ps->fix. */
int trove__chrome_repair_utf8(struct trove__chrome *ps, const uint8_t *p, size_t len,
                              const uint8_t **out, size_t *out_len)
{
    size_t i = trove__utf8_valid_prefix(p, len), k;
    int rc;

    if (i == len) {
        *out = p;
        *out_len = len;
        return TROVE_OK;
    }
    ps->fix.len = 0;
    if ((rc = trove_bytes_append(&ps->fix, p, i)) != TROVE_OK)
        return rc;
    while (i < len) {
        /* p[i] starts no valid sequence */
        if ((rc = trove_bytes_append(&ps->fix, "\xEF\xBF\xBD", 3)) != TROVE_OK)
            return rc;
        i++;
        k = trove__utf8_valid_prefix(p + i, len - i);
        if (k && (rc = trove_bytes_append(&ps->fix, p + i, k)) != TROVE_OK)
            return rc;
        i += k;
    }
    *out = ps->fix.ptr;
    *out_len = ps->fix.len;
    return TROVE_OK;
}

/* A decoded string made valid UTF-8 (repair_utf8), and its length checked. */
static int clean_string(struct trove__chrome *ps, const struct trove__json_str *b,
                        const struct trove__cfield *f, const char *what, const uint8_t **out,
                        size_t *out_len)
{
    int rc;
    if (b->over)
        return name_too_long(ps, f, what);
    if ((rc = trove__chrome_repair_utf8(ps, b->ptr, b->len, out, out_len)) != TROVE_OK)
        return rc;
    if (*out_len > TROVE_NAME_MAX)
        return name_too_long(ps, f, what);
    return TROVE_OK;
}

/* ---- the fields of an event -------------------------------------------------------- */

static int trace_error(struct trove__chrome *ps, uint64_t off, const char *msg,
                       const char *field)
{
    return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, off, msg, field);
}

/* A pid or tid: an integer in [INT32_MIN, UINT32_MAX], negatives stored two's complement. */
static int num_to_id(const struct trove__json_num *n, uint32_t *out)
{
    uint64_t v = 0;
    if (!n->is_int)
        return TROVE_ERR_TRACE;
    if (n->nd == 0) {
        *out = 0;
        return TROVE_OK;
    }
    if (n->point > 10)
        return TROVE_ERR_LIMIT;
    for (int64_t i = 0; i < n->point; i++)
        v = v * 10 + n->d[i];
    if (n->neg ? v > (uint64_t)1 << 31 : v > UINT32_MAX)
        return TROVE_ERR_LIMIT;
    *out = n->neg ? (uint32_t)(0 - v) : (uint32_t)v;
    return TROVE_OK;
}

/* A time field in ns. `required`: absence is an error; else absent means 0. */
static int get_time(struct trove__chrome *ps, const struct trove__cfield *f,
                    const struct trove__json_num *n, const char *what, int required,
                    uint64_t *out)
{
    int rc;
    *out = 0;
    if (f->type == TROVE__J_NONE) {
        if (!required)
            return TROVE_OK;
        return trace_error(ps, ps->ev.off, "trace event has no \"%s\" field", what);
    }
    if (f->type != TROVE__J_NUMBER)
        return trace_error(ps, f->off, "\"%s\" must be a number of microseconds", what);
    rc = trove__json_num_scaled(n, 3, out);
    if (rc == TROVE_ERR_NEGATIVE)
        return TROVE_FAIL(ps->diag, rc, f->off,
                          "negative \"%s\"; trove times are unsigned nanoseconds", what);
    if (rc != TROVE_OK)
        return TROVE_FAIL(ps->diag, rc, f->off,
                          "\"%s\" does not fit in 64-bit nanoseconds", what);
    return TROVE_OK;
}

static int get_id(struct trove__chrome *ps, const struct trove__cfield *f,
                  const struct trove__json_num *n, const char *what, uint32_t *out)
{
    int rc;
    *out = 0;
    if (f->type == TROVE__J_NONE)
        return TROVE_OK;
    if (f->type != TROVE__J_NUMBER)
        return trace_error(ps, f->off, "\"%s\" must be an integer", what);
    rc = num_to_id(n, out);
    if (rc == TROVE_ERR_TRACE)
        return trace_error(ps, f->off,
                           "\"%s\" must be an integer (no fraction or exponent)", what);
    if (rc != TROVE_OK)
        return trace_error(ps, f->off,
                           "\"%s\" is outside -2147483648..4294967295", what);
    return TROVE_OK;
}

static int get_thread(struct trove__chrome *ps, uint32_t *pid, uint32_t *tid)
{
    int rc = get_id(ps, &ps->ev.pid, &ps->ev.pid_n, "pid", pid);
    if (rc == TROVE_OK)
        rc = get_id(ps, &ps->ev.tid, &ps->ev.tid_n, "tid", tid);
    return rc;
}

/* The event's name, interned; a missing name is the empty name unless `optional`, when it
 * is NO_NAME. */
static int get_name(struct trove__chrome *ps, int optional, uint32_t *id)
{
    const uint8_t *p;
    size_t len;
    int rc;

    *id = NO_NAME;
    if (ps->ev.name.type == TROVE__J_NONE)
        return optional ? TROVE_OK : intern(ps, (const uint8_t *)"", 0, id);
    if (ps->ev.name.type != TROVE__J_STRING)
        return trace_error(ps, ps->ev.name.off, "\"%s\" must be a string", "name");
    if ((rc = clean_string(ps, &ps->name, &ps->ev.name, "event name", &p, &len)) != TROVE_OK)
        return rc;
    return intern(ps, p, len, id);
}

/* The time, thread and name every event of a phase that makes events has. */
static int get_common(struct trove__chrome *ps, int name_optional, uint64_t *ts, uint32_t *pid,
                      uint32_t *tid, uint32_t *name)
{
    int rc;
    if ((rc = get_time(ps, &ps->ev.ts, &ps->ev.ts_n, "ts", 1, ts)) != TROVE_OK ||
        (rc = get_thread(ps, pid, tid)) != TROVE_OK)
        return rc;
    return get_name(ps, name_optional, name);
}

static int check_count(struct trove__chrome *ps)
{
    if ((uint64_t)ps->nrec + ps->open_total + ps->tracks.open_total >= MAX_EVENTS)
        return TROVE_FAIL(ps->diag, TROVE_ERR_LIMIT, ps->ev.off,
                          "more than %llu events; split the trace to import it",
                          (unsigned long long)MAX_EVENTS);
    return TROVE_OK;
}

static int push_rec(struct trove__chrome *ps, uint64_t start, uint64_t dur, uint32_t pid,
                    uint32_t tid, uint8_t kind, uint8_t extra, uint32_t name, uint32_t track)
{
    int rc = check_count(ps);
    if (rc != TROVE_OK)
        return rc;
    if (ps->nrec == ps->rec_cap) {
        size_t cap = ps->rec_cap ? ps->rec_cap * 2 : 4096;
        struct trove__trec *n = trove__realloc(ps->rec, cap * sizeof *n);
        if (!n)
            return TROVE_ERR_NOMEM;
        ps->rec = n;
        ps->rec_cap = cap;
    }
    ps->rec[ps->nrec] = (struct trove__trec){start, dur, pid, tid, name, (uint32_t)ps->nrec,
                                             track, kind, extra, 0, 0};
    ps->nrec++;
    ps->nm[name].count++;
    return TROVE_OK;
}

int trove__chrome_link(struct trove__chrome *ps, size_t rec, uint64_t in)
{
    if (in == TROVE__CHROME_NO_ROWS)
        return TROVE_OK;
    if (ps->nlinks == ps->cap_links) {
        size_t cap = ps->cap_links ? ps->cap_links * 2 : 1024;
        struct trove__clink *n = trove__realloc(ps->links, cap * sizeof *n);
        if (!n)
            return TROVE_ERR_NOMEM;
        ps->links = n;
        ps->cap_links = cap;
    }
    ps->links[ps->nlinks++] = (struct trove__clink){(uint32_t)rec, in};
    return TROVE_OK;
}

/* The rows of the event being read go to the record just pushed. */
static int link_last(struct trove__chrome *ps)
{
    return trove__chrome_link(ps, ps->nrec - 1, trove__chrome_rows_of(ps));
}

/* Unmatched begin or end of a phase: an error when strict, else counted. */
static int unmatched_end(struct trove__chrome *ps, char ph, uint32_t name, uint32_t pid,
                         uint32_t tid, uint64_t ts, const char *what)
{
    char nbuf[72], t1[40];
    if (ps->strict)
        return TROVE_FAIL(ps->diag, TROVE_ERR_UNMATCHED, ps->ev.off,
                          "%c event \"%s\" on pid %u tid %u at ts %s has no open %s", ph,
                          trove__chrome_show_name(ps, name, nbuf), pid, tid,
                          trove__chrome_show_us(ts, t1), what);
    ps->st.unmatched_end++;
    ps->st.unmatched_end_phase[(uint8_t)ph & 0x7f]++;
    return TROVE_OK;
}

static int end_before_start(struct trove__chrome *ps, char ph, uint64_t ts, char bph,
                            uint32_t name, uint64_t bts, uint64_t boff, uint32_t pid,
                            uint32_t tid)
{
    char nbuf[72], t1[40], t2[40];
    return TROVE_FAIL(ps->diag, TROVE_ERR_NEGATIVE, ps->ev.off,
                      "end before start: %c at ts %s closes the %c \"%s\" at ts %s (byte "
                      "%llu) on pid %u tid %u",
                      ph, trove__chrome_show_us(ts, t1), bph,
                      trove__chrome_show_name(ps, name, nbuf), trove__chrome_show_us(bts, t2),
                      (unsigned long long)boff, pid, tid);
}

/* ---- thread events: X, B/E, instants, M ----------------------------------------------- */

/* A flow row waiting for its final id. */
static int push_flow(struct trove__chrome *ps, uint64_t ts, uint32_t pid, uint32_t tid,
                     uint32_t name, uint32_t key, uint8_t phase, uint8_t flags)
{
    if ((uint64_t)ps->nflows >= TROVE_FLOWS_MAX)
        return TROVE_FAIL(ps->diag, TROVE_ERR_LIMIT, ps->ev.off,
                          "more than %llu flow events; split the trace to import it",
                          (unsigned long long)TROVE_FLOWS_MAX);
    if (ps->nflows == ps->flows_cap) {
        size_t cap = ps->flows_cap ? ps->flows_cap * 2 : 1024;
        struct trove__cflow *n = trove__realloc(ps->flows, cap * sizeof *n);
        if (!n)
            return TROVE_ERR_NOMEM;
        ps->flows = n;
        ps->flows_cap = cap;
    }
    ps->flows[ps->nflows] =
        (struct trove__cflow){ts, pid, tid, name, (uint32_t)ps->nflows, key, phase, flags};
    ps->nflows++;
    ps->nm[name].flows++;
    return TROVE_OK;
}

/* Append a length-prefixed part to the track key being built. */
static int key_part(struct trove__chrome *ps, const void *p, size_t len)
{
    uint8_t n[4];
    int rc;
    trove__put_le32(n, (uint32_t)len);
    if ((rc = trove_bytes_append(&ps->tkey, n, 4)) != TROVE_OK)
        return rc;
    return len ? trove_bytes_append(&ps->tkey, p, len) : TROVE_OK;
}

/* A string field's bytes for a key: the decoded text (cut at its buffer; `over` is kept in
 * the key) or nothing when absent or not a string. */
static int key_string(struct trove__chrome *ps, const struct trove__cfield *f,
                      const struct trove__json_str *s)
{
    uint8_t over = (uint8_t)(f->type == TROVE__J_STRING ? (s->over ? 2 : 1) : 0);
    int rc = trove_bytes_append(&ps->tkey, &over, 1);
    if (rc != TROVE_OK || f->type != TROVE__J_STRING)
        return rc;
    return key_part(ps, s->ptr, s->len);
}

/*
 * The key of an async track or a flow: class, category, scope, then the id — its kind (id,
 * id2.local, id2.global, bind_id), whether it was a number, and its text (a number's digits
 * as written in canonical form). Built in ps->tkey.
 */
static int build_key(struct trove__chrome *ps, uint8_t cls, int bind)
{
    const struct trove__cevent *ev = &ps->ev;
    uint8_t head[3];
    int rc;

    ps->tkey.len = 0;
    head[0] = cls;
    head[1] = bind ? TROVE__ID_BIND : ev->id_kind;
    head[2] = bind ? ev->bind_num : ev->id_num;
    if ((rc = trove_bytes_append(&ps->tkey, head, 3)) != TROVE_OK)
        return rc;
    if (bind)
        return key_string(ps, &ev->bind_id, &ps->bind);
    if ((rc = key_string(ps, &ev->cat, &ps->cat)) != TROVE_OK ||
        (rc = key_string(ps, &ev->scope, &ps->idscope)) != TROVE_OK)
        return rc;
    return key_string(ps, &ev->id, &ps->id);
}

/* The "trove" member of the event just pushed (an X, or an i or n: `x` says which), which
 * trove's export writes where the phase alone would not give the event back: its kind,
 * extra and depth. A kind that the phase cannot be (a counter; a zone as an instant, an
 * instant as an X) is refused. */
static int apply_trove(struct trove__chrome *ps, int x)
{
    struct trove__trec *r = &ps->rec[ps->nrec - 1];
    const struct trove__cevent *ev = &ps->ev;

    if (!ev->tv_set)
        return TROVE_OK;
    ps->st.trove_members++;
    if (ev->tv_set & TROVE__TV_KIND) {
        uint8_t k = ev->tv_kind;
        int zone = k == TROVE_KIND_ZONE || k == TROVE_KIND_FRAME || k == TROVE_KIND_LOCK;
        int instant = k == TROVE_KIND_INSTANT || k == TROVE_KIND_ASYNC_INSTANT;
        if (k == TROVE_KIND_COUNTER || (x ? instant : zone))
            return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, ev->tv_off,
                              "\"trove\".kind %u cannot be a ph %s event", k, x ? "X" : "i or n");
        r->kind = k;
    }
    if (ev->tv_set & TROVE__TV_EXTRA)
        r->extra = ev->tv_extra;
    if (ev->tv_set & TROVE__TV_DEPTH) {
        r->depth = ev->tv_depth;
        r->depth_given = 1;
    }
    return TROVE_OK;
}

static int ev_complete(struct trove__chrome *ps)
{
    const struct trove__cevent *ev = &ps->ev;
    uint64_t ts, dur;
    uint32_t pid, tid, name;
    int rc;

    if ((rc = get_time(ps, &ev->ts, &ev->ts_n, "ts", 1, &ts)) != TROVE_OK ||
        (rc = get_time(ps, &ev->dur, &ev->dur_n, "dur", 0, &dur)) != TROVE_OK ||
        (rc = get_thread(ps, &pid, &tid)) != TROVE_OK)
        return rc;
    if (dur > UINT64_MAX - ts)
        return TROVE_FAIL(ps->diag, TROVE_ERR_LIMIT, ev->dur.off,
                          "ts + dur does not fit in 64-bit nanoseconds");
    if ((rc = get_name(ps, 0, &name)) != TROVE_OK)
        return rc;
    ps->st.complete++;
    if ((rc = push_rec(ps, ts, dur, pid, tid, TROVE_KIND_ZONE, 0, name, NO_TRACK)) != TROVE_OK ||
        (rc = link_last(ps)) != TROVE_OK || (rc = apply_trove(ps, 1)) != TROVE_OK)
        return rc;
    /* Flow binding on the event itself (the v2 flow events): bind_id with flow_in/out. */
    if (ev->bind_id.type == TROVE__J_STRING &&
        (ev->flow_in.type == TROVE__J_TRUE || ev->flow_out.type == TROVE__J_TRUE)) {
        int in = ev->flow_in.type == TROVE__J_TRUE, out = ev->flow_out.type == TROVE__J_TRUE;
        uint32_t key;
        if ((rc = build_key(ps, TROVE__CT_FLOW, 1)) != TROVE_OK ||
            (rc = trove__ct_find(&ps->flowkeys, TROVE__CT_FLOW, 0, ps->tkey.ptr, ps->tkey.len,
                                 1, &key)) != TROVE_OK)
            return rc;
        ps->st.flow_binds++;
        return push_flow(ps, ts, pid, tid, name, key,
                         in && out ? TROVE_FLOW_STEP : out ? TROVE_FLOW_START : TROVE_FLOW_END,
                         TROVE_FLOW_ENCLOSING);
    }
    return TROVE_OK;
}

static int ev_begin(struct trove__chrome *ps)
{
    struct trove__cthread *t;
    uint64_t ts;
    uint32_t pid, tid, name;
    int rc;

    if ((rc = get_common(ps, 1, &ts, &pid, &tid, &name)) != TROVE_OK ||
        (rc = check_count(ps)) != TROVE_OK || (rc = find_thread(ps, pid, tid, 1, &t)) != TROVE_OK)
        return rc;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct trove__cbegin *n = trove__realloc(t->stk, cap * sizeof *n);
        if (!n)
            return TROVE_ERR_NOMEM;
        t->stk = n;
        t->cap = cap;
    }
    t->stk[t->n++] = (struct trove__cbegin){ts, ps->ev.off, name, trove__chrome_rows_of(ps)};
    ps->open_total++;
    return TROVE_OK;
}

static int ev_end(struct trove__chrome *ps)
{
    struct trove__cthread *t;
    struct trove__cbegin b;
    uint64_t ts;
    uint32_t pid, tid, name;
    int rc;

    if ((rc = get_common(ps, 1, &ts, &pid, &tid, &name)) != TROVE_OK ||
        (rc = find_thread(ps, pid, tid, 0, &t)) != TROVE_OK)
        return rc;
    if (!t || t->n == 0)
        return unmatched_end(ps, 'E', name, pid, tid, ts, "B event on its thread");
    b = t->stk[t->n - 1];
    if (ts < b.ts)
        return end_before_start(ps, 'E', ts, 'B', b.name != NO_NAME ? b.name : name, b.ts,
                                b.off, pid, tid);
    if (b.name != NO_NAME)
        name = b.name;
    else if (name == NO_NAME && (rc = intern(ps, (const uint8_t *)"", 0, &name)) != TROVE_OK)
        return rc;
    assert(ps->open_total > 0);
    t->n--;
    ps->open_total--;
    ps->st.begin_end_pairs++;
    if ((rc = push_rec(ps, b.ts, ts - b.ts, pid, tid, TROVE_KIND_ZONE, 0, name, NO_TRACK)) !=
            TROVE_OK ||
        (rc = trove__chrome_link(ps, ps->nrec - 1, b.in)) != TROVE_OK)
        return rc;
    return link_last(ps);
}

/* The async track of this event (b, e, n, S, T, F): found, or created when `create`. */
static int async_track(struct trove__chrome *ps, uint8_t cls, uint32_t pid, int create,
                       uint32_t *track)
{
    int rc = build_key(ps, cls, 0);
    if (rc != TROVE_OK)
        return rc;
    rc = trove__ct_find(&ps->tracks, cls, pid, ps->tkey.ptr, ps->tkey.len, create, track);
    if (rc == TROVE_ERR_LIMIT)
        return TROVE_FAIL(ps->diag, rc, ps->ev.off, "more than 2^28 async tracks");
    return rc;
}

static int ev_instant(struct trove__chrome *ps, uint8_t kind)
{
    uint64_t ts;
    uint32_t pid, tid, name, track = NO_TRACK;
    uint8_t scope = TROVE_SCOPE_THREAD;
    int rc;

    if ((rc = get_time(ps, &ps->ev.ts, &ps->ev.ts_n, "ts", 1, &ts)) != TROVE_OK ||
        (rc = get_thread(ps, &pid, &tid)) != TROVE_OK)
        return rc;
    if (kind == TROVE_KIND_INSTANT && ps->ev.s.type != TROVE__J_NONE) {
        int c = ps->scope.len == 1 && !ps->scope.over ? ps->scope.ptr[0] : 0;
        if (ps->ev.s.type != TROVE__J_STRING)
            return trace_error(ps, ps->ev.s.off, "\"%s\" (instant scope) must be a string", "s");
        if (c == 'p')
            scope = TROVE_SCOPE_PROCESS;
        else if (c == 'g')
            scope = TROVE_SCOPE_GLOBAL;
        else if (c != 't')
            return trace_error(ps, ps->ev.s.off,
                               "\"%s\" (instant scope) must be \"t\", \"p\" or \"g\"", "s");
    }
    if ((rc = get_name(ps, 0, &name)) != TROVE_OK)
        return rc;
    /* An n with an id belongs to the nestable async track of that id. */
    if (kind == TROVE_KIND_ASYNC_INSTANT && ps->ev.id_kind != 0 &&
        (rc = async_track(ps, TROVE__CT_NESTABLE, pid, 1, &track)) != TROVE_OK)
        return rc;
    ps->st.instants++;
    if ((rc = push_rec(ps, ts, 0, pid, tid, kind, kind == TROVE_KIND_INSTANT ? scope : 0, name,
                       track)) != TROVE_OK ||
        (rc = link_last(ps)) != TROVE_OK)
        return rc;
    return apply_trove(ps, 0);
}

/* The event's args.sort_index: 1 with the value in *out when the last numeric argument of
 * that key is an integer in the signed 32-bit range, else 0. */
static int sort_index_arg(const struct trove__chrome *ps, int32_t *out)
{
    const struct trove__json_num *n = NULL;
    uint64_t v = 0;

    for (size_t i = 0; i < ps->ev.nargs; i++) {
        const struct trove__carg *a = &ps->args[i];
        if (!a->over && a->key_len == 10 &&
            !memcmp(ps->arg_keys.ptr + a->key_off, "sort_index", 10))
            n = &a->num;
    }
    if (!n || !n->is_int)
        return 0;
    if (n->nd > 0) {
        if (n->point > 10)
            return 0;
        for (int64_t i = 0; i < n->point; i++)
            v = v * 10 + n->d[i];
    }
    if (n->neg ? v > (uint64_t)1 << 31 : v > INT32_MAX)
        return 0;
    *out = n->neg ? (int32_t)(0 - (int64_t)v) : (int32_t)v;
    return 1;
}

/* process_sort_index / thread_sort_index: a sort index entry when args.sort_index is an
 * integer that fits; otherwise the event is skipped like any other M we do not use. */
static int ev_sort_index(struct trove__chrome *ps, int type)
{
    uint32_t pid, tid;
    int32_t v = 0;
    int rc;

    if (!sort_index_arg(ps, &v))
        goto skipped;
    if ((rc = get_thread(ps, &pid, &tid)) != TROVE_OK ||
        (rc = trove_names_set_sort(ps->tmp_names, type, pid, tid, v)) != TROVE_OK)
        return rc;
    ps->st.metadata++;
    return TROVE_OK;
skipped: /* no sort_index, or one that is not an integer of 32 bits */
    ps->st.skipped++;
    ps->st.skipped_phase['M']++;
    ps->st.skipped_metadata++;
    return TROVE_OK;
}

static int ev_metadata(struct trove__chrome *ps)
{
    const uint8_t *p;
    size_t len;
    uint32_t pid, tid;
    int type, rc;

    if (ps->ev.name.type == TROVE__J_NONE)
        goto skipped;
    if (ps->ev.name.type != TROVE__J_STRING)
        return trace_error(ps, ps->ev.name.off, "\"%s\" must be a string", "name");
    if (!ps->name.over && ps->name.len == 11 && !memcmp(ps->name.ptr, "thread_name", 11))
        type = TROVE_NAME_THREAD;
    else if (!ps->name.over && ps->name.len == 12 && !memcmp(ps->name.ptr, "process_name", 12))
        type = TROVE_NAME_PROCESS;
    else if (!ps->name.over && ps->name.len == 18 &&
             !memcmp(ps->name.ptr, "process_sort_index", 18))
        return ev_sort_index(ps, TROVE_NAME_PROCESS_SORT);
    else if (!ps->name.over && ps->name.len == 17 &&
             !memcmp(ps->name.ptr, "thread_sort_index", 17))
        return ev_sort_index(ps, TROVE_NAME_THREAD_SORT);
    else
        goto skipped;
    if (ps->ev.args_name.type == TROVE__J_NONE)
        goto skipped;
    if (ps->ev.args_name.type != TROVE__J_STRING)
        return trace_error(ps, ps->ev.args_name.off,
                           "\"%s\" of a metadata event must be a string", "args.name");
    if ((rc = get_thread(ps, &pid, &tid)) != TROVE_OK ||
        (rc = clean_string(ps, &ps->args_name, &ps->ev.args_name,
                           type == TROVE_NAME_THREAD ? "thread name" : "process name", &p,
                           &len)) != TROVE_OK)
        return rc;
    if ((rc = trove_names_set(ps->tmp_names, type, pid, tid, (const char *)p, len)) != TROVE_OK)
        return rc;
    ps->st.metadata++;
    return TROVE_OK;
skipped: /* process_labels, process_uptime_seconds, ...: counted by phase */
    ps->st.skipped++;
    ps->st.skipped_phase['M']++;
    ps->st.skipped_metadata++;
    return TROVE_OK;
}

/* ---- async spans: b/e (nestable), S/T/F (legacy) --------------------------------------- */

static int ev_async_begin(struct trove__chrome *ps, uint8_t cls)
{
    struct trove__cspan s;
    uint64_t ts;
    uint32_t pid, tid, name, track;
    int rc;

    if ((rc = get_common(ps, 1, &ts, &pid, &tid, &name)) != TROVE_OK ||
        (rc = check_count(ps)) != TROVE_OK ||
        (rc = async_track(ps, cls, pid, 1, &track)) != TROVE_OK)
        return rc;
    memset(&s, 0, sizeof s);
    s.ts = ts;
    s.off = ps->ev.off;
    s.name = name;
    s.in = trove__chrome_rows_of(ps);
    return trove__ct_open(&ps->tracks, track, &s);
}

/* The name a span's zone takes: the begin's, else the end's, else "". */
static int span_name(struct trove__chrome *ps, uint32_t begin, uint32_t end, uint32_t *out)
{
    if (begin != NO_NAME) {
        *out = begin;
        return TROVE_OK;
    }
    if (end != NO_NAME) {
        *out = end;
        return TROVE_OK;
    }
    return intern(ps, (const uint8_t *)"", 0, out);
}

/* e (nestable end) and F (legacy finish); T (legacy step) when `step`. */
static int ev_async_end(struct trove__chrome *ps, uint8_t cls, char ph)
{
    struct trove__cspan s;
    uint64_t ts;
    uint32_t pid, tid, name, track, zname;
    long k;
    int rc;

    if ((rc = get_common(ps, 1, &ts, &pid, &tid, &name)) != TROVE_OK ||
        (rc = async_track(ps, cls, pid, 0, &track)) != TROVE_OK)
        return rc;
    k = track == NO_TRACK ? -1 : trove__ct_match(&ps->tracks, track, name);
    if (k < 0)
        return unmatched_end(ps, ph, name, pid, tid, ts,
                             cls == TROVE__CT_NESTABLE
                                 ? "b event of its category, id and name"
                                 : "S event of its category, id and name");
    s = ps->tracks.t[track].open[k];
    if (ts < s.ts)
        return end_before_start(ps, ph, ts, cls == TROVE__CT_NESTABLE ? 'b' : 'S',
                                s.name != NO_NAME ? s.name : name, s.ts, s.off, pid, tid);
    if (s.has_step && ts < s.step_ts)
        return end_before_start(ps, ph, ts, 'T', s.step_name, s.step_ts, s.off, pid, tid);
    if ((rc = span_name(ps, s.name, name, &zname)) != TROVE_OK)
        return rc;
    if (ph == 'T') {
        struct trove__cspan *o = &ps->tracks.t[track].open[k];
        uint32_t step = zname;
        if (ps->ev.args_step.type == TROVE__J_STRING) {
            const uint8_t *p;
            size_t len;
            if ((rc = clean_string(ps, &ps->args_step, &ps->ev.args_step, "step name", &p,
                                   &len)) != TROVE_OK ||
                (rc = intern(ps, p, len, &step)) != TROVE_OK)
                return rc;
        }
        if (o->has_step &&
            (rc = trove__ct_add_step(o, o->step_ts, ts, o->step_name, o->step_seq)) != TROVE_OK)
            return rc;
        o->has_step = 1;
        o->step_ts = ts;
        o->step_name = step;
        o->step_seq = (uint32_t)ps->st.trace_events;
        return TROVE_OK;
    }
    if (s.has_step &&
        (rc = trove__ct_add_step(&ps->tracks.t[track].open[k], s.step_ts, ts, s.step_name,
                                 s.step_seq)) != TROVE_OK)
        return rc;
    trove__ct_close(&ps->tracks, track, (size_t)k, &s);
    rc = push_rec(ps, s.ts, ts - s.ts, pid, 0, TROVE_KIND_ZONE,
                  cls == TROVE__CT_NESTABLE ? TROVE_ASYNC_NESTABLE : TROVE_ASYNC_LEGACY, zname,
                  track);
    if (rc == TROVE_OK && (rc = trove__chrome_link(ps, ps->nrec - 1, s.in)) == TROVE_OK)
        rc = link_last(ps);
    for (size_t i = 0; rc == TROVE_OK && i < s.nsteps; i++)
        rc = push_rec(ps, s.steps[i].start, s.steps[i].end - s.steps[i].start, pid, 0,
                      TROVE_KIND_ZONE, TROVE_ASYNC_STEP, s.steps[i].name, track);
    if (rc == TROVE_OK) {
        ps->st.async_pairs++;
        ps->st.async_steps += s.nsteps;
    }
    free(s.steps);
    return rc;
}

/* ---- flows: s, t, f -------------------------------------------------------------------- */

static int ev_flow(struct trove__chrome *ps, uint8_t phase)
{
    uint64_t ts;
    uint32_t pid, tid, name, key;
    uint8_t flags = TROVE_FLOW_ENCLOSING;
    int rc;

    if ((rc = get_common(ps, 0, &ts, &pid, &tid, &name)) != TROVE_OK)
        return rc;
    if (phase == TROVE_FLOW_END &&
        !(ps->ev.bp.type == TROVE__J_STRING && ps->bp.len == 1 && !ps->bp.over &&
          ps->bp.ptr[0] == 'e'))
        flags = 0; /* an f binds to the next slice unless "bp":"e" */
    if ((rc = build_key(ps, TROVE__CT_FLOW, 0)) != TROVE_OK ||
        (rc = trove__ct_find(&ps->flowkeys, TROVE__CT_FLOW, 0, ps->tkey.ptr, ps->tkey.len, 1,
                             &key)) != TROVE_OK)
        return rc == TROVE_ERR_LIMIT ? TROVE_FAIL(ps->diag, rc, ps->ev.off, "more than 2^28 flows")
                                     : rc;
    ps->st.flow_events++;
    return push_flow(ps, ts, pid, tid, name, key, phase, flags);
}

/* ---- counters: C ---------------------------------------------------------------------- */

/* A JSON number as the nearest double, from its digits (never through a lossy step when it
 * has at most 24 significant digits). NaN and the infinities cannot come out of JSON; a
 * value past the double range is refused (-1). */
static int ev_counter(struct trove__chrome *ps)
{
    const struct trove__cevent *ev = &ps->ev;
    uint64_t ts;
    uint32_t pid, tid, name;
    size_t used = 0;
    int rc;

    if ((rc = get_common(ps, 0, &ts, &pid, &tid, &name)) != TROVE_OK)
        return rc;
    for (size_t i = 0; i < ev->nargs; i++) {
        const struct trove__carg *a = &ps->args[i];
        const uint8_t *key;
        size_t klen;
        uint32_t series;
        double v;
        if (a->over || trove__json_num_double(&a->num, &v) != 0) {
            ps->st.counter_args_skipped++;
            continue;
        }
        ps->tkey.len = 0;
        /* an empty key may have no buffer behind it at all (nothing was ever kept) */
        if ((rc = trove__chrome_repair_utf8(ps,
                              a->key_len ? ps->arg_keys.ptr + a->key_off : (const uint8_t *)"",
                              a->key_len, &key, &klen)) !=
                TROVE_OK ||
            (rc = key_part(ps, ps->arena.ptr + ps->nm[name].off, ps->nm[name].len)) != TROVE_OK ||
            (rc = trove_bytes_append(&ps->tkey, key, klen)) != TROVE_OK ||
            (rc = trove__ct_find(&ps->tracks, TROVE__CT_COUNTER, pid, ps->tkey.ptr, ps->tkey.len,
                                 1, &series)) != TROVE_OK)
            return rc == TROVE_ERR_LIMIT
                       ? TROVE_FAIL(ps->diag, rc, ps->ev.off, "more than 2^28 counter series")
                       : rc;
        ps->tracks.t[series].name = name;
        if ((rc = push_rec(ps, ts, trove_counter_bits(v), pid, 0, TROVE_KIND_COUNTER, 0, name,
                           series)) != TROVE_OK ||
            (rc = link_last(ps)) != TROVE_OK)
            return rc;
        used++;
    }
    ps->st.counter_args_skipped += ev->nonnum_args;
    if (used == 0) {
        ps->st.skipped++;
        ps->st.skipped_phase['C']++;
        return TROVE_OK;
    }
    ps->st.counters++;
    ps->st.counter_values += used;
    return TROVE_OK;
}

int trove__chrome_event(struct trove__chrome *ps)
{
    int ph;
    if (ps->ph.len != 1 || ps->ph.over) {
        ps->st.skipped++;
        ps->st.skipped_phase[0]++;
        return TROVE_OK;
    }
    switch ((ph = ps->ph.ptr[0])) {
    case 'X': return ev_complete(ps);
    case 'B': return ev_begin(ps);
    case 'E': return ev_end(ps);
    case 'I':
    case 'i': return ev_instant(ps, TROVE_KIND_INSTANT);
    case 'n': return ev_instant(ps, TROVE_KIND_ASYNC_INSTANT);
    case 'M': return ev_metadata(ps);
    case 'b': return ev_async_begin(ps, TROVE__CT_NESTABLE);
    case 'e': return ev_async_end(ps, TROVE__CT_NESTABLE, 'e');
    case 'S': return ev_async_begin(ps, TROVE__CT_LEGACY);
    case 'T': return ev_async_end(ps, TROVE__CT_LEGACY, 'T');
    case 'F': return ev_async_end(ps, TROVE__CT_LEGACY, 'F');
    case 's': return ev_flow(ps, TROVE_FLOW_START);
    case 't': return ev_flow(ps, TROVE_FLOW_STEP);
    case 'f': return ev_flow(ps, TROVE_FLOW_END);
    case 'C': return ev_counter(ps);
    default:
        ps->st.skipped++;
        ps->st.skipped_phase[ph < 128 ? ph : 0]++;
        return TROVE_OK;
    }
}
