/*
 * cmd_diff.c: `trove diff A B`, what changed between two captures (trove/diff.h,
 * docs/diff.md), and --fail-if, the gate of a CI job.
 *
 * Each side is a capture of the store (store:NAME, or NAME without --url), a trace file read
 * into a store of its own for the purpose, or a capture of the service at --url. Two
 * captures of the service are compared by the service (GET /api/diff); otherwise each side
 * is read here (a service's side from its statistics, GET /stats, so from its histograms)
 * and compared by trove_diff_json. Either way the JSON is the one the table is printed from
 * and the rules are checked against, so that they cannot drift.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "trove/capture.h"
#include "trove/diff.h"
#include "trove/store.h"

static void diff_usage(FILE *f)
{
    fprintf(f,
            "usage: trove diff A B [--by name|thread] [--a-from-ns T] [--a-to-ns T]\n"
            "                  [--b-from-ns T] [--b-to-ns T] [--min-count N] [--name GLOB]...\n"
            "                  [--fail-if EXPR]... [--alpha P] [--exact | --sketch]\n"
            "                  [--limit K] [--json] [--store DIR | --url URL [--token-file F]]\n"
            "\n"
            "What changed from capture A to capture B, per event name: count, total, p50, p90,\n"
            "p99 and max in each, the change of each (B over A, and B minus A), and whether the\n"
            "durations differ significantly (Mann-Whitney U rank test: two-sided p below --alpha,\n"
            "and a typical instance 5 %% longer or shorter: the median ratio of B's durations\n"
            "to A's over all pairs). Significant slowdowns come first (the largest growth of\n"
            "total time first),\n"
            "then names only in B, significant speedups, names only in A, and the rest.\n"
            "A and B are each store:NAME (a capture of --store), a trace file, or NAME: a\n"
            "capture of the service at --url when given, else of the store. The test uses every\n"
            "duration when a capture has at most 16,777,216 events (exact), else the summaries'\n"
            "histograms (sketch: durations within 2 %% are ties); the output says which.\n"
            "  --by B             name (default), or thread: per thread name and event name\n"
            "  --a-from-ns T, --a-to-ns T, --b-from-ns T, --b-to-ns T\n"
            "                     each side's range: events that start in [from, to)\n"
            "  --min-count N      leave out names with fewer than N events in both\n"
            "  --name GLOB        only names matching GLOB (repeatable; shell patterns)\n"
            "  --fail-if EXPR     exit 3 if a name breaks EXPR: METRIC OP CHANGE, METRIC one of\n"
            "                     count, total, p50, p90, p99, max; OP one of > >= < <=; CHANGE\n"
            "                     +N%% or -N%% (relative), or +D or -D with a unit ns, us, ms, s\n"
            "                     (absolute; a bare number for count). Only names in both count,\n"
            "                     and for a duration only a significant change. Repeatable:\n"
            "                     --fail-if 'p99 > +10%%' --fail-if 'total > +5%%'\n"
            "  --alpha P          the test's threshold (default 0.001)\n"
            "  --exact, --sketch  every duration, or the histograms, whatever the size\n"
            "  --limit K          the table's first K rows (default 30, 0: all; --json: all\n"
            "                     unless given)\n"
            "  --json             the whole comparison as JSON (docs/diff.md), with the rules'\n"
            "                     verdict (fail_if, failed) when --fail-if is given\n"
            "  --store DIR        the store (default: $TROVE_STORE if set, else ./trove-data)\n"
            REMOTE_HELP
            "Exit status: 0 no rule broken; 1 an error; 2 a usage error; 3 a --fail-if rule broken.\n");
}

/* ---- --fail-if ------------------------------------------------------------------------------ */

struct rule {
    const char *text;
    char metric[8];  /* count, total, p50, p90, p99, max */
    int op;          /* '>' '<' 'G' (>=) 'L' (<=) */
    int relative;    /* 1: value is a fraction (+10% -> 0.10) of A's; 0: an absolute change */
    double value;
};

/* A usage error in a rule: said, and 2. */
#define rule_error(...) (cli_error(__VA_ARGS__), 2)

