/*
 * cmd_import.c: `trove import`: any input into a capture of a store (cli_capture_import), or
 * into a wire stream with -o, or posted to a service with --url (cmd_remote.c).
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


static void import_usage(FILE *f)
{
    fprintf(f,
            "usage: trove import IN [--store DIR] [--name NAME] [--segment-bytes SIZE]\n"
            "                       [--segment-format F] [--no-summaries] [--input-format F]\n"
            "                       [--edited] [--json] [-q] [-v]\n"
            "       trove import IN -o OUT [--wire raw|packed|deflate] [--batch N] [the above]\n"
            "       trove import IN --url URL [--token-file FILE] [--name NAME] [--append]\n"
            "                       [--json] [-q]\n"
            "\n"
            "Store IN as capture NAME, replacing a capture of that name. The capture is cut\n"
            "into segments stored as deduplicated objects, so importing the same events again\n"
            "stores nothing new (docs/formats/capture.md). `trove ls` lists captures and `trove\n"
            "replay` streams them back. With -o, write IN as a wire stream instead (OUT, '-'\n"
            "for stdout): a names frame, then frames of N events. " INPUT_HELP
            "  --store DIR        the store (default: $TROVE_STORE if set, else ./trove-data);\n"
            "                     created if missing. With -o: where a store:NAME input is\n"
            "  --name NAME        the capture's name (default: IN's base name)\n"
            "  --segment-bytes S  32-byte events per segment, in bytes: a multiple of 32 up to\n"
            "                     8M (K, M suffixes: powers of 1024; default 1M, and 2M\n"
            "                     for model segments)\n"
            "  --segment-format F the segments' frames: model (format 8, the default: the\n"
            "                     smallest, coded against each thread's nesting), deflate\n"
            "                     (packed + deflate, what live captures store), columnar\n"
            "                     or columnar_deflate (format 5: smaller than deflate on\n"
            "                     some traces, larger on others); docs/formats/capture.md\n"
            "  --no-summaries     store no summaries (what views and statistics read,\n"
            "                     docs/formats/summary.md): the capture as older builds wrote\n"
            "                     it; `trove index NAME` adds them later\n"
            COMMON_HELP_WIRE COMMON_HELP_BATCH COMMON_HELP_INPUT
            "  --edited           IN is a bundle whose tables were edited after export (rows\n"
            "                     added or dropped, in DuckDB say): take the events table as\n"
            "                     it is, with a warning where its count differs from\n"
            "                     manifest.json's, which is otherwise an error\n"
            "  --url URL          post IN to a running `trove serve` (http://HOST:PORT/) as\n"
            "                     capture NAME instead: one file (a bundle, a Parquet events\n"
            "                     file, a Chrome JSON trace or a wire stream), streamed; '-' is\n"
            "                     read to a temp file first. The service checks it whole\n"
            "                     before it stores anything\n"
            "  --token-file FILE  with --url: the service's token, the file's first line\n"
            "                     (default: $TROVE_TOKEN if set), sent as Authorization: Bearer\n"
            "  --append           with --url: add IN's events to capture NAME, not replace it\n"
            "  --json             print the result as one JSON object on stdout: name, events,\n"
            "                     segments, names, first_ns, end_ns, raw_bytes, stored_bytes,\n"
            "                     new_objects, new_bytes (what the import uploaded: 0 when the\n"
            "                     store had it all), warnings (count, message: what the input\n"
            "                     carried that was not kept, ...); with -o: input, output, wire,\n"
            "                     events, names; with --url, the service's answer: name,\n"
            "                     events, new_objects, new_bytes, warnings)\n"
            COMMON_HELP_QV);
}

/* The capture's name: IN's base name without its extensions. */
static void base_name(const char *in, char *out, size_t n)
{
    const char *b = strrchr(in, '/');
    char *dot;
    snprintf(out, n, "%s", b ? b + 1 : in);
    if (!strcmp(out, "-") || !out[0])
        snprintf(out, n, "capture");
    if ((dot = strchr(out, '.')) != NULL && dot != out)
        *dot = 0;
}

