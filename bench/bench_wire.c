/*
 * bench_wire.c: `trove bench wire` — the seed's wire table (seeds/001), measured in one run
 * on one set of events: bytes per event, encode and decode microseconds per batch for
 *
 *   raw, packed, packed_deflate,  trove_wire_encode/decode (bytes include 16-byte headers)
 *   columnar, columnar_deflate
 *   protobuf_varint               a protobuf layout written here: each event an embedded
 *                                 message (tag 0x0a + length) of 8 varint fields, each with
 *                                 its tag byte, all fields always present, no delta
 *   zlib6_message                 zlib level 6, a fresh raw deflate per batch (what a
 *                                 WebSocket's permessage-deflate without context takeover does)
 *   zlib6_stream                  zlib level 6, one stream for the whole run, Z_SYNC_FLUSH
 *                                 after each batch, one inflate stream (what `ssh -C` does)
 *   zstd1, zstd3, zstd19          ZSTD_compressCCtx per batch, contexts reused
 *   lz4                           LZ4_compress_default per batch
 *   xz9                           liblzma preset 9 (xz -9), an .xz stream per batch without
 *                                 a check; the dictionary is capped at the batch's size,
 *                                 which changes no compressed byte, only the memory it takes
 *   xz9_stream                    the same over all the raw records as one stream: the size
 *                                 the columnar format's target is set against
 *   brotli11                      BrotliEncoderCompress quality 11, window 22, per batch
 *
 * The compressors see the raw 32-byte records, since that is what they would carry; their
 * byte counts are the compressed bytes only (a WebSocket or ssh frame adds a few more).
 *
 * Method. Events are split into batches of --batch. A pass runs one format over every
 * batch, encoding or decoding; its time over the batch count is its per-batch mean, and the
 * table shows the median of those means over R passes. Each format first runs a warm-up
 * encode and decode pass (sizing the output, faulting pages in); then, in each round, one
 * timed encode pass and one timed decode pass of what it just encoded. Every decode pass
 * writes into a buffer poisoned beforehand and is compared with the input
 * (memcmp); a mismatch names the format and fails the run. Contexts and output buffers are
 * allocated before any timing; every format reads the same input array. Times come from
 * clock_gettime(CLOCK_MONOTONIC). The formats take turns (see run_all) so that noise on a
 * shared machine falls on all of them alike. Without --repeat, each format runs at least 3
 * and at most 25 timed rounds, stopping once they have taken 0.3 s; a format whose warm-up
 * pass alone took longer than that (brotli 11, xz -9 and zstd -19 over a big input: seconds
 * a pass) is timed by that pass, which has nothing left to warm. The table shows the pass
 * counts.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "bench.h"
#include "cli.h"

#include "bench_peers.h" /* lz4, xz and brotli: with -DTROVE_BENCH_PEERS=ON only */
#if TROVE_BENCH_PEERS
#define PEER(fn) fn
#else
#define PEER(fn) NULL
#endif

#define MIN_PASSES 3
#define MAX_PASSES 25
#define PASS_BUDGET_S 0.3 /* per format, encode + decode */
#define PB_EVENT_MAX 51 /* 2 (tag, length) + 8 tags + 10 + 10 + 5 + 5 + 2 + 2 + 2 + 5 */

struct bench {
    const struct trove_event *ev; /* the input, n events */
    size_t n, batch, nb;
    struct trove_event *dec;      /* decode output, n events */
    struct trove_bytes out;       /* one format's encoded batches, back to back */
    size_t *off;                  /* batch k is out.ptr[off[k] .. off[k + 1]) */
    struct trove_wire_encoder *wenc;
    struct trove_wire_decoder *wdec;
    z_stream zmsg_c, zmsg_d, zstr_c, zstr_d;
    int zmsg_c_ok, zmsg_d_ok, zstr_c_ok, zstr_d_ok;
    ZSTD_CCtx *zc;
    ZSTD_DCtx *zd;
    struct trove_bytes scratch;   /* columnar_zstd1: one frame before or after zstd */
    char err[512];                /* why a pass failed */
};

static size_t batch_first(const struct bench *b, size_t k) { return k * b->batch; }

static size_t batch_len(const struct bench *b, size_t k)
{
    size_t first = k * b->batch;
    return b->n - first < b->batch ? b->n - first : b->batch;
}

static int fail(struct bench *b, const char *fmt, size_t k, const char *why)
{
    snprintf(b->err, sizeof b->err, "%s: batch %zu: %.400s", fmt, k, why);
    return -1;
}

/* ---- trove formats ---------------------------------------------------------------------- */

static int enc_trove(struct bench *b, int format)
{
    b->out.len = 0;
    for (size_t k = 0; k < b->nb; k++) {
        int rc;
        b->off[k] = b->out.len;
        rc = trove_wire_encode(b->wenc, format, b->ev + batch_first(b, k), batch_len(b, k), &b->out);
        if (rc != TROVE_OK)
            return fail(b, trove_wire_format_name(format), k, trove_strerror(rc));
    }
    b->off[b->nb] = b->out.len;
    return 0;
}

static int dec_trove(struct bench *b, int format)
{
    for (size_t k = 0; k < b->nb; k++) {
        struct trove_wire_frame fr;
        struct trove_diag diag = {0};
        size_t len = b->off[k + 1] - b->off[k], n = batch_len(b, k);
        int rc = trove_wire_decode(b->wdec, b->out.ptr + b->off[k], len, b->dec + batch_first(b, k),
                                   n, NULL, &fr, &diag);
        if (rc != TROVE_OK)
            return fail(b, trove_wire_format_name(format), k, diag.msg[0] ? diag.msg : trove_strerror(rc));
        if (fr.format != (format & 0xff) || fr.n_events != n || fr.frame_len != len)
            return fail(b, trove_wire_format_name(format), k, "frame decoded to the wrong size");
    }
    return 0;
}

