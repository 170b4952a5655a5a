/*
 * test_client.c: libtrove-client against trove's own decoder. The test listens on a unix
 * socket of its own, standing in for `trove serve`, reads the whole stream a client sends
 * and takes it apart with the service's framer and hello parser and trove_wire_decode:
 * the names and raw frames the client's own encoder writes must be exactly what trove
 * accepts. Then: every zone of four threads present with consistent nesting, a program
 * with no service that finishes at once and counts its drops, on-demand mode, and a service
 * that refuses the first connection (the client tries again, counts what it wrote there as
 * lost, and does not call the next hello an append). Last,
 * the real thing: eight threads of a million zones each into `trove serve` run in this
 * process, and the capture it stores read back, every zone there, nested and named, at
 * the right time.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/client_wire.h"
#include "net/producer.h"
#include "support_serve.h"
#include "testutil.h"
#include "trove/capture.h"
#include "trove/client.h"
#include "trove/event.h"
#include "trove/backend.h"
#include "trove/wire.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- a stand-in service: accepts connections one after another, keeps every byte ---- */

struct sink {
    char dir[64], path[128];
    int lfd;
    pthread_t thread;
    pthread_mutex_t lock;
    int stop;
    struct trove_bytes data; /* the last connection's bytes */
    int connections;
    int failed;
    int refuse;              /* connections to refuse: a refuse line once 32 KiB have come
                                (the client wrote events before it read the refusal), then
                                the close */
    int answer;              /* answer the others with an accept */
};

static void *sink_main(void *arg)
{
    struct sink *s = arg;
    for (;;) {
        struct pollfd p = {s->lfd, POLLIN, 0};
        pthread_mutex_lock(&s->lock);
        int stop = s->stop;
        pthread_mutex_unlock(&s->lock);
        if (stop)
            break;
        if (poll(&p, 1, 20) <= 0)
            continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        uint8_t buf[65536];
        ssize_t n;
        static const char refuse[] = "{\"type\":\"refuse\",\"reason\":\"not now\"}\n";
        static const char accept[] = "{\"type\":\"accept\",\"capture\":\"c\",\"session\":1,"
                                     "\"mode\":\"new\",\"events\":0}\n";
        pthread_mutex_lock(&s->lock);
        s->connections++;
        s->data.len = 0;
        int refused = s->refuse > 0, answer = s->answer;
        s->refuse -= refused;
        pthread_mutex_unlock(&s->lock);
        for (size_t got = 0; refused && got < 32768 && (n = read(fd, buf, sizeof buf)) > 0;)
            got += (size_t)n; /* dropped, as the service drops a refused producer's stream */
        if (refused || answer) {
            const char *line = refused ? refuse : accept;
            if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
                pthread_mutex_lock(&s->lock);
                s->failed = 1;
                pthread_mutex_unlock(&s->lock);
            }
        }
        if (refused) {
            close(fd);
            continue;
        }
        while ((n = read(fd, buf, sizeof buf)) > 0) {
            pthread_mutex_lock(&s->lock);
            if (trove_bytes_append(&s->data, buf, (size_t)n) != TROVE_OK)
                s->failed = 1; /* checked after the join: CHECK is not thread-safe */
            pthread_mutex_unlock(&s->lock);
        }
        close(fd);
    }
    return NULL;
}

static void sink_path(struct sink *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "/tmp/trove-client-XXXXXX");
    CHECK(mkdtemp(s->dir) != NULL);
    snprintf(s->path, sizeof s->path, "%s/trove.sock", s->dir);
    s->lfd = -1;
}

static void sink_listen(struct sink *s)
{
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, s->path, strlen(s->path) + 1);
    s->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(s->lfd >= 0);
    CHECK_EQ_INT(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ_INT(listen(s->lfd, 4), 0);
    pthread_mutex_init(&s->lock, NULL);
    CHECK_EQ_INT(pthread_create(&s->thread, NULL, sink_main, s), 0);
}

static void sink_close(struct sink *s)
{
    if (s->lfd >= 0) {
        pthread_mutex_lock(&s->lock);
        s->stop = 1;
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        CHECK(!s->failed);
        close(s->lfd);
        pthread_mutex_destroy(&s->lock);
    }
    unlink(s->path);
    rmdir(s->dir);
}

/* ---- the stream taken apart as the service does ---- */

struct parsed {
    struct trove__hello hello;
    int got_hello;
    struct trove_wire_decoder *dec;
    struct trove_names *names;
    struct trove_event *ev;
    size_t n, cap;
    size_t names_frames, raw_frames;
    int unnamed; /* events whose name id had no name when they arrived */
};

static int on_hello(void *ctx, const uint8_t *line, size_t len)
{
    struct parsed *p = ctx;
    struct trove_diag d = {0};
    CHECK_EQ_INT(trove__hello_parse(line, len, &p->hello, &d), TROVE_OK);
    p->got_hello++;
    return TROVE_OK;
}

