/*
 * bench_client.c: `trove bench client` — what a zone (begin + end) costs a thread that
 * records with libtrove-client, in three settings in one run: no service (every event past
 * the ring's size is dropped and counted), a service present and draining (a thread of the
 * benchmark accepts on a temporary unix socket and reads and discards, standing in for
 * `trove serve`), and the floor: a loop that only reads the clock twice and stores a
 * 32-byte record, which is what the client's hot path must do at the least; and a zone that
 * carries a 16-byte text (TROVE_ZONE_TEXT), the service draining. Each setting runs
 * --rounds times; the medians are reported (per thread: a thread's time / its zones).
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "bench.h"
#include "trove/client.h"

#define MAX_THREADS 64
#define FLOOR_RING 65536

enum mode { FLOOR, CLIENT, TEXT };

struct job {
    enum mode mode;
    uint64_t zones;
    double seconds;
    double rate;     /* paced: zones per second this thread records (0: as fast as it can) */
    double duration; /* paced: for this long */
};

/* The paced run: rate zones a second for duration seconds, in bursts of a millisecond's
 * worth, sleeping between them (a program with work between its zones). */
static void paced(struct job *j)
{
    double t0 = bench_now(), now;
    uint64_t done = 0;
    while ((now = bench_now() - t0) < j->duration) {
        uint64_t due = (uint64_t)(now * j->rate);
        for (; done < due; done++) {
            TROVE_ZONE("bench zone");
        }
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    j->zones = done;
}

struct floor_rec {
    uint64_t start, dur;
    uint32_t pid, tid;
    uint8_t kind, depth, extra, pad;
    uint32_t name_id;
};

static int floor_tsc; /* the floor reads the clock the client reads */

static uint64_t floor_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (floor_tsc)
        return __rdtsc();
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *job_main(void *arg)
{
    struct job *j = arg;
    if (j->mode != FLOOR) { /* the thread registers (its ring allocated and touched) first */
        TROVE_ZONE("bench zone");
    }
    double t0 = bench_now();
    if (j->mode == FLOOR) {
        struct floor_rec *ring = calloc(FLOOR_RING, sizeof *ring);
        if (!ring)
            return NULL;
        for (uint64_t i = 0; i < j->zones; i++) {
            uint64_t s = floor_now(), e = floor_now();
            struct floor_rec *r = &ring[i & (FLOOR_RING - 1)];
            r->start = s;
            r->dur = e - s;
            r->pid = 1;
            r->tid = 2;
            r->kind = 0;
            r->depth = 0;
            r->extra = 0;
            r->pad = 0;
            r->name_id = 1;
            __asm__ __volatile__("" : : "r"(r) : "memory"); /* the store must happen */
        }
        free(ring);
    } else if (j->rate > 0) {
        paced(j);
    } else if (j->mode == TEXT) {
        for (uint64_t i = 0; i < j->zones; i++) {
            TROVE_ZONE("bench zone");
            TROVE_ZONE_TEXT("0123456789abcdef", 16);
        }
    } else {
        for (uint64_t i = 0; i < j->zones; i++) {
            TROVE_ZONE("bench zone");
        }
    }
    j->seconds = bench_now() - t0;
    return NULL;
}

/* Run `threads` jobs at once; ns per zone per thread, averaged over the threads. */
static double run(enum mode mode, unsigned threads, uint64_t zones)
{
    pthread_t th[MAX_THREADS];
    struct job jobs[MAX_THREADS];
    double sum = 0;
    for (unsigned i = 0; i < threads; i++) {
        jobs[i].mode = mode;
        jobs[i].zones = zones;
        jobs[i].seconds = 0;
        jobs[i].rate = 0;
        pthread_create(&th[i], NULL, job_main, &jobs[i]);
    }
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        sum += jobs[i].seconds;
    }
    return sum / threads * 1e9 / (double)zones;
}

/* The stand-in service: accept, read and discard until told to stop. */
struct drain {
    int lfd;
    pthread_mutex_t lock;
    int stop;
};

