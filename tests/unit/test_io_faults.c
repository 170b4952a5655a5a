/*
 * test_io_faults.c: every store operation on disk, with its Nth write, read, pread, fsync,
 * rename or link failing (trove_testing_io_fail_at), for every N until the operation makes
 * fewer calls than N: once with a single EIO (a failing disk), once with ENOSPC from the Nth
 * call on (a full disk). Each run either succeeds or fails with an error, and after it the
 * store, reopened without faults, holds the old state or the new one — the volume's bytes
 * are the old or the new bytes, a new capture is absent or whole, a removed volume gone or
 * there — with verify --deep clean. The operations: a commit of changed blocks (recipe v4
 * and v1, and a v4 commit over a v3 recipe, which upgrades it), a new capture written, a snapshot, a volume removed, and gc.
 *
 * Then the crash states of the same operations (after ALICE): the operation's writes,
 * fsyncs, renames, links and unlinks are recorded (trove_testing_io_record), and every
 * prefix of them is replayed onto a copy of the store as it was before, four ways: every
 * write kept; the writes no fsync followed (within the prefix) dropped, as a power cut loses
 * unsynced data; the last unsynced write torn in half; and the unsynced writes dropped with
 * every directory change no fsync of its directory followed lost too (a rename or link not
 * made, an unlink undone, a new file's first name gone), as a file system that does not
 * order its metadata may leave it. Each state, opened as a restart opens it, must be the old state or the new,
 * with verify --deep clean and every object file holding the bytes its name says (named by
 * a volume or not). The counts of states are printed.
 *
 * TROVE_IO_FAULTS_LONG=1 (make fuzz) runs the same on a volume of 64 blocks with 32 of them
 * changed and a capture of 50,000 events: more objects, more operations, more states.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "trove/capture.h"
#include "trove/digest.h"
#include "trove/event.h"
#include "trove/recipe.h"
#include "trove/testing.h"
#include "trove/volume.h"

#define BS 4096u
#define BLOCKS_MAX 64u
#define EVENTS_MAX 50000u

static unsigned nblocks = 8; /* the volume's blocks (64 in the long run) */
static size_t nevents = 5000;       /* the capture's events (50,000 in the long run) */

static char root[64], sdir[128];
static int seq;
static uint8_t old_img[BLOCKS_MAX * BS], new_img[BLOCKS_MAX * BS];
static uint64_t states, failed_runs;

static int verify_clean(struct trove_store *s)
{
    struct trove_verify_report rep;
    int rc = trove_store_verify(s, TROVE_VERIFY_DEEP, &rep, NULL, NULL);
    if (rc != TROVE_OK)
        fprintf(stderr, "verify: %s (%s)\n", trove_strerror(rc), rep.first_problem);
    return rc == TROVE_OK;
}

/* Whether every loose object under sdir/objects/h0h1/ holds the bytes its name says, an
 * object no volume names included: a crash must not leave a damaged object under its name,
 * which a later put of those bytes would find there and not write again. */
static int objects_whole(void)
{
    char fan_path[512], path[1024], hex[33];
    static uint8_t buf[BLOCKS_MAX * BS + (1 << 20)];
    struct dirent *f, *o;
    DIR *top, *fan;
    int whole = 1;

    snprintf(fan_path, sizeof fan_path, "%s/objects", sdir);
    if (!(top = opendir(fan_path)))
        return 1;
    while (whole && (f = readdir(top)) != NULL) {
        if (strlen(f->d_name) != 2)
            continue; /* ".", "..", packs */
        snprintf(fan_path, sizeof fan_path, "%s/objects/%s", sdir, f->d_name);
        if (!(fan = opendir(fan_path)))
            continue;
        while (whole && (o = readdir(fan)) != NULL) {
            struct trove_digest d;
            ssize_t n;
            int fd;
            if (strlen(o->d_name) != 32)
                continue;
            snprintf(path, sizeof path, "%s/%s", fan_path, o->d_name);
            if ((fd = open(path, O_RDONLY)) < 0)
                continue;
            n = read(fd, buf, sizeof buf);
            close(fd);
            trove_digest_of(buf, n > 0 ? (size_t)n : 0, &d);
            trove_digest_hex(&d, hex);
            if (n < 0 || strcmp(hex, o->d_name) != 0) {
                fprintf(stderr, "object %s does not hold its bytes (%zd bytes read)\n", path, n);
                whole = 0;
            }
        }
        closedir(fan);
    }
    closedir(top);
    return whole;
}

