/*
 * fs_files.c: the file and directory steps the fs backend's puts share (backend_fs.c puts
 * and packs, backend_fs_defer.c deferred puts): object names, temp names, writes, and
 * directories made and synced.
 */
#define _GNU_SOURCE

#include "backend_internal.h"
#include "common/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static atomic_uint_fast64_t tmp_counter;

void trove__fs_object_name(const struct trove_digest *d, char fan[3], char rel[36])
{
    char hex[33];
    trove_digest_hex(d, hex);
    memcpy(fan, hex, 2);
    fan[2] = 0;
    memcpy(rel, hex, 2);
    rel[2] = '/';
    memcpy(rel + 3, hex, 33);
}

/* A temp name no other put (thread, process, or earlier process with the same pid) uses. */
void trove__fs_temp_name(char out[64])
{
    uint64_t n = (uint64_t)atomic_fetch_add(&tmp_counter, 1);
    struct timespec ts;
    uint64_t z;

    clock_gettime(CLOCK_REALTIME, &ts);
    z = n * 0x9e3779b97f4a7c15ULL ^ (uint64_t)ts.tv_nsec << 24 ^ (uint64_t)ts.tv_sec ^
        (uint64_t)(uintptr_t)&ts;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL; /* splitmix64 finalizer */
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    snprintf(out, 64, "%ld-%llu-%016llx.tmp", (long)getpid(), (unsigned long long)n,
             (unsigned long long)z);
}

/* fsync a directory descriptor. Some filesystems refuse fsync on directories with EINVAL;
 * there is nothing more to do on those, so that is not an error. */
int trove__fs_fsync_dir_fd(int fd)
{
    if (trove__io_fsync(fd) != 0 && errno != EINVAL)
        return -errno;
    return TROVE_OK;
}

/* Create directory name under at if missing; if this call created it and sync is set,
 * fsync at so that the new entry is durable (a deferred put's flush syncs it instead). */
int trove__fs_ensure_dir(int at, const char *name, int sync)
{
    struct stat st;

    if (mkdirat(at, name, FS_DIR_MODE) == 0)
        return sync ? trove__fs_fsync_dir_fd(at) : TROVE_OK;
    if (errno != EEXIST)
        return -errno;
    /* There already: a directory of its own, not a link to one somewhere else. */
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? TROVE_OK : TROVE_ERR_CORRUPT;
}

int trove__fs_write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = trove__io_write(fd, p, n < FS_IO_CHUNK ? n : FS_IO_CHUNK);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        p += w;
        n -= (size_t)w;
    }
    return TROVE_OK;
}

int trove__fs_temp_open(int dirfd, char tmp[64])
{
    for (int tries = 1;; tries++) {
        int fd;
        trove__fs_temp_name(tmp);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, FS_FILE_MODE);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST || tries >= FS_TMP_TRIES)
            return -errno;
    }
}
