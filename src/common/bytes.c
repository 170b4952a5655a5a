/*
 * bytes.c: the growable byte buffer (struct trove_bytes). Growth is geometric so that
 * appending n bytes one at a time costs O(n); a failed growth leaves the buffer as it was.
 */
#include "trove/common.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

int trove_bytes_reserve(struct trove_bytes *b, size_t extra)
{
    size_t need, cap;
    uint8_t *p;

    if (extra > SIZE_MAX - b->len)
        return TROVE_ERR_NOMEM;
    need = b->len + extra;
    if (need <= b->cap)
        return TROVE_OK;
    cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    p = trove__realloc(b->ptr, cap);
    if (!p)
        return TROVE_ERR_NOMEM;
    b->ptr = p;
    b->cap = cap;
    return TROVE_OK;
}

int trove_bytes_append(struct trove_bytes *b, const void *src, size_t n)
{
    int rc = trove_bytes_reserve(b, n);
    if (rc == TROVE_OK && n) {
        memcpy(b->ptr + b->len, src, n);
        b->len += n;
    }
    return rc;
}

void trove_bytes_free(struct trove_bytes *b)
{
    free(b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
}

int trove_bytes_sink_write(void *ctx, const void *p, size_t n)
{
    return trove_bytes_append(ctx, p, n);
}
