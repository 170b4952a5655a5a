/*
 * cmd_stats.c: `trove stats`, per-name statistics of a capture (of a store, of a service with
 * --url, or of a trace file read for the purpose), and `trove index`, which gives captures
 * their summaries (trove/summary.h).
 *
 * Both local and remote answers become the same JSON (docs/serve.md, "Statistics"), which
 * --json prints as it is and the table is printed from, so that the two cannot drift.
 */
#define _GNU_SOURCE /* nftw, mkdtemp, open_memstream */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "trove/capture.h"
#include "trove/store.h"
#include "trove/summary.h"

static void stats_usage(FILE *f)
{
    fprintf(f,
            "usage: trove stats NAME|FILE [--from-ns A] [--to-ns B] [--clip] [--thread T]... [--name N]\n"
            "                   [--sort total|count|p99|self|max] [--limit K] [--json]\n"
            "                   [--store DIR | --url URL [--token-file F]]\n"
            "\n"
            "Per event name, over the events that start in [A, B): count, total, self time\n"
            "(less the zones one depth below, within their segment), min, p50, p90, p99 and\n"
            "max durations — the table to paste into a bug report. NAME is a capture of the\n"
            "store (or of the service at --url); FILE, any trace trove reads, is read for the\n"
            "purpose. Counts, totals, min and max are exact; the quantiles are within 1 %%. A\n"
            "capture's summaries answer for whole runs of segments, so a billion events take\n"
            "about as long as a million; only the segments at the range's ends are read.\n"
            "  --from-ns A, --to-ns B   the range in nanoseconds (default: the whole capture)\n"
            "  --clip             every event that overlaps [A, B), its duration cut to it\n"
            "                     (exactly; a cut zone's self time is at most what is left)\n"
            "  --thread T         only track T: PID:TID, a TID, or a thread's name (repeatable)\n"
            "  --name N           only events named N\n"
            "  --sort S           total (default), count, p99, self or max, largest first\n"
            "  --limit K          the first K names (default 30, 0: all)\n"
            "  --json             the service's JSON: capture, from_ns, to_ns, events, names,\n"
            "                     sort, rows (name, count, total_ns, self_ns, min_ns, p50_ns,\n"
            "                     p90_ns, p99_ns, max_ns, hist), read\n"
            "  --store DIR        the store (default: $TROVE_STORE if set, else ./trove-data)\n"
            REMOTE_HELP);
}

static void index_usage(FILE *f)
{
    fprintf(f,
            "usage: trove index NAME... | --all [--force] [--json] [-q] [--store DIR]\n"
            "\n"
            "Give captures their summaries (what views and statistics are answered from,\n"
            "docs/formats/summary.md): each segment is read once, every summary node built and\n"
            "committed. Captures written by this build have them already; a capture written\n"
            "before them, or whose summaries are damaged or missing, gets them (the same bytes:\n"
            "writing them again heals a damaged one). The service builds them too, the first\n"
            "time a capture without them is viewed.\n"
            "  --all              every capture of the store\n"
            "  --force            build them again even when they are all there\n"
            "  --json             one JSON object a capture, a line: name, segments, summaries,\n"
            "                     already, damaged, built, summary_bytes, new_objects\n"
            "  -q, --quiet        nothing on stderr but errors\n"
            "  --store DIR        the store (default: $TROVE_STORE if set, else ./trove-data)\n");
}

