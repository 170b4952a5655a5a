/*
 * cmd_capture.c: captures in the store (include/trove/capture.h) — `trove import IN --store
 * DIR` (cmd_import parses it and calls cli_capture_import), `trove ls` and `trove replay`
 * (with --url, parsed here and run against a service by cmd_remote.c).
 *
 * replay streams through a trove_stream: the prefetcher downloads segments ahead and the
 * sender thread writes one frame while the next is decoded. Its sink writes the frames to
 * -o FILE (through cli_out: a file appears only when complete) or to stdout; on a
 * terminal, without -o, it prints the events as `trove cat` does instead. Ctrl-C (or SIGTERM) cancels the stream:
 * the handler only writes a byte to a pipe, and a watcher thread reading the pipe calls
 * trove_stream_cancel (which takes a lock, so it cannot run in the handler); the run then
 * ends, every thread joined, and the command exits 130 with the partial output removed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "trove/profile.h"
#include "trove/capture.h"
#include "trove/stream.h"

#define STORE_HELP                                                                               \
    "  --store DIR        the store (default: $TROVE_STORE if set, else ./trove-data)\n"


/* ---- import ------------------------------------------------------------------------------ */

static void import_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct cli_progress *p = ctx;
    p->total = total;
    cli_progress_update(p, done);
}

static void print_info_json(FILE *o, const char *name, const struct trove_capture_info *i,
                            int new_objects)
{
    fputs("{\"name\":", o);
    cli_json_string(o, name, strlen(name));
    fprintf(o, ",\"events\":%llu,\"segments\":%llu,\"names\":%llu,\"first_ns\":%llu,"
               "\"end_ns\":%llu,\"raw_bytes\":%llu,\"stored_bytes\":%llu",
            (unsigned long long)i->events, (unsigned long long)i->segments,
            (unsigned long long)i->names, (unsigned long long)i->first_ns,
            (unsigned long long)i->end_ns, (unsigned long long)i->raw_bytes,
            (unsigned long long)i->stored_bytes);
    if (i->samples || i->switches) /* a profile (header v3): only then, as before it existed */
        fprintf(o, ",\"samples\":%llu,\"switches\":%llu", (unsigned long long)i->samples,
                (unsigned long long)i->switches);
    if (i->flags & TROVE_CAPTURE_FLAG_COLUMNAR) /* only then, as before it existed */
        fputs(",\"segment_format\":\"columnar\"", o);
    if (new_objects)
        fprintf(o, ",\"new_objects\":%llu,\"new_bytes\":%llu", (unsigned long long)i->new_objects,
                (unsigned long long)i->new_bytes);
}

