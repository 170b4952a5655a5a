/*
 * bundle_zip.c: the capture bundle's container (include/trove/bundle.h), a zip of Parquet
 * tables and manifest.json, over libzip: writing it, opening it (also in the folder form),
 * finding and reading its entries. The manifest's codec is bundle_manifest.c, the entry-name
 * rule bundle.c.
 *
 *   bundle.zip
 *   +--------------------------------+
 *   | local header | events.parquet  |  STORED (default) or DEFLATED, CRC-32, sizes
 *   | local header | names.parquet   |  every entry dated 1980-01-01 00:00:00 (DOS)
 *   | ...                            |
 *   | local header | manifest.json   |
 *   | central directory              |  one record per entry, names as in the locals
 *   | end of central directory       |  (zip64 records only past 4 GiB)
 *   +--------------------------------+
 *
 * Why it is built this way:
 * - Writing: libzip writes the archive into its own temp file and renames it to path.tmp;
 *   we then fsync path.tmp, rename it over path and fsync the directory, so a crash leaves
 *   the old bundle or the new one, never half of one. Output is deterministic: libzip's
 *   DOS timestamps go through localtime(), so the timestamp we pass is mktime() of local
 *   1980-01-01 00:00:00, which localtime() turns back into the same DOS fields in every
 *   time zone; attributes are fixed, no comment or extra field is written.
 * - Opening: libzip with ZIP_CHECKCONS (each local header compared with its central
 *   record, overlaps refused), then every name checked by trove_bundle_name_check and for
 *   duplicates, the entry count and the sum of declared sizes against their limits. libzip
 *   replaces NUL bytes in stored names by spaces before we see them, so the name rule
 *   refuses the space: that is what makes a stored NUL refused.
 * - Reading: the declared size is checked against max, and a deflated entry's declared
 *   size against what deflate can expand its compressed size to (1032:1), before the
 *   buffer is allocated; then we read exactly the declared size and one probe byte more.
 *   The probe must meet end of data, which is also where libzip compares the CRC-32 and
 *   the size it counted with the declared ones.
 */
#include "trove/bundle.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "zip_lib.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct trove__zip_api trove__zip_api;

int trove__zip_load(struct trove_diag *diag)
{
    static struct trove__dl_once once;
    static const char *const names[] = {TROVE__ZIP_FUNCS(TROVE__DL_NAME)};
    return trove__dl_load(&once, TROVE_SONAME_ZIP, names, sizeof names / sizeof *names,
                          (void **)&trove__zip_api, "a bundle", diag);
}

#define DEFLATE_MAX_RATIO 1032u /* deflate emits at most 258 bytes per 2 bits, ~1032:1 */
#define READ_STEP ((uint64_t)1 << 20) /* an entry is read 1 MiB, then as much as came, at a time */

struct bundle_ent {
    const char *name;   /* libzip's string, valid until zip_close */
    zip_uint64_t index; /* libzip's index */
};

struct trove_bundle {
    zip_t *za;
    size_t n;
    struct bundle_ent *ents;    /* archive order, directory entries too */
    size_t nfiles;
    struct bundle_ent **sorted; /* the files (not directories) by name, for find */
    char prefix[TROVE_BUNDLE_MAX_NAME + 1]; /* "" or "FOLDER/": where manifest.json is */
    size_t prefix_len;
};

static int cmp_name_ptr(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    return strcmp(x, y);
}

