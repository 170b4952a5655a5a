/*
 * capture_header.c: the capture header, formats v1 to v3 — the object in slot 0 of a
 * capture's volume (include/trove/capture.h, docs/formats/capture.md): the counts, the time
 * range and one index entry per segment, which is all replay needs to pick the segments of a
 * range, (v2) the size of the capture's flows object, (v3) of its profile objects, and (flag
 * 0x2, any version) the size and entries of each of its names parts.
 *
 *    0                8         12        16             24             32
 *   +----------------+---------+---------+--------------+--------------+
 *   | magic          | version | flags   | events   u64 | segments u64 |
 *   | "TROVCAP1"     | u32 1-3 | u32     | N            | S            |
 *   +----------------+---------+---------+--------------+--------------+
 *   32             40             48             56             64
 *   +--------------+--------------+--------------+--------------+
 *   | first_ns u64 | end_ns   u64 | names    u64 | raw_bytes u64|
 *   +--------------+--------------+--------------+--------------+
 *   64             72                 80                84          88
 *   +--------------+------------------+------------------+-----------+
 *   | names_bytes  | segment_bytes u64| frame_events u32 | reserved  |
 *   | u64          | B                | F                | u32 = 0   |  flag 0x2: names_parts K
 *   +--------------+------------------+------------------+-----------+
 *   88                                      88 + 40S        96 + 40S
 *   +------------------------------------ - +---------------+
 *   | entry[0] entry[1] ... entry[S-1]       | checksum u64  |  v1: xxh3-64 of every byte
 *   +------------------------------------ - +---------------+  before it
 *
 *   v2: the same, with a flows part between the entries and the checksum
 *   88 + 40S          96 + 40S            104 + 40S       112 + 40S
 *   +-----------------+-------------------+---------------+
 *   | flows u64       | flows_bytes u64   | checksum u64  |
 *   +-----------------+-------------------+---------------+
 *
 *   v3: v2, with a profile part between the flows part and the checksum
 *   112 + 40S     120 + 40S      128 + 40S          136 + 40S         144 + 40S
 *   +-------------+--------------+------------------+-----------------+---------------+
 *   | samples u64 | switches u64 | profile_objects  | profile_bytes   | checksum u64  |
 *   +-------------+--------------+------------------+-----------------+---------------+
 *
 *   flag 0x2 (names parts, any version): a part table between the last part above and the
 *   checksum, at T = the header's length - 8 - 8K
 *   T               T + 8              T + 8K           T + 8K + 8
 *   +---------------+---- - - - -------+----------------+
 *   | part[0]       | ... part[K-1]    | checksum u64   |   part: bytes u32, entries u32
 *   +---------------+---- - - - -------+----------------+
 *
 *   segment entry, 40 bytes
 *   0              8              16             24         28         32        36      40
 *   +--------------+--------------+--------------+----------+----------+---------+--------+
 *   | min_start_ns | max_start_ns | max_end_ns   | events   | frames   | bytes   |reserved|
 *   | u64          | u64          | u64          | u32      | u32      | u32     |u32 = 0 |
 *   +--------------+--------------+--------------+----------+----------+---------+--------+
 *
 * flags: bit 0 (0x1) says the segments may hold format 5 (columnar) frames besides deflate
 * ones (a capture written with a columnar segment format); bit 1 (0x2) that the names take
 * K = 2 .. 32 objects ("parts": slot 1, then slots 2 + S + F .. 2 + S + F + K - 2, F 1 with
 * flows), listed in the part table, and the u32 at 84 is K; bit 2 (0x4) summaries and bit 3
 * (0x8) attributes, each with its part before the part table (docs/formats/capture.md); bit 4
 * (0x10) format 8 (model) frames; bit 5 (0x20), with bit 0, that the format 5 frames are
 * deflated; bit 6 (0x40), with bit 0 or 4, that some segments are deflate ones too (an append
 * in another format); the other bits are 0. A reader
 * that predates a bit refuses the header instead of failing in the middle of a replay (or,
 * for names parts, reading one part as the whole names).
 *
 * Integers are little-endian. With E = B / 32 events per segment, segment k holds events
 * [kE, kE + E) of the capture, so every count follows from N, B and F: S = ceil(N / E);
 * every segment but the last holds E events and the last the rest (1 .. E); a segment of n
 * events is ceil(n / F) frames; raw_bytes = 32N. min_start_ns <= max_start_ns <= max_end_ns
 * per segment; first_ns is the least min_start_ns and end_ns the greatest max_end_ns (both 0
 * with no events). B is a multiple of 32 from 32 to 8 MiB, F is 1 .. 65536, S <= 2^18, a
 * segment object's bytes are at least 16 per frame and at most 16 MiB, the names object's
 * 16 .. 16 MiB bytes, and `names` at most (names_bytes - 16) / 3 (an entry is 3 bytes at
 * least). With flag 0x2 the names are K parts: each 16 .. 16 MiB bytes holding 1 ..
 * (bytes - 16) / 3 entries, the parts' bytes adding up to names_bytes (at most 256 MiB) and
 * their entries to `names`. The header is exactly 96 + 40S bytes (v2: 112 + 40S, v3:
 * 144 + 40S; 8K more with parts), at most 10 MiB: one object.
 * v2 is written for a capture that has flow rows or counter events (whose ends are their
 * starts: an older trove, which would take a counter's value for a duration, must refuse it
 * as newer); flows is the row count of the flows object in slot 2 + S (at most 2^28), and
 * flows_bytes its length (49 .. 16 MiB), both 0 when the capture has no flows (no slot).
 *
 * One checker serves both directions: the decoder runs it over the input, and the encoder
 * writes the bytes past out->len and runs it over them before it counts them, so whatever
 * encodes decodes and a header that breaks a rule is refused rather than written. The
 * checker reads the fixed part, bounds S and K before they multiply, requires the exact length,
 * verifies the checksum, and only then checks the fields, so it never reads past buf[len)
 * and a bit flip is reported as one. The magic, the version gate and the checksum are the
 * checks every sealed object shares (common/sealed.h), in their words. It allocates
 * nothing; the decoder allocates the entry array after it passed, so the allocation is
 * bounded by the input's length.
 */
