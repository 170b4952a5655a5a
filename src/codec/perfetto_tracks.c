/*
 * perfetto_tracks.c: the Perfetto reader's tables (perfetto_reader.h): u64 -> u32 maps,
 * the arena of strings and their trove names (a name interned with iid k claims id k - 1,
 * first claim first), the category codes of trove's own categories, and pass 1, the track
 * table: every TrackDescriptor of the trace read (tracks are global and may be described
 * after they are used), then each track resolved to a (pid, tid) as perfetto_read.c's
 * header comment says. Every string is bounded by TROVE_NAME_MAX and checked before it is
 * kept, tracks by MAX_TRACKS and strings by MAX_STRINGS before anything grows for them,
 * and a parent chain longer than MAX_DEPTH is a cycle.
 */
#include "perfetto_reader.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/utf8.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trove/digest.h"

static size_t map_slot(const struct map *m, uint64_t k)
{
    uint64_t h = k * 0x9E3779B97F4A7C15ULL;
    size_t i = (size_t)(h ^ (h >> 29)) & (m->cap - 1);
    while (m->val[i] != NONE && m->key[i] != k)
        i = (i + 1) & (m->cap - 1);
    return i;
}

uint32_t trove__pr_map_get(const struct map *m, uint64_t k)
{
    return m->cap ? m->val[map_slot(m, k)] : NONE;
}

int trove__pr_map_put(struct map *m, uint64_t k, uint32_t v)
{
    size_t i;
    if ((m->n + 1) * 2 > m->cap) {
        struct map g = {0};
        g.cap = m->cap ? m->cap * 2 : 64;
        if (!(g.key = trove__malloc(g.cap * sizeof *g.key)) ||
            !(g.val = trove__malloc(g.cap * sizeof *g.val))) {
            free(g.key);
            return TROVE_ERR_NOMEM;
        }
        memset(g.val, 0xff, g.cap * sizeof *g.val);
        for (size_t j = 0; j < m->cap; j++)
            if (m->val[j] != NONE) {
                size_t s = map_slot(&g, m->key[j]);
                g.key[s] = m->key[j];
                g.val[s] = m->val[j];
            }
        g.n = m->n;
        free(m->key);
        free(m->val);
        *m = g;
    }
    i = map_slot(m, k);
    if (m->val[i] == NONE)
        m->n++;
    m->key[i] = k;
    m->val[i] = v;
    return TROVE_OK;
}

void trove__pr_map_clear(struct map *m)
{
    if (m->cap)
        memset(m->val, 0xff, m->cap * sizeof *m->val);
    m->n = 0;
}

