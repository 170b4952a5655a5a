/*
 * cmd_record.c: `trove record` (any input trove reads, sent to the service as a producer)
 * and `trove gen --live` (synthetic events sent live; cmd_gen.c hands over to cli_gen_live),
 * docs/serve.md. A command or a pid instead of an input is record_sample.c's.
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
#include "trove/attrs.h"
#include "trove/gen.h"
#include "trove/capture.h"
#include "trove/serve.h"

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
        cli_sleep_ns(p->t0_ns + due - now);
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
 * out in whole frames and the rest did not (cli_interrupted, or the service went away): so the
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
    const char *why = m->failed ? "not sent after the error above" : cli_interrupted ? "interrupted" : "";
    if (m->json) {
        printf("{\"capture\":\"%s\",\"events\":%" PRIu64 ",\"sent\":%" PRIu64
               ",\"dropped\":%" PRIu64 ",\"frames\":%" PRIu64 ",\"bytes\":%" PRIu64
               ",\"wire\":\"%s\",\"seconds\":%.3f,\"cli_interrupted\":%s,\"failed\":%s,",
               m->capture, m->events, m->sent, dropped, m->frames, m->bytes,
               trove_wire_format_name(m->wire), m->seconds, cli_interrupted ? "true" : "false",
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
    for (size_t i = 0; i < n && !cli_interrupted; i += batch) {
        size_t k = n - i < batch ? n - i : (size_t)batch;
        pace_wait(pace, &ev[i], i);
        if (cli_interrupted)
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
    struct cli_producer pr = {.fd = -1, .stop = &cli_interrupted};
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
    cli_live_signals();
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

/* The model's times, from `first`, scaled by `scale` and put at `base`: start and end each
 * rounded down, so order and nesting on a thread survive (equal starts may appear). Counters
 * keep their value (dur_ns holds a double's bits). */
static void live_times(struct trove_event *e, size_t n, uint64_t first, double scale, uint64_t base)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t s = base + (uint64_t)((double)(e[i].start_ns - first) * scale);
        if (e[i].kind != TROVE_KIND_COUNTER)
            e[i].dur_ns = base + (uint64_t)((double)(e[i].start_ns + e[i].dur_ns - first) * scale) - s;
        e[i].start_ns = s;
    }
}

/* `trove gen --live NAME --rate N --seconds S`: the gen model's events, sent at N a second
 * with their times moved to when they are sent (so a viewer sees them as they happen): a
 * run of the model is sent round and round, each round's times scaled so that it spans the
 * seconds it takes to send and put after the last round's, so a thread's zones never
 * overlap however fast they are sent. */
int cli_gen_live(const char *name, const struct trove_gen_options *g, uint64_t rate,
                 double seconds, const char *sock, const char *store, int wire, uint64_t batch,
                 int append, int attrs, int json, int quiet, int verbose)
{
    struct cli_producer pr = {.fd = -1, .stop = &cli_interrupted};
    struct trove_events events = {0};
    struct trove_names *names = NULL;
    struct trove_gen_options go = *g;
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes buf = {0};
    struct trove_event *chunk = NULL;
    char sockbuf[4200];
    uint64_t total = (uint64_t)((double)rate * seconds), sent = 0, bytes = 0, frames = 0, t0;
    uint64_t first = 0, span = 1, round = 0, next_round = 0;
    double scale = 1;
    int status = 1, failed = 0;
    struct trove_diag diag = {0};

    if (trove_volume_name_check(name, &diag) != TROVE_OK)
        return cli_error("gen", "%s", diag.msg);
    if (rate == 0 || !(seconds > 0))
        return cli_error("gen", "--live needs --rate N (events per second) and --seconds S");
    cli_live_signals();
    /* One model run of up to a million events, sent round and round. */
    go.events = total < 1000000 ? (total ? total : 1) : 1000000;
    if (trove_names_new(&names) != TROVE_OK || trove_wire_encoder_new(&enc) != TROVE_OK ||
        !(chunk = calloc(batch, sizeof *chunk)) || trove_gen(&go, &events, names) != TROVE_OK) {
        cli_error("gen", "generating the model's events failed");
        goto out;
    }
    /* The model's time span (its events in start order) and the scale that makes a
     * round of it last as long as sending it does. */
    first = events.len ? events.ev[0].start_ns : 0;
    for (size_t i = 0; i < events.len; i++) {
        const struct trove_event *e = &events.ev[i];
        uint64_t end = e->start_ns + (e->kind == TROVE_KIND_COUNTER ? 0 : e->dur_ns);
        if (end - first >= span)
            span = end - first + 1;
    }
    scale = (double)events.len / (double)rate * 1e9 / (double)span;
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
    while (sent < total && !cli_interrupted && !failed) {
        size_t k = (size_t)(total - sent < batch ? total - sent : batch), at = sent % events.len;
        uint64_t due = (uint64_t)((double)sent / (double)rate * 1e9), now = mono_ns();
        if (t0 + due > now)
            cli_sleep_ns(t0 + due - now);
        if (k > events.len - at)
            k = events.len - at;
        memcpy(chunk, events.ev + at, k * sizeof chunk[0]);
        if (at == 0) { /* a new round: from now, or from the last round's end if later */
            now = mono_ns();
            round = now > next_round ? now : next_round;
            next_round = round + (uint64_t)((double)span * scale) + 1;
        }
        live_times(chunk, k, first, scale, round);
        buf.len = 0;
        if (attrs) { /* the chunk's attributes (of its times as sent), before its events */
            struct trove_attrs t;
            int rc;
            memset(&t, 0, sizeof t);
            rc = trove_gen_attrs(chunk, k, at, 0, &t);
            if (rc == TROVE_OK && t.n)
                rc = trove_attrs_wire_encode(&t, &buf);
            trove_attrs_free(&t);
            if (rc != TROVE_OK) {
                cli_error("gen", "encoding attributes: %s", trove_strerror(rc));
                failed = 1;
                break;
            }
        }
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

