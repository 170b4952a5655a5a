/*
 * chrome_export.c: a capture as Chrome trace JSON, one line at a time (trace_emit.h; the
 * streaming writer, trace_writer.c, drives it; docs/formats/chrome-json.md, "Export").
 *
 *   {"displayTimeUnit":"ns","traceEvents":[
 *   {"ph":"M","name":"process_name","pid":P,"tid":0,"args":{"name":"..."}},
 *   {"ph":"M","name":"thread_sort_index","pid":P,"tid":T,"args":{"sort_index":-1}},
 *   {"ph":"X","name":"...","pid":P,"tid":T,"ts":1.5,"dur":2},
 *   ...
 *   ]}
 *
 * Metadata first, in the names table's order (process and thread names, but not those of
 * async tracks and counter series, which the importer names itself; the sort indexes of
 * processes and threads, tracks included), then every event, flow and span end in the order
 * of trace_sched.c: by time, each begin before what it encloses and each e or F after what
 * it encloses, so that the importer, which matches an e to the innermost open b of its name
 * on its track, pairs them as they were. A thread zone is one X; an async span a b/e or S/F
 * pair carrying its track's id ("0x" and the hex of its synthetic tid's offset), a legacy
 * step a T. Times are ns / 1000 with the remainder as up to three decimals, which the
 * importer turns back into the same ns exactly; a counter's value is printed with the fewest
 * significant digits (15, 16 or 17) that strtod reads back as the same double. Each line is
 * built in the output buffer, which goes to the sink every 64 KiB; what is kept between
 * lines is the name of the last legacy span begun on each track that had one (a T is
 * written with it).
 */
#include "trace_depth.h"
#include "trace_emit.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/utf8.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct out {
    struct trove_bytes *b;
    int rc;                   /* sticky: the first allocation failure */
};

/* The name of the legacy span a T belongs to: the last S begun on its track. */
struct legacy {
    uint32_t pid, tid, name;
    uint64_t seq;             /* the S's event, whose category its T steps write */
};

struct trove__cj {
    const struct trove_names *names;
    struct trove__tdepth *depth;    /* the importer's depths, predicted */
    const struct trove_flow *flows; /* the flow rows, and the one name of each row's flow */
    uint32_t *flow_name;
    struct legacy *leg;       /* a track's at most once */
    size_t nleg, cap;
    uint64_t lines;
    const struct trove_attrs *attrs, *meta; /* may be NULL */
    size_t next_row;          /* where the rows of the next event are looked for from */
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->rc == TROVE_OK && n)
        o->rc = trove_bytes_append(o->b, s, n);
}

static void puts_(struct out *o, const char *s) { put(o, s, strlen(s)); }

