/*
 * live.h: the pieces of `trove serve` (trove/serve.h, docs/serve.md) and how they
 * share state.
 *
 *   ingest thread  (ingest.c)  accepts producers on the unix socket and the TCP ingest
 *                              port, reads their streams, checks the hello, answers it once
 *                              the capture is open (or has failed), and decodes every frame
 *                              into the producer's pending events, its names mapped to the
 *                              capture's ids (the capture's new names into its `added`)
 *   pass thread    (pass.c)    every pass_ms takes each live capture's pending events and
 *                              its new names, cuts batches of at most 2048 events and
 *                              publishes them: to the fan-out (viewers) and to the
 *                              capture's list of uncommitted batches (the store)
 *   store thread   (store_thread.c)
 *                              opens each capture's writer, adds the batches of that list,
 *                              commits at least every commit_ms, trims what it committed,
 *                              and runs the API's jobs (deletes, imports) on the store
 *   web thread     (web.c)     one epoll loop: HTTP (web_api.c: /, /api/status, /metrics,
 *                              the API) and the viewers' WebSockets (web_view.c), over the
 *                              connections of conn.c; the only thread that touches them
 *   history thread (history.c) one per from=start viewer: what is stored (a replay through
 *                              the stream's walker, prefetcher and sender), then what is
 *                              uncommitted, then the viewer goes live
 *
 * Locks: srv->mu guards the tables of captures and connections; a capture's mu guards its
 * state, counters and list; a producer's mu its pending data. Order: srv->mu, then a
 * capture's, then a producer's (or the fan-out's, inside trove__fanout_*).
 *
 * A producer's answer: the ingest thread reads nothing of a producer past its hello until it
 * has answered it. The answer waits on the capture's state, which the store thread moves
 * from OPENING to LIVE or FAILED; the ingest thread reads that state (srv->mu, then the
 * capture's mu) each round of its poll loop, and writes the accept or the refuse outside
 * every lock, never blocking (the socket is non-blocking; a line the socket cannot take is
 * dropped). Once LIVE, the capture's name dictionary (cn) is the ingest thread's.
 */
#ifndef TROVE_NET_LIVE_H
#define TROVE_NET_LIVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fanout.h"
#include "flows_cache.h"
#include "producer.h"
#include "remap.h"
#include "trove/attrs.h"
#include "trove/capture.h"
#include "trove/input.h"
#include "trove/profile.h"
#include "trove/event.h"
#include "trove/input.h"
#include "trove/serve.h"
#include "trove/volume.h"
#include "trove/wire.h"

#define TROVE__PEER_MAX 64
#define TROVE__ERROR_MAX 1536
/* A producer's decoded events the pass has not taken yet: past this, the service stops
 * reading its socket until the pass catches up (the producer then waits in its write). */
#define TROVE__PENDING_MAX_EVENTS ((size_t)1 << 18)
/* ... and its samples frames' bytes, likewise. */
#define TROVE__PENDING_MAX_SAMPLES_BYTES ((size_t)4 << 20)
/* The names one producer may send (docs/serve.md, "Producers"): at most
 * TROVE__PRODUCER_NAMES_COUNT names, in names frames of at most TROVE__PRODUCER_NAMES_MAX
 * bytes, each name counted TROVE__NAME_ENTRY_COST bytes more (what the service keeps of a
 * name besides its text), so that one producer's names keep within about 200 MiB of the
 * service (docs/serve.md measures it). A Chrome trace of 450,000 distinct 100-byte names
 * counts 61.6 MB: `trove import` stores it. The names frame that would pass either closes
 * the producer with an error. */
#define TROVE__PRODUCER_NAMES_MAX ((uint64_t)24 << 20)
#define TROVE__PRODUCER_NAMES_COUNT ((uint64_t)500000)
#define TROVE__NAME_ENTRY_COST 32u
/* The names a capture can commit: its names frames (docs/formats/capture.md), in parts of at
 * most TROVE_CAPTURE_MAX_OBJECT bytes, at most TROVE_CAPTURE_MAX_NAMES_BYTES in all — less a
 * frame header for each part the writer may cut them into (a part ends a frame early). A
 * names frame that would take the capture past it is refused (its producer closed), so that
 * the capture stays committable. */
#define TROVE__CAPTURE_NAMES_MAX \
    (TROVE_CAPTURE_MAX_NAMES_BYTES - 16u * (uint64_t)TROVE_CAPTURE_MAX_NAMES_PARTS)
