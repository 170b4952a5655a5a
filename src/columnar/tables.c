/*
 * tables.c: a capture's events and names as the Parquet tables of a bundle, and back
 * (include/trove/tables.h, docs/formats/bundle.md). The names table of the capture is spread
 * over three tables by what its entries hold: event names (names), thread and process names
 * (threads), and the sort indexes of processes and threads (sort_indexes, one row an entry
 * with the entry's type, so that it reads back to the same entries).
 *
 * The events table is written from the events with no column arrays of its own (fetch_events
 * fills a row group's scratch), either from all of them at once (trove_tables_write) or in
 * pieces, straight to a sink (trove_tables_events_*), for an export that never holds the
 * capture: the pieces are row groups of the same size, so the file is the same.
 */
#include "trove/tables.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/utf8.h"

#include "trove/parquet.h"
#include "trove/profile.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { ENC_TIME, ENC_ID, ENC_OTHER }; /* what a column is, for the mode's encoding */

struct col {
    const char *name;
    int type;
    int bits;
    int role;
    int is_signed; /* integers: INTEGER(bits, true), values in the signed range */
};

#define U8(n) {n, TROVE_PQ_INT32, 8, ENC_OTHER, 0}
#define U32(n) {n, TROVE_PQ_INT32, 32, ENC_OTHER, 0}
#define I32(n) {n, TROVE_PQ_INT32, 32, ENC_OTHER, 1}
#define STR(n) {n, TROVE_PQ_STRING, 0, ENC_OTHER, 0}

static const struct col events_cols[] = {
    {"start_ns", TROVE_PQ_INT64, 64, ENC_TIME, 0}, {"dur_ns", TROVE_PQ_INT64, 64, ENC_TIME, 0},
    U32("pid"), U32("tid"), U8("kind"), U8("depth"), U8("extra"), U32("name_id"),
};
static const struct col names_cols[] = {{"name_id", TROVE_PQ_INT32, 32, ENC_ID, 0}, STR("name")};
static const struct col threads_cols[] = {U32("pid"), U32("tid"), STR("thread_name"),
                                          STR("process_name")};
static const struct col samples_cols[] = {
    {"time_ns", TROVE_PQ_INT64, 64, ENC_TIME, 0}, U32("pid"), U32("tid"), U32("stack_id")};
static const struct col frames_cols[] = {
    {"frame_id", TROVE_PQ_INT32, 32, ENC_ID, 0}, STR("module"), STR("function"), STR("file"),
    U32("line"), {"address", TROVE_PQ_INT64, 64, ENC_OTHER, 0}, U32("inline_depth")};
static const struct col stacks_cols[] = {{"stack_id", TROVE_PQ_INT32, 32, ENC_ID, 0},
                                         U32("parent_id"), U32("frame_id")};
static const struct col switches_cols[] = {
    {"time_ns", TROVE_PQ_INT64, 64, ENC_TIME, 0}, U32("pid"), U32("tid"), U8("out"), U8("preempt")};
static const struct col flows_cols[] = {
    {"ts_ns", TROVE_PQ_INT64, 64, ENC_TIME, 0}, {"flow_id", TROVE_PQ_INT64, 64, ENC_ID, 0},
    U32("pid"), U32("tid"), U32("name_id"), U8("phase"), U8("flags")};
static const struct col sort_cols[] = {U8("type"), U32("pid"), U32("tid"), I32("sort_index")};
/* tables_args.c writes and reads it: here for its name and an empty table */
static const struct col args_cols[] = {
    {"event", TROVE_PQ_INT64, 64, ENC_ID, 0}, STR("scope"), STR("key"), STR("type"), STR("value")};

static const struct table_def {
    const char *name;
    const struct col *cols;
    size_t ncols;
} tables[TROVE_TABLE_COUNT_] = {
    {"events", events_cols, sizeof events_cols / sizeof events_cols[0]},
    {"names", names_cols, sizeof names_cols / sizeof names_cols[0]},
    {"threads", threads_cols, sizeof threads_cols / sizeof threads_cols[0]},
    {"samples", samples_cols, sizeof samples_cols / sizeof samples_cols[0]},
    {"frames", frames_cols, sizeof frames_cols / sizeof frames_cols[0]},
    {"flows", flows_cols, sizeof flows_cols / sizeof flows_cols[0]},
    {"sort_indexes", sort_cols, sizeof sort_cols / sizeof sort_cols[0]},
    {"stacks", stacks_cols, sizeof stacks_cols / sizeof stacks_cols[0]},
    {"switches", switches_cols, sizeof switches_cols / sizeof switches_cols[0]},
    {"args", args_cols, sizeof args_cols / sizeof args_cols[0]},
};

#define MAX_COLS 8

void trove_tables_defaults(struct trove_tables_options *o)
{
    o->mode = TROVE_TABLES_DELTA_DICT;
    o->codec = TROVE_PQ_CODEC_ZSTD;
    o->row_group_rows = 0;
}

const char *trove_table_name(int table)
{
    return table >= 0 && table < TROVE_TABLE_COUNT_ ? tables[table].name : NULL;
}

static int encoding_for(const struct col *c, int mode)
{
    if (mode == TROVE_TABLES_PLAIN)
        return TROVE_PQ_ENC_PLAIN;
    if (mode == TROVE_TABLES_DELTA_DICT && c->role != ENC_OTHER)
        return TROVE_PQ_ENC_DELTA;
    return TROVE_PQ_ENC_DICT;
}

/* Column arrays for one table's rows: integers widened, strings as pointer and length. */
struct cols {
    size_t n;
    int64_t *i64[MAX_COLS];
    int32_t *i32[MAX_COLS];
    const char **str[MAX_COLS];
    uint32_t *len[MAX_COLS];
};

static void cols_free(struct cols *c)
{
    for (size_t k = 0; k < MAX_COLS; k++) {
        free(c->i64[k]);
        free(c->i32[k]);
        free((void *)c->str[k]);
        free(c->len[k]);
    }
    memset(c, 0, sizeof *c);
}

