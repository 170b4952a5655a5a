/*
 * cmd_serve.c: the live commands (docs/serve.md).
 *   trove serve      the service (trove/serve.h)
 *   trove record     any input trove reads, sent to the service as a producer
 *   trove gen --live synthetic events sent live (cmd_gen.c hands over to cli_gen_live)
 *   trove watch      a headless viewer: a stats line, and the stream to a file with -o
 */
#define _GNU_SOURCE /* sigaction */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "trove/capture.h"
#include "trove/serve.h"

/* ---- signals --------------------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    static const char now[] = "trove: a second signal: exiting at once, without finishing the "
                              "stop\n";
    (void)sig;
    if (interrupted) { /* the stop is under way and the user will not wait for it */
        if (write(STDERR_FILENO, now, sizeof now - 1) < 0) {
            ; /* nowhere to say it */
        }
        /* exit_group directly: the threads are left as they are, on purpose (a sanitizer's
         * _exit would report each as leaked) */
        syscall(SYS_exit_group, 1);
    }
    interrupted = 1;
    trove_serve_stop();
}

static void catch_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !interrupted)
        ;
}

/* ---- trove serve ---------------------------------------------------------------------- */

static void serve_usage(FILE *f)
{
    fprintf(f,
            "usage: trove serve [--store DIR] [--listen ADDR:PORT] [--socket PATH]\n"
            "                   [--ingest ADDR:PORT] [--wire auto|raw|packed|deflate]\n"
            "                   [--commit-ms N] [--pass-ms N] [--max-viewer-queue BYTES]\n"
            "                   [--token-file F] [--allow-origin O]... [--allow-host H]...\n"
            "                   [--max-import BYTES] [--max-connections N] [--idle-timeout S]\n"
            "                   [--max-replays N] [--max-exports N] [--max-uploads N]\n"
            "                   [--max-producers N]\n"
            "                   [--segment-format deflate|columnar|columnar_deflate] [-q] [-v]\n"
            "\n"
            "Run the live service: producers write captures into the store through the unix\n"
            "socket (`trove record`, `trove gen --live`, the client library), viewers watch\n"
            "them over WebSocket (`trove watch`, the browser), GET /api/status reports.\n"
            "  --store DIR            the store (default $TROVE_STORE, else ./trove-data); or\n"
            "                         s3://BUCKET[/PREFIX] (docs/s3.md)\n"
            "  --listen ADDR:PORT     HTTP and WebSocket (default 127.0.0.1:7700; port 0: any)\n"
            "  --socket PATH          the producers' unix socket (default DIR/trove.sock; for a\n"
            "                         store on S3, $TROVE_SOCKET, else ./trove.sock)\n"
            "  --ingest ADDR:PORT     producers over TCP too\n"
            "  --wire W               auto (default: raw to loopback viewers, packed to others),\n"
            "                         or one format for every viewer that does not ask\n"
            "  --commit-ms N          commit each capture at least every N ms (default 1000)\n"
            "  --pass-ms N            drain the producers every N ms (default 5)\n"
            "  --max-viewer-queue B   bytes queued per viewer before its oldest batches are\n"
            "                         dropped (default 8M)\n"
            "  --token-file F         the API's token (F's first line): every request needs\n"
            "                         it; required to --listen or --ingest on a non-loopback\n"
            "                         address\n"
            "  --allow-origin O       a browser Origin (http://host:port) allowed to open\n"
            "                         WebSockets, import, delete and log in besides the\n"
            "                         service's own pages (repeatable)\n"
            "  --allow-host H         a name requests may give in Host besides the listen\n"
            "                         address and localhost, e.g. behind a proxy (repeatable;\n"
            "                         any other is refused: DNS rebinding)\n"
            "  --max-import B         the largest body POST /api/captures/import takes\n"
            "                         (default 4G)\n"
            "  --max-connections N    HTTP and WebSocket connections at once (default 1024; a\n"
            "                         quarter of them from one address; fewer when ulimit -n\n"
            "                         leaves too few descriptors beside the store's reserve)\n"
            "  --idle-timeout S       close a client that takes none of its answer, or sends\n"
            "                         none of its body, for S seconds (default 30)\n"
            "  --max-replays N        replays and from=start viewers at once (default 6)\n"
            "  --max-exports N        exports at once (default 2)\n"
            "  --max-uploads N        imports received or stored at once (default 2)\n"
            "  --max-producers N      producer connections at once (default 256)\n"
            "  --segment-format F     the frames of the segments stored (live captures and\n"
            "                         imports): deflate (default), columnar or columnar_deflate\n"
            "                         (format 5: smaller, docs/formats/capture.md)\n"
            "  -q, --quiet            only the ready line and errors\n"
            "  -v, --verbose          log every connection (the default logs problems only)\n"
            "Over a limit a request gets 503 with Retry-After (docs/serve.md, \"Limits\").\n"
            "SIGINT or SIGTERM commits every capture, closes viewers (1001) and exits 0.\n");
}


