/*
 * parquet_test.h: what the Parquet tests share (test_parquet.c, test_parquet_writer.c): the
 * footer of a file decoded, for checks of what the writer recorded and for damaged copies
 * made by re-encoding it.
 */
#ifndef TROVE_PARQUET_TEST_H
#define TROVE_PARQUET_TEST_H

#include "columnar/pq_meta.h"
#include "common/endian.h"

/* Decode the footer of a file (for checks of what the writer recorded). */
static inline int footer(const uint8_t *buf, size_t len, struct trove__pq_file_meta *fm)
{
    uint32_t flen = trove__get_le32(buf + len - 8);
    return trove__pq_file_meta_decode(buf + len - 8 - flen, flen, len - 8 - flen, fm, NULL);
}

#endif
