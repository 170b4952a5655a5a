/*
 * web_api.c: HTTP answers and the API over stored captures (docs/serve.md, "The HTTP API
 * over stored captures"), on the web thread. Reads (list, info) open the store read-only
 * beside the service's writer; changes (delete, import) go to the store thread as jobs and
 * the answer waits for them; an export runs on a thread of its own, writing into a pipe the
 * web thread reads from as the client takes the bytes (the pipe is in the epoll set only
 * while the client keeps up), so that no capture is ever whole in memory. A profile (its
 * samples for the viewer) is read and made into JSON on a thread of its own too, at most
 * PROFILE_JOBS of them at once, so that a large one never holds up the live viewers. The
 * threads wake the web thread when they are done; one whose connection went first is joined
 * once done (trove__api_reap), never waited for. Exports and uploads are capped (503 with
 * Retry-After beyond), and each holds its slot until its thread or job is over.
 *
 * One request a connection: every answer says "connection: close", and the connection
 * lingers after it (conn.h) so that what the client sent beyond its request is dropped
 * without resetting the answer.
 */
#define _GNU_SOURCE /* pipe2 */

#include "web_api.h"
#include "trove/attrs.h"
#include "trove/diff.h"
#include "trove/summary.h"
#include "common/alloc.h"
#include "flows_json.h"
#include "profile_json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#define HTTP_CHUNK 32768
#define BODY_READ 65536
#define MAX_IMPORT_DEFAULT ((uint64_t)4 << 30)
/* Profiles being made at once, and the samples of the largest one the service reads: about
 * 24 bytes each in memory, and as much again while the answer is made. */
#define PROFILE_JOBS 2
#define QUERY_JOBS 4 /* tracks, view, stats, events, names at once (each its own thread) */
#define PROFILE_MAX_SAMPLES ((uint64_t)1 << 24)

struct trove__export {
    int tag; /* TROVE__EV_PIPE: its read end is in the epoll set */
    struct trove__server *srv;
    struct web *w;
    struct pss *ps; /* NULL once its connection went */
    char name[TROVE_VOLUME_NAME_MAX + 1];
    int format;
    uint64_t from_ns, to_ns;
    int rfd, wfd;
    pthread_t thread;
    atomic_int done;
    int status;
    char err[TROVE__ERROR_MAX];
    struct trove__export *next; /* in web->xorphans */
};

struct trove__profile_job {
    struct trove__server *srv;
    char name[TROVE_VOLUME_NAME_MAX + 1];
    uint64_t from_ns, to_ns; /* as asked: 0 and UINT64_MAX for the capture's whole span */
    uint32_t limit;
    struct trove__api_req q; /* a query's request (route TROVE__R_PROFILE: a profile) */
    const char *type;        /* the answer's content type */
    pthread_t thread;
    atomic_int done;
    int status;              /* 0, or the HTTP status of the error */
    char err[TROVE__ERROR_MAX];
    struct trove_bytes body; /* the answer */
    struct trove__profile_job *next; /* in web->orphans */
};

/* ---- answers ---------------------------------------------------------------------------- */

int trove__http_answer(struct pss *ps, unsigned status, const char *type, const void *body,
                       size_t len, const char *extra_header)
{
    size_t cap = 1024 + (extra_header ? strlen(extra_header) : 0), n;
    uint8_t *buf;

    ps->state = TROVE__PS_ANSWER;
    ps->c.fill = NULL;
    if (ps->c.dead)
        return -1;
    if (!(buf = trove__malloc(cap + len))) {
        trove__conn_close(&ps->c);
        return -1;
    }
    if (!(n = trove__http_answer_head((char *)buf, cap, status, type, (int64_t)len,
                                      extra_header))) {
        free(buf);
        trove__conn_close(&ps->c);
        return -1;
    }
    if (!strcmp(ps->c.head.method, "HEAD"))
        len = 0; /* an answer to HEAD is its head (RFC 9110 9.3.2) */
    if (len)
        memcpy(buf + n, body, len);
    if (trove__conn_put_own(&ps->c, buf, 0, n + len) != TROVE_OK) {
        trove__conn_close(&ps->c);
        return -1;
    }
    trove__conn_end(&ps->c, 1, trove__now_ns());
    return ps->c.dead ? -1 : 0;
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

int trove__http_error(struct pss *ps, unsigned status, const char *code, const char *msg)
{
    struct trove_bytes b = {0};
    int rc;

    trove_bytes_append(&b, "{\"error\":", 9);
    json_str(&b, msg);
    trove_bytes_append(&b, ",\"code\":", 8);
    json_str(&b, code);
    trove_bytes_append(&b, "}\n", 2);
    rc = trove__http_answer(ps, status, "application/json", b.ptr, b.len,
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
    case 408: return "request_timeout";
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

/* Captures' damaged slots on record (trove_store_damaged), counted by name: e[0..n) sorted
 * by name, slots[i] for e[i]. */
struct damage_by_name {
    const struct trove_capture_entry *e;
    uint64_t *slots;
    size_t n;
};

static int entry_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct trove_capture_entry *)elem)->name);
}

