/*
 * support_serve.h: the service's tests' scaffolding, one copy for all of them
 * (test_serve, test_serve_faults, test_serve_stop, test_client): `trove serve` on threads
 * of the test's process, a producer on its unix socket, a viewer through trove_live_view
 * and a raw WebSocket, and plain HTTP requests to it. Everything here reports failure by
 * its return value, never by a CHECK, so that it may run on any thread; the test checks.
 * The in-process service is one at a time (trove_serve_run is).
 */
#ifndef TROVE_SUPPORT_SERVE_H
#define TROVE_SUPPORT_SERVE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <pthread.h>

#include "trove/event.h"

/* ---- the service in this process ---- */

/*
 * `trove serve` on threads of this process (one at a time): trove_serve_run on store_dir,
 * HTTP on 127.0.0.1 at a free port, commits every commit_ms (0: the default). Returns once
 * it listens, with its URL and socket path in url and sock (may be NULL), or failed (its
 * message printed): TROVE_OK or the run's error. test_serve_stop stops it and returns what
 * trove_serve_run returned.
 */
int test_serve_start(const char *store_dir, uint32_t commit_ms, char *url, size_t url_cap,
                     char *sock, size_t sock_cap);
/* The same with each viewer's queue bounded at max_viewer_queue bytes (0: the default). */
int test_serve_start_queue(const char *store_dir, uint32_t commit_ms, uint64_t max_viewer_queue,
                           char *url, size_t url_cap, char *sock, size_t sock_cap);
/* The same from options the caller fills (store_dir required; its token, limits, log...):
 * listen defaults to 127.0.0.1:0 and log to the one test_serve_log_count reads; ready is
 * this file's. The fuzz targets start their service this way too (fuzz/fuzz_service.h). */
struct trove_serve_options;
int test_serve_start_opts(const struct trove_serve_options *base, char *url, size_t url_cap,
                          char *sock, size_t sock_cap);
int test_serve_stop(void);
/* How many times needle occurs in the service's log since test_serve_start. */
int test_serve_log_count(const char *needle);
/* Until the log has needle count times (0), or a minute has gone (-1). */
int test_serve_wait_log(const char *needle, int count);

/* ---- sockets and HTTP ---- */

/* Write all n bytes to fd: 0, or -1 when a write fails or writes nothing. */
int test_write_all(int fd, const void *p, size_t n);
/* A socket connected to the unix socket at path, or -1. */
int test_unix_connect(const char *path);
/* The next line on fd into line (NUL-terminated, without its newline): its length, or -1
 * when the connection ends first or nothing comes for a minute. */
int test_read_line(int fd, char *line, size_t cap);
/* A socket connected to the service at url ("http://127.0.0.1:PORT/"), or -1. */
int test_http_connect(const char *url);
/* One request (head, then body[0..len)) and the whole answer into out (NUL-terminated; ""
 * when the service closed without one): 0, or -1 when it could not be sent. */
int test_http(const char *url, const char *head, const void *body, size_t len, char *out,
              size_t cap);
/* A capture's member in GET /api/status (the first after its "name"), as a number; -1 when
 * it is not there. */
int64_t test_status_of(const char *url, const char *capture, const char *member);

/* ---- producers ---- */

/* A producer of capture on the socket sock that has sent its hello
 * {"capture":CAPTURE,"producer":PRODUCER EXTRA} (extra: more members, "" or ",\"pid\":7"):
 * the socket, or -1. */
int test_producer_hello(const char *sock, const char *capture, const char *producer,
                        const char *extra);
/* Send a names frame of one event name (id, name): 0 or -1. */
int test_send_name(int fd, uint32_t id, const char *name);
/* Send ev[0..n) as frames of `batch` events in wire format `wire`: 0 or -1. */
int test_send_events(int fd, int wire, const struct trove_event *ev, size_t n, size_t batch);

/* ---- viewers ---- */

/*
 * A viewer of the live capture through trove_live_view, on a thread of its own. Set url,
 * capture, wire, from_start (and keep, on_hello) and call test_viewer_start; after
 * test_viewer_join the counts and rc say what it got. The counts are atomic: a test may poll
 * them while the viewer runs.
 */
struct test_viewer {
    const char *url, *capture;
    int wire, from_start;
    int keep; /* keep every event in got (else only count them) */
    /* Called on the viewer's thread at its hello (may block it: the viewer then reads
     * nothing meanwhile). May be NULL. */
    void (*on_hello)(struct test_viewer *v);
    void *ctx; /* the test's own */

    atomic_int hello, ends, errors, others, bad_frames;
    atomic_uint_fast64_t events;
    uint64_t end_events;   /* the end's "events" */
    char last_error[256];  /* the last error message's JSON */
    struct trove_events got;
    struct trove_names *names;
    int close_code, rc;

    pthread_t thread;
    struct trove_wire_decoder *dec;
    struct trove_event *ev;
};

/* 0, or -1 when the viewer could not be set up or its thread started. */
int test_viewer_start(struct test_viewer *v);
void test_viewer_join(struct test_viewer *v);
void test_viewer_free(struct test_viewer *v);

/* ---- a WebSocket of our own ---- */

/* A WebSocket on /api/live?capture=capture whose 101 is read: the socket, or -1. */
int test_ws_open(const char *url, const char *capture);
/* The next message of a WebSocket the service sends (unmasked): its opcode (1 text, 2
 * binary, 8 close ...) and its payload in *body (malloc'd, NUL-terminated, *len bytes), or
 * -1 when the connection ended. */
int test_ws_read(int fd, uint8_t **body, uint64_t *len);
/* Read messages until a close: its code (0: none), or -1 when the connection ended. */
int test_ws_until_close(int fd);

#endif
