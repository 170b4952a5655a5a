/* support_serve.c: see support_serve.h. */
#define _GNU_SOURCE /* usleep */

#include "support_serve.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "trove/serve.h"
#include "trove/wire.h"

/* ---- the service in this process ---- */

static struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready, done, rc;
    char store[256], url[128], sock[256];
    struct trove_serve_options base; /* what the caller set; the rest is the defaults */
    char *log;             /* its log lines since the start, each ending in '\n' */
    size_t log_len, log_cap;
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void srv_log(void *ctx, const char *line)
{
    size_t n = strlen(line);
    (void)ctx;
    pthread_mutex_lock(&srv.mu);
    if (srv.log_len + n + 2 > srv.log_cap) {
        size_t cap = (srv.log_len + n + 2) * 2;
        char *p = realloc(srv.log, cap);
        if (!p)
            abort(); /* on the service's threads: no CHECK */
        srv.log = p;
        srv.log_cap = cap;
    }
    memcpy(srv.log + srv.log_len, line, n);
    srv.log_len += n;
    srv.log[srv.log_len++] = '\n';
    srv.log[srv.log_len] = 0;
    pthread_mutex_unlock(&srv.mu);
}

int test_serve_log_count(const char *needle)
{
    int n = 0;
    pthread_mutex_lock(&srv.mu);
    for (const char *p = srv.log; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    pthread_mutex_unlock(&srv.mu);
    return n;
}

static void srv_ready(void *ctx, const char *url, const char *sock)
{
    (void)ctx;
    pthread_mutex_lock(&srv.mu);
    snprintf(srv.url, sizeof srv.url, "%s", url);
    snprintf(srv.sock, sizeof srv.sock, "%s", sock);
    srv.ready = 1;
    pthread_cond_broadcast(&srv.cv);
    pthread_mutex_unlock(&srv.mu);
}

static void *srv_main(void *arg)
{
    struct trove_serve_options so;
    struct trove_diag diag = {0};
    int rc;

    (void)arg;
    so = srv.base;
    so.store_dir = srv.store;
    if (!so.listen)
        so.listen = "127.0.0.1:0";
    so.ready = srv_ready;
    if (!so.log)
        so.log = srv_log;
    rc = trove_serve_run(&so, &diag);
    if (rc != TROVE_OK)
        fprintf(stderr, "serve: %s\n", diag.msg);
    pthread_mutex_lock(&srv.mu);
    srv.rc = rc;
    srv.done = 1;
    pthread_cond_broadcast(&srv.cv);
    pthread_mutex_unlock(&srv.mu);
    return NULL;
}

int test_serve_start(const char *store_dir, uint32_t commit_ms, char *url, size_t url_cap,
                     char *sock, size_t sock_cap)
{
    return test_serve_start_queue(store_dir, commit_ms, 0, url, url_cap, sock, sock_cap);
}

int test_serve_start_queue(const char *store_dir, uint32_t commit_ms, uint64_t max_viewer_queue,
                           char *url, size_t url_cap, char *sock, size_t sock_cap)
{
    struct trove_serve_options so;

    memset(&so, 0, sizeof so);
    so.store_dir = store_dir;
    so.commit_ms = commit_ms;
    so.max_viewer_queue = max_viewer_queue;
    return test_serve_start_opts(&so, url, url_cap, sock, sock_cap);
}

int test_serve_start_opts(const struct trove_serve_options *base, char *url, size_t url_cap,
                          char *sock, size_t sock_cap)
{
    int rc;

    srv.base = *base;
    snprintf(srv.store, sizeof srv.store, "%s", base->store_dir);
    srv.ready = srv.done = 0;
    srv.rc = TROVE_OK;
    free(srv.log);
    srv.log = NULL;
    srv.log_len = srv.log_cap = 0;
    if ((rc = pthread_create(&srv.thread, NULL, srv_main, NULL)) != 0)
        return -rc;
    pthread_mutex_lock(&srv.mu);
    while (!srv.ready && !srv.done)
        pthread_cond_wait(&srv.cv, &srv.mu);
    rc = srv.ready ? TROVE_OK : srv.rc;
    pthread_mutex_unlock(&srv.mu);
    if (rc != TROVE_OK) {
        pthread_join(srv.thread, NULL);
        return rc;
    }
    if (url)
        snprintf(url, url_cap, "%s", srv.url);
    if (sock)
        snprintf(sock, sock_cap, "%s", srv.sock);
    return TROVE_OK;
}

int test_serve_stop(void)
{
    trove_serve_stop();
    pthread_join(srv.thread, NULL);
    return srv.rc;
}

int test_serve_wait_log(const char *needle, int count)
{
    for (int i = 0; i < 6000 && test_serve_log_count(needle) < count; i++)
        usleep(10000);
    return test_serve_log_count(needle) >= count ? 0 : -1;
}

/* ---- sockets and HTTP ---- */

int test_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

int test_unix_connect(const char *path)
{
    struct sockaddr_un sun;
    int fd;

    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    snprintf(sun.sun_path, sizeof sun.sun_path, "%.100s", path);
    if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int test_read_line(int fd, char *line, size_t cap)
{
    size_t n = 0;

    while (n + 1 < cap) {
        struct pollfd one = {fd, POLLIN, 0};
        char c;
        if (poll(&one, 1, 60000) <= 0 || read(fd, &c, 1) != 1)
            return -1;
        if (c == '\n')
            break;
        line[n++] = c;
    }
    line[n] = 0;
    return (int)n;
}

int test_http_connect(const char *url)
{
    struct sockaddr_in sin;
    unsigned port = 0;
    int fd;

    if (sscanf(url, "http://127.0.0.1:%u", &port) != 1)
        return -1;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int test_http(const char *url, const char *head, const void *body, size_t len, char *out,
              size_t cap)
{
    int fd = test_http_connect(url);
    size_t got = 0;

    out[0] = 0;
    if (fd < 0)
        return -1;
    if (test_write_all(fd, head, strlen(head)) != 0 || (len && test_write_all(fd, body, len))) {
        close(fd);
        return -1;
    }
    for (;;) {
        ssize_t r = read(fd, out + got, cap - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        if (got == cap - 1)
            break;
    }
    out[got] = 0;
    close(fd);
    return 0;
}

int64_t test_status_of(const char *url, const char *capture, const char *member)
{
    enum { CAP = 1 << 16 };
    char key[160], *body = malloc(CAP);
    const char *c, *m;
    int64_t v = -1;

    if (!body || test_http(url, "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Connection: close\r\n\r\n",
                           NULL, 0, body, CAP) != 0)
        goto out;
    snprintf(key, sizeof key, "\"name\":\"%s\"", capture);
    if (!(c = strstr(body, key)))
        goto out;
    snprintf(key, sizeof key, "\"%s\":", member);
    if ((m = strstr(c, key)) != NULL)
        v = strtoll(m + strlen(key), NULL, 10);
out:
    free(body);
    return v;
}

/* ---- producers ---- */

int test_producer_hello(const char *sock, const char *capture, const char *producer,
                        const char *extra)
{
    char hello[512];
    int fd = test_unix_connect(sock);

    snprintf(hello, sizeof hello, "{\"capture\":\"%s\",\"producer\":\"%s\"%s}\n", capture,
             producer, extra);
    if (fd >= 0 && test_write_all(fd, hello, strlen(hello)) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

int test_send_name(int fd, uint32_t id, const char *name)
{
    struct trove_names *names = NULL;
    struct trove_bytes buf = {0};
    int rc = trove_names_new(&names) == TROVE_OK &&
                     trove_names_set(names, TROVE_NAME_EVENT, id, 0, name, strlen(name)) ==
                         TROVE_OK &&
                     trove_wire_encode_names(names, 0, 1, &buf) == TROVE_OK &&
                     test_write_all(fd, buf.ptr, buf.len) == 0
                 ? 0
                 : -1;

    trove_bytes_free(&buf);
    trove_names_free(names);
    return rc;
}

int test_send_events(int fd, int wire, const struct trove_event *ev, size_t n, size_t batch)
{
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes buf = {0};
    int rc = trove_wire_encoder_new(&enc) == TROVE_OK ? 0 : -1;

    for (size_t i = 0; rc == 0 && i < n; i += batch) {
        size_t k = n - i < batch ? n - i : batch;
        buf.len = 0;
        if (trove_wire_encode(enc, wire, ev + i, k, &buf) != TROVE_OK ||
            test_write_all(fd, buf.ptr, buf.len) != 0)
            rc = -1;
    }
    trove_bytes_free(&buf);
    trove_wire_encoder_free(enc);
    return rc;
}

/* ---- viewers ---- */

static int viewer_text(void *ctx, const char *json, size_t len)
{
    struct test_viewer *v = ctx;
    (void)len;
    if (strstr(json, "\"type\":\"hello\"")) {
        atomic_fetch_add(&v->hello, 1);
        if (v->on_hello)
            v->on_hello(v);
    } else if (strstr(json, "\"type\":\"end\"")) {
        const char *p = strstr(json, "\"events\":");
        v->end_events = p ? strtoull(p + 9, NULL, 10) : 0;
        atomic_fetch_add(&v->ends, 1);
    } else if (strstr(json, "\"type\":\"error\"")) {
        snprintf(v->last_error, sizeof v->last_error, "%s", json);
        atomic_fetch_add(&v->errors, 1);
    } else {
        atomic_fetch_add(&v->others, 1);
    }
    return 0;
}

static int viewer_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct test_viewer *v = ctx;
    struct trove_wire_frame fr;
    if (trove_wire_decode(v->dec, frame, len, v->ev, TROVE_WIRE_MAX_EVENTS, v->names, &fr, NULL) !=
        TROVE_OK) {
        atomic_fetch_add(&v->bad_frames, 1);
        return 1;
    }
    if (fr.format != TROVE_WIRE_NAMES && v->wire && (int)fr.format != v->wire)
        atomic_fetch_add(&v->bad_frames, 1);
    for (size_t i = 0; v->keep && i < fr.n_events; i++)
        if (trove_events_push(&v->got, &v->ev[i]) != TROVE_OK)
            return 1;
    atomic_fetch_add(&v->events, fr.n_events);
    return 0;
}

static void *viewer_main(void *arg)
{
    struct test_viewer *v = arg;
    struct trove_live_view_options vo;

    memset(&vo, 0, sizeof vo);
    vo.url = v->url;
    vo.capture = v->capture;
    vo.wire = v->wire;
    vo.from_start = v->from_start;
    vo.on_text = viewer_text;
    vo.on_frame = viewer_frame;
    vo.ctx = v;
    v->rc = trove_live_view(&vo, &v->close_code, NULL);
    return NULL;
}

int test_viewer_start(struct test_viewer *v)
{
    if (trove_wire_decoder_new(&v->dec) != TROVE_OK || trove_names_new(&v->names) != TROVE_OK ||
        !(v->ev = calloc(TROVE_WIRE_MAX_EVENTS, sizeof *v->ev)))
        return -1;
    return pthread_create(&v->thread, NULL, viewer_main, v) == 0 ? 0 : -1;
}

void test_viewer_join(struct test_viewer *v)
{
    pthread_join(v->thread, NULL);
}

void test_viewer_free(struct test_viewer *v)
{
    trove_wire_decoder_free(v->dec);
    trove_names_free(v->names);
    trove_events_free(&v->got);
    free(v->ev);
    v->dec = NULL;
    v->names = NULL;
    v->ev = NULL;
}

/* ---- a WebSocket of our own ---- */

int test_ws_open(const char *url, const char *capture)
{
    char req[512], head[1024];
    size_t n = 0;
    int fd = test_http_connect(url);

    if (fd < 0)
        return -1;
    snprintf(req, sizeof req,
             "GET /api/live?capture=%s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
             "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
             "Sec-WebSocket-Version: 13\r\n\r\n",
             capture);
    if (test_write_all(fd, req, strlen(req)) != 0) {
        close(fd);
        return -1;
    }
    while (n + 1 < sizeof head && (n < 4 || memcmp(head + n - 4, "\r\n\r\n", 4) != 0)) {
        if (read(fd, head + n, 1) != 1) {
            close(fd);
            return -1;
        }
        n++;
    }
    head[n] = 0;
    if (!strstr(head, " 101 ")) {
        close(fd);
        return -1;
    }
    return fd;
}

int test_ws_read(int fd, uint8_t **body, uint64_t *len)
{
    uint8_t h[2], x[8];
    uint64_t n;
    int op;

    *body = NULL;
    *len = 0;
    if (read(fd, h, 2) != 2)
        return -1;
    op = h[0] & 15;
    n = h[1] & 127;
    if (n == 126 || n == 127) {
        size_t k = n == 126 ? 2 : 8;
        if ((size_t)read(fd, x, k) != k)
            return -1;
        n = 0;
        for (size_t i = 0; i < k; i++)
            n = n << 8 | x[i];
    }
    if (n > ((uint64_t)1 << 30) || !(*body = malloc(n + 1)))
        return -1;
    for (uint64_t got = 0; got < n;) {
        ssize_t r = read(fd, *body + got, n - got);
        if (r <= 0) {
            free(*body);
            *body = NULL;
            return -1;
        }
        got += (uint64_t)r;
    }
    (*body)[n] = 0;
    *len = n;
    return op;
}

int test_ws_until_close(int fd)
{
    for (;;) {
        uint8_t *body;
        uint64_t len;
        int op = test_ws_read(fd, &body, &len);
        if (op < 0)
            return -1;
        if (op == 8) {
            int code = len >= 2 ? body[0] << 8 | body[1] : 0;
            free(body);
            return code;
        }
        free(body);
    }
}
