/*
 * store.c: the store's low level — its directory and lock, the puts in flight, and the
 * committed recipe files: reading, publishing, removing and listing
 * them (include/trove/volume.h). recipe_io.c and volume.c build on it; the operations on
 * the store as a whole (open and close, recount, snapshot, remove, verify, gc) are the
 * store's high level, store_*.c, above both. Nothing here loads a volume, so this file
 * calls nothing of theirs.
 *
 * Ground truth is the set of committed recipes in DIR/volumes, and nothing else is kept
 * about them: there are no store-wide reference counts. A commit writes its new objects and
 * its recipe and nothing more, so it costs what it changed; an open reads no object list,
 * so it costs the lock and two directories. What a count would answer is asked of the
 * backend or of the recipes instead: a write asks the backend whether an object is there
 * (one stat, volume.c), and gc marks every object a recipe or an open volume names and
 * sweeps the rest (store_verify.c). A DIR/refs left by an older trove is removed by the
 * first writable open.
 *
 * Files are published by write-new-then-rename: a temp file in the same directory (names
 * starting with ".tmp-", which no volume name may), fsync, rename over the old name, fsync
 * of the directory. Objects are made durable by the backend before any recipe names them.
 */
#define _GNU_SOURCE /* F_OFD_SETLK, F_OFD_SETLKW */

#include "store_internal.h"
#include "s3/backend_s3.h"
#include "common/alloc.h"
#include "common/beneath.h"
#include "common/fail.h"
#include "common/io.h"
#include "backend_internal.h"
#include "recipe_head.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECIPE_SUFFIX ".recipe"
#define TMP_PREFIX ".tmp-"
#define OLD_REFS "refs" /* an older trove's reference counts: removed at open */
#define DIR_MODE 0755
#define FILE_MODE 0644
#define IO_CHUNK ((size_t)1 << 30)

/* ---- puts in flight --------------------------------------------------------------- */

/* On S3 a small object is staged: the backend packs the staged objects into a few pack
 * objects when they are published — at the drain, or as soon as they hold
 * TROVE__S3_STAGE_FLUSH bytes, so memory stays bounded — and a commit costs a few PUTs
 * instead of one (and a HEAD) per object. */
static int stage_s3(struct trove_store *s, const struct trove_digest *d, const void *data,
                    size_t len)
{
    int rc = trove_backend_stage(s->be, d, data, len);

    if (rc == TROVE_OK && trove__s3_staged_bytes(s->be) >= TROVE__S3_STAGE_FLUSH &&
        (rc = trove_backend_publish(s->be, NULL)) != TROVE_OK)
        s->sticky = rc; /* staged objects this handle counts on did not land */
    return rc;
}

int trove__store_put(struct trove_store *s, const struct trove_digest *d, const void *data,
                     size_t len)
{
    int rc;

    if (s->s3 && len < TROVE__S3_PACK_OBJECT_MAX)
        rc = stage_s3(s, d, data, len);
    else if (len > TROVE__PUTPOOL_MAX_OBJECT)
        rc = trove__backend_put_deferred(s->be, d, data, len);
    else if (!s->pool && (rc = trove__putpool_start(s->be, TROVE__PUTPOOL_THREADS, &s->pool)))
        ; /* could not start: rc says why */
    else
        rc = trove__putpool_submit(s->pool, d, data, len);
    /* A put that failed by itself (written inline, or refused before it was queued) left
     * nothing behind: the caller puts its slot back and the handle stays usable, so that it
     * can still undo what it did (a capture write removes the volume it created). Only a
     * queued put that failed later means objects this handle counts on may be missing. */
    if (rc != TROVE_OK && s->pool && trove__putpool_error(s->pool) != TROVE_OK)
        s->sticky = rc;
    if (rc == TROVE_OK) {
        int created; /* out of memory: not remembered, and the next write of d stats */
        trove__refmap_insert(&s->put_set, d, &created);
    }
    return rc;
}

int trove__store_put_from(struct trove_store *s, const struct trove_digest *d, const void *data,
                          size_t len, int src_fd, uint64_t src_off)
{
    int rc, created;

    if (s->s3 || !trove__backend_copies(s->be))
        return trove__store_put(s, d, data, len);
    rc = trove__backend_put_from_deferred(s->be, d, data, len, src_fd, src_off);
    if (rc != TROVE_OK)
        return rc; /* nothing left behind: the caller puts its slot back */
    trove__refmap_insert(&s->put_set, d, &created);
    return TROVE_OK;
}