static void putf(struct out *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void putf(struct out *o, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A JSON string: control bytes, '"' and '\\' escaped, invalid UTF-8 as U+FFFD. */
static void put_string(struct out *o, const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0;
    put(o, "\"", 1);
    while (i < n) {
        size_t end = i + trove__utf8_valid_prefix(p + i, n - i), run = i;
        for (size_t j = i; j < end; j++) {
            uint8_t c = p[j];
            if (c >= 0x20 && c != '"' && c != '\\')
                continue;
            put(o, (const char *)p + run, j - run);
            if (c == '"' || c == '\\') {
                char esc[2] = {'\\', (char)c};
                put(o, esc, 2);
            } else {
                putf(o, "\\u%04x", c);
            }
            run = j + 1;
        }
        put(o, (const char *)p + run, end - run);
        i = end;
        if (i < n) { /* p[i] starts no valid sequence */
            put(o, "\xEF\xBF\xBD", 3);
            i++;
        }
    }
    put(o, "\"", 1);
}

/* ns as microseconds: "12", "12.5", "12.345". */
static void put_us(struct out *o, uint64_t ns)
{
    unsigned frac = (unsigned)(ns % 1000);
    if (frac == 0)
        putf(o, "%llu", (unsigned long long)(ns / 1000));
    else if (frac % 100 == 0)
        putf(o, "%llu.%u", (unsigned long long)(ns / 1000), frac / 100);
    else if (frac % 10 == 0)
        putf(o, "%llu.%02u", (unsigned long long)(ns / 1000), frac / 10);
    else
        putf(o, "%llu.%03u", (unsigned long long)(ns / 1000), frac);
}

/* The shortest of %.15g, %.16g, %.17g that reads back as v. */
static void put_double(struct out *o, double v)
{
    char tmp[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v || prec == 17)
            break;
    }
    if (v == 0 && signbit(v))
        snprintf(tmp, sizeof tmp, "-0");
    puts_(o, tmp);
}

static void put_name(struct out *o, const struct trove_names *names, uint32_t id)
{
    size_t len = 0;
    const char *s = names ? trove_names_get(names, TROVE_NAME_EVENT, id, 0, &len) : NULL;
    puts_(o, "\"name\":");
    put_string(o, s ? s : "", s ? len : 0);
}

/* The id of a synthetic track: its tid's offset in the synthetic range (the tid itself for
 * another track). */
static uint32_t track_id(uint32_t tid)
{
    return trove_tid_is_synthetic(tid) ? tid - TROVE_TID_SYNTHETIC : tid;
}

/* `{"ph":"X",` and the fields every event has: name, pid, tid, ts. */
static void put_head(struct out *o, const struct trove_names *names, char ph, uint32_t name,
                     uint32_t pid, uint32_t tid, uint64_t ts)
{
    putf(o, "{\"ph\":\"%c\",", ph);
    put_name(o, names, name);
    putf(o, ",\"pid\":%u,\"tid\":%u,\"ts\":", pid, tid);
    put_us(o, ts);
}

/* A counter's argument key: its track's name without the "NAME " the importer prefixed, or
 * "value" when the track has no such name. */
static void put_counter_key(struct out *o, const struct trove_names *names,
                            const struct trove__tsrec *e)
{
    size_t nl = 0, tl = 0;
    const char *n = names ? trove_names_get(names, TROVE_NAME_EVENT, e->name_id, 0, &nl) : NULL;
    const char *tn = names ? trove_names_get(names, TROVE_NAME_THREAD, e->pid, e->tid, &tl)
                           : NULL;
    if (!n) {
        n = "";
        nl = 0;
    }
    if (tn && tl > nl + 1 && !memcmp(tn, n, nl) && tn[nl] == ' ')
        put_string(o, tn + nl + 1, tl - nl - 1);
    else
        put_string(o, "value", 5);
}

/* A row's value as JSON: a double JSON cannot hold (NaN, an infinity) as null. */
static void put_value(struct out *o, const struct trove_attrs *a, const struct trove_attr *r)
{
    size_t len = 0;
    const char *v;
    switch (r->type) {
    case TROVE_ATTR_INT:
        putf(o, "%lld", (long long)r->v.i);
        break;
    case TROVE_ATTR_DOUBLE:
        if (isfinite(r->v.d))
            put_double(o, r->v.d);
        else
            puts_(o, "null");
        break;
    case TROVE_ATTR_BOOL:
        puts_(o, r->v.b ? "true" : "false");
        break;
    case TROVE_ATTR_STRING:
        v = trove_attrs_string(a, r->v.s, &len);
        put_string(o, v ? v : "", v ? len : 0);
        break;
    default: /* JSON text */
        v = trove_attrs_string(a, r->v.s, &len);
        if (v && len)
            put(o, v, len);
        else
            puts_(o, "null");
        break;
    }
}

static void put_member(struct out *o, const struct trove_attrs *a, const struct trove_attr *r)
{
    size_t len = 0;
    const char *k = trove_attrs_string(a, r->key, &len);
    puts_(o, ",");
    put_string(o, k ? k : "", k ? len : 0);
    puts_(o, ":");
    put_value(o, a, r);
}

/* The rows of event seq: its FIELD rows as members of the line (but "cat" when the line has
 * one of trove's), its ARG rows as "args" (with_args). Events come in any order, so the rows
 * are found by a binary search, from where the last event's ended when it is the next. */
static void put_rows(struct out *o, struct trove__cj *c, uint64_t seq, int with_args, int has_cat)
{
    const struct trove_attrs *a = c->attrs;
    size_t lo, hi, first;
    int nargs = 0;

    if (!a || a->n == 0)
        return;
    lo = c->next_row < a->n && a->rows[c->next_row].event >= seq &&
                 (c->next_row == 0 || a->rows[c->next_row - 1].event < seq)
             ? c->next_row
             : 0;
    if (lo == 0)
        lo = trove_attrs_find(a, seq);
    first = lo;
    for (hi = lo; hi < a->n && a->rows[hi].event == seq; hi++) {
        const struct trove_attr *r = &a->rows[hi];
        if (r->scope == TROVE_ATTR_ARG) {
            nargs++;
            continue;
        }
        if (has_cat && r->scope == TROVE_ATTR_FIELD) {
            size_t len = 0;
            const char *k = trove_attrs_string(a, r->key, &len);
            if (len == 3 && !memcmp(k, "cat", 3))
                continue;
        }
        put_member(o, a, r);
    }
    c->next_row = hi;
    if (!with_args || !nargs)
        return;
    puts_(o, ",\"args\":{");
    for (size_t i = first, k = 0; i < hi; i++) {
        if (a->rows[i].scope != TROVE_ATTR_ARG)
            continue;
        if (k++) {
            put_member(o, a, &a->rows[i]);
        } else { /* the first without its comma */
            size_t len = 0;
            const char *key = trove_attrs_string(a, a->rows[i].key, &len);
            put_string(o, key ? key : "", key ? len : 0);
            puts_(o, ":");
            put_value(o, a, &a->rows[i]);
        }
    }
    puts_(o, "}");
}

/* The category (the last FIELD row "cat") of event seq, as a member: an async span's end and
 * a legacy step carry their span's, which the importer keys the span's track by. */
static void put_cat(struct out *o, const struct trove__cj *c, uint64_t seq)
{
    const struct trove_attrs *a = c->attrs;
    const struct trove_attr *cat = NULL;
    size_t lo = trove_attrs_find(a, seq);

    for (; a && lo < a->n && a->rows[lo].event == seq; lo++) {
        size_t len = 0;
        const char *k = trove_attrs_string(a, a->rows[lo].key, &len);
        if (a->rows[lo].scope == TROVE_ATTR_FIELD && len == 3 && !memcmp(k, "cat", 3))
            cat = &a->rows[lo];
    }
    if (cat)
        put_member(o, a, cat);
}

/* Note name as the last legacy span begun on (pid, tid). */
static int legacy_begun(struct trove__cj *c, uint32_t pid, uint32_t tid, uint32_t name,
                        uint64_t seq)
{
    size_t k = 0;
    while (k < c->nleg && (c->leg[k].pid != pid || c->leg[k].tid != tid))
        k++;
    if (k == c->nleg) {
        if (c->nleg == c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 16;
            struct legacy *p = trove__realloc(c->leg, cap * sizeof *p);
            if (!p)
                return TROVE_ERR_NOMEM;
            c->leg = p;
            c->cap = cap;
        }
        c->nleg++;
    }
    c->leg[k] = (struct legacy){pid, tid, name, seq};
    return TROVE_OK;
}

/* The "trove" member: what the importer would not make of the line by itself — the kind
 * and extra when they are not those of the phase, the depth when it is not the one the
 * geometry gives (trace_depth.h). Nothing when all three come back as they are. */
static void put_trove(struct out *o, const struct trove__tsrec *e, uint8_t kind, uint8_t extra,
                      int depth_known, uint8_t depth)
{
    const char *sep = ",\"trove\":{";
    if (e->kind != kind) {
        putf(o, "%s\"kind\":%u", sep, e->kind);
        sep = ",";
    }
    if (e->extra != extra) {
        putf(o, "%s\"extra\":%u", sep, e->extra);
        sep = ",";
    }
    if (depth_known && e->depth != depth) {
        putf(o, "%s\"depth\":%u", sep, (unsigned)e->depth);
        sep = ",";
    }
    if (sep[0] == ',' && sep[1] == 0)
        puts_(o, "}");
}

/* The line of event e (its begin, or with end its end); depth: what the importer would give
 * it, to be written where it is not the event's own. */
static void event_line(struct out *o, struct trove__cj *c, const struct trove__tsrec *e, int end,
                       uint8_t depth)
{
    static const char scopes[] = {'t', 'p', 'g'};
    const struct trove_names *names = c->names;

    if (trove__cj_async(e->kind, e->extra, e->tid) && e->extra == TROVE_ASYNC_NESTABLE) {
        put_head(o, names, end ? 'e' : 'b', e->name_id, e->pid, e->tid,
                 end ? e->start_ns + e->dur_ns : e->start_ns);
        putf(o, ",\"id2\":{\"local\":\"0x%x\"}", track_id(e->tid));
        if (!end)
            put_rows(o, c, e->seq, 1, 0);
        else
            put_cat(o, c, e->seq);
    } else if (trove__cj_async(e->kind, e->extra, e->tid) && e->extra == TROVE_ASYNC_LEGACY) {
        put_head(o, names, end ? 'F' : 'S', e->name_id, e->pid, e->tid,
                 end ? e->start_ns + e->dur_ns : e->start_ns);
        putf(o, ",\"id\":\"0x%x\"", track_id(e->tid));
        if (!end)
            put_rows(o, c, e->seq, 1, 0);
        else
            put_cat(o, c, e->seq);
        if (!end && o->rc == TROVE_OK)
            o->rc = legacy_begun(c, e->pid, e->tid, e->name_id, e->seq);
    } else if (trove__cj_async(e->kind, e->extra, e->tid)) { /* a step */
        uint32_t parent = e->name_id;
        uint64_t span = UINT64_MAX;
        for (size_t k = 0; k < c->nleg; k++)
            if (c->leg[k].pid == e->pid && c->leg[k].tid == e->tid) {
                parent = c->leg[k].name;
                span = c->leg[k].seq;
            }
        put_head(o, names, 'T', parent, e->pid, e->tid, e->start_ns);
        putf(o, ",\"id\":\"0x%x\",\"args\":{\"step\":", track_id(e->tid));
        {
            size_t len = 0;
            const char *s =
                names ? trove_names_get(names, TROVE_NAME_EVENT, e->name_id, 0, &len) : NULL;
            put_string(o, s ? s : "", s ? len : 0);
        }
        puts_(o, "}");
        if (span != UINT64_MAX)
            put_cat(o, c, span);
        put_rows(o, c, e->seq, 0, 1);
    } else if (e->kind == TROVE_KIND_INSTANT) {
        put_head(o, names, 'i', e->name_id, e->pid, e->tid, e->start_ns);
        putf(o, ",\"s\":\"%c\"", e->extra < 3 ? scopes[e->extra] : 't');
        put_trove(o, e, TROVE_KIND_INSTANT, e->extra < 3 ? e->extra : 0, 1, depth);
        put_rows(o, c, e->seq, 1, 0);
    } else if (e->kind == TROVE_KIND_ASYNC_INSTANT) {
        put_head(o, names, 'n', e->name_id, e->pid, e->tid, e->start_ns);
        if (trove_tid_is_synthetic(e->tid))
            putf(o, ",\"id2\":{\"local\":\"0x%x\"}", track_id(e->tid));
        put_trove(o, e, TROVE_KIND_ASYNC_INSTANT, 0, !trove_tid_is_synthetic(e->tid), depth);
        put_rows(o, c, e->seq, 1, 0);
    } else if (e->kind == TROVE_KIND_COUNTER) {
        double v;
        memcpy(&v, &e->dur_ns, sizeof v);
        puts_(o, "{\"ph\":\"C\",");
        put_name(o, names, e->name_id);
        putf(o, ",\"pid\":%u,\"ts\":", e->pid);
        put_us(o, e->start_ns);
        puts_(o, ",\"args\":{");
        put_counter_key(o, names, e);
        puts_(o, ":");
        put_double(o, v);
        puts_(o, "}");
        put_rows(o, c, e->seq, 0, 0);
    } else if (e->kind == TROVE_KIND_ZONE || e->kind == TROVE_KIND_FRAME ||
               e->kind == TROVE_KIND_LOCK || e->dur_ns > 0) {
        put_head(o, names, 'X', e->name_id, e->pid, e->tid, e->start_ns);
        puts_(o, ",\"dur\":");
        put_us(o, e->dur_ns);
        if (e->kind == TROVE_KIND_FRAME)
            puts_(o, ",\"cat\":\"trove.frame\"");
        else if (e->kind == TROVE_KIND_LOCK)
            puts_(o, ",\"cat\":\"trove.lock\"");
        put_trove(o, e, TROVE_KIND_ZONE, 0, 1, depth);
        put_rows(o, c, e->seq, 1,
                 e->kind == TROVE_KIND_FRAME || e->kind == TROVE_KIND_LOCK);
    } else { /* a kind this build does not know, without a duration: an instant */
        put_head(o, names, 'i', e->name_id, e->pid, e->tid, e->start_ns);
        puts_(o, ",\"s\":\"t\"");
        put_trove(o, e, TROVE_KIND_INSTANT, 0, 1, depth);
        put_rows(o, c, e->seq, 1, 0);
    }
    puts_(o, "}");
}

static void flow_line(struct out *o, const struct trove_names *names, const struct trove_flow *f,
                      uint32_t name)
{
    static const char phases[] = {'s', 't', 'f'};
    put_head(o, names, f->phase < 3 ? phases[f->phase] : 't', name, f->pid, f->tid, f->ts_ns);
    putf(o, ",\"id\":%llu", (unsigned long long)f->id);
    if (f->phase == TROVE_FLOW_END && (f->flags & TROVE_FLOW_ENCLOSING))
        puts_(o, ",\"bp\":\"e\"");
    puts_(o, "}");
}

int trove__cj_new(const struct trove_names *names, const struct trove_flow *flows,
                  size_t nflows, struct trove__cj **out)
{
    struct trove__cj *c = trove__calloc(1, sizeof *c);
    if (!c || trove__tdepth_new(&c->depth) != TROVE_OK ||
        (nflows && !(c->flow_name = trove__malloc(nflows * sizeof *c->flow_name))) ||
        trove_flows_one_name(flows, nflows, c->flow_name) != TROVE_OK) {
        trove__cj_free(c);
        *out = NULL;
        return TROVE_ERR_NOMEM;
    }
    c->names = names;
    c->flows = flows;
    *out = c;
    return TROVE_OK;
}

void trove__cj_attrs(struct trove__cj *c, const struct trove_attrs *attrs,
                     const struct trove_attrs *meta)
{
    c->attrs = attrs;
    c->meta = meta;
    c->next_row = 0;
}

void trove__cj_free(struct trove__cj *c)
{
    if (!c)
        return;
    free(c->leg);
    free(c->flow_name);
    trove__tdepth_free(c->depth);
    free(c);
}

/* The line separator, then the line; the buffer goes out when it is full enough. */
static void line_start(struct out *o, struct trove__cj *c)
{
    puts_(o, c->lines++ ? ",\n" : "\n");
}

static int line_end(struct out *o, struct trove__tout *t)
{
    return o->rc != TROVE_OK ? o->rc : trove__tout_flush(t, TROVE__TOUT_CHUNK);
}

int trove__cj_begin(struct trove__cj *c, struct trove__tout *t)
{
    struct out o = {&t->buf, TROVE_OK};
    size_t nn = c->names ? trove_names_count(c->names) : 0;
    int rc;

    {   /* the trace's own members; its displayTimeUnit, else trove's */
        const struct trove_attr *unit = NULL;
        for (size_t i = 0; c->meta && i < c->meta->n; i++) {
            size_t len = 0;
            const char *k = trove_attrs_string(c->meta, c->meta->rows[i].key, &len);
            if (len == 15 && !memcmp(k, "displayTimeUnit", 15))
                unit = &c->meta->rows[i];
        }
        puts_(&o, "{\"displayTimeUnit\":");
        if (unit)
            put_value(&o, c->meta, unit);
        else
            puts_(&o, "\"ns\"");
        for (size_t i = 0; c->meta && i < c->meta->n; i++)
            if (&c->meta->rows[i] != unit)
                put_member(&o, c->meta, &c->meta->rows[i]);
        puts_(&o, ",\"traceEvents\":[");
    }
    for (size_t i = 0; i < nn; i++) {
        struct trove_name_entry e;
        trove_names_entry(c->names, i, &e);
        if (e.type == TROVE_NAME_EVENT ||
            (e.type == TROVE_NAME_THREAD && trove_tid_is_synthetic(e.b)))
            continue;
        line_start(&o, c);
        if (trove_name_type_is_sort(e.type)) {
            /* a track's sort index too: the importer gives its track the same tid again */
            putf(&o,
                 "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,"
                 "\"args\":{\"sort_index\":%d}}",
                 e.type == TROVE_NAME_THREAD_SORT ? "thread_sort_index" : "process_sort_index",
                 e.a, e.b, (int)e.sort_index);
        } else {
            putf(&o, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":",
                 e.type == TROVE_NAME_THREAD ? "thread_name" : "process_name", e.a, e.b);
            put_string(&o, e.str, e.len);
            puts_(&o, "}}");
        }
        if ((rc = line_end(&o, t)) != TROVE_OK)
            return rc;
    }
    return o.rc;
}

int trove__cj_event(struct trove__cj *c, const struct trove__tsrec *r, int end,
                    struct trove__tout *t, struct trove_diag *diag)
{
    struct out o = {&t->buf, TROVE_OK};
    uint8_t depth = 0;
    if (r->kind == TROVE_KIND_COUNTER) {
        double v;
        memcpy(&v, &r->dur_ns, sizeof v);
        if (!isfinite(v))
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, r->seq,
                              "event %llu: a counter whose value is not a finite number; JSON "
                              "cannot hold it",
                              (unsigned long long)r->seq);
    }
    if (!end) { /* what the importer will count at its start: the zones it makes */
        uint64_t span = r->kind == TROVE_KIND_COUNTER ? 0 : r->dur_ns;
        int rc = trove__tdepth_next(c->depth, r->pid, r->tid, r->start_ns, span, &depth);
        if (rc != TROVE_OK)
            return rc;
    }
    line_start(&o, c);
    event_line(&o, c, r, end, depth);
    return line_end(&o, t);
}

int trove__cj_flow(struct trove__cj *c, const struct trove_flow *f, struct trove__tout *t)
{
    struct out o = {&t->buf, TROVE_OK};
    line_start(&o, c);
    flow_line(&o, c->names, f, c->flow_name[f - c->flows]);
    return line_end(&o, t);
}

int trove__cj_end(struct trove__cj *c, struct trove__tout *t)
{
    struct out o = {&t->buf, TROVE_OK};
    (void)c;
    puts_(&o, "\n]}\n");
    return o.rc;
}
