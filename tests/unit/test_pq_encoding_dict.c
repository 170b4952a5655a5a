/*
 * test_pq_encoding_dict.c: Parquet's dictionary builders (src/columnar/pq_*.c) — INT32 and
 * INT64 values and strings into a dictionary and its indices (small ranges through a direct
 * table, wide ones through hashing), decoded back through the harness of
 * pq_encoding_test.h; and the pages of a dictionary-encoded chunk, each layout checked for
 * what every layout must give.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "columnar/pq_encoding.h"
#include "common/endian.h"
#include "common/varint.h"
#include "pq_encoding_test.h"
#include "testutil.h"

/* ---- dictionaries ------------------------------------------------------------------------ */

static void test_dict_int(void)
{
    static const int64_t v[] = {5, -1, 5, INT64_MIN, 7, -1, INT64_MAX, 0, 7, 0};
    static const uint32_t want_idx[] = {0, 1, 0, 2, 3, 1, 4, 5, 3, 5};
    static const int64_t want_vals[] = {5, -1, INT64_MIN, 7, INT64_MAX, 0};
    uint32_t idx[10];
    static int64_t dummy;
    int64_t *vals = NULL, *sentinel = &dummy;
    size_t nd = 0;

    CHECK_EQ_INT(trove__pq_dict_build_int(v, 10, 6, idx, &vals, &nd), TROVE_OK);
    CHECK_EQ_INT(nd, 6);
    CHECK(memcmp(idx, want_idx, sizeof idx) == 0);
    CHECK(vals && memcmp(vals, want_vals, sizeof want_vals) == 0);
    free(vals);
    /* One more distinct value than allowed: LIMIT, outputs untouched. */
    vals = sentinel;
    nd = 12345;
    CHECK_EQ_INT(trove__pq_dict_build_int(v, 10, 5, idx, &vals, &nd), TROVE_ERR_LIMIT);
    CHECK(vals == sentinel && nd == 12345);
    CHECK_EQ_INT(trove__pq_dict_build_int(v, 10, 0, idx, &vals, &nd), TROVE_ERR_LIMIT);
    /* n = 0. */
    CHECK_EQ_INT(trove__pq_dict_build_int(NULL, 0, 0, NULL, &vals, &nd), TROVE_OK);
    CHECK(vals != NULL && nd == 0);
    free(vals);
    CHECK_EQ_INT(trove__pq_dict_build_int(v, 10, 6, NULL, &vals, &nd), TROVE_ERR_INVALID);

    /* Many values, through several rehashes: 200k rows of 60k distinct. */
    {
        const size_t n = 200000;
        int64_t *x = malloc(n * sizeof *x);
        uint32_t *ix = malloc(n * sizeof *ix);
        uint64_t rng = 13;
        int good = 1;
        uint32_t next = 0;
        if (!x || !ix)
            abort();
        for (size_t i = 0; i < n; i++)
            x[i] = (int64_t)(test_rand(&rng) % 60000) * 1000003 - 7;
        CHECK_EQ_INT(trove__pq_dict_build_int(x, n, 60000, ix, &vals, &nd), TROVE_OK);
        CHECK(nd <= 60000 && nd > 55000); /* 60000 (1 - e^-3.3) = 57,850 expected */
        for (size_t i = 0; i < n && vals; i++) {
            good &= ix[i] < nd && vals[ix[i]] == x[i];
            /* first appearance order: a new index is always the next one */
            if (ix[i] == next)
                next++;
            else
                good &= ix[i] < next;
        }
        CHECK(good);
        CHECK_EQ_INT(next, nd);
        for (size_t a = 1; a < nd && vals; a++)
            good &= vals[a] != vals[a - 1];
        CHECK(good);
        free(vals);
        CHECK_EQ_INT(trove__pq_dict_build_int(x, n, nd - 1, ix, &vals, &nd), TROVE_ERR_LIMIT);
        free(x);
        free(ix);
    }
}

/* Small ranges go through a direct table, wide ones through hashing, INT32 values through
 * their own builder: all give the same indices and values. */