#include "capture_internal.h"
#include "trove/attrs.h"
#include "common/alloc.h"
#include "common/fail.h"

#include "common/endian.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trove/wire.h"

#define WHAT "capture header" /* the object, in the sealed checks' messages */

_Static_assert(sizeof TROVE__CAPTURE_MAGIC - 1 == 8, "the magic is 8 bytes");
_Static_assert(TROVE__CAPTURE_FIXED + TROVE__CAPTURE_ENTRY * TROVE_CAPTURE_MAX_SEGMENTS +
                       TROVE__CAPTURE_TRAILER <= TROVE_CAPTURE_MAX_OBJECT,
               "the largest header fits in one object");

/* the versions this build reads */
static const uint32_t known_versions[] = {TROVE__CAPTURE_VERSION, TROVE__CAPTURE_VERSION2,
                                          TROVE__CAPTURE_VERSION3};

#define FLOWS_PART 16u /* v2: flows and flows_bytes */
#define FLOWS_MIN_BYTES 49u /* the smallest flows object: its 40-byte head, deflate, checksum */
#define PROFILE_PART 32u /* v3: samples, switches, profile_objects, profile_bytes */
/* The smallest profile object: one samples frame, a 16-byte header and a deflate stream. */
#define PROFILE_MIN_BYTES 17u
#define NAMES_PART 8u /* flag 0x2: a part table entry, bytes and entries */
#define SUMMARY_PART 8u /* flag 0x4: summary_bytes */
#define SUMMARY_MIN_BYTES 41u /* the smallest summary object: 32-byte head, deflate, checksum */
#define ATTRS_PART 16u /* flag 0x8: attr_rows, attrs_bytes */
#define ATTRS_MIN_BYTES 56u /* the smallest attributes object: 48-byte head, checksum */

size_t trove_capture_header_size(uint64_t segments)
{
    assert(segments <= TROVE_CAPTURE_MAX_SEGMENTS);
    return TROVE__CAPTURE_FIXED + TROVE__CAPTURE_ENTRY * (size_t)segments + TROVE__CAPTURE_TRAILER;
}

/* parts: the names parts, 0 or 1 for one names object (no part table); flags: the header's
 * (0x4 adds the summary part). */
static size_t header_size(uint32_t version, uint64_t segments, uint32_t parts, uint32_t flags)
{
    return trove_capture_header_size(segments) + (version >= 2 ? FLOWS_PART : 0) +
           (version >= 3 ? PROFILE_PART : 0) + (parts >= 2 ? NAMES_PART * (size_t)parts : 0) +
           (flags & TROVE_CAPTURE_FLAG_SUMMARY ? SUMMARY_PART : 0) +
           (flags & TROVE_CAPTURE_FLAG_ATTRS ? ATTRS_PART : 0);
}

