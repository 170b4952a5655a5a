/*
 * viewer.c: a WebSocket viewer of GET /api/live, or of the path the caller gives (GET
 * /api/replay), with a bearer token if given (trove/serve.h, trove_live_view) — `trove
 * watch`, `trove replay --url` and `trove bench serve` use it. Its own small client (RFC
 * 6455) rather than the library's, whose client parser takes a payload a byte at a time:
 * here a frame that lies whole in the read buffer is handed to the callback where it lies,
 * and only a message that spans reads (or fragments) is copied. The handshake's Sec-WebSocket-Accept is checked
 * (SHA-1 of the key and the protocol's GUID); pings are answered; a close is answered and
 * ends the run with its code. Every length from the service is checked against
 * TROVE_WIRE_HEADER_SIZE + TROVE_WIRE_MAX_PAYLOAD before anything is buffered for it.
 */
#define _GNU_SOURCE /* getrandom's header on older libcs */

#include "live.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/sha1.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define MSG_MAX ((size_t)TROVE_WIRE_HEADER_SIZE + TROVE_WIRE_MAX_PAYLOAD)
#define READ_MIN ((size_t)1 << 20) /* read at least this much at a time */
#define HEAD_MAX 8192              /* the handshake's response */
#define TICK_MS 100

/* ---- the connection ------------------------------------------------------------------- */

