/*
 * fuzz_summary.c: libFuzzer target for the summary node decoder (src/capture/summary.c,
 * docs/formats/summary.md), the objects a capture's views and statistics are read from.
 *
 * An input whose first byte is 'P' is a payload as it inflates (the rest of the input): it
 * is wrapped into an object (trove_testing_summary_wrap) before it is decoded, so that
 * mutations reach the parser rather than die in the deflate stream or at the checksum.
 *
 * A node that decodes must hold together: its tracks, cells, long events and sketches refer
 * only to what it has, and it re-encodes to bytes that decode to the same node (a level-0
 * node's object keeps no sketches, so one that decoded has none). On error the output is
 * untouched and diag holds the error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/summary.h"
#include "trove/testing.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_summary s, t;
    struct trove_bytes again = {0}, wrapped = {0};
    struct trove_diag diag = {0};
    int rc;

    if (size > 0 && data[0] == 'P') {
        CHECK(trove_testing_summary_wrap(data + 1, size - 1, &wrapped) == TROVE_OK);
        data = wrapped.ptr;
        size = wrapped.len;
    }
    memset(&s, 0x5a, sizeof s);
    rc = trove_summary_decode(data, size, &s, &diag);
    if (rc != TROVE_OK) {
        CHECK(diag.code == rc);
        trove_bytes_free(&wrapped);
        return 0;
    }
    for (size_t i = 0; i < s.ncells; i++)
        CHECK(s.cells[i].track < s.ntracks && s.cells[i].lane < TROVE_SUMMARY_LANES);
    for (size_t i = 0; i < s.nlongs; i++)
        CHECK(s.longs[i].track < s.ntracks && s.longs[i].index < s.events);
    for (size_t i = 0; i < s.nsketches; i++)
        CHECK(s.sketches[i].first + s.sketches[i].n <= s.nbuckets && s.sketches[i].min <= s.sketches[i].max);
    CHECK(s.level > 0 || s.nsketches == 0);
    for (size_t i = 0; i < s.nsketches; i++) { /* quantiles stay inside [min, max] */
        double q = trove_summary_quantile(&s, &s.sketches[i], 0.99);
        CHECK(q >= (double)s.sketches[i].min && q <= (double)s.sketches[i].max);
    }
    CHECK(trove_summary_encode(&s, &again) == TROVE_OK);
    CHECK(trove_summary_decode(again.ptr, again.len, &t, NULL) == TROVE_OK);
    CHECK(t.ntracks == s.ntracks && t.ncells == s.ncells && t.nlongs == s.nlongs &&
          t.nsketches == s.nsketches && t.nbuckets == s.nbuckets && t.events == s.events &&
          t.shift == s.shift && t.level == s.level);
    CHECK(!s.ntracks || !memcmp(t.tracks, s.tracks, s.ntracks * sizeof *s.tracks));
    CHECK(!s.nbuckets || !memcmp(t.buckets, s.buckets, s.nbuckets * sizeof *s.buckets));
    trove_summary_free(&t);
    trove_summary_free(&s);
    trove_bytes_free(&again);
    trove_bytes_free(&wrapped);
    return 0;
}
