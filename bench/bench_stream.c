/*
 * bench_stream.c: `trove bench stream` — replaying a stored capture from a slow store
 * (seeds/002, issue 7): serial (no prefetch, no sender thread), prefetch, and prefetch plus
 * the sender thread, side by side in one run.
 *
 * The capture is `trove gen` data written with trove_capture_write into a scratch store,
 * --segments segments of --segment-mib MiB of 32-byte events each (the model's events
 * repeated, each repetition shifted past the last, so every segment is its own object).
 * Every get goes through the fault-injecting backend with --latency-ms of latency, as a
 * remote object store would add. A replay is trove_capture_replay in raw frames: the walker
 * decodes each stored frame (inflating and unpacking packed+deflate, or reading format 5's
 * columns: --segment-format), and the sink does what a
 * viewer's connection does: encodes the batch in the link's wire format (--send; packed by
 * default, which costs about what the decode does) and writes it to a socket, which a
 * reader thread drains (send). A calibration pass, one serial replay with no latency, says
 * how the two compare: send is the time spent inside the sink (timed there, batch by
 * batch), decode is the rest of that replay's wall time (reading the local store, inflating,
 * unpacking). Both are parts of one measured interval, so neither can come out negative, as
 * the difference of two separately timed replays could on a noisy machine. The calibration
 * runs, round by round, over the same events stored three times, once in each segment format
 * (deflate, columnar, columnar_deflate, model), so their sizes and decode times compare in one
 * run;
 * the modes replay the --segment-format one. Each mode runs
 * --rounds times; the table shows medians. Every replay must deliver every event (else the bench fails), and the peak of the
 * prefetcher's held bytes is checked against the budget in every run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"
#include "trove/gen.h"
#include "trove/capture.h"
#include "trove/backend.h"
#include "trove/stream.h"
#include "trove/testing.h"
#include "trove/wire.h"

#define CMD "bench stream"
/* The bench's prefetch depth: enough downloads in flight at its default 20 ms that they
 * outpace the walker, so prefetch and prefetch+sender compare decode and send rather than
 * both waiting on the store (docs/BENCHMARKS.md measures the library's depth 4 too). */
#define BENCH_STREAM_DEPTH 8u
#define BASE_EVENTS_MAX ((uint64_t)1 << 20)

enum { MODE_SERIAL, MODE_PREFETCH, MODE_SENDER, NMODES };
static const char *const mode_name[NMODES] = {"serial", "prefetch", "prefetch_sender"};

/* The sink: the --send wire to a socket whose other end a thread drains. */
struct bsink {
    struct trove_wire_encoder *enc;
    struct trove_bytes out;
    int fd;             /* our end */
    int wire;           /* what a batch is sent as: TROVE_WIRE_RAW, _PACKED or _DEFLATE */
    uint64_t events;
    double send_secs;   /* time spent in sink_send this replay: encoding and writing */
};

struct drain {
    int fd;
    uint64_t bytes;
};

