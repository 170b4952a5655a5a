/*
 * pq_dict_layout.c: the writer's policy for the data pages of a dictionary-encoded column
 * chunk (pq_encoding.h): the order of the dictionary, where the pages are cut, and their
 * bodies.
 *
 *   data page body := u8 bit width w | the page's indices in the RLE / bit-packing hybrid
 *                     at width w (pq_rle.c), no length prefix
 *
 * Why it is built this way: a data page states the bit width of its indices, so a page
 * need only be as wide as its largest index, and the order of the dictionary decides which
 * indices are small. A dictionary of up to 256 entries (threads, kinds, depths: used all
 * along) goes by descending count, so the common entries take the narrow indices; a larger
 * one (names: new ones keep arriving) stays in order of first appearance, so the early
 * pages stay narrow. Pages are cut (from 4 bits up) only where a narrower width saves more
 * than a page header, found by a dynamic program below; a chunk not cut is laid out in one
 * pass. The bodies are encoded with one RLE scratch for the whole chunk.
 *
 * Thread safety: no state; every function is safe to call concurrently on distinct outputs.
 */
#include "pq_encoding.h"
#include "common/alloc.h"
#include "common/sealed.h"

#include "pq_bitpack.h"

#include <stdlib.h>
#include <string.h>

/*
 * Every data page states the bit width of its indices, so a page need only be as wide as
 * its largest index. A dynamic program over units of 8 rows (what a bit-packed group holds,
 * u of them, the last one maybe partial) finds where to cut:
 *
 *   d[u][w]  the fewest bytes for units 0..u with unit u in a page of width w (w at least
 *            the width of unit u's largest index; +inf below): w bytes for the unit, plus
 *            either d[u - 1][w] (the same page goes on) or min over x of d[u - 1][x] +
 *            page_cost (a new page starts at u)
 *
 * counting a unit at w bytes (8 values at w bits) as if bit-packed: runs make some units
 * cheaper, at any width, so the cut points stand. O(u * (W + 1)) time; the way back is one
 * bit per (unit, width) and the best width before each unit.
 */
#define LAYOUT_UNIT 8
struct layout_dp {
    uint64_t *cont;  /* cont[u] bit w: unit u's page of width w went on from unit u - 1 */
    uint8_t *before; /* before[u]: the width of the page that ended at unit u - 1 */
};

static uint64_t layout_cost(const uint8_t *uw, size_t nu, unsigned wmax, uint64_t page_cost,
                            struct layout_dp *way, unsigned *last_w)
{
    const uint64_t inf = UINT64_MAX / 4;
    uint64_t d[33] = {0}, best = 0;
    unsigned best_w = 0, plo = 0;

    /* d[w] holds for w >= plo, the previous unit's width; below it a page cannot be. */
    for (size_t u = 0; u < nu; u++) {
        const uint64_t fresh = best + page_cost;
        const unsigned lo = uw[u];
        uint64_t cont = 0, nb = inf;
        unsigned nbw = wmax;
        if (way)
            way->before[u] = (uint8_t)best_w;
        for (unsigned w = lo; w <= wmax; w++) {
            const uint64_t on = u > 0 && w >= plo && d[w] <= fresh;
            const uint64_t x = (on ? d[w] : fresh) + w * (LAYOUT_UNIT / 8);
            d[w] = x;
            cont |= on << w;
            nbw = x < nb ? w : nbw;
            nb = x < nb ? x : nb;
        }
        if (way)
            way->cont[u] = cont;
        best = nb;
        best_w = nbw;
        plo = lo;
    }
    if (last_w)
        *last_w = best_w;
    return best;
}

/* The width of each unit's largest index (the width of their bitwise or). */
static void unit_widths(const uint32_t *idx, size_t n, uint8_t *uw)
{
    size_t u = 0, s = 0;
    uint32_t m;

    for (; s + LAYOUT_UNIT <= n; s += LAYOUT_UNIT, u++) {
        m = 0;
        for (size_t r = s; r < s + LAYOUT_UNIT; r++)
            m |= idx[r];
        uw[u] = (uint8_t)trove__pq_width64(m);
    }
    if (s < n) {
        for (m = 0; s < n; s++)
            m |= idx[s];
        uw[u] = (uint8_t)trove__pq_width64(m);
    }
}

struct by_count {
    size_t count;
    uint32_t k;
};

