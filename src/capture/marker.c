/*
 * marker.c: a capture's last-used marker (include/trove/capture.h) — bookkeeping beside
 * the store, not in it. DIR/markers/NAME.last-used holds the time of the capture's last
 * replay as decimal Unix nanoseconds and a newline. It is written as a temp file renamed
 * over the old one, with no fsync: a crash may lose a last-used time, which costs nothing,
 * and a reader sees the old marker or the new one, never a mix. verify and gc ignore the
 * directory. Callers run the write off the request's critical path (trove_bg_start), so a
 * slow or hanging filesystem never delays a replay.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture_internal.h"
#include "common/fail.h"

#define MARKER_MAX 32 /* bytes a marker file may hold: 20 digits and a newline, with room */

static int marker_path(const char *store_dir, const char *name, char *out, size_t n)
{
    if (!store_dir || trove_volume_name_check(name, NULL) != TROVE_OK)
        return TROVE_ERR_INVALID;
    if ((size_t)snprintf(out, n, "%s/markers/%s.last-used", store_dir, name) >= n)
        return TROVE_ERR_LIMIT;
    return TROVE_OK;
}

int trove_capture_mark_used(const char *store_dir, const char *name, uint64_t unix_ns)
{
    char path[4096], dir[4096], tmp[4200], text[MARKER_MAX];
    int fd = -1, rc, len, have_tmp = 0;

    TROVE_TRY(rc, marker_path(store_dir, name, path, sizeof path));
    if ((size_t)snprintf(dir, sizeof dir, "%s/markers", store_dir) >= sizeof dir ||
        (size_t)snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir) >= sizeof tmp) {
        rc = TROVE_ERR_LIMIT;
        goto out;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        rc = -errno;
        goto out;
    }
    if ((fd = mkstemp(tmp)) < 0) {
        rc = -errno;
        goto out;
    }
    have_tmp = 1;
    len = snprintf(text, sizeof text, "%" PRIu64 "\n", unix_ns);
    if (write(fd, text, (size_t)len) != len) {
        rc = errno ? -errno : -EIO;
        goto out;
    }
    if (fchmod(fd, 0644) != 0 || close(fd) != 0) {
        fd = -1;
        rc = -errno;
        goto out;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        rc = -errno;
        goto out;
    }
    have_tmp = 0;
    rc = TROVE_OK;
out:
    if (fd >= 0)
        close(fd);
    if (have_tmp)
        unlink(tmp);
    return rc;
}

int trove__capture_marker_parse(const uint8_t *buf, size_t len, uint64_t *unix_ns_out)
{
    uint64_t v = 0;

    *unix_ns_out = 0;
    /* 1..20 digits and one newline, nothing else; no sign, no space, no overflow. */
    if (len < 2 || len > MARKER_MAX || buf[len - 1] != '\n')
        return TROVE_ERR_CORRUPT;
    for (size_t i = 0; i + 1 < len; i++) {
        unsigned d = (unsigned)buf[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return TROVE_ERR_CORRUPT;
        v = v * 10 + d;
    }
    *unix_ns_out = v;
    return TROVE_OK;
}

int trove_capture_last_used(const char *store_dir, const char *name, uint64_t *unix_ns_out)
{
    char path[4096];
    uint8_t text[MARKER_MAX + 1];
    ssize_t n;
    int fd = -1, rc;

    if (!unix_ns_out) {
        rc = TROVE_ERR_INVALID;
        goto out;
    }
    *unix_ns_out = 0;
    TROVE_TRY(rc, marker_path(store_dir, name, path, sizeof path));
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
        goto out;
    }
    if ((n = read(fd, text, sizeof text)) < 0) { /* one byte more than a marker: too long */
        rc = -errno;
        goto out;
    }
    rc = trove__capture_marker_parse(text, (size_t)n, unix_ns_out);
out:
    if (fd >= 0)
        close(fd);
    return rc;
}