static void serve_ready(void *ctx, const char *url, const char *socket_path)
{
    (void)ctx;
    printf("trove serve: listening on %s, producers on %s\n", url, socket_path);
    fflush(stdout);
}

static void serve_log_line(void *ctx, const char *line)
{
    struct cli_serve_ctx *l = ctx;
    int problem;

    if (strstr(line, "were never committed"))
        l->lost = 1;
    problem = strstr(line, "closed:") || strstr(line, "fail") || strstr(line, "error") ||
                  strstr(line, "committing:") ||
                  strstr(line, "could not") || strstr(line, "replaces the stored capture");
    if (l->quiet || (!l->verbose && !problem))
        return;
    fprintf(stderr, "trove serve: %s\n", line);
}

static int parse_wire_auto(const char *cmd, const char *v, int *out)
{
    if (strcmp(v, "auto") == 0) {
        *out = 0;
        return 0;
    }
    *out = trove_wire_format_parse(v);
    if (*out < TROVE_WIRE_RAW || *out > TROVE_WIRE_DEFLATE)
        return cli_error(cmd, "--wire: '%s' is not auto, raw, packed or deflate", v) + 1;
    return 0;
}

static int parse_u32(const char *cmd, const char *opt, const char *v, uint32_t lo, uint32_t hi,
                     uint32_t *out)
{
    uint64_t x;
    if (cli_parse_u64(v, &x) || x < lo || x > hi)
        return cli_error(cmd, "%s: '%s' is not a number from %" PRIu32 " to %" PRIu32, opt, v, lo,
                         hi) + 1;
    *out = (uint32_t)x;
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    struct trove_serve_options so;
    struct trove_diag diag = {0};
    struct cli_serve_ctx lg = {0, 0, 0};
    const char *store = NULL, *origins[16], *hosts[16];
    size_t norigins = 0, nhosts = 0;
    int rc;

    memset(&so, 0, sizeof so);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            serve_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            lg.quiet = 1;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            lg.verbose = 1;
        } else if (!v) {
            return cli_error("serve", "unknown option or missing value '%s'; see `trove serve "
                                      "--help`", a) + 1;
        } else if (!strcmp(a, "--store")) {
            store = argv[++i];
        } else if (!strcmp(a, "--listen")) {
            so.listen = argv[++i];
        } else if (!strcmp(a, "--socket")) {
            so.socket_path = argv[++i];
        } else if (!strcmp(a, "--ingest")) {
            so.ingest = argv[++i];
        } else if (!strcmp(a, "--wire")) {
            if (parse_wire_auto("serve", argv[++i], &so.wire))
                return 2;
        } else if (!strcmp(a, "--commit-ms")) {
            if (parse_u32("serve", a, argv[++i], 1, 3600000, &so.commit_ms))
                return 2;
        } else if (!strcmp(a, "--pass-ms")) {
            if (parse_u32("serve", a, argv[++i], 1, 60000, &so.pass_ms))
                return 2;
        } else if (!strcmp(a, "--token-file")) {
            so.token_file = argv[++i];
        } else if (!strcmp(a, "--allow-origin")) {
            if (norigins == sizeof origins / sizeof origins[0])
                return cli_error("serve", "at most 16 --allow-origin") + 1;
            origins[norigins++] = argv[++i];
        } else if (!strcmp(a, "--allow-host")) {
            if (nhosts == sizeof hosts / sizeof hosts[0])
                return cli_error("serve", "at most 16 --allow-host") + 1;
            if (!*argv[i + 1] || strpbrk(argv[i + 1], ":/ []@"))
                return cli_error("serve", "--allow-host: '%s' is not a host name (no port, no "
                                          "scheme)", argv[i + 1]) + 1;
            hosts[nhosts++] = argv[++i];
        } else if (!strcmp(a, "--max-connections")) {
            if (parse_u32("serve", a, argv[++i], 16, 1000000, &so.max_connections))
                return 2;
        } else if (!strcmp(a, "--idle-timeout")) {
            uint32_t secs;
            if (parse_u32("serve", a, argv[++i], 1, 86400, &secs))
                return 2;
            so.idle_timeout_ms = secs * 1000u;
        } else if (!strcmp(a, "--max-replays")) {
            if (parse_u32("serve", a, argv[++i], 1, 1000, &so.max_replays))
                return 2;
        } else if (!strcmp(a, "--max-exports")) {
            if (parse_u32("serve", a, argv[++i], 1, 1000, &so.max_exports))
                return 2;
        } else if (!strcmp(a, "--max-uploads")) {
            if (parse_u32("serve", a, argv[++i], 1, 1000, &so.max_uploads))
                return 2;
        } else if (!strcmp(a, "--max-producers")) {
            if (parse_u32("serve", a, argv[++i], 1, 100000, &so.max_producers))
                return 2;
        } else if (!strcmp(a, "--segment-format")) {
            if (cli_parse_segment_format("serve", argv[++i], &so.segment_format))
                return 2;
        } else if (!strcmp(a, "--max-import")) {
            if (cli_parse_size(argv[++i], &so.max_import) || so.max_import == 0)
                return cli_error("serve", "--max-import: '%s' is not a size", argv[i]) + 1;
        } else if (!strcmp(a, "--max-viewer-queue")) {
            if (cli_parse_size(argv[++i], &so.max_viewer_queue) || so.max_viewer_queue < 65536)
                return cli_error("serve", "--max-viewer-queue: '%s' is not a size of at least "
                                          "64K", argv[i]) + 1;
        } else {
            return cli_error("serve", "unknown option '%s'; see `trove serve --help`", a) + 1;
        }
    }
    so.store_dir = cli_default_store(store);
    so.allow_origin = origins;
    so.nallow_origin = norigins;
    so.allow_host = hosts;
    so.nallow_host = nhosts;
    so.ready = serve_ready;
    so.log = serve_log_line;
    so.ctx = &lg;
    catch_signals();
    rc = trove_serve_run(&so, &diag);
    if (rc != TROVE_OK)
        return cli_error("serve", "%s", cli_diag_msg(&diag, rc));
    if (lg.lost)
        return cli_error("serve", "stopped; some events were never committed (see above)");
    if (!lg.quiet)
        fprintf(stderr, "trove serve: stopped; every capture is committed\n");
    return 0;
}