struct conn {
    const struct trove_live_view_options *opt;
    int fd;
    uint8_t *buf; /* read buffer: [start, end) unparsed */
    size_t cap, start, end;
    struct trove_bytes msg; /* a message in fragments */
    int msg_op;             /* its opcode (1 text, 2 binary); 0: none under way */
    int close_code, closed;
    uint64_t next_tick;
    struct trove_diag *diag;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A client frame (masked, as a client's must be) of opcode op. */
static int send_frame(struct conn *c, int op, const uint8_t *payload, size_t n)
{
    uint8_t f[2 + 4 + 125];
    uint8_t mask[4];

    if (n > 125)
        return -1; /* control frames only */
    if (getrandom(mask, sizeof mask, 0) != (ssize_t)sizeof mask)
        memset(mask, 0x5a, sizeof mask);
    f[0] = (uint8_t)(0x80 | op);
    f[1] = (uint8_t)(0x80 | n);
    memcpy(f + 2, mask, 4);
    for (size_t i = 0; i < n; i++)
        f[6 + i] = payload[i] ^ mask[i % 4];
    return send_all(c->fd, f, 6 + n);
}

/* Make room to read: move the unparsed bytes to the front; grow to hold `need`. */
static int room(struct conn *c, size_t need)
{
    if (c->start > 0) {
        memmove(c->buf, c->buf + c->start, c->end - c->start);
        c->end -= c->start;
        c->start = 0;
    }
    if (need > c->cap || c->cap - c->end < READ_MIN / 4) {
        size_t cap = c->cap;
        uint8_t *p;
        while (cap < need || cap - c->end < READ_MIN / 4)
            cap *= 2;
        if (!(p = trove__realloc(c->buf, cap)))
            return TROVE_ERR_NOMEM;
        c->buf = p;
        c->cap = cap;
    }
    return TROVE_OK;
}

/* Wait for bytes (calling the tick), read them. 1: read, 0: the peer closed, <0 error,
 * 2: a callback asked to stop. */
static int fill(struct conn *c)
{
    for (;;) {
        struct pollfd p = {c->fd, POLLIN, 0};
        uint64_t now = now_ms();
        int r;
        if (now >= c->next_tick) {
            c->next_tick = now + TICK_MS;
            if (c->opt->on_tick && c->opt->on_tick(c->opt->ctx))
                return 2;
        }
        r = poll(&p, 1, (int)(c->next_tick - now));
        if (r < 0 && errno != EINTR)
            return -errno;
        if (r <= 0)
            continue;
        ssize_t n = read(c->fd, c->buf + c->end, c->cap - c->end);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return 0;
        c->end += (size_t)n;
        return 1;
    }
}

/* Deliver one whole message. Nonzero: stop. */
static int deliver(struct conn *c, int op, const uint8_t *p, size_t n)
{
    if (op == 2)
        return c->opt->on_frame ? c->opt->on_frame(c->opt->ctx, p, n) : 0;
    if (op == 1 && c->opt->on_text) {
        struct trove_bytes t = {0}; /* texts are small: a copy, NUL-terminated */
        int rc;
        if (trove_bytes_append(&t, p, n) != TROVE_OK || trove_bytes_append(&t, "", 1) != TROVE_OK) {
            trove_bytes_free(&t);
            return 1;
        }
        rc = c->opt->on_text(c->opt->ctx, (const char *)t.ptr, n);
        trove_bytes_free(&t);
        return rc;
    }
    return 0;
}

/* Parse and deliver every whole frame in the buffer. 1: stop (closed or asked), 0: more
 * bytes are needed (*need: how many the next frame takes), <0 an error. */
static int parse(struct conn *c, size_t *need)
{
    for (;;) {
        const uint8_t *p = c->buf + c->start;
        size_t have = c->end - c->start, hl = 2, n;
        int fin, op;
        if (have < 2) {
            *need = 2;
            return 0;
        }
        fin = p[0] >> 7;
        op = p[0] & 15;
        if (p[0] & 0x70 || p[1] & 0x80)
            return TROVE_FAIL(c->diag, TROVE_ERR_CORRUPT, 0,
                              "the service sent a frame with reserved bits or a mask");
        n = p[1] & 127;
        if (n == 126)
            hl = 4;
        else if (n == 127)
            hl = 10;
        if (have < hl) {
            *need = hl;
            return 0;
        }
        if (n == 126) {
            n = (size_t)p[2] << 8 | p[3];
        } else if (n == 127) {
            uint64_t v = 0;
            for (int i = 0; i < 8; i++)
                v = v << 8 | p[2 + i];
            if (v > MSG_MAX)
                return TROVE_FAIL(c->diag, TROVE_ERR_LIMIT, 0,
                                  "the service sent a frame of %llu bytes, over %zu",
                                  (unsigned long long)v, MSG_MAX);
            n = (size_t)v;
        }
        if (n > MSG_MAX || c->msg.len + n > MSG_MAX)
            return TROVE_FAIL(c->diag, TROVE_ERR_LIMIT, 0,
                              "the service sent a message over %zu bytes", MSG_MAX);
        if (have < hl + n) {
            *need = hl + n;
            return 0;
        }
        p += hl;
        c->start += hl + n;
        if (op >= 8) { /* control */
            if (!fin || n > 125)
                return TROVE_FAIL(c->diag, TROVE_ERR_CORRUPT, 0, "a bad control frame");
            if (op == 9) {
                if (send_frame(c, 10, p, n) != 0)
                    return TROVE_FAIL(c->diag, TROVE_ERR_SEND, 0, "answering a ping failed");
            } else if (op == 8) {
                c->close_code = n >= 2 ? p[0] << 8 | p[1] : 1005;
                send_frame(c, 8, p, n >= 2 ? 2 : 0); /* the answer; the service then closes */
                c->closed = 1;
                return 1;
            }
            continue;
        }
        if (op == 0) { /* a continuation */
            if (!c->msg_op)
                return TROVE_FAIL(c->diag, TROVE_ERR_CORRUPT, 0,
                                  "a continuation frame without a message");
        } else if (op == 1 || op == 2) {
            if (c->msg_op)
                return TROVE_FAIL(c->diag, TROVE_ERR_CORRUPT, 0,
                                  "a new message inside a fragmented one");
            if (fin) { /* whole, where it lies */
                if (deliver(c, op, p, n))
                    return 1;
                continue;
            }
            c->msg_op = op;
            c->msg.len = 0;
        } else {
            return TROVE_FAIL(c->diag, TROVE_ERR_CORRUPT, 0, "an unknown opcode %d", op);
        }
        if (trove_bytes_append(&c->msg, p, n) != TROVE_OK)
            return TROVE_FAIL(c->diag, TROVE_ERR_NOMEM, 0, "out of memory");
        if (fin) {
            int o = c->msg_op;
            c->msg_op = 0;
            if (deliver(c, o, c->msg.len ? c->msg.ptr : (const uint8_t *)"", c->msg.len))
                return 1;
        }
    }
}

/* The upgrade response's head (NUL-terminated, without its blank line): a 101 whose
 * Sec-WebSocket-Accept is the one key64 asks for. */
static int upgrade_check(struct conn *c, char *head, const char *key64, const char *url)
{
    char want[32];
    char *line;

    if (strncmp(head, "HTTP/1.1 101", 12) != 0) {
        char *eol = strstr(head, "\r\n");
        if (eol)
            *eol = 0;
        return TROVE_FAIL(c->diag, TROVE_ERR_SEND, 0, "%s: the service answered '%s', not an "
                                                      "upgrade", url, head);
    }
    trove__ws_accept_key(key64, strlen(key64), want);
    for (line = strstr(head, "\r\n"); line; line = strstr(line + 2, "\r\n"))
        if (strncasecmp(line + 2, "Sec-WebSocket-Accept:", 21) == 0) {
            const char *v = line + 23;
            while (*v == ' ')
                v++;
            if (strncmp(v, want, strlen(want)) == 0)
                return TROVE_OK;
            break;
        }
    return TROVE_FAIL(c->diag, TROVE_ERR_SEND, 0, "%s: the upgrade's Sec-WebSocket-Accept is "
                                                  "missing or wrong", url);
}

/* Connect and upgrade. */
static int open_conn(struct conn *c, const char *host, const char *port, const char *path,
                     const char *url)
{
    struct addrinfo hints, *ai = NULL, *a;
    uint8_t key[16];
    char key64[32], req[8192];
    const char *token = c->opt->token;
    char *head = NULL;
    size_t got = 0;
    int rc, n;

    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if ((rc = getaddrinfo(host, port, &hints, &ai)) != 0)
        return TROVE_FAIL(c->diag, TROVE_ERR_SEND, 0, "%s: %s", url, gai_strerror(rc));
    c->fd = -1;
    for (a = ai; a && c->fd < 0; a = a->ai_next) {
        c->fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (c->fd >= 0 && connect(c->fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(c->fd);
            c->fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (c->fd < 0)
        return TROVE_FAIL(c->diag, TROVE_ERR_SEND, 0, "%s: %s (is `trove serve` running?)", url,
                          strerror(errno));
    if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key)
        for (size_t i = 0; i < sizeof key; i++)
            key[i] = (uint8_t)(now_ms() * 31 + i);
    trove__base64(key, sizeof key, key64);
    n = snprintf(req, sizeof req,
                 "GET %s HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s%s%s\r\n",
                 path, host, port, key64, token ? "Authorization: Bearer " : "",
                 token ? token : "", token ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof req || send_all(c->fd, (uint8_t *)req, (size_t)n) != 0)
        return TROVE_FAIL(c->diag, TROVE_ERR_SEND, 0, "%s: sending the request failed", url);
    /* The response, up to its blank line; what follows is frames already. */
    while (!head) {
        int r;
        if (c->end >= HEAD_MAX)
            return TROVE_FAIL(c->diag, TROVE_ERR_LIMIT, 0, "%s: a response header over %d "
                                                           "bytes", url, HEAD_MAX);
        if ((r = fill(c)) <= 0 || r == 2)
            return r == 2 ? 1 : TROVE_FAIL(c->diag, TROVE_ERR_SEND, 0,
                                           "%s: the service closed the connection during "
                                           "the handshake", url);
        for (; got + 3 < c->end; got++)
            if (memcmp(c->buf + got, "\r\n\r\n", 4) == 0) {
                head = (char *)c->buf;
                break;
            }
    }
    c->buf[got] = 0;
    c->start = got + 4;
    return upgrade_check(c, head, key64, url);
}

int trove_live_view(const struct trove_live_view_options *opt, int *close_code,
                    struct trove_diag *diag)
{
    const char *url = opt && opt->url ? opt->url : "http://127.0.0.1:7700/";
    char host[256], port[16] = "80", path[2048];
    const char *p;
    struct conn c;
    size_t hl, need = 0;
    int rc;

    if (close_code)
        *close_code = 0;
    if (!opt || !opt->capture || trove_volume_name_check(opt->capture, diag) != TROVE_OK)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "live view: a capture name is needed");
    if (opt->wire < 0 || opt->wire > TROVE_WIRE_DEFLATE)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "live view: wire %d", opt->wire);
    if (strncmp(url, "http://", 7) == 0)
        p = url + 7;
    else if (strncmp(url, "ws://", 5) == 0)
        p = url + 5;
    else
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "%s: give the service as http://HOST:PORT/ (or ws://)", url);
    hl = strcspn(p, "/");
    if (hl == 0 || hl >= sizeof host)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "%s: no host", url);
    memcpy(host, p, hl);
    host[hl] = 0;
    if (host[0] == '[') { /* [v6]:port */
        char *close = strchr(host, ']');
        if (!close)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "%s: a bad host", url);
        if (close[1] == ':')
            snprintf(port, sizeof port, "%s", close + 2);
        *close = 0;
        memmove(host, host + 1, strlen(host));
    } else if (strchr(host, ':')) {
        snprintf(port, sizeof port, "%s", strchr(host, ':') + 1);
        *strchr(host, ':') = 0;
    }
    if (!*port || strspn(port, "0123456789") != strlen(port))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "%s: a bad port", url);
    /* A path or token that would break the request's lines is refused. */
    if ((opt->path && (opt->path[0] != '/' || strcspn(opt->path, "\r\n ") != strlen(opt->path))) ||
        (opt->token && strcspn(opt->token, "\r\n") != strlen(opt->token)))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "live view: a path or token with a space "
                                                      "or a line break");
    if (!opt->path)
        snprintf(path, sizeof path, "/api/live?capture=%s&wire=%s&from=%s", opt->capture,
                 opt->wire ? trove_wire_format_name(opt->wire) : "auto",
                 opt->from_start ? "start" : "now");
    else if ((size_t)snprintf(path, sizeof path, "%s", opt->path) >= sizeof path)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "live view: the path is too long");
    memset(&c, 0, sizeof c);
    c.opt = opt;
    c.diag = diag;
    c.fd = -1;
    c.next_tick = now_ms() + TICK_MS;
    c.cap = READ_MIN;
    if (!(c.buf = trove__malloc(c.cap)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    rc = open_conn(&c, host, port, path, url);
    while (rc == TROVE_OK) {
        int r = parse(&c, &need);
        if (r < 0) {
            rc = r;
            break;
        }
        if (r == 1)
            break;
        if ((r = room(&c, need)) != TROVE_OK) {
            rc = TROVE_FAIL(diag, r, 0, "out of memory");
            break;
        }
        r = fill(&c);
        if (r == 2)
            break; /* asked to stop */
        if (r == 0) {
            rc = TROVE_FAIL(diag, TROVE_ERR_SEND, 0, "%s: the service closed the connection "
                                                     "without a close frame", url);
            break;
        }
        if (r < 0) {
            rc = TROVE_FAIL(diag, TROVE_ERR_SEND, 0, "%s: %s", url, strerror(-r));
            break;
        }
    }
    if (rc == 1)
        rc = TROVE_OK; /* stopped during the handshake */
    if (c.fd >= 0)
        close(c.fd);
    if (close_code)
        *close_code = c.close_code;
    free(c.buf);
    trove_bytes_free(&c.msg);
    return rc;
}

int trove__live_view_bytes(const struct trove_live_view_options *opt, const uint8_t *data,
                           size_t len, const char *key64, int reply_fd, struct trove_diag *diag)
{
    struct conn c;
    size_t got, need = 0;
    int rc;

    memset(&c, 0, sizeof c);
    c.opt = opt;
    c.diag = diag;
    c.fd = reply_fd;
    for (got = 0; got + 3 < len && got < HEAD_MAX; got++)
        if (memcmp(data + got, "\r\n\r\n", 4) == 0)
            break;
    if (got + 3 >= len || got >= HEAD_MAX)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, 0, "no whole response head");
    c.cap = len + 1 > READ_MIN ? len + 1 : READ_MIN;
    if (!(c.buf = trove__malloc(c.cap)))
        return TROVE_ERR_NOMEM;
    memcpy(c.buf, data, len);
    c.buf[got] = 0;
    c.start = got + 4;
    c.end = len;
    rc = upgrade_check(&c, (char *)c.buf, key64, "test");
    while (rc == TROVE_OK) {
        int r = parse(&c, &need);
        if (r != 0) {
            rc = r < 0 ? r : TROVE_OK;
            break;
        }
        if (need > MSG_MAX + 14)
            abort(); /* parse asked for more than it may ever buffer */
        rc = TROVE_ERR_TRUNCATED; /* the input ends inside a frame (or between frames) */
    }
    free(c.buf);
    trove_bytes_free(&c.msg);
    return rc;
}
