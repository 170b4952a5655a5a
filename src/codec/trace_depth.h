/*
 * trace_depth.h (internal to src/codec): the depth an importer will give an event, known by
 * a trace writer as it writes. trove__trace_order (trace_order.c) gives each imported event
 * a depth from geometry alone: the zones of its track that contain its start. A capture's
 * own depth can differ — a child that starts on the tick its parent ends (a truncating
 * clock), a zone of 0 ns with children — and a writer that knows where they differ writes
 * the depth there (Chrome JSON: the "trove" member; Perfetto: a "trove:depth:N" category),
 * so that the round trip keeps every event as it was.
 */
#ifndef TROVE_TRACE_DEPTH_H
#define TROVE_TRACE_DEPTH_H

#include <stddef.h>
#include <stdint.h>

struct trove__tdepth;

/* An empty predictor. TROVE_OK or TROVE_ERR_NOMEM (*out NULL). */
int trove__tdepth_new(struct trove__tdepth **out);
void trove__tdepth_free(struct trove__tdepth *d);

/*
 * The depth trove__trace_order gives an event of track (pid, tid) that starts at start and
 * nests others for span ns (0: it contains nothing — an instant, a counter, a zone of 0 ns),
 * when the events of each track are given in START order (start, longer first, input
 * order), each once: the zones given before on its track whose [start, start + span)
 * contains start, capped at 255. Memory: 8 bytes for each zone still open on a track.
 * TROVE_OK or TROVE_ERR_NOMEM.
 */
int trove__tdepth_next(struct trove__tdepth *d, uint32_t pid, uint32_t tid, uint64_t start,
                       uint64_t span, uint8_t *depth_out);

#endif
