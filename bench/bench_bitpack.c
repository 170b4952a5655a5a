/*
 * bench_bitpack.c: `trove bench bitpack` — the seed's kernel table (seeds/004, "Measured
 * kernel throughput"), measured in one run next to its peers: FastLanes pack and unpack
 * (trove_bitpack_pack/unpack) at every width 1..32, on a large array (default 26,214,400
 * values, the seed's slot count at 50 TiB) and on a cache-resident one (default 1,048,576
 * values, 4 MiB of uint32), each against a memcpy of the same bytes in the same run; a
 * naive sequential bit-buffer packer at widths 10 and 25; and Stream VByte on the width-25
 * values.
 *
 * Input. For width w, values are splitmix64 outputs (seeded with w) shifted down to w bits:
 * uniform in [0, 2^w), the full uint32 range at w = 32. Base is 0 (the kernels fuse frame
 * of reference; with base 0 they do no extra work). The cache-resident size uses the same
 * sequence's prefix, in the same buffers.
 *
 * A pass is the whole array, block by block: one trove_bitpack_pack (or _unpack) call per
 * 1024 values, block b's w * 32 packed words at packed + b * w * 32, contiguous. Its time
 * is clock_gettime(CLOCK_MONOTONIC) around the calls only. Rates are values per second (the
 * table's G values/s) and bytes per second counting 4 bytes per value: the input of a pack,
 * the output of an unpack, and the bytes a memcpy copies (the unpack's output size, from
 * the input array into the unpack's output buffer). So pack/memcpy and unpack/memcpy are
 * bandwidth ratios over the same uint32 bytes; above 1 means faster than copying them.
 *
 * Unpack is measured two ways: trove_bitpack_unpack per 1024-value block (the table's
 * unpack columns), and trove_bitpack_unpack_blocks over the whole array in one call, which
 * streams large outputs (8 MiB and up) with non-temporal stores as memcpy does (the
 * unpack_blocks columns). The JSON's unpack_gvps is the second: it is how trove unpacks an
 * array of blocks. Both unpack what the same round's pack wrote and are verified alike.
 *
 * Peers, at the large size (the seed's setting), plus the naive packer at every width at
 * the cache-resident size, for the kernel / naive ratio at every width:
 *   naive         a 64-bit accumulator that appends w bits per value (w a run-time
 *                 argument, as a generic packer has it) and flushes 32-bit words; its
 *                 unpacker refills 32 bits at a time and masks. Called per 1024-value block
 *                 like the kernel, with the same packed size (a block ends on a word).
 *   streamvbyte   streamvbyte_encode/decode (libstreamvbyte) over the whole array at once,
 *                 on the w = 25 values (about 3.75 bytes per value: a byte codec cannot
 *                 go below whole bytes, nor use a frame of reference). This is the library
 *                 trove links, as its distribution built it. Debian's libstreamvbyte0
 *                 0.4.1-4 is built for baseline x86-64 without optimization (no SIMD path,
 *                 -O0 code), so its row shows that build, not what Stream VByte's SIMD
 *                 codec does; the table says so.
 *
 * Method. Each (size, width) runs rounds; a round runs, in turn, a memcpy, a kernel pack
 * then an unpack and an unpack_blocks of what it just packed, and at w = 10 and 25 the
 * naive pair and at 25 the Stream VByte pair. Interleaving them spreads a burst of noise on
 * a shared machine over all of them alike, which keeps the ratios honest. Round 0 is a
 * warm-up and is not counted. Every unpack, decode and memcpy writes into a buffer poisoned
 * beforehand (outside the timed region), so all of them find their destination in the same
 * state; every unpack and decode pass (and memcpy's warm-up) is compared with the input
 * afterwards (memcmp, also outside it); a mismatch names the codec, size and width and
 * fails the run. Without --repeat, each measurement takes passes until it has at least 3
 * and 0.1 s of timed work, or 25 (an encoder still runs, untimed, while a decoder of its
 * output wants passes). A measurement is the median of its passes; the memcpy of a size is
 * the median of every memcpy pass at that size, taken the same way at each width. All
 * buffers are allocated with 64-byte alignment (unpack_blocks streams only into 32-byte
 * aligned output) and written once before any timing, so no timed pass takes a page fault.
 * A default run takes 40 to 50 seconds on a 2-core VM.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"
#include "bench_peers.h" /* streamvbyte: with -DTROVE_BENCH_PEERS=ON only */
#include "cli.h"
#include "trove/bitpack.h"