/* A libzip error as a trove error: system errors pass through as -errno. */
static int zip_err_code(zip_error_t *ze, int fallback)
{
    int sys = zip_error_code_system(ze);
    switch (zip_error_code_zip(ze)) {
    case ZIP_ER_MEMORY:
        return TROVE_ERR_NOMEM;
    case ZIP_ER_NOZIP:
        return TROVE_ERR_MAGIC;
    case ZIP_ER_CRC:
        return TROVE_ERR_CHECKSUM;
    case ZIP_ER_ZLIB:
    case ZIP_ER_COMPRESSED_DATA:
        return TROVE_ERR_INFLATE;
    case ZIP_ER_COMPNOTSUPP:
    case ZIP_ER_ENCRNOTSUPP:
    case ZIP_ER_NOPASSWD:
        return TROVE_ERR_FORMAT;
    case ZIP_ER_NOENT:
        return -ENOENT;
    case ZIP_ER_INCONS:
    case ZIP_ER_EOF:
        return TROVE_ERR_CORRUPT;
    case ZIP_ER_OPEN:
    case ZIP_ER_READ:
    case ZIP_ER_WRITE:
    case ZIP_ER_SEEK:
    case ZIP_ER_CLOSE:
    case ZIP_ER_RENAME:
    case ZIP_ER_TMPOPEN:
    case ZIP_ER_REMOVE:
        if (zip_error_system_type(ze) == ZIP_ET_SYS && sys > 0)
            return -sys;
        return fallback;
    default:
        return fallback;
    }
}

/* The time_t that libzip's localtime()-based conversion turns into DOS 1980-01-01 00:00. */
static time_t dos_epoch(void)
{
    struct tm tm;
    time_t t;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = 80;
    tm.tm_mday = 1;
    tm.tm_isdst = -1;
    t = mktime(&tm);
    return t == (time_t)-1 ? (time_t)315532800 : t;
}

/* The directory holding path, as a new string ("." for a bare name); NULL when out of
 * memory. The writer takes it before it writes anything, so that nothing after the rename
 * can fail for want of memory. */
static char *parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n;
    char *dir;

    if (!slash)
        return trove__strdup(".");
    n = slash == path ? 1 : (size_t)(slash - path);
    dir = trove__malloc(n + 1);
    if (dir) {
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    return dir;
}

/* fsync directory dir; filesystems that refuse fsync on directories with EINVAL are fine. */
static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = TROVE_OK;

    if (fd < 0)
        return -errno;
    if (fsync(fd) != 0 && errno != EINVAL)
        rc = -errno;
    close(fd);
    return rc;
}

/* Check the entries to write: count, names (rule and uniqueness), data, total. */
static int check_entries(const struct trove_bundle_entry *e, size_t n, struct trove_diag *diag)
{
    const char **names = NULL;
    uint64_t total = 0;
    const char *why;
    size_t i;
    int rc = TROVE_OK;

    if (n == 0 || n > TROVE_BUNDLE_MAX_ENTRIES || !e) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "a bundle holds 1 to %u entries, not %zu",
                        TROVE_BUNDLE_MAX_ENTRIES, n);
        goto out;
    }
    names = trove__malloc(n * sizeof *names);
    if (!names) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    for (i = 0; i < n; i++) {
        size_t len = e[i].name ? strlen(e[i].name) : 0;
        if (trove_bundle_name_check(e[i].name, len, &why) != TROVE_OK) {
            rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "entry %zu: %s: \"%.200s\"", i, why,
                            e[i].name ? e[i].name : "");
            goto out;
        }
        if (!e[i].data && e[i].len) {
            rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "entry \"%s\": no data", e[i].name);
            goto out;
        }
        if ((uint64_t)e[i].len > TROVE_BUNDLE_MAX_TOTAL - total) {
            rc = TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                            "entries total more than %llu bytes at \"%s\"",
                            (unsigned long long)TROVE_BUNDLE_MAX_TOTAL, e[i].name);
            goto out;
        }
        total += e[i].len;
        names[i] = e[i].name;
    }
    qsort(names, n, sizeof *names, cmp_name_ptr);
    for (i = 1; i < n; i++) {
        if (strcmp(names[i - 1], names[i]) == 0) {
            rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "entry \"%s\" appears twice",
                            names[i]);
            goto out;
        }
    }
out:
    free(names);
    return rc;
}

/* Record libzip's last error on za in diag. */
static int zip_fail(zip_t *za, const char *what, struct trove_diag *diag)
{
    return TROVE_FAIL(diag, zip_err_code(zip_get_error(za), TROVE_ERR_CORRUPT), 0,
                      "writing %s: %s", what, zip_strerror(za));
}

/* Add the entries to za, each with the method, date and attributes that make the output
 * deterministic. */
