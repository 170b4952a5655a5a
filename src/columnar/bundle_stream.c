/*
 * bundle_stream.c: the capture bundle written front to back to a sink (include/trove/bundle.h:
 * trove_bundle_enc_*, trove_bundle_writer_*), for an output that cannot seek (a pipe, an HTTP
 * response) and an entry too large to hold: the same bytes as trove_bundle_write_mem
 * (libzip 1.7, bundle_zip.c) writes for the same entries.
 *
 *   local header      (30 bytes + name + extra)
 *     0  u32 0x04034b50           14 u32 CRC-32 of the entry's bytes
 *     4  u16 version needed       18 u32 stored size    } 0xffffffff each when either
 *     6  u16 flags (0x0800: UTF-8 22 u32 size          }  is >= 0xffffffff
 *            name, when not ASCII) 26 u16 name length
 *     8  u16 method (0 STORED,    28 u16 extra length
 *            8 DEFLATED)          30 name, then the zip64 extra field when there is one:
 *    10  u16 time 0 (00:00:00)       u16 1, u16 16, u64 size, u64 stored size
 *    12  u16 date 0x21 (1980-01-01)
 *   entry data        stored size bytes: the entry, or its raw deflate stream
 *   ... the next entries ...
 *   central record    (46 bytes + name + extra) per entry, in order: u32 0x02014b50,
 *                     u16 made by 0x033f (Unix, 6.3), then the local header's fields from
 *                     version needed to extra length, sizes 0xffffffff only where that one
 *                     is; u16 comment length 0, u16 disk 0, u16 internal attributes 0,
 *                     u32 external attributes 0x81a40000 (a file, rw-r--r--), u32 offset
 *                     of the local header (0xffffffff when >= that); name; zip64 extra
 *                     field with those of size, stored size, offset that are >= 0xffffffff
 *   zip64 end record  only when some record needed zip64 or the directory starts past
 *   and locator       4 GiB: u32 0x06064b50, u64 44, u16 45, u16 45, u32 0, u32 0, u64 n,
 *                     u64 n, u64 directory size, u64 directory offset; u32 0x07064b50,
 *                     u32 0, u64 offset of the zip64 end record, u32 1
 *   end record        u32 0x06054b50, u32 0, u16 n, u16 n, u32 directory size, u32
 *                     directory offset (0xffffffff each when >= that), u16 comment length 0
 *
 * Version needed is 10 for STORED, 20 for DEFLATED, and 45 where zip64 applies. Zip64 goes
 * by libzip's rules, which the code below follows case by case: a local header carries the
 * zip64 extra field when libzip cannot know beforehand that the sizes fit 32 bits (a STORED
 * entry over 0xffffffff bytes; a DEFLATED one over 4293656963, the most whose deflate stream
 * stays under 4 GiB) or when they do not; a central record when a size or the offset is
 * >= 0xffffffff. Offsets pass 4 GiB only below TROVE_BUNDLE_MAX_TOTAL (16 GiB) of entries.
 *
 * A local header needs the CRC-32 and the stored size before the data, and this writer does
 * not seek: an entry's bytes go through an encoder first (trove_bundle_enc: the CRC-32, the
 * size, and in a deflated bundle the deflate stream), whose output the caller keeps (a
 * temporary file for a large entry) and then copies through trove_bundle_writer_data. The
 * encoder deflates as libzip does: zlib level 6, raw deflate (window bits -15), memory level
 * 9, the default strategy, fed 8 KiB at a time without flushes, then Z_FINISH; so the
 * deflate stream is libzip's.
 */
#include "trove/bundle.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define U32_MAX 0xffffffffull
#define FEED_BYTES 8192u            /* libzip's BUFSIZE: how much deflate gets at a time */
#define OUT_BYTES (64u << 10)       /* deflate output passed on at a time */
#define DEFLATE_LEVEL 6
#define DEFLATE_MEM_LEVEL 9         /* libzip's MAX_MEM_LEVEL */
#define STORED_ZIP64_OVER U32_MAX   /* sizes past which libzip forces zip64 beforehand */
#define DEFLATED_ZIP64_OVER 4293656963ull
#define MADE_BY 0x033fu             /* Unix, zip 6.3 */
#define EXT_ATTR (0100644u << 16)
#define DOS_DATE 0x21u              /* 1980-01-01 */
#define DOS_TIME 0u

