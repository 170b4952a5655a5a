/*
 * backend_fs.c: the local filesystem object backend (include/trove/store.h).
 *
 *   dir/objects/<h0h1>/<32 hex>   one file per object, named by its lowercase hex digest,
 *                                 under a fan-out directory named by the first two digits
 *   dir/tmp/<pid>-<n>-<rand>.tmp  objects being written; anything here after a crash is
 *                                 garbage and is removed by the next open
 *   dir/quarantine/<32 hex>       a record (one line of text) that the stored bytes of that
 *                                 object were found not to hash to its name; made on the
 *                                 first damage found, even by a read-only handle
 *                                 (fs_quarantine.c)
 *   dir/quarantine/<pid>-...tmp   a record being written (fsync'd, then renamed); a dead
 *                                 writer's is removed by the next writable open
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
#define _GNU_SOURCE /* d_type and DT_* in struct dirent; syncfs */

#include "backend_internal.h"
#include "common/alloc.h"
#include "common/beneath.h"
#include "common/fail.h"
#include "common/io.h"
#include "pack.h"
#include "refmap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static int fsync_dir_at(int at, const char *name)
{
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc;
    if (fd < 0)
        return -errno;
    rc = trove__fs_fsync_dir_fd(fd);
    close(fd);
    return rc;
}

static int ensure_dir_at(int at, const char *name) { return trove__fs_ensure_dir(at, name, 1); }

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
    char *p = trove__malloc(len + 1);
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

/* Append exactly n bytes from fd to out (room already reserved). A file shorter than its
 * fstat size — impossible for an immutable object unless something else truncated it —
 * is TROVE_ERR_TRUNCATED. */
