/*
 * test_serve.c: the whole service in one process, for the sanitizers (TSan above all): the
 * service on its threads, two producers on the unix socket writing one capture (their
 * names numbered differently), a raw and a packed viewer from the start and a from=start
 * viewer that joins after the first batches, all on real sockets on loopback. Every viewer
 * must decode exactly the events sent, in order, with their names, and get the end; the
 * store must hold them all after the stop.
 *
 * Then a from=start viewer that joins a long capture and reads nothing for a while: the
 * live batches published meanwhile overflow its (small) queue before its history is sent,
 * and it must still get every event once, in order, and no gap — the frames its queue
 * dropped are read back from the store (history.c's catch-up).
 *
 * Then what producers are told: an accept saying how the capture takes their events (new,
 * replace with the stored count, append, join with the count published), a refuse with the
 * reason for an append to a capture the store does not have (and the connection closed), an
 * error before the close of an accepted producer that sent a bad frame; and a producer that
 * never reads any of it still gets every event committed.
 */
#define _GNU_SOURCE /* usleep */

#include "support_serve.h"
#include "testutil.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/event.h"
#include "trove/serve.h"
#include "trove/volume.h"
#include "trove/wire.h"

#define EVENTS 20000u /* per producer */

static char root[64], store[96], url[128], sock[256];
/* Producer k's events: EVENTS of its own pid, names "zone-<i>" under ids of its own. */
static void events_of(int k, struct trove_event *ev, struct trove_names *names)
{
    for (uint32_t i = 0; i < EVENTS; i++) {
        memset(&ev[i], 0, sizeof ev[i]);
        ev[i].start_ns = 1000u * i + (uint64_t)k;
        ev[i].dur_ns = 10 + i % 7;
        ev[i].pid = 100u + (uint32_t)k;
        ev[i].tid = i % 3;
        ev[i].name_id = k == 0 ? 1 + i % 5 : 50 - i % 5; /* the same 5 names, other ids */
    }
    for (uint32_t j = 0; j < 5; j++) {
        char s[16];
        snprintf(s, sizeof s, "zone-%u", j);
        if (trove_names_set(names, TROVE_NAME_EVENT, k == 0 ? 1 + j : 50 - j, 0, s, strlen(s)))
            abort(); /* on a producer thread: no CHECK (the counters are the main thread's) */
    }
}

struct producer {
    int k;
    int ok;
};

static void *producer_thread(void *arg)
{
    struct producer *p = arg;
    struct trove_event *ev = calloc(EVENTS, sizeof *ev);
    struct trove_names *names = NULL;
    struct trove_bytes buf = {0};
    char producer[16], extra[32];
    int fd;

    trove_names_new(&names);
    events_of(p->k, ev, names);
    snprintf(producer, sizeof producer, "p%d", p->k);
    snprintf(extra, sizeof extra, ",\"pid\":%d", 100 + p->k);
    fd = test_producer_hello(sock, "t1", producer, extra);
    p->ok = fd >= 0 &&
            trove_wire_encode_names(names, 0, trove_names_count(names), &buf) == TROVE_OK &&
            test_write_all(fd, buf.ptr, buf.len) == 0;
    for (uint32_t i = 0; p->ok && i < EVENTS; i += 1000) {
        p->ok = test_send_events(fd, p->k ? TROVE_WIRE_PACKED : TROVE_WIRE_RAW, ev + i, 1000,
                                 1000) == 0;
        usleep(2000); /* several passes */
    }
    if (fd >= 0)
        close(fd);
    trove_bytes_free(&buf);
    trove_names_free(names);
    free(ev);
    return NULL;
}