void trove__pr_map_free(struct map *m)
{
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* ---- strings and names ------------------------------------------------------------------ */

int trove__pr_check_string(struct pr *r, const struct trove__pb_field *f, const char *what)
{
    if (f->wt != TROVE__PB_LEN)
        return TROVE_FAIL(r->diag, TROVE_ERR_CORRUPT, (uint64_t)(f->data ? f->data - r->buf : 0),
                          "Perfetto trace: %s is not a string", what);
    if (f->len > TROVE_NAME_MAX)
        return TROVE_FAIL(r->diag, TROVE_ERR_LIMIT, (uint64_t)(f->data - r->buf),
                          "Perfetto trace: %s is %zu bytes, over the %d a name may have", what,
                          f->len, TROVE_NAME_MAX);
    if (f->len && trove__utf8_valid_prefix(f->data, f->len) != f->len)
        return TROVE_FAIL(r->diag, TROVE_ERR_CORRUPT,
                          (uint64_t)(f->data - r->buf) + trove__utf8_valid_prefix(f->data, f->len),
                          "Perfetto trace: %s is not valid UTF-8", what);
    return TROVE_OK;
}

static int keep_string(struct pr *r, const struct trove__pb_field *f, uint64_t *off,
                       uint32_t *len)
{
    int rc = trove_bytes_append(&r->arena, f->data, f->len);
    if (rc != TROVE_OK)
        return rc;
    *off = r->arena.len - f->len;
    *len = (uint32_t)f->len;
    return TROVE_OK;
}

static int new_name(struct pr *r, uint32_t *idx)
{
    int rc;
    if (r->nnames >= MAX_STRINGS)
        return TROVE_FAIL(r->diag, TROVE_ERR_LIMIT, 0,
                          "Perfetto trace: more than %zu distinct names", MAX_STRINGS);
    if ((rc = grow((void **)&r->names, &r->capnames, r->nnames, sizeof *r->names)) != TROVE_OK ||
        (rc = grow((void **)&r->str_next, &r->capnext, r->nnames, sizeof *r->str_next)) != TROVE_OK)
        return rc;
    memset(&r->names[r->nnames], 0, sizeof r->names[r->nnames]);
    r->names[r->nnames].claim = NONE;
    r->str_next[r->nnames] = NONE;
    *idx = (uint32_t)r->nnames++;
    return TROVE_OK;
}

/* The name of string p[0..n): found or added. claim (or NONE) is the id it asks for. */
int trove__pr_name_of_string(struct pr *r, const uint8_t *p, size_t n, uint32_t claim,
                             uint32_t *idx_out)
{
    uint64_t h = trove_checksum64(p, n);
    uint32_t first = trove__pr_map_get(&r->str_index, h), i;
    int rc;

    for (i = first; i != NONE; i = r->str_next[i]) {
        const struct pname *e = &r->names[i];
        if (e->len == n && (n == 0 || !memcmp(r->arena.ptr + e->off, p, n)))
            break;
    }
    if (i == NONE) {
        if ((rc = new_name(r, &i)) != TROVE_OK ||
            (rc = trove_bytes_append(&r->arena, p, n)) != TROVE_OK)
            return rc;
        r->names[i].off = r->arena.len - n;
        r->names[i].len = (uint32_t)n;
        r->names[i].has_str = 1;
        r->str_next[i] = first;
        if ((rc = trove__pr_map_put(&r->str_index, h, i)) != TROVE_OK)
            return rc;
    }
    if (claim != NONE && r->names[i].claim == NONE)
        r->names[i].claim = claim;
    *idx_out = i;
    return TROVE_OK;
}

/* A name known only by its iid (no interned entry said what it is). */
int trove__pr_name_of_claim(struct pr *r, uint32_t claim, uint32_t *idx_out)
{
    uint32_t i = trove__pr_map_get(&r->claim_index, claim);
    int rc;
    if (i == NONE) {
        if ((rc = new_name(r, &i)) != TROVE_OK ||
            (rc = trove__pr_map_put(&r->claim_index, claim, i)) != TROVE_OK)
            return rc;
        r->names[i].claim = claim;
    }
    *idx_out = i;
    return TROVE_OK;
}

/* "trove:K:E" or "trove:flow:s|t|f[:e]" as a code, else 0. */
uint32_t trove__pr_category_code(const uint8_t *p, size_t n)
{
    unsigned k = 0, e = 0, digits = 0;
    size_t i = 6;
    if (n < 7 || memcmp(p, "trove:", 6) != 0)
        return 0;
    if (n >= 13 && n <= 15 && !memcmp(p + 6, "depth:", 6)) {
        unsigned d = 0;
        for (i = 12; i < n && p[i] >= '0' && p[i] <= '9'; i++)
            d = d * 10 + (p[i] - '0');
        if (i != n || d > 255 || (n > 13 && p[12] == '0'))
            return 0;
        return CODE_DEPTH0 + d;
    }
    if (n >= 12 && !memcmp(p + 6, "flow:", 5)) {
        static const char phases[] = "stf";
        const char *ph = memchr(phases, p[11], 3);
        if (!ph || !(n == 12 || (n == 14 && p[12] == ':' && p[13] == 'e')))
            return 0;
        return CODE_FLOW0 + 2u * (unsigned)(ph - phases) + (n == 14);
    }
    for (; i < n && p[i] >= '0' && p[i] <= '9' && digits < 3; i++, digits++)
        k = k * 10 + (p[i] - '0');
    if (!digits || i >= n || p[i] != ':' || k > 255)
        return 0;
    for (i++, digits = 0; i < n && p[i] >= '0' && p[i] <= '9' && digits < 3; i++, digits++)
        e = e * 10 + (p[i] - '0');
    if (!digits || i != n || e > 255)
        return 0;
    return 1 + k * 256 + e;
}

/* ---- pass 1: tracks --------------------------------------------------------------------- */

/* A descriptor's sub-message (process or thread). */
static int read_desc_sub(struct pr *r, struct track *t, const struct trove__pb_field *f, int thread)
{
    struct trove__pb m = trove__pb_sub(f);
    struct trove__pb_field g;
    int rc;
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        if (g.num == 1 && g.wt == TROVE__PB_VARINT) {
            t->pid = (uint32_t)g.v;
        } else if (thread && g.num == 2 && g.wt == TROVE__PB_VARINT) {
            t->tid = (uint32_t)g.v;
        } else if (g.num == 3 && g.wt == TROVE__PB_VARINT) {
            /* legacy_sort_index, an int32: its low 32 bits, as protobuf reads one */
            t->sort = (int32_t)(uint32_t)g.v;
            t->has_sort = 1;
        } else if ((thread ? g.num == 5 : g.num == 6)) {
            const char *what = thread ? "a thread name" : "a process name";
            if ((rc = trove__pr_check_string(r, &g, what)) != TROVE_OK)
                return rc;
            if (thread) {
                t->has_tname = 1;
                rc = keep_string(r, &g, &t->tname_off, &t->tname_len);
            } else {
                t->has_pname = 1;
                rc = keep_string(r, &g, &t->pname_off, &t->pname_len);
            }
            if (rc != TROVE_OK)
                return rc;
        }
    }
    return rc < 0 ? field_error(r, rc, m.p, thread ? "a thread descriptor" : "a process descriptor")
                  : TROVE_OK;
}

