/*
 * test_sample.c: the sample layer without the kernel — the perf ring reader and record
 * decoder on hand-built rings (a record across the ring's end, a header across it, a size
 * past what was written, lost records), the recorder applying records of two CPUs in time
 * order (a mapping on one CPU before a sample on the other, a fork's copied space, an
 * exec's emptied one), the address spaces, the /proc/PID/maps parser, the symbolizer on
 * this test's own code (an inlined function expanded, with the call site's line), and a
 * sample set made into a profile (deduplicated frames and stacks, unsymbolized addresses
 * as module + offset). With TROVE_PERF_CORPUS set to a directory, the rings made here are
 * written there as seeds of fuzz/fuzz_perf_records.c.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sample/perf_records.h"
#include "sample/proc_maps.h"
#include "sample/recorder.h"
#include "sample/spaces.h"
#include "trove/profile.h"
#include "trove/sample.h"

/* ---- building records -------------------------------------------------------------- */

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static size_t header(uint8_t *p, uint32_t type, uint16_t misc, size_t size)
{
    put32(p, type);
    put16(p + 4, misc);
    put16(p + 6, (uint16_t)size);
    return 8;
}

static void trailer(uint8_t *p, uint32_t pid, uint32_t tid, uint64_t t)
{
    put32(p, pid);
    put32(p + 4, tid);
    put64(p + 8, t);
}

static size_t rec_sample(uint8_t *p, uint32_t pid, uint32_t tid, uint64_t t, const uint64_t *ips,
                         size_t nr)
{
    size_t size = 32 + 8 * nr;
    header(p, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, size);
    put32(p + 8, pid);
    put32(p + 12, tid);
    put64(p + 16, t);
    put64(p + 24, nr);
    for (size_t i = 0; i < nr; i++)
        put64(p + 32 + 8 * i, ips[i]);
    return size;
}

static size_t rec_mmap2(uint8_t *p, uint32_t pid, uint64_t t, uint64_t addr, uint64_t len,
                        uint64_t pgoff, const char *file, const uint8_t *bid, size_t bid_len)
{
    size_t flen = strlen(file) + 1, size = 72 + ((flen + 7) & ~(size_t)7) + 16;
    memset(p, 0, size);
    header(p, PERF_RECORD_MMAP2, bid_len ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0, size);
    put32(p + 8, pid);
    put32(p + 12, pid);
    put64(p + 16, addr);
    put64(p + 24, len);
    put64(p + 32, pgoff);
    if (bid_len) {
        p[40] = (uint8_t)bid_len;
        memcpy(p + 44, bid, bid_len);
    } else {
        put32(p + 40, 8);   /* maj */
        put32(p + 44, 1);   /* min */
        put64(p + 48, 777); /* ino */
    }
    put32(p + 64, 5); /* PROT_READ | PROT_EXEC */
    put32(p + 68, 2);
    memcpy(p + 72, file, flen);
    trailer(p + size - 16, pid, pid, t);
    return size;
}

/* A record of fields[0..flen) (a multiple of 8) and the trailer. */
static size_t rec_fields(uint8_t *p, uint32_t type, uint16_t misc, const void *fields,
                         size_t flen, uint32_t pid, uint32_t tid, uint64_t t)
{
    size_t size = 8 + flen + 16;
    header(p, type, misc, size);
    if (flen)
        memcpy(p + 8, fields, flen);
    trailer(p + 8 + flen, pid, tid, t);
    return size;
}

static size_t rec_lost(uint8_t *p, uint64_t lost, uint64_t t)
{
    uint8_t f[16];
    put64(f, 1);
    put64(f + 8, lost);
    return rec_fields(p, PERF_RECORD_LOST, 0, f, 16, 0, 0, t);
}

static size_t rec_comm(uint8_t *p, uint32_t pid, uint32_t tid, const char *comm, int exec,
                       uint64_t t)
{
    uint8_t f[32] = {0};
    put32(f, pid);
    put32(f + 4, tid);
    strcpy((char *)f + 8, comm);
    return rec_fields(p, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0, f, 24, pid,
                      tid, t);
}

static size_t rec_fork(uint8_t *p, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
                       uint64_t t)
{
    uint8_t f[24];
    put32(f, pid);
    put32(f + 4, ppid);
    put32(f + 8, tid);
    put32(f + 12, ptid);
    put64(f + 16, t);
    return rec_fields(p, PERF_RECORD_FORK, 0, f, 24, pid, tid, t);
}

/* A ring of `size` bytes whose records start at byte count `at` (so they may wrap). */
struct ring {
    uint8_t data[4096];
    struct trove__perf_ring r;
};

static void ring_init(struct ring *g, size_t size, uint64_t at)
{
    memset(g->data, 0xee, sizeof g->data);
    g->r = (struct trove__perf_ring){g->data, size, at, at};
}

static void ring_put(struct ring *g, const uint8_t *rec, size_t n)
{
    for (size_t i = 0; i < n; i++)
        g->data[(g->r.head + i) & (g->r.size - 1)] = rec[i];
    g->r.head += n;
}

