/*
 * crash_child.c: the child of test_crash, the workload it kills. It opens the store and runs
 * random operations forever — writes (random bytes, zeros, copies of other blocks so that
 * objects are shared), reads checked against its model, whole puts (resize + write +
 * commit), resizes, commits, snapshots (at most SNAP_KEEP, the oldest removed first),
 * removal and re-creation of a volume, dropping uncommitted changes by reopening, gc, and
 * heals — on two small volumes and a big sparse v3 one, whose small commits write patch
 * segments. Each operation is journaled as test_crash.c's top comment says, with one
 * write(2) per line, so that the parent can tell after a SIGKILL which states the store may
 * be in. The model holds two copies of each volume's bytes: what is written and what is
 * committed.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crash_test.h"
#include "testutil.h"
#include "trove/recipe.h"
#include "trove/backend.h"
#include "trove/volume.h"

#define VOL_MIN (64u << 10)  /* volume sizes: VOL_MIN .. SMALL_MAX bytes */
#define SMALL_MAX (512u << 10)
#define MAX_SLOTS 64         /* ... and at most this many blocks */
#define NVOLS 3
#define SNAP_KEEP 3          /* snapshots kept; the oldest is removed first */
#define HEAL_FIRST 8         /* one round in this many starts with a heal */

static const char *const vol_names[NVOLS] = {"a", "b", "c"};

/* Operation kinds, as written after "begin". */
const char *const kind_names[K_COUNT] = {"write",  "read",   "put",    "commit",
                                                "resize", "snapshot", "unsnap", "reopen",
                                                "remove", "create", "gc",     "heal"};

static void fill_random(uint8_t *p, size_t n, uint64_t *rng)
{
    uint64_t x;
    while (n >= 8) {
        x = test_rand(rng);
        memcpy(p, &x, 8);
        p += 8;
        n -= 8;
    }
    if (n) {
        x = test_rand(rng);
        memcpy(p, &x, n);
    }
}

/* A volume size: any byte count from VOL_MIN to SMALL_MAX or MAX_SLOTS blocks, whichever is
 * less (so that a put stays short next to the kill delays), a block multiple half the time. */
static uint64_t random_size(uint64_t *rng, uint32_t block_size)
{
    uint64_t max = (uint64_t)block_size * MAX_SLOTS < SMALL_MAX ? (uint64_t)block_size * MAX_SLOTS
                                                                 : SMALL_MAX;
    uint64_t n = VOL_MIN + rnd(rng, max - VOL_MIN + 1);
    if (rnd(rng, 2))
        n -= n % block_size; /* VOL_MIN is a multiple of every block size used */
    return n;
}

static int is_snapshot_name(const char *name, uint64_t *n_out)
{
    char *end;
    if (strncmp(name, "snap-", 5) != 0 || name[5] < '0' || name[5] > '9')
        return 0;
    errno = 0;
    *n_out = strtoull(name + 5, &end, 10);
    return errno == 0 && *end == 0;
}

/* ---- the child ------------------------------------------------------------------------ */

/* One of the child's volumes: an open handle and two models of its bytes. Invariant: the
 * bytes of cur past size, and of com past com_size, are zero. */
struct cvol {
    const char *name;
    struct trove_volume *v; /* NULL: the volume does not exist */
    uint64_t size;          /* in-memory state */
    uint64_t com_size;      /* committed state */
    uint8_t *cur, *com;     /* VOL_MAX bytes each */
};

struct child {
    struct trove_store *s;
    struct cvol vol[NVOLS];
    uint64_t snaps[MAX_NAMES]; /* committed snapshot numbers, oldest first */
    size_t nsnaps;
    uint64_t next_snap;
    uint8_t *tmp, *zeros; /* VOL_MAX bytes each */
    struct trove_digest *dig; /* VOL_MAX / 4096 digests: the slots of any volume */
    const char *store_dir;
    char side[640];           /* a heal's good bytes, beside the journal */
    uint64_t rng;
    int jfd;
};

/* Append one line to the journal with one write(2); a child that cannot journal stops. */
static void jlog(struct child *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void jlog(struct child *c, const char *fmt, ...)
{
    char line[JLINE_MAX];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line || write(c->jfd, line, (size_t)n) != (ssize_t)n)
        _exit(CHILD_FAILED + 1);
}

