/*
 * chrome_json.c: the Chrome trace JSON importer (trove_chrome_import, trove_chrome_import_mem).
 *
 * Chrome writes a trace as one JSON document, either a bare array of event objects or an
 * object whose "traceEvents" member is that array (other members, such as "metadata", may
 * come before or after it). A real trace is tens of megabytes, almost all of it strings
 * and args we throw away, so the importer never builds a document tree and never holds the
 * input: the streaming tokenizer of common/json.h reads it through a window of one chunk
 * (1 MiB) refilled from the FILE*, and this file is the fixed-shape parser on top of it —
 * the trace's grammar and the rules that turn trace events into trove events:
 *
 *   document := BOM? ( '[' events ']'? | '{' (member (',' member)*)? '}' )
 *   member   := "traceEvents" ':' '[' events ']'  |  key ':' value   (skipped)
 *   events   := event (',' event)*          (the bare array may stop at EOF, even after a ',')
 *   event    := '{' (key ':' value)* '}'    (keys we use are decoded; other values skipped)
 *
 * Values that are not used (args, cat, id2, metadata, ...) go through trove__json_skip(),
 * which validates them with a fixed stack of open brackets, capped at 512 levels counting
 * the document's own. Strings are decoded only into small bounded buffers (a lone surrogate
 * escape becomes U+FFFD, and a name's invalid UTF-8 is repaired byte by byte to U+FFFD);
 * skipped strings are validated and discarded. Numbers are never converted through a
 * double: a microsecond time becomes nanoseconds exactly, digits past the nanosecond
 * rounded half away from zero.
 *
 * Each event object is collected into a flat set of fields and evaluated when its '}' is
 * read, because JSON does not order keys (the sample puts "args" before "ph"). An event
 * that is imported becomes a struct rec in a growable array; B events wait on a per-thread
 * stack until their E. Names are interned with first-appearance ids and counted. At the
 * end: sort per thread to compute depth (a min-heap of open end times), sort into output
 * order, renumber names by descending frequency, and only then touch the caller's events
 * and names, so a failure leaves them as they were (the one exception: an allocation failure
 * inside the final trove_names_merge() can leave names partly merged; events stay intact).
 *
 * Memory: one chunk, two name buffers of TROVE_NAME_MAX bytes, about 40 bytes per imported
 * event while parsing plus the 32-byte output records and qsort's scratch, and the distinct
 * names. Nothing is proportional to the input size. See docs/formats/chrome-json.md for
 * the mapping of phases onto trove events.
 */
#include "chrome_json.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/fail.h"
#include "common/json.h"
#include "common/utf8.h"

#define CHUNK_DEFAULT ((size_t)1 << 20)
#define MAX_EVENTS ((uint64_t)1 << 28)      /* imported events plus open B events */
#define INPUT_DEFAULT ((uint64_t)4 << 30)   /* max_input when the caller passes 0 */
#define KEY_CAP 16                          /* longest key we need to recognize, plus slack */
#define SHORT_CAP 4                         /* "ph" and "s" values */
#define NO_NAME UINT32_MAX

enum { J_NONE = 0, J_STRING, J_NUMBER, J_OTHER };

/* ---- parsed values ------------------------------------------------------------------ */

struct field {
    uint8_t type;            /* J_* */
    uint64_t off;            /* byte offset of the value */
};

/* The fields of the event being read. */
struct evf {
    uint64_t off;
    struct field ph, name, ts, dur, pid, tid, s, args_name;
    struct trove__json_num ts_n, dur_n, pid_n, tid_n;
};

/* ---- state -------------------------------------------------------------------------- */

struct rec {
    uint64_t start, dur;
    uint32_t pid, tid, name, seq;
    uint8_t kind, extra, depth;
};

struct iname {
    uint64_t off;            /* into the arena */
    uint32_t len, hash, count;
};

struct open_b {
    uint64_t ts, off;
    uint32_t name;           /* provisional name id, or NO_NAME */
};

struct bthread {
    uint32_t pid, tid;
    struct open_b *stk;
    size_t n, cap;
};

struct parser {
    struct trove__json js;       /* the input and its tokens */
    struct trove_diag *diag;
    int strict;
    struct trove_chrome_stats st;
    struct evf ev;

    uint8_t key_store[KEY_CAP], ph_store[SHORT_CAP], s_store[SHORT_CAP];
    struct trove__json_str key, ph, scope, name, args_name;
    struct trove_bytes fix;      /* UTF-8 repair output */

    struct rec *rec;
    size_t nrec, rec_cap;
    uint64_t open_total;         /* B events waiting for their E */

    struct trove_bytes arena;    /* interned names, back to back */
    struct iname *nm;
    uint32_t nnm, nm_cap;
    uint32_t *nm_index;          /* id + 1, 0 = free; power-of-two size */
    uint32_t nm_mask;

