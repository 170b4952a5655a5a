/*
 * capture.c: writing, describing and listing captures (include/trove/capture.h), and
 * reading their names, flows and profile back. A capture is an object volume: slot 0 the
 * header (capture_header.c), slot 1 the names as names frames, slot 2+k segment k as
 * packed+deflate frames, slot 2+S the flows object when the capture has flow rows, then
 * the names' other parts when they pass one object (cut at frame boundaries, each part at
 * most an object) and the profile's objects. docs/formats/capture.md has the layouts;
 * replay is replay.c.
 *
 * Every object is a function of the events, the names and the two sizes alone (no time,
 * no name, no random seed), so writing the same capture again makes the same objects and
 * the store keeps them once. A write streams: the names are encoded and put a part at a
 * time, then each segment is encoded, put and dropped before the next, so memory stays one
 * segment and one names part (plus the names table and the header index) whatever the
 * capture's size. The volume is committed once, after every object is in, so
 * a capture is replaced whole or not at all: a failed write leaves the previous capture of
 * that name (or, for a new name, nothing).
 */
#include "capture_internal.h"
#include "summary_internal.h"
#include "common/alloc.h"
#include "common/endian.h"
#include "common/fail.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trove/attrs.h"
#include "trove/profile.h"
#include "trove/testing.h"
#include "trove/wire.h"

/* ---- reading the header ---------------------------------------------------------------- */

/* diag's message, prefixed: "capture NAME: <what>: <diag's message>". */
int trove__capture_prefix_diag(struct trove_diag *diag, int rc, const char *name,
                                const char *what)
{
    char msg[sizeof diag->msg];
    if (!diag)
        return rc;
    memcpy(msg, diag->msg, sizeof msg);
    msg[sizeof msg - 1] = '\0';
    return TROVE_FAIL(diag, rc, diag->offset, "capture %s: %s: %s", name, what,
                      msg[0] ? msg : trove_strerror(rc));
}

int trove__capture_read_header(struct trove_volume *v, const char *name,
                               struct trove_capture_header *h, struct trove_diag *diag)
{
    struct trove_bytes b = {0};
    int rc;

    if (!trove_volume_is_objects(v)) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "%s is a block volume, not a capture; `trove volume` reads it", name);
        goto out;
    }
    if ((rc = trove_volume_get_object(v, TROVE__CAPTURE_SLOT_HEADER, &b)) != TROVE_OK &&
        trove_volume_last_error(v)[0]) { /* a damaged part of the recipe, named */
        rc = TROVE_FAIL(diag, rc, 0, "capture %s: header (slot 0): %s", name,
                        trove_volume_last_error(v));
        goto out;
    }
    if (rc != TROVE_OK) {
        struct trove_digest d;
        char hex[33] = "none";
        if (trove_volume_slot_digests(v, TROVE__CAPTURE_SLOT_HEADER, 1, &d) == TROVE_OK &&
            !trove_digest_is_zero(&d))
            trove_digest_hex(&d, hex);
        rc = TROVE_FAIL(diag, rc, 0, "capture %s: header (slot 0) (object %s): %s", name, hex,
                        rc == TROVE_ERR_CHECKSUM
                            ? "its stored bytes do not hash to its name: the object is damaged "
                              "(`trove verify --deep` lists every damaged one; importing the "
                              "capture again heals it)"
                        : rc == TROVE_ERR_NOTFOUND
                            ? "the object is missing (`trove verify` lists every missing one; "
                              "importing the capture again puts it back)"
                            : trove_strerror(rc));
        goto out;
    }
    if (b.len == 0) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                        "%s is an object volume with no capture header in slot 0 (not a "
                        "capture, or a write that never committed)",
                        name);
        goto out;
    }
    if ((rc = trove_capture_header_decode(b.ptr, b.len, h, diag)) != TROVE_OK)
        rc = trove__capture_prefix_diag(diag, rc, name, "header (slot 0)");
out:
    trove_bytes_free(&b);
    return rc;
}

int trove__capture_open_read(struct trove_store *s, const char *name, struct trove_volume **v_out,
                             struct trove_capture_header *h, struct trove_diag *diag)
{
    struct trove_volume *v = NULL;
    int rc;

    *v_out = NULL;
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK)
        return rc;
    rc = trove_volume_open(s, name, &v, diag);
    if (rc == TROVE_ERR_NOTFOUND)
        return TROVE_FAIL(diag, rc, 0, "no capture named %s in the store", name);
    if (rc != TROVE_OK)
        return rc;
    if ((rc = trove__capture_read_header(v, name, h, diag)) != TROVE_OK) {
        trove_volume_close(v);
        return rc;
    }
    *v_out = v;
    return TROVE_OK;
}

int trove_capture_info(struct trove_store *s, const char *name, struct trove_capture_info *out,
                       struct trove_diag *diag)
{
    struct trove_capture_header h;
    struct trove_volume *v = NULL;
    int rc;

    if (!s || !out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "capture info needs a store and an output");
    if ((rc = trove__capture_open_read(s, name, &v, &h, diag)) != TROVE_OK)
        return rc;
    *out = h.info;
    out->new_objects = out->new_bytes = 0;
    trove_capture_header_free(&h);
    trove_volume_close(v);
    return TROVE_OK;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct trove_capture_entry *)a)->name,
                  ((const struct trove_capture_entry *)b)->name);
}

int trove_capture_list(struct trove_store *s, struct trove_capture_entry **out, size_t *count_out)
{
    struct trove_volume_entry *ve = NULL;
    struct trove_capture_entry *ce = NULL;
    size_t nv = 0, n = 0;
    int rc;

    if (!s || !out || !count_out)
        return TROVE_ERR_INVALID;
    *out = NULL;
    *count_out = 0;
    TROVE_TRY(rc, trove_volume_list(s, &ve, &nv));
    if (nv > 0 && !(ce = trove__calloc(nv, sizeof *ce))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < nv; i++) {
        struct trove_capture_entry *e = &ce[n];
        /* A recipe that cannot be read does not say what it holds: it may be a capture, so
         * it is listed, with its error; block volumes are left out. */
        if (ve[i].error == TROVE_OK && !ve[i].objects)
            continue;
        snprintf(e->name, sizeof e->name, "%s", ve[i].name);
        e->error = ve[i].error != TROVE_OK ? ve[i].error
                                           : trove_capture_info(s, ve[i].name, &e->info, NULL);
        if (e->error == TROVE_ERR_NOMEM) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
        if (e->error != TROVE_OK)
            memset(&e->info, 0, sizeof e->info);
        n++;
    }
    if (n > 1) /* the volume list is sorted already; keep it so (qsort takes no NULL) */
        qsort(ce, n, sizeof *ce, entry_cmp);
    *out = n > 0 ? ce : NULL;
    *count_out = n;
    if (n > 0)
        ce = NULL;
    rc = TROVE_OK;
out:
    free(ce);
    free(ve);
    return rc;
}