static int read_descriptor(struct pr *r, const struct trove__pb_field *f)
{
    struct trove__pb m = trove__pb_sub(f);
    struct trove__pb_field g;
    struct track t;
    int rc, has_uuid = 0;

    memset(&t, 0, sizeof t);
    t.off = (uint64_t)(f->data - r->buf);
    while ((rc = trove__pb_next(&m, &g)) == TROVE__PB_OK) {
        if (g.num == 1 && g.wt == TROVE__PB_VARINT) {
            t.uuid = g.v;
            has_uuid = 1;
        } else if (g.num == 5 && g.wt == TROVE__PB_VARINT) {
            t.parent = g.v;
        } else if (g.num == 2) {
            if ((rc = trove__pr_check_string(r, &g, "a track name")) != TROVE_OK ||
                (rc = keep_string(r, &g, &t.name_off, &t.name_len)) != TROVE_OK)
                return rc;
            t.has_name = 1;
        } else if ((g.num == 3 || g.num == 4) && g.wt == TROVE__PB_LEN) {
            if (g.num == 3)
                t.has_process = 1;
            else
                t.has_thread = 1;
            if ((rc = read_desc_sub(r, &t, &g, g.num == 4)) != TROVE_OK)
                return rc;
        }
    }
    if (rc < 0)
        return field_error(r, rc, m.p, "a track descriptor");
    if (!has_uuid)
        return fail(r, TROVE_ERR_CORRUPT, f->data, "Perfetto trace: a %s has no uuid",
                    "track descriptor");
    r->st.track_descriptors++;
    if (r->ntracks >= MAX_TRACKS)
        return fail(r, TROVE_ERR_LIMIT, f->data, "Perfetto trace: more than 2^20 %s",
                    "track descriptors");
    if ((rc = grow((void **)&r->tracks, &r->captracks, r->ntracks, sizeof t)) != TROVE_OK)
        return rc;
    r->tracks[r->ntracks++] = t;
    return TROVE_OK;
}

int trove__pr_each_packet(struct pr *r, packet_fn fn)
{
    struct trove__pb m = {r->buf, r->buf + r->len};
    struct trove__pb_field f;
    int rc;
    while ((rc = trove__pb_next(&m, &f)) == TROVE__PB_OK) {
        if (f.num != 1 || f.wt != TROVE__PB_LEN)
            return TROVE_FAIL(r->diag, TROVE_ERR_CORRUPT, (uint64_t)(f.data ? f.data - r->buf : 0),
                              "not a Perfetto trace: top-level field %" PRIu32
                              " (wire type %u); a trace holds only packets (field 1)",
                              f.num, f.wt);
        if ((rc = fn(r, f.data, f.len)) != TROVE_OK)
            return rc;
    }
    return rc < 0 ? field_error(r, rc, m.p, "the packet stream") : TROVE_OK;
}

static int pass1_packet(struct pr *r, const uint8_t *data, size_t len)
{
    struct trove__pb m = {data, data + len};
    struct trove__pb_field f;
    int rc;
    r->st.packets++;
    while ((rc = trove__pb_next(&m, &f)) == TROVE__PB_OK)
        if (f.num == 60 && f.wt == TROVE__PB_LEN && (rc = read_descriptor(r, &f)) != TROVE_OK)
            return rc;
    return rc < 0 ? field_error(r, rc, m.p, "a packet") : TROVE_OK;
}

static int cmp_track(const void *pa, const void *pb)
{
    const struct track *a = pa, *b = pb;
    if (a->uuid != b->uuid)
        return a->uuid < b->uuid ? -1 : 1;
    return a->off < b->off ? -1 : a->off > b->off;
}

