/*
 * live.c: what every part of `trove serve` shares (live.h): the clock, the log,
 * published batches and the table of captures.
 */
#include "live.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t trove__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void trove__log(struct trove__server *srv, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (!srv->opt.log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    srv->opt.log(srv->opt.ctx, line);
}

/* ---- batches and captures ------------------------------------------------------------- */

void trove__batch_release(struct trove__batch *b)
{
    if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
        trove_names_free(b->names);
        free(b->samples);
        if (b->attrs) {
            trove_attrs_free(b->attrs);
            free(b->attrs);
        }
        free(b);
    }
}

void trove__cap_release(struct trove__cap *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    while (c->head) {
        struct trove__batch *b = c->head;
        c->head = b->next;
        trove__batch_release(b);
    }
    trove__fanout_free(c->fo);
    trove_names_free(c->added);
    trove__capture_names_free(c->cn);
    trove_capture_writer_close(c->w);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static struct trove__cap *cap_new(struct trove__server *srv, const char *name)
{
    struct trove__cap *c = trove__calloc(1, sizeof *c);

    if (!c)
        return NULL;
    if (trove_names_new(&c->added) != TROVE_OK ||
        trove__fanout_new(srv->max_queue, &c->fo) != TROVE_OK) {
        trove_names_free(c->added);
        free(c);
        return NULL;
    }
    atomic_init(&c->refs, 1); /* the table's */
    pthread_mutex_init(&c->mu, NULL);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->state = TROVE__CAP_WAITING;
    c->session = ++srv->next_session; /* under srv->mu */
    return c;
}

static struct trove__cap *join(struct trove__server *srv, const char *name, int producer,
                               int append, int *state, int *opener)
{
    struct trove__cap *c;

    pthread_mutex_lock(&srv->mu);
    for (c = srv->caps; c; c = c->next)
        if (strcmp(c->name, name) == 0)
            break;
    if (c && producer) {
        int over;
        pthread_mutex_lock(&c->mu);
        over = c->state == TROVE__CAP_CLOSING || c->state == TROVE__CAP_ENDED ||
               c->state == TROVE__CAP_FAILED ||
               (c->state == TROVE__CAP_LIVE && c->senders == 0); /* its last one closed */
        pthread_mutex_unlock(&c->mu);
        if (over)
            c = NULL; /* that session is over: a new one (its viewers stay with the old) */
    }
    if (!c && (c = cap_new(srv, name)) != NULL) {
        c->next = srv->caps;
        srv->caps = c;
    }
    if (c) {
        pthread_mutex_lock(&c->mu);
        if (producer) {
            if (c->state == TROVE__CAP_WAITING) {
                c->state = TROVE__CAP_OPENING;
                c->append = append;
                if (opener)
                    *opener = 1;
            }
            c->producers++;
            c->senders++;
        } else {
            c->viewers++;
        }
        if (state)
            *state = c->state;
        pthread_mutex_unlock(&c->mu);
        atomic_fetch_add(&c->refs, 1);
    }
    pthread_mutex_unlock(&srv->mu);
    return c;
}

struct trove__cap *trove__cap_join(struct trove__server *srv, const char *name, int producer,
                                   int append, int *state)
{
    return join(srv, name, producer, append, state, NULL);
}

struct trove__cap *trove__cap_join_producer(struct trove__server *srv, const char *name,
                                            int append, int *opener)
{
    *opener = 0;
    return join(srv, name, 1, append, NULL, opener);
}

struct trove__cap **trove__caps_snapshot(struct trove__server *srv, size_t *n)
{
    struct trove__cap **caps;
    size_t count = 0;

    *n = 0;
    for (struct trove__cap *c = srv->caps; c; c = c->next)
        count++;
    if (!(caps = trove__mallocarray(count + 1, sizeof *caps)))
        return NULL;
    for (struct trove__cap *c = srv->caps; c; c = c->next) {
        atomic_fetch_add(&c->refs, 1);
        caps[(*n)++] = c;
    }
    return caps;
}

void trove__caps_sweep(struct trove__server *srv)
{
    pthread_mutex_lock(&srv->mu);
    for (struct trove__cap **pp = &srv->caps; *pp;) {
        struct trove__cap *c = *pp;
        int drop, waiting;
        pthread_mutex_lock(&c->mu);
        waiting = c->state == TROVE__CAP_WAITING;
        drop = (c->state == TROVE__CAP_ENDED || c->state == TROVE__CAP_FAILED || waiting) &&
               c->viewers == 0 && c->producers == 0 && !c->w;
        pthread_mutex_unlock(&c->mu);
        /* an ended capture stays listed (its counts in /api/status) while it is the newest */
        if (drop && !waiting) {
            int newest = 1;
            for (struct trove__cap *o = srv->caps; o != c; o = o->next)
                newest &= strcmp(o->name, c->name) != 0;
            drop = !newest;
        }
        if (drop) {
            *pp = c->next;
            trove__cap_release(c);
        } else {
            pp = &c->next;
        }
    }
    pthread_mutex_unlock(&srv->mu);
}

void trove__wake_web(struct trove__server *srv)
{
    int fd = atomic_load(&srv->wake_fd);
    uint64_t one = 1;

    /* The eventfd is closed only after every thread that wakes the web thread is joined. */
    if (fd >= 0 && write(fd, &one, sizeof one) < 0) {
        ; /* its counter is full: a wake-up is pending anyway */
    }
}

int trove__addr_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return 0;
}