/* A duration for people: 3 significant digits and a unit. */
static const char *dur(double ns, char buf[32])
{
    if (ns < 1000)
        snprintf(buf, 32, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, 32, "%.3g us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, 32, "%.3g ms", ns / 1e6);
    else
        snprintf(buf, 32, "%.4g s", ns / 1e9);
    return buf;
}

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* The table, from the statistics' JSON. */
static int print_table(const char *cmd, const char *doc)
{
    json_error_t je;
    json_t *root = json_loads(doc, 0, &je), *rows;
    size_t i;
    double from, to;

    if (!root || !json_is_array(rows = json_object_get(root, "rows"))) {
        json_decref(root);
        return cli_error(cmd, "the statistics are not the JSON expected: %s", je.text);
    }
    from = num(root, "from_ns");
    to = num(root, "to_ns");
    printf("capture %s: %.0f events of %.0f names in [%.0f, %.0f) ns, %.6f s; by %s\n",
           json_string_value(json_object_get(root, "capture")), num(root, "events"),
           num(root, "names"), from, to, (to - from) / 1e9,
           json_string_value(json_object_get(root, "sort")));
    printf("%-32s %10s %10s %10s %10s %10s %10s %10s %10s\n", "name", "count", "total", "self",
           "min", "p50", "p90", "p99", "max");
    for (i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i);
        const char *name = json_string_value(json_object_get(r, "name"));
        char b[8][32];
        printf("%-32.32s %10.0f %10s %10s %10s %10s %10s %10s %10s\n", name && *name ? name : "?",
               num(r, "count"), dur(num(r, "total_ns"), b[0]), dur(num(r, "self_ns"), b[1]),
               dur(num(r, "min_ns"), b[2]), dur(num(r, "p50_ns"), b[3]),
               dur(num(r, "p90_ns"), b[4]), dur(num(r, "p99_ns"), b[5]),
               dur(num(r, "max_ns"), b[6]));
    }
    if (i < (size_t)num(root, "names"))
        printf("(%zu of %.0f names; --limit 0 lists all)\n", i, num(root, "names"));
    json_decref(root);
    return 0;
}

/* --thread values as tracks (sorted), from the capture's tracks JSON: PID:TID as it is, a
 * number every track of that tid, anything else every track of that name. */