/* ---- the entry encoder --------------------------------------------------------------- */

/* crc extended over p[0..n); zlib takes at most UINT_MAX bytes a call. */
static uint32_t crc_add(uint32_t crc, const uint8_t *p, size_t n)
{
    for (size_t at = 0; at < n;) {
        size_t k = n - at < (1u << 30) ? n - at : (1u << 30);
        crc = (uint32_t)crc32(crc, p + at, (uInt)k);
        at += k;
    }
    return crc;
}

struct trove_bundle_enc {
    struct trove_sink out;
    int deflate;
    int err;          /* sticky: the first error; TROVE_ERR_INVALID once finished */
    uint32_t crc;
    uint64_t size, stored;
    z_stream zs;
    int zs_ready;
    size_t nfeed;     /* bytes in feed */
    uint8_t feed[FEED_BYTES];
    uint8_t obuf[OUT_BYTES];
};

int trove_bundle_enc_new(int deflate, const struct trove_sink *out, struct trove_bundle_enc **e_out)
{
    struct trove_bundle_enc *e;

    if (!out || !out->write || !e_out)
        return TROVE_ERR_INVALID;
    if (!(e = trove__calloc(1, sizeof *e)))
        return TROVE_ERR_NOMEM;
    e->out = *out;
    e->deflate = deflate != 0;
    e->crc = (uint32_t)crc32(0L, Z_NULL, 0);
    if (e->deflate) {
        if (deflateInit2(&e->zs, DEFLATE_LEVEL, Z_DEFLATED, -MAX_WBITS, DEFLATE_MEM_LEVEL,
                         Z_DEFAULT_STRATEGY) != Z_OK) {
            free(e);
            return TROVE_ERR_NOMEM;
        }
        e->zs_ready = 1;
    }
    *e_out = e;
    return TROVE_OK;
}

void trove_bundle_enc_free(struct trove_bundle_enc *e)
{
    if (!e)
        return;
    if (e->zs_ready)
        deflateEnd(&e->zs);
    free(e);
}

/* Pass n bytes of the entry's stored form on to the sink. */
static int enc_put(struct trove_bundle_enc *e, const uint8_t *p, size_t n)
{
    int rc;

    if (n == 0)
        return TROVE_OK;
    if ((rc = e->out.write(e->out.ctx, p, n)) != TROVE_OK)
        return rc;
    e->stored += n;
    return TROVE_OK;
}

/* Deflate feed[0..nfeed) with flush (Z_NO_FLUSH or Z_FINISH), passing the output on. */
static int enc_deflate(struct trove_bundle_enc *e, int flush)
{
    int zr, rc;

    e->zs.next_in = e->feed;
    e->zs.avail_in = (uInt)e->nfeed;
    for (;;) {
        e->zs.next_out = e->obuf;
        e->zs.avail_out = (uInt)sizeof e->obuf;
        zr = deflate(&e->zs, flush);
        if (zr == Z_STREAM_ERROR)
            return TROVE_ERR_INVALID;
        if ((rc = enc_put(e, e->obuf, sizeof e->obuf - e->zs.avail_out)) != TROVE_OK)
            return rc;
        if (flush == Z_FINISH ? zr == Z_STREAM_END : e->zs.avail_in == 0 && e->zs.avail_out != 0)
            break;
    }
    e->nfeed = 0;
    return TROVE_OK;
}

