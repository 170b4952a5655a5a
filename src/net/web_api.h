/*
 * web_api.h: what web.c (the lws loop, viewers) and web_api.c (HTTP answers, the API
 * over stored captures) share: a connection's state and the web thread's own.
 */
#ifndef TROVE_NET_WEB_API_H
#define TROVE_NET_WEB_API_H

#include <libwebsockets.h>

#include "api.h"
#include "live.h"

struct web {
    struct trove__server *srv;
    struct lws_context *ctx;
    struct lws_vhost *vh;
    lws_sorted_usec_list_t tick;
    uint64_t stop_since;
    int exit;
    char *token;        /* the API's token, or NULL */
    size_t token_len;
    struct pss *waiting; /* HTTP connections waiting for a store job, linked by next */
    int profiles;        /* profile answers being made (on threads of their own) */
    /* Profiles whose connection went before they were done, linked by next: joined once done
     * (trove__api_reap), so the web thread never waits on one; they count in profiles. */
    struct trove__profile_job *orphans;
};

struct trove__export;
struct trove__profile_job;

/* What a connection holds: an HTTP answer, a viewer, an export under way, an import. */
struct pss {
    struct trove__view *v;
    struct trove__api_req req;
    uint8_t *body; /* LWS_PRE bytes, then the answer */
    size_t len, sent;
    struct trove__export *x;   /* an export streaming its bytes */
    /* an import's body, into a temp file */
    int ifd, ifd_open;         /* the temp file, while ifd_open */
    char ipath[256];
    uint64_t ibytes;
    int itoo_big;
    /* a store job (delete, import) or a profile this answer waits for */
    struct trove__job *job;
    struct trove__profile_job *pj; /* polled for (LWS_CALLBACK_TIMER) */
    struct pss *next;          /* in web->waiting */
    struct lws *wsi;
};

/* An answer is out: -1, the connection ends (one request a connection; web_api.c). */
int trove__http_done(struct lws *wsi);

/* web_api.c: answer with status, type and body (copied), then complete. 0, or -1 to close. */
int trove__http_answer(struct lws *wsi, struct pss *ps, unsigned status, const char *type,
                       const void *body, size_t len, const char *extra_header);
/* An error as {"error","code"}. */
int trove__http_error(struct lws *wsi, struct pss *ps, unsigned status, const char *code,
                      const char *msg);
/* HTTP_WRITEABLE: the next piece of a buffered answer or of an export. */
int trove__http_writeable(struct web *w, struct lws *wsi, struct pss *ps);
/* A routed API request (list, info, delete, export, profile, import, login): answer it or
 * start it. */
int trove__api_start(struct web *w, struct lws *wsi, struct pss *ps);
/* An import's body: HTTP_BODY and HTTP_BODY_COMPLETION. */
int trove__api_body(struct web *w, struct lws *wsi, struct pss *ps, const void *in, size_t len);
int trove__api_body_done(struct web *w, struct lws *wsi, struct pss *ps);
/* The connection goes: stop what it started. */
void trove__api_drop(struct web *w, struct pss *ps);
/* Join the orphaned profiles that are done (all: every one, waiting; at the end). */
void trove__api_reap(struct web *w, int all);
/* Waiting answers whose job is done get to write. */
void trove__api_wake_waiting(struct web *w);

#endif
