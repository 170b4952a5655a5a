/*
 * fuzz_s3_xml.c: libFuzzer target for the scanner of S3's XML answers
 * (trove__s3_xml_next, src/store/s3/s3_xml.c), the only parser of bytes an S3 server sends.
 * The input is an exact-size heap copy with no terminating NUL. For each tag S3 answers
 * use, the scan walks every element in turn. Oracles: pos only moves forward and never
 * past the input; a found text is NUL-terminated inside the buffer and no longer than the
 * bytes the scan consumed; the
 * same element scanned again from the same pos with a buffer of exactly its length + 1
 * gives the same text, and with one byte less gives TROVE_ERR_LIMIT; a cap of 0 never
 * writes.
 */
#include <stdlib.h>
#include <string.h>

#include "store/s3/s3_xml.h"
#include "trove/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *tags[] = {"Code", "Message", "Key", "IsTruncated",
                                 "NextContinuationToken", "Size"};
    char *xml = malloc(size ? size : 1);
    char text[256], again[256];

    if (!xml)
        return 0;
    if (size)
        memcpy(xml, data, size);
    for (size_t t = 0; t < sizeof tags / sizeof tags[0]; t++) {
        size_t pos = 0;
        for (int steps = 0; steps < 10000; steps++) {
            size_t before = pos, p2 = pos, len;
            int rc = trove__s3_xml_next(xml, size, &pos, tags[t], text, sizeof text);
            if (pos < before || pos > size)
                abort();
            if (rc != 1) {
                if (rc != 0 && rc != TROVE_ERR_LIMIT && rc != TROVE_ERR_CORRUPT)
                    abort();
                if (text[0] != '\0')
                    abort();
                if (rc == 0 || pos == before)
                    break;
                continue;
            }
            if (pos == before)
                abort(); /* a found element is consumed */
            len = strnlen(text, sizeof text);
            if (len >= sizeof text || len > pos - before)
                abort(); /* decoding only shrinks */
            memset(again, 'x', sizeof again);
            if (trove__s3_xml_next(xml, size, &p2, tags[t], again, len + 1) != 1 ||
                strcmp(again, text) != 0 || p2 != pos)
                abort();
            p2 = before;
            if (len > 0 && trove__s3_xml_next(xml, size, &p2, tags[t], again, len) !=
                               TROVE_ERR_LIMIT)
                abort();
            p2 = before;
            trove__s3_xml_next(xml, size, &p2, tags[t], NULL, 0);
        }
    }
    free(xml);
    return 0;
}