static int on_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct parsed *p = ctx;
    struct trove_wire_frame f;
    struct trove_diag d = {0};
    if (p->cap - p->n < TROVE_WIRE_MAX_EVENTS) {
        p->cap = (p->cap + TROVE_WIRE_MAX_EVENTS) * 2;
        p->ev = realloc(p->ev, p->cap * sizeof *p->ev);
        CHECK(p->ev != NULL);
    }
    int rc = trove_wire_decode(p->dec, frame, len, p->ev + p->n, p->cap - p->n, p->names, &f, &d);
    if (rc != TROVE_OK)
        fprintf(stderr, "decode: %s\n", d.msg);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK_EQ_INT(f.frame_len, len);
    if (f.format == TROVE_WIRE_NAMES)
        p->names_frames++;
    else {
        CHECK_EQ_INT(f.format, TROVE_WIRE_RAW);
        CHECK(f.n_events <= 2048);
        p->raw_frames++;
        for (size_t i = 0; i < f.n_events; i++)
            if (!trove_names_get(p->names, TROVE_NAME_EVENT, p->ev[p->n + i].name_id, 0, NULL))
                p->unnamed++;
    }
    p->n += f.n_events;
    return TROVE_OK;
}

static void parse(const struct trove_bytes *data, struct parsed *p)
{
    struct trove__framer fr;
    struct trove_diag d = {0};
    memset(p, 0, sizeof *p);
    CHECK_EQ_INT(trove_wire_decoder_new(&p->dec), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&p->names), TROVE_OK);
    trove__framer_init(&fr);
    CHECK_EQ_INT(trove__framer_feed(&fr, data->ptr, data->len, on_hello, on_frame, p, &d), TROVE_OK);
    CHECK_EQ_INT(trove__framer_pending(&fr), 0);
    CHECK_EQ_INT(p->got_hello, 1);
    trove__framer_free(&fr);
}

static void parsed_free(struct parsed *p)
{
    trove_wire_decoder_free(p->dec);
    trove_names_free(p->names);
    free(p->ev);
}

static const char *event_name(const struct parsed *p, const struct trove_event *e)
{
    const char *s = trove_names_get(p->names, TROVE_NAME_EVENT, e->name_id, 0, NULL);
    return s ? s : "";
}

/* ---- the encoder alone ---- */

