/*
 * web_view.c: the WebSocket viewers (docs/serve.md, "Viewers"): the upgrade, the frames a
 * viewer sends (RFC 6455: read, checked, and dropped — a viewer has nothing to say — but for
 * pings, which get their pong, and the close), and what it is sent: the hello, then its
 * history (from=start) or the stored capture (GET /api/replay), then its fan-out queue — a gap
 * report or one wire frame per binary message — and at the end of the capture
 * {"type":"end"}. A capture cut by the service's stop has no end: its viewers get what was
 * published, then the close 1001 (as every viewer does once the service stops). The
 * connection's fill callback (conn.h) takes messages from those queues while the socket
 * takes them, so the frames wait in the fan-out queue, whose bound decides
 * what a slow viewer loses, and each frame goes out from the one buffer all its viewers
 * share. Replays and from=start histories run threads of their own, at most max_replays at
 * once (503 beyond).
 */
#include "web_api.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/sha1.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the viewer ------------------------------------------------------------------------ */

static void view_error(struct trove__view *v, const char *fmt, const char *arg)
{
    snprintf(v->error, sizeof v->error, fmt, arg);
    v->closing = 2; /* send the error, then close with 1008 */
}

/* The viewer of ps, for the request req (or the router's error err when routed is 0). */
static struct trove__view *view_new(struct web *w, struct pss *ps, int routed,
                                    const struct trove__api_req *req,
                                    const struct trove__api_error *err)
{
    struct trove__server *srv = w->srv;
    struct trove__view *v = trove__calloc(1, sizeof *v);
    int state;

    if (!v)
        return NULL;
    v->ps = ps;
    v->id = ps->c.id;
    snprintf(v->peer, sizeof v->peer, "%s", ps->c.peer);
    pthread_mutex_lock(&srv->mu);
    srv->viewers_total++;
    pthread_mutex_unlock(&srv->mu);
    v->next = srv->views;
    srv->views = v;
    if (!routed) {
        view_error(v, "%s", err->msg);
        return v;
    }
    v->wire = req->wire ? req->wire
              : srv->opt.wire ? srv->opt.wire
              : ps->c.loopback ? TROVE_WIRE_RAW
                               : TROVE_WIRE_PACKED;
    snprintf(v->name, sizeof v->name, "%s", req->name);
    if (req->route == TROVE__R_REPLAY) { /* a stored capture, then the end */
        v->replay = 1;
        if (trove__history_replay(srv, v, req->name, req->from_ns, req->to_ns, req->speed) !=
            TROVE_OK)
            view_error(v, "%s", "starting the replay: out of memory");
        trove__log(srv, "replay %" PRIu64 " (%s) of capture %s: %s", v->id, v->peer, req->name,
                   trove_wire_format_name(v->wire));
        return v;
    }
    v->from_start = req->from_start;
    v->attrs = req->attrs;
    if (!(v->cap = trove__cap_join(srv, req->name, 0, 0, &state))) {
        view_error(v, "%s", "out of memory");
        return v;
    }
    /* Waiting for the capture to start: from=now is then from its first event. */
    v->waited = state == TROVE__CAP_WAITING || state == TROVE__CAP_OPENING;
    trove__log(srv, "viewer %" PRIu64 " (%s) of capture %s: %s from %s", v->id, v->peer,
               req->name, trove_wire_format_name(v->wire), v->from_start ? "start" : "now");
    return v;
}

static void view_free(struct web *w, struct trove__view *v)
{
    struct trove__server *srv = w->srv;

    for (struct trove__view **pp = &srv->views; *pp; pp = &(*pp)->next)
        if (*pp == v) {
            *pp = v->next;
            break;
        }
    trove__history_stop(v);
    if (v->cap) {
        if (v->fv) {
            struct trove__viewer_stats st;
            trove__viewer_stats(v->fv, &st);
            trove__log(srv, "viewer %" PRIu64 " (%s) of capture %s left: %" PRIu64
                            " events sent, %" PRIu64 " dropped",
                       v->id, v->peer, v->cap->name, v->sent_events, st.dropped_events);
            trove__fanout_remove(v->cap->fo, v->fv);
        }
        pthread_mutex_lock(&v->cap->mu);
        v->cap->viewers--;
        pthread_mutex_unlock(&v->cap->mu);
        trove__cap_release(v->cap);
    }
    free(v);
}

