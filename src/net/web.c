/*
 * web.c: the service's HTTP and WebSocket side, on libwebsockets (docs/serve.md,
 * "Viewers" and "Status"). One thread runs the lws loop and is the only one to call lws;
 * the others wake it with lws_cancel_service (trove__wake_web), and it then asks to write
 * to every viewer. A viewer's writable callback sends one message: the hello, then its
 * history (from=start), then its fan-out queue — a gap report or one wire frame per binary
 * message — and at the end of the capture {"type":"end"}.
 */
#include "serve_internal.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <libwebsockets.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

_Static_assert(LWS_PRE <= TROVE__FRAME_HEADROOM, "a frame's headroom must hold LWS_PRE");

#define HTTP_CHUNK 32768
#define STOP_GRACE_NS (3 * 1000000000ull) /* viewers that do not close by then are dropped */

struct web {
    struct trove__server *srv;
    struct lws_context *ctx;
    struct lws_vhost *vh;
    lws_sorted_usec_list_t tick;
    uint64_t stop_since;
    int exit;
};

/* What a connection holds: an HTTP answer, or a viewer. */
struct pss {
    struct trove__view *v;
    uint8_t *body; /* LWS_PRE bytes, then the answer */
    size_t len, sent;
};

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

static int http_answer(struct lws *wsi, struct pss *ps, unsigned status, const char *type,
                       struct trove_bytes *body)
{
    uint8_t hdr[LWS_PRE + 1024], *start = hdr + LWS_PRE, *p = start, *end = hdr + sizeof hdr - 1;

