/*
 * perf_records.h (internal): reading perf_event ring buffers and decoding their records —
 * the bytes the kernel writes, which trove checks as it checks any input (perf_records.c
 * has the layouts). Pure functions over memory: the sampler (sampler.c) feeds them the
 * mmap'd rings, tests/test_sample.c and fuzz/fuzz_perf_records.c feed them hand-made ones.
 */
#ifndef TROVE_SAMPLE_PERF_RECORDS_H
#define TROVE_SAMPLE_PERF_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include <linux/perf_event.h>

#include "trove/common.h"

/* The sample_type trove's events have, and the sample_id trailer (sample_id_all) it gives
 * every other record: pid u32, tid u32, time u64. */
#define TROVE__PERF_SAMPLE_TYPE (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN)
#define TROVE__PERF_ID_SIZE 16u
/* A record's size is a u16: the scratch a wrapped record is copied into. */
#define TROVE__PERF_RECORD_MAX 65535u

/*
 * A ring's data area as the reader sees it: data[0..size) (size a power of two), and the
 * kernel's head and the reader's tail as free-running byte counts (tail <= head, at most
 * size apart). trove__perf_ring_next reads the record at tail and moves tail past it:
 *   1  a record: *rec_out points at its first byte in data, or, when it wraps round the
 *      end, at a contiguous copy in scratch (TROVE__PERF_RECORD_MAX bytes); *len_out is its
 *      size (at least 8, the header);
 *   0  no record (tail == head);
 *   TROVE_ERR_CORRUPT  the ring is not readable: head - tail over size or not a whole
 *      record, a size under 8 or past head. tail is then moved to head (everything in the
 *      ring is dropped: the reader cannot find the next record's start), and diag says why.
 */
struct trove__perf_ring {
    const uint8_t *data;
    uint64_t size;
    uint64_t head, tail;
};
int trove__perf_ring_next(struct trove__perf_ring *r, uint8_t *scratch, const uint8_t **rec_out,
                          size_t *len_out, struct trove_diag *diag);

/*
 * One decoded record. type and misc are the header's; pid, tid and time_ns are the
 * sample's own fields (PERF_RECORD_SAMPLE) or the sample_id trailer (every other type;
 * FORK, EXIT and COMM have pid and tid of their own, which are these). Pointers point into
 * the record's bytes and live as long as they do.
 */
struct trove__perf_rec {
    uint32_t type;
    uint16_t misc;
    uint32_t pid, tid;
    uint64_t time_ns;
    /* PERF_RECORD_SAMPLE: nr entries of the callchain, u64 each, host order, unaligned
     * (read them with trove__perf_ip) */
    uint64_t nr;
    const uint8_t *ips;
    /* PERF_RECORD_MMAP and MMAP2 (MMAP2: maj, min, ino or, with misc
     * PERF_RECORD_MISC_MMAP_BUILD_ID, build_id[0..build_id_len); prot, flags) */
    uint64_t addr, len, pgoff;
    uint32_t maj, min;
    uint64_t ino;
    uint32_t prot, flags;
    uint8_t build_id[20];
    uint8_t build_id_len;
    const char *filename; /* NUL-terminated within the record */
    /* PERF_RECORD_COMM */
    const char *comm;     /* NUL-terminated within the record */
    /* PERF_RECORD_FORK and EXIT: the parent (pid, tid: the child, or the one exiting) */
    uint32_t ppid, ptid;
    /* PERF_RECORD_LOST (records lost) and LOST_SAMPLES (samples lost) */
    uint64_t lost;
};

/*
 * Decode the record rec[0..len) (as trove__perf_ring_next gives it) into *out. Types other
 * than SAMPLE, MMAP, MMAP2, COMM, FORK, EXIT, LOST, LOST_SAMPLES, SWITCH, THROTTLE and
 * UNTHROTTLE are decoded as far as the header and trailer (the caller skips them). Every
 * length is checked against len: a sample whose callchain does not fill the record
 * exactly, a file name or comm without its NUL, an MMAP2 build id over 20 bytes, a record
 * too short for its fields: TROVE_ERR_CORRUPT (diag: the type and what is wrong), *out
 * then undefined.
 */
int trove__perf_decode(const uint8_t *rec, size_t len, struct trove__perf_rec *out,
                       struct trove_diag *diag);

/* Callchain entry i (< r->nr) of a decoded sample. */
uint64_t trove__perf_ip(const struct trove__perf_rec *r, uint64_t i);

#endif
