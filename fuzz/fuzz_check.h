/*
 * fuzz_check.h: what the fuzz targets' oracles share — CHECK, which aborts (the fuzzer's
 * signal of a finding) naming the file, line and condition, and the names comparison the
 * trace round trips use. Header only: each target is built on its own (with
 * corpus_replay.c for the suite, or as a libFuzzer binary).
 */
#ifndef TROVE_FUZZ_CHECK_H
#define TROVE_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/event.h"

#define CHECK(c)                                                                          \
    do {                                                                                  \
        if (!(c)) {                                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);         \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* Every entry of a is in b with the same string (or sort index), and the counts agree. */
static inline int fuzz_same_names(const struct trove_names *a, const struct trove_names *b)
{
    if (trove_names_count(a) != trove_names_count(b))
        return 0;
    for (size_t i = 0; i < trove_names_count(a); i++) {
        struct trove_name_entry e;
        size_t len = 0;
        const char *s;
        trove_names_entry(a, i, &e);
        if (trove_name_type_is_sort(e.type)) {
            int32_t v = 0;
            if (!trove_names_get_sort(b, e.type, e.a, e.b, &v) || v != e.sort_index)
                return 0;
            continue;
        }
        s = trove_names_get(b, e.type, e.a, e.b, &len);
        if (!s || len != e.len || memcmp(s, e.str, len) != 0)
            return 0;
    }
    return 1;
}

#endif