static void seed(const char *name, const struct ring *g)
{
    /* fuzz_perf_records' input: log2 of the size, the tail's offset, head - tail, data. */
    uint8_t pre[12];
    size_t lg = 0;
    while (((size_t)1 << lg) < g->r.size)
        lg++;
    pre[0] = (uint8_t)lg;
    pre[1] = pre[2] = pre[3] = 0;
    put32(pre + 4, (uint32_t)(g->r.tail & (g->r.size - 1)));
    put32(pre + 8, (uint32_t)(g->r.head - g->r.tail));
    test_corpus_write("TROVE_PERF_CORPUS", name, pre, sizeof pre, g->data, g->r.size);
}

/* ---- the ring and the decoder ------------------------------------------------------ */

static void test_ring(void)
{
    static struct ring g;
    uint8_t rec[512], scratch[TROVE__PERF_RECORD_MAX];
    uint64_t ips[3] = {(uint64_t)PERF_CONTEXT_USER, 0x401000, 0x402000};
    const uint8_t *got;
    size_t len, n1, n2;
    struct trove_diag diag = {0};
    struct trove__perf_rec r;

    /* Two records, no wrap. */
    ring_init(&g, 256, 0);
    n1 = rec_sample(rec, 10, 11, 1000, ips, 3);
    ring_put(&g, rec, n1);
    n2 = rec_lost(rec, 7, 1001);
    ring_put(&g, rec, n2);
    seed("two-records", &g);
    CHECK_EQ_INT(trove__perf_ring_next(&g.r, scratch, &got, &len, NULL), 1);
    CHECK(got == g.data && len == n1);
    CHECK_EQ_INT(trove__perf_decode(got, len, &r, NULL), TROVE_OK);
    CHECK(r.type == PERF_RECORD_SAMPLE && r.pid == 10 && r.tid == 11 && r.time_ns == 1000 &&
          r.nr == 3 && trove__perf_ip(&r, 2) == 0x402000);
    CHECK_EQ_INT(trove__perf_ring_next(&g.r, scratch, &got, &len, NULL), 1);
    CHECK_EQ_INT(trove__perf_decode(got, len, &r, NULL), TROVE_OK);
    CHECK(r.type == PERF_RECORD_LOST && r.lost == 7 && r.time_ns == 1001);
    CHECK_EQ_INT(trove__perf_ring_next(&g.r, scratch, &got, &len, NULL), 0);
    CHECK(g.r.tail == g.r.head);

    /* A record across the end: handed over as a contiguous copy in scratch. */
    ring_init(&g, 256, 256 * 3 + 232);
    n1 = rec_sample(rec, 1, 2, 5, ips, 3); /* 56 bytes from 232: 24 at the end, 32 at 0 */
    ring_put(&g, rec, n1);
    seed("wrapped", &g);
    CHECK_EQ_INT(trove__perf_ring_next(&g.r, scratch, &got, &len, NULL), 1);
    CHECK(got == scratch && len == n1 && memcmp(got, rec, n1) == 0);
    CHECK_EQ_INT(trove__perf_decode(got, len, &r, NULL), TROVE_OK);
    CHECK(r.nr == 3 && trove__perf_ip(&r, 1) == 0x401000);

    /* The header itself across the end (a ring that is not 8-byte aligned in use). */
    ring_init(&g, 256, 252);
    n1 = rec_lost(rec, 3, 9);
    ring_put(&g, rec, n1);
    CHECK_EQ_INT(trove__perf_ring_next(&g.r, scratch, &got, &len, NULL), 1);
    CHECK(len == n1 && memcmp(got, rec, n1) == 0);

    /* A record whose size runs past what was written: the ring is dropped. */
    ring_init(&g, 256, 64);
    n1 = rec_sample(rec, 1, 2, 5, ips, 3);
    put16(rec + 6, (uint16_t)(n1 + 64));
    ring_put(&g, rec, n1);
    seed("size-past-head", &g);
    CHECK_EQ_INT(trove__perf_ring_next(&g.r, scratch, &got, &len, &diag), TROVE_ERR_CORRUPT);
    CHECK(diag.code == TROVE_ERR_CORRUPT && strstr(diag.msg, "bytes written") != NULL);
    CHECK(g.r.tail == g.r.head);
    CHECK_EQ_INT(trove__perf_ring_next(&g.r, scratch, &got, &len, NULL), 0);

    /* A size under the header's. */
    ring_init(&g, 256, 0);
    n1 = rec_lost(rec, 1, 1);
    put16(rec + 6, 4);
    ring_put(&g, rec, n1);
    seed("size-under-8", &g);
    CHECK_EQ_INT(trove__perf_ring_next(&g.r, scratch, &got, &len, NULL), TROVE_ERR_CORRUPT);

    /* head - tail over the ring's size, or under a header. */
    ring_init(&g, 256, 0);
    g.r.head = 512;
    CHECK_EQ_INT(trove__perf_ring_next(&g.r, scratch, &got, &len, NULL), TROVE_ERR_CORRUPT);
    CHECK(g.r.tail == 512);
    ring_init(&g, 256, 0);
    g.r.head = 4;
    CHECK_EQ_INT(trove__perf_ring_next(&g.r, scratch, &got, &len, NULL), TROVE_ERR_CORRUPT);
    ring_init(&g, 100, 0); /* not a power of two */
    g.r.head = 16;
    CHECK_EQ_INT(trove__perf_ring_next(&g.r, scratch, &got, &len, NULL), TROVE_ERR_CORRUPT);
}