static int cols_alloc(struct cols *c, const struct table_def *t, size_t n)
{
    size_t m = n ? n : 1;
    memset(c, 0, sizeof *c);
    c->n = n;
    for (size_t k = 0; k < t->ncols; k++) {
        int ok = 1;
        if (t->cols[k].type == TROVE_PQ_INT64)
            ok = (c->i64[k] = trove__malloc(m * sizeof(int64_t))) != NULL;
        else if (t->cols[k].type == TROVE_PQ_INT32)
            ok = (c->i32[k] = trove__malloc(m * sizeof(int32_t))) != NULL;
        else
            ok = (c->str[k] = trove__malloc(m * sizeof(char *))) != NULL &&
                 (c->len[k] = trove__malloc(m * sizeof(uint32_t))) != NULL;
        if (!ok) {
            cols_free(c);
            return TROVE_ERR_NOMEM;
        }
    }
    return TROVE_OK;
}

static void set_u32(struct cols *c, size_t k, size_t row, uint32_t v)
{
    c->i32[k][row] = (int32_t)v;
}

static void set_str(struct cols *c, size_t k, size_t row, const char *s, size_t len)
{
    c->str[k][row] = s;
    c->len[k][row] = (uint32_t)len;
}

/* The events table goes to the writer straight from the events, through one scratch array
 * of 24 bytes a row of a row group: the two 64-bit columns are filled in one pass over the
 * events (when the writer asks for the first), then the same memory takes the six 32-bit
 * columns in a second pass. Two passes over the events, and a scratch smaller than whole
 * column arrays (less memory to fault in, each time). */
struct ev_fetch {
    const struct trove_event *ev;
    void *buf;
    size_t cap; /* rows buf has room for */
};

/* Room in x->buf for the scratch of row groups of up to n rows. */
static int ev_fetch_reserve(struct ev_fetch *x, size_t n)
{
    void *p;

    if (n <= x->cap)
        return TROVE_OK;
    if (n > SIZE_MAX / 24 || !(p = trove__malloc(n * 24)))
        return TROVE_ERR_NOMEM;
    free(x->buf);
    x->buf = p;
    x->cap = n;
    return TROVE_OK;
}

static int fetch_events(void *ctx, size_t col, uint64_t from, size_t n,
                        struct trove_pq_column_data *out)
{
    struct ev_fetch *x = ctx;
    const struct trove_event *e = x->ev + from;
    int64_t *i64 = x->buf;
    int32_t *i32 = x->buf;

    if (col == 0) {
        for (size_t i = 0; i < n; i++) {
            i64[i] = (int64_t)e[i].start_ns;
            i64[n + i] = (int64_t)e[i].dur_ns;
        }
    } else if (col == 2) {
        for (size_t i = 0; i < n; i++) {
            i32[i] = (int32_t)e[i].pid;
            i32[n + i] = (int32_t)e[i].tid;
            i32[2 * n + i] = e[i].kind;
            i32[3 * n + i] = e[i].depth;
            i32[4 * n + i] = e[i].extra;
            i32[5 * n + i] = (int32_t)e[i].name_id;
        }
    } else if (col > 7) {
        return TROVE_ERR_INVALID;
    }
    if (col < 2)
        out->i64 = i64 + col * n;
    else
        out->i32 = i32 + (col - 2) * n;
    return TROVE_OK;
}

static size_t count_type(const struct trove_names *names, int type)
{
    size_t n = 0, total = names ? trove_names_count(names) : 0;
    for (size_t i = 0; i < total; i++) {
        struct trove_name_entry e;
        trove_names_entry(names, i, &e);
        n += e.type == type;
    }
    return n;
}

static int fill_names(struct cols *c, const struct trove_names *names)
{
    size_t total = names ? trove_names_count(names) : 0, row = 0;
    int rc = cols_alloc(c, &tables[TROVE_TABLE_NAMES], count_type(names, TROVE_NAME_EVENT));
    if (rc != TROVE_OK)
        return rc;
    for (size_t i = 0; i < total; i++) {
        struct trove_name_entry e;
        trove_names_entry(names, i, &e);
        if (e.type != TROVE_NAME_EVENT)
            continue;
        set_u32(c, 0, row, e.a);
        set_str(c, 1, row, e.str, e.len);
        row++;
    }
    return TROVE_OK;
}

/* Does some thread name have this pid? */
static int pid_has_thread(const struct trove_names *names, uint32_t pid)
{
    size_t total = trove_names_count(names);
    for (size_t i = 0; i < total; i++) {
        struct trove_name_entry e;
        trove_names_entry(names, i, &e);
        if (e.type == TROVE_NAME_THREAD && e.a == pid)
            return 1;
    }
    return 0;
}

static int fill_threads(struct cols *c, const struct trove_names *names)
{
    size_t total = names ? trove_names_count(names) : 0, n = 0, row = 0;
    int rc;

    /* Rows: every thread name, then every process name no thread row carries. */
    for (size_t i = 0; i < total; i++) {
        struct trove_name_entry e;
        trove_names_entry(names, i, &e);
        n += e.type == TROVE_NAME_THREAD ||
             (e.type == TROVE_NAME_PROCESS && !pid_has_thread(names, e.a));
    }
    if ((rc = cols_alloc(c, &tables[TROVE_TABLE_THREADS], n)) != TROVE_OK)
        return rc;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < total; i++) {
            struct trove_name_entry e;
            const char *proc;
            size_t plen = 0;
            trove_names_entry(names, i, &e);
            if (pass == 0 && e.type == TROVE_NAME_THREAD) {
                proc = trove_names_get(names, TROVE_NAME_PROCESS, e.a, 0, &plen);
                set_u32(c, 0, row, e.a);
                set_u32(c, 1, row, e.b);
                set_str(c, 2, row, e.str, e.len);
                set_str(c, 3, row, proc ? proc : "", proc ? plen : 0);
                row++;
            } else if (pass == 1 && e.type == TROVE_NAME_PROCESS && !pid_has_thread(names, e.a)) {
                set_u32(c, 0, row, e.a);
                set_u32(c, 1, row, 0);
                set_str(c, 2, row, "", 0);
                set_str(c, 3, row, e.str, e.len);
                row++;
            }
        }
    }
    return TROVE_OK;
}

/* One row per sort index entry, in the names table's order: its type (4 process, 5
 * thread), pid, tid (0 for a process) and value. */
