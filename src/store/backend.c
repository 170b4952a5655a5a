/*
 * backend.c: the public object-backend functions of include/trove/store.h. Each checks its
 * arguments once — NULL handles, the zero digest (it means "no object" and is never
 * stored), a NULL buffer with a nonzero length — and dispatches through the backend's ops
 * table (backend_internal.h), so that every backend sees only well-formed requests and the
 * contract is enforced in one place.
 *
 * get replaces out's content: out->len is set to 0 first, so on any error out holds no
 * object bytes (its storage is kept for reuse; the caller still frees it).
 *
 * Damage. get hashes what it read (unless the backend was opened NOVERIFY): bytes that do
 * not hash to their name are TROVE_ERR_CHECKSUM, and the backend's quarantine records the
 * name, so that it is never served again (get answers TROVE_ERR_CHECKSUM at once; size
 * still tells the stored length) until good bytes arrive: a put or stage of a quarantined
 * name checks that the new bytes really hash to it, replaces the stored object (delete,
 * then put: a crash between leaves it missing, which it was in effect) and drops the
 * record. A delete drops it too.
 */
#include "backend_internal.h"
#include "common/alloc.h"

#include <assert.h>
#include <stdlib.h>

void trove_backend_close(struct trove_backend *be)
{
    if (!be)
        return;
    assert(be->ops && be->ops->close);
    be->ops->close(be);
}

static int quarantined(struct trove_backend *be, const struct trove_digest *d)
{
    return be->ops->quarantined && be->ops->quarantined(be, d) == 1;
}

/* Good bytes for a quarantined name: replace the damaged object with them. */
static int heal(struct trove_backend *be, const struct trove_digest *d, const void *data,
                size_t len)
{
    struct trove_digest got;
    int created = 0, rc;

    trove_digest_of(data, len, &got);
    if (!trove_digest_equal(&got, d))
        return TROVE_ERR_INVALID; /* not its bytes: the damaged object stays quarantined */
    rc = be->ops->del(be, d);
    if (rc != TROVE_OK && rc != TROVE_ERR_NOTFOUND)
        return rc;
    if ((rc = be->ops->put(be, d, data, len, &created)) != TROVE_OK)
        return rc;
    return be->ops->release(be, d);
}

int trove_backend_put(struct trove_backend *be, const struct trove_digest *d, const void *data,
                      size_t len, int *created_out)
{
    int created = 0, rc;

    if (created_out)
        *created_out = 0;
    if (!be || !d || trove_digest_is_zero(d) || (!data && len > 0))
        return TROVE_ERR_INVALID;
    if (quarantined(be, d)) {
        rc = heal(be, d, data, len);
        created = rc == TROVE_OK;
    } else {
        rc = be->ops->put(be, d, data, len, &created);
    }
    if (rc == TROVE_OK && created_out)
        *created_out = created;
    return rc;
}

int trove__backend_put_deferred(struct trove_backend *be, const struct trove_digest *d,
                                const void *data, size_t len)
{
    if (!be || !d || trove_digest_is_zero(d) || (!data && len > 0))
        return TROVE_ERR_INVALID;
    if (!be->ops->defer_put || quarantined(be, d))
        return trove_backend_put(be, d, data, len, NULL);
    return be->ops->defer_put(be, d, data, len);
}

int trove__backend_copies(const struct trove_backend *be)
{
    return be && be->ops->defer_put_from != NULL;
}

int trove__backend_put_from_deferred(struct trove_backend *be, const struct trove_digest *d,
                                     const void *data, size_t len, int src_fd,
                                     uint64_t src_off)
{
    if (!be || !d || trove_digest_is_zero(d) || (!data && len > 0) || src_fd < 0)
        return TROVE_ERR_INVALID;
    if (!be->ops->defer_put_from || quarantined(be, d))
        return trove__backend_put_deferred(be, d, data, len);
    return be->ops->defer_put_from(be, d, data, len, src_fd, src_off);
}

int trove__backend_flush(struct trove_backend *be)
{
    if (!be)
        return TROVE_ERR_INVALID;
    return be->ops->flush ? be->ops->flush(be) : TROVE_OK;
}

int trove_backend_quarantined(struct trove_backend *be, const struct trove_digest *d)
{
    if (!be || !d || trove_digest_is_zero(d))
        return 0;
    return quarantined(be, d);
}

int trove_backend_quarantine(struct trove_backend *be, const struct trove_digest *d,
                             const char *why)
{
    if (!be || !d || trove_digest_is_zero(d) || !why)
        return TROVE_ERR_INVALID;
    return be->ops->quarantine ? be->ops->quarantine(be, d, why) : TROVE_OK;
}

int trove_backend_release(struct trove_backend *be, const struct trove_digest *d)
{
    if (!be || !d || trove_digest_is_zero(d))
        return TROVE_ERR_INVALID;
    return be->ops->release ? be->ops->release(be, d) : TROVE_OK;
}

int trove_backend_quarantine_list(struct trove_backend *be,
                                  int (*fn)(void *ctx, const struct trove_digest *d), void *ctx)
{
    if (!be || !fn)
        return TROVE_ERR_INVALID;
    return be->ops->quarantine_list ? be->ops->quarantine_list(be, fn, ctx) : TROVE_OK;
}

int trove_backend_unreadable(struct trove_backend *be, int remove,
                             int (*fn)(void *ctx, const char *name, const char *why), void *ctx)
{
    if (!be || !fn)
        return TROVE_ERR_INVALID;
    return be->ops->unreadable ? be->ops->unreadable(be, remove, fn, ctx) : TROVE_OK;
}

