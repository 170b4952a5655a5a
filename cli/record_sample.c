/*
 * record_sample.c: `trove record NAME -- CMD ARGS...` and `trove record NAME --pid PID`:
 * sampling a process's call stacks (trove/sample.h) into a symbolized profile
 * (trove/profile.h), written as JSON (--out) or summed up as its hottest functions (--top).
 * cmd_record (cmd_record.c) hands over here when it is given a command or a pid and no
 * --from. By default the samples go live to `trove serve` as they come (names and samples
 * frames on the producers' socket, symbolized poll by poll); --store keeps the profile as
 * capture NAME in a store instead (with the threads' names, no events); --out and --top
 * keep it out of any capture.
 */
#define _GNU_SOURCE /* sigaction */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/sample.h"
#include "trove/wire.h"

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void catch_stop(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void cli_record_sample_usage(FILE *f)
{
    fprintf(f,
            "usage: trove record NAME [--socket PATH | --store DIR | --out FILE | --top N] [options]\n"
            "                          -- CMD [ARGS...]\n"
            "       trove record NAME --pid PID [--socket PATH | --store DIR | --out FILE | --top N]\n"
            "                          [options]\n"
            "\n"
            "Sample the call stacks of a command trove starts (-- CMD ARGS...) or of the running\n"
            "process PID with perf_event_open: every thread, now and later, N times a second of\n"
            "its CPU time, with its user-space call chain (frame pointers) and its context\n"
            "switches; then symbolize them (function, source file, line, inlined functions) from\n"
            "the modules' ELF symbols and DWARF. NAME is the capture the samples go to: by\n"
            "default they are sent live to `trove serve` as they come (the viewer and\n"
            "`trove top NAME` show them); --store writes them into a store instead, --out\n"
            "and --top keep them out of any capture.\n"
            "  --socket PATH      the service's producers' socket (default: $TROVE_SOCKET if\n"
            "                     set, else the store $TROVE_STORE's, else ./trove-data's)\n"
            "  --pid PID          sample this running process (your own, or with CAP_PERFMON)\n"
            "  --hz N             samples a second of each thread's CPU time (default 999)\n"
            "  --seconds S        stop after S seconds (a command then gets SIGTERM)\n"
            "  --event E          auto (default: cycles where the machine has them, else\n"
            "                     task-clock), task-clock or cycles\n"
            "  --store DIR        store the profile as capture NAME in the store at DIR\n"
            "                     (replacing a capture of that name)\n"
            "  --out FILE         write the profile as JSON: frames, stacks, samples, threads,\n"
            "                     context switches (docs/sampling.md)\n"
            "  --top N            print the N hottest functions by self samples (0: all)\n"
            "  --json             print the summary (and the --top table) as one JSON object\n"
            "  -q, --quiet        nothing on stderr but errors\n"
            "The command's standard streams are trove's. SIGINT or SIGTERM stops the sampling\n"
            "and writes what it gathered. docs/sampling.md says what the kernel must allow\n"
            "(kernel.perf_event_paranoid, containers) and what a profile can and cannot show.\n");
}

struct rec_args {
    const char *name;
    char **cmd;          /* NULL-terminated, or NULL with --pid */
    uint32_t pid;
    const char *out;
    const char *store;
    const char *socket;  /* live: the service's producers' socket */
    uint64_t top;
    int have_top, json, quiet;
    double seconds;      /* 0: until the target ends */
    struct trove_sample_options o;
};

static int parse_args(int argc, char **argv, struct rec_args *a)
{
    const char *cmd = "record";
    int have_pid = 0;
    memset(a, 0, sizeof *a);
    trove_sample_defaults(&a->o);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        uint64_t v;
        if (!strcmp(s, "--")) {
            if (i + 1 >= argc)
                return cli_error(cmd, "-- must be followed by the command to sample") + 1;
            a->cmd = &argv[i + 1];
            break;
        }
        if (cli_is_help(s)) {
            cli_record_sample_usage(stdout);
            return -1;
        }
        if (!strcmp(s, "--pid") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &v) || v == 0 || v > INT32_MAX)
                return cli_error(cmd, "--pid: '%s' is not a process id", argv[i]) + 1;
            a->pid = (uint32_t)v;
            have_pid = 1;
        } else if (!strcmp(s, "--hz") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &v) || v < 1 || v > 100000)
                return cli_error(cmd, "--hz: '%s' is not a rate of 1 to 100000 Hz", argv[i]) + 1;
            a->o.hz = (uint32_t)v;
        } else if (!strcmp(s, "--seconds") && i + 1 < argc) {
            char *end;
            a->seconds = strtod(argv[++i], &end);
            if (*end || end == argv[i] || !(a->seconds > 0) || a->seconds > 1e7)
                return cli_error(cmd, "--seconds: '%s' is not a positive number of seconds",
                                 argv[i]) + 1;
        } else if (!strcmp(s, "--event") && i + 1 < argc) {
            const char *e = argv[++i];
            if (!strcmp(e, "auto"))
                a->o.event = TROVE_SAMPLE_EVENT_AUTO;
            else if (!strcmp(e, "task-clock"))
                a->o.event = TROVE_SAMPLE_EVENT_TASK_CLOCK;
            else if (!strcmp(e, "cycles"))
                a->o.event = TROVE_SAMPLE_EVENT_CYCLES;
            else
                return cli_error(cmd, "--event: '%s' is not auto, task-clock or cycles", e) + 1;
        } else if (!strcmp(s, "--store") && i + 1 < argc) {
            a->store = argv[++i];
        } else if (!strcmp(s, "--socket") && i + 1 < argc) {
            a->socket = argv[++i];
        } else if ((!strcmp(s, "--out") || !strcmp(s, "-o")) && i + 1 < argc) {
            a->out = argv[++i];
        } else if (!strcmp(s, "--top") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &a->top))
                return cli_error(cmd, "--top: '%s' is not a count", argv[i]) + 1;
            a->have_top = 1;
        } else if (!strcmp(s, "--json")) {
            a->json = 1;
        } else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) {
            a->quiet = 1;
        } else if (s[0] == '-' && s[1]) {
            return cli_error(cmd, "unknown option or missing value '%s'; see `trove record "
                                  "--help`", s) + 1;
        } else if (!a->name) {
            a->name = s;
        } else {
            return cli_error(cmd, "unexpected argument '%s' (a command goes after --); see "
                                  "`trove record --help`", s) + 1;
        }
    }
    if (!a->name)
        return cli_error(cmd, "no capture NAME; see `trove record --help`") + 1;
    {
        struct trove_diag diag = {0};
        if (trove_volume_name_check(a->name, &diag) != TROVE_OK)
            return cli_error(cmd, "%s", diag.msg) + 1;
    }
    if (have_pid && a->cmd)
        return cli_error(cmd, "--pid and a command (-- CMD) cannot go together") + 1;
    if (!have_pid && !a->cmd)
        return cli_error(cmd, "nothing to sample: give -- CMD ARGS... or --pid PID") + 1;
    if (a->socket && (a->out || a->have_top || a->store))
        return cli_error(cmd, "--socket sends the samples live to `trove serve`; it does not go "
                              "with --store, --out or --top") + 1;
    return 0;
}