static int fill_sort(struct cols *c, const struct trove_names *names)
{
    size_t total = names ? trove_names_count(names) : 0, row = 0;
    int rc = cols_alloc(c, &tables[TROVE_TABLE_SORT_INDEXES],
                        count_type(names, TROVE_NAME_PROCESS_SORT) +
                            count_type(names, TROVE_NAME_THREAD_SORT));
    if (rc != TROVE_OK)
        return rc;
    for (size_t i = 0; i < total; i++) {
        struct trove_name_entry e;
        trove_names_entry(names, i, &e);
        if (!trove_name_type_is_sort(e.type))
            continue;
        set_u32(c, 0, row, e.type);
        set_u32(c, 1, row, e.a);
        set_u32(c, 2, row, e.b);
        c->i32[3][row] = e.sort_index;
        row++;
    }
    return TROVE_OK;
}

static int fill_flows(struct cols *c, const struct trove_flow *rows, size_t n)
{
    int rc = cols_alloc(c, &tables[TROVE_TABLE_FLOWS], n);
    if (rc != TROVE_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        c->i64[0][i] = (int64_t)rows[i].ts_ns;
        c->i64[1][i] = (int64_t)rows[i].id;
        set_u32(c, 2, i, rows[i].pid);
        set_u32(c, 3, i, rows[i].tid);
        set_u32(c, 4, i, rows[i].name_id);
        set_u32(c, 5, i, rows[i].phase);
        set_u32(c, 6, i, rows[i].flags);
    }
    return TROVE_OK;
}

/* One of the profile's tables from p (NULL: no rows). The strings point into p. */
static int fill_profile(struct cols *c, int table, const struct trove_profile *p)
{
    struct trove_profile_counts n;
    int rc;

    trove_profile_get_counts(p, &n); /* zeros for NULL */
    switch (table) {
    case TROVE_TABLE_SAMPLES: {
        const struct trove_profile_sample *sm = trove_profile_samples(p);
        if ((rc = cols_alloc(c, &tables[table], n.samples)) != TROVE_OK)
            return rc;
        for (size_t i = 0; i < n.samples; i++) {
            c->i64[0][i] = (int64_t)sm[i].time_ns;
            set_u32(c, 1, i, sm[i].pid);
            set_u32(c, 2, i, sm[i].tid);
            set_u32(c, 3, i, sm[i].stack);
        }
        return TROVE_OK;
    }
    case TROVE_TABLE_FRAMES:
        if ((rc = cols_alloc(c, &tables[table], n.frames)) != TROVE_OK)
            return rc;
        for (size_t i = 0; i < n.frames; i++) {
            const struct trove_profile_frame *f = trove_profile_frame_get(p, (uint32_t)i);
            uint32_t ids[3] = {f->module, f->function, f->file};
            set_u32(c, 0, i, (uint32_t)i);
            for (size_t k = 0; k < 3; k++) {
                size_t len = 0;
                const char *str = trove_profile_string_get(p, ids[k], &len);
                set_str(c, 1 + k, i, str, len);
            }
            set_u32(c, 4, i, f->line);
            c->i64[5][i] = (int64_t)f->address;
            set_u32(c, 6, i, f->inline_depth);
        }
        return TROVE_OK;
    case TROVE_TABLE_STACKS:
        if ((rc = cols_alloc(c, &tables[table], n.stacks)) != TROVE_OK)
            return rc;
        for (size_t i = 0; i < n.stacks; i++) {
            const struct trove_profile_stack *st = trove_profile_stack_get(p, (uint32_t)i + 1);
            set_u32(c, 0, i, (uint32_t)i + 1);
            set_u32(c, 1, i, st->parent);
            set_u32(c, 2, i, st->frame);
        }
        return TROVE_OK;
    default: { /* switches */
        const struct trove_profile_switch *sw = trove_profile_switches(p);
        if ((rc = cols_alloc(c, &tables[table], n.switches)) != TROVE_OK)
            return rc;
        for (size_t i = 0; i < n.switches; i++) {
            c->i64[0][i] = (int64_t)sw[i].time_ns;
            set_u32(c, 1, i, sw[i].pid);
            set_u32(c, 2, i, sw[i].tid);
            set_u32(c, 3, i, (sw[i].flags & TROVE_PROFILE_SWITCH_OUT) != 0);
            set_u32(c, 4, i, (sw[i].flags & TROVE_PROFILE_SWITCH_PREEMPT) != 0);
        }
        return TROVE_OK;
    }
    }
}

/* A Parquet writer for table t under the options' mode, codec and row groups. */
static int new_writer(const struct table_def *t, const struct trove_tables_options *o,
                      struct trove_pq_writer **out)
{
    struct trove_pq_column_def defs[MAX_COLS];

    assert(t->ncols <= MAX_COLS);
    for (size_t k = 0; k < t->ncols; k++) {
        defs[k].name = t->cols[k].name;
        defs[k].type = t->cols[k].type;
        defs[k].bits = t->cols[k].bits;
        defs[k].is_unsigned = t->cols[k].type != TROVE_PQ_STRING && !t->cols[k].is_signed;
        defs[k].encoding = encoding_for(&t->cols[k], o->mode);
    }
    return trove_pq_writer_new(defs, t->ncols, o->codec, o->row_group_rows, out);
}

