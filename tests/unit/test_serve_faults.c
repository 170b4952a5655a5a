/*
 * test_serve_faults.c: a disk that fills up during a live capture. The service runs in this
 * process on its threads; a producer sends a capture for about a second over the unix
 * socket while a viewer watches it; a third of the way in, every write, fsync, rename and
 * link of the store starts failing with ENOSPC (trove_testing_io_fail_at, sticky), and two
 * thirds of the way in the space comes back. The viewer must get every event, in order, and
 * the end, as if nothing happened (live delivery never waits on the store), and enough of
 * them (600,000) that segments fill while the disk is full; GET /api/status
 * while the disk is full must report the capture's failed commits and say why; once space
 * is back the commits resume, and after the stop the store holds every event — nothing
 * lost, since the service keeps what it could not commit and commits it later.
 */
#define _GNU_SOURCE /* usleep */

#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "trove/capture.h"
#include "trove/import.h"
#include "trove/serve.h"
#include "trove/testing.h"
#include "trove/volume.h"
#include "trove/wire.h"

#define EVENTS 600000u
#define BATCH 20000u

static char root[64], store[96], url[128], sock[256];

static int producer_ok;
static atomic_int disk_full; /* set once the fault is armed: the second half waits for it */

static void *producer_thread(void *arg)
{
    struct trove_event *ev = calloc(EVENTS, sizeof *ev);
    struct trove_names *names = NULL;
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes buf = {0};
    const char *hello = "{\"capture\":\"full\",\"producer\":\"p\",\"pid\":7}\n";
    int fd, ok;

    (void)arg;
    trove_names_new(&names);
    trove_wire_encoder_new(&enc);
    for (uint32_t i = 0; ev && i < EVENTS; i++) {
        ev[i].start_ns = 1000u * i;
        ev[i].dur_ns = 10;
        ev[i].pid = 7;
        ev[i].tid = i % 2;
        ev[i].name_id = 1;
    }
    trove_names_set(names, TROVE_NAME_EVENT, 1, 0, "zone", 4);
    fd = test_unix_connect(sock);
    ok = ev && fd >= 0 &&
         test_write_all(fd, hello, strlen(hello)) == 0 &&
         trove_wire_encode_names(names, 0, trove_names_count(names), &buf) == TROVE_OK &&
         test_write_all(fd, buf.ptr, buf.len) == 0;
    for (uint32_t i = 0; ok && i < EVENTS; i += BATCH) {
        buf.len = 0;
        ok = trove_wire_encode(enc, TROVE_WIRE_PACKED, ev + i, BATCH, &buf) == TROVE_OK &&
             test_write_all(fd, buf.ptr, buf.len) == 0;
        usleep(35000); /* about a second in all */
        while (ok && i + BATCH == EVENTS / 2 / BATCH * BATCH && !atomic_load(&disk_full))
            usleep(10000); /* half sent: the rest goes to a full disk */
    }
    if (fd >= 0)
        close(fd);
    producer_ok = ok;
    trove_bytes_free(&buf);
    trove_wire_encoder_free(enc);
    trove_names_free(names);
    free(ev);
    return NULL;
}

struct viewer {
    struct trove_wire_decoder *dec;
    struct trove_names *names;
    struct trove_event *ev;
    uint64_t got, next, end_events;
    int hello, end, errors, close_code, rc;
};

static int v_text(void *ctx, const char *json, size_t len)
{
    struct viewer *v = ctx;
    (void)len;
    if (strstr(json, "\"type\":\"hello\"")) {
        v->hello++;
    } else if (strstr(json, "\"type\":\"end\"")) {
        const char *p = strstr(json, "\"events\":");
        v->end++;
        v->end_events = p ? strtoull(p + 9, NULL, 10) : 0;
    } else {
        v->errors++;
    }
    return 0;
}

static int v_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct viewer *v = ctx;
    struct trove_wire_frame fr;
    if (trove_wire_decode(v->dec, frame, len, v->ev, TROVE_WIRE_MAX_EVENTS, v->names, &fr, NULL) !=
        TROVE_OK) {
        v->errors++;
        return 1;
    }
    for (size_t i = 0; i < fr.n_events; i++, v->got++) /* in order, each once */
        if (v->ev[i].start_ns != 1000u * v->next++)
            v->errors++;
    return 0;
}

