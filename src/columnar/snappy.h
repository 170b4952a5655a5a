/*
 * snappy.h (internal to src/columnar): decoding the Snappy block format, Parquet's SNAPPY
 * codec and DuckDB's default, so that a Parquet file DuckDB writes with its defaults reads
 * back (docs/formats/bundle.md). trove never writes Snappy.
 *
 * A block is the decoded length as a varint (at most 32 bits), then elements, each starting
 * with a tag byte whose low two bits give its kind:
 *
 *   0  literal   length - 1 in the tag's high six bits when under 60; 60..63 say that
 *                length - 1 follows in 1..4 little-endian bytes; then the literal bytes
 *   1  copy      length 4..11 (tag bits 2..4, + 4), offset 0..2047 (tag bits 5..7 above
 *                one more byte)
 *   2  copy      length 1..64 (tag >> 2, + 1), offset in 2 little-endian bytes
 *   3  copy      length 1..64, offset in 4 little-endian bytes
 *
 * A copy repeats length bytes from offset bytes back in the output, and may overlap what
 * it writes (offset < length repeats a pattern). No state: thread-safe.
 */
#ifndef TROVE_SNAPPY_H
#define TROVE_SNAPPY_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

/* Decode the block src[0..slen) into dst[0..dlen), where dlen is the size the caller
 * expects (a page header's uncompressed size): the block's own length must equal it, every
 * element must lie inside src, every copy must start inside what is already decoded
 * (offset 1 .. bytes so far), nothing may be written past dlen, and the block must end
 * exactly at dlen bytes. Errors, with the offset in src and a message in diag (may be
 * NULL): TROVE_ERR_TRUNCATED (the block ends inside its length or an element),
 * TROVE_ERR_CORRUPT (anything else above). On error dst[0..dlen) may hold partial output. */
int trove__snappy_decode(const uint8_t *src, size_t slen, uint8_t *dst, size_t dlen,
                         struct trove_diag *diag);

#endif
