/*
 * cmd_bench.c: `trove bench <name> ...` — dispatch to a benchmark in bench/. Benchmarks are
 * subcommands so a user can run them on their own data, and docs/BENCHMARKS.md gives each
 * table with the command that made it.
 */
#include <string.h>

#include "bench.h"
#include "cli.h"

struct bench_entry {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct bench_entry benches[] = {
    {"wire", bench_wire, "wire formats vs protobuf varints, zlib, zstd, lz4: size and CPU"},
    {"bitpack", bench_bitpack, "bit packing, widths 1..32: vs memcpy, a naive packer, Stream VByte"},
    {"put", bench_put, "trove volume put vs cp + sync on the same disk; dedup of a second put"},
    {"recipe", bench_recipe, "recipe v1 vs v3: size, serialize and load vs memcpy, 1,000-slot commits"},
    {"parquet", bench_parquet, "the events table as Parquet: trove's encodings and codecs vs DuckDB"},
    {"stream", bench_stream, "replay from a slow store: serial vs prefetch vs prefetch + sender"},
    {"client", bench_client, "libtrove-client: ns per zone, service draining or absent, vs the floor"},
    {"serve", bench_serve, "the live service: producers, viewers and the store on loopback"},
    {"soak", bench_soak, "the soak's producer, viewer and store check (bench/soak.sh, make soak)"},
    {"sample", bench_sample, "sampling: overhead on a program at 999 Hz; symbolizing cold and warm"},
    {"attrs", bench_attrs, "a trace's args as an attributes object vs zstd -19 of JSON lines"},
};

static void bench_usage(FILE *f)
{
    fprintf(f, "usage: trove bench <benchmark> [options]\n\nbenchmarks:\n");
    for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++)
        fprintf(f, "  %-7s %s\n", benches[i].name, benches[i].summary);
    fprintf(f, "\n`trove bench <benchmark> --help` describes a benchmark's options.\n");
}

int cmd_bench(int argc, char **argv)
{
    if (argc < 2) {
        bench_usage(stderr);
        return 2;
    }
    if (cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
        bench_usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++)
        if (!strcmp(argv[1], benches[i].name))
            return benches[i].fn(argc - 1, argv + 1);
    return cli_error("bench", "'%s' is not a benchmark; see `trove bench --help`", argv[1]);
}
