/*
 * web.c: the service's HTTP and WebSocket side, on libwebsockets (docs/serve.md,
 * "Viewers" and "Status"). One thread runs the lws loop and is the only one to call lws;
 * the others wake it with lws_cancel_service (trove__wake_web), and it then asks to write
 * to every viewer. A viewer's writable callback sends one message: the hello, then its
 * history (from=start), then its fan-out queue — a gap report or one wire frame per binary
 * message — and at the end of the capture {"type":"end"}.
 */
#include "web_api.h"
#include "assets.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/utf8.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

_Static_assert(LWS_PRE <= TROVE__FRAME_HEADROOM, "a frame's headroom must hold LWS_PRE");

#define STOP_GRACE_NS (3 * 1000000000ull) /* viewers that do not close by then are dropped */

static struct trove__server *log_srv; /* lws logs without a context pointer */

static void lws_log(int level, const char *line)
{
    size_t n = strlen(line);
    char buf[512];

    (void)level;
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    snprintf(buf, sizeof buf, "%.*s", (int)n, line);
    if (log_srv)
        trove__log(log_srv, "web: %s", buf);
}

static void wake(struct trove__server *srv)
{
    if (srv->lws_ctx)
        lws_cancel_service(srv->lws_ctx);
}

/* ---- HTTP ------------------------------------------------------------------------------- */

/* The viewer's files: nothing but this service may load them or be loaded by them. */
#define VIEWER_HEADERS                                                                        \
    "content-security-policy: default-src 'self'; img-src 'self' data: blob:; "             \
    "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'\r\n"                          \
    "x-content-type-options: nosniff\r\n"

/* Fill out to cap - 1 bytes: a path or query too long for its buffer reaches the router
 * over its limit, and is refused whole (413) rather than routed cut short. */
static void over_limit(char *out, size_t cap)
{
    memset(out, 'x', cap - 1);
    out[cap - 1] = 0;
}

/* Is piece k the query's last? */
static int last_piece(struct lws *wsi, int k)
{
    char c[2];
    return lws_hdr_copy_fragment(wsi, c, sizeof c, WSI_TOKEN_HTTP_URI_ARGS, k + 1) < 0 &&
           lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, k + 1) == 0;
}

#define CUT_SHORT "the request line ends inside its target (an escaped CR or LF, %0D or %0A, " \
                  "or no HTTP version): nothing of it was done"

/* The request's method, path and query as the client wrote them, for the router. The HTTP
 * layer has decoded them, and cut each at its '&' and ';' (the query's pieces are its
 * parameters; the path's only ever name nothing), so every piece is escaped again
 * (trove__api_escape), the query's joined with '&' and the path's with an escaped '&', which
 * no endpoint holds; an empty parameter ("a=1&&b=2") is skipped, as the router skips it,
 * and so is a last piece "/", which libwebsockets makes of an empty last one ("a=1&", "?").
 * -1 (CUT_SHORT) when the request line has no HTTP version: libwebsockets ends the line at a
 * CR or LF it has decoded from an escape, so what came after it in the target is lost. */
