/*
 * beneath.h: opening a file inside a directory without following a symbolic link, so that
 * a link planted in a store (DIR/volumes/x.recipe -> /etc/shadow, DIR/objects/ab -> /)
 * never takes a read or a write outside it.
 */
#ifndef TROVE_COMMON_BENEATH_H
#define TROVE_COMMON_BENEATH_H

#include <sys/types.h>

/*
 * openat(dirfd, rel, flags, mode) where no component of rel may be a symbolic link and
 * rel may not leave dirfd (openat2 with RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH; on a kernel
 * without openat2, openat with O_NOFOLLOW, which guards the last component). A link is
 * refused with errno ELOOP (or EXDEV for a path that leaves). Returns the descriptor or -1.
 */
int trove__open_beneath(int dirfd, const char *rel, int flags, mode_t mode);

#endif
