/*
 * cmd_cat.c: `trove cat IN [--json]` — the events of any input (cli_input.c) as text, one
 * per line, or as JSON lines, with event, thread and process names resolved from the names
 * table. A wire stream is printed as it is read, in constant memory.
 */
#include <string.h>

#include "cli.h"

static void cat_usage(FILE *f)
{
    fprintf(f,
            "usage: trove cat IN [--json] [--limit N] [--input-format F] [--strict] [-q] [-v]\n"
            "\n"
            "Print the events of IN, one a line. " INPUT_HELP
            "  --json             one JSON object per line instead of text columns\n"
            "  --limit N          stop after N events\n"
            COMMON_HELP_INPUT "  --store DIR        the store of a store:NAME input\n"
            COMMON_HELP_QV
            "Text columns: start_ns dur_ns pid tid kind depth extra name [thread]\n");
}

struct cat_ctx {
    int json;
    uint64_t left; /* events still to print */
};

static int cat_events(void *ctx, const struct trove_event *ev, size_t n, const struct trove_names *names)
{
    struct cat_ctx *c = ctx;
    for (size_t i = 0; i < n && c->left > 0; i++, c->left--)
        cli_print_event(stdout, &ev[i], names, c->json);
    if (ferror(stdout))
        return cli_error("cat", "writing stdout failed");
    /* --limit reached: stop reading (a nonzero return ends the read; not an error). */
    return c->left == 0 ? -1 : 0;
}

int cmd_cat(int argc, char **argv)
{
    struct cli_common co;
    struct trove_names *names = NULL;
    struct cat_ctx c;
    struct cli_sink sink = {cat_events, NULL, &c};
    const char *in = NULL;
    int status = 1, r;
    uint64_t limit = UINT64_MAX;

    cli_common_init(&co);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            cat_usage(stdout);
            return 0;
        }
        if ((r = cli_common_opt("cat", argc, argv, &i,
                                CLI_C_JSON | CLI_C_QUIET | CLI_C_VERBOSE | CLI_C_INPUT |
                                    CLI_C_STORE,
                                &co)) == 2)
            return 2;
        if (r) {
            continue;
        } else if (!strcmp(a, "--limit") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &limit))
                return cli_error("cat", "--limit: '%s' is not a count", argv[i]);
        } else if (a[0] == '-' && a[1]) {
            return cli_error("cat", "unknown option or missing value '%s'; see `trove cat "
                                    "--help`", a);
        } else if (!in) {
            in = a;
        } else {
            return cli_error("cat", "unexpected argument '%s'; see `trove cat --help`", a);
        }
    }
    if (!in) {
        cat_usage(stderr);
        return 2;
    }
    if (cli_store_for_input("cat", in, &co))
        return 2;
    if (trove_names_new(&names) != TROVE_OK) {
        cli_error("cat", "out of memory");
        goto out;
    }
    c.json = co.json;
    c.left = limit;
    if (limit > 0 && cli_read("cat", in, &co.in, &sink, names) != 0 && c.left > 0)
        goto out;
    if (fflush(stdout) != 0) {
        cli_error("cat", "writing stdout failed");
        goto out;
    }
    status = 0;
out:
    trove_names_free(names);
    return status;
}