int cli_capture_import(const struct cli_capture_import *ci)
{
    struct cli_load_options lo = ci->lo;
    struct trove_capture_options opt;
    struct trove_capture_info info;
    struct trove_events ev = {0};
    struct trove_flows flows = {0};
    struct trove_names *names = NULL;
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    struct cli_progress prog;
    const char *store = cli_default_store(ci->store);
    int rc, status = 1;

    if (trove_volume_name_check(ci->name, &diag) != TROVE_OK)
        return cli_error("import", "'%s' is not a capture name: %s%s", ci->name, diag.msg,
                         ci->name_defaulted ? " (it comes from IN's name; give one with --name)"
                                            : "");
    lo.quiet = ci->quiet;
    if (trove_names_new(&names) != TROVE_OK) {
        cli_error("import", "out of memory");
        goto out;
    }
    if (trove_profile_new(&lo.profile) != TROVE_OK) {
        cli_error("import", "out of memory");
        goto out;
    }
    if (cli_load_flows("import", ci->in, &lo, &ev, names, &flows) != 0)
        goto out;
    if (cli_store_open("import", store, TROVE_STORE_CREATE, &s))
        goto out;
    memset(&opt, 0, sizeof opt);
    opt.segment_bytes = ci->segment_bytes;
    opt.segment_format = ci->segment_format;
    opt.progress = import_progress;
    opt.progress_ctx = &prog;
    cli_progress_begin(&prog, "storing", 0);
    rc = trove_capture_write_profile(s, ci->name, ev.ev, ev.len, names, flows.f, flows.len,
                                     lo.profile, &opt, &info, &diag);
    cli_progress_end(&prog);
    if (rc != TROVE_OK) {
        cli_error("import", "%s -> capture %s in %s: %s", ci->in, ci->name, store,
                  cli_diag_msg(&diag, rc));
        goto out;
    }
    if (ci->json) {
        print_info_json(stdout, ci->name, &info, 1);
        putchar('}');
        putchar('\n');
        if (fflush(stdout) != 0) {
            cli_error("import", "writing stdout: %s", strerror(errno));
            goto out;
        }
    }
    if (!ci->quiet && !ci->json)
        fprintf(stderr,
                "trove import: %s -> capture %s in %s: %llu events, %llu names, %llu segments;\n"
                "  %llu bytes stored for %llu raw, %llu new object%s\n",
                ci->in, ci->name, store, (unsigned long long)info.events,
                (unsigned long long)info.names, (unsigned long long)info.segments,
                (unsigned long long)info.stored_bytes, (unsigned long long)info.raw_bytes,
                (unsigned long long)info.new_objects, info.new_objects == 1 ? "" : "s");
    if (!ci->quiet && !ci->json && (info.samples || info.switches))
        fprintf(stderr, "  and a profile of %llu samples and %llu context switches\n",
                (unsigned long long)info.samples, (unsigned long long)info.switches);
    status = 0;
out:
    trove_store_close(s);
    trove_events_free(&ev);
    trove_flows_free(&flows);
    trove_profile_free(lo.profile);
    trove_names_free(names);
    return status;
}

/* ---- ls ---------------------------------------------------------------------------------- */

static const struct cli_store_usage ls_usage = {
    "usage: trove ls [--json] [--store DIR]\n"
    "       trove ls --url URL [--token-file FILE] [--json]\n"
    "\n"
    "List the captures of the store by name, one a line: events, segments (\"columnar\n"
    "segments\" when they are format 5: --segment-format) and samples (a capture of\n"
    "samples alone: its samples only), how long it is and where it starts on its clock\n"
    "(in seconds; --json gives the nanoseconds), the bytes stored and when it was last\n"
    "replayed. A capture whose header cannot be read, or a volume whose recipe cannot be\n"
    "read (it may be a capture), is listed with the reason; one naming objects on record\n"
    "as damaged is marked DAMAGED (importing it again heals it); ls then exits 1 after\n"
    "listing everything. Block volumes are left out (`trove\n"
    "volume ls` lists every volume). With --url, the captures of a running `trove serve`\n"
    "(GET /api/captures), a live one marked \"live\".\n"
    "  --json             one JSON array of objects {name, events, segments, names, flows,\n"
    "                     samples, switches, first_ns, end_ns, raw_bytes, stored_bytes,\n"
    "                     segment_format, damaged, last_used_ns (Unix ns, or null)},\n"
    "                     or {name, error, damaged} (docs/serve.md, \"A capture as JSON\");\n"
    "                     with --url, the service's array as it sent it: the same keys\n"
    "                     and live\n"
    STORE_HELP REMOTE_HELP,
    CLI_OPT_JSON | CLI_OPT_URL | CLI_OPT_TOKEN_FILE, 0, 0, 0};

/* trove_store_damaged's callback: one more damaged slot for the capture of that name. */
struct ls_damage {
    const struct trove_capture_entry *e;
    uint64_t *slots; /* per entry of e */
    size_t n;
};

static int ls_entry_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct trove_capture_entry *)elem)->name);
}

static int ls_note_damage(void *ctx, const struct trove_digest *d, const char *volume,
                          uint64_t slot)
{
    struct ls_damage *x = ctx;
    const struct trove_capture_entry *hit = bsearch(volume, x->e, x->n, sizeof *x->e, ls_entry_cmp);

    (void)d;
    (void)slot;
    if (hit) /* e is sorted by name; a block volume is not listed */
        x->slots[hit - x->e]++;
    return 0;
}