#define MIN_PASSES 3
#define MAX_PASSES 25
#define PASS_BUDGET_S 0.1          /* per measurement */
#define WIDTHS 32
#define DEFAULT_VALUES 26214400ull /* the seed's 26,214,400 slots */
#define DEFAULT_CACHE_VALUES 1048576ull
#define MAX_VALUES (1ull << 28)    /* 1 GiB per array; three arrays and Stream VByte's */
#define BLOCK TROVE_BITPACK_BLOCK

enum { C_MEMCPY, C_KERNEL, C_NAIVE, C_SVB, C_COUNT };
enum { SIZE_LARGE, SIZE_CACHE, SIZE_COUNT };

struct bench {
    size_t n;          /* values in this size's arrays (a multiple of 1024) */
    unsigned w;        /* the width being measured */
    uint32_t *in;      /* n values below 2^w */
    uint32_t *packed;  /* n words: room for w = 32 */
    uint32_t *dec;     /* unpack, decode and memcpy output */
    uint8_t *svb;      /* Stream VByte bytes */
    size_t svb_cap, svb_len;
    char err[256];     /* why a pass failed */
};

/* One measurement: its pass times (seconds) and their median. */
struct meas {
    double *t;
    unsigned passes;
    double spent, median;
};

/* A codec's measurements at one width: memcpy has only dec; only the kernel has dec2. */
struct codec_meas {
    struct meas enc, dec, dec2;
};

struct results {
    size_t n[SIZE_COUNT];
    struct meas memcpy_all[SIZE_COUNT];      /* every memcpy pass of a size */
    struct codec_meas kernel[SIZE_COUNT][WIDTHS + 1];
    struct codec_meas naive[2];              /* w = 10, 25 */
    struct codec_meas naive_cache[WIDTHS + 1]; /* every width, at the cache-resident size */
    struct codec_meas svb;
    double svb_bytes_per_value;
};

static const unsigned naive_widths[2] = {10, 25};
#define SVB_WIDTH 25

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Values for width w (1..32): the top w bits of splitmix64 seeded with w. */
static void fill_values(uint32_t *v, size_t n, unsigned w)
{
    uint64_t s = w;
    for (size_t i = 0; i < n; i++)
        v[i] = (uint32_t)(splitmix64(&s) >> (64 - w));
}

/* ---- the codecs ------------------------------------------------------------------------ */

static void kernel_pack(struct bench *b)
{
    size_t stride = (size_t)b->w * 32;
    for (size_t k = 0; k < b->n / BLOCK; k++)
        trove_bitpack_pack(b->in + k * BLOCK, b->packed + k * stride, b->w, 0);
}

static void kernel_unpack(struct bench *b)
{
    size_t stride = (size_t)b->w * 32;
    for (size_t k = 0; k < b->n / BLOCK; k++)
        trove_bitpack_unpack(b->packed + k * stride, b->dec + k * BLOCK, b->w, 0);
}

/* Append w bits per value to a 64-bit accumulator; flush whole 32-bit words. in[i] < 2^w.
 * Writes ceil(n * w / 32) words. */
static void naive_pack_block(const uint32_t *in, uint32_t *out, size_t n, unsigned w)
{
    uint64_t acc = 0;
    unsigned bits = 0; /* < 32 between values, so acc never holds more than 63 bits */
    for (size_t i = 0; i < n; i++) {
        acc |= (uint64_t)in[i] << bits;
        bits += w;
        if (bits >= 32) {
            *out++ = (uint32_t)acc;
            acc >>= 32;
            bits -= 32;
        }
    }
    if (bits)
        *out = (uint32_t)acc;
}

