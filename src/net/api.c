/*
 * api.c: the router and the access checks of the service's HTTP API (api.h).
 */
#include "api.h"
#include "assets.h"
#include "flows_json.h"
#include "profile_json.h"
#include "trove/diff.h"
#include "trove/summary.h"
#include "common/alloc.h"
#include "common/hex.h"

#include <arpa/inet.h>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trove/wire.h"

static int fail(struct trove__api_error *err, int status, const char *fmt, const char *a,
                const char *b)
{
    static const struct {
        int status;
        const char *code;
    } codes[] = {{400, "bad_request"}, {404, "not_found"}, {405, "method_not_allowed"},
                 {413, "too_large"}};
    err->status = status;
    err->code = "bad_request";
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (codes[i].status == status)
            err->code = codes[i].code;
    snprintf(err->msg, sizeof err->msg, fmt, a ? a : "", b ? b : "");
    return -1;
}

/* Percent-decode s[0..n) into out (cap bytes, NUL-terminated); -1 on a bad or NUL escape or
 * when it does not fit. With form, '+' is a space (a query's); else it stays '+'. */
static int decode_as(const char *s, size_t n, char *out, size_t cap, int form)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '+' && form) /* a query's space, as a browser's URLSearchParams writes it */
            c = ' ';
        else if (c == '%') {
            int hi, lo;
            if (i + 2 >= n || (hi = trove__hex_value(s[i + 1])) < 0 ||
                (lo = trove__hex_value(s[i + 2])) < 0)
                return -1;
            c = hi << 4 | lo;
            i += 2;
        }
        if (c == 0 || o + 1 >= cap)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = 0;
    return 0;
}

/* A path's piece. */
static int decode(const char *s, size_t n, char *out, size_t cap)
{
    return decode_as(s, n, out, cap, 0);
}

/* The same for a query's key, where '+' is a space. */
static int decode_query(const char *s, size_t n, char *out, size_t cap)
{
    return decode_as(s, n, out, cap, 1);
}

static int parse_u64(const char *v, uint64_t *out)
{
    uint64_t x = 0;

    if (!*v)
        return -1;
    for (; *v; v++) {
        if (*v < '0' || *v > '9' || x > (UINT64_MAX - (uint64_t)(*v - '0')) / 10)
            return -1;
        x = x * 10 + (uint64_t)(*v - '0');
    }
    *out = x;
    return 0;
}

static int name_ok(const char *v, char *out, struct trove__api_error *err)
{
    struct trove_diag diag = {0};

    if (trove_volume_name_check(v, &diag) != TROVE_OK)
        return fail(err, 400, "capture name: %.290s%s", diag.msg, "");
    snprintf(out, TROVE_VOLUME_NAME_MAX + 1, "%s", v);
    return 0;
}

/* The parameters a route takes. */
enum {
    P_CAPTURE = 1 << 0,
    P_WIRE = 1 << 1,
    P_FROM = 1 << 2,     /* from=start|now */
    P_RANGE = 1 << 3,    /* from_ns, to_ns */
    P_SPEED = 1 << 4,
    P_FORMAT = 1 << 5,
    P_NAME = 1 << 6,     /* name= (import) */
    P_APPEND = 1 << 7,
    P_TOKEN = 1 << 8,
    P_LIMIT = 1 << 9,
    P_PX = 1 << 10,      /* view */
    P_TRACKS = 1 << 11,  /* view, stats, events, flows */
    P_NAMES = 1 << 12,   /* view */
    P_EVENT = 1 << 13,   /* name= (stats, events: an event name) */
    P_SORT = 1 << 14,    /* stats */
    P_ORDER = 1 << 15,   /* events */
    P_QLIMIT = 1 << 16,  /* limit= (stats, events, flows) */
    P_CLIP = 1 << 17,    /* clip=0|1 (stats) */
    P_MATCH = 1 << 18,   /* match=0|1 (events) */
    P_DUR = 1 << 19,     /* min_dur_ns, max_dur_ns (events) */
    P_IDS = 1 << 20,     /* ids= (events) */
    P_DIFF = 1 << 21,    /* a, b, a_from_ns .. b_to_ns, by, min_count, alpha, method (diff) */
    P_ATTRS = 1 << 22,   /* attrs=0|1 (live) */
    P_INDEX = 1 << 23,   /* event=I (attrs) */
    P_TEXT = 1 << 24     /* text= (events: in a name or an attribute value) */
};

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* ids=ID,...: into r->ids, sorted and distinct. */
static int parse_ids(const char *val, struct trove__api_req *r, struct trove__api_error *err)
{
    const char *p = val;
    size_t m = 0;

    r->nids = 0;
    while (*p) {
        char *end;
        unsigned long long id;
        if (r->nids == TROVE__API_IDS_MAX)
            return fail(err, 400, "ids= names over 1024 ids; give name= and match=1%s%s", "", "");
        if (*p < '0' || *p > '9')
            return fail(err, 400, "ids=: '%.40s' is not a name id", p, "");
        id = strtoull(p, &end, 10);
        if ((*end != ',' && *end != 0) || id > UINT32_MAX)
            return fail(err, 400, "ids=: '%.40s' is not a name id", p, "");
        r->ids[r->nids++] = (uint32_t)id;
        p = *end ? end + 1 : end;
    }
    if (r->nids == 0)
        return fail(err, 400, "ids= is empty%s%s", "", "");
    qsort(r->ids, r->nids, sizeof r->ids[0], u32_cmp);
    for (size_t i = 0; i < r->nids; i++)
        if (m == 0 || r->ids[m - 1] != r->ids[i])
            r->ids[m++] = r->ids[i];
    r->nids = m;
    return 0;
}

