/*
 * fuzz_flows.c: libFuzzer target for the flows object decoder (src/codec/flows.c), the rows
 * a capture keeps in the slot after its last segment.
 *
 * Every input is decoded into an array that already holds a row, which must be untouched
 * on error. A decoded object must re-encode (trove_flows_encode accepts every row the decoder
 * gives) and decode again to the same rows: a round-trip oracle.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/flows.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static const struct trove_flow sentinel = {1, 2, 3, 4, 5, TROVE_FLOW_STEP, 1, {0, 0}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_flows a = {0}, b = {0};
    struct trove_bytes again = {0};
    struct trove_diag diag = {0};
    int rc;

    CHECK(trove_flows_push(&a, &sentinel) == TROVE_OK);
    rc = trove_flows_decode(data, size, &a, &diag);
    CHECK(!memcmp(&a.f[0], &sentinel, sizeof sentinel));
    if (rc != TROVE_OK) {
        CHECK(diag.code == rc && a.len == 1);
    } else {
        for (size_t i = 1; i < a.len; i++)
            CHECK(trove_flow_check(&a.f[i]) == TROVE_OK);
        CHECK(trove_flows_encode(a.f + 1, a.len - 1, &again) == TROVE_OK);
        CHECK(trove_flows_decode(again.ptr, again.len, &b, NULL) == TROVE_OK);
        CHECK(b.len == a.len - 1 && (b.len == 0 || !memcmp(b.f, a.f + 1, b.len * sizeof *b.f)));
    }
    trove_bytes_free(&again);
    trove_flows_free(&a);
    trove_flows_free(&b);
    return 0;
}
