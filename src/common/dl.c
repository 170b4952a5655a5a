/*
 * dl.c: shared libraries loaded on first use (common/dl.h).
 *
 * One mutex for every table: a load happens once per library and process, so nothing waits
 * on it twice. The library is opened RTLD_NOW (a missing symbol shows here, not at a call
 * deep in a request) and RTLD_LOCAL (its symbols stay out of everyone else's way), and is
 * never closed: the table's pointers live as long as the process.
 */
#include "common/dl.h"
#include "common/fail.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t dl_mu = PTHREAD_MUTEX_INITIALIZER;

static void load(struct trove__dl_once *once, const char *soname, const char *const *names,
                 size_t n, void **fns)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    const char *why;

    if (!h) {
        why = dlerror();
        snprintf(once->msg, sizeof once->msg, "%s", why ? why : "not found");
        once->state = -1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        /* POSIX: a function's address comes back as a void * (dlsym's own contract). */
        void *f = dlsym(h, names[i]);
        if (!f) {
            snprintf(once->msg, sizeof once->msg, "it has no %s (an older version?)", names[i]);
            memset(fns, 0, n * sizeof *fns);
            once->state = -1;
            return;
        }
        memcpy(&fns[i], &f, sizeof f);
    }
    once->state = 1;
}

int trove__dl_load(struct trove__dl_once *once, const char *soname, const char *const *names,
                   size_t n, void **fns, const char *need, struct trove_diag *diag)
{
    int state;

    pthread_mutex_lock(&dl_mu);
    if (once->state == 0)
        load(once, soname, names, n, fns);
    state = once->state;
    pthread_mutex_unlock(&dl_mu);
    if (state == 1)
        return TROVE_OK;
    return TROVE_FAIL(diag, TROVE_ERR_NOTFOUND, 0, "%s needs %s, which could not be loaded: %s",
                      need, soname, once->msg);
}
