/*
 * test_web.c: the service's HTTP side without a running service: a request head read from
 * bytes in any pieces and every refusal it makes (src/net/http.c), WebSocket frame headers
 * and the handshake's key, the guards of src/net/api.c (Host, Origin, a change's
 * cross-site checks, the token and its cookie), and the connections of src/net/conn.c on
 * socket pairs — admission under the limits with the oldest idle connection making room,
 * the timeouts, and the output queue written as the socket takes it.
 */
#define _GNU_SOURCE

#include "testutil.h"
#include "net/api.h"
#include "net/conn.h"
#include "net/http.h"
#include "common/sha1.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- request heads ------------------------------------------------------------------------ */

static int scan_all(const char *req, size_t n, struct trove__http_head *h,
                    struct trove__http_fail *f)
{
    struct trove__http_scan s;
    memset(&s, 0, sizeof s);
    memset(f, 0, sizeof *f);
    return trove__http_scan(&s, (const uint8_t *)req, n, h, f);
}

static void test_head_whole_and_in_pieces(void)
{
    static const char req[] =
        "POST /api/captures/import?name=a HTTP/1.1\r\nHost: 127.0.0.1:7700\r\n"
        "content-LENGTH: 12\r\nX-Other:  spaced value \t\r\nConnection: keep-alive, Upgrade\r\n"
        "\r\nbody follows";
    struct trove__http_head h, h2;
    struct trove__http_fail f;
    struct trove__http_scan s;
    size_t head = strstr(req, "\r\n\r\n") - req + 4;
    int r;

    r = scan_all(req, sizeof req - 1, &h, &f);
    CHECK_EQ_INT(r, (int)head);
    CHECK(strcmp(h.method, "POST") == 0 && h.route_method == TROVE__POST && h.minor == 1);
    CHECK(h.target_len == 27 && !memcmp(h.target, "/api/captures/import?name=a", 27));
    CHECK(h.f[TROVE__H_HOST].n == 14 && !memcmp(h.f[TROVE__H_HOST].v, "127.0.0.1:7700", 14));
    CHECK(h.f[TROVE__H_CONTENT_LENGTH].v && h.content_length == 12);
    CHECK(trove__http_has_token(h.f[TROVE__H_CONNECTION], "upgrade"));
    CHECK(!trove__http_has_token(h.f[TROVE__H_CONNECTION], "keep"));
    CHECK(!h.f[TROVE__H_ORIGIN].v);
    /* A byte at a time: the same head, found at its last byte and not before. */
    memset(&s, 0, sizeof s);
    for (size_t i = 1; i <= head; i++) {
        r = trove__http_scan(&s, (const uint8_t *)req, i, &h2, &f);
        if (i < head)
            CHECK_EQ_INT(r, 0);
    }
    CHECK_EQ_INT(r, (int)head);
    CHECK(h2.content_length == 12 && h2.f[TROVE__H_HOST].v == h.f[TROVE__H_HOST].v);
    /* Empty lines before the request line are skipped; a bare LF ends a line too. */
    r = scan_all("\r\nGET / HTTP/1.0\nHost: x\n\n", 26, &h, &f);
    CHECK_EQ_INT(r, 26);
    CHECK(h.minor == 0 && h.route_method == TROVE__GET);
}

/* Header names are matched whole: a prefix of a known one is another header. */
static void test_head_names_whole(void)
{
    static const char req[] = "GET / HTTP/1.1\r\nAcc: x\r\nIf: y\r\nHos: z\r\nHostx: w\r\n"
                              "HOST: real\r\nContent-Lengthy: 5\r\nsec-fetch-site: none\r\n\r\n";
    struct trove__http_head h;
    struct trove__http_fail f;

    CHECK_EQ_INT(scan_all(req, sizeof req - 1, &h, &f), (int)(sizeof req - 1));
    CHECK(h.f[TROVE__H_HOST].n == 4 && !memcmp(h.f[TROVE__H_HOST].v, "real", 4));
    CHECK(!h.f[TROVE__H_CONTENT_LENGTH].v);
    CHECK(h.f[TROVE__H_SEC_FETCH_SITE].n == 4);
}