/* ---- writing ----------------------------------------------------------------------------- */

static int digest_cmp(const void *a, const void *b) /* struct trove__fresh: by digest */
{
    return memcmp(a, b, sizeof(struct trove_digest));
}

int trove__capture_sizes(const struct trove_capture_options *opt, uint64_t *seg_bytes_out,
                         uint32_t *frame_events_out, int *format_out, struct trove_diag *diag)
{
    int format = opt && opt->segment_format ? opt->segment_format : TROVE_WIRE_DEFLATE;
    /* format 8 learns as it goes: by default segments of 65,536 events, one frame each */
    uint64_t seg_bytes = opt && opt->segment_bytes ? opt->segment_bytes
                         : format == TROVE_WIRE_MODEL
                             ? (uint64_t)TROVE_WIRE_MAX_EVENTS * TROVE_EVENT_SIZE
                             : TROVE_CAPTURE_SEGMENT_BYTES_DEFAULT;
    uint32_t fe = opt && opt->frame_events ? opt->frame_events : TROVE_CAPTURE_FRAME_EVENTS_DEFAULT;

    if (format == TROVE_WIRE_MODEL && !(opt && opt->frame_events))
        fe = seg_bytes / TROVE_EVENT_SIZE < TROVE_WIRE_MAX_EVENTS
                 ? (uint32_t)(seg_bytes / TROVE_EVENT_SIZE)
                 : TROVE_WIRE_MAX_EVENTS;

    if (seg_bytes < TROVE_EVENT_SIZE || seg_bytes % TROVE_EVENT_SIZE != 0 ||
        seg_bytes > TROVE_CAPTURE_MAX_SEGMENT_BYTES)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "segment size %" PRIu64 " is not a multiple of 32 bytes from 32 "
                          "to %" PRIu64,
                          seg_bytes, TROVE_CAPTURE_MAX_SEGMENT_BYTES);
    if (fe > TROVE_WIRE_MAX_EVENTS)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "%" PRIu32 " events per frame is over the wire limit of %u", fe,
                          TROVE_WIRE_MAX_EVENTS);
    if (format != TROVE_WIRE_DEFLATE && format != TROVE_WIRE_COLUMNAR &&
        format != TROVE_WIRE_COLUMNAR_DEFLATE && format != TROVE_WIRE_MODEL)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "segment format %d is not deflate, columnar, columnar_deflate or "
                          "model",
                          format);
    *seg_bytes_out = seg_bytes;
    *frame_events_out = fe;
    *format_out = format;
    return TROVE_OK;
}

uint32_t trove__capture_format_flags(int format)
{
    return format == TROVE_WIRE_DEFLATE  ? 0
           : format == TROVE_WIRE_MODEL  ? TROVE_CAPTURE_FLAG_MODEL
           : format == TROVE_WIRE_COLUMNAR ? TROVE_CAPTURE_FLAG_COLUMNAR
                                           : TROVE_CAPTURE_FLAG_COLUMNAR |
                                               TROVE_CAPTURE_FLAG_COLUMNAR_DEFLATE;
}

uint32_t trove__capture_append_flags(uint32_t had, int had_events, int format)
{
    uint32_t add = trove__capture_format_flags(format);
    const uint32_t kinds = TROVE_CAPTURE_FLAG_COLUMNAR | TROVE_CAPTURE_FLAG_MODEL;

    if (!had_events)
        return had | add;
    if (had & TROVE_CAPTURE_FLAG_COLUMNAR) /* the variant its format 5 frames were written in */
        add &= ~TROVE_CAPTURE_FLAG_COLUMNAR_DEFLATE;
    if (!(had & kinds) && (add & kinds)) /* deflate segments, and now others */
        add |= TROVE_CAPTURE_FLAG_DEFLATE;
    if ((had & kinds) && !(add & kinds)) /* others, and now deflate segments */
        add |= TROVE_CAPTURE_FLAG_DEFLATE;
    return had | add;
}

const char *trove_capture_segment_format_name(uint32_t flags)
{
    /* [deflate segments][format 5: none, plain, deflated][format 8] */
    static const char *const name[2][3][2] = {
        {{"deflate", "model"}, {"columnar", "columnar+model"},
         {"columnar_deflate", "columnar_deflate+model"}},
        {{"deflate", "deflate+model"}, {"deflate+columnar", "deflate+columnar+model"},
         {"deflate+columnar_deflate", "deflate+columnar_deflate+model"}}};
    int model = (flags & TROVE_CAPTURE_FLAG_MODEL) != 0;
    int col = !(flags & TROVE_CAPTURE_FLAG_COLUMNAR)             ? 0
              : !(flags & TROVE_CAPTURE_FLAG_COLUMNAR_DEFLATE) ? 1
                                                               : 2;
    int defl = (flags & TROVE_CAPTURE_FLAG_DEFLATE) || (!model && !col);

    return name[defl][col][model];
}

int trove__capture_check_events(const struct trove_event *events, size_t n, uint64_t first,
                                int *counters, struct trove_diag *diag)
{
    int c = 0;

    for (size_t i = 0; i < n; i++) {
        if (events[i].pad != 0)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, (first + i) * TROVE_EVENT_SIZE + 27,
                              "event %" PRIu64 " has pad byte 0x%02x; it must be 0", first + i,
                              (unsigned)events[i].pad);
        c |= events[i].kind == TROVE_KIND_COUNTER;
    }
    *counters |= c;
    return TROVE_OK;
}

/* Room for one more fresh object, asked before the store is: an object stored and then not
 * counted would make the count a lie. */
static int fresh_room(struct trove__capture_vol *w, size_t len, struct trove_diag *diag)
{
    if (len > w->block)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                          "capture %s: an object of %zu bytes, over the volume's %" PRIu32
                          "-byte objects",
                          w->name, len, w->block);
    if (w->nfresh == w->capfresh) {
        size_t cap = w->capfresh ? 2 * w->capfresh : 64;
        struct trove__fresh *p = trove__realloc(w->fresh, cap * sizeof *p);
        if (!p)
            return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        w->fresh = p;
        w->capfresh = cap;
    }
    return TROVE_OK;
}

/* Count object d (len bytes) as stored, and as new to the store exactly when this write put
 * it (it was missing, or damaged): the store's own decision, not a guess made before it. */
static void fresh_count(struct trove__capture_vol *w, const struct trove_digest *d, size_t len)
{
    if (trove_store_put_pending(w->s, d)) {
        w->fresh[w->nfresh].d = *d;
        w->fresh[w->nfresh++].len = len;
    }
    w->stored += len;
}