/* A replay or from=start history is over (or never ran): its slot goes back. */
static void stream_done(struct web *w, struct pss *ps)
{
    if (ps->stream) {
        ps->stream = 0;
        w->streams--;
    }
}

/* ---- messages -------------------------------------------------------------------------- */

static int send_text(struct pss *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int send_text(struct pss *ps, const char *fmt, ...)
{
    char buf[600];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        return -1;
    return trove__conn_put_ws(&ps->c, TROVE__WS_TEXT, buf, (size_t)n) == TROVE_OK ? 0 : -1;
}

static int send_frame(struct pss *ps, struct trove__view *v, struct trove__frame_buf *fb)
{
    v->sent_events += fb->events;
    v->sent_bytes += fb->len;
    return trove__conn_put_frame(&ps->c, fb) == TROVE_OK ? 0 : -1;
}

/* What the fan-out queue gave: a gap report or a frame. -1 (close) or 1 (ask again). */
static int send_item(struct pss *ps, struct trove__view *v, const struct trove__viewer_item *it)
{
    if (!it->frame)
        return send_text(ps, "{\"type\":\"gap\",\"events\":%" PRIu64 ",\"batches\":%" PRIu64 "}",
                         it->gap_events, it->gap_batches)
                   ? -1
                   : 1;
    return send_frame(ps, v, it->frame) ? -1 : 1;
}

/* Queue a close (code, reason) and end the connection once it is out: nothing follows a
 * close (RFC 6455 5.5.1), and what the viewer still sends is read and dropped. */
static int send_close(struct pss *ps, unsigned code, const char *reason)
{
    uint8_t b[2 + 64];
    size_t n = strlen(reason);

    if (ps->close_sent)
        return 0;
    if (n > sizeof b - 2)
        n = sizeof b - 2;
    b[0] = (uint8_t)(code >> 8);
    b[1] = (uint8_t)code;
    memcpy(b + 2, reason, n);
    ps->close_sent = 1;
    ps->c.ending = 1;
    return trove__conn_put_ws(&ps->c, TROVE__WS_CLOSE, b, 2 + n) == TROVE_OK ? 0 : -1;
}

/* JSON string contents (the error texts are ours, but may quote a name). */
static void json_escape(const char *s, char *out, size_t cap)
{
    size_t o = 0;

    for (; *s && o + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = 0;
}

/* GET /api/replay: the hello, the stored frames, the end. 1: a message was queued (ask
 * again), 0: none now, -1: close. */
static int replay_write(struct pss *ps, struct trove__view *v)
{
    struct trove__frame_buf *fb;
    int h;

    if (!v->hello_sent) {
        v->hello_sent = 1;
        return send_text(ps, "{\"type\":\"hello\",\"capture\":\"%s\",\"wire\":\"%s\","
                             "\"from\":\"replay\"}",
                         v->name, trove_wire_format_name(v->wire))
                   ? -1
                   : 1;
    }
    if (v->end_sent)
        return send_close(ps, 1000, "end") ? -1 : 0;
    h = trove__history_next(v, &fb);
    if (h == 1)
        return send_frame(ps, v, fb) ? -1 : 1;
    if (h == 0)
        return 0; /* the history thread wakes us */
    if (v->error[0]) {
        v->closing = 2;
        return 1;
    }
    v->end_sent = 1;
    return send_text(ps, "{\"type\":\"end\",\"events\":%" PRIu64 "}", v->sent_events) ? -1 : 1;
}

/* One message for v, if it has one: 1 (ask again), 0 (none now), -1 (close). */
static int view_write(struct web *w, struct pss *ps, struct trove__view *v)
{
    struct trove__viewer_item it;
    struct trove__frame_buf *fb;
    int h, state, stopped;

    if (v->closing == 1) { /* the service stops: a live viewer first gets what it has queued */
        if (!v->replay && v->fv && v->hello_sent && !v->hist && trove__viewer_next(v->fv, &it))
            return send_item(ps, v, &it);
        return send_close(ps, 1001, TROVE__STOP_REASON) ? -1 : 0;
    }
    if (v->closing == 2) {
        char e[2 * TROVE__ERROR_MAX];
        json_escape(v->error, e, sizeof e);
        v->closing = 3;
        return send_text(ps, "{\"type\":\"error\",\"message\":\"%s\"}", e) ? -1 : 1;
    }
    if (v->closing == 3)
        return send_close(ps, 1008, "bad request") ? -1 : 0;
    if (v->replay)
        return replay_write(ps, v);
    pthread_mutex_lock(&v->cap->mu);
    state = v->cap->state;
    stopped = v->cap->stopped;
    if (state == TROVE__CAP_FAILED && !v->end_sent)
        snprintf(v->error, sizeof v->error, "capture %s failed: %.300s", v->cap->name,
                 v->cap->error);
    pthread_mutex_unlock(&v->cap->mu);
    if (state == TROVE__CAP_FAILED && !v->end_sent) { /* it will not start: say why */
        v->closing = 2;
        return 1;
    }
    if (state == TROVE__CAP_ENDED && stopped && !v->fv) { /* the stop came before it opened */
        v->closing = 1;
        return 1;
    }
    if (!v->fv) {
        if (trove__view_join(w->srv, v) != TROVE_OK) {
            view_error(v, "%s", "joining the capture: out of memory");
            return 1;
        }
        if (!v->fv)
            return 0; /* not live yet */
    }
    if (!v->hello_sent) {
        v->hello_sent = 1;
        return send_text(ps, "{\"type\":\"hello\",\"capture\":\"%s\",\"wire\":\"%s\",\"from\":\"%s\"%s}",
                         v->cap->name, trove_wire_format_name(v->wire),
                         v->from_start ? "start" : "now", v->attrs ? ",\"attrs\":true" : "")
                   ? -1
                   : 1;
    }
    if (v->hist) {
        h = trove__history_next(v, &fb);
        if (h == 1)
            return send_frame(ps, v, fb) ? -1 : 1;
        if (h == 0)
            return 0; /* the history thread wakes us */
        if (v->error[0]) { /* the history failed: say so, and close */
            v->closing = 2;
            return 1;
        }
        /* Live frames dropped while the history went: read them back rather than lose
         * them (history.c), unless this viewer has caught up too often already. */
        if (v->catchups < TROVE__CATCHUP_MAX && trove__viewer_has_gap(v->fv)) {
            if (trove__view_catch_up(w->srv, v) != TROVE_OK)
                view_error(v, "%s", "catching up with the capture: out of memory");
            return 1;
        }
        trove__history_stop(v); /* over: live from here */
        stream_done(w, ps);
    }
    if (trove__viewer_next(v->fv, &it))
        return send_item(ps, v, &it);
    pthread_mutex_lock(&v->cap->mu);
    state = v->cap->state;
    stopped = v->cap->stopped;
    v->end_events = v->cap->published;
    pthread_mutex_unlock(&v->cap->mu);
    if ((state == TROVE__CAP_ENDED || state == TROVE__CAP_FAILED) && !v->end_sent) {
        /* Everything published is queued before the state changes: the queue is drained. */
        if (trove__viewer_next(v->fv, &it)) /* not yet: came in meanwhile, and goes now */
            return send_item(ps, v, &it);
        if (state == TROVE__CAP_ENDED && stopped) { /* cut by the stop: it did not end */
            v->closing = 1;
            return 1;
        }
        v->end_sent = 1;
        return send_text(ps, "{\"type\":\"end\",\"events\":%" PRIu64 "}", v->end_events) ? -1 : 1;
    }
    if (v->end_sent)
        return send_close(ps, 1000, "end") ? -1 : 0;
    return 0;
}

/* conn.h's fill: messages while the socket takes them. */
static int view_fill(struct trove__conn *c)
{
    struct pss *ps = (struct pss *)c;

    while (ps->v && c->q_bytes < TROVE__CONN_QUEUE_LOW && !c->ending) {
        int r = view_write(ps->w, ps, ps->v);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
    }
    return 0;
}

/* ---- what a viewer sends ---------------------------------------------------------------- */

/* A protocol error: close with 1002. */
static void protocol_error(struct pss *ps, const char *why)
{
    trove__log(ps->w->srv, "viewer %" PRIu64 " (%s): %s: closed (1002)", ps->c.id, ps->c.peer,
               why);
    ps->c.fill = NULL;
    if (send_close(ps, 1002, "protocol error") != 0)
        trove__conn_close(&ps->c);
    else
        trove__conn_end(&ps->c, 1, trove__now_ns());
}

/* A control frame whole in ps->ws_in: its payload unmasked in place. */
static void control(struct pss *ps, const struct trove__ws_frame *f, uint8_t *p)
{
    for (uint64_t i = 0; i < f->len; i++)
        p[i] ^= f->mask[i & 3];
    if (f->opcode == TROVE__WS_PING) {
        if (trove__conn_put_ws(&ps->c, TROVE__WS_PONG, p, (size_t)f->len) != TROVE_OK)
            trove__conn_close(&ps->c);
        else
            trove__conn_pump(&ps->c, trove__now_ns());
    } else if (f->opcode == TROVE__WS_CLOSE) {
        if (!trove__ws_close_ok(p, (size_t)f->len)) {
            protocol_error(ps, "a close RFC 6455 does not allow");
            return;
        }
        /* Answered with its own code (none when it had none). */
        ps->c.fill = NULL;
        if (!ps->close_sent) {
            ps->close_sent = 1;
            if (trove__conn_put_ws(&ps->c, TROVE__WS_CLOSE, p, f->len >= 2 ? 2 : 0) !=
                TROVE_OK) {
                trove__conn_close(&ps->c);
                return;
            }
        }
        trove__conn_end(&ps->c, 1, trove__now_ns());
    }
}

/* Take n bytes a viewer sent. */
static void feed(struct pss *ps, const uint8_t *buf, size_t n)
{
    size_t i = 0;

    while (!ps->c.dead && !ps->close_sent && (i < n || ps->ws_n > 0)) {
        struct trove__ws_frame f;
        size_t k, have;
        int r;

        if (ps->ws_skip > 0) {
            if (i == n)
                return;
            k = n - i < ps->ws_skip ? n - i : (size_t)ps->ws_skip;
            ps->ws_skip -= k;
            i += k;
            continue;
        }
        k = sizeof ps->ws_in - ps->ws_n;
        if (k > n - i)
            k = n - i;
        memcpy(ps->ws_in + ps->ws_n, buf + i, k);
        ps->ws_n += k;
        i += k;
        r = trove__ws_parse(ps->ws_in, ps->ws_n, &f);
        if (r < 0) {
            protocol_error(ps, "a frame RFC 6455 does not allow");
            return;
        }
        if (r == 0) {
            if (i == n)
                return; /* more to come */
            continue;
        }
        if (f.opcode >= 8) {
            size_t total = f.head + (size_t)f.len;
            if (ps->ws_n < total) {
                if (i == n)
                    return;
                continue;
            }
            control(ps, &f, ps->ws_in + f.head);
            memmove(ps->ws_in, ps->ws_in + total, ps->ws_n - total);
            ps->ws_n -= total;
            continue;
        }
        /* A data frame: its payload is dropped (a viewer has nothing to say). */
        if ((f.opcode == TROVE__WS_CONT) != ps->ws_message) {
            protocol_error(ps, f.opcode == TROVE__WS_CONT ? "a continuation with no message"
                                                          : "a new message inside another");
            return;
        }
        ps->ws_message = !f.fin;
        have = ps->ws_n - f.head;
        if (have > f.len)
            have = (size_t)f.len;
        ps->ws_skip = f.len - have;
        memmove(ps->ws_in, ps->ws_in + f.head + have, ps->ws_n - f.head - have);
        ps->ws_n -= f.head + have;
    }
}

void trove__ws_read(struct web *w, struct pss *ps)
{
    uint8_t buf[16384];

    (void)w;
    for (int round = 0; round < 8 && !ps->c.dead; round++) {
        ssize_t n = recv(ps->c.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) { /* the viewer went without a close */
            trove__conn_close(&ps->c);
            return;
        }
        if (ps->close_sent)
            continue; /* a close is out: nothing more is read but the viewer's end */
        feed(ps, buf, (size_t)n);
    }
}

/* ---- the upgrade ------------------------------------------------------------------------ */

/* Sec-WebSocket-Key: base64 of 16 bytes (24 characters, the last two "=="). */
static int key_ok(struct trove__http_value v)
{
    if (!v.v || v.n != 24 || v.v[22] != '=' || v.v[23] != '=')
        return 0;
    for (size_t i = 0; i < 22; i++) {
        char c = v.v[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/'))
            return 0;
    }
    return 1;
}

int trove__ws_upgrade(struct web *w, struct pss *ps)
{
    const struct trove__http_head *h = &ps->c.head;
    struct trove__api_req req;
    struct trove__api_error err;
    char path[TROVE__HTTP_LINE_MAX + 1], query[TROVE__HTTP_LINE_MAX + 1], accept[29], a[512];
    const char *q;
    size_t p = 0, n;
    int routed;

    if (h->route_method != TROVE__GET || h->minor < 1 ||
        !trove__http_has_token(h->f[TROVE__H_CONNECTION], "upgrade"))
        return trove__http_error(ps, 400, "bad_request",
                                 "a WebSocket upgrade is a GET over HTTP/1.1 with Connection: "
                                 "Upgrade");
    if (!key_ok(h->f[TROVE__H_WS_KEY]))
        return trove__http_error(ps, 400, "bad_request",
                                 "a WebSocket upgrade needs a Sec-WebSocket-Key (16 bytes in "
                                 "base64)");
    if (!h->f[TROVE__H_WS_VERSION].v || h->f[TROVE__H_WS_VERSION].n != 2 ||
        memcmp(h->f[TROVE__H_WS_VERSION].v, "13", 2) != 0) {
        char body[] = "{\"error\":\"this service speaks WebSocket version 13\","
                      "\"code\":\"upgrade_required\"}\n";
        return trove__http_answer(ps, 426, "application/json", body, sizeof body - 1,
                                  "sec-websocket-version: 13\r\n");
    }
    while (p < h->target_len && h->target[p] != '?')
        p++;
    snprintf(path, sizeof path, "%.*s", (int)p, h->target);
    q = p < h->target_len ? query : NULL;
    snprintf(query, sizeof query, "%.*s", (int)(p < h->target_len ? h->target_len - p - 1 : 0),
             h->target + (p < h->target_len ? p + 1 : p));
    /* A bad parameter is told after the upgrade, as a viewer's error message. */
    routed = trove__api_route(TROVE__GET, path, q, &req, &err) == 0;
    if (routed && (req.route == TROVE__R_REPLAY || req.from_start)) {
        if (w->streams >= w->max_streams) {
            trove__log(w->srv, "%s from %s refused: %d replays and from=start histories run "
                               "already (--max-replays)",
                       path, ps->c.peer, w->streams);
            return trove__http_busy(ps, "the service is serving as many replays and from=start "
                                        "histories as it runs at once (--max-replays); try "
                                        "again shortly");
        }
        w->streams++;
        ps->stream = 1;
    }
    trove__ws_accept_key(h->f[TROVE__H_WS_KEY].v, h->f[TROVE__H_WS_KEY].n, accept);
    n = (size_t)snprintf(a, sizeof a,
                         "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                         "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n",
                         accept,
                         trove__http_has_token(h->f[TROVE__H_WS_PROTOCOL], "trove")
                             ? "Sec-WebSocket-Protocol: trove\r\n"
                             : "");
    ps->state = TROVE__PS_WS;
    if (trove__conn_put(&ps->c, a, n) != TROVE_OK || !(ps->v = view_new(w, ps, routed, &req, &err))) {
        trove__conn_close(&ps->c);
        return -1;
    }
    ps->c.fill = view_fill;
    /* What came after the head is the viewer's first frames (RFC 6455 asks a client to wait
     * for the 101, but nothing is lost if it does not). The head's buffer goes. */
    if (ps->c.in_len > h->head_len) {
        uint8_t early[TROVE__HTTP_HEAD_MAX];
        size_t k = ps->c.in_len - h->head_len;
        memcpy(early, ps->c.in + h->head_len, k);
        free(ps->c.in);
        ps->c.in = NULL;
        feed(ps, early, k);
    } else {
        free(ps->c.in);
        ps->c.in = NULL;
    }
    if (ps->c.dead)
        return -1;
    return trove__conn_pump(&ps->c, trove__now_ns());
}

/* ---- the web thread's calls --------------------------------------------------------------- */

void trove__ws_wake(struct web *w)
{
    uint64_t now = trove__now_ns();

    for (struct trove__view *v = w->srv->views; v; v = v->next) {
        struct pss *ps = v->ps;
        if (!ps->c.dead && !ps->c.ending && !ps->c.out_armed)
            trove__conn_pump(&ps->c, now);
    }
}

void trove__ws_stop(struct web *w)
{
    uint64_t now = trove__now_ns();

    for (struct trove__view *v = w->srv->views; v; v = v->next) {
        struct pss *ps = v->ps;
        if (!v->closing)
            v->closing = 1;
        if (!ps->c.dead && !ps->c.ending && !ps->c.out_armed)
            trove__conn_pump(&ps->c, now);
    }
}

void trove__ws_drop(struct web *w, struct pss *ps)
{
    if (ps->v) {
        view_free(w, ps->v);
        ps->v = NULL;
    }
    stream_done(w, ps);
}
