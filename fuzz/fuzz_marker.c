/*
 * fuzz_marker.c: libFuzzer target for the last-used marker's parser
 * (trove__capture_marker_parse, src/capture/marker.c). Oracle: whatever parses prints back
 * to exactly the input (the format has one spelling per value: no leading zeros are
 * refused, so "007\n" parses, and then the value must print as the digits with the zeros
 * dropped); whatever fails leaves 0.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t v = 1;
    char text[40];
    size_t zeros = 0;

    if (trove__capture_marker_parse(data, size, &v) != TROVE_OK) {
        if (v != 0)
            abort();
        return 0;
    }
    while (zeros + 2 < size && data[zeros] == '0')
        zeros++;
    snprintf(text, sizeof text, "%" PRIu64 "\n", v);
    if (strlen(text) != size - zeros || memcmp(text, data + zeros, size - zeros) != 0)
        abort();
    return 0;
}
