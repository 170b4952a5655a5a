/*
 * bench.h: the benchmarks behind `trove bench <name>`. Each takes the arguments after its
 * name (argv[0] is the benchmark's name) and returns the process exit status. They use
 * only the public API (include/trove/) and the CLI helpers (tools/cli.h).
 */
#ifndef TROVE_BENCH_H
#define TROVE_BENCH_H

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

/* Monotonic seconds, and the median of v[0..n) (n >= 1; v is sorted in place)
 * (bench/bench_util.c). */
double bench_now(void);
double bench_median(double *v, unsigned n);

#endif