    struct bthread *thr;
    uint32_t nthr, thr_cap;
    uint32_t *thr_index;
    uint32_t thr_mask;

    struct trove_names *tmp_names;
};

/* ---- messages ---------------------------------------------------------------------- */

/* Copy a name into out for a message: at most 60 bytes, control bytes as '?'. */
static const char *show_name(const struct parser *ps, uint32_t id, char out[72])
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
static const char *show_us(uint64_t ns, char out[40])
{
    snprintf(out, 40, "%llu.%03llu us", (unsigned long long)(ns / 1000),
             (unsigned long long)(ns % 1000));
    return out;
}

/* ---- the fields of an event -------------------------------------------------------- */

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

/*
 * Read one value of an event field: strings into str (NULL: discard), numbers into num
 * (NULL: discard), anything else validated and discarded. Records the type and offset.
 */
static int read_field(struct parser *ps, struct field *f, struct trove__json_str *str,
                      struct trove__json_num *num, int depth)
{
    struct trove__json *js = &ps->js;
    int c = trove__json_peek(js);
    struct trove__json_num tmp;
    f->off = trove__json_pos(js);
    if (c == '"') {
        f->type = J_STRING;
        return trove__json_string(js, str);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        f->type = J_NUMBER;
        return trove__json_number(js, num ? num : &tmp);
    }
    f->type = J_OTHER;
    return trove__json_skip(js, depth);
}

/* The "args" object of an event (the next byte is '{'): only args.name is kept. */
static int read_args(struct parser *ps)
{
    struct trove__json *js = &ps->js;
    int c, rc;

    ps->ev.args_name.type = J_NONE;
    trove__json_take(js);
    c = trove__json_peek(js);
    if (c == '}') {
        trove__json_take(js);
        return TROVE_OK;
    }
    for (;;) {
        if ((rc = trove__json_key(js, &ps->key, "args")) != TROVE_OK)
            return rc;
        if (trove__json_key_is(&ps->key, "name"))
            rc = read_field(ps, &ps->ev.args_name, &ps->args_name, NULL, 3);
        else
            rc = trove__json_skip(js, 3);
        if (rc != TROVE_OK)
            return rc;
        if ((rc = trove__json_next_member(js, "args")) <= 0)
            return rc;
    }
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

/* Rebuild the names index at twice the size. */
static int names_rehash(struct parser *ps)
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
static int intern(struct parser *ps, const uint8_t *p, size_t len, uint32_t *id)
{
    uint32_t h = hash_bytes(p, len), j;
    int rc;

    if (!ps->nm_index || (uint64_t)(ps->nnm + 1) * 2 > (uint64_t)ps->nm_mask + 1) {
        if ((rc = names_rehash(ps)) != TROVE_OK)
            return rc;
    }
    for (j = h & ps->nm_mask; ps->nm_index[j]; j = (j + 1) & ps->nm_mask) {
        const struct iname *e = &ps->nm[ps->nm_index[j] - 1];
        if (e->hash == h && e->len == len && memcmp(ps->arena.ptr + e->off, p, len) == 0) {
            *id = ps->nm_index[j] - 1;
            return TROVE_OK;
        }
    }
    if (ps->nnm == ps->nm_cap) {
        uint32_t cap = ps->nm_cap ? ps->nm_cap * 2 : 256;
        struct iname *n = trove__realloc(ps->nm, cap * sizeof *n);
        if (!n)
            return TROVE_ERR_NOMEM;
        ps->nm = n;
        ps->nm_cap = cap;
    }
    if ((rc = trove_bytes_append(&ps->arena, p, len)) != TROVE_OK)
        return rc;
    ps->nm[ps->nnm] = (struct iname){ps->arena.len - len, (uint32_t)len, h, 0};
    ps->nm_index[j] = ++ps->nnm;
    *id = ps->nnm - 1;
    return TROVE_OK;
}

static int threads_rehash(struct parser *ps)
{
    int rc = grow_u32_index(&ps->thr_index, &ps->thr_mask);
    if (rc != TROVE_OK)
        return rc;
    for (uint32_t i = 0; i < ps->nthr; i++) {
        uint32_t j = hash_bytes((const uint8_t *)&ps->thr[i], 8) & ps->thr_mask;
        while (ps->thr_index[j])
            j = (j + 1) & ps->thr_mask;
        ps->thr_index[j] = i + 1;
    }
    return TROVE_OK;
}

/* The B/E state of thread (pid, tid); created when `create`, else NULL if absent. */
static int find_thread(struct parser *ps, uint32_t pid, uint32_t tid, int create,
                       struct bthread **out)
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
        struct bthread *t = &ps->thr[ps->thr_index[j] - 1];
        if (t->pid == pid && t->tid == tid) {
            *out = t;
            return TROVE_OK;
        }
    }
    if (!create)
        return TROVE_OK;
    if (ps->nthr == ps->thr_cap) {
        uint32_t cap = ps->thr_cap ? ps->thr_cap * 2 : 16;
        struct bthread *n = trove__realloc(ps->thr, cap * sizeof *n);
        if (!n)
            return TROVE_ERR_NOMEM;
        ps->thr = n;
        ps->thr_cap = cap;
    }
    ps->thr[ps->nthr] = (struct bthread){pid, tid, NULL, 0, 0};
    ps->thr_index[j] = ++ps->nthr;
    *out = &ps->thr[ps->nthr - 1];
    return TROVE_OK;
}

