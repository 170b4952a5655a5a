/*
 * cmd_serve.c: `trove serve`, the service (trove/serve.h, docs/serve.md); its producers and
 * viewer are cmd_record.c (record, gen --live) and cmd_watch.c.
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
            "                   [--segment-format deflate|columnar|columnar_deflate]\n"
            "                   [--no-summaries] [-q] [-v]\n"
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
            "                         imports): deflate, columnar or columnar_deflate (format\n"
            "                         5, docs/formats/capture.md); by default a live capture\n"
            "                         stores columnar_deflate and an import model\n"
            "  --no-summaries         live captures are stored without summaries (what views\n"
            "                         and statistics read, docs/formats/summary.md); the first\n"
            "                         view or statistic of one builds them\n"
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
        } else if (!strcmp(a, "--no-summaries")) {
            so.no_summaries = 1;
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
            if (cli_parse_wire_auto("serve", argv[++i], &so.wire))
                return 2;
        } else if (!strcmp(a, "--commit-ms")) {
            if (cli_parse_u32("serve", a, argv[++i], 1, 3600000, &so.commit_ms))
                return 2;
        } else if (!strcmp(a, "--pass-ms")) {
            if (cli_parse_u32("serve", a, argv[++i], 1, 60000, &so.pass_ms))
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
            if (cli_parse_u32("serve", a, argv[++i], 16, 1000000, &so.max_connections))
                return 2;
        } else if (!strcmp(a, "--idle-timeout")) {
            uint32_t secs;
            if (cli_parse_u32("serve", a, argv[++i], 1, 86400, &secs))
                return 2;
            so.idle_timeout_ms = secs * 1000u;
        } else if (!strcmp(a, "--max-replays")) {
            if (cli_parse_u32("serve", a, argv[++i], 1, 1000, &so.max_replays))
                return 2;
        } else if (!strcmp(a, "--max-exports")) {
            if (cli_parse_u32("serve", a, argv[++i], 1, 1000, &so.max_exports))
                return 2;
        } else if (!strcmp(a, "--max-uploads")) {
            if (cli_parse_u32("serve", a, argv[++i], 1, 1000, &so.max_uploads))
                return 2;
        } else if (!strcmp(a, "--max-producers")) {
            if (cli_parse_u32("serve", a, argv[++i], 1, 100000, &so.max_producers))
                return 2;
        } else if (!strcmp(a, "--segment-format")) {
            if (cli_parse_segment_format("serve", argv[++i], &so.segment_format))
                return 2;
            if (so.segment_format == TROVE_WIRE_MODEL) {
                cli_error("serve", "--segment-format: model is for imports (`trove import "
                                   "--segment-format model`): its encoder is not yet fast "
                                   "enough for a live capture");
                return 2;
            }
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
    cli_live_signals();
    rc = trove_serve_run(&so, &diag);
    if (rc != TROVE_OK)
        return cli_error("serve", "%s", cli_diag_msg(&diag, rc));
    if (lg.lost)
        return cli_error("serve", "stopped; some events were never committed (see above)");
    if (!lg.quiet)
        fprintf(stderr, "trove serve: stopped; every capture is committed\n");
    return 0;
}