static void test_dict_direct(void)
{
    const size_t n = 50000;
    int64_t *x = malloc(n * sizeof *x), *wide = malloc(n * sizeof *wide);
    int32_t *x32 = malloc(n * sizeof *x32);
    uint32_t *ia = malloc(n * sizeof *ia), *ib = malloc(n * sizeof *ib), *ic = malloc(n * sizeof *ic);
    uint64_t rng = 99;
    int64_t *va = NULL, *vb = NULL, *vc = NULL;
    size_t na = 0, nb = 0, nc = 0;
    static const int32_t neg[] = {-3, -1, -3, 2, -1, 0};
    static const uint32_t neg_idx[] = {0, 1, 0, 2, 1, 3};
    uint32_t idx[6];

    if (!x || !wide || !x32 || !ia || !ib || !ic)
        abort();
    for (size_t i = 0; i < n; i++) {
        x[i] = (int64_t)(test_rand(&rng) % 3000) - 1000; /* range 3000: direct */
        wide[i] = x[i] * 1000000007;                      /* same pattern, hashed */
        x32[i] = (int32_t)x[i];
    }
    CHECK_EQ_INT(trove__pq_dict_build_int(x, n, 65536, ia, &va, &na), TROVE_OK);
    CHECK_EQ_INT(trove__pq_dict_build_int(wide, n, 65536, ib, &vb, &nb), TROVE_OK);
    CHECK_EQ_INT(trove__pq_dict_build_i32(x32, n, 65536, ic, &vc, &nc), TROVE_OK);
    CHECK(na == nb && na == nc && na > 2900);
    CHECK(memcmp(ia, ib, n * sizeof *ia) == 0 && memcmp(ia, ic, n * sizeof *ia) == 0);
    for (size_t k = 0; va && vb && vc && k < na; k++)
        CHECK(va[k] * 1000000007 == vb[k] && va[k] == vc[k]);
    free(va);
    free(vb);
    free(vc);
    /* The limit holds on the direct path too. */
    va = NULL;
    CHECK_EQ_INT(trove__pq_dict_build_int(x, n, na - 1, ia, &va, &na), TROVE_ERR_LIMIT);
    CHECK_EQ_INT(trove__pq_dict_build_i32(x32, n, 0, ia, &va, &na), TROVE_ERR_LIMIT);
    CHECK(va == NULL);
    /* Negative INT32 values widen by sign. */
    CHECK_EQ_INT(trove__pq_dict_build_i32(neg, 6, 10, idx, &va, &na), TROVE_OK);
    CHECK_EQ_INT(na, 4);
    CHECK(memcmp(idx, neg_idx, sizeof idx) == 0);
    CHECK(va && va[0] == -3 && va[1] == -1 && va[2] == 2 && va[3] == 0);
    free(va);
    free(x);
    free(wide);
    free(x32);
    free(ia);
    free(ib);
    free(ic);
}

static void test_dict_str(void)
{
    const char *s[8] = {"a", "", "bb", "a", NULL, "b", "bb", "ab"};
    uint32_t l[8] = {1, 0, 2, 1, 0, 1, 2, 2};
    static const uint32_t want_idx[8] = {0, 1, 2, 0, 1, 3, 2, 4};
    static const size_t want_first[5] = {0, 1, 2, 5, 7};
    uint32_t idx[8];
    size_t *first = NULL, nd = 0, dummy, *sentinel = &dummy;

    CHECK_EQ_INT(trove__pq_dict_build_str(s, l, 8, 5, idx, &first, &nd), TROVE_OK);
    CHECK_EQ_INT(nd, 5);
    CHECK(memcmp(idx, want_idx, sizeof idx) == 0);
    CHECK(first && memcmp(first, want_first, sizeof want_first) == 0);
    free(first);
    first = sentinel;
    CHECK_EQ_INT(trove__pq_dict_build_str(s, l, 8, 4, idx, &first, &nd), TROVE_ERR_LIMIT);
    CHECK(first == sentinel && nd == 5);
    /* Same bytes with a different length are different values. */
    {
        const char *t[2] = {"abc", "abc"};
        uint32_t tl[2] = {3, 2};
        CHECK_EQ_INT(trove__pq_dict_build_str(t, tl, 2, 10, idx, &first, &nd), TROVE_OK);
        CHECK(nd == 2 && idx[0] == 0 && idx[1] == 1);
        free(first);
    }
    s[0] = NULL;
    CHECK_EQ_INT(trove__pq_dict_build_str(s, l, 8, 5, idx, &first, &nd), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove__pq_dict_build_str(NULL, NULL, 0, 0, NULL, &first, &nd), TROVE_OK);
    CHECK(first != NULL && nd == 0);
    free(first);

    /* 100k rows of 30k distinct strings. */
    {
        const size_t n = 100000;
        char (*buf)[24] = malloc(n * sizeof *buf);
        const char **p = malloc(n * sizeof *p);
        uint32_t *pl = malloc(n * sizeof *pl), *ix = malloc(n * sizeof *ix);
        uint64_t rng = 17;
        int good = 1;
        if (!buf || !p || !pl || !ix)
            abort();
        for (size_t i = 0; i < n; i++) {
            pl[i] = (uint32_t)snprintf(buf[i], sizeof buf[i], "k%llu",
                                       (unsigned long long)(test_rand(&rng) % 30000));
            p[i] = buf[i];
        }
        CHECK_EQ_INT(trove__pq_dict_build_str(p, pl, n, SIZE_MAX, ix, &first, &nd), TROVE_OK);
        CHECK(nd <= 30000 && nd > 27000); /* 28,930 expected */
        for (size_t i = 0; i < n && first; i++) {
            size_t f = first[ix[i]];
            good &= ix[i] < nd && pl[f] == pl[i] && memcmp(p[f], p[i], pl[i]) == 0;
            good &= f <= i && (f < i || ix[i] == 0 || first[ix[i] - 1] < i);
        }
        CHECK(good);
        free(first);
        free(buf);
        free(p);
        free(pl);
        free(ix);
    }
}

