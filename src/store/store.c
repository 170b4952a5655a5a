/*
 * store.c: the store — its directory and lock, the reference counts and their file, the
 * committed recipes on disk, snapshots, removal, verify and gc (include/trove/volume.h).
 *
 * Ground truth is the set of committed recipes in DIR/volumes. Everything else is derived
 * from them and may be rebuilt: DIR/refs persists the committed reference counts so that an
 * open does not read every recipe, and it names the recipe states it was counted from (the
 * basis: each recipe's name, generation and entry checksum). Open compares the basis with
 * the recipe headers (two small reads per recipe); any difference — a crash between a
 * recipe's rename and the refs file's, a refs file that is missing or fails its checks —
 * means the counts are recounted from the recipes. So a crash can leave the refs file
 * stale but never wrong in a way that is trusted.
 *
 * Files are published by write-new-then-rename: a temp file in the same directory (names
 * starting with ".tmp-", which no volume name may), fsync, rename over the old name, fsync
 * of the directory. Objects are made durable by the backend before any recipe names them.
 * gc deletes only objects with no reference-map entry, after recounting the recipes and
 * checking that the counts agree, so a crash during gc leaves fewer unreferenced objects,
 * never a recipe naming a missing one.
 */
#include "store_internal.h"
#include "common/alloc.h"
#include "recipe_head.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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
    if (rc != TROVE_OK)
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
        return trove_diag_set(diag, TROVE_ERR_READONLY, 0, "the store %s is open read-only",
                              s->dir);
    if (s->sticky)
        return trove_diag_set(diag, s->sticky, 0,
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
        rc = trove_diag_set(diag, TROVE_ERR_NOTFOUND, 0, "no volume '%s' in the store %s", name,
                            s->dir);
        goto out;
    }
    recipe_file(name, file);
    rc = read_file_at(s->vol_fd, file, buf);
    if (rc == TROVE_ERR_NOTFOUND)
        trove_diag_set(diag, rc, 0, "no volume '%s' in the store %s", name, s->dir);
    else if (rc != TROVE_OK)
        trove_diag_set(diag, rc, 0, "cannot read %s: %s", path, trove_strerror(rc));
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
        if (s->nbasis == s->cap_basis) {
            size_t cap = s->cap_basis ? s->cap_basis * 2 : 16;
            struct trove__refs_basis *p = trove__realloc(s->basis, cap * sizeof *p);
            if (!p)
                return TROVE_ERR_NOMEM;
            s->basis = p;
            s->cap_basis = cap;
        }
        memmove(&s->basis[i + 1], &s->basis[i], (s->nbasis - i) * sizeof *s->basis);
        s->nbasis++;
        memset(&s->basis[i], 0, sizeof s->basis[i]);
        snprintf(s->basis[i].name, sizeof s->basis[i].name, "%s", name);
    }
    s->basis[i].generation = gen;
    s->basis[i].checksum = sum;
    return TROVE_OK;
}

static void basis_drop(struct trove_store *s, const char *name)
{
    int found;
    size_t i = basis_find(s, name, &found);

    if (found) {
        memmove(&s->basis[i], &s->basis[i + 1], (s->nbasis - i - 1) * sizeof *s->basis);
        s->nbasis--;
    }
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

static void names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The volume names with a recipe file, sorted. Strangers and temp files are skipped. */
static int scan_names(struct trove_store *s, char ***out, size_t *count_out)
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
        names_free(names, n);
        return rc;
    }
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_str);
    *out = names;
    *count_out = n;
    return TROVE_OK;
}

/* ---- recounting from the recipes --------------------------------------------------- */

struct recount {
    struct refmap map; /* committed counts; dict_index in first-seen order; len */
    struct trove__refs_basis *basis;
    size_t nbasis;
    uint64_t volumes, bad_recipes, slots, length_conflicts;
    char first_bad[256];
};

static void recount_free(struct recount *rc)
{
    trove__refmap_free(&rc->map);
    free(rc->basis);
    memset(rc, 0, sizeof *rc);
}