static int enc_raw(struct bench *b) { return enc_trove(b, TROVE_WIRE_RAW); }
static int dec_raw(struct bench *b) { return dec_trove(b, TROVE_WIRE_RAW); }
static int enc_packed(struct bench *b) { return enc_trove(b, TROVE_WIRE_PACKED); }
static int dec_packed(struct bench *b) { return dec_trove(b, TROVE_WIRE_PACKED); }
static int enc_deflate(struct bench *b) { return enc_trove(b, TROVE_WIRE_DEFLATE); }
static int dec_deflate(struct bench *b) { return dec_trove(b, TROVE_WIRE_DEFLATE); }
static int enc_columnar(struct bench *b) { return enc_trove(b, TROVE_WIRE_COLUMNAR); }
static int dec_columnar(struct bench *b) { return dec_trove(b, TROVE_WIRE_COLUMNAR); }
static int enc_model(struct bench *b) { return enc_trove(b, TROVE_WIRE_MODEL); }
static int dec_model(struct bench *b) { return dec_trove(b, TROVE_WIRE_MODEL); }
static int enc_columnar_deflate(struct bench *b) { return enc_trove(b, TROVE_WIRE_COLUMNAR_DEFLATE); }
static int dec_columnar_deflate(struct bench *b) { return dec_trove(b, TROVE_WIRE_COLUMNAR_DEFLATE); }

/*
 * columnar_zstd1: not a wire format, a measured alternative to the deflate stage — the
 * format 5 frame's 16-byte header, then its payload through zstd level 1 (whose entropy
 * coders are faster to decode than inflate). Decoding undoes the zstd into a scratch frame
 * and decodes that, so both steps are timed.
 */
static int enc_columnar_zstd1(struct bench *b)
{
    size_t pos = 0;
    for (size_t k = 0; k < b->nb; k++) {
        size_t r, pl;
        int rc;
        b->scratch.len = 0;
        rc = trove_wire_encode(b->wenc, TROVE_WIRE_COLUMNAR, b->ev + batch_first(b, k),
                               batch_len(b, k), &b->scratch);
        if (rc != TROVE_OK)
            return fail(b, "columnar_zstd1", k, trove_strerror(rc));
        b->off[k] = pos;
        pl = b->scratch.len - TROVE_WIRE_HEADER_SIZE;
        if (b->out.cap - pos < TROVE_WIRE_HEADER_SIZE + ZSTD_compressBound(pl))
            return fail(b, "columnar_zstd1", k, "out of room");
        memcpy(b->out.ptr + pos, b->scratch.ptr, TROVE_WIRE_HEADER_SIZE);
        r = ZSTD_compressCCtx(b->zc, b->out.ptr + pos + TROVE_WIRE_HEADER_SIZE,
                              b->out.cap - pos - TROVE_WIRE_HEADER_SIZE,
                              b->scratch.ptr + TROVE_WIRE_HEADER_SIZE, pl, 1);
        if (ZSTD_isError(r))
            return fail(b, "columnar_zstd1", k, ZSTD_getErrorName(r));
        pos += TROVE_WIRE_HEADER_SIZE + r;
    }
    b->off[b->nb] = b->out.len = pos;
    return 0;
}

static int dec_columnar_zstd1(struct bench *b)
{
    for (size_t k = 0; k < b->nb; k++) {
        const uint8_t *in = b->out.ptr + b->off[k];
        size_t len = b->off[k + 1] - b->off[k], n = batch_len(b, k), r;
        struct trove_wire_frame fr;
        unsigned long long pl;
        int rc;
        if (len < TROVE_WIRE_HEADER_SIZE)
            return fail(b, "columnar_zstd1", k, "short");
        pl = ZSTD_getFrameContentSize(in + TROVE_WIRE_HEADER_SIZE, len - TROVE_WIRE_HEADER_SIZE);
        if (pl == ZSTD_CONTENTSIZE_UNKNOWN || pl == ZSTD_CONTENTSIZE_ERROR ||
            pl > TROVE_WIRE_MAX_PAYLOAD ||
            trove_bytes_reserve(&b->scratch, TROVE_WIRE_HEADER_SIZE + (size_t)pl) != TROVE_OK)
            return fail(b, "columnar_zstd1", k, "bad content size");
        memcpy(b->scratch.ptr, in, TROVE_WIRE_HEADER_SIZE);
        r = ZSTD_decompressDCtx(b->zd, b->scratch.ptr + TROVE_WIRE_HEADER_SIZE, (size_t)pl,
                                in + TROVE_WIRE_HEADER_SIZE, len - TROVE_WIRE_HEADER_SIZE);
        if (ZSTD_isError(r) || r != pl)
            return fail(b, "columnar_zstd1", k, ZSTD_isError(r) ? ZSTD_getErrorName(r) : "size");
        rc = trove_wire_decode(b->wdec, b->scratch.ptr, TROVE_WIRE_HEADER_SIZE + r,
                               b->dec + batch_first(b, k), n, NULL, &fr, NULL);
        if (rc != TROVE_OK || fr.n_events != n)
            return fail(b, "columnar_zstd1", k, rc ? trove_strerror(rc) : "wrong count");
    }
    return 0;
}

/* ---- protobuf-style varints -------------------------------------------------------------
 *
 *   message Batch { repeated Event events = 1; }
 *   message Event { uint64 start_ns = 1; uint64 dur_ns = 2; uint32 pid = 3; uint32 tid = 4;
 *                   uint32 kind = 5; uint32 depth = 6; uint32 extra = 7; uint32 name_id = 8; }
 *
 * Per event: 0x0a, the message length (one byte: at most 49), then for each field its tag
 * byte ((number << 3) | 0) and its value as a varint. Nothing is delta-coded and every
 * field is written even when zero (proto3 would skip the zeros, saving about a byte on
 * events at depth 0 and on kind and extra when they are zero). The decoder is a general
 * one: fields in any order, wire type checked, values checked against their width.
 */

static inline uint8_t *pb_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline const uint8_t *pb_get(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        uint8_t c;
        if (p >= end)
            return NULL;
        c = *p++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return p;
        }
    }
    return NULL;
}

static size_t pb_encode(const struct trove_event *ev, size_t n, uint8_t *out)
{
    uint8_t *p = out;
    for (size_t i = 0; i < n; i++) {
        const struct trove_event *e = &ev[i];
        uint8_t *q = p + 2;
        *q++ = 0x08;
        q = pb_put(q, e->start_ns);
        *q++ = 0x10;
        q = pb_put(q, e->dur_ns);
        *q++ = 0x18;
        q = pb_put(q, e->pid);
        *q++ = 0x20;
        q = pb_put(q, e->tid);
        *q++ = 0x28;
        q = pb_put(q, e->kind);
        *q++ = 0x30;
        q = pb_put(q, e->depth);
        *q++ = 0x38;
        q = pb_put(q, e->extra);
        *q++ = 0x40;
        q = pb_put(q, e->name_id);
        p[0] = 0x0a;
        p[1] = (uint8_t)(q - p - 2); /* at most 49 < 128: a one-byte varint */
        p = q;
    }
    return (size_t)(p - out);
}

