/*
 * chrome_internal.h (internal to src/codec): the Chrome importer's state, shared by its
 * levels — chrome_json.c reads the document and the fields of each event (the grammar),
 * chrome_events.c turns one event's fields into trove events, flows and names (the trace
 * rules), and chrome_finish.c hands the result over at the end. chrome_json.c calls the
 * other two and chrome_finish.c calls chrome_events.c (its message helpers), never the
 * reverse.
 */
#ifndef TROVE_CHROME_INTERNAL_H
#define TROVE_CHROME_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "chrome_tracks.h"
#include "trace_order.h"
#include "common/json.h"
#include "trove/flows.h"
#include "trove/attrs.h"
#include "trove/chrome.h"

#define TROVE__CHROME_KEY_CAP 1024 /* an event's member key (kept as an attribute) */
#define TROVE__CHROME_SHORT_CAP 4  /* "ph", "s" and "bp" values */
#define TROVE__CHROME_ID_CAP 256   /* cat, scope and id texts kept for a track's key */
#define TROVE__CHROME_ARG_KEY_CAP 1024 /* a counter argument's key */
#define TROVE__CHROME_NO_NAME UINT32_MAX

enum { TROVE__J_NONE = 0, TROVE__J_STRING, TROVE__J_NUMBER, TROVE__J_OTHER, TROVE__J_TRUE,
       TROVE__J_FALSE };

/* id kinds of an async or flow key: "id", "id2":{"local"}, "id2":{"global"}, "bind_id". */
enum { TROVE__ID_PLAIN = 1, TROVE__ID_LOCAL = 2, TROVE__ID_GLOBAL = 3, TROVE__ID_BIND = 4 };

struct trove__cfield {
    uint8_t type;            /* TROVE__J_* */
    uint64_t off;            /* byte offset of the value */
};

/* A numeric argument of the event (the values a C event counts). */
struct trove__carg {
    uint32_t key_off, key_len; /* into the parser's arg_keys */
    int over;                  /* the key was longer than TROVE__CHROME_ARG_KEY_CAP */
    uint64_t off;
    struct trove__json_num num;
};

/* The fields of the event being read. */
struct trove__cevent {
    uint64_t off;
    struct trove__cfield ph, name, ts, dur, pid, tid, s, args_name, args_step;
    struct trove__cfield cat, id, scope, bp, bind_id, flow_in, flow_out;
    struct trove__json_num ts_n, dur_n, pid_n, tid_n;
    uint8_t id_kind;         /* TROVE__ID_PLAIN/LOCAL/GLOBAL when id holds one, else 0 */
    uint8_t id_num;          /* the id (or bind_id) was a number (its digits are in id) */
    uint8_t bind_num;
    uint8_t tv_set;          /* the "trove" member's fields given: TROVE__TV_* */
    uint8_t tv_kind, tv_extra, tv_depth;
    uint64_t tv_off;         /* where the "trove" member's value is */
    size_t nargs;            /* numeric args in the parser's args array */
    size_t nonnum_args;      /* other args (their values are not numbers) */
    uint8_t has_args_name, has_args_step; /* args.name, args.step were members */
    uint64_t lost_args;      /* args members too long to keep as rows (opt->attrs) */
};

/* The "trove" member of an event trove wrote (docs/formats/chrome-json.md, "Export"). */
#define TROVE__TV_KIND 1u
#define TROVE__TV_EXTRA 2u
#define TROVE__TV_DEPTH 4u

struct trove__cname {
    uint64_t off;            /* into the arena */
    uint32_t len, hash, count, flows;
};

struct trove__cbegin {
    uint64_t ts, off;
    uint32_t name;           /* provisional name id, or NO_NAME */
    uint64_t in;             /* its attribute rows: its index in the input, or NO_ROWS */
};

#define TROVE__CHROME_NO_ROWS UINT64_MAX

/* Attribute rows of input event `in` go to record `rec` (its index before the order). */
struct trove__clink {
    uint32_t rec;
    uint64_t in;
};

struct trove__cthread {
    uint32_t pid, tid;
    struct trove__cbegin *stk;
    size_t n, cap;
};

/* A flow event waiting for its final id. */
struct trove__cflow {
    uint64_t ts;
    uint32_t pid, tid, name, seq, key;
    uint8_t phase, flags;
};

