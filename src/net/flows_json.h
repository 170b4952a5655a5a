/*
 * flows_json.h (internal): the answer of GET /api/captures/NAME/flows (docs/serve.md, "Views
 * and statistics") — the flow chains that touch a time range on some tracks, for the viewer
 * to draw as arrows between events. A flow row is a point on a thread (trove/flows.h); the
 * rows of one id in time order are one chain. The answer picks the chains that have a point
 * in [from_ns, to_ns) on one of the tracks asked for, and gives every row of each (its other
 * ends may lie far outside the range: that is where an arrow leads). A pure function of the
 * rows, so that a unit test drives it without a service.
 *
 * Bounded whatever the capture holds: at most `limit` chains (the smallest ids: an importer
 * numbers flows in order of their first point, so these are the earliest) and at most
 * TROVE__FLOWS_ROWS_MAX rows; past either, "truncated" is true.
 */
#ifndef TROVE_NET_FLOWS_JSON_H
#define TROVE_NET_FLOWS_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/flows.h"

#define TROVE__FLOWS_LIMIT_DEFAULT 1000u /* chains when the request names no limit */
#define TROVE__FLOWS_LIMIT_MAX 10000u    /* the largest limit a request may ask for */
#define TROVE__FLOWS_ROWS_MAX 100000u    /* rows in one answer */

struct trove__flows_query {
    const char *capture;    /* its name, as the answer says it (a checked volume name) */
    uint64_t from_ns;       /* a chain is taken when one of its points has */
    uint64_t to_ns;         /*   from_ns <= ts_ns < to_ns ... */
    const uint64_t *tracks; /* ... on one of these tracks, pid << 32 | tid, sorted, distinct */
    size_t ntracks;         /*   (0: on any) */
    size_t limit;           /* chains at most, 1 .. TROVE__FLOWS_LIMIT_MAX */
};

/*
 * Append to out the JSON object
 *   {"capture":NAME,"flows":N,"chains":C,"truncated":B,"rows":[ROW,...]}
 * N the capture's rows (n), C the chains that touch the range on the tracks, B whether the
 * rows given leave any of them out; each ROW {"id","ts_ns","pid","tid","name_id","phase",
 * "enclosing"} (phase 0 start, 1 step, 2 end; enclosing: the point binds to the zone that
 * encloses it, else an end binds to the next zone to start on its thread), sorted by id, then
 * ts_ns, then the stored order. rows may be NULL when n is 0. Errors: TROVE_ERR_INVALID (a
 * NULL argument, limit 0 or over the maximum), TROVE_ERR_NOMEM; out is then as it was.
 * Thread-safe: touches nothing but its arguments.
 */
int trove__flows_json(const struct trove_flow *rows, size_t n, const struct trove__flows_query *q,
                      struct trove_bytes *out);

#endif