int cmd_ls(int argc, char **argv)
{
    struct cli_store_args a;
    struct trove_store *s = NULL;
    struct trove_capture_entry *e = NULL;
    struct trove_bytes jb = {0};
    struct ls_damage dmg = {0};
    size_t n = 0, width = 4, unreadable = 0, damaged = 0;
    int json, rc, status = 1;

    if ((rc = cli_store_args_parse("ls", argc, argv, &ls_usage, &a)) >= 0)
        return rc;
    json = (a.given & CLI_OPT_JSON) != 0;
    if (a.url || a.token_file) {
        struct cli_remote_args ra;
        if (!a.url)
            return cli_error("ls", "--token-file goes with --url URL");
        if (cli_exclusive("ls", a.store_given, "--store", 1, "--url"))
            return 2;
        memset(&ra, 0, sizeof ra);
        ra.url = a.url;
        ra.token_file = a.token_file;
        ra.json = json;
        ra.quiet = (a.given & CLI_OPT_QUIET) != 0;
        return cli_remote_ls(&ra);
    }
    if (cli_store_open("ls", a.store, TROVE_STORE_READONLY, &s))
        return 1;
    if ((rc = trove_capture_list(s, &e, &n)) != TROVE_OK) {
        cli_error("ls", "listing %s: %s", a.store, trove_strerror(rc));
        goto out;
    }
    /* The damage on record (the store's quarantine), by capture: nothing to walk when
     * there is none. */
    dmg.e = e;
    dmg.n = n;
    if (n > 0 && !(dmg.slots = calloc(n, sizeof *dmg.slots))) {
        cli_error("ls", "out of memory");
        goto out;
    }
    if (n > 0 && (rc = trove_store_damaged(s, ls_note_damage, &dmg)) != TROVE_OK) {
        cli_error("ls", "looking for damage on record in %s: %s", a.store, trove_strerror(rc));
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (strlen(e[i].name) > width)
            width = strlen(e[i].name);
    if (json)
        putchar('[');
    for (size_t i = 0; i < n; i++) {
        struct trove_diag diag = {0};
        const char *msg = "";
        struct trove_capture_listing l;
        memset(&l, 0, sizeof l);
        l.name = e[i].name;
        l.info = e[i].info;
        l.damaged = dmg.slots[i];
        damaged += l.damaged > 0;
        /* The marker is bookkeeping: a missing or damaged one reads as never used. */
        l.have_used = trove_capture_last_used(a.store, e[i].name, &l.last_used_ns) == TROVE_OK;
        if (e[i].error == TROVE_OK &&
            (rc = trove_capture_samples_span(s, e[i].name, &l.info, &diag)) != TROVE_OK)
            e[i].error = rc; /* its profile cannot be read: listed as unreadable */
        if (e[i].error != TROVE_OK) {
            /* The list has the code; asking again gives the message. */
            struct trove_capture_info info;
            if (!diag.msg[0])
                rc = trove_capture_info(s, e[i].name, &info, &diag);
            msg = cli_diag_msg(&diag, rc != TROVE_OK ? rc : e[i].error);
            unreadable++;
        }
        if (json) {
            if (i)
                putchar(',');
            if (e[i].error == TROVE_OK) {
                jb.len = 0;
                if (trove_capture_listing_json(&l, &jb) != TROVE_OK) {
                    cli_error("ls", "out of memory");
                    goto out;
                }
                printf("{%.*s}", (int)jb.len, (const char *)jb.ptr);
                continue;
            }
            fputs("{\"name\":", stdout);
            cli_json_string(stdout, e[i].name, strlen(e[i].name));
            fputs(",\"error\":", stdout);
            cli_json_string(stdout, msg, strlen(msg));
            printf(",\"damaged\":%llu}", (unsigned long long)l.damaged);
        } else if (e[i].error != TROVE_OK) {
            printf("%-*s unreadable: %s\n", (int)width, e[i].name, msg);
        } else {
            const struct trove_capture_info *c = &l.info;
            struct cli_capture_line cl = {e[i].name, c->events, c->segments, c->first_ns,
                                          c->end_ns, c->stored_bytes, l.last_used_ns, 1,
                                          l.have_used, 0,
                                          (c->flags & TROVE_CAPTURE_FLAG_COLUMNAR) != 0,
                                          c->samples, l.damaged};
            cli_print_capture_line(stdout, (int)width, &cl);
        }
    }
    if (json)
        puts("]");
    if (fflush(stdout) != 0) {
        cli_error("ls", "writing stdout: %s", strerror(errno));
        goto out;
    }
    if (unreadable)
        cli_error("ls", "%s: %zu of %zu captures cannot be read (listed above; `trove verify "
                  "--store %s` says more)",
                  a.store, unreadable, n, a.store);
    if (damaged)
        cli_error("ls", "%s: %zu of %zu captures have damaged objects on record (marked "
                  "above); `trove verify --store %s` lists them, and importing each capture "
                  "again heals it",
                  a.store, damaged, n, a.store);
    if (unreadable || damaged)
        goto out;
    status = 0;
out:
    free(e);
    free(dmg.slots);
    trove_bytes_free(&jb);
    trove_store_close(s);
    return status;
}

/* ---- replay ------------------------------------------------------------------------------ */

static void replay_usage(FILE *f)
{
    fprintf(f,
            "usage: trove replay NAME [--from-ns A] [--to-ns B] [--wire raw|packed|deflate]\n"
            "                    [--batch N] [-o FILE] [--depth N] [--budget SIZE]\n"
            "                    [--no-sender | --send-queue N] [--no-verify] [--json] [-q]\n"
            "                    [--store DIR]\n"
            "       trove replay NAME --url URL [--token-file FILE] [--from-ns A] [--to-ns B]\n"
            "                    [--wire raw|packed|deflate] [--speed max|1|K] [-o FILE]\n"
            "                    [--json] [-q]\n"
            "\n"
            "Stream capture NAME out of the store as a wire stream: its names, then the events\n"
            "that start in [A, B), in stored order. A stored frame that needs no change is sent\n"
            "as it is. On a terminal, without -o, the events are printed as `trove cat` prints\n"
            "them. Ctrl-C (or SIGTERM) stops the replay (exit 130, or 143) and leaves no partial\n"
            "-o FILE; a second one ends it at once (a write blocked on a full pipe cannot\n"
            "see the first). A replay of over a second shows its progress on stderr when that is\n"
            "a terminal and the events go elsewhere. The capture's last use (`trove ls`) is\n"
            "recorded in the background and waited for, at most 30 s, only once the replay\n"
            "has finished. Every object is checked against its name before a byte of it goes out;\n"
            "a damaged one stops the replay with an error naming the segment and the object.\n"
            "  --from-ns A        events that start at or after A ns (default 0)\n"
            "  --to-ns B          ... and before B ns (default: to the end)\n"
            "  --wire W           raw, packed (the default) or deflate frames (--to is the\n"
            "                     same)\n"
            "  --batch N          events per frame, 1..65536 (default: as stored;\n"
            "                     --frame-events is the same)\n"            "  -o FILE            write to FILE (complete or not at all); default stdout\n"
            "  --depth N          segments downloaded ahead (default 4, at most 32; 0: none)\n"
            "  --budget SIZE      bytes they may hold at most (default 64M)\n"
            "  --no-sender        write from the walker's thread instead of a sender thread\n"
            "  --send-queue N     let the sender thread queue N batches (1..1024) instead of\n"
            "                     taking one at a time (the default)\n"
            "  --json             print the result as one JSON object on stdout: capture,\n"
            "                     output, wire, events, batches, bytes (needs -o FILE)\n"
            "  -q, --quiet        no summary on stderr\n"
            "  -v, --verbose      also how the stream went: segments prefetched or read by the\n"
            "                     walker, the depth used, the most bytes held at once\n"
            NO_VERIFY_HELP STORE_HELP
            "  --url URL          replay capture NAME of a running `trove serve`\n"
            "                     (http://HOST:PORT/) instead, over its WebSocket /api/replay:\n"
            "                     the same events, in frames of the --wire asked for; complete\n"
            "                     only when the service says it ended with as many events\n"
            "  --token-file FILE  with --url: the service's token, the file's first line\n"
            "                     (default: $TROVE_TOKEN if set), sent as Authorization: Bearer\n"
            "  --speed S          with --url: max (the default: as fast as they are taken), 1\n"
            "                     (paced by the events' own times) or K (K times faster)\n");
}

/* The sink: frames to a file, or events as text. */
struct replay_out {
    FILE *f;
    int text;
    int err; /* errno of the first failed write */
    struct trove_wire_decoder *dec;
    struct trove_event *ev;
    struct trove_names *names;
    atomic_uint_fast64_t events; /* sent (the sender thread counts, the walker reads) */
    struct cli_progress prog;    /* the walker's, at each item done */
};

/* Progress on a terminal's stderr while the output goes elsewhere: events sent so far. */
static void replay_item_done(void *ctx, uint64_t item)
{
    struct replay_out *o = ctx;

    (void)item;
    cli_progress_update(&o->prog, atomic_load(&o->events));
}

static int replay_send(void *ctx, const struct trove_stream_batch *b)
{
    struct replay_out *o = ctx;
    struct trove_wire_frame fr;
    int rc;

    atomic_fetch_add(&o->events, b->events);

    if (!o->text) {
        if (fwrite(b->data, 1, b->len, o->f) != b->len) {
            o->err = errno ? errno : EIO;
            return -o->err;
        }
        return 0;
    }
    for (size_t at = 0; at < b->len; at += fr.frame_len) { /* a batch is whole frames */
        rc = trove_wire_decode(o->dec, (const uint8_t *)b->data + at, b->len - at, o->ev,
                               TROVE_WIRE_MAX_EVENTS, o->names, &fr, NULL);
        if (rc != TROVE_OK)
            return rc;
        for (size_t i = 0; i < fr.n_events; i++)
            cli_print_event(o->f, &o->ev[i], o->names, 0);
    }
    if (ferror(o->f)) {
        o->err = errno ? errno : EIO;
        return -o->err;
    }
    return 0;
}

/* Ctrl-C: the handler writes a byte, the watcher cancels the stream. */
static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int e = errno;
    char c = (char)sig;
    ssize_t r = write(sig_pipe[1], &c, 1);
    (void)r;
    errno = e;
}