/* tracks=PID:TID,...: into r->tracks, sorted and distinct. */
static int parse_tracks(const char *val, struct trove__api_req *r, struct trove__api_error *err)
{
    const char *p = val;
    size_t m = 0;

    r->ntracks = 0;
    while (*p) {
        char *end;
        unsigned long long pid, tid;
        if (r->ntracks == TROVE__API_TRACKS_MAX)
            return fail(err, 400, "tracks= names over 1024 tracks%s%s", "", "");
        if (*p < '0' || *p > '9')
            return fail(err, 400, "tracks=: '%.40s' is not PID:TID", p, "");
        pid = strtoull(p, &end, 10);
        if (*end != ':' || end[1] < '0' || end[1] > '9' || pid > UINT32_MAX)
            return fail(err, 400, "tracks=: '%.40s' is not PID:TID", p, "");
        tid = strtoull(end + 1, &end, 10);
        if ((*end != ',' && *end != 0) || tid > UINT32_MAX)
            return fail(err, 400, "tracks=: '%.40s' is not PID:TID", p, "");
        r->tracks[r->ntracks++] = (uint64_t)pid << 32 | tid;
        p = *end ? end + 1 : end;
    }
    if (r->ntracks == 0)
        return fail(err, 400, "tracks= is empty; leave it out for every track%s%s", "", "");
    qsort(r->tracks, r->ntracks, sizeof r->tracks[0], u64_cmp);
    for (size_t i = 0; i < r->ntracks; i++)
        if (m == 0 || r->tracks[m - 1] != r->tracks[i])
            r->tracks[m++] = r->tracks[i];
    r->ntracks = m;
    return 0;
}

/* One of /api/diff's own parameters (each at most once: the caller's `seen` cannot tell
 * them apart, so r keeps its own bits). */
static int diff_param(const char *key, const char *val, struct trove__api_req *r,
                      struct trove__api_error *err)
{
    static const char *const keys[] = {"a",       "b",         "a_from_ns", "a_to_ns", "b_from_ns",
                                       "b_to_ns", "by",        "min_count", "alpha",   "method"};
    unsigned k = 0;

    while (k < sizeof keys / sizeof keys[0] && strcmp(key, keys[k]))
        k++;
    if (r->diff_seen & (1u << k))
        return fail(err, 400, "'%s' given twice%s", key, "");
    r->diff_seen |= 1u << k;
    if (k == 0 || k == 1) {
        char name[TROVE_VOLUME_NAME_MAX + 1];
        if (name_ok(val, name, err))
            return -1;
        snprintf(k == 0 ? r->name : r->name_b, sizeof name, "%s", name);
    } else if (k <= 5) {
        uint64_t x, *to[] = {&r->a_from_ns, &r->a_to_ns, &r->b_from_ns, &r->b_to_ns};
        if (parse_u64(val, &x))
            return fail(err, 400, "%s=%.40s is not a count of nanoseconds", key, val);
        *to[k - 2] = x;
    } else if (k == 6) {
        if (strcmp(val, "name") && strcmp(val, "thread"))
            return fail(err, 400, "by=%.40s is not name or thread%s", val, "");
        r->by_thread = !strcmp(val, "thread");
    } else if (k == 7) {
        if (parse_u64(val, &r->min_count))
            return fail(err, 400, "min_count=%.40s is not a count%s", val, "");
    } else if (k == 8) {
        char *end;
        r->alpha = strtod(val, &end);
        if (*end || end == val || !(r->alpha > 0 && r->alpha < 1))
            return fail(err, 400, "alpha=%.40s is not a probability between 0 and 1%s", val, "");
    } else {
        if (!strcmp(val, "auto"))
            r->method = TROVE_DIFF_AUTO;
        else if (!strcmp(val, "exact"))
            r->method = TROVE_DIFF_EXACT;
        else if (!strcmp(val, "sketch"))
            r->method = TROVE_DIFF_SKETCH;
        else
            return fail(err, 400, "method=%.40s is not auto, exact or sketch%s", val, "");
    }
    return 0;
}

