/*
 * ingest.c: the producers' side of `trove serve` (docs/serve.md, "Producers"). One thread
 * polls the unix socket, the TCP ingest port and every producer; it reads each stream,
 * cuts it into the hello and frames (producer.c), attaches the producer to its capture,
 * answers it, and decodes every frame into the producer's pending events, which the pass
 * takes, mapping its names to the capture's (remap.c) as they come.
 *
 * The answer: a producer is read only up to its hello's newline until it is answered. Its
 * capture's state decides the answer — LIVE (the store thread opened the writer): an accept;
 * FAILED: a refuse, and the connection closes — and each round of the poll loop looks at
 * the states of the producers still waiting, so the answer goes out within a round of the
 * store thread's open. A producer closed later gets an error line first. Lines are written
 * without waiting (a non-blocking socket that has only ever been given these few short
 * lines takes them whole), so a producer that never reads them is not slowed; they sit in
 * its socket's buffer.
 *
 * Bounds: a producer whose pending events reach TROVE__PENDING_MAX_EVENTS is not read until
 * the pass has taken them (the producer then waits in its own write, and nothing is
 * dropped); a producer's names frames may bring at most TROVE__PRODUCER_NAMES_MAX, and a
 * capture's names may not grow past what its names parts hold (TROVE__CAPTURE_NAMES_MAX):
 * the names frame that would pass either closes its producer, as a bad frame does.
 */
#define _GNU_SOURCE /* accept4 */

#include "api.h"
#include "live.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/sockios.h>
#include <unistd.h>

#define READ_CHUNK ((size_t)256 << 10)
/* Stopping: how long producers whose capture is still opening are waited for. */
#define STOP_OPEN_WAIT_NS (10 * 1000000000ull)

int trove__ingest_open(struct trove__server *srv, struct trove_diag *diag)
{
    struct sockaddr_un sun;
    int fd;

    const char *env = getenv("TROVE_SOCKET");

    if (srv->opt.socket_path && *srv->opt.socket_path)
        snprintf(srv->socket_path, sizeof srv->socket_path, "%s", srv->opt.socket_path);
    else if (!strncmp(srv->opt.store_dir, "s3://", 5)) /* no directory: $TROVE_SOCKET, or here */
        snprintf(srv->socket_path, sizeof srv->socket_path, "%s",
                 env && *env ? env : TROVE_SERVE_SOCKET_NAME);
    else
        snprintf(srv->socket_path, sizeof srv->socket_path, "%s/%s", srv->opt.store_dir,
                 TROVE_SERVE_SOCKET_NAME);
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    if (strlen(srv->socket_path) >= sizeof sun.sun_path)
        return TROVE_FAIL(diag, -ENAMETOOLONG, 0,
                          "serve: the socket path %s is over %zu bytes; give a shorter one "
                          "with --socket",
                          srv->socket_path, sizeof sun.sun_path - 1);
    memcpy(sun.sun_path, srv->socket_path, strlen(srv->socket_path));
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
        return TROVE_FAIL(diag, -errno, 0, "serve: a unix socket: %s", strerror(errno));
    /* The store's writer lock is ours, so a socket file left here is a dead service's. */
    unlink(srv->socket_path);
    if (bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0 || chmod(srv->socket_path, 0600) != 0 ||
        listen(fd, 64) != 0) {
        int e = errno;
        close(fd);
        return TROVE_FAIL(diag, -e, 0, "serve: listening on %s: %s", srv->socket_path,
                          strerror(e));
    }
    srv->listen_fds[0] = fd;
    if (srv->opt.ingest && *srv->opt.ingest) {
        struct sockaddr_storage ss;
        socklen_t len;
        if (trove__parse_addr(srv->opt.ingest, &ss, &len) != TROVE_OK)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                              "serve: --ingest %s is not ADDR:PORT", srv->opt.ingest);
        if (!srv->opt.token_file && !trove__addr_loopback(&ss))
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                              "serve: --ingest %s is not a loopback address: give --token-file "
                              "FILE, whose token every producer's hello must then carry",
                              srv->opt.ingest);
        if ((fd = trove__listen_tcp(&ss, len, 64)) < 0)
            return TROVE_FAIL(diag, fd, 0, "serve: listening on %s for producers: %s",
                              srv->opt.ingest, strerror(-fd));
        trove__addr_format(&ss, srv->ingest_addr, sizeof srv->ingest_addr);
        srv->listen_fds[1] = fd;
    }
    return TROVE_OK;
}

static unsigned max_producers(const struct trove__server *srv)
{
    return srv->opt.max_producers ? srv->opt.max_producers : TROVE__PRODUCERS_DEFAULT;
}

/* Producers whose socket is open. */
static unsigned open_producers(struct trove__server *srv)
{
    unsigned n = 0;

    pthread_mutex_lock(&srv->mu);
    for (struct trove__prod *p = srv->prods; p; p = p->next)
        n += p->fd >= 0;
    pthread_mutex_unlock(&srv->mu);
    return n;
}

static int on_header(void *ctx, const struct trove_wire_header *h);