struct watcher {
    struct trove_stream *st;
    int fired; /* the signal that cancelled the run, or 0 */
};

static void *watch(void *arg)
{
    struct watcher *w = arg;
    char c;
    ssize_t r;
    while ((r = read(sig_pipe[0], &c, 1)) < 0 && errno == EINTR)
        ;
    if (r == 1 && c != 0) { /* a signal's number; 0 is stop_watching's "the run is over" */
        w->fired = (unsigned char)c;
        trove_stream_cancel(w->st);
    }
    return NULL;
}

/* Route SIGINT and SIGTERM to the pipe, once: SA_RESETHAND gives a second Ctrl-C its
 * default action, so a sink stuck in a write (a pipe nobody reads) can still be ended. A
 * signal the process inherited as ignored (a background job of a script) stays ignored.
 * Returns 1 if the handlers are in place. */
static void catch_one(int sig, struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, old) == 0 && old->sa_handler == SIG_IGN)
        sigaction(sig, old, NULL);
}

static int catch_signals(struct sigaction *old_int, struct sigaction *old_term)
{
    if (pipe(sig_pipe) != 0) {
        sig_pipe[0] = sig_pipe[1] = -1;
        return 0; /* Ctrl-C keeps its default action: the process ends */
    }
    catch_one(SIGINT, old_int);
    catch_one(SIGTERM, old_term);
    return 1;
}