/* ---- names from outside ------------------------------------------------------------- */

static int name_too_long(struct parser *ps, const struct field *f, const char *what)
{
    return TROVE_FAIL(ps->diag, TROVE_ERR_LIMIT, f->off,
                      "%s is longer than %d bytes, the longest name trove stores", what,
                      TROVE_NAME_MAX);
}

/*
 * Make a decoded string valid UTF-8 (each byte that starts no valid sequence becomes
 * U+FFFD) and check its length. *out points into b or into ps->fix.
 */
static int clean_string(struct parser *ps, const struct trove__json_str *b, const struct field *f,
                        const char *what, const uint8_t **out, size_t *out_len)
{
    size_t i, k;
    int rc;

    if (b->over)
        return name_too_long(ps, f, what);
    i = trove__utf8_valid_prefix(b->ptr, b->len);
    if (i == b->len) {
        *out = b->ptr;
        *out_len = b->len;
        return TROVE_OK;
    }
    ps->fix.len = 0;
    if ((rc = trove_bytes_append(&ps->fix, b->ptr, i)) != TROVE_OK)
        return rc;
    while (i < b->len) {
        /* b->ptr[i] starts no valid sequence */
        if ((rc = trove_bytes_append(&ps->fix, "\xEF\xBF\xBD", 3)) != TROVE_OK)
            return rc;
        i++;
        k = trove__utf8_valid_prefix(b->ptr + i, b->len - i);
        if (k && (rc = trove_bytes_append(&ps->fix, b->ptr + i, k)) != TROVE_OK)
            return rc;
        i += k;
    }
    if (ps->fix.len > TROVE_NAME_MAX)
        return name_too_long(ps, f, what);
    *out = ps->fix.ptr;
    *out_len = ps->fix.len;
    return TROVE_OK;
}

/* ---- events ------------------------------------------------------------------------- */

static int trace_error(struct parser *ps, uint64_t off, const char *msg, const char *field)
{
    return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, off, msg, field);
}