/* ---- producers: trove record, trove gen --live ---------------------------------------- */

/* How a producer paces its frames. */
struct pace {
    int mode;       /* 0 max, 1 realtime, 2 N events per second */
    double rate;
    uint64_t t0_ns;
    uint64_t first_start;
};

static int parse_rate(const char *cmd, const char *v, struct pace *p)
{
    uint64_t n;
    if (!strcmp(v, "max")) {
        p->mode = 0;
    } else if (!strcmp(v, "realtime")) {
        p->mode = 1;
    } else if (!cli_parse_u64(v, &n) && n > 0) {
        p->mode = 2;
        p->rate = (double)n;
    } else {
        return cli_error(cmd, "--rate: '%s' is not max, realtime or events per second", v) + 1;
    }
    return 0;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait until the frame whose first event is `first` (the sent-th event) is due. */
static void pace_wait(struct pace *p, const struct trove_event *first, uint64_t sent)
{
    uint64_t due = 0, now = mono_ns();
    if (p->mode == 1)
        due = first->start_ns > p->first_start ? first->start_ns - p->first_start : 0;
    else if (p->mode == 2)
        due = (uint64_t)((double)sent / p->rate * 1e9);
    else
        return;
    if (p->t0_ns + due > now)
        sleep_ns(p->t0_ns + due - now);
}

static void record_usage(FILE *f)
{
    fprintf(f,
            "usage: trove record NAME --from IN [--rate max|realtime|N] [--socket PATH]\n"
            "                    [--append] [--pid P] [--keep-times] [--wire W] [--batch N]\n"
            "                    [--store DIR] [--json] [-q] [-v]\n"
            "\n"
            "Send IN to the running service as capture NAME, as a producer would. The service\n"
            "answers: without --append a stored capture NAME is replaced (said on stderr), and a\n"
            "refusal, or the service closing the connection, fails with its reason. IN's events\n"
            "are moved in time, all by one amount, so that its first one starts when the first\n"
            "frame is sent: they line up with live producers' (the client library's, `gen\n"
            "--live`'s) in one capture. --keep-times sends IN's own times instead; which was\n"
            "done is said on stderr (and in --json as \"times\" and \"shift_ns\").\n" INPUT_HELP
            "  --rate R           max (default), realtime (paced by the events' own times) or\n"
            "                     N events per second\n"
            "  --socket PATH      the service's socket (default: --store DIR's socket if given,\n"
            "                     else $TROVE_SOCKET if set, else the default store's)\n"
            "  --append           continue capture NAME (the store must have it) rather than\n"
            "                     start it anew\n"
            "  --pid P            give every event (and its process and thread names) pid P,\n"
            "                     so that several recordings of one file are several processes\n"
            "  --keep-times       send IN's own event times, not moved to when they are sent\n"
            COMMON_HELP_WIRE COMMON_HELP_BATCH COMMON_HELP_INPUT
            "  --store DIR        the store whose socket to use (and of a store:NAME input)\n"
            "  --json             print the result as one JSON object on stdout\n"
            COMMON_HELP_QV
            "Exit status: 0 all sent and taken; 1 an error (a refusal, the service closing the\n"
            "connection with its reason); 2 a usage error; 3 the service stopped under it\n"
            "(\"service stopped\": what it took until then is kept; also when the service is\n"
            "killed). The same holds for sampling live, below.\n"
            "\n");
    cli_record_sample_usage(f);
}

/* names with every pid-keyed entry moved to pid (thread and process names). */
static int names_with_pid(const struct trove_names *in, uint32_t pid, struct trove_names *out)
{
    size_t n = trove_names_count(in);
    for (size_t k = 0; k < n; k++) {
        struct trove_name_entry e;
        int rc;
        trove_names_entry(in, k, &e);
        if (e.type != TROVE_NAME_EVENT)
            e.a = pid;
        if ((rc = trove_names_put(out, &e)) != TROVE_OK)
            return rc;
    }
    return TROVE_OK;
}

/* What a producer command did, for its last line: of `events` it had to send, `sent` went
 * out in whole frames and the rest did not (interrupted, or the service went away): so the
 * line adds up, events == sent + dropped, whether the command succeeded or not. */
struct sent_summary {
    const char *cmd, *capture, *how; /* how: "" or " live" */
    uint64_t events, sent, bytes, frames;
    int wire, failed, json, quiet;
    double seconds;
    const struct cli_producer *pr;
    const char *times; /* record: "sent" or "kept" (--keep-times), and the shift; gen: NULL */
    int64_t shift_ns;
};

static void print_summary(const struct sent_summary *m)
{
    uint64_t dropped = m->events - m->sent;
    const char *why = m->failed ? "not sent after the error above" : interrupted ? "interrupted" : "";
    if (m->json) {
        printf("{\"capture\":\"%s\",\"events\":%" PRIu64 ",\"sent\":%" PRIu64
               ",\"dropped\":%" PRIu64 ",\"frames\":%" PRIu64 ",\"bytes\":%" PRIu64
               ",\"wire\":\"%s\",\"seconds\":%.3f,\"interrupted\":%s,\"failed\":%s,",
               m->capture, m->events, m->sent, dropped, m->frames, m->bytes,
               trove_wire_format_name(m->wire), m->seconds, interrupted ? "true" : "false",
               m->failed ? "true" : "false");
        if (m->times)
            printf("\"times\":\"%s\",\"shift_ns\":%" PRId64 ",", m->times, m->shift_ns);
        printf("\"accept\":{\"session\":%" PRIu64 ",\"mode\":\"%s\",\"events\":%" PRIu64 "}}\n",
               m->pr->accept.session, trove_serve_mode_name(m->pr->accept.mode),
               m->pr->accept.events);
    } else if (!m->quiet || m->failed) {
        fprintf(stderr, "trove %s: %" PRIu64 " events: %" PRIu64 " sent%s to capture %s, %" PRIu64
                        " dropped%s%s%s (%" PRIu64 " bytes, %s frames) in %.2f s\n",
                m->cmd, m->events, m->sent, m->how, m->capture, dropped, *why ? " (" : "", why,
                *why ? ")" : "", m->bytes, trove_wire_format_name(m->wire), m->seconds);
    }
}

/* Move every event by one amount so that the earliest starts at `now`: the file's events
 * then sit on the clock live producers use (CLOCK_MONOTONIC nanoseconds), spaced as they
 * were. Returns the amount (now minus the earliest start). */
static int64_t place_at(struct trove_event *ev, size_t n, uint64_t now)
{
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; i < n; i++)
        if (ev[i].start_ns < first)
            first = ev[i].start_ns;
    if (!n || first == now)
        return 0;
    for (size_t i = 0; i < n; i++)
        ev[i].start_ns = ev[i].start_ns - first + now; /* unsigned: exact modulo 2^64 */
    return (int64_t)(now - first);
}

