/*
 * store.c: the store's low level — its directory and lock, the reference counts and their
 * file DIR/refs, and the committed recipe files: reading, publishing, removing and listing
 * them (include/trove/volume.h). recipe_io.c and volume.c build on it; the operations on
 * the store as a whole (open and close, recount, snapshot, remove, verify, gc) are the
 * store's high level, store_*.c, above both. Nothing here loads a volume, so this file
 * calls nothing of theirs.
 *
 * Ground truth is the set of committed recipes in DIR/volumes. Everything else is derived
 * from them and may be rebuilt: DIR/refs persists the committed reference counts so that an
 * open does not read every recipe, and it names the recipe states it was counted from (the
 * basis: each recipe's name, generation and trailing checksum). Open compares the basis with
 * the recipe files (two small reads per recipe); any difference — a crash between a
 * recipe's rename and the refs file's, a refs file that is missing or fails its checks —
 * means the counts are recounted from the recipes (store_recount.c). So a crash can leave
 * the refs file stale but never wrong in a way that is trusted.
 *
 * Files are published by write-new-then-rename: a temp file in the same directory (names
 * starting with ".tmp-", which no volume name may), fsync, rename over the old name, fsync
 * of the directory. Objects are made durable by the backend before any recipe names them.
 */
#include "store_internal.h"
#include "common/alloc.h"
#include "common/fail.h"
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
#define REFS_NAME "refs"
#define REFS_TMP ".tmp-refs"
#define DIR_MODE 0755
#define FILE_MODE 0644
#define IO_CHUNK ((size_t)1 << 30)
#define DICT_SLACK (1u << 20) /* free dict indices accepted in a refs file beyond its entries */

/* ---- reference counts ----------------------------------------------------------- */

static int dict_alloc(struct trove_store *s, uint32_t *out)
{
    if (s->nfree > 0) {
        *out = s->free_idx[--s->nfree];
        return TROVE_OK;
    }
    if (s->dict_size == UINT32_MAX)
        return TROVE_ERR_LIMIT;
    *out = s->dict_size++;
    return TROVE_OK;
}

static int dict_release(struct trove_store *s, uint32_t idx)
{
    if (s->nfree == s->cap_free) {
        size_t cap = s->cap_free ? s->cap_free * 2 : 64;
        uint32_t *p = trove__realloc(s->free_idx, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        s->free_idx = p;
        s->cap_free = cap;
    }
    s->free_idx[s->nfree++] = idx;
    return TROVE_OK;
}

int trove__ref_add(struct trove_store *s, const struct trove_digest *d, int64_t dlive,
                   int64_t dcommitted)
{
    struct ref_entry *e;
    int created = 0, rc = TROVE_OK;

    if (dlive > 0 || dcommitted > 0) {
        if (!(e = trove__refmap_insert(&s->refs, d, &created)))
            return TROVE_ERR_NOMEM;
        if (created && (rc = dict_alloc(s, &e->dict_index)) != TROVE_OK) {
            trove__refmap_remove(&s->refs, e);
            return rc;
        }
    } else if (!(e = trove__refmap_find(&s->refs, d))) {
        return TROVE_ERR_CORRUPT;
    }
    if ((dlive < 0 && e->live < (uint64_t)-dlive) ||
        (dcommitted < 0 && e->committed < (uint64_t)-dcommitted))
        return TROVE_ERR_CORRUPT; /* a count would go below zero: a bug, never data */
    e->live += (uint64_t)dlive;
    e->committed += (uint64_t)dcommitted;
    if (e->live == 0 && e->committed == 0) {
        /* If the free list cannot grow, the index is leaked: harmless, never reused. */
        dict_release(s, e->dict_index);
        trove__refmap_remove(&s->refs, e);
    }
    return TROVE_OK;
}

/* ---- puts in flight --------------------------------------------------------------- */

int trove__store_put(struct trove_store *s, const struct trove_digest *d, const void *data,
                     size_t len)
{
    int rc;

    if (len > TROVE__PUTPOOL_MAX_OBJECT)
        rc = trove_backend_put(s->be, d, data, len, NULL);
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
    return rc;
}

int trove__store_drain(struct trove_store *s)
{
    int rc = s->pool ? trove__putpool_drain(s->pool) : TROVE_OK;

    if (rc != TROVE_OK)
        s->sticky = rc;
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
    if ((fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC)) < 0) {
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
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
        ssize_t r = read(fd, out->ptr + got, want < IO_CHUNK ? want : IO_CHUNK);
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
        ssize_t w = write(fd, p, n < IO_CHUNK ? n : IO_CHUNK);
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

    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, FILE_MODE);
    if (fd < 0)
        return -errno;
    rc = write_all(fd, data, len);
    if (rc == TROVE_OK && sync && fsync(fd) != 0)
        rc = -errno;
    if (close(fd) != 0 && rc == TROVE_OK)
        rc = -errno;
    if (rc == TROVE_OK && renameat(dirfd, tmp, dirfd, final) != 0)
        rc = -errno;
    if (rc == TROVE_OK && sync && fsync(dirfd) != 0)
        rc = -errno;
    if (rc != TROVE_OK)
        unlinkat(dirfd, tmp, 0);
    return rc;
}

