/*
 * bench_soak.c: `trove bench soak produce|view|check` — the three programs of the soak
 * (bench/soak.sh, `make soak`) that a shell script cannot be. The soak runs `trove serve`
 * for minutes under load and checks what went in against what was committed and what
 * viewers got; to count that exactly, every event a soak producer records is findable:
 *
 *   produce   a producer built on libtrove-client, as an instrumented program is: one
 *             thread records, at --rate events a second, pairs of a counter "soak.seq"
 *             whose value is 1, 2, 3, ... and a zone "soak.work"; the client's flush thread
 *             sends them and reconnects (appending) when the service goes away. Every
 *             500 ms, and once more after trove_client_stop at SIGTERM, one JSON line on
 *             stdout: the last seq recorded and the client's counters (recorded, sent,
 *             dropped, connects).
 *   view      a viewer that joins and leaves: sessions of --session-ms on /api/live, one
 *             after the other, each a new WebSocket (the wire format rotating, from=start
 *             every Kth), until SIGTERM; one JSON line a session: what came (events, gap
 *             messages, the end, the close code) and, for each producer's pid, the runs of
 *             consecutive seq values it saw. A run that breaks is an event missing in the
 *             session (a drop, or a hole the store has too: the report tells which).
 *   check     the capture read back from the store (the streaming walk of `trove replay`),
 *             the same runs per pid, with the zones and the client's "trove.dropped"
 *             counters (the gaps it announces) counted apart.
 *
 * The seq counter is what makes per-session accounting possible: a session's run [a, b]
 * of pid P is compared with the seqs a..b the store holds for P, so "delivered" is
 * compared with "committed in that window" without clocks. Counters keep their value
 * exactly (the double's bits in dur_ns, below 2^53), and one producer's events keep their
 * order through the service (docs/serve.md), so within a pid the seqs rise by one.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "trove/input.h"
#include "trove/client.h"
#include "trove/serve.h"

#define SEQ_NAME "soak.seq"
#define ZONE_NAME "soak.work"
#define GAP_NAME "trove.dropped"
#define MAX_PIDS 64     /* producers a session or the check tells apart */
#define MAX_RUNS 4096   /* runs kept per pid (more are counted, not listed) */
#define NAME_CACHE 4096 /* event name ids classified once */

static volatile sig_atomic_t stop_asked;

static void on_stop(int sig)
{
    (void)sig;
    stop_asked = 1;
}

