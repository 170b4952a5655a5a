/*
 * fuzz_http.c: libFuzzer target for the service's reading of an HTTP request, as it runs
 * (fuzz_service.h: the service on a thread, one TCP connection per input): the request head
 * read a line at a time as it comes (src/net/http.c), the guards of src/net/web.c — the Host,
 * the token from Authorization or the port's cookie, a change's Origin, Sec-Fetch-Site and
 * Content-Type, a WebSocket upgrade's checks — an import's Content-Length, Expect:
 * 100-continue and body into a temporary file (web_api.c), and the router of src/net/api.c
 * and the answers.
 *
 * The first byte chooses the form. Even: the rest is sent as it is and the sending side
 * shut. Odd: the rest describes one request, sent whole with Connection: close — a method;
 * a path, one of the API's endpoints or made of the input's bytes; up to six query
 * parameters, names and values from the API's or from the input; every byte of them sent raw
 * where a path or query may hold it raw, else %-escaped (upper or lower case), as the input
 * says; Host, Authorization, Cookie, Origin, Sec-Fetch-Site and Content-Type chosen among
 * right, wrong, absent and the input's; the upgrade headers; a Content-Length and a body for
 * POST, PUT and PATCH; Expect: 100-continue.
 *
 * Oracles. Any request: the service answers with nothing but HTTP responses and closes the
 * connection within 10 s of the request's end. A described request: exactly one response
 * comes, and its status is the one the request calls for, worked out from the request as it
 * was written: 405 for a method the service does not take (before anything else), 400 for a
 * Host that does not name it, then the router (trove__api_route) on the target exactly as
 * sent, the token check on the headers as sent, a change's guard (trove__api_change_ok), the
 * upgrade's rules (404 off the WebSocket endpoints, 401, a foreign Origin 403, else 101), an
 * import's (413 over --max-import; else the input layer stores the body, 200, or refuses it,
 * 400 for the body, 404 for an append to nothing, 409 for a name taken), and a capture's
 * endpoints (info, profile, export, delete: 200 for a capture an import made and no delete
 * removed since, else 404: the store starts empty); a JSON error carries its status's code;
 * "100 Continue" comes first exactly when an import that asked for it is accepted.
 */
#include "fuzz_service.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/api.h"
#include "trove/volume.h"
#include "net/assets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the input, read as choices ---------------------------------------------------------- */

struct rd {
    const uint8_t *p;
    size_t n;
};

