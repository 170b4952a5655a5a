/*
 * perfetto_read.c: a Perfetto protobuf trace into trove events, names and flows
 * (trove_perfetto_read, trove_perfetto_sniff; include/trove/trace.h, docs/formats/perfetto.md).
 *
 *   Trace        := (field 1: TracePacket)*
 *   TracePacket  := timestamp 8, timestamp_clock_id 58, trusted_packet_sequence_id 10,
 *                   sequence_flags 13, incremental_state_cleared 41, trace_packet_defaults 59
 *                   {timestamp_clock_id 58, track_event_defaults 11 {track_uuid 11}},
 *                   clock_snapshot 6 {clocks 1 {clock_id 1, timestamp 2, is_incremental 3,
 *                   unit_multiplier_ns 4}}, interned_data 12 {event_categories 1, event_names 2:
 *                   {iid 1, name 2}}, track_descriptor 60, track_event 11; others skipped
 *   TrackDescriptor := uuid 1, parent_uuid 5, name 2, process 3 {pid 1, legacy_sort_index 3,
 *                   process_name 6}, thread 4 {pid 1, tid 2, legacy_sort_index 3,
 *                   thread_name 5}, counter 8
 *   TrackEvent   := type 9, track_uuid 11, name_iid 10 | name 23, category_iids 3 |
 *                   categories 22, counter_value 30 | double_counter_value 44, flow_ids 47 |
 *                   36, terminating_flow_ids 48 | 42; others skipped
 *
 * Two passes over the bytes. The first (perfetto_tracks.c) reads every TrackDescriptor
 * (tracks are global to the trace and may be described after they are used) and resolves each track to a (pid, tid):
 * a thread track's own, a process track's (pid, 0), a track under a process whose uuid has
 * the form trove writes ((n << 22 | p) << 2 | 2, under the process track (p + 1) << 2) the
 * synthetic tid TROVE_TID_SYNTHETIC + n,
 * another track under a process a synthetic tid of its own, and a track under a thread or an
 * async track that track's. The second walks the packets in order with each sequence's
 * incremental state (interned names and categories, defaults, clocks) and turns slices (a
 * stack per track), instants, counters and flow ids into records, which then get depths and
 * the output order of trace_order.c, the same as Chrome imports get.
 *
 * Trust: the input is outside bytes. Every tag, varint and length is checked against the
 * message that holds it (protobuf.h) before it is used, so nothing is read past the input; a
 * string is bounded by TROVE_NAME_MAX before it is copied; events, tracks, interned strings
 * and sequences are bounded (trace.h) before anything grows for them; a parent chain longer
 * than 64 is a cycle. Name ids: a name interned with iid k claims id k - 1 (trove's writer
 * interns name_id + 1), first claim first; other names take the ids after the highest claim,
 * in order of first use.
 */
#include "perfetto_reader.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/utf8.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/digest.h"
#include "trove/trace.h"

/* ---- pass 2: events ----------------------------------------------------------------------- */

static int get_seq(struct pr *r, uint32_t id, struct seq **out)
{
    int rc;
    for (size_t i = 0; i < r->nseqs; i++)
        if (r->seqs[i].id == id) {
            *out = &r->seqs[i];
            return TROVE_OK;
        }
    if (r->nseqs >= MAX_SEQS)
        return TROVE_FAIL(r->diag, TROVE_ERR_LIMIT, 0,
                          "Perfetto trace: more than %u packet sequences", MAX_SEQS);
    if ((rc = grow((void **)&r->seqs, &r->capseqs, r->nseqs, sizeof **out)) != TROVE_OK)
        return rc;
    *out = &r->seqs[r->nseqs++];
    memset(*out, 0, sizeof **out);
    (*out)->id = id;
    return TROVE_OK;
}

/* An interned entry {iid 1, string 2} (opt->attrs): its string into r->stage, mapped from its
 * iid in m. */
static int interned_string(struct pr *r, struct map *m, const struct trove__pb_field *g)
{
    struct trove__pb e = trove__pb_sub(g);
    struct trove__pb_field h;
    const uint8_t *str = NULL;
    size_t slen = 0;
    uint64_t iid = 0;
    uint32_t id;
    int rc;

    while ((rc = trove__pb_next(&e, &h)) == TROVE__PB_OK) {
        if (h.num == 1 && h.wt == TROVE__PB_VARINT) {
            iid = h.v;
        } else if (h.num == 2 && h.wt == TROVE__PB_LEN) {
            str = h.data;
            slen = h.len;
        }
    }
    /* a malformed one, one over 1 MiB or not UTF-8 is not kept (a trace read without
     * attributes never looks at it): the rows that name it are counted instead */
    if (rc < 0)
        return TROVE_OK;
    if (iid == 0 || !str || slen > TROVE_ATTRS_MAX_STRING ||
        trove__utf8_valid_prefix(str, slen) != slen)
        return TROVE_OK;
    if ((rc = trove_attrs_intern(&r->stage, str, slen, &id)) != TROVE_OK)
        return rc;
    return trove__pr_map_put(m, iid, id);
}

