/*
 * backend_fs_defer.c: the fs backend's deferred puts (backend_internal.h), what a store's
 * puts between two drains use: a batch of objects costs two syncs of the file system, not
 * two fsyncs an object.
 *
 * A deferred put writes the bytes to a fresh temp file in dir/tmp (or has the kernel copy
 * them from the file they were read from: copy_file_range, for a whole-file put; only if
 * that file did not change meanwhile, else from memory), asks the kernel to start writing
 * them back (sync_file_range, no wait), and notes the name the object will get. It is not
 * visible yet: nothing links it. The flush then
 *
 *   1. syncfs: every temp file's bytes are durable (and the fan-out directories made for them);
 *   2. links each temp file to its name under dir/objects (link() never replaces a name: an
 *      object some other put linked meanwhile stays as it is), and unlinks the temp;
 *   3. syncfs again: the names are durable.
 *
 * So a name still appears only after its bytes are durable, as for a put, and a crash at any
 * point leaves each object absent or whole, plus orphan temps that the next open removes.
 * The syncs are the file system's, not the files': a store shares its file system's sync
 * with anything else writing there, as `sync` after `cp` would. A handle closed with puts
 * not flushed flushes them (as the puts of a put pool stopped before its drain landed).
 */
#define _GNU_SOURCE /* syncfs, sync_file_range */

#include "backend_internal.h"
#include "common/alloc.h"
#include "common/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int push(struct fs_backend *be, const char *tmp, const char *rel)
{
    int rc = TROVE_OK;

    pthread_mutex_lock(&be->defer_mu);
    if (be->ndefer == be->cap_defer) {
        size_t cap = be->cap_defer ? 2 * be->cap_defer : 64;
        struct fs_deferred *p = trove__realloc(be->defer, cap * sizeof *p);
        if (!p)
            rc = TROVE_ERR_NOMEM;
        else
            be->defer = p, be->cap_defer = cap;
    }
    if (rc == TROVE_OK) {
        memcpy(be->defer[be->ndefer].tmp, tmp, sizeof be->defer[0].tmp);
        memcpy(be->defer[be->ndefer].rel, rel, sizeof be->defer[0].rel);
        be->ndefer++;
    }
    pthread_mutex_unlock(&be->defer_mu);
    return rc;
}

/* Write the object's bytes into fd: from src_fd at src_off by the kernel when src_fd >= 0
 * and the file is as it was when its bytes were read (same size and change time before and
 * after the copy), else from data. */
static int fill(int fd, const uint8_t *data, size_t len, int src_fd, uint64_t src_off)
{
    struct stat before, after;
    loff_t in = (loff_t)src_off;
    size_t done = 0;

    if (src_fd < 0 || fstat(src_fd, &before) != 0)
        return trove__fs_write_all(fd, data, len);
    while (done < len) {
        ssize_t k = copy_file_range(src_fd, &in, fd, NULL, len - done, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break; /* cannot (EXDEV, EINVAL, ENOSYS...), or the file ends: from data */
        done += (size_t)k;
    }
    if (done == len && fstat(src_fd, &after) == 0 && after.st_size == before.st_size &&
        after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
        after.st_mtim.tv_nsec == before.st_mtim.tv_nsec &&
        after.st_ctim.tv_sec == before.st_ctim.tv_sec &&
        after.st_ctim.tv_nsec == before.st_ctim.tv_nsec)
        return TROVE_OK;
    if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
        return -errno;
    return trove__fs_write_all(fd, data, len);
}

static int defer(struct fs_backend *be, const struct trove_digest *d, const void *data,
                 size_t len, int src_fd, uint64_t src_off)
{
    char fan[3], rel[36], tmp[64];
    struct stat st;
    int fd = -1, rc;

    if (be->readonly)
        return TROVE_ERR_READONLY;
    trove__fs_object_name(d, fan, rel);
    if (fstatat(be->objects_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        pthread_mutex_lock(&be->defer_mu);
        be->defer_seen = 1; /* there: its name is made durable by the flush */
        pthread_mutex_unlock(&be->defer_mu);
        return TROVE_OK;
    }
    if (errno != ENOENT)
        return -errno;
    if ((rc = trove__fs_ensure_dir(be->objects_fd, fan, 0)) != TROVE_OK)
        return rc;
    if ((fd = trove__fs_temp_open(be->tmp_fd, tmp)) < 0)
        return fd;
    rc = fill(fd, data, len, src_fd, src_off);
    if (rc == TROVE_OK && !be->nosync)
        sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE); /* a head start for the flush */
    if (close(fd) != 0 && rc == TROVE_OK)
        rc = -errno;
    if (rc == TROVE_OK)
        rc = push(be, tmp, rel);
    if (rc != TROVE_OK)
        trove__io_unlinkat(be->tmp_fd, tmp, 0);
    return rc;
}

int trove__fs_defer_put(struct trove_backend *base, const struct trove_digest *d,
                        const void *data, size_t len)
{
    return defer((struct fs_backend *)base, d, data, len, -1, 0);
}

int trove__fs_defer_put_from(struct trove_backend *base, const struct trove_digest *d,
                             const void *data, size_t len, int src_fd, uint64_t src_off)
{
    return defer((struct fs_backend *)base, d, data, len, src_fd, src_off);
}

int trove__fs_flush(struct trove_backend *base)
{
    struct fs_backend *be = (struct fs_backend *)base;
    size_t i = 0;
    int rc = TROVE_OK;

    pthread_mutex_lock(&be->defer_mu);
    if (be->ndefer == 0 && !be->defer_seen)
        goto out;
    if (!be->nosync && be->ndefer > 0 && trove__io_syncfs(be->tmp_fd) != 0) {
        rc = -errno;
        goto out;
    }
    for (; i < be->ndefer; i++) {
        const struct fs_deferred *x = &be->defer[i];
        if (trove__io_linkat(be->tmp_fd, x->tmp, be->objects_fd, x->rel, 0) != 0 &&
            errno != EEXIST) {
            rc = -errno;
            goto out;
        }
        trove__io_unlinkat(be->tmp_fd, x->tmp, 0); /* if this fails, the next open removes it */
    }
    if (!be->nosync && trove__io_syncfs(be->objects_fd) != 0)
        rc = -errno;
out:
    /* On failure the temps not yet linked go; the objects of this batch may be missing,
     * which the caller's error says (a store turns sticky) */
    for (size_t k = i; rc != TROVE_OK && k < be->ndefer; k++)
        trove__io_unlinkat(be->tmp_fd, be->defer[k].tmp, 0);
    be->ndefer = 0;
    be->defer_seen = 0;
    pthread_mutex_unlock(&be->defer_mu);
    return rc;
}

void trove__fs_defer_drop(struct fs_backend *be)
{
    for (size_t k = 0; k < be->ndefer; k++)
        trove__io_unlinkat(be->tmp_fd, be->defer[k].tmp, 0);
    free(be->defer);
    be->defer = NULL;
    be->ndefer = be->cap_defer = 0;
}
