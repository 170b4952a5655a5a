/*
 * producer.c: a producer's byte stream cut into its hello line and whole wire frames, and
 * the hello read (producer.h); the service's answer lines written, and read back on the
 * producer's side (trove_serve_answer_parse). The framer copies only what arrives split
 * across reads: a frame that lies whole inside one read is handed out where it is.
 *
 * The answer lines, at most TROVE_SERVE_ANSWER_MAX (1,024) bytes with the newline:
 *
 *   {"type":"accept","capture":"NAME","session":S,"mode":"new","events":E}\n
 *   {"type":"refuse","reason":"..."}\n
 *   {"type":"error","reason":"..."}\n
 *   {"type":"error","reason":"...","stopping":true}\n   (the service stops; a refuse too)
 *
 * Trust rules of the reader: the line's length is checked before anything else; strings
 * are read into bounded buffers (a longer one is an error, never grown); numbers must be
 * integers within u64; the type and the mode must be ones this trove knows.
 */
#include "producer.h"
#include "common/fail.h"
#include "common/json.h"
#include "common/utf8.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "trove/event.h"
#include "trove/volume.h"
#include "trove/wire.h"

/* ---- the hello (its members' readers serve the answer too) ------------------------------ */

/* An integer member in [min, max] into *out (messages name js->doc: the hello, the answer). */
static int member_uint(struct trove__json *js, const char *key, uint64_t min, uint64_t max,
                       uint64_t *out, struct trove_diag *diag)
{
    struct trove__json_num n;
    uint64_t v = 0, at = trove__json_pos(js);
    int rc, c = trove__json_peek(js);

    if (c != '-' && (c < '0' || c > '9'))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, at, "%s: \"%s\" must be a number", js->doc,
                          key);
    if ((rc = trove__json_number(js, &n)) != TROVE_OK)
        return rc;
    if (!n.is_int || n.neg || trove__json_num_scaled(&n, 0, &v) != TROVE_OK || v < min ||
        v > max)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, at,
                          "%s: \"%s\" must be an integer from %llu to %llu", js->doc, key,
                          (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return TROVE_OK;
}

/* A string member into out (cap bytes with its NUL); longer is TROVE_ERR_LIMIT, not a
 * string or one with a NUL TROVE_ERR_INVALID (messages name js->doc). */
static int member_string(struct trove__json *js, const char *key, char *out, size_t cap,
                         struct trove_diag *diag)
{
    struct trove__json_str v = {(uint8_t *)out, 0, cap - 1, 0};
    uint64_t at = trove__json_pos(js);
    int rc;

    if (trove__json_peek(js) != '"')
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, at, "%s: \"%s\" must be a string", js->doc,
                          key);
    if ((rc = trove__json_string(js, &v)) != TROVE_OK)
        return rc;
    if (v.over)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, at, "%s: \"%s\" is over %zu bytes", js->doc,
                          key, cap - 1);
    if (memchr(out, 0, v.len))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, at, "%s: \"%s\" holds a NUL byte", js->doc,
                          key);
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
                rc = member_string(&js, "capture", out->capture, sizeof out->capture, diag);
                have_capture = 1;
            } else if (trove__json_key_is(&key, "producer")) {
                rc = member_string(&js, "producer", out->producer, sizeof out->producer, diag);
            } else if (trove__json_key_is(&key, "token")) {
                rc = member_string(&js, "token", out->token, sizeof out->token, diag);
            } else if (trove__json_key_is(&key, "pid")) {
                uint64_t v = 0;
                rc = member_uint(&js, "pid", 0, UINT32_MAX, &v, diag);
                out->pid = (uint32_t)v;
            } else if (trove__json_key_is(&key, "clock")) {
                char clock[8];
                uint64_t at = trove__json_pos(&js);
                if ((rc = member_string(&js, "clock", clock, sizeof clock, diag)) == TROVE_OK) {
                    if (!strcmp(clock, "tsc"))
                        out->clock_tsc = 1;
                    else if (strcmp(clock, "ns") != 0)
                        return TROVE_FAIL(diag, TROVE_ERR_INVALID, at,
                                          "hello: \"clock\" must be \"ns\" or \"tsc\"");
                } else if (rc == TROVE_ERR_LIMIT) {
                    return TROVE_FAIL(diag, TROVE_ERR_INVALID, at,
                                      "hello: \"clock\" must be \"ns\" or \"tsc\"");
                }
            } else if (trove__json_key_is(&key, "names")) {
                char names[16];
                uint64_t at = trove__json_pos(&js);
                rc = member_string(&js, "names", names, sizeof names, diag);
                if (rc == TROVE_OK && !strcmp(names, "fallback"))
                    out->names_fallback = 1;
                else if ((rc == TROVE_OK && strcmp(names, "given") != 0) || rc == TROVE_ERR_LIMIT)
                    return TROVE_FAIL(diag, TROVE_ERR_INVALID, at,
                                      "hello: \"names\" must be \"given\" or \"fallback\"");
            } else if (trove__json_key_is(&key, "tsc_hz")) {
                rc = member_uint(&js, "tsc_hz", TROVE__TSC_HZ_MIN, TROVE__TSC_HZ_MAX,
                                &out->tsc_hz, diag);
            } else if (trove__json_key_is(&key, "tsc_ref")) {
                rc = member_uint(&js, "tsc_ref", 0, UINT64_MAX, &out->tsc_ref, diag);
            } else if (trove__json_key_is(&key, "ns_ref")) {
                rc = member_uint(&js, "ns_ref", 0, UINT64_MAX, &out->ns_ref, diag);
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
    if (out->clock_tsc && !out->tsc_hz)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "hello: \"clock\":\"tsc\" needs \"tsc_hz\", the ticks per second");
    if ((rc = trove_volume_name_check(out->capture, diag)) != TROVE_OK) {
        char why[sizeof diag->msg];
        snprintf(why, sizeof why, "%s", diag ? diag->msg : "");
        return TROVE_FAIL(diag, rc, 0, "hello: \"capture\": %s", why);
    }
    return TROVE_OK;
}

