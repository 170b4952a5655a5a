/*
 * cmd_export.c: `trove export IN -o OUT` — any input out as Parquet (a bundle: a zip of the
 * tables and manifest.json; the events table alone, --format parquet; the bundle's files in
 * a directory, --format dir) or as a trace (Chrome JSON, Perfetto). The export itself is the
 * input layer's (trove_export, src/input/): `--capture NAME` is streamed, a row group at a
 * time, never whole in memory; every other input is read whole; the same bytes for the same
 * events. docs/formats/bundle.md describes the tables and the bundle. With --url the export
 * is checked here and made by a running service (cmd_remote.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "trove/trace.h"
#include "trove/profile.h"
#include "trove/bundle.h"
#include "trove/capture.h"
#include "trove/parquet.h"
#include "trove/tables.h"
#include "trove/wire.h"

enum { FMT_BUNDLE, FMT_PARQUET, FMT_DIR, FMT_TRACE, FMT_DIR_ZIP /* the service's only */ };

static void export_usage(FILE *f)
{
    fprintf(f,
            "usage: trove export IN -o OUT [--format bundle|parquet|dir|chrome-json|perfetto]\n"
            "                    [--codec none|zstd|gzip]\n"
            "                    [--encoding plain|dict|delta-dict] [--zip-deflate] [--name NAME]\n"
            "                    [--row-group N] [--input-format F] [--edited] [--json] [-q] [-v]\n"
            "       trove export --capture NAME [--store DIR] [--from-ns A] [--to-ns B] -o OUT\n"
            "                    [the options above]\n"
            "       trove export --capture NAME --url URL [--token-file FILE] -o OUT\n"
            "                    [--format bundle|parquet|dir.zip|chrome-json|perfetto]\n"
            "                    [--from-ns A] [--to-ns B] [--json] [-q]\n"
            "\n"
            "Export a capture as Parquet tables that DuckDB, pyarrow and Spark read\n"
            "(docs/formats/bundle.md), with a manifest.json of its own, or as a trace that other\n"
            "tools open (--format chrome-json or perfetto). " INPUT_HELP
            "  -o OUT             the output; written complete or not at all\n"
            "  --format F         bundle (default): a zip of events, names, threads, samples,\n"
            "                     frames and flows tables (and sort_indexes, when the capture\n"
            "                     has some) and manifest.json; parquet: the events table\n"
            "                     alone; dir: the bundle's files in the new directory OUT;\n"
            "                     chrome-json: the Trace Event Format (Perfetto UI,\n"
            "                     chrome://tracing, Speedscope); perfetto: a Perfetto protobuf\n"
            "                     trace, the compact one, with a sampled capture's samples\n"
            "                     and call stacks (docs/formats/perfetto.md)\n"
            "  --codec C          zstd (default), none or gzip, for every column\n"
            "  --encoding E       delta-dict (default: DELTA_BINARY_PACKED on the nanosecond\n"
            "                     columns, RLE_DICTIONARY on the others), dict, or plain\n"
            "  --zip-deflate      deflate the bundle's entries (default: stored)\n"
            "  --name NAME        the capture's name in manifest.json (default: IN's base name)\n"
            "  --row-group N      rows per row group (default 1048576)\n"
            COMMON_HELP_INPUT
            "  --edited           IN is a bundle whose events table was edited after export:\n"
            "                     take it as it is (see `trove import --help`)\n"
            "  --capture NAME     export capture NAME of the store (`trove ls` lists them),\n"
            "                     read through the prefetching pipeline as `trove replay` reads\n"
            "                     it; its name is the manifest's unless --name is given. Held a\n"
            "                     row group at a time, never whole; a bundle's events table is\n"
            "                     kept in a temporary file until the end (beside OUT, or in\n"
            "                     $TMPDIR for a pipe); chrome-json and perfetto sort the events\n"
            "                     in runs of 262,144 kept in a temporary file in $TMPDIR (else\n"
            "                     /tmp), about 40 bytes an event, so memory stays about 35 MB\n"
            "  --store DIR        the store (default: $TROVE_STORE if set, else ./trove-data)\n"
            "  --from-ns A        with --capture: the events that start at or after A ns ...\n"
            "  --to-ns B          ... and before B ns (default: all of them)\n"
            "  --no-verify        with --capture: do not check the objects read against their\n"
            "                     names: for benchmarks only\n"
            "  --url URL          export capture NAME of a running `trove serve`\n"
            "                     (http://HOST:PORT/) instead of a store: the bytes it sends\n"
            "                     (those of the same export here) go to OUT as they come; its\n"
            "                     formats are bundle, parquet, dir.zip (the dir files in a\n"
            "                     deflated zip), chrome-json and perfetto, with the service's\n"
            "                     own encoding options\n"
            "  --token-file FILE  with --url: the service's token, the file's first line\n"
            "                     (default: $TROVE_TOKEN if set), sent as Authorization: Bearer\n"
            "  --json             print the result as one JSON object on stdout: input, output,\n"
            "                     format, encoding, codec, events, bytes, bytes_per_event and\n"
            "                     warnings (chrome-json, perfetto: input, output, format,\n"
            "                     events, flow_rows, samples, samples_carried, bytes,\n"
            "                     bytes_per_event, warnings; with --url: capture, url,\n"
            "                     output, format, bytes). warnings lists what the export\n"
            "                     dropped, skipped or could not carry, each {count, message}\n"
            "                     (said on stderr instead without --json): a trace's\n"
            "                     unmatched and skipped events, a sampled capture's context\n"
            "                     switches, and (chrome-json) its samples, which perfetto\n"
            "                     carries as perf samples (samples_carried) and a bundle keeps\n"
            COMMON_HELP_QV);
}

