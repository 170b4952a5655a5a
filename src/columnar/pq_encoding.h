/*
 * pq_encoding.h (internal to src/columnar): Parquet's value encodings, as the writer and
 * reader use them (Encodings.md in apache/parquet-format):
 *
 *   RLE / bit-packing hybrid   dictionary indices (and levels): runs of one value, or
 *                              groups of 8 values bit-packed LSB first at width w
 *   DELTA_BINARY_PACKED        integers: a header (block size 128, 4 miniblocks, count,
 *                              first value), then per block a zigzag min delta, 4 widths
 *                              and 4 miniblocks of 32 bit-packed (delta - min delta)
 *   PLAIN                      integers little-endian; byte arrays as u32 length + bytes
 *
 * and the dictionary builders behind RLE_DICTIONARY. One header for the encodings, one file
 * for each: pq_rle.c, pq_delta.c, pq_plain.c, pq_dict.c (the builders) and pq_dict_layout.c
 * (the order and pages of a dictionary chunk), over pq_bitpack.c's kernels. Decoders check
 * every bound against their buffer, never read past it, never write past n outputs, and on
 * failure leave every output untouched (they check the whole input before writing).
 * Encoders append to out and on failure leave out->len as it was. No state: all functions
 * are thread-safe.
 */
#ifndef TROVE_PQ_ENCODING_H
#define TROVE_PQ_ENCODING_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

/* Append the RLE/bit-packed hybrid encoding of v[0..n) at bit width w (0..32; every value
 * must fit) to out, with no length prefix, the last bit-packed group padded with zeros. How
 * the values are split into RLE runs and bit-packed groups of 8 depends on them:
 *   - fewer than 1 in 4 values equal the one before, or w over 5: greedily (a repeat of 8
 *     or more is a run, after its head fills the last pending group);
 *   - else at w 1 or 2: repeats of 32 / w or more are runs, the values between two of them
 *     one bit-packed run or a run per repeat, whichever is shorter;
 *   - else (w 0, or 3 to 5) the shortest split (trove__pq_rle_encode_shortest).
 * At w = 0 only RLE runs are written. n = 0 appends nothing; any n >= 1 gets at least one
 * run header. Errors: TROVE_ERR_INVALID (w > 32, a value of more than w bits),
 * TROVE_ERR_NOMEM. */
int trove__pq_rle_encode(const uint32_t *v, size_t n, unsigned w, struct trove_bytes *out);
/* The same, always the shortest split: a dynamic program (which counts a bit-packed run's
 * header as one byte) over blocks of up to 64 Ki values, each block in two halves, cut
 * where the value changes (a cut costs a header at most; only a repeat longer than a block
 * is split). About 6 ns a value against the greedy's 1 to 2 on the gen events. */
int trove__pq_rle_encode_shortest(const uint32_t *v, size_t n, unsigned w,
                                  struct trove_bytes *out);

/* The scratch of the shortest split (the dynamic program's arrays), kept from one call to
 * the next so that the pages of a chunk do not each allocate it: zero it before the first
 * call (TROVE__PQ_RLE_SCRATCH_INIT), free it with trove__pq_rle_scratch_free. One caller at
 * a time. */
struct trove__pq_rle_scratch {
    uint32_t *a, *b;
    uint8_t *flags;
    size_t cap; /* values a block may have */
};
#define TROVE__PQ_RLE_SCRATCH_INIT {NULL, NULL, NULL, 0}
/* trove__pq_rle_encode with s's scratch (grown as needed, kept for the next call). */
int trove__pq_rle_encode_with(struct trove__pq_rle_scratch *s, const uint32_t *v, size_t n,
                              unsigned w, struct trove_bytes *out);
void trove__pq_rle_scratch_free(struct trove__pq_rle_scratch *s);

/* Decode exactly n values of width w (0..32) from buf[0..len) (no length prefix) into
 * out[0..n). Bit-packed groups may run past n (padding) but not past len. Runs after the
 * one that completes n are not read. *used_out (may be NULL) gets the bytes consumed (up to
 * the end of that run). Errors: TROVE_ERR_TRUNCATED (runs end before n values),
 * TROVE_ERR_CORRUPT (a run header varint over 5 bytes or 32 bits, a run of length 0 — RLE
 * or bit-packed —, an RLE value wider than w), TROVE_ERR_INVALID (w > 32). */
int trove__pq_rle_decode(const uint8_t *buf, size_t len, unsigned w, uint32_t *out, size_t n,
                         size_t *used_out, struct trove_diag *diag);

/* Append DELTA_BINARY_PACKED of v[0..n) to out (block size 128, 4 miniblocks of 32). is32:
 * the column is INT32 (every v[i] fits in int32), so deltas wrap in 32 bits and widths stay
 * <= 32; else 64. The encoding of n = 0 is a header with count 0 and first value 0, of
 * n = 1 a header alone. Unused miniblocks of the last block get width 0 (and no bytes); the
 * last miniblock with values is padded with zeros to 32. Errors: TROVE_ERR_INVALID (is32
 * and a value outside int32), TROVE_ERR_NOMEM. */
int trove__pq_delta_encode(const int64_t *v, size_t n, int is32, struct trove_bytes *out);