static unsigned u8(struct rd *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static unsigned u16(struct rd *r) { return u8(r) | u8(r) << 8; }

/* Up to max bytes of the input, as many as the next byte says. */
static size_t take(struct rd *r, size_t max, const uint8_t **out)
{
    size_t n = u8(r) % (max + 1);
    if (n > r->n)
        n = r->n;
    *out = r->p;
    r->p += n;
    r->n -= n;
    return n;
}

/* ---- what the request means, and how it is written ---------------------------------------- */

#define NPARAM 6

struct param {
    uint8_t key[64], val[256];
    size_t klen, vlen;
    int eq;     /* "key=value", else a flag "key" */
};

struct req {
    int method; /* TROVE__* as the router takes it */
    int amp_after; /* each parameter is followed by an empty one (a '&') */
    int body;   /* a method with a body: Content-Length and the bytes */
    int head;   /* HEAD: an answer without a body */
    uint8_t path[512];
    size_t plen;
    struct param par[NPARAM];
    size_t npar;
    char auth[300], cookie[300], origin[300], host[128]; /* "" when not sent */
    char site[32], ctype[80];
    int has_auth, has_cookie, has_origin, has_site, has_ctype, x_trove;
    char target[8192]; /* as sent: the path, and the query after its '?' */
    size_t path_len;
    int has_query;
    int upgrade, expect100;
    uint64_t clen;
};

/* A path's and a query's bytes that may go raw (RFC 3986 pchar; in a query without '&' and
 * ';', which the HTTP layer takes as separators); a query's name may not hold a raw '='. */
static const char path_raw[] = "-._~!$'()*+,:=@&;";
static const char key_raw[] = "-._~!$'()*+,:@/?";
static const char val_raw[] = "-._~!$'()*+,:@/?=";

static int is_raw(unsigned c, const char *also)
{
    return isalnum((int)c) ? c < 0x80 : c && strchr(also, (int)c) != NULL;
}

/* Append s[0..n) to w, each byte raw (if it may be and the input says so) or escaped. */
static void put_escaped(struct trove_bytes *w, const uint8_t *s, size_t n, const char *raw,
                        struct rd *r)
{
    unsigned bits = 0;
    for (size_t i = 0; i < n; i++) {
        char e[4];
        if (i % 4 == 0)
            bits = u8(r);
        if (is_raw(s[i], raw) && (bits & 1)) {
            CHECK(trove_bytes_append(w, &s[i], 1) == TROVE_OK);
        } else {
            snprintf(e, sizeof e, bits & 2 ? "%%%02x" : "%%%02X", s[i]);
            CHECK(trove_bytes_append(w, e, 3) == TROVE_OK);
        }
        bits >>= 2;
    }
}

static void puts_(struct trove_bytes *w, const char *s)
{
    CHECK(trove_bytes_append(w, s, strlen(s)) == TROVE_OK);
}

static void add_path(struct req *q, const void *s, size_t n)
{
    if (n > sizeof q->path - q->plen)
        n = sizeof q->path - q->plen;
    memcpy(q->path + q->plen, s, n);
    q->plen += n;
}

/* Printable bytes without a space, for a header's value. */
static void printable(char *out, size_t cap, const uint8_t *s, size_t n)
{
    size_t o = strlen(out);
    for (size_t i = 0; i < n && o + 1 < cap; i++)
        out[o++] = (char)(0x21 + s[i] % 94);
    out[o] = 0;
}

static const char *const names[] = {"fuzz", "a.b-c_9", "x"};

/* The name part of a path or a value: one of the API's, or the input's bytes. */
static size_t some_name(struct rd *r, uint8_t *out, size_t cap)
{
    unsigned c = u8(r);
    const uint8_t *b;
    size_t n;
    if (c % 4 < 3) {
        n = strlen(names[c % 4]);
        memcpy(out, names[c % 4], n);
        return n;
    }
    n = take(r, cap < 40 ? cap : 40, &b);
    memcpy(out, b, n);
    return n;
}

static void build_path(struct rd *r, struct req *q, struct trove_bytes *w)
{
    static const char *const fixed[] = {"/", "/index.html", "/status", "/api/status", "/metrics",
                                        "/login", "/api/live", "/api/replay", "/api/captures",
                                        "/api/captures/", "/api/captures/import"};
    unsigned b = u8(r), c = b % 17;
    uint8_t name[64];
    size_t n;

    if (c < 11) {
        add_path(q, fixed[c], strlen(fixed[c]));
        puts_(w, fixed[c]);
        return;
    }
    if (c == 11) { /* one of the viewer's files, by its name */
        const char *a = trove__web_assets[u8(r) % trove__web_nassets].name;
        add_path(q, "/web/", 5);
        puts_(w, "/web/");
        add_path(q, a, strlen(a));
        put_escaped(w, (const uint8_t *)a, strlen(a), path_raw, r);
        return;
    }
    if (c == 16) { /* anything */
        add_path(q, "/", 1);
        puts_(w, "/");
        n = some_name(r, name, sizeof name);
        add_path(q, name, n);
        put_escaped(w, name, n, path_raw, r);
        return;
    }
    add_path(q, c == 12 ? "/web/" : "/api/captures/", c == 12 ? 5 : 14);
    puts_(w, c == 12 ? "/web/" : "/api/captures/");
    n = some_name(r, name, sizeof name);
    add_path(q, name, n);
    put_escaped(w, name, n, path_raw, r);
    if (c == 14) { /* /export, or /profile on every other turn of the byte */
        const char *tail = (b / 17) % 2 ? "/profile" : "/export";
        add_path(q, tail, strlen(tail));
        puts_(w, tail);
    } else if (c == 15) {
        add_path(q, "/", 1);
        puts_(w, "/");
        n = some_name(r, name, sizeof name);
        add_path(q, name, n);
        put_escaped(w, name, n, path_raw, r);
    }
}

static void build_param(struct rd *r, struct param *p)
{
    static const char *const keys[] = {"capture", "wire", "from", "from_ns", "to_ns", "speed",
                                       "format", "name", "append", "token"};
    static const char *const vals[][6] = {
        {"fuzz", "a.b-c_9", "..", "", "x/y", "-a"},
        {"auto", "raw", "packed", "deflate", "zstd", ""},
        {"start", "now", "then", "", "START", "now "},
        {"0", "1", "18446744073709551615", "18446744073709551616", "-1", "1e3"},
        {"0", "5", "18446744073709551615", "99999999999999999999", "", "0x10"},
        {"max", "1", "0.5", "0", "1e9", "1e10"},
        {"bundle", "parquet", "dir.zip", "chrome-json", "perfetto", "zip"},
        {"fuzz", "a.b-c_9", "import", "", "a b", "%"},
        {"0", "1", "true", "false", "yes", ""},
        {FUZZ_TOKEN, "fuzz+Token/0123456789abc", "fuzz Token/0123456789abc=", "", "x", "Bearer"}};
    unsigned k = u8(r), v = u8(r);
    const uint8_t *b;

    memset(p, 0, sizeof *p);
    p->eq = (k & 0x80) == 0 || (v & 0x80) == 0;
    if (k % 12 < 10) {
        p->klen = strlen(keys[k % 12]);
        memcpy(p->key, keys[k % 12], p->klen);
    } else {
        p->klen = take(r, 24, &b);
        memcpy(p->key, b, p->klen);
    }
    if (!p->eq)
        return;
    if (k % 12 < 10 && v % 8 < 6) {
        p->vlen = strlen(vals[k % 12][v % 8]);
        memcpy(p->val, vals[k % 12][v % 8], p->vlen);
    } else if (v % 8 == 6) {
        p->vlen = some_name(r, p->val, sizeof p->val);
    } else {
        p->vlen = take(r, 200, &b);
        memcpy(p->val, b, p->vlen);
    }
}

static void build_headers(struct rd *r, struct req *q, int port)
{
    static const char *const auths[] = {"Bearer " FUZZ_TOKEN, "bearer   " FUZZ_TOKEN,
                                        "Bearer fuzz+Token/0123456789abc", "Basic Zm9vOmJhcg==",
                                        "Bearer " FUZZ_TOKEN " and more", "Bearer "};
    static const char *const cookies[] = {"trove_token_%d=" FUZZ_TOKEN,
                                          "a=1; trove_token_%d=" FUZZ_TOKEN,
                                          "xtrove_token_%d=" FUZZ_TOKEN, "trove_token_%d=wrong",
                                          "trove_token_%d=" FUZZ_TOKEN "; b=2",
                                          "trove_token=" FUZZ_TOKEN "; x=%d"};
    static const char *const sites[] = {"same-origin", "none", "same-site", "cross-site"};
    static const char *const types[] = {"application/octet-stream", "text/plain",
                                        "application/x-www-form-urlencoded; charset=x",
                                        "Multipart/Form-Data; boundary=x", "application/json"};
    unsigned a = u8(r), c = u8(r), o = u8(r), t = u8(r);
    const uint8_t *b;
    size_t n;

    if (o % 4 == 0)
        snprintf(q->host, sizeof q->host, "127.0.0.1:%d", port);
    else if (o % 4 == 1)
        snprintf(q->host, sizeof q->host, "localhost");
    else {
        n = take(r, 60, &b);
        printable(q->host, sizeof q->host, b, n);
    }
    if ((q->has_auth = a % 8 != 0) != 0) {
        snprintf(q->auth, sizeof q->auth, "%s", auths[a % 8 < 7 ? a % 8 - 1 : 5]);
        if (a % 8 == 7) {
            n = take(r, 60, &b);
            printable(q->auth, sizeof q->auth, b, n);
        }
    }
    if ((q->has_cookie = c % 8 != 0) != 0) {
        snprintf(q->cookie, sizeof q->cookie, cookies[c % 8 < 7 ? c % 8 - 1 : 5], port);
        if (c % 8 == 7) {
            n = take(r, 60, &b);
            printable(q->cookie, sizeof q->cookie, b, n);
        }
    }
    if ((q->has_origin = (o >> 2) % 4 != 0) != 0) {
        if ((o >> 2) % 4 == 1)
            snprintf(q->origin, sizeof q->origin, "http://%s", q->host);
        else if ((o >> 2) % 4 == 2)
            snprintf(q->origin, sizeof q->origin, "http://evil.example");
        else {
            n = take(r, 60, &b);
            printable(q->origin, sizeof q->origin, b, n);
        }
    }
    q->upgrade = (o & 0x10) && q->method == TROVE__GET;
    q->expect100 = (o & 0x20) != 0;
    if ((q->has_site = t % 8 < 4) != 0)
        snprintf(q->site, sizeof q->site, "%s", sites[t % 8]);
    if ((q->has_ctype = (t >> 3) % 8 < 5) != 0)
        snprintf(q->ctype, sizeof q->ctype, "%s", types[(t >> 3) % 8]);
    q->x_trove = (t & 0x40) != 0;
}

/* The request the input describes, into w, with what it means into *q. */
static void build(struct rd *r, struct req *q, struct trove_bytes *w, int port)
{
    static const struct {
        const char *name;
        int method, body;
    } methods[] = {{"GET", TROVE__GET, 0},      {"GET", TROVE__GET, 0},
                   {"GET", TROVE__GET, 0},      {"POST", TROVE__POST, 1},
                   {"POST", TROVE__POST, 1},    {"DELETE", TROVE__DELETE, 0},
                   {"PUT", TROVE__OTHER, 1},    {"PATCH", TROVE__OTHER, 1},
                   {"HEAD", TROVE__OTHER, 0},   {"OPTIONS", TROVE__OTHER, 0}};
    unsigned m = u8(r) % 10, np;
    char line[64];
    size_t blen = 0, start;

    memset(q, 0, sizeof *q);
    q->method = methods[m].method;
    q->body = methods[m].body;
    q->head = m == 8;
    puts_(w, methods[m].name);
    puts_(w, " ");
    start = w->len;
    build_path(r, q, w);
    q->path_len = w->len - start;
    np = u8(r);
    q->npar = np % (NPARAM + 1);
    for (size_t i = 0; i < q->npar; i++) {
        struct param *p = &q->par[i];
        build_param(r, p);
        puts_(w, i == 0 ? "?" : "&");
        if ((np >> 4) & 1 && i == 0)
            puts_(w, "&"); /* an empty parameter first */
        put_escaped(w, p->key, p->klen, key_raw, r);
        if (p->eq) {
            puts_(w, "=");
            put_escaped(w, p->val, p->vlen, val_raw, r);
        }
        if ((np >> 5) & 1)
            puts_(w, "&"); /* and after */
        q->amp_after = (np >> 5) & 1;
    }
    q->has_query = q->npar > 0;
    snprintf(q->target, sizeof q->target, "%.*s", (int)(w->len - start),
             (const char *)w->ptr + start);
    puts_(w, " HTTP/1.1\r\n");
    build_headers(r, q, port);
    snprintf(line, sizeof line, "Host: ");
    puts_(w, line);
    puts_(w, q->host);
    puts_(w, "\r\n");
    if (q->has_auth) {
        puts_(w, "Authorization: ");
        puts_(w, q->auth);
        puts_(w, "\r\n");
    }
    if (q->has_cookie) {
        puts_(w, "Cookie: ");
        puts_(w, q->cookie);
        puts_(w, "\r\n");
    }
    if (q->has_origin) {
        puts_(w, "Origin: ");
        puts_(w, q->origin);
        puts_(w, "\r\n");
    }
    if (q->has_site) {
        puts_(w, "Sec-Fetch-Site: ");
        puts_(w, q->site);
        puts_(w, "\r\n");
    }
    if (q->has_ctype) {
        puts_(w, "Content-Type: ");
        puts_(w, q->ctype);
        puts_(w, "\r\n");
    }
    if (q->x_trove)
        puts_(w, "X-Trove-Request: 1\r\n");
    if (q->upgrade)
        puts_(w, "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n");
    else
        puts_(w, "Connection: close\r\n");
    if (q->expect100)
        puts_(w, "Expect: 100-continue\r\n");
    if (q->body) {
        unsigned l = u16(r);
        blen = l % 8192;
        q->clen = blen;
        if (l & 0x8000) { /* a length far over --max-import, and a few bytes */
            q->clen = 99999999999ull;
            blen %= 64;
        }
        snprintf(line, sizeof line, "Content-Length: %llu\r\n", (unsigned long long)q->clen);
        puts_(w, line);
    }
    puts_(w, "\r\n");
    for (size_t i = 0; i < blen; i++) { /* the rest of the input, again and again */
        uint8_t c = r->n ? r->p[i % r->n] : (uint8_t)i;
        CHECK(trove_bytes_append(w, &c, 1) == TROVE_OK);
    }
}

/* ---- what the request calls for ---------------------------------------------------------- */

static void trimmed(const char *s, char *out, size_t cap)
{
    size_t a = 0, b = strlen(s);
    while (s[a] == ' ' || s[a] == '\t')
        a++;
    while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t'))
        b--;
    snprintf(out, cap, "%.*s", (int)(b - a), s + a);
}

/* The status q calls for, and *cont when "100 Continue" must come first. */
/* The captures imports made (and deletes have not removed): the store's whole content. */
#define STORED_MAX 64
static char stored[STORED_MAX][TROVE_VOLUME_NAME_MAX + 1];
static size_t nstored;
static int overflowed; /* more were stored than the list holds: any name may be there */

static int is_stored(const char *name)
{
    for (size_t i = 0; i < nstored; i++)
        if (!strcmp(stored[i], name))
            return 1;
    return 0;
}

/* An import's answer: any of these (the body decides); a capture's, 200 or 404 (once the
 * list overflowed). */
#define ANY_IMPORT (-1)
#define ANY_CAPTURE (-2)

/* The status q calls for (ANY_IMPORT for an import the service takes), with the capture it
 * names in name when it names one. */
static int expect(const struct req *q, int port, int *cont, char *name)
{
    struct trove__api_req r;
    struct trove__api_error e;
    struct trove__api_hosts h;
    struct trove__api_change c;
    char path[8192], cookie_name[32], msg[300], av[300], cv[300];
    int rc, auth, bearer;

    *cont = 0;
    if (q->method == TROVE__OTHER)
        return 405; /* refused at the request line */
    memset(&h, 0, sizeof h);
    snprintf(h.listen, sizeof h.listen, "127.0.0.1");
    h.port = (unsigned)port;
    if (!trove__api_host_ok(q->host, strlen(q->host), &h))
        return 400;
    snprintf(path, sizeof path, "%.*s", (int)q->path_len, q->target);
    snprintf(cookie_name, sizeof cookie_name, "trove_token_%d", port);
    /* A header's value is what follows its colon without the spaces around it (RFC 9110
     * 5.5): "Bearer " arrives as "Bearer". */
    trimmed(q->auth, av, sizeof av);
    trimmed(q->cookie, cv, sizeof cv);
    auth = trove__api_token_ok(FUZZ_TOKEN, strlen(FUZZ_TOKEN), q->has_auth ? av : NULL,
                               q->has_cookie ? cv : NULL, cookie_name, &bearer);
    if (q->upgrade) {
        if (strcmp(path, "/api/live") && strcmp(path, "/api/replay"))
            return 404;
        if (!auth)
            return 401;
        if (!trove__api_origin_ok(q->has_origin ? q->origin : NULL, &h, NULL, 0))
            return 403;
        return 101;
    }
    rc = trove__api_route(q->method, path, q->has_query ? q->target + q->path_len + 1 : NULL,
                          &r, &e);
    if (rc != 0)
        return e.status;
    if (r.route != TROVE__R_LOGIN && !auth)
        return 401;
    if (r.route == TROVE__R_IMPORT || r.route == TROVE__R_DELETE || r.route == TROVE__R_LOGIN) {
        memset(&c, 0, sizeof c);
        c.method = q->method;
        c.origin = q->has_origin ? q->origin : NULL;
        c.fetch_site = q->has_site ? q->site : NULL;
        c.content_type = q->has_ctype ? q->ctype : NULL;
        c.x_trove = q->x_trove;
        c.token_required = 1;
        c.bearer = r.route == TROVE__R_LOGIN ? 0 : bearer;
        if (trove__api_change_ok(&c, &h, NULL, 0, msg, sizeof msg) != 0)
            return 403;
    }
    snprintf(name, TROVE_VOLUME_NAME_MAX + 1, "%s", r.name);
    switch (r.route) {
    case TROVE__R_LIVE:
    case TROVE__R_REPLAY:
        return 400;
    case TROVE__R_INFO:
    case TROVE__R_DELETE:
    case TROVE__R_PROFILE:
    case TROVE__R_EXPORT:
        return is_stored(r.name) ? 200 : overflowed ? ANY_CAPTURE : 404; /* what the imports
                                                                              stored */
    case TROVE__R_IMPORT:
        if (q->clen > FUZZ_MAX_IMPORT)
            return 413;
        *cont = q->expect100;
        return ANY_IMPORT;
    case TROVE__R_LOGIN: {
        char b[300];
        snprintf(b, sizeof b, "Bearer %s", r.token);
        return trove__api_token_ok(FUZZ_TOKEN, strlen(FUZZ_TOKEN), b, NULL, NULL, NULL) ? 302
                                                                                      : 401;
    }
    default:
        return 200;
    }
}

/* ---- the answer ------------------------------------------------------------------------- */

struct resp {
    int head_only; /* the request was a HEAD or an upgrade: the head is the whole answer */
    int cont;      /* a "100 Continue" came first */
    int status;
    int complete;
    const uint8_t *body;
    size_t body_len;
    long long clen;
};

static const uint8_t *find(const uint8_t *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(p + i, s, k))
            return p + i;
    return NULL;
}

