/*
 * alloc.c: the allocation wrappers of common/alloc.h and the out-of-memory test hook.
 *
 * One process-wide counter numbers every allocation the library asks for; when the hook is
 * armed with N, the Nth allocation from then on (and, with `sticky`, every later one) fails
 * as malloc would. The counter is atomic, so threaded code can be tested too; when the hook
 * is off, the cost is one relaxed load per allocation.
 */
#include "common/alloc.h"
#include "trove/testing.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static _Atomic uint64_t fail_at;  /* 0: off; else the allocation number that fails */
static _Atomic uint64_t count;    /* allocations since the hook was armed */
static _Atomic int fail_sticky;   /* after the Nth, every later one fails too */
static _Atomic uint64_t failures; /* allocations refused */

void trove_testing_alloc_fail_at(uint64_t n, int sticky)
{
    atomic_store(&count, 0);
    atomic_store(&failures, 0);
    atomic_store(&fail_sticky, sticky);
    atomic_store(&fail_at, n);
}

uint64_t trove_testing_alloc_count(void) { return atomic_load(&count); }

uint64_t trove_testing_alloc_failures(void) { return atomic_load(&failures); }

static int should_fail(void)
{
    uint64_t at = atomic_load_explicit(&fail_at, memory_order_relaxed), n;
    if (at == 0)
        return 0;
    n = atomic_fetch_add(&count, 1) + 1;
    if (n == at || (n > at && atomic_load(&fail_sticky))) {
        atomic_fetch_add(&failures, 1);
        return 1;
    }
    return 0;
}

void *trove__malloc(size_t n) { return should_fail() ? NULL : malloc(n ? n : 1); }

void *trove__calloc(size_t c, size_t s) { return should_fail() ? NULL : calloc(c ? c : 1, s ? s : 1); }

void *trove__realloc(void *p, size_t n) { return should_fail() ? NULL : realloc(p, n ? n : 1); }

void *trove__mallocarray(size_t c, size_t s)
{
    if (s && c > SIZE_MAX / s)
        return NULL;
    return trove__malloc(c * s);
}

char *trove__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = trove__malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}