/* The fields of the fixed part (and v2's flows part), as read by check(). */
struct fixed {
    uint64_t events, segments, first_ns, end_ns, names, raw_bytes, names_bytes, segment_bytes;
    uint64_t flows, flows_bytes;
    uint64_t samples, switches, profile_objects, profile_bytes;
    uint64_t summary_bytes; /* flag 0x4 */
    uint64_t attr_rows, attrs_bytes; /* flag 0x8 */
    uint32_t frame_events, version, flags, parts; /* parts: K with flag 0x2, else 0 */
};

static void read_fixed(const uint8_t *buf, struct fixed *f)
{
    f->version = trove__get_le32(buf + 8);
    f->events = trove__get_le64(buf + 16);
    f->segments = trove__get_le64(buf + 24);
    f->first_ns = trove__get_le64(buf + 32);
    f->end_ns = trove__get_le64(buf + 40);
    f->names = trove__get_le64(buf + 48);
    f->raw_bytes = trove__get_le64(buf + 56);
    f->names_bytes = trove__get_le64(buf + 64);
    f->segment_bytes = trove__get_le64(buf + 72);
    f->frame_events = trove__get_le32(buf + 80);
    f->flags = trove__get_le32(buf + 12);
    f->parts = f->flags & TROVE_CAPTURE_FLAG_NAMES_PARTS ? trove__get_le32(buf + 84) : 0;
    f->flows = f->flows_bytes = 0;
    f->samples = f->switches = f->profile_objects = f->profile_bytes = 0;
    f->summary_bytes = 0;
    f->attr_rows = f->attrs_bytes = 0;
}

/* Where flag 0x8's attributes part is: right before the names part table (or the checksum). */
static size_t attrs_part_at(size_t len, const struct fixed *f)
{
    return len - TROVE__CAPTURE_TRAILER - NAMES_PART * (size_t)f->parts -
           (f->flags & TROVE_CAPTURE_FLAG_ATTRS ? ATTRS_PART : 0);
}

/* Flag 0x4's summary part: right before the attributes part (or the names part table, or the
 * checksum), and flag 0x8's, once the length is known to hold them. */
static void read_summary_part(const uint8_t *buf, size_t len, struct fixed *f)
{
    size_t at = attrs_part_at(len, f);
    if (f->flags & TROVE_CAPTURE_FLAG_SUMMARY)
        f->summary_bytes = trove__get_le64(buf + at - SUMMARY_PART);
    if (f->flags & TROVE_CAPTURE_FLAG_ATTRS) {
        f->attr_rows = trove__get_le64(buf + at);
        f->attrs_bytes = trove__get_le64(buf + at + 8);
    }
}

/* v2's flows part, once the length is known to hold it. */
static void read_flows_part(const uint8_t *buf, struct fixed *f)
{
    if (f->version >= 2) {
        size_t at = TROVE__CAPTURE_FIXED + TROVE__CAPTURE_ENTRY * (size_t)f->segments;
        f->flows = trove__get_le64(buf + at);
        f->flows_bytes = trove__get_le64(buf + at + 8);
    }
    if (f->version >= 3) {
        size_t at = TROVE__CAPTURE_FIXED + TROVE__CAPTURE_ENTRY * (size_t)f->segments + FLOWS_PART;
        f->samples = trove__get_le64(buf + at);
        f->switches = trove__get_le64(buf + at + 8);
        f->profile_objects = trove__get_le64(buf + at + 16);
        f->profile_bytes = trove__get_le64(buf + at + 24);
    }
}

/* Check segment entry k (at buf + at) of a header whose fixed part is f. */
static int check_entry(const uint8_t *p, uint64_t k, uint64_t at, const struct fixed *f,
                       struct trove_diag *diag)
{
    uint64_t per = f->segment_bytes / TROVE_EVENT_SIZE;
    uint64_t want = k + 1 < f->segments ? per : f->events - (f->segments - 1) * per;
    uint64_t min_start = trove__get_le64(p), max_start = trove__get_le64(p + 8);
    uint64_t max_end = trove__get_le64(p + 16);
    uint32_t events = trove__get_le32(p + 24), frames = trove__get_le32(p + 28);
    uint32_t bytes = trove__get_le32(p + 32), reserved = trove__get_le32(p + 36);
    uint64_t want_frames;