static int add_entries(zip_t *za, const char *tmp, const struct trove_bundle_entry *e, size_t n,
                       int deflate, struct trove_diag *diag)
{
    time_t mtime = dos_epoch();
    for (size_t i = 0; i < n; i++) {
        zip_source_t *src;
        zip_int64_t idx;
        src = zip_source_buffer(za, e[i].len ? e[i].data : (const uint8_t *)"", e[i].len, 0);
        if (!src)
            return zip_fail(za, tmp, diag);
        idx = zip_file_add(za, e[i].name, src, ZIP_FL_ENC_UTF_8);
        if (idx < 0) {
            zip_source_free(src);
            return zip_fail(za, tmp, diag);
        }
        if (zip_set_file_compression(za, (zip_uint64_t)idx,
                                     deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE,
                                     deflate ? 6 : 0) != 0 ||
            zip_file_set_mtime(za, (zip_uint64_t)idx, mtime, 0) != 0 ||
            zip_file_set_external_attributes(za, (zip_uint64_t)idx, 0, ZIP_OPSYS_UNIX,
                                             (zip_uint32_t)0100644 << 16) != 0)
            return zip_fail(za, tmp, diag);
    }
    return TROVE_OK;
}

int trove_bundle_write(const char *path, const struct trove_bundle_entry *e, size_t n,
                       int deflate, struct trove_diag *diag)
{
    zip_t *za = NULL;
    zip_error_t ze;
    char *tmp = NULL, *dir = NULL;
    size_t plen;
    int rc, fd = -1, zerr = 0;

    if ((rc = trove__zip_load(diag)) != TROVE_OK)
        return rc;
    zip_error_init(&ze);
    if (!path || !*path) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no path");
        goto out;
    }
    rc = check_entries(e, n, diag);
    if (rc != TROVE_OK)
        goto out;
    plen = strlen(path);
    tmp = trove__malloc(plen + 5);
    dir = parent_dir(path);
    if (!tmp || !dir) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);

    za = zip_open(tmp, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
    if (!za) {
        zip_error_init_with_code(&ze, zerr);
        rc = TROVE_FAIL(diag, zip_err_code(&ze, TROVE_ERR_CORRUPT), 0, "%s: %s", tmp,
                        zip_error_strerror(&ze));
        goto out;
    }
    rc = add_entries(za, tmp, e, n, deflate, diag);
    if (rc != TROVE_OK)
        goto out;
    if (zip_close(za) != 0) {
        rc = zip_fail(za, tmp, diag);
        goto out;
    }
    za = NULL;
    fd = open(tmp, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        rc = TROVE_FAIL(diag, -errno, 0, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    if (rename(tmp, path) != 0) {
        rc = TROVE_FAIL(diag, -errno, 0, "rename %s: %s", tmp, strerror(errno));
        goto out;
    }
    rc = fsync_dir(dir);
    if (rc != TROVE_OK)
        TROVE_FAIL(diag, rc, 0, "fsync of the directory of %s: %s", path, trove_strerror(rc));
out:
    if (fd >= 0)
        close(fd);
    if (za)
        zip_discard(za);
    /* On failure the temp goes (a stale one from a crash too); after a successful rename
     * it no longer exists and this is a no-op. If only the final directory fsync failed,
     * path holds the complete new bundle, not yet durable: that is reported, not undone. */
    if (tmp && rc != TROVE_OK)
        unlink(tmp);
    free(tmp);
    free(dir);
    zip_error_fini(&ze);
    return rc;
}

int trove_bundle_write_mem(const struct trove_bundle_entry *e, size_t n, int deflate,
                           struct trove_bytes *out, struct trove_diag *diag)
{
    zip_source_t *src = NULL;
    zip_t *za = NULL;
    zip_error_t ze;
    zip_stat_t st;
    size_t old = out ? out->len : 0;
    int rc;

    if ((rc = trove__zip_load(diag)) != TROVE_OK)
        return rc;
    zip_error_init(&ze);
    if (!out) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no output");
        goto out;
    }
    if ((rc = check_entries(e, n, diag)) != TROVE_OK)
        goto out;
    /* A buffer source that outlives the archive: zip_close writes the zip into it. */
    if (!(src = zip_source_buffer_create(NULL, 0, 0, &ze))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    zip_source_keep(src);
    if (!(za = zip_open_from_source(src, ZIP_TRUNCATE, &ze))) {
        rc = TROVE_FAIL(diag, zip_err_code(&ze, TROVE_ERR_CORRUPT), 0, "the bundle: %s",
                        zip_error_strerror(&ze));
        goto out;
    }
    if ((rc = add_entries(za, "the bundle", e, n, deflate, diag)) != TROVE_OK)
        goto out;
    if (zip_close(za) != 0) {
        rc = zip_fail(za, "the bundle", diag);
        goto out;
    }
    za = NULL;
    zip_stat_init(&st);
    if (zip_source_stat(src, &st) != 0 || !(st.valid & ZIP_STAT_SIZE) || st.size > SIZE_MAX ||
        zip_source_open(src) != 0) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "the bundle: %s",
                        zip_error_strerror(zip_source_error(src)));
        goto out;
    }
    if ((rc = trove_bytes_reserve(out, old + (size_t)st.size)) == TROVE_OK &&
        zip_source_read(src, out->ptr + old, st.size) != (zip_int64_t)st.size)
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "the bundle: reading it back: %s",
                        zip_error_strerror(zip_source_error(src)));
    zip_source_close(src);
    if (rc == TROVE_OK)
        out->len = old + (size_t)st.size;
