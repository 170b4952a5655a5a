/*
 * producer.c: a producer's byte stream cut into its hello line and whole wire frames, and
 * the hello read (producer.h). The framer copies only what arrives split across reads: a
 * frame that lies whole inside one read is handed out where it is.
 */
#include "producer.h"
#include "common/fail.h"
#include "common/json.h"

#include <string.h>

#include "trove/volume.h"
#include "trove/wire.h"

/* ---- the hello ---------------------------------------------------------------------- */

/* A string member into out (cap bytes with its NUL); longer is TROVE_ERR_LIMIT. */
static int hello_string(struct trove__json *js, const char *key, char *out, size_t cap,
                        struct trove_diag *diag)
{
    struct trove__json_str v = {(uint8_t *)out, 0, cap - 1, 0};
    uint64_t at = trove__json_pos(js);
    int rc;

    if (trove__json_peek(js) != '"')
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, at, "hello: \"%s\" must be a string", key);
    if ((rc = trove__json_string(js, &v)) != TROVE_OK)
        return rc;
    if (v.over)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, at, "hello: \"%s\" is over %zu bytes", key,
                          cap - 1);
    if (memchr(out, 0, v.len))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, at, "hello: \"%s\" holds a NUL byte", key);
    out[v.len] = 0;
    return TROVE_OK;
}

int trove__hello_parse(const uint8_t *line, size_t len, struct trove__hello *out,
                       struct trove_diag *diag)
{
    uint8_t keybuf[32];
    struct trove__json_str key = {keybuf, 0, sizeof keybuf, 0};
    struct trove__json js;
    int rc, c, have_capture = 0;

    memset(out, 0, sizeof *out);
    trove__json_init_mem(&js, line, len, diag);
    js.doc = "hello";
    js.flags = TROVE_JSON_UTF8;
    if ((c = trove__json_peek(&js)) != '{')
        return c < 0 ? trove__json_eof_error(&js, "the hello")
                     : trove__json_unexpected(&js, c, "'{'", "the hello");
    trove__json_take(&js);
    if (trove__json_peek(&js) == '}') {
        trove__json_take(&js);
    } else {
        do {
            if ((rc = trove__json_key(&js, &key, "the hello")) != TROVE_OK)
                return rc;
            if (trove__json_key_is(&key, "capture")) {
                rc = hello_string(&js, "capture", out->capture, sizeof out->capture, diag);
                have_capture = 1;
            } else if (trove__json_key_is(&key, "producer")) {
                rc = hello_string(&js, "producer", out->producer, sizeof out->producer, diag);
            } else if (trove__json_key_is(&key, "token")) {
                rc = hello_string(&js, "token", out->token, sizeof out->token, diag);
            } else if (trove__json_key_is(&key, "pid")) {
                struct trove__json_num n;
                uint64_t v = 0, at = trove__json_pos(&js);
                c = trove__json_peek(&js);
                if (c != '-' && (c < '0' || c > '9'))
                    return TROVE_FAIL(diag, TROVE_ERR_INVALID, at,
                                      "hello: \"pid\" must be a number");
                if ((rc = trove__json_number(&js, &n)) != TROVE_OK)
                    return rc;
                if (!n.is_int || n.neg || trove__json_num_scaled(&n, 0, &v) != TROVE_OK ||
                    v > UINT32_MAX)
                    return TROVE_FAIL(diag, TROVE_ERR_INVALID, at,
                                      "hello: \"pid\" must be an integer from 0 to 4294967295");
                out->pid = (uint32_t)v;
            } else if (trove__json_key_is(&key, "append")) {
                uint64_t at = trove__json_pos(&js);
                int v;
                c = trove__json_peek(&js);
                if (c != 't' && c != 'f')
                    return TROVE_FAIL(diag, TROVE_ERR_INVALID, at,
                                      "hello: \"append\" must be true or false");
                if ((rc = trove__json_literal(&js, &v)) != TROVE_OK)
                    return rc;
                out->append = v == TROVE_JSON_TRUE;
            } else {
                rc = trove__json_skip(&js, 1);
            }
            if (rc != TROVE_OK)
                return rc;
        } while ((rc = trove__json_next_member(&js, "the hello")) > 0);
        if (rc < 0)
            return rc;
    }
    if ((c = trove__json_peek(&js)) >= 0)
        return trove__json_unexpected(&js, c, "the end of the line", "the hello");
    if (!have_capture)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "hello: no \"capture\" member");
    if ((rc = trove_volume_name_check(out->capture, diag)) != TROVE_OK) {
        char why[sizeof diag->msg];
        snprintf(why, sizeof why, "%s", diag ? diag->msg : "");
        return TROVE_FAIL(diag, rc, 0, "hello: \"capture\": %s", why);
    }
    return TROVE_OK;
}