/* Send names, then events in frames of `batch`, paced; unless keep_times, the events are
 * first placed at the moment the first frame goes (place_at; *shift_out says by how much).
 * Returns 0, or 1 after an error. */
static int send_all(const char *cmd, struct cli_producer *pr, const struct trove_names *names,
                    struct trove_event *ev, size_t n, int keep_times, int64_t *shift_out,
                    int wire, uint64_t batch, struct pace *pace, uint64_t *bytes,
                    uint64_t *frames, uint64_t *sent)
{
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes buf = {0};
    int status = 1;

    if (trove_wire_encoder_new(&enc) != TROVE_OK) {
        cli_error(cmd, "out of memory");
        goto out;
    }
    if (trove_wire_encode_names(names, 0, trove_names_count(names), &buf) != TROVE_OK) {
        cli_error(cmd, "encoding the names: out of memory");
        goto out;
    }
    if (cli_write_all(pr->fd, buf.ptr, buf.len) != 0) {
        cli_producer_closed(cmd, pr, 0);
        goto out;
    }
    *bytes += buf.len;
    (*frames)++;
    pace->t0_ns = mono_ns();
    *shift_out = keep_times ? 0 : place_at(ev, n, pace->t0_ns);
    pace->first_start = n ? ev[0].start_ns : 0;
    for (size_t i = 0; i < n && !interrupted; i += batch) {
        size_t k = n - i < batch ? n - i : (size_t)batch;
        pace_wait(pace, &ev[i], i);
        if (interrupted)
            break;
        buf.len = 0;
        if (trove_wire_encode(enc, wire, ev + i, k, &buf) != TROVE_OK) {
            cli_error(cmd, "encoding events %zu..%zu", i, i + k);
            goto out;
        }
        if (cli_write_all(pr->fd, buf.ptr, buf.len) != 0) {
            cli_producer_closed(cmd, pr, *sent);
            goto out;
        }
        *bytes += buf.len;
        (*frames)++;
        *sent += k;
    }
    status = 0;
out:
    trove_bytes_free(&buf);
    trove_wire_encoder_free(enc);
    return status;
}

