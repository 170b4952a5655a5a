/*
 * fuzz_samples.c: libFuzzer target for the samples frame (wire format 6,
 * src/codec/profile_wire.c): the input is a stream of frames decoded one after another into
 * one profile, as a live viewer or a capture's profile objects are read.
 *
 * Oracles: a frame that is refused leaves the profile's counts as they were before it (and
 * the stream stops there); what was read re-encodes (trove_profile_encode takes every row the
 * decoder gives) and decodes into a new profile with the same rows; and a reader of events
 * (trove_wire_decode) passes over every frame the profile decoder took, with no events.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/profile.h"
#include "trove/wire.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_counts(const struct trove_profile_counts *a, const struct trove_profile_counts *b)
{
    return a->strings == b->strings && a->frames == b->frames && a->stacks == b->stacks &&
           a->samples == b->samples && a->switches == b->switches;
}

static void check_same(const struct trove_profile *a, const struct trove_profile *b)
{
    struct trove_profile_counts ca, cb;
    trove_profile_get_counts(a, &ca);
    trove_profile_get_counts(b, &cb);
    CHECK(same_counts(&ca, &cb));
    for (uint32_t i = 0; i < ca.strings; i++) {
        size_t la, lb;
        const char *x = trove_profile_string_get(a, i, &la), *y = trove_profile_string_get(b, i, &lb);
        CHECK(la == lb && !memcmp(x, y, la));
    }
    for (uint32_t i = 0; i < ca.frames; i++) {
        const struct trove_profile_frame *x = trove_profile_frame_get(a, i);
        const struct trove_profile_frame *y = trove_profile_frame_get(b, i);
        CHECK(x->module == y->module && x->function == y->function && x->file == y->file &&
              x->line == y->line && x->address == y->address && x->inline_depth == y->inline_depth);
    }
    for (uint32_t i = 1; i <= ca.stacks; i++) {
        const struct trove_profile_stack *x = trove_profile_stack_get(a, i);
        const struct trove_profile_stack *y = trove_profile_stack_get(b, i);
        CHECK(x->frame == y->frame && x->parent == y->parent && x->parent < i);
    }
    for (size_t i = 0; i < ca.samples; i++) {
        const struct trove_profile_sample *x = &trove_profile_samples(a)[i];
        const struct trove_profile_sample *y = &trove_profile_samples(b)[i];
        CHECK(x->time_ns == y->time_ns && x->pid == y->pid && x->tid == y->tid &&
              x->stack == y->stack && x->stack <= ca.stacks);
    }
    for (size_t i = 0; i < ca.switches; i++) {
        const struct trove_profile_switch *x = &trove_profile_switches(a)[i];
        const struct trove_profile_switch *y = &trove_profile_switches(b)[i];
        CHECK(x->time_ns == y->time_ns && x->pid == y->pid && x->tid == y->tid &&
              x->flags == y->flags);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct trove_wire_decoder *dec;
    struct trove_profile *p = NULL, *q = NULL;
    struct trove_bytes again = {0};
    size_t at = 0;

    if (!dec)
        CHECK(trove_wire_decoder_new(&dec) == TROVE_OK);
    CHECK(trove_profile_new(&p) == TROVE_OK);
    while (at < size) {
        struct trove_profile_counts before, after;
        struct trove_diag diag = {0};
        size_t len = 0;
        int rc;
        trove_profile_get_counts(p, &before);
        rc = trove_profile_decode(p, data + at, size - at, &len, &diag);
        trove_profile_get_counts(p, &after);
        if (rc != TROVE_OK) {
            CHECK(diag.code == rc && same_counts(&before, &after));
            break;
        }
        CHECK(len >= TROVE_WIRE_HEADER_SIZE && len <= size - at);
        {
            struct trove_wire_frame fr;
            struct trove_event ev[1];
            CHECK(trove_wire_decode(dec, data + at, size - at, ev, 1, NULL, &fr, NULL) == TROVE_OK);
            CHECK(fr.format == TROVE_WIRE_SAMPLES && fr.n_events == 0 && fr.frame_len == len);
        }
        at += len;
    }
    CHECK(trove_profile_encode(p, NULL, &again) == TROVE_OK);
    CHECK(trove_profile_new(&q) == TROVE_OK);
    for (size_t off = 0; off < again.len;) {
        size_t len = 0;
        CHECK(trove_profile_decode(q, again.ptr + off, again.len - off, &len, NULL) == TROVE_OK);
        off += len;
    }
    check_same(p, q);
    trove_bytes_free(&again);
    trove_profile_free(p);
    trove_profile_free(q);
    return 0;
}
