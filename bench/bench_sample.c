/*
 * bench_sample.c: `trove bench sample` — what sampling costs the sampled program, and how
 * fast samples are symbolized.
 *
 * Overhead: the test program (trove-test-hot, beside the trove binary) does a fixed amount
 * of work (--units, on one thread) --runs times without the sampler and --runs times under
 * it, the two interleaved (plain, sampled, plain, ...) so that a shared machine's load
 * falls on both alike. Each run is timed from the fork to the reaping, and its CPU time
 * (user + system, the kernel's sampling work included) is read from RUSAGE_CHILDREN; the
 * medians are compared as a ratio. The sampler reads its rings as `trove record` does,
 * every 100 ms or a quarter ring.
 *
 * Symbolization: the samples of the sampled runs (or of `-- CMD ARGS...`, sampled once),
 * repeated until there are --samples of them, made into a profile (trove_sample_profile):
 * cold, by a new symbolizer that opens each module's ELF and DWARF and resolves each
 * address, and warm, by the same symbolizer again into a new profile (modules open,
 * addresses cached: the frames and the stack trie are built anew). Medians of --runs.
 */
#define _GNU_SOURCE /* readlink */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "trove/profile.h"
#include "trove/sample.h"

#define MAX_RUNS 101

static double child_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Run argv to its end without the sampler: wall and CPU seconds. 0, or -1. */
static int run_plain(char *const argv[], double *wall, double *cpu)
{
    double c0 = child_cpu(), t0 = bench_now();
    int status;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    *wall = bench_now() - t0;
    *cpu = child_cpu() - c0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Run argv to its end under the sampler, into set: wall and CPU seconds, its stats. */
static int run_sampled(const struct trove_sample_options *o, char *const argv[],
                       struct trove_sample_set *set, double *wall, double *cpu,
                       struct trove_sampler_stats *st)
{
    struct trove_sampler *s = NULL;
    struct trove_diag diag = {0};
    double c0 = child_cpu(), t0 = bench_now();
    int rc, status = 0;
    if ((rc = trove_sampler_spawn(o, argv, set, &s, &diag)) != TROVE_OK) {
        cli_error("bench sample", "%s", cli_diag_msg(&diag, rc));
        return -1;
    }
    while ((rc = trove_sampler_poll(s, 100, &diag)) == 1)
        ;
    *wall = bench_now() - t0;
    *cpu = child_cpu() - c0;
    trove_sampler_end_command(s, SIGKILL, 0, &status);
    trove_sampler_stats(s, st);
    trove_sampler_free(s);
    if (rc < 0) {
        cli_error("bench sample", "%s", cli_diag_msg(&diag, rc));
        return -1;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* A set holding set's samples over and over until it has n (times moved on each round). */
static int repeat_set(const struct trove_sample_set *src, size_t n, struct trove_sample_set **out)
{
    struct trove_sample_set *d = NULL;
    size_t k = trove_sample_set_count(src), mods = trove_sample_set_module_count(src);
    uint64_t span = 0;
    if (k == 0 || trove_sample_set_new(&d) != TROVE_OK)
        return -1;
    for (uint32_t m = 0; m < mods; m++) {
        struct trove_sample_module mm;
        uint32_t id;
        if (trove_sample_set_module_get(src, m, &mm) != TROVE_OK ||
            trove_sample_set_module(d, mm.path, mm.build_id, mm.build_id_len, &id) != TROVE_OK ||
            id != m) {
            trove_sample_set_free(d);
            return -1;
        }
    }
    for (size_t i = 0; i < k; i++) {
        struct trove_sample s;
        trove_sample_set_get(src, i, &s);
        if (s.time_ns > span)
            span = s.time_ns;
    }
    for (size_t i = 0; i < n; i++) {
        struct trove_sample s;
        trove_sample_set_get(src, i % k, &s);
        if (trove_sample_set_add(d, s.time_ns + (uint64_t)(i / k) * span, s.pid, s.tid, s.frames,
                                 s.n_frames) != TROVE_OK) {
            trove_sample_set_free(d);
            return -1;
        }
    }
    *out = d;
    return 0;
}

/* Make set into a new profile with sym: seconds, and the profile's sizes. */
static double symbolize(struct trove_symbolizer *sym, const struct trove_sample_set *set,
                        size_t *frames, size_t *stacks)
{
    struct trove_profile *p = NULL;
    double t0, t;
    if (trove_profile_new(&p) != TROVE_OK)
        return -1;
    t0 = bench_now();
    if (trove_sample_profile(sym, set, p) != TROVE_OK) {
        trove_profile_free(p);
        return -1;
    }
    t = bench_now() - t0;
    *frames = trove_profile_frame_count(p);
    *stacks = trove_profile_stack_count(p);
    trove_profile_free(p);
    return t;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trove bench sample [--units N] [--runs R] [--hz N] [--samples N]\n"
            "                          [--program PATH] [--json] [-- CMD ARGS...]\n"
            "\n"
            "The sampler's overhead on a program and the symbolizer's speed.\n"
            "  --program PATH  the sampled program (default: trove-test-hot beside trove), run\n"
            "                  as PATH --units N --one-thread\n"
            "  --units N       its work: N units of each hot function (default 3000)\n"
            "  --runs R        runs of each kind, interleaved (default 7)\n"
            "  --hz N          the sampling rate (default 999)\n"
            "  --samples N     samples to symbolize (default 100000): those of the sampled\n"
            "                  runs, or of CMD (sampled once), repeated\n"
            "  --json          one JSON object on stdout\n");
}

int bench_sample(int argc, char **argv)
{
    const char *cmd = "bench sample";
    char self[4096], program[4200], units_s[32];
    const char *prog = NULL;
    char **user_cmd = NULL;
    uint64_t units = 3000, runs = 7, samples = 100000, hz = TROVE_SAMPLE_HZ_DEFAULT;
    int json = 0, status = 1;
    double pw[MAX_RUNS], pc[MAX_RUNS], sw[MAX_RUNS], sc[MAX_RUNS], cold[MAX_RUNS], warm[MAX_RUNS];
    struct trove_sample_options o;
    struct trove_sample_set *set = NULL, *big = NULL, *cset = NULL;
    struct trove_sampler_stats st, total;
    struct trove_symbolizer_stats ys;
    size_t frames = 0, stacks = 0;
    uint64_t resolved = 0;
    ssize_t n;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--")) {
            if (i + 1 >= argc)
                return cli_error(cmd, "-- must be followed by a command");
            user_cmd = &argv[i + 1];
            break;
        } else if (!strcmp(a, "--units") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &units) || units == 0)
                return cli_error(cmd, "--units: '%s' is not a count", argv[i]);
        } else if (!strcmp(a, "--runs") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &runs) || runs == 0 || runs > MAX_RUNS)
                return cli_error(cmd, "--runs: '%s' is not 1 to %d", argv[i], MAX_RUNS);
        } else if (!strcmp(a, "--hz") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &hz) || hz == 0 || hz > 100000)
                return cli_error(cmd, "--hz: '%s' is not 1 to 100000", argv[i]);
        } else if (!strcmp(a, "--samples") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &samples) || samples == 0 || samples > 100000000)
                return cli_error(cmd, "--samples: '%s' is not 1 to 100M", argv[i]);
        } else if (!strcmp(a, "--program") && i + 1 < argc) {
            prog = argv[++i];
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else {
            return cli_error(cmd, "unknown option or missing value '%s'; see `trove bench "
                                  "sample --help`", a);
        }
    }
    if (!prog) {
        if ((n = readlink("/proc/self/exe", self, sizeof self - 1)) <= 0)
            return cli_error(cmd, "cannot find the trove binary; give --program");
        self[n] = 0;
        *strrchr(self, '/') = 0;
        snprintf(program, sizeof program, "%s/trove-test-hot", self);
        prog = program;
    }
    if (access(prog, X_OK) != 0)
        return cli_error(cmd, "%s: %s (it is built with trove; or give --program)", prog,
                         strerror(errno));
    snprintf(units_s, sizeof units_s, "%" PRIu64, units);
    trove_sample_defaults(&o);
    o.hz = (uint32_t)hz;
    memset(&total, 0, sizeof total);
    if (trove_sample_set_new(&set) != TROVE_OK) {
        cli_error(cmd, "out of memory");
        goto out;
    }
    {
        char *args[] = {(char *)prog, "--units", units_s, "--one-thread", NULL};
        double w, c;
        if (run_plain(args, &w, &c) != 0) { /* a warm-up: the page cache, the CPU's clock */
            cli_error(cmd, "%s failed", prog);
            goto out;
        }
        for (uint64_t r = 0; r < runs; r++) {
            if (run_plain(args, &pw[r], &pc[r]) != 0) {
                cli_error(cmd, "%s failed", prog);
                goto out;
            }
            if (run_sampled(&o, args, set, &sw[r], &sc[r], &st) != 0)
                goto out;
            total.samples += st.samples;
            total.lost += st.lost;
            total.lost_samples += st.lost_samples;
            total.event = st.event;
        }
    }
    if (user_cmd) {
        double w, c;
        if (trove_sample_set_new(&cset) != TROVE_OK ||
            run_sampled(&o, user_cmd, cset, &w, &c, &st) != 0)
            goto out;
    }
    if (repeat_set(cset ? cset : set, (size_t)samples, &big) != 0) {
        cli_error(cmd, "no samples to symbolize");
        goto out;
    }
    for (uint64_t r = 0; r < runs; r++) {
        struct trove_symbolizer *sym = NULL;
        if (trove_symbolizer_new(&sym) != TROVE_OK ||
            (cold[r] = symbolize(sym, big, &frames, &stacks)) < 0 ||
            (warm[r] = symbolize(sym, big, &frames, &stacks)) < 0) {
            cli_error(cmd, "symbolizing failed");
            trove_symbolizer_free(sym);
            goto out;
        }
        trove_symbolizer_stats(sym, &ys);
        resolved = ys.resolved;
        trove_symbolizer_free(sym);
    }
    {
        double mpw = bench_median(pw, (unsigned)runs), mpc = bench_median(pc, (unsigned)runs);
        double msw = bench_median(sw, (unsigned)runs), msc = bench_median(sc, (unsigned)runs);
        double mc = bench_median(cold, (unsigned)runs), mw = bench_median(warm, (unsigned)runs);
        double per_run = (double)total.samples / (double)runs;
        if (json) {
            printf("{\"program\":\"%s\",\"units\":%" PRIu64 ",\"runs\":%" PRIu64
                   ",\"hz\":%" PRIu64 ",\"event\":\"%s\",\"plain_s\":%.4f,\"sampled_s\":%.4f"
                   ",\"wall_ratio\":%.4f,\"plain_cpu_s\":%.4f,\"sampled_cpu_s\":%.4f"
                   ",\"cpu_ratio\":%.4f,\"samples_per_run\":%.0f,\"lost\":%" PRIu64
                   ",\"lost_samples\":%" PRIu64 ",\"symbolized\":%" PRIu64
                   ",\"distinct_addresses\":%" PRIu64 ",\"frames\":%zu,\"stacks\":%zu"
                   ",\"cold_s\":%.4f,\"warm_s\":%.4f,\"warm_ns_per_sample\":%.1f}\n",
                   prog, units, runs, hz, trove_sample_event_name(total.event), mpw, msw,
                   msw / mpw, mpc, msc, msc / mpc, per_run, total.lost, total.lost_samples,
                   samples, resolved, frames, stacks, mc, mw, mw * 1e9 / (double)samples);
        } else {
            printf("sampling overhead: %s --units %" PRIu64 " --one-thread, %" PRIu64
                   " runs each, interleaved, at %" PRIu64 " Hz (%s)\n\n",
                   prog, units, runs, hz, trove_sample_event_name(total.event));
            printf("| run | wall s (median) | CPU s (median) | samples a run |\n"
                   "|---|---:|---:|---:|\n");
            printf("| plain | %.4f | %.4f | |\n", mpw, mpc);
            printf("| sampled | %.4f | %.4f | %.0f |\n", msw, msc, per_run);
            printf("| sampled / plain | %.4f | %.4f | |\n\n", msw / mpw, msc / mpc);
            printf("lost: %" PRIu64 " records, %" PRIu64 " samples\n\n", total.lost,
                   total.lost_samples);
            printf("symbolization: %" PRIu64 " samples (%s), %" PRIu64
                   " distinct addresses, %zu frames, %zu stacks, %" PRIu64 " runs\n\n",
                   samples, cset ? "of the command" : "of the sampled runs", resolved, frames,
                   stacks, runs);
            printf("| symbolizer | s (median) | ns a sample |\n|---|---:|---:|\n");
            printf("| cold (modules opened, addresses resolved) | %.4f | %.1f |\n", mc,
                   mc * 1e9 / (double)samples);
            printf("| warm (the same symbolizer again) | %.4f | %.1f |\n", mw,
                   mw * 1e9 / (double)samples);
        }
    }
    status = 0;
out:
    trove_sample_set_free(set);
    trove_sample_set_free(cset);
    trove_sample_set_free(big);
    return status;
}