/* The inverse: refill 32 bits whenever fewer than w are buffered, take the low w. */
static void naive_unpack_block(const uint32_t *in, uint32_t *out, size_t n, unsigned w)
{
    uint64_t acc = 0, mask = ((uint64_t)1 << w) - 1;
    unsigned bits = 0;
    for (size_t i = 0; i < n; i++) {
        if (bits < w) {
            acc |= (uint64_t)*in++ << bits;
            bits += 32;
        }
        out[i] = (uint32_t)(acc & mask);
        acc >>= w;
        bits -= w;
    }
}

static void kernel_unpack_blocks(struct bench *b)
{
    trove_bitpack_unpack_blocks(b->packed, b->dec, b->n / BLOCK, b->w, 0);
}

static void naive_pack(struct bench *b)
{
    size_t stride = (size_t)b->w * 32;
    for (size_t k = 0; k < b->n / BLOCK; k++)
        naive_pack_block(b->in + k * BLOCK, b->packed + k * stride, BLOCK, b->w);
}

static void naive_unpack(struct bench *b)
{
    size_t stride = (size_t)b->w * 32;
    for (size_t k = 0; k < b->n / BLOCK; k++)
        naive_unpack_block(b->packed + k * stride, b->dec + k * BLOCK, BLOCK, b->w);
}

#if TROVE_BENCH_PEERS
static void svb_encode(struct bench *b) { b->svb_len = streamvbyte_encode(b->in, (uint32_t)b->n, b->svb); }

static void svb_decode(struct bench *b)
{
    size_t used = streamvbyte_decode(b->svb, b->dec, (uint32_t)b->n);
    if (used != b->svb_len) /* checked after the clock stops, with the output */
        b->svb_len = SIZE_MAX;
}
#define SVB_ENC svb_encode
#define SVB_DEC svb_decode
#else
#define SVB_ENC NULL
#define SVB_DEC NULL
#endif

static void copy_values(struct bench *b) { memcpy(b->dec, b->in, b->n * sizeof *b->dec); }

static const struct codec {
    const char *name;
    const char *dec_name;
    void (*enc)(struct bench *);  /* NULL for memcpy */
    void (*dec)(struct bench *);
    void (*dec2)(struct bench *); /* a second decoder of the same encoding, or NULL */
} codecs[C_COUNT] = {
    {"memcpy", "copy", NULL, copy_values, NULL},
    {"kernel", "unpack", kernel_pack, kernel_unpack, kernel_unpack_blocks},
    {"naive", "unpack", naive_pack, naive_unpack, NULL},
    {"streamvbyte", "decode", SVB_ENC, SVB_DEC, NULL}, /* NULL: not in this build */
};

/* ---- timing ---------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void meas_finish(struct meas *m)
{
    qsort(m->t, m->passes, sizeof *m->t, cmp_double);
    m->median = m->passes % 2 ? m->t[m->passes / 2] : (m->t[m->passes / 2 - 1] + m->t[m->passes / 2]) / 2;
    if (m->median <= 0)
        m->median = 1e-9; /* a clock tick: keeps every rate finite */
}

/* Does a measurement with these passes want another? Fixed --repeat, or the time budget. */
static int more(unsigned passes, double spent, unsigned repeat)
{
    if (repeat)
        return passes < repeat;
    return passes < MIN_PASSES || (passes < MAX_PASSES && spent < PASS_BUDGET_S);
}

static int wants_more(const struct meas *m, unsigned repeat) { return more(m->passes, m->spent, repeat); }

static void record(struct meas *m, double t)
{
    if (m) {
        m->t[m->passes++] = t;
        m->spent += t;
    }
}

static int verify(struct bench *b, const char *what)
{
    if (memcmp(b->dec, b->in, b->n * sizeof *b->in) != 0) {
        size_t i = 0;
        while (i < b->n && b->dec[i] == b->in[i])
            i++;
        snprintf(b->err, sizeof b->err,
                 "%s at width %u over %zu values: value %zu is 0x%08x, want 0x%08x", what, b->w, b->n,
                 i, (unsigned)b->dec[i], (unsigned)b->in[i]);
        return -1;
    }
    return 0;
}

