/*
 * status.c: what GET /api/status, /metrics and / answer (docs/serve.md, "Status"). Built
 * on the web thread, which owns the viewers; captures and producers are read under their
 * locks.
 */
#include "web_api.h"
#include "common/alloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int put(struct trove_bytes *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int put(struct trove_bytes *out, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return TROVE_ERR_INVALID;
    if ((size_t)n >= sizeof buf) { /* long: format again into the buffer itself */
        int rc = trove_bytes_reserve(out, (size_t)n + 1);
        if (rc != TROVE_OK)
            return rc;
        va_start(ap, fmt);
        vsnprintf((char *)out->ptr + out->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
        out->len += (size_t)n;
        return TROVE_OK;
    }
    return trove_bytes_append(out, buf, (size_t)n);
}

/* s as a JSON string (quotes included). */
static int put_str(struct trove_bytes *out, const char *s)
{
    int rc = trove_bytes_append(out, "\"", 1);

    for (; rc == TROVE_OK && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            rc = put(out, "\\%c", c);
        else if (c < 0x20)
            rc = put(out, "\\u%04x", c);
        else
            rc = trove_bytes_append(out, s, 1);
    }
    return rc == TROVE_OK ? trove_bytes_append(out, "\"", 1) : rc;
}

static const char *state_name(int state)
{
    switch (state) {
    case TROVE__CAP_WAITING: return "waiting";
    case TROVE__CAP_OPENING: return "opening";
    case TROVE__CAP_LIVE: return "live";
    case TROVE__CAP_CLOSING: return "closing";
    case TROVE__CAP_ENDED: return "closed";
    default: return "failed";
    }
}

struct cap_row {
    char name[TROVE_VOLUME_NAME_MAX + 1];
    int state, producers, viewers;
    uint64_t events, committed, stored_bytes, uncommitted_bytes, commits, errors;
    uint64_t samples, committed_samples, session;
    char error[TROVE__ERROR_MAX];
};

/* A copy of every capture's and connection's figures, so that nothing is held while the
 * text is made. */
struct snapshot {
    struct cap_row *caps;
    size_t ncaps;
    struct trove__conn_stats *conns;
    size_t nconns;
    uint64_t producers_total, producers_refused, viewers_total;
};

static void snapshot_free(struct snapshot *s)
{
    free(s->caps);
    free(s->conns);
}