static void test_wire(void)
{
    struct trove__client_buf b = {0};
    struct trove__client_names nf;
    struct trove_wire_decoder *dec;
    struct trove_names *names, *want;
    struct trove_wire_frame f;
    struct trove_diag d = {0};
    struct trove_event ev[4];
    char big[70000], clean[70000];

    memset(big, 'x', sizeof big);
    CHECK_EQ_INT(trove_wire_decoder_new(&dec), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&want), TROVE_OK);

    /* The same table through trove's encoder and the client's: the same bytes. */
    trove__client_names_begin(&b, &nf);
    trove__client_names_add(&b, &nf, TROVE_NAME_EVENT, 0, 0, "frame", 5);
    trove__client_names_add(&b, &nf, TROVE_NAME_EVENT, 1, 0, "layout", 6);
    trove__client_names_add(&b, &nf, TROVE_NAME_EVENT, 2, 0, "mark", 4);
    trove__client_names_add(&b, &nf, TROVE_NAME_EVENT, 300, 0, "gc \xc3\xa9", 5);
    trove__client_names_add(&b, &nf, TROVE_NAME_THREAD, 100, 101, "main", 4);
    trove__client_names_add(&b, &nf, TROVE_NAME_PROCESS, 100, 0, "app", 3);
    trove__client_names_end(&b, &nf);
    CHECK(!b.failed);
    test_check_vector("wire_names.bin", b.ptr, b.len);
    CHECK_EQ_INT(trove_wire_decode(dec, b.ptr, b.len, NULL, 0, names, &f, &d), TROVE_OK);
    CHECK_EQ_INT(f.n_names, 6);
    CHECK(strcmp(trove_names_get(names, TROVE_NAME_EVENT, 300, 0, NULL), "gc \xc3\xa9") == 0);
    CHECK(strcmp(trove_names_get(names, TROVE_NAME_THREAD, 100, 101, NULL), "main") == 0);

    /* A frame with no entry is no frame; a long, broken name is cut and repaired. */
    b.len = 0;
    trove__client_names_begin(&b, &nf);
    trove__client_names_end(&b, &nf);
    CHECK_EQ_INT(b.len, 0);
    big[10] = (char)0xff;
    big[65533] = (char)0xe2; /* a 3-byte character that would not fit: cut before it */
    big[65534] = (char)0x82;
    big[65535] = (char)0xac;
    size_t n = trove__client_sanitize(clean, TROVE__CLIENT_NAME_MAX + 1, big, sizeof big);
    CHECK_EQ_INT(n, 65533);
    CHECK_EQ_INT(clean[10], '?');
    CHECK_EQ_INT(trove__client_sanitize(clean, 4, "a\xc0\x80", 3), 3);
    CHECK(strcmp(clean, "a??") == 0);
    trove__client_names_begin(&b, &nf);
    trove__client_names_add(&b, &nf, TROVE_NAME_EVENT, 1u << 31, 0, clean, n);
    trove__client_names_add(&b, &nf, TROVE_NAME_EVENT, 7, 0, "", 0);
    trove__client_names_end(&b, &nf);
    CHECK_EQ_INT(trove_wire_decode(dec, b.ptr, b.len, NULL, 0, names, &f, &d), TROVE_OK);
    CHECK_EQ_INT(f.n_names, 2);
    size_t got = 0;
    CHECK(trove_names_get(names, TROVE_NAME_EVENT, 1u << 31, 0, &got) != NULL);
    CHECK_EQ_INT(got, 65533);

    /* A raw frame: the header, then the records as they sit in a ring. */
    b.len = 0;
    memset(ev, 0, sizeof ev);
    for (int i = 0; i < 2; i++) {
        ev[i].start_ns = 1000 + (uint64_t)i;
        ev[i].dur_ns = 5;
        ev[i].pid = 7;
        ev[i].tid = 8;
        ev[i].depth = (uint8_t)i;
        ev[i].name_id = 1;
    }
    trove__client_raw_header(&b, 2);
    memcpy(trove__client_buf_reserve(&b, sizeof ev[0] * 2), ev, sizeof ev[0] * 2);
    b.len += sizeof ev[0] * 2;
    struct trove_event out[4];
    CHECK_EQ_INT(trove_wire_decode(dec, b.ptr, b.len, out, 4, NULL, &f, &d), TROVE_OK);
    CHECK_EQ_INT(f.n_events, 2);
    CHECK(memcmp(out, ev, sizeof ev[0] * 2) == 0);

    /* Capture names: the service's rules. */
    CHECK(trove__client_capture_valid("sort-123"));
    CHECK(trove__client_capture_valid("a.b_c"));
    CHECK(!trove__client_capture_valid(""));
    CHECK(!trove__client_capture_valid(".x"));
    CHECK(!trove__client_capture_valid("-x"));
    CHECK(!trove__client_capture_valid("a/b"));
    memset(big, 'a', 129);
    big[129] = 0;
    CHECK(!trove__client_capture_valid(big));
    char cap[129];
    trove__client_default_capture(cap, sizeof cap, ".my prog", 42);
    CHECK(strcmp(cap, "_my_prog-42") == 0);
    trove__client_default_capture(cap, sizeof cap, "", 42);
    CHECK(strcmp(cap, "trove-client-42") == 0);
    trove__client_default_capture(cap, sizeof cap, big, 4000000000u);
    CHECK(trove__client_capture_valid(cap));
    CHECK_EQ_INT(strlen(cap), 128);

    /* The hello parses as the service parses it. */
    struct trove__hello h;
    b.len = 0;
    trove__client_hello(&b, "sort-1", 99, 1, 0, 0, 0);
    CHECK(b.len > 0 && b.ptr[b.len - 1] == '\n');
    CHECK_EQ_INT(trove__hello_parse(b.ptr, b.len - 1, &h, &d), TROVE_OK);
    CHECK(strcmp(h.capture, "sort-1") == 0 && strcmp(h.producer, "trove-client") == 0);
    CHECK_EQ_INT(h.pid, 99);
    CHECK_EQ_INT(h.append, 1);

    trove__client_buf_free(&b);
    trove_wire_decoder_free(dec);
    trove_names_free(names);
    trove_names_free(want);
}

/* ---- the client end to end ---- */

static int wait_connected(double seconds)
{
    struct trove_client_stats st;
    double until = now_s() + seconds;
    do {
        trove_client_stats(&st);
        if (st.connected)
            return 1;
        sleep_ms(1);
    } while (now_s() < until);
    return 0;
}

