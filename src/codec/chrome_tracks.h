/*
 * chrome_tracks.h (internal to src/codec): the keyed tables of the Chrome importer's
 * non-thread tracks — async spans (nestable b/e/n and legacy S/T/F, each keyed by pid,
 * category, scope and id), counter series (pid, counter name, argument key) and flows
 * (category, scope and id) — with the spans still open on each, and the synthetic tids
 * handed to the tracks once the whole trace is read. It knows nothing of JSON: the
 * importer (chrome_events.c) builds the keys and decides what a match means.
 */
#ifndef TROVE_CHROME_TRACKS_H
#define TROVE_CHROME_TRACKS_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

/* Track classes, in the order their synthetic tids are handed out at equal first times. */
enum { TROVE__CT_NESTABLE = 0, TROVE__CT_LEGACY = 1, TROVE__CT_COUNTER = 2, TROVE__CT_FLOW = 3 };

#define TROVE__CT_NONE UINT32_MAX /* no track; no name */

/* A legacy step already ended (by the next T or the F), waiting for its span's F. */
struct trove__cstep {
    uint64_t start, end;
    uint32_t name, seq;
};

/* An open span: a b waiting for its e, or an S for its F (with its steps). */
struct trove__cspan {
    uint64_t ts, off;           /* the begin's time and byte offset */
    uint32_t name;              /* provisional name id, or TROVE__CT_NONE */
    uint64_t in;                /* the begin's attribute rows (trove__cbegin's `in`) */
    int has_step;               /* legacy: a T is open */
    uint64_t step_ts;
    uint32_t step_name, step_seq;
    struct trove__cstep *steps; /* legacy: ended steps */
    size_t nsteps, capsteps;
};

struct trove__ctrack {
    uint8_t cls;
    uint32_t pid;
    uint64_t key_off;           /* into the table's arena */
    uint32_t key_len, hash;
    uint32_t name;              /* counters: the counter's provisional name id */
    uint64_t first_ts;          /* the earliest imported event on it (set by the caller) */
    int used;                   /* it has imported events (set by the caller) */
    uint32_t tid;               /* its synthetic tid (trove__ct_assign), else TROVE__CT_NONE */
    struct trove__cspan *open;
    size_t nopen, capopen;
};

struct trove__ctracks {
    struct trove__ctrack *t;
    uint32_t n, cap;
    uint32_t *index;            /* track + 1, 0 = free; power-of-two size */
    uint32_t mask;
    struct trove_bytes arena;   /* keys, back to back */
    uint64_t open_total;        /* spans open on every track */
};

/* Find the track of (cls, pid, key[0..len)); with `create`, add it if absent. *idx_out is
 * its index, or TROVE__CT_NONE when absent and not created. TROVE_OK, TROVE_ERR_NOMEM or
 * TROVE_ERR_LIMIT (more than 2^28 tracks). */
int trove__ct_find(struct trove__ctracks *t, uint8_t cls, uint32_t pid, const uint8_t *key,
                   size_t len, int create, uint32_t *idx_out);

/* The key bytes of track i (valid until the next find that creates). */
const uint8_t *trove__ct_key(const struct trove__ctracks *t, uint32_t i);

/* Open a span on track i (the span's steps, if any, move into the table). */
int trove__ct_open(struct trove__ctracks *t, uint32_t i, const struct trove__cspan *s);

/* The innermost open span of track i named `name` (any span when name is TROVE__CT_NONE):
 * its index in t->t[i].open, or -1. */
long trove__ct_match(const struct trove__ctracks *t, uint32_t i, uint32_t name);

/* Remove open span k of track i into *out (the caller now owns out->steps). */
void trove__ct_close(struct trove__ctracks *t, uint32_t i, size_t k, struct trove__cspan *out);

/* Add an ended step to a span. TROVE_OK or TROVE_ERR_NOMEM. */
int trove__ct_add_step(struct trove__cspan *s, uint64_t start, uint64_t end, uint32_t name,
                       uint32_t seq);

/*
 * Hand synthetic tids to the used tracks of classes NESTABLE, LEGACY and COUNTER: per pid,
 * in order of (first_ts, class, key length, key bytes), the lowest tids of
 * [TROVE_TID_SYNTHETIC, + TROVE_TID_SYNTHETIC_COUNT) that no real thread of that pid uses.
 * `real` is the sorted array of real (pid, tid) pairs, each packed as pid << 32 | tid.
 * TROVE_OK, TROVE_ERR_LIMIT (a pid out of synthetic tids; *pid_out names it), TROVE_ERR_NOMEM.
 */
int trove__ct_assign(struct trove__ctracks *t, const uint64_t *real, size_t nreal,
                     uint32_t *pid_out);

void trove__ct_free(struct trove__ctracks *t);

#endif