/* A time field in ns. `required`: absence is an error; else absent means 0. */
static int get_time(struct parser *ps, const struct field *f, const struct trove__json_num *n,
                    const char *what, int required, uint64_t *out)
{
    int rc;
    *out = 0;
    if (f->type == J_NONE) {
        if (!required)
            return TROVE_OK;
        return trace_error(ps, ps->ev.off, "trace event has no \"%s\" field", what);
    }
    if (f->type != J_NUMBER)
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

static int get_id(struct parser *ps, const struct field *f, const struct trove__json_num *n,
                  const char *what, uint32_t *out)
{
    int rc;
    *out = 0;
    if (f->type == J_NONE)
        return TROVE_OK;
    if (f->type != J_NUMBER)
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

static int get_thread(struct parser *ps, uint32_t *pid, uint32_t *tid)
{
    int rc = get_id(ps, &ps->ev.pid, &ps->ev.pid_n, "pid", pid);
    if (rc == TROVE_OK)
        rc = get_id(ps, &ps->ev.tid, &ps->ev.tid_n, "tid", tid);
    return rc;
}

/* The event's name, interned; a missing name is the empty name unless `optional`, when it
 * is NO_NAME. */
static int get_name(struct parser *ps, int optional, uint32_t *id)
{
    const uint8_t *p;
    size_t len;
    int rc;

    *id = NO_NAME;
    if (ps->ev.name.type == J_NONE)
        return optional ? TROVE_OK : intern(ps, (const uint8_t *)"", 0, id);
    if (ps->ev.name.type != J_STRING)
        return trace_error(ps, ps->ev.name.off, "\"%s\" must be a string", "name");
    if ((rc = clean_string(ps, &ps->name, &ps->ev.name, "event name", &p, &len)) != TROVE_OK)
        return rc;
    return intern(ps, p, len, id);
}

static int check_count(struct parser *ps)
{
    if ((uint64_t)ps->nrec + ps->open_total >= MAX_EVENTS)
        return TROVE_FAIL(ps->diag, TROVE_ERR_LIMIT, ps->ev.off,
                          "more than %llu events; split the trace to import it",
                          (unsigned long long)MAX_EVENTS);
    return TROVE_OK;
}

static int push_rec(struct parser *ps, uint64_t start, uint64_t dur, uint32_t pid, uint32_t tid,
                    uint8_t kind, uint8_t extra, uint32_t name)
{
    int rc = check_count(ps);
    if (rc != TROVE_OK)
        return rc;
    if (ps->nrec == ps->rec_cap) {
        size_t cap = ps->rec_cap ? ps->rec_cap * 2 : 4096;
        struct rec *n = trove__realloc(ps->rec, cap * sizeof *n);
        if (!n)
            return TROVE_ERR_NOMEM;
        ps->rec = n;
        ps->rec_cap = cap;
    }
    ps->rec[ps->nrec] =
        (struct rec){start, dur, pid, tid, name, (uint32_t)ps->nrec, kind, extra, 0};
    ps->nrec++;
    ps->nm[name].count++;
    return TROVE_OK;
}

static int ev_complete(struct parser *ps)
{
    uint64_t ts, dur;
    uint32_t pid, tid, name;
    int rc;

    if ((rc = get_time(ps, &ps->ev.ts, &ps->ev.ts_n, "ts", 1, &ts)) != TROVE_OK ||
        (rc = get_time(ps, &ps->ev.dur, &ps->ev.dur_n, "dur", 0, &dur)) != TROVE_OK ||
        (rc = get_thread(ps, &pid, &tid)) != TROVE_OK)
        return rc;
    if (dur > UINT64_MAX - ts)
        return TROVE_FAIL(ps->diag, TROVE_ERR_LIMIT, ps->ev.dur.off,
                          "ts + dur does not fit in 64-bit nanoseconds");
    if ((rc = get_name(ps, 0, &name)) != TROVE_OK)
        return rc;
    ps->st.complete++;
    return push_rec(ps, ts, dur, pid, tid, TROVE_KIND_ZONE, 0, name);
}

static int ev_begin(struct parser *ps)
{
    struct bthread *t;
    uint64_t ts;
    uint32_t pid, tid, name;
    int rc;

    if ((rc = get_time(ps, &ps->ev.ts, &ps->ev.ts_n, "ts", 1, &ts)) != TROVE_OK ||
        (rc = get_thread(ps, &pid, &tid)) != TROVE_OK ||
        (rc = get_name(ps, 1, &name)) != TROVE_OK || (rc = check_count(ps)) != TROVE_OK ||
        (rc = find_thread(ps, pid, tid, 1, &t)) != TROVE_OK)
        return rc;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct open_b *n = trove__realloc(t->stk, cap * sizeof *n);
        if (!n)
            return TROVE_ERR_NOMEM;
        t->stk = n;
        t->cap = cap;
    }
    t->stk[t->n++] = (struct open_b){ts, ps->ev.off, name};
    ps->open_total++;
    return TROVE_OK;
}

static int ev_end(struct parser *ps)
{
    struct bthread *t;
    struct open_b b;
    uint64_t ts;
    uint32_t pid, tid, name;
    char nbuf[72], t1[40], t2[40];
    int rc;

    if ((rc = get_time(ps, &ps->ev.ts, &ps->ev.ts_n, "ts", 1, &ts)) != TROVE_OK ||
        (rc = get_thread(ps, &pid, &tid)) != TROVE_OK ||
        (rc = get_name(ps, 1, &name)) != TROVE_OK ||
        (rc = find_thread(ps, pid, tid, 0, &t)) != TROVE_OK)
        return rc;
    if (!t || t->n == 0) {
        if (ps->strict)
            return TROVE_FAIL(ps->diag, TROVE_ERR_UNMATCHED, ps->ev.off,
                              "E event \"%s\" on pid %u tid %u at ts %s has no open B "
                              "event on its thread",
                              show_name(ps, name, nbuf), pid, tid, show_us(ts, t1));
        ps->st.unmatched_end++;
        return TROVE_OK;
    }
    b = t->stk[t->n - 1];
    if (ts < b.ts)
        return TROVE_FAIL(ps->diag, TROVE_ERR_NEGATIVE, ps->ev.off,
                          "end before start: E at ts %s closes the B \"%s\" at ts %s (byte "
                          "%llu) on pid %u tid %u",
                          show_us(ts, t1),
                          show_name(ps, b.name != NO_NAME ? b.name : name, nbuf),
                          show_us(b.ts, t2), (unsigned long long)b.off, pid, tid);
    if (b.name != NO_NAME)
        name = b.name;
    else if (name == NO_NAME && (rc = intern(ps, (const uint8_t *)"", 0, &name)) != TROVE_OK)
        return rc;
    assert(ps->open_total > 0);
    t->n--;
    ps->open_total--;
    ps->st.begin_end_pairs++;
    return push_rec(ps, b.ts, ts - b.ts, pid, tid, TROVE_KIND_ZONE, 0, name);
}

static int ev_instant(struct parser *ps, uint8_t kind)
{
    uint64_t ts;
    uint32_t pid, tid, name;
    uint8_t scope = TROVE_SCOPE_THREAD;
    int rc;

    if ((rc = get_time(ps, &ps->ev.ts, &ps->ev.ts_n, "ts", 1, &ts)) != TROVE_OK ||
        (rc = get_thread(ps, &pid, &tid)) != TROVE_OK)
        return rc;
    if (kind == TROVE_KIND_INSTANT && ps->ev.s.type != J_NONE) {
        int c = ps->scope.len == 1 && !ps->scope.over ? ps->scope.ptr[0] : 0;
        if (ps->ev.s.type != J_STRING)
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
    ps->st.instants++;
    return push_rec(ps, ts, 0, pid, tid, kind, scope, name);
}

static int ev_metadata(struct parser *ps)
{
    const uint8_t *p;
    size_t len;
    uint32_t pid, tid;
    int type, rc;

    if (ps->ev.name.type == J_NONE) {
        ps->st.skipped++;
        return TROVE_OK;
    }
    if (ps->ev.name.type != J_STRING)
        return trace_error(ps, ps->ev.name.off, "\"%s\" must be a string", "name");
    if (!ps->name.over && ps->name.len == 11 && !memcmp(ps->name.ptr, "thread_name", 11))
        type = TROVE_NAME_THREAD;
    else if (!ps->name.over && ps->name.len == 12 && !memcmp(ps->name.ptr, "process_name", 12))
        type = TROVE_NAME_PROCESS;
    else {
        ps->st.skipped++;
        return TROVE_OK;
    }
    if (ps->ev.args_name.type == J_NONE) {
        ps->st.skipped++;
        return TROVE_OK;
    }
    if (ps->ev.args_name.type != J_STRING)
        return trace_error(ps, ps->ev.args_name.off, "\"%s\" of a metadata event must be a string",
                           "args.name");
    if ((rc = get_thread(ps, &pid, &tid)) != TROVE_OK ||
        (rc = clean_string(ps, &ps->args_name, &ps->ev.args_name,
                           type == TROVE_NAME_THREAD ? "thread name" : "process name", &p,
                           &len)) != TROVE_OK)
        return rc;
    if ((rc = trove_names_set(ps->tmp_names, type, pid, tid, (const char *)p, len)) != TROVE_OK)
        return rc;
    ps->st.metadata++;
    return TROVE_OK;
}

/* The value of the member whose key was just read: a field we use, or skipped. `c` is the
 * value's first byte. */
static int read_member(struct parser *ps, int c)
{
    struct evf *ev = &ps->ev;
    const struct trove__json_str *key = &ps->key;

    switch (key->over ? 0 : key->len) {
    case 1:
        if (key->ptr[0] == 's')
            return read_field(ps, &ev->s, &ps->scope, NULL, 2);
        break;
    case 2:
        if (trove__json_key_is(key, "ph"))
            return read_field(ps, &ev->ph, &ps->ph, NULL, 2);
        if (trove__json_key_is(key, "ts"))
            return read_field(ps, &ev->ts, NULL, &ev->ts_n, 2);
        break;
    case 3:
        if (trove__json_key_is(key, "pid"))
            return read_field(ps, &ev->pid, NULL, &ev->pid_n, 2);
        if (trove__json_key_is(key, "tid"))
            return read_field(ps, &ev->tid, NULL, &ev->tid_n, 2);
        if (trove__json_key_is(key, "dur"))
            return read_field(ps, &ev->dur, NULL, &ev->dur_n, 2);
        break;
    case 4:
        if (trove__json_key_is(key, "name"))
            return read_field(ps, &ev->name, &ps->name, NULL, 2);
        if (trove__json_key_is(key, "args") && c == '{')
            return read_args(ps);
        break;
    }
    return trove__json_skip(&ps->js, 2);
}

/* Read one event object and act on it. */
static int parse_event(struct parser *ps)
{
    struct trove__json *js = &ps->js;
    struct evf *ev = &ps->ev;
    int c = trove__json_peek(js), rc;

    if (c != '{') {
        if (c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' ||
            c == 'n')
            return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, trove__json_pos(js),
                              "trace event %llu is not a JSON object",
                              (unsigned long long)ps->st.trace_events + 1);
        return trove__json_unexpected(js, c, "a trace event object", "the event array");
    }
    ev->off = trove__json_pos(js);
    ev->ph.type = ev->name.type = ev->ts.type = ev->dur.type = J_NONE;
    ev->pid.type = ev->tid.type = ev->s.type = ev->args_name.type = J_NONE;
    trove__json_take(js);
    c = trove__json_peek(js);
    if (c == '}') {
        trove__json_take(js);
    } else {
        do {
            if ((rc = trove__json_key(js, &ps->key, "a trace event")) != TROVE_OK ||
                (rc = read_member(ps, trove__json_peek(js))) != TROVE_OK ||
                (rc = trove__json_next_member(js, "a trace event")) < 0)
                return rc;
        } while (rc);
    }

    ps->st.trace_events++;
    if (ev->ph.type == J_NONE)
        return trace_error(ps, ev->off, "trace event has no \"%s\" field", "ph");
    if (ev->ph.type != J_STRING)
        return trace_error(ps, ev->ph.off, "\"%s\" must be a string", "ph");
    if (ps->ph.len != 1 || ps->ph.over) {
        ps->st.skipped++;
        return TROVE_OK;
    }
    switch (ps->ph.ptr[0]) {
    case 'X': return ev_complete(ps);
    case 'B': return ev_begin(ps);
    case 'E': return ev_end(ps);
    case 'I':
    case 'i': return ev_instant(ps, TROVE_KIND_INSTANT);
    case 'n': return ev_instant(ps, TROVE_KIND_ASYNC_INSTANT);
    case 'M': return ev_metadata(ps);
    default: ps->st.skipped++; return TROVE_OK;
    }
}

/* The event array after its '['. `bare`: the document is this array, whose ']' (and a
 * trailing ',' before EOF) may be missing. */
static int parse_events(struct parser *ps, int bare)
{
    struct trove__json *js = &ps->js;
    int c = trove__json_peek(js), rc;

    if (c == ']') {
        trove__json_take(js);
        return TROVE_OK;
    }
    if (c < 0)
        return bare && !js->err ? TROVE_OK : trove__json_eof_error(js, "the event array");
    for (;;) {
        if ((rc = parse_event(ps)) != TROVE_OK)
            return rc;
        c = trove__json_peek(js);
        if (c == ',') {
            trove__json_take(js);
            c = trove__json_peek(js);
            if (c < 0 && bare && !js->err)
                return TROVE_OK;
            if (c == ']')
                return TROVE_FAIL(ps->diag, TROVE_ERR_JSON, trove__json_pos(js),
                                  "trailing ',' before ']' in the event array");
            continue;
        }
        if (c == ']') {
            trove__json_take(js);
            return TROVE_OK;
        }
        if (c < 0 && bare && !js->err)
            return TROVE_OK;
        return trove__json_unexpected(js, c, "',' or ']' after a trace event", "the event array");
    }
}

/* The members of the top-level object after its '{': "traceEvents" is read, others skipped. */
static int parse_top_object(struct parser *ps)
{
    struct trove__json *js = &ps->js;
    int c = trove__json_peek(js), rc, found = 0;

    if (c == '}')
        trove__json_take(js);
    while (c != '}') {
        if ((rc = trove__json_key(js, &ps->key, "the top-level object")) != TROVE_OK)
            return rc;
        if (trove__json_key_is(&ps->key, "traceEvents")) {
            c = trove__json_peek(js);
            if (c != '[') {
                if (c < 0)
                    return trove__json_eof_error(js, "the top-level object");
                return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, trove__json_pos(js),
                                  "\"traceEvents\" must be an array");
            }
            trove__json_take(js);
            if ((rc = parse_events(ps, 0)) != TROVE_OK)
                return rc;
            found = 1;
        } else if ((rc = trove__json_skip(js, 1)) != TROVE_OK) {
            return rc;
        }
        if ((rc = trove__json_next_member(js, "the top-level object")) < 0)
            return rc;
        if (rc == 0)
            break;
    }
    if (!found)
        return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, 0,
                          "the top-level object has no \"traceEvents\" array; is this a "
                          "Chrome trace?");
    return TROVE_OK;
}