static void test_head_refusals(void)
{
    static const struct {
        const char *req;
        unsigned status;
        const char *code;
    } cases[] = {
        {"HEAD / HTTP/1.1\r\n", 405, "method_not_allowed"}, /* at the request line */
        {"CONNECT example.com:443 HTTP/1.1\r\n", 405, "method_not_allowed"},
        {"OPTIONS * HTTP/1.1\r\n", 405, "method_not_allowed"},
        {"BREW /pot HTTP/1.1\r\n", 501, "not_implemented"},
        {"GET / HTTP/2.0\r\n", 505, "version_not_supported"},
        {"GET / HTTP/1.1x\r\n", 400, "bad_request"},
        {"GET /\r\n", 400, "bad_request"},                  /* HTTP/0.9 */
        {"GET http://a/ HTTP/1.1\r\n", 400, "bad_request"},  /* a proxy's form */
        {"GET /a\x01 HTTP/1.1\r\n", 400, "bad_request"},
        {"GET /\xc3\xa9 HTTP/1.1\r\n", 400, "bad_request"},
        {"G(T / HTTP/1.1\r\n", 400, "bad_request"},
        {"GET / HTTP/1.1\r\nHost : x\r\n", 400, "bad_request"},
        {"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n", 400, "bad_request"},
        {"GET / HTTP/1.1\r\nHost: x\r\nhost: y\r\n", 400, "bad_request"},
        {"GET / HTTP/1.1\r\nContent-Length: 12a\r\n", 400, "bad_request"},
        {"GET / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n", 400, "bad_request"},
        {"GET / HTTP/1.1\r\nX: a\x01z\r\n", 400, "bad_request"},
        {"GET / HTTP/1.1\r\nX: a\rz\r\n", 400, "bad_request"},
        {"GET / HTTP/1.1\r\nno colon\r\n", 400, "bad_request"},
    };
    struct trove__http_head h;
    struct trove__http_fail f;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int r = scan_all(cases[i].req, strlen(cases[i].req), &h, &f);
        CHECK_EQ_INT(r, -1);
        CHECK_EQ_INT(f.status, cases[i].status);
        CHECK(f.code && strcmp(f.code, cases[i].code) == 0 && f.msg[0]);
        if (r != -1 || f.status != cases[i].status)
            fprintf(stderr, "  case %zu: %s\n", i, cases[i].req);
    }
    /* A NUL inside the head. */
    CHECK_EQ_INT(scan_all("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 26, &h, &f), -1);
    CHECK_EQ_INT(f.status, 400);
}

/* Over-long lines are refused as soon as they pass the limit, before their end comes. */
static void test_head_limits(void)
{
    char *big = malloc(TROVE__HTTP_HEAD_MAX + 64);
    struct trove__http_head h;
    struct trove__http_fail f;
    size_t n;

    CHECK(big != NULL);
    if (!big)
        return;
    n = (size_t)sprintf(big, "GET /");
    memset(big + n, 'a', 8200);
    CHECK_EQ_INT(scan_all(big, n + 8200, &h, &f), -1); /* no LF yet */
    CHECK(f.status == 413 && strstr(f.msg, "request line"));
    n = (size_t)sprintf(big, "GET / HTTP/1.1\r\nX: ");
    memset(big + n, 'b', 8200);
    CHECK_EQ_INT(scan_all(big, n + 8200, &h, &f), -1);
    CHECK(f.status == 413 && strstr(f.msg, "header line"));
    /* A line of exactly 8192 bytes is taken. */
    n = (size_t)sprintf(big, "GET / HTTP/1.1\r\nX: ");
    memset(big + n, 'c', 8192 - 3);
    n += 8192 - 3;
    n += (size_t)sprintf(big + n, "\r\n\r\n");
    CHECK_EQ_INT(scan_all(big, n, &h, &f), (int)n);
    /* 101 header lines; a head over 16 KiB. */
    n = (size_t)sprintf(big, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < 101; i++)
        n += (size_t)sprintf(big + n, "X%d: 1\r\n", i);
    CHECK_EQ_INT(scan_all(big, n, &h, &f), -1);
    CHECK_EQ_INT(f.status, 413);
    n = (size_t)sprintf(big, "GET / HTTP/1.1\r\n");
    while (n < TROVE__HTTP_HEAD_MAX)
        n += (size_t)sprintf(big + n, "X-Filler: %0900d\r\n", 0);
    CHECK_EQ_INT(scan_all(big, TROVE__HTTP_HEAD_MAX, &h, &f), -1);
    CHECK_EQ_INT(f.status, 413);
    free(big);
}

static void test_answer_head(void)
{
    char out[512];
    size_t n = trove__http_answer_head(out, sizeof out, 503, "application/json", 7,
                                       "retry-after: 2\r\n");

    CHECK(n > 0 && n == strlen(out));
    CHECK(strncmp(out, "HTTP/1.1 503 Service Unavailable\r\n", 34) == 0);
    CHECK(strstr(out, "content-length: 7\r\n") && strstr(out, "connection: close\r\n"));
    CHECK(strstr(out, "retry-after: 2\r\n\r\n") != NULL);
    n = trove__http_answer_head(out, sizeof out, 200, "application/zip", -1, NULL);
    CHECK(n > 0 && strstr(out, "transfer-encoding: chunked\r\n") && !strstr(out, "content-length"));
    CHECK_EQ_INT(trove__http_answer_head(out, 20, 200, "text/plain", 0, NULL), 0);
}

/* ---- WebSocket frames ------------------------------------------------------------------- */

static void test_ws_frames(void)
{
    struct trove__ws_frame f;
    uint8_t b[16];

    /* A masked text frame of 5 bytes: needs its whole header (mask included) first. */
    memcpy(b, "\x81\x85\x01\x02\x03\x04", 6);
    CHECK_EQ_INT(trove__ws_parse(b, 1, &f), 0);
    CHECK_EQ_INT(trove__ws_parse(b, 5, &f), 0);
    CHECK_EQ_INT(trove__ws_parse(b, 6, &f), 6);
    CHECK(f.fin && f.opcode == 1 && f.len == 5 && f.mask[3] == 4);
    /* 16- and 64-bit lengths */
    memcpy(b, "\x02\xfe\x01\x00\x09\x09\x09\x09", 8);
    CHECK_EQ_INT(trove__ws_parse(b, 8, &f), 8);
    CHECK(!f.fin && f.opcode == 2 && f.len == 256);
    memcpy(b, "\x82\xff\x00\x00\x00\x01\x00\x00\x00\x00\x01\x01\x01\x01", 14);
    CHECK_EQ_INT(trove__ws_parse(b, 13, &f), 0);
    CHECK_EQ_INT(trove__ws_parse(b, 14, &f), 14);
    CHECK(f.len == (uint64_t)1 << 32);
    /* protocol errors */
    CHECK_EQ_INT(trove__ws_parse((const uint8_t *)"\xc1\x80\0\0\0\0", 6, &f), -1002); /* RSV1 */
    CHECK_EQ_INT(trove__ws_parse((const uint8_t *)"\x83\x80\0\0\0\0", 6, &f), -1002); /* op 3 */
    CHECK_EQ_INT(trove__ws_parse((const uint8_t *)"\x8b\x80\0\0\0\0", 6, &f), -1002); /* op B */
    CHECK_EQ_INT(trove__ws_parse((const uint8_t *)"\x81\x05", 2, &f), -1002);         /* unmasked */
    CHECK_EQ_INT(trove__ws_parse((const uint8_t *)"\x09\x80\0\0\0\0", 6, &f), -1002); /* a ping, no FIN */
    CHECK_EQ_INT(trove__ws_parse((const uint8_t *)"\x89\xfe\0\x01\0\0\0\0", 8, &f), -1002);
    CHECK_EQ_INT(trove__ws_parse((const uint8_t *)"\x88\xfe\0\x7e\0\0\0\0", 8, &f), -1002);
    CHECK_EQ_INT(trove__ws_parse((const uint8_t *)"\x82\xff\x80\0\0\0\0\0\0\0\0\0\0\0", 14, &f),
                 -1002);
    /* the server's own headers */
    CHECK_EQ_INT(trove__ws_head(b, 2, 125), 2);
    CHECK(b[0] == 0x82 && b[1] == 125);
    CHECK_EQ_INT(trove__ws_head(b, 1, 126), 4);
    CHECK(b[1] == 126 && b[2] == 0 && b[3] == 126);
    CHECK_EQ_INT(trove__ws_head(b, 2, 65535), 4);
    CHECK_EQ_INT(trove__ws_head(b, 2, 65536), 10);
    CHECK(b[1] == 127 && b[7] == 1 && b[8] == 0 && b[9] == 0);
    /* the closes a peer may send */
    CHECK(trove__ws_close_ok(NULL, 0));
    CHECK(!trove__ws_close_ok((const uint8_t *)"\x03", 1));
    CHECK(trove__ws_close_ok((const uint8_t *)"\x03\xe8ok", 4));
    CHECK(!trove__ws_close_ok((const uint8_t *)"\x03\xee", 2)); /* 1006: never on the wire */
    CHECK(!trove__ws_close_ok((const uint8_t *)"\x03\xe8\xc3", 3)); /* a cut UTF-8 reason */
    CHECK(trove__ws_close_ok((const uint8_t *)"\x0f\xa0", 2));     /* 4000 */
}

static void test_ws_accept_key(void)
{
    char out[29];
    /* RFC 6455 1.3's example */
    trove__ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", 24, out);
    CHECK(strcmp(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0);
}

/* ---- the guards --------------------------------------------------------------------------- */

static void test_host(void)
{
    static const char *const allow[] = {"box.lan"};
    struct trove__api_hosts h;
    static const char *const yes[] = {"127.0.0.1:7700", "127.0.0.1", "localhost", "LocalHost:1",
                                      "box.lan:7700", "BOX.LAN"};
    static const char *const no[] = {"attacker.example", "attacker.example:7700",
                                     "127.0.0.1.nip.io", "", "[::1]:7700", "127.0.0.1:",
                                     "127.0.0.1:99999", "127.0.0.1:0", "a b", "localhost:x",
                                     "user@127.0.0.1", "10.0.0.5:7700", "localhost.", ":7700",
                                     "localhost:07700"};

    memset(&h, 0, sizeof h);
    strcpy(h.listen, "127.0.0.1");
    h.port = 7700;
    h.allow = allow;
    h.nallow = 1;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        CHECK(trove__api_host_ok(yes[i], strlen(yes[i]), &h));
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        CHECK(!trove__api_host_ok(no[i], strlen(no[i]), &h));
        if (trove__api_host_ok(no[i], strlen(no[i]), &h))
            fprintf(stderr, "  taken: '%s'\n", no[i]);
    }
    /* IPv6 listen address; a wildcard takes any address and the machine's name */
    strcpy(h.listen, "[::1]");
    CHECK(trove__api_host_ok("[::1]:7700", 10, &h));
    CHECK(!trove__api_host_ok("127.0.0.1", 9, &h));
    strcpy(h.listen, "0.0.0.0");
    h.wildcard = 1;
    strcpy(h.machine, "build-host");
    CHECK(trove__api_host_ok("10.0.0.5:7700", 13, &h));
    CHECK(trove__api_host_ok("[fd77::1]:7700", 14, &h));
    CHECK(trove__api_host_ok("build-host:7700", 15, &h));
    CHECK(!trove__api_host_ok("evil.example:7700", 17, &h));
    CHECK(!trove__api_host_ok("10.0.0.5x", 9, &h));
}

static void test_origin_and_change(void)
{
    static const char *const allow[] = {"https://dash.example"};
    struct trove__api_hosts h;
    struct trove__api_change c;
    char msg[300];

    memset(&h, 0, sizeof h);
    strcpy(h.listen, "127.0.0.1");
    h.port = 7700;
    CHECK(trove__api_origin_ok(NULL, &h, allow, 1));
    CHECK(trove__api_origin_ok("http://127.0.0.1:7700", &h, allow, 1));
    CHECK(trove__api_origin_ok("http://localhost:7700", &h, allow, 1));
    CHECK(trove__api_origin_ok("HTTPS://DASH.example", &h, allow, 1));
    CHECK(!trove__api_origin_ok("http://127.0.0.1:8000", &h, allow, 1)); /* another port */
    CHECK(!trove__api_origin_ok("http://localhost", &h, allow, 1));      /* port 80 */
    CHECK(!trove__api_origin_ok("https://127.0.0.1:7700", &h, allow, 1));
    CHECK(!trove__api_origin_ok("null", &h, allow, 1));
    CHECK(!trove__api_origin_ok("http://attacker.example:7700", &h, allow, 1));
    CHECK(!trove__api_origin_ok("http://127.0.0.1:7700/x", &h, allow, 1));
    CHECK(!trove__api_origin_ok("http://localhost:07700", &h, allow, 1)); /* fuzz_router's */
    h.port = 80;
    CHECK(trove__api_origin_ok("http://localhost", &h, NULL, 0));
    h.port = 7700;

    memset(&c, 0, sizeof c);
    c.method = TROVE__POST;
    c.content_type = "application/octet-stream";
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 0); /* curl, no token */
    c.origin = "http://127.0.0.1:8000";
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 403);
    CHECK(strstr(msg, "127.0.0.1:8000") != NULL);
    c.origin = "http://127.0.0.1:7700";
    c.fetch_site = "same-origin";
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 0); /* its own page */
    c.fetch_site = "same-site"; /* another port of the host, with an Origin it lied about? */
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 403);
    c.fetch_site = "cross-site";
    c.origin = allow[0]; /* allowed by name */
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 0);
    c.origin = NULL;
    c.fetch_site = NULL;
    c.content_type = "text/plain;charset=UTF-8"; /* a plain form's */
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 403);
    c.content_type = " Multipart/Form-Data; boundary=x";
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 403);
    c.content_type = NULL;
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 403);
    c.x_trove = 1;
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 0);
    /* With a token: without an Origin only a bearer token authorizes a change. */
    c.token_required = 1;
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 403);
    c.bearer = 1;
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 0);
    c.method = TROVE__DELETE;
    c.bearer = 0;
    c.origin = "http://localhost:7700";
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 0); /* the page's cookie */
    /* login (a GET): a foreign Origin or a cross-site fetch is refused, a typed URL is not */
    c.method = TROVE__GET;
    c.origin = NULL;
    c.fetch_site = "none";
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 0);
    c.fetch_site = "same-site";
    CHECK_EQ_INT(trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg), 403);
}