/* ---- the answer lines ------------------------------------------------------------------ */

static const char *const mode_names[] = {"?", "new", "replace", "append", "join"};

const char *trove_serve_mode_name(int mode)
{
    return mode >= TROVE_SERVE_NEW && mode <= TROVE_SERVE_JOIN ? mode_names[mode] : "?";
}

size_t trove__answer_accept(char *out, const char *capture, uint64_t session, int mode,
                            uint64_t events)
{
    int n = snprintf(out, TROVE_SERVE_ANSWER_MAX,
                     "{\"type\":\"accept\",\"capture\":\"%.128s\",\"session\":%" PRIu64
                     ",\"mode\":\"%s\",\"events\":%" PRIu64 "}\n",
                     capture, session, trove_serve_mode_name(mode), events);
    /* at most 48 + 128 + 2 * 20 + 7 bytes: always whole */
    return n > 0 ? (size_t)n : 0;
}

/* A refuse or an error line with reason, cut to leave room for `more` (members after the
 * reason, each with its leading comma) before the closing brace. */
static size_t answer_line(char *out, int type, const char *reason, const char *more)
{
    static const char tail[] = "}\n";
    const uint8_t *s = (const uint8_t *)reason;
    size_t extra = 1 + strlen(more); /* the reason's closing quote, then `more` */
    size_t len = strlen(reason), at, room;
    int n = snprintf(out, TROVE_SERVE_ANSWER_MAX, "{\"type\":\"%s\",\"reason\":\"",
                     type == TROVE_SERVE_REFUSE ? "refuse" : "error");

    at = n > 0 ? (size_t)n : 0;
    room = TROVE_SERVE_ANSWER_MAX - sizeof tail - extra - 3; /* the tail, its NUL, "..." */
    for (size_t i = 0; i < len;) {
        size_t ok = trove__utf8_valid_prefix(s + i, len - i < 4 ? len - i : 4), step, need;
        char esc[8];
        if (ok == 0) { /* a byte that is not UTF-8 */
            esc[0] = '?';
            need = step = 1;
        } else if (s[i] == '"' || s[i] == '\\') {
            esc[0] = '\\';
            esc[1] = (char)s[i];
            need = 2;
            step = 1;
        } else if (s[i] < 0x20 || s[i] == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", s[i]);
            need = 6;
            step = 1;
        } else { /* one character, whole */
            step = s[i] < 0x80 ? 1 : s[i] < 0xe0 ? 2 : s[i] < 0xf0 ? 3 : 4;
            memcpy(esc, s + i, step);
            need = step;
        }
        if (at + need > room) {
            memcpy(out + at, "...", 3);
            at += 3;
            break;
        }
        memcpy(out + at, esc, need);
        at += need;
        i += step;
    }
    out[at++] = '"';
    memcpy(out + at, more, extra - 1);
    at += extra - 1;
    assert(at + sizeof tail <= TROVE_SERVE_ANSWER_MAX);
    memcpy(out + at, tail, sizeof tail); /* with its NUL */
    return at + sizeof tail - 1;
}

size_t trove__answer_reason(char *out, int type, const char *reason)
{
    return answer_line(out, type, reason, "");
}

size_t trove__answer_stopping(char *out, int type, const char *reason)
{
    return answer_line(out, type, reason, ",\"stopping\":true");
}

