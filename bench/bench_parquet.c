/*
 * bench_parquet.c: `trove bench parquet` — the seed's Parquet table for one set of events:
 * the events table written by trove as plain (no dictionary, no codec), dictionary,
 * delta + dictionary, and delta + dictionary through zstd and through gzip: file size,
 * write seconds and read seconds; and in the same run DuckDB writing the same events with
 * its defaults and uncompressed, and reading them back (tools/duckdb/duckdb_tool.mjs, run
 * with node).
 *
 * Method. Each trove row encodes the events table (trove_tables_write: the column arrays
 * built from the events, the pages, the footer) into memory, and reads it back
 * (trove_tables_read: footer, pages, every value, the events rebuilt into an array kept
 * from round to round) — write and read timed separately, medians of R rounds after a warm-up, rows interleaved within a round.
 * Every read is compared with the input events; a mismatch fails the run. The DuckDB rows
 * load trove's delta + dictionary file into an in-memory table (untimed), then time
 * `COPY … TO` a file (default codec, then uncompressed) and a full read of each file
 * back, medians of R runs; their write includes the file system, as trove's does not, so
 * the comparison favours trove by a page cache write (a few ms), which the table notes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "trove/event.h"
#include "trove/parquet.h"
#include "trove/tables.h"

#define CMD "bench parquet"
#define DEFAULT_ROUNDS 5u

enum { R_PLAIN, R_DICT, R_DELTA_DICT, R_ZSTD, R_GZIP, R_TROVE, R_DUCK_DEFAULT = R_TROVE,
       R_DUCK_NONE, R_COUNT };

static const struct row_def {
    const char *key, *what;
    int mode, codec;
} rows[R_TROVE] = {
    {"plain", "PLAIN, no dictionary, no codec", TROVE_TABLES_PLAIN, TROVE_PQ_CODEC_NONE},
    {"dict", "RLE_DICTIONARY on every column", TROVE_TABLES_DICT, TROVE_PQ_CODEC_NONE},
    {"delta_dict", "DELTA_BINARY_PACKED ns columns + RLE_DICTIONARY", TROVE_TABLES_DELTA_DICT,
     TROVE_PQ_CODEC_NONE},
    {"delta_dict_zstd", "delta_dict through zstd", TROVE_TABLES_DELTA_DICT, TROVE_PQ_CODEC_ZSTD},
    {"delta_dict_gzip", "delta_dict through gzip", TROVE_TABLES_DELTA_DICT, TROVE_PQ_CODEC_GZIP},
};

struct result {
    int have;
    uint64_t bytes;
    double write_s, read_s;
};

/* One write and one read of row r; the read compared with the events. The file and the
 * events read back go into the caller's buffers, reused from round to round as a consumer
 * reading file after file would. */
static int run_row(int r, const struct trove_events *ev, const struct trove_names *names,
                   struct trove_bytes *file, struct trove_events *back, double *w_s, double *r_s)
{
    struct trove_tables_options o;
    struct trove_diag diag = {0};
    double t0, t1, t2;
    int rc;

    trove_tables_defaults(&o);
    o.mode = rows[r].mode;
    o.codec = rows[r].codec;
    file->len = 0;
    t0 = bench_now();
    rc = trove_tables_write(TROVE_TABLE_EVENTS, ev, names, &o, file, NULL);
    t1 = bench_now();
    if (rc != TROVE_OK)
        return cli_error(CMD, "%s: writing the events table: %s", rows[r].key, trove_strerror(rc));
    back->len = 0;
    rc = trove_tables_read(TROVE_TABLE_EVENTS, file->ptr, file->len, back, NULL, &diag);
    t2 = bench_now();
    if (rc != TROVE_OK)
        return cli_error(CMD, "%s: reading the events table back: %s", rows[r].key,
                         cli_diag_msg(&diag, rc));
    if (back->len != ev->len || memcmp(back->ev, ev->ev, ev->len * sizeof *ev->ev) != 0)
        return cli_error(CMD, "%s: the events read back differ from those written", rows[r].key);
    *w_s = t1 - t0;
    *r_s = t2 - t1;
    return 0;
}

