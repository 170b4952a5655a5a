/*
 * capture_read.c: a capture in a store, read by the CLI — opening it for a stream
 * (cli_capture_open), recording its last use in the background (cli_mark_start,
 * cli_mark_finish), and reading it through the streaming pipeline: decoded frame by frame
 * into a buffer that the caller empties as it goes (cli_capture_walk, which `trove export
 * --capture` streams from, never holding the capture), or whole into memory
 * (cli_capture_load, which `trove replay`, the trace exports and every command that takes
 * `store:NAME` as its input share).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/stream.h"

const char *cli_default_store(const char *given)
{
    const char *env;
    if (given)
        return given;
    return (env = getenv("TROVE_STORE")) && *env ? env : "./trove-data";
}

/*
 * The last-used marker is bookkeeping that must not delay the replay: it is written on a
 * background thread started before the stream (trove_bg_start), and the command waits for
 * it only on its way out of a replay that finished, at most TROVE_BG_TIMEOUT_MS_DEFAULT
 * (30 s; a hanging filesystem costs a warning, not the data). A cancelled or failed replay
 * does not wait: the process exits and the write goes with it.
 */
struct mark_job {
    char *store;
    char name[TROVE_VOLUME_NAME_MAX + 1];
    uint64_t unix_ns;
};

static int mark_run(void *ctx)
{
    const struct mark_job *j = ctx;
    return trove_capture_mark_used(j->store, j->name, j->unix_ns);
}

static void mark_free(void *ctx)
{
    struct mark_job *j = ctx;
    free(j->store);
    free(j);
}

/* Start writing name's marker in the background; NULL (after a warning) if it cannot, and
 * NULL at once for a store on S3, which keeps no markers (docs/s3.md). */
struct trove_bg *cli_mark_start(const char *store, const char *name)
{
    struct mark_job *j;
    struct trove_bg *bg = NULL;
    struct timespec now;

    if (strncmp(store, "s3://", 5) == 0)
        return NULL;
    j = calloc(1, sizeof *j);

    if (!j || !(j->store = strdup(store))) {
        free(j);
        fprintf(stderr, "trove replay: warning: no memory to record %s's last use\n", name);
        return NULL;
    }
    snprintf(j->name, sizeof j->name, "%s", name);
    clock_gettime(CLOCK_REALTIME, &now);
    j->unix_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    if (trove_bg_start(mark_run, mark_free, j, &bg) != TROVE_OK) { /* mark_free ran */
        fprintf(stderr, "trove replay: warning: cannot record %s's last use\n", name);
        return NULL;
    }
    return bg;
}

/* Wait (bounded) for the marker of a replay that finished, then let the task go. A marker
 * not written changes nothing the replay gave: quiet says nothing of it. */
void cli_mark_finish(struct trove_bg *bg, const char *name, int wait, int quiet)
{
    int rc;

    if (!bg)
        return;
    if (wait && (rc = trove_bg_wait(bg, TROVE_BG_TIMEOUT_MS_DEFAULT)) != TROVE_OK && !quiet)
        fprintf(stderr, "trove replay: warning: %s's last-used marker was not written: %s\n",
                name, trove_strerror(rc));
    trove_bg_release(bg);
}

/* Open the store at `store` read-only, check that capture `name` is there (*info), and
 * start a stream over the store's backend. Returns 0, or 1 after printing an error (*s and
 * *st, set as far as they got, are the caller's to free). */
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

/* ---- a capture walked, or read into memory ----------------------------------------------- */

/* The sink of cli_capture_walk: raw frames decoded into events and names. */
struct load_out {
    struct trove_wire_decoder *dec;
    struct trove_events *events;
    struct trove_names *names;
    cli_frames_fn frames;      /* NULL: keep every event */
    void *ctx;
    int frames_failed;         /* frames failed, and said why */
    atomic_uint_fast64_t done; /* events appended (the sender thread counts, the walker reads) */
    struct cli_progress prog;
};

static int load_send(void *ctx, const struct trove_stream_batch *b)
{
    struct load_out *o = ctx;
    struct trove_wire_frame fr;
    int rc;

    for (size_t at = 0; at < b->len; at += fr.frame_len) { /* a batch is whole frames */
        if ((rc = trove_events_reserve(o->events, TROVE_WIRE_MAX_EVENTS)) != TROVE_OK)
            return rc;
        rc = trove_wire_decode(o->dec, (const uint8_t *)b->data + at, b->len - at,
                               o->events->ev + o->events->len, TROVE_WIRE_MAX_EVENTS, o->names,
                               &fr, NULL);
        if (rc != TROVE_OK)
            return rc;
        o->events->len += fr.n_events;
        if (o->frames && (rc = o->frames(o->ctx, o->events)) != 0) {
            o->frames_failed = 1;
            return rc;
        }
    }
    atomic_fetch_add(&o->done, b->events);
    return 0;
}

static void load_item_done(void *ctx, uint64_t item)
{
    struct load_out *o = ctx;

    (void)item;
    cli_progress_update(&o->prog, atomic_load(&o->done));
}