/* The members an answer's reader knows, each at most once (a second "type" could say
 * another thing than the first to another reader). */
enum { K_CAPTURE, K_SESSION, K_MODE, K_EVENTS, K_REASON, K_TYPE, K_STOPPING, K_COUNT };
static const char *const answer_keys[K_COUNT] = {"capture", "session", "mode",     "events",
                                                 "reason",  "type",    "stopping"};
#define ACCEPT_NEEDS (1 << K_CAPTURE | 1 << K_SESSION | 1 << K_MODE | 1 << K_EVENTS)

int trove_serve_answer_parse(const char *line, size_t len, struct trove_serve_answer *out,
                             struct trove_diag *diag)
{
    uint8_t keybuf[16];
    struct trove__json_str key = {keybuf, 0, sizeof keybuf, 0};
    struct trove__json js;
    char type[8] = "", mode[8] = "";
    int rc, c, have = 0; /* bit 1 << K_...: the members read */

    memset(out, 0, sizeof *out);
    if (len >= TROVE_SERVE_ANSWER_MAX)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "answer: a line of %zu bytes, over %u",
                          len, TROVE_SERVE_ANSWER_MAX - 1);
    trove__json_init_mem(&js, (const uint8_t *)line, len, diag);
    js.doc = "answer";
    js.flags = TROVE_JSON_UTF8;
    js.max_depth = 8;
    if ((c = trove__json_peek(&js)) != '{')
        return c < 0 ? trove__json_eof_error(&js, "the answer")
                     : trove__json_unexpected(&js, c, "'{'", "the answer");
    trove__json_take(&js);
    if (trove__json_peek(&js) == '}') {
        trove__json_take(&js);
    } else {
        do {
            uint64_t v = 0;
            int k = 0;
            if ((rc = trove__json_key(&js, &key, "the answer")) != TROVE_OK)
                return rc;
            while (k < K_COUNT && !trove__json_key_is(&key, answer_keys[k]))
                k++;
            if (k < K_COUNT && (have & 1 << k)) /* a second one could say another thing */
                return TROVE_FAIL(diag, TROVE_ERR_INVALID, trove__json_pos(&js),
                                  "answer: \"%s\" twice", answer_keys[k]);
            if (k < K_COUNT)
                have |= 1 << k;
            if (k == K_TYPE) {
                if ((rc = member_string(&js, "type", type, sizeof type, diag)) == TROVE_ERR_LIMIT)
                    return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                                      "answer: a \"type\" this trove does not know");
            } else if (k == K_CAPTURE) {
                rc = member_string(&js, "capture", out->capture, sizeof out->capture, diag);
            } else if (k == K_REASON) {
                rc = member_string(&js, "reason", out->reason, sizeof out->reason, diag);
            } else if (k == K_MODE) {
                if ((rc = member_string(&js, "mode", mode, sizeof mode, diag)) == TROVE_ERR_LIMIT)
                    return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                                      "answer: a \"mode\" this trove does not know");
            } else if (k == K_STOPPING) {
                int lit;
                c = trove__json_peek(&js);
                if (c != 't' && c != 'f')
                    return TROVE_FAIL(diag, TROVE_ERR_INVALID, trove__json_pos(&js),
                                      "answer: \"stopping\" must be true or false");
                if ((rc = trove__json_literal(&js, &lit)) == TROVE_OK)
                    out->stopping = lit == TROVE_JSON_TRUE;
            } else if (k == K_SESSION || k == K_EVENTS) {
                rc = member_uint(&js, answer_keys[k], 0, UINT64_MAX, &v, diag);
                if (k == K_EVENTS)
                    out->events = v;
                else
                    out->session = v;
            } else {
                rc = trove__json_skip(&js, 1);
            }
            if (rc != TROVE_OK)
                return rc;
        } while ((rc = trove__json_next_member(&js, "the answer")) > 0);
        if (rc < 0)
            return rc;
    }
    if ((c = trove__json_peek(&js)) >= 0) /* a '\r' before the newline is whitespace */
        return trove__json_unexpected(&js, c, "the end of the line", "the answer");
    if (!strcmp(type, "accept")) {
        out->type = TROVE_SERVE_ACCEPT;
        for (int m = TROVE_SERVE_NEW; m <= TROVE_SERVE_JOIN; m++)
            if (!strcmp(mode, mode_names[m]))
                out->mode = m;
        if ((have & ACCEPT_NEEDS) != ACCEPT_NEEDS)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                              "answer: an accept needs \"capture\", \"session\", \"mode\" and "
                              "\"events\"");
        if (!out->mode)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                              "answer: a \"mode\" this trove does not know");
        if (trove_volume_name_check(out->capture, NULL) != TROVE_OK)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                              "answer: \"capture\" is not a capture's name");
    } else if (!strcmp(type, "refuse") || !strcmp(type, "error")) {
        out->type = type[0] == 'r' ? TROVE_SERVE_REFUSE : TROVE_SERVE_ERROR;
        if (!(have & 1 << K_REASON))
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "answer: a %s needs \"reason\"", type);
    } else {
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          type[0] ? "answer: a \"type\" this trove does not know"
                                  : "answer: no \"type\" member");
    }
    return TROVE_OK;
}