int trove__capture_put(struct trove__capture_vol *w, uint64_t slot, const uint8_t *data,
                       size_t len, struct trove_diag *diag)
{
    struct trove_digest d;
    int rc;

    if ((rc = fresh_room(w, len, diag)) != TROVE_OK)
        return rc;
    if ((rc = trove_volume_put_object(w->v, slot, data, len)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: storing slot %" PRIu64 ": %s", w->name,
                          slot, trove_strerror(rc));
    trove_digest_of(data, len, &d);
    fresh_count(w, &d, len);
    return TROVE_OK;
}

int trove__capture_stage(struct trove__capture_vol *w, const uint8_t *data, size_t len,
                         struct trove_digest *d, struct trove_diag *diag)
{
    int rc;

    if ((rc = fresh_room(w, len, diag)) != TROVE_OK)
        return rc;
    if ((rc = trove_volume_stage_object(w->v, data, len, d)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: storing an object: %s", w->name,
                          trove_strerror(rc));
    fresh_count(w, d, len);
    return TROVE_OK;
}

/* Distinct digests among the fresh ones: an object repeated inside the capture is one. */
uint64_t trove__capture_count_fresh(struct trove__capture_vol *w, uint64_t *bytes)
{
    uint64_t n = 0;

    *bytes = 0;
    if (w->nfresh == 0)
        return 0;
    qsort(w->fresh, w->nfresh, sizeof *w->fresh, digest_cmp);
    for (size_t i = 0; i < w->nfresh; i++)
        if (i == 0 || !trove_digest_equal(&w->fresh[i - 1].d, &w->fresh[i].d)) {
            n++;
            *bytes += w->fresh[i].len;
        }
    return n;
}

/* Where names are cut (trove_testing_capture_names_cut; 0: the format's sizes). */
static uint32_t cut_frame_bytes, cut_part_bytes;

void trove_testing_capture_names_cut(uint32_t frame_bytes, uint32_t part_bytes)
{
    cut_frame_bytes = frame_bytes;
    cut_part_bytes = part_bytes;
}

/*
 * The end of the names frame that starts at entry `from` (< count): at most
 * NAMES_FRAME_ENTRIES entries, added while the payload stays within NAMES_FRAME_BYTES (an
 * upper estimate per entry: its string and 16 bytes of type and varints; a single longer
 * entry gets a frame of its own). Each frame's end depends on its own entries and the next
 * one only, so frames cut from any frame's start are the frames cut from entry 0.
 */
static size_t frame_end(const struct trove_names *names, size_t from, size_t count)
{
    const uint64_t limit = cut_frame_bytes ? cut_frame_bytes : TROVE__CAPTURE_NAMES_FRAME_BYTES;
    size_t to = from;
    uint64_t bytes = 0;

    while (to < count && to - from < TROVE__CAPTURE_NAMES_FRAME_ENTRIES) {
        struct trove_name_entry e;
        trove_names_entry(names, to, &e);
        if (to > from && bytes + 16 + e.len > limit)
            break;
        bytes += 16 + e.len;
        to++;
    }
    return to;
}

int trove__capture_names_part(const char *name, const struct trove_names *names, size_t from,
                              struct trove_bytes *out, size_t *to_out, struct trove_diag *diag)
{
    const size_t count = names ? trove_names_count(names) : 0, start = out->len;
    const uint64_t limit = cut_part_bytes ? cut_part_bytes : TROVE_CAPTURE_MAX_OBJECT;
    size_t at = from;
    int rc;

    assert(from < count || (from == 0 && count == 0));
    *to_out = from;
    if (count == 0) { /* one frame of no entries, so a replay always starts with names */
        struct trove_names *none = NULL;
        if ((rc = trove_names_new(&none)) == TROVE_OK)
            rc = trove_wire_encode_names(none, 0, 0, out);
        trove_names_free(none);
        if (rc != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "capture %s: encoding its names: %s", name,
                              trove_strerror(rc));
        return TROVE_OK;
    }
    while (at < count) {
        const size_t end = frame_end(names, at, count), mark = out->len;
        if ((rc = trove_wire_encode_names(names, at, end, out)) != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "capture %s: encoding names %zu to %zu: %s", name,
                              at, end, trove_strerror(rc));
        if (out->len - start > limit) {
            if (mark == start)
                return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                                  "capture %s: the names frame of entries %zu to %zu is %zu "
                                  "bytes, over the %" PRIu64 "-byte limit of an object",
                                  name, at, end, out->len - mark, limit);
            out->len = mark; /* the frame starts the next part */
            break;
        }
        at = end;
    }
    *to_out = at;
    return TROVE_OK;
}

int trove__capture_names_limits(const char *name, uint32_t parts, uint64_t bytes,
                                struct trove_diag *diag)
{
    if (parts > TROVE_CAPTURE_MAX_NAMES_PARTS || bytes > TROVE_CAPTURE_MAX_NAMES_BYTES)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                          "capture %s: its names pass the limit of a capture's names, %" PRIu64
                          " bytes in %u objects (%" PRIu64 " bytes in %" PRIu32 " objects so "
                          "far); store fewer or shorter names",
                          name, TROVE_CAPTURE_MAX_NAMES_BYTES, TROVE_CAPTURE_MAX_NAMES_PARTS,
                          bytes, parts);
    return TROVE_OK;
}