int trove__store_lookup(struct trove_store *s, const struct trove_digest *d, size_t len,
                        uint64_t *len_out)
{
    if (s->s3 && s->lease)
        return trove__s3_size_sole(s->be, d, len >= TROVE__S3_PACK_OBJECT_MAX, len_out);
    return trove_backend_size(s->be, d, len_out);
}

int trove__store_has_put(const struct trove_store *s, const struct trove_digest *d)
{
    return trove__refmap_find(&s->put_set, d) != NULL;
}

int trove__store_drain(struct trove_store *s)
{
    int rc = s->pool ? trove__putpool_drain(s->pool) : TROVE_OK;
    int frc = trove__backend_flush(s->be); /* the puts' syncs, once for all of them */

    if (rc == TROVE_OK)
        rc = frc;
    if (s->s3) { /* the staged objects, in packs */
        int prc = trove_backend_publish(s->be, NULL);
        if (rc == TROVE_OK)
            rc = prc;
    }

    if (rc != TROVE_OK)
        s->sticky = rc;
    /* Landed: from now on the backend says whether they are there (a stat). */
    trove__refmap_free(&s->put_set);
    return rc;
}

/* ---- files ------------------------------------------------------------------------- */

int trove__store_writable(const struct trove_store *s, struct trove_diag *diag)
{
    if (s->flags & TROVE_STORE_READONLY)
        return TROVE_FAIL(diag, TROVE_ERR_READONLY, 0, "the store %s is open read-only",
                          s->dir);
    if (s->sticky)
        return TROVE_FAIL(diag, s->sticky, 0,
                          "an earlier failure (%s) left this store handle unusable for "
                          "changes; reopen the store",
                          trove_strerror(s->sticky));
    return TROVE_OK;
}

void trove__recipe_path(const struct trove_store *s, const char *name, char *out, size_t n)
{
    if (s->s3) {
        trove__s3store_head_url(s, name, out, n);
        return;
    }
    snprintf(out, n, "%s/volumes/%s" RECIPE_SUFFIX, s->dir, name);
}

static void recipe_file(const char *name, char out[TROVE_VOLUME_NAME_MAX + 16])
{
    snprintf(out, TROVE_VOLUME_NAME_MAX + 16, "%s" RECIPE_SUFFIX, name);
}

int trove__recipe_exists(struct trove_store *s, const char *name)
{
    char file[TROVE_VOLUME_NAME_MAX + 16];
    struct stat st;

    if (s->s3)
        return trove__s3store_head_exists(s, name);
    if (s->vol_fd < 0)
        return 0;
    recipe_file(name, file);
    if (fstatat(s->vol_fd, file, &st, 0) == 0)
        return 1;
    return errno == ENOENT ? 0 : -errno;
}

/* Read a whole file at (dirfd, name) into out. */
static int read_file_at(int dirfd, const char *name, struct trove_bytes *out)
{
    struct stat st;
    int fd = -1, rc;
    size_t got = 0;

    out->len = 0;
    if ((fd = trove__open_beneath(dirfd, name, O_RDONLY, 0)) < 0) {
        rc = errno == ENOENT                    ? TROVE_ERR_NOTFOUND
             : errno == ELOOP || errno == EXDEV ? TROVE_ERR_CORRUPT /* a link: not a recipe */
                                                : -errno;
        goto out;
    }
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = TROVE_ERR_CORRUPT;
        goto out;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if ((rc = trove_bytes_reserve(out, (size_t)st.st_size)) != TROVE_OK)
        goto out;
    while (got < (size_t)st.st_size) {
        size_t want = (size_t)st.st_size - got;
        ssize_t r = trove__io_read(fd, out->ptr + got, want < IO_CHUNK ? want : IO_CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            goto out;
        }
        if (r == 0)
            break; /* shrank under us: the decoder reports the short file */
        got += (size_t)r;
    }
    out->len = got;
    rc = TROVE_OK;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

int trove__recipe_read(struct trove_store *s, const char *name, struct trove_bytes *buf,
                       struct trove_diag *diag)
{
    char file[TROVE_VOLUME_NAME_MAX + 16], path[4096];
    int rc;

    if (s->s3) {
        rc = trove__s3store_head_read(s, name, buf, diag);
        goto out;
    }
    trove__recipe_path(s, name, path, sizeof path);
    if (s->vol_fd < 0) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOTFOUND, 0, "no volume '%s' in the store %s", name,
                        s->dir);
        goto out;
    }
    recipe_file(name, file);
    rc = read_file_at(s->vol_fd, file, buf);
    if (rc == TROVE_ERR_NOTFOUND)
        TROVE_FAIL(diag, rc, 0, "no volume '%s' in the store %s", name, s->dir);
    else if (rc != TROVE_OK)
        TROVE_FAIL(diag, rc, 0, "cannot read %s: %s", path, trove_strerror(rc));
