/*
 * fuzz_check.h: what the fuzz targets' oracles share — CHECK, which aborts (the fuzzer's
 * signal of a finding) naming the file, line and condition, and the names comparison the
 * trace round trips use. Header only: each target is built on its own (with
 * corpus_replay.c for the suite, or as a libFuzzer binary).
 */
#ifndef TROVE_FUZZ_CHECK_H
#define TROVE_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/event.h"

#define CHECK(c)                                                                          \
    do {                                                                                  \
        if (!(c)) {                                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);         \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* Every entry of a is in b with the same string (or sort index), and the counts agree: the
 * tests' own comparison (tests/support/testutil.c), linked into every fuzz target. */
struct trove_names;
int test_same_names(const struct trove_names *a, const struct trove_names *b);

#endif