    if (!(ps->body = trove__malloc(LWS_PRE + body->len + 1)))
        return -1;
    memcpy(ps->body + LWS_PRE, body->ptr, body->len);
    ps->len = body->len;
    ps->sent = 0;
    if (lws_add_http_common_headers(wsi, status, type, (lws_filepos_t)body->len, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
                                     (const unsigned char *)"no-store", 8, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    lws_callback_on_writable(wsi);
    return 0;
}

static int http_route(struct lws *wsi, struct trove__server *srv, struct pss *ps, const char *uri)
{
    struct trove_bytes body = {0};
    const char *type = "application/json";
    unsigned status = 200;
    int rc = TROVE_OK, r;

    if (strcmp(uri, "/") == 0 || strcmp(uri, "/index.html") == 0) {
        rc = trove__status_html(srv, &body);
        type = "text/html; charset=utf-8";
    } else if (strcmp(uri, "/api/status") == 0) {
        rc = trove__status_json(srv, &body);
    } else if (strcmp(uri, "/metrics") == 0) {
        rc = trove__status_metrics(srv, &body);
        type = "text/plain; version=0.0.4";
    } else if (strcmp(uri, "/api/live") == 0) {
        status = 400;
        rc = trove_bytes_append(&body, "{\"error\":\"/api/live is a WebSocket: send an "
                                       "Upgrade: websocket request\"}\n", 76);
    } else {
        status = 404;
        rc = trove_bytes_append(&body, "{\"error\":\"no such page\"}\n", 25);
    }
    if (rc != TROVE_OK) {
        trove_bytes_free(&body);
        return lws_return_http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, NULL) ? -1 : 0;
    }
    r = http_answer(wsi, ps, status, type, &body);
    trove_bytes_free(&body);
    return r;
}

static int http_write(struct lws *wsi, struct pss *ps)
{
    size_t n = ps->len - ps->sent;
    int last;

    if (!ps->body)
        return 0;
    if (n > HTTP_CHUNK)
        n = HTTP_CHUNK;
    last = ps->sent + n == ps->len;
    /* The bytes before this chunk were sent already: lws may use them as its headroom. */
    if (lws_write(wsi, ps->body + LWS_PRE + ps->sent, n,
                  last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != (int)n)
        return -1;
    ps->sent += n;
    if (!last) {
        lws_callback_on_writable(wsi);
        return 0;
    }
    free(ps->body);
    ps->body = NULL;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* ---- viewers ---------------------------------------------------------------------------- */

static int is_loopback(const char *peer)
{
    return strncmp(peer, "127.", 4) == 0 || strcmp(peer, "::1") == 0 ||
           strncmp(peer, "::ffff:127.", 11) == 0;
}

/* The value of query argument `name` ("capture=") into out; 0 if absent. lws gives the
 * "name=value" in its buffer and a pointer to the value. */
static int urlarg(struct lws *wsi, const char *name, char *out, size_t cap)
{
    char buf[TROVE_VOLUME_NAME_MAX + 64];
    const char *v = lws_get_urlarg_by_name(wsi, name, buf, (int)sizeof buf);

    if (!v)
        return 0;
    snprintf(out, cap, "%s", v);
    return 1;
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
    char cap[TROVE_VOLUME_NAME_MAX + 2] = "", wire[16] = "", from[16] = "";
    struct trove_diag diag = {0};

    if (!v)
        return NULL;
    v->wsi = wsi;
    if (lws_get_peer_simple(wsi, v->peer, sizeof v->peer) == NULL)
        snprintf(v->peer, sizeof v->peer, "?");
    pthread_mutex_lock(&srv->mu);
    v->id = ++srv->next_id;
    srv->viewers_total++;
    pthread_mutex_unlock(&srv->mu);
    v->next = srv->views;
    srv->views = v;
    if (!urlarg(wsi, "capture=", cap, sizeof cap)) {
        view_error(v, "%s", "no capture: ask for /api/live?capture=NAME");
        return v;
    }
    if (trove_volume_name_check(cap, &diag) != TROVE_OK) {
        view_error(v, "capture: %s", diag.msg);
        return v;
    }
    if (urlarg(wsi, "wire=", wire, sizeof wire) && strcmp(wire, "auto") != 0) {
        v->wire = trove_wire_format_parse(wire);
        if (v->wire < TROVE_WIRE_RAW || v->wire > TROVE_WIRE_DEFLATE) {
            view_error(v, "wire=%s is not auto, raw, packed or deflate", wire);
            return v;
        }
    } else if (srv->opt.wire) {
        v->wire = srv->opt.wire;
    } else {
        v->wire = is_loopback(v->peer) ? TROVE_WIRE_RAW : TROVE_WIRE_PACKED;
    }
    if (urlarg(wsi, "from=", from, sizeof from)) {
        if (strcmp(from, "start") == 0)
            v->from_start = 1;
        else if (strcmp(from, "now") != 0) {
            view_error(v, "from=%s is not start or now", from);
            return v;
        }
    }
    if (!(v->cap = trove__cap_get(srv, cap, 1))) {
        view_error(v, "%s", "out of memory");
        return v;
    }
    pthread_mutex_lock(&v->cap->mu);
    v->cap->viewers++;
    /* Waiting for the capture to start: from=now is then from its first event. */
    v->waited = v->cap->state == TROVE__CAP_WAITING || v->cap->state == TROVE__CAP_OPENING;
    pthread_mutex_unlock(&v->cap->mu);
    trove__log(srv, "viewer %" PRIu64 " (%s) of capture %s: %s from %s", v->id, v->peer, cap,
               trove_wire_format_name(v->wire), v->from_start ? "start" : "now");
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

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    struct web *w = lws_context_user(lws_get_context(wsi));
    struct pss *ps = user;
    char uri[128];

    (void)len;
    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return http_route(wsi, w->srv, ps, in ? (const char *)in : "/");
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return http_write(wsi, ps);
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
        if (ps) {
            free(ps->body);
            ps->body = NULL;
        }
        return 0;
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        if (lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) <= 0 ||
            strcmp(uri, "/api/live") != 0)
            return 1; /* no WebSocket anywhere else */
        if (atomic_load(&w->srv->stopping))
            return 1;
        return 0;
    case LWS_CALLBACK_ESTABLISHED:
        if (!(ps->v = view_new(w, wsi)))
            return -1;
        lws_callback_on_writable(wsi);
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return ps->v ? view_write(w, wsi, ps->v) : 0;
    case LWS_CALLBACK_RECEIVE:
        return 0; /* viewers have nothing to say yet */
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
    log_srv = srv;
    lws_set_log_level(LLL_ERR, lws_log);
    memset(&info, 0, sizeof info);
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_DISABLE_IPV6 * 0;
    info.user = w;
    info.port = CONTEXT_PORT_NO_LISTEN;
    if (!(w->ctx = lws_create_context(&info))) {
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
    log_srv = NULL;
    free(w);
}