/* The DuckDB rows' keys, in the order of R_DUCK_DEFAULT and R_DUCK_NONE. */
static const char *const duck_keys[2] = {"duckdb_default", "duckdb_uncompressed"};

/* The DuckDB tool: --duckdb, $TROVE_DUCKDB_TOOL, or the source tree's. */
static const char *duckdb_tool(const char *opt)
{
    const char *env = getenv("TROVE_DUCKDB_TOOL");
    if (opt)
        return opt;
    if (env && *env)
        return env;
    return TROVE_SOURCE_DIR "/tools/duckdb/duckdb_tool.mjs";
}

/* Run `node TOOL bench FILE --repeat R`, parse its JSON into res[R_DUCK_*]. */
static int run_duckdb(const char *tool, const char *file, unsigned rounds, struct result *res,
                      char *version, size_t vlen)
{
    char cmd[8192];
    struct trove_bytes out = {0};
    json_t *root = NULL;
    json_error_t jerr;
    FILE *p;
    int status, rc = 1;

    if (access(tool, R_OK) != 0)
        return cli_error(CMD, "DuckDB tool %s: %s (run `make deps-npm`, or pass --no-duckdb)",
                         tool, strerror(errno));
    snprintf(cmd, sizeof cmd, "node '%s' bench '%s' --repeat %u", tool, file, rounds);
    if (!(p = popen(cmd, "r")))
        return cli_error(CMD, "cannot run node: %s", strerror(errno));
    for (;;) {
        char buf[4096];
        size_t n = fread(buf, 1, sizeof buf, p);
        if (n == 0)
            break;
        if (trove_bytes_append(&out, buf, n) != TROVE_OK || out.len > (1u << 20)) {
            pclose(p);
            cli_error(CMD, "DuckDB tool: output too large");
            goto out;
        }
    }
    status = pclose(p);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        cli_error(CMD, "DuckDB tool failed (exit %d); is node installed (`make deps-npm`)?",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        goto out;
    }
    if (!(root = json_loadb((const char *)out.ptr, out.len, 0, &jerr))) {
        cli_error(CMD, "DuckDB tool printed no JSON: %s", jerr.text);
        goto out;
    }
    for (int k = 0; k < 2; k++) {
        json_t *o = json_object_get(root, duck_keys[k]);
        json_t *b = json_object_get(o, "bytes"), *w = json_object_get(o, "write_s"),
               *r = json_object_get(o, "read_s");
        if (!json_is_integer(b) || !json_is_number(w) || !json_is_number(r)) {
            cli_error(CMD, "DuckDB tool: %s lacks bytes, write_s or read_s", duck_keys[k]);
            goto out;
        }
        res[R_DUCK_DEFAULT + k].have = 1;
        res[R_DUCK_DEFAULT + k].bytes = (uint64_t)json_integer_value(b);
        res[R_DUCK_DEFAULT + k].write_s = json_number_value(w);
        res[R_DUCK_DEFAULT + k].read_s = json_number_value(r);
    }
    snprintf(version, vlen, "%s",
             json_is_string(json_object_get(root, "duckdb_version"))
                 ? json_string_value(json_object_get(root, "duckdb_version"))
                 : "?");
    rc = 0;
out:
    json_decref(root);
    trove_bytes_free(&out);
    return rc;
}

