/*
 * backend_fs.c: the local filesystem object backend (include/trove/store.h).
 *
 *   dir/objects/<h0h1>/<32 hex>   one file per object, named by its lowercase hex digest,
 *                                 under a fan-out directory named by the first two digits
 *   dir/tmp/<pid>-<n>-<rand>.tmp  objects being written; anything here after a crash is
 *                                 garbage and is removed by the next open
 *
 * A put writes the bytes to a fresh temp file (O_CREAT|O_EXCL), fsyncs it, and then
 * link()s it to its final name. link() never replaces an existing name — it fails with
 * EEXIST — so an object is never overwritten, and of several concurrent puts of one digest
 * (threads or processes) exactly one creates it and the others see created = 0. The temp
 * name is then unlinked and the fan-out directory fsync'd, so on return the object is
 * complete and durable; a crash at any point leaves either no object or the whole object,
 * plus at worst an orphan in dir/tmp. (rename() would overwrite, and renameat2's
 * RENAME_NOREPLACE is Linux-only; link needs dir/tmp and dir/objects on one filesystem,
 * which they are unless someone mounts over them.)
 *
 * Nothing is cached in memory: the handle holds two directory descriptors and every
 * operation works relative to them with the *at() calls, so one handle serves many threads
 * and several processes may share a store directory. Cleaning dir/tmp at open spares temp
 * files whose writer pid is alive (and younger than a day), so opening a store does not
 * break a put under way in another process on the same host.
 */
#define _DEFAULT_SOURCE /* d_type and DT_* in struct dirent */

#include "backend_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define FS_PATH_MAX 4096              /* longest store directory name accepted */
#define FS_IO_CHUNK ((size_t)1 << 30) /* largest single read()/write() */
#define FS_TMP_TRIES 16               /* temp names tried before giving up */
#define FS_TMP_STALE_SEC (24 * 3600)  /* a temp file this old is garbage, live pid or not */
#define FS_DIR_MODE 0755
#define FS_FILE_MODE 0644

struct fs_backend {
    struct trove_backend base; /* first: backend.c sees only this */
    int objects_fd;            /* dir/objects */
    int tmp_fd;                /* dir/tmp, or -1 when read-only */
    int readonly;              /* put and delete refused */
};

static atomic_uint_fast64_t tmp_counter;

/* fan = "h0h1", rel = "h0h1/<32 hex>" (relative to dir/objects). */
static void object_name(const struct trove_digest *d, char fan[3], char rel[36])
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
static void temp_name(char out[64])
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
static int fsync_dir_fd(int fd)
{
    if (fsync(fd) != 0 && errno != EINVAL)
        return -errno;
    return TROVE_OK;
}

static int fsync_dir_at(int at, const char *name)
{
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;
    if (fd < 0)
        return -errno;
    rc = fsync_dir_fd(fd);
    close(fd);
    return rc;
}

/* Create directory name under at if missing; if this call created it, fsync at so that
 * the new entry is durable. */
static int ensure_dir_at(int at, const char *name)
{
    if (mkdirat(at, name, FS_DIR_MODE) == 0)
        return fsync_dir_fd(at);
    return errno == EEXIST ? TROVE_OK : -errno;
}

/* fsync the directory that holds path p (NUL-terminated, length n). */
static int fsync_parent(char *p, size_t n)
{
    size_t i = n;
    int rc;
    while (i > 0 && p[i - 1] != '/')
        i--;
    if (i == 0)
        return fsync_dir_at(AT_FDCWD, ".");
    if (i == 1)
        return fsync_dir_at(AT_FDCWD, "/");
    p[i - 1] = 0;
    rc = fsync_dir_at(AT_FDCWD, p);
    p[i - 1] = '/';
    return rc;
}

/* mkdir -p dir (len bytes), fsync'ing the parent of each directory it creates. */
static int mkdir_p(const char *dir, size_t len)
{
    char *p = malloc(len + 1);
    int rc = TROVE_OK;

    if (!p)
        return TROVE_ERR_NOMEM;
    memcpy(p, dir, len + 1);
    for (size_t i = 1; i <= len && rc == TROVE_OK; i++) {
        char c = p[i];
        if ((i < len && c != '/') || p[i - 1] == '/')
            continue; /* not the end of a component (or a repeated / trailing slash) */
        p[i] = 0;
        if (mkdir(p, FS_DIR_MODE) == 0)
            rc = fsync_parent(p, i);
        else if (errno != EEXIST)
            rc = -errno;
        p[i] = c;
    }
    free(p);
    return rc;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n < FS_IO_CHUNK ? n : FS_IO_CHUNK);
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

/* Append exactly n bytes from fd to out (room already reserved). A file shorter than its
 * fstat size — impossible for an immutable object unless something else truncated it —
 * is TROVE_ERR_TRUNCATED. */