int cmd_record(int argc, char **argv)
{
    struct cli_common co;
    struct cli_producer pr = {.fd = -1, .stop = &interrupted};
    struct trove_events events = {0};
    struct trove_names *names = NULL, *renamed = NULL;
    struct pace pace = {0, 0, 0, 0};
    const char *name = NULL, *in = NULL, *sock = NULL;
    char sockbuf[4200];
    uint64_t pid = 0, bytes = 0, frames = 0, sent = 0;
    int64_t shift = 0;
    int append = 0, have_pid = 0, keep_times = 0, status = 1, r;
    double t0;

    /* A command (-- CMD) or a pid without --from: sampling it (record_sample.c). */
    {
        int from = 0, sampling = 0, i = 1;
        for (; i < argc && strcmp(argv[i], "--"); i++) {
            from |= !strcmp(argv[i], "--from");
            sampling |= !strcmp(argv[i], "--pid");
        }
        if ((sampling || i < argc) && !from)
            return cli_record_sample(argc, argv);
    }
    cli_common_init(&co);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            record_usage(stdout);
            return 0;
        }
        if ((r = cli_common_opt("record", argc, argv, &i,
                                CLI_C_WIRE | CLI_C_BATCH | CLI_C_JSON | CLI_C_QUIET |
                                    CLI_C_VERBOSE | CLI_C_INPUT | CLI_C_STORE,
                                &co)) == 2)
            return 2;
        if (r)
            continue;
        if (!strcmp(a, "--from") && i + 1 < argc) {
            in = argv[++i];
        } else if (!strcmp(a, "--rate") && i + 1 < argc) {
            if (parse_rate("record", argv[++i], &pace))
                return 2;
        } else if (!strcmp(a, "--socket") && i + 1 < argc) {
            sock = argv[++i];
        } else if (!strcmp(a, "--append")) {
            append = 1;
        } else if (!strcmp(a, "--keep-times")) {
            keep_times = 1;
        } else if (!strcmp(a, "--pid") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &pid) || pid > UINT32_MAX)
                return cli_error("record", "--pid: '%s' is not a pid", argv[i]) + 1;
            have_pid = 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_error("record", "unknown option or missing value '%s'; see `trove record "
                                       "--help`", a) + 1;
        } else if (!name) {
            name = a;
        } else {
            return cli_error("record", "unexpected argument '%s'; see `trove record --help`",
                             a) + 1;
        }
    }
    if (!name || !in) {
        record_usage(stderr);
        return 2;
    }
    {
        struct trove_diag diag = {0};
        if (trove_volume_name_check(name, &diag) != TROVE_OK)
            return cli_error("record", "%s", diag.msg) + 1;
    }
    catch_signals();
    if (trove_names_new(&names) != TROVE_OK || trove_names_new(&renamed) != TROVE_OK) {
        cli_error("record", "out of memory");
        goto out;
    }
    co.in.quiet = co.quiet;
    if (cli_load("record", in, &co.in, &events, names) != 0)
        goto out;
    if (have_pid) {
        for (size_t i = 0; i < events.len; i++)
            events.ev[i].pid = (uint32_t)pid;
        if (names_with_pid(names, (uint32_t)pid, renamed) != TROVE_OK) {
            cli_error("record", "out of memory");
            goto out;
        }
    }
    sock = cli_socket_for(sock, co.store, sockbuf, sizeof sockbuf);
    if (cli_producer_open("record", sock, name, append, "trove record", &pr))
        goto out;
    if (!co.quiet)
        cli_producer_say("record", &pr, co.verbose);
    t0 = cli_now();
    {
        int failed = send_all("record", &pr, have_pid ? renamed : names, events.ev, events.len,
                              keep_times, &shift, co.wire, co.batch, &pace, &bytes, &frames,
                              &sent);
        if (!failed && !co.quiet && !co.json && events.len) {
            if (keep_times)
                fprintf(stderr, "trove record: %s's own event times kept (--keep-times)\n", in);
            else
                fprintf(stderr, "trove record: %s's events placed at the time they are sent "
                                "(moved by %+.3f s; --keep-times keeps the file's own times)\n",
                        in, (double)shift / 1e9);
        }
        if (!failed && cli_producer_finish("record", &pr, sent))
            failed = 1;
        struct sent_summary m = {"record", name, "", events.len, sent, bytes, frames, co.wire,
                                 failed, co.json, co.quiet, cli_now() - t0, &pr,
                                 keep_times ? "kept" : "sent", shift};
        print_summary(&m);
        if (failed)
            goto out;
    }
    status = 0;