static _Noreturn void child_fail(struct child *c, enum kind k, int rc, const char *what)
{
    jlog(c, "error %s %d %s: %s\n", kind_names[k], rc, what, trove_strerror(rc));
    _exit(CHILD_FAILED);
}

#define CHILD_TRY(c, k, call)                                                             \
    do {                                                                                  \
        int rc_ = (call);                                                                 \
        if (rc_ != TROVE_OK)                                                              \
            child_fail((c), (k), rc_, #call);                                             \
    } while (0)

static void jlog_pending(struct child *c, const char *name, uint64_t size, const uint8_t *bytes,
                       int readonly)
{
    jlog(c, "pending %s %" PRIu64 " %016" PRIx64 " %d\n", name, size,
         trove_checksum64(bytes, (size_t)size), readonly);
}

/* Read all of v's bytes and compare them with want[0..size); a difference is an error. */
static void child_check_bytes(struct child *c, enum kind k, struct trove_volume *v,
                              const uint8_t *want, uint64_t size)
{
    struct trove_volume_info info;
    CHILD_TRY(c, k, trove_volume_info(v, &info));
    if (info.size != size)
        child_fail(c, k, TROVE_ERR_MISMATCH, "volume size differs from the model");
    CHILD_TRY(c, k, trove_volume_read(v, 0, c->tmp, (size_t)size));
    if (memcmp(c->tmp, want, (size_t)size) != 0)
        child_fail(c, k, TROVE_ERR_MISMATCH, "volume bytes differ from the model");
}

static void child_load(struct child *c)
{
    struct trove_volume_entry *list = NULL;
    size_t n = 0;
    uint64_t num;

    CHILD_TRY(c, K_READ, trove_volume_list(c->s, &list, &n));
    for (size_t i = 0; i < n; i++) {
        struct cvol *cv = NULL;
        struct trove_volume_info info;
        if (list[i].error != TROVE_OK)
            child_fail(c, K_READ, list[i].error, list[i].name);
        for (int k = 0; k < NVOLS; k++)
            if (strcmp(list[i].name, vol_names[k]) == 0)
                cv = &c->vol[k];
        if (cv) {
            CHILD_TRY(c, K_READ, trove_volume_open(c->s, cv->name, &cv->v, NULL));
            CHILD_TRY(c, K_READ, trove_volume_info(cv->v, &info));
            if (info.size > VOL_MAX || info.dirty || info.readonly)
                child_fail(c, K_READ, TROVE_ERR_MISMATCH, "unexpected volume info");
            cv->size = cv->com_size = info.size;
            CHILD_TRY(c, K_READ, trove_volume_read(cv->v, 0, cv->com, (size_t)info.size));
            memcpy(cv->cur, cv->com, VOL_MAX);
        } else if (is_snapshot_name(list[i].name, &num) && c->nsnaps < MAX_NAMES) {
            c->snaps[c->nsnaps++] = num; /* the list is sorted by name, not number */
            for (size_t j = c->nsnaps - 1; j > 0 && c->snaps[j - 1] > c->snaps[j]; j--) {
                uint64_t t = c->snaps[j];
                c->snaps[j] = c->snaps[j - 1];
                c->snaps[j - 1] = t;
            }
            if (num >= c->next_snap)
                c->next_snap = num + 1;
        } else {
            child_fail(c, K_READ, TROVE_ERR_MISMATCH, list[i].name);
        }
    }
    free(list);
}

/* Fill dst[0..len) with one of: random bytes, zeros, or bytes copied from some volume's
 * model at a 4 KiB boundary (so that a block dedups against an existing object; random
 * bytes when those are zeros, as they are in the sparse parts of the volumes). */
static void child_pattern(struct child *c, uint8_t *dst, size_t len)
{
    uint64_t r = rnd(&c->rng, 10);
    if (r < 5) {
        fill_random(dst, len, &c->rng);
    } else if (r < 7) {
        memset(dst, 0, len);
    } else {
        const struct cvol *src = &c->vol[rnd(&c->rng, NVOLS)];
        size_t off = (size_t)rnd(&c->rng, VOL_MAX / 4096) * 4096;
        if (off + len > VOL_MAX)
            off = VOL_MAX - len;
        if (memcmp(src->cur + off, c->zeros, len) != 0)
            memmove(dst, src->cur + off, len);
        else
            fill_random(dst, len, &c->rng);
    }
}

static void op_write(struct child *c, struct cvol *cv)
{
    uint64_t off = rnd(&c->rng, cv->size), len, r = rnd(&c->rng, 4);
    struct trove_volume_info info;

    CHILD_TRY(c, K_WRITE, trove_volume_info(cv->v, &info));
    if (r == 0) { /* a few bytes */
        len = 1 + rnd(&c->rng, 64);
    } else if (r == 1) { /* whole aligned blocks */
        off -= off % info.block_size;
        len = info.block_size * (1 + rnd(&c->rng, 2));
    } else { /* anything up to three blocks, often across a boundary */
        len = 1 + rnd(&c->rng, 3 * (uint64_t)info.block_size);
    }
    if (len > cv->size - off)
        len = cv->size - off;
    child_pattern(c, c->tmp, (size_t)len);
    jlog(c, "begin write\n");
    CHILD_TRY(c, K_WRITE, trove_volume_write(cv->v, off, c->tmp, (size_t)len));
    memcpy(cv->cur + off, c->tmp, (size_t)len);
    jlog(c, "end\n");
}

static void op_read(struct child *c, struct cvol *cv)
{
    uint64_t off = rnd(&c->rng, cv->size + 1), len = rnd(&c->rng, cv->size - off + 1);
    if (rnd(&c->rng, 3) == 0) { /* the whole volume */
        off = 0;
        len = cv->size;
    }
    jlog(c, "begin read\n");
    CHILD_TRY(c, K_READ, trove_volume_read(cv->v, off, c->tmp, (size_t)len));
    if (memcmp(c->tmp, cv->cur + off, (size_t)len) != 0)
        child_fail(c, K_READ, TROVE_ERR_MISMATCH, "read differs from the model");
    jlog(c, "end\n");
}

static void op_commit(struct child *c, struct cvol *cv, enum kind k)
{
    struct trove_volume_info info;
    CHILD_TRY(c, k, trove_volume_info(cv->v, &info));
    if (!info.dirty &&
        (cv->size != cv->com_size || memcmp(cv->cur, cv->com, VOL_MAX) != 0))
        child_fail(c, k, TROVE_ERR_MISMATCH, "changed volume is not dirty");
    jlog(c, "begin %s\n", kind_names[k]);
    jlog_pending(c, cv->name, cv->size, cv->cur, 0);
    CHILD_TRY(c, k, trove_volume_commit(cv->v));
    memcpy(cv->com, cv->cur, VOL_MAX);
    cv->com_size = cv->size;
    jlog(c, "end\n");
}

static void model_resize(struct cvol *cv, uint64_t size)
{
    if (size < cv->size)
        memset(cv->cur + size, 0, (size_t)(cv->size - size));
    cv->size = size;
}

static void op_resize(struct child *c, struct cvol *cv)
{
    struct trove_volume_info info;
    uint64_t size;
    CHILD_TRY(c, K_RESIZE, trove_volume_info(cv->v, &info));
    size = random_size(&c->rng, info.block_size);
    jlog(c, "begin resize\n");
    CHILD_TRY(c, K_RESIZE, trove_volume_resize(cv->v, size));
    model_resize(cv, size);
    child_check_bytes(c, K_RESIZE, cv->v, cv->cur, cv->size); /* the cut or grown edge */
    jlog(c, "end\n");
    if (rnd(&c->rng, 2))
        op_commit(c, cv, K_COMMIT);
}

/* A whole put: new size and content, block by block random, zero or a copy, committed. */
static void op_put(struct child *c, struct cvol *cv)
{
    struct trove_volume_info info;
    uint64_t size;
    size_t bs;

    CHILD_TRY(c, K_PUT, trove_volume_info(cv->v, &info));
    bs = info.block_size;
    size = random_size(&c->rng, info.block_size);
    memset(c->tmp, 0, VOL_MAX);
    for (size_t off = 0; off < size; off += bs) {
        size_t n = size - off < bs ? (size_t)size - off : bs;
        if (off >= bs && rnd(&c->rng, 4) == 0)
            memcpy(c->tmp + off, c->tmp + (size_t)rnd(&c->rng, off / bs) * bs, n);
        else
            child_pattern(c, c->tmp + off, n);
    }
    jlog(c, "begin put\n");
    jlog_pending(c, cv->name, size, c->tmp, 0);
    CHILD_TRY(c, K_PUT, trove_volume_resize(cv->v, size));
    CHILD_TRY(c, K_PUT, trove_volume_write(cv->v, 0, c->tmp, (size_t)size));
    CHILD_TRY(c, K_PUT, trove_volume_commit(cv->v));
    memcpy(cv->cur, c->tmp, VOL_MAX);
    memcpy(cv->com, c->tmp, VOL_MAX);
    cv->size = cv->com_size = size;
    jlog(c, "end\n");
}

static void op_snapshot(struct child *c, struct cvol *cv)
{
    char name[64];
    /* Trim first, so a kill never leaves more than SNAP_KEEP behind. */
    while (c->nsnaps >= SNAP_KEEP) {
        snprintf(name, sizeof name, "snap-%" PRIu64, c->snaps[0]);
        jlog(c, "begin unsnap\n");
        jlog(c, "pending %s absent\n", name);
        CHILD_TRY(c, K_UNSNAP, trove_volume_remove(c->s, name, NULL));
        jlog(c, "end\n");
        memmove(c->snaps, c->snaps + 1, --c->nsnaps * sizeof *c->snaps);
    }
    snprintf(name, sizeof name, "snap-%" PRIu64, c->next_snap);
    jlog(c, "begin snapshot\n");
    jlog_pending(c, name, cv->com_size, cv->com, 1);
    CHILD_TRY(c, K_SNAPSHOT, trove_snapshot_create(c->s, cv->name, name, NULL));
    c->snaps[c->nsnaps++] = c->next_snap++;
    jlog(c, "end\n");
}

/* Drop the uncommitted changes by closing and reopening; the committed bytes come back. */
static void op_reopen(struct child *c, struct cvol *cv)
{
    struct trove_volume_info info;
    jlog(c, "begin reopen\n");
    trove_volume_close(cv->v);
    cv->v = NULL;
    CHILD_TRY(c, K_REOPEN, trove_volume_open(c->s, cv->name, &cv->v, NULL));
    CHILD_TRY(c, K_REOPEN, trove_volume_info(cv->v, &info));
    if (info.dirty)
        child_fail(c, K_REOPEN, TROVE_ERR_MISMATCH, "a reopened volume is dirty");
    child_check_bytes(c, K_REOPEN, cv->v, cv->com, cv->com_size);
    memcpy(cv->cur, cv->com, VOL_MAX);
    cv->size = cv->com_size;
    jlog(c, "end\n");
}

static void op_remove(struct child *c, struct cvol *cv)
{
    trove_volume_close(cv->v);
    cv->v = NULL;
    jlog(c, "begin remove\n");
    jlog(c, "pending %s absent\n", cv->name);
    CHILD_TRY(c, K_REMOVE, trove_volume_remove(c->s, cv->name, NULL));
    memset(cv->cur, 0, VOL_MAX);
    memset(cv->com, 0, VOL_MAX);
    cv->size = cv->com_size = 0;
    jlog(c, "end\n");
}

static void op_create(struct child *c, struct cvol *cv)
{
    uint32_t bs = rnd(&c->rng, 4) ? 16384 : 4096;
    uint64_t size = random_size(&c->rng, bs);

    if (cv == &c->vol[NVOLS - 1]) {
        /* The last volume is big and sparse, in v3: writes land in one or two of its 1100
         * slots, so each commit writes patches of its recipe's full segment. */
        size = (uint64_t)BIG_SLOTS * BIG_BS;
        jlog(c, "begin create\n");
        jlog_pending(c, cv->name, size, c->zeros, 0);
        CHILD_TRY(c, K_CREATE, trove_volume_create_format(c->s, cv->name, size, BIG_BS,
                                                          TROVE_RECIPE_FORMAT_V3, &cv->v, NULL));
        cv->size = cv->com_size = size;
        jlog(c, "end\n");
        return;
    }
    jlog(c, "begin create\n");
    jlog_pending(c, cv->name, size, c->zeros, 0);
    /* Both recipe formats, so that the crash story holds for each. */
    CHILD_TRY(c, K_CREATE,
              trove_volume_create_format(c->s, cv->name, size, bs,
                                         (test_rand(&c->rng) & 1) ? TROVE_RECIPE_FORMAT_V1
                                                                  : TROVE_RECIPE_FORMAT_V3,
                                         &cv->v, NULL));
    cv->size = cv->com_size = size;
    jlog(c, "end\n");
    if (rnd(&c->rng, 3) == 0) /* full volumes too, so that resizes cut through data */
        op_put(c, cv);
}

static void op_gc(struct child *c)
{
    struct trove_gc_report rep;
    jlog(c, "begin gc\n");
    CHILD_TRY(c, K_GC, trove_store_gc(c->s, &rep, NULL, NULL));
    jlog(c, "end\n");
}

/* Bytes slot i holds in a volume of size bytes: 0 past the end. */
static size_t slot_bytes(uint64_t size, uint32_t bs, uint64_t i)
{
    uint64_t start = i * bs;
    if (start >= size)
        return 0;
    return (size_t)(size - start < bs ? size - start : bs);
}

/* Write all of p[0..n) to path (a new file); a short write is -1. */
static int write_file(const char *path, const uint8_t *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc = 0;
    if (fd < 0)
        return -1;
    while (n > 0 && rc == 0) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno != EINTR) {
            rc = -1;
        }
    }
    return close(fd) != 0 ? -1 : rc;
}