static int parse_document(struct parser *ps)
{
    struct trove__json *js = &ps->js;
    int c = trove__json_peek_byte(js), rc;

    if (c == 0xEF) { /* UTF-8 byte order mark */
        static const uint8_t bom[3] = {0xEF, 0xBB, 0xBF};
        for (int i = 0; i < 3; i++) {
            if ((c = trove__json_peek_byte(js)) != bom[i])
                return trove__json_unexpected(js, c, "a UTF-8 byte order mark", "the document");
            trove__json_take(js);
        }
    }
    c = trove__json_peek(js);
    if (c == '[') {
        trove__json_take(js);
        rc = parse_events(ps, 1);
    } else if (c == '{') {
        trove__json_take(js);
        rc = parse_top_object(ps);
    } else if (c < 0) {
        if (js->err)
            return trove__json_eof_error(js, "the document");
        return TROVE_FAIL(ps->diag, TROVE_ERR_JSON, 0, "empty input: no JSON document");
    } else if (c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' ||
               c == 'n') {
        return TROVE_FAIL(ps->diag, TROVE_ERR_TRACE, trove__json_pos(js),
                          "a Chrome trace is an array of events or an object with "
                          "\"traceEvents\", not a scalar");
    } else {
        return trove__json_unexpected(js, c, "'[' or '{'", "the document");
    }
    if (rc != TROVE_OK)
        return rc;
    if (trove__json_peek(js) >= 0)
        return TROVE_FAIL(ps->diag, TROVE_ERR_JSON, trove__json_pos(js),
                          "unexpected data after the end of the trace");
    if (js->err)
        return trove__json_eof_error(js, "the document");
    return TROVE_OK;
}