out:
    if (rc != TROVE_OK)
        buf->len = 0;
    return rc;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = trove__io_write(fd, p, n < IO_CHUNK ? n : IO_CHUNK);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        p += w;
        n -= (size_t)w;
    }
    return TROVE_OK;
}

/* Publish data as dirfd/final: write tmp, fsync, rename over final, fsync the directory
 * (no fsync at all with TROVE_STORE_NOSYNC). */
static int publish_at(int dirfd, const char *final, const char *tmp, const void *data,
                      size_t len, int sync)
{
    int fd, rc;

    fd = trove__open_beneath(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC, FILE_MODE);
    if (fd < 0)
        return -errno;
    rc = write_all(fd, data, len);
    if (rc == TROVE_OK && sync && trove__io_fsync(fd) != 0)
        rc = -errno;
    if (close(fd) != 0 && rc == TROVE_OK)
        rc = -errno;
    if (rc == TROVE_OK && trove__io_renameat(dirfd, tmp, dirfd, final) != 0)
        rc = -errno;
    if (rc == TROVE_OK && sync && trove__io_fsync(dirfd) != 0)
        rc = -errno;
    if (rc != TROVE_OK)
        trove__io_unlinkat(dirfd, tmp, 0);
    return rc;
}

int trove__recipe_publish(struct trove_store *s, const char *name, const void *data,
                          size_t len)
{
    char file[TROVE_VOLUME_NAME_MAX + 16], tmp[TROVE_VOLUME_NAME_MAX + 32];

    if (s->s3)
        return trove__s3store_head_publish(s, name, data, len);
    recipe_file(name, file);
    snprintf(tmp, sizeof tmp, TMP_PREFIX "%s", file);
    return publish_at(s->vol_fd, file, tmp, data, len, !(s->flags & TROVE_STORE_NOSYNC));
}

int trove__recipe_remove(struct trove_store *s, const char *name)
{
    char file[TROVE_VOLUME_NAME_MAX + 16];

    if (s->s3)
        return trove__s3store_head_remove(s, name);
    recipe_file(name, file);
    if (trove__io_unlinkat(s->vol_fd, file, 0) != 0 ||
        (!(s->flags & TROVE_STORE_NOSYNC) && trove__io_fsync(s->vol_fd) != 0))
        return -errno;
    return TROVE_OK;
}

/* ---- listing the recipes ----------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void trove__names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int trove__recipe_names(struct trove_store *s, char ***out, size_t *count_out)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    DIR *dp = NULL;
    int fd, rc = TROVE_OK;
    struct dirent *de;

    *out = NULL;
    *count_out = 0;
    if (s->s3) {
        if ((rc = trove__s3store_head_names(s, &names, &n)) != TROVE_OK)
            return rc;
        goto sorted;
    }
    if (s->vol_fd < 0)
        return TROVE_OK;
    if ((fd = openat(s->vol_fd, ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return -errno;
    if (!(dp = fdopendir(fd))) {
        rc = -errno;
        close(fd);
        goto out;
    }
    while ((errno = 0, de = readdir(dp)) != NULL) {
        size_t len = strlen(de->d_name), sl = sizeof RECIPE_SUFFIX - 1;
        char name[TROVE_VOLUME_NAME_MAX + 1];
        if (len <= sl || len - sl > TROVE_VOLUME_NAME_MAX ||
            strcmp(de->d_name + len - sl, RECIPE_SUFFIX) != 0)
            continue;
        memcpy(name, de->d_name, len - sl);
        name[len - sl] = 0;
        if (trove_volume_name_check(name, NULL) != TROVE_OK)
            continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 16;
            char **p = trove__realloc(names, c * sizeof *p);
            if (!p) {
                rc = TROVE_ERR_NOMEM;
                goto out;
            }
            names = p;
            cap = c;
        }
        if (!(names[n] = trove__strdup(name))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        n++;
    }
    if (errno != 0)
        rc = -errno;
out:
    if (dp)
        closedir(dp);
    if (rc != TROVE_OK) {
        trove__names_free(names, n);
        return rc;
    }
sorted:
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_str);
    *out = names;
    *count_out = n;
    return TROVE_OK;
}

/* ---- open volumes ------------------------------------------------------------------ */

