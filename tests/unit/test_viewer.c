/*
 * test_viewer.c: the upgrade request trove_live_view sends (trove/serve.h). A listener on
 * loopback takes one connection, keeps the request's head and answers 401, as a service
 * with a token does to a viewer without one. Checked: the default path is /api/live with
 * the options; opt->path replaces it whole; opt->token adds exactly one `Authorization:
 * Bearer` line; the 401 comes back as TROVE_ERR_SEND naming the status; a path or token that
 * would break the request's lines is refused before anything is sent. The frames that follow
 * a good upgrade are the fuzz target's (fuzz/fuzz_viewer.c) and test_serve's.
 */
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "trove/serve.h"
#include "trove/wire.h"

struct listener {
    int fd;
    char head[8192]; /* the request, up to its blank line */
};

static void *serve_one(void *arg)
{
    static const char answer[] = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n";
    struct listener *l = arg;
    size_t got = 0;
    int c = accept(l->fd, NULL, NULL);

    if (c < 0)
        return NULL;
    while (got + 1 < sizeof l->head && !strstr(l->head, "\r\n\r\n")) {
        ssize_t n = read(c, l->head + got, sizeof l->head - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        l->head[got] = 0;
    }
    if (write(c, answer, sizeof answer - 1) < 0)
        l->head[0] = 0;
    close(c);
    return NULL;
}

/* Run one view against a fresh listener; the request's head lands in head. */
static int view_once(struct trove_live_view_options *vo, char *head, size_t cap,
                     struct trove_diag *diag)
{
    struct listener l;
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    char url[64];
    pthread_t t;
    int rc;

    memset(&l, 0, sizeof l);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    l.fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(l.fd >= 0);
    CHECK(bind(l.fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(l.fd, 1) == 0);
    CHECK(getsockname(l.fd, (struct sockaddr *)&a, &alen) == 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", (unsigned)ntohs(a.sin_port));
    vo->url = url;
    CHECK(pthread_create(&t, NULL, serve_one, &l) == 0);
    rc = trove_live_view(vo, NULL, diag);
    pthread_join(t, NULL);
    close(l.fd);
    snprintf(head, cap, "%s", l.head);
    return rc;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void base_options(struct trove_live_view_options *vo)
{
    memset(vo, 0, sizeof *vo);
    vo->capture = "c1";
}

/* The request trove_live_view sends, and the options it refuses before connecting. */
static void test_requests(void)
{
    struct trove_live_view_options vo;
    struct trove_diag diag;
    char head[8192];
    int rc;

    /* The default: /api/live from the options, no Authorization. */
    base_options(&vo);
    vo.wire = TROVE_WIRE_PACKED;
    vo.from_start = 1;
    memset(&diag, 0, sizeof diag);
    rc = view_once(&vo, head, sizeof head, &diag);
    CHECK_EQ_INT(rc, TROVE_ERR_SEND);
    CHECK(strstr(diag.msg, "401") != NULL);
    CHECK(starts_with(head, "GET /api/live?capture=c1&wire=packed&from=start HTTP/1.1\r\n"));
    CHECK(strstr(head, "Authorization") == NULL);
    CHECK(strstr(head, "\r\nUpgrade: websocket\r\n") != NULL);

    /* A path of the caller's, whole, and a token: one Authorization line. */
    base_options(&vo);
    vo.path = "/api/replay?capture=c1&wire=raw&from_ns=5";
    vo.token = "s3cret-token";
    memset(&diag, 0, sizeof diag);
    rc = view_once(&vo, head, sizeof head, &diag);
    CHECK_EQ_INT(rc, TROVE_ERR_SEND);
    CHECK(strstr(diag.msg, "401") != NULL);
    CHECK(starts_with(head, "GET /api/replay?capture=c1&wire=raw&from_ns=5 HTTP/1.1\r\n"));
    CHECK(strstr(head, "\r\nAuthorization: Bearer s3cret-token\r\n") != NULL);
    CHECK(strstr(strstr(head, "Authorization") + 1, "Authorization") == NULL);
    CHECK(strstr(head, "\r\n\r\n") != NULL && strstr(head, "\r\n\r\n")[4] == 0);

    /* Refused before connecting: the url is never reached. */
    {
        static const char *const paths[] = {"api/replay", "/api/replay?x= y", "/a\r\nX: y"};
        for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
            base_options(&vo);
            vo.url = "http://127.0.0.1:1/";
            vo.path = paths[i];
            memset(&diag, 0, sizeof diag);
            CHECK_EQ_INT(trove_live_view(&vo, NULL, &diag), TROVE_ERR_INVALID);
            CHECK(strstr(diag.msg, "line break") != NULL);
        }
        base_options(&vo);
        vo.url = "http://127.0.0.1:1/";
        vo.token = "tok\r\nX-Injected: 1";
        CHECK_EQ_INT(trove_live_view(&vo, NULL, NULL), TROVE_ERR_INVALID);
    }
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_requests);
    return test_done();
}
