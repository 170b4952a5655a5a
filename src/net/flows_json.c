/*
 * flows_json.c: the flow chains of a range as JSON (flows_json.h). Two passes over the rows,
 * which are few (a capture holds at most 2^28, a real trace some thousands to a few hundred
 * thousand): the ids that have a point in the range on the tracks asked for, sorted and made
 * distinct, the first `limit` kept; then the rows of those ids, found by binary search,
 * sorted by (id, time, stored order) and written chain by chain while the row budget holds.
 * Memory is one id and one index per row at most, freed before returning.
 */
#include "flows_json.h"
#include "common/alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int has_u64(const uint64_t *a, size_t n, uint64_t v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (a[m] < v)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < n && a[lo] == v;
}

/* qsort has no context: the rows being sorted for this call (one call at a time per thread). */
static _Thread_local const struct trove_flow *sort_rows;

static int row_cmp(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const struct trove_flow *x = &sort_rows[i], *y = &sort_rows[j];
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns < y->ts_ns ? -1 : 1;
    return i < j ? -1 : i > j;
}

int trove__flows_json(const struct trove_flow *rows, size_t n, const struct trove__flows_query *q,
                      struct trove_bytes *out)
{
    uint64_t *ids = NULL;
    size_t *pick = NULL, nids = 0, chains = 0, keep, npick = 0, start = out ? out->len : 0;
    int rc = TROVE_OK, truncated = 0, first = 1;
    char buf[256];

    if (!q || !out || !q->capture || (n && !rows) || (q->ntracks && !q->tracks) || q->limit == 0 ||
        q->limit > TROVE__FLOWS_LIMIT_MAX)
        return TROVE_ERR_INVALID;
    if (n && !(ids = trove__mallocarray(n, sizeof *ids)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct trove_flow *f = &rows[i];
        if (f->ts_ns < q->from_ns || f->ts_ns >= q->to_ns)
            continue;
        if (q->ntracks && !has_u64(q->tracks, q->ntracks, (uint64_t)f->pid << 32 | f->tid))
            continue;
        ids[nids++] = f->id;
    }
    if (nids)
        qsort(ids, nids, sizeof *ids, u64_cmp);
    for (size_t i = 0; i < nids; i++)
        if (chains == 0 || ids[chains - 1] != ids[i])
            ids[chains++] = ids[i];
    keep = chains < q->limit ? chains : q->limit;
    if (keep < chains)
        truncated = 1;
    if (keep && !(pick = trove__mallocarray(n, sizeof *pick))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; keep && i < n; i++)
        if (has_u64(ids, keep, rows[i].id))
            pick[npick++] = i;
    if (npick) {
        sort_rows = rows;
        qsort(pick, npick, sizeof *pick, row_cmp);
        sort_rows = NULL;
    }
    /* whole chains while the budget holds */
    {
        size_t used = 0, i = 0;
        while (i < npick) {
            size_t j = i + 1;
            while (j < npick && rows[pick[j]].id == rows[pick[i]].id)
                j++;
            if (used + (j - i) > TROVE__FLOWS_ROWS_MAX) {
                truncated = 1;
                break;
            }
            used += j - i;
            i = j;
        }
        npick = used;
    }
    snprintf(buf, sizeof buf,
             "\",\"flows\":%zu,\"chains\":%zu,\"truncated\":%s,\"rows\":[", n, chains,
             truncated ? "true" : "false");
    if ((rc = trove_bytes_append(out, "{\"capture\":\"", 12)) != TROVE_OK ||
        (rc = trove_bytes_append(out, q->capture, strlen(q->capture))) != TROVE_OK ||
        (rc = trove_bytes_append(out, buf, strlen(buf))) != TROVE_OK)
        goto out;
    for (size_t k = 0; k < npick; k++) {
        const struct trove_flow *f = &rows[pick[k]];
        int len = snprintf(buf, sizeof buf,
                           "%s{\"id\":%" PRIu64 ",\"ts_ns\":%" PRIu64 ",\"pid\":%" PRIu32
                           ",\"tid\":%" PRIu32 ",\"name_id\":%" PRIu32
                           ",\"phase\":%u,\"enclosing\":%s}",
                           first ? "" : ",", f->id, f->ts_ns, f->pid, f->tid, f->name_id,
                           (unsigned)f->phase, f->flags & TROVE_FLOW_ENCLOSING ? "true" : "false");
        first = 0;
        if ((rc = trove_bytes_append(out, buf, (size_t)len)) != TROVE_OK)
            goto out;
    }
    rc = trove_bytes_append(out, "]}", 2);
out:
    if (rc != TROVE_OK && out)
        out->len = start;
    free(pick);
    free(ids);
    return rc;
}