static int write_table(int table, const struct trove_events *ev, const struct trove_names *names,
                       const struct trove_flow *flows, size_t nflows,
                       const struct trove_profile *profile,
                       const struct trove_tables_options *o, struct trove_bytes *out,
                       uint64_t *rows_out)
{
    struct trove_pq_column_data data[MAX_COLS];
    struct trove_tables_options dflt;
    struct trove_pq_writer *w = NULL;
    struct ev_fetch fetch = {0};
    struct cols c;
    const struct table_def *t;
    int rc;

    memset(&c, 0, sizeof c);
    if (table < 0 || table >= TROVE_TABLE_COUNT_ || !out)
        return TROVE_ERR_INVALID;
    if (!o) {
        trove_tables_defaults(&dflt);
        o = &dflt;
    }
    t = &tables[table];
    switch (table) {
    case TROVE_TABLE_EVENTS:
        rc = cols_alloc(&c, t, 0);
        c.n = ev ? ev->len : 0;
        if (rc == TROVE_OK && c.n > 0) {
            uint64_t rg = o->row_group_rows ? o->row_group_rows : TROVE_PQ_DEFAULT_ROW_GROUP;
            rc = ev_fetch_reserve(&fetch, c.n < rg ? c.n : (size_t)rg);
            fetch.ev = ev->ev;
        }
        break;
    case TROVE_TABLE_NAMES:
        rc = fill_names(&c, names);
        break;
    case TROVE_TABLE_THREADS:
        rc = fill_threads(&c, names);
        break;
    case TROVE_TABLE_FLOWS:
        rc = fill_flows(&c, flows, nflows);
        break;
    case TROVE_TABLE_SORT_INDEXES:
        rc = fill_sort(&c, names);
        break;
    case TROVE_TABLE_SAMPLES:
    case TROVE_TABLE_FRAMES:
    case TROVE_TABLE_STACKS:
    case TROVE_TABLE_SWITCHES:
        rc = fill_profile(&c, table, profile);
        break;
    default:
        rc = cols_alloc(&c, t, 0);
        break;
    }
    if (rc != TROVE_OK)
        goto out;
    for (size_t k = 0; k < t->ncols; k++) {
        data[k].i64 = c.i64[k];
        data[k].i32 = c.i32[k];
        data[k].str = c.str[k];
        data[k].str_len = c.len[k];
    }
    if ((rc = new_writer(t, o, &w)) != TROVE_OK)
        goto out;
    if (c.n > 0 && table == TROVE_TABLE_EVENTS &&
        (rc = trove_pq_writer_add_fetch(w, c.n, fetch_events, &fetch)) != TROVE_OK)
        goto out;
    if (c.n > 0 && table != TROVE_TABLE_EVENTS &&
        (rc = trove_pq_writer_add_groups(w, data, c.n)) != TROVE_OK)
        goto out;
    if ((rc = trove_pq_writer_finish(w, out)) != TROVE_OK)
        goto out;
    if (rows_out)
        *rows_out = c.n;
out:
    trove_pq_writer_free(w);
    free(fetch.buf);
    cols_free(&c);
    return rc;
}

int trove_tables_write(int table, const struct trove_events *ev, const struct trove_names *names,
                       const struct trove_tables_options *o, struct trove_bytes *out,
                       uint64_t *rows_out)
{
    return write_table(table, ev, names, NULL, 0, NULL, o, out, rows_out);
}

int trove_tables_write_flows(const struct trove_flow *rows, size_t n,
                             const struct trove_tables_options *o, struct trove_bytes *out,
                             uint64_t *rows_out)
{
    if (!rows && n > 0)
        return TROVE_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        if (trove_flow_check(&rows[i]) != TROVE_OK)
            return TROVE_ERR_INVALID;
    return write_table(TROVE_TABLE_FLOWS, NULL, NULL, rows, n, NULL, o, out, rows_out);
}

/* ---- the events table in pieces ---------------------------------------------------- */

struct trove_tables_events {
    struct trove_pq_writer *w;
    struct ev_fetch fetch;
    uint64_t rg;   /* rows per row group */
    uint64_t rows; /* added so far */
    int broken;    /* an add failed: only free is left */
};

int trove_tables_events_begin(const struct trove_tables_options *o, const struct trove_sink *sink,
                              struct trove_tables_events **out)
{
    struct trove_tables_options dflt;
    struct trove_tables_events *t = NULL;
    int rc;

    if (!out || !sink || !sink->write)
        return TROVE_ERR_INVALID;
    if (!o) {
        trove_tables_defaults(&dflt);
        o = &dflt;
    }
    if (!(t = trove__calloc(1, sizeof *t)))
        return TROVE_ERR_NOMEM;
    t->rg = o->row_group_rows ? o->row_group_rows : TROVE_PQ_DEFAULT_ROW_GROUP;
    if ((rc = new_writer(&tables[TROVE_TABLE_EVENTS], o, &t->w)) != TROVE_OK ||
        (rc = trove_pq_writer_set_sink(t->w, sink)) != TROVE_OK) {
        trove_tables_events_free(t);
        return rc;
    }
    *out = t;
    return TROVE_OK;
}

int trove_tables_events_add(struct trove_tables_events *t, const struct trove_event *ev, size_t n)
{
    int rc;

    if (!t || t->broken || (n && !ev))
        return TROVE_ERR_INVALID;
    if (n == 0)
        return TROVE_OK;
    /* The scratch of this call's largest row group (the writer checks the row limit). */
    if ((rc = ev_fetch_reserve(&t->fetch, n < t->rg ? n : (size_t)t->rg)) == TROVE_OK) {
        t->fetch.ev = ev;
        rc = trove_pq_writer_add_fetch(t->w, n, fetch_events, &t->fetch);
        t->fetch.ev = NULL;
    }
    if (rc != TROVE_OK) {
        t->broken = 1;
        return rc;
    }
    t->rows += n;
    return TROVE_OK;
}

int trove_tables_events_finish(struct trove_tables_events *t, uint64_t *rows_out,
                               uint64_t *bytes_out)
{
    int rc;

    if (!t || t->broken)
        return TROVE_ERR_INVALID;
    t->broken = 1; /* finished, or failed: no more rows either way */
    if ((rc = trove_pq_writer_finish(t->w, NULL)) != TROVE_OK)
        return rc;
    if (rows_out)
        *rows_out = t->rows;
    if (bytes_out)
        *bytes_out = trove_pq_writer_bytes(t->w);
    return TROVE_OK;
}

void trove_tables_events_free(struct trove_tables_events *t)
{
    if (!t)
        return;
    trove_pq_writer_free(t->w);
    free(t->fetch.buf);
    free(t);
}

/* ---- reading ------------------------------------------------------------------------- */

/* Find column k of table t in f: its index in *i_out. */
static int find_col(struct trove_pq_file *f, const struct table_def *t, size_t k, int *i_out,
                    struct trove_diag *diag)
{
    const struct col *c = &t->cols[k];
    int i = trove_pq_find(f, c->name), type;

