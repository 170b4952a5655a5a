/*
 * bitpack.c: FastLanes bit-packing of 1024 uint32 values (include/trove/bitpack.h).
 *
 *   lane l (0..31) holds rows r = 0..31, value i = r * 32 + l
 *   packed words of lane l:  out[0 * 32 + l], out[1 * 32 + l], ..., out[(w - 1) * 32 + l]
 *   row r occupies bits [r * w, r * w + w) of its lane's bit string, LSB first, so it sits
 *   in word r * w / 32 at shift r * w % 32 and spills into the next word when it must
 *
 * The kernels themselves are generated (gen_bitpack.py): one straight-line function per
 * width and direction, every shift a constant, a loop over the 32 independent lanes that
 * the compiler vectorizes. The same source is compiled for the baseline ISA here and with
 * AVX2 in bitpack_avx2.c; the first call picks one for the CPU.
 */
#include "trove/bitpack.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "bitpack_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trove's bit-packed formats need a little-endian host"
#endif

#define KNAME(x) generic_##x
#include "bitpack_kernels.h"

int trove__bitpack_force_generic;

/* 1: the AVX2 build, 0: the baseline one, -1: not decided yet. Decided once (the CPU and
 * the environment do not change); a relaxed atomic, since racing threads store the same. */
static _Atomic int avx2_choice = -1;

static int have_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    int c = atomic_load_explicit(&avx2_choice, memory_order_relaxed);
    if (c < 0) {
        c = __builtin_cpu_supports("avx2") && !getenv("TROVE_BITPACK_GENERIC");
        atomic_store_explicit(&avx2_choice, c, memory_order_relaxed);
    }
    return c && !trove__bitpack_force_generic;
#else
    return 0;
#endif
}

const char *trove_bitpack_kernel(void) { return have_avx2() ? "avx2" : "generic"; }

unsigned trove_bitpack_width(uint32_t v) { return v ? 32u - (unsigned)__builtin_clz(v) : 0u; }

void trove_bitpack_pack(const uint32_t *in, uint32_t *out, unsigned w, uint32_t base)
{
    assert(w <= 32);
    if (have_avx2())
        trove__bitpack_pack_avx2(in, out, w, base);
    else
        generic_pack_table[w](in, out, base);
}

void trove_bitpack_unpack(const uint32_t *in, uint32_t *out, unsigned w, uint32_t base)
{
    assert(w <= 32);
    if (have_avx2())
        trove__bitpack_unpack_avx2(in, out, w, base);
    else
        generic_unpack_table[w](in, out, base);
}

/* Outputs at least this large go through non-temporal stores (bigger than a core's L2). */
#define STREAM_MIN_BYTES ((size_t)8 << 20)

void trove_bitpack_unpack_blocks(const uint32_t *in, uint32_t *out, size_t nblocks, unsigned w,
                                 uint32_t base)
{
    assert(w <= 32);
#if defined(TROVE_HAVE_AVX2_BUILD)
    if (nblocks * TROVE_BITPACK_BLOCK * sizeof *out >= STREAM_MIN_BYTES && !((uintptr_t)out & 31) &&
        have_avx2()) {
        trove__bitpack_unpack_stream_avx2(in, out, nblocks, w, base);
        return;
    }
#endif
    for (size_t b = 0; b < nblocks; b++)
        trove_bitpack_unpack(in + b * w * 32, out + b * TROVE_BITPACK_BLOCK, w, base);
}

/* The baseline build, a loop the compiler vectorizes (SSE2 has no unsigned 32-bit min or
 * max, so it emulates them; the AVX2 build is several times faster). Consecutive values
 * span exactly n - 1 from in[0] up, so only then is each in[i] compared with in[0] + i
 * (a second pass, which also rules out a wrap past 2^32 - 1: hi = in[0] + n - 1). */
static void generic_range(const uint32_t *in, uint32_t n, uint32_t *lo_out, uint32_t *hi_out,
                          int *consecutive_out)
{
    uint32_t v0 = in[0], lo = v0, hi = v0, diff = 0;

    for (uint32_t i = 1; i < n; i++) {
        lo = in[i] < lo ? in[i] : lo;
        hi = in[i] > hi ? in[i] : hi;
    }
    if (lo == v0 && hi - lo == n - 1)
        for (uint32_t i = 1; i < n; i++)
            diff |= in[i] ^ (v0 + i);
    *lo_out = lo;
    *hi_out = hi;
    *consecutive_out = lo == v0 && hi - lo == n - 1 && diff == 0;
}

void trove_bitpack_range(const uint32_t *in, uint32_t n, uint32_t *lo_out, uint32_t *hi_out,
                         int *consecutive_out)
{
    assert(n >= 1 && n <= TROVE_BITPACK_BLOCK);
#if defined(TROVE_HAVE_AVX2_BUILD)
    if (have_avx2()) {
        trove__bitpack_range_avx2(in, n, lo_out, hi_out, consecutive_out);
        return;
    }
#endif
    generic_range(in, n, lo_out, hi_out, consecutive_out);
}

uint32_t trove_bitpack_get(const uint32_t *in, unsigned w, uint32_t base, unsigned i)
{
    unsigned l = i % 32, bit = i / 32 * w, k = bit / 32, s = bit % 32;
    uint64_t v;

    assert(w <= 32 && i < TROVE_BITPACK_BLOCK);
    if (w == 0)
        return base;
    v = in[k * 32 + l] >> s;
    if (s + w > 32)
        v |= (uint64_t)in[(k + 1) * 32 + l] << (32 - s);
    return (uint32_t)(v & (((uint64_t)1 << w) - 1)) + base;
}
