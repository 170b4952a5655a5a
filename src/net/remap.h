/*
 * remap.h (internal): one capture's event names, shared by its producers. Each producer
 * numbers its event names its own way (two may both call their first name 1), so the
 * service keeps, per capture, one dictionary from name to capture id, and per producer a
 * map from its ids to the capture's: a producer's names frame is translated into the
 * capture's entries (a name the capture has already keeps its id), and its events' name
 * ids are rewritten before they are batched. Thread and process names are keyed by pid
 * (and tid), which keep producers apart already, and pass through as they are. An event
 * whose id the producer never named gets a capture id of its own, also without a name, so
 * that ids of different producers never meet. The dictionary also knows how big its names
 * are as the capture stores them, so that a capture never takes names it cannot commit.
 * Not thread-safe: the service's ingest thread owns them.
 */
#ifndef TROVE_NET_REMAP_H
#define TROVE_NET_REMAP_H

#include <stddef.h>
#include <stdint.h>

#include "trove/event.h"

struct trove__capture_names;  /* per capture */
struct trove__producer_names; /* per producer */

int trove__capture_names_new(struct trove__capture_names **out);
void trove__capture_names_free(struct trove__capture_names *c);
int trove__producer_names_new(struct trove__producer_names **out);
void trove__producer_names_free(struct trove__producer_names *p);

/*
 * Translate a producer's names frame (`added`, in its ids) into the capture's: entries
 * new to the capture (or whose string changed) are appended to out in capture ids, ready
 * to publish. Errors: TROVE_ERR_NOMEM, TROVE_ERR_LIMIT (the capture's ids ran out).
 */
int trove__remap_names(struct trove__capture_names *c, struct trove__producer_names *p,
                       const struct trove_names *added, struct trove_names *out);

/*
 * As trove__remap_names, unless the capture's names would then take more than max bytes in
 * its names object (trove__capture_names_stored_bytes): then TROVE_ERR_LIMIT, with nothing
 * changed. *would_out (may be NULL) gets the bytes they would take either way.
 */
int trove__remap_names_max(struct trove__capture_names *c, struct trove__producer_names *p,
                           const struct trove_names *added, struct trove_names *out,
                           uint64_t max, uint64_t *would_out);

/* The bytes the capture's names take in its names object (docs/formats/capture.md): every
 * entry as a names frame encodes it, and a 16-byte header for each of the frames the
 * capture writer cuts them into (an upper bound: it is exact but for a few headers). */
uint64_t trove__capture_names_stored_bytes(const struct trove__capture_names *c);

/* Rewrite ev[0..n)'s name ids from p's ids to the capture's. Errors: TROVE_ERR_NOMEM,
 * TROVE_ERR_LIMIT. */
int trove__remap_events(struct trove__capture_names *c, struct trove__producer_names *p,
                        struct trove_event *ev, size_t n);

/*
 * Start c from a stored capture's names (a capture continued after a restart): its event
 * names keep their ids, and new ids start past them and past max_id (the largest id its
 * events use). Errors: TROVE_ERR_NOMEM, TROVE_ERR_LIMIT.
 */
int trove__capture_names_seed(struct trove__capture_names *c, const struct trove_names *stored,
                              uint32_t max_id);

/* Every name the capture has, in capture ids (for a viewer that joins, or the store). */
const struct trove_names *trove__capture_names_all(const struct trove__capture_names *c);

#endif