int trove_bundle_enc_write(struct trove_bundle_enc *e, const void *p, size_t n)
{
    const uint8_t *b = p;
    int rc = TROVE_OK;

    if (!e || (n && !p))
        return TROVE_ERR_INVALID;
    if (e->err)
        return e->err;
    e->crc = crc_add(e->crc, b, n);
    e->size += n;
    if (!e->deflate) {
        rc = enc_put(e, b, n);
    } else {
        while (n > 0 && rc == TROVE_OK) {
            size_t k = FEED_BYTES - e->nfeed < n ? FEED_BYTES - e->nfeed : n;
            memcpy(e->feed + e->nfeed, b, k);
            e->nfeed += k;
            b += k;
            n -= k;
            if (e->nfeed == FEED_BYTES)
                rc = enc_deflate(e, Z_NO_FLUSH);
        }
    }
    if (rc != TROVE_OK)
        e->err = rc;
    return rc;
}

static int enc_sink_write(void *ctx, const void *p, size_t n)
{
    return trove_bundle_enc_write(ctx, p, n);
}

void trove_bundle_enc_sink(struct trove_bundle_enc *e, struct trove_sink *out)
{
    out->write = enc_sink_write;
    out->ctx = e;
}

int trove_bundle_enc_finish(struct trove_bundle_enc *e, struct trove_bundle_entry_info *info)
{
    int rc = TROVE_OK;

    if (!e || !info)
        return TROVE_ERR_INVALID;
    if (e->err)
        return e->err;
    /* As libzip: the last partial piece without a flush, then the finish with no input. */
    if (e->deflate && e->nfeed > 0)
        rc = enc_deflate(e, Z_NO_FLUSH);
    if (e->deflate && rc == TROVE_OK)
        rc = enc_deflate(e, Z_FINISH);
    e->err = rc != TROVE_OK ? rc : TROVE_ERR_INVALID; /* finished either way */
    if (rc != TROVE_OK)
        return rc;
    memset(info, 0, sizeof *info);
    info->crc32 = e->crc;
    info->size = e->size;
    info->stored_size = e->stored;
    info->deflated = e->deflate;
    return TROVE_OK;
}

/* ---- the zip writer ------------------------------------------------------------------ */

struct zentry {
    char *name;
    size_t name_len;
    uint32_t crc;
    uint64_t size, stored, offset;
    uint16_t version, flags;
};

struct trove_bundle_writer {
    struct trove_sink out;
    int deflate;
    int err;              /* sticky; TROVE_ERR_INVALID once finished */
    uint64_t at;          /* bytes written */
    uint64_t total;       /* entry sizes so far (uncompressed) */
    uint64_t data_left;   /* stored bytes the open entry still needs */
    struct zentry *ents;
    size_t n;
};

int trove_bundle_writer_new(int deflate, const struct trove_sink *out,
                            struct trove_bundle_writer **w_out)
{
    struct trove_bundle_writer *w;

    if (!out || !out->write || !w_out)
        return TROVE_ERR_INVALID;
    if (!(w = trove__calloc(1, sizeof *w)))
        return TROVE_ERR_NOMEM;
    w->out = *out;
    w->deflate = deflate != 0;
    *w_out = w;
    return TROVE_OK;
}

void trove_bundle_writer_free(struct trove_bundle_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++)
        free(w->ents[i].name);
    free(w->ents);
    free(w);
}

static int put(struct trove_bundle_writer *w, const void *p, size_t n)
{
    int rc;

    if (n == 0)
        return TROVE_OK;
    if ((rc = w->out.write(w->out.ctx, p, n)) != TROVE_OK)
        return rc;
    w->at += n;
    return TROVE_OK;
}

/* Whether the name has a byte outside ASCII: libzip then sets the UTF-8 flag. */
static int non_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80)
            return 1;
    return 0;
}

/* Entry e's local header (central 0) or central record (central 1) into buf, which has
 * room for 46 bytes and a 28-byte extra field; the name goes separately. Its length before
 * the name in *head_out and the extra field's (after the name) in *extra_out. */