static int pb_decode(const uint8_t *p, const uint8_t *end, struct trove_event *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct trove_event e;
        const uint8_t *mend;
        uint64_t mlen;

        if (p >= end || *p != 0x0a)
            return -1;
        if (!(p = pb_get(p + 1, end, &mlen)) || mlen > (uint64_t)(end - p))
            return -1;
        mend = p + mlen;
        memset(&e, 0, sizeof e);
        while (p < mend) {
            uint64_t key, v;
            if (!(p = pb_get(p, mend, &key)) || (key & 7) != 0 || !(p = pb_get(p, mend, &v)))
                return -1;
            switch (key >> 3) {
            case 1: e.start_ns = v; break;
            case 2: e.dur_ns = v; break;
            case 3: if (v > UINT32_MAX) return -1; e.pid = (uint32_t)v; break;
            case 4: if (v > UINT32_MAX) return -1; e.tid = (uint32_t)v; break;
            case 5: if (v > UINT8_MAX) return -1; e.kind = (uint8_t)v; break;
            case 6: if (v > UINT8_MAX) return -1; e.depth = (uint8_t)v; break;
            case 7: if (v > UINT8_MAX) return -1; e.extra = (uint8_t)v; break;
            case 8: if (v > UINT32_MAX) return -1; e.name_id = (uint32_t)v; break;
            default: return -1;
            }
        }
        out[i] = e;
    }
    return p == end ? 0 : -1;
}

static int enc_proto(struct bench *b)
{
    size_t pos = 0;
    for (size_t k = 0; k < b->nb; k++) {
        b->off[k] = pos;
        pos += pb_encode(b->ev + batch_first(b, k), batch_len(b, k), b->out.ptr + pos);
    }
    b->off[b->nb] = b->out.len = pos;
    return 0;
}

static int dec_proto(struct bench *b)
{
    for (size_t k = 0; k < b->nb; k++)
        if (pb_decode(b->out.ptr + b->off[k], b->out.ptr + b->off[k + 1], b->dec + batch_first(b, k),
                      batch_len(b, k)) != 0)
            return fail(b, "protobuf_varint", k, "malformed message");
    return 0;
}

/* ---- zlib level 6: per message, and one stream ------------------------------------------ */

static int enc_zmsg(struct bench *b)
{
    z_stream *z = &b->zmsg_c;
    size_t pos = 0;
    for (size_t k = 0; k < b->nb; k++) {
        b->off[k] = pos;
        if (deflateReset(z) != Z_OK)
            return fail(b, "zlib6_message", k, "deflateReset failed");
        z->next_in = (Bytef *)(uintptr_t)(b->ev + batch_first(b, k));
        z->avail_in = (uInt)(batch_len(b, k) * TROVE_EVENT_SIZE);
        z->next_out = b->out.ptr + pos;
        z->avail_out = (uInt)(b->out.cap - pos);
        if (deflate(z, Z_FINISH) != Z_STREAM_END)
            return fail(b, "zlib6_message", k, "deflate did not finish");
        pos = b->out.cap - z->avail_out;
    }
    b->off[b->nb] = b->out.len = pos;
    return 0;
}

static int dec_zmsg(struct bench *b)
{
    z_stream *z = &b->zmsg_d;
    for (size_t k = 0; k < b->nb; k++) {
        size_t want = batch_len(b, k) * TROVE_EVENT_SIZE;
        if (inflateReset(z) != Z_OK)
            return fail(b, "zlib6_message", k, "inflateReset failed");
        z->next_in = b->out.ptr + b->off[k];
        z->avail_in = (uInt)(b->off[k + 1] - b->off[k]);
        z->next_out = (Bytef *)(b->dec + batch_first(b, k));
        z->avail_out = (uInt)want;
        if (inflate(z, Z_FINISH) != Z_STREAM_END || z->avail_out != 0 || z->avail_in != 0)
            return fail(b, "zlib6_message", k, "inflate failed or gave the wrong size");
    }
    return 0;
}

static int enc_zstream(struct bench *b)
{
    z_stream *z = &b->zstr_c;
    size_t pos = 0;
    if (deflateReset(z) != Z_OK) /* a new connection per pass */
        return fail(b, "zlib6_stream", 0, "deflateReset failed");
    for (size_t k = 0; k < b->nb; k++) {
        b->off[k] = pos;
        z->next_in = (Bytef *)(uintptr_t)(b->ev + batch_first(b, k));
        z->avail_in = (uInt)(batch_len(b, k) * TROVE_EVENT_SIZE);
        z->next_out = b->out.ptr + pos;
        z->avail_out = (uInt)(b->out.cap - pos);
        if (deflate(z, Z_SYNC_FLUSH) != Z_OK || z->avail_in != 0 || z->avail_out == 0)
            return fail(b, "zlib6_stream", k, "deflate failed or ran out of room");
        pos = b->out.cap - z->avail_out;
    }
    b->off[b->nb] = b->out.len = pos;
    return 0;
}

static int dec_zstream(struct bench *b)
{
    z_stream *z = &b->zstr_d;
    if (inflateReset(z) != Z_OK)
        return fail(b, "zlib6_stream", 0, "inflateReset failed");
    for (size_t k = 0; k < b->nb; k++) {
        int rc;
        z->next_in = b->out.ptr + b->off[k];
        z->avail_in = (uInt)(b->off[k + 1] - b->off[k]);
        z->next_out = (Bytef *)(b->dec + batch_first(b, k));
        z->avail_out = (uInt)(batch_len(b, k) * TROVE_EVENT_SIZE);
        rc = inflate(z, Z_SYNC_FLUSH);
        if ((rc != Z_OK && rc != Z_BUF_ERROR) || z->avail_out != 0 || z->avail_in != 0)
            return fail(b, "zlib6_stream", k, "inflate failed or gave the wrong size");
    }
    return 0;
}

/* ---- zstd ------------------------------------------------------------------------------- */