int trove__capture_segment_frame(struct trove_wire_encoder *enc, int format,
                                 const struct trove_event *events, size_t n,
                                 struct trove_bytes *out, struct trove_capture_segment *g,
                                 const char *name, uint64_t k, struct trove_diag *diag)
{
    const size_t at = out->len;
    int rc;

    /* Format 5 has a larger worst case than packed's 44 bytes an event (which is what lets
     * the largest segment fit in an object): a frame that would pass it is stored as
     * deflate, which a reader of a columnar capture takes as well. */
    if (format != TROVE_WIRE_DEFLATE) {
        if ((rc = trove_wire_encode(enc, format, events, n, out)) != TROVE_OK)
            return TROVE_FAIL(diag, rc, 0, "capture %s: encoding segment %" PRIu64 ": %s", name,
                              k, trove_strerror(rc));
        if (out->len - at > TROVE_WIRE_HEADER_SIZE + n * 44) {
            out->len = at;
            format = TROVE_WIRE_DEFLATE;
        }
    }
    if (format == TROVE_WIRE_DEFLATE &&
        (rc = trove_wire_encode(enc, TROVE_WIRE_DEFLATE, events, n, out)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: encoding segment %" PRIu64 ": %s", name, k,
                          trove_strerror(rc));
    for (size_t i = 0; i < n; i++) {
        uint64_t st = events[i].start_ns, e = trove_event_end(&events[i]);
        if ((g->events == 0 && i == 0) || st < g->min_start_ns)
            g->min_start_ns = st;
        if (st > g->max_start_ns)
            g->max_start_ns = st;
        if (e > g->max_end_ns)
            g->max_end_ns = e;
    }
    g->events += (uint32_t)n;
    g->frames++;
    g->bytes = (uint32_t)(out->len <= UINT32_MAX ? out->len : UINT32_MAX);
    return TROVE_OK;
}

int trove__capture_header_put(struct trove__capture_vol *w, struct trove_capture_header *h,
                              int counters, struct trove_bytes *buf, struct trove_diag *diag)
{
    int rc;

    h->info.raw_bytes = h->info.events * TROVE_EVENT_SIZE;
    h->info.first_ns = h->info.end_ns = 0;
    for (uint64_t k = 0; k < h->info.segments; k++) {
        const struct trove_capture_segment *g = &h->seg[k];
        if (k == 0 || g->min_start_ns < h->info.first_ns)
            h->info.first_ns = g->min_start_ns;
        if (g->max_end_ns > h->info.end_ns)
            h->info.end_ns = g->max_end_ns;
    }
    h->version = h->profile_objects > 0 ? 3 : counters || h->info.flows > 0 ? 2 : 1;
    buf->len = 0;
    if ((rc = trove_capture_header_encode(h, buf)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: encoding the header: %s", w->name,
                          trove_strerror(rc));
    return trove__capture_put(w, TROVE__CAPTURE_SLOT_HEADER, buf->ptr, buf->len, diag);
}

/* w's volume (open) resized to `slots` slots. */
static int resize(struct trove__capture_vol *w, uint64_t slots, struct trove_diag *diag)
{
    int rc;

    if (slots > UINT64_MAX / w->block)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "capture %s: too many slots", w->name);
    if ((rc = trove_volume_resize(w->v, slots * w->block)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: resizing to %" PRIu64 " slots: %s",
                          w->name, slots, trove_strerror(rc));
    return TROVE_OK;
}

int trove__capture_open_for_write(struct trove__capture_vol *w, uint64_t slots, int create,
                                  int *created, struct trove_diag *diag)
{
    struct trove_volume_info vi;
    struct trove_capture_header h;
    struct trove_diag why = {0};
    uint64_t make = slots == TROVE__CAPTURE_KEEP_SLOTS ? TROVE__CAPTURE_SLOT_SEGMENT0 : slots;
    int rc, have_vi = 0;

    *created = 0;
    rc = trove_volume_open(w->s, w->name, &w->v, diag);
    /* The open reads the manifest; info loads the rest of the recipe, where a damaged
     * object shows: then the capture is written afresh, as over a damaged manifest. */
    if (rc == TROVE_OK && create) {
        if ((rc = trove_volume_info(w->v, &vi)) == TROVE_OK) {
            have_vi = 1;
        } else {
            TROVE_FAIL(diag, rc, 0, "capture %s: %s", w->name,
                       trove_volume_last_error(w->v)[0] ? trove_volume_last_error(w->v)
                                                        : trove_strerror(rc));
            trove_volume_close(w->v);
            w->v = NULL;
        }
    }
    if (rc == TROVE_ERR_NOTFOUND && !create)
        return TROVE_FAIL(diag, rc, 0, "no capture named %s in the store", w->name);
    if (rc == TROVE_ERR_NOTFOUND) {
        /* create 2 (pending): nothing is written before the commit, so a writer killed
         * before it leaves no capture behind, not an empty one. */
        rc = create == 2 ? trove_volume_create_objects_pending(w->s, w->name, make,
                                                                TROVE_CAPTURE_MAX_OBJECT, &w->v,
                                                                diag)
                         : trove_volume_create_objects(w->s, w->name, make,
                                                       TROVE_CAPTURE_MAX_OBJECT, &w->v, diag);
        if (rc != TROVE_OK)
            return rc;
        *created = 1;
        w->block = TROVE_CAPTURE_MAX_OBJECT;
        return TROVE_OK;
    }
    if (create && (rc == TROVE_ERR_CHECKSUM || rc == TROVE_ERR_CORRUPT ||
                   rc == TROVE_ERR_TRUNCATED)) {
        /* Its recipe is damaged: write the capture afresh over it (a failed write leaves the
         * damaged one); the commit replaces the recipe, healing its objects. */
        if (make > UINT64_MAX / TROVE_CAPTURE_MAX_OBJECT)
            return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "capture %s: too many slots", w->name);
        rc = trove_volume_create_over(w->s, w->name, make * TROVE_CAPTURE_MAX_OBJECT,
                                      TROVE_CAPTURE_MAX_OBJECT, 0, 1, &w->v, diag);
        if (rc != TROVE_OK)
            return rc;
        w->block = TROVE_CAPTURE_MAX_OBJECT;
        return TROVE_OK;
    }
    if (rc != TROVE_OK)
        return rc;
    if (!have_vi && (rc = trove_volume_info(w->v, &vi)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: %s", w->name,
                          trove_volume_last_error(w->v)[0] ? trove_volume_last_error(w->v)
                                                           : trove_strerror(rc));
    if (!vi.objects)
        return TROVE_FAIL(diag, TROVE_ERR_EXISTS, 0,
                          "%s exists and is a block volume, not a capture; pick another "
                          "name or remove it with `trove volume rm`",
                          w->name);
    if (vi.readonly)
        return TROVE_FAIL(diag, TROVE_ERR_READONLY, 0,
                          "%s is a snapshot, which cannot be rewritten; pick another name",
                          w->name);
    if (vi.used_slots > 0) {
        rc = trove__capture_read_header(w->v, w->name, &h, &why);
        /* Out of memory or an I/O error says nothing about what the volume is. */
        if (rc == TROVE_ERR_NOMEM || (rc < 0 && rc > TROVE_ERR_BASE))
            return TROVE_FAIL(diag, rc, why.offset, "%s",
                              why.msg[0] ? why.msg : trove_strerror(rc));
        /* An object volume whose header object is damaged or missing is a capture that
         * lost it: the write replaces it, and putting the header heals the object. */
        if (rc != TROVE_OK && rc != TROVE_ERR_CHECKSUM && rc != TROVE_ERR_NOTFOUND)
            return TROVE_FAIL(diag, TROVE_ERR_EXISTS, 0,
                              "%s exists and is not a capture (%s); pick another name or "
                              "remove it with `trove volume rm`",
                              w->name, why.msg);
        if (rc == TROVE_OK)
            trove_capture_header_free(&h);
    }
    w->block = vi.block_size;
    if (slots == TROVE__CAPTURE_KEEP_SLOTS)
        slots = vi.slots; /* resized to its size: a check that it may be written */
    return resize(w, slots, diag);
}

int trove_capture_write(struct trove_store *s, const char *name, const struct trove_event *events,
                        size_t n, const struct trove_names *names,
                        const struct trove_capture_options *opt, struct trove_capture_info *info,
                        struct trove_diag *diag)
{
    return trove_capture_write_trace(s, name, events, n, names, NULL, 0, opt, info, diag);
}

int trove_capture_write_trace(struct trove_store *s, const char *name,
                              const struct trove_event *events, size_t n,
                              const struct trove_names *names, const struct trove_flow *flows,
                              size_t nflows, const struct trove_capture_options *opt,
                              struct trove_capture_info *info, struct trove_diag *diag)
{
    return trove_capture_write_profile(s, name, events, n, names, flows, nflows, NULL, opt, info,
                                       diag);
}

/* The profile's samples frames cut into objects at frame boundaries, each at most
 * MAX_OBJECT bytes: *ends_out (malloc'd) gets each object's end in frames. */
static int profile_objects(const char *name, const struct trove_profile *p,
                           struct trove_bytes *frames, size_t **ends_out, size_t *n_out,
                           struct trove_diag *diag)
{
    size_t *ends, n = 0, nframes = 0, start = 0;
    int rc;

    *ends_out = NULL;
    *n_out = 0;
    if ((rc = trove_profile_encode(p, NULL, frames)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: encoding the profile: %s", name,
                          trove_strerror(rc));
    for (size_t at = 0; at < frames->len; nframes++)
        at += TROVE_WIRE_HEADER_SIZE + trove__get_le32(frames->ptr + at + 8);
    if (!nframes)
        return TROVE_OK;
    if (!(ends = trove__mallocarray(nframes, sizeof *ends)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    for (size_t at = 0; at < frames->len;) {
        size_t len = TROVE_WIRE_HEADER_SIZE + trove__get_le32(frames->ptr + at + 8);
        if (at + len - start > TROVE_CAPTURE_MAX_OBJECT && at > start)
            ends[n++] = start = at;
        at += len;
    }
    ends[n++] = frames->len;
    if (n > TROVE_CAPTURE_MAX_PROFILE_OBJECTS) {
        free(ends);
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                          "capture %s: the profile needs %zu objects, over the %" PRIu64
                          " a capture holds",
                          name, n, TROVE_CAPTURE_MAX_PROFILE_OBJECTS);
    }
    *ends_out = ends;
    *n_out = n;
    return TROVE_OK;
}

/* The one-shot write's summary nodes into their slots. */
struct summary_put {
    struct trove__capture_vol *w;
    uint64_t next;  /* nodes come in the order of their slots */
    uint64_t bytes; /* what they take */
};

static int summary_put(void *ctx, unsigned level, uint64_t index, const uint8_t *p, size_t len,
                       struct trove_diag *diag)
{
    struct summary_put *sp = ctx;
    (void)level;
    (void)index;
    sp->bytes += len;
    return trove__capture_put(sp->w, sp->next++, p, len, diag);
}

/* Rows [from, to) of a (NULL: none), their events less base, as one attributes object
 * appended to out. */
static int attrs_object(const struct trove_attrs *a, size_t from, size_t to, uint64_t base,
                        struct trove_bytes *out)
{
    struct trove_attrs t;
    int rc = TROVE_OK;

    memset(&t, 0, sizeof t);
    if (a) /* none: an empty table's object */
        rc = trove_attrs_append(&t, a, from, to, 0, base);
    if (rc == TROVE_OK)
        rc = trove_attrs_encode(&t, 0, out);
    trove_attrs_free(&t);
    return rc;
}

/* The attributes objects of a capture of n events in segments of per: one per segment, then
 * the trace's (meta), back to back in out, ends[k] where object k ends. */
static int attrs_objects(const char *name, const struct trove_attrs *attrs,
                         const struct trove_attrs *meta, size_t n, uint64_t per,
                         uint64_t segments, struct trove_bytes *out, size_t *ends,
                         struct trove_diag *diag)
{
    size_t i = 0;
    int rc;

    for (size_t k = 1; attrs && k < attrs->n; k++)
        if (attrs->rows[k].event < attrs->rows[k - 1].event)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, k,
                              "capture %s: attribute row %zu goes back in event", name, k);
    if (attrs && attrs->n && attrs->rows[attrs->n - 1].event >= n)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, attrs->n - 1,
                          "capture %s: an attribute row of event %" PRIu64 ", past the %zu "
                          "events",
                          name, attrs->rows[attrs->n - 1].event, n);
    for (uint64_t k = 0; k <= segments; k++) {
        const struct trove_attrs *a = k < segments ? attrs : meta;
        size_t from = k < segments ? i : 0, to = from;
        if (k < segments)
            while (a && to < a->n && a->rows[to].event < (k + 1) * per)
                to++;
        else
            to = a ? a->n : 0;
        if ((rc = attrs_object(a ? a : meta, from, to, k < segments ? k * per : 0, out)) !=
            TROVE_OK)
            return TROVE_FAIL(diag, rc, k, "capture %s: encoding the attributes of %s: %s",
                              name, k < segments ? "a segment" : "the trace",
                              trove_strerror(rc));
        if (out->len - (k ? ends[k - 1] : 0) > TROVE_CAPTURE_MAX_OBJECT)
            return TROVE_FAIL(diag, TROVE_ERR_LIMIT, k,
                              "capture %s: the attributes of segment %" PRIu64 " take over %"
                              PRIu32 " bytes; use smaller segments",
                              name, k, TROVE_CAPTURE_MAX_OBJECT);
        ends[k] = out->len;
        if (k < segments)
            i = to;
    }
    return TROVE_OK;
}

static int write_capture(struct trove_store *s, const char *name,
                         const struct trove_event *events, size_t n,
                         const struct trove_names *names, const struct trove_flow *flows,
                         size_t nflows, const struct trove_profile *profile,
                         const struct trove_attrs *attrs, const struct trove_attrs *meta,
                         const struct trove_capture_options *opt,
                         struct trove_capture_info *info, struct trove_diag *diag);

int trove_capture_write_profile(struct trove_store *s, const char *name,
                                const struct trove_event *events, size_t n,
                                const struct trove_names *names, const struct trove_flow *flows,
                                size_t nflows, const struct trove_profile *profile,
                                const struct trove_capture_options *opt,
                                struct trove_capture_info *info, struct trove_diag *diag)
{
    return write_capture(s, name, events, n, names, flows, nflows, profile, NULL, NULL, opt,
                         info, diag);
}

int trove_capture_write_attrs(struct trove_store *s, const char *name,
                              const struct trove_event *events, size_t n,
                              const struct trove_names *names, const struct trove_flow *flows,
                              size_t nflows, const struct trove_profile *profile,
                              const struct trove_attrs *attrs, const struct trove_attrs *meta,
                              const struct trove_capture_options *opt,
                              struct trove_capture_info *info, struct trove_diag *diag)
{
    return write_capture(s, name, events, n, names, flows, nflows, profile, attrs, meta, opt,
                         info, diag);
}

static int write_capture(struct trove_store *s, const char *name,
                         const struct trove_event *events, size_t n,
                         const struct trove_names *names, const struct trove_flow *flows,
                         size_t nflows, const struct trove_profile *profile,
                         const struct trove_attrs *attrs, const struct trove_attrs *meta,
                         const struct trove_capture_options *opt,
                         struct trove_capture_info *info, struct trove_diag *diag)
{
    struct trove__capture_vol w;
    struct trove_capture_header h;
    struct trove_wire_encoder *enc = NULL;
    struct trove_bytes buf = {0}, flows_obj = {0}, prof = {0}, attr_objs = {0};
    size_t *prof_ends = NULL, n_prof = 0, count = names ? trove_names_count(names) : 0;
    size_t *attr_ends = NULL, n_attr = 0;
    uint64_t seg_bytes = 0, per, segments, profile0, z;
    uint32_t fe = 0, parts;
    int rc, created = 0, committed = 0, counters = 0, format = 0;

    memset(&w, 0, sizeof w);
    memset(&h, 0, sizeof h);
    if (!s || (!events && n > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "capture write needs a store and the events");
    if ((rc = trove_volume_name_check(name, diag)) != TROVE_OK ||
        (rc = trove__capture_sizes(opt, &seg_bytes, &fe, &format, diag)) != TROVE_OK)
        return rc;
    per = seg_bytes / TROVE_EVENT_SIZE;
    segments = trove__div_up(n, per);
    if (segments > TROVE_CAPTURE_MAX_SEGMENTS)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                          "%zu events in segments of %" PRIu64 " bytes make %" PRIu64
                          " segments, over the limit of %" PRIu64 "; use larger segments",
                          n, seg_bytes, segments, TROVE_CAPTURE_MAX_SEGMENTS);
    if ((rc = trove__capture_check_events(events, n, 0, &counters, diag)) != TROVE_OK)
        return rc;
    if (!flows && nflows > 0)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "capture write: flow rows missing");

    w.s = s;
    w.name = name;
    if ((rc = trove_wire_encoder_new(&enc)) != TROVE_OK ||
        (segments > 0 && !(h.seg = trove__calloc((size_t)segments, sizeof *h.seg)))) {
        rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    if (nflows > 0) {
        rc = trove_flows_encode_events(flows, nflows, events, n, &flows_obj);
        if (rc != TROVE_OK) {
            rc = TROVE_FAIL(diag, rc, 0, "capture %s: encoding %zu flow rows: %s%s", name, nflows,
                            trove_strerror(rc),
                            rc == TROVE_ERR_INVALID ? " (a row that is not well-formed)" : "");
            goto out;
        }
    }
    if (profile)
        TROVE_TRY(rc, profile_objects(name, profile, &prof, &prof_ends, &n_prof, diag));
    if ((attrs && attrs->n) || (meta && meta->n)) {
        n_attr = (size_t)segments + 1;
        if (!(attr_ends = trove__malloc(n_attr * sizeof *attr_ends))) {
            rc = TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
            goto out;
        }
        TROVE_TRY(rc, attrs_objects(name, attrs, meta, n, per, segments, &attr_objs, attr_ends,
                                    diag));
    }
    /* sized for the summaries from the start: a volume shrunk and grown again would write
     * its recipe anew, however equal the end */
    z = segments > 0 && !(opt && opt->no_summaries) ? trove__summary_slots(segments) : 0;
    TROVE_TRY(rc, trove__capture_open_for_write(
                      &w, TROVE__CAPTURE_SLOT_SEGMENT0 + segments + (nflows > 0) + n_prof + n_attr + z, 2,
                      &created, diag));

    /* The names first (a capture with too many fails before its events are encoded), one
     * part at a time; each part past the first takes one more slot, before the profile's. */
    for (size_t from = 0, to = 0; from < count || (count == 0 && h.names_parts == 0);
         from = to) {
        parts = h.names_parts;
        buf.len = 0;
        TROVE_TRY(rc, trove__capture_names_part(name, names, from, &buf, &to, diag));
        TROVE_TRY(rc, trove__capture_names_limits(name, parts + 1, h.names_bytes + buf.len, diag));
        if (parts > 0 &&
            (rc = resize(&w, TROVE__CAPTURE_SLOT_SEGMENT0 + segments + (nflows > 0) + parts +
                                 n_prof + n_attr + z,
                         diag)) != TROVE_OK)
            goto out;
        TROVE_TRY(rc, trove__capture_put(&w, trove__capture_names_slot(segments, nflows, parts),
                                         buf.ptr, buf.len, diag));
        h.names_part[parts].bytes = (uint32_t)buf.len;
        h.names_part[parts].entries = (uint32_t)(to - from);
        h.names_parts = parts + 1;
        h.names_bytes += buf.len;
    }

    for (uint64_t k = 0; k < segments; k++) {
        size_t first = (size_t)(k * per), end = n - first < per ? n : first + (size_t)per;
        buf.len = 0;
        for (size_t i = first; i < end; i += fe)
            TROVE_TRY(rc, trove__capture_segment_frame(enc, format, events + i,
                                                       end - i < fe ? end - i : fe, &buf,
                                                       &h.seg[k], name, k, diag));
        TROVE_TRY(rc, trove__capture_put(&w, TROVE__CAPTURE_SLOT_SEGMENT0 + k, buf.ptr, buf.len,
                                         diag));
        if (opt && opt->progress)
            opt->progress(opt->progress_ctx, k + 1, segments);
    }
    if (nflows > 0)
        TROVE_TRY(rc, trove__capture_put(&w, TROVE__CAPTURE_SLOT_SEGMENT0 + segments,
                                         flows_obj.ptr, flows_obj.len, diag));
    h.info.segments = segments;
    h.info.flows = nflows;
    profile0 = trove__capture_profile_slot(&h);
    for (size_t k = 0; k < n_prof; k++) {
        size_t from = k ? prof_ends[k - 1] : 0;
        TROVE_TRY(rc, trove__capture_put(&w, profile0 + k, prof.ptr + from, prof_ends[k] - from,
                                         diag));
    }

    h.profile_objects = n_prof;
    if (n_attr) {
        uint64_t first = trove__capture_attrs_slot(&h);
        for (size_t k = 0; k < n_attr; k++) {
            size_t from = k ? attr_ends[k - 1] : 0;
            TROVE_TRY(rc, trove__capture_put(&w, first + k, attr_objs.ptr + from,
                                             attr_ends[k] - from, diag));
        }
        h.attr_rows = h.info.attr_rows = (attrs ? attrs->n : 0) + (meta ? meta->n : 0);
        h.attrs_bytes = h.info.attrs_bytes = attr_objs.len;
    }

    h.info.events = n;
    h.info.names = count;
    h.segment_bytes = seg_bytes;
    h.frame_events = fe;
    h.info.flags = trove__capture_format_flags(format) | (n_attr ? TROVE_CAPTURE_FLAG_ATTRS : 0);
    h.profile_objects = n_prof;
    if (z > 0) {
        uint64_t first = trove__capture_summary_slot(&h);
        struct summary_put sp = {&w, first, 0};
        TROVE_TRY(rc, trove__summary_write(&h, events, per, summary_put, &sp, diag));
        h.info.flags |= TROVE_CAPTURE_FLAG_SUMMARY;
        h.summary_bytes = sp.bytes;
    }
    h.flows_bytes = flows_obj.len;
    if (n_prof) {
        struct trove_profile_counts c;
        trove_profile_get_counts(profile, &c);
        h.info.samples = c.samples;
        h.info.switches = c.switches;
        h.profile_objects = n_prof;
        h.profile_bytes = prof.len;
    }
    TROVE_TRY(rc, trove__capture_header_put(&w, &h, counters, &buf, diag));
    if ((rc = trove_volume_commit(w.v)) != TROVE_OK) {
        rc = TROVE_FAIL(diag, rc, 0, "capture %s: committing: %s", name, trove_strerror(rc));
        goto out;
    }
    committed = 1;
    if (info) {
        *info = h.info;
        info->stored_bytes = w.stored;
        info->new_objects = trove__capture_count_fresh(&w, &info->new_bytes);
    }
    rc = TROVE_OK;
out:
    trove_volume_close(w.v); /* uncommitted puts roll back */
    if (created && !committed)
        trove_volume_remove(s, name, NULL); /* a new name leaves nothing behind */
    free(w.fresh);
    free(h.seg);
    trove_bytes_free(&buf);
    trove_bytes_free(&flows_obj);
    trove_bytes_free(&prof);
    free(prof_ends);
    trove_bytes_free(&attr_objs);
    free(attr_ends);
    trove_wire_encoder_free(enc);
    return rc;
}

/* Decode names part j of capture `name` (header h), object b, into names: every frame a
 * names frame, its length and entries the header's. */
static int read_names_part(const char *name, const struct trove_capture_header *h, uint32_t j,
                           uint64_t slot, const struct trove_bytes *b,
                           struct trove_wire_decoder *dec, struct trove_names *names,
                           struct trove_diag *diag)
{
    const uint32_t parts = trove__capture_parts(h);
    uint64_t entries = 0;
    char part[48] = "names", what[96];
    int rc;

    if (parts > 1)
        snprintf(part, sizeof part, "names part %" PRIu32 " of %" PRIu32, j, parts);
    snprintf(what, sizeof what, "%s (slot %" PRIu64 ")", part, slot);
    if (b->len != trove__capture_part_bytes(h, j))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "capture %s: %s: the object is %zu bytes; the header says %" PRIu64,
                          name, what, b->len, trove__capture_part_bytes(h, j));
    for (size_t at = 0; at < b->len;) {
        struct trove_wire_header wh;
        struct trove_wire_frame fr;
        /* Only names frames belong here: an events frame is refused before it is decoded. */
        if ((rc = trove_wire_parse_header(b->ptr + at, b->len - at, &wh, diag)) == TROVE_OK &&
            wh.format != TROVE_WIRE_NAMES)
            rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "a %s frame, not names",
                            trove_wire_format_name(wh.format));
        if (rc == TROVE_OK)
            rc = trove_wire_decode(dec, b->ptr + at, b->len - at, NULL, 0, names, &fr, diag);
        if (rc != TROVE_OK) {
            snprintf(what, sizeof what, "%s (slot %" PRIu64 ", byte %zu)", part, slot, at);
            return trove__capture_prefix_diag(diag, rc, name, what);
        }
        entries += wh.count;
        at += fr.frame_len;
    }
    if (entries != trove__capture_part_entries(h, j))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "capture %s: %s: the frames hold %" PRIu64 " entries; the header says "
                          "%" PRIu64,
                          name, what, entries, trove__capture_part_entries(h, j));
    return TROVE_OK;
}