static void test_decode(void)
{
    uint8_t rec[512];
    uint64_t ips[2] = {0x10, 0x20};
    uint8_t bid[20];
    struct trove__perf_rec r;
    struct trove_diag diag = {0};
    size_t n;

    for (int i = 0; i < 20; i++)
        bid[i] = (uint8_t)(i + 1);
    /* A callchain that does not fill its sample exactly. */
    n = rec_sample(rec, 1, 1, 1, ips, 2);
    put64(rec + 24, 3);
    CHECK_EQ_INT(trove__perf_decode(rec, n, &r, &diag), TROVE_ERR_CORRUPT);
    CHECK(strstr(diag.msg, "callchain") != NULL);
    put64(rec + 24, UINT64_MAX / 4); /* nr * 8 would wrap */
    CHECK_EQ_INT(trove__perf_decode(rec, n, &r, NULL), TROVE_ERR_CORRUPT);
    put64(rec + 24, 1);
    CHECK_EQ_INT(trove__perf_decode(rec, n, &r, NULL), TROVE_ERR_CORRUPT);
    /* A length other than the header's. */
    n = rec_sample(rec, 1, 1, 1, ips, 2);
    CHECK_EQ_INT(trove__perf_decode(rec, n - 8, &r, NULL), TROVE_ERR_CORRUPT);
    CHECK_EQ_INT(trove__perf_decode(rec, 4, &r, NULL), TROVE_ERR_CORRUPT);

    /* MMAP2 with a build id, and without (maj, min, ino). */
    n = rec_mmap2(rec, 5, 77, 0x400000, 0x1000, 0x2000, "/usr/lib/libx.so", bid, 20);
    CHECK_EQ_INT(trove__perf_decode(rec, n, &r, NULL), TROVE_OK);
    CHECK(r.type == PERF_RECORD_MMAP2 && r.pid == 5 && r.addr == 0x400000 && r.len == 0x1000 &&
          r.pgoff == 0x2000 && r.build_id_len == 20 && r.build_id[19] == 20 &&
          !strcmp(r.filename, "/usr/lib/libx.so") && r.time_ns == 77 && r.prot == 5);
    rec[40] = 21; /* a build id longer than the field */
    CHECK_EQ_INT(trove__perf_decode(rec, n, &r, NULL), TROVE_ERR_CORRUPT);
    n = rec_mmap2(rec, 5, 77, 0x400000, 0x1000, 0, "/bin/y", NULL, 0);
    CHECK_EQ_INT(trove__perf_decode(rec, n, &r, NULL), TROVE_OK);
    CHECK(r.build_id_len == 0 && r.maj == 8 && r.min == 1 && r.ino == 777);
    /* A file name without its NUL before the trailer. */
    memset(rec + 72, 'a', n - 72 - 16);
    CHECK_EQ_INT(trove__perf_decode(rec, n, &r, &diag), TROVE_ERR_CORRUPT);
    CHECK(strstr(diag.msg, "file name") != NULL);
    /* An empty or wrapping mapping. */
    n = rec_mmap2(rec, 5, 77, UINT64_MAX - 10, 0x1000, 0, "/bin/y", NULL, 0);
    CHECK_EQ_INT(trove__perf_decode(rec, n, &r, NULL), TROVE_ERR_CORRUPT);

    n = rec_comm(rec, 3, 4, "worker", 1, 9);
    CHECK_EQ_INT(trove__perf_decode(rec, n, &r, NULL), TROVE_OK);
    CHECK(r.type == PERF_RECORD_COMM && r.pid == 3 && r.tid == 4 && !strcmp(r.comm, "worker") &&
          (r.misc & PERF_RECORD_MISC_COMM_EXEC));
    n = rec_fork(rec, 8, 3, 8, 4, 10);
    CHECK_EQ_INT(trove__perf_decode(rec, n, &r, NULL), TROVE_OK);
    CHECK(r.type == PERF_RECORD_FORK && r.pid == 8 && r.ppid == 3 && r.ptid == 4 && r.time_ns == 10);
    CHECK_EQ_INT(trove__perf_decode(rec, 24, &r, NULL), TROVE_ERR_CORRUPT); /* fork too short */
    {
        uint8_t f[8];
        put64(f, 12);
        n = rec_fields(rec, PERF_RECORD_LOST_SAMPLES, 0, f, 8, 1, 1, 11);
        CHECK_EQ_INT(trove__perf_decode(rec, n, &r, NULL), TROVE_OK);
        CHECK(r.lost == 12 && r.time_ns == 11);
        n = rec_fields(rec, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, NULL, 0, 6, 7, 12);
        CHECK_EQ_INT(trove__perf_decode(rec, n, &r, NULL), TROVE_OK);
        CHECK(r.pid == 6 && r.tid == 7 && r.time_ns == 12);
        n = rec_fields(rec, 99, 0, NULL, 0, 6, 7, 13); /* an unknown type: header and trailer */
        CHECK_EQ_INT(trove__perf_decode(rec, n, &r, NULL), TROVE_OK);
        CHECK(r.type == 99 && r.time_ns == 13);
    }
}

/* ---- spaces and /proc/PID/maps ----------------------------------------------------- */

