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

#include "support_serve.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trove/capture.h"
#include "trove/event.h"
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
    int fd, ok;

    (void)arg;
    for (uint32_t i = 0; ev && i < EVENTS; i++) {
        ev[i].start_ns = 1000u * i;
        ev[i].dur_ns = 10;
        ev[i].pid = 7;
        ev[i].tid = i % 2;
        ev[i].name_id = 1;
    }
    fd = test_producer_hello(sock, "full", "p", ",\"pid\":7");
    ok = ev && fd >= 0 && test_send_name(fd, 1, "zone") == 0;
    for (uint32_t i = 0; ok && i < EVENTS; i += BATCH) {
        ok = test_send_events(fd, TROVE_WIRE_PACKED, ev + i, BATCH, BATCH) == 0;
        usleep(35000); /* about a second in all */
        while (ok && i + BATCH == EVENTS / 2 / BATCH * BATCH && !atomic_load(&disk_full))
            usleep(10000); /* half sent: the rest goes to a full disk */
    }
    if (fd >= 0)
        close(fd);
    producer_ok = ok;
    free(ev);
    return NULL;
}

/* GET path from the service into out (the whole answer, headers too). */
static int http_get(const char *path, char *out, size_t cap)
{
    char req[256];

    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
             path);
    return test_http(url, req, NULL, 0, out, cap);
}

/* The disk full a third of the way in, and back two thirds in (the top of this file). */
static void test_disk_full(void)
{
    pthread_t prod;
    struct test_viewer v;
    struct trove_store *s = NULL;
    struct trove_capture_info info;
    static char status[1 << 16];
    const char *cap;

    CHECK_EQ_INT(test_serve_start(store, 50, url, sizeof url, sock, sizeof sock), TROVE_OK);
    memset(&v, 0, sizeof v);
    v.url = url;
    v.capture = "full";
    v.wire = TROVE_WIRE_PACKED;
    v.keep = 1;
    CHECK_EQ_INT(test_viewer_start(&v), 0);
    usleep(200000);
    CHECK(pthread_create(&prod, NULL, producer_thread, NULL) == 0);
    /* The disk fills once the capture has started and committed (on a loaded machine under a
     * sanitizer the producer can take longer than any fixed wait to get there). */
    for (int i = 0; i < 1200 && test_status_of(url, "full", "committed_events") <= 0; i++)
        usleep(100000);
    trove_testing_io_fail_at(1, ENOSPC, 1); /* the disk is full from now on */
    atomic_store(&disk_full, 1);
    usleep(350000);
    /* until a commit has been refused (one takes longer than that on a loaded machine under
     * TSan, a capture's summaries being part of it) */
    for (int i = 0; i < 600 && test_status_of(url, "full", "errors") <= 0; i++)
        usleep(100000);
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
    test_viewer_join(&v);
    CHECK_EQ_INT(v.rc, TROVE_OK);
    CHECK_EQ_INT(v.hello, 1);
    CHECK_EQ_INT(v.ends, 1);
    CHECK_EQ_INT(v.errors + v.others + v.bad_frames, 0);
    CHECK_EQ_INT(v.got.len, EVENTS);
    CHECK_EQ_INT(v.end_events, EVENTS);
    {
        int order_ok = 1; /* in order, each once */
        for (size_t i = 0; i < v.got.len && order_ok; i++)
            order_ok = v.got.ev[i].start_ns == 1000u * i;
        CHECK(order_ok);
    }
    CHECK_EQ_INT(test_serve_stop(), TROVE_OK);
    CHECK_EQ_INT(trove_store_open(store, TROVE_STORE_READONLY, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_info(s, "full", &info, NULL), TROVE_OK);
    CHECK_EQ_INT(info.events, EVENTS); /* nothing lost */
    CHECK(trove_store_verify(s, TROVE_VERIFY_DEEP, &(struct trove_verify_report){0}, NULL,
                             NULL) == TROVE_OK);
    trove_store_close(s);
    test_viewer_free(&v);
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