/* Poison the output, run one decoder, compare with the input (if check). Only the decoder
 * is timed. */
static int run_decoder(struct bench *b, void (*dec)(struct bench *), struct meas *m, const char *what,
                       int check)
{
    double t0, t1;

    memset(b->dec, 0xa5, b->n * sizeof *b->dec); /* a decoder that skips writes fails */
    t0 = bench_now();
    dec(b);
    t1 = bench_now();
    record(m, t1 - t0);
    if (b->svb_len == SIZE_MAX) {
        snprintf(b->err, sizeof b->err, "%s at width %u over %zu values: read a different byte count "
                 "than the encoder wrote", what, b->w, b->n);
        return -1;
    }
    return check ? verify(b, what) : 0;
}

/*
 * One round of codec c: encode (if it has one), then each decoder of what it encoded. m is
 * where the times go, or NULL in the warm-up round, which runs every decoder untimed.
 * Otherwise each measurement stops on its own: the encoder runs whenever any decoder still
 * needs its output, but only the measurements that want passes are timed and recorded.
 */
static int run_codec(struct bench *b, int c, struct codec_meas *m, unsigned repeat)
{
    const struct codec *cd = &codecs[c];
    char what[64];

    if (cd->enc) {
        double t0 = bench_now(), t1;
        cd->enc(b);
        t1 = bench_now();
        if (m && wants_more(&m->enc, repeat))
            record(&m->enc, t1 - t0);
    }
    snprintf(what, sizeof what, "%s %s", cd->name, cd->dec_name);
    if ((!m || wants_more(&m->dec, repeat)) && run_decoder(b, cd->dec, m ? &m->dec : NULL, what, 1) != 0)
        return -1;
    if (cd->dec2 && (!m || wants_more(&m->dec2, repeat))) {
        snprintf(what, sizeof what, "%s %s_blocks", cd->name, cd->dec_name);
        if (run_decoder(b, cd->dec2, m ? &m->dec2 : NULL, what, 1) != 0)
            return -1;
    }
    return 0;
}

/* Does codec c want another round? */
static int codec_wants_more(int c, const struct codec_meas *m, unsigned repeat)
{
    return wants_more(&m->enc, repeat) || wants_more(&m->dec, repeat) ||
           (codecs[c].dec2 && wants_more(&m->dec2, repeat));
}

/*
 * Measure width w at size s: which codecs take part, and where their times go. The round
 * loop runs every codec that still wants passes. memcpy keeps its own pass count and time
 * at each width, like any measurement, but records into the size's pool. The warm-up round
 * is round 0.
 */
static int run_width(struct bench *b, struct results *r, int s, unsigned repeat)
{
    struct codec_meas *cm[C_COUNT] = {NULL};
    struct meas *pool = &r->memcpy_all[s];
    unsigned mc_passes = 0;
    double mc_spent = 0;
    int want;

    cm[C_KERNEL] = &r->kernel[s][b->w];
    if (s != SIZE_LARGE)
        cm[C_NAIVE] = &r->naive_cache[b->w]; /* the kernel against it at every width */
    if (s == SIZE_LARGE) {
        for (int i = 0; i < 2; i++)
            if (b->w == naive_widths[i])
                cm[C_NAIVE] = &r->naive[i];
        if (b->w == SVB_WIDTH && TROVE_BENCH_PEERS)
            cm[C_SVB] = &r->svb;
    }
    for (int c = 0; c < C_COUNT; c++)
        if ((c == C_MEMCPY || cm[c]) && run_codec(b, c, NULL, repeat) != 0)
            return -1;
    if (cm[C_SVB])
        r->svb_bytes_per_value = (double)b->svb_len / (double)b->n;
    do {
        want = 0;
        if (more(mc_passes, mc_spent, repeat)) {
            double before = pool->spent;
            if (run_decoder(b, copy_values, pool, "memcpy copy", 0) != 0) /* checked in the warm-up */
                return -1;
            mc_passes++;
            mc_spent += pool->spent - before;
            want |= more(mc_passes, mc_spent, repeat);
        }
        for (int c = C_KERNEL; c < C_COUNT; c++) {
            if (!cm[c] || !codec_wants_more(c, cm[c], repeat))
                continue;
            if (run_codec(b, c, cm[c], repeat) != 0)
                return -1;
            want |= codec_wants_more(c, cm[c], repeat);
        }
    } while (want);
    for (int c = C_KERNEL; c < C_COUNT; c++)
        if (cm[c]) {
            meas_finish(&cm[c]->enc);
            meas_finish(&cm[c]->dec);
            if (codecs[c].dec2)
                meas_finish(&cm[c]->dec2);
        }
    return 0;
}