    if (i < 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "table %s has no column %s", t->name,
                          c->name);
    type = trove_pq_column_type(f, (size_t)i);
    if (type == TROVE_PQ_OTHER)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "table %s: column %s is of a type trove does not read, not %s",
                          t->name, c->name,
                          c->type == TROVE_PQ_STRING ? "a string" : "an integer");
    if ((c->type == TROVE_PQ_STRING) != (type == TROVE_PQ_STRING))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "table %s: column %s is %s, not %s", t->name, c->name,
                          type == TROVE_PQ_STRING ? "a string" : "an integer",
                          c->type == TROVE_PQ_STRING ? "a string" : "an integer");
    *i_out = i;
    return TROVE_OK;
}

/* Check rows [row0, row0 + n) of integer column k of table t (values vals[0..n)) against
 * its width. */
static int check_range(const struct table_def *t, size_t k, const int64_t *vals, uint64_t row0,
                       size_t n, struct trove_diag *diag)
{
    const struct col *c = &t->cols[k];
    uint64_t max = c->bits >= 64 ? UINT64_MAX : (1ull << c->bits) - 1, hi = 0;

    if (c->bits >= 64)
        return TROVE_OK;
    if (c->is_signed) {
        int64_t lo = -((int64_t)1 << (c->bits - 1)), top = ((int64_t)1 << (c->bits - 1)) - 1;
        for (size_t r = 0; r < n; r++)
            if (vals[r] < lo || vals[r] > top)
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                                  "table %s: column %s row %" PRIu64 " holds %" PRId64
                                  ", outside its %d signed bits",
                                  t->name, c->name, row0 + r, vals[r], c->bits);
        return TROVE_OK;
    }
    for (size_t r = 0; r < n; r++) /* vectorizes; the slow search only on failure */
        hi |= (uint64_t)vals[r] & ~max;
    for (size_t r = 0; hi != 0 && r < n; r++)
        if ((uint64_t)vals[r] > max)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                              "table %s: column %s row %" PRIu64 " holds %" PRId64
                              ", outside its %d bits",
                              t->name, c->name, row0 + r, vals[r], c->bits);
    return TROVE_OK;
}

/* Find column k of table t in f and read it (integers into vals, strings into s). */
/* Every value of string column k (rows of them) is UTF-8, or the error names the row. */
static int strings_utf8(const struct table_def *t, size_t k, const struct trove_pq_strings *s,
                        uint64_t rows, struct trove_diag *diag)
{
    for (uint64_t r = 0; r < rows; r++) {
        size_t n = (size_t)(s->off[r + 1] - s->off[r]);
        if (n && trove__utf8_valid_prefix(s->bytes + s->off[r], n) != n)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                              "table %s: column %s row %" PRIu64 " is not valid UTF-8", t->name,
                              t->cols[k].name, r);
    }
    return TROVE_OK;
}

static int read_col(struct trove_pq_file *f, const struct table_def *t, size_t k, int64_t *vals,
                    struct trove_pq_strings *s, struct trove_diag *diag)
{
    const struct col *c = &t->cols[k];
    int i = 0, rc;

    if ((rc = find_col(f, t, k, &i, diag)) != TROVE_OK)
        return rc;
    if (c->type == TROVE_PQ_STRING) {
        if ((rc = trove_pq_read_strings(f, (size_t)i, s, diag)) != TROVE_OK)
            return rc;
        for (uint64_t r = 0; r < s->n; r++)
            if (s->off[r + 1] - s->off[r] > TROVE_NAME_MAX)
                return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                                  "table %s: column %s row %" PRIu64
                                  " is %" PRIu64 " bytes, over the %u a name may have",
                                  t->name, c->name, r, s->off[r + 1] - s->off[r],
                                  TROVE_NAME_MAX);
        return TROVE_OK;
    }
    if ((rc = trove_pq_read_int(f, (size_t)i, vals, diag)) != TROVE_OK)
        return rc;
    return check_range(t, k, vals, 0, (size_t)trove_pq_rows(f), diag);
}

/* The events table: a cursor per column, the events built a run of rows at a time as the
 * columns' pages come, so that no column is held whole. The events go to ev's spare room;
 * ev->len moves only on success. */
static int read_events(struct trove_pq_file *f, struct trove_events *ev, struct trove_diag *diag)
{
    const struct table_def *t = &tables[TROVE_TABLE_EVENTS];
    struct trove_pq_cursor *cur[MAX_COLS] = {0};
    uint64_t rows = trove_pq_rows(f);
    struct trove_event *e;
    int rc;

    /* The widths the loop below checks. */
    assert(t->ncols == 8 && t->cols[2].bits == 32 && t->cols[3].bits == 32 &&
           t->cols[4].bits == 8 && t->cols[5].bits == 8 && t->cols[6].bits == 8 &&
           t->cols[7].bits == 32);
    if ((rc = trove_events_reserve(ev, (size_t)rows)) != TROVE_OK)
        goto out;
    for (size_t k = 0; k < t->ncols; k++) {
        int i = 0;
        if ((rc = find_col(f, t, k, &i, diag)) != TROVE_OK ||
            (rc = trove_pq_cursor_new(f, (size_t)i, &cur[k], diag)) != TROVE_OK)
            goto out;
    }
    e = ev->ev + ev->len;
    for (uint64_t r = 0; r < rows;) {
        const int64_t *v[MAX_COLS];
        size_t m = rows - r < SIZE_MAX ? (size_t)(rows - r) : SIZE_MAX;
        for (size_t k = 0; k < t->ncols; k++) {
            size_t got = 0;
            if ((rc = trove_pq_cursor_peek(cur[k], &v[k], &got, diag)) != TROVE_OK)
                goto out;
            if (got == 0) {
                rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                                "table %s: column %s ends at row %" PRIu64 " of %" PRIu64,
                                t->name, t->cols[k].name, r, rows);
                goto out;
            }
            m = got < m ? got : m;
        }
        {
            /* The events, and the bits past each narrow column's width in one pass; the
             * rows at fault are searched for only when some are set. */
            const int64_t *v0 = v[0], *v1 = v[1], *v2 = v[2], *v3 = v[3], *v4 = v[4];
            const int64_t *v5 = v[5], *v6 = v[6], *v7 = v[7];
            uint64_t h32 = 0, h8 = 0, any;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            /* The event as four 64-bit words (struct trove_event's layout, little-endian):
             * whole-word stores, no byte stores to merge. */
            for (size_t i = 0; i < m; i++, e++) {
                uint8_t *p = (uint8_t *)e;
                const uint64_t w2 = (uint64_t)(uint32_t)v2[i] | (uint64_t)v3[i] << 32;
                const uint64_t w3 = ((uint64_t)v4[i] & 0xFF) | ((uint64_t)v5[i] & 0xFF) << 8 |
                                    ((uint64_t)v6[i] & 0xFF) << 16 | (uint64_t)v7[i] << 32;
                memcpy(p, &v0[i], 8);
                memcpy(p + 8, &v1[i], 8);
                memcpy(p + 16, &w2, 8);
                memcpy(p + 24, &w3, 8);
                h32 |= (uint64_t)v2[i] | (uint64_t)v3[i] | (uint64_t)v7[i];
                h8 |= (uint64_t)v4[i] | (uint64_t)v5[i] | (uint64_t)v6[i];
            }
#else
            for (size_t i = 0; i < m; i++, e++) {
                e->start_ns = (uint64_t)v0[i];
                e->dur_ns = (uint64_t)v1[i];
                e->pid = (uint32_t)v2[i];
                e->tid = (uint32_t)v3[i];
                e->kind = (uint8_t)v4[i];
                e->depth = (uint8_t)v5[i];
                e->extra = (uint8_t)v6[i];
                e->pad = 0;
                e->name_id = (uint32_t)v7[i];
                h32 |= (uint64_t)v2[i] | (uint64_t)v3[i] | (uint64_t)v7[i];
                h8 |= (uint64_t)v4[i] | (uint64_t)v5[i] | (uint64_t)v6[i];
            }
#endif
            any = (h32 >> 32) | (h8 >> 8);
            for (size_t k = 0; any && k < t->ncols; k++)
                if ((rc = check_range(t, k, v[k], r, m, diag)) != TROVE_OK)
                    goto out;
        }
        for (size_t k = 0; k < t->ncols; k++)
            trove_pq_cursor_advance(cur[k], m);
        r += m;
    }
    ev->len += (size_t)rows;
    rc = TROVE_OK;
