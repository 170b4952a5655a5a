/*
 * web_api.h (internal): what the web thread's files share. web.c runs the loop (epoll: the
 * listener, the wake-up, the connections) and reads each request's head; web_api.c answers
 * the HTTP requests (the API over stored captures); web_view.c serves the WebSocket viewers.
 * A connection is a struct pss, whose first member is its struct trove__conn (conn.h).
 */
#ifndef TROVE_NET_WEB_API_H
#define TROVE_NET_WEB_API_H

#include "api.h"
#include "conn.h"
#include "http.h"
#include "live.h"

/* What a connection is doing. */
enum trove__pss_state {
    TROVE__PS_HEAD = 1, /* its request head is coming */
    TROVE__PS_BODY,     /* an import's body is coming */
    TROVE__PS_ANSWER,   /* an HTTP answer: being made (a job, a profile, an export) or sent */
    TROVE__PS_WS        /* a WebSocket viewer */
};

struct trove__export;
struct trove__profile_job;

/* One connection, on the web thread. */
struct pss {
    struct trove__conn c; /* first: conn.h's callbacks get &ps->c */
    struct web *w;
    int state;
    struct trove__api_req req;
    /* an export streaming its bytes */
    struct trove__export *x;
    /* an import's body, into a temp file */
    int ifd, ifd_open; /* the temp file, while ifd_open */
    uint64_t ibytes, ilen;
    int upload;        /* holds one of web->max_uploads */
    /* a store job (delete, import) or a profile this answer waits for */
    struct trove__job *job;
    struct trove__profile_job *pj;
    struct pss *next;  /* in web->waiting */
    /* a WebSocket */
    struct trove__view *v;
    int stream;        /* holds one of web->max_streams (a replay or a from=start history) */
    uint8_t ws_in[14 + TROVE__WS_CONTROL_MAX]; /* a frame's header and a control payload */
    size_t ws_n;
    uint64_t ws_skip;  /* bytes of a data frame's payload still to drop */
    int ws_message;    /* a fragmented message is under way */
    int close_sent;
};

/* Who may ask (api.h's guards), as configured. */
struct web_guard {
    struct trove__api_hosts hosts;
    const char *const *allow_origin;
    size_t nallow_origin;
};

struct web {
    struct trove__server *srv;
    int epfd;
    struct { int tag; int fd; } listen, wake; /* TROVE__EV_LISTEN, TROVE__EV_WAKE */
    struct trove__conn_set conns;
    struct web_guard guard;
    char *token;            /* the API's token, or NULL */
    size_t token_len;
    char cookie[40];        /* the login cookie's name: trove_token_PORT */
    uint64_t next_tick, stop_since, accept_paused;
    int exit;
    /* the caps: what is running, and at most */
    int streams, max_streams; /* replays and from=start histories (threads each) */
    int exports, max_exports;
    int uploads, max_uploads;
    int profiles;             /* at most PROFILE_JOBS */
    int queries;              /* tracks, view, stats, events, names: at most QUERY_JOBS */
    struct pss *waiting;      /* answers waiting for a store job, linked by next */
    /* Profiles and exports whose connection went before they were done: joined once done
     * (trove__api_reap), so the web thread never waits on one; they keep their slot. */
    struct trove__profile_job *orphans;
    struct trove__export *xorphans;
    struct trove__job *held;  /* import jobs not yet done: each keeps its upload slot */
    uint64_t fd_limit;
};

/* web_api.c: answer with status, type and body (copied), then end. 0, or -1 when the
 * connection is gone. */
int trove__http_answer(struct pss *ps, unsigned status, const char *type, const void *body,
                       size_t len, const char *extra_header);
/* An error as {"error","code"}. */
int trove__http_error(struct pss *ps, unsigned status, const char *code, const char *msg);
/* 503 with Retry-After: a cap is reached. */
int trove__http_busy(struct pss *ps, const char *msg);
/* A routed API request (list, info, delete, export, profile, import, login): answer it or
 * start it. The head has passed the Host, token and change guards. */
int trove__api_start(struct web *w, struct pss *ps);
/* An import's body bytes (the rest of the head's buffer first, then the socket's). */
int trove__api_body(struct web *w, struct pss *ps, const void *in, size_t len);
/* The connection goes: stop what it started, give back its slots. */
void trove__api_drop(struct web *w, struct pss *ps);
/* Join the orphaned profiles and exports that are done (all: every one, waiting; at the
 * end), and let go of import jobs that are done. */
void trove__api_reap(struct web *w, int all);
/* Waiting answers whose job or profile is done get written. */
void trove__api_wake_waiting(struct web *w);
/* Remove the import bodies a killed service left in the temp directory (at the start). */
void trove__api_clean_tmp(struct trove__server *srv);
/* An export's pipe is readable: its connection may send more. */
void trove__api_export_ready(struct web *w, void *x);

/* web_view.c */
/* The upgrade of ps to a WebSocket: checked (key, version, route; the caller has checked
 * Host, token and Origin), answered with 101 and the viewer made; or answered with an
 * error. 0, or -1 when the connection is gone. */
int trove__ws_upgrade(struct web *w, struct pss *ps);
/* ps's socket is readable. */
void trove__ws_read(struct web *w, struct pss *ps);
/* Something happened elsewhere: every viewer may have something to send. */
void trove__ws_wake(struct web *w);
/* The service stops: every viewer is closed with 1001 after what it has. */
void trove__ws_stop(struct web *w);
/* The viewer of ps goes (the connection closed). */
void trove__ws_drop(struct web *w, struct pss *ps);

#endif