static int request_of(struct lws *wsi, char *path, size_t pcap, char *query, size_t qcap)
{
    static const enum lws_token_indexes uris[] = {
        WSI_TOKEN_GET_URI, WSI_TOKEN_POST_URI, WSI_TOKEN_DELETE_URI, WSI_TOKEN_PUT_URI,
        WSI_TOKEN_PATCH_URI, WSI_TOKEN_OPTIONS_URI, WSI_TOKEN_HEAD_URI, WSI_TOKEN_CONNECT};
    char piece[TROVE__API_HEADER_MAX + 2];
    enum lws_token_indexes uri = WSI_TOKEN_GET_URI;
    int method = TROVE__OTHER;
    size_t p = 0, q = 0;

    for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++)
        if (lws_hdr_total_length(wsi, uris[i]) > 0) {
            uri = uris[i];
            method = i == 0 ? TROVE__GET : i == 1 ? TROVE__POST : i == 2 ? TROVE__DELETE
                                                                 : TROVE__OTHER;
            break;
        }
    path[0] = query[0] = 0;
    for (int k = 0;; k++) {
        int n = lws_hdr_copy_fragment(wsi, piece, sizeof piece, uri, k);
        if (n < 0) { /* no such piece, or one over the limit */
            if (lws_hdr_fragment_length(wsi, uri, k) > 0)
                over_limit(path, pcap);
            break;
        }
        if ((k > 0 && trove__api_escape("&", 1, path, pcap, &p) != 0) ||
            trove__api_escape(piece, (size_t)n, path, pcap, &p) != 0)
            break;
    }
    for (int k = 0;; k++) {
        int n = lws_hdr_copy_fragment(wsi, piece, sizeof piece, WSI_TOKEN_HTTP_URI_ARGS, k);
        if (n < 0) {
            if (lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, k) > 0)
                over_limit(query, qcap);
            break;
        }
        if (n == 0)
            continue;
        if (n == 1 && piece[0] == '/' && last_piece(wsi, k))
            break; /* the HTTP layer's mark of a query ending in '&' (or of "?" alone) */
        if (q > 0) {
            if (q + 1 >= qcap) {
                over_limit(query, qcap);
                break;
            }
            query[q++] = '&';
            query[q] = 0;
        }
        if (trove__api_escape(piece, (size_t)n, query, qcap, &q) != 0)
            break;
    }
    return lws_hdr_total_length(wsi, WSI_TOKEN_HTTP) > 0 ? method : -1;
}

/* Does the request carry the token (or need none)? */
static int authorized(struct web *w, struct lws *wsi)
{
    char auth[512] = "", cookie[1024] = "";

    if (!w->token)
        return 1;
    if (lws_hdr_copy(wsi, auth, sizeof auth, WSI_TOKEN_HTTP_AUTHORIZATION) < 0)
        auth[0] = 0;
    if (lws_hdr_copy(wsi, cookie, sizeof cookie, WSI_TOKEN_HTTP_COOKIE) < 0)
        cookie[0] = 0;
    return trove__api_token_ok(w->token, w->token_len, auth[0] ? auth : NULL,
                               cookie[0] ? cookie : NULL);
}

static int http_request(struct web *w, struct lws *wsi, struct pss *ps)
{
    struct trove__server *srv = w->srv;
    struct trove__api_error err;
    struct trove_bytes body = {0};
    char path[TROVE__API_HEADER_MAX + 2], query[TROVE__API_QUERY_MAX + 2];
    const char *type = "application/json";
    int method = request_of(wsi, path, sizeof path, query, sizeof query), rc;

    ps->ipath[0] = 0;
    if (method < 0)
        return trove__http_error(wsi, ps, 400, "bad_request", CUT_SHORT);
    if (trove__api_route(method, path, query, &ps->req, &err) != 0)
        return trove__http_error(wsi, ps, (unsigned)err.status, err.code, err.msg);
    if (ps->req.route != TROVE__R_LOGIN && !authorized(w, wsi)) {
        const struct trove__web_asset *login = trove__web_asset_find("login.html", NULL);
        /* A browser opening the viewer gets a page that says how to sign in. */
        if (login && (ps->req.route == TROVE__R_INDEX || ps->req.route == TROVE__R_STATUS_PAGE))
            return trove__http_answer(wsi, ps, 401, login->type, login->data, login->len,
                                      VIEWER_HEADERS);
        return trove__http_error(wsi, ps, 401, "unauthorized",
                                 "this service needs its token: Authorization: Bearer TOKEN, "
                                 "or GET /login?token=TOKEN in a browser");
    }
    switch (ps->req.route) {
    case TROVE__R_INDEX:
    case TROVE__R_ASSET: { /* from the embedded table only: never a file */
        const struct trove__web_asset *a = &trove__web_assets[ps->req.asset];
        return trove__http_answer(wsi, ps, 200, a->type, a->data, a->len, VIEWER_HEADERS);
    }
    case TROVE__R_STATUS_PAGE:
        rc = trove__status_html(srv, &body);
        type = "text/html; charset=utf-8";
        break;
    case TROVE__R_STATUS:
        rc = trove__status_json(srv, &body);
        break;
    case TROVE__R_METRICS:
        rc = trove__status_metrics(srv, &body);
        type = "text/plain; version=0.0.4";
        break;
    case TROVE__R_LIVE:
    case TROVE__R_REPLAY:
        return trove__http_error(wsi, ps, 400, "bad_request",
                                 "this is a WebSocket: send an Upgrade: websocket request");
    default:
        return trove__api_start(w, wsi, ps);
    }
    if (rc != TROVE_OK) {
        trove_bytes_free(&body);
        return trove__http_error(wsi, ps, 500, "internal", "out of memory");
    }
    rc = trove__http_answer(wsi, ps, 200, type, body.ptr, body.len, NULL);
    trove_bytes_free(&body);
    return rc;
}

