/*
 * api.h (internal): the service's HTTP API without the sockets (docs/serve.md, "The HTTP
 * API over stored captures"): the router, from a request's method, path and query to what
 * it asks for, with every parameter checked; and the checks of who may ask — the token
 * (Authorization: Bearer, or the trove_token cookie), compared in constant time, and a
 * WebSocket upgrade's Origin. Pure functions of their arguments, so that a fuzz target can
 * drive them from bytes.
 */
#ifndef TROVE_NET_API_H
#define TROVE_NET_API_H

#include <stddef.h>
#include <stdint.h>

#include "trove/volume.h"

#define TROVE__API_QUERY_MAX 4096u /* bytes of a query string */
#define TROVE__API_HEADER_MAX 8192u

enum trove__method { TROVE__GET = 1, TROVE__POST, TROVE__DELETE, TROVE__OTHER };

enum trove__route {
    TROVE__R_INDEX = 1, /* GET /, /index.html: the viewer (web/index.html) */
    TROVE__R_STATUS,    /* GET /api/status */
    TROVE__R_METRICS,   /* GET /metrics */
    TROVE__R_LOGIN,     /* GET /login?token= */
    TROVE__R_LIVE,      /* GET /api/live (WebSocket) */
    TROVE__R_REPLAY,    /* GET /api/replay (WebSocket) */
    TROVE__R_LIST,      /* GET /api/captures */
    TROVE__R_INFO,      /* GET /api/captures/NAME */
    TROVE__R_DELETE,    /* DELETE /api/captures/NAME */
    TROVE__R_EXPORT,    /* GET /api/captures/NAME/export */
    TROVE__R_PROFILE,   /* GET /api/captures/NAME/profile: its samples (profile_json.h) */
    TROVE__R_IMPORT,    /* POST /api/captures/import */
    TROVE__R_STATUS_PAGE, /* GET /status: the HTML status page */
    TROVE__R_ASSET      /* GET /web/NAME: one of the viewer's embedded files (assets.h) */
};

enum trove__export_format {
    TROVE__X_BUNDLE = 1,
    TROVE__X_PARQUET,
    TROVE__X_DIR_ZIP,
    TROVE__X_CHROME_JSON,
    TROVE__X_PERFETTO
};

struct trove__api_req {
    int route;
    char name[TROVE_VOLUME_NAME_MAX + 1]; /* the capture (checked), "" if none */
    int format;                           /* export: enum trove__export_format */
    uint64_t from_ns, to_ns;              /* export, replay, profile: [from, to); to UINT64_MAX */
    uint32_t limit;                       /* profile: top functions, 1 .. TROVE__PROFILE_TOP_MAX */
    int wire;                             /* live, replay: 0 auto, else TROVE_WIRE_* */
    int from_start;                       /* live: from=start */
    int append;                           /* import */
    double speed;                         /* replay: 0 as fast as possible, else a multiple */
    char token[257];                      /* login */
    int asset;                            /* index, asset: its trove__web_assets[] index */
};

/* An error to answer: its HTTP status, code and message. */
struct trove__api_error {
    int status;       /* 400, 404, 405, 413 */
    const char *code; /* "bad_request", "not_found", "method_not_allowed", "too_large" */
    char msg[320];
};

/*
 * Route one request: method, path (without the query) and query (without the '?', may be
 * NULL; already percent-decoded or not: '%' sequences are decoded here, and one that
 * decodes to NUL, or a bad one, is a bad request). Fills *out and returns 0, or fills *err
 * and returns -1. Checks every parameter: names by trove_volume_name_check, numbers in
 * range, known values only; an unknown parameter is a bad request, so that a typo is never
 * ignored. `/` and `/web/NAME` name only the embedded files of assets.h, looked up by their
 * whole name: no request path is ever a file's path.
 */
int trove__api_route(int method, const char *path, const char *query, struct trove__api_req *out,
                     struct trove__api_error *err);

/*
 * Put back a piece of a request target as the router reads it. The HTTP layer
 * (libwebsockets) hands over the path and each piece of the query between two '&' (or ';')
 * with every %-escape decoded and every '+' turned into a space; joined again as they come,
 * a value holding an escaped '&' would split in two and one holding an escaped '%' would be
 * decoded a second time by the router, and one holding an escaped NUL would end there. So
 * append s[0..n) to out (cap bytes in all, *len so far, kept NUL-terminated) with '%', '&'
 * and NUL escaped again (%25, %26, %00: the router refuses the last) and a space back to
 * '+' (no name or token holds a space, and the router keeps a '+' as it is): the router
 * then reads what the client sent. Returns 0, or -1 when it does not all fit: out is then
 * filled to cap - 1 bytes, so that a path or query that does not fit reaches the router over
 * its limit (413) rather than cut short.
 */
int trove__api_escape(const char *s, size_t n, char *out, size_t cap, size_t *len);

/* Does the request carry the token? authorization: the Authorization header (may be NULL),
 * cookie: the Cookie header (may be NULL). The token is compared in constant time. */
int trove__api_token_ok(const char *token, size_t token_len, const char *authorization,
                        const char *cookie);

/*
 * May a WebSocket upgrade with this Origin (NULL: none, as a non-browser client sends)
 * proceed? Yes without an Origin, when it is the service's own (http://HOST where HOST is
 * the request's Host header), or one of allow[0..nallow). Compared exactly, without case
 * folding of anything but the scheme and host.
 */
int trove__api_origin_ok(const char *origin, const char *host, const char *const *allow,
                         size_t nallow);

#endif
