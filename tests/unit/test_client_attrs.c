/*
 * test_client_attrs.c: what libtrove-client sends besides names and times (docs/client.md):
 * a zone's texts and values, messages and frame marks.
 *
 * The client's own attrs frame encoder read back by trove's decoder (trove_attrs_wire_decode:
 * the frame must be exactly what trove accepts); then a program using every macro on two
 * threads into `trove serve` run in this process, and the capture read back: each zone's text
 * and values, each message's instant and text on the thread that recorded it, each frame from
 * mark to mark, in order, on its set's track. A viewer that asks for attributes (/api/live?attrs=1) gets an
 * attrs frame before each events frame that has rows, whose rows name zones of that frame;
 * one that does not ask never gets one, and one that joins from the start of the stored
 * capture gets the stored rows the same way. Last, the recording thread never allocates: with
 * every allocation on it failing (the test's link wraps malloc and its kin), zones with texts
 * and values, messages and frame marks are recorded all the same.
 */
#include <pthread.h>
#include <time.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client_wire.h"
#include "support_serve.h"
#include "testutil.h"
#include "trove/attrs.h"
#include "trove/capture.h"
#include "trove/client.h"
#include "trove/store.h"
#include "trove/wire.h"

/* ---- allocations of the recording thread, failed and counted ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);

static _Thread_local int armed;  /* this thread's allocations fail */
static atomic_int armed_allocs; /* and how many were tried */

void *__wrap_malloc(size_t n)
{
    if (armed)
        return atomic_fetch_add(&armed_allocs, 1), NULL;
    return __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
    if (armed)
        return atomic_fetch_add(&armed_allocs, 1), NULL;
    return __real_calloc(k, n);
}

void *__wrap_realloc(void *p, size_t n)
{
    if (armed)
        return atomic_fetch_add(&armed_allocs, 1), NULL;
    return __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
    if (armed)
        return atomic_fetch_add(&armed_allocs, 1), NULL;
    return __real_aligned_alloc(a, n);
}

/* ---- the client's attrs frame ---- */