static void record(const struct trove_bundle_writer *w, const struct zentry *e, int central,
                   uint8_t *buf, size_t *head_out, uint8_t *extra, size_t *extra_out)
{
    int big = e->size >= U32_MAX || e->stored >= U32_MAX;
    int really = big || (central && e->offset >= U32_MAX); /* libzip's "needs zip64" */
    int forced = e->size > (w->deflate ? DEFLATED_ZIP64_OVER : STORED_ZIP64_OVER);
    uint8_t *p = buf;
    size_t x = 0;

    trove__put_le32(p, central ? 0x02014b50u : 0x04034b50u);
    p += 4;
    if (central) {
        trove__put_le16(p, MADE_BY);
        p += 2;
    }
    trove__put_le16(p, really && e->version < 45 ? 45 : e->version);
    trove__put_le16(p + 2, e->flags);
    trove__put_le16(p + 4, w->deflate ? 8 : 0);
    trove__put_le16(p + 6, DOS_TIME);
    trove__put_le16(p + 8, DOS_DATE);
    trove__put_le32(p + 10, e->crc);
    if (!central && big) {
        trove__put_le32(p + 14, (uint32_t)U32_MAX);
        trove__put_le32(p + 18, (uint32_t)U32_MAX);
    } else {
        trove__put_le32(p + 14, e->stored < U32_MAX ? (uint32_t)e->stored : (uint32_t)U32_MAX);
        trove__put_le32(p + 18, e->size < U32_MAX ? (uint32_t)e->size : (uint32_t)U32_MAX);
    }
    trove__put_le16(p + 22, (uint16_t)e->name_len);
    p += 24; /* the extra length at p, set below */
    if (central) {
        memset(p + 2, 0, 6); /* comment length, disk, internal attributes */
        trove__put_le32(p + 8, EXT_ATTR);
        trove__put_le32(p + 12, e->offset < U32_MAX ? (uint32_t)e->offset : (uint32_t)U32_MAX);
    }
    /* The zip64 extra field: in a local header whenever libzip forced zip64 or the sizes
     * need it (both sizes, or nothing when neither is over 0xffffffff); in a central record
     * with the fields that are >= 0xffffffff (also nothing when none is over it). */
    if (central ? really : forced || really) {
        uint8_t *d = extra + 4;
        if (!central && (forced || e->stored > U32_MAX || e->size > U32_MAX)) {
            trove__put_le64(d, e->size);
            trove__put_le64(d + 8, e->stored);
            d += 16;
        } else if (central && (e->stored > U32_MAX || e->size > U32_MAX || e->offset > U32_MAX)) {
            if (e->size >= U32_MAX) {
                trove__put_le64(d, e->size);
                d += 8;
            }
            if (e->stored >= U32_MAX) {
                trove__put_le64(d, e->stored);
                d += 8;
            }
            if (e->offset >= U32_MAX) {
                trove__put_le64(d, e->offset);
                d += 8;
            }
        }
        x = (size_t)(d - extra);
        trove__put_le16(extra, 1);
        trove__put_le16(extra + 2, (uint16_t)(x - 4));
    }
    trove__put_le16(p, (uint16_t)x);
    *head_out = central ? 46 : 30;
    *extra_out = x;
}

/* The checks before an entry's header goes out. */
static int check_entry(struct trove_bundle_writer *w, const char *name, uint64_t size,
                       struct trove_diag *diag)
{
    size_t len = name ? strlen(name) : 0;
    const char *why;

    if (w->data_left)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "entry \"%s\" is %llu bytes short of its stored size",
                          w->ents[w->n - 1].name, (unsigned long long)w->data_left);
    if (w->n == TROVE_BUNDLE_MAX_ENTRIES)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "a bundle holds 1 to %u entries",
                          TROVE_BUNDLE_MAX_ENTRIES);
    if (trove_bundle_name_check(name, len, &why) != TROVE_OK)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "entry %zu: %s: \"%.200s\"", w->n, why,
                          name ? name : "");
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->ents[i].name, name) == 0)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "entry \"%s\" appears twice", name);
    if (size > TROVE_BUNDLE_MAX_TOTAL - w->total)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "entries total more than %llu bytes at \"%s\"",
                          (unsigned long long)TROVE_BUNDLE_MAX_TOTAL, name);
    return TROVE_OK;
}