static void expect_find(struct trove__spaces *sp, uint32_t pid, uint64_t addr, uint32_t module,
                        uint64_t offset)
{
    struct trove_sample_frame f = {0, 0};
    int found = trove__spaces_find(sp, pid, addr, &f);
    CHECK_EQ_INT(found, module != TROVE_SAMPLE_NO_MODULE);
    if (found && (f.module != module || f.offset != offset)) {
        fprintf(stderr, "pid %u addr 0x%llx: module %u offset 0x%llx, not %u 0x%llx\n", pid,
                (unsigned long long)addr, f.module, (unsigned long long)f.offset, module,
                (unsigned long long)offset);
        CHECK(0);
    }
}

static void test_spaces(void)
{
    struct trove__spaces *sp = NULL;
    CHECK_EQ_INT(trove__spaces_new(&sp), TROVE_OK);
    CHECK_EQ_INT(trove__spaces_map(sp, 1, 0x1000, 0x5000, 0x0, 0), TROVE_OK);
    CHECK_EQ_INT(trove__spaces_map(sp, 1, 0x8000, 0x9000, 0x3000, 1), TROVE_OK);
    CHECK_EQ_INT(trove__spaces_map(sp, 1, 0x100, 0x200, 0, 2), TROVE_OK);
    CHECK_EQ_INT(trove__spaces_map(sp, 1, 0x100, 0x100, 0, 2), TROVE_ERR_INVALID);
    expect_find(sp, 1, 0x1000, 0, 0);
    expect_find(sp, 1, 0x4fff, 0, 0x3fff);
    expect_find(sp, 1, 0x5000, TROVE_SAMPLE_NO_MODULE, 0);
    expect_find(sp, 1, 0x8800, 1, 0x3800);
    expect_find(sp, 1, 0x150, 2, 0x50);
    expect_find(sp, 1, 0xff, TROVE_SAMPLE_NO_MODULE, 0);
    expect_find(sp, 2, 0x1000, TROVE_SAMPLE_NO_MODULE, 0);
    /* A new mapping in the middle of an old one splits it; the tail keeps its offset. */
    CHECK_EQ_INT(trove__spaces_map(sp, 1, 0x2000, 0x3000, 0x10000, 3), TROVE_OK);
    expect_find(sp, 1, 0x1fff, 0, 0xfff);
    expect_find(sp, 1, 0x2000, 3, 0x10000);
    expect_find(sp, 1, 0x3000, 0, 0x2000);
    CHECK_EQ_INT(trove__spaces_count(sp, 1), 5);
    /* One over several: cut away. */
    CHECK_EQ_INT(trove__spaces_map(sp, 1, 0x0, 0x8800, 0x0, 4), TROVE_OK);
    expect_find(sp, 1, 0x150, 4, 0x150);
    expect_find(sp, 1, 0x8700, 4, 0x8700);
    expect_find(sp, 1, 0x8800, 1, 0x3800);
    CHECK_EQ_INT(trove__spaces_count(sp, 1), 2);
    /* fork copies, exec empties, each for its own pid only. */
    CHECK_EQ_INT(trove__spaces_fork(sp, 1, 7), TROVE_OK);
    expect_find(sp, 7, 0x8800, 1, 0x3800);
    trove__spaces_exec(sp, 7);
    expect_find(sp, 7, 0x8800, TROVE_SAMPLE_NO_MODULE, 0);
    expect_find(sp, 1, 0x8800, 1, 0x3800);
    CHECK_EQ_INT(trove__spaces_fork(sp, 99, 8), TROVE_OK); /* an unknown parent: empty */
    CHECK_EQ_INT(trove__spaces_count(sp, 8), 0);
    /* Many mappings in a random order still find each address. */
    for (uint32_t i = 0; i < 3000; i++) {
        uint64_t k = (i * 7919u) % 3000u;
        CHECK_EQ_INT(trove__spaces_map(sp, 9, 0x100000 + k * 0x2000, 0x100000 + k * 0x2000 + 0x1000,
                                       k, (uint32_t)k), TROVE_OK);
    }
    for (uint64_t k = 0; k < 3000; k += 7)
        expect_find(sp, 9, 0x100000 + k * 0x2000 + 0x10, (uint32_t)k, k + 0x10);
    trove__spaces_free(sp);
}

static void test_maps_lines(void)
{
    struct trove__maps_line m;
    const char *l1 = "55d4c0a00000-55d4c0a02000 r-xp 00002000 fe:01 1234567                    "
                     "/usr/bin/my prog (deleted)";
    const char *l2 = "7ffd1c3f0000-7ffd1c3f2000 r-xp 00000000 00:00 0                          [vdso]";
    const char *l3 = "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 ";
    const char *bad[] = {
        "", "zz-10 r-xp 0 0:0 0 /x", "2000-1000 r-xp 0 0:0 0 /x", "1000-2000 r-x 0 0:0 0 /x",
        "1000-2000 r-xp 0 0:0 /x", "1000-2000 r-xp 0 0 0 /x", "11112222333344445-2 r-xp 0 0:0 0",
        "1000-2000 r-xp 0 0:0 99999999999999999999999 /x",
    };
    CHECK_EQ_INT(trove__maps_parse_line(l1, strlen(l1), &m), TROVE_OK);
    CHECK(m.start == 0x55d4c0a00000ull && m.end == 0x55d4c0a02000ull && m.offset == 0x2000 &&
          m.dev_major == 0xfe && m.dev_minor == 1 && m.inode == 1234567 &&
          !strcmp(m.perms, "r-xp"));
    CHECK(m.path_len == strlen("/usr/bin/my prog (deleted)") &&
          !memcmp(m.path, "/usr/bin/my prog (deleted)", m.path_len));
    CHECK(trove__maps_is_module(m.perms, m.path, m.path_len));
    CHECK_EQ_INT(trove__maps_parse_line(l2, strlen(l2), &m), TROVE_OK);
    CHECK(trove__maps_is_module(m.perms, m.path, m.path_len));
    CHECK_EQ_INT(trove__maps_parse_line(l3, strlen(l3), &m), TROVE_OK);
    CHECK(m.path_len == 0 && !trove__maps_is_module(m.perms, m.path, m.path_len));
    CHECK(!trove__maps_is_module("r--p", "/x", 2));
    CHECK(!trove__maps_is_module("r-xp", "[vsyscall]", 10));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (trove__maps_parse_line(bad[i], strlen(bad[i]), &m) != TROVE_ERR_CORRUPT) {
            fprintf(stderr, "maps line accepted: '%s'\n", bad[i]);
            CHECK(0);
        }
}

