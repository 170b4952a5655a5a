/*
 * conn.c: the web thread's connections (conn.h): admission under the limits, the output
 * queue written with sendmsg's gather list (MSG_NOSIGNAL: a peer gone is an error, never a
 * signal), the three timeout lists, and the close, whose owner's callback runs after the
 * epoll round so that no event of that round finds freed memory.
 *
 * The per-address counts are an open-addressing table of the addresses with a connection
 * (linear probing, removal by shifting back the entries after it), sized at twice the
 * connection limit, so that a lookup is a probe or two whatever the load.
 */
#include "conn.h"
#include "common/alloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#define IOV_PIECES 64

struct trove__addr_slot {
    uint8_t ip[16];
    uint32_t count; /* 0: a free slot */
    struct trove__conn *evict_first, *evict_last; /* its connections in HEAD or LINGER */
};

static const char head_timeout_body[] =
    "{\"error\":\"the request's head did not come whole within 10 s\",\"code\":\"request_timeout\"}\n";

/* ---- addresses ------------------------------------------------------------------------- */

static void addr_of(const struct sockaddr_storage *ss, uint8_t ip[16])
{
    memset(ip, 0, 16);
    if (ss->ss_family == AF_INET) {
        ip[10] = ip[11] = 0xff;
        memcpy(ip + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    } else if (ss->ss_family == AF_INET6) {
        memcpy(ip, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
    }
}

static size_t addr_hash(const uint8_t ip[16], size_t cap)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 16; i++)
        h = (h ^ ip[i]) * 1099511628211ull;
    return (size_t)(h ^ h >> 29) & (cap - 1);
}

static struct trove__addr_slot *addr_find(struct trove__conn_set *s, const uint8_t ip[16],
                                          int add)
{
    size_t i = addr_hash(ip, s->addr_cap);

    for (;; i = (i + 1) & (s->addr_cap - 1)) {
        struct trove__addr_slot *a = &s->addrs[i];
        if (a->count == 0) {
            if (!add)
                return NULL;
            memset(a, 0, sizeof *a);
            memcpy(a->ip, ip, 16);
            return a;
        }
        if (memcmp(a->ip, ip, 16) == 0)
            return a;
    }
}

static void addr_drop(struct trove__conn_set *s, const uint8_t ip[16])
{
    struct trove__addr_slot *a = addr_find(s, ip, 0);
    size_t i, j;

    if (!a || --a->count > 0)
        return;
    /* Shift back the run after the freed slot, so that every entry stays reachable. */
    i = (size_t)(a - s->addrs);
    for (j = (i + 1) & (s->addr_cap - 1); s->addrs[j].count; j = (j + 1) & (s->addr_cap - 1)) {
        size_t home = addr_hash(s->addrs[j].ip, s->addr_cap);
        /* Move j to i when its home is not cyclically within (i, j]. */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            s->addrs[i] = s->addrs[j];
            s->addrs[j].count = 0;
            i = j;
        }
    }
}

/* ---- the set ----------------------------------------------------------------------------- */

int trove__conns_init(struct trove__conn_set *s, int epfd, size_t max, size_t per_addr,
                      uint64_t idle_timeout_ns)
{
    memset(s, 0, sizeof *s);
    s->epfd = epfd;
    s->max = max;
    s->per_addr = per_addr;
    s->idle_timeout_ns = idle_timeout_ns;
    s->addr_cap = 16;
    while (s->addr_cap < 2 * max + 2)
        s->addr_cap *= 2;
    if (!(s->addrs = trove__calloc(s->addr_cap, sizeof *s->addrs)))
        return TROVE_ERR_NOMEM;
    return TROVE_OK;
}

void trove__conns_fini(struct trove__conn_set *s)
{
    while (s->all)
        trove__conn_close(s->all);
    trove__conns_reap(s);
    free(s->addrs);
    s->addrs = NULL;
}

/* c's place among its address's evictable connections. */
static void evict_unlink(struct trove__conn *c)
{
    struct trove__addr_slot *a;

    if (!c->evictable)
        return;
    a = addr_find(c->set, c->addr, 0);
    if (c->eprev)
        c->eprev->enext = c->enext;
    else if (a)
        a->evict_first = c->enext;
    if (c->enext)
        c->enext->eprev = c->eprev;
    else if (a)
        a->evict_last = c->eprev;
    c->eprev = c->enext = NULL;
    c->evictable = 0;
}

