/*
 * output.c: where an output goes (trove/input.h: trove_output_open, trove_output_commit,
 * trove_output_abort), the same for every command and export that writes a file.
 *
 * A regular file, or a path that does not exist yet, is written to a temporary file beside
 * it and renamed over it once complete and fsync'd, so a reader sees the old file or the
 * whole new one, and a failure leaves the old one. A symbolic link is followed to the file
 * it names, which is the one replaced: the link stays a link. Anything else that exists — a
 * character or block device, a FIFO, a socket — and "-" (stdout) is written in place: a
 * rename would replace the device node or the pipe with a plain file and the reader would
 * get nothing. A directory is an error: the output is a file.
 */
#define _GNU_SOURCE /* O_CLOEXEC with fdopen, and readlink's prototype under c11 */

#include "input_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LINK_HOPS 40 /* as the kernel's own limit on a path's links */

/* Resolve the symbolic links at the end of path (not in its directories, which the kernel
 * follows for every open anyway) into out: the file a write through path reaches. */
static int resolve_links(const char *path, char *out, size_t n, struct trove_diag *diag)
{
    char link[PATH_MAX], next[PATH_MAX];
    struct stat st;

    if ((size_t)snprintf(out, n, "%s", path) >= n)
        return in_fail(diag, TROVE_ERR_INVALID, "%s: the path is too long", path);
    for (int hop = 0; hop < LINK_HOPS; hop++) {
        ssize_t len;
        const char *slash;
        if (lstat(out, &st) != 0 || !S_ISLNK(st.st_mode))
            return 0;
        if ((len = readlink(out, link, sizeof link - 1)) < 0)
            return in_fail(diag, TROVE_ERR_INVALID, "%s: cannot read the link: %s", path, strerror(errno));
        link[len] = 0;
        slash = strrchr(out, '/');
        if (link[0] == '/' || !slash) {
            if ((size_t)snprintf(next, sizeof next, "%s", link) >= sizeof next)
                return in_fail(diag, TROVE_ERR_INVALID, "%s: the link's target is too long", path);
        } else if ((size_t)snprintf(next, sizeof next, "%.*s/%s", (int)(slash - out), out,
                                    link) >= sizeof next) {
            return in_fail(diag, TROVE_ERR_INVALID, "%s: the link's target is too long", path);
        }
        if ((size_t)snprintf(out, n, "%s", next) >= n)
            return in_fail(diag, TROVE_ERR_INVALID, "%s: the link's target is too long", path);
    }
    return in_fail(diag, TROVE_ERR_INVALID, "%s: too many levels of symbolic links", path);
}

int trove_output_open(const char *path, int binary, struct trove_output *o,
                      struct trove_diag *diag)
{
    struct stat st;
    const char *slash;
    int fd = -1;
    mode_t mode = 0666;

    memset(o, 0, sizeof *o);
    if (!path || !strcmp(path, "-")) {
        if (binary && isatty(STDOUT_FILENO))
            return in_fail(diag, TROVE_ERR_INVALID, "refusing to write binary output to a terminal; give -o FILE "
                                  "or redirect stdout");
        o->f = stdout;
        o->direct = 1;
        snprintf(o->path, sizeof o->path, "stdout");
        return 0;
    }
    if ((size_t)snprintf(o->path, sizeof o->path, "%s", path) >= sizeof o->path)
        return in_fail(diag, TROVE_ERR_INVALID, "%s: the path is too long", path);
    /* A descriptor's name (/dev/fd/N, a pipe the caller holds): its link is no file name. */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        if (!(o->f = fopen(path, "wb")))
            return in_fail(diag, TROVE_ERR_INVALID, "%s: cannot open for writing: %s", path, strerror(errno));
        snprintf(o->target, sizeof o->target, "%s", path);
        o->direct = 1;
        return 0;
    }
    if (resolve_links(path, o->target, sizeof o->target, diag))
        return in_code(diag);
    if (stat(o->target, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return in_fail(diag, TROVE_ERR_INVALID, "%s is a directory; the output is a file (give a file name)",
                             path);
        if (!S_ISREG(st.st_mode)) {
            /* A device, FIFO or socket: written in place, never replaced. */
            if (!(o->f = fopen(o->target, "wb")))
                return in_fail(diag, TROVE_ERR_INVALID, "%s: cannot open for writing: %s", path, strerror(errno));
            o->direct = 1;
            return 0;
        }
        mode = st.st_mode & 07777; /* the replacement keeps the file's permissions */
    } else if (errno != ENOENT) {
        return in_fail(diag, TROVE_ERR_INVALID, "%s: %s", path, strerror(errno));
    }
    /* Beside the target, so that the rename stays on one filesystem. */
    slash = strrchr(o->target, '/');
    for (int tries = 0; tries < 16 && fd < 0; tries++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        /* "DIR/.BASE.tmp-PID-N": hidden, and plainly a leftover if a crash leaves it. */
        if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.tmp-%ld-%lx",
                             slash ? (int)(slash - o->target + 1) : 0, o->target,
                             slash ? slash + 1 : o->target, (long)getpid(),
                             (unsigned long)(ts.tv_nsec ^ (long)tries * 7919)) >= sizeof o->tmp)
            return in_fail(diag, TROVE_ERR_INVALID, "%s: the path is too long", path);
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        int e = errno;
        o->tmp[0] = 0;
        return in_fail(diag, TROVE_ERR_INVALID, "%s: cannot create a file beside it: %s", path, strerror(e));
    }
    if (mode != 0666)
        (void)fchmod(fd, mode); /* open applied the umask; an existing file's mode wins */
    if (!(o->f = fdopen(fd, "wb"))) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = 0;
        return in_fail(diag, TROVE_ERR_INVALID, "%s: %s", path, strerror(e));
    }
    return 0;
}

int trove_output_commit(struct trove_output *o, struct trove_diag *diag)
{
    int ok, e = 0;

    if (!o->f)
        return in_fail(diag, TROVE_ERR_INVALID, "%s: nothing open to write", o->path);
    if (o->f == stdout) {
        o->f = NULL;
        if (fflush(stdout) != 0)
            return in_fail(diag, TROVE_ERR_INVALID, "writing stdout: %s", strerror(errno));
        return 0;
    }
    ok = fflush(o->f) == 0;
    if (!ok)
        e = errno;
    /* A regular file is made durable before its name appears; a device or pipe has nothing
     * to sync (fsync fails with EINVAL there, which is not an error). */
    if (ok && o->tmp[0] && fsync(fileno(o->f)) != 0) {
        ok = 0;
        e = errno;
    }
    if (fclose(o->f) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    o->f = NULL;
    if (ok && o->tmp[0] && rename(o->tmp, o->target) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        if (o->tmp[0])
            unlink(o->tmp);
        o->tmp[0] = 0;
        return in_fail(diag, TROVE_ERR_INVALID, "writing %s: %s", o->path, strerror(e));
    }
    o->tmp[0] = 0;
    return 0;
}

void trove_output_abort(struct trove_output *o)
{
    if (o->f && o->f != stdout)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp[0])
        unlink(o->tmp);
    o->tmp[0] = 0;
}

int trove_output_write_file(const char *path, const void *data, size_t len,
                            struct trove_diag *diag)
{
    struct trove_output o;
    int rc;

    if ((rc = trove_output_open(path, 1, &o, diag)) != TROVE_OK)
        return rc;
    if (len > 0 && fwrite(data, 1, len, o.f) != len) {
        int e = errno;
        trove_output_abort(&o);
        return in_fail(diag, -e, "writing %s: %s", path, strerror(e));
    }
    return trove_output_commit(&o, diag);
}
