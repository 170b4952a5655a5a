/*
 * backend_internal.h: the object backend's internal vtable. struct trove_backend is the
 * common head of every backend; a backend embeds it as its first member and sets ops, and
 * the public functions in backend.c check their arguments once and dispatch through ops.
 * A new backend (S3, an in-memory test double) is one .c file with one ops table and one
 * open function; nothing above store.h changes.
 *
 * The ops receive arguments already validated by backend.c: be and d are non-NULL, d is
 * not the zero digest, data is non-NULL when len > 0, out and fn are non-NULL. They return
 * what the matching public function documents in include/trove/store.h.
 */
#ifndef TROVE_STORE_BACKEND_INTERNAL_H
#define TROVE_STORE_BACKEND_INTERNAL_H

#include "refmap.h"
#include "trove/backend.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct trove_backend_ops {
    const char *name; /* "fs", "s3", ... for messages */
    int (*put)(struct trove_backend *be, const struct trove_digest *d, const void *data,
               size_t len, int *created_out);
    /* out->len is 0 on entry; get appends the object's bytes. */
    int (*get)(struct trove_backend *be, const struct trove_digest *d, struct trove_bytes *out,
               size_t max_len);
    int (*size)(struct trove_backend *be, const struct trove_digest *d, uint64_t *len_out);
    int (*del)(struct trove_backend *be, const struct trove_digest *d);
    int (*list)(struct trove_backend *be, int (*fn)(void *ctx, const struct trove_digest *d),
                void *ctx);
    /* Optional (NULL: backend.c puts at once and publish does nothing). */
    int (*stage)(struct trove_backend *be, const struct trove_digest *d, const void *data,
                 size_t len);
    int (*publish)(struct trove_backend *be, uint64_t *overhead_out);
    /* Optional (NULL: none): trove_backend_get_start's op, done called as it documents;
     * async_ok says whether this handle has it now (a wrapper asks its inner backend). */
    int (*get_start)(struct trove_backend *be, const struct trove_digest *d,
                     struct trove_bytes *out, size_t max_len, trove_get_done_fn done, void *ctx);
    int (*async_ok)(const struct trove_backend *be);
    /* Optional (NULL: a deferred put is a put): a put whose object is durable, and its name
     * visible, only after the next flush, so that a batch of puts costs the backend one
     * sync rather than one or two per object (fs: backend_fs_defer.c). */
    int (*defer_put)(struct trove_backend *be, const struct trove_digest *d, const void *data,
                     size_t len);
    int (*flush)(struct trove_backend *be);
    /* Optional (NULL: defer_put): defer_put of data[0..len), which are also the bytes of file
     * src_fd at src_off, copied from there by the kernel (fs: copy_file_range). */
    int (*defer_put_from)(struct trove_backend *be, const struct trove_digest *d,
                          const void *data, size_t len, int src_fd, uint64_t src_off);
    /* Optional (NULL: damage is reported but not remembered): the quarantine of damaged
     * objects. quarantine records that d's stored bytes do not hash to d (why: a line of
     * text), even on a read-only handle; quarantined says whether d is recorded (1) or not
     * (0); release drops the record; quarantine_list calls fn for every record. Thread-safe. */
    int (*quarantine)(struct trove_backend *be, const struct trove_digest *d, const char *why);
    int (*quarantined)(struct trove_backend *be, const struct trove_digest *d);
    int (*release)(struct trove_backend *be, const struct trove_digest *d);
    int (*quarantine_list)(struct trove_backend *be,
                           int (*fn)(void *ctx, const struct trove_digest *d), void *ctx);
    /* Optional (NULL: none): the containers of objects the backend could not read at open
     * (fs: pack files whose footer or index fails its checks), each by name with why; with
     * remove, each still unreadable is deleted after fn sees it. Owner thread only. */
    int (*unreadable)(struct trove_backend *be, int remove,
                      int (*fn)(void *ctx, const char *name, const char *why), void *ctx);
    /* Release everything, including be itself. */
    void (*close)(struct trove_backend *be);
};

struct trove_backend {
    const struct trove_backend_ops *ops;
    int no_verify; /* TROVE_BACKEND_NOVERIFY: trove_backend_get trusts the bytes */
};

/* Whether trove_backend_get checks what it reads against the digest (callers that must
 * check in any case, as the recipe loader, hash only when it does not). */
static inline int trove__backend_verifies(const struct trove_backend *be) { return !be->no_verify; }

/* ---- the filesystem backend (backend_fs.c, and its quarantine in fs_quarantine.c) ----- */

#define FS_PATH_MAX 4096              /* longest store directory name accepted */
#define FS_IO_CHUNK ((size_t)1 << 30) /* largest single read()/write() */
#define FS_TMP_TRIES 16               /* temp names tried before giving up */
#define FS_TMP_STALE_SEC (24 * 3600)  /* a temp file this old is garbage, live pid or not */
#define FS_DIR_MODE 0755
#define FS_FILE_MODE 0644

/* Pack descriptors kept open for reads, a few at a time (a store may hold thousands of
 * packs): slot k holds pack p[k]'s descriptor plus one in fd1[k] (0: empty). */