static void evict_link(struct trove__conn *c)
{
    struct trove__addr_slot *a = addr_find(c->set, c->addr, 0);

    if (!a)
        return;
    c->eprev = a->evict_last;
    c->enext = NULL;
    if (a->evict_last)
        a->evict_last->enext = c;
    else
        a->evict_first = c;
    a->evict_last = c;
    c->evictable = 1;
}

static void unlist(struct trove__conn *c)
{
    struct trove__conn_set *s = c->set;

    evict_unlink(c);
    if (c->list == TROVE__LIST_NONE)
        return;
    if (c->lprev)
        c->lprev->lnext = c->lnext;
    else
        s->first[c->list] = c->lnext;
    if (c->lnext)
        c->lnext->lprev = c->lprev;
    else
        s->last[c->list] = c->lprev;
    c->lprev = c->lnext = NULL;
    c->list = TROVE__LIST_NONE;
}

void trove__conn_list(struct trove__conn *c, int list, uint64_t now)
{
    struct trove__conn_set *s = c->set;

    unlist(c);
    c->since_ns = now;
    if (list == TROVE__LIST_NONE)
        return;
    c->list = list;
    c->lprev = s->last[list];
    if (s->last[list])
        s->last[list]->lnext = c;
    else
        s->first[list] = c;
    s->last[list] = c;
    if (list == TROVE__LIST_HEAD || list == TROVE__LIST_LINGER)
        evict_link(c);
}

void trove__conn_progress(struct trove__conn *c, uint64_t now)
{
    if (c->list == TROVE__LIST_ACTIVE)
        trove__conn_list(c, TROVE__LIST_ACTIVE, now); /* to the back: the newest progress */
    else
        c->since_ns = now;
}

int trove__conns_admit(struct trove__conn_set *s, const struct sockaddr_storage *ss)
{
    struct trove__addr_slot *a;
    struct trove__conn *victim;
    uint8_t ip[16];

    addr_of(ss, ip);
    a = addr_find(s, ip, 0);
    if (a && a->count >= s->per_addr) {
        if (!(victim = a->evict_first)) { /* the oldest of its heads and lingerers */
            s->refused++;
            return -1;
        }
        trove__conn_close(victim);
        s->evicted++;
    }
    if (s->n >= s->max) {
        if (!(victim = s->first[TROVE__LIST_LINGER]) && !(victim = s->first[TROVE__LIST_HEAD])) {
            s->refused++;
            return -1;
        }
        trove__conn_close(victim);
        s->evicted++;
    }
    return 0;
}

int trove__conn_start(struct trove__conn_set *s, struct trove__conn *c, int fd,
                      const struct sockaddr_storage *ss, uint64_t id, uint64_t now)
{
    struct epoll_event ev;
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    struct trove__addr_slot *a;

    c->tag = TROVE__EV_CONN;
    c->fd = fd;
    c->id = id;
    c->set = s;
    addr_of(ss, c->addr);
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        c->loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
        snprintf(c->peer, sizeof c->peer, "%s:%u", host, port);
    } else {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        c->loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
                      (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127);
        snprintf(c->peer, sizeof c->peer, "[%s]:%u", host, port);
    }
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        return -errno;
    a = addr_find(s, c->addr, 1);
    a->count++;
    s->n++;
    c->anext = s->all;
    if (s->all)
        s->all->aprev = c;
    s->all = c;
    trove__conn_list(c, TROVE__LIST_HEAD, now);
    return TROVE_OK;
}

