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
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* 1 (errno set) if this call is to fail. A full disk (ENOSPC) fails what writes, not what
 * reads: reads are not counted then. */
static int should_fail_as(int reads)
{
    uint64_t at = atomic_load_explicit(&fail_at, memory_order_relaxed), n;
    if (at == 0 || (reads && atomic_load(&fail_errno) == ENOSPC))
        return 0;
    n = atomic_fetch_add(&count, 1) + 1;
    if (n == at || (n > at && atomic_load(&fail_sticky))) {
        errno = atomic_load(&fail_errno);
        return 1;
    }
    return 0;
}

static int should_fail(void) { return should_fail_as(0); }

/* ---- the record of what was made durable or written, for crash-state tests ---- */

static _Atomic int recording;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct trove_testing_io_op *log_ops;
static size_t log_n, log_cap;

void trove_testing_io_record(int on)
{
    pthread_mutex_lock(&log_mu);
    for (size_t i = 0; on && i < log_n; i++)
        free(log_ops[i].data);
    if (on)
        log_n = 0;
    atomic_store(&recording, on);
    pthread_mutex_unlock(&log_mu);
}

size_t trove_testing_io_log(const struct trove_testing_io_op **ops_out)
{
    *ops_out = log_ops;
    return log_n;
}

void trove_testing_io_log_free(void)
{
    pthread_mutex_lock(&log_mu);
    for (size_t i = 0; i < log_n; i++)
        free(log_ops[i].data);
    free(log_ops);
    log_ops = NULL;
    log_n = log_cap = 0;
    pthread_mutex_unlock(&log_mu);
}

/* The path of fd, or of name under dirfd (AT_FDCWD: name as given), into out. */
static int path_of(int dirfd, const char *name, char *out, size_t cap)
{
    char link[64], dir[PATH_MAX];
    ssize_t n;

    if (name && (name[0] == '/' || dirfd == AT_FDCWD))
        return snprintf(out, cap, "%s", name) < (int)cap ? 0 : -1;
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    if ((n = readlink(link, dir, sizeof dir - 1)) < 0)
        return -1;
    dir[n] = '\0';
    if (!name)
        return snprintf(out, cap, "%s", dir) < (int)cap ? 0 : -1;
    return snprintf(out, cap, "%s/%s", dir, name) < (int)cap ? 0 : -1;
}

static void record(int kind, int fd1, const char *name1, int fd2, const char *name2,
                   uint64_t off, const void *data, size_t len)
{
    struct trove_testing_io_op op;

    memset(&op, 0, sizeof op);
    op.kind = kind;
    op.off = off;
    if (path_of(fd1, name1, op.path, sizeof op.path) != 0 ||
        (name2 && path_of(fd2, name2, op.path2, sizeof op.path2) != 0))
        return;
    if (len && !(op.data = malloc(len)))
        return;
    if (len)
        memcpy(op.data, data, len);
    op.len = len;
    pthread_mutex_lock(&log_mu);
    if (log_n == log_cap) {
        size_t cap = log_cap ? 2 * log_cap : 256;
        struct trove_testing_io_op *p = realloc(log_ops, cap * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&log_mu);
            free(op.data);
            return;
        }
        log_ops = p;
        log_cap = cap;
    }
    log_ops[log_n++] = op;
    pthread_mutex_unlock(&log_mu);
}

ssize_t trove__io_write(int fd, const void *p, size_t n)
{
    ssize_t w;
    off_t off = 0;

    if (should_fail())
        return -1;
    if (atomic_load_explicit(&recording, memory_order_relaxed)) {
        struct stat st;
        int fl = fcntl(fd, F_GETFL);
        off = (fl >= 0 && (fl & O_APPEND)) ? (fstat(fd, &st) == 0 ? st.st_size : 0)
                                           : lseek(fd, 0, SEEK_CUR);
    }
    w = write(fd, p, n);
    if (w > 0 && atomic_load_explicit(&recording, memory_order_relaxed))
        record(TROVE_TESTING_IO_WRITE, fd, NULL, -1, NULL, (uint64_t)off, p, (size_t)w);
    return w;
}

ssize_t trove__io_read(int fd, void *p, size_t n)
{
    return should_fail_as(1) ? -1 : read(fd, p, n);
}

