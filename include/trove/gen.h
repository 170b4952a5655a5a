/*
 * trove/gen.h: the synthetic capture generator (`trove gen`, docs/gen.md): a deterministic
 * model of processes, threads and Zipf-distributed zone names, for tests and benchmarks.
 */
#ifndef TROVE_GEN_H
#define TROVE_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/event.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A zeroed struct means every default; so does any field left 0. */
struct trove_gen_options {
    uint64_t seed;          /* default (and 0) 1 */
    uint64_t events;        /* default 1,034,313 */
    uint32_t processes;     /* P, default 4 */
    uint32_t threads;       /* T per process, default 8 */
    uint32_t names;         /* distinct name ids (Zipf support), default 65,536 */
    double zipf_s;          /* Zipf exponent, default 1.0; TROVE_GEN_UNIFORM: 0 (every name
                               as likely) */
    uint64_t tick_ns;       /* clock resolution: starts and ends round down to multiples
                               of it, default 1000 (1 .. 1e9) */
};

/* zipf_s: an exponent of 0, every name as likely (0 itself is the default exponent). */
#define TROVE_GEN_UNIFORM (-1.0)

/* The documented defaults, explicitly (a zeroed struct is the same). */
void trove_gen_defaults(struct trove_gen_options *opt);

/*
 * Generate opt->events events of the model, sorted by start time, appended to *events;
 * thread, process and event names for what was used go to names (may be NULL).
 * Deterministic: the same options give the same events on every run.
 * Errors: TROVE_ERR_INVALID (names > 65,536; more than 4,096 processes or threads per
 * process or 65,536 threads in all; a Zipf exponent outside [0, 10]; tick_ns over 1e9),
 * TROVE_ERR_NOMEM. Only threads and processes that have events are named.
 */
int trove_gen(const struct trove_gen_options *opt, struct trove_events *events,
              struct trove_names *names);

#ifdef __cplusplus
}
#endif
#endif