int trove_bundle_writer_begin(struct trove_bundle_writer *w, const char *name,
                              const struct trove_bundle_entry_info *info, struct trove_diag *diag)
{
    uint8_t head[46], extra[4 + 24];
    size_t nh, nx, len;
    struct zentry *e;
    void *grown;
    int rc;

    if (!w || !info)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no writer or entry");
    if (w->err)
        return TROVE_FAIL(diag, w->err, 0, "the bundle writer failed or finished already");
    if ((rc = check_entry(w, name, info->size, diag)) != TROVE_OK)
        goto out;
    if ((info->deflated != 0) != w->deflate ||
        (!w->deflate && info->stored_size != info->size)) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "entry \"%s\": encoded for a %s bundle",
                        name, info->deflated ? "deflated" : "stored");
        goto out;
    }
    len = strlen(name);
    if (!(grown = trove__realloc(w->ents, (w->n + 1) * sizeof *w->ents))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    w->ents = grown;
    e = &w->ents[w->n];
    memset(e, 0, sizeof *e);
    if (!(e->name = trove__malloc(len + 1))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    memcpy(e->name, name, len + 1);
    e->name_len = len;
    e->crc = info->crc32;
    e->size = info->size;
    e->stored = info->stored_size;
    e->offset = w->at;
    e->flags = non_ascii(name, len) ? 0x0800 : 0;
    /* libzip's version needed: 45 when it forces zip64 or the sizes need it, else 20 for
     * deflate and 10 for stored; the offset raises only the central record's. */
    e->version = e->size > (w->deflate ? DEFLATED_ZIP64_OVER : STORED_ZIP64_OVER) ||
                         e->size >= U32_MAX || e->stored >= U32_MAX
                     ? 45
                 : w->deflate ? 20
                              : 10;
    w->n++;
    record(w, e, 0, head, &nh, extra, &nx);
    if ((rc = put(w, head, nh)) != TROVE_OK || (rc = put(w, name, len)) != TROVE_OK ||
        (rc = put(w, extra, nx)) != TROVE_OK) {
        TROVE_FAIL(diag, rc, 0, "writing the header of \"%s\": %s", name, trove_strerror(rc));
        goto out;
    }
    w->total += info->size;
    w->data_left = info->stored_size;
out:
    if (rc != TROVE_OK)
        w->err = rc;
    return rc;
}

int trove_bundle_writer_data(struct trove_bundle_writer *w, const void *p, size_t n)
{
    int rc;

    if (!w || (n && !p))
        return TROVE_ERR_INVALID;
    if (w->err)
        return w->err;
    if (n > w->data_left)
        rc = TROVE_ERR_INVALID;
    else
        rc = put(w, p, n);
    if (rc != TROVE_OK) {
        w->err = rc;
        return rc;
    }
    w->data_left -= n;
    return TROVE_OK;
}

int trove_bundle_writer_add(struct trove_bundle_writer *w, const struct trove_bundle_entry *e,
                            struct trove_diag *diag)
{
    struct trove_bundle_entry_info info;
    struct trove_bytes z = {0};
    int rc;

    if (!w || !e)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no writer or entry");
    if (w->err)
        return TROVE_FAIL(diag, w->err, 0, "the bundle writer failed or finished already");
    if (!e->data && e->len)
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "entry \"%s\": no data",
                        e->name ? e->name : "");
    else
        rc = check_entry(w, e->name, e->len, diag);
    if (rc != TROVE_OK) {
        w->err = rc;
        return rc;
    }
    if (w->deflate) {
        struct trove_sink sk = {trove_bytes_sink_write, &z};
        struct trove_bundle_enc *enc = NULL;
        if ((rc = trove_bundle_enc_new(1, &sk, &enc)) == TROVE_OK &&
            (rc = trove_bundle_enc_write(enc, e->data, e->len)) == TROVE_OK)
            rc = trove_bundle_enc_finish(enc, &info);
        trove_bundle_enc_free(enc);
        if (rc != TROVE_OK) {
            trove_bytes_free(&z);
            w->err = rc;
            return TROVE_FAIL(diag, rc, 0, "deflating \"%s\": %s", e->name, trove_strerror(rc));
        }
    } else {
        memset(&info, 0, sizeof info);
        info.crc32 = crc_add((uint32_t)crc32(0L, Z_NULL, 0), e->data, e->len);
        info.size = info.stored_size = e->len;
    }
    if ((rc = trove_bundle_writer_begin(w, e->name, &info, diag)) == TROVE_OK) {
        rc = w->deflate ? trove_bundle_writer_data(w, z.ptr, z.len)
                        : trove_bundle_writer_data(w, e->data, e->len);
        if (rc != TROVE_OK)
            TROVE_FAIL(diag, rc, 0, "writing \"%s\": %s", e->name, trove_strerror(rc));
    }
    trove_bytes_free(&z);
    return rc;
}