    if (events != want)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 24,
                          "capture header: segment %" PRIu64 " says %" PRIu32 " events; "
                          "%" PRIu64 " events in segments of %" PRIu64 " give it %" PRIu64,
                          k, events, f->events, per, want);
    want_frames = trove__div_up(events, f->frame_events);
    if (frames != want_frames)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 28,
                          "capture header: segment %" PRIu64 " says %" PRIu32 " frames; its "
                          "%" PRIu32 " events in frames of %" PRIu32 " make %" PRIu64,
                          k, frames, events, f->frame_events, want_frames);
    if (bytes < (uint64_t)TROVE_WIRE_HEADER_SIZE * frames || bytes > TROVE_CAPTURE_MAX_OBJECT)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 32,
                          "capture header: segment %" PRIu64 " says its object is %" PRIu32
                          " bytes; %" PRIu32 " frames need %u to %" PRIu32,
                          k, bytes, frames, TROVE_WIRE_HEADER_SIZE * frames,
                          TROVE_CAPTURE_MAX_OBJECT);
    if (reserved != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 36,
                          "capture header: segment %" PRIu64 " reserved field is 0x%" PRIx32
                          ", must be 0",
                          k, reserved);
    if (min_start > max_start || max_start > max_end)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                          "capture header: segment %" PRIu64 " times are out of order "
                          "(min start %" PRIu64 ", max start %" PRIu64 ", max end %" PRIu64
                          "); they must not decrease",
                          k, min_start, max_start, max_end);
    return TROVE_OK;
}

/* The names part table of a header whose fixed part is f (flag 0x2: f->parts is 2 .. 32 and
 * the length holds the table): each part's rules, and that the parts add up to the names. */
static int check_parts(const uint8_t *buf, size_t len, const struct fixed *f,
                       struct trove_diag *diag)
{
    const size_t table = len - TROVE__CAPTURE_TRAILER - NAMES_PART * (size_t)f->parts;
    uint64_t bytes = 0, entries = 0;

    if (f->names_bytes > TROVE_CAPTURE_MAX_NAMES_BYTES)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 64,
                          "capture header says the names are %" PRIu64 " bytes, over the %"
                          PRIu64 " a capture holds",
                          f->names_bytes, TROVE_CAPTURE_MAX_NAMES_BYTES);
    for (uint32_t j = 0; j < f->parts; j++) {
        const size_t at = table + NAMES_PART * (size_t)j;
        const uint32_t b = trove__get_le32(buf + at), e = trove__get_le32(buf + at + 4);
        if (b < TROVE_WIRE_HEADER_SIZE || b > TROVE_CAPTURE_MAX_OBJECT)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "capture header says names part %" PRIu32 " is %" PRIu32
                              " bytes; a part is %u to %" PRIu32,
                              j, b, TROVE_WIRE_HEADER_SIZE, TROVE_CAPTURE_MAX_OBJECT);
        if (e < 1 || e > (b - TROVE_WIRE_HEADER_SIZE) / 3)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 4,
                              "capture header says names part %" PRIu32 " holds %" PRIu32
                              " entries; its %" PRIu32 " bytes hold 1 to %" PRIu32,
                              j, e, b, (b - TROVE_WIRE_HEADER_SIZE) / 3);
        bytes += b; /* at most 32 * 2^24: no overflow */
        entries += e;
    }
    if (bytes != f->names_bytes)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 64,
                          "capture header says the names are %" PRIu64 " bytes but its %" PRIu32
                          " parts add up to %" PRIu64,
                          f->names_bytes, f->parts, bytes);
    if (entries != f->names)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 48,
                          "capture header says %" PRIu64 " names but its %" PRIu32 " parts "
                          "hold %" PRIu64,
                          f->names, f->parts, entries);
    return TROVE_OK;
}