/* Volume name's bytes, or -1 when it does not open. */
static int read_volume(struct trove_store *s, const char *name, uint8_t *out)
{
    struct trove_volume *v = NULL;
    int rc = trove_volume_open(s, name, &v, NULL);
    if (rc != TROVE_OK)
        return -1;
    rc = trove_volume_read(v, 0, out, nblocks * BS);
    trove_volume_close(v);
    return rc == TROVE_OK ? 0 : -1;
}

static struct trove_store *open_store(void)
{
    struct trove_store *s = NULL;
    CHECK_EQ_INT(trove_store_open(sdir, TROVE_STORE_CREATE, &s, NULL), TROVE_OK);
    return s;
}

/* A fresh store holding volume "v" = old_img in format fmt (and a snapshot "keep" of it). */
static void base_state(int fmt)
{
    struct trove_store *s;
    struct trove_volume *v = NULL;

    snprintf(sdir, sizeof sdir, "%s/s%d", root, seq++);
    s = open_store();
    CHECK_EQ_INT(trove_volume_create_format(s, "v", nblocks * BS, BS, fmt, &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, old_img, (size_t)nblocks * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    CHECK_EQ_INT(trove_snapshot_create(s, "v", "keep", NULL), TROVE_OK);
    trove_store_close(s);
}

enum op { OP_COMMIT_V3, OP_COMMIT_V1, OP_COMMIT_UP, OP_CAPTURE, OP_SNAPSHOT, OP_REMOVE, OP_GC,
          OP_COUNT };
static const char *op_name[OP_COUNT] = {"commit (v4)", "commit (v1)",
                                        "commit upgrading v3 to v4", "capture write",
                                        "snapshot", "volume remove", "gc"};

/* Volume v's manifest rewritten as recipe v3 (the same objects): what an older trove left. */
static void downgrade_to_v3(void)
{
    char path[256];
    struct trove_recipe_v3 m;
    struct trove_bytes out = {0};
    struct trove_digest *pages = NULL;
    uint8_t *img;
    size_t len = 0;
    FILE *f;

    snprintf(path, sizeof path, "%s/volumes/v.recipe", sdir);
    img = test_read_file(path, &len);
    CHECK(img && trove_recipe_v3_decode(img, len, &m, NULL) == TROVE_OK && m.stale == 0);
    if (!img || !(pages = calloc(m.page_count, sizeof *pages))) {
        free(img);
        return;
    }
    for (uint32_t p = 0; p < m.page_count; p++)
        trove_recipe_v3_page(&m, p, &pages[p]);
    CHECK_EQ_INT(trove_recipe_v3_encode(m.volume_size, m.block_size, m.flags, m.generation,
                                        m.dict_count, pages, m.page_count, &out),
                 TROVE_OK);
    CHECK((f = fopen(path, "wb")) != NULL && fwrite(out.ptr, 1, out.len, f) == out.len);
    if (f)
        fclose(f);
    trove_bytes_free(&out);
    free(pages);
    free(img);
}

/* The store before op: base_state, and what op needs on top of it. */
static void setup(enum op op)
{
    base_state(op == OP_COMMIT_V1 ? TROVE_RECIPE_FORMAT_V1 : TROVE_RECIPE_FORMAT_V4);
    if (op == OP_COMMIT_UP)
        downgrade_to_v3();
}

static struct trove_event events[EVENTS_MAX];
static struct trove_names *names;

/* The operation under test, on a store it opens itself (the open's own reads count). */
static int run_op(enum op op)
{
    struct trove_store *s = NULL;
    struct trove_volume *v = NULL;
    struct trove_gc_report gr;
    struct trove_capture_info info;
    int rc = trove_store_open(sdir, 0, &s, NULL);

    if (rc != TROVE_OK)
        return rc;
    switch (op) {
    case OP_COMMIT_V3:
    case OP_COMMIT_V1:
    case OP_COMMIT_UP:
        if ((rc = trove_volume_open(s, "v", &v, NULL)) == TROVE_OK &&
            (rc = trove_volume_write(v, 0, new_img, (size_t)nblocks * BS)) == TROVE_OK)
            rc = trove_volume_commit(v);
        trove_volume_close(v);
        break;
    case OP_CAPTURE:
        rc = trove_capture_write(s, "cap", events, nevents, names, NULL, &info, NULL);
        break;
    case OP_SNAPSHOT:
        rc = trove_snapshot_create(s, "v", "snap", NULL);
        break;
    case OP_REMOVE:
        rc = trove_volume_remove(s, "keep", NULL);
        break;
    case OP_GC:
        rc = trove_store_gc(s, &gr, NULL, NULL);
        break;
    default:
        rc = TROVE_ERR_INVALID;
    }
    trove_store_close(s);
    return rc;
}

/* Before the gc runs, its garbage: the old blocks, overwritten and no longer named. */
static void gc_setup(void)
{
    struct trove_store *s = open_store();
    struct trove_volume *v = NULL;
    CHECK_EQ_INT(trove_volume_remove(s, "keep", NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_open(s, "v", &v, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_volume_write(v, 0, new_img, (size_t)nblocks * BS), TROVE_OK);
    CHECK_EQ_INT(trove_volume_commit(v), TROVE_OK);
    trove_volume_close(v);
    trove_store_close(s);
}

/* After a run (failed or not), reopened without faults: the old state or the new. */
static void check_after(enum op op, int rc, uint64_t n, const char *how)
{
    struct trove_store *s = open_store();
    static uint8_t img[BLOCKS_MAX * BS];
    size_t size = (size_t)nblocks * BS;
    struct trove_volume_info vi;
    struct trove_volume *v = NULL;
    int ok = 1;

    if (!s)
        return;
    switch (op) {
    case OP_COMMIT_V3:
    case OP_COMMIT_V1:
    case OP_COMMIT_UP:
        ok = read_volume(s, "v", img) == 0 &&
             (!memcmp(img, old_img, size) || (!memcmp(img, new_img, size)));
        ok = ok && (rc != TROVE_OK || !memcmp(img, new_img, size));
        break;
    case OP_CAPTURE: {
        struct trove_capture_info ci;
        int have = trove_capture_info(s, "cap", &ci, NULL);
        ok = have == TROVE_ERR_NOTFOUND ||
             (have == TROVE_OK && ci.events == nevents);
        ok = ok && (rc != TROVE_OK || have == TROVE_OK);
        break;
    }
    case OP_SNAPSHOT:
        if (trove_volume_open(s, "snap", &v, NULL) == TROVE_OK) {
            ok = trove_volume_info(v, &vi) == TROVE_OK && vi.readonly;
            trove_volume_close(v);
            ok = ok && read_volume(s, "snap", img) == 0 && !memcmp(img, old_img, size);
        } else {
            ok = rc != TROVE_OK;
        }
        break;
    case OP_REMOVE:
        ok = read_volume(s, "keep", img) == 0 ? rc != TROVE_OK && !memcmp(img, old_img, size) : 1;
        break;
    case OP_GC:
        ok = read_volume(s, "v", img) == 0 && !memcmp(img, new_img, size);
        break;
    default:
        ok = 0;
    }
    ok = ok && read_volume(s, "v", img) == 0; /* the volume is always there, whole */
    if (!ok || !verify_clean(s) || !objects_whole()) {
        fprintf(stderr, "%s: %s %llu (rc %d %s): not the old state or the new\n", op_name[op],
                how, (unsigned long long)n, rc, trove_strerror(rc));
        CHECK(0);
    }
    trove_store_close(s);
}

static void sweep(enum op op, int err, int sticky)
{
    for (uint64_t n = 1;; n++) {
        uint64_t made;
        int rc;
        setup(op);
        if (op == OP_GC)
            gc_setup();
        trove_testing_io_fail_at(n, err, sticky);
        rc = run_op(op);
        made = trove_testing_io_count();
        trove_testing_io_fail_at(0, 0, 0);
        states++;
        if (rc != TROVE_OK)
            failed_runs++;
        check_after(op, rc, n, "the failing call is number");
        if (made < n) { /* the failure never came: the operation is done */
            CHECK_EQ_INT(rc, TROVE_OK);
            break;
        }
        if (n > 2000) {
            CHECK(0); /* an operation that makes this many calls is not what we test */
            break;
        }
    }
}


/* ---- crash states ------------------------------------------------------------------- */

static uint64_t crash_built, crash_ops;

static void mkdir_parent(const char *path)
{
    char tmp[600], cmd[700];
    snprintf(tmp, sizeof tmp, "%s", path);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dirname(tmp));
    CHECK_EQ_INT(system(cmd), 0);
}

/* Whether an fsync of the directory holding path comes in ops(i, k). */
static int dir_synced(const struct trove_testing_io_op *ops, size_t i, size_t k, const char *path)
{
    char tmp[600];
    const char *dir;

    snprintf(tmp, sizeof tmp, "%s", path);
    dir = dirname(tmp);
    for (size_t j = i + 1; j < k; j++)
        if (ops[j].kind == TROVE_TESTING_IO_FSYNC && !strcmp(ops[j].path, dir))
            return 1;
    return 0;
}

/* Apply ops[0..k) to the directory as it was; mode 0 keeps every write, 1 drops the writes
 * that no fsync of their file followed within the prefix, 2 also keeps the first half of
 * the last such write, 3 drops them as 1 does and also every directory change that no fsync
 * of its directory followed: a link or rename not made (a rename counts as its new
 * directory's, as a journal commits both halves at once), an unlink undone, a new file's
 * first name gone. */
static void replay(const struct trove_testing_io_op *ops, size_t k, int mode)
{
    size_t last_unsynced = (size_t)-1, nfleeting = 0;
    const char *fleeting[512];

    for (size_t i = 0; i < k; i++) {
        int synced = 0;
        if (ops[i].kind != TROVE_TESTING_IO_WRITE)
            continue;
        for (size_t j = i + 1; j < k && !synced; j++)
            synced = ops[j].kind == TROVE_TESTING_IO_FSYNC && !strcmp(ops[j].path, ops[i].path);
        if (!synced)
            last_unsynced = i;
    }
    for (size_t i = 0; i < k; i++) {
        const struct trove_testing_io_op *o = &ops[i];
        if (o->kind == TROVE_TESTING_IO_WRITE) {
            size_t len = o->len;
            int fd, synced = 0;
            for (size_t j = i + 1; j < k && !synced; j++)
                synced = ops[j].kind == TROVE_TESTING_IO_FSYNC && !strcmp(ops[j].path, o->path);
            if (mode >= 1 && !synced)
                len = mode == 2 && i == last_unsynced ? len / 2 : 0;
            if (mode == 3 && access(o->path, F_OK) != 0 && !dir_synced(ops, i, k, o->path) &&
                nfleeting < sizeof fleeting / sizeof fleeting[0])
                fleeting[nfleeting++] = o->path; /* its name may not survive (below) */
            if ((fd = open(o->path, O_WRONLY | O_CREAT, 0644)) < 0) {
                mkdir_parent(o->path);
                fd = open(o->path, O_WRONLY | O_CREAT, 0644);
            }
            CHECK(fd >= 0);
            if (fd >= 0) {
                if (len)
                    CHECK(pwrite(fd, o->data, len, (off_t)o->off) == (ssize_t)len);
                close(fd);
            }
        } else if (o->kind == TROVE_TESTING_IO_UNLINK) {
            if (mode == 3 && !dir_synced(ops, i, k, o->path))
                continue;
            if (unlink(o->path) != 0)
                CHECK_EQ_INT(errno, ENOENT);
        } else if (o->kind == TROVE_TESTING_IO_RENAME || o->kind == TROVE_TESTING_IO_LINK) {
            if (access(o->path, F_OK) != 0)
                continue; /* its file was never made in this state */
            if (mode == 3 && !dir_synced(ops, i, k, o->path2))
                continue; /* the new name never reached the disk */
            mkdir_parent(o->path2);
            if (o->kind == TROVE_TESTING_IO_RENAME)
                CHECK_EQ_INT(rename(o->path, o->path2), 0);
            else if (link(o->path, o->path2) != 0)
                CHECK_EQ_INT(errno, EEXIST);
        }
    }
    /* A file made where no fsync of the directory followed keeps its data (its inode) under
     * the names that did reach the disk, a link or a rename into a synced directory, but
     * loses the name it was made with. */
    for (size_t i = 0; i < nfleeting; i++)
        if (unlink(fleeting[i]) != 0)
            CHECK_EQ_INT(errno, ENOENT);
}

static void copy_dir(const char *from, const char *to)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -a '%s' '%s'", to, from, to);
    CHECK_EQ_INT(system(cmd), 0);
}

static void crash_states(enum op op)
{
    char pristine[160];
    const struct trove_testing_io_op *ops;
    size_t n;
    uint64_t built = 0;
    int rc;

    setup(op);
    if (op == OP_GC)
        gc_setup();
    snprintf(pristine, sizeof pristine, "%s.before", sdir);
    copy_dir(sdir, pristine);
    trove_testing_io_record(1);
    rc = run_op(op);
    trove_testing_io_record(0);
    CHECK_EQ_INT(rc, TROVE_OK);
    n = trove_testing_io_log(&ops);
    CHECK(n > 0);
    crash_ops += n;
    for (size_t k = 0; k <= n; k++)
        for (int mode = 0; mode < 4; mode++) {
            copy_dir(pristine, sdir);
            replay(ops, k, mode);
            check_after(op, k == n && mode == 0 ? TROVE_OK : TROVE_ERR_TIMEOUT, k,
                        mode == 0   ? "crash, every write kept, after operations:"
                        : mode == 1 ? "crash, unsynced writes lost, after operations:"
                        : mode == 2 ? "crash, the last unsynced write torn, after operations:"
                                    : "crash, unsynced writes and directory changes lost, "
                                      "after operations:");
            built++;
        }
    crash_built += built;
    printf("%s: %zu operations recorded, %llu crash states\n", op_name[op], n,
           (unsigned long long)built);
    trove_testing_io_log_free();
}

/* Every I/O of each operation failing in turn, once (EIO) and from then on (ENOSPC). */
static void test_faults(void)
{
    for (int op = 0; op < OP_COUNT; op++) {
        uint64_t before = states;
        sweep((enum op)op, EIO, 0);
        sweep((enum op)op, ENOSPC, 1);
        printf("%s: %llu states\n", op_name[op], (unsigned long long)(states - before));
    }
    printf("%llu states tried (%llu runs failed cleanly), none bad\n",
           (unsigned long long)states, (unsigned long long)failed_runs);
}

/* The crash states of each operation (crash_states above). */
static void test_crash_states(void)
{
    for (int op = 0; op < OP_COUNT; op++)
        crash_states((enum op)op);
    printf("crash states: %llu built from %llu recorded operations, none bad\n",
           (unsigned long long)crash_built, (unsigned long long)crash_ops);
}

int main(int argc, char **argv)
{
    uint64_t seed = 9;
    const char *lng = getenv("TROVE_IO_FAULTS_LONG");

    test_init(argc, argv);
    if (lng && *lng && strcmp(lng, "0") != 0) {
        nblocks = BLOCKS_MAX;
        nevents = EVENTS_MAX;
    }

    snprintf(root, sizeof root, "/tmp/trove-io-XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    for (size_t i = 0; i < (size_t)nblocks * BS; i++) { /* the last 5 of 8 blocks change, or 32 of 64 */
        old_img[i] = (uint8_t)test_rand(&seed);
        new_img[i] = i < (nblocks == 8 ? 3 : nblocks / 2) * (size_t)BS ? old_img[i]
                                                                      : (uint8_t)test_rand(&seed);
    }
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    for (size_t i = 0; i < nevents; i++) {
        events[i].start_ns = 1000 * (uint64_t)i;
        events[i].dur_ns = 500;
        events[i].pid = 1;
        events[i].tid = 1 + (uint32_t)(i % 3);
        events[i].kind = TROVE_KIND_ZONE;
        events[i].name_id = 0;
    }
    RUN(test_faults);
    RUN(test_crash_states);
    trove_names_free(names);
    if (test_failed == 0)
        test_rm_rf(root);
    return test_done();
}