static void accept_one(struct trove__server *srv, int lfd, int tcp)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    struct trove__prod *p;
    int fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);

    if (fd < 0)
        return;
    if (open_producers(srv) >= max_producers(srv)) {
        /* The descriptors kept for producers are taken (web.c's reserve): refused. */
        static const char why[] = "{\"type\":\"refuse\",\"reason\":\"the service has as many "
                                  "producers as it takes (--max-producers)\"}\n";
        if (send(fd, why, sizeof why - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
            ; /* best effort */
        }
        close(fd);
        pthread_mutex_lock(&srv->mu);
        srv->producers_refused++;
        pthread_mutex_unlock(&srv->mu);
        trove__log(srv, "a producer refused: %u producers are connected (--max-producers)",
                   max_producers(srv));
        return;
    }
    if (!(p = trove__calloc(1, sizeof *p))) {
        close(fd);
        return;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->fd = fd;
    p->tcp = tcp;
    trove__framer_init(&p->fr);
    p->fr.header = on_header;
    if (!tcp) {
        snprintf(p->peer, sizeof p->peer, "unix");
    } else {
        char host[INET6_ADDRSTRLEN] = "?";
        unsigned port = 0;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
            port = ntohs(a->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
            port = ntohs(a->sin6_port);
        }
        snprintf(p->peer, sizeof p->peer, "%s:%u", host, port);
    }
    pthread_mutex_lock(&srv->mu);
    p->id = ++srv->next_id;
    srv->producers_total++;
    p->next = srv->prods;
    srv->prods = p;
    pthread_mutex_unlock(&srv->mu);
}

/* Write line[0..len) to p, without waiting. */
static void tell(struct trove__prod *p, const char *line, size_t len)
{
    if (p->fd >= 0 && send(p->fd, line, len, MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
        p->told = 1;
}

/* A refuse (p was not accepted) or an error line saying why. */
static void tell_why(struct trove__prod *p, const char *why)
{
    char line[TROVE_SERVE_ANSWER_MAX];
    tell(p, line,
         trove__answer_reason(line, p->answered ? TROVE_SERVE_ERROR : TROVE_SERVE_REFUSE, why));
}

/* Close p's socket: it sends no more. The pass takes what it sent and frees it (or this
 * thread does, for a producer that never got to a capture). A close for an error (rc)
 * tells p why first, logs it and counts it. */
static void prod_close(struct trove__server *srv, struct trove__prod *p, int rc, const char *why)
{
    if (p->fd < 0)
        return;
    if (rc != TROVE_OK)
        tell_why(p, why);
    if (p->cap) { /* before the close: a producer that saw it finds the session over */
        pthread_mutex_lock(&p->cap->mu);
        p->cap->senders--;
        pthread_mutex_unlock(&p->cap->mu);
    }
    if (rc != TROVE_OK && srv->nlinger < TROVE__LINGER_PRODUCERS) {
        /* What it sent after the line that says why is still unread: a close now would
         * reset the connection, and the line with it. Shut our side and drop the rest. */
        shutdown(p->fd, SHUT_WR);
        srv->linger_fd[srv->nlinger] = p->fd;
        srv->linger_until[srv->nlinger++] = trove__now_ns() + TROVE__LINGER_PRODUCER_NS;
    } else {
        close(p->fd);
    }
    p->fd = -1;
    if (rc != TROVE_OK) { /* told before it is marked closed: the pass may free it then */
        pthread_mutex_lock(&srv->mu);
        srv->producers_refused++;
        pthread_mutex_unlock(&srv->mu);
        trove__log(srv, "producer %" PRIu64 " (%s%s%s) closed: %s", p->id, p->peer,
                   p->cap ? ", capture " : "", p->cap ? p->cap->name : "", why);
    }
    pthread_mutex_lock(&p->mu);
    if (rc != TROVE_OK) {
        p->errors++;
        snprintf(p->error, sizeof p->error, "%.250s", why);
    }
    p->closed = 1; /* from here on p is the pass's: this thread does not touch it again */
    pthread_mutex_unlock(&p->mu);
}

struct feed_ctx {
    struct trove__server *srv;
    struct trove__prod *p;
    struct trove_wire_decoder *dec;
    struct trove_event *ev;
    struct trove_names *names;
    struct trove_diag diag;
};

static int on_hello(void *ctx, const uint8_t *line, size_t len)
{
    struct feed_ctx *f = ctx;
    struct trove__cap *c;
    int opener = 0, rc = trove__hello_parse(line, len, &f->p->hello, &f->diag);

    if (rc != TROVE_OK)
        return rc;
    if (f->p->tcp && f->srv->token) { /* over TCP the hello carries the service's token */
        char auth[TROVE__TOKEN_MAX + 8];
        snprintf(auth, sizeof auth, "Bearer %s", f->p->hello.token);
        if (!trove__api_token_ok(f->srv->token, f->srv->token_len, auth, NULL, NULL, NULL))
            return TROVE_FAIL(&f->diag, TROVE_ERR_INVALID, 0,
                              "the hello has no token, or a wrong one (over TCP it must "
                              "carry the service's: \"token\":\"...\")");
    }
    if (f->p->hello.clock_tsc)
        trove__clock_init(&f->p->clock, &f->p->hello);
    if (!(c = trove__cap_join_producer(f->srv, f->p->hello.capture, f->p->hello.append,
                                       &opener)))
        return TROVE_FAIL(&f->diag, TROVE_ERR_NOMEM, 0, "out of memory");
    pthread_mutex_lock(&f->srv->mu);
    f->p->cap = c;
    f->p->got_hello = 1;
    f->p->opener = opener;
    if (opener) /* the store thread opens it: now rather than at its next round */
        pthread_cond_signal(&f->srv->store_cv);
    pthread_mutex_unlock(&f->srv->mu);
    return TROVE_OK;
}

/* p's capture is live: accept it (mode, session and events as the capture says). */
static void accept_prod(struct trove__server *srv, struct trove__prod *p, int mode,
                        uint64_t session, uint64_t events)
{
    char line[TROVE_SERVE_ANSWER_MAX];

    tell(p, line, trove__answer_accept(line, p->cap->name, session, mode, events));
    p->answered = 1;
    pthread_mutex_lock(&p->mu);
    p->mode = mode;
    pthread_mutex_unlock(&p->mu);
    trove__log(srv,
               "producer %" PRIu64 " (%s, pid %" PRIu32 "%s%s%s) writes capture %s: session %" PRIu64
               ", %s, %" PRIu64 " events",
               p->id, p->peer, p->hello.pid, p->hello.producer[0] ? ", " : "", p->hello.producer,
               p->hello.clock_tsc ? ", TSC clock" : "", p->cap->name, session,
               trove_serve_mode_name(mode), events);
}

/* What a names frame of `count` entries in `payload` bytes counts against the producer's
 * bound. */
static uint64_t names_cost(uint64_t count, uint64_t payload)
{
    return payload + count * TROVE__NAME_ENTRY_COST;
}

/* A frame's header, before its payload is buffered: a names frame that would take the
 * producer past its names bound is refused here. */
static int on_header(void *ctx, const struct trove_wire_header *h)
{
    struct feed_ctx *f = ctx;
    struct trove__prod *p = f->p;

    if (h->format != TROVE_WIRE_NAMES)
        return TROVE_OK;
    if (p->names_in + h->count > TROVE__PRODUCER_NAMES_COUNT)
        return TROVE_FAIL(&f->diag, TROVE_ERR_LIMIT, 0,
                          "names bound: this producer sent %" PRIu64 " names (%" PRIu64
                          " bytes as counted), and a names frame of %" PRIu32
                          " more would pass the %" PRIu64 " names a producer may send",
                          p->names_in, p->names_cost, h->count, TROVE__PRODUCER_NAMES_COUNT);
    if (p->names_cost + names_cost(h->count, h->payload_len) > TROVE__PRODUCER_NAMES_MAX)
        return TROVE_FAIL(&f->diag, TROVE_ERR_LIMIT, 0,
                          "names bound: this producer sent %" PRIu64 " names (%" PRIu64
                          " bytes as counted), and a names frame of %" PRIu32
                          " more would pass the %" PRIu64 " bytes of names a producer may send "
                          "(its names frames' bytes, each name counted %u bytes more)",
                          p->names_in, p->names_cost, h->count, TROVE__PRODUCER_NAMES_MAX,
                          TROVE__NAME_ENTRY_COST);
    return TROVE_OK;
}

/* A fallback producer's names frame (its hello said "names":"fallback"), *names replaced by
 * its entries less the thread and process names the capture already has (under c->mu). */
static int keep_unnamed(const struct trove__capture_names *cn, struct trove_names **names)
{
    const struct trove_names *all = trove__capture_names_all(cn);
    struct trove_names *kept = NULL;
    size_t n = trove_names_count(*names);
    int rc;

    if ((rc = trove_names_new(&kept)) != TROVE_OK)
        return rc;
    for (size_t k = 0; k < n; k++) {
        struct trove_name_entry e;
        trove_names_entry(*names, k, &e);
        if ((e.type == TROVE_NAME_THREAD || e.type == TROVE_NAME_PROCESS) &&
            trove_names_get(all, e.type, e.a, e.b, NULL))
            continue; /* named by a producer that knows better */
        if ((rc = trove_names_put(kept, &e)) != TROVE_OK) {
            trove_names_free(kept);
            return rc;
        }
    }
    trove_names_free(*names);
    *names = kept;
    return TROVE_OK;
}

/* A names frame (within the producer's bound: on_header): its names mapped to the capture's,
 * unless they would take the capture's names past what it can commit (counted before
 * anything changes: such a frame changes nothing). */
static int on_names(struct feed_ctx *f, const uint8_t *frame, size_t len)
{
    struct trove__prod *p = f->p;
    struct trove__cap *c = p->cap;
    struct trove_wire_frame fr;
    uint64_t count = trove__get_le32(frame + 4), would = 0;
    int rc;

    trove_names_free(f->names); /* a fresh table for its entries */
    f->names = NULL;
    if (trove_names_new(&f->names) != TROVE_OK ||
        (!p->pn && trove__producer_names_new(&p->pn) != TROVE_OK))
        return TROVE_FAIL(&f->diag, TROVE_ERR_NOMEM, 0, "out of memory");
    if ((rc = trove_wire_decode(f->dec, frame, len, f->ev, TROVE_WIRE_MAX_EVENTS, f->names, &fr,
                                &f->diag)) != TROVE_OK)
        return rc;
    pthread_mutex_lock(&c->mu);
    rc = p->hello.names_fallback ? keep_unnamed(c->cn, &f->names) : TROVE_OK;
    if (rc == TROVE_OK)
        rc = trove__remap_names_max(c->cn, p->pn, f->names, c->added, TROVE__CAPTURE_NAMES_MAX,
                                    &would);
    pthread_mutex_unlock(&c->mu);
    if (rc == TROVE_ERR_LIMIT && would > TROVE__CAPTURE_NAMES_MAX)
        return TROVE_FAIL(&f->diag, rc, 0,
                          "capture names bound: with this names frame (%" PRIu64
                          " names) capture %s's names would take %" PRIu64
                          " bytes, over the %" PRIu64 " its names object holds; this producer "
                          "sent %" PRIu64 " names before it",
                          count, c->name, would, TROVE__CAPTURE_NAMES_MAX, p->names_in);
    if (rc != TROVE_OK)
        return TROVE_FAIL(&f->diag, rc, 0, "mapping its names to capture %s's: %s", c->name,
                          rc == TROVE_ERR_LIMIT ? "the capture's name ids ran out"
                                                : trove_strerror(rc));
    p->names_cost += names_cost(count, len - TROVE_WIRE_HEADER_SIZE);
    p->names_in += count; /* as on_header counts them */
    trove_names_free(f->names); /* the capture has them now: not kept for the next frame */
    f->names = NULL;
    pthread_mutex_lock(&p->mu);
    p->frames_in++;
    pthread_mutex_unlock(&p->mu);
    return TROVE_OK;
}

/* A samples frame: checked against the producer's profile so far (whose samples are
 * then dropped: only its frames and stacks are kept, to check the next), and queued for the
 * pass as it came. A capture takes samples from one producer, and not after an append. */
static int on_samples(struct feed_ctx *f, const uint8_t *frame, size_t len)
{
    struct trove__prod *p = f->p;
    struct trove__cap *c = p->cap;
    struct trove_profile_counts before, after;
    uint64_t owner;
    int rc, append;

    pthread_mutex_lock(&c->mu);
    if (!c->profile_owner && !c->append)
        c->profile_owner = p->id;
    owner = c->profile_owner;
    append = c->append;
    pthread_mutex_unlock(&c->mu);
    if (append)
        return TROVE_FAIL(&f->diag, TROVE_ERR_INVALID, 0,
                          "capture %s was continued (append): it takes no samples frames",
                          c->name);
    if (owner == TROVE__PROFILE_STOPPED)
        return TROVE_FAIL(&f->diag, TROVE_ERR_NOMEM, 0,
                          "capture %s lost samples frames (the service ran out of memory) and "
                          "takes no more",
                          c->name);
    if (owner != p->id)
        return TROVE_FAIL(&f->diag, TROVE_ERR_INVALID, 0,
                          "capture %s takes samples from one producer (producer %" PRIu64
                          "); this one's samples frames are refused",
                          c->name, owner);
    if (!p->prof && (rc = trove_profile_new(&p->prof)) != TROVE_OK)
        return TROVE_FAIL(&f->diag, rc, 0, "out of memory");
    trove_profile_get_counts(p->prof, &before);
    if ((rc = trove_profile_decode(p->prof, frame, len, NULL, &f->diag)) != TROVE_OK)
        return rc;
    trove_profile_get_counts(p->prof, &after);
    trove_profile_clear_samples(p->prof);
    pthread_mutex_lock(&p->mu);
    p->frames_in++;
    p->last_wire = TROVE_WIRE_SAMPLES;
    rc = trove_bytes_append(&p->pending_samples, frame, len);
    if (rc == TROVE_OK) {
        p->pending_nsamples += after.samples - before.samples;
        p->pending_nswitches += after.switches - before.switches;
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* An attrs frame: its rows held for the events frame that comes next. */
static int on_attrs(struct feed_ctx *f, const uint8_t *frame, size_t len)
{
    struct trove__prod *p = f->p;
    int rc;

    if (p->has_held)
        return TROVE_FAIL(&f->diag, TROVE_ERR_CORRUPT, 0,
                          "an attrs frame after an attrs frame: each one comes before the "
                          "events frame its rows are of");
    if ((rc = trove_attrs_wire_decode(frame, len, &p->held, &f->diag)) != TROVE_OK)
        return rc;
    p->has_held = 1;
    pthread_mutex_lock(&p->mu);
    p->frames_in++;
    pthread_mutex_unlock(&p->mu);
    return TROVE_OK;
}

static int on_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct feed_ctx *f = ctx;
    struct trove__prod *p = f->p;
    struct trove_wire_frame fr;
    int rc;

    /* the framer checked the header: its 16 bytes are there */
    if (frame[2] == TROVE_WIRE_SAMPLES)
        return on_samples(f, frame, len);
    if (frame[2] == TROVE_WIRE_NAMES)
        return on_names(f, frame, len);
    if (frame[2] == TROVE_WIRE_ATTRS)
        return on_attrs(f, frame, len);
    rc = trove_wire_decode(f->dec, frame, len, f->ev, TROVE_WIRE_MAX_EVENTS, NULL, &fr, &f->diag);
    if (rc != TROVE_OK)
        return rc;
    if (p->has_held && p->held.n && p->held.rows[p->held.n - 1].event >= fr.n_events)
        return TROVE_FAIL(&f->diag, TROVE_ERR_CORRUPT, 0,
                          "an attrs frame names event %" PRIu64 " of an events frame of %zu",
                          p->held.rows[p->held.n - 1].event, fr.n_events);
    if (p->hello.clock_tsc && fr.n_events > 0) /* ticks to the capture's nanoseconds */
        trove__clock_apply(&p->clock, f->ev, fr.n_events);
    if (fr.n_events > 0 && ((!p->pn && (rc = trove__producer_names_new(&p->pn)) != TROVE_OK) ||
                            (rc = trove__remap_events(p->cap->cn, p->pn, f->ev, fr.n_events)) !=
                                TROVE_OK))
        return TROVE_FAIL(&f->diag, rc, 0, "mapping its events' names to capture %s's: %s",
                          p->cap->name,
                          rc == TROVE_ERR_LIMIT ? "the capture's name ids ran out"
                                                : trove_strerror(rc));
    pthread_mutex_lock(&p->mu);
    p->frames_in++;
    p->last_wire = fr.format;
    if (fr.n_events > 0) {
        if (p->npending + fr.n_events > p->cap_pending) {
            size_t cap = p->cap_pending ? p->cap_pending : 8192;
            struct trove_event *q;
            while (cap < p->npending + fr.n_events)
                cap *= 2;
            if (!(q = trove__realloc(p->pending, cap * sizeof *q)))
                rc = TROVE_ERR_NOMEM;
            else {
                p->pending = q;
                p->cap_pending = cap;
            }
        }
        if (rc == TROVE_OK && p->has_held && p->held.n)
            rc = trove_attrs_append(&p->pending_attrs, &p->held, 0, p->held.n, p->npending, 0);
        if (rc == TROVE_OK) {
            memcpy(p->pending + p->npending, f->ev, fr.n_events * sizeof *f->ev);
            p->npending += fr.n_events;
        } else {
            p->events_dropped += fr.n_events; /* received, and nowhere to keep them */
        }
        p->events_in += fr.n_events;
    }
    pthread_mutex_unlock(&p->mu);
    if (p->has_held) { /* the rows are the pending table's now (or lost with the events) */
        trove_attrs_free(&p->held);
        p->has_held = 0;
    }
    return rc;
}

/* Before the hello: read only up to its newline (the frames after it wait for the answer).
 * As read(2). */
static ssize_t read_hello(int fd, uint8_t *buf, size_t max)
{
    ssize_t r = recv(fd, buf, max < TROVE__HELLO_MAX ? max : TROVE__HELLO_MAX, MSG_PEEK);
    const uint8_t *nl;

    if (r <= 0)
        return r;
    nl = memchr(buf, '\n', (size_t)r);
    return read(fd, buf, nl ? (size_t)(nl - buf) + 1 : (size_t)r);
}

/* Read what p has; close it at the end of its stream or on bad input. 1 if it closed p
 * (which is then the pass's: the caller must not touch it again), else 0. */
static int read_one(struct trove__server *srv, struct trove__prod *p, struct feed_ctx *f,
                    uint8_t *buf, size_t max)
{
    ssize_t r = p->got_hello ? read(p->fd, buf, max < READ_CHUNK ? max : READ_CHUNK)
                             : read_hello(p->fd, buf, max);
    int rc;

    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    /* A producer that closes with a line of ours unread resets the connection (TCP always;
     * a unix socket after the stream's last bytes): at a frame's end, that is its end. */
    if (r < 0 && errno == ECONNRESET && p->told)
        r = 0;
    if (r <= 0) {
        if (r == 0 && trove__framer_pending(&p->fr) == 0)
            prod_close(srv, p, TROVE_OK, "");
        else if (r == 0 && !p->got_hello)
            prod_close(srv, p, TROVE_ERR_TRUNCATED, "the stream ended inside the hello line");
        else if (r == 0)
            prod_close(srv, p, TROVE_ERR_TRUNCATED,
                       "the stream ended inside a frame (its last bytes are dropped)");
        else
            prod_close(srv, p, -errno, strerror(errno));
        return 1;
    }
    pthread_mutex_lock(&p->mu);
    p->bytes_in += (uint64_t)r;
    pthread_mutex_unlock(&p->mu);
    f->p = p;
    memset(&f->diag, 0, sizeof f->diag);
    rc = trove__framer_feed(&p->fr, buf, (size_t)r, on_hello, on_frame, f, &f->diag);
    if (rc != TROVE_OK) {
        char why[TROVE__ERROR_MAX];
        snprintf(why, sizeof why, "%s", f->diag.msg[0] ? f->diag.msg : trove_strerror(rc));
        prod_close(srv, p, rc, why);
        return 1;
    }
    return 0;
}

/* Producers that closed before naming a capture are this thread's to free. */
static void reap(struct trove__server *srv)
{
    pthread_mutex_lock(&srv->mu);
    for (struct trove__prod **pp = &srv->prods; *pp;) {
        struct trove__prod *p = *pp;
        if (p->fd < 0 && !p->cap) {
            *pp = p->next;
            trove__prod_free(p);
        } else {
            pp = &p->next;
        }
    }
    pthread_mutex_unlock(&srv->mu);
}

/* What a round does with a producer. */
enum { ACT_READ = 0, ACT_WAIT, ACT_ACCEPT, ACT_FAILED };

struct watch {
    struct trove__prod *p;
    int act, mode;
    uint64_t session, events;
};

/* What to do with p now, from its capture's state (under srv->mu; takes the capture's). */
static void look(struct trove__prod *p, struct watch *w)
{
    struct trove__cap *c = p->cap;

    w->p = p;
    w->act = ACT_READ;
    if (!c)
        return; /* its hello is still coming */
    pthread_mutex_lock(&c->mu);
    if (c->state == TROVE__CAP_FAILED) {
        w->act = ACT_FAILED;
    } else if (!p->answered && (c->state == TROVE__CAP_WAITING || c->state == TROVE__CAP_OPENING)) {
        w->act = ACT_WAIT;
    } else if (!p->answered) { /* live: its one opener gets how the session started */
        w->act = ACT_ACCEPT;
        w->mode = p->opener ? c->mode : TROVE_SERVE_JOIN;
        w->session = c->session;
        w->events = !p->opener                    ? c->published
                    : c->mode == TROVE_SERVE_REPLACE ? c->replaced
                                                     : c->base;
    }
    pthread_mutex_unlock(&c->mu);
}

/* The table lists the newest producer first; a round answers and reads them in the order
 * they came, so that of producers answered together (a capture that took a while to open)
 * the first to connect is read first ("the first that sends" samples frames is that one). */
static void oldest_first(struct watch *w, size_t n)
{
    for (size_t i = 0; i < n / 2; i++) {
        struct watch t = w[i];
        w[i] = w[n - 1 - i];
        w[n - 1 - i] = t;
    }
}

/* Act on what look() found: 1 if p was closed (it is then the pass's), else 0. */
static int act(struct trove__server *srv, const struct watch *w)
{
    struct trove__prod *p = w->p;

    if (w->act == ACT_ACCEPT) {
        accept_prod(srv, p, w->mode, w->session, w->events);
    } else if (w->act == ACT_FAILED) {
        char why[TROVE__ERROR_MAX + 160];
        pthread_mutex_lock(&p->cap->mu);
        if (p->answered)
            snprintf(why, sizeof why, "capture %s could not be written: %s", p->cap->name,
                     p->cap->error);
        else /* the refusal of a capture that could not be opened: the open's reason */
            snprintf(why, sizeof why, "%s", p->cap->error);
        pthread_mutex_unlock(&p->cap->mu);
        prod_close(srv, p, TROVE_ERR_INVALID, why);
        return 1;
    }
    return 0;
}

/* p is closed because the service stops: told so (the line says "stopping":true, so that
 * the producer tells a stop from an error), and its capture's session marked as cut by the
 * stop, so that its viewers are closed with 1001 rather than told it ended. */
static void stop_close(struct trove__server *srv, struct trove__prod *p, const char *why)
{
    char line[TROVE_SERVE_ANSWER_MAX];

    if (p->cap) {
        pthread_mutex_lock(&p->cap->mu);
        p->cap->stopped = 1;
        pthread_mutex_unlock(&p->cap->mu);
    }
    tell(p, line,
         trove__answer_stopping(line, p->answered ? TROVE_SERVE_ERROR : TROVE_SERVE_REFUSE, why));
    if (!p->answered) { /* never taken: counted and logged as a refusal */
        pthread_mutex_lock(&srv->mu);
        srv->producers_refused++;
        pthread_mutex_unlock(&srv->mu);
        trove__log(srv, "producer %" PRIu64 " (%s%s%s) closed: %s", p->id, p->peer,
                   p->cap ? ", capture " : "", p->cap ? p->cap->name : "", why);
    }
    prod_close(srv, p, TROVE_OK, "");
}

/* The bytes p's socket holds now (SIOCINQ); what a read of them all would bring at most. */
static size_t queued_bytes(const struct trove__prod *p)
{
    int n = 0;

    if (ioctl(p->fd, SIOCINQ, &n) != 0 || n < 0)
        return 0;
    return (size_t)n;
}

/* Read p until *budget bytes are taken (what its socket held when the stop came: taken off
 * *budget as read), its stream ends, or it has no more now; 1 if that closed p. A hello
 * taken ends the read (its answer comes first). */
static int drain_one(struct trove__server *srv, struct trove__prod *p, struct feed_ctx *f,
                     uint8_t *buf, size_t *budget)
{
    int hello = p->got_hello;

    while (buf && *budget > 0) {
        struct pollfd one = {p->fd, POLLIN, 0};
        uint64_t before, got;
        if (poll(&one, 1, 0) <= 0 || !(one.revents & (POLLIN | POLLHUP | POLLERR)))
            return 0;
        pthread_mutex_lock(&p->mu);
        before = p->bytes_in;
        pthread_mutex_unlock(&p->mu);
        if (read_one(srv, p, f, buf, *budget) != 0)
            return 1;
        pthread_mutex_lock(&p->mu);
        got = p->bytes_in - before;
        pthread_mutex_unlock(&p->mu);
        *budget -= got < *budget ? (size_t)got : *budget;
        if (!hello && p->got_hello)
            return 0;
    }
    if (buf && *budget == 0 && p->got_hello) { /* all it held is read: is its end next? */
        char c;
        if (recv(p->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
            return read_one(srv, p, f, buf, 1); /* the end: closed as at any other time */
    }
    return 0;
}

/* What the drain may still read of producer id (budgets made at its start), or, for one it
 * has no budget for (no memory for them), what its socket holds now. */
static size_t *budget_of(uint64_t id, const uint64_t *ids, size_t *budgets, size_t n,
                         size_t *spare, const struct trove__prod *p)
{
    for (size_t k = 0; k < n; k++)
        if (ids[k] == id)
            return &budgets[k];
    *spare = queued_bytes(p);
    return spare;
}

/* Stopping: what producers sent before the stop — what their sockets hold when the drain
 * starts — is read, then they are closed; the pass takes it all and the store commits. A
 * producer that goes on writing is not read past that, so the drain ends however fast it
 * writes. A producer whose capture is still opening is waited for (up to
 * STOP_OPEN_WAIT_NS), so that it is answered and read too. Each is told the service stops.
 * Out of memory for a round's list, the round takes one producer alone instead: every one is
 * closed whatever fails, or the pass (which waits for them all) would never end. */
static void stop_producers(struct trove__server *srv, struct feed_ctx *f, uint8_t *buf)
{
    uint64_t deadline = trove__now_ns() + STOP_OPEN_WAIT_NS, *ids = NULL;
    size_t *budgets = NULL, nbudget = 0;

    pthread_mutex_lock(&srv->mu);
    for (struct trove__prod *p = srv->prods; p; p = p->next)
        nbudget++;
    pthread_mutex_unlock(&srv->mu);
    budgets = trove__mallocarray(nbudget + 1, sizeof *budgets);
    ids = trove__mallocarray(nbudget + 1, sizeof *ids);
    nbudget = 0;
    if (budgets && ids) { /* no producer joins now: the listeners are not polled */
        pthread_mutex_lock(&srv->mu);
        for (struct trove__prod *p = srv->prods; p; p = p->next)
            if (p->fd >= 0) {
                ids[nbudget] = p->id;
                budgets[nbudget++] = queued_bytes(p);
            }
        pthread_mutex_unlock(&srv->mu);
    }
    for (;;) {
        struct watch *open, single;
        size_t nopen = 0, np = 0, waiting = 0;
        int late = !buf || trove__now_ns() > deadline, whole;
        pthread_mutex_lock(&srv->mu);
        for (struct trove__prod *p = srv->prods; p; p = p->next)
            np++;
        open = trove__mallocarray(np + 1, sizeof *open);
        whole = open != NULL;
        if (whole) {
            for (struct trove__prod *p = srv->prods; p; p = p->next)
                if (p->fd >= 0)
                    look(p, &open[nopen++]);
        } else { /* out of memory: one alone, the first that needs no waiting if any */
            struct trove__prod *pick = NULL;
            for (struct trove__prod *p = srv->prods; p; p = p->next)
                if (p->fd >= 0 && (!pick || late || p->answered))
                    pick = p;
            if (pick) {
                look(pick, &single);
                open = &single;
                nopen = 1;
            }
        }
        pthread_mutex_unlock(&srv->mu);
        oldest_first(open, nopen);
        for (size_t i = 0; i < nopen; i++) {
            struct trove__prod *p = open[i].p;
            size_t spare = 0, *budget;
            int hello = p->got_hello;
            if (open[i].act == ACT_WAIT && !late) {
                waiting++;
                continue;
            }
            if (open[i].act == ACT_WAIT) {
                char why[TROVE__ERROR_MAX];
                snprintf(why, sizeof why,
                         "the service stopped before capture %s was open: nothing this "
                         "producer sent was taken",
                         p->cap->name);
                stop_close(srv, p, why);
                continue;
            }
            if (act(srv, &open[i]))
                continue;
            budget = budget_of(p->id, ids, budgets, nbudget, &spare, p);
            if (drain_one(srv, p, f, buf, budget))
                continue;
            if (!hello && p->got_hello && *budget > 0) {
                waiting++; /* its hello came now: answered next round, then read */
                continue;
            }
            stop_close(srv, p, p->answered ? "the service is stopping: what this producer "
                                             "sent until now is kept, and nothing after"
                                           : "the service is stopping");
        }
        if (whole)
            free(open);
        if (whole ? !waiting : nopen == 0)
            break;
        if (waiting) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    free(budgets);
    free(ids);
}

/* Read and drop what refused producers still send; close each at its end or its time (all:
 * every one, now). */
static void linger(struct trove__server *srv, int all)
{
    uint64_t now = trove__now_ns();

    for (size_t i = 0; i < srv->nlinger;) {
        char sink[4096];
        ssize_t r;
        while ((r = recv(srv->linger_fd[i], sink, sizeof sink, MSG_DONTWAIT)) > 0)
            ;
        if (all || r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) ||
            now >= srv->linger_until[i]) {
            close(srv->linger_fd[i]);
            srv->linger_fd[i] = srv->linger_fd[--srv->nlinger];
            srv->linger_until[i] = srv->linger_until[srv->nlinger];
        } else {
            i++;
        }
    }
}

void *trove__ingest_main(void *arg)
{
    struct trove__server *srv = arg;
    struct pollfd *pfd = NULL;
    struct watch *who = NULL;
    size_t cap = 0;
    uint8_t *buf = trove__malloc(READ_CHUNK);
    struct feed_ctx f;

    memset(&f, 0, sizeof f);
    f.srv = srv;
    if (!buf || trove_wire_decoder_new(&f.dec) != TROVE_OK ||
        !(f.ev = trove__mallocarray(TROVE_WIRE_MAX_EVENTS, sizeof *f.ev))) {
        trove__log(srv, "ingest: out of memory; stopping");
        if (write(srv->stop_fd[1], "", 1) < 0) {
            ; /* a stop is pending already */
        }
    }
    for (;;) {
        size_t n = 0, np = 0, first;
        char c;
        pthread_mutex_lock(&srv->mu);
        for (struct trove__prod *p = srv->prods; p; p = p->next)
            np++;
        pthread_mutex_unlock(&srv->mu);
        if (np + 3 > cap) {
            size_t nc = (np + 3) * 2;
            struct pollfd *q = trove__realloc(pfd, nc * sizeof *q);
            struct watch *w = q ? trove__realloc(who, nc * sizeof *w) : NULL;
            if (q)
                pfd = q;
            if (w)
                who = w;
            if (!q || !w) {
                trove__log(srv, "ingest: out of memory; stopping");
                break;
            }
            cap = nc;
        }
        pfd[n].fd = srv->stop_fd[0];
        pfd[n].events = POLLIN;
        who[n++].p = NULL;
        for (int i = 0; i < 2; i++)
            if (srv->listen_fds[i] >= 0) {
                pfd[n].fd = srv->listen_fds[i];
                pfd[n].events = POLLIN;
                who[n++].p = NULL;
            }
        first = n;
        pthread_mutex_lock(&srv->mu);
        for (struct trove__prod *p = srv->prods; p && n < cap; p = p->next)
            if (p->fd >= 0)
                look(p, &who[n++]);
        pthread_mutex_unlock(&srv->mu);
        oldest_first(who + first, n - first);
        /* Answers and closes, outside srv->mu; then what to poll. */
        for (size_t i = 1; i < n; i++) {
            struct trove__prod *p = who[i].p;
            int full;
            if (!p)
                continue;
            pfd[i].fd = -1; /* not polled: waiting for its answer, or closed here */
            pfd[i].events = 0;
            pfd[i].revents = 0;
            if (who[i].act == ACT_WAIT || act(srv, &who[i]))
                continue;
            pthread_mutex_lock(&p->mu);
            full = p->npending >= TROVE__PENDING_MAX_EVENTS ||
                   p->pending_samples.len >= TROVE__PENDING_MAX_SAMPLES_BYTES;
            pthread_mutex_unlock(&p->mu);
            pfd[i].fd = p->fd;
            pfd[i].events = full ? 0 : POLLIN; /* full: until the pass takes them */
        }
        if (poll(pfd, n, 10) < 0 && errno != EINTR)
            break;
        if (pfd[0].revents & POLLIN) {
            while (read(srv->stop_fd[0], &c, 1) == 1)
                ;
            break;
        }
        for (size_t i = 1; i < n; i++) {
            if (!who[i].p) {
                if (pfd[i].revents & POLLIN)
                    accept_one(srv, pfd[i].fd, pfd[i].fd == srv->listen_fds[1]);
            } else if (pfd[i].fd >= 0 && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                read_one(srv, who[i].p, &f, buf, READ_CHUNK);
            }
        }
        reap(srv);
        linger(srv, 0);
    }
    stop_producers(srv, &f, buf);
    reap(srv);
    linger(srv, 1);
    for (int i = 0; i < 2; i++)
        if (srv->listen_fds[i] >= 0) {
            close(srv->listen_fds[i]);
            srv->listen_fds[i] = -1;
        }
    atomic_store(&srv->stopping, 1);
    trove__wake_web(srv);
    free(buf);
    free(pfd);
    free(who);
    free(f.ev);
    trove_names_free(f.names);
    trove_wire_decoder_free(f.dec);
    return NULL;
}
