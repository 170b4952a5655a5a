/*
 * client.c: the instrumentation library's runtime. Each thread that records owns a ring of
 * 32-byte records (the wire's raw event layout, trove/event.h) with one producer, the
 * thread, and one consumer, the flush thread; head and tail are C11 atomics, so the thread
 * publishes a record with one release store and never waits. The flush thread wakes every
 * millisecond while events flow (every 4 ms after a round that found none), and for each
 * ring: takes the records published since the last round, then the event names interned
 * since it last sent names (an event in a ring was written after its name was interned, so
 * the names it needs are in that snapshot), and writes a names frame and then raw frames of
 * at most 2,048 events to the service's unix socket, straight from the ring.
 *
 * Invariants:
 *   - tail <= head <= tail + cap on every ring; only the thread writes head and the fields
 *     of the records in [head, tail + cap); only the flush thread (or start/stop, while no
 *     flush thread runs) writes tail.
 *   - A name id is never 0, never reused, and never changes its string; 0 marks a zone
 *     opened while not recording (its end records nothing).
 *   - Thread states are freed only by the flush thread or stop, and only after the thread
 *     has exited (the pthread key's destructor marked it retired) and its ring is empty or
 *     abandoned; a live thread's state lives as long as the process.
 *
 * The service answers the hello with a line (docs/serve.md, "Producers"): until it has come,
 * each round reads what the socket holds without waiting. An accept ends the reading; a
 * refuse makes the connection one that never was (the service took nothing past the hello):
 * it is dropped, the events written on it count as lost rather than sent, and the next try
 * comes as it would for a service that is not there. The events go on flowing meanwhile, as
 * they do to a service that never answers.
 *
 * Accounting: every event a thread records (pushed into its ring, or dropped because the
 * ring was full) is counted once as recorded, and ends as exactly one of sent (in a raw frame
 * the socket took whole), dropped (a full ring; a frame the broken connection cut; a refused
 * connection's; an exited thread's ring given up while no service reads it; what is left in
 * the rings when stop finds no service) or pending (still in a ring). The flush thread moves
 * a ring's tail and the sent/lost totals together under reg_lock, and the stats are read
 * under it: events == sent + dropped + pending in every snapshot, and pending == 0 once stop
 * has returned (its figures are then frozen).
 *
 * Not recording (before start, after stop, or while disconnected in on-demand mode) costs
 * one relaxed load per event.
 */
#define _GNU_SOURCE
#include "trove/client.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#endif

#include "client_internal.h"

#define RING_DEFAULT 65536u
#define RING_MIN 1024u
#define FLUSH_BUSY_NS 1000000L /* between rounds while events flow, */
#define FLUSH_IDLE_NS 4000000L /* and after a round that found none */
#define RECONNECT_NS 100000000ull
#define CALIBRATE_NS 50000000ull /* the TSC is timed against CLOCK_MONOTONIC this long at least
                                    before the first hello gives its rate */
#define SEND_TIMEOUT_S 10
#define RETIRED_BYTES_MAX ((uint64_t)32 << 20) /* exited threads' unsent rings kept at most;
                                                  past it the oldest are given up (dropped) */

/* Global state. reg_lock guards the thread list, the names table, the thread names and the
 * accounting (the tails' moves with st_sent and st_lost, the retired totals, the frozen
 * stats). */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct thread *threads;
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static _Thread_local struct thread *tls __attribute__((tls_model("initial-exec")));

static struct {
    char **str;    /* id i+1 -> its string (sanitized copy) */
    uint32_t *len;
    size_t n, cap;
    const char **slot_ptr; /* open addressing: address -> id */
    uint32_t *slot_id;
    size_t slots;
    size_t sent; /* names [0, sent) are on the current connection */
} names;

static _Atomic int recording;
static _Atomic uint32_t run_gen; /* a start's number: frame sets of an earlier run begin anew */
static _Atomic int use_tsc; /* the records hold TSC ticks (fixed while recording) */
static _Atomic uint64_t tsc_hz_now; /* the last hello's calibration, for the stats */
static _Atomic int connected_now;
static _Atomic uint64_t st_bytes, st_connects;
/* Under reg_lock: events sent and lost out of the rings (their tails' moves: the sum of every
 * ring's tail - base_head), and the totals of the threads freed since start. */
static uint64_t st_sent, st_lost, retired_events, retired_dropped, retired_attrs_dropped;
/* Under reg_lock: the figures stop left (or zeros before a start, in a fork()ed child); what
 * trove_client_stats says while stats_frozen. */
static struct trove_client_stats frozen;
static int stats_frozen = 1;

static struct {
    int running, atexit_done;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
    char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char capture[TROVE__CLIENT_CAPTURE_MAX + 1];
    char process[THREAD_NAME_MAX]; /* the process's name in the capture */
    size_t process_len;
    size_t ring_events;
    int on_demand;
    uint32_t pid;
    int fd;
    int sent_events; /* the capture has events in the service: a reconnect appends */
    int sent_before; /* sent_events when this connection was made */
    int answered;    /* the service's answer to this connection's hello came */
    uint64_t conn_sent; /* events written on this connection */
    size_t in_len;   /* bytes of an unfinished answer line in `in` */
    char in[TROVE__CLIENT_ANSWER_MAX];
    uint64_t cal_tsc, cal_ns; /* the TSC and CLOCK_MONOTONIC read together at start */
    uint64_t gap_sent;        /* the drop total the last gap counter said */
} cl = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .fd = -1};


/* The clock of the records: ticks of the TSC, or nanoseconds of CLOCK_MONOTONIC. */
static inline uint64_t stamp(void)
{
#ifdef HAVE_TSC
    if (atomic_load_explicit(&use_tsc, memory_order_relaxed))
        return __rdtsc();
#endif
    return now_ns();
}

/* ---- threads ---- */

static void thread_exit(void *p)
{
    struct thread *t = p;
    tls = NULL;
    atomic_store_explicit(&t->retired, 1, memory_order_release);
}