static void test_basic(void)
{
    struct sink s;
    struct parsed p;
    struct trove_client_options o = {0};
    struct trove_client_stats st;

    sink_path(&s);
    sink_listen(&s);
    o.socket_path = s.path;
    o.capture = "bad/name";
    CHECK_EQ_INT(trove_client_start(&o), -EINVAL);
    o.capture = "test-basic";
    CHECK_EQ_INT(trove_client_start(&o), 0);
    CHECK_EQ_INT(trove_client_start(&o), -EALREADY);
    CHECK(wait_connected(5));
    trove_client_thread_name("main \xff");
    {
        TROVE_ZONE("outer");
        TROVE_INSTANT("mark");
        TROVE_ZONE_BEGIN("inner");
        TROVE_COUNTER("bytes", 2.5);
        TROVE_ZONE_END();
    }
    TROVE_ZONE_END(); /* unmatched: ignored */
    trove_client_stop();
    trove_client_stop();
    trove_client_stats(&st);
    CHECK_EQ_INT(st.events, 4);
    CHECK_EQ_INT(st.sent, 4);
    CHECK_EQ_INT(st.dropped, 0);
    CHECK_EQ_INT(st.connects, 1);

    /* The service reads the connection to its end once the client has closed it. */
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&s.lock);
        int done = s.connections == 1 && s.data.len > 0;
        pthread_mutex_unlock(&s.lock);
        if (done)
            break;
        sleep_ms(2);
    }
    sink_close(&s); /* joins the reader: after the client closed, it has every byte */
    CHECK_EQ_INT(st.bytes, s.data.len);
    parse(&s.data, &p);
    CHECK(strcmp(p.hello.capture, "test-basic") == 0);
    CHECK_EQ_INT(p.hello.pid, (uint32_t)getpid());
    CHECK_EQ_INT(p.hello.append, 0);
    CHECK_EQ_INT(p.n, 4);
    CHECK_EQ_INT(p.unnamed, 0);
    /* Ring order: the instant, the counter, then the zones as they end (inner first). */
    CHECK(strcmp(event_name(&p, &p.ev[0]), "mark") == 0);
    CHECK_EQ_INT(p.ev[0].kind, TROVE_KIND_INSTANT);
    CHECK_EQ_INT(p.ev[0].depth, 1);
    CHECK(strcmp(event_name(&p, &p.ev[1]), "bytes") == 0);
    CHECK_EQ_INT(p.ev[1].kind, TROVE_KIND_COUNTER);
    CHECK(trove_counter_value(&p.ev[1]) == 2.5);
    CHECK(strcmp(event_name(&p, &p.ev[2]), "inner") == 0);
    CHECK_EQ_INT(p.ev[2].depth, 1);
    CHECK(strcmp(event_name(&p, &p.ev[3]), "outer") == 0);
    CHECK_EQ_INT(p.ev[3].depth, 0);
    CHECK_EQ_INT(p.ev[3].kind, TROVE_KIND_ZONE);
    CHECK(p.ev[3].start_ns <= p.ev[0].start_ns);
    CHECK(trove_event_end(&p.ev[2]) <= trove_event_end(&p.ev[3]));
    CHECK_EQ_INT(p.ev[3].pid, (uint32_t)getpid());
    CHECK(strcmp(trove_names_get(p.names, TROVE_NAME_THREAD, p.ev[0].pid, p.ev[0].tid, NULL),
                 "main ?") == 0);
    /* The process is named by the program (its comm), not by the capture. */
    CHECK(strcmp(trove_names_get(p.names, TROVE_NAME_PROCESS, p.ev[0].pid, 0, NULL),
                 "test_client") == 0);
    parsed_free(&p);
    trove_bytes_free(&s.data);

    /* ... or as the options say. */
    sink_path(&s);
    sink_listen(&s);
    o.process_name = "renderer \xff";
    CHECK_EQ_INT(trove_client_start(&o), 0);
    CHECK(wait_connected(5));
    TROVE_INSTANT("mark");
    trove_client_stop();
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&s.lock);
        int done = s.connections == 1 && s.data.len > 0;
        pthread_mutex_unlock(&s.lock);
        if (done)
            break;
        sleep_ms(2);
    }
    sink_close(&s);
    parse(&s.data, &p);
    CHECK_EQ_INT(p.n, 1);
    CHECK(strcmp(trove_names_get(p.names, TROVE_NAME_PROCESS, (uint32_t)getpid(), 0, NULL),
                 "renderer ?") == 0);
    parsed_free(&p);
    trove_bytes_free(&s.data);
}

#define THREADS 4
#define ITERS 25000 /* 4 zones each: 100,000 zones a thread */

static void *worker(void *arg)
{
    char name[32];
    snprintf(name, sizeof name, "worker %d", (int)(intptr_t)arg);
    trove_client_thread_name(name);
    for (int i = 0; i < ITERS; i++) {
        TROVE_ZONE("outer");
        TROVE_ZONE_BEGIN("mid");
        for (int j = 0; j < 2; j++) {
            TROVE_ZONE("leaf");
        }
        TROVE_ZONE_END();
    }
    return NULL;
}

