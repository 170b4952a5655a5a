/*
 * client_stop.c: a program instrumented with libtrove-client for tests/cli/cli_client_stop.sh,
 * built as trove-test-client-stop. It records 64 zones a millisecond on its main thread
 * into a ring of 1,024 events (so a few milliseconds without a service fill it and drop),
 * and every 20 ms prints the client's counters as a line
 *   stats events E sent S dropped D pending P connected C
 * so that the test can follow the client while it stops and starts services under it. At
 * SIGTERM or SIGINT it stops the client and prints the counters once more, as
 *   final events E sent S dropped D pending P connected C
 * usage: trove-test-client-stop CAPTURE   (the service's socket: $TROVE_SOCKET)
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <trove/client.h>

static volatile sig_atomic_t stop_asked;

static void on_signal(int sig)
{
    (void)sig;
    stop_asked = 1;
}

static void print(const char *what)
{
    struct trove_client_stats st;
    trove_client_stats(&st);
    printf("%s events %" PRIu64 " sent %" PRIu64 " dropped %" PRIu64 " pending %" PRIu64
           " connected %d\n",
           what, st.events, st.sent, st.dropped, st.pending, st.connected);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    struct trove_client_options o;
    struct sigaction sa;
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: trove-test-client-stop CAPTURE\n");
        return 2;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    memset(&o, 0, sizeof o);
    o.capture = argv[1];
    o.ring_events = 1024;
    if ((rc = trove_client_start(&o)) != 0) {
        fprintf(stderr, "trove-test-client-stop: trove_client_start: %s\n", strerror(-rc));
        return 1;
    }
    trove_client_thread_name("main");
    for (unsigned long ms = 0; !stop_asked; ms++) {
        struct timespec one = {0, 1000000L};
        for (int i = 0; i < 64; i++) {
            TROVE_ZONE("tick");
        }
        if (ms % 20 == 0)
            print("stats");
        nanosleep(&one, NULL);
    }
    trove_client_stop();
    print("final");
    return 0;
}