static void parse(const struct trove_bytes *in, struct resp *a)
{
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    const uint8_t *p = in->ptr, *end;
    size_t n = in->len;

    a->cont = 0;
    a->status = 0;
    a->complete = 0;
    a->clen = -1;
    if (n >= sizeof cont - 1 && !memcmp(p, cont, sizeof cont - 1)) {
        a->cont = 1;
        p += sizeof cont - 1;
        n -= sizeof cont - 1;
    }
    if (!(end = find(p, n, "\r\n\r\n")))
        return;
    CHECK(n >= 12 && !memcmp(p, "HTTP/1.", 7) && (p[7] == '0' || p[7] == '1') && p[8] == ' ' &&
          isdigit(p[9]) && isdigit(p[10]) && isdigit(p[11]));
    a->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    for (const uint8_t *l = p; l < end; l++)
        if (l[0] == '\n' && end - l > 16 && !strncasecmp((const char *)l + 1, "content-length:", 15))
            a->clen = strtoll((const char *)l + 16, NULL, 10);
    a->body = end + 4;
    a->body_len = (size_t)(p + n - a->body);
    a->complete = a->head_only || a->status == 101 ||
                  (a->clen >= 0 && a->body_len >= (unsigned long long)a->clen);
}

static int whole(const struct trove_bytes *in, void *ctx)
{
    struct resp *a = ctx;
    parse(in, a);
    return a->complete;
}

