/*
 * sample_hot_work.c: the two hot functions of trove-test-hot, in a file of their own so
 * that a profile of the program names this file as theirs. Each is a leaf: a loop of
 * dependent multiply-xorshift rounds that stays in registers, so its samples land in it and
 * not in a callee. They differ in their arithmetic only, so that each is its own code. The
 * volatile count of units done gives each a stack slot: gcc sets up no frame pointer in a
 * leaf that has no frame, even with -fno-omit-frame-pointer, and the caller's frame would
 * then be missing from every sample's call chain.
 */
#include "sample_hot.h"

uint64_t hot_alpha(uint64_t units, uint64_t seed)
{
    volatile uint64_t done = 0;
    uint64_t x = seed | 1;
    for (uint64_t u = 0; u < units; u++) {
        for (uint32_t r = 0; r < HOT_ROUNDS; r++) {
            x ^= x >> 12;
            x *= 0x9e3779b97f4a7c15ULL;
            x += r;
        }
        done = done + 1;
    }
    return x + done;
}

uint64_t hot_beta(uint64_t units, uint64_t seed)
{
    volatile uint64_t done = 0;
    uint64_t x = seed | 3;
    for (uint64_t u = 0; u < units; u++) {
        for (uint32_t r = 0; r < HOT_ROUNDS; r++) {
            x ^= x << 7;
            x *= 0xc2b2ae3d27d4eb4fULL;
            x ^= r;
        }
        done = done + 1;
    }
    return x + done;
}
