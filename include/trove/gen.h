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

/* A controlled regression (`trove gen --slow NAME=FACTOR`, docs/gen.md): every zone, frame
 * and lock wait named name_id lasts factor times as long, in (0, 1000]. */
struct trove_gen_slow {
    uint32_t name_id;       /* < names */
    double factor;
};

/* At most this many slowed names. */
#define TROVE_GEN_MAX_SLOW 64

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
    const struct trove_gen_slow *slow; /* nslow names slowed, each once (NULL and 0: none,
                                          the events exactly as without them); read by
                                          trove_gen and trove_gen_open, not kept */
    size_t nslow;           /* 0 .. TROVE_GEN_MAX_SLOW */
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
 * process or 65,536 threads in all; a Zipf exponent outside [0, 10]; tick_ns over 1e9;
 * more than TROVE_GEN_MAX_SLOW slowed names, one not below names, given twice, or with a
 * factor outside (0, 1000]), TROVE_ERR_NOMEM. Only threads and processes that have events
 * are named.
 */
int trove_gen(const struct trove_gen_options *opt, struct trove_events *events,
              struct trove_names *names);

/*
 * Attributes for generated events ev[0..n) (docs/gen.md, "Attributes"), appended to out with
 * each row's event base + its index in ev: a zone or frame whose name id is 0 mod 8 gets a
 * resource path ("path"), 1 mod 8 a size ("bytes"), 2 mod 8 a frame's text and a value that
 * climbs with its start ("text", "value"); the rest none. first is ev[0]'s index in the whole
 * run, which with the name decides the draws: the same events always get the same rows.
 * Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM, TROVE_ERR_LIMIT (out has the rows it had).
 */
struct trove_attrs;
int trove_gen_attrs(const struct trove_event *ev, size_t n, uint64_t first, uint64_t base,
                    struct trove_attrs *out);

/*
 * The same events a few at a time, in memory that does not grow with opt->events (the
 * threads' call trees and about 64 Ki events in flight): trove_gen_open checks opt as
 * trove_gen does (TROVE_ERR_INVALID, TROVE_ERR_NOMEM; *out NULL on error), then each
 * trove_gen_next hands out the next events, up to cap, into ev[0..*n_out), 0 once
 * opt->events were handed out; the concatenation is trove_gen's array, byte for byte,
 * however the calls were sized. trove_gen_names merges into names the names of the threads,
 * processes and event names of the events handed out so far (after the last event, the
 * table trove_gen gives). Errors: TROVE_ERR_INVALID (a NULL argument), TROVE_ERR_NOMEM; a
 * generator that failed is only freed. One thread at a time per generator.
 */
struct trove_gen;
int trove_gen_open(const struct trove_gen_options *opt, struct trove_gen **out);
int trove_gen_next(struct trove_gen *g, struct trove_event *ev, size_t cap, size_t *n_out);
/* Events handed out so far. */
uint64_t trove_gen_count(const struct trove_gen *g);
int trove_gen_names(const struct trove_gen *g, struct trove_names *names);
void trove_gen_free(struct trove_gen *g);

#ifdef __cplusplus
}
#endif
#endif
