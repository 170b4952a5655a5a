/*
 * sort.c: a parallel merge sort instrumented with libtrove-client, the example of
 * docs/client.md. Four threads each sort a quarter of the array (recursive merge sort,
 * a zone per level down to runs of 4,096), then the main thread merges the quarters.
 * Run it while `trove serve` listens (TROVE_SOCKET=DIR/trove.sock) and the capture holds
 * every zone, named and nested; without a service it runs just the same.
 *
 *   trove-example-sort [N] [-r ROUNDS] [-c CAPTURE]
 *     N         random 64-bit keys to sort (default 4,000,000)
 *     -r ROUNDS sort them again this many times, a zone "round" each (default 1; 0: until
 *               SIGINT or SIGTERM, which end the round under way first)
 *     -c NAME   the capture to record into (default: the program's name and pid)
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <trove/client.h>

#define WORKERS 4
#define LEAF 4096

static uint64_t *keys, *tmp;
static volatile sig_atomic_t stop_asked;

static void on_signal(int sig)
{
    (void)sig;
    stop_asked = 1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void merge(uint64_t *dst, const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    TROVE_ZONE("merge");
    size_t i = 0, j = 0, k = 0;
    while (i < na && j < nb)
        dst[k++] = b[j] < a[i] ? b[j++] : a[i++];
    memcpy(dst + k, a + i, (na - i) * sizeof *a);
    k += na - i;
    memcpy(dst + k, b + j, (nb - j) * sizeof *b);
}

/* Sort v[0..n) using t[0..n) as scratch; the result ends in v. */
static void msort(uint64_t *v, uint64_t *t, size_t n)
{
    if (n <= LEAF) {
        TROVE_ZONE("qsort leaf");
        qsort(v, n, sizeof *v, cmp_u64);
        return;
    }
    TROVE_ZONE("msort");
    size_t h = n / 2;
    msort(v, t, h);
    msort(v + h, t + h, n - h);
    merge(t, v, h, v + h, n - h);
    memcpy(v, t, n * sizeof *v);
}

struct part {
    size_t from, n;
    int index;
};

static void *worker(void *arg)
{
    struct part *p = arg;
    char name[32];
    snprintf(name, sizeof name, "sorter %d", p->index);
    trove_client_thread_name(name);
    TROVE_ZONE("sort quarter");
    msort(keys + p->from, tmp + p->from, p->n);
    return NULL;
}

/* One round: fill, sort in parallel, check. 0, or 1 if the result is not sorted. */
static int sort_round(size_t n, uint64_t *x)
{
    pthread_t th[WORKERS];
    struct part parts[WORKERS];

    TROVE_ZONE("round");
    TROVE_ZONE_BEGIN("fill");
    for (size_t i = 0; i < n; i++) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        keys[i] = *x;
    }
    TROVE_ZONE_END();
    {
        TROVE_ZONE("parallel sort");
        sigset_t stop_signals, old;
        int started = 0, rc = 0;
        /* The workers take no SIGINT or SIGTERM: the main thread does (the flag it sets is
         * read between rounds). A signal handled on a thread that is just starting runs
         * before a sanitizer's runtime knows the thread (TSan then faults on a null read). */
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGINT);
        sigaddset(&stop_signals, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &stop_signals, &old);
        for (int i = 0; i < WORKERS && rc == 0; i++) {
            parts[i].from = n / WORKERS * (size_t)i;
            parts[i].n = i == WORKERS - 1 ? n - parts[i].from : n / WORKERS;
            parts[i].index = i;
            if ((rc = pthread_create(&th[i], NULL, worker, &parts[i])) == 0)
                started++;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        if (rc != 0) {
            fprintf(stderr, "trove-example-sort: starting a worker thread: %s\n", strerror(rc));
            return 1;
        }
        TROVE_ZONE("final merge");
        size_t h = parts[2].from;
        merge(tmp, keys, parts[1].from, keys + parts[1].from, h - parts[1].from);
        merge(tmp + h, keys + h, parts[3].from - h, keys + parts[3].from, n - parts[3].from);
        merge(keys, tmp, h, tmp + h, n - h);
    }
    for (size_t i = 1; i < n; i++)
        if (keys[i - 1] > keys[i]) {
            fprintf(stderr, "trove-example-sort: not sorted at %zu\n", i);
            return 1;
        }
    TROVE_COUNTER("keys sorted", n);
    return 0;
}

int main(int argc, char **argv)
{
    struct trove_client_options opt = {0};
    struct trove_client_stats st;
    size_t n = 4000000;
    unsigned long rounds = 1, done = 0;
    uint64_t x = 88172645463325252ull;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc)
            rounds = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            opt.capture = argv[++i];
        else if (argv[i][0] >= '0' && argv[i][0] <= '9')
            n = strtoull(argv[i], NULL, 10);
        else {
            fprintf(stderr, "usage: trove-example-sort [N] [-r ROUNDS] [-c CAPTURE]\n");
            return 2;
        }
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (trove_client_start(&opt) != 0) { /* TROVE_SOCKET, else ./trove-data/trove.sock */
        fprintf(stderr, "trove-example-sort: -c %s is not a capture name\n", opt.capture);
        return 2;
    }
    trove_client_thread_name("main");
    keys = malloc(n * sizeof *keys);
    tmp = malloc(n * sizeof *tmp);
    if (!keys || !tmp || n < WORKERS) {
        fprintf(stderr, "trove-example-sort: cannot sort %zu keys\n", n);
        return 1;
    }
    while ((rounds == 0 || done < rounds) && !stop_asked) {
        if (sort_round(n, &x))
            return 1;
        TROVE_COUNTER("rounds", ++done);
    }
    trove_client_stop();
    trove_client_stats(&st);
    printf("sorted %zu keys; %llu events recorded, %llu sent, %llu dropped; %lu round%s, "
           "%llu connection%s\n", n, (unsigned long long)st.events, (unsigned long long)st.sent,
           (unsigned long long)st.dropped, done, done == 1 ? "" : "s",
           (unsigned long long)st.connects, st.connects == 1 ? "" : "s");
    free(keys);
    free(tmp);
    return 0;
}