int trove_capture_read_names(struct trove_store *s, const char *name, struct trove_names *names,
                             struct trove_diag *diag)
{
    struct trove_capture_header h;
    struct trove_volume *v = NULL;
    struct trove_wire_decoder *dec = NULL;
    struct trove_bytes b = {0};
    int rc;

    if (!s || !names)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "capture names need a store and a table");
    if ((rc = trove__capture_open_read(s, name, &v, &h, diag)) != TROVE_OK)
        return rc;
    if ((rc = trove_wire_decoder_new(&dec)) != TROVE_OK) {
        rc = TROVE_FAIL(diag, rc, 0, "out of memory");
        goto out;
    }
    for (uint32_t j = 0; j < trove__capture_parts(&h); j++) {
        uint64_t slot = trove__capture_names_slot(h.info.segments, h.info.flows, j);
        if ((rc = trove_volume_get_object(v, slot, &b)) != TROVE_OK) {
            rc = TROVE_FAIL(diag, rc, 0, "capture %s: names%s (slot %" PRIu64 "): %s", name,
                            h.names_parts > 1 ? " part" : "", slot,
                            rc == TROVE_ERR_CHECKSUM
                                ? "its stored bytes do not hash to its name: the object is "
                                  "damaged (importing the capture again heals it)"
                            : rc == TROVE_ERR_INVALID ? "the volume has fewer slots than the "
                                                        "header's names parts need"
                                                      : trove_strerror(rc));
            goto out;
        }
        TROVE_TRY(rc, read_names_part(name, &h, j, slot, &b, dec, names, diag));
    }
    rc = TROVE_OK;