/* ---- the recorder ------------------------------------------------------------------ */

static void test_recorder(void)
{
    static struct ring cpu0, cpu1;
    struct trove__perf_ring rings[2];
    struct trove_sample_set *set = NULL;
    struct trove__recorder *rc = NULL;
    struct trove_sample s;
    struct trove_sample_module mod;
    struct trove_sampler_stats *st;
    uint8_t rec[512], bid[20];
    size_t n, nsw;
    const struct trove_sample_switch *sw;
    const char *name;

    for (int i = 0; i < 20; i++)
        bid[i] = (uint8_t)(0xa0 + i);
    CHECK_EQ_INT(trove_sample_set_new(&set), TROVE_OK);
    CHECK_EQ_INT(trove__recorder_new(set, &rc), TROVE_OK);
    trove__recorder_offline(rc, 1);
    ring_init(&cpu0, 1024, 1024 - 40); /* both rings wrap */
    ring_init(&cpu1, 512, 512 - 16);
    /* cpu0: a sample at t=200 that needs cpu1's mapping at t=100; the pid's exec at 50. */
    {
        uint64_t ips[5] = {(uint64_t)PERF_CONTEXT_USER, 0x401234, 0x9999, (uint64_t)PERF_CONTEXT_KERNEL,
                           0xffffffff81000000ull};
        n = rec_sample(rec, 40, 41, 200, ips, 5);
        ring_put(&cpu0, rec, n);
    }
    n = rec_comm(rec, 40, 40, "hot", 1, 50);
    ring_put(&cpu0, rec, n);
    n = rec_lost(rec, 5, 210);
    ring_put(&cpu0, rec, n);
    n = rec_fields(rec, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT |
                                                PERF_RECORD_MISC_SWITCH_OUT_PREEMPT,
                   NULL, 0, 40, 41, 220);
    ring_put(&cpu0, rec, n);
    n = rec_mmap2(rec, 40, 100, 0x400000, 0x10000, 0x1000, "/opt/hot/bin/hot", bid, 20);
    ring_put(&cpu1, rec, n);
    /* The process forks at 300 (child 50); the child's sample at 310 uses the copied space. */
    n = rec_fork(rec, 50, 40, 50, 41, 300);
    ring_put(&cpu1, rec, n);
    {
        uint64_t ips[2] = {(uint64_t)PERF_CONTEXT_USER, 0x400010};
        n = rec_sample(rec, 50, 50, 310, ips, 2);
        ring_put(&cpu1, rec, n);
    }
    /* A sample whose callchain does not fill it: counted, skipped. */
    {
        uint64_t ips[1] = {0x400010};
        n = rec_sample(rec, 50, 50, 320, ips, 1);
        put64(rec + 24, 2);
        ring_put(&cpu1, rec, n);
    }
    seed("recorder-cpu0", &cpu0);
    seed("recorder-cpu1", &cpu1);
    rings[0] = cpu0.r;
    rings[1] = cpu1.r;
    CHECK_EQ_INT(trove__recorder_read(rc, rings, 2), TROVE_OK);
    CHECK(rings[0].tail == rings[0].head && rings[1].tail == rings[1].head);
    st = trove__recorder_stats(rc);
    CHECK_EQ_INT(st->samples, 2);
    CHECK_EQ_INT(st->lost, 5);
    CHECK_EQ_INT(st->switches, 1);
    CHECK_EQ_INT(st->mmaps, 1);
    CHECK_EQ_INT(st->bad_records, 1);
    CHECK_EQ_INT(st->unmapped, 1);
    CHECK_EQ_INT(trove_sample_set_count(set), 2);
    CHECK_EQ_INT(trove_sample_set_module_count(set), 1);
    CHECK_EQ_INT(trove_sample_set_module_get(set, 0, &mod), TROVE_OK);
    CHECK(!strcmp(mod.path, "/opt/hot/bin/hot") && mod.build_id_len == 20 &&
          mod.build_id[0] == 0xa0);
    trove_sample_set_get(set, 0, &s);
    /* The kernel part of the chain is dropped; the junk address is kept as an address. */
    CHECK(s.time_ns == 200 && s.pid == 40 && s.tid == 41 && s.n_frames == 2);
    CHECK(s.frames[0].module == 0 && s.frames[0].offset == 0x1234 + 0x1000);
    CHECK(s.frames[1].module == TROVE_SAMPLE_NO_MODULE && s.frames[1].offset == 0x9999);
    trove_sample_set_get(set, 1, &s);
    CHECK(s.pid == 50 && s.n_frames == 1 && s.frames[0].module == 0 &&
          s.frames[0].offset == 0x1010);
    sw = trove_sample_set_switches(set, &nsw);
    CHECK(nsw == 1 && sw[0].out && sw[0].preempt && sw[0].tid == 41 && sw[0].time_ns == 220);
    name = trove_names_get(trove_sample_set_names(set), TROVE_NAME_PROCESS, 40, 0, &n);
    CHECK(name && n == 3 && !memcmp(name, "hot", 3));
    /* the forked child is named after the thread that forked it */
    name = trove_names_get(trove_sample_set_names(set), TROVE_NAME_THREAD, 50, 50, &n);
    CHECK(name == NULL); /* thread 41 had no name of its own */

    /* An exec empties the space: the next sample of pid 40 finds nothing. */
    ring_init(&cpu0, 1024, 0);
    n = rec_comm(rec, 40, 40, "other", 1, 400);
    ring_put(&cpu0, rec, n);
    {
        uint64_t ips[1] = {0x401234};
        n = rec_sample(rec, 40, 40, 410, ips, 1);
        ring_put(&cpu0, rec, n);
    }
    n = rec_fork(rec, 40, 40, 42, 40, 420); /* a thread of 40: named after 40 */
    ring_put(&cpu0, rec, n);
    /* A mapping without a build id, then the same file again: one module. */
    n = rec_mmap2(rec, 40, 430, 0x700000, 0x1000, 0, "/opt/lib/x.so", NULL, 0);
    ring_put(&cpu0, rec, n);
    n = rec_mmap2(rec, 40, 440, 0x800000, 0x1000, 0, "/opt/lib/x.so", NULL, 0);
    ring_put(&cpu0, rec, n);
    rings[0] = cpu0.r;
    rings[1] = (struct trove__perf_ring){cpu1.data, 512, 0, 0};
    CHECK_EQ_INT(trove__recorder_read(rc, rings, 2), TROVE_OK);
    trove_sample_set_get(set, 2, &s);
    CHECK(s.time_ns == 410 && s.n_frames == 1 && s.frames[0].module == TROVE_SAMPLE_NO_MODULE);
    name = trove_names_get(trove_sample_set_names(set), TROVE_NAME_THREAD, 40, 42, &n);
    CHECK(name && n == 5 && !memcmp(name, "other", 5));
    CHECK_EQ_INT(trove_sample_set_module_count(set), 2);

    /* A broken ring is counted and dropped; the other ring is read. */
    ring_init(&cpu0, 1024, 0);
    n = rec_lost(rec, 1, 500);
    put16(rec + 6, 200);
    ring_put(&cpu0, rec, n);
    ring_init(&cpu1, 512, 0);
    n = rec_lost(rec, 2, 501);
    ring_put(&cpu1, rec, n);
    rings[0] = cpu0.r;
    rings[1] = cpu1.r;
    CHECK_EQ_INT(trove__recorder_read(rc, rings, 2), TROVE_OK);
    CHECK_EQ_INT(st->bad_rings, 1);
    CHECK_EQ_INT(st->lost, 7);
    trove__recorder_free(rc);
    trove_sample_set_free(set);
}

