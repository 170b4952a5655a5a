/*
 * capture_read.c: a capture in a store, read by the input layer — the store opened
 * (trove_input_store_open), the capture's last use recorded in the background
 * (trove_input_mark_start, trove_input_mark_finish), and the capture read through the
 * streaming pipeline, decoded frame by frame into a buffer that the caller empties as it
 * goes (trove_input_capture_walk, which the streamed exports use, never holding the
 * capture) or whole (store:NAME as an input), with its flows and profile.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "input_internal.h"
#include "trove/attrs.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/stream.h"
#include "trove/volume.h"
#include "trove/wire.h"

/* input_internal.h: what S3 answered, from the handle, into diag. */
int in_remote_detail(struct trove_store *s, int rc, struct trove_diag *diag)
{
    char s3[768], msg[sizeof diag->msg];
    const char *remote = trove_strerror(TROVE_ERR_REMOTE), *at;

    if (rc != TROVE_ERR_REMOTE || !s ||
        trove_backend_s3_last_error(trove_store_backend(s), s3, sizeof s3) != TROVE_OK || !s3[0])
        return rc;
    if (!diag->msg[0])
        return in_fail(diag, rc, "%s", s3);
    if ((at = strstr(diag->msg, remote)) != NULL) {
        snprintf(msg, sizeof msg, "%.*s%s%s", (int)(at - diag->msg), diag->msg, s3,
                 at + strlen(remote));
        memcpy(diag->msg, msg, sizeof msg);
    }
    return rc;
}

int trove_input_store_open(const char *dir, unsigned flags, struct trove_store **out,
                           struct trove_diag *diag)
{
    struct trove_diag local = {0};
    struct stat st;
    char volumes[4096];
    int rc;

    if (!diag)
        diag = &local;
    *out = NULL;
    /* Opening makes the store's subdirectories; without CREATE, a directory that has no
     * volumes/ is not a store, and is left as it is. */
    if (!(flags & TROVE_STORE_CREATE) && strncmp(dir, "s3://", 5) != 0 &&
        (size_t)snprintf(volumes, sizeof volumes, "%s/volumes", dir) < sizeof volumes &&
        stat(volumes, &st) != 0 && errno == ENOENT)
        rc = TROVE_ERR_NOTFOUND;
    else
        rc = trove_store_open(dir, flags, out, diag);
    if (rc == TROVE_OK)
        return TROVE_OK;
    *out = NULL;
    if (!(flags & TROVE_STORE_CREATE) && (rc == TROVE_ERR_NOTFOUND || rc == -ENOENT))
        return in_fail(diag, TROVE_ERR_NOTFOUND,
                       "no store at %s; create one with `trove volume create` or pass --store",
                       dir);
    if (diag->msg[0]) /* it names the store */
        return rc;
    return in_fail(diag, rc, "opening the store at %s: %s", dir, trove_strerror(rc));
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
struct trove_bg *trove_input_mark_start(const char *store, const char *name,
                                        struct trove_warnings *w)
{
    struct mark_job *j;
    struct trove_bg *bg = NULL;
    struct timespec now;

    if (strncmp(store, "s3://", 5) == 0)
        return NULL;
    j = calloc(1, sizeof *j);

    if (!j || !(j->store = strdup(store))) {
        free(j);
        trove_warn(w, 0, "no memory to record %s's last use", name);
        return NULL;
    }
    snprintf(j->name, sizeof j->name, "%s", name);
    clock_gettime(CLOCK_REALTIME, &now);
    j->unix_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    if (trove_bg_start(mark_run, mark_free, j, &bg) != TROVE_OK) { /* mark_free ran */
        trove_warn(w, 0, "cannot record %s's last use", name);
        return NULL;
    }
    return bg;
}

/* Wait (bounded) for the marker of a replay that finished, then let the task go. A marker
 * not written changes nothing the replay gave: quiet says nothing of it. */
void trove_input_mark_finish(struct trove_bg *bg, const char *name, int wait,
                             struct trove_warnings *w)
{
    int rc;

