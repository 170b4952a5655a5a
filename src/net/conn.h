/*
 * conn.h (internal): the web thread's connections (docs/serve.md, "Connections and limits"):
 * each a non-blocking socket in one epoll set, with a queue of output pieces written with
 * writev as the socket takes them — pieces of a WebSocket frame shared by every viewer of it
 * are referenced, not copied — and a place in at most one of three lists that hold the
 * timeouts, so that the thread's work per wake-up and per tick follows what happens, never
 * how many connections are merely open:
 *
 *   HEAD    accepted, the request head not yet whole: closed 10 s after the accept (the
 *           list is in accept order, so the tick looks at its front only); the oldest is
 *           the first to go when the connection limit is reached
 *   LINGER  the answer is out and the sending side shut: what the client still sends is
 *           read and dropped for up to 2 s, so that closing never resets an answer in flight
 *   ACTIVE  a body being read, or output the client does not take: closed after
 *           idle_timeout without a byte of progress (the list is kept in order of the last
 *           progress, so again only its front is looked at)
 *
 * A connection that waits for the service (a store job, a profile, an export's next bytes,
 * a viewer with nothing to send) is in no list and costs nothing until it is woken.
 *
 * The limits: at most max connections (a new one, over it, takes the place of the oldest in
 * LINGER, else in HEAD; with none there it is refused with a 503), and at most per_addr from
 * one address (the same, among that address's own, which its entry in the address table
 * keeps in a list of their own, so that the choice costs no search). A connection's memory is its struct, a
 * head buffer while its head comes (16 KiB) and its queue.
 *
 * Everything here runs on the web thread only. The owner of a connection (the HTTP answers,
 * a viewer) embeds struct trove__conn at the start of its own struct and sets fill (called
 * when the queue runs low: add more output, or nothing) and closed (the connection is gone:
 * free what it held; called once, after the epoll round in which it closed).
 */
#ifndef TROVE_NET_CONN_H
#define TROVE_NET_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fanout.h"
#include "http.h"
#include "live.h"

/* What an epoll event's data.ptr points at: a struct starting with one of these tags. */
enum trove__ev_tag { TROVE__EV_CONN = 1, TROVE__EV_LISTEN, TROVE__EV_WAKE, TROVE__EV_PIPE };

enum trove__conn_list { TROVE__LIST_NONE = 0, TROVE__LIST_HEAD, TROVE__LIST_LINGER,
                        TROVE__LIST_ACTIVE, TROVE__LIST_COUNT };

#define TROVE__HEAD_TIMEOUT_NS (10 * 1000000000ull)
#define TROVE__LINGER_NS (2 * 1000000000ull)
/* Output queued past this is not added to: a viewer's frames wait in its fan-out queue,
 * whose bound and drops docs/serve.md describes, an export's in its pipe. */
#define TROVE__CONN_QUEUE_LOW ((uint64_t)256 << 10)

/* One piece of output: base[off..off+len), or small[] when base is NULL. */
struct trove__seg {
    const uint8_t *base;
    size_t off, len;
    void *own;                   /* freed once sent */
    struct trove__frame_buf *fb; /* released once sent */
    uint8_t small[16];
};

struct trove__conn_set;

struct trove__conn {
    int tag; /* TROVE__EV_CONN */
    int fd;
    uint64_t id;
    struct trove__conn_set *set;
    char peer[TROVE__PEER_MAX]; /* "ADDR:PORT" */
    uint8_t addr[16];           /* the address, IPv4 as ::ffff:a.b.c.d */
    int loopback;
    /* the request head, while it comes and while it is used */
    uint8_t *in;
    size_t in_len;
    struct trove__http_scan scan;
    struct trove__http_head head;
    /* output */
    struct trove__seg *q;
    size_t q_head, q_n, q_cap;
    uint64_t q_bytes, sent;
    int out_armed, in_off;
    int ending; /* 1: linger once the queue is out, 2: close once it is out */
    int read_eof; /* the client shut its side */
    int in_body;  /* a request body is being read: ACTIVE until it is whole */
    /* its list */
    int list;
    struct trove__conn *lprev, *lnext;
    uint64_t since_ns;
    /* the owner's */
    int (*fill)(struct trove__conn *c);
    void (*closed)(struct trove__conn *c);
    int dead;
    struct trove__conn *dnext;
    struct trove__conn *aprev, *anext; /* every open connection of the set */
    struct trove__conn *eprev, *enext; /* its address's connections in HEAD or LINGER */
    int evictable;
};

