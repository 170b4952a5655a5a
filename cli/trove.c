/*
 * trove.c: the one trove binary. Git-style: `trove <command> [args]`, each command in its
 * own file under tools/ (benchmarks under bench/), each with --help.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"convert", cmd_convert, "any input to a wire stream (raw, packed or deflate frames)"},
    {"cat", cmd_cat, "print the events of any input as text or JSON lines"},
    {"export", cmd_export, "export any input as Parquet, or as a Chrome JSON or Perfetto trace"},
    {"import", cmd_import, "store any input as a capture, or write it as a wire stream (-o)"},
    {"ls", cmd_ls, "list the captures in the store: events, segments, time range, bytes"},
    {"replay", cmd_replay, "stream a capture (or a time range of it) out of the store"},
    {"serve", cmd_serve, "run the live service: producers in, viewers and the store out"},
    {"record", cmd_record, "send any input to the service as a capture, or sample a process"},
    {"top", cmd_top, "the hottest functions of a capture's sampled call stacks"},
    {"stats", cmd_stats, "per-name durations of a capture: count, total, self, p50, p99, max"},
    {"diff", cmd_diff, "what changed between two captures, per name; --fail-if gates a CI job"},
    {"index", cmd_index, "give captures their summaries (what views and statistics read)"},
    {"watch", cmd_watch, "watch a live capture: a stats line, and the stream to a file"},
    {"gen", cmd_gen, "generate a synthetic capture (the documented model)"},
    {"bench", cmd_bench, "run a benchmark: trove bench wire|bitpack|put|recipe|parquet|stream|serve"},
    {"volume", cmd_volume, "create, write, read and list volumes in a deduplicating store"},
    {"snapshot", cmd_snapshot, "snapshot a volume: a read-only copy sharing its blocks"},
    {"verify", cmd_verify, "check a store: every object present, sized right, not damaged"},
    {"gc", cmd_gc, "delete the objects no volume or snapshot names"},
    {"store", cmd_store, "copy a store's volumes and objects to another store (fs or s3://)"},
};

/* `--s3-endpoint URL` (or `=URL`) anywhere on the line is $TROVE_S3_ENDPOINT for every
 * command, so that each command that names a store takes it; it is removed from argv.
 * Returns the new argc, or -1 when the value is missing. */
static int take_s3_endpoint(int argc, char **argv)
{
    int out = 1;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--")) {
            while (i < argc)
                argv[out++] = argv[i++];
            break;
        }
        if (!strcmp(argv[i], "--s3-endpoint")) {
            if (i + 1 >= argc || !*argv[i + 1])
                return -1;
            v = argv[++i];
        } else if (!strncmp(argv[i], "--s3-endpoint=", 14)) {
            v = argv[i] + 14;
            if (!*v)
                return -1;
        }
        if (v)
            setenv("TROVE_S3_ENDPOINT", v, 1);
        else
            argv[out++] = argv[i];
    }
    argv[out] = NULL;
    return out;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: trove <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nInputs: a Chrome JSON trace (also .gz, .zst), a Perfetto trace, a wire stream, a\n"
               "bundle, a Parquet events file, a dataset directory, store:NAME, or - (stdin), told\n"
               "from their bytes.\n"
               "Shared options: --wire, --batch, --json, -q, -v, --input-format, --store, -o.\n"
               "A store is a directory or s3://BUCKET[/PREFIX] (--s3-endpoint URL or\n"
               "$TROVE_S3_ENDPOINT, AWS_* credentials; see docs/s3.md).\n"
               "ls, export, import, replay and stats reach a running `trove serve` with --url URL\n"
               "instead of --store (its token: --token-file FILE or $TROVE_TOKEN).\n"
               "`trove help <command>` (or `trove <command> --help`) describes a command.\n");
}

int main(int argc, char **argv)
{
    if ((argc = take_s3_endpoint(argc, argv)) < 0) {
        fprintf(stderr, "trove: --s3-endpoint needs a URL (http://HOST:PORT or https://...)\n");
        return 2;
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "help") == 0 && argc > 2) {
        /* `trove help CMD [SUB]` is `trove CMD [SUB] --help`. */
        char *args[4] = {argv[2], argc > 3 ? argv[3] : (char *)"--help", (char *)"--help", NULL};
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (strcmp(argv[2], commands[i].name) == 0)
                return commands[i].fn(argc > 3 ? 3 : 2, args);
        fprintf(stderr, "trove help: '%s' is not a trove command; see `trove --help`\n",
                argv[2]);
        return 2;
    }
    if (cli_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("trove %s\n", trove_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "trove: '%s' is not a trove command; see `trove --help`\n", argv[1]);
    return 2;
}
