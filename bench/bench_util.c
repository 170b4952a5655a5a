/*
 * bench_util.c: what the benchmarks share — a monotonic clock, the median of a run of
 * timings, removing a scratch directory, and the capture a benchmark measures (--input or `trove gen`) (bench.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_remove_tree(const char *path)
{
    pid_t pid = fork();
    int st;

    if (pid == 0) {
        execlp("rm", "rm", "-rf", "--", path, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void bench_source_init(struct bench_source *s)
{
    memset(s, 0, sizeof *s);
    s->lo.format = TROVE_INPUT_AUTO;
    trove_gen_defaults(&s->go);
}

int bench_source_arg(const char *cmd, struct bench_source *s, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    int is_source = !strcmp(a, "--input") || !strcmp(a, "--input-format") ||
                    !strcmp(a, "--events") || !strcmp(a, "--seed");

    if (!strcmp(a, "--common")) {
        s->common = 1;
        return 1;
    }
    if (!is_source)
        return 0;
    if (*i + 1 >= argc) {
        cli_error(cmd, "%s needs a value; see `trove %s --help`", a, cmd);
        return -1;
    }
    ++*i;
    if (!strcmp(a, "--input")) {
        s->input = argv[*i];
    } else if (!strcmp(a, "--input-format")) {
        if ((s->lo.format = trove_input_kind_parse(argv[*i])) < 0) {
            cli_error(cmd, "--input-format: '%s' is not auto, chrome-json, wire, bundle, parquet, "
                           "dir or capture", argv[*i]);
            return -1;
        }
    } else if (!strcmp(a, "--events")) {
        if (cli_parse_u64(argv[*i], &s->events) || s->events < 1 || s->events > (1ull << 32)) {
            cli_error(cmd, "--events: '%s' is not a count in 1..4G", argv[*i]);
            return -1;
        }
        s->have_events = 1;
    } else if (cli_parse_u64(argv[*i], &s->go.seed)) {
        cli_error(cmd, "--seed: '%s' is not an unsigned integer", argv[*i]);
        return -1;
    }
    return 1;
}

void bench_common(struct trove_events *ev)
{
    size_t k = 0;
    for (size_t i = 0; i < ev->len; i++) {
        const struct trove_event *e = &ev->ev[i];
        if ((e->kind == TROVE_KIND_ZONE &&
             (e->extra == TROVE_ASYNC_NONE || e->extra == TROVE_ASYNC_NESTABLE)) ||
            e->kind == TROVE_KIND_INSTANT || e->kind == TROVE_KIND_COUNTER)
            ev->ev[k++] = *e;
    }
    ev->len = k;
}

int bench_source_load(const char *cmd, struct bench_source *s, int quiet, struct trove_events *ev,
                      struct trove_names *names, char *desc, size_t desc_len)
{
    int rc;

    if (!s->input && s->lo.format != TROVE_INPUT_AUTO)
        return cli_error(cmd, "--input-format needs --input FILE");
    if (s->input) {
        s->lo.quiet = quiet;
        if (cli_load(cmd, s->input, &s->lo, ev, names) != 0)
            return 1;
        if (s->have_events && ev->len > s->events)
            ev->len = (size_t)s->events;
        snprintf(desc, desc_len, "%s", s->input);
    } else {
        if (s->have_events)
            s->go.events = s->events;
        if ((rc = trove_gen(&s->go, ev, names)) != TROVE_OK)
            return cli_error(cmd, "generating %llu events: %s", (unsigned long long)s->go.events,
                             trove_strerror(rc));
        snprintf(desc, desc_len,
                 "trove gen (seed %llu, %u x %u threads, %u names, zipf %.2f, tick %llu ns)",
                 (unsigned long long)s->go.seed, s->go.processes, s->go.threads, s->go.names,
                 s->go.zipf_s, (unsigned long long)s->go.tick_ns);
    }
    if (s->common) {
        size_t n = ev->len, used = strlen(desc);
        bench_common(ev);
        if (used < desc_len)
            snprintf(desc + used, desc_len - used, ", common content: %zu of %zu events", ev->len,
                     n);
    }
    if (ev->len == 0)
        return cli_error(cmd, "%s: no events to measure", s->input ? s->input : "gen");
    return 0;
}