static int read_interned(struct pr *r, struct seq *s, const struct trove__pb_field *f)
{
    struct trove__pb m = trove__pb_sub(f);
    struct trove__pb_field g;
    int rc;
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        struct trove__pb e;
        struct trove__pb_field h;
        const uint8_t *str = NULL;
        size_t slen = 0;
        uint64_t iid = 0;
        int rc2;
        if (r->keep && (g.num == 3 || g.num == 20 || g.num == 29) && g.wt == TROVE__PB_LEN) {
            /* debug annotation names, log message bodies, debug annotation string values:
             * strings of the rows */
            if ((rc2 = interned_string(r, g.num == 3    ? &s->anames
                                          : g.num == 20 ? &s->bodies
                                                        : &s->svals,
                                       &g)) != TROVE_OK)
                return rc2;
            continue;
        }
        if (r->profile && g.num != 1 && g.num != 2) { /* a profile's tables */
            if (!s->prof && (rc2 = trove__pfp_new(&s->prof)) != TROVE_OK)
                return rc2;
            if ((rc2 = trove__pfp_interned(s->prof, r->buf, &g, r->diag)) < 0)
                return rc2;
            continue;
        }
        if ((g.num != 1 && g.num != 2) || g.wt != TROVE__PB_LEN)
            continue;
        e = trove__pb_sub(&g);
        while ((rc2 = trove__pb_next(&e, &h)) == TROVE__PB_OK) {
            if (h.num == 1 && h.wt == TROVE__PB_VARINT) {
                iid = h.v;
            } else if (h.num == 2) {
                if ((rc2 = trove__pr_check_string(r, &h, "an interned name")) != TROVE_OK)
                    return rc2;
                str = h.data;
                slen = h.len;
            }
        }
        if (rc2 < 0)
            return field_error(r, rc2, e.p, "an interned entry");
        if (iid == 0)
            continue; /* iid 0 names nothing */
        if (g.num == 1) {
            uint32_t code = str ? trove__pr_category_code(str, slen) : 0, id;
            if ((rc2 = trove__pr_map_put(&s->cats, iid, code)) != TROVE_OK)
                return rc2;
            if (r->keep && code == 0 && str &&
                ((rc2 = trove_attrs_intern(&r->stage, str, slen, &id)) != TROVE_OK ||
                 (rc2 = trove__pr_map_put(&s->fcats, iid, id)) != TROVE_OK))
                return rc2;
        } else {
            uint32_t idx;
            if ((rc2 = trove__pr_name_of_string(
                     r, str ? str : (const uint8_t *)"", str ? slen : 0,
                     iid - 1 <= UINT32_MAX - 1 ? (uint32_t)(iid - 1) : NONE, &idx)) != TROVE_OK ||
                (rc2 = trove__pr_map_put(&s->names, iid, idx)) != TROVE_OK)
                return rc2;
        }
    }
    return rc < 0 ? field_error(r, rc, m.p, "interned data") : TROVE_OK;
}

static int read_snapshot(struct pr *r, struct seq *s, const struct trove__pb_field *f)
{
    struct trove__pb m = trove__pb_sub(f);
    struct trove__pb_field g;
    int rc;
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        struct trove__pb c;
        struct trove__pb_field h;
        struct clock k = {0, 0, 0, 1};
        uint32_t i;
        int rc2, has_id = 0;
        if (g.num != 1 || g.wt != TROVE__PB_LEN)
            continue;
        c = trove__pb_sub(&g);
        while ((rc2 = trove__pb_next(&c, &h)) == TROVE__PB_OK) {
            if (h.wt != TROVE__PB_VARINT)
                continue;
            if (h.num == 1) {
                k.id = (uint32_t)h.v;
                has_id = 1;
            } else if (h.num == 2) {
                k.value = h.v;
            } else if (h.num == 3) {
                k.incremental = h.v != 0;
            } else if (h.num == 4) {
                k.mult = h.v ? h.v : 1;
            }
        }
        if (rc2 < 0)
            return field_error(r, rc2, c.p, "a clock");
        if (!has_id)
            continue;
        for (i = 0; i < s->nclocks && s->clocks[i].id != k.id; i++)
            ;
        if (i == MAX_CLOCKS)
            return fail(r, TROVE_ERR_LIMIT, g.data, "Perfetto trace: %s",
                        "a sequence defines more than 64 clocks");
        s->clocks[i] = k;
        if (i == s->nclocks)
            s->nclocks++;
    }
    return rc < 0 ? field_error(r, rc, m.p, "a clock snapshot") : TROVE_OK;
}

static int read_defaults(struct pr *r, struct seq *s, const struct trove__pb_field *f)
{
    struct trove__pb m = trove__pb_sub(f);
    struct trove__pb_field g;
    int rc;
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        if (g.num == 58 && g.wt == TROVE__PB_VARINT) {
            s->def_clock = (uint32_t)g.v;
        } else if (g.num == 11 && g.wt == TROVE__PB_LEN) {
            struct trove__pb d = trove__pb_sub(&g);
            struct trove__pb_field h;
            int rc2;
            while ((rc2 = trove__pb_next(&d, &h)) == TROVE__PB_OK)
                if (h.num == 11 && h.wt == TROVE__PB_VARINT) {
                    s->def_track = h.v;
                    s->has_def_track = 1;
                }
            if (rc2 < 0)
                return field_error(r, rc2, d.p, "track event defaults");
        }
    }
    return rc < 0 ? field_error(r, rc, m.p, "packet defaults") : TROVE_OK;
}

/* A packet's time in ns: its timestamp on its clock (an incremental clock adds it to the
 * clock's last value; a clock with a unit multiplies). */
static int packet_time(struct pr *r, struct seq *s, uint64_t ts, uint32_t clock,
                       const uint8_t *at, uint64_t *out)
{
    struct clock *k = NULL;
    uint64_t v = ts;
    for (uint32_t i = 0; i < s->nclocks; i++)
        if (s->clocks[i].id == clock)
            k = &s->clocks[i];
    if (k && k->incremental) {
        if (ts > UINT64_MAX - k->value)
            return fail(r, TROVE_ERR_LIMIT, at, "Perfetto trace: %s",
                        "an incremental timestamp runs past 2^64");
        v = k->value += ts;
    }
    if (k && k->mult > 1) {
        if (v > UINT64_MAX / k->mult)
            return fail(r, TROVE_ERR_LIMIT, at, "Perfetto trace: %s",
                        "a timestamp is past 2^64 ns");
        v *= k->mult;
    }
    *out = v;
    return TROVE_OK;
}