static void test_frame(void)
{
    struct trove__client_attrs a;
    struct trove__client_buf b = {0};
    struct trove_attrs t = {0};
    struct trove_diag diag = {0};
    size_t len;
    const char *s;

    memset(&a, 0, sizeof a);
    trove__client_attrs_add(&a, 0, TROVE__CLIENT_SCOPE_ARG, "text", 4, TROVE__CLIENT_ATTR_STRING,
                            "frame 0", 7, 0);
    trove__client_attrs_add(&a, 0, TROVE__CLIENT_SCOPE_ARG, "value", 5, TROVE__CLIENT_ATTR_INT,
                            NULL, 0, INT64_MAX);
    trove__client_attrs_add(&a, 3, TROVE__CLIENT_SCOPE_ARG, "value", 5, TROVE__CLIENT_ATTR_INT,
                            NULL, 0, -1);
    trove__client_attrs_add(&a, 3, TROVE__CLIENT_SCOPE_ARG, "value_2", 7, TROVE__CLIENT_ATTR_JSON,
                            "18446744073709551615", 20, 0);
    trove__client_attrs_add(&a, 9, TROVE__CLIENT_SCOPE_FIELD, "log_message", 11,
                            TROVE__CLIENT_ATTR_STRING, "frame 0", 7, 0); /* a string again */
    trove__client_attrs_frame(&a, &b);
    CHECK(!b.failed && b.len > TROVE_WIRE_HEADER_SIZE);
    CHECK_EQ_INT(trove_attrs_wire_decode(b.ptr, b.len, &t, &diag), TROVE_OK);
    if (diag.msg[0])
        fprintf(stderr, "%s\n", diag.msg);
    CHECK_EQ_INT(t.n, 5);
    CHECK_EQ_INT(t.nstr, 6); /* text, frame 0, value, value_2, 18446744073709551615, log_message */
    CHECK(t.rows[0].event == 0 && t.rows[0].scope == TROVE_ATTR_ARG &&
          t.rows[0].type == TROVE_ATTR_STRING);
    s = trove_attrs_string(&t, t.rows[0].key, &len);
    CHECK(s && len == 4 && !memcmp(s, "text", 4));
    s = trove_attrs_string(&t, t.rows[0].v.s, &len);
    CHECK(s && len == 7 && !memcmp(s, "frame 0", 7));
    CHECK(t.rows[1].type == TROVE_ATTR_INT && t.rows[1].v.i == INT64_MAX);
    CHECK(t.rows[2].event == 3 && t.rows[2].v.i == -1 && t.rows[2].key == t.rows[1].key);
    CHECK(t.rows[3].type == TROVE_ATTR_JSON);
    CHECK(t.rows[4].event == 9 && t.rows[4].scope == TROVE_ATTR_FIELD &&
          t.rows[4].v.s == t.rows[0].v.s);
    trove_attrs_free(&t);
    /* no rows: no frame; the same table again after a reset */
    trove__client_attrs_reset(&a);
    b.len = 0;
    trove__client_attrs_frame(&a, &b);
    CHECK_EQ_INT(b.len, 0);
    trove__client_attrs_add(&a, 2, TROVE__CLIENT_SCOPE_ARG, "text", 4, TROVE__CLIENT_ATTR_STRING,
                            "", 0, 0);
    trove__client_attrs_frame(&a, &b);
    CHECK_EQ_INT(trove_attrs_wire_decode(b.ptr, b.len, &t, NULL), TROVE_OK);
    CHECK(t.n == 1 && t.nstr == 2 && t.rows[0].event == 2);
    trove_attrs_free(&t);
    /* many distinct strings: the interning grows past its first slots */
    trove__client_attrs_reset(&a);
    for (uint32_t i = 0; i < 1000; i++) {
        char v[16];
        int n = snprintf(v, sizeof v, "t%u", i % 300);
        trove__client_attrs_add(&a, i, TROVE__CLIENT_SCOPE_ARG, "text", 4,
                                TROVE__CLIENT_ATTR_STRING, v, (size_t)n, 0);
    }
    b.len = 0;
    trove__client_attrs_frame(&a, &b);
    CHECK_EQ_INT(trove_attrs_wire_decode(b.ptr, b.len, &t, NULL), TROVE_OK);
    CHECK(t.n == 1000 && t.nstr == 301);
    for (size_t i = 0; i < t.n; i++) {
        char v[16];
        int n = snprintf(v, sizeof v, "t%zu", i % 300);
        s = trove_attrs_string(&t, t.rows[i].v.s, &len);
        CHECK(s && len == (size_t)n && !memcmp(s, v, len));
    }
    trove_attrs_free(&t);
    trove__client_attrs_free(&a);
    trove__client_buf_free(&b);
}

/* ---- a program using every macro, into the service ---- */

#define FRAMES 40
#define STEPS 25

static char root[64], store[96], sock[160], url[128];

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
    nanosleep(&ts, NULL);
}
static atomic_int go;

/* The second thread: physics steps, its own frame set, a value past INT64_MAX, a message
 * of a thousand bytes. */
static void *physics(void *arg)
{
    (void)arg;
    trove_client_thread_name("physics");
    while (!atomic_load(&go))
        sleep_us(100);
    for (int i = 0; i < STEPS; i++) {
        {
            TROVE_ZONE("step");
            TROVE_ZONE_VALUE(UINT64_MAX - (uint64_t)i);
        }
        TROVE_FRAME_MARK_NAMED("physics");
    }
    {
        char big[1001];
        memset(big, 'x', 1000);
        big[1000] = 0;
        TROVE_MESSAGE(big);
    }
    return NULL;
}

/* The main thread's frames: "update" with two texts and two values, a "render" inside
 * with its own text, a message every fifth frame and a formatted one every seventh. */
