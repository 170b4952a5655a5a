/*
 * test_names.c: the names table — lookups by each kind of id, replacement in place,
 * insertion order, equality, merging, growth past the first index size, and bad arguments.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "trove/event.h"

int main(void)
{
    struct trove_names *a = NULL, *b = NULL;
    struct trove_name_entry e;
    size_t len = 0;
    char buf[32];

    CHECK_EQ_INT(trove_names_new(&a), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&b), TROVE_OK);
    CHECK(trove_names_equal(a, b));
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_EVENT, 7, 99, "seven", 5), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_THREAD, 7, 8, "worker", 6), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_PROCESS, 7, 8, "app", 3), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_EVENT, 8, 0, "", 0), TROVE_OK);
    CHECK_EQ_INT(trove_names_count(a), 4);
    /* the same number means different things per type; b is ignored except for threads */
    CHECK(strcmp(trove_names_get(a, TROVE_NAME_EVENT, 7, 0, &len), "seven") == 0);
    CHECK_EQ_INT(len, 5);
    CHECK(strcmp(trove_names_get(a, TROVE_NAME_THREAD, 7, 8, NULL), "worker") == 0);
    CHECK(trove_names_get(a, TROVE_NAME_THREAD, 7, 9, NULL) == NULL);
    CHECK(strcmp(trove_names_get(a, TROVE_NAME_PROCESS, 7, 123, NULL), "app") == 0);
    CHECK(strcmp(trove_names_get(a, TROVE_NAME_EVENT, 8, 0, &len), "") == 0 && len == 0);
    CHECK(trove_names_get(a, TROVE_NAME_EVENT, 9, 0, NULL) == NULL);
    CHECK(trove_names_get(a, 9, 7, 0, NULL) == NULL);
    /* replacing keeps the entry's place */
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_EVENT, 7, 0, "SEVEN!", 6), TROVE_OK);
    CHECK_EQ_INT(trove_names_count(a), 4);
    trove_names_entry(a, 0, &e);
    CHECK(e.type == TROVE_NAME_EVENT && e.a == 7 && e.b == 0 && e.len == 6 && !strcmp(e.str, "SEVEN!"));
    trove_names_entry(a, 1, &e);
    CHECK(e.type == TROVE_NAME_THREAD && e.a == 7 && e.b == 8);
    /* merge, equality */
    CHECK_EQ_INT(trove_names_merge(b, a), TROVE_OK);
    CHECK(trove_names_equal(a, b));
    CHECK_EQ_INT(trove_names_set(b, TROVE_NAME_EVENT, 8, 0, "x", 1), TROVE_OK);
    CHECK(!trove_names_equal(a, b));
    /* growth: many entries, all still found */
    for (uint32_t i = 0; i < 5000; i++) {
        int n = snprintf(buf, sizeof buf, "n%u", i);
        CHECK_EQ_INT(trove_names_set(b, TROVE_NAME_THREAD, i, i * 3, buf, (size_t)n), TROVE_OK);
    }
    CHECK_EQ_INT(trove_names_count(b), 5004);
    for (uint32_t i = 0; i < 5000; i += 499) {
        snprintf(buf, sizeof buf, "n%u", i);
        CHECK(strcmp(trove_names_get(b, TROVE_NAME_THREAD, i, i * 3, NULL), buf) == 0);
    }
    CHECK(strcmp(trove_names_get(b, TROVE_NAME_THREAD, 7, 8, NULL), "worker") == 0);
    /* bad arguments change nothing */
    CHECK_EQ_INT(trove_names_set(a, 0, 1, 0, "x", 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set(a, 4, 1, 0, "x", 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_EVENT, 1, 0, NULL, 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_EVENT, 1, 0, "x", TROVE_NAME_MAX + 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_count(a), 4);
    CHECK(strcmp(trove_kind_name(TROVE_KIND_INSTANT), "instant") == 0);
    CHECK(strcmp(trove_kind_name(200), "other") == 0);
    trove_names_free(a);
    trove_names_free(b);
    return test_done();
}
