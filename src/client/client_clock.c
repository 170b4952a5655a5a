/*
 * client_clock.c: the clocks the client times events by: whether the TSC ticks at one rate
 * (the kernel's flags), and the TSC and CLOCK_MONOTONIC read together, for the calibration a
 * hello carries (docs/client.md, "The clock").
 */
#define _GNU_SOURCE
#include "client_internal.h"

#include <stdio.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#endif

/* Does the CPU say its TSC ticks at one rate in every state (the kernel's flags)? */
int trove__client_tsc_constant(void)
{
#ifdef HAVE_TSC
    char line[4096];
    int constant = 0, nonstop = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5)) {
            constant = strstr(line, " constant_tsc") != NULL;
            nonstop = strstr(line, " nonstop_tsc") != NULL;
            break;
        }
    fclose(f);
    return constant && nonstop;
#else
    return 0;
#endif
}

/* The TSC and CLOCK_MONOTONIC at one instant: of a few tries, the one whose clock read sat
 * between the closest two TSC reads, the TSC taken at the middle. */
void trove__client_clock_pair(uint64_t *tsc_out, uint64_t *ns_out)
{
#ifdef HAVE_TSC
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t a = __rdtsc(), n = now_ns(), b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc_out = a + (b - a) / 2;
            *ns_out = n;
        }
    }
#else
    *tsc_out = 0;
    *ns_out = now_ns();
#endif
}

