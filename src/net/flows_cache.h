/*
 * flows_cache.h: the service keeps the flow rows of the captures it answered last, so that the
 * viewer's flows questions (GET /api/captures/NAME/flows, one a selection) do not decode the
 * segments a version 2 flows object is read with each time (docs/formats/flows.md). An entry
 * is good while the capture's header and flows object are the ones it was read from
 * (trove_capture_flows_key). Thread-safe: the query threads share it.
 */
#ifndef TROVE_NET_FLOWS_CACHE_H
#define TROVE_NET_FLOWS_CACHE_H

#include <pthread.h>
#include <stdint.h>

#include "trove/digest.h"
#include "trove/flows.h"
#include "trove/volume.h"

#define TROVE__FLOWS_CACHE_ENTRIES 4
/* Rows kept in all, at most (32 MiB): a capture with more is read each time. */
#define TROVE__FLOWS_CACHE_ROWS ((size_t)1 << 20)

struct trove__flows_cache {
    pthread_mutex_t mu;
    struct {
        char name[TROVE_VOLUME_NAME_MAX + 1];
        struct trove_digest key[2];
        struct trove_flows rows;
        uint64_t used; /* 0: empty; else the tick of its last answer */
    } e[TROVE__FLOWS_CACHE_ENTRIES];
    uint64_t tick;
    uint64_t hits, misses;
};

struct trove_store;
void trove__flows_cache_init(struct trove__flows_cache *c);
void trove__flows_cache_free(struct trove__flows_cache *c);
/* Every flow row of capture `name` appended to out (trove_capture_read_flows' whole range):
 * from the cache when its key still holds, else read and kept. Errors as
 * trove_capture_read_flows'; out is unchanged on error. */
int trove__flows_cached(struct trove__flows_cache *c, struct trove_store *s, const char *name,
                        struct trove_flows *out, struct trove_diag *diag);

#endif