/* A capture's profile_owner once samples frames were lost: it takes no more. */
#define TROVE__PROFILE_STOPPED UINT64_MAX
/* Uncommitted bytes of one capture that make the store thread commit early. */
#define TROVE__COMMIT_EARLY_BYTES ((uint64_t)16 << 20)
/* A live capture's segments: 4 MiB of events (131,072), four times an import's, so that a
 * capture at millions of events a second is a few dozen objects a second. */
#define TROVE__LIVE_SEGMENT_BYTES ((uint64_t)4 << 20)
/* Uncommitted bytes of one capture past which the pass takes nothing more from its
 * producers until the store catches up (they then wait in their writes): memory stays
 * bounded when the store is slower than the producers. */
#define TROVE__UNCOMMITTED_MAX ((uint64_t)64 << 20)
/* A from=start viewer's history queue, in bytes (the history thread waits past it). */
#define TROVE__HISTORY_QUEUE_BYTES ((size_t)8 << 20)
/* Catch-up rounds a from=start viewer may take: each reads back from the store (and the
 * uncommitted batches) the live frames its queue dropped while its history was sent;
 * past that many it is a slow viewer like any other, told of the gap. */
#define TROVE__CATCHUP_MAX 8
/* The reason of the close (1001) every viewer gets when the service stops. */
#define TROVE__STOP_REASON "service stopped"
/* Producer connections at once (trove_serve_options.max_producers' default): each takes a
 * descriptor of the reserve web.c keeps from web load. */
#define TROVE__PRODUCERS_DEFAULT 256u
/* Refused producers whose close lingers at once, and for how long. */
#define TROVE__LINGER_PRODUCERS 64u
#define TROVE__LINGER_PRODUCER_NS (2 * 1000000000ull)

/* A batch the pass published: shared by the uncommitted list and history snapshots. */
struct trove__batch {
    atomic_int refs;
    struct trove__batch *next; /* in the capture's list */
    uint64_t seq;              /* the capture's batches before it */
    uint64_t first;            /* the capture's index of its first event */
    uint32_t n;
    struct trove_names *names; /* names published with it, in capture ids (may be NULL) */
    uint8_t *samples;          /* samples frames published with it (malloc'd; may be NULL) */
    size_t samples_len;
    uint64_t nsamples, nswitches;
    struct trove_attrs *attrs; /* its events' attributes, rows by index in ev (may be NULL) */
    uint64_t bytes;            /* what it holds for the store: events, samples, attributes */
    struct trove_event ev[];
};

void trove__batch_release(struct trove__batch *b);

enum trove__cap_state {
    TROVE__CAP_WAITING = 0, /* viewers wait for it; no producer yet */
    TROVE__CAP_OPENING,     /* a producer said hello: the store thread opens its writer */
    TROVE__CAP_LIVE,        /* batches flow */
    TROVE__CAP_CLOSING,     /* its last producer left: the store thread commits and closes */
    TROVE__CAP_ENDED,       /* committed and closed: viewers get {"type":"end"} */
    TROVE__CAP_FAILED       /* the writer could not be opened or committed: see error */
};

struct trove__cap {
    atomic_int refs;
    struct trove__cap *next; /* srv->caps */
    char name[TROVE_VOLUME_NAME_MAX + 1];
    pthread_mutex_t mu;
    int state;
    int append;                  /* the first hello asked to continue a stored capture */
    uint64_t session;            /* numbered from 1 as the service starts sessions */
    int mode;                    /* how it started (the store thread's, set before LIVE):
                                    TROVE_SERVE_NEW, _REPLACE or _APPEND */
    uint64_t replaced;           /* _REPLACE: the stored capture's events it replaces */
    struct trove_names *added;   /* names new to the capture, in its ids, not published yet:
                                    the ingest thread adds, the pass takes (under mu) */
    uint64_t profile_owner;      /* the producer whose samples frames the capture takes (0:
                                    none yet; TROVE__PROFILE_STOPPED: no more); under mu */
    uint64_t samples;            /* samples published */
    uint64_t committed_samples;  /* durable (the store thread's, under mu) */
    struct trove__fanout *fo;
    uint64_t base;               /* events stored before this session (an append's) */
    uint64_t published;          /* the capture's events so far (stored ones included) */
    uint64_t batches;            /* batches published (the next one's seq) */
    uint64_t committed;          /* durable */
    uint64_t stored_bytes;
    uint64_t uncommitted_bytes;
    struct trove__batch *head, *tail; /* published and not committed, in order */
    int producers, viewers;
    int senders;                 /* producers whose connection is open (a LIVE session none
                                    of whose producers sends any more is over: the next
                                    producer of the name starts a new one) */
    uint64_t commits, commit_errors;
    int stopped;       /* the service's stop cut this session (a producer still sent): its
                          viewers are closed with 1001 once they have what was published,
                          never told it ended (under mu) */
    int commit_failed; /* the store thread's: commits failed in a row (retried each commit_ms) */
    char error[TROVE__ERROR_MAX];
    /* the ingest thread's once LIVE (the store thread makes it before) */
    struct trove__capture_names *cn;
    /* the store thread's */
    struct trove_capture_writer *w;
    uint64_t spooled;            /* batches given to the writer (the next one's seq) */
    uint64_t last_commit_ns;
};