static int rule_parse(const char *cmd, const char *text, struct rule *r)
{
    static const char *const metrics[] = {"count", "total", "p50", "p90", "p99", "max"};
    const char *p = text;
    char *end;
    size_t n = 0;
    int ok = 0;

    memset(r, 0, sizeof *r);
    r->text = text;
    while (*p == ' ')
        p++;
    while (p[n] >= 'a' && p[n] <= 'z' ? 1 : (p[n] >= '0' && p[n] <= '9'))
        n++;
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++)
        if (n == strlen(metrics[i]) && !strncmp(p, metrics[i], n))
            ok = 1;
    if (!ok)
        return rule_error(cmd, "--fail-if '%s': the metric is one of count, total, p50, p90, "
                              "p99, max", text);
    memcpy(r->metric, p, n);
    p += n;
    while (*p == ' ')
        p++;
    if (p[0] == '>' && p[1] == '=')
        r->op = 'G', p += 2;
    else if (p[0] == '<' && p[1] == '=')
        r->op = 'L', p += 2;
    else if (p[0] == '>' || p[0] == '<')
        r->op = *p++;
    else
        return rule_error(cmd, "--fail-if '%s': after the metric, one of > >= < <=", text);
    while (*p == ' ')
        p++;
    if (*p != '+' && *p != '-')
        return rule_error(cmd, "--fail-if '%s': the change has its sign: +10%% or -5%%, +2ms",
                         text);
    errno = 0;
    r->value = strtod(p, &end);
    if (end == p || errno || !isfinite(r->value))
        return rule_error(cmd, "--fail-if '%s': no number after the sign", text);
    p = end;
    if (*p == '%') {
        r->relative = 1;
        r->value /= 100;
        p++;
    } else if (!strncmp(p, "ns", 2)) {
        p += 2;
    } else if (!strncmp(p, "us", 2) || !strncmp(p, "\xc2\xb5s", 3)) {
        r->value *= 1e3;
        p += *p == 'u' ? 2 : 3;
    } else if (!strncmp(p, "ms", 2)) {
        r->value *= 1e6;
        p += 2;
    } else if (*p == 's') {
        r->value *= 1e9;
        p++;
    } else if (strcmp(r->metric, "count") != 0) {
        return rule_error(cmd, "--fail-if '%s': a duration's change is +N%% or has a unit "
                              "(ns, us, ms, s)", text);
    }
    while (*p == ' ')
        p++;
    if (*p)
        return rule_error(cmd, "--fail-if '%s': unexpected '%s' at the end", text, p);
    return 0;
}

static const char *jstr(json_t *o, const char *k, const char *dflt)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : dflt;
}

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The row's change for the rule (NAN: none to judge). */
static double rule_change(const struct rule *r, json_t *row)
{
    char key[16];
    json_t *ratio = json_object_get(row, "ratio"), *delta = json_object_get(row, "delta");

    if (!json_is_object(ratio) || !json_is_object(delta))
        return NAN;
    if (strcmp(r->metric, "count") && !json_is_true(json_object_get(row, "significant")))
        return NAN;
    if (r->relative)
        return num(ratio, r->metric) - 1;
    snprintf(key, sizeof key, strcmp(r->metric, "count") ? "%s_ns" : "%s", r->metric);
    return num(delta, key);
}

static int rule_broken(const struct rule *r, double x)
{
    if (isnan(x))
        return 0;
    switch (r->op) {
    case '>': return x > r->value;
    case '<': return x < r->value;
    case 'G': return x >= r->value;
    default: return x <= r->value;
    }
}

/* ---- the sides -------------------------------------------------------------------------------- */

struct side_args {
    const char *what;
    uint64_t from, to; /* to 0: to the end */
};

enum { S_STORE, S_FILE, S_REMOTE };

static int side_kind(const struct cli_common *c, const char **what)
{
    struct stat st;

    if (!strncmp(*what, "store:", 6)) {
        *what += 6;
        return S_STORE;
    }
    if (stat(*what, &st) == 0)
        return S_FILE;
    return c->url ? S_REMOTE : S_STORE;
}

