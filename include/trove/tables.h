/*
 * trove/tables.h: a capture as Parquet tables (docs/formats/bundle.md):
 *
 *   events   start_ns u64, dur_ns u64, pid u32, tid u32, kind u8, depth u8, extra u8,
 *            name_id u32                                   one row per event, in order
 *   names    name_id u32, name string                      the event names
 *   threads  pid u32, tid u32, thread_name string, process_name string
 *   samples  time_ns u64, pid u32, tid u32, stack_id u32   (empty until trove samples)
 *   frames   stack_id u32, depth u32, address u64, function string          (empty too)
 *   flows    ts_ns u64, flow_id u64, pid u32, tid u32, name_id u32, phase u8, flags u8
 *                                                           one row per flow row (flows.h)
 *   sort_indexes  type u8, pid u32, tid u32, sort_index i32  one row per sort index entry
 *                                                           (type 4 process, 5 thread)
 *
 * Unsigned columns are Parquet INT32/INT64 with the logical type INTEGER(bits, false), so
 * DuckDB reads them as UTINYINT, UINTEGER and UBIGINT; sort_index is INTEGER(32, true). Encodings by mode: "delta-dict" (the
 * default) puts DELTA_BINARY_PACKED on the nanosecond columns and on the names table's
 * name_id (a run of ids) and the flows table's flow_id, and RLE_DICTIONARY on every other
 * column; "dict" puts
 * RLE_DICTIONARY everywhere; "plain" PLAIN everywhere.
 */
#ifndef TROVE_TABLES_H
#define TROVE_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/event.h"
#include "trove/flows.h"