static void test_threads(void)
{
    struct sink s;
    struct parsed p;
    struct trove_client_options o = {0};
    struct trove_client_stats st;
    pthread_t th[THREADS];

    sink_path(&s);
    sink_listen(&s);
    o.socket_path = s.path;
    o.capture = "test-threads";
    o.ring_events = 1u << 17; /* more than a thread records: nothing may drop */
    CHECK_EQ_INT(trove_client_start(&o), 0);
    CHECK(wait_connected(5));
    for (intptr_t i = 0; i < THREADS; i++)
        CHECK_EQ_INT(pthread_create(&th[i], NULL, worker, (void *)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    trove_client_stop();
    trove_client_stats(&st);
    CHECK_EQ_INT(st.events, THREADS * ITERS * 4);
    CHECK_EQ_INT(st.dropped, 0);
    CHECK_EQ_INT(st.sent, THREADS * ITERS * 4);
    sink_close(&s);
    parse(&s.data, &p);
    CHECK_EQ_INT(p.n, THREADS * ITERS * 4);
    CHECK_EQ_INT(p.unnamed, 0);

    /* Per thread, in ring order (a zone is recorded when it ends, after its children):
     * depth 2 "leaf" x2, then depth 1 "mid" holding them, then depth 0 "outer" holding it. */
    uint32_t tids[THREADS];
    size_t ntids = 0;
    for (int k = 0; k < THREADS; k++) {
        uint32_t tid = 0;
        size_t count = 0, want_next = 0;
        const struct trove_event *leaf[2] = {0}, *mid = NULL;
        int nleaf = 0;
        for (size_t i = 0; i < p.n; i++) {
            const struct trove_event *e = &p.ev[i];
            int seen = 0;
            for (size_t t = 0; t < ntids; t++)
                seen |= tids[t] == e->tid;
            if (seen || (tid && e->tid != tid))
                continue;
            tid = e->tid;
            count++;
            CHECK_EQ_INT(e->kind, TROVE_KIND_ZONE);
            CHECK(e->start_ns <= trove_event_end(e));
            const char *nm = event_name(&p, e);
            if (want_next < 2) {
                CHECK(strcmp(nm, "leaf") == 0);
                CHECK_EQ_INT(e->depth, 2);
                leaf[nleaf++] = e;
                want_next++;
            } else if (want_next == 2) {
                CHECK(strcmp(nm, "mid") == 0);
                CHECK_EQ_INT(e->depth, 1);
                for (int j = 0; j < 2; j++)
                    CHECK(leaf[j]->start_ns >= e->start_ns &&
                          trove_event_end(leaf[j]) <= trove_event_end(e));
                CHECK(leaf[0]->start_ns <= leaf[1]->start_ns);
                mid = e;
                want_next = 3;
            } else {
                CHECK(strcmp(nm, "outer") == 0);
                CHECK_EQ_INT(e->depth, 0);
                CHECK(mid->start_ns >= e->start_ns && trove_event_end(mid) <= trove_event_end(e));
                want_next = 0;
                nleaf = 0;
            }
        }
        CHECK_EQ_INT(count, ITERS * 4);
        CHECK(trove_names_get(p.names, TROVE_NAME_THREAD, (uint32_t)getpid(), tid, NULL) != NULL);
        tids[ntids++] = tid;
    }
    parsed_free(&p);
    trove_bytes_free(&s.data);
}

/* No service: the program goes on, the full ring drops and counts. When a service comes,
 * the ring's events go to it and then the gap: a "trove.dropped" counter of the process
 * holding how many were lost. */
static void test_no_service(void)
{
    struct sink s;
    struct parsed p;
    struct trove_client_options o = {0};
    struct trove_client_stats st;
    const int zones = 1000000;
    size_t gaps = 0, others = 0;

    sink_path(&s); /* nobody listens there yet */
    o.socket_path = s.path;
    o.capture = "test-absent";
    o.ring_events = 1024;
    CHECK_EQ_INT(trove_client_start(&o), 0);
    for (int i = 0; i < zones; i++) {
        TROVE_ZONE("z");
    }
    trove_client_stats(&st);
    CHECK_EQ_INT(st.connected, 0);
    CHECK_EQ_INT(st.sent, 0);
    CHECK_EQ_INT(st.events, (uint64_t)zones); /* the dropped ones were recorded too */
    CHECK_EQ_INT(st.dropped + st.pending, (uint64_t)zones);
    CHECK(st.dropped >= (uint64_t)zones - 65536); /* a main-thread ring from an earlier test
                                                     keeps its size */
    sink_listen(&s);
    CHECK(wait_connected(5));
    trove_client_stop();
    sink_close(&s);
    trove_client_stats(&st);
    CHECK_EQ_INT(st.events, (uint64_t)zones);
    CHECK_EQ_INT(st.sent + st.dropped, (uint64_t)zones);
    CHECK_EQ_INT(st.pending, 0);
    parse(&s.data, &p);
    for (size_t i = 0; i < p.n; i++) {
        const struct trove_event *e = &p.ev[i];
        if (strcmp(event_name(&p, e), "trove.dropped") == 0) {
            double v;
            memcpy(&v, &e->dur_ns, sizeof v);
            CHECK_EQ_INT(e->kind, TROVE_KIND_COUNTER);
            CHECK_EQ_INT(e->pid, (uint32_t)getpid());
            CHECK_EQ_INT(e->tid, 0);
            CHECK(v == (double)st.dropped);
            gaps++;
        } else {
            CHECK(strcmp(event_name(&p, e), "z") == 0);
            others++;
        }
    }
    CHECK_EQ_INT(gaps, 1);
    CHECK_EQ_INT(others, st.sent);
    CHECK_EQ_INT(p.unnamed, 0);
    parsed_free(&p);
    trove_bytes_free(&s.data);
}

/* Every event recorded is sent, dropped or pending, in every snapshot of the stats, while
 * threads record, exit and a service comes; pending is 0 after stop. Threads that exit while
 * no service reads them keep their rings up to 32 MiB (1,024 rings of 1,024 events here):
 * past that the oldest are given up, counted as dropped, and sent as the gap. */
#define ACC_THREADS 1100
#define ACC_RING 1024

static _Atomic int acc_stop, acc_bad;
static _Atomic uint64_t acc_checks;

static void *acc_checker(void *arg)
{
    (void)arg;
    while (!atomic_load(&acc_stop)) {
        struct trove_client_stats st;
        trove_client_stats(&st);
        if (st.events != st.sent + st.dropped + st.pending)
            atomic_store(&acc_bad, 1);
        atomic_fetch_add(&acc_checks, 1);
    }
    return NULL;
}

static void *acc_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ACC_RING; i++) {
        TROVE_ZONE("acc");
    }
    return NULL;
}

