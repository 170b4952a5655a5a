/*
 * ingest.c: the producers' side of `trove serve` (docs/serve.md, "Producers"). One thread
 * polls the unix socket, the TCP ingest port and every producer; it reads each stream,
 * cuts it into the hello and frames (producer.c), attaches the producer to its capture and
 * decodes every frame into the producer's pending events and names, which the pass takes.
 * A producer whose pending events reach TROVE__PENDING_MAX_EVENTS is not read until the
 * pass has taken them: the producer then waits in its own write, and nothing is dropped.
 */
#define _GNU_SOURCE /* accept4 */

#include "api.h"
#include "live.h"
#include "common/alloc.h"
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define READ_CHUNK ((size_t)256 << 10)

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
    if (!(p = trove__calloc(1, sizeof *p)) || trove_names_new(&p->pending_names) != TROVE_OK) {
        free(p);
        close(fd);
        return;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->fd = fd;
    p->tcp = tcp;
    trove__framer_init(&p->fr);
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

/* Close p's socket: it sends no more. The pass takes what it sent and frees it (or this
 * thread does, for a producer that never got to a capture). */
static void prod_close(struct trove__server *srv, struct trove__prod *p, int rc, const char *why)
{
    if (p->fd < 0)
        return;
    close(p->fd);
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
    int rc = trove__hello_parse(line, len, &f->p->hello, &f->diag);

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
    if (!(c = trove__cap_join(f->srv, f->p->hello.capture, 1, f->p->hello.append, NULL)))
        return TROVE_FAIL(&f->diag, TROVE_ERR_NOMEM, 0, "out of memory");
    pthread_mutex_lock(&f->srv->mu);
    f->p->cap = c;
    f->p->got_hello = 1;
    pthread_mutex_unlock(&f->srv->mu);
    trove__log(f->srv, "producer %" PRIu64 " (%s, pid %" PRIu32 "%s%s%s) writes capture %s",
               f->p->id, f->p->peer, f->p->hello.pid, f->p->hello.producer[0] ? ", " : "",
               f->p->hello.producer, f->p->hello.clock_tsc ? ", TSC clock" : "", c->name);
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

static int on_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct feed_ctx *f = ctx;
    struct trove__prod *p = f->p;
    struct trove_wire_frame fr;
    int rc;

    if (len > 2 && frame[2] == TROVE_WIRE_SAMPLES)
        return on_samples(f, frame, len);

    if (len > 2 && frame[2] == TROVE_WIRE_NAMES) { /* a fresh table for its entries */
        trove_names_free(f->names);
        f->names = NULL;
        if (trove_names_new(&f->names) != TROVE_OK)
            return TROVE_FAIL(&f->diag, TROVE_ERR_NOMEM, 0, "out of memory");
    }
    rc = trove_wire_decode(f->dec, frame, len, f->ev, TROVE_WIRE_MAX_EVENTS,
                           len > 2 && frame[2] == TROVE_WIRE_NAMES ? f->names : NULL, &fr,
                           &f->diag);
    if (rc != TROVE_OK)
        return rc;
    if (p->hello.clock_tsc && fr.n_events > 0) /* ticks to the capture's nanoseconds */
        trove__clock_apply(&p->clock, f->ev, fr.n_events);
    pthread_mutex_lock(&p->mu);
    p->frames_in++;
    if (fr.format != TROVE_WIRE_NAMES)
        p->last_wire = fr.format;
    if (fr.n_names > 0)
        rc = trove_names_merge(p->pending_names, f->names);
    if (rc == TROVE_OK && fr.n_events > 0) {
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
        if (rc == TROVE_OK) {
            memcpy(p->pending + p->npending, f->ev, fr.n_events * sizeof *f->ev);
            p->npending += fr.n_events;
            p->events_in += fr.n_events;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* Read what p has; close it at the end of its stream or on bad input. 1 if it closed p
 * (which is then the pass's: the caller must not touch it again), else 0. */
static int read_one(struct trove__server *srv, struct trove__prod *p, struct feed_ctx *f,
                    uint8_t *buf)
{
    ssize_t r = read(p->fd, buf, READ_CHUNK);
    int rc;

    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (r <= 0) {
        if (r == 0 && trove__framer_pending(&p->fr) == 0)
            prod_close(srv, p, TROVE_OK, "");
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

void *trove__ingest_main(void *arg)
{
    struct trove__server *srv = arg;
    struct pollfd *pfd = NULL;
    struct trove__prod **who = NULL;
    size_t cap = 0;
    uint8_t *buf = trove__malloc(READ_CHUNK);
    struct feed_ctx f;

    memset(&f, 0, sizeof f);
    f.srv = srv;
    if (!buf || trove_wire_decoder_new(&f.dec) != TROVE_OK || trove_names_new(&f.names) != TROVE_OK ||
        !(f.ev = trove__mallocarray(TROVE_WIRE_MAX_EVENTS, sizeof *f.ev))) {
        trove__log(srv, "ingest: out of memory; stopping");
        if (write(srv->stop_fd[1], "", 1) < 0) {
            ; /* a stop is pending already */
        }
    }
    for (;;) {
        size_t n = 0, np = 0;
        char c;
        pthread_mutex_lock(&srv->mu);
        for (struct trove__prod *p = srv->prods; p; p = p->next)
            np++;
        pthread_mutex_unlock(&srv->mu);
        if (np + 3 > cap) {
            size_t nc = (np + 3) * 2;
            struct pollfd *q = trove__realloc(pfd, nc * sizeof *q);
            struct trove__prod **w = q ? trove__realloc(who, nc * sizeof *w) : NULL;
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
        who[n++] = NULL;
        for (int i = 0; i < 2; i++)
            if (srv->listen_fds[i] >= 0) {
                pfd[n].fd = srv->listen_fds[i];
                pfd[n].events = POLLIN;
                who[n++] = NULL;
            }
        pthread_mutex_lock(&srv->mu);
        for (struct trove__prod *p = srv->prods; p && n < cap; p = p->next) {
            int full, failed = 0;
            if (p->fd < 0)
                continue;
            pthread_mutex_lock(&p->mu);
            full = p->npending >= TROVE__PENDING_MAX_EVENTS ||
                   p->pending_samples.len >= TROVE__PENDING_MAX_SAMPLES_BYTES;
            pthread_mutex_unlock(&p->mu);
            if (p->cap) {
                pthread_mutex_lock(&p->cap->mu);
                failed = p->cap->state == TROVE__CAP_FAILED;
                pthread_mutex_unlock(&p->cap->mu);
            }
            if (failed) {
                pfd[n].fd = -1; /* closed below, outside srv->mu */
                pfd[n].events = 0;
                pfd[n].revents = POLLERR;
                who[n++] = p;
                continue;
            }
            pfd[n].fd = p->fd;
            pfd[n].events = full ? 0 : POLLIN; /* full: until the pass takes them */
            who[n++] = p;
        }
        pthread_mutex_unlock(&srv->mu);
        if (poll(pfd, n, 10) < 0 && errno != EINTR)
            break;
        if (pfd[0].revents & POLLIN) {
            while (read(srv->stop_fd[0], &c, 1) == 1)
                ;
            break;
        }
        for (size_t i = 1; i < n; i++) {
            if (!who[i]) {
                if (pfd[i].revents & POLLIN)
                    accept_one(srv, pfd[i].fd, pfd[i].fd == srv->listen_fds[1]);
                continue;
            }
            if (pfd[i].fd < 0) {
                char why[TROVE__ERROR_MAX + 160];
                snprintf(why, sizeof why, "capture %s could not be written: %s",
                         who[i]->cap->name, who[i]->cap->error);
                prod_close(srv, who[i], TROVE_ERR_INVALID, why);
            } else if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                read_one(srv, who[i], &f, buf);
            }
        }
        reap(srv);
    }
    /* Stopping: what producers sent before the stop is read to its end (the socket may
     * still hold it), then they are closed; the pass takes it all and the store commits. */
    {
        struct trove__prod **open = NULL;
        size_t nopen = 0, np = 0;
        pthread_mutex_lock(&srv->mu);
        for (struct trove__prod *p = srv->prods; p; p = p->next)
            np++;
        if ((open = trove__mallocarray(np + 1, sizeof *open)) != NULL)
            for (struct trove__prod *p = srv->prods; p; p = p->next)
                if (p->fd >= 0)
                    open[nopen++] = p;
        pthread_mutex_unlock(&srv->mu);
        for (size_t i = 0; i < nopen; i++) {
            struct trove__prod *p = open[i];
            int closed = 0;
            while (buf) { /* until the socket is empty (or the stream ends) */
                struct pollfd one = {p->fd, POLLIN, 0};
                if (poll(&one, 1, 0) <= 0 || !(one.revents & (POLLIN | POLLHUP | POLLERR)))
                    break;
                if ((closed = read_one(srv, p, &f, buf)) != 0)
                    break;
            }
            if (!closed)
                prod_close(srv, p, TROVE_OK, "");
        }
        free(open);
    }
    reap(srv);
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
