/*
 * io.c: the store's I/O wrappers of common/io.h and the I/O error test hook. One
 * process-wide counter numbers every wrapped call; when the hook is armed with N, the Nth
 * call from then on (and, with `sticky`, every later one) fails with the armed errno, as a
 * failing disk (EIO) or a full one (ENOSPC) would, before it touches anything.
 */
#define _GNU_SOURCE

#include "common/io.h"
#include "trove/testing.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

static _Atomic uint64_t fail_at; /* 0: off; else the call number that fails */
static _Atomic uint64_t count;   /* calls since the hook was armed */
static _Atomic int fail_errno;
static _Atomic int fail_sticky;

void trove_testing_io_fail_at(uint64_t n, int err, int sticky)
{
    atomic_store(&count, 0);
    atomic_store(&fail_errno, err ? err : EIO);
    atomic_store(&fail_sticky, sticky);
    atomic_store(&fail_at, n);
}

uint64_t trove_testing_io_count(void) { return atomic_load(&count); }

/* 1 (errno set) if this call is to fail. */
static int should_fail(void)
{
    uint64_t at = atomic_load_explicit(&fail_at, memory_order_relaxed), n;
    if (at == 0)
        return 0;
    n = atomic_fetch_add(&count, 1) + 1;
    if (n == at || (n > at && atomic_load(&fail_sticky))) {
        errno = atomic_load(&fail_errno);
        return 1;
    }
    return 0;
}

ssize_t trove__io_write(int fd, const void *p, size_t n)
{
    return should_fail() ? -1 : write(fd, p, n);
}

ssize_t trove__io_read(int fd, void *p, size_t n) { return should_fail() ? -1 : read(fd, p, n); }

ssize_t trove__io_pread(int fd, void *p, size_t n, off_t off)
{
    return should_fail() ? -1 : pread(fd, p, n, off);
}

int trove__io_fsync(int fd) { return should_fail() ? -1 : fsync(fd); }

int trove__io_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
    return should_fail() ? -1 : renameat(olddirfd, oldpath, newdirfd, newpath);
}

int trove__io_linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
                     int flags)
{
    return should_fail() ? -1 : linkat(olddirfd, oldpath, newdirfd, newpath, flags);
}