/* ---- the framer --------------------------------------------------------------------- */

void trove__framer_init(struct trove__framer *f) { memset(f, 0, sizeof *f); }

void trove__framer_free(struct trove__framer *f)
{
    trove_bytes_free(&f->buf);
    memset(f, 0, sizeof *f);
}

size_t trove__framer_pending(const struct trove__framer *f) { return f->buf.len; }

/* A frame's whole length from its header (checked), or an error naming the offset. */
static int frame_len(const uint8_t *head, uint64_t offset, size_t *out, struct trove_diag *diag)
{
    struct trove_wire_header h;
    int rc = trove_wire_parse_header(head, TROVE_WIRE_HEADER_SIZE, &h, diag);

    if (rc != TROVE_OK) {
        char why[sizeof diag->msg];
        snprintf(why, sizeof why, "%s", diag ? diag->msg : "");
        return TROVE_FAIL(diag, rc, offset, "the frame at byte %llu: %s",
                          (unsigned long long)offset, why[0] ? why : trove_strerror(rc));
    }
    *out = TROVE_WIRE_HEADER_SIZE + (size_t)h.payload_len;
    return TROVE_OK;
}

static int fail(struct trove__framer *f, int rc)
{
    f->failed = rc;
    return rc;
}

int trove__framer_feed(struct trove__framer *f, const uint8_t *data, size_t len,
                       trove__hello_fn hello, trove__frame_fn frame, void *ctx,
                       struct trove_diag *diag)
{
    int rc;

    if (f->failed)
        return f->failed;
    while (len > 0) {
        size_t total, take;
        if (!f->got_hello) {
            const uint8_t *nl = memchr(data, '\n', len);
            take = nl ? (size_t)(nl - data) : len;
            if (f->buf.len + take + (nl ? 1 : 0) > TROVE__HELLO_MAX)
                return fail(f, TROVE_FAIL(diag, TROVE_ERR_LIMIT, f->offset,
                                          "the hello line is over %u bytes (or has no newline)",
                                          TROVE__HELLO_MAX));
            if ((rc = trove_bytes_append(&f->buf, data, take)) != TROVE_OK)
                return fail(f, rc);
            if (!nl)
                return TROVE_OK;
            data += take + 1;
            len -= take + 1;
            f->got_hello = 1;
            rc = hello(ctx, f->buf.ptr, f->buf.len);
            f->offset += f->buf.len + 1;
            f->buf.len = 0;
            if (rc != TROVE_OK)
                return fail(f, rc);
            continue;
        }
        /* A whole frame inside this read: handed out where it lies. */
        if (f->buf.len == 0 && len >= TROVE_WIRE_HEADER_SIZE) {
            if ((rc = frame_len(data, f->offset, &total, diag)) != TROVE_OK)
                return fail(f, rc);
            if (len >= total) {
                rc = frame(ctx, data, total);
                f->offset += total;
                data += total;
                len -= total;
                if (rc != TROVE_OK)
                    return fail(f, rc);
                continue;
            }
        }
        /* Split across reads: gather the header, then (its length known) the rest. */
        if (f->buf.len < TROVE_WIRE_HEADER_SIZE) {
            take = TROVE_WIRE_HEADER_SIZE - f->buf.len < len ? TROVE_WIRE_HEADER_SIZE - f->buf.len
                                                              : len;
            if ((rc = trove_bytes_append(&f->buf, data, take)) != TROVE_OK)
                return fail(f, rc);
            data += take;
            len -= take;
            if (f->buf.len < TROVE_WIRE_HEADER_SIZE)
                return TROVE_OK;
        }
        if ((rc = frame_len(f->buf.ptr, f->offset, &total, diag)) != TROVE_OK)
            return fail(f, rc);
        take = total - f->buf.len < len ? total - f->buf.len : len;
        if ((rc = trove_bytes_append(&f->buf, data, take)) != TROVE_OK)
            return fail(f, rc);
        data += take;
        len -= take;
        if (f->buf.len < total)
            return TROVE_OK;
        rc = frame(ctx, f->buf.ptr, f->buf.len);
        f->offset += f->buf.len;
        f->buf.len = 0;
        if (rc != TROVE_OK)
            return fail(f, rc);
    }
    return TROVE_OK;
}
