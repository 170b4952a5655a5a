/*
 * fuzz_flows.c: libFuzzer target for the flows object decoder (src/codec/flows.c), the rows
 * a capture keeps in the slot after its last segment.
 *
 * Every input is decoded (trove_flows_decode_events, both versions) against the four events
 * of tests/unit/test_flows_v2.c's golden capture, the ones its seeds were made over, into an
 * array that already holds a row, which must be untouched on error. A decoded object must
 * re-encode in both versions (the encoders accept every row the decoder gives) and decode again
 * to the same rows: a round-trip oracle.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/flows.h"
#include "trove/wire_format.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static const struct trove_flow sentinel = {1, 2, 3, 4, 5, TROVE_FLOW_STEP, 1, {0, 0}};
static const struct trove_event events[] = {
    {1000, 5000, 1, 2, 0, 0, 0, 0, 0},
    {2000, 1000, 1, 2, 0, 1, 0, 0, 1},
    {1500, 3000, 1, 3, 0, 0, 0, 0, 2},
    {7000, 1000, 1, 3, 0, 0, 0, 0, 3},
};

/* rows re-encoded by `version`'s encoder decode to the same rows */
static void again(int version, const struct trove_flows_events *ev, const struct trove_flow *f,
                  size_t n)
{
    struct trove_bytes enc = {0};
    struct trove_flows b = {0};
    CHECK((version == 1 ? trove_flows_encode(f, n, &enc)
                        : trove_flows_encode_events(f, n, events, 4, &enc)) == TROVE_OK);
    CHECK(trove_flows_decode_events(enc.ptr, enc.len, ev, &b, NULL) == TROVE_OK);
    CHECK(b.len == n && (n == 0 || !memcmp(b.f, f, n * sizeof *f)));
    trove_bytes_free(&enc);
    trove_flows_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_flows a = {0};
    struct trove_flows_events ev;
    struct trove_diag diag = {0};
    int rc;

    trove_flows_events_of(&ev, events, 4);
    CHECK(trove_flows_push(&a, &sentinel) == TROVE_OK);
    rc = trove_flows_decode_events(data, size, &ev, &a, &diag);
    CHECK(!memcmp(&a.f[0], &sentinel, sizeof sentinel));
    if (rc != TROVE_OK) {
        CHECK(diag.code == rc && a.len == 1);
    } else {
        for (size_t i = 1; i < a.len; i++)
            CHECK(trove_flow_check(&a.f[i]) == TROVE_OK);
        again(1, &ev, a.f + 1, a.len - 1);
        again(2, &ev, a.f + 1, a.len - 1);
    }
    trove_flows_free(&a);
    return 0;
}