/* File descriptors: an attached process costs one per thread and CPU. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void json_str(FILE *o, const struct trove_profile *p, uint32_t id)
{
    size_t len = 0;
    const char *s = trove_profile_string_get(p, id, &len);
    cli_json_string(o, s ? s : "", s ? len : 0);
}

static const char *base_name(const char *s)
{
    const char *b = strrchr(s, '/');
    return b ? b + 1 : s;
}

/* The profile as the JSON document of docs/sampling.md. */
static void write_profile(FILE *o, const struct rec_args *a, const struct trove_profile *p,
                          struct trove_sample_set *set, const struct trove_sampler_stats *st,
                          uint32_t pid)
{
    size_t n, nsw;
    const struct trove_sample_switch *sw = trove_sample_set_switches(set, &nsw);
    const struct trove_profile_sample *smp = trove_profile_samples(p);
    struct trove_names *names = trove_sample_set_names(set);
    int first = 1;

    fprintf(o, "{\"format\":\"trove-profile\",\"version\":1,\"capture\":");
    cli_json_string(o, a->name, strlen(a->name));
    fprintf(o, ",\"clock\":\"CLOCK_MONOTONIC\",\"event\":\"%s\",\"hz\":%" PRIu32
               ",\"pid\":%" PRIu32 ",\"command\":",
            trove_sample_event_name(st->event), st->hz, pid);
    if (a->cmd) {
        fputc('[', o);
        for (size_t i = 0; a->cmd[i]; i++) {
            if (i)
                fputc(',', o);
            cli_json_string(o, a->cmd[i], strlen(a->cmd[i]));
        }
        fputc(']', o);
    } else {
        fputs("null", o);
    }
    fputs(",\n\"frames\":[", o);
    n = trove_profile_frame_count(p);
    for (uint32_t i = 0; i < n; i++) {
        const struct trove_profile_frame *f = trove_profile_frame_get(p, i);
        fprintf(o, "%s\n{\"id\":%" PRIu32 ",\"module\":", i ? "," : "", i);
        json_str(o, p, f->module);
        fputs(",\"function\":", o);
        json_str(o, p, f->function);
        fputs(",\"file\":", o);
        json_str(o, p, f->file);
        fprintf(o, ",\"line\":%" PRIu32 ",\"address\":%" PRIu64 ",\"inline_depth\":%" PRIu32 "}",
                f->line, f->address, f->inline_depth);
    }
    fputs("],\n\"stacks\":[", o);
    n = trove_profile_stack_count(p);
    for (uint32_t i = 1; i <= n; i++) {
        const struct trove_profile_stack *s = trove_profile_stack_get(p, i);
        fprintf(o, "%s\n{\"id\":%" PRIu32 ",\"frame\":%" PRIu32 ",\"parent\":%" PRIu32 "}",
                i > 1 ? "," : "", i, s->frame, s->parent);
    }
    fputs("],\n\"samples\":[", o);
    n = trove_profile_sample_count(p);
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%s\n{\"time_ns\":%" PRIu64 ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
                   ",\"stack\":%" PRIu32 "}",
                i ? "," : "", smp[i].time_ns, smp[i].pid, smp[i].tid, smp[i].stack);
    fputs("],\n\"threads\":[", o);
    n = trove_names_count(names);
    for (size_t i = 0; i < n; i++) {
        struct trove_name_entry e;
        trove_names_entry(names, i, &e);
        if (e.type != TROVE_NAME_THREAD)
            continue;
        fprintf(o, "%s\n{\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"name\":", first ? "" : ",",
                e.a, e.b);
        cli_json_string(o, e.str, e.len);
        fputc('}', o);
        first = 0;
    }
    fputs("],\n\"switches\":[", o);
    for (size_t i = 0; i < nsw; i++)
        fprintf(o, "%s\n{\"time_ns\":%" PRIu64 ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
                   ",\"out\":%s,\"preempt\":%s}",
                i ? "," : "", sw[i].time_ns, sw[i].pid, sw[i].tid, sw[i].out ? "true" : "false",
                sw[i].preempt ? "true" : "false");
    fprintf(o, "],\n\"lost\":%" PRIu64 ",\"lost_samples\":%" PRIu64 "}\n", st->lost,
            st->lost_samples);
}

