/*
 * profile_wire.c: the samples frame — a profile's rows (trove/profile.h) as wire frames of
 * format 6 (docs/formats/wire.md, "Format 6: samples"), so that a profile travels in a wire
 * stream beside events and is stored in a capture's profile objects the same way.
 *
 * A frame carries the rows a profile gained since some earlier counts, in the order of the
 * tables (strings, frames, stacks, samples, switches), each table's part saying where it
 * starts; its body is deflated (libdeflate level 1, as format 3), and its header's count is
 * its samples:
 *
 *   body    := strings frames stacks samples switches
 *   strings := base:varint n:varint (len:varint bytes[len])*n
 *   frames  := base:varint n:varint (module function file line address inline_depth)*n
 *   stacks  := base:varint n:varint (frame parent)*n
 *   samples := n:varint (dt:zigzag pid tid stack)*n
 *   switches:= n:varint (dt:zigzag pid tid flags:u8)*n
 *
 * (every field a varint but flags; dt is a time's difference from the previous row's of
 * its table in the frame, the first from 0). The encoder closes a frame when its body
 * passes about 1 MiB or its samples reach TROVE_PROFILE_FRAME_MAX_SAMPLES, so a long
 * table spreads over several frames, each starting where the last ended.
 *
 * Decoding appends row by row through the profile's own adds, which check every reference;
 * an add that deduplicates (returns an id other than the next) means the frame repeats a
 * row, and any failure truncates the profile back to the counts it had.
 */
#include "trove/profile.h"
#include "profile_internal.h"
#include "wire_internal.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/varint.h"

#include <inttypes.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#define BODY_TARGET ((size_t)1 << 20) /* a frame closes once its body passes this */
/* Most bytes a row of each table takes (a string: 5 and its bytes). */
#define FRAME_ROW_MAX (5 * 5 + 10)
#define STACK_ROW_MAX (5 + 5)
#define SAMPLE_ROW_MAX (10 + 5 * 3)
#define SWITCH_ROW_MAX (10 + 5 * 2 + 1)
#define SECTION_MAX 15 /* a base (u64) and a count (u32) */

/* ---- encoding ----------------------------------------------------------------------------- */

struct enc {
    const struct trove_profile *p;
    struct trove_profile_counts at, end;
    struct trove_bytes body;
    size_t budget, worst; /* bytes left of the target, and the worst case taken so far */
    int any;              /* a row is in the frame */
};

/* Whether a row of at most `need` bytes goes into the frame being filled: it fits what is
 * left of the target, or the frame is still empty (a frame always carries one row). */
static int take(struct enc *e, size_t need, size_t rows)
{
    if (rows >= TROVE_PROFILE_FRAME_MAX_ROWS || (need > e->budget && e->any))
        return 0;
    e->budget -= need < e->budget ? need : e->budget;
    e->worst += need;
    e->any = 1;
    return 1;
}