ssize_t trove__io_pread(int fd, void *p, size_t n, off_t off)
{
    return should_fail_as(1) ? -1 : pread(fd, p, n, off);
}

int trove__io_fsync(int fd)
{
    int rc;
    if (should_fail())
        return -1;
    rc = fsync(fd);
    if (rc == 0 && atomic_load_explicit(&recording, memory_order_relaxed))
        record(TROVE_TESTING_IO_FSYNC, fd, NULL, -1, NULL, 0, NULL, 0);
    return rc;
}

/* Append an fsync of path to the log (under log_mu) unless one of the same path is among
 * those this syncfs has added already (from `first` on). */
static void log_fsync_locked(const char *path, size_t first)
{
    struct trove_testing_io_op op;

    for (size_t j = first; j < log_n; j++)
        if (!strcmp(log_ops[j].path, path))
            return;
    if (log_n == log_cap) {
        size_t cap = log_cap ? 2 * log_cap : 256;
        struct trove_testing_io_op *p = realloc(log_ops, cap * sizeof *p);
        if (!p)
            return;
        log_ops = p;
        log_cap = cap;
    }
    memset(&op, 0, sizeof op);
    op.kind = TROVE_TESTING_IO_FSYNC;
    snprintf(op.path, sizeof op.path, "%s", path);
    log_ops[log_n++] = op;
}

/* The directory of path into out (path up to its last '/'). */
static void dir_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    snprintf(out, cap, "%.*s", (int)n, n ? path : ".");
}

/* syncfs as fsyncs: of every file written and every directory changed in the log so far. */
static void record_syncfs(void)
{
    char dir[512];
    size_t n, first;

    pthread_mutex_lock(&log_mu);
    n = first = log_n;
    for (size_t i = 0; i < n; i++) {
        const struct trove_testing_io_op *o = &log_ops[i];
        if (o->kind == TROVE_TESTING_IO_FSYNC)
            continue;
        char path[512]; /* a copy: the log may move as it grows */
        snprintf(path, sizeof path, "%s", o->path);
        if (o->kind == TROVE_TESTING_IO_WRITE)
            log_fsync_locked(path, first);
        dir_of(path, dir, sizeof dir); /* a new file's name, a link's source... */
        log_fsync_locked(dir, first);
        if (log_ops[i].path2[0]) {
            snprintf(path, sizeof path, "%s", log_ops[i].path2);
            dir_of(path, dir, sizeof dir);
            log_fsync_locked(dir, first);
        }
    }
    pthread_mutex_unlock(&log_mu);
}

int trove__io_syncfs(int fd)
{
    int rc;
    if (should_fail())
        return -1;
    rc = syncfs(fd);
    if (rc == 0 && atomic_load_explicit(&recording, memory_order_relaxed))
        record_syncfs();
    return rc;
}

int trove__io_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
    char from[PATH_MAX];
    int rc, rec = atomic_load_explicit(&recording, memory_order_relaxed);

    if (should_fail())
        return -1;
    /* The source's path before it moves. */
    if (rec && path_of(olddirfd, oldpath, from, sizeof from) != 0)
        rec = 0;
    rc = renameat(olddirfd, oldpath, newdirfd, newpath);
    if (rc == 0 && rec)
        record(TROVE_TESTING_IO_RENAME, AT_FDCWD, from, newdirfd, newpath, 0, NULL, 0);
    return rc;
}

int trove__io_linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
                     int flags)
{
    int rc;
    if (should_fail())
        return -1;
    rc = linkat(olddirfd, oldpath, newdirfd, newpath, flags);
    if (rc == 0 && atomic_load_explicit(&recording, memory_order_relaxed))
        record(TROVE_TESTING_IO_LINK, olddirfd, oldpath, newdirfd, newpath, 0, NULL, 0);
    return rc;
}

int trove__io_unlinkat(int dirfd, const char *path, int flags)
{
    char at[PATH_MAX];
    int rc, rec = atomic_load_explicit(&recording, memory_order_relaxed);

    if (should_fail())
        return -1;
    if (rec && path_of(dirfd, path, at, sizeof at) != 0)
        rec = 0;
    rc = unlinkat(dirfd, path, flags);
    if (rc == 0 && rec)
        record(TROVE_TESTING_IO_UNLINK, AT_FDCWD, at, -1, NULL, 0, NULL, 0);
    return rc;
}