static void parquet_usage(FILE *f)
{
    fprintf(f,
            "usage: trove bench parquet [--input FILE [--input-format chrome-json|raw]]\n"
            "                           [--events N] [--common] [--seed S] [--rounds R]\n"
            "                           [--duckdb TOOL | --no-duckdb]\n"
            "                           [--json]\n"
            "\n"
            "The events table as Parquet, written and read by trove — plain, dictionary,\n"
            "delta + dictionary, and that through zstd and gzip — and by DuckDB for the same\n"
            "events (its defaults, and uncompressed): file bytes, write and read seconds,\n"
            "medians of R rounds after a warm-up. Every trove read is compared with the input.\n"
            "  --input FILE        events from a Chrome JSON trace or a wire stream; without it,\n"
            "                      `trove gen` data of 1,034,313 events (docs/gen.md)\n"
            "  --input-format F    auto (default), chrome-json, or raw/wire\n"
            "  --events N          gen: events to generate; --input: the first N\n"
            "  --seed S            gen: the seed (default 1)\n"
            "  --common            only the content every trace tool keeps alike (as `trove\n"
            "                      bench wire --common`)\n"
            "  --rounds R          timed rounds, 1..100 (default %u)\n"
            "  --duckdb TOOL       the DuckDB tool (default $TROVE_DUCKDB_TOOL, else\n"
            "                      %s/tools/duckdb/duckdb_tool.mjs); needs node and\n"
            "                      `make deps-npm`\n"
            "  --no-duckdb         skip the DuckDB rows (--json prints them as null)\n"
            "  --json              one JSON object on stdout instead of the table\n",
            DEFAULT_ROUNDS, TROVE_SOURCE_DIR);
}

static void print_json(size_t n, const struct result *res)
{
    printf("{\"events\":%zu,\"rows\":{", n);
    for (int r = 0; r < R_COUNT; r++) {
        const char *key = r < R_TROVE ? rows[r].key : duck_keys[r - R_TROVE];
        if (!res[r].have)
            printf("%s\"%s\":null", r ? "," : "", key);
        else
            printf("%s\"%s\":{\"bytes\":%" PRIu64 ",\"write_s\":%.6f,\"read_s\":%.6f}",
                   r ? "," : "", key, res[r].bytes, res[r].write_s, res[r].read_s);
    }
    printf("}}\n");
}

static void print_table(size_t n, const char *source, unsigned rounds, const struct result *res,
                        const char *duck_version)
{
    static const char *const duck_what[2] = {"DuckDB COPY TO, its defaults (snappy)",
                                             "DuckDB COPY TO, uncompressed"};
    const struct result *plain = &res[R_PLAIN], *dd = &res[R_DELTA_DICT], *duck = &res[R_DUCK_DEFAULT];

    printf("trove bench parquet: the events table of %zu events from %s\n", n, source);
    printf("medians of %u rounds after a warm-up; MB are 10^6 bytes\n\n", rounds);
    printf("%-20s %9s %8s %9s %9s %8s %8s\n", "row", "MB", "/plain", "write s", "read s",
           "B/event", "");
    for (int r = 0; r < R_COUNT; r++) {
        const char *key = r < R_TROVE ? rows[r].key : duck_keys[r - R_TROVE];
        const char *what = r < R_TROVE ? rows[r].what : duck_what[r - R_TROVE];
        if (!res[r].have) {
            printf("%-20s %9s   (not run: --no-duckdb)\n", key, "-");
            continue;
        }
        printf("%-20s %9.3f %8.3f %9.4f %9.4f %8.2f   %s\n", key, (double)res[r].bytes / 1e6,
               (double)res[r].bytes / (double)plain->bytes, res[r].write_s, res[r].read_s,
               (double)res[r].bytes / (double)n, what);
    }
    if (duck->have)
        printf("\ndelta_dict against duckdb_default (DuckDB %s): size %.3fx, write %.3fx, read "
               "%.3fx (below 1: trove smaller or faster)\n",
               duck_version, (double)dd->bytes / (double)duck->bytes,
               dd->write_s / duck->write_s, dd->read_s / duck->read_s);
    printf("delta_dict against plain: %.3fx the size\n", (double)dd->bytes / (double)plain->bytes);
    printf("trove writes and reads in memory; DuckDB's write includes writing its file (page\n"
           "cache) and its read includes opening it.\n");
}