static void test_token(void)
{
    static const char t[] = "0123456789abcdef+/=";
    size_t n = sizeof t - 1;
    int bearer = -1;

    CHECK(trove__api_token_ok(t, n, "Bearer 0123456789abcdef+/=", NULL, NULL, &bearer) && bearer);
    CHECK(!trove__api_token_ok(t, n, "Bearer 0123456789abcdef+/", NULL, NULL, NULL));
    CHECK(trove__api_token_ok(t, n, NULL, "a=1; trove_token_7700=0123456789abcdef+/=; b=2",
                              "trove_token_7700", &bearer) &&
          !bearer);
    CHECK(!trove__api_token_ok(t, n, NULL, "trove_token=0123456789abcdef+/=", "trove_token_7700",
                               NULL));
    CHECK(!trove__api_token_ok(t, n, NULL, "trove_token_77001=0123456789abcdef+/=",
                               "trove_token_7700", NULL));
    CHECK(!trove__api_token_ok(t, n, NULL, "xtrove_token_7700=0123456789abcdef+/=",
                               "trove_token_7700", NULL));
    CHECK(!trove__api_token_ok(t, n, NULL, "trove_token_7700=0123456789abcdef+/=", NULL, NULL));
}

/* ---- connections -------------------------------------------------------------------------- */

