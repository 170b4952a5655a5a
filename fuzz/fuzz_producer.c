/*
 * fuzz_producer.c: libFuzzer target for what a producer sends the service (src/net/
 * producer.c): the bytes after the first are the stream, fed to the framer in pieces whose
 * sizes the first byte seeds; the hello goes to the hello parser, each frame's header to the
 * framer's header hook and each frame to the wire decoder, and the decoded names and events
 * to the capture's name mapping (src/net/remap.c) within a small bound on the capture's
 * names, an attrs frame to its decoder (rows never going back in event), as the service does. Oracles: the same stream fed whole must give the same hello,
 * the same headers and frames in the same order and the same result; nothing may read past
 * a piece; every frame handed out is exactly its header's length, after its header; a names
 * frame the bound refuses changes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "net/producer.h"
#include "net/remap.h"
#include "trove/attrs.h"
#include "trove/wire.h"

#define NAMES_MAX 4096 /* the capture's names bound here: small, so that it is reached */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct run {
    struct trove_wire_decoder *dec;
    struct trove_names *names;
    struct trove__capture_names *cn;
    struct trove__producer_names *pn;
    struct trove_bytes seen; /* hello, headers and frames, with their lengths, to compare */
    int headers;             /* headers handed out, less frames handed out: 0 or 1 */
    int hello_rc;
    int tsc;                 /* the hello said "clock":"tsc": the service converts */
    struct trove__clock clock;
};

static struct trove_event ev[TROVE_WIRE_MAX_EVENTS];

static int on_hello(void *ctx, const uint8_t *line, size_t len)
{
    struct run *r = ctx;
    struct trove__hello h;
    r->hello_rc = trove__hello_parse(line, len, &h, NULL);
    r->tsc = r->hello_rc == TROVE_OK && h.clock_tsc;
    if (r->tsc)
        trove__clock_init(&r->clock, &h);
    trove_bytes_append(&r->seen, &len, sizeof len);
    return trove_bytes_append(&r->seen, line, len);
}

static int on_header(void *ctx, const struct trove_wire_header *h)
{
    struct run *r = ctx;
    uint32_t f[5] = {h->format, h->version, h->count, h->payload_len, h->raw_len};
    CHECK(r->headers == 0); /* one header for each frame, before it */
    r->headers = 1;
    return trove_bytes_append(&r->seen, f, sizeof f); /* the fields: not the padding */
}

static int on_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct run *r = ctx;
    struct trove_wire_header h;
    struct trove_wire_frame fr;
    if (trove_wire_parse_header(frame, len, &h, NULL) != TROVE_OK ||
        len != TROVE_WIRE_HEADER_SIZE + (size_t)h.payload_len)
        abort(); /* the framer handed out a frame its header does not describe */
    CHECK(r->headers == 1);
    r->headers = 0;
    trove_bytes_append(&r->seen, &len, sizeof len);
    trove_bytes_append(&r->seen, frame, len);
    /* The service's own next steps; a frame that does not decode closes the producer. */
    if (h.format == TROVE_WIRE_NAMES) {
        struct trove_names *added = NULL, *out = NULL;
        int rc;
        if (trove_names_new(&added) != TROVE_OK || trove_names_new(&out) != TROVE_OK)
            abort();
        rc = trove_wire_decode(r->dec, frame, len, ev, TROVE_WIRE_MAX_EVENTS, added, &fr, NULL);
        if (rc == TROVE_OK && (rc = trove_names_merge(r->names, added)) == TROVE_OK) {
            uint64_t before = trove__capture_names_stored_bytes(r->cn), would = 0;
            rc = trove__remap_names_max(r->cn, r->pn, added, out, NAMES_MAX, &would);
            if (rc == TROVE_ERR_LIMIT && would > NAMES_MAX) /* refused: nothing changed */
                CHECK(trove__capture_names_stored_bytes(r->cn) == before &&
                      trove_names_count(out) == 0);
            else if (rc == TROVE_OK) /* would: an upper bound (a name twice counts twice) */
                CHECK(trove__capture_names_stored_bytes(r->cn) <= would && would <= NAMES_MAX);
        }
        trove_names_free(added);
        trove_names_free(out);
        return rc;
    }
    if (h.format == TROVE_WIRE_ATTRS) { /* the next events frame's rows, as ingest.c holds them */
        struct trove_attrs t;
        int rc;
        memset(&t, 0x5a, sizeof t);
        rc = trove_attrs_wire_decode(frame, len, &t, NULL);
        if (rc == TROVE_OK) {
            for (size_t i = 1; i < t.n; i++)
                CHECK(t.rows[i].event >= t.rows[i - 1].event);
            trove_attrs_free(&t);
        }
        return rc;
    }
    {
        int rc = trove_wire_decode(r->dec, frame, len, ev, TROVE_WIRE_MAX_EVENTS, NULL, &fr, NULL);
        if (rc == TROVE_OK && r->tsc)
            trove__clock_apply(&r->clock, ev, fr.n_events);
        if (rc == TROVE_OK)
            rc = trove__remap_events(r->cn, r->pn, ev, fr.n_events);
        return rc;
    }
}

static int feed(const uint8_t *data, size_t size, unsigned seed, struct run *r)
{
    struct trove__framer f;
    size_t at = 0;
    int rc = TROVE_OK;

    memset(r, 0, sizeof *r);
    if (trove_wire_decoder_new(&r->dec) != TROVE_OK || trove_names_new(&r->names) != TROVE_OK ||
        trove__capture_names_new(&r->cn) != TROVE_OK ||
        trove__producer_names_new(&r->pn) != TROVE_OK)
        abort();
    trove__framer_init(&f);
    f.header = on_header;
    while (at < size && rc == TROVE_OK) {
        size_t n = seed ? 1 + (seed = seed * 1103515245u + 12345u) % 97 : size;
        uint8_t *piece;
        if (n > size - at)
            n = size - at;
        /* A copy of exactly the piece, so that ASan sees a read past it. */
        if (!(piece = malloc(n)))
            abort();
        memcpy(piece, data + at, n);
        rc = trove__framer_feed(&f, piece, n, on_hello, on_frame, r, NULL);
        free(piece);
        at += n;
    }
    trove__framer_free(&f);
    trove_wire_decoder_free(r->dec);
    trove_names_free(r->names);
    trove__capture_names_free(r->cn);
    trove__producer_names_free(r->pn);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct run whole, pieces;
    int a, b;

    if (size < 1)
        return 0;
    a = feed(data + 1, size - 1, 0, &whole);
    b = feed(data + 1, size - 1, data[0] | 1u, &pieces);
    if (a != b || whole.hello_rc != pieces.hello_rc || whole.seen.len != pieces.seen.len ||
        (whole.seen.len > 0 && memcmp(whole.seen.ptr, pieces.seen.ptr, whole.seen.len) != 0))
        abort();
    trove_bytes_free(&whole.seen);
    trove_bytes_free(&pieces.seen);
    return 0;
}