struct track *trove__pr_find_track(struct pr *r, uint64_t uuid)
{
    size_t lo = 0, hi = r->ntracks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->tracks[mid].uuid < uuid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->ntracks && r->tracks[lo].uuid == uuid ? &r->tracks[lo] : NULL;
}

/* Resolve every track to its (pid, tid). */
static int resolve_tracks(struct pr *r)
{
    struct map used = {0}, next = {0};
    size_t k = 0;
    int rc = TROVE_OK;

    /* sorted by uuid; of repeats, the first described is kept */
    if (r->ntracks > 1)
        qsort(r->tracks, r->ntracks, sizeof *r->tracks, cmp_track);
    for (size_t i = 0; i < r->ntracks; i++) {
        if (k && r->tracks[k - 1].uuid == r->tracks[i].uuid) {
            free(r->tracks[i].open);
            continue;
        }
        r->tracks[k++] = r->tracks[i];
    }
    r->ntracks = k;
    /* processes, threads and trove's synthetic tracks first: their tids are taken */
    for (size_t i = 0; i < r->ntracks; i++) {
        struct track *t = &r->tracks[i];
        struct track *p = t->parent ? trove__pr_find_track(r, t->parent) : NULL;
        if (t->has_thread) {
            t->resolved = 1;
        } else if (t->has_process) {
            t->tid = 0;
            t->resolved = 1;
        } else if (p && p->has_process && (t->uuid & 3) == 2 &&
                   (t->uuid >> 24) < TROVE_TID_SYNTHETIC_COUNT &&
                   p->uuid == ((((t->uuid >> 2) & 0x3fffffu) + 1) << 2)) {
            t->pid = p->pid;
            t->tid = TROVE_TID_SYNTHETIC + (uint32_t)(t->uuid >> 24);
            t->resolved = 2; /* a track of its own: its name names the (pid, tid) */
        }
        if (t->resolved &&
            (rc = trove__pr_map_put(&used, (uint64_t)t->pid << 32 | t->tid, 1)) != TROVE_OK)
            goto out;
    }
    /* other tracks under a process (or under nothing): a synthetic tid of their own */
    for (size_t i = 0; i < r->ntracks; i++) {
        struct track *t = &r->tracks[i];
        struct track *p = t->parent ? trove__pr_find_track(r, t->parent) : NULL;
        uint32_t n;
        if (t->resolved || (p && !p->has_process))
            continue;
        t->pid = p ? p->pid : 0;
        n = trove__pr_map_get(&next, t->pid);
        n = n == NONE ? 0 : n;
        while (n < TROVE_TID_SYNTHETIC_COUNT &&
               trove__pr_map_get(&used, (uint64_t)t->pid << 32 | (TROVE_TID_SYNTHETIC + n)) != NONE)
            n++;
        if (n >= TROVE_TID_SYNTHETIC_COUNT) {
            rc = fail(r, TROVE_ERR_LIMIT, r->buf + t->off,
                      "Perfetto trace: %s", "a process has more than 2^24 async tracks");
            goto out;
        }
        t->tid = TROVE_TID_SYNTHETIC + n;
        t->resolved = 2;
        if ((rc = trove__pr_map_put(&next, t->pid, n + 1)) != TROVE_OK ||
            (rc = trove__pr_map_put(&used, (uint64_t)t->pid << 32 | t->tid, 1)) != TROVE_OK)
            goto out;
    }
    /* tracks under a thread or an async track: that track's (pid, tid) */
    for (size_t i = 0; i < r->ntracks; i++) {
        struct track *t = &r->tracks[i], *a = t;
        int depth = 0;
        while (!a->resolved) {
            a = trove__pr_find_track(r, a->parent);
            if (!a || ++depth > MAX_DEPTH) {
                rc = fail(r, TROVE_ERR_CORRUPT, r->buf + t->off,
                          "Perfetto trace: a track's parents %s",
                          "loop or run deeper than 64");
                goto out;
            }
        }
        if (a != t) {
            t->pid = a->pid;
            t->tid = a->tid;
            t->resolved = 3;
        }
    }
out:
    trove__pr_map_free(&used);
    trove__pr_map_free(&next);
    return rc;
}

int trove__pr_tracks(struct pr *r)
{
    int rc = trove__pr_each_packet(r, pass1_packet);
    return rc == TROVE_OK ? resolve_tracks(r) : rc;
}
