/*
 * fs_quarantine.c: the filesystem backend's quarantine (backend_internal.h's quarantine
 * ops), the records that an object's stored bytes were found not to hash to its name.
 *
 *   dir/quarantine/<32 hex>       the record: one line of text saying how it was found
 *   dir/quarantine/<pid>-...tmp   a record being written; a dead writer's is removed by
 *                                 the next writable open (backend_fs.c)
 *
 * dir/quarantine is made on the first damage found, even by a read-only handle (a reader
 * records what it found), by whichever thread finds it first, under the backend's mu. A
 * record is written to a fresh temp name, fsync'd, then renamed over its name, so that a
 * reader sees no record or a whole one and two threads recording one digest at once both
 * succeed; release unlinks it. quarantined and release of a handle that has no
 * dir/quarantine yet answer at once, without a system call.
 */
#define _GNU_SOURCE

#include "backend_internal.h"
#include "common/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir/quarantine, made if need be (under mu: one of several threads makes it). */
static int quarantine_dir(struct fs_backend *be)
{
    int fd = atomic_load(&be->quarantine_fd);

    if (fd >= 0)
        return fd;
    pthread_mutex_lock(&be->mu);
    fd = atomic_load(&be->quarantine_fd);
    if (fd < 0) {
        if (mkdirat(be->root_fd, "quarantine", FS_DIR_MODE) == 0 && !be->nosync)
            trove__fs_fsync_dir_fd(be->root_fd);
        fd = openat(be->root_fd, "quarantine", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
            atomic_store(&be->quarantine_fd, fd);
    }
    pthread_mutex_unlock(&be->mu);
    return fd >= 0 ? fd : -errno;
}

int trove__fs_quarantine(struct trove_backend *base, const struct trove_digest *d, const char *why)
{
    struct fs_backend *be = (struct fs_backend *)base;
    char hex[33], tmp[80];
    int qfd = quarantine_dir(be), fd, rc = TROVE_OK;
    size_t n = strlen(why);

    if (qfd < 0)
        return qfd;
    trove_digest_hex(d, hex);
    /* A name no other thread or process uses (two threads may record one digest at once),
     * starting with the writer's pid so that an open can tell a dead writer's leftover. */
    if ((fd = trove__fs_temp_open(qfd, tmp)) < 0)
        return fd;
    if ((rc = trove__fs_write_all(fd, (const uint8_t *)why, n)) == TROVE_OK)
        rc = trove__fs_write_all(fd, (const uint8_t *)"\n", 1);
    if (rc == TROVE_OK && !be->nosync && trove__io_fsync(fd) != 0)
        rc = -errno;
    close(fd);
    if (rc == TROVE_OK && trove__io_renameat(qfd, tmp, qfd, hex) != 0)
        rc = -errno;
    if (rc != TROVE_OK)
        trove__io_unlinkat(qfd, tmp, 0);
    else if (!be->nosync)
        trove__fs_fsync_dir_fd(qfd);
    return rc;
}

int trove__fs_quarantined(struct trove_backend *base, const struct trove_digest *d)
{
    struct fs_backend *be = (struct fs_backend *)base;
    int qfd = atomic_load(&be->quarantine_fd);
    struct stat st;
    char hex[33];

    if (qfd < 0)
        return 0;
    trove_digest_hex(d, hex);
    return fstatat(qfd, hex, &st, 0) == 0;
}

int trove__fs_release(struct trove_backend *base, const struct trove_digest *d)
{
    struct fs_backend *be = (struct fs_backend *)base;
    int qfd = atomic_load(&be->quarantine_fd);
    char hex[33];

    if (qfd < 0)
        return TROVE_OK;
    trove_digest_hex(d, hex);
    if (trove__io_unlinkat(qfd, hex, 0) != 0)
        return errno == ENOENT ? TROVE_OK : -errno;
    return be->nosync ? TROVE_OK : trove__fs_fsync_dir_fd(qfd);
}

int trove__fs_quarantine_list(struct trove_backend *base,
                               int (*fn)(void *ctx, const struct trove_digest *d), void *ctx)
{
    struct fs_backend *be = (struct fs_backend *)base;
    int qfd = atomic_load(&be->quarantine_fd), dfd, rc = TROVE_OK;
    struct dirent *de;
    DIR *dp;

    if (qfd < 0)
        return TROVE_OK;
    if ((dfd = dup(qfd)) < 0)
        return -errno;
    if (!(dp = fdopendir(dfd))) {
        close(dfd);
        return -errno;
    }
    rewinddir(dp);
    while ((de = readdir(dp)) != NULL) {
        struct trove_digest d;
        if (strlen(de->d_name) != 32 || trove_digest_parse(de->d_name, &d) != TROVE_OK ||
            trove_digest_is_zero(&d))
            continue; /* temp files, strangers */
        if ((rc = fn(ctx, &d)) != 0)
            break;
    }
    closedir(dp);
    return rc;
}