/* Decode DELTA_BINARY_PACKED from buf[0..len) into out[0..n): the header's count must equal
 * n. Any block size (a multiple of 128, at most 2^20) and miniblock count (dividing it into
 * multiples of 32) is read. is32: values are INT32 (wrapping arithmetic in 32 bits, the first
 * value and min deltas taken mod 2^32, results sign-extended; widths over 32 refused); else
 * 64 (widths over 64 refused). Widths are checked for miniblocks that hold values; those
 * after the last value (in the last block) have no bytes and any width. *used_out (may be
 * NULL) gets the bytes consumed (the reader of a v2 page needs it): to the end of the last
 * miniblock holding a value, or of the header for n <= 1. Errors: TROVE_ERR_TRUNCATED,
 * TROVE_ERR_CORRUPT (block size not a positive multiple of 128, miniblocks not dividing it
 * into multiples of 32, count mismatch, a width over the limit, a varint over 10 bytes or
 * 64 bits), TROVE_ERR_LIMIT (block size over 2^20), TROVE_ERR_INVALID (NULL buffer or
 * output with len or n nonzero). */
int trove__pq_delta_decode(const uint8_t *buf, size_t len, size_t n, int is32, int64_t *out,
                           size_t *used_out, struct trove_diag *diag);

/* PLAIN byte arrays: append n values (u32 length, bytes); str[i] may be NULL if len[i] is 0.
 * Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM. */
int trove__pq_plain_encode_strings(const char *const *str, const uint32_t *len, size_t n,
                                   struct trove_bytes *out);
/* Decode n PLAIN byte arrays from buf[0..len): value k is buf[start[k] .. start[k] + vlen[k]).
 * Each length is checked against the buffer and against max_len. *used_out (may be NULL)
 * gets the bytes consumed. Errors: TROVE_ERR_TRUNCATED, TROVE_ERR_LIMIT (a length over
 * max_len, reported before a truncation of the same value). */
int trove__pq_plain_decode_strings(const uint8_t *buf, size_t len, size_t n, uint32_t max_len,
                                   uint64_t *start, uint32_t *vlen, size_t *used_out,
                                   struct trove_diag *diag);

/*
 * Dictionary builders: the distinct values of v[0..n) in order of first appearance and each
 * row's index into them. Give up with TROVE_ERR_LIMIT once there are more than max_distinct
 * values (the writer then falls back to PLAIN; max_distinct over UINT32_MAX counts as
 * UINT32_MAX, as indices are uint32). *values_out is malloc'd (free it; never NULL on
 * success, also for n = 0); idx_out is the caller's (n entries). On failure *values_out and
 * *ndistinct_out are untouched and idx_out[] holds garbage. Errors: TROVE_ERR_LIMIT,
 * TROVE_ERR_NOMEM, TROVE_ERR_INVALID (NULL arguments; for strings, NULL with a length > 0).
 */
int trove__pq_dict_build_int(const int64_t *v, size_t n, size_t max_distinct, uint32_t *idx_out,
                             int64_t **values_out, size_t *ndistinct_out);
/* The same for INT32 values (widened to int64 in *values_out). Integers whose range
 * (max - min) is small go through a direct table instead of a hash table: same results. */
int trove__pq_dict_build_i32(const int32_t *v, size_t n, size_t max_distinct, uint32_t *idx_out,
                             int64_t **values_out, size_t *ndistinct_out);
/* Strings: the distinct values are returned as indices of their first row in *first_out. */
int trove__pq_dict_build_str(const char *const *str, const uint32_t *len, size_t n,
                             size_t max_distinct, uint32_t *idx_out, size_t **first_out,
                             size_t *ndistinct_out);

/*
 * The data pages of a dictionary-encoded column chunk, each as narrow as it can be: a data
 * page states the bit width of its indices, so it need only be as wide as its largest.
 *   - The order of the dictionary: a dictionary of up to 256 entries (threads, kinds,
 *     depths: used all along) by descending count, ties by first appearance, so the common
 *     entries take the narrow indices; a larger one (names: new ones keep arriving) in order
 *     of first appearance (as built), so the early pages stay narrow.
 *   - The cuts, for 4 bits or more (at 3 or fewer a narrower page needs a stretch using at
 *     most half the entries): a dynamic program over groups of 8 rows cuts a page where a
 *     narrower width saves more than page_cost bytes (a page header and its width byte).
 * No page has more than max_rows rows (rounded down to a multiple of 8, at least 8), and
 * each is exactly as wide as its largest index (so a page of one value has width 0). On
 * success idx[0..n) is rewritten in the new order, order_out[k] (nd entries) is the old
 * index of new entry k, and *pages_out (malloc'd) holds *npages_out pages covering the rows
 * in order. On failure the outputs are untouched (idx[] may be in the new order). Errors:
 * TROVE_ERR_INVALID (NULL arguments, an index >= nd, max_rows < 8), TROVE_ERR_NOMEM.
 */
struct trove__pq_dict_page {
    size_t rows;
    unsigned width;
};
int trove__pq_dict_layout(uint32_t *idx, size_t n, size_t nd, size_t max_rows, size_t page_cost,
                          uint32_t *order_out, struct trove__pq_dict_page **pages_out,
                          size_t *npages_out);

/* Encode the data pages of a dictionary-encoded chunk as trove__pq_dict_layout laid them
 * out (idx already in its order): page p's body — its width byte, then its rows' indices in
 * the hybrid (trove__pq_rle_encode) — is appended to out as out->ptr[off[p] .. off[p + 1])
 * (off has npages + 1 entries). On failure out->len is as it was. Errors:
 * TROVE_ERR_INVALID (NULL arguments, a width over 32, an index wider than its page),
 * TROVE_ERR_NOMEM. */
int trove__pq_dict_pages_encode(const uint32_t *idx, const struct trove__pq_dict_page *pages,
                                size_t npages, struct trove_bytes *out, size_t *off);

#endif
