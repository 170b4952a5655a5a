/*
 * fuzz_service.h: the whole service (trove_serve_run) on a thread of the fuzz process, for
 * the targets that talk to it over TCP as a browser or a viewer would (fuzz_http,
 * fuzz_ws_server). The service reads a request's head and a WebSocket's frames as they come
 * off its sockets (src/net/web.c, http.c, web_view.c); the only way to feed those bytes as
 * it reads them, in the pieces TCP makes, is a socket to the running service, so that is
 * what the targets use: one service per process, started at the first input by the tests'
 * own in-process service (tests/support/support_serve.c; a fresh store in a temporary
 * directory, fuzz_tmpdir.h, a token file, listening on 127.0.0.1:0, its import and export
 * the input layer's), stopped and its directory removed at exit. Each input is one
 * connection.
 *
 * fuzz_io sends a request while it reads what comes back (so that neither side waits on the
 * other), then reads until a predicate says the answer is whole, or the service closes, or
 * a deadline passes: a service that neither answers nor closes is a finding. A connection
 * is closed with a reset, leaving no TIME_WAIT behind: millions of inputs are millions of
 * connections. Header only, like fuzz_check.h.
 */
#ifndef TROVE_FUZZ_SERVICE_H
#define TROVE_FUZZ_SERVICE_H

#define _GNU_SOURCE /* mkdtemp, nftw */

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_check.h"
#include "fuzz_tmpdir.h"
#include "support_serve.h"
#include "trove/serve.h"

/* The service's token: base64's alphabet, '+' and '/' and '=' included, as the docs' recipe
 * (head -c 32 /dev/urandom | base64) makes them. */
#define FUZZ_TOKEN "fuzz+Token/0123456789abc="
#define FUZZ_MAX_IMPORT 4096u /* --max-import: small, so that 413 is reachable */
#define FUZZ_IO_TIMEOUT_MS 10000

static struct {
    int ready;
    int port;
    char dir[256], token_file[300];
} fuzz_srv;

static void fuzz_srv_log(void *ctx, const char *line)
{
    (void)ctx;
    (void)line; /* millions of connections: not a line each */
}

static void fuzz_srv_stop(void)
{
    test_serve_stop();
    fuzz_remove_tree(fuzz_srv.dir);
}

/* The service's port, starting it the first time: the tests' own in-process service
 * (tests/support/support_serve.c) with this file's token and limits. */
static int fuzz_service_port(void)
{
    struct trove_serve_options so;
    char url[128];
    const char *colon;
    FILE *f;

    if (fuzz_srv.ready)
        return fuzz_srv.port;
    fuzz_make_tmpdir(fuzz_srv.dir, sizeof fuzz_srv.dir);
    snprintf(fuzz_srv.token_file, sizeof fuzz_srv.token_file, "%s/token", fuzz_srv.dir);
    CHECK((f = fopen(fuzz_srv.token_file, "w")) != NULL);
    fprintf(f, "%s\n", FUZZ_TOKEN);
    CHECK(fclose(f) == 0);
    memset(&so, 0, sizeof so);
    so.store_dir = fuzz_srv.dir;
    so.token_file = fuzz_srv.token_file;
    so.max_import = FUZZ_MAX_IMPORT;
    /* Each input's connection is reset at its end, and the next may come before the service
     * has seen that: room enough that an input is never refused for the last one's slot. */
    so.max_replays = 64;
    so.max_exports = 64;
    so.max_uploads = 64;
    so.log = fuzz_srv_log;
    CHECK(test_serve_start_opts(&so, url, sizeof url, NULL, 0) == TROVE_OK);
    colon = strrchr(url, ':');
    fuzz_srv.port = colon ? atoi(colon + 1) : 0;
    CHECK(fuzz_srv.port > 0);
    fuzz_srv.ready = 1;
    atexit(fuzz_srv_stop);
    return fuzz_srv.port;
}

/*
 * A connection to the service, non-blocking. Each comes from the next of 64,516 source
 * addresses of 127.0.0.0/8 (127.1.1.1 .. 127.254.254.1): a connection the service closes
 * first stays in TIME_WAIT on its side for a minute, holding its address and port pair, and
 * from one source address the 28,232 ephemeral ports ran out after 6 M executions of
 * fuzz_ws_server (connect failed). Any 127/8 address is loopback to the service.
 */
static int fuzz_connect(void)
{
    static unsigned next;
    struct sockaddr_in sin, src;
    int fd, one = 1;
    unsigned k = next++ % (254u * 254u);

    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)fuzz_service_port());
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memset(&src, 0, sizeof src);
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(0x7f000001u | (1u + k / 254u) << 16 | (1u + k % 254u) << 8);
    CHECK((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    CHECK(bind(fd, (struct sockaddr *)&src, sizeof src) == 0);
    if (connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
        /* libFuzzer's timers send signals: an interrupted connect goes on by itself, and is
         * waited for (connecting again would say EALREADY). */
        struct pollfd p = {fd, POLLOUT, 0};
        int err = errno;
        socklen_t len = sizeof err;
        if (err == EINTR && poll(&p, 1, FUZZ_IO_TIMEOUT_MS) == 1 &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
            goto connected;
        fprintf(stderr, "connect to the service: %s\n", strerror(err));
        abort();
    }
connected:
    CHECK(fcntl(fd, F_SETFL, O_NONBLOCK) == 0);
    return fd;
}

/* Close with a reset: no TIME_WAIT for this port. */
static void fuzz_close(int fd)
{
    struct linger l = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

static int64_t fuzz_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Is what came so far (in) the whole answer? */
typedef int (*fuzz_done_fn)(const struct trove_bytes *in, void *ctx);

enum { FUZZ_IO_DONE, FUZZ_IO_CLOSED, FUZZ_IO_TIMEOUT };

/*
 * Send out[0..n) on fd, reading into *in meanwhile; then, with half_close, shut the
 * sending side; read until done(in, ctx) (done may be NULL: until the service closes), the
 * service closes or resets (FUZZ_IO_CLOSED), or timeout_ms pass (FUZZ_IO_TIMEOUT). A
 * service that closes while it is sent to is not an error: the rest is not sent.
 */
static int fuzz_io(int fd, const uint8_t *out, size_t n, int half_close, struct trove_bytes *in,
                   fuzz_done_fn done, void *ctx, int timeout_ms)
{
    int64_t deadline = fuzz_now_ms() + timeout_ms;
    size_t sent = 0;
    int shut = 0;

    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int64_t left;
        if (sent == n && half_close && !shut) {
            shutdown(fd, SHUT_WR);
            shut = 1;
        }
        if (sent == n && done && done(in, ctx))
            return FUZZ_IO_DONE;
        if ((left = deadline - fuzz_now_ms()) <= 0)
            return FUZZ_IO_TIMEOUT;
        if (sent < n)
            p.events |= POLLOUT;
        if (poll(&p, 1, (int)left) < 0) {
            CHECK(errno == EINTR);
            continue;
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            uint8_t buf[65536];
            ssize_t got = recv(fd, buf, sizeof buf, 0);
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
                return done && done(in, ctx) ? FUZZ_IO_DONE : FUZZ_IO_CLOSED;
            if (got > 0)
                CHECK(trove_bytes_append(in, buf, (size_t)got) == TROVE_OK);
        }
        if (sent < n && (p.revents & POLLOUT)) {
            ssize_t w = send(fd, out + sent, n - sent, MSG_NOSIGNAL);
            if (w > 0)
                sent += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR)
                sent = n; /* closed on us: the rest is not wanted */
        }
    }
}

#endif
