/*
 * cmd_gen.c: `trove gen` — write a synthetic capture (the model in docs/gen.md) as a wire
 * stream: one names frame, then frames of --batch events in the chosen format.
 *
 * The names frame comes first and names only what the events use, so the generator runs
 * twice (trove_gen_open / _next, include/trove/gen.h): once to its end for the names, then
 * again for the events, each batch encoded and written as it comes. Memory is thus the
 * generator's (its call trees and a round of events) and a megabyte of output, not the
 * capture: a billion events are written as a thousand are. A file output is
 * written beside FILE and renamed over it only once complete and flushed (cli_out), so a
 * failure (disk full, interrupted run) leaves no file that looks finished.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "trove/attrs.h"

static void gen_usage(FILE *f)
{
    struct trove_gen_options d;
    trove_gen_defaults(&d);
    fprintf(f,
            "usage: trove gen [-o FILE] [--events N] [--seed S] [--processes P] [--threads T]\n"
            "                 [--names N] [--zipf S] [--tick NS] [--slow NAME=FACTOR ...]\n"
            "                 [--wire raw|packed|deflate] [--batch N] [--json] [-q] [-v]\n"
            "\n"
            "Generate a synthetic profiler capture (P processes x T threads of nested zones;\n"
            "the model is described in docs/gen.md) and write it as a trove wire stream: a\n"
            "names frame, then frames of N events. The same options give the same bytes.\n"
            "  -o FILE          output file (written beside it, renamed when complete);\n"
            "                   '-' or no -o writes to stdout, which must not be a terminal\n"
            "  --events N       events to generate (default %llu; k/M/G suffixes allowed)\n"
            "  --seed S         PRNG seed (default %llu)\n"
            "  --processes P    processes, 1..4096 (default %u)\n"
            "  --threads T      threads per process, 1..4096, P*T <= 65536 (default %u)\n"
            "  --names N        distinct event names (Zipf support), 1..65536 (default %u)\n"
            "  --zipf S         Zipf exponent of name frequencies, 0..10 (default %.1f)\n"
            "  --tick NS        clock resolution: times are multiples of NS (default %llu)\n"
            "  --slow NAME=FACTOR  a controlled regression: every zone, frame and lock wait\n"
            "                   named NAME (zone_0 .. zone_<names-1>) lasts FACTOR times as\n"
            "                   long, in (0, 1000]: more (or less) time after its last child,\n"
            "                   so its parents grow with it and later events move; all else\n"
            "                   is as without it. Repeatable, up to %d names\n"
            "  --attrs          the zones' attributes too (a path, a size, a frame's text and\n"
            "                   a value on some names: docs/gen.md), as an attrs frame before\n"
            "                   each events frame that has some; `trove import` and, with\n"
            "                   --live, the service keep them\n"
            "  --wire W         raw (32-byte records), packed (default), deflate (--to is\n"
            "                   the same)\n"
            "  --batch N        events per frame, 1..65536 (default %u)\n"
            "  --json           print the result as one JSON object on stdout: output, events,\n"
            "                   names, wire, batch, bytes, bytes_per_event (then -o FILE is\n"
            "                   needed)\n"
            "  -q, --quiet      no summary line on stderr\n"
            "  -v, --verbose    the summary with the options used\n"
            "\n"
            "       trove gen --live NAME --rate N --seconds S [--socket PATH] [--append]\n"
            "                 [--store DIR] [model options] [--wire W] [--batch N] [--json]\n"
            "\n"
            "Send the model's events to the running service (`trove serve`) as capture NAME,\n"
            "N a second for S seconds, their times moved to when they are sent: each run\n"
            "of the model (up to a million events, sent round and round) is stretched or\n"
            "squeezed to last as long as sending it does, so a thread's zones keep their\n"
            "order and nesting at any rate (durations scale with it).\n"
            "  --socket PATH    the service's socket (default: --store DIR's if given, else\n"
            "                   $TROVE_SOCKET if set, else the default store's)\n"
            "  --append         continue capture NAME rather than start it anew\n"
            "Exit status: 0 all sent and taken; 1 an error (a refusal, the service closing the\n"
            "connection with its reason); 2 a usage error; 3 the service stopped under it\n"
            "(\"service stopped\": what it took until then is kept).\n",
            (unsigned long long)d.events, (unsigned long long)d.seed, d.processes, d.threads,
            d.names, d.zipf_s, (unsigned long long)d.tick_ns, TROVE_GEN_MAX_SLOW,
            (unsigned)TROVE_BATCH_DEFAULT);
}

static int is_value_option(const char *a)
{
    static const char *const opts[] = {"--events", "--seed", "--processes", "--threads",
                                       "--names",  "--zipf", "--tick",      "--live",
                                       "--rate",   "--seconds", "--socket", "--slow"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (!strcmp(a, opts[i]))
            return 1;
    return 0;
}

/* Parse a u32 option value in [lo, hi]. */
static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    uint64_t v;
    if (cli_parse_u64(s, &v) || v < lo || v > hi)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/*
 * The --slow arguments, NAME=FACTOR each, into slow[0..n): NAME one of the model's names
 * (zone_N, N < names), FACTOR in (0, 1000], each name once. Checked after every option is
 * read, as --names may come after them. Returns 0, or 2 after saying what is wrong.
 */