static int enc_zstd(struct bench *b, int level, const char *name)
{
    size_t pos = 0;
    for (size_t k = 0; k < b->nb; k++) {
        size_t r;
        b->off[k] = pos;
        r = ZSTD_compressCCtx(b->zc, b->out.ptr + pos, b->out.cap - pos, b->ev + batch_first(b, k),
                              batch_len(b, k) * TROVE_EVENT_SIZE, level);
        if (ZSTD_isError(r))
            return fail(b, name, k, ZSTD_getErrorName(r));
        pos += r;
    }
    b->off[b->nb] = b->out.len = pos;
    return 0;
}

static int dec_zstd(struct bench *b, const char *name)
{
    for (size_t k = 0; k < b->nb; k++) {
        size_t want = batch_len(b, k) * TROVE_EVENT_SIZE;
        size_t r = ZSTD_decompressDCtx(b->zd, b->dec + batch_first(b, k), want, b->out.ptr + b->off[k],
                                       b->off[k + 1] - b->off[k]);
        if (ZSTD_isError(r) || r != want)
            return fail(b, name, k, ZSTD_isError(r) ? ZSTD_getErrorName(r) : "wrong size");
    }
    return 0;
}

/* zstd -19 --long over all the records as one stream (off[1..nb] = its end), as
 * xz9_stream: the strongest general-purpose compressor a user would reach for. */