struct trove__chrome {
    uint64_t *cats;              /* the categories seen (their hashes; 0 free): power of two */
    uint32_t cats_mask;
    struct trove__json js;       /* the input and its tokens */
    struct trove_diag *diag;
    int strict;
    struct trove_chrome_stats st;
    struct trove__cevent ev;

    uint8_t key_store[TROVE__CHROME_KEY_CAP], ph_store[TROVE__CHROME_SHORT_CAP];
    uint8_t s_store[TROVE__CHROME_SHORT_CAP], bp_store[TROVE__CHROME_SHORT_CAP];
    uint8_t cat_store[TROVE__CHROME_ID_CAP], scope_store[TROVE__CHROME_ID_CAP];
    uint8_t id_store[TROVE__CHROME_ID_CAP], bind_store[TROVE__CHROME_ID_CAP];
    struct trove__json_str key, ph, scope, name, args_name, args_step;
    struct trove__json_str cat, idscope, id, bp, bind;
    struct trove__json_str arg_key; /* a counter argument's key, decoded */
    struct trove_bytes fix;      /* UTF-8 repair output */
    struct trove_bytes arg_keys; /* this event's numeric args' keys */
    struct trove__carg *args;
    size_t cap_args;
    struct trove_bytes tkey;     /* a track key being built */

    struct trove__trec *rec;
    size_t nrec, rec_cap;
    uint64_t open_total;         /* B events waiting for their E */

    struct trove_bytes arena;    /* interned names, back to back */
    struct trove__cname *nm;
    uint32_t nnm, nm_cap;
    uint32_t *nm_index;          /* id + 1, 0 = free; power-of-two size */
    uint32_t nm_mask;

    struct trove__cthread *thr;
    uint32_t nthr, thr_cap;
    uint32_t *thr_index;
    uint32_t thr_mask;

    struct trove__ctracks tracks; /* async tracks and counter series */
    struct trove__ctracks flowkeys;
    struct trove__cflow *flows;
    size_t nflows, flows_cap;

    struct trove_names *tmp_names;

    /* Attributes (opt->attrs given): each event's rows staged with its index in the input
     * as their event, linked to the records they end on, and handed over at the finish. */
    int keep;                    /* opt->attrs was given */
    struct trove_attrs stage;    /* rows of the events read, by input index */
    size_t ev_row0;              /* the first of stage's rows of the event being read */
    struct trove_attrs meta;     /* the top-level members (scope TRACE, event 0) */
    struct trove__json_str aval; /* a string value being read (TROVE_ATTRS_MAX_STRING) */
    struct trove_bytes ajson;    /* a nested value being copied */
    struct trove__clink *links;
    size_t nlinks, cap_links;
};

/* The staged rows of the event being read belong to record rec: TROVE_OK, TROVE_ERR_NOMEM. */
int trove__chrome_link(struct trove__chrome *ps, size_t rec, uint64_t in);

/* The input index of the event being read when it has attribute rows, else NO_ROWS. */
static inline uint64_t trove__chrome_rows_of(const struct trove__chrome *ps)
{
    return ps->keep && ps->stage.n > ps->ev_row0 ? ps->st.trace_events - 1
                                                  : TROVE__CHROME_NO_ROWS;
}

/* Act on the event whose fields are in ps->ev (its '}' was just read). */
int trove__chrome_event(struct trove__chrome *ps);

/* p[0..len) as valid UTF-8: itself, or (in ps->fix, until the next call) with each byte that
 * starts no valid sequence made U+FFFD. TROVE_OK or TROVE_ERR_NOMEM. */
int trove__chrome_repair_utf8(struct trove__chrome *ps, const uint8_t *p, size_t len,
                              const uint8_t **out, size_t *out_len);

/* For messages (chrome_events.c): name id (NO_NAME: "(unnamed)") as at most 60 bytes,
 * control bytes as '?'; ns as microseconds ("12.345 us"). Each returns out. */
const char *trove__chrome_show_name(const struct trove__chrome *ps, uint32_t id, char out[72]);
const char *trove__chrome_show_us(uint64_t ns, char out[40]);

/* chrome_finish.c */

/* After the document: the open B and async events (an error when strict), then depth, order,
 * names and tids, and hand events, names and flows (may be NULL) over. */
int trove__chrome_finish(struct trove__chrome *ps, struct trove_events *events,
                         struct trove_names *names, struct trove_flows *flows,
                         struct trove_attrs *attrs, struct trove_attrs *meta);

/* Release everything the importer holds (the tokenizer's window too). */
void trove__chrome_free(struct trove__chrome *ps);

#endif
