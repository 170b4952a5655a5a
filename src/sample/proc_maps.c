/*
 * proc_maps.c: a process as /proc shows it — its mappings, threads and thread names
 * (proc_maps.h).
 *
 * /proc/PID/maps is text the kernel writes, one mapping a line:
 *
 *   55d4c0a00000-55d4c0a02000 r-xp 00002000 fe:01 1234567       /usr/bin/cat
 *   START        END          PERMS OFFSET MAJ:MIN INODE        PATH (may hold spaces,
 *                                                                may end " (deleted)")
 *
 * The parser takes hexadecimal fields of at most 16 digits and a decimal inode of at most
 * 20, and checks START < END; the path is the rest of the line after the inode's padding.
 * A file is read whole (up to 64 MiB: a process with a million mappings) before it is
 * parsed, since the kernel produces it a page at a time and a mapping can change between
 * reads; lines that do not parse are skipped.
 */
#define _GNU_SOURCE /* O_DIRECTORY, and dirent's d_name on every libc */
#include "proc_maps.h"
#include "common/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAPS_MAX (64u << 20)

/* Parse hex digits at s[*i..len) up to stop (or the end): at most 16, at least 1. */
static int hex_field(const char *s, size_t len, size_t *i, char stop, uint64_t *out)
{
    uint64_t v = 0;
    size_t k = 0;
    for (; *i < len && s[*i] != stop; (*i)++, k++) {
        char c = s[*i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0 || k == 16)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    if (k == 0)
        return -1;
    *out = v;
    return 0;
}

int trove__maps_parse_line(const char *s, size_t len, struct trove__maps_line *out)
{
    size_t i = 0;
    uint64_t maj, min, inode = 0;
    int digits = 0;

    memset(out, 0, sizeof *out);
    if (hex_field(s, len, &i, '-', &out->start) || i >= len || s[i++] != '-' ||
        hex_field(s, len, &i, ' ', &out->end) || i >= len || s[i++] != ' ')
        return TROVE_ERR_CORRUPT;
    if (out->end <= out->start || len - i < 5 || s[i + 4] != ' ')
        return TROVE_ERR_CORRUPT;
    memcpy(out->perms, s + i, 4);
    i += 5;
    if (hex_field(s, len, &i, ' ', &out->offset) || i >= len || s[i++] != ' ' ||
        hex_field(s, len, &i, ':', &maj) || i >= len || s[i++] != ':' ||
        hex_field(s, len, &i, ' ', &min) || i >= len || s[i++] != ' ' || maj > UINT32_MAX ||
        min > UINT32_MAX)
        return TROVE_ERR_CORRUPT;
    out->dev_major = (uint32_t)maj;
    out->dev_minor = (uint32_t)min;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (inode > (UINT64_MAX - d) / 10)
            return TROVE_ERR_CORRUPT;
        inode = inode * 10 + d;
    }
    if (!digits || (i < len && s[i] != ' '))
        return TROVE_ERR_CORRUPT;
    out->inode = inode;
    while (i < len && s[i] == ' ')
        i++;
    out->path = s + i;
    out->path_len = len - i;
    return TROVE_OK;
}

int trove__maps_is_module(const char *perms, const char *path, size_t path_len)
{
    if (perms[2] != 'x' || path_len == 0)
        return 0;
    return path[0] == '/' || (path_len == 6 && !memcmp(path, "[vdso]", 6));
}

/* The whole file at path into b (emptied first). 0 or -errno (-EFBIG past MAPS_MAX). */
static int read_all(const char *path, struct trove_bytes *b)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
    b->len = 0;
    if (fd < 0)
        return -errno;
    for (;;) {
        ssize_t n;
        if (b->len >= MAPS_MAX) {
            rc = -EFBIG;
            break;
        }
        if (trove_bytes_reserve(b, 65536) != TROVE_OK) {
            rc = TROVE_ERR_NOMEM;
            break;
        }
        n = read(fd, b->ptr + b->len, 65536);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0)
            break;
        b->len += (size_t)n;
    }
    close(fd);
    return rc;
}