/* Dictionaries up to this size are put in order of count, larger ones of first appearance.
 * The counts go into 4 interleaved tables (a run of one value would otherwise wait on its
 * own increments). */
#define LAYOUT_COUNT_MAX 256u


static int by_count_cmp(const void *pa, const void *pb)
{
    const struct by_count *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k;
}

/* Count the uses of each entry into bc[0..nd) (zeroed by the caller; nd <= LAYOUT_COUNT_MAX;
 * checks every index is below nd) and set rank[k] to entry k's place by descending count,
 * ties by k. */
static int count_order(const uint32_t *idx, size_t n, size_t nd, struct by_count *bc,
                       uint32_t *rank)
{
    size_t cnt[4][LAYOUT_COUNT_MAX];

    memset(cnt, 0, sizeof cnt);
    for (size_t r = 0; r < n; r++) {
        if (idx[r] >= nd)
            return TROVE_ERR_INVALID;
        cnt[r & 3][idx[r]]++;
    }
    for (size_t k = 0; k < nd; k++) {
        bc[k].k = (uint32_t)k;
        bc[k].count = cnt[0][k] + cnt[1][k] + cnt[2][k] + cnt[3][k];
    }
    qsort(bc, nd, sizeof *bc, by_count_cmp);
    for (size_t k = 0; k < nd; k++)
        rank[bc[k].k] = (uint32_t)k;
    return TROVE_OK;
}

/* A chunk not cut: the order as built, pages of rows_max rows, each as wide as its largest
 * index, all found in one pass (which also checks the indices). */
static int layout_uncut(const uint32_t *idx, size_t n, size_t nd, size_t rows_max,
                        uint32_t *order_out, struct trove__pq_dict_page **pages_out,
                        size_t *npages_out)
{
    const size_t npages = (size_t)trove__div_up(n, rows_max);
    struct trove__pq_dict_page *pages = trove__malloc((npages ? npages : 1) * sizeof *pages);
    uint32_t top = 0;

    if (!pages)
        return TROVE_ERR_NOMEM;
    for (size_t q = 0, at = 0; q < npages; q++, at += rows_max) {
        const size_t rows = n - at < rows_max ? n - at : rows_max;
        uint32_t m = 0;
        for (size_t r = at; r < at + rows; r++) {
            m |= idx[r];
            top = idx[r] > top ? idx[r] : top;
        }
        pages[q].rows = rows;
        pages[q].width = trove__pq_width64(m);
    }
    if (n > 0 && top >= nd) {
        free(pages);
        return TROVE_ERR_INVALID;
    }
    for (size_t k = 0; k < nd; k++)
        order_out[k] = (uint32_t)k;
    *pages_out = pages;
    *npages_out = npages;
    return TROVE_OK;
}