int trove__store_any_dirty(const struct trove_store *s)
{
    for (const struct trove_volume *v = s->open; v; v = v->next)
        if (v->dirty || v->nundo > 0)
            return 1;
    return 0;
}

/* ---- the directory and the lock: the low halves of open and close ------------------- */

static int mkdir_p(char *path)
{
    size_t len = strlen(path);

    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != 0)
            continue;
        path[i] = 0;
        if (mkdir(path, DIR_MODE) != 0 && errno != EEXIST) {
            int e = errno;
            if (i < len)
                path[i] = '/';
            return -e;
        }
        if (i < len)
            path[i] = '/';
    }
    return TROVE_OK;
}

/* Remove temp files a dead writer left in dirfd (we hold the exclusive lock). */
static void clean_temps(int dirfd)
{
    DIR *dp;
    struct dirent *de;
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return;
    if (!(dp = fdopendir(fd))) {
        close(fd);
        return;
    }
    while ((de = readdir(dp)) != NULL)
        if (strncmp(de->d_name, TMP_PREFIX, sizeof TMP_PREFIX - 1) == 0)
            trove__io_unlinkat(dirfd, de->d_name, 0);
    closedir(dp);
}

/*
 * The lock file's two bytes (open file description locks, so that they belong to the
 * handle, not the process: a second handle in one process is kept out like another
 * process, and closing it releases only its own):
 *   byte 0  the writer: a writable open holds a write lock on it, so one writer at a time;
 *   byte 1  the readers: every open holds a read lock on it, and gc turns its own into a
 *           write lock while it deletes, so no reader sees an object vanish under it.
 * Readers do not wait for the writer: a commit is atomic and objects are durable before the
 * recipe that names them, so a reader sees each volume at one commit or the next.
 */
#define LOCK_WRITER 0
#define LOCK_READERS 1

static int lock_byte(int fd, short type, off_t byte, int wait)
{
    struct flock fl;

    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = byte;
    fl.l_len = 1;
    while (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) != 0) {
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EACCES ? TROVE_ERR_BUSY : -errno;
    }
    return TROVE_OK;
}

static int take_lock(struct trove_store *s)
{
    int ro = (s->flags & TROVE_STORE_READONLY) != 0, rc;

    s->lock_fd = openat(s->dir_fd, "lock",
                        (ro ? O_RDONLY : O_RDWR | O_CREAT) | O_NOFOLLOW | O_CLOEXEC, FILE_MODE);
    if (s->lock_fd < 0)
        return ro && errno == ENOENT ? TROVE_OK : -errno;
    if (!ro && (rc = lock_byte(s->lock_fd, F_WRLCK, LOCK_WRITER,
                               !(s->flags & TROVE_STORE_NOWAIT))) != TROVE_OK)
        return rc;
    return lock_byte(s->lock_fd, F_RDLCK, LOCK_READERS, 1);
}

int trove__store_exclude_readers(struct trove_store *s, int exclude)
{
    /* On S3 readers hold no lock to wait for: gc's grace period and the heads' immutable
     * objects are what keep them safe (store_verify.c). */
    if (s->lock_fd < 0)
        return TROVE_OK;
    return lock_byte(s->lock_fd, exclude ? F_WRLCK : F_RDLCK, LOCK_READERS, 1);
}

int trove__store_open_dir(const char *dir, unsigned flags, struct trove_store **out,
                          struct trove_diag *diag)
{
    struct trove_store *s = NULL;
    char *path = NULL;
    int rc;

