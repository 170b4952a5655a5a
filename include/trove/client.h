/*
 * trove/client.h: the instrumentation library (libtrove-client). A program records zones,
 * instants and counters with the macros below; a flush thread sends them to `trove serve`
 * over its unix socket as a hello line and a wire stream of raw and names frames
 * (docs/serve.md, docs/formats/wire.md). The library needs libc and pthreads only and
 * includes no other trove header, so it can be linked into any C or C++ program.
 *
 *   #include <trove/client.h>
 *   int main(void) {
 *       trove_client_start(NULL);           // TROVE_SOCKET, or ./trove-data/trove.sock
 *       { TROVE_ZONE("work"); do_work(); }  // one 32-byte event when the scope ends
 *       trove_client_stop();                // everything recorded reaches the service
 *   }
 *
 * Zones may carry a text and values (TROVE_ZONE_TEXT, TROVE_ZONE_VALUE), messages mark the
 * timeline (TROVE_MESSAGE, TROVE_MESSAGEF) and frame marks time frames (TROVE_FRAME_MARK,
 * TROVE_FRAME_MARK_NAMED): they reach the service as attributes (trove/attrs.h) and events.
 *
 * The hot path (a zone's begin and end, an instant, a counter) runs on the calling thread
 * only: a clock read (the TSC where its rate is constant, else CLOCK_MONOTONIC) and a
 * 32-byte store into the thread's own ring. After a thread's first event it takes no lock,
 * makes no system call and allocates nothing. When a ring is full (no service, or a slow
 * one) the event is dropped and counted; nothing ever waits for the service, and the
 * count reaches it as a gap: a counter "trove.dropped" holding the process's running total
 * of lost events. docs/client.md has the design.
 *
 * Threads: every function may be called from any thread (start and stop not from two at
 * once). fork(): the child has no client (it is stopped in the child, the rings inherited
 * from the parent are never sent); a child that wants one calls trove_client_start() with
 * its own capture name. The flush thread blocks every signal, so a process-directed signal
 * (SIGTERM, SIGINT ...) is always handled on one of the program's own threads.
 *
 * Build with -DTROVE_DISABLE and every macro compiles to nothing (the functions stay
 * declared, so code that calls them directly still links against the library).
 */
#ifndef TROVE_CLIENT_H
#define TROVE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Options of trove_client_start. A zeroed struct (or NULL) means every default. */
struct trove_client_options {
    const char *socket_path; /* the service's unix socket; NULL: $TROVE_SOCKET if set, else
                                "./trove-data/trove.sock" (trove serve's default store) */
    const char *capture;     /* the capture's name (1..128 bytes of A-Z a-z 0-9 . _ -, not
                                starting with . or -); NULL: the program's name, "-", pid */
    size_t ring_events;      /* events per thread's ring, rounded up to a power of two
                                (at least 1024); 0: 65536 (2 MiB a thread) */
    int on_demand;           /* nonzero: record only while a service is connected */
    int clock;               /* enum trove_client_clock; 0: TROVE_CLIENT_CLOCK_AUTO */
    const char *process_name; /* the process's name in the capture (copied; at most 255
                                 bytes, invalid UTF-8 becomes '?'); NULL: the program's,
                                 /proc/self/comm, else argv[0]'s last component */
};

/* The clock events are timed by. AUTO takes the TSC where the CPU says its rate is constant
 * (x86 with the constant_tsc and nonstop_tsc flags), else CLOCK_MONOTONIC. With the TSC the
 * records hold ticks; the client calibrates them against CLOCK_MONOTONIC and sends the
 * calibration in its hello, and the service converts the times to nanoseconds. */
enum trove_client_clock {
    TROVE_CLIENT_CLOCK_AUTO = 0,
    TROVE_CLIENT_CLOCK_MONOTONIC = 1, /* clock_gettime(CLOCK_MONOTONIC), a vDSO call */
    TROVE_CLIENT_CLOCK_TSC = 2        /* rdtsc; falls back to MONOTONIC where there is none */
};

