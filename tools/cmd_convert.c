/*
 * cmd_convert.c: `trove convert IN OUT --to raw|packed|deflate` — a Chrome JSON trace or any
 * wire stream in, a wire stream out: one names frame, then frames of --batch events.
 * The output is written to OUT.tmp and renamed over OUT only when complete, so a failure
 * never leaves a file that looks finished.
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

/* Encode the whole capture into one buffer: names frame, then event frames. */
static int encode_stream(const struct trove_events *ev, const struct trove_names *names, int format,
                         size_t batch, struct trove_bytes *out)
{
    struct trove_wire_encoder *enc = NULL;
    int rc = trove_wire_encoder_new(&enc);
    if (rc == TROVE_OK)
        rc = trove_wire_encode_names(names, 0, trove_names_count(names), out);
    for (size_t i = 0; rc == TROVE_OK && i < ev->len; i += batch) {
        size_t n = ev->len - i < batch ? ev->len - i : batch;
        rc = trove_wire_encode(enc, format, ev->ev + i, n, out);
    }
    trove_wire_encoder_free(enc);
    return rc;
}

/* Write buf to path atomically (path.tmp, fsync, rename), or to stdout for "-". */
static int write_output(const char *cmd, const char *path, const struct trove_bytes *buf)
{
    char tmp[4096];
    FILE *f;
    int ok;

    if (!strcmp(path, "-")) {
        if (isatty(STDOUT_FILENO))
            return cli_error(cmd, "refusing to write a binary stream to a terminal; give OUT or "
                                  "redirect stdout");
        if (fwrite(buf->ptr, 1, buf->len, stdout) != buf->len || fflush(stdout) != 0)
            return cli_error(cmd, "writing stdout: %s", strerror(errno));
        return 0;
    }
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return cli_error(cmd, "output path too long: %s", path);
    if (!(f = fopen(tmp, "wb")))
        return cli_error(cmd, "cannot create %s: %s", tmp, strerror(errno));
    ok = fwrite(buf->ptr, 1, buf->len, f) == buf->len && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return cli_error(cmd, "writing %s: %s", path, strerror(e));
    }
    return 0;
}

int cmd_convert(int argc, char **argv)
{
    struct cli_load_options lo = {CLI_INPUT_AUTO, 0, 0};
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_bytes out = {0};
    const char *in = NULL, *outp = NULL;
    int format = TROVE_WIRE_PACKED, status = 1, rc;
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
    if (trove_names_new(&names) != TROVE_OK) {
        cli_error("convert", "out of memory");
        goto out;
    }
    if (cli_load("convert", in, &lo, &ev, names) != 0)
        goto out;
    if ((rc = encode_stream(&ev, names, format, (size_t)batch, &out)) != TROVE_OK) {
        cli_error("convert", "encoding %s: %s", in, trove_strerror(rc));
        goto out;
    }
    if (write_output("convert", outp, &out) != 0)
        goto out;
    if (!lo.quiet)
        fprintf(stderr, "trove convert: %zu events, %zu names -> %s (%s): %zu bytes, %.2f bytes/event\n",
                ev.len, trove_names_count(names), outp, trove_wire_format_name(format), out.len,
                ev.len ? (double)out.len / (double)ev.len : 0.0);
    status = 0;
out:
    trove_bytes_free(&out);
    trove_events_free(&ev);
    trove_names_free(names);
    return status;
}