void trove__cap_release(struct trove__cap *c);

enum trove__conn_kind { TROVE__CONN_PRODUCER = 1, TROVE__CONN_VIEWER = 2 };

/* What /api/status shows of a connection. */
struct trove__conn_stats {
    uint64_t id;
    int kind;
    char peer[TROVE__PEER_MAX];
    char capture[TROVE_VOLUME_NAME_MAX + 1];
    int wire;             /* viewer: the format it gets; producer: the last frame's */
    uint64_t queue_bytes; /* producer: pending; viewer: queued */
    uint64_t events, bytes;
    uint64_t drops;       /* viewer: events dropped */
    /* producer: of its events, taken into the capture, lost there, and waiting for the
     * pass (events == published + dropped + queued) */
    uint64_t published, dropped, queued;
    int mode;             /* producer: its accept's (enum trove_serve_mode), 0 before */
    uint64_t session;
    uint64_t errors;
    char error[TROVE__ERROR_MAX];
};

struct trove__prod {
    struct trove__prod *next; /* srv->prods */
    uint64_t id;
    int fd;
    int tcp;
    char peer[TROVE__PEER_MAX];
    struct trove__framer fr;
    struct trove__hello hello;
    int got_hello;
    struct trove__clock clock;       /* a TSC producer's (hello.clock_tsc) */
    struct trove__cap *cap;          /* after the hello */
    /* the ingest thread's */
    int opener;                      /* its hello started the capture's session */
    int answered;                    /* its accept was written: its frames are read */
    int told;                        /* a line was written to it */
    struct trove_profile *prof;      /* its samples frames' rows so far (strings, frames,
                                        stacks), each frame checked on it */
    struct trove__producer_names *pn; /* its name ids to the capture's */
    uint64_t names_cost;             /* its names so far, as TROVE__PRODUCER_NAMES_MAX counts */
    uint64_t names_in;               /* names entries it sent */
    struct trove_attrs held;         /* an attrs frame's rows, for the events frame after it */
    int has_held;
    /* guarded by mu */
    pthread_mutex_t mu;
    int mode;                        /* what its accept said (enum trove_serve_mode), 0 before */
    struct trove_event *pending;     /* decoded (in the capture's name ids), not yet taken by
                                        the pass */
    size_t npending, cap_pending;
    struct trove_attrs pending_attrs; /* the pending events' attributes (rows by index in
                                         pending) */
    struct trove_bytes pending_samples; /* samples frames, checked, not yet taken */
    uint64_t pending_nsamples, pending_nswitches;
    int closed;                      /* the ingest thread is done with it */
    /* counters (the ingest thread writes, status reads under mu) */
    uint64_t bytes_in, events_in, frames_in, errors;
    /* under mu, so that events_in == events_published + events_dropped + npending in every
     * snapshot: taken by the pass into the capture's batches, and lost (the capture failed,
     * or memory ran out taking or publishing them) */
    uint64_t events_published, events_dropped;
    int last_wire;
    char error[TROVE__ERROR_MAX];
};

struct trove__history;
struct pss;