int trove__pq_dict_layout(uint32_t *idx, size_t n, size_t nd, size_t max_rows, size_t page_cost,
                          uint32_t *order_out, struct trove__pq_dict_page **pages_out,
                          size_t *npages_out)
{
    const size_t nu = (size_t)trove__div_up(n, LAYOUT_UNIT), nu1 = nu ? nu : 1;
    const unsigned wmax = nd > 1 ? trove__pq_width64(nd - 1) : 0;
    /* Pages are cut for 4 bits or more: at 3 or fewer a narrower page needs a stretch with
     * at most half the entries, and the gen events' 3-bit extra column has none. */
    const int cut = wmax > 3, by_count = cut && nd <= LAYOUT_COUNT_MAX;
    struct by_count *bc = NULL;
    uint32_t *rank = NULL, top = 0;
    uint8_t *uw = NULL;
    struct layout_dp way = {NULL, NULL};
    struct trove__pq_dict_page *pages = NULL;
    size_t npages = 0, rows_max = max_rows / 8 * 8;
    unsigned w = wmax;
    int rc = TROVE_ERR_INVALID, remap = 0;

    if (!pages_out || !npages_out || (nd > 0 && !order_out) || (n > 0 && !idx) ||
        nd > (size_t)UINT32_MAX + 1 || rows_max == 0)
        goto out;
    if (!cut) {
        rc = layout_uncut(idx, n, nd, rows_max, order_out, pages_out, npages_out);
        goto out;
    }
    rc = TROVE_ERR_NOMEM;
    if (!(bc = trove__calloc(by_count ? nd : 1, sizeof *bc)) ||
        !(rank = trove__calloc(nd ? nd : 1, sizeof *rank)) ||
        !(uw = trove__calloc(nu1, 1)) || !(way.cont = trove__malloc(nu1 * sizeof *way.cont)) ||
        !(way.before = trove__calloc(nu1, 1)))
        goto out;

    /* The order: a small dictionary (threads, kinds, depths) is used all along, so by
     * descending count (ties by first appearance) the common entries take the narrow
     * indices; a large one (names) keeps getting new entries, so in order of first
     * appearance (as the indices are) the early pages stay narrow. */
    if (by_count) {
        if ((rc = count_order(idx, n, nd, bc, rank)) != TROVE_OK)
            goto out;
        for (size_t k = 0; k < nd; k++)
            remap |= rank[k] != k;
    } else {
        for (size_t r = 0; r < n; r++)
            top = idx[r] > top ? idx[r] : top;
        if (n > 0 && top >= nd) {
            rc = TROVE_ERR_INVALID;
            goto out;
        }
        for (size_t k = 0; k < nd; k++)
            rank[k] = (uint32_t)k;
    }
    /* The indices in the new order, each unit's width, the program, then the pages from the
     * back (a page over rows_max rows becomes pieces of rows_max and what is left, at its
     * width). */
    if (remap)
        for (size_t r = 0; r < n; r++)
            idx[r] = rank[idx[r]];
    if (nu > 0) {
        unit_widths(idx, n, uw);
        layout_cost(uw, nu, wmax, page_cost, &way, &w);
    }
    for (int fill = 0; fill < 2; fill++) {
        size_t end = n, at = npages;
        unsigned pw = w;
        if (fill && !(pages = trove__malloc((npages ? npages : 1) * sizeof *pages))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        for (size_t u = nu; u-- > 0;) {
            size_t len;
            if (u > 0 && (way.cont[u] >> pw & 1))
                continue;
            len = end - u * LAYOUT_UNIT;
            for (size_t piece; len > 0; len -= piece, end -= piece) {
                piece = len % rows_max ? len % rows_max : rows_max;
                if (fill)
                    pages[--at] = (struct trove__pq_dict_page){piece, pw};
                else
                    npages++;
            }
            if (u > 0)
                pw = way.before[u];
        }
    }
    /* Each page exactly as wide as its largest index, which a piece of a page split at
     * rows_max may not need: the widest of its units (a page starts at a unit, and all but
     * the last hold whole units). */
    for (size_t q = 0, u = 0; q < npages; q++) {
        unsigned m = 0;
        for (size_t e = u + (size_t)trove__div_up(pages[q].rows, LAYOUT_UNIT); u < e; u++)
            m = uw[u] > m ? uw[u] : m;
        pages[q].width = m;
    }
    for (size_t k = 0; k < nd; k++)
        order_out[rank[k]] = (uint32_t)k;
    *pages_out = pages;
    *npages_out = npages;
    pages = NULL;
    rc = TROVE_OK;
out:
    free(bc);
    free(rank);
    free(uw);
    free(way.cont);
    free(way.before);
    free(pages);
    return rc;
}

int trove__pq_dict_pages_encode(const uint32_t *idx, const struct trove__pq_dict_page *pages,
                                size_t npages, struct trove_bytes *out, size_t *off)
{
    struct trove__pq_rle_scratch dp = TROVE__PQ_RLE_SCRATCH_INIT;
    size_t old_len, at = 0;
    int rc = TROVE_OK;

    if (!out || (npages > 0 && (!idx || !pages || !off)))
        return TROVE_ERR_INVALID;
    old_len = out->len;
    for (size_t q = 0; q < npages && rc == TROVE_OK; q++) {
        const uint8_t width = (uint8_t)pages[q].width;
        off[q] = out->len;
        if (pages[q].width > 32)
            rc = TROVE_ERR_INVALID;
        else if ((rc = trove_bytes_append(out, &width, 1)) == TROVE_OK)
            rc = trove__pq_rle_encode_with(&dp, idx + at, pages[q].rows, width, out);
        at += pages[q].rows;
    }
    if (rc == TROVE_OK)
        off[npages] = out->len;
    else
        out->len = old_len;
    trove__pq_rle_scratch_free(&dp);
    return rc;
}
