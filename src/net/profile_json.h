/*
 * profile_json.h (internal): the answer of GET /api/captures/NAME/profile (docs/serve.md,
 * "The HTTP API over stored captures") — a capture's sampling profile over a time range as
 * one JSON object for the viewer: the samples counted, per thread and in all, the top
 * functions, a flame graph and the samples' times as ticks. A pure function of a profile
 * (trove/profile.h) and a names table, so that a unit test drives it without a service.
 *
 * Every part is bounded whatever the profile holds, so that the answer is never larger
 * than TROVE__PROFILE_JSON_MAX bytes: at most TROVE__PROFILE_TOP_MAX top functions, the
 * TROVE__PROFILE_THREADS_MAX threads with the most samples, TROVE__PROFILE_FLAME_MAX flame
 * nodes at most TROVE__PROFILE_FLAME_DEPTH deep, TROVE__PROFILE_TICKS_MAX ticks, and each string cut to TROVE__PROFILE_STRING_MAX
 * bytes of its own.
 */
#ifndef TROVE_NET_PROFILE_JSON_H
#define TROVE_NET_PROFILE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/event.h"
#include "trove/profile.h"

#define TROVE__PROFILE_TOP_DEFAULT 50u  /* top functions when the request names no limit */
#define TROVE__PROFILE_TOP_MAX 500u     /* the largest limit a request may ask for */
#define TROVE__PROFILE_THREADS_MAX 1000u
#define TROVE__PROFILE_FLAME_MAX 5000u  /* flame nodes, the root included */
/* Levels of the flame graph below its root: a deeper stack (a recursion) is cut there, so
 * that the answer nests no deeper than JSON readers take (Python's, jansson's). */
#define TROVE__PROFILE_FLAME_DEPTH 256u
#define TROVE__PROFILE_TICKS_MAX 20000u
#define TROVE__PROFILE_STRING_MAX 512u  /* bytes of a name shown; a longer one ends in "…" */
/* A flame node is kept when it holds at least 1/TROVE__PROFILE_FLAME_PRUNE of the samples
 * (and more when that still leaves over TROVE__PROFILE_FLAME_MAX nodes). */
#define TROVE__PROFILE_FLAME_PRUNE 1000u

/* A JSON string of at most STRING_MAX source bytes: each byte at most 6 ("\u00XX", or
 * "\ufffd" for a byte that is not UTF-8), the quotes and the ellipsis. */
#define TROVE__PROFILE_JSON_STRING ((size_t)TROVE__PROFILE_STRING_MAX * 6 + 5)
/* Numbers: a u64 is at most 20 digits. Each part: its strings and numbers with their keys. */
#define TROVE__PROFILE_JSON_MAX                                                              \
    (512 + (size_t)TROVE__PROFILE_JSON_STRING +                                              \
     (size_t)TROVE__PROFILE_THREADS_MAX * (TROVE__PROFILE_JSON_STRING + 64) +                \
     (size_t)TROVE__PROFILE_TOP_MAX * (3 * TROVE__PROFILE_JSON_STRING + 160) +               \
     (size_t)TROVE__PROFILE_FLAME_MAX * (TROVE__PROFILE_JSON_STRING + 64) +                  \
     (size_t)TROVE__PROFILE_TICKS_MAX * 48)

struct trove__profile_query {
    const char *capture; /* its name, as the answer says it */
    uint64_t from_ns;    /* the samples counted: from_ns <= time_ns < to_ns */
    uint64_t to_ns;
    size_t limit;        /* top functions at most (TROVE__PROFILE_TOP_MAX at most) */
};

/*
 * The whole time span of a capture, for a request that names no range: from its first
 * event or sample (events: trove_capture_info's counts, events 0 for none) to one past its
 * last; 0 and 0 when it has neither.
 */
void trove__profile_span(const struct trove_profile *p, uint64_t events, uint64_t first_ns,
                         uint64_t end_ns, uint64_t *from_out, uint64_t *to_out);

/*
 * Append the answer for q over p (names: the capture's, for the threads' names; may be
 * NULL) to out: {"capture","from_ns","to_ns","samples","threads":[{"tid","name","samples"}],
 * "top":[{"function","file","line","module","self","total"}],"flame":{"name":"all","value",
 * "children":[...]},"ticks":[[tid,t_ns],...],"ticks_dropped"} (docs/serve.md says what each
 * holds). At most TROVE__PROFILE_JSON_MAX bytes. Errors: TROVE_ERR_INVALID (a NULL
 * argument, from after to), TROVE_ERR_NOMEM; out then holds what it held.
 */
int trove__profile_json(const struct trove_profile *p, const struct trove_names *names,
                        const struct trove__profile_query *q, struct trove_bytes *out);

#endif
