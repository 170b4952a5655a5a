/*
 * store_open.c: opening and closing a store (include/trove/volume.h). Open takes the
 * directory and its lock and opens the objects through the low level (store.c); it reads
 * no recipe and no object list, so it costs the same in a store of any size. Close closes
 * the volumes still open (dropping what they did not commit) and then the store. Both sit
 * above volume.c, which is why they are not in store.c.
 */
#include "store_internal.h"
#include "common/fail.h"

int trove_store_open(const char *dir, unsigned flags, struct trove_store **out,
                     struct trove_diag *diag)
{
    if (out)
        *out = NULL;
    if (!dir || !*dir || !out ||
        (flags & ~(TROVE_STORE_CREATE | TROVE_STORE_READONLY | TROVE_STORE_NOSYNC |
                   TROVE_STORE_NOVERIFY | TROVE_STORE_NOWAIT)))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "store open: bad arguments");
    return trove__store_open_dir(dir, flags, out, diag);
}

void trove_store_close(struct trove_store *s)
{
    if (!s)
        return;
    while (s->open)
        trove_volume_close(s->open);
    trove__store_release(s);
}