static void catch_stop(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void soak_usage(FILE *f)
{
    fprintf(f,
            "usage: trove bench soak produce --socket PATH --capture NAME [--rate R] [--ring N]\n"
            "       trove bench soak view --url URL --capture NAME [--session-ms MS]\n"
            "                             [--from-start-every K] [--wires LIST]\n"
            "       trove bench soak check --store DIR --capture NAME\n"
            "\n"
            "The programs of the soak (bench/soak.sh, `make soak`):\n"
            "  produce  record R events a second (default 250000) with libtrove-client into\n"
            "           capture NAME: counters \"" SEQ_NAME "\" = 1, 2, ... and zones \"" ZONE_NAME
            "\",\n"
            "           until SIGTERM; a JSON line of counts every 500 ms and at the end.\n"
            "           --ring N: events per thread's ring (default 1M: 4 s at 250k/s)\n"
            "  view     watch NAME in sessions of MS ms (default 1000), one WebSocket each,\n"
            "           until SIGTERM; the wire rotates through LIST (default\n"
            "           raw,packed,deflate,auto), every Kth session from=start (default 0:\n"
            "           never); a JSON line a session, with each pid's runs of seqs\n"
            "  check    read capture NAME back from the store: a JSON object of each pid's\n"
            "           events, zones, gap counters and runs of seqs\n");
}

/* ---- runs of seqs per pid --------------------------------------------------------------- */

struct pid_runs {
    uint32_t pid;
    uint64_t events, seqs, zones, gapctr, other, dups;
    uint64_t gap_max; /* the largest "trove.dropped" value: the client's lost-event total */
    uint64_t last;    /* the last seq (0: none yet) */
    uint64_t nruns;
    uint64_t (*runs)[2]; /* [first, last] of each run, up to MAX_RUNS */
};

struct tracker {
    struct pid_runs pid[MAX_PIDS];
    size_t npids;
    uint64_t events, unknown_pid; /* events of pids past MAX_PIDS */
    uint8_t cls[NAME_CACHE];      /* 0 unknown, 1 seq, 2 zone, 3 gap, 4 other */
    int failed;                   /* out of memory */
};

enum { CLS_UNKNOWN, CLS_SEQ, CLS_ZONE, CLS_GAP, CLS_OTHER };

static void tracker_free(struct tracker *t)
{
    for (size_t i = 0; i < t->npids; i++)
        free(t->pid[i].runs);
    memset(t, 0, sizeof *t);
}

static int classify(struct tracker *t, const struct trove_names *names, uint32_t id)
{
    const char *s;
    int c;
    if (id < NAME_CACHE && t->cls[id])
        return t->cls[id];
    s = trove_names_get(names, TROVE_NAME_EVENT, id, 0, NULL);
    c = !s ? CLS_OTHER : !strcmp(s, SEQ_NAME) ? CLS_SEQ : !strcmp(s, ZONE_NAME) ? CLS_ZONE
        : !strcmp(s, GAP_NAME) ? CLS_GAP : CLS_OTHER;
    if (id < NAME_CACHE && s) /* a name not known yet may come in a later names frame */
        t->cls[id] = (uint8_t)c;
    return c;
}

static struct pid_runs *pid_of(struct tracker *t, uint32_t pid)
{
    for (size_t i = 0; i < t->npids; i++)
        if (t->pid[i].pid == pid)
            return &t->pid[i];
    if (t->npids == MAX_PIDS)
        return NULL;
    memset(&t->pid[t->npids], 0, sizeof t->pid[0]);
    t->pid[t->npids].pid = pid;
    return &t->pid[t->npids++];
}

static void add_seq(struct tracker *t, struct pid_runs *p, uint64_t seq)
{
    p->seqs++;
    if (p->nruns && seq == p->last + 1) {
        if (p->nruns <= MAX_RUNS)
            p->runs[p->nruns - 1][1] = seq;
    } else if (p->nruns && seq <= p->last) {
        p->dups++; /* a seq again, or out of order: never expected */
        return;
    } else {
        if (!p->runs && !(p->runs = malloc(MAX_RUNS * sizeof *p->runs))) {
            t->failed = 1;
            return;
        }
        if (p->nruns < MAX_RUNS) {
            p->runs[p->nruns][0] = seq;
            p->runs[p->nruns][1] = seq;
        }
        p->nruns++;
    }
    p->last = seq;
}

static void track(struct tracker *t, const struct trove_names *names, const struct trove_event *ev,
                  size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct trove_event *e = &ev[i];
        struct pid_runs *p = pid_of(t, e->pid);
        int c = classify(t, names, e->name_id);
        t->events++;
        if (!p) {
            t->unknown_pid++;
            continue;
        }
        p->events++;
        if (c == CLS_SEQ && e->kind == TROVE_KIND_COUNTER) {
            double v = trove_counter_value(e);
            if (v >= 1 && v < 9007199254740992.0)
                add_seq(t, p, (uint64_t)v);
            else
                p->other++;
        } else if (c == CLS_GAP && e->kind == TROVE_KIND_COUNTER) {
            double v = trove_counter_value(e);
            p->gapctr++;
            if (v > (double)p->gap_max)
                p->gap_max = (uint64_t)v;
        } else if (c == CLS_ZONE) {
            p->zones++;
        } else {
            p->other++;
        }
    }
}