/* get and get_raw: the checks, the read, and (verify) the bytes against their name. */
static int get(struct trove_backend *be, const struct trove_digest *d, struct trove_bytes *out,
               size_t max_len, int verify)
{
    int rc;

    if (!out)
        return TROVE_ERR_INVALID;
    out->len = 0;
    if (!be || !d || trove_digest_is_zero(d))
        return TROVE_ERR_INVALID;
    if (verify && quarantined(be, d))
        return TROVE_ERR_CHECKSUM; /* known damaged: never served */
    rc = be->ops->get(be, d, out, max_len);
    if (rc == TROVE_OK && verify) {
        /* Every byte read is checked against its name before anyone uses it. */
        struct trove_digest got;
        trove_digest_of(out->ptr, out->len, &got);
        if (!trove_digest_equal(&got, d)) {
            rc = TROVE_ERR_CHECKSUM;
            if (be->ops->quarantine) /* best effort: the error is what the caller needs */
                be->ops->quarantine(be, d, "its stored bytes did not hash to its name when read");
        }
    }
    if (rc != TROVE_OK)
        out->len = 0;
    return rc;
}

int trove_backend_get(struct trove_backend *be, const struct trove_digest *d,
                      struct trove_bytes *out, size_t max_len)
{
    return get(be, d, out, max_len, be && !be->no_verify);
}

int trove_backend_get_async(const struct trove_backend *be)
{
    return be && be->ops->get_start && (!be->ops->async_ok || be->ops->async_ok(be));
}

/* An asynchronous get in flight: what its end checks and whom it tells. */
struct get_async {
    struct trove_backend *be;
    struct trove_digest d;
    struct trove_bytes *out;
    trove_get_done_fn done;
    void *ctx;
};

static void get_ended(void *arg, int rc)
{
    struct get_async *g = arg;
    struct trove_backend *be = g->be;
    trove_get_done_fn done = g->done;
    void *ctx = g->ctx;

    if (rc == TROVE_OK && !be->no_verify) { /* checked as trove_backend_get checks */
        struct trove_digest got;
        trove_digest_of(g->out->ptr, g->out->len, &got);
        if (!trove_digest_equal(&got, &g->d)) {
            rc = TROVE_ERR_CHECKSUM;
            if (be->ops->quarantine)
                be->ops->quarantine(be, &g->d,
                                    "its stored bytes did not hash to its name when read");
        }
    }
    if (rc != TROVE_OK)
        g->out->len = 0;
    free(g);
    done(ctx, rc);
}

int trove_backend_get_start(struct trove_backend *be, const struct trove_digest *d,
                            struct trove_bytes *out, size_t max_len, trove_get_done_fn done,
                            void *ctx)
{
    struct get_async *g;
    int rc;

    if (!out || !done)
        return TROVE_ERR_INVALID;
    out->len = 0;
    if (!be || !d || trove_digest_is_zero(d) || !trove_backend_get_async(be))
        return TROVE_ERR_INVALID;
    if (!be->no_verify && quarantined(be, d))
        return TROVE_ERR_CHECKSUM;
    if (!(g = trove__malloc(sizeof *g)))
        return TROVE_ERR_NOMEM;
    g->be = be;
    g->d = *d;
    g->out = out;
    g->done = done;
    g->ctx = ctx;
    if ((rc = be->ops->get_start(be, &g->d, out, max_len, get_ended, g)) != TROVE_OK) {
        free(g);
        out->len = 0;
    }
    return rc;
}

int trove_backend_get_raw(struct trove_backend *be, const struct trove_digest *d,
                          struct trove_bytes *out, size_t max_len)
{
    return get(be, d, out, max_len, 0);
}

int trove_backend_size(struct trove_backend *be, const struct trove_digest *d, uint64_t *len_out)
{
    if (!be || !d || !len_out || trove_digest_is_zero(d))
        return TROVE_ERR_INVALID;
    *len_out = 0;
    return be->ops->size(be, d, len_out);
}

int trove_backend_delete(struct trove_backend *be, const struct trove_digest *d)
{
    int rc;

    if (!be || !d || trove_digest_is_zero(d))
        return TROVE_ERR_INVALID;
    rc = be->ops->del(be, d);
    if ((rc == TROVE_OK || rc == TROVE_ERR_NOTFOUND) && be->ops->release)
        be->ops->release(be, d); /* a deleted name has nothing left to quarantine */
    return rc;
}

int trove_backend_list(struct trove_backend *be,
                       int (*fn)(void *ctx, const struct trove_digest *d), void *ctx)
{
    if (!be || !fn)
        return TROVE_ERR_INVALID;
    return be->ops->list(be, fn, ctx);
}

int trove_backend_stage(struct trove_backend *be, const struct trove_digest *d, const void *data,
                        size_t len)
{
    if (!be || !d || trove_digest_is_zero(d) || (!data && len > 0))
        return TROVE_ERR_INVALID;
    if (quarantined(be, d))
        return heal(be, d, data, len); /* at once: the damaged object must not stay */
    if (!be->ops->stage)
        return be->ops->put(be, d, data, len, &(int){0});
    return be->ops->stage(be, d, data, len);
}

int trove_backend_publish(struct trove_backend *be, uint64_t *overhead_out)
{
    uint64_t overhead = 0;
    int rc;

    if (!be)
        return TROVE_ERR_INVALID;
    rc = be->ops->publish ? be->ops->publish(be, &overhead) : TROVE_OK;
    if (overhead_out)
        *overhead_out = overhead;
    return rc;
}
