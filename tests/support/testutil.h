/*
 * testutil.h: the tiny test harness. CHECK records a failure with file and line and goes
 * on; a test's main returns test_done(), which prints "N passed, N failed" and exits
 * non-zero if anything failed. test_skip() exits 77, which ctest reports as skipped, unless
 * a check already failed (then it exits as test_done() does).
 *
 * Cases: main calls test_init(argc, argv) first and runs each case as RUN(test_foo) (or
 * RUN_WITH(test_foo, args...) for one that takes arguments). A case's name is its function's
 * without the test_ prefix. `build/test_volume heal_missing locks` runs only those cases,
 * no argument runs them all, `--list` prints the names and runs none. The names a main can
 * run are only known as its RUNs are met, so a name that none met is found by test_done():
 * it lists the cases on stderr and the exit status is 2. A RUN inside a loop (a case run for
 * each of several parameters) is filtered on each pass, and listed once.
 */
#ifndef TROVE_TESTUTIL_H
#define TROVE_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

extern int test_passed, test_failed;

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (cond)                                                                         \
            test_passed++;                                                                \
        else                                                                              \
            test_fail(__FILE__, __LINE__, #cond);                                         \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                \
    do {                                                                                  \
        long long a_ = (long long)(a), b_ = (long long)(b);                               \
        if (a_ == b_)                                                                     \
            test_passed++;                                                                \
        else                                                                              \
            test_fail_int(__FILE__, __LINE__, #a " == " #b, a_, b_);                      \
    } while (0)

void test_init(int argc, char **argv);
/* Nonzero when the case of function fn (its name as written: "test_foo") is to run; under
 * --list, prints its name (once) and returns 0. */
int test_case(const char *fn);
/* Nonzero under --list: for a main whose setup is costly and needs not be done to list. */
int test_listing(void);

#define RUN(fn)                                                                           \
    do {                                                                                  \
        if (test_case(#fn))                                                               \
            fn();                                                                         \
    } while (0)

#define RUN_WITH(fn, ...)                                                                 \
    do {                                                                                  \
        if (test_case(#fn))                                                               \
            fn(__VA_ARGS__);                                                              \
    } while (0)

void test_fail(const char *file, int line, const char *what);
void test_fail_int(const char *file, int line, const char *what, long long a, long long b);
int test_done(void);
void test_skip(const char *why);

/* Read a whole file into a malloc'd buffer. Returns NULL on error. */
uint8_t *test_read_file(const char *path, size_t *len_out);

/* Compare ptr[0..n) with the golden file tests/vectors/<file> (a CHECK each); with the
 * environment variable TROVE_REGEN_VECTORS set, write the file instead. */
void test_check_vector(const char *file, const void *ptr, size_t n);

/* A fuzz seed: when the environment variable `env` names a directory, write prefix[0..plen)
 * then buf[0..len) to <dir>/<name> (a CHECK that it worked); otherwise do nothing. Tests
 * that build inputs for a decoder's error cases save them this way as corpus seeds. */
void test_corpus_write(const char *env, const char *name, const void *prefix, size_t plen,
                       const void *buf, size_t len);

struct trove_names;
/* Nonzero when a and b hold the same entries with the same strings and sort indexes, in
 * any order. */
int test_same_names(const struct trove_names *a, const struct trove_names *b);

struct trove_backend;
struct trove_digest;
/*
 * The size cap and missing objects, as every backend must answer them (tests/unit/test_backend.c
 * on fs, tests/unit/test_backend_s3.c on S3): be holds an object of big_n (> 1) bytes under d,
 * the byte 0x42 and the empty object. get over max_len is TROVE_ERR_LIMIT with out emptied,
 * at exactly the size it succeeds; a digest never stored is TROVE_ERR_NOTFOUND for get (out
 * emptied), size and delete.
 */
void test_backend_limits(struct trove_backend *be, const struct trove_digest *d, size_t big_n);

struct trove_store;
struct trove_events;
/* Every event and name of capture `name` in s, appended to ev and names (through
 * trove_capture_replay in packed frames). TROVE_OK or the replay's error, with the reason
 * printed. */
int test_capture_load(struct trove_store *s, const char *name, struct trove_events *ev,
                      struct trove_names *names);

/* rm -rf path: remove a test's temp tree (symlinks are removed, never followed). */
void test_rm_rf(const char *path);

/* Entries in directory path, not counting . and ..; -1 if it cannot be read. */
int test_count_dir(const char *path);

/* A decoder under test: decode buf[0..len) into out (a caller-known struct). */
typedef int (*test_decode_fn)(const uint8_t *buf, size_t len, void *out, struct trove_diag *diag);

/*
 * Decode an exact-size heap copy of buf[0..len) (so ASan sees any overread) into an out of
 * out_size bytes (at most 1024) and require: the error want, in diag.code too, at want_off
 * (UINT64_MAX: any offset), a message that contains needle (NULL: any message), the output
 * untouched, and the same answer with a NULL diag. what names the case in failures.
 */
void test_expect_decode_error(test_decode_fn dec, size_t out_size, const uint8_t *buf, size_t len,
                              int want, uint64_t want_off, const char *needle, const char *what);

/* A deterministic PRNG (splitmix64) for randomized tests. */
uint64_t test_rand(uint64_t *state);

#endif