out:
    if (status && pr.stopped)
        status = CLI_EXIT_STOPPED;
    cli_producer_close(&pr);
    trove_events_free(&events);
    trove_names_free(names);
    trove_names_free(renamed);
    return status;
}

/* `trove gen --live NAME --rate N --seconds S`: the gen model's events, sent at N a second
 * with their times moved to when they are sent (so a viewer sees them as they happen). */
int cli_gen_live(const char *name, const struct trove_gen_options *g, uint64_t rate,
                 double seconds, const char *sock, const char *store, int wire, uint64_t batch,
                 int append, int json, int quiet, int verbose)
{
    struct cli_producer pr = {.fd = -1, .stop = &interrupted};
    struct trove_events events = {0};
    struct trove_names *names = NULL;
    struct trove_gen_options go = *g;
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes buf = {0};
    struct trove_event *chunk = NULL;
    char sockbuf[4200];
    uint64_t total = (uint64_t)((double)rate * seconds), sent = 0, bytes = 0, frames = 0, t0;
    int status = 1, failed = 0;
    struct trove_diag diag = {0};

    if (trove_volume_name_check(name, &diag) != TROVE_OK)
        return cli_error("gen", "%s", diag.msg);
    if (rate == 0 || !(seconds > 0))
        return cli_error("gen", "--live needs --rate N (events per second) and --seconds S");
    catch_signals();
    /* One model run of up to a million events, sent round and round. */
    go.events = total < 1000000 ? (total ? total : 1) : 1000000;
    if (trove_names_new(&names) != TROVE_OK || trove_wire_encoder_new(&enc) != TROVE_OK ||
        !(chunk = calloc(batch, sizeof *chunk)) || trove_gen(&go, &events, names) != TROVE_OK) {
        cli_error("gen", "generating the model's events failed");
        goto out;
    }
    sock = cli_socket_for(sock, store, sockbuf, sizeof sockbuf);
    if (cli_producer_open("gen", sock, name, append, "trove gen --live", &pr))
        goto out;
    if (!quiet)
        cli_producer_say("gen", &pr, verbose);
    if (trove_wire_encode_names(names, 0, trove_names_count(names), &buf) != TROVE_OK) {
        cli_error("gen", "encoding the names: out of memory");
        goto out;
    }
    t0 = mono_ns();
    if (cli_write_all(pr.fd, buf.ptr, buf.len) != 0) {
        cli_producer_closed("gen", &pr, 0);
        failed = 1;
    } else {
        bytes += buf.len;
        frames++;
    }
    while (sent < total && !interrupted && !failed) {
        size_t k = (size_t)(total - sent < batch ? total - sent : batch), at = sent % events.len;
        uint64_t due = (uint64_t)((double)sent / (double)rate * 1e9), now = mono_ns(), base;
        if (t0 + due > now)
            sleep_ns(t0 + due - now);
        if (k > events.len - at)
            k = events.len - at;
        memcpy(chunk, events.ev + at, k * sizeof chunk[0]);
        base = chunk[0].start_ns;
        now = mono_ns();
        for (size_t i = 0; i < k; i++) /* the batch's times from now, as they were spaced */
            chunk[i].start_ns = now + (chunk[i].start_ns >= base ? chunk[i].start_ns - base : 0);
        buf.len = 0;
        if (trove_wire_encode(enc, wire, chunk, k, &buf) != TROVE_OK) {
            cli_error("gen", "encoding events: out of memory");
            failed = 1;
            break;
        }
        if (cli_write_all(pr.fd, buf.ptr, buf.len) != 0) {
            cli_producer_closed("gen", &pr, sent);
            failed = 1;
            break;
        }
        bytes += buf.len;
        frames++;
        sent += k;
    }
    if (!failed && cli_producer_finish("gen", &pr, sent))
        failed = 1;
    {
        struct sent_summary m = {"gen", name, " live", total, sent, bytes, frames, wire, failed,
                                 json, quiet, (double)(mono_ns() - t0) / 1e9, &pr, NULL, 0};
        print_summary(&m);
    }
    if (failed)
        goto out;
    status = 0;
out:
    if (status && pr.stopped)
        status = CLI_EXIT_STOPPED;
    cli_producer_close(&pr);
    free(chunk);
    trove_bytes_free(&buf);
    trove_wire_encoder_free(enc);
    trove_events_free(&events);
    trove_names_free(names);
    return status;
}

/* ---- trove watch ----------------------------------------------------------------------- */