static int read_exact(int fd, struct trove_bytes *out, size_t n)
{
    while (n > 0) {
        ssize_t r = trove__io_read(fd, out->ptr + out->len, n < FS_IO_CHUNK ? n : FS_IO_CHUNK);
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
    trove__fs_object_name(d, fan, rel);
    *created_out = 0;
    /* Fast path for deduplicated data: the object is there, skip writing it. The fsync
     * makes "durable on return" hold even if a concurrent put linked it a moment ago. */
    if (fstatat(be->objects_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        rc = be->nosync ? TROVE_OK : fsync_dir_at(be->objects_fd, fan);
        goto out;
    }
    if (errno != ENOENT) {
        rc = -errno;
        goto out;
    }
    rc = ensure_dir_at(be->objects_fd, fan);
    if (rc != TROVE_OK)
        goto out;
    if ((fd = trove__fs_temp_open(be->tmp_fd, tmp)) < 0) {
        rc = fd;
        goto out;
    }
    have_tmp = 1;
    rc = trove__fs_write_all(fd, data, len);
    if (rc != TROVE_OK)
        goto out;
    if (!be->nosync && trove__io_fsync(fd) != 0) {
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
    if (trove__io_linkat(be->tmp_fd, tmp, be->objects_fd, rel, 0) == 0)
        *created_out = 1;
    else if (errno != EEXIST) {
        rc = -errno;
        goto out;
    }
    trove__io_unlinkat(be->tmp_fd, tmp, 0); /* if this fails, the next open removes it */
    have_tmp = 0;
    rc = be->nosync ? TROVE_OK : fsync_dir_at(be->objects_fd, fan);
out:
    if (fd >= 0)
        close(fd);
    if (have_tmp)
        trove__io_unlinkat(be->tmp_fd, tmp, 0);
    return rc;
}

static void dead_name(const char *pack, char out[64]);
static int packed_find_fresh(struct fs_backend *be, const struct trove_digest *d, uint32_t *p,
                             uint64_t *off, uint64_t *len);

/* The pack entry of d, under mu; 0 if d is not packed. */
static int packed_find(struct fs_backend *be, const struct trove_digest *d, uint32_t *pack,
                       uint64_t *off, uint64_t *len)
{
    const struct ref_entry *e;
    int found = 0;

    pthread_mutex_lock(&be->mu);
    if ((e = trove__refmap_find(&be->packed, d)) != NULL) {
        *pack = e->dict_index;
        *off = e->committed;
        *len = e->len;
        found = 1;
    }
    pthread_mutex_unlock(&be->mu);
    return found;
}

/* Add pack number p's entries to the map (an object already known keeps its place). */
static int packed_add(struct fs_backend *be, uint32_t p, const struct trove__pack_entry *e,
                      size_t n)
{
    int rc = TROVE_OK;

    pthread_mutex_lock(&be->mu);
    if (trove__refmap_reserve(&be->packed, n) != TROVE_OK) /* one resize, not log n */
        n = 0, rc = TROVE_ERR_NOMEM;
    for (size_t k = 0; k < n; k++) {
        int created;
        struct ref_entry *x = trove__refmap_insert(&be->packed, &e[k].d, &created);
        if (!x) {
            rc = TROVE_ERR_NOMEM;
            break;
        }
        if (!created)
            continue;
        x->dict_index = p;
        x->committed = e[k].offset;
        x->len = e[k].len;
        be->packs[p].live++;
        be->packs[p].live_bytes += e[k].len;
    }
    pthread_mutex_unlock(&be->mu);
    return rc;
}

static int new_pack_slot(struct fs_backend *be, const char *name, uint64_t total, uint32_t *out)
{
    if (be->npacks == be->cap_packs) {
        size_t cap = be->cap_packs ? be->cap_packs * 2 : 16;
        struct fs_pack *p = trove__realloc(be->packs, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        be->packs = p;
        be->cap_packs = cap;
    }
    memset(&be->packs[be->npacks], 0, sizeof be->packs[0]);
    snprintf(be->packs[be->npacks].name, sizeof be->packs[0].name, "%s", name);
    be->packs[be->npacks].total_bytes = total;
    *out = (uint32_t)be->npacks++;
    return TROVE_OK;
}

/*
 * Staged puts: the bytes are kept in memory; publish writes them all as one pack file —
 * a temp file in dir/tmp, fsync'd, linked into dir/objects/packs under a name made from
 * its index's digest, the directory fsync'd — so that a batch of small objects costs one
 * file and two fsyncs. A name still appears only after its bytes are durable.
 */
static int fs_stage(struct trove_backend *base, const struct trove_digest *d, const void *data,
                    size_t len)
{
    struct fs_backend *be = (struct fs_backend *)base;
    uint32_t pk;
    uint64_t off, plen;
    int created, rc;

    if (be->readonly)
        return TROVE_ERR_READONLY;
    /* Already packed: nothing to do. (A loose copy is not looked for: that would cost a
     * stat per object, and a second copy in a pack is harmless.) */
    if (packed_find(be, d, &pk, &off, &plen))
        return TROVE_OK;
    if (!trove__refmap_insert(&be->stage_set, d, &created))
        return TROVE_ERR_NOMEM;
    if (!created)
        return TROVE_OK;
    if (be->nstage == be->cap_stage) {
        size_t cap = be->cap_stage ? be->cap_stage * 2 : 256;
        struct trove__pack_entry *p = trove__realloc(be->stage_e, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        be->stage_e = p;
        be->cap_stage = cap;
    }
    be->stage_e[be->nstage].d = *d;
    be->stage_e[be->nstage].offset = be->stage_buf.len;
    be->stage_e[be->nstage].len = len;
    if ((rc = trove_bytes_append(&be->stage_buf, data, len)) != TROVE_OK)
        return rc;
    be->nstage++;
    return TROVE_OK;
}

static void stage_reset(struct fs_backend *be)
{
    be->stage_buf.len = 0;
    be->nstage = 0;
    trove__refmap_free(&be->stage_set);
}

static int ensure_packs_dir(struct fs_backend *be)
{
    int rc;

    if (be->packs_fd >= 0)
        return TROVE_OK;
    if ((rc = ensure_dir_at(be->objects_fd, "packs")) != TROVE_OK)
        return rc;
    be->packs_fd = openat(be->objects_fd, "packs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return be->packs_fd < 0 ? -errno : TROVE_OK;
}

/* Write buf as a new pack file holding entries e[0..n) (its index is appended here). */
static int write_pack(struct fs_backend *be, struct trove_bytes *buf,
                      const struct trove__pack_entry *e, size_t n)
{
    struct trove_digest name_d;
    char tmp[64], name[48], hex[33];
    uint64_t index_off = buf->len;
    uint32_t p;
    int fd = -1, rc;

    if ((rc = ensure_packs_dir(be)) != TROVE_OK || (rc = trove__pack_finish(buf, e, n)))
        return rc;
    trove_digest_of(buf->ptr + index_off, buf->len - index_off, &name_d);
    trove_digest_hex(&name_d, hex);
    snprintf(name, sizeof name, "%s.pack", hex);
    if ((fd = trove__fs_temp_open(be->tmp_fd, tmp)) < 0)
        return fd;
    rc = trove__fs_write_all(fd, buf->ptr, buf->len);
    if (rc == TROVE_OK && !be->nosync && trove__io_fsync(fd) != 0)
        rc = -errno;
    if (close(fd) != 0 && rc == TROVE_OK)
        rc = -errno;
    if (rc == TROVE_OK) {
        /* A pack of these very bytes may exist, with deletes in its dead list: the objects
         * are live again, so the list goes (before the new name, after the bytes). */
        char dead[64];
        dead_name(name, dead);
        if (trove__io_unlinkat(be->packs_fd, dead, 0) != 0 && errno != ENOENT)
            rc = -errno;
    }
    /* A pack of this name has this very index. It is these bytes, or a damaged copy of
     * them (a flipped byte in an object or in the index, which open skipped): these were
     * hashed as they were staged, so they replace it either way, atomically. */
    if (rc == TROVE_OK && trove__io_linkat(be->tmp_fd, tmp, be->packs_fd, name, 0) != 0 &&
        (errno != EEXIST || trove__io_renameat(be->tmp_fd, tmp, be->packs_fd, name) != 0))
        rc = -errno;
    trove__io_unlinkat(be->tmp_fd, tmp, 0);
    if (rc == TROVE_OK && !be->nosync)
        rc = trove__fs_fsync_dir_fd(be->packs_fd);
    for (size_t k = 0; rc == TROVE_OK && k < be->nbad; k++)
        if (strcmp(be->bad[k].name, name) == 0) /* replaced by good bytes: healed */
            be->bad[k] = be->bad[--be->nbad];
    if (rc == TROVE_OK) {
        pthread_mutex_lock(&be->mu);
        rc = new_pack_slot(be, name, buf->len, &p);
        pthread_mutex_unlock(&be->mu);
    }
    if (rc == TROVE_OK)
        rc = packed_add(be, p, e, n);
    buf->len = index_off;
    return rc;
}

static int fs_publish(struct trove_backend *base, uint64_t *overhead_out)
{
    struct fs_backend *be = (struct fs_backend *)base;
    int rc = TROVE_OK;

    if (be->nstage > 0) {
        rc = write_pack(be, &be->stage_buf, be->stage_e, be->nstage);
        *overhead_out = TROVE__PACK_ENTRY * (uint64_t)be->nstage + TROVE__PACK_FOOTER;
    }
    stage_reset(be);
    return rc;
}

/* Close pack p's kept descriptor, if one is (it is being unlinked). */
static void pack_forget_fd(struct fs_backend *be, uint32_t p)
{
    pthread_mutex_lock(&be->mu);
    for (unsigned k = 0; k < FS_PACK_FDS; k++)
        if (be->pack_fds.fd1[k] > 0 && be->pack_fds.p[k] == p) {
            close(be->pack_fds.fd1[k] - 1);
            be->pack_fds.fd1[k] = 0;
        }
    pthread_mutex_unlock(&be->mu);
}

/* Read len bytes at off of pack p into out (appended). */
static int pack_read(struct fs_backend *be, uint32_t p, uint64_t off, uint64_t len,
                     struct trove_bytes *out)
{
    struct fs_pack_fds *c = &be->pack_fds;
    unsigned k = 0;
    size_t got = 0;
    int rc;

    if ((rc = trove_bytes_reserve(out, (size_t)len)) != TROVE_OK)
        return rc;
    /* The pack's descriptor is opened once and kept (a few packs' at a time), and read
     * under the lock, so that unlinking the pack (which closes it) cannot pull it away
     * mid-read. A recipe load reads thousands of small objects from the page cache: a
     * path lookup, or a dup and close, each cost more than the read. */
    pthread_mutex_lock(&be->mu);
    while (k < FS_PACK_FDS && !(c->fd1[k] > 0 && c->p[k] == p))
        k++;
    if (k == FS_PACK_FDS) { /* a miss: open it into the next slot */
        int nfd = trove__open_beneath(be->packs_fd, be->packs[p].name, O_RDONLY, 0);
        if (nfd < 0) {
            rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
            goto out;
        }
        k = c->next;
        c->next = (c->next + 1) % FS_PACK_FDS;
        if (c->fd1[k] > 0)
            close(c->fd1[k] - 1);
        c->fd1[k] = nfd + 1;
        c->p[k] = p;
    }
    while (got < len) {
        ssize_t r = trove__io_pread(c->fd1[k] - 1, out->ptr + out->len + got,
                                    (size_t)(len - got), (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : TROVE_ERR_TRUNCATED;
            goto out;
        }
        got += (size_t)r;
    }
    out->len += got;
out:
    pthread_mutex_unlock(&be->mu);
    return rc;
}

static int fs_get(struct trove_backend *base, const struct trove_digest *d,
                  struct trove_bytes *out, size_t max_len)
{
    struct fs_backend *be = (struct fs_backend *)base;
    char fan[3], rel[36];
    struct stat st;
    int fd, rc = TROVE_OK;

    uint32_t p;
    uint64_t off, len;

    /* Packed first: the lookup is in memory, where a loose miss costs a path lookup, and
     * a recipe load reads thousands of packed objects. (A name is loose and packed at once
     * only if both hold its bytes: a heal deletes the packed copy before its put.) */
    if (packed_find(be, d, &p, &off, &len)) {
        if (len > (uint64_t)max_len)
            return TROVE_ERR_LIMIT;
        if ((rc = pack_read(be, p, off, len, out)) != TROVE_ERR_NOTFOUND)
            return rc;
        rc = TROVE_OK; /* the pack went (a repack moved it): look again below */
    }
    trove__fs_object_name(d, fan, rel);
    fd = trove__open_beneath(be->objects_fd, rel, O_RDONLY, 0);
    if (fd < 0) {
        rc = errno == ENOENT                    ? TROVE_ERR_NOTFOUND
             : errno == ELOOP || errno == EXDEV ? TROVE_ERR_CORRUPT /* a link: not ours */
                                                : -errno;
        if (rc == TROVE_ERR_NOTFOUND && (packed_find(be, d, &p, &off, &len) ||
                                         packed_find_fresh(be, d, &p, &off, &len)))
            rc = len > (uint64_t)max_len ? TROVE_ERR_LIMIT : pack_read(be, p, off, len, out);
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

    uint32_t p;
    uint64_t off;

    trove__fs_object_name(d, fan, rel);
    if (fstatat(be->objects_fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        int err = errno;
        if (err == ENOENT && (packed_find(be, d, &p, &off, len_out) ||
                              packed_find_fresh(be, d, &p, &off, len_out)))
            return TROVE_OK;
        return err == ENOENT ? TROVE_ERR_NOTFOUND : -err;
    }
    if (!S_ISREG(st.st_mode) || st.st_size < 0)
        return TROVE_ERR_CORRUPT;
    *len_out = (uint64_t)st.st_size;
    return TROVE_OK;
}

/* "<32 hex>.dead" for pack "<32 hex>.pack". */
static void dead_name(const char *pack, char out[64])
{
    snprintf(out, 64, "%.32s.dead", pack);
}

/* Append d to pack p's dead list, durably. */
static int dead_append(struct fs_backend *be, uint32_t p, const struct trove_digest *d)
{
    char name[64];
    int fd, rc = TROVE_OK;

    dead_name(be->packs[p].name, name);
    fd = trove__open_beneath(be->packs_fd, name, O_WRONLY | O_CREAT | O_APPEND, FS_FILE_MODE);
    if (fd < 0)
        return -errno;
    rc = trove__fs_write_all(fd, d->b, sizeof d->b);
    if (rc == TROVE_OK && !be->nosync && trove__io_fsync(fd) != 0)
        rc = -errno;
    close(fd);
    return rc;
}

/*
 * Delete a packed object: it leaves the index at once; its bytes go with its pack. A pack
 * with no live object left is unlinked; one whose live objects are under half its bytes is
 * rewritten — its live objects into a new pack, made durable, then the old one unlinked —
 * so garbage in packs stays bounded. Each delete is first appended to the pack's dead list
 * (packs/<hex>.dead, fsync'd), which open applies, so a delete is durable on return. A
 * crash during a repack leaves an object in two packs, which is harmless (either copy
 * serves, and the old pack's dead list still applies to it).
 */
static int packed_delete(struct fs_backend *be, const struct trove_digest *d)
{
    struct ref_entry *e;
    struct trove_bytes buf = {0};
    struct trove__pack_entry *live = NULL;
    size_t nlive = 0;
    uint32_t p;
    int rc = TROVE_OK, unlink_pack = 0, repack = 0;

    pthread_mutex_lock(&be->mu);
    if (!(e = trove__refmap_find(&be->packed, d))) {
        pthread_mutex_unlock(&be->mu);
        return TROVE_ERR_NOTFOUND;
    }
    p = e->dict_index;
    be->packs[p].live--;
    be->packs[p].live_bytes -= e->len;
    trove__refmap_remove(&be->packed, e);
    unlink_pack = be->packs[p].live == 0;
    repack = !unlink_pack && be->packs[p].live_bytes * 2 < be->packs[p].total_bytes;
    if (repack && !(live = trove__malloc(be->packs[p].live * sizeof *live)))
        repack = 0; /* no memory to repack now: the garbage waits for the next delete */
    if (repack) /* the live objects of p, from the index */
        for (size_t k = 0; k < be->packed.cap; k++)
            if (be->packed.tab[k].used && be->packed.tab[k].dict_index == p) {
                live[nlive].d = be->packed.tab[k].d;
                live[nlive].offset = be->packed.tab[k].committed;
                live[nlive].len = be->packed.tab[k].len;
                nlive++;
            }
    pthread_mutex_unlock(&be->mu);
    /* The delete is durable before it is acted on: the digest joins the pack's dead list,
     * which open reads back. Repacking or unlinking the pack makes the list moot. */
    if (!unlink_pack && (rc = dead_append(be, p, d)) != TROVE_OK) {
        free(live);
        return rc;
    }
    if (repack) {
        /* Copy them into a new pack, then move their index entries there. */
        struct trove__pack_entry *moved = trove__malloc(nlive * sizeof *moved + 1);
        for (size_t k = 0; moved && k < nlive && rc == TROVE_OK; k++) {
            moved[k] = live[k];
            moved[k].offset = buf.len;
            rc = pack_read(be, p, live[k].offset, live[k].len, &buf);
        }
        if (moved && rc == TROVE_OK) {
            pthread_mutex_lock(&be->mu);
            for (size_t k = 0; k < nlive; k++) /* write_pack adds them back, elsewhere */
                if ((e = trove__refmap_find(&be->packed, &live[k].d)) != NULL)
                    trove__refmap_remove(&be->packed, e);
            be->packs[p].live = 0;
            be->packs[p].live_bytes = 0;
            pthread_mutex_unlock(&be->mu);
            if (write_pack(be, &buf, moved, nlive) == TROVE_OK)
                unlink_pack = 1;
            else if (packed_add(be, p, live, nlive) != TROVE_OK) /* back where they are */
                unlink_pack = 0;
        }
        free(moved);
        rc = TROVE_OK; /* a failed repack leaves the garbage in place: still correct */
    }
    if (unlink_pack) {
        char dead[64];
        pack_forget_fd(be, p);
        dead_name(be->packs[p].name, dead);
        if (trove__io_unlinkat(be->packs_fd, be->packs[p].name, 0) != 0 && errno != ENOENT)
            rc = -errno;
        /* a dead list without its pack is also removed at open */
        trove__io_unlinkat(be->packs_fd, dead, 0);
        if (rc == TROVE_OK && !be->nosync)
            rc = trove__fs_fsync_dir_fd(be->packs_fd);
    }
    free(live);
    trove_bytes_free(&buf);
    return rc;
}

static int fs_delete(struct trove_backend *base, const struct trove_digest *d)
{
    struct fs_backend *be = (struct fs_backend *)base;
    char fan[3], rel[36];

    if (be->readonly)
        return TROVE_ERR_READONLY;
    trove__fs_object_name(d, fan, rel);
    if (trove__io_unlinkat(be->objects_fd, rel, 0) != 0) {
        if (errno == ENOENT)
            return packed_delete(be, d);
        return -errno;
    }
    return be->nosync ? TROVE_OK : fsync_dir_at(be->objects_fd, fan);
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
        int fd = openat(be->objects_fd, fan, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
    /* Then the packed objects, from a copy of the index taken under the lock. */
    {
        struct trove_digest *all = NULL;
        size_t n = 0;
        pthread_mutex_lock(&be->mu);
        if (be->packed.count > 0 && !(all = trove__malloc(be->packed.count * sizeof *all)))
            rc = TROVE_ERR_NOMEM;
        for (size_t k = 0; all && k < be->packed.cap; k++)
            if (be->packed.tab[k].used)
                all[n++] = be->packed.tab[k].d;
        pthread_mutex_unlock(&be->mu);
        for (size_t k = 0; rc == TROVE_OK && k < n; k++) {
            char fan[3], rel[36];
            struct stat st;
            trove__fs_object_name(&all[k], fan, rel);
            if (fstatat(be->objects_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0)
                continue; /* also loose: listed already */
            rc = fn(ctx, &all[k]);
        }
        free(all);
    }
out:
    if (dp)
        closedir(dp);
    return rc;
}

/* Remove from e[0..n) the entries pack's dead list names; the new count. A partial last
 * record (a crash mid-append) is ignored: that delete did not return. */
static uint64_t drop_dead(struct fs_backend *be, const char *pack, struct trove__pack_entry *e,
                          uint64_t n)
{
    char name[64];
    struct stat st;
    uint8_t *dead = NULL;
    size_t nd;
    int fd;

    dead_name(pack, name);
    if ((fd = trove__open_beneath(be->packs_fd, name, O_RDONLY, 0)) < 0)
        return n;
    if (fstat(fd, &st) == 0 && st.st_size >= 16 && (uint64_t)st.st_size <= 32 * n + 16 &&
        (dead = trove__malloc((size_t)st.st_size)) != NULL &&
        trove__io_pread(fd, dead, (size_t)st.st_size, 0) == st.st_size) {
        nd = (size_t)st.st_size / 16;
        for (uint64_t k = 0; k < n;) {
            int gone = 0;
            for (size_t j = 0; j < nd && !gone; j++)
                gone = memcmp(dead + 16 * j, e[k].d.b, 16) == 0;
            if (gone)
                e[k] = e[--n];
            else
                k++;
        }
    }
    free(dead);
    close(fd);
    return n;
}

/* Read and check pack `name`'s footer and index into *e_out (malloc'd) and *count_out.
 * Errors: TROVE_ERR_NOMEM, -errno (opening it), or the check that failed, with why. */
static int pack_read_index(struct fs_backend *be, const char *name,
                           struct trove__pack_entry **e_out, uint64_t *count_out,
                           uint64_t *size_out, char *why, size_t whylen)
{
    uint8_t foot[TROVE__PACK_FOOTER], *tail = NULL;
    struct trove__pack_entry *e = NULL;
    struct trove_diag diag = {0};
    uint64_t count, index;
    struct stat st;
    size_t tl;
    int pf, rc;

    *e_out = NULL;
    if ((pf = trove__open_beneath(be->packs_fd, name, O_RDONLY, 0)) < 0)
        return -errno;
    if (fstat(pf, &st) != 0) {
        rc = -errno;
        goto out;
    }
    if (st.st_size < TROVE__PACK_FOOTER ||
        trove__io_pread(pf, foot, sizeof foot, st.st_size - TROVE__PACK_FOOTER) !=
            (ssize_t)sizeof foot) {
        rc = TROVE_FAIL(&diag, TROVE_ERR_TRUNCATED, 0, "shorter than its footer");
        goto out;
    }
    if ((rc = trove__pack_footer(foot, (uint64_t)st.st_size, &count, &index, &diag)))
        goto out;
    tl = (size_t)(count * TROVE__PACK_ENTRY + TROVE__PACK_FOOTER);
    if (!(tail = trove__malloc(tl)) || !(e = trove__malloc(count * sizeof *e + 1))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if (trove__io_pread(pf, tail, tl, (off_t)index) != (ssize_t)tl) {
        rc = TROVE_FAIL(&diag, TROVE_ERR_TRUNCATED, 0, "its index cannot be read whole");
        goto out;
    }
    if ((rc = trove__pack_index(tail, count, index, e, &diag)) != TROVE_OK)
        goto out;
    *e_out = e;
    *count_out = count;
    *size_out = (uint64_t)st.st_size;
    e = NULL;
out:
    snprintf(why, whylen, "%.255s", diag.msg[0] ? diag.msg : trove_strerror(rc));
    free(tail);
    free(e);
    close(pf);
    return rc;
}

static int note_bad_pack(struct fs_backend *be, const char *name, const char *why)
{
    struct fs_bad_pack *p = trove__realloc(be->bad, (be->nbad + 1) * sizeof *p);

    if (!p)
        return TROVE_ERR_NOMEM;
    be->bad = p;
    snprintf(p[be->nbad].name, sizeof p->name, "%s", name);
    snprintf(p[be->nbad].why, sizeof p->why, "%s", why);
    be->nbad++;
    return TROVE_OK;
}

/* Load the index of every pack in dir/objects/packs. A pack that fails its checks is
 * skipped — its objects are absent, which verify reports for any recipe naming them — and
 * noted (fs_unreadable), so that verify can name it and gc remove it. */
static int pack_known(struct fs_backend *be, const char *name)
{
    int known = 0;

    pthread_mutex_lock(&be->mu);
    for (size_t k = 0; k < be->npacks && !known; k++)
        known = strcmp(be->packs[k].name, name) == 0;
    pthread_mutex_unlock(&be->mu);
    for (size_t k = 0; k < be->nbad && !known; k++)
        known = strcmp(be->bad[k].name, name) == 0;
    return known;
}

/* load_packs at open (fresh 0), or again for the packs written since (fresh 1: a reader
 * beside a writer, which commits new packs while the reader is open). Readers call it on a
 * miss, from any thread: refresh_mu makes them take turns. */
struct loaded_pack {
    char name[48];
    struct trove__pack_entry *e;
    uint64_t count, size;
};

static int load_packs_from(struct fs_backend *be, int fresh)
{
    DIR *dp;
    struct dirent *de;
    struct loaded_pack *l = NULL;
    size_t nl = 0, capl = 0;
    uint64_t total = 0;
    int fd, rc = TROVE_OK;

    if (be->packs_fd < 0) {
        if ((fd = openat(be->objects_fd, "packs",
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            return errno == ENOENT ? TROVE_OK : -errno;
        be->packs_fd = fd;
    }
    if ((fd = openat(be->packs_fd, ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return -errno;
    if (!(dp = fdopendir(fd))) {
        close(fd);
        return -errno;
    }
    /* Every index first, then one table for all their entries: a table grown pack by pack
     * rehashes everything already in it each time it doubles. */
    while (rc == TROVE_OK && (de = readdir(dp)) != NULL) {
        struct loaded_pack *x;
        size_t len = strlen(de->d_name);
        char why[256];
        int r;
        if (len != 37 || strcmp(de->d_name + 32, ".pack") != 0)
            continue;
        if (fresh && pack_known(be, de->d_name))
            continue;
        if (nl == capl) {
            size_t cap = capl ? capl * 2 : 16;
            struct loaded_pack *q = trove__realloc(l, cap * sizeof *q);
            if (!q) {
                rc = TROVE_ERR_NOMEM;
                break;
            }
            l = q;
            capl = cap;
        }
        x = &l[nl];
        memset(x, 0, sizeof *x);
        r = pack_read_index(be, de->d_name, &x->e, &x->count, &x->size, why, sizeof why);
        if (r == TROVE_ERR_NOMEM) {
            rc = r;
        } else if (r == -ENOENT) {
            ; /* gone since the listing */
        } else if (r != TROVE_OK) {
            rc = note_bad_pack(be, de->d_name, why);
        } else {
            x->count = drop_dead(be, de->d_name, x->e, x->count);
            memcpy(x->name, de->d_name, len + 1); /* 37 bytes and the NUL: checked above */
            total += x->count;
            nl++;
            continue;
        }
        free(x->e);
    }
    closedir(dp);
    if (rc == TROVE_OK && total > 0) {
        pthread_mutex_lock(&be->mu);
        rc = trove__refmap_reserve(&be->packed, (size_t)total);
        pthread_mutex_unlock(&be->mu);
    }
    for (size_t k = 0; k < nl; k++) {
        uint32_t p;
        if (rc == TROVE_OK) {
            pthread_mutex_lock(&be->mu);
            rc = new_pack_slot(be, l[k].name, l[k].size, &p);
            pthread_mutex_unlock(&be->mu);
            if (rc == TROVE_OK)
                rc = packed_add(be, p, l[k].e, (size_t)l[k].count);
        }
        free(l[k].e);
    }
    free(l);
    return rc;
}

static int load_packs(struct fs_backend *be)
{
    return load_packs_from(be, 0);
}

/* A read-only handle missed d: look for packs committed since it opened. 1 if d is
 * packed now (its place in *p, *off, *len). */
static int packed_find_fresh(struct fs_backend *be, const struct trove_digest *d, uint32_t *p,
                             uint64_t *off, uint64_t *len)
{
    int found;

    if (!be->readonly)
        return 0; /* the one writer made every pack it has not loaded itself */
    pthread_mutex_lock(&be->refresh_mu);
    found = packed_find(be, d, p, off, len) ||
            (load_packs_from(be, 1) == TROVE_OK && packed_find(be, d, p, off, len));
    pthread_mutex_unlock(&be->refresh_mu);
    return found;
}

static int fs_unreadable(struct trove_backend *base, int remove,
                         int (*fn)(void *ctx, const char *name, const char *why), void *ctx)
{
    struct fs_backend *be = (struct fs_backend *)base;
    int rc = TROVE_OK;

    if (remove && be->readonly)
        return TROVE_ERR_READONLY;
    for (size_t k = 0; k < be->nbad;) {
        struct trove__pack_entry *e = NULL;
        uint64_t count, size;
        char rel[64], why[256];
        int r;
        snprintf(rel, sizeof rel, "objects/packs/%s", be->bad[k].name);
        if (fn(ctx, rel, be->bad[k].why) != 0)
            break;
        if (!remove) {
            k++;
            continue;
        }
        /* Look again before deleting: a pack that reads now is kept (and served from the
         * next open on). */
        r = pack_read_index(be, be->bad[k].name, &e, &count, &size, why, sizeof why);
        free(e);
        if (r == TROVE_ERR_NOMEM)
            return r;
        if (r != TROVE_OK && r != -ENOENT &&
            trove__io_unlinkat(be->packs_fd, be->bad[k].name, 0) != 0 && errno != ENOENT) {
            rc = -errno;
            break;
        }
        be->bad[k] = be->bad[--be->nbad];
    }
    if (rc == TROVE_OK && remove && !be->nosync && be->packs_fd >= 0)
        rc = trove__fs_fsync_dir_fd(be->packs_fd);
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

/* Remove the orphans of crashed puts from dir/tmp (or, only_tmp_names, the files named
 *.tmp, as the quarantine's records being written). Best effort: what cannot be removed
 * now is harmless and is retried at the next open. */
static void clean_tmp(int tmp_fd, int only_tmp_names)
{
    int fd = openat(tmp_fd, ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;

    if (!dp) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while ((de = readdir(dp)) != NULL) {
        size_t len = strlen(de->d_name);
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            (only_tmp_names && (len <= 4 || strcmp(de->d_name + len - 4, ".tmp") != 0)))
            continue;
        if (temp_is_stale(tmp_fd, de->d_name))
            trove__io_unlinkat(tmp_fd, de->d_name, 0);
    }
    closedir(dp);
}

static void fs_close(struct trove_backend *base)
{
    struct fs_backend *be = (struct fs_backend *)base;
    trove__fs_flush(base); /* puts never flushed land, as a put would have (best effort) */
    trove__fs_defer_drop(be);
    pthread_mutex_destroy(&be->defer_mu);
    if (atomic_load(&be->quarantine_fd) >= 0)
        close(atomic_load(&be->quarantine_fd));
    if (be->root_fd >= 0)
        close(be->root_fd);
    /* Staged and never published: dropped (they were only in memory). */
    trove_bytes_free(&be->stage_buf);
    free(be->stage_e);
    trove__refmap_free(&be->stage_set);
    trove__refmap_free(&be->packed);
    for (unsigned k = 0; k < FS_PACK_FDS; k++)
        if (be->pack_fds.fd1[k] > 0)
            close(be->pack_fds.fd1[k] - 1);
    free(be->packs);
    free(be->bad);
    if (be->packs_fd >= 0)
        close(be->packs_fd);
    pthread_mutex_destroy(&be->mu);
    pthread_mutex_destroy(&be->refresh_mu);
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
    .stage = fs_stage,
    .publish = fs_publish,
    .quarantine = trove__fs_quarantine,
    .quarantined = trove__fs_quarantined,
    .release = trove__fs_release,
    .quarantine_list = trove__fs_quarantine_list,
    .unreadable = fs_unreadable,
    .defer_put = trove__fs_defer_put,
    .defer_put_from = trove__fs_defer_put_from,
    .flush = trove__fs_flush,
    .close = fs_close,
};

static int fs_open(const char *dir, unsigned flags, struct trove_backend **out)
{
    struct fs_backend *be = NULL;
    int root = -1, rc = TROVE_OK, readonly = (flags & TROVE_BACKEND_READONLY) != 0;
    size_t len;

    if (!out || (flags & ~(TROVE_BACKEND_READONLY | TROVE_BACKEND_NOSYNC | TROVE_BACKEND_NOVERIFY)))
        return TROVE_ERR_INVALID;
    *out = NULL;
    if (!dir || !*dir)
        return TROVE_ERR_INVALID;
    len = strnlen(dir, FS_PATH_MAX + 1);
    if (len > FS_PATH_MAX)
        return -ENAMETOOLONG;
    if (!readonly && (rc = mkdir_p(dir, len)) != TROVE_OK)
        goto out;
    root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* DIR itself may be a link */
    if (root < 0) {
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
        goto out;
    }
    if (!readonly && ((rc = ensure_dir_at(root, "objects")) != TROVE_OK ||
                      (rc = ensure_dir_at(root, "tmp")) != TROVE_OK))
        goto out;
    be = trove__calloc(1, sizeof *be);
    if (!be) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    be->base.ops = &fs_ops;
    be->packs_fd = -1;
    be->root_fd = -1;
    atomic_init(&be->quarantine_fd, -1);
    pthread_mutex_init(&be->mu, NULL);
    pthread_mutex_init(&be->refresh_mu, NULL);
    pthread_mutex_init(&be->defer_mu, NULL);
    be->readonly = readonly;
    be->nosync = (flags & TROVE_BACKEND_NOSYNC) != 0;
    be->base.no_verify = (flags & TROVE_BACKEND_NOVERIFY) != 0;
    be->tmp_fd = -1;
    be->objects_fd = openat(root, "objects", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (be->objects_fd < 0) {
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
        goto out;
    }
    if (!readonly) {
        be->tmp_fd = openat(root, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (be->tmp_fd < 0) {
            rc = -errno;
            goto out;
        }
        clean_tmp(be->tmp_fd, 0);
    }
    if ((rc = load_packs(be)) != TROVE_OK)
        goto out;
    atomic_store(&be->quarantine_fd,
                 openat(root, "quarantine", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!readonly && atomic_load(&be->quarantine_fd) >= 0)
        clean_tmp(atomic_load(&be->quarantine_fd), 1); /* records (32 hex) never match */
    be->root_fd = root;
    root = -1;
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
    return fs_open(dir, TROVE_BACKEND_READONLY, out);
}

int trove_backend_fs_open_flags(const char *dir, unsigned flags, struct trove_backend **out)
{
    return fs_open(dir, flags, out);
}
