/*
 * bench_peers.c: the benchmark peers' libraries, loaded when a benchmark starts
 * (bench_peers.h).
 */
#include "bench_peers.h"
#include "cli.h"

#if TROVE_BENCH_PEERS

struct bench_lz4 bench_lz4;
struct bench_lzma bench_lzma;
struct bench_brotlienc bench_brotlienc;
struct bench_brotlidec bench_brotlidec;
struct bench_svb bench_svb;

int bench_peers_load(const char *cmd)
{
    static int st[5];
    static const char *const lz4[] = {BENCH_LZ4_FUNCS(CLI_DL_NAME)};
    static const char *const lzma[] = {BENCH_LZMA_FUNCS(CLI_DL_NAME)};
    static const char *const benc[] = {BENCH_BROTLIENC_FUNCS(CLI_DL_NAME)};
    static const char *const bdec[] = {BENCH_BROTLIDEC_FUNCS(CLI_DL_NAME)};
    static const char *const svb[] = {BENCH_SVB_FUNCS(CLI_DL_NAME)};
    char why[300];
#define LOAD(i, so, names, table)                                                             \
    (cli_dl_load(&st[i], so, names, sizeof names / sizeof *names, (void **)&table, why,       \
                 sizeof why) == 0)
    if (LOAD(0, TROVE_SONAME_LZ4, lz4, bench_lz4) && LOAD(1, TROVE_SONAME_LZMA, lzma, bench_lzma) &&
        LOAD(2, TROVE_SONAME_BROTLIENC, benc, bench_brotlienc) &&
        LOAD(3, TROVE_SONAME_BROTLIDEC, bdec, bench_brotlidec) &&
        LOAD(4, TROVE_SONAME_STREAMVBYTE, svb, bench_svb))
        return 0;
#undef LOAD
    return cli_error(cmd, "the compressors it compares trove with: %s", why);
}

#else

int bench_peers_load(const char *cmd)
{
    (void)cmd;
    return 0;
}

#endif
