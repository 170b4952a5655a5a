/*
 * trove/testing.h: hooks for trove's own tests and benchmarks, not for products. Nothing in
 * here is part of the stable API; a program that is not a test has no reason to include it.
 * Each hook says what it bypasses. Thread-safety: as each hook says.
 */
#ifndef TROVE_TESTING_H
#define TROVE_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The hooks below act on objects of higher layers (trove/store.h, trove/volume.h); this
 * header names their types only, so that it stays in the lowest layer. */
struct trove_backend;
struct trove_digest;
struct trove_volume;

/*
 * Out-of-memory injection. After trove_testing_alloc_fail_at(n, sticky) with n > 0, the nth
 * allocation the library makes from then on fails (returns NULL as malloc would), and with
 * sticky every allocation after it fails too; n == 0 turns the hook off. Counting restarts at
 * each call. trove_testing_alloc_count() is how many allocations were asked for since then,
 * trove_testing_alloc_failures() how many were refused. Atomic: usable with threads running,
 * though which thread gets the nth allocation is then up to the scheduler.
 */
void trove_testing_alloc_fail_at(uint64_t n, int sticky);
uint64_t trove_testing_alloc_count(void);
uint64_t trove_testing_alloc_failures(void);

/*
 * I/O error injection, for the store on disk (store.c, backend_fs.c: every write, read,
 * pread, fsync, renameat, linkat and unlinkat they make) and the trace writer's temporary
 * runs (trove_trace_writer_*: every write and pread of them). After trove_testing_io_fail_at(n, err,
 * sticky) with n > 0, the nth such call from then on fails with errno err (EIO, ENOSPC, ...;
 * 0 is EIO), and with sticky every later one too, as a failing disk would; with ENOSPC (a
 * full disk) reads neither fail nor count. n == 0 turns the hook off. trove_testing_io_count() is how many calls were made since it was armed.
 * Atomic, like the allocation hook.
 */
void trove_testing_io_fail_at(uint64_t n, int err, int sticky);
uint64_t trove_testing_io_count(void);

/*
 * I/O recording, for crash-state tests: with trove_testing_io_record(1) (which empties the
 * log) every write, fsync, rename, link and unlink of the store on disk that succeeds is
 * logged, in
 * the order they happened, with absolute paths (resolved through /proc/self/fd) and each
 * write's offset and bytes; trove_testing_io_record(0) stops. trove_testing_io_log gives the
 * log (valid until the next record(1) or log_free). A test replays prefixes of it onto a
 * copy of the directory as it was before, dropping or tearing writes no fsync followed, to
 * build the states a crash could leave.
 */
enum { TROVE_TESTING_IO_WRITE = 1, TROVE_TESTING_IO_FSYNC, TROVE_TESTING_IO_RENAME,
       TROVE_TESTING_IO_LINK, TROVE_TESTING_IO_UNLINK };
struct trove_testing_io_op {
    int kind;
    char path[512];  /* the file written or synced; rename and link: the source */
    char path2[512]; /* rename and link: the destination */
    uint64_t off;    /* write: where */
    uint8_t *data;   /* write: the bytes */
    size_t len;
};
void trove_testing_io_record(int on);
size_t trove_testing_io_log(const struct trove_testing_io_op **ops_out);
void trove_testing_io_log_free(void);

/*
 * A fault-injecting backend (src/store/backend_fault.c), for the streaming tests and
 * benchmarks: gets made slow and unreliable on purpose over any other backend.
 */
struct trove_fault_options {
    uint32_t latency_us;      /* added to every get before it reads */
    uint64_t bytes_per_sec;   /* a get of len bytes also waits len / bytes_per_sec (0: none) */
    /* Called at the start of every get with the digest and how many gets of it came
     * before (0 for the first); a nonzero return is that get's result (TROVE_ERR_NOTFOUND
     * for a missing object or one that appears late, -EIO for an error ...), before any
     * latency. May be NULL. Called from several threads at once. */
    int (*get_hook)(void *ctx, const struct trove_digest *d, uint64_t nth);
    void *hook_ctx;
    /* Nonzero: asynchronous gets (trove_backend_get_start) even over an inner backend
     * without them, whose gets then run on the wrapper's timer thread, one at a time; for
     * testing what runs on asynchronous backends (S3) over a local one. */
    int async;
};

struct trove_fault_stats {
    uint64_t gets;            /* get calls */
    uint64_t failed;          /* gets the hook failed */
    uint64_t bytes;           /* bytes returned by successful gets */
    uint32_t max_concurrent;  /* gets under way at once, at most */
};

/*
 * Wrap inner (borrowed: it must outlive the wrapper, and closing the wrapper does not close
 * it) in a backend whose gets are delayed and failed as opt says; every other call goes
 * straight to inner. Thread-safety as inner's. Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM.
 */
int trove_backend_fault_wrap(struct trove_backend *inner, const struct trove_fault_options *opt,
                             struct trove_backend **out);
/* Its counters so far (be must come from trove_backend_fault_wrap, else TROVE_ERR_INVALID). */
int trove_backend_fault_stats(struct trove_backend *be, struct trove_fault_stats *out);