static int resolve_threads(const char *cmd, const char *tracks_json, char **thr, size_t nthr,
                           uint64_t **out, size_t *n)
{
    json_error_t je;
    json_t *root = json_loads(tracks_json, 0, &je), *tr;
    uint64_t *v = NULL;
    size_t m = 0;
    int rc = 1;

    *out = NULL;
    *n = 0;
    if (!root || !json_is_array(tr = json_object_get(root, "tracks"))) {
        cli_error(cmd, "the capture's tracks are not the JSON expected");
        goto out;
    }
    if (!(v = calloc(json_array_size(tr) * nthr + nthr + 1, sizeof *v))) {
        cli_error(cmd, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < nthr; k++) {
        unsigned long long pid, tid;
        char extra;
        size_t before = m;
        if (sscanf(thr[k], "%llu:%llu%c", &pid, &tid, &extra) == 2 && pid <= UINT32_MAX &&
            tid <= UINT32_MAX) {
            v[m++] = (uint64_t)pid << 32 | tid;
            continue;
        }
        for (size_t i = 0; i < json_array_size(tr); i++) {
            json_t *t = json_array_get(tr, i);
            const char *name = json_string_value(json_object_get(t, "name"));
            char *end;
            unsigned long long want = strtoull(thr[k], &end, 10);
            uint64_t p = (uint64_t)num(t, "pid"), d = (uint64_t)num(t, "tid");
            if ((*end == 0 && end != thr[k] && d == want) || (name && !strcmp(name, thr[k])))
                v[m++] = p << 32 | d;
        }
        if (m == before) {
            cli_error(cmd, "--thread %s: no track of the capture is that PID:TID, tid or name",
                      thr[k]);
            goto out;
        }
    }
    for (size_t i = 1; i < m; i++) /* sorted, distinct */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint64_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    *n = 0;
    for (size_t i = 0; i < m; i++)
        if (*n == 0 || v[*n - 1] != v[i])
            v[(*n)++] = v[i];
    *out = v;
    v = NULL;
    rc = 0;
out:
    free(v);
    json_decref(root);
    return rc;
}

void cli_query_add(char *q, size_t cap, const char *key, const char *s)
{
    size_t n = strlen(q);
    n += (size_t)snprintf(q + n, n < cap ? cap - n : 0, "%s%s=", strchr(q, '?') ? "&" : "?", key);
    for (; *s && n + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~' || c == ':' || c == ',')
            q[n++] = (char)c;
        else
            n += (size_t)snprintf(q + n, cap - n, "%%%02X", c);
    }
    q[n < cap ? n : cap - 1] = 0;
}

struct stats_args {
    const char *what, *name, *sort;
    uint64_t from, to, limit;
    char **thr;
    size_t nthr;
    int json;
    int clip;
};

static int stats_remote(const char *cmd, const struct cli_common *c, const struct stats_args *a,
                        struct trove_bytes *doc)
{
    struct cli_remote r;
    struct cli_request q;
    struct trove_bytes tj = {0};
    char path[8192], num_buf[32];
    int rc;

    if (cli_remote_open(cmd, c->url, c->token_file, &r))
        return 1;
    snprintf(path, sizeof path, "/api/captures/%s/stats", a->what);
    if (a->from) {
        snprintf(num_buf, sizeof num_buf, "%" PRIu64, a->from);
        cli_query_add(path, sizeof path, "from_ns", num_buf);
    }
    if (a->to != UINT64_MAX) {
        snprintf(num_buf, sizeof num_buf, "%" PRIu64, a->to);
        cli_query_add(path, sizeof path, "to_ns", num_buf);
    }
    if (a->name)
        cli_query_add(path, sizeof path, "name", a->name);
    if (a->clip)
        cli_query_add(path, sizeof path, "clip", "1");
    cli_query_add(path, sizeof path, "sort", a->sort);
    snprintf(num_buf, sizeof num_buf, "%" PRIu64, a->limit);
    cli_query_add(path, sizeof path, "limit", num_buf);
    if (a->nthr) {
        uint64_t *t = NULL;
        size_t n = 0;
        char list[8192] = "";
        char tp[512];
        memset(&q, 0, sizeof q);
        snprintf(tp, sizeof tp, "/api/captures/%s/tracks", a->what);
        q.path = tp;
        q.mem = &tj;
        q.mem_max = (size_t)256 << 20;
        if ((rc = cli_remote_do(&r, &q)) != 0 || trove_bytes_append(&tj, "", 1) != TROVE_OK ||
            resolve_threads(cmd, (const char *)tj.ptr, a->thr, a->nthr, &t, &n)) {
            trove_bytes_free(&tj);
            cli_remote_close(&r);
            return rc ? rc : 1;
        }
        for (size_t i = 0; i < n; i++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%" PRIu32 ":%" PRIu32, i ? "," : "",
                     (uint32_t)(t[i] >> 32), (uint32_t)t[i]);
        }
        free(t);
        trove_bytes_free(&tj);
        cli_query_add(path, sizeof path, "tracks", list);
    }
    memset(&q, 0, sizeof q);
    q.path = path;
    q.mem = doc;
    q.mem_max = (size_t)256 << 20;
    rc = cli_remote_do(&r, &q);
    cli_remote_close(&r);
    return rc;
}

int cli_stats_remote_all(const char *cmd, const struct cli_common *c, const char *capture,
                         uint64_t from, uint64_t to, struct trove_bytes *doc)
{
    struct stats_args a;

    memset(&a, 0, sizeof a);
    a.what = capture;
    a.from = from;
    a.to = to ? to : UINT64_MAX;
    a.sort = "total";
    a.limit = 0;
    return stats_remote(cmd, c, &a, doc);
}

static int stats_local(const char *cmd, const char *store, const struct stats_args *a,
                       struct trove_bytes *doc)
{
    struct trove_store *s = NULL;
    struct trove_stats_options o = {0};
    struct trove_stats_result res;
    struct trove_diag diag = {0};
    uint64_t *tracks = NULL;
    size_t n = 0;
    int status = 1, rc;