/* Distinct threads among the profile's samples. */
static size_t count_threads(const struct trove_profile *p)
{
    const struct trove_profile_sample *s = trove_profile_samples(p);
    size_t n = trove_profile_sample_count(p), k = 0;
    uint64_t *seen = n ? calloc(n, sizeof *seen) : NULL;
    if (!seen)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = (uint64_t)s[i].pid << 32 | s[i].tid;
        size_t j = 0;
        while (j < k && seen[j] != key)
            j++;
        if (j == k && k < 4096)
            seen[k++] = key;
    }
    free(seen);
    return k;
}

void cli_print_top(uint64_t top, int json, const struct trove_profile *p,
                   const struct trove_profile_func *f, size_t n, uint64_t samples)
{
    size_t show = top && top < n ? (size_t)top : n;
    if (json) {
        fputs(",\"top\":[", stdout);
        for (size_t i = 0; i < show; i++) {
            fputs(i ? ",{\"function\":" : "{\"function\":", stdout);
            json_str(stdout, p, f[i].function);
            fputs(",\"file\":", stdout);
            json_str(stdout, p, f[i].file);
            fputs(",\"module\":", stdout);
            json_str(stdout, p, f[i].module);
            printf(",\"self\":%" PRIu64 ",\"total\":%" PRIu64 "}", f[i].self, f[i].total);
        }
        fputc(']', stdout);
        return;
    }
    printf("%8s %6s %8s %6s  %-32s %-24s %s\n", "self", "self%", "total", "total%", "function",
           "file", "module");
    for (size_t i = 0; i < show; i++) {
        const char *fn = trove_profile_string_get(p, f[i].function, NULL);
        const char *file = trove_profile_string_get(p, f[i].file, NULL);
        const char *mod = trove_profile_string_get(p, f[i].module, NULL);
        double d = samples ? 100.0 / (double)samples : 0;
        printf("%8" PRIu64 " %5.1f%% %8" PRIu64 " %5.1f%%  %-32s %-24s %s\n", f[i].self,
               (double)f[i].self * d, f[i].total, (double)f[i].total * d, fn,
               *file ? base_name(file) : "-", base_name(mod));
    }
}