int trove__recipe_publish(struct trove_store *s, const char *name, const void *data,
                          size_t len)
{
    char file[TROVE_VOLUME_NAME_MAX + 16], tmp[TROVE_VOLUME_NAME_MAX + 32];

    recipe_file(name, file);
    snprintf(tmp, sizeof tmp, TMP_PREFIX "%s", file);
    return publish_at(s->vol_fd, file, tmp, data, len, !(s->flags & TROVE_STORE_NOSYNC));
}

int trove__recipe_remove(struct trove_store *s, const char *name)
{
    char file[TROVE_VOLUME_NAME_MAX + 16];

    recipe_file(name, file);
    if (unlinkat(s->vol_fd, file, 0) != 0 ||
        (!(s->flags & TROVE_STORE_NOSYNC) && fsync(s->vol_fd) != 0))
        return -errno;
    return TROVE_OK;
}

/* ---- the basis and DIR/refs -------------------------------------------------------- */

static size_t basis_find(const struct trove_store *s, const char *name, int *found)
{
    size_t lo = 0, hi = s->nbasis;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->basis[mid].name, name);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

int trove__store_save_refs(struct trove_store *s)
{
    struct trove__refs_entry *ents = NULL;
    struct trove_bytes out = {0};
    size_t n = 0;
    int rc;

    if (s->refs.count > 0 && !(ents = trove__malloc(s->refs.count * sizeof *ents))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < s->refs.cap; k++) {
        const struct ref_entry *e = &s->refs.tab[k];
        if (!e->used || e->committed == 0)
            continue;
        ents[n].d = e->d;
        ents[n].committed = e->committed;
        ents[n].dict_index = e->dict_index;
        n++;
    }
    rc = trove__refs_encode(s->basis, s->nbasis, ents, n, s->dict_size, &out);
    if (rc == TROVE_OK)
        rc = publish_at(s->dir_fd, REFS_NAME, REFS_TMP, out.ptr, out.len,
                        !(s->flags & TROVE_STORE_NOSYNC));
    if (rc == TROVE_OK)
        s->refs_dirty = 0;
out:
    free(ents);
    trove_bytes_free(&out);
    return rc;
}

static int basis_put(struct trove_store *s, const char *name, uint64_t gen, uint64_t sum)
{
    int found;
    size_t i = basis_find(s, name, &found);

    if (!found) {
        int rc = trove__basis_reserve(s);
        if (rc != TROVE_OK)
            return rc;
        memmove(&s->basis[i + 1], &s->basis[i], (s->nbasis - i) * sizeof *s->basis);
        s->nbasis++;
        memset(&s->basis[i], 0, sizeof s->basis[i]);
        snprintf(s->basis[i].name, sizeof s->basis[i].name, "%s", name);
    }
    s->basis[i].generation = gen;
    s->basis[i].checksum = sum;
    return TROVE_OK;
}