static void watch_usage(FILE *f)
{
    fprintf(f,
            "usage: trove watch NAME [--url URL] [--token-file FILE]\n"
            "                   [--wire auto|raw|packed|deflate] [--from start|now] [-o FILE]\n"
            "                   [--seconds S] [--json] [-q]\n"
            "\n"
            "Watch capture NAME live, as a viewer: a one-line display of what arrives (events,\n"
            "bytes per event, wire, MB/s, decode time per batch, drops) on a terminal, and with\n"
            "-o the stream itself, written as a wire file. Ends when the capture does.\n"
            "Exit status: 0 the capture ended (or --seconds passed, or Ctrl-C); 1 an error;\n"
            "2 a usage error; 3 the service stopped before the capture ended (it closed the\n"
            "connection with 1001, \"service stopped\"): what arrived until then is kept.\n"
            "  --url URL          the service (default http://127.0.0.1:7700/)\n"
            "  --token-file FILE  the service's token, the file's first line (default:\n"
            "                     $TROVE_TOKEN if set), sent as Authorization: Bearer\n"
            "  --wire W           the frames to get (default auto: the service picks)\n"
            "  --from F           start (what is stored first, then live) or now (default)\n"
            "  -o FILE            write every frame received to FILE (a wire stream)\n"
            "  --seconds S        stop after S seconds\n"
            "  --json             at the end, the figures as one JSON object on stdout\n"
            "  -q, --quiet        no display, no summary\n");
}

struct watch {
    const char *name;
    struct trove_wire_decoder *dec;
    struct trove_event *ev;
    struct trove_names *names;
    struct trove_output out;
    int have_out, tty, quiet;
    char wire[16];
    uint64_t events, frames, bytes, event_bytes, gaps, dropped, decode_ns, batches;
    uint64_t end_events;
    int ended, failed;
    double t0, last, deadline;
    char err[512];
};

static int json_u64(const char *json, const char *key, uint64_t *out)
{
    const char *p = strstr(json, key);
    if (!p)
        return -1;
    p += strlen(key);
    *out = strtoull(p, NULL, 10);
    return 0;
}

static void watch_line(struct watch *w, int final)
{
    double dt = cli_now() - w->t0;
    if (!w->tty || w->quiet)
        return;
    fprintf(stderr,
            "\r%s: %" PRIu64 " events  %.2f B/event  %s  %.2f MB/s  decode %.1f us/batch  "
            "drops %" PRIu64 "   %s",
            w->name, w->events, w->events ? (double)w->event_bytes / (double)w->events : 0.0,
            w->wire[0] ? w->wire : "-", dt > 0 ? (double)w->bytes / dt / 1e6 : 0.0,
            w->batches ? (double)w->decode_ns / 1e3 / (double)w->batches : 0.0, w->dropped,
            final ? "\n" : "");
    fflush(stderr);
}

static int watch_text(void *ctx, const char *json, size_t len)
{
    struct watch *w = ctx;
    uint64_t v;
    (void)len;
    if (strstr(json, "\"type\":\"hello\"")) {
        const char *p = strstr(json, "\"wire\":\"");
        if (p)
            sscanf(p + 8, "%15[a-z]", w->wire);
    } else if (strstr(json, "\"type\":\"gap\"")) {
        w->gaps++;
        if (json_u64(json, "\"events\":", &v) == 0)
            w->dropped += v;
    } else if (strstr(json, "\"type\":\"end\"")) {
        w->ended = 1;
        if (json_u64(json, "\"events\":", &v) == 0)
            w->end_events = v;
    } else if (strstr(json, "\"type\":\"error\"")) {
        const char *m = strstr(json, "\"message\":\"");
        size_t n;
        m = m ? m + 11 : json;
        n = strcspn(m, "\"");
        snprintf(w->err, sizeof w->err, "the service refused: %.*s", (int)(n < 400 ? n : 400), m);
        w->failed = 1;
        return 1;
    }
    return 0;
}

static int watch_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct watch *w = ctx;
    struct trove_wire_frame fr;
    struct trove_diag diag = {0};
    uint64_t t = (uint64_t)(cli_now() * 1e9);
    int rc = trove_wire_decode(w->dec, frame, len, w->ev, TROVE_WIRE_MAX_EVENTS, w->names, &fr,
                               &diag);

    if (rc != TROVE_OK) {
        snprintf(w->err, sizeof w->err, "frame %" PRIu64 " does not decode: %s", w->frames,
                 cli_diag_msg(&diag, rc));
        w->failed = 1;
        return 1;
    }
    if (fr.format != TROVE_WIRE_NAMES) {
        w->decode_ns += (uint64_t)(cli_now() * 1e9) - t;
        w->batches++;
        w->events += fr.n_events;
        w->event_bytes += len;
    }
    w->frames++;
    w->bytes += len;
    if (w->have_out && fwrite(frame, 1, len, w->out.f) != len) {
        snprintf(w->err, sizeof w->err, "writing %.400s failed", w->out.path);
        w->failed = 1;
        return 1;
    }
    return 0;
}

static int watch_tick(void *ctx)
{
    struct watch *w = ctx;
    double now = cli_now();
    if (now - w->last >= 0.5) {
        w->last = now;
        watch_line(w, 0);
    }
    return interrupted || (w->deadline > 0 && now >= w->deadline);
}

