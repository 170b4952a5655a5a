/*
 * fuzz_diff.c: libFuzzer target for a comparison's sides made from outside (a service's
 * statistics, read by `trove diff` for a capture of --url: trove_diff_side_add) and the
 * comparison itself (trove_diff_json, src/capture/diff.c).
 *
 * The input is a run of rows: a byte (bit 0: side B; bit 1: by thread), a name of up to 15
 * bytes (its length in the low nibble of the next byte), count (u16), min and max (u16
 * each), and up to 15 buckets (a nibble: how many; each index u16 and count u16). Oracles:
 * a row is taken whole or refused with TROVE_ERR_INVALID leaving the side as it was
 * (refused exactly when its buckets are out of order, past TROVE_SUMMARY_BUCKETS or hold more
 * than its count); the comparison is one JSON object, its groups come in order, and a
 * tested row's effect and p are in [0, 1].
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trove/diff.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_diff_side side[2];
    struct trove_diff_options o = {0};
    struct trove_bytes out = {0};
    size_t i = 0;
    int by_thread = size > 0 && (data[0] & 2);

    CHECK(trove_diff_side_init(&side[0], "a", 0, 1, 0) == TROVE_OK);
    CHECK(trove_diff_side_init(&side[1], "b", 0, 1, 0) == TROVE_OK);
    side[0].by_thread = side[1].by_thread = by_thread;
    o.min_count = size > 1 ? data[1] % 4 : 0;
    o.limit = size > 2 ? data[2] % 8 : 0;
    while (i + 8 <= size) {
        struct trove_summary_bucket b[15];
        struct trove_diff_figures f = {0};
        const uint8_t *p = data + i;
        size_t nlen = p[1] & 15, nb = p[1] >> 4, need = 8 + nlen + 4 * nb, before;
        uint64_t sum = 0;
        int ok = 1, rc, s = p[0] & 1;
        char name[16];
        if (i + need > size)
            break;
        memcpy(name, p + 2, nlen);
        name[nlen] = 0;
        f.count = u16(p + 2 + nlen);
        f.min = u16(p + 4 + nlen);
        f.max = u16(p + 6 + nlen);
        f.total = f.count * (uint64_t)f.max;
        f.p50 = f.p90 = f.p99 = (double)f.max;
        for (size_t k = 0; k < nb; k++) {
            b[k].index = u16(p + 8 + nlen + 4 * k) % 4096;
            b[k].count = u16(p + 10 + nlen + 4 * k);
            sum += b[k].count;
            if (b[k].index >= TROVE_SUMMARY_BUCKETS || (k && b[k].index <= b[k - 1].index))
                ok = 0;
        }
        if (sum > f.count)
            ok = 0;
        before = side[s].nrows;
        rc = trove_diff_side_add(&side[s], name, nlen, by_thread ? (p[0] & 4 ? "main" : "w") : NULL,
                                 &f, b, nb);
        CHECK(rc == (ok ? TROVE_OK : TROVE_ERR_INVALID));
        CHECK(side[s].nrows == before + (ok ? 1 : 0));
        i += need;
    }
    CHECK(trove_diff_json(&side[0], &side[1], &o, &out) == TROVE_OK);
    CHECK(out.len >= 2 && out.ptr[0] == '{' && out.ptr[out.len - 1] == '}');
    CHECK(trove_bytes_append(&out, "", 1) == TROVE_OK);
    {
        /* the groups in order; effect and p in [0, 1] */
        static const char *const order[] = {"\"change\":\"slower\"", "\"change\":\"new\"",
                                            "\"change\":\"faster\"", "\"change\":\"gone\"",
                                            "\"change\":\"same\""};
        const char *p = (const char *)out.ptr;
        int last = 0;
        while ((p = strstr(p, "\"change\":\"")) != NULL) {
            int g = -1;
            for (int k = 0; k < 5; k++)
                if (!strncmp(p, order[k], strlen(order[k])))
                    g = k;
            CHECK(g >= last);
            last = g;
            p++;
        }
        for (p = (const char *)out.ptr; (p = strstr(p, "\"effect\":")) != NULL; p++) {
            double e = strtod(p + 9, NULL);
            CHECK(e >= 0 && e <= 1);
        }
        for (p = (const char *)out.ptr; (p = strstr(p, ",\"p\":")) != NULL; p++) {
            double v = strtod(p + 5, NULL);
            CHECK(v >= 0 && v <= 1);
        }
    }
    trove_bytes_free(&out);
    trove_diff_side_free(&side[0]);
    trove_diff_side_free(&side[1]);
    return 0;
}