out:
    if (za)
        zip_discard(za);
    if (src)
        zip_source_free(src);
    zip_error_fini(&ze);
    return rc;
}

static int cmp_ent_ptr(const void *a, const void *b)
{
    const struct bundle_ent *x = *(const struct bundle_ent *const *)a;
    const struct bundle_ent *y = *(const struct bundle_ent *const *)b;
    return strcmp(x->name, y->name);
}

/* The file entry named exactly name[0..len) (not NUL-terminated), or NULL. */
static const struct bundle_ent *find_exact(const struct trove_bundle *b, const char *name,
                                           size_t len)
{
    size_t lo = 0, hi = b->nfiles;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *m = b->sorted[mid]->name;
        int c = strncmp(m, name, len);
        if (c == 0)
            c = m[len] != 0; /* m is longer: after name */
        if (c == 0)
            return b->sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Where the bundle's files are: at the root when manifest.json is there; else in the one
 * folder FOLDER with a FOLDER/manifest.json (a bundle unzipped and zipped again as a
 * folder), whose entries are then found under their names without "FOLDER/". */
static int find_prefix(struct trove_bundle *b, struct trove_diag *diag)
{
    static const char m[] = TROVE_BUNDLE_MANIFEST_NAME;
    const size_t mlen = sizeof m - 1;
    const struct bundle_ent *found = NULL;

    if (find_exact(b, m, mlen))
        return TROVE_OK;
    for (size_t i = 0; i < b->nfiles; i++) {
        const char *name = b->sorted[i]->name, *slash = strchr(name, '/');
        if (!slash || strcmp(slash + 1, m) != 0)
            continue;
        if (found)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                              "no %s at the top, and one in both \"%s\" and \"%s\"", m,
                              found->name, name);
        found = b->sorted[i];
    }
    if (found) {
        b->prefix_len = (size_t)(strchr(found->name, '/') - found->name) + 1;
        memcpy(b->prefix, found->name, b->prefix_len);
        b->prefix[b->prefix_len] = 0;
    }
    return TROVE_OK;
}