/* Every rule of the format over buf[0..len); allocates nothing. */
static int check(const uint8_t *buf, size_t len, struct trove_diag *diag)
{
    struct fixed f;
    uint64_t want, per, min_start = UINT64_MAX, max_end = 0;
    uint32_t version, flags, reserved;
    int rc;

    if (len < TROVE__CAPTURE_FIXED + TROVE__CAPTURE_TRAILER)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "capture header is %zu bytes, shorter than its %u-byte fixed part "
                          "and checksum; the object was cut short",
                          len, TROVE__CAPTURE_FIXED + TROVE__CAPTURE_TRAILER);
    if ((rc = trove__sealed_magic(buf, len, TROVE__CAPTURE_MAGIC, WHAT, diag)) != TROVE_OK)
        return rc;
    version = trove__get_le32(buf + 8);
    if ((rc = trove__sealed_version(version, 8, known_versions, 3, WHAT, "versions 1 to 3",
                                    diag)))
        return rc;
    flags = trove__get_le32(buf + 12);
    if (flags & ~TROVE__CAPTURE_FLAGS)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 12,
                          "capture header flags are 0x%" PRIx32 "; version %" PRIu32
                          " defines only 0x1 (columnar segments), 0x2 (names parts), 0x4 "
                          "(summaries), 0x8 (attributes), 0x10 (model segments), 0x20 (deflated "
                          "columnar segments) and 0x40 (deflate segments besides); a newer "
                          "trove wrote it?",
                          flags, version);
    reserved = trove__get_le32(buf + 84);
    if (!(flags & TROVE_CAPTURE_FLAG_NAMES_PARTS) && reserved != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 84,
                          "capture header reserved field is 0x%" PRIx32 ", must be 0 "
                          "(without flag 0x2, names parts)",
                          reserved);
    read_fixed(buf, &f);
    if (f.segments > TROVE_CAPTURE_MAX_SEGMENTS)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 24,
                          "capture header lists %" PRIu64 " segments, over the limit of %"
                          PRIu64,
                          f.segments, TROVE_CAPTURE_MAX_SEGMENTS);
    /* K is bounded before it multiplies too; one part is no flag (the header before parts) */
    if ((flags & TROVE_CAPTURE_FLAG_NAMES_PARTS) && f.parts > TROVE_CAPTURE_MAX_NAMES_PARTS)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 84,
                          "capture header says the names are %" PRIu32 " parts, over the "
                          "limit of %u",
                          f.parts, TROVE_CAPTURE_MAX_NAMES_PARTS);
    if ((flags & TROVE_CAPTURE_FLAG_NAMES_PARTS) && f.parts < 2)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 84,
                          "capture header says the names are %" PRIu32 " parts; with flag "
                          "0x2 they are 2 to %u (one object has no flag)",
                          f.parts, TROVE_CAPTURE_MAX_NAMES_PARTS);
    want = header_size(version, f.segments, f.parts, flags);
    if ((uint64_t)len != want) {
        if ((uint64_t)len < want)
            return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                              "capture header is %zu bytes but its %" PRIu64 " segments%s need "
                              "%" PRIu64 "; the object was cut short",
                              len, f.segments, f.parts ? " and names part table" : "", want);
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, want,
                          "capture header is %zu bytes but its %" PRIu64 " segments%s need %"
                          PRIu64 "; %" PRIu64 " stray bytes follow the checksum",
                          len, f.segments, f.parts ? " and names part table" : "", want,
                          (uint64_t)len - want);
    }
    if ((rc = trove__sealed_trailer(buf, len, WHAT, diag)) != TROVE_OK)
        return rc;
    read_flows_part(buf, &f);
    read_summary_part(buf, len, &f);
    if (flags & TROVE_CAPTURE_FLAG_SUMMARY) {
        /* S segments have S + S/64 + ... summary objects, each within an object's bounds */
        uint64_t z = 0, n = f.segments, at = attrs_part_at(len, &f) - SUMMARY_PART;
        while (n > 0) {
            z += n;
            n = n > 1 ? trove__div_up(n, 64) : 0;
        }
        if (f.summary_bytes < SUMMARY_MIN_BYTES * z ||
            f.summary_bytes > (uint64_t)TROVE_CAPTURE_MAX_OBJECT * z)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "capture header says %" PRIu64 " summary objects take %" PRIu64
                              " bytes; each is %u to %" PRIu32,
                              z, f.summary_bytes, SUMMARY_MIN_BYTES, TROVE_CAPTURE_MAX_OBJECT);
    }

    if (flags & TROVE_CAPTURE_FLAG_ATTRS) {
        /* S + 1 attributes objects, each within an object's bounds and the rows' limit */
        uint64_t objs = f.segments + 1, at = attrs_part_at(len, &f);
        if (f.attr_rows > TROVE_ATTRS_MAX_ROWS * objs)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "capture header says %" PRIu64 " attribute rows, over %" PRIu64
                              " objects' limit",
                              f.attr_rows, objs);
        if (f.attrs_bytes < ATTRS_MIN_BYTES * objs ||
            f.attrs_bytes > (uint64_t)TROVE_CAPTURE_MAX_OBJECT * objs)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 8,
                              "capture header says %" PRIu64 " attributes objects take %" PRIu64
                              " bytes; each is %u to %" PRIu32,
                              objs, f.attrs_bytes, ATTRS_MIN_BYTES, TROVE_CAPTURE_MAX_OBJECT);
    }

    /* The fields, now that the bytes are known to be what was written. */
    if (version >= 2) {
        uint64_t at = TROVE__CAPTURE_FIXED + TROVE__CAPTURE_ENTRY * f.segments;
        if (f.flows > TROVE_FLOWS_MAX)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "capture header says %" PRIu64 " flow rows, over the %" PRIu64
                              " a capture holds",
                              f.flows, TROVE_FLOWS_MAX);
        if (f.flows == 0 ? f.flows_bytes != 0
                         : f.flows_bytes < FLOWS_MIN_BYTES ||
                               f.flows_bytes > TROVE_CAPTURE_MAX_OBJECT)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 8,
                              "capture header says the flows object of %" PRIu64 " rows is %"
                              PRIu64 " bytes; it must be 0 for no rows, else %u to %" PRIu32,
                              f.flows, f.flows_bytes, FLOWS_MIN_BYTES, TROVE_CAPTURE_MAX_OBJECT);
    }
    if (version >= 3) {
        uint64_t at = TROVE__CAPTURE_FIXED + TROVE__CAPTURE_ENTRY * f.segments + FLOWS_PART;
        if (f.profile_objects < 1 || f.profile_objects > TROVE_CAPTURE_MAX_PROFILE_OBJECTS)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 16,
                              "capture header says the profile is %" PRIu64 " objects; a "
                              "version 3 header has 1 to %" PRIu64,
                              f.profile_objects, TROVE_CAPTURE_MAX_PROFILE_OBJECTS);
        if (f.profile_bytes < PROFILE_MIN_BYTES * f.profile_objects ||
            f.profile_bytes > (uint64_t)TROVE_CAPTURE_MAX_OBJECT * f.profile_objects)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at + 24,
                              "capture header says %" PRIu64 " profile objects take %" PRIu64
                              " bytes; each is %u to %" PRIu32,
                              f.profile_objects, f.profile_bytes, PROFILE_MIN_BYTES,
                              TROVE_CAPTURE_MAX_OBJECT);
        /* a sample is 4 bytes of body at least, a switch 4, and a body at most 1032 times
         * its deflate stream */
        if (f.samples > f.profile_bytes * 1032 / 4 || f.switches > f.profile_bytes * 1032 / 4)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "capture header says %" PRIu64 " samples and %" PRIu64
                              " switches; %" PRIu64 " profile bytes cannot hold them",
                              f.samples, f.switches, f.profile_bytes);
    }
    if (f.segment_bytes < TROVE_EVENT_SIZE || f.segment_bytes % TROVE_EVENT_SIZE != 0 ||
        f.segment_bytes > TROVE_CAPTURE_MAX_SEGMENT_BYTES)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 72,
                          "capture header segment_bytes is %" PRIu64 "; it must be a multiple "
                          "of 32 from 32 to %" PRIu64,
                          f.segment_bytes, TROVE_CAPTURE_MAX_SEGMENT_BYTES);
    if (f.frame_events < 1 || f.frame_events > TROVE_WIRE_MAX_EVENTS)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 80,
                          "capture header frame_events is %" PRIu32 "; it must be 1 to %u",
                          f.frame_events, TROVE_WIRE_MAX_EVENTS);
    per = f.segment_bytes / TROVE_EVENT_SIZE;
    if (f.segments != trove__div_up(f.events, per))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 24,
                          "capture header says %" PRIu64 " segments; %" PRIu64 " events in "
                          "segments of %" PRIu64 " make %" PRIu64,
                          f.segments, f.events, per, trove__div_up(f.events, per));
    /* events <= segments * per <= 2^36 now, so 32 * events cannot overflow. */
    if (f.raw_bytes != f.events * TROVE_EVENT_SIZE)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 56,
                          "capture header raw_bytes is %" PRIu64 "; %" PRIu64 " events are %"
                          PRIu64 " bytes",
                          f.raw_bytes, f.events, f.events * TROVE_EVENT_SIZE);
    if (f.parts == 0) {
        if (f.names_bytes < TROVE_WIRE_HEADER_SIZE || f.names_bytes > TROVE_CAPTURE_MAX_OBJECT)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 64,
                              "capture header says the names object is %" PRIu64 " bytes; it "
                              "must be %u to %" PRIu32,
                              f.names_bytes, TROVE_WIRE_HEADER_SIZE, TROVE_CAPTURE_MAX_OBJECT);
        if (f.names > (f.names_bytes - TROVE_WIRE_HEADER_SIZE) / 3)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 48,
                              "capture header says %" PRIu64 " names; a names object of %"
                              PRIu64 " bytes holds at most %" PRIu64,
                              f.names, f.names_bytes,
                              (f.names_bytes - TROVE_WIRE_HEADER_SIZE) / 3);
    } else if ((rc = check_parts(buf, len, &f, diag)) != TROVE_OK) {
        return rc;
    }
    for (uint64_t k = 0; k < f.segments; k++) {
        uint64_t at = TROVE__CAPTURE_FIXED + TROVE__CAPTURE_ENTRY * k;
        if ((rc = check_entry(buf + at, k, at, &f, diag)) != TROVE_OK)
            return rc;
        if (trove__get_le64(buf + at) < min_start)
            min_start = trove__get_le64(buf + at);
        if (trove__get_le64(buf + at + 16) > max_end)
            max_end = trove__get_le64(buf + at + 16);
    }
    if (f.segments == 0)
        min_start = 0;
    if (f.first_ns != min_start)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 32,
                          "capture header first_ns is %" PRIu64 " but the least segment "
                          "start is %" PRIu64,
                          f.first_ns, min_start);
    if (f.end_ns != max_end)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 40,
                          "capture header end_ns is %" PRIu64 " but the greatest segment "
                          "end is %" PRIu64,
                          f.end_ns, max_end);
    return TROVE_OK;
}

