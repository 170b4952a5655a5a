/*
 * trace_load.c: Perfetto traces as CLI input — the detection hook (cli_trace_sniff,
 * cli_trace_is_perfetto) and the loader (cli_load_perfetto, cli_load_perfetto_mem) that
 * the input layer (cli_input.c) calls. The format is the library's (include/trove/trace.h,
 * trove_perfetto_read); this file reads the file whole and prints what was dropped. It calls
 * no other file of tools/, so the input layer can call it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "trove/trace.h"

#define MAX_TRACE_BYTES ((uint64_t)4 << 30) /* a Perfetto trace read whole */

int cli_trace_sniff(const uint8_t *head, size_t n) { return trove_perfetto_sniff(head, n); }

int cli_trace_is_perfetto(const char *path)
{
    uint8_t head[256];
    struct stat st;
    size_t n;
    FILE *f;

    if (!strcmp(path, "-") || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        !(f = fopen(path, "rb")))
        return 0;
    n = fread(head, 1, sizeof head, f);
    fclose(f);
    return cli_trace_sniff(head, n);
}

/* The whole of path ('-': stdin), at most max bytes. */
static int read_all(const char *cmd, const char *path, uint64_t max, struct trove_bytes *out)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    uint8_t chunk[1 << 16];
    size_t n;
    int status = 1;

    if (!f)
        return cli_error(cmd, "cannot open %s: %s", path, strerror(errno));
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if ((uint64_t)out->len + n > max) {
            cli_error(cmd, "%s: larger than %llu bytes, the most trove reads whole", path,
                      (unsigned long long)max);
            goto out;
        }
        if (trove_bytes_append(out, chunk, n) != TROVE_OK) {
            cli_error(cmd, "%s: out of memory", path);
            goto out;
        }
    }
    if (ferror(f)) {
        cli_error(cmd, "reading %s: %s", path, strerror(errno));
        goto out;
    }
    status = 0;
out:
    if (f != stdin)
        fclose(f);
    return status;
}

int cli_load_perfetto_mem(const char *cmd, const char *path, const uint8_t *buf, size_t len,
                          const struct cli_load_options *opt, struct trove_events *events,
                          struct trove_names *names, struct trove_flows *flows)
{
    struct trove_perfetto_options po = {opt->strict, 0, opt->profile};
    struct trove_perfetto_stats st;
    struct trove_diag diag = {0};
    int rc = trove_perfetto_read(buf, len, &po, events, names, flows, &st, &diag);

    if (rc != TROVE_OK)
        return cli_error(cmd, "%s (read as a Perfetto trace): at byte %llu: %s%s", path,
                         (unsigned long long)diag.offset, cli_diag_msg(&diag, rc),
                         rc == TROVE_ERR_UNMATCHED ? " (without --strict, unmatched slices are "
                                                     "dropped with a warning)"
                                                   : "");
    if (st.unmatched_begin || st.unmatched_end)
        cli_warn(cmd, opt->quiet, opt->warnings, st.unmatched_begin + st.unmatched_end,
                 "%s: dropped %llu slices never ended and %llu ends never begun", path,
                 (unsigned long long)st.unmatched_begin, (unsigned long long)st.unmatched_end);
    if (st.skipped_packets || st.skipped_events)
        cli_warn(cmd, opt->quiet, opt->warnings, st.skipped_packets + st.skipped_events,
                 "%s: skipped %llu packets and %llu track events of kinds trove does not read",
                 path, (unsigned long long)st.skipped_packets,
                 (unsigned long long)st.skipped_events);
    return 0;
}

int cli_load_perfetto(const char *cmd, const char *path, const struct cli_load_options *opt,
                      struct trove_events *events, struct trove_names *names,
                      struct trove_flows *flows)
{
    struct trove_bytes buf = {0};
    int status = read_all(cmd, path, MAX_TRACE_BYTES, &buf) ||
                 cli_load_perfetto_mem(cmd, path, buf.ptr, buf.len, opt, events, names, flows);

    trove_bytes_free(&buf);
    return status;
}