/* ---- the symbolizer on this program's own code ------------------------------------- */

static volatile uint64_t sink;
static int line_call, line_outer;

__attribute__((noinline)) static uint64_t where_called(void)
{
    return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static inline __attribute__((always_inline)) uint64_t inlined_step(void)
{
    uint64_t r = where_called(); line_call = __LINE__;
    sink = r;
    return r;
}

__attribute__((noinline)) static uint64_t outer_step(void)
{
    uint64_t r = inlined_step(); line_outer = __LINE__;
    sink = r + 1;
    return r;
}

/* This program's module and the file offset of addr in it. */
static int own_module(uint64_t addr, char *path, size_t cap, uint8_t *bid, size_t *bid_len,
                      uint64_t *offset)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4608];
    int found = 0;
    if (!f)
        return 0;
    while (!found && fgets(line, sizeof line, f)) {
        struct trove__maps_line m;
        size_t len = strcspn(line, "\n");
        if (trove__maps_parse_line(line, len, &m) == TROVE_OK && addr >= m.start &&
            addr < m.end && m.path_len && m.path_len < cap) {
            memcpy(path, m.path, m.path_len);
            path[m.path_len] = 0;
            *offset = addr - m.start + m.offset;
            found = 1;
        }
    }
    fclose(f);
    if (found)
        *bid_len = trove__elf_build_id(path, bid, TROVE_SAMPLE_BUILD_ID_MAX);
    return found;
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = s ? strlen(s) : 0, b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