/* An upgrade to a WebSocket: the endpoint, the token and the Origin first. >0: refused
 * with an answer written. */
static int confirm_upgrade(struct web *w, struct lws *wsi)
{
    struct trove__api_req req; /* no session data yet: it comes with the upgrade */
    struct trove__api_error err;
    char path[TROVE__API_HEADER_MAX + 2], query[TROVE__API_QUERY_MAX + 2], origin[512] = "",
        host[256] = "";
    /* libwebsockets drops, without a word, a handshake with no Host or no key (or a key of
     * 128 bytes or more); RFC 6455 4.2.1 asks for a 400. */
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HOST) <= 0 ||
        lws_hdr_total_length(wsi, WSI_TOKEN_KEY) <= 0 ||
        lws_hdr_total_length(wsi, WSI_TOKEN_KEY) >= 128) {
        lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST,
                               "a WebSocket upgrade needs a Host and a Sec-WebSocket-Key");
        return 1;
    }
    if (request_of(wsi, path, sizeof path, query, sizeof query) < 0) {
        lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST, CUT_SHORT);
        return 1;
    }
    /* A bad parameter is told after the upgrade, as a viewer's error message; a path that
     * is not a WebSocket is refused here. */
    if ((trove__api_route(TROVE__GET, path, query, &req, &err) != 0 && err.status != 400) ||
        (err.status != 400 && req.route != TROVE__R_LIVE && req.route != TROVE__R_REPLAY) ||
        (err.status == 400 && strcmp(path, "/api/live") && strcmp(path, "/api/replay"))) {
        trove__log(w->srv, "upgrade refused: %s: %s", path, err.msg);
        lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, "no WebSocket here");
        return 1;
    }
    if (!authorized(w, wsi)) {
        lws_return_http_status(wsi, HTTP_STATUS_UNAUTHORIZED, "this service needs its token");
        return 1;
    }
    if (lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) < 0)
        origin[0] = 0;
    if (lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) < 0)
        host[0] = 0;
    if (!trove__api_origin_ok(origin[0] ? origin : NULL, host, w->srv->opt.allow_origin,
                              w->srv->opt.nallow_origin)) {
        lws_return_http_status(wsi, HTTP_STATUS_FORBIDDEN, "a foreign Origin");
        return 1;
    }
    if (atomic_load(&w->srv->stopping)) {
        lws_return_http_status(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, "shutting down");
        return 1;
    }
    return 0;
}

/* ---- viewers ---------------------------------------------------------------------------- */

static int is_loopback(const char *peer)
{
    return strncmp(peer, "127.", 4) == 0 || strcmp(peer, "::1") == 0 ||
           strncmp(peer, "::ffff:127.", 11) == 0;
}

/* The viewer's address and port, "ADDR:PORT" as /api/status promises (docs/serve.md), so
 * that a connection there can be told from the others of the same host; *loopback_out says
 * whether the address is loopback. */