static int closed_count;

static void on_closed(struct trove__conn *c)
{
    closed_count++;
    free(c);
}

static struct sockaddr_storage addr4(const char *ip, unsigned port)
{
    struct sockaddr_storage ss;
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;

    memset(&ss, 0, sizeof ss);
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, ip, &a->sin_addr);
    return ss;
}

/* A connection of the set on one end of a socket pair; the other end in *peer. */
static struct trove__conn *conn_on_pair(struct trove__conn_set *s, const char *ip, uint64_t id,
                                        uint64_t now, int *peer)
{
    struct sockaddr_storage ss = addr4(ip, 40000 + (unsigned)id);
    struct trove__conn *c = calloc(1, sizeof *c);
    int sv[2];

    if (!c || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) {
        free(c);
        return NULL;
    }
    c->closed = on_closed;
    if (trove__conn_start(s, c, sv[0], &ss, id, now) != TROVE_OK) {
        close(sv[0]);
        close(sv[1]);
        free(c);
        return NULL;
    }
    *peer = sv[1];
    return c;
}

static void test_conn_limits(void)
{
    struct trove__conn_set s;
    struct sockaddr_storage a = addr4("10.0.0.1", 1), b = addr4("10.0.0.2", 1);
    struct trove__conn *c[8];
    int peer[8], ep = epoll_create1(EPOLL_CLOEXEC);

    closed_count = 0;
    CHECK(ep >= 0);
    CHECK_EQ_INT(trove__conns_init(&s, ep, 4, 2, 1000), TROVE_OK);
    /* two from A, then a third from A takes the place of A's oldest (in HEAD) */
    CHECK_EQ_INT(trove__conns_admit(&s, &a), 0);
    c[0] = conn_on_pair(&s, "10.0.0.1", 1, 100, &peer[0]);
    CHECK_EQ_INT(trove__conns_admit(&s, &a), 0);
    c[1] = conn_on_pair(&s, "10.0.0.1", 2, 101, &peer[1]);
    CHECK(c[0] && c[1] && s.n == 2);
    CHECK_EQ_INT(trove__conns_admit(&s, &a), 0);
    CHECK(c[0]->dead && !c[1]->dead && s.n == 1 && s.evicted == 1);
    trove__conns_reap(&s);
    CHECK_EQ_INT(closed_count, 1);
    c[2] = conn_on_pair(&s, "10.0.0.1", 3, 102, &peer[2]);
    /* c[1] and c[2] are past their heads (in no list): a third from A is refused */
    trove__conn_list(c[1], TROVE__LIST_NONE, 103);
    trove__conn_list(c[2], TROVE__LIST_NONE, 103);
    CHECK_EQ_INT(trove__conns_admit(&s, &a), -1);
    CHECK_EQ_INT(s.refused, 1);
    /* B fills the set to 4; a fifth (from B) makes room by closing B's oldest head; with
     * every connection busy, the next is refused */
    CHECK_EQ_INT(trove__conns_admit(&s, &b), 0);
    c[3] = conn_on_pair(&s, "10.0.0.2", 4, 104, &peer[3]);
    CHECK_EQ_INT(trove__conns_admit(&s, &b), 0);
    c[4] = conn_on_pair(&s, "10.0.0.2", 5, 105, &peer[4]);
    CHECK(s.n == 4);
    CHECK_EQ_INT(trove__conns_admit(&s, &b), 0); /* B is at its share: B's oldest goes */
    CHECK(c[3]->dead && !c[4]->dead && s.n == 3);
    trove__conns_reap(&s);
    c[5] = conn_on_pair(&s, "10.0.0.3", 6, 106, &peer[5]);
    CHECK(s.n == 4);
    CHECK_EQ_INT(trove__conns_admit(&s, &b), 0); /* full: the oldest head of all goes (c[4]) */
    CHECK(c[4]->dead && !c[5]->dead);
    trove__conns_reap(&s);
    trove__conn_list(c[5], TROVE__LIST_NONE, 107);
    c[6] = conn_on_pair(&s, "10.0.0.4", 7, 108, &peer[6]);
    trove__conn_list(c[6], TROVE__LIST_NONE, 108);
    CHECK(s.n == 4);
    CHECK_EQ_INT(trove__conns_admit(&s, &b), -1); /* nothing to make room with */
    /* the per-address table stays right after all that removing */
    CHECK_EQ_INT(trove__conns_admit(&s, &a), -1);
    trove__conns_fini(&s);
    CHECK_EQ_INT(closed_count, 7);
    for (int i = 0; i < 7; i++)
        close(peer[i]);
    close(ep);
}

