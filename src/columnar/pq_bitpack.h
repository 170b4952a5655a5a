/*
 * pq_bitpack.h (internal to src/columnar): Parquet's bit-packing, the kernels under the RLE /
 * bit-packing hybrid (pq_rle.c) and DELTA_BINARY_PACKED (pq_delta.c). Values are packed LSB
 * first: value i occupies bits [i * w, i * w + w) of the bytes read as one little-endian
 * number (pq_bitpack.c draws it). This is not the FastLanes layout of trove/bitpack.h.
 *
 * The tables hold one kernel per width, indexed by the width: 32 or 8 values at widths 0..32
 * (a kernel reads up to 7 bytes past its unit; see trove__pq_unpack32 for the safe form).
 * No state: every function is thread-safe.
 */
#ifndef TROVE_PQ_BITPACK_H
#define TROVE_PQ_BITPACK_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define TROVE__ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TROVE__ALWAYS_INLINE inline
#endif

typedef void (*trove__pq_unpack_fn)(const uint8_t *in, uint32_t *out);
typedef void (*trove__pq_pack_fn)(const uint32_t *v, uint8_t *out);

/* Unpack 32 (or 8) values of width w from in[0 .. 4w) (or [0 .. w)), reading up to 7 bytes
 * past them; pack 32 values (each below 2^w) into out[0 .. 4w). */
extern const trove__pq_unpack_fn trove__pq_unpack32_tab[33];
extern const trove__pq_unpack_fn trove__pq_unpack8_tab[33];
extern const trove__pq_pack_fn trove__pq_pack32_tab[33];

/* Unpack 32 values of width w (0..32) from the nbytes (<= 4w) at in, of which avail bytes
 * (>= nbytes) may be read; bytes past nbytes count as zero bits. */
void trove__pq_unpack32(const uint8_t *in, size_t nbytes, size_t avail, uint32_t *out,
                        unsigned w);
/* The same for widths 0..64 into 64-bit values. */
void trove__pq_unpack32_64(const uint8_t *in, size_t nbytes, size_t avail, uint64_t *out,
                           unsigned w);

/* Pack m values (m a multiple of 8; each below 2^w) at width w (0..32) into m * w / 8
 * bytes at p; return the byte after them. */
uint8_t *trove__pq_pack_u32(const uint32_t *v, size_t m, unsigned w, uint8_t *p);
/* Pack 32 values (each below 2^w) at width w (0..64) into 4w bytes at p. */
uint8_t *trove__pq_pack32_u64(const uint64_t *v, unsigned w, uint8_t *p);

/* The bits v needs: 0 for 0, else 64 - clz(v). */
static inline unsigned trove__pq_width64(uint64_t v)
{
    return v ? 64 - (unsigned)__builtin_clzll(v) : 0;
}

#endif