/*
 * Counters since the last trove_client_start. Every event recorded is counted once in
 * `events` and is, at any moment, exactly one of sent, dropped or pending: in every snapshot
 * events == sent + dropped + pending, and once trove_client_stop has returned pending is 0,
 * so events == sent + dropped (the figures then stay as stop left them). Whatever was
 * dropped while a service could still be told reaches it as the "trove.dropped" gap.
 */
struct trove_client_stats {
    uint64_t events;   /* events recorded: into the rings, or dropped at a full one */
    uint64_t dropped;  /* events lost: a full ring; a frame a broken connection cut (and the
                          ones after it in that send); a refused connection's; an exited
                          thread's ring given up while no service read it (past 32 MiB of
                          such rings); what the rings held when stop found no service */
    uint64_t sent;     /* events written to the service in whole frames (a service killed
                          before it read them loses them without the client knowing: its own
                          counts, GET /api/status, say what it took) */
    uint64_t bytes;    /* bytes written to the service (hello, names and raw frames) */
    uint64_t connects; /* connections made to the service */
    int connected;     /* a service is connected now */
    int clock;         /* the clock of this run: TROVE_CLIENT_CLOCK_TSC or _MONOTONIC */
    uint64_t tsc_hz;   /* the TSC's ticks per second, as the last hello said (0 before) */
    uint64_t pending;  /* events in the rings, not yet sent nor dropped (0 after stop) */
    uint64_t attrs_dropped; /* zone texts and values lost at a full ring (a message lost
                               there is an event, counted in dropped) */
};

/*
 * Start the client: check the options, then start the flush thread, which connects to the
 * service (and retries every 100 ms while it cannot, or while it refuses the hello: the
 * events written on a refused connection count as dropped), sends the hello and then,
 * every 1 ms (4 ms when idle), every thread's new events. Returns 0, or a negative errno: -EINVAL (a bad capture name),
 * -ENAMETOOLONG (the socket path does not fit a sockaddr_un), -EALREADY (already started),
 * -ENOMEM, or pthread_create's error. An unreachable service is not an error.
 * Rings already holding events from before (a restart) are emptied first.
 * Registers trove_client_stop with atexit() the first time.
 */
int trove_client_start(const struct trove_client_options *opts);

/*
 * Stop the client: stop recording, send every ring's events to the service if one is
 * connected (waiting up to the socket's 10 s send timeout for it; without one it tries to
 * connect once), close the connection and join the flush thread. What could not be sent
 * then counts as dropped. Does nothing if the client is not started. Not to be called from
 * two threads at once.
 */
void trove_client_stop(void);

/* The counters since the last start (all zero if never started, and in a fork()ed child
 * until it starts its own client), taken as one consistent snapshot. Any thread. */
void trove_client_stats(struct trove_client_stats *out);

/* Name the calling thread in the capture (copied; at most 255 bytes are kept, invalid UTF-8
 * becomes '?'). Sent with the next flush, and again after a reconnect. */
void trove_client_thread_name(const char *name);

/*
 * The hot path, for the macros (callable directly too). `name` must be a string that lives
 * as long as the program (a literal): names are interned by address, once per thread.
 * zone_begin returns 1 when it opened a zone (the client was recording or the thread was
 * known), 0 when it did nothing; zone_end closes the thread's innermost open zone and
 * records it (kind zone, its depth on the thread, 0 = outermost) if the client is recording.
 * A counter's value is stored as the bits of a double in dur_ns (trove/event.h).
 */
int trove_client_zone_begin(const char *name);
void trove_client_zone_end(void);
void trove_client_zone_cleanup(int *opened);
void trove_client_instant(const char *name);
void trove_client_counter(const char *name, double value);