static int check_events(struct pr *r, const uint8_t *at)
{
    if ((uint64_t)r->nrec + r->open_total >= MAX_EVENTS)
        return fail(r, TROVE_ERR_LIMIT, at, "Perfetto trace: more than %s events",
                    "2^28");
    return TROVE_OK;
}

static int push_rec(struct pr *r, uint64_t start, uint64_t dur, const struct track *t,
                    uint8_t kind, uint8_t extra, uint32_t name, uint32_t seq, const uint8_t *at)
{
    int rc;
    if ((rc = check_events(r, at)) != TROVE_OK ||
        (rc = grow((void **)&r->rec, &r->caprec, r->nrec, sizeof *r->rec)) != TROVE_OK)
        return rc;
    r->rec[r->nrec++] = (struct trove__trec){start, dur, t->pid, t->tid, name, seq, 0,
                                              kind, extra, 0, 0};
    return TROVE_OK;
}

/* The depth a "trove:depth:N" category gave the event just pushed (code 0: none), kept
 * rather than found from the geometry (trace_order.h). */
static void give_depth(struct pr *r, uint32_t code)
{
    if (code >= CODE_DEPTH0) {
        r->rec[r->nrec - 1].depth = (uint8_t)(code - CODE_DEPTH0);
        r->rec[r->nrec - 1].depth_given = 1;
    }
}

static int push_flow(struct pr *r, uint64_t ts, const struct track *t, uint32_t name,
                     uint64_t id, uint8_t phase, uint8_t flags, const uint8_t *at)
{
    int rc;
    if (id == 0)
        return TROVE_OK; /* flow id 0 names no flow */
    if ((uint64_t)r->nflows >= TROVE_FLOWS_MAX)
        return fail(r, TROVE_ERR_LIMIT, at, "Perfetto trace: more than %s flow points", "2^28");
    if ((rc = grow((void **)&r->flows, &r->capflows, r->nflows, sizeof *r->flows)) != TROVE_OK)
        return rc;
    memset(&r->flows[r->nflows], 0, sizeof r->flows[r->nflows]);
    r->flows[r->nflows].ts_ns = ts;
    r->flows[r->nflows].id = id;
    r->flows[r->nflows].pid = t->pid;
    r->flows[r->nflows].tid = t->tid;
    r->flows[r->nflows].name_id = name; /* a pname index until the end */
    r->flows[r->nflows].phase = phase;
    r->flows[r->nflows].flags = flags;
    r->nflows++;
    r->st.flows++;
    return TROVE_OK;
}

/* The fields of a TrackEvent that matter here. */
struct tev {
    uint64_t annotations, foreign_cats, logs, others; /* not kept: counted */
    size_t row0;           /* its first row in r->stage (opt->attrs) */
    size_t cat_row;        /* its "cat" row, staged at its first category (SIZE_MAX: none) */
    uint64_t type, track, name_iid, flow[2], term[2];
    uint64_t counter_bits;
    uint8_t has_track, has_name_iid, has_counter, nflow, nterm;
    const uint8_t *name;   /* an inline name */
    size_t name_len;
    uint32_t code;         /* the first trove category (of kind and extra, or a flow's) */
    uint32_t depth;        /* its "trove:depth:N" category's code, or 0 */
    uint64_t more_flows;   /* flow ids past the first two (a foreign trace's) */
};

/* One value of a repeated integer field (wire type `want`), or a packed run of them. */
static int repeated_ids(struct pr *r, const struct trove__pb_field *g, unsigned want,
                        uint64_t *ids, uint8_t *n, uint64_t *more)
{
    if (g->wt == want) {
        if (*n < 2)
            ids[(*n)++] = g->v;
        else
            (*more)++;
        return TROVE_OK;
    }
    if (g->wt == TROVE__PB_LEN) { /* packed */
        struct trove__pb m = trove__pb_sub(g);
        while (m.p < m.end) {
            uint64_t v;
            if (want == TROVE__PB_FIXED64) {
                if (m.end - m.p < 8)
                    return fail(r, TROVE_ERR_TRUNCATED, m.p, "Perfetto trace: %s",
                                "a packed fixed64 field is not a whole number of values");
                v = trove__get_le64(m.p);
                m.p += 8;
            } else {
                int why = 0;
                const uint8_t *q = trove_get_varint(m.p, m.end, 64, &v, &why);
                if (!q)
                    return fail(r, why == 1 ? TROVE_ERR_TRUNCATED : TROVE_ERR_VARINT, m.p,
                                "Perfetto trace: %s", "a packed varint field is malformed");
                m.p = q;
            }
            if (*n < 2)
                ids[(*n)++] = v;
            else
                (*more)++;
        }
    }
    return TROVE_OK;
}

/* A category's code into e: a depth's, or the first other trove category's. */
static void note_code(struct tev *e, uint32_t c)
{
    if (c == NONE || c == 0)
        return;
    if (c >= CODE_DEPTH0) {
        if (!e->depth)
            e->depth = c;
    } else if (!e->code) {
        e->code = c;
    }
}

/* ---- attributes (opt->attrs; the annotations' values: perfetto_args.c) ----------------- */

/* A foreign category (its name: p[0..n), or, id not NONE, string id of r->stage, looked up
 * after staging the "cat" row may have moved the strings) added to the event's, joined by
 * ","; the event's "cat" row is staged where its first category is (its value set once all
 * are read). */
static int add_category(struct pr *r, struct tev *e, uint64_t seq, const uint8_t *p, size_t n,
                        uint32_t id)
{
    int rc = r->cats.len ? trove_bytes_append(&r->cats, ",", 1) : TROVE_OK, kept;
    if (rc == TROVE_OK && e->cat_row == SIZE_MAX) {
        struct trove_attr row;
        memset(&row, 0, sizeof row);
        row.type = TROVE_ATTR_STRING;
        e->cat_row = r->stage.n;
        if ((rc = trove_attrs_intern(&r->stage, "", 0, &row.v.s)) == TROVE_OK)
            rc = trove__pr_stage(r, seq, TROVE_ATTR_FIELD, (const uint8_t *)"cat", 3, &row, &kept);
    }
    if (rc == TROVE_OK && id != NONE)
        p = (const uint8_t *)trove_attrs_string(&r->stage, id, &n);
    return rc != TROVE_OK ? rc : trove_bytes_append(&r->cats, p, n);
}