static void make_key(void)
{
    if (pthread_key_create(&thread_key, thread_exit) != 0)
        abort(); /* only EAGAIN/ENOMEM: nothing sensible is left to do */
}

/* The calling thread's state, registered on its first event; NULL if out of memory. */
static struct thread *thread_get(void)
{
    struct thread *t = tls;
    if (t)
        return t;
    pthread_once(&key_once, make_key);
    size_t cap = cl.ring_events ? cl.ring_events : RING_DEFAULT;
    t = aligned_alloc(64, (sizeof *t + 63) & ~(size_t)63);
    if (!t)
        return NULL;
    memset(t, 0, sizeof *t);
    t->ring = aligned_alloc(64, cap * sizeof *t->ring);
    if (!t->ring) {
        free(t);
        return NULL;
    }
    memset(t->ring, 0, cap * sizeof *t->ring); /* fault the pages in now, not on the hot path */
    t->mask = cap - 1;
    t->text_max = (cap / 4 - 1) * 32 < AUX_TEXT_MAX ? (cap / 4 - 1) * 32 : AUX_TEXT_MAX;
    t->pid = (uint32_t)getpid();
    t->tid = (uint32_t)syscall(SYS_gettid);
    pthread_mutex_lock(&reg_lock);
    t->next = threads;
    threads = t;
    pthread_mutex_unlock(&reg_lock);
    pthread_setspecific(thread_key, t);
    tls = t;
    return t;
}

/* ---- names ---- */