static int one_param(const char *key, const char *val, unsigned takes, struct trove__api_req *r,
                     unsigned *seen, struct trove__api_error *err)
{
    static const struct {
        const char *key;
        unsigned bit;
    } keys[] = {{"capture", P_CAPTURE}, {"wire", P_WIRE},     {"from", P_FROM},
                {"from_ns", P_RANGE},   {"to_ns", P_RANGE},   {"speed", P_SPEED},
                {"format", P_FORMAT},   {"name", P_NAME},     {"append", P_APPEND},
                {"token", P_TOKEN},     {"limit", P_LIMIT},   {"px", P_PX},
                {"tracks", P_TRACKS},   {"names", P_NAMES},   {"sort", P_SORT},
                {"order", P_ORDER},     {"clip", P_CLIP},     {"match", P_MATCH},
                {"min_dur_ns", P_DUR},  {"max_dur_ns", P_DUR},  {"ids", P_IDS},
                {"a", P_DIFF},          {"b", P_DIFF},        {"a_from_ns", P_DIFF},
                {"a_to_ns", P_DIFF},    {"b_from_ns", P_DIFF}, {"b_to_ns", P_DIFF},
                {"by", P_DIFF},         {"min_count", P_DIFF}, {"alpha", P_DIFF},
                {"method", P_DIFF},     {"attrs", P_ATTRS},   {"event", P_INDEX},
                {"text", P_TEXT}};
    unsigned bit = 0;

    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i].key) == 0)
            bit = keys[i].bit;
    /* the query routes' name= is an event name, and their limit= has its own range */
    if (bit == P_NAME && (takes & P_EVENT))
        bit = P_EVENT;
    if (bit == P_LIMIT && (takes & P_QLIMIT))
        bit = P_QLIMIT;
    if ((bit & (P_PX | P_TRACKS | P_NAMES | P_EVENT | P_SORT | P_ORDER | P_QLIMIT | P_CLIP | P_MATCH | P_IDS)) &&
        (*seen & bit))
        return fail(err, 400, "'%s' given twice%s", key, "");
    if (bit == P_EVENT) {
        if (!(takes & bit))
            return fail(err, 400, "unknown parameter '%s'%s", key, "");
        if (!val[0] || strlen(val) >= sizeof r->event)
            return fail(err, 400, "name= is empty or over 1023 bytes%s%s", "", "");
        snprintf(r->event, sizeof r->event, "%s", val);
        r->has_event = 1;
        *seen |= bit;
        return 0;
    }
    if (bit == P_TEXT) {
        if (!(takes & bit))
            return fail(err, 400, "unknown parameter '%s'%s", key, "");
        if (*seen & bit)
            return fail(err, 400, "'%s' given twice%s", key, "");
        if (!val[0] || strlen(val) >= sizeof r->text)
            return fail(err, 400, "text= is empty or over 1023 bytes%s%s", "", "");
        snprintf(r->text, sizeof r->text, "%s", val);
        r->has_text = 1;
        *seen |= bit;
        return 0;
    }
    if (bit == P_QLIMIT) {
        uint64_t x;
        if (parse_u64(val, &x) || x > 100000)
            return fail(err, 400, "limit=%.40s is not a count from 0 to 100000%s", val, "");
        r->qlimit = (uint32_t)x;
        *seen |= bit;
        return 0;
    }
    if (!bit || !(takes & bit))
        return fail(err, 400, "unknown parameter '%s'%s", key, "");
    if (bit == P_DIFF)
        return diff_param(key, val, r, err);
    if (!strcmp(key, "capture") || !strcmp(key, "name")) {
        if (*seen & bit)
            return fail(err, 400, "'%s' given twice%s", key, "");
        if (name_ok(val, r->name, err))
            return -1;
    } else if (!strcmp(key, "wire")) {
        if (strcmp(val, "auto") == 0)
            r->wire = 0;
        else if ((r->wire = trove_wire_format_parse(val)) < TROVE_WIRE_RAW ||
                 r->wire > TROVE_WIRE_DEFLATE)
            return fail(err, 400, "wire=%s is not auto, raw, packed or deflate%s", val, "");
    } else if (!strcmp(key, "from")) {
        if (strcmp(val, "start") && strcmp(val, "now"))
            return fail(err, 400, "from=%s is not start or now%s", val, "");
        r->from_start = strcmp(val, "start") == 0;
    } else if (!strcmp(key, "event")) {
        if (parse_u64(val, &r->index))
            return fail(err, 400, "event=%.40s is not an event's index%s", val, "");
    } else if (!strcmp(key, "from_ns") || !strcmp(key, "to_ns")) {
        uint64_t x;
        if (parse_u64(val, &x))
            return fail(err, 400, "%s=%s is not a count of nanoseconds", key, val);
        if (!strcmp(key, "from_ns"))
            r->from_ns = x;
        else
            r->to_ns = x;
    } else if (!strcmp(key, "speed")) {
        char *end;
        if (strcmp(val, "max") == 0) {
            r->speed = 0;
        } else {
            r->speed = strtod(val, &end);
            if (*end || end == val || !(r->speed > 0) || r->speed > 1e9)
                return fail(err, 400, "speed=%s is not max or a positive multiple%s", val, "");
        }
    } else if (!strcmp(key, "format")) {
        static const char *const f[] = {"bundle", "parquet", "dir.zip", "chrome-json", "perfetto"};
        r->format = 0;
        for (int i = 0; i < 5; i++)
            if (strcmp(val, f[i]) == 0)
                r->format = i + 1;
        if (!r->format)
            return fail(err, 400,
                        "format=%s is not bundle, parquet, dir.zip, chrome-json or perfetto%s",
                        val, "");
    } else if (!strcmp(key, "limit")) {
        uint64_t x;
        _Static_assert(TROVE__PROFILE_TOP_MAX == 500, "the message below says 500");
        if (parse_u64(val, &x) || x < 1 || x > TROVE__PROFILE_TOP_MAX)
            return fail(err, 400, "limit=%s is not a count from 1 to 500%s", val, "");
        r->limit = (uint32_t)x;
    } else if (!strcmp(key, "px")) {
        uint64_t x;
        if (parse_u64(val, &x) || x < 1 || x > TROVE_VIEW_MAX_PX)
            return fail(err, 400, "px=%s is not a width from 1 to 16384%s", val, "");
        r->px = (uint32_t)x;
    } else if (!strcmp(key, "tracks")) {
        if (parse_tracks(val, r, err))
            return -1;
    } else if (!strcmp(key, "names")) {
        if (strcmp(val, "0") && strcmp(val, "1"))
            return fail(err, 400, "names=%s is not 0 or 1%s", val, "");
        r->names = !strcmp(val, "1");
    } else if (!strcmp(key, "sort")) {
        if ((r->sort = trove_stats_sort_parse(val)) < 0)
            return fail(err, 400, "sort=%s is not total, count, p99, self or max%s", val, "");
    } else if (!strcmp(key, "ids")) {
        if (parse_ids(val, r, err))
            return -1;
    } else if (!strcmp(key, "match")) {
        if (strcmp(val, "0") && strcmp(val, "1"))
            return fail(err, 400, "match=%s is not 0 or 1%s", val, "");
        r->match = !strcmp(val, "1");
    } else if (!strcmp(key, "min_dur_ns") || !strcmp(key, "max_dur_ns")) {
        uint64_t x;
        if (parse_u64(val, &x))
            return fail(err, 400, "%s=%s is not a count of nanoseconds", key, val);
        if (!strcmp(key, "min_dur_ns"))
            r->min_dur_ns = x;
        else
            r->max_dur_ns = x;
    } else if (!strcmp(key, "clip")) {
        if (strcmp(val, "0") && strcmp(val, "1"))
            return fail(err, 400, "clip=%s is not 0 or 1%s", val, "");
        r->clip = !strcmp(val, "1");
    } else if (!strcmp(key, "order")) {
        if (strcmp(val, "start") && strcmp(val, "dur_desc") && strcmp(val, "start_desc"))
            return fail(err, 400, "order=%s is not start, start_desc or dur_desc%s", val, "");
        r->order = !strcmp(val, "dur_desc")     ? TROVE_FIND_DUR_DESC
                   : !strcmp(val, "start_desc") ? TROVE_FIND_START_DESC
                                                : TROVE_FIND_START;
    } else if (!strcmp(key, "append") || !strcmp(key, "attrs")) {
        if (strcmp(val, "0") && strcmp(val, "1") && strcmp(val, "true") && strcmp(val, "false"))
            return fail(err, 400, "%s=%s is not 0 or 1", key, val);
        *(!strcmp(key, "append") ? &r->append : &r->attrs) = !strcmp(val, "1") || !strcmp(val, "true");
    } else { /* token */
        if (strlen(val) >= sizeof r->token)
            return fail(err, 413, "the token is over 256 bytes%s%s", NULL, NULL);
        snprintf(r->token, sizeof r->token, "%s", val);
    }
    *seen |= bit;
    return 0;
}