static int read_track_event(struct pr *r, struct seq *s, const struct trove__pb_field *f,
                            uint64_t seq, struct tev *e)
{
    struct trove__pb m = trove__pb_sub(f);
    struct trove__pb_field g;
    int rc, kept;

    memset(e, 0, sizeof *e);
    e->row0 = r->stage.n;
    e->cat_row = SIZE_MAX;
    r->cats.len = 0;
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        switch (g.num) {
        case 9:
            if (g.wt == TROVE__PB_VARINT)
                e->type = g.v;
            break;
        case 11:
            if (g.wt == TROVE__PB_VARINT) {
                e->track = g.v;
                e->has_track = 1;
            }
            break;
        case 10:
            if (g.wt == TROVE__PB_VARINT) {
                e->name_iid = g.v;
                e->has_name_iid = 1;
            }
            break;
        case 23:
            if ((rc = trove__pr_check_string(r, &g, "an event name")) != TROVE_OK)
                return rc;
            e->name = g.data;
            e->name_len = g.len;
            break;
        case 3: {
            uint64_t ids[2] = {0, 0}, more = 0;
            uint8_t n = 0;
            if ((rc = repeated_ids(r, &g, TROVE__PB_VARINT, ids, &n, &more)) != TROVE_OK)
                return rc;
            for (uint8_t i = 0; i < n; i++) {
                uint32_t c = trove__pr_map_get(&s->cats, ids[i]), id;
                note_code(e, c);
                if (r->keep && c == 0 && (id = trove__pr_map_get(&s->fcats, ids[i])) != NONE) {
                    if ((rc = add_category(r, e, seq, NULL, 0, id)) != TROVE_OK)
                        return rc;
                    continue;
                }
                e->foreign_cats += c == 0 || c == NONE;
            }
            e->foreign_cats += more;
            break;
        }
        case 22:
            if (g.wt == TROVE__PB_LEN) {
                uint32_t c = trove__pr_category_code(g.data, g.len);
                note_code(e, c);
                if (r->keep && c == 0 && trove__pr_string_ok(g.data, g.len)) {
                    if ((rc = add_category(r, e, seq, g.data, g.len, NONE)) != TROVE_OK)
                        return rc;
                } else {
                    e->foreign_cats += c == 0;
                }
            }
            break;
        case 4: /* debug_annotations */
            kept = 0;
            if (g.wt == TROVE__PB_LEN && r->keep &&
                (rc = trove__pr_annotation(r, s, &g, seq, &kept)) != TROVE_OK)
                return rc;
            e->annotations += !kept;
            break;
        case 21: /* log_message */
            kept = 0;
            if (g.wt == TROVE__PB_LEN && r->keep &&
                (rc = trove__pr_log_message(r, s, &g, seq, &kept)) != TROVE_OK)
                return rc;
            e->logs += !kept;
            break;
        case 30:
            if (g.wt == TROVE__PB_VARINT) {
                e->counter_bits = trove_counter_bits((double)(int64_t)g.v);
                e->has_counter = 1;
            }
            break;
        case 44:
            if (g.wt == TROVE__PB_FIXED64) {
                e->counter_bits = g.v;
                e->has_counter = 1;
            }
            break;
        case 47:
        case 36:
            if ((rc = repeated_ids(r, &g, g.num == 47 ? TROVE__PB_FIXED64 : TROVE__PB_VARINT,
                                   e->flow, &e->nflow, &e->more_flows)) != TROVE_OK)
                return rc;
            break;
        case 48:
        case 42:
            if ((rc = repeated_ids(r, &g, g.num == 48 ? TROVE__PB_FIXED64 : TROVE__PB_VARINT,
                                   e->term, &e->nterm, &e->more_flows)) != TROVE_OK)
                return rc;
            break;
        default:
            e->others++;
            break;
        }
    }
    if (rc < 0)
        return field_error(r, rc, m.p, "a track event");
    if (e->cat_row != SIZE_MAX && r->cats.len <= TROVE_ATTRS_MAX_STRING) {
        uint32_t id;
        if ((rc = trove_attrs_intern(&r->stage, r->cats.ptr, r->cats.len, &id)) != TROVE_OK)
            return rc;
        r->stage.rows[e->cat_row].v.s = id;
    } else if (e->cat_row != SIZE_MAX) { /* too long to keep: the row goes */
        memmove(&r->stage.rows[e->cat_row], &r->stage.rows[e->cat_row + 1],
                (r->stage.n - e->cat_row - 1) * sizeof *r->stage.rows);
        r->stage.n--;
        e->foreign_cats++;
    }
    return TROVE_OK;
}

/* The rows staged for event e are not kept (a slice's end, an event trove skips): counted as
 * what they were. */
static void drop_rows(struct pr *r, struct tev *e)
{
    for (size_t i = e->row0; i < r->stage.n; i++) {
        size_t len;
        const char *k = trove_attrs_string(&r->stage, r->stage.rows[i].key, &len);
        if (r->stage.rows[i].scope == TROVE_ATTR_ARG)
            e->annotations++;
        else if (len == 3 && !memcmp(k, "cat", 3))
            e->foreign_cats++;
        else if (len == 11 && !memcmp(k, "log_message", 11))
            e->logs++;
        else
            e->annotations++; /* a trove.field. annotation */
    }
    r->stage.n = e->row0;
}