int bench_parquet(int argc, char **argv)
{
    struct bench_source src;
    struct trove_events ev = {0}, back = {0};
    struct trove_names *names = NULL;
    struct trove_bytes file = {0};
    struct result res[R_COUNT];
    const char *tool_opt = NULL;
    char source[4200], tmpl[64] = "", path[128] = "", version[64] = "";
    uint64_t rounds = DEFAULT_ROUNDS;
    int json = 0, no_duck = 0, status = 1, fd = -1, taken;
    double *wt = NULL, *rt = NULL;

    memset(res, 0, sizeof res);
    bench_source_init(&src);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if ((taken = bench_source_arg(CMD, &src, argc, argv, &i)) != 0) {
            if (taken < 0)
                return 1;
        } else if (cli_is_help(a)) {
            parquet_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--no-duckdb")) {
            no_duck = 1;
        } else if (!strcmp(a, "--duckdb") && has_value) {
            tool_opt = argv[++i];
        } else if (!strcmp(a, "--rounds") && has_value) {
            if (cli_parse_u64(argv[++i], &rounds) || rounds < 1 || rounds > 100)
                return cli_error(CMD, "--rounds: '%s' is not a count in 1..100", argv[i]);
        } else if (!strcmp(a, "--rounds") || !strcmp(a, "--duckdb")) {
            return cli_error(CMD, "%s needs a value; see `trove bench parquet --help`", a);
        } else {
            return cli_error(CMD, "unexpected argument '%s'; see `trove bench parquet --help`", a);
        }
    }
    if (no_duck && tool_opt)
        return cli_error(CMD, "--duckdb and --no-duckdb contradict each other");
    if (trove_names_new(&names) != TROVE_OK) {
        cli_error(CMD, "out of memory");
        goto out;
    }
    if (bench_source_load(CMD, &src, json, &ev, names, source, sizeof source) != 0)
        goto out;
    if (!(wt = calloc((size_t)rounds * R_TROVE, sizeof *wt)) ||
        !(rt = calloc((size_t)rounds * R_TROVE, sizeof *rt))) {
        cli_error(CMD, "out of memory");
        goto out;
    }
    /* A warm-up round, then the timed ones; rows interleaved within a round. */
    for (uint64_t round = 0; round <= rounds; round++) {
        for (int r = 0; r < R_TROVE; r++) {
            double w = 0, rd = 0;
            if (run_row(r, &ev, names, &file, &back, &w, &rd) != 0)
                goto out;
            res[r].bytes = file.len;
            if (round > 0) {
                wt[r * rounds + round - 1] = w;
                rt[r * rounds + round - 1] = rd;
            }
        }
    }
    for (int r = 0; r < R_TROVE; r++) {
        res[r].have = 1;
        res[r].write_s = bench_median(wt + r * rounds, (unsigned)rounds);
        res[r].read_s = bench_median(rt + r * rounds, (unsigned)rounds);
    }
    if (!no_duck) {
        /* DuckDB gets trove's delta + dictionary file: the same events, in a file it reads. */
        const char *tmpdir = getenv("TMPDIR");
        struct trove_tables_options o;
        trove_tables_defaults(&o);
        file.len = 0;
        if (trove_tables_write(TROVE_TABLE_EVENTS, &ev, names, &o, &file, NULL) != TROVE_OK) {
            cli_error(CMD, "writing the events table for DuckDB failed");
            goto out;
        }
        snprintf(tmpl, sizeof tmpl, "%s/trove-bench-XXXXXX",
                 tmpdir && strlen(tmpdir) < 32 ? tmpdir : "/tmp");
        if (!mkdtemp(tmpl)) {
            cli_error(CMD, "creating a directory from %s: %s", tmpl, strerror(errno));
            tmpl[0] = 0;
            goto out;
        }
        snprintf(path, sizeof path, "%s/events.parquet", tmpl);
        if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0 ||
            write(fd, file.ptr, file.len) != (ssize_t)file.len) {
            cli_error(CMD, "writing %s: %s", path, strerror(errno));
            goto out;
        }
        close(fd);
        fd = -1;
        if (run_duckdb(duckdb_tool(tool_opt), path, (unsigned)rounds, res, version,
                       sizeof version) != 0)
            goto out;
    }
    if (json)
        print_json(ev.len, res);
    else
        print_table(ev.len, source, (unsigned)rounds, res, version);
    status = 0;
out:
    if (fd >= 0)
        close(fd);
    if (path[0])
        unlink(path);
    if (tmpl[0])
        rmdir(tmpl);
    free(wt);
    free(rt);
    trove_bytes_free(&file);
    trove_events_free(&back);
    trove_events_free(&ev);
    trove_names_free(names);
    return status;
}