static int parse_choice(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* The summary line (or --json object) of an export of events events, total bytes of tables
 * and manifest (the output's size when it is a file). Returns 0, or 1 after an error. */
static int export_report(const struct cli_common *co, int quiet, const char *what,
                         const char *out, const char *format, const char *mode,
                         const char *codec, uint64_t events, uint64_t total,
                         const struct trove_warnings *warn)
{
    struct stat st;
    uint64_t size;

    if (!co->json && quiet)
        return 0;
    size = stat(out, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : total;
    if (co->json) {
        fputs("{\"input\":", stdout);
        cli_json_string(stdout, what, strlen(what));
        fputs(",\"output\":", stdout);
        cli_json_string(stdout, out, strlen(out));
        printf(",\"format\":\"%s\",\"encoding\":\"%s\",\"codec\":\"%s\",\"events\":%llu,"
               "\"bytes\":%llu,\"bytes_per_event\":%.4f,",
               format, mode, codec, (unsigned long long)events, (unsigned long long)size,
               events ? (double)size / (double)events : 0.0);
        cli_json_warnings(stdout, warn);
        fputs("}\n", stdout);
        if (fflush(stdout) != 0)
            return cli_error("export", "writing stdout: %s", strerror(errno));
    } else {
        fprintf(stderr,
                "trove export: %llu events -> %s (%s, %s, %s): %llu bytes, %.2f bytes/event\n",
                (unsigned long long)events, out, format, mode, codec, (unsigned long long)size,
                events ? (double)size / (double)events : 0.0);
    }
    return 0;
}

/* `trove export --capture NAME --url URL -o OUT`: checked here, made by cmd_remote.c. */
static int export_remote(const struct cli_common *co, const char *in, const char *capture,
                         int format, const char *format_arg, const char *local_only,
                         uint64_t from_ns, uint64_t to_ns)
{
    struct cli_remote_args ra;
    struct trove_diag diag = {0};

    if (!co->url)
        return cli_error("export", "--token-file goes with --url URL");
    if (cli_exclusive("export", (co->given & CLI_C_STORE) != 0, "--store", 1, "--url"))
        return 2;
    if (in)
        return cli_error("export", "%s is a local input; with --url give --capture NAME (a "
                                   "capture of the service; `trove ls --url` lists them)", in);
    if (local_only)
        return cli_error("export", "%s shapes a local export; the service's export has its "
                                   "own options: drop it with --url", local_only);
    if (format == FMT_DIR)
        return cli_error("export", "--format dir makes a directory here; the service sends its "
                                   "files in one zip: give --format dir.zip");
    if (cli_exclusive("export", co->json, "--json", co->out && !strcmp(co->out, "-"),
                      "-o - (stdout)"))
        return 2;
    if (!capture || !co->out)
        return cli_error("export", "with --url, needs --capture NAME and -o OUT; see `trove "
                                   "export --help`");
    if (from_ns > to_ns)
        return cli_error("export", "--from-ns %llu is after --to-ns %llu",
                         (unsigned long long)from_ns, (unsigned long long)to_ns);
    if (trove_volume_name_check(capture, &diag) != TROVE_OK)
        return cli_error("export", "%s", diag.msg);
    memset(&ra, 0, sizeof ra);
    ra.url = co->url;
    ra.token_file = co->token_file;
    ra.name = capture;
    ra.out = co->out;
    ra.format = format_arg;
    ra.from_ns = from_ns;
    ra.to_ns = to_ns;
    ra.json = co->json;
    ra.quiet = co->quiet;
    return cli_remote_export(&ra);
}

/* "chrome-json" (or "json") and "perfetto" -> their TROVE_EXPORT_*; 0 for anything else. */
static int trace_format_parse(const char *s)
{
    if (!strcmp(s, "chrome-json") || !strcmp(s, "json"))
        return TROVE_EXPORT_CHROME_JSON;
    if (!strcmp(s, "perfetto"))
        return TROVE_EXPORT_PERFETTO;
    return 0;
}

/* An environment variable's count for the trace writer, checked; 0 when it is not set. */
static int env_count(const char *name, uint64_t lo, uint64_t hi, uint64_t *out)
{
    const char *v = getenv(name);

    *out = 0;
    if (!v || !*v)
        return 0;
    if (cli_parse_u64(v, out) || *out < lo || *out > hi)
        return cli_error("export", "%s: '%s' is not a count in %llu..%llu", name, v,
                         (unsigned long long)lo, (unsigned long long)hi);
    return 0;
}

/* The summary of a trace export (or its --json object). 0, or 1 after an error. */
static int trace_report(const struct cli_common *co, int quiet, const char *in, const char *out,
                        const char *what, const struct trove_export_result *r,
                        const struct trove_warnings *warn)
{
    if (co->json) {
        fputs("{\"input\":", stdout);
        cli_json_string(stdout, in, strlen(in));
        fputs(",\"output\":", stdout);
        cli_json_string(stdout, out, strlen(out));
        printf(",\"format\":\"%s\",\"events\":%llu,\"flow_rows\":%llu,\"samples\":%llu,"
               "\"samples_carried\":%llu,\"bytes\":%llu,\"bytes_per_event\":%.4f,",
               what, (unsigned long long)r->events, (unsigned long long)r->flow_rows,
               (unsigned long long)r->samples, (unsigned long long)r->samples_carried,
               (unsigned long long)r->bytes,
               r->events ? (double)r->bytes / (double)r->events : 0.0);
        cli_json_warnings(stdout, warn);
        fputs("}\n", stdout);
        if (fflush(stdout) != 0)
            return cli_error("export", "writing stdout: %s", strerror(errno));
    } else if (!quiet) {
        fprintf(stderr, "trove export: %llu events, %llu flow rows%s -> %s (%s): %llu bytes, "
                        "%.2f bytes/event\n",
                (unsigned long long)r->events, (unsigned long long)r->flow_rows,
                r->samples_carried ? ", the profile's samples" : "", out, what,
                (unsigned long long)r->bytes,
                r->events ? (double)r->bytes / (double)r->events : 0.0);
        if (co->verbose && r->runs)
            fprintf(stderr, "trove export: sorted in %llu runs (%llu merge passes, %llu bytes) "
                            "of a temporary file\n",
                    (unsigned long long)r->runs, (unsigned long long)r->passes,
                    (unsigned long long)r->spill_bytes);
    }
    return 0;
}

/* A local export, by the input layer (trove_export): the input or capture, the format and
 * the encoding as parsed. The exit status. */
static int export_local(const struct cli_common *co, const char *in, const char *capture,
                        const char *name, const char *out, int xformat, const char *format,
                        int deflate, const struct trove_tables_options *topt, const char *mode,
                        const char *codec, uint64_t from_ns, uint64_t to_ns, int quiet)
{
    struct trove_export_options x;
    struct trove_export_result r;
    struct trove_warnings warn, got;
    struct cli_load_options lo = co->in;
    struct trove_diag diag = {0};
    struct cli_glue g;
    uint64_t run = 0, fan_in = 0;
    int rc;

    memset(&x, 0, sizeof x);
    memset(&warn, 0, sizeof warn);
    memset(&r, 0, sizeof r);
    if (xformat >= TROVE_EXPORT_CHROME_JSON &&
        (env_count("TROVE_EXPORT_RUN_EVENTS", 1, SIZE_MAX, &run) ||
         env_count("TROVE_EXPORT_FAN_IN", 2, TROVE_TRACE_FAN_IN_MAX, &fan_in)))
        return 1;
    lo.quiet = quiet;
    lo.store = co->store;
    lo.warnings = &warn;
    cli_glue_begin(&g, "export", &lo, &got, &x.in_opt);
    x.format = xformat;
    x.capture = capture;
    x.store = co->store;
    x.from_ns = from_ns;
    x.to_ns = to_ns;
    x.in = in;
    x.out = out;
    x.deflate = deflate;
    x.topt = *topt;
    x.manifest_name = name;
    x.trace_run_events = (size_t)run;
    x.trace_fan_in = (unsigned)fan_in;
    rc = trove_export(&x, &r, &diag);
    if (cli_glue_end(&g, &lo, &got, rc, &diag))
        return 1;
    if (xformat >= TROVE_EXPORT_CHROME_JSON)
        return trace_report(co, quiet, capture ? capture : in, out, format, &r, &warn);
    return export_report(co, quiet, capture ? capture : in, out, format, mode, codec, r.events,
                         r.bytes, &warn);
}

int cmd_export(int argc, char **argv)
{
    static const char *const formats[] = {"bundle", "parquet", "dir"};
    static const char *const codecs[] = {"none", "zstd", "gzip"};
    /* by enum trove_tables_mode */
    static const char *const modes[] = {"delta-dict", "plain", "dict"};
    struct cli_common co;
    struct trove_tables_options topt;
    struct trove_bundle_manifest m;
    const char *in = NULL, *out = NULL, *name = NULL, *capture = NULL;
    const char *format_arg = "bundle", *local_only = NULL;
    uint64_t from_ns = 0, to_ns = UINT64_MAX;
    int ranged = 0, trace = 0;
    int format = FMT_BUNDLE, deflate = 0, quiet = 0;

    trove_tables_defaults(&topt);
    cli_common_init(&co);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc, r;
        if (cli_is_help(a)) {
            export_usage(stdout);
            return 0;
        }
        if ((r = cli_common_opt("export", argc, argv, &i,
                                CLI_C_JSON | CLI_C_QUIET | CLI_C_VERBOSE | CLI_C_INPUT |
                                    CLI_C_STORE | CLI_C_OUTPUT | CLI_C_REMOTE,
                                &co)) == 2)
            return 2;
        if (r) {
            if (co.given & CLI_C_INPUT)
                local_only = local_only ? local_only : a;
            continue;
        }
        /* The encoding options shape a local export; the service has its own. */
        if (!strcmp(a, "--codec") || !strcmp(a, "--encoding") || !strcmp(a, "--row-group") ||
            !strcmp(a, "--name") || !strcmp(a, "--zip-deflate") || !strcmp(a, "--no-verify"))
            local_only = local_only ? local_only : a;
        if (!strcmp(a, "--format") && has_value) {
            format_arg = argv[++i];
            trace = 0;
            if (!strcmp(argv[i], "dir.zip"))
                format = FMT_DIR_ZIP;
            else if ((trace = trace_format_parse(argv[i])) != 0)
                format = FMT_TRACE;
            else if ((format = parse_choice(argv[i], formats, 3)) < 0)
                return cli_error("export", "--format: '%s' is not bundle, parquet, dir, "
                                           "chrome-json or perfetto (or, with --url, dir.zip)",
                                 argv[i]);
        } else if (!strcmp(a, "--codec") && has_value) {
            if ((topt.codec = parse_choice(argv[++i], codecs, 3)) < 0)
                return cli_error("export", "--codec: '%s' is not none, zstd or gzip", argv[i]);
        } else if (!strcmp(a, "--encoding") && has_value) {
            if ((topt.mode = parse_choice(argv[++i], modes, 3)) < 0)
                return cli_error("export", "--encoding: '%s' is not plain, dict or delta-dict",
                                 argv[i]);
        } else if (!strcmp(a, "--row-group") && has_value) {
            if (cli_parse_u64(argv[++i], &topt.row_group_rows) || topt.row_group_rows < 1 ||
                topt.row_group_rows > (1ull << 32))
                return cli_error("export", "--row-group: '%s' is not a count in 1..4G", argv[i]);
        } else if (!strcmp(a, "--name") && has_value) {
            name = argv[++i];
        } else if (!strcmp(a, "--zip-deflate")) {
            deflate = 1;
        } else if (!strcmp(a, "--capture") && has_value) {
            capture = argv[++i];
        } else if (!strcmp(a, "--no-verify")) {
            cli_store_no_verify();
        } else if (!strcmp(a, "--from-ns") && has_value) {
            if (cli_parse_u64(argv[++i], &from_ns))
                return cli_error("export", "--from-ns: '%s' is not a count of nanoseconds", argv[i]);
            ranged = 1;
        } else if (!strcmp(a, "--to-ns") && has_value) {
            if (cli_parse_u64(argv[++i], &to_ns))
                return cli_error("export", "--to-ns: '%s' is not a count of nanoseconds", argv[i]);
            ranged = 1;
        } else if (a[0] == '-' && a[1] && !has_value) {
            return cli_error("export", "%s: unknown option or missing value; see `trove export "
                                       "--help`", a);
        } else if (a[0] == '-' && a[1]) {
            return cli_error("export", "unknown option '%s'; see `trove export --help`", a);
        } else if (!in) {
            in = a;
        } else {
            return cli_error("export", "unexpected argument '%s'; see `trove export --help`", a);
        }
    }
    out = co.out;
    quiet = co.quiet || co.json;
    if (co.url || co.token_file)
        return export_remote(&co, in, capture, format, format_arg, local_only, from_ns, to_ns);
    if (format == FMT_DIR_ZIP)
        return cli_error("export", "--format dir.zip is what a service sends (with --url); "
                                   "here, give --format dir or bundle");
    if (capture && in)
        return cli_error("export", "IN and --capture both name what to export: give one");
    if (!capture && ranged)
        return cli_error("export", "--from-ns and --to-ns go with --capture NAME");
    if (cli_exclusive("export", co.json, "--json", out && !strcmp(out, "-"), "-o - (stdout)"))
        return 2;
    if (!capture && cli_store_for_input("export", in, &co))
        return 2;
    if ((!in && !capture) || !out)
        return cli_error("export", "needs IN (or --capture NAME) and -o OUT; see `trove export "
                                   "--help`");
    if (deflate && format != FMT_BUNDLE)
        return cli_error("export", "--zip-deflate applies to --format bundle only");
    if (name && strlen(name) >= sizeof m.capture)
        return cli_error("export", "--name: longer than %zu bytes", sizeof m.capture - 1);
    return export_local(&co, in, capture, name, out,
                        format == FMT_TRACE ? trace
                        : format == FMT_PARQUET ? TROVE_EXPORT_PARQUET
                        : format == FMT_DIR     ? TROVE_EXPORT_DIR
                                                : TROVE_EXPORT_BUNDLE,
                        format == FMT_TRACE ? format_arg : formats[format], deflate, &topt,
                        modes[topt.mode], codecs[topt.codec], from_ns, to_ns, quiet);
}

