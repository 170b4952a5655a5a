/*
 * perfetto_reader.h: the Perfetto reader's state (struct pr), shared by its two files:
 * perfetto_tracks.c, the tables (u64 maps, the string arena and trove names, the tracks
 * of pass 1, resolved to a (pid, tid)), and perfetto_read.c, the walk of pass 2 (each
 * sequence's incremental state, slices, instants, counters, flows) and the result.
 * perfetto_read.c's header comment has the format and the trust rules. Internal to the
 * codec layer.
 */
#ifndef TROVE_CODEC_PERFETTO_READ_H
#define TROVE_CODEC_PERFETTO_READ_H

#include "perfetto_profile.h"
#include "protobuf.h"
#include "trace_order.h"
#include "common/alloc.h"
#include "common/fail.h"

#include <stddef.h>
#include <stdint.h>

#include "trove/attrs.h"
#include "trove/trace.h"

#define INPUT_DEFAULT ((uint64_t)4 << 30)
#define MAX_EVENTS ((uint64_t)1 << 28)
#define MAX_TRACKS ((size_t)1 << 20)
#define MAX_STRINGS ((size_t)1 << 24)
#define MAX_SEQS 4096u
#define MAX_CLOCKS 64u
#define MAX_DEPTH 64
#define NONE UINT32_MAX

/* Category codes: 0 none, 1 + kind * 256 + extra for "trove:K:E", then flows, then
 * "trove:depth:N" (the event's depth where the geometry would not give it). */
#define CODE_FLOW0 (1u + 256u * 256u)
#define CODE_DEPTH0 (CODE_FLOW0 + 6u)

/* ---- u64 -> u32 hash maps ---------------------------------------------------------------- */

struct map {
    uint64_t *key;
    uint32_t *val;   /* NONE: free */
    size_t n, cap;   /* cap a power of two, or 0 */
};

/* ---- state ------------------------------------------------------------------------------ */

/* A name as the trace gave it: a string, or only an iid no interned entry named. */
struct pname {
    uint64_t off;          /* into the arena */
    uint32_t len, claim;   /* claim: the id its iid asks for, or NONE */
    uint8_t has_str;
    uint32_t final;
};

struct open_slice {
    uint64_t ts, off;
    uint32_t name, seq;
    uint32_t code;
    uint32_t depth;      /* its "trove:depth:N" code, or 0 */
};

struct track {
    uint64_t uuid, parent, off;
    uint8_t has_process, has_thread, has_pname, has_tname, has_name, has_sort, resolved;
    uint32_t pid, tid, ppid;
    int32_t sort;                            /* legacy_sort_index, when has_sort */
    uint64_t pname_off, tname_off, name_off; /* strings in the arena */
    uint32_t pname_len, tname_len, name_len;
    struct open_slice *open;
    size_t nopen, capopen;
};

struct clock {
    uint32_t id;
    uint8_t incremental;
    uint64_t value, mult;
};

struct seq {
    uint32_t id;
    uint32_t def_clock;       /* 0: none */
    uint64_t def_track;
    uint8_t has_def_track;
    struct clock clocks[MAX_CLOCKS];
    uint32_t nclocks;
    struct map names, cats;   /* iid -> pname index, iid -> category code */
    struct map anames, fcats, bodies, svals; /* (opt->attrs) iid -> a string of r->stage:
                                 debug annotation names, foreign categories, log message
                                 bodies, debug annotation string values */
    struct trove__pfp *prof;  /* the interned profile entries (made at the first; with a
                                 profile to read into only) */
};

struct pr {
    const uint8_t *buf;
    size_t len;
    struct trove_diag *diag;
    int strict;
    struct trove_perfetto_stats st;

    struct track *tracks;     /* sorted by uuid after pass 1 */
    size_t ntracks, captracks;

    struct seq *seqs;
    size_t nseqs, capseqs;

    struct trove_bytes arena; /* strings */
    struct pname *names;
    size_t nnames, capnames, capnext;
    struct map str_index;     /* hash of a string -> first pname with that hash (chained) */
    uint32_t *str_next;       /* the next pname with the same hash, or NONE */
    struct map claim_index;   /* claim -> nameless pname */

    struct trove__trec *rec;
    size_t nrec, caprec;
    uint64_t open_total;
    struct trove_flow *flows;
    size_t nflows, capflows;
    struct map flow_seen;     /* flow ids seen (flows of traces trove did not write) */
    struct trove_profile *profile; /* the caller's: perf samples go into it (NULL: skipped) */
    uint32_t seqno;           /* events in order of appearance */
    int keep;                 /* opt->attrs was given */
    struct trove_attrs stage; /* the track events' rows, by seqno */
    struct trove_bytes cats;  /* an event's foreign categories, joined by "," */
    struct trove_bytes nest;  /* a nested debug annotation's value as JSON */
};