/* ---- sending live ----------------------------------------------------------------------- */

struct live {
    struct cli_producer pr;
    struct trove_profile_counts mark; /* what the service has of the profile */
    size_t samples_done, switches_done, names_sent;
    uint64_t bytes, frames;
    struct trove_bytes buf;
};

static int live_write(struct live *l)
{
    if (l->buf.len && cli_write_all(l->pr.fd, l->buf.ptr, l->buf.len) != 0)
        return cli_producer_closed("record", &l->pr, UINT64_MAX);
    l->bytes += l->buf.len;
    return 0;
}

/* What the sampler gathered since the last call: the new threads' names as a names frame,
 * the new samples symbolized into p and sent as samples frames. */
static int live_send(struct live *l, struct trove_symbolizer *sym, struct trove_sample_set *set,
                     struct trove_profile *p)
{
    struct trove_names *names = trove_sample_set_names(set);
    size_t n_names = trove_names_count(names), n_sw = 0;
    struct trove_profile_counts now;
    int rc;

    l->buf.len = 0;
    if (n_names > l->names_sent) {
        if (trove_wire_encode_names(names, l->names_sent, n_names, &l->buf) != TROVE_OK ||
            live_write(l))
            return 1;
        l->names_sent = n_names;
        l->frames++;
    }
    (void)trove_sample_set_switches(set, &n_sw);
    if ((rc = trove_sample_profile_since(sym, set, l->samples_done, l->switches_done, p)) !=
        TROVE_OK)
        return cli_error("record", "symbolizing the samples: %s", trove_strerror(rc));
    l->samples_done = trove_sample_set_count(set);
    l->switches_done = n_sw;
    l->buf.len = 0;
    if ((rc = trove_profile_encode(p, &l->mark, &l->buf)) != TROVE_OK)
        return cli_error("record", "encoding the samples: %s", trove_strerror(rc));
    for (size_t at = 0; at < l->buf.len; l->frames++)
        at += TROVE_WIRE_HEADER_SIZE + ((size_t)l->buf.ptr[at + 8] | (size_t)l->buf.ptr[at + 9] << 8 |
                                        (size_t)l->buf.ptr[at + 10] << 16 |
                                        (size_t)l->buf.ptr[at + 11] << 24);
    if (live_write(l))
        return 1;
    trove_profile_get_counts(p, &now);
    l->mark = now;
    return 0;
}

/* The profile as capture a->name in the store at a->store: no events, the threads' names. */
static int store_profile(const struct rec_args *a, const struct trove_profile *p,
                         const struct trove_names *names, struct trove_capture_info *info)
{
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int rc;
    if (cli_store_open("record", a->store, TROVE_STORE_CREATE, &s))
        return 1;
    rc = trove_capture_write_profile(s, a->name, NULL, 0, names, NULL, 0, p, NULL, info, &diag);
    cli_store_close(s);
    if (rc != TROVE_OK)
        return cli_error("record", "storing capture %s in %s: %s", a->name, a->store,
                         cli_diag_msg(&diag, rc));
    return 0;
}