/* ---- setup ----------------------------------------------------------------------------- */

/* Room for every measurement's pass times, carved from one allocation. */
static double *alloc_times(struct results *r, unsigned per)
{
    size_t count = 0, k = 0;
    double *t;
    struct meas *all[SIZE_COUNT * 3 * WIDTHS + 2 * WIDTHS + 2 * 2 + 2];
    size_t na = 0;

    for (int s = 0; s < SIZE_COUNT; s++) {
        for (unsigned w = 1; w <= WIDTHS; w++) {
            all[na++] = &r->kernel[s][w].enc;
            all[na++] = &r->kernel[s][w].dec;
            all[na++] = &r->kernel[s][w].dec2;
        }
    }
    for (int i = 0; i < 2; i++) {
        all[na++] = &r->naive[i].enc;
        all[na++] = &r->naive[i].dec;
    }
    for (unsigned w = 1; w <= WIDTHS; w++) {
        all[na++] = &r->naive_cache[w].enc;
        all[na++] = &r->naive_cache[w].dec;
    }
    all[na++] = &r->svb.enc;
    all[na++] = &r->svb.dec;
    assert(na <= sizeof all / sizeof all[0]);
    count = na * per + SIZE_COUNT * (size_t)WIDTHS * per; /* memcpy: one per round */
    if (!(t = malloc(count * sizeof *t)))
        return NULL;
    for (size_t i = 0; i < na; i++, k += per)
        all[i]->t = t + k;
    for (int s = 0; s < SIZE_COUNT; s++, k += (size_t)WIDTHS * per)
        r->memcpy_all[s].t = t + k;
    return t;
}

/* 64-byte aligned, written once so that no timed pass faults a page in. */
static void *alloc_touched(size_t bytes)
{
    void *p;
    bytes = (bytes + 63) / 64 * 64;
    if (!(p = aligned_alloc(64, bytes)))
        return NULL;
    memset(p, 0, bytes);
    return p;
}

/* ---- output ---------------------------------------------------------------------------- */

static double gvps(size_t n, const struct meas *m) { return (double)n / m->median / 1e9; }
static double gbps(size_t n, const struct meas *m) { return (double)n * 4 / m->median / 1e9; }

static void print_json(const struct results *r)
{
    for (int s = 0; s < SIZE_COUNT; s++) {
        size_t n = r->n[s];
        printf(s == SIZE_LARGE ? "{\"values\":%zu,\"memcpy_gbps\":%.4f,\"widths\":{"
                               : ",\"cache\":{\"values\":%zu,\"memcpy_gbps\":%.4f,\"widths\":{",
               n, gbps(n, &r->memcpy_all[s]));
        for (unsigned w = 1; w <= WIDTHS; w++)
            printf("%s\"%u\":{\"pack_gvps\":%.4f,\"unpack_gvps\":%.4f}", w > 1 ? "," : "", w,
                   gvps(n, &r->kernel[s][w].enc), gvps(n, &r->kernel[s][w].dec2));
        printf(s == SIZE_LARGE ? "}" : "}}");
    }
    printf(",\"naive\":{");
    for (int i = 0; i < 2; i++)
        printf("%s\"%u\":{\"pack_gvps\":%.4f,\"unpack_gvps\":%.4f}", i ? "," : "", naive_widths[i],
               gvps(r->n[SIZE_LARGE], &r->naive[i].enc), gvps(r->n[SIZE_LARGE], &r->naive[i].dec));
    printf("}");
    if (TROVE_BENCH_PEERS)
        printf(",\"streamvbyte\":{\"encode_gvps\":%.4f,\"decode_gvps\":%.4f}",
               gvps(r->n[SIZE_LARGE], &r->svb.enc), gvps(r->n[SIZE_LARGE], &r->svb.dec));
    printf(",\"peers\":%s}\n", TROVE_BENCH_PEERS ? "true" : "false");
}

