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
 * For benchmarks (src/store/volume.c): point slots [first, first + n) of volume v at the
 * digests d[0..n) (zero: empty) without storing or checking any object. It bypasses the
 * store's one promise, that a slot names an object it holds: a store used so names objects
 * it does not hold, and verify says so; use a throwaway store. Errors: TROVE_ERR_INVALID
 * (range), TROVE_ERR_READONLY, TROVE_ERR_NOMEM. Thread-safety: as every call on a volume
 * (trove/volume.h), one thread at a time.
 */
int trove_testing_volume_set_slots(struct trove_volume *v, uint64_t first,
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
 * A summary object around payload[0..len) as it would be inflated (docs/formats/summary.md):
 * the fixed part, the payload deflated, the checksum — appended to out. For the fuzz target,
 * so that mutated payloads reach the parser instead of the deflate stream and the checksum.
 * TROVE_OK or TROVE_ERR_NOMEM.
 */
int trove_testing_summary_wrap(const uint8_t *payload, size_t len, struct trove_bytes *out);

#ifdef __cplusplus
}
#endif

#endif
