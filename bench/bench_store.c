/*
 * bench_store.c: `trove bench put` — issue 4's store targets, measured side by side in one
 * run: `trove volume put` of a file against `cp FILE DIR && sync` on the same disk, and
 * what a second put of the same file into another volume stores.
 *
 * Input. --file FILE, or by default a file of --size bytes (default 1 GiB) of splitmix64
 * output written into --dir first: incompressible, and with no two blocks alike, so the
 * first put stores every block (the worst case for a put: all I/O, no dedup).
 *
 * Method. Each round runs, in turn:
 *   cp    `sh -c 'cp FILE DIR/copy && sync'` — a child process, as a user would type it;
 *   put   `trove volume put NAME FILE --store DIR/store-N` into a fresh store — the same
 *         binary as a child process (/proc/self/exe), so both sides pay a process start.
 * Both timed with CLOCK_MONOTONIC around the child's whole life. Between measurements the
 * copy and the store are deleted and `sync` runs, untimed, so every measurement starts with
 * no dirty pages of the other's. Both read FILE from the page cache (round 0 is a warm-up
 * that is not counted). The result is the median of each over the rounds, and the ratio of
 * the medians put / cp, the number the issue bounds by 2.
 *
 * --load runs a writer beside both during the timed rounds: a child process that rewrites a
 * 256 MiB file in DIR in 8 MiB writes, with an fdatasync after each pass, until the rounds
 * end (another process writing to the same disk, which any sync then waits for too).
 *
 * Syncs. After the rounds, untimed, one more put into a fresh store runs under `strace -f -c`
 * (when strace is installed) to count its fsync, fdatasync, syncfs and sync calls against
 * the objects it stored: the put's cost in syncs, which a loaded disk makes dearer.
 *
 * Dedup. After the timed rounds, the last store gets a second put of the same file under a
 * second name; the bench counts the files and bytes under the store's objects/ directory
 * before and after (a walk of the directory tree), and the recipe sizes. A second put that
 * stores nothing new shows 0 new objects and 0 new object bytes; the store grows by the
 * second recipe only.
 *
 * Reads. Then `trove volume cat bench` of the last store to /dev/null, with every block
 * checked against its name (the default) and with --no-verify, alternating which goes first,
 * the same rounds, both from the page cache (one untimed cat warms it): the median of each
 * and the ratio, the cost of verified reads.
 *
 * Sparse. Last, in a fresh store beside the others, a 10 TiB volume at 2 MiB blocks
 * (5,242,880 slots) is created in each recipe format — created and committed in one call —
 * then the store is closed, reopened and the volume opened again; the bench reports the
 * slots, the recipe file's bytes and both times (one run each: the point is the sizes).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "trove/volume.h"

#define PUT_ROUNDS_DEFAULT 5
#define GEN_CHUNK ((size_t)1 << 20)

static int run(char *const argv[], double *secs)
{
    double t0 = cli_now();
    pid_t pid = fork();
    int status;

    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            close(fd);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -errno;
    if (secs)
        *secs = cli_now() - t0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static int sh(const char *cmd, double *secs)
{
    char *argv[] = {"sh", "-c", (char *)cmd, NULL};
    return run(argv, secs);
}

/* Quote s for sh -c (single quotes; s has no single quote: checked by the caller). */
static int has_quote(const char *s) { return strchr(s, '\'') != NULL; }

static int gen_file(const char *path, uint64_t size)
{
    uint64_t z = 0x5eed, *buf = malloc(GEN_CHUNK);
    FILE *f = fopen(path, "wb");
    int rc = 0;

    if (!buf || !f) {
        rc = -1;
        goto out;
    }
    for (uint64_t done = 0; done < size;) {
        size_t n = size - done < GEN_CHUNK ? (size_t)(size - done) : GEN_CHUNK;
        for (size_t i = 0; i < GEN_CHUNK / 8; i++) {
            uint64_t x = (z += 0x9e3779b97f4a7c15ULL);
            x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
            x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
            buf[i] = x ^ (x >> 31);
        }
        if (fwrite(buf, 1, n, f) != n) {
            rc = -1;
            goto out;
        }
        done += n;
    }
out:
    if (f && fclose(f) != 0)
        rc = -1;
    free(buf);
    return rc;
}