/* Check the directory of the freshly opened archive and fill b's entry tables. */
static int check_directory(struct trove_bundle *b, struct trove_diag *diag)
{
    zip_int64_t count = zip_get_num_entries(b->za, 0);
    uint64_t total = 0;
    size_t i;

    if (count == 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "a bundle with no entries");
    if (count < 0 || (uint64_t)count > TROVE_BUNDLE_MAX_ENTRIES)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "%lld entries, more than %u",
                          (long long)count, TROVE_BUNDLE_MAX_ENTRIES);
    b->n = (size_t)count;
    b->ents = trove__calloc(b->n ? b->n : 1, sizeof *b->ents);
    b->sorted = trove__calloc(b->n ? b->n : 1, sizeof *b->sorted);
    if (!b->ents || !b->sorted)
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    for (i = 0; i < b->n; i++) {
        zip_stat_t st;
        const char *name = zip_get_name(b->za, i, ZIP_FL_ENC_RAW), *why;
        size_t len;
        int is_dir;
        if (!name)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "entry %zu: %s", i,
                              zip_strerror(b->za));
        /* A directory entry ("x/", as zip tools write for a folder) follows the rule
         * without its one trailing '/', and holds nothing. */
        len = strlen(name);
        is_dir = len > 1 && name[len - 1] == '/';
        if (trove_bundle_name_check(name, len - (size_t)is_dir, &why) != TROVE_OK)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "entry %zu: %s: \"%.200s\"", i,
                              why, name);
        zip_stat_init(&st);
        if (zip_stat_index(b->za, i, ZIP_FL_UNCHANGED, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "entry \"%s\": no size", name);
        if (is_dir && st.size != 0)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                              "entry %zu: directory \"%.200s\" holds %llu bytes", i, name,
                              (unsigned long long)st.size);
        if (st.size > TROVE_BUNDLE_MAX_TOTAL - total)
            return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                              "entries declare more than %llu bytes in all, at \"%s\"",
                              (unsigned long long)TROVE_BUNDLE_MAX_TOTAL, name);
        total += st.size;
        b->ents[i].name = name;
        b->ents[i].index = i;
        if (!is_dir)
            b->sorted[b->nfiles++] = &b->ents[i];
    }
    qsort(b->sorted, b->nfiles, sizeof *b->sorted, cmp_ent_ptr);
    for (i = 1; i < b->nfiles; i++)
        if (strcmp(b->sorted[i - 1]->name, b->sorted[i]->name) == 0)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "entry \"%s\" appears twice",
                              b->sorted[i]->name);
    return find_prefix(b, diag);
}

/* Open the archive behind src (consumed, on failure too) as a bundle. */
static int open_source(zip_source_t *src, const char *what, int is_file,
                       struct trove_bundle **out, struct trove_diag *diag)
{
    struct trove_bundle *b = NULL;
    zip_error_t ze;
    int rc;

    zip_error_init(&ze);
    b = trove__calloc(1, sizeof *b);
    if (!b) {
        zip_source_free(src);
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    b->za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    if (!b->za && zip_error_code_zip(&ze) == ZIP_ER_EXISTS) {
        /* libzip's duplicate-name check does not say which name: open again without the
         * consistency checks (which tolerates duplicates) to find it. The archive is
         * refused either way. src is still ours after a failed open. */
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "%s: a repeated entry name", what);
        zip_error_fini(&ze);
        zip_error_init(&ze);
        b->za = zip_open_from_source(src, ZIP_RDONLY, &ze);
        if (!b->za)
            zip_source_free(src);
        else if (check_directory(b, diag) == TROVE_OK)
            TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "%s: a repeated entry name", what);
        else if (diag)
            diag->code = TROVE_ERR_CORRUPT;
        goto out;
    }
    if (!b->za) {
        zip_source_free(src);
        rc = zip_err_code(&ze, TROVE_ERR_CORRUPT);
        /* a missing zip64 record is reported as NOENT */
        if (rc == -ENOENT && !is_file)
            rc = TROVE_ERR_CORRUPT;
        TROVE_FAIL(diag, rc, 0, "%s: %s", what, zip_error_strerror(&ze));
        goto out;
    }
    rc = check_directory(b, diag);
out:
    if (rc == TROVE_OK) {
        *out = b;
    } else {
        trove_bundle_close(b);
    }
    zip_error_fini(&ze);
    return rc;
}