/* A block of cv for op_heal: *pick, unchanged since its commit, not all zeros, its object a
 * loose file (its path in path); *other, a slot naming some other object, if any. */
static int heal_pick(struct child *c, struct cvol *cv, uint32_t bs, uint64_t *pick,
                     uint64_t *other, char path[1024])
{
    uint64_t n = (cv->size + bs - 1) / bs, start;
    char hex[33];
    struct stat sb;

    *pick = *other = UINT64_MAX;
    if (n == 0)
        return 0;
    CHILD_TRY(c, K_HEAL, trove_volume_slot_digests(cv->v, 0, n, c->dig));
    start = rnd(&c->rng, n);
    for (uint64_t k = 0; k < n && *pick == UINT64_MAX; k++) {
        uint64_t i = (start + k) % n, off = i * bs;
        size_t len = slot_bytes(cv->size, bs, i);
        if (trove_digest_is_zero(&c->dig[i]) || len != slot_bytes(cv->com_size, bs, i) ||
            memcmp(cv->cur + off, cv->com + off, len) != 0)
            continue;
        trove_digest_hex(&c->dig[i], hex);
        snprintf(path, 1024, "%s/objects/%.2s/%s", c->store_dir, hex, hex);
        if (stat(path, &sb) == 0)
            *pick = i;
    }
    for (uint64_t i = 0; *pick != UINT64_MAX && i < n && *other == UINT64_MAX; i++)
        if (!trove_digest_is_zero(&c->dig[i]) && !trove_digest_equal(&c->dig[i], &c->dig[*pick]))
            *other = i;
    return *pick != UINT64_MAX;
}