static void *drain_main(void *arg)
{
    struct drain *d = arg;
    int fd = -1;
    static uint8_t buf[256 << 10]; /* as the service reads (ingest.c READ_CHUNK) */
    for (;;) {
        pthread_mutex_lock(&d->lock);
        int stop = d->stop;
        pthread_mutex_unlock(&d->lock);
        if (stop)
            break;
        struct pollfd p = {fd >= 0 ? fd : d->lfd, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0)
            continue;
        if (fd < 0) {
            fd = accept(d->lfd, NULL, NULL);
            continue;
        }
        if (read(fd, buf, sizeof buf) <= 0) {
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* Wait (up to 2 s) for the client to connect to the stand-in service. */
static void wait_connected(void)
{
    struct trove_client_stats st;
    for (int w = 0; w < 2000; w++) {
        trove_client_stats(&st);
        if (st.connected)
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* The sustained run: T threads at rate/T zones a second each for `seconds`, the service
 * draining; how many were recorded and dropped. */
static int run_paced(const char *sock, unsigned threads, double rate, double seconds,
                     uint64_t ring, int json)
{
    pthread_t th[MAX_THREADS];
    struct job jobs[MAX_THREADS];
    struct trove_client_options o = {.capture = "bench-client", .socket_path = sock};
    struct trove_client_stats st;
    uint64_t zones = 0;

    o.ring_events = (size_t)ring;
    if (trove_client_start(&o) != 0)
        return cli_error("bench client", "the client did not start");
    wait_connected();
    double t0 = bench_now();
    for (unsigned i = 0; i < threads; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].mode = CLIENT;
        jobs[i].rate = rate / threads;
        jobs[i].duration = seconds;
        pthread_create(&th[i], NULL, job_main, &jobs[i]);
    }
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        zones += jobs[i].zones;
    }
    double dt = bench_now() - t0;
    trove_client_stop();
    trove_client_stats(&st);
    if (json)
        printf("{\"threads\":%u,\"rate\":%.0f,\"seconds\":%.2f,\"zones\":%llu,"
               "\"zones_per_s\":%.0f,\"events_sent\":%llu,\"events_dropped\":%llu}\n",
               threads, rate, dt, (unsigned long long)zones, (double)zones / dt,
               (unsigned long long)st.sent, (unsigned long long)st.dropped);
    else
        printf("trove bench client: %u thread(s) at %.0f zones/s for %.2f s, the service "
               "draining\n  %llu zones recorded (%.1f M/s), %llu sent, %llu dropped\n",
               threads, rate, dt, (unsigned long long)zones, (double)zones / dt / 1e6,
               (unsigned long long)st.sent, (unsigned long long)st.dropped);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: trove bench client [--threads T] [--zones N] [--rounds R] [--json]\n"
               "       trove bench client --rate Z [--seconds S] [--threads T] [--ring E] [--json]\n\n"
               "ns per zone (begin + end) recorded with libtrove-client: with no service (drops),\n"
               "with a service draining (a reader on a temporary unix socket), and the floor loop\n"
               "(two clock reads and a 32-byte store) in the same run, and a zone with a 16-byte\n"
               "text (TROVE_ZONE_TEXT) with the service draining; then both into a ring that\n"
               "holds a whole round (at most 1,000,000 zones) with no service: the hot path\n"
               "alone. Medians of R rounds.\n"
               "  --threads T   recording threads (default 1)\n"
               "  --zones N     zones per thread and round (default 10000000)\n"
               "  --rounds R    rounds (default 5)\n"
               "  --json        {\"threads\":T,\"zones\":N,\"ns_per_zone\":...,\"ns_per_zone_floor\":...,\n"
               "                 \"ns_per_zone_disconnected\":...,\"ns_per_zone_text16\":...,\n"
               "                 \"ns_per_zone_ring\":...,\"ns_per_zone_ring_text16\":...,\n"
               "                 \"events_dropped\":...}\n"
               "  --rate Z      instead: record Z zones a second in all (paced, in 1 ms bursts)\n"
               "                for --seconds S (default 10) with the service draining, and say\n"
               "                how many were dropped; --ring E events per thread's ring\n");
}

int bench_client(int argc, char **argv)
{
    uint64_t threads = 1, zones = 10000000, rounds = 5, rate = 0, secs = 10, ring = 0;
    int json = 0, rc = 1;
    for (int i = 1; i < argc; i++) {
        uint64_t *dst = NULL;
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--threads"))
            dst = &threads;
        else if (!strcmp(argv[i], "--zones"))
            dst = &zones;
        else if (!strcmp(argv[i], "--rounds"))
            dst = &rounds;
        else if (!strcmp(argv[i], "--rate"))
            dst = &rate;
        else if (!strcmp(argv[i], "--seconds"))
            dst = &secs;
        else if (!strcmp(argv[i], "--ring"))
            dst = &ring;
        else
            return cli_error("bench client", "unknown option '%s'; see --help", argv[i]);
        if (dst && (i + 1 >= argc || cli_parse_u64(argv[++i], dst) != 0))
            return cli_error("bench client", "%s needs a number", argv[i - 1]);
    }
    if (threads < 1 || threads > MAX_THREADS || zones < 1 || rounds < 1 || rounds > 100)
        return cli_error("bench client", "--threads 1..%d, --zones >= 1, --rounds 1..100",
                         MAX_THREADS);

    char dir[] = "/tmp/trove-bench-client-XXXXXX", sock[128], absent[128];
    if (!mkdtemp(dir))
        return cli_error("bench client", "cannot make a scratch directory in /tmp");
    snprintf(sock, sizeof sock, "%s/trove.sock", dir);
    snprintf(absent, sizeof absent, "%s/absent.sock", dir);
    struct drain d = {.lfd = socket(AF_UNIX, SOCK_STREAM, 0), .lock = PTHREAD_MUTEX_INITIALIZER};
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, sock, strlen(sock) + 1);
    pthread_t dt;
    if (d.lfd < 0 || bind(d.lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(d.lfd, 4) != 0 ||
        pthread_create(&dt, NULL, drain_main, &d) != 0) {
        cli_error("bench client", "cannot listen on %s", sock);
        goto out;
    }

    if (rate > 0) {
        rc = run_paced(sock, (unsigned)threads, (double)rate, (double)secs, ring, json);
        goto stop;
    }
    double fl[100], dis[100], con[100], txt[100], hot[100], hott[100];
    /* the hot path alone: no service, a ring that holds every record of a round (a zone and
     * its text take three slots), so that nothing is dropped and no flush runs meanwhile */
    uint64_t hz = zones < 1000000 ? zones : 1000000;
    uint64_t dropped = 0;
    struct trove_client_stats st;
    {
        struct trove_client_options o = {.capture = "bench-client", .socket_path = absent};
        trove_client_start(&o); /* which clock the client takes, for the floor to take too */
        trove_client_stats(&st);
        trove_client_stop();
        floor_tsc = st.clock == TROVE_CLIENT_CLOCK_TSC;
    }
    for (uint64_t r = 0; r < rounds; r++) {
        struct trove_client_options o = {.capture = "bench-client"};
        fl[r] = run(FLOOR, (unsigned)threads, zones);

        o.socket_path = absent;
        trove_client_start(&o);
        dis[r] = run(CLIENT, (unsigned)threads, zones);
        trove_client_stop();

        o.socket_path = sock;
        trove_client_start(&o);
        wait_connected();
        con[r] = run(CLIENT, (unsigned)threads, zones);
        trove_client_stop();
        trove_client_stats(&st);
        dropped += st.dropped;

        trove_client_start(&o);
        wait_connected();
        txt[r] = run(TEXT, (unsigned)threads, zones);
        trove_client_stop();

        o.socket_path = absent;
        o.ring_events = (size_t)(3 * hz + 16);
        trove_client_start(&o);
        hot[r] = run(CLIENT, (unsigned)threads, hz);
        trove_client_stop();
        trove_client_start(&o);
        hott[r] = run(TEXT, (unsigned)threads, hz);
        trove_client_stop();
    }
    double mf = bench_median(fl, (unsigned)rounds), md = bench_median(dis, (unsigned)rounds),
           mc = bench_median(con, (unsigned)rounds), mt = bench_median(txt, (unsigned)rounds);
    double mh = bench_median(hot, (unsigned)rounds), mht = bench_median(hott, (unsigned)rounds);
    if (json)
        printf("{\"threads\":%llu,\"zones\":%llu,\"ns_per_zone\":%.2f,\"ns_per_zone_floor\":%.2f,"
               "\"ns_per_zone_disconnected\":%.2f,\"ns_per_zone_text16\":%.2f,"
               "\"ns_per_zone_ring\":%.2f,\"ns_per_zone_ring_text16\":%.2f,"
               "\"events_dropped\":%llu}\n",
               (unsigned long long)threads, (unsigned long long)zones, mc, mf, md, mt, mh, mht,
               (unsigned long long)dropped);
    else {
        printf("trove bench client: %llu thread(s) x %llu zones, median of %llu rounds\n",
               (unsigned long long)threads, (unsigned long long)zones, (unsigned long long)rounds);
        printf("  clock: %s\n", floor_tsc ? "TSC (rdtsc)" : "CLOCK_MONOTONIC (clock_gettime)");
        printf("  %-34s %8.2f ns/zone\n", "floor (2 clock reads + 32 B store)", mf);
        printf("  %-34s %8.2f ns/zone  (%.2fx the floor)\n", "service draining", mc, mc / mf);
        printf("  %-34s %8.2f ns/zone  (%.2fx the floor)\n", "no service (drops)", md, md / mf);
        printf("  %-34s %8.2f ns/zone  (%.2fx a plain zone)\n", "a 16-byte text, service draining",
               mt, mt / mc);
        printf("  into a ring that holds the round (%llu zones), no service:\n",
               (unsigned long long)hz);
        printf("  %-34s %8.2f ns/zone\n", "a plain zone", mh);
        printf("  %-34s %8.2f ns/zone  (%.2fx a plain zone)\n", "a zone with a 16-byte text", mht,
               mht / mh);
        printf("  events dropped with the service draining: %llu\n", (unsigned long long)dropped);
    }
    rc = 0;
stop:
    pthread_mutex_lock(&d.lock);
    d.stop = 1;
    pthread_mutex_unlock(&d.lock);
    pthread_join(dt, NULL);
out:
    if (d.lfd >= 0)
        close(d.lfd);
    unlink(sock);
    rmdir(dir);
    return rc;
}