/* ---- import ------------------------------------------------------------------------------ */

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
    if (i->attr_rows) /* attributes: only then, as before they existed */
        fprintf(o, ",\"attr_rows\":%llu", (unsigned long long)i->attr_rows);
    fprintf(o, ",\"segment_format\":\"%s\"", trove_capture_segment_format_name(i->flags));
    if (new_objects)
        fprintf(o, ",\"new_objects\":%llu,\"new_bytes\":%llu", (unsigned long long)i->new_objects,
                (unsigned long long)i->new_bytes);
}

/* The store, opened (made if missing) only once the input proved readable. */
struct open_ctx {
    const char *store;
    struct trove_store *s;
    int failed; /* cli_store_open said why */
};

static int open_store(void *ctx, struct trove_store **s, struct trove_diag *diag)
{
    struct open_ctx *c = ctx;

    (void)diag;
    if (cli_store_open("import", c->store, TROVE_STORE_CREATE, &c->s)) {
        c->failed = 1;
        return TROVE_ERR_INVALID;
    }
    *s = c->s;
    return TROVE_OK;
}

int cli_capture_import(const struct cli_capture_import *ci)
{
    struct cli_load_options lo = ci->lo;
    struct trove_import_options io;
    struct trove_import_result res;
    const struct trove_capture_info *info = &res.info;
    struct trove_warnings w;
    struct trove_diag diag = {0};
    struct cli_glue g;
    struct open_ctx oc = {cli_default_store(ci->store), NULL, 0};
    int rc, status = 1;

    if (trove_volume_name_check(ci->name, &diag) != TROVE_OK)
        return cli_error("import", "'%s' is not a capture name: %s%s", ci->name, diag.msg,
                         ci->name_defaulted ? " (it comes from IN's name; give one with --name)"
                                            : "");
    lo.quiet = ci->quiet;
    memset(&io, 0, sizeof io);
    cli_glue_begin(&g, "import", &lo, &w, &io.in);
    io.segment_bytes = ci->segment_bytes;
    io.segment_format = ci->segment_format;
    io.no_summaries = ci->no_summaries;
    io.open_store = open_store;
    io.open_ctx = &oc;
    /* A wire stream is stored as it is read; any other kind is read whole first. */
    rc = trove_import(NULL, ci->name, ci->in, &io, &res, &diag);
    if (cli_glue_end(&g, &lo, &w, res.read_failed ? rc : TROVE_OK, &diag))
        goto out;
    if (rc != TROVE_OK) {
        if (!oc.failed)
            cli_error("import", "%s -> capture %s in %s: %s", ci->in, ci->name, oc.store,
                      cli_diag_msg(&diag, rc));
        goto out;
    }
    if (ci->json) {
        print_info_json(stdout, ci->name, info, 1);
        putchar(',');
        cli_json_warnings(stdout, &w); /* what the input carried that was not kept, ... */
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
                ci->in, ci->name, oc.store, (unsigned long long)info->events,
                (unsigned long long)info->names, (unsigned long long)info->segments,
                (unsigned long long)info->stored_bytes, (unsigned long long)info->raw_bytes,
                (unsigned long long)info->new_objects, info->new_objects == 1 ? "" : "s");
    if (!ci->quiet && !ci->json && info->attr_rows)
        fprintf(stderr, "  with %llu attribute rows (args, categories, other members)\n",
                (unsigned long long)info->attr_rows);
    if (!ci->quiet && !ci->json && (info->samples || info->switches))
        fprintf(stderr, "  and a profile of %llu samples and %llu context switches\n",
                (unsigned long long)info->samples, (unsigned long long)info->switches);
    status = 0;
out:
    cli_store_close(oc.s);
    return status;
}

