/*
 * cmd_replay.c: `trove replay` (with --url, parsed here and run against a service by
 * cmd_remote.c).
 *
 * replay streams through a trove_stream: the prefetcher downloads segments ahead and the
 * sender thread writes one frame while the next is decoded. Its sink writes the frames to
 * -o FILE (through trove_output: a file appears only when complete) or to stdout; on a
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
            so.depth = v ? (uint32_t)v : TROVE_STREAM_NO_PREFETCH; /* 0: none */
        } else if (!strcmp(a, "--budget") && has_value) {
            if (cli_parse_size(argv[++i], &so.budget))
                return cli_error("replay", "--budget: '%s' is not a byte count (K, M, G: powers "
                                           "of 1024)", argv[i]);
            if (so.budget == 0) /* nothing may be held ahead: no prefetching */
                so.depth = TROVE_STREAM_NO_PREFETCH;
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
    cli_store_close(s);
    trove_wire_decoder_free(o.dec);
    trove_names_free(o.names);
    free(o.ev);
    return status;
}