int trove__addr_wildcard(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (ss->ss_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
    return 0;
}

void trove__addr_format(const struct sockaddr_storage *ss, char *out, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";

    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        snprintf(out, cap, "[%s]:%u", host, (unsigned)ntohs(a->sin6_port));
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        snprintf(out, cap, "%s:%u", host, (unsigned)ntohs(a->sin_port));
    }
}

int trove__listen_tcp(struct sockaddr_storage *ss, socklen_t len, int backlog)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1, e;
    socklen_t got = sizeof *ss;

    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if ((ss->ss_family == AF_INET6 &&
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) ||
        bind(fd, (struct sockaddr *)ss, len) != 0 || listen(fd, backlog) != 0 ||
        getsockname(fd, (struct sockaddr *)ss, &got) != 0) {
        e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

void trove__prod_free(struct trove__prod *p)
{
    if (!p)
        return;
    if (p->fd >= 0)
        close(p->fd);
    trove__framer_free(&p->fr);
    trove__producer_names_free(p->pn);
    free(p->pending);
    trove_attrs_free(&p->pending_attrs);
    trove_attrs_free(&p->held);
    trove_bytes_free(&p->pending_samples);
    trove_profile_free(p->prof);
    trove__cap_release(p->cap);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* "ADDR:PORT" (ADDR an IPv4 address or [IPv6]) into a socket address. */
int trove__parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    char *end;
    unsigned long port;
    size_t hl;

    if (!colon || colon == s)
        return TROVE_ERR_INVALID;
    hl = (size_t)(colon - s);
    if (s[0] == '[' && hl >= 2 && s[hl - 1] == ']') {
        s++;
        hl -= 2;
    }
    if (hl >= sizeof host)
        return TROVE_ERR_INVALID;
    memcpy(host, s, hl);
    host[hl] = 0;
    errno = 0;
    port = strtoul(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || port > 65535)
        return TROVE_ERR_INVALID;
    memset(ss, 0, sizeof *ss);
    if (strchr(host, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
            return TROVE_ERR_INVALID;
        *len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
            return TROVE_ERR_INVALID;
        *len = sizeof *a;
    }
    return TROVE_OK;
}


int trove__job_submit(struct trove__server *srv, struct trove__job *j)
{
    pthread_mutex_lock(&srv->mu);
    if (srv->jobs_closed) {
        pthread_mutex_unlock(&srv->mu);
        return -1;
    }
    j->next = NULL;
    if (srv->jobs_tail)
        srv->jobs_tail->next = j;
    else
        srv->jobs = j;
    srv->jobs_tail = j;
    pthread_cond_signal(&srv->store_cv);
    pthread_mutex_unlock(&srv->mu);
    return 0;
}

void trove__job_release(struct trove__job *j)
{
    if (j && atomic_fetch_sub(&j->refs, 1) == 1) {
        if (j->fd >= 0)
            close(j->fd); /* an import's body: unlinked already, so it goes now */
        free(j);
    }
}
