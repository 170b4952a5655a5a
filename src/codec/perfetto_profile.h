/*
 * perfetto_profile.h (internal to src/codec): a sampling profile (trove/profile.h) in a
 * Perfetto trace and back — the writer's packets (perfetto_profile.c) and the reader's
 * interning state and samples (perfetto_profile_read.c), which perfetto_read.c drives.
 * docs/formats/perfetto.md, "Profiles", has the layout.
 */
#ifndef TROVE_PERFETTO_PROFILE_H
#define TROVE_PERFETTO_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "protobuf.h"
#include "trace_sched.h"
#include "trove/profile.h"

/* TracePacket.perf_sample, and the InternedData fields of a profile. */
#define TROVE__PF_PERF_SAMPLE 66
#define TROVE__PF_IN_FUNCTION_NAMES 5
#define TROVE__PF_IN_FRAMES 6
#define TROVE__PF_IN_CALLSTACKS 7
#define TROVE__PF_IN_MAPPING_PATHS 17
#define TROVE__PF_IN_SOURCE_PATHS 18
#define TROVE__PF_IN_MAPPINGS 19

/*
 * Write p's samples as PerfSample packets on sequence seq_id, each at its own time on
 * CLOCK_BOOTTIME (the trace's first packet makes that clock the capture's), after packets of
 * InternedData holding what they refer to: the callstacks the samples use, their frames,
 * the frames' mappings (one a module), function names, source files and module paths. The
 * samples' order is the profile's. *samples_out gets their count. Errors: TROVE_ERR_NOMEM,
 * the sink's.
 */
int trove__pf_profile_write(const struct trove_profile *p, uint32_t seq_id,
                            struct trove__tout *o, uint64_t *samples_out);

/* A sequence's interned profile entries, as the reader sees them. */
struct trove__pfp;

int trove__pfp_new(struct trove__pfp **out);
void trove__pfp_free(struct trove__pfp *x);
/* The sequence's incremental state was cleared: forget every entry. */
void trove__pfp_clear(struct trove__pfp *x);

/*
 * Field f of an InternedData (held in buf, the whole input, which must outlive x): an entry
 * of one of the tables above is noted by its iid (the bytes are read when a sample needs
 * them; the first entry of an iid wins). Returns 1 when the field is one of them, 0 when it
 * is not, or an error: TROVE_ERR_LIMIT (more than 2^24 entries), TROVE_ERR_NOMEM, a
 * malformed entry (diag has the offset).
 */
int trove__pfp_interned(struct trove__pfp *x, const uint8_t *buf,
                        const struct trove__pb_field *f, struct trove_diag *diag);

/*
 * The PerfSample f (in buf) at ts ns, into profile p: its callstack's frames (each made a
 * frame of p once: function, module, file, line, address, and the inline depth its place
 * in the callstack says — a frame at the same module and address as the one it is called
 * from, but another frame, is inlined one level deeper), the stack of them, and the sample.
 * A PerfSample without a callstack is a sample of the empty stack; one that records lost or
 * skipped samples (kernel_records_lost, sample_skipped_reason) is not a sample: *added 0. Errors, with the offset in diag: TROVE_ERR_CORRUPT (an iid no entry has, a
 * malformed entry), TROVE_ERR_LIMIT (a callstack over 4,096 frames, a string over the
 * profile's limit), TROVE_ERR_NOMEM.
 */
int trove__pfp_sample(struct trove__pfp *x, const uint8_t *buf, const struct trove__pb_field *f,
                      uint64_t ts, struct trove_profile *p, int *added,
                      struct trove_diag *diag);

#endif
