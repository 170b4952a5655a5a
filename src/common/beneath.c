/*
 * beneath.c: trove__open_beneath (common/beneath.h).
 */
#define _GNU_SOURCE

#include "common/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_int no_openat2; /* the kernel said ENOSYS once: use the fallback from then on */

int trove__open_beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
#ifdef SYS_openat2
    if (!atomic_load(&no_openat2)) {
        struct open_how how;
        long fd;
        memset(&how, 0, sizeof how);
        how.flags = (unsigned long long)(flags | O_CLOEXEC);
        how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
        how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
        fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
        if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
            return (int)fd;
        atomic_store(&no_openat2, 1); /* ENOSYS, or a seccomp filter that refuses it */
    }
#endif
    return openat(dirfd, rel, flags | O_NOFOLLOW | O_CLOEXEC, mode);
}
