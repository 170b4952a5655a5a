/*
 * bench_serve.c: `trove bench serve` — the live path end to end on loopback: the service
 * (trove_serve_run, its own process), P producer processes sending gen-model events over
 * the unix socket with their times set to when they are sent, and V viewer processes (half
 * raw, half packed, from=start) decoding every frame they get through trove_live_view.
 * Producers send the model's events as they are (their times moved by one offset, so the
 * bytes per event are the model's), and a probe producer sends one event every 5 ms stamped
 * with its send time, from which viewers take the producer->viewer latency (arrival minus
 * send: one monotonic clock on one host). Reports ingest and delivered events/s, drops,
 * latency p50 and p99, wire bytes
 * per event per format (stored: the capture as the store holds it, segments and summaries;
 * the JSON's "deflate" says the same, named when the stored segments were deflate frames),
 * the service's CPU per event, in all and by thread (its threads' names: trove-web, the
 * thread that runs trove_serve_run; trove-ingest, trove-pass, trove-store and the rest the
 * library names), and its peak RSS. --max raises the rate until drops appear, holding each
 * rate --step-seconds (10).
 */
#define _GNU_SOURCE /* wait4 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "trove/gen.h"
#include "trove/input.h"
#include "trove/capture.h"
#include "trove/serve.h"

#define CAPTURE "bench"
#define MAX_PROCS 64
#define LAT_MAX 200000 /* latency samples a viewer keeps */
#define THREAD_GROUPS 12 /* thread names the CPU report tells apart (the rest: "other") */