static int parse_query(const char *q, unsigned takes, struct trove__api_req *r, unsigned *seen,
                       struct trove__api_error *err)
{
    char key[32], val[TROVE__API_QUERY_MAX + 1];

    if (!q)
        return 0;
    if (strlen(q) > TROVE__API_QUERY_MAX)
        return fail(err, 413, "the query is over 4096 bytes%s%s", NULL, NULL);
    while (*q) {
        size_t n = strcspn(q, "&"), k = strcspn(q, "=");
        if (n == 0) {
            q++;
            continue;
        }
        if (k >= n) /* no '=': a flag with an empty value */
            k = n;
        if (decode_query(q, k, key, sizeof key))
            return fail(err, 400, "a bad parameter name in the query%s%s", NULL, NULL);
        /* a value's '+' is a space, but a token's is its own (tokens are base64) */
        if (decode_as(q + k + (k < n), n - k - (k < n), val, sizeof val, strcmp(key, "token") != 0))
            return fail(err, 400, "parameter '%s': a bad %%-escape (or NUL) in its value%s", key,
                        "");
        if (one_param(key, val, takes, r, seen, err))
            return -1;
        q += n + (q[n] == '&');
    }
    return 0;
}

int trove__api_route(int method, const char *path, const char *query, struct trove__api_req *out,
                     struct trove__api_error *err)
{
    static const char prefix[] = "/api/captures/";
    unsigned takes = 0, need = 0, seen = 0;
    char name[TROVE_VOLUME_NAME_MAX * 3 + 2];

    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    out->to_ns = UINT64_MAX;
    if (!path)
        return fail(err, 400, "no path%s%s", NULL, NULL);
    if (strlen(path) > TROVE__API_HEADER_MAX)
        return fail(err, 413, "the path is over 8192 bytes%s%s", NULL, NULL);
    if (!strcmp(path, "/") || !strcmp(path, "/index.html")) {
        out->route = TROVE__R_INDEX;
        if (!trove__web_asset_find("index.html", &out->asset))
            return fail(err, 404, "this build has no viewer (web/index.html)%s%s", NULL, NULL);
    } else if (!strcmp(path, "/status")) {
        out->route = TROVE__R_STATUS_PAGE;
    } else if (!strncmp(path, "/web/", 5)) {
        out->route = TROVE__R_ASSET;
        if (!trove__web_asset_find(path + 5, &out->asset))
            return fail(err, 404, "no such file of the viewer: %s%s", path, "");
    } else if (!strcmp(path, "/api/status")) {
        out->route = TROVE__R_STATUS;
    } else if (!strcmp(path, "/metrics")) {
        out->route = TROVE__R_METRICS;
    } else if (!strcmp(path, "/login")) {
        out->route = TROVE__R_LOGIN;
        takes = need = P_TOKEN;
    } else if (!strcmp(path, "/api/live")) {
        out->route = TROVE__R_LIVE;
        takes = P_CAPTURE | P_WIRE | P_FROM | P_ATTRS;
        need = P_CAPTURE;
    } else if (!strcmp(path, "/api/replay")) {
        out->route = TROVE__R_REPLAY;
        takes = P_CAPTURE | P_WIRE | P_RANGE | P_SPEED;
        need = P_CAPTURE;
    } else if (!strcmp(path, "/api/captures") || !strcmp(path, "/api/captures/")) {
        out->route = TROVE__R_LIST;
    } else if (!strcmp(path, "/api/captures/import")) {
        out->route = TROVE__R_IMPORT;
        takes = P_NAME | P_APPEND;
        need = P_NAME;
    } else if (!strcmp(path, "/api/diff")) {
        out->route = TROVE__R_DIFF;
        takes = P_DIFF | P_EVENT | P_QLIMIT;
        out->qlimit = 0;
    } else if (!strncmp(path, prefix, sizeof prefix - 1)) {
        const char *rest = path + sizeof prefix - 1;
        size_t n = strcspn(rest, "/");
        if (n == 0 || n >= sizeof name || decode(rest, n, name, sizeof name))
            return fail(err, 400, "a bad capture name in the path%s%s", NULL, NULL);
        if (name_ok(name, out->name, err))
            return -1;
        if (rest[n] == 0) {
            out->route = method == TROVE__DELETE ? TROVE__R_DELETE : TROVE__R_INFO;
        } else if (!strcmp(rest + n, "/export")) {
            out->route = TROVE__R_EXPORT;
            takes = P_FORMAT | P_RANGE;
        } else if (!strcmp(rest + n, "/profile")) {
            out->route = TROVE__R_PROFILE;
            takes = P_RANGE | P_LIMIT;
            out->limit = TROVE__PROFILE_TOP_DEFAULT;
        } else if (!strcmp(rest + n, "/tracks")) {
            out->route = TROVE__R_TRACKS;
        } else if (!strcmp(rest + n, "/names")) {
            out->route = TROVE__R_NAMES;
        } else if (!strcmp(rest + n, "/view")) {
            out->route = TROVE__R_VIEW;
            takes = P_RANGE | P_PX | P_TRACKS | P_NAMES;
            out->px = 1000;
            out->names = 1;
        } else if (!strcmp(rest + n, "/stats")) {
            out->route = TROVE__R_STATS;
            takes = P_RANGE | P_TRACKS | P_EVENT | P_SORT | P_QLIMIT | P_CLIP;
            out->qlimit = 100;
        } else if (!strcmp(rest + n, "/events")) {
            out->route = TROVE__R_EVENTS;
            takes = P_RANGE | P_TRACKS | P_EVENT | P_ORDER | P_QLIMIT | P_MATCH | P_DUR | P_IDS | P_TEXT;
            out->qlimit = 20;
        } else if (!strcmp(rest + n, "/attrs")) {
            out->route = TROVE__R_ATTRS;
            takes = need = P_INDEX;
        } else if (!strcmp(rest + n, "/frames")) {
            out->route = TROVE__R_FRAMES;
            takes = P_RANGE | P_QLIMIT;
            out->qlimit = 20000;
        } else if (!strcmp(rest + n, "/flows")) {
            out->route = TROVE__R_FLOWS;
            takes = P_RANGE | P_TRACKS | P_QLIMIT;
            out->qlimit = TROVE__FLOWS_LIMIT_DEFAULT;
        } else {
            return fail(err, 400, "a capture name holds no '/' (%s)%s", path, "");
        }
    } else {
        return fail(err, 404, "no such endpoint: %s%s", path, "");
    }
    /* the method each route takes */
    {
        int want = out->route == TROVE__R_IMPORT ? TROVE__POST
                   : out->route == TROVE__R_DELETE ? TROVE__DELETE
                                                   : TROVE__GET;
        if (out->route == TROVE__R_INFO && method == TROVE__DELETE)
            want = TROVE__DELETE;
        if (method != want)
            return fail(err, 405, "%s takes %s", path,
                        want == TROVE__POST ? "POST" : want == TROVE__DELETE ? "DELETE" : "GET");
    }
    if (parse_query(query, takes, out, &seen, err))
        return -1;
    if ((seen & need) != need)
        return fail(err, 400, "%s needs %s", path,
                    need & P_CAPTURE ? "capture=NAME"
                    : need & P_EVENT ? "name=EVENT"
                    : need & P_NAME  ? "name=NAME"
                    : need & P_INDEX ? "event=INDEX"
                                     : "token=TOKEN");
    if (out->route == TROVE__R_DIFF && (!out->name[0] || !out->name_b[0]))
        return fail(err, 400, "%s needs a=CAPTURE and b=CAPTURE%s", path, "");
    if (out->route == TROVE__R_DIFF &&
        ((out->a_to_ns && out->a_from_ns >= out->a_to_ns) || (out->b_to_ns && out->b_from_ns >= out->b_to_ns)))
        return fail(err, 400, "a range's from_ns is not before its to_ns%s%s", "", "");
    /* the events of a name (name=) or of name ids (ids=), one or the other */
    if (out->route == TROVE__R_EVENTS && !(seen & (P_EVENT | P_IDS | P_TEXT)))
        return fail(err, 400, "%s needs name=EVENT, ids=ID,... or text=TEXT%s", path, "");
    if (out->route == TROVE__R_EVENTS && !!(seen & P_EVENT) + !!(seen & P_IDS) + !!(seen & P_TEXT) > 1)
        return fail(err, 400, "one of name=, ids= and text=%s%s", "", "");
    if (out->route == TROVE__R_EVENTS && (seen & P_TEXT) && out->match)
        return fail(err, 400, "text= matches already: no match=1%s%s", "", "");
    if (out->route == TROVE__R_EVENTS && (seen & P_IDS) && out->match)
        return fail(err, 400, "match=1 takes name=, not ids=%s%s", "", "");
    if (out->route == TROVE__R_EVENTS && (out->qlimit < 1 || out->qlimit > 10000))
        return fail(err, 400, "limit: the events endpoint answers 1 to 10000%s%s", "", "");
    if (out->route == TROVE__R_FRAMES && out->qlimit < 1)
        return fail(err, 400, "limit: the frames endpoint answers 1 to 100000 frames%s%s", "", "");
    if (out->route == TROVE__R_FLOWS && (out->qlimit < 1 || out->qlimit > TROVE__FLOWS_LIMIT_MAX))
        return fail(err, 400, "limit: the flows endpoint answers 1 to 10000 chains%s%s", "", "");
    if (out->from_ns > out->to_ns)
        return fail(err, 400, "from_ns is after to_ns%s%s", NULL, NULL);
    if (out->route == TROVE__R_EXPORT && !out->format)
        out->format = TROVE__X_BUNDLE;
    return 0;
}