static int note_damage(void *ctx, const struct trove_digest *d, const char *volume, uint64_t slot)
{
    struct damage_by_name *x = ctx;
    const struct trove_capture_entry *hit = bsearch(volume, x->e, x->n, sizeof *x->e, entry_cmp);

    (void)d;
    (void)slot;
    if (hit)
        x->slots[hit - x->e]++;
    return 0;
}

/* Capture e as JSON (trove_capture_listing_json, the keys `trove ls --json` writes too),
 * with what only the service knows: live, and with details its producers. For a capture
 * of samples alone the span is its samples' (read through s). */
static void capture_json(struct trove__server *srv, struct trove_store *s, struct trove_bytes *b,
                         struct trove_capture_entry *e, uint64_t damaged, int details)
{
    struct trove_capture_listing l;
    int producers, live = live_of(srv, e->name, &producers);

    memset(&l, 0, sizeof l);
    l.name = e->name;
    l.info = e->info;
    l.damaged = damaged;
    l.have_used =
        trove_capture_last_used(srv->opt.store_dir, e->name, &l.last_used_ns) == TROVE_OK;
    if (e->error == TROVE_OK)
        e->error = trove_capture_samples_span(s, e->name, &l.info, NULL);
    trove_bytes_append(b, "{", 1);
    if (e->error != TROVE_OK) {
        trove_bytes_append(b, "\"name\":", 7);
        json_str(b, e->name);
        trove_bytes_append(b, ",\"error\":", 9);
        json_str(b, trove_strerror(e->error));
        put_u64(b, "damaged", damaged);
    } else if (trove_capture_listing_json(&l, b) != TROVE_OK) {
        json_str(b, "error"); /* out of memory: the object still closes */
        trove_bytes_append(b, ":\"out of memory\"", 16);
    }
    trove_bytes_append(b, live ? ",\"live\":true" : ",\"live\":false", live ? 12 : 13);
    if (details)
        put_u64(b, "producers", (uint64_t)producers);
    trove_bytes_append(b, "}", 1);
}