/* Count one reference to d in a recount; len is the slot's length (0: a recipe object or
 * an object volume's slot, whose length no recipe states). The first stated length is the
 * one verify checks; a different one is a conflict. */
static int recount_add(struct recount *out, const struct trove_digest *d, uint64_t len)
{
    struct ref_entry *e;
    int created;

    if (!(e = trove__refmap_insert(&out->map, d, &created)))
        return TROVE_ERR_NOMEM;
    if (created) {
        e->dict_index = (uint32_t)(out->map.count - 1);
        e->len = len;
    } else if (len != 0 && e->len == 0) {
        e->len = len;
    } else if (len != 0 && e->len != len) {
        out->length_conflicts++;
    }
    e->committed++;
    return TROVE_OK;
}

static int recount(struct trove_store *s, struct recount *out)
{
    struct trove_volume *v = NULL;
    char **names = NULL;
    size_t n = 0;
    int rc;

    memset(out, 0, sizeof *out);
    if ((rc = scan_names(s, &names, &n)) != TROVE_OK)
        goto out;
    if (n > 0 && !(out->basis = trove__calloc(n, sizeof *out->basis))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        struct trove_diag diag = {0};
        out->volumes++;
        rc = trove__volume_load(s, names[k], &v, &diag);
        if (rc == TROVE_ERR_NOMEM)
            goto out;
        if (rc != TROVE_OK) {
            if (out->bad_recipes++ == 0)
                snprintf(out->first_bad, sizeof out->first_bad, "%s", diag.msg);
            continue;
        }
        snprintf(out->basis[out->nbasis].name, sizeof out->basis[0].name, "%s", names[k]);
        out->basis[out->nbasis].generation = v->generation;
        out->basis[out->nbasis].checksum = v->recipe_sum;
        out->nbasis++;
        for (uint64_t i = 0; i < v->slot_count; i++) {
            uint64_t left = v->size - i * v->block_size;
            if (v->idx[i] == 0)
                continue;
            out->slots++;
            if (v->flags & TROVE_RECIPE_FLAG_OBJECTS)
                left = 0; /* any length up to the block size */
            else if (left > v->block_size)
                left = v->block_size;
            rc = recount_add(out, vol_digest(v, i), left);
            if (rc != TROVE_OK)
                goto out;
        }
        for (uint64_t j = 0; j < v->nsec; j++)
            if ((rc = recount_add(out, &v->sec[j].d, 0)) != TROVE_OK)
                goto out;
        for (uint64_t j = 0; j < v->npages; j++)
            if ((rc = recount_add(out, &v->pages[j], 0)) != TROVE_OK)
                goto out;
        for (uint64_t j = 0; v->patch && j < v->nsec_seg; j++)
            if (v->patch[j] && (rc = recount_add(out, &v->patch[j]->base, 0)) != TROVE_OK)
                goto out;
        trove__volume_free(v);
        v = NULL;
    }
    rc = TROVE_OK;
out:
    trove__volume_free(v);
    names_free(names, n);
    if (rc != TROVE_OK)
        recount_free(out);
    return rc;
}

/* Replace the store's counts with a recount (live = committed: nothing may be dirty). */
static void adopt_recount(struct trove_store *s, struct recount *rc)
{
    trove__refmap_free(&s->refs);
    s->refs = rc->map;
    memset(&rc->map, 0, sizeof rc->map);
    for (size_t k = 0; k < s->refs.cap; k++)
        if (s->refs.tab[k].used) {
            s->refs.tab[k].live = s->refs.tab[k].committed;
            s->refs.tab[k].len = 0;
        }
    s->dict_size = (uint32_t)s->refs.count;
    s->nfree = 0;
    free(s->basis);
    s->basis = rc->basis;
    s->nbasis = rc->nbasis;
    s->cap_basis = rc->nbasis;
    rc->basis = NULL;
    rc->nbasis = 0;
}