int cmd_watch(int argc, char **argv)
{
    struct trove_live_view_options vo;
    struct trove_diag diag = {0};
    struct watch w;
    const char *name = NULL, *out = NULL, *from = "now", *token_file = NULL;
    char token[4096];
    double seconds = 0;
    int json = 0, close_code = 0, rc, status = 1, stopped;

    memset(&w, 0, sizeof w);
    memset(&vo, 0, sizeof vo);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            watch_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            w.quiet = 1;
        } else if (!strcmp(a, "--url") && v) {
            vo.url = argv[++i];
        } else if (!strcmp(a, "--token-file") && v) {
            token_file = argv[++i];
        } else if ((!strcmp(a, "--wire") || !strcmp(a, "--to")) && v) {
            if (parse_wire_auto("watch", argv[++i], &vo.wire))
                return 2;
        } else if (!strcmp(a, "--from") && v) {
            from = argv[++i];
            if (strcmp(from, "start") != 0 && strcmp(from, "now") != 0)
                return cli_error("watch", "--from: '%s' is not start or now", from) + 1;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && v) {
            out = argv[++i];
        } else if (!strcmp(a, "--seconds") && v) {
            char *end;
            seconds = strtod(argv[++i], &end);
            if (*end || !(seconds > 0))
                return cli_error("watch", "--seconds: '%s' is not a positive number", argv[i]) + 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_error("watch", "unknown option or missing value '%s'; see `trove watch "
                                      "--help`", a) + 1;
        } else if (!name) {
            name = a;
        } else {
            return cli_error("watch", "unexpected argument '%s'; see `trove watch --help`", a) + 1;
        }
    }
    if (!name) {
        watch_usage(stderr);
        return 2;
    }
    if (trove_volume_name_check(name, &diag) != TROVE_OK)
        return cli_error("watch", "%s", diag.msg) + 1;
    if (cli_remote_token("watch", token_file, token, sizeof token))
        return 1;
    vo.token = token[0] ? token : NULL;
    catch_signals();
    w.name = name;
    w.tty = isatty(2);
    w.t0 = w.last = cli_now();
    w.deadline = seconds > 0 ? w.t0 + seconds : 0;
    if (trove_wire_decoder_new(&w.dec) != TROVE_OK || trove_names_new(&w.names) != TROVE_OK ||
        !(w.ev = calloc(TROVE_WIRE_MAX_EVENTS, sizeof *w.ev))) {
        cli_error("watch", "out of memory");
        goto out;
    }
    if (out) {
        if (cli_out_open("watch", out, 1, &w.out))
            goto out;
        w.have_out = 1;
    }
    vo.capture = name;
    vo.from_start = strcmp(from, "start") == 0;
    vo.on_text = watch_text;
    vo.on_frame = watch_frame;
    vo.on_tick = watch_tick;
    vo.ctx = &w;
    rc = trove_live_view(&vo, &close_code, &diag);
    watch_line(&w, 1);
    if (rc != TROVE_OK) {
        cli_error("watch", "%s", cli_diag_msg(&diag, rc));
        goto out;
    }
    if (w.failed) {
        cli_error("watch", "%s", w.err);
        goto out;
    }
    stopped = close_code == 1001 && !w.ended;
    if (w.have_out) {
        w.have_out = 0;
        if (cli_out_commit("watch", &w.out))
            goto out;
    }
    if (json) {
        printf("{\"capture\":\"%s\",\"wire\":\"%s\",\"from\":\"%s\",\"events\":%" PRIu64
               ",\"frames\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"bytes_per_event\":%.3f"
               ",\"names\":%zu,\"gaps\":%" PRIu64 ",\"dropped_events\":%" PRIu64
               ",\"decode_us_per_batch\":%.2f,\"seconds\":%.3f,\"ended\":%s,\"end_events\":%" PRIu64
               ",\"close_code\":%d,\"stopped\":%s}\n",
               name, w.wire, from, w.events, w.frames, w.bytes,
               w.events ? (double)w.event_bytes / (double)w.events : 0.0,
               trove_names_count(w.names), w.gaps, w.dropped,
               w.batches ? (double)w.decode_ns / 1e3 / (double)w.batches : 0.0, cli_now() - w.t0,
               w.ended ? "true" : "false", w.end_events, close_code, stopped ? "true" : "false");
    } else if (!w.quiet && !w.tty) {
        fprintf(stderr, "trove watch: %s: %" PRIu64 " events in %" PRIu64 " frames (%s), %" PRIu64
                        " dropped%s\n",
                name, w.events, w.frames, w.wire, w.dropped, w.ended ? ", capture ended" : "");
    }
    if (stopped) /* said even with -q: the one thing a script must tell from an end */
        fprintf(stderr, "trove watch: service stopped before capture %s ended (%" PRIu64
                        " events arrived)\n",
                name, w.events);
    status = stopped ? CLI_EXIT_STOPPED : 0;
out:
    if (w.have_out)
        cli_out_abort(&w.out);
    trove_wire_decoder_free(w.dec);
    trove_names_free(w.names);
    free(w.ev);
    return status;
}
