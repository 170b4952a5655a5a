/*
 * fuzz_wire.c: libFuzzer target for the wire decoder (raw, packed, deflate, names, columnar
 * and model frames). The input is treated as a wire stream: frames are decoded one after
 * another until one fails. Every frame that decodes is re-encoded in all five event formats
 * (and columnar through deflate) and decoded again, which must give the same events (a round-trip oracle, not only a crash check); the
 * names gathered re-encode to one frame that decodes to the same table.
 * Each frame is also decoded by the packed decoder's generic path, which must agree with
 * the default (BMI2) path on the result code and the events.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/wire_internal.h"
#include "trove/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct trove_event ev[TROVE_WIRE_MAX_EVENTS], back[TROVE_WIRE_MAX_EVENTS];
    static const int formats[6] = {TROVE_WIRE_RAW, TROVE_WIRE_PACKED, TROVE_WIRE_DEFLATE,
                                   TROVE_WIRE_COLUMNAR, TROVE_WIRE_COLUMNAR_DEFLATE,
                                   TROVE_WIRE_MODEL};
    struct trove_wire_encoder *enc = NULL;
    struct trove_wire_decoder *dec = NULL;
    struct trove_names *names = NULL, *back_names = NULL;
    struct trove_bytes b = {0};
    struct trove_wire_frame fr, fr2;
    struct trove_diag diag;
    size_t at = 0;

    if (trove_wire_encoder_new(&enc) || trove_wire_decoder_new(&dec) || trove_names_new(&names))
        goto out;
    while (at < size) {
        int rc, rc2;
        trove__packed_force_generic = 1;
        rc2 = trove_wire_decode(dec, data + at, size - at, back, TROVE_WIRE_MAX_EVENTS, NULL, &fr2,
                                &diag);
        trove__packed_force_generic = 0;
        rc = trove_wire_decode(dec, data + at, size - at, ev, TROVE_WIRE_MAX_EVENTS, names, &fr,
                               &diag);
        if (rc != rc2 || (rc == TROVE_OK && (fr.n_events != fr2.n_events ||
                                             memcmp(ev, back, fr.n_events * sizeof *ev) != 0)))
            abort();
        if (rc != TROVE_OK)
            break;
        if (fr.frame_len == 0 || fr.frame_len > size - at)
            abort();
        at += fr.frame_len;
        if (fr.format == TROVE_WIRE_NAMES)
            continue;
        for (size_t i = 0; i < fr.n_events; i++)
            ev[i].pad = 0; /* raw carries pad as is; the encoders require 0 */
        for (int f = 0; f < 6; f++) {
            b.len = 0;
            if (trove_wire_encode(enc, formats[f], ev, fr.n_events, &b) != TROVE_OK)
                abort();
            if (trove_wire_decode(dec, b.ptr, b.len, back, TROVE_WIRE_MAX_EVENTS, NULL, &fr2,
                                  &diag) != TROVE_OK ||
                fr2.n_events != fr.n_events || fr2.frame_len != b.len ||
                memcmp(ev, back, fr.n_events * sizeof *ev) != 0)
                abort();
        }
    }
    /* The names table re-encodes to a frame that decodes to the same table (sort indexes
     * and all), in version 1 exactly when it holds no sort index. */
    b.len = 0;
    if (trove_names_new(&back_names) != TROVE_OK)
        goto out;
    if (trove_wire_encode_names(names, 0, trove_names_count(names), &b) != TROVE_OK ||
        trove_wire_decode(dec, b.ptr, b.len, ev, 1, back_names, &fr, &diag) != TROVE_OK ||
        !trove_names_equal(names, back_names))
        abort();
    {
        int has_sort = 0;
        for (size_t i = 0; i < trove_names_count(names); i++) {
            struct trove_name_entry e;
            trove_names_entry(names, i, &e);
            has_sort |= trove_name_type_is_sort(e.type);
        }
        if (b.ptr[3] != (has_sort ? TROVE_WIRE_NAMES_VERSION : TROVE_WIRE_VERSION))
            abort();
    }
out:
    trove_bytes_free(&b);
    trove_names_free(back_names);
    trove_names_free(names);
    trove_wire_decoder_free(dec);
    trove_wire_encoder_free(enc);
    return 0;
}