static void test_conn_timeouts(void)
{
    struct trove__conn_set s;
    struct trove__conn *c1, *c2, *c3;
    char buf[512];
    int p1, p2, p3, ep = epoll_create1(EPOLL_CLOEXEC);
    ssize_t n;

    closed_count = 0;
    CHECK_EQ_INT(trove__conns_init(&s, ep, 16, 16, 5000), TROVE_OK);
    c1 = conn_on_pair(&s, "10.0.0.1", 1, 1000, &p1);
    c2 = conn_on_pair(&s, "10.0.0.2", 2, 2000, &p2);
    c3 = conn_on_pair(&s, "10.0.0.3", 3, 3000, &p3);
    CHECK(c1 && c2 && c3);
    trove__conn_list(c3, TROVE__LIST_ACTIVE, 3000);
    /* a time taken after the tick's: never expired by it */
    trove__conns_expire(&s, 900);
    CHECK(!c1->dead && !c2->dead && !c3->dead);
    trove__conns_expire(&s, 1000 + TROVE__HEAD_TIMEOUT_NS - 1);
    CHECK(!c1->dead);
    trove__conns_expire(&s, 1000 + TROVE__HEAD_TIMEOUT_NS);
    CHECK(c1->dead && !c2->dead && c3->dead); /* c3's 5 µs of idle passed long ago */
    CHECK_EQ_INT(s.timed_out, 2);
    n = read(p1, buf, sizeof buf - 1);
    CHECK(n > 12 && memcmp(buf, "HTTP/1.1 408 ", 13) == 0);
    trove__conns_reap(&s);
    CHECK_EQ_INT(closed_count, 2);
    trove__conns_fini(&s);
    close(p1);
    close(p2);
    close(p3);
    close(ep);
}