int trove__api_token_ok(const char *token, size_t token_len, const char *authorization,
                        const char *cookie, const char *cookie_name, int *bearer)
{
    const char *given = NULL;
    size_t glen = 0, cn = cookie_name ? strlen(cookie_name) : 0;
    unsigned diff;

    if (bearer)
        *bearer = 0;
    if (authorization && strncasecmp(authorization, "Bearer ", 7) == 0) {
        given = authorization + 7;
        while (*given == ' ')
            given++;
        glen = strcspn(given, " \r\n");
        if (bearer)
            *bearer = 1;
    } else if (cookie && cn) {
        for (const char *p = cookie; (p = strstr(p, cookie_name)) != NULL; p++)
            if ((p == cookie || p[-1] == ' ' || p[-1] == ';') && p[cn] == '=') {
                given = p + cn + 1;
                glen = strcspn(given, "; ");
                break;
            }
    }
    if (!given)
        return 0;
    /* Constant time in the token: every byte is looked at whatever differs first. */
    diff = (unsigned)(glen ^ token_len);
    for (size_t i = 0; i < token_len; i++)
        diff |= (unsigned)((uint8_t)token[i] ^ (uint8_t)(i < glen ? given[i] : 0));
    return diff == 0;
}

/* Is s[0..n) an IP literal: dotted IPv4, or an IPv6 address in brackets? */
static int ip_literal(const char *s, size_t n)
{
    char tmp[64];
    unsigned char buf[16];

    if (n == 0 || n >= sizeof tmp)
        return 0;
    if (s[0] == '[') {
        if (n < 3 || s[n - 1] != ']')
            return 0;
        memcpy(tmp, s + 1, n - 2);
        tmp[n - 2] = 0;
        return inet_pton(AF_INET6, tmp, buf) == 1;
    }
    memcpy(tmp, s, n);
    tmp[n] = 0;
    return inet_pton(AF_INET, tmp, buf) == 1;
}