/* Every producer's events arrive in its own order, each once, with the names resolved. */
static void check_viewer(struct test_viewer *v)
{
    uint32_t next[2] = {0, 0};
    int order_ok = 1;

    CHECK_EQ_INT(v->rc, TROVE_OK);
    CHECK_EQ_INT(v->hello, 1);
    CHECK_EQ_INT(v->ends, 1);
    CHECK_EQ_INT(v->errors + v->others + v->bad_frames, 0); /* no gap, no error */
    CHECK_EQ_INT(v->close_code, 1000);
    CHECK_EQ_INT(v->end_events, 2 * EVENTS);
    CHECK_EQ_INT(v->got.len, 2 * EVENTS);
    for (size_t i = 0; i < v->got.len && order_ok; i++) {
        const struct trove_event *e = &v->got.ev[i];
        int k = (int)e->pid - 100;
        size_t len = 0;
        const char *name;
        char want[16];
        if (k < 0 || k > 1 || next[k] >= EVENTS || e->start_ns != 1000u * next[k] + (uint64_t)k) {
            order_ok = 0;
            break;
        }
        snprintf(want, sizeof want, "zone-%u", k == 0 ? next[k] % 5 : next[k] % 5);
        name = trove_names_get(v->names, TROVE_NAME_EVENT, e->name_id, 0, &len);
        order_ok = name && len == strlen(want) && memcmp(name, want, len) == 0;
        next[k]++;
    }
    CHECK(order_ok);
}

/* ---- the catch-up ---------------------------------------------------------------------- */

/* Stored before the viewer joins: more than its history queue (8 MiB) and the sockets hold,
 * so that its history is still being sent when the live batches overflow its queue. */
#define CU_HISTORY 640000u
#define CU_LIVE 100000u /* published while it reads nothing: far past its 64 KiB queue */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int joined, go;
} cu = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

/* The viewer's hello: say so, then read nothing until told to go on. */
static void cu_hello(struct test_viewer *v)
{
    (void)v;
    pthread_mutex_lock(&cu.mu);
    cu.joined = 1;
    pthread_cond_broadcast(&cu.cv);
    while (!cu.go)
        pthread_cond_wait(&cu.cv, &cu.mu);
    pthread_mutex_unlock(&cu.mu);
}

/* Send events [from, to) of capture t2 (start_ns 1000 i, pid 300, one name) on fd. */
static int cu_send(int fd, uint32_t from, uint32_t to, struct trove_wire_encoder *enc,
                   struct trove_bytes *buf)
{
    struct trove_event ev[2048];
    for (uint32_t i = from; i < to;) {
        uint32_t n = to - i < 2048 ? to - i : 2048;
        memset(ev, 0, sizeof ev);
        for (uint32_t k = 0; k < n; k++) {
            ev[k].start_ns = 1000u * (uint64_t)(i + k);
            ev[k].dur_ns = 5;
            ev[k].pid = 300;
            ev[k].name_id = 1;
        }
        buf->len = 0;
        if (trove_wire_encode(enc, TROVE_WIRE_PACKED, ev, n, buf) != TROVE_OK ||
            test_write_all(fd, buf->ptr, buf->len) != 0)
            return -1;
        i += n;
    }
    return 0;
}

/* Until the store has committed `events` of capture `name` (or a minute has gone: then a
 * failure). */
static int cu_wait_stored_as(const char *name, uint64_t events)
{
    for (int i = 0; i < 6000; i++) {
        struct trove_store *s = NULL;
        struct trove_capture_info info;
        int done = 0;
        if (trove_store_open(store, TROVE_STORE_READONLY, &s, NULL) == TROVE_OK &&
            trove_capture_info(s, name, &info, NULL) == TROVE_OK)
            done = info.events >= events;
        trove_store_close(s);
        if (done)
            return 0;
        usleep(10000);
    }
    return -1;
}

static int cu_wait_stored(uint64_t events) { return cu_wait_stored_as("t2", events); }

