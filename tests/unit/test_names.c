/*
 * test_names.c: the names table — lookups by each kind of id, replacement in place,
 * insertion order (and finding an entry's place by key), equality, merging, growth past the
 * first index size, sort index entries, and bad arguments.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "trove/event.h"

#include <stdint.h>

/* Sort index entries: keyed like the names (a process by pid, a thread by pid and tid), with
 * a signed value and no string; they replace in place, compare and merge like the others. */
static void test_sort_indexes(void)
{
    struct trove_names *a = NULL, *b = NULL;
    struct trove_name_entry e;
    int32_t v = 0;

    CHECK_EQ_INT(trove_names_new(&a), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&b), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_PROCESS, 7, 0, "app", 3), TROVE_OK);
    CHECK_EQ_INT(trove_names_set_sort(a, TROVE_NAME_PROCESS_SORT, 7, 99, -1), TROVE_OK);
    CHECK_EQ_INT(trove_names_set_sort(a, TROVE_NAME_THREAD_SORT, 7, 8, 3), TROVE_OK);
    CHECK_EQ_INT(trove_names_set_sort(a, TROVE_NAME_THREAD_SORT, 7, 9, INT32_MIN), TROVE_OK);
    CHECK_EQ_INT(trove_names_set_sort(a, TROVE_NAME_THREAD_SORT, 8, 8, INT32_MAX), TROVE_OK);
    CHECK_EQ_INT(trove_names_count(a), 5);
    /* the process's tid is ignored; a thread's is its key */
    CHECK(trove_names_get_sort(a, TROVE_NAME_PROCESS_SORT, 7, 5, &v) == 1 && v == -1);
    CHECK(trove_names_get_sort(a, TROVE_NAME_THREAD_SORT, 7, 8, &v) == 1 && v == 3);
    CHECK(trove_names_get_sort(a, TROVE_NAME_THREAD_SORT, 7, 9, &v) == 1 && v == INT32_MIN);
    CHECK(trove_names_get_sort(a, TROVE_NAME_THREAD_SORT, 8, 8, NULL) == 1);
    v = 42;
    CHECK(trove_names_get_sort(a, TROVE_NAME_THREAD_SORT, 7, 10, &v) == 0 && v == 42);
    CHECK(trove_names_get_sort(a, TROVE_NAME_PROCESS_SORT, 8, 0, &v) == 0);
    /* a sort index is not a name, nor a name a sort index */
    CHECK(trove_names_get(a, TROVE_NAME_PROCESS_SORT, 7, 0, NULL) == NULL);
    CHECK(trove_names_get(a, TROVE_NAME_THREAD_SORT, 7, 8, NULL) == NULL);
    CHECK(trove_names_get_sort(a, TROVE_NAME_PROCESS, 7, 0, &v) == 0);
    CHECK(trove_names_get(a, TROVE_NAME_THREAD, 7, 8, NULL) == NULL);
    /* entries: the value, and an empty string */
    trove_names_entry(a, 1, &e);
    CHECK(e.type == TROVE_NAME_PROCESS_SORT && e.a == 7 && e.b == 0 && e.sort_index == -1 &&
          e.len == 0 && e.str && e.str[0] == 0);
    trove_names_entry(a, 0, &e);
    CHECK(e.type == TROVE_NAME_PROCESS && e.sort_index == 0 && !strcmp(e.str, "app"));
    /* replacing keeps the place */
    CHECK_EQ_INT(trove_names_set_sort(a, TROVE_NAME_THREAD_SORT, 7, 8, -5), TROVE_OK);
    CHECK_EQ_INT(trove_names_count(a), 5);
    trove_names_entry(a, 2, &e);
    CHECK(e.type == TROVE_NAME_THREAD_SORT && e.a == 7 && e.b == 8 && e.sort_index == -5);
    /* merge, put, equality (which sees the value) */
    CHECK_EQ_INT(trove_names_merge(b, a), TROVE_OK);
    CHECK(trove_names_equal(a, b));
    CHECK(test_same_names(a, b) && test_same_names(b, a));
    CHECK_EQ_INT(trove_names_set_sort(b, TROVE_NAME_THREAD_SORT, 7, 8, -6), TROVE_OK);
    CHECK(!trove_names_equal(a, b));
    CHECK(!test_same_names(a, b));
    e = (struct trove_name_entry){TROVE_NAME_THREAD_SORT, 7, 8, "", 0, -5};
    CHECK_EQ_INT(trove_names_put(b, &e), TROVE_OK);
    CHECK(trove_names_equal(a, b));
    e = (struct trove_name_entry){TROVE_NAME_EVENT, 3, 0, "three", 5, 0};
    CHECK_EQ_INT(trove_names_put(b, &e), TROVE_OK);
    CHECK(strcmp(trove_names_get(b, TROVE_NAME_EVENT, 3, 0, NULL), "three") == 0);
    CHECK_EQ_INT(trove_names_count(b), 6);
    /* a table of sort indexes only */
    trove_names_free(b);
    CHECK_EQ_INT(trove_names_new(&b), TROVE_OK);
    CHECK_EQ_INT(trove_names_set_sort(b, TROVE_NAME_PROCESS_SORT, 1, 0, 0), TROVE_OK);
    CHECK_EQ_INT(trove_names_merge(a, b), TROVE_OK);
    CHECK(trove_names_get_sort(a, TROVE_NAME_PROCESS_SORT, 1, 0, &v) == 1 && v == 0);
    CHECK(!trove_names_equal(a, b));
    trove_names_free(a);
    trove_names_free(b);
}

