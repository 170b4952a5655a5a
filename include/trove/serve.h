/*
 * trove/serve.h: the live service (docs/serve.md). Producers connect to a unix socket (or a
 * TCP ingest port) and send a hello line and a wire stream, and the service answers the
 * hello with one line (trove_serve_answer_parse reads it); every pass (about 5 ms) the
 * service drains them, forms batches of at most 2048 events, and hands each batch to the
 * live fan-out — encoded once per wire format in use, the same bytes for every viewer of
 * it — and to the capture's writer, which spools it into the store and commits at least
 * every commit_ms. Viewers are WebSocket clients of GET /api/live; GET /api/status,
 * /metrics and / report on it all.
 *
 * trove_serve_run blocks until trove_serve_stop (safe in a signal handler): then every
 * open capture is committed, viewers are closed with WebSocket close 1001 and it returns.
 */
#ifndef TROVE_SERVE_H
#define TROVE_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TROVE_SERVE_LISTEN_DEFAULT "127.0.0.1:7700"
#define TROVE_SERVE_COMMIT_MS_DEFAULT 1000u
#define TROVE_SERVE_PASS_MS_DEFAULT 5u
#define TROVE_SERVE_VIEWER_QUEUE_DEFAULT ((uint64_t)8 << 20)
#define TROVE_SERVE_SOCKET_NAME "trove.sock" /* in the store's directory */

struct trove_store;

/* The formats of GET /api/captures/NAME/export. */
enum trove_serve_export_format {
    TROVE_SERVE_BUNDLE = 1,
    TROVE_SERVE_PARQUET,
    TROVE_SERVE_DIR_ZIP, /* the bundle's files in a deflated zip */
    TROVE_SERVE_CHROME_JSON,
    TROVE_SERVE_PERFETTO
};

struct trove_serve_options {
    const char *store_dir;     /* required: the store (created if missing) */
    const char *listen;        /* "ADDR:PORT" for HTTP and WebSocket; NULL: the default;
                                  port 0 picks a free one (the ready callback says which) */
    const char *socket_path;   /* the producers' unix socket; NULL: store_dir/trove.sock */
    const char *ingest;        /* "ADDR:PORT": producers over TCP too; NULL: none */
    int wire;                  /* 0: auto (raw to loopback peers, packed to others), or a
                                  TROVE_WIRE_* format for every viewer that does not ask */
    uint32_t commit_ms;        /* 0: the default */
    uint32_t pass_ms;          /* 0: the default */
    uint64_t max_viewer_queue; /* bytes per viewer; 0: the default */
    const char *token_file;    /* the API's token: the file's first line; NULL: none (only
                                  on a loopback --listen) */
    const char *const *allow_origin; /* browser Origins allowed to act besides the service's
                                        own (WebSockets, imports, deletes, login) */
    size_t nallow_origin;
    const char *const *allow_host;   /* names a request's Host may give besides the listen
                                        address and localhost (DNS rebinding is refused) */
    size_t nallow_host;
    uint32_t max_connections;  /* HTTP and WebSocket connections at once; 0: 1024 (fewer
                                  when the process may not open that many descriptors) */
    uint32_t idle_timeout_ms;  /* a client that takes none of its answer, or sends none of its
                                  body, for this long is closed; 0: 30000 */
    uint32_t max_replays;      /* replays and from=start histories at once; 0: 6 */
    uint32_t max_exports;      /* exports at once; 0: 2 */
    uint32_t max_uploads;      /* imports being received or stored at once; 0: 2 */
    uint32_t max_producers;    /* producer connections at once; 0: 256 */
    uint64_t max_import;       /* bytes of an import's body; 0: 4 GiB */
    int segment_format;        /* the live captures' segments: trove_capture_options'
                                  segment_format (0: format 5 with deflate for a new
                                  capture; an append goes on as the capture was written,
                                  or in deflate frames after model ones) */
    int no_summaries;          /* the live captures keep no summaries (views and statistics
                                  then read their segments; trove_capture_options') */
    /* Called once when the service listens: its URL and its socket. May be NULL. */
    void (*ready)(void *ctx, const char *url, const char *socket_path);
    /* One line of log (a producer refused, a viewer gone, a commit failed). May be NULL. */
    void (*log)(void *ctx, const char *line);
    void *ctx;
};

/*
 * Run the service until trove_serve_stop. Errors (before it is ready; diag says what):
 * TROVE_ERR_INVALID (options), TROVE_ERR_BUSY (another process has the store open for
 * writing: a second service on one store is refused), -errno (a socket that cannot be
 * made: the address in use, a socket path too long), the store's errors.
 */
int trove_serve_run(const struct trove_serve_options *opt, struct trove_diag *diag);