static size_t hash_ptr(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static int names_grow(void)
{
    if (names.n == names.cap) {
        size_t cap = names.cap ? names.cap * 2 : 256;
        char **s = realloc(names.str, cap * sizeof *s);
        if (!s)
            return -1;
        names.str = s;
        uint32_t *l = realloc(names.len, cap * sizeof *l);
        if (!l)
            return -1;
        names.len = l;
        names.cap = cap;
    }
    if ((names.n + 1) * 2 > names.slots) {
        size_t slots = names.slots ? names.slots * 2 : 512;
        const char **sp = calloc(slots, sizeof *sp);
        uint32_t *si = calloc(slots, sizeof *si);
        if (!sp || !si) {
            free(sp);
            free(si);
            return -1;
        }
        for (size_t i = 0; i < names.slots; i++) {
            if (!names.slot_ptr[i])
                continue;
            size_t j = hash_ptr(names.slot_ptr[i]) & (slots - 1);
            while (sp[j])
                j = (j + 1) & (slots - 1);
            sp[j] = names.slot_ptr[i];
            si[j] = names.slot_id[i];
        }
        free(names.slot_ptr);
        free(names.slot_id);
        names.slot_ptr = sp;
        names.slot_id = si;
        names.slots = slots;
    }
    return 0;
}

/* The id of the name at this address, interned on first use; 0 if out of memory. */
static uint32_t intern(const char *name)
{
    uint32_t id = 0;
    pthread_mutex_lock(&reg_lock);
    if (names.slots) {
        size_t j = hash_ptr(name) & (names.slots - 1);
        while (names.slot_ptr[j] && names.slot_ptr[j] != name)
            j = (j + 1) & (names.slots - 1);
        if (names.slot_ptr[j]) {
            id = names.slot_id[j];
            goto out;
        }
    }
    if (names_grow() != 0)
        goto out;
    size_t len = strlen(name);
    size_t cap = (len < TROVE__CLIENT_NAME_MAX ? len : TROVE__CLIENT_NAME_MAX) + 1;
    char *copy = malloc(cap);
    if (!copy)
        goto out;
    names.len[names.n] = (uint32_t)trove__client_sanitize(copy, cap, name, len);
    names.str[names.n] = copy;
    id = (uint32_t)++names.n;
    size_t j = hash_ptr(name) & (names.slots - 1);
    while (names.slot_ptr[j])
        j = (j + 1) & (names.slots - 1);
    names.slot_ptr[j] = name;
    names.slot_id[j] = id;
out:
    pthread_mutex_unlock(&reg_lock);
    return id;
}

static inline uint32_t name_id(struct thread *t, const char *name)
{
    size_t s = ((uintptr_t)name >> 3 ^ (uintptr_t)name >> 11) & (CACHE_SLOTS - 1);
    if (t->cache[s].ptr == name)
        return t->cache[s].id;
    uint32_t id = intern(name);
    if (id) {
        t->cache[s].ptr = name;
        t->cache[s].id = id;
    }
    return id;
}

/* ---- the hot path ---- */

static inline void push_x(struct thread *t, uint64_t start, uint64_t dur, uint8_t kind,
                          uint8_t depth, uint8_t extra, uint32_t id, uint32_t tid)
{
    uint64_t h = atomic_load_explicit(&t->head, memory_order_relaxed);
    if (h - t->tail_seen > t->mask) {
        t->tail_seen = atomic_load_explicit(&t->tail, memory_order_acquire);
        if (h - t->tail_seen > t->mask) {
            atomic_store_explicit(&t->dropped,
                                  atomic_load_explicit(&t->dropped, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            return;
        }
    }
    struct trove_event *r = &t->ring[h & t->mask];
    r->start_ns = start;
    r->dur_ns = dur;
    r->pid = t->pid;
    r->tid = tid;
    r->kind = kind;
    r->depth = depth;
    r->extra = extra;
    r->pad = 0;
    r->name_id = id;
    atomic_store_explicit(&t->head, h + 1, memory_order_release);
}

static inline void push(struct thread *t, uint64_t start, uint64_t dur, uint8_t kind,
                        uint8_t depth, uint32_t id)
{
    push_x(t, start, dur, kind, depth, 0, id, t->tid);
}

/* An aux record and its text's slots, published together; 0 when the ring had no room. The
 * text is cut to what a quarter of the ring holds (t->text_max). */
static inline int push_aux(struct thread *t, uint8_t kind, uint8_t depth, uint64_t start,
                           uint64_t dur, uint32_t id, const char *text, size_t len)
{
    uint64_t cap = t->mask + 1, h = atomic_load_explicit(&t->head, memory_order_relaxed);
    if (len > t->text_max)
        len = t->text_max;
    uint64_t need = 1 + ((len + 31) >> 5);
    if (h + need - t->tail_seen > cap) {
        t->tail_seen = atomic_load_explicit(&t->tail, memory_order_acquire);
        if (h + need - t->tail_seen > cap)
            return 0;
    }
    *(&t->ring[h & t->mask]) = (struct trove_event){.start_ns = start,
                                                   .dur_ns = dur,
                                                   .pid = (uint32_t)len,
                                                   .kind = kind,
                                                   .depth = depth,
                                                   .name_id = id};
    if (!atomic_load_explicit(&t->aux_used, memory_order_relaxed))
        atomic_store_explicit(&t->aux_used, 1, memory_order_relaxed); /* before head's release */
    if (len) { /* the text's slots, in one piece or two where the ring wraps */
        uint64_t at = (h + 1) & t->mask;
        size_t room = (size_t)(cap - at) * sizeof *t->ring;
        if (len <= room) {
            memcpy(&t->ring[at], text, len);
        } else {
            memcpy(&t->ring[at], text, room);
            memcpy(&t->ring[0], text + room, len - room);
        }
    }
    atomic_store_explicit(&t->head, h + need, memory_order_release);
    return 1;
}

int trove_client_zone_begin(const char *name)
{
    struct thread *t = tls;
    uint32_t id = 0;
    if (atomic_load_explicit(&recording, memory_order_relaxed)) {
        if (!t && !(t = thread_get()))
            return 0;
        id = name_id(t, name);
    } else if (!t)
        return 0;
    if (t->depth < DEPTH_MAX) {
        t->stack[t->depth].name_id = id;
        t->stack[t->depth].start_ns = id ? stamp() : 0;
    }
    t->depth++;
    return 1;
}

void trove_client_zone_end(void)
{
    struct thread *t = tls;
    if (!t || !t->depth)
        return;
    unsigned d = --t->depth;
    if (d >= DEPTH_MAX)
        return;
    struct open_zone *z = &t->stack[d];
    if (!z->name_id || !atomic_load_explicit(&recording, memory_order_relaxed))
        return;
    uint64_t end = stamp();
    push(t, z->start_ns, end - z->start_ns, TROVE_KIND_ZONE, (uint8_t)d, z->name_id);
}

void trove_client_zone_cleanup(int *opened)
{
    if (*opened)
        trove_client_zone_end();
}

void trove_client_instant(const char *name)
{
    struct thread *t;
    if (!atomic_load_explicit(&recording, memory_order_relaxed) || !(t = thread_get()))
        return;
    uint32_t id = name_id(t, name);
    if (id)
        push(t, stamp(), 0, TROVE_KIND_INSTANT,
             (uint8_t)(t->depth < DEPTH_MAX ? t->depth : DEPTH_MAX), id);
}

void trove_client_counter(const char *name, double value)
{
    struct thread *t;
    uint64_t bits;
    if (!atomic_load_explicit(&recording, memory_order_relaxed) || !(t = thread_get()))
        return;
    uint32_t id = name_id(t, name);
    memcpy(&bits, &value, sizeof bits);
    if (id)
        push(t, stamp(), bits, TROVE_KIND_COUNTER, 0, id);
}

/* The innermost zone open on t, if it is recorded: its depth, else -1. */
static int open_zone(const struct thread *t)
{
    if (!t || !t->depth || t->depth > DEPTH_MAX ||
        !atomic_load_explicit(&recording, memory_order_relaxed))
        return -1;
    return t->stack[t->depth - 1].name_id ? (int)t->depth - 1 : -1;
}

void trove_client_zone_text(const char *text, size_t len)
{
    struct thread *t = tls;
    int d = open_zone(t);
    if (d < 0 || (!text && len))
        return;
    if (!push_aux(t, AUX_TEXT, (uint8_t)d, t->stack[d].start_ns, 0, 0, text, len))
        atomic_store_explicit(&t->attrs_dropped,
                              atomic_load_explicit(&t->attrs_dropped, memory_order_relaxed) + 1,
                              memory_order_relaxed);
}

void trove_client_zone_value(uint64_t value)
{
    struct thread *t = tls;
    int d = open_zone(t);
    if (d < 0)
        return;
    if (!push_aux(t, AUX_VALUE, (uint8_t)d, t->stack[d].start_ns, value, 0, NULL, 0))
        atomic_store_explicit(&t->attrs_dropped,
                              atomic_load_explicit(&t->attrs_dropped, memory_order_relaxed) + 1,
                              memory_order_relaxed);
}

/* Frame sets' tracks (under reg_lock): a set's frames go on a track of their own in the
 * process, a synthetic tid (trove/event.h: TROVE_TID_SYNTHETIC's range, from its top down)
 * named "frames" (the default set) or "frames: SET". */
#define FRAME_TRACKS 64u
#define FRAME_TID_TOP 0xFEFFFFFFu
static struct {
    uint32_t id[FRAME_TRACKS];
    char name[FRAME_TRACKS][THREAD_NAME_MAX];
    size_t len[FRAME_TRACKS];
    size_t n, sent; /* sets; their names on the current connection */
} fsets;

/* The track of frame set `id` (name: its name, or NULL for the default): its tid, or 0 when
 * FRAME_TRACKS sets have them all (its frames then go on the marking thread). */
static uint32_t frame_track(uint32_t id, const char *name)
{
    uint32_t tid = 0;
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < fsets.n && !tid; i++)
        if (fsets.id[i] == id)
            tid = FRAME_TID_TOP - (uint32_t)i;
    if (!tid && fsets.n < FRAME_TRACKS) {
        char full[THREAD_NAME_MAX + 16];
        int n = name ? snprintf(full, sizeof full, "frames: %s", name)
                     : snprintf(full, sizeof full, "frames");
        fsets.len[fsets.n] = trove__client_sanitize(fsets.name[fsets.n], THREAD_NAME_MAX, full,
                                                    n < (int)sizeof full ? (size_t)n : sizeof full - 1);
        fsets.id[fsets.n] = id;
        tid = FRAME_TID_TOP - (uint32_t)fsets.n++;
    }
    pthread_mutex_unlock(&reg_lock);
    return tid;
}

static const char message_name[] = "message";
static const char frame_name[] = "frame";

void trove_client_message(const char *text, size_t len)
{
    struct thread *t;
    uint32_t id;
    if (!atomic_load_explicit(&recording, memory_order_relaxed) || !(t = thread_get()) ||
        (!text && len) || !(id = name_id(t, message_name)))
        return;
    if (!push_aux(t, AUX_MESSAGE, (uint8_t)(t->depth < DEPTH_MAX ? t->depth : DEPTH_MAX),
                  stamp(), 0, id, text, len))
        atomic_store_explicit(&t->dropped,
                              atomic_load_explicit(&t->dropped, memory_order_relaxed) + 1,
                              memory_order_relaxed);
}

void trove_client_messagef(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    int n;
    if (!atomic_load_explicit(&recording, memory_order_relaxed) || !fmt)
        return;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n >= 0)
        trove_client_message(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

void trove_client_frame_mark(const char *name)
{
    struct thread *t;
    uint32_t id;
    if (!atomic_load_explicit(&recording, memory_order_relaxed) || !(t = thread_get()) ||
        !(id = name_id(t, name ? name : frame_name)))
        return;
    uint64_t now = stamp();
    uint32_t gen = atomic_load_explicit(&run_gen, memory_order_relaxed);
    unsigned s = id & (FRAME_SETS - 1);
    if (t->frames[s].id == id && t->frames[s].gen == gen) {
        push_x(t, t->frames[s].last, now - t->frames[s].last, TROVE_KIND_FRAME, 0,
               TROVE_FRAME_MARKS, id, t->frames[s].tid);
    } else { /* a set's first mark on this thread (in this run): its track, once */
        uint32_t tid = frame_track(id, name);
        t->frames[s].tid = tid ? tid : t->tid;
    }
    t->frames[s].id = id;
    t->frames[s].gen = gen;
    t->frames[s].last = now;
}

void trove_client_thread_name(const char *name)
{
    struct thread *t = thread_get();
    if (!t || !name)
        return;
    pthread_mutex_lock(&reg_lock);
    t->name_len = (int)trove__client_sanitize(t->name, sizeof t->name, name, strlen(name));
    t->name_unsent = 1;
    pthread_mutex_unlock(&reg_lock);
}

/* ---- the flush thread ---- */

static void disconnect(void)
{
    if (cl.fd >= 0)
        close(cl.fd);
    cl.fd = -1;
    atomic_store(&connected_now, 0);
    if (cl.on_demand)
        atomic_store(&recording, 0);
}

static void broken(void);

/* Write all of b (a hello, a names frame, the gap's counter: no ring's events) to the
 * service; on an error, drop the connection. */
static void send_buf(struct trove__client_buf *b)
{
    size_t off = 0;
    if (b->failed) {
        b->failed = 0;
        b->len = 0;
        return;
    }
    while (off < b->len && cl.fd >= 0) {
        ssize_t n = send(cl.fd, b->ptr + off, b->len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            broken();
            break;
        }
        off += (size_t)n;
        atomic_fetch_add(&st_bytes, (uint64_t)n);
    }
    b->len = 0;
}

static void try_connect(struct trove__client_buf *b)
{
    struct sockaddr_un a;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, cl.socket_path, strlen(cl.socket_path) + 1);
    struct timeval tv = {SEND_TIMEOUT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return;
    }
    cl.fd = fd;
    cl.sent_before = cl.sent_events;
    cl.answered = 0;
    cl.conn_sent = 0;
    cl.in_len = 0;
    b->len = 0;
    uint64_t hz = 0, tsc = 0, ns = 0;
    if (atomic_load(&use_tsc)) { /* the rate over all the time since start */
        trove__client_clock_pair(&tsc, &ns);
        if (ns > cl.cal_ns && tsc > cl.cal_tsc)
            hz = (uint64_t)((unsigned __int128)(tsc - cl.cal_tsc) * 1000000000u /
                            (ns - cl.cal_ns));
        if (hz < TROVE__CLIENT_TSC_HZ_MIN)
            hz = TROVE__CLIENT_TSC_HZ_MIN; /* a broken TSC: wrong times, still a valid hello */
        atomic_store(&tsc_hz_now, hz);
    }
    trove__client_hello(b, cl.capture, cl.pid, cl.sent_events, hz, tsc, ns);
    send_buf(b);
    if (cl.fd < 0)
        return;
    atomic_fetch_add(&st_connects, 1);
    /* A new connection is a new stream: every name goes out again. */
    pthread_mutex_lock(&reg_lock);
    names.sent = 0;
    fsets.sent = 0;
    for (struct thread *t = threads; t; t = t->next)
        t->name_unsent = t->name_len > 0;
    pthread_mutex_unlock(&reg_lock);
    atomic_store(&connected_now, 1);
    if (cl.on_demand)
        atomic_store(&recording, 1);
}

/* Names not yet on this connection, as one names frame appended to b. */
static void append_names(struct trove__client_buf *b, struct thread *t, int process)
{
    struct trove__client_names nf;
    trove__client_names_begin(b, &nf);
    pthread_mutex_lock(&reg_lock);
    if (process && cl.process_len)
        trove__client_names_add(b, &nf, TROVE_NAME_PROCESS, cl.pid, 0, cl.process,
                                cl.process_len);
    for (; names.sent < names.n; names.sent++)
        trove__client_names_add(b, &nf, TROVE_NAME_EVENT, (uint32_t)names.sent + 1, 0,
                                names.str[names.sent], names.len[names.sent]);
    for (; fsets.sent < fsets.n; fsets.sent++)
        trove__client_names_add(b, &nf, TROVE_NAME_THREAD, cl.pid,
                                FRAME_TID_TOP - (uint32_t)fsets.sent, fsets.name[fsets.sent],
                                fsets.len[fsets.sent]);
    if (t && t->name_unsent) {
        trove__client_names_add(b, &nf, TROVE_NAME_THREAD, t->pid, t->tid, t->name,
                                (size_t)t->name_len);
        t->name_unsent = 0;
    }
    pthread_mutex_unlock(&reg_lock);
    trove__client_names_end(b, &nf);
}

/* Write iov[0..n) (bytes in all) to the service, however the socket cuts it; on an error,
 * drop the connection. The bytes the socket took. */
static size_t send_iov(struct iovec *iov, int n, size_t bytes)
{
    size_t off = 0;
    int i = 0;
    while (off < bytes && cl.fd >= 0) {
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = iov + i;
        m.msg_iovlen = (size_t)(n - i);
        ssize_t w = sendmsg(cl.fd, &m, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            broken();
            break;
        }
        off += (size_t)w;
        atomic_fetch_add(&st_bytes, (uint64_t)w);
        while (i < n && (size_t)w >= iov[i].iov_len) /* skip what went, trim what half went */
            w -= (ssize_t)iov[i++].iov_len;
        if (i < n) {
            iov[i].iov_base = (uint8_t *)iov[i].iov_base + w;
            iov[i].iov_len -= (size_t)w;
        }
    }
    return off;
}

#define IOV_FRAMES 256 /* frames per sendmsg */
#define IOV_USE 1000   /* iov entries per sendmsg (IOV_MAX is 1024) */

/* The flush thread's scratch for a drain: the attrs frames, the events of messages, the
 * rows of the frame being built. */
static struct {
    struct trove__client_buf ab, mb;
    struct trove__client_attrs at;
} fs;

/* Where an iov entry's bytes are until the send: in the ring (ptr), or at off in the
 * headers (1), the attrs frames (2) or the messages' events (3), which may still move. */
struct piece {
    int buf;
    size_t off, len;
    const void *ptr;
};

/* Send what t's ring holds (at most one ring's worth: the snapshot of head): the names
 * first, then raw frames whose records the socket reads where the thread wrote them, each
 * after the attrs frame of its events' texts, values and messages' texts when they have
 * some; their slots are given back once they are sent. A message becomes an instant written
 * into a buffer of the flush thread's; a text or value waits in t->pend for its zone. A frame
 * the socket took whole is sent; one a broken connection cut (and every one after it) is
 * lost: the service drops a frame it has not got all of. */
static void drain(struct thread *t, struct trove__client_buf *hdr, struct trove__client_buf *nb)
{
    uint64_t tail = atomic_load_explicit(&t->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&t->head, memory_order_acquire);
    /* no text, value or message ever: no record needs reading (the flag is set before the
     * head that publishes the first such record, so this head's records are all events) */
    const int aux = atomic_load_explicit(&t->aux_used, memory_order_relaxed);
    const uint64_t cap = t->mask + 1;
    static struct iovec iov[IOV_USE];
    static struct piece pc[IOV_USE];
    size_t frame_end[IOV_FRAMES];
    uint32_t frame_n[IOV_FRAMES];

    nb->len = 0;
    append_names(nb, t, 0);
    send_buf(nb);
    while (tail != head && cl.fd >= 0) {
        uint64_t at = tail, sent = 0, all = 0, lost = 0;
        size_t bytes = 0, took;
        int np = 0, nf = 0, niov = 0;
        hdr->len = 0;
        fs.ab.len = fs.mb.len = 0;
        fs.ab.failed = fs.mb.failed = 0;
        if (!trove__client_buf_reserve(hdr, IOV_FRAMES * TROVE_WIRE_HEADER_SIZE)) {
            hdr->failed = 0;
            return; /* out of memory: the events wait in the ring for the next round */
        }
        while (nf < IOV_FRAMES && at != head && np + 4 <= IOV_USE) {
            uint32_t n = 0;
            int pa = np++, ph = np++; /* the attrs frame's piece, the header's */
            size_t off;
            if (aux)
                trove__client_attrs_reset(&fs.at);
            if (!aux) { /* events only: the frame is the ring's next records as they are */
                uint64_t i0 = at & t->mask;
                n = (uint32_t)(head - at < TROVE_BATCH_DEFAULT ? head - at : TROVE_BATCH_DEFAULT);
                uint64_t first = cap - i0 < n ? cap - i0 : n;
                pc[np++] = (struct piece){0, 0, (size_t)first * sizeof(struct trove_event), &t->ring[i0]};
                if (n > first)
                    pc[np++] = (struct piece){0, 0, (size_t)(n - first) * sizeof(struct trove_event),
                                              &t->ring[0]};
                at += n;
            }
            while (aux && at != head && n < TROVE_BATCH_DEFAULT && np + 1 < IOV_USE &&
                   fs.at.str.len < ATTRS_FRAME_MAX) {
                const struct trove_event *r = &t->ring[at & t->mask];
                if (r->kind < AUX_TEXT) {
                    struct piece *last = &pc[np - 1];
                    if (r->kind == TROVE_KIND_ZONE && t->npend)
                        trove__client_attach(t, r, n, &fs.at);
                    if (np - 1 > ph && !last->buf &&
                        (const uint8_t *)last->ptr + last->len == (const uint8_t *)r)
                        last->len += sizeof *r;
                    else
                        pc[np++] = (struct piece){0, 0, sizeof *r, r};
                    n++;
                } else if (r->kind == AUX_MESSAGE) {
                    if (trove__client_message(t, r, at, n, &fs.mb, &off, &fs.at)) {
                        pc[np++] = (struct piece){3, off, sizeof *r, NULL};
                        n++;
                    } else {
                        lost++;
                    }
                } else {
                    trove__client_pend_add(t, r, at);
                }
                at += record_slots(r);
            }
            if (n == 0) { /* texts and values only: no frame */
                np = pa;
                continue;
            }
            off = fs.ab.len;
            if (aux)
                trove__client_attrs_frame(&fs.at, &fs.ab);
            if (fs.ab.failed) { /* out of memory: the frame goes without its attributes */
                fs.ab.failed = 0;
                fs.ab.len = off;
            }
            pc[pa] = (struct piece){2, off, fs.ab.len - off, NULL};
            pc[ph] = (struct piece){1, hdr->len, TROVE_WIRE_HEADER_SIZE, NULL};
            trove__client_raw_header(hdr, n); /* within the room reserved */
            bytes += pc[pa].len + TROVE_WIRE_HEADER_SIZE + (size_t)n * sizeof(struct trove_event);
            frame_end[nf] = bytes;
            frame_n[nf++] = n;
            all += n;
        }
        for (int i = 0; i < np; i++) {
            const uint8_t *base = pc[i].buf == 0 ? pc[i].ptr
                                  : pc[i].buf == 1 ? hdr->ptr
                                  : pc[i].buf == 2 ? fs.ab.ptr
                                                   : fs.mb.ptr;
            if (pc[i].len)
                iov[niov++] = (struct iovec){(void *)(base + pc[i].off), pc[i].len};
        }
        took = niov ? send_iov(iov, niov, bytes) : 0;
        for (int f = 0; f < nf && frame_end[f] <= took; f++)
            sent += frame_n[f];
        /* The records are out (or lost): the thread may reuse their slots. The tail and the
         * totals move together, so that a snapshot of the stats always adds up. */
        pthread_mutex_lock(&reg_lock);
        st_sent += sent;
        st_lost += all - sent + lost;
        t->taken += all + lost;
        tail = at;
        atomic_store_explicit(&t->tail, tail, memory_order_release);
        pthread_mutex_unlock(&reg_lock);
        cl.conn_sent += sent;
        if (sent)
            cl.sent_events = 1;
    }
}

/* Free t (unlinked, under reg_lock): its figures go to the retired totals, what its ring
 * still holds to the dropped ones. */
static void retire(struct thread *t)
{
    uint64_t head = atomic_load_explicit(&t->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&t->tail, memory_order_relaxed);
    uint64_t lost = atomic_load_explicit(&t->dropped, memory_order_relaxed) - t->base_dropped;
    uint64_t left = ring_events(t, tail, head);
    retired_events += t->taken + left + lost;
    retired_dropped += lost + left;
    retired_attrs_dropped +=
        atomic_load_explicit(&t->attrs_dropped, memory_order_relaxed) - t->base_attrs_dropped;
    free(t->pend);
    free(t->pbytes);
    free(t->ring);
    free(t);
}

/* Free the exited threads whose rings are empty (or every exited one, if force). While no
 * service is connected, exited threads' rings that still hold events are kept for the next
 * one, newest first, up to RETIRED_BYTES_MAX (at least one); older ones are given up (their
 * events dropped), so that a program that starts threads while no service reads them does
 * not grow without bound. */
static void reap(int force)
{
    uint64_t kept = 0;
    pthread_mutex_lock(&reg_lock);
    for (struct thread **pp = &threads; *pp;) {
        struct thread *t = *pp;
        uint64_t head = atomic_load_explicit(&t->head, memory_order_acquire);
        uint64_t tail = atomic_load_explicit(&t->tail, memory_order_relaxed);
        int retired = atomic_load_explicit(&t->retired, memory_order_acquire);
        if (retired && !force && head != tail && cl.fd < 0) {
            if (kept && kept + (t->mask + 1) * sizeof(struct trove_event) > RETIRED_BYTES_MAX)
                force = 2; /* this one and every older exited one */
            kept += (t->mask + 1) * sizeof(struct trove_event);
        }
        if (retired && (force || head == tail)) {
            *pp = t->next;
            retire(t);
        } else
            pp = &t->next;
    }
    pthread_mutex_unlock(&reg_lock);
}

static const char gap_name[] = "trove.dropped";

/* Events lost so far: full rings, sends a broken connection cut short, refused
 * connections', exited threads' rings given up. */
static uint64_t dropped_total(void)
{
    pthread_mutex_lock(&reg_lock);
    uint64_t n = retired_dropped + st_lost;
    for (struct thread *t = threads; t; t = t->next)
        n += atomic_load_explicit(&t->dropped, memory_order_relaxed) - t->base_dropped;
    pthread_mutex_unlock(&reg_lock);
    return n;
}

/* A gap: when events were lost since the last one, a counter event "trove.dropped" of the
 * process (tid 0) holding the running total, sent after the events that got through. */
static void send_gap(struct trove__client_buf *ev, struct trove__client_buf *nb)
{
    uint64_t total = dropped_total();
    if (total <= cl.gap_sent || cl.fd < 0)
        return;
    uint32_t id = intern(gap_name);
    if (!id)
        return;
    nb->len = 0;
    append_names(nb, NULL, 0);
    send_buf(nb);
    ev->len = 0;
    trove__client_raw_header(ev, 1);
    struct trove_event *r = (struct trove_event *)trove__client_buf_reserve(ev, sizeof *r);
    if (!r)
        return;
    double v = (double)total;
    memset(r, 0, sizeof *r);
    r->start_ns = stamp();
    memcpy(&r->dur_ns, &v, sizeof v);
    r->pid = cl.pid;
    r->kind = TROVE_KIND_COUNTER;
    r->name_id = id;
    ev->len += sizeof *r;
    send_buf(ev);
    if (cl.fd >= 0)
        cl.gap_sent = total;
}

/* One round: every ring drained, the gap sent, exited threads freed. 1 if it sent events. */
static int flush_round(struct trove__client_buf *ev, struct trove__client_buf *nb)
{
    uint64_t sent = cl.conn_sent;
    struct thread *list[64];
    size_t n = 0;
    /* Take the threads a few at a time, so that no lock is held while sending. */
    pthread_mutex_lock(&reg_lock);
    for (struct thread *t = threads; t; t = t->next)
        if (n < sizeof list / sizeof list[0])
            list[n++] = t;
    pthread_mutex_unlock(&reg_lock);
    for (size_t i = 0; i < n && cl.fd >= 0; i++)
        drain(list[i], ev, nb);
    /* More than 64 threads: the rest, in rounds of their own, under the lock (rare). */
    if (cl.fd >= 0 && n == sizeof list / sizeof list[0]) {
        size_t skip = n;
        pthread_mutex_lock(&reg_lock);
        struct thread *t = threads;
        while (t && skip--)
            t = t->next;
        pthread_mutex_unlock(&reg_lock);
        for (; t && cl.fd >= 0; t = t->next)
            drain(t, ev, nb);
    }
    send_gap(ev, nb);
    reap(0);
    return cl.conn_sent != sent;
}

/* The service's answer, if it has come: read without waiting. A refuse drops the connection
 * as if it never was: what was written on it counts as lost (the service read nothing past
 * the hello), and the next hello is what this one was. */
static void read_answer(void)
{
    for (;;) {
        char *nl = memchr(cl.in, '\n', cl.in_len);
        ssize_t n;
        if (nl) {
            int type = trove__client_answer_type(cl.in, (size_t)(nl - cl.in));
            cl.in_len -= (size_t)(nl - cl.in) + 1;
            memmove(cl.in, nl + 1, cl.in_len);
            if (type == TROVE__CLIENT_ANSWER_REFUSE) {
                pthread_mutex_lock(&reg_lock);
                st_sent -= cl.conn_sent;
                st_lost += cl.conn_sent;
                pthread_mutex_unlock(&reg_lock);
                cl.sent_events = cl.sent_before;
                disconnect();
            }
            cl.answered = 1; /* an accept, or an error (the service closes: a send says) */
            return;
        }
        if (cl.in_len == sizeof cl.in) { /* not a line of the service's: stop listening */
            cl.answered = 1;
            return;
        }
        n = recv(cl.fd, cl.in + cl.in_len, sizeof cl.in - cl.in_len, MSG_DONTWAIT);
        if (n <= 0)
            return; /* nothing yet; or the end, which the next send finds */
        cl.in_len += (size_t)n;
    }
}

/* A send failed: the service closed the connection. If that was its refusal, the line is
 * there to read (it is written before the close): taken first, so that what was sent counts
 * as lost and the next hello is not an append of events the service never took. */
static void broken(void)
{
    if (cl.fd >= 0 && !cl.answered)
        read_answer();
    disconnect();
}

/* Connect, say hello and name the process. */
static void connect_now(struct trove__client_buf *nb)
{
    try_connect(nb);
    if (cl.fd >= 0) {
        append_names(nb, NULL, 1);
        send_buf(nb);
    }
}

static void *flush_main(void *arg)
{
    struct trove__client_buf ev = {0}, nb = {0};
    uint64_t next_try = 0;
    int stop = 0, busy = 0;
    (void)arg;
    while (!stop) {
        /* The first hello waits for the TSC's calibration; the rings hold the events. */
        if (cl.fd < 0 && now_ns() >= next_try &&
            (!atomic_load(&use_tsc) || now_ns() - cl.cal_ns >= CALIBRATE_NS)) {
            connect_now(&nb);
            next_try = now_ns() + RECONNECT_NS;
        }
        pthread_mutex_lock(&cl.lock);
        stop = cl.stop;
        if (!stop) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += busy ? FLUSH_BUSY_NS : FLUSH_IDLE_NS;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&cl.cond, &cl.lock, &ts);
            stop = cl.stop;
        }
        pthread_mutex_unlock(&cl.lock);
        if (stop) {
            atomic_store(&recording, 0);
            if (cl.fd < 0 && !cl.on_demand) /* one last try, so that a short run is sent */
                connect_now(&nb);
        }
        if (cl.fd >= 0 && !cl.answered)
            read_answer();
        if (cl.fd >= 0)
            busy = flush_round(&ev, &nb);
        else
            reap(0);
    }
    disconnect();
    trove__client_buf_free(&ev);
    trove__client_buf_free(&nb);
    trove__client_buf_free(&fs.ab);
    trove__client_buf_free(&fs.mb);
    trove__client_attrs_free(&fs.at);
    trove__client_attrs_scratch_free();
    return NULL;
}