static void print_pids(FILE *o, const struct tracker *t)
{
    fprintf(o, "\"pids\":[");
    for (size_t i = 0; i < t->npids; i++) {
        const struct pid_runs *p = &t->pid[i];
        fprintf(o,
                "%s{\"pid\":%" PRIu32 ",\"events\":%" PRIu64 ",\"seqs\":%" PRIu64
                ",\"zones\":%" PRIu64 ",\"gap_counters\":%" PRIu64 ",\"gap_max\":%" PRIu64
                ",\"other\":%" PRIu64 ",\"dups\":%" PRIu64 ",\"nruns\":%" PRIu64 ",\"runs\":[",
                i ? "," : "", p->pid, p->events, p->seqs, p->zones, p->gapctr, p->gap_max,
                p->other, p->dups, p->nruns);
        for (uint64_t r = 0; r < p->nruns && r < MAX_RUNS; r++)
            fprintf(o, "%s[%" PRIu64 ",%" PRIu64 "]", r ? "," : "", p->runs[r][0], p->runs[r][1]);
        fprintf(o, "]}");
    }
    fprintf(o, "],\"unknown_pid_events\":%" PRIu64, t->unknown_pid);
}

/* ---- produce ---------------------------------------------------------------------------- */

static void print_stats(uint64_t seq, double t0, int final)
{
    struct trove_client_stats cs;
    trove_client_stats(&cs);
    printf("{\"t\":%.3f,\"elapsed\":%.3f,\"pid\":%d,\"seq\":%" PRIu64 ",\"recorded\":%" PRIu64
           ",\"sent\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"bytes\":%" PRIu64
           ",\"connects\":%" PRIu64 ",\"connected\":%d,\"final\":%s}\n",
           wall_now(), bench_now() - t0, (int)getpid(), seq, cs.events, cs.sent, cs.dropped,
           cs.bytes, cs.connects, cs.connected, final ? "true" : "false");
    fflush(stdout);
}

static int soak_produce(const char *sock, const char *capture, uint64_t rate, uint64_t ring)
{
    struct trove_client_options co;
    double t0, next_print;
    uint64_t pairs = 0, seq = 0;
    int rc;

    memset(&co, 0, sizeof co);
    co.socket_path = sock;
    co.capture = capture;
    co.ring_events = (size_t)ring;
    if ((rc = trove_client_start(&co)) != 0)
        return cli_error("bench soak", "produce: trove_client_start: %s", strerror(-rc));
    trove_client_thread_name("soak producer");
    t0 = bench_now();
    next_print = t0 + 0.5;
    while (!stop_asked) {
        double now = bench_now();
        /* Two events a seq: the counter and the zone. A late wake-up catches up. */
        uint64_t due = (uint64_t)((now - t0) * (double)rate / 2);
        for (; pairs < due; pairs++) {
            TROVE_COUNTER(SEQ_NAME, (double)++seq);
            TROVE_ZONE_BEGIN(ZONE_NAME);
            TROVE_ZONE_END();
        }
        if (now >= next_print) {
            print_stats(seq, t0, 0);
            next_print += 0.5;
        }
        sleep_us(200);
    }
    trove_client_stop(); /* every ring to the service, if one is connected */
    print_stats(seq, t0, 1);
    return 0;
}

/* ---- view ------------------------------------------------------------------------------- */

struct session {
    struct tracker tr;
    struct trove_wire_decoder *dec;
    struct trove_names *names;
    struct trove_event *ev;
    double deadline;
    uint64_t frames, bytes, gap_msgs, gap_events, end_events;
    int hello, ended, error;
};

static int s_text(void *ctx, const char *json, size_t len)
{
    struct session *s = ctx;
    const char *p;
    (void)len;
    if (strstr(json, "\"type\":\"hello\""))
        s->hello = 1;
    if (strstr(json, "\"type\":\"gap\"")) {
        s->gap_msgs++;
        if ((p = strstr(json, "\"events\":")))
            s->gap_events += strtoull(p + 9, NULL, 10);
    }
    if (strstr(json, "\"type\":\"end\"")) {
        s->ended = 1;
        if ((p = strstr(json, "\"events\":")))
            s->end_events = strtoull(p + 9, NULL, 10);
    }
    if (strstr(json, "\"type\":\"error\""))
        s->error = 1;
    return 0;
}