out:
    for (size_t k = 0; k < MAX_COLS; k++)
        trove_pq_cursor_free(cur[k]);
    return rc;
}

int trove_tables_read(int table, const uint8_t *buf, size_t len, struct trove_events *ev,
                      struct trove_names *names, struct trove_diag *diag)
{
    struct trove_pq_file *f = NULL;
    struct trove_pq_strings s[MAX_COLS];
    struct trove_names *tmp = NULL;
    int64_t *v[MAX_COLS] = {0};
    const struct table_def *t;
    size_t old_len = ev ? ev->len : 0;
    uint64_t rows;
    int rc;

    memset(s, 0, sizeof s);
    if (table < 0 || table >= TROVE_TABLE_COUNT_ || TROVE_TABLE_IS_PROFILE(table) ||
        table == TROVE_TABLE_ARGS || (table == TROVE_TABLE_EVENTS && !ev) ||
        ((table == TROVE_TABLE_NAMES || table == TROVE_TABLE_THREADS ||
          table == TROVE_TABLE_SORT_INDEXES) &&
         !names))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "bad arguments to trove_tables_read");
    t = &tables[table];
    if ((rc = trove_pq_open(buf, len, &f, diag)) != TROVE_OK)
        goto out;
    rows = trove_pq_rows(f);
    if (rows > SIZE_MAX / sizeof(int64_t)) {
        rc = TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "table %s: %" PRIu64 " rows", t->name, rows);
        goto out;
    }
    if (table == TROVE_TABLE_EVENTS) {
        rc = read_events(f, ev, diag);
        goto out;
    }
    for (size_t k = 0; k < t->ncols; k++) {
        if (t->cols[k].type != TROVE_PQ_STRING &&
            !(v[k] = trove__malloc((size_t)(rows ? rows : 1) * sizeof(int64_t)))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        if ((rc = read_col(f, t, k, v[k], &s[k], diag)) != TROVE_OK)
            goto out;
    }
    if (table == TROVE_TABLE_NAMES || table == TROVE_TABLE_THREADS ||
        table == TROVE_TABLE_SORT_INDEXES) {
        if ((rc = trove_names_new(&tmp)) != TROVE_OK)
            goto out;
        /* names are UTF-8 everywhere in trove (a names frame refuses anything else) */
        for (size_t k = 0; k < t->ncols; k++)
            if (t->cols[k].type == TROVE_PQ_STRING &&
                (rc = strings_utf8(t, k, &s[k], rows, diag)) != TROVE_OK)
                goto out;
        for (uint64_t r = 0; r < rows; r++) {
            if (table == TROVE_TABLE_SORT_INDEXES) {
                /* a process's tid is not part of its key: whatever the row says, it is 0 */
                if (!trove_name_type_is_sort((int)v[0][r])) {
                    rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                                    "table %s: column %s row %" PRIu64 " holds %" PRId64
                                    " (4: a process's sort index, 5: a thread's)",
                                    t->name, t->cols[0].name, r, v[0][r]);
                    goto out;
                }
                rc = trove_names_set_sort(tmp, (int)v[0][r], (uint32_t)v[1][r],
                                          (uint32_t)v[2][r], (int32_t)v[3][r]);
            } else if (table == TROVE_TABLE_NAMES) {
                const struct trove_pq_strings *n = &s[1];
                rc = trove_names_set(tmp, TROVE_NAME_EVENT, (uint32_t)v[0][r], 0,
                                     (const char *)n->bytes + n->off[r],
                                     (size_t)(n->off[r + 1] - n->off[r]));
            } else {
                const struct trove_pq_strings *tn = &s[2], *pn = &s[3];
                uint32_t pid = (uint32_t)v[0][r], tid = (uint32_t)v[1][r];
                size_t tl = (size_t)(tn->off[r + 1] - tn->off[r]);
                size_t pl = (size_t)(pn->off[r + 1] - pn->off[r]);
                rc = TROVE_OK;
                /* A row with tid 0 and no thread name names only its process. */
                if (tl > 0 || tid != 0)
                    rc = trove_names_set(tmp, TROVE_NAME_THREAD, pid, tid,
                                         (const char *)tn->bytes + tn->off[r], tl);
                if (rc == TROVE_OK && pl > 0 &&
                    !trove_names_get(tmp, TROVE_NAME_PROCESS, pid, 0, NULL))
                    rc = trove_names_set(tmp, TROVE_NAME_PROCESS, pid, 0,
                                         (const char *)pn->bytes + pn->off[r], pl);
            }
            if (rc != TROVE_OK)
                goto out;
        }
        if ((rc = trove_names_merge(names, tmp)) != TROVE_OK)
            goto out;
    }
    rc = TROVE_OK;