    *out = NULL;
    if (!(s = trove__calloc(1, sizeof *s))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    s->dir_fd = s->vol_fd = s->lock_fd = -1; /* before anything can fail: cleanup closes them */
    s->flags = flags;
    if (!(s->dir = trove__strdup(dir))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if (!strncmp(dir, "s3://", 5)) {
        s->s3 = 1;
        if ((rc = trove__s3store_open(s, diag)) != TROVE_OK)
            goto out;
        *out = s;
        s = NULL;
        goto out;
    }
    if ((flags & TROVE_STORE_CREATE) && !(flags & TROVE_STORE_READONLY)) {
        if (!(path = trove__strdup(dir))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        if ((rc = mkdir_p(path)) != TROVE_OK) {
            TROVE_FAIL(diag, rc, 0, "cannot create the store directory %s: %s", dir,
                       trove_strerror(rc));
            goto out;
        }
    }
    if ((s->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) { /* may be a link */
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
        TROVE_FAIL(diag, rc, 0, "cannot open the store %s: %s", dir,
                   errno == ENOENT ? "no such directory" : strerror(errno));
        goto out;
    }
    if ((flags & TROVE_STORE_CREATE) && !(flags & TROVE_STORE_READONLY) &&
        mkdirat(s->dir_fd, "volumes", DIR_MODE) != 0 && errno != EEXIST) {
        rc = -errno;
        TROVE_FAIL(diag, rc, 0, "cannot create %s/volumes: %s", dir, trove_strerror(rc));
        goto out;
    }
    /* Without CREATE a directory that is not a store is left alone. */
    s->vol_fd = openat(s->dir_fd, "volumes", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s->vol_fd < 0) {
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
        TROVE_FAIL(diag, rc, 0, "%s is not a trove store (%s/volumes: %s)", dir, dir,
                   errno == ENOENT ? "no such directory" : strerror(errno));
        goto out;
    }
    if ((rc = take_lock(s)) != TROVE_OK) {
        if (rc == TROVE_ERR_BUSY)
            TROVE_FAIL(diag, rc, 0,
                       "%s is open for writing by another process (a running `trove "
                       "serve`?); stop it, or read the store while it runs",
                       dir);
        else
            TROVE_FAIL(diag, rc, 0, "cannot lock %s/lock: %s", dir, trove_strerror(rc));
        goto out;
    }
    rc = trove_backend_fs_open_flags(
        dir,
        ((flags & TROVE_STORE_READONLY) ? TROVE_BACKEND_READONLY : 0) |
            ((flags & TROVE_STORE_NOSYNC) ? TROVE_BACKEND_NOSYNC : 0) |
            ((flags & TROVE_STORE_NOVERIFY) ? TROVE_BACKEND_NOVERIFY : 0),
        &s->be);
    if (rc != TROVE_OK) {
        TROVE_FAIL(diag, rc, 0, "cannot open the objects of %s: %s", dir,
                   trove_strerror(rc));
        goto out;
    }
    if (!(flags & TROVE_STORE_READONLY)) {
        clean_temps(s->dir_fd);
        if (s->vol_fd >= 0)
            clean_temps(s->vol_fd);
        trove__io_unlinkat(s->dir_fd, OLD_REFS, 0); /* derived data nothing reads any more */
    }
    *out = s;
    s = NULL;
    rc = TROVE_OK;
out:
    free(path);
    trove__store_release(s);
    return rc;
}

void trove__store_release(struct trove_store *s)
{
    if (!s)
        return;
    assert(!s->open); /* the volumes are closed first (trove_store_close) */
    trove__putpool_stop(s->pool); /* waits for puts in flight */
    if (s->s3)
        trove__s3store_release(s); /* after the last put: the lease is given back last */
    trove_backend_close(s->be);
    if (s->vol_fd >= 0)
        close(s->vol_fd);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the lock */
    if (s->dir_fd >= 0)
        close(s->dir_fd);
    trove__refmap_free(&s->put_set);
    free(s->dir);
    free(s);
}

int trove_store_reset(struct trove_store *s)
{
    if (!s)
        return TROVE_ERR_INVALID;
    if (trove__store_any_dirty(s))
        return TROVE_ERR_BUSY;
    if (s->pool) { /* a new pool: the old one keeps its first error for good */
        trove__putpool_stop(s->pool);
        s->pool = NULL;
    }
    trove__refmap_free(&s->put_set);
    s->sticky = 0;
    return TROVE_OK;
}

int trove_store_object_size(struct trove_store *s, const struct trove_digest *d,
                            uint64_t *len_out)
{
    if (!s || !d || !len_out)
        return TROVE_ERR_INVALID;
    return trove__store_lookup(s, d, 0, len_out);
}

int trove_store_put_pending(const struct trove_store *s, const struct trove_digest *d)
{
    return s && d && trove__store_has_put(s, d);
}

struct trove_backend *trove_store_backend(struct trove_store *s)
{
    return s ? s->be : NULL;
}