#ifdef __cplusplus
extern "C" {
#endif

enum trove_tables_mode {
    TROVE_TABLES_DELTA_DICT = 0, /* the default, so that a zeroed options struct is it */
    TROVE_TABLES_PLAIN = 1,
    TROVE_TABLES_DICT = 2,
    TROVE_TABLES_MODE_COUNT_ = 3
};

struct trove_tables_options {
    int mode;                /* enum trove_tables_mode */
    int codec;               /* enum trove_pq_codec */
    uint64_t row_group_rows; /* 0: the writer's default */
};

/* Defaults: delta-dict, ZSTD (level 3: about half the bytes of no codec, and no larger than
 * DuckDB's own ZSTD files of the same rows: docs/BENCHMARKS.md), the writer's row groups. A
 * zeroed struct is delta-dict with no codec. */
void trove_tables_defaults(struct trove_tables_options *o);

enum trove_table {
    TROVE_TABLE_EVENTS = 0,
    TROVE_TABLE_NAMES = 1,
    TROVE_TABLE_THREADS = 2,
    TROVE_TABLE_SAMPLES = 3,
    TROVE_TABLE_FRAMES = 4,
    TROVE_TABLE_FLOWS = 5,
    TROVE_TABLE_SORT_INDEXES = 6, /* bundles hold it only when the capture has sort indexes */
    TROVE_TABLE_STACKS = 7,       /* ... and these two only when they have rows */
    TROVE_TABLE_SWITCHES = 8,
    TROVE_TABLE_ARGS = 9,         /* ... and this one only when there are attributes */
    TROVE_TABLE_COUNT_ = 10
};

/* The profile's tables (trove_tables_write_profile): samples, frames, stacks, switches. */
#define TROVE_TABLE_IS_PROFILE(t)                                                          \
    ((t) == TROVE_TABLE_SAMPLES || (t) == TROVE_TABLE_FRAMES || (t) == TROVE_TABLE_STACKS || \
     (t) == TROVE_TABLE_SWITCHES)

/* "events", "names", ...; NULL past the last. */
const char *trove_table_name(int table);

/*
 * Write one table of the capture (events and names) as a Parquet file appended to out;
 * *rows_out (may be NULL) gets its row count. The threads table has a row per thread name
 * in names, in their order, with its process's name (empty if none), then a row with tid 0
 * and an empty thread_name for each process name whose pid has no named thread. The
 * sort_indexes table has a row per sort index entry of names, in their order. The
 * flows table written here has no rows (trove_tables_write_flows writes the rows).
 * Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM.
 */
int trove_tables_write(int table, const struct trove_events *ev, const struct trove_names *names,
                       const struct trove_tables_options *o, struct trove_bytes *out,
                       uint64_t *rows_out);

/*
 * The events table in pieces, for a capture too large to hold: begin, add the events in
 * order, finish. The file goes to sink as it is made, a row group at a time (see
 * trove_pq_writer_set_sink), never whole in memory. The rows of each add are encoded before
 * it returns (ev is not kept) as row groups of their own: whole ones of the row group size
 * (o->row_group_rows, or TROVE_PQ_DEFAULT_ROW_GROUP), then one shorter with the rest. So
 * when every add but the last gives a multiple of the row group size, the file is byte for
 * byte trove_tables_write(TROVE_TABLE_EVENTS, ...) of all the events at once; the caller
 * buffers to make that so. Memory: 24 bytes a row of the largest row group added, and the
 * Parquet writer's one row group.
 *
 * trove_tables_events_begin: o NULL means the defaults; the sink is copied. Errors:
 * TROVE_ERR_INVALID, TROVE_ERR_NOMEM. trove_tables_events_add: errors TROVE_ERR_INVALID (ev
 * NULL with rows; after finish or a failure), TROVE_ERR_LIMIT (more than TROVE_PQ_MAX_ROWS
 * rows), TROVE_ERR_NOMEM, the sink's; after an error only free is left.
 * trove_tables_events_finish writes the footer; *rows_out and *bytes_out (each may be NULL)
 * get the table's rows and the file's size. Errors as add's. trove_tables_events_free frees
 * (NULL is fine); what the sink got of an unfinished table is not a Parquet file. One thread
 * at a time per table.
 */
struct trove_tables_events;
int trove_tables_events_begin(const struct trove_tables_options *o, const struct trove_sink *sink,
                              struct trove_tables_events **out);
int trove_tables_events_add(struct trove_tables_events *t, const struct trove_event *ev, size_t n);
int trove_tables_events_finish(struct trove_tables_events *t, uint64_t *rows_out,
                               uint64_t *bytes_out);
void trove_tables_events_free(struct trove_tables_events *t);

/*
 * Read a table from a Parquet file in buf[0..len) into the capture: events are appended to
 * ev, names set in names (events: TROVE_NAME_EVENT; threads: TROVE_NAME_THREAD for each
 * row with a thread_name, TROVE_NAME_PROCESS for each nonempty process_name;
 * sort_indexes: a sort index of the row's type, 4 or 5, for each row). Columns are
 * found by name; extra columns are ignored; a missing column, a value out of its range
 * (a kind over 255, a pid over 2^32 - 1, a sort index type other than 4 and 5, a sort_index
 * outside the signed 32 bits) or a string over TROVE_NAME_MAX is an error naming
 * the table, column and row. The profile's tables (TROVE_TABLE_IS_PROFILE) are read with
 * trove_tables_read_profile (TROVE_ERR_INVALID here). The flows table is read (every check made) and its rows dropped: take them
 * with trove_tables_read_flows. Errors: those of trove_pq_open and trove_pq_read_*,
 * TROVE_ERR_CORRUPT, TROVE_ERR_FORMAT, TROVE_ERR_NOMEM; on error ev's length and names are
 * unchanged.
 */
int trove_tables_read(int table, const uint8_t *buf, size_t len, struct trove_events *ev,
                      struct trove_names *names, struct trove_diag *diag);

/*
 * The flows table: rows[0..n) (each must pass trove_flow_check) as a Parquet file appended to
 * out; *rows_out (may be NULL) gets n. Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM.
 */
int trove_tables_write_flows(const struct trove_flow *rows, size_t n,
                             const struct trove_tables_options *o, struct trove_bytes *out,
                             uint64_t *rows_out);

/*
 * Read a flows table in buf[0..len) and append its rows to flows. Columns are found by name;
 * a missing column, a value out of its range, a phase over 2, flags other than 0 and 1, or a
 * flow_id of 0 is TROVE_ERR_CORRUPT naming the column and row. Errors: those of
 * trove_pq_open and trove_pq_read_*, TROVE_ERR_CORRUPT, TROVE_ERR_LIMIT (more than
 * TROVE_FLOWS_MAX rows), TROVE_ERR_NOMEM; on error flows is unchanged.
 */
int trove_tables_read_flows(const uint8_t *buf, size_t len, struct trove_flows *flows,
                            struct trove_diag *diag);

/* ---- the events' attributes (docs/formats/bundle.md, "args.parquet") ------------------- */

struct trove_attrs;

/*
 * The args table: one row an attribute (trove/attrs.h), the trace's (meta, may be NULL;
 * scope "trace", event 0) first, then the events' (attrs, may be NULL; rows not going back in
 * event) — columns event (UINT64: the event's row in events.parquet), scope ("arg", "field",
 * "trace"), key, type ("int", "double", "string", "bool", "json") and value (its text: an
 * int's digits, a double's fewest digits that read back the same or nan/inf/-inf, a string
 * as it is, true/false, JSON text) — as a Parquet file appended to out; *rows_out (may be
 * NULL) gets its rows. Errors: TROVE_ERR_INVALID (rows going back, a row of a bad scope or
 * type), TROVE_ERR_NOMEM; out is unchanged on error.
 */
int trove_tables_write_args(const struct trove_attrs *attrs, const struct trove_attrs *meta,
                            const struct trove_tables_options *o, struct trove_bytes *out,
                            uint64_t *rows_out);

/*
 * Read an args table in buf[0..len) of a capture of `events` events: the rows of scope
 * "trace" to meta (may be NULL: dropped), the others to attrs. Columns found by name (extra
 * ones ignored); a scope or type not of the lists above, an event past `events` or before the
 * row above's (a trace row's not 0), a value that is not the writer's text of its type, a key
 * or value over TROVE_ATTRS_MAX_STRING bytes or not UTF-8 are TROVE_ERR_CORRUPT naming the
 * row. Errors: those of trove_pq_open and trove_pq_read_*, TROVE_ERR_FORMAT (a column
 * missing), TROVE_ERR_CORRUPT, TROVE_ERR_LIMIT, TROVE_ERR_NOMEM; on error both tables hold
 * the rows they had.
 */
int trove_tables_read_args(const uint8_t *buf, size_t len, uint64_t events,
                           struct trove_attrs *attrs, struct trove_attrs *meta,
                           struct trove_diag *diag);

/* ---- the profile's tables (docs/formats/bundle.md) ------------------------------------- */

struct trove_profile;

/*
 * Write one of the profile's tables of p (NULL: no rows) as a Parquet file appended to out;
 * *rows_out (may be NULL) gets its rows: samples (time_ns, pid, tid, stack_id), frames
 * (frame_id, module, function, file, line, address, inline_depth), stacks (stack_id,
 * parent_id, frame_id), switches (time_ns, pid, tid, out, preempt), each in id or time order
 * as the profile holds them. Errors: TROVE_ERR_INVALID (not a profile table), TROVE_ERR_NOMEM.
 */
int trove_tables_write_profile(int table, const struct trove_profile *p,
                               const struct trove_tables_options *o, struct trove_bytes *out,
                               uint64_t *rows_out);

/* The profile's tables to read: each a Parquet file, or buf NULL for a table that is absent
 * (it has no rows). Indexed by enum trove_table; only the profile's four are read. */
struct trove_tables_profile_in {
    const uint8_t *buf[TROVE_TABLE_COUNT_];
    size_t len[TROVE_TABLE_COUNT_];
};

/*
 * Read the profile's tables into p, a new profile (trove_profile_new). frames' frame_id must
 * be 0 .. n-1 each once, stacks' stack_id 1 .. n each once (rows in any order: a table
 * sorted in DuckDB reads the same), a stack's parent_id below its stack_id and its frame_id
 * a frame, a sample's stack_id a stack or 0, a switch's out and preempt 0 or 1 (preempt only
 * with out); strings are UTF-8 of at most TROVE_PROFILE_STRING_MAX bytes with no NUL.
 * Frames and stacks that repeat one another are merged (the profile deduplicates), so ids
 * may shift; trove's own tables read back to the same ids. Errors: those of trove_pq_open
 * and trove_pq_read_*, TROVE_ERR_CORRUPT (naming the table, column and row),
 * TROVE_ERR_INVALID (p not new), TROVE_ERR_LIMIT, TROVE_ERR_NOMEM; on error p holds part of
 * the tables: free it.
 */
int trove_tables_read_profile(const struct trove_tables_profile_in *in, struct trove_profile *p,
                              struct trove_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