out:
    if (rc != TROVE_OK && ev && ev->len > old_len)
        ev->len = old_len;
    for (size_t k = 0; k < MAX_COLS; k++) {
        free(v[k]);
        trove_pq_strings_free(&s[k]);
    }
    trove_names_free(tmp);
    trove_pq_close(f);
    return rc;
}

int trove_tables_read_flows(const uint8_t *buf, size_t len, struct trove_flows *flows,
                            struct trove_diag *diag)
{
    const struct table_def *t = &tables[TROVE_TABLE_FLOWS];
    struct trove_pq_file *f = NULL;
    struct trove_pq_strings s[MAX_COLS];
    int64_t *v[MAX_COLS] = {0};
    uint64_t rows;
    int rc;

    memset(s, 0, sizeof s);
    if (!flows)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "bad arguments to trove_tables_read_flows");
    if ((rc = trove_pq_open(buf, len, &f, diag)) != TROVE_OK)
        goto out;
    rows = trove_pq_rows(f);
    if (rows > TROVE_FLOWS_MAX) {
        rc = TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                        "table flows: %" PRIu64 " rows, over the %" PRIu64 " a capture holds",
                        rows, TROVE_FLOWS_MAX);
        goto out;
    }
    for (size_t k = 0; k < t->ncols; k++) {
        if (!(v[k] = trove__malloc((size_t)(rows ? rows : 1) * sizeof(int64_t)))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        if ((rc = read_col(f, t, k, v[k], &s[k], diag)) != TROVE_OK)
            goto out;
    }
    for (uint64_t r = 0; r < rows; r++) {
        int k = v[5][r] > TROVE_FLOW_END                             ? 5
                : (v[6][r] & ~(int64_t)TROVE_FLOW_ENCLOSING) != 0 ? 6
                : v[1][r] == 0                                    ? 1
                                                                  : -1;
        if (k >= 0) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                            "table flows: column %s row %" PRIu64 " holds %" PRId64
                            " (phase is 0 to 2, flags 0 or 1, flow_id from 1)",
                            t->cols[k].name, r, v[k][r]);
            goto out;
        }
    }
    if ((rc = trove_flows_reserve(flows, (size_t)rows)) != TROVE_OK)
        goto out;
    for (uint64_t r = 0; r < rows; r++) {
        struct trove_flow *fl = &flows->f[flows->len + r];
        memset(fl, 0, sizeof *fl);
        fl->ts_ns = (uint64_t)v[0][r];
        fl->id = (uint64_t)v[1][r];
        fl->pid = (uint32_t)v[2][r];
        fl->tid = (uint32_t)v[3][r];
        fl->name_id = (uint32_t)v[4][r];
        fl->phase = (uint8_t)v[5][r];
        fl->flags = (uint8_t)v[6][r];
    }
    flows->len += (size_t)rows;
    rc = TROVE_OK;
out:
    for (size_t k = 0; k < MAX_COLS; k++) {
        free(v[k]);
        trove_pq_strings_free(&s[k]);
    }
    trove_pq_close(f);
    return rc;
}

/* ---- the profile's tables ------------------------------------------------------------ */

int trove_tables_write_profile(int table, const struct trove_profile *p,
                               const struct trove_tables_options *o, struct trove_bytes *out,
                               uint64_t *rows_out)
{
    if (!TROVE_TABLE_IS_PROFILE(table))
        return TROVE_ERR_INVALID;
    return write_table(table, NULL, NULL, NULL, 0, p, o, out, rows_out);
}

/* One profile table read whole: its integer columns in v, its strings in s. */
struct ptab {
    const struct table_def *t;
    uint64_t rows;
    int64_t *v[MAX_COLS];
    struct trove_pq_strings s[MAX_COLS];
};

static void ptab_free(struct ptab *x)
{
    for (size_t k = 0; k < MAX_COLS; k++) {
        free(x->v[k]);
        trove_pq_strings_free(&x->s[k]);
    }
}

static int ptab_read(const struct trove_tables_profile_in *in, int table, struct ptab *x,
                     struct trove_diag *diag)
{
    struct trove_pq_file *f = NULL;
    int rc = TROVE_OK;

    memset(x, 0, sizeof *x);
    x->t = &tables[table];
    if (!in->buf[table])
        return TROVE_OK;
    if ((rc = trove_pq_open(in->buf[table], in->len[table], &f, diag)) != TROVE_OK)
        return rc;
    x->rows = trove_pq_rows(f);
    if (x->rows > TROVE_PROFILE_MAX_ROWS) {
        rc = TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "table %s: %" PRIu64 " rows, over the %u a profile holds",
                        x->t->name, x->rows, TROVE_PROFILE_MAX_ROWS);
        goto out;
    }
    for (size_t k = 0; k < x->t->ncols; k++) {
        if (x->t->cols[k].type != TROVE_PQ_STRING &&
            !(x->v[k] = trove__malloc((size_t)(x->rows ? x->rows : 1) * sizeof(int64_t)))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        if ((rc = read_col(f, x->t, k, x->v[k], &x->s[k], diag)) != TROVE_OK)
            goto out;
        if (x->t->cols[k].type == TROVE_PQ_STRING &&
            (rc = strings_utf8(x->t, k, &x->s[k], x->rows, diag)) != TROVE_OK)
            goto out;
    }
out:
    trove_pq_close(f);
    return rc;
}

/* order[id - base] = the row whose id column (column 0) is id, for ids base .. base+rows-1
 * each once; else the error names the row. */