static void *drain_main(void *arg)
{
    struct drain *d = arg;
    static uint8_t buf[1 << 16];
    ssize_t n;

    while ((n = read(d->fd, buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        d->bytes += (uint64_t)n;
    }
    return NULL;
}

/* A batch is whole raw frames (or the names frame, which is only counted): each is encoded
 * as k->wire, and the batch goes to the socket in one write. */
static int sink_send(void *ctx, const struct trove_stream_batch *b)
{
    struct bsink *k = ctx;
    struct trove_wire_header h;
    const uint8_t *p = b->data;
    size_t left;
    double t0 = bench_now();
    int rc = TROVE_OK;

    k->out.len = 0;
    for (size_t at = 0; at < b->len; at += TROVE_WIRE_HEADER_SIZE + h.payload_len) {
        if ((rc = trove_wire_parse_header(p + at, b->len - at, &h, NULL)) != TROVE_OK)
            goto out;
        if (h.format != TROVE_WIRE_RAW) /* the names frame */
            continue;
        k->events += h.count;
        rc = trove_wire_encode(k->enc, k->wire,
                               (const struct trove_event *)(p + at + TROVE_WIRE_HEADER_SIZE),
                               h.count, &k->out);
        if (rc != TROVE_OK)
            goto out;
    }
    for (p = k->out.ptr, left = k->out.len; left > 0;) {
        ssize_t n = write(k->fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            goto out;
        }
        p += n;
        left -= (size_t)n;
    }
out:
    k->send_secs += bench_now() - t0;
    return rc;
}

/* Events for `segments` segments of seg_events each: the model's, repeated and shifted. */
static int make_events(uint64_t seed, uint64_t total, struct trove_events *ev,
                       struct trove_names *names)
{
    struct trove_gen_options go;
    uint64_t base_n, span;
    int rc;

    trove_gen_defaults(&go);
    go.seed = seed;
    go.events = total < BASE_EVENTS_MAX ? total : BASE_EVENTS_MAX;
    if ((rc = trove_gen(&go, ev, names)) != TROVE_OK)
        return rc;
    base_n = ev->len;
    if (base_n == 0)
        return TROVE_ERR_INVALID;
    span = 0;
    for (uint64_t i = 0; i < base_n; i++) {
        uint64_t end = ev->ev[i].start_ns + ev->ev[i].dur_ns;
        if (end > span)
            span = end;
    }
    span = span - ev->ev[0].start_ns + 1000000;
    if ((rc = trove_events_reserve(ev, (size_t)(total - base_n))) != TROVE_OK)
        return rc;
    for (uint64_t i = base_n; i < total; i++) {
        struct trove_event e = ev->ev[i % base_n];
        e.start_ns += (i / base_n) * span;
        ev->ev[ev->len++] = e;
    }
    return TROVE_OK;
}

/* The segment formats, side by side: each stored as its own capture of the same events. */
#define NFORMATS 4
static const int fmt_wire[NFORMATS] = {TROVE_WIRE_DEFLATE, TROVE_WIRE_COLUMNAR,
                                       TROVE_WIRE_COLUMNAR_DEFLATE, TROVE_WIRE_MODEL};
static const char *const fmt_key[NFORMATS] = {"deflate", "columnar", "columnar_deflate", "model"};
static const char *const fmt_capture[NFORMATS] = {"bench", "bench-columnar",
                                                  "bench-columnar-deflate", "bench-model"};

struct fmt_result {
    uint64_t stored_bytes;
    double dec[64], send[64]; /* per round: the calibration replay's two parts */
    double dec_med, send_med;
};

static int fmt_index(int wire)
{
    for (int f = 0; f < NFORMATS; f++)
        if (fmt_wire[f] == wire)
            return f;
    return -1;
}

struct run_result {
    double secs;
    struct trove_stream_stats stats;
};

/* One replay of the capture through a stream over be. 0, or nonzero after an error. */
static int replay_once(struct trove_store *s, const char *name, struct trove_backend *be,
                       const struct trove_stream_options *opt, struct bsink *k,
                       uint64_t want_events, struct run_result *res)
{
    struct trove_capture_replay_options ro = {.to_ns = UINT64_MAX, .wire = TROVE_WIRE_RAW};
    struct trove_stream_sink sink = {sink_send, NULL, k};
    struct trove_stream *st = NULL;
    struct trove_diag diag = {0};
    double t0;
    int rc;

    k->events = 0;
    k->send_secs = 0;
    if ((rc = trove_stream_new(be, opt, &st)) != TROVE_OK)
        return cli_error(CMD, "cannot make a stream: %s", trove_strerror(rc));
    t0 = bench_now();
    rc = trove_capture_replay(s, name, st, &ro, &sink, &res->stats, &diag);
    res->secs = bench_now() - t0;
    trove_stream_free(st);
    if (rc != TROVE_OK)
        return cli_error(CMD, "replay failed: %s", cli_diag_msg(&diag, rc));
    if (k->events != want_events)
        return cli_error(CMD, "replay delivered %llu events, not %llu",
                         (unsigned long long)k->events, (unsigned long long)want_events);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trove bench stream [--segments N] [--latency-ms L] [--segment-mib S]\n"
            "                          [--depth D] [--budget SIZE] [--rounds R] [--seed N]\n"
            "                          [--send raw|packed|deflate] [--segment-format F]\n"
            "                          [--input IN [--input-format F]] [--common]\n"
            "                          [--dir DIR | --store STORE] [--json]\n"
            "\n"
            "Replay a stored capture of N segments of S MiB of events each from a store that\n"
            "adds L ms to every read: serial (no prefetch, no sender thread), with prefetch, and\n"
            "with prefetch and the sender thread. Prints each mode's median wall time over R\n"
            "rounds, its throughput against serial, and the prefetcher's peak held bytes\n"
            "against its budget. A calibration pass, one serial replay without latency, splits\n"
            "its time per segment into send (re-encoding and the socket write, timed inside the\n"
            "sink) and decode (the rest: reading the store, inflating and unpacking); it runs\n"
            "for the same events stored in each segment format (deflate, columnar,\n"
            "columnar_deflate, model), side by side, with the bytes each stores.\n"
            "  --segments N     segments in the capture (default 64)\n"
            "  --latency-ms L   latency added to every object read (default 20)\n"
            "  --segment-mib S  MiB of 32-byte events per segment, 1..8 (default 2)\n"
            "  --segment-format F  the stored segments the three modes replay: deflate\n"
            "                   (default), columnar, columnar_deflate or model\n"
            "  --depth D        prefetch depth (default %u; the library's is %u, at which four\n"
            "                   downloads of 20 ms bring a segment every 5 ms, no faster than\n"
            "                   decode and send together, so the downloads would bound both\n"
            "                   prefetch modes and hide what the sender thread overlaps)\n"
            "  --budget SIZE    prefetch budget in bytes, K/M/G suffixes (default 64M)\n"
            "  --rounds R       runs of each mode (default 5)\n"
            "  --seed N         trove gen seed (default 1)\n"
            "  --input IN       the events of IN (any input `trove cat` reads) instead of gen\n"
            "                   data; --segments is then what they fill\n"
            "  --input-format F auto (default), chrome-json, wire, bundle, parquet, dir,\n"
            "                   capture\n"
            "  --common         only the content every trace tool keeps alike (as `trove bench\n"
            "                   wire --common`)\n"
            "  --send W         the wire each batch is re-encoded in and written to the socket\n"
            "                   as: raw, packed (default: then decode and send cost about the\n"
            "                   same) or deflate (send costs about three times decode)\n"
            "  --dir DIR        where the scratch store goes (default $TMPDIR or /tmp)\n"
            "  --store STORE    write the capture (named bench, removed at the end) to this\n"
            "                   store instead, e.g. s3://BUCKET/PREFIX (docs/s3.md); the\n"
            "                   latency is then added to the S3 requests' own\n"
            "  --json           one JSON object: segments, latency_ms, segment_format,\n"
            "                   serial_s, prefetch_s, prefetch_sender_s, peak_held_bytes,\n"
            "                   budget_bytes, formats (each format's stored_bytes, decode_ms\n"
            "                   and send_ms per segment)\n",
            BENCH_STREAM_DEPTH, TROVE_STREAM_DEPTH_DEFAULT);
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    int shift = 0;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    else if (*end)
        return -1;
    if (shift && end[1])
        return -1;
    if (v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

int bench_stream(int argc, char **argv)
{
    uint64_t segments = 64, latency = 20, seg_mib = 2, depth = BENCH_STREAM_DEPTH;
    uint64_t budget = TROVE_STREAM_BUDGET_DEFAULT, rounds = 5, seed = 1, peak = 0;
    const char *dir = NULL, *store_url = NULL; /* --store: an existing store (s3://...) */
    char base[4096];
    int send_wire = TROVE_WIRE_PACKED, seg_format = TROVE_WIRE_DEFLATE;
    struct fmt_result fr[NFORMATS];
    const struct fmt_result *mine = NULL;
    int json = 0, status = 1, have_dir = 0, sv[2] = {-1, -1}, drain_started = 0;
    struct trove_store *s = NULL;
    struct trove_backend *slow = NULL;
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_capture_info ci;
    struct trove_capture_options co = {0};
    struct trove_diag diag = {0};
    struct bsink k = {0};
    struct drain dr = {0};
    pthread_t drain_thread;
    double t[NMODES][64], med[NMODES], cal_dec = 0, cal_send = 0;
    struct trove_fault_options fo = {0};
    struct bench_source src;
    int rc, written = 0;

    bench_source_init(&src);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t *dst = NULL;
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(a, "--input") || !strcmp(a, "--input-format") || !strcmp(a, "--common")) {
            if (bench_source_arg(CMD, &src, argc, argv, &i) < 0)
                return 2;
            continue;
        }
        if (i + 1 >= argc)
            return cli_error(CMD, "'%s' is not an option or needs a value; see `trove %s --help`",
                             a, CMD);
        if (!strcmp(a, "--segments"))
            dst = &segments;
        else if (!strcmp(a, "--latency-ms"))
            dst = &latency;
        else if (!strcmp(a, "--segment-mib"))
            dst = &seg_mib;
        else if (!strcmp(a, "--depth"))
            dst = &depth;
        else if (!strcmp(a, "--rounds"))
            dst = &rounds;
        else if (!strcmp(a, "--seed"))
            dst = &seed;
        if (dst) {
            if (cli_parse_u64(argv[++i], dst))
                return cli_error(CMD, "%s: '%s' is not an unsigned integer", a, argv[i]);
        } else if (!strcmp(a, "--budget")) {
            if (parse_size(argv[++i], &budget))
                return cli_error(CMD, "--budget: '%s' is not a size", argv[i]);
        } else if (!strcmp(a, "--send")) {
            send_wire = trove_wire_format_parse(argv[++i]);
            if (send_wire != TROVE_WIRE_RAW && send_wire != TROVE_WIRE_PACKED &&
                send_wire != TROVE_WIRE_DEFLATE)
                return cli_error(CMD, "--send: '%s' is not raw, packed or deflate", argv[i]);
        } else if (!strcmp(a, "--segment-format")) {
            seg_format = trove_wire_format_parse(argv[++i]);
            if (fmt_index(seg_format) < 0)
                return cli_error(CMD, "--segment-format: '%s' is not deflate, columnar, "
                                      "columnar_deflate or model", argv[i]);
        } else if (!strcmp(a, "--dir")) {
            dir = argv[++i];
            have_dir = 1;
        } else if (!strcmp(a, "--store")) {
            store_url = argv[++i];
        } else {
            return cli_error(CMD, "'%s' is not an option; see `trove %s --help`", a, CMD);
        }
    }
    if (segments < 1 || segments > 4096)
        return cli_error(CMD, "--segments must be 1..4096");
    if (seg_mib < 1 || seg_mib > (TROVE_CAPTURE_MAX_SEGMENT_BYTES >> 20))
        return cli_error(CMD, "--segment-mib must be 1..%llu (a capture's largest segment)",
                         (unsigned long long)(TROVE_CAPTURE_MAX_SEGMENT_BYTES >> 20));
    if (latency > 10000)
        return cli_error(CMD, "--latency-ms must be at most 10000");
    if (rounds < 1 || rounds > 64)
        return cli_error(CMD, "--rounds must be 1..64");
    if (depth > TROVE_STREAM_DEPTH_MAX)
        return cli_error(CMD, "--depth must be at most %u", TROVE_STREAM_DEPTH_MAX);
    if (!have_dir)
        dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if ((size_t)snprintf(base, sizeof base, "%s/trove-bench-stream.XXXXXX", dir) >= sizeof base)
        return cli_error(CMD, "--dir: '%s' is too long", dir);
    if (!mkdtemp(base))
        return cli_error(CMD, "cannot create a directory under %s: %s", dir, strerror(errno));

    /* The capture. */
    co.segment_bytes = seg_mib << 20;
    if ((rc = trove_names_new(&names)) != TROVE_OK) {
        cli_error(CMD, "out of memory");
        goto out;
    }
    if (src.input) {
        char desc[4200];
        if (bench_source_load(CMD, &src, json, &ev, names, desc, sizeof desc) != 0)
            goto out;
        segments = (ev.len + co.segment_bytes / TROVE_EVENT_SIZE - 1) /
                   (co.segment_bytes / TROVE_EVENT_SIZE);
    } else if ((rc = make_events(seed, segments * (co.segment_bytes / TROVE_EVENT_SIZE), &ev,
                                 names))) {
        cli_error(CMD, "generating events: %s", trove_strerror(rc));
        goto out;
    } else if (src.common) {
        bench_common(&ev);
        segments = (ev.len + co.segment_bytes / TROVE_EVENT_SIZE - 1) /
                   (co.segment_bytes / TROVE_EVENT_SIZE);
    }
    if ((rc = trove_store_open(store_url ? store_url : base, TROVE_STORE_CREATE | TROVE_STORE_NOSYNC,
                               &s, &diag))) {
        cli_error(CMD, "opening %s: %s", store_url ? store_url : base, cli_diag_msg(&diag, rc));
        goto out;
    }
    memset(fr, 0, sizeof fr);
    for (int f = 0; f < NFORMATS; f++) {
        co.segment_format = fmt_wire[f];
        if ((rc = trove_capture_write(s, fmt_capture[f], ev.ev, ev.len, names, &co, &ci, &diag))) {
            cli_error(CMD, "writing the capture to %s: %s", store_url ? store_url : base,
                      cli_diag_msg(&diag, rc));
            goto out;
        }
        written = f + 1;
        if (ci.segments != segments) {
            cli_error(CMD, "the capture has %llu segments, not %llu",
                      (unsigned long long)ci.segments, (unsigned long long)segments);
            goto out;
        }
        fr[f].stored_bytes = ci.stored_bytes;
    }
    mine = &fr[fmt_index(seg_format)];
    if ((rc = trove_wire_encoder_new(&k.enc)) != TROVE_OK ||
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        cli_error(CMD, "setting up the sink: %s", rc ? trove_strerror(rc) : strerror(errno));
        goto out;
    }
    k.fd = sv[0];
    k.wire = send_wire;
    dr.fd = sv[1];
    if (pthread_create(&drain_thread, NULL, drain_main, &dr) != 0) {
        cli_error(CMD, "cannot start the socket reader");
        goto out;
    }
    drain_started = 1;

    /* Calibration: one serial replay with no latency of each format's capture, its sink
     * called inline, the formats taking turns over the rounds; medians. The sink's own time
     * is send; the rest of the wall time, which contains it, is decode. */
    for (uint64_t round = 0; round < rounds; round++) {
        for (int f = 0; f < NFORMATS; f++) {
            struct trove_stream_options opt;
            struct run_result r;
            trove_stream_options_default(&opt);
            opt.depth = TROVE_STREAM_NO_PREFETCH;
            opt.send_mode = TROVE_STREAM_SEND_INLINE;
            if (replay_once(s, fmt_capture[f], trove_store_backend(s), &opt, &k, ev.len, &r))
                goto out;
            fr[f].send[round] = k.send_secs;
            fr[f].dec[round] = r.secs > k.send_secs ? r.secs - k.send_secs : 0;
        }
    }
    for (int f = 0; f < NFORMATS; f++) {
        fr[f].dec_med = bench_median(fr[f].dec, (unsigned)rounds);
        fr[f].send_med = bench_median(fr[f].send, (unsigned)rounds);
    }
    cal_dec = mine->dec_med;
    cal_send = mine->send_med;

    fo.latency_us = (uint32_t)(latency * 1000);
    if ((rc = trove_backend_fault_wrap(trove_store_backend(s), &fo, &slow)) != TROVE_OK) {
        cli_error(CMD, "wrapping the backend: %s", trove_strerror(rc));
        goto out;
    }
    for (uint64_t round = 0; round < rounds; round++) {
        for (int m = 0; m < NMODES; m++) {
            struct trove_stream_options opt;
            struct run_result r;
            trove_stream_options_default(&opt);
            opt.depth = m == MODE_SERIAL ? TROVE_STREAM_NO_PREFETCH : (uint32_t)depth;
            opt.budget = budget;
            opt.send_mode = m == MODE_SENDER ? TROVE_STREAM_SEND_RENDEZVOUS
                                             : TROVE_STREAM_SEND_INLINE;
            if (replay_once(s, fmt_capture[fmt_index(seg_format)], slow, &opt, &k, ev.len, &r))
                goto out;
            t[m][round] = r.secs;
            if (r.stats.peak_held_bytes > peak)
                peak = r.stats.peak_held_bytes;
            if (r.stats.peak_held_bytes > budget) {
                cli_error(CMD, "%s held %llu bytes, over the budget of %llu", mode_name[m],
                          (unsigned long long)r.stats.peak_held_bytes,
                          (unsigned long long)budget);
                goto out;
            }
        }
    }
    for (int m = 0; m < NMODES; m++)
        med[m] = bench_median(t[m], (unsigned)rounds);

    if (json) {
        printf("{\"segments\":%llu,\"latency_ms\":%llu,\"segment_format\":\"%s\","
               "\"serial_s\":%.6f,\"prefetch_s\":%.6f,\"prefetch_sender_s\":%.6f,"
               "\"peak_held_bytes\":%llu,\"budget_bytes\":%llu,\"formats\":{",
               (unsigned long long)segments, (unsigned long long)latency,
               fmt_key[fmt_index(seg_format)], med[MODE_SERIAL], med[MODE_PREFETCH],
               med[MODE_SENDER], (unsigned long long)peak, (unsigned long long)budget);
        for (int f = 0; f < NFORMATS; f++)
            printf("%s\"%s\":{\"stored_bytes\":%llu,\"decode_ms\":%.4f,\"send_ms\":%.4f}",
                   f ? "," : "", fmt_key[f], (unsigned long long)fr[f].stored_bytes,
                   fr[f].dec_med * 1e3 / (double)segments, fr[f].send_med * 1e3 / (double)segments);
        printf("}}\n");
    } else {
        printf("trove bench stream: %llu segments of %llu MiB of events (%zu events, %.1f MiB "
               "stored as %s), %llu ms latency per read, depth %llu, budget %llu bytes; %s%llu "
               "%s\n",
               (unsigned long long)segments, (unsigned long long)seg_mib, ev.len,
               (double)mine->stored_bytes / (1 << 20), fmt_key[fmt_index(seg_format)],
               (unsigned long long)latency,
               (unsigned long long)depth, (unsigned long long)budget,
               rounds > 1 ? "medians of " : "", (unsigned long long)rounds,
               rounds > 1 ? "rounds" : "round");
        printf("per segment without latency (a serial replay, its time in two parts):\n"
               "  decode %6.2f ms   reading the store, inflating and unpacking: the time outside "
               "the sink\n"
               "  send   %6.2f ms   re-encoding as %s and writing to the socket: the time inside "
               "the sink\n\n",
               cal_dec * 1e3 / (double)segments, cal_send * 1e3 / (double)segments,
               trove_wire_format_name(send_wire));
        printf("the same events in each segment format (serial, no latency, %s%llu %s):\n"
               "| segment format | stored MiB | bytes per event | size vs deflate | decode ms "
               "per segment | decode vs deflate |\n|---|---:|---:|---:|---:|---:|\n",
               rounds > 1 ? "medians of " : "", (unsigned long long)rounds,
               rounds > 1 ? "rounds" : "round");
        for (int f = 0; f < NFORMATS; f++)
            printf("| %s | %.2f | %.3f | %.3f | %.2f | %.2fx |\n", fmt_key[f],
                   (double)fr[f].stored_bytes / (1 << 20),
                   (double)fr[f].stored_bytes / (double)ev.len,
                   (double)fr[f].stored_bytes / (double)fr[0].stored_bytes,
                   fr[f].dec_med * 1e3 / (double)segments,
                   fr[f].dec_med > 0 ? fr[0].dec_med / fr[f].dec_med : 0);
        printf("\n");
        printf("| mode | wall time s | ms per segment | throughput vs serial |\n"
               "|---|---:|---:|---:|\n");
        for (int m = 0; m < NMODES; m++)
            printf("| %s | %.3f | %.2f | %.2fx |\n", mode_name[m], med[m],
                   med[m] * 1e3 / (double)segments, med[MODE_SERIAL] / med[m]);
        printf("\nprefetch+sender vs prefetch: %.2fx; peak held bytes %llu of a budget of %llu\n",
               med[MODE_PREFETCH] / med[MODE_SENDER], (unsigned long long)peak,
               (unsigned long long)budget);
    }
    status = fflush(stdout) != 0;
out:
    if (sv[0] >= 0)
        close(sv[0]); /* the reader sees the end */
    if (drain_started)
        pthread_join(drain_thread, NULL);
    if (sv[1] >= 0)
        close(sv[1]);
    trove_backend_close(slow);
    trove_wire_encoder_free(k.enc);
    trove_bytes_free(&k.out);
    for (int f = 0; store_url && s && f < written; f++) /* the captures go; gc takes their
                                                            objects */
        trove_volume_remove(s, fmt_capture[f], NULL);
    cli_store_close(s);
    trove_events_free(&ev);
    trove_names_free(names);
    bench_remove_tree(base);
    return status;
}