/* One frame's body from e->at on, advancing e->at; its sample count in *samples_out. */
static int fill_body(struct enc *e, uint32_t *samples_out)
{
    const struct trove_profile *p = e->p;
    const struct trove_profile_sample *sm = trove_profile_samples(p);
    const struct trove_profile_switch *sw = trove_profile_switches(p);
    size_t ns = 0, nf = 0, nk = 0, nm = 0, nw = 0, len;
    struct trove_profile_counts a = e->at;
    uint64_t prev;
    uint8_t *q;
    int rc;

    /* How many rows of each table go in: a table's rows only once the one before it is
     * out, so that every row refers to rows already sent. */
    e->budget = BODY_TARGET;
    e->worst = 5 * SECTION_MAX;
    e->any = 0;
    while (a.strings + ns < e->end.strings &&
           (trove_profile_string_get(p, (uint32_t)(a.strings + ns), &len), take(e, 5 + len, ns)))
        ns++;
    while (a.strings + ns == e->end.strings && a.frames + nf < e->end.frames &&
           take(e, FRAME_ROW_MAX, nf))
        nf++;
    while (a.frames + nf == e->end.frames && a.strings + ns == e->end.strings &&
           a.stacks + nk < e->end.stacks && take(e, STACK_ROW_MAX, nk))
        nk++;
    while (a.stacks + nk == e->end.stacks && a.frames + nf == e->end.frames &&
           a.strings + ns == e->end.strings && a.samples + nm < e->end.samples &&
           nm < TROVE_PROFILE_FRAME_MAX_SAMPLES && take(e, SAMPLE_ROW_MAX, nm))
        nm++;
    while (a.samples + nm == e->end.samples && a.stacks + nk == e->end.stacks &&
           a.frames + nf == e->end.frames && a.strings + ns == e->end.strings &&
           a.switches + nw < e->end.switches && take(e, SWITCH_ROW_MAX, nw))
        nw++;

    e->body.len = 0;
    if ((rc = trove_bytes_reserve(&e->body, e->worst)) != TROVE_OK)
        return rc;
    q = e->body.ptr;
    q = trove_put_varint(q, a.strings);
    q = trove_put_varint(q, ns);
    for (size_t i = 0; i < ns; i++) {
        const char *str = trove_profile_string_get(p, (uint32_t)(a.strings + i), &len);
        q = trove_put_varint(q, len);
        memcpy(q, str, len);
        q += len;
    }
    q = trove_put_varint(q, a.frames);
    q = trove_put_varint(q, nf);
    for (size_t i = 0; i < nf; i++) {
        const struct trove_profile_frame *f = trove_profile_frame_get(p, (uint32_t)(a.frames + i));
        q = trove_put_varint(q, f->module);
        q = trove_put_varint(q, f->function);
        q = trove_put_varint(q, f->file);
        q = trove_put_varint(q, f->line);
        q = trove_put_varint(q, f->address);
        q = trove_put_varint(q, f->inline_depth);
    }
    q = trove_put_varint(q, a.stacks);
    q = trove_put_varint(q, nk);
    for (size_t i = 0; i < nk; i++) {
        const struct trove_profile_stack *st = trove_profile_stack_get(p, (uint32_t)(a.stacks + i + 1));
        q = trove_put_varint(q, st->frame);
        q = trove_put_varint(q, st->parent);
    }
    q = trove_put_varint(q, nm);
    prev = 0;
    for (size_t i = 0; i < nm; i++) {
        const struct trove_profile_sample *x = &sm[a.samples + i];
        q = trove_put_varint(q, trove_zigzag64((int64_t)(x->time_ns - prev)));
        q = trove_put_varint(q, x->pid);
        q = trove_put_varint(q, x->tid);
        q = trove_put_varint(q, x->stack);
        prev = x->time_ns;
    }
    q = trove_put_varint(q, nw);
    prev = 0;
    for (size_t i = 0; i < nw; i++) {
        const struct trove_profile_switch *x = &sw[a.switches + i];
        q = trove_put_varint(q, trove_zigzag64((int64_t)(x->time_ns - prev)));
        q = trove_put_varint(q, x->pid);
        q = trove_put_varint(q, x->tid);
        *q++ = (uint8_t)x->flags;
        prev = x->time_ns;
    }
    e->body.len = (size_t)(q - e->body.ptr);
    e->at.strings += ns;
    e->at.frames += nf;
    e->at.stacks += nk;
    e->at.samples += nm;
    e->at.switches += nw;
    *samples_out = (uint32_t)nm;
    return TROVE_OK;
}

static int counts_le(const struct trove_profile_counts *a, const struct trove_profile_counts *b)
{
    return a->strings <= b->strings && a->frames <= b->frames && a->stacks <= b->stacks &&
           a->samples <= b->samples && a->switches <= b->switches;
}

int trove_profile_encode(const struct trove_profile *p, const struct trove_profile_counts *from,
                         struct trove_bytes *out)
{
    struct libdeflate_compressor *c = NULL;
    struct enc e;
    size_t start;
    int rc = TROVE_OK;

