/*
 * store_open.c: opening and closing a store (include/trove/volume.h). Open takes the
 * directory, its lock and DIR/refs through the low level (store.c) and, when DIR/refs
 * cannot be trusted — missing, damaged, or behind the recipes after a crash — counts the
 * references again from the recipes (store_recount.c) and writes DIR/refs back unless the
 * store is read-only. Close closes the volumes still open (rolling back what they did not
 * commit) and then the store. Both sit above volume.c and recipe_io.c, which is why they
 * are not in store.c.
 */
#include "store_recount.h"
#include "common/fail.h"

int trove_store_open(const char *dir, unsigned flags, struct trove_store **out,
                     struct trove_diag *diag)
{
    struct trove_store *s = NULL;
    struct recount rcnt;
    int rc, stale = 0;

    if (out)
        *out = NULL;
    if (!dir || !*dir || !out ||
        (flags & ~(TROVE_STORE_CREATE | TROVE_STORE_READONLY | TROVE_STORE_NOSYNC |
                   TROVE_STORE_NOVERIFY)))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "store open: bad arguments");
    if ((rc = trove__store_open_dir(dir, flags, &s, &stale, diag)) != TROVE_OK)
        return rc;
    if (stale) {
        if ((rc = trove__recount(s, &rcnt)) != TROVE_OK) {
            TROVE_FAIL(diag, rc, 0, "cannot recount the references of %s: %s", dir,
                       trove_strerror(rc));
            goto out;
        }
        trove__recount_adopt(s, &rcnt);
        trove__recount_free(&rcnt);
        if (!(flags & TROVE_STORE_READONLY) && (rc = trove__store_save_refs(s)) != TROVE_OK) {
            TROVE_FAIL(diag, rc, 0, "cannot write %s/refs: %s", dir, trove_strerror(rc));
            goto out;
        }
    }
    *out = s;
    s = NULL;
out:
    trove_store_close(s);
    return rc;
}

void trove_store_close(struct trove_store *s)
{
    if (!s)
        return;
    while (s->open)
        trove_volume_close(s->open);
    trove__store_release(s);
}