static int s_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct session *s = ctx;
    struct trove_wire_frame fr;
    if (trove_wire_decode(s->dec, frame, len, s->ev, TROVE_WIRE_MAX_EVENTS, s->names, &fr, NULL) !=
        TROVE_OK) {
        s->error = 1;
        return 1;
    }
    s->frames++;
    s->bytes += len;
    if (fr.format == TROVE_WIRE_NAMES)
        memset(s->tr.cls, 0, sizeof s->tr.cls); /* a name may have changed */
    else
        track(&s->tr, s->names, s->ev, fr.n_events);
    return s->tr.failed;
}

static int s_tick(void *ctx)
{
    struct session *s = ctx;
    return stop_asked || bench_now() >= s->deadline;
}

static int soak_view(const char *url, const char *capture, uint64_t session_ms,
                     uint64_t from_start_every, const char *wires)
{
    int wire_list[8], nwires = 0;
    char buf[64];
    const char *p = wires;
    struct trove_event *ev = calloc(TROVE_WIRE_MAX_EVENTS, sizeof *ev);

    if (!ev)
        return cli_error("bench soak", "view: out of memory");
    while (*p && nwires < 8) {
        size_t n = strcspn(p, ",");
        int w;
        snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), p);
        if (!strcmp(buf, "auto"))
            w = 0;
        else if ((w = trove_wire_format_parse(buf)) < 0 || w == TROVE_WIRE_NAMES) {
            free(ev);
            return cli_error("bench soak", "view: --wires: '%s' is not raw, packed, deflate or "
                                           "auto", buf);
        }
        wire_list[nwires++] = w;
        p += n + (p[n] == ',');
    }
    if (!nwires) {
        free(ev);
        return cli_error("bench soak", "view: --wires names no format");
    }
    for (uint64_t i = 0; !stop_asked; i++) {
        struct trove_live_view_options vo;
        struct trove_diag diag = {0};
        struct session s;
        double t0 = wall_now(), m0 = bench_now();
        int close_code = 0, rc;

        memset(&s, 0, sizeof s);
        s.ev = ev;
        s.deadline = m0 + (double)session_ms / 1000.0;
        if (trove_wire_decoder_new(&s.dec) != TROVE_OK || trove_names_new(&s.names) != TROVE_OK) {
            free(ev);
            return cli_error("bench soak", "view: out of memory");
        }
        memset(&vo, 0, sizeof vo);
        vo.url = url;
        vo.capture = capture;
        vo.wire = wire_list[i % (uint64_t)nwires];
        vo.from_start = from_start_every && i % from_start_every == from_start_every - 1;
        vo.on_text = s_text;
        vo.on_frame = s_frame;
        vo.on_tick = s_tick;
        vo.ctx = &s;
        rc = trove_live_view(&vo, &close_code, &diag);
        printf("{\"session\":%" PRIu64 ",\"t0\":%.3f,\"t1\":%.3f,\"wire\":\"%s\",\"from\":\"%s\","
               "\"rc\":%d,\"diag\":\"",
               i, t0, wall_now(), vo.wire ? trove_wire_format_name(vo.wire) : "auto",
               vo.from_start ? "start" : "now", rc);
        for (const char *d = diag.msg; *d; d++) /* JSON-safe: the few characters that need it */
            putchar(*d == '"' || *d == '\\' || (unsigned char)*d < 0x20 ? '\'' : *d);
        printf("\",\"hello\":%d,\"frames\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"events\":%" PRIu64
               ",\"gap_msgs\":%" PRIu64 ",\"gap_events\":%" PRIu64 ",\"ended\":%d,"
               "\"end_events\":%" PRIu64 ",\"error\":%d,\"close\":%d,",
               s.hello, s.frames, s.bytes, s.tr.events, s.gap_msgs, s.gap_events, s.ended,
               s.end_events, s.error || s.tr.failed, close_code);
        print_pids(stdout, &s.tr);
        printf("}\n");
        fflush(stdout);
        tracker_free(&s.tr);
        trove_wire_decoder_free(s.dec);
        trove_names_free(s.names);
        /* The service is away (killed, restarting): try again shortly, not in a busy loop. */
        if (rc != TROVE_OK && !stop_asked && bench_now() - m0 < 0.2)
            sleep_us(200000);
    }
    free(ev);
    return 0;
}

/* ---- check ------------------------------------------------------------------------------ */