static void test_accounting(void)
{
    struct sink s;
    struct parsed p;
    struct trove_client_options o = {0};
    struct trove_client_stats st;
    pthread_t checker;
    double last_gap = -1;

    sink_path(&s); /* nobody listens there yet */
    o.socket_path = s.path;
    o.capture = "test-accounting";
    o.ring_events = ACC_RING;
    CHECK_EQ_INT(trove_client_start(&o), 0);
    CHECK_EQ_INT(pthread_create(&checker, NULL, acc_checker, NULL), 0);
    for (int i = 0; i < ACC_THREADS; i++) {
        pthread_t t;
        CHECK_EQ_INT(pthread_create(&t, NULL, acc_worker, NULL), 0);
        pthread_join(t, NULL);
    }
    /* The flush thread frees what is over the bound in its next rounds. */
    for (int i = 0; i < 5000; i++) {
        trove_client_stats(&st);
        if (st.pending <= (uint64_t)ACC_RING * ACC_RING)
            break;
        sleep_ms(2);
    }
    CHECK_EQ_INT(st.events, (uint64_t)ACC_THREADS * ACC_RING);
    CHECK_EQ_INT(st.sent, 0);
    CHECK(st.pending <= (uint64_t)ACC_RING * ACC_RING);
    CHECK(st.dropped >= (uint64_t)(ACC_THREADS - ACC_RING) * ACC_RING);
    sink_listen(&s);
    CHECK(wait_connected(5));
    for (int i = 0; i < 100; i++) {
        TROVE_ZONE("after");
    }
    trove_client_stop();
    atomic_store(&acc_stop, 1);
    pthread_join(checker, NULL);
    CHECK_EQ_INT(atomic_load(&acc_bad), 0);
    CHECK(atomic_load(&acc_checks) > 0);
    sink_close(&s);
    trove_client_stats(&st);
    CHECK_EQ_INT(st.events, (uint64_t)ACC_THREADS * ACC_RING + 100);
    CHECK_EQ_INT(st.pending, 0);
    CHECK_EQ_INT(st.sent + st.dropped, st.events);
    parse(&s.data, &p);
    size_t others = 0;
    for (size_t i = 0; i < p.n; i++) {
        if (strcmp(event_name(&p, &p.ev[i]), "trove.dropped") == 0)
            memcpy(&last_gap, &p.ev[i].dur_ns, sizeof last_gap);
        else
            others++;
    }
    CHECK_EQ_INT(others, st.sent);
    CHECK(last_gap == (double)st.dropped); /* the service was told of every loss */
    parsed_free(&p);
    trove_bytes_free(&s.data);
}

static void test_on_demand(void)
{
    struct sink s;
    struct parsed p;
    struct trove_client_options o = {0};
    struct trove_client_stats st;

    sink_path(&s);
    o.socket_path = s.path;
    o.capture = "test-ondemand";
    o.on_demand = 1;
    CHECK_EQ_INT(trove_client_start(&o), 0);
    for (int i = 0; i < 1000; i++) {
        TROVE_ZONE("before");
        TROVE_INSTANT("before mark");
    }
    sleep_ms(20);
    trove_client_stats(&st);
    CHECK_EQ_INT(st.events, 0);
    CHECK_EQ_INT(st.dropped, 0);
    sink_listen(&s);
    CHECK(wait_connected(5));
    for (int i = 0; i < 500; i++) {
        TROVE_ZONE("after");
    }
    trove_client_stop();
    sink_close(&s);
    parse(&s.data, &p);
    CHECK_EQ_INT(p.n, 500);
    for (size_t i = 0; i < p.n; i++)
        CHECK(strcmp(event_name(&p, &p.ev[i]), "after") == 0);
    CHECK(strcmp(p.hello.capture, "test-ondemand") == 0);
    parsed_free(&p);
    trove_bytes_free(&s.data);
}

/* A service that refuses the first connection: the client connects again (as it does when
 * no service is there), what it wrote on the refused connection counts as dropped, not
 * sent, and the next hello is not an append (the service took none of it). The events
 * recorded after are all sent on the accepted connection. */