static int parse_slow(char **args, size_t n, uint32_t names, struct trove_gen_slow *slow)
{
    for (size_t i = 0; i < n; i++) {
        const char *a = args[i], *eq = strchr(a, '='), *digits = NULL;
        char *end = NULL;
        unsigned long id = 0;
        double f;

        if (!eq)
            return cli_error("gen", "--slow %s: want NAME=FACTOR, e.g. zone_3=1.3", a) + 1;
        errno = 0;
        if (!strncmp(a, "zone_", strlen("zone_")))
            digits = a + strlen("zone_");
        if (digits && *digits >= '0' && *digits <= '9')
            id = strtoul(digits, &end, 10);
        if (!end || (*digits == '0' && end != digits + 1) || end != eq || errno || id >= names)
            return cli_error("gen", "--slow %s: the model's event names are zone_0 .. zone_%u "
                                    "(see `trove stats`)", a, names - 1) + 1;
        errno = 0;
        f = strtod(eq + 1, &end);
        if (errno || end == eq + 1 || *end || !(f > 0.0 && f <= 1000.0))
            return cli_error("gen", "--slow %s: FACTOR must be a number in (0, 1000], e.g. "
                                    "1.3 for 30 %% slower", a) + 1;
        for (size_t k = 0; k < i; k++)
            if (slow[k].name_id == id)
                return cli_error("gen", "--slow %s: zone_%lu is slowed twice", a, id) + 1;
        slow[i].name_id = (uint32_t)id;
        slow[i].factor = f;
    }
    return 0;
}

/* The names of the events opt makes: the generator run once to its end, its events dropped
 * (the names frame goes first, so they are needed before any event is written). */
static int gen_names(const struct trove_gen_options *o, size_t batch, struct trove_event *buf,
                     struct trove_names *names)
{
    struct trove_gen *g = NULL;
    struct cli_progress prog;
    size_t n;
    int rc;

    cli_progress_begin(&prog, "naming", o->events);
    if ((rc = trove_gen_open(o, &g)) != TROVE_OK)
        goto out;
    do {
        if ((rc = trove_gen_next(g, buf, batch, &n)) != TROVE_OK)
            goto out;
        cli_progress_update(&prog, trove_gen_count(g));
    } while (n > 0);
    rc = trove_gen_names(g, names);
out:
    cli_progress_end(&prog);
    trove_gen_free(g);
    return rc;
}

/* Generate and encode the events frame by frame into f after the names frame, a batch at a
 * time (memory: the generator's round and a megabyte of output, whatever --events is).
 * Returns TROVE_OK, a trove error or -errno; *events_out gets the events written. */
static int write_stream(FILE *f, const struct trove_gen_options *o,
                        const struct trove_names *names, int format, size_t batch, int attrs,
                        struct trove_event *ev, uint64_t *events_out, uint64_t *bytes_out)
{
    struct trove_wire_encoder *enc = NULL;
    struct trove_gen *g = NULL;
    struct trove_bytes buf = {0};
    struct cli_progress prog;
    uint64_t bytes = 0;
    size_t n = 1;
    int rc;

    cli_progress_begin(&prog, "writing", o->events);
    if ((rc = trove_wire_encoder_new(&enc)) != TROVE_OK ||
        (rc = trove_gen_open(o, &g)) != TROVE_OK)
        goto out;
    if ((rc = trove_wire_encode_names(names, 0, trove_names_count(names), &buf)) != TROVE_OK)
        goto out;
    while (n > 0) {
        if ((rc = trove_gen_next(g, ev, batch, &n)) != TROVE_OK)
            goto out;
        if (n > 0 && attrs) { /* the batch's attributes first, in an attrs frame */
            struct trove_attrs t;
            memset(&t, 0, sizeof t);
            rc = trove_gen_attrs(ev, n, trove_gen_count(g) - n, 0, &t);
            if (rc == TROVE_OK && t.n)
                rc = trove_attrs_wire_encode(&t, &buf);
            trove_attrs_free(&t);
            if (rc != TROVE_OK)
                goto out;
        }
        if (n > 0 && (rc = trove_wire_encode(enc, format, ev, n, &buf)) != TROVE_OK)
            goto out;
        /* Write in chunks of about a megabyte (and at the end). */
        if (buf.len >= (1u << 20) || n == 0) {
            if (fwrite(buf.ptr, 1, buf.len, f) != buf.len) {
                rc = errno ? -errno : -EIO;
                goto out;
            }
            bytes += buf.len;
            buf.len = 0;
        }
        cli_progress_update(&prog, trove_gen_count(g));
    }
    rc = TROVE_OK;
out:
    cli_progress_end(&prog);
    *events_out = trove_gen_count(g);
    *bytes_out = bytes;
    trove_bytes_free(&buf);
    trove_gen_free(g);
    trove_wire_encoder_free(enc);
    return rc;
}

