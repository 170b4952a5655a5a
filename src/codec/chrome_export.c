/*
 * chrome_export.c: a capture as Chrome trace JSON (trove_chrome_export, include/trove/trace.h;
 * docs/formats/chrome-json.md, "Export").
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
 * processes and threads, tracks included), then every event, flow and span end in the order of
 * trace_sched.c: by time, each begin before what it encloses and each e or F after what it
 * encloses, so that the importer, which matches an e to the innermost open b of its name on
 * its track, pairs them as they were. A thread zone is one X; an async span a b/e or S/F pair
 * carrying its track's id ("0x" and the hex of its synthetic tid's offset), a legacy step a
 * T. Times are ns / 1000 with the remainder as up to three decimals, which the importer turns
 * back into the same ns exactly; a counter's value is printed with the fewest significant
 * digits (15, 16 or 17) that strtod reads back as the same double. The output is built in a
 * trove_bytes a line at a time.
 */
#include "trace_sched.h"
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

static void put_name(struct out *o, const struct trove_trace *t, uint32_t id)
{
    size_t len = 0;
    const char *s = t->names ? trove_names_get(t->names, TROVE_NAME_EVENT, id, 0, &len) : NULL;
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
static void put_head(struct out *o, const struct trove_trace *t, char ph, uint32_t name,
                     uint32_t pid, uint32_t tid, uint64_t ts)
{
    putf(o, "{\"ph\":\"%c\",", ph);
    put_name(o, t, name);
    putf(o, ",\"pid\":%u,\"tid\":%u,\"ts\":", pid, tid);
    put_us(o, ts);
}

/* A counter's argument key: its track's name without the "NAME " the importer prefixed, or
 * "value" when the track has no such name. */
static void put_counter_key(struct out *o, const struct trove_trace *t,
                            const struct trove_event *e)
{
    size_t nl = 0, tl = 0;
    const char *n = t->names ? trove_names_get(t->names, TROVE_NAME_EVENT, e->name_id, 0, &nl)
                             : NULL;
    const char *tn = t->names ? trove_names_get(t->names, TROVE_NAME_THREAD, e->pid, e->tid, &tl)
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

/* The name of the legacy span a T belongs to: the last S begun on its track. */
struct legacy {
    uint32_t pid, tid, name;
};

static int event_line(struct out *o, const struct trove_trace *t, size_t i, int end,
                      struct legacy *leg, size_t *nleg, struct trove_diag *diag)
{
    const struct trove_event *e = &t->events[i];
    static const char scopes[] = {'t', 'p', 'g'};

    if (e->kind == TROVE_KIND_ZONE && e->extra == TROVE_ASYNC_NESTABLE) {
        put_head(o, t, end ? 'e' : 'b', e->name_id, e->pid, e->tid,
                 end ? e->start_ns + e->dur_ns : e->start_ns);
        putf(o, ",\"id2\":{\"local\":\"0x%x\"}}", track_id(e->tid));
    } else if (e->kind == TROVE_KIND_ZONE && e->extra == TROVE_ASYNC_LEGACY) {
        put_head(o, t, end ? 'F' : 'S', e->name_id, e->pid, e->tid,
                 end ? e->start_ns + e->dur_ns : e->start_ns);
        putf(o, ",\"id\":\"0x%x\"}", track_id(e->tid));
        if (!end) {
            size_t k = 0;
            while (k < *nleg && (leg[k].pid != e->pid || leg[k].tid != e->tid))
                k++;
            leg[k] = (struct legacy){e->pid, e->tid, e->name_id};
            if (k == *nleg)
                (*nleg)++;
        }
    } else if (e->kind == TROVE_KIND_ZONE && e->extra == TROVE_ASYNC_STEP) {
        uint32_t parent = e->name_id;
        for (size_t k = 0; k < *nleg; k++)
            if (leg[k].pid == e->pid && leg[k].tid == e->tid)
                parent = leg[k].name;
        put_head(o, t, 'T', parent, e->pid, e->tid, e->start_ns);
        putf(o, ",\"id\":\"0x%x\",\"args\":{\"step\":", track_id(e->tid));
        {
            size_t len = 0;
            const char *s =
                t->names ? trove_names_get(t->names, TROVE_NAME_EVENT, e->name_id, 0, &len) : NULL;
            put_string(o, s ? s : "", s ? len : 0);
        }
        puts_(o, "}}");
    } else if (e->kind == TROVE_KIND_INSTANT) {
        put_head(o, t, 'i', e->name_id, e->pid, e->tid, e->start_ns);
        putf(o, ",\"s\":\"%c\"}", e->extra < 3 ? scopes[e->extra] : 't');
    } else if (e->kind == TROVE_KIND_ASYNC_INSTANT) {
        put_head(o, t, 'n', e->name_id, e->pid, e->tid, e->start_ns);
        if (trove_tid_is_synthetic(e->tid))
            putf(o, ",\"id2\":{\"local\":\"0x%x\"}", track_id(e->tid));
        puts_(o, "}");
    } else if (e->kind == TROVE_KIND_COUNTER) {
        double v = trove_counter_value(e);
        if (!isfinite(v))
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, i,
                              "event %zu: a counter whose value is not a finite number; JSON "
                              "cannot hold it",
                              i);
        puts_(o, "{\"ph\":\"C\",");
        put_name(o, t, e->name_id);
        putf(o, ",\"pid\":%u,\"ts\":", e->pid);
        put_us(o, e->start_ns);
        puts_(o, ",\"args\":{");
        put_counter_key(o, t, e);
        puts_(o, ":");
        put_double(o, v);
        puts_(o, "}}");
    } else if (e->kind == TROVE_KIND_ZONE || e->kind == TROVE_KIND_FRAME ||
               e->kind == TROVE_KIND_LOCK || e->dur_ns > 0) {
        put_head(o, t, 'X', e->name_id, e->pid, e->tid, e->start_ns);
        puts_(o, ",\"dur\":");
        put_us(o, e->dur_ns);
        if (e->kind == TROVE_KIND_FRAME)
            puts_(o, ",\"cat\":\"trove.frame\"");
        else if (e->kind == TROVE_KIND_LOCK)
            puts_(o, ",\"cat\":\"trove.lock\"");
        puts_(o, "}");
    } else { /* a kind this build does not know, without a duration: an instant */
        put_head(o, t, 'i', e->name_id, e->pid, e->tid, e->start_ns);
        puts_(o, ",\"s\":\"t\"}");
    }
    return TROVE_OK;
}

static void flow_line(struct out *o, const struct trove_trace *t, const struct trove_flow *f)
{
    static const char phases[] = {'s', 't', 'f'};
    put_head(o, t, f->phase < 3 ? phases[f->phase] : 't', f->name_id, f->pid, f->tid, f->ts_ns);
    putf(o, ",\"id\":%llu", (unsigned long long)f->id);
    if (f->phase == TROVE_FLOW_END && (f->flags & TROVE_FLOW_ENCLOSING))
        puts_(o, ",\"bp\":\"e\"");
    puts_(o, "}");
}

int trove_chrome_export(const struct trove_trace *t, struct trove_bytes *out,
                        struct trove_diag *diag)
{
    struct out o = {out, TROVE_OK};
    struct trove__titem *it = NULL;
    struct legacy *leg = NULL;
    uint8_t *paired = NULL;
    size_t nit = 0, nleg = 0, lines = 0, nn, start;
    int rc;

    if (!t || !out || (!t->events && t->n_events) || (!t->flows && t->n_flows))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "chrome export needs a trace and an output");
    start = out->len;
    if (!(paired = trove__calloc(t->n_events ? t->n_events : 1, 1)) ||
        !(leg = trove__malloc((t->n_events ? t->n_events : 1) * sizeof *leg))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < t->n_events; i++) {
        const struct trove_event *e = &t->events[i];
        paired[i] = e->kind == TROVE_KIND_ZONE &&
                    (e->extra == TROVE_ASYNC_NESTABLE || e->extra == TROVE_ASYNC_LEGACY);
    }
    TROVE_TRY(rc, trove__tsched_build(t, paired, &it, &nit));

    puts_(&o, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    nn = t->names ? trove_names_count(t->names) : 0;
    for (size_t i = 0; i < nn; i++) {
        struct trove_name_entry e;
        trove_names_entry(t->names, i, &e);
        if (e.type == TROVE_NAME_EVENT ||
            (e.type == TROVE_NAME_THREAD && trove_tid_is_synthetic(e.b)))
            continue;
        puts_(&o, lines++ ? ",\n" : "\n");
        if (trove_name_type_is_sort(e.type)) {
            /* a track's sort index too: the importer gives its track the same tid again */
            putf(&o,
                 "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,"
                 "\"args\":{\"sort_index\":%d}}",
                 e.type == TROVE_NAME_THREAD_SORT ? "thread_sort_index" : "process_sort_index",
                 e.a, e.b, (int)e.sort_index);
            continue;
        }
        putf(&o, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":",
             e.type == TROVE_NAME_THREAD ? "thread_name" : "process_name", e.a, e.b);
        put_string(&o, e.str, e.len);
        puts_(&o, "}}");
    }
    for (size_t k = 0; k < nit; k++) {
        puts_(&o, lines++ ? ",\n" : "\n");
        if (it[k].what == TROVE__TS_FLOW)
            flow_line(&o, t, &t->flows[it[k].i]);
        else
            TROVE_TRY(rc, event_line(&o, t, it[k].i, it[k].what == TROVE__TS_END, leg, &nleg,
                                     diag));
        if (o.rc != TROVE_OK) {
            rc = o.rc;
            goto out;
        }
    }
    puts_(&o, "\n]}\n");
    rc = o.rc;
out:
    if (rc != TROVE_OK)
        out->len = start; /* what was there stays; the bytes past it are not the output's */
    if (rc == TROVE_ERR_NOMEM)
        TROVE_FAIL(diag, rc, 0, "out of memory writing %zu events as Chrome JSON", t->n_events);
    free(it);
    free(leg);
    free(paired);
    return rc;
}