/* A service's side: its statistics of every name (GET /stats, limit=0), as rows. */
static int side_remote(const char *cmd, const struct cli_common *c, const struct side_args *a,
                       struct trove_diff_side *side)
{
    struct trove_bytes doc = {0};
    json_error_t je;
    json_t *root = NULL, *rows;
    int rc;

    if ((rc = cli_stats_remote_all(cmd, c, a->what, a->from, a->to, &doc)) != 0)
        goto out;
    rc = 1;
    if (!(root = json_loadb((const char *)doc.ptr, doc.len, 0, &je)) ||
        !json_is_array(rows = json_object_get(root, "rows"))) {
        cli_error(cmd, "%s: the service's statistics are not the JSON expected", a->what);
        goto out;
    }
    if (trove_diff_side_init(side, a->what, (uint64_t)num(root, "from_ns"),
                             (uint64_t)num(root, "to_ns"), (uint64_t)num(root, "events"))) {
        cli_error(cmd, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i), *h = json_object_get(r, "hist"), *nm = json_object_get(r, "name");
        struct trove_diff_figures f = {(uint64_t)num(r, "count"), (uint64_t)num(r, "total_ns"),
                                       (uint64_t)num(r, "min_ns"), (uint64_t)num(r, "max_ns"),
                                       num(r, "p50_ns"), num(r, "p90_ns"), num(r, "p99_ns")};
        struct trove_summary_bucket *b = calloc(json_array_size(h) + 1, sizeof *b);
        size_t nbk = 0;
        int arc;
        if (!b) {
            cli_error(cmd, "out of memory");
            goto out;
        }
        for (size_t k = 0; k < json_array_size(h); k++) { /* [value, count]: value's bucket */
            json_t *e = json_array_get(h, k);
            double v = json_number_value(json_array_get(e, 0));
            uint32_t idx = trove_summary_bucket_of(v > 0 ? (uint64_t)llround(v) : 0);
            uint64_t cnt = (uint64_t)json_number_value(json_array_get(e, 1));
            if (nbk && b[nbk - 1].index >= idx) /* two estimates rounded into one bucket */
                b[nbk - 1].count += cnt;
            else
                b[nbk++] = (struct trove_summary_bucket){.index = idx, .count = cnt};
        }
        arc = trove_diff_side_add(side, json_string_value(nm), json_string_length(nm), NULL, &f,
                                  b, nbk);
        free(b);
        if (arc != TROVE_OK) {
            cli_error(cmd, "%s: a row of the service's statistics: %s", a->what, trove_strerror(arc));
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(root);
    trove_bytes_free(&doc);
    return rc;
}

static int side_local(const char *cmd, const char *store, const char *capture, const char *label,
                      const struct side_args *a, int by_thread, int method,
                      struct trove_diff_side *side)
{
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int rc;

    if (cli_store_open(cmd, store, TROVE_STORE_READONLY, &s))
        return 1;
    rc = trove_diff_side_read(s, capture, a->from, a->to, by_thread, method, side, &diag);
    cli_store_close(s);
    if (rc != TROVE_OK)
        return cli_error(cmd, "%s", diag.msg[0] ? diag.msg : trove_strerror(rc));
    if (label != capture) { /* a file's side is named by the file */
        char *l = strdup(label);
        if (!l)
            return cli_error(cmd, "out of memory");
        free(side->capture);
        side->capture = l;
    }
    return 0;
}

static int side_read(const char *cmd, const struct cli_common *c, struct side_args *a,
                     int by_thread, int method, struct trove_diff_side *side)
{
    const char *what = a->what;
    int kind = side_kind(c, &what), rc;
    char dir[4096];
    struct side_args b = *a;

    b.what = what;
    if (kind == S_REMOTE) {
        if (by_thread)
            return cli_error(cmd, "--by thread with a capture of the service (%s): give both "
                                  "A and B as its captures, and it compares them", what);
        return side_remote(cmd, c, &b, side);
    }
    if (kind == S_STORE)
        return side_local(cmd, cli_default_store(c->store), what, what, &b, by_thread, method, side);
    if (cli_file_store(cmd, what, &c->in, dir, sizeof dir))
        return 1;
    rc = side_local(cmd, dir, "file", what, &b, by_thread, method, side);
    cli_file_store_remove(dir);
    return rc;
}

/* One side read on a thread of its own (two captures of stores: each has its handle). */
struct side_job {
    const char *cmd;
    const struct cli_common *c;
    struct side_args *a;
    int by_thread, method, rc;
    struct trove_diff_side *side;
};

static void *side_main(void *arg)
{
    struct side_job *j = arg;
    j->rc = side_read(j->cmd, j->c, j->a, j->by_thread, j->method, j->side);
    return NULL;
}

/* Both sides: at once when both are captures of stores (the summaries of two large captures
 * take a core each), else one after the other (a file's load says its progress). */
static int sides_read(const char *cmd, const struct cli_common *c, struct side_args *sa,
                      int by_thread, int method, struct trove_diff_side *side)
{
    struct side_job j[2];
    const char *w0 = sa[0].what, *w1 = sa[1].what;
    pthread_t t;

    for (int k = 0; k < 2; k++)
        j[k] = (struct side_job){cmd, c, &sa[k], by_thread, method, 1, &side[k]};
    if (side_kind(c, &w0) == S_STORE && side_kind(c, &w1) == S_STORE &&
        pthread_create(&t, NULL, side_main, &j[1]) == 0) {
        side_main(&j[0]);
        pthread_join(t, NULL);
    } else {
        side_main(&j[0]);
        if (j[0].rc == 0)
            side_main(&j[1]);
    }
    return j[0].rc || j[1].rc;
}

/* Both at the service: it compares them (GET /api/diff). */
static int diff_remote(const char *cmd, const struct cli_common *c, const struct side_args *sa,
                       const char *by, uint64_t min_count, char **globs, size_t nglobs,
                       const char *alpha, const char *method, struct trove_bytes *doc)
{
    struct cli_remote rem;
    struct cli_request q;
    char path[8192], nb[32];
    static const char *const keys[4] = {"a_from_ns", "a_to_ns", "b_from_ns", "b_to_ns"};
    const uint64_t vals[4] = {sa[0].from, sa[0].to, sa[1].from, sa[1].to};
    int rc;

    if (nglobs > 1)
        return cli_error(cmd, "two captures of the service take one --name GLOB");
    if (cli_remote_open(cmd, c->url, c->token_file, &rem))
        return 1;
    snprintf(path, sizeof path, "/api/diff");
    cli_query_add(path, sizeof path, "a", sa[0].what);
    cli_query_add(path, sizeof path, "b", sa[1].what);
    for (int i = 0; i < 4; i++)
        if (vals[i]) {
            snprintf(nb, sizeof nb, "%" PRIu64, vals[i]);
            cli_query_add(path, sizeof path, keys[i], nb);
        }
    cli_query_add(path, sizeof path, "by", by);
    if (min_count) {
        snprintf(nb, sizeof nb, "%" PRIu64, min_count);
        cli_query_add(path, sizeof path, "min_count", nb);
    }
    if (nglobs)
        cli_query_add(path, sizeof path, "name", globs[0]);
    if (alpha)
        cli_query_add(path, sizeof path, "alpha", alpha);
    cli_query_add(path, sizeof path, "method", method);
    memset(&q, 0, sizeof q);
    q.path = path;
    q.mem = doc;
    q.mem_max = (size_t)1 << 30;
    rc = cli_remote_do(&rem, &q);
    cli_remote_close(&rem);
    return rc;
}

/* ---- the table ---------------------------------------------------------------------------------- */

static const char *dur(double ns, char buf[32])
{
    double a = fabs(ns);
    const char *sign = ns < 0 ? "-" : "";
    if (isnan(ns))
        snprintf(buf, 32, "-");
    else if (a < 1000)
        snprintf(buf, 32, "%s%.0f ns", sign, a);
    else if (a < 1e6)
        snprintf(buf, 32, "%s%.3g us", sign, a / 1e3);
    else if (a < 1e9)
        snprintf(buf, 32, "%s%.3g ms", sign, a / 1e6);
    else
        snprintf(buf, 32, "%s%.4g s", sign, a / 1e9);
    return buf;
}

static const char *pct(double ratio, char buf[32])
{
    if (isnan(ratio))
        snprintf(buf, 32, "-");
    else
        snprintf(buf, 32, "%+.1f%%", (ratio - 1) * 100);
    return buf;
}

static void print_table(json_t *root, uint64_t limit)
{
    json_t *rows = json_object_get(root, "rows"), *a = json_object_get(root, "a"),
           *b = json_object_get(root, "b");
    int by_thread = !strcmp(jstr(root, "by", ""), "thread");
    size_t n = (size_t)num(root, "nrows"), shown = json_array_size(rows);

    printf("A %s: %.0f events, B %s: %.0f events; by %s, %s rank test (significant: p < %g "
           "and a shift of %g %% or more)\n",
           json_string_value(json_object_get(a, "capture")), num(a, "events"),
           json_string_value(json_object_get(b, "capture")), num(b, "events"),
           by_thread ? "thread and name" : "name",
           json_string_value(json_object_get(root, "method")), num(root, "alpha"),
           num(root, "min_effect") * 100);
    printf("%-28s %9s %9s %9s %9s %7s %9s %9s %7s %10s %8s  %s\n", by_thread ? "thread / name" : "name",
           "count A", "count B", "p50 A", "p50 B", "p50", "p99 A", "p99 B", "p99", "total +/-",
           "p", "change");
    if (limit && shown > limit)
        shown = (size_t)limit;
    for (size_t i = 0; i < shown; i++) {
        json_t *r = json_array_get(rows, i), *ra = json_object_get(r, "a"), *rb = json_object_get(r, "b"),
               *ratio = json_object_get(r, "ratio"), *delta = json_object_get(r, "delta"),
               *test = json_object_get(r, "test");
        char label[512], bf[9][32];
        const char *th = json_string_value(json_object_get(r, "thread"));
        snprintf(label, sizeof label, "%s%s%s", th ? th : "", th ? " / " : "",
                 jstr(r, "name", "?"));
        printf("%-28.28s %9.0f %9.0f %9s %9s %7s %9s %9s %7s %10s %8.2g  %s%s\n", label,
               json_is_object(ra) ? num(ra, "count") : 0, json_is_object(rb) ? num(rb, "count") : 0,
               dur(json_is_object(ra) ? num(ra, "p50_ns") : NAN, bf[0]),
               dur(json_is_object(rb) ? num(rb, "p50_ns") : NAN, bf[1]),
               pct(json_is_object(ratio) ? num(ratio, "p50") : NAN, bf[2]),
               dur(json_is_object(ra) ? num(ra, "p99_ns") : NAN, bf[3]),
               dur(json_is_object(rb) ? num(rb, "p99_ns") : NAN, bf[4]),
               pct(json_is_object(ratio) ? num(ratio, "p99") : NAN, bf[5]),
               dur(json_is_object(delta) ? num(delta, "total_ns")
                   : json_is_object(rb)  ? num(rb, "total_ns")
                                         : -num(ra, "total_ns"), bf[6]),
               json_is_object(test) ? num(test, "p") : NAN,
               jstr(r, "change", "?"),
               json_is_true(json_object_get(r, "significant")) ? " *" : "");
    }
    printf("(%zu of %zu rows, %.0f significant%s)\n", shown, n, num(root, "significant"),
           shown < n ? "; --limit 0 lists all" : "");
}

int cmd_diff(int argc, char **argv)
{
    const char *cmd = "diff", *by = "name", *alpha_s = NULL, *method_s = "auto";
    struct cli_common c;
    struct side_args sa[2];
    struct trove_diff_side side[2];
    struct trove_diff_options o = {0};
    struct trove_bytes doc = {0};
    struct rule *rules = calloc((size_t)argc + 1, sizeof *rules);
    char **globs = calloc((size_t)argc + 1, sizeof *globs);
    size_t nrules = 0, nglobs = 0, nsides = 0;
    uint64_t limit = 30, min_count = 0;
    int limit_given = 0, method = TROVE_DIFF_AUTO, status = 1, r, broken = 0;
    json_t *root = NULL;

    memset(sa, 0, sizeof sa);
    memset(side, 0, sizeof side);
    cli_common_init(&c);
    if (!rules || !globs) {
        free(rules);
        free(globs);
        return cli_error(cmd, "out of memory");
    }
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        uint64_t *t = NULL;
        if (cli_is_help(s)) {
            diff_usage(stdout);
            status = 0;
            goto out;
        }
        if ((r = cli_common_opt(cmd, argc, argv, &i, CLI_C_JSON | CLI_C_STORE | CLI_C_REMOTE |
                                                         CLI_C_INPUT, &c)) != 0) {
            if (r == 2) {
                status = 2;
                goto out;
            }
            continue;
        }
        if (!strcmp(s, "--a-from-ns") && i + 1 < argc)
            t = &sa[0].from;
        else if (!strcmp(s, "--a-to-ns") && i + 1 < argc)
            t = &sa[0].to;
        else if (!strcmp(s, "--b-from-ns") && i + 1 < argc)
            t = &sa[1].from;
        else if (!strcmp(s, "--b-to-ns") && i + 1 < argc)
            t = &sa[1].to;
        if (t) {
            if (cli_parse_u64(argv[++i], t)) {
                cli_error(cmd, "%s: '%s' is not a time in nanoseconds", s, argv[i]);
                status = 2;
                goto out;
            }
        } else if (!strcmp(s, "--by") && i + 1 < argc) {
            by = argv[++i];
            if (strcmp(by, "name") && strcmp(by, "thread")) {
                cli_error(cmd, "--by %s: not name or thread", by);
                status = 2;
                goto out;
            }
        } else if (!strcmp(s, "--min-count") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &min_count)) {
                cli_error(cmd, "--min-count: '%s' is not a count", argv[i]);
                status = 2;
                goto out;
            }
        } else if (!strcmp(s, "--name") && i + 1 < argc) {
            globs[nglobs++] = argv[++i];
        } else if (!strcmp(s, "--fail-if") && i + 1 < argc) {
            if (rule_parse(cmd, argv[++i], &rules[nrules++])) {
                status = 2;
                goto out;
            }
        } else if (!strcmp(s, "--alpha") && i + 1 < argc) {
            char *end;
            alpha_s = argv[++i];
            o.alpha = strtod(alpha_s, &end);
            if (*end || end == alpha_s || !(o.alpha > 0 && o.alpha < 1)) {
                cli_error(cmd, "--alpha %s: not a probability between 0 and 1", alpha_s);
                status = 2;
                goto out;
            }
        } else if (!strcmp(s, "--exact") || !strcmp(s, "--sketch")) {
            int m = !strcmp(s, "--exact") ? TROVE_DIFF_EXACT : TROVE_DIFF_SKETCH;
            if (method != TROVE_DIFF_AUTO && method != m) {
                cli_error(cmd, "--exact and --sketch do not go together");
                status = 2;
                goto out;
            }
            method = m;
            method_s = s + 2;
        } else if (!strcmp(s, "--limit") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &limit)) {
                cli_error(cmd, "--limit: '%s' is not a count", argv[i]);
                status = 2;
                goto out;
            }
            limit_given = 1;
        } else if (s[0] == '-' && s[1]) {
            cli_error(cmd, "unknown option or missing value '%s'; see `trove diff --help`", s);
            status = 2;
            goto out;
        } else if (nsides < 2) {
            sa[nsides++].what = s;
        } else {
            cli_error(cmd, "unexpected argument '%s': diff takes two captures; see `trove diff --help`", s);
            status = 2;
            goto out;
        }
    }
    if (nsides < 2) {
        cli_error(cmd, "diff takes two captures, A and B; see `trove diff --help`");
        status = 2;
        goto out;
    }
    for (int k = 0; k < 2; k++)
        if (sa[k].to && sa[k].from >= sa[k].to) {
            cli_error(cmd, "--%c-from-ns %" PRIu64 " is not before --%c-to-ns %" PRIu64, 'a' + k,
                      sa[k].from, 'a' + k, sa[k].to);
            status = 2;
            goto out;
        }
    o.min_count = min_count;
    o.globs = (const char *const *)globs;
    o.nglobs = nglobs;
    /* --json: every row unless --limit; the table: the rows it prints (nrows and significant
     * count the rest), unless rules need every row */
    o.limit = c.json ? (limit_given ? (size_t)limit : 0) : nrules ? 0 : (size_t)limit;
    {
        const char *wa = sa[0].what, *wb = sa[1].what;
        int ka = side_kind(&c, &wa), kb = side_kind(&c, &wb);
        if (ka == S_REMOTE && kb == S_REMOTE) {
            sa[0].what = wa;
            sa[1].what = wb;
            if (diff_remote(cmd, &c, sa, by, min_count, globs, nglobs, alpha_s, method_s, &doc))
                goto out;
        } else {
            if (sides_read(cmd, &c, sa, !strcmp(by, "thread"), method, side))
                goto out;
            if ((r = trove_diff_json(&side[0], &side[1], &o, &doc)) != TROVE_OK) {
                cli_error(cmd, "comparing: %s", trove_strerror(r));
                goto out;
            }
        }
    }
    if (c.json && !nrules) { /* printed as it is: nothing to read back */
        printf("%.*s\n", (int)doc.len, (const char *)doc.ptr);
        if (fflush(stdout) != 0) {
            cli_error(cmd, "writing stdout: %s", strerror(errno));
            goto out;
        }
        status = 0;
        goto out;
    }
    {
        json_error_t je;
        if (!(root = json_loadb((const char *)doc.ptr, doc.len, 0, &je)) ||
            !json_is_array(json_object_get(root, "rows"))) {
            cli_error(cmd, "the comparison is not the JSON expected: %s", je.text);
            goto out;
        }
    }
    if (nrules) { /* each rule against every row in both */
        json_t *verdict = json_array(), *rows = json_object_get(root, "rows");
        for (size_t k = 0; k < nrules; k++) {
            json_t *hit = json_array();
            for (size_t i = 0; i < json_array_size(rows); i++) {
                json_t *row = json_array_get(rows, i);
                double x = rule_change(&rules[k], row);
                const char *th = json_string_value(json_object_get(row, "thread"));
                char bf[3][32];
                if (!rule_broken(&rules[k], x))
                    continue;
                json_array_append_new(hit, json_pack("{s:O,s:f}", "name", json_object_get(row, "name"),
                                                     "change", x));
                if (th)
                    json_object_set_new(json_array_get(hit, json_array_size(hit) - 1), "thread",
                                        json_string(th));
                if (!strcmp(rules[k].metric, "count"))
                    snprintf(bf[0], 32, "%.0f -> %.0f", num(json_object_get(row, "a"), "count"),
                             num(json_object_get(row, "b"), "count"));
                else {
                    char key[16];
                    snprintf(key, sizeof key, "%s_ns", rules[k].metric);
                    snprintf(bf[0], 32, "%s -> ", dur(num(json_object_get(row, "a"), key), bf[1]));
                    snprintf(bf[0] + strlen(bf[0]), 32 - strlen(bf[0]), "%s",
                             dur(num(json_object_get(row, "b"), key), bf[2]));
                }
                fprintf(stderr, "trove diff: --fail-if '%s': %s%s%s %s %s (%s%.4g%s)\n", rules[k].text,
                        th ? th : "", th ? " / " : "", json_string_value(json_object_get(row, "name")),
                        rules[k].metric, bf[0], rules[k].relative ? (x >= 0 ? "+" : "") : "",
                        rules[k].relative ? x * 100 : x, rules[k].relative ? "%" : "");
                broken = 1;
            }
            json_array_append_new(verdict, json_pack("{s:s,s:o}", "rule", rules[k].text, "rows", hit));
        }
        json_object_set_new(root, "fail_if", verdict);
        json_object_set_new(root, "failed", json_boolean(broken));
    }
    if (c.json) {
        char *s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        if (!s) {
            cli_error(cmd, "out of memory");
            goto out;
        }
        printf("%s\n", s);
        free(s);
    } else {
        print_table(root, limit);
    }
    if (fflush(stdout) != 0) {
        cli_error(cmd, "writing stdout: %s", strerror(errno));
        goto out;
    }
    status = broken ? 3 : 0;
out:
    json_decref(root);
    trove_bytes_free(&doc);
    trove_diff_side_free(&side[0]);
    trove_diff_side_free(&side[1]);
    free(rules);
    free(globs);
    return status;
}
