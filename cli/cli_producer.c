/*
 * cli_producer.c: how a command reaches `trove serve` as a producer — the producers' socket,
 * the hello and the service's answer (docs/serve.md, "Producers") — for `trove record`,
 * `trove gen --live` and the sampler's live mode (record_sample.c).
 *
 * The conversation: connect, send the hello, wait (up to CLI_ANSWER_WAIT_MS) for the answer
 * line — an accept says how the capture takes the events (new, replace, append, join), a
 * refuse why it does not; then the wire stream; then shut the sending side and read until
 * the service closes, so that an error line it sends when it stops reading (a bad frame,
 * a names bound, the capture failing) reaches the command, which then fails with that
 * reason ("service stopped" when the line says the service stops, or the connection ends
 * with no line at all: the caller then exits with CLI_EXIT_STOPPED). The lines are read
 * through a small buffer (two lines' worth: the service sends at most an answer and an
 * error) and parsed by trove_serve_answer_parse.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "trove/serve.h"

#define CLI_ANSWER_WAIT_MS 10000 /* for the answer to the hello */
#define CLI_ERROR_WAIT_MS 1000   /* for an error line after the service closed */

/* The service's socket: --socket; else a --store directory's; else $TROVE_SOCKET (as the
 * client library takes it); else the default store's (a store on S3 has no directory: then
 * trove.sock here, as `trove serve` makes it). */