static int api_list(struct web *w, struct pss *ps)
{
    struct trove_store *s = NULL;
    struct trove_capture_entry *e = NULL;
    struct trove_diag diag = {0};
    struct trove_bytes b = {0};
    struct damage_by_name dmg = {0};
    size_t n = 0;
    int rc;

    rc = trove_store_open(w->srv->opt.store_dir, TROVE_STORE_READONLY, &s, &diag);
    if (rc == TROVE_OK)
        rc = trove_capture_list(s, &e, &n);
    if (rc == TROVE_OK && n > 0 && !(dmg.slots = trove__calloc(n, sizeof *dmg.slots)))
        rc = TROVE_ERR_NOMEM;
    dmg.e = e;
    dmg.n = n;
    if (rc == TROVE_OK && n > 0)
        rc = trove_store_damaged(s, note_damage, &dmg);
    if (rc != TROVE_OK) {
        free(e);
        free(dmg.slots);
        trove_store_close(s);
        return trove__http_error(ps, 500, "internal",
                                 diag.msg[0] ? diag.msg : trove_strerror(rc));
    }
    trove_bytes_append(&b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            trove_bytes_append(&b, ",", 1);
        capture_json(w->srv, s, &b, &e[i], dmg.slots[i], 0);
    }
    trove_bytes_append(&b, "]\n", 2);
    free(e);
    free(dmg.slots);
    trove_store_close(s);
    rc = trove__http_answer(ps, 200, "application/json", b.ptr, b.len, NULL);
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

static int api_info(struct web *w, struct pss *ps)
{
    struct trove_capture_entry e;
    struct trove_bytes b = {0};
    struct trove_store *s = NULL;
    struct damage_by_name dmg;
    uint64_t slots = 0;
    char msg[TROVE__ERROR_MAX];
    int st, rc;

    if ((st = find_capture(w, ps->req.name, &e.info, msg, sizeof msg)) != 0)
        return trove__http_error(ps, (unsigned)st, code_of(st), msg);
    snprintf(e.name, sizeof e.name, "%s", ps->req.name);
    e.error = TROVE_OK;
    dmg.e = &e;
    dmg.slots = &slots;
    dmg.n = 1;
    if ((rc = trove_store_open(w->srv->opt.store_dir, TROVE_STORE_READONLY, &s, NULL)) ==
        TROVE_OK)
        rc = trove_store_damaged(s, note_damage, &dmg);
    if (rc != TROVE_OK) {
        trove_store_close(s);
        return trove__http_error(ps, 500, "internal", trove_strerror(rc));
    }
    capture_json(w->srv, s, &b, &e, slots, 1);
    trove_store_close(s);
    trove_bytes_append(&b, "\n", 1);
    rc = trove__http_answer(ps, 200, "application/json", b.ptr, b.len, NULL);
    trove_bytes_free(&b);
    return rc;
}


int trove__http_busy(struct pss *ps, const char *msg)
{
    struct trove_bytes b = {0};
    int rc;

    trove_bytes_append(&b, "{\"error\":", 9);
    json_str(&b, msg);
    trove_bytes_append(&b, ",\"code\":\"unavailable\"}\n", 23);
    rc = trove__http_answer(ps, 503, "application/json", b.ptr, b.len, "retry-after: 2\r\n");
    trove_bytes_free(&b);
    return rc;
}


/* ---- jobs: delete, import ----------------------------------------------------------------- */

static void unwait(struct web *w, struct pss *ps)
{
    for (struct pss **pp = &w->waiting; *pp; pp = &(*pp)->next)
        if (*pp == ps) {
            *pp = ps->next;
            break;
        }
    ps->next = NULL;
}

static void upload_done(struct web *w, struct pss *ps);

/* Hand the request's change to the store thread; its answer comes when the job is done. A
 * job asked for once the store thread has run its last round is refused (503): nothing
 * would run it. */
static int submit(struct web *w, struct pss *ps, int kind)
{
    struct trove__job *j = trove__calloc(1, sizeof *j);
    struct trove__server *srv = w->srv;

    if (!j)
        return trove__http_error(ps, 500, "internal", "out of memory");
    atomic_init(&j->refs, 2);
    atomic_init(&j->done, 0);
    j->kind = kind;
    j->append = ps->req.append;
    j->fd = -1;
    snprintf(j->name, sizeof j->name, "%s", ps->req.name);
    if (kind == TROVE__JOB_IMPORT) { /* the body's file is the job's now */
        j->fd = ps->ifd;
        ps->ifd = -1;
        ps->ifd_open = 0;
        snprintf(j->path, sizeof j->path, "/proc/self/fd/%d", j->fd);
    }
    if (trove__job_submit(srv, j) != 0) { /* the store thread has run its last round */
        atomic_store(&j->refs, 1);
        trove__job_release(j); /* and an import's body with it */
        upload_done(w, ps);
        return trove__http_busy(ps, "the service is shutting down");
    }
    ps->state = TROVE__PS_ANSWER;
    ps->job = j;
    ps->next = w->waiting;
    w->waiting = ps;
    return 0;
}

/* An upload's slot goes back: its body failed, or its job is done. */
static void upload_done(struct web *w, struct pss *ps)
{
    if (ps->upload) {
        ps->upload = 0;
        w->uploads--;
    }
}

/* The job is done: its answer. */
static int job_answer(struct web *w, struct pss *ps)
{
    struct trove__job *j = ps->job;
    struct trove_bytes b = {0};
    int rc;

    unwait(w, ps);
    ps->job = NULL;
    upload_done(w, ps);
    if (j->status) {
        rc = trove__http_error(ps, (unsigned)j->status, code_of(j->status), j->err);
    } else if (j->kind == TROVE__JOB_DELETE) {
        trove_bytes_append(&b, "{\"deleted\":", 11);
        json_str(&b, j->name);
        trove_bytes_append(&b, "}\n", 2);
        rc = trove__http_answer(ps, 200, "application/json", b.ptr, b.len, NULL);
    } else {
        trove_bytes_append(&b, "{\"name\":", 8);
        json_str(&b, j->name);
        put_u64(&b, "events", j->res.events);
        put_u64(&b, "attr_rows", j->res.attr_rows);
        put_u64(&b, "new_objects", j->res.new_objects);
        put_u64(&b, "new_bytes", j->res.new_bytes);
        trove_bytes_append(&b, ",\"warnings\":[", 13);
        for (size_t i = 0; i < j->warnings.n; i++) {
            char num[48];
            snprintf(num, sizeof num, "%s{\"count\":%llu,\"message\":", i ? "," : "",
                     (unsigned long long)j->warnings.w[i].count);
            trove_bytes_append(&b, num, strlen(num));
            json_str(&b, j->warnings.w[i].message);
            trove_bytes_append(&b, "}", 1);
        }
        if (j->warnings.more) {
            char more[96];
            snprintf(more, sizeof more, "%s{\"count\":%llu,\"message\":\"%zu more warnings\"}",
                     j->warnings.n ? "," : "", (unsigned long long)j->warnings.more_count,
                     j->warnings.more);
            trove_bytes_append(&b, more, strlen(more));
        }
        trove_bytes_append(&b, "]}\n", 3);
        rc = trove__http_answer(ps, 200, "application/json", b.ptr, b.len, NULL);
    }
    trove_bytes_free(&b);
    trove__job_release(j);
    return rc;
}

static int profile_answer(struct web *w, struct pss *ps);

void trove__api_wake_waiting(struct web *w)
{
    for (struct pss *ps = w->waiting, *next; ps; ps = next) {
        next = ps->next;
        if (ps->c.dead)
            continue;
        if (ps->job && atomic_load(&ps->job->done))
            job_answer(w, ps);
        else if (ps->pj && atomic_load(&ps->pj->done))
            profile_answer(w, ps);
    }
}

/* ---- import: the body into a temp file ---------------------------------------------------- */

static uint64_t max_import(struct web *w)
{
    return w->srv->opt.max_import ? w->srv->opt.max_import : MAX_IMPORT_DEFAULT;
}

static const char *tmp_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

/* The body could not be kept: say why (500), and log it. */
static int body_failed(struct web *w, struct pss *ps, int e)
{
    char msg[300];

    snprintf(msg, sizeof msg, "the service could not keep the body in its temporary directory "
                              "%s: %s; nothing was stored",
             tmp_dir(), strerror(e));
    trove__log(w->srv, "import of %s from %s: %s", ps->req.name, ps->c.peer, msg);
    if (ps->ifd_open) {
        close(ps->ifd);
        ps->ifd = -1;
        ps->ifd_open = 0;
    }
    ps->c.in_body = 0;
    upload_done(w, ps);
    return trove__http_error(ps, 500, "internal", msg);
}

static int body_done(struct web *w, struct pss *ps)
{
    ps->c.in_body = 0;
    trove__conn_list(&ps->c, TROVE__LIST_NONE, trove__now_ns());
    if (lseek(ps->ifd, 0, SEEK_SET) != 0)
        return body_failed(w, ps, errno);
    return submit(w, ps, TROVE__JOB_IMPORT);
}

static int write_body(struct web *w, struct pss *ps, const uint8_t *p, size_t n)
{
    if (n > ps->ilen - ps->ibytes)
        n = (size_t)(ps->ilen - ps->ibytes); /* what follows the body is not read */
    for (size_t off = 0; off < n;) {
        ssize_t k = write(ps->ifd, p + off, n - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return body_failed(w, ps, k < 0 ? errno : ENOSPC);
        off += (size_t)k;
    }
    ps->ibytes += n;
    trove__conn_progress(&ps->c, trove__now_ns());
    if (ps->ibytes == ps->ilen)
        return body_done(w, ps);
    return 0;
}

/* A client that sent "Expect: 100-continue" (curl does for a body over 1 MiB) waits for
 * the interim answer before it sends the body: give it, once the request is accepted (a
 * refused one has had its final answer instead, and the body is never read). */
static int expect_continue(struct pss *ps)
{
    static const char msg[] = "HTTP/1.1 100 Continue\r\n\r\n";
    char v[32];

    if (trove__http_copy(ps->c.head.f[TROVE__H_EXPECT], v, sizeof v) != 0 ||
        strcasecmp(v, "100-continue") != 0)
        return 0;
    if (trove__conn_put(&ps->c, msg, sizeof msg - 1) != TROVE_OK)
        return -1;
    return trove__conn_pump(&ps->c, trove__now_ns());
}

static int import_begin(struct web *w, struct pss *ps)
{
    const struct trove__http_head *h = &ps->c.head;
    char tmpl[4096];

    if (h->f[TROVE__H_TRANSFER_ENCODING].v || !h->f[TROVE__H_CONTENT_LENGTH].v)
        return trove__http_error(ps, 411, "length_required",
                                 "an import needs a Content-Length header (a body in chunks is "
                                 "not taken)");
    if (h->content_length > max_import(w)) {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "the body is %" PRIu64 " bytes, over the service's --max-import of %" PRIu64,
                 h->content_length, max_import(w));
        return trove__http_error(ps, 413, "too_large", msg);
    }
    if (w->uploads >= w->max_uploads)
        return trove__http_busy(ps, "the service is taking as many imports as it takes at once "
                                    "(--max-uploads); try again shortly");
    /* Unlinked at once: the job reads it through /proc/self/fd, and nothing is left behind
     * whatever happens to the service. */
    snprintf(tmpl, sizeof tmpl, "%s/trove-import-XXXXXX", tmp_dir());
    if ((ps->ifd = mkostemp(tmpl, O_CLOEXEC)) < 0) {
        ps->ifd = -1;
        return body_failed(w, ps, errno);
    }
    unlink(tmpl);
    ps->ifd_open = 1;
    ps->upload = 1;
    w->uploads++;
    ps->ibytes = 0;
    ps->ilen = h->content_length;
    ps->state = TROVE__PS_BODY;
    ps->c.in_body = 1;
    trove__conn_list(&ps->c, TROVE__LIST_ACTIVE, trove__now_ns());
    if (expect_continue(ps) != 0)
        return -1;
    if (ps->ilen == 0)
        return body_done(w, ps);
    if (ps->c.in_len > h->head_len) /* the body's first bytes came with the head */
        return write_body(w, ps, ps->c.in + h->head_len, ps->c.in_len - h->head_len);
    return 0;
}

int trove__api_body(struct web *w, struct pss *ps, const void *in, size_t len)
{
    uint8_t buf[BODY_READ];

    if (in)
        return write_body(w, ps, in, len);
    for (int round = 0; round < 16 && ps->state == TROVE__PS_BODY && !ps->c.dead; round++) {
        ssize_t n = recv(ps->c.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0) { /* gone before its body was whole: nothing is stored */
            trove__log(w->srv, "import of %s from %s: the connection ended after %" PRIu64
                               " of %" PRIu64 " bytes; nothing was stored",
                       ps->req.name, ps->c.peer, ps->ibytes, ps->ilen);
            trove__conn_close(&ps->c);
            return -1;
        }
        if (write_body(w, ps, buf, (size_t)n) != 0)
            return -1;
    }
    return 0;
}

/* Import bodies a killed service left in the temp directory (before bodies were unlinked at
 * once, each was a named file until its import was done). */
void trove__api_clean_tmp(struct trove__server *srv)
{
    const char *dir = tmp_dir();
    DIR *d = opendir(dir);
    struct dirent *e;
    unsigned n = 0;

    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        char path[4096];
        struct stat st;
        if (strncmp(e->d_name, "trove-import-", 13) != 0 || strlen(e->d_name) != 19)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
            unlink(path) == 0)
            n++;
    }
    closedir(d);
    if (n)
        trove__log(srv, "removed %u import bodies a stopped service left in %s", n, dir);
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
    trove__wake_web(j->srv); /* joined before the web thread's eventfd is closed */
    return NULL;
}