struct trove__conn_set {
    int epfd;
    size_t n, max, per_addr;
    uint64_t idle_timeout_ns;
    struct trove__conn *first[TROVE__LIST_COUNT], *last[TROVE__LIST_COUNT];
    struct trove__conn *all;        /* every open connection, listed or not */
    struct trove__addr_slot *addrs; /* open addressing, a power of two slots */
    size_t addr_cap;
    struct trove__conn *dead;
    uint64_t refused, evicted, timed_out; /* since the start */
};

/* A set for at most max connections, per_addr from one address. TROVE_ERR_NOMEM. */
int trove__conns_init(struct trove__conn_set *s, int epfd, size_t max, size_t per_addr,
                      uint64_t idle_timeout_ns);
/* Close every connection (their closed callbacks run) and free the set. */
void trove__conns_fini(struct trove__conn_set *s);

/* May a connection from ss come in? Makes room by closing the oldest in LINGER or HEAD when
 * the set or the address is full. 0: yes; -1: no (the caller refuses it). */
int trove__conns_admit(struct trove__conn_set *s, const struct sockaddr_storage *ss);
/* Take fd (non-blocking) into the set as c (zeroed by the caller, its fill and closed set):
 * in HEAD, read for. TROVE_ERR_NOMEM or -errno (fd is then the caller's to close). */
int trove__conn_start(struct trove__conn_set *s, struct trove__conn *c, int fd,
                      const struct sockaddr_storage *ss, uint64_t id, uint64_t now);

/* Move c to a list (TROVE__LIST_NONE: out of every list). */
void trove__conn_list(struct trove__conn *c, int list, uint64_t now);
/* A byte of progress: c's idle time starts again. */
void trove__conn_progress(struct trove__conn *c, uint64_t now);

/* Queue output: a copy of p[0..n); a malloc'd buffer given with its bytes [off, off+n)
 * (freed once sent, or at once on failure); a WebSocket message (header and a copy); a
 * WebSocket binary frame from a shared buffer (the reference is taken, and released on
 * failure too). TROVE_ERR_NOMEM. */
int trove__conn_put(struct trove__conn *c, const void *p, size_t n);
int trove__conn_put_own(struct trove__conn *c, void *buf, size_t off, size_t n);
int trove__conn_put_ws(struct trove__conn *c, int opcode, const void *p, size_t n);
int trove__conn_put_frame(struct trove__conn *c, struct trove__frame_buf *fb);

/* Write what the queue holds as far as the socket takes it, asking fill for more while it
 * runs low; then wait for the socket (EPOLLOUT) or, once the queue is out and the end was
 * asked for, end. 0, or -1 when c was closed (an error, or its end). */
int trove__conn_pump(struct trove__conn *c, uint64_t now);
/* End c once its queue is out: how 1 lingers (an HTTP answer), 2 closes. */
void trove__conn_end(struct trove__conn *c, int how, uint64_t now);
/* Close c now. */
void trove__conn_close(struct trove__conn *c);
/* Stop (0) or start (1) reading c. */
void trove__conn_want_read(struct trove__conn *c, int on);
/* c is readable and has nothing more to say (lingering, or its answer under way): read and
 * drop what came; at the client's end, close (lingering) or stop reading. */
void trove__conn_discard(struct trove__conn *c);

/* The tick: close what has timed out. */
void trove__conns_expire(struct trove__conn_set *s, uint64_t now);
/* After an epoll round: run the closed callbacks of the connections closed in it. */
void trove__conns_reap(struct trove__conn_set *s);

#endif
