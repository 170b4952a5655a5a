/*
 * perf_records.c: the perf_event ring buffer and the records in it, as trove's sampler opens
 * its events (sampler.c): sample_type TID | TIME | CALLCHAIN, sample_id_all with the same
 * TID | TIME, so every record carries who and when.
 *
 * The ring (one per CPU, mmap'd: a metadata page, then a data area of 2^n bytes):
 *
 *     data[0 .. size)   records back to back, each starting with its header; a record
 *                       may run off the end and go on at data[0]
 *     head  (kernel)    bytes written so far, free-running; read with acquire
 *     tail  (reader)    bytes consumed so far; the reader stores it back with release
 *
 * A record (all integers host order, every record a multiple of 8 bytes):
 *
 *     0      4      6      8
 *     +------+------+------+------------------------------------------+---------------+
 *     | type | misc | size | the type's fields                        | sample_id:    |
 *     | u32  | u16  | u16  |                                          | pid tid time  |
 *     +------+------+------+------------------------------------------+---------------+
 *
 *     SAMPLE (9)        pid u32, tid u32, time u64, nr u64, ips u64[nr]   (no sample_id)
 *     MMAP (1)          pid u32, tid u32, addr u64, len u64, pgoff u64, filename[] NUL-padded
 *     MMAP2 (10)        pid, tid, addr, len, pgoff, then 24 bytes: maj u32, min u32, ino
 *                       u64, ino_generation u64 — or, with misc MMAP_BUILD_ID, build_id_size
 *                       u8, 3 reserved bytes, build_id u8[20] — then prot u32, flags u32,
 *                       filename[] NUL-padded
 *     COMM (3)          pid u32, tid u32, comm[] NUL-padded       (misc COMM_EXEC: an exec)
 *     FORK (7), EXIT (4) pid u32, ppid u32, tid u32, ptid u32, time u64
 *     LOST (2)          id u64, lost u64                          (records dropped)
 *     LOST_SAMPLES (13) lost u64                                  (samples dropped)
 *     SWITCH (14)       nothing                    (misc SWITCH_OUT, SWITCH_OUT_PREEMPT)
 *     THROTTLE (5), UNTHROTTLE (6)  time u64, id u64, stream_id u64
 *
 * Trust: the kernel writes these bytes, and a reader that is behind, or a kernel with
 * another layout, must not make trove read outside the ring or the record. So the ring
 * reader bounds head - tail by the ring's size and each record's size by what is there
 * (a record reaching past head is corruption, not a partial record: the kernel publishes
 * head only past whole records), and copies a wrapped record into a scratch buffer of the
 * largest record size; the decoder checks every field's end against the record's size,
 * requires a callchain to fill a sample exactly, and requires the strings' NUL within the
 * record. A bad ring is dropped whole (its next record's start is unknown); a bad record is
 * skipped by the caller.
 */
#include "perf_records.h"
#include "common/fail.h"

#include <inttypes.h>
#include <string.h>

static uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint16_t get16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* Copy n bytes of the ring at byte count `at` to dst, across the end. */
static void ring_copy(const struct trove__perf_ring *r, uint64_t at, uint8_t *dst, size_t n)
{
    size_t off = (size_t)(at & (r->size - 1)), first = (size_t)r->size - off;
    if (first > n)
        first = n;
    memcpy(dst, r->data + off, first);
    memcpy(dst + first, r->data, n - first);
}

int trove__perf_ring_next(struct trove__perf_ring *r, uint8_t *scratch, const uint8_t **rec_out,
                          size_t *len_out, struct trove_diag *diag)
{
    uint8_t hdr[8];
    uint64_t avail, off;
    size_t size;

    if (r->tail == r->head)
        return 0;
    avail = r->head - r->tail;
    if (r->size < 8 || (r->size & (r->size - 1)) || r->head < r->tail || avail > r->size ||
        avail < 8) {
        uint64_t tail = r->tail;
        r->tail = r->head;
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, tail,
                          "perf ring: head %" PRIu64 " and tail %" PRIu64 " of a %" PRIu64
                          "-byte ring",
                          r->head, tail, r->size);
    }
    ring_copy(r, r->tail, hdr, 8);
    size = get16(hdr + 6);
    if (size < 8 || size > avail) {
        uint64_t tail = r->tail;
        r->tail = r->head;
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, tail,
                          "perf ring: a record of %zu bytes at %" PRIu64 " with %" PRIu64
                          " bytes written",
                          size, tail, avail);
    }
    off = r->tail & (r->size - 1);
    if (off + size <= r->size) {
        *rec_out = r->data + off;
    } else {
        ring_copy(r, r->tail, scratch, size);
        *rec_out = scratch;
    }
    *len_out = size;
    r->tail += size;
    return 1;
}

