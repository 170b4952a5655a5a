/*
 * input_internal.h: what the input layer's files share (include/trove/input.h is what they
 * offer). Every function here takes a struct trove_diag that is not NULL (the public entry
 * points give a local one when the caller gave none) and returns TROVE_OK or a negative code
 * with diag set.
 */
#ifndef TROVE_INPUT_INTERNAL_H
#define TROVE_INPUT_INTERNAL_H

#include <stdio.h>

#include "trove/input.h"

/* Set diag (code rc, offset 0) and return rc. */
#define in_fail(diag, rc, ...) trove_diag_set((diag), (rc), 0, __VA_ARGS__)

/* The message for a failed call: d's when it has one, else trove_strerror(rc). */
const char *in_msg(const struct trove_diag *d, int rc);

/* The code to return after a failure that set diag (TROVE_ERR_INVALID if it set none). */
int in_code(const struct trove_diag *diag);

/* How messages name the input at path (opt->label, else path). */
const char *in_label(const struct trove_input_options *opt, const char *path);

/* Progress through opt (which may be NULL or have none). */
void in_progress(const struct trove_input_options *opt, const char *what, uint64_t done,
                 uint64_t total);

/* The table kinds (tables_read.c): kind TROVE_INPUT_BUNDLE (the zip at path, or mem when
 * not NULL), TROVE_INPUT_DIR (path) or TROVE_INPUT_PARQUET (path, or mem), into events,
 * names and flows (may be NULL); `label` names it in messages. events and flows unchanged
 * on failure. */
int in_load_tables(const char *path, const char *label, int kind, const uint8_t *mem,
                   size_t mem_len, const struct trove_input_options *opt,
                   struct trove_events *events, struct trove_names *names,
                   struct trove_flows *flows, struct trove_diag *diag);

/* A Perfetto trace in memory (trace_read.c), named `label` in messages. */
int in_load_perfetto_mem(const char *label, const uint8_t *buf, size_t len,
                         const struct trove_input_options *opt, struct trove_events *events,
                         struct trove_names *names, struct trove_flows *flows,
                         struct trove_diag *diag);

/* Is the input at path a wire stream (plain, or in gzip or zstd) that can be opened again
 * to be read (not stdin)? 1 or 0 (an input that cannot be opened: 0, its reader says why). */
int in_input_is_wire(const char *path, const struct trove_input_options *opt);

/* The input at path as an import reads it (read.c): a wire stream (a file, stdin, a pipe:
 * what arrives in order) handed to sink frame by frame, every name merged into names, and
 * *streamed set to 1; any other kind (a capture too) read whole into events, names and
 * flows (unchanged on failure), *streamed 0. */
int in_read_import(const char *path, const struct trove_input_options *opt,
                   const struct trove_input_sink *sink, struct trove_events *events,
                   struct trove_names *names, struct trove_flows *flows, int *streamed,
                   struct trove_diag *diag);

/* rc, after a failure of a request to S3 (rc TROVE_ERR_REMOTE) is made to say what S3
 * answered, which the backend keeps on store s's handle: in diag's message, where "remote
 * store error" stood (capture_read.c). */
struct trove_store;
int in_remote_detail(struct trove_store *s, int rc, struct trove_diag *diag);

/* A capture's profile, whole, into p (capture_read.c). */
int in_capture_profile_into(const char *store, const char *name, struct trove_profile *p,
                            struct trove_diag *diag);

/* The export of x->in (any input, read whole) as a bundle, Parquet or a directory
 * (export_capture.c), and of a capture, streamed; the trace formats (export_trace.c). */
int in_export_tables(const struct trove_export_options *x, struct trove_export_result *res,
                     struct trove_diag *diag);
int in_export_trace(const struct trove_export_options *x, struct trove_export_result *res,
                    struct trove_diag *diag);

#endif
