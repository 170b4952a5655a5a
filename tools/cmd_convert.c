/*
 * cmd_convert.c: `trove convert IN OUT --to raw|packed|deflate` — a Chrome JSON trace or any
 * wire stream in, a wire stream out: names frames, then frames of --batch events. A wire
 * input is converted frame by frame in constant memory; a Chrome trace is imported whole
 * first, since its events must be sorted. OUT is written through cli_out: a file appears
 * only when complete (a failure leaves what was there), a device or pipe is written in
 * place.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void convert_usage(FILE *f)
{
    fprintf(f,
            "usage: trove convert IN OUT [--to raw|packed|deflate] [--batch N]\n"
            "                    [--input-format auto|chrome-json|wire] [--strict] [--quiet]\n"
            "\n"
            "Convert a Chrome trace JSON file or a trove wire stream (IN, '-' for stdin) into a\n"
            "wire stream (OUT, '-' for stdout): a names frame, then frames of N events.\n"
            "  --to FORMAT        raw (32-byte records), packed (default), deflate (packed+deflate)\n"
            "  --batch N          events per frame, 1..65536 (default 2048)\n"
            "  --input-format F   auto (default: detected from the first byte), chrome-json, wire\n"
            "  --strict           a Chrome B without E (or E without B) is an error, not a warning\n"
            "  --quiet            no summary or warnings on stderr\n");
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
        return cli_error("convert", "encoding: %s%s", trove_strerror(rc),
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
        return cli_error("convert", "encoding names: %s", trove_strerror(rc));
    return put_frame(c);
}

int cmd_convert(int argc, char **argv)
{
    struct cli_load_options lo = {CLI_INPUT_AUTO, 0, 0, 0, NULL};
    struct conv c;
    struct cli_sink sink = {conv_events, conv_names, &c};
    const char *in = NULL, *outp = NULL;
    struct cli_out out = {0};
    int format = TROVE_WIRE_PACKED, status = 1;
    uint64_t batch = TROVE_BATCH_DEFAULT;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            convert_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--to") && i + 1 < argc) {
            format = trove_wire_format_parse(argv[++i]);
            if (format < TROVE_WIRE_RAW || format > TROVE_WIRE_DEFLATE)
                return cli_error("convert", "--to: '%s' is not raw, packed or deflate", argv[i]);
        } else if (!strcmp(a, "--batch") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &batch) || batch < 1 || batch > TROVE_WIRE_MAX_EVENTS)
                return cli_error("convert", "--batch: '%s' is not a count in 1..65536", argv[i]);
        } else if (!strcmp(a, "--input-format") && i + 1 < argc) {
            if ((lo.format = cli_input_format_parse(argv[++i])) < 0)
                return cli_error("convert", "--input-format: '%s' is not auto, chrome-json or wire",
                                 argv[i]);
        } else if (!strcmp(a, "--strict")) {
            lo.strict = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            lo.quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_error("convert", "unknown option '%s'; see `trove convert --help`", a);
        } else if (!in) {
            in = a;
        } else if (!outp) {
            outp = a;
        } else {
            return cli_error("convert", "unexpected argument '%s'", a);
        }
    }
    if (!in || !outp) {
        convert_usage(stderr);
        return 2;
    }
    memset(&c, 0, sizeof c);
    c.out_path = outp;
    c.format = format;
    c.batch = (size_t)batch;
    if (cli_out_open("convert", outp, 1, &out))
        return 1;
    c.out = out.f;
    if (trove_wire_encoder_new(&c.enc) != TROVE_OK ||
        !(c.pending = malloc(c.batch * sizeof *c.pending))) {
        cli_error("convert", "out of memory");
        goto out;
    }
    if (cli_read("convert", in, &lo, &sink, NULL) != 0 || flush_pending(&c) != 0)
        goto out;
    c.out = NULL;
    if (cli_out_commit("convert", &out))
        goto out;
    if (!lo.quiet)
        fprintf(stderr, "trove convert: %llu events -> %s (%s): %llu bytes, %.2f bytes/event\n",
                (unsigned long long)c.events, outp, trove_wire_format_name(format),
                (unsigned long long)c.bytes, c.events ? (double)c.bytes / (double)c.events : 0.0);
    status = 0;
out:
    cli_out_abort(&out);
    trove_bytes_free(&c.frame);
    free(c.pending);
    trove_wire_encoder_free(c.enc);
    return status;
}
