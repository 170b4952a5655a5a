/*
 * sample_hot.h: the hot functions of trove-test-hot (sample_hot_work.c), the program that
 * tests/cli/cli_sample.sh samples and `trove bench sample` times.
 */
#ifndef TROVE_TESTS_SAMPLE_HOT_H
#define TROVE_TESTS_SAMPLE_HOT_H

#include <stdint.h>

/* About the same work per unit: `units` rounds of a dependent integer chain each. Their
 * results depend on every round, so no compiler folds them. */
uint64_t hot_alpha(uint64_t units, uint64_t seed);
uint64_t hot_beta(uint64_t units, uint64_t seed);

/* The rounds in one unit (a unit takes some hundreds of microseconds). */
#define HOT_ROUNDS 100000u

#endif