    if (!p || !out)
        return TROVE_ERR_INVALID;
    memset(&e, 0, sizeof e);
    e.p = p;
    trove_profile_get_counts(p, &e.end);
    if (from)
        e.at = *from;
    else
        e.at.strings = 1; /* a new profile's: string 0, "", every profile has */
    if (!e.at.strings || !counts_le(&e.at, &e.end))
        return TROVE_ERR_INVALID;
    start = out->len;
    if (!memcmp(&e.at, &e.end, sizeof e.at))
        return TROVE_OK;
    if (!(c = libdeflate_alloc_compressor(1))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    while (memcmp(&e.at, &e.end, sizeof e.at)) {
        uint32_t samples;
        size_t bound, packed;
        if ((rc = fill_body(&e, &samples)) != TROVE_OK)
            goto out;
        bound = libdeflate_deflate_compress_bound(c, e.body.len);
        if ((rc = trove_bytes_reserve(out, TROVE_WIRE_HEADER_SIZE + bound)) != TROVE_OK)
            goto out;
        packed = libdeflate_deflate_compress(c, e.body.ptr, e.body.len,
                                             out->ptr + out->len + TROVE_WIRE_HEADER_SIZE, bound);
        if (packed == 0) { /* cannot happen with a bound-sized buffer */
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        trove__wire_put_header(out->ptr + out->len, TROVE_WIRE_SAMPLES, TROVE_WIRE_VERSION,
                               samples, (uint32_t)packed, (uint32_t)e.body.len);
        out->len += TROVE_WIRE_HEADER_SIZE + packed;
    }
out:
    if (rc != TROVE_OK)
        out->len = start;
    libdeflate_free_compressor(c);
    trove_bytes_free(&e.body);
    return rc;
}

/* ---- decoding ----------------------------------------------------------------------------- */

struct dec {
    const uint8_t *p, *start, *end;
    struct trove_diag *diag;
};

/* The offset of the body's byte at q, for messages: the body is inflated, so offsets are
 * into it, after the frame's header. */
static uint64_t off(const struct dec *d) { return (uint64_t)(d->p - d->start); }

static int get(struct dec *d, unsigned bits, uint64_t *v, const char *what)
{
    int why = 0;
    const uint8_t *q = trove_get_varint(d->p, d->end, bits, v, &why);
    if (!q)
        return TROVE_FAIL(d->diag, why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT,
                          TROVE_WIRE_HEADER_SIZE,
                          "samples frame: %s at byte %" PRIu64 " of the body %s", what, off(d),
                          why == 1 ? "runs past its end" : "is not a valid varint");
    d->p = q;
    return TROVE_OK;
}

static int bad(struct dec *d, int code, const char *what, uint64_t row, const char *why)
{
    return TROVE_FAIL(d->diag, code, TROVE_WIRE_HEADER_SIZE,
                      "samples frame: %s %" PRIu64 " (at byte %" PRIu64 " of the body) %s", what,
                      row, off(d), why);
}

/* A section's head: its base, which must be the profile's count, and its row count. */
static int head(struct dec *d, size_t have, uint64_t *n, const char *what)
{
    uint64_t base;
    int rc;
    if ((rc = get(d, 64, &base, what)) != TROVE_OK || (rc = get(d, 32, n, what)) != TROVE_OK)
        return rc;
    if (base != have)
        return TROVE_FAIL(d->diag, TROVE_ERR_CORRUPT, TROVE_WIRE_HEADER_SIZE,
                          "samples frame: its %s start at %" PRIu64 "; the profile holds %zu "
                          "(a frame of another stream, or one missed)",
                          what, base, have);
    if (*n > TROVE_PROFILE_FRAME_MAX_ROWS || *n > (uint64_t)(d->end - d->p))
        return TROVE_FAIL(d->diag, TROVE_ERR_CORRUPT, TROVE_WIRE_HEADER_SIZE,
                          "samples frame: %" PRIu64 " %s in %zu bytes (at most %u a frame, "
                          "one byte a row at least)",
                          *n, what, (size_t)(d->end - d->p), TROVE_PROFILE_FRAME_MAX_ROWS);
    return TROVE_OK;
}

static int decode_body(struct trove_profile *p, struct dec *d, uint32_t count)
{
    struct trove_profile_counts c;
    uint64_t n, v[6], prev;
    uint32_t id;
    int rc;

    trove_profile_get_counts(p, &c);
    if ((rc = head(d, c.strings, &n, "strings")) != TROVE_OK)
        return rc;
    for (uint64_t i = 0; i < n; i++) {
        if ((rc = get(d, 32, &v[0], "a string's length")) != TROVE_OK)
            return rc;
        if (v[0] > TROVE_PROFILE_STRING_MAX || v[0] > (uint64_t)(d->end - d->p))
            return bad(d, TROVE_ERR_CORRUPT, "string", c.strings + i,
                       "is longer than the body or the limit of 65535 bytes");
        if (memchr(d->p, 0, (size_t)v[0]))
            return bad(d, TROVE_ERR_CORRUPT, "string", c.strings + i, "holds a NUL byte");
        if ((rc = trove_profile_string(p, (const char *)d->p, (size_t)v[0], &id)) != TROVE_OK)
            return rc == TROVE_ERR_NOMEM ? rc : bad(d, rc, "string", c.strings + i, "is refused");
        if (id != c.strings + i)
            return bad(d, TROVE_ERR_CORRUPT, "string", c.strings + i, "repeats an earlier one");
        d->p += v[0];
    }
    c.strings += (size_t)n;

    if ((rc = head(d, c.frames, &n, "frames")) != TROVE_OK)
        return rc;
    for (uint64_t i = 0; i < n; i++) {
        struct trove_profile_frame f;
        if ((rc = get(d, 32, &v[0], "a frame's module")) || (rc = get(d, 32, &v[1], "a frame's function")) ||
            (rc = get(d, 32, &v[2], "a frame's file")) || (rc = get(d, 32, &v[3], "a frame's line")) ||
            (rc = get(d, 64, &v[4], "a frame's address")) ||
            (rc = get(d, 32, &v[5], "a frame's inline depth")))
            return rc;
        if (v[0] >= c.strings || v[1] >= c.strings || v[2] >= c.strings)
            return bad(d, TROVE_ERR_CORRUPT, "frame", c.frames + i, "names a string it does not have");
        f = (struct trove_profile_frame){(uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2],
                                         (uint32_t)v[3], v[4], (uint32_t)v[5]};
        if ((rc = trove_profile_frame(p, &f, &id)) != TROVE_OK)
            return rc;
        if (id != c.frames + i)
            return bad(d, TROVE_ERR_CORRUPT, "frame", c.frames + i,
                       "repeats the module, address and inline depth of an earlier one");
    }
    c.frames += (size_t)n;

    if ((rc = head(d, c.stacks, &n, "stacks")) != TROVE_OK)
        return rc;
    for (uint64_t i = 0; i < n; i++) {
        if ((rc = get(d, 32, &v[0], "a stack's frame")) || (rc = get(d, 32, &v[1], "a stack's parent")))
            return rc;
        if (v[0] >= c.frames || v[1] > c.stacks + i)
            return bad(d, TROVE_ERR_CORRUPT, "stack", c.stacks + i + 1,
                       "names a frame or a parent stack it does not have");
        if ((rc = trove_profile_stack(p, (uint32_t)v[1], (uint32_t)v[0], &id)) != TROVE_OK)
            return rc;
        if (id != c.stacks + i + 1)
            return bad(d, TROVE_ERR_CORRUPT, "stack", c.stacks + i + 1, "repeats an earlier one");
    }
    c.stacks += (size_t)n;

    if ((rc = get(d, 32, &n, "the samples' count")) != TROVE_OK)
        return rc;
    if (n != count)
        return TROVE_FAIL(d->diag, TROVE_ERR_CORRUPT, 4,
                          "samples frame: its header counts %u samples, its body %" PRIu64, count, n);
    prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        struct trove_profile_sample s;
        if ((rc = get(d, 64, &v[0], "a sample's time")) || (rc = get(d, 32, &v[1], "a sample's pid")) ||
            (rc = get(d, 32, &v[2], "a sample's tid")) || (rc = get(d, 32, &v[3], "a sample's stack")))
            return rc;
        if (v[3] > c.stacks)
            return bad(d, TROVE_ERR_CORRUPT, "sample", c.samples + i, "names a stack it does not have");
        prev += (uint64_t)trove_unzigzag64(v[0]);
        s = (struct trove_profile_sample){prev, (uint32_t)v[1], (uint32_t)v[2], (uint32_t)v[3]};
        if ((rc = trove_profile_sample(p, &s)) != TROVE_OK)
            return rc;
    }

    if ((rc = get(d, 32, &n, "the switches' count")) != TROVE_OK)
        return rc;
    if (n > TROVE_PROFILE_FRAME_MAX_ROWS || n > (uint64_t)(d->end - d->p))
        return bad(d, TROVE_ERR_CORRUPT, "switches: a count of", n, "past the body or the limit");
    prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        struct trove_profile_switch sw;
        if ((rc = get(d, 64, &v[0], "a switch's time")) || (rc = get(d, 32, &v[1], "a switch's pid")) ||
            (rc = get(d, 32, &v[2], "a switch's tid")))
            return rc;
        if (d->p >= d->end)
            return bad(d, TROVE_ERR_TRUNCATED, "switch", c.switches + i, "ends before its flags");
        prev += (uint64_t)trove_unzigzag64(v[0]);
        sw = (struct trove_profile_switch){prev, (uint32_t)v[1], (uint32_t)v[2], *d->p++};
        if ((rc = trove_profile_switch(p, &sw)) != TROVE_OK)
            return rc == TROVE_ERR_NOMEM ? rc
                                         : bad(d, TROVE_ERR_CORRUPT, "switch", c.switches + i,
                                               "has flags other than 0 (in), 1 (out), 3 (out, preempted)");
    }
    if (d->p != d->end)
        return TROVE_FAIL(d->diag, TROVE_ERR_CORRUPT, TROVE_WIRE_HEADER_SIZE,
                          "samples frame: %zu bytes after its last switch", (size_t)(d->end - d->p));
    return TROVE_OK;
}

