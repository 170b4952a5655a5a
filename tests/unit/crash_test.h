/*
 * crash_test.h: what the two halves of test_crash share — test_crash.c, the parent that kills
 * the child and checks the store, and crash_child.c, the child that runs the operations it
 * kills: the journal's vocabulary (the operation kinds written after "begin"), its bounds,
 * the size of the largest volume, and the child's entry point. The journal's format is in
 * test_crash.c's top comment.
 */
#ifndef TROVE_CRASH_TEST_H
#define TROVE_CRASH_TEST_H

#include <stdint.h>

#include "testutil.h"

#define BIG_SLOTS 1100u      /* a big sparse v3 volume: past one 1024-slot recipe segment, */
#define BIG_BS 4096u         /* so that its small commits write patch segments */
#define VOL_MAX (BIG_SLOTS * BIG_BS) /* the largest volume: every model buffer's size */
#define MAX_NAMES 32         /* volumes and snapshots one journal can name */
#define CHILD_FAILED 3       /* child exit status after an "error" line */
#define JLINE_MAX 1024       /* a journal line (a "damage" line holds a path) */

/* Operation kinds, as written after "begin". */
enum kind { K_WRITE, K_READ, K_PUT, K_COMMIT, K_RESIZE, K_SNAPSHOT, K_UNSNAP, K_REOPEN,
            K_REMOVE, K_CREATE, K_GC, K_HEAL, K_COUNT };
extern const char *const kind_names[K_COUNT];

static inline uint64_t rnd(uint64_t *rng, uint64_t n) { return test_rand(rng) % n; }

/* The child: opens the store at store_dir (creating it), loads its model of every volume,
 * appends "ready" to the journal and writes a byte to ready_fd, then runs random operations
 * on the store, journaling each, until it is killed; an unexpected error is journaled and
 * exits with CHILD_FAILED. seed drives every choice. Never returns. */
_Noreturn void crash_child_main(const char *store_dir, const char *journal, uint64_t seed,
                                int ready_fd);

#endif
