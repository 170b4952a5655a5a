/*
 * pack.h: pack files — many small objects in one file, so that a batch of them (the
 * recipe objects of one v3 commit) costs one file and one fsync instead of a file and two
 * fsyncs each.
 *
 *   0                                   I                     I + 32n           I + 32n + 32
 *   +-----------------------------------+---------------------+-----------------+
 *   | object bytes, back to back        | index: n entries    | footer          |
 *   +-----------------------------------+---------------------+-----------------+
 *
 *   entry (32 bytes): digest[16] (never zero), offset u64, length u64 — the object's bytes
 *                     are [offset, offset + length), inside [0, I)
 *   footer (32 bytes): magic "TRVPACK1", count n u64, index offset I u64, checksum u64 =
 *                     xxh3-64 over the index and the footer's first 24 bytes
 *
 * Little-endian. A reader takes the footer from the file's last 32 bytes, checks that
 * I + 32n + 32 is the file's size, then reads and checks the index; it never trusts an
 * offset or a count before that. Object bytes are covered by their digests (rehashed by
 * whoever needs to know), not by the pack's checksum.
 */
#ifndef TROVE_STORE_PACK_H
#define TROVE_STORE_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/backend.h"

#define TROVE__PACK_FOOTER 32
#define TROVE__PACK_ENTRY 32

struct trove__pack_entry {
    struct trove_digest d;
    uint64_t offset, len;
};

/* Append the index of entries e[0..n) and the footer to pack, which holds the object
 * bytes the entries point into. Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM. */
int trove__pack_finish(struct trove_bytes *pack, const struct trove__pack_entry *e, size_t n);

/* Check a footer against the file's size; give the entry count and the index offset.
 * Errors: TROVE_ERR_TRUNCATED, TROVE_ERR_MAGIC, TROVE_ERR_CORRUPT (sizes disagree). */
int trove__pack_footer(const uint8_t footer[TROVE__PACK_FOOTER], uint64_t file_size,
                       uint64_t *count_out, uint64_t *index_out, struct trove_diag *diag);

/* Check the index bytes (count entries, then the footer: count * 32 + 32 bytes) and decode
 * them into out[0..count). Errors: TROVE_ERR_CHECKSUM, TROVE_ERR_CORRUPT (a zero digest,
 * an object past the index or overflowing). */
int trove__pack_index(const uint8_t *tail, uint64_t count, uint64_t index_off,
                      struct trove__pack_entry *out, struct trove_diag *diag);

#endif
