/*
 * bench.h: the benchmarks behind `trove bench <name>`. Each takes the arguments after its
 * name (argv[0] is the benchmark's name) and returns the process exit status. They use
 * only the public API (include/trove/) and the CLI helpers (cli/cli.h).
 */
#ifndef TROVE_BENCH_H
#define TROVE_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "trove/gen.h"

/* `trove bench wire`: the seed's wire table (bench/bench_wire.c). */
int bench_wire(int argc, char **argv);

/* `trove bench bitpack`: the seed's bit-packing kernel table (bench/bench_bitpack.c). */
int bench_bitpack(int argc, char **argv);

/* `trove bench put`: volume put against cp + sync, and dedup of a second put
 * (bench/bench_store.c). */
int bench_put(int argc, char **argv);

/* `trove bench recipe`: recipe format v1 against v3, the seed's size table, serialize and
 * load against a memcpy, and commits of 1,000 dirty slots (bench/bench_recipe.c). */
int bench_recipe(int argc, char **argv);

/* `trove bench parquet`: the events table as Parquet, trove's encodings and codecs against
 * DuckDB's writer and reader (bench/bench_parquet.c). */
int bench_parquet(int argc, char **argv);

/* `trove bench serve`: the live service on loopback with producer and viewer processes
 * (bench/bench_serve.c). */
int bench_serve(int argc, char **argv);

/* `trove bench soak produce|view|check`: the soak's producer, churning viewer and store check
 * (bench/bench_soak.c; bench/soak.sh runs them). */
int bench_soak(int argc, char **argv);

/* `trove bench client`: ns per zone recorded with libtrove-client, the service draining or
 * absent, against the floor loop (bench/bench_client.c). */
int bench_client(int argc, char **argv);

/* `trove bench sample`: the sampler's overhead on a program with two hot functions, and
 * symbolizing samples cold and warm (bench/bench_sample.c). */
int bench_sample(int argc, char **argv);
/* `trove bench attrs`: a trace's args as an attributes object vs zstd of JSON lines (bench_attrs.c). */
int bench_attrs(int argc, char **argv);

/* Monotonic seconds, and the median of v[0..n) (n >= 1; v is sorted in place)
 * (bench/bench_util.c). */
double bench_now(void);
double bench_median(double *v, unsigned n);
/* rm -rf path (a benchmark's scratch directory), in a child process. */
void bench_remove_tree(const char *path);

/* `trove bench stream`: replaying a stored capture through a store with injected latency,
 * serial against prefetch and prefetch + sender (bench/bench_stream.c). */
int bench_stream(int argc, char **argv);

/*
 * The capture a benchmark measures: --input FILE (--input-format, --events N: its first N)
 * or `trove gen` data (--events, --seed). bench_source_arg takes argv[*i] if it is one of
 * those options (and its value, advancing *i): 1 if taken, 0 if not one of them, -1 after
 * printing the error. bench_source_load loads or generates the events (names too; quiet:
 * no import warnings) and describes them in desc; 0, or nonzero after printing the error.
 * --common keeps only what every trace tool keeps the same way (Chrome X, B/E, I, b/e and C:
 * thread zones, nestable async spans, instants and counters; no async instants, legacy
 * spans, frames or locks), so that sizes compare with another tool's on the same content.
 */
struct bench_source {
    struct cli_load_options lo;
    struct trove_gen_options go;
    const char *input;
    uint64_t events;
    int have_events;
    int common;
};
void bench_source_init(struct bench_source *s);
int bench_source_arg(const char *cmd, struct bench_source *s, int argc, char **argv, int *i);
int bench_source_load(const char *cmd, struct bench_source *s, int quiet, struct trove_events *ev,
                      struct trove_names *names, char *desc, size_t desc_len);
/* Keep only ev's common content (--common), in order. */
void bench_common(struct trove_events *ev);

#endif