static void serve_usage(FILE *f)
{
    fprintf(f,
            "usage: trove bench serve [--producers P] [--viewers V] [--events N] [--rate R]\n"
            "                         [--max] [--step-seconds S] [--no-summaries]\n"
            "                         [--segment-format F] [--json]\n"
            "\n"
            "The live path on loopback: the service, P producer processes and V viewers (half\n"
            "raw, half packed, each decoding what it gets), and the store.\n"
            "  --producers P   producer processes, 1..64 (default 4)\n"
            "  --viewers V     viewer processes, 0..64 (default 4)\n"
            "  --events N      events in all, split between the producers (default 4M)\n"
            "  --rate R        events per second in all (default 0: as fast as they can)\n"
            "  --max           raise the rate from 1M/s by 1.25x until drops appear; report the\n"
            "                  highest rate with none\n"
            "  --step-seconds S  how long --max holds each rate, 1..600 (default 10): a rate\n"
            "                  held for 2 s can drop events at 10\n"
            "  --no-summaries  the service stores the capture without summaries (`trove serve\n"
            "                  --no-summaries`): run with and without to see what they cost\n"
            "  --segment-format F  the service stores the capture's segments as F (`trove serve\n"
            "                  --segment-format`: deflate, columnar or columnar_deflate, the\n"
            "                  service's default): what each costs the store thread\n"
            "  --json          one JSON object on stdout\n");
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int read_all(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

/* ---- the service process --------------------------------------------------------------- */

static int ready_fd = -1;

static void on_ready(void *ctx, const char *url, const char *sock)
{
    char line[512];
    int n = snprintf(line, sizeof line, "%s %s\n", url, sock);
    (void)ctx;
    if (cli_write_all(ready_fd, line, (size_t)n) != 0)
        _exit(3);
}

static void on_term(int sig)
{
    (void)sig;
    trove_serve_stop();
}

static int no_summaries;   /* --no-summaries: the service's option */
static int segment_format; /* --segment-format: the service's option (0: its default) */

static void service_main(const char *store, int fd)
{
    struct trove_serve_options so;
    struct trove_diag diag = {0};
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    ready_fd = fd;
    pthread_setname_np(pthread_self(), "trove-web"); /* trove_serve_run's caller: the web thread */
    memset(&so, 0, sizeof so);
    so.store_dir = store;
    so.listen = "127.0.0.1:0";
    so.ready = on_ready;
    so.no_summaries = no_summaries;
    so.segment_format = segment_format;
    _exit(trove_serve_run(&so, &diag) == TROVE_OK ? 0 : 1);
}

/* ---- a producer process ---------------------------------------------------------------- */

/* The producers get ready (their events made, connected, names sent), say so on ready_w
 * and wait for the start (start_r closed by the parent), so that the run's clock starts
 * with every producer at its first frame. */
static void producer_main(const char *sock, int k, uint64_t events, double rate, int ready_w,
                          int start_r)
{
    struct trove_gen_options go;
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes buf = {0};
    struct trove_event *chunk = calloc(TROVE_BATCH_DEFAULT, sizeof *chunk);
    struct sockaddr_un sun;
    char hello[256];
    uint64_t sent = 0, t0;
    int fd, n;

    trove_gen_defaults(&go);
    go.events = events < 200000 ? (events ? events : 1) : 200000;
    go.seed = (uint64_t)k + 1;
    go.processes = 1;
    go.threads = 8;
    if (!chunk || trove_names_new(&names) != TROVE_OK || trove_wire_encoder_new(&enc) != TROVE_OK ||
        trove_gen(&go, &ev, names) != TROVE_OK)
        _exit(2);
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    snprintf(sun.sun_path, sizeof sun.sun_path, "%.100s", sock);
    if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
        connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0)
        _exit(2);
    n = snprintf(hello, sizeof hello, "{\"capture\":\"" CAPTURE "\",\"producer\":\"bench %d\","
                                      "\"pid\":%d}\n", k, (int)getpid());
    if (cli_write_all(fd, hello, (size_t)n) != 0 ||
        trove_wire_encode_names(names, 0, trove_names_count(names), &buf) != TROVE_OK ||
        cli_write_all(fd, buf.ptr, buf.len) != 0)
        _exit(2);
    {
        char c;
        if (write(ready_w, "r", 1) != 1 || read(start_r, &c, 1) < 0)
            _exit(2);
    }
    t0 = mono_ns();
    while (sent < events) {
        size_t m = events - sent < TROVE_BATCH_DEFAULT ? (size_t)(events - sent) : TROVE_BATCH_DEFAULT;
        size_t at = (size_t)(sent % ev.len);
        uint64_t now, base;
        if (m > ev.len - at)
            m = ev.len - at;
        if (rate > 0) {
            uint64_t due = t0 + (uint64_t)((double)sent / rate * 1e9);
            now = mono_ns();
            if (due > now) {
                struct timespec ts = {(time_t)((due - now) / 1000000000u),
                                      (long)((due - now) % 1000000000u)};
                nanosleep(&ts, NULL);
            }
        }
        memcpy(chunk, ev.ev + at, m * sizeof *chunk);
        /* The model's times, moved to start at t0 (and on by the model's length each round) */
        base = ev.ev[0].start_ns;
        now = t0 + (uint64_t)(sent / ev.len) * (ev.ev[ev.len - 1].start_ns - base + 1);
        for (size_t i = 0; i < m; i++) {
            chunk[i].start_ns = now + (chunk[i].start_ns - base);
            chunk[i].pid = (uint32_t)k + 1;
        }
        buf.len = 0;
        if (trove_wire_encode(enc, TROVE_WIRE_RAW, chunk, m, &buf) != TROVE_OK ||
            cli_write_all(fd, buf.ptr, buf.len) != 0)
            _exit(2);
        sent += m;
    }
    close(fd);
    _exit(0);
}

/* ---- the probe: one event every 5 ms, stamped with its send time, until stop_fd reads -- */

#define PROBE_PID 999999u
#define PROBE_NS 5000000u

static void probe_main(const char *sock, int stop_fd)
{
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes buf = {0};
    struct sockaddr_un sun;
    struct trove_event e;
    const char hello[] = "{\"capture\":\"" CAPTURE "\",\"producer\":\"probe\"}\n";
    int fd;

    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    snprintf(sun.sun_path, sizeof sun.sun_path, "%.100s", sock);
    if (trove_wire_encoder_new(&enc) != TROVE_OK || (fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
        connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0 ||
        cli_write_all(fd, hello, sizeof hello - 1) != 0)
        _exit(2);
    memset(&e, 0, sizeof e);
    e.pid = PROBE_PID;
    for (;;) {
        struct timespec ts = {0, PROBE_NS};
        char c;
        fd_set rd;
        struct timeval tv = {0, 0};
        FD_ZERO(&rd);
        FD_SET(stop_fd, &rd);
        if (select(stop_fd + 1, &rd, NULL, NULL, &tv) > 0 && read(stop_fd, &c, 1) >= 0)
            break;
        e.start_ns = mono_ns();
        buf.len = 0;
        if (trove_wire_encode(enc, TROVE_WIRE_RAW, &e, 1, &buf) != TROVE_OK ||
            cli_write_all(fd, buf.ptr, buf.len) != 0)
            _exit(2);
        nanosleep(&ts, NULL);
    }
    close(fd);
    _exit(0);
}

/* ---- a viewer process ------------------------------------------------------------------- */

struct viewer_result {
    uint64_t events, probes, frames, event_bytes, dropped, ended;
    uint64_t first_ns, last_ns;
    uint32_t nlat;
    int wire, failed;
};

struct vstate {
    struct viewer_result r;
    struct trove_wire_decoder *dec;
    struct trove_event *ev;
    struct trove_names *names;
    float *lat; /* ms */
};

static int v_text(void *ctx, const char *json, size_t len)
{
    struct vstate *v = ctx;
    const char *p;
    (void)len;
    if (strstr(json, "\"type\":\"gap\"") && (p = strstr(json, "\"events\":")))
        v->r.dropped += strtoull(p + 9, NULL, 10);
    if (strstr(json, "\"type\":\"end\""))
        v->r.ended = 1;
    if (strstr(json, "\"type\":\"error\""))
        v->r.failed = 1;
    return 0;
}

static int v_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct vstate *v = ctx;
    struct trove_wire_frame fr;
    uint64_t now = mono_ns();

    if (trove_wire_decode(v->dec, frame, len, v->ev, TROVE_WIRE_MAX_EVENTS, v->names, &fr, NULL) !=
        TROVE_OK) {
        v->r.failed = 1;
        return 1;
    }
    if (fr.format == TROVE_WIRE_NAMES)
        return 0;
    if (!v->r.first_ns)
        v->r.first_ns = now;
    v->r.last_ns = now;
    v->r.frames++;
    v->r.event_bytes += len;
    for (size_t i = 0; i < fr.n_events; i++) {
        if (v->ev[i].pid != PROBE_PID) {
            v->r.events++;
        } else if (v->r.nlat < LAT_MAX && now > v->ev[i].start_ns) {
            v->lat[v->r.nlat++] = (float)((double)(now - v->ev[i].start_ns) / 1e6);
            v->r.probes++;
        }
    }
    return 0;
}

static void viewer_main(const char *url, int wire, int fd)
{
    struct trove_live_view_options vo;
    struct vstate v;

    memset(&v, 0, sizeof v);
    v.r.wire = wire;
    v.lat = calloc(LAT_MAX, sizeof *v.lat);
    v.ev = calloc(TROVE_WIRE_MAX_EVENTS, sizeof *v.ev);
    if (!v.lat || !v.ev || trove_wire_decoder_new(&v.dec) != TROVE_OK ||
        trove_names_new(&v.names) != TROVE_OK)
        _exit(2);
    memset(&vo, 0, sizeof vo);
    vo.url = url;
    vo.capture = CAPTURE;
    vo.wire = wire;
    vo.from_start = 1;
    vo.on_text = v_text;
    vo.on_frame = v_frame;
    vo.ctx = &v;
    if (trove_live_view(&vo, NULL, NULL) != TROVE_OK)
        v.r.failed = 1;
    if (cli_write_all(fd, &v.r, sizeof v.r) != 0 ||
        cli_write_all(fd, v.lat, v.r.nlat * sizeof *v.lat) != 0)
        _exit(2);
    _exit(0);
}

/* ---- one run ----------------------------------------------------------------------------- */

struct run_result {
    int ok;
    uint64_t events, delivered_min, drops;
    double ingest_eps, delivered_eps, lat_p50, lat_p99;
    double bpe_raw, bpe_packed, bpe_deflate;
    double cpu_ns_per_event, peak_rss_mb;
    /* the service's CPU by thread name while the run went on (until its stop), ns per event */
    struct {
        char name[16];
        double ns;
    } thread[THREAD_GROUPS];
    unsigned nthread;
    /* `trove bench wire`'s bytes per event for the events the store holds, in their order:
     * frames of 2048 (the viewers' frames are the pass's batches, often shorter) */
    double wire_raw, wire_packed, wire_deflate;
};

/* What trove bench wire counts for ev[0..n): each format's frames of 2048, headers in. */
static void wire_sizes(const struct trove_events *ev, struct run_result *r)
{
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes buf = {0};
    double *out[3] = {&r->wire_raw, &r->wire_packed, &r->wire_deflate};

    if (!ev->len || trove_wire_encoder_new(&enc) != TROVE_OK)
        return;
    for (int f = TROVE_WIRE_RAW; f <= TROVE_WIRE_DEFLATE; f++) {
        uint64_t bytes = 0;
        for (size_t i = 0; i < ev->len; i += TROVE_BATCH_DEFAULT) {
            size_t k = ev->len - i < TROVE_BATCH_DEFAULT ? ev->len - i : TROVE_BATCH_DEFAULT;
            buf.len = 0;
            if (trove_wire_encode(enc, f, ev->ev + i, k, &buf) != TROVE_OK)
                break;
            bytes += buf.len;
        }
        *out[f - 1] = (double)bytes / (double)ev->len;
    }
    trove_bytes_free(&buf);
    trove_wire_encoder_free(enc);
}

static int float_cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The CPU each thread of process pid has used, summed by thread name, into r->thread (ns
 * per event of N), from /proc/PID/task/TID/stat (its name in parentheses, then utime and
 * stime, fields 14 and 15, in clock ticks). Threads that ended before are not there: the
 * total from wait4 then exceeds the sum. */
static void thread_cpu(pid_t pid, uint64_t N, struct run_result *r)
{
    char path[64], buf[1024];
    struct dirent *d;
    DIR *dir;
    const double tick_ns = 1e9 / (double)sysconf(_SC_CLK_TCK);

    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    if (!(dir = opendir(path)))
        return;
    while ((d = readdir(dir)) != NULL) {
        char name[16], *lp, *rp;
        unsigned long long ut = 0, st = 0;
        unsigned k;
        ssize_t n;
        int fd;
        if (d->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%.20s/stat", (int)pid, d->d_name);
        if ((fd = open(path, O_RDONLY)) < 0)
            continue;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        if (!(lp = strchr(buf, '(')) || !(rp = strrchr(buf, ')')) || rp - lp > 16)
            continue;
        snprintf(name, sizeof name, "%.*s", (int)(rp - lp - 1), lp + 1);
        /* after ") ": state (3), ppid .. cmajflt (4..12), utime (14), stime (15) */
        if (sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                   &st) != 2)
            continue;
        for (k = 0; k < r->nthread && strcmp(r->thread[k].name, name); k++)
            ;
        if (k == r->nthread) {
            if (k == THREAD_GROUPS) /* full: the last group takes the rest */
                k = THREAD_GROUPS - 1, snprintf(r->thread[k].name, 16, "other");
            else
                snprintf(r->thread[r->nthread++].name, 16, "%s", name);
        }
        r->thread[k].ns += (double)(ut + st) * tick_ns / (double)N;
    }
    closedir(dir);
}

static int one_run(unsigned P, unsigned V, uint64_t N, double rate, int wire,
                   struct run_result *out)
{
    char dir[] = "/tmp/trove-bench-serve-XXXXXX", store[64], line[512], url[256], sock[256];
    pid_t srv, prod[MAX_PROCS], view[MAX_PROCS], probe;
    int vfd[MAX_PROCS], rfd[2], stop[2], ready[2], start[2], status;
    struct rusage ru;
    float *lat = NULL;
    size_t nlat = 0;
    uint64_t t0, t1, raw_b = 0, raw_e = 0, packed_b = 0, packed_e = 0, last = 0;
    size_t got = 0;

    memset(out, 0, sizeof *out);
    if (!mkdtemp(dir))
        return cli_error("bench serve", "mkdtemp: %s", strerror(errno));
    snprintf(store, sizeof store, "%s/s", dir);
    if (pipe(rfd) != 0)
        return cli_error("bench serve", "pipe: %s", strerror(errno));
    fflush(NULL);
    if ((srv = fork()) == 0) {
        close(rfd[0]);
        service_main(store, rfd[1]);
    }
    close(rfd[1]);
    while (got + 1 < sizeof line) { /* the ready line */
        ssize_t r = read(rfd[0], line + got, 1);
        if (r <= 0)
            break;
        if (line[got++] == '\n')
            break;
    }
    line[got] = 0;
    close(rfd[0]);
    if (sscanf(line, "%255s %255s", url, sock) != 2) {
        waitpid(srv, NULL, 0);
        bench_remove_tree(dir);
        return cli_error("bench serve", "the service did not start");
    }
    for (unsigned i = 0; i < V; i++) {
        int p[2];
        if (pipe(p) != 0)
            return cli_error("bench serve", "pipe: %s", strerror(errno));
        if ((view[i] = fork()) == 0) {
            close(p[0]);
            viewer_main(url, i % 2 ? TROVE_WIRE_PACKED : TROVE_WIRE_RAW, p[1]);
        }
        close(p[1]);
        vfd[i] = p[0];
    }
    usleep(300000); /* the viewers connect (from=start: one late still gets everything) */
    if (pipe(stop) != 0)
        return cli_error("bench serve", "pipe: %s", strerror(errno));
    if ((probe = fork()) == 0) {
        close(stop[1]);
        probe_main(sock, stop[0]);
    }
    close(stop[0]);
    usleep(20000);
    if (pipe(ready) != 0 || pipe(start) != 0)
        return cli_error("bench serve", "pipe: %s", strerror(errno));
    for (unsigned i = 0; i < P; i++)
        if ((prod[i] = fork()) == 0) {
            close(ready[0]);
            close(start[1]);
            producer_main(sock, (int)i, N / P + (i < N % P), rate > 0 ? rate / P : 0, ready[1],
                          start[0]);
        }
    close(ready[1]);
    close(start[0]);
    for (unsigned i = 0; i < P; i++) { /* every producer ready */
        char c;
        if (read(ready[0], &c, 1) != 1)
            break;
    }
    close(ready[0]);
    t0 = mono_ns();
    close(start[1]); /* go */
    for (unsigned i = 0; i < P; i++) {
        waitpid(prod[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            cli_error("bench serve", "producer %u failed", i);
    }
    t1 = mono_ns();
    if (write(stop[1], "", 1) != 1 || waitpid(probe, &status, 0) < 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        cli_error("bench serve", "the probe failed");
    close(stop[1]);
    out->ok = 1;
    out->events = N;
    out->delivered_min = V ? UINT64_MAX : N;
    lat = calloc((size_t)V * LAT_MAX + 1, sizeof *lat);
    for (unsigned i = 0; i < V; i++) {
        struct viewer_result r;
        if (read_all(vfd[i], &r, sizeof r) != 0 || r.nlat > LAT_MAX ||
            read_all(vfd[i], lat + nlat, r.nlat * sizeof *lat) != 0) {
            out->ok = 0;
            r.events = 0;
            r.nlat = 0;
        }
        close(vfd[i]);
        waitpid(view[i], NULL, 0);
        nlat += r.nlat;
        out->drops += r.dropped + (N > r.events ? N - r.events : 0);
        if (r.events < out->delivered_min)
            out->delivered_min = r.events;
        if (r.last_ns > last)
            last = r.last_ns;
        if (r.wire == TROVE_WIRE_RAW) {
            raw_b += r.event_bytes;
            raw_e += r.events;
        } else {
            packed_b += r.event_bytes;
            packed_e += r.events;
        }
        if (r.failed || !r.ended)
            out->ok = 0;
    }
    thread_cpu(srv, N, out); /* before the stop: what the run cost each thread */
    kill(srv, SIGTERM);
    wait4(srv, &status, 0, &ru);
    out->ingest_eps = (double)N / ((double)(t1 - t0) / 1e9);
    out->delivered_eps = V ? (double)out->delivered_min / ((double)((last > t1 ? last : t1) - t0) / 1e9)
                           : out->ingest_eps;
    if (nlat) {
        qsort(lat, nlat, sizeof *lat, float_cmp);
        out->lat_p50 = lat[nlat / 2];
        out->lat_p99 = lat[(size_t)((double)nlat * 0.99)];
    }
    out->bpe_raw = raw_e ? (double)raw_b / (double)raw_e : 0;
    out->bpe_packed = packed_e ? (double)packed_b / (double)packed_e : 0;
    out->cpu_ns_per_event = ((double)ru.ru_utime.tv_sec * 1e9 + (double)ru.ru_utime.tv_usec * 1e3 +
                             (double)ru.ru_stime.tv_sec * 1e9 + (double)ru.ru_stime.tv_usec * 1e3) /
                            (double)N;
    out->peak_rss_mb = (double)ru.ru_maxrss / 1024.0;
    {
        struct trove_store *s = NULL;
        struct trove_capture_info ci;
        if (trove_store_open(store, TROVE_STORE_READONLY, &s, NULL) == TROVE_OK &&
            trove_capture_info(s, CAPTURE, &ci, NULL) == TROVE_OK && ci.events) {
            out->bpe_deflate = (double)ci.stored_bytes / (double)ci.events;
            if (ci.events < N)
                out->ok = 0; /* the store must have every event (and the probe's) */
        } else {
            out->ok = 0;
        }
        cli_store_close(s);
    }
    if (wire) { /* the stored events, read back, as bench wire would encode them */
        struct trove_events ev = {0};
        struct trove_names *names = NULL;
        if (trove_names_new(&names) == TROVE_OK &&
            trove_input_capture_walk(store, CAPTURE, 0, UINT64_MAX, NULL, &ev, names, NULL, NULL,
                                     NULL) == TROVE_OK)
            wire_sizes(&ev, out);
        trove_events_free(&ev);
        trove_names_free(names);
    }
    free(lat);
    bench_remove_tree(dir);
    return 0;
}

static void print_run(unsigned P, unsigned V, double rate, const struct run_result *r, int json)
{
    if (json) {
        printf("{\"producers\":%u,\"viewers\":%u,\"events\":%" PRIu64 ",\"ingest_eps\":%.0f,"
               "\"delivered_eps\":%.0f,\"drops\":%" PRIu64 ",\"latency_ms_p50\":%.3f,"
               "\"latency_ms_p99\":%.3f,\"bytes_per_event\":{\"raw\":%.3f,\"packed\":%.3f,"
               "\"deflate\":%.3f,\"stored\":%.3f},\"cpu_ns_per_event\":%.1f,"
               "\"cpu_ns_per_event_by_thread\":{",
               P, V, r->events, r->ingest_eps, r->delivered_eps, r->drops, r->lat_p50, r->lat_p99,
               r->bpe_raw, r->bpe_packed, r->bpe_deflate, r->bpe_deflate, r->cpu_ns_per_event);
        for (unsigned k = 0; k < r->nthread; k++)
            printf("%s\"%s\":%.1f", k ? "," : "", r->thread[k].name, r->thread[k].ns);
        printf("},\"peak_rss_mb\":%.1f,\"segment_format\":\"%s\"}\n", r->peak_rss_mb,
               trove_wire_format_name(segment_format ? segment_format
                                                     : TROVE_WIRE_COLUMNAR_DEFLATE));
        return;
    }
    printf("producers %u, viewers %u (half raw, half packed), %" PRIu64 " events, rate %s\n", P, V,
           r->events, rate > 0 ? "paced" : "max");
    if (rate > 0)
        printf("  asked rate             %12.0f events/s\n", rate);
    printf("  ingested               %12.0f events/s\n"
           "  delivered (slowest)    %12.0f events/s\n"
           "  dropped                %12" PRIu64 " events\n"
           "  latency p50 / p99      %9.2f ms / %.2f ms\n"
           "  bytes per event        raw %.2f, packed %.2f, stored %.2f\n"
           "  service CPU            %12.1f ns per event\n"
           "  service peak RSS       %12.1f MiB\n"
           "  everything stored      %12s\n",
           r->ingest_eps, r->delivered_eps, r->drops, r->lat_p50, r->lat_p99, r->bpe_raw,
           r->bpe_packed, r->bpe_deflate, r->cpu_ns_per_event, r->peak_rss_mb,
           r->ok ? "yes" : "NO");
    if (r->nthread) {
        printf("  service CPU by thread ");
        for (unsigned k = 0; k < r->nthread; k++)
            printf("%s %s %.1f", k ? "," : "", r->thread[k].name, r->thread[k].ns);
        printf(" ns per event (until the stop)\n");
    }
    if (r->wire_packed > 0)
        printf("  bench wire, same data  raw %.2f, packed %.2f, deflate %.2f (the stored events in "
               "frames of 2048)\n",
               r->wire_raw, r->wire_packed, r->wire_deflate);
}

int bench_serve(int argc, char **argv)
{
    uint64_t P = 4, V = 4, N = 4000000, rate = 0, step_s = 10;
    int json = 0, max = 0;
    struct run_result r;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t *dst = NULL;
        if (cli_is_help(a)) {
            serve_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--json"))
            json = 1;
        else if (!strcmp(a, "--max"))
            max = 1;
        else if (!strcmp(a, "--no-summaries"))
            no_summaries = 1;
        else if (!strcmp(a, "--segment-format")) {
            if (i + 1 >= argc)
                return cli_error("bench serve", "--segment-format needs a format") + 1;
            if (cli_parse_segment_format("bench serve", argv[++i], &segment_format))
                return 2;
        } else if (!strcmp(a, "--producers"))
            dst = &P;
        else if (!strcmp(a, "--viewers"))
            dst = &V;
        else if (!strcmp(a, "--events"))
            dst = &N;
        else if (!strcmp(a, "--rate"))
            dst = &rate;
        else if (!strcmp(a, "--step-seconds"))
            dst = &step_s;
        else
            return cli_error("bench serve", "unknown option '%s'; see `trove bench serve --help`",
                             a) + 1;
        if (dst && (i + 1 >= argc || cli_parse_u64(argv[++i], dst)))
            return cli_error("bench serve", "%s needs a number", a) + 1;
    }
    if (P < 1 || P > MAX_PROCS || V > MAX_PROCS || N < P)
        return cli_error("bench serve", "--producers 1..64, --viewers 0..64, --events >= P") + 1;
    if (step_s < 1 || step_s > 600)
        return cli_error("bench serve", "--step-seconds is 1..600") + 1;
    if (!max) {
        if (one_run((unsigned)P, (unsigned)V, N, (double)rate, !json, &r))
            return 1;
        print_run((unsigned)P, (unsigned)V, (double)rate, &r, json);
        return r.ok ? 0 : 1;
    }
    {
        double R = 1e6, best = 0;
        struct run_result keep;
        memset(&keep, 0, sizeof keep);
        for (int step = 0; step < 24; step++, R *= 1.25) {
            uint64_t n = (uint64_t)(R * (double)step_s); /* step_s seconds at the rate */
            if (one_run((unsigned)P, (unsigned)V, n, R, 0, &r))
                return 1;
            if (!json)
                fprintf(stderr, "  rate %.0f for %" PRIu64 " s: delivered %.0f/s, %" PRIu64
                        " dropped, p99 %.1f ms, %.0f ns CPU an event%s\n", R, step_s,
                        r.delivered_eps, r.drops, r.lat_p99, r.cpu_ns_per_event,
                        r.ok ? "" : ", not all stored");
            /* kept up: no drop, and delivered within 5 % of the asked rate */
            if (r.drops || !r.ok || r.delivered_eps < 0.95 * R)
                break;
            best = R;
            keep = r;
        }
        if (json)
            printf("{\"max_rate_without_drops\":%.0f,\"step_seconds\":%" PRIu64 ",\"run\":",
                   best, step_s);
        else
            printf("highest rate with no drops, each held %" PRIu64 " s: %.0f events/s\n", step_s,
                   best);
        print_run((unsigned)P, (unsigned)V, best, &keep, json);
        if (json)
            printf("}\n");
    }
    return 0;
}