/* The top-level packets: f for each, in order. pass 1 reads descriptors only. */
typedef int (*packet_fn)(struct pr *r, const uint8_t *data, size_t len);

static inline int fail(struct pr *r, int code, const uint8_t *at, const char *fmt,
                       const char *what)
{
    return TROVE_FAIL(r->diag, code, at ? (uint64_t)(at - r->buf) : 0, fmt, what);
}

/* A field error of protobuf.h's trove__pb_next, in words. */
static inline int field_error(struct pr *r, int rc, const uint8_t *at, const char *msg)
{
    const char *why = rc == TROVE_ERR_TRUNCATED ? "a field runs past the end of its message"
                      : rc == TROVE_ERR_VARINT  ? "a varint is longer than 10 bytes"
                                                : "a field has number 0 or a wire type that is "
                                                  "not 0, 1, 2 or 5";
    return TROVE_FAIL(r->diag, rc, (uint64_t)(at - r->buf), "Perfetto trace: %s: %s", msg, why);
}

/* Grow *arr (of *cap items of `size` bytes) to hold n + 1. */
static inline int grow(void **arr, size_t *cap, size_t n, size_t size)
{
    size_t c;
    void *p;
    if (n < *cap)
        return TROVE_OK;
    c = *cap ? *cap * 2 : 64;
    if (c > SIZE_MAX / size)
        return TROVE_ERR_NOMEM;
    if (!(p = trove__realloc(*arr, c * size)))
        return TROVE_ERR_NOMEM;
    *arr = p;
    *cap = c;
    return TROVE_OK;
}

/* perfetto_tracks.c. The maps: the value of k or NONE; k -> v (TROVE_ERR_NOMEM). */
uint32_t trove__pr_map_get(const struct map *m, uint64_t k);
int trove__pr_map_put(struct map *m, uint64_t k, uint32_t v);
void trove__pr_map_clear(struct map *m);
void trove__pr_map_free(struct map *m);
/* A string field checked (wire type, TROVE_NAME_MAX, UTF-8); what names it in a failure. */
int trove__pr_check_string(struct pr *r, const struct trove__pb_field *f, const char *what);
/* The pname of string p[0..n) (claim: the id its iid asks for, or NONE), made on first
 * use, into *idx_out; the pname of a claim that no string named yet. */
int trove__pr_name_of_string(struct pr *r, const uint8_t *p, size_t n, uint32_t claim,
                             uint32_t *idx_out);
int trove__pr_name_of_claim(struct pr *r, uint32_t claim, uint32_t *idx_out);
/* The category code of a category string (0: none of trove's). */
uint32_t trove__pr_category_code(const uint8_t *p, size_t n);

/* ---- attributes (perfetto_args.c) ---- */

/* A string of the event as a row value: kept when it is UTF-8 and at most 1 MiB. */
int trove__pr_string_ok(const uint8_t *p, size_t n);
/* Row (event seq, key) with value row->type/v staged in r->stage; *kept 1. TROVE_ERR_NOMEM,
 * TROVE_ERR_LIMIT. */
int trove__pr_stage(struct pr *r, uint64_t seq, uint8_t scope, const uint8_t *key, size_t klen,
                    struct trove_attr *row, int *kept);
/* The DebugAnnotation f of event seq as a row (*kept 1), or not kept (*kept 0: what does not
 * read). Errors: TROVE_ERR_NOMEM, TROVE_ERR_LIMIT only. */
int trove__pr_annotation(struct pr *r, struct seq *s, const struct trove__pb_field *f,
                         uint64_t seq, int *kept);
/* The LogMessage f's body (body_iid 2, interned) as the FIELD row "log_message". */
int trove__pr_log_message(struct pr *r, struct seq *s, const struct trove__pb_field *f,
                          uint64_t seq, int *kept);
/* fn for every top-level packet, in order. */
int trove__pr_each_packet(struct pr *r, packet_fn fn);
/* Pass 1: every TrackDescriptor read, r->tracks sorted by uuid and each resolved to a
 * (pid, tid); then trove__pr_find_track finds a track by uuid (NULL: none). */
int trove__pr_tracks(struct pr *r);
struct track *trove__pr_find_track(struct pr *r, uint64_t uuid);

#endif
