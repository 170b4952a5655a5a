/*
 * alloc.h (internal): every allocation of the library goes through these wrappers, so that a
 * test can make the Nth one fail (trove_testing_alloc_fail_at, trove/testing.h) and check
 * that each operation then returns TROVE_ERR_NOMEM (or -ENOMEM), leaks nothing and leaves
 * its outputs as they were. Memory from them is plain malloc memory: free() releases it,
 * and callers outside the library free what the library returns with free() as before.
 */
#ifndef TROVE_COMMON_ALLOC_H
#define TROVE_COMMON_ALLOC_H

#include <stddef.h>

void *trove__malloc(size_t n);
void *trove__calloc(size_t count, size_t size);
/* As realloc: on failure NULL, and p is untouched. */
void *trove__realloc(void *p, size_t n);
char *trove__strdup(const char *s);
/* As malloc(count * size), or NULL when the product overflows. */
void *trove__mallocarray(size_t count, size_t size);

#endif
