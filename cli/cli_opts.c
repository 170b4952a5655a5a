/*
 * cli_opts.c: the options the event commands share (cli.h: cli_common_opt), parsed in one
 * place so that one idea has one spelling everywhere: --wire (and its old name --to),
 * --batch (and --frame-events), --json, -q, -v, --input-format, --strict, --edited,
 * --store, -o, and --url and --token-file (a remote service). It sits above the input
 * layer, whose --input-format names it uses.
 */
#include "cli.h"

#include <string.h>

void cli_common_init(struct cli_common *c)
{
    memset(c, 0, sizeof *c);
    c->wire = TROVE_WIRE_PACKED;
    c->batch = TROVE_BATCH_DEFAULT;
    c->in.format = TROVE_INPUT_AUTO;
}

int cli_exclusive(const char *cmd, int a_given, const char *a, int b_given, const char *b)
{
    if (a_given && b_given) {
        cli_error(cmd, "%s and %s cannot go together; give one", a, b);
        return 2;
    }
    return 0;
}

int cli_common_opt(const char *cmd, int argc, char **argv, int *i, unsigned accepted,
                   struct cli_common *c)
{
    static const struct {
        const char *name;
        unsigned opt;
        int value; /* takes a value */
    } opts[] = {
        {"--wire", CLI_C_WIRE, 1},     {"--to", CLI_C_WIRE, 1},
        {"--batch", CLI_C_BATCH, 1},   {"--frame-events", CLI_C_BATCH, 1},
        {"--json", CLI_C_JSON, 0},     {"-q", CLI_C_QUIET, 0},
        {"--quiet", CLI_C_QUIET, 0},   {"-v", CLI_C_VERBOSE, 0},
        {"--verbose", CLI_C_VERBOSE, 0}, {"--input-format", CLI_C_INPUT, 1},
        {"--strict", CLI_C_INPUT, 0},  {"--edited", CLI_C_INPUT, 0},
        {"--store", CLI_C_STORE, 1},   {"-o", CLI_C_OUTPUT, 1},
        {"--output", CLI_C_OUTPUT, 1}, {"--url", CLI_C_REMOTE, 1},
        {"--token-file", CLI_C_REMOTE, 1},
    };
    const char *a = argv[*i], *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL, *val = NULL;
    size_t nlen = eq ? (size_t)(eq - a) : strlen(a), k;

    for (k = 0; k < sizeof opts / sizeof opts[0]; k++)
        if ((accepted & opts[k].opt) && strlen(opts[k].name) == nlen &&
            !strncmp(a, opts[k].name, nlen))
            break;
    if (k == sizeof opts / sizeof opts[0])
        return 0;
    if (!opts[k].value && eq) {
        cli_error(cmd, "%.*s takes no value", (int)nlen, a);
        return 2;
    }
    if (opts[k].value) {
        if (eq) {
            val = eq + 1;
        } else if (*i + 1 < argc) {
            val = argv[++*i];
        } else {
            cli_error(cmd, "%s needs a value; see `trove %s --help`", opts[k].name, cmd);
            return 2;
        }
    }
    c->given |= opts[k].opt;
    switch (opts[k].opt) {
    case CLI_C_WIRE:
        c->wire = trove_wire_format_parse(val);
        if (c->wire < TROVE_WIRE_RAW || c->wire > TROVE_WIRE_DEFLATE) {
            cli_error(cmd, "%s: '%s' is not raw, packed or deflate", opts[k].name, val);
            return 2;
        }
        break;
    case CLI_C_BATCH:
        if (cli_parse_u64(val, &c->batch) || c->batch < 1 || c->batch > TROVE_WIRE_MAX_EVENTS) {
            cli_error(cmd, "%s: '%s' is not a count in 1..65536", opts[k].name, val);
            return 2;
        }
        break;
    case CLI_C_JSON: c->json = 1; break;
    case CLI_C_QUIET:
        c->quiet = c->in.quiet = 1;
        cli_progress_quiet();
        break;
    case CLI_C_VERBOSE: c->verbose = c->in.verbose = 1; break;
    case CLI_C_INPUT:
        if (!strcmp(opts[k].name, "--strict")) {
            c->in.strict = 1;
        } else if (!strcmp(opts[k].name, "--edited")) {
            c->in.edited = 1;
        } else if ((c->in.format = trove_input_kind_parse(val)) < 0) {
            cli_error(cmd, "--input-format: '%s' is not auto, chrome-json, wire, bundle, "
                           "parquet, dir or capture", val);
            return 2;
        }
        break;
    case CLI_C_STORE:
        if (!*val) {
            cli_error(cmd, "--store needs a directory");
            return 2;
        }
        c->store = c->in.store = val;
        break;
    case CLI_C_OUTPUT:
        if (!*val) {
            cli_error(cmd, "%s needs a file name ('-' for stdout)", opts[k].name);
            return 2;
        }
        c->out = val;
        break;
    case CLI_C_REMOTE:
        if (!*val) {
            cli_error(cmd, "%s needs a %s", opts[k].name,
                      !strcmp(opts[k].name, "--url") ? "URL (http://HOST:PORT/)" : "file");
            return 2;
        }
        *(!strcmp(opts[k].name, "--url") ? &c->url : &c->token_file) = val;
        break;
    }
    return 1;
}

int cli_store_for_input(const char *cmd, const char *in, const struct cli_common *c)
{
    if (!(c->given & CLI_C_STORE) || !in || c->in.format == TROVE_INPUT_CAPTURE ||
        !strncmp(in, "store:", 6))
        return 0;
    cli_error(cmd, "--store names the store of a store:NAME input, and %s is not one", in);
    return 2;
}
