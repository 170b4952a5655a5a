/*
 * cli_dl.c: a library loaded on first use (cli_dl.h). RTLD_NOW, so that a missing function
 * shows at the load, with a message, not at a call; never closed.
 */
#include "cli_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

int cli_dl_load(int *state, const char *soname, const char *const *names, size_t n,
                void **fns, char *why, size_t why_cap)
{
    void *h;

    pthread_mutex_lock(&mu);
    if (*state == 0) {
        *state = -1;
        if (!(h = dlopen(soname, RTLD_NOW | RTLD_LOCAL))) {
            const char *e = dlerror();
            snprintf(why, why_cap, "%s could not be loaded: %s", soname, e ? e : "not found");
        } else {
            size_t i;
            for (i = 0; i < n; i++) {
                void *f = dlsym(h, names[i]);
                if (!f) {
                    snprintf(why, why_cap, "%s has no %s (an older version?)", soname,
                             names[i]);
                    break;
                }
                memcpy(&fns[i], &f, sizeof f);
            }
            if (i == n)
                *state = 1;
        }
    }
    pthread_mutex_unlock(&mu);
    return *state == 1 ? 0 : -1;
}
