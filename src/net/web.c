/*
 * web.c: the service's HTTP and WebSocket side (docs/serve.md, "Viewers", "The HTTP API"
 * and "Who may use it"), on one thread with one epoll set: the listening socket, an eventfd
 * the other threads write to wake it (trove__wake_web), export pipes, and the connections
 * (conn.h). This file accepts them under the limits, reads each request's head (http.h),
 * holds it to the guards — the Host names this service (DNS rebinding), the token, and for
 * anything that changes the store an Origin that is the service's own (api.h) — and hands
 * it to web_api.c (HTTP answers) or web_view.c (WebSocket viewers). Every 100 ms a tick
 * closes what timed out and drives the stop.
 *
 * Descriptors. The service's other threads need descriptors that web load must never take
 * (a commit that fails with EMFILE would fail a live capture): at the start the soft limit
 * is raised to the hard one, and the connection limit is what remains after a reserve for
 * the store, the producers and the jobs the caps allow (replays, exports, uploads,
 * profiles), each at its worst. So a flood of connections is refused or takes the place of
 * other idle ones; it never reaches the reserve.
 */
#define _GNU_SOURCE /* accept4 */

#include "web_api.h"
#include "assets.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define TICK_NS (100 * 1000000ull)
#define STOP_GRACE_NS (3 * 1000000000ull) /* viewers that do not close by then are dropped */
#define ACCEPT_BATCH 64
#define ACCEPT_PAUSE_NS (100 * 1000000ull)
#define EVENTS 256

#define CONNECTIONS_DEFAULT 1024u
#define CONNECTIONS_MIN 16u
#define IDLE_TIMEOUT_DEFAULT_MS 30000u
#define REPLAYS_DEFAULT 6u
#define EXPORTS_DEFAULT 2u
#define UPLOADS_DEFAULT 2u
/* The reserve, in descriptors: the store thread's (objects, directories, the put pool's,
 * S3's connections), and each job at its worst (a replay's history and stream: the store's
 * files and the prefetchers'; an export's pipe and its reads; an upload's temp file; a
 * profile's reads), and the web thread's own (epoll, eventfd, listener). */
#define FDS_STORE 128u
#define FDS_REPLAY 16u
#define FDS_EXPORT 16u
#define FDS_UPLOAD 2u
#define FDS_PROFILE 8u
#define FDS_WEB 8u

/* The viewer's files: nothing but this service may load them or be loaded by them. */
#define VIEWER_HEADERS                                                                        \
    "content-security-policy: default-src 'self'; img-src 'self' data: blob:; "             \
    "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'\r\n"                          \
    "x-content-type-options: nosniff\r\n"

/* ---- descriptors ------------------------------------------------------------------------ */

static unsigned open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    unsigned n = 0;

    if (!d)
        return 64; /* a guess on the safe side */
    while (readdir(d))
        n++;
    closedir(d);
    return n > 2 ? n - 2 : 0; /* "." and ".." (the DIR's own descriptor stays counted) */
}

/* Raise the soft limit to the hard one; the limit then. */
static uint64_t raise_fd_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit want = rl;
        want.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &want) == 0)
            rl = want;
    }
    return rl.rlim_cur == RLIM_INFINITY ? (uint64_t)1 << 20 : (uint64_t)rl.rlim_cur;
}

/* ---- guards ----------------------------------------------------------------------------- */

/* Does the request carry the token (or need none)? *bearer: it came as a bearer token. */
static int authorized(struct web *w, struct pss *ps, int *bearer)
{
    const struct trove__http_head *h = &ps->c.head;
    char auth[512], cookie[TROVE__HTTP_LINE_MAX + 1];

    *bearer = 0;
    if (!w->token)
        return 1;
    if (trove__http_copy(h->f[TROVE__H_AUTHORIZATION], auth, sizeof auth) != 0)
        auth[0] = 0;
    if (trove__http_copy(h->f[TROVE__H_COOKIE], cookie, sizeof cookie) != 0)
        cookie[0] = 0;
    return trove__api_token_ok(w->token, w->token_len, auth[0] ? auth : NULL,
                               cookie[0] ? cookie : NULL, w->cookie, bearer);
}