/* ---- import -------------------------------------------------------------------------- */

/* `trove import IN --url URL --name NAME`: checked here, posted by cmd_remote.c. */
static int import_remote(const struct cli_common *co, const char *in, const char *name,
                         const char *local_only, int append)
{
    static char base[4096];
    struct cli_remote_args ra;

    if (!co->url)
        return cli_error("import", "--token-file goes with --url URL");
    if (cli_exclusive("import", (co->given & CLI_C_STORE) != 0, "--store", 1, "--url") ||
        cli_exclusive("import", co->out != NULL, "-o", 1, "--url"))
        return 2;
    if (local_only)
        return cli_error("import", "%s shapes a local import; the service reads IN itself: "
                                   "drop it with --url", local_only);
    if (!in)
        return cli_error("import", "needs IN; see `trove import --help`");
    memset(&ra, 0, sizeof ra);
    if (!name) { /* checked as a capture name before anything is sent */
        base_name(in, base, sizeof base);
        name = base;
        ra.name_defaulted = 1;
    }
    ra.url = co->url;
    ra.token_file = co->token_file;
    ra.name = name;
    ra.in = in;
    ra.append = append;
    ra.json = co->json;
    ra.quiet = co->quiet;
    return cli_remote_import(&ra);
}

int cmd_import(int argc, char **argv)
{
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes frame = {0};
    struct cli_capture_import ci;
    const char *in = NULL, *out = NULL, *local_only = NULL;
    uint64_t batch;
    int to, quiet, status = 1, rc, wire_opts, append = 0;
    struct cli_load_options lo;
    struct cli_common co;
    struct trove_output o = {0};

    memset(&ci, 0, sizeof ci);
    cli_common_init(&co);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc, r;
        if (cli_is_help(a)) {
            import_usage(stdout);
            return 0;
        }
        if ((r = cli_common_opt("import", argc, argv, &i,
                                CLI_C_WIRE | CLI_C_BATCH | CLI_C_JSON | CLI_C_QUIET |
                                    CLI_C_VERBOSE | CLI_C_INPUT | CLI_C_STORE | CLI_C_OUTPUT |
                                    CLI_C_REMOTE,
                                &co)) == 2)
            return 2;
        if (r) {
            if (co.given & (CLI_C_INPUT | CLI_C_WIRE | CLI_C_BATCH))
                local_only = local_only ? local_only : a;
            continue;
        } else if (!strcmp(a, "--append")) {
            append = 1;
        } else if (!strcmp(a, "--name") && has_value) {
            ci.name = argv[++i];
            ci.to_store = 1;
        } else if (!strcmp(a, "--segment-bytes") && has_value) {
            local_only = local_only ? local_only : a;
            if (cli_parse_size(argv[++i], &ci.segment_bytes) || ci.segment_bytes < 32 ||
                ci.segment_bytes % 32 || ci.segment_bytes > TROVE_CAPTURE_MAX_SEGMENT_BYTES)
                return cli_error("import", "--segment-bytes: '%s' is not a multiple of 32 bytes "
                                           "from 32 to 8M", argv[i]);
            ci.to_store = 1;
        } else if (!strcmp(a, "--no-summaries")) {
            local_only = local_only ? local_only : a;
            ci.no_summaries = 1;
            ci.to_store = 1;
        } else if (!strcmp(a, "--segment-format") && has_value) {
            local_only = local_only ? local_only : a;
            if (cli_parse_segment_format("import", argv[++i], &ci.segment_format))
                return 1;
            ci.to_store = 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_error("import", "unknown option or missing value '%s'; see `trove import "
                                       "--help`", a);
        } else if (!in) {
            in = a;
        } else {
            return cli_error("import", "unexpected argument '%s'; see `trove import --help`", a);
        }
    }
    out = co.out;
    wire_opts = (co.given & (CLI_C_WIRE | CLI_C_BATCH)) != 0;
    quiet = co.quiet || co.json;
    if (co.url || co.token_file)
        return import_remote(&co, in, ci.name, local_only, append);
    if (append)
        return cli_error("import", "--append goes with --url (a service's capture); a local "
                                   "import replaces capture NAME");
    /* Without -o, into the store (--store names it); with -o, a wire stream out (--store is
     * then where a store:NAME input is). */
    if (!out && wire_opts)
        return cli_error("import", "--wire and --batch shape the wire stream -o OUT writes; give "
                                   "-o OUT, or drop them to store a capture");
    if (out && ci.to_store)
        return cli_error("import", "-o writes a wire stream; --name, --segment-bytes and "
                                   "--segment-format store a capture: not both");
    if (!out) {
        if (!in)
            return cli_error("import", "needs IN; see `trove import --help`");
        ci.to_store = 1;
        ci.in = in;
        ci.store = co.store;
        ci.json = co.json;
        ci.quiet = co.quiet;
        ci.edited = co.in.edited;
        ci.lo = co.in;
        if (!ci.name) {
            static char base[4096]; /* checked as a volume name by the import */
            base_name(in, base, sizeof base);
            ci.name = base;
            ci.name_defaulted = 1;
        }
        return cli_capture_import(&ci);
    }
    if (!in)
        return cli_error("import", "needs IN; see `trove import --help`");
    if (cli_exclusive("import", co.json, "--json", !strcmp(out, "-"), "-o - (stdout)"))
        return 2;
    if (cli_store_for_input("import", in, &co))
        return 2;
    lo = co.in;
    to = co.wire;
    batch = co.batch;
    if (trove_names_new(&names) != TROVE_OK || trove_wire_encoder_new(&enc) != TROVE_OK) {
        cli_error("import", "out of memory");
        goto out;
    }
    if (cli_load("import", in, &lo, &ev, names))
        goto out;

    /* The wire stream: the names, then the events in frames of batch. */
    if (cli_out_open("import", out, 1, &o))
        goto out;
    rc = trove_wire_encode_names(names, 0, trove_names_count(names), &frame);
    for (size_t i = 0; rc == TROVE_OK && i < ev.len; i += (size_t)batch) {
        size_t n = ev.len - i < batch ? ev.len - i : (size_t)batch;
        if (frame.len > (16u << 20)) {
            if (fwrite(frame.ptr, 1, frame.len, o.f) != frame.len)
                rc = -(errno ? errno : EIO);
            frame.len = 0;
        }
        if (rc == TROVE_OK)
            rc = trove_wire_encode(enc, to, ev.ev + i, n, &frame);
    }
    if (rc == TROVE_OK && fwrite(frame.ptr, 1, frame.len, o.f) != frame.len)
        rc = -(errno ? errno : EIO);
    if (rc != TROVE_OK) {
        cli_error("import", "%s: writing %s: %s", in, o.path, trove_strerror(rc));
        goto out;
    }
    if (cli_out_commit("import", &o))
        goto out;
    if (co.json) {
        fputs("{\"input\":", stdout);
        cli_json_string(stdout, in, strlen(in));
        fputs(",\"output\":", stdout);
        cli_json_string(stdout, out, strlen(out));
        printf(",\"wire\":\"%s\",\"events\":%zu,\"names\":%zu}\n", trove_wire_format_name(to),
               ev.len, trove_names_count(names));
        if (fflush(stdout) != 0) {
            cli_error("import", "writing stdout: %s", strerror(errno));
            goto out;
        }
    }
    if (!quiet)
        fprintf(stderr, "trove import: %zu events, %zu names -> %s (%s)\n", ev.len,
                trove_names_count(names), out, trove_wire_format_name(to));
    status = 0;
out:
    cli_out_abort(&o);
    trove_bytes_free(&frame);
    trove_wire_encoder_free(enc);
    trove_events_free(&ev);
    trove_names_free(names);
    return status;
}