/* Split "name[:port]" ("[v6][:port]"): the name's length, and *port (0: none). -1 when it
 * is not of that shape. */
static int split_host(const char *v, size_t n, size_t *name_len, unsigned *port)
{
    size_t k = n;

    *port = 0;
    if (n == 0)
        return -1;
    if (v[0] == '[') {
        const char *close = memchr(v, ']', n);
        if (!close)
            return -1;
        k = (size_t)(close - v) + 1;
        if (k < n && v[k] != ':')
            return -1;
    } else {
        const char *colon = memchr(v, ':', n);
        if (colon)
            k = (size_t)(colon - v);
    }
    if (k == 0)
        return -1;
    if (k < n) { /* ":port" */
        unsigned long p = 0;
        if (k + 1 == n || n - k - 1 > 5 || v[k + 1] == '0')
            return -1; /* no port, too long, or not as a browser writes it (a leading 0) */
        for (size_t i = k + 1; i < n; i++) {
            if (v[i] < '0' || v[i] > '9')
                return -1;
            p = p * 10 + (unsigned long)(v[i] - '0');
        }
        if (p == 0 || p > 65535)
            return -1;
        *port = (unsigned)p;
    }
    for (size_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c <= 0x20 || c >= 0x7f || c == '/' || c == '@' || c == '\\')
            return -1;
    }
    *name_len = k;
    return 0;
}

