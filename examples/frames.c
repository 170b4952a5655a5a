/*
 * frames.c: a game-style loop instrumented with libtrove-client (docs/client.md): the main
 * thread runs FRAMES frames of about MS milliseconds each, marking each with
 * TROVE_FRAME_MARK; its "update" zone carries the frame's number as text
 * (TROVE_ZONE_TEXT) and value (TROVE_ZONE_VALUE), its "render" zone the 64-bit id of
 * what it draws (a value past 2^53, which a viewer must not round); every tenth frame logs a message
 * (TROVE_MESSAGE), and a frame slower than its budget says so (TROVE_MESSAGEF). A physics
 * thread steps at its own rate and marks its own frame set (TROVE_FRAME_MARK_NAMED).
 *
 *   trove serve --store DIR &
 *   TROVE_SOCKET=DIR/trove.sock trove-example-frames 120 16
 *
 * Every third frame is slow (1.5 times the budget), so a frame graph has something to show.
 * Prints "frames F messages M recorded R sent S dropped D" when done.
 */
#include <trove/client.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static atomic_int running = 1;

static void busy_ms(double ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

static void *physics(void *arg)
{
    (void)arg;
    trove_client_thread_name("physics");
    while (atomic_load(&running)) {
        {
            TROVE_ZONE("step");
            busy_ms(1);
        }
        TROVE_FRAME_MARK_NAMED("physics");
        struct timespec ts = {0, 3000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int frames = argc > 1 ? atoi(argv[1]) : 120;
    double budget = argc > 2 ? atof(argv[2]) : 16.0;
    int messages = 0;
    pthread_t th;
    struct trove_client_stats st;
    char text[32];

    if (frames < 1 || budget <= 0) {
        fprintf(stderr, "usage: trove-example-frames [FRAMES] [MS]\n");
        return 2;
    }
    if (trove_client_start(NULL) != 0)
        return 1;
    trove_client_thread_name("main");
    pthread_create(&th, NULL, physics, NULL);
    TROVE_FRAME_MARK; /* the first frame begins */
    for (int f = 0; f < frames; f++) {
        double work = f % 3 == 2 ? budget * 1.5 : budget * 0.5;
        {
            TROVE_ZONE("update");
            int n = snprintf(text, sizeof text, "frame %d", f);
            TROVE_ZONE_TEXT(text, n);
            TROVE_ZONE_VALUE(f);
            busy_ms(work * 0.6);
            {
                TROVE_ZONE("render");
                TROVE_ZONE_VALUE(0x123456789abcdef0ull + (uint64_t)f); /* the scene's id */
                busy_ms(work * 0.4);
            }
        }
        if (f % 10 == 0) {
            TROVE_MESSAGE("checkpoint");
            messages++;
        }
        if (work > budget) {
            TROVE_MESSAGEF("frame %d over budget: %.1f ms", f, work);
            messages++;
        }
        TROVE_FRAME_MARK;
    }
    atomic_store(&running, 0);
    pthread_join(th, NULL);
    trove_client_stop();
    trove_client_stats(&st);
    printf("frames %d messages %d recorded %llu sent %llu dropped %llu\n", frames, messages,
           (unsigned long long)st.events, (unsigned long long)st.sent,
           (unsigned long long)st.dropped);
    return 0;
}
