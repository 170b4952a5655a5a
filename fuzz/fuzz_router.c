/*
 * fuzz_router.c: libFuzzer target for the service's request router and access checks
 * (src/net/api.c): the input is split at NUL bytes into a method byte, a path, a query,
 * an Authorization header, a Cookie header, an Origin, a Host and a Sec-Fetch-Site.
 * Oracles: a routed request's capture name passes the store's name check and holds no '/',
 * '.' first or NUL; an embedded file (/, /web/NAME) is reached only by its whole name; an
 * error has a status and a code the API documents; from_ns <= to_ns (and a diff's two ranges
 * in order, its second capture's name checked too); a profile's limit is
 * 1 .. 500; the token check accepts the right token in either header (the cookie by its
 * port's name only) and nothing that differs from it; a Host is taken only when it names
 * 127.0.0.1 or localhost (any case, any port), an Origin only when it is http:// one of those
 * at the service's port exactly (or one --allow-origin gave); and a change is let through
 * only with no Origin or an allowed one, no cross-site Sec-Fetch-Site, a bearer token when
 * the service has one and there is no Origin, and a POST body type no form can send.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/api.h"
#include "net/assets.h"
#include "net/profile_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TOKEN "0123456789abcdef-token"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf, *part[8] = {0};
    struct trove__api_req r;
    struct trove__api_error e;
    size_t n = 0;
    int method, rc;

    if (size < 1)
        return 0;
    if (!(buf = malloc(size + 1)))
        abort();
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    part[n++] = buf;
    for (size_t i = 0; i + 1 < size && n < 8; i++)
        if (buf[i] == 0)
            part[n++] = buf + i + 1;
    method = 1 + data[0] % 4;
    rc = trove__api_route(method, part[0], n > 1 ? part[1] : NULL, &r, &e);
    if (rc == 0) {
        struct trove_diag d = {0};
        if (r.name[0] && (trove_volume_name_check(r.name, &d) != TROVE_OK ||
                          strchr(r.name, '/') || r.name[0] == '.'))
            abort();
        if (r.from_ns > r.to_ns || r.route < TROVE__R_INDEX || r.route > TROVE__R_DIFF)
            abort();
        /* a diff names two captures, each as the store checks names, and ranges in order */
        if (r.route == TROVE__R_DIFF &&
            (!r.name[0] || trove_volume_name_check(r.name_b, &d) != TROVE_OK ||
             (r.a_to_ns && r.a_from_ns >= r.a_to_ns) || (r.b_to_ns && r.b_from_ns >= r.b_to_ns) ||
             r.method < 0 || r.method > 2 || r.alpha < 0 || r.alpha >= 1))
            abort();
        /* a profile's limit is always one it may take */
        if (r.route == TROVE__R_PROFILE && (r.limit < 1 || r.limit > TROVE__PROFILE_TOP_MAX))
            abort();
        /* /, /index.html and /web/NAME reach only an embedded file, by its whole name */
        if ((r.route == TROVE__R_INDEX || r.route == TROVE__R_ASSET) &&
            (r.asset < 0 || (unsigned)r.asset >= trove__web_nassets ||
             (r.route == TROVE__R_ASSET && strcmp(part[0] + 5, trove__web_assets[r.asset].name))))
            abort();
    } else if (rc == -1) {
        if ((e.status != 400 && e.status != 404 && e.status != 405 && e.status != 413) ||
            !e.code || !e.msg[0])
            abort();
    } else {
        abort();
    }
    {
        const char *auth = n > 2 ? part[2] : NULL, *cookie = n > 3 ? part[3] : NULL;
        const char *origin = n > 4 ? part[4] : NULL, *host = n > 5 ? part[5] : NULL;
        const char *site = n > 6 ? part[6] : NULL;
        static const char *const allow[] = {"http://allowed.example:8080"};
        struct trove__api_hosts h;
        struct trove__api_change c;
        char msg[300];
        int bearer, ok = trove__api_token_ok(TOKEN, strlen(TOKEN), auth, cookie,
                                             "trove_token_7700", &bearer), st;
        /* accepted only when one of the headers holds exactly the token */
        if (ok && !(auth && strstr(auth, TOKEN)) &&
            !(cookie && strstr(cookie, "trove_token_7700=" TOKEN)))
            abort();
        if (!trove__api_token_ok(TOKEN, strlen(TOKEN), "Bearer " TOKEN, NULL, NULL, &bearer) ||
            !bearer ||
            !trove__api_token_ok(TOKEN, strlen(TOKEN), NULL, "a=1; trove_token_7700=" TOKEN,
                                 "trove_token_7700", &bearer) ||
            bearer ||
            trove__api_token_ok(TOKEN, strlen(TOKEN), NULL, "trove_token_7701=" TOKEN,
                                "trove_token_7700", NULL))
            abort();
        memset(&h, 0, sizeof h);
        strcpy(h.listen, "127.0.0.1");
        h.port = 7700;
        if (host && trove__api_host_ok(host, strlen(host), &h)) {
            size_t k = strcspn(host, ":");
            if (!((k == 9 && !strncmp(host, "127.0.0.1", 9)) ||
                  (k == 9 && !strncasecmp(host, "localhost", 9))))
                abort();
        }
        if (origin && trove__api_origin_ok(origin, &h, allow, 1) &&
            strcasecmp(origin, "http://127.0.0.1:7700") && strcasecmp(origin, "http://localhost:7700") &&
            strcasecmp(origin, allow[0]))
            abort();
        memset(&c, 0, sizeof c);
        c.method = method;
        c.origin = origin;
        c.fetch_site = site;
        c.content_type = cookie; /* any bytes */
        c.x_trove = data[0] & 0x40;
        c.token_required = (data[0] & 0x80) != 0;
        c.bearer = bearer;
        st = trove__api_change_ok(&c, &h, allow, 1, msg, sizeof msg);
        if (st != 0 && (st != 403 || !msg[0]))
            abort();
        if (st == 0 && ((origin && !trove__api_origin_ok(origin, &h, allow, 1)) ||
                        (site && strcasecmp(site, "same-origin") && strcasecmp(site, "none") &&
                         !(origin && !strcasecmp(origin, allow[0]))) ||
                        (!origin && c.token_required && !bearer && method != TROVE__GET)))
            abort();
    }
    free(buf);
    return 0;
}