static int same_name(const char *a, size_t n, const char *b)
{
    return b && strlen(b) == n && strncasecmp(a, b, n) == 0;
}

static int host_name_ok(const char *v, size_t k, const struct trove__api_hosts *h)
{
    if (same_name(v, k, "localhost") || same_name(v, k, h->listen))
        return 1;
    for (size_t i = 0; i < h->nallow; i++)
        if (same_name(v, k, h->allow[i]))
            return 1;
    if (h->wildcard && (ip_literal(v, k) || (h->machine[0] && same_name(v, k, h->machine))))
        return 1;
    return 0;
}

int trove__api_host_ok(const char *value, size_t n, const struct trove__api_hosts *h)
{
    size_t k;
    unsigned port;

    if (!value || split_host(value, n, &k, &port) != 0)
        return 0;
    return host_name_ok(value, k, h);
}

int trove__api_origin_ok(const char *origin, const struct trove__api_hosts *h,
                         const char *const *allow, size_t nallow)
{
    size_t n, k;
    unsigned port;

    if (!origin)
        return 1; /* not a browser's cross-site request */
    n = strlen(origin);
    for (size_t i = 0; i < nallow; i++)
        if (allow[i] && strlen(allow[i]) == n && strncasecmp(origin, allow[i], n) == 0)
            return 1;
    if (n < 8 || strncasecmp(origin, "http://", 7) != 0)
        return 0;
    if (split_host(origin + 7, n - 7, &k, &port) != 0)
        return 0;
    if ((port ? port : 80) != h->port)
        return 0;
    return host_name_ok(origin + 7, k, h);
}

