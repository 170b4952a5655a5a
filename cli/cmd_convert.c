/*
 * cmd_convert.c: `trove convert IN OUT --wire raw|packed|deflate` — any input (cli_input.c)
 * in, a wire stream out: names frames, then frames of --batch events. A wire input is
 * converted frame by frame in constant memory; the other kinds are read whole first. OUT is written through cli_out: a file appears
 * only when complete (a failure leaves what was there), a device or pipe is written in
 * place.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "trove/profile.h"

static void convert_usage(FILE *f)
{
    fprintf(f,
            "usage: trove convert IN OUT [--wire raw|packed|deflate] [--batch N]\n"
            "                    [--input-format F] [--strict] [--json] [-q] [-v]\n"
            "\n"
            "Convert any input into a wire stream (OUT, '-' for stdout): a names frame, then\n"
            "frames of N events. " INPUT_HELP
            "OUT is replaced only once complete; a device or FIFO is written in place.\n"
            COMMON_HELP_WIRE COMMON_HELP_BATCH COMMON_HELP_INPUT
            "  --json             print the result as one JSON object on stdout: input,\n"
            "                     output, wire, events, names, bytes, bytes_per_event and\n"
            "                     warnings (the input's dropped and skipped events, and a\n"
            "                     sampled capture's samples, which a wire stream from here\n"
            "                     does not carry: each {count, message}, also said on\n"
            "                     stderr) (OUT must then not be '-')\n"
            COMMON_HELP_QV);
}

/*
 * The conversion as a cli_sink: events are re-batched into frames of `batch`, each names
 * frame is re-encoded where it arrived, and every frame is written out as it is made.
 */
struct conv {
    const char *out_path;
    FILE *out;
    struct trove_wire_encoder *enc;
    struct trove_bytes frame;
    struct trove_event *pending; /* up to batch events not yet encoded */
    size_t npending, batch;
    int format;
    uint64_t events, bytes;
};

static int put_frame(struct conv *c)
{
    if (fwrite(c->frame.ptr, 1, c->frame.len, c->out) != c->frame.len)
        return cli_error("convert", "writing %s: %s", c->out_path, strerror(errno));
    c->bytes += c->frame.len;
    c->frame.len = 0;
    return 0;
}

static int flush_pending(struct conv *c)
{
    int rc;
    if (c->npending == 0)
        return 0;
    if ((rc = trove_wire_encode(c->enc, c->format, c->pending, c->npending, &c->frame)) != TROVE_OK)
        return cli_error("convert", "%s: encoding events: %s%s", c->out_path, trove_strerror(rc),
                         rc == TROVE_ERR_INVALID ? " (an event's pad byte is not 0)" : "");
    c->events += c->npending;
    c->npending = 0;
    return put_frame(c);
}

static int conv_events(void *ctx, const struct trove_event *ev, size_t n,
                       const struct trove_names *names)
{
    struct conv *c = ctx;
    (void)names;
    while (n > 0) {
        size_t k = c->batch - c->npending < n ? c->batch - c->npending : n;
        memcpy(c->pending + c->npending, ev, k * sizeof *ev);
        c->npending += k;
        ev += k;
        n -= k;
        if (c->npending == c->batch && flush_pending(c) != 0)
            return 1;
    }
    return 0;
}

static int conv_names(void *ctx, const struct trove_names *added)
{
    struct conv *c = ctx;
    int rc;
    /* Events read before these names go out before them: a later names frame may replace
     * a name, and the events before it keep the old one. */
    if (flush_pending(c) != 0)
        return 1;
    if ((rc = trove_wire_encode_names(added, 0, trove_names_count(added), &c->frame)) != TROVE_OK)
        return cli_error("convert", "%s: encoding names: %s", c->out_path, trove_strerror(rc));
    return put_frame(c);
}