int cli_capture_walk(const char *cmd, const char *store, const char *name, uint64_t from_ns,
                     uint64_t to_ns, int quiet, struct trove_events *events,
                     struct trove_names *names, cli_frames_fn frames, void *ctx)
{
    struct trove_capture_replay_options ro;
    struct trove_stream_options so;
    struct trove_stream_stats stats;
    struct trove_capture_info info;
    struct trove_stream_sink sink;
    struct trove_stream *st = NULL;
    struct trove_store *s = NULL;
    struct trove_bg *mark = NULL;
    struct trove_diag diag = {0};
    struct load_out o;
    size_t start = events->len;
    int rc, status = 1;

    memset(&o, 0, sizeof o);
    atomic_init(&o.done, 0);
    o.events = events;
    o.names = names;
    o.frames = frames;
    o.ctx = ctx;
    store = cli_default_store(store);
    if (trove_volume_name_check(name, &diag) != TROVE_OK)
        return cli_error(cmd, "%s", diag.msg);
    if (to_ns != UINT64_MAX && from_ns > to_ns)
        return cli_error(cmd, "--from-ns %llu is after --to-ns %llu",
                         (unsigned long long)from_ns, (unsigned long long)to_ns);
    if (trove_wire_decoder_new(&o.dec) != TROVE_OK) {
        cli_error(cmd, "out of memory");
        goto out;
    }
    trove_stream_options_default(&so);
    so.max_object = TROVE_CAPTURE_MAX_OBJECT;
    if (cli_capture_open(cmd, store, name, &so, &s, &info, &st))
        goto out;
    mark = cli_mark_start(store, name);
    memset(&ro, 0, sizeof ro);
    ro.from_ns = from_ns;
    ro.to_ns = to_ns;
    ro.wire = TROVE_WIRE_RAW; /* decoded right away: the cheapest frames */
    memset(&sink, 0, sizeof sink);
    sink.send = load_send;
    sink.item_done = load_item_done;
    sink.ctx = &o;
    cli_progress_begin(&o.prog, "reading the capture",
                       from_ns == 0 && to_ns == UINT64_MAX ? info.events : 0);
    o.prog.active = o.prog.active && !quiet;
    rc = trove_capture_replay(s, name, st, &ro, &sink, &stats, &diag);
    cli_progress_end(&o.prog);
    if (rc == TROVE_ERR_SEND)
        rc = stats.send_error;
    if (rc != TROVE_OK && o.frames_failed)
        goto out; /* frames said what failed */
    if (rc != TROVE_OK) {
        char pre[TROVE_VOLUME_NAME_MAX + 16];
        snprintf(pre, sizeof pre, "capture %s: ", name);
        if (strncmp(diag.msg, pre, strlen(pre)) == 0) /* the replay named it already */
            cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
        else
            cli_error(cmd, "capture %s: %s", name, cli_diag_msg(&diag, rc));
        goto out;
    }
    status = 0;
out:
    cli_mark_finish(mark, name, status == 0, quiet);
    if (status && !frames)
        events->len = start;
    trove_stream_free(st);
    trove_store_close(s);
    trove_wire_decoder_free(o.dec);
    return status;
}

int cli_capture_load(const char *cmd, const char *store, const char *name, uint64_t from_ns,
                     uint64_t to_ns, int quiet, struct trove_events *events,
                     struct trove_names *names)
{
    return cli_capture_walk(cmd, store, name, from_ns, to_ns, quiet, events, names, NULL, NULL);
}

int cli_capture_flows(const char *cmd, const char *store, const char *name, uint64_t from_ns,
                      uint64_t to_ns, struct trove_flows *flows)
{
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int rc;

    if (cli_store_open(cmd, cli_default_store(store), TROVE_STORE_READONLY, &s))
        return 1;
    rc = trove_capture_read_flows(s, name, from_ns, to_ns, flows, &diag);
    trove_store_close(s);
    if (rc != TROVE_OK)
        return cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
    return 0;
}

int cli_capture_profile_into(const char *cmd, const char *store, const char *name,
                             struct trove_profile *p)
{
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int rc;

    if (cli_store_open(cmd, cli_default_store(store), TROVE_STORE_READONLY, &s))
        return 1;
    rc = trove_capture_read_profile(s, name, p, &diag);
    trove_store_close(s);
    if (rc != TROVE_OK)
        return cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
    return 0;
}

int cli_capture_profile(const char *cmd, const char *store, const char *name, uint64_t from_ns,
                        uint64_t to_ns, struct trove_profile **out)
{
    struct trove_store *s = NULL;
    struct trove_profile *p = NULL, *cut = NULL;
    struct trove_diag diag = {0};
    int rc;

    *out = NULL;
    if (cli_store_open(cmd, cli_default_store(store), TROVE_STORE_READONLY, &s))
        return 1;
    if ((rc = trove_profile_new(&p)) == TROVE_OK)
        rc = trove_capture_read_profile(s, name, p, &diag);
    trove_store_close(s);
    if (rc != TROVE_OK) {
        trove_profile_free(p);
        return cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
    }
    if (trove_profile_sample_count(p) == 0 && trove_profile_switch_count(p) == 0) {
        trove_profile_free(p); /* no profile */
        return 0;
    }
    if (from_ns == 0 && to_ns == UINT64_MAX) {
        *out = p;
        return 0;
    }
    rc = trove_profile_slice(p, from_ns, to_ns, &cut);
    trove_profile_free(p);
    if (rc != TROVE_OK)
        return cli_error(cmd, "%s: the profile: %s", name, trove_strerror(rc));
    *out = cut;
    return 0;
}