int trove_bundle_writer_finish(struct trove_bundle_writer *w, struct trove_diag *diag)
{
    uint8_t buf[56 + 20 + 22];
    uint64_t cd_at, cd_size;
    int zip64 = 0, rc = TROVE_OK;
    size_t k = 0;

    if (!w)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no writer");
    if (w->err)
        return TROVE_FAIL(diag, w->err, 0, "the bundle writer failed or finished already");
    if (w->data_left || w->n == 0) {
        w->err = TROVE_ERR_INVALID;
        if (w->n == 0)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                              "a bundle holds 1 to %u entries, not 0", TROVE_BUNDLE_MAX_ENTRIES);
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "entry \"%s\" is %llu bytes short of its stored size",
                          w->ents[w->n - 1].name, (unsigned long long)w->data_left);
    }
    cd_at = w->at;
    for (size_t i = 0; i < w->n && rc == TROVE_OK; i++) {
        const struct zentry *e = &w->ents[i];
        uint8_t head[46], extra[4 + 24];
        size_t nh, nx;
        record(w, e, 1, head, &nh, extra, &nx);
        zip64 |= e->size >= U32_MAX || e->stored >= U32_MAX || e->offset >= U32_MAX;
        if ((rc = put(w, head, nh)) == TROVE_OK && (rc = put(w, e->name, e->name_len)) == TROVE_OK)
            rc = put(w, extra, nx);
    }
    cd_size = w->at - cd_at;
    zip64 |= cd_at > U32_MAX;
    if (zip64) {
        trove__put_le32(buf, 0x06064b50u);
        trove__put_le64(buf + 4, 44);
        trove__put_le16(buf + 12, 45);
        trove__put_le16(buf + 14, 45);
        trove__put_le32(buf + 16, 0);
        trove__put_le32(buf + 20, 0);
        trove__put_le64(buf + 24, w->n);
        trove__put_le64(buf + 32, w->n);
        trove__put_le64(buf + 40, cd_size);
        trove__put_le64(buf + 48, cd_at);
        trove__put_le32(buf + 56, 0x07064b50u);
        trove__put_le32(buf + 60, 0);
        trove__put_le64(buf + 64, cd_at + cd_size);
        trove__put_le32(buf + 72, 1);
        k = 76;
    }
    trove__put_le32(buf + k, 0x06054b50u);
    trove__put_le32(buf + k + 4, 0);
    trove__put_le16(buf + k + 8, (uint16_t)w->n); /* n <= TROVE_BUNDLE_MAX_ENTRIES < 0xffff */
    trove__put_le16(buf + k + 10, (uint16_t)w->n);
    trove__put_le32(buf + k + 12, cd_size < U32_MAX ? (uint32_t)cd_size : (uint32_t)U32_MAX);
    trove__put_le32(buf + k + 16, cd_at < U32_MAX ? (uint32_t)cd_at : (uint32_t)U32_MAX);
    trove__put_le16(buf + k + 20, 0);
    k += 22;
    if (rc == TROVE_OK)
        rc = put(w, buf, k);
    w->err = rc != TROVE_OK ? rc : TROVE_ERR_INVALID; /* finished either way */
    if (rc != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "writing the bundle's directory: %s", trove_strerror(rc));
    return TROVE_OK;
}

uint64_t trove_bundle_writer_bytes(const struct trove_bundle_writer *w)
{
    return w ? w->at : 0;
}