static void frames(void)
{
    char text[32];
    TROVE_FRAME_MARK;
    for (int f = 0; f < FRAMES; f++) {
        {
            TROVE_ZONE("update");
            int n = snprintf(text, sizeof text, "frame %d", f);
            TROVE_ZONE_TEXT(text, n);
            TROVE_ZONE_VALUE(f);
            {
                TROVE_ZONE("render");
                TROVE_ZONE_TEXT("draw", 4);
            }
            TROVE_ZONE_TEXT("late", 4);
            TROVE_ZONE_VALUE(1000 + f);
        }
        if (f % 5 == 0)
            TROVE_MESSAGE("checkpoint");
        if (f % 7 == 0)
            TROVE_MESSAGEF("frame %d of %d", f, FRAMES);
        TROVE_FRAME_MARK;
    }
}

/* GET path of the service: the whole answer into out. */
static void get(const char *path, char *out, size_t cap)
{
    char head[512];
    snprintf(head, sizeof head, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
             path);
    CHECK_EQ_INT(test_http(url, head, NULL, 0, out, cap), 0);
}

/* The rows of event i of the capture, as "key=value" lines (ints in decimal, strings as
 * they are). */
static void rows_of(const struct trove_attrs *a, uint64_t i, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = 0;
    for (size_t r = trove_attrs_find(a, i); r < a->n && a->rows[r].event == i; r++) {
        size_t kl, vl;
        const char *k = trove_attrs_string(a, a->rows[r].key, &kl);
        char num[32];
        const char *v = num;
        if (a->rows[r].type == TROVE_ATTR_INT) {
            vl = (size_t)snprintf(num, sizeof num, "%lld", (long long)a->rows[r].v.i);
        } else {
            v = trove_attrs_string(a, a->rows[r].v.s, &vl);
        }
        at += (size_t)snprintf(out + at, cap - at, "%s%.*s=%.*s", at ? ";" : "", (int)kl, k,
                               (int)vl, v);
        if (at >= cap)
            break;
    }
}

static const char *name_of(const struct trove_names *names, const struct trove_event *e)
{
    size_t len;
    const char *s = trove_names_get(names, TROVE_NAME_EVENT, e->name_id, 0, &len);
    return s ? s : "?";
}

/* The frames of a viewer's WebSocket, until its end: every attrs frame comes right before an
 * events frame and names events of it. The attrs frames, their rows and the events. */
static int read_viewer(int fd, int *attrs_frames, uint64_t *rows, uint64_t *events)
{
    int bad = 0; /* on any thread: no CHECK here, the caller checks this */
    struct trove_wire_decoder *dec = NULL;
    struct trove_event *ev = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *ev);
    struct trove_attrs held = {0};
    int has = 0;

    if (!ev || trove_wire_decoder_new(&dec) != TROVE_OK) {
        free(ev);
        return 1;
    }
    for (;;) {
        uint8_t *body;
        uint64_t len;
        int op = test_ws_read(fd, &body, &len);
        if (op < 0 || op == 8) {
            free(body);
            break;
        }
        if (op == 1 && strstr((char *)body, "\"type\":\"end\"")) {
            free(body);
            break;
        }
        if (op == 2 && len >= TROVE_WIRE_HEADER_SIZE && ev) {
            if (body[2] == TROVE_WIRE_ATTRS) {
                bad += has; /* never two in a row */
                trove_attrs_free(&held);
                bad += trove_attrs_wire_decode(body, len, &held, NULL) != TROVE_OK;
                has = 1;
                (*attrs_frames)++;
                *rows += held.n;
            } else {
                struct trove_wire_frame fr;
                if (trove_wire_decode(dec, body, len, ev, TROVE_WIRE_MAX_EVENTS, NULL, &fr, NULL) !=
                    TROVE_OK) {
                    bad++;
                    fr.n_events = 0;
                }
                if (has) { /* the rows are of this frame's events */
                    bad += !(fr.n_events > 0 && held.n && held.rows[held.n - 1].event < fr.n_events);
                    trove_attrs_free(&held);
                    has = 0;
                }
                *events += fr.n_events;
            }
        }
        free(body);
    }
    bad += has;
    trove_attrs_free(&held);
    trove_wire_decoder_free(dec);
    free(ev);
    return bad;
}