int trove_capture_header_encode(const struct trove_capture_header *h, struct trove_bytes *out)
{
    const struct trove_capture_info *in;
    uint64_t segments;
    uint32_t version, parts, flags;
    size_t total;
    uint8_t *p, *q;
    int rc;

    if (!h || !out)
        return TROVE_ERR_INVALID;
    in = &h->info;
    segments = in->segments;
    version = h->version ? h->version : h->profile_objects ? 3 : in->flows ? 2 : 1;
    parts = h->names_parts >= 2 ? h->names_parts : 0;
    flags = (in->flags & ~TROVE_CAPTURE_FLAG_NAMES_PARTS) |
            (parts ? TROVE_CAPTURE_FLAG_NAMES_PARTS : 0);
    if (segments > TROVE_CAPTURE_MAX_SEGMENTS || parts > TROVE_CAPTURE_MAX_NAMES_PARTS)
        return TROVE_ERR_LIMIT;
    if ((segments > 0 && !h->seg) || version > 3 ||
        (flags & ~TROVE__CAPTURE_FLAGS) ||
        (version == 1 && (in->flows || h->flows_bytes)) ||
        (version < 3 && (h->profile_objects || h->profile_bytes || in->samples || in->switches)))
        return TROVE_ERR_INVALID;
    total = header_size(version, segments, parts, flags);
    if ((rc = trove_bytes_reserve(out, total)) != TROVE_OK)
        return rc;

    p = q = out->ptr + out->len;
    memcpy(q, TROVE__CAPTURE_MAGIC, 8);
    trove__put_le32(q + 8, version);
    trove__put_le32(q + 12, flags);
    trove__put_le64(q + 16, in->events);
    trove__put_le64(q + 24, segments);
    trove__put_le64(q + 32, in->first_ns);
    trove__put_le64(q + 40, in->end_ns);
    trove__put_le64(q + 48, in->names);
    trove__put_le64(q + 56, in->raw_bytes);
    trove__put_le64(q + 64, h->names_bytes);
    trove__put_le64(q + 72, h->segment_bytes);
    trove__put_le32(q + 80, h->frame_events);
    trove__put_le32(q + 84, parts);
    q += TROVE__CAPTURE_FIXED;
    for (uint64_t k = 0; k < segments; k++, q += TROVE__CAPTURE_ENTRY) {
        const struct trove_capture_segment *s = &h->seg[k];
        trove__put_le64(q, s->min_start_ns);
        trove__put_le64(q + 8, s->max_start_ns);
        trove__put_le64(q + 16, s->max_end_ns);
        trove__put_le32(q + 24, s->events);
        trove__put_le32(q + 28, s->frames);
        trove__put_le32(q + 32, s->bytes);
        trove__put_le32(q + 36, 0);
    }
    if (version >= 2) {
        trove__put_le64(q, in->flows);
        trove__put_le64(q + 8, h->flows_bytes);
        q += FLOWS_PART;
    }
    if (version >= 3) {
        trove__put_le64(q, in->samples);
        trove__put_le64(q + 8, in->switches);
        trove__put_le64(q + 16, h->profile_objects);
        trove__put_le64(q + 24, h->profile_bytes);
        q += PROFILE_PART;
    }
    if (flags & TROVE_CAPTURE_FLAG_SUMMARY) {
        trove__put_le64(q, h->summary_bytes);
        q += SUMMARY_PART;
    }
    if (flags & TROVE_CAPTURE_FLAG_ATTRS) {
        trove__put_le64(q, h->attr_rows);
        trove__put_le64(q + 8, h->attrs_bytes);
        q += ATTRS_PART;
    }
    for (uint32_t j = 0; j < parts; j++, q += NAMES_PART) {
        trove__put_le32(q, h->names_part[j].bytes);
        trove__put_le32(q + 4, h->names_part[j].entries);
    }
    assert(q + TROVE__CAPTURE_TRAILER == p + total);
    trove__sealed_seal(p, total);
    /* Counted only if it obeys every rule the decoder checks. */
    if (check(p, total, NULL) != TROVE_OK)
        return TROVE_ERR_INVALID;
    out->len += total;
    return TROVE_OK;
}