/* Can a plain HTML form send this Content-Type (its media type, without parameters)? */
static int form_type(const char *t)
{
    static const char *const forms[] = {"application/x-www-form-urlencoded",
                                        "multipart/form-data", "text/plain"};
    size_t n;

    if (!t)
        return 1;
    while (*t == ' ' || *t == '\t')
        t++;
    n = strcspn(t, "; \t");
    if (n == 0)
        return 1;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        if (strlen(forms[i]) == n && strncasecmp(t, forms[i], n) == 0)
            return 1;
    return 0;
}

int trove__api_change_ok(const struct trove__api_change *r, const struct trove__api_hosts *h,
                         const char *const *allow, size_t nallow, char *msg, size_t cap)
{
    int allowed_origin = 0;

    if (r->origin) {
        if (!trove__api_origin_ok(r->origin, h, allow, nallow)) {
            snprintf(msg, cap, "a request from another site (Origin %.100s) may not change "
                               "anything here; allow it with --allow-origin", r->origin);
            return 403;
        }
        for (size_t i = 0; i < nallow; i++)
            if (allow[i] && strcasecmp(r->origin, allow[i]) == 0)
                allowed_origin = 1;
    }
    if (r->fetch_site && !allowed_origin && strcasecmp(r->fetch_site, "same-origin") != 0 &&
        strcasecmp(r->fetch_site, "none") != 0) {
        snprintf(msg, cap, "a request from another site (Sec-Fetch-Site: %.40s) may not change "
                           "anything here", r->fetch_site);
        return 403;
    }
    if (!r->origin && r->token_required && !r->bearer && r->method != TROVE__GET) {
        snprintf(msg, cap, "a change without an Origin must carry the token in an "
                           "Authorization: Bearer header (a cookie alone is not enough)");
        return 403;
    }
    if (r->method == TROVE__POST && !r->x_trove && form_type(r->content_type)) {
        snprintf(msg, cap, "send the body with Content-Type: application/octet-stream (or an "
                           "X-Trove-Request header): a plain form's content types are refused");
        return 403;
    }
    return 0;
}