int cmd_convert(int argc, char **argv)
{
    struct cli_common co;
    struct conv c;
    struct trove_names *names = NULL;
    struct cli_sink sink = {conv_events, conv_names, &c};
    const char *in = NULL, *outp = NULL;
    struct trove_output out = {0};
    struct trove_warnings warn;
    struct trove_profile *profile = NULL;
    int status = 1, r;

    memset(&warn, 0, sizeof warn);
    cli_common_init(&co);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            convert_usage(stdout);
            return 0;
        }
        if ((r = cli_common_opt("convert", argc, argv, &i,
                                CLI_C_WIRE | CLI_C_BATCH | CLI_C_JSON | CLI_C_QUIET |
                                    CLI_C_VERBOSE | CLI_C_INPUT | CLI_C_STORE,
                                &co)) == 2)
            return 2;
        if (r)
            continue;
        if (a[0] == '-' && a[1])
            return cli_error("convert", "unknown option '%s'; see `trove convert --help`", a);
        if (!in)
            in = a;
        else if (!outp)
            outp = a;
        else
            return cli_error("convert", "unexpected argument '%s'; see `trove convert --help`",
                             a);
    }
    if (!in || !outp) {
        convert_usage(stderr);
        return 2;
    }
    if (cli_exclusive("convert", co.json, "--json", !strcmp(outp, "-"), "OUT '-' (stdout)"))
        return 2;
    if (cli_store_for_input("convert", in, &co))
        return 2;
    if (trove_names_new(&names) != TROVE_OK)
        return cli_error("convert", "out of memory");
    memset(&c, 0, sizeof c);
    c.out_path = outp;
    c.format = co.wire;
    c.batch = (size_t)co.batch;
    if (cli_out_open("convert", outp, 1, &out))
        return 1;
    c.out = out.f;
    if (trove_wire_encoder_new(&c.enc) != TROVE_OK ||
        !(c.pending = malloc(c.batch * sizeof *c.pending))) {
        cli_error("convert", "out of memory");
        goto out;
    }
    co.in.warnings = &warn;
    if (trove_profile_new(&profile) != TROVE_OK) {
        cli_error("convert", "out of memory");
        goto out;
    }
    co.in.profile = profile; /* a bundle's or a capture's samples, to be counted */
    if (cli_read("convert", in, &co.in, &sink, names) != 0 || flush_pending(&c) != 0)
        goto out;
    if (trove_profile_sample_count(profile))
        cli_warn("convert", co.quiet, &warn, trove_profile_sample_count(profile),
                 "%s: %zu samples not carried: convert writes the events only; `trove export` "
                 "keeps them (as a bundle, or a Perfetto trace)",
                 in, trove_profile_sample_count(profile));
    c.out = NULL;
    if (cli_out_commit("convert", &out))
        goto out;
    if (co.json) {
        fputs("{\"input\":", stdout);
        cli_json_string(stdout, in, strlen(in));
        fputs(",\"output\":", stdout);
        cli_json_string(stdout, outp, strlen(outp));
        printf(",\"wire\":\"%s\",\"events\":%llu,\"names\":%zu,\"bytes\":%llu,"
               "\"bytes_per_event\":%.4f,",
               trove_wire_format_name(co.wire), (unsigned long long)c.events,
               trove_names_count(names), (unsigned long long)c.bytes,
               c.events ? (double)c.bytes / (double)c.events : 0.0);
        cli_json_warnings(stdout, &warn);
        fputs("}\n", stdout);
        if (fflush(stdout) != 0) {
            cli_error("convert", "writing stdout: %s", strerror(errno));
            goto out;
        }
    }
    if (!co.quiet && !co.json)
        fprintf(stderr, "trove convert: %llu events -> %s (%s): %llu bytes, %.2f bytes/event\n",
                (unsigned long long)c.events, outp, trove_wire_format_name(co.wire),
                (unsigned long long)c.bytes, c.events ? (double)c.bytes / (double)c.events : 0.0);
    status = 0;
out:
    cli_out_abort(&out);
    trove_profile_free(profile);
    trove_names_free(names);
    trove_bytes_free(&c.frame);
    free(c.pending);
    trove_wire_encoder_free(c.enc);
    return status;
}