static void release_signals(const struct sigaction *old_int, const struct sigaction *old_term)
{
    sigaction(SIGINT, old_int, NULL);
    sigaction(SIGTERM, old_term, NULL);
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    sig_pipe[0] = sig_pipe[1] = -1;
}

/* End the watcher: a byte it has not read means a signal came; else wake it with one. */
static void stop_watching(pthread_t *watcher, int watching)
{
    static const char done = 0;
    ssize_t r;
    if (!watching)
        return;
    r = write(sig_pipe[1], &done, 1);
    (void)r;
    pthread_join(*watcher, NULL);
}

int cmd_replay(int argc, char **argv)
{
    struct trove_capture_replay_options ro;
    struct trove_stream_options so;
    struct trove_stream_stats stats;
    struct trove_capture_info info;
    struct trove_stream_sink sink;
    struct trove_stream *st = NULL;
    struct trove_store *s = NULL;
    struct trove_bg *mark = NULL;
    struct trove_warnings mark_warn = {0};
    struct trove_diag diag = {0};
    struct replay_out o;
    struct watcher w = {NULL, 0};
    struct sigaction old_int, old_term;
    pthread_t watcher;
    const char *name = NULL, *out = NULL, *store = NULL, *local_only = NULL, *speed = NULL;
    struct trove_output dest = {0};
    struct cli_common co;
    uint64_t v;
    int rc, status = 1, quiet = 0, watching = 0, handled = 0, no_sender = 0, send_queue = 0;

    memset(&ro, 0, sizeof ro);
    memset(&o, 0, sizeof o);
    atomic_init(&o.events, 0);
    ro.to_ns = UINT64_MAX;
    trove_stream_options_default(&so);
    so.max_object = TROVE_CAPTURE_MAX_OBJECT;
    cli_common_init(&co);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc, r;
        if (cli_is_help(a)) {
            replay_usage(stdout);
            return 0;
        }
        if ((r = cli_common_opt("replay", argc, argv, &i,
                                CLI_C_WIRE | CLI_C_BATCH | CLI_C_JSON | CLI_C_QUIET |
                                    CLI_C_VERBOSE | CLI_C_STORE | CLI_C_OUTPUT | CLI_C_REMOTE,
                                &co)) == 2)
            return 2;
        /* How the local pipeline runs; the service runs its own. */
        if ((r && (co.given & CLI_C_BATCH)) || !strcmp(a, "--depth") || !strcmp(a, "--budget") ||
            !strcmp(a, "--no-sender") || !strcmp(a, "--no-verify") || !strcmp(a, "--send-queue"))
            local_only = local_only ? local_only : a;
        if (r) {
            continue;
        } else if (!strcmp(a, "--speed") && has_value) {
            speed = argv[++i];
            if (strcmp(speed, "max") != 0 &&
                (!*speed || strspn(speed, "0123456789.") != strlen(speed) ||
                 strlen(speed) > 20 || !(strtod(speed, NULL) > 0)))
                return cli_error("replay", "--speed: '%s' is not max, 1 or a positive "
                                           "multiple K", speed);
        } else if (!strcmp(a, "--from-ns") && has_value) {
            if (cli_parse_u64(argv[++i], &ro.from_ns))
                return cli_error("replay", "--from-ns: '%s' is not a count of nanoseconds", argv[i]);
        } else if (!strcmp(a, "--to-ns") && has_value) {
            if (cli_parse_u64(argv[++i], &ro.to_ns))
                return cli_error("replay", "--to-ns: '%s' is not a count of nanoseconds", argv[i]);
        } else if (!strcmp(a, "--depth") && has_value) {
            if (cli_parse_u64(argv[++i], &v) || v > TROVE_STREAM_DEPTH_MAX)
                return cli_error("replay", "--depth: '%s' is not a count in 0..%u", argv[i],
                                 TROVE_STREAM_DEPTH_MAX);
            so.depth = (uint32_t)v;
        } else if (!strcmp(a, "--budget") && has_value) {
            if (cli_parse_size(argv[++i], &so.budget))
                return cli_error("replay", "--budget: '%s' is not a byte count (K, M, G: powers "
                                           "of 1024)", argv[i]);
        } else if (!strcmp(a, "--no-sender")) {
            no_sender = 1;
            so.send_mode = TROVE_STREAM_SEND_INLINE;
        } else if (!strcmp(a, "--no-verify")) {
            cli_store_no_verify();
        } else if (!strcmp(a, "--send-queue") && has_value) {
            if (cli_parse_u64(argv[++i], &v) || v < 1 || v > TROVE_STREAM_SEND_QUEUE_MAX)
                return cli_error("replay", "--send-queue: '%s' is not a count in 1..%u", argv[i],
                                 TROVE_STREAM_SEND_QUEUE_MAX);
            so.send_mode = TROVE_STREAM_SEND_BUFFERED;
            so.send_queue = (uint32_t)v;
            send_queue = 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_error("replay", "unknown option or missing value '%s'; see `trove replay "
                                       "--help`", a);
        } else if (!name) {
            name = a;
        } else {
            return cli_error("replay", "unexpected argument '%s'; see `trove replay --help`", a);
        }
    }
    if (!name) {
        replay_usage(stderr);
        return 2;
    }
    if (cli_exclusive("replay", no_sender, "--no-sender", send_queue, "--send-queue") ||
        cli_exclusive("replay", co.json, "--json", !co.out || !strcmp(co.out, "-"),
                      "writing to stdout (give -o FILE)"))
        return 2;
    ro.wire = co.wire;
    ro.frame_events = (co.given & CLI_C_BATCH) ? (uint32_t)co.batch : 0; /* else as stored */
    out = co.out;
    store = co.store;
    quiet = co.quiet || co.json;
    if (ro.to_ns != UINT64_MAX && ro.from_ns > ro.to_ns)
        return cli_error("replay", "--from-ns %llu is after --to-ns %llu",
                         (unsigned long long)ro.from_ns, (unsigned long long)ro.to_ns);
    if (trove_volume_name_check(name, &diag) != TROVE_OK)
        return cli_error("replay", "%s", diag.msg);
    if (co.url || co.token_file) {
        struct cli_remote_args ra;
        if (!co.url)
            return cli_error("replay", "--token-file goes with --url URL");
        if (cli_exclusive("replay", (co.given & CLI_C_STORE) != 0, "--store", 1, "--url"))
            return 2;
        if (local_only)
            return cli_error("replay", "%s shapes the local stream; the service runs its own: "
                                       "drop it with --url", local_only);
        memset(&ra, 0, sizeof ra);
        ra.url = co.url;
        ra.token_file = co.token_file;
        ra.name = name;
        ra.out = out;
        ra.from_ns = ro.from_ns;
        ra.to_ns = ro.to_ns;
        ra.wire = co.wire;
        ra.speed = speed;
        ra.json = co.json;
        ra.quiet = quiet;
        return cli_remote_replay(&ra);
    }
    if (speed)
        return cli_error("replay", "--speed goes with --url; a local replay goes as fast as "
                                   "its output takes it");
    store = cli_default_store(store);

    /* Ctrl-C and SIGTERM cancel the run from here on: a signal that comes before the
     * watcher starts waits in the pipe. */
    handled = catch_signals(&old_int, &old_term);

    /* Where the frames go: FILE (through cli_out), stdout, or text on a terminal. */
    if (out && strcmp(out, "-")) {
        if (cli_out_open("replay", out, 1, &dest))
            goto out;
        o.f = dest.f;
    } else {
        o.f = stdout;
        o.text = !out && isatty(STDOUT_FILENO);
        if (!o.text && cli_out_open("replay", "-", 1, &dest))
            goto out;
    }
    if (o.text) {
        ro.wire = TROVE_WIRE_RAW; /* decoded right away: the cheapest frames */
        if (trove_wire_decoder_new(&o.dec) != TROVE_OK || trove_names_new(&o.names) != TROVE_OK ||
            !(o.ev = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *o.ev))) {
            cli_error("replay", "out of memory");
            goto out;
        }
    }
    if (cli_capture_open("replay", store, name, &so, &s, &info, &st))
        goto out;
    mark = trove_input_mark_start(store, name, &mark_warn);

    w.st = st;
    if (sig_pipe[0] >= 0 && pthread_create(&watcher, NULL, watch, &w) == 0)
        watching = 1;
    memset(&sink, 0, sizeof sink);
    sink.send = replay_send;
    sink.item_done = replay_item_done;
    sink.ctx = &o;
    /* The whole capture's events as the total, unless a range picks fewer. */
    cli_progress_begin(&o.prog, "replaying",
                       ro.from_ns == 0 && ro.to_ns == UINT64_MAX ? info.events : 0);
    o.prog.active = o.prog.active && !o.text && !quiet;
    rc = trove_capture_replay(s, name, st, &ro, &sink, &stats, &diag);
    cli_progress_end(&o.prog);
    stop_watching(&watcher, watching);
    watching = 0;
    if (rc == TROVE_ERR_CANCELLED && w.fired) {
        cli_error("replay", "interrupted (%s) after %llu events",
                  w.fired == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)stats.events);
        status = 128 + w.fired; /* as a shell reports a death by that signal */
        goto out;
    }
    if (rc == TROVE_ERR_SEND) {
        cli_error("replay", "writing %s: %s", out && strcmp(out, "-") ? out : "stdout",
                  o.err ? strerror(o.err) : trove_strerror(stats.send_error));
        goto out;
    }
    if (rc != TROVE_OK) {
        cli_error("replay", "%s", cli_diag_msg(&diag, rc));
        goto out;
    }
    if (o.text ? fflush(stdout) != 0 : cli_out_commit("replay", &dest) != 0) {
        if (o.text)
            cli_error("replay", "writing stdout: %s", strerror(errno));
        o.f = NULL;
        goto out;
    }
    o.f = NULL;
    if (co.json) {
        fputs("{\"capture\":", stdout);
        cli_json_string(stdout, name, strlen(name));
        fputs(",\"output\":", stdout);
        cli_json_string(stdout, out, strlen(out));
        printf(",\"wire\":\"%s\",\"events\":%llu,\"batches\":%llu,\"bytes\":%llu}\n",
               trove_wire_format_name(ro.wire), (unsigned long long)stats.events,
               (unsigned long long)stats.batches, (unsigned long long)stats.bytes_sent);
        if (fflush(stdout) != 0) {
            cli_error("replay", "writing stdout: %s", strerror(errno));
            goto out;
        }
    }
    if (co.verbose && !quiet)
        fprintf(stderr, "trove replay: stream: %llu segments prefetched, %llu read by the walker, "
                        "%llu retried; depth %u%s, at most %u downloads and %llu bytes held\n",
                (unsigned long long)stats.prefetched, (unsigned long long)stats.walker_reads,
                (unsigned long long)stats.retries, stats.depth,
                stats.prefetch_off ? " (prefetching off: a segment over the budget)" : "",
                stats.max_in_flight, (unsigned long long)stats.peak_held_bytes);
    if (!quiet && !o.text)
        fprintf(stderr, "trove replay: %s -> %s (%s): %llu events in %llu batches, %llu bytes\n",
                name, out && strcmp(out, "-") ? out : "stdout", trove_wire_format_name(ro.wire),
                (unsigned long long)stats.events, (unsigned long long)stats.batches,
                (unsigned long long)stats.bytes_sent);
    status = 0;
out:
    trove_input_mark_finish(mark, name, status == 0, &mark_warn);
    cli_warnings_say("replay", quiet, &mark_warn, NULL);
    stop_watching(&watcher, watching);
    cli_out_abort(&dest);
    if (handled)
        release_signals(&old_int, &old_term);
    trove_stream_free(st);
    trove_store_close(s);
    trove_wire_decoder_free(o.dec);
    trove_names_free(o.names);
    free(o.ev);
    return status;
}
