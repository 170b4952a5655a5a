/*
 * cli_dl.h: libraries the program loads when a command first needs them, not at start-up
 * (libcurl for --url, the compressors `trove bench` compares trove with), as the library
 * does for its own (S3, bundles): `trove --help` and a short `trove cat` then load none of
 * them. A header per library lists its functions and renames the calls to a table
 * (cli_curl.h, bench/bench_peers_dl.h); cli_dl_load fills the table.
 */
#ifndef TROVE_CLI_DL_H
#define TROVE_CLI_DL_H

#include <stddef.h>

#define CLI_DL_FIELD(f) __typeof__(f) *f;
#define CLI_DL_NAME(f) #f,

/* Load soname once (*state: 0 untried, 1 loaded, -1 failed; `why` keeps the reason) and
 * fill fns[0..n) with names[0..n). 0, or -1 with the reason in why (why_cap bytes). */
int cli_dl_load(int *state, const char *soname, const char *const *names, size_t n,
                void **fns, char *why, size_t why_cap);

#endif