static void profile_free(struct web *w, struct trove__profile_job *j)
{
    int query = j->q.route != TROVE__R_PROFILE;
    pthread_join(j->thread, NULL);
    trove_bytes_free(&j->body);
    free(j);
    if (query)
        w->queries--;
    else
        w->profiles--;
}

/* ---- queries: tracks, view, stats, events, names, each answered on a thread ---------------- */

/* A capture that has no summaries gets them from the store thread, once, in the background
 * (the query that found it answered from its segments). */
static void index_later(struct trove__server *srv, const char *name)
{
    struct trove__job *j = trove__calloc(1, sizeof *j);

    if (!j)
        return;
    atomic_init(&j->refs, 1);
    atomic_init(&j->done, 0);
    j->kind = TROVE__JOB_INDEX;
    j->fd = -1;
    snprintf(j->name, sizeof j->name, "%s", name);
    if (trove__job_submit(srv, j) != 0)
        trove__job_release(j);
}

static int query_run(struct trove__profile_job *j, struct trove_store *s, struct trove_diag *diag)
{
    const struct trove__api_req *q = &j->q;
    struct trove_query_figures fig = {0};
    uint64_t to = q->to_ns == UINT64_MAX ? 0 : q->to_ns;
    int rc;

    j->type = "application/json";
    switch (q->route) {
    case TROVE__R_TRACKS:
        rc = trove_capture_tracks_json(s, j->name, &j->body, &fig, diag);
        break;
    case TROVE__R_VIEW: {
        struct trove_view_options o = {0};
        o.from_ns = q->from_ns;
        o.to_ns = to;
        o.px = q->px;
        o.tracks = q->ntracks ? q->tracks : NULL;
        o.ntracks = q->ntracks;
        o.names = q->names;
        j->type = "application/octet-stream";
        rc = trove_capture_view(s, j->name, &o, &j->body, &fig, diag);
        break;
    }
    case TROVE__R_STATS: {
        struct trove_stats_options o = {0};
        struct trove_stats_result res;
        o.from_ns = q->from_ns;
        o.to_ns = to;
        o.tracks = q->ntracks ? q->tracks : NULL;
        o.ntracks = q->ntracks;
        o.name = q->has_event ? q->event : NULL;
        o.sort = q->sort;
        o.limit = q->qlimit;
        o.clip = q->clip;
        rc = trove_capture_stats(s, j->name, &o, &res, diag);
        if (rc == TROVE_OK) {
            fig = res.read;
            rc = trove_stats_result_json(&res, j->name, q->sort, &j->body);
            trove_stats_result_free(&res);
        }
        break;
    }
    case TROVE__R_EVENTS: {
        struct trove_find_options o = {0};
        o.name = q->has_event ? q->event : NULL;
        o.text = q->has_text ? q->text : NULL;
        o.ids = q->nids ? q->ids : NULL;
        o.nids = q->nids;
        o.from_ns = q->from_ns;
        o.to_ns = to;
        o.tracks = q->ntracks ? q->tracks : NULL;
        o.ntracks = q->ntracks;
        o.order = q->order;
        o.limit = q->qlimit;
        o.match = q->match;
        o.min_dur_ns = q->min_dur_ns;
        o.max_dur_ns = q->max_dur_ns;
        rc = trove_capture_find_json(s, j->name, &o, &j->body, &fig, diag);
        break;
    }
    case TROVE__R_FLOWS: {
        struct trove_flows rows = {0};
        struct trove__flows_query fq = {j->name, q->from_ns, q->to_ns,
                                        q->ntracks ? q->tracks : NULL, q->ntracks, q->qlimit};
        rc = trove__flows_cached(&j->srv->flows, s, j->name, &rows, diag);
        if (rc == TROVE_OK)
            rc = trove__flows_json(rows.f, rows.len, &fq, &j->body);
        trove_flows_free(&rows);
        break;
    }
    case TROVE__R_DIFF: {
        struct trove_diff_side a, b;
        struct trove_diff_options o = {0};
        const char *glob = q->event;
        o.alpha = q->alpha;
        o.min_count = q->min_count;
        o.globs = q->has_event ? &glob : NULL;
        o.nglobs = q->has_event ? 1 : 0;
        o.limit = q->qlimit;
        rc = trove_diff_side_read(s, j->name, q->a_from_ns, q->a_to_ns, q->by_thread, q->method, &a, diag);
        if (rc == TROVE_OK)
            rc = trove_diff_side_read(s, q->name_b, q->b_from_ns, q->b_to_ns, q->by_thread, q->method, &b,
                                      diag);
        else
            memset(&b, 0, sizeof b);
        if (rc == TROVE_OK)
            rc = trove_diff_json(&a, &b, &o, &j->body);
        trove_diff_side_free(&a);
        trove_diff_side_free(&b);
        break;
    }
    case TROVE__R_ATTRS: {
        struct trove_attrs at = {0};
        rc = trove_capture_read_attrs_range(s, j->name, q->index, q->index + 1, &at, diag);
        if (rc == TROVE_OK) {
            char head[64];
            int n = snprintf(head, sizeof head, "{\"event\":%" PRIu64 ",\"attrs\":", q->index);
            rc = trove_bytes_append(&j->body, head, (size_t)n);
        }
        rc = rc ? rc : trove_attrs_json(&at, 0, at.n, &j->body);
        rc = rc ? rc : trove_bytes_append(&j->body, "}", 1);
        trove_attrs_free(&at);
        break;
    }
    case TROVE__R_FRAMES:
        rc = trove_capture_frames_json(s, j->name, q->from_ns, to, q->qlimit, &j->body, &fig, diag);
        break;
    default: { /* names: the names frames a replay starts with */
        struct trove_names *names = NULL;
        j->type = "application/octet-stream";
        if ((rc = trove_names_new(&names)) == TROVE_OK &&
            (rc = trove_capture_read_names(s, j->name, names, diag)) == TROVE_OK)
            rc = trove_wire_encode_names(names, 0, trove_names_count(names), &j->body);
        trove_names_free(names);
        break;
    }
    }
    if (rc == TROVE_OK && j->q.route != TROVE__R_NAMES) {
        struct trove_capture_info info;
        if (trove_capture_info(s, j->name, &info, NULL) == TROVE_OK && info.segments > 0 &&
            !(info.flags & TROVE_CAPTURE_FLAG_SUMMARY))
            index_later(j->srv, j->name);
    }
    return rc;
}

