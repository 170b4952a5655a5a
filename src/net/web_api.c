/*
 * web_api.c: HTTP answers and the API over stored captures (docs/serve.md, "The HTTP API
 * over stored captures"), on the web thread. Reads (list, info) open the store read-only
 * beside the service's writer; changes (delete, import) go to the store thread as jobs and
 * the answer waits for them; an export runs on a thread of its own, writing into a pipe the
 * web thread sends on in chunks as it fills, so that no capture is ever whole in memory. A
 * profile (its samples for the viewer) is read and made into JSON on a thread of its own too,
 * at most PROFILE_JOBS of them at once, so that a large one never holds up the live viewers;
 * the connection looks for the answer every PROFILE_POLL_US (its thread never touches the
 * web thread's libwebsockets context, which may be going away when it ends).
 */
#define _GNU_SOURCE /* pipe2 */

#include "web_api.h"
#include "common/alloc.h"
#include "profile_json.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define HTTP_CHUNK 32768
#define EXPORT_POLL_US 2000
#define MAX_IMPORT_DEFAULT ((uint64_t)4 << 30)
/* Profiles being made at once, and the samples of the largest one the service reads: about
 * 24 bytes each in memory, and as much again while the answer is made. */
#define PROFILE_JOBS 2
#define PROFILE_POLL_US 5000
#define PROFILE_MAX_SAMPLES ((uint64_t)1 << 24)

struct trove__export {
    struct trove__server *srv;
    char name[TROVE_VOLUME_NAME_MAX + 1];
    int format;
    uint64_t from_ns, to_ns;
    int rfd, wfd;
    pthread_t thread;
    atomic_int done;
    int status;
    char err[TROVE__ERROR_MAX];
    uint8_t buf[LWS_PRE + 16 + HTTP_CHUNK + 8];
    int finished; /* the last chunk went */
};

struct trove__profile_job {
    struct trove__server *srv;
    char name[TROVE_VOLUME_NAME_MAX + 1];
    uint64_t from_ns, to_ns; /* as asked: 0 and UINT64_MAX for the capture's whole span */
    uint32_t limit;
    pthread_t thread;
    atomic_int done;
    int status;              /* 0, or the HTTP status of the error */
    char err[TROVE__ERROR_MAX];
    struct trove_bytes body; /* the answer */
    struct trove__profile_job *next; /* in web->orphans */
};

/* ---- answers ---------------------------------------------------------------------------- */

/* An answer is written: its connection ends (each says "connection: close"). One request a
 * connection: libwebsockets 4.1 mishandles requests pipelined behind another — a body
 * without a length read from freed memory, and a body in the same read as its head
 * consumed in an endless loop that stops the whole service (both found by fuzz_http). A
 * browser or curl opens the next connection itself; the WebSockets have their own. */
int trove__http_done(struct lws *wsi)
{
    (void)wsi;
    return -1; /* libwebsockets sends what it still holds, then closes */
}

