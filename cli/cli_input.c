/*
 * cli_input.c: the input layer (trove/input.h) as the commands call it. The library prints
 * nothing; here its progress becomes the progress line on a terminal, its "read as" line is
 * said with -v, its warnings are said on stderr (unless -q) and kept for --json, and its
 * error becomes the one line "trove CMD: ..." of cli_error. Also the CLI's own helpers
 * around a capture (cli_capture_open for replay) and around output files.
 */
#include "cli.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "trove/capture.h"
#include "trove/stream.h"

static void glue_progress(void *ctx, const char *what, uint64_t done, uint64_t total)
{
    struct cli_glue *g = ctx;

    if (done == UINT64_MAX) {
        if (g->what)
            cli_progress_end(&g->prog);
        g->what = NULL;
        return;
    }
    if (!g->what || strcmp(g->what, what) != 0) {
        if (g->what)
            cli_progress_end(&g->prog);
        cli_progress_begin(&g->prog, what, total);
        g->prog.active = g->prog.active && !g->quiet;
        g->what = what;
    }
    g->prog.total = total;
    cli_progress_update(&g->prog, done);
}

static void glue_read_as(void *ctx, const char *line)
{
    struct cli_glue *g = ctx;
    if (g->verbose)
        fprintf(stderr, "trove %s: %s\n", g->cmd, line);
}

void cli_glue_begin(struct cli_glue *g, const char *cmd, const struct cli_load_options *c,
                       struct trove_warnings *w, struct trove_input_options *o)
{
    memset(g, 0, sizeof *g);
    g->cmd = cmd;
    g->quiet = c->quiet;
    g->verbose = c->verbose;
    memset(o, 0, sizeof *o);
    memset(w, 0, sizeof *w);
    o->format = c->format;
    o->strict = c->strict;
    o->edited = c->edited;
    o->store = c->store;
    o->profile = c->profile;
    o->store_flags = cli_store_flags();
    o->warnings = w;
    o->progress = glue_progress;
    o->read_as = glue_read_as;
    o->ctx = g;
}

int cli_glue_end(struct cli_glue *g, const struct cli_load_options *c,
                    const struct trove_warnings *w, int rc, const struct trove_diag *diag)
{
    glue_progress(g, "", UINT64_MAX, 0);
    cli_warnings_say(g->cmd, c->quiet, w, c->warnings);
    if (rc == TROVE_OK)
        return 0;
    if (diag->msg[0])
        cli_error(g->cmd, "%s", diag->msg);
    return 1;
}

int cli_load_flows(const char *cmd, const char *path, const struct cli_load_options *opt,
                   struct trove_events *events, struct trove_names *names,
                   struct trove_flows *flows)
{
    struct trove_input_options o;
    struct trove_warnings w;
    struct trove_diag diag = {0};
    struct cli_glue g;

    cli_glue_begin(&g, cmd, opt, &w, &o);
    return cli_glue_end(&g, opt, &w, trove_input_load(path, &o, events, names, flows, &diag),
                    &diag);
}

int cli_load(const char *cmd, const char *path, const struct cli_load_options *opt,
             struct trove_events *events, struct trove_names *names)
{
    return cli_load_flows(cmd, path, opt, events, names, NULL);
}

int cli_read(const char *cmd, const char *path, const struct cli_load_options *opt,
             const struct cli_sink *sink, struct trove_names *names_all)
{
    struct trove_input_sink s = {sink->events, sink->names, sink->ctx};
    struct trove_input_options o;
    struct trove_warnings w;
    struct trove_diag diag = {0};
    struct cli_glue g;

    cli_glue_begin(&g, cmd, opt, &w, &o);
    return cli_glue_end(&g, opt, &w, trove_input_read(path, &o, &s, names_all, &diag), &diag);
}

void cli_warnings_say(const char *cmd, int quiet, const struct trove_warnings *w,
                      struct trove_warnings *into)
{
    for (size_t i = 0; i < w->n; i++)
        cli_warn(cmd, quiet, into, w->w[i].count, "%s", w->w[i].message);
    if (w->more) {
        if (!quiet)
            fprintf(stderr, "trove %s: warning: %zu more warnings\n", cmd, w->more);
        if (into) {
            into->more += w->more;
            into->more_count += w->more_count;
        }
    }
}

/* ---- a capture ---------------------------------------------------------------------------- */

int cli_capture_open(const char *cmd, const char *store, const char *name,
                     const struct trove_stream_options *so, struct trove_store **s,
                     struct trove_capture_info *info, struct trove_stream **st)
{
    struct trove_diag diag = {0};
    int rc;

    if (cli_store_open(cmd, store, TROVE_STORE_READONLY, s))
        return 1;
    if ((rc = trove_capture_info(*s, name, info, &diag)) != TROVE_OK) {
        if (rc == TROVE_ERR_NOTFOUND)
            return cli_error(cmd, "no capture named %s in %s; `trove ls --store %s` lists them",
                             name, store, store);
        return cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
    }
    if ((rc = trove_stream_new(trove_store_backend(*s), so, st)) != TROVE_OK)
        return cli_error(cmd, "starting the stream: %s", trove_strerror(rc));
    return 0;
}

int cli_capture_profile(const char *cmd, const char *store, const char *name, uint64_t from_ns,
                        uint64_t to_ns, struct trove_profile **out)
{
    struct trove_diag diag = {0};
    int rc = trove_input_capture_profile(store, name, from_ns, to_ns, out, &diag);

    return rc == TROVE_OK ? 0 : cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
}

/* ---- outputs -------------------------------------------------------------------------------- */

int cli_out_open(const char *cmd, const char *path, int binary, struct trove_output *o)
{
    struct trove_diag diag = {0};
    int rc = trove_output_open(path, binary, o, &diag);
    return rc == TROVE_OK ? 0 : cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
}

int cli_out_commit(const char *cmd, struct trove_output *o)
{
    struct trove_diag diag = {0};
    int rc = trove_output_commit(o, &diag);
    return rc == TROVE_OK ? 0 : cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
}

int cli_out_write_file(const char *cmd, const char *path, const void *data, size_t len)
{
    struct trove_diag diag = {0};
    int rc = trove_output_write_file(path, data, len, &diag);
    return rc == TROVE_OK ? 0 : cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
}

int cli_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;

    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}