static const char *code_of(int status)
{
    switch (status) {
    case 400: return "bad_request";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "too_large";
    case 501: return "not_implemented";
    case 503: return "unavailable";
    default: return NULL;
    }
}

static void structured(struct rd *r)
{
    struct trove_bytes w = {0}, in = {0};
    struct req q;
    struct resp a;
    int fd = fuzz_connect(), io, want, cont;
    char name[TROVE_VOLUME_NAME_MAX + 1] = "";

    build(r, &q, &w, fuzz_srv.port);
    want = expect(&q, fuzz_srv.port, &cont, name);
    memset(&a, 0, sizeof a);
    a.head_only = q.head || q.upgrade;
    io = fuzz_io(fd, w.ptr, w.len, 0, &in, whole, &a, FUZZ_IO_TIMEOUT_MS);
    fuzz_close(fd);
    if (io == FUZZ_IO_TIMEOUT) {
        fprintf(stderr, "no answer and no close in %d ms to:\n%.*s\n", FUZZ_IO_TIMEOUT_MS,
                (int)(w.len < 2000 ? w.len : 2000), (const char *)w.ptr);
        abort();
    }
    parse(&in, &a);
    if (!a.complete) {
        fprintf(stderr, "%s: %.*s\nto:\n%.*s\n", in.len ? "a cut answer" : "no answer",
                (int)(in.len < 500 ? in.len : 500), (const char *)in.ptr,
                (int)(w.len < 2000 ? w.len : 2000), (const char *)w.ptr);
        abort();
    }
    if (want == ANY_IMPORT && (a.status == 200 || a.status == 400 || a.status == 404 ||
                               a.status == 409))
        want = a.status;
    if (want == ANY_CAPTURE && (a.status == 200 || a.status == 404))
        want = a.status;
    if (a.complete && (a.status != want || a.cont != cont)) {
        fprintf(stderr, "status %d%s, not %d%s, to:\n%.*s\nanswer:\n%.*s\n", a.status,
                a.cont ? " after 100" : "", want, cont ? " after 100" : "",
                (int)(w.len < 2000 ? w.len : 2000), (const char *)w.ptr,
                (int)(in.len < 800 ? in.len : 800), (const char *)in.ptr);
        abort();
    }
    /* what the store holds now */
    if (a.status == 200 && q.method == TROVE__POST && !is_stored(name)) {
        if (nstored < STORED_MAX)
            snprintf(stored[nstored++], sizeof stored[0], "%s", name);
        else
            overflowed = 1;
    }
    if (a.status == 200 && q.method == TROVE__DELETE)
        for (size_t i = 0; i < nstored; i++)
            if (!strcmp(stored[i], name))
                memcpy(stored[i], stored[--nstored], sizeof stored[i]);
    if (a.complete && !a.head_only && a.body_len > 9 && !memcmp(a.body, "{\"error\":", 9)) {
        char code[40];
        const char *c = code_of(a.status);
        snprintf(code, sizeof code, "\"code\":\"%s\"", c ? c : "?");
        CHECK(c && find(a.body, a.body_len, code));
    }
    trove_bytes_free(&w);
    trove_bytes_free(&in);
}

static void raw(const uint8_t *data, size_t size)
{
    struct trove_bytes in = {0};
    int fd = fuzz_connect(), io;

    io = fuzz_io(fd, data, size, 1, &in, NULL, NULL, FUZZ_IO_TIMEOUT_MS);
    fuzz_close(fd);
    if (io == FUZZ_IO_TIMEOUT) {
        fprintf(stderr, "the service did not close in %d ms after the request's end\n",
                FUZZ_IO_TIMEOUT_MS);
        abort();
    }
    CHECK(in.len == 0 || (in.len >= 12 && !memcmp(in.ptr, "HTTP/1.", 7)));
    trove_bytes_free(&in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rd r = {data + 1, size > 0 ? size - 1 : 0};

    if (size < 1)
        return 0;
    fuzz_service_port();
    if (data[0] & 1)
        structured(&r);
    else
        raw(data + 1, size - 1);
    return 0;
}