static void *query_main(void *arg)
{
    struct trove__profile_job *j = arg;
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int rc;

    rc = trove_store_open(j->srv->opt.store_dir, TROVE_STORE_READONLY, &s, &diag);
    if (rc == TROVE_OK)
        rc = query_run(j, s, &diag);
    if (rc != TROVE_OK) {
        j->status = rc == TROVE_ERR_NOTFOUND ? 404 : rc == TROVE_ERR_INVALID ? 400 : 500;
        snprintf(j->err, sizeof j->err, "%s",
                 rc == TROVE_ERR_NOMEM ? "out of memory"
                 : diag.msg[0]        ? diag.msg
                                      : trove_strerror(rc));
        trove_bytes_free(&j->body);
    }
    trove_store_close(s);
    atomic_store(&j->done, 1);
    trove__wake_web(j->srv); /* joined before the web thread's eventfd is closed */
    return NULL;
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
    for (struct trove__export **p = &w->xorphans; *p;) {
        struct trove__export *x = *p;
        if (all || atomic_load(&x->done)) {
            *p = x->next;
            pthread_join(x->thread, NULL);
            free(x);
            w->exports--;
        } else {
            p = &x->next;
        }
    }
    for (struct trove__job **p = &w->held; *p;) {
        struct trove__job *j = *p;
        if (all || atomic_load(&j->done)) {
            *p = j->held_next;
            trove__job_release(j);
            w->uploads--;
        } else {
            p = &j->held_next;
        }
    }
}