struct viewer_arg {
    int fd, attrs_frames, bad;
    uint64_t rows, events;
};

static void *viewer_main(void *p)
{
    struct viewer_arg *v = p;
    v->bad = read_viewer(v->fd, &v->attrs_frames, &v->rows, &v->events);
    return NULL;
}

static void test_service(void)
{
    struct trove_client_options o;
    struct trove_client_stats st;
    struct trove_store *s = NULL;
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_attrs at = {0};
    struct viewer_arg va = {0}, vn = {0};
    pthread_t th, vt[2];
    int main_frames = 0, phys_frames = 0, updates = 0, renders = 0, steps = 0, checkpoints = 0;
    int formatted = 0, big = 0;
    uint32_t main_tid = 0;
    uint64_t last_frame_end = 0;
    char line[2048];

    snprintf(root, sizeof root, "/tmp/trove-client-attrs-XXXXXX");
    CHECK(mkdtemp(root) != NULL);
    snprintf(store, sizeof store, "%s/s", root);
    CHECK_EQ_INT(test_serve_start(store, 0, url, sizeof url, sock, sizeof sock), TROVE_OK);

    memset(&o, 0, sizeof o);
    o.socket_path = sock;
    o.capture = "game";
    CHECK_EQ_INT(trove_client_start(&o), 0);
    CHECK_EQ_INT(pthread_create(&th, NULL, physics, NULL), 0);
    TROVE_INSTANT("start"); /* the capture goes live: the viewers join it */
    for (int i = 0; i < 600 && test_status_of(url, "game", "events") < 1; i++)
        sleep_us(10000);
    va.fd = test_ws_open(url, "game&attrs=1");
    vn.fd = test_ws_open(url, "game");
    CHECK(va.fd >= 0 && vn.fd >= 0);
    CHECK_EQ_INT(pthread_create(&vt[0], NULL, viewer_main, &va), 0);
    CHECK_EQ_INT(pthread_create(&vt[1], NULL, viewer_main, &vn), 0);
    sleep_us(100000); /* the viewers' hellos are in: they take what comes from here */
    atomic_store(&go, 1);
    frames();
    pthread_join(th, NULL);
    trove_client_stop();
    trove_client_stats(&st);
    CHECK_EQ_INT(st.dropped, 0);
    CHECK_EQ_INT(st.attrs_dropped, 0);
    /* events: start, 40 updates and renders, 8 + 6 messages, 40 frames; 25 steps, 24
     * physics frames, the big message */
    CHECK_EQ_INT(st.events, 1 + 2 * FRAMES + 8 + 6 + FRAMES + STEPS + (STEPS - 1) + 1);
    CHECK_EQ_INT(st.sent, st.events);
    pthread_join(vt[0], NULL); /* they end with the capture, committed */
    pthread_join(vt[1], NULL);
    /* A viewer from the start of the stored capture: its attrs frames come from the store,
     * each before the events frame it names, every row of the capture */
    {
        struct viewer_arg vs = {0};
        vs.fd = test_ws_open(url, "game&from=start&attrs=1");
        CHECK(vs.fd >= 0);
        if (vs.fd >= 0) {
            CHECK_EQ_INT(read_viewer(vs.fd, &vs.attrs_frames, &vs.rows, &vs.events), 0);
            close(vs.fd);
        }
        CHECK(vs.attrs_frames > 0);
        CHECK_EQ_INT(vs.rows, va.rows);
        CHECK_EQ_INT(vs.events, st.events);
    }
    /* Over HTTP: the first update's attributes, the frames from marks */
    {
        static char out[1 << 16];
        const char *p;
        unsigned long long idx = 0;
        get("/api/captures/game/events?name=update&limit=1", out, sizeof out);
        CHECK((p = strstr(out, "\"index\":")) && sscanf(p, "\"index\":%llu", &idx) == 1);
        snprintf(line, sizeof line, "/api/captures/game/attrs?event=%llu", idx);
        get(line, out, sizeof out);
        CHECK(strstr(out, " 200 ") != NULL);
        CHECK(strstr(out, "\"key\":\"text\",\"type\":\"string\",\"value\":\"frame 0\\u000alate\"}") != NULL);
        CHECK(strstr(out, "\"key\":\"value_2\",\"type\":\"int\",\"value\":1000}") != NULL);
        get("/api/captures/game/frames", out, sizeof out);
        CHECK(strstr(out, "\"frames\":64,\"truncated\":false") != NULL); /* 40 + 24 */
        get("/api/captures/game/frames?limit=5", out, sizeof out);
        CHECK(strstr(out, "\"frames\":64,\"truncated\":true") != NULL);
        get("/api/captures/game/attrs", out, sizeof out);
        CHECK(strstr(out, " 400 ") && strstr(out, "needs event=INDEX"));
    }
    CHECK_EQ_INT(test_serve_stop(), TROVE_OK);
    close(va.fd);
    close(vn.fd);
    /* The viewer that asked got the rows (texts and values of 40 updates, 40 renders, the
     * messages', the steps' values) before their events; the other none. */
    CHECK_EQ_INT(va.bad, 0);
    CHECK_EQ_INT(vn.bad, 0);
    CHECK(va.attrs_frames > 0);
    CHECK_EQ_INT(va.rows, 3 * FRAMES + FRAMES + 14 + STEPS + 1);
    CHECK_EQ_INT(vn.attrs_frames, 0);
    CHECK_EQ_INT(va.events, vn.events);
    CHECK(vn.events >= st.events - 1);

    CHECK_EQ_INT(trove_store_open(store, TROVE_STORE_READONLY, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_names_new(&names), TROVE_OK);
    CHECK_EQ_INT(test_capture_load(s, "game", &ev, names), TROVE_OK);
    CHECK_EQ_INT(trove_capture_read_attrs(s, "game", &at, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(ev.len, st.events);
    CHECK_EQ_INT(at.n, va.rows);
    for (size_t i = 0; i < ev.len; i++) {
        const struct trove_event *e = &ev.ev[i];
        const char *n = name_of(names, e);
        size_t tl;
        const char *tn = trove_names_get(names, TROVE_NAME_THREAD, e->pid, e->tid, &tl);
        int phys = tn && tl == 7 && !memcmp(tn, "physics", 7);
        rows_of(&at, i, line, sizeof line);
        if (!strcmp(n, "update")) {
            char want[128];
            snprintf(want, sizeof want, "text=frame %d\nlate;value=%d;value_2=%d", updates,
                     updates, 1000 + updates);
            CHECK(!strcmp(line, want));
            CHECK(e->kind == TROVE_KIND_ZONE && e->depth == 0 && !phys);
            main_tid = e->tid;
            updates++;
        } else if (!strcmp(n, "render")) {
            CHECK(!strcmp(line, "text=draw") && e->depth == 1);
            renders++;
        } else if (!strcmp(n, "step")) { /* past INT64_MAX: the number as JSON text */
            char want[64];
            snprintf(want, sizeof want, "value=%llu",
                     (unsigned long long)(UINT64_MAX - (uint64_t)steps));
            CHECK(phys && !strcmp(line, want));
            CHECK(at.rows[trove_attrs_find(&at, i)].type == TROVE_ATTR_JSON);
            steps++;
        } else if (!strcmp(n, "message")) {
            CHECK(e->kind == TROVE_KIND_INSTANT && e->dur_ns == 0);
            CHECK(at.rows[trove_attrs_find(&at, i)].scope == TROVE_ATTR_FIELD);
            if (!strcmp(line, "log_message=checkpoint"))
                checkpoints++;
            else if (!strncmp(line, "log_message=frame ", 18) && strstr(line, " of 40"))
                formatted++;
            else if (phys && strlen(line) == 12 + 1000)
                big++;
            else
                CHECK(!"a message not sent");
        } else if (!strcmp(n, "frame")) {
            /* on the process's track "frames", back to back: each begins where the last
             * ended */
            CHECK(e->kind == TROVE_KIND_FRAME && e->extra == TROVE_FRAME_MARKS && e->depth == 0);
            CHECK(trove_tid_is_synthetic(e->tid) && tn && tl == 6 && !memcmp(tn, "frames", 6));
            CHECK(last_frame_end == 0 || e->start_ns == last_frame_end);
            CHECK(line[0] == 0);
            last_frame_end = e->start_ns + e->dur_ns;
            main_frames++;
        } else if (!strcmp(n, "physics")) {
            CHECK(e->kind == TROVE_KIND_FRAME && trove_tid_is_synthetic(e->tid));
            CHECK(tn && tl == 15 && !memcmp(tn, "frames: physics", 15));
            phys_frames++;
        } else {
            CHECK(line[0] == 0);
        }
    }
    CHECK_EQ_INT(updates, FRAMES);
    CHECK_EQ_INT(renders, FRAMES);
    CHECK_EQ_INT(steps, STEPS);
    CHECK_EQ_INT(checkpoints, 8);
    CHECK_EQ_INT(formatted, 6);
    CHECK_EQ_INT(big, 1);
    CHECK_EQ_INT(main_frames, FRAMES);
    CHECK_EQ_INT(phys_frames, STEPS - 1);
    CHECK(main_tid != 0);
    trove_attrs_free(&at);
    trove_events_free(&ev);
    trove_names_free(names);
    trove_store_close(s);
    if (test_failed == 0)
        test_rm_rf(root);
}

/* ---- the recording thread never allocates ---- */

static void test_no_alloc(void)
{
    struct trove_client_options o;
    struct trove_client_stats st;
    char text[16];

    memset(&o, 0, sizeof o);
    o.socket_path = "/nonexistent/trove.sock"; /* no service: the ring is all there is */
    o.capture = "alloc";
    o.ring_events = 1 << 16;
    CHECK_EQ_INT(trove_client_start(&o), 0);
    /* the thread's first event registers it and names are interned on first use: those may
     * allocate, once */
    {
        TROVE_ZONE("zone");
        TROVE_ZONE_TEXT("warm", 4);
    }
    TROVE_MESSAGE("warm");
    TROVE_FRAME_MARK;
    TROVE_FRAME_MARK_NAMED("set");
    TROVE_COUNTER("count", 1);
    atomic_store(&armed_allocs, 0);
    armed = 1;
    for (int i = 0; i < 1000; i++) {
        {
            TROVE_ZONE("zone");
            int n = snprintf(text, sizeof text, "item %d", i);
            TROVE_ZONE_TEXT(text, n);
            TROVE_ZONE_VALUE(i);
        }
        TROVE_MESSAGE("a message");
        TROVE_MESSAGEF("item %d", i);
        TROVE_FRAME_MARK;
        TROVE_FRAME_MARK_NAMED("set");
        TROVE_COUNTER("count", i);
    }
    armed = 0;
    CHECK_EQ_INT(atomic_load(&armed_allocs), 0);
    trove_client_stop();
    trove_client_stats(&st);
    /* warm-up: zone, message, no frame yet (the first marks), counter = 3; then each round
     * a zone, two messages, two frames and a counter = 6 */
    CHECK_EQ_INT(st.events, 3 + 1000 * 6);
    CHECK_EQ_INT(st.events, st.sent + st.dropped + st.pending);
    CHECK_EQ_INT(st.attrs_dropped, 0);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_frame);
    RUN(test_service);
    RUN(test_no_alloc);
    return test_done();
}