#define ZSTD_LONG_WINDOW_LOG 27
static int enc_zstd19_long(struct bench *b)
{
    size_t r;
    ZSTD_CCtx_reset(b->zc, ZSTD_reset_session_and_parameters);
    if (ZSTD_isError(ZSTD_CCtx_setParameter(b->zc, ZSTD_c_compressionLevel, 19)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(b->zc, ZSTD_c_enableLongDistanceMatching, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(b->zc, ZSTD_c_windowLog, ZSTD_LONG_WINDOW_LOG)))
        return fail(b, "zstd19_long_stream", 0, "ZSTD_CCtx_setParameter failed");
    r = ZSTD_compress2(b->zc, b->out.ptr, b->out.cap, b->ev, b->n * TROVE_EVENT_SIZE);
    ZSTD_CCtx_reset(b->zc, ZSTD_reset_session_and_parameters);
    if (ZSTD_isError(r))
        return fail(b, "zstd19_long_stream", 0, ZSTD_getErrorName(r));
    b->off[0] = 0;
    for (size_t k = 1; k <= b->nb; k++)
        b->off[k] = r;
    b->out.len = r;
    return 0;
}

static int dec_zstd19_long(struct bench *b)
{
    size_t want = b->n * TROVE_EVENT_SIZE, r;
    if (ZSTD_isError(ZSTD_DCtx_setParameter(b->zd, ZSTD_d_windowLogMax, ZSTD_LONG_WINDOW_LOG)))
        return fail(b, "zstd19_long_stream", 0, "ZSTD_DCtx_setParameter failed");
    r = ZSTD_decompressDCtx(b->zd, b->dec, want, b->out.ptr, b->out.len);
    if (ZSTD_isError(r) || r != want)
        return fail(b, "zstd19_long_stream", 0, ZSTD_isError(r) ? ZSTD_getErrorName(r) : "wrong size");
    return 0;
}

static int enc_zstd1(struct bench *b) { return enc_zstd(b, 1, "zstd1"); }
static int dec_zstd1(struct bench *b) { return dec_zstd(b, "zstd1"); }
static int enc_zstd3(struct bench *b) { return enc_zstd(b, 3, "zstd3"); }
static int dec_zstd3(struct bench *b) { return dec_zstd(b, "zstd3"); }
static int enc_zstd19(struct bench *b) { return enc_zstd(b, 19, "zstd19"); }
static int dec_zstd19(struct bench *b) { return dec_zstd(b, "zstd19"); }

/* ---- xz -9, brotli and lz4 (the peers of a -DTROVE_BENCH_PEERS=ON build) ----------------- */

#if TROVE_BENCH_PEERS

/* xz -9 (extreme: xz -9e) of in[0..len) at out[*pos..cap): an .xz stream without a check. */
static int xz_encode(const uint8_t *in, size_t len, uint8_t *out, size_t *pos, size_t cap,
                     int extreme)
{
    lzma_options_lzma opt;
    lzma_filter filters[2];
    if (lzma_lzma_preset(&opt, 9 | (extreme ? LZMA_PRESET_EXTREME : 0)))
        return -1;
    /* A dictionary larger than the input finds nothing more; cap it to save the memory. */
    if (opt.dict_size > len)
        opt.dict_size = len < LZMA_DICT_SIZE_MIN ? LZMA_DICT_SIZE_MIN : (uint32_t)len;
    filters[0].id = LZMA_FILTER_LZMA2;
    filters[0].options = &opt;
    filters[1].id = LZMA_VLI_UNKNOWN;
    filters[1].options = NULL;
    return lzma_stream_buffer_encode(filters, LZMA_CHECK_NONE, NULL, in, len, out, pos, cap) ==
                   LZMA_OK
               ? 0
               : -1;
}

static int xz_decode(const uint8_t *in, size_t len, uint8_t *out, size_t want)
{
    uint64_t memlimit = UINT64_MAX;
    size_t in_pos = 0, out_pos = 0;
    return lzma_stream_buffer_decode(&memlimit, 0, NULL, in, &in_pos, len, out, &out_pos, want) ==
                       LZMA_OK &&
                   in_pos == len && out_pos == want
               ? 0
               : -1;
}

static int enc_xz9(struct bench *b)
{
    size_t pos = 0;
    for (size_t k = 0; k < b->nb; k++) {
        b->off[k] = pos;
        if (xz_encode((const uint8_t *)(b->ev + batch_first(b, k)), batch_len(b, k) * TROVE_EVENT_SIZE,
                      b->out.ptr, &pos, b->out.cap, 0) != 0)
            return fail(b, "xz9", k, "lzma_stream_buffer_encode failed");
    }
    b->off[b->nb] = b->out.len = pos;
    return 0;
}

static int dec_xz9(struct bench *b)
{
    for (size_t k = 0; k < b->nb; k++)
        if (xz_decode(b->out.ptr + b->off[k], b->off[k + 1] - b->off[k],
                      (uint8_t *)(b->dec + batch_first(b, k)), batch_len(b, k) * TROVE_EVENT_SIZE) != 0)
            return fail(b, "xz9", k, "lzma_stream_buffer_decode failed or gave the wrong size");
    return 0;
}

/* All the records as one stream: one "batch" for the whole input (off[1..nb] = its end). */
static int xz_stream(struct bench *b, int extreme, const char *name)
{
    size_t pos = 0;
    if (xz_encode((const uint8_t *)b->ev, b->n * TROVE_EVENT_SIZE, b->out.ptr, &pos, b->out.cap,
                  extreme) != 0)
        return fail(b, name, 0, "lzma_stream_buffer_encode failed");
    b->off[0] = 0;
    for (size_t k = 1; k <= b->nb; k++)
        b->off[k] = pos;
    b->out.len = pos;
    return 0;
}

static int dec_xz_stream(struct bench *b, const char *name)
{
    if (xz_decode(b->out.ptr, b->out.len, (uint8_t *)b->dec, b->n * TROVE_EVENT_SIZE) != 0)
        return fail(b, name, 0, "lzma_stream_buffer_decode failed or gave the wrong size");
    return 0;
}

static int enc_xz9_stream(struct bench *b) { return xz_stream(b, 0, "xz9_stream"); }
static int dec_xz9_stream(struct bench *b) { return dec_xz_stream(b, "xz9_stream"); }
static int enc_xz9e_stream(struct bench *b) { return xz_stream(b, 1, "xz9e_stream"); }
static int dec_xz9e_stream(struct bench *b) { return dec_xz_stream(b, "xz9e_stream"); }

static int enc_brotli(struct bench *b)
{
    size_t pos = 0;
    for (size_t k = 0; k < b->nb; k++) {
        size_t room = b->out.cap - pos;
        b->off[k] = pos;
        if (!BrotliEncoderCompress(11, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC,
                                   batch_len(b, k) * TROVE_EVENT_SIZE,
                                   (const uint8_t *)(b->ev + batch_first(b, k)), &room,
                                   b->out.ptr + pos))
            return fail(b, "brotli11", k, "BrotliEncoderCompress failed");
        pos += room;
    }
    b->off[b->nb] = b->out.len = pos;
    return 0;
}

static int dec_brotli(struct bench *b)
{
    for (size_t k = 0; k < b->nb; k++) {
        size_t want = batch_len(b, k) * TROVE_EVENT_SIZE, got = want;
        if (BrotliDecoderDecompress(b->off[k + 1] - b->off[k], b->out.ptr + b->off[k], &got,
                                    (uint8_t *)(b->dec + batch_first(b, k))) != BROTLI_DECODER_RESULT_SUCCESS ||
            got != want)
            return fail(b, "brotli11", k, "BrotliDecoderDecompress failed or gave the wrong size");
    }
    return 0;
}

static int enc_lz4(struct bench *b)
{
    size_t pos = 0;
    for (size_t k = 0; k < b->nb; k++) {
        size_t room = b->out.cap - pos;
        int r;
        b->off[k] = pos;
        r = LZ4_compress_default((const char *)(b->ev + batch_first(b, k)), (char *)b->out.ptr + pos,
                                 (int)(batch_len(b, k) * TROVE_EVENT_SIZE),
                                 room > INT32_MAX ? INT32_MAX : (int)room);
        if (r <= 0)
            return fail(b, "lz4", k, "LZ4_compress_default failed");
        pos += (size_t)r;
    }
    b->off[b->nb] = b->out.len = pos;
    return 0;
}

static int dec_lz4(struct bench *b)
{
    for (size_t k = 0; k < b->nb; k++) {
        int want = (int)(batch_len(b, k) * TROVE_EVENT_SIZE);
        int r = LZ4_decompress_safe((const char *)b->out.ptr + b->off[k], (char *)(b->dec + batch_first(b, k)),
                                    (int)(b->off[k + 1] - b->off[k]), want);
        if (r != want)
            return fail(b, "lz4", k, "LZ4_decompress_safe failed or gave the wrong size");
    }
    return 0;
}
#endif

/* ---- the table -------------------------------------------------------------------------- */

enum { F_RAW, F_PACKED, F_DEFLATE, F_COLUMNAR, F_COLUMNAR_DEFLATE, F_COLUMNAR_ZSTD1, F_MODEL, F_PROTO, F_ZMSG, F_ZSTREAM, F_ZSTD1, F_ZSTD3,
       F_ZSTD19, F_ZSTD19_LONG, F_LZ4, F_XZ9, F_XZ9_STREAM, F_XZ9E_STREAM, F_BROTLI, F_COUNT };

static const struct format {
    const char *key;
    const char *what;
    int (*enc)(struct bench *);
    int (*dec)(struct bench *);
} formats[F_COUNT] = {
    {"raw", "the 32-byte record; decode is a memcpy", enc_raw, dec_raw},
    {"packed", "delta, zigzag, varints, thread table", enc_packed, dec_packed},
    {"packed_deflate", "packed + libdeflate level 1", enc_deflate, dec_deflate},
    {"columnar", "format 5: per-block bitpack/dict/RLE columns", enc_columnar, dec_columnar},
    {"columnar_deflate", "format 5 + libdeflate level 1", enc_columnar_deflate, dec_columnar_deflate},
    {"columnar_zstd1", "format 5 + zstd 1: a measured alternative", enc_columnar_zstd1,
     dec_columnar_zstd1},
    {"model", "format 8: tracks' structure, residual streams via zstd", enc_model, dec_model},
    {"protobuf_varint", "tag + varint per field, no delta", enc_proto, dec_proto},
    {"zlib6_message", "permessage-deflate, raw records", enc_zmsg, dec_zmsg},
    {"zlib6_stream", "ssh -C: one stream, sync flush", enc_zstream, dec_zstream},
    {"zstd1", "ZSTD_compressCCtx level 1", enc_zstd1, dec_zstd1},
    {"zstd3", "ZSTD_compressCCtx level 3", enc_zstd3, dec_zstd3},
    {"zstd19", "ZSTD_compressCCtx level 19", enc_zstd19, dec_zstd19},
    {"zstd19_long_stream", "zstd -19 --long over all records as one stream", enc_zstd19_long,
     dec_zstd19_long},
    {"lz4", "LZ4_compress_default", PEER(enc_lz4), PEER(dec_lz4)},
    {"xz9", "liblzma preset 9 (xz -9), per batch", PEER(enc_xz9), PEER(dec_xz9)},
    {"xz9_stream", "xz -9 over all records as one stream", PEER(enc_xz9_stream),
     PEER(dec_xz9_stream)},
    {"xz9e_stream", "xz -9e over all records as one stream", PEER(enc_xz9e_stream),
     PEER(dec_xz9e_stream)},
    {"brotli11", "BrotliEncoderCompress quality 11", PEER(enc_brotli), PEER(dec_brotli)},
};

/* What a build without the peers says in their place. */
#define NO_PEERS_LINE                                                                          \
    "lz4, xz -9 (per batch and as one stream), xz -9e and brotli 11 are not in this build:\n" \
    "configure with -DTROVE_BENCH_PEERS=ON (`make bench` and `make demo` do) to measure them.\n"

struct result {
    uint64_t bytes;
    double enc_us, dec_us; /* medians of per-batch means */
    unsigned enc_passes, dec_passes;
};

/* Should another timed pass run? Fixed --repeat, or the time budget. */
static int more(unsigned done, unsigned repeat, double spent)
{
    if (repeat)
        return done < repeat;
    return done < MIN_PASSES || (done < MAX_PASSES && spent < PASS_BUDGET_S);
}

static int verify(struct bench *b, const char *key)
{
    if (memcmp(b->dec, b->ev, b->n * sizeof *b->ev) != 0) {
        size_t i = 0;
        while (i < b->n && memcmp(&b->dec[i], &b->ev[i], sizeof *b->ev) == 0)
            i++;
        snprintf(b->err, sizeof b->err, "%s: decoded events differ from the input (first at event %zu)",
                 key, i);
        return -1;
    }
    return 0;
}

/*
 * One pass of format f over every batch, encode (dir 0) or decode (dir 1); *us_out gets the
 * per-batch mean in microseconds. An encode pass records its size in *bytes if that is
 * still UINT64_MAX (the warm-up) and must reproduce it otherwise; a decode pass (bytes may
 * be NULL) writes into a poisoned buffer and is compared with the input. Only the format's
 * own calls are inside the timed interval.
 */
static int one_pass(struct bench *b, int f, int dir, uint64_t *bytes, double *us_out)
{
    const struct format *fm = &formats[f];
    double t0, t1;
    if (dir == 0) {
        assert(bytes);
        t0 = bench_now();
        if (fm->enc(b) != 0)
            return -1;
        t1 = bench_now();
        if (*bytes == UINT64_MAX) {
            *bytes = b->out.len;
        } else if (b->out.len != *bytes) {
            snprintf(b->err, sizeof b->err, "%s: encoding is not deterministic", fm->key);
            return -1;
        }
    } else {
        memset(b->dec, 0xa5, b->n * sizeof *b->dec); /* a decoder that skips writes fails */
        t0 = bench_now();
        if (fm->dec(b) != 0)
            return -1;
        t1 = bench_now();
        if (verify(b, fm->key) != 0)
            return -1;
    }
    *us_out = (t1 - t0) * 1e6 / (double)b->nb;
    return 0;
}

/*
 * Time every format. A round runs, for each format that still needs passes, one encode pass
 * and then one decode pass of what it just encoded; rounds repeat until every format has its
 * passes. Interleaving the formats this way spreads a burst of noise on a shared machine
 * over all of them instead of loading it onto one, which keeps the ratios honest. Round 0
 * is the warm-up and is not timed into the medians.
 */
static int run_all(struct bench *b, unsigned repeat, double *enc_t, double *dec_t, unsigned stride,
                   struct result *res)
{
    double spent[F_COUNT] = {0};
    int done[F_COUNT] = {0}, left = F_COUNT;
    struct cli_progress prog;
    uint64_t progress = 0;

    cli_progress_begin(&prog, "bench wire", 0);
    for (int f = 0; f < F_COUNT; f++) {
        double e, d;
        if (!formats[f].enc) { /* a peer this build does not link */
            done[f] = 1;
            left--;
            continue;
        }
        res[f].bytes = UINT64_MAX;
        if (one_pass(b, f, 0, &res[f].bytes, &e) != 0 || one_pass(b, f, 1, NULL, &d) != 0)
            goto fail;
        /* A format whose one pass outlasts the whole budget (xz -9, brotli 11 over a big
         * input) has nothing left to warm: that pass is its measurement. */
        if (!repeat && (e + d) * (double)b->nb * 1e-6 > PASS_BUDGET_S) {
            enc_t[f * stride] = e;
            dec_t[f * stride] = d;
            res[f].enc_passes = res[f].dec_passes = 1;
            done[f] = 1;
            left--;
        }
        cli_progress_update(&prog, ++progress);
    }
    while (left > 0) {
        for (int f = 0; f < F_COUNT; f++) {
            unsigned r = res[f].enc_passes;
            if (done[f])
                continue;
            if (one_pass(b, f, 0, &res[f].bytes, &enc_t[f * stride + r]) != 0 ||
                one_pass(b, f, 1, NULL, &dec_t[f * stride + r]) != 0)
                goto fail;
            spent[f] += (enc_t[f * stride + r] + dec_t[f * stride + r]) * (double)b->nb * 1e-6;
            res[f].enc_passes = res[f].dec_passes = r + 1;
            if (!more(r + 1, repeat, spent[f])) {
                done[f] = 1;
                left--;
            }
            cli_progress_update(&prog, ++progress);
        }
    }
    cli_progress_end(&prog);
    for (int f = 0; f < F_COUNT; f++) {
        if (!formats[f].enc)
            continue;
        res[f].enc_us = bench_median(enc_t + f * stride, res[f].enc_passes);
        res[f].dec_us = bench_median(dec_t + f * stride, res[f].dec_passes);
    }
    return 0;
fail:
    cli_progress_end(&prog);
    return -1;
}

/* Output room for any format: the largest per-batch bound of them all. */
static size_t out_capacity(const struct bench *b)
{
    size_t cap = 0;
    for (size_t k = 0; k < b->nb; k++) {
        size_t n = batch_len(b, k), raw = n * TROVE_EVENT_SIZE, m = raw + TROVE_WIRE_HEADER_SIZE;
        size_t c[] = {TROVE_WIRE_HEADER_SIZE + trove_wire_packed_bound(n) + 1024,
                      TROVE_WIRE_HEADER_SIZE + 25 + 90 * n + 77 * (n / 1024 + 1),
                      (size_t)compressBound((uLong)raw) + 64, ZSTD_compressBound(raw),
#if TROVE_BENCH_PEERS
                      lzma_stream_buffer_bound(raw), BrotliEncoderMaxCompressedSize(raw) + 64,
                      (size_t)LZ4_compressBound((int)raw),
#endif
                      n * PB_EVENT_MAX};
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
            if (c[i] > m)
                m = c[i];
        cap += m;
    }
    return cap;
}

static int setup(struct bench *b)
{
    if (!(b->dec = malloc(b->n * sizeof *b->dec)) || !(b->off = malloc((b->nb + 1) * sizeof *b->off)) ||
        trove_bytes_reserve(&b->out, out_capacity(b)) != TROVE_OK ||
        trove_wire_encoder_new(&b->wenc) != TROVE_OK || trove_wire_decoder_new(&b->wdec) != TROVE_OK ||
        !(b->zc = ZSTD_createCCtx()) || !(b->zd = ZSTD_createDCtx()))
        return -1;
    memset(b->out.ptr, 0, b->out.cap); /* fault the pages in before timing */
    if (deflateInit2(&b->zmsg_c, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    b->zmsg_c_ok = 1;
    if (inflateInit2(&b->zmsg_d, -15) != Z_OK)
        return -1;
    b->zmsg_d_ok = 1;
    if (deflateInit(&b->zstr_c, 6) != Z_OK)
        return -1;
    b->zstr_c_ok = 1;
    if (inflateInit(&b->zstr_d) != Z_OK)
        return -1;
    b->zstr_d_ok = 1;
    return 0;
}

static void teardown(struct bench *b)
{
    free(b->dec);
    free(b->off);
    trove_bytes_free(&b->out);
    trove_bytes_free(&b->scratch);
    trove_wire_encoder_free(b->wenc);
    trove_wire_decoder_free(b->wdec);
    if (b->zmsg_c_ok)
        deflateEnd(&b->zmsg_c);
    if (b->zmsg_d_ok)
        inflateEnd(&b->zmsg_d);
    if (b->zstr_c_ok)
        deflateEnd(&b->zstr_c);
    if (b->zstr_d_ok)
        inflateEnd(&b->zstr_d);
    ZSTD_freeCCtx(b->zc);
    ZSTD_freeDCtx(b->zd);
}

static void print_json(const struct bench *b, const struct result *res)
{
    int first = 1;
    printf("{\"events\":%zu,\"batches\":%zu,\"peers\":%s,\"formats\":{", b->n, b->nb,
           TROVE_BENCH_PEERS ? "true" : "false");
    for (int f = 0; f < F_COUNT; f++) {
        if (!formats[f].enc)
            continue;
        printf("%s\"%s\":{\"bytes_per_event\":%.4f,\"encode_us\":%.3f,\"decode_us\":%.3f}",
               first ? "" : ",", formats[f].key, (double)res[f].bytes / (double)b->n,
               res[f].enc_us, res[f].dec_us);
        first = 0;
    }
    printf("}}\n");
}

static void print_table(const struct bench *b, const struct result *res, const char *source,
                        unsigned repeat)
{
    const struct result *raw = &res[F_RAW], *zs = &res[F_ZSTREAM], *zm = &res[F_ZMSG], *lz = &res[F_LZ4];
    double zm_cpu = zm->enc_us + zm->dec_us;
    int peers = formats[F_LZ4].enc != NULL; /* the "vs lz4" column and the peers' lines */

    printf("trove bench wire: %zu events from %s, %zu batches of up to %zu\n", b->n, source, b->nb,
           b->batch);
    if (repeat)
        printf("medians of %u timed passes per format and direction, after a warm-up pass\n", repeat);
    else
        printf("medians of timed passes per format and direction (passes: encode/decode; --repeat "
               "sets them)\n");
    /* Two header lines, so that every column is named in words and stays narrow. */
    printf("\n%-18s %10s %10s %13s %11s %11s %14s %8s", "", "bytes", "size vs", "size vs",
           "encode us", "decode us", "enc+dec vs", "decode");
    if (peers)
        printf(" %8s", "decode");
    printf(" %9s\n", "passes");
    printf("%-18s %10s %10s %13s %11s %11s %14s %8s", "format", "per event", "raw",
           "zlib6_stream", "per batch", "per batch", "zlib6_message", "vs raw");
    if (peers)
        printf(" %8s", "vs lz4");
    printf(" %9s   %s\n", "enc/dec", "what it is");
    for (int f = 0; f < F_COUNT; f++) {
        const struct result *r = &res[f];
        char passes[32];
        if (!formats[f].enc)
            continue;
        snprintf(passes, sizeof passes, "%u/%u", r->enc_passes, r->dec_passes);
        printf("%-18s %10.2f %10.3f %13.3f %11.1f %11.1f %14.3f %8.2f", formats[f].key,
               (double)r->bytes / (double)b->n, (double)r->bytes / (double)raw->bytes,
               (double)r->bytes / (double)zs->bytes, r->enc_us, r->dec_us,
               zm_cpu > 0 ? (r->enc_us + r->dec_us) / zm_cpu : 0.0,
               raw->dec_us > 0 ? r->dec_us / raw->dec_us : 0.0);
        if (peers)
            printf(" %8.2f", lz->dec_us > 0 ? r->dec_us / lz->dec_us : 0.0);
        printf(" %9s   %s\n", passes, formats[f].what);
    }
    printf("\nus: microseconds per batch. A \"vs\" column is this format's number divided by "
           "the named\n"
           "one's (below 1: smaller or faster): size against raw and zlib6_stream, encode + decode\n"
           "time against zlib6_message, decode time against raw's (a memcpy)%s. trove's\n"
           "formats count their 16-byte frame headers; the compressors on raw records count only\n"
           "their compressed bytes.\n",
           peers ? " and lz4's" : "");
    printf("\npacked: %.2fx smaller than raw, %.2fx smaller than protobuf_varint; encode+decode "
           "%.3fx of zlib6_message's",
           (double)raw->bytes / (double)res[F_PACKED].bytes,
           (double)res[F_PROTO].bytes / (double)res[F_PACKED].bytes,
           zm_cpu > 0 ? (res[F_PACKED].enc_us + res[F_PACKED].dec_us) / zm_cpu : 0.0);
    if (peers)
        printf("; decode %.2fx of lz4's", lz->dec_us > 0 ? res[F_PACKED].dec_us / lz->dec_us : 0.0);
    printf("\n");
    for (int f = F_COLUMNAR; f <= F_COLUMNAR_ZSTD1; f++) { /* against the targets */
        const struct result *c = &res[f];
        printf("%s: size %.3fx of packed_deflate's", formats[f].key,
               (double)c->bytes / (double)res[F_DEFLATE].bytes);
        if (peers)
            printf(", %.3fx of xz9's, %.3fx of xz9_stream's; decode %.2fx lz4's speed, encode "
                   "%.2fx lz4's speed",
                   (double)c->bytes / (double)res[F_XZ9].bytes,
                   (double)c->bytes / (double)res[F_XZ9_STREAM].bytes,
                   c->dec_us > 0 ? lz->dec_us / c->dec_us : 0.0,
                   c->enc_us > 0 ? lz->enc_us / c->enc_us : 0.0);
        printf("\n");
    }
    if (!peers)
        printf("\n" NO_PEERS_LINE);
}

static void wire_usage(FILE *f)
{
    fprintf(f,
            "usage: trove bench wire [--input IN [--input-format F]] [--events N] [--common]\n"
            "                        [--batch N] [--repeat R] [--seed S] [--json]\n"
            "\n"
            "Measure the wire formats (raw, packed, packed+deflate, columnar, columnar+deflate;\n"
            "and columnar's payload through zstd 1, a measured alternative to its deflate)\n"
            "against a protobuf-style varint layout, zlib level 6 per message (WebSocket\n"
            "permessage-deflate) and over one stream (ssh -C), zstd 1, 3 and 19, zstd -19\n"
            "--long over all the records as one stream, lz4, xz -9 (per batch, and over all\n"
            "the records as one stream), xz -9e as one stream and brotli 11 on the raw\n"
            "records, all on the same batches: bytes per event and encode and decode\n"
            "microseconds per batch, medians of repeated passes. Every decode is compared\n"
            "with the input; a mismatch fails the run.\n"
            "  --input IN          events from any input `trove cat` reads ('-': stdin);\n"
            "                      without it, `trove gen` data (docs/gen.md)\n"
            "  --input-format F    auto (default), chrome-json, wire, bundle, parquet, dir,\n"
            "                      capture\n"
            "  --events N          gen: events to generate (default 1034313); --input: use the\n"
            "                      first N events\n"
            "  --seed S            gen: the seed (default 1)\n"            "  --common            only the content every trace tool keeps alike (Chrome X,\n"
            "                      B/E, I, b/e, C: no async instants, legacy spans, frames\n"
            "                      or locks), to compare with another tool's sizes\n"
            "  --batch N           events per batch, 1..65536 (default 2048)\n"
            "  --repeat R          timed passes per format and direction (default: 3 to 25,\n"
            "                      until 0.3 s is spent; a format whose warm-up pass takes\n"
            "                      longer than that is timed by that one pass)\n"
            "  --json              print one JSON object on stdout instead of the table\n"
            "%s",
            TROVE_BENCH_PEERS ? "" : "\n" NO_PEERS_LINE);
}

int bench_wire(int argc, char **argv)
{
    struct bench_source src;
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct bench b;
    struct result res[F_COUNT];
    char source[4200];
    uint64_t batch = TROVE_BATCH_DEFAULT, repeat = 0;
    int json = 0, status = 1, taken;
    unsigned stride;
    double *enc_t = NULL, *dec_t = NULL;

    memset(&b, 0, sizeof b);
    memset(res, 0, sizeof res);
    bench_source_init(&src);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if ((taken = bench_source_arg("bench wire", &src, argc, argv, &i)) != 0) {
            if (taken < 0)
                return 1;
        } else if (cli_is_help(a)) {
            wire_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--batch") && has_value) {
            if (cli_parse_u64(argv[++i], &batch) || batch < 1 || batch > TROVE_WIRE_MAX_EVENTS)
                return cli_error("bench wire", "--batch: '%s' is not a count in 1..65536", argv[i]);
        } else if (!strcmp(a, "--repeat") && has_value) {
            if (cli_parse_u64(argv[++i], &repeat) || repeat < 1 || repeat > 1000)
                return cli_error("bench wire", "--repeat: '%s' is not a count in 1..1000", argv[i]);
        } else if (!strcmp(a, "--batch") || !strcmp(a, "--repeat")) {
            return cli_error("bench wire", "%s needs a value; see `trove bench wire --help`", a);
        } else {
            return cli_error("bench wire", "unexpected argument '%s'; see `trove bench wire --help`", a);
        }
    }
    if (bench_peers_load("bench wire") != 0)
        return 1;
    if (trove_names_new(&names) != TROVE_OK) {
        cli_error("bench wire", "out of memory");
        goto out;
    }
    if (bench_source_load("bench wire", &src, json, &ev, names, source, sizeof source) != 0)
        goto out;
    for (size_t i = 0; i < ev.len; i++)
        if (ev.ev[i].pad != 0) {
            cli_error("bench wire", "%s: event %zu has a nonzero pad byte; not a valid record", source, i);
            goto out;
        }

    b.ev = ev.ev;
    b.n = ev.len;
    b.batch = (size_t)batch;
    b.nb = (b.n + b.batch - 1) / b.batch;
    stride = repeat ? (unsigned)repeat : MAX_PASSES;
    if (setup(&b) != 0 || !(enc_t = malloc(F_COUNT * stride * sizeof *enc_t)) ||
        !(dec_t = malloc(F_COUNT * stride * sizeof *dec_t))) {
        cli_error("bench wire", "out of memory for %zu events (or a compressor failed to start)", b.n);
        goto out;
    }
    if (run_all(&b, (unsigned)repeat, enc_t, dec_t, stride, res) != 0) {
        cli_error("bench wire", "%s", b.err);
        goto out;
    }
    if (json)
        print_json(&b, res);
    else
        print_table(&b, res, source, (unsigned)repeat);
    if (fflush(stdout) != 0) {
        cli_error("bench wire", "writing stdout: %s", strerror(errno));
        goto out;
    }
    status = 0;
out:
    free(enc_t);
    free(dec_t);
    teardown(&b);
    trove_events_free(&ev);
    trove_names_free(names);
    return status;
}