static int snapshot_take(struct trove__server *srv, struct snapshot *s)
{
    size_t nc = 0, np = 0, nv = 0;

    memset(s, 0, sizeof *s);
    for (struct trove__view *v = srv->views; v; v = v->next)
        nv++;
    pthread_mutex_lock(&srv->mu);
    for (struct trove__cap *c = srv->caps; c; c = c->next)
        nc++;
    for (struct trove__prod *p = srv->prods; p; p = p->next)
        np++;
    s->caps = trove__calloc(nc + 1, sizeof *s->caps);
    s->conns = trove__calloc(np + nv + 1, sizeof *s->conns);
    if (!s->caps || !s->conns) {
        pthread_mutex_unlock(&srv->mu);
        snapshot_free(s);
        return TROVE_ERR_NOMEM;
    }
    s->producers_total = srv->producers_total;
    s->producers_refused = srv->producers_refused;
    s->viewers_total = srv->viewers_total;
    for (struct trove__cap *c = srv->caps; c; c = c->next) {
        struct cap_row *r = &s->caps[s->ncaps];
        int dup = 0;
        for (size_t k = 0; k < s->ncaps && !dup; k++)
            dup = strcmp(s->caps[k].name, c->name) == 0; /* an older session of it */
        if (dup)
            continue;
        pthread_mutex_lock(&c->mu);
        snprintf(r->name, sizeof r->name, "%s", c->name);
        r->state = c->state;
        r->session = c->session;
        r->producers = c->producers;
        r->viewers = c->viewers;
        r->events = c->published;
        r->committed = c->committed;
        r->stored_bytes = c->stored_bytes;
        r->uncommitted_bytes = c->uncommitted_bytes;
        r->commits = c->commits;
        r->errors = c->commit_errors;
        r->samples = c->samples;
        r->committed_samples = c->committed_samples;
        snprintf(r->error, sizeof r->error, "%s", c->error);
        pthread_mutex_unlock(&c->mu);
        s->ncaps++;
    }
    for (struct trove__prod *p = srv->prods; p; p = p->next) {
        struct trove__conn_stats *r = &s->conns[s->nconns++];
        r->id = p->id;
        r->kind = TROVE__CONN_PRODUCER;
        snprintf(r->peer, sizeof r->peer, "%s", p->peer);
        snprintf(r->capture, sizeof r->capture, "%s", p->cap ? p->cap->name : "");
        r->session = p->cap ? p->cap->session : 0;
        pthread_mutex_lock(&p->mu);
        r->mode = p->mode;
        r->wire = p->last_wire;
        r->queue_bytes = (uint64_t)p->npending * TROVE_EVENT_SIZE;
        r->events = p->events_in;
        r->published = p->events_published;
        r->dropped = p->events_dropped;
        r->queued = p->npending;
        r->bytes = p->bytes_in;
        r->errors = p->errors;
        snprintf(r->error, sizeof r->error, "%s", p->error);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_unlock(&srv->mu);
    for (struct trove__view *v = srv->views; v; v = v->next) {
        struct trove__conn_stats *r = &s->conns[s->nconns++];
        r->id = v->id;
        r->kind = TROVE__CONN_VIEWER;
        snprintf(r->peer, sizeof r->peer, "%s", v->peer);
        snprintf(r->capture, sizeof r->capture, "%s", v->cap ? v->cap->name : "");
        r->session = v->cap ? v->cap->session : 0;
        r->wire = v->wire;
        r->events = v->sent_events;
        r->bytes = v->sent_bytes;
        if (v->fv) {
            struct trove__viewer_stats st;
            trove__viewer_stats(v->fv, &st);
            r->queue_bytes = st.queued_bytes;
            /* During a history that may still catch up, dropped frames will be read back
             * from the store (history.c): nothing is lost yet. */
            r->drops = v->hist && v->catchups < TROVE__CATCHUP_MAX ? 0 : st.dropped_events;
        }
        r->errors = v->error[0] != 0;
        snprintf(r->error, sizeof r->error, "%s", v->error);
    }
    return TROVE_OK;
}

int trove__status_json(struct trove__server *srv, struct trove_bytes *out)
{
    struct snapshot s;
    int rc;

    if ((rc = snapshot_take(srv, &s)) != TROVE_OK)
        return rc;
    rc = put(out, "{\"version\":\"%s\",\"uptime_s\":%.3f,\"store\":", trove_version(),
             (double)(trove__now_ns() - srv->start_ns) / 1e9);
    if (rc == TROVE_OK)
        rc = put_str(out, srv->opt.store_dir);
    if (rc == TROVE_OK)
        rc = put(out, ",\"socket\":");
    if (rc == TROVE_OK)
        rc = put_str(out, srv->socket_path);
    if (rc == TROVE_OK)
        rc = put(out, ",\"listen\":");
    if (rc == TROVE_OK)
        rc = put_str(out, srv->listen_addr);
    if (rc == TROVE_OK)
        rc = srv->ingest_addr[0] ? put(out, ",\"ingest\":") : put(out, ",\"ingest\":null");
    if (rc == TROVE_OK && srv->ingest_addr[0])
        rc = put_str(out, srv->ingest_addr);
    if (rc == TROVE_OK && srv->web) {
        const struct web *w = srv->web;
        rc = put(out, ",\"limits\":{\"max_connections\":%zu,\"max_per_address\":%zu,"
                      "\"idle_timeout_ms\":%" PRIu64 ",\"max_replays\":%d,\"max_exports\":%d,"
                      "\"max_uploads\":%d,\"max_producers\":%u,\"fd_limit\":%" PRIu64 "},"
                      "\"web\":{\"connections\":%zu,\"refused\":%" PRIu64 ",\"evicted\":%" PRIu64
                      ",\"timed_out\":%" PRIu64 ",\"replays\":%d,\"exports\":%d,\"uploads\":%d}",
                 w->conns.max, w->conns.per_addr, w->conns.idle_timeout_ns / 1000000u,
                 w->max_streams, w->max_exports, w->max_uploads,
                 srv->opt.max_producers ? srv->opt.max_producers : TROVE__PRODUCERS_DEFAULT,
                 w->fd_limit, w->conns.n, w->conns.refused, w->conns.evicted, w->conns.timed_out,
                 w->streams, w->exports, w->uploads);
    }
    if (rc == TROVE_OK)
        rc = put(out, ",\"wire\":\"%s\",\"pass_ms\":%" PRIu32 ",\"commit_ms\":%" PRIu32
                      ",\"max_viewer_queue\":%zu,\"producers_total\":%" PRIu64
                      ",\"producers_refused\":%" PRIu64 ",\"viewers_total\":%" PRIu64
                      ",\"captures\":[",
                 srv->opt.wire ? trove_wire_format_name(srv->opt.wire) : "auto", srv->pass_ms,
                 srv->commit_ms, srv->max_queue, s.producers_total, s.producers_refused,
                 s.viewers_total);
    for (size_t i = 0; rc == TROVE_OK && i < s.ncaps; i++) {
        const struct cap_row *r = &s.caps[i];
        rc = put(out, "%s{\"name\":", i ? "," : "");
        if (rc == TROVE_OK)
            rc = put_str(out, r->name);
        if (rc == TROVE_OK)
            rc = put(out, ",\"session\":%" PRIu64 ",\"state\":\"%s\",\"live\":%s,\"events\":%" PRIu64
                          ",\"committed_events\":%" PRIu64 ",\"bytes_stored\":%" PRIu64
                          ",\"uncommitted_bytes\":%" PRIu64 ",\"commits\":%" PRIu64
                          ",\"samples\":%" PRIu64 ",\"committed_samples\":%" PRIu64
                          ",\"producers\":%d,\"viewers\":%d,\"errors\":%" PRIu64 ",\"error\":",
                     r->session, state_name(r->state),
                     r->state == TROVE__CAP_LIVE || r->state == TROVE__CAP_OPENING ? "true"
                                                                                   : "false",
                     r->events, r->committed, r->stored_bytes, r->uncommitted_bytes, r->commits,
                     r->samples, r->committed_samples, r->producers, r->viewers, r->errors);
        if (rc == TROVE_OK)
            rc = put_str(out, r->error);
        if (rc == TROVE_OK)
            rc = put(out, "}");
    }
    if (rc == TROVE_OK)
        rc = put(out, "],\"connections\":[");
    for (size_t i = 0; rc == TROVE_OK && i < s.nconns; i++) {
        const struct trove__conn_stats *r = &s.conns[i];
        rc = put(out, "%s{\"id\":%" PRIu64 ",\"kind\":\"%s\",\"peer\":", i ? "," : "", r->id,
                 r->kind == TROVE__CONN_PRODUCER ? "producer" : "viewer");
        if (rc == TROVE_OK)
            rc = put_str(out, r->peer);
        if (rc == TROVE_OK)
            rc = put(out, ",\"capture\":");
        if (rc == TROVE_OK)
            rc = put_str(out, r->capture);
        if (rc == TROVE_OK)
            rc = put(out, ",\"session\":%" PRIu64 ",\"mode\":\"%s\",\"wire\":\"%s\",\"queue_bytes\":%" PRIu64 ",\"events\":%" PRIu64
                          ",\"bytes\":%" PRIu64 ",\"bytes_per_event\":%.3f,\"drops\":%" PRIu64
                          ",\"errors\":%" PRIu64 ",\"error\":",
                     r->session, r->mode ? trove_serve_mode_name(r->mode) : "",
                     r->wire ? trove_wire_format_name(r->wire) : "", r->queue_bytes, r->events,
                     r->bytes, r->events ? (double)r->bytes / (double)r->events : 0.0, r->drops,
                     r->errors);
        if (rc == TROVE_OK)
            rc = put_str(out, r->error);
        if (rc == TROVE_OK && r->kind == TROVE__CONN_PRODUCER)
            rc = put(out, ",\"published\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"queued\":%" PRIu64,
                     r->published, r->dropped, r->queued);
        if (rc == TROVE_OK)
            rc = put(out, "}");
    }
    if (rc == TROVE_OK)
        rc = put(out, "]}\n");
    snapshot_free(&s);
    return rc;
}

int trove__status_metrics(struct trove__server *srv, struct trove_bytes *out)
{
    struct snapshot s;
    int rc;

    if ((rc = snapshot_take(srv, &s)) != TROVE_OK)
        return rc;
    rc = put(out,
             "# HELP trove_uptime_seconds Seconds since the service started.\n"
             "# TYPE trove_uptime_seconds gauge\n"
             "trove_uptime_seconds %.3f\n"
             "# HELP trove_producers_total Producer connections accepted.\n"
             "# TYPE trove_producers_total counter\n"
             "trove_producers_total %" PRIu64 "\n"
             "# HELP trove_producers_refused_total Producer connections closed for bad input.\n"
             "# TYPE trove_producers_refused_total counter\n"
             "trove_producers_refused_total %" PRIu64 "\n"
             "# HELP trove_viewers_total Viewer connections accepted.\n"
             "# TYPE trove_viewers_total counter\n"
             "trove_viewers_total %" PRIu64 "\n",
             (double)(trove__now_ns() - srv->start_ns) / 1e9, s.producers_total,
             s.producers_refused, s.viewers_total);
    if (rc == TROVE_OK && srv->web) {
        const struct web *w = srv->web;
        rc = put(out,
                 "# HELP trove_web_connections HTTP and WebSocket connections open.\n"
                 "# TYPE trove_web_connections gauge\n"
                 "trove_web_connections %zu\n"
                 "# HELP trove_web_refused_total Connections refused: over every limit, none to replace.\n"
                 "# TYPE trove_web_refused_total counter\n"
                 "trove_web_refused_total %" PRIu64 "\n"
                 "# HELP trove_web_evicted_total Idle connections closed to make room for new ones.\n"
                 "# TYPE trove_web_evicted_total counter\n"
                 "trove_web_evicted_total %" PRIu64 "\n"
                 "# HELP trove_web_timed_out_total Connections closed for a head or an idle timeout.\n"
                 "# TYPE trove_web_timed_out_total counter\n"
                 "trove_web_timed_out_total %" PRIu64 "\n",
                 w->conns.n, w->conns.refused, w->conns.evicted, w->conns.timed_out);
    }
    if (rc == TROVE_OK)
        rc = put(out, "# HELP trove_capture_events Events published in a capture.\n"
                      "# TYPE trove_capture_events counter\n"
                      "# HELP trove_capture_committed_events Events of a capture made durable.\n"
                      "# TYPE trove_capture_committed_events counter\n"
                      "# HELP trove_capture_bytes_stored Bytes a capture takes in the store.\n"
                      "# TYPE trove_capture_bytes_stored gauge\n"
                      "# HELP trove_capture_live 1 while a capture takes events.\n"
                      "# TYPE trove_capture_live gauge\n"
                      "# HELP trove_capture_errors Commits and opens of a capture that failed.\n"
                      "# TYPE trove_capture_errors counter\n");
    for (size_t i = 0; rc == TROVE_OK && i < s.ncaps; i++) {
        const struct cap_row *r = &s.caps[i];
        rc = put(out,
                 "trove_capture_events{capture=\"%s\"} %" PRIu64 "\n"
                 "trove_capture_committed_events{capture=\"%s\"} %" PRIu64 "\n"
                 "trove_capture_bytes_stored{capture=\"%s\"} %" PRIu64 "\n"
                 "trove_capture_live{capture=\"%s\"} %d\n"
                 "trove_capture_errors{capture=\"%s\"} %" PRIu64 "\n",
                 r->name, r->events, r->name, r->committed, r->name, r->stored_bytes, r->name,
                 r->state == TROVE__CAP_LIVE, r->name, r->errors);
    }
    if (rc == TROVE_OK)
        rc = put(out, "# HELP trove_connection_events Events a connection received (producer) "
                      "or was sent (viewer).\n"
                      "# TYPE trove_connection_events counter\n"
                      "# HELP trove_connection_bytes Bytes a connection received or was sent.\n"
                      "# TYPE trove_connection_bytes counter\n"
                      "# HELP trove_connection_queue_bytes Bytes waiting in a connection's queue.\n"
                      "# TYPE trove_connection_queue_bytes gauge\n"
                      "# HELP trove_connection_drops Events dropped for a slow viewer.\n"
                      "# TYPE trove_connection_drops counter\n");
    for (size_t i = 0; rc == TROVE_OK && i < s.nconns; i++) {
        const struct trove__conn_stats *r = &s.conns[i];
        char labels[320];
        /* capture names are [A-Za-z0-9._-]: nothing to escape */
        snprintf(labels, sizeof labels, "id=\"%" PRIu64 "\",kind=\"%s\",capture=\"%s\",wire=\"%s\"",
                 r->id, r->kind == TROVE__CONN_PRODUCER ? "producer" : "viewer", r->capture,
                 r->wire ? trove_wire_format_name(r->wire) : "");
        rc = put(out,
                 "trove_connection_events{%s} %" PRIu64 "\n"
                 "trove_connection_bytes{%s} %" PRIu64 "\n"
                 "trove_connection_queue_bytes{%s} %" PRIu64 "\n"
                 "trove_connection_drops{%s} %" PRIu64 "\n",
                 labels, r->events, labels, r->bytes, labels, r->queue_bytes, labels, r->drops);
    }
    snapshot_free(&s);
    return rc;
}

int trove__status_html(struct trove__server *srv, struct trove_bytes *out)
{
    struct snapshot s;
    int rc;

    if ((rc = snapshot_take(srv, &s)) != TROVE_OK)
        return rc;
    rc = put(out, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>trove</title>"
                  "</head>\n<body>\n<h1>trove %s</h1>\n<p>Store: ",
             trove_version());
    /* the store path is the user's: escape what HTML would read */
    for (const char *p = srv->opt.store_dir; rc == TROVE_OK && *p; p++)
        rc = *p == '<' ? put(out, "&lt;") : *p == '&' ? put(out, "&amp;")
                                                      : trove_bytes_append(out, p, 1);
    if (rc == TROVE_OK)
        rc = put(out, "</p>\n<table>\n<tr><th>capture</th><th>state</th><th>events</th>"
                      "<th>bytes stored</th><th>producers</th><th>viewers</th></tr>\n");
    for (size_t i = 0; rc == TROVE_OK && i < s.ncaps; i++) {
        const struct cap_row *r = &s.caps[i];
        rc = put(out,
                 "<tr><td>%s</td><td>%s</td><td>%" PRIu64 "</td><td>%" PRIu64
                 "</td><td>%d</td><td>%d</td></tr>\n",
                 r->name, state_name(r->state), r->events, r->stored_bytes, r->producers,
                 r->viewers);
    }
    if (rc == TROVE_OK)
        rc = put(out, "</table>\n<p>%zu captures here. Live events: "
                      "<code>/api/live?capture=NAME</code> (WebSocket); "
                      "<a href=\"/api/status\">/api/status</a>, "
                      "<a href=\"/metrics\">/metrics</a>.</p>\n</body></html>\n",
                 s.ncaps);
    snapshot_free(&s);
    return rc;
}