out:
    trove_wire_decoder_free(dec);
    trove_bytes_free(&b);
    trove_capture_header_free(&h);
    trove_volume_close(v);
    return rc;
}

int trove_capture_read_profile(struct trove_store *s, const char *name, struct trove_profile *p,
                               struct trove_diag *diag)
{
    struct trove_capture_header h;
    struct trove_volume *v = NULL;
    struct trove_bytes b = {0};
    struct trove_profile_counts start, c;
    uint64_t first;
    int rc;

    if (!s || !p)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "capture profile needs a store and a profile");
    trove_profile_get_counts(p, &start);
    if (start.strings != 1 || start.frames || start.stacks || start.samples || start.switches)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "capture profile is read into a new profile, not one with rows");
    if ((rc = trove__capture_open_read(s, name, &v, &h, diag)) != TROVE_OK)
        return rc;
    first = trove__capture_profile_slot(&h);
    for (uint64_t k = 0; k < h.profile_objects; k++) {
        uint64_t slot = first + k;
        b.len = 0;
        if ((rc = trove_volume_get_object(v, slot, &b)) != TROVE_OK) {
            rc = TROVE_FAIL(diag, rc, 0, "capture %s: profile (slot %" PRIu64 "): %s", name, slot,
                            rc == TROVE_ERR_CHECKSUM
                                ? "its stored bytes do not hash to its name: the object is "
                                  "damaged (importing the capture again heals it)"
                                : trove_strerror(rc));
            goto out;
        }
        for (size_t at = 0; at < b.len;) {
            size_t len = 0;
            if ((rc = trove_profile_decode(p, b.ptr + at, b.len - at, &len, diag)) != TROVE_OK) {
                char what[64];
                snprintf(what, sizeof what, "profile (slot %" PRIu64 ", byte %zu)", slot, at);
                rc = trove__capture_prefix_diag(diag, rc, name, what);
                goto out;
            }
            at += len;
        }
    }
    trove_profile_get_counts(p, &c);
    if (c.samples != h.info.samples || c.switches != h.info.switches) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                        "capture %s: the profile holds %zu samples and %zu switches; the header "
                        "says %" PRIu64 " and %" PRIu64,
                        name, c.samples, c.switches, h.info.samples, h.info.switches);
        goto out;
    }
    rc = TROVE_OK;