static void update_events(struct trove__conn *c)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof ev);
    ev.events = (c->in_off ? 0 : EPOLLIN) | (c->out_armed ? EPOLLOUT : 0);
    ev.data.ptr = c;
    epoll_ctl(c->set->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

void trove__conn_want_read(struct trove__conn *c, int on)
{
    if (c->dead || c->in_off == !on)
        return;
    c->in_off = !on;
    update_events(c);
}

static void seg_free(struct trove__seg *g)
{
    free(g->own);
    if (g->fb)
        trove__frame_buf_release(g->fb);
}

void trove__conn_close(struct trove__conn *c)
{
    struct trove__conn_set *s = c->set;

    if (c->dead)
        return;
    c->dead = 1;
    unlist(c);
    if (c->aprev)
        c->aprev->anext = c->anext;
    else
        s->all = c->anext;
    if (c->anext)
        c->anext->aprev = c->aprev;
    c->aprev = c->anext = NULL;
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    addr_drop(s, c->addr);
    s->n--;
    for (size_t i = 0; i < c->q_n; i++)
        seg_free(&c->q[(c->q_head + i) % c->q_cap]);
    free(c->q);
    c->q = NULL;
    c->q_n = c->q_cap = 0;
    c->q_bytes = 0;
    free(c->in);
    c->in = NULL;
    c->dnext = s->dead;
    s->dead = c;
}

void trove__conns_reap(struct trove__conn_set *s)
{
    while (s->dead) {
        struct trove__conn *c = s->dead;
        s->dead = c->dnext;
        if (c->closed)
            c->closed(c);
    }
}

/* ---- output ------------------------------------------------------------------------------ */

static struct trove__seg *seg_add(struct trove__conn *c)
{
    struct trove__seg *g;

    if (c->dead)
        return NULL;
    if (c->q_n == c->q_cap) {
        size_t cap = c->q_cap ? 2 * c->q_cap : 8;
        struct trove__seg *q = trove__mallocarray(cap, sizeof *q);
        if (!q)
            return NULL;
        for (size_t i = 0; i < c->q_n; i++)
            q[i] = c->q[(c->q_head + i) % c->q_cap];
        free(c->q);
        c->q = q;
        c->q_head = 0;
        c->q_cap = cap;
    }
    g = &c->q[(c->q_head + c->q_n) % c->q_cap];
    memset(g, 0, sizeof *g);
    c->q_n++;
    return g;
}

int trove__conn_put_own(struct trove__conn *c, void *buf, size_t off, size_t n)
{
    struct trove__seg *g = seg_add(c);

    if (!g) {
        free(buf);
        return TROVE_ERR_NOMEM;
    }
    g->base = buf;
    g->own = buf;
    g->off = off;
    g->len = n;
    c->q_bytes += n;
    return TROVE_OK;
}

/* A piece of at most 16 bytes (a frame's header), kept in the segment itself. */
static int put_small(struct trove__conn *c, const uint8_t *p, size_t n)
{
    struct trove__seg *g = seg_add(c);

    if (!g)
        return TROVE_ERR_NOMEM;
    if (n > sizeof g->small)
        n = sizeof g->small;
    memcpy(g->small, p, n);
    g->len = n;
    c->q_bytes += n;
    return TROVE_OK;
}

int trove__conn_put(struct trove__conn *c, const void *p, size_t n)
{
    uint8_t *copy;

    if (n == 0)
        return TROVE_OK;
    if (n <= sizeof c->q->small)
        return put_small(c, p, n);
    if (!(copy = trove__malloc(n)))
        return TROVE_ERR_NOMEM;
    memcpy(copy, p, n);
    return trove__conn_put_own(c, copy, 0, n);
}

int trove__conn_put_ws(struct trove__conn *c, int opcode, const void *p, size_t n)
{
    uint8_t h[10];
    size_t hn = trove__ws_head(h, opcode, n);
    int rc = put_small(c, h, hn);

    return rc == TROVE_OK ? trove__conn_put(c, p, n) : rc;
}

int trove__conn_put_frame(struct trove__conn *c, struct trove__frame_buf *fb)
{
    uint8_t h[10];
    size_t hn = trove__ws_head(h, TROVE__WS_BINARY, fb->len);
    struct trove__seg *g;

    if (put_small(c, h, hn) != TROVE_OK || !(g = seg_add(c))) {
        trove__frame_buf_release(fb);
        return TROVE_ERR_NOMEM;
    }
    g->base = fb->data;
    g->fb = fb;
    g->len = fb->len;
    c->q_bytes += fb->len;
    return TROVE_OK;
}

static void arm_out(struct trove__conn *c, int on)
{
    if (c->out_armed == on)
        return;
    c->out_armed = on;
    update_events(c);
}

/* The queue is out and an end was asked for. */
static void finish(struct trove__conn *c, uint64_t now)
{
    if (c->ending == 2 || c->read_eof) {
        trove__conn_close(c);
        return;
    }
    shutdown(c->fd, SHUT_WR);
    c->fill = NULL;
    trove__conn_list(c, TROVE__LIST_LINGER, now);
    trove__conn_want_read(c, 1);
}

int trove__conn_pump(struct trove__conn *c, uint64_t now)
{
    for (;;) {
        struct iovec iov[IOV_PIECES];
        struct msghdr msg;
        size_t k = 0, want = 0;
        ssize_t n;

        if (c->dead)
            return -1;
        if (c->list == TROVE__LIST_LINGER)
            return 0;
        if (c->q_bytes < TROVE__CONN_QUEUE_LOW && c->fill && !c->ending &&
            c->fill(c) != 0) {
            trove__conn_close(c);
            return -1;
        }
        if (c->dead)
            return -1;
        if (c->q_n == 0)
            break;
        for (size_t i = 0; i < c->q_n && k < IOV_PIECES; i++) {
            struct trove__seg *g = &c->q[(c->q_head + i) % c->q_cap];
            iov[k].iov_base = (void *)((g->base ? g->base : g->small) + g->off);
            iov[k].iov_len = g->len;
            want += g->len;
            k++;
        }
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = iov;
        msg.msg_iovlen = k;
        n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            arm_out(c, 1);
            if (c->list == TROVE__LIST_NONE)
                trove__conn_list(c, TROVE__LIST_ACTIVE, now);
            return 0;
        }
        if (n < 0) {
            trove__conn_close(c);
            return -1;
        }
        c->sent += (uint64_t)n;
        c->q_bytes -= (uint64_t)n;
        trove__conn_progress(c, now);
        for (size_t left = (size_t)n; left > 0;) {
            struct trove__seg *g = &c->q[c->q_head];
            if (left < g->len) {
                g->off += left;
                g->len -= left;
                break;
            }
            left -= g->len;
            seg_free(g);
            c->q_head = (c->q_head + 1) % c->q_cap;
            c->q_n--;
        }
        if ((size_t)n < want) { /* the socket is full */
            arm_out(c, 1);
            if (c->list == TROVE__LIST_NONE)
                trove__conn_list(c, TROVE__LIST_ACTIVE, now);
            return 0;
        }
    }
    arm_out(c, 0);
    if (c->list == TROVE__LIST_ACTIVE && !c->in_body)
        trove__conn_list(c, TROVE__LIST_NONE, now);
    if (c->ending)
        finish(c, now);
    return c->dead ? -1 : 0;
}