struct check {
    struct tracker tr;
    struct trove_names *names;
    size_t names_seen;
};

static int check_frames(void *ctx, struct trove_events *ev)
{
    struct check *c = ctx;
    size_t n = trove_names_count(c->names);
    if (n != c->names_seen) { /* names arrived with this frame */
        memset(c->tr.cls, 0, sizeof c->tr.cls);
        c->names_seen = n;
    }
    track(&c->tr, c->names, ev->ev, ev->len);
    ev->len = 0;
    return c->tr.failed;
}

static int soak_check(const char *store, const char *capture)
{
    struct trove_events ev = {0};
    struct check c;
    int status;

    memset(&c, 0, sizeof c);
    if (trove_names_new(&c.names) != TROVE_OK)
        return cli_error("bench soak", "check: out of memory");
    {
        struct trove_diag diag = {0};
        int rc = trove_input_capture_walk(store, capture, 0, UINT64_MAX, NULL, &ev, c.names,
                                          check_frames, &c, &diag);
        status = rc != TROVE_OK && !c.tr.failed ? cli_error("bench soak", "%s", diag.msg) : 0;
    }
    if (c.tr.failed)
        status = cli_error("bench soak", "check: out of memory");
    if (!status) {
        printf("{\"capture\":\"%s\",\"events\":%" PRIu64 ",", capture, c.tr.events);
        print_pids(stdout, &c.tr);
        printf("}\n");
    }
    tracker_free(&c.tr);
    trove_events_free(&ev);
    trove_names_free(c.names);
    return status;
}

/* ---- the command -------------------------------------------------------------------------- */

int bench_soak(int argc, char **argv)
{
    const char *role = argc > 1 ? argv[1] : NULL;
    const char *sock = NULL, *capture = NULL, *url = NULL, *store = NULL;
    const char *wires = "raw,packed,deflate,auto";
    uint64_t rate = 250000, ring = 1u << 20, session_ms = 1000, from_start_every = 0;

    if (!role || cli_is_help(role)) {
        soak_usage(role ? stdout : stderr);
        return role ? 0 : 2;
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t *num = NULL;
        const char **str = NULL;
        if (cli_is_help(a)) {
            soak_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--socket"))
            str = &sock;
        else if (!strcmp(a, "--capture"))
            str = &capture;
        else if (!strcmp(a, "--url"))
            str = &url;
        else if (!strcmp(a, "--store"))
            str = &store;
        else if (!strcmp(a, "--wires"))
            str = &wires;
        else if (!strcmp(a, "--rate"))
            num = &rate;
        else if (!strcmp(a, "--ring"))
            num = &ring;
        else if (!strcmp(a, "--session-ms"))
            num = &session_ms;
        else if (!strcmp(a, "--from-start-every"))
            num = &from_start_every;
        else
            return cli_error("bench soak", "unknown option '%s'; see `trove bench soak --help`",
                             a) + 1;
        if (!v)
            return cli_error("bench soak", "%s needs a value", a) + 1;
        if (str)
            *str = v;
        else if (cli_parse_u64(v, num))
            return cli_error("bench soak", "%s needs a number, not '%s'", a, v) + 1;
        i++;
    }
    catch_stop();
    if (!strcmp(role, "produce")) {
        if (!sock || !capture || rate < 2 || ring < 1024 || ring > (1u << 26))
            return cli_error("bench soak", "produce needs --socket and --capture, --rate >= 2, "
                                           "--ring 1024..64M") + 1;
        return soak_produce(sock, capture, rate, ring);
    }
    if (!strcmp(role, "view")) {
        if (!url || !capture || session_ms < 10)
            return cli_error("bench soak", "view needs --url and --capture, --session-ms >= 10") +
                   1;
        return soak_view(url, capture, session_ms, from_start_every, wires);
    }
    if (!strcmp(role, "check")) {
        if (!store || !capture)
            return cli_error("bench soak", "check needs --store and --capture") + 1;
        return soak_check(store, capture);
    }
    return cli_error("bench soak", "'%s' is not produce, view or check; see `trove bench soak "
                                   "--help`", role) + 1;
}
