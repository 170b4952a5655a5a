/*
 * tables.c: a capture's events and names as the Parquet tables of a bundle, and back
 * (include/trove/tables.h, docs/formats/bundle.md).
 */
#include "trove/tables.h"

#include "trove/parquet.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { ENC_TIME, ENC_ID, ENC_OTHER }; /* what a column is, for the mode's encoding */

struct col {
    const char *name;
    int type;
    int bits;
    int role;
};

#define U8(n) {n, TROVE_PQ_INT32, 8, ENC_OTHER}
#define U32(n) {n, TROVE_PQ_INT32, 32, ENC_OTHER}
#define STR(n) {n, TROVE_PQ_STRING, 0, ENC_OTHER}

static const struct col events_cols[] = {
    {"start_ns", TROVE_PQ_INT64, 64, ENC_TIME}, {"dur_ns", TROVE_PQ_INT64, 64, ENC_TIME},
    U32("pid"), U32("tid"), U8("kind"), U8("depth"), U8("extra"), U32("name_id"),
};
static const struct col names_cols[] = {{"name_id", TROVE_PQ_INT32, 32, ENC_ID}, STR("name")};
static const struct col threads_cols[] = {U32("pid"), U32("tid"), STR("thread_name"),
                                          STR("process_name")};
static const struct col samples_cols[] = {
    {"time_ns", TROVE_PQ_INT64, 64, ENC_TIME}, U32("pid"), U32("tid"), U32("stack_id")};
static const struct col frames_cols[] = {U32("stack_id"), U32("depth"),
                                         {"address", TROVE_PQ_INT64, 64, ENC_OTHER},
                                         STR("function")};

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
};

#define MAX_COLS 8