static void view_peer(struct lws *wsi, char *peer, size_t cap, int *loopback_out)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    unsigned port = 0;
    size_t n;

    if (lws_get_peer_simple(wsi, peer, cap) == NULL)
        snprintf(peer, cap, "?");
    *loopback_out = is_loopback(peer);
    if (getpeername(lws_get_socket_fd(wsi), (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET)
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    else if (ss.ss_family == AF_INET6)
        port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    n = strlen(peer);
    if (port && n + 7 < cap)
        snprintf(peer + n, cap - n, ":%u", port);
}

static void view_error(struct trove__view *v, const char *fmt, const char *arg)
{
    snprintf(v->error, sizeof v->error, fmt, arg);
    v->closing = 2; /* send the error, then close with 1008 */
}

static struct trove__view *view_new(struct web *w, struct lws *wsi)
{
    struct trove__server *srv = w->srv;
    struct trove__view *v = trove__calloc(1, sizeof *v);
    struct trove__api_req req;
    struct trove__api_error err;
    char path[TROVE__API_HEADER_MAX + 2], query[TROVE__API_QUERY_MAX + 2];
    int loopback, state;

    if (!v)
        return NULL;
    v->wsi = wsi;
    view_peer(wsi, v->peer, sizeof v->peer, &loopback);
    pthread_mutex_lock(&srv->mu);
    v->id = ++srv->next_id;
    srv->viewers_total++;
    pthread_mutex_unlock(&srv->mu);
    v->next = srv->views;
    srv->views = v;
    if (request_of(wsi, path, sizeof path, query, sizeof query) < 0) {
        view_error(v, "%s", CUT_SHORT); /* refused at the upgrade already */
        return v;
    }
    if (trove__api_route(TROVE__GET, path, query, &req, &err) != 0) {
        view_error(v, "%s", err.msg);
        return v;
    }
    v->wire = req.wire ? req.wire
              : srv->opt.wire ? srv->opt.wire
              : loopback ? TROVE_WIRE_RAW
                                     : TROVE_WIRE_PACKED;
    snprintf(v->name, sizeof v->name, "%s", req.name);
    if (req.route == TROVE__R_REPLAY) { /* a stored capture, then the end */
        v->replay = 1;
        if (trove__history_replay(srv, v, req.name, req.from_ns, req.to_ns, req.speed) !=
            TROVE_OK)
            view_error(v, "%s", "starting the replay: out of memory");
        trove__log(srv, "replay %" PRIu64 " (%s) of capture %s: %s", v->id, v->peer, req.name,
                   trove_wire_format_name(v->wire));
        return v;
    }
    v->from_start = req.from_start;
    if (!(v->cap = trove__cap_join(srv, req.name, 0, 0, &state))) {
        view_error(v, "%s", "out of memory");
        return v;
    }
    /* Waiting for the capture to start: from=now is then from its first event. */
    v->waited = state == TROVE__CAP_WAITING || state == TROVE__CAP_OPENING;
    trove__log(srv, "viewer %" PRIu64 " (%s) of capture %s: %s from %s", v->id, v->peer,
               req.name, trove_wire_format_name(v->wire), v->from_start ? "start" : "now");
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

static int send_text(struct lws *wsi, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int send_text(struct lws *wsi, const char *fmt, ...)
{
    uint8_t buf[LWS_PRE + 600];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf((char *)buf + LWS_PRE, sizeof buf - LWS_PRE, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf - LWS_PRE)
        return -1;
    return lws_write(wsi, buf + LWS_PRE, (size_t)n, LWS_WRITE_TEXT) == n ? 0 : -1;
}

static int send_frame(struct lws *wsi, struct trove__view *v, struct trove__frame_buf *fb)
{
    int r = lws_write(wsi, fb->data, fb->len, LWS_WRITE_BINARY);

    v->sent_events += fb->events;
    v->sent_bytes += fb->len;
    trove__frame_buf_release(fb);
    return r < 0 ? -1 : 0;
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

/* GET /api/replay: the hello, the stored frames, the end. */
static int replay_write(struct lws *wsi, struct trove__view *v)
{
    struct trove__frame_buf *fb;
    int h;

    if (!v->hello_sent) {
        v->hello_sent = 1;
        if (send_text(wsi, "{\"type\":\"hello\",\"capture\":\"%s\",\"wire\":\"%s\","
                           "\"from\":\"replay\"}",
                      v->name, trove_wire_format_name(v->wire)))
            return -1;
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (v->end_sent) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, (unsigned char *)"end", 3);
        return -1;
    }
    h = trove__history_next(v, &fb);
    if (h == 1) {
        if (send_frame(wsi, v, fb))
            return -1;
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (h == 0)
        return 0;
    if (v->error[0]) {
        v->closing = 2;
        lws_callback_on_writable(wsi);
        return 0;
    }
    v->end_sent = 1;
    if (send_text(wsi, "{\"type\":\"end\",\"events\":%" PRIu64 "}", v->sent_events))
        return -1;
    lws_callback_on_writable(wsi);
    return 0;
}

/* One message for v, if it has one; 0, or -1 to close. */
static int view_write(struct web *w, struct lws *wsi, struct trove__view *v)
{
    struct trove__viewer_item it;
    struct trove__frame_buf *fb;
    int h, state;

    if (v->closing == 1) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_GOINGAWAY, (unsigned char *)"shutting down", 13);
        return -1;
    }
    if (v->closing == 2) {
        char e[2 * TROVE__ERROR_MAX];
        json_escape(v->error, e, sizeof e);
        v->closing = 3;
        if (send_text(wsi, "{\"type\":\"error\",\"message\":\"%s\"}", e))
            return -1;
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (v->closing == 3) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, (unsigned char *)"bad request",
                         11);
        return -1;
    }
    if (v->replay)
        return replay_write(wsi, v);
    pthread_mutex_lock(&v->cap->mu);
    state = v->cap->state;
    if (state == TROVE__CAP_FAILED && !v->end_sent)
        snprintf(v->error, sizeof v->error, "capture %s failed: %.300s", v->cap->name,
                 v->cap->error);
    pthread_mutex_unlock(&v->cap->mu);
    if (state == TROVE__CAP_FAILED && !v->end_sent) { /* it will not start: say why */
        v->closing = 2;
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (!v->fv) {
        if (trove__view_join(w->srv, v) != TROVE_OK) {
            view_error(v, "%s", "joining the capture: out of memory");
            lws_callback_on_writable(wsi);
            return 0;
        }
        if (!v->fv)
            return 0; /* not live yet */
    }
    if (!v->hello_sent) {
        v->hello_sent = 1;
        if (send_text(wsi, "{\"type\":\"hello\",\"capture\":\"%s\",\"wire\":\"%s\",\"from\":\"%s\"}",
                      v->cap->name, trove_wire_format_name(v->wire),
                      v->from_start ? "start" : "now"))
            return -1;
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (v->hist) {
        h = trove__history_next(v, &fb);
        if (h == 1) {
            if (send_frame(wsi, v, fb))
                return -1;
            lws_callback_on_writable(wsi);
            return 0;
        }
        if (h == 0)
            return 0; /* the history thread wakes us */
        if (v->error[0]) { /* the history failed: say so, and close */
            v->closing = 2;
            lws_callback_on_writable(wsi);
            return 0;
        }
        /* Live frames dropped while the history went: read them back rather than lose
         * them (history.c), unless this viewer has caught up too often already. */
        if (v->catchups < TROVE__CATCHUP_MAX && trove__viewer_has_gap(v->fv)) {
            if (trove__view_catch_up(w->srv, v) != TROVE_OK)
                view_error(v, "%s", "catching up with the capture: out of memory");
            lws_callback_on_writable(wsi);
            return 0;
        }
        trove__history_stop(v); /* over: live from here */
    }
    if (trove__viewer_next(v->fv, &it)) {
        if (!it.frame) {
            if (send_text(wsi, "{\"type\":\"gap\",\"events\":%" PRIu64 ",\"batches\":%" PRIu64 "}",
                          it.gap_events, it.gap_batches))
                return -1;
        } else if (send_frame(wsi, v, it.frame)) {
            return -1;
        }
        lws_callback_on_writable(wsi);
        return 0;
    }
    pthread_mutex_lock(&v->cap->mu);
    state = v->cap->state;
    v->end_events = v->cap->published;
    pthread_mutex_unlock(&v->cap->mu);
    if ((state == TROVE__CAP_ENDED || state == TROVE__CAP_FAILED) && !v->end_sent) {
        /* Everything published is queued before the state changes: the queue is drained. */
        if (trove__viewer_next(v->fv, &it)) {
            if (it.frame)
                trove__frame_buf_release(it.frame);
            lws_callback_on_writable(wsi); /* not yet: came in meanwhile */
            return 0;
        }
        v->end_sent = 1;
        if (send_text(wsi, "{\"type\":\"end\",\"events\":%" PRIu64 "}", v->end_events))
            return -1;
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (v->end_sent) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, (unsigned char *)"end", 3);
        return -1;
    }
    return 0;
}

/* ---- the protocol ---------------------------------------------------------------------- */

/* May a peer close with this body (RFC 6455 5.5.1, 7.4)? Nothing, or a code a peer may send
 * (1000-1003, 1007-1011, 3000-4999) and a UTF-8 reason. libwebsockets echoes any close,
 * a one-byte one too (which is no close frame at all), so the service checks. */
static int close_ok(const uint8_t *b, size_t n)
{
    unsigned code;

    if (n == 0)
        return 1;
    if (n == 1)
        return 0;
    code = (unsigned)b[0] << 8 | b[1];
    if (!((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
          (code >= 3000 && code <= 4999)))
        return 0;
    return trove__utf8_valid_prefix(b + 2, n - 2) == n - 2;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    struct web *w = lws_context_user(lws_get_context(wsi));
    struct pss *ps = user;

    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return http_request(w, wsi, ps);
    case LWS_CALLBACK_HTTP_BODY:
        return trove__api_body(w, wsi, ps, in, len);
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        return trove__api_body_done(w, wsi, ps);
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return trove__http_writeable(w, wsi, ps);
    case LWS_CALLBACK_TIMER: /* an export waiting for its writer, a profile being made */
        lws_callback_on_writable(wsi);
        return 0;
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
        if (ps)
            trove__api_drop(w, ps);
        return 0;
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return confirm_upgrade(w, wsi);
    case LWS_CALLBACK_ESTABLISHED:
        if (!(ps->v = view_new(w, wsi)))
            return -1;
        lws_callback_on_writable(wsi);
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        /* A close is out (ours, or the library's for a viewer's protocol error): nothing may
         * follow it (RFC 6455 5.5.1), and libwebsockets would still send what we write. */
        if (lws_get_close_length(wsi) > 0)
            return 0;
        return ps->v ? view_write(w, wsi, ps->v) : 0;
    case LWS_CALLBACK_RECEIVE:
        return 0; /* viewers have nothing to say yet */
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        if (close_ok(in, len))
            return 0; /* echoed */
        lws_close_reason(wsi, LWS_CLOSE_STATUS_PROTOCOL_ERR, (unsigned char *)"bad close", 9);
        return -1;
    case LWS_CALLBACK_CLOSED:
        if (ps->v)
            view_free(w, ps->v);
        ps->v = NULL;
        return 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        /* Something happened elsewhere: every viewer may have something to send. */
        if (w) {
            for (struct trove__view *v = w->srv->views; v; v = v->next)
                lws_callback_on_writable(v->wsi);
            trove__api_wake_waiting(w);
        }
        return 0;
    default:
        return 0;
    }
}

static const struct lws_protocols protocols[] = {
    {"trove", callback, sizeof(struct pss), 4096, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}};

/* Every 100 ms: the stop's progress (lws would otherwise sleep until a socket speaks). */
static void on_tick(lws_sorted_usec_list_t *sul)
{
    struct web *w = lws_container_of(sul, struct web, tick);
    struct trove__server *srv = w->srv;

    if (atomic_load(&srv->store_done)) {
        uint64_t now = trove__now_ns();
        if (!w->stop_since) {
            w->stop_since = now;
            for (struct trove__view *v = srv->views; v; v = v->next) {
                if (!v->closing)
                    v->closing = 1;
                lws_callback_on_writable(v->wsi);
            }
        }
        if (!srv->views || now - w->stop_since > STOP_GRACE_NS)
            w->exit = 1;
    }
    trove__api_reap(w, 0);
    lws_sul_schedule(w->ctx, 0, &w->tick, on_tick, 100 * LWS_US_PER_MS);
}

int trove__web_open(struct trove__server *srv, struct trove_diag *diag)
{
    const char *listen = srv->opt.listen && *srv->opt.listen ? srv->opt.listen
                                                             : TROVE_SERVE_LISTEN_DEFAULT;
    struct lws_context_creation_info info;
    struct sockaddr_storage ss;
    socklen_t slen;
    char host[64];
    struct web *w;
    int port, fd, one = 1;

    if (trove__parse_addr(listen, &ss, &slen) != TROVE_OK)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "serve: --listen %s is not ADDR:PORT",
                          listen);
    /* lws says little when it cannot bind: try it first, for a clear message. */
    if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return TROVE_FAIL(diag, -errno, 0, "serve: a socket: %s", strerror(errno));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, slen) != 0) {
        int e = errno;
        close(fd);
        return TROVE_FAIL(diag, -e, 0, "serve: listening on %s: %s%s", listen, strerror(e),
                          e == EADDRINUSE ? " (another service? pick one with --listen)" : "");
    }
    close(fd);
    if (ss.ss_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    } else {
        host[0] = '[';
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host + 1, sizeof host - 2);
        strcat(host, "]");
        port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    if (!(w = trove__calloc(1, sizeof *w)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    w->srv = srv;
    if (srv->opt.token_file) { /* its first line */
        FILE *f = fopen(srv->opt.token_file, "r");
        char line[512];
        size_t n;
        if (!f || !fgets(line, sizeof line, f)) {
            int e = errno;
            if (f)
                fclose(f);
            free(w);
            return TROVE_FAIL(diag, f ? TROVE_ERR_INVALID : -e, 0, "serve: --token-file %s: %s",
                              srv->opt.token_file, f ? "empty" : strerror(e));
        }
        fclose(f);
        n = strcspn(line, "\r\n");
        line[n] = 0;
        if (n < 16 || n > 256 || strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                               "0123456789-._~+/=") != n) {
            free(w);
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                              "serve: --token-file %s: the token must be 16 to 256 characters "
                              "of A-Z a-z 0-9 - . _ ~ + / = (try: head -c 32 /dev/urandom | "
                              "base64)",
                              srv->opt.token_file);
        }
        if (!(w->token = trove__strdup(line))) {
            free(w);
            return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        }
        w->token_len = n;
        srv->token = w->token;
        srv->token_len = n;
    } else if (!(ss.ss_family == AF_INET &&
                 (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127) &&
               !(ss.ss_family == AF_INET6 &&
                 IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr))) {
        free(w);
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "serve: --listen %s is not a loopback address: give --token-file "
                          "FILE, whose token every request must then carry",
                          listen);
    }
    log_srv = srv;
    lws_set_log_level(LLL_ERR, lws_log);
    memset(&info, 0, sizeof info);
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_DISABLE_IPV6 * 0;
    info.user = w;
    info.port = CONTEXT_PORT_NO_LISTEN;
    if (!(w->ctx = lws_create_context(&info))) {
        free(w->token);
        free(w);
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "serve: libwebsockets would not start");
    }
    memset(&info, 0, sizeof info);
    info.port = port;
    info.iface = ss.ss_family == AF_INET6 ? NULL : host;
    info.protocols = protocols;
    info.vhost_name = "trove";
    info.options = ss.ss_family == AF_INET ? LWS_SERVER_OPTION_DISABLE_IPV6 : 0;
    info.keepalive_timeout = 5;
    if (!(w->vh = lws_create_vhost(w->ctx, &info))) {
        lws_context_destroy(w->ctx);
        free(w->token);
        free(w);
        return TROVE_FAIL(diag, -EADDRINUSE, 0, "serve: listening on %s failed", listen);
    }
    port = lws_get_vhost_listen_port(w->vh);
    snprintf(srv->url, sizeof srv->url, "http://%s:%d/", host, port);
    srv->lws_ctx = w->ctx;
    srv->wake = wake;
    lws_sul_schedule(w->ctx, 0, &w->tick, on_tick, 100 * LWS_US_PER_MS);
    return TROVE_OK;
}

void trove__web_run(struct trove__server *srv)
{
    struct web *w = lws_context_user(srv->lws_ctx);

    while (!w->exit)
        if (lws_service(w->ctx, 0) < 0)
            break;
}

void trove__web_close(struct trove__server *srv)
{
    struct web *w;

    if (!srv->lws_ctx)
        return;
    w = lws_context_user(srv->lws_ctx);
    srv->lws_ctx = NULL;
    lws_context_destroy(w->ctx); /* closes what is left; CLOSED frees each viewer */
    while (srv->views)
        view_free(w, srv->views);
    trove__api_reap(w, 1); /* profiles still being made for connections gone */
    log_srv = NULL;
    free(w->token);
    free(w);
}