/* ---- a TSC producer's clock ---------------------------------------------------------- */

#define CLOCK_SHIFT 40

void trove__clock_init(struct trove__clock *c, const struct trove__hello *h)
{
    c->tsc_ref = h->tsc_ref;
    c->ns_ref = h->ns_ref;
    c->mult = (uint64_t)(((unsigned __int128)1000000000u << CLOCK_SHIFT) / h->tsc_hz);
}

static uint64_t ticks_ns(uint64_t mult, uint64_t ticks)
{
    unsigned __int128 p = (unsigned __int128)ticks * mult >> CLOCK_SHIFT;
    return p > UINT64_MAX ? UINT64_MAX : (uint64_t)p;
}

/* A time in ticks on the capture's clock, saturating at 0 and 2^64 - 1. */
static uint64_t clock_at(const struct trove__clock *c, uint64_t ticks)
{
    uint64_t d;
    if (ticks >= c->tsc_ref) {
        d = ticks_ns(c->mult, ticks - c->tsc_ref);
        return d > UINT64_MAX - c->ns_ref ? UINT64_MAX : c->ns_ref + d;
    }
    d = ticks_ns(c->mult, c->tsc_ref - ticks);
    return d > c->ns_ref ? 0 : c->ns_ref - d;
}

void trove__clock_apply(const struct trove__clock *c, struct trove_event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct trove_event *e = &ev[i];
        uint64_t start = clock_at(c, e->start_ns);
        /* the end converted as the start is, the duration their difference: a zone that ends
         * where the next begins (frames from marks), or inside its parent, still does */
        if (e->kind != TROVE_KIND_COUNTER)
            e->dur_ns = clock_at(c, e->start_ns + e->dur_ns < e->start_ns ? UINT64_MAX
                                                                           : e->start_ns + e->dur_ns) -
                        start;
        e->start_ns = start;
    }
}

/* ---- the framer --------------------------------------------------------------------- */

/* The room the framer keeps between frames split across reads: a frame bigger than this
 * (a names frame may be 64 MiB) gets room of its own, freed after it. */
#define FRAMER_KEEP ((size_t)1 << 20)

void trove__framer_init(struct trove__framer *f) { memset(f, 0, sizeof *f); }

void trove__framer_free(struct trove__framer *f)
{
    trove_bytes_free(&f->buf);
    memset(f, 0, sizeof *f);
}

size_t trove__framer_pending(const struct trove__framer *f) { return f->buf.len; }

/* A frame's whole length from its header (checked, into h), or an error naming the offset. */
static int frame_len(const uint8_t *head, uint64_t offset, size_t *out,
                     struct trove_wire_header *h_out, struct trove_diag *diag)
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
    *h_out = h;
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
        struct trove_wire_header h;
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
            if ((rc = frame_len(data, f->offset, &total, &h, diag)) != TROVE_OK)
                return fail(f, rc);
            if (f->header && (rc = f->header(ctx, &h)) != TROVE_OK)
                return fail(f, rc);
            f->header_seen = 1;
            if (len >= total) {
                rc = frame(ctx, data, total);
                f->header_seen = 0;
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
        if ((rc = frame_len(f->buf.ptr, f->offset, &total, &h, diag)) != TROVE_OK)
            return fail(f, rc);
        if (!f->header_seen && f->header && (rc = f->header(ctx, &h)) != TROVE_OK)
            return fail(f, rc);
        f->header_seen = 1;
        take = total - f->buf.len < len ? total - f->buf.len : len;
        if ((rc = trove_bytes_append(&f->buf, data, take)) != TROVE_OK)
            return fail(f, rc);
        data += take;
        len -= take;
        if (f->buf.len < total)
            return TROVE_OK;
        rc = frame(ctx, f->buf.ptr, f->buf.len);
        f->header_seen = 0;
        f->offset += f->buf.len;
        f->buf.len = 0;
        if (f->buf.cap > FRAMER_KEEP) /* a big frame's room is not kept for the next */
            trove_bytes_free(&f->buf);
        if (rc != TROVE_OK)
            return fail(f, rc);
    }
    return TROVE_OK;
}