/* The Origin, NULL when absent ("null" is an Origin: a sandboxed page's, never allowed). */
static const char *origin_of(const struct pss *ps, char *buf, size_t cap)
{
    struct trove__http_value v = ps->c.head.f[TROVE__H_ORIGIN];
    if (!v.v)
        return NULL;
    if (trove__http_copy(v, buf, cap) != 0)
        snprintf(buf, cap, "?"); /* too long to be allowed */
    return buf;
}

/* May this request change something? 0, or an answer of 403 was given (-1: gone). */
static int change_guard(struct web *w, struct pss *ps, int bearer, int *refused)
{
    const struct trove__http_head *h = &ps->c.head;
    struct trove__api_change r;
    char origin[512], site[64], type[256], msg[300];
    int st;

    *refused = 0;
    memset(&r, 0, sizeof r);
    r.method = h->route_method;
    r.origin = origin_of(ps, origin, sizeof origin);
    if (trove__http_copy(h->f[TROVE__H_SEC_FETCH_SITE], site, sizeof site) == 0 && h->f[TROVE__H_SEC_FETCH_SITE].v)
        r.fetch_site = site;
    if (trove__http_copy(h->f[TROVE__H_CONTENT_TYPE], type, sizeof type) == 0 &&
        h->f[TROVE__H_CONTENT_TYPE].v)
        r.content_type = type;
    r.x_trove = h->f[TROVE__H_X_TROVE].v != NULL;
    r.token_required = w->token != NULL;
    r.bearer = bearer;
    st = trove__api_change_ok(&r, &w->guard.hosts, w->guard.allow_origin,
                              w->guard.nallow_origin, msg, sizeof msg);
    if (!st)
        return 0;
    *refused = 1;
    trove__log(w->srv, "refused %s %.*s from %s: %s", h->method, (int)h->target_len, h->target,
               ps->c.peer, msg);
    return trove__http_error(ps, (unsigned)st, "forbidden", msg);
}

/* ---- a request -------------------------------------------------------------------------- */

/* The target's path and query as NUL-terminated strings (the query may be NULL). */
static void split_target(const struct trove__http_head *h, char *path, size_t pcap, char *query,
                         size_t qcap, int *has_query)
{
    size_t p = 0;

    while (p < h->target_len && h->target[p] != '?')
        p++;
    snprintf(path, pcap, "%.*s", (int)p, h->target);
    *has_query = p < h->target_len;
    if (*has_query)
        snprintf(query, qcap, "%.*s", (int)(h->target_len - p - 1), h->target + p + 1);
    else
        query[0] = 0;
}

static int is_upgrade(const struct trove__http_head *h)
{
    return trove__http_has_token(h->f[TROVE__H_UPGRADE], "websocket");
}

/* The WebSocket upgrade's guards (route, token, Origin, the stop); then web_view.c. */
static int websocket(struct web *w, struct pss *ps, const char *path)
{
    char origin[512];
    int bearer;

    if (strcmp(path, "/api/live") != 0 && strcmp(path, "/api/replay") != 0) {
        trove__log(w->srv, "upgrade refused: %s: no WebSocket there", path);
        return trove__http_error(ps, 404, "not_found",
                                 "no WebSocket here (/api/live and /api/replay are)");
    }
    if (!authorized(w, ps, &bearer))
        return trove__http_error(ps, 401, "unauthorized", "this service needs its token");
    if (!trove__api_origin_ok(origin_of(ps, origin, sizeof origin), &w->guard.hosts,
                              w->guard.allow_origin, w->guard.nallow_origin)) {
        trove__log(w->srv, "upgrade refused: a foreign Origin %s", origin);
        return trove__http_error(ps, 403, "forbidden",
                                 "a foreign Origin: allow it with --allow-origin");
    }
    if (atomic_load(&w->srv->stopping))
        return trove__http_busy(ps, "the service is shutting down");
    return trove__ws_upgrade(w, ps);
}