/* The name of a track event: its interned or inline name, else the track's, else "". */
static int event_name(struct pr *r, struct seq *s, const struct tev *e, const struct track *t,
                      uint32_t *idx)
{
    if (e->has_name_iid && e->name_iid != 0) {
        uint32_t i = trove__pr_map_get(&s->names, e->name_iid);
        if (i != NONE) {
            *idx = i;
            return TROVE_OK;
        }
        if (e->name_iid - 1 <= UINT32_MAX - 1)
            return trove__pr_name_of_claim(r, (uint32_t)(e->name_iid - 1), idx);
    }
    if (e->name)
        return trove__pr_name_of_string(r, e->name, e->name_len, NONE, idx);
    if (t->has_name)
        return trove__pr_name_of_string(r, r->arena.ptr + t->name_off, t->name_len, NONE, idx);
    return trove__pr_name_of_string(r, (const uint8_t *)"", 0, NONE, idx);
}

/* Flow ids of a trace trove did not write: the first sight of an id starts its flow. */
static int foreign_flows(struct pr *r, const struct tev *e, uint64_t ts, const struct track *t,
                         uint32_t name, const uint8_t *at)
{
    int rc;
    for (uint8_t i = 0; i < e->nflow; i++) {
        uint8_t phase = trove__pr_map_get(&r->flow_seen, e->flow[i]) == NONE ? TROVE_FLOW_START
                                                                   : TROVE_FLOW_STEP;
        if ((rc = trove__pr_map_put(&r->flow_seen, e->flow[i], 1)) != TROVE_OK ||
            (rc = push_flow(r, ts, t, name, e->flow[i], phase, TROVE_FLOW_ENCLOSING, at)) !=
                TROVE_OK)
            return rc;
    }
    for (uint8_t i = 0; i < e->nterm; i++)
        if ((rc = push_flow(r, ts, t, name, e->term[i], TROVE_FLOW_END, TROVE_FLOW_ENCLOSING,
                            at)) != TROVE_OK)
            return rc;
    return TROVE_OK;
}

/*
 * The kind and extra of an event from its trove category (code), else def and 0. A counter
 * (`counter`) is always TROVE_KIND_COUNTER, and nothing else may be one: a counter's dur_ns
 * is its value, not a length.
 */
static void code_kind(uint32_t code, uint8_t def, int counter, uint8_t *kind, uint8_t *extra)
{
    uint8_t k = def, x = 0;
    if (code && code < CODE_FLOW0) {
        k = (uint8_t)((code - 1) >> 8);
        x = (uint8_t)((code - 1) & 0xff);
    }
    if (counter != (k == TROVE_KIND_COUNTER)) {
        k = def;
        x = 0;
    }
    *kind = k;
    *extra = x;
}

static int track_event(struct pr *r, struct seq *s, const struct trove__pb_field *f, uint64_t ts)
{
    struct tev e;
    struct track *t, none;
    uint64_t uuid;
    uint32_t name, seq = r->seqno++;
    uint8_t kind, extra;
    int rc;

    if ((rc = read_track_event(r, s, f, seq, &e)) != TROVE_OK)
        return rc;
    if (e.type != 1 && e.type != 4 && !(e.type == 3 && e.code < CODE_FLOW0))
        drop_rows(r, &e); /* an end, a flow point, a type trove skips: no event of its own */
    r->st.track_events++;
    r->st.annotated_events += e.annotations != 0;
    r->st.annotations += e.annotations;
    r->st.category_events += e.foreign_cats != 0;
    r->st.log_messages += e.logs;
    r->st.other_fields += e.others;
    uuid = e.has_track ? e.track : s->has_def_track ? s->def_track : 0;
    t = trove__pr_find_track(r, uuid);
    if (!t) {
        if (uuid != 0)
            return TROVE_FAIL(r->diag, TROVE_ERR_CORRUPT, (uint64_t)(f->data - r->buf),
                              "Perfetto trace: a track event on track %" PRIu64
                              ", which no track descriptor describes",
                              uuid);
        memset(&none, 0, sizeof none); /* the global track: pid 0, tid 0 */
        t = &none;
    }
    if (e.type == 2) { /* TYPE_SLICE_END */
        struct open_slice o;
        if (t->nopen == 0) {
            if (r->strict)
                return TROVE_FAIL(r->diag, TROVE_ERR_UNMATCHED, (uint64_t)(f->data - r->buf),
                                  "Perfetto trace: a slice end on track %" PRIu64
                                  " (pid %u tid %u) with no open slice",
                                  uuid, t->pid, t->tid);
            r->st.unmatched_end++;
            return TROVE_OK;
        }
        o = t->open[--t->nopen];
        r->open_total--;
        if (ts < o.ts)
            return TROVE_FAIL(r->diag, TROVE_ERR_NEGATIVE, (uint64_t)(f->data - r->buf),
                              "Perfetto trace: a slice on track %" PRIu64 " ends at %" PRIu64
                              " ns, before it begins at %" PRIu64 " ns",
                              uuid, ts, o.ts);
        code_kind(o.code, TROVE_KIND_ZONE, 0, &kind, &extra);
        r->st.slices++;
        if ((rc = push_rec(r, o.ts, ts - o.ts, t, kind, extra, o.name, o.seq, f->data)) !=
            TROVE_OK)
            return rc;
        give_depth(r, o.depth);
        return TROVE_OK;
    }
    if (e.type != 1 && e.type != 3 && e.type != 4) {
        r->st.skipped_events++;
        return TROVE_OK;
    }
    if ((rc = event_name(r, s, &e, t, &name)) != TROVE_OK)
        return rc;
    if (e.type == 3 && e.code >= CODE_FLOW0) { /* a flow point trove wrote */
        unsigned c = e.code - CODE_FLOW0;
        uint64_t id = c / 2 == TROVE_FLOW_END ? (e.nterm ? e.term[0] : 0)
                                              : (e.nflow ? e.flow[0] : 0);
        return push_flow(r, ts, t, name, id, (uint8_t)(c / 2),
                         c % 2 ? TROVE_FLOW_ENCLOSING : 0, f->data);
    }
    if ((rc = foreign_flows(r, &e, ts, t, name, f->data)) != TROVE_OK)
        return rc;
    if (e.type == 1) { /* TYPE_SLICE_BEGIN */
        if (t == &none)
            return TROVE_FAIL(r->diag, TROVE_ERR_CORRUPT, (uint64_t)(f->data - r->buf),
                              "Perfetto trace: %s", "a slice on the global track (uuid 0)");
        if ((rc = check_events(r, f->data)) != TROVE_OK ||
            (rc = grow((void **)&t->open, &t->capopen, t->nopen, sizeof *t->open)) != TROVE_OK)
            return rc;
        t->open[t->nopen++] = (struct open_slice){ts, (uint64_t)(f->data - r->buf), name, seq,
                                                  e.code < CODE_FLOW0 ? e.code : 0, e.depth};
        r->open_total++;
        return TROVE_OK;
    }
    if (e.type == 4) { /* TYPE_COUNTER */
        code_kind(e.code, TROVE_KIND_COUNTER, 1, &kind, &extra);
        r->st.counters++;
        return push_rec(r, ts, e.has_counter ? e.counter_bits : 0, t, kind, extra, name, seq,
                        f->data);
    }
    code_kind(e.code, TROVE_KIND_INSTANT, 0, &kind, &extra);
    r->st.instants++;
    if ((rc = push_rec(r, ts, 0, t, kind, extra, name, seq, f->data)) != TROVE_OK)
        return rc;
    give_depth(r, e.depth);
    return TROVE_OK;
}

