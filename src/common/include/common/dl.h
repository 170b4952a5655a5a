/*
 * dl.h (internal): a shared library loaded on first use instead of at start-up. libcurl
 * (and the libcrypto it brings), libzip, snappy and libdw load dozens of libraries of their
 * own and cost a short command (`trove --help`, `trove cat` of a small file) several times
 * its work in the dynamic loader; only the commands that reach an S3 store, a bundle, a
 * snappy Parquet page or a symbolizer load them.
 *
 * A user of library L writes, once, a header that lists the functions it calls and renames
 * them to a table's pointers (src/store/s3/s3_curl.h is one):
 *
 *     #define L_FUNCS(X) X(l_open) X(l_read) X(l_close)
 *     struct l_api { L_FUNCS(TROVE__DL_FIELD) };     -- __typeof__(l_open) *l_open; ...
 *     extern struct l_api l_api;
 *     #define l_open (l_api.l_open)                   -- after the struct: calls go through it
 *
 * and one function that fills the table before the first call:
 *
 *     static const char *const names[] = {L_FUNCS(TROVE__DL_NAME)};
 *     trove__dl_load(&once, "libl.so.1", names, n, (void **)&l_api, "reading X", diag);
 *
 * The types come from the library's own header, so a call is checked as if it were linked.
 */
#ifndef TROVE_COMMON_DL_H
#define TROVE_COMMON_DL_H

#include <stddef.h>

#include "trove/common.h"

#define TROVE__DL_FIELD(f) __typeof__(f) *f;
#define TROVE__DL_NAME(f) #f,

/* Where a table stands: zeroed before its first load. */
struct trove__dl_once {
    int state; /* 0 not tried, 1 loaded, -1 failed (msg says why) */
    char msg[200];
};

/*
 * Load soname (once per `once`, thread-safe) and fill fns[i] with the address of names[i]
 * for i < n (fns: the table, a struct of n function pointers). TROVE_OK, or
 * TROVE_ERR_NOTFOUND with diag saying which library is missing, what needs it (`need`, e.g.
 * "an s3:// store") and the loader's reason; a failed load is not retried.
 */
int trove__dl_load(struct trove__dl_once *once, const char *soname, const char *const *names,
                   size_t n, void **fns, const char *need, struct trove_diag *diag);

#endif