/*
 * Damage the object of one committed block on disk, as a bad disk would, and heal it as a
 * user would: the read that finds the damage must fail and put it on record, and putting
 * the block's bytes again must replace it. Only a block unchanged since its commit, with a
 * loose object (recipe objects live in packs and have no "put again"), so that the heal
 * changes no committed state. The good bytes go to a side file before the damage is
 * journaled, so that the parent can finish a heal the kill cut short. The block is looked
 * for in volume first, then in the others; when none has one, first gets a random block,
 * committed, so that heals do not depend on how much data the kills let the volumes keep.
 */
static void op_heal(struct child *c, struct cvol *first)
{
    struct trove_backend *be = trove_store_backend(c->s);
    struct trove_volume_info info;
    struct trove_digest d;
    struct cvol *cv = NULL;
    uint64_t pick = UINT64_MAX, other = UINT64_MAX, off, at;
    size_t len, olen;
    char hex[33], path[1024];
    uint8_t byte = 0;
    int fd, created = 0, dirty, ok;

    for (int k = 0; k < NVOLS && !cv; k++) {
        struct cvol *x = &c->vol[(first - c->vol + k) % NVOLS];
        if (!x->v)
            continue;
        CHILD_TRY(c, K_HEAL, trove_volume_info(x->v, &info));
        /* With no other object to read first, only a clean volume will do (see below). */
        if (heal_pick(c, x, info.block_size, &pick, &other, path) &&
            (other != UINT64_MAX || !info.dirty))
            cv = x;
    }
    if (!cv) {
        cv = first;
        CHILD_TRY(c, K_HEAL, trove_volume_info(cv->v, &info));
        pick = rnd(&c->rng, (cv->size + info.block_size - 1) / info.block_size);
        off = pick * info.block_size;
        len = slot_bytes(cv->size, info.block_size, pick);
        fill_random(c->tmp, len, &c->rng);
        jlog(c, "begin write\n");
        CHILD_TRY(c, K_WRITE, trove_volume_write(cv->v, off, c->tmp, len));
        memcpy(cv->cur + off, c->tmp, len);
        jlog(c, "end\n");
        op_commit(c, cv, K_COMMIT);
        CHILD_TRY(c, K_HEAL, trove_volume_info(cv->v, &info));
        if (!heal_pick(c, cv, info.block_size, &pick, &other, path))
            child_fail(c, K_HEAL, TROVE_ERR_MISMATCH, "no block to damage after a commit");
    }
    d = c->dig[pick];
    off = pick * info.block_size;
    len = slot_bytes(cv->size, info.block_size, pick);
    trove_digest_hex(&d, hex);
    trove_digest_of(cv->cur + off, len, &c->dig[pick]);
    if (!trove_digest_equal(&d, &c->dig[pick]))
        child_fail(c, K_HEAL, TROVE_ERR_MISMATCH, "a slot's digest differs from the model");
    dirty = info.dirty;

    jlog(c, "begin heal\n");
    /* The volume serves the last object it read from memory, so the read that is to find
     * the damage must follow a read of some other object, or a reopen (which changes
     * nothing in a clean volume). */
    if (other != UINT64_MAX) {
        olen = slot_bytes(cv->size, info.block_size, other);
        CHILD_TRY(c, K_HEAL, trove_volume_read(cv->v, other * info.block_size, c->tmp, olen));
        if (memcmp(c->tmp, cv->cur + other * info.block_size, olen) != 0)
            child_fail(c, K_HEAL, TROVE_ERR_MISMATCH, "read differs from the model");
    } else {
        trove_volume_close(cv->v);
        cv->v = NULL;
        CHILD_TRY(c, K_HEAL, trove_volume_open(c->s, cv->name, &cv->v, NULL));
    }
    if (write_file(c->side, cv->cur + off, len) != 0)
        child_fail(c, K_HEAL, -errno, c->side);
    jlog(c, "damage %s %s\n", hex, c->side);
    at = rnd(&c->rng, len);
    fd = open(path, O_RDWR | O_CLOEXEC);
    ok = fd >= 0 && pread(fd, &byte, 1, (off_t)at) == 1;
    byte ^= (uint8_t)(1 + rnd(&c->rng, 255));
    ok = ok && pwrite(fd, &byte, 1, (off_t)at) == 1;
    if (fd >= 0 && close(fd) != 0)
        ok = 0;
    if (!ok)
        child_fail(c, K_HEAL, -errno, path);
    /* The read that finds the damage, then one that is refused without reading. */
    for (int k = 0; k < 2; k++) {
        int rc = trove_volume_read(cv->v, off, c->tmp, len);
        if (rc != TROVE_ERR_CHECKSUM)
            child_fail(c, K_HEAL, rc == TROVE_OK ? TROVE_ERR_MISMATCH : rc,
                       "a damaged block was read");
    }
    if (trove_backend_quarantined(be, &d) != 1)
        child_fail(c, K_HEAL, TROVE_ERR_MISMATCH, "a damaged block is not on record");
    if (rnd(&c->rng, 2)) {
        /* The slot names these bytes already: the write must put them anyway. */
        CHILD_TRY(c, K_HEAL, trove_volume_write(cv->v, off, cv->cur + off, len));
    } else {
        CHILD_TRY(c, K_HEAL, trove_backend_put(be, &d, cv->cur + off, len, &created));
        if (!created)
            child_fail(c, K_HEAL, TROVE_ERR_MISMATCH, "a heal's put created nothing");
    }
    CHILD_TRY(c, K_HEAL, trove_volume_read(cv->v, off, c->tmp, len));
    if (memcmp(c->tmp, cv->cur + off, len) != 0)
        child_fail(c, K_HEAL, TROVE_ERR_MISMATCH, "a healed block differs from the model");
    if (trove_backend_quarantined(be, &d) != 0)
        child_fail(c, K_HEAL, TROVE_ERR_MISMATCH, "a healed block is still on record");
    CHILD_TRY(c, K_HEAL, trove_volume_info(cv->v, &info));
    if (info.dirty != dirty)
        child_fail(c, K_HEAL, TROVE_ERR_MISMATCH, "a heal changed the volume");
    jlog(c, "healed\n");
    jlog(c, "end\n");
}