/* A table row; the blocks columns only where m->dec2 was measured. */
static void print_row(const char *label, size_t n, const struct codec_meas *m, double mc_gbps,
                      double bytes_per_value)
{
    char passes[48], blocks[32], blocks_ratio[32];
    if (m->dec2.passes)
        snprintf(passes, sizeof passes, "%u/%u/%u", m->enc.passes, m->dec.passes, m->dec2.passes);
    else
        snprintf(passes, sizeof passes, "%u/%u", m->enc.passes, m->dec.passes);
    snprintf(blocks, sizeof blocks, "-");
    snprintf(blocks_ratio, sizeof blocks_ratio, "-");
    if (m->dec2.passes) {
        snprintf(blocks, sizeof blocks, "%.3f", gvps(n, &m->dec2));
        snprintf(blocks_ratio, sizeof blocks_ratio, "%.3f", gbps(n, &m->dec2) / mc_gbps);
    }
    printf("%-14s %8.3f %8.3f %8.2f %8.2f %8.3f %8.3f %9s %8s %8.3f %9s\n", label, gvps(n, &m->enc),
           gvps(n, &m->dec), gbps(n, &m->enc), gbps(n, &m->dec), gbps(n, &m->enc) / mc_gbps,
           gbps(n, &m->dec) / mc_gbps, blocks, blocks_ratio, bytes_per_value, passes);
}

static void print_header(const char *first)
{
    printf("%-14s %8s %8s %8s %8s %8s %8s %9s %8s %8s %9s\n", first, "pack", "unpack", "pack", "unpack",
           "pack/", "unpack/", "unpack_", "blocks/", "packed", "passes");
    printf("%-14s %8s %8s %8s %8s %8s %8s %9s %8s %8s %9s\n", "", "Gval/s", "Gval/s", "GB/s", "GB/s",
           "memcpy", "memcpy", "blocks", "memcpy", "B/value", "");
}

