/*
 * fuzz_attrs.c: libFuzzer target for the attributes object decoder (src/codec/attrs.c,
 * docs/formats/attrs.md).
 *
 * An input whose first byte is 'P' is a stream as it decompresses: the next two bytes are the
 * rows and strings the object claims, the rest the stream, wrapped here into a well-formed
 * object (zstd frame, header, checksum) so that mutations reach the parser rather than die
 * at the checksum. An input that starts "TV" is an attrs frame of the wire
 * (trove_attrs_wire_decode) as it is. Any other input is an object as it is.
 *
 * A table that decodes must hold together: every key and string value an id of its strings,
 * every type 1..5, a bool 0 or 1, events never going back; it re-encodes to an object that
 * decodes to the same table. On error the caller's table is untouched and diag says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/endian.h"
#include "trove/attrs.h"
#include "trove/digest.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const struct trove_attrs *x, const struct trove_attrs *y)
{
    if (x->n != y->n || x->nstr != y->nstr)
        return 0;
    for (size_t i = 0; i < x->nstr; i++)
        if (x->len[i] != y->len[i] || memcmp(x->bytes + x->off[i], y->bytes + y->off[i], x->len[i]))
            return 0;
    for (size_t i = 0; i < x->n; i++)
        if (x->rows[i].event != y->rows[i].event || x->rows[i].key != y->rows[i].key ||
            x->rows[i].type != y->rows[i].type || memcmp(&x->rows[i].v, &y->rows[i].v, sizeof x->rows[i].v))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_attrs t, back;
    struct trove_bytes obj = {0}, again = {0};
    struct trove_diag diag = {0};
    const uint8_t *buf = data;
    size_t len = size;
    int rc;

    if (size >= 3 && data[0] == 'P') {
        size_t bound = ZSTD_compressBound(size - 3), p;
        CHECK(trove_bytes_reserve(&obj, 48 + bound + 8) == TROVE_OK);
        p = ZSTD_compress(obj.ptr + 48, bound, data + 3, size - 3, 1);
        CHECK(!ZSTD_isError(p));
        memcpy(obj.ptr, "TROVATR1", 8);
        trove__put_le32(obj.ptr + 8, 1);
        trove__put_le32(obj.ptr + 12, 0);
        trove__put_le64(obj.ptr + 16, data[1]);
        trove__put_le64(obj.ptr + 24, data[2]);
        trove__put_le64(obj.ptr + 32, size - 3);
        trove__put_le64(obj.ptr + 40, p);
        trove__put_le64(obj.ptr + 48 + p, trove_checksum64(obj.ptr, 48 + p));
        obj.len = 48 + p + 8;
        buf = obj.ptr;
        len = obj.len;
    }
    memset(&t, 0x5a, sizeof t);
    rc = size >= 2 && data[0] == 'T' && data[1] == 'V' ? trove_attrs_wire_decode(buf, len, &t, &diag)
                                                       : trove_attrs_decode(buf, len, &t, &diag);
    if (rc != TROVE_OK) {
        struct trove_attrs sentinel;
        memset(&sentinel, 0x5a, sizeof sentinel);
        CHECK(memcmp(&t, &sentinel, sizeof t) == 0);
        CHECK(diag.code == rc && diag.msg[0]);
        trove_bytes_free(&obj);
        return 0;
    }
    for (size_t i = 0; i < t.n; i++) {
        const struct trove_attr *r = &t.rows[i];
        CHECK(r->key < t.nstr && r->type >= 1 && r->type <= 5);
        CHECK(!(r->type == TROVE_ATTR_STRING || r->type == TROVE_ATTR_JSON) || r->v.s < t.nstr);
        CHECK(r->type != TROVE_ATTR_BOOL || r->v.b <= 1);
        CHECK(i == 0 || r->event >= t.rows[i - 1].event);
    }
    CHECK(trove_attrs_encode(&t, 1, &again) == TROVE_OK);
    memset(&back, 0, sizeof back);
    CHECK(trove_attrs_decode(again.ptr, again.len, &back, NULL) == TROVE_OK);
    CHECK(same(&t, &back));
    trove_attrs_free(&back);
    again.len = 0; /* and as a frame of the wire */
    CHECK(trove_attrs_wire_encode(&t, &again) == TROVE_OK);
    memset(&back, 0, sizeof back);
    CHECK(trove_attrs_wire_decode(again.ptr, again.len, &back, NULL) == TROVE_OK);
    CHECK(same(&t, &back));
    trove_attrs_free(&t);
    trove_attrs_free(&back);
    trove_bytes_free(&again);
    trove_bytes_free(&obj);
    return 0;
}
