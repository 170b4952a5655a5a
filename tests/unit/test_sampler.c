/*
 * test_sampler.c: the sampler against the kernel (trove/sample.h): a command spawned
 * (its exit status, the exec's mappings and names, no process left behind when the exec
 * fails), a command ended by trove_sampler_end_command, and a running process attached
 * to, whose two threads' samples land in its two hot functions. Skipped (77) only when the
 * kernel refuses perf_event_open (trove_sample_refused): kernel.perf_event_paranoid, or a
 * container without it.
 */
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trove/profile.h"
#include "trove/sample.h"

#define HOT TROVE_BINARY_DIR "/trove-test-hot"

/* Poll s until its target ends (or `seconds` pass). The last poll's result. */
static int run_until_end(struct trove_sampler *s, double seconds)
{
    struct timespec t0, t;
    int rc;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        struct trove_diag diag = {0};
        if ((rc = trove_sampler_poll(s, 50, &diag)) < 0)
            fprintf(stderr, "poll: %s\n", diag.msg);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (rc == 1 && (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 <
                            seconds);
    return rc;
}

static int no_children_left(void)
{
    int st;
    return waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD;
}

static void test_spawn(void)
{
    struct trove_sample_options o;
    struct trove_sample_set *set = NULL;
    struct trove_sampler *s = NULL;
    struct trove_sampler_stats st;
    struct trove_diag diag = {0};
    char *argv_sh[] = {"sh", "-c", "exit 3", NULL};
    char *argv_none[] = {"/nonexistent/trove-no-such-command", NULL};
    char *argv_sleep[] = {"sleep", "30", NULL};
    int status = 0, rc;
    size_t len = 0;
    const char *name;

    trove_sample_defaults(&o);
    CHECK_EQ_INT(trove_sample_set_new(&set), TROVE_OK);
    rc = trove_sampler_spawn(&o, argv_sh, set, &s, &diag);
    if (trove_sample_refused(rc)) {
        printf("the kernel refuses to sample: %s\n", diag.msg);
        CHECK(strstr(diag.msg, "refused by the kernel") != NULL);
        trove_sample_set_free(set);
        test_skip("perf_event_open refused");
    }
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK) {
        fprintf(stderr, "spawn: %s\n", diag.msg);
        trove_sample_set_free(set);
        return;
    }
    CHECK_EQ_INT(run_until_end(s, 20), 0);
    CHECK_EQ_INT(trove_sampler_end_command(s, SIGTERM, 100, &status), 1);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    trove_sampler_stats(s, &st);
    CHECK(st.event == TROVE_SAMPLE_EVENT_TASK_CLOCK || st.event == TROVE_SAMPLE_EVENT_CYCLES);
    CHECK(st.hz == 999 && st.cpus >= 1 && st.ring_pages >= 1);
    /* The exec's own mappings came as records: the shell, the loader, libc. */
    CHECK(st.mmaps >= 2);
    CHECK(trove_sample_set_module_count(set) >= 2);
    CHECK_EQ_INT(st.bad_records + st.bad_rings, 0);
    name = trove_names_get(trove_sample_set_names(set), TROVE_NAME_PROCESS,
                           trove_sampler_pid(s), 0, &len);
    CHECK(name && len == 2 && !memcmp(name, "sh", 2));
    CHECK_EQ_INT(trove_sampler_poll(s, 0, NULL), 0);
    trove_sampler_free(s);
    s = NULL;
    CHECK(no_children_left());

    /* An exec that fails is the spawn's error, and leaves no process. */
    rc = trove_sampler_spawn(&o, argv_none, set, &s, &diag);
    CHECK_EQ_INT(rc, -ENOENT);
    CHECK(s == NULL && strstr(diag.msg, "cannot run") != NULL);
    CHECK(no_children_left());

    /* A command still running is ended: SIGTERM, then reaped. */
    CHECK_EQ_INT(trove_sampler_spawn(&o, argv_sleep, set, &s, &diag), TROVE_OK);
    CHECK_EQ_INT(trove_sampler_poll(s, 50, NULL), 1);
    CHECK_EQ_INT(trove_sampler_stop(s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_sampler_end_command(s, SIGTERM, 2000, &status), 1);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    trove_sampler_free(s);
    CHECK(no_children_left());

    /* A zeroed struct is every default. */
    {
        struct trove_sample_options z;
        memset(&z, 0, sizeof z);
        CHECK_EQ_INT(trove_sampler_spawn(&z, argv_sh, set, &s, &diag), TROVE_OK);
        if (s) {
            CHECK_EQ_INT(run_until_end(s, 20), 0);
            CHECK_EQ_INT(trove_sampler_end_command(s, SIGTERM, 100, &status), 1);
            trove_sampler_stats(s, &st);
            CHECK_EQ_INT(st.hz, TROVE_SAMPLE_HZ_DEFAULT);
            CHECK(st.ring_pages >= 1 && st.ring_pages <= TROVE_SAMPLE_RING_PAGES_DEFAULT);
            trove_sampler_free(s);
            s = NULL;
        }
        CHECK(no_children_left());
    }

    /* Bad options. */
    o.hz = 100001;
    CHECK_EQ_INT(trove_sampler_spawn(&o, argv_sh, set, &s, &diag), TROVE_ERR_INVALID);
    trove_sample_defaults(&o);
    o.ring_pages = 3;
    CHECK_EQ_INT(trove_sampler_spawn(&o, argv_sh, set, &s, &diag), TROVE_ERR_INVALID);
    CHECK(no_children_left());
    trove_sample_set_free(set);
}

static void test_attach(void)
{
    struct trove_sample_options o;
    struct trove_sample_set *set = NULL;
    struct trove_sampler *s = NULL;
    struct trove_symbolizer *sym = NULL;
    struct trove_profile *p = NULL;
    struct trove_profile_func *top = NULL;
    struct trove_sampler_stats st;
    struct trove_diag diag = {0};
    size_t n = 0;
    uint64_t total = 0;
    int status, rc, hot = 0;
    pid_t child;
    struct timespec pause = {0, 200000000L};

    trove_sample_defaults(&o);
    CHECK_EQ_INT(trove_sample_set_new(&set), TROVE_OK);
    CHECK_EQ_INT(trove_sampler_attach(&o, 0x7ffffff0u, set, &s, &diag), -ESRCH);
    CHECK(strstr(diag.msg, "no process") != NULL);

    if ((child = fork()) == 0) {
        execl(HOT, HOT, "--seconds", "1.5", (char *)NULL);
        _exit(127);
    }
    CHECK(child > 0);
    nanosleep(&pause, NULL); /* its second thread started */
    rc = trove_sampler_attach(&o, (uint32_t)child, set, &s, &diag);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK) {
        fprintf(stderr, "attach: %s\n", diag.msg);
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        trove_sample_set_free(set);
        return;
    }
    /* It ends by itself; an exited child of ours is a zombie, which counts as gone. */
    CHECK_EQ_INT(run_until_end(s, 30), 0);
    CHECK_EQ_INT(trove_sampler_end_command(s, SIGTERM, 0, &status), 0);
    trove_sampler_stats(s, &st);
    CHECK_EQ_INT(st.threads, 2);
    CHECK(st.samples > 20);
    CHECK(st.mmaps >= 3); /* from /proc/PID/maps */
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    CHECK_EQ_INT(trove_symbolizer_new(&sym), TROVE_OK);
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    CHECK_EQ_INT(trove_sample_profile(sym, set, p), TROVE_OK);
    CHECK_EQ_INT(trove_profile_top(p, 0, UINT64_MAX, &top, &n, &total), TROVE_OK);
    CHECK(n >= 2 && total == st.samples);
    for (size_t i = 0; i < n && i < 2; i++) {
        const char *fn = trove_profile_string_get(p, top[i].function, NULL);
        const char *file = trove_profile_string_get(p, top[i].file, NULL);
        const char *tail = "/sample_hot_work.c";
        size_t fl = strlen(file), tl = strlen(tail);
        hot += (!strcmp(fn, "hot_alpha") || !strcmp(fn, "hot_beta")) && fl >= tl &&
               !strcmp(file + fl - tl, tail);
    }
    CHECK_EQ_INT(hot, 2);
    free(top);
    trove_profile_free(p);
    trove_symbolizer_free(sym);
    trove_sampler_free(s);
    trove_sample_set_free(set);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_spawn);
    RUN(test_attach);
    return test_done();
}
