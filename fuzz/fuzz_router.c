/*
 * fuzz_router.c: libFuzzer target for the service's request router and access checks
 * (src/net/api.c): the input is split at NUL bytes into a method byte, a path, a query,
 * an Authorization header, a Cookie header, an Origin and a Host. Oracles: a routed
 * request's capture name passes the store's name check and holds no '/', '.' first or NUL;
 * an embedded file (/, /web/NAME) is reached only by its whole name; an error has a status
 * and a code the API documents; from_ns <= to_ns; a profile's limit is 1 .. 500; the token check
 * accepts the right token in either header and nothing that differs from it; and the input
 * as one piece the HTTP layer decoded (a query's value), escaped again by trove__api_escape
 * as web.c does, is read back by the router exactly (a space as '+'), or refused for a NUL
 * (400) or its length (413).
 */
#include <stdlib.h>
#include <string.h>

#include "net/api.h"
#include "net/assets.h"
#include "net/profile_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TOKEN "0123456789abcdef-token"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf, *part[7] = {0};
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
    for (size_t i = 0; i + 1 < size && n < 7; i++)
        if (buf[i] == 0)
            part[n++] = buf + i + 1;
    method = 1 + data[0] % 4;
    rc = trove__api_route(method, part[0], n > 1 ? part[1] : NULL, &r, &e);
    if (rc == 0) {
        struct trove_diag d = {0};
        if (r.name[0] && (trove_volume_name_check(r.name, &d) != TROVE_OK ||
                          strchr(r.name, '/') || r.name[0] == '.'))
            abort();
        if (r.from_ns > r.to_ns || r.route < TROVE__R_INDEX || r.route > TROVE__R_ASSET)
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
        int ok = trove__api_token_ok(TOKEN, strlen(TOKEN), auth, cookie);
        /* accepted only when one of the headers holds exactly the token */
        if (ok && !(auth && strstr(auth, TOKEN)) && !(cookie && strstr(cookie, TOKEN)))
            abort();
        if (!trove__api_token_ok(TOKEN, strlen(TOKEN), "Bearer " TOKEN, NULL) ||
            !trove__api_token_ok(TOKEN, strlen(TOKEN), NULL, "a=1; trove_token=" TOKEN))
            abort();
        trove__api_origin_ok(n > 4 ? part[4] : NULL, n > 5 ? part[5] : NULL, NULL, 0);
    }
    {
        /* The input's bytes as one piece the HTTP layer decoded, escaped again: the router
         * reads back exactly that piece (a space as '+'), or refuses its NUL (400) or its
         * length (413); what does not fit the buffer fills it past the router's limit. */
        char q[TROVE__API_QUERY_MAX + 2] = "token=", want[300];
        size_t len = 6, k = size - 1 < 299 ? size - 1 : 299;
        const uint8_t *piece = data + 1;
        int esc = trove__api_escape((const char *)piece, k, q, sizeof q, &len);
        rc = trove__api_route(TROVE__GET, "/login", q, &r, &e);
        if (esc != 0 || len != strlen(q))
            abort(); /* 6 + 3 * 299 bytes always fit */
        for (size_t i = 0; i < k; i++)
            want[i] = piece[i] == ' ' ? '+' : (char)piece[i];
        want[k] = 0;
        if (memchr(piece, 0, k) ? rc != -1 || e.status != 400
            : k > 256           ? rc != -1 || e.status != 413
                                : rc != 0 || strcmp(r.token, want) != 0)
            abort();
        memset(q, 'a', 10);
        len = 10;
        if (trove__api_escape("%", 1, q, 12, &len) != -1 || len != 11 || strlen(q) != 11)
            abort();
    }
    free(buf);
    return 0;
}