static void print_table(const struct results *r, unsigned repeat)
{
    static const char *const size_name[SIZE_COUNT] = {"large", "cache-resident"};
    size_t nl = r->n[SIZE_LARGE];
    double mc_large = gbps(nl, &r->memcpy_all[SIZE_LARGE]);

    printf("trove bench bitpack: FastLanes kernels (%s), base 0, 1024 values per call\n",
           trove_bitpack_kernel());
    if (repeat)
        printf("medians of %u timed pass%s per measurement, after a warm-up pass\n", repeat,
               repeat == 1 ? "" : "es");
    else
        printf("medians of 3 to 25 timed passes per measurement (0.1 s each; --repeat sets them), "
               "after a warm-up pass\n");
    for (int s = 0; s < SIZE_COUNT; s++) {
        size_t n = r->n[s];
        double mc = gbps(n, &r->memcpy_all[s]);
        printf("\n%s: %zu values (%.1f MiB of uint32); memcpy of those bytes %.2f GB/s (median of %u "
               "passes)\n\n",
               size_name[s], n, (double)n * 4 / 1048576.0, mc, r->memcpy_all[s].passes);
        print_header("width");
        for (unsigned w = 1; w <= WIDTHS; w++) {
            char label[16];
            snprintf(label, sizeof label, "%u", w);
            print_row(label, n, &r->kernel[s][w], mc, w / 8.0);
        }
    }

    printf("\npeers at %zu values (the same values as the kernel's row at that width):\n\n", nl);
    print_header("codec");
    for (int i = 0; i < 2; i++) {
        char label[32];
        unsigned w = naive_widths[i];
        snprintf(label, sizeof label, "kernel w=%u", w);
        print_row(label, nl, &r->kernel[SIZE_LARGE][w], mc_large, w / 8.0);
        snprintf(label, sizeof label, "naive w=%u", w);
        print_row(label, nl, &r->naive[i], mc_large, w / 8.0);
    }
    if (TROVE_BENCH_PEERS)
        print_row("streamvbyte", nl, &r->svb, mc_large, r->svb_bytes_per_value);
    printf("\nkernel / naive:");
    for (int i = 0; i < 2; i++) {
        unsigned w = naive_widths[i];
        const struct codec_meas *k = &r->kernel[SIZE_LARGE][w], *nv = &r->naive[i];
        printf("%s w=%u pack %.2fx, unpack %.2fx", i ? ";" : "", w, nv->enc.median / k->enc.median,
               nv->dec.median / k->dec.median);
    }
    {
        /* The bar: the kernel at least 1.5x the naive packer at every width. */
        double pmin = 1e30, umin = 1e30;
        unsigned pw = 0, uw = 0;
        printf("\nkernel / naive at every width, cache-resident (pack, unpack):\n");
        for (unsigned w = 1; w <= WIDTHS; w++) {
            const struct codec_meas *k = &r->kernel[SIZE_CACHE][w], *nv = &r->naive_cache[w];
            double pr = nv->enc.median / k->enc.median, ur = nv->dec.median / k->dec.median;
            printf("  %2u: %5.2fx %5.2fx%s", w, pr, ur, w % 4 == 0 ? "\n" : "");
            if (pr < pmin)
                pmin = pr, pw = w;
            if (ur < umin)
                umin = ur, uw = w;
        }
        printf("  lowest: pack %.2fx (w=%u), unpack %.2fx (w=%u)\n", pmin, pw, umin, uw);
    }
    if (TROVE_BENCH_PEERS)
        printf("\nkernel / streamvbyte at w=%u: pack %.2fx encode, unpack %.2fx decode\n",
               SVB_WIDTH, r->svb.enc.median / r->kernel[SIZE_LARGE][SVB_WIDTH].enc.median,
               r->svb.dec.median / r->kernel[SIZE_LARGE][SVB_WIDTH].dec.median);
    else
        printf("\nstreamvbyte is not in this build: configure with -DTROVE_BENCH_PEERS=ON "
               "(`make bench` and\n`make demo` do) to measure it too.\n");
    printf("\nGval/s: billions of values per second. GB/s counts 4 bytes per value: a pack's input,\n"
           "an unpack's output, a memcpy's copy; pack/ and unpack/memcpy divide those by the memcpy\n"
           "of the same size above. unpack_blocks (Gval/s) is trove_bitpack_unpack_blocks over the\n"
           "whole array in one call, which streams outputs of 8 MiB and up past the cache;\n"
           "blocks/memcpy is its bandwidth ratio, and --json's unpack_gvps is it. passes: pack/unpack[/unpack_blocks]. streamvbyte\n"
           "runs on the w=%u values, the whole array per call; its pack columns are encode, unpack\n"
           "columns decode. It is the libstreamvbyte trove links, as its distribution built it:\n"
           "Debian's 0.4.1-4 package is scalar code compiled without optimization, far below\n"
           "Stream VByte's SIMD codec.\n",
           SVB_WIDTH);
}

static void bitpack_usage(FILE *f)
{
    fprintf(f,
            "usage: trove bench bitpack [--values N] [--cache-values M] [--repeat R] [--json]\n"
            "\n"
            "Measure the FastLanes bit-packing kernels (trove_bitpack_pack/unpack, 1024 values\n"
            "per call) at every width 1..32 on a large and a cache-resident array of uint32,\n"
            "each against a memcpy of the same bytes in the same run, and as peers a naive\n"
            "bit-buffer packer (widths 10 and 25) and Stream VByte (the width-25 values).\n"
            "Throughputs are medians of repeated passes. Every unpack is compared with its\n"
            "input; a mismatch fails the run.\n"
            "  --values N          the large size, a multiple of 1024 up to 268435456 (default\n"
            "                      26214400, 100 MiB of uint32)\n"
            "  --cache-values M    the cache-resident size, a multiple of 1024 (default 1048576,\n"
            "                      4 MiB)\n"
            "  --repeat R          timed passes per measurement (default: 3 to 25, until 0.1 s\n"
            "                      is spent)\n"
            "  --json              print one JSON object on stdout instead of the table\n");
}