int trove_capture_header_decode(const uint8_t *buf, size_t len, struct trove_capture_header *h,
                                struct trove_diag *diag)
{
    struct trove_capture_header r;
    struct fixed f;
    int rc;

    if (!h || (!buf && len > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "capture header decode called without a buffer or an output");
    if ((rc = check(buf, len, diag)) != TROVE_OK)
        return rc;
    read_fixed(buf, &f);
    memset(&r, 0, sizeof r);
    r.info.events = f.events;
    r.info.segments = f.segments;
    r.info.first_ns = f.first_ns;
    r.info.end_ns = f.end_ns;
    r.info.names = f.names;
    r.info.raw_bytes = f.raw_bytes;
    read_flows_part(buf, &f);
    read_summary_part(buf, len, &f);
    r.summary_bytes = f.summary_bytes;
    r.attr_rows = r.info.attr_rows = f.attr_rows;
    r.attrs_bytes = r.info.attrs_bytes = f.attrs_bytes;
    r.info.flows = f.flows;
    r.info.samples = f.samples;
    r.info.switches = f.switches;
    r.info.stored_bytes = len + f.names_bytes + f.flows_bytes + f.profile_bytes + f.summary_bytes +
                          f.attrs_bytes;
    r.version = f.version;
    r.info.flags = trove__get_le32(buf + 12);
    r.flows_bytes = f.flows_bytes;
    r.profile_objects = f.profile_objects;
    r.profile_bytes = f.profile_bytes;
    r.segment_bytes = f.segment_bytes;
    r.frame_events = f.frame_events;
    r.names_bytes = f.names_bytes;
    if (f.parts == 0) {
        r.names_parts = 1; /* checked: within an object, names <= names_bytes / 3 */
        r.names_part[0].bytes = (uint32_t)f.names_bytes;
        r.names_part[0].entries = (uint32_t)f.names;
    } else {
        const uint8_t *t = buf + len - TROVE__CAPTURE_TRAILER - NAMES_PART * (size_t)f.parts;
        r.names_parts = f.parts;
        for (uint32_t j = 0; j < f.parts; j++) {
            r.names_part[j].bytes = trove__get_le32(t + NAMES_PART * (size_t)j);
            r.names_part[j].entries = trove__get_le32(t + NAMES_PART * (size_t)j + 4);
        }
    }
    /* segments <= 2^18, and the length was checked against it: a bounded allocation. */
    if (f.segments > 0 && !(r.seg = trove__malloc((size_t)f.segments * sizeof *r.seg)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0,
                          "out of memory for %" PRIu64 " capture segment entries", f.segments);
    for (uint64_t k = 0; k < f.segments; k++) {
        const uint8_t *p = buf + TROVE__CAPTURE_FIXED + TROVE__CAPTURE_ENTRY * k;
        struct trove_capture_segment *s = &r.seg[k];
        s->min_start_ns = trove__get_le64(p);
        s->max_start_ns = trove__get_le64(p + 8);
        s->max_end_ns = trove__get_le64(p + 16);
        s->events = trove__get_le32(p + 24);
        s->frames = trove__get_le32(p + 28);
        s->bytes = trove__get_le32(p + 32);
        r.info.stored_bytes += s->bytes;
    }
    *h = r;
    return TROVE_OK;
}

void trove_capture_header_free(struct trove_capture_header *h)
{
    if (!h)
        return;
    free(h->seg);
    h->seg = NULL;
}
