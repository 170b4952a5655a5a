/*
 * backend.c: the public object-backend functions of include/trove/store.h. Each checks its
 * arguments once — NULL handles, the zero digest (it means "no object" and is never
 * stored), a NULL buffer with a nonzero length — and dispatches through the backend's ops
 * table (backend_internal.h), so that every backend sees only well-formed requests and the
 * contract is enforced in one place.
 *
 * get replaces out's content: out->len is set to 0 first, so on any error out holds no
 * object bytes (its storage is kept for reuse; the caller still frees it).
 */
#include "backend_internal.h"

#include <assert.h>

void trove_backend_close(struct trove_backend *be)
{
    if (!be)
        return;
    assert(be->ops && be->ops->close);
    be->ops->close(be);
}

int trove_backend_put(struct trove_backend *be, const struct trove_digest *d, const void *data,
                      size_t len, int *created_out)
{
    int created = 0, rc;

    if (created_out)
        *created_out = 0;
    if (!be || !d || trove_digest_is_zero(d) || (!data && len > 0))
        return TROVE_ERR_INVALID;
    rc = be->ops->put(be, d, data, len, &created);
    if (rc == TROVE_OK && created_out)
        *created_out = created;
    return rc;
}

int trove_backend_get(struct trove_backend *be, const struct trove_digest *d,
                      struct trove_bytes *out, size_t max_len)
{
    int rc;

    if (!out)
        return TROVE_ERR_INVALID;
    out->len = 0;
    if (!be || !d || trove_digest_is_zero(d))
        return TROVE_ERR_INVALID;
    rc = be->ops->get(be, d, out, max_len);
    if (rc == TROVE_OK && !be->no_verify) {
        /* Every byte read is checked against its name before anyone uses it. */
        struct trove_digest got;
        trove_digest_of(out->ptr, out->len, &got);
        if (!trove_digest_equal(&got, d))
            rc = TROVE_ERR_CHECKSUM;
    }
    if (rc != TROVE_OK)
        out->len = 0;
    return rc;
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
    if (!be || !d || trove_digest_is_zero(d))
        return TROVE_ERR_INVALID;
    return be->ops->del(be, d);
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