static int fill_calls;

static int fill_twice(struct trove__conn *c)
{
    static const char more[] = "more bytes";
    if (fill_calls++ < 2)
        return trove__conn_put(c, more, sizeof more - 1);
    return 0;
}

/* The queue: small pieces, owned buffers, a shared frame (released once sent), written as
 * the socket takes them, fill asked for more while it runs low, then the end. */
static void test_conn_output(void)
{
    struct trove__conn_set s;
    struct trove__conn *c;
    struct trove__frame_buf *fb;
    uint8_t *own = malloc(3000000), *got = malloc(4000000), frame[70000];
    size_t total = 0, want;
    int peer, ep = epoll_create1(EPOLL_CLOEXEC), sz = 4096;

    CHECK(own && got);
    closed_count = 0;
    fill_calls = 0;
    CHECK_EQ_INT(trove__conns_init(&s, ep, 4, 4, 1000000000ull), TROVE_OK);
    c = conn_on_pair(&s, "10.0.0.1", 1, 1, &peer);
    CHECK(c != NULL);
    if (!c || !own || !got)
        return;
    setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    memset(own, 'o', 3000000);
    for (size_t i = 0; i < sizeof frame; i++)
        frame[i] = (uint8_t)i;
    fb = trove__frame_buf_new(frame, sizeof frame, 0, 7);
    CHECK(fb != NULL);
    CHECK_EQ_INT(trove__conn_put(c, "abc", 3), TROVE_OK);
    CHECK_EQ_INT(trove__conn_put_own(c, own, 100, 2999900), TROVE_OK);
    atomic_fetch_add(&fb->refs, 1); /* ours, to see the queue's go */
    CHECK_EQ_INT(trove__conn_put_frame(c, fb), TROVE_OK);
    want = 3 + 2999900 + 10 + sizeof frame + 20;
    c->fill = fill_twice;
    trove__conn_list(c, TROVE__LIST_NONE, 2); /* its head was read */
    CHECK_EQ_INT(trove__conn_pump(c, 2), 0);
    CHECK(c->out_armed && c->list == TROVE__LIST_ACTIVE); /* the socket is full */
    while (total < want) {
        ssize_t n = read(peer, got + total, 4000000 - total);
        if (n > 0)
            total += (size_t)n;
        else if (trove__conn_pump(c, 3) != 0)
            break;
    }
    CHECK_EQ_INT(total, want);
    CHECK(memcmp(got, "abc", 3) == 0 && got[3] == 'o' && got[2999902] == 'o');
    CHECK(got[2999903] == 0x82 && got[2999904] == 127); /* the frame's header, 64-bit length */
    CHECK(memcmp(got + 2999903 + 10, frame, sizeof frame) == 0);
    CHECK(memcmp(got + want - 20, "more bytesmore bytes", 20) == 0);
    CHECK_EQ_INT(atomic_load(&fb->refs), 1); /* the queue let go of its reference */
    trove__frame_buf_release(fb);
    CHECK(!c->out_armed && c->list == TROVE__LIST_NONE);
    /* the end: the sending side is shut, then it lingers until the peer's end */
    trove__conn_end(c, 1, 4);
    CHECK(c->list == TROVE__LIST_LINGER && !c->dead);
    CHECK_EQ_INT(read(peer, got, 16), 0);
    close(peer);
    trove__conn_discard(c);
    CHECK(c->dead);
    trove__conns_reap(&s);
    CHECK_EQ_INT(closed_count, 1);
    trove__conns_fini(&s);
    free(got);
    close(ep);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_head_whole_and_in_pieces);
    RUN(test_head_names_whole);
    RUN(test_head_refusals);
    RUN(test_head_limits);
    RUN(test_answer_head);
    RUN(test_ws_frames);
    RUN(test_ws_accept_key);
    RUN(test_host);
    RUN(test_origin_and_change);
    RUN(test_token);
    RUN(test_conn_limits);
    RUN(test_conn_timeouts);
    RUN(test_conn_output);
    return test_done();
}
