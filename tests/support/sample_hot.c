/*
 * sample_hot.c: trove-test-hot, a program with two known hot functions (hot_alpha and
 * hot_beta, in sample_hot_work.c) for the sampler's end-to-end test and benchmark.
 *
 *   trove-test-hot [--seconds S] [--units N] [--one-thread] [-v]
 *
 * By default the main thread runs hot_alpha and a second thread hot_beta, each for S
 * seconds (default 1) of wall time, in units of HOT_ROUNDS rounds. --units N makes it a
 * fixed amount of work instead — N units of each, whatever the time — which is what a
 * benchmark of the sampler's overhead times. --one-thread runs the two one after the other
 * on the main thread. -v prints the units done and the result on stderr. Nothing goes to
 * stdout, so that a sampler's JSON there is all there is.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sample_hot.h"

struct job {
    uint64_t (*fn)(uint64_t, uint64_t);
    double seconds;   /* > 0: run this long */
    uint64_t units;   /* else: this many units */
    uint64_t done;
    uint64_t result;
};

static volatile uint64_t sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
    struct job *j = arg;
    if (j->seconds > 0) {
        double end = now() + j->seconds;
        while (now() < end) {
            j->result ^= j->fn(1, j->result + j->done);
            j->done++;
        }
    } else {
        j->result = j->fn(j->units, 1);
        j->done = j->units;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct job a = {hot_alpha, 1.0, 0, 0, 0}, b = {hot_beta, 1.0, 0, 0, 0};
    int one_thread = 0, verbose = 0;
    pthread_t t;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            a.seconds = b.seconds = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--units") && i + 1 < argc) {
            a.units = b.units = strtoull(argv[++i], NULL, 10);
            a.seconds = b.seconds = 0;
        } else if (!strcmp(argv[i], "--one-thread")) {
            one_thread = 1;
        } else if (!strcmp(argv[i], "-v")) {
            verbose = 1;
        } else {
            fprintf(stderr, "usage: trove-test-hot [--seconds S] [--units N] [--one-thread] [-v]\n");
            return 2;
        }
    }
    if (one_thread) {
        if (a.seconds > 0)
            a.seconds = b.seconds = a.seconds / 2;
        run(&a);
        run(&b);
    } else {
        if (pthread_create(&t, NULL, run, &b) != 0) {
            fprintf(stderr, "trove-test-hot: pthread_create failed\n");
            return 1;
        }
        run(&a);
        pthread_join(t, NULL);
    }
    sink = a.result ^ b.result;
    if (verbose)
        fprintf(stderr, "trove-test-hot: alpha %llu units, beta %llu units, result %llx\n",
                (unsigned long long)a.done, (unsigned long long)b.done, (unsigned long long)sink);
    return 0;
}