int cmd_gen(int argc, char **argv)
{
    struct trove_gen_options o;
    struct trove_event *ev = NULL;
    struct trove_names *names = NULL;
    const char *outp = NULL;
    struct trove_output out = {0};
    struct cli_common co;
    int format, quiet, status = 1, rc, r, append = 0, attrs = 0;
    uint64_t batch, bytes = 0, rate = 0, events = 0;
    double t0, seconds = 0;
    const char *live = NULL, *sock = NULL;
    char *slow_args[TROVE_GEN_MAX_SLOW];
    struct trove_gen_slow slow[TROVE_GEN_MAX_SLOW];
    size_t nslow = 0;

    trove_gen_defaults(&o);
    cli_common_init(&co);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            gen_usage(stdout);
            return 0;
        }
        if ((r = cli_common_opt("gen", argc, argv, &i,
                                CLI_C_WIRE | CLI_C_BATCH | CLI_C_JSON | CLI_C_QUIET |
                                    CLI_C_VERBOSE | CLI_C_OUTPUT | CLI_C_STORE,
                                &co)) == 2)
            return 2;
        if (r) {
            continue;
        } else if (is_value_option(a) && !v) {
            return cli_error("gen", "%s needs a value; see `trove gen --help`", a);
        } else if (!strcmp(a, "--events")) {
            if (cli_parse_u64(argv[++i], &o.events) || o.events < 1 || o.events > (1ull << 32))
                return cli_error("gen", "--events: '%s' is not a count in 1..4G", argv[i]);
        } else if (!strcmp(a, "--seed")) {
            if (cli_parse_u64(argv[++i], &o.seed))
                return cli_error("gen", "--seed: '%s' is not an unsigned integer", argv[i]);
        } else if (!strcmp(a, "--processes")) {
            if (parse_u32(argv[++i], 1, 4096, &o.processes))
                return cli_error("gen", "--processes: '%s' is not in 1..4096", argv[i]);
        } else if (!strcmp(a, "--threads")) {
            if (parse_u32(argv[++i], 1, 4096, &o.threads))
                return cli_error("gen", "--threads: '%s' is not in 1..4096", argv[i]);
        } else if (!strcmp(a, "--names")) {
            if (parse_u32(argv[++i], 1, 65536, &o.names))
                return cli_error("gen", "--names: '%s' is not in 1..65536", argv[i]);
        } else if (!strcmp(a, "--zipf")) {
            char *end;
            errno = 0;
            o.zipf_s = strtod(argv[++i], &end);
            if (errno || end == argv[i] || *end || !(o.zipf_s >= 0.0 && o.zipf_s <= 10.0))
                return cli_error("gen", "--zipf: '%s' is not a number in 0..10", argv[i]);
            if (o.zipf_s == 0.0)
                o.zipf_s = TROVE_GEN_UNIFORM; /* 0 in the options is the default exponent */
        } else if (!strcmp(a, "--live")) {
            live = argv[++i];
        } else if (!strcmp(a, "--rate")) {
            if (cli_parse_u64(argv[++i], &rate) || rate == 0)
                return cli_error("gen", "--rate: '%s' is not a count of events per second",
                                 argv[i]);
        } else if (!strcmp(a, "--seconds")) {
            char *end;
            seconds = strtod(argv[++i], &end);
            if (*end || !(seconds > 0) || seconds > 1e7)
                return cli_error("gen", "--seconds: '%s' is not a positive number", argv[i]);
        } else if (!strcmp(a, "--socket")) {
            sock = argv[++i];
        } else if (!strcmp(a, "--append")) {
            append = 1;
        } else if (!strcmp(a, "--attrs")) {
            attrs = 1;
        } else if (!strcmp(a, "--slow")) {
            if (nslow == TROVE_GEN_MAX_SLOW)
                return cli_error("gen", "--slow: at most %d names", TROVE_GEN_MAX_SLOW) + 1;
            slow_args[nslow++] = argv[++i];
        } else if (!strcmp(a, "--tick")) {
            if (cli_parse_u64(argv[++i], &o.tick_ns) || o.tick_ns < 1 || o.tick_ns > 1000000000)
                return cli_error("gen", "--tick: '%s' is not a count of ns in 1..1000000000", argv[i]);
        } else {
            return cli_error("gen", "unexpected argument '%s'; see `trove gen --help`", a);
        }
    }
    if (parse_slow(slow_args, nslow, o.names, slow))
        return 2;
    o.slow = slow;
    o.nslow = nslow;
    if (live) {
        if (cli_exclusive("gen", 1, "--live", co.out != NULL, "-o"))
            return 2;
        return cli_gen_live(live, &o, rate, seconds, sock, co.store, co.wire, co.batch, append,
                            attrs, co.json, co.quiet, co.verbose);
    }
    if (rate || seconds > 0 || sock || append)
        return cli_error("gen", "--rate, --seconds, --socket and --append go with --live NAME");
    if (co.store)
        return cli_error("gen", "--store goes with --live NAME");
    outp = co.out;
    format = co.wire;
    batch = co.batch;
    quiet = co.quiet || co.json;
    if (cli_exclusive("gen", co.json, "--json", !outp || !strcmp(outp, "-"),
                      "writing to stdout (give -o FILE)"))
        return 2;
    if ((uint64_t)o.processes * o.threads > 65536)
        return cli_error("gen", "--processes x --threads is %llu; at most 65536 threads",
                         (unsigned long long)o.processes * o.threads);
    if ((!outp || !strcmp(outp, "-")) && isatty(STDOUT_FILENO))
        return cli_error("gen", "refusing to write a binary stream to a terminal; use -o FILE or "
                                "redirect stdout");

    t0 = cli_now();
    if (trove_names_new(&names) != TROVE_OK || !(ev = calloc((size_t)batch, sizeof *ev))) {
        cli_error("gen", "out of memory");
        goto out;
    }
    /* Two runs of the generator: the first for the names, which come first in the stream,
     * the second for the events, written as they come; nothing grows with --events. */
    if ((rc = gen_names(&o, (size_t)batch, ev, names)) != TROVE_OK) {
        cli_error("gen", "generating %llu events: %s", (unsigned long long)o.events,
                  trove_strerror(rc));
        goto out;
    }
    if (cli_out_open("gen", outp, 1, &out))
        goto out;
    rc = write_stream(out.f, &o, names, format, (size_t)batch, attrs, ev, &events, &bytes);
    if (rc != TROVE_OK) {
        cli_error("gen", "writing %s: %s", out.path, trove_strerror(rc));
        goto out;
    }
    if (cli_out_commit("gen", &out))
        goto out;
    if (co.json) {
        fputs("{\"output\":", stdout);
        cli_json_string(stdout, out.path, strlen(out.path));
        printf(",\"events\":%llu,\"names\":%zu,\"wire\":\"%s\",\"batch\":%llu,\"bytes\":%llu,"
               "\"bytes_per_event\":%.4f}\n",
               (unsigned long long)events, trove_names_count(names),
               trove_wire_format_name(format), (unsigned long long)batch,
               (unsigned long long)bytes, events ? (double)bytes / (double)events : 0.0);
        if (fflush(stdout) != 0) {
            cli_error("gen", "writing stdout: %s", strerror(errno));
            goto out;
        }
    }
    if (!quiet)
        fprintf(stderr, "trove gen: %llu events, %zu names -> %s (%s, batches of %llu): %llu bytes, "
                        "%.2f bytes/event, %.2f s\n",
                (unsigned long long)events, trove_names_count(names), out.path,
                trove_wire_format_name(format), (unsigned long long)batch,
                (unsigned long long)bytes, events ? (double)bytes / (double)events : 0.0,
                cli_now() - t0);
    if (co.verbose && !quiet) {
        fprintf(stderr, "trove gen: seed %llu, %u processes x %u threads, %u names, zipf %.2f, "
                        "tick %llu ns",
                (unsigned long long)o.seed, o.processes, o.threads, o.names, o.zipf_s,
                (unsigned long long)o.tick_ns);
        for (size_t k = 0; k < nslow; k++)
            fprintf(stderr, "%s zone_%u x %g", k ? "," : ", slow", slow[k].name_id,
                    slow[k].factor);
        fputs("\n", stderr);
    }
    status = 0;
out:
    cli_out_abort(&out);
    free(ev);
    trove_names_free(names);
    return status;
}