int trove__http_answer(struct lws *wsi, struct pss *ps, unsigned status, const char *type,
                       const void *body, size_t len, const char *extra_header)
{
    uint8_t hdr[LWS_PRE + 1536], *start = hdr + LWS_PRE, *p = start, *end = hdr + sizeof hdr - 1;

    free(ps->body);
    if (!(ps->body = trove__malloc(LWS_PRE + len + 1)))
        return -1;
    if (len)
        memcpy(ps->body + LWS_PRE, body, len);
    ps->len = len;
    ps->sent = 0;
    if (lws_add_http_common_headers(wsi, status, type, (lws_filepos_t)len, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
                                     (const unsigned char *)"no-store", 8, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION,
                                     (const unsigned char *)"close", 5, &p, end))
        return -1;
    if (extra_header) { /* "name: value" lines, each ending in \r\n */
        size_t n = strlen(extra_header);
        if ((size_t)(end - p) <= n)
            return -1;
        memcpy(p, extra_header, n);
        p += n;
    }
    if (lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    lws_callback_on_writable(wsi);
    return 0;
}

static void json_str(struct trove_bytes *b, const char *s)
{
    trove_bytes_append(b, "\"", 1);
    for (; *s; s++) {
        char e[8];
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            snprintf(e, sizeof e, "\\%c", c);
        else if (c < 0x20)
            snprintf(e, sizeof e, "\\u%04x", c);
        else
            e[0] = (char)c, e[1] = 0;
        trove_bytes_append(b, e, strlen(e));
    }
    trove_bytes_append(b, "\"", 1);
}

int trove__http_error(struct lws *wsi, struct pss *ps, unsigned status, const char *code,
                      const char *msg)
{
    struct trove_bytes b = {0};
    int rc;

    trove_bytes_append(&b, "{\"error\":", 9);
    json_str(&b, msg);
    trove_bytes_append(&b, ",\"code\":", 8);
    json_str(&b, code);
    trove_bytes_append(&b, "}\n", 2);
    rc = trove__http_answer(wsi, ps, status, "application/json", b.ptr, b.len,
                            status == 401 ? "www-authenticate: Bearer\r\n" : NULL);
    trove_bytes_free(&b);
    return rc;
}

static const char *code_of(int status)
{
    switch (status) {
    case 400: return "bad_request";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 409: return "conflict";
    case 411: return "length_required";
    case 413: return "too_large";
    case 501: return "not_implemented";
    case 503: return "unavailable";
    default: return "internal";
    }
}

/* ---- list and info ---------------------------------------------------------------------- */

static void put_u64(struct trove_bytes *b, const char *key, uint64_t v)
{
    char s[64];
    int n = snprintf(s, sizeof s, ",\"%s\":%" PRIu64, key, v);
    trove_bytes_append(b, s, (size_t)n);
}

/* Is capture `name` live in this service, and with how many producers? */
static int live_of(struct trove__server *srv, const char *name, int *producers)
{
    int live = 0;

    *producers = 0;
    pthread_mutex_lock(&srv->mu);
    for (struct trove__cap *c = srv->caps; c; c = c->next)
        if (strcmp(c->name, name) == 0) {
            pthread_mutex_lock(&c->mu);
            live = c->state == TROVE__CAP_OPENING || c->state == TROVE__CAP_LIVE ||
                   c->state == TROVE__CAP_CLOSING;
            *producers = c->producers;
            pthread_mutex_unlock(&c->mu);
            break;
        }
    pthread_mutex_unlock(&srv->mu);
    return live;
}

static void capture_json(struct trove__server *srv, struct trove_bytes *b, const char *name,
                         int error, const struct trove_capture_info *i, int details)
{
    uint64_t used = 0;
    int producers, live = live_of(srv, name, &producers);

    trove_bytes_append(b, "{\"name\":", 8);
    json_str(b, name);
    if (error) {
        trove_bytes_append(b, ",\"error\":", 9);
        json_str(b, trove_strerror(error));
    }
    put_u64(b, "events", i->events);
    put_u64(b, "first_ns", i->first_ns);
    put_u64(b, "last_ns", i->end_ns);
    put_u64(b, "bytes", i->stored_bytes);
    trove_bytes_append(b, live ? ",\"live\":true" : ",\"live\":false", live ? 12 : 13);
    if (trove_capture_last_used(srv->opt.store_dir, name, &used) == TROVE_OK)
        put_u64(b, "last_used", used);
    else
        trove_bytes_append(b, ",\"last_used\":null", 17);
    if (details) {
        put_u64(b, "producers", (uint64_t)producers);
        put_u64(b, "segments", i->segments);
        put_u64(b, "names", i->names);
        put_u64(b, "flows", i->flows);
        if (i->flags & TROVE_CAPTURE_FLAG_COLUMNAR)
            trove_bytes_append(b, ",\"segment_format\":\"columnar\"", 28);
        else
            trove_bytes_append(b, ",\"segment_format\":\"deflate\"", 27);
    }
    trove_bytes_append(b, "}", 1);
}

static int api_list(struct web *w, struct lws *wsi, struct pss *ps)
{
    struct trove_store *s = NULL;
    struct trove_capture_entry *e = NULL;
    struct trove_diag diag = {0};
    struct trove_bytes b = {0};
    size_t n = 0;
    int rc;

    rc = trove_store_open(w->srv->opt.store_dir, TROVE_STORE_READONLY, &s, &diag);
    if (rc == TROVE_OK)
        rc = trove_capture_list(s, &e, &n);
    if (rc != TROVE_OK) {
        trove_store_close(s);
        return trove__http_error(wsi, ps, 500, "internal",
                                 diag.msg[0] ? diag.msg : trove_strerror(rc));
    }
    trove_bytes_append(&b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            trove_bytes_append(&b, ",", 1);
        capture_json(w->srv, &b, e[i].name, e[i].error, &e[i].info, 0);
    }
    trove_bytes_append(&b, "]\n", 2);
    free(e);
    trove_store_close(s);
    rc = trove__http_answer(wsi, ps, 200, "application/json", b.ptr, b.len, NULL);
    trove_bytes_free(&b);
    return rc;
}

/* The capture's info through a read-only handle: 0, or an HTTP status with msg. */
static int find_capture(struct web *w, const char *name, struct trove_capture_info *info,
                        char *msg, size_t cap)
{
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int rc = trove_store_open(w->srv->opt.store_dir, TROVE_STORE_READONLY, &s, &diag);

    if (rc == TROVE_OK)
        rc = trove_capture_info(s, name, info, &diag);
    trove_store_close(s);
    if (rc == TROVE_OK)
        return 0;
    snprintf(msg, cap, "%s", rc == TROVE_ERR_NOTFOUND ? "no such capture"
                             : diag.msg[0]            ? diag.msg
                                                      : trove_strerror(rc));
    return rc == TROVE_ERR_NOTFOUND || rc == TROVE_ERR_INVALID ? 404 : 500;
}

static int api_info(struct web *w, struct lws *wsi, struct pss *ps)
{
    struct trove_capture_info info;
    struct trove_bytes b = {0};
    char msg[TROVE__ERROR_MAX];
    int st, rc;

    if ((st = find_capture(w, ps->req.name, &info, msg, sizeof msg)) != 0)
        return trove__http_error(wsi, ps, (unsigned)st, code_of(st), msg);
    capture_json(w->srv, &b, ps->req.name, 0, &info, 1);
    trove_bytes_append(&b, "\n", 1);
    rc = trove__http_answer(wsi, ps, 200, "application/json", b.ptr, b.len, NULL);
    trove_bytes_free(&b);
    return rc;
}

/* ---- jobs: delete, import ----------------------------------------------------------------- */

static int submit(struct web *w, struct lws *wsi, struct pss *ps, int kind)
{
    struct trove__job *j = trove__calloc(1, sizeof *j);
    struct trove__server *srv = w->srv;

    if (!j)
        return trove__http_error(wsi, ps, 500, "internal", "out of memory");
    atomic_init(&j->refs, 2);
    atomic_init(&j->done, 0);
    j->kind = kind;
    j->append = ps->req.append;
    snprintf(j->name, sizeof j->name, "%s", ps->req.name);
    if (kind == TROVE__JOB_IMPORT) {
        snprintf(j->path, sizeof j->path, "%s", ps->ipath);
        ps->ipath[0] = 0; /* the job's now: unlinked when it is freed */
    }
    pthread_mutex_lock(&srv->mu);
    if (srv->jobs_tail)
        srv->jobs_tail->next = j;
    else
        srv->jobs = j;
    srv->jobs_tail = j;
    pthread_cond_signal(&srv->store_cv);
    pthread_mutex_unlock(&srv->mu);
    ps->job = j;
    ps->wsi = wsi;
    ps->next = w->waiting;
    w->waiting = ps;
    return 0;
}

static void unwait(struct web *w, struct pss *ps)
{
    for (struct pss **pp = &w->waiting; *pp; pp = &(*pp)->next)
        if (*pp == ps) {
            *pp = ps->next;
            break;
        }
}

void trove__api_wake_waiting(struct web *w)
{
    for (struct pss *ps = w->waiting; ps; ps = ps->next)
        if (ps->job && atomic_load(&ps->job->done))
            lws_callback_on_writable(ps->wsi);
}

/* The job is done: its answer. */
static int job_answer(struct web *w, struct lws *wsi, struct pss *ps)
{
    struct trove__job *j = ps->job;
    struct trove_bytes b = {0};
    int rc;

    unwait(w, ps);
    ps->job = NULL;
    if (j->status) {
        rc = trove__http_error(wsi, ps, (unsigned)j->status, code_of(j->status), j->err);
    } else if (j->kind == TROVE__JOB_DELETE) {
        trove_bytes_append(&b, "{\"deleted\":", 11);
        json_str(&b, j->name);
        trove_bytes_append(&b, "}\n", 2);
        rc = trove__http_answer(wsi, ps, 200, "application/json", b.ptr, b.len, NULL);
    } else {
        trove_bytes_append(&b, "{\"name\":", 8);
        json_str(&b, j->name);
        put_u64(&b, "events", j->res.events);
        put_u64(&b, "new_objects", j->res.new_objects);
        put_u64(&b, "new_bytes", j->res.new_bytes);
        trove_bytes_append(&b, "}\n", 2);
        rc = trove__http_answer(wsi, ps, 200, "application/json", b.ptr, b.len, NULL);
    }
    trove_bytes_free(&b);
    trove__job_release(j);
    return rc;
}

/* ---- import: the body into a temp file ---------------------------------------------------- */

static uint64_t max_import(struct web *w)
{
    return w->srv->opt.max_import ? w->srv->opt.max_import : MAX_IMPORT_DEFAULT;
}

/* A client that sent "Expect: 100-continue" (curl does for a body over 1 MiB) waits for
 * the interim answer before it sends the body: give it, once the request is accepted (a
 * refused one has had its final answer instead, and the body is never read). */
static void expect_continue(struct lws *wsi)
{
    static const char msg[] = "HTTP/1.1 100 Continue\r\n\r\n";
    unsigned char buf[LWS_PRE + sizeof msg];
    char v[32] = "";

    if (lws_hdr_copy(wsi, v, sizeof v, WSI_TOKEN_HTTP_EXPECT) <= 0 ||
        strcasecmp(v, "100-continue") != 0)
        return;
    memcpy(buf + LWS_PRE, msg, sizeof msg - 1);
    lws_write(wsi, buf + LWS_PRE, sizeof msg - 1, LWS_WRITE_HTTP);
}

static int import_begin(struct web *w, struct lws *wsi, struct pss *ps)
{
    char len_s[32] = "";
    const char *tmp = getenv("TMPDIR");

    if (lws_hdr_copy(wsi, len_s, sizeof len_s, WSI_TOKEN_HTTP_CONTENT_LENGTH) <= 0) {
        /* A body without a length is read by libwebsockets 4.1 out of memory it has freed
         * when the request came behind another on the connection (found by fuzz_http): such
         * a body is never read (and the connection ends after the answer, as every one does). */
        return trove__http_error(wsi, ps, 411, "length_required",
                                 "an import needs a Content-Length header");
    }
    if (strtoull(len_s, NULL, 10) > max_import(w)) {
        char msg[128];
        snprintf(msg, sizeof msg, "the body is %s bytes, over the service's --max-import of %" PRIu64,
                 len_s, max_import(w));
        return trove__http_error(wsi, ps, 413, "too_large", msg);
    }
    snprintf(ps->ipath, sizeof ps->ipath, "%s/trove-import-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if ((ps->ifd = mkstemp(ps->ipath)) < 0) {
        ps->ipath[0] = 0;
        ps->ifd_open = 0;
        return trove__http_error(wsi, ps, 500, "internal", "no temporary file for the body");
    }
    ps->ifd_open = 1;
    ps->ibytes = 0;
    ps->itoo_big = 0;
    expect_continue(wsi);
    return 0; /* the body follows */
}

int trove__api_body(struct web *w, struct lws *wsi, struct pss *ps, const void *in, size_t len)
{
    (void)wsi;
    if (!ps->ifd_open || ps->itoo_big)
        return 0;
    if (ps->ibytes + len > max_import(w)) {
        ps->itoo_big = 1; /* answered at the end of the body */
        return 0;
    }
    for (size_t off = 0; off < len;) {
        ssize_t n = write(ps->ifd, (const uint8_t *)in + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        off += (size_t)n;
    }
    ps->ibytes += len;
    return 0;
}

int trove__api_body_done(struct web *w, struct lws *wsi, struct pss *ps)
{
    if (!ps->ifd_open)
        return 0;
    close(ps->ifd);
    ps->ifd_open = 0;
    if (ps->itoo_big) {
        char msg[128];
        unlink(ps->ipath);
        ps->ipath[0] = 0;
        snprintf(msg, sizeof msg, "the body is over the service's --max-import of %" PRIu64
                                  " bytes; nothing was stored", max_import(w));
        return trove__http_error(wsi, ps, 413, "too_large", msg);
    }
    return submit(w, wsi, ps, TROVE__JOB_IMPORT);
}

/* ---- profile: read and answered on a thread ------------------------------------------------ */

static void *profile_main(void *arg)
{
    struct trove__profile_job *j = arg;
    struct trove_store *s = NULL;
    struct trove_profile *p = NULL;
    struct trove_names *names = NULL;
    struct trove_capture_info info;
    struct trove_diag diag = {0};
    struct trove__profile_query q;
    uint64_t from, to;
    int rc;

    rc = trove_store_open(j->srv->opt.store_dir, TROVE_STORE_READONLY, &s, &diag);
    if (rc == TROVE_OK)
        rc = trove_capture_info(s, j->name, &info, &diag);
    if (rc != TROVE_OK) {
        j->status = rc == TROVE_ERR_NOTFOUND || rc == TROVE_ERR_INVALID ? 404 : 500;
        snprintf(j->err, sizeof j->err, "%s",
                 rc == TROVE_ERR_NOTFOUND ? "no such capture"
                 : diag.msg[0]            ? diag.msg
                                          : trove_strerror(rc));
        goto out;
    }
    if (info.samples > PROFILE_MAX_SAMPLES) {
        j->status = 413;
        snprintf(j->err, sizeof j->err,
                 "capture %s has %" PRIu64 " samples, over the %" PRIu64 " the service reads "
                 "for a viewer; `trove top %s` reads any number",
                 j->name, info.samples, PROFILE_MAX_SAMPLES, j->name);
        goto out;
    }
    if ((rc = trove_profile_new(&p)) == TROVE_OK &&
        (rc = trove_capture_read_profile(s, j->name, p, &diag)) == TROVE_OK &&
        (rc = trove_names_new(&names)) == TROVE_OK)
        rc = trove_capture_read_names(s, j->name, names, &diag);
    if (rc == TROVE_OK) {
        trove__profile_span(p, info.events, info.first_ns, info.end_ns, &from, &to);
        q.capture = j->name;
        q.from_ns = j->from_ns ? j->from_ns : from;
        q.to_ns = j->to_ns != UINT64_MAX ? j->to_ns : to > q.from_ns ? to : q.from_ns;
        q.limit = j->limit;
        rc = trove__profile_json(p, names, &q, &j->body);
    }
    if (rc != TROVE_OK) {
        j->status = rc == TROVE_ERR_NOTFOUND ? 404 : 500;
        snprintf(j->err, sizeof j->err, "%s",
                 rc == TROVE_ERR_NOMEM ? "out of memory"
                 : diag.msg[0]        ? diag.msg
                                      : trove_strerror(rc));
    }
out:
    trove_names_free(names);
    trove_profile_free(p);
    trove_store_close(s);
    atomic_store(&j->done, 1);
    return NULL;
}

static void profile_free(struct web *w, struct trove__profile_job *j)
{
    pthread_join(j->thread, NULL);
    trove_bytes_free(&j->body);
    free(j);
    w->profiles--;
}

void trove__api_reap(struct web *w, int all)
{
    for (struct trove__profile_job **p = &w->orphans; *p;) {
        struct trove__profile_job *j = *p;
        if (all || atomic_load(&j->done)) {
            *p = j->next;
            trove__log(w->srv, "profile of capture %s, whose connection closed: dropped", j->name);
            profile_free(w, j); /* joins its thread (done, or at the stop: waited for) */
        } else {
            p = &j->next;
        }
    }
}

static int profile_begin(struct web *w, struct lws *wsi, struct pss *ps)
{
    struct trove__profile_job *j;

    trove__api_reap(w, 0);
    if (w->profiles >= PROFILE_JOBS)
        return trove__http_error(wsi, ps, 503, "unavailable",
                                 "the service is making other profiles; ask again shortly");
    if (!(j = trove__calloc(1, sizeof *j)))
        return trove__http_error(wsi, ps, 500, "internal", "out of memory");
    j->srv = w->srv;
    snprintf(j->name, sizeof j->name, "%s", ps->req.name);
    j->from_ns = ps->req.from_ns;
    j->to_ns = ps->req.to_ns;
    j->limit = ps->req.limit;
    atomic_init(&j->done, 0);
    if (pthread_create(&j->thread, NULL, profile_main, j) != 0) {
        free(j);
        return trove__http_error(wsi, ps, 500, "internal", "no thread for the profile");
    }
    w->profiles++;
    ps->pj = j;
    lws_set_timer_usecs(wsi, PROFILE_POLL_US); /* LWS_CALLBACK_TIMER: is it done? */
    return 0;
}

static int profile_answer(struct web *w, struct lws *wsi, struct pss *ps)
{
    struct trove__profile_job *j = ps->pj;
    int rc;

    ps->pj = NULL;
    if (j->status)
        rc = trove__http_error(wsi, ps, (unsigned)j->status, code_of(j->status), j->err);
    else
        rc = trove__http_answer(wsi, ps, 200, "application/json", j->body.ptr, j->body.len,
                                NULL);
    profile_free(w, j);
    return rc;
}

/* ---- export: a thread writing into a pipe --------------------------------------------------- */

static void *export_main(void *arg)
{
    struct trove__export *x = arg;
    struct trove__server *srv = x->srv;

    x->status = srv->opt.export_fn(srv->opt.ctx, srv->opt.store_dir, x->name, x->format,
                                   x->from_ns, x->to_ns, x->wfd, x->err, sizeof x->err);
    close(x->wfd);
    x->wfd = -1;
    atomic_store(&x->done, 1);
    return NULL;
}

static int export_begin(struct web *w, struct lws *wsi, struct pss *ps)
{
    static const char *const ext[] = {"", "bundle", "parquet", "zip", "json", "pftrace"};
    static const char *const type[] = {"", "application/zip", "application/vnd.apache.parquet",
                                       "application/zip", "application/json",
                                       "application/octet-stream"};
    uint8_t hdr[LWS_PRE + 1024], *start = hdr + LWS_PRE, *p = start, *end = hdr + sizeof hdr - 1;
    struct trove_capture_info info;
    struct trove__export *x;
    char msg[TROVE__ERROR_MAX], disp[TROVE_VOLUME_NAME_MAX + 64];
    int fds[2], st, n;

    if (!w->srv->opt.export_fn)
        return trove__http_error(wsi, ps, 501, "not_implemented", "this service has no exporter");
    if ((st = find_capture(w, ps->req.name, &info, msg, sizeof msg)) != 0)
        return trove__http_error(wsi, ps, (unsigned)st, code_of(st), msg);
    if (!(x = trove__calloc(1, sizeof *x)))
        return trove__http_error(wsi, ps, 500, "internal", "out of memory");
    if (pipe2(fds, O_CLOEXEC) != 0) {
        free(x);
        return trove__http_error(wsi, ps, 500, "internal", "no pipe for the export");
    }
    fcntl(fds[0], F_SETFL, O_NONBLOCK); /* the web thread never waits on it */
    x->srv = w->srv;
    x->rfd = fds[0];
    x->wfd = fds[1];
    x->format = ps->req.format;
    x->from_ns = ps->req.from_ns;
    x->to_ns = ps->req.to_ns;
    atomic_init(&x->done, 0);
    snprintf(x->name, sizeof x->name, "%s", ps->req.name);
    if (pthread_create(&x->thread, NULL, export_main, x) != 0) {
        close(fds[0]);
        close(fds[1]);
        free(x);
        return trove__http_error(wsi, ps, 500, "internal", "no thread for the export");
    }
    ps->x = x;
    n = snprintf(disp, sizeof disp, "attachment; filename=\"%s.%s\"", x->name, ext[x->format]);
    if (lws_add_http_common_headers(wsi, 200, type[x->format], LWS_ILLEGAL_HTTP_CONTENT_LEN, &p,
                                    end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_DISPOSITION,
                                     (const unsigned char *)disp, n, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING,
                                     (const unsigned char *)"chunked", 7, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION,
                                     (const unsigned char *)"close", 5, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    lws_callback_on_writable(wsi);
    return 0;
}

/* The export's next chunk (HTTP/1.1 chunked framing, ours). */
static int export_write(struct lws *wsi, struct pss *ps)
{
    struct trove__export *x = ps->x;
    uint8_t *data = x->buf + LWS_PRE + 16;
    ssize_t n = read(x->rfd, data, HTTP_CHUNK);
    int head;

    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        lws_set_timer_usecs(wsi, EXPORT_POLL_US); /* LWS_CALLBACK_TIMER asks again */
        return 0;
    }
    if (n < 0)
        return -1;
    if (n == 0) { /* the writer closed its end */
        if (!atomic_load(&x->done)) {
            lws_set_timer_usecs(wsi, EXPORT_POLL_US);
            return 0;
        }
        if (x->status) {
            trove__log(x->srv, "export of %s failed: %s", x->name, x->err);
            return -1; /* the client sees the body end without its last chunk */
        }
        memcpy(x->buf + LWS_PRE, "0\r\n\r\n", 5);
        if (lws_write(wsi, x->buf + LWS_PRE, 5, LWS_WRITE_HTTP_FINAL) != 5)
            return -1;
        x->finished = 1;
        return trove__http_done(wsi);
    }
    /* "<hex>\r\n" just before the data, "\r\n" after it */
    {
        char h[16];
        head = snprintf(h, sizeof h, "%zx\r\n", (size_t)n);
        memcpy(data - head, h, (size_t)head);
        memcpy(data + n, "\r\n", 2);
    }
    if (lws_write(wsi, data - head, (size_t)(head + n + 2), LWS_WRITE_HTTP) != head + n + 2)
        return -1;
    lws_callback_on_writable(wsi);
    return 0;
}

void trove__api_drop(struct web *w, struct pss *ps)
{
    if (ps->job) {
        unwait(w, ps);
        trove__job_release(ps->job); /* the store thread finishes it and frees it */
        ps->job = NULL;
    }
    if (ps->pj) { /* its thread ends by itself: joined now if done, else once it is */
        if (atomic_load(&ps->pj->done)) {
            profile_free(w, ps->pj);
        } else {
            trove__log(w->srv, "profile of capture %s: its connection closed before it was made; "
                            "it is dropped once made",
                       ps->pj->name);
            ps->pj->next = w->orphans;
            w->orphans = ps->pj;
        }
        ps->pj = NULL;
    }
    if (ps->x) {
        struct trove__export *x = ps->x;
        char sink[4096];
        /* Unblock the writer: read and drop what it writes until it is done. */
        fcntl(x->rfd, F_SETFL, 0);
        while (read(x->rfd, sink, sizeof sink) > 0)
            ;
        pthread_join(x->thread, NULL);
        close(x->rfd);
        free(x);
        ps->x = NULL;
    }
    if (ps->ifd_open) {
        close(ps->ifd);
        ps->ifd_open = 0;
    }
    if (ps->ipath[0]) {
        unlink(ps->ipath);
        ps->ipath[0] = 0;
    }
    free(ps->body);
    ps->body = NULL;
}

int trove__http_writeable(struct web *w, struct lws *wsi, struct pss *ps)
{
    size_t n;
    int last;

    if (ps->job)
        return atomic_load(&ps->job->done) ? job_answer(w, wsi, ps) : 0;
    if (ps->pj) {
        if (atomic_load(&ps->pj->done))
            return profile_answer(w, wsi, ps);
        lws_set_timer_usecs(wsi, PROFILE_POLL_US);
        return 0;
    }
    if (ps->x && !ps->x->finished)
        return export_write(wsi, ps);
    if (!ps->body)
        return 0;
    n = ps->len - ps->sent;
    if (n > HTTP_CHUNK)
        n = HTTP_CHUNK;
    last = ps->sent + n == ps->len;
    /* The bytes before this chunk were sent already: lws may use them as its headroom. */
    if (lws_write(wsi, ps->body + LWS_PRE + ps->sent, n,
                  last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != (int)n)
        return -1;
    ps->sent += n;
    if (!last) {
        lws_callback_on_writable(wsi);
        return 0;
    }
    free(ps->body);
    ps->body = NULL;
    return trove__http_done(wsi);
}

/* ---- routed requests ---------------------------------------------------------------------- */

int trove__api_start(struct web *w, struct lws *wsi, struct pss *ps)
{
    switch (ps->req.route) {
    case TROVE__R_LIST:
        return api_list(w, wsi, ps);
    case TROVE__R_INFO:
        return api_info(w, wsi, ps);
    case TROVE__R_DELETE:
        return submit(w, wsi, ps, TROVE__JOB_DELETE);
    case TROVE__R_EXPORT:
        return export_begin(w, wsi, ps);
    case TROVE__R_PROFILE:
        return profile_begin(w, wsi, ps);
    case TROVE__R_IMPORT:
        return import_begin(w, wsi, ps);
    case TROVE__R_LOGIN: {
        char cookie[400];
        if (!w->token)
            return trove__http_error(wsi, ps, 400, "bad_request",
                                     "this service has no token: nothing to log in to");
        {
            char auth[300];
            snprintf(auth, sizeof auth, "Bearer %s", ps->req.token);
            if (!trove__api_token_ok(w->token, w->token_len, auth, NULL))
                return trove__http_error(wsi, ps, 401, "unauthorized", "wrong token");
        }
        snprintf(cookie, sizeof cookie,
                 "set-cookie: trove_token=%s; HttpOnly; SameSite=Strict; Path=/\r\n"
                 "location: /\r\n",
                 ps->req.token);
        return trove__http_answer(wsi, ps, 302, "text/plain", "", 0, cookie);
    }
    default:
        return trove__http_error(wsi, ps, 404, "not_found", "no such endpoint");
    }
}