    if (cli_store_open(cmd, store, TROVE_STORE_READONLY, &s))
        return 1;
    if (a->nthr) {
        struct trove_bytes tj = {0};
        rc = trove_capture_tracks_json(s, a->what, &tj, NULL, &diag);
        if (rc != TROVE_OK || trove_bytes_append(&tj, "", 1) != TROVE_OK) {
            cli_error(cmd, "%s", diag.msg[0] ? diag.msg : trove_strerror(rc));
            trove_bytes_free(&tj);
            goto out;
        }
        rc = resolve_threads(cmd, (const char *)tj.ptr, a->thr, a->nthr, &tracks, &n);
        trove_bytes_free(&tj);
        if (rc)
            goto out;
    }
    o.from_ns = a->from;
    o.to_ns = a->to == UINT64_MAX ? 0 : a->to;
    o.tracks = tracks;
    o.ntracks = n;
    o.name = a->name;
    o.sort = trove_stats_sort_parse(a->sort);
    o.limit = (size_t)a->limit;
    o.clip = a->clip;
    if ((rc = trove_capture_stats(s, a->what, &o, &res, &diag)) != TROVE_OK) {
        cli_error(cmd, "%s", diag.msg[0] ? diag.msg : trove_strerror(rc));
        goto out;
    }
    rc = trove_stats_result_json(&res, a->what, o.sort, doc);
    trove_stats_result_free(&res);
    if (rc != TROVE_OK) {
        cli_error(cmd, "writing the statistics: %s", trove_strerror(rc));
        goto out;
    }
    status = 0;
out:
    free(tracks);
    cli_store_close(s);
    return status;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(path);
}

int cli_file_store(const char *cmd, const char *path, const struct cli_load_options *in,
                   char *dir, size_t cap)
{
    const char *td = getenv("TMPDIR");
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int status = 1, rc;

    snprintf(dir, cap, "%s/trove-file-XXXXXX", td && *td ? td : "/tmp");
    if (!mkdtemp(dir)) {
        cli_error(cmd, "a temporary store in %s: %s", td && *td ? td : "/tmp", strerror(errno));
        dir[0] = 0;
        return 1;
    }
    if (trove_names_new(&names) != TROVE_OK) {
        cli_error(cmd, "out of memory");
        goto out;
    }
    if (cli_load(cmd, path, in, &ev, names))
        goto out;
    if ((rc = trove_store_open(dir, TROVE_STORE_CREATE, &s, &diag)) != TROVE_OK ||
        (rc = trove_capture_write(s, "file", ev.ev, ev.len, names, NULL, NULL, &diag)) != TROVE_OK) {
        cli_error(cmd, "%s: %s", path, diag.msg[0] ? diag.msg : trove_strerror(rc));
        goto out;
    }
    status = 0;
out:
    trove_store_close(s);
    trove_names_free(names);
    trove_events_free(&ev);
    if (status)
        cli_file_store_remove(dir);
    return status;
}

void cli_file_store_remove(char *dir)
{
    if (dir[0])
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    dir[0] = 0;
}

/* A trace file, read into a store of its own for the purpose. */
static int stats_file(const char *cmd, const struct cli_common *c, const struct stats_args *a,
                      struct trove_bytes *doc)
{
    char dir[4096];
    struct stats_args b = *a;
    int status = 1;

    if (cli_file_store(cmd, a->what, &c->in, dir, sizeof dir))
        return 1;
    b.what = "file";
    status = stats_local(cmd, dir, &b, doc);
    if (status == 0) { /* the document names the file, not the store made for it */
        static const char from[] = "{\"capture\":\"file\"";
        if (doc->len >= sizeof from - 1 && !memcmp(doc->ptr, from, sizeof from - 1)) {
            struct trove_bytes d2 = {0};
            char head[64];
            FILE *m;
            char *js = NULL;
            size_t jl = 0;
            if ((m = open_memstream(&js, &jl)) != NULL) {
                cli_json_string(m, a->what, strlen(a->what));
                fclose(m);
                snprintf(head, sizeof head, "{\"capture\":");
                if (trove_bytes_append(&d2, head, strlen(head)) == TROVE_OK &&
                    trove_bytes_append(&d2, js, jl) == TROVE_OK &&
                    trove_bytes_append(&d2, doc->ptr + sizeof from - 1,
                                       doc->len - (sizeof from - 1)) == TROVE_OK) {
                    trove_bytes_free(doc);
                    *doc = d2;
                } else {
                    trove_bytes_free(&d2);
                }
                free(js);
            }
        }
    }
    cli_file_store_remove(dir);
    return status;
}

