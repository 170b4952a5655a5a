/*
 * producer.h (internal): what a producer sends `trove serve` (docs/serve.md), read from a
 * byte stream that arrives in pieces of any size: one hello line of JSON, then a wire stream
 * of frames (docs/formats/wire.md). The framer cuts the stream into the hello and whole
 * frames, checking every header before it trusts a length; the hello parser reads the line's
 * fields. Neither blocks or allocates without a bound: the hello is at most
 * TROVE__HELLO_MAX bytes and a frame at most its header's limits. And what the service says
 * back: the answer lines (accept, refuse, error) written here, parsed by
 * trove_serve_answer_parse (trove/serve.h) on the producer's side.
 */
#ifndef TROVE_NET_PRODUCER_H
#define TROVE_NET_PRODUCER_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/serve.h"

#define TROVE__HELLO_MAX 4096u        /* bytes of the hello line, its newline included */
#define TROVE__PRODUCER_NAME_MAX 128u /* bytes of "producer" */
#define TROVE__TOKEN_MAX 256u         /* bytes of "token" */

struct trove__hello {
    char capture[129];                        /* a valid capture (volume) name */
    char producer[TROVE__PRODUCER_NAME_MAX + 1]; /* free text, "" if not given */
    char token[TROVE__TOKEN_MAX + 1];         /* "" if not given */
    uint32_t pid;                             /* 0 if not given */
    int append;                               /* "append": true */
    /* "clock": "tsc" says the events' times and durations are TSC ticks, and gives the
     * calibration: ns = ns_ref + (ticks - tsc_ref) * 1e9 / tsc_hz (trove__clock_apply). */
    int clock_tsc;
    uint64_t tsc_hz, tsc_ref, ns_ref;
    /* "names": "fallback" says the producer's thread and process names are guesses (a
     * sampler's /proc comm names): they name only what no other producer of the capture has
     * named, and a name another producer gives replaces them. "given", the default: names
     * the program gave, which replace any earlier one. */
    int names_fallback;
};

#define TROVE__TSC_HZ_MIN 1000000ull      /* 1 MHz .. */
#define TROVE__TSC_HZ_MAX 100000000000ull /* .. 100 GHz */

/* A TSC producer's conversion, set up from its hello: ns per tick as a 24.40 fixed-point
 * multiplier, precise to 2^-40 of a nanosecond per tick (about 7 ns an hour at 2.5 GHz). */
struct trove__clock {
    uint64_t tsc_ref, ns_ref, mult;
};

/* The conversion for a hello with "clock":"tsc" (its tsc_hz checked by the parser). */
void trove__clock_init(struct trove__clock *c, const struct trove__hello *h);
/* Convert n events from ticks to nanoseconds in place: start_ns always, dur_ns except a
 * counter's (which holds its value). A start before the clock's zero becomes 0. */
struct trove_event;
void trove__clock_apply(const struct trove__clock *c, struct trove_event *ev, size_t n);

/*
 * Parse one hello line (line[0..len), the newline excluded): a JSON object with "capture"
 * (required: 1..128 bytes of [A-Za-z0-9._-], not starting with '.' or '-'), and optionally
 * "producer" (a string of at most 128 bytes), "pid" (an integer 0..2^32-1), "append" (true
 * or false), "token" (a string of at most 256 bytes), "clock" ("ns", the default, or
 * "tsc", which needs "tsc_hz" (TROVE__TSC_HZ_MIN..MAX) and takes "tsc_ref" and "ns_ref",
 * integers 0..2^64-1, default 0), "names" ("given", the default, or "fallback"); other
 * members are skipped. Errors:
 * TROVE_ERR_JSON (not such an object; diag says where), TROVE_ERR_INVALID (a field of the
 * wrong type or out of range, a bad capture name), TROVE_ERR_LIMIT (a string too long).
 */
int trove__hello_parse(const uint8_t *line, size_t len, struct trove__hello *out,
                       struct trove_diag *diag);

/*
 * The service's answer lines (docs/serve.md, "Producers"), each one JSON object and a
 * newline, written into out (room for TROVE_SERVE_ANSWER_MAX bytes) and never longer: the
 * length is returned. An accept names the capture (a valid name: it needs no escaping), the
 * session, the mode (enum trove_serve_mode) and the events the mode counts. A refuse or an
 * error (type TROVE_SERVE_REFUSE or _ERROR) carries reason as a JSON string: a byte that is
 * not part of well-formed UTF-8 becomes '?', and a reason too long for the line is cut at a
 * character, with "..." after it.
 */
size_t trove__answer_accept(char *out, const char *capture, uint64_t session, int mode,
                            uint64_t events);
size_t trove__answer_reason(char *out, int type, const char *reason);
/* The line of a producer closed because the service stops: a refuse or an error (type), its
 * reason (cut as above, to leave room) followed by "stopping":true. */
size_t trove__answer_stopping(char *out, int type, const char *reason);

/* The framer's callbacks: return TROVE_OK to go on, anything else to stop (returned). */
struct trove_wire_header;
typedef int (*trove__hello_fn)(void *ctx, const uint8_t *line, size_t len);
typedef int (*trove__frame_fn)(void *ctx, const uint8_t *frame, size_t len);
typedef int (*trove__header_fn)(void *ctx, const struct trove_wire_header *h);

struct trove__framer {
    int got_hello;
    struct trove_bytes buf; /* bytes of an unfinished hello or frame */
    uint64_t offset;        /* stream bytes consumed before buf's first */
    int failed;             /* an error stopped it: every later feed returns it */
    int header_seen;        /* the unfinished frame's header went to `header` */
    /* Set by the owner after init (may stay NULL): called with each frame's header once it
     * is checked, before anything is buffered for its payload, so that the owner may refuse
     * a frame by its header (a bound on what the producer may send). */
    trove__header_fn header;
};

void trove__framer_init(struct trove__framer *f);
void trove__framer_free(struct trove__framer *f);

/*
 * Take the next len bytes of the stream: call hello once with the first line (its newline
 * not included), then frame with each whole frame (header and payload) in order. The
 * pointers are valid during the call only. A frame's header is checked
 * (trove_wire_parse_header) as soon as its 16 bytes are in, so an oversized length is
 * refused before anything is buffered for it (and then given to f->header, if set); its
 * payload is left to the decoder. Errors:
 * TROVE_ERR_LIMIT (no newline within TROVE__HELLO_MAX bytes), the header's errors (diag
 * gives the stream offset of the frame), TROVE_ERR_NOMEM, or a callback's; after one, every
 * call returns it again.
 */
int trove__framer_feed(struct trove__framer *f, const uint8_t *data, size_t len,
                       trove__hello_fn hello, trove__frame_fn frame, void *ctx,
                       struct trove_diag *diag);

/* Bytes held for an unfinished hello or frame (0 at a boundary: the stream may end). */
size_t trove__framer_pending(const struct trove__framer *f);

#endif
