/*
 * addr_map.c: (module, offset) -> (first, n), open addressing with linear probing over a
 * power-of-two array kept at most half full (addr_map.h). Keys are hashed with
 * common/hash.h's finalizer, since offsets of one module differ in their low bits only.
 */
#include "addr_map.h"
#include "common/alloc.h"
#include "common/hash.h"
#include "trove/common.h"

#include <assert.h>
#include <stdlib.h>

static size_t slot_of(const struct trove__addr_map *m, uint32_t module, uint64_t offset)
{
    size_t mask = m->cap - 1, i = (size_t)trove__mix64(offset ^ trove__mix64(module)) & mask;
    while (m->slot[i].used && !(m->slot[i].module == module && m->slot[i].offset == offset))
        i = (i + 1) & mask;
    return i;
}

const struct trove__addr_entry *trove__addr_map_get(const struct trove__addr_map *m,
                                                    uint32_t module, uint64_t offset)
{
    size_t i;
    if (!m->cap)
        return NULL;
    i = slot_of(m, module, offset);
    return m->slot[i].used ? &m->slot[i] : NULL;
}

int trove__addr_map_put(struct trove__addr_map *m, uint32_t module, uint64_t offset,
                        uint32_t first, uint32_t n)
{
    size_t i;
    if ((m->n + 1) * 2 > m->cap) {
        struct trove__addr_map bigger = {NULL, m->n, m->cap ? m->cap * 2 : 1024};
        if (!(bigger.slot = trove__calloc(bigger.cap, sizeof *bigger.slot)))
            return TROVE_ERR_NOMEM;
        for (size_t k = 0; k < m->cap; k++)
            if (m->slot[k].used)
                bigger.slot[slot_of(&bigger, m->slot[k].module, m->slot[k].offset)] = m->slot[k];
        free(m->slot);
        *m = bigger;
    }
    i = slot_of(m, module, offset);
    assert(!m->slot[i].used);
    m->slot[i] = (struct trove__addr_entry){offset, module, first, n, 1};
    m->n++;
    return TROVE_OK;
}

void trove__addr_map_free(struct trove__addr_map *m)
{
    free(m->slot);
    m->slot = NULL;
    m->n = m->cap = 0;
}