void trove__conn_end(struct trove__conn *c, int how, uint64_t now)
{
    if (c->dead)
        return;
    c->ending = how;
    if (c->q_n == 0)
        finish(c, now);
    else
        trove__conn_pump(c, now);
}

void trove__conn_discard(struct trove__conn *c)
{
    uint8_t sink[4096];

    for (int i = 0; i < 16 && !c->dead; i++) {
        ssize_t n = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0)
            continue;
        if (n < 0 && (errno == EINTR))
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        /* the client's end (or an error) */
        c->read_eof = 1;
        if (c->list == TROVE__LIST_LINGER || n < 0)
            trove__conn_close(c);
        else
            trove__conn_want_read(c, 0);
        return;
    }
}

/* ---- the tick ------------------------------------------------------------------------------ */

/* Has c been in its list for at least t? (Its time may be later than now: taken after now
 * was, in the same round.) */
static int expired(const struct trove__conn *c, uint64_t now, uint64_t t)
{
    return c->since_ns <= now && now - c->since_ns >= t;
}

void trove__conns_expire(struct trove__conn_set *s, uint64_t now)
{
    struct trove__conn *c;

    while ((c = s->first[TROVE__LIST_HEAD]) && expired(c, now, TROVE__HEAD_TIMEOUT_NS)) {
        char a[512];
        size_t n = trove__http_answer_head(a, sizeof a - sizeof head_timeout_body, 408,
                                           "application/json", sizeof head_timeout_body - 1,
                                           NULL);
        memcpy(a + n, head_timeout_body, sizeof head_timeout_body - 1);
        if (n && send(c->fd, a, n + sizeof head_timeout_body - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
            ; /* best effort: it is closed either way */
        }
        trove__conn_close(c);
        s->timed_out++;
    }
    while ((c = s->first[TROVE__LIST_LINGER]) && expired(c, now, TROVE__LINGER_NS))
        trove__conn_close(c);
    while ((c = s->first[TROVE__LIST_ACTIVE]) && expired(c, now, s->idle_timeout_ns)) {
        trove__conn_close(c);
        s->timed_out++;
    }
}