int cli_record_sample(int argc, char **argv)
{
    const char *cmd = "record";
    struct rec_args a;
    struct trove_sample_set *set = NULL;
    struct trove_sampler *smp = NULL;
    struct trove_symbolizer *sym = NULL;
    struct trove_profile *prof = NULL;
    struct trove_profile_func *top = NULL;
    struct trove_sampler_stats st;
    struct trove_diag diag = {0};
    struct trove_output out;
    struct trove_capture_info stored;
    struct live live;
    int is_live, live_failed = 0;
    size_t n_top = 0;
    uint64_t in_range = 0;
    double t0, t_end = 0, took;
    int status = 1, rc, cmd_status = 0, have_status = 0, r;

    memset(&stored, 0, sizeof stored);
    memset(&live, 0, sizeof live);
    live.pr.fd = -1;
    if ((r = parse_args(argc, argv, &a)) != 0)
        return r < 0 ? 0 : r;
    is_live = !a.out && !a.have_top && !a.store;
    if (trove_sample_set_new(&set) != TROVE_OK || trove_symbolizer_new(&sym) != TROVE_OK ||
        trove_profile_new(&prof) != TROVE_OK) {
        cli_error(cmd, "out of memory");
        goto done;
    }
    if (is_live) { /* connected before the command starts: an error then starts nothing */
        char sockbuf[4200];
        const char *path = cli_socket_for(a.socket, NULL, sockbuf, sizeof sockbuf);
        trove_profile_get_counts(prof, &live.mark); /* a new profile's: the stream's start */
        live.pr.names_fallback = 1; /* threads named by their comm: the program's names win */
        if (cli_producer_open(cmd, path, a.name, 0, "trove record (sampling)", &live.pr))
            goto done;
        if (!a.quiet)
            cli_producer_say(cmd, &live.pr, 0);
    }
    catch_stop();
    if (a.cmd) {
        rc = trove_sampler_spawn(&a.o, a.cmd, set, &smp, &diag);
    } else {
        raise_nofile();
        rc = trove_sampler_attach(&a.o, a.pid, set, &smp, &diag);
    }
    if (rc != TROVE_OK) {
        cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
        goto done;
    }
    t0 = cli_now();
    if (a.seconds > 0)
        t_end = t0 + a.seconds;
    while (!stop_requested) {
        int wait_ms = 100;
        if (t_end > 0) {
            double left = t_end - cli_now();
            if (left <= 0)
                break;
            if (left * 1000 < wait_ms)
                wait_ms = (int)(left * 1000) + 1;
        }
        if ((rc = trove_sampler_poll(smp, wait_ms, &diag)) < 0) {
            cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
            goto done;
        }
        if (is_live && live_send(&live, sym, set, prof)) {
            live_failed = 1; /* sampling ends here; what was not sent is counted below */
            break;
        }
        if (rc == 0)
            break;
    }
    if ((rc = trove_sampler_stop(smp, &diag)) != TROVE_OK) {
        cli_error(cmd, "%s", cli_diag_msg(&diag, rc));
        goto done;
    }
    took = cli_now() - t0;
    have_status = trove_sampler_end_command(smp, SIGTERM, 2000, &cmd_status);
    trove_sampler_stats(smp, &st);
    if (is_live) {
        /* the rest, then the end of the stream: the service commits the capture */
        if (!live_failed && (live_send(&live, sym, set, prof) ||
                             cli_producer_finish(cmd, &live.pr, UINT64_MAX)))
            live_failed = 1;
        cli_producer_close(&live.pr);
        if (live_failed && (rc = trove_sample_profile_since(sym, set, live.samples_done,
                                                            live.switches_done, prof)) != TROVE_OK) {
            cli_error(cmd, "symbolizing the samples: %s", trove_strerror(rc));
            goto done;
        }
    } else if ((rc = trove_sample_profile(sym, set, prof)) != TROVE_OK) {
        cli_error(cmd, "symbolizing the samples: %s", trove_strerror(rc));
        goto done;
    }
    if (a.have_top &&
        (rc = trove_profile_top(prof, 0, UINT64_MAX, &top, &n_top, &in_range)) != TROVE_OK) {
        cli_error(cmd, "the top functions: %s", trove_strerror(rc));
        goto done;
    }
    if (a.out) {
        if (cli_out_open(cmd, a.out, 0, &out) != 0)
            goto done;
        write_profile(out.f, &a, prof, set, &st, trove_sampler_pid(smp));
        if (cli_out_commit(cmd, &out) != 0)
            goto done;
    }
    if (a.store && store_profile(&a, prof, trove_sample_set_names(set), &stored) != 0)
        goto done;
    if (a.json) {
        printf("{\"capture\":");
        cli_json_string(stdout, a.name, strlen(a.name));
        printf(",\"pid\":%" PRIu32 ",\"event\":\"%s\",\"hz\":%" PRIu32 ",\"seconds\":%.3f"
               ",\"samples\":%zu,\"threads\":%zu,\"frames\":%zu,\"stacks\":%zu,\"modules\":%zu"
               ",\"switches\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"lost_samples\":%" PRIu64
               ",\"unmapped\":%" PRIu64 ",\"interrupted\":%s",
               trove_sampler_pid(smp), trove_sample_event_name(st.event), st.hz, took,
               trove_profile_sample_count(prof), count_threads(prof),
               trove_profile_frame_count(prof), trove_profile_stack_count(prof),
               trove_sample_set_module_count(set), st.switches, st.lost, st.lost_samples,
               st.unmapped, stop_requested ? "true" : "false");
        if (have_status && WIFEXITED(cmd_status))
            printf(",\"exit_status\":%d", WEXITSTATUS(cmd_status));
        else if (have_status && WIFSIGNALED(cmd_status))
            printf(",\"signal\":%d", WTERMSIG(cmd_status));
        if (a.out) {
            printf(",\"out\":");
            cli_json_string(stdout, a.out, strlen(a.out));
        }
        if (a.store)
            printf(",\"stored_bytes\":%" PRIu64 ",\"new_objects\":%" PRIu64, stored.stored_bytes,
                   stored.new_objects);
        if (is_live)
            printf(",\"sent_bytes\":%" PRIu64 ",\"sent_frames\":%" PRIu64
                   ",\"sent_samples\":%zu,\"dropped_samples\":%zu,\"failed\":%s",
                   live.bytes, live.frames, live.mark.samples,
                   trove_profile_sample_count(prof) - live.mark.samples,
                   live_failed ? "true" : "false");
        if (a.have_top)
            cli_print_top(a.top, a.json, prof, top, n_top, in_range);
        printf("}\n");
    } else {
        if (a.have_top)
            cli_print_top(a.top, a.json, prof, top, n_top, in_range);
        if (!a.quiet || live_failed) {
            fprintf(stderr,
                    "trove record: %zu samples of %zu thread%s of pid %" PRIu32 " (%s, %" PRIu32
                    " Hz) in %.2f s; %zu frames, %zu stacks%s%s",
                    trove_profile_sample_count(prof), count_threads(prof),
                    count_threads(prof) == 1 ? "" : "s", trove_sampler_pid(smp),
                    trove_sample_event_name(st.event), st.hz, took,
                    trove_profile_frame_count(prof), trove_profile_stack_count(prof),
                    a.out ? " -> " : "", a.out ? a.out : "");
            if (a.store)
                fprintf(stderr, "; capture %s in %s (%" PRIu64 " bytes stored)", a.name,
                        a.store, stored.stored_bytes);
            if (is_live)
                fprintf(stderr, "; %zu sent to capture %s, %zu dropped%s (%" PRIu64
                                " bytes in %" PRIu64 " frames)",
                        live.mark.samples, a.name,
                        trove_profile_sample_count(prof) - live.mark.samples,
                        live_failed ? " (not sent after the error above)" : "", live.bytes,
                        live.frames);
            if (st.lost || st.lost_samples)
                fprintf(stderr, "; the kernel dropped %" PRIu64 " records and %" PRIu64
                                " samples",
                        st.lost, st.lost_samples);
            if (have_status && WIFEXITED(cmd_status) && WEXITSTATUS(cmd_status))
                fprintf(stderr, "; the command exited with status %d", WEXITSTATUS(cmd_status));
            else if (have_status && WIFSIGNALED(cmd_status))
                fprintf(stderr, "; the command ended on signal %d", WTERMSIG(cmd_status));
            fputc('\n', stderr);
        }
    }
    status = live_failed;
done:
    if (status && live.pr.stopped)
        status = CLI_EXIT_STOPPED;
    cli_producer_close(&live.pr);
    trove_bytes_free(&live.buf);
    free(top);
    trove_sampler_free(smp);
    trove_profile_free(prof);
    trove_symbolizer_free(sym);
    trove_sample_set_free(set);
    return status;
}