/*
 * For benchmarks (src/store/volume.c): point slots [first, first + n) of volume v at the
 * digests d[0..n) (zero: empty) without storing or checking any object. It bypasses the
 * store's one promise, that a slot names an object it holds: a store used so names objects
 * it does not hold, and verify says so; use a throwaway store. Errors: TROVE_ERR_INVALID
 * (range), TROVE_ERR_READONLY, TROVE_ERR_NOMEM. Thread-safety: as every call on a volume
 * (trove/volume.h), one thread at a time.
 */
int trove_volume_set_slots_unchecked(struct trove_volume *v, uint64_t first,
                                     const struct trove_digest *d, size_t n);

/*
 * Where the capture writers (src/capture/capture.c, capture_live.c) cut names: into frames
 * of about frame_bytes of strings (0: 1 MiB) and into parts of at most part_bytes (0:
 * TROVE_CAPTURE_MAX_OBJECT, 16 MiB), so that a test reaches several names parts with a
 * small table. It bypasses determinism only: captures written meanwhile are valid (every
 * reader takes them) but not byte for byte what the format's sizes make; a part_bytes under
 * a frame's size makes writes fail with TROVE_ERR_LIMIT. Not thread-safe: set it while no
 * capture is being written.
 */
void trove_testing_capture_names_cut(uint32_t frame_bytes, uint32_t part_bytes);

/*
 * The block-scheme uint32 column (src/codec/column.c, docs/formats/bitpack.md: format
 * "TBPC" version 1, golden vector tests/vectors/column_mixed.bin) on the FastLanes kernels
 * of trove/bitpack.h: a column cut into blocks of 1024 values (the last may be short), each
 * the smallest of IDENTITY, CONSTANT and BITPACK(w, base) (enum trove_block_scheme) with its
 * own 8-byte descriptor, then an offset directory; one value or one block is read without
 * decoding the rest. No product code writes or reads a column (recipe v3 stores its
 * segments in its own format), so it is here for its tests and fuzz target only.
 */
#define TROVE_COLUMN_HEADER_SIZE 24
#define TROVE_COLUMN_DESC_SIZE 8
#define TROVE_COLUMN_MAX_VALUES (1ull << 29) /* so that every offset fits in 32 bits */

/*
 * Encode values[0..n) as a column appended to out. n may be 0; n <= TROVE_COLUMN_MAX_VALUES.
 * Each block takes the smallest scheme that holds it. Errors: TROVE_ERR_INVALID (n too
 * large, values NULL with n > 0), TROVE_ERR_NOMEM; out->len is unchanged on error.
 */
int trove_column_encode(const uint32_t *values, uint64_t n, struct trove_bytes *out);

/*
 * A validated view of an encoded column. It borrows the caller's buffer, which must stay
 * unchanged while the view is used.
 */
struct trove_column {
    const uint8_t *buf;
    size_t len;
    uint64_t n;          /* values */
    uint32_t blocks;     /* ceil(n / 1024) */
    uint32_t dir_offset; /* where the offset directory starts */
    uint8_t dir_kind;    /* 0: one u32 offset per block; 1: first and stride */
};

/*
 * Check a column's every header field, directory entry and block descriptor against buf's
 * length and against each other, and fill col. buf must be 4-byte aligned (a malloc'd or
 * mapped buffer is). After success, reads through col cannot go out of bounds.
 * Errors: TROVE_ERR_INVALID (unaligned buf), TROVE_ERR_TRUNCATED, TROVE_ERR_MAGIC,
 * TROVE_ERR_VERSION, TROVE_ERR_LIMIT (too many values), TROVE_ERR_CORRUPT (block count
 * disagrees with the value count, width over 32, unknown scheme, byte length wrong for the
 * scheme or past the end, directory offsets out of order or past the end, trailing bytes),
 * each with the offset and a message in diag.
 */
int trove_column_open(const uint8_t *buf, size_t len, struct trove_column *col,
                      struct trove_diag *diag);

/* Value i of the column (i < col->n). Errors: TROVE_ERR_INVALID (i out of range). */
int trove_column_get(const struct trove_column *col, uint64_t i, uint32_t *value_out);

/* Decode block b (b < col->blocks) into out[0..1024); *n_out gets its value count (1024,
 * or fewer for the last block). Errors: TROVE_ERR_INVALID. */
int trove_column_block(const struct trove_column *col, uint32_t b, uint32_t *out, size_t *n_out);

/* Decode the whole column into out[0 .. col->n). */
int trove_column_decode(const struct trove_column *col, uint32_t *out);

struct trove_block_info {
    uint8_t scheme;     /* enum trove_block_scheme */
    uint8_t width;      /* BITPACK: bits per value; else 0 */
    uint16_t byte_len;  /* the block's bytes, descriptor included */
    uint32_t base;
    uint32_t offset;    /* from the column's start */
};

/* Describe block b (b < col->blocks). Errors: TROVE_ERR_INVALID. */
int trove_column_block_info(const struct trove_column *col, uint32_t b, struct trove_block_info *out);

#ifdef __cplusplus
}
#endif

#endif