static void test_symbolizer(void)
{
    struct trove_symbolizer *sym = NULL;
    struct trove_symbol out[8];
    struct trove_sample_module m;
    struct trove_symbolizer_stats st;
    char path[4096];
    uint8_t bid[TROVE_SAMPLE_BUILD_ID_MAX], wrong[TROVE_SAMPLE_BUILD_ID_MAX];
    size_t bid_len = 0, n = 99;
    uint64_t ret = outer_step(), off = 0, fn_off = 0;

    if (!own_module(ret, path, sizeof path, bid, &bid_len, &off) ||
        !own_module((uint64_t)(uintptr_t)&outer_step, path, sizeof path, bid, &bid_len, &fn_off)) {
        CHECK(!"this test's code in /proc/self/maps");
        return;
    }
    CHECK(bid_len > 0);
    m = (struct trove_sample_module){path, bid, bid_len};
    CHECK_EQ_INT(trove_symbolizer_new(&sym), TROVE_OK);
    /* The return address minus one: in the call of where_called, in inlined_step, inlined
     * into outer_step. */
    CHECK_EQ_INT(trove_symbolizer_lookup(sym, &m, off - 1, out, 8, &n), TROVE_OK);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK(out[0].function && !strcmp(out[0].function, "inlined_step"));
        CHECK_EQ_INT(out[0].inline_depth, 1);
        CHECK(ends_with(out[0].file, "/test_sample.c"));
        CHECK_EQ_INT(out[0].line, line_call);
        CHECK(out[1].function && !strcmp(out[1].function, "outer_step"));
        CHECK_EQ_INT(out[1].inline_depth, 0);
        CHECK(ends_with(out[1].file, "/test_sample.c"));
        CHECK_EQ_INT(out[1].line, line_outer);
    }
    /* Again: from the cache, the same answer; cap 1 keeps the innermost. */
    CHECK_EQ_INT(trove_symbolizer_lookup(sym, &m, off - 1, out, 1, &n), TROVE_OK);
    CHECK(n == 1 && out[0].function && !strcmp(out[0].function, "inlined_step"));
    /* The function's first instruction: outer_step alone. */
    CHECK_EQ_INT(trove_symbolizer_lookup(sym, &m, fn_off, out, 8, &n), TROVE_OK);
    CHECK(n == 1 && out[0].function && !strcmp(out[0].function, "outer_step") &&
          out[0].inline_depth == 0);
    trove_symbolizer_stats(sym, &st);
    CHECK(st.modules == 1 && st.unreadable == 0 && st.lookups == 3 && st.resolved == 2);
    /* The same file under another build id is not this module: nothing. */
    memcpy(wrong, bid, bid_len);
    wrong[0] ^= 0xff;
    m.build_id = wrong;
    CHECK_EQ_INT(trove_symbolizer_lookup(sym, &m, fn_off, out, 8, &n), TROVE_OK);
    CHECK_EQ_INT(n, 0);
    /* A file that is not there, and the vdso: nothing, not an error. */
    m = (struct trove_sample_module){"/nonexistent/libnothere.so", NULL, 0};
    CHECK_EQ_INT(trove_symbolizer_lookup(sym, &m, 0x1234, out, 8, &n), TROVE_OK);
    CHECK_EQ_INT(n, 0);
    m = (struct trove_sample_module){"[vdso]", NULL, 0};
    CHECK_EQ_INT(trove_symbolizer_lookup(sym, &m, 0x100, out, 8, &n), TROVE_OK);
    CHECK_EQ_INT(n, 0);
    trove_symbolizer_stats(sym, &st);
    CHECK(st.modules == 4 && st.unreadable == 3);
    CHECK_EQ_INT(trove_symbolizer_lookup(sym, NULL, 0, out, 8, &n), TROVE_ERR_INVALID);
    trove_symbolizer_free(sym);
}

/* ---- a sample set into a profile --------------------------------------------------- */