static int profile_begin(struct web *w, struct pss *ps)
{
    struct trove__profile_job *j;
    int query = ps->req.route != TROVE__R_PROFILE;

    trove__api_reap(w, 0);
    if (!query && w->profiles >= PROFILE_JOBS)
        return trove__http_busy(ps, "the service is making other profiles; ask again shortly");
    if (query && w->queries >= QUERY_JOBS)
        return trove__http_busy(ps, "the service is answering other queries; ask again shortly");
    if (!(j = trove__calloc(1, sizeof *j)))
        return trove__http_error(ps, 500, "internal", "out of memory");
    j->srv = w->srv;
    snprintf(j->name, sizeof j->name, "%s", ps->req.name);
    j->from_ns = ps->req.from_ns;
    j->to_ns = ps->req.to_ns;
    j->limit = ps->req.limit;
    j->q = ps->req;
    j->type = "application/json";
    atomic_init(&j->done, 0);
    if (pthread_create(&j->thread, NULL, query ? query_main : profile_main, j) != 0) {
        free(j);
        return trove__http_error(ps, 500, "internal", "no thread for the answer");
    }
    if (query)
        w->queries++;
    else
        w->profiles++;
    ps->pj = j;
    ps->state = TROVE__PS_ANSWER;
    ps->next = w->waiting; /* its thread wakes this one when done */
    w->waiting = ps;
    return 0;
}

