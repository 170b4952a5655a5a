/*
 * api.h (internal): the service's HTTP API without the sockets (docs/serve.md, "The HTTP
 * API over stored captures"): the router, from a request's method, path and query to what
 * it asks for, with every parameter checked; and the checks of who may ask — the token
 * (Authorization: Bearer, or the trove_token_PORT cookie), compared in constant time, and a
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
    TROVE__R_ASSET,     /* GET /web/NAME: one of the viewer's embedded files (assets.h) */
    TROVE__R_TRACKS,    /* GET /api/captures/NAME/tracks: its processes and tracks (JSON) */
    TROVE__R_VIEW,      /* GET /api/captures/NAME/view: a range at a width (view frame) */
    TROVE__R_STATS,     /* GET /api/captures/NAME/stats: per-name statistics (JSON) */
    TROVE__R_EVENTS,    /* GET /api/captures/NAME/events: instances of a name (JSON) */
    TROVE__R_NAMES,     /* GET /api/captures/NAME/names: its names (names frames) */
    TROVE__R_FLOWS,     /* GET /api/captures/NAME/flows: flow chains of a range (JSON) */
    TROVE__R_DIFF,      /* GET /api/diff?a=A&b=B: two captures compared (JSON, trove/diff.h) */
    TROVE__R_ATTRS,     /* GET /api/captures/NAME/attrs?event=I: an event's attributes (JSON) */
    TROVE__R_FRAMES     /* GET /api/captures/NAME/frames: its frames from frame marks (JSON) */
};

enum trove__export_format {
    TROVE__X_BUNDLE = 1,
    TROVE__X_PARQUET,
    TROVE__X_DIR_ZIP,
    TROVE__X_CHROME_JSON,
    TROVE__X_PERFETTO
};

/* At most this many tracks in one request's tracks=. */
#define TROVE__API_TRACKS_MAX 1024u
/* At most this many name ids in one request's ids=. */
#define TROVE__API_IDS_MAX 1024u

struct trove__api_req {
    int route;
    char name[TROVE_VOLUME_NAME_MAX + 1]; /* the capture (checked), "" if none */
    int format;                           /* export: enum trove__export_format */
    uint64_t from_ns, to_ns;              /* export, replay, profile: [from, to); to UINT64_MAX */
    uint32_t limit;                       /* profile: top functions, 1 .. TROVE__PROFILE_TOP_MAX */
    int wire;                             /* live, replay: 0 auto, else TROVE_WIRE_* */
    int from_start;                       /* live: from=start */
    int append;                           /* import */
    int attrs;                            /* live: attrs=1, attrs frames wanted */
    double speed;                         /* replay: 0 as fast as possible, else a multiple */
    char token[257];                      /* login */
    int asset;                            /* index, asset: its trove__web_assets[] index */
    /* view, stats, events (docs/serve.md, "Views and statistics") */
    uint32_t px;                          /* view: 1 .. TROVE_VIEW_MAX_PX (default 1000) */
    uint64_t tracks[TROVE__API_TRACKS_MAX]; /* tracks=PID:TID,...: sorted, distinct */
    size_t ntracks;
    int names;                            /* view: names=0|1 (default 1) */
    char event[1024];                     /* stats, events: name= (an event name) */
    int has_event;
    int sort;                             /* stats: enum trove_stats_sort */
    int clip;                             /* stats: clip=1, durations cut to the range */
    int order;                            /* events: enum trove_find_order */
    int match;                            /* events: match=1, name= is a part of names */
    uint32_t ids[TROVE__API_IDS_MAX];     /* events: ids=ID,...: name ids, sorted, distinct */
    size_t nids;
    uint64_t min_dur_ns, max_dur_ns;      /* events: the durations kept (max 0: any) */
    uint32_t qlimit;                      /* stats 0 .. 100000 (0: all), events, flows 1 .. 10000,
                                             frames 1 .. 100000 */
    uint64_t index;                       /* attrs: event=I, the event's index in the capture */
    char text[1024];                      /* events: text=, in a name or an attribute value */
    int has_text;
    /* diff: a= is name, b= name_b; each its range ([from, to), to 0: to the end) */
    char name_b[TROVE_VOLUME_NAME_MAX + 1];
    uint64_t a_from_ns, a_to_ns, b_from_ns, b_to_ns;
    int by_thread;                        /* by=thread */
    uint64_t min_count;
    double alpha;                         /* 0: the default */
    int method;                           /* enum trove_diff_method */
    unsigned diff_seen;                   /* the diff parameters given (each once) */
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

/* Does the request carry the token? authorization: the Authorization header (may be NULL),
 * cookie: the Cookie header (may be NULL), whose cookie_name=VALUE pair is read (the login
 * cookie's name holds the service's port: trove_token_7700). The token is compared in
 * constant time. *bearer (may be NULL) says whether it came in the Authorization header. */
int trove__api_token_ok(const char *token, size_t token_len, const char *authorization,
                        const char *cookie, const char *cookie_name, int *bearer);

/* The names a request's Host may give (DNS rebinding: a page of another site whose name
 * resolves to this service's address sends that name): the listen address (its literal,
 * IPv6 in brackets), "localhost", the --allow-host names, and for a listen address that is
 * a wildcard (0.0.0.0, [::]) any IP literal and the machine's name. */
struct trove__api_hosts {
    char listen[64];          /* "127.0.0.1", "[::1]" */
    int wildcard;
    unsigned port;            /* the listen port */
    const char *const *allow; /* --allow-host */
    size_t nallow;
    char machine[256];        /* gethostname(), for a wildcard listen ("" if none) */
};

/*
 * Does the Host header (value[0..n): "name", "name:port", "[v6]:port") name this service?
 * Without case. An empty or malformed value does not.
 */
int trove__api_host_ok(const char *value, size_t n, const struct trove__api_hosts *h);

/*
 * May a request with this Origin (NULL: none) act? Yes without one (not a browser, or a
 * browser's plain navigation), when it is one of allow[0..nallow) (compared without case),
 * or when it is the service's own: http://H[:P] where H passes trove__api_host_ok and P is
 * the listen port (80 when absent). Not against the request's Host, which a rebinding page
 * chooses.
 */
int trove__api_origin_ok(const char *origin, const struct trove__api_hosts *h,
                         const char *const *allow, size_t nallow);

/* What a request that changes something (import, delete, login) carries. */
struct trove__api_change {
    int method;               /* TROVE__GET (login), POST, DELETE */
    const char *origin;       /* NULL: none */
    const char *fetch_site;   /* Sec-Fetch-Site, NULL: none */
    const char *content_type; /* NULL: none */
    int x_trove;              /* an X-Trove-Request header */
    int token_required;       /* the service has a token */
    int bearer;               /* it came in an Authorization header (not the cookie) */
};

/*
 * May that change be made (cross-site request forgery)? 0, or 403 with msg: an Origin that
 * is not allowed (trove__api_origin_ok); a browser's Sec-Fetch-Site other than same-origin
 * or none (another port of the same host is "same-site": refused, unless its Origin was
 * allowed with --allow-origin); with a token, a request without an Origin that is not
 * authorized by a bearer token (a cookie alone is what a forged request carries); a POST
 * whose Content-Type a plain HTML form can send (application/x-www-form-urlencoded,
 * multipart/form-data, text/plain, or none) unless it has an X-Trove-Request header.
 */
int trove__api_change_ok(const struct trove__api_change *r, const struct trove__api_hosts *h,
                         const char *const *allow, size_t nallow, char *msg, size_t cap);

#endif
