/*
 * io.h (internal): the store's file system calls that write, read or make durable — write,
 * read, pread, fsync, syncfs, renameat, linkat, unlinkat — and the trace writer's writes and reads of
 * its temporary runs (src/codec/trace_spill.c) go through these wrappers, so that a test can
 * make the Nth of them fail with EIO or ENOSPC (trove_testing_io_fail_at, trove/testing.h)
 * and check that every operation then fails with an error that says so and changes nothing.
 * Each behaves as the call it wraps; when the hook is off the cost is one relaxed load.
 */
#ifndef TROVE_COMMON_IO_H
#define TROVE_COMMON_IO_H

#include <stddef.h>
#include <sys/types.h>

ssize_t trove__io_write(int fd, const void *p, size_t n);
ssize_t trove__io_read(int fd, void *p, size_t n);
ssize_t trove__io_pread(int fd, void *p, size_t n, off_t off);
int trove__io_fsync(int fd);
/* syncfs(fd): everything written on fd's file system is durable. A recording logs it as an
 * fsync of each file written and each directory changed in the log so far, which is what it
 * makes durable, so a crash-state test reads it as it reads fsyncs. */
int trove__io_syncfs(int fd);
int trove__io_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
int trove__io_linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
                     int flags);
int trove__io_unlinkat(int dirfd, const char *path, int flags);

#endif
