/*
 * capture_internal.h (internal): what the capture modules share — the header's fixed sizes
 * (capture_header.c), the volume's slot layout, and how names are cut into frames
 * (capture.c). docs/formats/capture.md is the specification.
 */
#ifndef TROVE_CAPTURE_INTERNAL_H
#define TROVE_CAPTURE_INTERNAL_H

#include <stdint.h>

#include "trove/capture.h"

#define TROVE__CAPTURE_MAGIC "TROVCAP1"
#define TROVE__CAPTURE_VERSION 1u
#define TROVE__CAPTURE_FIXED 88u /* the header before the segment entries */
#define TROVE__CAPTURE_ENTRY 40u /* one segment entry */
#define TROVE__CAPTURE_TRAILER 8u

/* The volume's slots. */
#define TROVE__CAPTURE_SLOT_HEADER 0u
#define TROVE__CAPTURE_SLOT_NAMES 1u
#define TROVE__CAPTURE_SLOT_SEGMENT0 2u

/* A names frame holds at most this many entries, and entries are added to it while its
 * payload stays within NAMES_FRAME_BYTES (a single longer entry gets a frame of its own). */
#define TROVE__CAPTURE_NAMES_FRAME_ENTRIES 65536u
#define TROVE__CAPTURE_NAMES_FRAME_BYTES ((uint64_t)1 << 20)

/* ceil(a / b) for b > 0, without overflow. */
static inline uint64_t trove__capture_div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

#endif