int cmd_stats(int argc, char **argv)
{
    const char *cmd = "stats";
    struct cli_common c;
    struct stats_args a;
    struct trove_bytes doc = {0};
    struct stat st;
    int status = 1, r;

    cli_common_init(&c);
    memset(&a, 0, sizeof a);
    a.to = UINT64_MAX;
    a.limit = 30;
    a.sort = "total";
    if (!(a.thr = calloc((size_t)argc + 1, sizeof *a.thr)))
        return cli_error(cmd, "out of memory");
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (cli_is_help(s)) {
            stats_usage(stdout);
            free(a.thr);
            return 0;
        }
        if ((r = cli_common_opt(cmd, argc, argv, &i, CLI_C_JSON | CLI_C_STORE | CLI_C_REMOTE |
                                                         CLI_C_INPUT, &c)) != 0) {
            if (r == 2) {
                free(a.thr);
                return 2;
            }
            continue;
        }
        if (!strcmp(s, "--from-ns") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &a.from))
                goto bad_value;
        } else if (!strcmp(s, "--to-ns") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &a.to))
                goto bad_value;
        } else if (!strcmp(s, "--clip")) {
            a.clip = 1;
        } else if (!strcmp(s, "--thread") && i + 1 < argc) {
            a.thr[a.nthr++] = argv[++i];
        } else if (!strcmp(s, "--name") && i + 1 < argc) {
            a.name = argv[++i];
        } else if (!strcmp(s, "--sort") && i + 1 < argc) {
            a.sort = argv[++i];
            if (trove_stats_sort_parse(a.sort) < 0) {
                cli_error(cmd, "--sort %s: not total, count, p99, self or max", a.sort);
                free(a.thr);
                return 2;
            }
        } else if (!strcmp(s, "--limit") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &a.limit) || a.limit > 100000)
                goto bad_value;
        } else if (s[0] == '-' && s[1]) {
            cli_error(cmd, "unknown option or missing value '%s'; see `trove stats --help`", s);
            free(a.thr);
            return 2;
        } else if (!a.what) {
            a.what = s;
        } else {
            cli_error(cmd, "unexpected argument '%s'; see `trove stats --help`", s);
            free(a.thr);
            return 2;
        }
    }
    if (!a.what) {
        cli_error(cmd, "no capture NAME or FILE; see `trove stats --help`");
        free(a.thr);
        return 2;
    }
    if (a.from >= a.to) {
        cli_error(cmd, "--from-ns %" PRIu64 " is not before --to-ns %" PRIu64, a.from, a.to);
        free(a.thr);
        return 2;
    }
    if (c.url)
        status = stats_remote(cmd, &c, &a, &doc);
    else if (stat(a.what, &st) == 0 && !(c.given & CLI_C_STORE))
        status = stats_file(cmd, &c, &a, &doc);
    else
        status = stats_local(cmd, cli_default_store(c.store), &a, &doc);
    if (status == 0) {
        if (c.json)
            printf("%.*s\n", (int)doc.len, (const char *)doc.ptr);
        else if (trove_bytes_append(&doc, "", 1) != TROVE_OK || print_table(cmd, (const char *)doc.ptr))
            status = 1;
        if (fflush(stdout) != 0)
            status = cli_error(cmd, "writing stdout: %s", strerror(errno));
    }
    trove_bytes_free(&doc);
    free(a.thr);
    return status;
bad_value: /* argv[i - 1] is the option, argv[i] its value */
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i - 1], "--from-ns") || !strcmp(argv[i - 1], "--to-ns") ||
            !strcmp(argv[i - 1], "--limit")) {
            uint64_t v;
            if (cli_parse_u64(argv[i], &v) || (!strcmp(argv[i - 1], "--limit") && v > 100000)) {
                cli_error(cmd, "%s: '%s' is not %s", argv[i - 1], argv[i],
                          strcmp(argv[i - 1], "--limit") ? "a time in nanoseconds"
                                                         : "a count from 0 to 100000");
                break;
            }
        }
    free(a.thr);
    return 2;
}

/* ---- trove index ---------------------------------------------------------------------- */