static void test_refused(void)
{
    struct sink s;
    struct parsed p;
    struct trove_client_options o = {0};
    struct trove_client_stats st;
    size_t others = 0;
    int connections = 0;

    sink_path(&s);
    s.refuse = 1;
    s.answer = 1;
    o.socket_path = s.path;
    o.capture = "test-refused";
    CHECK_EQ_INT(trove_client_start(&o), 0);
    for (int i = 0; i < 2000; i++) { /* in the ring when the first connection comes */
        TROVE_ZONE("early");
    }
    sink_listen(&s);
    for (int i = 0; i < 5000 && connections < 2; i++) {
        pthread_mutex_lock(&s.lock);
        connections = s.connections;
        pthread_mutex_unlock(&s.lock);
        sleep_ms(2);
    }
    CHECK_EQ_INT(connections, 2);
    CHECK(wait_connected(5));
    for (int i = 0; i < 500; i++) {
        TROVE_ZONE("late");
    }
    trove_client_stop();
    sink_close(&s);
    trove_client_stats(&st);
    CHECK_EQ_INT(st.connects, 2);
    CHECK_EQ_INT(st.events, 2500);
    CHECK_EQ_INT(st.sent + st.dropped, 2500);
    CHECK(st.dropped >= 1000); /* 32 KiB of the early ones went to the refused connection */
    parse(&s.data, &p); /* the accepted connection */
    CHECK_EQ_INT(p.hello.append, 0);
    for (size_t i = 0; i < p.n; i++)
        others += strcmp(event_name(&p, &p.ev[i]), "trove.dropped") != 0;
    CHECK_EQ_INT(others, st.sent);
    CHECK(st.sent >= 500);
    parsed_free(&p);
    trove_bytes_free(&s.data);
}