static int id_order(const struct ptab *x, uint64_t base, uint32_t **order_out,
                    struct trove_diag *diag)
{
    uint32_t *order;
    *order_out = NULL;
    if (!(order = trove__mallocarray(x->rows ? (size_t)x->rows : 1, sizeof *order)))
        return TROVE_ERR_NOMEM;
    for (uint64_t r = 0; r < x->rows; r++)
        order[r] = UINT32_MAX;
    for (uint64_t r = 0; r < x->rows; r++) {
        uint64_t id = (uint64_t)x->v[0][r];
        if (id < base || id - base >= x->rows || order[id - base] != UINT32_MAX) {
            free(order);
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                              "table %s: column %s row %" PRIu64 " holds %" PRIu64
                              "; the ids are %" PRIu64 " to %" PRIu64 ", each once",
                              x->t->name, x->t->cols[0].name, r, id, base, base + x->rows - 1);
        }
        order[id - base] = (uint32_t)r;
    }
    *order_out = order;
    return TROVE_OK;
}

static int bad_ref(struct trove_diag *diag, const struct ptab *x, size_t k, uint64_t r,
                   const char *what)
{
    return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                      "table %s: column %s row %" PRIu64 " holds %" PRId64 ", which is not %s",
                      x->t->name, x->t->cols[k].name, r, x->v[k][r], what);
}

int trove_tables_read_profile(const struct trove_tables_profile_in *in, struct trove_profile *p,
                              struct trove_diag *diag)
{
    struct ptab fr, st, sm, sw;
    struct trove_profile_counts c0;
    uint32_t *order = NULL, *frame_id = NULL, *stack_id = NULL;
    int rc;

    memset(&fr, 0, sizeof fr);
    memset(&st, 0, sizeof st);
    memset(&sm, 0, sizeof sm);
    memset(&sw, 0, sizeof sw);
    if (!in || !p)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "bad arguments to trove_tables_read_profile");
    trove_profile_get_counts(p, &c0);
    if (c0.strings != 1 || c0.frames || c0.stacks || c0.samples || c0.switches)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "the profile's tables are read into a new profile");
    if ((rc = ptab_read(in, TROVE_TABLE_FRAMES, &fr, diag)) != TROVE_OK ||
        (rc = ptab_read(in, TROVE_TABLE_STACKS, &st, diag)) != TROVE_OK ||
        (rc = ptab_read(in, TROVE_TABLE_SAMPLES, &sm, diag)) != TROVE_OK ||
        (rc = ptab_read(in, TROVE_TABLE_SWITCHES, &sw, diag)) != TROVE_OK)
        goto out;

    /* frames, in frame_id order; frame_id[file's id] = the profile's */
    if ((rc = id_order(&fr, 0, &order, diag)) != TROVE_OK)
        goto out;
    if (!(frame_id = trove__mallocarray(fr.rows ? (size_t)fr.rows : 1, sizeof *frame_id))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (uint64_t i = 0; i < fr.rows; i++) {
        uint32_t r = order[i], sid[3];
        struct trove_profile_frame f;
        for (size_t k = 0; k < 3; k++) {
            const struct trove_pq_strings *x = &fr.s[1 + k];
            size_t len = (size_t)(x->off[r + 1] - x->off[r]);
            if (memchr(x->bytes + x->off[r], 0, len)) {
                rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                                "table frames: column %s row %" PRIu32 " holds a NUL byte",
                                fr.t->cols[1 + k].name, r);
                goto out;
            }
            if ((rc = trove_profile_string(p, (const char *)x->bytes + x->off[r], len, &sid[k])) !=
                TROVE_OK)
                goto out;
        }
        f = (struct trove_profile_frame){sid[0], sid[1], sid[2], (uint32_t)fr.v[4][r],
                                         (uint64_t)fr.v[5][r], (uint32_t)fr.v[6][r]};
        if ((rc = trove_profile_frame(p, &f, &frame_id[i])) != TROVE_OK)
            goto out;
    }
    free(order);
    order = NULL;

    /* stacks, in stack_id order: a parent comes before its children */
    if ((rc = id_order(&st, 1, &order, diag)) != TROVE_OK)
        goto out;
    if (!(stack_id = trove__mallocarray((size_t)st.rows + 1, sizeof *stack_id))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    stack_id[0] = TROVE_PROFILE_ROOT;
    for (uint64_t i = 0; i < st.rows; i++) {
        uint32_t r = order[i];
        uint64_t parent = (uint64_t)st.v[1][r], frame = (uint64_t)st.v[2][r];
        if (parent > i) {
            rc = bad_ref(diag, &st, 1, r, "a stack before it (parent_id < stack_id)");
            goto out;
        }
        if (frame >= fr.rows) {
            rc = bad_ref(diag, &st, 2, r, "a frame_id of the frames table");
            goto out;
        }
        if ((rc = trove_profile_stack(p, stack_id[parent], frame_id[frame], &stack_id[i + 1])) !=
            TROVE_OK)
            goto out;
    }

    for (uint64_t r = 0; r < sm.rows; r++) {
        struct trove_profile_sample x;
        if ((uint64_t)sm.v[3][r] > st.rows) {
            rc = bad_ref(diag, &sm, 3, r, "a stack_id of the stacks table, or 0");
            goto out;
        }
        x = (struct trove_profile_sample){(uint64_t)sm.v[0][r], (uint32_t)sm.v[1][r],
                                          (uint32_t)sm.v[2][r], stack_id[sm.v[3][r]]};
        if ((rc = trove_profile_sample(p, &x)) != TROVE_OK)
            goto out;
    }
    for (uint64_t r = 0; r < sw.rows; r++) {
        struct trove_profile_switch x;
        if (sw.v[3][r] > 1 || sw.v[4][r] > 1 || (sw.v[4][r] && !sw.v[3][r])) {
            rc = bad_ref(diag, &sw, sw.v[3][r] > 1 ? 3 : 4, r,
                         "0 or 1 (and preempt 1 only with out 1)");
            goto out;
        }
        x = (struct trove_profile_switch){
            (uint64_t)sw.v[0][r], (uint32_t)sw.v[1][r], (uint32_t)sw.v[2][r],
            (sw.v[3][r] ? TROVE_PROFILE_SWITCH_OUT : 0u) |
                (sw.v[4][r] ? TROVE_PROFILE_SWITCH_PREEMPT : 0u)};
        if ((rc = trove_profile_switch(p, &x)) != TROVE_OK)
            goto out;
    }
    rc = TROVE_OK;
out:
    free(order);
    free(frame_id);
    free(stack_id);
    ptab_free(&fr);
    ptab_free(&st);
    ptab_free(&sm);
    ptab_free(&sw);
    return rc;
}