void trove_tables_defaults(struct trove_tables_options *o)
{
    o->mode = TROVE_TABLES_DELTA_DICT;
    o->codec = TROVE_PQ_CODEC_NONE;
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
            ok = (c->i64[k] = malloc(m * sizeof(int64_t))) != NULL;
        else if (t->cols[k].type == TROVE_PQ_INT32)
            ok = (c->i32[k] = malloc(m * sizeof(int32_t))) != NULL;
        else
            ok = (c->str[k] = malloc(m * sizeof(char *))) != NULL &&
                 (c->len[k] = malloc(m * sizeof(uint32_t))) != NULL;
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

static int fill_events(struct cols *c, const struct trove_events *ev)
{
    int rc = cols_alloc(c, &tables[TROVE_TABLE_EVENTS], ev ? ev->len : 0);
    if (rc != TROVE_OK)
        return rc;
    for (size_t i = 0; i < c->n; i++) {
        const struct trove_event *e = &ev->ev[i];
        c->i64[0][i] = (int64_t)e->start_ns;
        c->i64[1][i] = (int64_t)e->dur_ns;
        set_u32(c, 2, i, e->pid);
        set_u32(c, 3, i, e->tid);
        set_u32(c, 4, i, e->kind);
        set_u32(c, 5, i, e->depth);
        set_u32(c, 6, i, e->extra);
        set_u32(c, 7, i, e->name_id);
    }
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

int trove_tables_write(int table, const struct trove_events *ev, const struct trove_names *names,
                       const struct trove_tables_options *o, struct trove_bytes *out,
                       uint64_t *rows_out)
{
    struct trove_pq_column_def defs[MAX_COLS];
    struct trove_pq_column_data data[MAX_COLS];
    struct trove_tables_options dflt;
    struct trove_pq_writer *w = NULL;
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
        rc = fill_events(&c, ev);
        break;
    case TROVE_TABLE_NAMES:
        rc = fill_names(&c, names);
        break;
    case TROVE_TABLE_THREADS:
        rc = fill_threads(&c, names);
        break;
    default:
        rc = cols_alloc(&c, t, 0);
        break;
    }
    if (rc != TROVE_OK)
        goto out;
    for (size_t k = 0; k < t->ncols; k++) {
        defs[k].name = t->cols[k].name;
        defs[k].type = t->cols[k].type;
        defs[k].bits = t->cols[k].bits;
        defs[k].is_unsigned = t->cols[k].type != TROVE_PQ_STRING;
        defs[k].encoding = encoding_for(&t->cols[k], o->mode);
        data[k].i64 = c.i64[k];
        data[k].i32 = c.i32[k];
        data[k].str = c.str[k];
        data[k].str_len = c.len[k];
    }
    if ((rc = trove_pq_writer_new(defs, t->ncols, o->codec, o->row_group_rows, &w)) != TROVE_OK)
        goto out;
    if (c.n > 0 && (rc = trove_pq_writer_add(w, data, c.n)) != TROVE_OK)
        goto out;
    if ((rc = trove_pq_writer_finish(w, out)) != TROVE_OK)
        goto out;
    if (rows_out)
        *rows_out = c.n;
out:
    trove_pq_writer_free(w);
    cols_free(&c);
    return rc;
}

/* ---- reading ------------------------------------------------------------------------- */

/* Find column k of table t in f and read it (integers into vals, strings into s). */
static int read_col(struct trove_pq_file *f, const struct table_def *t, size_t k, int64_t *vals,
                    struct trove_pq_strings *s, struct trove_diag *diag)
{
    const struct col *c = &t->cols[k];
    int i = trove_pq_find(f, c->name), type;
    uint64_t max = c->bits >= 64 ? UINT64_MAX : (1ull << c->bits) - 1;
    int rc;

    if (i < 0)
        return trove_diag_set(diag, TROVE_ERR_CORRUPT, 0, "table %s has no column %s", t->name,
                              c->name);
    type = trove_pq_column_type(f, (size_t)i);
    if ((c->type == TROVE_PQ_STRING) != (type == TROVE_PQ_STRING))
        return trove_diag_set(diag, TROVE_ERR_CORRUPT, 0,
                              "table %s: column %s is %s, not %s", t->name, c->name,
                              type == TROVE_PQ_STRING ? "a string" : "an integer",
                              c->type == TROVE_PQ_STRING ? "a string" : "an integer");
    if (c->type == TROVE_PQ_STRING) {
        if ((rc = trove_pq_read_strings(f, (size_t)i, s, diag)) != TROVE_OK)
            return rc;
        for (uint64_t r = 0; r < s->n; r++)
            if (s->off[r + 1] - s->off[r] > TROVE_NAME_MAX)
                return trove_diag_set(diag, TROVE_ERR_CORRUPT, 0,
                                      "table %s: column %s row %" PRIu64
                                      " is %" PRIu64 " bytes, over the %u a name may have",
                                      t->name, c->name, r, s->off[r + 1] - s->off[r],
                                      TROVE_NAME_MAX);
        return TROVE_OK;
    }
    if ((rc = trove_pq_read_int(f, (size_t)i, vals, diag)) != TROVE_OK)
        return rc;
    if (c->bits < 64) {
        uint64_t rows = trove_pq_rows(f), hi = 0;
        for (uint64_t r = 0; r < rows; r++) /* vectorizes; the slow search only on failure */
            hi |= (uint64_t)vals[r] & ~max;
        for (uint64_t r = 0; hi != 0 && r < rows; r++)
            if ((uint64_t)vals[r] > max)
                return trove_diag_set(diag, TROVE_ERR_CORRUPT, 0,
                                      "table %s: column %s row %" PRIu64 " holds %" PRId64
                                      ", outside its %d bits",
                                      t->name, c->name, r, vals[r], c->bits);
    }
    return TROVE_OK;
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
    if (table < 0 || table >= TROVE_TABLE_COUNT_ || (table == TROVE_TABLE_EVENTS && !ev) ||
        ((table == TROVE_TABLE_NAMES || table == TROVE_TABLE_THREADS) && !names))
        return trove_diag_set(diag, TROVE_ERR_INVALID, 0, "bad arguments to trove_tables_read");
    t = &tables[table];
    if ((rc = trove_pq_open(buf, len, &f, diag)) != TROVE_OK)
        goto out;
    rows = trove_pq_rows(f);
    if ((table == TROVE_TABLE_SAMPLES || table == TROVE_TABLE_FRAMES) && rows > 0) {
        rc = trove_diag_set(diag, TROVE_ERR_FORMAT, 0,
                            "table %s has %" PRIu64 " rows; this trove reads no samples yet",
                            t->name, rows);
        goto out;
    }
    if (rows > SIZE_MAX / sizeof(int64_t)) {
        rc = trove_diag_set(diag, TROVE_ERR_LIMIT, 0, "table %s: %" PRIu64 " rows", t->name, rows);
        goto out;
    }
    if (table == TROVE_TABLE_EVENTS) {
        /* Every column whole, then the events in one pass over them. */
        struct trove_event *e;
        if ((rc = trove_events_reserve(ev, (size_t)rows)) != TROVE_OK)
            goto out;
        for (size_t k = 0; k < t->ncols; k++) {
            if (!(v[k] = malloc((size_t)(rows ? rows : 1) * sizeof(int64_t)))) {
                rc = TROVE_ERR_NOMEM;
                goto out;
            }
            if ((rc = read_col(f, t, k, v[k], NULL, diag)) != TROVE_OK)
                goto out;
        }
        e = ev->ev + ev->len;
        for (uint64_t r = 0; r < rows; r++, e++) {
            e->start_ns = (uint64_t)v[0][r];
            e->dur_ns = (uint64_t)v[1][r];
            e->pid = (uint32_t)v[2][r];
            e->tid = (uint32_t)v[3][r];
            e->kind = (uint8_t)v[4][r];
            e->depth = (uint8_t)v[5][r];
            e->extra = (uint8_t)v[6][r];
            e->pad = 0;
            e->name_id = (uint32_t)v[7][r];
        }
        ev->len += (size_t)rows;
        rc = TROVE_OK;
        goto out;
    }
    for (size_t k = 0; k < t->ncols; k++) {
        if (t->cols[k].type != TROVE_PQ_STRING &&
            !(v[k] = malloc((size_t)(rows ? rows : 1) * sizeof(int64_t)))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        if ((rc = read_col(f, t, k, v[k], &s[k], diag)) != TROVE_OK)
            goto out;
    }
    if (table == TROVE_TABLE_NAMES || table == TROVE_TABLE_THREADS) {
        if ((rc = trove_names_new(&tmp)) != TROVE_OK)
            goto out;
        for (uint64_t r = 0; r < rows; r++) {
            if (table == TROVE_TABLE_NAMES) {
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