/* ---- the pages of a dictionary-encoded chunk ---------------------------------------------- */

static unsigned width_of(uint32_t x) { return x ? 32 - (unsigned)__builtin_clz(x) : 0; }

/* Lay out idx[0..n) of an nd-entry dictionary and check what every layout must give: pages
 * covering the rows in order, none over max_rows, each exactly as wide as its largest index;
 * order_out a permutation with every row still naming its entry; the bodies decoding back.
 * Returns the pages (caller frees) and their count in *np. */
static struct trove__pq_dict_page *layout_checked(uint32_t *idx, size_t n, size_t nd,
                                                  size_t max_rows, size_t *np,
                                                  uint32_t *order, const char *what)
{
    uint32_t *was = malloc((n ? n : 1) * sizeof *was), *seen = calloc(nd ? nd : 1, 4);
    struct trove__pq_dict_page *pages = NULL;
    struct trove_bytes body = {0};
    size_t *off, at = 0;

    if (!was || !seen)
        abort();
    memcpy(was, idx, n * sizeof *idx);
    CHECK_EQ_INT(trove__pq_dict_layout(idx, n, nd, max_rows, 24, order, &pages, np), TROVE_OK);
    for (size_t k = 0; k < nd; k++) {
        CHECK(order[k] < nd && !seen[order[k]]);
        if (order[k] < nd)
            seen[order[k]] = 1;
    }
    for (size_t r = 0; r < n; r++)
        CHECK(idx[r] < nd && order[idx[r]] == was[r]);
    if (!(off = malloc((*np + 1) * sizeof *off)))
        abort();
    CHECK_EQ_INT(trove__pq_dict_pages_encode(idx, pages, *np, &body, off), TROVE_OK);
    for (size_t q = 0; q < *np; q++) {
        uint32_t top = 0;
        struct dec d = {SEL_RLE, pages[q].width, pages[q].rows, 0};
        struct outs o;
        CHECK(pages[q].rows >= 1 && pages[q].rows <= max_rows / 8 * 8);
        for (size_t r = at; r < at + pages[q].rows && r < n; r++)
            top = idx[r] > top ? idx[r] : top;
        if (pages[q].width != width_of(top))
            fprintf(stderr, "%s: page %zu is %u bits wide, its largest index %u\n", what, q,
                    pages[q].width, top);
        CHECK_EQ_INT(pages[q].width, width_of(top));
        CHECK_EQ_INT(body.ptr[off[q]], pages[q].width);
        if (at + pages[q].rows <= n) {
            if (expect_ok(&d, body.ptr + off[q] + 1, off[q + 1] - off[q] - 1,
                          off[q + 1] - off[q] - 1, &o, what) == TROVE_OK)
                CHECK(memcmp(o.u32, idx + at, pages[q].rows * sizeof *idx) == 0);
            outs_free(&o);
        }
        at += pages[q].rows;
    }
    CHECK_EQ_INT(at, n);
    trove_bytes_free(&body);
    free(off);
    free(was);
    free(seen);
    return pages;
}