static int pass2_packet(struct pr *r, const uint8_t *data, size_t len)
{
    struct trove__pb m = {data, data + len};
    struct trove__pb_field f, te = {0}, in = {0}, def = {0}, snap = {0}, perf = {0};
    struct seq *s = NULL;
    uint64_t ts = 0, flags = 0, seq_id = 0, clock = 0, t_ns = 0;
    int rc, has_ts = 0, has_clock = 0, has_te = 0, has_in = 0, has_def = 0, has_snap = 0,
            cleared = 0, other = 0, has_perf = 0;

    while ((rc = trove__pb_next(&m, &f)) == TROVE__PB_OK) {
        switch (f.num) {
        case 8: if (f.wt == TROVE__PB_VARINT) { ts = f.v; has_ts = 1; } break;
        case 58: if (f.wt == TROVE__PB_VARINT) { clock = f.v; has_clock = 1; } break;
        case 10: if (f.wt == TROVE__PB_VARINT) seq_id = f.v; break;
        case 13: if (f.wt == TROVE__PB_VARINT) flags = f.v; break;
        case 41: if (f.wt == TROVE__PB_VARINT && f.v) cleared = 1; break;
        case 11: if (f.wt == TROVE__PB_LEN) { te = f; has_te = 1; } break;
        case 12: if (f.wt == TROVE__PB_LEN) { in = f; has_in = 1; } break;
        case 59: if (f.wt == TROVE__PB_LEN) { def = f; has_def = 1; } break;
        case 6: if (f.wt == TROVE__PB_LEN) { snap = f; has_snap = 1; } break;
        case 60: break; /* descriptors: pass 1 */
        case TROVE__PF_PERF_SAMPLE:
            if (f.wt == TROVE__PB_LEN && r->profile) {
                perf = f;
                has_perf = 1;
            } else {
                other = 1;
            }
            break;
        default: other = 1; break;
        }
    }
    if (rc < 0)
        return field_error(r, rc, m.p, "a packet");
    if ((rc = get_seq(r, (uint32_t)seq_id, &s)) != TROVE_OK)
        return rc;
    if ((flags & 1) || cleared) { /* SEQ_INCREMENTAL_STATE_CLEARED */
        trove__pr_map_clear(&s->names);
        trove__pr_map_clear(&s->cats);
        trove__pr_map_clear(&s->anames);
        trove__pr_map_clear(&s->fcats);
        trove__pr_map_clear(&s->bodies);
        trove__pr_map_clear(&s->svals);
        trove__pfp_clear(s->prof);
        s->def_clock = 0;
        s->has_def_track = 0;
    }
    if (has_ts && (rc = packet_time(r, s, ts,
                                    has_clock ? (uint32_t)clock : s->def_clock ? s->def_clock : 6,
                                    data, &t_ns)) != TROVE_OK)
        return rc;
    if ((has_def && (rc = read_defaults(r, s, &def)) != TROVE_OK) ||
        (has_snap && (rc = read_snapshot(r, s, &snap)) != TROVE_OK) ||
        (has_in && (rc = read_interned(r, s, &in)) != TROVE_OK))
        return rc;
    if (has_te) {
        if (!has_ts)
            return fail(r, TROVE_ERR_CORRUPT, data, "Perfetto trace: %s",
                        "a track event packet without a timestamp");
        return track_event(r, s, &te, t_ns);
    }
    if (has_perf) { /* a sample of the profile */
        int added = 0;
        if (!has_ts)
            return fail(r, TROVE_ERR_CORRUPT, data, "Perfetto trace: %s",
                        "a perf sample packet without a timestamp");
        if (!s->prof && (rc = trove__pfp_new(&s->prof)) != TROVE_OK)
            return rc;
        if ((rc = trove__pfp_sample(s->prof, r->buf, &perf, t_ns, r->profile, &added,
                                    r->diag)) != TROVE_OK)
            return rc;
        r->st.samples += (uint64_t)added;
        return TROVE_OK;
    }
    if (other && !has_in && !has_def && !has_snap)
        r->st.skipped_packets++;
    return TROVE_OK;
}