/* ---- after parsing ------------------------------------------------------------------ */

/* Unclosed B events: an error when strict (naming the earliest), else counted. */
static int check_open(struct parser *ps)
{
    const struct bthread *worst = NULL;
    char nbuf[72], t1[40];

    for (uint32_t i = 0; i < ps->nthr; i++) {
        const struct bthread *t = &ps->thr[i];
        if (t->n == 0)
            continue;
        ps->st.unmatched_begin += t->n;
        if (!worst || t->stk[0].off < worst->stk[0].off)
            worst = t;
    }
    if (worst && ps->strict)
        return TROVE_FAIL(ps->diag, TROVE_ERR_UNMATCHED, worst->stk[0].off,
                          "B event \"%s\" on pid %u tid %u at ts %s is never closed by an E "
                          "(%llu B events are open at the end)",
                          show_name(ps, worst->stk[0].name, nbuf), worst->pid, worst->tid,
                          show_us(worst->stk[0].ts, t1),
                          (unsigned long long)ps->st.unmatched_begin);
    return TROVE_OK;
}

static int cmp_thread_order(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->dur != b->dur)
        return a->dur > b->dur ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cmp_output_order(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static void heap_pop(uint64_t *h, size_t *n)
{
    uint64_t v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
}

/*
 * Depth of every record: per thread, in (start, longer first, input order), the number of
 * earlier zones whose [start, end) contains this start, found with a min-heap of the end
 * times of zones not yet ended. Also counts the threads.
 */
static int compute_depth(struct parser *ps)
{
    uint64_t *heap;
    size_t hn = 0;

    if (ps->nrec == 0)
        return TROVE_OK;
    qsort(ps->rec, ps->nrec, sizeof *ps->rec, cmp_thread_order);
    heap = trove__malloc(ps->nrec * sizeof *heap);
    if (!heap)
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < ps->nrec; i++) {
        struct rec *r = &ps->rec[i];
        if (i == 0 || r->pid != r[-1].pid || r->tid != r[-1].tid) {
            hn = 0;
            ps->st.threads++;
        }
        while (hn && heap[0] <= r->start)
            heap_pop(heap, &hn);
        r->depth = hn > 255 ? 255 : (uint8_t)hn;
        if (r->dur)
            heap_push(heap, &hn, r->start + r->dur);
    }
    free(heap);
    qsort(ps->rec, ps->nrec, sizeof *ps->rec, cmp_output_order);
    return TROVE_OK;
}