out:
    trove_bytes_free(&b);
    trove_capture_header_free(&h);
    trove_volume_close(v);
    return rc;
}

/* The rows of events [from, to) of capture `name` appended to attrs, and the trace's to meta
 * (NULL: not read); the whole capture (from 0, to UINT64_MAX, meta read) also checks the
 * rows against the header's count. Only the segments the range touches are read. */
static int read_attrs(struct trove_store *s, const char *name, uint64_t from, uint64_t to_ev,
                      struct trove_attrs *attrs, struct trove_attrs *meta,
                      struct trove_diag *diag)
{
    struct trove_capture_header h;
    struct trove_volume *v = NULL;
    struct trove_bytes b = {0};
    struct trove_attrs t;
    size_t n0 = attrs ? attrs->n : 0, m0 = meta ? meta->n : 0;
    uint64_t first, rows = 0, per, k0 = 0, k1;
    const int whole = from == 0 && to_ev == UINT64_MAX && meta;
    int rc;

    memset(&t, 0, sizeof t);
    if (!s || !attrs)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "capture attributes need a store and a table");
    if ((rc = trove__capture_open_read(s, name, &v, &h, diag)) != TROVE_OK)
        return rc;
    if (!(h.info.flags & TROVE_CAPTURE_FLAG_ATTRS) || from >= to_ev)
        goto out; /* rc is TROVE_OK: none */
    first = trove__capture_attrs_slot(&h);
    per = h.segment_bytes / TROVE_EVENT_SIZE;
    k1 = h.info.segments + (meta != NULL); /* the segments', then the trace's */
    if (!whole) {
        k0 = from / per;
        k1 = (to_ev - 1) / per + 1 < h.info.segments ? (to_ev - 1) / per + 1 : h.info.segments;
    }
    for (uint64_t k = k0; k < k1; k++) {
        uint64_t slot = first + k, limit = k < h.info.segments ? h.seg[k].events : 1;
        struct trove_attrs *to = k < h.info.segments ? attrs : meta;
        b.len = 0;
        if ((rc = trove_volume_get_object(v, slot, &b)) != TROVE_OK) {
            rc = TROVE_FAIL(diag, rc, 0, "capture %s: attributes (slot %" PRIu64 "): %s", name,
                            slot,
                            rc == TROVE_ERR_CHECKSUM
                                ? "its stored bytes do not hash to its name: the object is "
                                  "damaged (importing the capture again heals it)"
                                : trove_strerror(rc));
            goto out;
        }
        trove_attrs_free(&t);
        if ((rc = trove_attrs_decode(b.ptr, b.len, &t, diag)) != TROVE_OK) {
            char what[64];
            snprintf(what, sizeof what, "attributes (slot %" PRIu64 ")", slot);
            rc = trove__capture_prefix_diag(diag, rc, name, what);
            goto out;
        }
        rows += t.n;
        for (size_t i = 0; i < t.n; i++)
            if (t.rows[i].event >= limit) {
                rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                                "capture %s: attributes (slot %" PRIu64 ") of event %" PRIu64
                                ", past the %" PRIu64 " it is for",
                                name, slot, t.rows[i].event, limit);
                goto out;
            }
        if (k < h.info.segments && !whole) { /* the rows of the range */
            uint64_t lo = from > k * per ? from - k * per : 0;
            uint64_t hi = to_ev - k * per < per ? to_ev - k * per : per;
            if ((rc = trove_attrs_append(to, &t, trove_attrs_find(&t, lo), trove_attrs_find(&t, hi),
                                         k * per, 0)) != TROVE_OK)
                goto nomem;
        } else if (to && (rc = trove_attrs_append(to, &t, 0, t.n,
                                                  k < h.info.segments ? k * per : 0, 0)) != TROVE_OK) {
            goto nomem;
        }
    }
    if (whole && rows != h.attr_rows) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                        "capture %s: the attributes hold %" PRIu64 " rows; the header says %"
                        PRIu64,
                        name, rows, h.attr_rows);
        goto out;
    }
    rc = TROVE_OK;
    goto out;
nomem:
    rc = TROVE_FAIL(diag, rc, 0, "capture %s: reading its attributes: %s", name,
                    trove_strerror(rc));
out:
    if (rc != TROVE_OK) {
        attrs->n = n0;
        if (meta)
            meta->n = m0;
    }
    trove_attrs_free(&t);
    trove_bytes_free(&b);
    trove_capture_header_free(&h);
    trove_volume_close(v);
    return rc;
}

int trove_capture_read_attrs(struct trove_store *s, const char *name, struct trove_attrs *attrs,
                             struct trove_attrs *meta, struct trove_diag *diag)
{
    struct trove_attrs none = {0};
    int rc = read_attrs(s, name, 0, UINT64_MAX, attrs, meta ? meta : &none, diag);
    trove_attrs_free(&none);
    return rc;
}

int trove_capture_read_attrs_range(struct trove_store *s, const char *name, uint64_t from,
                                   uint64_t to, struct trove_attrs *attrs,
                                   struct trove_diag *diag)
{
    return read_attrs(s, name, from, to, attrs, NULL, diag);
}
