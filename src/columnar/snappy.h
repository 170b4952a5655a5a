/*
 * snappy.h (internal to src/columnar): decoding the Snappy block format, Parquet's SNAPPY
 * codec and DuckDB's default, so that a Parquet file DuckDB writes with its defaults reads
 * back (docs/formats/bundle.md). trove never writes Snappy.
 *
 * The decoder is trove's own (snappy.c), written from the format's description; libsnappy,
 * Google's reference implementation, is only the tests' compressor and reference
 * (tests/unit/test_snappy.c). This is the page reader's contract, in trove's errors:
 *
 *   varint32 decoded length | literals and copies ...
 *
 * The block's own length must equal the size the caller expects (a page header's
 * uncompressed size, which the caller has already bounded by TROVE_PQ_MAX_PAGE and
 * allocated), so nothing the block says makes anything larger. No state: thread-safe.
 */
#ifndef TROVE_SNAPPY_H
#define TROVE_SNAPPY_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

/* Decode the block src[0..slen) into dst[0..dlen), where dlen is the size the caller
 * expects. In order: the block's length must read as a varint of at most 32 bits
 * (TROVE_ERR_TRUNCATED at slen if the block ends inside it, TROVE_ERR_CORRUPT at 4 if it
 * is longer), must equal dlen (TROVE_ERR_CORRUPT at 0, "a block of N bytes where M are
 * declared"), and the whole block must be valid (TROVE_ERR_CORRUPT at 0, "the block of N
 * bytes does not decode to its M", then in parentheses which element and at what byte: a
 * truncated element, a copy of offset 0 or from before the start, an element past dlen, or
 * a block that decodes short). Errors carry a message starting
 * "snappy: " in diag (may be NULL). Nothing is written to dst unless the block is valid. */
int trove__snappy_decode(const uint8_t *src, size_t slen, uint8_t *dst, size_t dlen,
                         struct trove_diag *diag);

#endif
