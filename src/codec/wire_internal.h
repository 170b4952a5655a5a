/*
 * wire_internal.h (internal to src/codec): the pieces of the wire codec shared between
 * wire_frame.c (the frame header), wire.c (raw, deflate, stream reading), wire_packed.c and
 * wire_names.c.
 */
#ifndef TROVE_WIRE_INTERNAL_H
#define TROVE_WIRE_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "common/endian.h"
#include "trove/wire.h"

/* Most bytes one packed event can take: index byte + escape varint (5) + start delta (10)
 * + duration (10) + name id (5) + kind, depth, extra. */
#define TROVE_PACKED_EVENT_MAX (1 + 5 + 10 + 10 + 5 + 3)
/* The least body a samples frame has: 3 bases and 5 counts, one byte each. */
#define TROVE_WIRE_SAMPLES_MIN_BODY 8u
/* Most bytes one thread table entry can take: pid and tid varints. */
#define TROVE_PACKED_THREAD_MAX (5 + 5)
/* Thread indices below this are one byte; index byte 255 escapes to a varint when the
 * table has more than 256 entries. */
#define TROVE_PACKED_DIRECT 255

/* Write a 16-byte frame header at p (wire_frame.c): version is TROVE_WIRE_VERSION, or
 * TROVE_WIRE_NAMES_VERSION for a names frame that holds sort indexes. */
void trove__wire_put_header(uint8_t *p, int format, int version, uint32_t count,
                            uint32_t payload_len, uint32_t raw_len);

/* Thread-table scratch owned by an encoder: an open-addressing map (pid, tid) -> index,
 * cleared in O(1) per batch by a generation stamp. */
struct trove__thread_map {
    uint64_t *keys;
    uint32_t *idx;
    uint32_t *gen;
    uint32_t cap;  /* power of two */
    uint32_t cur;  /* the current batch's generation */
    uint64_t *table; /* the batch's threads in index order, pid << 32 | tid */
    uint32_t *ev_idx; /* per event: its thread index */
    uint32_t table_cap;
};

void trove__thread_map_free(struct trove__thread_map *m);

/* Fill m's table with the batch's threads in order of first appearance and m->ev_idx with
 * each event's index (wire_packed.c). Errors: TROVE_ERR_NOMEM. */
int trove__thread_table(struct trove__thread_map *m, const struct trove_event *ev, size_t n,
                        uint32_t *nthreads_out);

/* Columnar encoder scratch (wire_columnar.c): the start deltas and the threads' last
 * starts, cap entries each, and one group's seven columns of 1024 values. */
struct trove__columnar_scratch {
    uint64_t *vals;
    uint64_t *prev;
    uint64_t *cols;
    size_t cap;
};

void trove__columnar_free(struct trove__columnar_scratch *s);

/* The model payload of format 8 (wire_model.c): its codec's tables, reused frame to frame. */
#define TROVE__MODEL_VERSION 2 /* written; 1 is read too */
#define TROVE_WIRE_MODEL_LEVEL 15 /* zstd's level for each stream: within about 1 % of 19's
                                    * bytes in 0.4 of its time */
struct trove__model;
int trove__model_new(struct trove__model **out);
void trove__model_free(struct trove__model *m);
/* Append the model payload of events[0..n) to out, each stream through zstd at level.
 * Errors: TROVE_ERR_INVALID (a pad byte), TROVE_ERR_NOMEM; out unchanged on error. */
int trove__model_encode(struct trove__model *m, const struct trove_event *events, size_t n,
                        int level, struct trove_bytes *out);
/* Decode a model payload p[0..len) of exactly `count` events into out; diag offsets from
 * off. Errors: TROVE_ERR_TRUNCATED, _VERSION, _LIMIT, _CORRUPT, _NOMEM. */
int trove__model_decode(struct trove__model *m, const uint8_t *p, size_t len, uint32_t count,
                        struct trove_event *out, size_t off, struct trove_diag *diag);

/* An upper bound on a columnar payload holding n events. */
size_t trove__columnar_bound(size_t n);

/* Encode events[0..n) as a columnar payload at out (room for trove__columnar_bound(n));
 * *len_out gets its length. Errors: TROVE_ERR_INVALID (nonzero pad), TROVE_ERR_NOMEM. */
int trove__columnar_encode(struct trove__columnar_scratch *s, struct trove__thread_map *m,
                           const struct trove_event *events, size_t n, uint8_t *out,
                           size_t *len_out);

/* Decode a columnar payload p[0..len) holding exactly `count` events into out. threads is
 * scratch for count entries, scratch for 2 * TROVE_WIRE_MAX_EVENTS (the threads' last starts,
 * then one group's columns). base as packed's. */
int trove__columnar_decode(const uint8_t *p, size_t len, uint32_t count, struct trove_event *out,
                           uint64_t *threads, uint64_t *scratch, uint64_t base,
                           struct trove_diag *diag);

/* Encode events[0..n) as a packed payload at out (room for trove_wire_packed_bound(n)).
 * Returns the payload length, or 0 with *rc set on failure (TROVE_ERR_NOMEM, INVALID). */
size_t trove__packed_encode(struct trove__thread_map *m, const struct trove_event *events,
                            size_t n, uint8_t *out, int *rc);

/* Decode a packed payload p[0..len) holding exactly `count` events into out. `threads` is
 * scratch for count entries. base is the payload's offset in the caller's buffer, for diag.
 * generic != 0 keeps to the portable decoder (no BMI2 path). */
int trove__packed_decode(const uint8_t *p, size_t len, uint32_t count, struct trove_event *out,
                         uint64_t *threads, uint64_t base, int generic, struct trove_diag *diag);

/* Names payload decode (wire_names.c), for a frame of header version `version` (1: names
 * only; 2: sort indexes too). Validates all of p[0..len) before it touches names (which
 * may be NULL: validate only). */
int trove__names_decode(const uint8_t *p, size_t len, uint32_t count, unsigned version,
                        struct trove_names *names, uint64_t base, struct trove_diag *diag);

/* Tests only: nonzero makes the packed decoder skip its BMI2 path (where it has one), so
 * that a machine with BMI2 tests both paths. Users get the same with the environment
 * variable TROVE_WIRE_GENERIC, read when a decoder is created. */
extern int trove__packed_force_generic;

#endif