/* ---- the result -------------------------------------------------------------------------- */

static int check_open(struct pr *r)
{
    for (size_t i = 0; i < r->ntracks; i++) {
        const struct track *t = &r->tracks[i];
        r->st.unmatched_begin += t->nopen;
        if (t->nopen && r->strict)
            return TROVE_FAIL(r->diag, TROVE_ERR_UNMATCHED, t->open[0].off,
                              "Perfetto trace: a slice on track %" PRIu64
                              " (pid %u tid %u) at %" PRIu64 " ns never ends",
                              t->uuid, t->pid, t->tid, t->open[0].ts);
    }
    return TROVE_OK;
}

/* Final name ids: claims first come first served, then the rest after the highest claim. */
static int assign_names(struct pr *r, struct trove_names *tmp)
{
    struct map taken = {0};
    uint64_t next = 0;
    int rc = TROVE_OK;

    for (size_t i = 0; i < r->nnames; i++) {
        struct pname *p = &r->names[i];
        p->final = NONE;
        if (p->claim != NONE && trove__pr_map_get(&taken, p->claim) == NONE) {
            if ((rc = trove__pr_map_put(&taken, p->claim, (uint32_t)i)) != TROVE_OK)
                goto out;
            p->final = p->claim;
            if ((uint64_t)p->claim + 1 > next)
                next = (uint64_t)p->claim + 1;
        }
    }
    for (size_t i = 0; i < r->nnames; i++) {
        struct pname *p = &r->names[i];
        if (p->final != NONE)
            continue;
        if (!p->has_str) { /* a claim someone else holds: it shares that id */
            p->final = p->claim;
            continue;
        }
        if (next > UINT32_MAX) {
            rc = TROVE_FAIL(r->diag, TROVE_ERR_LIMIT, 0, "Perfetto trace: %s",
                            "name ids run past 2^32");
            goto out;
        }
        p->final = (uint32_t)next++;
    }
    for (size_t i = 0; i < r->nnames; i++) {
        const struct pname *p = &r->names[i];
        if (p->has_str && trove__pr_map_get(&taken, p->final) == (uint32_t)i) {
            r->st.names++;
            if ((rc = trove_names_set(tmp, TROVE_NAME_EVENT, p->final, 0,
                                      (const char *)r->arena.ptr + p->off, p->len)) != TROVE_OK)
                goto out;
        }
    }
    for (size_t i = 0; i < r->nnames; i++) {
        const struct pname *p = &r->names[i];
        if (p->has_str && trove__pr_map_get(&taken, p->final) != (uint32_t)i) {
            r->st.names++;
            if ((rc = trove_names_set(tmp, TROVE_NAME_EVENT, p->final, 0,
                                      (const char *)r->arena.ptr + p->off, p->len)) != TROVE_OK)
                goto out;
        }
    }
out:
    trove__pr_map_free(&taken);
    return rc;
}

struct dorder {
    uint64_t off;
    size_t i;
};

static int cmp_dorder(const void *pa, const void *pb)
{
    const struct dorder *a = pa, *b = pb;
    return a->off < b->off ? -1 : a->off > b->off;
}