static void child_step(struct child *c)
{
    struct cvol *cv = &c->vol[rnd(&c->rng, NVOLS)];
    uint64_t r = rnd(&c->rng, 100);

    if (!cv->v) {
        op_create(c, cv);
        return;
    }
    if (cv == &c->vol[NVOLS - 1] && ((r >= 40 && r < 52) || (r >= 72 && r < 78)))
        r = r < 52 ? r - 40 : r - 72 + 12; /* the big volume: no puts or resizes (writes) */
    if (r < 24)
        op_write(c, cv);
    else if (r < 30)
        op_heal(c, cv);
    else if (r < 40)
        op_read(c, cv);
    else if (r < 52)
        op_put(c, cv);
    else if (r < 72)
        op_commit(c, cv, K_COMMIT);
    else if (r < 78)
        op_resize(c, cv);
    else if (r < 86)
        op_snapshot(c, cv);
    else if (r < 90)
        op_reopen(c, cv);
    else if (r < 95)
        op_remove(c, cv); /* re-created when next picked */
    else
        op_gc(c);
}

_Noreturn void crash_child_main(const char *store_dir, const char *journal, uint64_t seed,
                                int ready_fd)
{
    struct child c;
    char one = 1;

    memset(&c, 0, sizeof c);
    c.rng = seed;
    c.store_dir = store_dir;
    snprintf(c.side, sizeof c.side, "%s.good", journal);
    c.jfd = open(journal, O_WRONLY | O_APPEND);
    if (c.jfd < 0)
        _exit(CHILD_FAILED + 1);
    c.tmp = malloc(VOL_MAX);
    c.zeros = calloc(1, VOL_MAX);
    c.dig = malloc(VOL_MAX / 4096 * sizeof *c.dig);
    for (int k = 0; k < NVOLS; k++) {
        c.vol[k].name = vol_names[k];
        c.vol[k].cur = calloc(1, VOL_MAX);
        c.vol[k].com = calloc(1, VOL_MAX);
        if (!c.vol[k].cur || !c.vol[k].com)
            child_fail(&c, K_READ, TROVE_ERR_NOMEM, "model");
    }
    if (!c.tmp || !c.zeros || !c.dig)
        child_fail(&c, K_READ, TROVE_ERR_NOMEM, "model");
    CHILD_TRY(&c, K_READ, trove_store_open(store_dir, TROVE_STORE_CREATE, &c.s, NULL));
    child_load(&c);
    jlog(&c, "ready\n");
    if (write(ready_fd, &one, 1) != 1)
        _exit(CHILD_FAILED + 1);
    /* A round on a slow disk gets through an operation or two, and a heal syncs half a
     * dozen times: some rounds start with one, so that kills reach heals whatever the
     * disk's speed. */
    if (rnd(&c.rng, HEAL_FIRST) == 0)
        for (int k = 0, at = (int)rnd(&c.rng, NVOLS); k < NVOLS; k++)
            if (c.vol[(at + k) % NVOLS].v) {
                op_heal(&c, &c.vol[(at + k) % NVOLS]);
                break;
            }
    for (;;)
        child_step(&c);
}