static int profile_answer(struct web *w, struct pss *ps)
{
    struct trove__profile_job *j = ps->pj;
    int rc;

    unwait(w, ps);
    ps->pj = NULL;
    if (j->status)
        rc = trove__http_error(ps, (unsigned)j->status, code_of(j->status), j->err);
    else
        rc = trove__http_answer(ps, 200, j->type, j->body.ptr, j->body.len, NULL);
    profile_free(w, j);
    return rc;
}

/* ---- export: a thread writing into a pipe --------------------------------------------------- */

/* The export itself, by the input layer (the bytes `trove export` writes), into the pipe:
 * 0, or 500 with x->err (and a log line) saying why. */
static int run_export(struct trove__server *srv, struct trove__export *x)
{
    struct trove_export_options eo;
    struct trove_export_result res;
    struct trove_diag diag = {0};
    char out[32];
    int rc;

    memset(&eo, 0, sizeof eo);
    snprintf(out, sizeof out, "/dev/fd/%d", x->wfd);
    eo.format = x->format == TROVE_SERVE_PARQUET       ? TROVE_EXPORT_PARQUET
                : x->format == TROVE_SERVE_CHROME_JSON ? TROVE_EXPORT_CHROME_JSON
                : x->format == TROVE_SERVE_PERFETTO    ? TROVE_EXPORT_PERFETTO
                                                       : TROVE_EXPORT_BUNDLE;
    eo.deflate = x->format == TROVE_SERVE_DIR_ZIP; /* the bundle's files, deflated */
    eo.capture = x->name;
    eo.store = srv->opt.store_dir;
    eo.from_ns = x->from_ns;
    eo.to_ns = x->to_ns;
    eo.out = out;
    trove_tables_defaults(&eo.topt);
    rc = trove_export(&eo, &res, &diag);
    if (rc == TROVE_OK)
        return 0;
    snprintf(x->err, sizeof x->err, "the export of %s failed: %s", x->name,
             diag.msg[0] ? diag.msg : trove_strerror(rc));
    trove__log(srv, "capture %s: %s", x->name, x->err);
    return 500;
}

static void *export_main(void *arg)
{
    struct trove__export *x = arg;
    struct trove__server *srv = x->srv;
    sigset_t pipe_sig;

    /* A client gone closes the pipe's read end: the writer then gets EPIPE, never a signal. */
    sigemptyset(&pipe_sig);
    sigaddset(&pipe_sig, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);
    x->status = run_export(srv, x);
    atomic_store(&x->done, 1); /* before the end of the pipe: its end means done */
    close(x->wfd);
    x->wfd = -1;
    return NULL;
}

/* Watch the pipe once (EPOLLONESHOT): it is watched again only when a read finds it empty,
 * so a client that does not keep up leaves it out of the epoll set. */
static void export_watch(struct web *w, struct trove__export *x, int op)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.ptr = x;
    epoll_ctl(w->epfd, op, x->rfd, &ev);
}

/* conn.h's fill: the export's next chunks (HTTP/1.1 chunked framing, ours). */
static int export_fill(struct trove__conn *c)
{
    struct pss *ps = (struct pss *)c;
    struct trove__export *x = ps->x;

    while (c->q_bytes < TROVE__CONN_QUEUE_LOW) {
        uint8_t *buf = trove__malloc(16 + HTTP_CHUNK + 2);
        ssize_t n;
        int head;
        char hex[16];

        if (!buf)
            return -1;
        n = read(x->rfd, buf + 16, HTTP_CHUNK);
        if (n < 0 && errno == EINTR) {
            free(buf);
            continue;
        }
        if (n < 0 && errno == EAGAIN) {
            free(buf);
            export_watch(ps->w, x, EPOLL_CTL_MOD);
            return 0;
        }
        if (n < 0) {
            free(buf);
            return -1;
        }
        if (n == 0) { /* the writer is done: it says so before it closes its end */
            free(buf);
            if (!atomic_load(&x->done)) { /* cannot be; were it, the next wake-up says */
                export_watch(ps->w, x, EPOLL_CTL_MOD);
                return 0;
            }
            if (x->status) {
                trove__log(x->srv, "export of %s failed: %s", x->name, x->err);
                return -1; /* the client sees the body end without its last chunk */
            }
            c->fill = NULL;
            if (trove__conn_put(c, "0\r\n\r\n", 5) != TROVE_OK)
                return -1;
            c->ending = 1;
            return 0;
        }
        head = snprintf(hex, sizeof hex, "%zx\r\n", (size_t)n);
        memcpy(buf + 16 - head, hex, (size_t)head);
        memcpy(buf + 16 + n, "\r\n", 2);
        if (trove__conn_put_own(c, buf, (size_t)(16 - head), (size_t)(head + n + 2)) !=
            TROVE_OK)
            return -1;
    }
    return 0;
}

void trove__api_export_ready(struct web *w, void *xp)
{
    struct trove__export *x = xp;

    (void)w;
    if (x->ps && !x->ps->c.dead)
        trove__conn_pump(&x->ps->c, trove__now_ns());
}

