/*
 * fuzz_view.c: libFuzzer target for the view frame decoder (src/capture/view_frame.c,
 * docs/formats/view.md), the answer of GET /api/captures/NAME/view that the page decodes
 * with the same checks (web/view.js).
 *
 * A frame that decodes must hold together: every cell's track is one of its tracks, every
 * track's events and cells lie inside the frame's arrays and in order, and the cells' columns
 * cover the frame's range. On error the output is untouched and diag holds the error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/summary.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_view_frame f, untouched;
    struct trove_diag diag = {0};
    int rc;

    memset(&f, 0x5a, sizeof f);
    untouched = f;
    rc = trove_view_decode(data, size, &f, &diag);
    if (rc != TROVE_OK) {
        CHECK(diag.code == rc && !memcmp(&f, &untouched, sizeof f));
        return 0;
    }
    CHECK(f.to_ns > f.from_ns && f.shift <= 63);
    for (size_t t = 0, e = 0, c = 0; t < f.ntracks; t++) {
        const struct trove_view_track *tr = &f.tracks[t];
        CHECK(tr->first_event == e && tr->first_cell == c);
        e += tr->nevents;
        c += tr->ncells;
        CHECK(e <= f.nevents && c <= f.ncells);
        for (size_t i = tr->first_cell; i < tr->first_cell + tr->ncells && i < f.ncells; i++)
            CHECK(f.cells[i].track == t && f.cells[i].lane < TROVE_SUMMARY_LANES &&
                  f.cells[i].col >= f.from_ns >> f.shift && f.cells[i].col <= (f.to_ns - 1) >> f.shift);
    }
    for (size_t i = 1; i < f.nnames; i++)
        CHECK(f.names[i].id > f.names[i - 1].id && f.names[i].str[f.names[i].len] == 0);
    trove_view_frame_free(&f);
    return 0;
}