static void test_profile_build(void)
{
    struct trove_sample_set *set = NULL;
    struct trove_symbolizer *sym = NULL;
    struct trove_profile *p = NULL;
    char path[4096];
    uint8_t bid[TROVE_SAMPLE_BUILD_ID_MAX];
    size_t bid_len = 0;
    uint64_t ret = outer_step(), off = 0, fn_off = 0;
    uint32_t self_mod, gone_mod, again;
    const struct trove_profile_sample *smp;

    if (!own_module(ret, path, sizeof path, bid, &bid_len, &off) ||
        !own_module((uint64_t)(uintptr_t)&outer_step, path, sizeof path, bid, &bid_len, &fn_off))
        return;
    CHECK_EQ_INT(trove_sample_set_new(&set), TROVE_OK);
    CHECK_EQ_INT(trove_sample_set_module(set, path, bid, bid_len, &self_mod), TROVE_OK);
    CHECK_EQ_INT(trove_sample_set_module(set, "/nonexistent/libgone.so", NULL, 0, &gone_mod), TROVE_OK);
    CHECK_EQ_INT(trove_sample_set_module(set, path, bid, bid_len, &again), TROVE_OK);
    CHECK_EQ_INT(again, self_mod);
    CHECK_EQ_INT(trove_sample_set_module(set, path, bid, 500, &again), TROVE_ERR_LIMIT);
    {
        /* leaf first: outer_step's entry <- the inlined call site (a return address) <- a
         * module that is gone <- an address in no module */
        struct trove_sample_frame a[4] = {{self_mod, fn_off}, {self_mod, off}, {gone_mod, 0x1235},
                                          {TROVE_SAMPLE_NO_MODULE, 0x7fff0001}};
        /* outer_step's entry <- the gone module <- no module: shares a's two root rows */
        struct trove_sample_frame c[3] = {{self_mod, fn_off}, {gone_mod, 0x1235},
                                          {TROVE_SAMPLE_NO_MODULE, 0x7fff0001}};
        struct trove_sample_frame bad[1] = {{7, 0}};
        CHECK_EQ_INT(trove_sample_set_add(set, 300, 1, 2, a, 4), TROVE_OK);
        CHECK_EQ_INT(trove_sample_set_add(set, 100, 1, 2, a, 4), TROVE_OK);
        CHECK_EQ_INT(trove_sample_set_add(set, 200, 1, 3, c, 3), TROVE_OK);
        CHECK_EQ_INT(trove_sample_set_add(set, 150, 1, 3, NULL, 0), TROVE_OK);
        CHECK_EQ_INT(trove_sample_set_add(set, 1, 1, 1, bad, 1), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_sample_set_add(set, 1, 1, 1, a, TROVE_SAMPLE_MAX_FRAMES + 1),
                     TROVE_ERR_LIMIT);
    }
    CHECK_EQ_INT(trove_symbolizer_new(&sym), TROVE_OK);
    CHECK_EQ_INT(trove_profile_new(&p), TROVE_OK);
    CHECK_EQ_INT(trove_sample_profile(sym, set, p), TROVE_OK);
    /* Frames: outer_step (entry), inlined_step + outer_step (the call site, two levels),
     * libgone.so+0x1234 (the return address minus one), [unknown]+0x7fff0000. */
    CHECK_EQ_INT(trove_profile_frame_count(p), 5);
    {
        int seen_gone = 0, seen_unknown = 0, seen_inl = 0;
        for (uint32_t i = 0; i < trove_profile_frame_count(p); i++) {
            const struct trove_profile_frame *f = trove_profile_frame_get(p, i);
            const char *fn = trove_profile_string_get(p, f->function, NULL);
            const char *mod = trove_profile_string_get(p, f->module, NULL);
            if (!strcmp(fn, "libgone.so+0x1234")) {
                seen_gone++;
                CHECK(!strcmp(mod, "/nonexistent/libgone.so") && f->address == 0x1234 &&
                      f->file == 0 && f->line == 0);
            } else if (!strcmp(fn, "[unknown]+0x7fff0000")) {
                seen_unknown++;
                CHECK(!strcmp(mod, "[unknown]") && f->address == 0x7fff0000);
            } else if (!strcmp(fn, "inlined_step")) {
                seen_inl++;
                CHECK(f->inline_depth == 1 && f->address == off - 1 &&
                      ends_with(trove_profile_string_get(p, f->file, NULL), "/test_sample.c"));
            } else {
                CHECK(!strcmp(fn, "outer_step"));
            }
        }
        CHECK(seen_gone == 1 && seen_unknown == 1 && seen_inl == 1);
    }
    /* Stacks: the 4-frame path expands to 5 rows; the 3-frame one shares its 2 root rows. */
    CHECK_EQ_INT(trove_profile_stack_count(p), 6);
    CHECK_EQ_INT(trove_profile_sample_count(p), 4);
    smp = trove_profile_samples(p);
    CHECK(smp[0].time_ns == 100 && smp[1].time_ns == 150 && smp[2].time_ns == 200 &&
          smp[3].time_ns == 300);
    CHECK(smp[0].stack == smp[3].stack && smp[1].stack == TROVE_PROFILE_ROOT);
    {
        uint32_t up = smp[0].stack;
        for (int k = 0; k < 3; k++)
            up = trove_profile_stack_get(p, up)->parent;
        CHECK_EQ_INT(trove_profile_stack_get(p, smp[2].stack)->parent, up);
        CHECK_EQ_INT(trove_profile_stack_get(p, trove_profile_stack_get(p, up)->parent)->parent,
                     TROVE_PROFILE_ROOT);
    }
    {
        const struct trove_profile_frame *leaf =
            trove_profile_frame_get(p, trove_profile_stack_get(p, smp[0].stack)->frame);
        CHECK(leaf->address == fn_off &&
              !strcmp(trove_profile_string_get(p, leaf->function, NULL), "outer_step"));
    }
    /* Into a second profile with the same (now warm) symbolizer: the same tables. */
    {
        struct trove_profile *q = NULL;
        struct trove_symbolizer_stats st;
        uint64_t resolved;
        trove_symbolizer_stats(sym, &st);
        resolved = st.resolved;
        CHECK_EQ_INT(trove_profile_new(&q), TROVE_OK);
        CHECK_EQ_INT(trove_sample_profile(sym, set, q), TROVE_OK);
        CHECK_EQ_INT(trove_profile_frame_count(q), 5);
        CHECK_EQ_INT(trove_profile_stack_count(q), 6);
        trove_symbolizer_stats(sym, &st);
        CHECK_EQ_INT(st.resolved, resolved);
        trove_profile_free(q);
    }
    trove_profile_free(p);
    trove_symbolizer_free(sym);
    trove_sample_set_free(set);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_ring);
    RUN(test_decode);
    RUN(test_spaces);
    RUN(test_maps_lines);
    RUN(test_recorder);
    RUN(test_symbolizer);
    RUN(test_profile_build);
    return test_done();
}
