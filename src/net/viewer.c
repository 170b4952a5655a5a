/*
 * viewer.c: a WebSocket viewer of GET /api/live (trove/serve.h, trove_live_view), on the
 * libwebsockets client: `trove watch` and `trove bench serve` use it. Messages arrive in
 * fragments of the library's receive buffer; each is put back together (up to the largest
 * wire frame) before its callback sees it.
 */
#include "serve_internal.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <libwebsockets.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_MAX ((size_t)TROVE_WIRE_HEADER_SIZE + TROVE_WIRE_MAX_PAYLOAD)

struct view_run {
    const struct trove_live_view_options *opt;
    struct lws_context *ctx;
    struct lws *wsi;
    lws_sorted_usec_list_t tick;
    struct trove_bytes msg;
    int binary;
    int done, failed, close_code, stop;
    char why[256];
};

static int view_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                   size_t len)
{
    struct view_run *r = lws_context_user(lws_get_context(wsi));
    int rc = 0;

    (void)user;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        r->failed = 1;
        snprintf(r->why, sizeof r->why, "%s",
                 in && len ? (const char *)in : "the connection could not be made");
        r->done = 1;
        return 0;
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        return 0;
    case LWS_CALLBACK_CLIENT_RECEIVE:
        if (r->msg.len == 0)
            r->binary = lws_frame_is_binary(wsi);
        if (r->msg.len + len > MSG_MAX) {
            r->failed = 1;
            snprintf(r->why, sizeof r->why, "a message over %zu bytes", MSG_MAX);
            return -1;
        }
        if (trove_bytes_append(&r->msg, in, len) != TROVE_OK) {
            r->failed = 1;
            snprintf(r->why, sizeof r->why, "out of memory");
            return -1;
        }
        if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) > 0)
            return 0;
        if (r->binary)
            rc = r->opt->on_frame ? r->opt->on_frame(r->opt->ctx, r->msg.ptr, r->msg.len) : 0;
        else if (r->opt->on_text) {
            if (trove_bytes_append(&r->msg, "", 1) != TROVE_OK) /* a NUL after the text */
                return -1;
            rc = r->opt->on_text(r->opt->ctx, (const char *)r->msg.ptr, r->msg.len - 1);
        }
        r->msg.len = 0;
        if (rc) {
            r->stop = 1;
            lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
            return -1;
        }
        return 0;
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        if (in && len >= 2)
            r->close_code = ((const uint8_t *)in)[0] << 8 | ((const uint8_t *)in)[1];
        return 0;
    case LWS_CALLBACK_CLIENT_CLOSED:
        r->done = 1;
        r->wsi = NULL;
        return 0;
    default:
        return 0;
    }
}

static const struct lws_protocols view_protocols[] = {
    {"trove-view", view_cb, 0, 65536, 0, NULL, 0}, {NULL, NULL, 0, 0, 0, NULL, 0}};

static void on_tick(lws_sorted_usec_list_t *sul)
{
    struct view_run *r = lws_container_of(sul, struct view_run, tick);

    if (r->opt->on_tick && !r->stop && r->opt->on_tick(r->opt->ctx)) {
        r->stop = 1;
        if (r->wsi)
            lws_set_timeout(r->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_SYNC);
        r->done = 1;
    }
    lws_sul_schedule(r->ctx, 0, &r->tick, on_tick, 100 * LWS_US_PER_MS);
}

static void quiet_log(int level, const char *line)
{
    (void)level;
    (void)line;
}

int trove_live_view(const struct trove_live_view_options *opt, int *close_code,
                    struct trove_diag *diag)
{
    const char *url = opt && opt->url ? opt->url : "http://127.0.0.1:7700/";
    struct lws_context_creation_info info;
    struct lws_client_connect_info ci;
    struct view_run r;
    char host[256], path[512];
    const char *p;
    int port = 0, rc;
    size_t hl;

    if (close_code)
        *close_code = 0;
    if (!opt || !opt->capture || trove_volume_name_check(opt->capture, diag) != TROVE_OK)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "live view: a capture name is needed");
    if (opt->wire < 0 || opt->wire > TROVE_WIRE_DEFLATE)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "live view: wire %d", opt->wire);
    if (strncmp(url, "http://", 7) == 0 || strncmp(url, "ws://", 5) == 0)
        p = strchr(url, '/') + 2;
    else
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "%s: give the service as http://HOST:PORT/ (or ws://)", url);
    hl = strcspn(p, "/");
    if (hl == 0 || hl >= sizeof host)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "%s: no host", url);
    memcpy(host, p, hl);
    host[hl] = 0;
    {
        char *colon = strrchr(host, ':');
        if (colon && !strchr(colon, ']')) {
            char *end;
            long v = strtol(colon + 1, &end, 10);
            if (*end || v <= 0 || v > 65535)
                return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "%s: a bad port", url);
            port = (int)v;
            *colon = 0;
        } else {
            port = 80;
        }
    }
    snprintf(path, sizeof path, "/api/live?capture=%s&wire=%s&from=%s", opt->capture,
             opt->wire ? trove_wire_format_name(opt->wire) : "auto",
             opt->from_start ? "start" : "now");
    memset(&r, 0, sizeof r);
    r.opt = opt;
    lws_set_log_level(0, quiet_log);
    memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = view_protocols;
    info.user = &r;
    if (!(r.ctx = lws_create_context(&info)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "live view: libwebsockets would not start");
    memset(&ci, 0, sizeof ci);
    ci.context = r.ctx;
    ci.address = host[0] == '[' ? host + 1 : host;
    if (host[0] == '[' && strchr(host, ']'))
        *strchr(host, ']') = 0;
    ci.port = port;
    ci.path = path;
    ci.host = ci.address;
    ci.origin = ci.address;
    ci.protocol = NULL;
    ci.local_protocol_name = "trove-view";
    ci.pwsi = &r.wsi;
    if (!lws_client_connect_via_info(&ci)) {
        lws_context_destroy(r.ctx);
        return TROVE_FAIL(diag, TROVE_ERR_SEND, 0, "%s: could not connect", url);
    }
    lws_sul_schedule(r.ctx, 0, &r.tick, on_tick, 100 * LWS_US_PER_MS);
    while (!r.done)
        if (lws_service(r.ctx, 0) < 0)
            break;
    lws_context_destroy(r.ctx);
    trove_bytes_free(&r.msg);
    if (close_code)
        *close_code = r.close_code;
    rc = TROVE_OK;
    if (r.failed && !r.stop)
        rc = TROVE_FAIL(diag, TROVE_ERR_SEND, 0, "%s: %s", url, r.why);
    return rc;
}