#ifndef __SANITIZE_THREAD__ /* TSan does not support threads started after a fork */
/* fork(): the child has no client until it starts one; its events carry its own pid. */
static void test_fork(void)
{
    struct sink s;
    struct parsed p;
    struct trove_client_options o = {0};

    sink_path(&s);
    sink_listen(&s);
    o.socket_path = s.path;
    o.capture = "test-parent";
    CHECK_EQ_INT(trove_client_start(&o), 0);
    CHECK(wait_connected(5));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        struct trove_client_stats st;
        int bad = 0;
        TROVE_ZONE_BEGIN("child before start"); /* no client: not recorded */
        TROVE_ZONE_END();
        trove_client_stop(); /* nothing to stop */
        o.capture = "test-child";
        bad |= trove_client_start(&o) != 0;
        bad |= !wait_connected(5);
        {
            TROVE_ZONE("child zone");
        }
        trove_client_stop();
        trove_client_stats(&st);
        bad |= st.sent != 1;
        _exit(bad);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    trove_client_stop();
    /* The sink reads one connection at a time and keeps the last: the child's, which
     * waited in the backlog until the parent closed. Wait for the sink to take it (the
     * child closed it before it exited, so once accepted it reads to its end at once). */
    for (int i = 0; i < 500; i++) {
        int n;
        pthread_mutex_lock(&s.lock);
        n = s.connections;
        pthread_mutex_unlock(&s.lock);
        if (n >= 2)
            break;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    nanosleep(&(struct timespec){0, 200000000}, NULL);
    sink_close(&s);
    parse(&s.data, &p);
    CHECK(strcmp(p.hello.capture, "test-child") == 0); /* accepted after the parent's */
    CHECK_EQ_INT(p.n, 1);
    CHECK(p.n == 1 && strcmp(event_name(&p, &p.ev[0]), "child zone") == 0);
    CHECK(p.n == 1 && p.ev[0].pid == (uint32_t)pid);
    parsed_free(&p);
    trove_bytes_free(&s.data);
}
#endif

/* ---- into the real service ---------------------------------------------------------- */

static char sv_root[64], sv_store[96], sv_sock[256];

#define SV_THREADS 8
#define SV_ROUNDS 250000 /* 4 zones each: 1,000,000 zones a thread */

static void *sv_worker(void *arg)
{
    char name[32];
    snprintf(name, sizeof name, "worker %d", (int)(intptr_t)arg);
    trove_client_thread_name(name);
    for (int i = 0; i < SV_ROUNDS; i++) {
        TROVE_ZONE("outer");
        {
            TROVE_ZONE("inner a");
        }
        {
            TROVE_ZONE("inner b");
        }
        {
            TROVE_ZONE("inner c");
        }
    }
    return NULL;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *name_of(const struct trove_names *n, const struct trove_event *e)
{
    size_t len;
    const char *s = trove_names_get(n, TROVE_NAME_EVENT, e->name_id, 0, &len);
    return s ? s : "";
}

/* One thread's events, in the order it recorded them: rounds of the three inner zones
 * (depth 1, in order, apart) inside their outer zone (depth 0). Durations were rounded on
 * their own from ticks, so an end may be off by a nanosecond. */
static int check_rounds(const struct trove_event *const *ev, size_t n,
                        const struct trove_names *names)
{
    static const char *const want[4] = {"inner a", "inner b", "inner c", "outer"};
    if (n != (size_t)SV_ROUNDS * 4)
        return 0;
    for (size_t i = 0; i < n; i += 4) {
        const struct trove_event *o = ev[i + 3];
        for (int k = 0; k < 4; k++)
            if (strcmp(name_of(names, ev[i + k]), want[k]) != 0 || ev[i + k]->kind != 0 ||
                ev[i + k]->depth != (k == 3 ? 0 : 1))
                return 0;
        for (int k = 0; k < 3; k++) {
            const struct trove_event *z = ev[i + k];
            if (z->start_ns < o->start_ns || z->start_ns + z->dur_ns > o->start_ns + o->dur_ns + 1)
                return 0;
            if (k < 2 && z->start_ns + z->dur_ns > ev[i + k + 1]->start_ns + 1)
                return 0;
        }
        if (i > 0 && ev[i - 1]->start_ns + ev[i - 1]->dur_ns > o->start_ns + 1)
            return 0;
    }
    return 1;
}

static void test_real_service(void)
{
    pthread_t th[SV_THREADS];
    struct trove_client_options o;
    struct trove_client_stats st;
    struct trove_store *s = NULL;
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    const uint64_t zones = (uint64_t)SV_THREADS * SV_ROUNDS * 4;
    uint64_t before, after;

    snprintf(sv_root, sizeof sv_root, "/tmp/trove-client-serve-XXXXXX");
    CHECK(mkdtemp(sv_root) != NULL);
    snprintf(sv_store, sizeof sv_store, "%s/s", sv_root);
    CHECK_EQ_INT(test_serve_start(sv_store, 0, NULL, 0, sv_sock, sizeof sv_sock), TROVE_OK);
    CHECK(sv_sock[0] != 0);

    memset(&o, 0, sizeof o);
    o.socket_path = sv_sock;
    o.capture = "eight";
    o.ring_events = (size_t)SV_ROUNDS * 4; /* a whole run fits: nothing may be dropped */
    CHECK_EQ_INT(trove_client_start(&o), 0);
    before = mono_ns();
    TROVE_INSTANT("mark");
    after = mono_ns();
    for (int i = 0; i < SV_THREADS; i++)
        CHECK_EQ_INT(pthread_create(&th[i], NULL, sv_worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < SV_THREADS; i++)
        pthread_join(th[i], NULL);
    trove_client_stop();
    trove_client_stats(&st);
    CHECK_EQ_INT(st.events, zones + 1);
    CHECK_EQ_INT(st.dropped, 0);
    CHECK_EQ_INT(st.sent, zones + 1);
    CHECK_EQ_INT(test_serve_stop(), TROVE_OK);

    CHECK_EQ_INT(trove_store_open(sv_store, TROVE_STORE_READONLY, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(test_capture_load(s, "eight", &ev, names), TROVE_OK);
    CHECK_EQ_INT(ev.len, zones + 1);
    /* Each thread's zones, by its name. */
    const struct trove_event **mine = malloc((size_t)SV_ROUNDS * 4 * sizeof *mine);
    CHECK(mine != NULL);
    int found = 0, marks = 0;
    for (int k = 0; mine && k < SV_THREADS; k++) {
        char want[32];
        size_t n = 0, len;
        snprintf(want, sizeof want, "worker %d", k);
        for (size_t i = 0; i < ev.len; i++) {
            const char *tn = trove_names_get(names, TROVE_NAME_THREAD, ev.ev[i].pid,
                                             ev.ev[i].tid, &len);
            if (tn && len == strlen(want) && !memcmp(tn, want, len) && n < (size_t)SV_ROUNDS * 4)
                mine[n++] = &ev.ev[i];
        }
        CHECK_EQ_INT(n, (uint64_t)SV_ROUNDS * 4);
        CHECK(check_rounds(mine, n, names));
        found++;
    }
    CHECK_EQ_INT(found, SV_THREADS);
    /* The mark's time, converted by the service from the client's clock, is the time it was
     * recorded (to within the calibration's error, far under the bound). */
    for (size_t i = 0; i < ev.len; i++)
        if (!strcmp(name_of(names, &ev.ev[i]), "mark")) {
            marks++;
            CHECK(ev.ev[i].kind == TROVE_KIND_INSTANT);
            CHECK(ev.ev[i].start_ns + 20000000u >= before && ev.ev[i].start_ns <= after + 20000000u);
        }
    CHECK_EQ_INT(marks, 1);
    free(mine);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
    if (test_failed == 0)
        test_rm_rf(sv_root);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_wire);
    RUN(test_basic);
    RUN(test_threads);
    RUN(test_no_service);
    RUN(test_accounting);
    RUN(test_on_demand);
    RUN(test_refused);
#ifndef __SANITIZE_THREAD__
    RUN(test_fork);
#endif
    RUN(test_real_service);
    return test_done();
}