static int read_exact(int fd, struct trove_bytes *out, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, out->ptr + out->len, n < FS_IO_CHUNK ? n : FS_IO_CHUNK);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return TROVE_ERR_TRUNCATED;
        out->len += (size_t)r;
        n -= (size_t)r;
    }
    return TROVE_OK;
}

static int fs_put(struct trove_backend *base, const struct trove_digest *d, const void *data,
                  size_t len, int *created_out)
{
    struct fs_backend *be = (struct fs_backend *)base;
    char fan[3], rel[36], tmp[64];
    struct stat st;
    int fd = -1, have_tmp = 0, rc = TROVE_OK;

    if (be->readonly)
        return TROVE_ERR_READONLY;
    object_name(d, fan, rel);
    *created_out = 0;
    /* Fast path for deduplicated data: the object is there, skip writing it. The fsync
     * makes "durable on return" hold even if a concurrent put linked it a moment ago. */
    if (fstatat(be->objects_fd, rel, &st, 0) == 0) {
        rc = fsync_dir_at(be->objects_fd, fan);
        goto out;
    }
    if (errno != ENOENT) {
        rc = -errno;
        goto out;
    }
    rc = ensure_dir_at(be->objects_fd, fan);
    if (rc != TROVE_OK)
        goto out;
    for (int tries = 1;; tries++) {
        temp_name(tmp);
        fd = openat(be->tmp_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, FS_FILE_MODE);
        if (fd >= 0)
            break;
        if (errno != EEXIST || tries >= FS_TMP_TRIES) {
            rc = -errno;
            goto out;
        }
    }
    have_tmp = 1;
    rc = write_all(fd, data, len);
    if (rc != TROVE_OK)
        goto out;
    if (fsync(fd) != 0) {
        rc = -errno;
        goto out;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = -errno;
        goto out;
    }
    fd = -1;
    /* The commit point: link() fails with EEXIST rather than replace an existing object. */
    if (linkat(be->tmp_fd, tmp, be->objects_fd, rel, 0) == 0)
        *created_out = 1;
    else if (errno != EEXIST) {
        rc = -errno;
        goto out;
    }
    unlinkat(be->tmp_fd, tmp, 0); /* if this fails, the next open removes it */
    have_tmp = 0;
    rc = fsync_dir_at(be->objects_fd, fan);
out:
    if (fd >= 0)
        close(fd);
    if (have_tmp)
        unlinkat(be->tmp_fd, tmp, 0);
    return rc;
}

static int fs_get(struct trove_backend *base, const struct trove_digest *d,
                  struct trove_bytes *out, size_t max_len)
{
    struct fs_backend *be = (struct fs_backend *)base;
    char fan[3], rel[36];
    struct stat st;
    int fd, rc = TROVE_OK;

    object_name(d, fan, rel);
    fd = openat(be->objects_fd, rel, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
        goto out;
    }
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode) || st.st_size < 0) {
        rc = TROVE_ERR_CORRUPT;
        goto out;
    }
    if ((uint64_t)st.st_size > (uint64_t)max_len) { /* refused before any allocation */
        rc = TROVE_ERR_LIMIT;
        goto out;
    }
    rc = trove_bytes_reserve(out, (size_t)st.st_size);
    if (rc != TROVE_OK)
        goto out;
    rc = read_exact(fd, out, (size_t)st.st_size);
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

static int fs_size(struct trove_backend *base, const struct trove_digest *d, uint64_t *len_out)
{
    struct fs_backend *be = (struct fs_backend *)base;
    char fan[3], rel[36];
    struct stat st;

    object_name(d, fan, rel);
    if (fstatat(be->objects_fd, rel, &st, 0) != 0)
        return errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
    if (!S_ISREG(st.st_mode) || st.st_size < 0)
        return TROVE_ERR_CORRUPT;
    *len_out = (uint64_t)st.st_size;
    return TROVE_OK;
}

static int fs_delete(struct trove_backend *base, const struct trove_digest *d)
{
    struct fs_backend *be = (struct fs_backend *)base;
    char fan[3], rel[36];

    if (be->readonly)
        return TROVE_ERR_READONLY;
    object_name(d, fan, rel);
    if (unlinkat(be->objects_fd, rel, 0) != 0)
        return errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
    return fsync_dir_at(be->objects_fd, fan);
}

/* Is name (in fan-out directory fan) a well-formed object name? Exactly 32 lowercase hex
 * digits, the first two equal to fan, not the zero digest. */
static int object_from_name(const char *name, const char *fan, struct trove_digest *d)
{
    char hex[33];
    if (strnlen(name, 33) != 32 || name[0] != fan[0] || name[1] != fan[1])
        return 0;
    if (trove_digest_parse(name, d) != TROVE_OK || trove_digest_is_zero(d))
        return 0;
    trove_digest_hex(d, hex);
    return memcmp(hex, name, 32) == 0; /* rejects upper case: not a name put writes */
}