/* Entries whose committed count differs between the store's map and a recount. */
static uint64_t count_mismatches(const struct trove_store *s, const struct recount *rc)
{
    uint64_t bad = 0;

    for (size_t k = 0; k < s->refs.cap; k++) {
        const struct ref_entry *e = &s->refs.tab[k], *f;
        if (!e->used || e->committed == 0)
            continue;
        f = trove__refmap_find(&rc->map, &e->d);
        if (!f || f->committed != e->committed)
            bad++;
    }
    for (size_t k = 0; k < rc->map.cap; k++) {
        const struct ref_entry *e = &rc->map.tab[k], *f;
        if (!e->used)
            continue;
        f = trove__refmap_find(&s->refs, &e->d);
        if (!f || f->committed == 0)
            bad++;
    }
    return bad;
}

static int any_dirty(const struct trove_store *s)
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
    if ((rc = scan_names(s, &names, &n)) != TROVE_OK)
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
    names_free(names, n);
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

/* ---- open and close ---------------------------------------------------------------- */

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

int trove_store_open(const char *dir, unsigned flags, struct trove_store **out,
                     struct trove_diag *diag)
{
    struct trove_store *s = NULL;
    struct recount rcnt;
    char *path = NULL;
    int rc, usable = 0, current = 0;

    if (out)
        *out = NULL;
    if (!dir || !*dir || !out || (flags & ~(TROVE_STORE_CREATE | TROVE_STORE_READONLY | TROVE_STORE_NOSYNC))) {
        rc = trove_diag_set(diag, TROVE_ERR_INVALID, 0, "store open: bad arguments");
        goto out;
    }
    if (!(s = trove__calloc(1, sizeof *s)) || !(s->dir = trove__strdup(dir))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    s->flags = flags;
    s->dir_fd = s->vol_fd = s->lock_fd = -1;
    if ((flags & TROVE_STORE_CREATE) && !(flags & TROVE_STORE_READONLY)) {
        if (!(path = trove__strdup(dir))) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        if ((rc = mkdir_p(path)) != TROVE_OK) {
            trove_diag_set(diag, rc, 0, "cannot create the store directory %s: %s", dir,
                           trove_strerror(rc));
            goto out;
        }
    }
    if ((s->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
        trove_diag_set(diag, rc, 0, "cannot open the store %s: %s", dir,
                       errno == ENOENT ? "no such directory" : strerror(errno));
        goto out;
    }
    if ((flags & TROVE_STORE_CREATE) && !(flags & TROVE_STORE_READONLY) &&
        mkdirat(s->dir_fd, "volumes", DIR_MODE) != 0 && errno != EEXIST) {
        rc = -errno;
        trove_diag_set(diag, rc, 0, "cannot create %s/volumes: %s", dir, trove_strerror(rc));
        goto out;
    }
    /* Without CREATE a directory that is not a store is left alone. */
    s->vol_fd = openat(s->dir_fd, "volumes", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->vol_fd < 0) {
        rc = errno == ENOENT ? TROVE_ERR_NOTFOUND : -errno;
        trove_diag_set(diag, rc, 0, "%s is not a trove store (%s/volumes: %s)", dir, dir,
                       errno == ENOENT ? "no such directory" : strerror(errno));
        goto out;
    }
    if ((rc = take_lock(s)) != TROVE_OK) {
        trove_diag_set(diag, rc, 0, "cannot lock %s/lock: %s", dir, trove_strerror(rc));
        goto out;
    }
    rc = trove_backend_fs_open_flags(
        dir,
        ((flags & TROVE_STORE_READONLY) ? TROVE_BACKEND_READONLY : 0) |
            ((flags & TROVE_STORE_NOSYNC) ? TROVE_BACKEND_NOSYNC : 0),
        &s->be);
    if (rc != TROVE_OK) {
        trove_diag_set(diag, rc, 0, "cannot open the objects of %s: %s", dir,
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
    if (!usable || !current) {
        /* DIR/refs is missing, damaged or behind the recipes: count again. */
        store_reset_counts(s);
        if ((rc = recount(s, &rcnt)) != TROVE_OK) {
            trove_diag_set(diag, rc, 0, "cannot recount the references of %s: %s", dir,
                           trove_strerror(rc));
            goto out;
        }
        adopt_recount(s, &rcnt);
        recount_free(&rcnt);
        if (!(flags & TROVE_STORE_READONLY) && (rc = trove__store_save_refs(s)) != TROVE_OK) {
            trove_diag_set(diag, rc, 0, "cannot write %s/refs: %s", dir, trove_strerror(rc));
            goto out;
        }
    }
    *out = s;
    s = NULL;
    rc = TROVE_OK;
out:
    free(path);
    trove_store_close(s);
    return rc;
}

void trove_store_close(struct trove_store *s)
{
    if (!s)
        return;
    while (s->open)
        trove_volume_close(s->open);
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

/* ---- snapshots, removal, listing --------------------------------------------------- */

/* Count every reference of a loaded volume's committed recipe: its slots and its recipe
 * objects, delta (+1 or -1) to both the live and the committed counts. */
static int volume_refs(struct trove_store *s, struct trove_volume *v, int delta)
{
    int rc;

    for (uint64_t i = 0; i < v->slot_count; i++)
        if (v->idx[i] != 0 && (rc = trove__ref_add(s, vol_digest(v, i), delta, delta)))
            return rc;
    return trove__volume_meta_refs(v, delta);
}

int trove_snapshot_create(struct trove_store *s, const char *src, const char *name,
                          struct trove_diag *diag)
{
    struct trove_bytes raw = {0};
    struct trove_volume *v = NULL;
    char path[4096];
    int rc;

    if (!s) {
        rc = trove_diag_set(diag, TROVE_ERR_INVALID, 0, "no store");
        goto out;
    }
    if ((rc = trove_volume_name_check(src, diag)) != TROVE_OK ||
        (rc = trove_volume_name_check(name, diag)) != TROVE_OK ||
        (rc = trove__store_writable(s, diag)) != TROVE_OK)
        goto out;
    trove__recipe_path(s, name, path, sizeof path);
    if ((rc = trove__recipe_exists(s, name)) != 0) {
        if (rc > 0)
            rc = trove_diag_set(diag, TROVE_ERR_EXISTS, 0, "'%s' already exists (%s)", name,
                                path);
        goto out;
    }
    /* The source's committed recipe, loaded (which checks it and every object it names)
     * and as bytes: a snapshot is the same recipe with the read-only flag, naming the same
     * objects, so it shares every segment, chunk and page. */
    if ((rc = trove__volume_load(s, src, &v, diag)) != TROVE_OK ||
        (rc = trove__recipe_read(s, src, &raw, diag)) != TROVE_OK)
        goto out;
    if ((rc = trove__recipe_set_readonly(raw.ptr, raw.len)) != TROVE_OK ||
        (rc = trove__recipe_publish(s, name, raw.ptr, raw.len)) != TROVE_OK) {
        trove_diag_set(diag, rc, 0, "cannot write %s: %s", path, trove_strerror(rc));
        goto out;
    }
    if ((rc = volume_refs(s, v, +1)) != TROVE_OK) {
        s->sticky = rc; /* the snapshot is committed; this handle's counts are not */
        goto out;
    }
    rc = trove__basis_set(s, name, v->generation, trove__recipe_checksum(raw.ptr, raw.len));
out:
    trove__volume_free(v);
    trove_bytes_free(&raw);
    return rc;
}

int trove_volume_remove(struct trove_store *s, const char *name, struct trove_diag *diag)
{
    struct trove_volume *v = NULL;
    struct recount rcnt;
    char file[TROVE_VOLUME_NAME_MAX + 16], path[4096];
    int rc;

    if (!s) {
        rc = trove_diag_set(diag, TROVE_ERR_INVALID, 0, "no store");
        goto out;
    }
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK ||
        (rc = trove__store_writable(s, diag)) != TROVE_OK)
        goto out;
    for (const struct trove_volume *o = s->open; o; o = o->next)
        if (strcmp(o->name, name) == 0) {
            rc = trove_diag_set(diag, TROVE_ERR_BUSY, 0, "volume '%s' is open; close it first",
                                name);
            goto out;
        }
    trove__recipe_path(s, name, path, sizeof path);
    rc = trove__volume_load(s, name, &v, NULL);
    if (rc == TROVE_ERR_NOTFOUND && trove__recipe_exists(s, name) == 0) {
        trove_diag_set(diag, rc, 0, "no volume '%s' in the store %s", name, s->dir);
        goto out;
    }
    if (rc == TROVE_ERR_NOMEM)
        goto out;
    if (rc != TROVE_OK && any_dirty(s)) {
        rc = trove_diag_set(diag, TROVE_ERR_BUSY, 0,
                            "%s is unreadable, so removing it means recounting every recipe; "
                            "commit or close the open volumes first",
                            path);
        goto out;
    }
    recipe_file(name, file);
    if (unlinkat(s->vol_fd, file, 0) != 0 ||
        (!(s->flags & TROVE_STORE_NOSYNC) && fsync(s->vol_fd) != 0)) {
        rc = -errno;
        trove_diag_set(diag, rc, 0, "cannot remove %s: %s", path, trove_strerror(rc));
        goto out;
    }
    basis_drop(s, name);
    s->refs_dirty = 1;
    if (v) {
        if ((rc = volume_refs(s, v, -1)) != TROVE_OK) {
            s->sticky = rc;
            goto out;
        }
    } else {
        /* Its references cannot be read: count the remaining recipes again. */
        if ((rc = recount(s, &rcnt)) != TROVE_OK) {
            s->sticky = rc;
            goto out;
        }
        adopt_recount(s, &rcnt);
        recount_free(&rcnt);
    }
    rc = TROVE_OK;
out:
    trove__volume_free(v);
    return rc;
}

int trove_volume_list(struct trove_store *s, struct trove_volume_entry **out, size_t *count_out)
{
    struct trove_volume_entry *ents = NULL;
    struct trove_bytes img = {0};
    char **names = NULL;
    size_t n = 0;
    int rc;

    if (!s || !out || !count_out)
        return TROVE_ERR_INVALID;
    *out = NULL;
    *count_out = 0;
    if ((rc = scan_names(s, &names, &n)) != TROVE_OK)
        goto out;
    if (n > 0 && !(ents = trove__calloc(n, sizeof *ents))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        struct trove_recipe_v1 r1;
        struct trove_recipe_v3 r3;
        uint32_t version = 0;
        snprintf(ents[k].name, sizeof ents[k].name, "%s", names[k]);
        /* The recipe file only (a v3 manifest's objects are not fetched): what it says. */
        rc = trove__recipe_read(s, names[k], &img, NULL);
        if (rc == TROVE_OK)
            rc = trove_recipe_version(img.ptr, img.len, &version, NULL);
        if (rc == TROVE_OK && version == 1 &&
            (rc = trove_recipe_v1_decode(img.ptr, img.len, &r1, NULL)) == TROVE_OK) {
            r3.flags = r1.flags;
            r3.volume_size = r1.volume_size;
            r3.block_size = r1.block_size;
            r3.slot_count = r1.slot_count;
            r3.generation = r1.generation;
        } else if (rc == TROVE_OK && version == 3) {
            rc = trove_recipe_v3_decode(img.ptr, img.len, &r3, NULL);
        }
        if (rc == TROVE_ERR_NOMEM)
            goto out;
        if (rc != TROVE_OK) {
            ents[k].error = rc;
            continue;
        }
        ents[k].readonly = (r3.flags & TROVE_RECIPE_FLAG_READONLY) != 0;
        ents[k].objects = (r3.flags & TROVE_RECIPE_FLAG_OBJECTS) != 0;
        ents[k].size = r3.volume_size;
        ents[k].block_size = r3.block_size;
        ents[k].slots = r3.slot_count;
        ents[k].generation = r3.generation;
        ents[k].recipe_bytes = img.len;
        ents[k].recipe_format = (int)version;
    }
    *out = ents;
    *count_out = n;
    ents = NULL;
    rc = TROVE_OK;
out:
    free(ents);
    names_free(names, n);
    trove_bytes_free(&img);
    return rc;
}

/* ---- verify and gc ----------------------------------------------------------------- */

/* Keep the first problem's description for the report. */
static void problem(struct trove_verify_report *rep, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void problem(struct trove_verify_report *rep, const char *fmt, ...)
{
    va_list ap;

    if (rep->first_problem[0] != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(rep->first_problem, sizeof rep->first_problem, fmt, ap);
    va_end(ap);
}

int trove_store_verify(struct trove_store *s, unsigned flags, struct trove_verify_report *rep,
                       trove_progress_fn progress, void *progress_ctx)
{
    struct recount rcnt;
    struct trove_bytes obj = {0};
    uint64_t done = 0;
    int rc, have_count = 0;

    if (!s || !rep || (flags & ~(TROVE_VERIFY_DEEP | TROVE_VERIFY_REPAIR)))
        return TROVE_ERR_INVALID;
    memset(rep, 0, sizeof *rep);
    if ((flags & TROVE_VERIFY_REPAIR) && (rc = trove__store_writable(s, NULL)) != TROVE_OK)
        return rc;
    trove__store_drain(s); /* verify reads the committed state; a failed put shows there */
    if ((rc = recount(s, &rcnt)) != TROVE_OK)
        goto out;
    have_count = 1;
    rep->volumes = rcnt.volumes;
    rep->bad_recipes = rcnt.bad_recipes;
    rep->slots = rcnt.slots;
    rep->bad_length = rcnt.length_conflicts;
    if (rcnt.bad_recipes)
        snprintf(rep->first_problem, sizeof rep->first_problem, "%s", rcnt.first_bad);
    if (rcnt.length_conflicts)
        problem(rep, "%llu slots name an object that other slots name with another length",
                (unsigned long long)rcnt.length_conflicts);
    for (size_t k = 0; k < rcnt.map.cap; k++) {
        const struct ref_entry *e = &rcnt.map.tab[k];
        char hex[33];
        uint64_t len;
        if (!e->used)
            continue;
        rep->objects++;
        trove_digest_hex(&e->d, hex);
        rc = trove_backend_size(s->be, &e->d, &len);
        if (rc == TROVE_ERR_NOTFOUND) {
            rep->missing_objects++;
            problem(rep, "object %s is missing (named by %llu slot%s)", hex,
                    (unsigned long long)e->committed, e->committed == 1 ? "" : "s");
        } else if (rc != TROVE_OK) {
            goto out;
        } else if (e->len != 0 && len != e->len) { /* len 0: a recipe object, checked at load */
            rep->bad_length++;
            problem(rep, "object %s is %llu bytes, its slots hold %llu", hex,
                    (unsigned long long)len, (unsigned long long)e->len);
        } else if (flags & TROVE_VERIFY_DEEP) {
            struct trove_digest d;
            rc = trove_backend_get(s->be, &e->d, &obj, (size_t)len);
            if (rc == TROVE_ERR_NOTFOUND) {
                rep->missing_objects++;
                problem(rep, "object %s disappeared during verify", hex);
            } else if (rc == TROVE_ERR_LIMIT || rc == TROVE_ERR_TRUNCATED) {
                rep->bad_length++;
                problem(rep, "object %s changed length during verify", hex);
            } else if (rc != TROVE_OK) {
                goto out;
            } else {
                trove_digest_of(obj.ptr, obj.len, &d);
                if (!trove_digest_equal(&d, &e->d)) {
                    rep->bad_hash++;
                    problem(rep, "object %s does not hash to its name (%zu bytes)", hex,
                            obj.len);
                }
            }
        }
        if (progress)
            progress(progress_ctx, ++done, rcnt.map.count);
    }
    /* With a recipe unreadable the recount lacks its references, and every one of them would
     * look like a mismatch: compare only a complete recount. */
    rep->refcount_mismatches = rcnt.bad_recipes ? 0 : count_mismatches(s, &rcnt);
    if (rep->refcount_mismatches)
        problem(rep, "%llu reference counts in %s/refs disagree with the recipes%s",
                (unsigned long long)rep->refcount_mismatches, s->dir,
                (flags & TROVE_VERIFY_REPAIR) ? "" : " (run verify --repair)");
    if (rep->refcount_mismatches && (flags & TROVE_VERIFY_REPAIR) && !rcnt.bad_recipes) {
        if (any_dirty(s)) {
            rc = TROVE_ERR_BUSY;
            goto out;
        }
        adopt_recount(s, &rcnt);
        if ((rc = trove__store_save_refs(s)) != TROVE_OK)
            goto out;
        rep->refs_repaired = 1;
    }
    rc = (rep->bad_recipes || rep->missing_objects || rep->bad_length || rep->bad_hash ||
          (rep->refcount_mismatches && !rep->refs_repaired))
             ? TROVE_ERR_CORRUPT
             : TROVE_OK;
out:
    if (have_count)
        recount_free(&rcnt);
    trove_bytes_free(&obj);
    return rc;
}

struct digest_vec {
    struct trove_digest *d;
    size_t n, cap;
};

static int collect(void *ctx, const struct trove_digest *d)
{
    struct digest_vec *v = ctx;

    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 256;
        struct trove_digest *p = trove__realloc(v->d, cap * sizeof *p);
        if (!p)
            return 1; /* stop: reported as out of memory */
        v->d = p;
        v->cap = cap;
    }
    v->d[v->n++] = *d;
    return 0;
}

int trove_store_gc(struct trove_store *s, struct trove_gc_report *rep, trove_progress_fn progress,
                   void *progress_ctx)
{
    struct recount rcnt;
    struct digest_vec all = {0};
    int rc, have_count = 0;

    if (!s || !rep)
        return TROVE_ERR_INVALID;
    memset(rep, 0, sizeof *rep);
    if ((rc = trove__store_writable(s, NULL)) != TROVE_OK ||
        (rc = trove__store_drain(s)) != TROVE_OK)
        return rc;
    /* Trust nothing but the recipes: recount, and refuse when the counts disagree. */
    if ((rc = recount(s, &rcnt)) != TROVE_OK)
        goto out;
    have_count = 1;
    if (rcnt.bad_recipes || count_mismatches(s, &rcnt)) {
        rc = TROVE_ERR_CORRUPT;
        goto out;
    }
    rc = trove_backend_list(s->be, collect, &all);
    if (rc > 0)
        rc = TROVE_ERR_NOMEM;
    if (rc != TROVE_OK)
        goto out;
    rep->objects_seen = all.n;
    for (size_t k = 0; k < all.n; k++) {
        uint64_t len = 0;
        if (trove__refmap_find(&s->refs, &all.d[k]))
            goto next;
        if (trove_backend_size(s->be, &all.d[k], &len) != TROVE_OK)
            len = 0;
        rc = trove_backend_delete(s->be, &all.d[k]);
        if (rc == TROVE_OK) {
            rep->objects_deleted++;
            rep->bytes_deleted += len;
        } else if (rc != TROVE_ERR_NOTFOUND) {
            goto out;
        }
    next:
        if (progress)
            progress(progress_ctx, k + 1, all.n);
    }
    rc = TROVE_OK;
out:
    if (have_count)
        recount_free(&rcnt);
    free(all.d);
    return rc;
}