/* The NUL-terminated string at rec[at..end): its start, or NULL if no NUL comes before end. */
static const char *cstr(const uint8_t *rec, size_t at, size_t end)
{
    if (at > end || !memchr(rec + at, 0, end - at))
        return NULL;
    return (const char *)rec + at;
}

#define NEED(n)                                                                               \
    do {                                                                                      \
        if (len < (size_t)(n))                                                                \
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,                                     \
                              "perf record type %" PRIu32 ": %zu bytes, under the %zu its "   \
                              "fields take",                                                  \
                              out->type, len, (size_t)(n));                                   \
    } while (0)

int trove__perf_decode(const uint8_t *rec, size_t len, struct trove__perf_rec *out,
                       struct trove_diag *diag)
{
    size_t end; /* where the type's fields end: the trailer's start */

    if (len < 8 || get16(rec + 6) != len)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "perf record of %zu bytes whose header says %u", len,
                          len >= 8 ? (unsigned)get16(rec + 6) : 0u);
    memset(out, 0, sizeof *out);
    out->type = get32(rec);
    out->misc = get16(rec + 4);
    if (out->type == PERF_RECORD_SAMPLE) {
        NEED(32);
        out->pid = get32(rec + 8);
        out->tid = get32(rec + 12);
        out->time_ns = get64(rec + 16);
        out->nr = get64(rec + 24);
        if (out->nr > (len - 32) / 8 || 32 + out->nr * 8 != len)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 24,
                              "perf sample of %zu bytes with a callchain of %" PRIu64
                              " entries",
                              len, out->nr);
        out->ips = rec + 32;
        return TROVE_OK;
    }
    NEED(8 + TROVE__PERF_ID_SIZE);
    end = len - TROVE__PERF_ID_SIZE;
    out->pid = get32(rec + end);
    out->tid = get32(rec + end + 4);
    out->time_ns = get64(rec + end + 8);
    switch (out->type) {
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2: {
        size_t name_at = out->type == PERF_RECORD_MMAP ? 40 : 72;
        NEED(name_at + 1 + TROVE__PERF_ID_SIZE);
        out->pid = get32(rec + 8);
        out->tid = get32(rec + 12);
        out->addr = get64(rec + 16);
        out->len = get64(rec + 24);
        out->pgoff = get64(rec + 32);
        if (out->type == PERF_RECORD_MMAP2) {
            if (out->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
                out->build_id_len = rec[40];
                if (out->build_id_len > sizeof out->build_id)
                    return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 40,
                                      "perf mmap2 record with a build id of %u bytes",
                                      (unsigned)out->build_id_len);
                memcpy(out->build_id, rec + 44, out->build_id_len);
            } else {
                out->maj = get32(rec + 40);
                out->min = get32(rec + 44);
                out->ino = get64(rec + 48);
            }
            out->prot = get32(rec + 64);
            out->flags = get32(rec + 68);
        }
        if (out->len == 0 || out->addr + out->len < out->addr)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 16,
                              "perf mmap record of %" PRIu64 " bytes at 0x%" PRIx64, out->len,
                              out->addr);
        if (!(out->filename = cstr(rec, name_at, end)))
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, name_at,
                              "perf mmap record whose file name has no end");
        return TROVE_OK;
    }
    case PERF_RECORD_COMM:
        NEED(16 + 1 + TROVE__PERF_ID_SIZE);
        out->pid = get32(rec + 8);
        out->tid = get32(rec + 12);
        if (!(out->comm = cstr(rec, 16, end)))
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 16, "perf comm record without its end");
        return TROVE_OK;
    case PERF_RECORD_FORK:
    case PERF_RECORD_EXIT:
        NEED(32 + TROVE__PERF_ID_SIZE);
        out->pid = get32(rec + 8);
        out->ppid = get32(rec + 12);
        out->tid = get32(rec + 16);
        out->ptid = get32(rec + 20);
        out->time_ns = get64(rec + 24);
        return TROVE_OK;
    case PERF_RECORD_LOST:
        NEED(24 + TROVE__PERF_ID_SIZE);
        out->lost = get64(rec + 16);
        return TROVE_OK;
    case PERF_RECORD_LOST_SAMPLES:
        NEED(16 + TROVE__PERF_ID_SIZE);
        out->lost = get64(rec + 8);
        return TROVE_OK;
    case PERF_RECORD_THROTTLE:
    case PERF_RECORD_UNTHROTTLE:
        NEED(32 + TROVE__PERF_ID_SIZE);
        return TROVE_OK;
    default: /* SWITCH and the types trove does not ask for: header and trailer only */
        return TROVE_OK;
    }
}

uint64_t trove__perf_ip(const struct trove__perf_rec *r, uint64_t i)
{
    return get64(r->ips + i * 8);
}