int trove_bundle_open_file(const char *path, struct trove_bundle **out, struct trove_diag *diag)
{
    zip_source_t *src;
    zip_error_t ze;
    int rc;

    if (!path || !out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no path or output");
    if ((rc = trove__zip_load(diag)) != TROVE_OK)
        return rc;
    zip_error_init(&ze);
    src = zip_source_file_create(path, 0, -1, &ze);
    if (!src) {
        rc = zip_err_code(&ze, TROVE_ERR_CORRUPT);
        TROVE_FAIL(diag, rc, 0, "%s: %s", path, zip_error_strerror(&ze));
    } else {
        rc = open_source(src, path, 1, out, diag);
    }
    zip_error_fini(&ze);
    return rc;
}

int trove_bundle_open_mem(const uint8_t *buf, size_t len, struct trove_bundle **out,
                          struct trove_diag *diag)
{
    zip_source_t *src;
    zip_error_t ze;
    int rc;

    if ((!buf && len) || !out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no buffer or output");
    if ((rc = trove__zip_load(diag)) != TROVE_OK)
        return rc;
    zip_error_init(&ze);
    src = zip_source_buffer_create(len ? buf : (const uint8_t *)"", len, 0, &ze);
    if (!src) {
        rc = TROVE_FAIL(diag, zip_err_code(&ze, TROVE_ERR_NOMEM), 0, "bundle: %s",
                        zip_error_strerror(&ze));
    } else {
        rc = open_source(src, "bundle", 0, out, diag);
    }
    zip_error_fini(&ze);
    return rc;
}

size_t trove_bundle_count(const struct trove_bundle *b) { return b->n; }

const char *trove_bundle_folder(const struct trove_bundle *b) { return b->prefix; }

const char *trove_bundle_name(const struct trove_bundle *b, size_t i)
{
    return i < b->n ? b->ents[i].name : NULL;
}

int trove_bundle_find(const struct trove_bundle *b, const char *name, size_t *index_out)
{
    char key[2 * TROVE_BUNDLE_MAX_NAME + 2];
    const struct bundle_ent *e;
    size_t len = name ? strlen(name) : 0;

    if (!name || len > TROVE_BUNDLE_MAX_NAME)
        return TROVE_ERR_NOTFOUND;
    memcpy(key, b->prefix, b->prefix_len);
    memcpy(key + b->prefix_len, name, len);
    e = find_exact(b, key, b->prefix_len + len);
    if (!e)
        return TROVE_ERR_NOTFOUND;
    if (index_out)
        *index_out = (size_t)(e - b->ents);
    return TROVE_OK;
}

/* Check entry i's declared method and sizes against max before anything is allocated. */
static int check_entry_stat(struct trove_bundle *b, size_t i, uint64_t max, zip_stat_t *st,
                            struct trove_diag *diag)
{
    const char *name = b->ents[i].name;
    zip_stat_init(st);
    if (zip_stat_index(b->za, b->ents[i].index, 0, st) != 0)
        return TROVE_FAIL(diag, zip_err_code(zip_get_error(b->za), TROVE_ERR_CORRUPT), 0,
                          "entry \"%s\": %s", name, zip_strerror(b->za));
    if ((st->valid & (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD)) !=
        (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "entry \"%s\": sizes unknown", name);
    if ((st->valid & ZIP_STAT_ENCRYPTION_METHOD) && st->encryption_method != ZIP_EM_NONE)
        return TROVE_FAIL(diag, TROVE_ERR_FORMAT, 0, "entry \"%s\" is encrypted", name);
    if (st->comp_method != ZIP_CM_STORE && st->comp_method != ZIP_CM_DEFLATE)
        return TROVE_FAIL(diag, TROVE_ERR_FORMAT, 0,
                          "entry \"%s\": compression method %d (only stored and deflated)",
                          name, (int)st->comp_method);
    if (st->size > max || st->size > SIZE_MAX - 1)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                          "entry \"%s\" declares %llu bytes, more than the limit %llu", name,
                          (unsigned long long)st->size, (unsigned long long)max);
    if (st->comp_method == ZIP_CM_STORE && st->size != st->comp_size)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "stored entry \"%s\" declares %llu bytes but holds %llu", name,
                          (unsigned long long)st->size, (unsigned long long)st->comp_size);
    if (st->comp_method == ZIP_CM_DEFLATE &&
        st->size / DEFLATE_MAX_RATIO > st->comp_size)
        return TROVE_FAIL(diag, TROVE_ERR_BOMB, 0,
                          "entry \"%s\" declares %llu bytes from %llu compressed, more than "
                          "deflate can produce", name, (unsigned long long)st->size,
                          (unsigned long long)st->comp_size);
    if (st->comp_method == ZIP_CM_DEFLATE && st->size > TROVE_BUNDLE_RATIO_FREE &&
        st->size / TROVE_BUNDLE_MAX_RATIO > st->comp_size)
        return TROVE_FAIL(diag, TROVE_ERR_BOMB, 0,
                          "entry \"%s\" declares %llu bytes from %llu compressed, over %u:1 "
                          "(a zip bomb?)", name, (unsigned long long)st->size,
                          (unsigned long long)st->comp_size, TROVE_BUNDLE_MAX_RATIO);
    return TROVE_OK;
}

int trove_bundle_read(struct trove_bundle *b, const char *name, uint64_t max,
                      struct trove_bytes *out, struct trove_diag *diag)
{
    zip_file_t *zf = NULL;
    zip_stat_t st;
    uint64_t got = 0;
    uint8_t probe;
    zip_int64_t r;
    size_t i;
    int rc;

    if (!b || !out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no bundle or output");
    if (trove_bundle_find(b, name, &i) != TROVE_OK) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOTFOUND, 0, "no entry \"%.255s\"",
                        name ? name : "");
        goto out;
    }
    rc = check_entry_stat(b, i, max, &st, diag);
    if (rc != TROVE_OK)
        goto out;
    zf = zip_fopen_index(b->za, b->ents[i].index, 0);
    if (!zf) {
        rc = TROVE_FAIL(diag, zip_err_code(zip_get_error(b->za), TROVE_ERR_CORRUPT), 0,
                        "entry \"%s\": %s", name, zip_strerror(b->za));
        goto out;
    }
    while (got < st.size) {
        /* Room for what comes next, growing with what came: a header that lies long costs
         * the bytes that really arrive, not the bytes it declares. */
        uint64_t want = st.size - got, step = got > READ_STEP ? got : READ_STEP;
        if (want > step)
            want = step;
        if ((rc = trove_bytes_reserve(out, (size_t)(got + want))) != TROVE_OK) {
            TROVE_FAIL(diag, rc, got, "entry \"%s\": out of memory for %llu bytes", name,
                       (unsigned long long)(got + want));
            goto out;
        }
        r = zip_fread(zf, out->ptr + out->len + got, (zip_uint64_t)want);
        if (r < 0) {
            rc = TROVE_FAIL(diag, zip_err_code(zip_file_get_error(zf), TROVE_ERR_CORRUPT),
                            got, "entry \"%s\": %s", name, zip_file_strerror(zf));
            goto out;
        }
        if (r == 0) {
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, got,
                            "entry \"%s\" ends after %llu of its %llu bytes", name,
                            (unsigned long long)got, (unsigned long long)st.size);
            goto out;
        }
        got += (uint64_t)r;
    }
    /* One byte more must be the end; reaching it is what makes libzip check the CRC. */
    r = zip_fread(zf, &probe, 1);
    if (r < 0) {
        rc = TROVE_FAIL(diag, zip_err_code(zip_file_get_error(zf), TROVE_ERR_CORRUPT), got,
                        "entry \"%s\": %s", name, zip_file_strerror(zf));
        goto out;
    }
    if (r > 0) {
        rc = TROVE_FAIL(diag, st.comp_method == ZIP_CM_DEFLATE ? TROVE_ERR_BOMB
                                                               : TROVE_ERR_CORRUPT,
                        got, "entry \"%s\" holds more than its declared %llu bytes", name,
                        (unsigned long long)st.size);
        goto out;
    }
    out->len += (size_t)st.size;
out:
    if (zf)
        zip_fclose(zf);
    return rc;
}

void trove_bundle_close(struct trove_bundle *b)
{
    if (!b)
        return;
    if (b->za)
        zip_discard(b->za);
    free(b->ents);
    free(b->sorted);
    free(b);
}
