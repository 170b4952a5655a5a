/*
 * cmd_watch.c: `trove watch`, a headless viewer of the service: a stats line, and the stream
 * to a file with -o (docs/serve.md).
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
    return cli_interrupted || (w->deadline > 0 && now >= w->deadline);
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
            if (cli_parse_wire_auto("watch", argv[++i], &vo.wire))
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
    cli_live_signals();
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
