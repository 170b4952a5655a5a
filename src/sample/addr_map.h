/*
 * addr_map.h (internal): a hash map from (module, offset) to a run of results (first, n)
 * in a pool the caller keeps (addr_map.c): how the symbolizer caches an address's symbols
 * and the profile builder an address's frames, so that each address is looked up once.
 * A zeroed struct is an empty map. Not thread-safe.
 */
#ifndef TROVE_SAMPLE_ADDR_MAP_H
#define TROVE_SAMPLE_ADDR_MAP_H

#include <stddef.h>
#include <stdint.h>

struct trove__addr_entry {
    uint64_t offset;
    uint32_t module;
    uint32_t first, n; /* the caller's run */
    uint8_t used;
};

struct trove__addr_map {
    struct trove__addr_entry *slot; /* cap slots, a power of two, at most half used */
    size_t n, cap;
};

/* The entry of (module, offset), or NULL. Valid until the next put. */
const struct trove__addr_entry *trove__addr_map_get(const struct trove__addr_map *m,
                                                    uint32_t module, uint64_t offset);

/* Add (module, offset) -> (first, n); the key must not be there. TROVE_OK or
 * TROVE_ERR_NOMEM (the map unchanged). */
int trove__addr_map_put(struct trove__addr_map *m, uint32_t module, uint64_t offset,
                        uint32_t first, uint32_t n);

/* Free the slots; the map is empty again. */
void trove__addr_map_free(struct trove__addr_map *m);

#endif
