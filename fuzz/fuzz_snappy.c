/*
 * fuzz_snappy.c: libFuzzer target for the Snappy block decoder (src/columnar/snappy.c).
 *
 *   input := selector u8, then the block
 *
 * The declared size is the block's own length if it reads as one of at most 1 MiB: as it
 * is for selector % 3 == 0, one more for 1, one less for 2, so that blocks shorter and
 * longer than declared are tried too; without a readable length it is selector * 4. The oracle is a second decoder written
 * here the plain way, one byte at a time, from the format: the two must agree on success or
 * the error code, and on success on every output byte. A failure must come with a diag of
 * its code, an offset inside the block, and the same code without a diag.
 */
#include <stdlib.h>
#include <string.h>

#include "columnar/snappy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OUT (1u << 20)

/* The reference: returns TROVE_OK, TROVE_ERR_TRUNCATED or TROVE_ERR_CORRUPT. */
static int reference(const uint8_t *in, size_t n, uint8_t *out, size_t dlen)
{
    size_t i = 0, o = 0;
    uint64_t len = 0;
    int shift = 0;

    for (;;) {
        if (i == n)
            return TROVE_ERR_TRUNCATED;
        if (shift == 28 && in[i] >= 16)
            return TROVE_ERR_CORRUPT;
        len += (uint64_t)(in[i] & 127) << shift;
        shift += 7;
        if (in[i++] < 128)
            break;
    }
    if (len != dlen)
        return TROVE_ERR_CORRUPT;
    while (i < n) {
        unsigned tag = in[i++], kind = tag % 4;
        uint64_t count, back = 0;
        if (kind == 0) {
            count = tag / 4;
            if (count >= 60) {
                unsigned bytes = (unsigned)count - 59;
                count = 0;
                for (unsigned k = 0; k < bytes; k++) {
                    if (i == n)
                        return TROVE_ERR_TRUNCATED;
                    count += (uint64_t)in[i++] << (8 * k);
                }
            }
            count++;
            if (count > n - i)
                return TROVE_ERR_TRUNCATED;
            if (count > dlen - o)
                return TROVE_ERR_CORRUPT;
            while (count--)
                out[o++] = in[i++];
            continue;
        }
        if (kind == 1) {
            if (i == n)
                return TROVE_ERR_TRUNCATED;
            count = 4 + (tag / 4) % 8;
            back = (uint64_t)(tag / 32) * 256 + in[i++];
        } else {
            unsigned bytes = kind == 2 ? 2 : 4;
            if (n - i < bytes)
                return TROVE_ERR_TRUNCATED;
            count = 1 + tag / 4;
            for (unsigned k = 0; k < bytes; k++)
                back += (uint64_t)in[i++] << (8 * k);
        }
        if (back == 0 || back > o || count > dlen - o)
            return TROVE_ERR_CORRUPT;
        while (count--) {
            out[o] = out[o - back];
            o++;
        }
    }
    return o == dlen ? TROVE_OK : TROVE_ERR_CORRUPT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *blk = data + 1;
    size_t n = size ? size - 1 : 0, dlen;
    uint64_t len = 0;
    unsigned shift = 0;
    uint8_t *a, *b;
    struct trove_diag diag;
    int rc, want;

    if (size == 0)
        return 0;
    dlen = (size_t)data[0] * 4;
    for (size_t i = 0; i < n && i < 5; i++, shift += 7) {
        len |= (uint64_t)(blk[i] & 127) << shift;
        if (blk[i] < 128) {
            if (len <= MAX_OUT)
                dlen = data[0] % 3 == 0 ? (size_t)len
                       : data[0] % 3 == 1 ? (size_t)len + 1
                                          : (size_t)len - (len > 0);
            break;
        }
    }
    a = malloc(dlen + 1);
    b = malloc(dlen + 1);
    if (!a || !b)
        abort();
    rc = trove__snappy_decode(blk, n, a, dlen, &diag);
    want = reference(blk, n, b, dlen);
    if (rc != want)
        abort();
    if (rc == TROVE_OK) {
        if (memcmp(a, b, dlen) != 0)
            abort();
    } else if (diag.code != rc || diag.offset > n ||
               trove__snappy_decode(blk, n, a, dlen, NULL) != rc) {
        abort();
    }
    free(a);
    free(b);
    return 0;
}