/* ---- start, stop, stats ---- */


static void freeze(void);

static void stop_at_exit(void)
{
    trove_client_stop();
}

/* fork(): hold the locks across it so that the child's copies are consistent; in the
 * child, no flush thread exists, so the client is stopped there and every thread but the
 * one that forked is gone (retired: the next start frees them). */
static void fork_prepare(void)
{
    pthread_mutex_lock(&cl.lock);
    pthread_mutex_lock(&reg_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&reg_lock);
    pthread_mutex_unlock(&cl.lock);
}

static void fork_child(void)
{
    struct thread *self = tls;
    for (struct thread *t = threads; t; t = t->next)
        if (t != self)
            atomic_store(&t->retired, 1);
    if (self)
        self->pid = (uint32_t)getpid();
    if (cl.fd >= 0)
        close(cl.fd);
    cl.fd = -1;
    cl.running = 0;
    atomic_store(&recording, 0);
    atomic_store(&connected_now, 0);
    memset(&frozen, 0, sizeof frozen); /* the parent's rings are the parent's to count */
    stats_frozen = 1;
    pthread_mutex_unlock(&reg_lock);
    pthread_mutex_unlock(&cl.lock);
}

int trove_client_start(const struct trove_client_options *opts)
{
    struct trove_client_options o = {0};
    const char *env;
    int rc;
    if (opts)
        o = *opts;
    if (cl.running)
        return -EALREADY;
    if (!o.socket_path)
        o.socket_path = (env = getenv("TROVE_SOCKET")) && *env ? env : "./trove-data/trove.sock";
    if (strlen(o.socket_path) >= sizeof cl.socket_path)
        return -ENAMETOOLONG;
    cl.pid = (uint32_t)getpid();
    if (o.capture) {
        if (!trove__client_capture_valid(o.capture))
            return -EINVAL;
        memcpy(cl.capture, o.capture, strlen(o.capture) + 1);
    } else {
        char prog[64];
        trove__client_program_name(prog, sizeof prog);
        trove__client_default_capture(cl.capture, sizeof cl.capture, prog, cl.pid);
    }
    {
        char prog[THREAD_NAME_MAX];
        const char *pn = o.process_name;
        if (!pn) {
            trove__client_program_name(prog, sizeof prog);
            pn = prog;
        }
        cl.process_len = trove__client_sanitize(cl.process, sizeof cl.process, pn, strlen(pn));
    }
    memcpy(cl.socket_path, o.socket_path, strlen(o.socket_path) + 1);
    size_t ring = RING_MIN;
    while (ring < o.ring_events && ring < ((size_t)1 << 30))
        ring <<= 1;
    /* A ring's size is fixed when its thread registers; threads known from an earlier start
     * keep theirs. */
    if (!cl.ring_events || o.ring_events)
        cl.ring_events = o.ring_events ? ring : RING_DEFAULT;
    cl.on_demand = o.on_demand;
    cl.sent_events = 0;
    cl.gap_sent = 0;
    atomic_store(&use_tsc, o.clock != TROVE_CLIENT_CLOCK_MONOTONIC && trove__client_tsc_constant());
    atomic_store(&tsc_hz_now, 0);
    trove__client_clock_pair(&cl.cal_tsc, &cl.cal_ns);
    cl.stop = 0;
    reap(1);
    pthread_mutex_lock(&reg_lock);
    for (struct thread *t = threads; t; t = t->next) {
        uint64_t h = atomic_load_explicit(&t->head, memory_order_acquire);
        atomic_store_explicit(&t->tail, h, memory_order_release);
        t->taken = 0;
        t->npend = t->plen = 0;
        t->base_dropped = atomic_load(&t->dropped);
        t->base_attrs_dropped = atomic_load(&t->attrs_dropped);
    }
    names.sent = 0;
    fsets.sent = 0;
    st_sent = st_lost = retired_events = retired_dropped = retired_attrs_dropped = 0;
    stats_frozen = 0;
    pthread_mutex_unlock(&reg_lock);
    atomic_store(&st_bytes, 0);
    atomic_store(&st_connects, 0);
    atomic_fetch_add(&run_gen, 1);
    atomic_store(&recording, !cl.on_demand);
    {
        /* The flush thread takes none of the program's signals: a handler the program
         * installed runs on the program's threads, and the library's sends are not cut. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        rc = pthread_create(&cl.thread, NULL, flush_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (rc != 0) {
        atomic_store(&recording, 0);
        freeze();
        return -rc;
    }
    cl.running = 1;
    if (!cl.atexit_done && atexit(stop_at_exit) == 0 &&
        pthread_atfork(fork_prepare, fork_parent, fork_child) == 0)
        cl.atexit_done = 1;
    return 0;
}

void trove_client_stop(void)
{
    if (!cl.running)
        return;
    pthread_mutex_lock(&cl.lock);
    cl.stop = 1;
    pthread_cond_signal(&cl.cond);
    pthread_mutex_unlock(&cl.lock);
    pthread_join(cl.thread, NULL);
    cl.running = 0;
    atomic_store(&recording, 0);
    freeze();
}

/* The figures now, under reg_lock: one consistent snapshot. give_up (no flush thread runs):
 * what the rings hold will not be sent, so it is dropped first (each tail moves up to the
 * head read for the figures). */
static void stats_take(struct trove_client_stats *out, int give_up)
{
    memset(out, 0, sizeof *out);
    for (struct thread *t = threads; t; t = t->next) {
        uint64_t head = atomic_load_explicit(&t->head, memory_order_acquire);
        uint64_t tail = atomic_load_explicit(&t->tail, memory_order_relaxed);
        uint64_t lost = atomic_load_explicit(&t->dropped, memory_order_relaxed) - t->base_dropped;
        uint64_t left = ring_events(t, tail, head); /* [tail, head) is the flush thread's: no
                                                       one writes it while reg_lock is held */
        if (give_up) {
            st_lost += left;
            t->taken += left;
            left = 0;
            atomic_store_explicit(&t->tail, head, memory_order_release);
        }
        out->events += t->taken + left + lost;
        out->dropped += lost;
        out->pending += left;
        out->attrs_dropped +=
            atomic_load_explicit(&t->attrs_dropped, memory_order_relaxed) - t->base_attrs_dropped;
    }
    out->events += retired_events;
    out->attrs_dropped += retired_attrs_dropped;
    out->dropped += retired_dropped + st_lost;
    out->sent = st_sent;
    out->bytes = atomic_load(&st_bytes);
    out->connects = atomic_load(&st_connects);
    out->connected = atomic_load(&connected_now);
    out->clock = atomic_load(&use_tsc) ? TROVE_CLIENT_CLOCK_TSC : TROVE_CLIENT_CLOCK_MONOTONIC;
    out->tsc_hz = atomic_load(&tsc_hz_now);
}

/* Stopped: the rings' leftovers dropped and the figures frozen, pending 0. A thread that
 * records while this runs (it saw the recording flag before stop cleared it) leaves an
 * event past the head read here: it is in no figure, and the next start empties it away. */
static void freeze(void)
{
    pthread_mutex_lock(&reg_lock);
    stats_take(&frozen, 1);
    stats_frozen = 1;
    pthread_mutex_unlock(&reg_lock);
}

void trove_client_stats(struct trove_client_stats *out)
{
    pthread_mutex_lock(&reg_lock);
    if (stats_frozen)
        *out = frozen;
    else
        stats_take(out, 0);
    pthread_mutex_unlock(&reg_lock);
}
