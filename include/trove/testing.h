/*
 * trove/testing.h: hooks for trove's own tests and benchmarks, not for products. Nothing in
 * here is part of the stable API; a program that is not a test has no reason to include it.
 * Each hook says what it bypasses. Thread-safety: as each hook says.
 */
#ifndef TROVE_TESTING_H
#define TROVE_TESTING_H

#include <stdint.h>

#include "trove/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Out-of-memory injection. After trove_testing_alloc_fail_at(n, sticky) with n > 0, the nth
 * allocation the library makes from then on fails (returns NULL as malloc would), and with
 * sticky every allocation after it fails too; n == 0 turns the hook off. Counting restarts at
 * each call. trove_testing_alloc_count() is how many allocations were asked for since then,
 * trove_testing_alloc_failures() how many were refused. Atomic: usable with threads running,
 * though which thread gets the nth allocation is then up to the scheduler.
 */
void trove_testing_alloc_fail_at(uint64_t n, int sticky);
uint64_t trove_testing_alloc_count(void);
uint64_t trove_testing_alloc_failures(void);

#ifdef __cplusplus
}
#endif

#endif