static void test_catch_up(void)
{
    const char hello[] = "{\"capture\":\"t2\",\"producer\":\"cu\",\"pid\":300}\n";
    struct trove_wire_encoder *enc = NULL;
    struct trove_names *names = NULL;
    struct trove_bytes buf = {0};
    struct test_viewer v;
    int fd, ok;

    memset(&v, 0, sizeof v);
    v.capture = "t2";
    v.wire = TROVE_WIRE_RAW;
    v.from_start = 1;
    v.keep = 1;
    v.on_hello = cu_hello;
    CHECK_EQ_INT(test_serve_start_queue(store, 50, 65536, url, sizeof url, sock, sizeof sock),
                 TROVE_OK);
    CHECK_EQ_INT(trove_wire_encoder_new(&enc), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_EVENT, 1, 0, "cu", 2), TROVE_OK);
    fd = test_unix_connect(sock);
    ok = fd >= 0 && test_write_all(fd, hello, sizeof hello - 1) == 0 &&
         trove_wire_encode_names(names, 0, 1, &buf) == TROVE_OK &&
         test_write_all(fd, buf.ptr, buf.len) == 0 && cu_send(fd, 0, CU_HISTORY, enc, &buf) == 0;
    CHECK(ok);
    CHECK_EQ_INT(cu_wait_stored(CU_HISTORY), 0);
    v.url = url;
    CHECK_EQ_INT(test_viewer_start(&v), 0);
    pthread_mutex_lock(&cu.mu);
    while (!cu.joined)
        pthread_cond_wait(&cu.cv, &cu.mu);
    pthread_mutex_unlock(&cu.mu);
    /* Joined, and reading nothing: the live part, all of it stored, then the end. */
    CHECK(ok && cu_send(fd, CU_HISTORY, CU_HISTORY + CU_LIVE, enc, &buf) == 0);
    if (fd >= 0)
        close(fd);
    CHECK_EQ_INT(cu_wait_stored(CU_HISTORY + CU_LIVE), 0);
    pthread_mutex_lock(&cu.mu);
    cu.go = 1;
    pthread_cond_broadcast(&cu.cv);
    pthread_mutex_unlock(&cu.mu);
    test_viewer_join(&v);
    CHECK_EQ_INT(v.rc, TROVE_OK);
    CHECK_EQ_INT(v.errors + v.others + v.bad_frames, 0); /* no gap */
    CHECK_EQ_INT(v.ends, 1);
    CHECK_EQ_INT(v.end_events, CU_HISTORY + CU_LIVE);
    CHECK_EQ_INT(v.got.len, CU_HISTORY + CU_LIVE);
    ok = v.got.len == CU_HISTORY + CU_LIVE;
    for (size_t i = 0; ok && i < v.got.len; i++)
        ok = v.got.ev[i].start_ns == 1000u * (uint64_t)i && v.got.ev[i].pid == 300;
    CHECK(ok); /* every event once, in order */
    CHECK_EQ_INT(test_serve_stop(), TROVE_OK);
    trove_bytes_free(&buf);
    trove_wire_encoder_free(enc);
    trove_names_free(names);
    test_viewer_free(&v);
}

/* ---- samples frames from a producer ------------------------------------------------------- */

/* Grow p: 10 frames under one chain, 300 samples, a switch every 3 (step k's times). */
static void sprof_step(struct trove_profile *p, uint32_t k)
{
    uint32_t mod = 0, stack = 0;
    trove_profile_string(p, "/bin/sampled", 12, &mod);
    for (uint32_t i = 0; i < 10; i++) {
        char fn[32];
        struct trove_profile_frame f = {mod, 0, 0, i, 0x100u * k + 8 * i, 0};
        uint32_t id = 0;
        int n = snprintf(fn, sizeof fn, "s%u_f%u", k, i);
        trove_profile_string(p, fn, (size_t)n, &f.function);
        trove_profile_frame(p, &f, &id);
        trove_profile_stack(p, stack, id, &stack);
    }
    for (uint32_t i = 0; i < 300; i++) {
        struct trove_profile_sample sm = {1000000u * k + 7u * i, 400, 401 + i % 2, stack - i % 10};
        trove_profile_sample(p, &sm);
        if (i % 3 == 0) {
            struct trove_profile_switch sw = {sm.time_ns + 1, 400, sm.tid, TROVE_PROFILE_SWITCH_OUT};
            trove_profile_switch(p, &sw);
        }
    }
}

/* A producer sends events and samples frames into t3; a second producer's samples frames
 * are refused (its connection closed: a capture takes one producer's profile), and the
 * stored capture holds the first producer's events and profile, row for row. (A frame that
 * does not follow on from the stream's rows is refused by trove_profile_decode, as
 * test_profile and fuzz_samples check.) */