void trove__basis_drop(struct trove_store *s, const char *name)
{
    int found;
    size_t i = basis_find(s, name, &found);

    if (found) {
        memmove(&s->basis[i], &s->basis[i + 1], (s->nbasis - i - 1) * sizeof *s->basis);
        s->nbasis--;
    }
    s->refs_dirty = 1;
}

int trove__basis_reserve(struct trove_store *s)
{
    if (s->nbasis == s->cap_basis) {
        size_t cap = s->cap_basis ? s->cap_basis * 2 : 16;
        struct trove__refs_basis *p = trove__realloc(s->basis, cap * sizeof *p);
        if (!p)
            return TROVE_ERR_NOMEM;
        s->basis = p;
        s->cap_basis = cap;
    }
    return TROVE_OK;
}

int trove__basis_set(struct trove_store *s, const char *name, uint64_t generation,
                     uint64_t checksum)
{
    int rc = basis_put(s, name, generation, checksum);

    /* DIR/refs is written at close: until then it is behind the recipes, and an open after
     * a crash recounts. A commit so costs what it changed, not the store's size. */
    s->refs_dirty = 1;
    return rc;
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
    if (s->vol_fd < 0)
        return TROVE_OK;
    if ((fd = openat(s->vol_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
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

/* ---- loading DIR/refs at open ------------------------------------------------------ */

/* Does the basis match the recipes on disk? Reads each recipe's header and trailer. */
static int basis_current(struct trove_store *s, int *current)
{
    char **names = NULL;
    size_t n = 0;
    int rc;

    *current = 0;
    if ((rc = trove__recipe_names(s, &names, &n)) != TROVE_OK)
        return rc;
    if (n != s->nbasis)
        goto out;
    for (size_t k = 0; k < n; k++) {
        char file[TROVE_VOLUME_NAME_MAX + 16];
        uint8_t head[TROVE_RECIPE_V1_HEADER], tail[8];
        struct stat st;
        int fd;
        if (strcmp(names[k], s->basis[k].name) != 0)
            goto out;
        recipe_file(names[k], file);
        if ((fd = openat(s->vol_fd, file, O_RDONLY | O_CLOEXEC)) < 0)
            goto out;
        if (fstat(fd, &st) != 0 || st.st_size < (off_t)(sizeof head + sizeof tail) ||
            pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
            pread(fd, tail, sizeof tail, st.st_size - 8) != (ssize_t)sizeof tail) {
            close(fd);
            goto out;
        }
        close(fd);
        if (trove__recipe_generation(head) != s->basis[k].generation ||
            trove__recipe_checksum(tail, sizeof tail) != s->basis[k].checksum)
            goto out;
    }
    *current = 1;
out:
    trove__names_free(names, n);
    return TROVE_OK;
}

/* Load DIR/refs into the map. *usable = 0 if it is missing, fails its checks, or lists
 * a digest or dict index twice. */
static int refs_load(struct trove_store *s, int *usable)
{
    struct trove_bytes buf = {0};
    struct trove__refs_view view;
    uint8_t *seen = NULL;
    int rc;

    *usable = 0;
    rc = read_file_at(s->dir_fd, REFS_NAME, &buf);
    if (rc == TROVE_ERR_NOTFOUND || rc == TROVE_ERR_CORRUPT) {
        rc = TROVE_OK;
        goto out;
    }
    if (rc != TROVE_OK)
        goto out;
    if (trove__refs_decode(buf.ptr, buf.len, &view, NULL) != TROVE_OK)
        goto out;
    if (view.dict_size > view.entry_count + DICT_SLACK)
        goto out; /* would cost a large free list for nothing: recount and renumber */
    if (view.dict_size > 0 && !(seen = trove__calloc((size_t)view.dict_size / 8 + 1, 1))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    if (view.volume_count > 0 &&
        !(s->basis = trove__calloc((size_t)view.volume_count, sizeof *s->basis))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    s->cap_basis = (size_t)view.volume_count;
    for (uint64_t i = 0; i < view.volume_count; i++)
        trove__refs_basis_at(&view, i, &s->basis[s->nbasis++]);
    if ((rc = trove__refmap_reserve(&s->refs, (size_t)view.entry_count)) != TROVE_OK)
        goto out;
    for (uint64_t i = 0; i < view.entry_count; i++) {
        struct trove__refs_entry re;
        struct ref_entry *e;
        int created;
        trove__refs_entry_at(&view, i, &re);
        if (seen[re.dict_index / 8] & (1u << (re.dict_index % 8)))
            goto out;
        seen[re.dict_index / 8] |= (uint8_t)(1u << (re.dict_index % 8));
        if (!(e = trove__refmap_insert(&s->refs, &re.d, &created))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        if (!created)
            goto out;
        e->committed = e->live = re.committed;
        e->dict_index = re.dict_index;
    }
    s->dict_size = view.dict_size;
    for (uint32_t i = view.dict_size; i-- > 0;)
        if (!(seen[i / 8] & (1u << (i % 8))) && (rc = dict_release(s, i)) != TROVE_OK)
            goto out;
    *usable = 1;
out:
    free(seen);
    trove_bytes_free(&buf);
    return rc;
}

static void store_reset_counts(struct trove_store *s)
{
    trove__refmap_free(&s->refs);
    free(s->basis);
    s->basis = NULL;
    s->nbasis = s->cap_basis = 0;
    s->dict_size = 0;
    s->nfree = 0;
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
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0)
        return;
    if (!(dp = fdopendir(fd))) {
        close(fd);
        return;
    }
    while ((de = readdir(dp)) != NULL)
        if (strncmp(de->d_name, TMP_PREFIX, sizeof TMP_PREFIX - 1) == 0)
            unlinkat(dirfd, de->d_name, 0);
    closedir(dp);
}

static int take_lock(struct trove_store *s)
{
    struct flock fl;
    int ro = (s->flags & TROVE_STORE_READONLY) != 0;

    s->lock_fd = openat(s->dir_fd, "lock", (ro ? O_RDONLY : O_RDWR | O_CREAT) | O_CLOEXEC,
                        FILE_MODE);
    if (s->lock_fd < 0)
        return ro && errno == ENOENT ? TROVE_OK : -errno;
    memset(&fl, 0, sizeof fl);
    fl.l_type = ro ? F_RDLCK : F_WRLCK;
    fl.l_whence = SEEK_SET;
    while (fcntl(s->lock_fd, F_SETLKW, &fl) != 0)
        if (errno != EINTR)
            return -errno;
    return TROVE_OK;
}

int trove__store_open_dir(const char *dir, unsigned flags, struct trove_store **out,
                          int *stale_out, struct trove_diag *diag)
{
    struct trove_store *s = NULL;
    char *path = NULL;
    int rc, usable = 0, current = 0;

    *out = NULL;
    *stale_out = 0;
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
    if ((s->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
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
    s->vol_fd = openat(s->dir_fd, "volumes", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->vol_fd < 0) {
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
        TROVE_FAIL(diag, rc, 0, "%s is not a trove store (%s/volumes: %s)", dir, dir,
                   errno == ENOENT ? "no such directory" : strerror(errno));
        goto out;
    }
    if ((rc = take_lock(s)) != TROVE_OK) {
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
    }
    if ((rc = refs_load(s, &usable)) != TROVE_OK ||
        (usable && (rc = basis_current(s, &current)) != TROVE_OK))
        goto out;
    /* DIR/refs is missing, damaged or behind the recipes: the caller counts again. */
    if (!usable || !current) {
        store_reset_counts(s);
        *stale_out = 1;
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
    /* Persist the counts the commits changed; if this fails (or the process died before),
     * the next open finds DIR/refs behind the recipes and recounts. */
    if (s->refs_dirty && !s->sticky && !(s->flags & TROVE_STORE_READONLY))
        trove__store_save_refs(s);
    trove_backend_close(s->be);
    if (s->vol_fd >= 0)
        close(s->vol_fd);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the lock */
    if (s->dir_fd >= 0)
        close(s->dir_fd);
    trove__refmap_free(&s->refs);
    free(s->free_idx);
    free(s->basis);
    free(s->dir);
    free(s);
}

struct trove_backend *trove_store_backend(struct trove_store *s)
{
    return s ? s->be : NULL;
}