/* The table: get, set, replace, merge, growth, find, bad arguments, UTF-8. */
static void test_table(void)
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
    /* find: an entry's place in insertion order, by key (b only for threads) */
    {
        size_t at = 12345;
        CHECK(trove_names_find(b, TROVE_NAME_THREAD, 4999, 4999 * 3, &at) == 1 && at == 5003);
        CHECK(trove_names_find(b, TROVE_NAME_EVENT, 7, 55, &at) == 1 && at == 0);
        CHECK(trove_names_find(b, TROVE_NAME_PROCESS, 7, 0, NULL) == 1);
        at = 12345;
        CHECK(trove_names_find(b, TROVE_NAME_THREAD, 4999, 4998, &at) == 0 && at == 12345);
        CHECK(trove_names_find(b, TROVE_NAME_PROCESS_SORT, 7, 0, &at) == 0);
        CHECK(trove_names_find(b, 0, 7, 0, &at) == 0 && trove_names_find(b, 6, 7, 0, &at) == 0);
        CHECK_EQ_INT(trove_names_set_sort(b, TROVE_NAME_THREAD_SORT, 7, 8, 1), TROVE_OK);
        CHECK(trove_names_find(b, TROVE_NAME_THREAD_SORT, 7, 8, &at) == 1 && at == 5004);
    }
    /* bad arguments change nothing */
    CHECK_EQ_INT(trove_names_set(a, 0, 1, 0, "x", 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set(a, 4, 1, 0, "x", 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_EVENT, 1, 0, NULL, 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_EVENT, 1, 0, "x", TROVE_NAME_MAX + 1), TROVE_ERR_INVALID);
    /* names are UTF-8: a lone continuation byte, an overlong '/', a surrogate, a cut
     * sequence are refused, and the table keeps what it had */
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_EVENT, 7, 0, "a\x80", 2), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_THREAD, 7, 8, "\xc0\xaf", 2), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_PROCESS, 7, 0, "\xed\xa0\x80", 3), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_EVENT, 9, 0, "\xe2\x82", 2), TROVE_ERR_INVALID);
    CHECK(!strcmp(trove_names_get(a, TROVE_NAME_EVENT, 7, 0, NULL), "SEVEN!"));
    CHECK(trove_names_get(a, TROVE_NAME_EVENT, 9, 0, NULL) == NULL);
    CHECK_EQ_INT(trove_names_count(a), 4);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_PROCESS_SORT, 1, 0, "x", 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set(a, TROVE_NAME_THREAD_SORT, 1, 0, "x", 1), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set_sort(a, TROVE_NAME_THREAD, 1, 2, 3), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_set_sort(a, 6, 1, 2, 3), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_names_count(a), 4);
    CHECK(strcmp(trove_kind_name(TROVE_KIND_INSTANT), "instant") == 0);
    CHECK(strcmp(trove_kind_name(200), "other") == 0);
    trove_names_free(a);
    trove_names_free(b);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_table);
    RUN(test_sort_indexes);
    return test_done();
}