#define FS_PACK_FDS 16
struct fs_pack_fds {
    uint32_t p[FS_PACK_FDS];
    int fd1[FS_PACK_FDS];
    unsigned next; /* the slot the next miss reuses */
};

struct fs_backend {
    struct trove_backend base; /* first: backend.c sees only this */
    int objects_fd;            /* dir/objects */
    int tmp_fd;                /* dir/tmp, or -1 when read-only */
    int readonly;              /* put and delete refused */
    int nosync;                /* TROVE_BACKEND_NOSYNC: no fsync at all */
    int packs_fd;              /* dir/objects/packs, or -1 (read-only, none yet) */
    /* Packed objects: committed = offset in the pack, len = length, dict_index = pack
     * number (an index into packs). Guarded by mu: the put pool's threads look objects up
     * while the owner stages and deletes. */
    pthread_mutex_t mu;
    pthread_mutex_t refresh_mu; /* readers looking for new packs take turns */
    struct refmap packed;
    struct fs_pack *packs;
    size_t npacks, cap_packs;
    struct fs_pack_fds pack_fds;
    /* Staged objects: bytes back to back in one buffer, written as one pack by publish. */
    struct trove_bytes stage_buf;
    struct trove__pack_entry *stage_e;
    size_t nstage, cap_stage;
    struct refmap stage_set;
    struct fs_bad_pack *bad;  /* packs open could not read (owner thread only) */
    size_t nbad;
    int root_fd;              /* dir, for making dir/quarantine on the first damage */
    atomic_int quarantine_fd; /* dir/quarantine, or -1 while there is none */
    /* Deferred puts (backend_fs_defer.c): temp files written, not yet synced nor linked,
     * each with the name it gets at the flush; seen: a deferred put found its object there
     * already (its name, maybe just linked by another process, is made durable at the
     * flush). Guarded by defer_mu: the put pool's threads add, the owner flushes. */
    pthread_mutex_t defer_mu;
    struct fs_deferred *defer;
    size_t ndefer, cap_defer;
    int defer_seen;
};

struct fs_deferred {
    char tmp[64]; /* in dir/tmp */
    char rel[36]; /* "h0h1/<32 hex>" in dir/objects */
};

struct fs_pack {
    char name[48]; /* <32 hex>.pack */
    uint64_t live, live_bytes, total_bytes;
};


struct fs_bad_pack {
    char name[48];
    char why[256];
};

/* backend_fs.c: a temp name no other writer (thread, process, or earlier process with the
 * same pid) uses, starting with the writer's pid; fsync of a directory descriptor (EINVAL,
 * a filesystem that cannot, is no error); all n bytes written to fd. 0 or -errno. */
void trove__fs_temp_name(char out[64]);
/* A new file (O_EXCL) under dirfd with such a name, written into tmp, for writing: its fd,
 * or -errno (after FS_TMP_TRIES names taken already). */
int trove__fs_temp_open(int dirfd, char tmp[64]);
int trove__fs_fsync_dir_fd(int fd);
int trove__fs_write_all(int fd, const uint8_t *p, size_t n);
/* fan = "h0h1", rel = "h0h1/<32 hex>" (relative to dir/objects) of digest d. */
void trove__fs_object_name(const struct trove_digest *d, char fan[3], char rel[36]);
/* Make directory name under at if missing (a link to a directory elsewhere is
 * TROVE_ERR_CORRUPT); when this call made it and sync is set, fsync at. 0 or -errno. */
int trove__fs_ensure_dir(int at, const char *name, int sync);

/* backend_fs_defer.c: the fs backend's deferred puts (its ops table names them), and what
 * its close does with puts never flushed (their temp files removed). */
int trove__fs_defer_put(struct trove_backend *base, const struct trove_digest *d,
                        const void *data, size_t len);
int trove__fs_defer_put_from(struct trove_backend *base, const struct trove_digest *d,
                             const void *data, size_t len, int src_fd, uint64_t src_off);
int trove__fs_flush(struct trove_backend *base);
void trove__fs_defer_drop(struct fs_backend *be);

/* backend.c: a deferred put through the backend's op (a quarantined object is healed at
 * once, by a put), and the flush that makes every deferred put durable and visible. */
int trove__backend_put_deferred(struct trove_backend *be, const struct trove_digest *d,
                                const void *data, size_t len);
int trove__backend_flush(struct trove_backend *be);
/* Whether the backend copies between files (defer_put_from), and that deferred put (a
 * backend without it, or a quarantined object: trove__backend_put_deferred of data). */
int trove__backend_copies(const struct trove_backend *be);
int trove__backend_put_from_deferred(struct trove_backend *be, const struct trove_digest *d,
                                     const void *data, size_t len, int src_fd,
                                     uint64_t src_off);

/* fs_quarantine.c: the fs backend's quarantine ops (its ops table names them). */
int trove__fs_quarantine(struct trove_backend *base, const struct trove_digest *d,
                         const char *why);
int trove__fs_quarantined(struct trove_backend *base, const struct trove_digest *d);
int trove__fs_release(struct trove_backend *base, const struct trove_digest *d);
int trove__fs_quarantine_list(struct trove_backend *base,
                              int (*fn)(void *ctx, const struct trove_digest *d), void *ctx);

#endif