struct name_order {
    uint32_t count, id;
};

static int cmp_name_order(const void *pa, const void *pb)
{
    const struct name_order *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Final ids by descending frequency; event names into tmp_names; map[provisional] = id. */
static int assign_names(struct parser *ps, uint32_t **map_out)
{
    struct name_order *ord = NULL;
    uint32_t *map = NULL, n = 0;
    int rc = TROVE_ERR_NOMEM;

    map = trove__malloc((ps->nnm ? ps->nnm : 1) * sizeof *map);
    ord = trove__malloc((ps->nnm ? ps->nnm : 1) * sizeof *ord);
    if (!map || !ord)
        goto out;
    for (uint32_t i = 0; i < ps->nnm; i++)
        if (ps->nm[i].count)
            ord[n++] = (struct name_order){ps->nm[i].count, i};
    qsort(ord, n, sizeof *ord, cmp_name_order);
    for (uint32_t i = 0; i < n; i++) {
        const struct iname *e = &ps->nm[ord[i].id];
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

/* Hand the result to the caller: reserve, then names, then events (which cannot fail). */
static int commit(struct parser *ps, struct trove_events *events, struct trove_names *names)
{
    uint32_t *map = NULL;
    int rc;

    TROVE_TRY(rc, compute_depth(ps));
    TROVE_TRY(rc, assign_names(ps, &map));
    if (events->cap - events->len < ps->nrec) {
        size_t cap = events->len + ps->nrec;
        struct trove_event *p;
        if (cap < events->len || cap > SIZE_MAX / sizeof *p) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        if (!(p = trove__realloc(events->ev, cap * sizeof *p))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        events->ev = p;
        events->cap = cap;
    }
    if (names)
        TROVE_TRY(rc, trove_names_merge(names, ps->tmp_names));
    for (size_t i = 0; i < ps->nrec; i++) {
        const struct rec *r = &ps->rec[i];
        events->ev[events->len + i] = (struct trove_event){
            r->start, r->dur, r->pid, r->tid, r->kind, r->depth, r->extra, 0, map[r->name]};
    }
    events->len += ps->nrec;
out:
    free(map);
    return rc;
}

static void parser_free(struct parser *ps)
{
    trove__json_free(&ps->js);
    free(ps->name.ptr);
    free(ps->args_name.ptr);
    trove_bytes_free(&ps->fix);
    free(ps->rec);
    trove_bytes_free(&ps->arena);
    free(ps->nm);
    free(ps->nm_index);
    for (uint32_t i = 0; i < ps->nthr; i++)
        free(ps->thr[i].stk);
    free(ps->thr);
    free(ps->thr_index);
    trove_names_free(ps->tmp_names);
}

/* The importer over the input ps->js was opened on (FILE or memory). */
static int run(struct parser *ps, const struct trove_chrome_options *opt,
               struct trove_events *events, struct trove_names *names,
               struct trove_chrome_stats *stats)
{
    int rc;

    ps->diag = ps->js.diag;
    ps->js.doc = "trace";
    ps->strict = opt && opt->strict;
    ps->key = (struct trove__json_str){ps->key_store, 0, KEY_CAP, 0};
    ps->ph = (struct trove__json_str){ps->ph_store, 0, SHORT_CAP, 0};
    ps->scope = (struct trove__json_str){ps->s_store, 0, SHORT_CAP, 0};
    ps->name = (struct trove__json_str){trove__malloc(TROVE_NAME_MAX), 0, TROVE_NAME_MAX, 0};
    ps->args_name = (struct trove__json_str){trove__malloc(TROVE_NAME_MAX), 0, TROVE_NAME_MAX, 0};
    if (!ps->name.ptr || !ps->args_name.ptr) {
        rc = TROVE_FAIL(ps->diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    /* the arena is never NULL, so that name offsets (even of "") always point into it */
    if ((rc = trove_bytes_reserve(&ps->arena, 4096)) != TROVE_OK ||
        (rc = trove_names_new(&ps->tmp_names)) != TROVE_OK) {
        TROVE_FAIL(ps->diag, rc, 0, "out of memory");
        goto out;
    }
    rc = parse_document(ps);
    if (rc == TROVE_OK)
        rc = check_open(ps);
    if (rc == TROVE_OK)
        rc = commit(ps, events, names);
    if (rc == TROVE_ERR_NOMEM) /* allocation sites return the code without a message */
        TROVE_FAIL(ps->diag, rc, trove__json_pos(&ps->js),
                   "out of memory after %zu events; the trace is too large for this machine",
                   ps->nrec);
out:
    ps->st.input_bytes = trove__json_pos(&ps->js);
    if (stats)
        *stats = ps->st;
    parser_free(ps);
    return rc;
}

/*
 * Internal: trove_chrome_import with a chosen read size, so that tests and the fuzzer can
 * put chunk boundaries inside every token. Not part of the public API.
 */
int trove__chrome_import_chunked(FILE *in, size_t chunk, const struct trove_chrome_options *opt,
                                 struct trove_events *events, struct trove_names *names,
                                 struct trove_chrome_stats *stats, struct trove_diag *diag)
{
    struct parser ps;

    if (!in || !events || chunk == 0) {
        if (stats)
            memset(stats, 0, sizeof *stats);
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no input stream or events array");
    }
    memset(&ps, 0, sizeof ps);
    if (trove__json_init_file(&ps.js, in, chunk,
                              opt && opt->max_input ? opt->max_input : INPUT_DEFAULT,
                              diag) != TROVE_OK) {
        if (stats)
            memset(stats, 0, sizeof *stats);
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    }
    if (opt) {
        ps.js.progress = opt->progress;
        ps.js.progress_ctx = opt->progress_ctx;
    }
    return run(&ps, opt, events, names, stats);
}

int trove_chrome_import(FILE *in, const struct trove_chrome_options *opt,
                        struct trove_events *events, struct trove_names *names,
                        struct trove_chrome_stats *stats, struct trove_diag *diag)
{
    return trove__chrome_import_chunked(in, CHUNK_DEFAULT, opt, events, names, stats, diag);
}

int trove_chrome_import_mem(const uint8_t *buf, size_t len, const struct trove_chrome_options *opt,
                            struct trove_events *events, struct trove_names *names,
                            struct trove_chrome_stats *stats, struct trove_diag *diag)
{
    struct parser ps;
    uint64_t limit = opt && opt->max_input ? opt->max_input : INPUT_DEFAULT;

    if (stats)
        memset(stats, 0, sizeof *stats);
    if ((!buf && len) || !events)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no input buffer or events array");
    if ((uint64_t)len > limit)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, limit,
                          "input is larger than max_input (%llu bytes); raise the limit to "
                          "import it",
                          (unsigned long long)limit);
    memset(&ps, 0, sizeof ps);
    trove__json_init_mem(&ps.js, buf, len, diag);
    return run(&ps, opt, events, names, stats);
}