static void index_progress(void *ctx, uint64_t done, uint64_t total)
{
    cli_progress_update(ctx, done);
    (void)total;
}

static int index_one(const char *cmd, struct trove_store *s, const char *name, int force,
                     int json, int quiet)
{
    struct trove_capture_index_options o = {0};
    struct trove_capture_index_result r;
    struct trove_diag diag = {0};
    struct trove_capture_info info;
    struct cli_progress p;
    int rc;

    if ((rc = trove_capture_info(s, name, &info, &diag)) != TROVE_OK)
        return cli_error(cmd, "%s", diag.msg[0] ? diag.msg : trove_strerror(rc));
    memset(&p, 0, sizeof p);
    if (!quiet && !json)
        cli_progress_begin(&p, name, info.segments);
    o.force = force;
    o.progress = index_progress;
    o.progress_ctx = &p;
    rc = trove_capture_index(s, name, &o, &r, &diag);
    if (!quiet && !json)
        cli_progress_end(&p);
    if (rc != TROVE_OK)
        return cli_error(cmd, "%s", diag.msg[0] ? diag.msg : trove_strerror(rc));
    if (json)
        printf("{\"name\":\"%s\",\"segments\":%" PRIu64 ",\"summaries\":%" PRIu64
               ",\"already\":%s,\"damaged\":%" PRIu64 ",\"built\":%" PRIu64
               ",\"summary_bytes\":%" PRIu64 ",\"new_objects\":%" PRIu64 "}\n",
               name, r.segments, r.summaries, r.already ? "true" : "false", r.damaged, r.built,
               r.summary_bytes, r.new_objects);
    else if (!quiet && r.already)
        fprintf(stderr, "trove index: %s: its %" PRIu64 " summaries are all there\n", name,
                r.summaries);
    else if (!quiet)
        fprintf(stderr,
                "trove index: %s: %" PRIu64 " summaries built from %" PRIu64 " segments, %" PRIu64
                " bytes (%" PRIu64 " new objects)%s\n",
                name, r.built, r.segments, r.summary_bytes, r.new_objects,
                r.damaged ? "; the old ones were damaged or missing" : "");
    return 0;
}

int cmd_index(int argc, char **argv)
{
    const char *cmd = "index", *store = NULL;
    char **names = calloc((size_t)argc + 1, sizeof *names);
    struct trove_store *s = NULL;
    size_t n = 0;
    int all = 0, force = 0, json = 0, quiet = 0, status = 0;

    if (!names)
        return cli_error(cmd, "out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            index_usage(stdout);
            free(names);
            return 0;
        }
        if (!strcmp(a, "--store") && i + 1 < argc)
            store = argv[++i];
        else if (!strncmp(a, "--store=", 8))
            store = a + 8;
        else if (!strcmp(a, "--all"))
            all = 1;
        else if (!strcmp(a, "--force"))
            force = 1;
        else if (!strcmp(a, "--json"))
            json = 1;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
            quiet = 1;
        else if (a[0] == '-' && a[1]) {
            cli_error(cmd, "unknown option or missing value '%s'; see `trove index --help`", a);
            free(names);
            return 2;
        } else
            names[n++] = argv[i];
    }
    if ((n == 0) == !all) {
        cli_error(cmd, n ? "NAME and --all do not go together; see `trove index --help`"
                         : "no capture NAME (or --all); see `trove index --help`");
        free(names);
        return 2;
    }
    if (cli_store_open(cmd, cli_default_store(store), 0, &s)) {
        free(names);
        return 1;
    }
    if (all) {
        struct trove_capture_entry *e = NULL;
        size_t ne = 0;
        if (trove_capture_list(s, &e, &ne) != TROVE_OK) {
            status = cli_error(cmd, "listing the captures failed");
        } else {
            for (size_t i = 0; i < ne; i++)
                status |= index_one(cmd, s, e[i].name, force, json, quiet);
            free(e);
        }
    } else {
        for (size_t i = 0; i < n; i++)
            status |= index_one(cmd, s, names[i], force, json, quiet);
    }
    cli_store_close(s);
    free(names);
    return status;
}