/* 1 if the entry is a regular file, 0 if not (or gone), -errno on error. */
static int is_regular(DIR *dp, const struct dirent *de)
{
    struct stat st;
    if (de->d_type == DT_REG)
        return 1;
    if (de->d_type != DT_UNKNOWN)
        return 0;
    if (fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -errno;
    return S_ISREG(st.st_mode) ? 1 : 0;
}

static int fs_list(struct trove_backend *base,
                   int (*fn)(void *ctx, const struct trove_digest *d), void *ctx)
{
    static const char hexd[] = "0123456789abcdef";
    struct fs_backend *be = (struct fs_backend *)base;
    DIR *dp = NULL;
    int rc = TROVE_OK;

    for (int i = 0; i < 256; i++) {
        char fan[3] = {hexd[i >> 4], hexd[i & 15], 0};
        int fd = openat(be->objects_fd, fan, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT)
                continue; /* no object with this prefix was ever stored */
            rc = -errno;
            goto out;
        }
        dp = fdopendir(fd);
        if (!dp) {
            rc = -errno;
            close(fd);
            goto out;
        }
        for (;;) {
            struct trove_digest d;
            struct dirent *de;
            errno = 0;
            de = readdir(dp);
            if (!de) {
                if (errno != 0) {
                    rc = -errno;
                    goto out;
                }
                break;
            }
            if (!object_from_name(de->d_name, fan, &d))
                continue;
            rc = is_regular(dp, de);
            if (rc < 0)
                goto out;
            if (rc == 0)
                continue;
            rc = fn(ctx, &d);
            if (rc != 0)
                goto out;
        }
        closedir(dp);
        dp = NULL;
    }
out:
    if (dp)
        closedir(dp);
    return rc;
}

/* A temp file is stale unless its name starts with the pid of a live process and it is
 * less than FS_TMP_STALE_SEC old (a put under way in another process). */
static int temp_is_stale(int tmp_fd, const char *name)
{
    struct stat st;
    char *end;
    long pid;
    errno = 0;
    pid = strtol(name, &end, 10);
    if (errno != 0 || end == name || *end != '-' || pid <= 0 || (long)(pid_t)pid != pid)
        return 1;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
    if (fstatat(tmp_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0; /* gone already */
    return time(NULL) - st.st_mtime > FS_TMP_STALE_SEC;
}

/* Remove the orphans of crashed puts from dir/tmp. Best effort: what cannot be removed
 * now is harmless and is retried at the next open. */
static void clean_tmp(int tmp_fd)
{
    int fd = openat(tmp_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;

    if (!dp) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while ((de = readdir(dp)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (temp_is_stale(tmp_fd, de->d_name))
            unlinkat(tmp_fd, de->d_name, 0);
    }
    closedir(dp);
}

static void fs_close(struct trove_backend *base)
{
    struct fs_backend *be = (struct fs_backend *)base;
    if (be->objects_fd >= 0)
        close(be->objects_fd);
    if (be->tmp_fd >= 0)
        close(be->tmp_fd);
    free(be);
}

static const struct trove_backend_ops fs_ops = {
    .name = "fs",
    .put = fs_put,
    .get = fs_get,
    .size = fs_size,
    .del = fs_delete,
    .list = fs_list,
    .close = fs_close,
};

static int fs_open(const char *dir, int readonly, struct trove_backend **out)
{
    struct fs_backend *be = NULL;
    int root = -1, rc = TROVE_OK;
    size_t len;

    if (!out)
        return TROVE_ERR_INVALID;
    *out = NULL;
    if (!dir || !*dir)
        return TROVE_ERR_INVALID;
    len = strnlen(dir, FS_PATH_MAX + 1);
    if (len > FS_PATH_MAX)
        return -ENAMETOOLONG;
    if (!readonly && (rc = mkdir_p(dir, len)) != TROVE_OK)
        goto out;
    root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
        goto out;
    }
    if (!readonly && ((rc = ensure_dir_at(root, "objects")) != TROVE_OK ||
                      (rc = ensure_dir_at(root, "tmp")) != TROVE_OK))
        goto out;
    be = calloc(1, sizeof *be);
    if (!be) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    be->base.ops = &fs_ops;
    be->readonly = readonly;
    be->tmp_fd = -1;
    be->objects_fd = openat(root, "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (be->objects_fd < 0) {
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
        goto out;
    }
    if (!readonly) {
        be->tmp_fd = openat(root, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (be->tmp_fd < 0) {
            rc = -errno;
            goto out;
        }
        clean_tmp(be->tmp_fd);
    }
    *out = &be->base;
    be = NULL;
out:
    if (be)
        fs_close(&be->base);
    if (root >= 0)
        close(root);
    return rc;
}

int trove_backend_fs_open(const char *dir, struct trove_backend **out)
{
    return fs_open(dir, 0, out);
}

int trove_backend_fs_open_readonly(const char *dir, struct trove_backend **out)
{
    return fs_open(dir, 1, out);
}