static void *viewer_thread(void *arg)
{
    struct viewer *v = arg;
    struct trove_live_view_options vo;

    memset(&vo, 0, sizeof vo);
    vo.url = url;
    vo.capture = "full";
    vo.wire = TROVE_WIRE_PACKED;
    vo.on_text = v_text;
    vo.on_frame = v_frame;
    vo.ctx = v;
    v->rc = trove_live_view(&vo, &v->close_code, NULL);
    return NULL;
}

/* GET path from the service into out (the whole answer, headers too). */
static int http_get(const char *path, char *out, size_t cap)
{
    struct sockaddr_in sin;
    unsigned port = 0;
    char req[256];
    size_t got = 0;
    int fd;

    if (sscanf(url, "http://127.0.0.1:%u", &port) != 1)
        return -1;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
        return -1;
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
             path);
    if (connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0 ||
        test_write_all(fd, req, strlen(req)) != 0) {
        close(fd);
        return -1;
    }
    for (;;) {
        ssize_t r = read(fd, out + got, cap - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        if (got == cap - 1)
            break;
    }
    out[got] = '\0';
    close(fd);
    return 0;
}

/* The disk full a third of the way in, and back two thirds in (the top of this file). */
static void test_disk_full(void)
{
    pthread_t prod, view;
    struct viewer v;
    struct trove_store *s = NULL;
    struct trove_capture_info info;
    static char status[1 << 16];
    const char *cap;

    CHECK_EQ_INT(test_serve_start(store, 50, url, sizeof url, sock, sizeof sock), TROVE_OK);
    memset(&v, 0, sizeof v);
    trove_wire_decoder_new(&v.dec);
    trove_names_new(&v.names);
    v.ev = calloc(TROVE_WIRE_MAX_EVENTS, sizeof *v.ev);
    CHECK(pthread_create(&view, NULL, viewer_thread, &v) == 0);
    usleep(200000);
    CHECK(pthread_create(&prod, NULL, producer_thread, NULL) == 0);
    /* The disk fills once the capture has started and committed (on a loaded machine under a
     * sanitizer the producer can take longer than any fixed wait to get there). */
    for (int i = 0; i < 1200; i++) {
        const char *c, *k;
        if (http_get("/api/status", status, sizeof status) == 0 &&
            (c = strstr(status, "\"name\":\"full\"")) &&
            (k = strstr(c, "\"committed_events\":")) && strtoull(k + 19, NULL, 10) > 0)
            break;
        usleep(100000);
    }
    trove_testing_io_fail_at(1, ENOSPC, 1); /* the disk is full from now on */
    atomic_store(&disk_full, 1);
    usleep(350000);
    CHECK_EQ_INT(http_get("/api/status", status, sizeof status), 0);
    trove_testing_io_fail_at(0, 0, 0); /* space again */
    cap = strstr(status, "\"name\":\"full\"");
    CHECK(cap != NULL);
    if (cap) {
        const char *e = strstr(cap, "\"errors\":");
        CHECK(e && strtoull(e + 9, NULL, 10) > 0);
        CHECK(strstr(cap, "No space left on device") != NULL || strstr(cap, "space") != NULL);
    }
    pthread_join(prod, NULL);
    CHECK(producer_ok);
    pthread_join(view, NULL);
    CHECK_EQ_INT(v.rc, TROVE_OK);
    CHECK_EQ_INT(v.hello, 1);
    CHECK_EQ_INT(v.end, 1);
    CHECK_EQ_INT(v.errors, 0);
    CHECK_EQ_INT(v.got, EVENTS);
    CHECK_EQ_INT(v.end_events, EVENTS);
    CHECK_EQ_INT(test_serve_stop(), TROVE_OK);
    CHECK_EQ_INT(trove_store_open(store, TROVE_STORE_READONLY, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "full", &info, NULL), TROVE_OK);
    CHECK_EQ_INT(info.events, EVENTS); /* nothing lost */
    CHECK(trove_store_verify(s, TROVE_VERIFY_DEEP, &(struct trove_verify_report){0}, NULL,
                             NULL) == TROVE_OK);
    trove_store_close(s);
    trove_wire_decoder_free(v.dec);
    trove_names_free(v.names);
    free(v.ev);
    if (test_failed)
        fprintf(stderr, "status while full: %.2000s\n", status);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    snprintf(root, sizeof root, "/tmp/trove-serve-faults-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    snprintf(store, sizeof store, "%s/s", root);
    RUN(test_disk_full);
    if (test_failed == 0)
        test_rm_rf(root);
    return test_done();
}
