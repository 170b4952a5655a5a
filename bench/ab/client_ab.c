/*
 * client_ab.c: a zone's cost in libtrove-client, the same program linked against two builds
 * of the library (bench/client_ab.sh builds and runs it; it is not part of the trove binary), so that a change to the library is
 * judged with nothing else changed: `trove bench client`'s own harness moves with the
 * library. Two settings: "ring", no service and a ring that holds every zone (the hot path
 * alone), and "drain", a reader on a unix socket that reads and throws away (the service
 * draining, the flush thread at work beside the recording one). Prints the median ns per
 * zone of ROUNDS rounds of one thread's ZONES zones.
 * usage: client_ab ring|drain [ROUNDS] [ZONES]
 */
#define _GNU_SOURCE
#include <trove/client.h>

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long zones = 1000000;
static double ns_per_zone;
static int lfd = -1;
static volatile int stopping;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *drain(void *arg)
{
    static char buf[256 << 10];
    int fd = -1;
    (void)arg;
    while (!stopping) {
        struct pollfd p = {fd >= 0 ? fd : lfd, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0)
            continue;
        if (fd < 0)
            fd = accept(lfd, NULL, NULL);
        else if (read(fd, buf, sizeof buf) <= 0) {
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void *job(void *arg)
{
    (void)arg;
    {
        TROVE_ZONE("zone"); /* the thread registers first: its ring is outside the timing */
    }
    double t0 = now();
    for (long i = 0; i < zones; i++) {
        TROVE_ZONE("zone");
    }
    ns_per_zone = (now() - t0) * 1e9 / (double)zones;
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int drain_mode = argc > 1 && !strcmp(argv[1], "drain"), rounds = argc > 2 ? atoi(argv[2]) : 7;
    char dir[] = "/tmp/trove-client-ab-XXXXXX", sock[128];
    struct trove_client_options o = {0};
    double v[101];
    pthread_t dt;

    if (argc < 2 || (!drain_mode && strcmp(argv[1], "ring")) || rounds < 1 || rounds > 101) {
        fprintf(stderr, "usage: client_ab ring|drain [ROUNDS] [ZONES]\n");
        return 2;
    }
    if (argc > 3)
        zones = atol(argv[3]);
    if (!mkdtemp(dir))
        return 1;
    snprintf(sock, sizeof sock, "%s/%s.sock", dir, drain_mode ? "trove" : "absent");
    if (drain_mode) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        memcpy(a.sun_path, sock, strlen(sock) + 1);
        if ((lfd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) ||
            listen(lfd, 4) || pthread_create(&dt, NULL, drain, NULL))
            return 1;
    } else {
        o.ring_events = (size_t)zones + 16; /* every zone fits: none dropped, no flush */
    }
    o.socket_path = sock;
    o.capture = "client-ab";
    for (int r = 0; r < rounds; r++) {
        struct trove_client_stats st;
        pthread_t th;
        trove_client_start(&o);
        for (int w = 0; drain_mode && w < 2000; w++) {
            trove_client_stats(&st);
            if (st.connected)
                break;
            usleep(1000);
        }
        pthread_create(&th, NULL, job, NULL);
        pthread_join(th, NULL);
        trove_client_stop();
        v[r] = ns_per_zone;
    }
    qsort(v, (size_t)rounds, sizeof v[0], cmp);
    printf("%.2f\n", v[rounds / 2]);
    stopping = 1;
    if (drain_mode) {
        pthread_join(dt, NULL);
        close(lfd);
    }
    unlink(sock);
    rmdir(dir);
    return 0;
}