int trove_profile_decode(struct trove_profile *p, const uint8_t *buf, size_t len,
                         size_t *frame_len_out, struct trove_diag *diag)
{
    struct trove_wire_header h;
    struct trove_profile_counts before;
    struct libdeflate_decompressor *z = NULL;
    uint8_t *body = NULL;
    size_t used = 0, got = 0;
    struct dec d;
    int rc;

    if (!p || (!buf && len))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "samples frame: no profile or no buffer");
    if ((rc = trove_wire_parse_header(buf, len, &h, diag)) != TROVE_OK)
        return rc;
    if (h.format != TROVE_WIRE_SAMPLES)
        return TROVE_FAIL(diag, TROVE_ERR_FORMAT, 2, "a %s frame where a samples frame was expected",
                          trove_wire_format_name(h.format));
    if (len - TROVE_WIRE_HEADER_SIZE < h.payload_len)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "samples frame truncated: payload of %u bytes, %zu present",
                          h.payload_len, len - TROVE_WIRE_HEADER_SIZE);
    trove_profile_get_counts(p, &before);
    if (!(body = trove__malloc(h.raw_len)) || !(z = libdeflate_alloc_decompressor())) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory for a %u-byte samples frame",
                        h.raw_len);
        goto out;
    }
    switch (libdeflate_deflate_decompress_ex(z, buf + TROVE_WIRE_HEADER_SIZE, h.payload_len, body,
                                             h.raw_len, &used, &got)) {
    case LIBDEFLATE_SUCCESS: break;
    case LIBDEFLATE_INSUFFICIENT_SPACE:
        rc = TROVE_FAIL(diag, TROVE_ERR_BOMB, TROVE_WIRE_HEADER_SIZE,
                        "samples frame inflates past its declared %u bytes", h.raw_len);
        goto out;
    default:
        rc = TROVE_FAIL(diag, TROVE_ERR_INFLATE, TROVE_WIRE_HEADER_SIZE,
                        "samples frame: malformed deflate stream");
        goto out;
    }
    if (got != h.raw_len || used != h.payload_len) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, TROVE_WIRE_HEADER_SIZE + used,
                        "samples frame: the deflate stream gives %zu of %u bytes and ends %zu "
                        "bytes before the payload does",
                        got, h.raw_len, (size_t)h.payload_len - used);
        goto out;
    }
    d = (struct dec){body, body, body + h.raw_len, diag};
    if ((rc = decode_body(p, &d, h.count)) != TROVE_OK)
        goto out;
    if (frame_len_out)
        *frame_len_out = TROVE_WIRE_HEADER_SIZE + (size_t)h.payload_len;
out:
    if (rc != TROVE_OK)
        trove__profile_truncate(p, &before);
    libdeflate_free_decompressor(z);
    free(body);
    return rc;
}