static int parse_values(const char *opt, const char *s, uint64_t *out)
{
    if (cli_parse_u64(s, out) || *out < BLOCK || *out > MAX_VALUES || *out % BLOCK)
        return cli_error("bench bitpack", "%s: '%s' is not a multiple of 1024 in 1024..%llu", opt, s,
                         (unsigned long long)MAX_VALUES);
    return 0;
}

int bench_bitpack(int argc, char **argv)
{
    struct bench b;
    struct results r;
    struct cli_progress prog;
    uint64_t values = DEFAULT_VALUES, cache_values = DEFAULT_CACHE_VALUES, repeat = 0;
    int json = 0, status = 1;
    double *times = NULL;
    size_t cap;
    uint64_t step = 0;

    memset(&b, 0, sizeof b);
    memset(&r, 0, sizeof r);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (cli_is_help(a)) {
            bitpack_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--values") && has_value) {
            if (parse_values(a, argv[++i], &values))
                return 1;
        } else if (!strcmp(a, "--cache-values") && has_value) {
            if (parse_values(a, argv[++i], &cache_values))
                return 1;
        } else if (!strcmp(a, "--repeat") && has_value) {
            if (cli_parse_u64(argv[++i], &repeat) || repeat < 1 || repeat > 1000)
                return cli_error("bench bitpack", "--repeat: '%s' is not a count in 1..1000", argv[i]);
        } else if (!strcmp(a, "--values") || !strcmp(a, "--cache-values") || !strcmp(a, "--repeat")) {
            return cli_error("bench bitpack", "%s needs a value; see `trove bench bitpack --help`", a);
        } else {
            return cli_error("bench bitpack", "unexpected argument '%s'; see `trove bench bitpack --help`",
                             a);
        }
    }
    if (bench_peers_load("bench bitpack") != 0)
        return 1;

    r.n[SIZE_LARGE] = (size_t)values;
    r.n[SIZE_CACHE] = (size_t)cache_values;
    cap = (size_t)(values > cache_values ? values : cache_values);
#if TROVE_BENCH_PEERS
    b.svb_cap = streamvbyte_max_compressedbytes((uint32_t)values);
#else
    b.svb_cap = 1; /* not measured: a byte, so the allocation below stays uniform */
#endif
    if (!(times = alloc_times(&r, repeat ? (unsigned)repeat : MAX_PASSES)) ||
        !(b.in = alloc_touched(cap * sizeof *b.in)) || !(b.packed = alloc_touched(cap * sizeof *b.packed)) ||
        !(b.dec = alloc_touched(cap * sizeof *b.dec)) || !(b.svb = alloc_touched(b.svb_cap))) {
        cli_error("bench bitpack", "out of memory for %zu values (about %zu MB); try a smaller --values",
                  cap, (cap * 12 + b.svb_cap) >> 20);
        goto out;
    }

    cli_progress_begin(&prog, "bench bitpack", SIZE_COUNT * WIDTHS);
    for (int s = 0; s < SIZE_COUNT; s++) {
        b.n = r.n[s];
        for (unsigned w = 1; w <= WIDTHS; w++) {
            b.w = w;
            fill_values(b.in, b.n, w);
            if (run_width(&b, &r, s, (unsigned)repeat) != 0) {
                cli_progress_end(&prog);
                cli_error("bench bitpack", "%s (that codec does not round-trip)", b.err);
                goto out;
            }
            cli_progress_update(&prog, ++step);
        }
        meas_finish(&r.memcpy_all[s]);
    }
    cli_progress_end(&prog);

    if (json)
        print_json(&r);
    else
        print_table(&r, (unsigned)repeat);
    if (fflush(stdout) != 0) {
        cli_error("bench bitpack", "writing stdout: %s", strerror(errno));
        goto out;
    }
    status = 0;
out:
    free(times);
    free(b.in);
    free(b.packed);
    free(b.dec);
    free(b.svb);
    return status;
}