    if (!bg)
        return;
    if (wait && (rc = trove_bg_wait(bg, TROVE_BG_TIMEOUT_MS_DEFAULT)) != TROVE_OK)
        trove_warn(w, 0, "%s's last-used marker was not written: %s", name, trove_strerror(rc));
    trove_bg_release(bg);
}

/* Open the store at `store` read-only, check that capture `name` is there (*info), and
 * start a stream over the store's backend (*s and *st, set as far as they got, are the
 * caller's to free). */
static int capture_open(const char *store, unsigned flags, const char *name,
                        const struct trove_stream_options *so, struct trove_store **s,
                        struct trove_capture_info *info, struct trove_stream **st,
                        struct trove_diag *diag)
{
    int rc;

    if ((rc = trove_input_store_open(store, TROVE_STORE_READONLY | flags, s, diag)) != TROVE_OK)
        return rc;
    if ((rc = in_remote_detail(*s, trove_capture_info(*s, name, info, diag), diag)) != TROVE_OK) {
        if (rc == TROVE_ERR_NOTFOUND)
            return in_fail(diag, rc, "no capture named %s in %s; `trove ls --store %s` lists "
                                     "them", name, store, store);
        return diag->msg[0] ? rc : in_fail(diag, rc, "%s", trove_strerror(rc));
    }
    if ((rc = trove_stream_new(trove_store_backend(*s), so, st)) != TROVE_OK)
        return in_fail(diag, rc, "starting the stream: %s", trove_strerror(rc));
    return TROVE_OK;
}

/* ---- a capture walked, or read into memory ----------------------------------------------- */

/* The sink of trove_input_capture_walk: raw frames decoded into events and names. */
struct load_out {
    struct trove_wire_decoder *dec;
    struct trove_events *events;
    struct trove_names *names;
    trove_input_frames_fn frames; /* NULL: keep every event */
    void *ctx;
    int frames_rc;             /* frames failed with this, and said why */
    atomic_uint_fast64_t done; /* events appended (the sender thread counts, the walker reads) */
    const struct trove_input_options *opt;
    uint64_t total;
    /* opt->attrs of a window: the attrs frame before the next events frame (has_held), its
     * rows going to opt->attrs by base + the event's index among those walked */
    struct trove_attrs held;
    int has_held;
    uint64_t base, walked;
};

/* An attrs frame's rows kept for the events frame after it; that frame's rows moved on. */
static int load_attrs(struct load_out *o, const uint8_t *p, size_t len, size_t *frame_len)
{
    struct trove_wire_header wh;
    int rc;

    if ((rc = trove_wire_parse_header(p, len, &wh, NULL)) != TROVE_OK)
        return rc;
    *frame_len = TROVE_WIRE_HEADER_SIZE + (size_t)wh.payload_len;
    trove_attrs_free(&o->held);
    if ((rc = trove_attrs_wire_decode(p, *frame_len, &o->held, NULL)) != TROVE_OK)
        return rc;
    o->has_held = 1;
    return TROVE_OK;
}

static int load_rows(struct load_out *o, size_t n)
{
    int rc = TROVE_OK;

    if (o->has_held && o->held.n) {
        if (o->held.rows[o->held.n - 1].event >= n)
            rc = TROVE_ERR_CORRUPT; /* the replay made it: not for a reader to see */
        else
            rc = trove_attrs_append(o->opt->attrs, &o->held, 0, o->held.n, o->base + o->walked, 0);
    }
    trove_attrs_free(&o->held);
    o->has_held = 0;
    o->walked += n;
    return rc;
}

static int load_send(void *ctx, const struct trove_stream_batch *b)
{
    struct load_out *o = ctx;
    struct trove_wire_frame fr;
    int rc;

    for (size_t at = 0; at < b->len; at += fr.frame_len) { /* a batch is whole frames */
        const uint8_t *p = (const uint8_t *)b->data + at;
        if (b->len - at > 2 && p[2] == TROVE_WIRE_ATTRS) {
            if ((rc = load_attrs(o, p, b->len - at, &fr.frame_len)) != TROVE_OK)
                return rc;
            continue;
        }
        if ((rc = trove_events_reserve(o->events, TROVE_WIRE_MAX_EVENTS)) != TROVE_OK)
            return rc;
        rc = trove_wire_decode(o->dec, p, b->len - at, o->events->ev + o->events->len,
                               TROVE_WIRE_MAX_EVENTS, o->names, &fr, NULL);
        if (rc != TROVE_OK)
            return rc;
        if (fr.format != TROVE_WIRE_NAMES && (rc = load_rows(o, fr.n_events)) != TROVE_OK)
            return rc;
        o->events->len += fr.n_events;
        if (o->frames && (rc = o->frames(o->ctx, o->events)) != 0) {
            o->frames_rc = rc < 0 ? rc : TROVE_ERR_SEND;
            return o->frames_rc;
        }
    }
    atomic_fetch_add(&o->done, b->events);
    return 0;
}

static void load_item_done(void *ctx, uint64_t item)
{
    struct load_out *o = ctx;

    (void)item;
    in_progress(o->opt, "reading the capture", atomic_load(&o->done), o->total);
}

int trove_input_capture_walk(const char *store, const char *name, uint64_t from_ns,
                             uint64_t to_ns, const struct trove_input_options *opt,
                             struct trove_events *events, struct trove_names *names,
                             trove_input_frames_fn frames, void *ctx, struct trove_diag *diag)
{
    static const struct trove_input_options none;
    struct trove_capture_replay_options ro;
    struct trove_stream_options so;
    struct trove_stream_stats stats;
    struct trove_capture_info info;
    struct trove_stream_sink sink;
    struct trove_stream *st = NULL;
    struct trove_store *s = NULL;
    struct trove_bg *mark = NULL;
    struct trove_diag local = {0}, d = {0};
    struct load_out o;
    struct trove_attrs all;
    size_t start = events->len, rows_start = opt && opt->attrs ? opt->attrs->n : 0;
    int rc;

    if (!diag)
        diag = &local;
    opt = opt ? opt : &none;
    memset(&o, 0, sizeof o);
    atomic_init(&o.done, 0);
    o.events = events;
    o.names = names;
    o.frames = frames;
    o.ctx = ctx;
    o.opt = opt;
    o.base = start;
    memset(&all, 0, sizeof all);
    store = trove_input_default_store(store);
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK)
        return rc;
    if (to_ns != UINT64_MAX && from_ns > to_ns)
        return in_fail(diag, TROVE_ERR_INVALID, "--from-ns %llu is after --to-ns %llu",
                       (unsigned long long)from_ns, (unsigned long long)to_ns);
    if (trove_wire_decoder_new(&o.dec) != TROVE_OK) {
        rc = in_fail(diag, TROVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    trove_stream_options_default(&so);
    so.max_object = TROVE_CAPTURE_MAX_OBJECT;
    if ((rc = capture_open(store, opt->store_flags, name, &so, &s, &info, &st, diag)) != TROVE_OK)
        goto out;
    mark = trove_input_mark_start(store, name, opt->warnings);
    memset(&ro, 0, sizeof ro);
    ro.from_ns = from_ns;
    ro.to_ns = to_ns;
    ro.wire = TROVE_WIRE_RAW; /* decoded right away: the cheapest frames */
    if (opt->attrs) {
        /* the rows by capture index; the whole capture's kept as they are, a window's
         * through the replay's attrs frames, which say which of its events are sent */
        if ((rc = in_remote_detail(s, trove_capture_read_attrs(s, name, &all, opt->meta, diag),
                                   diag)) != TROVE_OK)
            goto out;
        if (from_ns == 0 && to_ns == UINT64_MAX) {
            if ((rc = trove_attrs_append(opt->attrs, &all, 0, all.n, start, 0)) != TROVE_OK) {
                rc = in_fail(diag, rc, "capture %s: keeping attributes: %s", name,
                             trove_strerror(rc));
                goto out;
            }
        } else {
            ro.attrs = &all;
        }
    }
    memset(&sink, 0, sizeof sink);
    sink.send = load_send;
    sink.item_done = load_item_done;
    sink.ctx = &o;
    o.total = from_ns == 0 && to_ns == UINT64_MAX ? info.events : 0;
    in_progress(opt, "reading the capture", 0, o.total);
    rc = trove_capture_replay(s, name, st, &ro, &sink, &stats, &d);
    in_remote_detail(s, rc, &d);
    in_progress(opt, "reading the capture", UINT64_MAX, o.total);
    if (rc == TROVE_ERR_SEND)
        rc = stats.send_error;
    if (rc != TROVE_OK && o.frames_rc) {
        rc = o.frames_rc; /* frames said what failed */
        goto out;
    }
    if (rc != TROVE_OK) {
        char pre[TROVE_VOLUME_NAME_MAX + 16];
        snprintf(pre, sizeof pre, "capture %s: ", name);
        if (strncmp(d.msg, pre, strlen(pre)) == 0) /* the replay named it already */
            trove_diag_set(diag, rc, d.offset, "%s", in_msg(&d, rc));
        else
            trove_diag_set(diag, rc, d.offset, "capture %s: %s", name, in_msg(&d, rc));
        goto out;
    }
    rc = TROVE_OK;
out:
    trove_input_mark_finish(mark, name, rc == TROVE_OK, opt->warnings);
    if (rc != TROVE_OK && !frames)
        events->len = start;
    if (rc != TROVE_OK && opt->attrs)
        opt->attrs->n = rows_start;
    trove_attrs_free(&all);
    trove_attrs_free(&o.held);
    trove_stream_free(st);
    trove_store_close(s);
    trove_wire_decoder_free(o.dec);
    return rc;
}

int trove_input_capture_flows(const char *store, const char *name, uint64_t from_ns,
                              uint64_t to_ns, struct trove_flows *flows, struct trove_diag *diag)
{
    struct trove_store *s = NULL;
    struct trove_diag local = {0};
    int rc;

    if (!diag)
        diag = &local;
    if ((rc = trove_input_store_open(trove_input_default_store(store), TROVE_STORE_READONLY, &s,
                                     diag)) != TROVE_OK)
        return rc;
    rc = in_remote_detail(s, trove_capture_read_flows(s, name, from_ns, to_ns, flows, diag), diag);
    trove_store_close(s);
    if (rc != TROVE_OK && !diag->msg[0])
        in_fail(diag, rc, "%s", trove_strerror(rc));
    return rc;
}

int in_capture_profile_into(const char *store, const char *name, struct trove_profile *p,
                            struct trove_diag *diag)
{
    struct trove_store *s = NULL;
    int rc;

    if ((rc = trove_input_store_open(trove_input_default_store(store), TROVE_STORE_READONLY, &s,
                                     diag)) != TROVE_OK)
        return rc;
    rc = in_remote_detail(s, trove_capture_read_profile(s, name, p, diag), diag);
    trove_store_close(s);
    if (rc != TROVE_OK && !diag->msg[0])
        in_fail(diag, rc, "%s", trove_strerror(rc));
    return rc;
}

int trove_input_capture_profile(const char *store, const char *name, uint64_t from_ns,
                                uint64_t to_ns, struct trove_profile **out,
                                struct trove_diag *diag)
{
    struct trove_profile *p = NULL, *cut = NULL;
    struct trove_diag local = {0};
    int rc;

    if (!diag)
        diag = &local;
    *out = NULL;
    if ((rc = trove_profile_new(&p)) != TROVE_OK)
        return in_fail(diag, rc, "out of memory");
    if ((rc = in_capture_profile_into(store, name, p, diag)) != TROVE_OK) {
        trove_profile_free(p);
        return rc;
    }
    if (trove_profile_sample_count(p) == 0 && trove_profile_switch_count(p) == 0) {
        trove_profile_free(p); /* no profile */
        return TROVE_OK;
    }
    if (from_ns == 0 && to_ns == UINT64_MAX) {
        *out = p;
        return TROVE_OK;
    }
    rc = trove_profile_slice(p, from_ns, to_ns, &cut);
    trove_profile_free(p);
    if (rc != TROVE_OK)
        return in_fail(diag, rc, "%s: the profile: %s", name, trove_strerror(rc));
    *out = cut;
    return TROVE_OK;
}