/* Ask the running service to stop. Async-signal-safe, and safe from any thread at any time,
 * a run's end included; a later run is not affected. From the first run on, the process
 * keeps a pipe (two descriptors, close-on-exec) for it. */
void trove_serve_stop(void);

/* ---- a producer's answer (trove record, trove gen --live) ------------------------------ */

/* The service answers every producer's hello with one JSON line on the same socket, and may
 * send one more just before it closes an accepted producer (docs/serve.md, "Producers"). */
enum trove_serve_answer_type {
    TROVE_SERVE_ACCEPT = 1, /* the capture takes the producer's events */
    TROVE_SERVE_REFUSE,     /* the hello or its capture cannot be taken; the service closes */
    TROVE_SERVE_ERROR       /* the service closes an accepted producer, and says why */
};

/* How an accepted producer's events go into the capture. */
enum trove_serve_mode {
    TROVE_SERVE_NEW = 1, /* the store has no capture of that name */
    TROVE_SERVE_REPLACE, /* a new session, which replaces the stored capture at its first
                            commit (events: the stored capture's, being replaced) */
    TROVE_SERVE_APPEND,  /* continuing the stored capture (events: its stored ones) */
    TROVE_SERVE_JOIN     /* joining a session other producers write (events: published) */
};

#define TROVE_SERVE_ANSWER_MAX 1024u /* bytes of an answer line, its newline included */

/* One answer line, parsed. */
struct trove_serve_answer {
    int type;                             /* enum trove_serve_answer_type */
    char capture[129];                    /* accept: the capture's name */
    int mode;                             /* accept: enum trove_serve_mode */
    uint64_t session;                     /* accept: tells sessions of one name apart */
    uint64_t events;                      /* accept: as the mode says */
    char reason[TROVE_SERVE_ANSWER_MAX];  /* refuse, error: why (UTF-8, no NUL) */
    int stopping;                         /* error: 1 when the service closes the producer
                                             because it stops ("stopping":true) */
};

/*
 * Parse one answer line (line[0..len), its newline excluded; a '\r' before it is allowed):
 * a JSON object with "type" "accept" (and "capture", "session", "mode", "events"), "refuse"
 * or "error" (and "reason"; an error may say "stopping":true or false). Other members are
 * skipped. Errors: TROVE_ERR_LIMIT (a line of TROVE_SERVE_ANSWER_MAX bytes or more, a
 * capture name over 128 bytes), TROVE_ERR_JSON (not such an object), and TROVE_ERR_INVALID
 * (a type or mode this trove does not know, a member missing or of the wrong type or range,
 * a capture that is not a valid name); diag says which. *out is zeroed first.
 * Thread-safe.
 */
int trove_serve_answer_parse(const char *line, size_t len, struct trove_serve_answer *out,
                             struct trove_diag *diag);

/* "new", "replace", "append", "join"; "?" for anything else. */
const char *trove_serve_mode_name(int mode);

/* ---- a viewer (trove watch, bench serve) ---------------------------------------------- */

struct trove_live_view_options {
    const char *url;     /* the service: "http://HOST:PORT/" (or ws://); NULL: the default */
    const char *capture; /* required */
    int wire;            /* 0: auto (the service picks), else TROVE_WIRE_* */
    int from_start;      /* from=start, else from=now */
    const char *path;    /* the request path and query; NULL: /api/live?... from the fields above */
    const char *token;   /* sent as Authorization: Bearer; NULL: none */
    /* Each text message (hello, gap, end, error: JSON) and each binary one (one wire frame),
     * in order. A nonzero return closes the connection (the run returns TROVE_OK). */
    int (*on_text)(void *ctx, const char *json, size_t len);
    int (*on_frame)(void *ctx, const uint8_t *frame, size_t len);
    /* Called about every 100 ms; nonzero closes the connection. May be NULL. */
    int (*on_tick)(void *ctx);
    void *ctx;
};

/*
 * Connect to GET /api/live (or opt->path: /api/replay?..., say; with opt->token, the
 * upgrade request carries `Authorization: Bearer TOKEN`) and deliver its messages until the
 * service closes the connection (after {"type":"end"}, or on shutdown) or a callback asks
 * to stop. A path that does not start with '/', or a path or token with a space or a line
 * break (one would end the request's line), is TROVE_ERR_INVALID. Returns
 * TROVE_OK, or: TROVE_ERR_INVALID (options, a bad URL), TROVE_ERR_SEND (the connection
 * could not be made or broke; diag says how), TROVE_ERR_LIMIT (a message over
 * TROVE_WIRE_HEADER_SIZE + TROVE_WIRE_MAX_PAYLOAD bytes). *close_code (may be NULL) gets
 * the WebSocket close code the service sent (1000 at the end, 1001 on shutdown), or 0.
 */
int trove_live_view(const struct trove_live_view_options *opt, int *close_code,
                    struct trove_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
