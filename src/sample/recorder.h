/*
 * recorder.h (internal): what the sampler does with the records it reads (recorder.c) —
 * copies them out of the rings, puts them in time order, and applies them: mappings into
 * the processes' spaces, samples resolved against those into the sample set, switches,
 * names and the kernel's loss counts. Apart from the sampler's perf_event_open and its
 * processes, so that a test can hand it rings it made itself.
 */
#ifndef TROVE_SAMPLE_RECORDER_H
#define TROVE_SAMPLE_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "perf_records.h"
#include "spaces.h"
#include "trove/sample.h"

struct trove__recorder;

/* A recorder filling set (which must outlive it). Errors: TROVE_ERR_NOMEM. */
int trove__recorder_new(struct trove_sample_set *set, struct trove__recorder **out);
void trove__recorder_free(struct trove__recorder *r);

/* The address spaces it keeps (to load /proc/PID/maps into before sampling starts). */
struct trove__spaces *trove__recorder_spaces(struct trove__recorder *r);

/* Offline (for tests and the fuzz target, whose pids and paths are made up): read no
 * /proc/PID/maps for an unknown leaf address and no file for a build id. */
void trove__recorder_offline(struct trove__recorder *r, int on);

/*
 * Read every record of rings[0..n) (their tails moved to their heads: the caller gives the
 * kernel the space back), sort them by time (records of equal time in ring order, then
 * ring by ring) and apply them. Records that fail their checks are counted and skipped; an
 * unreadable ring is counted and dropped. Errors: TROVE_ERR_NOMEM (sticky for the caller:
 * records may have been lost).
 */
int trove__recorder_read(struct trove__recorder *r, struct trove__perf_ring *rings, size_t n);

/* Name thread tid of pid comm (and the process, if tid is pid); best effort. */
void trove__recorder_name(struct trove__recorder *r, uint32_t pid, uint32_t tid, const char *comm);

/* Its counts: samples, switches, mmaps, lost, lost_samples, throttled, bad_records,
 * bad_rings, unmapped and truncated (the other fields are 0); the caller may add to mmaps. */
struct trove_sampler_stats *trove__recorder_stats(struct trove__recorder *r);

#endif