const char *cli_socket_for(const char *given, const char *store, char *buf, size_t cap)
{
    const char *env = getenv("TROVE_SOCKET");
    int s3 = !strncmp(cli_default_store(store), "s3://", 5);
    if (given)
        return given;
    if ((!store || s3) && env && *env)
        return env;
    if (s3)
        return TROVE_SERVE_SOCKET_NAME;
    snprintf(buf, cap, "%s/%s", cli_default_store(store), TROVE_SERVE_SOCKET_NAME);
    return buf;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

enum { LINE_OK = 0, LINE_EOF, LINE_TIMEOUT, LINE_BAD, LINE_STOP };

/* The service's next line into *out, waiting up to wait_ms (< 0: until it comes, the
 * connection ends or *p->stop is set). LINE_BAD with why filled when it is not an answer. */
static int next_line(struct cli_producer *p, int wait_ms, struct trove_serve_answer *out,
                     char *why, size_t whycap)
{
    long long end = now_ms() + (wait_ms < 0 ? 0 : wait_ms);

    for (;;) {
        char *nl = memchr(p->in, '\n', p->in_len);
        struct pollfd one = {p->fd, POLLIN, 0};
        long long left = end - now_ms();
        ssize_t r;
        if (nl) {
            struct trove_diag diag = {0};
            size_t len = (size_t)(nl - p->in);
            int rc = trove_serve_answer_parse(p->in, len, out, &diag);
            p->in_len -= len + 1;
            memmove(p->in, nl + 1, p->in_len);
            if (rc == TROVE_OK)
                return LINE_OK;
            snprintf(why, whycap, "%s", cli_diag_msg(&diag, rc));
            return LINE_BAD;
        }
        if (p->in_len == sizeof p->in) {
            snprintf(why, whycap, "a line from the service is over %u bytes",
                     TROVE_SERVE_ANSWER_MAX);
            return LINE_BAD;
        }
        if (p->stop && *p->stop)
            return LINE_STOP;
        if (wait_ms >= 0 && left <= 0)
            return LINE_TIMEOUT;
        if (poll(&one, 1, wait_ms < 0 || left > 100 ? 100 : (int)left) <= 0)
            continue; /* EINTR too: the stop flag says */
        r = read(p->fd, p->in + p->in_len, sizeof p->in - p->in_len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return LINE_EOF;
        p->in_len += (size_t)r;
    }
}

int cli_producer_open(const char *cmd, const char *path, const char *capture, int append,
                      const char *producer, struct cli_producer *p)
{
    struct sockaddr_un sun;
    struct trove_serve_answer a;
    char hello[512], why[TROVE_SERVE_ANSWER_MAX + 64];
    int n;

    /* A write to a service that went away must fail with EPIPE, which says "service
     * stopped", rather than kill the command (the sampler's live mode included). */
    signal(SIGPIPE, SIG_IGN);
    memset(&sun, 0, sizeof sun);
    p->fd = -1;
    p->in_len = 0;
    p->stopped = 0;
    memset(&p->accept, 0, sizeof p->accept);
    sun.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sun.sun_path)
        return cli_error(cmd, "%s: the socket path is too long", path);
    memcpy(sun.sun_path, path, strlen(path));
    if ((p->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return cli_error(cmd, "a socket: %s", strerror(errno));
    if (connect(p->fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
        cli_error(cmd, "%s: %s (is `trove serve` running on that store? --socket names "
                       "another)", path, strerror(errno));
        goto fail;
    }
    n = snprintf(hello, sizeof hello,
                 "{\"capture\":\"%s\",\"producer\":\"%s\",\"pid\":%ld,\"append\":%s%s}\n",
                 capture, producer, (long)getpid(), append ? "true" : "false",
                 p->names_fallback ? ",\"names\":\"fallback\"" : "");
    if (cli_write_all(p->fd, hello, (size_t)n) != 0) {
        cli_error(cmd, "%s: sending the hello: %s", path, strerror(errno));
        goto fail;
    }
    switch (next_line(p, CLI_ANSWER_WAIT_MS, &a, why, sizeof why)) {
    case LINE_OK:
        break;
    case LINE_TIMEOUT:
        cli_error(cmd, "%s: the service did not answer the hello within %d s (capture %s "
                       "may still be opening: an earlier session of it committing, a slow "
                       "store; or the service is a trove serve that does not answer)",
                  path, CLI_ANSWER_WAIT_MS / 1000, capture);
        goto fail;
    case LINE_STOP:
        cli_error(cmd, "interrupted while waiting for the service's answer");
        goto fail;
    case LINE_EOF:
        p->stopped = 1;
        cli_error(cmd, "service stopped: %s: the service closed the connection without "
                       "answering the hello",
                  path);
        goto fail;
    default:
        cli_error(cmd, "%s: the service's answer: %s", path, why);
        goto fail;
    }
    if (a.stopping) {
        p->stopped = 1;
        cli_error(cmd, "service stopped: capture %s was not taken: %s", capture, a.reason);
        goto fail;
    }
    if (a.type == TROVE_SERVE_REFUSE) {
        cli_error(cmd, "the service refused capture %s: %s", capture, a.reason);
        goto fail;
    }
    if (a.type == TROVE_SERVE_ERROR) {
        cli_error(cmd, "the service closed capture %s's producer: %s", capture, a.reason);
        goto fail;
    }
    p->accept = a;
    return 0;
fail:
    close(p->fd);
    p->fd = -1;
    return 1;
}

/* An error line the service sent before it closed p, into why (its reason; p->stopped when
 * it says the service stops); 0 if none came within wait_ms (< 0: until the connection
 * ends). */
static int error_line(struct cli_producer *p, int wait_ms, char *why, size_t cap)
{
    struct trove_serve_answer a;
    char bad[TROVE_SERVE_ANSWER_MAX + 64];

    for (;;) {
        int r = next_line(p, wait_ms, &a, bad, sizeof bad);
        if (r == LINE_BAD) {
            snprintf(why, cap, "the service sent a line that is not an answer (%s)", bad);
            return 1;
        }
        if (r != LINE_OK)
            return 0;
        if (a.type != TROVE_SERVE_ACCEPT) {
            snprintf(why, cap, "%s", a.reason);
            p->stopped = a.stopping;
            return 1;
        }
    }
}

/* " after N events", or "" for sent UINT64_MAX. */
static const char *after(uint64_t sent, char *buf, size_t cap)
{
    if (sent == UINT64_MAX)
        return "";
    snprintf(buf, cap, " after %llu events", (unsigned long long)sent);
    return buf;
}

int cli_producer_closed(const char *cmd, struct cli_producer *p, uint64_t sent)
{
    char why[TROVE_SERVE_ANSWER_MAX + 128], n[48];

    if (error_line(p, CLI_ERROR_WAIT_MS, why, sizeof why))
        return cli_error(cmd, "%sthe service closed the connection%s: %s",
                         p->stopped ? "service stopped: " : "", after(sent, n, sizeof n), why);
    /* The service says why it closes a producer, but when it is gone (stopped before it
     * could say so, killed): a close with no word is its going away. */
    p->stopped = 1;
    return cli_error(cmd, "service stopped: the connection closed%s with no word from the "
                          "service (it was stopped or killed; its log says which)",
                     after(sent, n, sizeof n));
}

int cli_producer_finish(const char *cmd, struct cli_producer *p, uint64_t sent)
{
    char why[TROVE_SERVE_ANSWER_MAX + 128], n[48];

    if (shutdown(p->fd, SHUT_WR) != 0)
        return cli_producer_closed(cmd, p, sent);
    if (error_line(p, -1, why, sizeof why))
        return cli_error(cmd, "%sthe service closed the connection%s: %s",
                         p->stopped ? "service stopped: " : "", after(sent, n, sizeof n), why);
    return 0;
}

void cli_producer_close(struct cli_producer *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}

void cli_producer_say(const char *cmd, const struct cli_producer *p, int verbose)
{
    const struct trove_serve_answer *a = &p->accept;

    if (a->mode == TROVE_SERVE_REPLACE)
        fprintf(stderr,
                "trove %s: capture %s: this session (%llu) replaces the stored capture (%llu "
                "events) at its first commit; --append continues it instead\n",
                cmd, a->capture, (unsigned long long)a->session, (unsigned long long)a->events);
    else if (verbose)
        fprintf(stderr, "trove %s: capture %s: session %llu, %s (%llu events %s)\n", cmd,
                a->capture, (unsigned long long)a->session, trove_serve_mode_name(a->mode),
                (unsigned long long)a->events,
                a->mode == TROVE_SERVE_JOIN ? "published so far" : "stored");
}