/* Files and bytes under dir (recursive). */
static void tree_usage(const char *dir, uint64_t *files, uint64_t *bytes)
{
    DIR *dp = opendir(dir);
    struct dirent *de;
    char sub[4096];
    struct stat st;

    if (!dp)
        return;
    while ((de = readdir(dp)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        if (lstat(sub, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            tree_usage(sub, files, bytes);
        } else if (S_ISREG(st.st_mode)) {
            (*files)++;
            *bytes += (uint64_t)st.st_size;
        }
    }
    closedir(dp);
}

struct sparse {
    uint64_t slots, recipe_bytes;
    double create_s, reopen_s;
};

/* Create a 10 TiB volume of the given recipe format in store dir, close, reopen, describe. */
static int sparse_volume(const char *dir, int format, struct sparse *out)
{
    struct trove_store *s = NULL;
    struct trove_volume *v = NULL;
    struct trove_volume_info in;
    struct trove_diag diag = {0};
    const char *name = format == TROVE_RECIPE_FORMAT_V1 ? "sparse-v1" : "sparse-v3";
    double t0 = cli_now();
    int rc;

    rc = trove_store_open(dir, TROVE_STORE_CREATE, &s, &diag);
    if (rc == TROVE_OK)
        rc = trove_volume_create_format(s, name, (uint64_t)10 << 40, 0, format, NULL, &diag);
    cli_store_close(s);
    s = NULL;
    out->create_s = cli_now() - t0;
    t0 = cli_now();
    if (rc == TROVE_OK)
        rc = trove_store_open(dir, 0, &s, &diag);
    if (rc == TROVE_OK)
        rc = trove_volume_open(s, name, &v, &diag);
    if (rc == TROVE_OK)
        rc = trove_volume_info(v, &in);
    out->reopen_s = cli_now() - t0;
    if (rc == TROVE_OK) {
        out->slots = in.slots;
        out->recipe_bytes = in.recipe_bytes;
    } else {
        cli_error("bench put", "10 TiB sparse volume in %s: %s", dir, cli_diag_msg(&diag, rc));
    }
    trove_volume_close(v);
    cli_store_close(s);
    return rc == TROVE_OK ? 0 : 1;
}

/* --load: rewrite DIR/load.bin (256 MiB in 8 MiB writes, fdatasync after each pass) until
 * killed. Returns the child's pid, or -1. */
static pid_t start_load(const char *dir)
{
    char path[4300];
    pid_t pid;

    snprintf(path, sizeof path, "%s/load.bin", dir);
    fflush(NULL);
    if ((pid = fork()) != 0)
        return pid;
    {
        static uint8_t buf[8 << 20];
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        memset(buf, 0x5a, sizeof buf);
        if (fd < 0)
            _exit(1);
        for (;;) {
            for (int k = 0; k < 32; k++)
                if (pwrite(fd, buf, sizeof buf, (off_t)k * (off_t)sizeof buf) < 0)
                    _exit(1);
            fdatasync(fd);
        }
    }
}

/* The fsync, fdatasync, syncfs and sync calls of argv (run under strace -f -c into
 * out_file), or -1 without strace or when the run fails. */
static long count_syncs(char *const argv[], const char *out_file)
{
    char *sargv[32];
    char line[512];
    long calls = 0;
    int n = 0;
    FILE *f;

    if (access("/usr/bin/strace", X_OK) != 0)
        return -1;
    sargv[n++] = "/usr/bin/strace";
    sargv[n++] = "-f";
    sargv[n++] = "-qq";
    sargv[n++] = "-c";
    sargv[n++] = "-o";
    sargv[n++] = (char *)out_file;
    sargv[n++] = "-e";
    sargv[n++] = "trace=fsync,fdatasync,syncfs,sync";
    for (int i = 0; argv[i] && n < 31; i++)
        sargv[n++] = argv[i];
    sargv[n] = NULL;
    if (run(sargv, NULL) != 0 || !(f = fopen(out_file, "r")))
        return -1;
    while (fgets(line, sizeof line, f)) { /* "% time  seconds  usecs/call  calls  errors  syscall" */
        char *tok[8], *save = NULL;
        int nt = 0;
        for (char *t = strtok_r(line, " \t\n", &save); t && nt < 8; t = strtok_r(NULL, " \t\n", &save))
            tok[nt++] = t;
        /* a syscall's row: % time, seconds, usecs/call, calls, [errors,] its name last */
        if (nt >= 5 && (tok[0][0] >= '0' && tok[0][0] <= '9') && strcmp(tok[nt - 1], "total"))
            calls += strtol(tok[3], NULL, 10);
    }
    fclose(f);
    return calls;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trove bench put [--file FILE | --size SIZE] [--dir DIR] [--rounds N] [--load]\n"
            "                       [--json]\n"
            "\n"
            "`trove volume put` of a file against `cp FILE DIR && sync` on the same disk, side\n"
            "by side, medians of N rounds after a warm-up; then a second put of the same file\n"
            "into another volume of the same store, and what it added to objects/; then\n"
            "`trove volume cat` of the volume with verified reads and with --no-verify; last,\n"
            "a 10 TiB sparse volume in each recipe format: its slots, recipe bytes and times.\n"
            "\n"
            "  --file FILE   the file to put (default: generate --size bytes of random data)\n"
            "  --size SIZE   generated file size, e.g. 256M, 1G (default 1G)\n"
            "  --dir DIR     where the copies and stores go (default: a new directory\n"
            "                trove-bench-put.XXXXXX under $TMPDIR or /tmp, removed at the end)\n"
            "  --rounds N    timed rounds (default %d)\n"
            "  --load        another process writes to the same disk during the rounds\n"
            "  --json        one JSON object on stdout instead of the table\n",
            PUT_ROUNDS_DEFAULT);
}

int bench_put(int argc, char **argv)
{
    const char *file = NULL, *dir = NULL, *tmpdir = getenv("TMPDIR");
    uint64_t size = (uint64_t)1 << 30, rounds = PUT_ROUNDS_DEFAULT;
    uint64_t obj_files0 = 0, obj_bytes0 = 0, obj_files1 = 0, obj_bytes1 = 0;
    double *tcp = NULL, *tput = NULL, *tcat = NULL, *tcat_nv = NULL, t2 = 0, mcp, mput, mcat, mcat_nv;
    struct sparse sp[2];
    char base[4096], src[4200], cmd[16384], store[4200], objects[4300], self[4096];
    int json = 0, status = 1, own_dir = 0, load = 0;
    uint64_t sync_files = 0, sync_bytes = 0;
    long syncs = -1;
    pid_t loader = -1;
    struct stat st;
    ssize_t sl;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--load")) {
            load = 1;
        } else if (!strcmp(a, "--file") && has_value) {
            file = argv[++i];
        } else if (!strcmp(a, "--dir") && has_value) {
            dir = argv[++i];
        } else if (!strcmp(a, "--size") && has_value) {
            if (cli_parse_size(argv[++i], &size) != 0 || size == 0)
                return cli_error("bench put", "--size: '%s' is not a size like 256M or 1G",
                                 argv[i]);
        } else if (!strcmp(a, "--rounds") && has_value) {
            if (cli_parse_u64(argv[++i], &rounds) != 0 || rounds < 1 || rounds > 100)
                return cli_error("bench put", "--rounds: '%s' is not a count in 1..100",
                                 argv[i]);
        } else {
            usage(stderr);
            return 2;
        }
    }
    sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        return cli_error("bench put", "cannot find the trove binary (/proc/self/exe)");
    self[sl] = 0;
    if (dir) {
        snprintf(base, sizeof base, "%s", dir);
    } else {
        snprintf(base, sizeof base, "%s/trove-bench-put.XXXXXX", tmpdir ? tmpdir : "/tmp");
        if (!mkdtemp(base))
            return cli_error("bench put", "cannot create a directory under %s: %s",
                             tmpdir ? tmpdir : "/tmp", strerror(errno));
        own_dir = 1;
    }
    if (file) {
        snprintf(src, sizeof src, "%s", file);
        if (stat(src, &st) != 0) {
            cli_error("bench put", "cannot read %s: %s", src, strerror(errno));
            goto out;
        }
        size = (uint64_t)st.st_size;
    } else {
        snprintf(src, sizeof src, "%s/input.bin", base);
        if (!json)
            fprintf(stderr, "writing %llu bytes of random data to %s\n",
                    (unsigned long long)size, src);
        if (gen_file(src, size) != 0) {
            cli_error("bench put", "cannot write %s: %s", src, strerror(errno));
            goto out;
        }
    }
    if (has_quote(src) || has_quote(base) || has_quote(self)) {
        cli_error("bench put", "paths with a single quote are not supported");
        goto out;
    }
    if (!(tcp = calloc(rounds, sizeof *tcp)) || !(tput = calloc(rounds, sizeof *tput))) {
        cli_error("bench put", "out of memory");
        goto out;
    }
    if (load && (loader = start_load(base)) < 0) {
        cli_error("bench put", "cannot start the --load writer: %s", strerror(errno));
        goto out;
    }
    for (uint64_t r = 0; r <= rounds; r++) {
        double t;
        char *put[] = {self, "volume", "put", "bench", src, "--store", store, NULL};
        snprintf(store, sizeof store, "%s/store-%llu", base, (unsigned long long)r);
        snprintf(cmd, sizeof cmd, "rm -rf '%s/store-%llu' '%s/copy' && sync", base,
                 (unsigned long long)r, base);
        sh(cmd, NULL);
        snprintf(cmd, sizeof cmd, "cp '%s' '%s/copy' && sync", src, base);
        if (sh(cmd, &t) != 0) {
            cli_error("bench put", "`%s` failed", cmd);
            goto out;
        }
        if (r > 0)
            tcp[r - 1] = t;
        snprintf(cmd, sizeof cmd, "rm -f '%s/copy' && sync", base);
        sh(cmd, NULL);
        if (run(put, &t) != 0) {
            cli_error("bench put", "`trove volume put bench %s --store %s` failed", src, store);
            goto out;
        }
        if (r > 0)
            tput[r - 1] = t;
        if (r < rounds) {
            snprintf(cmd, sizeof cmd, "rm -rf '%s' && sync", store);
            sh(cmd, NULL);
        }
        if (!json)
            fprintf(stderr, "round %llu%s: cp+sync %.3f s, put %.3f s\n",
                    (unsigned long long)r, r ? "" : " (warm-up)", r ? tcp[r - 1] : 0.0,
                    r ? tput[r - 1] : t);
    }
    if (loader > 0) {
        kill(loader, SIGKILL);
        waitpid(loader, NULL, 0);
        loader = -1;
    }
    { /* the syncs of one more put, into a store of its own (untimed) */
        char sstore[4300], sobjects[4400], strace_out[4300];
        char *put[] = {self, "volume", "put", "bench", src, "--store", sstore, NULL};
        snprintf(sstore, sizeof sstore, "%s/store-syncs", base);
        snprintf(strace_out, sizeof strace_out, "%s/strace.txt", base);
        if ((syncs = count_syncs(put, strace_out)) >= 0) {
            snprintf(sobjects, sizeof sobjects, "%s/objects", sstore);
            tree_usage(sobjects, &sync_files, &sync_bytes);
        }
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && sync", sstore);
        sh(cmd, NULL);
    }
    /* Reads of "bench", verified and not, alternating which goes first. */
    if (!(tcat = calloc(rounds, sizeof *tcat)) || !(tcat_nv = calloc(rounds, sizeof *tcat_nv))) {
        cli_error("bench put", "out of memory");
        goto out;
    }
    {
        char *cat[] = {self, "volume", "cat", "bench", "--store", store, NULL};
        char *cat_nv[] = {self, "volume", "cat", "bench", "--store", store, "--no-verify", NULL};
        double t;
        if (run(cat, &t) != 0) { /* warms the page cache; untimed */
            cli_error("bench put", "`trove volume cat bench --store %s` failed", store);
            goto out;
        }
        for (uint64_t r = 0; r < rounds; r++) {
            for (int k = 0; k < 2; k++) {
                int verified = (k == 0) == (r % 2 == 0);
                if (run(verified ? cat : cat_nv, &t) != 0) {
                    cli_error("bench put", "`trove volume cat bench%s` failed",
                              verified ? "" : " --no-verify");
                    goto out;
                }
                (verified ? tcat : tcat_nv)[r] = t;
            }
        }
    }
    mcat = bench_median(tcat, (unsigned)rounds);
    mcat_nv = bench_median(tcat_nv, (unsigned)rounds);
    /* The last store still holds "bench": put the file again under another name. */
    snprintf(objects, sizeof objects, "%s/objects", store);
    tree_usage(objects, &obj_files0, &obj_bytes0);
    {
        char *put2[] = {self, "volume", "put", "bench2", src, "--store", store, NULL};
        if (run(put2, &t2) != 0) {
            cli_error("bench put", "the second put failed");
            goto out;
        }
    }
    tree_usage(objects, &obj_files1, &obj_bytes1);
    {
        char recipe[4400];
        snprintf(recipe, sizeof recipe, "%s/volumes/bench2.recipe", store);
        if (stat(recipe, &st) != 0)
            st.st_size = -1;
    }
    snprintf(store, sizeof store, "%s/store-sparse", base);
    if (sparse_volume(store, TROVE_RECIPE_FORMAT_V1, &sp[0]) ||
        sparse_volume(store, TROVE_RECIPE_FORMAT_V3, &sp[1]))
        goto out;
    mcp = bench_median(tcp, (unsigned)rounds);
    mput = bench_median(tput, (unsigned)rounds);
    if (json) {
        printf("{\"bytes\":%llu,\"rounds\":%llu,\"cp_sync_s\":%.4f,\"put_s\":%.4f,"
               "\"put_over_cp\":%.3f,\"second_put_s\":%.4f,\"objects\":%llu,"
               "\"object_bytes\":%llu,\"second_put_new_objects\":%llu,"
               "\"second_put_new_object_bytes\":%llu,\"second_recipe_bytes\":%lld,"
               "\"sparse_slots\":%llu,\"sparse_v1_recipe_bytes\":%llu,"
               "\"sparse_v1_create_s\":%.3f,\"sparse_v1_reopen_s\":%.3f,"
               "\"sparse_v3_recipe_bytes\":%llu,\"sparse_v3_create_s\":%.3f,"
               "\"sparse_v3_reopen_s\":%.3f,\"cat_s\":%.4f,\"cat_no_verify_s\":%.4f,"
               "\"cat_verify_ratio\":%.3f,\"load\":%s,\"syncs\":%ld,\"sync_objects\":%llu}\n",
               (unsigned long long)size, (unsigned long long)rounds, mcp, mput, mput / mcp, t2,
               (unsigned long long)obj_files0, (unsigned long long)obj_bytes0,
               (unsigned long long)(obj_files1 - obj_files0),
               (unsigned long long)(obj_bytes1 - obj_bytes0), (long long)st.st_size,
               (unsigned long long)sp[0].slots, (unsigned long long)sp[0].recipe_bytes,
               sp[0].create_s, sp[0].reopen_s, (unsigned long long)sp[1].recipe_bytes,
               sp[1].create_s, sp[1].reopen_s, mcat, mcat_nv, mcat / mcat_nv,
               load ? "true" : "false", syncs, (unsigned long long)sync_files);
    } else {
        printf("trove bench put: %llu bytes, medians of %llu rounds after a warm-up%s\n",
               (unsigned long long)size, (unsigned long long)rounds,
               load ? ", another process writing to the disk" : "");
        printf("  cp FILE DIR && sync     %8.3f s  %7.1f MB/s\n", mcp, size / mcp / 1e6);
        printf("  trove volume put        %8.3f s  %7.1f MB/s   put / cp = %.2f\n", mput,
               size / mput / 1e6, mput / mcp);
        printf("  trove volume cat        %8.3f s  %7.1f MB/s   every block verified\n", mcat,
               size / mcat / 1e6);
        printf("  ... --no-verify         %8.3f s  %7.1f MB/s   verified / not = %.3f\n",
               mcat_nv, size / mcat_nv / 1e6, mcat / mcat_nv);
        if (syncs >= 0)
            printf("  syncs of one put         %ld fsync/fdatasync/syncfs calls for %llu files "
                   "under objects/\n",
                   syncs, (unsigned long long)sync_files);
        printf("second put of the same file into another volume: %.3f s\n", t2);
        printf("  objects/ before: %llu files, %llu bytes; new: %llu files, %llu bytes\n",
               (unsigned long long)obj_files0, (unsigned long long)obj_bytes0,
               (unsigned long long)(obj_files1 - obj_files0),
               (unsigned long long)(obj_bytes1 - obj_bytes0));
        printf("  the second volume's recipe: %lld bytes\n", (long long)st.st_size);
        printf("10 TiB sparse volume (%llu slots), created and committed, then reopened:\n",
               (unsigned long long)sp[0].slots);
        for (int k = 0; k < 2; k++)
            printf("  recipe v%d  %12llu bytes   create %.3f s   reopen %.3f s\n", k ? 3 : 1,
                   (unsigned long long)sp[k].recipe_bytes, sp[k].create_s, sp[k].reopen_s);
    }
    status = 0;
out:
    if (loader > 0) {
        kill(loader, SIGKILL);
        waitpid(loader, NULL, 0);
    }
    if (own_dir) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
        sh(cmd, NULL);
    }
    free(tcp);
    free(tput);
    free(tcat);
    free(tcat_nv);
    return status;
}