int trove__proc_maps_load(uint32_t pid, struct trove_sample_set *set, struct trove__spaces *sp,
                          uint64_t *added)
{
    struct trove_bytes text = {0};
    char path[4200], file[4096];
    uint64_t n_added = 0;
    int rc;

    snprintf(path, sizeof path, "/proc/%" PRIu32 "/maps", pid);
    if ((rc = read_all(path, &text)) != 0)
        goto out;
    for (size_t at = 0; at < text.len;) {
        const char *line = (const char *)text.ptr + at;
        const char *nl = memchr(line, '\n', text.len - at);
        size_t len = nl ? (size_t)(nl - line) : text.len - at;
        struct trove__maps_line m;
        uint8_t bid[TROVE_SAMPLE_BUILD_ID_MAX];
        size_t bid_len = 0;
        uint32_t module;

        at += len + (nl != NULL);
        if (trove__maps_parse_line(line, len, &m) != TROVE_OK ||
            !trove__maps_is_module(m.perms, m.path, m.path_len) || m.path_len >= sizeof file)
            continue;
        memcpy(file, m.path, m.path_len);
        file[m.path_len] = 0;
        if (file[0] == '/') {
            snprintf(path, sizeof path, "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, pid,
                     m.start, m.end);
            if (!(bid_len = trove__elf_build_id(path, bid, sizeof bid))) {
                snprintf(path, sizeof path, "/proc/%" PRIu32 "/root%s", pid, file);
                if (!(bid_len = trove__elf_build_id(path, bid, sizeof bid)))
                    bid_len = trove__elf_build_id(file, bid, sizeof bid);
            }
        }
        if ((rc = trove_sample_set_module(set, file, bid, bid_len, &module)) != TROVE_OK ||
            (rc = trove__spaces_map(sp, pid, m.start, m.end, m.offset, module)) != TROVE_OK)
            goto out;
        n_added++;
    }
    rc = TROVE_OK;
out:
    trove_bytes_free(&text);
    if (added)
        *added = n_added;
    return rc;
}

int trove__proc_tasks(uint32_t pid, uint32_t **tids, size_t *n)
{
    char path[64];
    DIR *d;
    struct dirent *e;
    uint32_t *v = NULL;
    size_t k = 0, cap = 0;
    int rc = TROVE_OK;

    snprintf(path, sizeof path, "/proc/%" PRIu32 "/task", pid);
    if (!(d = opendir(path)))
        return -errno;
    while ((e = readdir(d)) != NULL) {
        char *end;
        unsigned long t;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        errno = 0;
        t = strtoul(e->d_name, &end, 10);
        if (*end || errno || t == 0 || t > UINT32_MAX)
            continue;
        if (k == cap) {
            size_t c = cap ? cap * 2 : 16;
            uint32_t *q = trove__realloc(v, c * sizeof *q);
            if (!q) {
                rc = TROVE_ERR_NOMEM;
                break;
            }
            v = q;
            cap = c;
        }
        v[k++] = (uint32_t)t;
    }
    closedir(d);
    if (rc != TROVE_OK) {
        free(v);
        return rc;
    }
    *tids = v;
    *n = k;
    return TROVE_OK;
}

int trove__proc_comm(uint32_t pid, uint32_t tid, char *buf, size_t cap)
{
    char path[96];
    ssize_t n;
    int fd;
    if (cap == 0)
        return -1;
    snprintf(path, sizeof path, "/proc/%" PRIu32 "/task/%" PRIu32 "/comm", pid, tid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0)
        return -1;
    if (buf[n - 1] == '\n')
        n--;
    buf[n] = 0;
    return 0;
}

int trove__proc_alive(uint32_t pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    int ok = 0;
    if (pid == 0 || pid > INT32_MAX || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
        return 0;
    snprintf(path, sizeof path, "/proc/%" PRIu32 "/stat", pid);
    if (!(f = fopen(path, "re")))
        return 0;
    /* "PID (COMM) STATE ...": COMM may hold anything, so the state follows the last ')'. */
    if (fgets(buf, sizeof buf, f) && (p = strrchr(buf, ')')) && p[1] == ' ')
        ok = p[2] != 'Z' && p[2] != 'X';
    fclose(f);
    return ok;
}