/* Thread and process names and sort indexes, in the order their descriptors came. */
static int track_names(struct pr *r, struct trove_names *tmp)
{
    struct dorder *o;
    int rc = TROVE_OK;
    if (!(o = trove__malloc((r->ntracks ? r->ntracks : 1) * sizeof *o)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < r->ntracks; i++)
        o[i] = (struct dorder){r->tracks[i].off, i};
    qsort(o, r->ntracks, sizeof *o, cmp_dorder);
    for (size_t k = 0; rc == TROVE_OK && k < r->ntracks; k++) {
        const struct track *t = &r->tracks[o[k].i];
        const char *a = (const char *)r->arena.ptr;
        if (t->has_process && (t->has_pname || t->has_name))
            rc = trove_names_set(tmp, TROVE_NAME_PROCESS, t->pid, 0,
                                 a + (t->has_pname ? t->pname_off : t->name_off),
                                 t->has_pname ? t->pname_len : t->name_len);
        else if (t->has_thread && (t->has_tname || t->has_name))
            rc = trove_names_set(tmp, TROVE_NAME_THREAD, t->pid, t->tid,
                                 a + (t->has_tname ? t->tname_off : t->name_off),
                                 t->has_tname ? t->tname_len : t->name_len);
        else if (t->resolved == 2 && t->has_name)
            rc = trove_names_set(tmp, TROVE_NAME_THREAD, t->pid, t->tid, a + t->name_off,
                                 t->name_len);
        if (rc == TROVE_OK && t->has_sort && (t->has_process || t->has_thread))
            rc = trove_names_set_sort(tmp, t->has_process ? TROVE_NAME_PROCESS_SORT
                                                          : TROVE_NAME_THREAD_SORT,
                                      t->pid, t->tid, t->sort);
    }
    free(o);
    return rc;
}

/* The staged rows to attrs, each as the event its record became (base + its index in the
 * order: a record's seq is its event's, a slice's its begin's); the staged strings taken as
 * they are when attrs is empty. On error attrs has the rows it had. */
static int hand_rows(struct pr *r, uint64_t base, struct trove_attrs *attrs)
{
    const struct trove_attrs *st = &r->stage;
    size_t n0 = attrs->n;
    int rc = TROVE_OK, adopted = 0;

    if (st->n == 0)
        return TROVE_OK;
    adopted = trove_attrs_take_strings(attrs, &r->stage); /* an empty table: ids kept */
    for (size_t i = 0; rc == TROVE_OK && i < r->nrec; i++) {
        size_t lo = trove_attrs_find(st, r->rec[i].seq), hi;
        for (hi = lo; hi < st->n && st->rows[hi].event == r->rec[i].seq;)
            hi++;
        if (adopted) {
            for (; rc == TROVE_OK && lo < hi; lo++) {
                struct trove_attr row = st->rows[lo];
                row.event = base + i;
                rc = trove_attrs_add(attrs, &row);
            }
        } else if (lo < hi) {
            rc = trove_attrs_append(attrs, st, lo, hi, base + i, r->rec[i].seq);
        }
    }
    if (rc != TROVE_OK)
        attrs->n = n0;
    r->st.attr_rows = attrs->n - n0;
    return rc;
}

static void pr_free(struct pr *r)
{
    for (size_t i = 0; i < r->ntracks; i++)
        free(r->tracks[i].open);
    free(r->tracks);
    for (size_t i = 0; i < r->nseqs; i++) {
        trove__pr_map_free(&r->seqs[i].names);
        trove__pr_map_free(&r->seqs[i].cats);
        trove__pr_map_free(&r->seqs[i].anames);
        trove__pr_map_free(&r->seqs[i].fcats);
        trove__pr_map_free(&r->seqs[i].bodies);
        trove__pr_map_free(&r->seqs[i].svals);
        trove__pfp_free(r->seqs[i].prof);
    }
    free(r->seqs);
    trove_bytes_free(&r->arena);
    free(r->names);
    free(r->str_next);
    trove__pr_map_free(&r->str_index);
    trove__pr_map_free(&r->claim_index);
    free(r->rec);
    free(r->flows);
    trove__pr_map_free(&r->flow_seen);
    trove_attrs_free(&r->stage);
    trove_bytes_free(&r->cats);
    trove_bytes_free(&r->nest);
}

int trove_perfetto_read(const uint8_t *buf, size_t len, const struct trove_perfetto_options *opt,
                        struct trove_events *events, struct trove_names *names,
                        struct trove_flows *flows, struct trove_perfetto_stats *stats,
                        struct trove_diag *diag)
{
    struct pr r;
    struct trove_names *tmp = NULL;
    uint64_t limit = opt && opt->max_input ? opt->max_input : INPUT_DEFAULT;
    int rc;

    if (stats)
        memset(stats, 0, sizeof *stats);
    if ((!buf && len) || !events)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no input buffer or events array");
    if ((uint64_t)len > limit)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, limit,
                          "input is larger than max_input (%" PRIu64 " bytes)", limit);
    memset(&r, 0, sizeof r);
    r.buf = buf;
    r.len = len;
    r.diag = diag;
    r.strict = opt && opt->strict;
    r.profile = opt ? opt->profile : NULL;
    r.keep = opt && opt->attrs;
    if (len == 0) {
        rc = TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, 0, "empty input: not a Perfetto trace");
        goto out;
    }
    /* the arena is never NULL, so that a string's offset (even of "") points into it */
    TROVE_TRY(rc, trove_bytes_reserve(&r.arena, 256));
    TROVE_TRY(rc, trove__pr_tracks(&r));
    TROVE_TRY(rc, trove__pr_each_packet(&r, pass2_packet));
    TROVE_TRY(rc, check_open(&r));
    TROVE_TRY(rc, trove__trace_order(r.rec, r.nrec, &r.st.threads));
    TROVE_TRY(rc, trove_names_new(&tmp));
    TROVE_TRY(rc, track_names(&r, tmp));
    TROVE_TRY(rc, assign_names(&r, tmp));
    TROVE_TRY(rc, trove_events_reserve(events, r.nrec));
    if (flows)
        TROVE_TRY(rc, trove_flows_reserve(flows, r.nflows));
    if (r.keep)
        TROVE_TRY(rc, hand_rows(&r, events->len, opt->attrs));
    if (names && (rc = trove_names_merge(names, tmp)) != TROVE_OK) {
        if (r.keep)
            opt->attrs->n -= (size_t)r.st.attr_rows;
        goto out;
    }
    for (size_t i = 0; i < r.nrec; i++) {
        const struct trove__trec *e = &r.rec[i];
        events->ev[events->len + i] = (struct trove_event){
            e->start, e->dur, e->pid, e->tid, e->kind, e->depth, e->extra, 0,
            r.names[e->name].final};
    }
    events->len += r.nrec;
    for (size_t i = 0; flows && i < r.nflows; i++) {
        struct trove_flow f = r.flows[i];
        f.name_id = r.names[f.name_id].final;
        flows->f[flows->len + i] = f;
    }
    if (flows)
        flows->len += r.nflows;
    rc = TROVE_OK;
out:
    if (rc == TROVE_ERR_NOMEM)
        TROVE_FAIL(diag, rc, 0, "out of memory reading a Perfetto trace of %zu bytes", len);
    if (stats)
        *stats = r.st;
    trove_names_free(tmp);
    pr_free(&r);
    return rc;
}

int trove_perfetto_sniff(const uint8_t *head, size_t n)
{
    struct trove__pb m;
    struct trove__pb_field f;
    uint64_t plen;
    const uint8_t *q;
    size_t i = 0;
    int why = 0, fields = 0, rc;

    /* JSON: white space, then '[' or '{' (or a byte order mark) */
    while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n'))
        i++;
    if (i < n && (head[i] == '[' || head[i] == '{' || head[i] == 0xEF))
        return 0;
    if (n < 3 || head[0] != 0x0a)
        return 0;
    if (!(q = trove_get_varint(head + 1, head + n, 64, &plen, &why)) || plen == 0 ||
        plen > (uint64_t)1 << 30)
        return 0;
    m.p = q;
    m.end = (uint64_t)(head + n - q) < plen ? head + n : q + plen;
    while ((rc = trove__pb_next(&m, &f)) == TROVE__PB_OK)
        fields++;
    /* a field cut by the end of the head is fine; a malformed one is not */
    return fields > 0 && (rc == TROVE__PB_END || (rc == TROVE_ERR_TRUNCATED && m.end == head + n));
}