static int export_begin(struct web *w, struct pss *ps)
{
    static const char *const ext[] = {"", "bundle", "parquet", "zip", "json", "pftrace"};
    static const char *const type[] = {"", "application/zip", "application/vnd.apache.parquet",
                                       "application/zip", "application/json",
                                       "application/octet-stream"};
    struct trove_capture_info info;
    struct trove__export *x;
    char msg[TROVE__ERROR_MAX], disp[TROVE_VOLUME_NAME_MAX + 64], head[512];
    size_t n;
    int fds[2], st;

    if ((st = find_capture(w, ps->req.name, &info, msg, sizeof msg)) != 0)
        return trove__http_error(ps, (unsigned)st, code_of(st), msg);
    trove__api_reap(w, 0);
    if (w->exports >= w->max_exports)
        return trove__http_busy(ps, "the service is running as many exports as it runs at once "
                                    "(--max-exports); try again shortly");
    if (!(x = trove__calloc(1, sizeof *x)))
        return trove__http_error(ps, 500, "internal", "out of memory");
    if (pipe2(fds, O_CLOEXEC) != 0) {
        free(x);
        return trove__http_error(ps, 500, "internal", "no pipe for the export");
    }
    fcntl(fds[0], F_SETFL, O_NONBLOCK); /* the web thread never waits on it */
    x->tag = TROVE__EV_PIPE;
    x->srv = w->srv;
    x->w = w;
    x->ps = ps;
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
        return trove__http_error(ps, 500, "internal", "no thread for the export");
    }
    w->exports++;
    ps->x = x;
    ps->state = TROVE__PS_ANSWER;
    snprintf(disp, sizeof disp, "content-disposition: attachment; filename=\"%s.%s\"\r\n",
             x->name, ext[x->format]);
    if (!(n = trove__http_answer_head(head, sizeof head, 200, type[x->format], -1, disp)) ||
        trove__conn_put(&ps->c, head, n) != TROVE_OK) {
        trove__conn_close(&ps->c);
        return -1;
    }
    export_watch(w, x, EPOLL_CTL_ADD);
    ps->c.fill = export_fill;
    return trove__conn_pump(&ps->c, trove__now_ns());
}

/* ---- the end of a connection ---------------------------------------------------------------- */

void trove__api_drop(struct web *w, struct pss *ps)
{
    if (ps->job) {
        unwait(w, ps);
        if (ps->upload && !atomic_load(&ps->job->done)) {
            /* The store thread still has it: it keeps the upload's slot until it is done. */
            ps->job->held_next = w->held;
            w->held = ps->job;
            ps->upload = 0;
        } else {
            trove__job_release(ps->job); /* the store thread finishes it and frees it */
        }
        ps->job = NULL;
    }
    upload_done(w, ps);
    if (ps->pj) { /* its thread ends by itself: joined now if done, else once it is */
        unwait(w, ps);
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
        /* The read end goes: the writer gets EPIPE and ends; joined once done. */
        epoll_ctl(w->epfd, EPOLL_CTL_DEL, x->rfd, NULL);
        close(x->rfd);
        x->rfd = -1;
        x->ps = NULL;
        if (atomic_load(&x->done)) {
            pthread_join(x->thread, NULL);
            free(x);
            w->exports--;
        } else {
            x->next = w->xorphans;
            w->xorphans = x;
        }
        ps->x = NULL;
    }
    if (ps->ifd_open) {
        close(ps->ifd);
        ps->ifd = -1;
        ps->ifd_open = 0;
    }
}

/* ---- routed requests ---------------------------------------------------------------------- */

int trove__api_start(struct web *w, struct pss *ps)
{
    switch (ps->req.route) {
    case TROVE__R_LIST:
        return api_list(w, ps);
    case TROVE__R_INFO:
        return api_info(w, ps);
    case TROVE__R_DELETE:
        return submit(w, ps, TROVE__JOB_DELETE);
    case TROVE__R_EXPORT:
        return export_begin(w, ps);
    case TROVE__R_PROFILE:
    case TROVE__R_TRACKS:
    case TROVE__R_VIEW:
    case TROVE__R_STATS:
    case TROVE__R_EVENTS:
    case TROVE__R_NAMES:
    case TROVE__R_FLOWS:
    case TROVE__R_DIFF:
    case TROVE__R_ATTRS:
    case TROVE__R_FRAMES:
        return profile_begin(w, ps);
    case TROVE__R_IMPORT:
        return import_begin(w, ps);
    case TROVE__R_LOGIN: {
        char cookie[512], auth[300];
        if (!w->token)
            return trove__http_error(ps, 400, "bad_request",
                                     "this service has no token: nothing to log in to");
        snprintf(auth, sizeof auth, "Bearer %s", ps->req.token);
        if (!trove__api_token_ok(w->token, w->token_len, auth, NULL, NULL, NULL))
            return trove__http_error(ps, 401, "unauthorized", "wrong token");
        snprintf(cookie, sizeof cookie,
                 "set-cookie: %s=%s; HttpOnly; SameSite=Strict; Path=/\r\nlocation: /\r\n",
                 w->cookie, ps->req.token);
        return trove__http_answer(ps, 302, "text/plain", "", 0, cookie);
    }
    default:
        return trove__http_error(ps, 404, "not_found", "no such endpoint");
    }
}