/*
 * What a zone, the timeline and a frame graph say besides names (docs/client.md). The text
 * and values attach to the thread's innermost open zone (nothing when none is open or it is
 * not recorded): its attributes "text" (a zone's texts joined by newlines) and "value",
 * "value_2", ... in order. A message is an instant named "message" at the current depth
 * whose attribute "log_message" is the text. Texts are copied into the ring (at most 65,535
 * bytes, and a quarter of the ring; invalid UTF-8 becomes '?'): no allocation, no lock.
 * frame_mark ends the frame of its set (name, a literal, or NULL: "frame") begun by the
 * thread's last mark of it, as a frame event (kind 3, extra TROVE_FRAME_MARKS) from that
 * mark to this one, on the set's own track in the process (a thread of a synthetic tid
 * named "frames" or "frames: NAME"); the first mark of a set only begins one. A thread times at most 8 sets
 * at once (more take each other's places and begin again).
 */
void trove_client_zone_text(const char *text, size_t len);
void trove_client_zone_value(uint64_t value);
void trove_client_message(const char *text, size_t len);
void trove_client_messagef(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ; /* at most 1,023 bytes of the formatted text */
void trove_client_frame_mark(const char *name);

#define TROVE__CAT2(a, b) a##b
#define TROVE__CAT(a, b) TROVE__CAT2(a, b)

#if defined(TROVE_DISABLE)
#define TROVE_ZONE(name) ((void)0)
#define TROVE_ZONE_BEGIN(name) ((void)0)
#define TROVE_ZONE_END() ((void)0)
#define TROVE_INSTANT(name) ((void)0)
#define TROVE_COUNTER(name, v) ((void)0)
#define TROVE_ZONE_TEXT(text, len) ((void)0)
#define TROVE_ZONE_VALUE(v) ((void)0)
#define TROVE_MESSAGE(text) ((void)0)
#define TROVE_MESSAGEF(...) ((void)0)
#define TROVE_FRAME_MARK ((void)0)
#define TROVE_FRAME_MARK_NAMED(name) ((void)0)
#elif defined(__cplusplus)
}
struct trove__zone_scope {
    int opened;
    explicit trove__zone_scope(const char *name) : opened(trove_client_zone_begin(name)) {}
    ~trove__zone_scope()
    {
        if (opened)
            trove_client_zone_end();
    }
    trove__zone_scope(const trove__zone_scope &) = delete;
    trove__zone_scope &operator=(const trove__zone_scope &) = delete;
};
extern "C" {
#define TROVE_ZONE(name) trove__zone_scope TROVE__CAT(trove__zone_, __LINE__)(name)
#else
/* The scope's variable closes the zone when it goes out of scope (any exit from it). */
#define TROVE_ZONE(name)                                                                       \
    __attribute__((cleanup(trove_client_zone_cleanup), unused)) int TROVE__CAT(trove__zone_,   \
                                                                              __LINE__) =      \
        trove_client_zone_begin(name)
#endif
#if !defined(TROVE_DISABLE)
#define TROVE_ZONE_BEGIN(name) ((void)trove_client_zone_begin(name))
#define TROVE_ZONE_END() trove_client_zone_end()
#define TROVE_INSTANT(name) trove_client_instant(name)
#define TROVE_COUNTER(name, v) trove_client_counter((name), (double)(v))
#define TROVE_ZONE_TEXT(text, len) trove_client_zone_text((text), (size_t)(len))
#define TROVE_ZONE_VALUE(v) trove_client_zone_value((uint64_t)(v))
#define TROVE_MESSAGE(text) trove__client_message_str(text)
#define TROVE_MESSAGEF(...) trove_client_messagef(__VA_ARGS__)
#define TROVE_FRAME_MARK trove_client_frame_mark(NULL)
#define TROVE_FRAME_MARK_NAMED(name) trove_client_frame_mark(name)
static inline void trove__client_message_str(const char *text)
{
    size_t n = 0;
    if (text)
        while (text[n])
            n++;
    trove_client_message(text, n);
}
#endif

#ifdef __cplusplus
}
#endif
#endif