/* A viewer, owned by the web thread; its queues are shared with the pass and history. */
struct trove__view {
    struct trove__view *next; /* srv->views */
    uint64_t id;
    struct pss *ps;           /* its connection (web_api.h), web thread only */
    char peer[TROVE__PEER_MAX];
    int wire;
    int attrs;                /* attrs=1: the batches' attrs frames too */
    int from_start;
    int waited;               /* came before the capture started: gets all of the session */
    int replay;               /* GET /api/replay: a stored capture, then the end */
    char name[TROVE_VOLUME_NAME_MAX + 1];
    struct trove__cap *cap;   /* NULL until the capture exists */
    struct trove__viewer *fv; /* the fan-out's queue, once joined */
    uint64_t live_from;       /* the capture's index of the first event fv queued */
    int catchups;             /* catch-up rounds taken (trove__view_catch_up) */
    struct trove__history *hist;
    int hello_sent, end_sent, closing;
    uint64_t end_events;
    uint64_t sent_events, sent_bytes; /* history included */
    char error[TROVE__ERROR_MAX];
};

/* A change to the store the API asks for, done by the store thread (the only one with a
 * writable handle) between its rounds. */
/* A job of the store thread: a delete or an import an API request asked for (answered), or
 * summaries a query found missing (INDEX: nobody waits for it). */
enum trove__job_kind { TROVE__JOB_DELETE = 1, TROVE__JOB_IMPORT, TROVE__JOB_INDEX };

struct trove__job {
    atomic_int refs;       /* the queue's (until done) and the answer's */
    struct trove__job *next;
    int kind;
    char name[TROVE_VOLUME_NAME_MAX + 1];
    int append;
    char path[64];         /* import: the body, in an unlinked temp file: /proc/self/fd/N */
    int fd;                /* that file (-1: none) */
    struct trove__job *held_next; /* the web thread's list of jobs holding an upload slot */
    /* the answer */
    atomic_int done;
    int status;            /* 0, or the HTTP status of the failure */
    char err[TROVE__ERROR_MAX];
    struct trove_import_result res;
    struct trove_warnings warnings; /* import: what the input carried that was not kept, ... */
};

struct trove__server {
    struct trove_serve_options opt;
    char socket_path[4096];
    char url[128];
    uint32_t commit_ms, pass_ms;
    size_t max_queue;
    struct trove_store *store;  /* the store thread's */
    struct trove__flows_cache flows; /* the query threads' */
    uint64_t start_ns;
    pthread_mutex_t mu;
    pthread_cond_t store_cv;    /* the pass wakes the store thread */
    struct trove__cap *caps;
    struct trove__prod *prods;
    struct trove__view *views;
    struct trove__job *jobs, *jobs_tail; /* for the store thread, in order */
    int jobs_closed;            /* the store thread runs no more jobs: none is queued (mu) */
    uint64_t next_id;
    uint64_t next_session;
    uint64_t producers_total, producers_refused, viewers_total;
    atomic_int stopping;        /* 1: stop taking data; 2: the store is done */
    atomic_int pass_done, store_done;
    void *web;                  /* struct web * (web.c's) */
    atomic_int wake_fd;         /* the web thread's eventfd (-1: none) */
    char listen_addr[80];       /* the bound addresses, "ADDR:PORT", for /api/status */
    char ingest_addr[80];       /* "" without --ingest */
    const char *token;          /* the API's token (web.c's), or NULL */
    size_t token_len;
    int stop_fd[2];             /* the stop request's self-pipe (serve.c's, the process's) */
    /* Producers closed with a refusal or an error, their sending side shut and what they
     * still send read and dropped for TROVE__LINGER_PRODUCER_NS, so that the close resets
     * nothing and the line that says why arrives (the ingest thread's). */
    int linger_fd[TROVE__LINGER_PRODUCERS];
    uint64_t linger_until[TROVE__LINGER_PRODUCERS];
    size_t nlinger;
    int listen_fds[2];          /* the unix socket, the TCP ingest (or -1) */
};

/* live.c */
void trove__job_release(struct trove__job *j);
/* Queue j for the store thread (taking over the caller's reference for the queue): 0, or -1
 * when the store thread is done with jobs (the service stops; j is untouched). */
int trove__job_submit(struct trove__server *srv, struct trove__job *j);
/* Join the newest capture of that name as a producer or a viewer (a reference, and *state
 * its state then). A producer starts a new session when that one is over (its viewers stay
 * with the old) and opens a waiting one (append: continuing the stored capture); one of the
 * name is made (WAITING) if there is none. It is counted in the table's lock, so that
 * trove__caps_sweep never drops it between being found and being counted. */
struct trove__cap *trove__cap_join(struct trove__server *srv, const char *name, int producer,
                                   int append, int *state);