static void test_samples(void)
{
    const char hello[] = "{\"capture\":\"t3\",\"producer\":\"sampler\",\"pid\":400}\n";
    const char hello2[] = "{\"capture\":\"t3\",\"producer\":\"other\",\"pid\":401}\n";
    struct trove_wire_encoder *enc = NULL;
    struct trove_names *names = NULL;
    struct trove_profile *p = NULL, *other = NULL, *back = NULL;
    struct trove_profile_counts mark, c;
    struct trove_bytes buf = {0};
    struct trove_store *s = NULL;
    struct trove_capture_info info;
    struct trove_diag diag = {0};
    int fd, fd2, ok;

    CHECK_EQ_INT(test_serve_start(store, 50, url, sizeof url, sock, sizeof sock), TROVE_OK);
    CHECK_EQ_INT(trove_wire_encoder_new(&enc), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(trove_names_set(names, TROVE_NAME_EVENT, 1, 0, "cu", 2), TROVE_OK);
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    CHECK_EQ_INT(trove_profile_new(&other), TROVE_OK);
    trove_profile_get_counts(p, &mark);
    fd = test_unix_connect(sock);
    ok = fd >= 0 && test_write_all(fd, hello, sizeof hello - 1) == 0 &&
         trove_wire_encode_names(names, 0, 1, &buf) == TROVE_OK &&
         test_write_all(fd, buf.ptr, buf.len) == 0;
    for (uint32_t k = 0; ok && k < 8; k++) {
        ok = cu_send(fd, k * 1000, (k + 1) * 1000, enc, &buf) == 0;
        sprof_step(p, k);
        buf.len = 0;
        ok = ok && trove_profile_encode(p, &mark, &buf) == TROVE_OK &&
             test_write_all(fd, buf.ptr, buf.len) == 0;
        trove_profile_get_counts(p, &mark);
        if (k == 3) { /* the other producer joins and sends samples of its own */
            fd2 = test_unix_connect(sock);
            sprof_step(other, 99);
            buf.len = 0;
            CHECK(fd2 >= 0 && test_write_all(fd2, hello2, sizeof hello2 - 1) == 0 &&
                  trove_profile_encode(other, NULL, &buf) == TROVE_OK);
            if (fd2 >= 0) {
                test_write_all(fd2, buf.ptr, buf.len); /* refused: it may see EPIPE */
                close(fd2);
            }
        }
        usleep(3000); /* several passes */
    }
    CHECK(ok);
    if (fd >= 0)
        close(fd);
    CHECK_EQ_INT(test_serve_stop(), TROVE_OK);
    CHECK_EQ_INT(trove_store_open(store, TROVE_STORE_READONLY, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "t3", &info, &diag), TROVE_OK);
    CHECK_EQ_INT(info.events, 8000);
    CHECK_EQ_INT(info.samples, 8 * 300);
    CHECK_EQ_INT(info.switches, 8 * 100);
    CHECK_EQ_INT(trove_profile_new(&back), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_profile(s, "t3", back, &diag), TROVE_OK);
    trove_profile_get_counts(back, &c);
    CHECK(c.frames == trove_profile_frame_count(p) && c.stacks == trove_profile_stack_count(p) &&
          c.samples == trove_profile_sample_count(p) && c.switches == trove_profile_switch_count(p));
    ok = c.samples == trove_profile_sample_count(p);
    for (size_t i = 0; ok && i < c.samples; i++) {
        const struct trove_profile_sample *x = &trove_profile_samples(back)[i];
        const struct trove_profile_sample *y = &trove_profile_samples(p)[i];
        ok = x->time_ns == y->time_ns && x->tid == y->tid && x->stack == y->stack;
    }
    CHECK(ok); /* the first producer's samples, in order, none of the other's */
    trove_store_close(s);
    trove_profile_free(back);
    trove_profile_free(other);
    trove_profile_free(p);
    trove_bytes_free(&buf);
    trove_wire_encoder_free(enc);
    trove_names_free(names);
}

/* ---- a profile whose client leaves before it is made ------------------------------------- */

static const char profile_get[] = "GET /api/captures/big/profile HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/* The HTTP status of GET /api/captures/big/profile read to its end, and its length. */
static int profile_status(size_t *len)
{
    char buf[65536];
    int fd = test_http_connect(url), status = -1;
    ssize_t r;

    *len = 0;
    if (fd < 0 || test_write_all(fd, profile_get, sizeof profile_get - 1) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    while ((r = read(fd, buf, sizeof buf)) > 0) {
        if (*len == 0 && r > 12 && memcmp(buf, "HTTP/1.1 ", 9) == 0)
            status = atoi(buf + 9);
        *len += (size_t)r;
    }
    close(fd);
    return status;
}

/* Capture "big" holds a profile large enough that making it takes a while (1,200,000
 * samples). Clients that ask for it and reset the connection at once leave nothing counted
 * or stuck (the service finds the reset when it writes the answer): a later client gets the
 * whole answer. A profile still being made when the service stops (its connection closed
 * then) is set aside, not joined on the web thread, and dropped once made; the stop
 * returns. */
static void test_profile_orphan(void)
{
    struct trove_store *s = NULL;
    struct trove_capture_writer *w = NULL;
    struct trove_profile *p = NULL;
    struct trove_profile_counts mark;
    struct trove_bytes buf = {0};
    struct trove_event ev[4];
    size_t len = 0;
    int left = 0, dropped = 0, status = 0;

    CHECK_EQ_INT(trove_store_open(store, TROVE_STORE_CREATE, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_writer_open(s, "big", 0, NULL, &w, NULL), TROVE_OK);
    memset(ev, 0, sizeof ev);
    for (int i = 0; i < 4; i++) {
        ev[i].start_ns = 1000u * (uint64_t)i;
        ev[i].dur_ns = 10;
        ev[i].pid = 400;
    }
    CHECK_EQ_INT(trove_capture_writer_add(w, ev, 4, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    trove_profile_get_counts(p, &mark);
    for (uint32_t k = 0; k < 4000; k++) {
        struct trove_profile_counts now;
        sprof_step(p, k);
        buf.len = 0;
        trove_profile_get_counts(p, &now);
        CHECK_EQ_INT(trove_profile_encode(p, &mark, &buf), TROVE_OK);
        CHECK_EQ_INT(trove_capture_writer_samples(w, buf.ptr, buf.len, now.samples - mark.samples,
                                                  now.switches - mark.switches, NULL),
                     TROVE_OK);
        mark = now;
        if (k % 200 == 199)
            CHECK_EQ_INT(trove_capture_writer_commit(w, NULL, NULL), TROVE_OK);
    }
    CHECK_EQ_INT(trove_capture_writer_commit(w, NULL, NULL), TROVE_OK);
    trove_capture_writer_close(w);
    trove_store_close(s);
    trove_profile_free(p);
    trove_bytes_free(&buf);

    CHECK_EQ_INT(test_serve_start(store, 50, url, sizeof url, sock, sizeof sock), TROVE_OK);
    for (int i = 0; i < 4; i++) {
        struct linger rst = {1, 0};
        int fd = test_http_connect(url);
        CHECK(fd >= 0 && test_write_all(fd, profile_get, sizeof profile_get - 1) == 0);
        usleep(20000); /* read before the reset */
        if (fd >= 0) {
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
            close(fd);
        }
    }
    for (int tries = 0; tries < 600 && (status = profile_status(&len)) == 503; tries++)
        usleep(100000); /* two are made at a time */
    CHECK_EQ_INT(status, 200);
    CHECK(len > 100000); /* the whole answer: 4,000 steps' functions */
    /* One being made at the stop. */
    {
        int fd = test_http_connect(url);
        CHECK(fd >= 0 && test_write_all(fd, profile_get, sizeof profile_get - 1) == 0);
        usleep(20000); /* read before the stop */
        CHECK_EQ_INT(test_serve_stop(), TROVE_OK);
        if (fd >= 0)
            close(fd);
    }
    left = test_serve_log_count("its connection closed before it was made");
    dropped = test_serve_log_count("whose connection closed: dropped");
    CHECK(left >= 1); /* the one asked last; a reset one may still be being made too */
    CHECK_EQ_INT(dropped, left);
}

/* ---- what producers are told ------------------------------------------------------------ */

/* The service's next line on fd into *a (parsed): 0, or -1 when none comes (the connection
 * ends first, or nothing arrives for a minute: a failure either way, never a timing). */
static int read_answer(int fd, struct trove_serve_answer *a)
{
    char line[TROVE_SERVE_ANSWER_MAX + 1];
    int n;

    memset(a, 0, sizeof *a);
    if ((n = test_read_line(fd, line, sizeof line)) < 0)
        return -1;
    return trove_serve_answer_parse(line, (size_t)n, a, NULL) == TROVE_OK ? 0 : -1;
}

/* Nothing more comes on fd: the service closed it (1), else 0. */
static int closed_by_service(int fd)
{
    char c;
    struct pollfd one = {fd, POLLIN, 0};
    return poll(&one, 1, 60000) == 1 && read(fd, &c, 1) == 0;
}

/* A producer of capture `name` (hello extra: more members, may be ""). */
static int producer_hello(const char *name, const char *extra)
{
    return test_producer_hello(sock, name, "t", extra);
}

/* Send events [from, to) (start_ns 1000 i, pid 500) under one name to fd. */
static int send_named(int fd, uint32_t from, uint32_t to)
{
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes buf = {0};
    int rc = -1;

    if (trove_wire_encoder_new(&enc) == TROVE_OK && test_send_name(fd, 1, "cu") == 0)
        rc = cu_send(fd, from, to, enc, &buf);
    trove_bytes_free(&buf);
    trove_wire_encoder_free(enc);
    return rc;
}

static void test_answers(void)
{
    struct trove_serve_answer a;
    struct trove_store *s = NULL;
    struct trove_capture_info info;
    uint64_t first_session;
    int fd, fd2;

    CHECK_EQ_INT(test_serve_start(store, 50, url, sizeof url, sock, sizeof sock), TROVE_OK);
    /* new: the store has no capture t4 */
    fd = producer_hello("t4", "");
    CHECK(fd >= 0 && read_answer(fd, &a) == 0);
    CHECK(a.type == TROVE_SERVE_ACCEPT && a.mode == TROVE_SERVE_NEW && a.events == 0 &&
          strcmp(a.capture, "t4") == 0);
    first_session = a.session;
    CHECK(fd >= 0 && send_named(fd, 0, 3000) == 0);
    /* join: a second producer while the first writes; told what was published so far (all
     * of the first's events: they are committed before it says hello) */
    CHECK_EQ_INT(cu_wait_stored_as("t4", 3000), 0);
    fd2 = producer_hello("t4", ",\"append\":true");
    CHECK(fd2 >= 0 && read_answer(fd2, &a) == 0);
    CHECK(a.type == TROVE_SERVE_ACCEPT && a.mode == TROVE_SERVE_JOIN && a.events == 3000 &&
          a.session == first_session);
    CHECK(fd2 >= 0 && send_named(fd2, 3000, 4000) == 0);
    if (fd2 >= 0)
        close(fd2);
    if (fd >= 0)
        close(fd);
    CHECK_EQ_INT(test_serve_wait_log("capture t4: ended", 1), 0);
    /* replace: a new session without append, told the stored capture's events */
    fd = producer_hello("t4", "");
    CHECK(fd >= 0 && read_answer(fd, &a) == 0);
    CHECK(a.type == TROVE_SERVE_ACCEPT && a.mode == TROVE_SERVE_REPLACE && a.events == 4000 &&
          a.session > first_session);
    CHECK_EQ_INT(test_serve_log_count("replaces the stored capture (4000 events)"), 1);
    CHECK(fd >= 0 && send_named(fd, 0, 500) == 0);
    if (fd >= 0)
        close(fd);
    CHECK_EQ_INT(test_serve_wait_log("capture t4: ended", 2), 0);
    /* append: told the stored events */
    fd = producer_hello("t4", ",\"append\":true");
    CHECK(fd >= 0 && read_answer(fd, &a) == 0);
    CHECK(a.type == TROVE_SERVE_ACCEPT && a.mode == TROVE_SERVE_APPEND && a.events == 500);
    /* ... then a bad frame: an error line, then the close; what came before stays */
    CHECK(fd >= 0 && send_named(fd, 500, 700) == 0 &&
          test_write_all(fd, "TV\x09\x01garbage-garbage", 20) == 0);
    CHECK(fd >= 0 && read_answer(fd, &a) == 0);
    CHECK(a.type == TROVE_SERVE_ERROR && strstr(a.reason, "frame") != NULL);
    CHECK(fd >= 0 && closed_by_service(fd));
    if (fd >= 0)
        close(fd);
    /* refuse: append to a capture the store does not have; then the close */
    fd = producer_hello("t5", ",\"append\":true");
    CHECK(fd >= 0 && read_answer(fd, &a) == 0);
    CHECK(a.type == TROVE_SERVE_REFUSE && strstr(a.reason, "no capture named t5") != NULL);
    CHECK(fd >= 0 && closed_by_service(fd));
    if (fd >= 0)
        close(fd);
    /* refuse: a bad hello */
    fd = producer_hello("t 5", "");
    CHECK(fd >= 0 && read_answer(fd, &a) == 0);
    CHECK(a.type == TROVE_SERVE_REFUSE && strstr(a.reason, "capture") != NULL);
    if (fd >= 0)
        close(fd);
    /* A producer that never reads what it is told: every event committed all the same. */
    fd = producer_hello("t6", "");
    CHECK(fd >= 0 && send_named(fd, 0, 20000) == 0);
    if (fd >= 0)
        close(fd);
    CHECK_EQ_INT(test_serve_wait_log("capture t6: ended", 1), 0);
    CHECK_EQ_INT(test_serve_log_count("capture t6) closed"), 0); /* no error for it */
    CHECK_EQ_INT(test_serve_stop(), TROVE_OK);
    CHECK_EQ_INT(trove_store_open(store, TROVE_STORE_READONLY, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "t4", &info, NULL), TROVE_OK);
    CHECK_EQ_INT(info.events, 700);
    CHECK_EQ_INT(trove_capture_info(s, "t5", &info, NULL), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_capture_info(s, "t6", &info, NULL), TROVE_OK);
    CHECK_EQ_INT(info.events, 20000);
    trove_store_close(s);
}

/* Two producers, a raw and a packed viewer from the start and a from=start viewer that joins
 * late: every viewer decodes exactly the events sent, and the store holds them. */
static void test_live(void)
{
    pthread_t prod[2];
    struct producer p[2] = {{0, 0}, {1, 0}};
    struct test_viewer v[3];
    struct trove_store *s = NULL;
    struct trove_capture_info info;

    CHECK_EQ_INT(test_serve_start(store, 50, url, sizeof url, sock, sizeof sock), TROVE_OK);
    CHECK(url[0] != 0);
    memset(v, 0, sizeof v);
    for (int i = 0; i < 3; i++) {
        v[i].url = url;
        v[i].capture = "t1";
        v[i].wire = i == 1 ? TROVE_WIRE_PACKED : TROVE_WIRE_RAW;
        v[i].from_start = i == 2;
        v[i].keep = 1;
    }
    /* Two viewers wait for the capture; the third joins after it started. */
    CHECK_EQ_INT(test_viewer_start(&v[0]), 0);
    CHECK_EQ_INT(test_viewer_start(&v[1]), 0);
    usleep(200000);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&prod[i], NULL, producer_thread, &p[i]) == 0);
    usleep(20000);
    CHECK_EQ_INT(test_viewer_start(&v[2]), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(prod[i], NULL);
        CHECK(p[i].ok);
    }
    for (int i = 0; i < 3; i++) {
        test_viewer_join(&v[i]);
        check_viewer(&v[i]);
    }
    CHECK_EQ_INT(test_serve_stop(), TROVE_OK);
    CHECK_EQ_INT(trove_store_open(store, TROVE_STORE_READONLY, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "t1", &info, NULL), TROVE_OK);
    CHECK_EQ_INT(info.events, 2 * EVENTS);
    CHECK_EQ_INT(info.names, 5);
    trove_store_close(s);
    for (int i = 0; i < 3; i++)
        test_viewer_free(&v[i]);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    snprintf(root, sizeof root, "/tmp/trove-serve-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    snprintf(store, sizeof store, "%s/s", root);
    RUN(test_live);
    RUN(test_catch_up);
    RUN(test_samples);
    RUN(test_profile_orphan);
    RUN(test_answers);
    if (test_failed == 0)
        test_rm_rf(root);
    return test_done();
}