static void test_dict_layout(void)
{
    const size_t n = 40000;
    uint32_t *idx = malloc(n * sizeof *idx), order[1024];
    struct trove__pq_dict_page *pages;
    size_t np;
    uint64_t rng = 5;

    if (!idx)
        abort();
    /* 1000 entries: the first half of the rows uses only 0..7, the second 512..999: two
     * pages, 3 bits then 10; the order is kept (over 256 entries). */
    for (size_t r = 0; r < n; r++)
        idx[r] = r < n / 2 ? (uint32_t)(test_rand(&rng) % 8)
                           : 512 + (uint32_t)(test_rand(&rng) % 488);
    pages = layout_checked(idx, n, 1000, 1 << 20, &np, order, "two halves");
    CHECK_EQ_INT(np, 2);
    if (np == 2) {
        CHECK_EQ_INT(pages[0].rows, n / 2);
        CHECK_EQ_INT(pages[0].width, 3);
        CHECK_EQ_INT(pages[1].width, 10);
    }
    for (uint32_t k = 0; k < 1000; k++)
        CHECK_EQ_INT(order[k], k);
    free(pages);

    /* Wide values everywhere: one page, however long; max_rows splits it at its width. */
    for (size_t r = 0; r < n; r++)
        idx[r] = 512 + (uint32_t)(test_rand(&rng) % 488);
    pages = layout_checked(idx, n, 1000, 1 << 20, &np, order, "uniform");
    CHECK_EQ_INT(np, 1);
    free(pages);
    pages = layout_checked(idx, n, 1000, 12345, &np, order, "uniform, split");
    CHECK_EQ_INT(np, (n + 12343) / 12344); /* 12345 rounds down to 12344 */
    free(pages);

    /* A short narrow stretch does not pay for two page headers: 16 rows of 0..1 in the
     * middle of 0..999 stay in the one page. */
    for (size_t r = 20000; r < 20016; r++)
        idx[r] = (uint32_t)(r % 2);
    pages = layout_checked(idx, n, 1000, 1 << 20, &np, order, "short stretch");
    CHECK_EQ_INT(np, 1);
    free(pages);

    /* 16 entries in order of first appearance, but entry 15 the most common: by count it
     * becomes index 0, and the stretch of only 15s a page of width 0 between two of 4. */
    for (size_t r = 0; r < n; r++)
        idx[r] = r >= 16 && r < 30000 ? 15 : (uint32_t)(r % 16);
    pages = layout_checked(idx, n, 16, 1 << 20, &np, order, "by count");
    CHECK_EQ_INT(order[0], 15);
    CHECK_EQ_INT(np, 3);
    if (np == 3)
        CHECK(pages[0].width == 4 && pages[1].width == 0 && pages[2].width == 4);
    free(pages);

    /* Up to 3 bits, one width: 8 entries, the first half only 0 and 1. */
    for (size_t r = 0; r < n; r++)
        idx[r] = r < n / 2 ? (uint32_t)(r % 2) : (uint32_t)(r % 8);
    pages = layout_checked(idx, n, 8, 1 << 20, &np, order, "3 bits");
    CHECK_EQ_INT(np, 1);
    free(pages);

    /* Edges: no rows; one entry (width 0); and the errors, which leave the outputs alone. */
    pages = layout_checked(idx, 0, 0, 64, &np, order, "empty");
    CHECK_EQ_INT(np, 0);
    free(pages);
    for (size_t r = 0; r < 100; r++)
        idx[r] = 0;
    pages = layout_checked(idx, 100, 1, 64, &np, order, "one entry");
    CHECK_EQ_INT(np, 2);
    if (np == 2)
        CHECK(pages[0].width == 0 && pages[0].rows == 64 && pages[1].rows == 36);
    free(pages);
    pages = NULL;
    np = 77;
    idx[50] = 1;
    CHECK_EQ_INT(trove__pq_dict_layout(idx, 100, 1, 64, 24, order, &pages, &np),
                 TROVE_ERR_INVALID);
    idx[50] = 700; /* over 256 entries: checked without counting */
    CHECK_EQ_INT(trove__pq_dict_layout(idx, 100, 600, 64, 24, order, &pages, &np),
                 TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove__pq_dict_layout(idx, 100, 1000, 7, 24, order, &pages, &np),
                 TROVE_ERR_INVALID);
    CHECK(pages == NULL && np == 77);
    free(idx);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_dict_int);
    RUN(test_dict_direct);
    RUN(test_dict_str);
    RUN(test_dict_layout);
    return test_done();
}