/* As trove__cap_join for a producer; *opener (not NULL) is 1 when this producer's hello
 * started the session (the capture was WAITING: it is OPENING now), else 0. */
struct trove__cap *trove__cap_join_producer(struct trove__server *srv, const char *name,
                                            int append, int *opener);
/* Every capture of the table, each with a reference (the caller holds srv->mu); *n of
 * them. NULL (and 0) when out of memory: the caller tries again on its next round. */
struct trove__cap **trove__caps_snapshot(struct trove__server *srv, size_t *n);
/* Drop from the table the captures nobody needs: ended or failed, no viewer, and not the
 * newest of its name unless it has no one at all; waiting ones nobody waits for. */
void trove__caps_sweep(struct trove__server *srv);
void trove__log(struct trove__server *srv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
uint64_t trove__now_ns(void);
void trove__wake_web(struct trove__server *srv);
/* history.c: a from=start viewer joined v->cap: start its history thread. */
int trove__history_start(struct trove__server *srv, struct trove__view *v);
/* The history's next frame for the web thread: 1 and *fb (released by the caller), 0 when
 * none is queued now, -1 when the history is over (the viewer is live). */
int trove__history_next(struct trove__view *v, struct trove__frame_buf **fb);
void trove__history_stop(struct trove__view *v);
/* GET /api/replay: v gets stored capture `name`'s events in [from_ns, to_ns), with its
 * names frames, paced at `speed` times their own clock (0: as fast as v takes them). */
int trove__history_replay(struct trove__server *srv, struct trove__view *v, const char *name,
                          uint64_t from_ns, uint64_t to_ns, double speed);
/* Join v to its capture's fan-out (and start its history). Under nothing; takes locks. */
int trove__view_join(struct trove__server *srv, struct trove__view *v);
/* v's history is over and its fan-out queue dropped frames meanwhile: rather than tell it
 * of a gap, replay what it missed — the events from v->live_from on, from the store and
 * the uncommitted batches — with a new queue taken at the same instant, under the
 * capture's lock, as a join does. Stops the old history first. Web thread; takes locks. */
int trove__view_catch_up(struct trove__server *srv, struct trove__view *v);

void trove__prod_free(struct trove__prod *p);
/* "ADDR:PORT" (IPv4, or [IPv6]) into a socket address. TROVE_ERR_INVALID if it is not. */
int trove__parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);
/* Is the address loopback (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104)? A wildcard (0.0.0.0,
 * ::)? */
int trove__addr_loopback(const struct sockaddr_storage *ss);
int trove__addr_wildcard(const struct sockaddr_storage *ss);
/* "ADDR:PORT" ("[ADDR]:PORT" for IPv6) of ss into out. */
void trove__addr_format(const struct sockaddr_storage *ss, char *out, size_t cap);
/* A listening TCP socket (non-blocking, close-on-exec) bound to exactly ss — an IPv6 one
 * to IPv6 only, so that [::1] never takes IPv4 too — and its bound address back in *ss (the
 * port chosen for port 0). The socket, or -errno. */
int trove__listen_tcp(struct sockaddr_storage *ss, socklen_t len, int backlog);

/* The threads' bodies (arg: the server): pass.c, store_thread.c */
void *trove__pass_main(void *arg);
void *trove__store_main(void *arg);

/* ingest.c */
int trove__ingest_open(struct trove__server *srv, struct trove_diag *diag);
void *trove__ingest_main(void *arg);

/* web.c */
int trove__web_open(struct trove__server *srv, struct trove_diag *diag);
void trove__web_run(struct trove__server *srv);
void trove__web_close(struct trove__server *srv);

/* viewer.c, for its fuzz target: what a service sends a viewer (data[0..len): the upgrade
 * response head, its blank line, then frames), checked against the request's key64 and
 * parsed into opt's callbacks; reply_fd gets the pongs and close answers. TROVE_OK (closed
 * or stopped), TROVE_ERR_TRUNCATED (the bytes end), or the client's error. */
int trove__live_view_bytes(const struct trove_live_view_options *opt, const uint8_t *data,
                           size_t len, const char *key64, int reply_fd, struct trove_diag *diag);

/* status.c: the bodies of GET /api/status, /metrics and / (malloc'd, NUL-terminated). */
int trove__status_json(struct trove__server *srv, struct trove_bytes *out);
int trove__status_metrics(struct trove__server *srv, struct trove_bytes *out);
int trove__status_html(struct trove__server *srv, struct trove_bytes *out);

#endif
