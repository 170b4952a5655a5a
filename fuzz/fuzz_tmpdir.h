/*
 * fuzz_tmpdir.h: the temporary directory a fuzz target keeps its store in, one per process,
 * under $TMPDIR or /tmp: trove-fuzz-PID-XXXXXX. A target removes its own at exit; one that
 * crashed cannot (libFuzzer's crash exit runs no atexit handler), so each new one first
 * removes those whose process is gone — a campaign's crashes and fork-mode children leave
 * nothing behind for long. Header only, like fuzz_check.h; the includer defines _GNU_SOURCE
 * (mkdtemp, nftw) before its first include.
 */
#ifndef TROVE_FUZZ_TMPDIR_H
#define TROVE_FUZZ_TMPDIR_H

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_check.h"

static int fuzz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Remove the tree at path (not following links). */
static void fuzz_remove_tree(const char *path)
{
    nftw(path, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Make this process's directory into out (cap bytes), after removing dead ones. */
static void fuzz_make_tmpdir(char *out, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    struct dirent *de;
    DIR *d;

    if (!tmp || !*tmp)
        tmp = "/tmp";
    if ((d = opendir(tmp)) != NULL) {
        while ((de = readdir(d)) != NULL) {
            char path[4096];
            long pid;
            if (sscanf(de->d_name, "trove-fuzz-%ld-", &pid) != 1 || pid <= 0)
                continue; /* not a fuzz target's */
            if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
                continue; /* its process lives */
            snprintf(path, sizeof path, "%s/%s", tmp, de->d_name);
            fuzz_remove_tree(path);
        }
        closedir(d);
    }
    snprintf(out, cap, "%s/trove-fuzz-%ld-XXXXXX", tmp, (long)getpid());
    CHECK(mkdtemp(out) != NULL);
}

#endif
