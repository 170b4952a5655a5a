/*
 * fuzz_perf_records.c: libFuzzer target for the perf ring reader and record decoder
 * (src/sample/perf_records.c) and the recorder that applies the records
 * (src/sample/recorder.c): the bytes the kernel writes into the rings, which trove checks
 * as it checks any input.
 *
 * The input is a ring: byte 0 is log2 of its size (3 .. 16, taken modulo), bytes 4..7 the
 * tail's offset in it, bytes 8..11 how many bytes were written (head - tail, which may be
 * over the size), then the ring's data (cut or zero-padded to the size). The ring is read
 * to its end; every record is decoded, and the input whole is decoded as one record too.
 * Oracles: a record handed out is at least a header and at most what was written; tail
 * only moves forward and ends at head; a decoded sample's callchain fills it exactly; a
 * decoded mapping's file name and a comm end inside the record; and the recorder (offline:
 * no /proc, no files) takes the ring with no more samples or switches than records.
 * Seeds: tests/unit/test_sample.c writes its hand-built rings with TROVE_PERF_CORPUS set.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "sample/perf_records.h"
#include "sample/recorder.h"
#include "trove/sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t scratch[TROVE__PERF_RECORD_MAX];

static void check_record(const uint8_t *rec, size_t len)
{
    struct trove__perf_rec r;
    if (trove__perf_decode(rec, len, &r, NULL) != TROVE_OK)
        return;
    if (r.type == PERF_RECORD_SAMPLE) {
        CHECK(32 + r.nr * 8 == len);
        if (r.nr)
            (void)trove__perf_ip(&r, r.nr - 1);
    }
    if (r.type == PERF_RECORD_MMAP || r.type == PERF_RECORD_MMAP2) {
        CHECK((const uint8_t *)r.filename > rec &&
              (const uint8_t *)r.filename + strlen(r.filename) < rec + len);
        CHECK(r.len > 0 && r.addr + r.len > r.addr && r.build_id_len <= 20);
    }
    if (r.type == PERF_RECORD_COMM)
        CHECK((const uint8_t *)r.comm + strlen(r.comm) < rec + len);
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove__perf_ring ring, again;
    struct trove_sample_set *set = NULL;
    struct trove__recorder *rec = NULL;
    uint8_t *buf;
    size_t rsize, records = 0;
    uint64_t start;
    const uint8_t *got;
    size_t len;
    int k;

    if (size >= 8 && size <= TROVE__PERF_RECORD_MAX) { /* the input as one record */
        uint8_t *one = malloc(size);
        if (one) {
            memcpy(one, data, size);
            check_record(one, size);
            free(one);
        }
    }
    if (size < 12)
        return 0;
    rsize = (size_t)1 << (3 + data[0] % 14);
    if (!(buf = calloc(1, rsize)))
        return 0;
    memcpy(buf, data + 12, size - 12 < rsize ? size - 12 : rsize);
    start = (uint64_t)rsize * 5 + get32(data + 4) % rsize;
    ring = (struct trove__perf_ring){buf, rsize, start + get32(data + 8) % (2 * rsize + 9), start};
    again = ring;
    while ((k = trove__perf_ring_next(&ring, scratch, &got, &len, NULL)) == 1) {
        CHECK(len >= 8 && len <= TROVE__PERF_RECORD_MAX);
        CHECK(ring.tail <= ring.head && ring.tail >= start + len);
        CHECK(got == scratch || (got >= buf && got + len <= buf + rsize));
        check_record(got, len);
        records++;
    }
    CHECK(k == 0 || k == TROVE_ERR_CORRUPT);
    CHECK(ring.tail == ring.head);

    if (trove_sample_set_new(&set) == TROVE_OK && trove__recorder_new(set, &rec) == TROVE_OK) {
        trove__recorder_offline(rec, 1);
        if (trove__recorder_read(rec, &again, 1) == TROVE_OK) {
            const struct trove_sampler_stats *st = trove__recorder_stats(rec);
            CHECK(again.tail == again.head);
            CHECK(st->samples + st->switches + st->bad_records <= records);
            CHECK(trove_sample_set_count(set) <= st->samples);
            for (size_t i = 0; i < trove_sample_set_count(set); i++) {
                struct trove_sample s;
                trove_sample_set_get(set, i, &s);
                CHECK(s.n_frames <= TROVE_SAMPLE_MAX_FRAMES);
                for (uint32_t j = 0; j < s.n_frames; j++)
                    CHECK(s.frames[j].module == TROVE_SAMPLE_NO_MODULE ||
                          s.frames[j].module < trove_sample_set_module_count(set));
            }
        }
    }
    trove__recorder_free(rec);
    trove_sample_set_free(set);
    free(buf);
    return 0;
}
