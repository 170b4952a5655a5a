/*
 * spaces.h (internal): the address spaces of the sampled processes — for each pid, its
 * executable mappings as (start, end, file offset, module) — so that an address in a sample
 * becomes a module and an offset in the module's file while the mapping is known
 * (spaces.c). Fed by PERF_RECORD_MMAP2 records and /proc/PID/maps (sampler.c,
 * proc_maps.c); a fork copies the parent's space, an exec empties it.
 */
#ifndef TROVE_SAMPLE_SPACES_H
#define TROVE_SAMPLE_SPACES_H

#include <stddef.h>
#include <stdint.h>

#include "trove/sample.h"

struct trove__spaces;

int trove__spaces_new(struct trove__spaces **out);
void trove__spaces_free(struct trove__spaces *sp);

/* pid maps [start, end) at file offset pgoff of module: what overlapped it is cut away (a
 * new mapping replaces the old, as mmap does). Errors: TROVE_ERR_INVALID (end <= start),
 * TROVE_ERR_LIMIT (over 1 << 20 mappings in one space), TROVE_ERR_NOMEM; unchanged then. */
int trove__spaces_map(struct trove__spaces *sp, uint32_t pid, uint64_t start, uint64_t end,
                      uint64_t pgoff, uint32_t module);

/* pid exec'd: its space is empty (its new image's mappings come next). */
void trove__spaces_exec(struct trove__spaces *sp, uint32_t pid);

/* pid was forked from ppid: its space is a copy of ppid's (replacing any it had). Errors:
 * TROVE_ERR_NOMEM. */
int trove__spaces_fork(struct trove__spaces *sp, uint32_t ppid, uint32_t pid);

/* addr in pid's space: 1 with *out set (module, offset in its file), 0 if unmapped. */
int trove__spaces_find(const struct trove__spaces *sp, uint32_t pid, uint64_t addr,
                       struct trove_sample_frame *out);

/* Mappings in pid's space (0 for a pid never seen). */
size_t trove__spaces_count(const struct trove__spaces *sp, uint32_t pid);

#endif