static int request(struct web *w, struct pss *ps)
{
    const struct trove__http_head *h = &ps->c.head;
    struct trove__server *srv = w->srv;
    struct trove__api_error err;
    struct trove_bytes body = {0};
    char path[TROVE__HTTP_LINE_MAX + 1], query[TROVE__HTTP_LINE_MAX + 1], msg[300];
    const char *type = "application/json";
    int has_query, bearer, refused, rc;

    if (!h->f[TROVE__H_HOST].v) {
        if (h->minor >= 1)
            return trove__http_error(ps, 400, "bad_request",
                                     "an HTTP/1.1 request needs a Host header");
    } else if (!trove__api_host_ok(h->f[TROVE__H_HOST].v, h->f[TROVE__H_HOST].n,
                                   &w->guard.hosts)) {
        snprintf(msg, sizeof msg,
                 "Host %.*s is not a name of this service (its address, localhost, or one "
                 "given with --allow-host)",
                 (int)(h->f[TROVE__H_HOST].n > 100 ? 100 : h->f[TROVE__H_HOST].n),
                 h->f[TROVE__H_HOST].v);
        trove__log(srv, "refused %s from %s: %s", h->method, ps->c.peer, msg);
        return trove__http_error(ps, 400, "bad_request", msg);
    }
    split_target(h, path, sizeof path, query, sizeof query, &has_query);
    if (is_upgrade(h))
        return websocket(w, ps, path);
    if (trove__api_route(h->route_method, path, has_query ? query : NULL, &ps->req, &err) != 0)
        return trove__http_error(ps, (unsigned)err.status, err.code, err.msg);
    if (ps->req.route != TROVE__R_LOGIN && !authorized(w, ps, &bearer)) {
        const struct trove__web_asset *login = trove__web_asset_find("login.html", NULL);
        /* A browser opening the viewer gets a page that says how to sign in. */
        if (login && (ps->req.route == TROVE__R_INDEX || ps->req.route == TROVE__R_STATUS_PAGE))
            return trove__http_answer(ps, 401, login->type, login->data, login->len,
                                      VIEWER_HEADERS);
        return trove__http_error(ps, 401, "unauthorized",
                                 "this service needs its token: Authorization: Bearer TOKEN, "
                                 "or GET /login?token=TOKEN in a browser");
    }
    if (ps->req.route == TROVE__R_LOGIN)
        bearer = 0;
    if (ps->req.route == TROVE__R_IMPORT || ps->req.route == TROVE__R_DELETE ||
        ps->req.route == TROVE__R_LOGIN) {
        rc = change_guard(w, ps, bearer, &refused);
        if (refused)
            return rc;
    }
    switch (ps->req.route) {
    case TROVE__R_INDEX:
    case TROVE__R_ASSET: { /* from the embedded table only: never a file */
        const struct trove__web_asset *a = &trove__web_assets[ps->req.asset];
        return trove__http_answer(ps, 200, a->type, a->data, a->len, VIEWER_HEADERS);
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
        return trove__http_error(ps, 400, "bad_request",
                                 "this is a WebSocket: send an Upgrade: websocket request");
    default:
        return trove__api_start(w, ps);
    }
    if (rc != TROVE_OK) {
        trove_bytes_free(&body);
        return trove__http_error(ps, 500, "internal", "out of memory");
    }
    rc = trove__http_answer(ps, 200, type, body.ptr, body.len, NULL);
    trove_bytes_free(&body);
    return rc;
}

/* ---- reading ---------------------------------------------------------------------------- */

static void read_head(struct web *w, struct pss *ps, uint64_t now)
{
    struct trove__conn *c = &ps->c;
    struct trove__http_fail f;
    ssize_t n;
    int r;

    if (!c->in && !(c->in = trove__malloc(TROVE__HTTP_HEAD_MAX + 1))) {
        trove__conn_close(c);
        return;
    }
    n = recv(c->fd, c->in + c->in_len, TROVE__HTTP_HEAD_MAX - c->in_len, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) { /* gone before its request was whole */
        trove__conn_close(c);
        return;
    }
    c->in_len += (size_t)n;
    r = trove__http_scan(&c->scan, c->in, c->in_len, &c->head, &f);
    if (r == 0)
        return;
    ps->state = TROVE__PS_ANSWER;
    trove__conn_list(c, TROVE__LIST_NONE, now);
    if (r < 0) {
        trove__log(w->srv, "refused a request from %s: %s", c->peer, f.msg);
        trove__http_error(ps, f.status, f.code, f.msg);
        return;
    }
    request(w, ps);
}

static void conn_event(struct web *w, struct pss *ps, uint32_t events, uint64_t now)
{
    struct trove__conn *c = &ps->c;

    if (c->dead)
        return;
    if (events & (EPOLLHUP | EPOLLERR)) { /* reset, or both ways shut: nothing gets through */
        trove__conn_close(c);
        return;
    }
    if (events & EPOLLIN) {
        if (c->list == TROVE__LIST_LINGER || c->ending)
            trove__conn_discard(c);
        else if (ps->state == TROVE__PS_HEAD)
            read_head(w, ps, now);
        else if (ps->state == TROVE__PS_BODY)
            trove__api_body(w, ps, NULL, 0);
        else if (ps->state == TROVE__PS_WS)
            trove__ws_read(w, ps);
        else
            trove__conn_discard(c);
    }
    if (!c->dead && (events & EPOLLOUT))
        trove__conn_pump(c, now);
}

/* ---- accepting -------------------------------------------------------------------------- */

static void pss_closed(struct trove__conn *c)
{
    struct pss *ps = (struct pss *)c;

    trove__ws_drop(ps->w, ps);
    trove__api_drop(ps->w, ps);
    free(ps);
}

/* Over every limit and with nothing to make room: a 503, best effort, and closed. */
static void refuse(int fd)
{
    static const char body[] = "{\"error\":\"the service has as many connections as it takes; "
                               "try again shortly\",\"code\":\"unavailable\"}\n";
    char a[512];
    size_t n = trove__http_answer_head(a, sizeof a - sizeof body, 503, "application/json",
                                       sizeof body - 1, "retry-after: 1\r\n");

    memcpy(a + n, body, sizeof body - 1);
    if (n && send(fd, a, n + sizeof body - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        ; /* best effort */
    }
    close(fd);
}

static void listen_on(struct web *w, int on)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = &w->listen;
    epoll_ctl(w->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, w->listen.fd, &ev);
}

static void accept_some(struct web *w, uint64_t now)
{
    for (int k = 0; k < ACCEPT_BATCH; k++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        struct pss *ps;
        uint64_t id;
        int fd = accept4(w->listen.fd, (struct sockaddr *)&ss, &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* Out of descriptors after all (another part of the process?): take no
                 * connection for a while rather than spin on the listener. */
                trove__log(w->srv, "web: accepting: %s; pausing for 100 ms", strerror(errno));
                listen_on(w, 0);
                w->accept_paused = now + ACCEPT_PAUSE_NS;
            }
            return;
        }
        if (trove__conns_admit(&w->conns, &ss) != 0) {
            refuse(fd);
            continue;
        }
        if (!(ps = trove__calloc(1, sizeof *ps))) {
            close(fd);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ps->w = w;
        ps->state = TROVE__PS_HEAD;
        ps->ifd = -1;
        ps->c.closed = pss_closed;
        pthread_mutex_lock(&w->srv->mu);
        id = ++w->srv->next_id;
        pthread_mutex_unlock(&w->srv->mu);
        if (trove__conn_start(&w->conns, &ps->c, fd, &ss, id, now) != TROVE_OK) {
            close(fd);
            free(ps);
        }
    }
}

/* ---- the loop --------------------------------------------------------------------------- */

static void tick(struct web *w, uint64_t now)
{
    struct trove__server *srv = w->srv;

    trove__conns_expire(&w->conns, now);
    if (w->accept_paused && now >= w->accept_paused) {
        w->accept_paused = 0;
        listen_on(w, 1);
    }
    if (atomic_load(&srv->store_done)) {
        if (!w->stop_since) {
            w->stop_since = now;
            trove__ws_stop(w);
        }
        if (!srv->views || now - w->stop_since > STOP_GRACE_NS)
            w->exit = 1;
    }
    trove__api_reap(w, 0);
}

void trove__web_run(struct trove__server *srv)
{
    struct web *w = srv->web;
    struct epoll_event ev[EVENTS];

    w->next_tick = trove__now_ns() + TICK_NS;
    while (!w->exit) {
        uint64_t now = trove__now_ns();
        int timeout = now >= w->next_tick ? 0 : (int)((w->next_tick - now + 999999) / 1000000);
        int n = epoll_wait(w->epfd, ev, EVENTS, timeout);

        if (n < 0 && errno != EINTR) {
            trove__log(srv, "web: epoll_wait: %s", strerror(errno));
            break;
        }
        now = trove__now_ns();
        for (int i = 0; i < n; i++) {
            int tag = *(const int *)ev[i].data.ptr;
            if (tag == TROVE__EV_LISTEN) {
                accept_some(w, now);
            } else if (tag == TROVE__EV_WAKE) {
                uint64_t v;
                if (read(w->wake.fd, &v, sizeof v) < 0) {
                    ; /* nothing pending: woken by a spurious readiness */
                }
                trove__ws_wake(w);
                trove__api_wake_waiting(w);
            } else if (tag == TROVE__EV_PIPE) {
                trove__api_export_ready(w, ev[i].data.ptr);
            } else {
                conn_event(w, (struct pss *)ev[i].data.ptr, ev[i].events, now);
            }
        }
        trove__conns_reap(&w->conns);
        if (now >= w->next_tick) {
            now = trove__now_ns();
            tick(w, now);
            trove__conns_reap(&w->conns);
            w->next_tick = now + TICK_NS;
        }
    }
}

/* ---- opening and closing ---------------------------------------------------------------- */

static int load_token(struct web *w, const char *path, struct trove_diag *diag)
{
    FILE *f = fopen(path, "r");
    char line[512];
    size_t n;

    if (!f || !fgets(line, sizeof line, f)) {
        int e = errno;
        if (f)
            fclose(f);
        return TROVE_FAIL(diag, f ? TROVE_ERR_INVALID : -e, 0, "serve: --token-file %s: %s", path,
                          f ? "empty" : strerror(e));
    }
    fclose(f);
    n = strcspn(line, "\r\n");
    line[n] = 0;
    if (n < 16 || n > 256 ||
        strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=") != n)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "serve: --token-file %s: the token must be 16 to 256 characters of "
                          "A-Z a-z 0-9 - . _ ~ + / = (try: head -c 32 /dev/urandom | base64)",
                          path);
    if (!(w->token = trove__strdup(line)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    w->token_len = n;
    return TROVE_OK;
}

/* The limits, from the options and the descriptors this process may open. */
static int limits(struct web *w, struct trove_diag *diag)
{
    const struct trove_serve_options *o = &w->srv->opt;
    uint64_t fds = raise_fd_limit(), used = open_fds(), reserve, budget, conns;
    unsigned producers = o->max_producers ? o->max_producers : TROVE__PRODUCERS_DEFAULT;

    w->max_streams = (int)(o->max_replays ? o->max_replays : REPLAYS_DEFAULT);
    w->max_exports = (int)(o->max_exports ? o->max_exports : EXPORTS_DEFAULT);
    w->max_uploads = (int)(o->max_uploads ? o->max_uploads : UPLOADS_DEFAULT);
    reserve = FDS_STORE + producers + (uint64_t)w->max_streams * FDS_REPLAY +
              (uint64_t)w->max_exports * FDS_EXPORT + (uint64_t)w->max_uploads * FDS_UPLOAD +
              2 * FDS_PROFILE + FDS_WEB;
    budget = fds > used + reserve ? fds - used - reserve : 0;
    conns = o->max_connections ? o->max_connections : CONNECTIONS_DEFAULT;
    w->fd_limit = fds;
    if (budget < CONNECTIONS_MIN)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "serve: this process may open %" PRIu64 " descriptors (ulimit -n), %" PRIu64
                          " are open, and the store, producers and jobs need %" PRIu64
                          " more: too few for %u connections; raise ulimit -n or lower "
                          "--max-producers, --max-replays, --max-exports",
                          fds, used, reserve, CONNECTIONS_MIN);
    if (conns > budget) {
        trove__log(w->srv, "web: at most %" PRIu64 " connections (of --max-connections %" PRIu64
                           "): the process may open %" PRIu64 " descriptors and keeps %" PRIu64
                           " for the store, producers and jobs",
                   budget, conns, fds, reserve + used);
        conns = budget;
    }
    return trove__conns_init(&w->conns, w->epfd, (size_t)conns,
                             (size_t)(conns / 4 > 8 ? conns / 4 : 8),
                             (uint64_t)(o->idle_timeout_ms ? o->idle_timeout_ms
                                                           : IDLE_TIMEOUT_DEFAULT_MS) *
                                 1000000u) == TROVE_OK
               ? TROVE_OK
               : TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
}

static void web_free(struct web *w)
{
    if (w->conns.addrs)
        trove__conns_fini(&w->conns);
    if (w->listen.fd >= 0)
        close(w->listen.fd);
    if (w->wake.fd >= 0)
        close(w->wake.fd);
    if (w->epfd >= 0)
        close(w->epfd);
    free(w->token);
    free(w);
}

int trove__web_open(struct trove__server *srv, struct trove_diag *diag)
{
    const struct trove_serve_options *o = &srv->opt;
    const char *listen = o->listen && *o->listen ? o->listen : TROVE_SERVE_LISTEN_DEFAULT;
    struct sockaddr_storage ss;
    struct epoll_event ev;
    socklen_t slen;
    struct web *w;
    int rc, fd;

    if (trove__parse_addr(listen, &ss, &slen) != TROVE_OK)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "serve: --listen %s is not ADDR:PORT",
                          listen);
    if (!(w = trove__calloc(1, sizeof *w)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    w->srv = srv;
    w->epfd = w->listen.fd = w->wake.fd = -1;
    w->listen.tag = TROVE__EV_LISTEN;
    w->wake.tag = TROVE__EV_WAKE;
    if (o->token_file) {
        if ((rc = load_token(w, o->token_file, diag)) != TROVE_OK)
            goto fail;
        srv->token = w->token;
        srv->token_len = w->token_len;
    } else if (!trove__addr_loopback(&ss)) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "serve: --listen %s is not a loopback address: give --token-file FILE, "
                        "whose token every request must then carry",
                        listen);
        goto fail;
    }
    if ((w->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (w->wake.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        rc = TROVE_FAIL(diag, -errno, 0, "serve: epoll: %s", strerror(errno));
        goto fail;
    }
    if ((fd = trove__listen_tcp(&ss, slen, 511)) < 0) {
        rc = TROVE_FAIL(diag, fd, 0, "serve: listening on %s: %s%s", listen, strerror(-fd),
                        fd == -EADDRINUSE ? " (another service? pick one with --listen)" : "");
        goto fail;
    }
    w->listen.fd = fd;
    if ((rc = limits(w, diag)) != TROVE_OK)
        goto fail;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = &w->wake;
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wake.fd, &ev) != 0) {
        rc = TROVE_FAIL(diag, -errno, 0, "serve: epoll: %s", strerror(errno));
        goto fail;
    }
    listen_on(w, 1);
    /* who may ask */
    trove__addr_format(&ss, srv->listen_addr, sizeof srv->listen_addr);
    snprintf(w->guard.hosts.listen, sizeof w->guard.hosts.listen, "%.*s",
             (int)(strrchr(srv->listen_addr, ':') - srv->listen_addr), srv->listen_addr);
    w->guard.hosts.port = ss.ss_family == AF_INET6
                              ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                              : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    w->guard.hosts.wildcard = trove__addr_wildcard(&ss);
    w->guard.hosts.allow = o->allow_host;
    w->guard.hosts.nallow = o->nallow_host;
    if (w->guard.hosts.wildcard && gethostname(w->guard.hosts.machine,
                                               sizeof w->guard.hosts.machine - 1) != 0)
        w->guard.hosts.machine[0] = 0;
    w->guard.allow_origin = o->allow_origin;
    w->guard.nallow_origin = o->nallow_origin;
    snprintf(w->cookie, sizeof w->cookie, "trove_token_%u", w->guard.hosts.port);
    snprintf(srv->url, sizeof srv->url, "http://%s/", srv->listen_addr);
    trove__api_clean_tmp(srv);
    srv->web = w;
    atomic_store(&srv->wake_fd, w->wake.fd);
    return TROVE_OK;
fail:
    srv->token = NULL;
    web_free(w);
    return rc;
}

void trove__web_close(struct trove__server *srv)
{
    struct web *w = srv->web;

    if (!w)
        return;
    srv->web = NULL;
    trove__conns_fini(&w->conns); /* each connection's closed callback: viewers, answers */
    trove__api_reap(w, 1);        /* profiles and exports still being made for connections gone */
    /* Every thread that wakes the web thread is joined by now (the pass, store and ingest
     * threads by the caller, the histories by the viewers' close, the profiles just above). */
    atomic_store(&srv->wake_fd, -1);
    srv->token = NULL;
    web_free(w);
}
